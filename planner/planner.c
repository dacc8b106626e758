/* planner.c — policies, optimizer placement and chunk-size search; see planner.h. */
#include "config.h"

#include <stowage/planner.h>

#include <math.h>
#include <string.h>

#include <stowage/cost.h>
#include <stowage/simulate.h>
#include <stowage/units.h>

#include "demand.h"
#include "evaluate.h"
#include "schedule.h"

/* PatrickStar's own reserves (Fang et al., Sec. 6): 80% of GPU memory is usable, and two
 * chunks are kept spare during forward and backward. */
#define PSTAR_USABLE 0.8
#define PSTAR_SPARE_CHUNKS 2
/* The search: from the largest tensor upward in steps of 2^(1/4), up to 64 times larger. */
#define SEARCH_STEPS 25
#define SEARCH_ALIGN 1024

void
stw_planner_options_init(StwPlannerOptions *o, const StwHardware *hw)
{
  memset(o, 0, sizeof *o);
  o->policy = STW_POLICY_STOWAGE;
  o->hw = *hw;
  o->budgets.gpu_bytes = hw->gpu_memory_bytes;
  o->budgets.cpu_bytes = hw->cpu_memory_bytes;
  o->gemini_fraction = -1;
  o->margin_share = 1.0;
  o->prefetch_bucket_elems = 50000000; /* DeepSpeed's stage3_prefetch_bucket_size */
  o->zero_stage = 2;
  o->activations = STW_ACTIVATIONS_AUTO;
  o->state_dtype = -1;
}

const char *const stw_objective_names[] = { "time", "bytes", NULL };
const char *const stw_activations_names[] = { "keep", "recompute", "offload", "auto", NULL };
const char *const stw_layout_names[] = { "groups", "shards", "policy", NULL };

gboolean
stw_policy_splits_chunks(StwPolicy policy, guint64 zero_stage)
{
  return policy == STW_POLICY_ZERO_INFINITY || policy == STW_POLICY_GEMINI_STATIC ||
         (policy == STW_POLICY_ZERO_OFFLOAD && zero_stage == 3);
}

StwLayout
stw_planner_layout(const StwPlannerOptions *o, guint32 world)
{
  if (world < 2)
    return STW_LAYOUT_GROUPS;
  if (o->layout != STW_LAYOUT_POLICY)
    return o->layout;
  return stw_policy_splits_chunks(o->policy, o->zero_stage) ? STW_LAYOUT_SHARDS
                                                             : STW_LAYOUT_GROUPS;
}

StwPolicy
stw_policy_from_name(const char *name)
{
  for (int i = 0; stw_policy_names[i] != NULL; i++) {
    if (strcmp(stw_policy_names[i], name) == 0)
      return (StwPolicy)i;
  }
  return STW_N_POLICIES;
}

GArray *
stw_planner_chunk_sizes(const StwTrace *t)
{
  GArray *sizes = g_array_new(FALSE, FALSE, sizeof(guint64));
  guint64 total = 0;
  for (guint32 i = 0; i < t->tensors->len; i++)
    total += stw_trace_tensor(t, i)->numel;
  guint64 base = MAX(stw_trace_largest_tensor(t, NULL), 1);
  base = (base + SEARCH_ALIGN - 1) / SEARCH_ALIGN * SEARCH_ALIGN;
  for (int i = 0; i < SEARCH_STEPS; i++) {
    guint64 s = (guint64)ceil((double)base * pow(2.0, i / 4.0) / SEARCH_ALIGN) * SEARCH_ALIGN;
    if (sizes->len > 0 && s <= g_array_index(sizes, guint64, sizes->len - 1))
      continue;
    g_array_append_val(sizes, s);
    if (s >= total)
      break; /* one chunk holds everything: larger sizes only waste */
  }
  return sizes;
}

/* With several ranks, turns the engine's fetches of gathered items into gathers, each no earlier
 * than its rank's own chunk is fetched, and adds the reduce-scatters. */
static void
add_collectives(StwPlan *p, const StwTrace *t)
{
  const StwChunking *c = p->chunking;
  if (c->world <= 1)
    return;
  GArray *actions = p->schedule.actions;
  guint32 n_items = stw_plan_n_items(c);
  g_autofree guint8 *res = g_memdup2(p->schedule.resident, MAX(n_items, 1));
  for (guint i = 0; i < actions->len; i++) {
    StwAction *a = &g_array_index(actions, StwAction, i);
    if (stw_plan_item_group(c, a->item) != G_MAXUINT32 && a->kind == STW_ACTION_FETCH)
      a->kind = STW_ACTION_GATHER;
  }
  stw_actions_sort(actions);
  /* a gather needs its rank's own chunk on the GPU: one hoisted ahead of the chunk's fetch
   * waits for it */
  for (guint i = 0; i < actions->len; i++) {
    StwAction *a = &g_array_index(actions, StwAction, i);
    guint32 g = stw_plan_item_group(c, a->item);
    if (g == G_MAXUINT32) {
      res[a->item] = a->kind == STW_ACTION_FETCH;
      continue;
    }
    guint32 own = stw_plan_own_item(c, g);
    if (a->kind != STW_ACTION_GATHER || res[own])
      continue;
    for (guint j = i + 1; j < actions->len; j++) {
      const StwAction *f = &g_array_index(actions, StwAction, j);
      if (f->item == own && f->kind == STW_ACTION_FETCH) {
        a->moment = f->moment;
        break;
      }
    }
  }
  g_autofree guint32 *moments = stw_demand_reduce_moments(t, c);
  for (guint32 g = 0; g < stw_chunking_groups(c); g++) {
    if (moments[g] == G_MAXUINT32)
      continue;
    StwAction rs = { .moment = moments[g], .item = stw_plan_group_item(c, g),
                     .kind = STW_ACTION_REDUCE_SCATTER };
    g_array_append_val(actions, rs);
  }
  stw_actions_sort(actions);
}

/* ---- one policy at one chunk layout ----------------------------------------------------------- */

typedef struct {
  const StwTrace *t;
  const StwPlannerOptions *o;
  const StwChunking *c;
  guint32 n;             /* chunks */
  guint32 n_items;
  gboolean quick;        /* the search's first pass: fewer optimizer placements */
  /* the first shortfall met, for the error message */
  gboolean failed;
  guint32 fail_op;
  guint64 fail_need_bytes;
  guint64 fail_capacity;
  /* the least host memory a plan that fitted the GPU needed, when none fitted the host */
  guint64 host_need_bytes;
  gboolean ignore_host;  /* a search over the GPU alone (gemini's fraction) */
} Attempt;

static guint64
param_chunk_bytes(const StwChunking *c)
{
  return stw_chunk_bytes(c, 0, STW_LIST_PARAM);
}

/* Chunk capacity per op under the real budget, optionally with PatrickStar's reserves. */
static guint64 *
capacities(const Attempt *at, gboolean patrickstar)
{
  guint32 n_ops = at->t->ops->len;
  guint64 *cap = g_new(guint64, n_ops);
  StwBudgets b = at->o->budgets;
  if (patrickstar)
    b.gpu_bytes = (guint64)((double)b.gpu_bytes * PSTAR_USABLE);
  for (guint32 k = 0; k < n_ops; k++) {
    cap[k] = stw_plan_capacity(at->t, &b, k);
    guint64 spare = PSTAR_SPARE_CHUNKS * param_chunk_bytes(at->c);
    if (patrickstar && stw_trace_op(at->t, k)->stage != STW_STAGE_OPTIM)
      cap[k] = cap[k] > spare ? cap[k] - spare : 0;
  }
  return cap;
}

/* Whether CAP are the budget's own capacities (stw_plan_capacity), without a policy's reserves. */
static gboolean
plan_capacities(const Attempt *at, const guint64 *cap)
{
  for (guint32 k = 0; k < at->t->ops->len; k++) {
    if (cap[k] != stw_plan_capacity(at->t, &at->o->budgets, k))
      return FALSE;
  }
  return TRUE;
}

