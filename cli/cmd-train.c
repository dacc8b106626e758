/* cmd-train.c — `stowage train`: a GPT trained in C with its model state in runtime chunks. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include <stowage/check.h>
#include <stowage/comm.h>
#include <stowage/trainer.h>
#include <stowage/units.h>

#include "cli.h"

#define DEFAULT_TEXT "/usr/share/common-licenses/GPL-3"
/* The training text is mapped, not read: any size up to this costs no memory until it is used. */
#define MAX_TEXT_BYTES (G_GUINT64_CONSTANT(1) << 40)

static const char *const device_names[] = { "cpu", "cuda", NULL };
static const char *const precision_names[] = { "mixed", "fp32", NULL };

/* Seconds of the steps: all of them, the first and the last. */
typedef struct {
  double total_s, first_s, last_s;
} StepTimes;

/* The training as the user asked for it, and what it runs on. */
typedef struct {
  char *data, *layers, *width, *heads, *context, *batch, *steps, *seed, *lr, *gpu, *profile,
      *plan_file, *trace_file, *checkpoint, *resume, *chunk, *device, *precision, *every,
      *attention, *nvme_dir, *optimizer_state;
  gboolean verify, quiet;
  gboolean cuda, mixed;
  guint64 n_steps;
  guint64 checkpoint_every;  /* steps between checkpoints; 0: only at the end */
  StwTrainerConfig c;
  StwRuntimeOptions ro;
  GMappedFile *text;        /* the training data */
  gsize len;
  StwPlan *plan;           /* replay */
  StwTrace *plan_trace;
  StwBackend *be;
  StwCompute *cx;          /* CUDA's compute table, or NULL for the CPU's */
  StwTrainer *tr;
  StwComm *comm;           /* started by mpirun with several ranks: MPI; else NULL */
  StwComm *gpu_comm;       /* and on CUDA: NCCL between the ranks' GPUs, for the chunks */
  gboolean speaks;         /* this rank prints (rank 0) */
  gboolean stopped_together; /* interrupted: every rank ended at the same step */
} Training;

