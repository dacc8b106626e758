/* whatif.c — single what-if points and budget lists; see whatif.h. */
#include "config.h"

#include <stowage/whatif.h>

#include <math.h>
#include <string.h>

#include <stowage/check.h>
#include <stowage/cost.h>
#include <stowage/units.h>

#include "json.h"
#include "op-times.h"

#define UNLIMITED STW_TRACE_MAX_INT /* 8 PiB, the most a plan holds: nothing is ever short */

void
stw_whatif_point_clear(StwWhatifPoint *p)
{
  g_clear_pointer(&p->why, g_free);
}

double
stw_whatif_slowdown(guint64 iteration_ns, guint64 unlimited_ns)
{
  if (unlimited_ns == STW_WHATIF_UNKNOWN)
    return NAN;
  if (unlimited_ns == 0)
    return iteration_ns == 0 ? 1.0 : INFINITY;
  return (double)iteration_ns / (double)unlimited_ns;
}

/* T planned with O and checked, or NULL and *WHY (the caller's) the planner's or the check's
 * message. */
static StwPlan *
checked_plan(const StwTrace *t, const StwPlannerOptions *o, char **why)
{
  GError *error = NULL;
  StwPlan *p = stw_planner_plan(t, NULL, o, &error);
  if (p != NULL && !stw_plan_check(p, t, "(what-if plan)", NULL, NULL, &error))
    g_clear_pointer(&p, stw_plan_free);
  if (p == NULL) {
    *why = g_strdup(error->message);
    g_error_free(error);
  }
  return p;
}

void
stw_whatif_run(const StwTrace *t, const StwPlannerOptions *base, StwPolicy policy,
               guint64 gpu_bytes, guint64 unlimited_ns, StwWhatifPoint *out)
{
  memset(out, 0, sizeof *out);
  out->policy = policy;
  out->gpu_bytes = gpu_bytes;
  out->state_dtype = base->state_dtype >= 0 ? (StwDtype)base->state_dtype : t->model.state_dtype;
  StwPlannerOptions o = *base;
  o.policy = policy;
  o.budgets.gpu_bytes = gpu_bytes;
  o.progress = NULL;
  out->world_size = stw_planner_world(t, &o);
  out->layout = stw_planner_layout(&o, out->world_size);
  g_autoptr(StwPlan) p = checked_plan(t, &o, &out->why);
  if (p == NULL)
    return;
  out->feasible = TRUE;
  out->chunk_size_elems = stw_chunking_whole_size(p->chunking);
  out->h2d_bytes = p->pred.h2d_bytes;
  out->d2h_bytes = p->pred.d2h_bytes;
  out->comm_bytes = p->pred.comm_bytes;
  out->iteration_ns = p->pred.cost_ns;
  out->peak_gpu_bytes = p->pred.peak_gpu_bytes;
  out->recomputed_blocks = p->recompute->len;
  out->offloaded_blocks = p->offload->len;
  out->host_bytes = stw_cost_add(p->pred.cpu_bytes, p->pred.host_overhead_bytes);
  out->storage_bytes = p->pred.storage_bytes;
  out->bound = stw_plan_bound(p, NULL);
  out->slowdown = stw_whatif_slowdown(out->iteration_ns, unlimited_ns);
  stw_throughput(t, &o.hw, p->chunking->world, out->iteration_ns, &out->throughput);
}

gboolean
stw_whatif_unlimited(const StwTrace *t, const StwPlannerOptions *base, guint64 *ns, char **why)
{
  StwPlannerOptions o = *base;
  o.budgets.cpu_bytes = UNLIMITED;
  o.budgets.reserved_bytes = 0;
  StwWhatifPoint p;
  stw_whatif_run(t, &o, STW_POLICY_STOWAGE, UNLIMITED, STW_WHATIF_UNKNOWN, &p);
  gboolean ok = p.feasible;
  *ns = ok ? p.iteration_ns : STW_WHATIF_UNKNOWN;
  if (why != NULL)
    *why = ok ? NULL : g_steal_pointer(&p.why);
  stw_whatif_point_clear(&p);
  return ok;
}

