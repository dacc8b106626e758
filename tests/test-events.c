/* test-events.c — event streams to traces: a recorded stream, the runtime's own profile as
 * events, and streams that are broken. */
#include "config.h"

#include <glib.h>

#include <stowage/events-build.h>
#include <stowage/trainer.h>
#include <stowage/units.h>

#include "testutil.h"

static StwTrace *
build(const char *fixture, GError **error, StwEventsReport *rep)
{
  g_autofree char *path = stw_test_fixture(fixture);
  g_autoptr(StwEvents) e = stw_events_load(path, error);
  if (e == NULL)
    return NULL;
  StwEventsOptions o;
  stw_events_options_init(&o);
  return stw_events_build(e, &o, rep, error);
}

/* small.events, and threads.events: the same run with fc1.bwd on another thread (as PyTorch's
 * autograd thread runs backward), and a third thread's range opened inside fc2.bwd and closed
 * after it: each thread's pops close its own ranges, and another thread's outermost range nests
 * in the innermost one open on the first thread. */
static void
check_small_stream(const char *fixture)
{
  GError *error = NULL;
  StwEventsReport rep;
  g_autoptr(StwTrace) t = build(fixture, &error, &rep);
  g_assert_no_error(error);
  g_assert_cmpuint(rep.iterations, ==, 1);
  g_assert_cmpuint(rep.dropped_launches, ==, 1);  /* fc2.bwd's kernel record never came */
  g_assert_cmpuint(rep.duplicate_allocs, ==, 1);  /* 0xa000 reported twice */
  g_assert_cmpuint(t->tensors->len, ==, 2);
  g_assert_cmpstr(stw_trace_tensor(t, 0)->name, ==, "tensor0@0x1000");
  g_assert_cmpuint(stw_trace_tensor(t, 0)->numel, ==, 1024); /* 4096 bytes of fp32 */
  g_assert_cmpstr(stw_trace_tensor(t, 1)->name, ==, "fc2.weight");
  g_assert_cmpuint(stw_trace_tensor(t, 1)->shape[1], ==, 16);
  g_assert_cmpuint(t->ops->len, ==, 5);
  static const struct {
    const char *name;
    StwStage stage;
    guint32 n_params, n_grads;
    guint64 start, peak, ns;
  } want[] = {
    { "fc1", STW_STAGE_FWD, 1, 0, 0, 512, 600 },
    { "fc2", STW_STAGE_FWD, 1, 0, 512, 768, 300 },
    { "fc2.bwd", STW_STAGE_BWD, 1, 1, 512, 512, 10 },  /* no GPU record: the range's time */
    { "fc1.bwd", STW_STAGE_BWD, 1, 1, 512, 512, 100 },
    { "adam.step", STW_STAGE_OPTIM, 2, 0, 0, 0, 50 },
  };
  for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
    const StwOp *op = stw_trace_op(t, i);
    g_test_message("%s", want[i].name);
    g_assert_cmpstr(op->name, ==, want[i].name);
    g_assert_cmpint(op->stage, ==, want[i].stage);
    g_assert_cmpuint(op->n_params, ==, want[i].n_params);
    g_assert_cmpuint(op->n_grads, ==, want[i].n_grads);
    g_assert_cmpuint(op->nonmodel_bytes, ==, want[i].start);
    g_assert_cmpuint(op->nonmodel_peak_bytes, ==, want[i].peak);
    g_assert_cmpuint(op->duration_ns, ==, want[i].ns);
  }
  g_assert_cmpuint(stw_trace_op(t, 0)->params[0], ==, 0);
  g_assert_cmpuint(stw_trace_op(t, 1)->params[0], ==, 1);
}

static void
test_small_stream(void)
{
  check_small_stream("events/small.events");
}

static void
test_threads(void)
{
  /* one stack for all threads would close loader.prefetch at fc2.bwd's pop (170) and fc2.bwd
   * at 175: 15 ns, not its 10 */
  check_small_stream("events/threads.events");
}

