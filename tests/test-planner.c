/* test-planner.c — every policy's plans pass check on the bundled traces; the stowage policy
 * against PatrickStar's; infeasible budgets; tampered and malformed plans. */
#include "config.h"

#include <math.h>

#include <glib.h>
#include <glib/gstdio.h>

#include <stowage/check.h>
#include <stowage/cost.h>
#include <stowage/planner.h>
#include <stowage/synth.h>
#include <stowage/whatif.h>
#include <stowage/units.h>

#include "testutil.h"

static StwTrace *
bundled(const char *name)
{
  g_autofree char *path = g_build_filename(g_getenv("STW_SRCDIR") ? g_getenv("STW_SRCDIR") : ".",
                                           "traces", name, NULL);
  GError *error = NULL;
  StwTrace *t = stw_trace_load(path, &error);
  g_assert_no_error(error);
  return t;
}

/* T's plan under POLICY at GPU bytes, its blocks' activations as recorded (the chunk
 * machinery's tests; plan_activations decides them). */
static StwPlan *
plan(const StwTrace *t, StwPolicy policy, guint64 gpu, StwObjective objective, GError **error)
{
  StwPlannerOptions o;
  stw_test_planner_options(&o, policy, gpu, 8 * STW_TiB);
  o.objective = objective;
  o.activations = STW_ACTIVATIONS_KEEP;
  return stw_planner_plan(t, "bundled", &o, error);
}

static StwPlan *
plan_activations(const StwTrace *t, guint64 gpu, StwActivations activations)
{
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_STOWAGE, gpu, 8 * STW_TiB);
  o.activations = activations;
  return stw_planner_plan(t, "bundled", &o, NULL);
}

/* Plans, checks, and checks again after a trip through the file format. */
static StwPlan *
plan_and_check(const StwTrace *t, StwPolicy policy, guint64 gpu, StwObjective objective)
{
  GError *error = NULL;
  StwPlan *p = plan(t, policy, gpu, objective, &error);
  if (p == NULL) {
    /* a policy may not fit; it must say where and by how much */
    g_assert_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE);
    g_assert_nonnull(strstr(error->message, "short"));
    g_test_message("  %s at %" G_GUINT64_FORMAT " GiB: %s", stw_policy_names[policy],
                   gpu / STW_GiB, error->message);
    g_clear_error(&error);
    return NULL;
  }
  StwCheckReport rep;
  StwPlanPredictions before = p->pred;
  g_assert_true(stw_plan_check(p, t, "p", &rep, NULL, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(rep.pred.h2d_bytes, ==, before.h2d_bytes);
  g_assert_cmpuint(rep.pred.peak_gpu_bytes, ==, before.peak_gpu_bytes);
  g_assert_cmpuint(rep.pred.peak_gpu_bytes + p->budgets.reserved_bytes, <=, gpu);
  g_assert_cmpuint(before.h2d_bytes + before.d2h_bytes, >=, before.lower_bound_bytes);
  g_autofree char *text = stw_plan_to_string(p, t);
  g_autoptr(StwPlan) back = stw_plan_parse("p.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_true(stw_plan_check(back, t, "p.json", NULL, NULL, &error));
  g_assert_no_error(error);
  g_autofree char *again = stw_plan_to_string(back, t);
  g_assert_cmpstr(text, ==, again);
  return p;
}

static void
test_every_policy_checks(void)
{
  static const struct {
    const char *trace;
    guint64 gib[3];
  } cases[] = {
    { "gpt2-b8-s1024.json", { 80, 9, 8 } },
    { "bert-base-b32-s512.json", { 16, 12, 11 } },
    { "llama2-7b-b4-s4096-flash-ckpt.json", { 80, 24, 12 } },
    { "pstar-12b-b8-s1024-ckpt.json", { 40, 16, 10 } },
  };
  guint feasible = 0;
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(StwTrace) t = bundled(cases[i].trace);
    for (int b = 0; b < 3; b++) {
      guint64 gpu = cases[i].gib[b] * STW_GiB;
      g_test_message("%s at %" G_GUINT64_FORMAT " GiB", cases[i].trace, cases[i].gib[b]);
      for (int p = 0; p < STW_N_POLICIES; p++) {
        StwPlan *pl = plan_and_check(t, (StwPolicy)p, gpu, STW_OBJECTIVE_TIME);
        feasible += pl != NULL;
        stw_plan_free(pl);
      }
    }
  }
  g_test_message("%u feasible plans checked", feasible);
  g_assert_cmpuint(feasible, >=, 50);
}

/* The stowage policy never moves more than PatrickStar (objective bytes) and is never slower
 * (objective time), wherever PatrickStar fits. */
static void
test_stowage_vs_patrickstar(void)
{
  static const struct {
    const char *trace;
    guint64 gib;
  } cases[] = {
    { "gpt2-b8-s1024.json", 9 }, { "gpt2-b8-s1024.json", 10 },
    { "llama2-7b-b4-s4096-flash-ckpt.json", 24 }, { "llama2-7b-b4-s4096-flash-ckpt.json", 40 },
    { "pstar-12b-b8-s1024-ckpt.json", 16 }, { "pstar-12b-b8-s1024-ckpt.json", 40 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(StwTrace) t = bundled(cases[i].trace);
    guint64 gpu = cases[i].gib * STW_GiB;
    g_autoptr(StwPlan) ps = plan(t, STW_POLICY_PATRICKSTAR, gpu, STW_OBJECTIVE_TIME, NULL);
    g_assert_nonnull(ps);
    g_autoptr(StwPlan) bytes = plan(t, STW_POLICY_STOWAGE, gpu, STW_OBJECTIVE_BYTES, NULL);
    g_autoptr(StwPlan) time = plan(t, STW_POLICY_STOWAGE, gpu, STW_OBJECTIVE_TIME, NULL);
    guint64 ps_bytes = ps->pred.h2d_bytes + ps->pred.d2h_bytes;
    guint64 st_bytes = bytes->pred.h2d_bytes + bytes->pred.d2h_bytes;
    g_test_message("%s at %" G_GUINT64_FORMAT " GiB: patrickstar moves %" G_GUINT64_FORMAT
                   " MiB in %.3f s; stowage %" G_GUINT64_FORMAT " MiB (bytes), %.3f s (time)",
                   cases[i].trace, cases[i].gib, ps_bytes >> 20, ps->pred.cost_ns / 1e9,
                   st_bytes >> 20, time->pred.cost_ns / 1e9);
    g_assert_cmpuint(st_bytes, <=, ps_bytes);
    g_assert_cmpuint(time->pred.cost_ns, <=, ps->pred.cost_ns);
  }
}

static void
test_unlimited_moves_nothing(void)
{
  g_autoptr(StwTrace) t = bundled("gpt2-b8-s1024.json");
  g_autoptr(StwPlan) p = plan(t, STW_POLICY_STOWAGE, 80 * STW_GiB, STW_OBJECTIVE_TIME, NULL);
  g_assert_cmpuint(p->pred.h2d_bytes + p->pred.d2h_bytes, ==, 0);
  g_assert_cmpuint(p->pred.cpu_adam_ns, ==, 0);
  for (guint32 i = 0; i < stw_chunking_count(p->chunking); i++)
    g_assert_cmpint(p->optim[i], ==, STW_OPTIM_GPU_RESIDENT);
  /* model data 1.62 GiB (14 B/param, plus waste) beside a 7.59 GiB activation peak */
  g_assert_cmpuint(p->pred.peak_gpu_bytes, >, 9 * STW_GiB);
  g_assert_cmpuint(p->pred.peak_gpu_bytes, <, 10 * STW_GiB);
}

static void
test_infeasible(void)
{
  g_autoptr(StwTrace) t = bundled("gpt2-b8-s1024.json");
  GError *error = NULL;
  /* the activations alone do not fit: kept (7.59 GiB at the loss), and with every block
   * recomputed (3.23 GiB), the leanest auto (the default) can make them */
  g_assert_null(plan_activations(t, 7 * STW_GiB, STW_ACTIVATIONS_KEEP));
  StwPlannerOptions keep;
  stw_test_planner_options(&keep, STW_POLICY_STOWAGE, 7 * STW_GiB, 8 * STW_TiB);
  keep.activations = STW_ACTIVATIONS_KEEP;
  g_assert_null(stw_planner_plan(t, "bundled", &keep, &error));
  g_assert_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE);
  stw_assert_error_contains(error, "no plan fits a GPU budget of 7.00 GiB: at op 99 (loss, fwd) "
                                   "the non-model memory alone, with the reserve, needs 7.59 GiB, "
                                   "606.78 MiB short, before any chunk. The smallest budget any "
                                   "plan can use is above 7.59 GiB; reduce the batch, sequence "
                                   "length or activation memory (--checkpointing, --attention "
                                   "flash)");
  g_clear_error(&error);
  g_autoptr(StwPlan) recomputing = plan_activations(t, 7 * STW_GiB, STW_ACTIVATIONS_AUTO);
  g_assert_nonnull(recomputing);
  StwPlannerOptions lean;
  stw_test_planner_options(&lean, STW_POLICY_STOWAGE, 3 * STW_GiB, 8 * STW_TiB); /* auto */
  g_assert_null(stw_planner_plan(t, "bundled", &lean, &error));
  stw_assert_error_contains(error, "no plan fits a GPU budget of 3.00 GiB: at op 99 (loss, fwd) "
                                   "the non-model memory alone, with the reserve, needs 3.23 GiB, "
                                   "237.28 MiB short, before any chunk, every block recomputed. "
                                   "The smallest budget any plan can use is above 3.23 GiB; "
                                   "reduce the batch, sequence length or activation memory "
                                   "(--attention flash)");
  /* the activations fit, but not beside the chunk: mini's two tensors share one chunk of
   * 1024 elements (2 KiB in fp16), and its ops peak at 192 bytes of activations */
  g_autofree char *mini_path = stw_test_fixture("traces/mini.json");
  g_autoptr(StwTrace) mini = stw_trace_load(mini_path, &error);
  g_assert_no_error(error);
  g_assert_null(plan(mini, STW_POLICY_STOWAGE, 2000, STW_OBJECTIVE_TIME, &error));
  stw_assert_error_contains(error, "policy stowage cannot fit a GPU budget of 1.95 KiB: at op 0 "
                                   "(fc, fwd) it needs 2.00 KiB of chunks resident where 1.77 "
                                   "KiB is left beside non-model memory: 240 B short. The "
                                   "smallest budget any plan can use is 2.19 KiB");
  g_autoptr(StwPlan) fits = plan(mini, STW_POLICY_STOWAGE, 2240, STW_OBJECTIVE_TIME, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(fits->pred.peak_gpu_bytes, ==, 2048 + 192);
  /* ZeRO-Offload keeps every parameter on the GPU: 237 MiB more than the activations */
  g_assert_null(plan(t, STW_POLICY_ZERO_OFFLOAD, 7800 * STW_MiB, STW_OBJECTIVE_TIME, &error));
  stw_assert_error_contains(error, "policy zero-offload cannot fit");

  /* the CPU budget */
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = 9 * STW_GiB;
  o.budgets.cpu_bytes = STW_MiB;
  o.activations = STW_ACTIVATIONS_KEEP; /* (recomputing, every chunk fits the GPU: 2.00 GiB) */
  g_assert_null(stw_planner_plan(t, "x", &o, &error));
  stw_assert_error_contains(error, "policy stowage cannot fit the host budget of 1.00 MiB: its plans that fit the GPU need at least 2.48 GiB of host memory (chunks, and 2.00 GiB per rank for the process), 2.48 GiB more");
  o.budgets.cpu_bytes = STW_TiB;
  o.budgets.reserved_bytes = 9 * STW_GiB;
  g_assert_null(stw_planner_plan(t, "x", &o, &error));
  stw_assert_error_contains(error, "leaves nothing of the GPU budget");
  o.budgets.reserved_bytes = 0;
  o.world_size = 2;
  o.hw.interconnect_bytes_per_s = 0;
  g_assert_null(stw_planner_plan(t, "x", &o, &error));
  stw_assert_error_contains(error, "2 GPUs need the GPU-to-GPU link for their collectives, and "
                            "hardware profile A100-80GB-PCIe4 has none");
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &o.hw, NULL));
  o.world_size = STW_PLAN_MAX_WORLD + 1;
  g_assert_null(stw_planner_plan(t, "x", &o, &error));
  stw_assert_error_contains(error, "4097 GPUs: at most 4096 are supported");
}

