/* cmd-probe.c — `stowage probe`: measure this machine and write a hardware profile. */
#include <stdio.h>
#include <string.h>

#include <stowage/adam.h>
#include <stowage/backend.h>
#include <stowage/units.h>

#include "cli.h"
#include "json.h"

#define ADAM_ELEMS (8u << 20)   /* per thread: 8M elements, 128 MiB of state */
#define MIN_SECONDS 0.2

static double
now(void)
{
  return (double)g_get_monotonic_time() / 1e6;
}

/* memcpy bandwidth (bytes/s) for transfers of SIZE bytes. */
static double
memcpy_rate(gsize size)
{
  guint8 *a = g_malloc(size), *b = g_malloc(size);
  memset(a, 1, size);
  memset(b, 2, size);
  guint64 moved = 0;
  double t0 = now(), t;
  do {
    memcpy(b, a, size);
    a[moved % size] ^= b[(moved + 7) % size]; /* keep the copies observable */
    moved += size;
  } while ((t = now() - t0) < MIN_SECONDS);
  g_free(a);
  g_free(b);
  return (double)moved / t;
}

typedef struct {
  float *p, *g, *m, *v;
  guint64 steps;
  double seconds;
} AdamJob;

static gpointer
adam_job(gpointer data)
{
  AdamJob *j = data;
  StwAdamConfig c;
  stw_adam_config_init(&c);
  stw_adam_update(j->p, j->g, j->m, j->v, ADAM_ELEMS, &c, 1); /* touch every page first */
  double t0 = now();
  do
    stw_adam_update(j->p, j->g, j->m, j->v, ADAM_ELEMS, &c, ++j->steps + 1);
  while ((j->seconds = now() - t0) < MIN_SECONDS);
  return NULL;
}

/* CPU Adam elements per second over THREADS threads. */
static double
adam_rate(guint threads)
{
  AdamJob *jobs = g_new0(AdamJob, threads);
  GThread **th = g_new(GThread *, threads);
  for (guint i = 0; i < threads; i++) {
    jobs[i].p = g_new(float, ADAM_ELEMS);
    jobs[i].g = g_new(float, ADAM_ELEMS);
    jobs[i].m = g_new0(float, ADAM_ELEMS);
    jobs[i].v = g_new0(float, ADAM_ELEMS);
    for (guint k = 0; k < ADAM_ELEMS; k++) {
      jobs[i].p[k] = 0.01f * (float)(k % 97);
      jobs[i].g[k] = 0.001f * (float)(k % 13) - 0.006f;
    }
  }
  for (guint i = 0; i < threads; i++)
    th[i] = g_thread_new("adam", adam_job, &jobs[i]);
  double rate = 0;
  for (guint i = 0; i < threads; i++) {
    g_thread_join(th[i]);
    rate += (double)jobs[i].steps * ADAM_ELEMS / jobs[i].seconds;
    g_free(jobs[i].p);
    g_free(jobs[i].g);
    g_free(jobs[i].m);
    g_free(jobs[i].v);
  }
  g_free(th);
  g_free(jobs);
  return rate;
}

typedef struct {
  gsize size;
  double bytes_per_s;
} CopyJob;

static gpointer
copy_job(gpointer data)
{
  CopyJob *j = data;
  j->bytes_per_s = memcpy_rate(j->size);
  return NULL;
}

/* The host's memory bandwidth for copies: THREADS copying 256 MiB blocks at once, in bytes
 * moved per second (each byte read once and written once). */
static double
host_memory_rate(guint threads)
{
  CopyJob *jobs = g_new0(CopyJob, threads);
  GThread **th = g_new(GThread *, threads);
  for (guint i = 0; i < threads; i++) {
    jobs[i].size = 256u << 20;
    th[i] = g_thread_new("copy", copy_job, &jobs[i]);
  }
  double rate = 0;
  for (guint i = 0; i < threads; i++) {
    g_thread_join(th[i]);
    rate += jobs[i].bytes_per_s;
  }
  g_free(th);
  g_free(jobs);
  return rate;
}

/* The emulated device of the host backend: a copy engine's bandwidth by transfer size, as the
 * runtime uses it (copies queued, then waited for), and its latency: the time of a 4 KiB copy. */
