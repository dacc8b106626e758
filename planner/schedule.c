/* schedule.c — the scheduling engine (Belady with write-back awareness), prefetch hoisting,
 * steady state, replay and the lower bound; see schedule.h and docs/algorithms.md. */
#include "config.h"

#include <math.h>

#include "schedule.h"

#include <string.h>

#include <stowage/cost.h>

#define NEVER G_MAXUINT32

/* ---- the engine --------------------------------------------------------------------------- */

/* Per-item lists of the steps that need or forbid it, for next-use queries that only move
 * forward in time. */
typedef struct {
  guint32 *start, *steps, *ptr;
} ItemSteps;

static void
item_steps_init(ItemSteps *s, guint32 n_items, guint32 n_steps, const guint32 *row_start,
                const guint32 *rows)
{
  s->start = g_new0(guint32, (gsize)n_items + 1);
  for (guint32 k = 0; k < n_steps; k++)
    for (guint32 i = row_start[k]; i < row_start[k + 1]; i++)
      s->start[rows[i] + 1]++;
  for (guint32 i = 0; i < n_items; i++)
    s->start[i + 1] += s->start[i];
  s->steps = g_new(guint32, MAX(s->start[n_items], 1));
  s->ptr = g_memdup2(s->start, ((gsize)n_items + 1) * sizeof(guint32));
  for (guint32 k = 0; k < n_steps; k++)
    for (guint32 i = row_start[k]; i < row_start[k + 1]; i++)
      s->steps[s->ptr[rows[i]]++] = k;
  memcpy(s->ptr, s->start, ((gsize)n_items + 1) * sizeof(guint32));
}

static void
item_steps_clear(ItemSteps *s)
{
  g_free(s->start);
  g_free(s->steps);
  g_free(s->ptr);
}

/* The first step >= STEP in ITEM's list, or NEVER. STEP must not decrease between calls. */
static guint32
item_steps_next(ItemSteps *s, guint32 item, guint32 step)
{
  guint32 p = s->ptr[item], end = s->start[item + 1];
  while (p < end && s->steps[p] < step)
    p++;
  s->ptr[item] = p;
  return p < end ? s->steps[p] : NEVER;
}

typedef struct {
  const StwDemand *d;
  const StwEngineOptions *opt;
  StwSchedule *out;
  guint8 *resident, *dirty;
  guint32 *list, *pos;   /* resident items, and each one's index in list */
  guint32 n_list;
  guint64 used;          /* bytes resident */
  guint32 *needed_at;    /* step + 1 when the item is needed at that step */
  guint32 *last_use;     /* LRU clock */
  ItemSteps uses, forbids;
} Engine;

static void
engine_add(Engine *e, guint32 item)
{
  e->resident[item] = 1;
  e->pos[item] = e->n_list;
  e->list[e->n_list++] = item;
  e->used = stw_cost_add(e->used, e->d->bytes[item]);
}

static void
engine_remove(Engine *e, guint32 item, guint32 moment)
{
  StwAction a = { .moment = moment, .item = item,
                  .kind = e->dirty[item] ? STW_ACTION_EVICT : STW_ACTION_DROP };
  g_array_append_val(e->out->actions, a);
  if (e->dirty[item])
    e->out->d2h_bytes = stw_cost_add(e->out->d2h_bytes, e->d->bytes[item]);
  e->resident[item] = 0;
  e->dirty[item] = 0; /* written back, or the CPU copy was valid */
  guint32 p = e->pos[item], last = e->list[--e->n_list];
  e->list[p] = last;
  e->pos[last] = p;
  e->used -= e->d->bytes[item];
}

static gboolean
is_pinned(const Engine *e, guint32 item)
{
  return e->opt->pinned != NULL && e->opt->pinned[item];
}

