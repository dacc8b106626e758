/* test-multirank.c — plans for several data-parallel GPUs: chunk groups, ownership, gathers and
 * reduce-scatters, the collectives' cost, shared host memory, and what check refuses. */
#include "config.h"

#include <math.h>

#include <glib.h>

#include <stowage/check.h>
#include <stowage/cost.h>
#include <stowage/planner.h>
#include <stowage/simulate.h>
#include <stowage/units.h>

#include "demand.h"
#include "testutil.h"

#define CHUNK 4000000 /* elements: GPT-2's 37 chunks, its embedding in one of its own */
#define WORLD 4

static StwPlan *
plan_world(const StwTrace *t, StwPolicy policy, guint64 gpu, guint32 world, GError **error)
{
  StwPlannerOptions o;
  stw_test_planner_options(&o, policy, gpu, STW_TiB);
  o.chunk_size_elems = CHUNK;
  o.allow_oversized = TRUE;
  o.world_size = world;
  return stw_planner_plan(t, "gpt2.json", &o, error);
}

static guint
count_kind(const StwPlan *p, StwActionKind kind)
{
  guint n = 0;
  for (guint i = 0; i < p->schedule.actions->len; i++)
    n += g_array_index(p->schedule.actions, StwAction, i).kind == kind;
  return n;
}

static void
test_collective_time(void)
{
  StwHardware hw;
  g_assert_true(stw_hardware_lookup("A100-80GB-PCIe4", &hw, NULL));
  /* a ring of 4, the GPUs behind one socket: 3 steps of 10 us + 100 MiB at 25 GB/s (4,194,304
   * ns); a ring of 8 crosses between the two sockets, and every step goes at that crossing's
   * 12 GB/s (8,738,133.3 ns): 61,236,933 ns in all */
  g_assert_cmpuint(hw.gpus_per_socket, ==, 4);
  g_assert_cmpuint(stw_collective_ns(&hw, 4, 1, 100 * STW_MiB), ==, 3 * (10000 + 4194304));
  g_assert_cmpuint(stw_collective_ns(&hw, 8, 1, 100 * STW_MiB), ==, 61236933);
  g_assert_cmpuint(stw_collective_ns(&hw, 2, 1, 100 * STW_MiB), ==, 10000 + 4194304);
  /* one socket for all (and so below): the interconnect's rate at any count */
  hw.gpus_per_socket = 0;
  g_assert_cmpuint(stw_collective_ns(&hw, 8, 1, 100 * STW_MiB), ==, 7 * (10000 + 4194304));
  g_assert_cmpuint(stw_collective_ns(&hw, 1, 1, 100 * STW_MiB), ==, 0);
  /* on nodes: a ring in each node over the interconnect, then one between the nodes over the
   * network carrying a node's chunks together (16 ranks on 2 nodes of 8, a 12.5 GB/s network
   * with 5 us: 7 intra steps, then 1 step of 8 chunks) */
  hw.network_bytes_per_s = 12.5e9;
  hw.network_latency_ns = 5000;
  g_assert_cmpuint(stw_collective_ns(&hw, 16, 2, 100 * STW_MiB), ==,
                   7 * (10000 + 4194304) + 5000 + 67108864);
  /* PCIe copies shared by the GPUs behind one switch, and capped by the host's memory */
  guint64 alone = stw_transfer_ns(&hw, 1, 256 * STW_MiB, TRUE);
  hw.gpus_per_pcie_switch = 2;
  g_assert_cmpuint(stw_transfer_ns(&hw, 8, 256 * STW_MiB, TRUE) - hw.pcie_latency_ns, ==,
                   2 * (alone - hw.pcie_latency_ns));
  g_assert_cmpuint(stw_transfer_ns(&hw, 1, 256 * STW_MiB, TRUE), ==, alone); /* alone on it */
  hw.host_memory_bytes_per_s = 8 * 5e9; /* 5 GB/s each for 8 ranks: below PCIe */
  g_assert_cmpuint(stw_transfer_ns(&hw, 8, 256 * STW_MiB, TRUE), ==,
                   hw.pcie_latency_ns + (guint64)(256.0 * STW_MiB / 5e9 * 1e9));
}

/* Every policy's plan for 4 GPUs checks, survives the file format, and has the structure of
 * ZeRO-style data parallelism: one reduce-scatter per group, gathers only of groups, nothing
 * of the chunks rank 0 does not own. */
