/* test-simulate.c — the simulator against a timeline worked out by hand, its reports, and the
 * what-if helpers. */
#include "config.h"

#include <glib.h>
#include <math.h>
#include <string.h>

#include <stowage/check.h>
#include <stowage/cost.h>
#include <stowage/hardware.h>
#include <stowage/planner.h>
#include <stowage/report.h>
#include <stowage/simulate.h>
#include <stowage/units.h>
#include <stowage/whatif.h>

#include "json.h"
#include "testutil.h"

static StwPlan *
plan_for(const StwTrace *t, guint64 gpu, StwPolicy policy)
{
  StwPlannerOptions o;
  stw_test_planner_options(&o, policy, gpu, STW_TiB);
  GError *error = NULL;
  StwPlan *p = stw_planner_plan(t, "t", &o, &error);
  g_assert_no_error(error);
  return p;
}

/* mini.json at 2,240 bytes: its one chunk (2 KiB) starts on the GPU, goes to the CPU after
 * backward (CPU Adam) and comes back at the end. On the A100 profile a 2 KiB copy takes
 * 10,000 ns latency + 2048 B / 10 GB/s = 10,204 ns; CPU Adam does 1.35e9 elements/s. So: fc runs
 * 0-1,000, fc.bwd 1,000-3,000; the eviction 3,000-13,204; CPU Adam on 16 elements takes 11 ns
 * (the cost model's nanoseconds round down), to 13,215, and the second optimizer op, which waits
 * for it (the thread that steps issues the next op), 2 ns on 4, to 13,217; the fetch
 * 13,217-23,421; the next iteration starts at 23,421. */
/* mini.json measured on the host (mini-on-host.json) and planned on the A100 profile: re-timed.
 * Its iteration's FLOPs: 6 x 20 parameters x 4 tokens = 480 (it knows no model config: no
 * attention), at 60% of the A100's fp16 312 TFLOP/s; its forward and backward ops measured 1,000
 * and 2,000 ns. So each takes 10,000 ns (the profile's launch) and round(d x 480 / 187.2e12 s /
 * 3,000 ns) = 0 more: 20,000 ns of compute where the trace's own times give 3,000. Asked to keep
 * them, the times are the trace's. The plan carries the scale, and reads back with it; check
 * proves it against the trace as recorded; an edited scale is refused where it cannot be one. */
