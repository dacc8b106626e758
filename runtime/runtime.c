/* runtime.c — the chunk runtime: the store, and in profile mode the recorder, in replay mode the
 * replayer, behind the op-by-op API of runtime.h. */
#include "config.h"

#include <stowage/runtime.h>

#include <string.h>

#include <stowage/chunks.h>
#include <stowage/planner.h>

#include "bf16.h"
#include "demand.h"
#include "record.h"
#include "replay.h"
#include "store.h"

G_DEFINE_QUARK(stw-runtime-error-quark, stw_runtime_error)

struct StwRuntime {
  StwBackend *be;
  StwRuntimeOptions o;
  const StwTrace *model;
  StwChunking *chunking;    /* profile mode's own layout; NULL in replay (the replayer's) */
  const StwChunking *c;     /* the layout in use */
  const guint8 *optim;      /* per chunk: StwOptimPlace */
  guint8 *own_optim;        /* profile mode: the optimizer's place, for every chunk alike */
  gboolean stays;           /* profile mode: the budget holds the model state, which stays */
  guint32 n;                /* chunks */
  guint64 *offset;          /* per tensor: elements from the start of its chunk */
  guint64 elem[STW_N_LISTS];/* bytes per element of each list: the param list's is the model's
                             * dtype (bf16 in mixed precision), the others fp32 */
  StwStore *store;
  StwReplayer *replayer;    /* replay mode */
  StwRecorder *recorder;    /* profile mode */
  StwOpItems items;         /* profile mode: the current op's, derived as the planner does */
  guint32 moment;           /* the op boundary the iteration is at */
  gboolean started;         /* replay: the plan's start state is loaded */
  guint64 deviations;       /* replay: actions that found their chunk elsewhere */
  gint64 op_start_us;
  StwRuntimeStats st;
};

static guint32
item_of(const StwRuntime *rt, StwChunkList list, guint32 chunk)
{
  return stw_plan_item(rt->c, list, chunk);
}

/* TENSOR's byte offset in a chunk of LIST */
static guint64
offset_of(const StwRuntime *rt, StwChunkList list, guint32 tensor)
{
  return rt->offset[tensor] * rt->elem[list];
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

/* ---- construction ----------------------------------------------------------------------- */

/* Profile mode's chunk size when none is asked for: of the sizes the planner's search tries, the
 * one that pads the model least (the smallest of equals). */
static guint64
least_padded_size(const StwTrace *model)
{
  g_autoptr(GArray) sizes = stw_planner_chunk_sizes(model);
  guint64 best = stw_trace_largest_tensor(model, NULL), least = G_MAXUINT64;
  for (guint i = 0; i < sizes->len; i++) {
    guint64 size = g_array_index(sizes, guint64, i);
    g_autoptr(StwChunking) c = stw_chunking_pack(model, size, TRUE, NULL);
    guint64 padding = c != NULL ? stw_chunking_wasted_bytes(c, STW_LIST_PARAM) : G_MAXUINT64;
    if (padding < least) {
      least = padding;
      best = size;
    }
  }
  return best;
}

/* The layout: the plan's in replay mode, else the model packed at the chunk size asked for. */
static gboolean
set_layout(StwRuntime *rt, GError **error)
{
  const StwRuntimeOptions *o = &rt->o;
  if (o->mode == STW_RUNTIME_REPLAY && o->device_bytes < o->plan->budgets.gpu_bytes) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                "the device has %" G_GUINT64_FORMAT " bytes, less than the plan's budget of %"
                G_GUINT64_FORMAT ": give it at least the budget, or plan for the smaller device",
                o->device_bytes, o->plan->budgets.gpu_bytes);
    return FALSE;
  }
  if (o->mode == STW_RUNTIME_REPLAY) {
    rt->replayer = stw_replayer_new(o->plan, o->plan_trace, rt->model, error);
    if (rt->replayer == NULL)
      return FALSE;
    rt->c = stw_replayer_chunking(rt->replayer);
    rt->optim = stw_replayer_optim(rt->replayer);
    return TRUE;
  }
  guint64 size = o->chunk_size_elems != 0 ? o->chunk_size_elems : least_padded_size(rt->model);
  rt->chunking = stw_chunking_pack(rt->model, size, TRUE, error);
  if (rt->chunking == NULL)
    return FALSE;
  rt->c = rt->chunking;
  /* What the budget lets stay stays: with room for the whole model state twice over (the other
   * half for activations), GPU Adam on every chunk, each fetched once and never moved again;
   * else CPU Adam, as a tight budget has it. */
  guint64 state = 0;
  for (int l = 0; l < STW_N_LISTS; l++)
    state += stw_chunking_list_bytes(rt->c, (StwChunkList)l);
  rt->stays = o->mode == STW_RUNTIME_PROFILE && o->device_bytes / 2 >= state;
  guint32 n = stw_chunking_count(rt->c);
  rt->own_optim = g_malloc(MAX(n, 1));
  memset(rt->own_optim, rt->stays ? STW_OPTIM_GPU_RESIDENT : STW_OPTIM_CPU, MAX(n, 1));
  rt->optim = rt->own_optim;
  return TRUE;
}

