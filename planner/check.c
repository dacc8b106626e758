/* check.c — replay a plan against its trace and report the first violation; see check.h. */
#include "config.h"

#include <stowage/check.h>

#include <stowage/cost.h>

#include <stowage/errors.h>

#include "demand.h"
#include "evaluate.h"
#include "schedule.h"

/* "FILE: message" in this module's domain */
#define unsound(error, file, ...) \
  stw_fail_file((error), STW_PLAN_ERROR, STW_PLAN_ERROR_UNSOUND, (file), __VA_ARGS__)

#include <string.h>

#include <stowage/units.h>

/* "; on the device then: ..." naming the blocks whose activations T holds on the device at
 * moment M and why (kept, recomputed, being offloaded or fetched back); "" when none. */
static char *
live_activations(const StwTrace *t, guint32 m)
{
  g_autoptr(GArray) moves = stw_trace_activation_moves(t);
  GString *s = g_string_new("");
  guint shown = 0, more = 0;
  for (guint32 k = 0, mv = 0; k < t->blocks->len; k++) {
    const StwBlock *b = &g_array_index(t->blocks, StwBlock, k);
    const StwActivationMove *move = NULL;
    if (stw_block_moves(b->choice))
      move = &g_array_index(moves, StwActivationMove, mv++);
    guint32 span = b->fwd_last - b->fwd_first + 1;
    const char *why = NULL;
    if (m <= b->fwd_last || m > b->bwd_last || b->saved_bytes == 0)
      continue;
    if (b->choice == STW_BLOCK_KEEP)
      why = "kept";
    else if (stw_block_recomputes(b->choice) && m >= b->bwd_first + span)
      why = "recomputed";
    else if (move != NULL && m < move->out_done)
      why = "being offloaded";
    else if (move != NULL && m >= move->in_moment)
      why = "fetched back";
    if (why == NULL)
      continue;
    if (shown++ >= 4) {
      more++;
      continue;
    }
    g_string_append_printf(s, "%s %s (%s)", s->len == 0 ? "; on the device then, the activations "
                           "of blocks" : ",", b->name, why);
  }
  if (more > 0)
    g_string_append_printf(s, " and %u more", more);
  return g_string_free(s, FALSE);
}

static gboolean
replay_error(const StwPlan *p, const StwTrace *t, const StwDemand *d, const StwReplay *r,
             const char *file, GError **error)
{
  g_autofree char *item = stw_plan_item_name(p->chunking, r->item);
  guint32 m = r->moment;
  const char *op = m < t->ops->len ? stw_trace_op(t, m)->name : "(end of iteration)";
  const char *stage = m < t->ops->len ? stw_stage_name(stw_trace_op(t, m)->stage) : "-";
  switch (r->failure) {
  case STW_REPLAY_FETCH_RESIDENT:
    return unsound(error, file, "moment %u (op %s): fetch of %s, which is already on the GPU",
                   m, op, item);
  case STW_REPLAY_REMOVE_ABSENT:
    return unsound(error, file, "moment %u (op %s): eviction of %s, which is not on the GPU "
                   "(or an action out of order)", m, op, item);
  case STW_REPLAY_DROP_DIRTY:
    return unsound(error, file, "moment %u (op %s): dropping %s loses data: the GPU holds its "
                   "only valid copy (evict it instead)", m, op, item);
  case STW_REPLAY_NOT_RESIDENT:
    return unsound(error, file, "moment %u (op %s, %s): chunk %s is needed but not on the GPU",
                   m, op, stage, item);
  case STW_REPLAY_FORBIDDEN:
    return unsound(error, file, "moment %u (op %s, %s): chunk %s must be on the CPU for CPU "
                   "Adam but is on the GPU", m, op, stage, item);
  case STW_REPLAY_OVER_CAPACITY: {
    guint64 nonmodel = stw_plan_nonmodel_at(t, m);
    guint64 total = r->resident_bytes + nonmodel + p->budgets.reserved_bytes;
    g_autofree char *tot = stw_size_format(total);
    g_autofree char *ch = stw_size_format(r->resident_bytes);
    g_autofree char *nm = stw_size_format(nonmodel);
    g_autofree char *rs = stw_size_format(p->budgets.reserved_bytes);
    g_autofree char *bu = stw_size_format(p->budgets.gpu_bytes);
    g_autofree char *over = stw_size_format(total - MIN(total, p->budgets.gpu_bytes));
    g_autofree char *live = live_activations(t, m);
    return unsound(error, file, "moment %u (op %s, %s): GPU memory %s (chunks %s + non-model "
                   "%s + reserve %s) exceeds the budget of %s by %s (%" G_GUINT64_FORMAT
                   " bytes)%s", m, op, stage, tot, ch, nm, rs, bu, over,
                   total - MIN(total, p->budgets.gpu_bytes), live);
  }
  case STW_REPLAY_END_STATE:
    return unsound(error, file, "the iteration does not end in the state it starts from: "
                   "chunk %s is %s at the start but %s at the end", item,
                   p->schedule.resident[r->item]
                       ? (p->schedule.dirty[r->item] ? "on the GPU (dirty)" : "on the GPU")
                       : "on the CPU",
                   p->schedule.resident[r->item] ? "on the CPU or dirty" : "on the GPU");
  default:
    break;
  }
  (void)d;
  return unsound(error, file, "replay failed at moment %u", m);
}

