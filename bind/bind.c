/* bind.c — the library for other languages; see bind.h. Each function marshals its arguments
 * (JSON, names, sizes) into the public C API's and its results back; nothing is decided here
 * that the library decides elsewhere. */
#include "config.h"

#include <stowage/stowage.h>

#include "json.h"

#include <math.h>
#include <string.h>

void
stw_bind_free(void *p)
{
  g_free(p);
}

const char *
stw_bind_version(void)
{
  return PACKAGE_STRING;
}

/* Hands ERROR's message to the caller and frees it; returns FALSE. */
static gboolean
give(GError *error, char **error_out)
{
  if (error_out != NULL)
    *error_out = g_strdup(error != NULL ? error->message : "unknown error");
  g_clear_error(&error);
  return FALSE;
}

static gboolean
say(char **error_out, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static gboolean
say(char **error_out, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (error_out != NULL)
    *error_out = msg;
  else
    g_free(msg);
  return FALSE;
}

static char *
print(cJSON *o)
{
  return stw_json_take_text(o, FALSE);
}

/* OPTIONS_JSON as an object (NULL text: an empty one); NULL with *ERROR_OUT when it is not. */
static cJSON *
options_of(const char *what, const char *options_json, char **error_out)
{
  cJSON *o = options_json != NULL ? cJSON_Parse(options_json) : cJSON_CreateObject();
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    say(error_out, "%s: the options are not a JSON object", what);
    return NULL;
  }
  return o;
}

/* Refuses OPTIONS' members that are not among KNOWN (a misspelt option is never ignored). */
static gboolean
known_members(const char *what, const cJSON *o, const char *const *known, char **error_out)
{
  for (const cJSON *m = o->child; m != NULL; m = m->next) {
    gboolean found = FALSE;
    for (int i = 0; known[i] != NULL && !found; i++)
      found = strcmp(m->string, known[i]) == 0;
    if (!found) {
      g_autofree char *list = g_strjoinv(", ", (char **)known);
      return say(error_out, "%s: unknown option '%s' (the options are %s)", what, m->string,
                 list);
    }
  }
  return TRUE;
}

/* Member KEY of O as a whole number from MIN to MAX: a JSON number or a string of digits, as
 * the CLI reads its counts. *PRESENT (may be NULL) says whether O has it; absent or null leaves
 * *OUT alone. */
static gboolean
count_member(const char *what, const cJSON *o, const char *key, guint64 min, guint64 max,
             gboolean *present, guint64 *out, char **error_out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (present != NULL)
    *present = v != NULL && !cJSON_IsNull(v);
  if (v == NULL || cJSON_IsNull(v))
    return TRUE;
  guint64 n = 0;
  gboolean ok = FALSE;
  if (cJSON_IsNumber(v)) {
    ok = v->valuedouble >= 0 && v->valuedouble <= 9007199254740992.0 &&
         v->valuedouble == (double)(guint64)v->valuedouble;
    n = ok ? (guint64)v->valuedouble : 0;
  } else if (cJSON_IsString(v) && v->valuestring[0] != '\0') {
    ok = g_ascii_string_to_unsigned(v->valuestring, 10, 0, G_MAXUINT64, &n, NULL);
  }
  if (!ok || n < min || n > max)
    return say(error_out, "%s: %s: expected a whole number from %" G_GUINT64_FORMAT " to %"
               G_GUINT64_FORMAT, what, key, min, max);
  *out = n;
  return TRUE;
}

/* Member KEY of O as a string (absent or null: *OUT NULL). */
static gboolean
string_member(const char *what, const cJSON *o, const char *key, const char **out,
              char **error_out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  *out = NULL;
  if (v == NULL || cJSON_IsNull(v))
    return TRUE;
  if (!cJSON_IsString(v))
    return say(error_out, "%s: %s: expected a string", what, key);
  *out = v->valuestring;
  return TRUE;
}

/* ---- traces ---------------------------------------------------------------------------- */

/* The stage named TEXT ("fwd", "bwd", "optim"), or -1. */
static int
stage_of(const char *text)
{
  for (int i = 0; i < STW_N_STAGES; i++)
    if (g_strcmp0(text, stw_stage_name((StwStage)i)) == 0)
      return i;
  return -1;
}

StwTrace *
stw_bind_trace_load(const char *file, char **error_out)
{
  GError *error = NULL;
  StwTrace *t = stw_trace_load(file, &error);
  if (t == NULL)
    give(error, error_out);
  return t;
}

void
stw_bind_trace_free(StwTrace *t)
{
  stw_trace_free(t);
}

