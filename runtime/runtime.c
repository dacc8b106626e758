/* runtime.c — the chunk runtime: the store, and in profile mode the recorder, in replay mode the
 * replayer, behind the op-by-op API of runtime.h. */
#include "config.h"

#include <stowage/runtime.h>

#include <string.h>

#include <stowage/chunks.h>
#include <stowage/events.h>
#include <stowage/planner.h>

#include "bf16.h"
#include "fp16.h"
#include "demand.h"
#include "offload.h"
#include "record.h"
#include "replay.h"
#include "store.h"
#include "tier.h"

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
                             * dtype (bf16 in mixed precision), the others fp32 (the variance
                             * list's two of them with AMSGrad: a tensor's variances, then their
                             * largest so far) */
  StwStore *store;
  StwReplayer *replayer;    /* replay mode */
  StwOffloader *offloader;  /* replay of a plan that offloads blocks' activations; else NULL */
  StwTier *tier;            /* replay of a plan with optimizer state on storage; else NULL */
  GArray *tier_stepped;     /* the current optimizer op's chunks on the tier, a tensor each */
  StwRecorder *recorder;    /* profile mode */
  gboolean timed;           /* profile mode: the iterations begun from now on are timed */
  gboolean iteration_timed; /* ... and the current one is */
  StwOpItems items;         /* profile mode: the current op's, derived as the planner does */
  guint32 moment;           /* the op boundary the iteration is at */
  gboolean started;         /* replay: the plan's start state is loaded */
  guint64 deviations;       /* replay: actions that found their chunk elsewhere */
  gboolean unplanned;       /* an unplanned op is open */
  gboolean perturbed;       /* unplanned ops moved chunks since the last iteration */
  guint64 unplanned_room;   /* evictions to make room that unplanned ops and restoring the
                             * plan's start state caused (no deviations from the plan) */
  gint64 op_start_us;         /* where the recorded op's time starts */
  gint64 op_end_us;           /* when the iteration's last op_end returned; 0 before its first */
  StwRuntimeStats st;
  /* several ranks replaying a plan of chunk groups (rank r owns chunk r of every group) */
  gboolean multi;
  guint32 world, rank;
  GHashTable *pending;      /* item -> Pending: a collective in flight that touches it */
  guint32 *first_of_chunk;  /* per chunk: its lowest tensor id, where its optimizer step runs */
  guint64 comm_received;    /* received in this runtime's own collectives this iteration (the
                             * trainer's, such as the loss's mean, are not the plan's) */
  guint64 gradient_copies;  /* the framework's gradients its caller copied from the device into
                             * host memory for CPU Adam this iteration (count_gradient_copy) */
  GError *failure;          /* what went wrong between ops, reported at the next op */
  /* fp32 compute copies stepped by CPU Adam, their gradients written into them on the device
   * (copy_keeps, per chunk as the items are indexed): the weights live in the compute copy's
   * host buffer between steps, and the master list's buffer holds them only while the gradient
   * is in the copy's place (grads_apart, per chunk: from the first gradient to the iteration's
   * end; the two buffers change roles when it arrives); a tensor stepped since then (stepped,
   * per tensor) has its new weights in the copy again. The step writes the new weights once:
   * 28 bytes an element, not 32. */
  gboolean *copy_keeps;
  gboolean *grads_apart;
  gboolean *stepped;
  /* the model handed back (stw_runtime_hand_back): per chunk, its tensors not handed back yet;
   * NULL before the first */
  guint32 *unreturned;
};

/* A collective in flight and the items it touches (a reduce-scatter: the own chunk and the
 * group). */
typedef struct {
  StwCommOp *op;
  guint32 items[2];
  guint n_items;
  gboolean reduces;         /* a reduce-scatter: the group's gradients are consumed after it */
} Pending;

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

/* block index of rank Q in this rank's gathered group, which leaves itself out (comm.h) */
static guint32
slot_of(const StwRuntime *rt, guint32 q)
{
  return q < rt->rank ? q : q - 1;
}

/* Where TENSOR's LIST values are for this rank: its item and the byte offset in it. One rank:
 * the tensor's chunk. Several: a tensor of this rank's own chunk of its group (chunk g N + rank)
 * in the item the plan names for rank 0's (chunk g N), since every rank runs the same schedule
 * on its own chunks; another rank's tensor, in the param list only, in the group's gathered
 * item at that rank's block. FALSE for another rank's tensor in the other lists (its state is
 * that rank's). */
static gboolean
locate(const StwRuntime *rt, StwChunkList list, guint32 tensor, guint32 *item, guint64 *off)
{
  guint32 c = rt->c->chunk_of[tensor];
  *off = offset_of(rt, list, tensor);
  if (!rt->multi) {
    *item = item_of(rt, list, c);
    return TRUE;
  }
  guint32 g = c / rt->world, q = c % rt->world;
  if (q == rt->rank) {
    *item = item_of(rt, list, g * rt->world);
    return TRUE;
  }
  if (list != STW_LIST_PARAM)
    return FALSE;
  *item = stw_plan_group_item(rt->c, g);
  *off += (guint64)slot_of(rt, q) * stw_chunk_bytes(rt->c, g * rt->world, STW_LIST_PARAM);
  return TRUE;
}

/* The ranks of O: its communicator's, or one. */
static guint32
world_of(const StwRuntimeOptions *o)
{
  return o->comm != NULL ? o->comm->world : 1;
}

/* N values of FROM (fp32) as DTYPE's elements in TO, rounded to nearest even */
static void
store_values(void *to, const float *from, gsize n, StwDtype dtype)
{
  guint16 *h = to;
  if (dtype == STW_DTYPE_FP32)
    memcpy(to, from, n * sizeof(float));
  else if (dtype == STW_DTYPE_BF16)
    for (gsize i = 0; i < n; i++)
      h[i] = stw_bf16_from_float(from[i]);
  else
    for (gsize i = 0; i < n; i++)
      h[i] = stw_fp16_from_float(from[i]);
}

/* N 16-bit values of DTYPE at the front of OUT's bytes widened to fp32 in place, from the last
 * down */
static void
widen_in_place(float *out, gsize n, StwDtype dtype)
{
  const guint16 *h = (const guint16 *)out;
  if (dtype == STW_DTYPE_BF16)
    for (gsize i = n; i-- > 0;)
      out[i] = stw_bf16_to_float(h[i]);
  else
    for (gsize i = n; i-- > 0;)
      out[i] = stw_fp16_to_float(h[i]);
}

/* The dtype of LIST's values: the compute copy's, fp32 master weights, the moments in the
 * layout's state dtype. */
static StwDtype
list_dtype(const StwRuntime *rt, StwChunkList list)
{
  if (list == STW_LIST_PARAM)
    return rt->c->dtype;
  return list == STW_LIST_MASTER ? STW_DTYPE_FP32 : rt->c->state_dtype;
}

/* N values of DTYPE at FROM into OUT as fp32 */
static void
widen_values(float *out, const void *from, gsize n, StwDtype dtype)
{
  memmove(out, from, n * stw_dtype_bytes(dtype));
  if (dtype != STW_DTYPE_FP32)
    widen_in_place(out, n, dtype);
}

/* ---- construction ----------------------------------------------------------------------- */

/* Several ranks replay rank 0's schedule on their own chunks: every chunk of a group must be the
 * size of the group's first (no oversized tensor). */
static gboolean
groups_replayable(const StwChunking *c, GError **error)
{
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    guint32 lead = i - i % c->world;
    if (stw_chunking_chunk(c, i)->capacity_elems != stw_chunking_chunk(c, lead)->capacity_elems) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_UNSUPPORTED,
                  "chunk %u holds %" G_GUINT64_FORMAT " elements and chunk %u of its group %"
                  G_GUINT64_FORMAT ": the ranks replay one schedule on chunks of one size; plan "
                  "without --oversized", i, stw_chunking_chunk(c, i)->capacity_elems, lead,
                  stw_chunking_chunk(c, lead)->capacity_elems);
      return FALSE;
    }
  }
  return TRUE;
}

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
    guint32 pw = o->plan->chunking->world, cw = world_of(o);
    if (o->plan->chunking->shards) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                  "the plan splits each chunk across its %u ranks (its layout's shards, as "
                  "ZeRO-3 and Gemini share a model), which the runtime does not replay: it "
                  "gathers groups of whole chunks; plan with --layout groups (the default) to "
                  "train with it", pw);
      return FALSE;
    }
    if (pw != cw) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                  "the plan is for %u rank%s, and this run has %u: start %u (mpirun -np %u), or "
                  "plan for %u (--gpus %u)", pw, pw > 1 ? "s" : "", cw, pw, pw, cw, cw);
      return FALSE;
    }
    guint32 stored = 0, params = 0;
    for (guint32 i = 0; i < stw_chunking_count(o->plan->chunking); i++) {
      stored += stw_optim_state_stored(o->plan->optim[i]);
      params += o->plan->optim[i] == STW_OPTIM_STORAGE;
    }
    if (stored > 0 && o->storage_dir == NULL) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                  "the plan keeps the %s of %u chunk%s on the storage tier (\"%s\"): name a "
                  "directory on it for their file (train --nvme-dir DIR; storage_dir= in Python)",
                  params > 0 ? "parameters and optimizer state" : "optimizer state", stored,
                  stored > 1 ? "s" : "", params > 0 ? "storage" : "cpu-storage");
      return FALSE;
    }
    rt->replayer = stw_replayer_new(o->plan, o->plan_trace, rt->model, error);
    if (rt->replayer == NULL)
      return FALSE;
    rt->c = stw_replayer_chunking(rt->replayer);
    rt->optim = stw_replayer_optim(rt->replayer);
    return cw <= 1 || groups_replayable(rt->c, error);
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

