/* bench-train.c — the trainer at full machine speed: one configuration per process, so that its
 * peak RSS is its own (bench/train.sh runs them in interleaved rounds).
 *
 * Usage:
 *   bench-train sgemm L C T B          the BLAS's sgemm GFLOP/s at the model's matmul shapes
 *   bench-train plan L C H T B DIR HW  profile two steps, plan at 25% of the model data (plus the
 *                                      activation peak) on hardware profile HW (this machine's,
 *                                      from `stowage probe --device host` at the same threads),
 *                                      write DIR/trace.json and DIR/plan.json
 *   bench-train adam N PAGES STEPS   AdamW over N elements, the arrays on 4 KiB or 2 MiB pages
 *                                      (PAGES 4k or 2m, madvise): a kernel with AdamW's own memory
 *                                      streams (GB/s: the bound), then the library's CPU Adam for
 *                                      each compute copy and moments dtype (G elements/s, GB/s of
 *                                      the bytes it moves), the median of STEPS steps each
 *   bench-train run L C H T B STEPS [DIR]
 *                                      STEPS steps after one warm-up: everything resident (profile
 *                                      mode with the default budget, as `stowage train` runs), or
 *                                      replaying DIR's plan; one line of results
 *
 * The threads are OpenMP's (OMP_NUM_THREADS). FLOPs count the matmuls only (forward and the two
 * backward GEMMs): attention, LayerNorm, GELU and AdamW are the rest of the step.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <glib.h>

#include <stowage/compute.h>
#include <stowage/cost.h>
#include <stowage/planner.h>
#include <stowage/trainer.h>
#include <stowage/units.h>

#include "kernels.h"

static double
seconds(void)
{
  return (double)g_get_monotonic_time() / 1e6;
}

static void
config(StwTrainerConfig *c, char **argv)
{
  stw_trainer_config_init(c);
  c->layers = (guint64)atoi(argv[0]);
  c->width = (guint64)atoi(argv[1]);
  c->heads = (guint64)atoi(argv[2]);
  c->context = (guint64)atoi(argv[3]);
  c->batch = (guint64)atoi(argv[4]);
}

static GString *
text(void)
{
  GString *t = g_string_new(NULL);
  while (t->len < 1000000)
    g_string_append(t, "Stowage plans where the model data of a large-model training job lives, "
                       "GPU or CPU, at every operator of an iteration, and trains with the plan. ");
  return t;
}

/* The matmuls of one step: forward, and twice that backward (input and weight gradients). */
static double
matmul_flops(const StwTrainerConfig *c)
{
  double bt = (double)(c->batch * c->context), w = (double)c->width;
  return 3.0 * 2.0 * bt * ((double)c->layers * 12.0 * w * w + w * 256.0);
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void
die(const char *what, GError *error)
{
  fprintf(stderr, "bench-train: %s: %s\n", what, error != NULL ? error->message : "failed");
  exit(1);
}

/* sgemm GFLOP/s over the forward GEMMs of one block (QKV, projection, MLP in and out), as the
 * trainer issues them, each repeated for a quarter of a second */
static int
sgemm(char **argv)
{
  int C = atoi(argv[2]), BT = atoi(argv[3]) * atoi(argv[4]);
  int ocs[][2] = { { C, 3 * C }, { C, C }, { C, 4 * C }, { 4 * C, C } };
  double flops = 0, secs = 0;
  for (gsize k = 0; k < G_N_ELEMENTS(ocs); k++) {
    int in = ocs[k][0], out = ocs[k][1];
    float *x = g_new(float, (gsize)BT * in), *w = g_new(float, (gsize)out * in);
    float *y = g_new(float, (gsize)BT * out);
    for (gsize i = 0; i < (gsize)BT * in; i++)
      x[i] = (float)(i % 7) * 0.1f;
    for (gsize i = 0; i < (gsize)out * in; i++)
      w[i] = (float)(i % 5) * 0.1f;
    StwGemm g = stw_cb_matmul_forward_gemm(BT, in, out);
    const float *ops[] = { x, w, y, NULL, NULL, NULL };
    stw_gemm_host(&g, ops);
    double t0 = seconds(), t;
    int reps = 0;
    do {
      stw_gemm_host(&g, ops);
      reps++;
    } while ((t = seconds() - t0) < 0.25);
    flops += 2.0 * BT * in * out * reps;
    secs += t;
    g_free(x);
    g_free(w);
    g_free(y);
  }
  printf("sgemm %.1f GFLOP/s\n", flops / secs / 1e9);
  return 0;
}

static int
plan(char **argv)
{
  StwTrainerConfig c;
  config(&c, argv + 1);
  g_autoptr(GString) t = text();
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_TiB };
  GError *error = NULL;
  StwTrainer *tr = stw_trainer_new(&c, (const guint8 *)t->str, t->len, &ro, be, &error);
  float loss;
  if (tr == NULL || !stw_trainer_step(tr, &loss, &error) || !stw_trainer_step(tr, &loss, &error))
    die("profile", error);
  StwTrace *trace = stw_runtime_trace(stw_trainer_runtime(tr));
  guint64 peak = 0, model = 0;
  for (guint i = 0; i < trace->ops->len; i++)
    peak = MAX(peak, stw_trace_op(trace, i)->nonmodel_peak_bytes);
  for (guint i = 0; i < trace->tensors->len; i++)
    model += 16 * stw_trace_tensor(trace, i)->numel;
  StwHardware hw;
  if (!stw_hardware_lookup(argv[7], &hw, &error))
    die("hardware", error);
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = peak + model / 4;
  o.budgets.cpu_bytes = STW_TiB;
  g_autofree char *tf = g_build_filename(argv[6], "trace.json", NULL);
  g_autofree char *pf = g_build_filename(argv[6], "plan.json", NULL);
  g_autoptr(StwPlan) p = stw_planner_plan(trace, tf, &o, &error);
  if (p == NULL || !stw_trace_save(trace, tf, &error) || !stw_plan_save(p, trace, pf, &error))
    die("plan", error);
  g_autofree char *b = stw_size_format(o.budgets.gpu_bytes);
  printf("planned at %s: %s\n", b, pf);
  stw_trainer_free(tr);
  be->free(be);
  return 0;
}