/* The resident item to remove at step K, or NEVER when none may go. */
static guint32
choose_victim(Engine *e, guint32 k)
{
  guint32 best = NEVER, best_next = 0;
  guint64 best_cost = 0;
  for (guint32 i = 0; i < e->n_list; i++) {
    guint32 item = e->list[i];
    if (e->needed_at[item] == k + 1 || is_pinned(e, item))
      continue;
    if (e->opt->rule == STW_EVICT_LRU) {
      if (best == NEVER || e->last_use[item] < e->last_use[best] ||
          (e->last_use[item] == e->last_use[best] && item < best))
        best = item;
      continue;
    }
    /* a chunk that some step forbids before its next use will leave anyway: keeping it
     * gains nothing, so it counts as never used again */
    guint32 next = item_steps_next(&e->uses, item, k);
    guint32 forbid = item_steps_next(&e->forbids, item, k);
    if (forbid < next)
      next = NEVER;
    /* with the clean-preferring rule, removing costs a write-back only for a dirty chunk
     * that would otherwise not have to be written back before its next use */
    guint64 cost = 0;
    if (e->opt->rule == STW_EVICT_FARTHEST_CLEAN && e->dirty[item] && forbid >= next)
      cost = e->d->bytes[item];
    gboolean better = best == NEVER || next > best_next ||
                      (next == best_next && (cost < best_cost ||
                                             (cost == best_cost && item < best)));
    if (better) {
      best = item;
      best_next = next;
      best_cost = cost;
    }
  }
  return best;
}

gboolean
stw_schedule_run(const StwDemand *d, const guint8 *resident, const guint8 *dirty,
                 const StwEngineOptions *opt, StwSchedule *out)
{
  memset(out, 0, sizeof *out);
  out->actions = g_array_new(FALSE, FALSE, sizeof(StwAction));
  out->resident = g_malloc0(MAX(d->n_items, 1));
  out->dirty = g_malloc0(MAX(d->n_items, 1));
  out->feasible = TRUE;
  Engine e = { .d = d, .opt = opt, .out = out };
  gsize n = MAX(d->n_items, 1);
  e.resident = g_malloc0(n);
  e.dirty = g_malloc0(n);
  e.list = g_new(guint32, n);
  e.pos = g_new(guint32, n);
  e.needed_at = g_new0(guint32, n);
  e.last_use = g_new0(guint32, n);
  item_steps_init(&e.uses, d->n_items, d->n_steps, d->need_start, d->need);
  item_steps_init(&e.forbids, d->n_items, d->n_steps, d->forbid_start, d->forbid);

  for (guint32 i = 0; i < d->n_items; i++) {
    gboolean pinned = is_pinned(&e, i);
    if ((resident != NULL && resident[i]) || pinned) {
      engine_add(&e, i);
      e.dirty[i] = pinned || (dirty != NULL && dirty[i]);
    }
  }
  memcpy(out->resident, e.resident, d->n_items);
  memcpy(out->dirty, e.dirty, d->n_items);

  for (guint32 k = 0; k < d->n_steps && out->feasible; k++) {
    guint64 missing = 0, need_bytes = 0;
    for (guint32 i = d->need_start[k]; i < d->need_start[k + 1]; i++) {
      guint32 item = d->need[i];
      e.needed_at[item] = k + 1;
      need_bytes = stw_cost_add(need_bytes, d->bytes[item]);
      if (!e.resident[item])
        missing = stw_cost_add(missing, d->bytes[item]);
    }
    /* release what this step does not use; a step that uses no chunks (an activation
     * function, say) releases nothing, as ZeRO-3 releases a module's parameters after it */
    if (opt->release_after_use && d->need_start[k] < d->need_start[k + 1]) {
      for (guint32 i = 0; i < e.n_list;) {
        guint32 item = e.list[i];
        if (e.needed_at[item] != k + 1 && !is_pinned(&e, item))
          engine_remove(&e, item, k); /* swaps another item into slot i */
        else
          i++;
      }
    }
    for (guint32 i = d->forbid_start[k]; i < d->forbid_start[k + 1]; i++) {
      if (e.resident[d->forbid[i]])
        engine_remove(&e, d->forbid[i], k);
    }
    while (e.used + missing > d->capacity[k]) {
      guint32 victim = choose_victim(&e, k);
      if (victim == NEVER) {
        out->feasible = FALSE;
        out->fail_step = k;
        guint64 pinned_bytes = 0;
        for (guint32 i = 0; i < e.n_list; i++)
          pinned_bytes = stw_cost_add(pinned_bytes, is_pinned(&e, e.list[i]) ? d->bytes[e.list[i]] : 0);
        out->fail_need_bytes = need_bytes + pinned_bytes;
        break;
      }
      engine_remove(&e, victim, k);
    }
    if (!out->feasible)
      break;
    for (guint32 i = d->need_start[k]; i < d->need_start[k + 1]; i++) {
      guint32 item = d->need[i];
      e.last_use[item] = k + 1;
      if (!e.resident[item]) {
        engine_add(&e, item);
        e.dirty[item] = 0;
        StwAction a = { .moment = k, .item = item, .kind = STW_ACTION_FETCH };
        g_array_append_val(out->actions, a);
        out->h2d_bytes = stw_cost_add(out->h2d_bytes, d->bytes[item]);
      }
    }
    for (guint32 i = d->write_start[k]; i < d->write_start[k + 1]; i++)
      e.dirty[d->write[i]] = 1;
  }
  stw_actions_sort(out->actions);

  g_free(e.resident);
  g_free(e.dirty);
  g_free(e.list);
  g_free(e.pos);
  g_free(e.needed_at);
  g_free(e.last_use);
  item_steps_clear(&e.uses);
  item_steps_clear(&e.forbids);
  return out->feasible;
}