/* ---- the storage tier: optimizer state in a file, stepped through two host buffers --------- */

#define TIER_NONE G_MAXUINT32

/* The chunk whose items hold TENSOR's optimizer state (rank 0's of its group on several ranks)
 * when that state is on the storage tier; TIER_NONE when it is not, or is another rank's. */
static guint32
tier_chunk(const StwRuntime *rt, guint32 tensor)
{
  if (rt->tier == NULL)
    return TIER_NONE;
  guint32 c = rt->c->chunk_of[tensor];
  if (rt->multi) {
    if (c % rt->world != rt->rank)
      return TIER_NONE;
    c -= c % rt->world;
  }
  return stw_tier_holds(rt->tier, c) ? c : TIER_NONE;
}

/* TENSOR's LIST values in its chunk's region on the tier (the param list's where the tier holds
 * the chunk's parameters), read in (with MODIFY, its newest copy from now); NULL with ERROR when
 * the tier failed. */
static guint8 *
tier_values(StwRuntime *rt, guint32 c, StwChunkList list, guint32 tensor, gboolean modify,
            GError **error)
{
  guint8 *region = stw_tier_state(rt->tier, c, modify, FALSE, error);
  if (region == NULL)
    return NULL;
  if (list == STW_LIST_PARAM)
    return region + offset_of(rt, list, tensor);
  guint64 at = stw_tier_state_offset(rt->tier, c);
  for (int l = STW_LIST_MASTER; l < (int)list; l++)
    at += stw_chunk_bytes(rt->c, c, (StwChunkList)l);
  return region + at + offset_of(rt, list, tensor);
}

/* The store's backing of a "storage" chunk's param item (item = chunk: on several ranks the
 * rank's own chunk of a group, kept at the group's first, as the tier keys it): the tier's
 * staging buffers of parameters. */
static guint8 *
tier_borrow(gpointer data, guint32 item, gboolean load, GError **error)
{
  return stw_tier_params_borrow(((StwRuntime *)data)->tier, item, load, error);
}

static gint
tier_loaded(gpointer data, guint32 item, gboolean wait, GError **error)
{
  return stw_tier_params_loaded(((StwRuntime *)data)->tier, item, wait, error);
}

static gboolean
tier_give_back(gpointer data, guint32 item, gboolean write, GError **error)
{
  return stw_tier_params_return(((StwRuntime *)data)->tier, item, write, error);
}

/* Whether chunk CH's parameters (its gradients, for its step) are in the tier's file: not on the
 * device, their write-back landed and given back (and so its write issued, which a read waits
 * for). */
static gboolean
tier_params_ready(gpointer data, guint32 ch)
{
  StwRuntime *rt = data;
  stw_store_reap(rt->store);
  return stw_store_place(rt->store, item_of(rt, STW_LIST_PARAM, ch)) == STW_AT_HOST;
}

/* Replay of a plan with chunks' optimizer state on the storage tier: those chunks' state items
 * get no host copy (BYTES zeroed), and the tier holds it in a file under the options' directory,
 * in the order the plan's optimizer ops step it; "storage" chunks' parameters there too, before
 * their state (their param items backed by the tier: tier_back). */
static gboolean
tier_open(StwRuntime *rt, guint64 *bytes, GError **error)
{
  if (rt->o.mode != STW_RUNTIME_REPLAY || rt->o.storage_dir == NULL)
    return TRUE;
  g_autofree guint64 *state = g_new0(guint64, MAX(rt->n, 1));
  g_autofree guint64 *params = g_new0(guint64, MAX(rt->n, 1));
  g_autofree guint32 *tensors = g_new0(guint32, MAX(rt->n, 1));
  gboolean any = FALSE;
  for (guint32 c = 0; c < rt->n; c++) {
    guint32 mine = rt->multi ? c + rt->rank : c;
    if (!stw_optim_state_stored(rt->optim[c]) || (rt->multi && c % rt->world != 0) ||
        mine >= rt->n)
      continue;
    for (int l = STW_LIST_MASTER; l < STW_N_LISTS; l++) {
      state[c] += bytes[item_of(rt, (StwChunkList)l, c)];
      bytes[item_of(rt, (StwChunkList)l, c)] = 0;
    }
    if (rt->optim[c] == STW_OPTIM_STORAGE && state[c] > 0)
      params[c] = bytes[item_of(rt, STW_LIST_PARAM, c)];
    tensors[c] = state[c] > 0 ? stw_chunking_chunk(rt->c, mine)->count : 0;
    any |= state[c] > 0;
  }
  if (!any)
    return TRUE;
  /* the step order: the chunks by their first tensor's optimizer op in the plan's trace */
  g_autofree guint32 *order = g_new(guint32, MAX(rt->n, 1));
  g_autofree gboolean *seen = g_new0(gboolean, MAX(rt->n, 1));
  guint32 n_order = 0;
  g_autoptr(GArray) stepped = g_array_new(FALSE, FALSE, sizeof(guint32));
  const GArray *ops = rt->o.plan_trace->ops;
  for (guint i = 0; i < ops->len; i++) {
    const StwOp *op = &g_array_index(ops, StwOp, i);
    for (guint32 k = 0; op->stage == STW_STAGE_OPTIM && k < op->n_params; k++) {
      stw_runtime_optim_tensors(rt, op->params[k], stepped);
      for (guint j = 0; j < stepped->len; j++) {
        guint32 t = g_array_index(stepped, guint32, j), c = rt->c->chunk_of[t];
        c -= rt->multi ? c % rt->world : 0;
        if (state[c] > 0 && !seen[c]) {
          seen[c] = TRUE;
          order[n_order++] = c;
        }
      }
    }
  }
  g_autofree char *name = g_strdup_printf("optimizer-state.rank%u", rt->rank);
  rt->tier = stw_tier_new(rt->o.storage_dir, name,
                          rt->o.storage_queue_depth != 0 ? rt->o.storage_queue_depth : 32, rt->n,
                          state, params, tensors, order, n_order, error);
  if (rt->tier == NULL)
    return FALSE;
  stw_tier_set_ready(rt->tier, tier_params_ready, rt);
  rt->tier_stepped = g_array_new(FALSE, FALSE, sizeof(guint32));
  const StwStorageInfo *in = stw_tier_info(rt->tier);
  g_strlcpy(rt->st.storage_engine, in->engine, sizeof rt->st.storage_engine);
  g_strlcpy(rt->st.storage_fallback, in->fallback, sizeof rt->st.storage_fallback);
  return TRUE;
}

/* The chunk store of N_ITEMS items of BYTES: the param items of chunks whose parameters the
 * tier holds get their host copies from it (none of their own, not even for a moment). */
static StwStore *
store_open(StwRuntime *rt, StwBackend *backend, guint32 n_items, const guint64 *bytes)
{
  g_autofree guint8 *backed = g_malloc0(MAX(n_items, 1));
  gboolean any = FALSE;
  for (guint32 c = 0; rt->tier != NULL && c < rt->n; c++) {
    backed[item_of(rt, STW_LIST_PARAM, c)] = stw_tier_holds_params(rt->tier, c);
    any |= stw_tier_holds_params(rt->tier, c);
  }
  StwStoreBacking backing = { .borrow = tier_borrow, .loaded = tier_loaded,
                              .give_back = tier_give_back, .data = rt };
  return stw_store_new_backed(backend, n_items, bytes, rt->o.device_bytes, rt->o.verify,
                              rt->o.copy_timeout_ms, any ? &backing : NULL, backed);
}

/* The tier's first state: each chunk's master weights from INIT (zeros without it: the caller
 * writes the state tensor by tensor), moments zero, all of it written to the file. */
