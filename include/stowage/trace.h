/* trace.h — one training iteration of one rank, as a sequence of operators.
 *
 * The trace is the input to every planning tool. It is data from outside: stw_trace_load()
 * validates every field and every cross-reference and rejects, with the file name and JSON path,
 * anything inconsistent. The file format is docs/trace-format.md; this module is its only reader
 * and writer.
 *
 * The structs are plain records (read them freely); build traces with stw_trace_new() and the
 * stw_trace_add_*() helpers so the invariants checked by stw_trace_validate() hold.
 */
#ifndef STW_TRACE_H
#define STW_TRACE_H

#include <glib.h>

#include <stowage/model.h>

#include <stowage/errors.h>
#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_CORE
#error "<stowage/trace.h> belongs to the core: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_TRACE_ERROR (stw_trace_error_quark())
GQuark stw_trace_error_quark(void);

typedef enum {
  STW_TRACE_ERROR_INVALID, /* the trace breaks an invariant (see stw_trace_validate) */
} StwTraceError;

#define STW_TRACE_FORMAT "stowage-trace"
#define STW_TRACE_VERSION 2         /* written when the trace has blocks; else version 1 */
#define STW_TRACE_VERSION_BLOCKS 2  /* the first version with blocks */

/* Limits that keep hostile files from allocating without bound. */
#define STW_TRACE_MAX_FILE_BYTES (G_GUINT64_CONSTANT(1) << 30)
#define STW_TRACE_MAX_TENSORS (1u << 20)
#define STW_TRACE_MAX_OPS (1u << 22)
#define STW_TRACE_MAX_OP_TENSORS (1u << 16)   /* params or grads of one op */
#define STW_TRACE_MAX_NAME 1024               /* bytes */
#define STW_TRACE_MAX_DIMS 8
#define STW_TRACE_MAX_ALIASES 64
#define STW_TRACE_MAX_VALUES (1u << 24)   /* JSON values in a trace file: ~1.3 GiB parsed */
#define STW_TRACE_MAX_NUMEL (G_GUINT64_CONSTANT(1) << 48)
#define STW_TRACE_MAX_INT (G_GUINT64_CONSTANT(1) << 53)   /* bytes, ns, flops: exact in JSON */
#define STW_TRACE_MAX_WORLD (1u << 20)
#define STW_TRACE_MAX_BATCH G_MAXUINT32
/* Sums over a trace, so that no sum a tool forms from a valid trace can wrap: */
#define STW_TRACE_MAX_TOTAL_NS STW_TRACE_MAX_INT              /* all ops' durations */
#define STW_TRACE_MAX_TOTAL_FLOPS (G_GUINT64_CONSTANT(1) << 62)
#define STW_TRACE_MAX_TOTAL_NUMEL (G_GUINT64_CONSTANT(1) << 49) /* 16 bytes each: 2^53 bytes */

typedef enum { STW_STAGE_FWD, STW_STAGE_BWD, STW_STAGE_OPTIM, STW_N_STAGES } StwStage;

typedef enum { STW_SOURCE_RUNTIME, STW_SOURCE_CUPTI, STW_SOURCE_KINETO, STW_SOURCE_SYNTHETIC }
    StwSourceKind;

typedef struct {
  char *name;                        /* unique within the trace */
  guint32 ndim;                      /* 1..STW_TRACE_MAX_DIMS */
  guint64 shape[STW_TRACE_MAX_DIMS]; /* elements per dimension */
  guint64 numel;                     /* elements: the product of shape */
  StwDtype dtype;                    /* the compute copy's dtype */
  GPtrArray *aliases;                /* char*: other names of a tied tensor; may be empty */
  gboolean frozen;                   /* trained by no one (a LoRA base): no gradient, no
                                      * optimizer state; its chunks hold the param list only */
} StwTensor;

typedef struct {
  char *name;
  StwStage stage;
  guint32 *params;              /* tensor ids read as parameters */
  guint32 n_params;
  guint32 *grads;               /* tensor ids whose gradients this op writes (bwd only) */
  guint32 n_grads;
  guint64 nonmodel_bytes;       /* non-model memory live when the op starts */
  guint64 nonmodel_peak_bytes;  /* peak non-model memory while it runs, >= nonmodel_bytes */
  guint64 duration_ns;          /* measured or modelled */
  guint64 flops;                /* floating-point operations; 0 when unknown */
} StwOp;

/* Something a profiler can produce that the trace does without, and how often it did. */
typedef struct {
  char *name;      /* "unknown_frees", "open_ranges", ...: [a-z_], at most 64 bytes */
  guint64 count;
} StwTraceWarning;