/* ---- replay ------------------------------------------------------------------------------- */

void
stw_replay_clear(StwReplay *r)
{
  g_clear_pointer(&r->occupancy, g_free);
  g_clear_pointer(&r->removed_at, g_free);
}

static gboolean
replay_fail(StwReplay *r, StwReplayFailure f, guint32 moment, guint32 item)
{
  r->failure = f;
  r->moment = moment;
  r->item = item;
  return FALSE;
}

gboolean
stw_schedule_replay(const StwDemand *d, const StwSchedule *s, gboolean cyclic, StwReplay *r)
{
  memset(r, 0, sizeof *r);
  gsize n = MAX(d->n_items, 1);
  g_autofree guint8 *res = g_memdup2(s->resident, n);
  g_autofree guint8 *dirty = g_memdup2(s->dirty, n);
  guint64 used = 0;
  for (guint32 i = 0; i < d->n_items; i++)
    used = stw_cost_add(used, res[i] ? d->bytes[i] : 0);
  r->occupancy = g_new0(guint64, MAX(d->n_steps, 1));
  const StwAction *a = (const StwAction *)s->actions->data;
  guint32 n_actions = s->actions->len, next = 0;
  /* in a loop the start state is also the state right after the previous iteration's end,
   * before this one's first removals */
  if (cyclic && d->n_steps > 0 && used > d->capacity[0]) {
    r->resident_bytes = used;
    return replay_fail(r, STW_REPLAY_OVER_CAPACITY, 0, 0);
  }

  for (guint32 m = 0; m <= d->n_steps; m++) {
    for (; next < n_actions && a[next].moment == m; next++) {
      guint32 item = a[next].item;
      if (item >= d->n_items)
        return replay_fail(r, STW_REPLAY_REMOVE_ABSENT, m, item);
      if (a[next].kind == STW_ACTION_FETCH || a[next].kind == STW_ACTION_GATHER) {
        if (res[item])
          return replay_fail(r, STW_REPLAY_FETCH_RESIDENT, m, item);
        res[item] = 1;
        dirty[item] = 0;
        used = stw_cost_add(used, d->bytes[item]);
        if (a[next].kind == STW_ACTION_FETCH)
          r->h2d_bytes = stw_cost_add(r->h2d_bytes, d->bytes[item]);
      } else if (a[next].kind == STW_ACTION_REDUCE_SCATTER) {
        if (!res[item])
          return replay_fail(r, STW_REPLAY_NOT_RESIDENT, m, item);
      } else {
        if (!res[item])
          return replay_fail(r, STW_REPLAY_REMOVE_ABSENT, m, item);
        if (a[next].kind == STW_ACTION_DROP && dirty[item])
          return replay_fail(r, STW_REPLAY_DROP_DIRTY, m, item);
        if (a[next].kind == STW_ACTION_EVICT)
          r->d2h_bytes = stw_cost_add(r->d2h_bytes, d->bytes[item]);
        res[item] = 0;
        dirty[item] = 0;
        used -= d->bytes[item];
      }
    }
    if (next < n_actions && a[next].moment < m)
      return replay_fail(r, STW_REPLAY_REMOVE_ABSENT, a[next].moment, a[next].item);
    if (m == d->n_steps)
      break;
    for (guint32 i = d->need_start[m]; i < d->need_start[m + 1]; i++) {
      if (!res[d->need[i]])
        return replay_fail(r, STW_REPLAY_NOT_RESIDENT, m, d->need[i]);
    }
    for (guint32 i = d->forbid_start[m]; i < d->forbid_start[m + 1]; i++) {
      if (res[d->forbid[i]])
        return replay_fail(r, STW_REPLAY_FORBIDDEN, m, d->forbid[i]);
    }
    r->occupancy[m] = used;
    if (used > d->capacity[m]) {
      r->resident_bytes = used;
      return replay_fail(r, STW_REPLAY_OVER_CAPACITY, m, 0);
    }
    for (guint32 i = d->write_start[m]; i < d->write_start[m + 1]; i++)
      dirty[d->write[i]] = 1;
  }
  if (next < n_actions)
    return replay_fail(r, STW_REPLAY_REMOVE_ABSENT, a[next].moment, a[next].item);
  if (cyclic) {
    for (guint32 i = 0; i < d->n_items; i++) {
      if (res[i] != s->resident[i] || (dirty[i] && !s->dirty[i]))
        return replay_fail(r, STW_REPLAY_END_STATE, d->n_steps, i);
    }
  }
  r->failure = STW_REPLAY_OK;
  return TRUE;
}