static void
test_retimed_cpu_trace(void)
{
  g_autofree char *path = stw_test_fixture("traces/mini-on-host.json");
  g_autoptr(StwTrace) t = stw_trace_load(path, NULL);
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_STOWAGE, 2240, STW_TiB);
  StwRetiming rt;
  StwRetimingBasis b;
  char *why_not = NULL;
  g_assert_true(stw_retiming(t, &o.hw, &rt, &b, &why_not));
  g_assert_null(why_not);
  g_assert_cmpfloat(b.flops, ==, 480.0);
  g_assert_cmpfloat(b.flops_per_s, ==, 312e12 * 0.6);
  g_assert_cmpuint(b.measured_ns, ==, 3000);
  g_assert_cmpfloat(rt.scale, ==, 480.0 / (312e12 * 0.6) * 1e9 / 3000.0);
  g_assert_cmpuint(rt.op_overhead_ns, ==, 10000);
  GError *error = NULL;
  g_autoptr(StwPlan) p = stw_planner_plan(t, "t", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(p->retiming.scale, ==, rt.scale);
  StwSimulation s;
  stw_simulate(p, t, TRUE, &s);
  g_assert_cmpuint(s.compute_busy_ns, ==, 20000);
  stw_simulation_clear(&s);
  g_autofree char *text = stw_plan_to_string(p, t);
  g_autoptr(StwPlan) back = stw_plan_parse("p.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(back->retiming.scale, ==, rt.scale);
  g_assert_cmpuint(back->retiming.op_overhead_ns, ==, 10000);
  g_assert_true(stw_plan_check(back, t, "p.json", NULL, NULL, &error));
  g_assert_no_error(error);
  g_autoptr(GString) edited = g_string_new(text);
  g_assert_cmpuint(g_string_replace(edited, "\"op_overhead_ns\":10000", "\"op_overhead_ns\":-1",
                                    1), ==, 1);
  g_assert_null(stw_plan_parse("e.json", edited->str, edited->len, &error));
  stw_assert_error_contains(error, "e.json: $.trace.op_times.op_overhead_ns: ");
  g_clear_error(&error);
  o.measured_times = TRUE;
  g_autoptr(StwPlan) kept = stw_planner_plan(t, "t", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(kept->retiming.scale, ==, 0);
  stw_simulate(kept, t, TRUE, &s);
  g_assert_cmpuint(s.compute_busy_ns, ==, 3000);
  stw_simulation_clear(&s);
  /* another GPU's times are kept, said by no reason; a CPU's without its tokens cannot be
   * re-timed, and why */
  g_autofree char *gpu_path = stw_test_fixture("traces/mini.json");
  g_autoptr(StwTrace) gpu = stw_trace_load(gpu_path, NULL);
  g_assert_false(stw_retiming(gpu, &o.hw, &rt, NULL, &why_not));
  g_assert_null(why_not);
  t->model.batch = 0;
  g_assert_false(stw_retiming(t, &o.hw, &rt, NULL, &why_not));
  g_assert_cmpstr(why_not, ==, "the trace does not say its batch and sequence, which give its "
                               "FLOPs");
  g_free(why_not);
  g_assert_cmpfloat(rt.scale, ==, 0);
}

static void
test_hand_timeline(void)
{
  g_autofree char *path = stw_test_fixture("traces/mini.json");
  g_autoptr(StwTrace) t = stw_trace_load(path, NULL);
  g_autoptr(StwPlan) p = plan_for(t, 2240, STW_POLICY_STOWAGE);
  StwSimulation s;
  stw_simulate(p, t, TRUE, &s);
  g_assert_cmpuint(s.iteration_ns, ==, 23421);
  g_assert_cmpuint(s.compute_busy_ns, ==, 3000);
  g_assert_cmpuint(s.compute_stall_ns, ==, 20421);
  g_assert_cmpuint(s.h2d_busy_ns, ==, 10204);
  g_assert_cmpuint(s.d2h_busy_ns, ==, 10204);
  g_assert_cmpuint(s.cpu_busy_ns, ==, 13);
  g_assert_cmpuint(s.h2d_bytes, ==, 2048);
  g_assert_cmpuint(s.peak_gpu_bytes, ==, 2048 + 192);
  g_assert_cmpuint(s.over_budget_bytes, ==, 0);
  g_assert_cmpuint(p->pred.cost_ns, ==, 23421); /* the planner's objective is this simulation */
  g_assert_cmpuint(s.ops->len, ==, 4);
  g_assert_cmpuint(g_array_index(s.ops, StwSimOp, 1).end_ns, ==, 3000);
  const StwSimTask *evict = NULL;
  for (guint i = 0; i < s.tasks->len; i++) {
    if (g_array_index(s.tasks, StwSimTask, i).lane == STW_SIM_D2H)
      evict = &g_array_index(s.tasks, StwSimTask, i);
  }
  g_assert_nonnull(evict);
  g_assert_cmpuint(evict->start_ns, ==, 3000);
  g_assert_cmpuint(evict->end_ns, ==, 13204);

  /* the reports */
  g_autofree char *chrome = stw_report_chrome_trace(p, t, &s);
  cJSON *doc = cJSON_Parse(chrome);
  g_assert_nonnull(doc);
  cJSON *events = cJSON_GetObjectItem(doc, "traceEvents");
  /* 4 track names, 4 ops, 2 stalls (for the eviction, for the first step's CPU Adam), 2 copies,
   * 2 CPU Adam steps, and memory counters */
  g_assert_cmpint(cJSON_GetArraySize(events), ==, 4 + 4 + 2 + 2 + 2 + (int)s.memory->len);
  cJSON_Delete(doc);
  g_autofree char *svg = stw_report_svg_timeline(p, t, &s);
  g_assert_true(g_str_has_prefix(svg, "<?xml"));
  g_assert_nonnull(strstr(svg, "GPU memory (GiB)"));
  g_assert_nonnull(strstr(svg, "</svg>"));
  GMarkupParser parser = { 0 };
  GMarkupParseContext *ctx = g_markup_parse_context_new(&parser, 0, NULL, NULL);
  GError *error = NULL;
  g_assert_true(g_markup_parse_context_parse(ctx, svg, -1, &error) &&
                g_markup_parse_context_end_parse(ctx, &error));
  g_assert_no_error(error);
  g_markup_parse_context_free(ctx);
  stw_simulation_clear(&s);
}

/* mini.json with PyTorch's gradients (model.gradients "framework"): backward writes nothing of
 * the chunk, so nothing is evicted; at the step each gradient is copied from the device into the
 * chunk's host memory, tensor by tensor on the D2H engine, and CPU Adam steps each once its
 * gradient has landed: fc.weight's 32 bytes 10,000 ns latency + 3.2 ns, from 3,000 to 13,003
 * (the cost model's nanoseconds round down), its 16 elements at 1.35e9/s 11 ns, to 13,014; the
 * next optimizer op waits for that step (the thread that steps issues it): fc.bias's 8 bytes
 * 13,014-23,014, its 4 elements 2 ns, to 23,016; the updated chunk comes back (10,204 ns) for
 * the next iteration: 33,220.
 * Without the copies (cost model 4) the step cost nothing and the iteration was 13,204. */
static void
test_framework_gradients_cross(void)
{
  g_autofree char *path = stw_test_fixture("traces/mini.json");
  g_autoptr(StwTrace) t = stw_trace_load(path, NULL);
  t->model.gradients = STW_GRADIENTS_FRAMEWORK;
  g_autoptr(StwPlan) p = plan_for(t, 2240, STW_POLICY_STOWAGE);
  g_assert_true(stw_optim_on_cpu(p->optim[0]));
  StwSimulation s;
  stw_simulate(p, t, TRUE, &s);
  g_assert_cmpuint(s.d2h_bytes, ==, 32 + 8);
  g_assert_cmpuint(p->pred.d2h_bytes, ==, 32 + 8);
  g_assert_cmpuint(p->pred.lower_bound_bytes, ==, 2048 + 32 + 8);
  guint64 d2h_end[2] = { 0, 0 }, adam_start[2] = { 0, 0 };
  guint n_d2h = 0, n_adam = 0;
  for (guint i = 0; i < s.tasks->len; i++) {
    const StwSimTask *x = &g_array_index(s.tasks, StwSimTask, i);
    if (x->lane == STW_SIM_D2H && n_d2h < 2) {
      if (n_d2h == 0)
        g_assert_cmpuint(x->start_ns, ==, 3000);
      d2h_end[n_d2h++] = x->end_ns;
    } else if (x->lane == STW_SIM_CPU_ADAM && n_adam < 2) {
      adam_start[n_adam++] = x->start_ns;
    }
  }
  g_assert_cmpuint(n_d2h, ==, 2);
  g_assert_cmpuint(n_adam, ==, 2);
  g_assert_cmpuint(d2h_end[0], ==, 13003);
  g_assert_cmpuint(d2h_end[1], ==, 23014);
  g_assert_cmpuint(adam_start[0], ==, d2h_end[0]);
  g_assert_cmpuint(adam_start[1], ==, d2h_end[1]);
  g_assert_cmpuint(s.iteration_ns, ==, 33220);
  stw_simulation_clear(&s);
}

/* mini-host.json: mini.json's forward and backward twice (two micro-steps) with the gradients
 * on the host (model.gradients "host"), its backward's peak with them (232 bytes). Each fc.bwd is the last op of its micro-step to write
 * both gradients, and they go to the host after it (40 bytes: 10,000 ns latency + 4 ns): the
 * first micro-step's from 3,000 to 13,004 without waiting, the second forward and backward
 * running 3,000-6,000 beside it; the second's behind it on the engine, 13,004-23,008, and then
 * added on the host to the first's (120 bytes touched at 1.35e9 x 28 B/s: 3 ns, to 23,011)
 * while the thread that issues the ops waits; CPU Adam from 23,011 (11 ns, then 2 for the
 * bias, to 23,024), the updated chunk back (10,204 ns): 33,228. Nothing is copied at the step,
 * and the host holds the 40 bytes of gradients beside the chunks. */
static void
test_host_gradients(void)
{
  g_autofree char *path = stw_test_fixture("traces/mini-host.json");
  GError *error = NULL;
  g_autoptr(StwTrace) t = stw_trace_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpint(t->model.gradients, ==, STW_GRADIENTS_HOST);
  g_assert_cmpuint(stw_trace_host_gradient_bytes(t), ==, 40);
  g_autoptr(StwPlan) p = plan_for(t, 2048 + 232, STW_POLICY_STOWAGE);
  g_assert_true(stw_optim_on_cpu(p->optim[0]));
  StwSimulation s;
  stw_simulate(p, t, TRUE, &s);
  g_assert_cmpuint(s.d2h_bytes, ==, 2 * 40);
  g_assert_cmpuint(p->pred.d2h_bytes, ==, 2 * 40);
  g_assert_cmpuint(p->pred.lower_bound_bytes, ==, 2048 + 2 * 40);
  static const struct {
    guint32 lane, item;
    guint64 start, end, bytes;
  } want[] = {
    { STW_SIM_D2H, 1, 3000, 13004, 40 },
    { STW_SIM_D2H, 3, 13004, 23008, 40 },
    { STW_SIM_CPU_ADAM, 3, 23008, 23011, 40 },
  };
  guint n = 0;
  for (guint i = 0; i < s.tasks->len; i++) {
    const StwSimTask *x = &g_array_index(s.tasks, StwSimTask, i);
    if (x->kind != STW_SIM_GRADIENTS || x->lane == STW_SIM_COMM)
      continue;
    g_assert_cmpuint(n, <, G_N_ELEMENTS(want));
    g_assert_cmpuint(x->lane, ==, want[n].lane);
    g_assert_cmpuint(x->item, ==, want[n].item);
    g_assert_cmpuint(x->start_ns, ==, want[n].start);
    g_assert_cmpuint(x->end_ns, ==, want[n].end);
    g_assert_cmpuint(x->bytes, ==, want[n].bytes);
    n++;
  }
  g_assert_cmpuint(n, ==, G_N_ELEMENTS(want));
  g_assert_cmpuint(g_array_index(s.ops, StwSimOp, 3).end_ns, ==, 6000);
  g_assert_cmpuint(g_array_index(s.ops, StwSimOp, 4).start_ns, ==, 23011);
  g_assert_cmpuint(s.iteration_ns, ==, 33228);
  guint64 framework_host = 0;
  {
    g_autoptr(StwTrace) f = stw_trace_load(path, NULL);
    f->model.gradients = STW_GRADIENTS_FRAMEWORK;
    g_autoptr(StwPlan) q = plan_for(f, 2048 + 232, STW_POLICY_STOWAGE);
    framework_host = q->pred.cpu_bytes;
  }
  g_assert_cmpuint(p->pred.cpu_bytes, ==, framework_host + 40);
  g_autofree char *chrome = stw_report_chrome_trace(p, t, &s);
  g_assert_nonnull(strstr(chrome, "\"gradients after fc.bwd\""));
  g_assert_nonnull(strstr(chrome, "\"add gradients of fc.bwd\""));
  stw_simulation_clear(&s);
}

/* mini-host.json with the gradients added on the device (model.gradients "host-via-device",
 * DeepSpeed's ZeRO-Offload): every copy holds the compute stream. The first micro-step's 40 bytes
 * go out 3,000-13,004 and the second forward waits for them; after the second backward (to
 * 16,004) the host's sum comes back (16,004-26,008), is added on the device (an op's 10,000 ns
 * of overhead on the A100 profile, to 36,008) and goes out again (36,008-46,012); the host adds
 * nothing. CPU Adam from 46,012 (11 + 2 ns), the chunk back: 56,229. */
static void
test_host_gradients_via_device(void)
{
  g_autofree char *path = stw_test_fixture("traces/mini-host.json");
  g_autoptr(StwTrace) t = stw_trace_load(path, NULL);
  t->model.gradients = STW_GRADIENTS_HOST_VIA_DEVICE;
  g_autoptr(StwPlan) p = plan_for(t, 2048 + 232, STW_POLICY_STOWAGE);
  StwSimulation s;
  stw_simulate(p, t, TRUE, &s);
  static const struct {
    guint32 lane;
    guint64 start, end;
  } want[] = {
    { STW_SIM_D2H, 3000, 13004 },
    { STW_SIM_H2D, 16004, 26008 },
    { STW_SIM_D2H, 36008, 46012 },
  };
  guint n = 0;
  for (guint i = 0; i < s.tasks->len; i++) {
    const StwSimTask *x = &g_array_index(s.tasks, StwSimTask, i);
    if (x->kind != STW_SIM_GRADIENTS)
      continue;
    g_assert_cmpuint(n, <, G_N_ELEMENTS(want));
    g_assert_cmpuint(x->lane, ==, want[n].lane);
    g_assert_cmpuint(x->start_ns, ==, want[n].start);
    g_assert_cmpuint(x->end_ns, ==, want[n].end);
    g_assert_cmpuint(x->bytes, ==, 40);
    n++;
  }
  g_assert_cmpuint(n, ==, G_N_ELEMENTS(want));
  g_assert_cmpuint(s.cpu_add_ns, ==, 0);
  g_assert_cmpuint(g_array_index(s.ops, StwSimOp, 2).start_ns, ==, 13004);
  g_assert_cmpuint(g_array_index(s.ops, StwSimOp, 4).start_ns, ==, 46012);
  g_assert_cmpuint(s.iteration_ns, ==, 56229);
  g_assert_cmpuint(p->pred.h2d_bytes, ==, 2048 + 40);
  g_assert_cmpuint(p->pred.d2h_bytes, ==, 2 * 40);
  stw_simulation_clear(&s);
}

/* GPT-2 in two micro-steps with its gradients on the host, on two ranks (zero-offload): no
 * chunk group is reduce-scattered (nothing is written into the chunks); each op's gradients are
 * reduce-scattered as they go to the host, each rank copying its half after the collective and,
 * in the second micro-step, adding it to the first's. Rank 0's copies are half of every
 * gradient twice (the bf16 gradients' bytes in all), its additions half of them once. */
static void
test_host_gradients_ranks(void)
{
  StwModelConfig cfg;
  g_assert_true(stw_model_resolve("gpt2", &cfg, NULL));
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwSynthOptions so = { .batch = 1, .seq = 64, .dtype = STW_DTYPE_BF16, .micro_steps = 2,
                         .host_gradients = STW_GRADIENTS_HOST };
  GError *error = NULL;
  g_autoptr(StwTrace) t = stw_synth_trace(&cfg, &so, &hw, &error);
  g_assert_no_error(error);
  guint64 grads = stw_trace_host_gradient_bytes(t);
  g_assert_cmpuint(grads, ==, 124439808ull * 2);
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_ZERO_OFFLOAD, 8 * STW_GiB, STW_TiB);
  o.world_size = 2;
  g_autoptr(StwPlan) p = stw_planner_plan(t, "t", &o, &error);
  g_assert_no_error(error);
  const StwAction *a = (const StwAction *)p->schedule.actions->data;
  for (guint i = 0; i < p->schedule.actions->len; i++)
    g_assert_cmpint(a[i].kind, !=, STW_ACTION_REDUCE_SCATTER);
  StwSimulation s;
  stw_simulate(p, t, TRUE, &s);
  guint64 comm = 0, out = 0, added = 0, comm_end = 0;
  guint32 comm_op = G_MAXUINT32;
  for (guint i = 0; i < s.tasks->len; i++) {
    const StwSimTask *x = &g_array_index(s.tasks, StwSimTask, i);
    if (x->kind != STW_SIM_GRADIENTS)
      continue;
    if (x->lane == STW_SIM_COMM) {
      comm += x->bytes;
      comm_op = x->item;
      comm_end = x->end_ns;
    } else if (x->lane == STW_SIM_D2H) {
      g_assert_cmpuint(x->item, ==, comm_op); /* after its own op's collective */
      g_assert_cmpuint(x->start_ns, >=, comm_end);
      out += x->bytes;
    } else if (x->lane == STW_SIM_CPU_ADAM) {
      added += x->bytes;
    }
  }
  g_assert_cmpuint(comm, ==, grads); /* (2 - 1) x half of them, twice */
  g_assert_cmpuint(out, ==, grads);
  g_assert_cmpuint(added, ==, grads / 2);
  g_assert_cmpuint(s.d2h_bytes, ==, grads);
  g_assert_cmpuint(p->pred.d2h_bytes, ==, grads);
  g_assert_cmpuint(s.cpu_add_ns, >, 0);
  stw_simulation_clear(&s);
}

/* Whether an op of S's measured iteration runs while one of its collectives does; counts the
 * collectives into *N. */
static gboolean
op_beside_collective(const StwSimulation *s, guint *n)
{
  gboolean beside = FALSE;
  *n = 0;
  for (guint i = 0; i < s->tasks->len; i++) {
    const StwSimTask *x = &g_array_index(s->tasks, StwSimTask, i);
    if (x->lane != STW_SIM_COMM)
      continue;
    (*n)++;
    gint64 from = (gint64)x->start_ns, to = (gint64)x->end_ns; /* before the base: negative */
    for (guint k = 0; k < s->ops->len; k++) {
      const StwSimOp *op = &g_array_index(s->ops, StwSimOp, k);
      if (op->end_ns > op->start_ns && (gint64)op->start_ns < to && (gint64)op->end_ns > from)
        beside = TRUE;
    }
  }
  return beside;
}

/* model.collectives "blocking" (DeepSpeed ZeRO-1 and 2 with overlap_comm off): the collectives
 * run on the compute stream, so no op of the iteration runs beside any of them, where the same
 * trace with its collectives overlapped runs some beside compute; on two ranks, for the stowage
 * policy with its gathers and reduce-scatters and ZeRO-Offload's, and the iteration is no
 * shorter. */
static void
test_collectives_blocking(void)
{
  StwModelConfig cfg;
  g_assert_true(stw_model_resolve("gpt2", &cfg, NULL));
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  const StwPolicy policies[] = { STW_POLICY_STOWAGE, STW_POLICY_ZERO_OFFLOAD };
  for (gsize i = 0; i < G_N_ELEMENTS(policies); i++) {
    guint64 iteration[2] = { 0 };
    for (int blocking = 0; blocking < 2; blocking++) {
      StwSynthOptions so = { .batch = 2, .seq = 256, .dtype = STW_DTYPE_BF16,
                             .collectives = blocking ? STW_COLLECTIVES_BLOCKING
                                                     : STW_COLLECTIVES_OVERLAPPED };
      GError *error = NULL;
      g_autoptr(StwTrace) t = stw_synth_trace(&cfg, &so, &hw, &error);
      g_assert_no_error(error);
      g_assert_cmpint(t->model.collectives, ==, so.collectives);
      StwPlannerOptions o;
      stw_test_planner_options(&o, policies[i], 16 * STW_GiB, STW_TiB);
      o.world_size = 2;
      g_autoptr(StwPlan) p = stw_planner_plan(t, "t", &o, &error);
      g_assert_no_error(error);
      StwSimulation s;
      stw_simulate(p, t, TRUE, &s);
      guint n = 0;
      g_assert_cmpint(op_beside_collective(&s, &n), ==, !blocking);
      g_assert_cmpuint(n, >, 0);
      iteration[blocking] = s.iteration_ns;
      stw_simulation_clear(&s);
    }
    g_assert_cmpuint(iteration[1], >, iteration[0]);
  }
}

/* The thread that steps on the CPU launches the next op: under every policy that steps chunks
 * with CPU Adam, each step of the measured iteration has ended before the next iteration's first
 * op starts (cost model 8; before it the next forward ran beside the step). */
static void
test_step_before_next_forward(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 8, 1024, TRUE);
  const StwPolicy policies[] = { STW_POLICY_STOWAGE, STW_POLICY_PATRICKSTAR,
                                 STW_POLICY_ZERO_OFFLOAD, STW_POLICY_ZERO_INFINITY };
  guint stepped = 0;
  for (gsize i = 0; i < G_N_ELEMENTS(policies); i++) {
    g_autoptr(StwPlan) p = plan_for(t, 4 * STW_GiB, policies[i]);
    StwSimulation s;
    stw_simulate(p, t, TRUE, &s);
    for (guint j = 0; j < s.tasks->len; j++) {
      const StwSimTask *x = &g_array_index(s.tasks, StwSimTask, j);
      if (x->lane != STW_SIM_CPU_ADAM)
        continue;
      stepped++;
      g_assert_cmpuint(x->end_ns, <=, s.iteration_ns);
    }
    stw_simulation_clear(&s);
  }
  g_assert_cmpuint(stepped, >, 100);
}