gboolean
stw_bind_trace_save(const StwTrace *t, const char *file, char **error_out)
{
  GError *error = NULL;
  return stw_trace_save(t, file, &error) || give(error, error_out);
}

char *
stw_bind_trace_summary(const StwTrace *t, guint32 top)
{
  g_autoptr(StwTraceSummary) s = stw_trace_summary_new(t, top);
  return stw_trace_summary_json(t, s);
}

StwTrace *
stw_bind_import(const char *file, const char *options_json, char **error_out)
{
  cJSON *o = options_of("import", options_json, error_out);
  if (o == NULL)
    return NULL;
  static const char *const known[] = { "et", "memory_timeline", "iteration", "depth",
                                       "device_id", "pid", "params_from_memory", NULL };
  StwImportOptions io;
  stw_import_options_init(&io);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "iteration");
  const char *iteration = cJSON_GetStringValue(v);
  guint64 n = 0;
  gboolean has = FALSE;
  StwTrace *t = NULL;
  /* the CLI's --iteration, --depth, --device-id and --pid, with their ranges */
  if (!known_members("import", o, known, error_out) ||
      !string_member("import", o, "et", &io.et_file, error_out) ||
      !string_member("import", o, "memory_timeline", &io.timeline_file, error_out))
    goto out;
  if (g_strcmp0(iteration, "last") == 0) {
    io.iteration = STW_IMPORT_LAST;
  } else if (g_strcmp0(iteration, "whole") == 0) {
    io.iteration = STW_IMPORT_WHOLE;
  } else {
    if (!count_member("import", o, "iteration", 0, G_MAXINT32, &has, &n, error_out)) {
      g_free(*error_out);
      *error_out = g_strdup("import: iteration: expected a ProfilerStep number (0 to "
                            "2147483647), \"last\" or \"whole\"");
      goto out;
    }
    if (has)
      io.iteration = (gint64)n;
  }
  if (!count_member("import", o, "depth", 1, 64, &has, &n, error_out))
    goto out;
  if (has)
    io.depth = (guint)n;
  if (!count_member("import", o, "device_id", 0, 4095, &has, &n, error_out))
    goto out;
  if (has)
    io.device_id = (gint64)n;
  if (!count_member("import", o, "pid", 0, G_MAXINT32, &has, &n, error_out))
    goto out;
  if (has)
    io.pid = (gint64)n;
  v = cJSON_GetObjectItemCaseSensitive(o, "params_from_memory");
  if (v != NULL && !cJSON_IsBool(v) && !cJSON_IsNull(v)) {
    say(error_out, "import: params_from_memory: expected true or false");
    goto out;
  }
  io.params_from_memory = cJSON_IsTrue(v);
  GError *error = NULL;
  t = stw_import(file, &io, NULL, &error);
  if (t == NULL)
    give(error, error_out);
out:
  cJSON_Delete(o);
  return t;
}

StwTrace *
stw_bind_trace_new(const char *name, const char *device, guint64 memory_bytes)
{
  StwTrace *t = stw_trace_new();
  t->source.kind = STW_SOURCE_RUNTIME;
  g_free(t->model.name);
  t->model.name = g_strdup(name != NULL ? name : "");
  g_free(t->device.name);
  t->device.name = g_strdup(device != NULL ? device : "cpu");
  t->device.memory_bytes = memory_bytes;
  return t;
}

gint64
stw_bind_trace_add_tensor(StwTrace *t, const char *name, const char *dtype, const guint64 *shape,
                          guint32 ndim, char **error_out)
{
  StwDtype d;
  if (dtype == NULL || !stw_dtype_parse(dtype, &d))
    return say(error_out, "tensor %s: dtype '%s' is not fp32, fp16 or bf16", name,
               dtype != NULL ? dtype : "") - 1;
  if (ndim < 1 || ndim > STW_TRACE_MAX_DIMS)
    return say(error_out, "tensor %s: %u dimensions (1 to %d)", name, ndim,
               STW_TRACE_MAX_DIMS) - 1;
  return stw_trace_add_tensor(t, name, d, shape, ndim);
}

gint64
stw_bind_trace_add_op(StwTrace *t, const char *name, const char *stage, const guint32 *params,
                      guint32 n_params, const guint32 *grads, guint32 n_grads,
                      guint64 nonmodel_bytes, guint64 peak_bytes, guint64 duration_ns,
                      char **error_out)
{
  int s = stage_of(stage);
  if (s < 0)
    return say(error_out, "op %s: stage '%s' is not fwd, bwd or optim", name,
               stage != NULL ? stage : "") - 1;
  StwOp *op = stw_trace_add_op(t, name, (StwStage)s, params, n_params, grads, n_grads);
  op->nonmodel_bytes = nonmodel_bytes;
  op->nonmodel_peak_bytes = MAX(peak_bytes, nonmodel_bytes);
  op->duration_ns = duration_ns;
  return t->ops->len - 1;
}

