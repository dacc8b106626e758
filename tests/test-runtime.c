/* test-runtime.c — the runtime: the chunk store's places and books, the whole loop (profile,
 * plan with every policy, replay with bitwise-identical losses inside the budget, moving what
 * the plan said), op times and ranges, ops outside the plan. The trainer's own tests (against
 * PyTorch, its compute tables, checkpoints) are test-trainer.c's. */
#include "config.h"

#include <math.h>

#include <glib.h>
#include <glib/gstdio.h>

#include <stowage/check.h>
#include <stowage/events.h>
#include <stowage/planner.h>
#include <stowage/trainer.h>
#include <stowage/units.h>

#include "json.h"
#include "spans.h"
#include "store.h"
#include "testutil.h"
#include "trainutil.h"


static void
test_loop_every_policy(void)
{
  StwTrainerConfig c;
  small_config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  float resident[STEPS];
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwTrainer *t = trainer(&c, data, &ro, be);
  train(t, resident, STEPS);
  g_assert_cmpfloat(resident[STEPS - 1], <, resident[0]); /* it learns */
  StwTrace *trace = stw_runtime_trace(stw_trainer_runtime(t));
  g_assert_cmpint(trace->source.kind, ==, STW_SOURCE_RUNTIME);
  GError *error = NULL;
  g_assert_true(stw_trace_validate(trace, "profiled", &error));
  /* the profiled trace is written and read back unchanged */
  g_autofree char *text_trace = stw_trace_to_string(trace, &error);
  g_autoptr(StwTrace) back = stw_trace_parse("profiled.json", text_trace, strlen(text_trace), &error);
  g_assert_no_error(error);

  /* a budget well below the model data: the activation peak and a quarter of the model data */
  guint64 peak, model;
  stw_test_peak_and_model(back, &peak, &model);
  /* and a roomier one where every baseline fits too (PatrickStar uses only 80% of it) */
  guint64 budgets[2] = { peak + model / 4, (peak + model) * 3 / 2 };
  g_test_message("activation peak %" G_GUINT64_FORMAT ", model data %" G_GUINT64_FORMAT
                 ", budgets %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT, peak, model,
                 budgets[0], budgets[1]);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  guint replayed[STW_N_POLICIES] = { 0 };
  for (int bi = 0; bi < 2; bi++)
  for (int p = 0; p < STW_N_POLICIES; p++) {
    guint64 budget = budgets[bi];
    StwPlannerOptions o;
    stw_planner_options_init(&o, &hw);
    o.policy = (StwPolicy)p;
    o.budgets.gpu_bytes = budget;
    o.chunk_size_elems = p == STW_POLICY_STOWAGE ? 0 : 8192;
    g_autoptr(StwPlan) plan = stw_planner_plan(back, "profiled.json", &o, &error);
    if (plan == NULL) {
      g_test_message("%s: %s", stw_policy_names[p], error->message);
      g_clear_error(&error);
      continue;
    }
    g_assert_true(stw_plan_check(plan, back, "plan", NULL, NULL, &error));
    StwRuntimeOptions rr = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY, .device_bytes = budget, .plan = plan,
                             .plan_trace = back, .verify = p == STW_POLICY_STOWAGE };
    StwTrainer *r = trainer(&c, data, &rr, be);
    float losses[STEPS];
    train(r, losses, STEPS);
    g_assert_cmpmem(losses, sizeof losses, resident, sizeof resident);
    const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(r));
    g_test_message("%s: moved %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT " bytes per iteration, "
                   "peak %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT, stw_policy_names[p],
                   st->h2d_bytes, st->d2h_bytes, st->peak_device_bytes, budget);
    g_assert_cmpuint(st->peak_device_bytes, <=, budget);
    g_assert_cmpuint(st->h2d_bytes, ==, plan->pred.h2d_bytes);
    g_assert_cmpuint(st->d2h_bytes, ==, plan->pred.d2h_bytes);
    g_assert_cmpuint(st->deviations, ==, 0);
    if (rr.verify) /* and every activation NaN until written: no kernel read one before */
      g_assert_cmpuint(st->verified_moves, >, 0);
    /* with room: activations from the arena the first iteration laid out, from the second on,
     * the arena within an eighth of the activation peak; at the tight budget the arena does not
     * fit beside the most the chunks hold (it would hold its bytes all iteration, more than the
     * device has), and activations come one by one */
    g_test_message("arena %" G_GUINT64_FORMAT " bytes for an activation peak of %" G_GUINT64_FORMAT,
                   st->arena_bytes, peak);
    if (bi == 1) {
      g_assert_cmpuint(st->arena_iterations, ==, STEPS - 1);
      g_assert_cmpuint(st->arena_bytes, >=, peak);
      g_assert_cmpuint(st->arena_bytes, <=, peak + peak / 8);
    } else {
      g_assert_cmpuint(st->arena_iterations, ==, 0);
      g_assert_cmpuint(st->arena_bytes, ==, 0);
    }
    replayed[p]++;
    stw_trainer_free(r);
  }
  for (int p = 0; p < STW_N_POLICIES; p++)
    g_assert_cmpuint(replayed[p], >=, 1);
  g_assert_cmpuint(replayed[STW_POLICY_STOWAGE], ==, 2);

  /* the baseline of bench-runtime: the same trainer on plain arrays, the same losses */
  StwRuntimeOptions plain = { .mode = STW_RUNTIME_PLAIN };
  StwTrainer *pt = trainer(&c, data, &plain, be);
  float losses[STEPS];
  train(pt, losses, STEPS);
  g_assert_cmpmem(losses, sizeof losses, resident, sizeof resident);
  const StwRuntimeStats *st = stw_runtime_stats(stw_trainer_runtime(pt));
  g_assert_cmpuint(st->h2d_bytes + st->d2h_bytes + st->peak_device_bytes + st->ops, ==, 0);
  g_assert_null(stw_runtime_trace(stw_trainer_runtime(pt)));
  stw_trainer_free(pt);
  stw_trainer_free(t);
  be->free(be);
}

