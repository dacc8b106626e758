/* op-times.h — how a prediction took a trace's op times, in its JSON record.
 *
 * Internal to the library: not installed.
 */
#ifndef STW_OP_TIMES_H
#define STW_OP_TIMES_H

#include <stowage/simulate.h>

#include "json.h"

G_BEGIN_DECLS

/* Into RECORD, where a trace was measured on another device than the profile's (MEASURED_ON,
 * stw_trace_measured_elsewhere; NULL: the profile's own, nothing said), "op_times":
 * {"measured_on": NAME, "retimed": BOOL} and, re-timed by R, its "scale" and "op_overhead_ns"
 * (the plan file's trace.op_times). */
void stw_op_times_add_json(cJSON *record, const char *measured_on, const StwRetiming *r);

G_END_DECLS

#endif
