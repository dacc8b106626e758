/* replay.h — the runtime's replay mode: a plan matched to the model it is asked to train, and
 * its actions performed at every op boundary.
 *
 * The replayer refuses a plan made for another model (the trace's digest, the tensors' names,
 * sizes and dtypes, the configuration and the world size); it owns a copy of the plan's layout and the plan's
 * demand (demand.h), from which the runtime looks up what each op needs. At each moment it
 * performs the plan's evictions, drops and fetches on the store; an action that finds its chunk
 * elsewhere than the plan says is skipped and counted as a deviation, and data is never lost (a
 * drop of a dirty chunk writes it back).
 *
 * Internal to the library: not installed.
 */
#ifndef STW_REPLAY_H
#define STW_REPLAY_H

#include <glib.h>

#include <stowage/plan.h>
#include <stowage/trace.h>

#include "demand.h"
#include "store.h"

G_BEGIN_DECLS

typedef struct StwReplayer StwReplayer;

/* A replayer of PLAN, made for PLAN_TRACE, for the model MODEL (neither copied: both must outlive
 * it). NULL with ERROR (STW_RUNTIME_ERROR_MISMATCH) when the plan does not fit the model. */
StwReplayer *stw_replayer_new(const StwPlan *plan, const StwTrace *plan_trace,
                              const StwTrace *model, GError **error);
void stw_replayer_free(StwReplayer *r);

/* The plan's layout and optimizer placement (per chunk), owned by the replayer. */
const StwChunking *stw_replayer_chunking(const StwReplayer *r);
const guint8 *stw_replayer_optim(const StwReplayer *r);
/* What op K needs, forbids and dirties: step K of the plan's demand. */
const StwDemand *stw_replayer_demand(const StwReplayer *r);
guint32 stw_replayer_n_ops(const StwReplayer *r);

/* Whether the op the model runs at MOMENT is the plan trace's op there (name, stage, tensors);
 * FALSE with ERROR (STW_RUNTIME_ERROR_MISMATCH) when not. */
gboolean stw_replayer_match(const StwReplayer *r, guint32 moment, const char *name, StwStage stage,
                            const guint32 *params, guint32 n_params, const guint32 *grads,
                            guint32 n_grads, GError **error);

/* Several ranks: what the runtime does for a plan's collectives. PERFORM runs a gather or a
 * reduce-scatter of ITEM (a group, or the own chunk it reduces into); SETTLE completes a
 * collective in flight on ITEM before another action touches it. */
typedef struct {
  gboolean (*perform)(gpointer data, StwActionKind kind, guint32 item, GError **error);
  gboolean (*settle)(gpointer data, guint32 item, GError **error);
  gpointer data;
} StwReplayCollectives;

void stw_replayer_set_collectives(StwReplayer *r, const StwReplayCollectives *c);

/* Fetches the plan's start state into S (gathers its groups) and waits for it. The items the
 * plan keeps on the device for good (resident at the start, no action moves them; not a group's)
 * lose their host copies as they land: the plan counts no host memory for them
 * (stw_store_release_host). FALSE with ERROR when a gather fails. */
gboolean stw_replayer_start(StwReplayer *r, StwStore *s, GError **error);
/* Restarts the iteration: the next actions are moment 0's. */
void stw_replayer_rewind(StwReplayer *r);
/* Performs the actions of MOMENT on S, adding to *DEVIATIONS each one that finds its chunk
 * elsewhere than the plan says. FALSE with ERROR when a fetch cannot be made. */
gboolean stw_replayer_apply(StwReplayer *r, StwStore *s, guint32 moment, guint64 *deviations,
                            GError **error);

G_END_DECLS

#endif