/* Every event of the Chrome trace lies within the iteration: a stall carried into the first op
 * from the iteration before begins at 0 (it was written at 2^64 - x ns, 584 years away). */
static void
test_chrome_trace_times(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 8, 1024, FALSE);
  g_autoptr(StwPlan) p = plan_for(t, 16 * STW_GiB, STW_POLICY_ZERO_INFINITY);
  StwSimulation s;
  stw_simulate(p, t, TRUE, &s);
  g_assert_cmpuint(g_array_index(s.ops, StwSimOp, 0).stall_ns, >,
                   g_array_index(s.ops, StwSimOp, 0).start_ns);
  g_autofree char *chrome = stw_report_chrome_trace(p, t, &s);
  cJSON *doc = cJSON_Parse(chrome);
  g_assert_nonnull(doc);
  guint stalls = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "traceEvents"))
  {
    const cJSON *ts = cJSON_GetObjectItem(e, "ts"), *dur = cJSON_GetObjectItem(e, "dur");
    if (ts == NULL)
      continue;
    double end = ts->valuedouble + (dur != NULL ? dur->valuedouble : 0);
    g_assert_cmpfloat(ts->valuedouble, >=, 0);
    g_assert_cmpfloat(end, <=, (double)s.iteration_ns / 1e3 * 2 + 1);
    stalls += g_strcmp0(cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")), "stall") == 0;
  }
  g_assert_cmpuint(stalls, >, 0);
  cJSON_Delete(doc);
  stw_simulation_clear(&s);
}