static void
note_failure(Attempt *at, const StwSchedule *s, const StwDemand *d)
{
  if (at->failed)
    return;
  at->failed = TRUE;
  at->fail_op = s->fail_step;
  at->fail_need_bytes = s->fail_need_bytes;
  at->fail_capacity = d->capacity[s->fail_step];
}

/* Whether A beats B under OBJECTIVE (B may be NULL); equal plans do not. */
static int
compare(const StwPlan *a, const StwPlan *b, StwObjective objective)
{
  guint64 ta = a->pred.cost_ns, tb = b->pred.cost_ns;
  guint64 ba = a->pred.h2d_bytes + a->pred.d2h_bytes, bb = b->pred.h2d_bytes + b->pred.d2h_bytes;
  gboolean time = objective == STW_OBJECTIVE_TIME;
  guint64 x1 = time ? ta : ba, y1 = time ? tb : bb; /* the objective */
  guint64 x2 = time ? ba : ta, y2 = time ? bb : tb; /* the tie-breaker */
  if (x1 != y1)
    return x1 < y1 ? -1 : 1;
  if (x2 != y2)
    return x2 < y2 ? -1 : 1;
  return 0;
}

static gboolean
better_for(const StwPlan *a, const StwPlan *b, StwObjective objective)
{
  return b == NULL || compare(a, b, objective) < 0;
}

static void
release_candidate(StwPlan *p)
{
  if (p == NULL)
    return;
  p->chunking = NULL; /* borrowed */
  stw_plan_free(p);
}

static StwPlan *
keep_better(const Attempt *at, StwPlan *best, StwPlan *candidate)
{
  if (candidate == NULL)
    return best;
  if (better_for(candidate, best, at->o->objective)) {
    release_candidate(best);
    return candidate;
  }
  release_candidate(candidate);
  return best;
}

/* Optimizer state bytes (master, momentum, variance: twice the variance with AMSGrad) of chunk
 * J on rank 0. */
static guint64
state_bytes(const Attempt *at, guint32 j)
{
  guint64 b = 0;
  for (int l = STW_LIST_MASTER; l < STW_N_LISTS && stw_chunking_owned(at->c, j); l++)
    b += stw_chunk_bytes(at->c, j, (StwChunkList)l);
  return b;
}

/* When the state on storage was not enough: the 16-bit parameters (and with them their
 * gradients) of P's chunks whose state is there move too, from the last chunk back, until P's
 * host memory (HOST now) fits the host budget or the storage (STORED bytes a rank so far) is
 * full. Both planners do it: LoHan's, and ZeRO-Infinity's offload_param to "nvme". Returns P's
 * host memory, re-evaluated over PLAN_DEMAND. */
static guint64
params_to_storage(Attempt *at, StwPlan *p, const StwDemand *plan_demand, guint64 host,
                  guint64 stored)
{
  const StwBudgets *b = &at->o->budgets;
  const StwChunking *c = p->chunking;
  guint64 world = MAX(c->world, 1), largest = 0, moved = 0;
  for (guint32 ch = 0; ch < at->n; ch++)
    if (p->optim[ch] == STW_OPTIM_CPU_STORAGE)
      largest = MAX(largest, stw_chunk_bytes(c, ch, STW_LIST_PARAM));
  gboolean any = TRUE;
  while (any && host > b->cpu_bytes) {
    /* what is over, and the staging buffers the move adds: two for fetches, two larger steps */
    guint64 excess = host - b->cpu_bytes + 4 * largest * world, now = 0;
    any = FALSE;
    for (guint32 ch = at->n; ch-- > 0 && now * world < excess;) {
      guint64 params = stw_chunk_bytes(c, ch, STW_LIST_PARAM);
      if (p->optim[ch] != STW_OPTIM_CPU_STORAGE || (stored + moved + params) * world >
                                                       b->storage_bytes)
        continue;
      p->optim[ch] = STW_OPTIM_STORAGE;
      moved += params;
      now += params;
      any = TRUE;
    }
    if (any) {
      stw_plan_evaluate(p, at->t, plan_demand, FALSE, &p->pred, NULL);
      host = stw_cost_add(p->pred.cpu_bytes, p->pred.host_overhead_bytes);
    }
  }
  return host;
}

/* With a storage tier (the budget's storage_bytes), the optimizer state of P's CPU Adam chunks
 * moves there, from the last chunk back (the first to be stepped last), until P's host memory
 * fits the host budget (ZeRO-Infinity's, offload_optimizer to "nvme": all of it), or the
 * storage's is full; its schedule stays (the GPU sees CPU Adam's chunks alike). Returns P's host
 * memory, re-evaluated over PLAN_DEMAND. */
static guint64
state_to_storage(Attempt *at, StwPlan *p, const StwDemand *plan_demand)
{
  const StwBudgets *b = &at->o->budgets;
  guint64 host = stw_cost_add(p->pred.cpu_bytes, p->pred.host_overhead_bytes);
  gboolean all = at->o->policy == STW_POLICY_ZERO_INFINITY;
  if (b->storage_bytes == 0 || (at->o->policy != STW_POLICY_STOWAGE && !all))
    return host;
  const StwChunking *c = p->chunking;
  guint64 world = MAX(c->world, 1), largest = 0, moved = 0;
  for (guint32 ch = 0; ch < at->n; ch++) /* the staging buffers: two of the largest state */
    if (p->optim[ch] == STW_OPTIM_CPU)
      largest = MAX(largest, state_bytes(at, ch));
  /* passes until the host fits (the staging buffers make the first pass's guess short) */
  gboolean any = TRUE;
  while (any && (all || host > b->cpu_bytes)) {
    guint64 excess = all ? G_MAXUINT64 : host - b->cpu_bytes + 2 * largest * world, now = 0;
    any = FALSE;
    for (guint32 ch = at->n; ch-- > 0 && now * world < excess;) {
      guint64 state = state_bytes(at, ch);
      if (p->optim[ch] != STW_OPTIM_CPU || !stw_chunking_owned(c, ch) ||
          (moved + state) * world > b->storage_bytes)
        continue;
      p->optim[ch] = STW_OPTIM_CPU_STORAGE;
      moved += state;
      now += state;
      any = TRUE;
    }
    if (any) {
      stw_plan_evaluate(p, at->t, plan_demand, FALSE, &p->pred, NULL);
      host = stw_cost_add(p->pred.cpu_bytes, p->pred.host_overhead_bytes);
    }
    all = FALSE;
  }
  return host > b->cpu_bytes ? params_to_storage(at, p, plan_demand, host, moved) : host;
}

/* A plan from schedule S (taken) for the placement OPTIM, evaluated over PLAN_DEMAND, the
 * demand such a plan must meet (stw_demand_of_plan); NULL when it keeps more in host memory than
 * the host budget holds (noted: every budget the plan is given binds it). */
static StwPlan *
make_plan(Attempt *at, const guint8 *optim, StwSchedule *s, const StwDemand *plan_demand)
{
  StwPlan *p = stw_plan_new();
  p->policy = at->o->policy;
  p->budgets = at->o->budgets;
  p->hw = at->o->hw;
  p->retiming = at->o->retiming;
  p->trace_ops = at->t->ops->len;
  p->optim = g_memdup2(optim, at->n);
  p->schedule = *s;
  memset(s, 0, sizeof *s);
  /* the layout is shared while candidates compete; the winner gets its own copy */
  p->chunking = (StwChunking *)at->c;
  add_collectives(p, at->t);
  stw_plan_evaluate(p, at->t, plan_demand, FALSE, &p->pred, NULL);
  guint64 host = stw_cost_add(p->pred.cpu_bytes, p->pred.host_overhead_bytes);
  if (!at->ignore_host && (host > at->o->budgets.cpu_bytes ||
                           (at->o->policy == STW_POLICY_ZERO_INFINITY &&
                            at->o->budgets.storage_bytes > 0)))
    host = state_to_storage(at, p, plan_demand);
  if (!at->ignore_host && host > at->o->budgets.cpu_bytes) {
    if (at->host_need_bytes == 0 || host < at->host_need_bytes)
      at->host_need_bytes = host;
    release_candidate(p);
    return NULL;
  }
  return p;
}

