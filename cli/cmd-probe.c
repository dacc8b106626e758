/* cmd-probe.c — `stowage probe`: measure this machine and write a hardware profile. */
#include <stdio.h>
#include <string.h>

#include <stowage/adam.h>
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

int
stw_cmd_probe(int argc, char **argv)
{
  g_autofree char *base = NULL, *name = NULL, *output = NULL;
  GOptionEntry entries[] = {
    { "base", 0, 0, G_OPTION_ARG_STRING, &base,
      "profile to start from for what cannot be measured here (default " STW_HARDWARE_DEFAULT ")",
      "PROFILE" },
    { "name", 0, 0, G_OPTION_ARG_STRING, &name, "the new profile's name (default: probed-HOST)",
      "NAME" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "profile file to write", "FILE" },
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
  double one = adam_rate(1), all = threads > 1 ? adam_rate(threads) : one;
  stw_table_print(tab, stdout);
  printf("CPU Adam    %.3g elements/s on 1 thread, %.3g on %u threads\n", one, all, threads);
  g_string_append_printf(desc, " CPU Adam %.3g elements/s on 1 thread, %.3g on %u; GPU and PCIe "
                               "from %s (no GPU measured)", one, all, threads, hw.name);
  hw.cpu_adam_elems_per_s = all;
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
