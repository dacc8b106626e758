/* runtime.c — the chunk runtime; see runtime.h. */
#include "config.h"

#include <stowage/runtime.h>

#include <string.h>

#include "bf16.h"
#include <stowage/chunks.h>
#include <stowage/events.h>

G_DEFINE_QUARK(stw-runtime-error-quark, stw_runtime_error)

typedef struct {
  guint32 item;
  guint8 *dev;       /* the slot being written back */
  StwEvent *event;
  guint64 expect;    /* verify: checksum of the device data at issue */
} Leaving;

struct StwRuntime {
  StwBackend *be;
  StwRuntimeOptions o;
  const StwTrace *model;
  StwChunking *chunking;
  guint8 *optim;            /* per chunk: StwOptimPlace */
  guint32 n, n_items;
  guint64 *bytes;           /* per item */
  guint64 *offset;          /* per tensor: elements from the start of its chunk */
  guint8 **host, **dev;     /* per item; dev NULL when not resident */
  guint64 elem[STW_N_LISTS];/* bytes per element of each list: the param list's is the model's
                             * dtype (bf16 in mixed precision), the others fp32 */
  StwEvent **arriving;      /* per item: the fetch in flight */
  guint64 *arriving_sum;    /* verify: checksum of the host data at fetch */
  guint8 *dirty;            /* the device copy is the only valid one */
  GQueue leaving;           /* Leaving*, in issue order */
  guint8 *leaving_count;    /* per item: evictions in flight */
  guint64 capacity, used;   /* device bytes: chunks (incl. leaving) + activations */
  GHashTable *acts;         /* activation pointer -> size */
  guint64 act_bytes, act_peak;
  guint64 *last_use, clock; /* LRU in profile mode */
  guint32 *needed;          /* stamp: needed by the current op */
  guint32 stamp;
  /* replay */
  guint32 moment;
  guint next_action;
  gboolean started;
  /* recording */
  StwTrace *rec, *last_trace;
  gint64 op_start_us;
  gint64 op_start_ns;
  StwOp *cur_op;
  StwRuntimeStats st;
  guint64 iter_h2d, iter_d2h;
  GError *corrupt;          /* a checksum failure, failed or stuck copy found while waiting */
  gboolean halted;          /* a copy failed or never completed: no more waiting or copies */
  /* profile mode: the run as events (events.h), on a logical clock */
  StwEventWriter *events;
  guint64 ev_clock;
  guint64 next_act_ptr;     /* virtual addresses for activations */
  GHashTable *act_ptrs;     /* activation pointer -> virtual address */
  guint64 op_id;
};

/* Virtual device addresses in the event stream: tensor T at (T + 1) << 32, activations above
 * 1 << 48, each in its own 4 GiB window. */
#define TENSOR_VADDR(t) (((guint64)(t) + 1) << 32)
#define ACT_VADDR_BASE (G_GUINT64_CONSTANT(1) << 48)