/* A budget that reaches into what the process holds on its GPU (hw.gpu_process_bytes): planned
 * without it, kept free as the reserve is and recorded in the plan's; a budget below the card
 * less it planned whole; and where nothing fits, the error says what the process took. */
static void
test_process_memory(void)
{
  g_autoptr(StwTrace) t = bundled("gpt2-b8-s1024.json");
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_STOWAGE, 10 * STW_GiB, 8 * STW_TiB);
  o.activations = STW_ACTIVATIONS_KEEP;
  o.hw.gpu_memory_bytes = 10 * STW_GiB;
  o.hw.gpu_process_bytes = 512 * STW_MiB;
  GError *error = NULL;
  g_autoptr(StwPlan) whole_card = stw_planner_plan(t, "bundled", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(whole_card->budgets.gpu_bytes, ==, 10 * STW_GiB);
  g_assert_cmpuint(whole_card->budgets.reserved_bytes, ==, 512 * STW_MiB);
  g_assert_cmpuint(whole_card->pred.peak_gpu_bytes, <=, 10 * STW_GiB - 512 * STW_MiB);
  g_assert_true(stw_plan_check(whole_card, t, "p.json", NULL, NULL, &error));
  g_assert_no_error(error);
  whole_card->budgets.reserved_bytes = 0; /* as an edited plan would have it: refused */
  g_assert_false(stw_plan_check(whole_card, t, "p.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "$.budgets.reserved_bytes: 0, less than the 512.00 MiB of "
                                   "its budget of 10.00 GiB that a process holds on "
                                   "A100-80GB-PCIe4 outside its tensors (512.00 MiB, "
                                   "$.hardware.gpu.process_bytes): plan it again");
  g_clear_error(&error);
  o.budgets.gpu_bytes = 9 * STW_GiB + 512 * STW_MiB; /* the card less the process: whole */
  g_autoptr(StwPlan) below = stw_planner_plan(t, "bundled", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(below->budgets.reserved_bytes, ==, 0);
  o.hw.gpu_memory_bytes = 8 * STW_GiB; /* 7.59 GiB of activations and 512 MiB kept: no room */
  o.budgets.gpu_bytes = 8 * STW_GiB;
  g_assert_null(stw_planner_plan(t, "bundled", &o, &error));
  stw_assert_error_contains(error, "no plan fits a GPU budget of 8.00 GiB (512.00 MiB of the "
                                   "budget kept free: a process holds 512.00 MiB of the GPU's "
                                   "8.00 GiB outside its tensors (its CUDA context and "
                                   "libraries; the profile's gpu.process_bytes)): at op 99 "
                                   "(loss, fwd) the non-model memory alone, with the reserve, "
                                   "needs 8.09 GiB");
  g_clear_error(&error);

  /* the figure the profiled process measured (device.gpu_process_bytes), read back as written
   * and in the digest, where it was profiled on the profile's device; the profile's elsewhere,
   * and where the measurement cannot be this device's */
  o.hw.gpu_memory_bytes = 10 * STW_GiB;
  o.budgets.gpu_bytes = 10 * STW_GiB;
  g_autofree char *before = stw_trace_digest(t);
  t->device.gpu_process_bytes = STW_GiB;
  g_autofree char *after = stw_trace_digest(t);
  g_assert_cmpstr(before, !=, after);
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(text, "\"gpu_process_bytes\":1073741824"));
  g_autoptr(StwTrace) back = stw_trace_parse("t.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->device.gpu_process_bytes, ==, STW_GiB);
  const char *origin = NULL;
  g_free(t->device.name);
  t->device.name = g_strdup("NVIDIA H100 80GB HBM3"); /* profiled elsewhere */
  g_assert_cmpuint(stw_gpu_process_bytes(t, &o.hw, &origin), ==, 512 * STW_MiB);
  g_assert_cmpstr(origin, ==, "the profile's gpu.process_bytes");
  g_free(t->device.name);
  t->device.name = g_strdup(o.hw.name);
  g_assert_cmpuint(stw_gpu_process_bytes(t, &o.hw, &origin), ==, STW_GiB);
  g_assert_cmpstr(origin, ==, "measured in the profiled process");
  g_autoptr(StwPlan) measured = stw_planner_plan(t, "bundled", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(measured->budgets.reserved_bytes, ==, STW_GiB);
  g_assert_cmpuint(measured->hw.gpu_process_bytes, ==, STW_GiB);
  g_assert_true(stw_plan_check(measured, t, "p.json", NULL, NULL, &error));
  g_assert_no_error(error);
  t->device.gpu_process_bytes = 10 * STW_GiB; /* the whole card: not this device's */
  StwPlannerOptions on = o;
  stw_planner_on_device(&on, t);
  g_assert_cmpuint(on.budgets.reserved_bytes, ==, 512 * STW_MiB);
}

static void
test_check_catches(void)
{
  g_autoptr(StwTrace) t = bundled("gpt2-b8-s1024.json");
  g_autoptr(StwTrace) other = bundled("bert-base-b32-s512.json");
  GError *error = NULL;
  g_autoptr(StwPlan) p = plan(t, STW_POLICY_STOWAGE, 8 * STW_GiB + 512 * STW_MiB,
                              STW_OBJECTIVE_TIME, &error);
  g_assert_no_error(error);
  g_autofree char *text = stw_plan_to_string(p, t);
  g_assert_cmpuint(p->schedule.actions->len, >, 0);

  g_assert_false(stw_plan_check(p, other, "p.json", NULL, NULL, &error));
  g_assert_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_MISMATCH);
  stw_assert_error_contains(error, "p.json was made for the trace with digest a16935d60796ae06");

  /* drop the first fetch: the op that needed it finds its chunk missing */
  g_autoptr(StwPlan) a = stw_plan_parse("a.json", text, strlen(text), &error);
  guint32 i = 0;
  while (g_array_index(a->schedule.actions, StwAction, i).kind != STW_ACTION_FETCH)
    i++;
  g_array_remove_index(a->schedule.actions, i);
  g_assert_false(stw_plan_check(a, t, "a.json", NULL, NULL, &error));
  g_assert_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_UNSOUND);
  stw_assert_error_contains(error, "is needed but not on the GPU");

  /* a smaller budget than the plan was made for */
  g_autoptr(StwPlan) b = stw_plan_parse("b.json", text, strlen(text), &error);
  b->budgets.gpu_bytes = p->pred.peak_gpu_bytes - 1000;
  g_assert_false(stw_plan_check(b, t, "b.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "exceeds the budget of");
  g_test_message("%s", "over budget caught");

  /* predictions that are not what the schedule moves */
  g_autoptr(StwPlan) c = stw_plan_parse("c.json", text, strlen(text), &error);
  c->pred.h2d_bytes += 1;
  g_assert_false(stw_plan_check(c, t, "c.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "$.predictions.h2d_bytes: the plan predicts");

  /* too little host memory */
  g_autoptr(StwPlan) d = stw_plan_parse("d.json", text, strlen(text), &error);
  d->budgets.cpu_bytes = 1;
  g_assert_false(stw_plan_check(d, t, "d.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "more than the CPU budget of 1 B");

  /* a start state without a chunk the iteration expects to find there */
  g_autoptr(StwPlan) e = stw_plan_parse("e.json", text, strlen(text), &error);
  guint32 n_items = STW_N_LISTS * stw_chunking_count(e->chunking), target = 0;
  while (target < n_items && !e->schedule.resident[target])
    target++;
  g_assert_cmpuint(target, <, n_items);
  e->schedule.resident[target] = 0;
  g_assert_false(stw_plan_check(e, t, "e.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "not on the GPU");

  /* every other prediction is recomputed too: the times, the peak's op, the lower bound */
  static const char *const fields[] = { "cost_ns", "stall_ns", "compute_ns", "cpu_adam_ns",
                                        "h2d_ns", "d2h_ns", "peak_op", "lower_bound_bytes" };
  for (gsize f = 0; f < G_N_ELEMENTS(fields); f++) {
    g_autoptr(StwPlan) x = stw_plan_parse("x.json", text, strlen(text), &error);
    guint64 *fieldp[] = { &x->pred.cost_ns, &x->pred.stall_ns, &x->pred.compute_ns,
                          &x->pred.cpu_adam_ns, &x->pred.h2d_ns, &x->pred.d2h_ns, NULL,
                          &x->pred.lower_bound_bytes };
    if (fieldp[f] != NULL)
      *fieldp[f] += 1;
    else
      x->pred.peak_op = (x->pred.peak_op + 1) % t->ops->len;
    g_assert_false(stw_plan_check(x, t, "x.json", NULL, NULL, &error));
    g_assert_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_UNSOUND);
    g_autofree char *needle = g_strdup_printf("$.predictions.%s: the plan predicts", fields[f]);
    stw_assert_error_contains(error, needle);
  }
  /* times made by another cost model are the plan's, informational: check passes them */
  g_autoptr(StwPlan) y = stw_plan_parse("y.json", text, strlen(text), &error);
  y->pred.cost_model = STW_COST_MODEL + 1;
  y->pred.cost_ns += 12345;
  StwCheckReport rep;
  g_assert_true(stw_plan_check(y, t, "y.json", &rep, NULL, &error));
  g_assert_cmpuint(rep.pred.cost_ns, ==, p->pred.cost_ns);
}

static void
test_bad_plan_files(void)
{
  g_autoptr(StwTrace) t = bundled("gpt2-b8-s1024.json");
  g_autoptr(StwPlan) p = plan(t, STW_POLICY_STOWAGE, 9 * STW_GiB, STW_OBJECTIVE_TIME, NULL);
  g_autofree char *text = stw_plan_to_string(p, t);
  static const struct {
    const char *from, *to, *needle;
  } cases[] = {
    { "\"version\": 1", "\"version\": 2", "$.version: unsupported version 2" },
    { "\"policy\": \"stowage\"", "\"policy\": \"magic\"", "$.policy: \"magic\" is not one of" },
    { "\"gpu_bytes\":", "\"gpu_bytes\":-", "$.budgets.gpu_bytes: -" },
    { "\"param:", "\"parm:", "is not a chunk reference (expected LIST:INDEX" },
    { "\"optimizer\":\"", "\"optimizer\":\"tpu", "$.layout[0].optimizer: \"tpu" },
    { "\"format\": \"stowage-plan\"", "\"format\": \"stowage-trace\"", "$.format: this is a stowage trace (\"stowage-trace\"), not a stowage plan" },
    { "\"format\": \"stowage-plan\"", "\"format\": \"stowage-plot\"", "$.format: expected \"stowage-plan\", found \"stowage-plot\"" },
    { "\"digest\":\"", "\"digest\":\"zz", "$.trace.digest: expected 64 lower-case hex digits" },
    { "\"reserved_bytes\":", "\"pinned_bytes\":-1,\"reserved_bytes\":", "$.budgets.pinned_bytes: -1" },
    { "\"size_elems\":", "\"optimizer_state\":\"fp16\",\"size_elems\":",
      "$.chunks.optimizer_state: \"fp16\" is not one of \"fp32\", \"bf16\"" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_assert_nonnull(strstr(text, cases[i].from));
    g_autofree char *bad = g_strdup(text);
    GString *s = g_string_new(bad);
    g_string_replace(s, cases[i].from, cases[i].to, 1);
    GError *error = NULL;
    StwPlan *q = stw_plan_parse("bad.json", s->str, s->len, &error);
    g_assert_null(q);
    g_assert_nonnull(error);
    g_test_message("%s", error->message);
    stw_assert_error_contains(error, cases[i].needle);
    g_string_free(s, TRUE);
  }
  GError *error = NULL;
  g_assert_null(stw_plan_parse("cut.json", text, strlen(text) / 2, &error));
  stw_assert_error_contains(error, "the file ends too early");
}

/* A plan is never made that its own format could not hold: predictions beyond 2^53 are refused
 * when planned, and stw_plan_save refuses them too. */
static void
test_plan_limits(void)
{
  g_autofree char *file = stw_test_fixture("traces/mini.json");
  GError *error = NULL;
  g_autoptr(StwTrace) t = stw_trace_load(file, &error);
  g_assert_no_error(error);
  /* the trace holds the most a trace may: every op's duration adds up to 2^53 ns */
  for (guint32 k = 0; k < t->ops->len; k++)
    g_array_index(t->ops, StwOp, k).duration_ns = k == 0 ? STW_TRACE_MAX_INT : 0;
  g_assert_true(stw_trace_validate(t, "t", &error));
  g_array_index(t->ops, StwOp, 2).duration_ns++;
  g_assert_false(stw_trace_validate(t, "t", &error));
  stw_assert_error_contains(error, "t: $.ops[2].duration_ns: the ops' durations add up to more "
                                   "than 2^53 ns (104 days) by this op");
  g_array_index(t->ops, StwOp, 2).duration_ns--;
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_LRU, 2240, 4 * STW_GiB);
  g_autoptr(StwPlan) p = stw_planner_plan(t, "t.json", &o, &error);
  g_assert_null(p);
  g_assert_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE);
  stw_assert_error_contains(error, "more than a plan holds (2^53)");
  /* and a plan edited past the limits is not written */
  g_autoptr(StwTrace) mini = stw_trace_load(file, &error);
  g_autoptr(StwPlan) q = stw_planner_plan(mini, "t.json", &o, &error);
  g_assert_no_error(error);
  q->pred.cost_ns = STW_TRACE_MAX_INT + 1;
  g_autofree char *dir = g_dir_make_tmp("stw-planner-XXXXXX", NULL);
  g_autofree char *out = g_build_filename(dir, "p.json", NULL);
  g_assert_false(stw_plan_save(q, mini, out, &error));
  stw_assert_error_contains(error, "the plan's prediction cost_ns is 9007199254740993, more than "
                                   "a plan holds (2^53)");
  g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  g_rmdir(dir);
}


/* Feasibility is monotone for every policy: a plan that fits a budget fits every larger one,
 * and one that fits a batch fits every smaller one, on one GPU and on eight; and the default
 * policy fits wherever any baseline does. */
static gboolean
feasible(const StwTrace *t, const StwPlannerOptions *o, int policy, guint64 budget)
{
  StwWhatifPoint pt;
  stw_whatif_run(t, o, (StwPolicy)policy, budget, STW_WHATIF_UNKNOWN, &pt);
  gboolean ok = pt.feasible;
  stw_whatif_point_clear(&pt);
  return ok;
}

static void
test_feasibility_monotone(void)
{
  StwHardware hw;
  g_assert_true(stw_hardware_lookup("V100-32GB-PCIe3", &hw, NULL));
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.cpu_bytes = 64 * STW_GiB;
  /* by budget: GPT-2, batch 8 x 1024, from 6 to 16 GiB */
  g_autofree char *path = g_test_build_filename(G_TEST_DIST, "..", "traces", "gpt2-b8-s1024.json",
                                                NULL);
  GError *error = NULL;
  g_autoptr(StwTrace) t = stw_trace_load(path, &error);
  g_assert_no_error(error);
  for (int p = 0; p < STW_N_POLICIES; p++) {
    gboolean was = FALSE;
    for (guint64 gib = 6; gib <= 16; gib++) {
      gboolean now = feasible(t, &o, p, gib * STW_GiB);
      if (was && !now)
        g_error("%s fits %" G_GUINT64_FORMAT " GiB but not %" G_GUINT64_FORMAT " GiB",
                stw_policy_names[p], gib - 1, gib);
      if (now && p != STW_POLICY_STOWAGE)
        g_assert_true(feasible(t, &o, STW_POLICY_STOWAGE, gib * STW_GiB));
      was = now;
    }
  }
  /* by batch: a 2.1B PatrickStar GPT on 8 GPUs of 32 GiB and on one */
  StwModelConfig cfg;
  g_assert_true(stw_model_resolve("pstar-2b", &cfg, &error));
  for (guint32 world = 1; world <= 8; world *= 8) {
    o.world_size = world;
    o.budgets.cpu_bytes = 240 * STW_GiB;
    gboolean fits[STW_N_POLICIES][9] = { { FALSE } };
    for (guint64 b = 1; b <= 8; b++) {
      StwSynthOptions so = { .batch = b, .seq = 1024, .dtype = STW_DTYPE_FP16,
                             .checkpointing = TRUE, .attention = STW_ATTENTION_FLASH };
      g_autoptr(StwTrace) s = stw_synth_trace(&cfg, &so, &hw, &error);
      g_assert_no_error(error);
      for (int p = 0; p < STW_N_POLICIES; p++)
        fits[p][b] = feasible(s, &o, p, 30 * STW_GiB);
      for (int p = 0; p < STW_N_POLICIES; p++) {
        if (fits[p][b] && b > 1 && !fits[p][b - 1])
          g_error("%u GPUs: %s fits batch %" G_GUINT64_FORMAT " but not %" G_GUINT64_FORMAT,
                  world, stw_policy_names[p], b, b - 1);
        if (fits[p][b])
          g_assert_true(fits[STW_POLICY_STOWAGE][b]);
      }
    }
  }
}


/* ZeRO-3 with its optimizer on the CPU (zero-offload --zero-stage 3): on 4 GPUs each keeps only
 * its own quarter of the 16-bit model, gathering the others' chunks for each use (forward, the
 * recomputation, backward) and releasing them after; so its GPU peak is below stage 2's, where
 * every GPU holds the whole model, and it receives the gathers' bytes, three passes of the
 * others' chunks a step (1/4 of them its own) beside the gradients' reduce-scatter. On one GPU
 * there is no one to shard with: the plans move the same bytes at the same GPU peak in the same
 * time (its own chunks come back as soon as CPU Adam is done, at stage 3 as at stage 2: the
 * prefetch bucket bounds only the gathers). Both pass check. */
static void
test_zero_stage_3(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2-xl", 4, 1024, TRUE);
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_ZERO_OFFLOAD, 8 * STW_GiB, 512 * STW_GiB);
  StwPlan *plans[2][2];
  for (int world = 0; world < 2; world++)
    for (int stage = 0; stage < 2; stage++) {
      o.world_size = world == 0 ? 1 : 4;
      o.zero_stage = 2 + (guint64)stage;
      GError *error = NULL;
      plans[world][stage] = stw_planner_plan(t, "t", &o, &error);
      g_assert_no_error(error);
      g_assert_true(stw_plan_check(plans[world][stage], t, "p", NULL, NULL, &error));
      g_assert_no_error(error);
    }
  g_assert_cmpuint(plans[0][1]->pred.cost_ns, ==, plans[0][0]->pred.cost_ns);
  g_assert_cmpuint(plans[0][1]->pred.h2d_bytes, ==, plans[0][0]->pred.h2d_bytes);
  g_assert_cmpuint(plans[0][1]->pred.d2h_bytes, ==, plans[0][0]->pred.d2h_bytes);
  g_assert_cmpuint(plans[0][1]->pred.peak_gpu_bytes, ==, plans[0][0]->pred.peak_gpu_bytes);
  const StwPlanPredictions *two = &plans[1][0]->pred, *three = &plans[1][1]->pred;
  g_test_message("4 GPUs: stage 2 peak %" G_GUINT64_FORMAT " received %" G_GUINT64_FORMAT
                 "; stage 3 peak %" G_GUINT64_FORMAT " received %" G_GUINT64_FORMAT,
                 two->peak_gpu_bytes, two->comm_bytes, three->peak_gpu_bytes, three->comm_bytes);
  g_assert_cmpuint(three->peak_gpu_bytes + STW_GiB, <, two->peak_gpu_bytes);
  guint64 model = 0;
  for (guint i = 0; i < t->tensors->len; i++)
    model += stw_trace_tensor(t, i)->numel * 2;
  /* three gathers of the others' three quarters and the reduce-scatter's: 4 x 3/4 of the
   * model, and the chunks' padding */
  g_assert_cmpuint(three->comm_bytes, >=, model * 3);
  g_assert_cmpuint(three->comm_bytes, <, model * 3 + model / 2);
  g_assert_cmpuint(2 * three->comm_bytes, >, 3 * two->comm_bytes); /* 4 passes against 2 */
  for (int world = 0; world < 2; world++)
    for (int stage = 0; stage < 2; stage++)
      stw_plan_free(plans[world][stage]);
}

/* With oversized chunks (several sizes) the lower bound is still one: never above the bytes the
 * plan moves, at budgets from tight to roomy. */
static void
test_bound_mixed_sizes(void)
{
  g_autofree char *path = g_test_build_filename(G_TEST_DIST, "..", "traces", "gpt2-b8-s1024.json",
                                                NULL);
  GError *error = NULL;
  g_autoptr(StwTrace) t = stw_trace_load(path, &error);
  g_assert_no_error(error);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  guint checked = 0;
  for (guint64 gib = 8; gib <= 12; gib++) {
    StwPlannerOptions o;
    stw_planner_options_init(&o, &hw);
    o.budgets.gpu_bytes = gib * STW_GiB;
    o.allow_oversized = TRUE;
    o.chunk_size_elems = stw_trace_largest_tensor(t, NULL) / 4; /* the embedding alone, larger */
    g_autoptr(StwPlan) p = stw_planner_plan(t, "x", &o, &error);
    if (p == NULL) {
      g_clear_error(&error);
      continue;
    }
    guint64 moved = p->pred.h2d_bytes + p->pred.d2h_bytes;
    g_test_message("%" G_GUINT64_FORMAT " GiB: moves %" G_GUINT64_FORMAT ", bound %"
                   G_GUINT64_FORMAT, gib, moved, p->pred.lower_bound_bytes);
    g_assert_cmpuint(p->pred.lower_bound_bytes, <=, moved);
    checked++;
  }
  g_assert_cmpuint(checked, >=, 3);
}


/* A plan of cost model 1 (before the host overhead) still reads and checks, its times and host
 * figures informational: no field it lacks is required. */
static void
test_older_cost_model(void)
{
  g_autofree char *file = stw_test_fixture("traces/mini.json");
  GError *error = NULL;
  g_autoptr(StwTrace) t = stw_trace_load(file, &error);
  g_assert_no_error(error);
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_STOWAGE, 2240, 4 * STW_GiB);
  g_autoptr(StwPlan) p = stw_planner_plan(t, "mini.json", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(p->pred.host_overhead_bytes, ==, 2 * STW_GiB);
  g_autofree char *text = stw_plan_to_string(p, t);
  g_autoptr(GString) old = g_string_new(text);
  g_autofree char *field = g_strdup_printf("\"host_overhead_bytes\":%" G_GUINT64_FORMAT ",",
                                           p->pred.host_overhead_bytes);
  g_assert_cmpuint(g_string_replace(old, field, "", 1), ==, 1);
  g_autofree char *model = g_strdup_printf("\"cost_model\":%u", STW_COST_MODEL);
  g_assert_cmpuint(g_string_replace(old, model, "\"cost_model\":1", 1), ==, 1);
  g_autoptr(StwPlan) q = stw_plan_parse("old.json", old->str, old->len, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(q->pred.cost_model, ==, 1);
  g_assert_cmpuint(q->pred.host_overhead_bytes, ==, 0);
  g_assert_true(stw_plan_check(q, t, "old.json", NULL, NULL, &error));
  g_assert_no_error(error);
}

/* A rank's process memory: the figure measured in the profiled process where the trace was
 * profiled on the profile's device, the profile's (here its default) elsewhere; the plan counts
 * it per rank and check holds the plan to it. */
static void
test_process_bytes(void)
{
  g_autofree char *file = stw_test_fixture("traces/mini.json");
  GError *error = NULL;
  g_autoptr(StwTrace) t = stw_trace_load(file, &error);
  g_assert_no_error(error);
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_STOWAGE, 2240, 4 * STW_GiB);
  t->device.process_bytes = 300 * STW_MiB;
  const char *origin = NULL;
  g_assert_cmpuint(stw_process_bytes(t, &o.hw, &origin), ==, 2 * STW_GiB); /* on test-gpu */
  g_assert_cmpstr(origin, ==, "the default: probe measures it");
  g_autoptr(StwPlan) elsewhere = stw_planner_plan(t, "mini.json", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(elsewhere->pred.host_overhead_bytes, ==, 2 * STW_GiB);
  g_free(t->device.name);
  t->device.name = g_strdup(o.hw.name);
  g_assert_cmpuint(stw_process_bytes(t, &o.hw, &origin), ==, 300 * STW_MiB);
  g_assert_cmpstr(origin, ==, "measured in the profiled process");
  g_autoptr(StwPlan) here = stw_planner_plan(t, "mini.json", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(here->pred.host_overhead_bytes, ==, 300 * STW_MiB);
  g_assert_true(stw_plan_check(here, t, "mini.json", NULL, NULL, &error));
  g_assert_no_error(error);
  t->device.process_bytes = 0; /* not measured: the profile's again */
  g_assert_cmpuint(stw_process_bytes(t, &o.hw, NULL), ==, 2 * STW_GiB);
  o.hw.cpu_overhead_bytes = 700 * STW_MiB;
  g_assert_cmpuint(stw_process_bytes(t, &o.hw, &origin), ==, 700 * STW_MiB);
  g_assert_cmpstr(origin, ==, "the profile's");
  /* the figure is the trace's (in its digest): a plan made with another is not this trace's */
  t->device.process_bytes = 400 * STW_MiB;
  g_assert_false(stw_plan_check(here, t, "mini.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "plan the trace again");
  g_clear_error(&error);
}

/* A plan of OPTIONS' activations for T at GPU bytes (NULL when none fits). */

/* GPT-2 at batch 8 x 1024 (activations 7.59 GiB kept, 3.23 GiB recomputed): at 8 GiB keeping
 * stalls on CPU Adam and moves (144 ms), recomputing all costs a forward (74 ms), and auto
 * recomputes the first 4 blocks (64.3 ms); at 6 GiB only recomputation fits (9 blocks). Each plan checks
 * against the trace as recorded, survives its file (the recompute list in $.trace), and a
 * listing that is not one is refused at its path; a budget its activations do not fit, naming
 * the moment and the blocks whose activations are on the device then. */
static void
test_activations(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 8, 1024, FALSE);
  g_autoptr(StwPlan) keep = plan_activations(t, 8 * STW_GiB, STW_ACTIVATIONS_KEEP);
  g_autoptr(StwPlan) all = plan_activations(t, 8 * STW_GiB, STW_ACTIVATIONS_RECOMPUTE);
  g_autoptr(StwPlan) best = plan_activations(t, 8 * STW_GiB, STW_ACTIVATIONS_AUTO);
  g_assert_cmpuint(keep->recompute->len, ==, 0);
  g_assert_cmpuint(all->recompute->len, ==, 12);
  g_assert_cmpuint(best->recompute->len, ==, 4);
  g_assert_cmpuint(best->offload->len, ==, 0);
  g_assert_cmpuint(g_array_index(best->recompute, guint32, 3), ==, 3);
  g_assert_cmpuint(best->pred.cost_ns, <, all->pred.cost_ns);
  g_assert_cmpuint(all->pred.cost_ns, <, keep->pred.cost_ns);
  g_assert_cmpuint(all->trace_ops, ==, t->ops->len + 12 * 8);
  GError *error = NULL;
  StwPlan *plans[] = { keep, all, best };
  for (gsize i = 0; i < G_N_ELEMENTS(plans); i++) {
    g_assert_true(stw_plan_check(plans[i], t, "plan", NULL, NULL, &error));
    g_assert_no_error(error);
    g_autofree char *text = stw_plan_to_string(plans[i], t);
    g_autoptr(StwPlan) back = stw_plan_parse("p.json", text, strlen(text), &error);
    g_assert_no_error(error);
    g_assert_cmpuint(back->recompute->len, ==, plans[i]->recompute->len);
    g_assert_true(stw_plan_check(back, t, "p.json", NULL, NULL, &error));
    g_assert_no_error(error);
  }
  g_assert_null(plan_activations(t, 6 * STW_GiB, STW_ACTIVATIONS_KEEP));
  g_autoptr(StwPlan) lean = plan_activations(t, 6 * STW_GiB, STW_ACTIVATIONS_AUTO);
  g_assert_nonnull(lean);
  g_assert_cmpuint(lean->recompute->len, ==, 9);
  /* a trace without blocks to decide is planned as recorded */
  g_autoptr(StwTrace) ckpt = stw_test_synth("gpt2", 8, 1024, TRUE);
  g_autoptr(StwPlan) as_is = plan_activations(ckpt, 8 * STW_GiB, STW_ACTIVATIONS_AUTO);
  g_assert_cmpuint(as_is->recompute->len, ==, 0);
  /* recompute lists the reader refuses */
  g_autofree char *text = stw_plan_to_string(best, t);
  static const struct {
    const char *from, *to, *needle;
  } cases[] = {
    { "\"recompute\":[0,1,2,3]", "\"recompute\":[0,2,1,3]",
      "$.trace.recompute[2]: block 1 after block 2: the blocks are listed once each, ascending" },
    { "\"recompute\":[0,1,2,3]", "\"recompute\":[0,1,2,12]",
      "$.trace.recompute[3]: block 12, and the trace has 12 blocks" },
    { "\"gpu_bytes\":8589934592", "\"gpu_bytes\":7000000000",
      "moment 98 (op lm_head, fwd): GPU memory 7.06 GiB (chunks 1.69 GiB + non-model 5.37 GiB + "
      "reserve 0 B) exceeds the budget of 6.52 GiB by 558.67 MiB (585808388 bytes); on the "
      "device then, the activations of blocks h4 (kept), h5 (kept), h6 (kept), h7 (kept) and 4 "
      "more" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_assert_nonnull(strstr(text, cases[i].from));
    g_autoptr(GString) bad = g_string_new(text);
    g_string_replace(bad, cases[i].from, cases[i].to, 1);
    g_autoptr(StwPlan) p = stw_plan_parse("p.json", bad->str, bad->len, &error);
    if (p != NULL) /* read; then its trace refuses it */
      g_assert_false(stw_plan_check(p, t, "p.json", NULL, NULL, &error));
    stw_assert_error_contains(error, cases[i].needle);
  }
}

/* GPT-2 at batch 8 x 1024, every block offloaded at 6 GiB (where keeping them does not fit): the
 * plan lists the blocks and their moves (372.13 MiB each way per block, out after its forward and
 * back when the block after it begins its backward), checks, survives its file; its copies
 * are on the engines (4.36 GiB each way beside no chunk traffic) and the host holds them. Moves
 * that are not the blocks' and a block both offloaded and recomputed are refused, naming the
 * member. */
static void
test_activations_offload(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 8, 1024, FALSE);
  g_autoptr(StwPlan) p = plan_activations(t, 6 * STW_GiB, STW_ACTIVATIONS_OFFLOAD);
  g_assert_nonnull(p);
  g_assert_cmpuint(p->offload->len, ==, 12);
  g_assert_cmpuint(p->recompute->len, ==, 0);
  g_assert_cmpuint(p->moves->len, ==, 12);
  g_assert_cmpuint(p->trace_ops, ==, t->ops->len);
  const StwActivationMove *m0 = &g_array_index(p->moves, StwActivationMove, 0);
  const StwBlock *b0 = &g_array_index(t->blocks, StwBlock, 0);
  const StwBlock *b1 = &g_array_index(t->blocks, StwBlock, 1);
  g_assert_cmpuint(m0->bytes, ==, b0->saved_bytes - b0->input_bytes);
  g_assert_cmpuint(m0->bytes, ==, 390201344);
  g_assert_cmpuint(m0->out_moment, ==, b0->fwd_last + 1);
  g_assert_cmpuint(m0->out_done, ==, b1->fwd_last + 1);
  g_assert_cmpuint(m0->in_moment, ==, b1->bwd_first);
  g_assert_cmpuint(m0->in_done, ==, b0->bwd_first);
  g_assert_cmpuint(p->pred.h2d_bytes, ==, 12 * m0->bytes);
  g_assert_cmpuint(p->pred.d2h_bytes, ==, 12 * m0->bytes);
  g_assert_cmpuint(p->pred.lower_bound_bytes, ==, 24 * m0->bytes);
  g_assert_cmpuint(p->pred.cpu_bytes, >=, 11 * m0->bytes);
  /* on two ranks, each rank's own on the host */
  {
    StwPlannerOptions o2;
    stw_test_planner_options(&o2, STW_POLICY_STOWAGE, 6 * STW_GiB, 8 * STW_TiB);
    o2.activations = STW_ACTIVATIONS_OFFLOAD;
    o2.world_size = 2;
    g_autoptr(StwPlan) p2 = stw_planner_plan(t, "bundled", &o2, NULL);
    g_assert_nonnull(p2);
    guint64 peak = stw_activation_moves_host_peak(p2->moves);
    g_test_message("two ranks: host %" G_GUINT64_FORMAT ", moves' peak %" G_GUINT64_FORMAT,
                   p2->pred.cpu_bytes, peak);
    g_assert_cmpuint(p2->pred.cpu_bytes, ==, 2 * peak);
  }
  GError *error = NULL;
  g_assert_true(stw_plan_check(p, t, "plan", NULL, NULL, &error));
  g_assert_no_error(error);
  g_autofree char *text = stw_plan_to_string(p, t);
  g_autoptr(StwPlan) back = stw_plan_parse("p.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->moves->len, ==, 12);
  g_assert_true(stw_plan_check(back, t, "p.json", NULL, NULL, &error));
  g_assert_no_error(error);
  /* a trace decided otherwise than the plan */
  g_autofree guint8 *other = g_new0(guint8, t->blocks->len);
  other[0] = STW_BLOCK_RECOMPUTE;
  g_autoptr(StwTrace) decided = stw_trace_decide(t, other, &error);
  g_assert_no_error(error);
  g_autoptr(StwTrace) owned = NULL;
  g_assert_null(stw_plan_trace(p, decided, &owned, &error));
  stw_assert_error_contains(error, "the trace decides its blocks' activations, and not as the "
                                   "plan does");
  /* keeping them does not fit at 6 GiB; offloading all is slower than recomputing all here
   * (a GPT-2 block's copies take longer than its forward), and auto is neither slower */
  g_assert_null(plan_activations(t, 6 * STW_GiB, STW_ACTIVATIONS_KEEP));
  g_autoptr(StwPlan) re = plan_activations(t, 6 * STW_GiB, STW_ACTIVATIONS_RECOMPUTE);
  g_autoptr(StwPlan) best = plan_activations(t, 6 * STW_GiB, STW_ACTIVATIONS_AUTO);
  g_assert_cmpuint(re->pred.cost_ns, <, p->pred.cost_ns);
  g_assert_cmpuint(best->pred.cost_ns, <=, re->pred.cost_ns);
  static const struct {
    const char *from, *to, *needle;
  } cases[] = {
    { "{\"block\":1,\"out\":[17,25]", "{\"block\":1,\"out\":[17,24]",
      "$.trace.activation_moves[1]: block 1 out [17, 24]" },
    { "\"offload\":[0,1,2,3,4,5,6,7,8,9,10,11]", "\"offload\":[0,1,2,3,4,5,6,7,8,9,10,11],"
      "\"recompute\":[3]", "$.trace.offload[3]: block 3, which the plan recomputes" },
    { "\"offload\":[0,1,2,3,4,5,6,7,8,9,10,11]", "\"offload\":[0,1,2,3,4,5,6,7,8,9,10]",
      "$.trace.activation_moves: 12 moves, and the plan offloads 11 blocks" },
    { "\"out\":[9,17]", "\"out\":[9,17,25]", "$.trace.activation_moves[0].out" },
    { "\"out\":[9,17]", "\"out\":[17,9]", "$.trace.activation_moves[0].out: [17, 9]: a copy is "
      "done at or after the moment it is issued" },
    { "\"out\":[9,17]", "\"out\":[9]", "$.trace.activation_moves[0].out: expected [moment, "
      "done]: two moments" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_assert_nonnull(strstr(text, cases[i].from));
    g_autoptr(GString) bad = g_string_new(text);
    g_string_replace(bad, cases[i].from, cases[i].to, 1);
    g_autoptr(StwPlan) q = stw_plan_parse("p.json", bad->str, bad->len, &error);
    if (q != NULL) /* read; then check refuses it */
      g_assert_false(stw_plan_check(q, t, "p.json", NULL, NULL, &error));
    stw_assert_error_contains(error, cases[i].needle);
  }
}

/* GPT-2 XL, batch 1 x 512 in bf16, synthesized for the profile NAME (into *HW). */
static StwTrace *
xl_trace(const char *name, StwHardware *hw)
{
  StwModelConfig cfg;
  GError *error = NULL;
  g_assert_true(stw_zoo_lookup("gpt2-xl", &cfg, &error));
  g_assert_true(stw_hardware_lookup(name, hw, &error));
  StwSynthOptions so = { .batch = 1, .seq = 512, .dtype = STW_DTYPE_BF16 };
  StwTrace *t = stw_synth_trace(&cfg, &so, hw, &error);
  g_assert_no_error(error);
  return t;
}

/* GPT-2 XL (batch 1 x 512) on an RTX 4090 with two NVMe drives, 12 GiB of its memory: with 8 GiB
 * of host memory no plan fits without a storage tier; with 100 GiB of it, the optimizer state of
 * some CPU Adam chunks moves there ("cpu-storage"), read and written each step. The plan checks,
 * survives its file, is slower than with host memory to spare, and is refused where the storage
 * budget or the profile's storage is not there. */
static void
test_storage_state(void)
{
  StwHardware hw;
  GError *error = NULL;
  g_autoptr(StwTrace) t = xl_trace("RTX4090-24GB-PCIe4-2xNVMe", &hw);
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = 12 * STW_GiB;
  o.budgets.cpu_bytes = 8 * STW_GiB;
  g_assert_null(stw_planner_plan(t, "x", &o, &error));
  stw_assert_error_contains(error, "cannot fit the host budget of 8.00 GiB");
  o.budgets.storage_bytes = 100 * STW_GiB;
  g_autoptr(StwPlan) p = stw_planner_plan(t, "x", &o, &error);
  g_assert_no_error(error);
  guint32 stored = 0;
  for (guint32 i = 0; i < stw_chunking_count(p->chunking); i++)
    stored += p->optim[i] == STW_OPTIM_CPU_STORAGE;
  g_assert_cmpuint(stored, ==, 5); /* all 5 of its CPU Adam chunks */
  g_assert_cmpuint(p->pred.storage_bytes, >, 6 * STW_GiB);
  g_assert_cmpuint(p->pred.storage_bytes, <=, o.budgets.storage_bytes);
  g_assert_cmpuint(p->pred.storage_ns, >, 0);
  g_assert_cmpuint(p->pred.cpu_bytes + p->pred.host_overhead_bytes, <=, o.budgets.cpu_bytes);
  g_assert_true(stw_plan_check(p, t, "s.json", NULL, NULL, &error));
  g_assert_no_error(error);
  g_autofree char *text = stw_plan_to_string(p, t);
  g_assert_nonnull(strstr(text, "\"optimizer\":\"cpu-storage\""));
  g_assert_nonnull(strstr(text, "\"storage_bytes\":107374182400"));
  g_autoptr(StwPlan) back = stw_plan_parse("s.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->pred.storage_bytes, ==, p->pred.storage_bytes);
  g_assert_true(stw_plan_check(back, t, "s.json", NULL, NULL, &error));
  g_assert_no_error(error);
  /* host memory to spare: faster, nothing on storage */
  o.budgets.cpu_bytes = 32 * STW_GiB;
  g_autoptr(StwPlan) roomy = stw_planner_plan(t, "x", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(roomy->pred.storage_bytes, ==, 0);
  g_assert_cmpuint(roomy->pred.cost_ns, <, p->pred.cost_ns);
  g_autofree char *plain = stw_plan_to_string(roomy, t);
  g_assert_null(strstr(plain, "storage_ns"));
  /* a storage budget below what is there, and a profile without storage */
  back->budgets.storage_bytes = back->pred.storage_bytes - 1;
  g_assert_false(stw_plan_check(back, t, "s.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "chunks on the storage tier need ");
  back->budgets.storage_bytes = 100 * STW_GiB;
  back->hw.storage_kind[0] = '\0';
  g_assert_false(stw_plan_check(back, t, "s.json", NULL, NULL, &error));
  g_autofree char *on_storage = stw_size_format(back->pred.storage_bytes);
  g_autofree char *none = g_strdup_printf("(%s, \"cpu-storage\" or \"storage\"), and the plan's "
                                          "hardware profile RTX4090-24GB-PCIe4-2xNVMe has none",
                                          on_storage);
  stw_assert_error_contains(error, none);
  /* ZeRO-Infinity with NVMe (offload_optimizer "nvme") keeps all of its optimizer state there,
   * read, stepped and written one part after another: slower than the stowage plan's pipeline
   * of two buffers */
  o.policy = STW_POLICY_ZERO_INFINITY;
  g_autoptr(StwPlan) zi = stw_planner_plan(t, "x", &o, &error);
  g_assert_no_error(error);
  guint32 cpu = 0, zi_stored = 0;
  guint64 state = 0;
  for (guint32 i = 0; i < stw_chunking_count(zi->chunking); i++) {
    cpu += stw_optim_on_cpu(zi->optim[i]);
    zi_stored += zi->optim[i] == STW_OPTIM_CPU_STORAGE;
    for (int l = STW_LIST_MASTER; l < STW_N_LISTS && zi->optim[i] == STW_OPTIM_CPU_STORAGE; l++)
      state += stw_chunk_bytes(zi->chunking, i, (StwChunkList)l);
  }
  g_assert_cmpuint(zi_stored, ==, cpu);
  g_assert_cmpuint(zi_stored, ==, stw_chunking_count(zi->chunking));
  g_assert_cmpuint(zi->pred.storage_bytes, ==, state);
  g_assert_cmpuint(zi->pred.cost_ns, >, 2 * p->pred.cost_ns);
}

/* Edges of intervals, {time, +1 or -1}: by time, an end before a start at the same time. */
static int
edge_cmp(gconstpointer a, gconstpointer b)
{
  const gint64 *x = a, *y = b;
  if (x[0] != y[0])
    return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The most buffers of parameters on storage SIM has in use at once: a fetch's from its read's
 * start to its copy to the GPU's end, an eviction's from its copy out's start to its write's
 * end (the runtime has two, store.c's N_LENT and tier.c's). */
static guint
most_param_buffers(const StwPlan *p, const StwSimulation *sim)
{
  guint32 n = stw_chunking_count(p->chunking);
  g_autofree guint64 *open_at = g_new0(guint64, n);
  g_autofree gboolean *open = g_new0(gboolean, n);
  g_autoptr(GArray) edges = g_array_new(FALSE, FALSE, sizeof(gint64[2]));
  for (guint i = 0; i < sim->tasks->len; i++) {
    const StwSimTask *x = &g_array_index(sim->tasks, StwSimTask, i);
    if (x->item >= n || p->optim[x->item] != STW_OPTIM_STORAGE)
      continue;
    gboolean starts = (x->lane == STW_SIM_STORAGE_READ && x->kind == STW_SIM_STORAGE_PARAMS) ||
                      x->lane == STW_SIM_D2H;
    gboolean ends = x->lane == STW_SIM_H2D ||
                    (x->lane == STW_SIM_STORAGE_WRITE && x->kind == STW_SIM_STORAGE_PARAMS);
    if (starts && !open[x->item]) {
      open[x->item] = TRUE;
      open_at[x->item] = x->start_ns;
    } else if (ends && open[x->item]) {
      open[x->item] = FALSE;
      gint64 e[2][2] = { { (gint64)open_at[x->item], 1 }, { (gint64)x->end_ns, -1 } };
      g_array_append_vals(edges, e, 2);
    }
  }
  g_array_sort(edges, edge_cmp);
  const gint64 *e = (const gint64 *)edges->data;
  gint64 in_use = 0, most = 0;
  for (guint i = 0; i < edges->len; i++) {
    in_use += e[2 * i + 1];
    most = MAX(most, in_use);
  }
  return (guint)most;
}

/* Host memory too small for even the 16-bit parameters once all the optimizer state is on
 * storage: the parameters of the last chunks go there too ("storage"), read before each fetch and
 * written behind each copy out and each step; the plan fits the host, checks, and says it. */
static void
test_storage_params(void)
{
  StwHardware hw;
  GError *error = NULL;
  g_autoptr(StwTrace) t = xl_trace("RTX4090-24GB-PCIe4-2xNVMe", &hw);
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = 12 * STW_GiB;
  o.budgets.cpu_bytes = 9 * STW_GiB / 2; /* 2 GiB of it the process's */
  o.budgets.storage_bytes = 100 * STW_GiB;
  g_autoptr(StwPlan) p = stw_planner_plan(t, "x", &o, &error);
  g_assert_no_error(error);
  const StwChunking *c = p->chunking;
  guint32 params = 0, cpu = 0;
  guint64 stored = 0;
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    cpu += p->optim[i] == STW_OPTIM_CPU;
    params += p->optim[i] == STW_OPTIM_STORAGE;
    for (int l = 0; l < STW_N_LISTS && stw_optim_state_stored(p->optim[i]); l++)
      if (l != STW_LIST_PARAM || p->optim[i] == STW_OPTIM_STORAGE)
        stored += stw_chunk_bytes(c, i, (StwChunkList)l);
  }
  g_assert_cmpuint(params, >, 0);
  g_assert_cmpuint(cpu, ==, 0); /* all the state went first */
  g_assert_cmpuint(p->pred.storage_bytes, ==, stored);
  g_assert_cmpuint(p->pred.cpu_bytes + p->pred.host_overhead_bytes, <=, o.budgets.cpu_bytes);
  /* the staging buffers: two of the largest stored chunk's bytes, two of its largest param item */
  guint64 biggest = 0, biggest_param = 0;
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    guint64 b = 0;
    for (int l = 0; l < STW_N_LISTS && stw_optim_state_stored(p->optim[i]); l++)
      if (l != STW_LIST_PARAM || p->optim[i] == STW_OPTIM_STORAGE)
        b += stw_chunk_bytes(c, i, (StwChunkList)l);
    biggest = MAX(biggest, b);
    if (p->optim[i] == STW_OPTIM_STORAGE)
      biggest_param = MAX(biggest_param, stw_chunk_bytes(c, i, STW_LIST_PARAM));
  }
  g_assert_cmpuint(stw_plan_staging_bytes(p, t), ==, 2 * biggest + 2 * biggest_param);
  g_assert_cmpuint(stw_plan_staging_bytes(p, t), <=, p->pred.cpu_bytes);
  StwSimulation sim;
  g_assert_true(stw_plan_check(p, t, "s.json", NULL, &sim, &error));
  g_assert_no_error(error);
  /* every stored param item: read before each of its fetches, written behind each copy out */
  guint64 reads = 0, writes = 0, fetched = 0, evicted = 0;
  for (guint i = 0; i < sim.tasks->len; i++) {
    const StwSimTask *x = &g_array_index(sim.tasks, StwSimTask, i);
    if (x->kind == STW_SIM_STORAGE_PARAMS && x->lane == STW_SIM_STORAGE_READ)
      reads += x->bytes;
    if (x->kind == STW_SIM_STORAGE_PARAMS && x->lane == STW_SIM_STORAGE_WRITE)
      writes += x->bytes;
  }
  const StwAction *a = (const StwAction *)p->schedule.actions->data;
  for (guint i = 0; i < p->schedule.actions->len; i++) {
    if (a[i].item >= stw_chunking_count(c) || p->optim[a[i].item] != STW_OPTIM_STORAGE)
      continue;
    guint64 b = stw_chunk_bytes(c, a[i].item, STW_LIST_PARAM);
    fetched += a[i].kind == STW_ACTION_FETCH ? b : 0;
    evicted += a[i].kind == STW_ACTION_EVICT ? b : 0;
  }
  g_assert_cmpuint(most_param_buffers(p, &sim), ==, 2);
  stw_simulation_clear(&sim);
  g_assert_cmpuint(fetched, >, 0);
  g_assert_cmpuint(reads, ==, fetched);
  g_assert_cmpuint(writes, ==, evicted);
  g_autofree char *text = stw_plan_to_string(p, t);
  g_assert_nonnull(strstr(text, "\"optimizer\":\"storage\""));
  g_autoptr(StwPlan) back = stw_plan_parse("s.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_true(stw_plan_check(back, t, "s.json", NULL, NULL, &error));
  g_assert_no_error(error);
  /* with GPUDirect Storage the same plan's stored parameters move between storage and the GPU:
   * none of their bytes cross the copy engines, and the host keeps no staging buffers for them */
  g_autoptr(StwPlan) direct = stw_plan_parse("s.json", text, strlen(text), &error);
  g_assert_no_error(error);
  direct->hw.storage_gpudirect = TRUE;
  StwSimulation via_host;
  stw_simulate(p, t, FALSE, &via_host);
  stw_simulate(direct, t, TRUE, &sim);
  guint64 largest = 0, h2d = 0, direct_reads = 0;
  for (guint32 i = 0; i < stw_chunking_count(c); i++)
    if (p->optim[i] == STW_OPTIM_STORAGE)
      largest = MAX(largest, stw_chunk_bytes(c, i, STW_LIST_PARAM));
  for (guint i = 0; i < sim.tasks->len; i++) {
    const StwSimTask *x = &g_array_index(sim.tasks, StwSimTask, i);
    if (x->lane == STW_SIM_H2D && x->item < stw_chunking_count(c) &&
        p->optim[x->item] == STW_OPTIM_STORAGE)
      h2d += x->bytes;
    if (x->kind == STW_SIM_STORAGE_PARAMS && x->lane == STW_SIM_STORAGE_READ)
      direct_reads += x->bytes;
  }
  g_assert_cmpuint(h2d, ==, 0);
  g_assert_cmpuint(direct_reads, ==, fetched);
  g_assert_cmpuint(sim.h2d_bytes, ==, via_host.h2d_bytes - fetched);
  g_assert_cmpuint(sim.d2h_bytes, ==, via_host.d2h_bytes - evicted);
  g_assert_cmpuint(sim.cpu_bytes, ==, via_host.cpu_bytes - 2 * largest);
  stw_simulation_clear(&sim);
  stw_simulation_clear(&via_host);
  /* the same with 8 GiB of host memory keeps the parameters there, and is faster */
  o.budgets.cpu_bytes = 8 * STW_GiB;
  g_autoptr(StwPlan) roomier = stw_planner_plan(t, "x", &o, &error);
  g_assert_no_error(error);
  for (guint32 i = 0; i < stw_chunking_count(roomier->chunking); i++)
    g_assert_cmpint(roomier->optim[i], !=, STW_OPTIM_STORAGE);
  g_assert_cmpuint(roomier->pred.cost_ns, <, p->pred.cost_ns);
  /* storage too small for what must go there: no plan */
  o.budgets.cpu_bytes = 9 * STW_GiB / 2;
  o.budgets.storage_bytes = p->pred.storage_bytes / 2;
  g_assert_null(stw_planner_plan(t, "x", &o, &error));
  stw_assert_error_contains(error, "host budget of 4.50 GiB");
}

/* auto against every choice of the blocks (keep, recompute or offload each: 3^5 plans) for a
 * 5-layer GPT at budgets from ample to tight, on a PCIe A100 (where a block's copies take longer
 * than its forward) and a GH200 (whose host link is ten times faster): how far from the best its
 * candidates land (docs/algorithms.md). */
static void
test_activations_against_exhaustive(void)
{
  StwModelConfig cfg = { .name = "gpt-5", .arch = STW_ARCH_GPT, .layers = 5, .hidden = 512,
                         .heads = 8, .kv_heads = 8, .ffn = 2048, .vocab = 8192, .max_seq = 1024,
                         .tied = TRUE };
  const char *profiles[] = { STW_HARDWARE_DEFAULT, "GH200-96GB" };
  double worst = 1.0;
  guint32 offloading = 0; /* budgets where the best choice offloads a block */
  for (gsize h = 0; h < G_N_ELEMENTS(profiles); h++) {
    StwHardware hw;
    g_assert_true(stw_hardware_lookup(profiles[h], &hw, NULL));
    StwSynthOptions so = { .batch = 8, .seq = 1024, .dtype = STW_DTYPE_BF16 };
    g_autoptr(StwTrace) t = stw_synth_trace(&cfg, &so, &hw, NULL);
    guint32 n = t->blocks->len;
    g_assert_cmpuint(n, ==, 5);
    guint64 peak = 0;
    for (guint i = 0; i < t->ops->len; i++)
      peak = MAX(peak, stw_trace_op(t, i)->nonmodel_peak_bytes);
    StwPlannerOptions o;
    stw_planner_options_init(&o, &hw);
    o.budgets.cpu_bytes = 8 * STW_TiB;
    for (int f = 3; f <= 10; f++) { /* budgets from 3/10 to the whole kept peak, + model data */
      o.budgets.gpu_bytes = peak * (guint64)f / 10 + 64 * STW_MiB;
      guint64 best = G_MAXUINT64;
      guint32 best_offloads = 0;
      for (guint32 code = 0; code < 243; code++) { /* 3^5 */
        guint8 choice[5];
        guint32 offloads = 0;
        for (guint32 b = 0, c = code; b < n; b++, c /= 3) {
          choice[b] = (guint8)(c % 3);
          offloads += choice[b] == STW_BLOCK_OFFLOAD;
        }
        o.activations = STW_ACTIVATIONS_KEEP;
        g_autoptr(StwPlan) p = stw_planner_plan_blocks(t, choice, "bundled", &o, NULL);
        if (p != NULL && p->pred.cost_ns < best) {
          best = p->pred.cost_ns;
          best_offloads = offloads;
        }
      }
      o.activations = STW_ACTIVATIONS_AUTO;
      g_autoptr(StwPlan) a = stw_planner_plan(t, "bundled", &o, NULL);
      g_assert_true((a == NULL) == (best == G_MAXUINT64)); /* auto fits where any choice does */
      if (a == NULL)
        continue;
      offloading += best_offloads > 0;
      double ratio = (double)a->pred.cost_ns / (double)best;
      g_test_message("%s, budget %.1f MiB: best %" G_GUINT64_FORMAT " ns (%u offloaded), auto %"
                     G_GUINT64_FORMAT " ns (%u offloaded, %u recomputed), %.3fx", profiles[h],
                     o.budgets.gpu_bytes / 1048576.0, best, best_offloads, a->pred.cost_ns,
                     a->offload->len, a->recompute->len, ratio);
      worst = MAX(worst, ratio);
    }
  }
  g_test_message("auto at worst %.3fx the best choice; the best offloads at %u budgets", worst,
                 offloading);
  g_assert_cmpuint(offloading, >, 0);
  g_assert_cmpfloat(worst, <=, 1.10);
}

/* An fp32 layout, every chunk stepped by CPU Adam in host memory: the runtime keeps the weights
 * in the compute copies (stw_adam_steps_in_copy), a step of 28 bytes an element, the rate the
 * profile's (measured on that step), wherever the gradients come from (a framework's,
 * PyTorch's, copied in at the step: the same CPU Adam time); a chunk whose state is on the
 * storage tier keeps its master apart, 32 bytes. */
static void
test_adam_in_copy(void)
{
  StwHardware hw;
  StwModelConfig cfg;
  GError *error = NULL;
  g_assert_true(stw_zoo_lookup("gpt2-medium", &cfg, &error));
  g_assert_true(stw_hardware_lookup("RTX4090-24GB-PCIe4", &hw, &error));
  StwSynthOptions so = { .batch = 1, .seq = 256, .dtype = STW_DTYPE_FP32 };
  g_autoptr(StwTrace) t = stw_synth_trace(&cfg, &so, &hw, &error);
  g_assert_no_error(error);
  g_assert_cmpint(t->model.gradients, ==, STW_GRADIENTS_CHUNKS);
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = 4 * STW_GiB;
  o.policy = STW_POLICY_ZERO_OFFLOAD;
  g_autoptr(StwPlan) kept = stw_planner_plan(t, "x", &o, &error);
  g_assert_no_error(error);
  t->model.gradients = STW_GRADIENTS_FRAMEWORK;
  g_autoptr(StwPlan) apart = stw_planner_plan(t, "x", &o, &error);
  g_assert_no_error(error);
  const StwChunking *c = kept->chunking;
  g_assert_cmpint(c->dtype, ==, STW_DTYPE_FP32);
  guint32 n = stw_chunking_count(c), cpu = 0;
  for (guint32 i = 0; i < n; i++) {
    g_assert_cmpint(kept->optim[i], ==, STW_OPTIM_CPU);
    cpu += stw_adam_steps_in_copy(c, i, kept->optim[i]);
    g_assert_cmpint(apart->optim[i], ==, STW_OPTIM_CPU);
    g_assert_false(stw_adam_steps_in_copy(c, i, STW_OPTIM_CPU_STORAGE));
  }
  g_assert_cmpuint(cpu, ==, n);
  g_assert_cmpfloat(stw_adam_bytes_per_elem(STW_DTYPE_FP32, STW_DTYPE_FP32, FALSE, TRUE), ==, 28);
  g_assert_cmpfloat(stw_adam_bytes_per_elem(STW_DTYPE_FP32, STW_DTYPE_FP32, FALSE, FALSE), ==, 32);
  g_assert_cmpfloat(stw_adam_bytes_per_elem(STW_DTYPE_FP32, STW_DTYPE_BF16, FALSE, TRUE), ==, 20);
  g_assert_cmpfloat(stw_cpu_adam_rate(&hw, c, TRUE), ==, hw.cpu_adam_elems_per_s);
  g_assert_cmpfloat(fabs(stw_cpu_adam_rate(&hw, c, FALSE) / hw.cpu_adam_elems_per_s - 28.0 / 32),
                    <, 1e-12);
  g_assert_cmpuint(kept->pred.cpu_adam_ns, >, 0);
  g_assert_cmpuint(apart->pred.cpu_adam_ns, ==, kept->pred.cpu_adam_ns);
  /* on two ranks too (each its own chunks) */
  StwChunking *two = stw_chunking_copy(c);
  stw_chunking_set_world(two, 2);
  g_assert_true(stw_adam_steps_in_copy(two, 1, STW_OPTIM_CPU));
  stw_chunking_free(two);
}

/* --optimizer-state bf16 (StwPlannerOptions.state_dtype): the layout's moments two bytes an
 * element and the master weights four, whatever the trace's; CPU Adam's rate the profile's
 * scaled by the bytes it moves (28 to 20 with a bf16 compute copy: 1.4x) or, where the profile
 * measured it, the measured one; ZeRO-Offload's simulated CPU Adam 1/1.4 of the time; the plan
 * sound for the trace. */
static void
test_bf16_moments(void)
{
  StwHardware hw;
  GError *error = NULL;
  g_autoptr(StwTrace) t = xl_trace("RTX4090-24GB-PCIe4", &hw);
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = 12 * STW_GiB;
  o.policy = STW_POLICY_ZERO_OFFLOAD; /* CPU Adam for all of it, either way */
  g_autoptr(StwPlan) fp = stw_planner_plan(t, "x", &o, &error);
  g_assert_no_error(error);
  o.state_dtype = STW_DTYPE_BF16;
  g_autoptr(StwPlan) bf = stw_planner_plan(t, "x", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpint(fp->chunking->state_dtype, ==, STW_DTYPE_FP32);
  g_assert_cmpint(bf->chunking->state_dtype, ==, STW_DTYPE_BF16);
  g_assert_cmpuint(stw_chunking_elem_bytes(bf->chunking, STW_LIST_MOMENTUM), ==, 2);
  g_assert_cmpuint(stw_chunking_elem_bytes(bf->chunking, STW_LIST_VARIANCE), ==, 2);
  g_assert_cmpuint(stw_chunking_elem_bytes(bf->chunking, STW_LIST_MASTER), ==, 4);
  g_assert_cmpfloat(stw_cpu_adam_rate(&hw, fp->chunking, FALSE), ==, hw.cpu_adam_elems_per_s);
  g_assert_cmpfloat(fabs(stw_cpu_adam_rate(&hw, bf->chunking, FALSE) / hw.cpu_adam_elems_per_s -
                         1.4),
                    <, 1e-12);
  StwHardware measured = hw;
  measured.cpu_adam_bf16_elems_per_s = 1e9;
  g_assert_cmpfloat(stw_cpu_adam_rate(&measured, bf->chunking, FALSE), ==, 1e9);
  g_assert_cmpuint(bf->pred.cpu_adam_ns, >, 0);
  g_assert_cmpfloat(fabs((double)bf->pred.cpu_adam_ns / (double)fp->pred.cpu_adam_ns - 1 / 1.4),
                    <, 1e-3);
  g_assert_true(stw_plan_check(bf, t, "b.json", NULL, NULL, &error));
  g_assert_no_error(error);
}

/* DeepSpeed's step on the GPU (model.optimizer_impl deepspeed) holds buffers of its own on each
 * rank: its gradient partition at every op, a reduce bucket in backward, the step's fp32
 * gradients in the optimizer ops; GPT-2's 124,439,808 bf16 elements on 4 ranks: 31,109,952 a
 * rank. The planner plans the trace with them, and stw_plan_trace derives it so for check. */
static void
test_loop_buffers(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 2, 512, FALSE);
  StwLoopBuffers b;
  g_assert_false(stw_trace_loop_buffers(t, 4, &b));
  g_assert_null(stw_trace_with_loop_buffers(t, 4));
  GError *error = NULL;
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_GEMINI_STATIC, 8 * STW_GiB, STW_TiB);
  o.gemini_fraction = 1;
  g_autoptr(StwPlan) fused = stw_planner_plan(t, "t.json", &o, &error);
  g_assert_no_error(error);

  t->model.optimizer_impl = STW_OPTIMIZER_DEEPSPEED;
  g_assert_true(stw_trace_loop_buffers(t, 4, &b));
  g_assert_cmpuint(b.partition, ==, 31109952 * 2);
  g_assert_cmpuint(b.bucket, ==, 124439808 * 2); /* below reduce_bucket_size: all of it */
  g_assert_cmpuint(b.step, ==, 31109952 * 4);
  g_autoptr(StwTrace) w = stw_trace_with_loop_buffers(t, 4);
  g_assert_cmpuint(w->ops->len, ==, t->ops->len);
  g_assert_cmpuint(w->blocks->len, ==, t->blocks->len);
  for (guint32 k = 0; k < t->ops->len; k++) {
    const StwOp *x = stw_trace_op(t, k), *y = stw_trace_op(w, k);
    guint64 extra = b.partition + (x->stage == STW_STAGE_BWD     ? b.bucket
                                   : x->stage == STW_STAGE_OPTIM ? b.step
                                                                 : 0);
    g_assert_cmpuint(y->nonmodel_bytes, ==, x->nonmodel_bytes + extra);
    g_assert_cmpuint(y->nonmodel_peak_bytes, ==, x->nonmodel_peak_bytes + extra);
  }
  /* a rank's partition of a model beyond sub_group_size: the step casts 1e9 at a time */
  g_assert_true(stw_trace_loop_buffers(t, 1, &b));
  g_assert_cmpuint(b.step, ==, 124439808 * 4);

  /* one GPU, everything resident: the peak, at the loss's backward, higher by the partition and
   * the bucket; check holds the plan to the trace with them */
  g_autoptr(StwPlan) ds = stw_planner_plan(t, "t.json", &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ds->pred.peak_op, ==, fused->pred.peak_op);
  g_assert_cmpuint(ds->pred.peak_gpu_bytes, ==,
                   fused->pred.peak_gpu_bytes + b.partition + b.bucket);
  StwTrace *owned = NULL;
  const StwTrace *runs = stw_plan_trace(ds, t, &owned, &error);
  g_assert_nonnull(owned);
  g_assert_true(runs == owned);
  g_assert_cmpuint(stw_trace_op(runs, 0)->nonmodel_bytes, ==,
                   stw_trace_op(t, 0)->nonmodel_bytes + b.partition);
  stw_trace_free(owned);
  g_assert_true(stw_plan_check(ds, t, "ds.json", NULL, NULL, &error));
  g_assert_no_error(error);
  /* the fused trace's plan, whose budget left no room for them, against the buffers: refused */
  o.budgets.gpu_bytes = fused->pred.peak_gpu_bytes + o.budgets.reserved_bytes;
  g_autoptr(StwPlan) tight = stw_planner_plan(t, "t.json", &o, &error);
  g_assert_null(tight);
  g_assert_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE);
  g_clear_error(&error);

  /* the loop's own ZeRO configuration: a bucket of 1e6 elements, sub-groups of 1e7, which the
   * trace's file keeps (and its digest binds); without DeepSpeed's step, refused by name */
  g_autofree char *before = stw_trace_digest(t);
  t->model.reduce_bucket_size = 1000000;
  t->model.sub_group_size = 10000000;
  g_assert_true(stw_trace_loop_buffers(t, 4, &b));
  g_assert_cmpuint(b.partition, ==, 31109952 * 2);
  g_assert_cmpuint(b.bucket, ==, 1000000 * 2);
  g_assert_cmpuint(b.step, ==, 10000000 * 4);
  t->model.sub_group_size = 1000000000000; /* Lightning's: the whole partition */
  g_assert_true(stw_trace_loop_buffers(t, 4, &b));
  g_assert_cmpuint(b.step, ==, 31109952 * 4);
  g_autofree char *after = stw_trace_digest(t);
  g_assert_cmpstr(before, !=, after);
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_no_error(error);
  g_autoptr(StwTrace) back = stw_trace_parse("ds.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->model.reduce_bucket_size, ==, 1000000);
  g_assert_cmpuint(back->model.sub_group_size, ==, 1000000000000);
  g_autofree char *again = stw_trace_digest(back);
  g_assert_cmpstr(again, ==, after);
  t->model.optimizer_impl = STW_OPTIMIZER_FUSED;
  g_autofree char *fused_text = stw_trace_to_string(t, &error);
  g_assert_no_error(error);
  g_assert_null(stw_trace_parse("f.json", fused_text, strlen(fused_text), &error));
  stw_assert_error_contains(error, "f.json: $.model.sub_group_size: DeepSpeed's sub_group_size "
                                   "goes with optimizer_impl \"deepspeed\" (its step on the GPU), "
                                   "and the trace's is \"fused\"");
  g_clear_error(&error);
}

/* A loop that builds its whole model on each rank's host before chunking it (model.init): the
 * ranks' start-up is their models in fp32 (host-fp32) or in their dtype (host) beside their
 * processes, held to the host budget before any policy plans; one byte short is refused, by
 * name and figure, and the trace keeps it. */
static void
test_startup_host(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 128, FALSE);
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_STOWAGE, 8 * STW_GiB, STW_TiB);
  o.world_size = 4;
  guint64 model = 1, process = stw_process_bytes(t, &o.hw, NULL);
  g_assert_cmpuint(stw_planner_startup_host_bytes(t, &o, &model), ==, 0); /* sharded */
  g_assert_cmpuint(model, ==, 0);
  t->model.init = STW_INIT_HOST; /* bf16 weights: 2 bytes an element */
  g_assert_cmpuint(stw_planner_startup_host_bytes(t, &o, &model), ==,
                   4 * (124439808 * 2 + process));
  g_assert_cmpuint(model, ==, 124439808 * 2);
  t->model.init = STW_INIT_HOST_FP32;
  guint64 all = stw_planner_startup_host_bytes(t, &o, &model);
  g_assert_cmpuint(model, ==, 124439808 * 4);
  g_assert_cmpuint(all, ==, 4 * (124439808 * 4 + process));
  GError *error = NULL;
  o.budgets.cpu_bytes = all;
  g_autoptr(StwPlan) fits = stw_planner_plan(t, "t.json", &o, &error);
  g_assert_no_error(error);
  o.budgets.cpu_bytes = all - 1;
  g_assert_null(stw_planner_plan(t, "t.json", &o, &error));
  g_assert_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE);
  g_assert_nonnull(strstr(error->message, "policy stowage cannot fit the host budget of "));
  stw_assert_error_contains(error, " at start-up: each of its 4 ranks builds the whole model on "
                                   "the host in fp32 before it is chunked (the trace's "
                                   "model.init \"host-fp32\": 474.70 MiB a rank");
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(text, "\"init\":\"host-fp32\""));
  g_autoptr(StwTrace) back = stw_trace_parse("init.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpint(back->model.init, ==, STW_INIT_HOST_FP32);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/planner/every-policy-checks", test_every_policy_checks);
  g_test_add_func("/planner/stowage-vs-patrickstar", test_stowage_vs_patrickstar);
  g_test_add_func("/planner/unlimited-moves-nothing", test_unlimited_moves_nothing);
  g_test_add_func("/planner/infeasible", test_infeasible);
  g_test_add_func("/planner/process-memory", test_process_memory);
  g_test_add_func("/planner/check-catches", test_check_catches);
  g_test_add_func("/planner/bad-plan-files", test_bad_plan_files);
  g_test_add_func("/planner/plan-limits", test_plan_limits);
  g_test_add_func("/planner/feasibility-monotone", test_feasibility_monotone);
  g_test_add_func("/planner/bound-mixed-sizes", test_bound_mixed_sizes);
  g_test_add_func("/planner/older-cost-model", test_older_cost_model);
  g_test_add_func("/planner/process-bytes", test_process_bytes);
  g_test_add_func("/planner/zero-stage-3", test_zero_stage_3);
  g_test_add_func("/planner/activations", test_activations);
  g_test_add_func("/planner/activations-offload", test_activations_offload);
  g_test_add_func("/planner/storage-state", test_storage_state);
  g_test_add_func("/planner/storage-params", test_storage_params);
  g_test_add_func("/planner/loop-buffers", test_loop_buffers);
  g_test_add_func("/planner/startup-host", test_startup_host);
  g_test_add_func("/planner/bf16-moments", test_bf16_moments);
  g_test_add_func("/planner/adam-in-copy", test_adam_in_copy);
  g_test_add_func("/planner/activations-against-exhaustive", test_activations_against_exhaustive);
  return g_test_run();
}
