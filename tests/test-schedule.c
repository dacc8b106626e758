/* test-schedule.c — the scheduling engine against hand-worked cases, its replay's verdicts, and
 * an exact solver on many random small instances. */
#include "config.h"

#include <glib.h>

#include "schedule.h"
#include "testutil.h"

/* A demand over N items of SIZE bytes; steps are added by the caller. */
static StwDemand *
demand(guint32 n, guint64 size)
{
  g_autofree guint64 *bytes = g_new(guint64, n);
  for (guint32 i = 0; i < n; i++)
    bytes[i] = size;
  return stw_demand_new(n, bytes);
}

static void
step(StwDemand *d, guint64 cap, const char *need, const char *write, const char *forbid)
{
  stw_demand_step(d, cap);
  for (const char *p = need; *p; p++)
    stw_demand_need(d, (guint32)(*p - 'a'));
  for (const char *p = write; *p; p++)
    stw_demand_write(d, (guint32)(*p - 'a'));
  for (const char *p = forbid; *p; p++)
    stw_demand_forbid(d, (guint32)(*p - 'a'));
}

/* Asserts that S's actions, written "moment:kind item, ...", are WANT. */
static void
assert_actions(const StwSchedule *s, const char *want)
{
  g_autoptr(GString) got = g_string_new(NULL);
  for (guint i = 0; i < s->actions->len; i++) {
    const StwAction *a = &g_array_index(s->actions, StwAction, i);
    g_string_append_printf(got, "%s%u:%s %c", i ? ", " : "", a->moment,
                           stw_action_kind_name(a->kind), 'a' + a->item);
  }
  g_assert_cmpstr(got->str, ==, want);
}

/* Belady on the classic sequence: capacity 2, a b c a b; at c it evicts b (used after a). */
static void
test_belady(void)
{
  g_autoptr(StwDemand) d = demand(3, 10);
  step(d, 20, "a", "", "");
  step(d, 20, "b", "", "");
  step(d, 20, "c", "", "");
  step(d, 20, "a", "", "");
  step(d, 20, "b", "", "");
  stw_demand_finish(d);
  StwEngineOptions o = { .rule = STW_EVICT_FARTHEST };
  StwSchedule s;
  g_assert_true(stw_schedule_run(d, NULL, NULL, &o, &s));
  assert_actions(&s, "0:fetch a, 1:fetch b, 2:drop b, 2:fetch c, 4:drop a, 4:fetch b");
  g_assert_cmpuint(s.h2d_bytes, ==, 40);
  g_assert_cmpuint(s.d2h_bytes, ==, 0);
  stw_schedule_clear(&s);

  o.rule = STW_EVICT_LRU; /* LRU evicts a at c, then misses on a and b */
  g_assert_true(stw_schedule_run(d, NULL, NULL, &o, &s));
  g_assert_cmpuint(s.h2d_bytes, ==, 50);
  stw_schedule_clear(&s);
}

/* Two chunks equally far in the future: plain Belady takes the lower id (dirty a, a write-back),
 * the clean-preferring rule takes the clean one (b) for free. */
static void
test_clean_preference(void)
{
  g_autoptr(StwDemand) d = demand(3, 10);
  step(d, 20, "a", "a", "");
  step(d, 20, "b", "", "");
  step(d, 20, "c", "", "");
  stw_demand_finish(d);
  StwEngineOptions o = { .rule = STW_EVICT_FARTHEST };
  StwSchedule s;
  g_assert_true(stw_schedule_run(d, NULL, NULL, &o, &s));
  g_assert_cmpuint(s.d2h_bytes, ==, 10);
  stw_schedule_clear(&s);
  o.rule = STW_EVICT_FARTHEST_CLEAN;
  g_assert_true(stw_schedule_run(d, NULL, NULL, &o, &s));
  g_assert_cmpuint(s.d2h_bytes, ==, 0);
  assert_actions(&s, "0:fetch a, 1:fetch b, 2:drop b, 2:fetch c");
  stw_schedule_clear(&s);
}

