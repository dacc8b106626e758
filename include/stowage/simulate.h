/* simulate.h — an event model of a plan's iteration: how long it takes and where time goes.
 *
 * Resources: the compute stream (ops in order; an op waits for its chunks to arrive and for GPU
 * memory for its activations), the H2D and D2H copy engines (FIFO; a copy of n bytes takes the
 * profile's latency + n / bandwidth(n), pinned memory), and the CPU (CPU Adam at the profile's
 * rate, after the chunk's gradients have arrived). Actions at moment k are issued when op k-1
 * ends. A fetch waits for GPU memory: memory an eviction frees is free only when its copy is
 * done. The iteration is simulated three times back to back from the plan's start state; the
 * second is measured, so the figures are the steady state's. With several ranks (the layout's
 * world) a fourth lane runs the collectives in order, each a ring of world - 1 steps over the
 * interconnect (stw_collective_ns, cost.h); the CPU's Adam rate is shared by the ranks, and each rank
 * steps only the chunks it owns. docs/algorithms.md has the model.
 */
#ifndef STW_SIMULATE_H
#define STW_SIMULATE_H

#include <glib.h>

#include <stowage/plan.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_PLANNER
#error "<stowage/simulate.h> belongs to the planner: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

typedef struct {
  guint64 start_ns, end_ns;  /* within the measured iteration */
  guint64 stall_ns;          /* waiting for chunks or memory before it could start */
} StwSimOp;

typedef enum {
  STW_SIM_H2D,
  STW_SIM_D2H,
  STW_SIM_CPU_ADAM,
  STW_SIM_COMM,
  STW_SIM_STORAGE_READ,  /* read from the storage tier (item: the chunk; kind: what) */
  STW_SIM_STORAGE_WRITE, /* ... and written back */
} StwSimLane;

/* The kind of a copy of an offloaded block's activations (its item: the block). */
#define STW_SIM_ACTIVATIONS 1u
/* The kind of a copy of the framework's gradients under model.gradients "host" (its item: the
 * op after which they go, or the optimizer op they come back for), of their reduce-scatter
 * among several ranks before it, and of the CPU's addition of them to the earlier
 * micro-steps' (apart from every StwActionKind, which the collectives' lane holds too) */
#define STW_SIM_GRADIENTS 256u
/* What a storage read or write moves: a chunk's optimizer state (with its parameters, for a
 * chunk placed "storage", at its step), or its parameters alone (a fetch's read, a copy out's
 * write) */
#define STW_SIM_STORAGE_STATE 0u
#define STW_SIM_STORAGE_PARAMS 1u

typedef struct {
  guint32 lane;              /* StwSimLane */
  guint32 item;              /* chunk item (H2D/D2H/COMM), chunk index (CPU Adam, storage),
                              * block (STW_SIM_ACTIVATIONS) or op (STW_SIM_GRADIENTS) */
  guint32 kind;              /* COMM: STW_ACTION_GATHER or STW_ACTION_REDUCE_SCATTER of a chunk
                              * group, or STW_SIM_GRADIENTS of an op's gradients; H2D/D2H:
                              * STW_SIM_ACTIVATIONS for a block's activations, STW_SIM_GRADIENTS
                              * for gradients, else 0; CPU: STW_SIM_GRADIENTS for their
                              * addition, else 0 (Adam); storage:
                              * STW_SIM_STORAGE_STATE or STW_SIM_STORAGE_PARAMS */
  guint64 start_ns, end_ns;
  guint64 bytes;             /* transfers */
} StwSimTask;

typedef struct {
  guint64 t_ns;
  guint64 chunk_bytes;       /* GPU memory held by chunks */
  guint64 nonmodel_bytes;    /* activations and workspace */
} StwSimSample;

