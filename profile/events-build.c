/* events-build.c — the trace of one iteration of an event stream; see events-build.h. */
#include "config.h"

#include <stowage/events-build.h>
#include <stowage/units.h>

#include <string.h>

void
stw_events_options_init(StwEventsOptions *o)
{
  *o = (StwEventsOptions){ .iteration_range = STW_ITERATION_RANGE, .depth = 1,
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
  guint line; /* its push's */
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

/* The builder's state, pass by pass. */
typedef struct {
  const StwEvents *ev;
  const StwEventsOptions *o;
  const StwEventRecord *e;  /* the records */
  guint n;
  StwEventsReport rep;
  GArray *ranges;           /* Range, in push order */
  guint open;               /* ranges still open at the end */
  guint64 w0, w1;           /* the iteration's window */
  guint want_depth;         /* the ops' ranges' depth */
  GPtrArray *allocs;        /* Alloc*, every allocation */
  GPtrArray *lasting;       /* Alloc*, alive across the window, in allocation order */
  GPtrArray *sorted;        /* the same, by address */
  GHashTable *gpu;          /* launch id -> kernel record */
  GArray *ops;              /* guint indices into ranges */
  GPtrArray *touch;         /* per op: Alloc* it touches */
  StwStage *stages;         /* per op */
  guint64 *gpu_ns;          /* per op: its kernels' GPU time */
  guint8 *timed;            /* per op: some kernel record matched */
  StwTrace *t;
} Build;

static void
build_clear(Build *b)
{
  g_clear_pointer(&b->ranges, g_array_unref);
  g_clear_pointer(&b->allocs, g_ptr_array_unref);
  g_clear_pointer(&b->lasting, g_ptr_array_unref);
  g_clear_pointer(&b->sorted, g_ptr_array_unref);
  g_clear_pointer(&b->gpu, g_hash_table_unref);
  g_clear_pointer(&b->ops, g_array_unref);
  g_clear_pointer(&b->touch, g_ptr_array_unref);
  g_clear_pointer(&b->stages, g_free);
  g_clear_pointer(&b->gpu_ns, g_free);
  g_clear_pointer(&b->timed, g_free);
  g_clear_pointer(&b->t, stw_trace_free);
}

/* The open ranges of one thread: indexes into the ranges, innermost last. */
static GArray *
stack_of(GHashTable *stacks, guint64 thread)
{
  GArray *s = g_hash_table_lookup(stacks, GSIZE_TO_POINTER(thread + 1));
  if (s == NULL) {
    s = g_array_new(FALSE, FALSE, sizeof(guint));
    g_hash_table_insert(stacks, GSIZE_TO_POINTER(thread + 1), s);
  }
  return s;
}

/* Pass 1: the ranges, with their nesting checked, on a stack per thread (events.h): a thread's
 * outermost range nests in the innermost one open on the first thread that pushed. */
static gboolean
collect_ranges(Build *b, GError **error)
{
  b->ranges = g_array_new(FALSE, FALSE, sizeof(Range));
  g_autoptr(GHashTable) stacks =
      g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_array_unref);
  guint64 thread = 0, first = G_MAXUINT64;
  for (guint i = 0; i < b->n; i++) {
    const StwEventRecord *e = &b->e[i];
    if (e->kind == STW_EVENT_THREAD) {
      thread = e->id;
    } else if (e->kind == STW_EVENT_PUSH) {
      if (first == G_MAXUINT64)
        first = thread;
      GArray *stack = stack_of(stacks, thread), *first_stack = stack_of(stacks, first);
      guint depth = stack->len > 0
                        ? g_array_index(b->ranges, Range,
                                        g_array_index(stack, guint, stack->len - 1)).depth + 1
                        : thread != first ? first_stack->len : 0;
      Range r = { e->name, e->t, G_MAXUINT64, depth, e->line };
      g_array_append_val(b->ranges, r);
      guint idx = b->ranges->len - 1;
      g_array_append_val(stack, idx);
    } else if (e->kind == STW_EVENT_POP) {
      GArray *stack = stack_of(stacks, thread);
      if (stack->len == 0) {
        g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_NESTING,
                    "%s:%u: a range closes that was never opened (pop without push%s)",
                    b->ev->file, e->line, thread != 0 ? " on this thread" : "");
        return FALSE;
      }
      g_array_index(b->ranges, Range, g_array_index(stack, guint, stack->len - 1)).end = e->t;
      g_array_set_size(stack, stack->len - 1);
    }
  }
  b->open = 0;
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, stacks);
  while (g_hash_table_iter_next(&it, &key, &value))
    b->open += ((GArray *)value)->len;
  return TRUE;
}