static void
training_clear(Training *x)
{
  stw_trainer_free(x->tr);
  if (x->gpu_comm != NULL) /* its stream and memory before the device's */
    x->gpu_comm->free(x->gpu_comm);
  if (x->be != NULL)
    x->be->free(x->be);
  if (x->cx != NULL)
    x->cx->free(x->cx);
  g_clear_pointer(&x->text, g_mapped_file_unref);
  stw_plan_free(x->plan);
  stw_trace_free(x->plan_trace);
  if (x->comm != NULL) /* last: MPI ends here */
    x->comm->free(x->comm);
  char **strings[] = { &x->data, &x->layers, &x->width, &x->heads, &x->context, &x->batch,
                       &x->steps, &x->seed, &x->lr, &x->gpu, &x->profile, &x->plan_file,
                       &x->trace_file, &x->checkpoint, &x->resume, &x->chunk, &x->device,
                       &x->precision, &x->every, &x->attention, &x->nvme_dir,
                       &x->optimizer_state };
  for (gsize i = 0; i < G_N_ELEMENTS(strings); i++)
    g_clear_pointer(strings[i], g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Training, training_clear)

/* Whether PLAN (NULL: none) keeps chunks' parameters on the storage tier, beside their state. */
static gboolean
plan_stores_params(const StwPlan *plan)
{
  for (guint32 i = 0; plan != NULL && i < stw_chunking_count(plan->chunking); i++)
    if (plan->optim[i] == STW_OPTIM_STORAGE)
      return TRUE;
  return FALSE;
}

static gboolean
count_option(const char *text, const char *option, guint64 min, guint64 max, guint64 *out)
{
  return text == NULL || stw_cli_parse_count(text, option, min, max, out);
}

/* ---- parse ------------------------------------------------------------------------------------ */

static gboolean
parse_options(Training *x, int *argc, char ***argv)
{
  GOptionEntry entries[] = {
    { "data", 'd', 0, G_OPTION_ARG_FILENAME, &x->data, "text to train on, as bytes (default "
      DEFAULT_TEXT ")", "FILE" },
    { "layers", 0, 0, STW_OPTION_TEXT, &x->layers, "transformer blocks (default 2)", "N" },
    { "width", 0, 0, STW_OPTION_TEXT, &x->width, "model width (default 64)", "N" },
    { "heads", 0, 0, STW_OPTION_TEXT, &x->heads, "attention heads (default 4)", "N" },
    { "context", 0, 0, STW_OPTION_TEXT, &x->context, "tokens per sequence (default 64)",
      "N" },
    { "batch", 'b', 0, STW_OPTION_TEXT, &x->batch, "sequences per step (default 4)", "N" },
    { "steps", 'n', 0, STW_OPTION_TEXT, &x->steps,
      "training steps (default 1000, about a minute)", "N" },
    { "seed", 0, 0, STW_OPTION_TEXT, &x->seed, "initialization seed (default 1337)", "N" },
    { "lr", 0, 0, STW_OPTION_TEXT, &x->lr, "AdamW learning rate (default 0.001)", "X" },
    { "gpu", 'g', 0, STW_OPTION_TEXT, &x->gpu, "device memory for the runtime (default: "
      "unlimited on the emulated device, 4 GiB on CUDA)", "SIZE" },
    { "device", 0, 0, STW_OPTION_TEXT, &x->device,
      "cpu (default: the host backend emulates the device) or cuda (GPU 0, CUDA kernels)", "D" },
    { "precision", 0, 0, STW_OPTION_TEXT, &x->precision,
      "fp32 (the default on the CPU) or mixed (bf16 compute copy, fp32 master weights; on "
      "CUDA, the default, also bf16 tensor-core matmuls)", "P" },
    { "optimizer-state", 0, 0, STW_OPTION_TEXT, &x->optimizer_state,
      "Adam's moments in fp32 (the default) or bf16 (rounded stochastically, the master weights "
      "fp32); with --plan, the plan's", "fp32|bf16" },
    { "attention", 0, 0, STW_OPTION_TEXT, &x->attention,
      "flash (the default for heads up to 128 wide: fused, keeps a log-sum-exp per row, "
      "memory linear in the context) or naive (keeps the T x T softmax for backward)", "A" },
    { "profile", 0, 0, G_OPTION_ARG_FILENAME, &x->profile,
      "record the last step's trace to FILE", "FILE" },
    { "chunk-size", 0, 0, STW_OPTION_TEXT, &x->chunk,
      "profile mode: chunk size in elements (default: the planner's least padded candidate)",
      "N" },
    { "plan", 0, 0, G_OPTION_ARG_FILENAME, &x->plan_file, "replay this plan", "FILE" },
    { "trace", 0, 0, G_OPTION_ARG_FILENAME, &x->trace_file,
      "with --plan: the trace it was made for (default: the plan's)", "FILE" },
    { "verify", 0, 0, G_OPTION_ARG_NONE, &x->verify, "checksum every chunk across every move",
      NULL },
    { "nvme-dir", 0, 0, G_OPTION_ARG_FILENAME, &x->nvme_dir,
      "with --plan: a directory on the storage tier for the optimizer state the plan keeps there "
      "(a scratch file, removed at the end; checkpoints hold the state)", "DIR" },
    { "checkpoint", 0, 0, G_OPTION_ARG_FILENAME, &x->checkpoint,
      "save the state here at the end, and when interrupted (SIGINT, SIGTERM)", "FILE" },
    { "checkpoint-every", 0, 0, STW_OPTION_TEXT, &x->every,
      "with --checkpoint: save it every N steps too", "N" },
    { "resume", 0, 0, G_OPTION_ARG_FILENAME, &x->resume, "start from this checkpoint", "FILE" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &x->quiet, "only the summary", NULL },
    G_OPTION_ENTRY_NULL
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
  return stw_cli_parse(ctx, argc, argv, "train");
}

/* The options that need or exclude others, and files that must not be written over. */
static gboolean
options_combine(const Training *x)
{
  if (x->verify && x->cuda) {
    stw_cli_fail(STW_EXIT_USAGE, "--verify checksums device memory from the host: use it with "
                 "--device cpu");
    return FALSE;
  }
  if (x->profile != NULL && x->plan_file != NULL) {
    stw_cli_fail(STW_EXIT_USAGE, "train: --profile and --plan exclude each other");
    return FALSE;
  }
  if (!stw_cli_option_needs("train", "--checkpoint-every", x->every != NULL, "--checkpoint",
                            x->checkpoint != NULL) ||
      !stw_cli_option_needs("train", "--trace", x->trace_file != NULL, "--plan",
                            x->plan_file != NULL) ||
      !stw_cli_option_needs("train", "--nvme-dir", x->nvme_dir != NULL, "--plan",
                            x->plan_file != NULL) ||
      !stw_cli_option_needs("train", "--chunk-size", x->chunk != NULL,
                            "profiling (a plan fixes the layout)", x->plan_file == NULL))
    return FALSE;
  /* --checkpoint may be the --resume file: it is read whole at the start and replaced
   * atomically, so that resuming and saving to one file is the usual loop */
  const StwCliFile in[] = { { "--data", x->data }, { "--plan", x->plan_file },
                            { "--trace", x->trace_file } };
  const StwCliFile out[] = { { "--profile", x->profile }, { "--checkpoint", x->checkpoint } };
  const StwCliFile resume[] = { { "--resume", x->resume } };
  if (!stw_cli_outputs_apart("train", in, G_N_ELEMENTS(in), out, G_N_ELEMENTS(out)) ||
      !stw_cli_outputs_apart("train", resume, 1, out, 1))
    return FALSE;
  return TRUE;
}

/* The model's and the run's numbers: counts, the device budget, the attention, the rate. */
static gboolean
parse_values(Training *x, int attention)
{
  x->n_steps = 1000;
  guint64 chunk_size = 0;
  x->ro = (StwRuntimeOptions){ .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_TiB,
                               .verify = x->verify };
  if (!count_option(x->layers, "--layers", 1, 64, &x->c.layers) ||
      !count_option(x->width, "--width", 8, 4096, &x->c.width) ||
      !count_option(x->heads, "--heads", 1, 256, &x->c.heads) ||
      !count_option(x->context, "--context", 2, 4096, &x->c.context) ||
      !count_option(x->batch, "--batch", 1, 4096, &x->c.batch) ||
      !count_option(x->steps, "--steps", 1, 10000000, &x->n_steps) ||
      !count_option(x->seed, "--seed", 0, G_MAXUINT64 / 2, &x->c.seed) ||
      !count_option(x->chunk, "--chunk-size", 1, STW_TRACE_MAX_NUMEL, &chunk_size) ||
      !count_option(x->every, "--checkpoint-every", 1, 10000000, &x->checkpoint_every) ||
      !stw_cli_parse_budget(x->gpu, "--gpu", &x->ro.device_bytes))
    return FALSE;
  x->ro.chunk_size_elems = chunk_size;
  if (x->c.width % x->c.heads != 0) {
    stw_cli_fail(STW_EXIT_USAGE, "--heads: %" G_GUINT64_FORMAT " does not divide the width %"
                 G_GUINT64_FORMAT, x->c.heads, x->c.width);
    return FALSE;
  }
  /* the trainer's default attention where its heads fit, naive where they are too wide for it
   * (asked for by name, flash refuses them); on CUDA naive, whose products run on cuBLAS's tensor
   * cores: 29x the fused kernel's tokens/s at GPT-2 small's shape on an H200 (docs/cli.md) */
  if (attention >= 0)
    x->c.attention = (StwAttention)attention;
  else if (x->cuda)
    x->c.attention = STW_ATTENTION_NAIVE;
  else if (x->c.attention == STW_ATTENTION_FLASH &&
           x->c.width / x->c.heads > STW_FLASH_MAX_HEAD_WIDTH)
    x->c.attention = STW_ATTENTION_NAIVE;
  if (x->lr != NULL) {
    char *end = NULL;
    double v = g_ascii_strtod(x->lr, &end);
    if (end == x->lr || *end != '\0' || !(v > 0 && v < 10)) {
      stw_cli_fail(STW_EXIT_USAGE, "--lr: '%s' is not a learning rate (0 to 10)", x->lr);
      return FALSE;
    }
    x->c.adam.lr = (float)v;
  }
  return TRUE;
}

static gboolean
parse(Training *x, int argc, char **argv)
{
  if (!parse_options(x, &argc, &argv))
    return FALSE;
  if (argc > 1) {
    stw_cli_fail(STW_EXIT_USAGE, "train: unexpected argument '%s'", argv[1]);
    return FALSE;
  }
  int device = 0, precision = -1, attention = -1, state = 0;
  if (!stw_cli_parse_enum(x->device, "--device", device_names, &device) ||
      !stw_cli_parse_enum(x->precision, "--precision", precision_names, &precision) ||
      !stw_cli_parse_enum(x->attention, "--attention", stw_attention_names, &attention) ||
      !stw_cli_parse_enum(x->optimizer_state, "--optimizer-state", stw_state_dtype_names, &state))
    return FALSE;
  x->cuda = device == 1;
  if (!options_combine(x))
    return FALSE;
  stw_trainer_config_init(&x->c);
  x->mixed = precision >= 0 ? precision == 0 : x->cuda;
  x->c.dtype = x->mixed ? STW_DTYPE_BF16 : STW_DTYPE_FP32;
  x->c.adam.state_dtype = stw_state_dtype_at(state);
  return parse_values(x, attention);
}

/* ---- set up: the data, the plan, the device, the trainer ------------------------------------- */

/* Started by mpirun with several ranks: the ranks' communicator, and only rank 0 prints. */
static gboolean
set_up_ranks(Training *x, int *status)
{
  x->speaks = TRUE;
  if (!stw_cli_start_ranks("train", &x->comm, status))
    return FALSE;
  if (x->comm == NULL)
    return TRUE;
  x->ro.comm = x->comm;
  x->speaks = x->comm->rank == 0;
  if (!x->speaks)
    x->quiet = TRUE;
  return TRUE;
}

/* The training as the ranks must share it: every option that changes the model, the data each
 * reads, the update or how long it runs (a rank of another width or precision would exchange
 * chunks of another size; another seed or rate would train another model). */
static gboolean
configuration_agrees(const Training *x, GError **error)
{
  const StwTrainerConfig *c = &x->c;
  char values[17][64];
  const char *names[] = { "--layers", "--width", "--heads", "--context", "--batch", "--seed",
                          "--lr", "--precision", "--attention", "--device", "--steps",
                          "--checkpoint-every", "--resume (given or not)",
                          "--checkpoint (given or not)", "--verify", "--gpu",
                          "--optimizer-state" };
  g_snprintf(values[0], 64, "%" G_GUINT64_FORMAT, c->layers);
  g_snprintf(values[1], 64, "%" G_GUINT64_FORMAT, c->width);
  g_snprintf(values[2], 64, "%" G_GUINT64_FORMAT, c->heads);
  g_snprintf(values[3], 64, "%" G_GUINT64_FORMAT, c->context);
  g_snprintf(values[4], 64, "%" G_GUINT64_FORMAT, c->batch);
  g_snprintf(values[5], 64, "%" G_GUINT64_FORMAT, c->seed);
  g_snprintf(values[6], 64, "%.9g", (double)c->adam.lr);
  g_strlcpy(values[7], x->mixed ? "mixed" : "fp32", 64);
  g_strlcpy(values[8], stw_attention_name(c->attention), 64);
  g_strlcpy(values[9], x->cuda ? "cuda" : "cpu", 64);
  g_snprintf(values[10], 64, "%" G_GUINT64_FORMAT, x->n_steps);
  g_snprintf(values[11], 64, "%" G_GUINT64_FORMAT, x->checkpoint_every);
  g_strlcpy(values[12], x->resume != NULL ? "given" : "not given", 64);
  g_strlcpy(values[13], x->checkpoint != NULL ? "given" : "not given", 64);
  g_strlcpy(values[14], x->verify ? "on" : "off", 64);
  g_snprintf(values[15], 64, "%" G_GUINT64_FORMAT " bytes", x->ro.device_bytes);
  g_strlcpy(values[16], stw_state_dtype_name(c->adam.state_dtype), 64);
  const char *vals[G_N_ELEMENTS(names)];
  for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
    vals[i] = values[i];
  return stw_comm_agree_fields(x->comm, "the training's options", names, vals,
                               G_N_ELEMENTS(names), error);
}

/* Every rank has the same options, data and plan: compared across ranks before any training. */
static gboolean
ranks_agree(Training *x, int *status)
{
  if (x->comm == NULL || x->comm->world <= 1)
    return TRUE;
  GError *error = NULL;
  if (!configuration_agrees(x, &error)) {
    *status = stw_cli_error(error);
    return FALSE;
  }
  const guint8 *text = (const guint8 *)g_mapped_file_get_contents(x->text);
  g_autofree char *data = g_compute_checksum_for_data(G_CHECKSUM_SHA256, text, x->len);
  g_autofree char *data_key = g_strdup_printf("%" G_GSIZE_FORMAT " bytes, %s", x->len, data);
  /* the plan as it would be written: two files of one plan agree, two plans of one trace not */
  g_autofree char *plan_text = x->plan != NULL ? stw_plan_to_string(x->plan, x->plan_trace) : NULL;
  g_autofree char *plan_key =
    plan_text != NULL ? g_compute_checksum_for_string(G_CHECKSUM_SHA256, plan_text, -1) : NULL;
  if (!stw_comm_agree(x->comm, "the training text", data_key, &error) ||
      (plan_key != NULL && !stw_comm_agree(x->comm, "the plan", plan_key, &error))) {
    *status = stw_cli_error(error);
    return FALSE;
  }
  return TRUE;
}

/* Whether this rank can write its checkpoint where --checkpoint says: found before the training
 * rather than after it (a folder that is missing or read-only). */
static gboolean
checkpoint_writable(const Training *x, int *status)
{
  if (x->checkpoint == NULL)
    return TRUE;
  g_autofree char *dir = g_path_get_dirname(x->checkpoint);
  g_autofree char *probe = g_build_filename(dir, ".stowage-checkpoint-XXXXXX", NULL);
  int fd = g_mkstemp(probe);
  if (fd < 0) {
    *status = stw_cli_fail(STW_EXIT_FAILURE, "%s: the checkpoint cannot be written there (%s: "
                           "%s): give a --checkpoint in a folder this run can write, before it "
                           "trains", x->checkpoint, dir, g_strerror(errno));
    return FALSE;
  }
  close(fd);
  g_remove(probe);
  return TRUE;
}

/* The training text: a regular file (not /dev/zero, not a FIFO), mapped. */
static gboolean
map_text(Training *x, int *status)
{
  GError *error = NULL;
  const char *path = x->data != NULL ? x->data : DEFAULT_TEXT;
  GStatBuf st;
  if (g_stat(path, &st) != 0) {
    *status = stw_cli_fail(STW_EXIT_FAILURE, "%s: cannot read the training text: %s", path,
                           g_strerror(errno));
    return FALSE;
  }
  if (!S_ISREG(st.st_mode) || (guint64)st.st_size > MAX_TEXT_BYTES) {
    *status = stw_cli_fail(STW_EXIT_FAILURE, "%s: the training text must be a regular file of "
                           "at most 1 TiB", path);
    return FALSE;
  }
  x->text = g_mapped_file_new(path, FALSE, &error);
  if (x->text == NULL) {
    *status = stw_cli_fail(STW_EXIT_FAILURE, "%s: cannot read the training text: %s", path,
                           error->message);
    g_error_free(error);
    return FALSE;
  }
  x->len = g_mapped_file_get_length(x->text);
  if (x->len == 0) {
    *status = stw_cli_fail(STW_EXIT_FAILURE, "%s: the training text is empty", path);
    return FALSE;
  }
  return TRUE;
}

/* With --plan: the plan, checked against its trace, for the runtime to replay. */
static gboolean
load_plan(Training *x, int *status)
{
  if (x->plan_file == NULL)
    return TRUE;
  if (!stw_cli_load_checked_plan(x->plan_file, x->trace_file, &x->plan, &x->plan_trace, NULL,
                                 NULL, status))
    return FALSE;
  if (x->gpu == NULL)
    x->ro.device_bytes = x->plan->budgets.gpu_bytes;
  x->ro.mode = STW_RUNTIME_REPLAY;
  x->ro.plan = x->plan;
  x->ro.plan_trace = x->plan_trace;
  x->ro.storage_dir = x->nvme_dir;
  StwDtype planned = x->plan->chunking->state_dtype;
  if (x->optimizer_state != NULL && planned != x->c.adam.state_dtype) {
    *status = stw_cli_fail(STW_EXIT_USAGE, "train: --optimizer-state %s, and %s keeps Adam's "
                           "moments in %s: plan again with --optimizer-state %s, or leave the "
                           "option out", x->optimizer_state, x->plan_file,
                           stw_state_dtype_name(planned), x->optimizer_state);
    return FALSE;
  }
  x->c.adam.state_dtype = planned;
  return TRUE;
}

/* The backend; on CUDA also the compute table and the ranks' NCCL communicator. */
static gboolean
set_up_device(Training *x, int *status)
{
  GError *error = NULL;
  if (!x->cuda) {
    x->be = stw_backend_host_new();
    return TRUE;
  }
  if (x->gpu == NULL && x->plan_file == NULL)
    x->ro.device_bytes = 4 * STW_GiB;
  guint64 arena = stw_backend_arena_for(x->ro.device_bytes);
  /* one GPU per rank, by its rank on this machine; the chunks' collectives over NCCL */
  int gpu = x->comm != NULL ? (int)x->comm->local_rank : 0;
  if ((x->be = stw_backend_cuda_new(gpu, arena, &error)) == NULL ||
      (x->cx = stw_compute_cuda_new(x->mixed, &error)) == NULL ||
      (x->comm != NULL && x->comm->world > 1 &&
       (x->gpu_comm = stw_comm_nccl_new(x->comm, STW_CLI_COLLECTIVE_TIMEOUT_MS, &error)) == NULL)) {
    *status = stw_cli_error(error);
    return FALSE;
  }
  x->c.compute = x->cx;
  if (x->gpu_comm != NULL)
    x->ro.comm = x->gpu_comm;
  return TRUE;
}

static gboolean
set_up(Training *x, int *status)
{
  GError *error = NULL;
  if (!set_up_ranks(x, status) || !checkpoint_writable(x, status) || !map_text(x, status) ||
      !load_plan(x, status) || !set_up_device(x, status) || !ranks_agree(x, status))
    return FALSE;
  x->tr = stw_trainer_new(&x->c, (const guint8 *)g_mapped_file_get_contents(x->text), x->len,
                          &x->ro, x->be, &error);
  if (x->tr == NULL || (x->resume != NULL && !stw_trainer_load(x->tr, x->resume, &error))) {
    *status = stw_cli_error(error);
    return FALSE;
  }
  StwDtype was = stw_trainer_resumed_state(x->tr), now = x->c.adam.state_dtype;
  if (x->resume != NULL && was != now && x->speaks)
    printf("resumed: %s holds Adam's moments in %s, this run keeps them in %s: %s\n", x->resume,
           stw_state_dtype_name(was), stw_state_dtype_name(now),
           now == STW_DTYPE_FP32 ? "widened exactly" : "rounded to the nearest bf16");
  const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(x->tr));
  if (st->storage_engine[0] != '\0' && x->speaks)
    printf("storage tier: %s in %s through %s%s%s\n",
           plan_stores_params(x->plan) ? "optimizer state and parameters" : "optimizer state",
           x->nvme_dir,
           st->storage_engine, st->storage_fallback[0] != '\0' ? "; " : "",
           st->storage_fallback);
  return TRUE;
}

/* ---- run and output --------------------------------------------------------------------------- */

/* SIGINT and SIGTERM end the run at the next step boundary, after a last checkpoint. */
static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
  interrupted = sig;
}

