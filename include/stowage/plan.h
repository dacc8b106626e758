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

#include <stowage/chunks.h>
#include <stowage/hardware.h>
#include <stowage/trace.h>

#include <stowage/errors.h>
#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_PLANNER
#error "<stowage/plan.h> belongs to the planner: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

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
#define STW_PLAN_MAX_ACTIONS (1u << 24)
#define STW_PLAN_MAX_WORLD 4096
#define STW_PLAN_MAX_VALUES (1u << 24)    /* JSON values in a plan file: ~1.3 GiB parsed */

/* ---- the schedule ---------------------------------------------------------------------- */

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

/* A static string: "fetch", "evict", ... */
const char *stw_action_kind_name(StwActionKind kind);
/* Sorts by moment; within one: reduce-scatters, removals, fetches, gathers. */
void stw_actions_sort(GArray *actions);

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

/* ---- the plan ------------------------------------------------------------------------- */

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
  STW_OPTIM_CPU_STORAGE,  /* CPU Adam with the optimizer state (master, momentum, variance) on
                           * the storage tier: read for the step into host staging buffers and
                           * written back, in a pipeline (docs/algorithms.md) */
  STW_OPTIM_STORAGE,      /* CPU Adam with the whole chunk on the storage tier: its state, and
                           * its parameters' 16-bit copy, which also carries their gradients:
                           * read into a host staging buffer before each fetch to the GPU,
                           * written back behind each copy out, and read and written by the
                           * step beside the state (LoHan's and ZeRO-Infinity's offload_param) */
  STW_N_OPTIMS
} StwOptimPlace;

extern const char *const stw_optim_names[];

/* Whether chunks placed so are stepped by CPU Adam (their state off the GPU). */
static inline gboolean
stw_optim_on_cpu(guint8 place)
{
  return place == STW_OPTIM_CPU || place == STW_OPTIM_CPU_STORAGE || place == STW_OPTIM_STORAGE;
}

/* Whether chunks placed so keep their optimizer state on the storage tier. */
static inline gboolean
stw_optim_state_stored(guint8 place)
{
  return place == STW_OPTIM_CPU_STORAGE || place == STW_OPTIM_STORAGE;
}

/* Whether CPU Adam steps chunk CH of layout C, placed PLACE (on several ranks, its group's
 * first's), in its compute copy's host buffer: the runtime keeps an fp32 chunk's weights there,
 * no master of their own, when the chunk is trained and stepped in host memory, wherever its
 * gradients come from (GRADIENTS: written into the chunks by backward, or the framework's,
 * copied in at the step: stw_runtime_gradient_arrives). Such a step touches 28 bytes an element
 * in fp32, the master apart 32 (cost.h). */
static inline gboolean
stw_adam_steps_in_copy(const StwChunking *c, guint32 ch, guint8 place)
{
  return c->dtype == STW_DTYPE_FP32 && place == STW_OPTIM_CPU &&
         !stw_chunking_chunk(c, ch)->frozen;
}

/* Whether the gradients of chunk CH of layout C, placed PLACE, cross from the device to the host
 * at its optimizer step: the framework's own tensors (GRADIENTS: PyTorch's .grad, on the device
 * from backward on), which the step copies into the chunk's host memory where CPU Adam steps
 * it (stowage.torch.wrap does). Gradients written into the chunks go out with the chunks'
 * evictions instead, which the schedule holds. */
static inline gboolean
stw_gradients_cross_at_step(const StwChunking *c, guint32 ch, guint8 place,
                            StwGradients gradients)
{
  return gradients == STW_GRADIENTS_FRAMEWORK && stw_optim_on_cpu(place) &&
         !stw_chunking_chunk(c, ch)->frozen;
}