static void
test_unlimited_is_compute(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 4, 512, TRUE);
  g_autoptr(StwPlan) p = plan_for(t, 80 * STW_GiB, STW_POLICY_STOWAGE);
  StwSimulation s;
  stw_simulate(p, t, FALSE, &s);
  guint64 total = 0;
  for (guint i = 0; i < t->ops->len; i++)
    total += stw_trace_op(t, i)->duration_ns;
  g_assert_cmpuint(s.iteration_ns, ==, total);
  g_assert_cmpuint(s.compute_stall_ns, ==, 0);
  g_assert_cmpuint(s.h2d_bytes + s.d2h_bytes, ==, 0);
}

/* Whatever the policy, the simulated GPU memory never passes the budget. */
static void
test_never_over_budget(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2-medium", 8, 1024, TRUE);
  for (int pol = 0; pol < STW_N_POLICIES; pol++) {
    for (guint64 gib = 4; gib <= 8; gib += 2) {
      StwHardware hw;
      g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
      StwPlannerOptions o;
      stw_planner_options_init(&o, &hw);
      o.policy = (StwPolicy)pol;
      o.budgets.gpu_bytes = gib * STW_GiB;
      g_autoptr(StwPlan) p = stw_planner_plan(t, "t", &o, NULL);
      if (p == NULL)
        continue;
      StwSimulation s;
      stw_simulate(p, t, FALSE, &s);
      g_assert_cmpuint(s.over_budget_bytes, ==, 0);
      g_assert_cmpuint(s.peak_gpu_bytes, <=, gib * STW_GiB);
      g_assert_cmpuint(s.iteration_ns, >=, s.compute_busy_ns);
    }
  }
}