#define STW_TRACE_MAX_WARNINGS 64

typedef struct {
  StwSourceKind kind;
  char *tool;      /* "stowage 0.1.0" */
  char *created;   /* ISO 8601 UTC */
  GArray *warnings; /* StwTraceWarning: what the source saw and could not use, counted */
} StwTraceSource;

/* Where a trace's gradients live from the backward op that writes them to the optimizer op that
 * consumes them. */
typedef enum {
  STW_GRADIENTS_CHUNKS,    /* in the param list's chunks, over the parameters (PatrickStar's
                            * reuse): a backward op leaves its gradients' chunks dirty */
  STW_GRADIENTS_FRAMEWORK, /* in the framework's own tensors (PyTorch's .grad), counted in the
                            * ops' non-model memory; the optimizer op takes them into the chunks
                            * where it steps them, and the parameters stay clean until then */
  STW_GRADIENTS_HOST,      /* the framework's, each copied to host memory once its last backward
                            * op of a micro-step wrote it and freed on the device, added there
                            * to the earlier micro-steps' (FSDP's CPU offload, DeepSpeed's
                            * ZeRO-Offload under gradient accumulation): on the device only at
                            * the op that writes it; the optimizer steps them on the host */
  STW_GRADIENTS_HOST_VIA_DEVICE, /* as HOST, but a later micro-step's added on the device: the
                                  * host's sum copied back and added there, then out again, the
                                  * copies on the compute stream (DeepSpeed's ZeRO-Offload,
                                  * async_accumulate_grad_in_cpu_via_gpu) */
  STW_N_GRADIENTS
} StwGradients;

/* Whether gradients G are copied to the host each micro-step (HOST, HOST_VIA_DEVICE). */
static inline gboolean
stw_gradients_on_host(StwGradients g)
{
  return g == STW_GRADIENTS_HOST || g == STW_GRADIENTS_HOST_VIA_DEVICE;
}

extern const char *const stw_gradients_names[]; /* NULL-terminated, in enum order */

#define STW_TRACE_MAX_MICRO_STEPS 65536

typedef struct {
  char *name;
  gboolean has_config;      /* config is valid (synthetic traces; others may not know) */
  StwModelConfig config;
  guint64 batch;            /* sequences per iteration on this rank; 0 = unknown */
  guint64 seq;              /* tokens per sequence; 0 = unknown */
  gboolean checkpointing;   /* activation checkpointing per transformer block */
  StwAttention attention;
  StwKernels kernels;       /* synthesized: how its ops' kernels were modelled ("kernels",
                             * written when eager) */
  StwDtype autocast;        /* the dtype autocast computes the GEMMs in, the weights being fp32
                             * (PyTorch's AMP: "autocast", written when it is one), or
                             * STW_DTYPE_FP32 (0): none */
  StwLoss loss;             /* synthesized: how its loss was computed ("loss", written when
                             * chunked) */
  StwOptimizerImpl optimizer_impl; /* synthesized: how its optimizer ops were modelled
                                    * ("optimizer_impl", written when not fused) */
  guint32 micro_steps;      /* forward-backward passes per iteration (gradient accumulation):
                             * the ops are that many runs of forward then backward ops, then the
                             * optimizer's; 1 in a new trace */
  StwGradients gradients;   /* where the gradients live until the optimizer op */
  StwCollectives collectives; /* whether the loop's collectives hold the compute stream
                               * ("collectives", written when blocking) */
  StwInit init;             /* how each rank builds its model before training it ("init",
                             * written when not sharded) */
  gboolean amsgrad;         /* the optimizer keeps the largest variance too (AMSGrad): the
                             * variance list holds two values per element */
  StwDtype state_dtype;     /* the optimizer's moments: STW_DTYPE_FP32 (0, the default) or
                             * STW_DTYPE_BF16 ("optimizer_state") */
  guint64 images;           /* synthesized: images a sequence through the vision tower
                             * ("images", written when some), each image_size pixels a side */
  guint64 image_size;
  guint64 reduce_bucket_size; /* with optimizer_impl deepspeed: its loop's ZeRO configuration,
                               * in elements ("reduce_bucket_size", "sub_group_size", written
                               * when set); 0: DeepSpeed's defaults (stw_trace_loop_buffers) */
  guint64 sub_group_size;
} StwTraceModel;

