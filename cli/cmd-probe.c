/* cmd-probe.c — `stowage probe`: measure this machine and write a hardware profile. */
#include <stdio.h>
#include <string.h>

#include <stowage/adam.h>
#include <stowage/backend.h>
#include <stowage/comm.h>
#include <stowage/compute.h>
#include <stowage/units.h>

#include "cli.h"

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

/* Seconds for COUNT copies of N bytes in direction DIR between HOST and DEV, queued 64 at a time
 * and waited for, as the runtime queues them. */
static double
time_copies(StwBackend *be, StwCopyDir dir, guint8 *host, guint8 *dev, gsize n, gsize count)
{
  double t0 = now();
  for (gsize done = 0; done < count;) {
    StwEvent *e[64];
    gsize k = MIN(count - done, G_N_ELEMENTS(e));
    for (gsize c = 0; c < k; c++) {
      gsize at = ((done + c) * n) % (512u << 20);
      e[c] = dir == STW_COPY_H2D ? be->copy(be, dir, dev + at, host + at, n)
                                 : be->copy(be, dir, host + at, dev + at, n);
    }
    for (gsize c = 0; c < k; c++) {
      be->wait(be, e[c]);
      be->event_free(be, e[c]);
    }
    done += k;
  }
  return now() - t0;
}

#define FEED_BYTES (16u << 20) /* the interference probe's copies, as large as a chunk */

typedef struct {
  StwBackend *be;
  guint8 *host, *dev;
  gsize size;
  gint stop;              /* atomic: set to end the copies */
  gsize bytes;            /* atomic: copied so far */
} CopyFeed;

/* Copies SIZE bytes host to device back to back, as the runtime's fetches keep an engine busy,
 * until told to stop. */
static gpointer
copy_feed(gpointer data)
{
  CopyFeed *f = data;
  while (!g_atomic_int_get(&f->stop)) {
    StwEvent *e = f->be->copy(f->be, STW_COPY_H2D, f->dev, f->host, f->size);
    f->be->wait(f->be, e);
    f->be->event_free(f->be, e);
    g_atomic_pointer_add(&f->bytes, f->size);
  }
  return NULL;
}

/* The buffers of one MLP block of the trainer at GPT-2 small's width: 256 tokens of 768, a
 * 3072-wide hidden layer. */
typedef struct {
  float *inp, *w, *bias, *pre, *act, *dact, *dpre, *dinp, *dw, *dbias;
} Block;

#define BLOCK_T 256
#define BLOCK_C 768
#define BLOCK_H 3072

static void
block_init(Block *k)
{
  gsize n_in = BLOCK_T * BLOCK_C, n_w = BLOCK_H * BLOCK_C, n_h = BLOCK_T * BLOCK_H;
  k->inp = g_new(float, n_in);
  k->dinp = g_new(float, n_in);
  k->w = g_new(float, n_w);
  k->dw = g_new0(float, n_w);
  k->bias = g_new0(float, BLOCK_H);
  k->dbias = g_new0(float, BLOCK_H);
  k->pre = g_new(float, n_h);
  k->act = g_new(float, n_h);
  k->dact = g_new(float, n_h);
  k->dpre = g_new(float, n_h);
  for (gsize i = 0; i < n_w; i++)
    k->w[i] = 0.001f * (float)(i % 31) - 0.015f;
  for (gsize i = 0; i < n_in; i++)
    k->inp[i] = 0.01f * (float)(i % 17);
  for (gsize i = 0; i < n_h; i++)
    k->dact[i] = 0.001f * (float)(i % 13);
}

static void
block_clear(Block *k)
{
  float **all[] = { &k->inp, &k->w, &k->bias, &k->pre, &k->act, &k->dact, &k->dpre, &k->dinp,
                    &k->dw, &k->dbias };
  for (gsize i = 0; i < G_N_ELEMENTS(all); i++)
    g_clear_pointer(all[i], g_free);
}

/* Seconds for REPS forward and backward passes of the block on the trainer's threads: its
 * matmuls and its memory-bound GELU, in about the trainer's proportion. */