gint64
stw_bind_trace_add_block(StwTrace *t, const char *name, guint32 fwd_first, guint32 fwd_last,
                         guint32 bwd_first, guint32 bwd_last, guint64 input_bytes,
                         guint64 saved_bytes, guint64 forward_ns)
{
  StwBlock *b = stw_trace_add_block(t, name, fwd_first, fwd_last, bwd_first, bwd_last);
  b->input_bytes = input_bytes;
  b->saved_bytes = saved_bytes;
  b->forward_ns = forward_ns;
  return t->blocks->len - 1;
}

void
stw_bind_trace_warn(StwTrace *t, const char *name, guint64 count)
{
  stw_trace_warn(t, name, count);
}

void
stw_bind_trace_set_shape(StwTrace *t, guint64 batch, guint64 seq)
{
  t->model.batch = batch;
  t->model.seq = seq;
}

gboolean
stw_bind_trace_set_steps(StwTrace *t, guint32 micro_steps, const char *gradients,
                         char **error_out)
{
  int g = -1;
  for (int i = 0; gradients != NULL && stw_gradients_names[i] != NULL; i++)
    if (strcmp(gradients, stw_gradients_names[i]) == 0)
      g = i;
  if (g < 0)
    return say(error_out, "trace: gradients '%s' are not chunks or framework",
               gradients != NULL ? gradients : "");
  if (micro_steps < 1 || micro_steps > STW_TRACE_MAX_MICRO_STEPS)
    return say(error_out, "trace: %u micro-steps (1 to %u)", micro_steps,
               STW_TRACE_MAX_MICRO_STEPS);
  t->model.micro_steps = micro_steps;
  t->model.gradients = (StwGradients)g;
  return TRUE;
}

gboolean
stw_bind_trace_set_autocast(StwTrace *t, const char *dtype, char **error_out)
{
  if (dtype == NULL || dtype[0] == '\0') {
    t->model.autocast = STW_DTYPE_FP32; /* none */
    return TRUE;
  }
  if (strcmp(dtype, "bf16") != 0 && strcmp(dtype, "fp16") != 0)
    return say(error_out, "trace: autocast '%s' is not bf16 or fp16", dtype);
  t->model.autocast = strcmp(dtype, "bf16") == 0 ? STW_DTYPE_BF16 : STW_DTYPE_FP16;
  return TRUE;
}

void
stw_bind_trace_set_amsgrad(StwTrace *t, gboolean amsgrad)
{
  t->model.amsgrad = amsgrad;
}

void
stw_bind_trace_set_process_bytes(StwTrace *t, guint64 bytes)
{
  t->device.process_bytes = MIN(bytes, STW_TRACE_MAX_INT);
}

void
stw_bind_trace_set_gpu_process_bytes(StwTrace *t, guint64 bytes)
{
  t->device.gpu_process_bytes = MIN(bytes, STW_TRACE_MAX_INT);
}

gboolean
stw_bind_trace_freeze(StwTrace *t, guint32 tensor, char **error_out)
{
  if (tensor >= t->tensors->len)
    return say(error_out, "trace: tensor %u is not one of the %u", tensor, t->tensors->len);
  g_array_index(t->tensors, StwTensor, tensor).frozen = TRUE;
  return TRUE;
}

gboolean
stw_bind_size_parse(const char *text, guint64 *bytes_out, char **error_out)
{
  GError *error = NULL;
  return stw_size_parse(text != NULL ? text : "", bytes_out, &error) || give(error, error_out);
}

gboolean
stw_bind_trace_validate(const StwTrace *t, char **error_out)
{
  GError *error = NULL;
  return stw_trace_validate(t, t->model.name, &error) || give(error, error_out);
}

/* ---- plans ----------------------------------------------------------------------------- */

StwPlan *
stw_bind_plan(const StwTrace *t, const char *trace_file, const char *options_json,
              char **error_out)
{
  /* the request the CLI's plan makes, parsed and checked by the same functions */
  g_autoptr(StwRequest) r = stw_request_new(&stw_request_plan_kind);
  StwPlannerOptions po;
  GError *error = NULL;
  StwPlan *plan = NULL;
  if (stw_request_set_json(r, options_json, &error) && stw_request_plan(r, t, &po, &error))
    plan = stw_planner_plan(t, trace_file, &po, &error);
  if (plan == NULL)
    give(error, error_out);
  return plan;
}

