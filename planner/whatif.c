/* whatif.c — single what-if points and budget lists; see whatif.h. */
#include "config.h"

#include <stowage/whatif.h>

#include <math.h>
#include <string.h>

#include <stowage/check.h>

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

void
stw_whatif_run(const StwTrace *t, const StwPlannerOptions *base, StwPolicy policy,
               guint64 gpu_bytes, guint64 unlimited_ns, StwWhatifPoint *out)
{
  memset(out, 0, sizeof *out);
  out->policy = policy;
  out->gpu_bytes = gpu_bytes;
  StwPlannerOptions o = *base;
  o.policy = policy;
  o.budgets.gpu_bytes = gpu_bytes;
  o.progress = NULL;
  GError *error = NULL;
  g_autoptr(StwPlan) p = stw_planner_plan(t, NULL, &o, &error);
  if (p != NULL && !stw_plan_check(p, t, "(what-if plan)", NULL, NULL, &error))
    g_clear_pointer(&p, stw_plan_free);
  if (p == NULL) {
    out->why = g_strdup(error->message);
    g_error_free(error);
    return;
  }
  out->feasible = TRUE;
  out->chunk_size_elems = p->chunking->size_elems;
  out->h2d_bytes = p->pred.h2d_bytes;
  out->d2h_bytes = p->pred.d2h_bytes;
  out->comm_bytes = p->pred.comm_bytes;
  out->iteration_ns = p->pred.cost_ns;
  out->peak_gpu_bytes = p->pred.peak_gpu_bytes;
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
