/* cmd-whatif.c — `stowage whatif`: sweep GPU budgets, policies, batch sizes and chunk sizes.
 * The library resolves the request and runs the sweep (request.h, whatif.h); this file reads the
 * command line and shows the rows: a table, JSON, CSV or an SVG plot. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <stowage/report.h>
#include <stowage/units.h>
#include <stowage/whatif.h>

#include "cli.h"

/* The command line as the user typed it. */
typedef struct {
  StwCliPlanning pl;
  char *gpu, *policy, *model, *model_config, *batch, *seq, *dtype, *chunks, *csv_file, *svg_file,
      *attention, *kernels, *loss, *micro_steps, *checkpoint_every, *lora, *lora_targets,
      *optimizer_impl, *images, *image_size, *vision_trained, *gradients, *collectives,
      *reduce_bucket_size, *sub_group_size, *init, *checkpoints;
  gboolean json, checkpointing, amp;
} Line;

static void
line_clear(Line *l)
{
  stw_cli_planning_clear(&l->pl);
  char **texts[] = { &l->gpu, &l->policy, &l->model, &l->model_config, &l->batch, &l->seq,
                     &l->dtype, &l->chunks, &l->csv_file, &l->svg_file, &l->attention,
                     &l->kernels, &l->loss, &l->micro_steps, &l->checkpoint_every, &l->lora,
                     &l->lora_targets, &l->optimizer_impl, &l->images, &l->image_size,
                     &l->vision_trained, &l->gradients, &l->collectives,
                     &l->reduce_bucket_size, &l->sub_group_size, &l->init, &l->checkpoints };
  for (gsize i = 0; i < G_N_ELEMENTS(texts); i++)
    g_clear_pointer(texts[i], g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Line, line_clear)

static void
progress(guint done, guint total)
{
  if (!isatty(STDERR_FILENO))
    return;
  fprintf(stderr, "\rwhatif: %u of %u points", done, total);
  if (done == total)
    fprintf(stderr, "\r%*s\r", 40, "");
  fflush(stderr);
}

/* ---- parse ------------------------------------------------------------------------------------ */

static gboolean
parse(Line *l, int *argc, char ***argv)
{
  GOptionEntry entries[] = {
    { "gpu", 'g', 0, STW_OPTION_TEXT, &l->gpu,
      "budgets: FROM..TO:STEP or a comma list (required)", "LIST" },
    { "policy", 'p', 0, STW_OPTION_TEXT, &l->policy,
      "comma list of policies, or all (default)", "LIST" },
    { "model", 'm', 0, STW_OPTION_TEXT, &l->model, "synthesize this model instead of a trace",
      "M" },
    { "model-config", 0, 0, G_OPTION_ARG_FILENAME, &l->model_config, STW_CLI_MODEL_CONFIG_HELP,
      "FILE" },
    { "batch", 'b', 0, STW_OPTION_TEXT, &l->batch, "with --model: comma list of batch sizes",
      "LIST" },
    { "seq", 's', 0, STW_OPTION_TEXT, &l->seq, "with --model: tokens per sequence", "S" },
    { "dtype", 0, 0, STW_OPTION_TEXT, &l->dtype,
      "with --model: bf16 (default; fp16 on a GPU without bf16), fp16 or fp32", "T" },
    { "checkpointing", 'c', 0, G_OPTION_ARG_NONE, &l->checkpointing,
      "with --model: checkpointing", NULL },
    { "amp", 0, 0, G_OPTION_ARG_NONE, &l->amp,
      "with --model: PyTorch's automatic mixed precision, as synth --amp", NULL },
    { "checkpoint-every", 0, 0, STW_OPTION_TEXT, &l->checkpoint_every,
      "with --model: checkpointing of segments of N blocks, as synth --checkpoint-every", "N" },
    { "attention", 0, 0, STW_OPTION_TEXT, &l->attention, "with --model: naive or flash",
      "A" },
    { "kernels", 0, 0, STW_OPTION_TEXT, &l->kernels,
      "with --model: eager (default) or fused, as synth --kernels", "K" },
    { "loss", 0, 0, STW_OPTION_TEXT, &l->loss,
      "with --model: full (default), native or chunked, as synth --loss", "L" },
    { "optimizer-impl", 0, 0, STW_OPTION_TEXT, &l->optimizer_impl,
      "with --model: fused (default), foreach, for-loop or deepspeed, as synth "
      "--optimizer-impl", "I" },
    { "init", 0, 0, STW_OPTION_TEXT, &l->init,
      "with --model: sharded (default), host or host-fp32, as synth --init", "HOW" },
    { "checkpoints", 0, 0, STW_OPTION_TEXT, &l->checkpoints,
      "with --model --checkpointing: device (default) or host, as synth --checkpoints",
      "WHERE" },
    { "reduce-bucket-size", 0, 0, STW_OPTION_TEXT, &l->reduce_bucket_size,
      "with --model --optimizer-impl deepspeed: its reduce_bucket_size, as synth's", "N" },
    { "sub-group-size", 0, 0, STW_OPTION_TEXT, &l->sub_group_size,
      "with --model --optimizer-impl deepspeed: its sub_group_size, as synth's", "N" },
    { "micro-steps", 0, 0, STW_OPTION_TEXT, &l->micro_steps,
      "with --model: forward-backward passes per step (gradient accumulation), as synth "
      "--micro-steps", "K" },
    { "gradients", 0, 0, STW_OPTION_TEXT, &l->gradients,
      "with --model: device (default), host or host-via-device, where the loop keeps its "
      "gradients, as synth "
      "--gradients", "WHERE" },
    { "collectives", 0, 0, STW_OPTION_TEXT, &l->collectives,
      "with --model: overlapped (default) or blocking, whether the loop's collectives hold the "
      "compute stream, as synth --collectives", "WHEN" },
    { "lora", 0, 0, STW_OPTION_TEXT, &l->lora,
      "with --model: LoRA adapters of this rank, the base frozen", "RANK" },
    { "lora-targets", 0, 0, STW_OPTION_TEXT, &l->lora_targets,
      "with --lora: q, k, v, o, gate, up, down (default q,v)", "LIST" },
    { "images", 0, 0, STW_OPTION_TEXT, &l->images,
      "with --model: images a sequence through the vision tower, as synth --images", "N" },
    { "image-size", 0, 0, STW_OPTION_TEXT, &l->image_size,
      "with --images: their side in pixels, as synth --image-size", "PX" },
    { "vision-trained", 0, 0, STW_OPTION_TEXT, &l->vision_trained,
      "with --images: none, projector or all, as synth --vision-trained", "W" },
    { "chunk-size", 0, 0, STW_OPTION_TEXT, &l->chunks, "comma list of chunk sizes (default: "
      "search)", "LIST" },
    STW_CLI_PLANNING_ENTRIES(l->pl),
    STW_CLI_MEASURED_TIMES_ENTRY(l->pl),
    { "csv", 0, 0, G_OPTION_ARG_FILENAME, &l->csv_file, "write the rows as CSV ('-': stdout)",
      "FILE" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &l->json, "print the rows as JSON", NULL },
    { "svg", 0, 0, G_OPTION_ARG_FILENAME, &l->svg_file,
      "plot iteration time and bytes moved against the budget", "FILE" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("[TRACE] - sweep GPU budgets");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Plans, checks and simulates every combination of budget, policy, batch size and\n"
           "chunk size, and prints a table: feasible or why not, bytes moved, simulated\n"
           "iteration time, slowdown against unlimited GPU memory.\n\n"
           "Example: stowage whatif traces/pstar-12b-b8-s1024-ckpt.json --gpu 8GiB..80GiB:8GiB "
           "--svg sweep.svg\n"
           "         stowage whatif --model gpt2-xl --batch 4,8 --seq 1024 --checkpointing "
           "--gpu 8GiB,16GiB,24GiB\n");
  return stw_cli_parse(ctx, argc, argv, "whatif");
}

/* The request the command line makes (TRACE the positional argument, or NULL). */
static StwRequest *
request_of(const Line *l, const char *trace)
{
  StwRequest *r = stw_cli_planning_request(&l->pl, &stw_request_whatif_kind);
  const char *const pairs[][2] = {
    { "trace", trace }, { "gpu", l->gpu }, { "policy", l->policy }, { "model", l->model },
    { "model-config", l->model_config }, { "batch", l->batch }, { "seq", l->seq },
    { "dtype", l->dtype }, { "attention", l->attention }, { "kernels", l->kernels },
    { "loss", l->loss }, { "micro-steps", l->micro_steps }, { "chunk-size", l->chunks },
    { "checkpoint-every", l->checkpoint_every }, { "optimizer-impl", l->optimizer_impl },
    { "lora", l->lora }, { "lora-targets", l->lora_targets }, { "images", l->images },
    { "image-size", l->image_size }, { "vision-trained", l->vision_trained },
    { "gradients", l->gradients }, { "collectives", l->collectives },
    { "reduce-bucket-size", l->reduce_bucket_size }, { "sub-group-size", l->sub_group_size },
    { "init", l->init }, { "checkpoints", l->checkpoints }
  };
  for (gsize i = 0; i < G_N_ELEMENTS(pairs); i++)
    stw_request_set(r, pairs[i][0], pairs[i][1]);
  stw_request_set_flag(r, "checkpointing", l->checkpointing);
  stw_request_set_flag(r, "amp", l->amp);
  return r;
}

/* ---- output ----------------------------------------------------------------------------------- */

/* The time and bytes of POLICY at BUDGET for the sweep's first batch and chunk setting (NaN
 * where it does not fit). */
static void
point_values(const GArray *rows, int policy, guint64 budget, double *time_s, double *moved_gib)
{
  *time_s = *moved_gib = NAN;
  const StwWhatifRow *first = &g_array_index(rows, StwWhatifRow, 0);
  for (guint i = 0; i < rows->len; i++) {
    const StwWhatifRow *r = &g_array_index(rows, StwWhatifRow, i);
    const StwWhatifPoint *p = &r->point;
    if (p->policy == (StwPolicy)policy && p->gpu_bytes == budget && r->batch == first->batch &&
        r->chunk_size == first->chunk_size && p->feasible) {
      *time_s = (double)p->iteration_ns / 1e9;
      *moved_gib = (double)(p->h2d_bytes + p->d2h_bytes) / STW_GiB;
    }
  }
}

static char *
svg(const GArray *rows, const StwWhatifSweep *s)
{
  g_autoptr(GArray) x = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint b = 0; b < s->budgets->len; b++) {
    double gib = (double)g_array_index(s->budgets, guint64, b) / STW_GiB;
    g_array_append_val(x, gib);
  }
  guint n = s->policies->len;
  StwSeries *time = g_new0(StwSeries, n), *bytes = g_new0(StwSeries, n);
  for (guint k = 0; k < n; k++) {
    int policy = g_array_index(s->policies, int, k);
    time[k].name = bytes[k].name = stw_policy_names[policy];
    time[k].y = g_array_new(FALSE, FALSE, sizeof(double));
    bytes[k].y = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint b = 0; b < s->budgets->len; b++) {
      double t, m;
      point_values(rows, policy, g_array_index(s->budgets, guint64, b), &t, &m);
      g_array_append_val(time[k].y, t);
      g_array_append_val(bytes[k].y, m);
    }
  }
  char *text = stw_report_svg_sweep(s->title, x, "GPU memory budget (GiB)", time,
                                    "simulated iteration time (s)", bytes,
                                    "bytes moved per iteration, H2D + D2H (GiB)", n);
  for (guint k = 0; k < n; k++) {
    g_array_unref(time[k].y);
    g_array_unref(bytes[k].y);
  }
  g_free(time);
  g_free(bytes);
  return text;
}

