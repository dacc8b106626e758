/* import-kineto.c — a torch.profiler (Kineto) trace as a stowage trace; see import.h and
 * docs/profiling.md ("PyTorch files").
 *
 * Two passes over the streamed file: the first finds the iteration markers (ProfilerStep#N) and
 * chooses the iteration; the second keeps the op, kernel and memory events of that iteration
 * only, as small records, so that memory is bounded by one iteration. The records are then
 * nested per thread, cut at the chosen depth into the trace's ops, and given their stages,
 * durations, memory and parameters.
 */
#include "config.h"

#include <stowage/import.h>

#include "import-internal.h"
#include "json-stream.h"
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(stw-import-error-quark, stw_import_error)

const char *const stw_import_kind_names[] = { "auto", "kineto", "et", "timeline", NULL };

void
stw_import_options_init(StwImportOptions *o)
{
  *o = (StwImportOptions){ .iteration = STW_IMPORT_LAST, .depth = 0,
                           .device_id = STW_IMPORT_ANY_DEVICE, .pid = -1 };
}

/* ---- reading events ------------------------------------------------------------------------ */

typedef struct {
  gint64 number;
  double ts, end;
  gint64 pid, tid;
} Step;

/* An op-like event of the iteration: a cpu_op (Operator before 2022) or an annotation. */
typedef struct {
  double ts, end;
  const char *name; /* in the string chunk */
  gint64 pid, tid;
  gint64 ext_id, seq, rf_id;
  const char *module; /* "Module Hierarchy", or NULL */
  ImportShapes *shapes; /* the inputs of an op that takes parameters, or NULL */
  guint32 parent, depth, trace_op;
  gboolean module_event; /* an nn.Module's forward (a python_function event) */
} Ev;

typedef struct {
  double ts, dur;
  gint64 ext_id, correlation, device;
} Kernel;

typedef struct {
  double ts;
  gint64 order;       /* Ev Idx, else the file's order */
  gint64 bytes;
  gint64 total;       /* Total Allocated, -1 when absent */
  gint64 device_type; /* 0 CPU, 1 CUDA */
  gint64 device_id;
} Mem;

typedef struct {
  const char *file;
  const StwImportOptions *o;
  StwImportReport *rep;
  /* pass 1 */
  GArray *steps; /* Step */
  /* the window of pass 2 */
  double t0, t1, kernel_t1;
  /* pass 2 */
  GStringChunk *strings;
  GArray *evs;      /* Ev */
  GArray *kernels;  /* Kernel */
  GArray *mems;     /* Mem */
  GArray *runtimes; /* ImportRuntime */
  GHashTable *pids; /* op pids seen in the window */
  GHashTable *cuda_devices;
  cJSON *device_properties, *distributed_info;
  double base_ns;   /* baseTimeNanoseconds, 0 when absent */
  guint64 kept;
  guint64 moved;    /* the bytes the window's [memory] events allocate and free */
} Scan;

/* TEXT kept once, capped to what a trace's names hold (import_capped_name): 1,500 distinct op
 * names of 1 MB keep 1.5 MB, not 1.5 GB. */
static const char *
intern(Scan *s, const char *text)
{
  return text != NULL ? import_capped_name(s->strings, text) : NULL;
}

/* An integer member that Kineto writes as a number or, in older traces, a string. */
static gboolean
int_of(const cJSON *v, gint64 *out)
{
  if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && fabs(v->valuedouble) < 9.0e15) {
    *out = (gint64)v->valuedouble;
    return TRUE;
  }
  if (cJSON_IsString(v)) {
    char *end = NULL;
    gint64 x = g_ascii_strtoll(v->valuestring, &end, 10);
    if (end != v->valuestring && *end == '\0') {
      *out = x;
      return TRUE;
    }
  }
  return FALSE;
}

static gint64
arg_int(const cJSON *args, const char *key, gint64 fallback)
{
  gint64 v;
  return int_of(cJSON_GetObjectItemCaseSensitive(args, key), &v) ? v : fallback;
}

static gboolean
num_of(const cJSON *v, double *out)
{
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
    return FALSE;
  *out = v->valuedouble;
  return TRUE;
}

