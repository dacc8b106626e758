/* test-runtime.c — the trainer against PyTorch, and the whole loop: profile, plan with every
 * policy, replay with bitwise-identical losses inside the budget, moving what the plan said. */
#include "config.h"

#include <math.h>

#include <glib.h>
#include <glib/gstdio.h>

#include <stowage/check.h>
#include <stowage/events.h>
#include <stowage/planner.h>
#include <stowage/trainer.h>
#include <stowage/units.h>

#include "json.h"
#include "store.h"
#include "testutil.h"

#define STEPS 4

/* Deterministic text: the project's own words, repeated. */
static GString *
text(void)
{
  GString *s = g_string_new(NULL);
  while (s->len < 20000)
    g_string_append(s, "Stowage plans where the model data of a large-model training job lives, "
                       "GPU or CPU, at every operator of an iteration. ");
  return s;
}

static void
small_config(StwTrainerConfig *c)
{
  stw_trainer_config_init(c);
  c->layers = 2;
  c->width = 32;
  c->heads = 4;
  c->context = 16;
  c->batch = 2;
}

static StwTrainer *
trainer(const StwTrainerConfig *c, const GString *data, const StwRuntimeOptions *ro,
        StwBackend *be)
{
  GError *error = NULL;
  StwTrainer *t = stw_trainer_new(c, (const guint8 *)data->str, data->len, ro, be, &error);
  g_assert_no_error(error);
  return t;
}

static void
train(StwTrainer *t, float *losses, guint steps)
{
  for (guint i = 0; i < steps; i++) {
    GError *error = NULL;
    g_assert_true(stw_trainer_step(t, &losses[i], &error));
    g_assert_no_error(error);
  }
}

/* ---- against PyTorch ------------------------------------------------------------------------------ */

static double
max_abs(const cJSON *arr)
{
  double m = 0;
  for (const cJSON *v = arr->child; v != NULL; v = v->next)
    m = fmax(m, fabs(v->valuedouble));
  return m;
}

/* Every element within 1e-5 of the tensor's largest magnitude (plus 1e-7 for all-zero ones).
 * With GRAD (for weights after an Adam step), elements whose reference gradient is below 1e-6
 * are held only to LOOSE: Adam divides a gradient by its own magnitude, so a gradient that is
 * rounding noise (a key bias's is exactly zero in exact arithmetic) moves its weight by an
 * arbitrary fraction of the learning rate in any two implementations. */
static void
assert_close(const char *what, const char *name, const float *got, const cJSON *want,
             const cJSON *grad, double loose)
{
  double tol = 1e-5 * max_abs(want) + 1e-7, worst = 0;
  guint i = 0, noisy = 0;
  const cJSON *g = grad != NULL ? grad->child : NULL;
  for (const cJSON *v = want->child; v != NULL; v = v->next, i++, g = g ? g->next : NULL) {
    double d = fabs((double)got[i] - v->valuedouble);
    if (g != NULL && fabs(g->valuedouble) < 1e-6) {
      noisy++;
      if (d > loose)
        g_error("%s of %s, element %u (gradient %g), differs from PyTorch by %g", what, name, i,
                g->valuedouble, d);
      continue;
    }
    worst = fmax(worst, d);
  }
  if (worst > tol)
    g_error("%s of %s differs from PyTorch by %g (tolerance %g)", what, name, worst, tol);
  if (noisy > 0)
    g_test_message("%s: %u elements with a gradient below 1e-6", name, noisy);
}

/* One step from the PyTorch reference's weights and batch: its loss, gradients and weights after
 * AdamW, with ATTENTION's kernels. */
static void
reference_check(StwAttention attention)
{
  g_autofree char *path = stw_test_fixture("reference/gpt-tiny.json");
  g_autofree char *json = NULL;
  g_assert_true(g_file_get_contents(path, &json, NULL, NULL));
  cJSON *ref = cJSON_Parse(json);
  g_assert_nonnull(ref);
  const cJSON *cfg = cJSON_GetObjectItem(ref, "config");
  StwTrainerConfig c;
  stw_trainer_config_init(&c);
  c.layers = (guint64)cJSON_GetObjectItem(cfg, "layers")->valuedouble;
  c.width = (guint64)cJSON_GetObjectItem(cfg, "width")->valuedouble;
  c.heads = (guint64)cJSON_GetObjectItem(cfg, "heads")->valuedouble;
  c.context = (guint64)cJSON_GetObjectItem(cfg, "context")->valuedouble;
  c.batch = (guint64)cJSON_GetObjectItem(cfg, "batch")->valuedouble;
  c.adam.lr = (float)cJSON_GetObjectItem(cfg, "lr")->valuedouble;
  c.adam.weight_decay = (float)cJSON_GetObjectItem(cfg, "weight_decay")->valuedouble;
  c.attention = attention;
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwTrainer *t = trainer(&c, data, &ro, be);
  const StwTrace *m = stw_trainer_model_of(t);
  const cJSON *tensors = cJSON_GetObjectItem(ref, "tensors");
  g_assert_cmpint(cJSON_GetArraySize(tensors), ==, (int)m->tensors->len);
  float **sink = g_new0(float *, m->tensors->len);
  for (guint32 i = 0; i < m->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(m, i);
    const cJSON *rt = cJSON_GetArrayItem(tensors, (int)i);
    g_assert_cmpstr(cJSON_GetObjectItem(rt, "name")->valuestring, ==, x->name);
    const cJSON *init = cJSON_GetObjectItem(rt, "initial");
    g_assert_cmpint(cJSON_GetArraySize(init), ==, (int)x->numel);
    g_autofree float *w = g_new(float, x->numel), *zero = g_new0(float, x->numel);
    guint k = 0;
    for (const cJSON *v = init->child; v != NULL; v = v->next)
      w[k++] = (float)v->valuedouble;
    stw_runtime_write_state(stw_trainer_runtime(t), i, w, zero, zero);
    sink[i] = g_new(float, x->numel);
  }
  gsize n = c.batch * c.context;
  g_autofree int *in = g_new(int, n), *tg = g_new(int, n);
  for (gsize i = 0; i < n; i++) {
    in[i] = (int)cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "inputs"), (int)i)->valuedouble;
    tg[i] = (int)cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "targets"), (int)i)->valuedouble;
  }
  stw_trainer_set_batch(t, in, tg);
  stw_trainer_set_grad_sink(t, sink);
  float loss;
  train(t, &loss, 1);
  double want = cJSON_GetObjectItem(ref, "loss")->valuedouble;
  g_test_message("loss %.7f, PyTorch %.7f", loss, want);
  g_assert_cmpfloat(fabs(loss - want), <=, 1e-5 * fabs(want));
  for (guint32 i = 0; i < m->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(m, i);
    const cJSON *rt = cJSON_GetArrayItem(tensors, (int)i);
    assert_close("the gradient", x->name, sink[i], cJSON_GetObjectItem(rt, "grad"), NULL, 0);
    g_autofree float *w = g_new(float, x->numel);
    stw_trainer_weights(t, i, w);
    assert_close("the weights after one AdamW step", x->name, w,
                 cJSON_GetObjectItem(rt, "after_step"), cJSON_GetObjectItem(rt, "grad"),
                 c.adam.lr);
    g_free(sink[i]);
  }
  g_free(sink);
  stw_trainer_free(t);
  be->free(be);
  cJSON_Delete(ref);
}