static void
test_whatif_points(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 8, 1024, FALSE);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  guint64 unlimited;
  g_assert_true(stw_whatif_unlimited(t, &o, &unlimited, NULL));
  g_assert_cmpuint(unlimited, >, 0);
  StwWhatifPoint pt;
  stw_whatif_run(t, &o, STW_POLICY_STOWAGE, 9 * STW_GiB, unlimited, &pt);
  g_assert_true(pt.feasible);
  g_assert_cmpfloat(pt.slowdown, >=, 1.0);
  stw_whatif_point_clear(&pt);
  stw_whatif_run(t, &o, STW_POLICY_STOWAGE, 3 * STW_GiB, unlimited, &pt);
  g_assert_false(pt.feasible); /* below the activations with every block recomputed */
  g_assert_nonnull(strstr(pt.why, "no plan fits a GPU budget of 3.00 GiB"));
  stw_whatif_point_clear(&pt);
}

/* The DDP baseline: on one GPU the resident plan's time and peak (plain PyTorch); on four, the
 * same step with the gradients' all-reduce past backward added, their copy in the buckets on
 * the peak, and every gradient byte all-reduced once; refused, saying why, where it does not
 * fit. */
static void
test_ddp_baseline(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 8, 1024, FALSE);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  /* what each rank holds and runs, planned apart: every chunk resident, stepped on the GPU */
  StwPlannerOptions r = o;
  r.policy = STW_POLICY_GEMINI_STATIC;
  r.gemini_fraction = 1.0;
  r.budgets.gpu_bytes = 80 * STW_GiB;
  g_autoptr(StwPlan) resident = stw_planner_plan(t, "t", &r, NULL);
  g_assert_nonnull(resident);
  StwSimulation s;
  stw_simulate(resident, t, FALSE, &s);
  guint64 padding = 0; /* the chunks', all resident: no PyTorch model has it */
  for (int l = 0; l < STW_N_LISTS; l++)
    padding += stw_chunking_wasted_bytes(resident->chunking, (StwChunkList)l);
  g_assert_cmpuint(padding, >, 0);
  StwDdpPoint one;
  stw_whatif_ddp(t, &o, 80 * STW_GiB, s.iteration_ns, &one);
  g_assert_true(one.feasible);
  g_assert_null(one.why);
  g_assert_cmpuint(one.world_size, ==, 1);
  g_assert_cmpuint(one.iteration_ns, ==, s.iteration_ns);
  g_assert_cmpuint(one.peak_gpu_bytes, ==, s.peak_gpu_bytes - padding);
  g_assert_cmpuint(one.bucket_bytes, ==, 0);
  g_assert_cmpuint(one.allreduce_ns + one.exposed_ns + one.comm_bytes, ==, 0);
  g_assert_cmpfloat(one.slowdown, ==, 1.0);
  guint64 one_backward = one.backward_end_ns;
  g_assert_cmpuint(one_backward, >, s.iteration_ns / 2);
  g_assert_cmpuint(one_backward, <, s.iteration_ns); /* the optimizer's step after it */
  stw_whatif_ddp_clear(&one);

  o.world_size = 4;
  StwDdpPoint four;
  stw_whatif_ddp(t, &o, 80 * STW_GiB, STW_WHATIF_UNKNOWN, &four);
  g_assert_true(four.feasible);
  guint64 grads = 124439808ull * 2; /* every parameter's bf16 gradient */
  g_assert_cmpuint(four.bucket_bytes, ==, grads);
  g_assert_cmpuint(four.comm_bytes, ==, grads / 4 * 3 * 2);
  g_assert_cmpuint(four.peak_gpu_bytes, ==, s.peak_gpu_bytes - padding + grads);
  g_assert_cmpuint(four.iteration_ns, ==, s.iteration_ns + four.exposed_ns);
  /* backward ends later by the all-reduce's tail; the optimizer's step after it is the same */
  g_assert_cmpuint(four.backward_end_ns, ==, one_backward + four.exposed_ns);
  g_assert_cmpuint(four.iteration_ns - four.backward_end_ns, ==,
                   s.iteration_ns - one_backward);
  g_assert_cmpuint(four.exposed_ns, >, 0); /* the embedding's gradient comes last */
  g_assert_cmpuint(four.exposed_ns, <, four.allreduce_ns);
  /* the ring's two passes over all of it, a latency a step more for each bucket past one */
  guint64 whole = 2 * stw_collective_ns(&hw, 4, 1, grads / 4);
  guint64 buckets = grads / STW_DDP_BUCKET_BYTES + 2;
  g_assert_cmpuint(four.allreduce_ns, >=, whole);
  g_assert_cmpuint(four.allreduce_ns, <=, whole + buckets * 2 * 3 * hw.interconnect_latency_ns +
                                              buckets * 2);
  g_assert_true(isnan(four.slowdown));
  g_assert_cmpfloat(four.throughput.tokens_per_s, >, 0);
  stw_whatif_ddp_clear(&four);

  StwDdpPoint tight;
  stw_whatif_ddp(t, &o, 8 * STW_GiB, STW_WHATIF_UNKNOWN, &tight);
  g_assert_false(tight.feasible);
  g_assert_nonnull(strstr(tight.why, "every GPU holds the whole model, its gradients and its "
                                     "optimizer state"));
  g_assert_nonnull(strstr(tight.why, "237.35 MiB of it the gradients' copy in DDP's buckets), "
                                     "where 8.00 GiB is usable"));
  stw_whatif_ddp_clear(&tight);
}