static guint64
checksum(const void *p, gsize n)
{
  const guint8 *b = p;
  guint64 h = 1469598103934665603ull;
  for (gsize i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static guint32
item_of(const StwRuntime *rt, StwChunkList list, guint32 chunk)
{
  return (guint32)list * rt->n + chunk;
}

/* TENSOR's place in BASE, a chunk of LIST */
static guint8 *
at(const StwRuntime *rt, guint8 *base, StwChunkList list, guint32 tensor)
{
  return base + rt->offset[tensor] * rt->elem[list];
}

/* N values of FROM (fp32) as ELEM-byte elements (fp32 or bf16) in TO */
static void
store_values(void *to, const float *from, gsize n, guint64 elem)
{
  if (elem == sizeof(float)) {
    memcpy(to, from, n * sizeof(float));
    return;
  }
  guint16 *h = to;
  for (gsize i = 0; i < n; i++)
    h[i] = stw_bf16_from_float(from[i]);
}

/* ---- device memory ---------------------------------------------------------------------- */

/* Records a device failure (the first one is reported, at the next op) and stops all copying:
 * the copy's destination holds nothing reliable. */
static void
halt(StwRuntime *rt, GError *why)
{
  if (rt->corrupt == NULL)
    rt->corrupt = why;
  else
    g_error_free(why);
  rt->halted = TRUE;
}

/* Waits for E; with a copy timeout, a copy that does not complete in time is recorded as a
 * device error (reported at the next op) instead of hanging the run. A copy that fails is
 * recorded the same way. */
static void
wait_event(StwRuntime *rt, StwEvent *e)
{
  if (rt->o.copy_timeout_ms > 0) {
    gint64 deadline = g_get_monotonic_time() + (gint64)rt->o.copy_timeout_ms * 1000;
    while (!rt->be->done(rt->be, e)) {
      if (g_get_monotonic_time() > deadline) {
        halt(rt, g_error_new(STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE,
                             "a copy did not complete within %" G_GUINT64_FORMAT " ms: the "
                             "device or its driver is stuck; the run stops here, and the last "
                             "checkpoint holds the model state", rt->o.copy_timeout_ms));
        return;
      }
      g_usleep(50);
    }
  }
  if (!rt->be->wait(rt->be, e))
    halt(rt, g_error_new(STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE,
                         "a copy failed (%s): the run stops here, and the last checkpoint "
                         "holds the model state", rt->be->error));
}

/* Frees the slots of finished evictions (all of them with WAIT). */
static void
reap(StwRuntime *rt, gboolean wait)
{
  while (!g_queue_is_empty(&rt->leaving)) {
    Leaving *l = g_queue_peek_head(&rt->leaving);
    if (!wait && !rt->be->done(rt->be, l->event))
      break;
    if (rt->halted)
      break;
    wait_event(rt, l->event);
    if (rt->halted)
      break;
    g_queue_pop_head(&rt->leaving);
    if (rt->o.verify) {
      if (checksum(rt->host[l->item], rt->bytes[l->item]) != l->expect && rt->corrupt == NULL)
        rt->corrupt = g_error_new(STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_CORRUPT,
                                  "chunk item %u changed in its device-to-host copy", l->item);
      rt->st.verified_moves++;
    }
    rt->be->event_free(rt->be, l->event);
    rt->be->device_free(rt->be, l->dev);
    rt->used -= rt->bytes[l->item];
    rt->leaving_count[l->item]--;
    g_free(l);
  }
}

static void
wait_arrival(StwRuntime *rt, guint32 item)
{
  if (rt->arriving[item] == NULL || rt->halted)
    return;
  wait_event(rt, rt->arriving[item]);
  if (rt->halted)
    return;
  rt->be->event_free(rt->be, rt->arriving[item]);
  rt->arriving[item] = NULL;
  if (rt->o.verify) {
    if (checksum(rt->dev[item], rt->bytes[item]) != rt->arriving_sum[item] && rt->corrupt == NULL)
      rt->corrupt = g_error_new(STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_CORRUPT,
                                "chunk item %u changed in its host-to-device copy", item);
    rt->st.verified_moves++;
  }
}

/* Waits until the host copy of ITEM is complete (no write-back in flight). */
static void
wait_leaving(StwRuntime *rt, guint32 item)
{
  while (rt->leaving_count[item] > 0 && !rt->halted)
    reap(rt, TRUE);
}

static void evict(StwRuntime *rt, guint32 item);

/* The resident item, not needed now, to make room with: least recently used. */
static guint32
victim(StwRuntime *rt)
{
  guint32 best = G_MAXUINT32;
  for (guint32 i = 0; i < rt->n_items; i++) {
    if (rt->dev[i] == NULL || rt->needed[i] == rt->stamp)
      continue;
    if (best == G_MAXUINT32 || rt->last_use[i] < rt->last_use[best])
      best = i;
  }
  return best;
}

/* Makes BYTES of device memory available: finished and then pending write-backs first, then
 * (on demand) evicting chunks the current op does not need. */
static gboolean
reserve(StwRuntime *rt, guint64 bytes, GError **error)
{
  reap(rt, FALSE);
  while (rt->used + bytes > rt->capacity) {
    if (!g_queue_is_empty(&rt->leaving) && !rt->halted) {
      Leaving *l = g_queue_peek_head(&rt->leaving);
      wait_event(rt, l->event);
      reap(rt, FALSE);
      continue;
    }
    if (rt->halted) {
      if (rt->corrupt != NULL) { /* why: the failed or stuck copy */
        g_propagate_error(error, rt->corrupt);
        rt->corrupt = NULL;
      } else {
        g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE,
                    "a copy failed or did not complete: no device memory can be reclaimed");
      }
      return FALSE;
    }
    guint32 v = victim(rt);
    if (v == G_MAXUINT32) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET,
                  "the device budget of %" G_GUINT64_FORMAT " bytes cannot hold %" G_GUINT64_FORMAT
                  " more bytes: %" G_GUINT64_FORMAT " are taken by this op's chunks and by "
                  "activations", rt->capacity, bytes, rt->used);
      return FALSE;
    }
    if (rt->o.mode == STW_RUNTIME_REPLAY)
      rt->st.deviations++;
    evict(rt, v);
  }
  rt->used += bytes;
  rt->st.peak_device_bytes = MAX(rt->st.peak_device_bytes, rt->used);
  return TRUE;
}

