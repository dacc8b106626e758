/* replay.c — a plan matched to the model and its actions performed; see replay.h. */
#include "config.h"

#include "replay.h"

#include <string.h>

#include <stowage/runtime.h>

struct StwReplayer {
  const StwPlan *plan;
  const StwTrace *plan_trace; /* the trace the schedule runs over */
  StwTrace *recomputed;       /* ... when the plan recomputes blocks: the recorded one's, owned */
  StwChunking *chunking;    /* the plan's layout, a copy the replayer owns */
  StwDemand *demand;        /* the plan's */
  guint next_action;        /* in the plan's sorted actions */
  StwReplayCollectives coll; /* several ranks */
};

/* A tensor as messages name it: "h.0.fc.weight (fp32 [64, 64], frozen)". */
static char *
tensor_text(const StwTensor *x)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "%s (%s [", x->name, stw_dtype_name(x->dtype));
  for (guint32 k = 0; k < x->ndim; k++)
    g_string_append_printf(s, "%s%" G_GUINT64_FORMAT, k ? ", " : "", x->shape[k]);
  g_string_append_printf(s, "]%s)", x->frozen ? ", frozen" : "");
  return g_string_free(s, FALSE);
}

static gboolean
same_shape(const StwTensor *a, const StwTensor *b)
{
  return a->ndim == b->ndim && memcmp(a->shape, b->shape, a->ndim * sizeof(guint64)) == 0;
}

/* How the plan's trace's tensors differ from MODEL's, as a sentence; NULL when they do not. */
static char *
tensor_difference(const StwTrace *pt, const StwTrace *model)
{
  guint32 n = MIN(pt->tensors->len, model->tensors->len);
  for (guint32 i = 0; i < n; i++) {
    const StwTensor *a = stw_trace_tensor(pt, i), *b = stw_trace_tensor(model, i);
    if (strcmp(a->name, b->name) != 0 || !same_shape(a, b) || a->dtype != b->dtype ||
        a->frozen != b->frozen) {
      g_autofree char *want = tensor_text(a), *got = tensor_text(b);
      return g_strdup_printf("tensor %u is %s in the plan's trace and %s here", i, want, got);
    }
  }
  if (pt->tensors->len != model->tensors->len)
    return g_strdup_printf("the plan's trace has %u tensors and this model %u", pt->tensors->len,
                           model->tensors->len);
  return NULL;
}

static void
differs_u64(GString *plan, GString *run, const char *what, guint64 a, guint64 b)
{
  if (a == b)
    return;
  g_string_append_printf(plan, "%s%s %" G_GUINT64_FORMAT, plan->len ? ", " : "", what, a);
  g_string_append_printf(run, "%s%s %" G_GUINT64_FORMAT, run->len ? ", " : "", what, b);
}

/* What the plan's trace was recorded for that this run is not (batch, sequence, heads, layers,
 * width, ...), as "batch 2, heads 4" and "batch 8, heads 16"; both empty when nothing differs.
 * A trace that does not know a figure (0, or no configuration) is not held to it. */
static void
configuration_differences(const StwTrace *pt, const StwTrace *model, GString *plan, GString *run)
{
  const StwTraceModel *a = &pt->model, *b = &model->model;
  if (a->batch != 0 && b->batch != 0)
    differs_u64(plan, run, "batch", a->batch, b->batch);
  if (a->seq != 0 && b->seq != 0)
    differs_u64(plan, run, "sequence", a->seq, b->seq);
  if (a->has_config && b->has_config) {
    const StwModelConfig *x = &a->config, *y = &b->config;
    differs_u64(plan, run, "layers", x->layers, y->layers);
    differs_u64(plan, run, "width", x->hidden, y->hidden);
    differs_u64(plan, run, "heads", x->heads, y->heads);
    differs_u64(plan, run, "key/value heads", x->kv_heads, y->kv_heads);
    differs_u64(plan, run, "MLP width", x->ffn, y->ffn);
    differs_u64(plan, run, "vocabulary", x->vocab, y->vocab);
    differs_u64(plan, run, "context", x->max_seq, y->max_seq);
    if (x->head_dim != 0 || y->head_dim != 0) /* else it follows from width and heads */
      differs_u64(plan, run, "head width", stw_model_head_dim(x), stw_model_head_dim(y));
    differs_u64(plan, run, "experts", stw_model_experts(x), stw_model_experts(y));
    if (x->arch != y->arch) {
      g_string_append_printf(plan, "%sarch %s", plan->len ? ", " : "", stw_arch_name(x->arch));
      g_string_append_printf(run, "%sarch %s", run->len ? ", " : "", stw_arch_name(y->arch));
    }
  }
  if (a->checkpointing != b->checkpointing) {
    g_string_append_printf(plan, "%s%s", plan->len ? ", " : "",
                           a->checkpointing ? "checkpointing" : "no checkpointing");
    g_string_append_printf(run, "%s%s", run->len ? ", " : "",
                           b->checkpointing ? "checkpointing" : "no checkpointing");
  }
  if (a->attention != b->attention) { /* the activations differ: the plan's room for them */
    g_string_append_printf(plan, "%s%s attention", plan->len ? ", " : "",
                           stw_attention_name(a->attention));
    g_string_append_printf(run, "%s%s attention", run->len ? ", " : "",
                           stw_attention_name(b->attention));
  }
  /* (the ranks are the plan's layout's, checked against the run's by the runtime: a trace of
   * one rank plans for several) */
}