/* ---- steady state ------------------------------------------------------------------------- */

/* Moment n_steps and the next iteration's moment 0 are one instant, and its removals must come
 * before its fetches, or the chunks fetched at the end and those leaving at the start are on
 * the GPU together. A removal at moment 0 moves to the end (the iteration then starts without
 * the chunk); one that undoes a fetch at the end cancels it. */
static void
boundary_removals_first(const StwDemand *d, StwSchedule *s)
{
  guint32 n = d->n_steps;
  g_autofree guint32 *end_fetch = g_new(guint32, MAX(d->n_items, 1));
  for (guint32 i = 0; i < d->n_items; i++)
    end_fetch[i] = G_MAXUINT32;
  StwAction *a = (StwAction *)s->actions->data;
  for (guint32 i = 0; i < s->actions->len; i++) {
    if (a[i].moment == n && a[i].kind == STW_ACTION_FETCH)
      end_fetch[a[i].item] = i;
  }
  GArray *kept = g_array_sized_new(FALSE, FALSE, sizeof(StwAction), s->actions->len);
  g_autofree guint8 *cancelled = g_malloc0(MAX(s->actions->len, 1));
  for (guint32 i = 0; i < s->actions->len; i++) {
    StwAction x = a[i];
    gboolean removal = x.kind == STW_ACTION_EVICT || x.kind == STW_ACTION_DROP;
    if (x.moment != 0 || !removal || !s->resident[x.item])
      continue;
    if (end_fetch[x.item] != G_MAXUINT32) {
      cancelled[end_fetch[x.item]] = 1;
      cancelled[i] = 1;
      s->h2d_bytes -= d->bytes[x.item];
      if (x.kind == STW_ACTION_EVICT)
        s->d2h_bytes -= d->bytes[x.item]; /* fetched clean at the end: nothing to write */
    } else {
      a[i].moment = n;
    }
    s->resident[x.item] = 0;
    s->dirty[x.item] = 0;
  }
  for (guint32 i = 0; i < s->actions->len; i++) {
    if (!cancelled[i])
      g_array_append_val(kept, a[i]);
  }
  g_array_unref(s->actions);
  s->actions = kept;
  stw_actions_sort(s->actions);
}

