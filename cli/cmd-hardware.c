/* cmd-hardware.c — `stowage hardware`: the shipped hardware profiles. */
#include <stdio.h>
#include <string.h>

#include <stowage/hardware.h>
#include <stowage/units.h>

#include "cli.h"

/* A storage tier's row: its drives, capacity, and bandwidth at 16 MiB both ways. */
static void
storage_row(StwTable *table, const char *name, const StwHardware *hw)
{
  g_autofree char *kind = g_strdup_printf("%u x %s", MAX(hw->storage_devices, 1),
                                          hw->storage_kind);
  g_autofree char *cap = stw_size_format(hw->storage_bytes);
  char rd[32], wr[32], depth[32];
  g_snprintf(rd, sizeof rd, "%.2f", stw_hardware_storage_bandwidth(hw, 16u << 20, FALSE) / 1e9);
  g_snprintf(wr, sizeof wr, "%.2f", stw_hardware_storage_bandwidth(hw, 16u << 20, TRUE) / 1e9);
  g_snprintf(depth, sizeof depth, "%u", hw->storage_queue_depth);
  stw_table_row(table, name, kind, cap, rd, wr, depth);
}

int
stw_cmd_hardware(int argc, char **argv)
{
  GOptionEntry entries[] = { G_OPTION_ENTRY_NULL };
  g_autoptr(GOptionContext) ctx = g_option_context_new("[PROFILE.json] - list hardware profiles");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(ctx, "Lists the shipped profiles, then the storage presets "
                                        "that --storage gives any of them. Given profile or "
                                        "storage preset names or files, checks and shows "
                                        "those.\n\n"
                                        "Example: stowage hardware\n"
                                        "         stowage hardware my-gpu.json nvme-gen4\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "hardware"))
    return STW_EXIT_USAGE;

  g_auto(GStrv) names = argc > 1 ? g_strdupv(argv + 1) : stw_hardware_names();
  g_auto(GStrv) presets = argc > 1 ? g_new0(char *, 1) : stw_hardware_storage_names();
  g_autoptr(StwTable) storage = stw_table_new(6, "<storage preset", "<kind", "capacity",
                                              "read GB/s", "write GB/s", "queue depth");
  g_autoptr(StwTable) table = stw_table_new(15, "<profile", "<gpu", "memory", "process",
                                            "HBM GB/s",
                                            "16-bit TFLOP/s", "fp32 TFLOP/s", "PCIe",
                                            "pinned GB/s", "GPUs/node", "<GPU link GB/s",
                                            "<network GB/s", "CPU Adam G/s", "host GB/s",
                                            "<host CPU");
  for (char **n = names; *n != NULL; n++) {
    StwHardware hw;
    GError *error = NULL;
    if (!stw_hardware_lookup(*n, &hw, &error)) {
      memset(&hw, 0, sizeof hw); /* a storage preset's name or file, given */
      if (!stw_hardware_use_storage(&hw, *n, NULL))
        return stw_cli_error(error);
      g_clear_error(&error);
      storage_row(storage, *n, &hw);
      continue;
    }
    g_autofree char *mem = stw_size_format(hw.gpu_memory_bytes);
    /* what a process holds of it outside its tensors (gpu.process_bytes) */
    g_autofree char *process = hw.gpu_process_bytes ? stw_size_format(hw.gpu_process_bytes)
                                                    : g_strdup("-");
    char hbm[32], half[32], fp32[32], gen[16], pcie[32];
    g_snprintf(hbm, sizeof hbm, "%.0f", hw.hbm_bytes_per_s / 1e9);
    /* bf16's rate, or fp16's on a GPU without bf16 (Volta, Turing), named */
    StwDtype d16 = stw_hardware_default_dtype(&hw);
    g_snprintf(half, sizeof half, "%s%.1f", d16 == STW_DTYPE_BF16 ? "" : "fp16 ",
               hw.flops_per_s[d16] / 1e12);
    g_snprintf(fp32, sizeof fp32, "%.1f", hw.flops_per_s[STW_DTYPE_FP32] / 1e12);
    g_snprintf(gen, sizeof gen, "gen%u", hw.pcie_generation);
    g_snprintf(pcie, sizeof pcie, "%.1f", hw.pinned[hw.n_pinned - 1].bytes_per_s / 1e9);
    g_autofree char *node = hw.node_gpus ? g_strdup_printf("%u", hw.node_gpus) : g_strdup("-");
    g_autofree char *across = hw.gpus_per_socket
                                  ? g_strdup_printf(" (%.0f beyond %u)",
                                                    hw.cross_socket_bytes_per_s / 1e9,
                                                    hw.gpus_per_socket)
                                  : g_strdup("");
    g_autofree char *link = hw.interconnect_kind[0]
                                ? g_strdup_printf("%s %.0f%s", hw.interconnect_kind,
                                                  hw.interconnect_bytes_per_s / 1e9, across)
                                : g_strdup("-");
    g_autofree char *net = hw.network_kind[0] ? g_strdup_printf("%s %.0f", hw.network_kind,
                                                                hw.network_bytes_per_s / 1e9)
                                              : g_strdup("-");
    char adam[32];
    g_snprintf(adam, sizeof adam, "%.2f", hw.cpu_adam_elems_per_s / 1e9);
    g_autofree char *host = hw.host_memory_bytes_per_s > 0
                                ? g_strdup_printf("%.0f", hw.host_memory_bytes_per_s / 1e9)
                                : g_strdup("-");
    stw_table_row(table, hw.name, hw.gpu_model, mem, process, hbm, half, fp32, gen, pcie, node,
                  link, net, adam, host, hw.cpu_model[0] != '\0' ? hw.cpu_model : "-");
  }
  for (char **n = presets; *n != NULL; n++) {
    StwHardware hw = { 0 };
    GError *error = NULL;
    if (!stw_hardware_use_storage(&hw, *n, &error))
      return stw_cli_error(error);
    storage_row(storage, *n, &hw);
  }
  if (stw_table_rows(table) > 0)
    stw_table_print(table, stdout);
  if (stw_table_rows(table) > 0 && stw_table_rows(storage) > 0)
    printf("\n");
  if (stw_table_rows(storage) > 0)
    stw_table_print(storage, stdout);
  return STW_EXIT_OK;
}
