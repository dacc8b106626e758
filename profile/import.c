/* import.c — the import of a PyTorch file by its kind: a Kineto trace with the files of the
 * same run, or an execution trace alone; see import.h. */
#include "config.h"

#include <stowage/import.h>

#include "import-internal.h"

#include <string.h>

/* An execution trace alone: its ops in order, nested, the parameters by identity, no durations
 * and no memory (both said in the trace's source). */
static StwTrace *
import_et_alone(const char *file, const StwImportOptions *o, StwImportReport *rep,
                GError **error)
{
  ImportIteration it = { .file = file, .o = o, .rep = rep, .pid = -1, .device = -1,
                         .main_tid = -1, .untimed = TRUE, .rank = 0,
                         .world_size = 1 };
  if (!import_et_as_trace(&it, file, error)) {
    import_iteration_clear(&it);
    return NULL;
  }
  /* the iteration: a ProfilerStep#N node, as in a Kineto trace */
  gint64 want = o->iteration;
  guint chosen = G_MAXUINT, steps = 0;
  GString *numbers = g_string_new(NULL);
  for (guint i = 0; i < it.n_evs; i++) {
    gint64 n;
    if (!import_step_number(it.evs[i].name, &n))
      continue;
    steps++;
    g_string_append_printf(numbers, "%s%" G_GINT64_FORMAT, numbers->len ? ", " : "", n);
    if (want == STW_IMPORT_LAST || want == n) {
      chosen = i;
      rep->iteration = n;
    }
  }
  rep->iterations = steps;
  if (want != STW_IMPORT_WHOLE && chosen == G_MAXUINT) {
    if (steps == 0)
      g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_ITERATION,
                  "%s: no iteration marker (ProfilerStep#N node): record the execution trace "
                  "inside a profiler schedule, or give --iteration whole", file);
    else
      g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_ITERATION,
                  "%s: no ProfilerStep#%" G_GINT64_FORMAT ": the execution trace holds %s", file,
                  want, numbers->str);
    g_string_free(numbers, TRUE);
    import_iteration_clear(&it);
    return NULL;
  }
  g_string_free(numbers, TRUE);
  if (want == STW_IMPORT_WHOLE) {
    rep->iteration = -1;
  } else {
    /* the step's descendants only */
    ImportEvent step = it.evs[chosen];
    guint kept = 0;
    for (guint i = 0; i < it.n_evs; i++)
      if (it.evs[i].ts > step.ts && it.evs[i].end < step.end)
        it.evs[kept++] = it.evs[i];
    it.n_evs = kept;
    it.main_tid = step.tid;
    it.t0 = step.ts;
    it.t1 = step.end;
  }
  rep->events = rep->et_nodes;
  rep->untimed = TRUE;
  it.device_name = g_strdup("cpu");
  StwTrace *t = import_build(&it, error);
  import_iteration_clear(&it);
  return t;
}

StwTrace *
stw_import(const char *file, const StwImportOptions *options, StwImportReport *report,
           GError **error)
{
  StwImportReport local_report;
  StwImportReport *rep = report != NULL ? report : &local_report;
  memset(rep, 0, sizeof *rep);
  StwImportKind kind = stw_import_detect(file, error);
  if (kind == STW_IMPORT_AUTO)
    return NULL;
  if (kind == STW_IMPORT_TIMELINE) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_KIND,
                "%s: this is a memory timeline, which has no ops: import the Kineto trace of "
                "the same run and give this file with --memory-timeline", file);
    return NULL;
  }
  if (kind == STW_IMPORT_ET) {
    if (options->et_file != NULL) {
      g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_KIND,
                  "%s: this is an execution trace already: --et goes with a Kineto trace", file);
      return NULL;
    }
    return import_et_alone(file, options, rep, error);
  }
  return stw_import_kineto(file, options, rep, error);
}

char *
stw_import_report_json(const StwImportReport *r, const StwTrace *t, const char *output)
{
  cJSON *o = cJSON_CreateObject();
  if (output != NULL)
    cJSON_AddStringToObject(o, "output", output);
  stw_json_add_u64(o, "ops", t->ops->len);
  stw_json_add_u64(o, "events", r->events);
  stw_json_add_u64(o, "unknown_events", r->unknown_events);
  cJSON_AddNumberToObject(o, "iteration", (double)r->iteration);
  stw_json_add_u64(o, "iterations", r->iterations);
  cJSON_AddNumberToObject(o, "start_us", r->start_us);
  cJSON_AddNumberToObject(o, "end_us", r->end_us);
  stw_json_add_u64(o, "op_events", r->cpu_ops);
  stw_json_add_u64(o, "modules", r->modules);
  stw_json_add_u64(o, "depth", r->depth);
  stw_json_add_u64(o, "kernels", r->kernels);
  stw_json_add_u64(o, "ops_gpu_timed", r->ops_gpu_timed);
  stw_json_add_u64(o, "ops_cpu_timed", r->ops_cpu_timed);
  stw_json_add_u64(o, "memory_events", r->memory_events);
  cJSON_AddNumberToObject(o, "device_id", (double)r->device_id);
  cJSON_AddBoolToObject(o, "has_total_allocated", r->has_total_allocated);
  cJSON_AddBoolToObject(o, "untimed", r->untimed);
  stw_json_add_u64(o, "allocated_at_start", r->allocated_at_start);
  stw_json_add_u64(o, "allocated_peak", r->allocated_peak);
  stw_json_add_u64(o, "peak_above_start", r->peak_above_start);
  cJSON_AddStringToObject(o, "param_source", r->param_source);
  stw_json_add_u64(o, "params", r->params);
  stw_json_add_u64(o, "param_bytes", r->param_bytes);
  stw_json_add_u64(o, "et_nodes", r->et_nodes);
  stw_json_add_u64(o, "et_linked", r->et_linked);
  stw_json_add_u64(o, "timeline_rows", r->timeline_rows);
  stw_json_add_u64(o, "timeline_peak", r->timeline_peak);
  cJSON *at = cJSON_AddObjectToObject(o, "timeline_at_peak");
  static const char *const cats[] = { "parameter", "optimizer_state", "input", "temporary",
                                      "activation", "gradient", "autograd", "unknown" };
  for (int c = 0; c < 8; c++)
    stw_json_add_u64(at, cats[c], r->timeline_at_peak[c]);
  return stw_json_take_text(o, TRUE);
}