gboolean
stw_schedule_steady(const StwDemand *d, const StwEngineOptions *opt, StwSchedule *out)
{
  g_autoptr(StwDemand) twice = stw_demand_repeat(d, 2);
  StwSchedule run;
  gboolean ok = stw_schedule_run(twice, NULL, NULL, opt, &run);
  memset(out, 0, sizeof *out);
  out->actions = g_array_new(FALSE, FALSE, sizeof(StwAction));
  out->feasible = ok;
  if (!ok) {
    out->fail_step = run.fail_step % MAX(d->n_steps, 1);
    out->fail_need_bytes = run.fail_need_bytes;
    out->resident = g_malloc0(MAX(d->n_items, 1));
    out->dirty = g_malloc0(MAX(d->n_items, 1));
    stw_schedule_clear(&run);
    return FALSE;
  }
  /* the state between the iterations: the cold start's state, then the first iteration */
  gsize n = MAX(d->n_items, 1);
  guint8 *res = g_memdup2(run.resident, n), *dirty = g_memdup2(run.dirty, n);
  const StwAction *a = (const StwAction *)run.actions->data;
  guint32 i = 0;
  for (guint32 m = 0; m < d->n_steps; m++) {
    for (; i < run.actions->len && a[i].moment == m; i++) {
      res[a[i].item] = a[i].kind == STW_ACTION_FETCH;
      dirty[a[i].item] = 0;
    }
    for (guint32 w = d->write_start[m]; w < d->write_start[m + 1]; w++)
      dirty[d->write[w]] = 1;
  }
  out->resident = g_memdup2(res, n);
  out->dirty = g_memdup2(dirty, n);
  /* the second iteration's actions, shifted to moments 0 .. n_steps - 1 */
  for (; i < run.actions->len; i++) {
    StwAction x = a[i];
    x.moment -= d->n_steps;
    g_array_append_val(out->actions, x);
    if (x.kind == STW_ACTION_EVICT)
      out->d2h_bytes = stw_cost_add(out->d2h_bytes, d->bytes[x.item]);
    else if (x.kind == STW_ACTION_FETCH)
      out->h2d_bytes = stw_cost_add(out->h2d_bytes, d->bytes[x.item]);
  }
  /* the end state: the second iteration's actions and writes applied to the start state */
  memcpy(dirty, out->dirty, n);
  memcpy(res, out->resident, n);
  i = 0;
  const StwAction *b = (const StwAction *)out->actions->data;
  for (guint32 m = 0; m < d->n_steps; m++) {
    for (; i < out->actions->len && b[i].moment == m; i++) {
      res[b[i].item] = b[i].kind == STW_ACTION_FETCH;
      dirty[b[i].item] = 0;
    }
    for (guint32 w = d->write_start[m]; w < d->write_start[m + 1]; w++)
      dirty[d->write[w]] = 1;
  }
  /* restore the start state at the end of the iteration */
  for (guint32 item = 0; item < d->n_items; item++) {
    gboolean want = out->resident[item];
    StwAction x = { .moment = d->n_steps, .item = item };
    if (res[item] && (!want || (dirty[item] && !out->dirty[item]))) {
      x.kind = dirty[item] ? STW_ACTION_EVICT : STW_ACTION_DROP;
      if (dirty[item])
        out->d2h_bytes = stw_cost_add(out->d2h_bytes, d->bytes[item]);
      g_array_append_val(out->actions, x);
      res[item] = 0;
    }
    if (want && !res[item]) {
      x.kind = STW_ACTION_FETCH;
      out->h2d_bytes = stw_cost_add(out->h2d_bytes, d->bytes[item]);
      g_array_append_val(out->actions, x);
    }
  }
  boundary_removals_first(d, out);
  g_free(res);
  g_free(dirty);
  stw_schedule_clear(&run);
  return TRUE;
}

/* ---- prefetch ----------------------------------------------------------------------------- */

/* The bytes of ITEM's fetch that count against the prefetch distance: none where UNBOUNDED
 * says the distance does not bound it. */
static guint64
ahead_bytes(const StwDemand *d, const guint8 *unbounded, guint32 item)
{
  return unbounded != NULL && unbounded[item] ? 0 : d->bytes[item];
}

/* Whether B more bytes fit in every step of [FROM, TO), AHEAD_B of them fetched ahead. */
static gboolean
room(const StwDemand *d, const guint64 *occupancy, const guint64 *ahead, guint64 max_ahead,
     guint32 from, guint32 to, guint64 b, guint64 ahead_b)
{
  for (guint32 j = from; j < to; j++) {
    if (occupancy[j] + b > d->capacity[j] || ahead[j] + ahead_b > max_ahead)
      return FALSE;
  }
  return TRUE;
}

static void
take_room(guint64 *occupancy, guint64 *ahead, guint32 from, guint32 to, guint64 b,
          guint64 ahead_b)
{
  for (guint32 j = from; j < to; j++) {
    occupancy[j] = stw_cost_add(occupancy[j], b);
    ahead[j] = stw_cost_add(ahead[j], ahead_b);
  }
}

