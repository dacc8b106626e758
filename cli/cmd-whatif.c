/* cmd-whatif.c — `stowage whatif`: sweep GPU budgets, policies, batch sizes and chunk sizes. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include <stowage/report.h>
#include <stowage/synth.h>
#include <stowage/units.h>
#include <stowage/whatif.h>

typedef struct {
  guint64 batch;       /* 0 when the trace was given */
  guint64 chunk;       /* 0: search */
  StwWhatifPoint pt;
} Row;

static gboolean
parse_policies(const char *text, GArray *out)
{
  if (text == NULL || strcmp(text, "all") == 0) {
    for (int p = 0; p < STW_N_POLICIES; p++)
      g_array_append_val(out, p);
    return TRUE;
  }
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  for (char **p = parts; *p != NULL; p++) {
    int policy = (int)stw_policy_from_name(g_strstrip(*p));
    if (policy == STW_N_POLICIES) {
      stw_cli_fail(STW_EXIT_USAGE, "--policy: '%s' is not one of stowage, patrickstar, "
                   "zero-offload, zero-infinity, gemini-static, lru (or all)", *p);
      return FALSE;
    }
    g_array_append_val(out, policy);
  }
  return TRUE;
}

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

static char *
csv(const GArray *rows)
{
  GString *s = g_string_new("batch,gpu_bytes,policy,feasible,chunk_size_elems,h2d_bytes,"
                            "d2h_bytes,comm_bytes,iteration_ns,slowdown,why\n");
  for (guint i = 0; i < rows->len; i++) {
    const Row *r = &g_array_index(rows, Row, i);
    g_autofree char *why = g_strdup(r->pt.why ? r->pt.why : "");
    for (char *c = why; *c; c++)
      if (*c == '"')
        *c = '\'';
    g_string_append_printf(s, "%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%s,%s,%" G_GUINT64_FORMAT
                           ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                           ",%" G_GUINT64_FORMAT ",%.4f,\"%s\"\n", r->batch, r->pt.gpu_bytes,
                           stw_policy_names[r->pt.policy], r->pt.feasible ? "yes" : "no",
                           r->pt.chunk_size_elems, r->pt.h2d_bytes, r->pt.d2h_bytes,
                           r->pt.comm_bytes, r->pt.iteration_ns, r->pt.slowdown, why);
  }
  return g_string_free(s, FALSE);
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
      double t = NAN, m = NAN;
      for (guint i = 0; i < rows->len; i++) {
        const Row *r = &g_array_index(rows, Row, i);
        /* the first batch and chunk setting of the sweep */
        if (r->pt.policy == (StwPolicy)policy && r->pt.gpu_bytes == g_array_index(budgets, guint64, b)
            && r->batch == g_array_index(rows, Row, 0).batch
            && r->chunk == g_array_index(rows, Row, 0).chunk && r->pt.feasible) {
          t = (double)r->pt.iteration_ns / 1e9;
          m = (double)(r->pt.h2d_bytes + r->pt.d2h_bytes) / STW_GiB;
        }
      }
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

int
stw_cmd_whatif(int argc, char **argv)
{
  g_auto(StwCliPlanning) pl = { 0 };
  g_autofree char *gpu = NULL, *policy = NULL, *model = NULL, *batch = NULL, *seq = NULL, *dtype = NULL, *chunks = NULL,
                  *csv_file = NULL, *svg_file = NULL, *attention = NULL;
  gboolean json = FALSE, checkpointing = FALSE;
  GOptionEntry entries[] = {
    { "gpu", 'g', 0, G_OPTION_ARG_STRING, &gpu,
      "budgets: FROM..TO:STEP or a comma list (required)", "LIST" },
    { "policy", 'p', 0, G_OPTION_ARG_STRING, &policy, "comma list of policies, or all (default)",
      "LIST" },
    { "model", 'm', 0, G_OPTION_ARG_STRING, &model, "synthesize this model instead of a trace",
      "M" },
    { "batch", 'b', 0, G_OPTION_ARG_STRING, &batch, "with --model: comma list of batch sizes",
      "LIST" },
    { "seq", 's', 0, G_OPTION_ARG_STRING, &seq, "with --model: tokens per sequence", "S" },
    { "dtype", 0, 0, G_OPTION_ARG_STRING, &dtype, "with --model: bf16, fp16 or fp32", "T" },
    { "checkpointing", 'c', 0, G_OPTION_ARG_NONE, &checkpointing, "with --model: checkpointing",
      NULL },
    { "attention", 0, 0, G_OPTION_ARG_STRING, &attention, "with --model: naive or flash", "A" },
    { "chunk-size", 0, 0, G_OPTION_ARG_STRING, &chunks, "comma list of chunk sizes (default: "
      "search)", "LIST" },
    STW_CLI_PLANNING_ENTRIES(pl),
    { "csv", 0, 0, G_OPTION_ARG_FILENAME, &csv_file, "write the rows as CSV ('-': stdout)",
      "FILE" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "print the rows as JSON", NULL },
    { "svg", 0, 0, G_OPTION_ARG_FILENAME, &svg_file,
      "plot iteration time and bytes moved against the budget", "FILE" },
    { NULL }
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
    return STW_EXIT_USAGE;
  if ((model == NULL) == (argc != 2))
    return stw_cli_fail(STW_EXIT_USAGE, "whatif: give either one trace file or --model");
  if (gpu == NULL)
    return stw_cli_fail(STW_EXIT_USAGE, "whatif: --gpu LIST is required (e.g. 8GiB..80GiB:8GiB)");
  if (model == NULL && (batch || seq || dtype || checkpointing || attention))
    return stw_cli_fail(STW_EXIT_USAGE, "whatif: --batch, --seq, --dtype, --checkpointing and "
                        "--attention go with --model");
  GError *error = NULL;
  GArray *budgets = NULL;
  if (!stw_size_list_parse(gpu, &budgets, &error)) {
    stw_cli_fail(STW_EXIT_USAGE, "--gpu: %s", error->message);
    g_error_free(error);
    return STW_EXIT_USAGE;
  }
  g_autoptr(GArray) policies = g_array_new(FALSE, FALSE, sizeof(int));
  g_autoptr(GArray) batches = g_array_new(FALSE, FALSE, sizeof(guint64));
  g_autoptr(GArray) sizes = g_array_new(FALSE, FALSE, sizeof(guint64));
  if (!parse_policies(policy, policies) ||
      (batch != NULL && !parse_counts(batch, "--batch", STW_SYNTH_MAX_BATCH, batches)) ||
      (chunks != NULL && !parse_counts(chunks, "--chunk-size", STW_TRACE_MAX_NUMEL, sizes))) {
    g_array_unref(budgets);
    return STW_EXIT_USAGE;
  }
  if (sizes->len == 0) {
    guint64 zero = 0;
    g_array_append_val(sizes, zero);
  }

  /* the traces: one given, or one per batch size */
  GPtrArray *traces = g_ptr_array_new_with_free_func((GDestroyNotify)stw_trace_free);
  StwModelConfig cfg;
  StwSynthOptions so = { .batch = 1, .dtype = STW_DTYPE_BF16, .checkpointing = checkpointing };
  const char *device = NULL;
  int status = STW_EXIT_OK;
  if (model == NULL) {
    StwTrace *t = stw_trace_load(argv[1], &error);
    if (t == NULL) {
      status = stw_cli_error(error);
      goto out;
    }
    g_ptr_array_add(traces, t);
    device = t->device.name;
    guint64 zero = 0;
    g_array_append_val(batches, zero);
  } else {
    if (!stw_model_resolve(model, &cfg, &error)) {
      status = stw_cli_error(error);
      goto out;
    }
    so.seq = cfg.max_seq;
    if (seq != NULL && !stw_cli_parse_count(seq, "--seq", 1, cfg.max_seq, &so.seq)) {
      status = STW_EXIT_USAGE;
      goto out;
    }
    if (dtype != NULL && !stw_dtype_parse(dtype, &so.dtype)) {
      status = stw_cli_fail(STW_EXIT_USAGE, "--dtype: '%s' is not one of bf16, fp16, fp32", dtype);
      goto out;
    }
    if (attention != NULL) {
      if (strcmp(attention, "flash") != 0 && strcmp(attention, "naive") != 0) {
        status = stw_cli_fail(STW_EXIT_USAGE, "--attention: '%s' is not one of naive, flash",
                              attention);
        goto out;
      }
      so.attention = strcmp(attention, "flash") == 0 ? STW_ATTENTION_FLASH : STW_ATTENTION_NAIVE;
    }
    if (batches->len == 0) {
      guint64 one = 1;
      g_array_append_val(batches, one);
    }
  }
  StwPlannerOptions o;
  if (!stw_cli_planning_options(&pl, device, &o, &status))
    goto out;
  const StwHardware hw = o.hw;
  for (guint b = 0; model != NULL && b < batches->len; b++) {
    so.batch = g_array_index(batches, guint64, b);
    StwTrace *t = stw_synth_trace(&cfg, &so, &hw, &error);
    if (t == NULL) {
      status = stw_cli_fail(STW_EXIT_USAGE, "whatif: %s", error->message);
      g_error_free(error);
      goto out;
    }
    g_ptr_array_add(traces, t);
  }

  {
    g_autoptr(GArray) rows = g_array_new(FALSE, TRUE, sizeof(Row));
    guint total = traces->len * sizes->len * budgets->len * policies->len, done = 0;
    for (guint ti = 0; ti < traces->len; ti++) {
      const StwTrace *t = traces->pdata[ti];
      guint64 unlimited = stw_whatif_unlimited_ns(t, &o);
      for (guint si = 0; si < sizes->len; si++) {
        o.chunk_size_elems = g_array_index(sizes, guint64, si);
        for (guint bi = 0; bi < budgets->len; bi++) {
          for (guint pi = 0; pi < policies->len; pi++) {
            Row r = { .batch = g_array_index(batches, guint64, ti),
                      .chunk = o.chunk_size_elems };
            stw_whatif_run(t, &o, (StwPolicy)g_array_index(policies, int, pi),
                           g_array_index(budgets, guint64, bi), unlimited, &r.pt);
            g_array_append_val(rows, r);
            progress(++done, total);
          }
        }
      }
    }

    if (csv_file != NULL) {
      g_autofree char *text = csv(rows);
      if (!stw_file_write_atomic(csv_file, text, strlen(text), &error)) {
        status = stw_cli_error(error);
        goto rows_out;
      }
    }
    if (svg_file != NULL) {
      g_autofree char *title = g_strdup_printf("%s on %s", model ? model : argv[1], hw.name);
      g_autofree char *text = svg(rows, budgets, policies, title);
      if (!stw_file_write_atomic(svg_file, text, strlen(text), &error)) {
        status = stw_cli_error(error);
        goto rows_out;
      }
    }
    if (json) {
      cJSON *arr = cJSON_CreateArray();
      for (guint i = 0; i < rows->len; i++) {
        const Row *r = &g_array_index(rows, Row, i);
        cJSON *o2 = cJSON_CreateObject();
        if (r->batch)
          stw_json_add_u64(o2, "batch", r->batch);
        stw_json_add_u64(o2, "gpu_bytes", r->pt.gpu_bytes);
        cJSON_AddStringToObject(o2, "policy", stw_policy_names[r->pt.policy]);
        cJSON_AddBoolToObject(o2, "feasible", r->pt.feasible);
        if (r->pt.feasible) {
          stw_json_add_u64(o2, "chunk_size_elems", r->pt.chunk_size_elems);
          stw_json_add_u64(o2, "h2d_bytes", r->pt.h2d_bytes);
          stw_json_add_u64(o2, "d2h_bytes", r->pt.d2h_bytes);
          stw_json_add_u64(o2, "comm_bytes", r->pt.comm_bytes);
          stw_json_add_u64(o2, "iteration_ns", r->pt.iteration_ns);
          stw_json_add_double(o2, "slowdown", r->pt.slowdown);
        } else {
          cJSON_AddStringToObject(o2, "why", r->pt.why);
        }
        cJSON_AddItemToArray(arr, o2);
      }
      char *text = cJSON_Print(arr);
      printf("%s\n", text);
      cJSON_free(text);
      cJSON_Delete(arr);
    } else if (csv_file == NULL || strcmp(csv_file, "-") != 0) {
      g_autoptr(StwTable) tab = stw_table_new(9, "batch", "budget", "<policy", "chunk size", "H2D",
                                              "D2H", "iteration", "slowdown", "<fits?");
      for (guint i = 0; i < rows->len; i++) {
        const Row *r = &g_array_index(rows, Row, i);
        g_autofree char *bt = r->batch ? g_strdup_printf("%" G_GUINT64_FORMAT, r->batch)
                                       : g_strdup("-");
        g_autofree char *bu = stw_size_format(r->pt.gpu_bytes);
        if (!r->pt.feasible) { /* --json and --csv carry the reason */
          stw_table_row(tab, bt, bu, stw_policy_names[r->pt.policy], "-", "-", "-", "-", "-",
                        "no");
          continue;
        }
        g_autofree char *cs = stw_cli_group_digits(r->pt.chunk_size_elems);
        g_autofree char *h = stw_size_format(r->pt.h2d_bytes);
        g_autofree char *d = stw_size_format(r->pt.d2h_bytes);
        g_autofree char *it = stw_duration_format(r->pt.iteration_ns);
        g_autofree char *sd = g_strdup_printf("%.2fx", r->pt.slowdown);
        stw_table_row(tab, bt, bu, stw_policy_names[r->pt.policy], cs, h, d, it, sd, "yes");
      }
      stw_table_print(tab, stdout);
    }
  rows_out:
    for (guint i = 0; i < rows->len; i++)
      stw_whatif_point_clear(&g_array_index(rows, Row, i).pt);
  }
out:
  g_ptr_array_unref(traces);
  g_array_unref(budgets);
  return status;
}