static void
test_reference(void)
{
  reference_check(STW_ATTENTION_NAIVE);
}

static void
test_reference_flash(void)
{
  reference_check(STW_ATTENTION_FLASH);
}

/* ---- the loop ------------------------------------------------------------------------------------- */

static void
test_loop_every_policy(void)
{
  StwTrainerConfig c;
  small_config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  float resident[STEPS];
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwTrainer *t = trainer(&c, data, &ro, be);
  train(t, resident, STEPS);
  g_assert_cmpfloat(resident[STEPS - 1], <, resident[0]); /* it learns */
  StwTrace *trace = stw_runtime_trace(stw_trainer_runtime(t));
  g_assert_cmpint(trace->source.kind, ==, STW_SOURCE_RUNTIME);
  GError *error = NULL;
  g_assert_true(stw_trace_validate(trace, "profiled", &error));
  /* the profiled trace is written and read back unchanged */
  g_autofree char *text_trace = stw_trace_to_string(trace, &error);
  g_autoptr(StwTrace) back = stw_trace_parse("profiled.json", text_trace, strlen(text_trace), &error);
  g_assert_no_error(error);

  /* a budget well below the model data: the activation peak and a quarter of the model data */
  guint64 peak, model;
  stw_test_peak_and_model(back, &peak, &model);
  /* and a roomier one where every baseline fits too (PatrickStar uses only 80% of it) */
  guint64 budgets[2] = { peak + model / 4, (peak + model) * 3 / 2 };
  g_test_message("activation peak %" G_GUINT64_FORMAT ", model data %" G_GUINT64_FORMAT
                 ", budgets %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT, peak, model,
                 budgets[0], budgets[1]);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  guint replayed[STW_N_POLICIES] = { 0 };
  for (int bi = 0; bi < 2; bi++)
  for (int p = 0; p < STW_N_POLICIES; p++) {
    guint64 budget = budgets[bi];
    StwPlannerOptions o;
    stw_planner_options_init(&o, &hw);
    o.policy = (StwPolicy)p;
    o.budgets.gpu_bytes = budget;
    o.chunk_size_elems = p == STW_POLICY_STOWAGE ? 0 : 8192;
    g_autoptr(StwPlan) plan = stw_planner_plan(back, "profiled.json", &o, &error);
    if (plan == NULL) {
      g_test_message("%s: %s", stw_policy_names[p], error->message);
      g_clear_error(&error);
      continue;
    }
    g_assert_true(stw_plan_check(plan, back, "plan", NULL, NULL, &error));
    StwRuntimeOptions rr = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY, .device_bytes = budget, .plan = plan,
                             .plan_trace = back, .verify = p == STW_POLICY_STOWAGE };
    StwTrainer *r = trainer(&c, data, &rr, be);
    float losses[STEPS];
    train(r, losses, STEPS);
    g_assert_cmpmem(losses, sizeof losses, resident, sizeof resident);
    const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(r));
    g_test_message("%s: moved %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT " bytes per iteration, "
                   "peak %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT, stw_policy_names[p],
                   st->h2d_bytes, st->d2h_bytes, st->peak_device_bytes, budget);
    g_assert_cmpuint(st->peak_device_bytes, <=, budget);
    g_assert_cmpuint(st->h2d_bytes, ==, plan->pred.h2d_bytes);
    g_assert_cmpuint(st->d2h_bytes, ==, plan->pred.d2h_bytes);
    g_assert_cmpuint(st->deviations, ==, 0);
    if (rr.verify) /* and every activation NaN until written: no kernel read one before */
      g_assert_cmpuint(st->verified_moves, >, 0);
    /* activations from the arena the first iteration laid out, from the second on; the arena
     * within an eighth of the activation peak */
    g_test_message("arena %" G_GUINT64_FORMAT " bytes for an activation peak of %" G_GUINT64_FORMAT,
                   st->arena_bytes, peak);
    g_assert_cmpuint(st->arena_iterations, ==, STEPS - 1);
    g_assert_cmpuint(st->arena_bytes, >=, peak);
    g_assert_cmpuint(st->arena_bytes, <=, peak + peak / 8);
    replayed[p]++;
    stw_trainer_free(r);
  }
  for (int p = 0; p < STW_N_POLICIES; p++)
    g_assert_cmpuint(replayed[p], >=, 1);
  g_assert_cmpuint(replayed[STW_POLICY_STOWAGE], ==, 2);

  /* the baseline of bench-runtime: the same trainer on plain arrays, the same losses */
  StwRuntimeOptions plain = { .mode = STW_RUNTIME_PLAIN };
  StwTrainer *pt = trainer(&c, data, &plain, be);
  float losses[STEPS];
  train(pt, losses, STEPS);
  g_assert_cmpmem(losses, sizeof losses, resident, sizeof resident);
  const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(pt));
  g_assert_cmpuint(st->h2d_bytes + st->d2h_bytes + st->peak_device_bytes + st->ops, ==, 0);
  g_assert_null(stw_runtime_trace(stw_trainer_runtime(pt)));
  stw_trainer_free(pt);
  stw_trainer_free(t);
  be->free(be);
}

/* A compute table that says its memory is the device's (so tokens are uploaded and GPU Adam
 * runs through it) but computes on the CPU, counting the calls that cross the table. */
typedef struct {
  StwCompute base;
  guint uploads, downloads, adams, commits, zeros;
} Counting;

static void
count_zero(StwCompute *x, void *dst, size_t bytes)
{
  ((Counting *)x)->zeros++;
  memset(dst, 0, bytes);
}

static void
count_upload(StwCompute *x, void *dst, const void *src, size_t bytes)
{
  ((Counting *)x)->uploads++;
  memcpy(dst, src, bytes);
}

static void
count_download(StwCompute *x, void *dst, const void *src, size_t bytes)
{
  ((Counting *)x)->downloads++;
  memcpy(dst, src, bytes);
}

static void
count_adam(StwCompute *x, void *param, StwDtype dtype, float *master, float *m, float *v,
           size_t n, const StwAdamConfig *c, guint64 step)
{
  ((Counting *)x)->adams++;
  stw_compute_host_adam(param, dtype, master, m, v, n, c, step);
}

static void
count_commit(StwCompute *x, void *slot, StwDtype dtype, const float *grad, size_t n,
             gboolean first)
{
  ((Counting *)x)->commits++;
  stw_compute_cpu()->grad_commit(stw_compute_cpu(), slot, dtype, grad, n, first);
}

/* The trainer's device path (tokens uploaded into activations, fp32 gradients written straight
 * into their slots, GPU Adam run by the table, the runtime reading and writing device memory
 * through copies) trains the same losses bitwise as the CPU path, and keeps the same weights. */
/* the waits for the device a backend is asked for (profile mode times ops between them) */
static guint syncs;

