/* plan.h — a plan: chunk layout, optimizer placement and the schedule of one iteration.
 *
 * The file format is docs/plan-format.md; this module is its only reader and writer. A plan is
 * tied to one trace by the trace's digest. Items are chunks of one list: item = list * n_chunks
 * + chunk (stw_plan_item). Moment k is the boundary before op k; moment n_ops is the end of the
 * iteration, where the actions that restore the start state for the next iteration happen.
 *
 * With several data-parallel ranks (the layout's world, chunks.h) a plan describes rank 0, and
 * every rank r runs the same schedule with chunk r of each group in place of chunk 0. Rank 0
 * keeps the four lists of the chunks it owns only; the other chunks of group g reach it as one
 * more item, "group:g" (item STW_N_LISTS * n_chunks + g), which an all-gather fills beside its
 * own chunk and which is dropped, never written back. docs/algorithms.md has the model.
 */
#ifndef STW_PLAN_H
#define STW_PLAN_H

#include <glib.h>

#include "chunks.h"
#include "hardware.h"
#include "schedule.h"
#include "trace.h"

G_BEGIN_DECLS

#define STW_PLAN_ERROR (stw_plan_error_quark())
GQuark stw_plan_error_quark(void);

typedef enum {
  STW_PLAN_ERROR_INFEASIBLE, /* no plan fits the budget */
  STW_PLAN_ERROR_MISMATCH,   /* the plan was made for another trace */
  STW_PLAN_ERROR_UNSOUND,    /* check found a violation */
  STW_PLAN_ERROR_INVALID,    /* bad options */
} StwPlanError;

#define STW_PLAN_FORMAT "stowage-plan"
#define STW_PLAN_VERSION 1
#define STW_PLAN_MAX_FILE_BYTES (G_GUINT64_CONSTANT(1) << 30)
#define STW_PLAN_MAX_CHUNKS (1u << 20)
#define STW_PLAN_MAX_ACTIONS (1u << 26)
#define STW_PLAN_MAX_WORLD 4096

typedef enum {
  STW_POLICY_STOWAGE,       /* offline schedule, chunk size and optimizer placement by cost */
  STW_POLICY_PATRICKSTAR,   /* PatrickStar: farthest-next-use, 80% usable, 2 spare chunks */
  STW_POLICY_ZERO_OFFLOAD,  /* DeepSpeed ZeRO-Offload: params on GPU, CPU Adam */
  STW_POLICY_ZERO_INFINITY, /* DeepSpeed ZeRO-Infinity: params on CPU, prefetch bucket */
  STW_POLICY_GEMINI_STATIC, /* Colossal-AI Gemini, static: a fraction of chunks on GPU */
  STW_POLICY_LRU,           /* on demand, least recently used out */
  STW_N_POLICIES
} StwPolicy;

extern const char *const stw_policy_names[]; /* NULL-terminated, in enum order */

typedef enum {
  STW_OPTIM_CPU,          /* CPU Adam: gradients to the CPU, updated parameters back */
  STW_OPTIM_GPU,          /* GPU Adam in margin space: state fetched for the step, written back */
  STW_OPTIM_GPU_RESIDENT, /* GPU Adam with the optimizer state on the GPU all iteration */
  STW_N_OPTIMS
} StwOptimPlace;

extern const char *const stw_optim_names[];

typedef struct {
  guint64 gpu_bytes;       /* GPU memory the plan may use: chunks + non-model + reserve */
  guint64 cpu_bytes;       /* host memory for chunks */
  guint64 reserved_bytes;  /* kept free on the GPU at every moment */
} StwBudgets;

typedef struct {
  guint64 h2d_bytes, d2h_bytes;  /* per iteration, steady state */
  guint64 peak_gpu_bytes;        /* chunks + non-model peak, at the worst op */
  guint32 peak_op;
  guint64 cpu_bytes;             /* host memory the chunks need */
  guint64 compute_ns;            /* the compute stream's busy time (fwd, bwd, GPU Adam) */
  guint64 stall_ns;              /* the compute stream waiting for chunks or memory */
  guint64 cpu_adam_ns;           /* the CPU's busy time */
  guint64 h2d_ns, d2h_ns;        /* the copy engines' busy time */
  guint64 cost_ns;               /* simulated steady-state iteration time (simulate.h) */
  guint64 lower_bound_bytes;     /* no schedule of this layout and placement moves less */
  guint64 comm_bytes;            /* received by this rank in collectives */
  guint64 comm_ns;               /* the collectives' busy time */
} StwPlanPredictions;

typedef struct {
  char *trace_digest;
  char *trace_file;          /* informational */
  guint32 trace_ops;
  StwPolicy policy;
  StwBudgets budgets;
  StwHardware hw;
  StwChunking *chunking;
  guint8 *optim;             /* per chunk: StwOptimPlace */
  StwSchedule schedule;      /* over items; moments 0 .. trace_ops */
  StwPlanPredictions pred;
} StwPlan;