StwPlan *
stw_bind_plan_load(const char *file, char **error_out)
{
  GError *error = NULL;
  StwPlan *p = stw_plan_load(file, &error);
  if (p == NULL)
    give(error, error_out);
  return p;
}

gboolean
stw_bind_plan_save(const StwPlan *plan, const StwTrace *t, const char *file, char **error_out)
{
  GError *error = NULL;
  return stw_plan_save(plan, t, file, &error) || give(error, error_out);
}

void
stw_bind_plan_free(StwPlan *plan)
{
  stw_plan_free(plan);
}

static cJSON *
predictions_json(const StwPlanPredictions *pred)
{
  StwPrediction list[STW_N_PREDICTIONS];
  stw_plan_predictions_list(pred, list);
  cJSON *o = cJSON_CreateObject();
  for (int i = 0; i < STW_N_PREDICTIONS; i++)
    stw_json_add_u64(o, list[i].name, list[i].value);
  return o;
}

char *
stw_bind_plan_predictions(const StwPlan *plan)
{
  cJSON *o = predictions_json(&plan->pred);
  cJSON_AddStringToObject(o, "policy", stw_policy_names[plan->policy]);
  if (plan->chunking != NULL)
    stw_json_add_u64(o, "chunk_size", plan->chunking->size_elems);
  stw_json_add_u64(o, "gpu_budget", plan->budgets.gpu_bytes);
  /* kept free of it at every moment: the reserve asked for, or what the process holds of the
   * card outside its tensors (stw_budgets_on_device), the larger */
  stw_json_add_u64(o, "gpu_reserved", plan->budgets.reserved_bytes);
  if (plan->trace_file != NULL)
    cJSON_AddStringToObject(o, "trace_file", plan->trace_file);
  cJSON_AddItemToObject(o, "recompute", stw_json_u64_array((const guint32 *)plan->recompute->data,
                                                           plan->recompute->len));
  cJSON_AddItemToObject(o, "offload", stw_json_u64_array((const guint32 *)plan->offload->data,
                                                         plan->offload->len));
  cJSON_AddItemToObject(o, "activation_moves", stw_json_activation_moves(plan->moves));
  return print(o);
}

char *
stw_bind_check(const StwPlan *plan, const StwTrace *t, char **error_out)
{
  StwCheckReport report;
  GError *error = NULL;
  if (!stw_plan_check(plan, t, "the plan", &report, NULL, &error)) {
    give(error, error_out);
    return NULL;
  }
  return print(predictions_json(&report.pred));
}

char *
stw_bind_simulate(const StwPlan *plan, const StwTrace *t, gboolean detail, char **error_out)
{
  GError *error = NULL;
  if (!stw_plan_check(plan, t, "the plan", NULL, NULL, &error)) {
    give(error, error_out);
    return NULL;
  }
  StwSimulation sim;
  stw_simulate(plan, t, detail, &sim);
  char *text = stw_report_simulation_json(plan, t, &sim);
  stw_simulation_clear(&sim);
  return text;
}

char *
stw_bind_compare(const StwTrace *t, const char *trace_file, const char *options_json,
                 char **error_out)
{
  g_autoptr(StwRequest) r = stw_request_new(&stw_request_compare_kind);
  StwPlannerOptions o;
  guint64 budget = 0;
  GError *error = NULL;
  if (!stw_request_set_json(r, options_json, &error) || !stw_request_planning(r, t, &o, &error) ||
      !stw_request_gpu_budget(r, "gpu", &o, &budget, &error)) {
    give(error, error_out);
    return NULL;
  }
  StwComparison c;
  stw_whatif_compare(t, &o, budget, &c);
  char *text = stw_whatif_comparison_json(&c, trace_file, o.hw.name);
  stw_whatif_comparison_clear(&c);
  return text;
}

char *
stw_bind_whatif(const StwTrace *t, const char *options_json, char **error_out)
{
  g_autoptr(StwRequest) r = stw_request_new(&stw_request_whatif_kind);
  StwWhatifSweep s = { 0 };
  GError *error = NULL;
  if (!stw_request_set_json(r, options_json, &error) ||
      !stw_request_whatif_trace(r, t, &s, &error)) {
    give(error, error_out);
    stw_whatif_sweep_clear(&s);
    return NULL;
  }
  GArray *rows = stw_whatif_sweep_run(&s, NULL);
  char *text = stw_whatif_rows_json(rows);
  stw_whatif_rows_free(rows);
  stw_whatif_sweep_clear(&s);
  return text;
}

