/* test-trainer.c — the GPT trainer: one step against PyTorch's (naive and flash attention),
 * its compute tables (what each calls, and the CPU's against CUDA's bodies), mixed precision,
 * checkpoints (resumed losses bitwise the same; every field checked, forged ones refused), and
 * bad input. */
#include "config.h"

#include <fcntl.h>
#include <math.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include <stowage/check.h>
#include <stowage/planner.h>
#include <stowage/storage.h>
#include <stowage/trainer.h>
#include <stowage/units.h>

#include "json.h"
#include "testutil.h"
#include "trainutil.h"

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
    g_assert_true(stw_runtime_write_state(stw_trainer_runtime(t), i, w, zero, zero, NULL));
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
    g_assert_true(stw_trainer_weights(t, i, w, NULL));
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
count_adam(StwCompute *x, void *param, StwDtype dtype, float *master, void *m, void *v,
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
    g_assert_true(stw_trainer_weights(cpu, id, a, NULL));
    g_assert_true(stw_trainer_weights(t, id, b, NULL));
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
  g_assert_true(stw_trainer_weights(t, 0, a, NULL));
  g_assert_true(stw_trainer_weights(r, 0, b, NULL));
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

/* The small model C profiled on BE for STEPS steps (their losses into LOSSES; the trainer, whose
 * runtime owns the trace, into *PROFILED), and its trace planned by the stowage policy on the
 * default profile with GPU_BYTES, ACTIVATIONS and CHUNK elements a chunk (0: searched). */
static StwPlan *
profiled_plan(const StwTrainerConfig *c, const GString *data, StwBackend *be, guint steps,
              float *losses, guint64 gpu_bytes, StwActivations activations, guint64 chunk,
              StwTrainer **profiled)
{
  StwRuntimeOptions prof = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE,
                             .device_bytes = STW_GiB };
  *profiled = trainer(c, data, &prof, be);
  train(*profiled, losses, steps);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = gpu_bytes;
  o.activations = activations;
  o.chunk_size_elems = chunk;
  GError *error = NULL;
  StwPlan *plan = stw_planner_plan(stw_trainer_trace(*profiled), "t", &o, &error);
  g_assert_no_error(error);
  return plan;
}

/* A plan that offloads every block replays bitwise the losses of keeping them; a plan whose
 * moves do not match what the trainer's blocks keep, or whose blocks the trainer does not hand
 * over, is refused by the runtime at the step, naming the block (check refuses such plans
 * before; the runtime does not trust them either). */