/* The initial values: compute copy and master weights from INIT, moments zero. */
static void
initialize(StwRuntime *rt, const float *const *init)
{
  for (guint32 c = 0; c < rt->n; c++) {
    const StwChunk *ch = stw_chunking_chunk(rt->c, c);
    guint8 *param = stw_store_host(rt->store, item_of(rt, STW_LIST_PARAM, c));
    guint8 *master = stw_store_host(rt->store, item_of(rt, STW_LIST_MASTER, c));
    for (guint32 k = 0; k < ch->count; k++) {
      const StwPlacement *p = &g_array_index(rt->c->placements, StwPlacement, ch->first + k);
      gsize n = stw_trace_tensor(rt->model, p->tensor)->numel;
      store_values(param + offset_of(rt, STW_LIST_PARAM, p->tensor), init[p->tensor], n,
                   rt->elem[STW_LIST_PARAM]);
      store_values(master + offset_of(rt, STW_LIST_MASTER, p->tensor), init[p->tensor], n,
                   sizeof(float));
    }
  }
}

/* The ranks of O: its communicator's, or one. */
static guint32
world_of(const StwRuntimeOptions *o)
{
  return o->comm != NULL ? o->comm->world : 1;
}

StwRuntime *
stw_runtime_new(const StwTrace *model, const float *const *init, const StwRuntimeOptions *o,
                StwBackend *backend, GError **error)
{
  if (o->verify && !backend->device_is_host) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_UNSUPPORTED,
                "verify checksums device memory from the host, which the %s backend's is not; "
                "verify with the host backend", backend->name);
    return NULL;
  }
  StwRuntime *rt = g_new0(StwRuntime, 1);
  rt->be = backend;
  rt->o = *o;
  rt->model = model;
  stw_op_items_init(&rt->items);
  if (!set_layout(rt, error)) {
    stw_runtime_free(rt);
    return NULL;
  }
  rt->n = stw_chunking_count(rt->c);
  rt->offset = g_new0(guint64, MAX(model->tensors->len, 1));
  for (guint i = 0; i < rt->c->placements->len; i++) {
    const StwPlacement *p = &g_array_index(rt->c->placements, StwPlacement, i);
    rt->offset[p->tensor] = p->offset;
  }
  for (int l = 0; l < STW_N_LISTS; l++)
    rt->elem[l] = stw_chunk_list_elem_bytes((StwChunkList)l, rt->c->dtype);
  guint32 n_items = STW_N_LISTS * rt->n;
  g_autofree guint64 *bytes = g_new(guint64, MAX(n_items, 1));
  for (int l = 0; l < STW_N_LISTS; l++)
    for (guint32 c = 0; c < rt->n; c++)
      bytes[item_of(rt, (StwChunkList)l, c)] = stw_chunk_bytes(rt->c, c, (StwChunkList)l);
  if (o->mode == STW_RUNTIME_PROFILE && world_of(o) > 1 && !rt->stays) {
    guint64 state = 0;
    for (int l = 0; l < STW_N_LISTS; l++)
      state += stw_chunking_list_bytes(rt->c, (StwChunkList)l);
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_UNSUPPORTED,
                "profiling on %u ranks keeps the model state on every rank's device: give it at "
                "least %" G_GUINT64_FORMAT " bytes (twice the state), or profile one rank",
                world_of(o), 2 * state);
    stw_runtime_free(rt);
    return NULL;
  }
  rt->store = stw_store_new(backend, n_items, bytes, o->device_bytes, o->verify,
                            o->copy_timeout_ms);
  if (init != NULL)
    initialize(rt, init);
  if (o->mode == STW_RUNTIME_PLAIN) /* every list used in place: nothing is ever "off" */
    stw_store_make_plain(rt->store);
  /* a model state that stays on a device whose memory is the host's stays in its host copies:
   * a second copy of it would only be a copy */
  if (rt->stays && backend->device_is_host)
    stw_store_keep_in_place(rt->store);
  if (o->mode == STW_RUNTIME_PROFILE)
    rt->recorder = stw_recorder_new(model, backend->name, o->device_bytes,
                                    rt->elem[STW_LIST_PARAM], world_of(o));
  return rt;
}