void
stw_whatif_ddp_clear(StwDdpPoint *p)
{
  g_clear_pointer(&p->why, g_free);
}

/* The DDP baseline's all-reduce over S's ops of T: buckets filled in the order backward
 * completes the gradients (a tensor's at the last op that writes it: a tied embedding's two),
 * as DDP rebuilds them after its first iteration, each all-reduced (a ring's
 * reduce-scatter and all-gather, stw_collective_ns each) once full and the link is free; into
 * OUT's allreduce_ns, exposed_ns and comm_bytes. ELEM: a gradient element's bytes. */
static void
ddp_allreduce(const StwTrace *t, const StwSimulation *s, const StwHardware *hw, guint32 world,
              guint32 nodes, guint64 elem, StwDdpPoint *out)
{
  const StwSimOp *so = (const StwSimOp *)s->ops->data;
  guint32 n = t->ops->len, last_fwd = 0, last_bwd = G_MAXUINT32;
  for (guint32 i = 0; i < n; i++) {
    StwStage stage = g_array_index(t->ops, StwOp, i).stage;
    if (stage == STW_STAGE_FWD)
      last_fwd = i;
    else if (stage == STW_STAGE_BWD)
      last_bwd = i;
  }
  if (last_bwd == G_MAXUINT32)
    return; /* nothing trained */
  g_autofree guint32 *done = g_new0(guint32, t->tensors->len); /* its last writer, + 1 */
  for (guint32 i = last_fwd + 1; i <= last_bwd; i++) {
    const StwOp *op = &g_array_index(t->ops, StwOp, i);
    for (guint32 k = 0; op->stage == STW_STAGE_BWD && k < op->n_grads; k++)
      done[op->grads[k]] = i + 1;
  }
  guint64 comm_free = 0, bucket = 0, cap = STW_DDP_FIRST_BUCKET_BYTES, grads = 0;
  for (guint32 i = last_fwd + 1; i <= last_bwd; i++) {
    const StwOp *op = &g_array_index(t->ops, StwOp, i);
    if (op->stage != STW_STAGE_BWD)
      continue;
    for (guint32 k = 0; k < op->n_grads; k++) {
      const StwTensor *x = &g_array_index(t->tensors, StwTensor, op->grads[k]);
      if (!x->frozen && done[op->grads[k]] == i + 1)
        bucket += x->numel * elem;
    }
    if (bucket > 0 && (bucket >= cap || i == last_bwd)) {
      guint64 ns = 2 * stw_collective_ns(hw, world, nodes, (bucket + world - 1) / world);
      guint64 start = MAX(so[i].end_ns, comm_free);
      comm_free = stw_cost_add(start, ns);
      out->allreduce_ns = stw_cost_add(out->allreduce_ns, ns);
      grads += bucket;
      bucket = 0;
      cap = STW_DDP_BUCKET_BYTES;
    }
  }
  out->exposed_ns = comm_free > so[last_bwd].end_ns ? comm_free - so[last_bwd].end_ns : 0;
  out->comm_bytes = (guint64)((double)grads * 2.0 * (world - 1) / world);
}