static void
schedule_copy(const StwSchedule *from, StwSchedule *to, guint32 n_items)
{
  *to = *from;
  to->resident = g_memdup2(from->resident, MAX(n_items, 1));
  to->dirty = g_memdup2(from->dirty, MAX(n_items, 1));
  to->actions = g_array_copy(from->actions);
}

/* Schedules one placement and prefetches at most AHEAD_BYTES ahead; with PREFETCH_SEARCH it also
 * tries a short prefetch distance (two parameter chunks) and keeps whichever the simulator finds
 * faster. The items PINNED keeps on the GPU are not held back by that distance where they come
 * back (after CPU Adam stepped them on the host): the policy keeps them there, so they return as
 * soon as there is room (DeepSpeed's ZeRO-3 copies a rank's updated partition back inside
 * step(), its prefetch bucket bounding only the gathers). Returns a plan with predictions, or
 * NULL after noting why there is none. */
static StwPlan *
try_placement(Attempt *at, const guint8 *optim, const guint8 *pinned, const guint8 *hold,
              const guint64 *cap, StwEvictRule rule, gboolean release, guint64 ahead_bytes,
              gboolean prefetch_search)
{
  g_autoptr(StwDemand) d = stw_demand_build(at->t, at->c, optim, &at->o->budgets, cap, hold);
  StwEngineOptions eo = { .rule = rule, .release_after_use = release, .pinned = pinned };
  StwSchedule s;
  if (!stw_schedule_steady(d, &eo, &s)) {
    note_failure(at, &s, d);
    stw_schedule_clear(&s);
    return NULL;
  }
  /* the plan is evaluated against its own demand: the budget's capacities, nothing held; the
   * engine's demand is that one unless the policy held items or kept reserves */
  g_autoptr(StwDemand) own = NULL;
  if (hold != NULL || !plan_capacities(at, cap))
    own = stw_demand_build(at->t, at->c, optim, &at->o->budgets, NULL, NULL);
  const StwDemand *pd = own != NULL ? own : d;
  StwPlan *best = NULL;
  if (prefetch_search) {
    StwSchedule near;
    schedule_copy(&s, &near, d->n_items);
    stw_schedule_hoist(d, &near, 2 * param_chunk_bytes(at->c), pinned);
    stw_schedule_write_back_early(d, &near);
    best = make_plan(at, optim, &near, pd);
  }
  stw_schedule_hoist(d, &s, ahead_bytes, pinned);
  stw_schedule_write_back_early(d, &s);
  StwPlan *far = make_plan(at, optim, &s, pd);
  if (far == NULL)
    return best;
  if (best == NULL || compare(far, best, at->o->objective) <= 0) {
    release_candidate(best);
    return far;
  }
  release_candidate(far);
  return best;
}

/* Marks the optimizer state (master, momentum, variance) of chunks [0, j) pinned. With several
 * ranks only rank 0's own chunks have state here, and every chunk takes the placement of its
 * group's first chunk, which is what its owner does with it. */
static void
pin_state(const Attempt *at, guint8 *pinned, guint8 *optim, guint32 j, StwOptimPlace rest)
{
  memset(pinned, 0, at->n_items);
  guint32 world = at->c->world;
  for (guint32 i = 0; i < at->n; i++) {
    guint32 lead = i / world * world;
    optim[i] = lead < j ? STW_OPTIM_GPU_RESIDENT : rest;
    for (int l = STW_LIST_MASTER; i < j && l < STW_N_LISTS && stw_chunking_owned(at->c, i); l++)
      pinned[stw_plan_item(at->c, (StwChunkList)l, i)] = 1;
  }
}

/* PatrickStar's margin rule: the optimizer state of chunks [0, j) lives on the GPU in the
 * margin space, the USABLE share of the budget that neither the peak non-model data nor the
 * rank's own parameter chunks take, nor, with several ranks, the gathered chunks of the groups in
 * use (two: an op can span a group's end), whose gradients stay until their reduce-scatter; of
 * that, the MARGIN_SHARE the optimizer may take (Gemini's gpu_margin_mem_ratio). Returns j. */
static guint32
margin_prefix(const Attempt *at, double usable_share, double margin_share)
{
  guint64 usable = (guint64)((double)at->o->budgets.gpu_bytes * usable_share);
  guint64 peak = 0;
  for (guint32 k = 0; k < at->t->ops->len; k++)
    peak = MAX(peak, stw_trace_op(at->t, k)->nonmodel_peak_bytes);
  guint64 taken = peak + at->o->budgets.reserved_bytes;
  for (guint32 i = 0; i < at->n; i++)
    taken += stw_chunking_owned(at->c, i) ? stw_chunk_bytes(at->c, i, STW_LIST_PARAM) : 0;
  if (at->c->world > 1)
    taken += 2 * (guint64)(at->c->world - 1) * param_chunk_bytes(at->c);
  guint64 margin = (guint64)((double)(usable > taken ? usable - taken : 0) * margin_share);
  guint32 j = 0;
  for (guint64 sum = 0; j < at->n; j++) {
    sum += state_bytes(at, j);
    if (sum > margin)
      break;
  }
  return j;
}

/* The largest J whose pinned optimizer state fits beside every op's own chunks. */
static guint32
max_pinned_state(const Attempt *at, const guint64 *cap)
{
  g_autofree guint8 *optim = g_malloc0(at->n); /* CPU Adam: optimizer ops need no chunks */
  g_autoptr(StwDemand) d = stw_demand_build(at->t, at->c, optim, &at->o->budgets, cap, NULL);
  guint64 slack = G_MAXUINT64;
  for (guint32 k = 0; k < d->n_steps; k++) {
    guint64 need = 0;
    for (guint32 i = d->need_start[k]; i < d->need_start[k + 1]; i++)
      need = stw_cost_add(need, d->bytes[d->need[i]]);
    slack = MIN(slack, d->capacity[k] > need ? d->capacity[k] - need : 0);
  }
  guint32 j = 0;
  guint64 sum = 0;
  while (j < at->n) {
    guint64 state = state_bytes(at, j);
    if (sum + state > slack)
      break;
    sum += state;
    j++;
  }
  return j;
}

/* PatrickStar measures the memory its margin can take while it runs: where the margin rule's
 * prefix leaves too little for an op, it takes less, halving down to none. */
static StwPlan *
plan_patrickstar(Attempt *at)
{
  g_autofree guint64 *cap = capacities(at, TRUE);
  g_autofree guint8 *optim = g_malloc0(at->n);
  g_autofree guint8 *pinned = g_malloc0(at->n_items);
  for (guint32 j = margin_prefix(at, PSTAR_USABLE, at->o->margin_share);; j /= 2) {
    pin_state(at, pinned, optim, j, STW_OPTIM_CPU);
    StwPlan *p = try_placement(at, optim, pinned, NULL, cap, STW_EVICT_FARTHEST, FALSE, 0, FALSE);
    if (p != NULL || j == 0)
      return p;
  }
}

static StwPlan *
plan_zero_offload(Attempt *at)
{
  g_autofree guint64 *cap = capacities(at, FALSE);
  g_autofree guint8 *optim = g_malloc0(at->n);
  /* every rank keeps its own fp16 chunks through forward and backward; at stage 2 the others'
   * too, the whole model (with several ranks: gathered again after each step); at stage 3 it
   * gathers the others' for each use, prefetching a bucket ahead, and releases them after */
  if (at->o->zero_stage == 3) { /* its own chunks pinned: gathers come and go around them */
    g_autofree guint8 *pinned = g_malloc0(at->n_items);
    for (guint32 i = 0; i < at->n; i++)
      if (stw_chunking_owned(at->c, i))
        pinned[stw_plan_item(at->c, STW_LIST_PARAM, i)] = 1;
    guint64 bucket = at->o->prefetch_bucket_elems * stw_dtype_bytes(at->c->dtype);
    return try_placement(at, optim, pinned, NULL, cap, STW_EVICT_FARTHEST, TRUE, bucket, FALSE);
  }
  g_autofree guint8 *hold = g_malloc0(at->n_items);
  for (guint32 i = 0; i < at->n; i++) {
    if (stw_chunking_owned(at->c, i))
      hold[stw_plan_item(at->c, STW_LIST_PARAM, i)] = 1;
  }
  for (guint32 g = 0; g < stw_chunking_groups(at->c); g++)
    hold[stw_plan_group_item(at->c, g)] = 1;
  /* each chunk back as soon as its CPU Adam is done: DeepSpeed copies the new 16-bit weights to
   * the GPU inside step(), tile by tile behind the Adam */
  return try_placement(at, optim, NULL, hold, cap, STW_EVICT_FARTHEST, FALSE, G_MAXUINT64, FALSE);
}