static gboolean
fetch(StwRuntime *rt, guint32 item, GError **error)
{
  g_assert(rt->dev[item] == NULL);
  wait_leaving(rt, item);
  if (!reserve(rt, rt->bytes[item], error))
    return FALSE;
  rt->dev[item] = rt->be->device_alloc(rt->be, rt->bytes[item]);
  if (rt->dev[item] == NULL) {
    rt->used -= rt->bytes[item];
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET,
                "the backend could not allocate %" G_GUINT64_FORMAT " bytes", rt->bytes[item]);
    return FALSE;
  }
  if (rt->o.verify)
    rt->arriving_sum[item] = checksum(rt->host[item], rt->bytes[item]);
  rt->arriving[item] = rt->be->copy(rt->be, STW_COPY_H2D, rt->dev[item], rt->host[item],
                                    rt->bytes[item]);
  rt->dirty[item] = 0;
  rt->iter_h2d += rt->bytes[item];
  return TRUE;
}

/* Writes ITEM back and frees its slot once the copy is done. */
static void
evict(StwRuntime *rt, guint32 item)
{
  g_assert(rt->dev[item] != NULL);
  wait_arrival(rt, item);
  Leaving *l = g_new0(Leaving, 1);
  l->item = item;
  l->dev = rt->dev[item];
  if (rt->o.verify)
    l->expect = checksum(l->dev, rt->bytes[item]);
  l->event = rt->be->copy(rt->be, STW_COPY_D2H, rt->host[item], l->dev, rt->bytes[item]);
  g_queue_push_tail(&rt->leaving, l);
  rt->leaving_count[item]++;
  rt->dev[item] = NULL;
  rt->dirty[item] = 0;
  rt->iter_d2h += rt->bytes[item];
}

/* Frees a clean ITEM; a dirty one is written back instead (a deviation: data is never lost). */
static void
drop(StwRuntime *rt, guint32 item)
{
  if (rt->dirty[item]) {
    rt->st.deviations++;
    evict(rt, item);
    return;
  }
  wait_arrival(rt, item);
  rt->be->device_free(rt->be, rt->dev[item]);
  rt->dev[item] = NULL;
  rt->used -= rt->bytes[item];
}

/* ---- construction ----------------------------------------------------------------------- */