void
stw_whatif_ddp(const StwTrace *t, const StwPlannerOptions *base, guint64 gpu_bytes,
               guint64 unlimited_ns, StwDdpPoint *out)
{
  memset(out, 0, sizeof *out);
  guint32 world = stw_planner_world(t, base);
  out->gpu_bytes = gpu_bytes;
  out->world_size = world;
  /* the loop's start-up on the host holds for DDP's ranks as for every policy's */
  guint64 startup = stw_planner_startup_host_bytes(t, base, NULL);
  if (startup > base->budgets.cpu_bytes) {
    g_autofree char *need = stw_size_format(startup);
    g_autofree char *have = stw_size_format(base->budgets.cpu_bytes);
    out->why = g_strdup_printf("ddp: the host budget of %s cannot hold the loop's start-up, %s: "
                               "each rank builds the whole model on the host%s first "
                               "(model.init %s)", have, need,
                               t->model.init == STW_INIT_HOST_FP32 ? " in fp32" : "",
                               stw_init_names[t->model.init]);
    return;
  }
  /* the checkpoints its loop keeps on the host (synth --checkpoints host): each rank's beside
   * its process */
  g_autoptr(GArray) moves = stw_trace_activation_moves(t);
  guint64 held = stw_activation_moves_host_peak(moves);
  guint64 rank = stw_cost_add(held, stw_process_bytes(t, &base->hw, NULL));
  guint64 ranks = rank > STW_COST_MAX / world ? STW_COST_MAX : rank * world;
  if (held > 0 && ranks > base->budgets.cpu_bytes) {
    g_autofree char *need = stw_size_format(ranks);
    g_autofree char *have = stw_size_format(base->budgets.cpu_bytes);
    g_autofree char *each = stw_size_format(held);
    out->why = g_strdup_printf("ddp: the host budget of %s cannot hold its ranks' checkpoints "
                               "and processes, %s: each rank's checkpoints take %s of it at "
                               "most", have, need, each);
    return;
  }
  /* one rank with every chunk resident, stepped on the GPU: what each DDP rank holds and runs */
  StwPlannerOptions o = *base;
  o.world_size = 1;
  o.nodes = 1;
  o.policy = STW_POLICY_GEMINI_STATIC;
  o.gemini_fraction = 1.0;
  o.budgets.gpu_bytes = UNLIMITED;
  o.budgets.cpu_bytes = UNLIMITED;
  o.budgets.reserved_bytes = 0;
  o.progress = NULL;
  g_autofree char *why = NULL;
  g_autoptr(StwPlan) p = checked_plan(t, &o, &why);
  if (p == NULL) {
    out->why = g_strdup_printf("ddp: the whole model on each GPU cannot be planned: %s", why);
    return;
  }
  StwSimulation s;
  stw_simulate(p, t, TRUE, &s);
  guint64 elem = stw_chunking_elem_bytes(p->chunking, STW_LIST_PARAM);
  if (world > 1) {
    ddp_allreduce(t, &s, &base->hw, world, MAX(base->nodes, 1), elem, out);
    for (guint32 i = 0; i < t->tensors->len; i++) {
      const StwTensor *x = &g_array_index(t->tensors, StwTensor, i);
      if (!x->frozen)
        out->bucket_bytes += x->numel * elem;
    }
  }
  out->iteration_ns = stw_cost_add(s.iteration_ns, out->exposed_ns);
  /* DDP's backward returns once its buckets are reduced */
  const StwSimOp *so = (const StwSimOp *)s.ops->data;
  for (guint32 i = 0; i < t->ops->len; i++)
    if (g_array_index(t->ops, StwOp, i).stage != STW_STAGE_OPTIM)
      out->backward_end_ns = MAX(out->backward_end_ns,
                                 so[i].end_ns - MIN(so[i].end_ns, so[0].start_ns));
  out->backward_end_ns = stw_cost_add(out->backward_end_ns, out->exposed_ns);
  /* every list resident all along: its chunks' padding, which a PyTorch model does not have,
   * is on the peak from the first op to the last */
  guint64 padding = 0;
  for (int l = 0; l < STW_N_LISTS; l++)
    padding += stw_chunking_wasted_bytes(p->chunking, (StwChunkList)l);
  out->peak_gpu_bytes = stw_cost_add(s.peak_gpu_bytes - MIN(padding, s.peak_gpu_bytes),
                                     out->bucket_bytes);
  stw_simulation_clear(&s);
  StwPlannerOptions at = *base;
  at.budgets.gpu_bytes = gpu_bytes;
  stw_planner_on_device(&at, t);
  guint64 usable = stw_budgets_usable(&at.budgets);
  out->feasible = out->peak_gpu_bytes <= usable;
  if (!out->feasible) {
    g_autofree char *peak = stw_size_format(out->peak_gpu_bytes);
    g_autofree char *have = stw_size_format(usable);
    g_autofree char *buckets = stw_size_format(out->bucket_bytes);
    if (world > 1)
      out->why = g_strdup_printf("ddp: every GPU holds the whole model, its gradients and its "
                                 "optimizer state: %s at the peak (%s of it the gradients' copy "
                                 "in DDP's buckets), where %s is usable", peak, buckets, have);
    else
      out->why = g_strdup_printf("ddp: on one GPU, plain PyTorch holds the whole model, its "
                                 "gradients and its optimizer state there: %s at the peak, where "
                                 "%s is usable", peak, have);
  }
  out->slowdown = stw_whatif_slowdown(out->iteration_ns, unlimited_ns);
  stw_throughput(t, &base->hw, world, out->iteration_ns, &out->throughput);
}