static void
test_forbid_and_infeasible(void)
{
  /* a is written, then must be on the CPU (CPU Adam): an eviction, then a refetch */
  g_autoptr(StwDemand) d = demand(2, 10);
  step(d, 100, "a", "a", "");
  step(d, 100, "", "", "a");
  step(d, 100, "a", "", "");
  stw_demand_finish(d);
  StwEngineOptions o = { .rule = STW_EVICT_FARTHEST_CLEAN };
  StwSchedule s;
  g_assert_true(stw_schedule_run(d, NULL, NULL, &o, &s));
  assert_actions(&s, "0:fetch a, 1:evict a, 2:fetch a");
  g_assert_cmpuint(stw_schedule_lower_bound(d, NULL), ==, 20); /* fetch + forced write-back */
  stw_schedule_clear(&s);

  g_autoptr(StwDemand) tight = demand(2, 10);
  step(tight, 20, "a", "", "");
  step(tight, 15, "ab", "", "");
  stw_demand_finish(tight);
  g_assert_false(stw_schedule_run(tight, NULL, NULL, &o, &s));
  g_assert_cmpuint(s.fail_step, ==, 1);
  g_assert_cmpuint(s.fail_need_bytes, ==, 20);
  stw_schedule_clear(&s);
}

static void
test_steady_and_hoist(void)
{
  /* a loop over a, b, (nothing), c with room for two chunks: in steady state the iteration
   * starts with a and c resident (what the previous iteration left), swaps a for b at step 1,
   * and at the end swaps b back for a: 20 bytes fetched per iteration */
  g_autoptr(StwDemand) d = demand(3, 10);
  step(d, 20, "a", "", "");
  step(d, 20, "b", "", "");
  step(d, 20, "", "", "");
  step(d, 20, "c", "", "");
  stw_demand_finish(d);
  StwEngineOptions o = { .rule = STW_EVICT_FARTHEST_CLEAN };
  StwSchedule s;
  g_assert_true(stw_schedule_steady(d, &o, &s));
  g_assert_true(s.resident[0] && !s.resident[1] && s.resident[2]);
  assert_actions(&s, "1:drop a, 1:fetch b, 4:drop b, 4:fetch a");
  StwReplay r;
  g_assert_true(stw_schedule_replay(d, &s, TRUE, &r));
  stw_replay_clear(&r);
  g_assert_cmpuint(s.h2d_bytes, ==, 20);
  stw_schedule_clear(&s);

  /* hoisting: b is needed at step 2; step 1 has room for it, step 0 does not */
  g_autoptr(StwDemand) h = demand(2, 10);
  step(h, 10, "a", "", "");
  step(h, 20, "", "", "");
  step(h, 20, "b", "", "");
  stw_demand_finish(h);
  g_assert_true(stw_schedule_run(h, NULL, NULL, &o, &s));
  stw_schedule_hoist(h, &s, G_MAXUINT64, NULL);
  assert_actions(&s, "0:fetch a, 1:fetch b");
  g_assert_true(stw_schedule_replay(h, &s, FALSE, &r));
  stw_replay_clear(&r);
  stw_schedule_clear(&s);
  /* a prefetch bucket smaller than the chunk keeps it where it was */
  g_assert_true(stw_schedule_run(h, NULL, NULL, &o, &s));
  stw_schedule_hoist(h, &s, 5, NULL);
  g_assert_cmpuint(g_array_index(s.actions, StwAction, 1).moment, ==, 2);
  stw_schedule_clear(&s);
  /* unless b is one the bucket does not bound (a rank's own chunk coming back): room alone */
  const guint8 unbounded[2] = { 0, 1 };
  g_assert_true(stw_schedule_run(h, NULL, NULL, &o, &s));
  stw_schedule_hoist(h, &s, 5, unbounded);
  assert_actions(&s, "0:fetch a, 1:fetch b");
  stw_schedule_clear(&s);
}

/* Early write-back: a and b are written by backward at steps 0 and 1, then their optimizer
 * steps (2 and 3) forbid them on the GPU; the engine evicts each at the step that forbids it,
 * and write_back_early moves each to the moment after its last write (a at 1, b at 2), where its
 * copy overlaps the steps between. c, fetched clean and read at step 1, is dropped, not moved;
 * the bytes are the same and the schedule replays. */
