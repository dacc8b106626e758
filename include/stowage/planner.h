/* planner.h — from a trace and a budget to a plan, by policy.
 *
 * The `stowage` policy searches chunk sizes and optimizer placements and keeps the plan with
 * the lowest predicted cost (stw_plan_predict); the other policies reproduce what PatrickStar,
 * DeepSpeed ZeRO-Offload and ZeRO-Infinity, Colossal-AI Gemini's static placement and a plain
 * LRU cache would do, on the same engine, so that every comparison is like for like. A policy
 * that cannot fit the budget fails with the op where it falls short and by how many bytes.
 * docs/algorithms.md explains every choice.
 */
#ifndef STW_PLANNER_H
#define STW_PLANNER_H

#include <glib.h>

#include <stowage/plan.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_PLANNER
#error "<stowage/planner.h> belongs to the planner: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

typedef void (*StwProgressFunc)(guint done, guint total, gpointer user_data);

typedef enum {
  STW_OBJECTIVE_TIME,  /* the lowest predicted iteration time; ties: fewer bytes */
  STW_OBJECTIVE_BYTES, /* the fewest bytes moved; ties: lower time */
} StwObjective;

extern const char *const stw_objective_names[]; /* NULL-terminated, in enum order */

/* What the stowage policy does with the blocks' activations (the trace's blocks). */
typedef enum {
  STW_ACTIVATIONS_KEEP,      /* as recorded: every block keeps what it keeps */
  STW_ACTIVATIONS_RECOMPUTE, /* every block recomputed in backward (stw_trace_decide) */
  STW_ACTIVATIONS_OFFLOAD,   /* every block's activations offloaded to the host */
  STW_ACTIVATIONS_AUTO,      /* per block, the best found (stw_planner_plan) */
} StwActivations;

extern const char *const stw_activations_names[]; /* NULL-terminated, in enum order */

/* How several ranks share the chunks (stw_chunking_set_world, stw_chunking_pack_shards). */
typedef enum {
  STW_LAYOUT_GROUPS, /* PatrickStar's: groups of whole chunks, one a rank, gathered together */
  STW_LAYOUT_SHARDS, /* ZeRO-3's and Gemini's: every chunk split across the ranks, gathered
                      * alone */
  STW_LAYOUT_POLICY, /* each policy's system's own (stw_planner_layout): shards for the ZeRO-3
                      * and Gemini emulations, groups for the others */
} StwLayout;

extern const char *const stw_layout_names[]; /* NULL-terminated, in enum order */

typedef struct {
  StwPolicy policy;
  StwObjective objective;        /* what the stowage policy's search minimizes */
  StwActivations activations;    /* the stowage policy's blocks: kept (default), recomputed, or
                                  * chosen; a trace without blocks to decide keeps them */
  StwBudgets budgets;
  StwHardware hw;
  guint64 chunk_size_elems;      /* 0: search (stowage), or the smallest that fits */
  gboolean allow_oversized;      /* tensors above the chunk size get a chunk of their own */
  double gemini_fraction;        /* gemini-static: share of chunks kept on the GPU; < 0: auto */
  double margin_share;           /* patrickstar: share of its margin space optimizer state may
                                  * take (Gemini's gpu_margin_mem_ratio); 1: all (PatrickStar) */
  guint64 prefetch_bucket_elems; /* zero-infinity, zero-offload at stage 3: elements fetched
                                  * ahead at most */
  guint64 zero_stage;            /* zero-offload: DeepSpeed's ZeRO stage, 2 (the default: every
                                  * rank holds the whole 16-bit model) or 3 (its own shard, the
                                  * others' gathered for each use and released after) */
  guint32 world_size;            /* data-parallel GPUs; 0: the trace's world size */
  guint32 nodes;                 /* the nodes they are spread over, evenly; 0: one */
  StwLayout layout;              /* how several ranks share the chunks (default groups, the
                                  * layout train replays; stw_planner_layout); in shards the
                                  * chunk size is a whole chunk's, each rank's shard of it
                                  * 1/world */
  int state_dtype;               /* Adam's moments in the plan's layout: STW_DTYPE_FP32 or
                                  * STW_DTYPE_BF16; -1 (the default): the trace's */
  gboolean measured_times;       /* a trace measured on another device than HW's keeps the op
                                  * times measured there (default FALSE: re-timed for HW where
                                  * it can be, stw_retiming) */
  StwRetiming retiming;          /* set by stw_planner_on_device: how the plans time the
                                  * trace's ops */
  StwProgressFunc progress;
  gpointer progress_data;
} StwPlannerOptions;

