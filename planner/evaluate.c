/* evaluate.c — a plan's predictions from its schedule; see evaluate.h. */
#include "config.h"

#include "evaluate.h"

#include <stowage/cost.h>
#include <stowage/simulate.h>

#include "schedule.h"
#include "simulate-demand.h"

/* The bytes of the framework's gradients copied to the host at the step, where CPU Adam steps
 * their chunks (stw_gradients_cross_at_step), or, with the gradients on the host, each
 * micro-step's copied there (rank 0's share); moves whatever the schedule. Those copied back
 * for a step on the GPU (gradients on the host) into *BACK. */
static guint64
gradient_copies(const StwPlan *p, const StwTrace *t, guint64 *back)
{
  guint64 bytes = 0;
  *back = 0;
  for (guint32 id = 0; id < t->tensors->len; id++) {
    const StwTensor *x = stw_trace_tensor(t, id);
    guint32 ch;
    guint64 b = stw_chunking_owned_part(p->chunking, id, x->numel, &ch) * stw_dtype_bytes(x->dtype);
    if (x->frozen || ch == G_MAXUINT32)
      continue;
    if (stw_gradients_cross_at_step(p->chunking, ch, p->optim[ch], t->model.gradients))
      bytes = stw_cost_add(bytes, b);
    if (stw_gradients_on_host(t->model.gradients) && !stw_optim_on_cpu(p->optim[ch]))
      *back = stw_cost_add(*back, b);
  }
  /* with the gradients on the host, each micro-step's go out; added on the device, the host's
   * sum comes back for each micro-step after the first */
  guint64 host = stw_trace_host_gradient_bytes(t) / MAX(p->chunking->world, 1);
  guint32 steps = stw_trace_micro_steps(t);
  gboolean capped = host > STW_COST_MAX / steps;
  if (t->model.gradients == STW_GRADIENTS_HOST_VIA_DEVICE)
    *back = stw_cost_add(*back, capped ? STW_COST_MAX : host * (steps - 1));
  return stw_cost_add(bytes, capped ? STW_COST_MAX : host * steps);
}

void
stw_plan_evaluate(const StwPlan *p, const StwTrace *t, const StwDemand *d, gboolean detail,
                  StwPlanPredictions *out, StwSimulation *sim)
{
  guint64 bound = out->lower_bound_bytes;
  *out = (StwPlanPredictions){ .lower_bound_bytes = bound, .cost_model = STW_COST_MODEL };
  StwReplay r;
  gboolean ok = stw_schedule_replay(d, &p->schedule, FALSE, &r);
  for (guint32 k = 0; ok && k < t->ops->len; k++) {
    guint64 gpu = r.occupancy[k] + stw_trace_op(t, k)->nonmodel_peak_bytes;
    if (gpu > out->peak_gpu_bytes) {
      out->peak_gpu_bytes = gpu;
      out->peak_op = k;
    }
  }
  stw_replay_clear(&r);

  const StwAction *a = (const StwAction *)p->schedule.actions->data;
  guint32 n = stw_chunking_count(p->chunking);
  for (guint i = 0; i < p->schedule.actions->len; i++) {
    /* with GPUDirect Storage, stored parameters move between storage and the GPU */
    if (p->hw.storage_gpudirect && a[i].item < n && p->optim[a[i].item] == STW_OPTIM_STORAGE)
      continue;
    if (a[i].kind == STW_ACTION_FETCH)
      out->h2d_bytes = stw_cost_add(out->h2d_bytes, d->bytes[a[i].item]);
    else if (a[i].kind == STW_ACTION_EVICT)
      out->d2h_bytes = stw_cost_add(out->d2h_bytes, d->bytes[a[i].item]);
  }
  guint64 back = 0;
  out->d2h_bytes = stw_cost_add(out->d2h_bytes, gradient_copies(p, t, &back));
  out->h2d_bytes = stw_cost_add(out->h2d_bytes, back);
  /* the offloaded blocks' activations, out and back on the same links, held by the host */
  g_autoptr(GArray) moves = stw_trace_activation_moves(t);
  for (guint i = 0; i < moves->len; i++) {
    guint64 b = g_array_index(moves, StwActivationMove, i).bytes;
    out->h2d_bytes = stw_cost_add(out->h2d_bytes, b);
    out->d2h_bytes = stw_cost_add(out->d2h_bytes, b);
  }
  out->cpu_bytes = stw_plan_host_bytes(p, t, d, moves, &out->storage_bytes);
  out->host_overhead_bytes = stw_process_bytes(t, &p->hw, NULL) * MAX(p->chunking->world, 1);
  StwSimulation local, *s = sim != NULL ? sim : &local;
  stw_simulate_demand(p, t, d, detail && sim != NULL, s);
  out->compute_ns = s->compute_busy_ns;
  out->stall_ns = s->compute_stall_ns;
  out->cpu_adam_ns = s->cpu_busy_ns;
  out->storage_ns = s->storage_busy_ns;
  out->h2d_ns = s->h2d_busy_ns;
  out->d2h_ns = s->d2h_busy_ns;
  out->cost_ns = s->iteration_ns;
  out->comm_bytes = s->comm_bytes;
  out->comm_ns = s->comm_busy_ns;
  if (sim == NULL)
    stw_simulation_clear(&local);
}

guint64
stw_plan_lower_bound(const StwPlan *best, const StwTrace *t)
{
  const StwChunking *c = best->chunking;
  g_autoptr(StwDemand) d = stw_demand_build(t, c, best->optim, &best->budgets, NULL, NULL);
  /* the bound counts host transfers; gathers are not */
  for (guint32 g = 0; g < stw_chunking_groups(c); g++)
    d->bytes[stw_plan_group_item(c, g)] = 0;
  g_autofree guint8 *pinned = g_malloc0(MAX(d->n_items, 1));
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    for (int l = STW_LIST_MASTER; l < STW_N_LISTS && stw_chunking_owned(c, i); l++)
      pinned[stw_plan_item(c, (StwChunkList)l, i)] = best->optim[i] == STW_OPTIM_GPU_RESIDENT;
  }
  /* the offloaded blocks' activations move whatever the schedule: out and back */
  g_autoptr(GArray) moves = stw_trace_activation_moves(t);
  guint64 activations = 0;
  for (guint i = 0; i < moves->len; i++)
    activations = stw_cost_add(activations, 2 * g_array_index(moves, StwActivationMove, i).bytes);
  guint64 back = 0, grads = gradient_copies(best, t, &back);
  return stw_cost_add(stw_cost_add(stw_schedule_lower_bound(d, pinned), activations),
                      stw_cost_add(grads, back));
}
