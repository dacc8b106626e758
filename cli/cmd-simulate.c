/* cmd-simulate.c — `stowage simulate PLAN TRACE`: what one iteration of a plan costs. */
#include <stdio.h>
#include <string.h>

#include <stowage/check.h>
#include <stowage/report.h>
#include <stowage/simulate.h>
#include <stowage/units.h>

#include "cli.h"

/* Each engine's busy time, its share of the iteration, and what it did. */
static void
print_engines(const StwPlan *p, const StwSimulation *s)
{
  struct {
    const char *name;
    guint64 busy;
  } lanes[] = { { "compute", s->compute_busy_ns }, { "H2D", s->h2d_busy_ns },
                { "D2H", s->d2h_busy_ns }, { "CPU Adam", s->cpu_busy_ns },
                { "collectives", s->comm_busy_ns } };
  guint32 world = p->chunking->world;
  g_autoptr(StwTable) tab = stw_table_new(4, "<engine", "busy", "share", "<notes");
  for (gsize i = 0; i < G_N_ELEMENTS(lanes) - (world > 1 ? 0 : 1); i++) {
    g_autofree char *busy = stw_duration_format(lanes[i].busy);
    g_autofree char *share = g_strdup_printf("%.0f%%", s->iteration_ns ? 100.0 * (double)lanes[i].busy /
                                                                      (double)s->iteration_ns : 0);
    g_autofree char *note = NULL;
    if (i == 0) {
      g_autofree char *stall = stw_duration_format(s->compute_stall_ns);
      g_autofree char *slow = stw_duration_format(s->copy_slowdown_ns);
      note = g_strdup_printf("stalled %s waiting for chunks or memory%s%s%s", stall,
                             s->copy_slowdown_ns > 0 ? "; " : "",
                             s->copy_slowdown_ns > 0 ? slow : "",
                             s->copy_slowdown_ns > 0 ? " of it slowed by copies on its cores" : "");
    } else if (i < 3) {
      guint64 b = i == 1 ? s->h2d_bytes : s->d2h_bytes;
      g_autofree char *bytes = stw_size_format(b);
      note = g_strdup_printf("%s, %.1f GB/s while busy", bytes,
                             lanes[i].busy ? (double)b / (double)lanes[i].busy : 0);
    } else if (i == 4) {
      g_autofree char *bytes = stw_size_format(s->comm_bytes);
      note = g_strdup_printf("%s received, ring of %u ranks over %s", bytes, world,
                             p->hw.interconnect_kind[0] ? p->hw.interconnect_kind : "?");
    } else {
      g_autofree char *add = stw_duration_format(s->cpu_add_ns);
      note = g_strdup_printf("%s%s%s%s", world > 1 ? "each rank's, the ranks of a node at once" : "",
                             world > 1 && s->cpu_add_ns > 0 ? "; " : "",
                             s->cpu_add_ns > 0 ? add : "",
                             s->cpu_add_ns > 0 ? " of it adding each micro-step's gradients on the "
                                                 "host" : "");
    }
    stw_table_row(tab, lanes[i].name, busy, share, note);
  }
  if (s->storage_busy_ns > 0) { /* the storage tier's, where the plan keeps optimizer state */
    g_autofree char *busy = stw_duration_format(s->storage_busy_ns);
    g_autofree char *share = g_strdup_printf("%.0f%%", s->iteration_ns ? 100.0 *
                                             (double)s->storage_busy_ns /
                                             (double)s->iteration_ns : 0);
    gboolean params = FALSE;
    for (guint32 i = 0; i < stw_chunking_count(p->chunking); i++)
      params |= p->optim[i] == STW_OPTIM_STORAGE;
    g_autofree char *rd = stw_size_format(s->storage_read_bytes);
    g_autofree char *wr = stw_size_format(s->storage_write_bytes);
    g_autofree char *note = g_strdup_printf("%s read and written: %s read, %s written",
                                            params ? "optimizer state and parameters"
                                                   : "optimizer state", rd, wr);
    stw_table_row(tab, "storage", busy, share, note);
  }
  stw_table_print(tab, stdout);
}