StwRuntime *
stw_runtime_new(const StwTrace *model, const float *const *init, const StwRuntimeOptions *o,
                StwBackend *backend, GError **error)
{
  if (o->verify && !backend->device_is_host) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET,
                "verify checksums device memory from the host, which the %s backend's is not; "
                "verify with the host backend", backend->name);
    return NULL;
  }
  StwRuntime *rt = g_new0(StwRuntime, 1);
  rt->be = backend;
  rt->o = *o;
  rt->model = model;
  rt->capacity = o->device_bytes;
  g_queue_init(&rt->leaving);
  if (o->mode == STW_RUNTIME_REPLAY) {
    const StwTrace *pt = o->plan_trace;
    g_autofree char *digest = stw_trace_digest(pt);
    gboolean same = strcmp(digest, o->plan->trace_digest) == 0 &&
                    pt->tensors->len == model->tensors->len;
    for (guint32 i = 0; same && i < model->tensors->len; i++)
      same = strcmp(stw_trace_tensor(pt, i)->name, stw_trace_tensor(model, i)->name) == 0 &&
             stw_trace_tensor(pt, i)->numel == stw_trace_tensor(model, i)->numel &&
             stw_trace_tensor(pt, i)->dtype == stw_trace_tensor(model, i)->dtype;
    if (!same) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                  "the plan was made for another model: its trace's digest or tensors (%u, %s) "
                  "differ from this model's (%u tensors, %s); profile this model and plan again",
                  pt->tensors->len,
                  pt->tensors->len ? stw_dtype_name(stw_trace_tensor(pt, 0)->dtype) : "-",
                  model->tensors->len,
                  model->tensors->len ? stw_dtype_name(stw_trace_tensor(model, 0)->dtype) : "-");
      g_free(rt);
      return NULL;
    }
    if (o->plan->chunking->world > 1) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                  "the plan is for %u GPUs (chunk groups with gathers and reduce-scatters); "
                  "this runtime replays one-GPU plans: plan again with --gpus 1",
                  o->plan->chunking->world);
      g_free(rt);
      return NULL;
    }
    /* the runtime owns a copy of the plan's layout */
    rt->chunking = g_new0(StwChunking, 1);
    const StwChunking *pc = o->plan->chunking;
    rt->chunking->size_elems = pc->size_elems;
    rt->chunking->dtype = pc->dtype;
    rt->chunking->chunks = g_array_copy(pc->chunks);
    rt->chunking->placements = g_array_copy(pc->placements);
    rt->chunking->n_tensors = pc->n_tensors;
    rt->chunking->world = 1;
    rt->chunking->chunk_of = g_memdup2(pc->chunk_of, MAX(pc->n_tensors, 1) * sizeof(guint32));
    rt->optim = g_memdup2(o->plan->optim, stw_chunking_count(pc));
  } else {
    guint64 size = o->chunk_size_elems;
    if (size == 0)
      size = stw_trace_largest_tensor(model, NULL);
    rt->chunking = stw_chunking_pack(model, size, TRUE, error);
    if (rt->chunking == NULL) {
      g_free(rt);
      return NULL;
    }
    rt->optim = g_malloc0(stw_chunking_count(rt->chunking)); /* CPU Adam while profiling */
  }
  rt->n = stw_chunking_count(rt->chunking);
  rt->n_items = STW_N_LISTS * rt->n;
  rt->bytes = g_new(guint64, rt->n_items);
  rt->offset = g_new0(guint64, MAX(model->tensors->len, 1));
  for (guint i = 0; i < rt->chunking->placements->len; i++) {
    const StwPlacement *p = &g_array_index(rt->chunking->placements, StwPlacement, i);
    rt->offset[p->tensor] = p->offset;
  }
  rt->host = g_new0(guint8 *, rt->n_items);
  rt->dev = g_new0(guint8 *, rt->n_items);
  for (int l = 0; l < STW_N_LISTS; l++)
    rt->elem[l] = l == STW_LIST_PARAM ? stw_dtype_bytes(rt->chunking->dtype) : sizeof(float);
  rt->arriving = g_new0(StwEvent *, rt->n_items);
  rt->arriving_sum = g_new0(guint64, rt->n_items);
  rt->dirty = g_new0(guint8, rt->n_items);
  rt->leaving_count = g_new0(guint8, rt->n_items);
  rt->last_use = g_new0(guint64, rt->n_items);
  rt->needed = g_new0(guint32, rt->n_items);
  rt->acts = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (int l = 0; l < STW_N_LISTS; l++) {
    for (guint32 c = 0; c < rt->n; c++) {
      guint32 item = item_of(rt, (StwChunkList)l, c);
      rt->bytes[item] = stw_chunking_chunk(rt->chunking, c)->capacity_elems * rt->elem[l];
      rt->host[item] = backend->host_alloc(backend, rt->bytes[item]);
    }
  }
  /* initial values: compute copy and master from INIT, moments zero */
  for (guint32 c = 0; c < rt->n; c++) {
    const StwChunk *ch = stw_chunking_chunk(rt->chunking, c);
    for (guint32 k = 0; k < ch->count; k++) {
      const StwPlacement *p = &g_array_index(rt->chunking->placements, StwPlacement, ch->first + k);
      gsize n = stw_trace_tensor(model, p->tensor)->numel;
      store_values(at(rt, rt->host[item_of(rt, STW_LIST_PARAM, c)], STW_LIST_PARAM, p->tensor),
                   init[p->tensor], n, rt->elem[STW_LIST_PARAM]);
      store_values(at(rt, rt->host[item_of(rt, STW_LIST_MASTER, c)], STW_LIST_MASTER, p->tensor),
                   init[p->tensor], n, sizeof(float));
    }
  }
  rt->rec = NULL;
  if (o->mode == STW_RUNTIME_PLAIN) /* every list used in place: nothing is ever "off" */
    for (guint32 i = 0; i < rt->n_items; i++)
      rt->dev[i] = rt->host[i];
  if (o->mode == STW_RUNTIME_PROFILE) {
    rt->events = stw_event_writer_new();
    rt->act_ptrs = g_hash_table_new(g_direct_hash, g_direct_equal);
    rt->next_act_ptr = ACT_VADDR_BASE;
    for (guint32 i = 0; i < model->tensors->len; i++) {
      const StwTensor *x = stw_trace_tensor(model, i);
      stw_event_alloc(rt->events, rt->ev_clock++, TENSOR_VADDR(i),
                      x->numel * rt->elem[STW_LIST_PARAM]);
      GString *names = g_string_new(x->name);
      for (guint k = 0; x->aliases != NULL && k < x->aliases->len; k++)
        g_string_append_printf(names, " %s", (char *)x->aliases->pdata[k]);
      stw_event_tensor(rt->events, TENSOR_VADDR(i), x->shape, x->ndim, names->str);
      g_string_free(names, TRUE);
    }
  }
  return rt;
}