static gboolean
tier_start(StwRuntime *rt, const float *const *init, GError **error)
{
  for (guint32 c = 0; rt->tier != NULL && c < rt->n; c++) {
    if (!stw_tier_holds(rt->tier, c))
      continue;
    guint8 *state = stw_tier_state(rt->tier, c, TRUE, TRUE, error);
    if (state == NULL)
      return FALSE;
    const StwChunk *ch = stw_chunking_chunk(rt->c, c);
    for (guint32 k = 0; init != NULL && k < ch->count; k++) {
      const StwPlacement *p = &g_array_index(rt->c->placements, StwPlacement, ch->first + k);
      store_values(state + stw_tier_state_offset(rt->tier, c) +
                       offset_of(rt, STW_LIST_MASTER, p->tensor),
                   init[p->tensor], stw_trace_tensor(rt->model, p->tensor)->numel,
                   STW_DTYPE_FP32);
    }
  }
  return stw_runtime_storage_sync(rt, error);
}

gboolean
stw_runtime_storage_sync(StwRuntime *rt, GError **error)
{
  return rt->tier == NULL || stw_tier_sync(rt->tier, error);
}

/* An optimizer op's tensors whose state is on the tier: their chunks' state read in (the next
 * chunk's read issued behind it), to be stepped in the staging buffers. */
static gboolean
tier_begin(StwRuntime *rt, const guint32 *params, guint32 n_params, GError **error)
{
  g_array_set_size(rt->tier_stepped, 0);
  g_autoptr(GArray) stepped = g_array_new(FALSE, FALSE, sizeof(guint32));
  for (guint32 k = 0; k < n_params; k++) {
    stw_runtime_optim_tensors(rt, params[k], stepped);
    for (guint j = 0; j < stepped->len; j++) {
      guint32 c = tier_chunk(rt, g_array_index(stepped, guint32, j));
      if (c == TIER_NONE)
        continue;
      /* its gradients' write-back landed and on its way to the file first (the read waits) */
      if (stw_tier_holds_params(rt->tier, c))
        stw_store_settle(rt->store, item_of(rt, STW_LIST_PARAM, c));
      if (stw_tier_state(rt->tier, c, TRUE, FALSE, error) == NULL)
        return FALSE;
      g_array_append_val(rt->tier_stepped, c);
    }
  }
  return TRUE;
}

/* ... and stepped: a chunk whose last tensor it was is written back. */
static void
tier_end(StwRuntime *rt)
{
  for (guint j = 0; j < rt->tier_stepped->len; j++) {
    GError *error = NULL;
    if (!stw_tier_stepped(rt->tier, g_array_index(rt->tier_stepped, guint32, j), &error)) {
      if (rt->failure == NULL)
        rt->failure = error; /* reported by the next call that can fail */
      else
        g_clear_error(&error);
    }
  }
  g_array_set_size(rt->tier_stepped, 0);
}

/* The initial values: compute copy and master weights from INIT (a frozen chunk has no master;
 * the storage tier's are tier_start's), moments zero. */
static void
initialize(StwRuntime *rt, const float *const *init)
{
  for (guint32 c = 0; c < rt->n; c++) {
    const StwChunk *ch = stw_chunking_chunk(rt->c, c);
    guint32 item = item_of(rt, STW_LIST_PARAM, c);
    gboolean backed = stw_store_backed(rt->store, item); /* written to the tier whole */
    guint8 *param = backed ? g_malloc0(stw_store_bytes(rt->store, item))
                           : stw_store_host(rt->store, item);
    guint8 *master = stw_tier_holds(rt->tier, c)
                         ? NULL
                         : stw_store_host(rt->store, item_of(rt, STW_LIST_MASTER, c));
    for (guint32 k = 0; k < ch->count; k++) {
      const StwPlacement *p = &g_array_index(rt->c->placements, StwPlacement, ch->first + k);
      gsize n = stw_trace_tensor(rt->model, p->tensor)->numel;
      store_values(param + offset_of(rt, STW_LIST_PARAM, p->tensor), init[p->tensor], n,
                   rt->c->dtype);
      if (!ch->frozen && master != NULL)
        store_values(master + offset_of(rt, STW_LIST_MASTER, p->tensor), init[p->tensor], n,
                     STW_DTYPE_FP32);
    }
    if (backed) {
      stw_store_write(rt->store, item, 0, param, stw_store_bytes(rt->store, item));
      g_free(param);
    }
  }
}

/* ---- weights kept in fp32 compute copies ------------------------------------------------- */

/* The chunk whose tensors this rank keeps in the items of chunk C (the store's, indexed as the
 * param list's chunks): C itself on one rank; on several, this rank's own chunk of the group C
 * begins (rt->n and beyond where the group has none of this rank's, or C begins none). */
static guint32
own_chunk(const StwRuntime *rt, guint32 c)
{
  if (!rt->multi)
    return c;
  return c % rt->world == 0 ? c + rt->rank : G_MAXUINT32;
}

/* The chunk whose items hold TENSOR's values on this rank (own_chunk's inverse): G_MAXUINT32 for
 * another rank's tensor. */
static guint32
items_chunk(const StwRuntime *rt, guint32 tensor)
{
  guint32 c = rt->c->chunk_of[tensor];
  if (!rt->multi)
    return c;
  return c % rt->world == rt->rank ? c - c % rt->world : G_MAXUINT32;
}

/* Which chunks keep their weights in their compute copy (see copy_keeps, indexed as the items:
 * on several ranks by the group's first chunk, for this rank's own): those the plan steps there
 * (stw_adam_steps_in_copy: fp32, trained, CPU Adam in host memory; gradients written into the
 * chunks, or a framework's, PyTorch's, copied into the compute copy's place at the step:
 * stw_runtime_gradient_arrives), in a mode whose host copies can change roles. */
static void
keep_weights_in_copies(StwRuntime *rt)
{
  if (rt->o.mode == STW_RUNTIME_PLAIN)
    return;
  rt->copy_keeps = g_new0(gboolean, MAX(rt->n, 1));
  rt->grads_apart = g_new0(gboolean, MAX(rt->n, 1));
  rt->stepped = g_new0(gboolean, MAX(rt->model->tensors->len, 1));
  for (guint32 c = 0; c < rt->n; c++)
    rt->copy_keeps[c] = own_chunk(rt, c) < rt->n &&
                        stw_adam_steps_in_copy(rt->c, own_chunk(rt, c), rt->optim[c]) &&
                        !stw_store_backed(rt->store, item_of(rt, STW_LIST_PARAM, c)) &&
                        stw_store_bytes(rt->store, item_of(rt, STW_LIST_PARAM, c)) ==
                            stw_store_bytes(rt->store, item_of(rt, STW_LIST_MASTER, c));
}

/* Chunk C's gradient is about to take its compute copy's place (the first gradient written on
 * the device): its weights, there at rest, go to the master's buffer and the copy takes the
 * master's old one. Nothing where C keeps no weights in its copy, its gradient is already apart,
 * or the store cannot swap the buffers (the step then finds the weights in the copy). */
static void
weights_to_master(StwRuntime *rt, guint32 c)
{
  if (rt->copy_keeps == NULL || !rt->copy_keeps[c] || rt->grads_apart[c])
    return;
  if (!stw_store_swap_host(rt->store, item_of(rt, STW_LIST_PARAM, c),
                           item_of(rt, STW_LIST_MASTER, c)))
    return;
  rt->grads_apart[c] = TRUE;
  const StwChunk *ch = stw_chunking_chunk(rt->c, own_chunk(rt, c));
  for (guint32 k = 0; k < ch->count; k++)
    rt->stepped[g_array_index(rt->c->placements, StwPlacement, ch->first + k).tensor] = FALSE;
}

/* The iteration's end (or abandon): every chunk whose gradient went apart keeps its weights in
 * its copy again, a tensor not stepped taking them back from the master's buffer. */
static void
weights_at_rest(StwRuntime *rt)
{
  for (guint32 c = 0; rt->copy_keeps != NULL && c < rt->n; c++) {
    if (!rt->grads_apart[c])
      continue;
    const StwChunk *ch = stw_chunking_chunk(rt->c, own_chunk(rt, c));
    for (guint32 k = 0; k < ch->count; k++) {
      guint32 t = g_array_index(rt->c->placements, StwPlacement, ch->first + k).tensor;
      if (rt->stepped[t])
        continue;
      guint8 *master = stw_store_host(rt->store, item_of(rt, STW_LIST_MASTER, c));
      stw_store_write(rt->store, item_of(rt, STW_LIST_PARAM, c), offset_of(rt, STW_LIST_PARAM, t),
                      master + offset_of(rt, STW_LIST_MASTER, t),
                      stw_trace_tensor(rt->model, t)->numel * sizeof(float));
      rt->stepped[t] = TRUE;
    }
    rt->grads_apart[c] = FALSE;
  }
}