static void
catch_signals(void)
{
  struct sigaction sa = { .sa_handler = on_signal };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static gboolean
save_checkpoint(const Training *x, int *status)
{
  GError *error = NULL;
  if (!stw_trainer_save(x->tr, x->checkpoint, &error)) {
    *status = stw_cli_error(error);
    return FALSE;
  }
  return TRUE;
}

/* Whether the run goes on: on several ranks all stop at the same step, whichever saw the
 * signal; a stopped run saves its checkpoint and says so (false, *status set). */
static gboolean
go_on(Training *x, int *status)
{
  GError *error = NULL;
  if (x->comm != NULL && x->comm->world > 1) {
    float stop = interrupted != 0;
    if (!stw_comm_finish(x->comm, x->comm->all_reduce(x->comm, &stop, 1, STW_DTYPE_FP32),
                         "stopping together", &error)) {
      *status = stw_cli_error(error);
      return FALSE;
    }
    if (stop > 0 && !interrupted)
      interrupted = SIGTERM;
  }
  if (!interrupted)
    return TRUE;
  guint64 done = stw_trainer_step_count(x->tr);
  x->stopped_together = TRUE; /* every rank stops here: none is waited for */
  if (x->checkpoint != NULL && !save_checkpoint(x, status))
    return FALSE;
  *status = stw_cli_fail(STW_EXIT_FAILURE, "train: interrupted (%s) after step %"
                         G_GUINT64_FORMAT "%s%s", interrupted == SIGINT ? "SIGINT" : "SIGTERM",
                         done, x->checkpoint != NULL ? ": saved " : "; nothing saved (give "
                         "--checkpoint to keep the state)", x->checkpoint != NULL ?
                         x->checkpoint : "");
  return FALSE;
}

static gboolean
run(Training *x, float *loss, StepTimes *times, int *status)
{
  GError *error = NULL;
  double tokens = (double)(x->c.batch * x->c.context) * (x->comm != NULL ? x->comm->world : 1);
  catch_signals();
  /* test hook: a SIGINT after this many steps, as the tests of docs/bad-input.md need one */
  guint64 fault_at = 0;
  const char *fault = g_getenv("STOWAGE_FAULT_INTERRUPT_AFTER");
  if (fault != NULL)
    fault_at = g_ascii_strtoull(fault, NULL, 10);
  for (guint64 s = 0; s < x->n_steps; s++) {
    if (fault_at > 0 && s == fault_at)
      raise(SIGINT);
    if (!go_on(x, status))
      return FALSE;
    /* profile mode times the ops of the step whose trace --profile writes, the last, alone: the
     * others run unsynchronized (a wait for the device per op costs a GPU its launch queue) */
    stw_runtime_set_timed(stw_trainer_runtime(x->tr), x->profile != NULL && s + 1 == x->n_steps);
    gint64 t0 = g_get_monotonic_time();
    if (!stw_trainer_step(x->tr, loss, &error)) {
      /* the naive attention (CUDA's default) keeps its T x T matrices: say what else fits */
      if (g_error_matches(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET) &&
          x->c.attention == STW_ATTENTION_NAIVE &&
          x->c.width / x->c.heads <= STW_FLASH_MAX_HEAD_WIDTH) {
        char *said = g_strdup_printf("%s (the naive attention%s keeps two T x T matrices a head "
                                     "in every layer: --attention flash keeps one value a row, "
                                     "or give --gpu more)", error->message,
                                     x->attention == NULL ? ", CUDA's default," : "");
        g_free(error->message);
        error->message = said;
      }
      *status = stw_cli_error(error);
      return FALSE;
    }
    double dt = (double)(g_get_monotonic_time() - t0) / 1e6;
    times->total_s += dt;
    if (s == 0)
      times->first_s = dt;
    times->last_s = dt;
    const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(x->tr));
    if (!x->quiet) {
      g_autofree char *h = stw_size_format(st->h2d_bytes);
      g_autofree char *d = stw_size_format(st->d2h_bytes);
      g_autofree char *r = stw_size_format(st->storage_read_bytes);
      g_autofree char *w = stw_size_format(st->storage_write_bytes);
      g_autofree char *nvme = st->storage_engine[0] != '\0'
                                  ? g_strdup_printf("  storage read %s  written %s", r, w)
                                  : g_strdup("");
      printf("step %4" G_GUINT64_FORMAT "  loss %.9g  %8.0f tokens/s  H2D %s  D2H %s%s\n",
             stw_trainer_step_count(x->tr), *loss, tokens / dt, h, d, nvme);
      fflush(stdout);
    }
    if (x->checkpoint_every > 0 && (s + 1) % x->checkpoint_every == 0 && s + 1 < x->n_steps &&
        !save_checkpoint(x, status))
      return FALSE;
  }
  return TRUE;
}

