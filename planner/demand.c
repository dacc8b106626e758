/* demand.c — what each op needs of the chunks, derived once; see demand.h. */
#include "config.h"

#include "demand.h"

#include <string.h>

#include <stowage/cost.h>

/* The lists of a demand while its steps are added. */
struct StwDemandBuild {
  GArray *need, *forbid, *write;                  /* guint32 items */
  GArray *need_start, *forbid_start, *write_start; /* guint32 offsets, one per step */
  GArray *cap;                                    /* guint64 per step */
  guint32 *stamp;                                 /* per list and item: the step it was added in */
};

StwDemand *
stw_demand_new(guint32 n_items, const guint64 *bytes)
{
  StwDemand *d = g_new0(StwDemand, 1);
  d->n_items = n_items;
  d->bytes = g_memdup2(bytes, MAX(n_items, 1) * sizeof(guint64));
  StwDemandBuild *b = d->build = g_new0(StwDemandBuild, 1);
  b->need = g_array_new(FALSE, FALSE, sizeof(guint32));
  b->forbid = g_array_new(FALSE, FALSE, sizeof(guint32));
  b->write = g_array_new(FALSE, FALSE, sizeof(guint32));
  b->cap = g_array_new(FALSE, FALSE, sizeof(guint64));
  b->need_start = g_array_new(FALSE, FALSE, sizeof(guint32));
  b->forbid_start = g_array_new(FALSE, FALSE, sizeof(guint32));
  b->write_start = g_array_new(FALSE, FALSE, sizeof(guint32));
  b->stamp = g_new0(guint32, 3 * (gsize)MAX(n_items, 1));
  return d;
}

void
stw_demand_step(StwDemand *d, guint64 capacity)
{
  StwDemandBuild *b = d->build;
  g_assert(b != NULL);
  g_array_append_val(b->cap, capacity);
  g_array_append_val(b->need_start, b->need->len);
  g_array_append_val(b->forbid_start, b->forbid->len);
  g_array_append_val(b->write_start, b->write->len);
  d->n_steps++;
}

/* Appends ITEM to LIST once per step; KIND selects the stamp row. */
static void
add_once(StwDemand *d, GArray *list, guint kind, guint32 item)
{
  g_assert(d->build != NULL && d->n_steps > 0 && item < d->n_items);
  guint32 *stamp = &d->build->stamp[(gsize)kind * d->n_items + item];
  if (*stamp == d->n_steps)
    return;
  *stamp = d->n_steps;
  g_array_append_val(list, item);
}

void
stw_demand_need(StwDemand *d, guint32 item)
{
  add_once(d, d->build->need, 0, item);
}

void
stw_demand_forbid(StwDemand *d, guint32 item)
{
  add_once(d, d->build->forbid, 1, item);
}

void
stw_demand_write(StwDemand *d, guint32 item)
{
  add_once(d, d->build->write, 2, item);
}

static guint32 *
close_offsets(GArray *starts, guint32 total)
{
  g_array_append_val(starts, total);
  return (guint32 *)g_array_free(starts, FALSE);
}

void
stw_demand_finish(StwDemand *d)
{
  StwDemandBuild *b = d->build;
  d->need_start = close_offsets(b->need_start, b->need->len);
  d->forbid_start = close_offsets(b->forbid_start, b->forbid->len);
  d->write_start = close_offsets(b->write_start, b->write->len);
  d->need = (guint32 *)g_array_free(b->need, FALSE);
  d->forbid = (guint32 *)g_array_free(b->forbid, FALSE);
  d->write = (guint32 *)g_array_free(b->write, FALSE);
  d->capacity = (guint64 *)g_array_free(b->cap, FALSE);
  g_free(b->stamp);
  g_free(b);
  d->build = NULL;
}

void
stw_demand_free(StwDemand *d)
{
  if (d == NULL)
    return;
  StwDemandBuild *b = d->build;
  if (b != NULL) {
    g_array_unref(b->need);
    g_array_unref(b->forbid);
    g_array_unref(b->write);
    g_array_unref(b->cap);
    g_array_unref(b->need_start);
    g_array_unref(b->forbid_start);
    g_array_unref(b->write_start);
    g_free(b->stamp);
    g_free(b);
  }
  g_free(d->bytes);
  g_free(d->need_start);
  g_free(d->need);
  g_free(d->forbid_start);
  g_free(d->forbid);
  g_free(d->write_start);
  g_free(d->write);
  g_free(d->capacity);
  g_free(d);
}

StwDemand *
stw_demand_repeat(const StwDemand *d, guint32 iterations)
{
  StwDemand *r = stw_demand_new(d->n_items, d->bytes);
  for (guint32 it = 0; it < iterations; it++) {
    for (guint32 k = 0; k < d->n_steps; k++) {
      stw_demand_step(r, d->capacity[k]);
      for (guint32 i = d->need_start[k]; i < d->need_start[k + 1]; i++)
        stw_demand_need(r, d->need[i]);
      for (guint32 i = d->forbid_start[k]; i < d->forbid_start[k + 1]; i++)
        stw_demand_forbid(r, d->forbid[i]);
      for (guint32 i = d->write_start[k]; i < d->write_start[k + 1]; i++)
        stw_demand_write(r, d->write[i]);
    }
  }
  stw_demand_finish(r);
  return r;
}