/* On the emulated device the copy engines run on the compute's cores: each nanosecond of copy
 * beside an op costs it copy_interference more (at most its own time again). GPT-2 at 8 GiB
 * moves chunks beside compute: those ops are slower by no more than the copies allow, and the
 * planner, told so, moves fewer bytes for a plan that is faster on such a device. */
static void
test_copy_interference(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 8, 1024, FALSE);
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_STOWAGE, 8 * STW_GiB, STW_TiB);
  o.activations = STW_ACTIVATIONS_KEEP; /* (recomputing some, auto moves no chunk here) */
  o.hw.compute_on_host = TRUE;
  g_autoptr(StwPlan) free_copies = stw_planner_plan(t, "t", &o, NULL);
  g_assert_nonnull(free_copies);
  StwSimulation s0, s1;
  stw_simulate(free_copies, t, FALSE, &s0);
  g_assert_cmpuint(s0.copy_slowdown_ns, ==, 0);
  g_assert_cmpuint(s0.h2d_busy_ns, >, 0);
  free_copies->hw.copy_interference = 1.0;
  stw_simulate(free_copies, t, FALSE, &s1);
  g_assert_cmpuint(s1.copy_slowdown_ns, >, 0);
  g_assert_cmpuint(s1.compute_busy_ns, ==, s0.compute_busy_ns + s1.copy_slowdown_ns);
  g_assert_cmpuint(s1.copy_slowdown_ns, <=, s1.h2d_busy_ns + s1.d2h_busy_ns);
  g_assert_cmpuint(s1.copy_slowdown_ns, <=, s0.compute_busy_ns);
  g_assert_cmpuint(s1.iteration_ns, >, s0.iteration_ns);
  g_test_message("copies %" G_GUINT64_FORMAT " ns, slowdown %" G_GUINT64_FORMAT " ns",
                 s1.h2d_busy_ns + s1.d2h_busy_ns, s1.copy_slowdown_ns);

  o.hw.copy_interference = 1.0;
  g_autoptr(StwPlan) told = stw_planner_plan(t, "t", &o, NULL);
  g_assert_nonnull(told);
  StwSimulation s2;
  stw_simulate(told, t, FALSE, &s2);
  g_test_message("bytes %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT ", time %" G_GUINT64_FORMAT
                 " -> %" G_GUINT64_FORMAT, s1.h2d_bytes + s1.d2h_bytes,
                 s2.h2d_bytes + s2.d2h_bytes, s1.iteration_ns, s2.iteration_ns);
  g_assert_cmpuint(s2.h2d_bytes + s2.d2h_bytes, <, s1.h2d_bytes + s1.d2h_bytes);
  g_assert_cmpuint(s2.iteration_ns, <, s1.iteration_ns);
}