static void
print_simulation(const char *file, const StwPlan *p, const StwTrace *t, const StwSimulation *s)
{
  g_autofree char *it = stw_duration_format(s->iteration_ns);
  if (p->chunking->world > 1)
    printf("%s on %u x %s (rank 0 of %u): %s per iteration (steady state)\n", file,
           p->chunking->world, p->hw.name, p->chunking->world, it);
  else
    printf("%s on %s: %s per iteration (steady state)\n", file, p->hw.name, it);
  printf("hardware    %s: %s\n", p->hw.name,
         p->hw.origin[0] != '\0' ? p->hw.origin : "as the plan records it");
  g_autofree char *host = stw_cli_host_said(&p->hw);
  printf("host CPU    %s\n", host);
  g_autofree char *elsewhere = stw_cli_measured_elsewhere(t, &p->hw, p->retiming.scale == 0);
  if (elsewhere != NULL)
    printf("assumes     %s\n", elsewhere);
  print_engines(p, s);
  g_autofree char *bound = stw_cli_bound_by(p);
  printf("bound by    %s\n", bound);
  g_autofree char *peak = stw_size_format(s->peak_gpu_bytes);
  g_autofree char *budget = stw_size_format(p->budgets.gpu_bytes);
  g_autofree char *at = stw_duration_format(s->peak_time_ns);
  g_autofree char *cpu = stw_size_format(s->cpu_bytes);
  printf("GPU memory  peak %s of %s at %s; ", peak, budget, at);
  if (s->over_budget_bytes == 0) {
    printf("never above the budget\n");
  } else {
    g_autofree char *over = stw_size_format(s->over_budget_bytes);
    g_autofree char *when = stw_duration_format(s->over_budget_ns);
    printf("ABOVE THE BUDGET by %s at %s\n", over, when);
  }
  guint64 gradients = stw_trace_host_gradient_bytes(t);
  g_autofree char *grads = stw_size_format(gradients);
  printf("host memory %s for chunks%s%s%s%s%s\n", cpu,
         p->moves->len > 0 ? " and offloaded activations" : "",
         gradients > 0 ? " and gradients (" : "",
         gradients > 0 ? grads : "", gradients > 0 ? ")" : "",
         p->chunking->world > 1 ? ", all ranks" : "");
  printf("achieved    %.1f TFLOP/s (%.2f TFLOP per iteration)\n",
         s->iteration_ns ? (double)s->flops / (double)s->iteration_ns / 1e3 : 0,
         (double)s->flops / 1e12);
  StwThroughput th;
  if (!stw_throughput(t, &p->hw, p->chunking->world, s->iteration_ns, &th) ||
      th.tokens_per_s <= 0)
    return;
  g_autofree char *tps = stw_cli_rate_format(th.tokens_per_s);
  /* how the model's FLOPs are counted: a frozen parameter has no weight gradient */
  g_autofree char *basis = g_strdup_printf(
      "6 N per token%s%s", th.frozen_share > 0 ? ", 4 for the frozen of them" : "",
      th.recompute ? "; 2 N more with the checkpointed blocks' recompute" : "");
  if (th.peak_flops_per_s > 0)
    printf("throughput  %s tokens/s; model %.1f TFLOP/s (%s), MFU %.1f%% of %.1f TFLOP/s dense "
           "%s%s\n", tps, th.model_flops_per_s / 1e12, basis, th.mfu * 100,
           th.peak_flops_per_s / 1e12, stw_dtype_name(stw_trace_compute_dtype(t)),
           p->chunking->world > 1 ? " (all the GPUs together)" : "");
  else /* measured elsewhere: no MFU of this device */
    printf("throughput  %s tokens/s; model %.1f TFLOP/s (%s)\n", tps,
           th.model_flops_per_s / 1e12, basis);
}

/* The Chrome trace and the SVG where asked for, then the record or the summary. */
static int
output(const char *file, const char *chrome, const char *svg, gboolean json, const StwPlan *plan,
       const StwTrace *trace, const StwSimulation *sim)
{
  GError *error = NULL;
  if (chrome != NULL) {
    g_autofree char *text = stw_report_chrome_trace(plan, trace, sim);
    if (!stw_file_write_atomic(chrome, text, strlen(text), &error))
      return stw_cli_error(error);
  }
  if (svg != NULL) {
    g_autofree char *text = stw_report_svg_timeline(plan, trace, sim);
    if (!stw_file_write_atomic(svg, text, strlen(text), &error))
      return stw_cli_error(error);
  }
  if (json) {
    g_autofree char *text = stw_report_simulation_json(plan, trace, sim);
    fputs(text, stdout);
  } else {
    print_simulation(file, plan, trace, sim);
  }
  return STW_EXIT_OK;
}

int
stw_cmd_simulate(int argc, char **argv)
{
  g_autofree char *hw_name = NULL, *chrome = NULL, *svg = NULL;
  gboolean json = FALSE;
  GOptionEntry entries[] = {
    { "hw", 0, 0, STW_OPTION_TEXT, &hw_name,
      "simulate on this hardware profile instead of the plan's", "PROFILE" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "machine-readable output with every op", NULL },
    { "chrome-trace", 0, 0, G_OPTION_ARG_FILENAME, &chrome,
      "write a Trace Event Format file (Perfetto, chrome://tracing)", "FILE" },
    { "svg", 0, 0, G_OPTION_ARG_FILENAME, &svg,
      "draw GPU memory over time and where each chunk is", "FILE" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("PLAN TRACE - predict an iteration");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Checks the plan, then simulates its steady-state iteration: the compute stream, the\n"
           "H2D and D2H copy engines and CPU Adam, with GPU memory over time.\n\n"
           "Example: stowage simulate plan.json traces/gpt2-b8-s1024.json --chrome-trace t.json "
           "--svg t.svg\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "simulate"))
    return STW_EXIT_USAGE;
  if (argc != 3)
    return stw_cli_fail(STW_EXIT_USAGE, "simulate: expected a plan and a trace (see --help)");
  const StwCliFile in[] = { { "the plan", argv[1] }, { "the trace", argv[2] } };
  const StwCliFile out[] = { { "--chrome-trace", chrome }, { "--svg", svg } };
  if (!stw_cli_outputs_apart("simulate", in, 2, out, 2))
    return STW_EXIT_USAGE;
  g_autoptr(StwPlan) plan = NULL;
  g_autoptr(StwTrace) trace = NULL;
  int status;
  /* check simulates the plan on its own profile: that simulation is the answer unless --hw
   * asks for another profile */
  StwSimulation sim;
  if (!stw_cli_load_checked_plan(argv[1], argv[2], &plan, &trace, NULL,
                                 hw_name == NULL ? &sim : NULL, &status))
    return status;
  if (hw_name != NULL) {
    if (!stw_cli_hardware(hw_name, NULL, &plan->hw, &status))
      return status;
    stw_simulate(plan, trace, TRUE, &sim);
  }
  status = output(argv[1], chrome, svg, json, plan, trace, &sim);
  stw_simulation_clear(&sim);
  return status;
}
