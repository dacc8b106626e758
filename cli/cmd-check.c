/* cmd-check.c — `stowage check PLAN TRACE`: prove a plan sound without running it. */
#include <stdio.h>

#include <stowage/check.h>
#include <stowage/units.h>

#include "cli.h"

int
stw_cmd_check(int argc, char **argv)
{
  GOptionEntry entries[] = { G_OPTION_ENTRY_NULL };
  g_autoptr(GOptionContext) ctx = g_option_context_new("PLAN TRACE - prove a plan sound");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Replays the plan's schedule abstractly: every op finds its chunks on the GPU, GPU\n"
           "memory (chunks + non-model peak + reserve) never exceeds the budget, host memory\n"
           "fits, no chunk's only copy is dropped, the iteration ends as it began, and the\n"
           "predicted bytes are what the schedule moves. Exit 0 when sound, 1 otherwise.\n\n"
           "Example: stowage check plan.json traces/gpt2-b8-s1024.json\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "check"))
    return STW_EXIT_USAGE;
  if (argc != 3)
    return stw_cli_fail(STW_EXIT_USAGE, "check: expected a plan and a trace (see --help)");
  g_autoptr(StwPlan) plan = NULL;
  g_autoptr(StwTrace) trace = NULL;
  StwCheckReport rep;
  int status;
  if (!stw_cli_load_checked_plan(argv[1], argv[2], &plan, &trace, &rep, NULL, &status))
    return status;
  g_autoptr(StwTrace) recomputed = NULL; /* the trace the schedule runs over, its op names */
  const StwTrace *runs = stw_plan_trace(plan, trace, &recomputed, NULL);
  g_autofree char *peak = stw_size_format(rep.pred.peak_gpu_bytes);
  g_autofree char *budget = stw_size_format(plan->budgets.gpu_bytes);
  g_autofree char *h2d = stw_size_format(rep.pred.h2d_bytes);
  g_autofree char *d2h = stw_size_format(rep.pred.d2h_bytes);
  g_autofree char *cpu = stw_size_format(rep.pred.cpu_bytes + rep.pred.host_overhead_bytes);
  g_autofree char *cpub = stw_size_format(plan->budgets.cpu_bytes);
  g_autofree char *sb = stw_size_format(rep.pred.storage_bytes);
  g_autofree char *sbud = stw_size_format(plan->budgets.storage_bytes);
  g_autofree char *storage = rep.pred.storage_bytes > 0
                                 ? g_strdup_printf("storage %s of %s; ", sb, sbud)
                                 : g_strdup("");
  printf("%s is sound for %s: %u ops, %u actions; GPU peak %s of %s (op %u %s); host %s of %s; "
         "%smoves %s H2D + %s D2H per iteration\n", argv[1], argv[2], runs->ops->len,
         rep.n_actions, peak, budget, rep.pred.peak_op, stw_trace_op(runs, rep.pred.peak_op)->name,
         cpu, cpub, storage, h2d, d2h);
  return STW_EXIT_OK;
}
