/* schedule.h — when each chunk moves: the scheduling engine and its replay.
 *
 * The engine turns a demand (demand.h: per op, the items that must and must not be on the GPU,
 * those it dirties, the bytes chunks may occupy) into a schedule (plan.h): actions at moments
 * (the boundary before each step; moment n_steps is the end of the iteration): fetch (H2D),
 * evict (D2H, then free) and drop (free a clean chunk whose CPU copy is valid). Replay executes
 * actions abstractly and reports the first violation; it is what `stowage check` runs, so it
 * trusts nothing the engine did.
 *
 * Within a moment, removals happen before fetches; a chunk being fetched occupies its bytes from
 * the moment its fetch is issued.
 *
 * Internal to the library: not installed.
 */
#ifndef STW_SCHEDULE_H
#define STW_SCHEDULE_H

#include <glib.h>

#include <stowage/plan.h>

#include "demand.h"

G_BEGIN_DECLS

typedef enum {
  STW_EVICT_FARTHEST,       /* Belady: the chunk needed farthest in the future */
  STW_EVICT_FARTHEST_CLEAN, /* Belady, and among equally far chunks the one free to remove */
  STW_EVICT_LRU,            /* the least recently used chunk (online, no future knowledge) */
} StwEvictRule;

typedef struct {
  StwEvictRule rule;
  gboolean release_after_use; /* at each step using chunks, remove every other (ZeRO-3) */
  const guint8 *pinned;       /* per item, may be NULL: resident throughout, never removed */
} StwEngineOptions;

/* Runs the engine once over D from the given state (NULL: nothing resident, all clean; pinned
 * items start resident and dirty). The schedule's state at moment 0 is that state. */
gboolean stw_schedule_run(const StwDemand *d, const guint8 *resident, const guint8 *dirty,
                          const StwEngineOptions *opt, StwSchedule *out);

/* The steady state of a training loop: the engine runs two iterations from a cold start; the
 * second is kept, starting from the state the first left, and actions at the end restore that
 * state for the next iteration. */
gboolean stw_schedule_steady(const StwDemand *d, const StwEngineOptions *opt, StwSchedule *out);

/* Moves fetches earlier, as early as free capacity allows (never before the chunk's previous
 * removal, never more than MAX_AHEAD_BYTES of fetched-ahead chunks waiting at any moment),
 * treating the end-of-iteration fetches as cyclic prefetches into the iteration's tail. The
 * fetches of the items UNBOUNDED marks (may be NULL) neither count against that distance nor
 * are held by it, only by capacity: a rank's own chunks coming back after CPU Adam, where the
 * distance is the prefetch bucket of the others' gathers. */
void stw_schedule_hoist(const StwDemand *d, StwSchedule *s, guint64 max_ahead_bytes,
                        const guint8 *unbounded);
/* Moves each eviction (a dirty item's write-back) to the moment after the item's last need,
 * write or fetch before it (never before a reduce-scatter it waits for), so the copy overlaps
 * the steps in between instead of holding up the step that forbids the item: gradients that CPU
 * Adam steps leave as backward goes on. Removing earlier never raises occupancy; the bytes moved
 * are the same. */
void stw_schedule_write_back_early(const StwDemand *d, StwSchedule *s);

/* ---- replay --------------------------------------------------------------------------- */

typedef enum {
  STW_REPLAY_OK,
  STW_REPLAY_FETCH_RESIDENT,   /* fetch of a chunk already on the GPU */
  STW_REPLAY_REMOVE_ABSENT,    /* evict or drop of a chunk not on the GPU */
  STW_REPLAY_DROP_DIRTY,       /* drop of a chunk whose only valid copy is on the GPU */
  STW_REPLAY_NOT_RESIDENT,     /* a step finds a chunk it needs missing */
  STW_REPLAY_FORBIDDEN,        /* a step finds a chunk resident that must be on the CPU */
  STW_REPLAY_OVER_CAPACITY,    /* chunks exceed the capacity of a step */
  STW_REPLAY_END_STATE,        /* the end state differs from the start state */
} StwReplayFailure;

typedef struct {
  StwReplayFailure failure;
  guint32 moment;             /* where it failed */
  guint32 item;
  guint64 resident_bytes;     /* OVER_CAPACITY: chunk bytes during the step */
  guint64 h2d_bytes, d2h_bytes;
  guint64 *occupancy;         /* per step: chunk bytes resident during it */
  guint32 *removed_at;        /* scratch */
} StwReplay;

/* Executes S over D and checks every step; CYCLIC also requires the end state to equal the
 * start state (dirty only where the start was dirty). */
gboolean stw_schedule_replay(const StwDemand *d, const StwSchedule *s, gboolean cyclic,
                             StwReplay *out);
void stw_replay_clear(StwReplay *r);

/* Lower bound on the bytes any schedule must move for D in steady state (see docs/algorithms.md):
 * fetches of Belady with free evictions, plus the write-backs forced by forbidden steps. */
guint64 stw_schedule_lower_bound(const StwDemand *d, const guint8 *pinned);

G_END_DECLS

#endif