static void
count_sync(StwBackend *b)
{
  (void)b;
  syncs++;
}

static void
test_compute_table(void)
{
  StwTrainerConfig c;
  small_config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwTrainer *cpu = trainer(&c, data, &ro, be);
  float want[STEPS];
  train(cpu, want, STEPS);
  /* profile mode with room for the model state: it stays, on a host-memory device in place */
  g_assert_cmpuint(stw_runtime_stats(stw_trainer_runtime(cpu))->h2d_bytes +
                   stw_runtime_stats(stw_trainer_runtime(cpu))->d2h_bytes, ==, 0);

  Counting counting = { .base = *stw_compute_cpu() };
  counting.base.name = "counting";
  counting.base.device_memory = TRUE;
  counting.base.upload = count_upload;
  counting.base.download = count_download;
  counting.base.adam = count_adam;
  counting.base.grad_commit = count_commit;
  counting.base.zero = count_zero;
  StwBackend *dev = stw_backend_host_new();
  dev->device_is_host = FALSE; /* the runtime reads and writes it through copies */
  c.compute = &counting.base;
  StwTrainer *t = trainer(&c, data, &ro, dev);
  float got[STEPS];
  train(t, got, STEPS);
  g_assert_cmpmem(got, sizeof got, want, sizeof want);
  guint32 n_tensors = stw_trainer_model_of(t)->tensors->len;
  g_assert_cmpuint(counting.uploads, ==, 2 * STEPS);    /* inputs and targets */
  /* the model state fits twice over: it stays on the device, stepped there, fetched once */
  g_assert_cmpuint(counting.adams, ==, STEPS * stw_trainer_model_of(t)->tensors->len);
  const StwRuntimeStats *stays = stw_runtime_stats(stw_trainer_runtime(t));
  g_assert_cmpuint(stays->h2d_bytes + stays->d2h_bytes, ==, 0);
  g_assert_cmpuint(stays->warmup_h2d_bytes, ==, 0);
  /* fp32 gradients go straight into their slots: nothing to commit; two zeroed per step, the
   * residual stream's gradient and the position embedding's (which the embedding's backward adds
   * into; the token embedding's holds the LM head's already) */
  g_assert_cmpuint(counting.commits, ==, 0);
  g_assert_cmpuint(counting.zeros, ==, 2 * STEPS);
  g_assert_cmpuint(n_tensors, >, 0);

  /* a plan with every optimizer state on the GPU: GPU Adam runs through the table */
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = 64 * STW_MiB;
  o.policy = STW_POLICY_GEMINI_STATIC;
  o.gemini_fraction = 1.0; /* every chunk and its state on the GPU, stepped by GPU Adam */
  o.chunk_size_elems = 8192;
  StwTrace *trace = stw_runtime_trace(stw_trainer_runtime(cpu));
  GError *error = NULL;
  g_autoptr(StwPlan) plan = stw_planner_plan(trace, "profiled", &o, &error);
  g_assert_no_error(error);
  StwRuntimeOptions rr = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY, .device_bytes = o.budgets.gpu_bytes,
                           .plan = plan, .plan_trace = trace };
  dev->sync = count_sync; /* a replay never waits for the device to time its ops */
  syncs = 0;
  StwTrainer *r = trainer(&c, data, &rr, dev);
  train(r, got, STEPS);
  g_assert_cmpmem(got, sizeof got, want, sizeof want);
  g_assert_cmpuint(counting.adams, ==, 2 * STEPS * n_tensors);
  g_assert_cmpuint(syncs, ==, 0);
  dev->sync = NULL;
  stw_trainer_free(r);
  /* profile mode on a budget below twice the model state (546,816 bytes here) steps on the CPU,
   * moving every parameter chunk out and in each step */
  StwRuntimeOptions tight = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_MiB };
  StwTrainer *p = trainer(&c, data, &tight, dev);
  train(p, got, STEPS);
  g_assert_cmpmem(got, sizeof got, want, sizeof want);
  g_assert_cmpuint(counting.adams, ==, 2 * STEPS * n_tensors);
  const StwRuntimeStats *moves = stw_runtime_stats(stw_trainer_runtime(p));
  g_assert_cmpuint(moves->h2d_bytes, >, 0);
  g_assert_cmpuint(moves->d2h_bytes, ==, moves->h2d_bytes);
  stw_trainer_free(p);
  for (guint32 id = 0; id < n_tensors; id++) {
    guint64 n = stw_trace_tensor(stw_trainer_model_of(t), id)->numel;
    g_autofree float *a = g_new(float, n), *b = g_new(float, n);
    stw_trainer_weights(cpu, id, a);
    stw_trainer_weights(t, id, b);
    g_assert_cmpmem(a, n * sizeof(float), b, n * sizeof(float));
  }
  /* a device table cannot run on plain host arrays */
  StwRuntimeOptions plain = { .mode = STW_RUNTIME_PLAIN };
  g_assert_null(stw_trainer_new(&c, (const guint8 *)data->str, data->len, &plain, dev, &error));
  stw_assert_error_contains(error, "plain mode keeps the model in host arrays; the counting "
                            "compute table needs the runtime's device memory");
  /* nor can verify checksum memory the host cannot read */
  StwRuntimeOptions verify = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB,
                               .verify = TRUE };
  g_assert_null(stw_trainer_new(&c, (const guint8 *)data->str, data->len, &verify, dev, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_UNSUPPORTED);
  stw_assert_error_contains(error, "verify checksums device memory from the host");
  stw_trainer_free(t);
  stw_trainer_free(cpu);
  be->free(be);
  dev->free(dev);
}

/* Mixed precision: a bf16 compute copy (2 bytes per parameter in the param list) with fp32
 * master weights trains within 1e-3 of fp32, and its plan replays bitwise, moving what the plan
 * predicts, inside the budget. */
/* Flash attention trains the same model within rounding of the naive kernels, keeps a
 * log-sum-exp per query row instead of two (T x T) matrices per layer (the trace says which, and
 * its activation peak is that much lower), replays its own plan bitwise, and refuses a plan
 * profiled with the other attention. */
