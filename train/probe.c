/* probe.c — measuring this machine into a hardware profile: `stowage probe` in the library;
 * see probe.h. */
#include "config.h"

#include <stowage/probe.h>

#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stowage/adam.h>
#include <stowage/backend.h>
#include <stowage/compute.h>
#include <stowage/cost.h>
#include <stowage/runtime.h>
#include <stowage/storage.h>
#include <stowage/units.h>

#include "json.h"

#define ADAM_ELEMS (8u << 20)   /* per thread: 8M elements, 128 MiB of state, */
#define ADAM_ALL_ELEMS (256u << 20) /* and 4 GiB for all the threads at most: beyond 32 threads
                                     * each steps its share, still far beyond its caches */
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
  float *p, *g;
  void *m, *v;
  gsize n;        /* elements */
  StwDtype state; /* the moments' dtype */
  guint64 steps;
  double seconds;
} AdamJob;

static gpointer
adam_job(gpointer data)
{
  AdamJob *j = data;
  StwAdamConfig c;
  stw_adam_config_init(&c);
  c.state_dtype = j->state;
  stw_adam_update(j->p, j->g, j->m, j->v, j->n, &c, 1); /* touch every page first */
  double t0 = now();
  do
    stw_adam_update(j->p, j->g, j->m, j->v, j->n, &c, ++j->steps + 1);
  while ((j->seconds = now() - t0) < MIN_SECONDS);
  return NULL;
}

/* CPU Adam elements per second over THREADS threads, the moments in STATE. */
static double
adam_rate(guint threads, StwDtype state)
{
  AdamJob *jobs = g_new0(AdamJob, threads);
  GThread **th = g_new(GThread *, threads);
  gsize n = MIN(ADAM_ELEMS, ADAM_ALL_ELEMS / MAX(threads, 1));
  for (guint i = 0; i < threads; i++) {
    jobs[i].state = state;
    jobs[i].n = n;
    jobs[i].p = g_new(float, n);
    jobs[i].g = g_new(float, n);
    jobs[i].m = g_malloc0(n * stw_dtype_bytes(state));
    jobs[i].v = g_malloc0(n * stw_dtype_bytes(state));
    for (gsize k = 0; k < n; k++) {
      jobs[i].p[k] = 0.01f * (float)(k % 97);
      jobs[i].g[k] = 0.001f * (float)(k % 13) - 0.006f;
    }
  }
  for (guint i = 0; i < threads; i++)
    th[i] = g_thread_new("adam", adam_job, &jobs[i]);
  double rate = 0;
  for (guint i = 0; i < threads; i++) {
    g_thread_join(th[i]);
    rate += (double)jobs[i].steps * (double)n / jobs[i].seconds;
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

/* The storage tier's checksum as it runs, on the OpenMP team, over a 64 MiB region (a chunk's
 * state is tens to hundreds of MiB): bytes summed a second. */
static double
checksum_rate(void)
{
  gsize size = 64u << 20;
  guint8 *a = g_malloc(size);
  memset(a, 3, size);
  guint64 summed = 0, seen = 0;
  double t0 = now(), t;
  do {
    seen ^= stw_storage_checksum(a, size);
    a[seen % size] ^= 1; /* keep each sum observable */
    summed += size;
  } while ((t = now() - t0) < MIN_SECONDS);
  g_free(a);
  return (double)summed / t;
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

/* ---- the device link ---------------------------------------------------------------------- */

/* A backend's device link: a copy's bandwidth by transfer size both ways (the profile's curve is
 * their mean), as the runtime uses it (copies queued, then waited for), and its latency: the time
 * of a 4 KiB copy among 64 queued back to back (a lone copy also waits for its engine to wake).
 * The host backend's emulated device, or a GPU's pinned copies through the CUDA backend. */
static gboolean
probe_device(StwBackend *be, StwProbe *p, GString *desc, GError **error)
{
  static const gsize sizes[] = { 64 << 10, 1 << 20, 16 << 20, 256 << 20 };
  StwHardware *hw = &p->profile;
  gsize span = 512u << 20;
  guint8 *host = be->host_alloc(be, span), *dev = be->device_alloc(be, span);
  if (host != NULL)
    memset(host, 1, span);
  if (host == NULL || dev == NULL) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE, "probe: no %s memory for "
                "the copies (512 MiB): %s", host ? "device" : "host", be->error);
    if (host != NULL)
      be->host_free(be, host);
    if (dev != NULL)
      be->device_free(be, dev);
    return FALSE;
  }
  guint64 latency_ns = (guint64)(time_copies(be, STW_COPY_H2D, host, dev, 4096, 16 * 64) /
                                 (16 * 64) * 1e9);
  p->copy_latency_ns = hw->pcie_latency_ns = latency_ns;
  g_string_append(desc, be->device_is_host ? " emulated device copies (H2D/D2H):"
                                           : " GPU pinned copies (H2D/D2H):");
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
    p->copy_sizes[i] = n;
    p->h2d_bytes_per_s[i] = bw[0];
    p->d2h_bytes_per_s[i] = bw[1];
    hw->pinned[i] = (StwBandwidthPoint){ .bytes = n, .bytes_per_s = (bw[0] + bw[1]) / 2 };
    g_autofree char *sz = stw_size_format(n);
    g_string_append_printf(desc, " %s %.2f/%.2f GB/s;", sz, bw[0] / 1e9, bw[1] / 1e9);
  }
  hw->n_pinned = G_N_ELEMENTS(sizes);
  g_string_append_printf(desc, " latency %" G_GUINT64_FORMAT " ns", latency_ns);
  if (be->device_is_host) {
    p->copy_interference = hw->copy_interference =
        copy_interference(be, host, dev, stw_hardware_pcie_bandwidth(hw, FEED_BYTES, TRUE));
    const char *threads = g_getenv("OMP_NUM_THREADS");
    g_string_append_printf(desc, "; copy interference %.2f (compute threads: %s)",
                           hw->copy_interference,
                           threads != NULL ? threads : "OpenMP's default");
  }
  be->device_free(be, dev);
  be->host_free(be, host);
  return TRUE;
}