static StwPlan *
plan_zero_infinity(Attempt *at)
{
  g_autofree guint64 *cap = capacities(at, FALSE);
  g_autofree guint8 *optim = g_malloc0(at->n);
  guint64 bucket = at->o->prefetch_bucket_elems * stw_dtype_bytes(at->c->dtype);
  return try_placement(at, optim, NULL, NULL, cap, STW_EVICT_FARTHEST, TRUE, bucket, FALSE);
}

/* Gemini's static placement: chunks [0, m) live on the GPU with their optimizer state (GPU
 * Adam); the others are fetched when used, released after, and stepped by CPU Adam. */
static StwPlan *
plan_gemini_m(Attempt *at, const guint64 *cap, guint32 m)
{
  g_autofree guint8 *optim = g_malloc0(at->n);
  g_autofree guint8 *pinned = g_malloc0(at->n_items);
  pin_state(at, pinned, optim, m, STW_OPTIM_CPU);
  for (guint32 i = 0; i < m; i++) {
    if (stw_chunking_owned(at->c, i))
      pinned[stw_plan_item(at->c, STW_LIST_PARAM, i)] = 1;
  }
  return try_placement(at, optim, pinned, NULL, cap, STW_EVICT_FARTHEST, TRUE, 0, FALSE);
}

static StwPlan *
plan_gemini_static(Attempt *at)
{
  g_autofree guint64 *cap = capacities(at, FALSE);
  if (at->o->gemini_fraction >= 0) {
    guint32 m = (guint32)MIN(llround(at->o->gemini_fraction * at->n), at->n);
    return plan_gemini_m(at, cap, m);
  }
  /* the largest fraction the GPU holds (the GPU's room only shrinks as m grows), then the host
   * budget at it (the host holds less the larger m is: if it cannot hold m's, no m fits) */
  at->ignore_host = TRUE;
  StwPlan *probe = plan_gemini_m(at, cap, 0);
  guint32 lo = 0, hi = at->n;
  if (probe != NULL) {
    release_candidate(probe);
    while (lo < hi) {
      guint32 mid = lo + (hi - lo + 1) / 2;
      StwPlan *p = plan_gemini_m(at, cap, mid);
      if (p != NULL)
        lo = mid;
      else
        hi = mid - 1;
      release_candidate(p);
    }
  }
  at->ignore_host = FALSE;
  gboolean gpu_fits = probe != NULL;
  at->failed = !gpu_fits && at->failed; /* the probes beyond the largest m were expected to fail */
  return gpu_fits ? plan_gemini_m(at, cap, lo) : NULL;
}

static StwPlan *
plan_lru(Attempt *at)
{
  g_autofree guint64 *cap = capacities(at, FALSE);
  g_autofree guint8 *optim = g_malloc0(at->n);
  return try_placement(at, optim, NULL, NULL, cap, STW_EVICT_LRU, FALSE, 0, FALSE);
}

static StwPlan *
plan_stowage(Attempt *at)
{
  g_autofree guint64 *cap = capacities(at, FALSE);
  g_autofree guint8 *optim = g_malloc0(at->n);
  g_autofree guint8 *pinned = g_malloc0(at->n_items);
  guint32 j_max = max_pinned_state(at, cap);
  guint32 j_margin = MIN(margin_prefix(at, 1.0, 1.0), j_max);
  /* optimizer state pinned on the GPU for a prefix of chunks, the rest stepped on the CPU or
   * in margin space; the candidates halve the prefix down from the most that fits */
  GArray *js = g_array_new(FALSE, FALSE, sizeof(guint32));
  for (guint32 j = j_max;; j = at->quick ? 0 : j / 2) {
    g_array_append_val(js, j);
    if (j == 0)
      break;
  }
  /* and the prefix PatrickStar's margin rule picks, so its placement is always a candidate */
  gboolean seen = FALSE;
  for (guint i = 0; i < js->len; i++)
    seen |= g_array_index(js, guint32, i) == j_margin;
  if (!seen)
    g_array_append_val(js, j_margin);
  StwPlan *best = NULL;
  for (guint i = 0; i < js->len; i++) {
    guint32 j = g_array_index(js, guint32, i);
    for (int rest = STW_OPTIM_CPU; rest <= STW_OPTIM_GPU; rest++) {
      if (j == at->n && rest == STW_OPTIM_GPU)
        continue; /* nothing left to place */
      pin_state(at, pinned, optim, j, (StwOptimPlace)rest);
      for (int rule = at->quick ? STW_EVICT_FARTHEST_CLEAN : STW_EVICT_FARTHEST;
           rule <= STW_EVICT_FARTHEST_CLEAN; rule++)
        best = keep_better(at, best, try_placement(at, optim, pinned, NULL, cap,
                                                   (StwEvictRule)rule, FALSE, G_MAXUINT64,
                                                   !at->quick));
    }
  }
  g_array_unref(js);
  /* and in the full pass every baseline's own placement, so that no baseline fits where the
   * default does not */
  if (!at->quick) {
    StwPlan *(*baselines[])(Attempt *) = { plan_patrickstar, plan_zero_offload,
                                            plan_zero_infinity, plan_gemini_static, plan_lru };
    for (gsize i = 0; i < G_N_ELEMENTS(baselines); i++)
      best = keep_better(at, best, baselines[i](at));
  }
  return best;
}

static StwPlan *
plan_policy(Attempt *at)
{
  switch (at->o->policy) {
  case STW_POLICY_STOWAGE: return plan_stowage(at);
  case STW_POLICY_PATRICKSTAR: return plan_patrickstar(at);
  case STW_POLICY_ZERO_OFFLOAD: return plan_zero_offload(at);
  case STW_POLICY_ZERO_INFINITY: return plan_zero_infinity(at);
  case STW_POLICY_GEMINI_STATIC: return plan_gemini_static(at);
  case STW_POLICY_LRU: return plan_lru(at);
  default: g_assert_not_reached();
  }
}

/* The smallest budget a layout can ever use: every op's own chunks beside its non-model peak. */
static guint64
min_budget(const StwTrace *t, const StwChunking *c, const StwBudgets *b, guint32 *op_out)
{
  guint32 n = stw_chunking_count(c);
  g_autofree guint8 *optim = g_malloc0(n);
  StwBudgets unlimited = *b;
  unlimited.gpu_bytes = G_MAXUINT64 / 2;
  g_autoptr(StwDemand) d = stw_demand_build(t, c, optim, &unlimited, NULL, NULL);
  guint64 worst = 0;
  for (guint32 k = 0; k < d->n_steps; k++) {
    guint64 need = unlimited.gpu_bytes - d->capacity[k];
    for (guint32 i = d->need_start[k]; i < d->need_start[k + 1]; i++)
      need = stw_cost_add(need, d->bytes[d->need[i]]);
    if (need > worst) {
      worst = need;
      *op_out = k;
    }
  }
  return worst;
}

/* What of O's budget its device's process takes (stw_budgets_process_share), said for an error:
 * " (X of the budget kept free: ...)", or "" where it takes none. */
char *
stw_planner_process_said(const StwTrace *t, const StwPlannerOptions *o)
{
  StwPlannerOptions on = *o; /* (again where O is on its device already: the same) */
  stw_planner_on_device(&on, t);
  guint64 share = stw_budgets_process_share(&on.budgets, &on.hw);
  if (share == 0)
    return NULL;
  const char *origin = NULL;
  stw_gpu_process_bytes(t, &on.hw, &origin);
  g_autofree char *kept = stw_size_format(share);
  g_autofree char *process = stw_size_format(on.hw.gpu_process_bytes);
  g_autofree char *device = stw_size_format(MAX(on.hw.gpu_memory_bytes, on.budgets.gpu_bytes));
  return g_strdup_printf("%s of the budget kept free: a process holds %s of the GPU's %s outside "
                         "its tensors (its CUDA context and libraries; %s)", kept, process,
                         device, origin);
}