/* Whether TENSOR's weights are in its compute copy (at rest, or stepped since its gradient went
 * apart) rather than in its master list. */
static gboolean
weights_in_copy(const StwRuntime *rt, guint32 tensor)
{
  guint32 c = items_chunk(rt, tensor);
  return rt->copy_keeps != NULL && c < rt->n && rt->copy_keeps[c] &&
         (!rt->grads_apart[c] || rt->stepped[tensor]);
}

gboolean
stw_runtime_optim_weights_in_copy(const StwRuntime *rt, guint32 tensor)
{
  guint32 c = items_chunk(rt, tensor);
  return rt->copy_keeps != NULL && c < rt->n && rt->copy_keeps[c];
}

/* Whether TENSOR is in a frozen chunk: the param list only. */
static gboolean
frozen(const StwRuntime *rt, guint32 tensor)
{
  return stw_chunking_chunk(rt->c, rt->c->chunk_of[tensor])->frozen;
}

/* ---- several ranks: the plan's collectives --------------------------------------------------- */

/* Completes the collective in flight on ITEM, if any: FALSE with ERROR when it failed. A
 * reduce-scatter leaves the group's gradients consumed: they need not reach the host. */
static gboolean
finish(StwRuntime *rt, guint32 item, GError **error)
{
  if (rt->pending == NULL)
    return TRUE;
  Pending *p = g_hash_table_lookup(rt->pending, GUINT_TO_POINTER(item));
  if (p == NULL)
    return TRUE;
  for (guint i = 0; i < p->n_items; i++)
    g_hash_table_remove(rt->pending, GUINT_TO_POINTER(p->items[i]));
  gint64 t0 = g_get_monotonic_time();
  gboolean ok = stw_comm_finish(rt->o.comm, p->op, p->reduces ? "a reduce-scatter" : "a gather",
                                error);
  rt->st.comm_wait_ns += (guint64)(g_get_monotonic_time() - t0) * 1000;
  if (ok && p->reduces)
    stw_store_clear_dirty(rt->store, p->items[1]);
  g_free(p);
  return ok;
}

/* Lets the collectives in flight move on: a communicator whose messages progress only when it is
 * called (MPI) would otherwise move nothing while the ops compute, and all of a prefetched
 * gather would wait for its first use. */
static void
progress(StwRuntime *rt)
{
  if (rt->pending == NULL || g_hash_table_size(rt->pending) == 0)
    return;
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, rt->pending);
  while (g_hash_table_iter_next(&it, NULL, &value)) {
    Pending *p = value;
    rt->o.comm->done(rt->o.comm, p->op);
  }
}

static gboolean
finish_all(StwRuntime *rt, GError **error)
{
  gboolean ok = TRUE;
  while (rt->pending != NULL && g_hash_table_size(rt->pending) > 0) {
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, rt->pending);
    g_hash_table_iter_next(&it, &key, NULL);
    ok &= finish(rt, GPOINTER_TO_UINT(key), ok ? error : NULL);
  }
  return ok;
}

static void
track(StwRuntime *rt, StwCommOp *op, guint32 a, guint32 b, gboolean reduces)
{
  Pending *p = g_new0(Pending, 1);
  *p = (Pending){ .op = op, .items = { a, b }, .n_items = a == b ? 1 : 2, .reduces = reduces };
  for (guint i = 0; i < p->n_items; i++)
    g_hash_table_insert(rt->pending, GUINT_TO_POINTER(p->items[i]), p);
}

/* Gathers group G: every rank's own chunk of it (on the device) into the group's slot here. */
static gboolean
gather(StwRuntime *rt, guint32 g, GError **error)
{
  guint32 own = stw_plan_own_item(rt->c, g), group = stw_plan_group_item(rt->c, g);
  if (!finish(rt, own, error) || !finish(rt, group, error))
    return FALSE;
  if (!stw_store_resident(rt->store, own)) { /* the plan should have fetched it */
    rt->deviations++;
    if (!stw_store_fetch(rt->store, own, error))
      return FALSE;
  }
  stw_store_settle(rt->store, own);
  if (!stw_store_claim(rt->store, group, error))
    return FALSE;
  StwComm *c = rt->o.comm;
  gsize bytes = stw_chunk_bytes(rt->c, g * rt->world, STW_LIST_PARAM);
  guint64 before = c->received_bytes;
  track(rt, c->all_gather(c, stw_store_device(rt->store, own),
                          stw_store_device(rt->store, group), bytes), group, group, FALSE);
  rt->comm_received += c->received_bytes - before;
  return TRUE;
}

/* Reduce-scatters group G's gradients: this rank's own chunk becomes the mean of every rank's
 * gradients for it. */
static gboolean
reduce_scatter(StwRuntime *rt, guint32 g, GError **error)
{
  guint32 own = stw_plan_own_item(rt->c, g), group = stw_plan_group_item(rt->c, g);
  if (!finish(rt, own, error) || !finish(rt, group, error))
    return FALSE;
  if (!stw_store_resident(rt->store, own) || !stw_store_resident(rt->store, group)) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                "group %u: its gradients are not on the device for their reduce-scatter", g);
    return FALSE;
  }
  /* the mean gradient takes the own chunk's place: weights kept there go to the master's buffer */
  weights_to_master(rt, own);
  StwComm *c = rt->o.comm;
  gsize bytes = stw_chunk_bytes(rt->c, g * rt->world, STW_LIST_PARAM);
  guint64 before = c->received_bytes;
  track(rt, c->reduce_scatter(c, stw_store_device(rt->store, own),
                              stw_store_device(rt->store, group), bytes, rt->c->dtype),
        own, group, TRUE);
  rt->comm_received += c->received_bytes - before;
  return TRUE;
}

static gboolean
perform_collective(gpointer data, StwActionKind kind, guint32 item, GError **error)
{
  StwRuntime *rt = data;
  guint32 g = stw_plan_item_group(rt->c, item);
  g_assert(g != G_MAXUINT32);
  return kind == STW_ACTION_GATHER ? gather(rt, g, error) : reduce_scatter(rt, g, error);
}

static gboolean
settle_item(gpointer data, guint32 item, GError **error)
{
  return finish(data, item, error);
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
  if (stw_gradients_on_host(model->model.gradients)) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_UNSUPPORTED,
                "the trace's gradients are copied to the host after each micro-step "
                "(model.gradients \"%s\": a loop that offloads them, as FSDP's CPU offload "
                "does), and stowage's runtime keeps them on the device to the step: "
                "synthesize or profile the loop the runtime runs (synth --gradients device)",
                stw_gradients_names[model->model.gradients]);
    return NULL;
  }
  if (o->comm != NULL && o->comm->world > 1 && o->comm->device_memory == backend->device_is_host) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_UNSUPPORTED,
                "the %s communicator works on %s memory and the %s backend's device memory is "
                "not: on several ranks the CUDA backend takes NCCL, the host backend MPI",
                o->comm->name, o->comm->device_memory ? "GPU" : "host", backend->name);
    return NULL;
  }
  if (o->comm != NULL && o->comm->world > 1 && model->tensors->len > 0 &&
      stw_trace_tensor(model, 0)->dtype == STW_DTYPE_FP16) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_UNSUPPORTED,
                "fp16 compute copies train on one rank: the ranks' gradients are averaged in "
                "fp32 or bf16 (bf16 mixed precision trains on several)");
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
    rt->elem[l] = stw_chunking_elem_bytes(rt->c, (StwChunkList)l);
  rt->world = world_of(o);
  rt->rank = o->comm != NULL ? o->comm->rank : 0;
  rt->multi = o->mode == STW_RUNTIME_REPLAY && rt->world > 1;
  guint32 n_items = stw_plan_n_items(rt->c);
  g_autofree guint64 *bytes = g_new0(guint64, MAX(n_items, 1));
  for (int l = 0; l < STW_N_LISTS; l++)
    for (guint32 c = 0; c < rt->n; c++) /* several ranks: only the items of own chunks */
      bytes[item_of(rt, (StwChunkList)l, c)] =
          !rt->multi || c % rt->world == 0 ? stw_chunk_bytes(rt->c, c, (StwChunkList)l) : 0;
  for (guint32 g = 0; g < stw_chunking_groups(rt->c); g++)
    bytes[stw_plan_group_item(rt->c, g)] = stw_plan_group_bytes(rt->c, g);
  if (rt->multi) {
    rt->pending = g_hash_table_new(g_direct_hash, g_direct_equal);
    rt->first_of_chunk = g_new(guint32, MAX(rt->n, 1));
    for (guint32 c = 0; c < rt->n; c++)
      rt->first_of_chunk[c] = G_MAXUINT32;
    for (guint i = 0; i < rt->c->placements->len; i++) {
      const StwPlacement *p = &g_array_index(rt->c->placements, StwPlacement, i);
      guint32 c = rt->c->chunk_of[p->tensor];
      rt->first_of_chunk[c] = MIN(rt->first_of_chunk[c], p->tensor);
    }
  }
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
  if (!tier_open(rt, bytes, error)) {
    stw_runtime_free(rt);
    return NULL;
  }
  rt->store = store_open(rt, backend, n_items, bytes);
  if (backend->device_is_host)
    backend->device_bytes = o->device_bytes; /* the emulated device is the budget's size */
  for (guint32 g = 0; rt->multi && g < stw_chunking_groups(rt->c); g++)
    stw_store_set_volatile(rt->store, stw_plan_group_item(rt->c, g));
  if (rt->multi) {
    StwReplayCollectives coll = { .perform = perform_collective, .settle = settle_item,
                                  .data = rt };
    stw_replayer_set_collectives(rt->replayer, &coll);
  }
  if (init != NULL)
    initialize(rt, init);
  if (!tier_start(rt, init, error)) {
    stw_runtime_free(rt);
    return NULL;
  }
  if (o->mode == STW_RUNTIME_REPLAY && o->plan->moves->len > 0 && !o->activations_outside)
    rt->offloader = stw_offloader_new(o->plan->moves, rt->store, backend);
  if (o->mode == STW_RUNTIME_PLAIN) /* every list used in place: nothing is ever "off" */
    stw_store_make_plain(rt->store);
  /* a model state that stays on a device whose memory is the host's stays in its host copies:
   * a second copy of it would only be a copy */
  if (rt->stays && backend->device_is_host)
    stw_store_keep_in_place(rt->store);
  keep_weights_in_copies(rt);
  if (o->mode == STW_RUNTIME_PROFILE)
    rt->recorder = stw_recorder_new(model, backend->name, o->device_bytes,
                                    rt->elem[STW_LIST_PARAM], world_of(o));
  rt->timed = TRUE;
  return rt;
}