static void
test_flash_attention(void)
{
  StwTrainerConfig c;
  small_config(&c);
  c.context = 40; /* past a warp's 32 lanes */
  c.attention = STW_ATTENTION_NAIVE;
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwTrainer *naive = trainer(&c, data, &ro, be);
  float want[STEPS];
  train(naive, want, STEPS);
  c.attention = STW_ATTENTION_FLASH;
  StwTrainer *t = trainer(&c, data, &ro, be);
  float got[STEPS];
  train(t, got, STEPS);
  for (guint i = 0; i < STEPS; i++) {
    g_test_message("step %u: naive %.9g, flash %.9g", i + 1, want[i], got[i]);
    g_assert_cmpfloat(fabs(got[i] - want[i]) / want[i], <, 1e-5);
  }
  StwTrace *nt = stw_runtime_trace(stw_trainer_runtime(naive));
  StwTrace *ft = stw_runtime_trace(stw_trainer_runtime(t));
  g_assert_cmpint(nt->model.attention, ==, STW_ATTENTION_NAIVE);
  g_assert_cmpint(ft->model.attention, ==, STW_ATTENTION_FLASH);
  g_assert_cmpuint(ft->ops->len, ==, nt->ops->len);
  /* each attention op's forward keeps B NH T floats instead of 2 B NH T T: the ops after it
   * start with that much less */
  guint64 B = c.batch, NH = c.heads, T = c.context, saved = 4 * (2 * B * NH * T * T - B * NH * T);
  guint cores = 0;
  for (guint i = 0; i + 1 < nt->ops->len; i++) {
    const StwOp *a = stw_trace_op(nt, i), *b = stw_trace_op(ft, i);
    g_assert_cmpstr(a->name, ==, b->name);
    if (g_str_has_suffix(a->name, "attn.core") && a->stage == STW_STAGE_FWD) {
      cores++;
      g_assert_cmpuint(stw_trace_op(nt, i + 1)->nonmodel_bytes -
                           stw_trace_op(ft, i + 1)->nonmodel_bytes, ==, cores * saved);
    }
  }
  g_assert_cmpuint(cores, ==, c.layers);

  GError *error = NULL;
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  guint64 peak, model;
  stw_test_peak_and_model(ft, &peak, &model);
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = peak + model / 4;
  g_autoptr(StwPlan) plan = stw_planner_plan(ft, "flash.json", &o, &error);
  g_assert_no_error(error);
  StwRuntimeOptions rr = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY, .device_bytes = o.budgets.gpu_bytes,
                           .plan = plan, .plan_trace = ft };
  StwTrainer *r = trainer(&c, data, &rr, be);
  float replayed[STEPS];
  train(r, replayed, STEPS);
  g_assert_cmpmem(replayed, sizeof replayed, got, sizeof got);
  g_assert_cmpuint(stw_runtime_stats(stw_trainer_runtime(r))->h2d_bytes, ==, plan->pred.h2d_bytes);
  stw_trainer_free(r);

  c.attention = STW_ATTENTION_NAIVE;
  g_assert_null(stw_trainer_new(&c, (const guint8 *)data->str, data->len, &rr, be, &error));
  stw_assert_error_contains(error, "the plan was made for another configuration: its trace was "
                                   "recorded for flash attention, and this run has naive "
                                   "attention");
  g_clear_error(&error);
  stw_trainer_free(naive);
  stw_trainer_free(t);
  be->free(be);
}

static void
test_mixed_precision(void)
{
  StwTrainerConfig c;
  small_config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwTrainer *fp32 = trainer(&c, data, &ro, be);
  float want[STEPS];
  train(fp32, want, STEPS);
  c.dtype = STW_DTYPE_BF16;
  StwTrainer *t = trainer(&c, data, &ro, be);
  float got[STEPS];
  train(t, got, STEPS);
  for (guint i = 0; i < STEPS; i++) {
    g_test_message("step %u: fp32 %.9g, mixed %.9g", i + 1, want[i], got[i]);
    g_assert_cmpfloat(fabs(got[i] - want[i]) / want[i], <, 1e-3);
  }
  g_assert_cmpfloat(got[STEPS - 1], <, got[0]);
  g_assert_true(memcmp(got, want, sizeof got) != 0); /* it is another precision */

  StwTrace *trace = stw_runtime_trace(stw_trainer_runtime(t));
  guint64 params = 0, peak = 0;
  for (guint i = 0; i < trace->tensors->len; i++) {
    g_assert_cmpint(stw_trace_tensor(trace, i)->dtype, ==, STW_DTYPE_BF16);
    params += stw_trace_tensor(trace, i)->numel;
  }
  for (guint i = 0; i < trace->ops->len; i++)
    peak = MAX(peak, stw_trace_op(trace, i)->nonmodel_peak_bytes);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = peak + 14 * params / 4; /* a quarter of the model data */
  GError *error = NULL;
  g_autoptr(StwPlan) plan = stw_planner_plan(trace, "mixed", &o, &error);
  g_assert_no_error(error);
  const StwChunking *layout = plan->chunking;
  g_assert_cmpuint(stw_chunk_bytes(layout, 0, STW_LIST_PARAM), ==,
                   2 * stw_chunking_chunk(layout, 0)->capacity_elems);
  StwRuntimeOptions rr = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY, .device_bytes = o.budgets.gpu_bytes,
                           .plan = plan, .plan_trace = trace };
  StwTrainer *r = trainer(&c, data, &rr, be);
  float replayed[STEPS];
  train(r, replayed, STEPS);
  g_assert_cmpmem(replayed, sizeof replayed, got, sizeof got);
  const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(r));
  g_assert_cmpuint(st->h2d_bytes, ==, plan->pred.h2d_bytes);
  g_assert_cmpuint(st->d2h_bytes, ==, plan->pred.d2h_bytes);
  g_assert_cmpuint(st->h2d_bytes, >, 0);
  g_assert_cmpuint(st->deviations, ==, 0);
  g_assert_cmpuint(st->peak_device_bytes, <=, o.budgets.gpu_bytes);
  /* the master weights are fp32 and agree with the bf16 run's own */
  guint64 n = stw_trace_tensor(trace, 0)->numel;
  g_autofree float *a = g_new(float, n), *b = g_new(float, n);
  stw_trainer_weights(t, 0, a);
  stw_trainer_weights(r, 0, b);
  g_assert_cmpmem(a, n * sizeof(float), b, n * sizeof(float));
  stw_trainer_free(r);
  stw_trainer_free(t);
  stw_trainer_free(fp32);
  be->free(be);
}

static void
test_checkpoint(void)
{
  StwTrainerConfig c;
  small_config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwTrainer *a = trainer(&c, data, &ro, be);
  float l[4], again[2];
  train(a, l, 2);
  g_autofree char *dir = g_dir_make_tmp("stw-ckpt-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "c.ckpt", NULL);
  GError *error = NULL;
  g_assert_true(stw_trainer_save(a, file, &error));
  train(a, l + 2, 2);
  StwTrainer *b = trainer(&c, data, &ro, be);
  g_assert_true(stw_trainer_load(b, file, &error));
  g_assert_cmpuint(stw_trainer_step_count(b), ==, 2);
  train(b, again, 2);
  g_assert_cmpmem(again, sizeof again, l + 2, sizeof again); /* the exact loss sequence */

  /* a corrupt checkpoint is refused, and so are a truncated one and another model's */
  g_autofree char *bytes = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(file, &bytes, &len, NULL));
  bytes[len / 2] ^= 0x40;
  g_autofree char *bad = g_build_filename(dir, "bad.ckpt", NULL);
  g_assert_true(g_file_set_contents(bad, bytes, (gssize)len, NULL));
  StwTrainer *d = trainer(&c, data, &ro, be);
  g_assert_false(stw_trainer_load(d, bad, &error));
  stw_assert_error_contains(error, "checksum mismatch: the checkpoint is corrupt");
  g_assert_true(g_file_set_contents(bad, bytes, 20, NULL));
  g_assert_false(stw_trainer_load(d, bad, &error));
  stw_assert_error_contains(error, "not a stowage checkpoint (or truncated)");
  StwTrainerConfig other = c;
  other.width = 64;
  StwTrainer *e = trainer(&other, data, &ro, be);
  g_assert_false(stw_trainer_load(e, file, &error));
  stw_assert_error_contains(error, "a checkpoint of another model (layers 2, width 32");
  stw_trainer_free(a);
  stw_trainer_free(b);
  stw_trainer_free(d);
  stw_trainer_free(e);
  g_unlink(file);
  g_unlink(bad);
  g_rmdir(dir);
  be->free(be);
}