void
stw_runtime_free(StwRuntime *rt)
{
  if (rt == NULL)
    return;
  /* events are released without waiting when a copy got stuck (event_free must not block on
   * one that never completes) */
  if (rt->o.mode == STW_RUNTIME_PLAIN)
    memset(rt->dev, 0, rt->n_items * sizeof *rt->dev); /* the host arrays, freed below */
  for (guint32 i = 0; i < rt->n_items; i++) {
    if (rt->arriving[i] != NULL)
      rt->be->event_free(rt->be, rt->arriving[i]);
    if (rt->dev[i] != NULL)
      rt->be->device_free(rt->be, rt->dev[i]);
  }
  Leaving *l;
  while ((l = g_queue_pop_head(&rt->leaving)) != NULL) {
    if (!rt->halted)
      rt->be->wait(rt->be, l->event);
    rt->be->event_free(rt->be, l->event);
    rt->be->device_free(rt->be, l->dev);
    g_free(l);
  }
  for (guint32 i = 0; i < rt->n_items; i++)
    rt->be->host_free(rt->be, rt->host[i]);
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, rt->acts);
  while (g_hash_table_iter_next(&it, &key, NULL))
    rt->be->device_free(rt->be, key);
  g_hash_table_unref(rt->acts);
  stw_chunking_free(rt->chunking);
  g_free(rt->optim);
  g_free(rt->bytes);
  g_free(rt->offset);
  g_free(rt->host);
  g_free(rt->dev);
  g_free(rt->arriving);
  g_free(rt->arriving_sum);
  g_free(rt->dirty);
  g_free(rt->leaving_count);
  g_free(rt->last_use);
  g_free(rt->needed);
  stw_trace_free(rt->rec);
  stw_trace_free(rt->last_trace);
  g_clear_error(&rt->corrupt);
  stw_event_writer_free(rt->events);
  if (rt->act_ptrs != NULL)
    g_hash_table_unref(rt->act_ptrs);
  g_free(rt);
}

/* ---- iterations and ops ---------------------------------------------------------------------- */

static void
start_recording(StwRuntime *rt)
{
  stw_trace_free(rt->rec);
  StwTrace *t = stw_trace_new();
  t->source.kind = STW_SOURCE_RUNTIME;
  g_free(t->source.created);
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  t->source.created = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
  g_free(t->model.name);
  t->model = rt->model->model;
  t->model.name = g_strdup(rt->model->model.name);
  g_free(t->device.name);
  t->device.name = g_strdup(rt->be->name);
  t->device.memory_bytes = rt->capacity;
  for (guint32 i = 0; i < rt->model->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(rt->model, i);
    guint32 id = stw_trace_add_tensor(t, x->name, x->dtype, x->shape, x->ndim);
    for (guint k = 0; x->aliases != NULL && k < x->aliases->len; k++)
      g_ptr_array_add(g_array_index(t->tensors, StwTensor, id).aliases,
                      g_strdup(x->aliases->pdata[k]));
  }
  rt->rec = t;
}

static gboolean
apply_actions(StwRuntime *rt, guint32 moment, GError **error)
{
  const StwAction *a = (const StwAction *)rt->o.plan->schedule.actions->data;
  guint n = rt->o.plan->schedule.actions->len;
  for (; rt->next_action < n && a[rt->next_action].moment == moment; rt->next_action++) {
    guint32 item = a[rt->next_action].item;
    switch (a[rt->next_action].kind) {
    case STW_ACTION_EVICT:
      if (rt->dev[item] == NULL) {
        rt->st.deviations++;
        break;
      }
      evict(rt, item);
      break;
    case STW_ACTION_DROP:
      if (rt->dev[item] == NULL) {
        rt->st.deviations++;
        break;
      }
      drop(rt, item);
      break;
    case STW_ACTION_FETCH:
      if (rt->dev[item] != NULL) {
        rt->st.deviations++;
        break;
      }
      if (!fetch(rt, item, error))
        return FALSE;
      break;
    default:
      break;
    }
  }
  return TRUE;
}

void
stw_runtime_iteration_begin(StwRuntime *rt)
{
  rt->iter_h2d = rt->iter_d2h = 0;
  rt->moment = 0;
  rt->next_action = 0;
  if (rt->o.mode == STW_RUNTIME_PROFILE) {
    start_recording(rt);
    stw_event_push(rt->events, rt->ev_clock++, "stowage.iteration");
  }
  if (rt->o.mode == STW_RUNTIME_REPLAY && !rt->started) {
    /* load the plan's start state */
    for (guint32 i = 0; i < rt->n_items; i++) {
      if (rt->o.plan->schedule.resident[i] && rt->dev[i] == NULL)
        fetch(rt, i, NULL);
    }
    for (guint32 i = 0; i < rt->n_items; i++)
      wait_arrival(rt, i);
    rt->st.warmup_h2d_bytes = rt->iter_h2d;
    rt->iter_h2d = 0;
    rt->started = TRUE;
  }
}

