/* cmd-minmem.c — `stowage minmem TRACE`: the smallest GPU budget within a slowdown. */
#include <stdio.h>
#include <stdlib.h>

#include <stowage/units.h>
#include <stowage/whatif.h>

#include "cli.h"

int
stw_cmd_minmem(int argc, char **argv)
{
  g_auto(StwCliPlanning) pl = { 0 };
  g_autofree char *slowdown = NULL, *policy = NULL;
  gboolean json = FALSE;
  GOptionEntry entries[] = {
    { "slowdown", 0, 0, STW_OPTION_TEXT, &slowdown,
      "allowed slowdown against unlimited GPU memory (default 10%)", "PERCENT" },
    { "policy", 'p', 0, STW_OPTION_TEXT, &policy, "policy (default stowage)", "P" },
    STW_CLI_PLANNING_ENTRIES(pl),
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "machine-readable output", NULL },
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
  g_autoptr(StwRequest) r = stw_cli_planning_request(&pl, &stw_request_minmem_kind);
  stw_request_set(r, "slowdown", slowdown);
  stw_request_set(r, "policy", policy);
  GError *error = NULL;
  g_autoptr(StwTrace) trace = stw_trace_load(argv[1], &error);
  StwPlannerOptions o;
  StwPolicy pol;
  double allowed;
  if (trace == NULL || !stw_request_minmem(r, trace, &o, &pol, &allowed, &error))
    return stw_cli_error(error);
  StwMinmem m;
  if (!stw_whatif_minmem(trace, &o, pol, allowed, pl.beyond_device, &m, &error)) {
    stw_whatif_minmem_clear(&m);
    return stw_cli_error(error);
  }
  if (json) {
    g_autofree char *text = stw_whatif_minmem_json(&m, argv[1], o.hw.name);
    printf("%s\n", text);
  } else {
    g_autofree char *b = stw_size_format(m.best.gpu_bytes);
    g_autofree char *it = stw_duration_format(m.best.iteration_ns);
    g_autofree char *un = stw_duration_format(m.unlimited_ns);
    g_autofree char *moved = stw_size_format(m.best.h2d_bytes + m.best.d2h_bytes);
    printf("%s with policy %s on %s: %s of GPU memory is enough for %s per iteration, %.1f%% "
           "slower than unlimited memory (%s); it moves %s per iteration\n", argv[1],
           stw_policy_names[pol], o.hw.name, b, it, (m.best.slowdown - 1) * 100, un, moved);
  }
  stw_whatif_minmem_clear(&m);
  return STW_EXIT_OK;
}