/* Every rank's figures, to every rank: the largest device peak, resident memory and the most
 * deviations of all, and whether every rank moved and received what rank 0 did. */
typedef struct {
  guint64 peak, settled, h2d, d2h, comm, deviations, comm_wait_ns, rss;
} RankFigures;

/* The most this process has held resident, in bytes (getrusage's ru_maxrss, KiB on Linux). */
static guint64
peak_rss_bytes(void)
{
  struct rusage u;
  return getrusage(RUSAGE_SELF, &u) == 0 ? (guint64)u.ru_maxrss * 1024 : 0;
}

static gboolean
all_ranks(const Training *x, const StwRuntimeStats *st, RankFigures *worst, gboolean *same,
          GError **error)
{
  RankFigures mine = { st->peak_device_bytes, st->peak_settled_bytes, st->h2d_bytes,
                       st->d2h_bytes, st->comm_bytes, st->deviations, st->comm_wait_ns,
                       peak_rss_bytes() };
  *worst = mine;
  *same = TRUE;
  guint32 world = x->comm != NULL ? x->comm->world : 1;
  RankFigures first = mine;
  for (guint32 r = 0; r < world && world > 1; r++) {
    RankFigures f = mine;
    if (!stw_comm_finish(x->comm, x->comm->broadcast(x->comm, &f, sizeof f, r),
                         "the ranks' figures", error))
      return FALSE;
    if (r == 0)
      first = f;
    worst->peak = MAX(worst->peak, f.peak);
    worst->settled = MAX(worst->settled, f.settled);
    worst->deviations = MAX(worst->deviations, f.deviations);
    worst->comm_wait_ns = MAX(worst->comm_wait_ns, f.comm_wait_ns);
    worst->rss = MAX(worst->rss, f.rss);
    *same &= f.h2d == first.h2d && f.d2h == first.d2h && f.comm == first.comm;
  }
  return TRUE;
}