static void
test_broken_streams(void)
{
  static const struct {
    const char *file, *needle;
  } cases[] = {
    { "events/pop-without-push.events", ":5: a range closes that was never opened" },
    { "events/bad-thread.events", "bad-thread.events:2: expected 'thread N' with N a number" },
    { "events/thread-pop.events", "thread-pop.events:4: a range closes that was never opened "
                                  "(pop without push on this thread)" },
    { "events/unclosed.events", "no iteration: found 0 complete 'stowage.iteration' ranges, and "
                                "ranges left open at the end (an NVTX push without a pop?)" },
    { "events/bad-launch.events", ":2: expected 'launch T ID N ARG...' with N arguments" },
    { "events/no-iteration.events", "no iteration: found 0 complete 'stowage.iteration' ranges" },
    { "events/missing.events", "missing.events: cannot open: No such file or directory" },
    { "events/time-back.events", "time-back.events:3: time goes back: 105 ns, after 110 at line 2 "
                                 "(host events are written as they happen)" },
    { "events/tensor-too-big.events", "tensor-too-big.events:2: tensor big.weight of 256 elements "
                                      "is 1024 bytes at fp32 (--dtype), more than its allocation "
                                      "of 64 bytes" },
    { "events/tensor-no-alloc.events", "tensor-no-alloc.events:2: tensor lost.weight at 2000 "
                                       "names no live allocation" },
    /* figures a trace cannot hold, refused at the line that has them, not at the trace built */
    { "events/alloc-sum.events", "alloc-sum.events:7: the stream's allocations pass 2^53 bytes "
                                 "(8 PiB) in all" },
    { "events/kernel-long.events", "kernel-long.events:8: a kernel of more than 2^53 ns (104 "
                                   "days): END 9007199254750000 is too far after START 5000" },
    { "events/op-kernels-sum.events", "op-kernels-sum.events:10: the kernels of op fc1 (line 5) "
                                      "run for more than 2^53 ns (104 days) in all" },
    { "events/kernels-sum.events", "kernels-sum.events:10: the ops take more than 2^53 ns (104 "
                                   "days) in all, passing it at op fc2" },
    /* a launch id is a correlation id: one launch, one kernel record */
    { "events/dup-launch.events", "dup-launch.events:11: a second launch of id 1 (the first at "
                                  "line 7)" },
    { "events/dup-kernel.events", "dup-kernel.events:22: a second kernel record of id 2 (the "
                                  "first at line 12)" },
    /* found by fuzz/run.sh: a NUL byte freed an uninitialized event */
    { "events/crash-nul.events", "crash-nul.events:1: a NUL byte" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    GError *error = NULL;
    StwTrace *t = build(cases[i].file, &error, NULL);
    g_assert_null(t);
    stw_assert_error_contains(error, cases[i].needle);
  }
}

/* What a real profiler produces and the trace can do without is counted, in the report and in
 * the trace's source: frees of memory allocated before it attached, ranges the program never
 * closed. */
/* A kernel record CUPTI flushed before the kernel ended (END before START) is left out and
 * counted: its op takes the range's time, as for a dropped record; the stream still builds. */
static void
test_incomplete_kernel(void)
{
  GError *error = NULL;
  StwEventsReport rep;
  g_autoptr(StwTrace) t = build("events/incomplete-kernel.events", &error, &rep);
  g_assert_no_error(error);
  g_assert_cmpuint(rep.incomplete_kernels, ==, 1);
  g_assert_cmpuint(rep.dropped_launches, ==, 2); /* fc2.bwd's, and now fc1.bwd's */
  g_assert_cmpstr(stw_trace_op(t, 3)->name, ==, "fc1.bwd");
  g_assert_cmpuint(stw_trace_op(t, 3)->duration_ns, ==, 10); /* push 180 .. pop 190 */
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_nonnull(strstr(text, "\"incomplete_kernels\":1"));
}

/* A kernel record of no recorded launch (a CUDA graph's kernels carry the graph launch's
 * correlation id, which the profiler does not record) times no op: left out, counted and said. */
static void
test_unlaunched_kernel(void)
{
  GError *error = NULL;
  StwEventsReport rep;
  g_autoptr(StwTrace) t = build("events/unlaunched-kernel.events", &error, &rep);
  g_assert_no_error(error);
  g_assert_cmpuint(rep.unlaunched_kernels, ==, 1);
  g_assert_cmpuint(rep.dropped_launches, ==, 1); /* fc2.bwd's, as in small.events */
  g_assert_cmpuint(stw_trace_op(t, 3)->duration_ns, ==, 100); /* fc1.bwd: kernel 4 alone */
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_nonnull(strstr(text, "\"unlaunched_kernels\":1"));
}

static void
test_counted_warnings(void)
{
  GError *error = NULL;
  StwEventsReport rep;
  g_autoptr(StwTrace) t = build("events/warnings.events", &error, &rep);
  g_assert_no_error(error);
  g_assert_cmpuint(rep.unknown_frees, ==, 2);
  g_assert_cmpuint(rep.open_ranges, ==, 1);
  g_assert_cmpuint(t->source.warnings->len, ==, 3);
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_nonnull(strstr(text, "\"warnings\":{\"dropped_launches\":1,\"unknown_frees\":2,"
                                "\"open_ranges\":1}"));
  /* and they come back from the file */
  g_autoptr(StwTrace) back = stw_trace_parse("w.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->source.warnings->len, ==, 3);
  g_assert_cmpstr(g_array_index(back->source.warnings, StwTraceWarning, 1).name, ==,
                  "unknown_frees");
  g_assert_cmpuint(g_array_index(back->source.warnings, StwTraceWarning, 1).count, ==, 2);
}

/* The runtime's own profile and the event path give the same trace for the same run. */
static void
test_runtime_events_same_trace(void)
{
  StwTrainerConfig c;
  stw_trainer_config_init(&c);
  c.layers = 2;
  c.width = 16;
  c.heads = 2;
  c.context = 8;
  c.batch = 2;
  GString *text = g_string_new(NULL);
  while (text->len < 4000)
    g_string_append(text, "the same sequence of events gives the same trace. ");
  StwBackend *be = stw_backend_host_new();
  StwRuntimeOptions ro = { .mode = STW_RUNTIME_PROFILE, .device_bytes = STW_GiB };
  GError *error = NULL;
  StwTrainer *tr = stw_trainer_new(&c, (const guint8 *)text->str, text->len, &ro, be, &error);
  g_assert_no_error(error);
  float loss;
  for (int i = 0; i < 2; i++)
    g_assert_true(stw_trainer_step(tr, &loss, &error));
  StwRuntime *rt = stw_trainer_runtime(tr);
  gsize len;
  const char *ev = stw_runtime_events(rt, &len);
  g_autoptr(StwEvents) e = stw_events_parse("runtime.events", ev, len, &error);
  g_assert_no_error(error);
  StwEventsOptions o;
  stw_events_options_init(&o);
  StwEventsReport rep;
  g_autoptr(StwTrace) built = stw_events_build(e, &o, &rep, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(rep.iterations, ==, 2);
  const StwTrace *own = stw_runtime_trace(rt);
  /* what the events cannot know: the model's description and the device */
  g_free(built->model.name);
  built->model = own->model;
  built->model.name = g_strdup(own->model.name);
  g_free(built->device.name);
  built->device = own->device;
  built->device.name = g_strdup(own->device.name);
  g_autofree char *a = stw_trace_digest(own);
  g_autofree char *b = stw_trace_digest(built);
  g_assert_cmpuint(built->tensors->len, ==, own->tensors->len);
  g_assert_cmpuint(built->ops->len, ==, own->ops->len);
  for (guint i = 0; i < own->ops->len; i++) {
    const StwOp *x = stw_trace_op(own, i), *y = stw_trace_op(built, i);
    if (strcmp(x->name, y->name) != 0 || x->stage != y->stage || x->n_params != y->n_params ||
        x->n_grads != y->n_grads || x->nonmodel_bytes != y->nonmodel_bytes ||
        x->nonmodel_peak_bytes != y->nonmodel_peak_bytes || x->duration_ns != y->duration_ns)
      g_error("op %u: runtime %s %d %u/%u %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT " %"
              G_GUINT64_FORMAT "; events %s %d %u/%u %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
              " %" G_GUINT64_FORMAT, i, x->name, x->stage, x->n_params, x->n_grads,
              x->nonmodel_bytes, x->nonmodel_peak_bytes, x->duration_ns, y->name, y->stage,
              y->n_params, y->n_grads, y->nonmodel_bytes, y->nonmodel_peak_bytes, y->duration_ns);
  }
  g_assert_cmpstr(a, ==, b);
  stw_trainer_free(tr);
  be->free(be);
  g_string_free(text, TRUE);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/events/small-stream", test_small_stream);
  g_test_add_func("/events/broken-streams", test_broken_streams);
  g_test_add_func("/events/counted-warnings", test_counted_warnings);
  g_test_add_func("/events/incomplete-kernel", test_incomplete_kernel);
  g_test_add_func("/events/unlaunched-kernel", test_unlaunched_kernel);
  g_test_add_func("/events/threads", test_threads);
  g_test_add_func("/events/runtime-same-trace", test_runtime_events_same_trace);
  return g_test_run();
}