static void
probe_host_device(StwHardware *hw, GString *desc, StwTable *tab)
{
  StwBackend *be = stw_backend_host_new();
  static const gsize sizes[] = { 64 << 10, 1 << 20, 16 << 20, 256 << 20 };
  guint8 *src = g_malloc(512u << 20), *dst = g_malloc(512u << 20);
  memset(src, 1, 512u << 20);
  memset(dst, 2, 512u << 20);
  /* the latency: the time of a 4 KiB copy among 64 queued back to back, as the runtime queues
   * them (a lone copy also waits for its engine thread to wake) */
  double t0 = now();
  for (int r = 0; r < 16; r++) {
    StwEvent *e[64];
    for (int c = 0; c < 64; c++)
      e[c] = be->copy(be, STW_COPY_H2D, dst + (gsize)c * 4096, src + (gsize)c * 4096, 4096);
    for (int c = 0; c < 64; c++) {
      be->wait(be, e[c]);
      be->event_free(be, e[c]);
    }
  }
  guint64 latency_ns = (guint64)((now() - t0) / (16 * 64) * 1e9);
  hw->pcie_latency_ns = latency_ns;
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    gsize n = sizes[i], count = (512u << 20) / n;
    guint64 moved = 0;
    double start = now(), t;
    do {
      StwEvent *e[64];
      gsize k = MIN(count, G_N_ELEMENTS(e));
      for (gsize c = 0; c < k; c++)
        e[c] = be->copy(be, STW_COPY_H2D, dst + c * n, src + c * n, n);
      for (gsize c = 0; c < k; c++) {
        be->wait(be, e[c]);
        be->event_free(be, e[c]);
      }
      moved += (guint64)k * n;
    } while ((t = now() - start) < MIN_SECONDS);
    /* the latency is the profile's own term: the curve is the bandwidth beside it */
    double per_copy = t / ((double)moved / (double)n), bare = per_copy - (double)latency_ns / 1e9;
    double bw = (double)n / (bare > per_copy / 2 ? bare : per_copy);
    hw->pinned[i] = hw->pageable[i] = (StwBandwidthPoint){ .bytes = n, .bytes_per_s = bw };
    g_autofree char *sz = stw_size_format(n);
    g_autofree char *b = g_strdup_printf("%.2f GB/s", bw / 1e9);
    stw_table_row(tab, sz, b);
    g_string_append_printf(desc, " %s %.2f GB/s;", sz, bw / 1e9);
  }
  hw->n_pinned = hw->n_pageable = G_N_ELEMENTS(sizes);
  hw->pcie_generation = 1;
  hw->gpu_memory_bytes = STW_TiB;
  hw->compute_on_host = TRUE;
  g_strlcpy(hw->gpu_model, "stowage host backend (emulated device)", sizeof hw->gpu_model);
  g_string_append_printf(desc, " latency %" G_GUINT64_FORMAT " ns", latency_ns);
  g_free(src);
  g_free(dst);
  be->free(be);
}