static void
print_table(const GArray *rows)
{
  g_autoptr(StwTable) tab = stw_table_new(14, "batch", "budget", "<policy", "chunk size", "H2D",
                                          "D2H", "iteration", "tokens/s", "MFU", "slowdown",
                                          "<fits?", "host", "<moments", "<bound by");
  for (guint i = 0; i < rows->len; i++) {
    const StwWhatifRow *r = &g_array_index(rows, StwWhatifRow, i);
    const StwWhatifPoint *p = &r->point;
    g_autofree char *bt = r->batch ? g_strdup_printf("%" G_GUINT64_FORMAT, r->batch)
                                   : g_strdup("-");
    g_autofree char *bu = stw_size_format(p->gpu_bytes);
    if (!p->feasible) { /* --json and --csv carry the reason */
      stw_table_row(tab, bt, bu, stw_policy_names[p->policy], "-", "-", "-", "-", "-", "-",
                    "-", "no", "-", stw_state_dtype_name(p->state_dtype), "-");
      continue;
    }
    g_autofree char *cs = stw_cli_group_digits(p->chunk_size_elems);
    g_autofree char *h = stw_size_format(p->h2d_bytes);
    g_autofree char *d = stw_size_format(p->d2h_bytes);
    g_autofree char *it = stw_duration_format(p->iteration_ns);
    g_autofree char *sd = stw_cli_slowdown_cell(p->slowdown);
    g_autofree char *tps = NULL, *mfu = NULL;
    stw_cli_throughput_cells(&p->throughput, &tps, &mfu);
    g_autofree char *host = stw_size_format(p->host_bytes);
    stw_table_row(tab, bt, bu, stw_policy_names[p->policy], cs, h, d, it, tps, mfu, sd, "yes",
                  host, stw_state_dtype_name(p->state_dtype), stw_bound_words[p->bound]);
  }
  stw_table_print(tab, stdout);
}

