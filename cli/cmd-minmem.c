/* cmd-minmem.c — `stowage minmem TRACE`: the smallest GPU budget within a slowdown, or with
 * --host the smallest host budget at a GPU budget. */
#include <stdio.h>
#include <stdlib.h>

#include <stowage/units.h>
#include <stowage/whatif.h>

#include "cli.h"

int
stw_cmd_minmem(int argc, char **argv)
{
  g_auto(StwCliPlanning) pl = { 0 };
  g_autofree char *slowdown = NULL, *policy = NULL, *gpu = NULL;
  gboolean json = FALSE, host = FALSE;
  GOptionEntry entries[] = {
    { "slowdown", 0, 0, STW_OPTION_TEXT, &slowdown,
      "allowed slowdown against unlimited GPU memory, or with --host against host memory to "
      "spare (default 10%)", "PERCENT" },
    { "policy", 'p', 0, STW_OPTION_TEXT, &policy, "policy (default stowage)", "P" },
    { "host", 0, 0, G_OPTION_ARG_NONE, &host,
      "search the host budget instead, at the GPU budget --gpu: how much RAM the plan needs",
      NULL },
    { "gpu", 0, 0, STW_OPTION_TEXT, &gpu,
      "with --host: the GPU budget (default: all the profile's GPU memory)", "SIZE" },
    STW_CLI_PLANNING_ENTRIES(pl),
    STW_CLI_MEASURED_TIMES_ENTRY(pl),
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "machine-readable output", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("TRACE - the smallest budget that is fast enough");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Bisects the GPU budget (to 64 MiB) for the smallest one whose checked, simulated\n"
           "plan is at most the given slowdown away from unlimited GPU memory; with --host,\n"
           "the host budget (to 64 MiB) at the GPU budget --gpu, against host memory to spare\n"
           "(its storage tier, --nvme, taking what the host cannot hold).\n\n"
           "Example: stowage minmem traces/llama2-7b-b4-s4096-flash-ckpt.json --slowdown 25%\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "minmem"))
    return STW_EXIT_USAGE;
  if (argc != 2)
    return stw_cli_fail(STW_EXIT_USAGE, "minmem: expected one trace file (see --help)");
  g_autoptr(StwRequest) r = stw_cli_planning_request(&pl, &stw_request_minmem_kind);
  stw_request_set(r, "slowdown", slowdown);
  stw_request_set(r, "policy", policy);
  stw_request_set(r, "gpu", gpu);
  stw_request_set_flag(r, "host", host);
  GError *error = NULL;
  g_autoptr(StwTrace) trace = stw_trace_load(argv[1], &error);
  StwPlannerOptions o;
  StwPolicy pol;
  double allowed;
  if (trace == NULL || !stw_request_minmem(r, trace, &o, &pol, &allowed, &error))
    return stw_cli_error(error);
  StwMinmem m;
  if (!stw_request_minmem_run(r, trace, &o, pol, allowed, &m, &error)) {
    stw_whatif_minmem_clear(&m);
    return stw_cli_error(error);
  }
  if (json) {
    g_autofree char *text = stw_whatif_minmem_json(&m, argv[1], o.hw.name);
    printf("%s\n", text);
  } else if (m.host) {
    g_autofree char *g = stw_size_format(m.best.gpu_bytes);
    g_autofree char *b = stw_size_format(m.host_budget);
    g_autofree char *held = stw_size_format(m.best.host_bytes);
    g_autofree char *stored = stw_size_format(m.best.storage_bytes);
    g_autofree char *it = stw_duration_format(m.best.iteration_ns);
    g_autofree char *un = stw_duration_format(m.unlimited_ns);
    g_autofree char *moved = stw_size_format(m.best.h2d_bytes + m.best.d2h_bytes);
    g_autofree char *storage = m.best.storage_bytes > 0
                                   ? g_strdup_printf(", %s on the storage tier", stored)
                                   : g_strdup("");
    printf("%s with policy %s on %s at %s of GPU memory: %s of host memory is enough for %s "
           "per iteration, %.1f%% slower than with host memory to spare (%s); the plan holds %s "
           "of it%s and moves %s per iteration\n", argv[1], stw_policy_names[pol], o.hw.name, g,
           b, it, (m.best.slowdown - 1) * 100, un, held, storage, moved);
  } else {
    g_autofree char *b = stw_size_format(m.best.gpu_bytes);
    g_autofree char *it = stw_duration_format(m.best.iteration_ns);
    g_autofree char *un = stw_duration_format(m.unlimited_ns);
    g_autofree char *moved = stw_size_format(m.best.h2d_bytes + m.best.d2h_bytes);
    printf("%s with policy %s on %s: %s of GPU memory is enough for %s per iteration, %.1f%% "
           "slower than unlimited memory (%s); it moves %s per iteration\n", argv[1],
           stw_policy_names[pol], o.hw.name, b, it, (m.best.slowdown - 1) * 100, un, moved);
  }
  g_autofree char *layout = json ? NULL : stw_cli_layout_assumed(&o, stw_planner_world(trace, &o),
                                                                 &pol, 1);
  if (layout != NULL)
    printf("assumes %s\n", layout);
  stw_whatif_minmem_clear(&m);
  return STW_EXIT_OK;
}