int
stw_cmd_probe(int argc, char **argv)
{
  g_autofree char *base = NULL, *name = NULL, *output = NULL, *device = NULL;
  GOptionEntry entries[] = {
    { "base", 0, 0, G_OPTION_ARG_STRING, &base,
      "profile to start from for what cannot be measured here (default " STW_HARDWARE_DEFAULT ")",
      "PROFILE" },
    { "name", 0, 0, G_OPTION_ARG_STRING, &name, "the new profile's name (default: probed-HOST)",
      "NAME" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "profile file to write", "FILE" },
    { "device", 0, 0, G_OPTION_ARG_STRING, &device,
      "host: also measure the host backend's emulated device (copy engines by size, latency) "
      "as the profile's host link", "host" },
    { NULL }
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- measure this machine");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Measures memcpy bandwidth by transfer size and CPU Adam elements per second (one\n"
           "thread and all), and writes a hardware profile with the measured CPU figures; the\n"
           "GPU and PCIe figures come from the base profile (this build measures no GPU).\n\n"
           "Example: stowage probe --base H100-80GB-PCIe5 -o my-host.json\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "probe"))
    return STW_EXIT_USAGE;
  if (argc > 1)
    return stw_cli_fail(STW_EXIT_USAGE, "probe: unexpected argument '%s'", argv[1]);
  StwHardware hw;
  int status;
  if (!stw_cli_option_needs("probe", "--name", name != NULL, "--output", output != NULL))
    return STW_EXIT_USAGE;
  if (name != NULL && strlen(name) >= sizeof((StwHardware *)NULL)->name)
    return stw_cli_fail(STW_EXIT_USAGE, "--name: at most %zu bytes",
                        sizeof((StwHardware *)NULL)->name - 1);
  const StwCliFile in[] = { { "--base", base } }, out[] = { { "--output", output } };
  if (!stw_cli_outputs_apart("probe", in, 1, out, 1))
    return STW_EXIT_USAGE;
  if (!stw_cli_hardware(base != NULL ? base : STW_HARDWARE_DEFAULT, NULL, &hw, &status))
    return status;
  static const char *const devices[] = { "host", NULL };
  int dev = -1;
  if (!stw_cli_parse_enum(device, "--device", devices, &dev))
    return STW_EXIT_USAGE;
  guint threads = g_get_num_processors();
  static const gsize sizes[] = { 64 << 10, 1 << 20, 16 << 20, 256 << 20 };
  g_autoptr(StwTable) tab = stw_table_new(2, "<memcpy size", "bandwidth");
  GString *desc = g_string_new("probed: memcpy");
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    double r = memcpy_rate(sizes[i]);
    g_autofree char *sz = stw_size_format(sizes[i]);
    g_autofree char *bw = g_strdup_printf("%.2f GB/s", r / 1e9);
    stw_table_row(tab, sz, bw);
    g_string_append_printf(desc, " %s %.2f GB/s;", sz, r / 1e9);
  }
  stw_table_print(tab, stdout);
  /* CPU Adam at 1, 2, 4, ... threads and all: it is bound by memory bandwidth, so it stops
   * scaling where the host's memory does */
  g_autoptr(StwTable) adam = stw_table_new(2, "threads", "CPU Adam elements/s");
  double all = 0;
  for (guint n = 1;; n = MIN(2 * n, threads)) {
    double r = adam_rate(n);
    g_autofree char *tn = g_strdup_printf("%u", n);
    g_autofree char *tr = g_strdup_printf("%.3g", r);
    stw_table_row(adam, tn, tr);
    g_string_append_printf(desc, " CPU Adam %.3g elements/s on %u thread%s;", r, n,
                           n > 1 ? "s" : "");
    all = r;
    if (n == threads)
      break;
  }
  stw_table_print(adam, stdout);
  double mem = host_memory_rate(threads);
  printf("host memory %.2f GB/s copied by %u threads\n", mem / 1e9, threads);
  g_string_append_printf(desc, " host memory %.2f GB/s on %u threads;", mem / 1e9, threads);
  hw.cpu_adam_elems_per_s = all;
  hw.host_memory_bytes_per_s = mem;
  if (hw.node_gpus == 0) /* the host memory bandwidth belongs to a node */
    hw.node_gpus = 1;
  if (dev == 0) {
    g_autoptr(StwTable) copies = stw_table_new(2, "<emulated device copy", "bandwidth");
    g_string_append(desc, " emulated device copies:");
    probe_host_device(&hw, desc, copies);
    stw_table_print(copies, stdout);
    printf("copy latency %" G_GUINT64_FORMAT " ns\n", hw.pcie_latency_ns);
  } else {
    g_string_append_printf(desc, " GPU and PCIe from %s (no GPU measured)", hw.name);
  }
  g_autofree char *host = g_strdup(g_get_host_name());
  g_strlcpy(hw.name, name != NULL ? name : "probed", sizeof hw.name);
  if (name == NULL) {
    g_strlcat(hw.name, "-", sizeof hw.name);
    g_strlcat(hw.name, host, sizeof hw.name);
  }
  if (output != NULL) {
    cJSON *o = stw_hardware_to_json(&hw);
    cJSON_AddStringToObject(o, "description", desc->str);
    g_autofree char *text = stw_json_print_lines(o);
    cJSON_Delete(o);
    GError *error = NULL;
    StwHardware back; /* what is written is what the reader takes */
    if (!stw_hardware_parse(output, text, strlen(text), &back, &error) ||
        !stw_file_write_atomic(output, text, strlen(text), &error)) {
      g_string_free(desc, TRUE);
      return stw_cli_error(error);
    }
    printf("wrote %s (profile %s)\n", output, hw.name);
  }
  g_string_free(desc, TRUE);
  return STW_EXIT_OK;
}