gboolean
stw_runtime_iteration_end(StwRuntime *rt, GError **error)
{
  if (rt->o.mode == STW_RUNTIME_REPLAY) {
    if (rt->moment != rt->o.plan_trace->ops->len) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                  "the iteration ran %u ops, the plan's trace has %u", rt->moment,
                  rt->o.plan_trace->ops->len);
      return FALSE;
    }
    if (!apply_actions(rt, rt->moment, error))
      return FALSE;
  }
  if (rt->o.mode == STW_RUNTIME_PROFILE && rt->rec != NULL) {
    stw_event_pop(rt->events, rt->ev_clock++);
    stw_trace_free(rt->last_trace);
    rt->last_trace = rt->rec;
    rt->rec = NULL;
  }
  rt->st.h2d_bytes = rt->iter_h2d;
  rt->st.d2h_bytes = rt->iter_d2h;
  if (rt->corrupt != NULL) {
    g_propagate_error(error, rt->corrupt);
    rt->corrupt = NULL;
    return FALSE;
  }
  return TRUE;
}

static gboolean
same_ids(const guint32 *a, guint32 na, const guint32 *b, guint32 nb)
{
  return na == nb && (na == 0 || memcmp(a, b, na * sizeof(guint32)) == 0);
}

gboolean
stw_runtime_op_begin(StwRuntime *rt, const char *name, StwStage stage, const guint32 *params,
                     guint32 n_params, const guint32 *grads, guint32 n_grads, GError **error)
{
  if (rt->o.mode == STW_RUNTIME_PLAIN) {
    rt->moment++;
    return TRUE;
  }
  gint64 t0 = g_get_monotonic_time();
  if (rt->corrupt != NULL) {
    g_propagate_error(error, rt->corrupt);
    rt->corrupt = NULL;
    return FALSE;
  }
  if (rt->o.mode == STW_RUNTIME_REPLAY) {
    const StwTrace *pt = rt->o.plan_trace;
    const StwOp *want = rt->moment < pt->ops->len ? stw_trace_op(pt, rt->moment) : NULL;
    if (want == NULL || strcmp(want->name, name) != 0 || want->stage != stage ||
        !same_ids(want->params, want->n_params, params, n_params) ||
        !same_ids(want->grads, want->n_grads, grads, n_grads)) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                  "op %u is %s here but %s in the plan's trace: the plan was made for another "
                  "model or configuration", rt->moment, name, want ? want->name : "(none)");
      return FALSE;
    }
    if (!apply_actions(rt, rt->moment, error))
      return FALSE;
  }
  /* what this op needs, and what it must find on the host */
  rt->stamp++;
  GArray *need = g_array_new(FALSE, FALSE, sizeof(guint32));
  GArray *away = g_array_new(FALSE, FALSE, sizeof(guint32));
  for (guint32 i = 0; i < n_params + n_grads; i++) {
    guint32 t = i < n_params ? params[i] : grads[i - n_params];
    guint32 c = rt->chunking->chunk_of[t];
    if (stage != STW_STAGE_OPTIM) {
      guint32 item = item_of(rt, STW_LIST_PARAM, c);
      g_array_append_val(need, item);
      continue;
    }
    for (int l = 0; l < STW_N_LISTS; l++) {
      guint32 item = item_of(rt, (StwChunkList)l, c);
      g_array_append_val(rt->optim[c] == STW_OPTIM_CPU ? away : need, item);
    }
  }
  for (guint i = 0; i < need->len; i++)
    rt->needed[g_array_index(need, guint32, i)] = rt->stamp;
  gboolean ok = TRUE;
  for (guint i = 0; i < away->len && ok; i++) {
    guint32 item = g_array_index(away, guint32, i);
    if (rt->dev[item] != NULL) {
      if (rt->o.mode == STW_RUNTIME_REPLAY)
        rt->st.deviations++;
      if (rt->dirty[item])
        evict(rt, item);
      else
        drop(rt, item);
    }
    wait_leaving(rt, item);
  }
  for (guint i = 0; i < need->len && ok; i++) {
    guint32 item = g_array_index(need, guint32, i);
    if (rt->dev[item] == NULL) {
      if (rt->o.mode == STW_RUNTIME_REPLAY)
        rt->st.deviations++;
      ok = fetch(rt, item, error);
    }
  }
  for (guint i = 0; i < need->len && ok; i++) {
    guint32 item = g_array_index(need, guint32, i);
    wait_arrival(rt, item);
    rt->last_use[item] = ++rt->clock;
  }
  /* gradients and GPU Adam leave the device copies the only valid ones */
  for (guint32 i = 0; i < n_grads && ok; i++)
    rt->dirty[item_of(rt, STW_LIST_PARAM, rt->chunking->chunk_of[grads[i]])] = 1;
  if (stage == STW_STAGE_OPTIM)
    for (guint i = 0; i < need->len; i++)
      rt->dirty[g_array_index(need, guint32, i)] = 1;
  g_array_unref(need);
  g_array_unref(away);
  if (ok && rt->corrupt != NULL) {
    g_propagate_error(error, rt->corrupt);
    rt->corrupt = NULL;
    ok = FALSE;
  }
  if (!ok)
    return FALSE;
  rt->act_peak = rt->act_bytes;
  if (rt->rec != NULL) {
    rt->cur_op = stw_trace_add_op(rt->rec, name, stage, params, n_params, grads, n_grads);
    rt->cur_op->nonmodel_bytes = rt->act_bytes;
    /* the same op as events: a range, and one "kernel" touching what it declares */
    stw_event_push(rt->events, rt->ev_clock++, name);
    g_autofree guint64 *args = g_new(guint64, MAX(n_params + n_grads, 1));
    guint n_args = 0;
    for (guint32 i = 0; i < n_params + n_grads; i++) {
      guint64 v = TENSOR_VADDR(i < n_params ? params[i] : grads[i - n_params]);
      gboolean seen = FALSE;
      for (guint k = 0; k < n_args; k++)
        seen |= args[k] == v;
      if (!seen)
        args[n_args++] = v;
    }
    stw_event_launch(rt->events, rt->ev_clock++, ++rt->op_id, args, n_args);
  }
  rt->st.ops++;
  if (rt->be->range_push != NULL)
    rt->be->range_push(rt->be, name);
  gint64 t1 = g_get_monotonic_time();
  rt->st.bookkeeping_ns += (guint64)(t1 - t0) * 1000;
  rt->op_start_us = t1;
  return TRUE;
}