char *
stw_bind_minmem(const StwTrace *t, const char *trace_file, const char *options_json,
                char **error_out)
{
  g_autoptr(StwRequest) r = stw_request_new(&stw_request_minmem_kind);
  StwPlannerOptions o;
  StwPolicy policy;
  double allowed;
  StwMinmem m = { 0 };
  GError *error = NULL;
  char *text = NULL;
  if (stw_request_set_json(r, options_json, &error) &&
      stw_request_minmem(r, t, &o, &policy, &allowed, &error) &&
      stw_request_minmem_run(r, t, &o, policy, allowed, &m, &error))
    text = stw_whatif_minmem_json(&m, trace_file, o.hw.name);
  else
    give(error, error_out);
  stw_whatif_minmem_clear(&m);
  return text;
}

StwTrace *
stw_bind_synth(const char *options_json, char **error_out)
{
  g_autoptr(StwRequest) r = stw_request_new(&stw_request_synth_kind);
  GError *error = NULL;
  StwTrace *t = NULL;
  if (!stw_request_set_json(r, options_json, &error) ||
      (t = stw_request_synth(r, &error)) == NULL)
    give(error, error_out);
  return t;
}

char *
stw_bind_capacity(const char *options_json, char **error_out)
{
  g_autoptr(StwRequest) r = stw_request_new(&stw_request_capacity_kind);
  StwCapacityQuery q = { 0 };
  GError *error = NULL;
  if (!stw_request_set_json(r, options_json, &error) || !stw_request_capacity(r, &q, &error)) {
    give(error, error_out);
    stw_capacity_query_clear(&q);
    return NULL;
  }
  guint n = q.policies->len;
  StwCapacityAnswer *answers = g_new0(StwCapacityAnswer, MAX(n, 1));
  for (guint k = 0; k < n; k++)
    stw_capacity_run(&q, (StwPolicy)g_array_index(q.policies, int, k), &answers[k], NULL);
  char *text = stw_capacity_json(&q, answers, n);
  for (guint k = 0; k < n; k++)
    stw_capacity_answer_clear(&answers[k]);
  g_free(answers);
  stw_capacity_query_clear(&q);
  return text;
}

char *
stw_bind_probe(const char *options_json, char **error_out)
{
  g_autoptr(StwRequest) r = stw_request_new(&stw_request_probe_kind);
  StwProbeOptions o;
  StwProbe p = { 0 };
  GError *error = NULL;
  char *text = NULL;
  if (stw_request_set_json(r, options_json, &error) && stw_request_probe(r, &o, &error) &&
      (!o.collectives || stw_probe_collectives(NULL, &p, &error)) &&
      stw_probe_run(&o, &p, &error))
    text = stw_probe_json(&p);
  else
    give(error, error_out);
  stw_probe_clear(&p);
  return text;
}

/* ---- the runtime ------------------------------------------------------------------------ */

char *
stw_bind_trace_json(const StwTrace *t, char **error_out)
{
  GError *error = NULL;
  char *text = stw_trace_to_string(t, &error);
  if (text == NULL)
    give(error, error_out);
  return text;
}

struct StwBindRuntime {
  StwBackend *backend;
  StwRuntime *rt;
  const StwTrace *model;
  StwCompute *cuda; /* the CUDA compute table, for GPU Adam: made at the first device step */
};

StwBindRuntime *
stw_bind_runtime_new(const StwTrace *model, const float *const *init, const StwPlan *plan,
                     const StwTrace *plan_trace, guint64 device_bytes, const char *device,
                     const char *storage_dir, char **error_out)
{
  if (device == NULL)
    device = "host";
  if (strcmp(device, "host") != 0 && strcmp(device, "cuda") != 0) {
    say(error_out, "runtime: device '%s' is not host or cuda", device);
    return NULL;
  }
  GError *error = NULL;
  /* a plan is proved sound for its trace before anything of it runs (an edited file, another
   * trace's plan) */
  if (plan != NULL && !stw_plan_check(plan, plan_trace, "the plan", NULL, NULL, &error)) {
    give(error, error_out);
    return NULL;
  }
  StwBindRuntime *r = g_new0(StwBindRuntime, 1);
  r->model = model;
  if (strcmp(device, "cuda") == 0) {
    r->backend = stw_backend_cuda_new(0, stw_backend_arena_for(device_bytes), &error);
    if (r->backend == NULL) {
      give(error, error_out);
      g_free(r);
      return NULL;
    }
  } else {
    r->backend = stw_backend_host_new();
  }
  StwRuntimeOptions o = { .mode = plan != NULL ? STW_RUNTIME_REPLAY : STW_RUNTIME_PROFILE,
                          .device_bytes = device_bytes, .plan = plan,
                          .plan_trace = plan_trace, .activations_outside = TRUE,
                          .storage_dir = storage_dir };
  r->rt = stw_runtime_new(model, init, &o, r->backend, &error);
  if (r->rt == NULL) {
    give(error, error_out);
    stw_bind_runtime_free(r);
    return NULL;
  }
  return r;
}