/* A trace's op times are said to be another device's where its device is not the profile's: a
 * runtime trace of the host backend ("host") on a GPU's profile, a GPU trace on another GPU's;
 * not a synthesized trace on its own profile, a GPU's trace named by its model, nor a host trace
 * on a probed host profile. There is no MFU of the profile's GPU from such times. */
static void
test_measured_elsewhere(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 128, FALSE);
  StwHardware a100, h100, host;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &a100, NULL));
  g_assert_true(stw_hardware_lookup("H100-SXM5-80GB", &h100, NULL));
  host = a100;
  host.compute_on_host = TRUE;
  g_strlcpy(host.name, "probed-vm", sizeof host.name);
  g_assert_null(stw_trace_measured_elsewhere(t, &a100)); /* synthesized for it */
  g_assert_cmpstr(stw_trace_measured_elsewhere(t, &h100), ==, "A100-80GB-PCIe4");
  StwThroughput th;
  g_assert_true(stw_throughput(t, &a100, 1, 1000000000, &th));
  g_assert_cmpfloat(th.peak_flops_per_s, >, 0);
  g_assert_cmpfloat(th.mfu, >, 0);
  g_assert_true(stw_throughput(t, &h100, 1, 1000000000, &th));
  g_assert_cmpfloat(th.tokens_per_s, ==, 128.0);
  g_assert_cmpfloat(th.peak_flops_per_s, ==, 0);
  g_assert_cmpfloat(th.mfu, ==, 0);
  g_free(t->device.name);
  t->device.name = g_strdup("host");
  g_assert_cmpstr(stw_trace_measured_elsewhere(t, &a100), ==, "host");
  g_assert_null(stw_trace_measured_elsewhere(t, &host));
  g_free(t->device.name);
  t->device.name = g_strdup(a100.gpu_model); /* a GPU names its model */
  g_assert_null(stw_trace_measured_elsewhere(t, &a100));
  g_assert_cmpstr(stw_trace_measured_elsewhere(t, &h100), ==, a100.gpu_model);
  g_free(t->device.name);
  t->device.name = g_strdup(""); /* it does not say */
  g_assert_null(stw_trace_measured_elsewhere(t, &h100));
}

/* A mixture of experts' model FLOPs are 6 N a token with N its active parameters: Mixtral
 * 8x7B's 12.9B of 46.7B (2 of 8 experts a token), where the trace knows its model. */
static void
test_throughput_moe(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("mixtral-8x7b", 1, 128, FALSE);
  StwHardware a100;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &a100, NULL));
  StwThroughput th;
  g_assert_true(stw_throughput(t, &a100, 1, 1000000000, &th));
  g_assert_cmpuint(stw_model_active_param_count(&t->model.config), ==,
                   G_GUINT64_CONSTANT(12879925248));
  g_assert_cmpfloat(th.model_flops_per_s, ==, 6.0 * 12879925248.0 * 128);
  t->model.has_config = FALSE; /* an imported trace: its parameters, all of them */
  g_assert_true(stw_throughput(t, &a100, 1, 1000000000, &th));
  g_assert_cmpfloat(th.model_flops_per_s, ==, 6.0 * 46702792704.0 * 128);
}

/* A frozen parameter's backward has no weight gradient: the model's FLOPs count it 4 times a
 * token, not 6 (a LoRA's base), and the recompute of checkpointed blocks 2 N more, frozen or
 * not. GPT-2's 124,439,808 parameters at 128 tokens a second. */
static void
test_throughput_frozen(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 128, TRUE);
  StwHardware a100;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &a100, NULL));
  StwThroughput th;
  g_assert_true(stw_throughput(t, &a100, 1, 1000000000, &th));
  g_assert_cmpfloat(th.frozen_share, ==, 0);
  g_assert_cmpfloat(th.model_flops_per_s, ==, 6.0 * 124439808.0 * 128);
  g_assert_cmpfloat(th.hardware_flops_per_s, ==, 8.0 * 124439808.0 * 128);
  guint64 frozen = 0;
  for (guint32 i = 0; i < t->tensors->len; i += 2) { /* every other tensor */
    StwTensor *x = &g_array_index(t->tensors, StwTensor, i);
    x->frozen = TRUE;
    frozen += x->numel;
  }
  g_assert_cmpuint(frozen, >, 0);
  g_assert_cmpuint(frozen, <, 124439808);
  g_assert_true(stw_throughput(t, &a100, 1, 1000000000, &th));
  g_assert_cmpfloat(th.frozen_share, ==, (double)frozen / 124439808.0);
  g_assert_cmpfloat(th.model_flops_per_s, ==, (6.0 * 124439808.0 - 2.0 * (double)frozen) * 128);
  g_assert_cmpfloat(th.hardware_flops_per_s, ==,
                    (6.0 * 124439808.0 - 2.0 * (double)frozen) * 128 + 2.0 * 124439808.0 * 128);
  for (guint32 i = 0; i < t->tensors->len; i++)
    g_array_index(t->tensors, StwTensor, i).frozen = TRUE;
  g_assert_true(stw_throughput(t, &a100, 1, 1000000000, &th));
  g_assert_cmpfloat(th.model_flops_per_s, ==, 4.0 * 124439808.0 * 128);
  g_assert_cmpfloat(th.mfu, ==, th.model_flops_per_s / th.peak_flops_per_s);
}