/* ---- the demand of a trace ---------------------------------------------------------------- */

void
stw_op_items_init(StwOpItems *x)
{
  x->need = g_array_new(FALSE, FALSE, sizeof(guint32));
  x->forbid = g_array_new(FALSE, FALSE, sizeof(guint32));
  x->write = g_array_new(FALSE, FALSE, sizeof(guint32));
}

void
stw_op_items_clear(StwOpItems *x)
{
  g_clear_pointer(&x->need, g_array_unref);
  g_clear_pointer(&x->forbid, g_array_unref);
  g_clear_pointer(&x->write, g_array_unref);
}

static void
append(GArray *list, guint32 item)
{
  g_array_append_val(list, item);
}

void
stw_demand_op_items(const StwChunking *c, const guint8 *optim, StwGradients gradients,
                    StwStage stage, const guint32 *params, guint32 n_params,
                    const guint32 *grads, guint32 n_grads, StwOpItems *out)
{
  gboolean multi = c->world > 1;
  g_array_set_size(out->need, 0);
  g_array_set_size(out->forbid, 0);
  g_array_set_size(out->write, 0);
  if (gradients != STW_GRADIENTS_CHUNKS)
    n_grads = 0; /* the framework's own tensors: nothing of the chunks is written */
  if (stage != STW_STAGE_OPTIM) {
    for (guint32 i = 0; i < n_params + n_grads; i++) {
      gboolean grad = i >= n_params;
      guint32 ch = c->chunk_of[grad ? grads[i - n_params] : params[i]];
      guint32 item = multi ? stw_plan_own_item(c, ch / c->world)
                           : stw_plan_item(c, STW_LIST_PARAM, ch);
      append(out->need, item);
      if (grad)
        append(out->write, item);
      if (multi)
        append(out->need, stw_plan_group_item(c, ch / c->world));
    }
    return;
  }
  /* an optimizer op steps its tensors' chunks where the placement says, each on its owner;
   * the gathered copies of the others' chunks are stale once they are stepped */
  for (guint32 i = 0; i < n_params; i++) {
    guint32 ch = c->chunk_of[params[i]];
    if (multi)
      append(out->forbid, stw_plan_group_item(c, ch / c->world));
    ch = stw_chunking_owned_chunk(c, params[i]);
    if (ch == G_MAXUINT32)
      continue;
    for (int l = 0; l < STW_N_LISTS; l++) {
      guint32 item = stw_plan_item(c, (StwChunkList)l, ch);
      if (stw_optim_on_cpu(optim[ch])) {
        append(out->forbid, item);
      } else {
        append(out->need, item);
        append(out->write, item);
      }
    }
  }
}

/* The first and last backward op writing a gradient of each group into its chunks
 * (G_MAXUINT32: none; none at all where the gradients are the framework's). */
static void
gradient_spans(const StwTrace *t, const StwChunking *c, guint32 *first, guint32 *last)
{
  guint32 groups = stw_chunking_groups(c);
  for (guint32 g = 0; g < groups; g++)
    first[g] = last[g] = G_MAXUINT32;
  for (guint32 k = 0; t->model.gradients == STW_GRADIENTS_CHUNKS && k < t->ops->len; k++) {
    const StwOp *op = stw_trace_op(t, k);
    if (op->stage == STW_STAGE_OPTIM)
      continue;
    for (guint32 i = 0; i < op->n_grads; i++) {
      guint32 g = c->chunk_of[op->grads[i]] / c->world;
      if (first[g] == G_MAXUINT32)
        first[g] = k;
      last[g] = k;
    }
  }
}

guint32 *
stw_demand_reduce_moments(const StwTrace *t, const StwChunking *c)
{
  guint32 groups = stw_chunking_groups(c);
  guint32 *first = g_new(guint32, MAX(groups, 1)), *moment = g_new(guint32, MAX(groups, 1));
  gradient_spans(t, c, first, moment);
  for (guint32 g = 0; g < groups; g++) {
    if (moment[g] != G_MAXUINT32)
      moment[g]++;
  }
  g_free(first);
  return moment;
}

/* Bytes of each item on rank 0: its own chunks' lists and the gathered rest of each group. */
static guint64 *
item_bytes(const StwChunking *c)
{
  guint32 n = stw_chunking_count(c), n_items = stw_plan_n_items(c);
  guint64 *bytes = g_new0(guint64, MAX(n_items, 1));
  for (int l = 0; l < STW_N_LISTS; l++)
    for (guint32 i = 0; i < n; i++) {
      if (stw_chunking_owned(c, i))
        bytes[stw_plan_item(c, (StwChunkList)l, i)] = stw_chunk_bytes(c, i, (StwChunkList)l);
    }
  for (guint32 g = 0; g < stw_chunking_groups(c); g++)
    bytes[stw_plan_group_item(c, g)] = stw_plan_group_bytes(c, g);
  return bytes;
}