static int
run(int argc, char **argv)
{
  StwTrainerConfig c;
  config(&c, argv + 1);
  guint steps = (guint)atoi(argv[6]);
  g_autoptr(GString) t = text();
  GError *error = NULL;
  StwRuntimeOptions ro = { .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_TiB };
  g_autoptr(StwPlan) p = NULL;
  g_autoptr(StwTrace) trace = NULL;
  if (argc > 7) {
    g_autofree char *tf = g_build_filename(argv[7], "trace.json", NULL);
    g_autofree char *pf = g_build_filename(argv[7], "plan.json", NULL);
    if ((trace = stw_trace_load(tf, &error)) == NULL || (p = stw_plan_load(pf, &error)) == NULL)
      die("load", error);
    ro = (StwRuntimeOptions){ .mode = STW_RUNTIME_REPLAY, .device_bytes = p->budgets.gpu_bytes,
                              .plan = p, .plan_trace = trace };
  }
  StwBackend *be = stw_backend_host_new();
  StwTrainer *tr = stw_trainer_new(&c, (const guint8 *)t->str, t->len, &ro, be, &error);
  float loss;
  if (tr == NULL || !stw_trainer_step(tr, &loss, &error))
    die("warm-up", error);
  guint64 wait0_ns = stw_runtime_stats(stw_trainer_runtime(tr))->copy_wait_ns;
  g_autofree double *step_s = g_new(double, steps);
  for (guint s = 0; s < steps; s++) {
    double t0 = seconds();
    if (!stw_trainer_step(tr, &loss, &error))
      die("step", error);
    step_s[s] = seconds() - t0;
  }
  qsort(step_s, steps, sizeof *step_s, cmp_double);
  double median = step_s[steps / 2];
  const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(tr));
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  g_autofree char *moved = stw_size_format(st->h2d_bytes + st->d2h_bytes);
  printf("tokens/s %.1f  step %.3f s  matmul %.1f GFLOP/s  rss %.0f MiB  moved %s/step  "
         "copy-wait %.3f s/step  loss %.6f\n", (double)(c.batch * c.context) / median, median,
         matmul_flops(&c) / median / 1e9, (double)ru.ru_maxrss / 1024.0, moved,
         (double)(st->copy_wait_ns - wait0_ns) / 1e9 / steps, loss);
  stw_trainer_free(tr);
  be->free(be);
  return 0;
}

/* BYTES of zeroed memory on 2 MiB boundaries, on huge pages or not (HUGE), touched by the
 * threads that will use it (OpenMP's static split, as the kernels'). Never freed: one run. */
static void *
pages(gsize bytes, gboolean huge)
{
  gsize align = 2u << 20, len = bytes + align;
  guint8 *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  guint8 *p = (guint8 *)(((guintptr)raw + align - 1) & ~(guintptr)(align - 1));
  if (madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0)
    perror("madvise");
  gint64 n = (gint64)bytes;
#pragma omp parallel for schedule(static)
  for (gint64 i = 0; i < n; i += 4096)
    p[i] = 0;
  return p;
}

static double
median_of(double *s, guint n)
{
  qsort(s, n, sizeof *s, cmp_double);
  return s[n / 2];
}