void
stw_runtime_free(StwRuntime *rt)
{
  if (rt == NULL)
    return;
  stw_store_free(rt->store);
  stw_replayer_free(rt->replayer);
  stw_recorder_free(rt->recorder);
  stw_op_items_clear(&rt->items);
  stw_chunking_free(rt->chunking);
  g_free(rt->own_optim);
  g_free(rt->offset);
  g_free(rt);
}

/* ---- iterations and ops ---------------------------------------------------------------------- */

/* The store's first failure not reported yet, into ERROR; TRUE when there is none. */
static gboolean
no_failure(StwRuntime *rt, GError **error)
{
  GError *failure = stw_store_take_failure(rt->store);
  if (failure == NULL)
    return TRUE;
  g_propagate_error(error, failure);
  return FALSE;
}

static guint64
deviations(const StwRuntime *rt)
{
  return rt->deviations + stw_store_room_evictions(rt->store);
}

void
stw_runtime_iteration_begin(StwRuntime *rt)
{
  stw_store_reset_moved(rt->store);
  stw_store_iteration_begin(rt->store);
  rt->moment = 0;
  if (rt->recorder != NULL)
    stw_recorder_iteration_begin(rt->recorder);
  if (rt->replayer != NULL) {
    stw_replayer_rewind(rt->replayer);
    if (!rt->started) {
      stw_replayer_start(rt->replayer, rt->store);
      rt->st.warmup_h2d_bytes = stw_store_stats(rt->store)->h2d_bytes;
      stw_store_reset_moved(rt->store);
      rt->started = TRUE;
    }
  }
}

gboolean
stw_runtime_iteration_end(StwRuntime *rt, GError **error)
{
  if (rt->replayer != NULL) {
    guint32 n_ops = stw_replayer_n_ops(rt->replayer);
    if (rt->moment != n_ops) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                  "the iteration ran %u ops, the plan's trace has %u", rt->moment, n_ops);
      return FALSE;
    }
    if (!stw_replayer_apply(rt->replayer, rt->store, rt->moment, &rt->deviations, error))
      return FALSE;
  }
  if (rt->recorder != NULL)
    stw_recorder_iteration_end(rt->recorder);
  stw_store_iteration_end(rt->store);
  const StwStoreStats *ss = stw_store_stats(rt->store);
  rt->st.h2d_bytes = ss->h2d_bytes;
  rt->st.d2h_bytes = ss->d2h_bytes;
  return no_failure(rt, error);
}

/* Makes the op's items as its step asks: the forbidden ones written back to the host (a CPU Adam
 * step reads the host copies), the needed ones fetched and waited for, the written ones dirty. An
 * item the plan should have placed otherwise is moved anyway, and counted, in replay. */