/* Pass 2: the iteration's window (the whole run when no iteration range is named), and the
 * depth of the ranges that become ops. */
static gboolean
choose_window(Build *b, GError **error)
{
  const StwEventsOptions *o = b->o;
  gboolean whole = o->iteration_range == NULL || o->iteration_range[0] == '\0';
  guint base_depth = 0;
  b->w0 = 0;
  b->w1 = G_MAXUINT64;
  if (whole) {
    if (b->open > 0) {
      g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_NESTING,
                  "%s: %u ranges are still open at the end (an NVTX push without a pop)",
                  b->ev->file, b->open);
      return FALSE;
    }
  } else {
    guint found = 0, chosen = 0;
    for (guint i = 0; i < b->ranges->len; i++) {
      const Range *r = &g_array_index(b->ranges, Range, i);
      if (strcmp(r->name, o->iteration_range) != 0 || r->end == G_MAXUINT64)
        continue;
      found++;
      if (o->iteration == 0 || found == o->iteration) {
        chosen = found;
        b->w0 = r->start;
        b->w1 = r->end;
        base_depth = r->depth + 1;
      }
    }
    b->rep.iterations = found;
    if (chosen == 0) {
      g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_EMPTY,
                  "%s: %s: found %u complete '%s' ranges%s", b->ev->file,
                  found == 0 ? "no iteration" : "no such iteration", found, o->iteration_range,
                  b->open > 0 ? ", and ranges left open at the end (an NVTX push without a pop?)"
                              : "");
      return FALSE;
    }
  }
  b->want_depth = base_depth + MAX(o->depth, 1) - 1;
  return TRUE;
}

/* Pass 3: every allocation's live interval (repeated records ignored, and counted), the names
 * the stream gives them, the ones alive across the window, and the kernels by launch id. */
/* A tensor line names the live allocation A at its address, which must hold it. */
static gboolean
name_allocation(const Build *b, Alloc *a, const StwEventRecord *e, GError **error)
{
  g_auto(GStrv) names = g_strsplit(e->name, " ", 2);
  if (a == NULL) {
    g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_ORDER,
                "%s:%u: tensor %s at %" G_GINT64_MODIFIER "x names no live allocation",
                b->ev->file, e->line, names[0], e->ptr);
    return FALSE;
  }
  guint64 numel = 1;
  for (guint i = 0; i < e->n_args; i++)
    numel = numel > STW_TRACE_MAX_NUMEL / e->args[i] ? STW_TRACE_MAX_NUMEL + 1 : numel * e->args[i];
  guint64 elem = stw_dtype_bytes(b->o->dtype);
  if (numel > STW_TRACE_MAX_NUMEL || numel * elem > a->bytes) {
    g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_ORDER,
                "%s:%u: tensor %s of %" G_GUINT64_FORMAT " elements is %" G_GUINT64_FORMAT
                " bytes at %s (--dtype), more than its allocation of %" G_GUINT64_FORMAT
                " bytes", b->ev->file, e->line, names[0], numel, numel * elem,
                stw_dtype_name(b->o->dtype), a->bytes);
    return FALSE;
  }
  a->named = e;
  return TRUE;
}