static void
test_write_back_early(void)
{
  g_autoptr(StwDemand) d = demand(3, 10);
  step(d, 100, "a", "a", "");
  step(d, 100, "bc", "b", "");
  step(d, 100, "", "", "ac");
  step(d, 100, "", "", "b");
  stw_demand_finish(d);
  StwEngineOptions o = { .rule = STW_EVICT_FARTHEST_CLEAN };
  StwSchedule s;
  g_assert_true(stw_schedule_run(d, NULL, NULL, &o, &s));
  assert_actions(&s, "0:fetch a, 1:fetch b, 1:fetch c, 2:evict a, 2:drop c, 3:evict b");
  guint64 d2h = s.d2h_bytes;
  stw_schedule_write_back_early(d, &s);
  assert_actions(&s, "0:fetch a, 1:evict a, 1:fetch b, 1:fetch c, 2:evict b, 2:drop c");
  StwReplay r;
  g_assert_true(stw_schedule_replay(d, &s, FALSE, &r));
  g_assert_cmpuint(r.d2h_bytes, ==, d2h);
  g_assert_cmpuint(r.d2h_bytes, ==, 20);
  stw_replay_clear(&r);
  stw_schedule_clear(&s);
}

static void
test_replay_failures(void)
{
  g_autoptr(StwDemand) d = demand(2, 10);
  step(d, 10, "a", "a", "");
  step(d, 10, "b", "", "");
  stw_demand_finish(d);
  StwSchedule s = { .resident = g_malloc0(2), .dirty = g_malloc0(2),
                    .actions = g_array_new(FALSE, FALSE, sizeof(StwAction)) };
  StwReplay r;
  /* nothing fetched */
  g_assert_false(stw_schedule_replay(d, &s, FALSE, &r));
  g_assert_cmpint(r.failure, ==, STW_REPLAY_NOT_RESIDENT);
  g_assert_cmpuint(r.moment, ==, 0);
  stw_replay_clear(&r);
  StwAction fa = { 0, 0, STW_ACTION_FETCH };
  g_array_append_val(s.actions, fa);
  StwAction fb = { 1, 1, STW_ACTION_FETCH };
  g_array_append_val(s.actions, fb);
  /* both resident at step 1: 20 bytes in 10 */
  g_assert_false(stw_schedule_replay(d, &s, FALSE, &r));
  g_assert_cmpint(r.failure, ==, STW_REPLAY_OVER_CAPACITY);
  g_assert_cmpuint(r.resident_bytes, ==, 20);
  stw_replay_clear(&r);
  /* dropping a after it was written loses its data */
  StwAction da = { 1, 0, STW_ACTION_DROP };
  g_array_append_val(s.actions, da);
  stw_actions_sort(s.actions);
  g_assert_false(stw_schedule_replay(d, &s, FALSE, &r));
  g_assert_cmpint(r.failure, ==, STW_REPLAY_DROP_DIRTY);
  stw_replay_clear(&r);
  g_array_index(s.actions, StwAction, 1).kind = STW_ACTION_EVICT;
  g_assert_true(stw_schedule_replay(d, &s, FALSE, &r));
  g_assert_cmpuint(r.d2h_bytes, ==, 10);
  stw_replay_clear(&r);
  /* but b is left on the GPU: not the state the iteration started from */
  g_assert_false(stw_schedule_replay(d, &s, TRUE, &r));
  g_assert_cmpint(r.failure, ==, STW_REPLAY_END_STATE);
  stw_replay_clear(&r);
  stw_schedule_clear(&s);
}

/* ---- the exact solver -------------------------------------------------------------------------- */

/* Minimum bytes (fetches + write-backs, or fetches alone) over all schedules from a cold start,
 * by dynamic programming over every item's state (off, clean, dirty) at every step. */