typedef struct {
  char *name;
  guint64 memory_bytes;  /* total device memory */
  guint32 rank;          /* the profiled rank, < world_size */
  guint32 world_size;    /* data-parallel ranks */
  guint64 process_bytes; /* the profiled process's own host memory at its peak (RSS beside the
                          * model's weights, gradients and optimizer state and, profiled on the
                          * host, the non-model memory): its framework, libraries and allocator
                          * slack, as measured; 0: not measured */
  guint64 gpu_process_bytes; /* the profiled process's own GPU memory outside its tensors: the
                              * device's memory in use less the framework allocator's reserve
                              * (its CUDA context, the libraries' buffers), or less the runtime's
                              * arena (the runtime's own trace on CUDA), as measured; 0: not
                              * measured (a CPU run, or an older trace) */
} StwTraceDevice;

/* What a run does with a block's activations between its forward and its backward. */
typedef enum {
  STW_BLOCK_KEEP,      /* kept on the device (as profiled) */
  STW_BLOCK_RECOMPUTE, /* dropped after its forward, its forward run again before its backward */
  STW_BLOCK_OFFLOAD,   /* copied to host memory after its forward, back before its backward */
  STW_BLOCK_RECOMPUTE_HOST, /* recomputed as RECOMPUTE, the input it starts from copied to host
                             * memory after its forward and back before its recomputation
                             * (DeepSpeed's cpu_checkpointing: synth --checkpoints host) */
  STW_N_BLOCK_CHOICES
} StwBlockChoice;

extern const char *const stw_block_choice_names[]; /* "keep", ...; NULL-terminated */

/* Whether CHOICE runs the block's forward again before its backward (RECOMPUTE,
 * RECOMPUTE_HOST), and whether it copies some of its activations to the host and back (OFFLOAD,
 * RECOMPUTE_HOST: stw_trace_activation_moves). */
gboolean stw_block_recomputes(StwBlockChoice choice);
gboolean stw_block_moves(StwBlockChoice choice);

/* A checkpointable block (a transformer layer; a PyTorch module at the profile's depth) in one
 * forward-backward run: what deciding to keep, recompute or offload its activations needs. */
typedef struct {
  char *name;
  guint32 fwd_first, fwd_last;  /* its forward ops, [first, last] */
  guint32 bwd_first, bwd_last;  /* its backward ops (a recomputation among them) */
  guint64 input_bytes;          /* the activation it reads: what recomputing it needs kept */
  guint64 saved_bytes;          /* what its forward keeps for backward when kept, its input
                                 * included (0: nothing, or not known) */
  guint64 forward_ns;           /* its forward's time: what recomputing it costs */
  StwBlockChoice choice;        /* what this trace does with its activations: KEEP in a profiled
                                 * trace; set by stw_trace_decide */
} StwBlock;

/* The copies of an offloaded block's activations (what it keeps, less its input: the bytes
 * recomputing it would free; a block recomputed from its input on the host: that input), in
 * the moments of the trace that offloads it. Out: issued at
 * OUT_MOMENT, the end of the block's forward, on the device-to-host engine; complete by
 * OUT_DONE, the end of the next block's forward (or the op after its own where none follows),
 * from when the device memory is free. In: issued at IN_MOMENT, when the backward of the block
 * before it in backward order begins (or the first backward op), on the host-to-device engine,
 * its memory taken from then; complete by IN_DONE, the block's first backward op. OUT_DONE <=
 * IN_MOMENT. */
typedef struct {
  guint32 block;
  guint32 out_moment, out_done;
  guint32 in_moment, in_done;
  guint64 bytes;
} StwActivationMove;

typedef struct {
  StwTraceSource source;
  StwTraceModel model;
  StwTraceDevice device;
  GArray *tensors;  /* StwTensor, index = id */
  GArray *ops;      /* StwOp, in execution order; op boundary i is "moment" i */
  GArray *blocks;   /* StwBlock, in the order of their forwards; empty when the source does not
                     * know them (a trace of version 1) */
} StwTrace;

/* An empty trace (never NULL), the caller's (stw_trace_free). */
StwTrace *stw_trace_new(void);
void stw_trace_free(StwTrace *trace);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwTrace, stw_trace_free)

/* Adds COUNT to the source's warning NAME (nothing when COUNT is 0). */
void stw_trace_warn(StwTrace *trace, const char *name, guint64 count);

/* Appends a tensor; returns its id. SHAPE has NDIM entries. */
guint32 stw_trace_add_tensor(StwTrace *trace, const char *name, StwDtype dtype,
                             const guint64 *shape, guint32 ndim);