/* ---- the ranks' collectives --------------------------------------------------------------- */

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

gboolean
stw_probe_collectives(StwComm *c, StwProbe *p, GError **error)
{
  static const gsize sizes[] = { 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20 };
  G_STATIC_ASSERT(G_N_ELEMENTS(sizes) == STW_PROBE_COLLECTIVE_SIZES);
  if (c == NULL || c->world < 2) {
    g_set_error_literal(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE, "probe: "
                        "--collectives measures the collectives between ranks: start it under "
                        "mpirun with 2 ranks or more (mpirun -np 2 stowage probe --collectives "
                        "...)");
    return FALSE;
  }
  const gsize largest = sizes[G_N_ELEMENTS(sizes) - 1], steps = c->world - 1;
  guint8 *own = g_malloc(largest), *others = g_malloc(steps * largest);
  memset(own, 1, largest);
  memset(others, 2, steps * largest);
  gboolean ok = TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS(sizes) && ok; i++) {
    gsize n = sizes[i];
    /* the same count on every rank: about 256 MiB received per collective kind */
    guint reps = (guint)CLAMP((256u << 20) / (n * steps), 4, 400);
    p->collective_sizes[i] = n;
    ok = time_collective(c, FALSE, own, others, n, reps, &p->gather_s[i], error) &&
         time_collective(c, TRUE, own, others, n, reps, &p->scatter_s[i], error);
  }
  g_free(own);
  g_free(others);
  if (ok)
    p->world = c->world;
  return ok;
}

/* The cost model takes a collective over N ranks as N - 1 steps of (latency + chunk bytes /
 * bandwidth) (cost.h): the mean of the two kinds at each size, per step, fitted to that line
 * gives the profile's interconnect latency and bandwidth, and each size's own bandwidth beside
 * the latency its curve by size. */