void
stw_whatif_compare(const StwTrace *t, const StwPlannerOptions *base, guint64 gpu_bytes,
                   StwComparison *out)
{
  memset(out, 0, sizeof *out);
  out->gpu_bytes = gpu_bytes;
  out->world_size = stw_planner_world(t, base);
  out->layout = base->layout;
  stw_op_times_of(t, &base->hw, base->measured_times, &out->op_times);
  stw_whatif_unlimited(t, base, &out->unlimited_ns, &out->unlimited_why);
  for (int p = 0; p < STW_N_POLICIES; p++)
    stw_whatif_run(t, base, (StwPolicy)p, gpu_bytes, out->unlimited_ns, &out->points[p]);
  stw_whatif_ddp(t, base, gpu_bytes, out->unlimited_ns, &out->ddp);
}

void
stw_whatif_comparison_clear(StwComparison *c)
{
  g_clear_pointer(&c->unlimited_why, g_free);
  stw_op_times_clear(&c->op_times);
  for (int p = 0; p < STW_N_POLICIES; p++)
    stw_whatif_point_clear(&c->points[p]);
  stw_whatif_ddp_clear(&c->ddp);
}

/* P's members into O (the record of a point, stw_whatif_point_json). */
static void
point_members(cJSON *o, const StwWhatifPoint *p, guint64 batch)
{
  if (batch != 0)
    stw_json_add_u64(o, "batch", batch);
  stw_json_add_u64(o, "gpu_bytes", p->gpu_bytes);
  cJSON_AddStringToObject(o, "policy", stw_policy_names[p->policy]);
  if (p->world_size > 1)
    cJSON_AddStringToObject(o, "layout", stw_layout_names[p->layout]);
  cJSON_AddStringToObject(o, "optimizer_state", stw_state_dtype_name(p->state_dtype));
  cJSON_AddBoolToObject(o, "feasible", p->feasible);
  if (!p->feasible) {
    cJSON_AddStringToObject(o, "why", p->why);
    return;
  }
  stw_json_add_u64(o, "chunk_size_elems", p->chunk_size_elems);
  stw_json_add_u64(o, "h2d_bytes", p->h2d_bytes);
  stw_json_add_u64(o, "d2h_bytes", p->d2h_bytes);
  stw_json_add_u64(o, "comm_bytes", p->comm_bytes);
  stw_json_add_u64(o, "iteration_ns", p->iteration_ns);
  cJSON_AddStringToObject(o, "bound_by", stw_bound_names[p->bound]);
  stw_json_add_u64(o, "host_bytes", p->host_bytes);
  if (p->storage_bytes > 0)
    stw_json_add_u64(o, "storage_bytes", p->storage_bytes);
  if (p->recomputed_blocks > 0)
    stw_json_add_u64(o, "recomputed_blocks", p->recomputed_blocks);
  if (p->offloaded_blocks > 0)
    stw_json_add_u64(o, "offloaded_blocks", p->offloaded_blocks);
  if (isfinite(p->slowdown))
    cJSON_AddNumberToObject(o, "slowdown", p->slowdown);
  else
    cJSON_AddNullToObject(o, "slowdown");
  const StwThroughput *th = &p->throughput;
  if (th->tokens_per_s > 0) {
    cJSON_AddNumberToObject(o, "tokens_per_s", th->tokens_per_s);
    cJSON_AddNumberToObject(o, "model_flops_per_s", th->model_flops_per_s);
    cJSON_AddNumberToObject(o, "hardware_flops_per_s", th->hardware_flops_per_s);
    if (th->peak_flops_per_s > 0)
      cJSON_AddNumberToObject(o, "mfu", th->mfu);
    else /* times measured on another device: no MFU of this one */
      cJSON_AddNullToObject(o, "mfu");
    cJSON_AddBoolToObject(o, "recompute", th->recompute);
  }
}