static gboolean
second_record(const Build *b, const StwEventRecord *e, const StwEventRecord *first,
              const char *what, GError **error)
{
  g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_ORDER,
              "%s:%u: a second %s of id %" G_GUINT64_FORMAT " (the first at line %u)",
              b->ev->file, e->line, what, e->id, first->line);
  return FALSE;
}

static gboolean
collect_allocs(Build *b, GError **error)
{
  g_autoptr(GHashTable) live = g_hash_table_new(g_int64_hash, g_int64_equal);
  g_autoptr(GHashTable) launches = g_hash_table_new(g_int64_hash, g_int64_equal);
  guint64 allocated = 0; /* every allocation's bytes: no sum of live ones can pass it */
  b->allocs = g_ptr_array_new_with_free_func(g_free);
  b->gpu = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (guint i = 0; i < b->n; i++) {
    const StwEventRecord *e = &b->e[i];
    if (e->kind == STW_EVENT_LAUNCH) {
      /* a launch id is CUPTI's correlation id, one per call */
      const StwEventRecord *same = g_hash_table_lookup(launches, &e->id);
      if (same != NULL)
        return second_record(b, e, same, "launch", error);
      g_hash_table_insert(launches, (gpointer)&e->id, (gpointer)e);
    } else if (e->kind == STW_EVENT_ALLOC) {
      if (g_hash_table_contains(live, &e->ptr)) {
        b->rep.duplicate_allocs++;
        continue;
      }
      if (!stw_sum_within(&allocated, e->bytes, STW_TRACE_MAX_INT)) {
        g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_ORDER,
                    "%s:%u: the stream's allocations pass 2^53 bytes (8 PiB) in all",
                    b->ev->file, e->line);
        return FALSE;
      }
      Alloc *a = g_new0(Alloc, 1);
      *a = (Alloc){ e->ptr, e->bytes, e->t, G_MAXUINT64, -1, NULL };
      g_ptr_array_add(b->allocs, a);
      g_hash_table_insert(live, &a->ptr, a);
    } else if (e->kind == STW_EVENT_FREE) {
      Alloc *a = g_hash_table_lookup(live, &e->ptr);
      if (a == NULL) { /* allocated before the profiler attached */
        b->rep.unknown_frees++;
        continue;
      }
      a->t_free = e->t;
      g_hash_table_remove(live, &e->ptr);
    } else if (e->kind == STW_EVENT_TENSOR) {
      Alloc *a = g_hash_table_lookup(live, &e->ptr);
      if (!name_allocation(b, a, e, error))
        return FALSE;
    } else if (e->kind == STW_EVENT_KERNEL && e->incomplete) {
      b->rep.incomplete_kernels++; /* its launch gets the host time, as a dropped one */
    } else if (e->kind == STW_EVENT_KERNEL) {
      const StwEventRecord *same = g_hash_table_lookup(b->gpu, &e->id);
      if (same != NULL)
        return second_record(b, e, same, "kernel record", error);
      g_hash_table_insert(b->gpu, (gpointer)&e->id, (gpointer)e);
    }
  }
  /* a kernel no recorded launch made (a CUDA graph's, launched by a call the profiler does not
   * follow) has no op to time: counted, and said in the trace */
  GHashTableIter it;
  gpointer id;
  g_hash_table_iter_init(&it, b->gpu);
  while (g_hash_table_iter_next(&it, &id, NULL))
    if (!g_hash_table_contains(launches, id))
      b->rep.unlaunched_kernels++;
  b->lasting = g_ptr_array_new();
  for (guint i = 0; i < b->allocs->len; i++) {
    Alloc *a = b->allocs->pdata[i];
    if (a->t_alloc <= b->w0 && a->t_free >= b->w1)
      g_ptr_array_add(b->lasting, a);
  }
  b->sorted = g_ptr_array_copy(b->lasting, NULL, NULL);
  g_ptr_array_sort(b->sorted, alloc_by_ptr);
  return TRUE;
}

/* Pass 4: the ops, ranges at the wanted depth inside the window; which long-lived allocations
 * each touches through its kernels' arguments, its stage and its kernels' GPU time. Allocations
 * a forward op touches are marked to become tensors. */