static gboolean
make_ready(StwRuntime *rt, const guint32 *need, guint n_need, const guint32 *forbid,
           guint n_forbid, const guint32 *write, guint n_write, GError **error)
{
  StwStore *s = rt->store;
  gboolean replay = rt->replayer != NULL;
  stw_store_next_op(s);
  for (guint i = 0; i < n_need; i++)
    stw_store_need(s, need[i]);
  for (guint i = 0; i < n_forbid; i++) {
    guint32 item = forbid[i];
    if (stw_store_resident(s, item)) {
      if (replay)
        rt->deviations++;
      if (stw_store_dirty(s, item))
        stw_store_evict(s, item);
      else
        stw_store_drop(s, item);
    }
    stw_store_settle(s, item);
  }
  for (guint i = 0; i < n_need; i++) {
    if (stw_store_resident(s, need[i]))
      continue;
    if (replay)
      rt->deviations++;
    if (!stw_store_fetch(s, need[i], error))
      return FALSE;
  }
  for (guint i = 0; i < n_need; i++)
    stw_store_settle(s, need[i]);
  /* gradients and GPU Adam leave the device copies the only valid ones */
  for (guint i = 0; i < n_write; i++)
    stw_store_set_dirty(s, write[i]);
  return no_failure(rt, error);
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
  if (!no_failure(rt, error))
    return FALSE;
  gboolean ok;
  if (rt->replayer != NULL) {
    /* what the op needs is the plan's demand at this moment, looked up, not derived again */
    const StwDemand *d = stw_replayer_demand(rt->replayer);
    guint32 k = rt->moment;
    ok = stw_replayer_match(rt->replayer, k, name, stage, params, n_params, grads, n_grads,
                            error) &&
         stw_replayer_apply(rt->replayer, rt->store, k, &rt->deviations, error) &&
         make_ready(rt, d->need + d->need_start[k], stw_demand_n_need(d, k),
                    d->forbid + d->forbid_start[k], d->forbid_start[k + 1] - d->forbid_start[k],
                    d->write + d->write_start[k], d->write_start[k + 1] - d->write_start[k],
                    error);
  } else {
    StwOpItems *x = &rt->items;
    stw_demand_op_items(rt->c, rt->optim, stage, params, n_params, grads, n_grads, x);
    ok = make_ready(rt, (const guint32 *)x->need->data, x->need->len,
                    (const guint32 *)x->forbid->data, x->forbid->len,
                    (const guint32 *)x->write->data, x->write->len, error);
  }
  if (!ok)
    return FALSE;
  if (rt->recorder != NULL)
    stw_recorder_op_begin(rt->recorder, name, stage, params, n_params, grads, n_grads,
                          stw_store_activation_bytes(rt->store));
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
  if (rt->recorder != NULL)
    stw_recorder_op_end(rt->recorder, (guint64)(t - rt->op_start_us) * 1000);
  rt->moment++;
  stw_store_reap(rt->store);
  rt->st.bookkeeping_ns += (guint64)(g_get_monotonic_time() - t) * 1000;
}

/* ---- ranks ------------------------------------------------------------------------------- */

StwRuntimeMode
stw_runtime_mode(const StwRuntime *rt)
{
  return rt->o.mode;
}

guint32
stw_runtime_world(const StwRuntime *rt)
{
  return world_of(&rt->o);
}

guint32
stw_runtime_rank(const StwRuntime *rt)
{
  return rt->o.comm != NULL ? rt->o.comm->rank : 0;
}

gboolean
stw_runtime_reduce_gradients(StwRuntime *rt, GError **error)
{
  StwComm *comm = rt->o.comm;
  if (comm == NULL || comm->world <= 1)
    return TRUE;
  g_assert(rt->stays); /* every chunk's gradients on the device, in host memory */
  for (guint32 c = 0; c < rt->n; c++) {
    guint32 item = item_of(rt, STW_LIST_PARAM, c);
    guint8 *slot = stw_store_device(rt->store, item);
    gsize n = stw_chunk_bytes(rt->c, c, STW_LIST_PARAM) / rt->elem[STW_LIST_PARAM];
    g_autofree float *wide = NULL;
    float *buf = (float *)slot;
    if (rt->elem[STW_LIST_PARAM] != sizeof(float)) { /* bf16 gradients: averaged in fp32 */
      wide = g_new(float, MAX(n, 1));
      for (gsize i = 0; i < n; i++)
        wide[i] = stw_bf16_to_float(((guint16 *)slot)[i]);
      buf = wide;
    }
    if (!stw_comm_finish(comm, comm->all_reduce(comm, buf, n), "averaging the gradients",
                         error))
      return FALSE;
    if (wide != NULL)
      store_values(slot, wide, n, rt->elem[STW_LIST_PARAM]);
  }
  return TRUE;
}

