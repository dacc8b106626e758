/* cmd-whatif.c — `stowage whatif`: sweep GPU budgets, policies, batch sizes and chunk sizes. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <stowage/report.h>
#include <stowage/synth.h>
#include <stowage/units.h>
#include <stowage/whatif.h>

#include "cli.h"
#include "json.h"

typedef struct {
  guint64 batch;       /* 0 when the trace was given */
  guint64 chunk;       /* 0: search */
  StwWhatifPoint pt;
} Row;

/* The sweep as the user asked for it. */
typedef struct {
  StwCliPlanning pl;
  char *gpu, *policy, *model, *model_config, *batch, *seq, *dtype, *chunks, *csv_file, *svg_file, *attention;
  gboolean json, checkpointing;
  const char *trace_file;  /* or the model */
  GArray *budgets;         /* guint64 */
  GArray *policies;        /* int: StwPolicy */
  GArray *batches;         /* guint64; for a trace, its own (0: it does not say) */
  GArray *sizes;           /* guint64 chunk sizes; one 0: search */
  GPtrArray *traces;       /* StwTrace*, one per batch */
  StwPlannerOptions o;
  GArray *rows;            /* Row */
} Sweep;

static void
sweep_clear(Sweep *w)
{
  stw_cli_planning_clear(&w->pl);
  g_free(w->gpu);
  g_free(w->policy);
  g_free(w->model);
  g_free(w->model_config);
  g_free(w->batch);
  g_free(w->seq);
  g_free(w->dtype);
  g_free(w->chunks);
  g_free(w->csv_file);
  g_free(w->svg_file);
  g_free(w->attention);
  g_clear_pointer(&w->budgets, g_array_unref);
  g_clear_pointer(&w->policies, g_array_unref);
  g_clear_pointer(&w->batches, g_array_unref);
  g_clear_pointer(&w->sizes, g_array_unref);
  g_clear_pointer(&w->traces, g_ptr_array_unref);
  for (guint i = 0; w->rows != NULL && i < w->rows->len; i++)
    stw_whatif_point_clear(&g_array_index(w->rows, Row, i).pt);
  g_clear_pointer(&w->rows, g_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Sweep, sweep_clear)

static gboolean
parse_counts(const char *text, const char *option, guint64 max, GArray *out)
{
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  for (char **p = parts; *p != NULL; p++) {
    guint64 v;
    if (!stw_cli_parse_count(g_strstrip(*p), option, 1, max, &v))
      return FALSE;
    g_array_append_val(out, v);
  }
  return TRUE;
}

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
parse(Sweep *w, int argc, char **argv, int *status)
{
  *status = STW_EXIT_USAGE;
  GOptionEntry entries[] = {
    { "gpu", 'g', 0, STW_OPTION_TEXT, &w->gpu,
      "budgets: FROM..TO:STEP or a comma list (required)", "LIST" },
    { "policy", 'p', 0, STW_OPTION_TEXT, &w->policy,
      "comma list of policies, or all (default)", "LIST" },
    { "model", 'm', 0, STW_OPTION_TEXT, &w->model, "synthesize this model instead of a trace",
      "M" },
    { "model-config", 0, 0, G_OPTION_ARG_FILENAME, &w->model_config, STW_CLI_MODEL_CONFIG_HELP,
      "FILE" },
    { "batch", 'b', 0, STW_OPTION_TEXT, &w->batch, "with --model: comma list of batch sizes",
      "LIST" },
    { "seq", 's', 0, STW_OPTION_TEXT, &w->seq, "with --model: tokens per sequence", "S" },
    { "dtype", 0, 0, STW_OPTION_TEXT, &w->dtype, "with --model: bf16, fp16 or fp32", "T" },
    { "checkpointing", 'c', 0, G_OPTION_ARG_NONE, &w->checkpointing,
      "with --model: checkpointing", NULL },
    { "attention", 0, 0, STW_OPTION_TEXT, &w->attention, "with --model: naive or flash",
      "A" },
    { "chunk-size", 0, 0, STW_OPTION_TEXT, &w->chunks, "comma list of chunk sizes (default: "
      "search)", "LIST" },
    STW_CLI_PLANNING_ENTRIES(w->pl),
    { "csv", 0, 0, G_OPTION_ARG_FILENAME, &w->csv_file, "write the rows as CSV ('-': stdout)",
      "FILE" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &w->json, "print the rows as JSON", NULL },
    { "svg", 0, 0, G_OPTION_ARG_FILENAME, &w->svg_file,
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
  if (!stw_cli_parse(ctx, &argc, &argv, "whatif"))
    return FALSE;
  if (!stw_cli_model_option("whatif", &w->model, &w->model_config))
    return FALSE;
  if ((w->model == NULL) == (argc != 2)) {
    stw_cli_fail(STW_EXIT_USAGE, "whatif: give either one trace file or --model");
    return FALSE;
  }
  if (w->gpu == NULL) {
    stw_cli_fail(STW_EXIT_USAGE, "whatif: --gpu LIST is required (e.g. 8GiB..80GiB:8GiB)");
    return FALSE;
  }
  if (w->model == NULL && (w->batch || w->seq || w->dtype || w->checkpointing || w->attention)) {
    stw_cli_fail(STW_EXIT_USAGE, "whatif: --batch, --seq, --dtype, --checkpointing and "
                 "--attention go with --model");
    return FALSE;
  }
  w->trace_file = w->model == NULL ? argv[1] : NULL;
  const StwCliFile in[] = { { "the trace", w->trace_file }, { "--model", w->model } };
  const StwCliFile out[] = { { "--csv", w->csv_file }, { "--svg", w->svg_file } };
  if (!stw_cli_outputs_apart("whatif", in, 2, out, 2))
    return FALSE;
  GError *error = NULL;
  if (!stw_size_list_parse(w->gpu, &w->budgets, &error)) {
    stw_cli_fail(STW_EXIT_USAGE, "--gpu: %s", error->message);
    g_error_free(error);
    return FALSE;
  }
  w->policies = g_array_new(FALSE, FALSE, sizeof(int));
  w->batches = g_array_new(FALSE, FALSE, sizeof(guint64));
  w->sizes = g_array_new(FALSE, FALSE, sizeof(guint64));
  if (!stw_cli_parse_enum_list(w->policy, "--policy", stw_policy_names, w->policies) ||
      (w->batch != NULL && !parse_counts(w->batch, "--batch", STW_SYNTH_MAX_BATCH, w->batches)) ||
      (w->chunks != NULL &&
       !parse_counts(w->chunks, "--chunk-size", STW_TRACE_MAX_NUMEL, w->sizes)))
    return FALSE;
  if (w->sizes->len == 0) {
    guint64 zero = 0;
    g_array_append_val(w->sizes, zero);
  }
  *status = STW_EXIT_OK;
  return TRUE;
}

/* ---- set up: the traces, one given or one per batch size ---------------------------------------- */

static gboolean
set_up(Sweep *w, int *status)
{
  GError *error = NULL;
  w->traces = g_ptr_array_new_with_free_func((GDestroyNotify)stw_trace_free);
  if (w->model == NULL) {
    StwTrace *t = stw_trace_load(w->trace_file, &error);
    if (t == NULL) {
      *status = stw_cli_error(error);
      return FALSE;
    }
    g_ptr_array_add(w->traces, t);
    g_array_append_val(w->batches, t->model.batch);
    g_autoptr(StwRequest) r = stw_cli_planning_request(&w->pl, &stw_request_whatif_kind);
    return stw_cli_planning_options(r, t, &w->o, status);
  }
  StwModelConfig cfg;
  if (!stw_model_resolve(w->model, &cfg, &error)) {
    *status = stw_cli_error(error);
    return FALSE;
  }
  StwSynthOptions so = { .batch = 1, .seq = cfg.max_seq, .dtype = STW_DTYPE_BF16,
                         .checkpointing = w->checkpointing };
  int dtype = so.dtype, attention = so.attention;
  if ((w->seq != NULL && !stw_cli_parse_count(w->seq, "--seq", 1, cfg.max_seq, &so.seq)) ||
      !stw_cli_parse_enum(w->dtype, "--dtype", stw_dtype_names, &dtype) ||
      !stw_cli_parse_enum(w->attention, "--attention", stw_attention_names, &attention)) {
    *status = STW_EXIT_USAGE;
    return FALSE;
  }
  so.dtype = (StwDtype)dtype;
  so.attention = (StwAttention)attention;
  if (w->batches->len == 0) {
    guint64 one = 1;
    g_array_append_val(w->batches, one);
  }
  g_autoptr(StwRequest) r = stw_cli_planning_request(&w->pl, &stw_request_whatif_kind);
  if (!stw_cli_planning_options(r, NULL, &w->o, status))
    return FALSE;
  for (guint b = 0; b < w->batches->len; b++) {
    so.batch = g_array_index(w->batches, guint64, b);
    StwTrace *t = stw_synth_trace(&cfg, &so, &w->o.hw, &error);
    if (t == NULL) {
      *status = stw_cli_fail(STW_EXIT_USAGE, "whatif: %s", error->message);
      g_error_free(error);
      return FALSE;
    }
    g_ptr_array_add(w->traces, t);
  }
  return TRUE;
}

/* Every budget of the sweep one the GPU has (or --beyond-device). */
static gboolean
budgets_on_device(const Sweep *w, int *status)
{
  g_autoptr(StwRequest) r = stw_cli_planning_request(&w->pl, &stw_request_whatif_kind);
  GError *error = NULL;
  for (guint b = 0; b < w->budgets->len; b++) {
    if (!stw_request_on_device(r, "gpu", &w->o, g_array_index(w->budgets, guint64, b),
                               &error)) {
      *status = stw_cli_error(error);
      return FALSE;
    }
  }
  return TRUE;
}

/* ---- run: every point ------------------------------------------------------------------------- */

static void
run(Sweep *w)
{
  w->rows = g_array_new(FALSE, TRUE, sizeof(Row));
  guint total = w->traces->len * w->sizes->len * w->budgets->len * w->policies->len, done = 0;
  for (guint ti = 0; ti < w->traces->len; ti++) {
    const StwTrace *t = w->traces->pdata[ti];
    guint64 unlimited;
    stw_whatif_unlimited(t, &w->o, &unlimited, NULL); /* unknown: slowdowns are none */
    for (guint si = 0; si < w->sizes->len; si++) {
      w->o.chunk_size_elems = g_array_index(w->sizes, guint64, si);
      for (guint bi = 0; bi < w->budgets->len; bi++) {
        for (guint pi = 0; pi < w->policies->len; pi++) {
          Row r = { .batch = g_array_index(w->batches, guint64, ti),
                    .chunk = w->o.chunk_size_elems };
          stw_whatif_run(t, &w->o, (StwPolicy)g_array_index(w->policies, int, pi),
                         g_array_index(w->budgets, guint64, bi), unlimited, &r.pt);
          g_array_append_val(w->rows, r);
          progress(++done, total);
        }
      }
    }
  }
}

/* ---- output ----------------------------------------------------------------------------------- */

static char *
csv(const GArray *rows)
{
  GString *s = g_string_new("batch,gpu_bytes,policy,feasible,chunk_size_elems,h2d_bytes,"
                            "d2h_bytes,comm_bytes,iteration_ns,slowdown,tokens_per_s,mfu,why\n");
  for (guint i = 0; i < rows->len; i++) {
    const Row *r = &g_array_index(rows, Row, i);
    g_autofree char *why = g_strdup(r->pt.why ? r->pt.why : "");
    /* an empty field where the slowdown is no ratio */
    g_autofree char *sd = r->pt.feasible && isfinite(r->pt.slowdown)
                              ? g_strdup_printf("%.4f", r->pt.slowdown) : g_strdup("");
    g_autofree char *bt = r->batch ? g_strdup_printf("%" G_GUINT64_FORMAT, r->batch)
                                   : g_strdup("");
    for (char *c = why; *c; c++)
      if (*c == '"')
        *c = '\'';
    g_string_append_printf(s, "%s,%" G_GUINT64_FORMAT ",%s,%s,%" G_GUINT64_FORMAT
                           ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                           ",%" G_GUINT64_FORMAT ",%s,%.1f,%.4f,\"%s\"\n", bt,
                           r->pt.gpu_bytes, stw_policy_names[r->pt.policy],
                           r->pt.feasible ? "yes" : "no", r->pt.chunk_size_elems, r->pt.h2d_bytes,
                           r->pt.d2h_bytes, r->pt.comm_bytes, r->pt.iteration_ns, sd,
                           r->pt.throughput.tokens_per_s, r->pt.throughput.mfu, why);
  }
  return g_string_free(s, FALSE);
}

/* The time and bytes of POLICY at BUDGET for the sweep's first batch and chunk setting (NaN
 * where it does not fit). */
static void
point_values(const GArray *rows, int policy, guint64 budget, double *time_s, double *moved_gib)
{
  *time_s = *moved_gib = NAN;
  const Row *first = &g_array_index(rows, Row, 0);
  for (guint i = 0; i < rows->len; i++) {
    const Row *r = &g_array_index(rows, Row, i);
    if (r->pt.policy == (StwPolicy)policy && r->pt.gpu_bytes == budget &&
        r->batch == first->batch && r->chunk == first->chunk && r->pt.feasible) {
      *time_s = (double)r->pt.iteration_ns / 1e9;
      *moved_gib = (double)(r->pt.h2d_bytes + r->pt.d2h_bytes) / STW_GiB;
    }
  }
}

static char *
svg(const GArray *rows, const GArray *budgets, const GArray *policies, const char *title)
{
  g_autoptr(GArray) x = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint b = 0; b < budgets->len; b++) {
    double gib = (double)g_array_index(budgets, guint64, b) / STW_GiB;
    g_array_append_val(x, gib);
  }
  StwSeries *time = g_new0(StwSeries, policies->len), *bytes = g_new0(StwSeries, policies->len);
  for (guint k = 0; k < policies->len; k++) {
    int policy = g_array_index(policies, int, k);
    time[k].name = bytes[k].name = stw_policy_names[policy];
    time[k].y = g_array_new(FALSE, FALSE, sizeof(double));
    bytes[k].y = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint b = 0; b < budgets->len; b++) {
      double t, m;
      point_values(rows, policy, g_array_index(budgets, guint64, b), &t, &m);
      g_array_append_val(time[k].y, t);
      g_array_append_val(bytes[k].y, m);
    }
  }
  char *text = stw_report_svg_sweep(title, x, "GPU memory budget (GiB)", time,
                                    "simulated iteration time (s)", bytes,
                                    "bytes moved per iteration, H2D + D2H (GiB)", policies->len);
  for (guint k = 0; k < policies->len; k++) {
    g_array_unref(time[k].y);
    g_array_unref(bytes[k].y);
  }
  g_free(time);
  g_free(bytes);
  return text;
}

static void
print_json(const GArray *rows)
{
  cJSON *arr = cJSON_CreateArray();
  for (guint i = 0; i < rows->len; i++) {
    const Row *r = &g_array_index(rows, Row, i);
    cJSON *o = cJSON_CreateObject();
    if (r->batch)
      stw_json_add_u64(o, "batch", r->batch);
    stw_json_add_u64(o, "gpu_bytes", r->pt.gpu_bytes);
    cJSON_AddStringToObject(o, "policy", stw_policy_names[r->pt.policy]);
    cJSON_AddBoolToObject(o, "feasible", r->pt.feasible);
    if (r->pt.feasible) {
      stw_json_add_u64(o, "chunk_size_elems", r->pt.chunk_size_elems);
      stw_json_add_u64(o, "h2d_bytes", r->pt.h2d_bytes);
      stw_json_add_u64(o, "d2h_bytes", r->pt.d2h_bytes);
      stw_json_add_u64(o, "comm_bytes", r->pt.comm_bytes);
      stw_json_add_u64(o, "iteration_ns", r->pt.iteration_ns);
      stw_cli_json_slowdown(o, r->pt.slowdown);
      stw_cli_json_throughput(o, &r->pt.throughput);
    } else {
      cJSON_AddStringToObject(o, "why", r->pt.why);
    }
    cJSON_AddItemToArray(arr, o);
  }
  char *text = cJSON_Print(arr);
  printf("%s\n", text);
  cJSON_free(text);
  cJSON_Delete(arr);
}

static void
print_table(const GArray *rows)
{
  g_autoptr(StwTable) tab = stw_table_new(11, "batch", "budget", "<policy", "chunk size", "H2D",
                                          "D2H", "iteration", "tokens/s", "MFU", "slowdown",
                                          "<fits?");
  for (guint i = 0; i < rows->len; i++) {
    const Row *r = &g_array_index(rows, Row, i);
    g_autofree char *bt = r->batch ? g_strdup_printf("%" G_GUINT64_FORMAT, r->batch)
                                   : g_strdup("-");
    g_autofree char *bu = stw_size_format(r->pt.gpu_bytes);
    if (!r->pt.feasible) { /* --json and --csv carry the reason */
      stw_table_row(tab, bt, bu, stw_policy_names[r->pt.policy], "-", "-", "-", "-", "-", "-",
                    "-", "no");
      continue;
    }
    g_autofree char *cs = stw_cli_group_digits(r->pt.chunk_size_elems);
    g_autofree char *h = stw_size_format(r->pt.h2d_bytes);
    g_autofree char *d = stw_size_format(r->pt.d2h_bytes);
    g_autofree char *it = stw_duration_format(r->pt.iteration_ns);
    g_autofree char *sd = stw_cli_slowdown_cell(r->pt.slowdown);
    g_autofree char *tps = NULL, *mfu = NULL;
    stw_cli_throughput_cells(&r->pt.throughput, &tps, &mfu);
    stw_table_row(tab, bt, bu, stw_policy_names[r->pt.policy], cs, h, d, it, tps, mfu, sd, "yes");
  }
  stw_table_print(tab, stdout);
}

static int
output(const Sweep *w)
{
  GError *error = NULL;
  if (w->csv_file != NULL) {
    g_autofree char *text = csv(w->rows);
    if (!stw_file_write_atomic(w->csv_file, text, strlen(text), &error))
      return stw_cli_error(error);
  }
  if (w->svg_file != NULL) {
    g_autofree char *title = g_strdup_printf("%s on %s", w->model ? w->model : w->trace_file,
                                             w->o.hw.name);
    g_autofree char *text = svg(w->rows, w->budgets, w->policies, title);
    if (!stw_file_write_atomic(w->svg_file, text, strlen(text), &error))
      return stw_cli_error(error);
  }
  if (w->json)
    print_json(w->rows);
  else if (w->csv_file == NULL || strcmp(w->csv_file, "-") != 0)
    print_table(w->rows);
  return STW_EXIT_OK;
}

int
stw_cmd_whatif(int argc, char **argv)
{
  g_auto(Sweep) w = { 0 };
  int status;
  if (!parse(&w, argc, argv, &status) || !set_up(&w, &status) || !budgets_on_device(&w, &status))
    return status;
  run(&w);
  return output(&w);
}