static void
test_bad_input(void)
{
  StwTrainerConfig c;
  small_config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  GError *error = NULL;
  /* a text too short for one batch */
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  g_assert_null(stw_trainer_new(&c, (const guint8 *)"abc", 3, &ro, be, &error));
  stw_assert_error_contains(error, "the text has 3 bytes; batch 2 x context 16 needs at least 33");
  /* a device smaller than one op's working set */
  ro.device_bytes = 4096;
  StwTrainer *t = trainer(&c, data, &ro, be);
  float loss;
  g_assert_false(stw_trainer_step(t, &loss, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET);
  stw_assert_error_contains(error, "the device budget of 4096 bytes cannot hold");
  stw_trainer_free(t);
  /* a plan made for another model */
  ro.device_bytes = STW_GiB;
  StwTrainer *p = trainer(&c, data, &ro, be);
  train(p, &loss, 1);
  StwTrace *trace = stw_runtime_trace(stw_trainer_runtime(p));
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = STW_GiB;
  g_autoptr(StwPlan) plan = stw_planner_plan(trace, "t", &o, &error);
  g_assert_no_error(error);
  StwTrainerConfig other = c;
  other.width = 64;
  StwRuntimeOptions rr = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY, .device_bytes = STW_GiB, .plan = plan,
                           .plan_trace = trace };
  g_assert_null(stw_trainer_new(&other, (const guint8 *)data->str, data->len, &rr, be, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH);
  stw_assert_error_contains(error, "the plan was made for another model");

  /* a compute copy the trainer does not keep */
  StwTrainerConfig fp16 = c;
  fp16.dtype = STW_DTYPE_FP16;
  StwRuntimeOptions prof = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  g_assert_null(stw_trainer_new(&fp16, (const guint8 *)data->str, data->len, &prof, be, &error));
  stw_assert_error_contains(error, "the trainer keeps its compute copy in fp32 or bf16, not fp16");
  g_clear_error(&error);

  /* an attention the trainer does not have, and heads too wide for the fused one */
  StwTrainerConfig odd = c;
  odd.attention = (StwAttention)7;
  g_assert_null(stw_trainer_new(&odd, (const guint8 *)data->str, data->len, &prof, be, &error));
  g_assert_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CONFIG);
  stw_assert_error_contains(error, "the trainer's attention is naive or flash, not 7");
  g_clear_error(&error);
  StwTrainerConfig wide = c;
  wide.attention = STW_ATTENTION_FLASH;
  wide.heads = 1;
  wide.width = 2 * STW_FLASH_MAX_HEAD_WIDTH;
  g_assert_null(stw_trainer_new(&wide, (const guint8 *)data->str, data->len, &prof, be, &error));
  g_assert_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CONFIG);
  stw_assert_error_contains(error, "flash attention takes heads up to 128 wide, and width 256 "
                                   "over 1 head makes them 256: use more heads, or naive "
                                   "attention");

  /* the CUDA compute table's module: missing, or a library that is not it */
#ifdef STW_HAVE_CUDA
  g_setenv("STOWAGE_COMPUTE_CUDA", "/nonexistent/libstowage-compute-cuda.so", TRUE);
  g_assert_null(stw_compute_cuda_new(TRUE, &error));
  g_assert_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_DEVICE);
  stw_assert_error_contains(error, "cannot load the CUDA compute table "
                            "/nonexistent/libstowage-compute-cuda.so");
  g_setenv("STOWAGE_COMPUTE_CUDA", "libm.so.6", TRUE);
  g_assert_null(stw_compute_cuda_new(TRUE, &error));
  stw_assert_error_contains(error, "libm.so.6 is not stowage's CUDA compute table");
  g_unsetenv("STOWAGE_COMPUTE_CUDA");
#else
  g_assert_null(stw_compute_cuda_new(TRUE, &error));
  g_assert_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_UNSUPPORTED);
  stw_assert_error_contains(error, "this stowage was built without CUDA");
#endif
  stw_trainer_free(p);
  be->free(be);
}

/* The store's places: every move takes an item from one to the next, with the budget counted byte
 * for byte, and a drop never loses the only valid copy. */