/* With several ranks: every action suits its item (gathered items are gathered, dropped and
 * reduce-scattered, never fetched or evicted; rank 0 has nothing of the chunks it does not
 * own), a gather finds its rank's own chunk on the GPU, and each group's gradients are
 * reduce-scattered exactly once, when they are complete. */
static gboolean
check_collectives(const StwPlan *p, const StwTrace *t, const char *file, GError **error)
{
  const StwChunking *c = p->chunking;
  guint32 n_items = stw_plan_n_items(c), groups = stw_chunking_groups(c);
  g_autofree guint32 *moments = c->world > 1 ? stw_demand_reduce_moments(t, c) : NULL;
  g_autofree guint8 *reduced = g_malloc0(MAX(groups, 1));
  g_autofree guint8 *res = g_memdup2(p->schedule.resident, MAX(n_items, 1));
  for (guint32 i = 0; i < STW_N_LISTS * stw_chunking_count(c); i++) {
    if (res[i] && !stw_chunking_owned(c, i % stw_chunking_count(c))) {
      g_autofree char *name = stw_plan_item_name(c, i);
      return unsound(error, file, "$.initial: %s is on the GPU, but rank 0 does not own chunk "
                     "%u", name, i % stw_chunking_count(c));
    }
  }
  const StwAction *a = (const StwAction *)p->schedule.actions->data;
  for (guint i = 0; i < p->schedule.actions->len; i++) {
    guint32 item = a[i].item, m = a[i].moment, g = stw_plan_item_group(c, item);
    if (item >= n_items)
      continue; /* replay reports it */
    g_autofree char *name = stw_plan_item_name(c, item);
    const char *kind = stw_action_kind_name((StwActionKind)a[i].kind);
    gboolean collective = a[i].kind == STW_ACTION_GATHER ||
                          a[i].kind == STW_ACTION_REDUCE_SCATTER;
    if (g == G_MAXUINT32 && collective)
      return unsound(error, file, "moment %u: %s of %s: only a chunk group (group:N) is "
                     "gathered or reduce-scattered", m, kind, name);
    if (g == G_MAXUINT32 && !stw_chunking_owned(c, item % stw_chunking_count(c)))
      return unsound(error, file, "moment %u: %s of %s: rank 0 does not own chunk %u; it "
                     "arrives with its group", m, kind, name, item % stw_chunking_count(c));
    if (g != G_MAXUINT32 && (a[i].kind == STW_ACTION_FETCH || a[i].kind == STW_ACTION_EVICT))
      return unsound(error, file, "moment %u: %s of %s: a group's other chunks have no host "
                     "copy on this rank; they are gathered and dropped", m, kind, name);
    if (a[i].kind == STW_ACTION_GATHER && !res[stw_plan_own_item(c, g)])
      return unsound(error, file, "moment %u: gather of %s before rank 0's own chunk param:%u "
                     "is on the GPU", m, name, g * c->world);
    if (a[i].kind == STW_ACTION_REDUCE_SCATTER) {
      if (moments[g] != m)
        return unsound(error, file, "moment %u: reduce-scatter of %s, but its gradients are "
                       "complete at moment %u", m, name, moments[g]);
      if (reduced[g]++)
        return unsound(error, file, "moment %u: %s is reduce-scattered twice", m, name);
    }
    if (a[i].kind == STW_ACTION_FETCH)
      res[item] = 1;
    else if (a[i].kind == STW_ACTION_EVICT || a[i].kind == STW_ACTION_DROP)
      res[item] = 0;
  }
  for (guint32 g = 0; g < groups; g++) {
    if (moments[g] != G_MAXUINT32 && !reduced[g])
      return unsound(error, file, "group:%u is never reduce-scattered: its gradients, complete "
                     "at moment %u, would not reach their owners", g, moments[g]);
  }
  return TRUE;
}