typedef struct {
  guint64 gpu_bytes;       /* GPU memory the plan may use: chunks + non-model + reserve */
  guint64 cpu_bytes;       /* host memory for chunks */
  guint64 reserved_bytes;  /* kept free on the GPU at every moment */
  guint64 storage_bytes;   /* the storage tier's for optimizer state (0: no storage tier) */
  guint64 pinned_bytes;    /* host memory that may be pinned (page-locked) for the copies, all
                            * GPUs together: what the copies touch beyond it is copied at the
                            * profile's pageable speed (0: as much as they need) */
} StwBudgets;

typedef struct {
  guint64 h2d_bytes, d2h_bytes;  /* per iteration, steady state */
  guint64 peak_gpu_bytes;        /* chunks + non-model peak, at the worst op */
  guint32 peak_op;
  guint64 cpu_bytes;             /* host memory the chunks and offloaded activations need */
  guint64 compute_ns;            /* the compute stream's busy time (fwd, bwd, GPU Adam) */
  guint64 stall_ns;              /* the compute stream waiting for chunks or memory */
  guint64 cpu_adam_ns;           /* the CPU's busy time */
  guint64 h2d_ns, d2h_ns;        /* the copy engines' busy time */
  guint64 cost_ns;               /* simulated steady-state iteration time (simulate.h) */
  guint64 lower_bound_bytes;     /* no schedule of this layout and placement moves less */
  guint64 comm_bytes;            /* received by this rank in collectives */
  guint64 comm_ns;               /* the collectives' busy time */
  guint64 host_overhead_bytes;   /* host memory beside the chunks: every rank's process (its CUDA
                                  * context, framework, allocator slack: stw_process_bytes);
                                  * cpu_bytes plus this must fit the host budget */
  guint64 storage_bytes;         /* optimizer state on the storage tier (cpu_bytes holds its
                                  * staging buffers instead) */
  guint64 storage_ns;            /* the storage's busy time reading and writing it */
  guint32 cost_model;            /* the cost model that made the times (STW_COST_MODEL); 0 in a
                                  * plan that does not say */
} StwPlanPredictions;

/* The version of the cost model (the simulator, cost.h and the host overhead): a plan's time
 * predictions are checked against a new simulation only when they were made by this one.
 * 1: the first; 2: PCIe shared behind a switch and capped by host memory, hierarchical
 * collectives, CPU Adam shared by a node's ranks, devices that compute on the host, and the host
 * overhead per rank; 3: the storage tier's drives shared by a node's ranks and, staged, capped
 * by host memory, and a request behind one the other way at the profile's mixed figure; 4: CPU
 * Adam's rate scaled by the bytes each chunk's step moves against the profile's measured step
 * (28 bytes; an fp32 chunk whose master is apart from its copy 32, stepped in the copy 28); 5: a
 * framework's gradients copied from the device to the host before CPU Adam steps them; 6: CPU
 * Adam's rate one rank's, a node's ranks stepping their own chunks at once within the host's
 * memory bandwidth (bytes read and written a second; an emulated device's copy counts its bytes
 * twice there), and a ring among more GPUs than one socket holds at the rate between sockets;
 * 7: parameters on storage copied through two buffers, a fetch or copy out waiting (the compute
 * behind it) while both are in use, a storage request behind one the other way slowed as the
 * mixed figure is slower than the two curves (never sped up), and staged requests paying the
 * runtime's checksum at cpu.checksum_bytes_per_s; 8: the op after an optimizer op waits for its
 * CPU Adam (the thread that steps issues the next op), where the compute stream went on, the next
 * iteration's forward overlapping the step. */
#define STW_COST_MODEL 8

/* One prediction, by name: every field but cost_model, in the file's order. */
typedef struct {
  const char *name;  /* "h2d_bytes", ... as in the plan file */
  guint64 value;
  gboolean time;     /* made by the cost model: checked only against the same one */
  gboolean multi;    /* written only for several ranks */
} StwPrediction;

#define STW_N_PREDICTIONS 17

/* P's predictions as named values into OUT. */
void stw_plan_predictions_list(const StwPlanPredictions *p,
                               StwPrediction out[STW_N_PREDICTIONS]);