StwReplayer *
stw_replayer_new(const StwPlan *plan, const StwTrace *pt, const StwTrace *model, GError **error)
{
  g_autofree char *digest = stw_trace_digest(pt);
  if (strcmp(digest, plan->trace_digest) != 0) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                "the plan was made for another trace: its digest %.16s is not the given trace's "
                "%.16s; give the trace the plan was made from", plan->trace_digest, digest);
    return NULL;
  }
  g_autofree char *differs = tensor_difference(pt, model);
  if (differs != NULL) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                "the plan was made for another model: %s; profile this model and plan again",
                differs);
    return NULL;
  }
  g_autoptr(GString) was = g_string_new(NULL);
  g_autoptr(GString) is = g_string_new(NULL);
  configuration_differences(pt, model, was, is);
  if (was->len > 0) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                "the plan was made for another configuration: its trace was recorded for %s, "
                "and this run has %s; profile this configuration and plan again", was->str,
                is->str);
    return NULL;
  }
  StwReplayer *r = g_new0(StwReplayer, 1);
  r->plan = plan;
  r->plan_trace = stw_plan_trace(plan, pt, &r->recomputed, error);
  if (r->plan_trace == NULL) {
    g_free(r);
    return NULL;
  }
  pt = r->plan_trace;
  r->chunking = stw_chunking_copy(plan->chunking);
  r->demand = stw_demand_of_plan(plan, pt);
  return r;
}

void
stw_replayer_free(StwReplayer *r)
{
  if (r == NULL)
    return;
  stw_chunking_free(r->chunking);
  stw_demand_free(r->demand);
  stw_trace_free(r->recomputed);
  g_free(r);
}

const StwChunking *
stw_replayer_chunking(const StwReplayer *r)
{
  return r->chunking;
}

const guint8 *
stw_replayer_optim(const StwReplayer *r)
{
  return r->plan->optim;
}

const StwDemand *
stw_replayer_demand(const StwReplayer *r)
{
  return r->demand;
}

guint32
stw_replayer_n_ops(const StwReplayer *r)
{
  return r->plan_trace->ops->len;
}

static gboolean
same_ids(const guint32 *a, guint32 na, const guint32 *b, guint32 nb)
{
  return na == nb && (na == 0 || memcmp(a, b, na * sizeof(guint32)) == 0);
}

/* The forward-backward run (micro-step, from 1) op K of trace T belongs to. */
static guint32
run_of(const StwTrace *t, guint32 k)
{
  guint32 run = 1;
  for (guint32 i = 1; i <= k && i < t->ops->len; i++)
    if (stw_trace_op(t, i)->stage == STW_STAGE_FWD && stw_trace_op(t, i - 1)->stage == STW_STAGE_BWD)
      run++;
  return run;
}

