/* synth.h — the trace of a training iteration that has not run yet.
 *
 * stw_synth_trace() walks a model's operator graph (model.h) forward and backward, replaying
 * the allocations of a PyTorch-style autograd engine to get the non-model memory live at the
 * start of and at the peak within each op, and models each op's duration from its FLOPs and
 * bytes on a hardware profile. The derivation is written out in docs/synth.md.
 */
#ifndef STW_SYNTH_H
#define STW_SYNTH_H

#include <glib.h>

#include <stowage/hardware.h>
#include <stowage/model.h>
#include <stowage/trace.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_CORE
#error "<stowage/synth.h> belongs to the core: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_SYNTH_ERROR (stw_synth_error_quark())
GQuark stw_synth_error_quark(void);

typedef enum {
  STW_SYNTH_ERROR_INVALID, /* options that do not fit the model or the hardware */
} StwSynthError;

#define STW_SYNTH_MAX_BATCH 65536

/* The kernels synth, whatif --model and capacity assume when not told: PyTorch eager, the way
 * Hugging Face's models run unless compiled (docs/synth.md) */
#define STW_KERNELS_DEFAULT STW_KERNELS_EAGER

typedef struct {
  guint64 batch;            /* sequences per iteration, 1..65536 */
  guint64 seq;              /* tokens per sequence, 1..config.max_seq */
  StwDtype dtype;           /* compute dtype of parameters and activations */
  gboolean checkpointing;   /* keep only each block's input; recompute the block in backward */
  gboolean amp;             /* PyTorch's automatic mixed precision (autocast): the weights, their
                             * gradients and the optimizer fp32 (no master copy), each GEMM's
                             * weights cast to DTYPE (bf16 or fp16) at its use and kept to its
                             * backward (docs/synth.md) */
  guint64 checkpoint_every; /* with checkpointing, blocks a checkpointed segment holds (0 or 1:
                             * each block): only a segment's input is kept, and its blocks are
                             * recomputed together before the last one's backward (Megatron's
                             * --recompute-num-layers, torch's checkpoint_sequential) */
  StwCheckpoints checkpoints; /* with checkpointing, where each block's input waits for its
                               * recomputation: the device (0), or host memory, its blocks'
                               * activations "recompute-host" (one block a segment, one
                               * micro-step) */
  StwAttention attention;
  StwKernels kernels;       /* fused (0) or PyTorch eager's chains of kernels */
  StwLoss loss;             /* full (0) or chunked (stw_model_graph_chunk_loss) */
  StwOptimizerImpl optimizer_impl; /* how the optimizer steps what it steps on the GPU: fused
                                    * (0), foreach, for-loop or deepspeed */
  guint64 reduce_bucket_size;      /* with deepspeed: its ZeRO configuration's, in elements
                                    * (model.reduce_bucket_size, model.sub_group_size); 0:
                                    * DeepSpeed's defaults */
  guint64 sub_group_size;
  StwInit init;                    /* how each rank builds the model before training it
                                    * (model.init): sharded (0), host or host-fp32 */
  const char *freeze;       /* NULL, or globs of the tensors nobody trains (stw_trace_freeze):
                             * no gradient, no optimizer op, and a backward without the weight
                             * gradient's half of the FLOPs */
  guint64 lora_rank;        /* 0, or LoRA adapters of this rank on LORA_TARGETS, the rest of the
                             * model frozen (stw_model_graph_add_lora) */
  const char *lora_targets; /* NULL: "q,v" */
  guint64 micro_steps;      /* forward-backward passes per iteration, each over BATCH
                             * sequences (gradient accumulation), then one optimizer step; 0 or
                             * 1: one. Several keep the gradients as the framework's own tensors
                             * (model.gradients "framework"), counted in the non-model memory */
  StwCollectives collectives; /* whether the loop's collectives hold the compute stream
                               * (model.collectives): overlapped (0) or blocking */
  StwGradients host_gradients; /* STW_GRADIENTS_HOST: each micro-step's gradients copied to
                                * host memory after the backward op that last writes them and
                                * added there (FSDP's CPU offload), none held on the device
                                * between ops; STW_GRADIENTS_HOST_VIA_DEVICE: the same, added
                                * on the device (DeepSpeed's ZeRO-Offload); else (0) where the
                                * micro-steps put them */
  guint64 images;           /* images in each sequence, run through the model's vision tower
                             * (frozen) before the language model reads their features
                             * (stw_model_graph_add_images); 0: a text step */
  guint64 image_size;       /* their side in pixels; 0: the tower's own (stw_model_image_size) */
  StwVisionTrained vision_trained; /* with IMAGES, what of the tower and projector trains
                                    * (default none: forward only), trained even under LoRA */
} StwSynthOptions;

#define STW_SYNTH_MAX_MICRO_STEPS 1024

/* The trace of one iteration of CONFIG under OPTIONS on HW, the caller's (stw_trace_free); NULL
 * with ERROR (STW_SYNTH_ERROR) when the options do not fit the model or the hardware, or the
 * trace would break the format's limits; STW_MODEL_ERROR for LoRA targets the model lacks. */
StwTrace *stw_synth_trace(const StwModelConfig *config, const StwSynthOptions *options,
                          const StwHardware *hw, GError **error);

STW_END_DECLS

#endif
