/* whatif.h — one question at a time: "with this policy and this budget, how fast?"
 *
 * The sweeps of `compare`, `whatif`, `minmem` and `capacity` are made of such points. Every point
 * is a full plan (chunk-size search included for the stowage policy), checked, and simulated.
 */
#ifndef STW_WHATIF_H
#define STW_WHATIF_H

#include <glib.h>

#include <stowage/planner.h>
#include <stowage/simulate.h>
#include <stowage/synth.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_PLANNER
#error "<stowage/whatif.h> belongs to the planner: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

typedef struct {
  StwPolicy policy;
  guint64 gpu_bytes;
  guint32 world_size;        /* the GPUs the plan is for */
  StwLayout layout;          /* how they share its chunks (stw_planner_layout; groups on one) */
  gboolean feasible;
  char *why;                 /* when not feasible: the planner's message */
  guint64 chunk_size_elems;
  guint64 h2d_bytes, d2h_bytes;
  guint64 comm_bytes;        /* received by a rank in collectives (several GPUs) */
  guint64 iteration_ns;      /* simulated */
  guint64 peak_gpu_bytes;
  double slowdown;           /* iteration_ns / the unlimited-memory iteration time: 1 where
                              * both are 0, INFINITY where only the latter is, NAN where it is
                              * unknown (stw_whatif_slowdown) */
  StwThroughput throughput;  /* zeros where the trace does not say its batch and sequence */
  guint32 recomputed_blocks; /* of the trace's blocks, recomputed in backward (--activations) */
  guint32 offloaded_blocks;  /* ... and offloaded to the host */
  guint64 host_bytes;        /* host memory the plan holds: chunks, staging and the process */
  guint64 storage_bytes;     /* on the storage tier (--nvme) */
  StwDtype state_dtype;      /* Adam's moments in the plan (the trace's where none was made) */
  StwBound bound;            /* what bounds the plan's iteration: its busiest engine */
} StwWhatifPoint;

void stw_whatif_point_clear(StwWhatifPoint *p);

/* An unlimited-memory time that is not known: its slowdowns are NAN. */
#define STW_WHATIF_UNKNOWN G_MAXUINT64

/* ITERATION_NS against UNLIMITED_NS, as StwWhatifPoint.slowdown says. */
double stw_whatif_slowdown(guint64 iteration_ns, guint64 unlimited_ns);

/* Plans T with BASE's options but POLICY and GPU_BYTES; UNLIMITED_NS (STW_WHATIF_UNKNOWN: not
 * known) scales the slowdown. Never fails: an infeasible point says why. */
void stw_whatif_run(const StwTrace *t, const StwPlannerOptions *base, StwPolicy policy,
                    guint64 gpu_bytes, guint64 unlimited_ns, StwWhatifPoint *out);

/* The simulated iteration time with every chunk resident, in *NS: the floor every budget is
 * measured against (0 for a trace whose ops take no time). FALSE, *NS STW_WHATIF_UNKNOWN and
 * *WHY (when not NULL; the caller frees it) the planner's message, when even that cannot be
 * planned. */
gboolean stw_whatif_unlimited(const StwTrace *t, const StwPlannerOptions *base, guint64 *ns,
                              char **why);

/* PyTorch's DistributedDataParallel on the ranks of a planning: what users run when the model
 * fits, the baseline beside the chunk policies. Every rank holds the whole model, its gradients
 * and its optimizer state on the GPU (nothing sharded, nothing offloaded), all-reduces the
 * gradients in buckets (STW_DDP_BUCKET_BYTES, the first STW_DDP_FIRST_BUCKET_BYTES) as backward
 * makes them, the last micro-step's only (no_sync before it), and steps every parameter. With
 * gradient_as_bucket_view off (PyTorch's default) the buckets are a second copy of the
 * gradients. On one GPU: plain PyTorch, everything on the GPU. */
#define STW_DDP_BUCKET_BYTES (25u << 20)      /* bucket_cap_mb = 25 */
#define STW_DDP_FIRST_BUCKET_BYTES (1u << 20) /* torch.distributed's first bucket */
typedef struct {
  guint64 gpu_bytes;
  guint32 world_size;
  gboolean feasible;        /* its peak within the budget (less the reserve) */
  char *why;                /* when not: why */
  guint64 iteration_ns;     /* simulated, every rank's */
  guint64 peak_gpu_bytes;   /* the model's data, activations and the buckets */
  guint64 bucket_bytes;     /* the gradients' copy in the buckets (0 on one GPU) */
  guint64 allreduce_ns;     /* the gradients' all-reduce, all buckets */
  guint64 exposed_ns;       /* of it, after backward's last op: what it adds to the step */
  guint64 backward_end_ns;  /* from the step's first op to backward's end, the all-reduce's
                             * tail included (DDP's backward returns once it is done) */
  guint64 comm_bytes;       /* received by a rank in the all-reduce */
  double slowdown;          /* against unlimited memory (the chunk policies' floor) */
  StwThroughput throughput;
} StwDdpPoint;