/* The store's places: every move takes an item from one to the next, with the budget counted byte
 * for byte, and a drop never loses the only valid copy. */
static void
test_store_places(void)
{
  StwBackend *be = stw_backend_host_new();
  guint64 bytes[3] = { 4096, 4096, 8192 };
  StwStore *s = stw_store_new(be, 3, bytes, 12288, TRUE, 0);
  GError *error = NULL;
  memset(stw_store_host(s, 0), 7, 4096);
  g_assert_cmpint(stw_store_place(s, 0), ==, STW_AT_HOST);
  g_assert_true(stw_store_fetch(s, 0, &error));
  g_assert_true(stw_store_resident(s, 0));
  guint8 *dev = stw_store_device(s, 0);
  g_assert_cmpint(stw_store_place(s, 0), ==, STW_ON_DEVICE);
  g_assert_cmpuint(dev[4095], ==, 7);
  dev[0] = 9;
  stw_store_set_dirty(s, 0);
  /* a dirty item is written back, not dropped */
  g_assert_false(stw_store_drop(s, 0));
  g_assert_cmpint(stw_store_place(s, 0), ==, STW_TO_HOST);
  g_assert_false(stw_store_resident(s, 0));
  g_assert_cmpuint(stw_store_host(s, 0)[0], ==, 9);
  g_assert_cmpint(stw_store_place(s, 0), ==, STW_AT_HOST);
  /* two items fill the budget; a third is refused while both are needed */
  stw_store_next_op(s);
  g_assert_true(stw_store_fetch(s, 0, &error));
  g_assert_true(stw_store_fetch(s, 2, &error));
  stw_store_need(s, 0);
  stw_store_need(s, 2);
  g_assert_false(stw_store_fetch(s, 1, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET);
  stw_assert_error_contains(error, "the device budget of 12288 bytes cannot hold 4096 more bytes");
  /* and on the next op the least recently used makes room */
  stw_store_next_op(s);
  stw_store_need(s, 2);
  g_assert_true(stw_store_fetch(s, 1, &error));
  g_assert_cmpint(stw_store_place(s, 0), ==, STW_AT_HOST);
  g_assert_cmpuint(stw_store_room_evictions(s), ==, 1);
  g_assert_true(stw_store_drop(s, 2));
  g_assert_cmpint(stw_store_place(s, 2), ==, STW_AT_HOST);
  const StwStoreStats *st = stw_store_stats(s);
  g_assert_cmpuint(st->h2d_bytes, ==, 4096 + 4096 + 8192 + 4096);
  g_assert_cmpuint(st->d2h_bytes, ==, 4096 + 4096);
  g_assert_cmpuint(st->peak_bytes, ==, 12288);
  stw_store_settle(s, 0);
  stw_store_settle(s, 1);
  g_assert_null(stw_store_take_failure(s));
  g_assert_cmpuint(stw_store_stats(s)->verified_moves, ==, 6);
  g_assert_true(stw_store_check(s, &error));
  stw_store_free(s);
  /* the books checked: a model state kept in place beyond the capacity is found out */
  StwStore *over = stw_store_new(be, 3, bytes, 12000, FALSE, 0);
  g_assert_true(stw_store_check(over, &error));
  stw_store_keep_in_place(over);
  g_assert_false(stw_store_check(over, &error));
  stw_assert_error_contains(error, "the chunk store's books are wrong: 16384 bytes counted in "
                                   "use, where the slots hold 16384 and the activations 0 "
                                   "(counted 0), of a capacity of 12000");
  stw_store_free(over);
  be->free(be);
}

/* A range carved first-fit: each allocation rounded up to the alignment at the lowest offset that
 * holds it, holes filled, neighbours merged when freed, nothing taken beyond the range; and the
 * host backend's emulated device carved so from one mapping of its memory and the CUDA device's
 * room for fragmentation, blocks of their own beyond it. */
static void
test_spans(void)
{
  StwSpans *s = stw_spans_new(4096 + 100, 256);
  g_assert_cmpuint(stw_spans_bytes(s), ==, 4096);
  g_assert_cmpuint(stw_spans_take(s, 100), ==, 0);
  g_assert_cmpuint(stw_spans_take(s, 300), ==, 256);
  g_assert_cmpuint(stw_spans_take(s, 256), ==, 768);
  g_assert_cmpuint(stw_spans_give(s, 256), ==, 512);
  g_assert_cmpuint(stw_spans_give(s, 256), ==, 0); /* not taken (any more) */
  g_assert_cmpuint(stw_spans_give(s, 1000), ==, 0);
  g_assert_cmpuint(stw_spans_take(s, 0), ==, 256);   /* the hole, one unit */
  g_assert_cmpuint(stw_spans_take(s, 512), ==, 1024); /* the hole's rest is 256 */
  g_assert_cmpuint(stw_spans_take(s, 257), ==, 1536);
  g_assert_cmpuint(stw_spans_used(s), ==, 256 + 256 + 256 + 512 + 512);
  g_assert_cmpuint(stw_spans_high(s), ==, 2048);
  g_assert_cmpuint(stw_spans_take(s, 2049), ==, STW_SPANS_NONE);
  g_assert_cmpuint(stw_spans_take(s, 2048), ==, 2048);
  g_assert_cmpuint(stw_spans_take(s, 1), ==, 512);
  for (guint64 at = 0; at < 4096; at += 256)
    stw_spans_give(s, at);
  g_assert_cmpuint(stw_spans_used(s), ==, 0);
  g_assert_cmpuint(stw_spans_take(s, 4096), ==, 0); /* merged whole again */
  g_assert_cmpuint(stw_spans_high(s), ==, 4096);
  stw_spans_free(s);

  StwBackend *be = stw_backend_host_new();
  be->device_bytes = 1 << 20;
  guint8 *a = be->device_alloc(be, 1000), *b = be->device_alloc(be, 1000);
  g_assert_true(b == a + 1024); /* carved, back to back */
  be->device_free(be, a);
  g_assert_true(be->device_alloc(be, 24) == a);
  guint64 room = stw_backend_arena_for(1 << 20);
  guint8 *big = be->device_alloc(be, room); /* beyond the mapping: a block of its own */
  g_assert_nonnull(big);
  memset(big, 1, room);
  be->device_free(be, big);
  be->free(be);
}

/* Two items' host copies change roles: the buffers are exchanged, contents and all, a resident
 * one's device copy untouched; refused for items of other sizes, one released, or a plain
 * store. */
static void
test_store_swap_host(void)
{
  StwBackend *be = stw_backend_host_new();
  guint64 bytes[3] = { 4096, 4096, 8192 };
  StwStore *s = stw_store_new(be, 3, bytes, 8192, TRUE, 0);
  GError *error = NULL;
  memset(stw_store_host(s, 0), 1, 4096);
  memset(stw_store_host(s, 1), 2, 4096);
  guint8 *was0 = stw_store_host(s, 0), *was1 = stw_store_host(s, 1);
  g_assert_true(stw_store_fetch(s, 0, &error));
  stw_store_settle(s, 0);
  g_assert_true(stw_store_swap_host(s, 0, 1)); /* resident and at the host */
  g_assert_true(stw_store_host(s, 0) == was1);
  g_assert_true(stw_store_host(s, 1) == was0);
  g_assert_cmpuint(stw_store_host(s, 0)[7], ==, 2);
  g_assert_cmpuint(stw_store_device(s, 0)[7], ==, 1);
  g_assert_false(stw_store_swap_host(s, 0, 2)); /* other sizes */
  g_assert_false(stw_store_swap_host(s, 1, 1));
  stw_store_device(s, 0)[7] = 5; /* changed there: its bytes land in the buffer it has now */
  stw_store_set_dirty(s, 0);
  stw_store_evict(s, 0);
  stw_store_settle(s, 0);
  g_assert_cmpuint(was1[7], ==, 5);
  g_assert_cmpuint(was0[7], ==, 1);
  g_assert_true(stw_store_fetch(s, 0, &error));
  stw_store_settle(s, 0);
  g_assert_true(stw_store_release_host(s, 0));
  g_assert_false(stw_store_swap_host(s, 0, 1)); /* no host copy to exchange */
  g_assert_true(stw_store_check(s, &error));
  g_assert_null(stw_store_take_failure(s));
  stw_store_free(s);
  StwStore *p = stw_store_new(be, 3, bytes, 8192, FALSE, 0);
  stw_store_make_plain(p);
  g_assert_false(stw_store_swap_host(p, 0, 1));
  stw_store_free(p);
  be->free(be);
}

/* An item its plan keeps on the device gives up its host copy: read and written on the device,
 * a host copy made again only when it has to leave, nothing lost either way. */
static void
test_store_release_host(void)
{
  StwBackend *be = stw_backend_host_new();
  guint64 bytes[2] = { 4096, 8192 };
  StwStore *s = stw_store_new(be, 2, bytes, 8192, TRUE, 0);
  GError *error = NULL;
  memset(stw_store_host(s, 0), 7, 4096);
  g_assert_false(stw_store_release_host(s, 0)); /* not on the device: kept */
  g_assert_true(stw_store_fetch(s, 0, &error));
  stw_store_settle(s, 0);
  g_assert_true(stw_store_release_host(s, 0));
  g_assert_false(stw_store_release_host(s, 0)); /* once */
  g_assert_true(stw_store_dirty(s, 0));         /* the device copy is the only one */
  g_assert_true(stw_store_check(s, &error));
  guint8 got[4] = { 0 };
  stw_store_read(s, 0, 100, got, 4);
  g_assert_cmpuint(got[0], ==, 7);
  const guint8 nine[2] = { 9, 9 };
  stw_store_write(s, 0, 4000, nine, 2); /* to the device alone */
  g_assert_cmpuint(stw_store_device(s, 0)[4001], ==, 9);
  stw_store_clear_dirty(s, 0); /* has no copy to be clean against */
  g_assert_true(stw_store_dirty(s, 0));
  /* the second item needs the whole budget: the first leaves, its host copy made again */
  stw_store_next_op(s);
  stw_store_need(s, 1);
  g_assert_true(stw_store_fetch(s, 1, &error));
  g_assert_cmpuint(stw_store_room_evictions(s), ==, 1);
  guint8 *host = stw_store_host(s, 0);
  g_assert_cmpuint(host[0], ==, 7);
  g_assert_cmpuint(host[4001], ==, 9);
  g_assert_cmpuint(stw_store_stats(s)->d2h_bytes, ==, 4096);
  /* and a host copy asked for while the device holds the only one is brought over */
  stw_store_settle(s, 1);
  g_assert_true(stw_store_release_host(s, 1));
  stw_store_device(s, 1)[5] = 3;
  g_assert_cmpuint(stw_store_host(s, 1)[5], ==, 3);
  g_assert_false(stw_store_dirty(s, 1));
  g_assert_true(stw_store_check(s, &error));
  g_assert_null(stw_store_take_failure(s));
  stw_store_free(s);
  be->free(be);
}

/* The ranges a backend is told of (NVTX on CUDA): the iteration's, around the ops'. */
static GPtrArray *ranges;

static void
record_push(StwBackend *b, const char *name)
{
  (void)b;
  g_ptr_array_add(ranges, g_strdup(name));
}

static void
record_pop(StwBackend *b)
{
  (void)b;
  g_ptr_array_add(ranges, g_strdup("pop"));
}

static void
test_iteration_range(void)
{
  StwTrainerConfig c;
  stw_trainer_config_init(&c);
  c.layers = 1;
  c.width = 16;
  c.heads = 2;
  c.context = 8;
  c.batch = 1;
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  be->range_push = record_push;
  be->range_pop = record_pop;
  be->sync = count_sync;
  syncs = 0;
  ranges = g_ptr_array_new_with_free_func(g_free);
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwTrainer *t = trainer(&c, data, &ro, be);
  float loss;
  train(t, &loss, 1);
  g_assert_cmpuint(ranges->len, >, 4);
  /* the iteration opens first and closes last; every op's range inside it is closed */
  g_assert_cmpstr(ranges->pdata[0], ==, STW_ITERATION_RANGE);
  g_assert_cmpstr(ranges->pdata[ranges->len - 1], ==, "pop");
  gint depth = 0, deepest = 0;
  for (guint i = 0; i < ranges->len; i++) {
    depth += g_str_equal(ranges->pdata[i], "pop") ? -1 : 1;
    deepest = MAX(deepest, depth);
    g_assert_cmpint(depth, >=, i + 1 < ranges->len ? 1 : 0);
  }
  g_assert_cmpint(depth, ==, 0);
  g_assert_cmpint(deepest, ==, 2); /* the iteration, and one op at a time inside it */
  /* profile mode times each op between two waits for the device: one before, one after */
  g_assert_cmpuint(syncs, ==, ranges->len - 2);
  /* an untimed step waits for nothing, and the timed step's trace stays the runtime's */
  StwRuntime *rt = stw_trainer_runtime(t);
  StwTrace *timed = stw_runtime_trace(rt);
  guint64 first_op_ns = stw_trace_op(timed, 0)->duration_ns;
  guint n_ops = timed->ops->len, waits = syncs;
  stw_runtime_set_timed(rt, FALSE);
  train(t, &loss, 1);
  g_assert_cmpuint(syncs, ==, waits);
  g_assert_true(stw_runtime_trace(rt) == timed);
  g_assert_cmpuint(stw_trace_op(timed, 0)->duration_ns, ==, first_op_ns);
  stw_runtime_set_timed(rt, TRUE);
  train(t, &loss, 1);
  g_assert_cmpuint(syncs, ==, waits + 2 * n_ops);
  g_assert_cmpuint(stw_runtime_trace(rt)->ops->len, ==, n_ops);
  stw_trainer_free(t);
  be->free(be);
  g_ptr_array_unref(ranges);
}

/* On a device of its own, the runtime's trace records what the process holds of it outside the
 * runtime's arena (the backend's memory_outside, read when the trace is taken): the CUDA
 * context and the libraries' buffers, what a plan on that device must leave free. A figure not
 * below the device's memory is no measurement of it, and none is recorded; the host backend has
 * none to give. */
static guint64 outside_bytes;

static guint64
fake_outside(StwBackend *b)
{
  (void)b;
  return outside_bytes;
}

static void
test_gpu_process_memory(void)
{
  StwTrainerConfig c;
  small_config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  g_assert_null(be->memory_outside);
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwTrainer *t = trainer(&c, data, &ro, be);
  float loss;
  train(t, &loss, 1);
  StwRuntime *rt = stw_trainer_runtime(t);
  g_assert_cmpuint(stw_runtime_trace(rt)->device.gpu_process_bytes, ==, 0);
  be->memory_outside = fake_outside;
  outside_bytes = 627900416;
  g_assert_cmpuint(stw_runtime_trace(rt)->device.gpu_process_bytes, ==, 627900416);
  /* written with the trace and read back, in its digest */
  GError *error = NULL;
  g_autofree char *json = stw_trace_to_string(stw_runtime_trace(rt), &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(json, "\"gpu_process_bytes\":627900416"));
  outside_bytes = STW_GiB; /* the whole device: not a process's share of it */
  stw_runtime_trace(rt)->device.gpu_process_bytes = 0;
  g_assert_cmpuint(stw_runtime_trace(rt)->device.gpu_process_bytes, ==, 0);
  stw_trainer_free(t);
  be->free(be);
}

/* Profile mode's op times on the host backend start where the op before ended: the caller's
 * work between two ops (30 ms here) is in the second op's time, as it runs on the emulated
 * device's cores; what runs between iterations (200 ms here) is in no op's. On a device of its
 * own the time is the op's alone. */
static void
op_times(gboolean device_is_host, guint64 *first_ns, guint64 *second_ns)
{
  StwTrainerConfig c;
  small_config(&c);
  GError *error = NULL;
  g_autoptr(StwTrace) model = stw_trainer_model(&c, &error);
  g_assert_no_error(error);
  StwBackend *be = stw_backend_host_new();
  be->device_is_host = device_is_host;
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  StwRuntime *rt = stw_runtime_new(model, NULL, &ro, be, &error);
  g_assert_no_error(error);
  for (int it = 0; it < 2; it++) {
    if (it > 0)
      g_usleep(200000);
    stw_runtime_iteration_begin(rt);
    g_assert_true(stw_runtime_op_begin(rt, "first", STW_STAGE_FWD, NULL, 0, NULL, 0, &error));
    stw_runtime_op_end(rt);
    g_usleep(30000);
    g_assert_true(stw_runtime_op_begin(rt, "second", STW_STAGE_FWD, NULL, 0, NULL, 0, &error));
    stw_runtime_op_end(rt);
    g_assert_true(stw_runtime_iteration_end(rt, &error));
  }
  StwTrace *t = stw_runtime_trace(rt);
  g_assert_cmpuint(t->ops->len, ==, 2);
  *first_ns = stw_trace_op(t, 0)->duration_ns;
  *second_ns = stw_trace_op(t, 1)->duration_ns;
  stw_runtime_free(rt);
  be->free(be);
}

/* A trace whose loop copies its gradients to the host each micro-step (model.gradients
 * "host") is not the loop the runtime runs, which keeps them on the device to the step: it is
 * refused, saying why and what to do. */
static void
test_host_gradients_refused(void)
{
  StwTrainerConfig c;
  small_config(&c);
  GError *error = NULL;
  g_autoptr(StwTrace) model = stw_trainer_model(&c, &error);
  g_assert_no_error(error);
  model->model.gradients = STW_GRADIENTS_HOST;
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE,
                           .device_bytes = STW_GiB };
  g_assert_null(stw_runtime_new(model, NULL, &ro, be, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_UNSUPPORTED);
  g_assert_nonnull(strstr(error->message, "synth --gradients device"));
  stw_assert_error_contains(error, "the trace's gradients are copied to the host after each "
                            "micro-step (model.gradients \"host\"");
  be->free(be);
}

static void
test_op_times(void)
{
  guint64 first, second;
  op_times(TRUE, &first, &second);
  g_test_message("host backend: %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT " ns", first,
                 second);
  g_assert_cmpuint(second, >=, 30000000);
  g_assert_cmpuint(first, <, 100000000);
  op_times(FALSE, &first, &second);
  g_test_message("a device of its own: %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT " ns",
                 first, second);
  g_assert_cmpuint(second, <, 30000000);
  g_assert_cmpuint(first, <, 100000000);
}

/* The ops of accumulate.json (2 micro-steps; fc.bias frozen; gradients PyTorch's) in order. */
static void
run_accumulate(StwRuntime *rt, const StwTrace *t)
{
  GError *error = NULL;
  stw_runtime_iteration_begin(rt);
  for (guint32 k = 0; k < t->ops->len; k++) {
    const StwOp *op = stw_trace_op(t, k);
    g_assert_true(stw_runtime_op_begin(rt, op->name, op->stage, op->params, op->n_params,
                                       op->grads, op->n_grads, &error));
    g_assert_no_error(error);
    if (op->stage == STW_STAGE_OPTIM) {
      gpointer param, m, v;
      float *master;
      /* the weights rest in the fp32 compute copy, where PyTorch's gradient is about to go */
      g_assert_null(stw_runtime_optim_weights(rt, 0));
      stw_runtime_gradient_arrives(rt, 0); /* its gradient copied in (the plan's 64 B) */
      stw_runtime_optim(rt, 0, &param, &master, &m, &v);
      /* ... so they moved to the master's buffer, which the step reads and does not write */
      g_assert_true(stw_runtime_optim_weights_in_copy(rt, 0));
      g_assert_true(stw_runtime_optim_weights(rt, 0) == master);
      g_assert_true((gpointer)master != param);
      for (int i = 0; i < 16; i++) { /* a step of our own: the copy and the moments change */
        ((float *)param)[i] = master[i] + 1.0f;
        ((float *)m)[i] += 0.5f;
        ((float *)v)[i] += 0.25f;
      }
    }
    stw_runtime_op_end(rt);
  }
  g_assert_true(stw_runtime_iteration_end(rt, &error));
  g_assert_no_error(error);
}

/* A plan of gradient accumulation over a frozen tensor replayed: the frozen chunk has the param
 * list alone and is never written back; an evaluation forward between iterations runs outside
 * the plan, counted apart, and the next iteration moves exactly the plan's bytes again. */
static void
test_unplanned_and_frozen(void)
{
  GError *error = NULL;
  g_autofree char *path = stw_test_fixture("traces/accumulate.json");
  g_autoptr(StwTrace) t = stw_trace_load(path, &error);
  g_assert_no_error(error);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  /* the non-model peak and the param chunks (64 B and 16 B: each kind's only chunk, sized to its
   * tensors in a layout with a frozen chunk): the trained chunk's Adam runs on the CPU */
  o.budgets.gpu_bytes = 256 + 80;
  g_autoptr(StwPlan) plan = stw_planner_plan(t, path, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(plan->pred.h2d_bytes, >, 0);
  guint32 frozen = plan->chunking->chunk_of[1];
  g_assert_true(stw_chunking_chunk(plan->chunking, frozen)->frozen);
  g_assert_cmpuint(stw_chunk_bytes(plan->chunking, frozen, STW_LIST_MOMENTUM), ==, 0);
  float w[16], b[4] = { 1, 2, 3, 4 };
  for (int i = 0; i < 16; i++)
    w[i] = (float)i;
  const float *init[] = { w, b };
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY, .device_bytes = o.budgets.gpu_bytes,
                           .plan = plan, .plan_trace = t, .verify = TRUE };
  StwRuntime *rt = stw_runtime_new(t, init, &ro, be, &error);
  g_assert_no_error(error);
  for (int it = 0; it < 3; it++) {
    run_accumulate(rt, t);
    const StwRuntimeStats *st = stw_runtime_stats(rt);
    g_assert_cmpuint(st->h2d_bytes, ==, plan->pred.h2d_bytes);
    g_assert_cmpuint(st->d2h_bytes, ==, plan->pred.d2h_bytes);
    g_assert_cmpuint(st->deviations, ==, 0);
    g_assert_cmpuint(st->unplanned_ops, ==, (guint64)it);
    /* an evaluation between the iterations: both tensors, on demand, within the budget */
    guint32 both[] = { 0, 1 };
    g_assert_true(stw_runtime_unplanned_op_begin(rt, "eval", both, 2, &error));
    g_assert_no_error(error);
    g_assert_cmpfloat(((float *)stw_runtime_param(rt, 1))[3], ==, 4.0f);
    g_assert_cmpfloat(((float *)stw_runtime_param(rt, 0))[5], ==, 5.0f + (float)(it + 1));
    g_assert_false(stw_runtime_unplanned_op_begin(rt, "again", both, 2, &error));
    stw_assert_error_contains(error, "unplanned op again: another unplanned op is open");
    stw_runtime_op_end(rt);
    g_assert_cmpuint(stw_runtime_stats(rt)->peak_device_bytes, <=, o.budgets.gpu_bytes);
  }
  const StwRuntimeStats *st = stw_runtime_stats(rt);
  g_assert_cmpuint(st->unplanned_ops, ==, 3);
  g_assert_cmpuint(st->unplanned_h2d_bytes, ==, 0); /* the start state holds both */
  g_assert_cmpuint(st->deviations, ==, 0);
  /* a frozen tensor's weights are its compute copy, untouched, and it has no moments */
  float master[16], m[16], v[16];
  g_assert_true(stw_runtime_read_state(rt, 1, master, m, v, NULL));
  g_assert_cmpfloat(master[3], ==, 4.0f);
  g_assert_cmpfloat(m[0], ==, 0.0f);
  g_assert_true(stw_runtime_read_state(rt, 0, master, m, v, NULL));
  g_assert_cmpfloat(master[5], ==, 8.0f);
  g_assert_cmpfloat(m[5], ==, 1.5f);
  g_assert_cmpfloat(v[5], ==, 0.75f);
  float b2[4] = { 9, 9, 9, 9 }, zeros[4] = { 0 };
  g_assert_true(stw_runtime_write_state(rt, 1, b2, zeros, zeros, NULL));
  stw_runtime_read_param(rt, 1, master);
  g_assert_cmpfloat(master[0], ==, 9.0f);
  stw_runtime_free(rt);
  be->free(be);
}

/* One iteration of mini.json (fc.weight 16, fc.bias 4; gradients written into the chunks on the
 * device) whose backward writes GRAD into every gradient and whose steps take it off the
 * weights, checking what the runtime hands the step: where the gradient arrived, the weights in
 * the master (IN_COPY: kept in the compute copy between steps, the step writing them there
 * alone) or written by the step there too. */
static void
run_mini(StwRuntime *rt, const StwTrace *t, float grad, gboolean in_copy)
{
  GError *error = NULL;
  stw_runtime_iteration_begin(rt);
  float before[2][16];
  for (guint32 k = 0; k < t->ops->len; k++) {
    const StwOp *op = stw_trace_op(t, k);
    if (op->stage == STW_STAGE_BWD)
      for (guint32 j = 0; j < 2; j++)
        stw_runtime_read_param(rt, j, before[j]);
    g_assert_true(stw_runtime_op_begin(rt, op->name, op->stage, op->params, op->n_params,
                                       op->grads, op->n_grads, &error));
    g_assert_no_error(error);
    for (guint32 j = 0; op->stage == STW_STAGE_BWD && j < op->n_grads; j++) {
      float *g = stw_runtime_param(rt, op->grads[j]);
      for (guint64 i = 0; i < stw_trace_tensor(t, op->grads[j])->numel; i++)
        g[i] = grad;
    }
    if (op->stage == STW_STAGE_OPTIM) {
      guint32 j = op->params[0];
      guint64 n = stw_trace_tensor(t, j)->numel;
      gpointer param, m, v;
      float *master;
      stw_runtime_optim(rt, j, &param, &master, &m, &v);
      g_assert_cmpint(stw_runtime_optim_weights_in_copy(rt, j), ==, in_copy);
      g_assert_true((gpointer)master != param);
      g_assert_cmpmem(master, n * sizeof(float), before[j], n * sizeof(float));
      for (guint64 i = 0; i < n; i++) {
        g_assert_cmpfloat(((float *)param)[i], ==, grad);
        ((float *)param)[i] = master[i] - grad;
        if (!in_copy)
          master[i] = ((float *)param)[i];
      }
    }
    stw_runtime_op_end(rt);
  }
  g_assert_true(stw_runtime_iteration_end(rt, &error));
  g_assert_no_error(error);
}

/* A plan whose fp32 chunk steps on the CPU keeps the weights in the compute copy between steps:
 * the gradient lands in the master's old buffer while the weights wait in the master's, the
 * step writes the new ones into the copy alone (4 bytes an element fewer), and the weights read
 * back (stw_runtime_read_state, what a checkpoint saves) are the copy's. Without a plan (plain:
 * the host copies used in place) the step writes both, as before. */
static void
test_weights_in_copy(void)
{
  GError *error = NULL;
  g_autofree char *path = stw_test_fixture("traces/mini.json");
  g_autoptr(StwTrace) t = stw_trace_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpint(t->model.gradients, ==, STW_GRADIENTS_CHUNKS);
  for (guint32 j = 0; j < t->tensors->len; j++) /* fp16 there: an fp32 model here */
    ((StwTensor *)stw_trace_tensor(t, j))->dtype = STW_DTYPE_FP32;
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_STOWAGE, 4288, 4 * STW_GiB);
  g_autoptr(StwPlan) plan = stw_planner_plan(t, path, &o, &error);
  g_assert_no_error(error);
  g_assert_true(stw_optim_on_cpu(plan->optim[plan->chunking->chunk_of[0]]));
  float w[16], b[4];
  for (int i = 0; i < 16; i++)
    w[i] = (float)i;
  for (int i = 0; i < 4; i++)
    b[i] = 100.0f + (float)i;
  const float *init[] = { w, b };
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions replay = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY,
                               .device_bytes = 4288, .plan = plan, .plan_trace = t,
                               .verify = TRUE };
  StwRuntimeOptions plain = { .mode = STW_RUNTIME_PLAIN };
  for (int mode = 0; mode < 2; mode++) {
    StwRuntime *rt = stw_runtime_new(t, init, mode == 0 ? &replay : &plain, be, &error);
    g_assert_no_error(error);
    for (int it = 0; it < 3; it++)
      run_mini(rt, t, 0.5f, mode == 0);
    float got[16], m[16], v[16];
    stw_runtime_read_param(rt, 0, got);
    g_assert_cmpfloat(got[5], ==, 5.0f - 1.5f);
    g_assert_true(stw_runtime_read_state(rt, 0, got, m, v, NULL));
    g_assert_cmpfloat(got[5], ==, 5.0f - 1.5f);
    g_assert_true(stw_runtime_read_state(rt, 1, got, m, v, NULL));
    g_assert_cmpfloat(got[3], ==, 103.0f - 1.5f);
    /* written back (a checkpoint resumed): the next steps start from it */
    float ten[16];
    for (int i = 0; i < 16; i++)
      ten[i] = 10.0f;
    g_assert_true(stw_runtime_write_state(rt, 0, ten, m, v, NULL));
    run_mini(rt, t, 0.5f, mode == 0);
    g_assert_true(stw_runtime_read_state(rt, 0, got, m, v, NULL));
    g_assert_cmpfloat(got[0], ==, 9.5f);
    if (mode == 0)
      g_assert_cmpuint(stw_runtime_stats(rt)->deviations, ==, 0);
    stw_runtime_free(rt);
  }
  be->free(be);
}