/* Appends an op (copying PARAMS and GRADS); returns a pointer valid until the next append. */
StwOp *stw_trace_add_op(StwTrace *trace, const char *name, StwStage stage,
                        const guint32 *params, guint32 n_params, const guint32 *grads,
                        guint32 n_grads);
/* A block over ops [FWD_FIRST, FWD_LAST] and [BWD_FIRST, BWD_LAST], its bytes and time zero for
 * the caller to fill; valid until the next block is added. */
StwBlock *stw_trace_add_block(StwTrace *trace, const char *name, guint32 fwd_first,
                              guint32 fwd_last, guint32 bwd_first, guint32 bwd_last);

static inline const StwTensor *
stw_trace_tensor(const StwTrace *t, guint32 id)
{
  return &g_array_index(t->tensors, StwTensor, id);
}
static inline const StwOp *
stw_trace_op(const StwTrace *t, guint32 i)
{
  return &g_array_index(t->ops, StwOp, i);
}

/* Checks every invariant; FILE names the trace in messages. Returns FALSE with ERROR set at
 * the first violation: tensor names unique and non-empty, shapes matching numel, op tensor ids
 * existing and not repeated within an op, grads only in bwd ops and never of a frozen tensor,
 * no optimizer op over a frozen tensor, stages in the order fwd, bwd (micro_steps times: with
 * several, gradients held by the framework), then optim, peak >= start, rank < world_size;
 * each block's forward ops fwd and its backward ops bwd, its forward before its backward, and
 * no two blocks' forwards (or backwards) sharing an op. */
gboolean stw_trace_validate(const StwTrace *trace, const char *file, GError **error);
/* Errors of the functions below: STW_TRACE_ERROR_INVALID (an invariant, as above), and where a
 * file is read or written STW_FILES_ERROR (the file), STW_JSON_ERROR (its text). */

/* Reads and validates a trace file: the caller's (stw_trace_free), or NULL with ERROR naming FILE
 * and the JSON path. */
StwTrace *stw_trace_load(const char *file, GError **error);
/* Parses a trace from memory, as stw_trace_load; FILE names it in messages. */
StwTrace *stw_trace_parse(const char *file, const char *text, gsize len, GError **error);
/* Serializes (validating first); the text is the canonical form plus a source block, the
 * caller's (g_free), or NULL with ERROR when the trace is invalid. */
char *stw_trace_to_string(const StwTrace *trace, GError **error);
/* Writes atomically (temporary + rename); "-" is standard output. */
gboolean stw_trace_save(const StwTrace *trace, const char *file, GError **error);

/* SHA-256 (64 hex digits) of the canonical trace: every member but "source", in a fixed order,
 * without white space. Equal for equal traces whatever the key order or spacing of their files.
 * A new string, the caller's (g_free). */
char *stw_trace_digest(const StwTrace *trace);

/* The largest tensor (elements), and a tensor id holding it (0 when there is none). */
guint64 stw_trace_largest_tensor(const StwTrace *trace, guint32 *id_out);

/* The dtype TRACE's GEMMs compute in: autocast's where the loop runs under it (model.autocast,
 * fp32 weights), else the tensors' (0 for a trace without tensors: fp32). */
StwDtype stw_trace_compute_dtype(const StwTrace *trace);

/* The trace's micro-steps (forward-backward passes per iteration), at least 1. */
static inline guint32
stw_trace_micro_steps(const StwTrace *t)
{
  return MAX(t->model.micro_steps, 1);
}

/* How many of the trace's tensors are frozen, and their elements. */
guint32 stw_trace_frozen(const StwTrace *trace, guint64 *numel_out);

/* The bytes of gradients TRACE's loop holds in host memory to the step: with model.gradients
 * "host", every trained tensor's in its dtype (the buffers each micro-step's are added into);
 * 0 for the others. */
guint64 stw_trace_host_gradient_bytes(const StwTrace *trace);

/* Freezes every tensor whose name or an alias matches one of PATTERNS (globs separated by
 * commas: '*' any text, '?' one character), and takes the frozen tensors out of the ops: out of
 * backward ops' grads and optimizer ops' params (an optimizer op left with none is removed).
 * *N_OUT (may be NULL): the tensors newly frozen. FALSE with ERROR when a pattern is empty or
 * matches no tensor (STW_TRACE_ERROR_INVALID). */
gboolean stw_trace_freeze(StwTrace *trace, const char *patterns, guint32 *n_out, GError **error);