/* The second half of hoisting: a chunk that the iteration starts without, fetches at moment M
 * and later removes (CPU Adam takes its gradients, say) can instead be fetched in the previous
 * iteration's tail, after that removal, when there is room from then through M: the steady
 * state then starts with it resident. This is what lets the first forward chunks arrive during
 * the optimizer stage. */
static void
hoist_across(const StwDemand *d, StwSchedule *s, guint64 *occupancy, guint64 *ahead,
             guint64 max_ahead, const guint8 *unbounded)
{
  guint32 n = d->n_steps;
  g_autofree guint32 *first = g_new(guint32, MAX(d->n_items, 1));   /* first action index */
  g_autofree guint32 *floor_at = g_new0(guint32, MAX(d->n_items, 1)); /* tail floor */
  for (guint32 i = 0; i < d->n_items; i++)
    first[i] = G_MAXUINT32;
  StwAction *a = (StwAction *)s->actions->data;
  for (guint32 i = 0; i < s->actions->len; i++) {
    if (first[a[i].item] == G_MAXUINT32)
      first[a[i].item] = i;
    if (a[i].kind != STW_ACTION_FETCH)
      floor_at[a[i].item] = MAX(floor_at[a[i].item], a[i].moment);
  }
  g_autofree guint32 *first_forbid = g_new(guint32, MAX(d->n_items, 1));
  for (guint32 i = 0; i < d->n_items; i++)
    first_forbid[i] = G_MAXUINT32;
  for (guint32 k = 0; k < n; k++)
    for (guint32 f = d->forbid_start[k]; f < d->forbid_start[k + 1]; f++) {
      floor_at[d->forbid[f]] = MAX(floor_at[d->forbid[f]], k + 1);
      first_forbid[d->forbid[f]] = MIN(first_forbid[d->forbid[f]], k);
    }
  /* in order of need: the earliest fetches get the room first; a chunk that must be off the GPU
   * before its fetch cannot start the iteration on it */
  for (guint32 i = 0; i < s->actions->len; i++) {
    guint32 item = a[i].item, m = a[i].moment;
    guint64 b = d->bytes[item], counted = ahead_bytes(d, unbounded, item);
    if (a[i].kind != STW_ACTION_FETCH || first[item] != i || s->resident[item] ||
        floor_at[item] == 0 || m == n || first_forbid[item] < m ||
        !room(d, occupancy, ahead, max_ahead, 0, m, b, counted))
      continue;
    guint32 t = n;
    while (t > floor_at[item] && room(d, occupancy, ahead, max_ahead, t - 1, t, b, counted))
      t--;
    take_room(occupancy, ahead, 0, m, b, counted);
    take_room(occupancy, ahead, t, n, b, counted);
    a[i].moment = t;
    s->resident[item] = 1;
    s->dirty[item] = 0;
  }
}

void
stw_schedule_write_back_early(const StwDemand *d, StwSchedule *s)
{
  /* per item, the first moment it may leave: after the last step that needs or writes it, after
   * its last fetch, not before its last reduce-scatter */
  g_autofree guint32 *since = g_new0(guint32, MAX(d->n_items, 1));
  StwAction *a = (StwAction *)s->actions->data;
  guint32 i = 0;
  for (guint32 m = 0; m <= d->n_steps; m++) {
    for (; i < s->actions->len && a[i].moment == m; i++) {
      guint32 item = a[i].item;
      if (item >= d->n_items)
        continue;
      if (a[i].kind == STW_ACTION_EVICT && since[item] > 0 && since[item] < m)
        a[i].moment = since[item];
      else if (a[i].kind == STW_ACTION_FETCH || a[i].kind == STW_ACTION_GATHER)
        since[item] = m + 1;
      else if (a[i].kind == STW_ACTION_REDUCE_SCATTER)
        since[item] = MAX(since[item], m);
    }
    if (m == d->n_steps)
      break;
    for (guint32 j = d->need_start[m]; j < d->need_start[m + 1]; j++)
      since[d->need[j]] = m + 1;
    for (guint32 j = d->write_start[m]; j < d->write_start[m + 1]; j++)
      since[d->write[j]] = m + 1;
  }
  stw_actions_sort(s->actions);
}