/* How a plan times the ops of a trace measured on another device than its profile's (a CPU's
 * op times planned on a GPU: stw_retiming): each forward and backward op the profile's launch,
 * OP_OVERHEAD_NS, plus its measured time times SCALE, the iteration's FLOPs at the profile's
 * matmul rate over the time the trace measured for them; each optimizer op stepped on the GPU
 * from the bytes it reads and writes at the profile's memory bandwidth. SCALE 0: the trace's
 * times as recorded (its own device's, or kept as measured: `--measured-times`). */
typedef struct {
  double scale;
  guint64 op_overhead_ns;
} StwRetiming;

#define STW_RETIMING_MAX_OVERHEAD_NS 1000000000ull /* a second a launch: no profile's */

typedef struct {
  char *trace_digest;        /* the trace the plan was made for, as recorded */
  char *trace_file;          /* informational */
  guint32 trace_ops;         /* the ops the schedule runs over: the trace's, with RECOMPUTE's */
  GArray *recompute;         /* guint32, ascending: the trace's blocks recomputed in backward */
  GArray *offload;           /* guint32, ascending: the trace's blocks offloaded to the host;
                              * with RECOMPUTE, the blocks' choices (stw_trace_decide): the
                              * schedule runs over that trace (its ops, moments and memory);
                              * both empty: the trace as recorded */
  GArray *moves;             /* StwActivationMove: the offloaded blocks' copies, in the moments
                              * of that trace (stw_trace_activation_moves), as the file says */
  StwPolicy policy;
  StwBudgets budgets;
  StwHardware hw;
  StwChunking *chunking;
  guint8 *optim;             /* per chunk: StwOptimPlace */
  StwSchedule schedule;      /* over items; moments 0 .. trace_ops */
  StwPlanPredictions pred;
  StwRetiming retiming;      /* the trace's op times re-timed for HW, or as recorded */
} StwPlan;

/* The engines a plan's iteration keeps busy; what bounds it is the busiest (stw_plan_bound). */
typedef enum {
  STW_BOUND_COMPUTE,
  STW_BOUND_H2D,
  STW_BOUND_D2H,
  STW_BOUND_CPU_ADAM,
  STW_BOUND_STORAGE,
  STW_BOUND_COLLECTIVES,
  STW_N_BOUNDS
} StwBound;

extern const char *const stw_bound_names[]; /* "compute", "h2d", ...: NULL-terminated */
extern const char *const stw_bound_words[]; /* "compute", "host-to-device copies (PCIe)", ... */

/* The busiest engine of PLAN's predicted iteration (the collectives counted with several
 * ranks); its busy time in *BUSY_NS (may be NULL). */
StwBound stw_plan_bound(const StwPlan *plan, guint64 *busy_ns);

/* The resident memory a rank's process reaches replaying PLAN where its profile's device is
 * emulated in host memory (compute_on_host: the host backend): the device's peak, and the rank's
 * share of the chunks' host memory and of the processes' own; 0 where the device is not host
 * memory (there the process's memory is `host` alone, stw_cli_host_figure). */
guint64 stw_plan_rank_rss(const StwPlan *plan);

/* The trace P's schedule runs over, for T, the trace P was made for: T itself when P decides
 * no block, or when T is that trace already (its blocks decided as P's); else T with P's blocks
 * decided (stw_trace_decide); and then, where T's loop holds buffers of its own beside the model
 * (DeepSpeed's step: stw_trace_with_loop_buffers), with those of P's ranks. A trace made so is
 * left in *OWNED for the caller to free. NULL with ERROR
 * (STW_PLAN_ERROR_MISMATCH) when T lacks the blocks P decides, they cannot be decided, or T
 * decides them otherwise. */
const StwTrace *stw_plan_trace(const StwPlan *p, const StwTrace *t, StwTrace **owned,
                               GError **error);

/* The block choices of P (StwBlockChoice) for a trace of N_BLOCKS blocks: a new array of
 * MAX(N_BLOCKS, 1), the caller's; NULL with ERROR (STW_PLAN_ERROR_MISMATCH, naming the plan's
 * member) when P names a block the trace lacks or decides a block twice. */