/* stw_planner_process_said in parentheses after a budget, or nothing */
static char *
process_said(const StwTrace *t, const StwPlannerOptions *o)
{
  g_autofree char *said = stw_planner_process_said(t, o);
  return said != NULL ? g_strdup_printf(" (%s)", said) : g_strdup("");
}

/* Why no plan of the policy fits: the host budget when some plan fitted the GPU (HOST_NEED, the
 * least host memory one needed), else the GPU shortfall AT met first. */
static void
infeasible_error(const StwTrace *t, const StwPlannerOptions *o, const Attempt *at,
                 guint64 host_need, guint64 min_bytes, guint32 min_op, guint64 min_chunk,
                 GError **error)
{
  if (host_need > 0) {
    g_autofree char *need = stw_size_format(host_need);
    g_autofree char *over = stw_size_format(stw_hardware_host_overhead(&o->hw));
    g_autofree char *have = stw_size_format(o->budgets.cpu_bytes);
    /* the shortfall too: two figures that round alike can be apart by a few KiB */
    g_autofree char *shortb = stw_size_format(host_need - MIN(host_need, o->budgets.cpu_bytes));
    g_autoptr(GArray) moves = stw_trace_activation_moves(t); /* the trace's own, as recorded */
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE,
                "policy %s cannot fit the host budget of %s: its plans that fit the GPU need at "
                "least %s of host memory (chunks%s, and %s per rank for the process), %s more",
                stw_policy_names[o->policy], have, need,
                moves->len > 0 ? " and offloaded activations" : "", over, shortb);
    return;
  }
  const StwOp *op = stw_trace_op(t, at->fail_op);
  g_autofree char *budget = stw_size_format(o->budgets.gpu_bytes);
  g_autofree char *need = stw_size_format(at->fail_need_bytes);
  g_autofree char *cap = stw_size_format(at->fail_capacity);
  g_autofree char *shortb = stw_size_format(at->fail_need_bytes - MIN(at->fail_need_bytes,
                                                                       at->fail_capacity));
  g_autofree char *minb = stw_size_format(min_bytes);
  g_autofree char *process = process_said(t, o);
  /* where the groups' gathers are what cannot fit, the layout that gathers less */
  guint32 world = stw_planner_world(t, o);
  g_autofree char *groups = stw_planner_layout(o, world) == STW_LAYOUT_GROUPS && world > 1 &&
                                    min_bytes > o->budgets.gpu_bytes
                                ? g_strdup_printf(", in PatrickStar's groups: a GPU gathers a "
                                                  "group of %u whole chunks for each use; "
                                                  "--layout shards splits every chunk across "
                                                  "the GPUs instead, as ZeRO-3 does, which "
                                                  "train does not replay", world)
                                : g_strdup("");
  g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE,
              "policy %s cannot fit a GPU budget of %s%s: at op %u (%s, %s) it needs %s of "
              "chunks resident where %s is left beside non-model memory%s: %s short. The "
              "smallest budget any plan can use is %s (chunk size %" G_GUINT64_FORMAT
              ", tightest at op %u %s%s)", stw_policy_names[o->policy], budget, process,
              at->fail_op, op->name, stw_stage_name(op->stage), need, cap,
              o->policy == STW_POLICY_PATRICKSTAR ? " and PatrickStar's reserves" : "",
              shortb, minb, min_chunk, min_op, stw_trace_op(t, min_op)->name, groups);
}

guint32
stw_planner_world(const StwTrace *t, const StwPlannerOptions *o)
{
  return o->world_size != 0 ? o->world_size : MAX(t->device.world_size, 1);
}

gboolean
stw_planner_check_topology(const StwHardware *hw, guint32 world, guint32 nodes, GError **error)
{
  const StwPlannerOptions o_ = { .hw = *hw }, *o = &o_;
  nodes = MAX(nodes, 1);
  guint32 per_node = world / nodes;
  if (world % nodes != 0) {
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INVALID,
                "%u nodes do not share %u GPUs evenly", nodes, world);
    return FALSE;
  }
  if (o->hw.node_gpus > 0 && per_node > o->hw.node_gpus) {
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INVALID,
                "%u GPUs per node, and a node of hardware profile %s holds %u: give more nodes "
                "(--nodes) or fewer GPUs", per_node, o->hw.name, o->hw.node_gpus);
    return FALSE;
  }
  if (per_node > 1 && o->hw.interconnect_bytes_per_s <= 0) {
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INVALID,
                "%u GPUs need the GPU-to-GPU link for their collectives, and hardware profile "
                "%s has none: give it interconnect.bytes_per_s and latency_ns",
                world, o->hw.name);
    return FALSE;
  }
  if (nodes > 1 && o->hw.network_bytes_per_s <= 0) {
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INVALID,
                "%u nodes need a network between them, and hardware profile %s has none: give "
                "it network.bytes_per_s and latency_ns", nodes, o->hw.name);
    return FALSE;
  }
  return TRUE;
}

guint64
stw_planner_startup_host_bytes(const StwTrace *t, const StwPlannerOptions *o,
                               guint64 *rank_model)
{
  guint64 model = 0;
  for (guint32 i = 0; t->model.init != STW_INIT_SHARDED && i < t->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(t, i);
    model = stw_cost_add(model, x->numel * (t->model.init == STW_INIT_HOST_FP32
                                                ? 4
                                                : stw_dtype_bytes(x->dtype)));
  }
  if (rank_model != NULL)
    *rank_model = model;
  if (model == 0)
    return 0;
  guint64 rank = stw_cost_add(model, stw_process_bytes(t, &o->hw, NULL));
  guint32 world = stw_planner_world(t, o);
  return rank > STW_COST_MAX / world ? STW_COST_MAX : rank * world;
}

/* The loop's start-up within the host budget (stw_planner_startup_host_bytes) */
static gboolean
check_startup(const StwTrace *t, const StwPlannerOptions *o, GError **error)
{
  guint64 model = 0, all = stw_planner_startup_host_bytes(t, o, &model);
  if (all <= o->budgets.cpu_bytes)
    return TRUE;
  g_autofree char *have = stw_size_format(o->budgets.cpu_bytes);
  g_autofree char *per = stw_size_format(model);
  g_autofree char *process = stw_size_format(stw_process_bytes(t, &o->hw, NULL));
  g_autofree char *need = stw_size_format(all);
  g_autofree char *over = stw_size_format(all - o->budgets.cpu_bytes);
  guint32 world = stw_planner_world(t, o);
  g_autofree char *who = world > 1 ? g_strdup_printf("each of its %u ranks", world)
                                   : g_strdup("the loop");
  g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE,
              "policy %s cannot fit the host budget of %s at start-up: %s builds the whole "
              "model on the host%s before it is chunked (the trace's model.init \"%s\": %s a "
              "rank, beside its process's %s), %s in all, %s more",
              stw_policy_names[o->policy], have, who,
              t->model.init == STW_INIT_HOST_FP32 ? " in fp32" : "",
              stw_init_names[t->model.init], per, process, need, over);
  return FALSE;
}

