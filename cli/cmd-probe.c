/* cmd-probe.c — `stowage probe`: measure this machine and write a hardware profile. The library
 * measures (probe.h); this file reads the command line, starts the ranks and prints what was
 * measured. */
#include <stdio.h>
#include <string.h>

#include <stowage/probe.h>
#include <stowage/units.h>

#include "cli.h"

static void
print_collectives(const StwProbe *p)
{
  g_autoptr(StwTable) tab = stw_table_new(4, "<chunk", "all-gather", "reduce-scatter",
                                          "per step");
  for (gsize i = 0; i < STW_PROBE_COLLECTIVE_SIZES; i++) {
    double step = (p->gather_s[i] + p->scatter_s[i]) / 2 / (double)(p->world - 1);
    g_autofree char *sz = stw_size_format(p->collective_sizes[i]);
    g_autofree char *g = g_strdup_printf("%.1f us", p->gather_s[i] * 1e6);
    g_autofree char *r = g_strdup_printf("%.1f us", p->scatter_s[i] * 1e6);
    g_autofree char *bw = g_strdup_printf("%.2f GB/s", (double)p->collective_sizes[i] / step / 1e9);
    stw_table_row(tab, sz, g, r, bw);
  }
  stw_table_print(tab, stdout);
  printf("collectives of %u ranks: %.2f GB/s and %" G_GUINT64_FORMAT " ns per step\n", p->world,
         p->profile.interconnect_bytes_per_s / 1e9, p->profile.interconnect_latency_ns);
}

static void
print_host(const StwProbe *p)
{
  g_autoptr(StwTable) tab = stw_table_new(2, "<memcpy size", "bandwidth");
  for (gsize i = 0; i < STW_PROBE_COPY_SIZES; i++) {
    g_autofree char *sz = stw_size_format(p->memcpy_sizes[i]);
    g_autofree char *bw = g_strdup_printf("%.2f GB/s", p->memcpy_bytes_per_s[i] / 1e9);
    stw_table_row(tab, sz, bw);
  }
  stw_table_print(tab, stdout);
  g_autoptr(StwTable) adam = stw_table_new(2, "threads", "CPU Adam elements/s");
  for (guint i = 0; i < p->n_adam; i++) {
    g_autofree char *tn = g_strdup_printf("%u", p->adam_threads[i]);
    g_autofree char *tr = g_strdup_printf("%.3g", p->adam_elems_per_s[i]);
    stw_table_row(adam, tn, tr);
  }
  stw_table_print(adam, stdout);
  printf("CPU Adam in the profile %.3g elements/s on %u thread%s, the OpenMP team it runs on "
         "(OMP_NUM_THREADS sets it)\n", p->profile.cpu_adam_elems_per_s, p->adam_team,
         p->adam_team > 1 ? "s" : "");
  printf("CPU Adam with bf16 moments %.3g elements/s on %u thread%s (%.2fx the fp32 moments')\n",
         p->adam_bf16_elems_per_s, p->adam_team, p->adam_team > 1 ? "s" : "",
         p->adam_bf16_elems_per_s / p->profile.cpu_adam_elems_per_s);
  printf("the storage tier's checksum %.2f GB/s on the same team (each region it writes and "
         "reads back)\n", p->profile.cpu_checksum_bytes_per_s / 1e9);
  printf("host memory %.2f GB/s copied by %u threads; %.2f GB/s read and written (the most of"
         " copying's and CPU Adam's)\n",
         p->host_copy_bytes_per_s / 1e9, p->threads, p->host_memory_bytes_per_s / 1e9);
}