static void
fit_collectives(StwProbe *p, GString *desc)
{
  StwHardware *hw = &p->profile;
  gsize k = STW_PROBE_COLLECTIVE_SIZES, steps = p->world - 1;
  double x[STW_PROBE_COLLECTIVE_SIZES], y[STW_PROBE_COLLECTIVE_SIZES];
  g_string_append_printf(desc, " collectives of %u ranks (MPI):", p->world);
  for (gsize i = 0; i < k; i++) {
    x[i] = (double)p->collective_sizes[i];
    y[i] = (p->gather_s[i] + p->scatter_s[i]) / 2 / (double)steps;
    g_autofree char *sz = stw_size_format(p->collective_sizes[i]);
    g_string_append_printf(desc, " %s all-gather %.1f us, reduce-scatter %.1f us;", sz,
                           p->gather_s[i] * 1e6, p->scatter_s[i] * 1e6);
  }
  /* y = latency + x / bandwidth, fitted to the relative errors (each size counts the same,
   * not the largest most): least squares of (latency + x slope) / y against 1 */
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
  hw->node_gpus = MAX(hw->node_gpus, p->world);
  /* the link measured between these ranks is theirs, sockets and all */
  hw->gpus_per_socket = 0;
  hw->cross_socket_bytes_per_s = 0;
  g_string_append_printf(desc, " fitted %.2f GB/s and %" G_GUINT64_FORMAT " ns per step",
                         hw->interconnect_bytes_per_s / 1e9, hw->interconnect_latency_ns);
}

/* ---- the host ----------------------------------------------------------------------------- */

/* The host's CPU as /proc/cpuinfo TEXT names it: its first "model name", with "Nx " before it
 * where N sockets ("physical id") hold such cores; NULL where TEXT names none. */
char *
stw_probe_cpu_model(const char *text)
{
  g_autofree char *model = NULL;
  g_autoptr(GHashTable) sockets = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_auto(GStrv) lines = g_strsplit(text != NULL ? text : "", "\n", -1);
  for (char **l = lines; *l != NULL; l++) {
    const char *colon = strchr(*l, ':');
    if (colon == NULL)
      continue;
    g_autofree char *key = g_strstrip(g_strndup(*l, (gsize)(colon - *l)));
    g_autofree char *value = g_strstrip(g_strdup(colon + 1));
    /* the name as a profile keeps it: printable ASCII, one space between words */
    for (char *c = value; *c != '\0'; c++)
      if (!g_ascii_isprint(*c))
        *c = ' ';
    if (strcmp(key, "model name") == 0 && model == NULL && value[0] != '\0') {
      g_auto(GStrv) words = g_strsplit_set(value, " \t", -1);
      GString *joined = g_string_new(NULL);
      for (char **w = words; *w != NULL; w++)
        if (**w != '\0')
          g_string_append_printf(joined, "%s%s", joined->len > 0 ? " " : "", *w);
      model = g_string_free(joined, FALSE);
    } else if (strcmp(key, "physical id") == 0)
      g_hash_table_add(sockets, g_steal_pointer(&value));
  }
  if (model == NULL)
    return NULL;
  guint n = g_hash_table_size(sockets);
  char *said = n > 1 ? g_strdup_printf("%ux %s", n, model) : g_strdup(model);
  gsize most = sizeof ((StwHardware){ 0 }).cpu_model - 1; /* what a profile's cpu.model holds */
  if (strlen(said) > most)
    said[most] = '\0';
  return said;
}

/* memcpy by size; CPU Adam at 1, 2, 4, ... threads and all (it is bound by memory bandwidth,
 * so it stops scaling where the host's memory does); the host memory's bandwidth, in bytes
 * read and written a second: the most that copying (each byte copied is read and written) and
 * CPU Adam (its 28 bytes an element) reach on every thread. */