typedef struct {
  guint64 iteration_ns;      /* steady-state period: op 0 to op 0 of the next iteration */
  guint64 compute_busy_ns, compute_stall_ns;
  guint64 copy_slowdown_ns;  /* of compute_busy_ns: lost to copies on the compute's own cores
                              * (the profile's copy_interference) */
  guint64 h2d_busy_ns, d2h_busy_ns, cpu_busy_ns;
  guint64 cpu_add_ns;        /* of cpu_busy_ns: the host adding each micro-step's gradients to
                              * the earlier ones' (model.gradients "host") */
  guint64 storage_busy_ns;   /* the storage reading and writing optimizer state */
  guint64 storage_read_bytes, storage_write_bytes; /* and how much, each way (what the runtime's
                                                    * replay moves, byte for byte) */
  guint64 h2d_bytes, d2h_bytes;
  guint64 comm_busy_ns;      /* the collectives' lane (several ranks) */
  guint64 comm_bytes;        /* received by this rank in collectives */
  guint64 peak_gpu_bytes;    /* chunks + non-model, over time */
  guint64 peak_time_ns;
  guint64 over_budget_bytes; /* the largest excursion above the budget (0: none) */
  guint64 over_budget_ns;    /* when it happened */
  guint64 cpu_bytes;         /* host memory for chunks */
  guint64 pinned_bytes;      /* host memory the copies touch, this rank's: pinned, they run at
                              * the profile's pinned speed */
  guint64 pageable_bytes;    /* of it, beyond the plan's pinned budget (its share for this
                              * rank): copied at pageable speed */
  guint64 flops;             /* of the iteration's ops, for achieved FLOP/s */
  /* with detail: the measured iteration */
  GArray *ops;               /* StwSimOp, one per trace op */
  GArray *tasks;             /* StwSimTask */
  GArray *memory;            /* StwSimSample, in time order */
} StwSimulation;

/* Simulates PLAN on its own hardware profile (set PLAN->hw to ask "what if"). The plan must
 * already be known sound for T (stw_plan_check); an unsound plan gives meaningless times. */
void stw_simulate(const StwPlan *plan, const StwTrace *t, gboolean detail, StwSimulation *out);

/* The host memory PLAN's copies touch, per rank, into *NEED (pinned, they run at the profile's
 * pinned speed: what a plan assumes), and how much of it lies beyond the plan's pinned budget
 * (budgets.pinned_bytes, its share for a rank) into *PAGEABLE: copied at pageable speed. */
void stw_plan_pinned(const StwPlan *plan, const StwTrace *t, guint64 *need, guint64 *pageable);
/* Of the host memory PLAN's chunks need (its cpu_bytes), the staging buffers of the storage tier,
 * all ranks: two of the largest chunk's stored bytes for the steps, two of the largest stored
 * param item for the fetches and copies out (none with GPUDirect Storage); 0 without storage. */
guint64 stw_plan_staging_bytes(const StwPlan *plan, const StwTrace *t);
void stw_simulation_clear(StwSimulation *s);

/* What an iteration's time means as throughput, for all ranks together. Model FLOPs are the
 * usual 6 N per token (N the model's parameters: forward 2N, backward 4N; attention's score
 * FLOPs not counted, as in PaLM's MFU), 4 for a frozen parameter, whose backward computes the
 * input's gradient and no weight gradient (a LoRA's base); with checkpointing the GPUs also
 * re-run each block's forward, 2N more per token, which `hardware_flops_per_s` counts and MFU
 * does not. */
typedef struct {
  double tokens_per_s;
  double model_flops_per_s;     /* 6 N per token, 4 for the frozen of them */
  double hardware_flops_per_s;  /* that, and 2 N more with recompute, per token */
  double frozen_share;          /* the frozen parameters' share of N */
  double mfu;                   /* model FLOP/s over the ranks' dense peak in the trace's dtype */
  double peak_flops_per_s;      /* that peak, all ranks */
  gboolean recompute;           /* the trace checkpoints its blocks */
} StwThroughput;