static char *
print_record(cJSON *o)
{
  return stw_json_take_text(o, TRUE);
}

char *
stw_whatif_point_json(const StwWhatifPoint *p, guint64 batch)
{
  cJSON *o = cJSON_CreateObject();
  point_members(o, p, batch);
  return print_record(o);
}

char *
stw_whatif_comparison_json(const StwComparison *c, const char *trace_file, const char *hardware)
{
  cJSON *root = cJSON_CreateObject();
  if (trace_file != NULL)
    cJSON_AddStringToObject(root, "trace", trace_file);
  cJSON_AddStringToObject(root, "hardware", hardware);
  stw_json_add_u64(root, "gpu_bytes", c->gpu_bytes);
  stw_json_add_u64(root, "gpus", c->world_size);
  if (c->world_size > 1) /* as asked; each policy's record says its plan's */
    cJSON_AddStringToObject(root, "layout", stw_layout_names[c->layout]);
  stw_op_times_add_json(root, c->op_times.measured_on, &c->op_times.retiming);
  if (c->unlimited_ns == STW_WHATIF_UNKNOWN)
    cJSON_AddNullToObject(root, "unlimited_iteration_ns");
  else
    stw_json_add_u64(root, "unlimited_iteration_ns", c->unlimited_ns);
  cJSON *arr = cJSON_AddArrayToObject(root, "policies");
  for (int p = 0; p < STW_N_POLICIES; p++) {
    cJSON *row = cJSON_CreateObject();
    point_members(row, &c->points[p], 0);
    cJSON_AddItemToArray(arr, row);
  }
  const StwDdpPoint *d = &c->ddp;
  cJSON *ddp = cJSON_AddObjectToObject(root, "ddp");
  cJSON_AddBoolToObject(ddp, "feasible", d->feasible);
  if (d->why != NULL)
    cJSON_AddStringToObject(ddp, "why", d->why);
  if (d->iteration_ns > 0 || d->peak_gpu_bytes > 0) {
    stw_json_add_u64(ddp, "iteration_ns", d->iteration_ns);
    stw_json_add_u64(ddp, "peak_gpu_bytes", d->peak_gpu_bytes);
    stw_json_add_u64(ddp, "bucket_bytes", d->bucket_bytes);
    stw_json_add_u64(ddp, "allreduce_ns", d->allreduce_ns);
    stw_json_add_u64(ddp, "exposed_ns", d->exposed_ns);
    stw_json_add_u64(ddp, "backward_end_ns", d->backward_end_ns);
    stw_json_add_u64(ddp, "comm_bytes", d->comm_bytes);
    if (isfinite(d->slowdown))
      cJSON_AddNumberToObject(ddp, "slowdown", d->slowdown);
    else
      cJSON_AddNullToObject(ddp, "slowdown");
    if (d->throughput.tokens_per_s > 0)
      cJSON_AddNumberToObject(ddp, "tokens_per_s", d->throughput.tokens_per_s);
  }
  return print_record(root);
}

char *
stw_whatif_rows_json(const GArray *rows)
{
  cJSON *arr = cJSON_CreateArray();
  for (guint i = 0; i < rows->len; i++) {
    const StwWhatifRow *r = &g_array_index(rows, StwWhatifRow, i);
    cJSON *o = cJSON_CreateObject();
    point_members(o, &r->point, r->batch);
    cJSON_AddItemToArray(arr, o);
  }
  return print_record(arr);
}

