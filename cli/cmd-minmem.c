/* cmd-minmem.c — `stowage minmem TRACE`: the smallest GPU budget within a slowdown. */
#include <stdio.h>
#include <stdlib.h>

#include <stowage/units.h>
#include <stowage/whatif.h>

#include "cli.h"

#define PRECISION (64 * STW_MiB) /* the answer is within this of the true minimum */

int
stw_cmd_minmem(int argc, char **argv)
{
  g_auto(StwCliPlanning) pl = { 0 };
  g_autofree char *slowdown = NULL, *policy = NULL;
  GOptionEntry entries[] = {
    { "slowdown", 0, 0, STW_OPTION_TEXT, &slowdown,
      "allowed slowdown against unlimited GPU memory (default 10%)", "PERCENT" },
    { "policy", 'p', 0, STW_OPTION_TEXT, &policy, "policy (default stowage)", "P" },
    STW_CLI_PLANNING_ENTRIES(pl),
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("TRACE - the smallest budget that is fast enough");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Bisects the GPU budget (to 64 MiB) for the smallest one whose checked, simulated\n"
           "plan is at most the given slowdown away from unlimited GPU memory.\n\n"
           "Example: stowage minmem traces/llama2-7b-b4-s4096-flash-ckpt.json --slowdown 25%\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "minmem"))
    return STW_EXIT_USAGE;
  if (argc != 2)
    return stw_cli_fail(STW_EXIT_USAGE, "minmem: expected one trace file (see --help)");
  double allowed = 0.10;
  if (slowdown != NULL) {
    char *end = NULL;
    allowed = g_ascii_strtod(slowdown, &end) / 100.0;
    if (end == slowdown || (*end != '\0' && strcmp(end, "%") != 0) || !(allowed >= 0) ||
        allowed > 100)
      return stw_cli_fail(STW_EXIT_USAGE, "--slowdown: '%s' is not a percentage such as 10%%",
                          slowdown);
  }
  int pol = STW_POLICY_STOWAGE;
  if (!stw_cli_parse_enum(policy, "--policy", stw_policy_names, &pol))
    return STW_EXIT_USAGE;
  g_autoptr(StwTrace) trace = NULL;
  StwPlannerOptions o;
  int status;
  g_autoptr(StwRequest) r = stw_cli_planning_request(&pl, &stw_request_minmem_kind);
  if (!stw_cli_planner_setup(argv[1], r, &trace, &o, &status))
    return status;

  guint64 unlimited;
  g_autofree char *why = NULL;
  if (!stw_whatif_unlimited(trace, &o, &unlimited, &why))
    return stw_cli_fail(STW_EXIT_FAILURE, "minmem: the trace cannot be planned even with "
                        "unlimited GPU memory: %s", why);
  /* bracket: below, the non-model peak alone; above, what everything resident needs */
  StwWhatifPoint top;
  guint64 hi = STW_TRACE_MAX_INT; /* the largest budget a plan holds */
  stw_whatif_run(trace, &o, STW_POLICY_STOWAGE, hi, unlimited, &top);
  hi = top.peak_gpu_bytes + o.budgets.reserved_bytes;
  stw_whatif_point_clear(&top);
  /* never more than the GPU has, unless asked to look beyond it */
  if (!pl.beyond_device && hi > o.hw.gpu_memory_bytes)
    hi = o.hw.gpu_memory_bytes;
  StwWhatifPoint best = { 0 };
  stw_whatif_run(trace, &o, (StwPolicy)pol, hi, unlimited, &best);
  if (!best.feasible || best.slowdown > 1 + allowed) {
    g_autofree char *b = stw_size_format(hi);
    gboolean device = !pl.beyond_device && hi == o.hw.gpu_memory_bytes;
    int st = stw_cli_fail(STW_EXIT_FAILURE, "minmem: policy %s is not within %.0f%% of unlimited "
                          "memory even at %s%s: %s", stw_policy_names[pol], allowed * 100, b,
                          device ? ", all the GPU memory the profile has" : "",
                          best.feasible ? "it is slower" : best.why);
    stw_whatif_point_clear(&best);
    return st;
  }
  guint64 lo = 0;
  while (hi - lo > PRECISION) {
    guint64 mid = lo + (hi - lo) / 2;
    StwWhatifPoint pt;
    stw_whatif_run(trace, &o, (StwPolicy)pol, mid, unlimited, &pt);
    if (pt.feasible && pt.slowdown <= 1 + allowed) {
      hi = mid;
      stw_whatif_point_clear(&best);
      best = pt;
    } else {
      lo = mid;
      stw_whatif_point_clear(&pt);
    }
  }
  g_autofree char *b = stw_size_format(best.gpu_bytes);
  g_autofree char *it = stw_duration_format(best.iteration_ns);
  g_autofree char *un = stw_duration_format(unlimited);
  g_autofree char *moved = stw_size_format(best.h2d_bytes + best.d2h_bytes);
  printf("%s with policy %s on %s: %s of GPU memory is enough for %s per iteration, %.1f%% "
         "slower than unlimited memory (%s); it moves %s per iteration\n", argv[1],
         stw_policy_names[pol], o.hw.name, b, it, (best.slowdown - 1) * 100, un, moved);
  stw_whatif_point_clear(&best);
  return STW_EXIT_OK;
}