static gboolean
check_inputs(const StwTrace *t, const StwPlannerOptions *o, GError **error)
{
  if (!stw_planner_check_topology(&o->hw, stw_planner_world(t, o), o->nodes, error))
    return FALSE;
  if (stw_planner_world(t, o) > STW_PLAN_MAX_WORLD) {
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INVALID, "%u GPUs: at most %u are "
                "supported", stw_planner_world(t, o), STW_PLAN_MAX_WORLD);
    return FALSE;
  }
  /* the ranks reduce-scatter gradients out of the chunks, where the framework's held to the
   * step never are (those copied to the host are reduce-scattered as they go) */
  if (stw_planner_world(t, o) > 1 && t->model.gradients == STW_GRADIENTS_FRAMEWORK) {
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INVALID, "%u GPUs: the trace's gradients "
                "are the framework's own tensors (model.gradients \"%s\"), which the "
                "ranks cannot reduce-scatter out of the chunks; plan it for one GPU",
                stw_planner_world(t, o), stw_gradients_names[t->model.gradients]);
    return FALSE;
  }
  if (o->budgets.gpu_bytes == 0) {
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INVALID, "the GPU budget must be positive");
    return FALSE;
  }
  if (o->budgets.reserved_bytes >= o->budgets.gpu_bytes) {
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INVALID,
                "the reserve (%" G_GUINT64_FORMAT " bytes) leaves nothing of the GPU budget (%"
                G_GUINT64_FORMAT " bytes)", o->budgets.reserved_bytes, o->budgets.gpu_bytes);
    return FALSE;
  }
  return TRUE;
}

/* The search's state: the best plan so far and what the failures said. */
typedef struct {
  const StwTrace *t;
  const StwPlannerOptions *o;
  StwPlan *best;
  StwChunking *best_layout;
  StwChunking *layout;       /* of the plan evaluate_size returned */
  Attempt first_failure;
  guint64 host_need;         /* the least host memory of the plans that fitted the GPU only */
  guint64 min_bytes, min_chunk;
  guint32 min_op;
  gboolean quick;            /* one size given: planned with the first pass's placements only */
  GError *too_many;          /* the first size searched whose shards a layout cannot hold */
} Search;

typedef struct {
  guint64 size;
  guint64 cost_ns, bytes;
} SizeScore;

static int
score_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
  const SizeScore *x = a, *y = b;
  const StwPlannerOptions *o = data;
  guint64 x1 = o->objective == STW_OBJECTIVE_TIME ? x->cost_ns : x->bytes;
  guint64 y1 = o->objective == STW_OBJECTIVE_TIME ? y->cost_ns : y->bytes;
  if (x1 != y1)
    return x1 < y1 ? -1 : 1;
  return x->size < y->size ? -1 : x->size > y->size;
}

/* Keeps P (whose layout is SE->layout) if it beats the best so far, ties going to less waste. */
static void
keep_layout(Search *se, StwPlan *p)
{
  StwObjective obj = se->o->objective;
  StwChunking *c = se->layout;
  if (better_for(p, se->best, obj) ||
      (compare(p, se->best, obj) == 0 && stw_chunking_wasted_bytes(c, STW_LIST_PARAM) <
                                             stw_chunking_wasted_bytes(se->best_layout,
                                                                       STW_LIST_PARAM))) {
    release_candidate(se->best);
    stw_chunking_free(se->best_layout);
    se->best = p;
    se->best_layout = c;
  } else {
    release_candidate(p);
    stw_chunking_free(c);
  }
  se->layout = NULL;
}

/* Packs SIZE and plans it (QUICK: with the search's first-pass placements). *OUT is the plan,
 * its layout in SE->layout, or NULL when the policy cannot fit it (noted in SE). Fails only
 * when the tensors cannot be packed. */
static gboolean
evaluate_size(Search *se, guint64 size, gboolean quick, StwPlan **out, GError **error)
{
  *out = NULL;
  se->layout = NULL;
  guint32 world = stw_planner_world(se->t, se->o);
  GError *local = NULL;
  StwChunking *c = stw_planner_layout(se->o, world) == STW_LAYOUT_SHARDS
                       ? stw_chunking_pack_shards(se->t, size, world, se->o->allow_oversized,
                                                  &local)
                       : stw_chunking_pack(se->t, size, se->o->allow_oversized, &local);
  /* a searched size too small for so many shards: no plan there, the larger ones tried */
  if (c == NULL && se->o->chunk_size_elems == 0 &&
      g_error_matches(local, STW_CHUNKS_ERROR, STW_CHUNKS_ERROR_TOO_MANY)) {
    if (se->too_many == NULL)
      se->too_many = g_steal_pointer(&local);
    g_clear_error(&local);
    return TRUE;
  }
  if (c == NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  if (se->o->state_dtype >= 0)
    c->state_dtype = (StwDtype)se->o->state_dtype;
  stw_chunking_set_world(c, world);
  stw_chunking_trim_tails(c);
  c->nodes = MAX(se->o->nodes, 1);
  guint32 op = 0;
  guint64 mb = min_budget(se->t, c, &se->o->budgets, &op);
  if (se->min_bytes == 0 || mb < se->min_bytes) {
    se->min_bytes = mb;
    se->min_op = op;
    se->min_chunk = size;
  }
  Attempt at = { .t = se->t, .o = se->o, .c = c, .n = stw_chunking_count(c),
                 .n_items = stw_plan_n_items(c), .quick = quick };
  *out = plan_policy(&at);
  if (at.host_need_bytes > 0 && (se->host_need == 0 || at.host_need_bytes < se->host_need))
    se->host_need = at.host_need_bytes;
  if (*out == NULL) {
    if (!se->first_failure.failed)
      se->first_failure = at;
    stw_chunking_free(c);
  } else {
    se->layout = c;
  }
  return TRUE;
}

/* The chunk sizes to plan: the size given, else the search's (ascending). */
static GArray *
candidate_sizes(const StwTrace *t, const StwPlannerOptions *o)
{
  if (o->chunk_size_elems == 0)
    return stw_planner_chunk_sizes(t);
  GArray *sizes = g_array_new(FALSE, FALSE, sizeof(guint64));
  g_array_append_val(sizes, o->chunk_size_elems);
  return sizes;
}

/* FALSE with ERROR when the non-model memory alone leaves no room for any chunk. */
static gboolean
check_nonmodel(const StwTrace *t, const StwPlannerOptions *o, GError **error)
{
  guint64 over = 0;
  guint32 k = stw_plan_nonmodel_overflow(t, &o->budgets, &over);
  if (k == G_MAXUINT32)
    return TRUE;
  const StwOp *op = stw_trace_op(t, k);
  g_autofree char *budget = stw_size_format(o->budgets.gpu_bytes);
  g_autofree char *ob = stw_size_format(over);
  g_autofree char *need = stw_size_format(o->budgets.gpu_bytes + over);
  /* what is left to lower the activations with; a trace the planner recomputed all of says so */
  gboolean flash = t->model.attention == STW_ATTENTION_FLASH;
  gboolean planned = t->blocks->len > 0 &&
                     g_array_index(t->blocks, StwBlock, 0).choice == STW_BLOCK_RECOMPUTE;
  const char *means = t->model.checkpointing
                          ? (flash ? "the batch or the sequence length"
                                   : "the batch, sequence length or activation memory (--attention "
                                     "flash)")
                      : flash ? "the batch, sequence length or activation memory (--checkpointing)"
                              : "the batch, sequence length or activation memory "
                                "(--checkpointing, --attention flash)";
  g_autofree char *process = process_said(t, o);
  g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE,
              "no plan fits a GPU budget of %s%s: at op %u (%s, %s) the non-model memory "
              "alone, with the reserve, needs %s, %s short, before any chunk%s. The smallest "
              "budget any plan can use is above %s; reduce %s", budget, process, k, op->name,
              stw_stage_name(op->stage), need, ob,
              t->model.checkpointing && planned ? ", every block recomputed" : "", need, means);
  return FALSE;
}

/* A baseline policy without a chunk size given takes the smallest size that fits, as a user of
 * its system would raise the chunk size until the model fits: the first of SIZES it plans. */
static gboolean
first_size_that_fits(Search *se, const GArray *sizes, GError **error)
{
  for (guint i = 0; i < sizes->len && se->best == NULL; i++) {
    StwPlan *p = NULL;
    if (!evaluate_size(se, g_array_index(sizes, guint64, i), FALSE, &p, error))
      return FALSE;
    if (p != NULL)
      keep_layout(se, p);
    if (se->o->progress != NULL)
      se->o->progress(i + 1, sizes->len, se->o->progress_data);
  }
  return TRUE;
}