/* TRACE with its blocks' activations decided: CHOICE[b] (StwBlockChoice) for block b.
 * RECOMPUTE: between the end of the block's forward and its backward the non-model memory is
 * lower by what the block keeps less its input (saved_bytes - input_bytes); right before its
 * first backward op, its forward ops run again (NAME.recompute, bwd ops reading the same
 * parameters, their time and FLOPs), rebuilding that memory as the forward did; its backward
 * range takes the recomputation in. OFFLOAD: the same bytes are off the device from its move's
 * OUT_DONE to its IN_MOMENT (stw_trace_activation_moves), no op added. The blocks keep their
 * figures and record their choice; model.checkpointing says whether all are recomputed. A new
 * trace, the caller's; NULL with ERROR (STW_TRACE_ERROR_INVALID) for a trace without blocks, one
 * whose blocks are decided (profiled with checkpointing, or by this function), or one with
 * several micro-steps. */
StwTrace *stw_trace_decide(const StwTrace *trace, const guint8 *choice, GError **error);

/* What a loop holds on each of its ranks beside the model's chunks and its activations, where
 * the trace's optimizer is DeepSpeed ZeRO's step on the GPU (model.optimizer_impl deepspeed: no
 * offload_optimizer), sized by its ZeRO configuration (model.reduce_bucket_size and
 * sub_group_size; where the trace gives none, DeepSpeed's defaults: stage3.py,
 * stage_1_and_2.py): PARTITION, the rank's reduced gradients in a buffer of their own, 1/WORLD
 * of the trained elements in their dtype (stage 3 allocates it at start, contiguous_gradients),
 * on at every op; BUCKET, the gradients gathered for one reduction (reduce_bucket_size, 5e8
 * elements by default), during backward; STEP, the gradients the step casts to fp32, a
 * sub-group of the rank's partition at a time (sub_group_size, 1e9 elements by default;
 * PyTorch Lightning's DeepSpeedStrategy sets 1e12, the whole partition), during the optimizer
 * ops. */
typedef struct {
  guint64 partition, bucket, step;
  guint64 reduce_bucket_size, sub_group_size; /* the sizes they were made with, in elements:
                                               * the trace's, else DeepSpeed's defaults */
} StwLoopBuffers;

#define STW_DEEPSPEED_REDUCE_BUCKET_ELEMS G_GUINT64_CONSTANT(500000000)
#define STW_DEEPSPEED_SUB_GROUP_ELEMS G_GUINT64_CONSTANT(1000000000)
#define STW_DEEPSPEED_MAX_BUFFER_ELEMS G_GUINT64_CONSTANT(1000000000000000) /* a config's 1e15 */

/* TRACE's loop buffers on WORLD ranks into *OUT; FALSE (all 0) where its loop holds none. */
gboolean stw_trace_loop_buffers(const StwTrace *trace, guint32 world, StwLoopBuffers *out);

/* TRACE with its loop buffers on WORLD ranks (stw_trace_loop_buffers) in every op's non-model
 * memory, at its start and its peak: a new trace, the caller's; NULL where the loop holds none.
 * The planner plans such a trace, and stw_plan_trace derives it for check and simulate. */
StwTrace *stw_trace_with_loop_buffers(const StwTrace *trace, guint32 world);

/* The activation moves of TRACE's offloaded blocks (their choice OFFLOAD: what they keep less
 * their input; RECOMPUTE_HOST: their input), in block order: a new array of
 * StwActivationMove, the caller's (g_array_unref). */
GArray *stw_trace_activation_moves(const StwTrace *trace);

/* How many of TRACE's blocks CHOICE decides. */
guint32 stw_trace_blocks_chosen(const StwTrace *trace, StwBlockChoice choice);

/* TRACE's ops without the bytes of its activation moves (stw_trace_activation_moves) in their
 * non-model memory while each is off the device: from its copy out's completion to its copy
 * back's issue. For a trace whose ops count every block's activations as kept, or its
 * recomputed blocks' inputs (stw_trace_decide and synth --checkpoints host call it). */
void stw_trace_free_moved_activations(StwTrace *trace);

/* The most host memory MOVES (StwActivationMove) hold at once: each from its copy out's issue
 * to its copy back's completion. */
guint64 stw_activation_moves_host_peak(const GArray *moves);

/* Model-data bytes of a tensor's compute copy. */
guint64 stw_tensor_bytes(const StwTensor *tensor);

/* Static strings. */
const char *stw_stage_name(StwStage stage);
const char *stw_source_kind_name(StwSourceKind kind);

STW_END_DECLS

#endif