gboolean
stw_replayer_match(const StwReplayer *r, guint32 moment, const char *name, StwStage stage,
                   const guint32 *params, guint32 n_params, const guint32 *grads,
                   guint32 n_grads, GError **error)
{
  const StwTrace *pt = r->plan_trace;
  const StwOp *want = moment < pt->ops->len ? stw_trace_op(pt, moment) : NULL;
  if (want != NULL && strcmp(want->name, name) == 0 && want->stage == stage &&
      same_ids(want->params, want->n_params, params, n_params) &&
      same_ids(want->grads, want->n_grads, grads, n_grads))
    return TRUE;
  if (want == NULL) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
                "op %u is %s (%s) here, and the plan's trace ends after %u ops: the loop runs "
                "more ops per iteration than the one profiled (a module run twice, more "
                "micro-steps of gradient accumulation than profiled, an evaluation forward "
                "with gradients on); profile the loop as it runs and plan again", moment, name,
                stw_stage_name(stage), pt->ops->len);
    return FALSE;
  }
  const char *what = strcmp(want->name, name) != 0 || want->stage != stage
                         ? "the op"
                         : !same_ids(want->params, want->n_params, params, n_params)
                               ? "its parameters"
                               : "its gradients (a parameter frozen or unfrozen since)";
  g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH,
              "op %u is %s (%s) here but %s (%s, micro-step %u of %u) in the plan's trace: %s "
              "differs; the plan was made for another model or configuration, or the loop "
              "runs otherwise than profiled (a module skipped or run twice, another number of "
              "micro-steps of gradient accumulation, an optimizer step before backward); "
              "profile the loop as it runs and plan again", moment, name,
              stw_stage_name(stage), want->name, stw_stage_name(want->stage), run_of(pt, moment),
              stw_trace_micro_steps(pt), what);
  return FALSE;
}

void
stw_replayer_set_collectives(StwReplayer *r, const StwReplayCollectives *c)
{
  r->coll = *c;
}

gboolean
stw_replayer_start(StwReplayer *r, StwStore *s, GError **error)
{
  const StwSchedule *sc = &r->plan->schedule;
  const StwChunking *c = r->chunking;
  g_autofree guint8 *kept = stw_schedule_kept_items(sc, r->demand->n_items);
  /* an item kept for good (not a gathered group's) lets its host copy go as soon as it has
   * landed, so that the start never holds both copies of the kept model state at once */
  for (guint32 i = 0; i < r->demand->n_items; i++) {
    gboolean own = stw_plan_item_group(c, i) == G_MAXUINT32;
    if (sc->resident[i] && !stw_store_resident(s, i) && own)
      stw_store_fetch(s, i, NULL);
    if (kept[i] && own) {
      stw_store_settle(s, i);
      stw_store_release_host(s, i);
    }
  }
  for (guint32 i = 0; i < r->demand->n_items; i++)
    stw_store_settle(s, i);
  /* the groups resident at the start are gathered from the own chunks just fetched */
  for (guint32 i = 0; i < r->demand->n_items; i++) {
    if (sc->resident[i] && stw_plan_item_group(c, i) != G_MAXUINT32 && !stw_store_resident(s, i) &&
        !r->coll.perform(r->coll.data, STW_ACTION_GATHER, i, error))
      return FALSE;
  }
  return TRUE;
}

void
stw_replayer_rewind(StwReplayer *r)
{
  r->next_action = 0;
}

gboolean
stw_replayer_apply(StwReplayer *r, StwStore *s, guint32 moment, guint64 *deviations,
                   GError **error)
{
  const StwAction *a = (const StwAction *)r->plan->schedule.actions->data;
  guint n = r->plan->schedule.actions->len;
  for (; r->next_action < n && a[r->next_action].moment == moment; r->next_action++) {
    guint32 item = a[r->next_action].item;
    if (r->coll.settle != NULL && !r->coll.settle(r->coll.data, item, error))
      return FALSE;
    gboolean resident = stw_store_resident(s, item);
    switch (a[r->next_action].kind) {
    case STW_ACTION_EVICT:
      if (resident)
        stw_store_evict(s, item);
      else
        (*deviations)++;
      break;
    case STW_ACTION_DROP:
      if (!resident || !stw_store_drop(s, item))
        (*deviations)++;
      break;
    case STW_ACTION_FETCH:
      if (resident)
        (*deviations)++;
      else if (!stw_store_fetch(s, item, error))
        return FALSE;
      break;
    case STW_ACTION_GATHER:
      if (resident)
        (*deviations)++;
      else if (!r->coll.perform(r->coll.data, STW_ACTION_GATHER, item, error))
        return FALSE;
      break;
    case STW_ACTION_REDUCE_SCATTER:
      if (!r->coll.perform(r->coll.data, STW_ACTION_REDUCE_SCATTER, item, error))
        return FALSE;
      break;
    default:
      break;
    }
  }
  return TRUE;
}