/* The DDP baseline of T on BASE's ranks, hardware and budgets at GPU_BYTES a GPU; never fails
 * (a point that cannot be planned or does not fit says why). UNLIMITED_NS as stw_whatif_run's.
 * OUT is the caller's, cleared with stw_whatif_ddp_clear. */
void stw_whatif_ddp(const StwTrace *t, const StwPlannerOptions *base, guint64 gpu_bytes,
                    guint64 unlimited_ns, StwDdpPoint *out);
void stw_whatif_ddp_clear(StwDdpPoint *p);

/* Every policy on one budget, against unlimited memory, and the DDP baseline: what `stowage
 * compare` asks. */
typedef struct {
  guint64 gpu_bytes;
  guint32 world_size;
  StwLayout layout;     /* how the GPUs share the chunks, as asked (STW_LAYOUT_POLICY: each
                         * policy's own; each point says its plan's) */
  guint64 unlimited_ns; /* STW_WHATIF_UNKNOWN where unlimited memory cannot be planned */
  char *unlimited_why;  /* and why */
  StwWhatifPoint points[STW_N_POLICIES];
  StwDdpPoint ddp;
  StwOpTimes op_times;  /* how the trace's op times were taken */
} StwComparison;

/* Plans T with BASE's options and each policy at GPU_BYTES; never fails (a point says why it
 * cannot be planned). OUT is the caller's, cleared with stw_whatif_comparison_clear. */
void stw_whatif_compare(const StwTrace *t, const StwPlannerOptions *base, guint64 gpu_bytes,
                        StwComparison *out);
void stw_whatif_comparison_clear(StwComparison *c);

/* The smallest GPU budget, to 64 MiB, whose checked and simulated plan is within a slowdown of
 * unlimited memory: what `stowage minmem` asks. */
#define STW_WHATIF_MINMEM_PRECISION (G_GUINT64_CONSTANT(64) << 20)

typedef struct {
  StwPolicy policy;
  double allowed;         /* the slowdown allowed: 0.10 for 10% */
  guint64 unlimited_ns;   /* the reference: unlimited GPU memory's time, or with HOST host
                           * memory to spare at the point's GPU budget */
  gboolean host;          /* the host budget searched (stw_whatif_minmem_host) */
  guint64 host_budget;    /* with HOST: the smallest host budget found */
  StwWhatifPoint best;    /* its plan at the smallest budget found */
  StwOpTimes op_times;    /* how the trace's op times were taken */
} StwMinmem;

/* Bisects the GPU budget for T with BASE's options (the budgets above the profile's GPU memory
 * tried only with BEYOND_DEVICE). FALSE with ERROR (STW_PLAN_ERROR_INFEASIBLE) when even
 * unlimited memory cannot be planned, or POLICY is not within ALLOWED at the largest budget.
 * OUT is the caller's, cleared with stw_whatif_minmem_clear. */
gboolean stw_whatif_minmem(const StwTrace *t, const StwPlannerOptions *base, StwPolicy policy,
                           double allowed, gboolean beyond_device, StwMinmem *out,
                           GError **error);
void stw_whatif_minmem_clear(StwMinmem *m);

/* The smallest host budget, to 64 MiB, whose plan of T at GPU_BYTES (with BASE's options, its
 * storage tier among them) is within ALLOWED of the same plan with host memory to spare: "how
 * much RAM do I need" (`minmem --host`). FALSE with ERROR (STW_PLAN_ERROR_INFEASIBLE) where
 * POLICY has no plan at GPU_BYTES even with host memory to spare. OUT as above. */
gboolean stw_whatif_minmem_host(const StwTrace *t, const StwPlannerOptions *base,
                                StwPolicy policy, double allowed, guint64 gpu_bytes,
                                StwMinmem *out, GError **error);