void
stw_runtime_free(StwRuntime *rt)
{
  if (rt == NULL)
    return;
  if (rt->pending != NULL) {
    GError *ignored = NULL;
    finish_all(rt, &ignored);
    g_clear_error(&ignored);
    g_hash_table_unref(rt->pending);
  }
  g_free(rt->first_of_chunk);
  g_clear_error(&rt->failure);
  stw_offloader_free(rt->offloader);
  stw_store_free(rt->store); /* before the tier: its copies in flight may use the tier's buffers */
  stw_tier_free(rt->tier);
  if (rt->tier_stepped != NULL)
    g_array_unref(rt->tier_stepped);
  stw_replayer_free(rt->replayer);
  stw_recorder_free(rt->recorder);
  stw_op_items_clear(&rt->items);
  stw_chunking_free(rt->chunking);
  g_free(rt->own_optim);
  g_free(rt->offset);
  g_free(rt->copy_keeps);
  g_free(rt->grads_apart);
  g_free(rt->stepped);
  g_free(rt->unreturned);
  g_free(rt);
}

/* ---- iterations and ops ---------------------------------------------------------------------- */

/* Whether TENSOR's chunk was freed by stw_runtime_hand_back. */
static gboolean
handed_back(const StwRuntime *rt, guint32 tensor)
{
  return rt->unreturned != NULL && !rt->multi && rt->unreturned[rt->c->chunk_of[tensor]] == 0;
}

/* The store's first failure not reported yet, into ERROR; TRUE when there is none. */
static gboolean
no_failure(StwRuntime *rt, GError **error)
{
  if (rt->unreturned != NULL) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_STATE,
                "the model was handed back (stw_runtime_hand_back): the runtime trains no more");
    return FALSE;
  }
  if (rt->failure != NULL) {
    g_propagate_error(error, g_steal_pointer(&rt->failure));
    return FALSE;
  }
  GError *failure = stw_store_take_failure(rt->store);
  if (failure == NULL)
    return TRUE;
  g_propagate_error(error, failure);
  return FALSE;
}

gboolean
stw_runtime_check_store(StwRuntime *rt, GError **error)
{
  return stw_store_check(rt->store, error);
}

static guint64
deviations(const StwRuntime *rt)
{
  return rt->deviations + stw_store_room_evictions(rt->store) - rt->unplanned_room;
}

/* Runs FN(RT, DATA) as unplanned work: what it moves is counted in the unplanned figures, and
 * none of it as a deviation from the plan. */
static gboolean
as_unplanned(StwRuntime *rt, gboolean (*fn)(StwRuntime *, gconstpointer, GError **),
             gconstpointer data, GError **error)
{
  const StwStoreStats *ss = stw_store_stats(rt->store);
  guint64 h2d = ss->h2d_bytes, d2h = ss->d2h_bytes, room = stw_store_room_evictions(rt->store);
  guint64 devs = rt->deviations;
  gboolean ok = fn(rt, data, error);
  rt->st.unplanned_h2d_bytes += ss->h2d_bytes - h2d;
  rt->st.unplanned_d2h_bytes += ss->d2h_bytes - d2h;
  rt->unplanned_room += stw_store_room_evictions(rt->store) - room;
  rt->deviations = devs;
  if (ss->h2d_bytes != h2d || ss->d2h_bytes != d2h)
    rt->perturbed = TRUE;
  return ok;
}

/* Replay: every item where the plan has it at the iteration's start (after unplanned ops moved
 * some): the others' slots freed first, then the plan's fetched. */
static gboolean
restore_start(StwRuntime *rt, gconstpointer unused, GError **error)
{
  (void)unused;
  const StwSchedule *sc = &rt->o.plan->schedule;
  guint32 n_items = STW_N_LISTS * rt->n; /* groups are gathered by the plan's actions */
  StwStore *s = rt->store;
  stw_store_next_op(s);
  for (guint32 i = 0; i < n_items; i++) {
    if (!sc->resident[i] && stw_store_resident(s, i)) {
      if (stw_store_dirty(s, i))
        stw_store_evict(s, i);
      else
        stw_store_drop(s, i);
    }
  }
  for (guint32 i = 0; i < n_items; i++) {
    if (sc->resident[i])
      stw_store_need(s, i);
  }
  for (guint32 i = 0; i < n_items; i++) {
    if (sc->resident[i] && !stw_store_resident(s, i) && !stw_store_fetch(s, i, error))
      return FALSE;
  }
  for (guint32 i = 0; i < n_items; i++)
    stw_store_settle(s, i);
  return TRUE;
}

/* Replay: the plan's start state, once (its moves are the warm-up's). */
static void
load_start(StwRuntime *rt)
{
  if (rt->replayer == NULL || rt->started)
    return;
  GError *error = NULL;
  if (!stw_replayer_start(rt->replayer, rt->store, &error) && rt->failure == NULL)
    rt->failure = error;
  else
    g_clear_error(&error);
  rt->st.warmup_h2d_bytes = stw_store_stats(rt->store)->h2d_bytes;
  stw_store_reset_moved(rt->store);
  rt->started = TRUE;
}

void
stw_runtime_iteration_begin(StwRuntime *rt)
{
  if (rt->perturbed && rt->replayer != NULL && rt->started) {
    GError *error = NULL;
    if (!as_unplanned(rt, restore_start, NULL, &error) && rt->failure == NULL)
      rt->failure = error;
    else
      g_clear_error(&error);
  }
  rt->perturbed = FALSE;
  stw_store_reset_moved(rt->store);
  GError *tier_error = NULL;
  if (rt->tier != NULL && !stw_tier_iteration_begin(rt->tier, &tier_error) &&
      rt->failure == NULL)
    rt->failure = tier_error; /* reported at the first op */
  else
    g_clear_error(&tier_error);
  stw_store_iteration_begin(rt->store);
  rt->moment = 0;
  rt->op_end_us = 0; /* what ran between iterations (a checkpoint, a report) is no op's */
  /* the iteration as a range profilers see (NVTX on CUDA: `stowage profile` finds it there) */
  if (rt->be->range_push != NULL)
    rt->be->range_push(rt->be, STW_ITERATION_RANGE);
  rt->iteration_timed = rt->timed;
  if (rt->recorder != NULL)
    stw_recorder_iteration_begin(rt->recorder);
  if (rt->replayer != NULL) {
    stw_replayer_rewind(rt->replayer);
    load_start(rt);
  }
  rt->comm_received = 0;
  rt->gradient_copies = 0;
}

