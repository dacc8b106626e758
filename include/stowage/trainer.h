/* trainer.h — a GPT trained in C whose model state lives in runtime chunks.
 *
 * The model is the zoo's GPT architecture (model.h: pre-norm blocks, GELU MLP, learned positions,
 * LM head tied to the token embedding) over byte tokens (vocabulary 256); its tensors and ops are
 * exactly those `stowage synth` describes for the same configuration, so a trace profiled here
 * and a synthesized one speak the same names. Math in fp32 on the CPU (kernels.h), or on the GPU
 * through another compute table (compute.h) over the CUDA backend's memory; parameters,
 * gradients (in the parameters' slots), master weights and Adam state in the runtime's chunks.
 * Deterministic for a given seed, whatever the plan or the thread count.
 */
#ifndef STW_TRAINER_H
#define STW_TRAINER_H

#include <glib.h>

#include <stowage/adam.h>
#include <stowage/compute.h>
#include <stowage/runtime.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_TRAIN || STW_BUILDING_LAYER == STW_LAYER_PROFILE
#error "<stowage/trainer.h> belongs to the trainer: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_TRAINER_ERROR (stw_trainer_error_quark())
GQuark stw_trainer_error_quark(void);

typedef enum {
  STW_TRAINER_ERROR_DATA,       /* the text cannot be read or is too short */
  STW_TRAINER_ERROR_CHECKPOINT, /* a checkpoint that is corrupt or of another model */
  STW_TRAINER_ERROR_CONFIG,
  STW_TRAINER_ERROR_DEVICE,     /* a kernel or copy of the compute table failed, or its module
                                 * could not be loaded */
  STW_TRAINER_ERROR_UNSUPPORTED, /* a compute table this build does not have */
  STW_TRAINER_ERROR_DIVERGED,   /* the loss or the model state is no longer finite */
} StwTrainerError;

typedef struct {
  guint64 layers, width, heads, context, batch;
  guint64 seed;
  StwAdamConfig adam;
  StwCompute *compute;  /* where the math runs (not owned); NULL: the CPU */
  StwDtype dtype;       /* the compute copy: fp32, or bf16 (mixed precision, fp32 master) */
  StwAttention attention; /* flash: fused, keeps each query row's log-sum-exp (head widths up
                           * to STW_FLASH_MAX_HEAD_WIDTH); naive: keeps the (T x T) softmax for
                           * backward */
} StwTrainerConfig;

/* 2 layers, width 64, 4 heads, context 64, batch 4, seed 1337, fp32, flash attention */
void stw_trainer_config_init(StwTrainerConfig *c);

typedef struct StwTrainer StwTrainer;

/* The model a configuration describes (tensors and the model section), for runtimes and plans:
 * the caller's (stw_trace_free), or NULL with ERROR (STW_TRAINER_ERROR_CONFIG). */
StwTrace *stw_trainer_model(const StwTrainerConfig *c, GError **error);

/* TEXT (LEN bytes) is the training data; it must hold at least batch * context + 1 bytes. TEXT,
 * BACKEND and what RO points to must outlive the trainer. NULL with ERROR when the data, the
 * configuration or the runtime cannot be had; the caller frees it with stw_trainer_free. */
StwTrainer *stw_trainer_new(const StwTrainerConfig *c, const guint8 *text, gsize len,
                            const StwRuntimeOptions *ro, StwBackend *backend, GError **error);
void stw_trainer_free(StwTrainer *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwTrainer, stw_trainer_free)

/* One step on the next batch: forward, backward, AdamW. FALSE with ERROR: the runtime's
 * (STW_RUNTIME_ERROR, runtime.h), STW_TRAINER_ERROR_DEVICE (a kernel failed),
 * STW_TRAINER_ERROR_DIVERGED (the loss is not finite: the state of the step before is kept). */
gboolean stw_trainer_step(StwTrainer *t, float *loss, GError **error);
/* Before the optimizer runs, copy every tensor's gradient to SINK[id] (numel floats each). */
void stw_trainer_set_grad_sink(StwTrainer *t, float **sink);
/* Use these tokens (batch * context inputs, the same number of targets) for the next step. */
void stw_trainer_set_batch(StwTrainer *t, const int *inputs, const int *targets);

/* The trainer's runtime and model, owned by the trainer; never NULL. */
StwRuntime *stw_trainer_runtime(StwTrainer *t);
const StwTrace *stw_trainer_model_of(StwTrainer *t);
/* Profile mode: the runtime's trace of the last timed iteration (stw_runtime_trace, owned by the
 * runtime) with the trainer's blocks, one per transformer layer: its forward and backward ops,
 * its input (fp32, as the trainer keeps activations) and what its forward kept, measured (the
 * non-model memory it left live, its input counted in and its output out), and its forward's
 * measured time. NULL where the runtime has no trace. */
StwTrace *stw_trainer_trace(StwTrainer *t);
guint64 stw_trainer_step_count(StwTrainer *t);
/* The current weights of TENSOR (numel floats). FALSE with ERROR when the storage tier holding
 * them failed (stw_runtime_read_state). */
gboolean stw_trainer_weights(StwTrainer *t, guint32 tensor, float *out, GError **error);

/* Checkpoints: weights, Adam state, step and data position; SHA-256 checked; written atomically.
 * The state is written as fp32 values whatever the moments' dtype, and the file says the dtype
 * (docs/runtime.md); a checkpoint of the other dtype loads converted: bf16 moments widened to
 * fp32 exactly, fp32 ones rounded to bf16 to nearest. stw_trainer_resumed_state says what the
 * last one loaded held (fp32 before any).
 * On several ranks a set (FILE.rank-R-of-N.step-S per rank, FILE its manifest, written last by
 * rank 0; docs/runtime.md), saved and loaded by every rank together. */
/* Errors: STW_FILES_ERROR (the file), STW_TRAINER_ERROR_CHECKPOINT (corrupt, or of another
 * model, configuration or world), STW_COMM_ERROR (the ranks disagree or a collective fails). */
gboolean stw_trainer_save(StwTrainer *t, const char *file, GError **error);
gboolean stw_trainer_load(StwTrainer *t, const char *file, GError **error);
StwDtype stw_trainer_resumed_state(const StwTrainer *t);
/* A checkpoint of LEN bytes already in memory; FILE names it in messages. */
gboolean stw_trainer_load_data(StwTrainer *t, const char *file, const guint8 *bytes, gsize len,
                               GError **error);

STW_END_DECLS

#endif