static gboolean
bad_event(Scan *s, guint64 index, GError **error, const char *what)
{
  g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
              "%s: traceEvents[%" G_GUINT64_FORMAT "]: %s", s->file, index, what);
  return FALSE;
}

/* Whether TS and DUR (µs) are times of a clock: a time within 2^53 µs of its origin, a duration
 * from 0 to 2^53 ns (104 days, the trace format's bound), so that no time in ns wraps. */
static gboolean
span_ok(double ts, double dur)
{
  return fabs(ts) <= 9007199254740992.0 && dur >= 0 && dur <= 9007199254740.992;
}

static gboolean
pass1_event(const char *key, guint64 index, const char *text, gsize len, gpointer data,
            GError **error)
{
  (void)key;
  Scan *s = data;
  s->rep->events++;
  if (g_strstr_len(text, (gssize)len, "ProfilerStep#") == NULL)
    return TRUE;
  g_autoptr(cJSON) e = cJSON_ParseWithLength(text, len);
  if (!cJSON_IsObject(e))
    return bad_event(s, index, error, "not a JSON object");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
  const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
  const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
  Step st;
  double ts, dur;
  if (!cJSON_IsString(name) || !import_step_number(name->valuestring, &st.number) ||
      !cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0)
    return TRUE;
  if (cJSON_IsString(cat) && strcmp(cat->valuestring, "gpu_user_annotation") == 0)
    return TRUE; /* the GPU's mirror of the CPU's marker */
  if (!num_of(cJSON_GetObjectItemCaseSensitive(e, "ts"), &ts) ||
      !num_of(cJSON_GetObjectItemCaseSensitive(e, "dur"), &dur) || !span_ok(ts, dur))
    return bad_event(s, index, error, "a ProfilerStep# event without a number ts and a dur "
                     "from 0 to 2^53 ns");
  st.ts = ts;
  st.end = ts + dur;
  st.pid = -1;
  st.tid = -1;
  int_of(cJSON_GetObjectItemCaseSensitive(e, "pid"), &st.pid);
  int_of(cJSON_GetObjectItemCaseSensitive(e, "tid"), &st.tid);
  if (s->steps->len >= 1u << 20)
    return bad_event(s, index, error, "more than 2^20 ProfilerStep# markers");
  g_array_append_val(s->steps, st);
  return TRUE;
}

static const char *const op_cats[] = { "cpu_op", "Operator", "user_annotation", NULL };
static const char *const kernel_cats[] = { "kernel", "Kernel", "gpu_memcpy", "Memcpy",
                                           "gpu_memset", "Memset", NULL };
/* Kinds read and not needed: metadata, flows, runtime calls, the GPU's mirror of annotations. */
static const char *const runtime_cats[] = { "cuda_runtime", "Runtime", "cuda_driver", NULL };
static const char *const known_cats[] = { "ac2g", "async",
                                          "fwdbwd", "gpu_user_annotation", "Trace",
                                          "python_function", "cpu_instant_event", "overhead",
                                          "Overhead", NULL };

static gboolean
in_list(const char *const *list, const char *s)
{
  for (gsize i = 0; list[i] != NULL; i++)
    if (strcmp(list[i], s) == 0)
      return TRUE;
  return FALSE;
}

static gboolean
keep(Scan *s, guint64 index, GError **error)
{
  if (++s->kept > STW_IMPORT_MAX_EVENTS) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                "%s: traceEvents[%" G_GUINT64_FORMAT "]: the iteration holds more than %u op, "
                "kernel and memory events (the importer's bound)", s->file, index,
                STW_IMPORT_MAX_EVENTS);
    return FALSE;
  }
  return TRUE;
}

static void
memory_event(Scan *s, const cJSON *args, double ts, guint64 index)
{
  Mem m = { .ts = ts, .order = arg_int(args, "Ev Idx", (gint64)index),
            .bytes = arg_int(args, "Bytes", 0), .total = arg_int(args, "Total Allocated", -1),
            .device_type = arg_int(args, "Device Type", 0),
            .device_id = arg_int(args, "Device Id", -1) };
  if (ts < s->t0 || ts > s->t1)
    return;
  if (m.device_type == 1)
    g_hash_table_add(s->cuda_devices, GINT_TO_POINTER((gint)m.device_id + 1));
  g_array_append_val(s->mems, m);
}

