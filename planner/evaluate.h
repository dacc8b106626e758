/* evaluate.h — a plan's predictions from its schedule: the one evaluation every stage shares.
 *
 * The planner evaluates each candidate, `check` evaluates a plan it was handed, both over the
 * plan's demand (demand.h), built once by the caller: the replay gives the bytes each way and the
 * peak GPU memory at the worst op, the demand the host memory, and one simulation (simulate.h)
 * the times. Nothing here changes the plan.
 *
 * Internal to the library: not installed.
 */
#ifndef STW_EVALUATE_H
#define STW_EVALUATE_H

#include <glib.h>

#include <stowage/plan.h>
#include <stowage/simulate.h>

#include "demand.h"

G_BEGIN_DECLS

/* The predictions of PLAN for T over D, the plan's demand, into *OUT (every field but
 * lower_bound_bytes, which is left as it was: only the planner computes it). With SIM not NULL
 * the simulation is kept there (with DETAIL: every op, transfer and memory sample; the caller
 * clears it with stw_simulation_clear). */
void stw_plan_evaluate(const StwPlan *plan, const StwTrace *t, const StwDemand *d, gboolean detail,
                       StwPlanPredictions *out, StwSimulation *sim);

/* No schedule of PLAN's layout and placement moves fewer host bytes than this, in steady state
 * (docs/algorithms.md): the plan's lower_bound_bytes. */
guint64 stw_plan_lower_bound(const StwPlan *plan, const StwTrace *t);

G_END_DECLS

#endif