char *
stw_whatif_rows_csv(const GArray *rows)
{
  GString *s = g_string_new("batch,gpu_bytes,policy,feasible,chunk_size_elems,h2d_bytes,"
                            "d2h_bytes,comm_bytes,iteration_ns,slowdown,tokens_per_s,mfu,"
                            "host_bytes,optimizer_state,why\n");
  for (guint i = 0; i < rows->len; i++) {
    const StwWhatifRow *r = &g_array_index(rows, StwWhatifRow, i);
    const StwWhatifPoint *p = &r->point;
    g_autofree char *why = g_strdup(p->why ? p->why : "");
    g_strdelimit(why, "\"", '\'');
    /* empty fields where the batch is not known and where the slowdown is no ratio */
    g_autofree char *sd = p->feasible && isfinite(p->slowdown)
                              ? g_strdup_printf("%.4f", p->slowdown) : g_strdup("");
    g_autofree char *bt = r->batch ? g_strdup_printf("%" G_GUINT64_FORMAT, r->batch)
                                   : g_strdup("");
    g_string_append_printf(s, "%s,%" G_GUINT64_FORMAT ",%s,%s,%" G_GUINT64_FORMAT
                           ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                           ",%" G_GUINT64_FORMAT ",%s,%.1f,%.4f,%" G_GUINT64_FORMAT
                           ",%s,\"%s\"\n", bt, p->gpu_bytes,
                           stw_policy_names[p->policy], p->feasible ? "yes" : "no",
                           p->chunk_size_elems, p->h2d_bytes, p->d2h_bytes, p->comm_bytes,
                           p->iteration_ns, sd, p->throughput.tokens_per_s,
                           p->throughput.mfu, p->host_bytes,
                           stw_state_dtype_name(p->state_dtype), why);
  }
  return g_string_free(s, FALSE);
}

/* What a minmem search plans at each budget: T with BASE's options and POLICY, at a GPU budget
 * or (HOST) a host budget at GPU_BYTES. */
typedef struct {
  const StwTrace *t;
  const StwPlannerOptions *base;
  StwPolicy policy;
  gboolean host;
  guint64 gpu_bytes;
} Search;

static void
search_run(const Search *s, guint64 budget, guint64 reference_ns, StwWhatifPoint *out)
{
  StwPlannerOptions o = *s->base;
  if (s->host)
    o.budgets.cpu_bytes = budget;
  stw_whatif_run(s->t, &o, s->policy, s->host ? s->gpu_bytes : budget, reference_ns, out);
}

static gboolean
within(const StwWhatifPoint *p, double allowed)
{
  return p->feasible && p->slowdown <= 1 + allowed;
}

/* Bisects (LO, HI] to the precision for the smallest budget within ALLOWED of REFERENCE_NS,
 * BEST (HI's point, within it) replaced by each smaller one found. Returns the budget. */
static guint64
bisect(const Search *s, guint64 lo, guint64 hi, double allowed, guint64 reference_ns,
       StwWhatifPoint *best)
{
  while (hi - lo > STW_WHATIF_MINMEM_PRECISION) {
    guint64 mid = lo + (hi - lo) / 2;
    StwWhatifPoint pt;
    search_run(s, mid, reference_ns, &pt);
    if (within(&pt, allowed)) {
      hi = mid;
      stw_whatif_point_clear(best);
      *best = pt;
    } else {
      lo = mid;
      stw_whatif_point_clear(&pt);
    }
  }
  return hi;
}