static int
output(const Line *l, const StwWhatifSweep *s, const GArray *rows)
{
  GError *error = NULL;
  if (l->csv_file != NULL) {
    g_autofree char *text = stw_whatif_rows_csv(rows);
    if (!stw_file_write_atomic(l->csv_file, text, strlen(text), &error))
      return stw_cli_error(error);
  }
  if (l->svg_file != NULL) {
    g_autofree char *text = svg(rows, s);
    if (!stw_file_write_atomic(l->svg_file, text, strlen(text), &error))
      return stw_cli_error(error);
  }
  if (l->json) {
    g_autofree char *text = stw_whatif_rows_json(rows);
    printf("%s\n", text);
  } else if (l->csv_file == NULL || strcmp(l->csv_file, "-") != 0) {
    if (l->model != NULL || l->model_config != NULL) { /* synthesized: what it was made as */
      const StwTrace *t0 = g_ptr_array_index(s->traces, 0);
      g_autofree char *model = stw_cli_model_said(t0, FALSE);
      guint64 frozen_numel = 0;
      guint32 frozen = stw_trace_frozen(t0, &frozen_numel);
      g_autofree char *params = stw_cli_group_digits(frozen_numel);
      g_autofree char *of_them = frozen > 0 ? g_strdup_printf("; %s parameters frozen in %u "
                                                              "tensors", params, frozen)
                                            : g_strdup("");
      printf("model %s%s\n", model, of_them);
    }
    printf("%s: %s\n", s->options.hw.name, s->options.hw.origin);
    g_autofree char *host = stw_cli_host_said(&s->options.hw);
    printf("host CPU %s\n", host);
    /* a loaded trace (a synthesized one is the profile's own) */
    g_autofree char *elsewhere = s->traces->len == 1
                                     ? stw_cli_measured_elsewhere(g_ptr_array_index(s->traces, 0),
                                                                  &s->options.hw,
                                                                  s->options.measured_times)
                                     : NULL;
    if (elsewhere != NULL)
      printf("assumes %s\n", elsewhere);
    g_autofree char *optimizer = s->traces->len > 0
                                     ? stw_cli_optimizer_assumed(g_ptr_array_index(s->traces, 0))
                                     : NULL;
    if (optimizer != NULL)
      printf("assumes %s\n", optimizer);
    g_autofree char *buffers =
        s->traces->len > 0 ? stw_cli_loop_buffers_said(g_ptr_array_index(s->traces, 0),
                                                       stw_planner_world(
                                                           g_ptr_array_index(s->traces, 0),
                                                           &s->options))
                           : NULL;
    if (buffers != NULL)
      printf("assumes %s\n", buffers);
    g_autofree char *collectives =
        s->traces->len > 0
            ? stw_cli_collectives_assumed(g_ptr_array_index(s->traces, 0),
                                          stw_planner_world(g_ptr_array_index(s->traces, 0),
                                                            &s->options))
            : NULL;
    if (collectives != NULL)
      printf("assumes %s\n", collectives);
    g_autofree StwPolicy *policies = g_new(StwPolicy, MAX(s->policies->len, 1));
    for (guint k = 0; k < s->policies->len; k++)
      policies[k] = (StwPolicy)g_array_index(s->policies, int, k);
    guint32 world = s->traces->len > 0 ? stw_planner_world(g_ptr_array_index(s->traces, 0),
                                                           &s->options)
                                       : s->options.world_size;
    g_autofree char *layout = stw_cli_layout_assumed(&s->options, world, policies,
                                                     s->policies->len);
    if (layout != NULL)
      printf("assumes %s\n", layout);
    print_table(rows);
  }
  return STW_EXIT_OK;
}

int
stw_cmd_whatif(int argc, char **argv)
{
  g_auto(Line) l = { 0 };
  if (!parse(&l, &argc, &argv))
    return STW_EXIT_USAGE;
  if (argc > 2)
    return stw_cli_fail(STW_EXIT_USAGE, "whatif: give either one trace file or --model");
  const char *trace = argc == 2 ? argv[1] : NULL;
  const StwCliFile in[] = { { "the trace", trace }, { "--model", l.model } };
  const StwCliFile out[] = { { "--csv", l.csv_file }, { "--svg", l.svg_file } };
  if (!stw_cli_outputs_apart("whatif", in, 2, out, 2))
    return STW_EXIT_USAGE;
  g_autoptr(StwRequest) r = request_of(&l, trace);
  StwWhatifSweep s;
  GError *error = NULL;
  if (!stw_request_whatif(r, &s, &error)) {
    stw_whatif_sweep_clear(&s);
    return stw_cli_error(error);
  }
  GArray *rows = stw_whatif_sweep_run(&s, progress);
  int status = output(&l, &s, rows);
  stw_whatif_rows_free(rows);
  stw_whatif_sweep_clear(&s);
  return status;
}