static gboolean
touch_pass(Build *b, GError **error)
{
  b->ops = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < b->ranges->len; i++) {
    const Range *r = &g_array_index(b->ranges, Range, i);
    if (r->depth == b->want_depth && r->start >= b->w0 && r->end <= b->w1 &&
        r->end != G_MAXUINT64)
      g_array_append_val(b->ops, i);
  }
  guint n_ops = b->ops->len;
  b->touch = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  b->stages = g_new(StwStage, MAX(n_ops, 1));
  b->gpu_ns = g_new0(guint64, MAX(n_ops, 1));
  b->timed = g_new0(guint8, MAX(n_ops, 1));
  StwStage stage = STW_STAGE_FWD;
  const StwEventRecord *e = b->e;
  guint li = 0;
  for (guint k = 0; k < n_ops; k++) {
    const Range *r = &g_array_index(b->ranges, Range, g_array_index(b->ops, guint, k));
    stage = stage_after(stage, r->name);
    b->stages[k] = stage;
    GPtrArray *tk = g_ptr_array_new();
    while (li < b->n && (e[li].kind != STW_EVENT_LAUNCH || e[li].t < r->start))
      li++;
    for (guint j = li; j < b->n; j++) {
      if (e[j].kind != STW_EVENT_LAUNCH)
        continue;
      if (e[j].t > r->end)
        break;
      const StwEventRecord *kern = g_hash_table_lookup(b->gpu, &e[j].id);
      if (kern != NULL) {
        if (!stw_sum_within(&b->gpu_ns[k], kern->end - kern->t, STW_TRACE_MAX_INT)) {
          g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_ORDER,
                      "%s:%u: the kernels of op %s (line %u) run for more than 2^53 ns (104 "
                      "days) in all", b->ev->file, kern->line, r->name, r->line);
          return FALSE;
        }
        b->timed[k] = 1;
      } else {
        b->rep.dropped_launches++;
      }
      for (guint a = 0; a < e[j].n_args; a++) {
        Alloc *al = find(b->sorted, e[j].args[a]);
        if (al != NULL && g_ptr_array_find(tk, al, NULL) == FALSE)
          g_ptr_array_add(tk, al);
      }
    }
    g_ptr_array_add(b->touch, tk);
    for (guint a = 0; stage == STW_STAGE_FWD && a < tk->len; a++)
      ((Alloc *)tk->pdata[a])->tensor = 0; /* marked: a forward tensor */
  }
  return TRUE;
}

/* Pass 5: the marked allocations become the trace's tensors, in allocation order, named by the
 * stream where it names them. */
static void
add_tensors(Build *b)
{
  StwDtype dtype = b->o->dtype;
  StwTrace *t = b->t;
  for (guint i = 0; i < b->lasting->len; i++) {
    Alloc *a = b->lasting->pdata[i];
    if (a->tensor != 0) {
      a->tensor = -1;
      continue;
    }
    if (a->named != NULL) {
      g_auto(GStrv) names = g_strsplit(a->named->name, " ", 0);
      a->tensor = (gint32)stw_trace_add_tensor(t, names[0], dtype, a->named->args,
                                               a->named->n_args);
      for (guint k = 1; names[k] != NULL; k++)
        g_ptr_array_add(g_array_index(t->tensors, StwTensor, a->tensor).aliases,
                        g_strdup(names[k]));
    } else {
      g_autofree char *name = g_strdup_printf("tensor%u@0x%" G_GINT64_MODIFIER "x",
                                              t->tensors->len, a->ptr);
      guint64 shape[1] = { MAX(a->bytes / stw_dtype_bytes(dtype), 1) };
      a->tensor = (gint32)stw_trace_add_tensor(t, name, dtype, shape, 1);
    }
  }
}

/* The non-model memory of op range R: every allocation that is neither a tensor nor alive
 * across the window, live at R's start, then swept through its allocations and frees. */
