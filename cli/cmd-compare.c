/* cmd-compare.c — `stowage compare TRACE --gpu B`: every policy side by side. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include <stowage/units.h>
#include <stowage/whatif.h>

int
stw_cmd_compare(int argc, char **argv)
{
  g_auto(StwCliPlanning) pl = { 0 };
  g_autofree char *gpu = NULL;
  gboolean json = FALSE;
  GOptionEntry entries[] = {
    { "gpu", 'g', 0, G_OPTION_ARG_STRING, &gpu, "GPU memory budget (required)", "SIZE" },
    STW_CLI_PLANNING_ENTRIES(pl),
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "machine-readable output", NULL },
    { NULL }
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
  if (gpu == NULL)
    return stw_cli_fail(STW_EXIT_USAGE, "compare: --gpu SIZE is required");
  g_autoptr(StwTrace) trace = NULL;
  StwPlannerOptions o;
  int status;
  if (!stw_cli_planner_setup(argv[1], &pl, &trace, &o, &status))
    return status;
  const StwHardware hw = o.hw;
  guint64 budget = 0;
  if (!stw_cli_parse_size(gpu, "--gpu", &budget))
    return STW_EXIT_USAGE;
  if (budget == 0)
    return stw_cli_fail(STW_EXIT_USAGE, "--gpu: the budget must be positive");

  guint64 unlimited = stw_whatif_unlimited_ns(trace, &o);
  cJSON *arr = cJSON_CreateArray();
  gboolean multi = o.world_size > 1;
  g_autoptr(StwTable) tab =
      multi ? stw_table_new(8, "<policy", "chunk size", "H2D", "D2H", "gathered", "iteration",
                            "slowdown", "<fits?")
            : stw_table_new(7, "<policy", "chunk size", "H2D", "D2H", "iteration", "slowdown",
                            "<fits?");
  GPtrArray *whys = g_ptr_array_new_with_free_func(g_free);
  for (int p = 0; p < STW_N_POLICIES; p++) {
    StwWhatifPoint pt;
    stw_whatif_run(trace, &o, (StwPolicy)p, budget, unlimited, &pt);
    cJSON *row = cJSON_CreateObject();
    cJSON_AddStringToObject(row, "policy", stw_policy_names[p]);
    cJSON_AddBoolToObject(row, "feasible", pt.feasible);
    if (pt.feasible) {
      g_autofree char *cs = stw_cli_group_digits(pt.chunk_size_elems);
      g_autofree char *h = stw_size_format(pt.h2d_bytes);
      g_autofree char *d = stw_size_format(pt.d2h_bytes);
      g_autofree char *it = stw_duration_format(pt.iteration_ns);
      g_autofree char *sd = g_strdup_printf("%.2fx", pt.slowdown);
      g_autofree char *g = stw_size_format(pt.comm_bytes);
      if (multi)
        stw_table_row(tab, stw_policy_names[p], cs, h, d, g, it, sd, "yes");
      else
        stw_table_row(tab, stw_policy_names[p], cs, h, d, it, sd, "yes");
      cJSON_AddNumberToObject(row, "chunk_size_elems", (double)pt.chunk_size_elems);
      cJSON_AddNumberToObject(row, "h2d_bytes", (double)pt.h2d_bytes);
      cJSON_AddNumberToObject(row, "d2h_bytes", (double)pt.d2h_bytes);
      cJSON_AddNumberToObject(row, "comm_bytes", (double)pt.comm_bytes);
      cJSON_AddNumberToObject(row, "iteration_ns", (double)pt.iteration_ns);
      cJSON_AddNumberToObject(row, "slowdown", pt.slowdown);
    } else {
      g_autofree char *note = g_strdup_printf("no (%u)", whys->len + 1);
      if (multi)
        stw_table_row(tab, stw_policy_names[p], "-", "-", "-", "-", "-", "-", note);
      else
        stw_table_row(tab, stw_policy_names[p], "-", "-", "-", "-", "-", note);
      g_ptr_array_add(whys, g_strdup(pt.why));
      cJSON_AddStringToObject(row, "why", pt.why);
    }
    cJSON_AddItemToArray(arr, row);
    stw_whatif_point_clear(&pt);
  }
  if (json) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "trace", argv[1]);
    cJSON_AddStringToObject(root, "hardware", hw.name);
    cJSON_AddNumberToObject(root, "gpu_bytes", (double)budget);
    cJSON_AddNumberToObject(root, "gpus", o.world_size);
    cJSON_AddNumberToObject(root, "unlimited_iteration_ns", (double)unlimited);
    cJSON_AddItemToObject(root, "policies", arr);
    char *text = cJSON_Print(root);
    printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(root);
  } else {
    g_autofree char *b = stw_size_format(budget);
    g_autofree char *u = stw_duration_format(unlimited);
    if (multi)
      printf("%s on %u x %s with %s of GPU memory each (unlimited memory: %s per iteration)\n"
             "\n", argv[1], o.world_size, hw.name, b, u);
    else
      printf("%s on %s with %s of GPU memory (unlimited memory: %s per iteration)\n\n",
             argv[1], hw.name, b, u);
    stw_table_print(tab, stdout);
    for (guint i = 0; i < whys->len; i++)
      printf("(%u) %s\n", i + 1, (char *)whys->pdata[i]);
    cJSON_Delete(arr);
  }
  g_ptr_array_unref(whys);
  return STW_EXIT_OK;
}