/* The search runs in two passes: every size with a few optimizer placements, then the two best
 * sizes and the smallest (the baselines' size, so that they stay candidates) with all of them.
 * Sizes only move the optimum a little once the placement is fixed, and the second pass is where
 * placements differ. Leaves the best plan in SE; FALSE only when the tensors cannot be packed. */
static gboolean
search_sizes(Search *se, const GArray *sizes, GError **error)
{
  const StwPlannerOptions *o = se->o;
  if (sizes->len > 1 && o->policy != STW_POLICY_STOWAGE)
    return first_size_that_fits(se, sizes, error);
  gboolean search = sizes->len > 1;
  g_autoptr(GArray) quick = g_array_new(FALSE, FALSE, sizeof(SizeScore));
  for (guint i = 0; i < sizes->len; i++) {
    guint64 size = g_array_index(sizes, guint64, i);
    StwPlan *p = NULL;
    if (!evaluate_size(se, size, search || se->quick, &p, error))
      return FALSE;
    if (p != NULL && search) {
      SizeScore sc = { size, p->pred.cost_ns, p->pred.h2d_bytes + p->pred.d2h_bytes };
      g_array_append_val(quick, sc);
      release_candidate(p);
      stw_chunking_free(se->layout);
    } else if (p != NULL) {
      keep_layout(se, p);
    }
    if (o->progress != NULL)
      o->progress(i + 1, sizes->len + (search ? 3 : 0), o->progress_data);
  }
  if (!search)
    return TRUE;
  g_array_sort_with_data(quick, score_cmp, (gpointer)o);
  /* the finalists: the two best of the first pass, and always the smallest size, where every
   * baseline plans (the full pass includes their placements), even when the first pass found
   * nothing there or anywhere */
  g_autoptr(GArray) finalists = g_array_new(FALSE, FALSE, sizeof(guint64));
  guint64 smallest = g_array_index(sizes, guint64, 0);
  gboolean has_smallest = FALSE;
  for (guint i = 0; i < MIN(quick->len, 2); i++) {
    guint64 size = g_array_index(quick, SizeScore, i).size;
    g_array_append_val(finalists, size);
    has_smallest |= size == smallest;
  }
  if (!has_smallest)
    g_array_append_val(finalists, smallest);
  for (guint i = 0; i < finalists->len; i++) {
    StwPlan *p = NULL;
    if (evaluate_size(se, g_array_index(finalists, guint64, i), FALSE, &p, NULL) && p != NULL)
      keep_layout(se, p);
    if (o->progress != NULL)
      o->progress(sizes->len + i + 1, sizes->len + finalists->len, o->progress_data);
  }
  return TRUE;
}

/* The best plan of T as recorded (its blocks as they are); QUICK: where O gives the chunk size,
 * with the search's first-pass placements only (a candidate of a wider search). */
static StwPlan *
plan_recorded(const StwTrace *recorded, const char *trace_file, const StwPlannerOptions *o,
              gboolean quick, GError **error)
{
  /* the loop's own buffers beside the model on each rank (DeepSpeed's), as stw_plan_trace
   * derives them for check and simulate */
  g_autoptr(StwTrace) buffered = stw_trace_with_loop_buffers(recorded,
                                                             stw_planner_world(recorded, o));
  const StwTrace *t = buffered != NULL ? buffered : recorded;
  if (!check_inputs(t, o, error) || !check_nonmodel(t, o, error) ||
      !check_startup(t, o, error))
    return NULL;
  g_autoptr(GArray) sizes = candidate_sizes(t, o);
  Search se = { .t = t, .o = o, .quick = quick };
  gboolean searched = search_sizes(&se, sizes, error);
  GError *too_many = g_steal_pointer(&se.too_many);
  if (!searched) {
    g_clear_error(&too_many);
    release_candidate(se.best);
    stw_chunking_free(se.best_layout);
    return NULL;
  }
  StwPlan *best = se.best;
  if (best == NULL && too_many != NULL && !se.first_failure.failed && se.host_need == 0) {
    g_propagate_error(error, too_many); /* no size the search tried could be planned */
    return NULL;
  }
  g_clear_error(&too_many);
  if (best == NULL) {
    infeasible_error(t, o, &se.first_failure, se.host_need, se.min_bytes, se.min_op,
                     se.min_chunk, error);
    return NULL;
  }
  best->chunking = se.best_layout; /* the plan owns its layout from here on */
  if (stw_cost_add(best->pred.cpu_bytes, best->pred.host_overhead_bytes) > o->budgets.cpu_bytes) {
    g_autofree char *need = stw_size_format(best->pred.cpu_bytes);
    g_autofree char *have = stw_size_format(o->budgets.cpu_bytes);
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE,
                "the plan keeps %s of chunks in host memory, more than the CPU budget of %s",
                need, have);
    stw_plan_free(best);
    return NULL;
  }
  g_free(best->trace_digest);
  best->trace_digest = stw_trace_digest(recorded);
  g_free(best->trace_file);
  best->trace_file = g_strdup(trace_file != NULL ? trace_file : "");
  best->pred.lower_bound_bytes = stw_plan_lower_bound(best, t);
  g_autoptr(GArray) moves = stw_trace_activation_moves(t); /* the blocks' own, as recorded */
  g_array_append_vals(best->moves, moves->data, moves->len);
  if (!stw_plan_within_limits(best, error)) {
    stw_plan_free(best);
    return NULL;
  }
  return best;
}

gboolean
stw_planner_decides_blocks(const StwTrace *t)
{
  if (t->blocks->len == 0 || t->model.checkpointing || stw_trace_micro_steps(t) > 1)
    return FALSE;
  for (guint32 b = 0; b < t->blocks->len; b++) /* a trace a plan decided already */
    if (g_array_index(t->blocks, StwBlock, b).choice != STW_BLOCK_KEEP)
      return FALSE;
  return TRUE;
}

/* stw_planner_plan_blocks, QUICK as plan_recorded's. */
static StwPlan *
plan_blocks(const StwTrace *t, const guint8 *choice, const char *trace_file,
            const StwPlannerOptions *o, gboolean quick, GError **error)
{
  gboolean any = FALSE;
  for (guint32 b = 0; b < t->blocks->len; b++)
    any |= choice[b] != STW_BLOCK_KEEP;
  if (!any)
    return plan_recorded(t, trace_file, o, quick, error);
  g_autoptr(StwTrace) decided = stw_trace_decide(t, choice, error);
  StwPlan *p = decided != NULL ? plan_recorded(decided, trace_file, o, quick, error) : NULL;
  if (p == NULL)
    return NULL;
  for (guint32 b = 0; b < t->blocks->len; b++) {
    if (choice[b] == STW_BLOCK_RECOMPUTE)
      g_array_append_val(p->recompute, b);
    else if (choice[b] == STW_BLOCK_OFFLOAD)
      g_array_append_val(p->offload, b);
  }
  g_free(p->trace_digest);
  p->trace_digest = stw_trace_digest(t);
  return p;
}

void
stw_planner_on_device(StwPlannerOptions *o, const StwTrace *t)
{
  o->hw.gpu_process_bytes = stw_gpu_process_bytes(t, &o->hw, NULL);
  stw_budgets_on_device(&o->budgets, &o->hw);
  if (o->measured_times)
    o->retiming = (StwRetiming){ 0 };
  else
    stw_retiming(t, &o->hw, &o->retiming, NULL, NULL);
}

StwPlan *
stw_planner_plan_blocks(const StwTrace *t, const guint8 *choice, const char *trace_file,
                        const StwPlannerOptions *o, GError **error)
{
  StwPlannerOptions on_device = *o;
  stw_planner_on_device(&on_device, t);
  return plan_blocks(t, choice, trace_file, &on_device, FALSE, error);
}

/* The search of AUTO over the plans F(j, k): of blocks [0, k), j offloaded, spread evenly among
 * them, the others recomputed; the rest kept. Each is planned once. */
typedef struct {
  const StwTrace *t;
  const char *trace_file;
  const StwPlannerOptions *o;
  guint32 n;                 /* blocks */
  StwPlan *best;             /* the best planned in full */
  StwPlan *best_quick;       /* the best of those planned at a given size, quickly */
  GError *reason;            /* the first failure (the leanest candidate is tried first) */
  GHashTable *tried;         /* j * (n + 1) + k + 1 -> Tried */
} Activations;