gboolean
stw_runtime_iteration_end(StwRuntime *rt, GError **error)
{
  if (rt->be->range_pop != NULL) /* the iteration's range: the ops' are closed by now */
    rt->be->range_pop(rt->be);
  if (rt->replayer != NULL) {
    guint32 n_ops = stw_replayer_n_ops(rt->replayer);
    if (rt->moment != n_ops) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                  "the iteration ran %u ops, the plan's trace has %u", rt->moment, n_ops);
      return FALSE;
    }
    if (!stw_replayer_apply(rt->replayer, rt->store, rt->moment, &rt->deviations, error) ||
        !finish_all(rt, error) || (rt->tier != NULL && !stw_tier_iteration_end(rt->tier, error)))
      return FALSE;
  }
  weights_at_rest(rt);
  if (rt->tier != NULL) {
    rt->st.storage_read_bytes = stw_tier_stats(rt->tier)->read_bytes;
    rt->st.storage_write_bytes = stw_tier_stats(rt->tier)->write_bytes;
  }
  rt->st.comm_bytes = rt->comm_received;
  if (rt->recorder != NULL)
    stw_recorder_iteration_end(rt->recorder, rt->iteration_timed);
  stw_store_iteration_end(rt->store);
  const StwStoreStats *ss = stw_store_stats(rt->store);
  rt->st.h2d_bytes = ss->h2d_bytes;
  rt->st.d2h_bytes = ss->d2h_bytes + rt->gradient_copies;
  return no_failure(rt, error);
}

void
stw_runtime_iteration_abandon(StwRuntime *rt)
{
  if (rt->o.mode == STW_RUNTIME_PLAIN) {
    rt->moment = 0;
    return;
  }
  if (rt->be->range_pop != NULL) /* the iteration's range */
    rt->be->range_pop(rt->be);
  GError *ignored = NULL;
  finish_all(rt, &ignored); /* a failure is reported at the next op, as ever */
  stw_offloader_abandon(rt->offloader);
  if (rt->tier != NULL && ignored == NULL) /* the chunks stepped in part go back whole */
    stw_tier_iteration_end(rt->tier, &ignored);
  weights_at_rest(rt);
  if (ignored != NULL && rt->failure == NULL)
    rt->failure = ignored;
  else
    g_clear_error(&ignored);
  if (rt->recorder != NULL)
    stw_recorder_iteration_end(rt->recorder, FALSE);
  stw_store_iteration_end(rt->store);
  /* the chunks are where the abandoned ops left them: the next iteration puts them back where
   * the plan starts, and counts those moves as unplanned */
  rt->perturbed = TRUE;
  rt->moment = 0;
  rt->st.abandoned_iterations++;
}

/* Makes the op's items as its step asks: the forbidden ones written back to the host (a CPU Adam
 * step reads the host copies), the needed ones fetched and waited for, the written ones dirty. An
 * item the plan should have placed otherwise is moved anyway, and counted, in replay. */
static gboolean
make_ready(StwRuntime *rt, const guint32 *need, guint n_need, const guint32 *forbid,
           guint n_forbid, const guint32 *write, guint n_write, GError **error)
{
  StwStore *s = rt->store;
  gboolean replay = rt->replayer != NULL && !rt->unplanned;
  /* collectives in flight on what the op touches complete first */
  const guint32 *lists[] = { need, forbid, write };
  guint counts[] = { n_need, n_forbid, n_write };
  for (int l = 0; l < 3; l++)
    for (guint i = 0; i < counts[l]; i++)
      if (!finish(rt, lists[l][i], error))
        return FALSE;
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
    guint32 g = rt->multi ? stw_plan_item_group(rt->c, need[i]) : G_MAXUINT32;
    if (g != G_MAXUINT32 ? !gather(rt, g, error) || !finish(rt, need[i], error)
                         : !stw_store_fetch(s, need[i], error))
      return FALSE;
  }
  for (guint i = 0; i < n_need; i++)
    stw_store_settle(s, need[i]);
  /* gradients and GPU Adam leave the device copies the only valid ones (a gradient taking a
   * compute copy's place that keeps the weights moves them to the master's buffer first) */
  for (guint i = 0; i < n_write; i++) {
    if (write[i] < rt->n && !stw_store_dirty(s, write[i])) /* the param list's: item = chunk */
      weights_to_master(rt, write[i]);
    stw_store_set_dirty(s, write[i]);
  }
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
         (rt->offloader == NULL || stw_offloader_before(rt->offloader, k, error)) &&
         stw_replayer_apply(rt->replayer, rt->store, k, &rt->deviations, error) &&
         (rt->offloader == NULL || stw_offloader_after(rt->offloader, k, error)) &&
         make_ready(rt, d->need + d->need_start[k], stw_demand_n_need(d, k),
                    d->forbid + d->forbid_start[k], d->forbid_start[k + 1] - d->forbid_start[k],
                    d->write + d->write_start[k], d->write_start[k + 1] - d->write_start[k],
                    error) &&
         (rt->tier == NULL || stage != STW_STAGE_OPTIM || tier_begin(rt, params, n_params, error));
  } else {
    StwOpItems *x = &rt->items;
    stw_demand_op_items(rt->c, rt->optim, rt->model->model.gradients, stage, params, n_params,
                        grads, n_grads, x);
    ok = make_ready(rt, (const guint32 *)x->need->data, x->need->len,
                    (const guint32 *)x->forbid->data, x->forbid->len,
                    (const guint32 *)x->write->data, x->write->len, error);
  }
  if (!ok || (rt->o.check_store && !stw_store_check(rt->store, error)))
    return FALSE;
  if (rt->recorder != NULL)
    stw_recorder_op_begin(rt->recorder, name, stage, params, n_params, grads, n_grads,
                          stw_store_activation_bytes(rt->store));
  rt->st.ops++;
  if (rt->be->range_push != NULL)
    rt->be->range_push(rt->be, name);
  /* profile mode times the op's own compute: what was queued before it has finished */
  if (rt->recorder != NULL && rt->iteration_timed && rt->be->sync != NULL)
    rt->be->sync(rt->be);
  gint64 t1 = g_get_monotonic_time();
  rt->st.bookkeeping_ns += (guint64)(t1 - t0) * 1000;
  /* the emulated device's stream is the host itself: the host's time since the last op (the
   * caller's work between ops, and this bookkeeping) is on it too, as it will be in a replay */
  rt->op_start_us = rt->be->device_is_host && rt->op_end_us != 0 ? rt->op_end_us : t1;
  return TRUE;
}

/* The unplanned op's chunks made resident on demand (DATA: the op's items, derived). */
static gboolean
ready_unplanned(StwRuntime *rt, gconstpointer data, GError **error)
{
  const StwOpItems *x = data;
  return make_ready(rt, (const guint32 *)x->need->data, x->need->len, NULL, 0, NULL, 0, error);
}

gboolean
stw_runtime_unplanned_op_begin(StwRuntime *rt, const char *name, const guint32 *params,
                               guint32 n_params, GError **error)
{
  if (rt->unplanned) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                "unplanned op %s: another unplanned op is open", name);
    return FALSE;
  }
  rt->st.unplanned_ops++;
  if (rt->o.mode == STW_RUNTIME_PLAIN) {
    rt->unplanned = TRUE;
    return TRUE;
  }
  if (rt->multi) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_UNSUPPORTED,
                "unplanned op %s: several ranks run the plan's ops only", name);
    return FALSE;
  }
  if (!no_failure(rt, error))
    return FALSE;
  load_start(rt); /* the plan's start state first, counted as its warm-up */
  if (!no_failure(rt, error))
    return FALSE;
  StwOpItems *x = &rt->items;
  stw_demand_op_items(rt->c, rt->optim, rt->model->model.gradients, STW_STAGE_FWD, params,
                      n_params, NULL, 0, x);
  rt->unplanned = TRUE;
  gboolean ok = as_unplanned(rt, ready_unplanned, x, error);
  if (!ok)
    rt->unplanned = FALSE;
  return ok;
}

void
stw_runtime_op_end(StwRuntime *rt)
{
  if (rt->unplanned) { /* no moment of the plan's, nothing recorded */
    rt->unplanned = FALSE;
    if (rt->o.mode != STW_RUNTIME_PLAIN)
      stw_store_reap(rt->store);
    return;
  }
  if (rt->o.mode == STW_RUNTIME_PLAIN)
    return;
  if (rt->recorder != NULL && rt->iteration_timed && rt->be->sync != NULL) /* and its own */
    rt->be->sync(rt->be);
  gint64 t = g_get_monotonic_time();
  if (rt->be->range_pop != NULL)
    rt->be->range_pop(rt->be);
  if (rt->recorder != NULL)
    stw_recorder_op_end(rt->recorder, (guint64)(t - rt->op_start_us) * 1000);
  rt->moment++;
  if (rt->tier != NULL)
    tier_end(rt);
  stw_store_reap(rt->store);
  if (rt->o.check_store && rt->failure == NULL)
    stw_store_check(rt->store, &rt->failure); /* reported by the next call that can fail */
  progress(rt);
  rt->op_end_us = g_get_monotonic_time();
  rt->st.bookkeeping_ns += (guint64)(rt->op_end_us - t) * 1000;
}

