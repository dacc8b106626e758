/* events-build.c — the trace of one iteration of an event stream; see events-build.h. */
#include "config.h"

#include <stowage/events-build.h>

#include <string.h>

void
stw_events_options_init(StwEventsOptions *o)
{
  *o = (StwEventsOptions){ .iteration_range = "stowage.iteration", .depth = 1,
                           .dtype = STW_DTYPE_FP32 };
}

/* ---- building ---------------------------------------------------------------------------------- */

typedef struct {
  guint64 ptr, bytes, t_alloc, t_free; /* t_free G_MAXUINT64 while alive */
  gint32 tensor;                       /* trace tensor id, -1 if none */
  const StwEventRecord *named;
} Alloc;

typedef struct {
  const char *name;
  guint64 start, end;
  guint depth;
} Range;

static int
alloc_by_ptr(gconstpointer a, gconstpointer b)
{
  const Alloc *x = *(Alloc *const *)a, *y = *(Alloc *const *)b;
  return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

/* The long-lived allocation containing PTR, or NULL (binary search over SORTED by ptr). */
static Alloc *
find(GPtrArray *sorted, guint64 ptr)
{
  guint lo = 0, hi = sorted->len;
  while (lo < hi) {
    guint mid = (lo + hi) / 2;
    Alloc *a = sorted->pdata[mid];
    if (ptr < a->ptr)
      hi = mid;
    else if (ptr >= a->ptr + a->bytes)
      lo = mid + 1;
    else
      return a;
  }
  return NULL;
}

typedef struct {
  guint64 t;
  gint64 bytes;
} Delta;

static int
delta_cmp(gconstpointer a, gconstpointer b)
{
  const Delta *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes; /* frees first at a tie */
}

static StwStage
stage_after(StwStage current, const char *name)
{
  if (current <= STW_STAGE_BWD && (strstr(name, "adam") || strstr(name, "optim") ||
                                   strstr(name, "step") || strstr(name, "Adam")))
    return STW_STAGE_OPTIM;
  if (current == STW_STAGE_FWD && (strstr(name, ".bwd") || strstr(name, "backward") ||
                                   strstr(name, "Backward")))
    return STW_STAGE_BWD;
  return current;
}

StwTrace *
stw_events_build(const StwEvents *ev, const StwEventsOptions *o, StwEventsReport *report,
                 GError **error)
{
  StwEventsReport rep = { 0 };
  const StwEventRecord *e = (const StwEventRecord *)ev->records->data;
  guint n = ev->records->len;
  /* ranges, with nesting checked */
  GArray *ranges = g_array_new(FALSE, FALSE, sizeof(Range));
  GArray *stack = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < n; i++) {
    if (e[i].kind == STW_EVENT_PUSH) {
      Range r = { e[i].name, e[i].t, G_MAXUINT64, stack->len };
      g_array_append_val(ranges, r);
      guint idx = ranges->len - 1;
      g_array_append_val(stack, idx);
    } else if (e[i].kind == STW_EVENT_POP) {
      if (stack->len == 0) {
        g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_NESTING,
                    "%s:%u: a range closes that was never opened (pop without push)", ev->file,
                    e[i].line);
        g_array_unref(ranges);
        g_array_unref(stack);
        return NULL;
      }
      g_array_index(ranges, Range, g_array_index(stack, guint, stack->len - 1)).end = e[i].t;
      g_array_set_size(stack, stack->len - 1);
    }
  }
  guint open = stack->len;
  g_array_unref(stack);
  /* the iteration window */
  gboolean whole = o->iteration_range == NULL || o->iteration_range[0] == '\0';
  guint64 w0 = 0, w1 = G_MAXUINT64;
  guint base_depth = 0;
  if (!whole) {
    guint found = 0, chosen = 0;
    for (guint i = 0; i < ranges->len; i++) {
      Range *r = &g_array_index(ranges, Range, i);
      if (strcmp(r->name, o->iteration_range) != 0 || r->end == G_MAXUINT64)
        continue;
      found++;
      if (o->iteration == 0 || found == o->iteration) {
        chosen = found;
        w0 = r->start;
        w1 = r->end;
        base_depth = r->depth + 1;
      }
    }
    rep.iterations = found;
    if (chosen == 0) {
      g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_EMPTY,
                  "%s: %s: found %u complete '%s' ranges%s", ev->file,
                  found == 0 ? "no iteration" : "no such iteration", found, o->iteration_range,
                  open > 0 ? ", and ranges left open at the end (an NVTX push without a pop?)"
                           : "");
      g_array_unref(ranges);
      return NULL;
    }
  } else if (open > 0) {
    g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_NESTING,
                "%s: %u ranges are still open at the end (an NVTX push without a pop)", ev->file,
                open);
    g_array_unref(ranges);
    return NULL;
  }
  guint want_depth = base_depth + MAX(o->depth, 1) - 1;

  /* allocations: live intervals, duplicates ignored; long-lived ones span the window */
  GHashTable *live = g_hash_table_new(g_int64_hash, g_int64_equal);
  GPtrArray *allocs = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < n; i++) {
    if (e[i].kind == STW_EVENT_ALLOC) {
      if (g_hash_table_contains(live, &e[i].ptr)) {
        rep.duplicate_allocs++;
        continue;
      }
      Alloc *a = g_new0(Alloc, 1);
      *a = (Alloc){ e[i].ptr, e[i].bytes, e[i].t, G_MAXUINT64, -1, NULL };
      g_ptr_array_add(allocs, a);
      g_hash_table_insert(live, &a->ptr, a);
    } else if (e[i].kind == STW_EVENT_FREE) {
      Alloc *a = g_hash_table_lookup(live, &e[i].ptr);
      if (a == NULL) {
        rep.duplicate_allocs++;
        continue;
      }
      a->t_free = e[i].t;
      g_hash_table_remove(live, &e[i].ptr);
    } else if (e[i].kind == STW_EVENT_TENSOR) {
      Alloc *a = g_hash_table_lookup(live, &e[i].ptr);
      if (a != NULL)
        a->named = &e[i];
    }
  }
  g_hash_table_unref(live);
  GPtrArray *lasting = g_ptr_array_new();
  for (guint i = 0; i < allocs->len; i++) {
    Alloc *a = allocs->pdata[i];
    if (a->t_alloc <= w0 && a->t_free >= w1)
      g_ptr_array_add(lasting, a);
  }
  GPtrArray *sorted = g_ptr_array_copy(lasting, NULL, NULL);
  g_ptr_array_sort(sorted, alloc_by_ptr);

  /* kernels by launch id */
  GHashTable *gpu = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (guint i = 0; i < n; i++)
    if (e[i].kind == STW_EVENT_KERNEL)
      g_hash_table_insert(gpu, (gpointer)&e[i].id, (gpointer)&e[i]);

  /* the ops: ranges at the wanted depth inside the window */
  StwTrace *t = stw_trace_new();
  t->source.kind = STW_SOURCE_CUPTI;
  GArray *ops = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < ranges->len; i++) {
    Range *r = &g_array_index(ranges, Range, i);
    if (r->depth == want_depth && r->start >= w0 && r->end <= w1 && r->end != G_MAXUINT64)
      g_array_append_val(ops, i);
  }
  /* pass 1: which long-lived allocations each op touches; forward ones become tensors */
  GPtrArray *touch = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  StwStage stage = STW_STAGE_FWD;
  g_autofree StwStage *stages = g_new(StwStage, MAX(ops->len, 1));
  g_autofree guint64 *gpu_ns = g_new0(guint64, MAX(ops->len, 1));
  g_autofree guint8 *timed = g_new0(guint8, MAX(ops->len, 1)); /* some kernel record matched */
  guint li = 0;
  for (guint k = 0; k < ops->len; k++) {
    Range *r = &g_array_index(ranges, Range, g_array_index(ops, guint, k));
    stage = stage_after(stage, r->name);
    stages[k] = stage;
    GPtrArray *tk = g_ptr_array_new();
    while (li < n && (e[li].kind != STW_EVENT_LAUNCH || e[li].t < r->start))
      li++;
    for (guint j = li; j < n; j++) {
      if (e[j].kind != STW_EVENT_LAUNCH)
        continue;
      if (e[j].t > r->end)
        break;
      const StwEventRecord *kern = g_hash_table_lookup(gpu, &e[j].id);
      if (kern != NULL) {
        gpu_ns[k] += kern->end - kern->t;
        timed[k] = 1;
      }
      else
        rep.dropped_launches++;
      for (guint a = 0; a < e[j].n_args; a++) {
        Alloc *al = find(sorted, e[j].args[a]);
        if (al != NULL && g_ptr_array_find(tk, al, NULL) == FALSE)
          g_ptr_array_add(tk, al);
      }
    }
    g_ptr_array_add(touch, tk);
    for (guint a = 0; stage == STW_STAGE_FWD && a < tk->len; a++)
      ((Alloc *)tk->pdata[a])->tensor = 0; /* marked: a forward tensor */
  }
  /* tensors in allocation order */
  for (guint i = 0; i < lasting->len; i++) {
    Alloc *a = lasting->pdata[i];
    if (a->tensor != 0) {
      a->tensor = -1;
      continue;
    }
    guint64 elem = stw_dtype_bytes(o->dtype);
    if (a->named != NULL) {
      g_auto(GStrv) names = g_strsplit(a->named->name, " ", 0);
      a->tensor = (gint32)stw_trace_add_tensor(t, names[0], o->dtype, a->named->args,
                                               a->named->n_args);
      for (guint k = 1; names[k] != NULL; k++)
        g_ptr_array_add(g_array_index(t->tensors, StwTensor, a->tensor).aliases,
                        g_strdup(names[k]));
    } else {
      g_autofree char *name = g_strdup_printf("tensor%u@0x%" G_GINT64_MODIFIER "x", t->tensors->len,
                                              a->ptr);
      guint64 shape[1] = { MAX(a->bytes / elem, 1) };
      a->tensor = (gint32)stw_trace_add_tensor(t, name, o->dtype, shape, 1);
    }
  }
  /* pass 2: the ops, with non-model memory from the other allocations */
  for (guint k = 0; k < ops->len; k++) {
    Range *r = &g_array_index(ranges, Range, g_array_index(ops, guint, k));
    GPtrArray *tk = touch->pdata[k];
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(guint32));
    for (guint a = 0; a < tk->len; a++) {
      Alloc *al = tk->pdata[a];
      if (al->tensor >= 0) {
        guint32 id = (guint32)al->tensor;
        g_array_append_val(ids, id);
      }
    }
    StwOp *op = stw_trace_add_op(t, r->name, stages[k], (guint32 *)ids->data, ids->len,
                                 (guint32 *)ids->data,
                                 stages[k] == STW_STAGE_BWD ? ids->len : 0);
    g_array_unref(ids);
    /* non-model memory: live at the op's start, then swept through its allocations and frees */
    guint64 at_start = 0;
    GArray *deltas = g_array_new(FALSE, FALSE, sizeof(Delta));
    for (guint i = 0; i < allocs->len; i++) {
      Alloc *a = allocs->pdata[i];
      if (a->tensor >= 0 || (a->t_alloc <= w0 && a->t_free >= w1))
        continue;
      if (a->t_alloc <= r->start && a->t_free > r->start)
        at_start += a->bytes;
      if (a->t_alloc > r->start && a->t_alloc <= r->end) {
        Delta d = { a->t_alloc, (gint64)a->bytes };
        g_array_append_val(deltas, d);
      }
      if (a->t_free > r->start && a->t_free <= r->end && a->t_alloc <= r->end) {
        Delta d = { a->t_free, -(gint64)a->bytes };
        g_array_append_val(deltas, d);
      }
    }
    g_array_sort(deltas, delta_cmp);
    gint64 cur = (gint64)at_start, peak = cur;
    for (guint i = 0; i < deltas->len; i++) {
      cur += g_array_index(deltas, Delta, i).bytes;
      peak = MAX(peak, cur);
    }
    g_array_unref(deltas);
    op->nonmodel_bytes = at_start;
    op->nonmodel_peak_bytes = (guint64)peak;
    op->duration_ns = timed[k] ? gpu_ns[k] : r->end - r->start;
  }
  g_ptr_array_unref(touch);
  g_ptr_array_unref(sorted);
  g_ptr_array_unref(lasting);
  g_ptr_array_unref(allocs);
  g_hash_table_unref(gpu);
  guint n_ops = ops->len;
  g_array_unref(ops);
  g_array_unref(ranges);
  if (report != NULL)
    *report = rep;
  if (n_ops == 0) {
    g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_EMPTY,
                "%s: the iteration has no ranges at depth %u to make ops of", ev->file,
                MAX(o->depth, 1));
    stw_trace_free(t);
    return NULL;
  }
  if (!stw_trace_validate(t, ev->file, error)) {
    stw_trace_free(t);
    return NULL;
  }
  return t;
}