static gboolean
pass2_event(const char *key, guint64 index, const char *text, gsize len, gpointer data,
            GError **error)
{
  (void)key;
  Scan *s = data;
  g_autoptr(cJSON) e = cJSON_ParseWithLength(text, len);
  if (!cJSON_IsObject(e))
    return bad_event(s, index, error, "not a JSON object");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
  const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
  const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
  const char *c = cJSON_IsString(cat) ? cat->valuestring : "";
  const char *p = cJSON_IsString(ph) ? ph->valuestring : "";
  double ts = 0, dur = 0;
  gboolean timed = num_of(cJSON_GetObjectItemCaseSensitive(e, "ts"), &ts);
  num_of(cJSON_GetObjectItemCaseSensitive(e, "dur"), &dur);
  if (cJSON_IsString(name) && strcmp(name->valuestring, "[memory]") == 0) {
    gint64 bytes, total;
    const cJSON *total_item = cJSON_GetObjectItemCaseSensitive(args, "Total Allocated");
    if (!timed)
      return bad_event(s, index, error, "a [memory] event without a number ts");
    if (!int_of(cJSON_GetObjectItemCaseSensitive(args, "Bytes"), &bytes) ||
        bytes > (G_GINT64_CONSTANT(1) << 53) || bytes < -(G_GINT64_CONSTANT(1) << 53))
      return bad_event(s, index, error, "a [memory] event without Bytes, an integer of at "
                       "most 2^53 either way");
    if (total_item != NULL && (!int_of(total_item, &total) || total < 0 ||
                               total > (G_GINT64_CONSTANT(1) << 53)))
      return bad_event(s, index, error, "a [memory] event whose Total Allocated is not an "
                       "integer from 0 to 2^53");
    if (ts >= s->t0 && ts <= s->t1) {
      if (!keep(s, index, error))
        return FALSE;
      if (!import_bytes_moved(&s->moved, bytes))
        return bad_event(s, index, error, "the iteration's [memory] events allocate and free "
                         "more than " IMPORT_MAX_BYTES_MOVED_TEXT " in all");
    }
    memory_event(s, args, ts, index);
    return TRUE;
  }
  gboolean module = strcmp(p, "X") == 0 && strcmp(c, "python_function") == 0 &&
                    cJSON_IsString(name) && g_str_has_prefix(name->valuestring, "nn.Module: ");
  if (strcmp(p, "X") == 0 && (in_list(op_cats, c) || module)) {
    if (!cJSON_IsString(name) || !timed || !span_ok(ts, dur))
      return bad_event(s, index, error, "an op without a name, a number ts and a dur from 0 "
                       "to 2^53 ns");
    gint64 number;
    if (import_step_number(name->valuestring, &number))
      return TRUE;
    if (ts < s->t0 || ts > s->t1)
      return TRUE;
    if (!keep(s, index, error))
      return FALSE;
    Ev ev = { .ts = ts, .end = ts + dur, .pid = -1, .tid = -1, .ext_id = -1, .seq = -1,
              .rf_id = -1, .parent = G_MAXUINT32, .trace_op = G_MAXUINT32 };
    ev.name = intern(s, name->valuestring);
    ev.module_event = module;
    int_of(cJSON_GetObjectItemCaseSensitive(e, "pid"), &ev.pid);
    int_of(cJSON_GetObjectItemCaseSensitive(e, "tid"), &ev.tid);
    ev.ext_id = arg_int(args, "External id", -1);
    ev.seq = arg_int(args, "Sequence number", -1);
    ev.rf_id = arg_int(args, "Record function id", ev.ext_id);
    const cJSON *mod = cJSON_GetObjectItemCaseSensitive(args, "Module Hierarchy");
    if (cJSON_IsString(mod) && mod->valuestring[0] != '\0')
      ev.module = intern(s, mod->valuestring);
    ev.shapes = import_shapes_of(ev.name, args);
    g_hash_table_add(s->pids, GINT_TO_POINTER((gint)ev.pid + 1));
    g_array_append_val(s->evs, ev);
    return TRUE;
  }
  if (strcmp(p, "X") == 0 && in_list(kernel_cats, c)) {
    if (!timed || ts < s->t0 || ts > s->kernel_t1)
      return TRUE;
    if (!span_ok(ts, MAX(dur, 0)))
      return bad_event(s, index, error, "a kernel whose dur is more than 2^53 ns");
    if (!keep(s, index, error))
      return FALSE;
    Kernel k = { .ts = ts, .dur = MAX(dur, 0), .ext_id = arg_int(args, "External id", -1),
                 .correlation = arg_int(args, "correlation", -1),
                 .device = arg_int(args, "device", -1) };
    if (k.ext_id < 0)
      k.ext_id = arg_int(args, "external id", -1); /* the 2021 format */
    if (k.device >= 0)
      g_hash_table_add(s->cuda_devices, GINT_TO_POINTER((gint)k.device + 1));
    g_array_append_val(s->kernels, k);
    return TRUE;
  }
  if (strcmp(p, "X") == 0 && in_list(runtime_cats, c)) {
    if (!timed || ts < s->t0 || ts > s->t1)
      return TRUE;
    if (!keep(s, index, error))
      return FALSE;
    ImportRuntime rt = { .ts = ts, .tid = -1, .correlation = arg_int(args, "correlation", -1) };
    int_of(cJSON_GetObjectItemCaseSensitive(e, "tid"), &rt.tid);
    if (rt.correlation >= 0)
      g_array_append_val(s->runtimes, rt);
    return TRUE;
  }
  if (strcmp(p, "M") == 0 || strcmp(p, "s") == 0 || strcmp(p, "f") == 0 ||
      strcmp(p, "t") == 0 || in_list(known_cats, c))
    return TRUE;
  s->rep->unknown_events++;
  return TRUE;
}

