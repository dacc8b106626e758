/* bench-runtime.c — the runtime's costs: host-backend copy bandwidth against memcpy, runtime
 * bookkeeping per op, and trainer throughput resident and at 25% of the model data.
 *
 * Usage: bench-runtime [STEPS]   (default 30)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include <stowage/planner.h>
#include <stowage/trainer.h>
#include <stowage/units.h>

static double
seconds(void)
{
  return (double)g_get_monotonic_time() / 1e6;
}

/* Copies of N-byte chunks, back to back, cycling through POOL bytes of distinct chunks on each
 * side, as chunk traffic does: one pair of buffers copied over and over would stay in the
 * copying core's cache and measure the cache instead of memory. */
#define POOL (512u << 20)

static void
copy_bandwidth(void)
{
  StwBackend *be = stw_backend_host_new();
  static const gsize sizes[] = { 1 << 20, 16 << 20, 64 << 20 };
  guint8 *src = g_malloc(POOL), *dst = g_malloc(POOL);
  memset(src, 1, POOL);
  memset(dst, 2, POOL);
  printf("| chunk size | host-backend copy | memcpy | ratio |\n|---:|---:|---:|---:|\n");
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    gsize n = sizes[i], chunks = POOL / n;
    int reps = (int)(2 * chunks);
    double t0 = seconds();
    for (int r = 0; r < reps; r++)
      memcpy(dst + (r % chunks) * n, src + (r % chunks) * n, n);
    double mc = (double)n * reps / (seconds() - t0);
    /* as the runtime uses it: copies queued back to back, then waited for */
    StwEvent **ev = g_new(StwEvent *, reps);
    t0 = seconds();
    for (int r = 0; r < reps; r++)
      ev[r] = be->copy(be, STW_COPY_H2D, dst + (r % chunks) * n, src + (r % chunks) * n, n);
    for (int r = 0; r < reps; r++)
      be->wait(be, ev[r]);
    double bc = (double)n * reps / (seconds() - t0);
    for (int r = 0; r < reps; r++)
      be->event_free(be, ev[r]);
    g_free(ev);
    g_autofree char *sz = stw_size_format(n);
    printf("| %s | %.2f GB/s | %.2f GB/s | %.0f%% |\n", sz, bc / 1e9, mc / 1e9, 100 * bc / mc);
  }
  g_free(src);
  g_free(dst);
  be->free(be);
}

static double
run(const StwTrainerConfig *c, const GString *text, const StwRuntimeOptions *ro, guint steps,
    StwRuntimeStats *st_out)
{
  StwBackend *be = stw_backend_host_new();
  GError *error = NULL;
  StwTrainer *t = stw_trainer_new(c, (const guint8 *)text->str, text->len, ro, be, &error);
  if (t == NULL) {
    fprintf(stderr, "bench-runtime: %s\n", error->message);
    exit(1);
  }
  float loss;
  stw_trainer_step(t, &loss, NULL); /* warm-up */
  double t0 = seconds();
  for (guint s = 0; s < steps; s++) {
    if (!stw_trainer_step(t, &loss, &error)) {
      fprintf(stderr, "bench-runtime: %s\n", error->message);
      exit(1);
    }
  }
  double tps = (double)(c->batch * c->context * steps) / (seconds() - t0);
  *st_out = *stw_runtime_stats(stw_trainer_runtime(t));
  stw_trainer_free(t);
  be->free(be);
  return tps;
}

#define ROUNDS 7 /* runs per configuration; the best counts (this machine is shared and noisy) */
#define N_CONFIGS 3