static guint64
exact(const StwDemand *d, gboolean fetches_only)
{
  guint32 n = d->n_items, states = 1;
  for (guint32 i = 0; i < n; i++)
    states *= 3;
  guint64 *cost = g_new(guint64, states), *next = g_new(guint64, states);
  for (guint32 s = 0; s < states; s++)
    cost[s] = s == 0 ? 0 : G_MAXUINT64;
  for (guint32 k = 0; k < d->n_steps; k++) {
    for (guint32 s = 0; s < states; s++)
      next[s] = G_MAXUINT64;
    for (guint32 s = 0; s < states; s++) {
      if (cost[s] == G_MAXUINT64)
        continue;
      for (guint32 keep = 0; keep < (1u << n); keep++) { /* the resident set during step k */
        guint64 c = cost[s], used = 0;
        guint32 t = 0, mul = 1, st = s;
        gboolean ok = TRUE;
        for (guint32 i = 0; i < n && ok; i++, mul *= 3) {
          guint32 cur = st % 3; /* 0 off, 1 clean, 2 dirty */
          st /= 3;
          gboolean res = (keep >> i) & 1;
          guint32 to = res ? (cur == 0 ? 1 : cur) : 0;
          if (res && cur == 0)
            c += d->bytes[i];
          if (!res && cur == 2 && !fetches_only)
            c += d->bytes[i];
          used += res ? d->bytes[i] : 0;
          t += to * mul;
        }
        if (used > d->capacity[k])
          continue;
        for (guint32 j = d->need_start[k]; j < d->need_start[k + 1] && ok; j++)
          ok = (keep >> d->need[j]) & 1;
        for (guint32 j = d->forbid_start[k]; j < d->forbid_start[k + 1] && ok; j++)
          ok = !((keep >> d->forbid[j]) & 1);
        if (!ok)
          continue;
        /* writes make resident items dirty */
        guint32 pow3[8] = { 1, 3, 9, 27, 81, 243, 729, 2187 };
        for (guint32 j = d->write_start[k]; j < d->write_start[k + 1]; j++) {
          guint32 i = d->write[j];
          guint32 digit = (t / pow3[i]) % 3;
          t += (2 - digit) * pow3[i];
        }
        next[t] = MIN(next[t], c);
      }
    }
    guint64 *tmp = cost;
    cost = next;
    next = tmp;
  }
  guint64 best = G_MAXUINT64;
  for (guint32 s = 0; s < states; s++)
    best = MIN(best, cost[s]);
  g_free(cost);
  g_free(next);
  return best;
}

static StwDemand *
random_demand(GRand *rng, gboolean mixed_sizes)
{
  guint32 n = (guint32)g_rand_int_range(rng, 3, 7);
  guint32 steps = (guint32)g_rand_int_range(rng, 10, 31);
  g_autofree guint64 *bytes = g_new(guint64, n);
  for (guint32 i = 0; i < n; i++)
    bytes[i] = mixed_sizes ? (guint64)g_rand_int_range(rng, 1, 4) * 10 : 10;
  StwDemand *d = stw_demand_new(n, bytes);
  for (guint32 k = 0; k < steps; k++) {
    gboolean last = k + 1 == steps;
    guint32 a = (guint32)g_rand_int_range(rng, 0, n), b = (guint32)g_rand_int_range(rng, 0, n);
    guint64 need = bytes[a] + (a != b ? bytes[b] : 0);
    guint64 total = 0;
    for (guint32 i = 0; i < n; i++)
      total += bytes[i];
    guint64 cap = need + (guint64)g_rand_int_range(rng, 0, (gint32)(total - need) + 1);
    stw_demand_step(d, cap);
    if (last) { /* the end: every item back on the CPU, gradients written back */
      for (guint32 i = 0; i < n; i++)
        stw_demand_forbid(d, i);
      continue;
    }
    stw_demand_need(d, a);
    if (g_rand_int_range(rng, 0, 2))
      stw_demand_need(d, b);
    if (g_rand_int_range(rng, 0, 3) == 0)
      stw_demand_write(d, a);
    guint32 f = (guint32)g_rand_int_range(rng, 0, n);
    if (g_rand_int_range(rng, 0, 8) == 0 && f != a && f != b)
      stw_demand_forbid(d, f);
  }
  stw_demand_finish(d);
  return d;
}

