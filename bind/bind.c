/* bind.c — the library for other languages; see bind.h. Each function marshals its arguments
 * (JSON, names, sizes) into the public C API's and its results back; nothing is decided here
 * that the library decides elsewhere. */
#include "config.h"

#include <stowage/stowage.h>

#include "json.h"

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
  char *text = cJSON_PrintUnformatted(o);
  char *out = g_strdup(text);
  cJSON_free(text);
  cJSON_Delete(o);
  return out;
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

/* ---- traces ---------------------------------------------------------------------------- */

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
  return print(stw_trace_summary_to_json(t, s));
}

StwTrace *
stw_bind_import(const char *file, const char *options_json, char **error_out)
{
  cJSON *o = options_of("import", options_json, error_out);
  if (o == NULL)
    return NULL;
  StwImportOptions io;
  stw_import_options_init(&io);
  const cJSON *v;
  io.et_file = cJSON_GetStringValue(cJSON_GetObjectItem(o, "et"));
  io.timeline_file = cJSON_GetStringValue(cJSON_GetObjectItem(o, "memory_timeline"));
  if ((v = cJSON_GetObjectItem(o, "iteration")) != NULL)
    io.iteration = cJSON_IsNumber(v) ? (gint64)v->valuedouble
                   : g_strcmp0(cJSON_GetStringValue(v), "whole") == 0 ? STW_IMPORT_WHOLE
                                                                       : STW_IMPORT_LAST;
  if (cJSON_IsNumber(v = cJSON_GetObjectItem(o, "depth")) && v->valuedouble >= 1)
    io.depth = (guint)v->valuedouble;
  if (cJSON_IsNumber(v = cJSON_GetObjectItem(o, "device_id")))
    io.device_id = (gint64)v->valuedouble;
  if (cJSON_IsNumber(v = cJSON_GetObjectItem(o, "pid")))
    io.pid = (gint64)v->valuedouble;
  io.params_from_memory = cJSON_IsTrue(cJSON_GetObjectItem(o, "params_from_memory"));
  GError *error = NULL;
  StwTrace *t = stw_import(file, &io, NULL, &error);
  cJSON_Delete(o);
  if (t == NULL)
    give(error, error_out);
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
  int s = -1;
  for (int i = 0; i < STW_N_STAGES; i++)
    if (g_strcmp0(stage, stw_stage_name((StwStage)i)) == 0)
      s = i;
  if (s < 0)
    return say(error_out, "op %s: stage '%s' is not fwd, bwd or optim", name,
               stage != NULL ? stage : "") - 1;
  StwOp *op = stw_trace_add_op(t, name, (StwStage)s, params, n_params, grads, n_grads);
  op->nonmodel_bytes = nonmodel_bytes;
  op->nonmodel_peak_bytes = MAX(peak_bytes, nonmodel_bytes);
  op->duration_ns = duration_ns;
  return t->ops->len - 1;
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
stw_bind_trace_validate(const StwTrace *t, char **error_out)
{
  GError *error = NULL;
  return stw_trace_validate(t, t->model.name, &error) || give(error, error_out);
}

/* ---- plans ----------------------------------------------------------------------------- */

/* A size member KEY of O: a number of bytes or a string stw_size_parse reads. */
static gboolean
size_member(const cJSON *o, const char *key, gboolean required, guint64 *out, char **error_out)
{
  const cJSON *v = cJSON_GetObjectItem(o, key);
  if (v == NULL)
    return !required || say(error_out, "plan: the option '%s' is required", key);
  if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9.0e15) {
    *out = (guint64)v->valuedouble;
    return TRUE;
  }
  GError *error = NULL;
  if (cJSON_IsString(v) && stw_size_parse(v->valuestring, out, &error))
    return TRUE;
  if (error != NULL) {
    say(error_out, "plan: %s: %s", key, error->message);
    g_error_free(error);
    return FALSE;
  }
  return say(error_out, "plan: %s: expected a number of bytes or a size such as \"4GiB\"", key);
}

