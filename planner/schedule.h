/* schedule.h — when each chunk moves: the scheduling engine and its replay.
 *
 * The planner reduces a trace, a chunk layout and an optimizer placement to an StwDemand: a
 * sequence of steps (one per op), each listing the chunks ("items": one per chunk and list) that
 * must be on the GPU during it, those that must not be (the gradients a CPU Adam step reads must
 * be on the CPU), those it dirties, and the bytes available to chunks during it. The engine
 * turns a demand into actions at moments (the boundary before each step; moment n_steps is the
 * end of the iteration): fetch (H2D), evict (D2H, then free) and drop (free a clean chunk whose
 * CPU copy is valid). Replay executes actions abstractly and reports the first violation; it is
 * what `stowage check` runs, so it trusts nothing the engine did.
 *
 * Within a moment, removals happen before fetches; a chunk being fetched occupies its bytes from
 * the moment its fetch is issued.
 */
#ifndef STW_SCHEDULE_H
#define STW_SCHEDULE_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  guint32 n_items;       /* chunk items: list * n_chunks + chunk index */
  guint64 *bytes;        /* per item */
  guint32 n_steps;
  guint32 *need_start;   /* n_steps + 1 offsets into need */
  guint32 *need;         /* items that must be resident during a step, each once */
  guint32 *forbid_start;
  guint32 *forbid;       /* items that must not be resident during a step */
  guint32 *write_start;
  guint32 *write;        /* items a step leaves dirty (no valid CPU copy) */
  guint64 *capacity;     /* per step: bytes chunks may occupy */
  /* building */
  GArray *b_need, *b_forbid, *b_write, *b_cap, *b_need_start, *b_forbid_start, *b_write_start;
  guint32 *stamp;
} StwDemand;

StwDemand *stw_demand_new(guint32 n_items, const guint64 *bytes);
void stw_demand_free(StwDemand *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwDemand, stw_demand_free)
/* Opens the next step with CAPACITY bytes for chunks. */
void stw_demand_step(StwDemand *d, guint64 capacity);
void stw_demand_need(StwDemand *d, guint32 item);   /* repeated items are kept once */
void stw_demand_forbid(StwDemand *d, guint32 item);
void stw_demand_write(StwDemand *d, guint32 item);
/* Closes the last step; the demand is read-only afterwards. */
void stw_demand_finish(StwDemand *d);
/* The demand of ITERATIONS consecutive runs of D. */
StwDemand *stw_demand_repeat(const StwDemand *d, guint32 iterations);

/* The engine makes the first three. With several ranks the planner turns the fetch of a
 * gathered group into GATHER (all-gather over the interconnect, no host copy involved) and
 * adds REDUCE_SCATTER where a group's gradients are complete; replay treats a gather as a
 * fetch and a reduce-scatter as a use of its item. */
typedef enum {
  STW_ACTION_EVICT,
  STW_ACTION_DROP,
  STW_ACTION_FETCH,
  STW_ACTION_GATHER,
  STW_ACTION_REDUCE_SCATTER,
  STW_N_ACTION_KINDS
} StwActionKind;

typedef struct {
  guint32 moment;  /* 0 .. n_steps (the end) */
  guint32 item;
  guint32 kind;    /* StwActionKind */
} StwAction;

const char *stw_action_kind_name(StwActionKind kind);
/* Sorts by moment; within one: reduce-scatters, removals, fetches, gathers. */
void stw_actions_sort(GArray *actions);

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

/* A schedule: the state at moment 0, the actions, and what they move. */
typedef struct {
  guint8 *resident;   /* per item, at moment 0 */
  guint8 *dirty;      /* per item, at moment 0 */
  GArray *actions;    /* StwAction, sorted */
  guint64 h2d_bytes;
  guint64 d2h_bytes;
  /* when no schedule exists */
  gboolean feasible;
  guint32 fail_step;  /* the step that cannot fit */
  guint64 fail_need_bytes; /* what it needs resident */
} StwSchedule;

void stw_schedule_clear(StwSchedule *s);

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
 * treating the end-of-iteration fetches as cyclic prefetches into the iteration's tail. */
void stw_schedule_hoist(const StwDemand *d, StwSchedule *s, guint64 max_ahead_bytes);

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
