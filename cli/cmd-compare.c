/* cmd-compare.c — `stowage compare TRACE --gpu B`: every policy side by side. */
#include <stdio.h>
#include <string.h>

#include <stowage/units.h>
#include <stowage/whatif.h>

#include "cli.h"

/* What was compared, for the table. */
typedef struct {
  const char *trace_file;
  const StwTrace *trace;
  const StwPlannerOptions *o;
  StwComparison c;
} Comparison;

/* What the unlimited-memory time is, for the table's heading. */
static char *
unlimited_text(const StwComparison *c)
{
  if (c->unlimited_ns == STW_WHATIF_UNKNOWN)
    return g_strdup_printf("unlimited memory cannot be planned: %s", c->unlimited_why);
  if (c->unlimited_ns == 0)
    return g_strdup("unlimited memory: 0 ns per iteration; the trace's ops take no time, so no "
                    "slowdown is a ratio");
  g_autofree char *u = stw_duration_format(c->unlimited_ns);
  return g_strdup_printf("unlimited memory: %s per iteration", u);
}

/* The table's columns; the gathered column only with several GPUs. */
static const char *const heads[] = { "<policy", "chunk size", "H2D", "D2H", "gathered",
                                     "iteration", "tokens/s", "MFU", "slowdown", "<fits?",
                                     "<bound by" };
enum { GATHERED = 4, N_COLS = G_N_ELEMENTS(heads) };

/* A row of CELLS (one a column) into TAB: a point that does not fit shows its name and why
 * alone. */
static void
add_row(StwTable *tab, gboolean multi, gboolean feasible, const char *const cells[N_COLS])
{
  const char *row[N_COLS];
  guint k = 0;
  for (guint i = 0; i < N_COLS; i++)
    if (multi || i != GATHERED)
      row[k++] = feasible || i == 0 || i == N_COLS - 2 ? cells[i] : "-";
  stw_table_row_v(tab, row);
}

static void
print_table(const Comparison *c)
{
  gboolean multi = c->o->world_size > 1;
  const char *shown[N_COLS];
  guint n = 0;
  for (guint i = 0; i < N_COLS; i++)
    if (multi || i != GATHERED)
      shown[n++] = heads[i];
  g_autoptr(StwTable) tab = stw_table_new_v(n, shown);
  guint n_why = 0;
  for (int p = 0; p < STW_N_POLICIES; p++) {
    const StwWhatifPoint *pt = &c->c.points[p];
    g_autofree char *note = pt->feasible ? g_strdup("yes") : g_strdup_printf("no (%u)", ++n_why);
    g_autofree char *cs = stw_cli_group_digits(pt->chunk_size_elems);
    g_autofree char *h = stw_size_format(pt->h2d_bytes);
    g_autofree char *d = stw_size_format(pt->d2h_bytes);
    g_autofree char *g = stw_size_format(pt->comm_bytes);
    g_autofree char *it = stw_duration_format(pt->iteration_ns);
    g_autofree char *tps = NULL, *mfu = NULL;
    stw_cli_throughput_cells(&pt->throughput, &tps, &mfu);
    g_autofree char *sd = stw_cli_slowdown_cell(pt->slowdown);
    const char *cells[] = { stw_policy_names[p], cs, h, d, g, it, tps, mfu, sd, note,
                            stw_bound_words[pt->bound] };
    add_row(tab, multi, pt->feasible, cells);
  }
  /* the DDP baseline: every GPU the whole model, the gradients all-reduced */
  const StwDdpPoint *dp = &c->c.ddp;
  gboolean timed = dp->iteration_ns > 0 || dp->peak_gpu_bytes > 0;
  g_autofree char *dnote = dp->feasible ? g_strdup("yes") : g_strdup_printf("no (%u)", ++n_why);
  g_autofree char *dg = stw_size_format(dp->comm_bytes);
  g_autofree char *dit = stw_duration_format(dp->iteration_ns);
  g_autofree char *dtps = NULL, *dmfu = NULL;
  stw_cli_throughput_cells(&dp->throughput, &dtps, &dmfu);
  g_autofree char *dsd = stw_cli_slowdown_cell(dp->slowdown);
  const char *dcells[] = { "ddp", "-", "0 B", "0 B", dg, dit, dtps, dmfu, dsd, dnote, "-" };
  add_row(tab, multi, dp->feasible, dcells);
  g_autofree char *b = stw_size_format(c->c.gpu_bytes);
  g_autofree char *u = unlimited_text(&c->c);
  if (c->o->nodes > 1)
    printf("%s on %u nodes of %u x %s with %s of GPU memory each (%s)\n", c->trace_file,
           c->o->nodes, c->o->world_size / c->o->nodes, c->o->hw.name, b, u);
  else if (multi)
    printf("%s on %u x %s with %s of GPU memory each (%s)\n", c->trace_file,
           c->o->world_size, c->o->hw.name, b, u);
  else
    printf("%s on %s with %s of GPU memory (%s)\n", c->trace_file, c->o->hw.name, b, u);
  printf("%s: %s\n", c->o->hw.name, c->o->hw.origin);
  g_autofree char *host = stw_cli_host_said(&c->o->hw);
  printf("host CPU %s\n", host);
  StwPlannerOptions at = *c->o;
  at.budgets.gpu_bytes = c->c.gpu_bytes;
  g_autofree char *process = stw_planner_process_said(c->trace, &at);
  if (process != NULL)
    printf("GPU process %s\n", process);
  g_autofree char *elsewhere = stw_cli_measured_elsewhere(c->trace, &c->o->hw,
                                                             c->o->measured_times);
  if (elsewhere != NULL)
    printf("assumes %s\n", elsewhere);
  g_autofree char *optimizer = stw_cli_optimizer_assumed(c->trace);
  if (optimizer != NULL)
    printf("assumes %s\n", optimizer);
  g_autofree char *buffers = stw_cli_loop_buffers_said(c->trace,
                                                       stw_planner_world(c->trace, c->o));
  if (buffers != NULL)
    printf("assumes %s\n", buffers);
  g_autofree char *collectives =
      stw_cli_collectives_assumed(c->trace, stw_planner_world(c->trace, c->o));
  if (collectives != NULL)
    printf("assumes %s\n", collectives);
  StwPolicy every[STW_N_POLICIES];
  for (int p = 0; p < STW_N_POLICIES; p++)
    every[p] = (StwPolicy)p;
  g_autofree char *layout = stw_cli_layout_assumed(c->o, stw_planner_world(c->trace, c->o),
                                                   every, STW_N_POLICIES);
  if (layout != NULL)
    printf("assumes %s\n", layout);
  printf("\n");
  stw_table_print(tab, stdout);
  n_why = 0;
  for (int p = 0; p < STW_N_POLICIES; p++) {
    if (!c->c.points[p].feasible)
      printf("(%u) %s\n", ++n_why, c->c.points[p].why);
  }
  if (!dp->feasible)
    printf("(%u) %s\n", ++n_why, dp->why);
  g_autofree char *peak = stw_size_format(dp->peak_gpu_bytes);
  if (multi && timed) {
    g_autofree char *buckets = stw_size_format(dp->bucket_bytes);
    g_autofree char *ar = stw_duration_format(dp->allreduce_ns);
    g_autofree char *exposed = stw_duration_format(dp->exposed_ns);
    printf("\nddp: PyTorch's DistributedDataParallel, the baseline: every GPU holds the whole "
           "model and steps it, %s at the peak (%s of it the gradients' copy in its buckets); "
           "the gradients all-reduced in 25 MiB buckets as backward makes them, %s, %s of it "
           "after backward's last op.\n",
           peak, buckets, ar, exposed);
  } else if (timed) {
    printf("\nddp: the baseline on one GPU, plain PyTorch: the whole model, its gradients and "
           "its optimizer state on the GPU, %s at the peak.\n", peak);
  }
  if (c->o->budgets.storage_bytes > 0)
    printf("\nWith --nvme: stowage keeps on storage the optimizer state host memory cannot hold, "
           "read and written in a pipeline of two staging buffers; zero-infinity keeps all of "
           "its optimizer state there (offload_optimizer \"nvme\"), each part read, stepped and "
           "written before the next is read (DeepSpeed's default: pipeline_read and "
           "pipeline_write off); the other policies have no storage tier.\n");
}