static double
time_block(Block *k, guint reps)
{
  StwCompute *x = stw_compute_cpu();
  gsize n_h = BLOCK_T * BLOCK_H;
  double t0 = now();
  for (guint r = 0; r < reps; r++) {
    x->matmul_forward(x, k->pre, k->inp, k->w, k->bias, 4, 64, BLOCK_C, BLOCK_H);
    x->gelu_forward(x, k->act, k->pre, n_h);
    x->gelu_backward(x, k->dpre, k->pre, k->dact, n_h);
    x->matmul_backward(x, k->dinp, k->dw, k->dbias, k->dpre, k->inp, k->w, 4, 64, BLOCK_C,
                       BLOCK_H, FALSE);
  }
  return now() - t0;
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* On the emulated device, copies run on the host's cores beside compute: the compute time lost
 * per second of copy (at the copy's own RATE, bytes/s, as the simulator times copies), from the
 * block alone and beside a busy copy engine, in 5 interleaved pairs (the median). */
static double
copy_interference(StwBackend *be, guint8 *host, guint8 *dev, double rate)
{
  Block k;
  block_init(&k);
  guint reps = 1;
  while (time_block(&k, reps) < MIN_SECONDS / 2)
    reps *= 2;
  double f[5];
  for (gsize round = 0; round < G_N_ELEMENTS(f); round++) {
    double alone = time_block(&k, reps);
    CopyFeed feed = { .be = be, .host = host, .dev = dev, .size = FEED_BYTES };
    GThread *th = g_thread_new("copy-feed", copy_feed, &feed);
    g_usleep(2000); /* the engine is busy before the compute starts */
    guint64 b0 = (guint64)g_atomic_pointer_get(&feed.bytes);
    double beside = time_block(&k, reps);
    guint64 b1 = (guint64)g_atomic_pointer_get(&feed.bytes);
    g_atomic_int_set(&feed.stop, 1);
    g_thread_join(th);
    double copy_s = (double)(b1 - b0) / rate;
    f[round] = copy_s > 0 ? (beside - alone) / copy_s : 0;
  }
  qsort(f, G_N_ELEMENTS(f), sizeof f[0], cmp_double);
  block_clear(&k);
  return CLAMP(f[G_N_ELEMENTS(f) / 2], 0, 4);
}

/* A backend's device link: a copy's bandwidth by transfer size both ways (the profile's curve is
 * their mean), as the runtime uses it (copies queued, then waited for), and its latency: the time
 * of a 4 KiB copy among 64 queued back to back (a lone copy also waits for its engine to wake).
 * The host backend's emulated device, or a GPU's pinned copies through the CUDA backend. */
static void
probe_device(StwBackend *be, StwHardware *hw, GString *desc, StwTable *tab)
{
  static const gsize sizes[] = { 64 << 10, 1 << 20, 16 << 20, 256 << 20 };
  gsize span = 512u << 20;
  guint8 *host = be->host_alloc(be, span), *dev = be->device_alloc(be, span);
  if (host != NULL)
    memset(host, 1, span);
  if (host == NULL || dev == NULL) {
    g_string_append_printf(desc, " (no %s memory for the copies: %s)", host ? "device" : "host",
                           be->error);
    return;
  }
  guint64 latency_ns = (guint64)(time_copies(be, STW_COPY_H2D, host, dev, 4096, 16 * 64) /
                                 (16 * 64) * 1e9);
  hw->pcie_latency_ns = latency_ns;
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    gsize n = sizes[i];
    double bw[2];
    for (int d = 0; d < 2; d++) {
      StwCopyDir dir = d == 0 ? STW_COPY_H2D : STW_COPY_D2H;
      gsize count = span / n;
      time_copies(be, dir, host, dev, n, MIN(count, 64)); /* warm-up */
      double t;
      while ((t = time_copies(be, dir, host, dev, n, count)) < MIN_SECONDS / 2 &&
             count < (1u << 24))
        count *= 2;
      /* the latency is the profile's own term: the curve is the bandwidth beside it */
      double per_copy = t / (double)count, bare = per_copy - (double)latency_ns / 1e9;
      bw[d] = (double)n / (bare > per_copy / 2 ? bare : per_copy);
    }
    double mean = (bw[0] + bw[1]) / 2;
    hw->pinned[i] = (StwBandwidthPoint){ .bytes = n, .bytes_per_s = mean };
    g_autofree char *sz = stw_size_format(n);
    g_autofree char *b = g_strdup_printf("%.2f GB/s", bw[0] / 1e9);
    g_autofree char *b2 = g_strdup_printf("%.2f GB/s", bw[1] / 1e9);
    stw_table_row(tab, sz, b, b2);
    g_string_append_printf(desc, " %s %.2f/%.2f GB/s;", sz, bw[0] / 1e9, bw[1] / 1e9);
  }
  hw->n_pinned = G_N_ELEMENTS(sizes);
  g_string_append_printf(desc, " latency %" G_GUINT64_FORMAT " ns", latency_ns);
  if (be->device_is_host) {
    hw->copy_interference = copy_interference(be, host, dev,
                                              stw_hardware_pcie_bandwidth(hw, FEED_BYTES, TRUE));
    const char *threads = g_getenv("OMP_NUM_THREADS");
    g_string_append_printf(desc, "; copy interference %.2f (compute threads: %s)",
                           hw->copy_interference,
                           threads != NULL ? threads : "OpenMP's default");
  }
  be->device_free(be, dev);
  be->host_free(be, host);
}

/* Seconds per call of a collective, on rank 0: REPS of them between barriers. */
static gboolean
time_collective(StwComm *c, gboolean reduce, guint8 *own, guint8 *others, gsize bytes,
                guint reps, double *seconds, GError **error)
{
  if (!stw_comm_finish(c, c->barrier(c), "a barrier", error))
    return FALSE;
  double t0 = now();
  for (guint r = 0; r < reps; r++) {
    StwCommOp *op = reduce ? c->reduce_scatter(c, own, others, bytes, STW_DTYPE_FP32)
                           : c->all_gather(c, own, others, bytes);
    if (!stw_comm_finish(c, op, reduce ? "a reduce-scatter" : "an all-gather", error))
      return FALSE;
  }
  if (!stw_comm_finish(c, c->barrier(c), "a barrier", error))
    return FALSE;
  *seconds = (now() - t0) / reps;
  return TRUE;
}

/* The ranks' collectives as the runtime issues them (comm.h): a chunk group's all-gather and
 * reduce-scatter by chunk size, timed on rank 0. The cost model takes a collective over N ranks
 * as N - 1 steps of (latency + chunk bytes / bandwidth) (cost.h): the mean of the two at each
 * size, per step, fitted to that line gives the profile's interconnect latency and bandwidth,
 * and each size's own bandwidth beside the latency its curve by size. */
static gboolean
probe_collectives(StwComm *c, StwHardware *hw, GString *desc, StwTable *tab, GError **error)
{
  static const gsize sizes[] = { 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20 };
  const gsize largest = sizes[G_N_ELEMENTS(sizes) - 1], steps = c->world - 1;
  guint8 *own = g_malloc(largest), *others = g_malloc(steps * largest);
  memset(own, 1, largest);
  memset(others, 2, steps * largest);
  double x[G_N_ELEMENTS(sizes)], y[G_N_ELEMENTS(sizes)];
  gboolean ok = TRUE;
  g_string_append_printf(desc, " collectives of %u ranks (MPI):", c->world);
  for (gsize i = 0; i < G_N_ELEMENTS(sizes) && ok; i++) {
    gsize n = sizes[i];
    /* the same count on every rank: about 256 MiB received per collective kind */
    guint reps = (guint)CLAMP((256u << 20) / (n * steps), 4, 400);
    double gather = 0, scatter = 0;
    ok = time_collective(c, FALSE, own, others, n, reps, &gather, error) &&
         time_collective(c, TRUE, own, others, n, reps, &scatter, error);
    x[i] = (double)n;
    y[i] = (gather + scatter) / 2 / (double)steps;
    g_autofree char *sz = stw_size_format(n);
    g_autofree char *g = g_strdup_printf("%.1f us", gather * 1e6);
    g_autofree char *r = g_strdup_printf("%.1f us", scatter * 1e6);
    g_autofree char *bw = g_strdup_printf("%.2f GB/s", (double)n / y[i] / 1e9);
    stw_table_row(tab, sz, g, r, bw);
    g_string_append_printf(desc, " %s all-gather %.1f us, reduce-scatter %.1f us;", sz,
                           gather * 1e6, scatter * 1e6);
  }
  g_free(own);
  g_free(others);
  if (!ok)
    return FALSE;
  /* y = latency + x / bandwidth, fitted to the relative errors (each size counts the same,
   * not the largest most): least squares of (latency + x slope) / y against 1 */
  gsize k = G_N_ELEMENTS(sizes);
  double a = 0, b = 0, d = 0, e = 0, f = 0; /* normal equations [a b; b d] [l s] = [e f] */
  for (gsize i = 0; i < k; i++) {
    double u = 1 / y[i], v = x[i] / y[i];
    a += u * u, b += u * v, d += v * v, e += u, f += v;
  }
  double det = a * d - b * b;
  double latency = (e * d - b * f) / det, slope = (a * f - b * e) / det;
  if (slope <= 0) /* noise over the sizes: the largest's rate, no latency */
    slope = y[k - 1] / x[k - 1], latency = 0;
  if (latency < 0)
    latency = 0;
  g_strlcpy(hw->interconnect_kind, "mpi", sizeof hw->interconnect_kind);
  hw->interconnect_bytes_per_s = 1 / slope;
  hw->interconnect_latency_ns = (guint64)(latency * 1e9);
  /* and what each size measured, beside the latency: caches make the rate far from constant */
  for (gsize i = 0; i < k; i++) {
    double bare = y[i] - latency;
    hw->interconnect_by_size[i] = (StwBandwidthPoint){
      .bytes = (guint64)x[i], .bytes_per_s = x[i] / (bare > y[i] / 2 ? bare : y[i]) };
  }
  hw->n_interconnect_by_size = (guint)k;
  hw->node_gpus = MAX(hw->node_gpus, c->world);
  g_string_append_printf(desc, " fitted %.2f GB/s and %" G_GUINT64_FORMAT " ns per step",
                         hw->interconnect_bytes_per_s / 1e9, hw->interconnect_latency_ns);
  return TRUE;
}

int
stw_cmd_probe(int argc, char **argv)
{
  g_autofree char *base = NULL, *name = NULL, *output = NULL, *device = NULL;
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
    { "collectives", 0, 0, G_OPTION_ARG_NONE, &collectives,
      "under mpirun: also measure the ranks' all-gathers and reduce-scatters by chunk size, as "
      "the profile's interconnect", NULL },
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
           "Example: stowage probe --base H100-80GB-PCIe5 -o my-host.json\n"
           "         stowage probe --device cuda --base H200-SXM-141GB -o this-gpu.json\n"
           "         mpirun -np 2 stowage probe --device host --collectives -o ranks.json\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "probe"))
    return STW_EXIT_USAGE;
  if (argc > 1)
    return stw_cli_fail(STW_EXIT_USAGE, "probe: unexpected argument '%s'", argv[1]);
  StwHardware hw;
  int status;
  if (!stw_cli_option_needs("probe", "--name", name != NULL, "--output", output != NULL))
    return STW_EXIT_USAGE;
  if (name != NULL && !stw_hardware_name_ok(name))
    return stw_cli_fail(STW_EXIT_USAGE, "--name: '%s' is not a profile name: expected 1 to %zu "
                        "bytes of UTF-8 without control characters", name,
                        sizeof((StwHardware *)NULL)->name - 1);
  const StwCliFile in[] = { { "--base", base } }, out[] = { { "--output", output } };
  if (!stw_cli_outputs_apart("probe", in, 1, out, 1))
    return STW_EXIT_USAGE;
  if (!stw_cli_hardware(base != NULL ? base : STW_HARDWARE_DEFAULT, NULL, &hw, &status))
    return status;
  static const char *const devices[] = { "host", "cuda", NULL };
  int dev = -1;
  if (!stw_cli_parse_enum(device, "--device", devices, &dev))
    return STW_EXIT_USAGE;
  StwComm *comm = NULL;
  if (!stw_cli_start_ranks("probe", &comm, &status))
    return status;
  if (collectives && (comm == NULL || comm->world < 2)) {
    if (comm != NULL)
      comm->free(comm);
    return stw_cli_fail(STW_EXIT_USAGE, "probe: --collectives measures the collectives between "
                        "ranks: start it under mpirun with 2 ranks or more (mpirun -np 2 "
                        "stowage probe --collectives ...)");
  }
  g_autoptr(StwTable) links = stw_table_new(4, "<chunk", "all-gather", "reduce-scatter",
                                            "per step");
  GString *desc = g_string_new("probed:");
  if (comm != NULL) {
    GError *error = NULL;
    gboolean ok = !collectives || probe_collectives(comm, &hw, desc, links, &error);
    /* MPI ends here on every rank: the others leave, and rank 0 measures the rest alone */
    gboolean speaks = comm->rank == 0;
    guint32 world = comm->world;
    comm->free(comm);
    if (!ok) {
      g_string_free(desc, TRUE);
      return stw_cli_error(error);
    }
    if (!speaks) {
      g_string_free(desc, TRUE);
      return STW_EXIT_OK;
    }
    if (collectives) {
      stw_table_print(links, stdout);
      printf("collectives of %u ranks: %.2f GB/s and %" G_GUINT64_FORMAT " ns per step\n", world,
             hw.interconnect_bytes_per_s / 1e9, hw.interconnect_latency_ns);
    }
  }
  /* the device before the host: a GPU that is not there fails before anything is measured */
  StwBackend *be = NULL;
  if (dev >= 0) {
    GError *error = NULL;
    be = dev == 0 ? stw_backend_host_new()
                  : stw_backend_cuda_new(0, stw_backend_cuda_arena_for(1u << 30), &error);
    if (be == NULL) {
      g_string_free(desc, TRUE);
      return stw_cli_error(error);
    }
  }
  guint threads = g_get_num_processors();
  static const gsize sizes[] = { 64 << 10, 1 << 20, 16 << 20, 256 << 20 };
  g_autoptr(StwTable) tab = stw_table_new(2, "<memcpy size", "bandwidth");
  g_string_append(desc, " memcpy");
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
  if (dev >= 0) {
    g_autoptr(StwTable) copies = stw_table_new(3, dev == 0 ? "<emulated device copy" : "<GPU copy",
                                               "H2D", "D2H");
    g_string_append(desc, dev == 0 ? " emulated device copies (H2D/D2H):"
                                   : " GPU pinned copies (H2D/D2H):");
    probe_device(be, &hw, desc, copies);
    be->free(be);
    stw_table_print(copies, stdout);
    printf("copy latency %" G_GUINT64_FORMAT " ns\n", hw.pcie_latency_ns);
    if (dev == 0)
      printf("copy interference %.2f: compute time lost per second of copy beside it\n",
             hw.copy_interference);
    if (dev == 0) { /* the emulated device is the host itself */
      memcpy(hw.pageable, hw.pinned, sizeof hw.pinned);
      hw.n_pageable = hw.n_pinned;
      hw.pcie_generation = 1;
      hw.gpu_memory_bytes = STW_TiB;
      hw.compute_on_host = TRUE;
      g_strlcpy(hw.gpu_model, "stowage host backend (emulated device)", sizeof hw.gpu_model);
    } else {
      g_string_append_printf(desc, "; the GPU's compute, memory and pageable copies from %s",
                             hw.name);
    }
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
    GError *error = NULL;
    if (!stw_hardware_save(&hw, desc->str, output, &error)) {
      g_string_free(desc, TRUE);
      return stw_cli_error(error);
    }
    printf("wrote %s (profile %s)\n", output, hw.name);
  }
  g_string_free(desc, TRUE);
  return STW_EXIT_OK;
}