static void
probe_host(StwProbe *p, GString *desc)
{
  static const gsize sizes[] = { 64 << 10, 1 << 20, 16 << 20, 256 << 20 };
  g_string_append(desc, " memcpy");
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    p->memcpy_sizes[i] = sizes[i];
    p->memcpy_bytes_per_s[i] = memcpy_rate(sizes[i]);
    g_autofree char *sz = stw_size_format(sizes[i]);
    g_string_append_printf(desc, " %s %.2f GB/s;", sz, p->memcpy_bytes_per_s[i] / 1e9);
  }
  g_autofree char *cpuinfo = NULL;
  g_autofree char *cpu = g_file_get_contents("/proc/cpuinfo", &cpuinfo, NULL, NULL)
                             ? stw_probe_cpu_model(cpuinfo)
                             : NULL;
  /* the CPU measured, not the base profile's */
  g_strlcpy(p->profile.cpu_model, cpu != NULL ? cpu : "", sizeof p->profile.cpu_model);
  if (cpu != NULL)
    g_string_append_printf(desc, " CPU %s;", cpu);
  p->threads = g_get_num_processors();
  /* the threads the runtime's CPU Adam runs on: its OpenMP team's (a team larger than the
   * processors shares them: measured on every processor, 128 MiB a thread) */
#ifdef _OPENMP
  p->adam_team = (guint)CLAMP(omp_get_max_threads(), 1, (int)MAX(p->threads, 1));
#else
  p->adam_team = 1;
#endif
  /* 1, 2, 4, ... up to every processor, and the team's count among them */
  guint team_at = 0;
  for (guint pow = 1; p->n_adam < STW_PROBE_MAX_ADAM - 1; pow *= 2) {
    guint n = MIN(pow, p->threads);
    guint before = p->n_adam > 0 ? p->adam_threads[p->n_adam - 1] : 0;
    if (before < p->adam_team && p->adam_team < n) /* the team between two doublings */
      p->adam_threads[team_at = p->n_adam++] = p->adam_team;
    if (n == p->adam_team)
      team_at = p->n_adam;
    p->adam_threads[p->n_adam++] = n;
    if (n == p->threads)
      break;
  }
  for (guint i = 0; i < p->n_adam; i++) {
    guint n = p->adam_threads[i];
    p->adam_elems_per_s[i] = adam_rate(n, STW_DTYPE_FP32);
    g_string_append_printf(desc, " CPU Adam %.3g elements/s on %u thread%s;",
                           p->adam_elems_per_s[i], n, n > 1 ? "s" : "");
  }
  p->host_copy_bytes_per_s = host_memory_rate(p->threads);
  p->host_memory_bytes_per_s = MAX(2 * p->host_copy_bytes_per_s,
                                   p->adam_elems_per_s[p->n_adam - 1] * STW_ADAM_PROFILE_BYTES);
  g_string_append_printf(desc,
                         " host memory %.2f GB/s copied on %u threads, %.2f GB/s read and"
                         " written;",
                         p->host_copy_bytes_per_s / 1e9, p->threads,
                         p->host_memory_bytes_per_s / 1e9);
  /* CPU Adam as the runtime will run it, on its team: a profile taken on every core of a
   * machine whose runs step on one (OMP_NUM_THREADS=1) predicted their optimizer 8x too fast */
  p->profile.cpu_adam_elems_per_s = p->adam_elems_per_s[team_at];
  g_string_append_printf(desc, " CPU Adam on the OpenMP team's %u thread%s;", p->adam_team,
                         p->adam_team > 1 ? "s" : "");
  /* with bf16 moments, on the team: bound by memory it moves fewer bytes, bound by its
   * arithmetic (a few cores) it may not gain, and the simulator takes what was measured */
  p->adam_bf16_elems_per_s = adam_rate(p->adam_team, STW_DTYPE_BF16);
  p->profile.cpu_adam_bf16_elems_per_s = p->adam_bf16_elems_per_s;
  g_string_append_printf(desc, " CPU Adam with bf16 moments %.3g elements/s;",
                         p->adam_bf16_elems_per_s);
  /* the storage tier's checksum of each region it writes and reads, on the same team */
  p->profile.cpu_checksum_bytes_per_s = checksum_rate();
  g_string_append_printf(desc, " the storage tier's checksum %.2f GB/s;",
                         p->profile.cpu_checksum_bytes_per_s / 1e9);
  p->profile.host_memory_bytes_per_s = p->host_memory_bytes_per_s;
}