void
stw_bind_runtime_free(StwBindRuntime *r)
{
  if (r == NULL)
    return;
  stw_runtime_free(r->rt);
  if (r->cuda != NULL)
    r->cuda->free(r->cuda);
  if (r->backend != NULL)
    r->backend->free(r->backend);
  g_free(r);
}

void
stw_bind_runtime_iteration_begin(StwBindRuntime *r)
{
  stw_runtime_iteration_begin(r->rt);
}

void
stw_bind_runtime_iteration_abandon(StwBindRuntime *r)
{
  stw_runtime_iteration_abandon(r->rt);
}

gboolean
stw_bind_runtime_iteration_end(StwBindRuntime *r, char **error_out)
{
  GError *error = NULL;
  return stw_runtime_iteration_end(r->rt, &error) || give(error, error_out);
}

gboolean
stw_bind_runtime_op_begin(StwBindRuntime *r, const char *name, const char *stage,
                          const guint32 *params, guint32 n_params, const guint32 *grads,
                          guint32 n_grads, char **error_out)
{
  int s = stage_of(stage);
  if (s < 0)
    return say(error_out, "op %s: stage '%s' is not fwd, bwd or optim", name,
               stage != NULL ? stage : "");
  for (guint32 i = 0; i < n_params + n_grads; i++) {
    guint32 id = i < n_params ? params[i] : grads[i - n_params];
    if (id >= r->model->tensors->len)
      return say(error_out, "op %s: tensor %u is not one of the model's %u", name, id,
                 r->model->tensors->len);
  }
  GError *error = NULL;
  return stw_runtime_op_begin(r->rt, name, (StwStage)s, params, n_params, grads, n_grads,
                              &error) ||
         give(error, error_out);
}

void
stw_bind_runtime_op_end(StwBindRuntime *r)
{
  stw_runtime_op_end(r->rt);
}

gboolean
stw_bind_runtime_unplanned_op_begin(StwBindRuntime *r, const char *name, const guint32 *params,
                                    guint32 n_params, char **error_out)
{
  for (guint32 i = 0; i < n_params; i++) {
    if (params[i] >= r->model->tensors->len)
      return say(error_out, "op %s: tensor %u is not one of the model's %u", name, params[i],
                 r->model->tensors->len);
  }
  GError *error = NULL;
  return stw_runtime_unplanned_op_begin(r->rt, name, params, n_params, &error) ||
         give(error, error_out);
}

float *
stw_bind_runtime_param(StwBindRuntime *r, guint32 tensor)
{
  if (tensor >= r->model->tensors->len)
    return NULL;
  return stw_runtime_param(r->rt, tensor); /* NULL when no op holds it resident */
}

static float
adam_member(const cJSON *o, const char *key, float fallback)
{
  const cJSON *v = cJSON_GetObjectItem(o, key);
  return cJSON_IsNumber(v) ? (float)v->valuedouble : fallback;
}

/* ADAM_JSON's hyperparameters into C; with TO_COPY, its "weights" too ("copy": the new weights
 * into param alone, master only read; "both", the default: into both). */
static gboolean
adam_config(const char *adam_json, StwAdamConfig *c, gboolean *to_copy, char **error_out)
{
  cJSON *o = options_of("adam", adam_json, error_out);
  if (o == NULL)
    return FALSE;
  const cJSON *weights = cJSON_GetObjectItem(o, "weights");
  gboolean copy = cJSON_IsString(weights) && strcmp(weights->valuestring, "copy") == 0;
  gboolean weights_known = weights == NULL || copy ||
                           (cJSON_IsString(weights) && strcmp(weights->valuestring, "both") == 0);
  if (to_copy != NULL)
    *to_copy = copy;
  stw_adam_config_init(c);
  c->lr = adam_member(o, "lr", c->lr);
  c->beta1 = adam_member(o, "beta1", c->beta1);
  c->beta2 = adam_member(o, "beta2", c->beta2);
  c->eps = adam_member(o, "eps", c->eps);
  c->weight_decay = adam_member(o, "weight_decay", c->weight_decay);
  c->amsgrad = cJSON_IsTrue(cJSON_GetObjectItem(o, "amsgrad"));
  c->loss_scale = adam_member(o, "loss_scale", c->loss_scale);
  const cJSON *state = cJSON_GetObjectItem(o, "state");
  gboolean known = state == NULL || (cJSON_IsString(state) &&
                                     stw_state_dtype_parse(state->valuestring, &c->state_dtype));
  cJSON_Delete(o);
  if (!known)
    return say(error_out, "adam: state: \"fp32\" or \"bf16\" (the moments' dtype)");
  if (to_copy != NULL && !weights_known)
    return say(error_out, "adam: weights: \"both\" (the new weights into param and master) or "
               "\"copy\" (into param alone, master only read)");
  if (!(c->loss_scale > 0) || isinf(c->loss_scale))
    return say(error_out, "adam: loss_scale %g: a positive finite number", (double)c->loss_scale);
  return TRUE;
}