void
stw_runtime_op_end(StwRuntime *rt)
{
  if (rt->o.mode == STW_RUNTIME_PLAIN)
    return;
  gint64 t = g_get_monotonic_time();
  if (rt->be->range_pop != NULL)
    rt->be->range_pop(rt->be);
  if (rt->cur_op != NULL) {
    StwOp *op = &g_array_index(rt->rec->ops, StwOp, rt->rec->ops->len - 1);
    op->duration_ns = (guint64)(t - rt->op_start_us) * 1000;
    op->nonmodel_peak_bytes = rt->act_peak;
    stw_event_kernel(rt->events, rt->op_id, 0, op->duration_ns, op->name);
    stw_event_pop(rt->events, rt->ev_clock++);
    rt->cur_op = NULL;
  }
  rt->moment++;
  reap(rt, FALSE);
  rt->st.bookkeeping_ns += (guint64)(g_get_monotonic_time() - t) * 1000;
}

/* ---- access ------------------------------------------------------------------------------ */

gpointer
stw_runtime_param(StwRuntime *rt, guint32 tensor)
{
  guint32 item = item_of(rt, STW_LIST_PARAM, rt->chunking->chunk_of[tensor]);
  g_assert(rt->dev[item] != NULL);
  return at(rt, rt->dev[item], STW_LIST_PARAM, tensor);
}

gboolean
stw_runtime_optim(StwRuntime *rt, guint32 tensor, gpointer *param, float **master,
                  float **momentum, float **variance)
{
  guint32 c = rt->chunking->chunk_of[tensor];
  gboolean on_device = rt->optim[c] != STW_OPTIM_CPU && rt->o.mode != STW_RUNTIME_PLAIN;
  guint8 **where = rt->optim[c] == STW_OPTIM_CPU ? rt->host : rt->dev;
  gpointer *out[] = { param, (gpointer *)master, (gpointer *)momentum, (gpointer *)variance };
  for (int l = 0; l < STW_N_LISTS; l++) {
    guint8 *base = where[item_of(rt, (StwChunkList)l, c)];
    g_assert(base != NULL);
    *out[l] = at(rt, base, (StwChunkList)l, tensor);
  }
  return on_device;
}

gpointer
stw_runtime_alloc(StwRuntime *rt, gsize bytes, GError **error)
{
  if (rt->o.mode == STW_RUNTIME_PLAIN)
    return g_malloc0(MAX(bytes, 1));
  if (!reserve(rt, bytes, error))
    return NULL;
  gpointer p = rt->be->device_alloc(rt->be, MAX(bytes, 1));
  if (p == NULL) {
    rt->used -= bytes;
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET,
                "the backend could not allocate %" G_GSIZE_FORMAT " bytes: %s", bytes,
                rt->be->error);
    return NULL;
  }
  g_hash_table_insert(rt->acts, p, GSIZE_TO_POINTER(bytes));
  if (rt->events != NULL) {
    guint64 v = rt->next_act_ptr;
    rt->next_act_ptr += G_GUINT64_CONSTANT(1) << 32;
    g_hash_table_insert(rt->act_ptrs, p, GSIZE_TO_POINTER(v));
    stw_event_alloc(rt->events, rt->ev_clock++, v, MAX(bytes, 1));
  }
  rt->act_bytes += bytes;
  rt->act_peak = MAX(rt->act_peak, rt->act_bytes);
  return p;
}