/* A storage request's time: its latency and its bytes at the drives' bandwidth for its size,
 * shared by the node's ranks; staged through host memory, no faster than the ranks' share of it;
 * with GPUDirect Storage, not bound by host memory; taking turns with the other direction, its
 * own direction's curve slowed as the profile's mixed figure is slower than the two curves
 * taking turns, never sped up; staged, the runtime's checksum of its bytes at the host's rate. */
static void
test_storage_shared(void)
{
  StwHardware ws;
  g_assert_true(stw_hardware_lookup("RTX4090-24GB-PCIe4-2xNVMe", &ws, NULL));
  guint64 b = 16u << 20;
  g_assert_cmpuint(ws.storage_latency_ns, ==, 80000);
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, FALSE, FALSE), ==, 80000 + (guint64)(b / 13e9 * 1e9));
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, TRUE, FALSE), ==, 80000 + (guint64)(b / 10e9 * 1e9));
  g_assert_cmpuint(stw_storage_ns(&ws, 2, b, FALSE, FALSE), ==, 80000 + (guint64)(b / 6.5e9 * 1e9));
  ws.host_memory_bytes_per_s = 8e9; /* host memory slower than the drives */
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, FALSE, FALSE), ==, 80000 + (guint64)(b / 8e9 * 1e9));
  g_assert_cmpuint(stw_storage_ns(&ws, 4, b, FALSE, FALSE), ==, 80000 + (guint64)(b / 2e9 * 1e9));
  ws.storage_gpudirect = TRUE;
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, FALSE, FALSE), ==, 80000 + (guint64)(b / 13e9 * 1e9));
  /* taking turns with the other direction: flat curves of 12 GB/s reading and 6 writing would
   * move 8 MiB each way taking turns at 8 GB/s (both directions' bytes); a mixed figure of 4
   * halves each direction's curve */
  ws.storage_gpudirect = FALSE;
  ws.host_memory_bytes_per_s = 0;
  ws.storage_read[0] = (StwBandwidthPoint){ b, 12e9 };
  ws.storage_write[0] = (StwBandwidthPoint){ b, 6e9 };
  ws.n_storage_read = ws.n_storage_write = 1;
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, TRUE, TRUE), ==, 80000 + (guint64)(b / 6e9 * 1e9));
  ws.storage_mixed_bytes_per_s = 4e9;
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, TRUE, FALSE), ==, 80000 + (guint64)(b / 6e9 * 1e9));
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, TRUE, TRUE), ==, 80000 + (guint64)(b / 3e9 * 1e9));
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, FALSE, TRUE), ==, 80000 + (guint64)(b / 6e9 * 1e9));
  g_assert_cmpuint(stw_storage_ns(&ws, 2, b, FALSE, TRUE), ==, 80000 + (guint64)(b / 3e9 * 1e9));
  /* a mixed figure above the curves' (writes landing in a cache): no faster than alone */
  ws.storage_mixed_bytes_per_s = 10e9;
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, FALSE, TRUE), ==, 80000 + (guint64)(b / 12e9 * 1e9));
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, TRUE, TRUE), ==, 80000 + (guint64)(b / 6e9 * 1e9));
  /* the runtime's checksum of the staged bytes, at the host's rate; none with GPUDirect */
  ws.cpu_checksum_bytes_per_s = 16e9;
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, FALSE, FALSE), ==,
                   80000 + (guint64)(b / 12e9 * 1e9 + b / 16e9 * 1e9));
  ws.storage_gpudirect = TRUE;
  g_assert_cmpuint(stw_storage_ns(&ws, 1, b, FALSE, FALSE), ==, 80000 + (guint64)(b / 12e9 * 1e9));
  StwHardware a100;
  g_assert_true(stw_hardware_lookup("A100-80GB-PCIe4", &a100, NULL));
  g_assert_cmpuint(stw_storage_ns(&a100, 1, b, FALSE, FALSE), ==, 0); /* no storage */
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/simulate/hand-timeline", test_hand_timeline);
  g_test_add_func("/simulate/retimed-cpu-trace", test_retimed_cpu_trace);
  g_test_add_func("/simulate/storage-shared", test_storage_shared);
  g_test_add_func("/simulate/framework-gradients-cross", test_framework_gradients_cross);
  g_test_add_func("/simulate/host-gradients", test_host_gradients);
  g_test_add_func("/simulate/host-gradients-ranks", test_host_gradients_ranks);
  g_test_add_func("/simulate/host-gradients-via-device", test_host_gradients_via_device);
  g_test_add_func("/simulate/unlimited-is-compute", test_unlimited_is_compute);
  g_test_add_func("/simulate/step-before-next-forward", test_step_before_next_forward);
  g_test_add_func("/simulate/collectives-blocking", test_collectives_blocking);
  g_test_add_func("/simulate/chrome-trace-times", test_chrome_trace_times);
  g_test_add_func("/simulate/never-over-budget", test_never_over_budget);
  g_test_add_func("/simulate/whatif-points", test_whatif_points);
  g_test_add_func("/simulate/ddp-baseline", test_ddp_baseline);
  g_test_add_func("/simulate/copy-interference", test_copy_interference);
  g_test_add_func("/simulate/measured-elsewhere", test_measured_elsewhere);
  g_test_add_func("/simulate/throughput-moe", test_throughput_moe);
  g_test_add_func("/simulate/throughput-frozen", test_throughput_frozen);
  return g_test_run();
}