/* The model's arithmetic per token as llm.c counts it: 6 per parameter (forward and backward)
 * and attention's 12 L C T; MFU is this over the device's peak. */
static void
print_arithmetic(const Training *x, const StepTimes *times, double tokens)
{
  double total_s = times->total_s;
  const StwTrace *model = stw_trainer_model_of(x->tr);
  guint64 params = 0;
  for (guint i = 0; i < model->tensors->len; i++)
    params += stw_trace_tensor(model, i)->numel;
  double per_token = 6.0 * (double)params +
                     12.0 * (double)(x->c.layers * x->c.width * x->c.context);
  /* at speed: without the first step (the device's warm-up, the arena's layout) and a profiled
   * last step (timed, it waits for the device at every op), where there are others */
  guint64 first = x->n_steps > 1 ? 1 : 0;
  guint64 last = x->profile != NULL && x->n_steps > first + 1 ? x->n_steps - 1 : x->n_steps;
  double span_s = total_s - (first ? times->first_s : 0) -
                  (last < x->n_steps ? times->last_s : 0);
  g_autofree char *steps = last - first > 1
      ? g_strdup_printf(" over steps %" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT, first + 1, last)
      : g_strdup_printf(" over step %" G_GUINT64_FORMAT, last);
  printf("model arithmetic %.3f TFLOP/s%s (%.4g FLOP per token: 6 x %" G_GUINT64_FORMAT
         " parameters + 12 L C T)\n",
         span_s > 0 ? per_token * tokens * (double)(last - first) / span_s / 1e12 : 0, steps,
         per_token, params);
}

