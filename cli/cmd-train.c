/* cmd-train.c — `stowage train`: a GPT trained in C with its model state in runtime chunks. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include <stowage/trainer.h>
#include <stowage/check.h>
#include <stowage/units.h>

#define DEFAULT_TEXT "/usr/share/common-licenses/GPL-3"

static gboolean
count_option(const char *text, const char *option, guint64 min, guint64 max, guint64 *out)
{
  return text == NULL || stw_cli_parse_count(text, option, min, max, out);
}

int
stw_cmd_train(int argc, char **argv)
{
  g_autofree char *data = NULL, *layers = NULL, *width = NULL, *heads = NULL, *context = NULL,
                  *batch = NULL, *steps = NULL, *seed = NULL, *lr = NULL, *gpu = NULL,
                  *profile = NULL, *plan_file = NULL, *trace_file = NULL, *checkpoint = NULL,
                  *resume = NULL, *chunk = NULL, *device = NULL, *precision = NULL;
  gboolean verify = FALSE, quiet = FALSE;
  GOptionEntry entries[] = {
    { "data", 'd', 0, G_OPTION_ARG_FILENAME, &data, "text to train on, as bytes (default "
      DEFAULT_TEXT ")", "FILE" },
    { "layers", 0, 0, G_OPTION_ARG_STRING, &layers, "transformer blocks (default 2)", "N" },
    { "width", 0, 0, G_OPTION_ARG_STRING, &width, "model width (default 64)", "N" },
    { "heads", 0, 0, G_OPTION_ARG_STRING, &heads, "attention heads (default 4)", "N" },
    { "context", 0, 0, G_OPTION_ARG_STRING, &context, "tokens per sequence (default 64)", "N" },
    { "batch", 'b', 0, G_OPTION_ARG_STRING, &batch, "sequences per step (default 4)", "N" },
    { "steps", 'n', 0, G_OPTION_ARG_STRING, &steps, "training steps (default 1000, about a minute)", "N" },
    { "seed", 0, 0, G_OPTION_ARG_STRING, &seed, "initialization seed (default 1337)", "N" },
    { "lr", 0, 0, G_OPTION_ARG_STRING, &lr, "AdamW learning rate (default 0.001)", "X" },
    { "gpu", 'g', 0, G_OPTION_ARG_STRING, &gpu, "device memory for the runtime (default: "
      "unlimited on the emulated device, 4 GiB on CUDA)", "SIZE" },
    { "device", 0, 0, G_OPTION_ARG_STRING, &device,
      "cpu (default: the host backend emulates the device) or cuda (GPU 0, CUDA kernels)", "D" },
    { "precision", 0, 0, G_OPTION_ARG_STRING, &precision,
      "fp32 (the default on the CPU) or mixed (bf16 compute copy, fp32 master weights; on "
      "CUDA, the default, also bf16 tensor-core matmuls)", "P" },
    { "profile", 0, 0, G_OPTION_ARG_FILENAME, &profile,
      "record the last step's trace to FILE", "FILE" },
    { "chunk-size", 0, 0, G_OPTION_ARG_STRING, &chunk,
      "profile mode: chunk size in elements (default: the largest tensor)", "N" },
    { "plan", 0, 0, G_OPTION_ARG_FILENAME, &plan_file, "replay this plan", "FILE" },
    { "trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_file,
      "with --plan: the trace it was made for (default: the plan's)", "FILE" },
    { "verify", 0, 0, G_OPTION_ARG_NONE, &verify, "checksum every chunk across every move", NULL },
    { "checkpoint", 0, 0, G_OPTION_ARG_FILENAME, &checkpoint, "save the state here at the end",
      "FILE" },
    { "resume", 0, 0, G_OPTION_ARG_FILENAME, &resume, "start from this checkpoint", "FILE" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "only the summary", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- train a GPT on a text file");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Trains a GPT (byte tokens) whose parameters, gradients, master weights and Adam\n"
           "state live in the stowage runtime's chunks on an emulated device of --gpu bytes.\n"
           "Profile it, plan it, replay the plan: the losses are bitwise the same.\n\n"
           "Example: stowage train --steps 5 --profile t.json\n"
           "         stowage plan t.json --gpu 2MiB -o p.json\n"
           "         stowage train --steps 5 --plan p.json --gpu 2MiB\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "train"))
    return STW_EXIT_USAGE;
  if (argc > 1)
    return stw_cli_fail(STW_EXIT_USAGE, "train: unexpected argument '%s'", argv[1]);
  gboolean cuda = device != NULL && strcmp(device, "cuda") == 0;
  if (device != NULL && !cuda && strcmp(device, "cpu") != 0)
    return stw_cli_fail(STW_EXIT_USAGE, "--device: '%s' is not one of cpu, cuda", device);
  if (precision != NULL && strcmp(precision, "mixed") != 0 && strcmp(precision, "fp32") != 0)
    return stw_cli_fail(STW_EXIT_USAGE, "--precision: '%s' is not one of mixed, fp32", precision);
  if (verify && cuda)
    return stw_cli_fail(STW_EXIT_USAGE, "--verify checksums device memory from the host: use "
                        "it with --device cpu");
  if (profile != NULL && plan_file != NULL)
    return stw_cli_fail(STW_EXIT_USAGE, "train: --profile and --plan exclude each other");
  StwTrainerConfig c;
  stw_trainer_config_init(&c);
  gboolean mixed = precision != NULL ? strcmp(precision, "mixed") == 0 : cuda;
  c.dtype = mixed ? STW_DTYPE_BF16 : STW_DTYPE_FP32;
  guint64 n_steps = 1000, chunk_size = 0;
  StwRuntimeOptions ro = { .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_TiB, .verify = verify };
  if (!count_option(layers, "--layers", 1, 64, &c.layers) ||
      !count_option(width, "--width", 8, 4096, &c.width) ||
      !count_option(heads, "--heads", 1, 256, &c.heads) ||
      !count_option(context, "--context", 2, 4096, &c.context) ||
      !count_option(batch, "--batch", 1, 4096, &c.batch) ||
      !count_option(steps, "--steps", 1, 10000000, &n_steps) ||
      !count_option(seed, "--seed", 0, G_MAXUINT64 / 2, &c.seed) ||
      !count_option(chunk, "--chunk-size", 1, STW_TRACE_MAX_NUMEL, &chunk_size) ||
      !stw_cli_parse_size(gpu, "--gpu", &ro.device_bytes))
    return STW_EXIT_USAGE;
  ro.chunk_size_elems = chunk_size;
  if (c.width % c.heads != 0)
    return stw_cli_fail(STW_EXIT_USAGE, "--heads: %" G_GUINT64_FORMAT " does not divide the "
                        "width %" G_GUINT64_FORMAT, c.heads, c.width);
  if (lr != NULL) {
    char *end = NULL;
    double v = g_ascii_strtod(lr, &end);
    if (end == lr || *end != '\0' || !(v > 0 && v < 10))
      return stw_cli_fail(STW_EXIT_USAGE, "--lr: '%s' is not a learning rate (0 to 10)", lr);
    c.adam.lr = (float)v;
  }

  GError *error = NULL;
  const char *path = data != NULL ? data : DEFAULT_TEXT;
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &text, &len, &error)) {
    int st = stw_cli_fail(STW_EXIT_FAILURE, "%s: cannot read the training text: %s", path,
                          error->message);
    g_error_free(error);
    return st;
  }
  if (len == 0)
    return stw_cli_fail(STW_EXIT_FAILURE, "%s: the training text is empty", path);

  g_autoptr(StwPlan) plan = NULL;
  g_autoptr(StwTrace) plan_trace = NULL;
  if (plan_file != NULL) {
    int status;
    if (!stw_cli_load_checked_plan(plan_file, trace_file, &plan, &plan_trace, NULL, NULL,
                                   &status))
      return status;
    if (gpu == NULL)
      ro.device_bytes = plan->budgets.gpu_bytes;
    ro.mode = STW_RUNTIME_REPLAY;
    ro.plan = plan;
    ro.plan_trace = plan_trace;
  }

  StwBackend *be = NULL;
  StwCompute *cx = NULL;
  if (cuda) {
    if (gpu == NULL && plan_file == NULL)
      ro.device_bytes = 4 * STW_GiB;
    /* the arena rounds every allocation up to 256 bytes: room for that beside the budget */
    be = stw_backend_cuda_new(0, ro.device_bytes + ro.device_bytes / 16 + 64 * STW_MiB, &error);
    if (be == NULL)
      return stw_cli_error(error);
    cx = stw_compute_cuda_new(mixed, &error);
    if (cx == NULL) {
      be->free(be);
      return stw_cli_error(error);
    }
    c.compute = cx;
  } else {
    be = stw_backend_host_new();
  }
  StwTrainer *tr = stw_trainer_new(&c, (const guint8 *)text, len, &ro, be, &error);
  if (tr == NULL) {
    be->free(be);
    if (cx != NULL)
      cx->free(cx);
    return stw_cli_error(error);
  }
  int status = STW_EXIT_OK;
  if (resume != NULL && !stw_trainer_load(tr, resume, &error)) {
    status = stw_cli_error(error);
    goto out;
  }
  float loss = 0;
  double tokens = (double)(c.batch * c.context), total_s = 0;
  for (guint64 s = 0; s < n_steps; s++) {
    gint64 t0 = g_get_monotonic_time();
    if (!stw_trainer_step(tr, &loss, &error)) {
      status = stw_cli_error(error);
      goto out;
    }
    double dt = (double)(g_get_monotonic_time() - t0) / 1e6;
    total_s += dt;
    const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(tr));
    if (!quiet) {
      g_autofree char *h = stw_size_format(st->h2d_bytes);
      g_autofree char *d = stw_size_format(st->d2h_bytes);
      printf("step %4" G_GUINT64_FORMAT "  loss %.9g  %8.0f tokens/s  H2D %s  D2H %s\n",
             stw_trainer_step_count(tr), loss, tokens / dt, h, d);
      fflush(stdout);
    }
  }
  {
  const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(tr));
  g_autofree char *peak = stw_size_format(st->peak_device_bytes);
  g_autofree char *budget = stw_size_format(ro.device_bytes);
  printf("trained %" G_GUINT64_FORMAT " steps%s%s: final loss %.9g, %.0f tokens/s; device "
         "peak %s of %s; %" G_GUINT64_FORMAT " deviations from the plan%s\n", n_steps,
         cx != NULL ? " on " : mixed ? " in " : "", cx != NULL ? cx->name : mixed ? "mixed precision" : "", loss,
         tokens * (double)n_steps / total_s, peak, budget, st->deviations,
         verify ? ", every move checksummed" : "");
  if (profile != NULL) {
    StwTrace *t = stw_runtime_trace(stw_trainer_runtime(tr));
    if (!stw_trace_save(t, profile, &error)) {
      status = stw_cli_error(error);
      goto out;
    }
    printf("wrote %s: %u ops\n", profile, t->ops->len);
  }
  if (checkpoint != NULL) {
    if (!stw_trainer_save(tr, checkpoint, &error)) {
      status = stw_cli_error(error);
      goto out;
    }
    printf("wrote %s\n", checkpoint);
  }
  }
out:
  stw_trainer_free(tr);
  be->free(be);
  if (cx != NULL)
    cx->free(cx);
  return status;
}