static void
test_store_places(void)
{
  StwBackend *be = stw_backend_host_new();
  guint64 bytes[3] = { 4096, 4096, 8192 };
  StwStore *s = stw_store_new(be, 3, bytes, 12288, TRUE, 0);
  GError *error = NULL;
  memset(stw_store_host(s, 0), 7, 4096);
  g_assert_cmpint(stw_store_place(s, 0), ==, STW_AT_HOST);
  g_assert_true(stw_store_fetch(s, 0, &error));
  g_assert_true(stw_store_resident(s, 0));
  guint8 *dev = stw_store_device(s, 0);
  g_assert_cmpint(stw_store_place(s, 0), ==, STW_ON_DEVICE);
  g_assert_cmpuint(dev[4095], ==, 7);
  dev[0] = 9;
  stw_store_set_dirty(s, 0);
  /* a dirty item is written back, not dropped */
  g_assert_false(stw_store_drop(s, 0));
  g_assert_cmpint(stw_store_place(s, 0), ==, STW_TO_HOST);
  g_assert_false(stw_store_resident(s, 0));
  g_assert_cmpuint(stw_store_host(s, 0)[0], ==, 9);
  g_assert_cmpint(stw_store_place(s, 0), ==, STW_AT_HOST);
  /* two items fill the budget; a third is refused while both are needed */
  stw_store_next_op(s);
  g_assert_true(stw_store_fetch(s, 0, &error));
  g_assert_true(stw_store_fetch(s, 2, &error));
  stw_store_need(s, 0);
  stw_store_need(s, 2);
  g_assert_false(stw_store_fetch(s, 1, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET);
  stw_assert_error_contains(error, "the device budget of 12288 bytes cannot hold 4096 more bytes");
  /* and on the next op the least recently used makes room */
  stw_store_next_op(s);
  stw_store_need(s, 2);
  g_assert_true(stw_store_fetch(s, 1, &error));
  g_assert_cmpint(stw_store_place(s, 0), ==, STW_AT_HOST);
  g_assert_cmpuint(stw_store_room_evictions(s), ==, 1);
  g_assert_true(stw_store_drop(s, 2));
  g_assert_cmpint(stw_store_place(s, 2), ==, STW_AT_HOST);
  const StwStoreStats *st = stw_store_stats(s);
  g_assert_cmpuint(st->h2d_bytes, ==, 4096 + 4096 + 8192 + 4096);
  g_assert_cmpuint(st->d2h_bytes, ==, 4096 + 4096);
  g_assert_cmpuint(st->peak_bytes, ==, 12288);
  stw_store_settle(s, 0);
  stw_store_settle(s, 1);
  g_assert_null(stw_store_take_failure(s));
  g_assert_cmpuint(stw_store_stats(s)->verified_moves, ==, 6);
  g_assert_true(stw_store_check(s, &error));
  stw_store_free(s);
  /* the books checked: a model state kept in place beyond the capacity is found out */
  StwStore *over = stw_store_new(be, 3, bytes, 12000, FALSE, 0);
  g_assert_true(stw_store_check(over, &error));
  stw_store_keep_in_place(over);
  g_assert_false(stw_store_check(over, &error));
  stw_assert_error_contains(error, "the chunk store's books are wrong: 16384 bytes counted in "
                                   "use, where the slots hold 16384 and the activations 0 "
                                   "(counted 0), of a capacity of 12000");
  stw_store_free(over);
  be->free(be);
}

/* Rewrites the checkpoint BYTES (LEN) with the 8-byte header field at OFFSET set to VALUE, or
 * the first master weight set to NaN (OFFSET 0), and its checksum made right again: a file edited
 * by someone who knows the format. */
static void
forge(const char *file, const char *bytes, gsize len, gsize offset, guint64 value)
{
  g_autofree guint8 *b = g_memdup2(bytes, len);
  if (offset > 0) {
    memcpy(b + offset, &value, 8);
  } else {
    float nan = NAN;
    memcpy(b + 88, &nan, sizeof nan);
  }
  GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
  g_checksum_update(sum, b, len - 32);
  gsize dlen = 32;
  g_checksum_get_digest(sum, b + len - 32, &dlen);
  g_checksum_free(sum);
  g_assert_true(g_file_set_contents(file, (const char *)b, (gssize)len, NULL));
}

/* The checksum is no key: every header field is checked against the model and the data before
 * it is used, and a state that is not finite is neither loaded nor saved. */
static void
test_checkpoint_fields(void)
{
  StwTrainerConfig c;
  small_config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwTrainer *a = trainer(&c, data, &ro, be);
  float l[2];
  train(a, l, 2);
  g_autofree char *dir = g_dir_make_tmp("stw-ckpt-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "c.ckpt", NULL);
  g_autofree char *bad = g_build_filename(dir, "bad.ckpt", NULL);
  GError *error = NULL;
  g_assert_true(stw_trainer_save(a, file, &error));
  g_autofree char *bytes = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(file, &bytes, &len, NULL));
  StwTrainer *b = trainer(&c, data, &ro, be);
  /* the header: magic, then layers, width, heads, context, batch, seed, step, pos (8 bytes each) */
  forge(bad, bytes, len, 8 + 7 * 8, G_MAXUINT64 - 5); /* pos near 2^64: wrapped the bounds test */
  g_assert_false(stw_trainer_load(b, bad, &error));
  g_assert_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CHECKPOINT);
  stw_assert_error_contains(error, "data position 18446744073709551610 is past the last batch of "
                                   "the training text");
  forge(bad, bytes, len, 8 + 6 * 8, G_MAXUINT64 / 2); /* a step that trained NaN */
  g_assert_false(stw_trainer_load(b, bad, &error));
  stw_assert_error_contains(error, "step 9223372036854775807 is beyond the 1099511627776 steps");
  forge(bad, bytes, len, 0, 0);
  g_assert_false(stw_trainer_load(b, bad, &error));
  stw_assert_error_contains(error, "the master weights of wte hold a NaN or an infinity: the "
                                   "checkpoint of a diverged run");
  /* a file of another size is refused unread, and so is what is not a regular file */
  g_assert_true(g_file_set_contents(bad, bytes, (gssize)len - 4, NULL));
  g_assert_false(stw_trainer_load(b, bad, &error));
  g_autofree char *sizes = g_strdup_printf("%" G_GSIZE_FORMAT " bytes, where a checkpoint of "
                                           "this model has %" G_GSIZE_FORMAT, len - 4, len);
  stw_assert_error_contains(error, sizes);
  g_assert_false(stw_trainer_load(b, "/dev/zero", &error));
  stw_assert_error_contains(error, "/dev/zero: not a regular file (a checkpoint is a regular file "
                                   "of a fixed size)");
  /* the untouched checkpoint still loads: nothing above changed it */
  g_assert_true(stw_trainer_load(b, file, &error));
  g_assert_cmpuint(stw_trainer_step_count(b), ==, 2);
  stw_trainer_free(a);
  stw_trainer_free(b);
  g_unlink(file);
  g_unlink(bad);
  g_rmdir(dir);
  be->free(be);
}

/* The ranges a backend is told of (NVTX on CUDA): the iteration's, around the ops'. */
static GPtrArray *ranges;

static void
record_push(StwBackend *b, const char *name)
{
  (void)b;
  g_ptr_array_add(ranges, g_strdup(name));
}

static void
record_pop(StwBackend *b)
{
  (void)b;
  g_ptr_array_add(ranges, g_strdup("pop"));
}

static void
test_iteration_range(void)
{
  StwTrainerConfig c;
  stw_trainer_config_init(&c);
  c.layers = 1;
  c.width = 16;
  c.heads = 2;
  c.context = 8;
  c.batch = 1;
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  be->range_push = record_push;
  be->range_pop = record_pop;
  be->sync = count_sync;
  syncs = 0;
  ranges = g_ptr_array_new_with_free_func(g_free);
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwTrainer *t = trainer(&c, data, &ro, be);
  float loss;
  train(t, &loss, 1);
  g_assert_cmpuint(ranges->len, >, 4);
  /* the iteration opens first and closes last; every op's range inside it is closed */
  g_assert_cmpstr(ranges->pdata[0], ==, STW_ITERATION_RANGE);
  g_assert_cmpstr(ranges->pdata[ranges->len - 1], ==, "pop");
  gint depth = 0, deepest = 0;
  for (guint i = 0; i < ranges->len; i++) {
    depth += g_str_equal(ranges->pdata[i], "pop") ? -1 : 1;
    deepest = MAX(deepest, depth);
    g_assert_cmpint(depth, >=, i + 1 < ranges->len ? 1 : 0);
  }
  g_assert_cmpint(depth, ==, 0);
  g_assert_cmpint(deepest, ==, 2); /* the iteration, and one op at a time inside it */
  /* profile mode times each op between two waits for the device: one before, one after */
  g_assert_cmpuint(syncs, ==, ranges->len - 2);
  /* an untimed step waits for nothing, and the timed step's trace stays the runtime's */
  StwRuntime *rt = stw_trainer_runtime(t);
  StwTrace *timed = stw_runtime_trace(rt);
  guint64 first_op_ns = stw_trace_op(timed, 0)->duration_ns;
  guint n_ops = timed->ops->len, waits = syncs;
  stw_runtime_set_timed(rt, FALSE);
  train(t, &loss, 1);
  g_assert_cmpuint(syncs, ==, waits);
  g_assert_true(stw_runtime_trace(rt) == timed);
  g_assert_cmpuint(stw_trace_op(timed, 0)->duration_ns, ==, first_op_ns);
  stw_runtime_set_timed(rt, TRUE);
  train(t, &loss, 1);
  g_assert_cmpuint(syncs, ==, waits + 2 * n_ops);
  g_assert_cmpuint(stw_runtime_trace(rt)->ops->len, ==, n_ops);
  stw_trainer_free(t);
  be->free(be);
  g_ptr_array_unref(ranges);
}