gboolean
stw_whatif_minmem(const StwTrace *t, const StwPlannerOptions *base, StwPolicy policy,
                  double allowed, gboolean beyond_device, StwMinmem *out, GError **error)
{
  memset(out, 0, sizeof *out);
  out->policy = policy;
  out->allowed = allowed;
  stw_op_times_of(t, &base->hw, base->measured_times, &out->op_times);
  g_autofree char *why = NULL;
  if (!stw_whatif_unlimited(t, base, &out->unlimited_ns, &why)) {
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE, "minmem: the trace cannot be "
                "planned even with unlimited GPU memory: %s", why);
    return FALSE;
  }
  /* bracket: below, nothing; above, what everything resident needs, never more than the GPU
   * has unless asked to look beyond it */
  StwWhatifPoint top;
  stw_whatif_run(t, base, STW_POLICY_STOWAGE, STW_TRACE_MAX_INT, out->unlimited_ns, &top);
  guint64 hi = top.peak_gpu_bytes + base->budgets.reserved_bytes;
  stw_whatif_point_clear(&top);
  if (!beyond_device && hi > base->hw.gpu_memory_bytes)
    hi = base->hw.gpu_memory_bytes;
  StwWhatifPoint *best = &out->best;
  stw_whatif_run(t, base, policy, hi, out->unlimited_ns, best);
  if (!within(best, allowed)) {
    g_autofree char *b = stw_size_format(hi);
    gboolean device = !beyond_device && hi == base->hw.gpu_memory_bytes;
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE, "minmem: policy %s is not "
                "within %.0f%% of unlimited memory even at %s%s: %s", stw_policy_names[policy],
                allowed * 100, b, device ? ", all the GPU memory the profile has" : "",
                best->feasible ? "it is slower" : best->why);
    return FALSE;
  }
  bisect(&(Search){ t, base, policy, FALSE, 0 }, 0, hi, allowed, out->unlimited_ns, best);
  return TRUE;
}

gboolean
stw_whatif_minmem_host(const StwTrace *t, const StwPlannerOptions *base, StwPolicy policy,
                       double allowed, guint64 gpu_bytes, StwMinmem *out, GError **error)
{
  memset(out, 0, sizeof *out);
  out->policy = policy;
  out->allowed = allowed;
  out->host = TRUE;
  stw_op_times_of(t, &base->hw, base->measured_times, &out->op_times);
  const Search s = { t, base, policy, TRUE, gpu_bytes };
  StwWhatifPoint *best = &out->best;
  search_run(&s, UNLIMITED, STW_WHATIF_UNKNOWN, best);
  if (!best->feasible) {
    g_autofree char *g = stw_size_format(gpu_bytes);
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE, "minmem --host: policy %s has "
                "no plan at %s of GPU memory even with host memory to spare: %s",
                stw_policy_names[policy], g, best->why);
    return FALSE;
  }
  out->unlimited_ns = best->iteration_ns;
  /* bracket: the host memory the plan holds with memory to spare, doubled until a plan within
   * the slowdown fits it (the plan made for less room may hold a little more) */
  guint64 hi = MAX(best->host_bytes, STW_WHATIF_MINMEM_PRECISION), lo = 0;
  stw_whatif_point_clear(best);
  search_run(&s, hi, out->unlimited_ns, best);
  while (!within(best, allowed) && hi < UNLIMITED / 2) {
    lo = hi;
    hi *= 2;
    stw_whatif_point_clear(best);
    search_run(&s, hi, out->unlimited_ns, best);
  }
  if (!within(best, allowed)) {
    stw_whatif_point_clear(best);
    search_run(&s, UNLIMITED, out->unlimited_ns, best);
    hi = UNLIMITED;
  }
  out->host_budget = bisect(&s, lo, hi, allowed, out->unlimited_ns, best);
  return TRUE;
}

void
stw_whatif_minmem_clear(StwMinmem *m)
{
  stw_whatif_point_clear(&m->best);
  stw_op_times_clear(&m->op_times);
}

char *
stw_whatif_minmem_json(const StwMinmem *m, const char *trace_file, const char *hardware)
{
  cJSON *root = cJSON_CreateObject();
  if (trace_file != NULL)
    cJSON_AddStringToObject(root, "trace", trace_file);
  cJSON_AddStringToObject(root, "hardware", hardware);
  stw_op_times_add_json(root, m->op_times.measured_on, &m->op_times.retiming);
  cJSON_AddNumberToObject(root, "slowdown_allowed", m->allowed);
  /* what was searched, and the time the slowdown is against: unlimited GPU memory's, or with
   * --host the same GPU budget's with host memory to spare */
  cJSON_AddStringToObject(root, "searched", m->host ? "host" : "gpu");
  if (m->host)
    stw_json_add_u64(root, "host_budget_bytes", m->host_budget);
  stw_json_add_u64(root, "unlimited_iteration_ns", m->unlimited_ns);
  cJSON *best = cJSON_AddObjectToObject(root, "point");
  point_members(best, &m->best, 0);
  return print_record(root);
}