/* ---- ranks ------------------------------------------------------------------------------- */

gboolean
stw_runtime_amsgrad(const StwRuntime *rt)
{
  return rt->c->amsgrad;
}

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
  g_assert(rt->stays); /* every chunk's gradients on the device */
  for (guint32 c = 0; c < rt->n; c++) {
    guint32 item = item_of(rt, STW_LIST_PARAM, c);
    gsize n = stw_chunk_bytes(rt->c, c, STW_LIST_PARAM) / rt->elem[STW_LIST_PARAM];
    guint64 before = comm->received_bytes;
    gint64 t0 = g_get_monotonic_time();
    if (!stw_comm_finish(comm, comm->all_reduce(comm, stw_store_device(rt->store, item), n,
                                                rt->c->dtype),
                         "averaging the gradients", error))
      return FALSE;
    rt->st.comm_wait_ns += (guint64)(g_get_monotonic_time() - t0) * 1000;
    rt->comm_received += comm->received_bytes - before;
  }
  return TRUE;
}

/* ---- access ------------------------------------------------------------------------------ */

gpointer
stw_runtime_param(StwRuntime *rt, guint32 tensor)
{
  guint32 item;
  guint64 off;
  locate(rt, STW_LIST_PARAM, tensor, &item, &off);
  if (!stw_store_resident(rt->store, item))
    return NULL;
  return stw_store_device(rt->store, item) + off;
}

void
stw_runtime_optim_tensors(StwRuntime *rt, guint32 tensor, GArray *out)
{
  g_array_set_size(out, 0);
  if (!rt->multi) {
    g_array_append_val(out, tensor);
    return;
  }
  /* at the step of rank 0's own chunk (its first tensor), this rank steps all of its own */
  guint32 c = rt->c->chunk_of[tensor];
  if (c % rt->world != 0 || rt->first_of_chunk[c] != tensor)
    return;
  guint32 mine = c + rt->rank;
  if (mine >= rt->n)
    return; /* the last group has no chunk of this rank */
  const StwChunk *ch = stw_chunking_chunk(rt->c, mine);
  for (guint32 k = 0; k < ch->count; k++)
    g_array_append_val(out, g_array_index(rt->c->placements, StwPlacement, ch->first + k).tensor);
}

/* Where the plan steps TENSOR's chunk: on several ranks a rank's own chunk takes the placement
 * of its group's first (rank 0's). */
static guint8
placement_of(const StwRuntime *rt, guint32 tensor)
{
  guint32 c = rt->c->chunk_of[tensor];
  return rt->optim[rt->multi ? c - c % rt->world : c];
}

gboolean
stw_runtime_optim(StwRuntime *rt, guint32 tensor, gpointer *param, float **master,
                  gpointer *momentum, gpointer *variance)
{
  gboolean cpu = stw_optim_on_cpu(placement_of(rt, tensor));
  gpointer *out[] = { param, (gpointer *)master, (gpointer *)momentum, (gpointer *)variance };
  guint32 kept = items_chunk(rt, tensor); /* the chunk whose items hold its values here */
  if (rt->copy_keeps != NULL && kept < rt->n && rt->copy_keeps[kept])
    rt->stepped[tensor] = TRUE; /* its new weights are in the copy from here */
  for (int l = 0; l < STW_N_LISTS; l++) {
    guint32 item;
    guint64 off;
    gboolean mine = locate(rt, (StwChunkList)l, tensor, &item, &off);
    g_assert(mine); /* stw_runtime_optim_tensors hands out this rank's own */
    guint32 tc = tier_chunk(rt, tensor);
    if (l == STW_LIST_PARAM && !stw_tier_holds_params(rt->tier, tc))
      tc = TIER_NONE;
    if (tc != TIER_NONE) { /* read in by the op's begin (tier_begin): no request here */
      *out[l] = tier_values(rt, tc, (StwChunkList)l, tensor, TRUE, NULL);
      g_assert(*out[l] != NULL);
      continue;
    }
    if (l == STW_LIST_MASTER && weights_in_copy(rt, tensor) && !rt->grads_apart[kept]) {
      /* no gradient arrived: the weights are the copy's, and so is its "gradient" (what a step
       * of a chunk that got none has always read) */
      *out[l] = stw_store_host(rt->store, item_of(rt, STW_LIST_PARAM, kept)) +
                offset_of(rt, STW_LIST_PARAM, tensor);
      continue;
    }
    guint8 *base = cpu ? stw_store_host(rt->store, item) : stw_store_device(rt->store, item);
    *out[l] = base + off;
  }
  return !cpu && rt->o.mode != STW_RUNTIME_PLAIN;
}

void
stw_runtime_gradient_arrives(StwRuntime *rt, guint32 tensor)
{
  const StwTensor *x = stw_trace_tensor(rt->model, tensor);
  if (!stw_gradients_cross_at_step(rt->c, rt->c->chunk_of[tensor], placement_of(rt, tensor),
                                   rt->model->model.gradients))
    return;
  rt->gradient_copies += x->numel * stw_dtype_bytes(x->dtype);
  guint32 kept = items_chunk(rt, tensor);
  if (kept < rt->n)
    weights_to_master(rt, kept);
}

const float *
stw_runtime_optim_weights(StwRuntime *rt, guint32 tensor)
{
  guint32 kept = items_chunk(rt, tensor);
  if (rt->copy_keeps == NULL || kept >= rt->n || !rt->copy_keeps[kept] || !rt->grads_apart[kept])
    return NULL;
  return (const float *)(stw_store_host(rt->store, item_of(rt, STW_LIST_MASTER, kept)) +
                         offset_of(rt, STW_LIST_MASTER, tensor));
}

StwDtype
stw_runtime_state_dtype(const StwRuntime *rt)
{
  return rt->c->state_dtype;
}

gboolean
stw_runtime_offload(StwRuntime *rt, guint32 block, gpointer *const *slots, guint n,
                    GError **error)
{
  return stw_offloader_hand(rt->offloader, block, slots, n, error);
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

void
stw_runtime_set_timed(StwRuntime *rt, gboolean timed)
{
  rt->timed = timed;
}

StwTrace *
stw_runtime_trace(StwRuntime *rt)
{
  StwTrace *t = rt->recorder != NULL ? stw_recorder_trace(rt->recorder) : NULL;
  /* on a real device, what the process holds of it outside the runtime's arena, as it stands
   * after the iteration (the compute libraries' workspaces taken): what a plan must leave free */
  if (t != NULL && rt->be->memory_outside != NULL) {
    guint64 outside = rt->be->memory_outside(rt->be);
    if (outside > 0 && outside < t->device.memory_bytes)
      t->device.gpu_process_bytes = outside;
  }
  return t;
}

const StwRuntimeStats *
stw_runtime_stats(StwRuntime *rt)
{
  const StwStoreStats *ss = stw_store_stats(rt->store);
  rt->st.peak_device_bytes = ss->peak_bytes;
  rt->st.peak_settled_bytes = ss->peak_settled_bytes;
  rt->st.verified_moves = ss->verified_moves;
  rt->st.arena_bytes = ss->arena_bytes;
  rt->st.arena_iterations = ss->arena_iterations;
  rt->st.copy_wait_ns = ss->copy_wait_ns;
  rt->st.storage_wait_ns = rt->tier != NULL ? stw_tier_stats(rt->tier)->wait_ns : 0;
  rt->st.deviations = rt->replayer != NULL ? deviations(rt) : 0;
  return &rt->st;
}

void
stw_runtime_read_param(StwRuntime *rt, guint32 tensor, float *out)
{
  gsize numel = stw_trace_tensor(rt->model, tensor)->numel;
  if (handed_back(rt, tensor)) {
    memset(out, 0, numel * sizeof(float));
    return;
  }
  GError *ignored = NULL;
  finish_all(rt, &ignored); /* a failure has been reported where it happened */
  g_clear_error(&ignored);
  guint32 item;
  guint64 off;
  locate(rt, STW_LIST_PARAM, tensor, &item, &off);
  guint64 elem = rt->elem[STW_LIST_PARAM];
  if (elem == sizeof(float)) {
    stw_store_read(rt->store, item, off, out, numel * sizeof(float));
    return;
  }
  stw_store_read(rt->store, item, off, out, numel * elem);
  widen_in_place(out, numel, rt->c->dtype);
}

gboolean
stw_runtime_read_state(StwRuntime *rt, guint32 tensor, float *master, float *m, float *v,
                       GError **error)
{
  gsize numel = stw_trace_tensor(rt->model, tensor)->numel, n = numel * sizeof(float);
  float *out[] = { master, m, v };
  if (handed_back(rt, tensor)) {
    for (int z = 0; z < 3; z++)
      memset(out[z], 0, n);
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_STATE,
                "tensor %s was handed back: its chunk is freed",
                stw_trace_tensor(rt->model, tensor)->name);
    return FALSE;
  }
  if (frozen(rt, tensor)) { /* its weights are its compute copy; it has no moments */
    stw_runtime_read_param(rt, tensor, master);
    memset(m, 0, n);
    memset(v, 0, n);
    return TRUE;
  }
  GError *ignored = NULL;
  finish_all(rt, &ignored); /* a failure has been reported where it happened */
  g_clear_error(&ignored);
  guint32 tc = tier_chunk(rt, tensor);
  for (int l = STW_LIST_MASTER; l < STW_N_LISTS; l++) {
    guint32 item;
    guint64 off;
    float *to = out[l - STW_LIST_MASTER];
    StwDtype dtype = list_dtype(rt, (StwChunkList)l);
    if (tc != TIER_NONE) {
      const guint8 *from = tier_values(rt, tc, (StwChunkList)l, tensor, FALSE, error);
      if (from == NULL) {
        for (int z = 0; z < 3; z++)
          memset(out[z], 0, n);
        return FALSE;
      }
      widen_values(to, from, numel, dtype);
    } else if (l == STW_LIST_MASTER && weights_in_copy(rt, tensor)) {
      stw_store_read(rt->store, item_of(rt, STW_LIST_PARAM, items_chunk(rt, tensor)),
                     offset_of(rt, STW_LIST_PARAM, tensor), to, n);
    } else if (locate(rt, (StwChunkList)l, tensor, &item, &off)) {
      stw_store_read(rt->store, item, off, to, numel * stw_dtype_bytes(dtype));
      widen_values(to, to, numel, dtype);
    } else { /* another rank's state: zeros here (its checkpoint holds it) */
      memset(to, 0, n);
    }
  }
  return TRUE;
}