/* Profile mode's op times on the host backend start where the op before ended: the caller's
 * work between two ops (30 ms here) is in the second op's time, as it runs on the emulated
 * device's cores; what runs between iterations (200 ms here) is in no op's. On a device of its
 * own the time is the op's alone. */
static void
op_times(gboolean device_is_host, guint64 *first_ns, guint64 *second_ns)
{
  StwTrainerConfig c;
  small_config(&c);
  GError *error = NULL;
  g_autoptr(StwTrace) model = stw_trainer_model(&c, &error);
  g_assert_no_error(error);
  StwBackend *be = stw_backend_host_new();
  be->device_is_host = device_is_host;
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwRuntime *rt = stw_runtime_new(model, NULL, &ro, be, &error);
  g_assert_no_error(error);
  for (int it = 0; it < 2; it++) {
    if (it > 0)
      g_usleep(200000);
    stw_runtime_iteration_begin(rt);
    g_assert_true(stw_runtime_op_begin(rt, "first", STW_STAGE_FWD, NULL, 0, NULL, 0, &error));
    stw_runtime_op_end(rt);
    g_usleep(30000);
    g_assert_true(stw_runtime_op_begin(rt, "second", STW_STAGE_FWD, NULL, 0, NULL, 0, &error));
    stw_runtime_op_end(rt);
    g_assert_true(stw_runtime_iteration_end(rt, &error));
  }
  StwTrace *t = stw_runtime_trace(rt);
  g_assert_cmpuint(t->ops->len, ==, 2);
  *first_ns = stw_trace_op(t, 0)->duration_ns;
  *second_ns = stw_trace_op(t, 1)->duration_ns;
  stw_runtime_free(rt);
  be->free(be);
}

static void
test_op_times(void)
{
  guint64 first, second;
  op_times(TRUE, &first, &second);
  g_test_message("host backend: %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT " ns", first,
                 second);
  g_assert_cmpuint(second, >=, 30000000);
  g_assert_cmpuint(first, <, 100000000);
  op_times(FALSE, &first, &second);
  g_test_message("a device of its own: %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT " ns",
                 first, second);
  g_assert_cmpuint(second, <, 30000000);
  g_assert_cmpuint(first, <, 100000000);
}

/* The ops of accumulate.json (2 micro-steps; fc.bias frozen; gradients PyTorch's) in order. */
static void
run_accumulate(StwRuntime *rt, const StwTrace *t)
{
  GError *error = NULL;
  stw_runtime_iteration_begin(rt);
  for (guint32 k = 0; k < t->ops->len; k++) {
    const StwOp *op = stw_trace_op(t, k);
    g_assert_true(stw_runtime_op_begin(rt, op->name, op->stage, op->params, op->n_params,
                                       op->grads, op->n_grads, &error));
    g_assert_no_error(error);
    if (op->stage == STW_STAGE_OPTIM) {
      gpointer param;
      float *master, *m, *v;
      stw_runtime_optim(rt, 0, &param, &master, &m, &v);
      for (int i = 0; i < 16; i++) { /* a step of our own: every list changes */
        master[i] += 1.0f;
        ((float *)param)[i] = master[i];
        m[i] += 0.5f;
        v[i] += 0.25f;
      }
    }
    stw_runtime_op_end(rt);
  }
  g_assert_true(stw_runtime_iteration_end(rt, &error));
  g_assert_no_error(error);
}

/* A plan of gradient accumulation over a frozen tensor replayed: the frozen chunk has the param
 * list alone and is never written back; an evaluation forward between iterations runs outside
 * the plan, counted apart, and the next iteration moves exactly the plan's bytes again. */
static void
test_unplanned_and_frozen(void)
{
  GError *error = NULL;
  g_autofree char *path = stw_test_fixture("traces/accumulate.json");
  g_autoptr(StwTrace) t = stw_trace_load(path, &error);
  g_assert_no_error(error);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = 256 + 8192; /* the non-model peak and two of the five 4 KiB chunks */
  g_autoptr(StwPlan) plan = stw_planner_plan(t, path, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(plan->pred.h2d_bytes, >, 0);
  guint32 frozen = plan->chunking->chunk_of[1];
  g_assert_true(stw_chunking_chunk(plan->chunking, frozen)->frozen);
  g_assert_cmpuint(stw_chunk_bytes(plan->chunking, frozen, STW_LIST_MOMENTUM), ==, 0);
  float w[16], b[4] = { 1, 2, 3, 4 };
  for (int i = 0; i < 16; i++)
    w[i] = (float)i;
  const float *init[] = { w, b };
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY, .device_bytes = o.budgets.gpu_bytes,
                           .plan = plan, .plan_trace = t, .verify = TRUE };
  StwRuntime *rt = stw_runtime_new(t, init, &ro, be, &error);
  g_assert_no_error(error);
  for (int it = 0; it < 3; it++) {
    run_accumulate(rt, t);
    const StwRuntimeStats *st = stw_runtime_stats(rt);
    g_assert_cmpuint(st->h2d_bytes, ==, plan->pred.h2d_bytes);
    g_assert_cmpuint(st->d2h_bytes, ==, plan->pred.d2h_bytes);
    g_assert_cmpuint(st->deviations, ==, 0);
    g_assert_cmpuint(st->unplanned_ops, ==, (guint64)it);
    /* an evaluation between the iterations: both tensors, on demand, within the budget */
    guint32 both[] = { 0, 1 };
    g_assert_true(stw_runtime_unplanned_op_begin(rt, "eval", both, 2, &error));
    g_assert_no_error(error);
    g_assert_cmpfloat(((float *)stw_runtime_param(rt, 1))[3], ==, 4.0f);
    g_assert_cmpfloat(((float *)stw_runtime_param(rt, 0))[5], ==, 5.0f + (float)(it + 1));
    g_assert_false(stw_runtime_unplanned_op_begin(rt, "again", both, 2, &error));
    stw_assert_error_contains(error, "unplanned op again: another unplanned op is open");
    stw_runtime_op_end(rt);
    g_assert_cmpuint(stw_runtime_stats(rt)->peak_device_bytes, <=, o.budgets.gpu_bytes);
  }
  const StwRuntimeStats *st = stw_runtime_stats(rt);
  g_assert_cmpuint(st->unplanned_ops, ==, 3);
  g_assert_cmpuint(st->unplanned_h2d_bytes, ==, 0); /* the start state holds both */
  g_assert_cmpuint(st->deviations, ==, 0);
  /* a frozen tensor's weights are its compute copy, untouched, and it has no moments */
  float master[16], m[16], v[16];
  stw_runtime_read_state(rt, 1, master, m, v);
  g_assert_cmpfloat(master[3], ==, 4.0f);
  g_assert_cmpfloat(m[0], ==, 0.0f);
  stw_runtime_read_state(rt, 0, master, m, v);
  g_assert_cmpfloat(master[5], ==, 8.0f);
  g_assert_cmpfloat(m[5], ==, 1.5f);
  g_assert_cmpfloat(v[5], ==, 0.75f);
  float b2[4] = { 9, 9, 9, 9 }, zeros[4] = { 0 };
  stw_runtime_write_state(rt, 1, b2, zeros, zeros);
  stw_runtime_read_param(rt, 1, master);
  g_assert_cmpfloat(master[0], ==, 9.0f);
  stw_runtime_free(rt);
  be->free(be);
}