static guint frees; /* host copies and device blocks freed */
static void (*host_free_of_backend)(StwBackend *b, void *p);
static void (*device_free_of_backend)(StwBackend *b, void *p);

static void
count_host_free(StwBackend *b, void *p)
{
  frees += p != NULL;
  host_free_of_backend(b, p);
}

static void
count_device_free(StwBackend *b, void *p)
{
  frees += p != NULL;
  device_free_of_backend(b, p);
}

/* The model handed back tensor by tensor: a chunk's memory is freed with its last tensor (each
 * of its four lists' device slot or host copy, or both: the two chunks alike), the tensors of
 * chunks not freed read as they were, and from the first on the runtime trains no more; a
 * handed-back tensor's state and a tensor the model does not have are refused. */
static void
test_hand_back(void)
{
  GError *error = NULL;
  g_autofree char *path = stw_test_fixture("traces/mini.json");
  g_autoptr(StwTrace) t = stw_trace_load(path, &error);
  g_assert_no_error(error);
  for (guint32 j = 0; j < t->tensors->len; j++) /* fp16 there: an fp32 model here */
    ((StwTensor *)stw_trace_tensor(t, j))->dtype = STW_DTYPE_FP32;
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_STOWAGE, 4288, 4 * STW_GiB);
  o.chunk_size_elems = 16; /* the weight and the bias in chunks of their own */
  g_autoptr(StwPlan) plan = stw_planner_plan(t, path, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(stw_chunking_count(plan->chunking), ==, 2);
  gboolean in_copy = stw_optim_on_cpu(plan->optim[0]);
  g_assert_cmpint(stw_optim_on_cpu(plan->optim[1]), ==, in_copy);
  float w[16], b[4];
  for (int i = 0; i < 16; i++)
    w[i] = (float)i;
  for (int i = 0; i < 4; i++)
    b[i] = 100.0f + (float)i;
  const float *init[] = { w, b };
  StwBackend *be = stw_backend_host_new();
  host_free_of_backend = be->host_free;
  be->host_free = count_host_free;
  device_free_of_backend = be->device_free;
  be->device_free = count_device_free;
  StwRuntimeOptions replay = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY,
                               .device_bytes = 4288, .plan = plan, .plan_trace = t };
  StwRuntime *rt = stw_runtime_new(t, init, &replay, be, &error);
  g_assert_no_error(error);
  run_mini(rt, t, 0.5f, in_copy);
  float got[16], m[16], v[16], before[4];
  g_assert_true(stw_runtime_read_state(rt, 1, before, m, v, NULL));
  frees = 0;
  g_assert_true(stw_runtime_hand_back(rt, 0, &error));
  g_assert_no_error(error);
  guint one = frees;
  g_assert_cmpuint(one, >=, STW_N_LISTS);
  g_assert_true(stw_runtime_read_state(rt, 1, got, m, v, &error));
  g_assert_no_error(error);
  g_assert_cmpmem(got, sizeof before, before, sizeof before);
  g_assert_false(stw_runtime_read_state(rt, 0, got, m, v, &error));
  stw_assert_error_contains(error, "tensor fc.weight was handed back: its chunk is freed");
  g_clear_error(&error);
  const StwOp *op = stw_trace_op(t, 0);
  g_assert_false(stw_runtime_op_begin(rt, op->name, op->stage, op->params, op->n_params,
                                      op->grads, op->n_grads, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_STATE);
  stw_assert_error_contains(error, "the model was handed back");
  g_clear_error(&error);
  g_assert_true(stw_runtime_hand_back(rt, 1, &error));
  g_assert_cmpuint(frees, ==, 2 * one);
  g_assert_false(stw_runtime_hand_back(rt, 2, &error));
  stw_assert_error_contains(error, "hand back: no tensor 2 (the model has 2)");
  g_clear_error(&error);
  stw_runtime_free(rt); /* nothing is left to free, nothing freed twice */
  g_assert_cmpuint(frees, ==, 2 * one);
  be->free(be);
}