static int
compare_doubles(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ROUNDS rounds of every configuration, in alternating order so that no position is favoured:
 * each one's best round (TPS, STATS) and, per round, resident over plain (RATIO, sorted). */
static void
interleaved_rounds(const StwTrainerConfig *c, GString *text, const StwRuntimeOptions *ros,
                   guint steps, double *tps, StwRuntimeStats *stats, double *ratio)
{
  for (int r = 0; r < ROUNDS; r++) {
    double round_tps[N_CONFIGS];
    for (int k = 0; k < N_CONFIGS; k++) {
      int i = r % 2 == 0 ? k : N_CONFIGS - 1 - k;
      StwRuntimeStats st_round;
      round_tps[i] = run(c, text, &ros[i], steps, &st_round);
      if (round_tps[i] > tps[i]) { /* the best round, and its own stats */
        tps[i] = round_tps[i];
        stats[i] = st_round;
      }
    }
    ratio[r] = round_tps[1] / round_tps[0];
  }
  qsort(ratio, ROUNDS, sizeof ratio[0], compare_doubles);
}

int
main(int argc, char **argv)
{
  guint steps = argc > 1 ? (guint)atoi(argv[1]) : 30;
  printf("## Host-backend copy bandwidth\n\n");
  copy_bandwidth();

  StwTrainerConfig c;
  stw_trainer_config_init(&c);
  c.layers = 4;
  c.width = 128;
  c.context = 32;
  c.batch = 2;
  GString *text = g_string_new(NULL);
  while (text->len < 200000)
    g_string_append(text, "Stowage plans where the model data of a large-model training job "
                          "lives, GPU or CPU, at every operator of an iteration. ");
  /* profile with everything fitting, then plan: resident, and at 25% of the model data */
  StwRuntimeOptions prof = { .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwRuntimeStats st;
  double profile_tps = run(&c, text, &prof, 3, &st);
  StwBackend *be = stw_backend_host_new();
  StwTrainer *t = stw_trainer_new(&c, (const guint8 *)text->str, text->len, &prof, be, NULL);
  float loss;
  stw_trainer_step(t, &loss, NULL);
  StwTrace *trace = stw_runtime_trace(stw_trainer_runtime(t));
  guint64 peak = 0, model = 0;
  for (guint i = 0; i < trace->ops->len; i++)
    peak = MAX(peak, stw_trace_op(trace, i)->nonmodel_peak_bytes);
  for (guint i = 0; i < trace->tensors->len; i++)
    model += 16 * stw_trace_tensor(trace, i)->numel;
  StwHardware hw;
  stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL);
  g_autofree char *model_s = stw_size_format(model);
  printf("\n## Trainer throughput (4 blocks, width 128, batch 2 x 32 tokens; %u steps; %s of "
         "model data)\n\n| device budget | tokens/s | bytes moved per step | plan predicted | "
         "runtime bookkeeping per op | its share of the step |\n|---|---:|---:|---:|---:|---:|\n",
         steps, model_s);
  printf("| profile mode, 1 GiB | %.0f | | | | |\n", profile_tps);
  /* three configurations: the baseline (the same trainer code on plain arrays, the runtime
   * bypassed), a plan with everything resident, and a plan at 25% of the model data. Their runs
   * are interleaved, so that drift on this shared machine hits all three alike. */
  guint64 budgets[N_CONFIGS] = { 0, G_GUINT64_CONSTANT(1) << 40, peak + model / 4 };
  const char *names[N_CONFIGS] = { "plain arrays, no runtime", "everything resident",
                                   "25% of model data + activations" };
  StwPlan *plans[N_CONFIGS] = { NULL };
  StwRuntimeOptions ros[N_CONFIGS] = { { .mode = STW_RUNTIME_PLAIN } };
  for (int i = 1; i < N_CONFIGS; i++) {
    StwPlannerOptions o;
    stw_planner_options_init(&o, &hw);
    if (i == 1) { /* every chunk and its optimizer state on the device: nothing ever moves */
      o.policy = STW_POLICY_GEMINI_STATIC;
      o.gemini_fraction = 1.0;
    }
    o.budgets.gpu_bytes = budgets[i];
    o.budgets.cpu_bytes = STW_TiB;
    GError *error = NULL;
    plans[i] = stw_planner_plan(trace, "bench", &o, &error);
    if (plans[i] == NULL) {
      fprintf(stderr, "bench-runtime: %s\n", error->message);
      return 1;
    }
    ros[i] = (StwRuntimeOptions){ .mode = STW_RUNTIME_REPLAY, .device_bytes = budgets[i],
                                  .plan = plans[i], .plan_trace = trace };
  }
  double tps[N_CONFIGS] = { 0 };
  StwRuntimeStats stats[N_CONFIGS];
  double ratio[ROUNDS]; /* resident / plain, within a round: pairs that ran side by side */
  interleaved_rounds(&c, text, ros, steps, tps, stats, ratio);
  printf("| %s | %.0f | 0 B | | | |\n", names[0], tps[0]);
  for (int i = 1; i < N_CONFIGS; i++) {
    const StwRuntimeStats *s = &stats[i];
    g_autofree char *moved = stw_size_format(s->h2d_bytes + s->d2h_bytes);
    g_autofree char *pred = stw_size_format(plans[i]->pred.h2d_bytes + plans[i]->pred.d2h_bytes);
    g_autofree char *b = stw_size_format(budgets[i]);
    double step_s = (double)(c.batch * c.context) / tps[i];
    double book_s = (double)s->bookkeeping_ns / 1e9 / (steps + 1);
    printf("| %s (%s) | %.0f | %s | %s | %.1f us | %.1f%% |\n", names[i], b, tps[i], moved, pred,
           (double)s->bookkeeping_ns / (double)s->ops / 1e3, 100 * book_s / step_s);
    stw_plan_free(plans[i]);
  }
  printf("\nTokens/s are the best of %d interleaved rounds. With everything resident the runtime "
         "runs at a median %.1f%% of the plain-array baseline's tokens/s in the same round "
         "(target: at least 97%%; the rounds range %.1f%%..%.1f%%, which is this machine's noise, "
         "not the runtime's).\n",
         ROUNDS, 100 * ratio[ROUNDS / 2], 100 * ratio[0], 100 * ratio[ROUNDS - 1]);
  stw_trainer_free(t);
  be->free(be);
  g_string_free(text, TRUE);
  return 0;
}
