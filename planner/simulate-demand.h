/* simulate-demand.h — the simulator over a demand its caller already built (evaluate.c, check):
 * stw_simulate() without building the plan's demand again.
 *
 * Internal to the library: not installed.
 */
#ifndef STW_SIMULATE_DEMAND_H
#define STW_SIMULATE_DEMAND_H

#include <stowage/simulate.h>

#include "demand.h"

G_BEGIN_DECLS

/* stw_simulate() with D, the plan's demand (stw_demand_of_plan). */
void stw_simulate_demand(const StwPlan *plan, const StwTrace *t, const StwDemand *d,
                         gboolean detail, StwSimulation *out);

/* The host memory plan P holds over T with demand D and activation moves MOVES: its chunks on
 * the host, the staging buffers, the offloaded activations at their most and the gradients the
 * loop holds there (stw_trace_host_gradient_bytes, the ranks a share each), all ranks together;
 * the bytes on the
 * storage tier into *STORAGE_OUT (may be NULL). */
guint64 stw_plan_host_bytes(const StwPlan *p, const StwTrace *t, const StwDemand *d,
                            const GArray *moves, guint64 *storage_out);

G_END_DECLS

#endif