typedef struct {
  guint64 score;             /* the objective; infeasible_score where it does not fit */
  guint64 size;              /* its chunk size (elements); 0 where it does not fit */
} Tried;

/* Whether plan A's blocks cost less than B's where their objectives tie: fewer decided, then
 * fewer recomputed (an offload's copies may hide behind compute; a recomputation cannot). */
static gboolean
leaner_blocks(const StwPlan *a, const StwPlan *b)
{
  guint32 da = a->recompute->len + a->offload->len, db = b->recompute->len + b->offload->len;
  return da != db ? da < db : a->recompute->len < b->recompute->len;
}

/* The score of F(j, k) for the search where it does not fit: above every plan's, and falling as
 * k grows (more decided blocks free more memory), so that a search for the least score walks
 * out of what does not fit. */
static guint64
infeasible_score(const Activations *a, guint32 k)
{
  return G_MAXUINT64 / 2 + (a->n - k);
}

/* Plans F(j, k) (once) at chunk size SIZE (0: the size searched for), keeping the best. */
static const Tried *
try_blocks(Activations *a, guint32 j, guint32 k, guint64 size)
{
  gpointer key = GUINT_TO_POINTER((guint)(j * (a->n + 1) + k + 1));
  const Tried *seen = g_hash_table_lookup(a->tried, key);
  if (seen != NULL)
    return seen;
  g_autofree guint8 *choice = g_new0(guint8, MAX(a->n, 1));
  for (guint64 b = 0; b < k; b++) /* block b offloaded where the j-th multiples step */
    choice[b] = (b + 1) * j / k > b * j / k ? STW_BLOCK_OFFLOAD : STW_BLOCK_RECOMPUTE;
  GError *local = NULL;
  StwPlannerOptions sized = *a->o;
  if (size != 0)
    sized.chunk_size_elems = size;
  StwPlan *p = plan_blocks(a->t, choice, a->trace_file, &sized, size != 0, &local);
  Tried *x = g_new(Tried, 1);
  *x = (Tried){ infeasible_score(a, k), 0 };
  if (p != NULL) {
    x->score = a->o->objective == STW_OBJECTIVE_TIME ? p->pred.cost_ns
                                                     : p->pred.h2d_bytes + p->pred.d2h_bytes;
    x->size = p->chunking->size_elems;
  }
  g_hash_table_insert(a->tried, key, x);
  if (p == NULL) {
    if (a->reason == NULL)
      a->reason = local;
    else
      g_error_free(local);
    return x;
  }
  StwPlan **best = size != 0 ? &a->best_quick : &a->best;
  int c = *best != NULL ? compare(p, *best, a->o->objective) : -1;
  if (c < 0 || (c == 0 && leaner_blocks(p, *best))) {
    stw_plan_free(*best);
    *best = p;
  } else {
    stw_plan_free(p);
  }
  return x;
}

/* One family's plan F(FRACTION * k, k) (fraction 0: recomputing; 1: offloading). */
static const Tried *
try_family(Activations *a, double fraction, guint32 k, guint64 size)
{
  return try_blocks(a, (guint32)(fraction * k + 0.5), k, size);
}

/* The best k of one family: planned in full at the five samples k in {0, n/4, n/2, 3n/4, n},
 * and then, between the best sample's neighbours and at its chunk size, the least score found
 * by bisecting on its slope (score(m) <= score(m + 1): the least is at m or below), as the
 * score falls and rises once in k: more decided blocks cost more compute or copies and free
 * memory for fewer chunk moves. */
static guint32
search_family(Activations *a, double fraction)
{
  guint32 n = a->n, ks[] = { 0, n / 4, n / 2, 3 * n / 4, n }, best = 0;
  Tried least = { G_MAXUINT64, 0 };
  for (gsize i = 0; i < G_N_ELEMENTS(ks); i++) {
    const Tried *x = try_family(a, fraction, ks[i], 0);
    if (x->score < least.score) {
      least = *x;
      best = (guint32)i;
    }
  }
  guint32 lo = ks[best > 0 ? best - 1 : 0], hi = ks[MIN(best + 1, G_N_ELEMENTS(ks) - 1)];
  while (lo < hi) {
    guint32 m = lo + (hi - lo) / 2;
    if (try_family(a, fraction, m, least.size)->score <=
        try_family(a, fraction, m + 1, least.size)->score)
      hi = m;
    else
      lo = m + 1;
  }
  return lo;
}

/* The best of the candidates planned quickly, planned again in full (its chunk size searched
 * for, every placement); the better of it and the best planned in full stays. */
static void
plan_best_quick_in_full(Activations *a)
{
  if (a->best_quick == NULL)
    return;
  g_autofree guint8 *choice = stw_plan_block_choices(a->best_quick, a->n, NULL);
  g_clear_pointer(&a->best_quick, stw_plan_free);
  StwPlan *p = choice != NULL ? plan_blocks(a->t, choice, a->trace_file, a->o, FALSE, NULL)
                              : NULL;
  if (p != NULL && (a->best == NULL || compare(p, a->best, a->o->objective) < 0 ||
                    (compare(p, a->best, a->o->objective) == 0 && leaner_blocks(p, a->best)))) {
    stw_plan_free(a->best);
    a->best = p;
  } else {
    stw_plan_free(p);
  }
}

/* AUTO: which blocks to decide, and how. The earliest blocks keep their activations longest
 * (from their forward to the end of the backward), so deciding them frees the most memory for
 * the longest at the same cost per block (a transformer's blocks are alike): the candidates are
 * F(j, k), the first k blocks decided, j of them offloaded. The offloaded ones are spread among
 * the recomputed (not bunched), so that each one's copies overlap the compute of the blocks
 * around it rather than queue behind each other's on the link. The best k is searched for
 * (search_family) in the recomputing family (j = 0) and the offloading one (j = k); then the
 * best k of each is split: F(k/4, k), F(k/2, k), F(3k/4, k). The plan with the better
 * objective wins; ties go to fewer decided blocks, then fewer recomputed. The samples (keeping,
 * recomputing and offloading every block among them, so that auto is never worse than any)
 * are planned in full; the other candidates quickly, at the chunk size of their family's best
 * sample and with the first pass's placements, and the best of those again in full
 * (plan_best_quick_in_full): a candidate costs a few placements, not the size search.
 * RECOMPUTE and OFFLOAD plan all n one way. */
StwPlan *
stw_planner_plan(const StwTrace *t, const char *trace_file, const StwPlannerOptions *given,
                 GError **error)
{
  StwPlannerOptions on_device = *given; /* the budget as the device leaves it */
  stw_planner_on_device(&on_device, t);
  const StwPlannerOptions *o = &on_device;
  if (o->activations == STW_ACTIVATIONS_KEEP || o->policy != STW_POLICY_STOWAGE ||
      !stw_planner_decides_blocks(t))
    return plan_recorded(t, trace_file, o, FALSE, error);
  guint32 n = t->blocks->len;
  g_autoptr(GHashTable) tried = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  Activations a = { .t = t, .trace_file = trace_file, .o = o, .n = n, .tried = tried };
  if (o->activations == STW_ACTIVATIONS_RECOMPUTE || o->activations == STW_ACTIVATIONS_OFFLOAD) {
    try_blocks(&a, o->activations == STW_ACTIVATIONS_OFFLOAD ? n : 0, n, 0);
  } else {
    try_blocks(&a, 0, n, 0); /* the leanest first: its failure is the one to report */
    guint32 best[] = { search_family(&a, 0.0), search_family(&a, 1.0) };
    guint64 size = a.best != NULL ? a.best->chunking->size_elems : 0;
    for (gsize i = 0; i < G_N_ELEMENTS(best); i++)
      for (int q = 1; q < 4; q++)
        try_family(&a, q / 4.0, best[i], size);
    plan_best_quick_in_full(&a);
  }
  if (a.best == NULL)
    g_propagate_error(error, a.reason);
  else
    g_clear_error(&a.reason);
  return a.best;
}