guint8 *stw_plan_block_choices(const StwPlan *p, guint32 n_blocks, GError **error);

/* An empty plan (never NULL); the caller frees it with stw_plan_free, which frees its layout,
 * placement and schedule too. */
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

/* The budget's room for chunks and non-model memory together: the GPU budget less the reserve
 * (0 when the reserve takes it all). */
static inline guint64
stw_budgets_usable(const StwBudgets *b)
{
  return b->gpu_bytes - MIN(b->gpu_bytes, b->reserved_bytes);
}

/* The part of a GPU budget B that the process's own memory on HW's GPU takes (its CUDA context,
 * the libraries' workspaces: hw->gpu_process_bytes): what B asks beyond the device's memory less
 * the process's, the device the budget's own size where the budget is larger (planned beyond
 * the device). A budget that leaves the process its room costs nothing: `--gpu 9GiB` on an 80
 * GiB card plans 9 GiB. */
static inline guint64
stw_budgets_process_share(const StwBudgets *b, const StwHardware *hw)
{
  guint64 device = MAX(hw->gpu_memory_bytes, b->gpu_bytes);
  guint64 room = device - MIN(device, hw->gpu_process_bytes);
  return b->gpu_bytes > room ? b->gpu_bytes - room : 0;
}

/* B with the process's share (stw_budgets_process_share) kept free as its reserve is: the
 * reserve at least that. The planner plans every budget so, and the plan records it in its
 * reserve, which check and simulate hold it to. */
static inline void
stw_budgets_on_device(StwBudgets *b, const StwHardware *hw)
{
  b->reserved_bytes = MAX(b->reserved_bytes, stw_budgets_process_share(b, hw));
}

/* The non-model memory chunks must leave room for during op K: its peak or op K+1's, whichever
 * is larger (the next op's allocations may begin before this op's are released). */
guint64 stw_plan_nonmodel_at(const StwTrace *t, guint32 k);

/* GPU bytes chunks may occupy during op K: the usable budget (stw_budgets_usable) less
 * stw_plan_nonmodel_at. Returns 0 when the non-model memory alone exceeds the budget. The one
 * place the budget left for chunks is worked out. */
guint64 stw_plan_capacity(const StwTrace *t, const StwBudgets *b, guint32 k);

/* The first op whose non-model peak (with the next op's) and the reserve alone exceed the GPU
 * budget, or G_MAXUINT32 when every op leaves room; *OVER_BYTES says by how much. */
guint32 stw_plan_nonmodel_overflow(const StwTrace *t, const StwBudgets *b, guint64 *over_bytes);

/* Whether PLAN holds only what its file format can: every budget and prediction at most 2^53.
 * FALSE with ERROR (STW_PLAN_ERROR_INFEASIBLE) naming the first that does not. The planner and
 * stw_plan_save call it: nothing is written that the reader would refuse. */
gboolean stw_plan_within_limits(const StwPlan *plan, GError **error);

/* Reading and writing. Loading checks the structure; stw_plan_check (check.h) checks the plan
 * against its trace. A plan read is the caller's (stw_plan_free), NULL with ERROR naming the file
 * and the JSON path when the file is not a plan; the text written is the caller's (g_free).
 * Errors: STW_FILES_ERROR (the file), STW_JSON_ERROR (its text), STW_CHUNKS_ERROR (a layout that does not place
 * every tensor once), STW_PLAN_ERROR_INFEASIBLE (a plan beyond the format's limits). */
StwPlan *stw_plan_load(const char *file, GError **error);
StwPlan *stw_plan_parse(const char *file, const char *text, gsize len, GError **error);
char *stw_plan_to_string(const StwPlan *plan, const StwTrace *t);
gboolean stw_plan_save(const StwPlan *plan, const StwTrace *t, const char *file,
                       GError **error);

STW_END_DECLS

#endif