/* ---- access ------------------------------------------------------------------------------ */

gpointer
stw_runtime_param(StwRuntime *rt, guint32 tensor)
{
  guint32 item = item_of(rt, STW_LIST_PARAM, rt->c->chunk_of[tensor]);
  return stw_store_device(rt->store, item) + offset_of(rt, STW_LIST_PARAM, tensor);
}

gboolean
stw_runtime_optim(StwRuntime *rt, guint32 tensor, gpointer *param, float **master,
                  float **momentum, float **variance)
{
  guint32 c = rt->c->chunk_of[tensor];
  gboolean cpu = rt->optim[c] == STW_OPTIM_CPU;
  gpointer *out[] = { param, (gpointer *)master, (gpointer *)momentum, (gpointer *)variance };
  for (int l = 0; l < STW_N_LISTS; l++) {
    guint32 item = item_of(rt, (StwChunkList)l, c);
    guint8 *base = cpu ? stw_store_host(rt->store, item) : stw_store_device(rt->store, item);
    *out[l] = base + offset_of(rt, (StwChunkList)l, tensor);
  }
  return !cpu && rt->o.mode != STW_RUNTIME_PLAIN;
}

gpointer
stw_runtime_alloc(StwRuntime *rt, gsize bytes, GError **error)
{
  gpointer p = stw_store_alloc(rt->store, bytes, error);
  if (p != NULL && rt->recorder != NULL)
    stw_recorder_alloc(rt->recorder, p, bytes, stw_store_activation_bytes(rt->store));
  return p;
}

void
stw_runtime_release(StwRuntime *rt, gpointer p)
{
  if (p == NULL)
    return;
  if (rt->recorder != NULL)
    stw_recorder_release(rt->recorder, p);
  stw_store_release(rt->store, p);
}

const char *
stw_runtime_events(StwRuntime *rt, gsize *len)
{
  if (rt->recorder == NULL) {
    if (len != NULL)
      *len = 0;
    return "";
  }
  return stw_recorder_events(rt->recorder, len);
}

StwTrace *
stw_runtime_trace(StwRuntime *rt)
{
  return rt->recorder != NULL ? stw_recorder_trace(rt->recorder) : NULL;
}

const StwRuntimeStats *
stw_runtime_stats(StwRuntime *rt)
{
  const StwStoreStats *ss = stw_store_stats(rt->store);
  rt->st.peak_device_bytes = ss->peak_bytes;
  rt->st.verified_moves = ss->verified_moves;
  rt->st.arena_bytes = ss->arena_bytes;
  rt->st.arena_iterations = ss->arena_iterations;
  rt->st.deviations = rt->replayer != NULL ? deviations(rt) : 0;
  return &rt->st;
}

void
stw_runtime_read_state(StwRuntime *rt, guint32 tensor, float *master, float *m, float *v)
{
  guint32 c = rt->c->chunk_of[tensor];
  guint64 off = offset_of(rt, STW_LIST_MASTER, tensor);
  gsize n = stw_trace_tensor(rt->model, tensor)->numel * sizeof(float);
  stw_store_read(rt->store, item_of(rt, STW_LIST_MASTER, c), off, master, n);
  stw_store_read(rt->store, item_of(rt, STW_LIST_MOMENTUM, c), off, m, n);
  stw_store_read(rt->store, item_of(rt, STW_LIST_VARIANCE, c), off, v, n);
}

void
stw_runtime_write_state(StwRuntime *rt, guint32 tensor, const float *master, const float *m,
                        const float *v)
{
  guint32 c = rt->c->chunk_of[tensor];
  gsize numel = stw_trace_tensor(rt->model, tensor)->numel;
  /* the compute copy is the master weights, in the param list's precision */
  g_autofree guint8 *compute = g_malloc(MAX(numel * rt->elem[STW_LIST_PARAM], 1));
  store_values(compute, master, numel, rt->elem[STW_LIST_PARAM]);
  const void *src[] = { compute, master, m, v };
  for (int l = 0; l < STW_N_LISTS; l++)
    stw_store_write(rt->store, item_of(rt, (StwChunkList)l, c),
                    offset_of(rt, (StwChunkList)l, tensor), src[l], numel * rt->elem[l]);
}