int
stw_cmd_compare(int argc, char **argv)
{
  g_auto(StwCliPlanning) pl = { 0 };
  g_autofree char *gpu = NULL;
  gboolean json = FALSE;
  GOptionEntry entries[] = {
    { "gpu", 'g', 0, STW_OPTION_TEXT, &gpu, "GPU memory budget (required)", "SIZE" },
    STW_CLI_PLANNING_ENTRIES(pl),
    STW_CLI_MEASURED_TIMES_ENTRY(pl),
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "machine-readable output", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("TRACE - every policy on one budget");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Plans the trace with every policy on the same engine and hardware, checks and\n"
           "simulates each plan, and compares them with unlimited GPU memory.\n\n"
           "Example: stowage compare traces/pstar-12b-b8-s1024-ckpt.json --gpu 32GiB\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "compare"))
    return STW_EXIT_USAGE;
  if (argc != 2)
    return stw_cli_fail(STW_EXIT_USAGE, "compare: expected one trace file (see --help)");
  g_autoptr(StwRequest) r = stw_cli_planning_request(&pl, &stw_request_compare_kind);
  stw_request_set(r, "gpu", gpu);
  GError *error = NULL;
  if (!stw_request_require(r, "gpu", &error))
    return stw_cli_error(error);
  g_autoptr(StwTrace) trace = NULL;
  StwPlannerOptions o;
  int status;
  if (!stw_cli_planner_setup(argv[1], r, &trace, &o, &status))
    return status;
  guint64 budget = 0;
  if (!stw_request_gpu_budget(r, "gpu", &o, &budget, &error))
    return stw_cli_error(error);
  Comparison c = { .trace_file = argv[1], .trace = trace, .o = &o };
  stw_whatif_compare(trace, &o, budget, &c.c);
  if (json) {
    g_autofree char *text = stw_whatif_comparison_json(&c.c, argv[1], o.hw.name);
    printf("%s\n", text);
  } else {
    print_table(&c);
  }
  stw_whatif_comparison_clear(&c.c);
  return STW_EXIT_OK;
}