static void
nonmodel_memory(const Build *b, const Range *r, StwOp *op)
{
  guint64 at_start = 0;
  g_autoptr(GArray) deltas = g_array_new(FALSE, FALSE, sizeof(Delta));
  for (guint i = 0; i < b->allocs->len; i++) {
    const Alloc *a = b->allocs->pdata[i];
    if (a->tensor >= 0 || (a->t_alloc <= b->w0 && a->t_free >= b->w1))
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
  op->nonmodel_bytes = at_start;
  op->nonmodel_peak_bytes = (guint64)peak;
}

/* Pass 6: the trace's ops, reading the tensors they touch (a backward op writing their
 * gradients), with their non-model memory and durations. */
static gboolean
add_ops(Build *b, GError **error)
{
  guint64 total_ns = 0;
  for (guint k = 0; k < b->ops->len; k++) {
    const Range *r = &g_array_index(b->ranges, Range, g_array_index(b->ops, guint, k));
    GPtrArray *tk = b->touch->pdata[k];
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint32));
    for (guint a = 0; a < tk->len; a++) {
      const Alloc *al = tk->pdata[a];
      if (al->tensor >= 0) {
        guint32 id = (guint32)al->tensor;
        g_array_append_val(ids, id);
      }
    }
    StwOp *op = stw_trace_add_op(b->t, r->name, b->stages[k], (guint32 *)ids->data, ids->len,
                                 (guint32 *)ids->data,
                                 b->stages[k] == STW_STAGE_BWD ? ids->len : 0);
    nonmodel_memory(b, r, op);
    op->duration_ns = b->timed[k] ? b->gpu_ns[k] : r->end - r->start;
    if (!stw_sum_within(&total_ns, op->duration_ns, STW_TRACE_MAX_TOTAL_NS)) {
      g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_ORDER,
                  "%s:%u: the ops take more than 2^53 ns (104 days) in all, passing it at op "
                  "%s", b->ev->file, r->line, r->name);
      return FALSE;
    }
  }
  return TRUE;
}

StwTrace *
stw_events_build(const StwEvents *ev, const StwEventsOptions *o, StwEventsReport *report,
                 GError **error)
{
  Build b = { .ev = ev, .o = o, .e = (const StwEventRecord *)ev->records->data,
              .n = ev->records->len };
  if (!collect_ranges(&b, error) || !choose_window(&b, error)) {
    build_clear(&b);
    return NULL;
  }
  if (!collect_allocs(&b, error)) {
    build_clear(&b);
    return NULL;
  }
  if (!touch_pass(&b, error)) {
    build_clear(&b);
    return NULL;
  }
  b.t = stw_trace_new();
  b.t->source.kind = STW_SOURCE_CUPTI;
  add_tensors(&b);
  if (!add_ops(&b, error)) {
    build_clear(&b);
    return NULL;
  }
  b.rep.open_ranges = b.open;
  /* what a real profiler produces and the trace does without, counted in its source */
  stw_trace_warn(b.t, "dropped_launches", b.rep.dropped_launches);
  stw_trace_warn(b.t, "incomplete_kernels", b.rep.incomplete_kernels);
  stw_trace_warn(b.t, "unlaunched_kernels", b.rep.unlaunched_kernels);
  stw_trace_warn(b.t, "duplicate_allocs", b.rep.duplicate_allocs);
  stw_trace_warn(b.t, "unknown_frees", b.rep.unknown_frees);
  stw_trace_warn(b.t, "open_ranges", b.rep.open_ranges);
  if (report != NULL)
    *report = b.rep;
  if (b.ops->len == 0) {
    g_set_error(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_EMPTY,
                "%s: the iteration has no ranges at depth %u to make ops of", ev->file,
                MAX(o->depth, 1));
    build_clear(&b);
    return NULL;
  }
  if (!stw_trace_validate(b.t, ev->file, error)) {
    build_clear(&b);
    return NULL;
  }
  StwTrace *t = g_steal_pointer(&b.t);
  build_clear(&b);
  return t;
}