StwPlan *stw_plan_new(void);
void stw_plan_free(StwPlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwPlan, stw_plan_free)

static inline guint32
stw_plan_item(const StwChunking *c, StwChunkList list, guint32 chunk)
{
  return (guint32)list * stw_chunking_count(c) + chunk;
}
/* Items of a layout: the lists' chunks, then one gathered item per group. */
static inline guint32
stw_plan_n_items(const StwChunking *c)
{
  return STW_N_LISTS * stw_chunking_count(c) + stw_chunking_groups(c);
}
static inline guint32
stw_plan_group_item(const StwChunking *c, guint32 group)
{
  return STW_N_LISTS * stw_chunking_count(c) + group;
}
/* The group of a gathered item, or G_MAXUINT32 for a chunk of a list. */
static inline guint32
stw_plan_item_group(const StwChunking *c, guint32 item)
{
  guint32 first = STW_N_LISTS * stw_chunking_count(c);
  return item >= first ? item - first : G_MAXUINT32;
}
/* "param:12" or "group:3" for messages and files. Free with g_free. */
char *stw_plan_item_name(const StwChunking *c, guint32 item);

/* Rank 0's own chunk of group G, in the param list: what it adds to the group's all-gather. */
static inline guint32
stw_plan_own_item(const StwChunking *c, guint32 g)
{
  return stw_plan_item(c, STW_LIST_PARAM, g * c->world);
}

/* Bytes on rank 0's GPU of group G's other chunks (the padding counted as full chunks). */
guint64 stw_plan_group_bytes(const StwChunking *c, guint32 g);

/* The largest param chunk of group G: what each step of its ring collectives moves. */
guint64 stw_plan_group_chunk_bytes(const StwChunking *c, guint32 g);

/* A ring collective (all-gather or reduce-scatter) among the layout's ranks of chunks of
 * CHUNK_BYTES: world - 1 steps of the interconnect's latency plus CHUNK_BYTES / bandwidth. */
guint64 stw_collective_ns(const StwHardware *hw, guint32 world, guint64 chunk_bytes);

/* With several ranks: the moment each group's gradients are complete, after the last backward
 * op writing any of them (G_MAXUINT32 for a group without gradients). Per group; g_free. */
guint32 *stw_plan_reduce_moments(const StwTrace *t, const StwChunking *c);

/* With several ranks, turns the engine's fetches of gathered items into gathers, each no
 * earlier than its rank's own chunk is fetched, and adds the reduce-scatters. */
void stw_plan_add_collectives(StwPlan *plan, const StwTrace *t);

/* GPU bytes chunks may occupy during op K: the budget less the reserve and the non-model peak
 * of op K and op K+1 (the next op's allocations may begin before this op's are released).
 * Returns 0 when the non-model memory alone exceeds the budget. */
guint64 stw_plan_capacity(const StwTrace *t, const StwBudgets *b, guint32 k);

/* The first op whose non-model peak (with the next op's) and the reserve alone exceed the GPU
 * budget, or G_MAXUINT32 when every op leaves room; *OVER_BYTES says by how much. */
guint32 stw_plan_nonmodel_overflow(const StwTrace *t, const StwBudgets *b, guint64 *over_bytes);

/* The demand (schedule.h) a plan must meet: chunks each op needs, forbids and dirties, with
 * CAPACITY bytes per op (NULL: stw_plan_capacity). A policy may also HOLD items (per item,
 * NULL for none) resident through every forward and backward op. */
StwDemand *stw_plan_demand(const StwTrace *t, const StwChunking *c, const guint8 *optim,
                           const StwBudgets *b, const guint64 *capacity, const guint8 *hold);

/* Host memory the chunks of PLAN need, on all its ranks together: every chunk that is ever off
 * the GPU keeps a copy there (gathered items never do). D is the plan's demand (for the chunk
 * sizes). */
guint64 stw_plan_host_bytes(const StwPlan *plan, const StwDemand *d);

/* Fills PLAN->pred from its schedule (bytes, peaks, times); LOWER_BOUND is kept. */
void stw_plan_predict(StwPlan *plan, const StwTrace *t);

/* Reading and writing. Loading checks the structure; stw_plan_check (check.h) checks the plan
 * against its trace. */
StwPlan *stw_plan_load(const char *file, GError **error);
StwPlan *stw_plan_parse(const char *file, const char *text, gsize len, GError **error);
char *stw_plan_to_string(const StwPlan *plan, const StwTrace *t);
gboolean stw_plan_save(const StwPlan *plan, const StwTrace *t, const char *file,
                       GError **error);

G_END_DECLS

#endif