/* The profile's trace and the checkpoint, where asked for. */
static int
write_files(const Training *x, guint32 world)
{
  GError *error = NULL;
  if (x->profile != NULL) {
    StwTrace *t = stw_trainer_trace(x->tr);
    if (!stw_trace_save(t, x->profile, &error))
      return stw_cli_error(error);
    printf("wrote %s: %u ops\n", x->profile, t->ops->len);
  }
  if (x->checkpoint != NULL) {
    if (!stw_trainer_save(x->tr, x->checkpoint, &error))
      return stw_cli_error(error);
    if (world > 1)
      printf("wrote %s (the set's manifest) and %s.rank-R-of-%u.step-%" G_GUINT64_FORMAT
             ", one file per rank\n", x->checkpoint, x->checkpoint, world,
             stw_trainer_step_count(x->tr));
    else
      printf("wrote %s\n", x->checkpoint);
  }
  return STW_EXIT_OK;
}

static int
output(const Training *x, float loss, const StepTimes *times)
{
  double total_s = times->total_s;
  GError *error = NULL;
  RankFigures worst;
  gboolean same;
  if (!all_ranks(x, stw_runtime_stats(stw_trainer_runtime(x->tr)), &worst, &same, &error))
    return stw_cli_error(error);
  if (!x->speaks) { /* the others keep their own checkpoint, and say nothing */
    if (x->checkpoint != NULL && !stw_trainer_save(x->tr, x->checkpoint, &error))
      return stw_cli_error(error);
    return STW_EXIT_OK;
  }
  g_autofree char *held = stw_size_format(worst.peak);
  g_autofree char *settled = stw_size_format(worst.settled);
  /* where copies still in flight held memory the plan counts free, both figures */
  g_autofree char *peak = worst.settled < worst.peak
                              ? g_strdup_printf("%s (%s as the plan counts it: write-backs in "
                                                "flight held the rest)", held, settled)
                              : g_strdup(held);
  g_autofree char *budget = stw_size_format(x->ro.device_bytes);
  guint32 world = x->comm != NULL ? x->comm->world : 1;
  double tokens = (double)(x->c.batch * x->c.context) * world;
  const char *on = x->cx != NULL ? " on " : x->mixed ? " in " : "";
  const char *isa = stw_compute_cpu_bf16_isa();
  g_autofree char *what = x->cx != NULL ? g_strdup(x->cx->name)
                          : !x->mixed   ? g_strdup("")
                          : isa != NULL ? g_strdup_printf("mixed precision (bf16 matmuls, %s)", isa)
                                        : g_strdup("mixed precision (fp32 matmuls: bf16 ones "
                                                   "need oneDNN and AVX512-BF16 or AMX)");
  g_autofree char *ranks = world > 1 ? g_strdup_printf(" on %u ranks", world) : g_strdup("");
  g_autofree char *comm = stw_size_format(worst.comm);
  double waited_ms = (double)worst.comm_wait_ns / 1e6 / (double)MAX(x->n_steps, 1);
  g_autofree char *each = world > 1 ? g_strdup_printf(" on every rank; collectives %s received "
                                                     "per rank and step (%.2f ms waiting for "
                                                     "them)%s", comm, waited_ms, same ? "" :
                                                     " (the ranks moved different bytes)")
                                    : g_strdup("");
  printf("trained %" G_GUINT64_FORMAT " steps%s%s%s: final loss %.9g, %.0f tokens/s; device "
         "peak %s of %s%s; %" G_GUINT64_FORMAT " deviations from the plan%s\n", x->n_steps,
         ranks, on, what, loss, tokens * (double)x->n_steps / total_s, peak, budget, each,
         worst.deviations, x->verify ? ", every move checksummed" : "");
  /* where the plan predicts the process's resident memory (its device emulated in host memory,
   * as this one is), what it held against it */
  guint64 rss = x->plan != NULL && x->cx == NULL ? stw_plan_rank_rss(x->plan) : 0;
  if (rss > 0 && worst.rss > 0) {
    g_autofree char *held_rss = stw_size_format(worst.rss);
    g_autofree char *planned = stw_size_format(rss);
    printf("host memory: peak RSS %s a rank, the plan's %s (%+.1f%%)\n", held_rss, planned,
           100.0 * ((double)rss - (double)worst.rss) / (double)worst.rss);
  }
  const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(x->tr));
  if (st->storage_engine[0] != '\0') /* where a replay slower than its plan lost the time */
    printf("storage tier: %.2f ms a step waiting for its reads and writes, %.2f ms for the "
           "copies to and from the device\n",
           (double)st->storage_wait_ns / 1e6 / (double)MAX(x->n_steps, 1),
           (double)st->copy_wait_ns / 1e6 / (double)MAX(x->n_steps, 1));
  print_arithmetic(x, times, tokens);
  return write_files(x, world);
}

int
stw_cmd_train(int argc, char **argv)
{
  g_auto(Training) x = { 0 };
  if (!parse(&x, argc, argv))
    return STW_EXIT_USAGE;
  int status = STW_EXIT_OK;
  float loss = 0;
  StepTimes times = { 0 };
  if (set_up(&x, &status) && run(&x, &loss, &times, &status))
    status = output(&x, loss, &times);
  /* a rank that failed (its message printed) ends the job now: the others would otherwise wait
   * for it in their next collective until the timeout, and it in MPI_Finalize for them */
  if (status != STW_EXIT_OK && !x.stopped_together && x.comm != NULL && x.comm->world > 1 &&
      x.comm->abort != NULL)
    x.comm->abort(x.comm, status);
  return status;
}
