/* bench-train.c — the trainer at full machine speed: one configuration per process, so that its
 * peak RSS is its own (bench/train.sh runs them in interleaved rounds).
 *
 * Usage:
 *   bench-train sgemm L C T B          the BLAS's sgemm GFLOP/s at the model's matmul shapes
 *   bench-train plan L C H T B DIR HW  profile two steps, plan at 25% of the model data (plus the
 *                                      activation peak) on hardware profile HW (this machine's,
 *                                      from `stowage probe --device host` at the same threads),
 *                                      write DIR/trace.json and DIR/plan.json
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
#include <sys/resource.h>

#include <glib.h>

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

int
main(int argc, char **argv)
{
  if (argc >= 5 && strcmp(argv[1], "sgemm") == 0)
    return sgemm(argv + 1);
  if (argc >= 9 && strcmp(argv[1], "plan") == 0)
    return plan(argv + 1);
  if (argc >= 8 && strcmp(argv[1], "run") == 0)
    return run(argc - 1, argv + 1);
  fprintf(stderr, "usage: bench-train sgemm L C T B | plan L C H T B DIR HW | "
                  "run L C H T B STEPS [DIR]\n");
  return 2;
}