gboolean
stw_bind_adam(float *param, float *master, void *m, void *v, guint64 n, const char *adam_json,
              guint64 step, char **error_out)
{
  StwAdamConfig c;
  gboolean to_copy = FALSE;
  if (!adam_config(adam_json, &c, &to_copy, error_out))
    return FALSE;
  if (step < 1)
    return say(error_out, "adam: step %" G_GUINT64_FORMAT " (from 1)", step);
  if (param == NULL || master == NULL || m == NULL || v == NULL)
    return say(error_out, "adam: an array is NULL (param, master, m and v are all needed)");
  if (n < 1 || n > STW_TRACE_MAX_NUMEL)
    return say(error_out, "adam: %" G_GUINT64_FORMAT " elements (1 to 2^48)", n);
  if (to_copy)
    stw_compute_host_adam_to_copy(param, master, m, v, n, &c, step);
  else
    stw_compute_host_adam(param, STW_DTYPE_FP32, master, m, v, n, &c, step);
  return TRUE;
}

float *
stw_bind_runtime_optim_grad(StwBindRuntime *r, guint32 tensor, gboolean *on_device)
{
  if (tensor >= r->model->tensors->len || stw_trace_tensor(r->model, tensor)->frozen)
    return NULL;
  gpointer param, m, v;
  float *master;
  stw_runtime_gradient_arrives(r->rt, tensor); /* the caller copies it there */
  gboolean device = stw_runtime_optim(r->rt, tensor, &param, &master, &m, &v);
  if (on_device != NULL)
    *on_device = device && !r->backend->device_is_host;
  return param;
}

const float *
stw_bind_runtime_optim_weights(StwBindRuntime *r, guint32 tensor)
{
  if (tensor >= r->model->tensors->len || stw_trace_tensor(r->model, tensor)->frozen)
    return NULL;
  return stw_runtime_optim_weights(r->rt, tensor);
}

gboolean
stw_bind_runtime_adam(StwBindRuntime *r, guint32 tensor, const char *adam_json, guint64 step,
                      char **error_out)
{
  StwAdamConfig c;
  if (!adam_config(adam_json, &c, NULL, error_out))
    return FALSE;
  if (tensor >= r->model->tensors->len || step < 1)
    return say(error_out, "adam: tensor %u of %u, step %" G_GUINT64_FORMAT " (from 1)", tensor,
               r->model->tensors->len, step);
  if (stw_trace_tensor(r->model, tensor)->frozen)
    return say(error_out, "adam: tensor %s is frozen: it has no optimizer state",
               stw_trace_tensor(r->model, tensor)->name);
  if (c.amsgrad && !stw_runtime_amsgrad(r->rt))
    return say(error_out, "adam: amsgrad, and the plan's layout keeps no largest variances (its "
               "trace's optimizer has no model.amsgrad): profile with amsgrad=True and plan "
               "again");
  c.state_dtype = stw_runtime_state_dtype(r->rt); /* the layout's moments */
  g_autoptr(GArray) stepped = g_array_new(FALSE, FALSE, sizeof(guint32));
  stw_runtime_optim_tensors(r->rt, tensor, stepped);
  for (guint i = 0; i < stepped->len; i++) {
    guint32 id = g_array_index(stepped, guint32, i);
    gpointer param, m, v;
    float *master;
    gsize numel = stw_trace_tensor(r->model, id)->numel;
    StwDtype dtype = stw_trace_tensor(r->model, id)->dtype;
    /* the host backend's device is host memory: its Adam and the CPU's are the same code */
    if (!stw_runtime_optim(r->rt, id, &param, &master, &m, &v) || r->backend->device_is_host) {
      if (stw_runtime_optim_weights_in_copy(r->rt, id))
        stw_compute_host_adam_to_copy(param, master, m, v, numel, &c, step);
      else
        stw_compute_host_adam(param, dtype, master, m, v, numel, &c, step);
      continue;
    }
    GError *error = NULL;
    if (r->cuda == NULL && (r->cuda = stw_compute_cuda_new(FALSE, &error)) == NULL)
      return give(error, error_out);
    r->cuda->adam(r->cuda, param, dtype, master, m, v, numel, &c, step);
    if (!r->cuda->ok(r->cuda))
      return say(error_out, "adam of tensor %u on the GPU: %s", id, r->cuda->error);
  }
  return TRUE;
}