static void
print_device(const StwProbe *p)
{
  gboolean emulated = p->device == STW_PROBE_HOST;
  g_autoptr(StwTable) tab = stw_table_new(3, emulated ? "<emulated device copy" : "<GPU copy",
                                          "H2D", "D2H");
  for (gsize i = 0; i < STW_PROBE_COPY_SIZES; i++) {
    g_autofree char *sz = stw_size_format(p->copy_sizes[i]);
    g_autofree char *b = g_strdup_printf("%.2f GB/s", p->h2d_bytes_per_s[i] / 1e9);
    g_autofree char *b2 = g_strdup_printf("%.2f GB/s", p->d2h_bytes_per_s[i] / 1e9);
    stw_table_row(tab, sz, b, b2);
  }
  stw_table_print(tab, stdout);
  printf("copy latency %" G_GUINT64_FORMAT " ns\n", p->copy_latency_ns);
  if (emulated)
    printf("copy interference %.2f: compute time lost per second of copy beside it\n",
           p->copy_interference);
}

static void
print_storage(const StwProbe *p)
{
  g_autoptr(StwTable) tab = stw_table_new(3, "<storage request", "read", "write");
  for (gsize i = 0; i < STW_PROBE_STORAGE_SIZES; i++) {
    g_autofree char *sz = stw_size_format(p->storage_sizes[i]);
    g_autofree char *r = g_strdup_printf("%.2f GB/s", p->storage_read_bytes_per_s[i] / 1e9);
    g_autofree char *w = g_strdup_printf("%.2f GB/s", p->storage_write_bytes_per_s[i] / 1e9);
    stw_table_row(tab, sz, r, w);
  }
  stw_table_print(tab, stdout);
  g_autoptr(StwTable) depth = stw_table_new(2, "queue depth", "1 MiB reads");
  for (gsize i = 0; i < STW_PROBE_STORAGE_DEPTHS; i++) {
    g_autofree char *d = g_strdup_printf("%u", p->storage_depths[i]);
    g_autofree char *b = g_strdup_printf("%.2f GB/s", p->storage_depth_read_bytes_per_s[i] / 1e9);
    stw_table_row(depth, d, b);
  }
  stw_table_print(depth, stdout);
  printf("reads and writes taking turns (8 MiB): %.2f GB/s, both directions\n",
         p->storage_mixed_bytes_per_s / 1e9);
  g_autofree char *fb = stw_size_format(p->storage_file_bytes);
  printf("storage on %s through %s, %s, over a %s file; a 4 KiB read alone %" G_GUINT64_FORMAT
         " ns\n", p->storage_fs, p->storage_engine,
         p->storage_direct ? "O_DIRECT (the page cache bypassed)" : "buffered", fb,
         p->storage_latency_ns);
  if (p->storage_fallback[0] != '\0')
    printf("storage: %s\n", p->storage_fallback);
}

/* With --collectives, every rank times them; then MPI ends, and only rank 0 goes on (*SPEAKS). */
static gboolean
ranks(const StwProbeOptions *o, StwProbe *p, gboolean *speaks, int *status)
{
  StwComm *comm = NULL;
  *speaks = TRUE;
  if (!stw_cli_start_ranks("probe", &comm, status))
    return FALSE;
  GError *error = NULL;
  gboolean ok = !o->collectives || stw_probe_collectives(comm, p, &error);
  if (comm != NULL) {
    *speaks = comm->rank == 0;
    comm->free(comm);
  }
  if (!ok)
    *status = stw_cli_error(error);
  return ok;
}

/* The command line as a request (NULL: a usage error, said), *OUTPUT its --output (may be NULL),
 * *JSON its --json. */