StwDemand *
stw_demand_build(const StwTrace *t, const StwChunking *c, const guint8 *optim,
                 const StwBudgets *b, const guint64 *capacity, const guint8 *hold)
{
  guint32 n_items = stw_plan_n_items(c), groups = stw_chunking_groups(c);
  gboolean multi = c->world > 1;
  g_autofree guint64 *bytes = item_bytes(c);
  /* with several ranks a group stays whole from its first gradient to its reduce-scatter */
  g_autofree guint32 *first = g_new(guint32, MAX(groups, 1));
  g_autofree guint32 *last = g_new(guint32, MAX(groups, 1));
  if (multi)
    gradient_spans(t, c, first, last);
  StwDemand *d = stw_demand_new(n_items, bytes);
  StwOpItems x;
  stw_op_items_init(&x);
  for (guint32 k = 0; k < t->ops->len; k++) {
    const StwOp *op = stw_trace_op(t, k);
    stw_demand_step(d, capacity != NULL ? capacity[k] : stw_plan_capacity(t, b, k));
    gboolean compute = op->stage != STW_STAGE_OPTIM;
    for (guint32 i = 0; compute && hold != NULL && i < n_items; i++) {
      if (hold[i])
        stw_demand_need(d, i);
    }
    stw_demand_op_items(c, optim, t->model.gradients, op->stage, op->params, op->n_params,
                        op->grads, op->n_grads, &x);
    for (guint i = 0; i < x.need->len; i++)
      stw_demand_need(d, g_array_index(x.need, guint32, i));
    for (guint i = 0; i < x.forbid->len; i++)
      stw_demand_forbid(d, g_array_index(x.forbid, guint32, i));
    for (guint i = 0; i < x.write->len; i++)
      stw_demand_write(d, g_array_index(x.write, guint32, i));
    for (guint32 g = 0; compute && multi && g < groups; g++) {
      if (first[g] != G_MAXUINT32 && first[g] <= k && k <= last[g]) {
        stw_demand_need(d, stw_plan_own_item(c, g));
        stw_demand_need(d, stw_plan_group_item(c, g));
      }
    }
  }
  stw_op_items_clear(&x);
  stw_demand_finish(d);
  return d;
}

StwDemand *
stw_demand_of_plan(const StwPlan *p, const StwTrace *t)
{
  return stw_demand_build(t, p->chunking, p->optim, &p->budgets, NULL, NULL);
}

guint8 *
stw_schedule_kept_items(const StwSchedule *s, guint32 n_items)
{
  guint8 *kept = g_malloc0(MAX(n_items, 1));
  for (guint32 i = 0; i < n_items; i++)
    kept[i] = s->resident[i];
  const StwAction *a = (const StwAction *)s->actions->data;
  for (guint i = 0; i < s->actions->len; i++)
    kept[a[i].item] = 0;
  return kept;
}

guint64
stw_demand_host_bytes(const StwDemand *d, const StwChunking *c, const guint8 *optim,
                      const StwSchedule *s, gboolean direct, guint64 *storage_out)
{
  g_autofree guint8 *kept = stw_schedule_kept_items(s, d->n_items);
  guint32 n = stw_chunking_count(c);
  guint64 bytes = 0, stored = 0;
  for (guint32 i = 0; i < STW_N_LISTS * n; i++) {
    guint32 ch = i % n;
    if (optim != NULL && ((i >= n && stw_optim_state_stored(optim[ch])) ||
                          optim[ch] == STW_OPTIM_STORAGE)) {
      stored = stw_cost_add(stored, d->bytes[i]);
      continue;
    }
    if (!kept[i])
      bytes = stw_cost_add(bytes, d->bytes[i]);
  }
  guint64 world = MAX(c->world, 1);
  if (storage_out != NULL)
    *storage_out = stored > STW_COST_MAX / world ? STW_COST_MAX : stored * world;
  bytes = bytes > STW_COST_MAX / world ? STW_COST_MAX : bytes * world;
  return stw_cost_add(bytes, stw_demand_staging_bytes(d, c, optim, direct));
}

guint64
stw_demand_staging_bytes(const StwDemand *d, const StwChunking *c, const guint8 *optim,
                         gboolean direct)
{
  guint32 n = stw_chunking_count(c);
  guint64 staging = 0, param_staging = 0;
  for (guint32 ch = 0; optim != NULL && ch < n; ch++) {
    guint64 state = 0;
    for (int l = STW_LIST_MASTER; l < STW_N_LISTS && stw_optim_state_stored(optim[ch]); l++)
      state += d->bytes[stw_plan_item(c, (StwChunkList)l, ch)];
    if (optim[ch] == STW_OPTIM_STORAGE) {
      guint64 param = d->bytes[stw_plan_item(c, STW_LIST_PARAM, ch)];
      state += param;
      param_staging = direct ? 0 : MAX(param_staging, 2 * param);
    }
    staging = MAX(staging, 2 * state);
  }
  staging = stw_cost_add(staging, param_staging);
  guint64 world = MAX(c->world, 1);
  return staging > STW_COST_MAX / world ? STW_COST_MAX : staging * world;
}
