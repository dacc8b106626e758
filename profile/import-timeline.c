/* import-timeline.c — PyTorch's memory timeline (export_memory_timeline_raw): rows of
 * [time in ns, action, bytes, category], which label every byte as a parameter, a gradient,
 * optimizer state, an input, a temporary, an activation, autograd's or unknown. The importer
 * takes the non-model memory of each op from it (all but parameters, gradients and optimizer
 * state), where the Kineto trace can only count allocations. */
#include "config.h"

#include "import-internal.h"
#include "json-stream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const import_timeline_categories[] = { "parameter", "optimizer_state", "input",
                                                   "temporary", "activation", "gradient",
                                                   "autograd", "unknown", NULL };

typedef struct {
  const char *file;
  GArray *rows;  /* ImportTimelineRow */
  guint64 moved; /* the bytes the rows allocate and free */
} Tl;

static gboolean
tl_row(const char *key, guint64 index, const char *text, gsize len, gpointer data,
       GError **error)
{
  (void)key;
  Tl *tl = data;
  g_autoptr(cJSON) r = cJSON_ParseWithLength(text, len);
  const cJSON *t = cJSON_GetArrayItem(r, 0), *a = cJSON_GetArrayItem(r, 1);
  const cJSON *b = cJSON_GetArrayItem(r, 2), *c = cJSON_GetArrayItem(r, 3);
  if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 4 || !cJSON_IsNumber(t) ||
      !isfinite(t->valuedouble) ||
      !cJSON_IsNumber(a) || !cJSON_IsNumber(b) || !isfinite(b->valuedouble) ||
      fabs(b->valuedouble) > 9e15 || !cJSON_IsNumber(c) || c->valuedouble < 0 ||
      c->valuedouble > 7) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                "%s: $[%" G_GUINT64_FORMAT "]: expected [time, action, bytes, category 0-7]",
                tl->file, index);
    return FALSE;
  }
  if (tl->rows->len >= STW_IMPORT_MAX_EVENTS) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                "%s: more than %u rows (the importer's bound)", tl->file, STW_IMPORT_MAX_EVENTS);
    return FALSE;
  }
  if (!import_bytes_moved(&tl->moved, (gint64)b->valuedouble)) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                "%s: $[%" G_GUINT64_FORMAT "]: the rows allocate and free more than "
                IMPORT_MAX_BYTES_MOVED_TEXT " in all", tl->file, index);
    return FALSE;
  }
  ImportTimelineRow row = { .ns = t->valuedouble, .bytes = (gint64)b->valuedouble,
                            .category = (guint)c->valuedouble, .order = tl->rows->len };
  g_array_append_val(tl->rows, row);
  return TRUE;
}

static int
row_by_time(const void *a, const void *b)
{
  const ImportTimelineRow *x = a, *y = b;
  if (x->ns != y->ns)
    return x->ns < y->ns ? -1 : 1;
  return x->order < y->order ? -1 : 1;
}

gboolean
import_timeline_load(ImportIteration *it, const char *file, GError **error)
{
  StwImportKind kind = stw_import_detect(file, error);
  if (kind == STW_IMPORT_AUTO)
    return FALSE;
  if (kind != STW_IMPORT_TIMELINE) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_KIND,
                "%s: --memory-timeline expects export_memory_timeline_raw's rows, not a %s file",
                file, stw_import_kind_names[kind]);
    return FALSE;
  }
  Tl tl = { .file = file, .rows = g_array_new(FALSE, FALSE, sizeof(ImportTimelineRow)) };
  StwJsonStreamSpec spec = { .max_element = 4096, .on_element = tl_row, .data = &tl };
  if (!stw_json_stream_read(file, &spec, error)) {
    g_array_unref(tl.rows);
    return FALSE;
  }
  if (tl.rows->len == 0) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                "%s: the memory timeline has no rows (export_memory_timeline_raw writes one for "
                "each allocation and free): nothing to place the ops' memory in", file);
    g_array_unref(tl.rows);
    return FALSE;
  }
  /* pre-existing rows (time -1) first, then by time; the file's order breaks ties */
  if (tl.rows->len > 1)
    qsort(tl.rows->data, tl.rows->len, sizeof(ImportTimelineRow), row_by_time);
  it->rep->timeline_rows = tl.rows->len;
  gint64 level[IMPORT_TIMELINE_CATEGORIES] = { 0 }, total = 0, peak = -1;
  for (guint i = 0; i < tl.rows->len; i++) {
    const ImportTimelineRow *r = &g_array_index(tl.rows, ImportTimelineRow, i);
    level[r->category] += r->bytes;
    total += r->bytes;
    if (total > peak) {
      peak = total;
      for (int c = 0; c < IMPORT_TIMELINE_CATEGORIES; c++)
        it->rep->timeline_at_peak[c] = (guint64)MAX(level[c], 0);
    }
  }
  it->rep->timeline_peak = (guint64)MAX(peak, 0);
  it->n_timeline = tl.rows->len;
  it->timeline = (ImportTimelineRow *)g_array_free(tl.rows, FALSE);
  return TRUE;
}

gboolean
import_timeline_covers(const ImportIteration *it, double base_ns, double first_us,
                       double last_us, GError **error)
{
  double s = first_us * 1000.0 + base_ns, e = last_us * 1000.0 + base_ns;
  double lo = INFINITY, hi = -INFINITY;
  for (guint r = 0; r < it->n_timeline; r++) {
    double ns = it->timeline[r].ns;
    if (ns < 0)
      continue; /* before the profiler started */
    if (ns >= s && ns <= e)
      return TRUE;
    lo = MIN(lo, ns);
    hi = MAX(hi, ns);
  }
  if (lo > hi)
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                "%s: the memory timeline has no timed row (all are from before the profiler "
                "started), so no op can be placed in it", it->o->timeline_file);
  else
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                "%s: no row of the memory timeline (%.0f to %.0f ns) falls in the iteration "
                "(%.0f to %.0f ns: the trace's times from its baseTimeNanoseconds, %.0f): "
                "a timeline of another run?", it->o->timeline_file, lo, hi, s, e, base_ns);
  return FALSE;
}

/* Whether bytes of CATEGORY are model data, which the planner places in chunks. */
static gboolean
is_model_data(guint category)
{
  return category == 0 || category == 1 || category == 5;
}

void
import_timeline_apply(const ImportIteration *it, double base_ns, const double *start_us,
                      const double *end_us, guint64 *nonmodel, guint64 *peak, guint n)
{
  gint64 level = 0;
  guint r = 0;
  for (guint u = 0; u < n; u++) {
    double s = start_us[u] * 1000.0 + base_ns, e = end_us[u] * 1000.0 + base_ns;
    while (r < it->n_timeline && it->timeline[r].ns < s) {
      if (!is_model_data(it->timeline[r].category))
        level += it->timeline[r].bytes;
      r++;
    }
    nonmodel[u] = (guint64)MAX(level, 0);
    gint64 high = level;
    while (r < it->n_timeline && it->timeline[r].ns <= e) {
      if (!is_model_data(it->timeline[r].category))
        level += it->timeline[r].bytes;
      high = MAX(high, level);
      r++;
    }
    peak[u] = (guint64)MAX(high, 0);
  }
}