/* This process's resident memory (/proc/self/statm), 0 where it cannot be read. */
static guint64
process_rss_bytes(void)
{
  g_autofree char *text = NULL;
  unsigned long long size, resident;
  if (!g_file_get_contents("/proc/self/statm", &text, NULL, NULL) ||
      sscanf(text, "%llu %llu", &size, &resident) != 2)
    return 0;
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (guint64)resident * (guint64)page : 0;
}

void
stw_probe_device_memory(StwHardware *hw, guint64 total, guint64 outside, GString *desc)
{
  if (total == 0)
    return;
  g_autofree char *t = stw_size_format(total);
  g_autofree char *base = stw_size_format(hw->gpu_memory_bytes);
  g_string_append_printf(desc, "; the GPU's memory as CUDA gives it %s (the base's %s)", t, base);
  hw->gpu_memory_bytes = total;
  if (outside > 0 && outside < total) {
    g_autofree char *o = stw_size_format(outside);
    g_string_append_printf(desc, ", %s of it held by this process outside its arena", o);
    if (outside > hw->gpu_process_bytes)
      hw->gpu_process_bytes = outside;
  }
  if (hw->gpu_process_bytes >= total) /* a base's figure for a larger card */
    hw->gpu_process_bytes = outside < total ? outside : 0;
}

gboolean
stw_probe_run(const StwProbeOptions *o, StwProbe *p, GError **error)
{
  p->profile = o->base;
  p->device = o->device;
  StwHardware *hw = &p->profile;
  /* the device before the host: a GPU that is not there fails before anything is measured */
  StwBackend *be = NULL;
  if (o->device != STW_PROBE_NO_DEVICE) {
    be = o->device == STW_PROBE_HOST
             ? stw_backend_host_new()
             : stw_backend_cuda_new(0, stw_backend_arena_for(1u << 30), error);
    if (be == NULL)
      return FALSE;
  }
  g_autoptr(GString) desc = g_string_new("probed:");
  if (p->world > 1)
    fit_collectives(p, desc);
  /* the storage before the host too: a directory that cannot be measured fails first */
  g_autoptr(GString) storage = g_string_new("");
  if (o->nvme_dir != NULL && !stw_probe_storage(o->nvme_dir, o->nvme_depth, p, storage, error)) {
    if (be != NULL)
      be->free(be);
    return FALSE;
  }
  probe_host(p, desc);
  if (be != NULL) {
    gboolean ok = probe_device(be, p, desc, error);
    if (ok && o->device != STW_PROBE_HOST)
      stw_probe_device_memory(hw, be->memory_total != NULL ? be->memory_total(be) : 0,
                              be->memory_outside != NULL ? be->memory_outside(be) : 0, desc);
    be->free(be);
    if (!ok)
      return FALSE;
    if (o->device == STW_PROBE_HOST) { /* the emulated device is the host itself */
      /* what a stowage process holds beside its model state, measured here: this process,
       * once its buffers are given back, with the libraries' lazily made state (the BLAS's
       * buffers, the threads' stacks) that the compute above brought in */
      guint64 rss = process_rss_bytes();
      if (rss > 0) {
        hw->cpu_overhead_bytes = rss;
        g_autofree char *r = stw_size_format(rss);
        g_string_append_printf(desc, "; the process %s resident beside its model state", r);
      }
      memcpy(hw->pageable, hw->pinned, sizeof hw->pinned);
      hw->n_pageable = hw->n_pinned;
      hw->pcie_generation = 1;
      hw->gpu_memory_bytes = STW_TiB;
      hw->compute_on_host = TRUE;
      g_strlcpy(hw->gpu_model, "stowage host backend (emulated device)", sizeof hw->gpu_model);
    } else {
      g_string_append_printf(desc, "; the GPU's compute and pageable copies from %s%s",
                             o->base.name,
                             hw->gpu_memory_bytes == o->base.gpu_memory_bytes ? ", its memory too"
                                                                              : "");
    }
  } else {
    g_string_append_printf(desc, " GPU and PCIe from %s (no GPU measured)", o->base.name);
  }
  g_string_append(desc, storage->str);
  g_strlcpy(hw->name, o->name != NULL ? o->name : "probed", sizeof hw->name);
  if (o->name == NULL) {
    g_strlcat(hw->name, "-", sizeof hw->name);
    g_strlcat(hw->name, g_get_host_name(), sizeof hw->name);
  }
  p->description = g_strdup(desc->str);
  return TRUE;
}