/* The largest model of a family whose checked plan fits, per policy: what `stowage capacity`
 * asks. A family is "gpt" (layers at a width, bisected) or one of the zoo's (its sizes in
 * order). */
typedef struct {
  StwPlannerOptions options;
  StwSynthOptions synth;  /* batch and sequence per GPU, dtype, checkpointing, attention */
  gboolean by_layers;     /* family gpt */
  guint64 width;          /* its width */
  GArray *members;        /* StwModelConfig: the zoo family's, in the zoo's order */
  GArray *policies;       /* int: StwPolicy */
  char *assumed;          /* the defaults the request took, for people ("" when none) */
  char *lora_targets;     /* synth.lora_targets' text, owned */
} StwCapacityQuery;

typedef struct {
  StwPolicy policy;
  gboolean found;
  StwModelConfig best;    /* when found */
  guint64 params;
  StwWhatifPoint point;   /* its plan */
  const char *bound_by;   /* what stopped it: "GPU memory", "host memory", "the model's size",
                           * "nothing larger tried" (static) */
} StwCapacityAnswer;

void stw_capacity_query_clear(StwCapacityQuery *q);
/* Q's answer for POLICY into OUT (the caller's, cleared with stw_capacity_answer_clear).
 * PROGRESS (may be NULL) hears of each model tried. */
void stw_capacity_run(const StwCapacityQuery *q, StwPolicy policy, StwCapacityAnswer *out,
                      void (*progress)(StwPolicy policy, const char *model, gboolean fits));
void stw_capacity_answer_clear(StwCapacityAnswer *a);
/* The record `capacity --json` prints: the hardware, GPUs, host memory, the synthesis options,
 * and per policy its largest model (null where none fits), parameters, plan and bound. */
char *stw_capacity_json(const StwCapacityQuery *q, const StwCapacityAnswer *answers, guint n);

/* A sweep's point: the batch of its trace (0: the trace does not say), the chunk size asked for
 * (0: searched), and the point. */
typedef struct {
  guint64 batch;
  guint64 chunk_size;
  StwWhatifPoint point;
} StwWhatifRow;

/* What `stowage whatif` sweeps: the traces (one loaded, or a model synthesized at each batch),
 * each trace's batch, the planner's options, the chunk sizes (0: search), budgets and policies. */
typedef struct {
  char *title;            /* the trace's file or the model's name, and the profile */
  GPtrArray *traces;      /* StwTrace*, owned */
  GArray *batches;        /* guint64, one per trace */
  GArray *sizes;          /* guint64 */
  GArray *budgets;        /* guint64 */
  GArray *policies;       /* int: StwPolicy */
  GArray *states;         /* int: Adam's moments (StwPlannerOptions.state_dtype; -1: the trace's) */
  StwPlannerOptions options;
} StwWhatifSweep;

void stw_whatif_sweep_clear(StwWhatifSweep *s);

/* Every point of S: each trace × chunk size × budget × policy, in that order, against each
 * trace's unlimited memory. PROGRESS (may be NULL) hears of each point. A GArray of
 * StwWhatifRow, freed with stw_whatif_rows_free. */
GArray *stw_whatif_sweep_run(StwWhatifSweep *s, void (*progress)(guint done, guint total));
void stw_whatif_rows_free(GArray *rows);

/* The records as JSON, new strings the caller frees (g_free): what `--json` prints and the
 * Python package returns. A point: policy, feasible, and either its chunk size, bytes, time,
 * slowdown (null where it is no ratio) and throughput, or why it cannot be planned; BATCH (0:
 * left out) first. A comparison: the trace (TRACE_FILE, may be NULL), hardware, budget, GPUs,
 * the unlimited time (null where unknown) and the points. */
char *stw_whatif_point_json(const StwWhatifPoint *p, guint64 batch);
/* A sweep's rows as a JSON array of points, and as CSV (a header, then a line per row; where a
 * slowdown is no ratio, an empty field): what `whatif --json` prints and `--csv` writes. */
char *stw_whatif_rows_json(const GArray *rows);
char *stw_whatif_rows_csv(const GArray *rows);
/* A minmem answer: the trace (TRACE_FILE, may be NULL), hardware, policy, the slowdown allowed,
 * the unlimited time, and the point at the budget found: what `minmem --json` prints. */
char *stw_whatif_minmem_json(const StwMinmem *m, const char *trace_file, const char *hardware);
char *stw_whatif_comparison_json(const StwComparison *c, const char *trace_file,
                                 const char *hardware);

STW_END_DECLS

#endif