static guint64
engine_bytes(const StwDemand *d, StwEvictRule rule)
{
  StwEngineOptions o = { .rule = rule };
  StwSchedule s;
  g_assert_true(stw_schedule_run(d, NULL, NULL, &o, &s));
  StwReplay r;
  g_assert_true(stw_schedule_replay(d, &s, FALSE, &r)); /* every schedule is sound */
  g_assert_cmpuint(r.h2d_bytes, ==, s.h2d_bytes);
  g_assert_cmpuint(r.d2h_bytes, ==, s.d2h_bytes);
  stw_replay_clear(&r);
  guint64 total = s.h2d_bytes + s.d2h_bytes;
  stw_schedule_clear(&s);
  return total;
}

static void
run_random(gboolean mixed)
{
  GRand *rng = g_rand_new_with_seed(mixed ? 2026 : 1129);
  guint n = 500, clean_wins = 0, clean_loses = 0, optimal = 0;
  double gap_sum = 0, gap_max = 0, bound_sum = 0;
  for (guint i = 0; i < n; i++) {
    g_autoptr(StwDemand) d = random_demand(rng, mixed);
    guint64 fnu = engine_bytes(d, STW_EVICT_FARTHEST);
    guint64 clean = engine_bytes(d, STW_EVICT_FARTHEST_CLEAN);
    guint64 stowage = MIN(fnu, clean); /* what the stowage policy keeps */
    guint64 best = exact(d, FALSE);
    g_assert_cmpuint(best, <=, stowage);
    /* the lower bound is one, for mixed sizes too (every iteration here ends with everything
     * back on the CPU, so the cold start is the steady state) */
    guint64 bound = stw_schedule_lower_bound(d, NULL);
    if (bound > best)
      g_error("instance %u: lower bound %" G_GUINT64_FORMAT " above the optimum %" G_GUINT64_FORMAT,
              i, bound, best);
    bound_sum += best ? (double)bound / (double)best : 1;
    if (!mixed) /* and with one size its fetch part is exact */
      g_assert_cmpuint(bound, >=, exact(d, TRUE));
    g_assert_cmpuint(stowage, <=, fnu);
    if (!mixed) {
      /* with one chunk size and free clean evictions Belady fetches the fewest bytes */
      StwEngineOptions o = { .rule = STW_EVICT_FARTHEST };
      StwSchedule s;
      g_assert_true(stw_schedule_run(d, NULL, NULL, &o, &s));
      g_assert_cmpuint(s.h2d_bytes, ==, exact(d, TRUE));
      stw_schedule_clear(&s);
    }
    clean_wins += clean < fnu;
    clean_loses += clean > fnu;
    optimal += stowage == best;
    double gap = best ? (double)(stowage - best) / (double)best : 0;
    gap_sum += gap;
    gap_max = MAX(gap_max, gap);
  }
  g_test_message("%s sizes, %u random instances: the stowage rule is optimal in %u, mean gap "
                 "%.2f%%, worst %.1f%%; clean preference beat plain Belady %u times, lost %u; "
                 "the lower bound is %.1f%% of the optimum on average",
                 mixed ? "mixed" : "uniform", n, optimal, 100 * gap_sum / n, 100 * gap_max,
                 clean_wins, clean_loses, 100 * bound_sum / n);
  g_rand_free(rng);
}

static void
test_random_uniform(void)
{
  run_random(FALSE);
}

static void
test_random_mixed(void)
{
  run_random(TRUE);
}

/* The end of one iteration and moment 0 of the next are one instant: a steady schedule removes
 * nothing at moment 0, so its start state is what op 0 runs with and fits op 0's capacity; and
 * replay refuses a start state that does not. */