void
stw_probe_clear(StwProbe *p)
{
  g_clear_pointer(&p->description, g_free);
}

/* ---- the request and the record ------------------------------------------------------------ */

static const char *const probe_options[] = { "base", "name", "device", "collectives", "nvme",
                                             "nvme-depth", NULL };
static const char *const probe_flags[] = { "collectives", NULL };
const StwRequestKind stw_request_probe_kind = { "probe", probe_options, probe_flags };

gboolean
stw_request_probe(const StwRequest *r, StwProbeOptions *out, GError **error)
{
  memset(out, 0, sizeof *out);
  const char *name = stw_request_get(r, "name"), *base = stw_request_get(r, "base");
  if (name != NULL && !stw_hardware_name_ok(name)) {
    g_set_error(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE, "--name: '%s' is not a "
                "profile name: expected 1 to %zu bytes of UTF-8 without control characters",
                name, sizeof out->base.name - 1);
    return FALSE;
  }
  out->name = name;
  out->collectives = stw_request_get(r, "collectives") != NULL;
  static const char *const devices[] = { "host", "cuda", NULL };
  int dev = STW_PROBE_NO_DEVICE;
  if (!stw_hardware_lookup(base != NULL ? base : STW_HARDWARE_DEFAULT, &out->base, error) ||
      !stw_request_enum(r, "device", devices, &dev, error))
    return FALSE;
  out->device = (StwProbeDevice)dev;
  out->nvme_dir = stw_request_get(r, "nvme");
  guint64 depth = 0;
  if (!stw_request_count(r, "nvme-depth", 1, STW_STORAGE_MAX_QUEUE_DEPTH, &depth, error))
    return FALSE;
  if (depth != 0 && out->nvme_dir == NULL) {
    g_set_error(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE, "--nvme-depth goes with "
                "--nvme DIR; without it the option would be ignored");
    return FALSE;
  }
  out->nvme_depth = (guint32)depth;
  return TRUE;
}