static gboolean
name_member(const cJSON *o, const char *key, const char *const *names, int *out,
            char **error_out)
{
  const cJSON *v = cJSON_GetObjectItem(o, key);
  if (v == NULL)
    return TRUE;
  for (int i = 0; cJSON_IsString(v) && names[i] != NULL; i++) {
    if (g_ascii_strcasecmp(v->valuestring, names[i]) == 0) {
      *out = i;
      return TRUE;
    }
  }
  g_autofree char *list = g_strjoinv(", ", (char **)names);
  return say(error_out, "plan: %s: expected one of %s", key, list);
}

StwPlan *
stw_bind_plan(const StwTrace *t, const char *trace_file, const char *options_json,
              char **error_out)
{
  cJSON *o = options_of("plan", options_json, error_out);
  if (o == NULL)
    return NULL;
  StwHardware hw;
  GError *error = NULL;
  const char *hw_name = cJSON_GetStringValue(cJSON_GetObjectItem(o, "hw"));
  if (hw_name == NULL) /* as the CLI: the trace's device when a profile has its name */
    hw_name = stw_hardware_lookup(t->device.name, &hw, NULL) ? t->device.name
                                                              : STW_HARDWARE_DEFAULT;
  StwPlannerOptions po;
  StwPlan *plan = NULL;
  int policy = STW_POLICY_STOWAGE, objective = STW_OBJECTIVE_TIME;
  const cJSON *v;
  if (!stw_hardware_lookup(hw_name, &hw, &error)) {
    give(error, error_out);
    goto out;
  }
  stw_planner_options_init(&po, &hw);
  if (!size_member(o, "gpu", TRUE, &po.budgets.gpu_bytes, error_out) ||
      !size_member(o, "cpu", FALSE, &po.budgets.cpu_bytes, error_out) ||
      !size_member(o, "reserve", FALSE, &po.budgets.reserved_bytes, error_out) ||
      !name_member(o, "policy", stw_policy_names, &policy, error_out) ||
      !name_member(o, "objective", stw_objective_names, &objective, error_out))
    goto out;
  po.policy = (StwPolicy)policy;
  po.objective = (StwObjective)objective;
  if (cJSON_IsNumber(v = cJSON_GetObjectItem(o, "gpus")) && v->valuedouble >= 1 &&
      v->valuedouble <= STW_PLAN_MAX_WORLD)
    po.world_size = (guint32)v->valuedouble;
  if (cJSON_IsNumber(v = cJSON_GetObjectItem(o, "chunk_size")) && v->valuedouble >= 1)
    po.chunk_size_elems = (guint64)v->valuedouble;
  plan = stw_planner_plan(t, trace_file, &po, &error);
  if (plan == NULL)
    give(error, error_out);
out:
  cJSON_Delete(o);
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
stw_bind_simulate(const StwPlan *plan, const StwTrace *t, char **error_out)
{
  GError *error = NULL;
  if (!stw_plan_check(plan, t, "the plan", NULL, NULL, &error)) {
    give(error, error_out);
    return NULL;
  }
  StwSimulation sim;
  stw_simulate(plan, t, FALSE, &sim);
  cJSON *o = cJSON_CreateObject();
  stw_json_add_u64(o, "iteration_ns", sim.iteration_ns);
  stw_json_add_u64(o, "compute_busy_ns", sim.compute_busy_ns);
  stw_json_add_u64(o, "compute_stall_ns", sim.compute_stall_ns);
  stw_json_add_u64(o, "h2d_bytes", sim.h2d_bytes);
  stw_json_add_u64(o, "d2h_bytes", sim.d2h_bytes);
  stw_json_add_u64(o, "h2d_busy_ns", sim.h2d_busy_ns);
  stw_json_add_u64(o, "d2h_busy_ns", sim.d2h_busy_ns);
  stw_json_add_u64(o, "cpu_busy_ns", sim.cpu_busy_ns);
  stw_json_add_u64(o, "peak_gpu_bytes", sim.peak_gpu_bytes);
  stw_json_add_u64(o, "over_budget_bytes", sim.over_budget_bytes);
  stw_json_add_u64(o, "cpu_bytes", sim.cpu_bytes);
  stw_simulation_clear(&sim);
  return print(o);
}