static int
adam(char **argv)
{
  gint64 n = atoll(argv[1]);
  gboolean huge = strcmp(argv[2], "2m") == 0;
  guint steps = (guint)atoi(argv[3]);
  if (n < 1 || steps < 1 || (!huge && strcmp(argv[2], "4k") != 0)) {
    fprintf(stderr, "bench-train adam N 4k|2m STEPS\n");
    return 2;
  }
  gsize f = (gsize)n * sizeof(float);
  float *g = pages(f, huge), *p = pages(f, huge), *m = pages(f, huge), *v = pages(f, huge);
  g_autofree double *s = g_new(double, steps);
  for (gint64 i = 0; i < n; i++)
    g[i] = (float)((i % 1000) - 500) * 1e-4f;
  stw_adam_streams(p, g, m, v, (size_t)n);
  for (guint k = 0; k < steps; k++) {
    double t0 = seconds();
    stw_adam_streams(p, g, m, v, (size_t)n);
    s[k] = seconds() - t0;
  }
  printf("streams      %.2f GB/s\n", 28.0 * (double)n / median_of(s, steps) / 1e9);
  /* the runtime's step: the compute copy holds the gradient and gets the new weights */
  static const StwDtype copies[] = { STW_DTYPE_FP32, STW_DTYPE_BF16 };
  static const StwDtype moments[] = { STW_DTYPE_FP32, STW_DTYPE_BF16 };
  for (int a = 0; a < 2; a++) {
    for (int b = 0; b < 2; b++) {
      StwAdamConfig c;
      stw_adam_config_init(&c);
      c.state_dtype = moments[b];
      void *param = copies[a] == STW_DTYPE_FP32 ? (void *)g : pages((gsize)n * 2, huge);
      void *mm = moments[b] == STW_DTYPE_FP32 ? (void *)m : pages((gsize)n * 2, huge);
      void *vv = moments[b] == STW_DTYPE_FP32 ? (void *)v : pages((gsize)n * 2, huge);
      stw_compute_host_adam(param, copies[a], p, mm, vv, (size_t)n, &c, 1);
      for (guint k = 0; k < steps; k++) {
        double t0 = seconds();
        stw_compute_host_adam(param, copies[a], p, mm, vv, (size_t)n, &c, k + 2);
        s[k] = seconds() - t0;
      }
      double rate = (double)n / median_of(s, steps);
      printf("%s/%s    %.3f G/s  %.2f GB/s (%.0f bytes an element)\n",
             stw_dtype_name(copies[a]), stw_dtype_name(moments[b]), rate / 1e9,
             rate * stw_adam_bytes_per_elem(copies[a], moments[b], FALSE, FALSE) / 1e9,
             stw_adam_bytes_per_elem(copies[a], moments[b], FALSE, FALSE));
    }
  }
  /* an fp32 compute copy that keeps the weights (one rank): the new weights into it alone, the
   * master only read, 4 bytes an element fewer */
  for (int b = 0; b < 2; b++) {
    StwAdamConfig c;
    stw_adam_config_init(&c);
    c.state_dtype = moments[b];
    void *mm = moments[b] == STW_DTYPE_FP32 ? (void *)m : pages((gsize)n * 2, huge);
    void *vv = moments[b] == STW_DTYPE_FP32 ? (void *)v : pages((gsize)n * 2, huge);
    stw_compute_host_adam_to_copy(g, p, mm, vv, (size_t)n, &c, 1);
    for (guint k = 0; k < steps; k++) {
      double t0 = seconds();
      stw_compute_host_adam_to_copy(g, p, mm, vv, (size_t)n, &c, k + 2);
      s[k] = seconds() - t0;
    }
    double rate = (double)n / median_of(s, steps);
    double bytes = stw_adam_bytes_per_elem(STW_DTYPE_FP32, moments[b], FALSE, TRUE);
    printf("in-copy/%s  %.3f G/s  %.2f GB/s (%.0f bytes an element)\n",
           stw_dtype_name(moments[b]), rate / 1e9, rate * bytes / 1e9, bytes);
  }
  return 0;
}

int
main(int argc, char **argv)
{
  if (argc >= 5 && strcmp(argv[1], "adam") == 0)
    return adam(argv + 1);
  if (argc >= 5 && strcmp(argv[1], "sgemm") == 0)
    return sgemm(argv + 1);
  if (argc >= 9 && strcmp(argv[1], "plan") == 0)
    return plan(argv + 1);
  if (argc >= 8 && strcmp(argv[1], "run") == 0)
    return run(argc - 1, argv + 1);
  fprintf(stderr, "usage: bench-train sgemm L C T B | plan L C H T B DIR HW | "
                  "run L C H T B STEPS [DIR] | adam N 4k|2m STEPS\n");
  return 2;
}