static gboolean
top_member(const char *key, guint64 index, const char *text, gsize len, gpointer data,
           GError **error)
{
  (void)index;
  (void)error;
  Scan *s = data;
  cJSON **slot = strcmp(key, "deviceProperties") == 0   ? &s->device_properties
                 : strcmp(key, "distributedInfo") == 0 ? &s->distributed_info
                                                        : NULL;
  if (slot != NULL && *slot == NULL)
    *slot = cJSON_ParseWithLength(text, len);
  if (strcmp(key, "baseTimeNanoseconds") == 0) {
    g_autoptr(cJSON) v = cJSON_ParseWithLength(text, len);
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0)
      s->base_ns = v->valuedouble;
  }
  return TRUE;
}

/* ---- the iteration ------------------------------------------------------------------------- */

static gboolean
choose_iteration(Scan *s, GError **error)
{
  const StwImportOptions *o = s->o;
  s->rep->iterations = s->steps->len;
  if (o->iteration == STW_IMPORT_WHOLE) {
    s->t0 = -INFINITY;
    s->t1 = s->kernel_t1 = INFINITY;
    s->rep->iteration = -1;
    return TRUE;
  }
  if (s->steps->len == 0) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_ITERATION,
                "%s: no iteration marker (ProfilerStep#N): profile with a schedule and call "
                "prof.step() every iteration, or give --iteration whole to take the whole trace "
                "as one iteration", s->file);
    return FALSE;
  }
  const Step *chosen = NULL;
  GString *numbers = g_string_new(NULL);
  for (guint i = 0; i < s->steps->len; i++) {
    const Step *st = &g_array_index(s->steps, Step, i);
    if (i < 12)
      g_string_append_printf(numbers, "%s%" G_GINT64_FORMAT, i ? ", " : "", st->number);
    if (o->iteration >= 0 && st->number == o->iteration)
      chosen = st;
  }
  if (o->iteration >= 0 && chosen == NULL) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_ITERATION,
                "%s: no ProfilerStep#%" G_GINT64_FORMAT ": the trace holds %s%s", s->file,
                o->iteration, numbers->str, s->steps->len > 12 ? ", ..." : "");
    g_string_free(numbers, TRUE);
    return FALSE;
  }
  g_string_free(numbers, TRUE);
  if (chosen == NULL) {
    /* the last complete one: the latest marker at least half as long as the longest (a marker
     * closed by the profiler's stop, a stub, is shorter) */
    double longest = 0;
    for (guint i = 0; i < s->steps->len; i++) {
      const Step *st = &g_array_index(s->steps, Step, i);
      longest = MAX(longest, st->end - st->ts);
    }
    for (guint i = 0; i < s->steps->len; i++) {
      const Step *st = &g_array_index(s->steps, Step, i);
      if (st->end - st->ts >= longest / 2 && (chosen == NULL || st->ts > chosen->ts))
        chosen = st;
    }
  }
  s->t0 = chosen->ts;
  s->t1 = chosen->end;
  s->kernel_t1 = chosen->end + (chosen->end - chosen->ts); /* kernels queued late run after */
  s->rep->iteration = chosen->number;
  return TRUE;
}

