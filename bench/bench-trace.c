/* bench-trace.c — time and memory to load, validate and digest a trace, and to synthesize one.
 *
 * Usage: bench-trace TRACE [REPEATS]
 * Prints one line per measured step: the median wall time over REPEATS runs (default 20), and
 * the process's peak resident memory at the end.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <glib.h>

#include <stowage/hardware.h>
#include <stowage/synth.h>
#include <stowage/trace.h>

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: bench-trace TRACE [REPEATS]\n");
    return 2;
  }
  int repeats = argc > 2 ? atoi(argv[2]) : 20;
  if (repeats < 1)
    repeats = 1;
  double *load = g_new(double, repeats), *digest = g_new(double, repeats),
         *synth = g_new(double, repeats);
  StwTrace *t = NULL;
  for (int i = 0; i < repeats; i++) {
    GError *error = NULL;
    gint64 t0 = g_get_monotonic_time();
    StwTrace *loaded = stw_trace_load(argv[1], &error);
    gint64 t1 = g_get_monotonic_time();
    if (loaded == NULL) {
      fprintf(stderr, "bench-trace: %s\n", error->message);
      return 1;
    }
    char *d = stw_trace_digest(loaded);
    gint64 t2 = g_get_monotonic_time();
    g_free(d);
    load[i] = (double)(t1 - t0) / 1e3;
    digest[i] = (double)(t2 - t1) / 1e3;
    stw_trace_free(t);
    t = loaded;
  }
  /* re-synthesize the same model, when the trace says what it is */
  gboolean can_synth = t->model.has_config && t->model.batch > 0;
  StwHardware hw;
  can_synth = can_synth && stw_hardware_lookup(t->device.name, &hw, NULL);
  for (int i = 0; can_synth && i < repeats; i++) {
    StwSynthOptions opt = { .batch = t->model.batch, .seq = t->model.seq,
                            .dtype = stw_trace_tensor(t, 0)->dtype,
                            .checkpointing = t->model.checkpointing,
                            .attention = t->model.attention };
    gint64 t0 = g_get_monotonic_time();
    StwTrace *s = stw_synth_trace(&t->model.config, &opt, &hw, NULL);
    synth[i] = (double)(g_get_monotonic_time() - t0) / 1e3;
    stw_trace_free(s);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("trace: %s (%u tensors, %u ops)\n", argv[1], t->tensors->len, t->ops->len);
  printf("load+validate  median %8.2f ms over %d runs\n", median(load, repeats), repeats);
  printf("digest         median %8.2f ms over %d runs\n", median(digest, repeats), repeats);
  if (can_synth)
    printf("synth          median %8.2f ms over %d runs\n", median(synth, repeats), repeats);
  printf("peak RSS       %8.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
  stw_trace_free(t);
  g_free(load);
  g_free(digest);
  g_free(synth);
  return 0;
}
