/* demand.h — what each op of an iteration needs of the chunks: the one derivation of it.
 *
 * A demand is a sequence of steps (one per op), each listing the items (chunks of one list, and
 * with several ranks the gathered rest of a chunk group; plan.h) that must be on the GPU during
 * it, those that must not be (the chunks a CPU Adam step reads must be on the CPU), those it
 * leaves dirty (no valid CPU copy), and the bytes chunks may occupy during it. It is built once
 * per candidate plan from the trace, the layout, the optimizer placement and the capacities, and
 * every stage that evaluates the plan reads the same one: the scheduling engine (schedule.h), the
 * predictions and the simulator (evaluate.h, simulate.h), `check`, and the runtime's replay, which
 * looks an op's chunks up here instead of deriving them again. The runtime's profile mode, which
 * has no trace to build from, derives each op's items with stw_demand_op_items, the function the
 * builder itself uses.
 *
 * Internal to the library: not installed.
 */
#ifndef STW_DEMAND_H
#define STW_DEMAND_H

#include <glib.h>

#include <stowage/plan.h>
#include <stowage/trace.h>

G_BEGIN_DECLS

typedef struct StwDemandBuild StwDemandBuild;

typedef struct {
  guint32 n_items;       /* chunk items: list * n_chunks + chunk, then the groups */
  guint64 *bytes;        /* per item */
  guint32 n_steps;
  guint32 *need_start;   /* n_steps + 1 offsets into need */
  guint32 *need;         /* items that must be resident during a step, each once */
  guint32 *forbid_start;
  guint32 *forbid;       /* items that must not be resident during a step */
  guint32 *write_start;
  guint32 *write;        /* items a step leaves dirty (no valid CPU copy) */
  guint64 *capacity;     /* per step: bytes chunks may occupy */
  StwDemandBuild *build; /* while steps are being added; NULL once finished */
} StwDemand;

/* Building by hand (the tests, stw_demand_repeat): an empty demand over N_ITEMS items of BYTES
 * each (copied), then steps, then stw_demand_finish; read-only afterwards. */
StwDemand *stw_demand_new(guint32 n_items, const guint64 *bytes);
void stw_demand_free(StwDemand *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwDemand, stw_demand_free)
/* Opens the next step with CAPACITY bytes for chunks. */
void stw_demand_step(StwDemand *d, guint64 capacity);
void stw_demand_need(StwDemand *d, guint32 item);   /* repeated items are kept once */
void stw_demand_forbid(StwDemand *d, guint32 item);
void stw_demand_write(StwDemand *d, guint32 item);
void stw_demand_finish(StwDemand *d);
/* The demand of ITERATIONS consecutive runs of D (a new demand, the caller's). */
StwDemand *stw_demand_repeat(const StwDemand *d, guint32 iterations);

/* The items of step K of D. */
static inline guint32
stw_demand_n_need(const StwDemand *d, guint32 k)
{
  return d->need_start[k + 1] - d->need_start[k];
}

/* What one op asks of one rank's chunks, as three lists of items (an item may repeat):
 * NEED resident, FORBID resident (a CPU Adam step reads the host copies), WRITE left dirty. */
typedef struct {
  GArray *need, *forbid, *write; /* guint32 items */
} StwOpItems;

void stw_op_items_init(StwOpItems *x);
void stw_op_items_clear(StwOpItems *x);

/* The items op STAGE over tensors PARAMS (read) and GRADS (gradients written) asks for, under
 * layout C and optimizer placement OPTIM (per chunk, StwOptimPlace): forward and backward ops
 * need their parameters' chunks (with several ranks, the rank's own chunk of each group and the
 * gathered rest) and, when GRADIENTS are the chunks', dirty those they write gradients into (the
 * framework's gradients touch no chunk until the optimizer op); an optimizer op needs the four
 * lists of each chunk it steps on the GPU and dirties them, and forbids those stepped by CPU
 * Adam. Appends to OUT (cleared first). */
void stw_demand_op_items(const StwChunking *c, const guint8 *optim, StwGradients gradients,
                         StwStage stage, const guint32 *params, guint32 n_params,
                         const guint32 *grads, guint32 n_grads, StwOpItems *out);

/* The demand of trace T under layout C and placement OPTIM, with CAPACITY[k] bytes for chunks
 * during op k (n_ops values; NULL: the plan capacity of BUDGETS, stw_plan_capacity). A policy may
 * HOLD items (per item, NULL for none) resident through every forward and backward op. A new
 * demand, the caller's. */
StwDemand *stw_demand_build(const StwTrace *t, const StwChunking *c, const guint8 *optim,
                            const StwBudgets *budgets, const guint64 *capacity,
                            const guint8 *hold);

/* The demand a plan must meet: its layout and placement, its budgets' capacities, no holds. */
StwDemand *stw_demand_of_plan(const StwPlan *plan, const StwTrace *t);

/* With several ranks: the moment each group's gradients are complete, after the last backward
 * op writing any of them (G_MAXUINT32 for a group without gradients). Per group; g_free. */
guint32 *stw_demand_reduce_moments(const StwTrace *t, const StwChunking *c);

/* Host memory the chunks of schedule S under placement OPTIM need, on all the layout's ranks
 * together: every chunk that is ever off the GPU keeps a copy there (gathered items never do),
 * but what chunks keep on the storage tier (its bytes in *STORAGE_OUT): the optimizer state of
 * chunks placed STW_OPTIM_CPU_STORAGE, the state and the 16-bit parameters of STW_OPTIM_STORAGE
 * ones. Counted instead: the two staging buffers the steps read into, each of the largest such
 * chunk's stored bytes, and, with parameters stored, two more of the largest param item, which
 * its fetches are read into and its copies out written from — unless DIRECT (GPUDirect Storage:
 * they move between storage and the GPU without the host). */
guint64 stw_demand_host_bytes(const StwDemand *d, const StwChunking *c, const guint8 *optim,
                              const StwSchedule *s, gboolean direct, guint64 *storage_out);
/* Per item of schedule S (N_ITEMS of them): whether it stays on the device for good (resident at
 * the start, moved by no action): the items that need no host memory, which the host count above
 * leaves out and the runtime keeps no host copy of. The caller's (g_free). */
guint8 *stw_schedule_kept_items(const StwSchedule *s, guint32 n_items);
/* Of those, the staging buffers of the storage tier (all ranks). */
guint64 stw_demand_staging_bytes(const StwDemand *d, const StwChunking *c, const guint8 *optim,
                                 gboolean direct);

G_END_DECLS

#endif