static void
test_iteration_boundary(void)
{
  GRand *rng = g_rand_new_with_seed(31);
  guint moved_fetches = 0;
  for (guint i = 0; i < 500; i++) {
    g_autoptr(StwDemand) d = random_demand(rng, i % 2 == 1);
    StwEngineOptions o = { .rule = STW_EVICT_FARTHEST_CLEAN };
    StwSchedule s;
    if (!stw_schedule_steady(d, &o, &s)) {
      stw_schedule_clear(&s);
      continue;
    }
    stw_schedule_hoist(d, &s, G_MAXUINT64, NULL);
    guint64 start = 0;
    for (guint32 k = 0; k < d->n_items; k++)
      start += s.resident[k] ? d->bytes[k] : 0;
    g_assert_cmpuint(start, <=, d->capacity[0]);
    for (guint k = 0; k < s.actions->len; k++) {
      const StwAction *a = &g_array_index(s.actions, StwAction, k);
      g_assert_true(a->moment != 0 || a->kind == STW_ACTION_FETCH);
      moved_fetches += a->moment == d->n_steps && a->kind == STW_ACTION_FETCH;
    }
    StwReplay r;
    if (!stw_schedule_replay(d, &s, TRUE, &r))
      g_error("instance %u: replay fails with %d at moment %u, item %u (%" G_GUINT64_FORMAT
              " bytes of %" G_GUINT64_FORMAT ")", i, r.failure, r.moment, r.item,
              r.resident_bytes, r.moment < d->n_steps ? d->capacity[r.moment] : 0);
    stw_replay_clear(&r);
    stw_schedule_clear(&s);
  }
  g_assert_cmpuint(moved_fetches, >, 0); /* the instances do prefetch across the boundary */
  g_rand_free(rng);

  /* the last step holds A and C; op 0 has room for B alone and must not find A (CPU Adam's
   * pattern): the steady state leaves A and C at the end instead of at moment 0 */
  {
    guint64 sizes[] = { 10, 10, 10 };
    g_autoptr(StwDemand) e = stw_demand_new(3, sizes);
    stw_demand_step(e, 10);
    stw_demand_need(e, 1);
    stw_demand_forbid(e, 0);
    stw_demand_step(e, 20);
    stw_demand_need(e, 0);
    stw_demand_step(e, 20);
    stw_demand_need(e, 0);
    stw_demand_need(e, 2);
    stw_demand_finish(e);
    StwEngineOptions o = { .rule = STW_EVICT_FARTHEST_CLEAN };
    StwSchedule t;
    g_assert_true(stw_schedule_steady(e, &o, &t));
    for (guint k = 0; k < t.actions->len; k++) {
      const StwAction *a = &g_array_index(t.actions, StwAction, k);
      g_assert_true(a->moment != 0 || a->kind == STW_ACTION_FETCH);
    }
    g_assert_false(t.resident[0]);
    g_assert_false(t.resident[2]);
    StwReplay r;
    g_assert_true(stw_schedule_replay(e, &t, TRUE, &r));
    stw_replay_clear(&r);
    stw_schedule_clear(&t);
  }

  /* a start state above op 0's capacity, relieved only by a removal at moment 0 */
  guint64 bytes[] = { 10, 10 };
  g_autoptr(StwDemand) d = stw_demand_new(2, bytes);
  stw_demand_step(d, 10);
  stw_demand_need(d, 1);
  stw_demand_step(d, 20);
  stw_demand_need(d, 0);
  stw_demand_need(d, 1);
  stw_demand_finish(d);
  StwSchedule s = { .resident = (guint8[]){ 1, 1 }, .dirty = (guint8[]){ 0, 0 } };
  s.actions = g_array_new(FALSE, FALSE, sizeof(StwAction));
  StwAction drop = { 0, 0, STW_ACTION_DROP }, fetch = { 1, 0, STW_ACTION_FETCH };
  g_array_append_val(s.actions, drop);
  g_array_append_val(s.actions, fetch);
  StwReplay r;
  g_assert_false(stw_schedule_replay(d, &s, TRUE, &r));
  g_assert_cmpint(r.failure, ==, STW_REPLAY_OVER_CAPACITY);
  g_assert_cmpuint(r.moment, ==, 0);
  g_assert_cmpuint(r.resident_bytes, ==, 20);
  stw_replay_clear(&r);
  g_array_unref(s.actions);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/schedule/belady", test_belady);
  g_test_add_func("/schedule/clean-preference", test_clean_preference);
  g_test_add_func("/schedule/forbid-and-infeasible", test_forbid_and_infeasible);
  g_test_add_func("/schedule/steady-and-hoist", test_steady_and_hoist);
  g_test_add_func("/schedule/write-back-early", test_write_back_early);
  g_test_add_func("/schedule/replay-failures", test_replay_failures);
  g_test_add_func("/schedule/random-uniform", test_random_uniform);
  g_test_add_func("/schedule/random-mixed", test_random_mixed);
  g_test_add_func("/schedule/iteration-boundary", test_iteration_boundary);
  return g_test_run();
}