/* ---- after the passes ---------------------------------------------------------------------- */

static void
scan_clear(Scan *s)
{
  if (s->evs != NULL)
    for (guint i = 0; i < s->evs->len; i++)
      import_shapes_free(g_array_index(s->evs, Ev, i).shapes);
  g_clear_pointer(&s->steps, g_array_unref);
  g_clear_pointer(&s->evs, g_array_unref);
  g_clear_pointer(&s->kernels, g_array_unref);
  g_clear_pointer(&s->mems, g_array_unref);
  g_clear_pointer(&s->runtimes, g_array_unref);
  g_clear_pointer(&s->pids, g_hash_table_unref);
  g_clear_pointer(&s->cuda_devices, g_hash_table_unref);
  if (s->strings != NULL)
    g_string_chunk_free(s->strings);
  s->strings = NULL;
  g_clear_pointer(&s->device_properties, cJSON_Delete);
  g_clear_pointer(&s->distributed_info, cJSON_Delete);
}

static gint
cmp_gint(gconstpointer a, gconstpointer b)
{
  gint x = GPOINTER_TO_INT(a), y = GPOINTER_TO_INT(b);
  return x < y ? -1 : x > y;
}

/* The one value of SET (ints stored +1), OPTION's choice, or an error naming them all. */
static gboolean
choose_one(Scan *s, GHashTable *set, gint64 wanted, gint64 none, const char *what,
           const char *whats, const char *option, gint64 *out, GError **error)
{
  GList *keys = g_list_sort(g_hash_table_get_keys(set), cmp_gint);
  gboolean ok = TRUE;
  guint n = g_list_length(keys);
  if (wanted != none) {
    ok = g_hash_table_contains(set, GINT_TO_POINTER((gint)wanted + 1)) || n == 0;
    *out = wanted;
  } else if (n == 1) {
    *out = GPOINTER_TO_INT(keys->data) - 1;
  } else {
    ok = n == 0;
    *out = none;
  }
  if (!ok) {
    GString *list = g_string_new(NULL);
    for (GList *l = keys; l != NULL; l = l->next)
      g_string_append_printf(list, "%s%d", list->len ? ", " : "", GPOINTER_TO_INT(l->data) - 1);
    if (wanted != none)
      g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_AMBIGUOUS,
                  "%s: no %s %" G_GINT64_FORMAT " in the iteration: it has %s", s->file, what,
                  wanted, list->str);
    else
      g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_AMBIGUOUS,
                  "%s: the iteration has several %s (%s): choose one with %s", s->file, whats,
                  list->str, option);
    g_string_free(list, TRUE);
  }
  g_list_free(keys);
  return ok;
}

/* The iteration's records, handed to the builder: the op events, the kernels and runtime
 * calls, and the memory events of the chosen DEVICE (-1: the CPU's). */