/* The device T's op times were measured on when it is not the one HW describes (a trace the
 * runtime recorded on the host backend, "host", planned on a GPU's profile; a GPU trace on
 * another GPU's): its name, owned by T; NULL when they are the same, or T does not say. A CPU's
 * are re-timed for a GPU's profile (stw_retiming) unless the planner is asked to keep the times
 * measured there (StwPlannerOptions.measured_times); another GPU's are kept. */
const char *stw_trace_measured_elsewhere(const StwTrace *t, const StwHardware *hw);

/* What re-timing T's ops for HW works from: the iteration's FLOPs (its parameters' 6 N a token,
 * 4 for a frozen one, 2 N more recomputed, and its attention's 12 x layers x hidden x seq a
 * token, 4 more recomputed, where the trace knows its model), HW's rate for them (the trace's
 * compute dtype at the profile's matmul efficiency) and the time T measured for its forward and
 * backward ops. */
typedef struct {
  double flops;
  double flops_per_s;
  guint64 measured_ns;
} StwRetimingBasis;

/* How a plan on HW times T's ops (StwRetiming, plan.h): re-timed where T was measured on a CPU
 * (the host backend's "host", PyTorch's "cpu") and HW is a GPU's profile, and it can be: TRUE
 * with *OUT (and *BASIS, when not NULL). FALSE with *OUT zero otherwise: *WHY_NOT (when not
 * NULL) is then NULL where T's times are HW's own or another GPU's (kept: its kernels' times), or
 * says why a CPU's cannot be (the caller's to free): the trace does not say its batch and
 * sequence, HW has no rate for its dtype, or its ops measured no time. */
gboolean stw_retiming(const StwTrace *t, const StwHardware *hw, StwRetiming *out,
                      StwRetimingBasis *basis, char **why_not);

/* How a prediction on a profile took a trace's op times where they were measured on another
 * device (stw_trace_measured_elsewhere): MEASURED_ON that device (NULL: the profile's own, and
 * nothing to say), RETIMING how they were re-timed (scale 0: kept as measured). */
typedef struct {
  char *measured_on;
  StwRetiming retiming;
} StwOpTimes;

/* T's op times on HW as a plan takes them, KEEP as StwPlannerOptions.measured_times; OUT the
 * caller's, cleared with stw_op_times_clear. */
void stw_op_times_of(const StwTrace *t, const StwHardware *hw, gboolean keep, StwOpTimes *out);
void stw_op_times_clear(StwOpTimes *o);

/* A rank's host memory beside the chunks: its process's framework, libraries, CUDA context and
 * allocator slack. The figure measured in the profiled process (T's device.process_bytes) where
 * T's times were measured on HW's device (stw_trace_measured_elsewhere), else HW's
 * (cpu.overhead_bytes: probed or stated) or, where it has none, the default. ORIGIN, when not
 * NULL: which, in words. */
guint64 stw_process_bytes(const StwTrace *t, const StwHardware *hw, const char **origin);

/* A rank's GPU memory outside its tensors (its CUDA context, the libraries' buffers): the figure
 * measured in the profiled process (T's device.gpu_process_bytes) where T's times were measured
 * on HW's device and it is below HW's GPU memory (else it cannot be this device's), else HW's (gpu.process_bytes, 0 where it has none). ORIGIN, when not NULL:
 * which, in words. */
guint64 stw_gpu_process_bytes(const StwTrace *t, const StwHardware *hw, const char **origin);

/* The throughput of T (its batch and sequence per rank) on WORLD ranks of HW at ITERATION_NS:
 * its MFU and peak 0 when T's times were measured on another device (no GPU MFU of a CPU's
 * times). FALSE (and zeros) when the trace does not say its batch and sequence, or no time is
 * given. */
gboolean stw_throughput(const StwTrace *t, const StwHardware *hw, guint32 world,
                        guint64 iteration_ns, StwThroughput *out);

STW_END_DECLS

#endif
