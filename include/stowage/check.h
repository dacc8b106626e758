/* check.h — `stowage check`: prove a plan sound for a trace without running it. */
#ifndef STW_CHECK_H
#define STW_CHECK_H

#include <glib.h>

#include <stowage/plan.h>
#include <stowage/simulate.h>
#include <stowage/trace.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_PLANNER
#error "<stowage/check.h> belongs to the planner: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

typedef struct {
  guint32 n_actions;
  StwPlanPredictions pred;  /* recomputed from the schedule; lower_bound_bytes is the plan's */
} StwCheckReport;

/* Checks that PLAN was made for T (digest), that its layout places every tensor once, and,
 * replaying its schedule from its start state, that every op finds its chunks on the GPU (and
 * CPU Adam's on the CPU), that chunks + non-model peak + reserve never exceed the GPU budget,
 * that no drop loses data, that the iteration ends in the state it started from, that the host
 * memory fits the CPU budget, and that the predicted bytes are what the schedule moves. The
 * first failure is reported with its moment, op and the bytes involved. PLAN_FILE names the
 * plan in messages. The plan is not changed.
 *
 * REPORT (may be NULL) receives what check recomputed. SIM (may be NULL) receives the simulation
 * check ran for the times, with every op, transfer and memory sample, on the plan's hardware
 * profile; the caller clears it with stw_simulation_clear. Nothing is kept on failure. */
/* Errors: STW_PLAN_ERROR_MISMATCH (another trace's plan), STW_PLAN_ERROR_UNSOUND (a moment that
 * breaks a rule), STW_CHUNKS_ERROR (the layout). */
gboolean stw_plan_check(const StwPlan *plan, const StwTrace *t, const char *plan_file,
                        StwCheckReport *report, StwSimulation *sim, GError **error);

STW_END_DECLS

#endif