static void
hand_over(Scan *s, ImportIteration *it, gint64 pid, gint64 device)
{
  it->file = s->file;
  it->o = s->o;
  it->rep = s->rep;
  it->pid = pid;
  it->device = device;
  it->t0 = s->t0;
  it->t1 = s->t1;
  it->main_tid = -1;
  for (guint i = 0; i < s->steps->len; i++) {
    const Step *st = &g_array_index(s->steps, Step, i);
    if (st->number == s->rep->iteration && st->ts == s->t0)
      it->main_tid = st->tid;
  }
  /* the records, handed over */
  it->n_evs = s->evs->len;
  it->evs = g_new0(ImportEvent, MAX(it->n_evs, 1));
  for (guint i = 0; i < s->evs->len; i++) {
    Ev *e = &g_array_index(s->evs, Ev, i);
    it->evs[i] = (ImportEvent){ .ts = e->ts, .end = e->end, .name = e->name, .pid = e->pid,
               .tid = e->tid, .ext_id = e->ext_id, .seq = e->seq,
               .rf_id = e->rf_id, .module = e->module,
               .shapes = e->shapes, .is_module = e->module_event };
    e->shapes = NULL;
  }
  it->n_kernels = s->kernels->len;
  it->kernels = g_new0(ImportKernel, MAX(it->n_kernels, 1));
  for (guint i = 0; i < s->kernels->len; i++) {
    const Kernel *k = &g_array_index(s->kernels, Kernel, i);
    it->kernels[i] = (ImportKernel){ .ts = k->ts, .dur = k->dur, .ext_id = k->ext_id,
                .correlation = k->correlation, .device = k->device };
  }
  it->n_runtimes = s->runtimes->len;
  it->runtimes = (ImportRuntime *)g_array_free(g_steal_pointer(&s->runtimes), FALSE);
  it->n_mems = 0;
  it->mems = g_new0(ImportMem, MAX(s->mems->len, 1));
  gint64 type = device >= 0 ? 1 : 0;
  for (guint i = 0; i < s->mems->len; i++) {
    const Mem *m = &g_array_index(s->mems, Mem, i);
    if (m->device_type == type && (type == 0 || m->device_id == device))
      it->mems[it->n_mems++] = (ImportMem){ .ts = m->ts, .order = m->order,
                  .bytes = m->bytes, .total = m->total };
  }
}

StwTrace *
stw_import_kineto(const char *file, const StwImportOptions *o, StwImportReport *rep,
                  GError **error)
{
  Scan s = { .file = file, .o = o, .rep = rep };
  s.steps = g_array_new(FALSE, FALSE, sizeof(Step));
  s.evs = g_array_new(FALSE, FALSE, sizeof(Ev));
  s.kernels = g_array_new(FALSE, FALSE, sizeof(Kernel));
  s.mems = g_array_new(FALSE, FALSE, sizeof(Mem));
  s.runtimes = g_array_new(FALSE, FALSE, sizeof(ImportRuntime));
  s.pids = g_hash_table_new(NULL, NULL);
  s.cuda_devices = g_hash_table_new(NULL, NULL);
  s.strings = g_string_chunk_new(1 << 16);

  static const char *const streamed[] = { "traceEvents", NULL };
  StwJsonStreamSpec p1 = { .streamed = streamed, .max_element = STW_IMPORT_MAX_EVENT_BYTES,
                           .on_element = pass1_event, .on_member = top_member, .data = &s };
  StwJsonStreamSpec p2 = { .streamed = streamed, .max_element = STW_IMPORT_MAX_EVENT_BYTES,
                           .on_element = pass2_event, .data = &s };
  StwTrace *t = NULL;
  if (stw_json_stream_read(file, &p1, error) && choose_iteration(&s, error) &&
      stw_json_stream_read(file, &p2, error)) {
    ImportIteration it = { 0 };
    gint64 pid = -1, device = -1;
    if (choose_one(&s, s.pids, o->pid, -1, "process", "processes", "--pid", &pid, error) &&
        choose_one(&s, s.cuda_devices, o->device_id, STW_IMPORT_ANY_DEVICE, "CUDA device",
                   "CUDA devices", "--device-id", &device, error)) {
      if (device == STW_IMPORT_ANY_DEVICE)
        device = -1; /* no CUDA device: the CPU's memory */
      hand_over(&s, &it, pid, device);
      import_device_info(&it, s.device_properties, s.distributed_info);
      it.base_ns = s.base_ns;
      if ((o->et_file == NULL || import_et_load(&it, o->et_file, error)) &&
          (o->timeline_file == NULL || import_timeline_load(&it, o->timeline_file, error)))
        t = import_build(&it, error);
      import_iteration_clear(&it);
    }
  }
  scan_clear(&s);
  return t;
}
