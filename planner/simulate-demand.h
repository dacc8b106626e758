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

G_END_DECLS

#endif