gboolean
stw_runtime_write_state(StwRuntime *rt, guint32 tensor, const float *master, const float *m,
                        const float *v, GError **error)
{
  if (rt->unreturned != NULL)
    return no_failure(rt, error); /* the model was handed back */
  guint32 c = rt->c->chunk_of[tensor], tc = tier_chunk(rt, tensor);
  gsize numel = stw_trace_tensor(rt->model, tensor)->numel;
  /* each list in its dtype: the compute copy is the master weights in its precision, and bf16
   * moments are the values given rounded to nearest */
  const float *in[] = { master, master, m, v };
  g_autofree guint8 *values = g_malloc(MAX(numel * sizeof(float), 1) * STW_N_LISTS);
  const guint8 *src[STW_N_LISTS];
  for (int l = 0; l < STW_N_LISTS; l++) {
    guint8 *at = values + (gsize)l * numel * sizeof(float);
    store_values(at, in[l], numel, list_dtype(rt, (StwChunkList)l));
    src[l] = at;
  }
  gsize bytes[STW_N_LISTS];
  for (int l = 0; l < STW_N_LISTS; l++)
    bytes[l] = numel * stw_dtype_bytes(list_dtype(rt, (StwChunkList)l));
  /* the storage tier's part first: when it fails, nothing is written */
  for (int l = STW_LIST_MASTER; tc != TIER_NONE && !frozen(rt, tensor) && l < STW_N_LISTS; l++) {
    guint8 *to = tier_values(rt, tc, (StwChunkList)l, tensor, TRUE, error);
    if (to == NULL)
      return FALSE;
    memcpy(to, src[l], bytes[l]);
  }
  guint lists = stw_chunking_chunk(rt->c, c)->frozen || tc != TIER_NONE ? 1 : STW_N_LISTS;
  for (guint l = 0; l < lists; l++) {
    guint32 item;
    guint64 off;
    /* several ranks: this rank's own tensors only (the others' arrive by gathers) */
    if (locate(rt, (StwChunkList)l, tensor, &item, &off) &&
        (!rt->multi || stw_plan_item_group(rt->c, item) == G_MAXUINT32))
      stw_store_write(rt->store, item, off, src[l], bytes[l]);
  }
  return TRUE;
}

/* Where TENSOR's largest variances are (AMSGrad): after its variances, in its variance region.
 * FALSE when the layout keeps none, or they are another rank's. */
static gboolean
locate_max_variance(const StwRuntime *rt, guint32 tensor, guint32 *item, guint64 *off)
{
  if (!rt->c->amsgrad || frozen(rt, tensor) ||
      !locate(rt, STW_LIST_VARIANCE, tensor, item, off))
    return FALSE;
  *off += stw_trace_tensor(rt->model, tensor)->numel * stw_dtype_bytes(rt->c->state_dtype);
  return TRUE;
}

/* TENSOR's largest variances on the storage tier (after its variances), read in; NULL with
 * ERROR when the tier failed. */
static guint8 *
tier_max_variance(StwRuntime *rt, guint32 tc, guint32 tensor, gboolean modify, GError **error)
{
  guint8 *v = tier_values(rt, tc, STW_LIST_VARIANCE, tensor, modify, error);
  return v == NULL ? NULL
                   : v + stw_trace_tensor(rt->model, tensor)->numel *
                             stw_dtype_bytes(rt->c->state_dtype);
}

gboolean
stw_runtime_hand_back(StwRuntime *rt, guint32 tensor, GError **error)
{
  if (tensor >= rt->model->tensors->len) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_STATE,
                "hand back: no tensor %u (the model has %u)", tensor, rt->model->tensors->len);
    return FALSE;
  }
  if (rt->unreturned == NULL) {
    GError *ignored = NULL;
    finish_all(rt, &ignored); /* a failure has been reported where it happened */
    g_clear_error(&ignored);
    rt->unreturned = g_new0(guint32, MAX(rt->n, 1));
    for (guint32 i = 0; i < rt->model->tensors->len; i++)
      rt->unreturned[rt->c->chunk_of[i]]++;
  }
  guint32 c = rt->c->chunk_of[tensor];
  if (rt->unreturned[c] == 0 || --rt->unreturned[c] > 0 || rt->multi)
    return TRUE; /* several ranks: their items are shared by groups, freed with the runtime */
  for (int l = 0; l < STW_N_LISTS; l++)
    stw_store_forget(rt->store, item_of(rt, (StwChunkList)l, c));
  if (rt->be->trim != NULL)
    rt->be->trim(rt->be);
  return TRUE;
}

gboolean
stw_runtime_read_max_variance(StwRuntime *rt, guint32 tensor, float *out, GError **error)
{
  gsize numel = stw_trace_tensor(rt->model, tensor)->numel, n = numel * sizeof(float);
  StwDtype dtype = rt->c->state_dtype;
  guint32 item;
  guint64 off;
  GError *ignored = NULL;
  finish_all(rt, &ignored); /* a failure has been reported where it happened */
  g_clear_error(&ignored);
  if (!locate_max_variance(rt, tensor, &item, &off)) {
    memset(out, 0, n);
  } else if (tier_chunk(rt, tensor) != TIER_NONE) {
    const guint8 *from = tier_max_variance(rt, tier_chunk(rt, tensor), tensor, FALSE, error);
    if (from == NULL) {
      memset(out, 0, n);
      return FALSE;
    }
    widen_values(out, from, numel, dtype);
  } else {
    stw_store_read(rt->store, item, off, out, numel * stw_dtype_bytes(dtype));
    widen_values(out, out, numel, dtype);
  }
  return TRUE;
}

gboolean
stw_runtime_write_max_variance(StwRuntime *rt, guint32 tensor, const float *in, GError **error)
{
  guint32 item;
  guint64 off;
  gsize numel = stw_trace_tensor(rt->model, tensor)->numel;
  gsize n = numel * stw_dtype_bytes(rt->c->state_dtype);
  if (!locate_max_variance(rt, tensor, &item, &off) ||
      (rt->multi && stw_plan_item_group(rt->c, item) != G_MAXUINT32))
    return TRUE;
  g_autofree guint8 *values = g_malloc(MAX(n, 1));
  store_values(values, in, numel, rt->c->state_dtype);
  if (tier_chunk(rt, tensor) != TIER_NONE) {
    guint8 *to = tier_max_variance(rt, tier_chunk(rt, tensor), tensor, TRUE, error);
    if (to == NULL)
      return FALSE;
    memcpy(to, values, n);
    return TRUE;
  }
  stw_store_write(rt->store, item, off, values, n);
  return TRUE;
}