/* Defaults: policy stowage, chunk-size search, auto fraction, a 5e7-element prefetch bucket. */
void stw_planner_options_init(StwPlannerOptions *o, const StwHardware *hw);

/* The best plan of T under O, the caller's (stw_plan_free); NULL with ERROR (STW_PLAN_ERROR) when
 * no plan of the policy fits, saying where it falls short and by how much. TRACE_FILE is recorded
 * in the plan for people; the digest is what binds it. With O's activations recompute, offload
 * or auto (and a trace whose blocks can be decided: stw_planner_decides_blocks), the plan may
 * recompute or offload blocks (its recompute and offload lists): its schedule then runs over
 * stw_plan_trace(plan, T). O's GPU budget is planned as the device leaves it
 * (stw_planner_on_device). */
StwPlan *stw_planner_plan(const StwTrace *t, const char *trace_file, const StwPlannerOptions *o,
                          GError **error);

/* The plan of T under O with its blocks decided as CHOICE says (StwBlockChoice per block of T;
 * all KEEP: T as recorded), O's activations aside; as stw_planner_plan otherwise. */
StwPlan *stw_planner_plan_blocks(const StwTrace *t, const guint8 *choice, const char *trace_file,
                                 const StwPlannerOptions *o, GError **error);

/* Whether T's blocks' activations can be decided: it has blocks, keeps them all (no
 * checkpointing, none decided by a plan) and runs one micro-step. */
gboolean stw_planner_decides_blocks(const StwTrace *t);

/* The chunk sizes the search tries, ascending (docs/algorithms.md): a new array of guint64, the
 * caller's. */
GArray *stw_planner_chunk_sizes(const StwTrace *t);

StwPolicy stw_policy_from_name(const char *name); /* STW_N_POLICIES when unknown */

/* O with its GPU budget as the device leaves it to T's process: O's profile's process memory the
 * one T measured where measured on that device (stw_gpu_process_bytes), and that much of the card
 * kept free as the reserve keeps its bytes (stw_budgets_on_device). The planner plans every
 * budget so, and the plan's profile carries the figure, which check holds it to. And how T's
 * ops are timed there (O's retiming: stw_retiming, unless O keeps the times measured). */
void stw_planner_on_device(StwPlannerOptions *o, const StwTrace *t);
/* What of O's GPU budget the process on its device holds outside its tensors (as
 * stw_planner_on_device keeps it free: T's measured figure or O's profile's), in one line for
 * people, the planner's errors and `plan`'s and `compare`'s output alike; NULL where the budget
 * leaves the process its room. The caller frees it. */
char *stw_planner_process_said(const StwTrace *t, const StwPlannerOptions *o);

/* The data-parallel ranks a plan of T with O is for: O's world_size, else the trace's. */
guint32 stw_planner_world(const StwTrace *t, const StwPlannerOptions *o);

/* The layout a plan of O's policy takes on WORLD ranks: groups on one rank; O's layout where it
 * names one; with STW_LAYOUT_POLICY the policy's system's own: shards for DeepSpeed ZeRO-3's
 * (zero-infinity, zero-offload at stage 3) and Gemini's (gemini-static), which split every
 * parameter or chunk across the ranks, groups for PatrickStar's, stowage's and lru's (ZeRO-2's
 * ranks each hold the whole 16-bit model, gathering nothing: groups too). */
StwLayout stw_planner_layout(const StwPlannerOptions *o, guint32 world);

/* The host memory T's loop holds at start-up on the ranks of a plan of T with O, where each
 * rank builds its whole model on the host before it is chunked (model.init host: its tensors in
 * their dtype; host-fp32: 4 bytes an element): a rank's model and its process
 * (stw_process_bytes), times the ranks; 0 where the loop builds it straight into its chunks or
 * shards (sharded). *RANK_MODEL, when not NULL: a rank's model bytes. The planner holds it to
 * O's host budget before it plans (no policy fits a budget below it). */
guint64 stw_planner_startup_host_bytes(const StwTrace *t, const StwPlannerOptions *o,
                                       guint64 *rank_model);

/* Whether POLICY at ZeRO stage ZERO_STAGE emulates a system that splits every chunk across the
 * ranks (what STW_LAYOUT_POLICY plans in shards). */
gboolean stw_policy_splits_chunks(StwPolicy policy, guint64 zero_stage);

/* Whether WORLD ranks on NODES nodes of HW can run: the nodes share the ranks evenly, a node holds
 * that many GPUs, and the links their collectives need exist. FALSE with ERROR
 * (STW_PLAN_ERROR_INVALID) saying which does not hold. */
gboolean stw_planner_check_topology(const StwHardware *hw, guint32 world, guint32 nodes,
                                    GError **error);

STW_END_DECLS

#endif