/* Runs ops [FROM, TO) of T as the trace has them. */
static void
run_ops(StwRuntime *rt, const StwTrace *t, guint32 from, guint32 to)
{
  GError *error = NULL;
  for (guint32 k = from; k < to; k++) {
    const StwOp *op = stw_trace_op(t, k);
    g_assert_true(stw_runtime_op_begin(rt, op->name, op->stage, op->params, op->n_params,
                                       op->grads, op->n_grads, &error));
    g_assert_no_error(error);
    stw_runtime_op_end(rt);
  }
}

/* An evaluation that needs a chunk the plan's start state does not hold: fetched on demand
 * (another made room for), counted as unplanned, and the start state restored before the next
 * iteration, whose moves are the plan's again. Three layers of 1024 weights, room for two. */
static void
test_unplanned_restores(void)
{
  g_autoptr(StwTrace) t = stw_trace_new();
  t->model.gradients = STW_GRADIENTS_FRAMEWORK;
  guint64 shape[] = { 1024 };
  const char *names[] = { "a", "b", "c" };
  for (guint32 i = 0; i < 3; i++)
    stw_trace_add_tensor(t, names[i], STW_DTYPE_FP32, shape, 1);
  for (guint32 i = 0; i < 3; i++)
    stw_trace_add_op(t, names[i], STW_STAGE_FWD, &i, 1, NULL, 0)->duration_ns = 1000;
  for (guint32 i = 3; i-- > 0;)
    stw_trace_add_op(t, names[i], STW_STAGE_BWD, &i, 1, &i, 1)->duration_ns = 2000;
  for (guint32 i = 0; i < 3; i++)
    stw_trace_add_op(t, names[i], STW_STAGE_OPTIM, &i, 1, NULL, 0)->duration_ns = 100;
  GError *error = NULL;
  g_assert_true(stw_trace_validate(t, "three", &error));
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = 2 * 4096;
  o.chunk_size_elems = 1024;
  g_autoptr(StwPlan) plan = stw_planner_plan(t, NULL, &o, &error);
  g_assert_no_error(error);
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_REPLAY, .device_bytes = o.budgets.gpu_bytes,
                           .plan = plan, .plan_trace = t, .verify = TRUE };
  StwRuntime *rt = stw_runtime_new(t, NULL, &ro, be, &error);
  g_assert_no_error(error);
  /* the chunk the start state does not hold */
  guint32 absent = G_MAXUINT32;
  for (guint32 i = 0; i < 3 && absent == G_MAXUINT32; i++)
    if (!plan->schedule.resident[stw_plan_item(plan->chunking, STW_LIST_PARAM,
                                               plan->chunking->chunk_of[i])])
      absent = i;
  g_assert_cmpuint(absent, <, 3);
  for (int it = 0; it < 2; it++) {
    stw_runtime_iteration_begin(rt);
    run_ops(rt, t, 0, t->ops->len);
    g_assert_true(stw_runtime_iteration_end(rt, &error));
    g_assert_cmpuint(stw_runtime_stats(rt)->h2d_bytes, ==, plan->pred.h2d_bytes);
    g_assert_cmpuint(stw_runtime_stats(rt)->deviations, ==, 0);
    g_assert_true(stw_runtime_unplanned_op_begin(rt, "eval", &absent, 1, &error));
    stw_runtime_op_end(rt);
    g_assert_cmpuint(stw_runtime_stats(rt)->unplanned_h2d_bytes, >=, (guint64)(it + 1) * 4096);
  }
  const StwRuntimeStats *st = stw_runtime_stats(rt);
  g_assert_cmpuint(st->unplanned_ops, ==, 2);
  g_assert_cmpuint(st->deviations, ==, 0);
  g_assert_cmpuint(st->peak_device_bytes, <=, o.budgets.gpu_bytes);
  /* the next iteration restores the start state first, and moves the plan's bytes */
  guint64 before = st->unplanned_h2d_bytes + st->unplanned_d2h_bytes;
  stw_runtime_iteration_begin(rt);
  g_assert_cmpuint(stw_runtime_stats(rt)->unplanned_h2d_bytes +
                       stw_runtime_stats(rt)->unplanned_d2h_bytes, >, before);
  run_ops(rt, t, 0, t->ops->len);
  g_assert_true(stw_runtime_iteration_end(rt, &error));
  g_assert_cmpuint(stw_runtime_stats(rt)->h2d_bytes, ==, plan->pred.h2d_bytes);
  g_assert_cmpuint(stw_runtime_stats(rt)->deviations, ==, 0);
  /* an iteration stopped after 4 ops (the caller's step raised) and abandoned: the next one
   * runs the plan from its first op, moving the plan's bytes, with no deviation */
  stw_runtime_iteration_begin(rt);
  run_ops(rt, t, 0, 4);
  stw_runtime_iteration_abandon(rt);
  stw_runtime_iteration_begin(rt);
  run_ops(rt, t, 0, t->ops->len);
  g_assert_true(stw_runtime_iteration_end(rt, &error));
  g_assert_cmpuint(stw_runtime_stats(rt)->h2d_bytes, ==, plan->pred.h2d_bytes);
  g_assert_cmpuint(stw_runtime_stats(rt)->deviations, ==, 0);
  g_assert_cmpuint(stw_runtime_stats(rt)->abandoned_iterations, ==, 1);
  stw_runtime_free(rt);
  be->free(be);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/runtime/store-places", test_store_places);
  g_test_add_func("/runtime/store-release-host", test_store_release_host);
  g_test_add_func("/runtime/store-swap-host", test_store_swap_host);
  g_test_add_func("/runtime/spans", test_spans);
  g_test_add_func("/runtime/iteration-range", test_iteration_range);
  g_test_add_func("/runtime/op-times", test_op_times);
  g_test_add_func("/runtime/host-gradients-refused", test_host_gradients_refused);
  g_test_add_func("/runtime/gpu-process-memory", test_gpu_process_memory);
  g_test_add_func("/runtime/loop-every-policy", test_loop_every_policy);
  g_test_add_func("/runtime/unplanned-and-frozen", test_unplanned_and_frozen);
  g_test_add_func("/runtime/unplanned-restores", test_unplanned_restores);
  g_test_add_func("/runtime/weights-in-copy", test_weights_in_copy);
  g_test_add_func("/runtime/hand-back", test_hand_back);
  return g_test_run();
}