void
stw_schedule_hoist(const StwDemand *d, StwSchedule *s, guint64 max_ahead_bytes,
                   const guint8 *unbounded)
{
  if (max_ahead_bytes == 0 || d->n_steps == 0)
    return;
  StwReplay r;
  if (!stw_schedule_replay(d, s, FALSE, &r)) {
    stw_replay_clear(&r);
    return; /* nothing to improve on an unsound schedule; check will say why */
  }
  g_autofree guint64 *ahead = g_new0(guint64, d->n_steps);
  /* for each item, the latest moment before which it may not be fetched: its last removal,
   * or the step after the last step forbidding it */
  g_autofree guint32 *floor_at = g_new0(guint32, MAX(d->n_items, 1));
  StwAction *a = (StwAction *)s->actions->data;
  guint32 i = 0;
  for (guint32 m = 0; m <= d->n_steps; m++) {
    guint32 batch_end = i;
    while (batch_end < s->actions->len && a[batch_end].moment == m)
      batch_end++;
    for (guint32 k = i; k < batch_end; k++) {
      if (a[k].kind != STW_ACTION_FETCH) {
        floor_at[a[k].item] = m;
        continue;
      }
      guint32 item = a[k].item;
      guint64 b = d->bytes[item], counted = ahead_bytes(d, unbounded, item);
      guint32 target = m;
      while (target > floor_at[item] &&
             room(d, r.occupancy, ahead, max_ahead_bytes, target - 1, target, b, counted))
        target--;
      take_room(r.occupancy, ahead, target, m, b, counted);
      a[k].moment = target;
    }
    i = batch_end;
    if (m < d->n_steps) {
      for (guint32 f = d->forbid_start[m]; f < d->forbid_start[m + 1]; f++)
        floor_at[d->forbid[f]] = m + 1;
    }
  }
  stw_actions_sort(s->actions);
  hoist_across(d, s, r.occupancy, ahead, max_ahead_bytes, unbounded);
  stw_actions_sort(s->actions);
  stw_replay_clear(&r);
}

/* ---- lower bound -------------------------------------------------------------------------- */

/* Items in the order the fractional Belady evicts them: the farthest next use first. */
typedef struct {
  guint32 item;
  guint64 next;   /* steps until its next need, cyclically; never needed: G_MAXUINT64 */
} Victim;

static gint
farther_first(gconstpointer a, gconstpointer b)
{
  const Victim *x = a, *y = b;
  return x->next > y->next ? -1 : x->next < y->next ? 1 : (x->item > y->item) - (x->item < y->item);
}

/* The fetch volume of the fractional relaxation in steady state: an item may be partly resident,
 * a need makes it whole (paying the missing bytes), a forbid removes it, and where a step's
 * capacity is short the items needed farthest ahead give up bytes first, in any amount. Belady
 * evicting by bytes is optimal for that relaxation, whose optimum is at most any real
 * schedule's, whatever the items' sizes (with one size it is the integral optimum). PINNED items
 * are never evicted. Three iterations are run; the third is counted. */