/* The plan's activation moves are those its blocks' decisions make in T. */
static gboolean
check_moves(const StwPlan *p, const StwTrace *t, const char *file, GError **error)
{
  g_autoptr(GArray) want = stw_trace_activation_moves(t);
  for (guint i = 0; i < MAX(want->len, p->moves->len); i++) {
    if (i >= want->len || i >= p->moves->len)
      return unsound(error, file, "$.trace.activation_moves: %u moves, and the plan offloads %u "
                     "blocks", p->moves->len, want->len);
    const StwActivationMove *a = &g_array_index(p->moves, StwActivationMove, i);
    const StwActivationMove *b = &g_array_index(want, StwActivationMove, i);
    if (a->block != b->block || a->out_moment != b->out_moment || a->out_done != b->out_done ||
        a->in_moment != b->in_moment || a->in_done != b->in_done || a->bytes != b->bytes)
      return unsound(error, file, "$.trace.activation_moves[%u]: block %u out [%u, %u] in [%u, "
                     "%u], %" G_GUINT64_FORMAT " bytes; offloading block %u (%s) moves out "
                     "[%u, %u] in [%u, %u], %" G_GUINT64_FORMAT " bytes", i, a->block,
                     a->out_moment, a->out_done, a->in_moment, a->in_done, a->bytes, b->block,
                     g_array_index(t->blocks, StwBlock, b->block).name, b->out_moment,
                     b->out_done, b->in_moment, b->in_done, b->bytes);
  }
  return TRUE;
}