char *
stw_probe_json(const StwProbe *p)
{
  cJSON *root = cJSON_CreateObject();
  cJSON *memcpy_ = cJSON_AddArrayToObject(root, "memcpy");
  for (gsize i = 0; i < STW_PROBE_COPY_SIZES; i++) {
    cJSON *o = cJSON_CreateObject();
    stw_json_add_u64(o, "bytes", p->memcpy_sizes[i]);
    cJSON_AddNumberToObject(o, "bytes_per_s", p->memcpy_bytes_per_s[i]);
    cJSON_AddItemToArray(memcpy_, o);
  }
  cJSON *adam = cJSON_AddArrayToObject(root, "cpu_adam");
  for (guint i = 0; i < p->n_adam; i++) {
    cJSON *o = cJSON_CreateObject();
    stw_json_add_u64(o, "threads", p->adam_threads[i]);
    cJSON_AddNumberToObject(o, "elems_per_s", p->adam_elems_per_s[i]);
    cJSON_AddItemToArray(adam, o);
  }
  stw_json_add_u64(root, "cpu_adam_team", p->adam_team);
  cJSON_AddNumberToObject(root, "cpu_adam_bf16_elems_per_s", p->adam_bf16_elems_per_s);
  cJSON_AddNumberToObject(root, "checksum_bytes_per_s", p->profile.cpu_checksum_bytes_per_s);
  stw_json_add_u64(root, "threads", p->threads);
  cJSON_AddNumberToObject(root, "host_copy_bytes_per_s", p->host_copy_bytes_per_s);
  cJSON_AddNumberToObject(root, "host_memory_bytes_per_s", p->host_memory_bytes_per_s);
  if (p->device != STW_PROBE_NO_DEVICE) {
    cJSON *dev = cJSON_AddObjectToObject(root, "device");
    cJSON_AddStringToObject(dev, "kind", p->device == STW_PROBE_HOST ? "host" : "cuda");
    cJSON *copies = cJSON_AddArrayToObject(dev, "copies");
    for (gsize i = 0; i < STW_PROBE_COPY_SIZES; i++) {
      cJSON *o = cJSON_CreateObject();
      stw_json_add_u64(o, "bytes", p->copy_sizes[i]);
      cJSON_AddNumberToObject(o, "h2d_bytes_per_s", p->h2d_bytes_per_s[i]);
      cJSON_AddNumberToObject(o, "d2h_bytes_per_s", p->d2h_bytes_per_s[i]);
      cJSON_AddItemToArray(copies, o);
    }
    stw_json_add_u64(dev, "latency_ns", p->copy_latency_ns);
    cJSON_AddNumberToObject(dev, "copy_interference", p->copy_interference);
  }
  if (p->world > 1) {
    cJSON *coll = cJSON_AddObjectToObject(root, "collectives");
    stw_json_add_u64(coll, "ranks", p->world);
    cJSON *sizes = cJSON_AddArrayToObject(coll, "by_size");
    for (gsize i = 0; i < STW_PROBE_COLLECTIVE_SIZES; i++) {
      cJSON *o = cJSON_CreateObject();
      stw_json_add_u64(o, "bytes", p->collective_sizes[i]);
      cJSON_AddNumberToObject(o, "all_gather_s", p->gather_s[i]);
      cJSON_AddNumberToObject(o, "reduce_scatter_s", p->scatter_s[i]);
      cJSON_AddItemToArray(sizes, o);
    }
  }
  if (p->storage) {
    cJSON *st = cJSON_AddObjectToObject(root, "storage");
    cJSON_AddStringToObject(st, "engine", p->storage_engine);
    cJSON_AddBoolToObject(st, "direct", p->storage_direct);
    cJSON_AddStringToObject(st, "fallback", p->storage_fallback);
    cJSON_AddStringToObject(st, "file_system", p->storage_fs);
    stw_json_add_u64(st, "file_bytes", p->storage_file_bytes);
    cJSON *by_size = cJSON_AddArrayToObject(st, "by_size");
    for (gsize i = 0; i < STW_PROBE_STORAGE_SIZES; i++) {
      cJSON *o = cJSON_CreateObject();
      stw_json_add_u64(o, "bytes", p->storage_sizes[i]);
      cJSON_AddNumberToObject(o, "read_bytes_per_s", p->storage_read_bytes_per_s[i]);
      cJSON_AddNumberToObject(o, "write_bytes_per_s", p->storage_write_bytes_per_s[i]);
      cJSON_AddItemToArray(by_size, o);
    }
    cJSON *by_depth = cJSON_AddArrayToObject(st, "reads_by_queue_depth");
    for (gsize i = 0; i < STW_PROBE_STORAGE_DEPTHS; i++) {
      cJSON *o = cJSON_CreateObject();
      stw_json_add_u64(o, "queue_depth", p->storage_depths[i]);
      cJSON_AddNumberToObject(o, "bytes_per_s", p->storage_depth_read_bytes_per_s[i]);
      cJSON_AddItemToArray(by_depth, o);
    }
    cJSON_AddNumberToObject(st, "mixed_bytes_per_s", p->storage_mixed_bytes_per_s);
    stw_json_add_u64(st, "latency_ns", p->storage_latency_ns);
  }
  cJSON *profile = stw_hardware_to_json(&p->profile);
  cJSON_AddStringToObject(profile, "description", p->description);
  cJSON_AddItemToObject(root, "profile", profile);
  return stw_json_take_text(root, TRUE);
}