void
stw_runtime_release(StwRuntime *rt, gpointer p)
{
  if (p == NULL)
    return;
  if (rt->o.mode == STW_RUNTIME_PLAIN) {
    g_free(p);
    return;
  }
  gsize bytes = GPOINTER_TO_SIZE(g_hash_table_lookup(rt->acts, p));
  g_hash_table_remove(rt->acts, p);
  if (rt->events != NULL) {
    guint64 v = GPOINTER_TO_SIZE(g_hash_table_lookup(rt->act_ptrs, p));
    g_hash_table_remove(rt->act_ptrs, p);
    stw_event_free(rt->events, rt->ev_clock++, v);
  }
  rt->be->device_free(rt->be, p);
  rt->act_bytes -= bytes;
  rt->used -= bytes;
}

const char *
stw_runtime_events(StwRuntime *rt, gsize *len)
{
  if (rt->events == NULL) {
    if (len != NULL)
      *len = 0;
    return "";
  }
  return stw_event_writer_text(rt->events, len);
}

StwTrace *
stw_runtime_trace(StwRuntime *rt)
{
  return rt->last_trace;
}

const StwRuntimeStats *
stw_runtime_stats(StwRuntime *rt)
{
  return &rt->st;
}

/* Copies BYTES between host memory and device memory DEV: directly where the backend's device
 * memory is host memory, else through a copy, waited for. */
static void
device_read(StwRuntime *rt, void *host, const void *dev, gsize bytes)
{
  if (rt->be->device_is_host) {
    memcpy(host, dev, bytes);
    return;
  }
  StwEvent *e = rt->be->copy(rt->be, STW_COPY_D2H, host, dev, bytes);
  wait_event(rt, e);
  rt->be->event_free(rt->be, e);
}

static void
device_write(StwRuntime *rt, void *dev, const void *host, gsize bytes)
{
  if (rt->be->device_is_host) {
    memcpy(dev, host, bytes);
    return;
  }
  StwEvent *e = rt->be->copy(rt->be, STW_COPY_H2D, dev, host, bytes);
  wait_event(rt, e);
  rt->be->event_free(rt->be, e);
}

/* Reads N bytes at byte OFF of ITEM's valid copy: the device's when it holds the only one. */
static void
read_valid(StwRuntime *rt, guint32 item, guint64 off, void *out, gsize n)
{
  if (rt->dev[item] != NULL) {
    wait_arrival(rt, item);
    if (rt->dirty[item]) {
      device_read(rt, out, rt->dev[item] + off, n);
      return;
    }
  }
  wait_leaving(rt, item);
  memcpy(out, rt->host[item] + off, n);
}

void
stw_runtime_read_state(StwRuntime *rt, guint32 tensor, float *master, float *m, float *v)
{
  guint32 c = rt->chunking->chunk_of[tensor];
  guint64 off = rt->offset[tensor] * sizeof(float);
  gsize n = stw_trace_tensor(rt->model, tensor)->numel * sizeof(float);
  read_valid(rt, item_of(rt, STW_LIST_MASTER, c), off, master, n);
  read_valid(rt, item_of(rt, STW_LIST_MOMENTUM, c), off, m, n);
  read_valid(rt, item_of(rt, STW_LIST_VARIANCE, c), off, v, n);
}

void
stw_runtime_write_state(StwRuntime *rt, guint32 tensor, const float *master, const float *m,
                        const float *v)
{
  guint32 c = rt->chunking->chunk_of[tensor];
  gsize numel = stw_trace_tensor(rt->model, tensor)->numel;
  /* the compute copy is the master weights, in the param list's precision */
  g_autofree guint8 *compute = g_malloc(MAX(numel * rt->elem[STW_LIST_PARAM], 1));
  store_values(compute, master, numel, rt->elem[STW_LIST_PARAM]);
  const void *src[] = { compute, master, m, v };
  for (int l = 0; l < STW_N_LISTS; l++) {
    guint32 item = item_of(rt, (StwChunkList)l, c);
    gsize n = numel * rt->elem[l];
    wait_leaving(rt, item);
    memcpy(at(rt, rt->host[item], (StwChunkList)l, tensor), src[l], n);
    if (rt->dev[item] != NULL && rt->dev[item] != rt->host[item]) {
      wait_arrival(rt, item);
      device_write(rt, at(rt, rt->dev[item], (StwChunkList)l, tensor), src[l], n);
    }
  }
}