gboolean
stw_plan_check(const StwPlan *p, const StwTrace *recorded, const char *file,
               StwCheckReport *report, StwSimulation *sim, GError **error)
{
  g_autofree char *digest = stw_trace_digest(recorded);
  if (strcmp(digest, p->trace_digest) != 0) {
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_MISMATCH,
                "%s was made for the trace with digest %.16s… (%s), not this one (%.16s…): "
                "plan the trace again", file, p->trace_digest,
                p->trace_file[0] ? p->trace_file : "file unknown", digest);
    return FALSE;
  }
  /* the trace the schedule runs over: the recorded one with the plan's blocks decided */
  g_autoptr(StwTrace) owned = NULL;
  const StwTrace *t = stw_plan_trace(p, recorded, &owned, error);
  if (t == NULL)
    return FALSE;
  if (p->recompute->len > 0 && recorded->ops->len == p->trace_ops && t != recorded)
    return unsound(error, file, "$.trace.ops: %u, the trace's own, and the plan recomputes %u "
                   "blocks, which adds ops", p->trace_ops, p->recompute->len);
  if (p->trace_ops != t->ops->len)
    return unsound(error, file, "$.trace.ops: %u, the trace has %u ops", p->trace_ops,
                   t->ops->len);
  if (!check_moves(p, t, file, error))
    return FALSE;
  if (!stw_chunking_validate(p->chunking, t, file, error))
    return FALSE;
  if (p->chunking->dtype != stw_trace_tensor(t, 0)->dtype)
    return unsound(error, file, "$.chunks.dtype: %s, the trace's tensors are %s",
                   stw_dtype_name(p->chunking->dtype),
                   stw_dtype_name(stw_trace_tensor(t, 0)->dtype));

  guint64 share = stw_budgets_process_share(&p->budgets, &p->hw);
  if (p->budgets.reserved_bytes < share) {
    g_autofree char *bu = stw_size_format(p->budgets.gpu_bytes);
    g_autofree char *sh = stw_size_format(share);
    g_autofree char *pr = stw_size_format(p->hw.gpu_process_bytes);
    return unsound(error, file, "$.budgets.reserved_bytes: %" G_GUINT64_FORMAT ", less than "
                   "the %s of its budget of %s that a process holds on %s outside its tensors "
                   "(%s, $.hardware.gpu.process_bytes): plan it again", p->budgets.reserved_bytes,
                   sh, bu, p->hw.name, pr);
  }
  guint64 over = 0;
  guint32 k = stw_plan_nonmodel_overflow(t, &p->budgets, &over);
  if (k != G_MAXUINT32) {
    g_autofree char *o = stw_size_format(over);
    g_autofree char *bu = stw_size_format(p->budgets.gpu_bytes);
    g_autofree char *live = live_activations(t, k);
    return unsound(error, file, "moment %u (op %s): the non-model memory alone, with the "
                   "reserve, exceeds the budget of %s by %s%s", k, stw_trace_op(t, k)->name, bu,
                   o, live);
  }
  if (!check_collectives(p, t, file, error))
    return FALSE;
  g_autoptr(StwDemand) d = stw_demand_of_plan(p, t);
  StwReplay r;
  gboolean ok = stw_schedule_replay(d, &p->schedule, TRUE, &r);
  if (!ok) {
    replay_error(p, t, d, &r, file, error);
    stw_replay_clear(&r);
    return FALSE;
  }
  stw_replay_clear(&r);

  const StwPlanPredictions *claimed = &p->pred;
  StwPlanPredictions got = { 0 };
  StwSimulation local;
  stw_plan_evaluate(p, t, d, sim != NULL, &got, &local);
  /* the process overhead only where the plan's cost model counts it */
  guint64 overhead = claimed->cost_model >= 2 ? got.host_overhead_bytes : 0;
  if (stw_cost_add(got.cpu_bytes, overhead) > p->budgets.cpu_bytes) {
    g_autofree char *need = stw_size_format(got.cpu_bytes);
    g_autofree char *processes = stw_size_format(overhead);
    g_autofree char *have = stw_size_format(p->budgets.cpu_bytes);
    stw_simulation_clear(&local);
    return unsound(error, file, "chunks need %s of host memory and the ranks' processes %s, "
                   "more than the CPU budget of %s", need, processes, have);
  }
  if (got.storage_bytes > 0 && (p->hw.storage_kind[0] == '\0' ||
                                got.storage_bytes > p->budgets.storage_bytes)) {
    g_autofree char *need = stw_size_format(got.storage_bytes);
    g_autofree char *have = stw_size_format(p->budgets.storage_bytes);
    stw_simulation_clear(&local);
    if (p->hw.storage_kind[0] == '\0')
      return unsound(error, file, "chunks' optimizer state is on the storage tier (%s, "
                     "\"cpu-storage\" or \"storage\"), and the plan's hardware profile %s has "
                     "none", need, p->hw.name);
    return unsound(error, file, "chunks on the storage tier need %s, more than the storage "
                   "budget of %s", need, have);
  }
  /* every prediction is recomputed; the times only when the same cost model made them */
  got.lower_bound_bytes = stw_plan_lower_bound(p, t);
  StwPrediction want[STW_N_PREDICTIONS], have[STW_N_PREDICTIONS];
  stw_plan_predictions_list(claimed, want);
  stw_plan_predictions_list(&got, have);
  gboolean times = claimed->cost_model == STW_COST_MODEL;
  for (gsize i = 0; i < STW_N_PREDICTIONS; i++) {
    if ((want[i].time && !times) || want[i].value == have[i].value)
      continue;
    stw_simulation_clear(&local);
    return unsound(error, file, "$.predictions.%s: the plan predicts %" G_GUINT64_FORMAT
                   ", its schedule gives %" G_GUINT64_FORMAT, want[i].name, want[i].value,
                   have[i].value);
  }
  if (report != NULL)
    *report = (StwCheckReport){ .n_actions = p->schedule.actions->len, .pred = got };
  if (sim != NULL)
    *sim = local;
  else
    stw_simulation_clear(&local);
  return TRUE;
}