char *
stw_bind_runtime_stats(StwBindRuntime *r)
{
  const StwRuntimeStats *s = stw_runtime_stats(r->rt);
  cJSON *o = cJSON_CreateObject();
  stw_json_add_u64(o, "h2d_bytes", s->h2d_bytes);
  stw_json_add_u64(o, "d2h_bytes", s->d2h_bytes);
  stw_json_add_u64(o, "warmup_h2d_bytes", s->warmup_h2d_bytes);
  stw_json_add_u64(o, "peak_device_bytes", s->peak_device_bytes);
  stw_json_add_u64(o, "peak_settled_bytes", s->peak_settled_bytes);
  stw_json_add_u64(o, "deviations", s->deviations);
  stw_json_add_u64(o, "ops", s->ops);
  stw_json_add_u64(o, "bookkeeping_ns", s->bookkeeping_ns);
  stw_json_add_u64(o, "copy_wait_ns", s->copy_wait_ns);
  stw_json_add_u64(o, "unplanned_ops", s->unplanned_ops);
  stw_json_add_u64(o, "unplanned_h2d_bytes", s->unplanned_h2d_bytes);
  stw_json_add_u64(o, "unplanned_d2h_bytes", s->unplanned_d2h_bytes);
  stw_json_add_u64(o, "abandoned_iterations", s->abandoned_iterations);
  if (s->storage_engine[0] != '\0') {
    stw_json_add_u64(o, "storage_read_bytes", s->storage_read_bytes);
    stw_json_add_u64(o, "storage_write_bytes", s->storage_write_bytes);
    stw_json_add_u64(o, "storage_wait_ns", s->storage_wait_ns);
    cJSON_AddStringToObject(o, "storage_engine", s->storage_engine);
    cJSON_AddStringToObject(o, "storage_fallback", s->storage_fallback);
  }
  return print(o);
}

gboolean
stw_bind_runtime_master(StwBindRuntime *r, guint32 tensor, float *out, char **error_out)
{
  if (tensor >= r->model->tensors->len || out == NULL)
    return say(error_out, "runtime: tensor %u is not one of the model's %u", tensor,
               r->model->tensors->len);
  gsize n = stw_trace_tensor(r->model, tensor)->numel;
  g_autofree float *m = g_new(float, MAX(n, 1)), *v = g_new(float, MAX(n, 1));
  GError *error = NULL;
  return stw_runtime_read_state(r->rt, tensor, out, m, v, &error) || give(error, error_out);
}

gboolean
stw_bind_runtime_hand_back(StwBindRuntime *r, guint32 tensor, char **error_out)
{
  GError *error = NULL;
  return stw_runtime_hand_back(r->rt, tensor, &error) || give(error, error_out);
}

gboolean
stw_bind_runtime_read_state(StwBindRuntime *r, guint32 tensor, float *master, float *m,
                            float *v, float *vmax, char **error_out)
{
  if (tensor >= r->model->tensors->len)
    return say(error_out, "runtime: tensor %u is not one of the model's %u", tensor,
               r->model->tensors->len);
  if (master == NULL || m == NULL || v == NULL)
    return say(error_out, "runtime: read_state: an array is NULL");
  GError *error = NULL;
  return (stw_runtime_read_state(r->rt, tensor, master, m, v, &error) &&
          (vmax == NULL || stw_runtime_read_max_variance(r->rt, tensor, vmax, &error))) ||
         give(error, error_out);
}

gboolean
stw_bind_runtime_write_state(StwBindRuntime *r, guint32 tensor, const float *master,
                             const float *m, const float *v, const float *vmax,
                             char **error_out)
{
  if (tensor >= r->model->tensors->len)
    return say(error_out, "runtime: tensor %u is not one of the model's %u", tensor,
               r->model->tensors->len);
  if (master == NULL || m == NULL || v == NULL)
    return say(error_out, "runtime: write_state: an array is NULL");
  GError *error = NULL;
  return (stw_runtime_write_state(r->rt, tensor, master, m, v, &error) &&
          (vmax == NULL || stw_runtime_write_max_variance(r->rt, tensor, vmax, &error))) ||
         give(error, error_out);
}
