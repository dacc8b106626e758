/* check.h — `stowage check`: prove a plan sound for a trace without running it. */
#ifndef STW_CHECK_H
#define STW_CHECK_H

#include <glib.h>

#include "plan.h"
#include "trace.h"

G_BEGIN_DECLS

typedef struct {
  guint32 n_actions;
  guint64 h2d_bytes, d2h_bytes;  /* what the schedule moves per iteration */
  guint64 peak_gpu_bytes;        /* chunks + non-model peak */
  guint32 peak_op;
  guint64 cpu_bytes;
} StwCheckReport;

/* Checks that PLAN was made for T (digest), that its layout places every tensor once, and,
 * replaying its schedule from its start state, that every op finds its chunks on the GPU (and
 * CPU Adam's on the CPU), that chunks + non-model peak + reserve never exceed the GPU budget,
 * that no drop loses data, that the iteration ends in the state it started from, that the host
 * memory fits the CPU budget, and that the predicted bytes are what the schedule moves. The
 * first failure is reported with its moment, op and the bytes involved. PLAN_FILE names the
 * plan in messages. */
gboolean stw_plan_check(StwPlan *plan, const StwTrace *t, const char *plan_file,
                        StwCheckReport *report, GError **error);

G_END_DECLS

#endif