/* Runs ops [FROM, TO) of T as the trace has them. */
static void
run_ops(StwRuntime *rt, const StwTrace *t, guint32 from, guint32 to)
{
  GError *error = NULL;
  for (guint32 k = from; k < to; k++) {
    const StwOp *op = stw_trace_op(t, k);
    g_assert_true(stw_runtime_op_begin(rt, op->name, op->stage, op->params, op->n_params,
                                       op->grads, op->n_grads, &error));
    g_assert_no_error(error);
    stw_runtime_op_end(rt);
  }
}

/* An evaluation that needs a chunk the plan's start state does not hold: fetched on demand
 * (another made room for), counted as unplanned, and the start state restored before the next
 * iteration, whose moves are the plan's again. Three layers of 1024 weights, room for two. */
static void
test_unplanned_restores(void)
{
  g_autoptr(StwTrace) t = stw_trace_new();
  t->model.gradients = STW_GRADIENTS_FRAMEWORK;
  guint64 shape[] = { 1024 };
  const char *names[] = { "a", "b", "c" };
  for (guint32 i = 0; i < 3; i++)
    stw_trace_add_tensor(t, names[i], STW_DTYPE_FP32, shape, 1);
  for (guint32 i = 0; i < 3; i++)
    stw_trace_add_op(t, names[i], STW_STAGE_FWD, &i, 1, NULL, 0)->duration_ns = 1000;
  for (guint32 i = 3; i-- > 0;)
    stw_trace_add_op(t, names[i], STW_STAGE_BWD, &i, 1, &i, 1)->duration_ns = 2000;
  for (guint32 i = 0; i < 3; i++)
    stw_trace_add_op(t, names[i], STW_STAGE_OPTIM, &i, 1, NULL, 0)->duration_ns = 100;
  GError *error = NULL;
  g_assert_true(stw_trace_validate(t, "three", &error));
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = 2 * 4096;
  o.chunk_size_elems = 1024;
  g_autoptr(StwPlan) plan = stw_planner_plan(t, NULL, &o, &error);
  g_assert_no_error(error);
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY, .device_bytes = o.budgets.gpu_bytes,
                           .plan = plan, .plan_trace = t, .verify = TRUE };
  StwRuntime *rt = stw_runtime_new(t, NULL, &ro, be, &error);
  g_assert_no_error(error);
  /* the chunk the start state does not hold */
  guint32 absent = G_MAXUINT32;
  for (guint32 i = 0; i < 3 && absent == G_MAXUINT32; i++)
    if (!plan->schedule.resident[stw_plan_item(plan->chunking, STW_LIST_PARAM,
                                               plan->chunking->chunk_of[i])])
      absent = i;
  g_assert_cmpuint(absent, <, 3);
  for (int it = 0; it < 2; it++) {
    stw_runtime_iteration_begin(rt);
    run_ops(rt, t, 0, t->ops->len);
    g_assert_true(stw_runtime_iteration_end(rt, &error));
    g_assert_cmpuint(stw_runtime_stats(rt)->h2d_bytes, ==, plan->pred.h2d_bytes);
    g_assert_cmpuint(stw_runtime_stats(rt)->deviations, ==, 0);
    g_assert_true(stw_runtime_unplanned_op_begin(rt, "eval", &absent, 1, &error));
    stw_runtime_op_end(rt);
    g_assert_cmpuint(stw_runtime_stats(rt)->unplanned_h2d_bytes, >=, (guint64)(it + 1) * 4096);
  }
  const StwRuntimeStats *st = stw_runtime_stats(rt);
  g_assert_cmpuint(st->unplanned_ops, ==, 2);
  g_assert_cmpuint(st->deviations, ==, 0);
  g_assert_cmpuint(st->peak_device_bytes, <=, o.budgets.gpu_bytes);
  /* the next iteration restores the start state first, and moves the plan's bytes */
  guint64 before = st->unplanned_h2d_bytes + st->unplanned_d2h_bytes;
  stw_runtime_iteration_begin(rt);
  g_assert_cmpuint(stw_runtime_stats(rt)->unplanned_h2d_bytes +
                       stw_runtime_stats(rt)->unplanned_d2h_bytes, >, before);
  run_ops(rt, t, 0, t->ops->len);
  g_assert_true(stw_runtime_iteration_end(rt, &error));
  g_assert_cmpuint(stw_runtime_stats(rt)->h2d_bytes, ==, plan->pred.h2d_bytes);
  g_assert_cmpuint(stw_runtime_stats(rt)->deviations, ==, 0);
  /* an iteration stopped after 4 ops (the caller's step raised) and abandoned: the next one
   * runs the plan from its first op, moving the plan's bytes, with no deviation */
  stw_runtime_iteration_begin(rt);
  run_ops(rt, t, 0, 4);
  stw_runtime_iteration_abandon(rt);
  stw_runtime_iteration_begin(rt);
  run_ops(rt, t, 0, t->ops->len);
  g_assert_true(stw_runtime_iteration_end(rt, &error));
  g_assert_cmpuint(stw_runtime_stats(rt)->h2d_bytes, ==, plan->pred.h2d_bytes);
  g_assert_cmpuint(stw_runtime_stats(rt)->deviations, ==, 0);
  g_assert_cmpuint(stw_runtime_stats(rt)->abandoned_iterations, ==, 1);
  stw_runtime_free(rt);
  be->free(be);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/runtime/store-places", test_store_places);
  g_test_add_func("/runtime/iteration-range", test_iteration_range);
  g_test_add_func("/runtime/op-times", test_op_times);
  g_test_add_func("/runtime/reference", test_reference);
  g_test_add_func("/runtime/reference-flash", test_reference_flash);
  g_test_add_func("/runtime/loop-every-policy", test_loop_every_policy);
  g_test_add_func("/runtime/compute-table", test_compute_table);
  g_test_add_func("/runtime/mixed-precision", test_mixed_precision);
  g_test_add_func("/runtime/flash-attention", test_flash_attention);
  g_test_add_func("/runtime/checkpoint", test_checkpoint);
  g_test_add_func("/runtime/checkpoint-fields", test_checkpoint_fields);
  g_test_add_func("/runtime/bad-input", test_bad_input);
  g_test_add_func("/runtime/unplanned-and-frozen", test_unplanned_and_frozen);
  g_test_add_func("/runtime/unplanned-restores", test_unplanned_restores);
  return g_test_run();
}