static double
fractional_fetches(const StwDemand *d, const guint8 *pinned)
{
  guint32 n = d->n_items, steps = d->n_steps;
  if (n == 0 || steps == 0)
    return 0;
  /* every item's need steps, ascending, for its next use */
  g_autofree guint32 *count = g_new0(guint32, n + 1), *uses = NULL;
  for (guint32 k = 0; k < steps; k++)
    for (guint32 j = d->need_start[k]; j < d->need_start[k + 1]; j++)
      count[d->need[j] + 1]++;
  for (guint32 i = 0; i < n; i++)
    count[i + 1] += count[i];
  uses = g_new(guint32, MAX(count[n], 1));
  g_autofree guint32 *fill = g_memdup2(count, (n + 1) * sizeof(guint32));
  for (guint32 k = 0; k < steps; k++)
    for (guint32 j = d->need_start[k]; j < d->need_start[k + 1]; j++)
      uses[fill[d->need[j]]++] = k;
  g_autofree double *frac = g_new0(double, n);
  g_autofree guint32 *needed_at = g_new0(guint32, n); /* step + 1 of the last need seen */
  g_autoptr(GArray) victims = g_array_new(FALSE, FALSE, sizeof(Victim));
  double fetched = 0;
  for (guint32 pass = 0; pass < 3; pass++) {
    for (guint32 k = 0; k < steps; k++) {
      guint32 stamp = pass * steps + k + 1;
      for (guint32 f = d->forbid_start[k]; f < d->forbid_start[k + 1]; f++)
        frac[d->forbid[f]] = 0;
      double resident = 0;
      for (guint32 j = d->need_start[k]; j < d->need_start[k + 1]; j++) {
        guint32 i = d->need[j];
        if (pass == 2)
          fetched += (1 - frac[i]) * (double)d->bytes[i];
        frac[i] = 1;
        needed_at[i] = stamp;
      }
      g_array_set_size(victims, 0);
      for (guint32 i = 0; i < n; i++) {
        if (pinned != NULL && pinned[i]) {
          frac[i] = 1; /* resident all along: fetched once, before the steady state */
          needed_at[i] = stamp;
        }
        resident += frac[i] * (double)d->bytes[i];
        if (frac[i] <= 0 || needed_at[i] == stamp)
          continue;
        /* the next need after step k, cyclically */
        Victim v = { .item = i, .next = G_MAXUINT64 };
        for (guint32 u = count[i]; u < count[i + 1]; u++) {
          guint64 ahead = uses[u] > k ? uses[u] - k : uses[u] + steps - k;
          v.next = MIN(v.next, ahead);
        }
        g_array_append_val(victims, v);
      }
      double over = resident - (double)d->capacity[k];
      if (over <= 0)
        continue;
      g_array_sort(victims, farther_first);
      for (guint v = 0; v < victims->len && over > 0; v++) {
        guint32 i = g_array_index(victims, Victim, v).item;
        double give = MIN(frac[i] * (double)d->bytes[i], over);
        frac[i] -= give / (double)d->bytes[i];
        over -= give;
      }
    }
  }
  return fetched;
}

guint64
stw_schedule_lower_bound(const StwDemand *d, const guint8 *pinned)
{
  /* fetch volume. With one size among the items fetched (pinned ones and those of no bytes aside)
   * Belady is optimal: its steady
   * state, evictions free. With several it is not, and the fractional relaxation bounds every
   * schedule instead; any schedule moves whole bytes, so at least the next integer (less a
   * rounding allowance for the sums of fractions). */
  g_autofree guint8 *used = g_malloc0(MAX(d->n_items, 1));
  for (guint32 j = 0; j < d->need_start[d->n_steps]; j++)
    used[d->need[j]] = 1;
  guint64 size = 0;
  gboolean uniform = TRUE;
  for (guint32 i = 0; i < d->n_items && uniform; i++) {
    if (d->bytes[i] == 0 || !used[i] || (pinned != NULL && pinned[i]))
      continue; /* never fetched in steady state: on the GPU all along, or never there */
    uniform = size == 0 || d->bytes[i] == size;
    size = d->bytes[i];
  }
  guint64 bound = 0;
  if (uniform) {
    StwEngineOptions opt = { .rule = STW_EVICT_FARTHEST, .pinned = pinned };
    StwSchedule s;
    if (stw_schedule_steady(d, &opt, &s))
      bound = s.h2d_bytes;
    stw_schedule_clear(&s);
  } else {
    double fetches = fractional_fetches(d, pinned);
    bound = fetches > 0 ? (guint64)ceil(fetches - 1e-6 * MAX(1.0, fetches)) : 0;
  }
  /* write-back volume: an item written and later forbidden must reach the CPU in between,
   * once per write-then-forbid pair, counted cyclically over the iteration */
  g_autofree guint8 *written = g_malloc0(MAX(d->n_items, 1));
  for (guint32 pass = 0; pass < 2; pass++) {
    for (guint32 k = 0; k < d->n_steps; k++) {
      for (guint32 f = d->forbid_start[k]; f < d->forbid_start[k + 1]; f++) {
        guint32 item = d->forbid[f];
        if (written[item] && pass == 1)
          bound = stw_cost_add(bound, d->bytes[item]);
        written[item] = 0;
      }
      for (guint32 w = d->write_start[k]; w < d->write_start[k + 1]; w++)
        written[d->write[w]] = 1;
    }
  }
  return bound;
}