static void
test_every_policy_checks(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  for (int pol = 0; pol < STW_N_POLICIES; pol++) {
    GError *error = NULL;
    g_autoptr(StwPlan) p = plan_world(t, (StwPolicy)pol, 400 * STW_MiB, WORLD, &error);
    if (p == NULL) {
      g_assert_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE);
      g_test_message("%s: %s", stw_policy_names[pol], error->message);
      g_assert_true(pol == STW_POLICY_ZERO_OFFLOAD); /* it keeps the whole fp16 model */
      g_clear_error(&error);
      continue;
    }
    const StwChunking *c = p->chunking;
    g_assert_cmpuint(c->world, ==, WORLD);
    g_assert_cmpuint(stw_chunking_count(c), ==, 37);
    g_assert_cmpuint(stw_chunking_groups(c), ==, 10);
    g_assert_true(stw_plan_check(p, t, "p.json", NULL, NULL, &error));
    g_assert_no_error(error);
    /* every group has gradients: one reduce-scatter each */
    g_assert_cmpuint(count_kind(p, STW_ACTION_REDUCE_SCATTER), ==, 10);
    guint gathers = count_kind(p, STW_ACTION_GATHER);
    g_assert_cmpuint(gathers, >=, 10); /* each group at least once per iteration */
    /* the ring moves (world - 1) chunks per collective; groups 1..9 hold 4M-element chunks
     * (8 MB in bf16), group 0 the 38.6M-element embedding's chunk */
    guint64 expected = 0;
    for (guint i = 0; i < p->schedule.actions->len; i++) {
      const StwAction *a = &g_array_index(p->schedule.actions, StwAction, i);
      guint32 g = stw_plan_item_group(c, a->item);
      if (g == G_MAXUINT32)
        continue;
      if (a->kind == STW_ACTION_GATHER || a->kind == STW_ACTION_REDUCE_SCATTER)
        expected += 3 * (g == 0 ? 38597376 * 2 : 8000000);
    }
    g_assert_cmpuint(p->pred.comm_bytes, ==, expected);
    g_assert_cmpuint(p->pred.comm_ns, >, 0);
    /* over time, not only at moments, the GPU stays within the budget */
    StwSimulation sim;
    stw_simulate(p, t, FALSE, &sim);
    g_assert_cmpuint(sim.over_budget_bytes, ==, 0);
    g_assert_cmpuint(sim.peak_gpu_bytes, <=, 400 * STW_MiB);
    stw_simulation_clear(&sim);

    g_autofree char *text = stw_plan_to_string(p, t);
    g_assert_nonnull(strstr(text, "\"world_size\":4"));
    g_assert_nonnull(strstr(text, "\"reduce_scatter\""));
    g_autoptr(StwPlan) back = stw_plan_parse("p.json", text, strlen(text), &error);
    g_assert_no_error(error);
    g_assert_cmpuint(back->chunking->world, ==, WORLD);
    g_assert_cmpuint(back->schedule.actions->len, ==, p->schedule.actions->len);
    g_assert_true(stw_plan_check(back, t, "p.json", NULL, NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(back->pred.cost_ns, ==, p->pred.cost_ns);
  }
}

/* ZeRO-3's and Gemini's layout: every policy's plan of shards for 4 GPUs checks and survives the
 * file; each collective moves (world - 1) shards, a quarter of a 4M-element chunk (the
 * embedding's group a quarter of it); rank 0 holds a quarter of every chunk's state, so the GPU
 * peak of a plan keeping it all there is below the groups' (which gather four whole chunks at
 * once), and CPU Adam steps rank 0's part of every tensor. */
static void
test_shards(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  for (int pol = 0; pol < STW_N_POLICIES; pol++) {
    GError *error = NULL;
    StwPlannerOptions o;
    stw_test_planner_options(&o, (StwPolicy)pol, 400 * STW_MiB, STW_TiB);
    o.chunk_size_elems = CHUNK;
    o.allow_oversized = TRUE;
    o.world_size = WORLD;
    o.layout = STW_LAYOUT_SHARDS;
    g_autoptr(StwPlan) p = stw_planner_plan(t, "gpt2.json", &o, &error);
    if (p == NULL) {
      g_assert_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE);
      g_assert_true(pol == STW_POLICY_ZERO_OFFLOAD); /* it keeps the whole fp16 model */
      g_clear_error(&error);
      continue;
    }
    const StwChunking *c = p->chunking;
    g_assert_true(c->shards);
    g_assert_cmpuint(c->size_elems, ==, CHUNK / WORLD);
    g_assert_cmpuint(stw_chunking_groups(c), ==, 37);
    g_assert_true(stw_plan_check(p, t, "p.json", NULL, NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(count_kind(p, STW_ACTION_REDUCE_SCATTER), ==, 37);
    guint64 expected = 0;
    for (guint i = 0; i < p->schedule.actions->len; i++) {
      const StwAction *a = &g_array_index(p->schedule.actions, StwAction, i);
      guint32 g = stw_plan_item_group(c, a->item);
      if (g != G_MAXUINT32 && (a->kind == STW_ACTION_GATHER ||
                               a->kind == STW_ACTION_REDUCE_SCATTER))
        expected += 3 * (g == 0 ? 38597376 / 4 * 2 : CHUNK / 4 * 2);
    }
    g_assert_cmpuint(p->pred.comm_bytes, ==, expected);
    g_autofree char *text = stw_plan_to_string(p, t);
    g_assert_nonnull(strstr(text, "\"shards\":true"));
    g_autoptr(StwPlan) back = stw_plan_parse("p.json", text, strlen(text), &error);
    g_assert_no_error(error);
    g_assert_true(back->chunking->shards);
    g_assert_true(stw_plan_check(back, t, "p.json", NULL, NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(back->pred.cost_ns, ==, p->pred.cost_ns);
    /* the file's shards on one rank, and not a boolean: refused by name */
    g_autoptr(GString) one = g_string_new(text);
    g_string_replace(one, "\"world_size\":4", "\"world_size\":1", 1);
    g_assert_null(stw_plan_parse("one.json", one->str, one->len, &error));
    stw_assert_error_contains(error, "one.json: $.chunks.shards: a layout of shards needs several "
                                     "ranks (world_size) and whole groups: 148 chunks for 1 ranks");
    g_clear_error(&error);
    g_autoptr(GString) word = g_string_new(text);
    g_string_replace(word, "\"shards\":true", "\"shards\":\"yes\"", 1);
    g_assert_null(stw_plan_parse("word.json", word->str, word->len, &error));
    stw_assert_error_contains(error, "word.json: $.chunks.shards: expected true or false");
    g_clear_error(&error);
  }
  GError *error = NULL;
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_GEMINI_STATIC, 2 * STW_GiB, STW_TiB);
  o.gemini_fraction = 1;
  o.chunk_size_elems = 38597376;
  o.world_size = WORLD;
  g_autoptr(StwPlan) groups = stw_planner_plan(t, "gpt2.json", &o, &error);
  g_assert_no_error(error);
  o.layout = STW_LAYOUT_SHARDS;
  g_autoptr(StwPlan) shards = stw_planner_plan(t, "gpt2.json", &o, &error);
  g_assert_no_error(error);
  g_test_message("GPU peak: groups %" G_GUINT64_FORMAT ", shards %" G_GUINT64_FORMAT,
                 groups->pred.peak_gpu_bytes, shards->pred.peak_gpu_bytes);
  /* the state a rank holds is a quarter either way; the groups' one group gathers the 3 other
   * chunks of the model at once, the shards a group or two at a time: more than one chunk's
   * 16-bit parameters fewer */
  g_assert_cmpuint(shards->pred.peak_gpu_bytes + 2 * 38597376, <, groups->pred.peak_gpu_bytes);

  /* ZeRO-Offload at stage 3: CPU Adam steps rank 0's quarter of each group, every tensor's part
   * there, at one rank's rate */
  stw_test_planner_options(&o, STW_POLICY_ZERO_OFFLOAD, 8 * STW_GiB, STW_TiB);
  o.zero_stage = 3;
  o.chunk_size_elems = CHUNK;
  o.allow_oversized = TRUE;
  o.world_size = WORLD;
  o.layout = STW_LAYOUT_SHARDS;
  g_autoptr(StwPlan) z = stw_planner_plan(t, "gpt2.json", &o, &error);
  g_assert_no_error(error);
  o.world_size = 1;
  o.layout = STW_LAYOUT_GROUPS;
  g_autoptr(StwPlan) one = stw_planner_plan(t, "gpt2.json", &o, &error);
  g_assert_no_error(error);
  double owned = 0, all = 0;
  for (guint32 i = 0; i < stw_chunking_count(z->chunking); i++) {
    all += (double)stw_chunking_chunk(z->chunking, i)->used_elems;
    owned += i % WORLD == 0 ? (double)stw_chunking_chunk(z->chunking, i)->used_elems : 0;
  }
  /* at least a quarter: a group's unused tail is in its last shard, as in Gemini's chunks */
  g_assert_cmpfloat(owned / all, >=, 0.25);
  g_assert_cmpfloat(owned / all, <, 0.4);
  StwSimulation s, s1;
  stw_simulate(z, t, FALSE, &s);
  stw_simulate(one, t, FALSE, &s1);
  g_assert_cmpfloat(fabs((double)s.cpu_busy_ns / (double)s1.cpu_busy_ns - owned / all), <, 0.01);
  stw_simulation_clear(&s);
  stw_simulation_clear(&s1);
}

/* Each policy's own layout (STW_LAYOUT_POLICY): shards for the systems that split every chunk
 * across the ranks, ZeRO-3's and Gemini's, groups for the others and on one rank; a layout named
 * is every policy's. A plan of Gemini's in its own layout is the plan of shards, byte for byte. */
static void
test_policy_layout(void)
{
  StwPlannerOptions o;
  stw_test_planner_options(&o, STW_POLICY_STOWAGE, 2 * STW_GiB, STW_TiB);
  const StwLayout want[STW_N_POLICIES] = {
    [STW_POLICY_STOWAGE] = STW_LAYOUT_GROUPS,       [STW_POLICY_PATRICKSTAR] = STW_LAYOUT_GROUPS,
    [STW_POLICY_ZERO_OFFLOAD] = STW_LAYOUT_GROUPS,  [STW_POLICY_ZERO_INFINITY] = STW_LAYOUT_SHARDS,
    [STW_POLICY_GEMINI_STATIC] = STW_LAYOUT_SHARDS, [STW_POLICY_LRU] = STW_LAYOUT_GROUPS,
  };
  for (int p = 0; p < STW_N_POLICIES; p++) {
    o.policy = (StwPolicy)p;
    o.layout = STW_LAYOUT_POLICY;
    g_assert_cmpint(stw_planner_layout(&o, WORLD), ==, want[p]);
    g_assert_cmpint(stw_planner_layout(&o, 1), ==, STW_LAYOUT_GROUPS);
    o.layout = STW_LAYOUT_GROUPS;
    g_assert_cmpint(stw_planner_layout(&o, WORLD), ==, STW_LAYOUT_GROUPS);
    o.layout = STW_LAYOUT_SHARDS;
    g_assert_cmpint(stw_planner_layout(&o, WORLD), ==, STW_LAYOUT_SHARDS);
    g_assert_cmpint(stw_planner_layout(&o, 1), ==, STW_LAYOUT_GROUPS);
  }
  o.policy = STW_POLICY_ZERO_OFFLOAD; /* ZeRO-Offload at stage 3 partitions its parameters */
  o.layout = STW_LAYOUT_POLICY;
  o.zero_stage = 3;
  g_assert_cmpint(stw_planner_layout(&o, WORLD), ==, STW_LAYOUT_SHARDS);

  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  GError *error = NULL;
  stw_test_planner_options(&o, STW_POLICY_GEMINI_STATIC, 2 * STW_GiB, STW_TiB);
  o.gemini_fraction = 1;
  o.world_size = WORLD;
  o.layout = STW_LAYOUT_POLICY;
  g_autoptr(StwPlan) own = stw_planner_plan(t, "gpt2.json", &o, &error);
  g_assert_no_error(error);
  o.layout = STW_LAYOUT_SHARDS;
  g_autoptr(StwPlan) shards = stw_planner_plan(t, "gpt2.json", &o, &error);
  g_assert_no_error(error);
  g_assert_true(own->chunking->shards);
  g_autofree char *a = stw_plan_to_string(own, t);
  g_autofree char *b = stw_plan_to_string(shards, t);
  g_assert_cmpstr(a, ==, b);
}

/* ZeRO-Offload keeps every rank's own optimizer state on the CPU: the host holds four ranks'
 * shares of the fp16, master, momentum and variance lists, 14 bytes per element owned. */
static void
test_host_memory_is_shared(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  GError *error = NULL;
  g_autoptr(StwPlan) p = plan_world(t, STW_POLICY_ZERO_OFFLOAD, 8 * STW_GiB, WORLD, &error);
  g_assert_no_error(error);
  guint64 owned = 0;
  for (guint32 i = 0; i < stw_chunking_count(p->chunking); i += WORLD)
    owned += stw_chunking_chunk(p->chunking, i)->capacity_elems;
  g_assert_cmpuint(owned, ==, 38597376 + 9 * CHUNK);
  g_assert_cmpuint(p->pred.cpu_bytes, ==, WORLD * 14 * owned);

  /* one GPU holds the whole model's state, and there is nothing to gather */
  g_autoptr(StwPlan) one = plan_world(t, STW_POLICY_ZERO_OFFLOAD, 8 * STW_GiB, 1, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(one->pred.cpu_bytes, ==, 14 * (38597376 + 36 * (guint64)CHUNK));
  g_assert_cmpuint(one->pred.comm_bytes, ==, 0);
  g_assert_cmpuint(count_kind(one, STW_ACTION_GATHER), ==, 0);
}

/* The simulator runs each collective on its own lane, a reduce-scatter after the backward op
 * that completes its group, and CPU Adam of a quarter of the model at one rank's rate (each
 * rank steps its own chunks at once), or at a quarter of the host's memory bandwidth where that
 * is the bound. */
static void
test_simulation(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  GError *error = NULL;
  g_autoptr(StwPlan) p = plan_world(t, STW_POLICY_ZERO_OFFLOAD, 8 * STW_GiB, WORLD, &error);
  g_assert_no_error(error);
  g_autoptr(StwPlan) one = plan_world(t, STW_POLICY_ZERO_OFFLOAD, 8 * STW_GiB, 1, &error);
  g_assert_no_error(error);
  StwSimulation s, s1;
  stw_simulate(p, t, TRUE, &s);
  stw_simulate(one, t, FALSE, &s1);
  guint comm = 0;
  guint64 busy = 0;
  for (guint i = 0; i < s.tasks->len; i++) {
    const StwSimTask *x = &g_array_index(s.tasks, StwSimTask, i);
    if (x->lane != STW_SIM_COMM)
      continue;
    comm++;
    busy += x->end_ns - x->start_ns;
    guint32 g = stw_plan_item_group(p->chunking, x->item);
    guint64 chunk = g == 0 ? 38597376 * 2 : 8000000;
    g_assert_cmpuint(x->end_ns - x->start_ns, ==, stw_collective_ns(&p->hw, WORLD, 1, chunk));
  }
  g_assert_cmpuint(comm, ==, count_kind(p, STW_ACTION_GATHER) +
                                 count_kind(p, STW_ACTION_REDUCE_SCATTER));
  g_assert_cmpuint(s.comm_busy_ns, ==, busy);
  g_assert_cmpuint(s.over_budget_bytes, ==, 0);
  /* each reduce-scatter starts after the op whose gradients complete its group */
  g_autofree guint32 *moments = stw_demand_reduce_moments(t, p->chunking);
  for (guint i = 0; i < s.tasks->len; i++) {
    const StwSimTask *x = &g_array_index(s.tasks, StwSimTask, i);
    if (x->lane == STW_SIM_COMM && x->kind == STW_ACTION_REDUCE_SCATTER) {
      guint32 m = moments[stw_plan_item_group(p->chunking, x->item)];
      g_assert_cmpuint(x->start_ns, >=, g_array_index(s.ops, StwSimOp, m - 1).end_ns);
    }
  }
  /* CPU Adam: the elements rank 0 owns at one rank's rate, within the rounding of one tensor's
   * time each */
  double owned = 0, all = 0;
  for (guint32 i = 0; i < stw_chunking_count(p->chunking); i++) {
    all += (double)stw_chunking_chunk(p->chunking, i)->used_elems;
    owned += i % WORLD == 0 ? (double)stw_chunking_chunk(p->chunking, i)->used_elems : 0;
  }
  double owned_share = owned / all;
  g_assert_cmpfloat(owned_share, >, 0.40);
  double ratio = (double)s.cpu_busy_ns / (double)s1.cpu_busy_ns;
  g_assert_cmpfloat(fabs(ratio - owned_share), <, 0.01);
  stw_simulation_clear(&s);
  /* a host whose memory streams one rank's step and no more: the ranks share it (28 bytes an
   * element: fp16 parameters and gradients, fp32 master and moments, as ZeRO-Offload steps) */
  p->hw.host_memory_bytes_per_s = p->hw.cpu_adam_elems_per_s * 28;
  one->hw.host_memory_bytes_per_s = one->hw.cpu_adam_elems_per_s * 28;
  stw_simulate(p, t, TRUE, &s);
  stw_simulation_clear(&s1);
  stw_simulate(one, t, FALSE, &s1);
  ratio = (double)s.cpu_busy_ns / (double)s1.cpu_busy_ns;
  g_assert_cmpfloat(fabs(ratio - owned_share * WORLD), <, 0.01);
  stw_simulation_clear(&s);
  stw_simulation_clear(&s1);
}

static void
replace_once(GString *s, const char *from, const char *to)
{
  g_assert_nonnull(strstr(s->str, from));
  g_string_replace(s, from, to, 1);
}

static void
test_check_catches(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  GError *error = NULL;
  g_autoptr(StwPlan) p = plan_world(t, STW_POLICY_STOWAGE, 400 * STW_MiB, WORLD, &error);
  g_assert_no_error(error);
  g_autofree char *text = stw_plan_to_string(p, t);

  /* a reduce-scatter left out: the owners never get their gradients */
  g_autoptr(StwPlan) a = stw_plan_parse("a.json", text, strlen(text), &error);
  g_assert_no_error(error);
  for (guint i = 0; i < a->schedule.actions->len; i++) {
    if (g_array_index(a->schedule.actions, StwAction, i).kind == STW_ACTION_REDUCE_SCATTER) {
      g_array_remove_index(a->schedule.actions, i);
      break;
    }
  }
  g_assert_false(stw_plan_check(a, t, "a.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "is never reduce-scattered: its gradients, complete at moment");

  /* a reduce-scatter before its gradients are complete */
  g_autoptr(StwPlan) b = stw_plan_parse("b.json", text, strlen(text), &error);
  for (guint i = 0; i < b->schedule.actions->len; i++) {
    StwAction *x = &g_array_index(b->schedule.actions, StwAction, i);
    if (x->kind == STW_ACTION_REDUCE_SCATTER) {
      x->moment--;
      break;
    }
  }
  g_assert_false(stw_plan_check(b, t, "b.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "but its gradients are complete at moment");

  /* a gather turned into a fetch: the group has no host copy here */
  g_autoptr(GString) c = g_string_new(text);
  replace_once(c, "\"gather\":", "\"fetch\":");
  g_autoptr(StwPlan) pc = stw_plan_parse("c.json", c->str, c->len, &error);
  g_assert_no_error(error);
  g_assert_false(stw_plan_check(pc, t, "c.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "have no host copy on this rank; they are gathered and dropped");

  /* a chunk of another rank moved by rank 0 */
  g_autoptr(StwPlan) d = stw_plan_parse("d.json", text, strlen(text), &error);
  StwAction extra = { .moment = 1, .item = stw_plan_item(d->chunking, STW_LIST_MASTER, 1),
                      .kind = STW_ACTION_FETCH };
  g_array_append_val(d->schedule.actions, extra);
  stw_actions_sort(d->schedule.actions);
  g_assert_false(stw_plan_check(d, t, "d.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "fetch of master:1: rank 0 does not own chunk 1");

  /* a gather before the rank's own chunk is on the GPU */
  g_autoptr(StwPlan) e = stw_plan_parse("e.json", text, strlen(text), &error);
  guint32 own = stw_plan_item(e->chunking, STW_LIST_PARAM, 4);
  e->schedule.resident[own] = 0;
  e->schedule.resident[stw_plan_group_item(e->chunking, 1)] = 0;
  StwAction early = { .moment = 0, .item = stw_plan_group_item(e->chunking, 1),
                      .kind = STW_ACTION_GATHER };
  g_array_append_val(e->schedule.actions, early);
  stw_actions_sort(e->schedule.actions);
  g_assert_false(stw_plan_check(e, t, "e.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "moment 0: gather of group:1 before rank 0's own chunk "
                            "param:4 is on the GPU");

  /* a chunk of another rank in the start state */
  g_autoptr(StwPlan) f = stw_plan_parse("f.json", text, strlen(text), &error);
  f->schedule.resident[stw_plan_item(f->chunking, STW_LIST_PARAM, 1)] = 1;
  g_assert_false(stw_plan_check(f, t, "f.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "$.initial: param:1 is on the GPU, but rank 0 does not own "
                            "chunk 1");

  /* a reduce-scatter of a chunk, not a group; and one group reduce-scattered twice */
  g_autoptr(StwPlan) g = stw_plan_parse("g.json", text, strlen(text), &error);
  StwAction chunk_rs = { .moment = 1, .item = stw_plan_item(g->chunking, STW_LIST_PARAM, 0),
                         .kind = STW_ACTION_REDUCE_SCATTER };
  g_array_append_val(g->schedule.actions, chunk_rs);
  stw_actions_sort(g->schedule.actions);
  g_assert_false(stw_plan_check(g, t, "g.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "reduce_scatter of param:0: only a chunk group (group:N) is "
                            "gathered or reduce-scattered");
  g_autoptr(StwPlan) h = stw_plan_parse("h.json", text, strlen(text), &error);
  for (guint i = 0; i < h->schedule.actions->len; i++) {
    StwAction x = g_array_index(h->schedule.actions, StwAction, i);
    if (x.kind == STW_ACTION_REDUCE_SCATTER) {
      g_array_append_val(h->schedule.actions, x);
      break;
    }
  }
  stw_actions_sort(h->schedule.actions);
  g_assert_false(stw_plan_check(h, t, "h.json", NULL, NULL, &error));
  stw_assert_error_contains(error, "is reduce-scattered twice");

  /* malformed references and owners */
  static const struct {
    const char *from, *to, *needle;
  } cases[] = {
    { "\"group:1\"", "\"group:99\"", "group 99 does not exist (the plan has 10 chunk groups)" },
    { "\"world_size\":4", "\"world_size\":0", "$.chunks.world_size: 0" },
    { "\"owner\":1", "\"owner\":7", "$.layout[1].owner: 7" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GString) s = g_string_new(text);
    replace_once(s, cases[i].from, cases[i].to);
    g_assert_null(stw_plan_parse("bad.json", s->str, s->len, &error));
    g_test_message("%s", error->message);
    stw_assert_error_contains(error, cases[i].needle);
  }
}

/* More GPUs share the optimizer state: at the same per-GPU budget the stowage policy moves less
 * over PCIe with 4 GPUs than with 1. */
static void
test_more_gpus_move_less(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  GError *error = NULL;
  g_autoptr(StwPlan) one = plan_world(t, STW_POLICY_STOWAGE, 1 * STW_GiB, 1, &error);
  g_assert_no_error(error);
  g_autoptr(StwPlan) four = plan_world(t, STW_POLICY_STOWAGE, 1 * STW_GiB, WORLD, &error);
  g_assert_no_error(error);
  g_test_message("1 GPU: %" G_GUINT64_FORMAT " B H2D, 4 GPUs: %" G_GUINT64_FORMAT " B H2D",
                 one->pred.h2d_bytes, four->pred.h2d_bytes);
  g_assert_cmpuint(four->pred.h2d_bytes + four->pred.d2h_bytes, <,
                   one->pred.h2d_bytes + one->pred.d2h_bytes);
  g_assert_cmpuint(four->pred.peak_gpu_bytes, <=, 1 * STW_GiB);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/multirank/collective-time", test_collective_time);
  g_test_add_func("/multirank/every-policy-checks", test_every_policy_checks);
  g_test_add_func("/multirank/shards", test_shards);
  g_test_add_func("/multirank/policy-layout", test_policy_layout);
  g_test_add_func("/multirank/host-memory-is-shared", test_host_memory_is_shared);
  g_test_add_func("/multirank/simulation", test_simulation);
  g_test_add_func("/multirank/check-catches", test_check_catches);
  g_test_add_func("/multirank/more-gpus-move-less", test_more_gpus_move_less);
  return g_test_run();
}