static StwRequest *
parse(int argc, char **argv, char **output_out, gboolean *json)
{
  g_autofree char *base = NULL, *name = NULL, *output = NULL, *device = NULL, *nvme = NULL,
                  *nvme_depth = NULL;
  gboolean collectives = FALSE;
  GOptionEntry entries[] = {
    { "base", 0, 0, STW_OPTION_TEXT, &base,
      "profile to start from for what cannot be measured here (default " STW_HARDWARE_DEFAULT ")",
      "PROFILE" },
    { "name", 0, 0, STW_OPTION_TEXT, &name, "the new profile's name (default: probed-HOST)",
      "NAME" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "profile file to write", "FILE" },
    { "device", 0, 0, STW_OPTION_TEXT, &device,
      "also measure a device link as the profile's: host, the host backend's emulated device; "
      "cuda, GPU 0's pinned copies through the CUDA backend (by size both ways, latency)",
      "host|cuda" },
    { "nvme", 0, 0, G_OPTION_ARG_FILENAME, &nvme,
      "also measure the storage under this directory as the profile's storage: O_DIRECT reads "
      "and writes by request size through io_uring (or threads), over a file of up to 1 GiB "
      "made there and removed", "DIR" },
    { "nvme-depth", 0, 0, STW_OPTION_TEXT, &nvme_depth,
      "with --nvme: requests in flight (default 32)", "N" },
    { "collectives", 0, 0, G_OPTION_ARG_NONE, &collectives,
      "under mpirun: also measure the ranks' all-gathers and reduce-scatters by chunk size, as "
      "the profile's interconnect", NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, json, "print every measurement and the profile", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- measure this machine");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Measures memcpy bandwidth by transfer size and CPU Adam elements per second (one\n"
           "thread and all), and writes a hardware profile with the measured CPU figures; the\n"
           "GPU and PCIe figures come from the base profile, and with --device cuda the pinned\n"
           "copies are GPU 0's as the runtime makes them.\n\n"
           "With --collectives, started by mpirun on N ranks, it first times the collectives of\n"
           "chunk groups between them (as `train` runs them), and rank 0 measures the rest.\n\n"
           "With --nvme DIR, the storage under DIR too: its reads and writes by request size\n"
           "at the queue depth, and 1 MiB reads by queue depth, bypassing the page cache where\n"
           "the file system allows it (said where it does not), as the profile's storage.\n\n"
           "Example: stowage probe --base H100-80GB-PCIe5 -o my-host.json\n"
           "         stowage probe --nvme /mnt/nvme0/scratch -o with-nvme.json\n"
           "         stowage probe --device cuda --base H200-SXM-141GB -o this-gpu.json\n"
           "         mpirun -np 2 stowage probe --device host --collectives -o ranks.json\n");
  const StwCliFile in[] = { { "--base", base } }, out[] = { { "--output", output } };
  if (!stw_cli_parse(ctx, &argc, &argv, "probe"))
    return NULL;
  if (argc > 1) {
    stw_cli_fail(STW_EXIT_USAGE, "probe: unexpected argument '%s'", argv[1]);
    return NULL;
  }
  if (!stw_cli_option_needs("probe", "--name", name != NULL, "--output", output != NULL) ||
      !stw_cli_outputs_apart("probe", in, 1, out, 1))
    return NULL;
  StwRequest *r = stw_request_new(&stw_request_probe_kind);
  stw_cli_request_from_entries(r, entries);
  *output_out = g_steal_pointer(&output);
  return r;
}

int
stw_cmd_probe(int argc, char **argv)
{
  g_autofree char *output = NULL;
  gboolean json = FALSE;
  g_autoptr(StwRequest) r = parse(argc, argv, &output, &json);
  if (r == NULL)
    return STW_EXIT_USAGE;
  StwProbeOptions o;
  StwProbe p = { 0 };
  GError *error = NULL;
  int status = STW_EXIT_OK;
  gboolean speaks;
  if (!stw_request_probe(r, &o, &error))
    return stw_cli_error(error);
  if (!ranks(&o, &p, &speaks, &status) || !speaks)
    return status;
  if (!stw_probe_run(&o, &p, &error)) {
    stw_probe_clear(&p);
    return stw_cli_error(error);
  }
  if (json) {
    g_autofree char *text = stw_probe_json(&p);
    printf("%s\n", text);
  } else {
    if (p.world > 1)
      print_collectives(&p);
    print_host(&p);
    if (p.device != STW_PROBE_NO_DEVICE)
      print_device(&p);
    if (p.storage)
      print_storage(&p);
  }
  if (output != NULL && !stw_hardware_save(&p.profile, p.description, output, &error))
    status = stw_cli_error(error);
  else if (output != NULL && !json)
    printf("wrote %s (profile %s)\n", output, p.profile.name);
  stw_probe_clear(&p);
  return status;
}