static void
test_offload(void)
{
  StwTrainerConfig c;
  small_config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  GError *error = NULL;
  StwTrainer *p;
  float kept[3];
  g_autoptr(StwPlan) plan = profiled_plan(&c, data, be, 3, kept, STW_GiB,
                                          STW_ACTIVATIONS_OFFLOAD, 0, &p);
  StwTrace *trace = stw_trainer_trace(p); /* the runtime's */
  g_assert_cmpuint(trace->blocks->len, ==, c.layers);
  g_assert_cmpuint(plan->moves->len, ==, c.layers);
  StwRuntimeOptions rr = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY,
                           .device_bytes = STW_GiB, .plan = plan, .plan_trace = trace };
  StwTrainer *r = trainer(&c, data, &rr, be);
  float offloaded[3];
  train(r, offloaded, 3);
  for (int i = 0; i < 3; i++)
    g_assert_cmpfloat(offloaded[i], ==, kept[i]);
  const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(r));
  g_assert_cmpuint(st->h2d_bytes, ==, plan->pred.h2d_bytes);
  g_assert_cmpuint(st->d2h_bytes, ==, plan->pred.d2h_bytes);
  /* the plan's peak as the plan counts memory; what was held, with write-backs in flight, at least
   * that and within the budget */
  g_assert_cmpuint(st->peak_settled_bytes, ==, plan->pred.peak_gpu_bytes);
  g_assert_cmpuint(st->peak_device_bytes, >=, st->peak_settled_bytes);
  g_assert_cmpuint(st->peak_device_bytes, <=, STW_GiB);
  g_assert_cmpuint(st->deviations, ==, 0);
  stw_trainer_free(r);

  float loss;
  /* the bytes are not what the block keeps */
  g_array_index(plan->moves, StwActivationMove, 1).bytes += 4;
  r = trainer(&c, data, &rr, be);
  g_assert_false(stw_trainer_step(r, &loss, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH);
  g_autofree char *bytes = g_strdup_printf("block 1 keeps %" G_GUINT64_FORMAT " bytes of "
                                           "activations for backward, and the plan offloads %"
                                           G_GUINT64_FORMAT ": it was made for another model "
                                           "or batch", g_array_index(plan->moves,
                                           StwActivationMove, 1).bytes - 4,
                                           g_array_index(plan->moves, StwActivationMove,
                                           1).bytes);
  stw_assert_error_contains(error, bytes);
  stw_trainer_free(r);
  g_array_index(plan->moves, StwActivationMove, 1).bytes -= 4;
  /* a move for a block the trainer does not offload */
  g_array_remove_index(plan->offload, 0);
  r = trainer(&c, data, &rr, be);
  g_assert_false(stw_trainer_step(r, &loss, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH);
  g_autofree char *want = g_strdup_printf("block 0's activations were not handed over by the end "
                                          "of its forward (moment %u), and the plan offloads "
                                          "them", g_array_index(plan->moves, StwActivationMove,
                                                                0).out_moment);
  stw_assert_error_contains(error, want);
  stw_trainer_free(r);
  stw_trainer_free(p);
  be->free(be);
}

/* A plan with chunks' optimizer state on the storage tier, replayed through a file under a
 * directory: bitwise the losses of the state in host memory, the state's bytes read and written
 * each step; a checkpoint of it resumes bitwise; a file altered or cut short between steps stops
 * the run naming the chunk; no directory, or a missing one, is refused. */
static void
storage_tier(void)
{
  StwTrainerConfig c;
  small_config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  GError *error = NULL;
  StwTrainer *p;
  float kept[4];
  g_autoptr(StwPlan) plan = profiled_plan(&c, data, be, 4, kept, 400 * STW_KiB,
                                          STW_ACTIVATIONS_KEEP, 8192, &p);
  StwTrace *trace = stw_trainer_trace(p);
  /* every CPU Adam chunk's state on the tier */
  guint32 stored = 0, first = G_MAXUINT32, second = G_MAXUINT32;
  guint64 state = 0;
  for (guint32 ch = 0; ch < stw_chunking_count(plan->chunking); ch++) {
    if (plan->optim[ch] != STW_OPTIM_CPU)
      continue;
    plan->optim[ch] = STW_OPTIM_CPU_STORAGE;
    if (stored == 1)
      second = ch;
    first = MIN(first, ch);
    stored++;
    for (int l = STW_LIST_MASTER; l < STW_N_LISTS; l++)
      state += stw_chunk_bytes(plan->chunking, ch, (StwChunkList)l);
  }
  /* how many the planner steps on the CPU is its choice from the profile's measured times (6
   * on an idle machine, 5 seen on a loaded one): each holds 8192 elements' master and moments */
  g_assert_cmpuint(stored, >=, 2);
  g_assert_cmpuint(state, ==, stored * 3 * 8192 * sizeof(float));
  g_autofree char *here = g_get_current_dir();
  g_autofree char *dir = g_build_filename(here, "stw-tier.XXXXXX", NULL);
  g_assert_nonnull(g_mkdtemp(dir));
  g_autofree char *file = g_build_filename(dir, "optimizer-state.rank0", NULL);
  StwRuntimeOptions rr = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY,
                           .device_bytes = plan->budgets.gpu_bytes, .plan = plan,
                           .plan_trace = trace, .storage_dir = dir };
  StwTrainer *r = trainer(&c, data, &rr, be);
  g_assert_true(g_file_test(file, G_FILE_TEST_IS_REGULAR));
  float got[4];
  train(r, got, 2);
  g_autofree char *ckpt = g_build_filename(dir, "c.ckpt", NULL);
  g_assert_true(stw_trainer_save(r, ckpt, &error));
  train(r, got + 2, 2);
  g_assert_cmpmem(got, sizeof got, kept, sizeof kept);
  const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(r));
  g_assert_cmpuint(st->storage_read_bytes, ==, state);
  g_assert_cmpuint(st->storage_write_bytes, ==, state);
  g_assert_cmpuint(st->deviations, ==, 0);
  stw_trainer_free(r);
  g_assert_false(g_file_test(file, G_FILE_TEST_EXISTS)); /* scratch: gone with the run */
  /* one chunk on storage: its write from one step still in flight when the next reads it */
  g_autofree guint8 *all = g_memdup2(plan->optim, stw_chunking_count(plan->chunking));
  guint32 last = 0;
  for (guint32 ch = 0; ch < stw_chunking_count(plan->chunking); ch++) {
    if (plan->optim[ch] == STW_OPTIM_CPU_STORAGE) {
      plan->optim[ch] = STW_OPTIM_CPU;
      last = ch;
    }
  }
  plan->optim[last] = STW_OPTIM_CPU_STORAGE;
  r = trainer(&c, data, &rr, be);
  train(r, got, 4);
  g_assert_cmpmem(got, sizeof got, kept, sizeof kept);
  st = stw_runtime_stats(stw_trainer_runtime(r));
  g_assert_cmpuint(st->storage_read_bytes, ==, state / stored);
  g_assert_cmpuint(st->storage_write_bytes, ==, state / stored);
  stw_trainer_free(r);
  memcpy(plan->optim, all, stw_chunking_count(plan->chunking));
  /* resumed from the checkpoint: the files rebuilt from it, the same last two losses */
  StwTrainer *b = trainer(&c, data, &rr, be);
  g_assert_true(stw_trainer_load(b, ckpt, &error));
  float again[2];
  train(b, again, 2);
  g_assert_cmpmem(again, sizeof again, kept + 2, sizeof again);
  /* a byte of the file changed between steps (once the step's last writes landed: a write in
   * flight would put it back): the next step stops, naming the chunk */
  g_assert_true(stw_runtime_storage_sync(stw_trainer_runtime(b), &error));
  int fd = g_open(file, O_RDWR, 0);
  g_assert_cmpint(fd, >=, 0);
  guint8 byte;
  g_assert_cmpint(pread(fd, &byte, 1, 4096 * 7), ==, 1);
  byte ^= 0x10;
  g_assert_cmpint(pwrite(fd, &byte, 1, 4096 * 7), ==, 1);
  /* a checkpoint is never written from the state it cannot read back */
  g_autofree char *bad = g_build_filename(dir, "bad.ckpt", NULL);
  g_assert_false(stw_trainer_save(b, bad, &error));
  g_assert_nonnull(error);
  g_assert_nonnull(strstr(error->message, ": not saved: storage file "));
  g_autofree char *named = g_strdup_printf("chunk %u's optimizer state (98304 bytes at offset 0) "
                                           "is not what was written to it", first);
  stw_assert_error_contains(error, named);
  g_assert_false(g_file_test(bad, G_FILE_TEST_EXISTS));
  float loss;
  g_assert_false(stw_trainer_step(b, &loss, &error));
  g_assert_error(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_IO);
  g_autofree char *altered = g_strdup_printf("storage file %s: chunk %u's optimizer state (98304 "
                                             "bytes at offset 0) is not what was written to it: "
                                             "the file was altered or the device corrupted it",
                                             file, first);
  stw_assert_error_contains(error, altered);
  /* cut short: the read that comes back short names its chunk */
  g_assert_cmpint(ftruncate(fd, 4096), ==, 0);
  close(fd);
  stw_trainer_free(b);
  b = trainer(&c, data, &rr, be);
  train(b, got, 1);
  g_assert_true(stw_runtime_storage_sync(stw_trainer_runtime(b), &error));
  g_assert_cmpint(truncate(file, 4096), ==, 0);
  g_assert_false(stw_trainer_step(b, &loss, &error));
  g_assert_error(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_IO);
  g_autofree char *cut = g_strdup_printf("the storage tier, chunk %u's optimizer state (being "
                                         "read): storage file %s: a read of 98304 bytes at 0 "
                                         "moved 4096 (the file is shorter than it was made, or "
                                         "the disk is full)", first, file);
  stw_assert_error_contains(error, cut);
  stw_trainer_free(b);
  /* no directory for it, or one that is not there */
  rr.storage_dir = NULL;
  g_assert_null(stw_trainer_new(&c, (const guint8 *)data->str, data->len, &rr, be, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH);
  g_autofree char *no_dir = g_strdup_printf("the plan keeps the optimizer state of %u chunks on "
                                            "the storage tier (\"cpu-storage\"): name a "
                                            "directory on it for their file", stored);
  stw_assert_error_contains(error, no_dir);
  g_autofree char *gone = g_build_filename(dir, "gone", NULL);
  rr.storage_dir = gone;
  g_assert_null(stw_trainer_new(&c, (const guint8 *)data->str, data->len, &rr, be, &error));
  g_assert_error(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_DIRECTORY);
  stw_assert_error_contains(error, "No such file or directory");
  /* the parameters on storage too ("storage"): each fetch of them read from the file, each
   * write-back written to it, the step reading and writing them beside the state */
  rr.storage_dir = dir;
  guint64 params = 0, moved_in = 0, moved_out = 0;
  for (guint32 ch = 0; ch < stw_chunking_count(plan->chunking); ch++) {
    if (plan->optim[ch] == STW_OPTIM_CPU_STORAGE) {
      plan->optim[ch] = STW_OPTIM_STORAGE;
      params += stw_chunk_bytes(plan->chunking, ch, STW_LIST_PARAM);
    }
  }
  const StwAction *act = (const StwAction *)plan->schedule.actions->data;
  for (guint i = 0; i < plan->schedule.actions->len; i++) {
    if (act[i].item >= stw_chunking_count(plan->chunking) ||
        plan->optim[act[i].item] != STW_OPTIM_STORAGE)
      continue;
    guint64 pb = stw_chunk_bytes(plan->chunking, act[i].item, STW_LIST_PARAM);
    moved_in += act[i].kind == STW_ACTION_FETCH ? pb : 0;
    moved_out += act[i].kind == STW_ACTION_EVICT ? pb : 0;
  }
  g_assert_cmpuint(params, ==, stored * 8192 * sizeof(float));
  /* the plan's moves of them (its schedule follows the profiled times): every chunk's gradients
   * out, and back in after its step, at least */
  g_assert_cmpuint(moved_in, >=, params);
  g_assert_cmpuint(moved_out, >=, params);
  r = trainer(&c, data, &rr, be);
  train(r, got, 2);
  g_autofree char *ckpt2 = g_build_filename(dir, "p.ckpt", NULL);
  g_assert_true(stw_trainer_save(r, ckpt2, &error));
  train(r, got + 2, 2);
  g_assert_cmpmem(got, sizeof got, kept, sizeof kept);
  st = stw_runtime_stats(stw_trainer_runtime(r));
  g_assert_cmpuint(st->storage_read_bytes, ==, state + params + moved_in);
  g_assert_cmpuint(st->storage_write_bytes, ==, state + params + moved_out);
  g_assert_cmpuint(st->deviations, ==, 0);
  stw_trainer_free(r);
  r = trainer(&c, data, &rr, be);
  g_assert_true(stw_trainer_load(r, ckpt2, &error));
  train(r, again, 2);
  g_assert_cmpmem(again, sizeof again, kept + 2, sizeof again);
  /* a byte of a chunk's parameters changed in the file (the second stored chunk's, its region
   * after the first's): the fetch that reads them stops */
  g_assert_true(stw_runtime_storage_sync(stw_trainer_runtime(r), &error));
  fd = g_open(file, O_RDWR, 0);
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpint(pread(fd, &byte, 1, 131072 + 100), ==, 1);
  byte ^= 0x10;
  g_assert_cmpint(pwrite(fd, &byte, 1, 131072 + 100), ==, 1);
  close(fd);
  g_assert_false(stw_trainer_step(r, &loss, &error));
  g_assert_error(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_IO);
  g_autofree char *altered_params = g_strdup_printf("storage file %s: chunk %u's parameters "
                                                    "(32768 bytes at offset 131072) is not what was "
                                                    "written to it", file, second);
  stw_assert_error_contains(error, altered_params);
  stw_trainer_free(r);
  /* and no directory for them */
  rr.storage_dir = NULL;
  g_assert_null(stw_trainer_new(&c, (const guint8 *)data->str, data->len, &rr, be, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH);
  g_autofree char *no_dir_params = g_strdup_printf("the plan keeps the parameters and optimizer "
                                                   "state of %u chunks on the storage tier "
                                                   "(\"storage\"): name a directory", stored);
  stw_assert_error_contains(error, no_dir_params);
  g_unlink(ckpt2);
  g_unlink(ckpt);
  g_assert_cmpint(g_rmdir(dir), ==, 0);
  stw_trainer_free(p);
  be->free(be);
}

static void
test_storage_tier(void)
{
  storage_tier();
}

/* The same on a disk whose writes take 20 ms: no read of a region while its write is in flight
 * (a chunk stepped last in one step is read first in the next: the read waits), and
 * stw_runtime_storage_sync waits for the writes a step leaves in flight. */
static void
test_storage_tier_slow_disk(void)
{
  g_setenv("STOWAGE_STORAGE_ENGINE", "threads-slow", TRUE);
  storage_tier();
  g_unsetenv("STOWAGE_STORAGE_ENGINE");
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

/* Adam's moments in bf16: a profile run with them, and the replay of a plan of the fp32 trace
 * made with bf16 moments (the planner's choice, which the runtime follows whatever the trainer
 * was configured with) train bitwise alike, close to the fp32 run but not equal to it; the
 * moment lists hold two bytes an element; a checkpoint says so (STWCKPT2, the dtype field) and
 * resumes bitwise; it loads into a run of fp32 moments too, said; a dtype field forged is
 * refused. */
static void
test_bf16_moments(void)
{
  StwTrainerConfig c;
  small_config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  GError *error = NULL;
  StwRuntimeOptions prof = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE,
                             .device_bytes = STW_GiB };
  float fp[4], bf[4], again[4];
  StwTrainer *p32 = trainer(&c, data, &prof, be);
  train(p32, fp, 4);
  StwTrainerConfig cb = c;
  cb.adam.state_dtype = STW_DTYPE_BF16;
  StwTrainer *pb = trainer(&cb, data, &prof, be);
  train(pb, bf, 4);
  g_assert_cmpint(stw_runtime_state_dtype(stw_trainer_runtime(pb)), ==, STW_DTYPE_BF16);
  g_assert_cmpint(memcmp(fp, bf, sizeof fp), !=, 0);
  for (int i = 0; i < 4; i++)
    g_assert_cmpfloat(fabsf(fp[i] - bf[i]), <, 1e-3f * fp[i]);
  stw_trainer_free(pb);

  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = 400 * STW_KiB;
  o.activations = STW_ACTIVATIONS_KEEP;
  o.chunk_size_elems = 8192;
  o.state_dtype = STW_DTYPE_BF16;
  StwTrace *trace = stw_trainer_trace(p32);
  g_assert_cmpint(trace->model.state_dtype, ==, STW_DTYPE_FP32);
  g_autoptr(StwPlan) plan = stw_planner_plan(trace, "t", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpint(plan->chunking->state_dtype, ==, STW_DTYPE_BF16);
  g_assert_cmpuint(stw_chunk_bytes(plan->chunking, 0, STW_LIST_MOMENTUM), ==, 8192 * 2);
  g_assert_cmpuint(stw_chunk_bytes(plan->chunking, 0, STW_LIST_MASTER), ==, 8192 * 4);
  StwRuntimeOptions rr = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY,
                           .device_bytes = plan->budgets.gpu_bytes, .plan = plan,
                           .plan_trace = trace };
  StwTrainer *r = trainer(&c, data, &rr, be); /* configured fp32: the plan decides */
  train(r, again, 2);
  g_autofree char *dir = g_dir_make_tmp("stw-ckpt-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "c.ckpt", NULL);
  g_assert_true(stw_trainer_save(r, file, &error));
  train(r, again + 2, 2);
  g_assert_cmpmem(again, sizeof again, bf, sizeof bf);
  g_assert_cmpuint(stw_runtime_stats(stw_trainer_runtime(r))->deviations, ==, 0);
  stw_trainer_free(r);

  g_autofree char *bytes = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(file, &bytes, &len, NULL));
  g_assert_cmpmem(bytes, 8, "STWCKPT2", 8);
  guint64 total = 0;
  for (guint32 i = 0; i < trace->tensors->len; i++)
    total += stw_trace_tensor(trace, i)->numel;
  g_assert_cmpuint(len, ==, 88 + 8 + 3 * total * sizeof(float) + 32);
  r = trainer(&c, data, &rr, be);
  g_assert_true(stw_trainer_load(r, file, &error));
  g_assert_cmpint(stw_trainer_resumed_state(r), ==, STW_DTYPE_BF16);
  float resumed[2];
  train(r, resumed, 2);
  g_assert_cmpmem(resumed, sizeof resumed, bf + 2, sizeof resumed);
  stw_trainer_free(r);
  /* into fp32 moments: widened exactly, and it trains on */
  StwTrainer *f = trainer(&c, data, &prof, be);
  g_assert_true(stw_trainer_load(f, file, &error));
  g_assert_cmpint(stw_trainer_resumed_state(f), ==, STW_DTYPE_BF16);
  train(f, resumed, 2);
  g_assert_cmpfloat(fabsf(resumed[1] - bf[3]), <, 1e-3f * bf[3]);
  /* the dtype field forged (the checksum made right): refused, naming it */
  forge(file, bytes, len, 88, 3);
  g_assert_false(stw_trainer_load(f, file, &error));
  g_assert_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CHECKPOINT);
  stw_assert_error_contains(error, "the state dtype field is 3, where a checkpoint of bf16 "
                            "moments has 2");
  g_clear_error(&error);
  stw_trainer_free(f);
  g_unlink(file);
  g_rmdir(dir);
  stw_trainer_free(p32);
  be->free(be);
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

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/trainer/reference", test_reference);
  g_test_add_func("/trainer/reference-flash", test_reference_flash);
  g_test_add_func("/trainer/compute-table", test_compute_table);
  g_test_add_func("/trainer/mixed-precision", test_mixed_precision);
  g_test_add_func("/trainer/flash-attention", test_flash_attention);
  g_test_add_func("/trainer/checkpoint", test_checkpoint);
  g_test_add_func("/trainer/checkpoint-fields", test_checkpoint_fields);
  g_test_add_func("/trainer/bad-input", test_bad_input);
  g_test_add_func("/trainer/offload", test_offload);
  g_test_add_func("/trainer/storage-tier", test_storage_tier);
  g_test_add_func("/trainer/storage-tier-slow-disk", test_storage_tier_slow_disk);
  g_test_add_func("/trainer/bf16-moments", test_bf16_moments);
  return g_test_run();
}
