/* model.h — transformer architectures, the model zoo, and each model's operator graph.
 *
 * A model is an StwModelConfig: an architecture (GPT-2 style decoder, GPT-NeoX decoder, LLaMA-style
 * decoder with or without a mixture of experts, BERT encoder) and its sizes. The zoo names the
 * published configurations; stw_model_config_load() reads a small JSON file for any other: stowage's
 * own model format or a Hugging Face `config.json` (docs/models.md lists the model types read). stw_model_graph_new() lays out a model's parameter
 * tensors and its forward operators with their FLOPs and activation sizes for a given batch and
 * sequence length; synth.c turns that graph into a trace. Parameter counts are the sum of the
 * graph's tensors, so the count and the trace can never disagree.
 */
#ifndef STW_MODEL_H
#define STW_MODEL_H

#include <glib.h>

#include <stowage/errors.h>
#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_CORE
#error "<stowage/model.h> belongs to the core: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_MODEL_ERROR (stw_model_error_quark())
GQuark stw_model_error_quark(void);

typedef enum {
  STW_MODEL_ERROR_UNKNOWN, /* no zoo model of that name */
  STW_MODEL_ERROR_INVALID, /* a configuration that does not describe a model */
} StwModelError;

typedef enum { STW_DTYPE_FP32, STW_DTYPE_FP16, STW_DTYPE_BF16, STW_N_DTYPES } StwDtype;

typedef enum {
  STW_ARCH_GPT,   /* GPT-2/GPT-3: learned positions, LayerNorm with bias, GELU MLP, biases */
  STW_ARCH_LLAMA, /* LLaMA: RMSNorm, rotary positions, SwiGLU MLP, grouped-query attention */
  STW_ARCH_BERT,  /* BERT: post-norm encoder, token types, pooler, MLM head tied to embeddings */
  STW_ARCH_NEOX,  /* GPT-NeoX (Pythia): rotary positions, LayerNorm with bias, GELU MLP, biases */
  STW_N_ARCHS
} StwArch;

/* Whether a model's projections have biases: DEFAULT (0) takes its architecture's (gpt, neox and
 * bert: yes; llama: no), so that a config built field by field keeps its published shape. */
typedef enum {
  STW_BIAS_DEFAULT,
  STW_BIAS_YES,
  STW_BIAS_NO,
  STW_N_BIAS
} StwBias;

typedef enum {
  STW_SITE_QKV, /* the query, key and value projections */
  STW_SITE_OUT, /* the attention's output projection */
  STW_SITE_MLP, /* the MLP's projections */
  STW_N_SITES
} StwBiasSite;

typedef enum {
  STW_ATTENTION_NAIVE, /* materializes the (seq x seq) scores and keeps the softmax for backward */
  STW_ATTENTION_FLASH, /* fused (FlashAttention): keeps only the log-sum-exp per row */
  STW_N_ATTENTIONS
} StwAttention;

/* How the framework runs the ops between the GEMMs (docs/synth.md, "Eager kernels"). */
typedef enum {
  STW_KERNELS_FUSED, /* one kernel an op, moving only its inputs and outputs (stowage's trainer,
                      * fused or compiled models) */
  STW_KERNELS_EAGER, /* PyTorch eager as Hugging Face's modules run it: RMSNorm, rotary
                      * positions, GELU-new, the naive softmax and the loss as chains of kernels,
                      * each reading and writing its tensors (in fp32 where they upcast) */
  STW_N_KERNELS
} StwKernels;

/* How the framework's optimizer steps the tensors it keeps on the GPU: PyTorch's three kinds of
 * Adam(W) (docs/synth.md, "The optimizer step"). */
typedef enum {
  STW_OPTIMIZER_FUSED,    /* one kernel reading and writing each element once (torch's
                           * fused=True, apex's and DeepSpeed's FusedAdam, ColossalAI's) */
  STW_OPTIMIZER_FOREACH,  /* seven passes over the tensors (lerp, mul, addcmul, sqrt, div, add,
                           * addcdiv), each one launch for many tensors (torch 2's default on
                           * CUDA) */
  STW_OPTIMIZER_FOR_LOOP, /* the same seven passes, seven launches a tensor (torch 1's default) */
  STW_OPTIMIZER_DEEPSPEED, /* DeepSpeed ZeRO's step with its optimizer on the GPU (any stage, no
                            * offload_optimizer): each gradient's norm in fp64 (two launches a
                            * tensor), the partition's gradients flattened, cast to fp32 and
                            * scaled, FusedAdam on the fp32 partition, the new weights cast back
                            * to the compute copy */
  STW_N_OPTIMIZERS
} StwOptimizerImpl;

/* Whether the loop's collectives (the gradients' reductions, the parameters' gathers) run beside
 * the compute stream or on it (docs/synth.md, "Collectives on the compute stream"). */
typedef enum {
  STW_COLLECTIVES_OVERLAPPED, /* on a stream of their own, compute going on beside them */
  STW_COLLECTIVES_BLOCKING,   /* on the compute stream: each op waits for those issued before
                               * it (DeepSpeed ZeRO-1 and 2 where overlap_comm is off, its
                               * default there: the reductions on the current stream, and the
                               * gathers of the updated partitions inside step()) */
  STW_N_COLLECTIVES
} StwCollectives;

/* Where a checkpointed loop keeps each block's input, the checkpoint its recomputation starts
 * from (docs/synth.md, "Checkpoints in host memory"). */
typedef enum {
  STW_CHECKPOINTS_DEVICE, /* in GPU memory (PyTorch's and Megatron's checkpointing) */
  STW_CHECKPOINTS_HOST,   /* copied to host memory after the block's forward, back before its
                           * recomputation (DeepSpeed's activation checkpointing with
                           * cpu_checkpointing; Megatron-DeepSpeed's --cpu-checkpointing) */
  STW_N_CHECKPOINTS
} StwCheckpoints;

/* How each rank's loop builds its model before training it (docs/synth.md, "The model at
 * start-up"): what its host holds before the model is in its chunks or shards. */
typedef enum {
  STW_INIT_SHARDED,   /* straight into its shards or chunks, never whole (stowage's trainer,
                       * DeepSpeed's zero.Init, a model built on the meta device) */
  STW_INIT_HOST,      /* whole on the host in its own dtype first (from_pretrained with
                       * torch_dtype, then wrapped or sharded) */
  STW_INIT_HOST_FP32, /* whole on the host in fp32 first (a model constructed in PyTorch's
                       * default dtype, ColossalAI's ColoInitContext on the CPU) */
  STW_N_INITS
} StwInit;

/* How the loss is computed from the last hidden states (docs/synth.md, "Chunked loss"). */
typedef enum {
  STW_LOSS_FULL,    /* the LM head's logits for every token, kept for the loss's backward, and
                     * the cross-entropy over them in fp32 (Hugging Face's models) */
  STW_LOSS_CHUNKED, /* the LM head and the cross-entropy fused over pieces of tokens, each
                     * piece's gradients computed at once, so no logits outlive a piece (Liger's
                     * FusedLinearCrossEntropy, torchtune's and MegaTrain's chunked losses) */
  STW_LOSS_NATIVE,  /* every token's logits, the cross-entropy in their own 16-bit dtype
                     * (nn.CrossEntropyLoss on a 16-bit model's logits without autocast:
                     * Hugging Face's GPT-2 before transformers 4.46, ColossalAI's GPT example) */
  STW_N_LOSSES
} StwLoss;

/* Which vision tower a multimodal checkpoint holds beside its language model
 * (StwModelConfig.vision_kind). */
typedef enum {
  STW_VISION_SIGLIP, /* SigLIP's (Gemma 3's), with Gemma 3's projector */
  STW_VISION_GEMMA4, /* Gemma 4's, with its multimodal embedder */
  STW_VISION_PIXTRAL, /* Pixtral's (Mistral 3's), with Mistral 3's projector */
  STW_VISION_CLIP,    /* CLIP's (LLaVA's), with LLaVA's projector */
  STW_VISION_QWEN2_VL,   /* Qwen2-VL's, with its patch merger */
  STW_VISION_QWEN2_5_VL, /* Qwen2.5-VL's, with its patch merger */
  STW_VISION_QWEN3_VL,   /* Qwen3-VL's, with its patch merger and DeepStack's mergers */
  STW_VISION_INTERNVL,   /* InternViT (InternVL's), with InternVL's projector */
  STW_VISION_MLLAMA,     /* Llama 3.2 Vision's, its projector, its cross-attention blocks */
  STW_VISION_GLM4V,      /* GLM-4.1V's and GLM-4.5V's, with their downsampling merger */
  STW_N_VISION_KINDS
} StwVisionKind;

/* What carries a vision tower's features into the language model
 * (StwModelConfig.vision_projector): DEFAULT, the tower's own (Gemma 3's beside SigLIP, Gemma
 * 4's embedder, Mistral 3's beside Pixtral, LLaVA's beside CLIP, the Qwen-VL mergers), or another
 * that a file pairs the tower with (LLaVA's beside SigLIP or Pixtral, PaliGemma's and
 * Idefics3's connector beside SigLIP's blocks). */
typedef enum {
  STW_PROJECTOR_DEFAULT,
  STW_PROJECTOR_GEMMA3,    /* vision_hidden x hidden and an RMSNorm */
  STW_PROJECTOR_GEMMA4,    /* a projection to hidden */
  STW_PROJECTOR_MISTRAL3,  /* an RMSNorm, a patch merger and LLaVA's */
  STW_PROJECTOR_LLAVA,     /* two projections (and LLaVA-NeXT's image_newline) */
  STW_PROJECTOR_PALIGEMMA, /* one projection to vision_out, biased */
  STW_PROJECTOR_QWEN,      /* the Qwen-VL patch mergers */
  STW_PROJECTOR_IDEFICS3,  /* a pixel shuffle's vision_merge^2 x vision_hidden to hidden */
  STW_PROJECTOR_INTERNVL,  /* a LayerNorm over a pixel shuffle's width, two projections */
  STW_PROJECTOR_MLLAMA,    /* vision_features to hidden, biased */
  STW_PROJECTOR_GLM4V,     /* a strided convolution to vision_out and a gated merger */
  STW_PROJECTOR_AYA,       /* a pixel shuffle's LayerNorm and a SwiGLU vision_out wide */
  STW_N_PROJECTORS
} StwVisionProjector;

/* Where a llama-style block's RMSNorms sit (StwModelConfig.norms). */
typedef enum {
  STW_NORMS_PRE,  /* before attention and before the MLP (the default) */
  STW_NORMS_BOTH, /* before and after each (Gemma 2 and 3) */
  STW_NORMS_POST, /* after each only, on its output before the residual add (OLMo 2) */
  STW_NORMS_SHARED, /* one before attention, whose output the MLP reads too: the parallel
                     * block (Phi-2, GPT-J, Command R; gpt, neox, llama), modelled as the sequential one
                     * without the MLP's norm (the same parameters and FLOPs) */
  STW_N_NORMS
} StwNorms;

/* What a block's norms are (StwModelConfig.norm_type): the architecture's, or a LayerNorm with
 * fewer parameters than gpt's and neox's, or one where a llama-style block has RMSNorms, or an
 * RMSNorm where a gpt or neox block has LayerNorms. The
 * block's and the final norm, and an embedding norm; query and key norms, and latent
 * attention's, stay RMSNorms with weights. */
typedef enum {
  STW_NORM_DEFAULT,             /* gpt, neox, bert: LayerNorm, weight and bias; llama: RMSNorm,
                                 * weight */
  STW_NORM_LAYER,               /* LayerNorm, weight and bias (StableLM's llama-style block) */
  STW_NORM_LAYER_NO_BIAS,       /* LayerNorm, weight only (MPT) */
  STW_NORM_LAYER_NO_AFFINE,     /* LayerNorm without parameters (OLMo) */
  STW_NORM_RMS,                 /* RMSNorm, weight: llama's, in a gpt or neox block (Arcee's
                                 * ungated MLP beside RMSNorms) */
  STW_NORM_RMS_NO_AFFINE,       /* RMSNorm without parameters (NanoChat) */
  STW_N_NORM_TYPES
} StwNormType;

/* The MLP's activation in a gpt, neox or bert block (StwModelConfig.activation): what it costs
 * in eager kernels, not in parameters. */
typedef enum {
  STW_ACT_DEFAULT,  /* the architecture's: gpt GELU-new, neox and bert one GELU kernel */
  STW_ACT_GELU_NEW, /* GELU with tanh's approximation written out op by op (Hugging Face's
                     * gelu_new and its kin: GPT-2, GPT-J, Phi-2) */
  STW_ACT_GELU,     /* one kernel (gelu, gelu_pytorch_tanh, silu, ...) */
  STW_ACT_RELU,     /* one kernel (OPT) */
  STW_ACT_XIELU,    /* xIELU (Apertus): written out op by op, timed as GELU-new's kernels, and
                     * two learned scalars a block (alpha_p, alpha_n; gpt and neox only) */
  STW_ACT_RELU2,    /* ReLU squared: two kernels, relu and square (Nemotron's, Arcee's) */
  STW_N_ACTS
} StwActivation;

/* The kind of linear attention in a model's linear blocks (StwModelConfig.linear_kind). */
typedef enum {
  STW_LINEAR_GDN,    /* Gated DeltaNet (Qwen3-Next, Qwen3.5, OLMo Hybrid) */
  STW_LINEAR_MAMBA2, /* Mamba-2's state-space mixer (Granite 4.0's hybrids, Bamba) */
  STW_LINEAR_SHORT_CONV, /* a gated short convolution (LFM2's): no heads, no state */
  STW_LINEAR_LIGHTNING,  /* lightning attention (MiniMax-Text-01's): decayed linear attention
                          * in blocks, no convolution */
  STW_LINEAR_MAMBA1,     /* Mamba's selective scan (Mamba-1: Falcon Mamba, Jamba): a state a
                          * channel, no heads */
  STW_LINEAR_KDA,        /* Kimi Delta Attention (Kimi Linear's): Gated DeltaNet with a decay
                          * a channel, its gates through low-rank projections */
  STW_N_LINEAR_KINDS
} StwLinearKind;

#define STW_MODEL_MAX_NAME 128
#define STW_MODEL_MAX_LAYERS 4096

typedef struct {
  char name[STW_MODEL_MAX_NAME];
  StwArch arch;
  guint64 layers;     /* transformer blocks */
  guint64 hidden;     /* model width d */
  guint64 heads;      /* attention heads; hidden % heads == 0 unless head_dim is given */
  guint64 kv_heads;   /* key/value heads (grouped-query attention); heads % kv_heads == 0 */
  guint64 ffn;        /* MLP inner width (of each expert) */
  guint64 vocab;      /* token vocabulary */
  guint64 max_seq;    /* learned position table rows (gpt, bert); the longest sequence */
  gboolean tied;      /* the LM head is the token embedding */
  guint64 head_dim;   /* width of one attention head; 0: hidden / heads */
  StwBias bias[STW_N_SITES]; /* by StwBiasSite */
  guint64 experts;    /* MLP experts per block (mixture of experts, llama only); 0 or 1: dense */
  guint64 experts_per_token; /* experts each token is routed to (top-k); 0: 1 */
  guint64 shared_expert_ffn; /* with experts: a shared expert of this width that every token
                              * runs besides its routed ones, and its gate (Qwen2-MoE); 0: none */
  gboolean shared_expert_ungated; /* that shared expert without a gate of its own (DeepSeek's,
                                   * GLM-4.5's: n_shared_experts of them, one MLP) */
  guint64 dense_blocks[STW_MODEL_MAX_LAYERS / 64]; /* with experts: the blocks whose MLP is
                         * dense, dense_ffn wide, a bit each (block l: bit l % 64 of word l / 64),
                         * the experts' in the rest; the first ones (first_k_dense_replace:
                         * DeepSeek, GLM-4.5) or any (Llama 4 Maverick's every second,
                         * mlp_only_layers, mlp_layer_types). Through stw_model_block_dense and
                         * stw_model_set_block_dense. */
  guint64 dense_ffn;    /* their MLP's width */
  gboolean qk_norm;   /* an RMSNorm over each head's queries and keys before rotary positions
                       * (Qwen3; llama only), weights of head_dim each */
  StwNorms norms;     /* where a block's RMSNorms sit: before attention and the MLP (PRE, the
                       * default), after them too (BOTH: Gemma 2 and 3) or after them only
                       * (POST: OLMo 2), each after-norm on the output before its residual add,
                       * weights of hidden each (llama only) */
  gboolean qk_norm_full; /* with qk_norm: one RMSNorm over all the queries and one over all the
                          * keys, heads x head_dim and kv_heads x head_dim weights (OLMo 2),
                          * not one per head */
  gboolean head_bias;  /* the LM head has a bias, vocab wide (Phi-2, GPT-J) */
  guint64 token_types; /* bert's token-type embedding rows (type_vocab_size): 0 for the usual 2
                        * (RoBERTa has 1) */
  gboolean logit_softcap; /* the logits capped by c * tanh(x / c) before the loss (Gemma 2) */
  gboolean attn_softcap;  /* the attention scores capped so before the softmax (Gemma 2) */
  StwActivation activation; /* the MLP's, where not the architecture's (gpt, neox, bert) */
  StwNormType norm_type;    /* the block's and final norms' kind (gpt, neox, llama) */
  guint64 position_offset; /* learned positions (gpt, bert): the table's rows beyond max_seq,
                            * which no position uses (OPT's offset, RoBERTa's padding: 2) */
  gboolean attn_sinks;     /* a learned logit per head that joins each softmax (gpt-oss): heads
                            * parameters a block (llama only) */
  gboolean attn_gate;      /* an output gate on attention: a projection of the block's input as
                            * wide as the queries (gate_proj, no bias), its sigmoid times the
                            * heads' output before o_proj (AFMoE's; llama only) */
  gboolean attn_head_gate; /* a gate a head on softmax attention's output: a projection of the
                            * block's input to one scalar a head (g_proj, heads x hidden, no
                            * bias), its sigmoid times that head's output before o_proj
                            * (Bailing's; llama only) */
  gboolean alibi;          /* positions by ALiBi: a slope per head times the distance joins each
                            * score, no rotary op and no table, so no longest sequence but
                            * max_seq (BLOOM, Falcon's alibi; neox only) */
  gboolean embed_norm;     /* a LayerNorm over the token embeddings (BLOOM's; neox only) */
  gboolean diff_attn;      /* differential attention (DiffLlama's; llama only, no latent
                            * attention, kv_heads even): each head's softmax taken twice over
                            * its queries and keys, once with each half of the value heads
                            * (repeated to all of them), the two outputs combined head pair by
                            * head pair with learned lambdas (four vectors of head_dim a block)
                            * and normed by an RMSNorm without weights before o_proj */
  gboolean no_token_types; /* bert only: no token-type embeddings at all (BertGeneration's) */
  gboolean no_pooler;      /* bert only: no pooler (BertGeneration's encoder) */
  gboolean no_final_norm;  /* no norm between the last block and the LM head (OpenAI GPT's,
                            * whose blocks norm after each residual add; gpt, neox, llama) */
  gboolean router_score_bias; /* with experts: the router's per-expert score correction kept
                               * as a weight (ERNIE 4.5's moe_statics), experts weights a block
                               * of experts */
  gboolean sub_norms;      /* a norm over attention's output before o_proj and one over the
                            * MLP's activation before down_proj (BitNet's attn_sub_norm and
                            * ffn_sub_norm; llama only, dense MLPs, no latent attention) */
  gboolean attn_fp32;      /* the queries and keys cast to fp32 before their product: the
                            * scores computed, masked and softmaxed in fp32 (GPT-Neo's eager
                            * attention); changes no weight */
  StwBias attn_dropout;    /* whether training drops out the attention probabilities, and
                            * RESID_DROPOUT the residual branches and the embeddings, in the
                            * tri-state of the biases: DEFAULT takes the architecture's (gpt and
                            * bert: their configurations' 0.1; llama and neox: none), YES or NO
                            * what a configuration says (OPT: the residuals only) */
  StwBias resid_dropout;
  /* multi-head latent attention (DeepSeek-V2 and V3; llama only), where kv_lora_rank > 0: the
   * keys and values projected down to kv_lora_rank (and a rotary key rope_dim wide shared by the
   * heads), normed, and up again to each head's key part without positions (head_dim wide) and
   * value (v_head_dim wide); the queries projected down to q_lora_rank and normed first where it
   * is > 0, then up to each head's head_dim + rope_dim; attention over head_dim + rope_dim wide
   * queries and keys; the output projection reads heads x v_head_dim. kv_heads = heads. */
  guint64 kv_lora_rank;
  guint64 q_lora_rank;
  guint64 rope_dim;
  guint64 v_head_dim;
  /* DeepSeek's sparse attention (DSA; latent attention with q_lora_rank only), where index_heads
   * > 0: each block's indexer, forward only and never trained (its output chooses keys, which
   * carries no gradient): queries from the queries' latent (q_lora_rank to index_heads x
   * index_head_dim), one key from the block's input (index_head_dim, LayerNormed), a weight per
   * head from the input, and every query's score of every key in fp32; the attention then
   * masked to the chosen keys (computed whole in eager PyTorch). Without latent attention
   * (llama's own): MiniMax-M3's block indexer, its queries (index_heads x index_head_dim) and
   * one key from the block's input, each RMS-normed a head, every query's fp32 score of every
   * key max-pooled over blocks of keys, the best blocks chosen, the attention masked to them
   * (its mask heads x seq x seq, as eager PyTorch builds it) */
  guint64 index_heads;
  guint64 index_head_dim;
  /* with index_heads: the blocks whose attention has no indexer (MiniMax-M3's full-attention
   * blocks among its sparse ones), a bit each (through stw_model_block_indexed); none: an
   * indexer in every block */
  guint64 unindexed_blocks[STW_MODEL_MAX_LAYERS / 64];
  /* Gated DeltaNet's linear attention (Qwen3-Next, Qwen3.5; llama only, no latent attention) in
   * the blocks marked in linear_blocks (a bit each, as dense_blocks; through
   * stw_model_block_linear), softmax attention in the others: one projection of the block's
   * input to the queries and keys (linear_k_heads of linear_k_head_dim each), the values and
   * an output gate (linear_v_heads of linear_v_head_dim each) and a decay and a rate a value
   * head; a causal depthwise convolution linear_conv wide over the queries, keys and values; the
   * delta rule's recurrence over a state of linear_k_head_dim x linear_v_head_dim a value head
   * (run in chunks); an RMSNorm gated by the output gate; the output projection. */
  guint64 linear_blocks[STW_MODEL_MAX_LAYERS / 64];
  guint64 linear_k_heads, linear_v_heads, linear_k_head_dim, linear_v_head_dim, linear_conv;
  /* Mamba-2's mixer in those blocks instead (linear_kind STW_LINEAR_MAMBA2): linear_k_heads the
   * groups of its B and C (n_groups), linear_k_head_dim its state (d_state), linear_v_heads its
   * heads and linear_v_head_dim theirs (heads x head_dim its inner width, expand x hidden): one
   * projection of the input to x and z (inner each), B and C (groups x state each) and a step a
   * head; the convolution over x, B and C; a step bias, a decay and a skip (D) a head; the
   * chunked scan over a state of state x head_dim a head; an RMSNorm inner wide gated by z; the
   * output projection. Its convolution and projections biased where linear_conv_bias and
   * linear_proj_bias say (Mamba-2 and the short convolution).
   * A short convolution (STW_LINEAR_SHORT_CONV, LFM2's) has no heads (linear_k_heads,
   * linear_v_heads and their widths 0): one projection of the input to B, C and x (hidden
   * each), B x convolved depthwise linear_conv wide, C times that, the output projection.
   * Lightning attention (STW_LINEAR_LIGHTNING, MiniMax's) has no convolution (linear_conv 0) and
   * as many key as value heads of one width: q, k and v and an output gate projected from the
   * input (heads x width each), their decayed linear attention in blocks of 256 tokens over a
   * state of width x width a head, an RMSNorm over all the heads' output, its sigmoid gate,
   * the output projection.
   * Mamba-1's mixer (STW_LINEAR_MAMBA1) has one key and one value head: linear_v_head_dim its
   * inner width, linear_k_head_dim its state a channel, linear_dt_rank its step's rank: the
   * input projected to x and z (inner each), x convolved, projected to the step (dt_rank) and
   * B and C (state each), the step projected up to inner (with a bias), a decay a channel and
   * state (A) and a skip a channel (D), the selective scan, the gate, the output projection.
   * Kimi Delta Attention (STW_LINEAR_KDA) has as many key as value heads of one width: q, k and v
   * projected from the input (heads x width each), a forget gate's and an output gate's
   * projections down to one head's width and up to all of them, a rate a head; the
   * convolution over q, k and v; a decay bias a channel and a decay a head; the delta rule's
   * recurrence as Gated DeltaNet's; the gated RMSNorm a head wide; the output projection. */
  StwLinearKind linear_kind;
  guint64 linear_dt_rank;
  gboolean linear_norms; /* Mamba-1's step, B and C RMS-normed with weights (Jamba's) */
  gboolean linear_full_gates; /* Kimi Delta Attention's gates projected from the input straight
                               * to every channel, not through a head's width (Bailing's) */
  /* the convolution's bias, the input projection's (linear_proj_bias) and the output
   * projection's (linear_out_bias: the model format's linear_out_bias, else linear_proj_bias's) */
  gboolean linear_conv_bias, linear_proj_bias, linear_out_bias;
  gboolean linear_no_out_norm; /* Mamba-2's mixer without its gated RMSNorm: SiLU(z) alone gates
                                * the scan's output (Falcon-H1's mamba_rms_norm false) */
  gboolean linear_parallel; /* the linear blocks keep their softmax attention too: both mixers
                             * read the block's norm, their outputs summed (Falcon-H1's) */
  /* Blocks of one part (llama only, norms before): a norm and the mixer, no MLP (Mamba's every
   * block; Nemotron-H's Mamba-2 and attention layers), or a norm and the MLP, no mixer
   * (Nemotron-H's MLP and experts layers), a bit each (as dense_blocks; through
   * stw_model_block_mlp and stw_model_block_mixer). */
  guint64 mixer_only_blocks[STW_MODEL_MAX_LAYERS / 64];
  guint64 mlp_only_blocks[STW_MODEL_MAX_LAYERS / 64];
  gboolean mlp_ungated;  /* llama's MLPs (dense, experts and the shared one) without a gate: up,
                          * the activation (StwModelConfig.activation), down (Nemotron-H's
                          * relu^2) */
  guint64 expert_latent; /* with experts: the routed experts read and write this width, a
                          * projection of the block's input down to it before them and one up
                          * after (Nemotron 3's moe_latent_size); 0: hidden */
  gboolean no_rope;      /* llama's softmax attention without positions: no rotary op
                          * (Nemotron-H's); changes no weight */
  /* Gemma 4's blocks of global attention among sliding ones (llama only, without latent or
   * linear attention), a bit each (through stw_model_block_global): their heads global_head_dim
   * wide (0: head_dim's) with global_kv_heads key/value heads (0: kv_heads), their values the
   * keys where global_values_are_keys (no v projection: attention_k_eq_v). */
  guint64 global_blocks[STW_MODEL_MAX_LAYERS / 64];
  guint64 global_head_dim, global_kv_heads;
  gboolean global_values_are_keys;
  /* Blocks that reuse an earlier block's keys and values (llama only, without latent or linear
   * attention): no key or value projection and no key norm (Gemma 4's num_kv_shared_layers);
   * their MLP twice ffn wide where kv_shared_wide_mlp (use_double_wide_mlp; dense MLPs only). */
  guint64 kv_shared_blocks[STW_MODEL_MAX_LAYERS / 64];
  gboolean kv_shared_wide_mlp;
  /* Gemma 4's per-layer embeddings, where per_layer_input > 0 (llama only): a table of
   * per_layer_vocab rows, layers x per_layer_input wide, and a projection of the embeddings to
   * as many (hidden x layers x per_layer_input) with a norm per_layer_input wide, their sum
   * each block's own input; in each block after its MLP, a third residual branch: a gate
   * (per_layer_input x hidden), its activation times the block's input, a projection back
   * (hidden x per_layer_input) and a norm (hidden). */
  guint64 per_layer_input, per_layer_vocab;
  gboolean global_no_sinks; /* with attn_sinks and global_blocks: the sinks in the other blocks
                             * only (MiMo-V2-Flash's sliding ones) */
  gboolean attn_gate_in_q;  /* with attn_gate: its rows q_proj's, one projection to the queries
                             * and the gate (Qwen3-Next's, Qwen3.5's; LoRA's q adapts both), not
                             * a gate_proj of its own (AFMoE's); the same weights */
  gboolean experts_post_norm; /* in the blocks of experts, a norm over their output (and the
                              * shared experts') before the residual add (A.X K1's
                              * post_mlp_layernorm; norms before only) */
  guint64 head_vocab;       /* the LM head's rows where fewer than vocab (Apertus 1.5's pruned
                            * output_vocab_size: its logits and loss that wide); 0: vocab */
  gboolean experts_normed; /* with experts and a shared expert: Gemma 4's MoE block, the experts
                            * beside its dense MLP (the shared expert): their input normed apart
                            * and each branch's output normed (three norms, hidden each), the
                            * router's input scaled by a weight a channel and its choices by one
                            * an expert */
  /* Gemma 3n's alternating updates, where altup_inputs > 1 (llama only): the residual stream
   * altup_inputs copies wide, the others made from the embeddings by a projection each (hidden
   * x hidden) and merged back before the final norm by another; in each block a prediction of
   * every copy from all of them before it (a router: a norm and altup_inputs x hidden; its
   * coefficients, altup_inputs^3) and a correction after it (altup_inputs^2, and a scale a
   * channel), the block itself running on the first copy. */
  guint64 altup_inputs;
  /* Gemma 3n's learned augmented residual (LAuReL), where laurel_rank > 0 (llama only): beside
   * each block's attention, its normed input through hidden x laurel_rank and back and a norm,
   * added to the residual. */
  guint64 laurel_rank;
  /* with experts: the router's choices that are no expert (LongCat-Flash's zero-computation
   * experts, each returning its input): zero_experts more rows in the router, a token's
   * experts_per_token choices among experts + zero_experts, its routed work that of the share
   * of them that are experts (stw_model_routed_experts) */
  guint64 zero_experts;
  /* A vision tower beside the language model, where vision_layers > 0: a multimodal checkpoint
   * that AutoModelForCausalLM builds whole (Gemma 3's), trained on text. SigLIP's encoder (a
   * patch embedding of vision_channels x vision_patch^2 x vision_hidden and a bias, a position
   * embedding a patch, (vision_image / vision_patch)^2 of them, vision_layers blocks of two
   * LayerNorms, q, k, v and out projections with biases and an MLP vision_ffn wide, a final
   * LayerNorm; with vision_pooling_head SigLIP's attention-pooling head) and Gemma 3's projector
   * (vision_hidden x hidden and an RMSNorm). Its weights are held and read by no op of a text
   * step, so never given a gradient or optimizer state (PyTorch's optimizers keep none for a
   * parameter without a gradient). */
  guint64 vision_layers, vision_hidden, vision_ffn, vision_channels, vision_patch, vision_image;
  gboolean vision_pooling_head;
  /* vision_kind gemma4 (Gemma 4's tower): a patch embedding of 3 x vision_patch^2 x
   * vision_hidden without a bias, a position table of 2 x vision_positions rows, vision_layers
   * blocks of four RMSNorms, q, k, v and o projections (vision_heads and vision_kv_heads of
   * vision_head_dim) with a norm over each head's queries and keys, and a gated MLP vision_ffn
   * wide, none biased; its embedder a projection to hidden (vision_channels and vision_image
   * unused: 0). */
  StwVisionKind vision_kind;
  guint64 vision_heads, vision_kv_heads, vision_head_dim, vision_positions;
  /* vision_kind pixtral (Mistral 3's tower): a patch embedding of vision_channels x
   * vision_patch^2 x vision_hidden without a bias, an RMSNorm, vision_layers blocks of two
   * RMSNorms, bias-free q, k, v and o projections vision_hidden wide and a gated MLP vision_ffn
   * wide; Mistral 3's projector: an RMSNorm, a patch merger of vision_merge^2 x vision_hidden to
   * vision_hidden, and two projections, vision_feature_layers x vision_hidden to hidden and hidden
   * to hidden, biased where vision_projector_bias (vision_image unused: 0). */
  guint64 vision_merge, vision_feature_layers;
  gboolean vision_projector_bias;
  /* vision_kind clip (LLaVA's tower): a class embedding, a patch embedding of vision_channels x
   * vision_patch^2 without a bias, a position embedding a patch of (vision_image /
   * vision_patch)^2 and one more, a LayerNorm before and after SigLIP's blocks; LLaVA's
   * projector, Mistral 3's two projections alone (vision_feature_layers, vision_projector_bias). */
  /* vision_kind qwen2_vl, qwen2_5_vl, qwen3_vl (the Qwen-VL towers): a patch embedding of
   * vision_channels x vision_temporal_patch x vision_patch^2 x vision_hidden (Qwen3-VL's with a
   * bias, and a position table of vision_positions rows), vision_layers blocks of two norms
   * (Qwen2.5-VL's RMSNorms, the others' LayerNorms), a fused q, k and v projection and an output
   * projection, biased, and an MLP vision_ffn wide, biased (Qwen2.5-VL's gated); a patch merger:
   * a norm, vision_merge^2 x vision_hidden to as wide and to vision_out, biased; Qwen3-VL's
   * vision_deepstack mergers more, each normed after its merge (vision_image unused: 0). */
  guint64 vision_temporal_patch, vision_deepstack, vision_out;
  /* The projector (DEFAULT: the tower's own); LLaVA's with vision_newline: LLaVA-NeXT's
   * image_newline, hidden values; PaliGemma's: vision_hidden to vision_out and a bias. */
  StwVisionProjector vision_projector;
  gboolean vision_newline;
  /* vision_kind internvl (InternViT): a class token, a position a patch and one more, a patch
   * embedding of vision_channels x vision_patch^2 with a bias; vision_layers blocks of two
   * norms (RMSNorms where vision_rms_norm, else LayerNorms), q, k and v (biased where
   * vision_attn_bias) with an RMSNorm over all the queries and one over the keys where
   * vision_qk_norm, a biased output projection, a biased MLP and two layer scales; a final
   * LayerNorm where vision_final_norm; InternVL's projector: a LayerNorm over vision_merge^2 x
   * vision_hidden, to hidden and to hidden, biased. */
  gboolean vision_qk_norm, vision_attn_bias, vision_rms_norm, vision_final_norm;
  /* vision_kind mllama (Llama 3.2 Vision's tower): a class embedding, a patch embedding of
   * vision_channels x vision_patch^2 without a bias, gated position embeddings (a position a
   * patch and one more; a row a tile of vision_tiles for each of vision_aspect_ratios + 1 aspect
   * ratios, before and after the blocks too), LayerNorms before and after, vision_layers blocks
   * (bias-free q, k, v, o, a biased MLP, two LayerNorms) and vision_global_layers more with two
   * gates; its projector vision_features to hidden, biased (vision_projector mllama); and
   * vision_cross_layers of the language model's blocks that attend to the image alone
   * (cross-attention: q, k, v and o of the language model's heads, an RMSNorm over each head's
   * queries and keys, an MLP ffn wide, two RMSNorms and two gates), which a text step skips. */
  guint64 vision_global_layers, vision_tiles, vision_aspect_ratios, vision_features;
  guint64 vision_cross_layers;
  /* vision_kind qwen2_5_vl: its blocks attend within windows of vision_window x vision_window
   * pixels (window_size, 112), but those in vision_full_blocks (fullatt_block_indexes), which
   * attend over the whole image; no weight changes (vision_window 0: every block over it). */
  guint64 vision_window;
  guint64 vision_full_blocks[STW_MODEL_MAX_LAYERS / 64];
  /* vision_kind glm4v (GLM-4.1V's and GLM-4.5V's tower): a position a patch, a patch embedding
   * of vision_channels x vision_temporal_patch x vision_patch^2 with a bias, an RMSNorm after
   * it and one after the blocks; vision_layers blocks of two RMSNorms, a fused q, k and v
   * projection (biased where vision_attn_bias) and a bias-free output projection, a gated MLP
   * vision_out wide, bias-free; its merger: a strided convolution of vision_merge^2 x
   * vision_hidden to vision_out with a bias, vision_out to vision_out, a LayerNorm, and a gated
   * MLP vision_ffn wide, bias-free. */
  /* Gemma 4's audio tower, where audio_layers > 0: two convolutions of 3 x 3 to audio_conv and
   * audio_conv2 channels (each with a LayerNorm's weight) and a projection of (audio_conv / 4) x
   * audio_conv2 to audio_hidden; audio_layers Conformer blocks (two feed-forwards 4 x
   * audio_hidden wide, attention of audio_heads heads with a relative-position projection and a
   * scale a head channel, a light convolution audio_kernel wide, their RMSNorms); an output
   * projection to audio_output with a bias; its embedder a projection to hidden. Read by no op
   * of a text step, as the vision tower. */
  guint64 audio_layers, audio_hidden, audio_heads, audio_conv, audio_conv2, audio_kernel;
  guint64 audio_output; /* (the towers' members, vision_layers to here, are the struct's last:
                         * stw_model_tower_param_count clears them together) */
} StwModelConfig;

/* The projector CFG's vision tower feeds (its vision_projector, or the tower's own). */
StwVisionProjector stw_model_vision_projector(const StwModelConfig *cfg);
/* Whether CFG's projections at SITE have biases (its bias[] or its architecture's default). */
gboolean stw_model_has_bias(const StwModelConfig *cfg, StwBiasSite site);
/* Whether CFG trains with dropout on the attention probabilities, and on the residual branches
 * and embeddings (its attn_dropout and resid_dropout, or its architecture's default). */
gboolean stw_model_attn_dropout(const StwModelConfig *cfg);
gboolean stw_model_resid_dropout(const StwModelConfig *cfg);
/* CFG's MLP activation, its architecture's where it says STW_ACT_DEFAULT (gpt: GELU-new; neox,
 * bert: GELU; llama gates its own and says GELU). */
StwActivation stw_model_activation(const StwModelConfig *cfg);
/* Whether CFG's MLP computes GELU with tanh's approximation op by op (GELU-new). */
gboolean stw_model_gelu_new(const StwModelConfig *cfg);
/* The width of one attention head: head_dim, or hidden / heads (with latent attention, the
 * keys' part without positions). */
guint64 stw_model_head_dim(const StwModelConfig *cfg);
/* One head's query and key width (head_dim, and rope_dim with latent attention) and its value
 * width (head_dim, or v_head_dim with latent attention). */
guint64 stw_model_qk_head_dim(const StwModelConfig *cfg);
guint64 stw_model_v_head_dim(const StwModelConfig *cfg);
/* Experts per block (1 for a dense MLP) and experts active per token (1 for a dense MLP). */
guint64 stw_model_experts(const StwModelConfig *cfg);
guint64 stw_model_active_experts(const StwModelConfig *cfg);
/* The experts a token runs through: its active experts, less the choices of zero experts as
 * uniform routing expects them (experts_per_token x experts / (experts + zero_experts), to the
 * nearest, at least 1), which LongCat-Flash's router is trained to hold on average. */
guint64 stw_model_routed_experts(const StwModelConfig *cfg);
/* Whether block L of CFG has a dense MLP among blocks of experts (FALSE past its blocks and
 * without experts), and marking it so. */
gboolean stw_model_block_dense(const StwModelConfig *cfg, guint64 l);
void stw_model_set_block_dense(StwModelConfig *cfg, guint64 l, gboolean dense);
/* CFG's dense blocks: how many of its blocks are dense, and N where they are its first N (0 for
 * none), else G_MAXUINT64. */
guint64 stw_model_dense_blocks(const StwModelConfig *cfg);
guint64 stw_model_dense_prefix(const StwModelConfig *cfg);
/* Whether block L of CFG mixes by linear attention (FALSE past its blocks), and marking it so;
 * how many of its blocks do. */
gboolean stw_model_block_linear(const StwModelConfig *cfg, guint64 l);
void stw_model_set_block_linear(StwModelConfig *cfg, guint64 l, gboolean linear);
guint64 stw_model_linear_blocks(const StwModelConfig *cfg);
/* Whether block L of CFG has an MLP, and a mixer (attention or linear); marking it so (FALSE
 * past its blocks); how many of its blocks have an MLP. */
gboolean stw_model_block_mlp(const StwModelConfig *cfg, guint64 l);
gboolean stw_model_block_mixer(const StwModelConfig *cfg, guint64 l);
void stw_model_set_block_mlp(StwModelConfig *cfg, guint64 l, gboolean mlp);
void stw_model_set_block_mixer(StwModelConfig *cfg, guint64 l, gboolean mixer);
guint64 stw_model_mlp_blocks(const StwModelConfig *cfg);
/* Whether block L of CFG is one of global attention (global_blocks), and one that reuses an
 * earlier block's keys and values (kv_shared_blocks); marking it so. */
gboolean stw_model_block_global(const StwModelConfig *cfg, guint64 l);
gboolean stw_model_block_kv_shared(const StwModelConfig *cfg, guint64 l);
void stw_model_set_block_global(StwModelConfig *cfg, guint64 l, gboolean global);
void stw_model_set_block_kv_shared(StwModelConfig *cfg, guint64 l, gboolean shared);
/* Whether block L of CFG has a sparse-attention indexer (index_heads, but for unindexed_blocks);
 * marking it so. */
gboolean stw_model_block_indexed(const StwModelConfig *cfg, guint64 l);
void stw_model_set_block_indexed(StwModelConfig *cfg, guint64 l, gboolean indexed);
/* Whether block L of CFG's vision tower attends over the whole image (vision_full_blocks);
 * marking it so. */
gboolean stw_model_vision_full_block(const StwModelConfig *cfg, guint64 l);
void stw_model_set_vision_full_block(StwModelConfig *cfg, guint64 l, gboolean full);
/* The LM head's rows: head_vocab, or vocab. */
guint64 stw_model_head_vocab(const StwModelConfig *cfg);
/* Block L's attention head width and key/value heads (its global ones in a global block). */
guint64 stw_model_block_head_dim(const StwModelConfig *cfg, guint64 l);
guint64 stw_model_block_kv_heads(const StwModelConfig *cfg, guint64 l);
/* Whether any block of CFG runs softmax attention: one not linear, or every linear one beside
 * its mixer (linear_parallel). */
gboolean stw_model_has_softmax(const StwModelConfig *cfg);

/* Limits on configurations read from files (hostile input must not allocate without bound). */
#define STW_MODEL_MAX_POSITION_OFFSET 1024
#define STW_MODEL_MAX_WIDTH (1u << 20)
#define STW_MODEL_MAX_VOCAB (1u << 24)
#define STW_MODEL_MAX_SEQ (1u << 24)
#define STW_MODEL_MAX_EXPERTS 1024
#define STW_MODEL_MAX_TOKEN_TYPES 1024
#define STW_MODEL_MAX_PARAMS (G_GUINT64_CONSTANT(1) << 53) /* counted exactly in files */

/* The zoo. */
typedef struct {
  const char *family;   /* "gpt2", "gpt3", "patrickstar", "llama", "bert" */
  const char *note;     /* where the configuration comes from */
  StwModelConfig config;
} StwZooEntry;

/* The zoo's families, NULL-terminated. */
extern const char *const stw_zoo_families[];

/* The zoo, static: *N_OUT entries, never NULL. */
const StwZooEntry *stw_zoo_entries(gsize *n_out);
/* Finds a zoo model by name; the error (STW_MODEL_ERROR_UNKNOWN) lists the zoo's names. The
 * functions below: STW_MODEL_ERROR_INVALID (sizes that make no model), and from a file
 * STW_FILES_ERROR (the file), STW_JSON_ERROR (its text). */
gboolean stw_zoo_lookup(const char *name, StwModelConfig *out, GError **error);
/* A zoo name, or else a path to a JSON model config: stowage's format or a Hugging Face
 * config.json (told apart by its "model_type" member). */
gboolean stw_model_resolve(const char *name_or_file, StwModelConfig *out, GError **error);

/* Checks sizes and divisibility; FILE (may be NULL) names the source. */
gboolean stw_model_config_validate(const StwModelConfig *cfg, const char *file, GError **error);
gboolean stw_model_config_load(const char *file, StwModelConfig *out, GError **error);
gboolean stw_model_config_parse(const char *file, const char *text, gsize len,
                                StwModelConfig *out, GError **error);
/* The Hugging Face model types read from a config.json, NULL-terminated. */
extern const char *const stw_hf_model_types[];
/* Exact parameter count of a valid model (at most STW_MODEL_MAX_PARAMS: validation refuses
 * more); G_MAXUINT64 for one beyond it. */
guint64 stw_model_param_count(const StwModelConfig *cfg);
/* The parameters one token's forward pass uses: all but the experts it is not routed to (with
 * zero experts, the routed share of its choices: stw_model_routed_experts). */
guint64 stw_model_active_param_count(const StwModelConfig *cfg);
/* The parameters of CFG's vision and audio towers and their projectors (0 without them): held,
 * and read by no op of a text step. */
guint64 stw_model_tower_param_count(const StwModelConfig *cfg);
/* The bytes of CFG's model data in mixed-precision Adam: 14 a parameter (a 16-bit weight, an
 * fp32 master and two fp32 moments), 2 a parameter no step reads (its weight alone). */
guint64 stw_model_data_bytes(const StwModelConfig *cfg);
/* The records `stowage models --json` prints, new strings the caller frees (g_free): one model
 * ("model": a model file in stowage's format, which loads where a model goes; "params",
 * "active_params", "model_bytes_16bit"), and the zoo, FAMILY's members only (NULL: all). */
char *stw_model_record_json(const StwModelConfig *cfg);
char *stw_zoo_json(const char *family);

/* The operator graph of one forward pass. Backward runs the same ops in reverse. */
typedef enum {
  STW_RESIDUAL_NONE,
  STW_RESIDUAL_OPEN,  /* first op of a residual block: backward adds the skipped gradient here */
  STW_RESIDUAL_CLOSE, /* the op that adds the block's input back */
} StwResidual;

/* What an op of the graph does in its architecture: the trainer dispatches on it. */
typedef enum {
  STW_OP_EMBED,          /* token embeddings (and positions, token types) */
  STW_OP_NORM_EMBED,     /* the norm of the embeddings (BERT) */
  STW_OP_NORM_ATTN,      /* the norm before attention (pre-norm: ln_1) */
  STW_OP_ATTN_QKV,       /* the query, key and value projections */
  STW_OP_ROPE,           /* rotary positions on queries and keys */
  STW_OP_ATTN_CORE,      /* scaled dot-product attention */
  STW_OP_ATTN_OUT,       /* the attention's output projection, the residual added */
  STW_OP_NORM_POST_ATTN, /* the norm after attention (post-norm, BERT) */
  STW_OP_NORM_MLP,       /* the norm before the MLP (pre-norm: ln_2) */
  STW_OP_MLP_IN,         /* the MLP's up (and gate) projection */
  STW_OP_MLP_ACT,        /* the MLP's activation (GELU, SwiGLU) */
  STW_OP_MLP_OUT,        /* the MLP's down projection, the residual added */
  STW_OP_NORM_POST_MLP,  /* the norm after the MLP (post-norm, BERT) */
  STW_OP_NORM_FINAL,     /* the final norm (ln_f) */
  STW_OP_POOLER,         /* BERT's pooler */
  STW_OP_LM_HEAD,        /* the projection to the vocabulary */
  STW_OP_LOSS,           /* cross-entropy */
  STW_OP_MOE_ROUTER,     /* a mixture of experts' router: a score per expert, top-k chosen */
  STW_OP_NORM_QK,        /* RMSNorms over each head's queries and keys (Qwen3) */
  STW_OP_LOGIT_SOFTCAP,  /* the logits capped: c * tanh(x / c) (Gemma 2) */
  STW_OP_INDEXER,        /* a sparse-attention indexer choosing each query's keys (DeepSeek's
                          * DSA): projections and fp32 scores, forward only */
  STW_OP_LINEAR_ATTN,    /* a linear attention's mixing (Gated DeltaNet's): convolution, the
                          * delta rule's chunked recurrence, the gated norm */
  STW_OP_ALTUP,          /* AltUp's prediction or correction of the residual stream's copies
                          * (Gemma 3n): a router and per-token coefficients mixing the copies */
  STW_N_OP_KINDS
} StwOpKind;

typedef struct {
  char *name;
  StwOpKind kind;
  gint32 layer;               /* transformer block, -1 outside the blocks */
  GArray *params;             /* guint32 tensor ids read; backward writes their gradients */
  guint64 flops;              /* forward FLOPs; backward is modelled as twice this */
  guint64 in_bytes;           /* the activation consumed (the previous op's output) */
  guint64 out_bytes;          /* the activation produced */
  guint64 saved_extra_bytes;  /* kept for backward besides the input (softmax, norm stats) */
  guint64 work_bytes;         /* forward transient, freed before the op ends */
  guint64 bwd_work_bytes;     /* backward transient */
  gboolean saves_input;       /* the input stays live until this op's backward */
  gboolean passthrough;       /* reads the current activation without consuming it */
  gboolean outside_roles;     /* a projection none of LoRA's roles names: not attention's q, k,
                               * v or o nor the MLP's (a linear mixer's in_proj and out_proj:
                               * Mamba's, Gated DeltaNet's, a short convolution's; Gemma 4's
                               * per-layer input gate and projection) */
  gboolean no_grad;           /* forward only (torch.no_grad): no backward, nothing kept, and
                               * the weights only it reads never trained */
  gboolean image;             /* an op of images through the vision tower and its projector
                               * (stw_model_graph_add_images): its sizes are the tower's own,
                               * not the language model's */
  gboolean rms;               /* with IMAGE, a norm: an RMSNorm (else a LayerNorm) */
  gboolean no_input_grad;     /* its backward computes no gradient for its input (what feeds it
                               * is not differentiated: a frozen tower below a trained
                               * projector) */
  StwResidual residual;
} StwGraphOp;

typedef struct {
  char *name;
  guint32 ndim;
  guint64 shape[2];
  guint64 numel;
  GPtrArray *aliases;         /* char*: names of tied uses ("lm_head.weight") */
} StwGraphTensor;

typedef struct {
  StwModelConfig config;
  guint64 batch, seq;
  StwDtype dtype;
  StwAttention attention;
  StwLoss loss;               /* full unless stw_model_graph_chunk_loss made it chunked */
  GPtrArray *tensors;         /* StwGraphTensor* */
  GPtrArray *ops;             /* StwGraphOp* */
  guint64 io_bytes;           /* token ids, targets, masks (and images' pixels): live for the
                               * whole fwd and bwd */
  /* the tensor ids of the vision tower, [vision_first, vision_end), its projector's from
   * projector_first (all three tensors->len when the model has none) */
  guint32 vision_first, projector_first, vision_end;
} StwModelGraph;

/* The graph of a valid configuration CFG (stw_model_config_validate) for BATCH sequences of SEQ
 * tokens: never NULL; the caller frees it with stw_model_graph_free. */
StwModelGraph *stw_model_graph_new(const StwModelConfig *cfg, guint64 batch, guint64 seq,
                                   StwDtype dtype, StwAttention attention);
void stw_model_graph_free(StwModelGraph *graph);

/* The loss of GRAPH computed in pieces (STW_LOSS_CHUNKED), as Liger's FusedLinearCrossEntropy
 * does it: the tokens split into pieces of stw_model_loss_piece tokens, each piece's logits
 * computed, turned into their gradient in place and multiplied into the gradients of the hidden
 * states and of the LM head's weight (WEIGHT_GRAD: it is trained), which stay from the forward
 * to the backward; no logits are kept. The FLOPs stay where the unfused ops have them (the
 * iteration's total is the same). */
void stw_model_graph_chunk_loss(StwModelGraph *graph, gboolean weight_grad);
/* The loss of GRAPH in its logits' own dtype (STW_LOSS_NATIVE): the shifted logits' copy and
 * log_softmax's output in the compute dtype, not fp32, forward and backward. */
void stw_model_graph_native_loss(StwModelGraph *graph);
/* Tokens a piece of the chunked loss holds for T tokens, VOCAB logits each from WIDTH-wide hidden
 * states: Liger's choice, about as many logits as the hidden states have elements (the next
 * power of two of T / ceil(VOCAB / WIDTH)), at most T. */
guint64 stw_model_loss_piece(guint64 tokens, guint64 vocab, guint64 width);

/* What of a vision-language model images train (stw_model_graph_add_images). */
typedef enum {
  STW_VISION_TRAINED_NONE,      /* neither tower nor projector: forward only */
  STW_VISION_TRAINED_PROJECTOR, /* the projector (LLaVA's pretraining, Qwen-VL's tune_mm_mlp),
                                 * the tower frozen below it */
  STW_VISION_TRAINED_ALL,       /* the tower and the projector */
  STW_N_VISION_TRAINED
} StwVisionTrained;
extern const char *const stw_vision_trained_names[]; /* "none", "projector", "all" */

/* What an image of a vision-language model becomes (stw_model_image_tokens). */
typedef struct {
  guint64 side;    /* the image's side in patches */
  guint64 patches; /* side^2: the patch embedding's rows */
  guint64 tower;   /* the tokens each block of the tower attends over: the patches, and a class
                    * token (CLIP's, InternViT's) */
  guint64 merged;  /* the image's features after the projector merges patches (Qwen-VL's merger,
                    * a pixel shuffle, Gemma 3's pooling to 256): what the language model reads */
  guint64 window;  /* the patches a side of an attention window (Qwen2.5-VL's windowed blocks),
                    * 0: every block attends over the whole image */
} StwImageTokens;

/* The largest image side stw_model_image_tokens takes, in pixels; the most images a sequence
 * holds (stw_model_graph_add_images). */
#define STW_MODEL_MAX_IMAGE 16384
#define STW_MODEL_MAX_IMAGES 4096

/* The side of the images CFG's vision tower takes when not told (its configuration's
 * image_size: the size its processor resizes images, or their tiles, to); 0 where it takes
 * images of any size (Qwen-VL's, Pixtral's, GLM-4V's). */
guint64 stw_model_image_size(const StwModelConfig *cfg);
/* The step of the image sides CFG's tower takes where it takes any: a patch, or a merged patch
 * where its processor resizes to those (Qwen-VL's, GLM-4V's, Mistral 3's: vision_patch x
 * vision_merge pixels). */
guint64 stw_model_image_step(const StwModelConfig *cfg);

/* What an image of PX x PX pixels becomes in CFG's vision tower, in *OUT; FALSE with ERROR
 * (STW_MODEL_ERROR_INVALID) where CFG has no vision tower, its tower takes no such image (a
 * fixed-size tower's other sizes, a side that is not a whole number of the patches it merges),
 * or stowage does not model images through it (Llama 3.2 Vision's cross-attention, Gemma 4's
 * pooling). */
gboolean stw_model_image_tokens(const StwModelConfig *cfg, guint64 px, StwImageTokens *out,
                                GError **error);

/* IMAGES images of PX x PX pixels in each of GRAPH's sequences, run through its vision tower and
 * projector before the language model reads their features (docs/synth.md, "Images"): one op
 * per matmul at the rows it is applied to, per norm, per block's attention, and the features'
 * merge into the embeddings; their pixels (fp32, as processors give them) in io_bytes. The ops
 * of what TRAINED leaves frozen run forward only (no_grad); the trained ones keep their inputs
 * for a backward. FALSE with ERROR (STW_MODEL_ERROR_INVALID) as stw_model_image_tokens, or where
 * the sequence cannot hold the images' tokens. */
gboolean stw_model_graph_add_images(StwModelGraph *graph, guint64 images, guint64 px,
                                    StwVisionTrained trained, GError **error);

/* LoRA target roles: "q", "k", "v", "o", "gate", "up", "down" (NULL-terminated). */
extern const char *const stw_lora_target_names[];

/* LoRA adapters on GRAPH's projections: for each weight W (out x in) that TARGETS names by role
 * (comma-separated stw_lora_target_names; NULL: "q,v"; a fused q, k and v weight serves each of
 * the three, an MLP without a gate has none), tensors NAME.lora_A.weight [RANK, in] and
 * NAME.lora_B.weight [out, RANK] appended to the graph and read by W's op, which gains their
 * FLOPs (2 T RANK (in + out)) and keeps x A^T for backward. *N_BASE: the tensors before them
 * (the base a LoRA run freezes). FALSE with ERROR (STW_MODEL_ERROR_INVALID) for an unknown
 * target, a target the model lacks, an MLP target on a mixture of experts, or a rank outside 1
 * to the narrowest adapted weight's side. */
gboolean stw_model_graph_add_lora(StwModelGraph *graph, guint64 rank, const char *targets,
                                  guint32 *n_base, GError **error);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwModelGraph, stw_model_graph_free)

/* The model data of mixed-precision Adam: four copies of every parameter, which the planner keeps
 * in four chunk lists (DESIGN.md, "The model data, in chunks"). */
typedef enum {
  STW_LIST_PARAM,    /* compute copy; holds the gradient once backward is done with it */
  STW_LIST_MASTER,   /* fp32 master weights */
  STW_LIST_MOMENTUM, /* Adam first moment, in the optimizer state's dtype (fp32 or bf16) */
  STW_LIST_VARIANCE, /* Adam second moment, likewise */
  STW_N_LISTS
} StwChunkList;

extern const char *const stw_chunk_list_names[]; /* NULL-terminated, in enum order */
const char *stw_chunk_list_name(StwChunkList list);
/* Bytes per element of LIST for a tensor whose compute dtype is DTYPE, with the moments in STATE
 * (STW_DTYPE_FP32 or STW_DTYPE_BF16). */
guint64 stw_chunk_list_elem_bytes(StwChunkList list, StwDtype dtype, StwDtype state);

/* The optimizer state's dtypes: Adam's moments in fp32 or bf16 ("fp32", "bf16"); the master
 * weights are fp32 in both. */
extern const char *const stw_state_dtype_names[]; /* NULL-terminated: "fp32", "bf16" */
StwDtype stw_state_dtype_at(int index);           /* an index into the names */
const char *stw_state_dtype_name(StwDtype state);
gboolean stw_state_dtype_parse(const char *text, StwDtype *out);

/* The names below are static strings, never NULL for a value of the enum. */
guint64 stw_dtype_bytes(StwDtype dtype);
const char *stw_dtype_name(StwDtype dtype);
gboolean stw_dtype_parse(const char *text, StwDtype *out);
const char *stw_arch_name(StwArch arch);
const char *stw_attention_name(StwAttention attention);
const char *stw_kernels_name(StwKernels kernels);
const char *stw_optimizer_impl_name(StwOptimizerImpl impl);
const char *stw_loss_name(StwLoss loss);
const char *stw_bias_name(StwBias bias);

extern const char *const stw_dtype_names[];     /* NULL-terminated, in enum order */
extern const char *const stw_arch_names[];
extern const char *const stw_attention_names[];
extern const char *const stw_kernels_names[];   /* "fused", "eager" */
extern const char *const stw_optimizer_impl_names[]; /* "fused", "foreach", "for-loop",
                                                     * "deepspeed" */
extern const char *const stw_loss_names[];      /* "full", "chunked", "native" */
extern const char *const stw_collectives_names[]; /* "overlapped", "blocking" */
extern const char *const stw_init_names[];      /* "sharded", "host", "host-fp32" */
extern const char *const stw_checkpoints_names[]; /* "device", "host" */
extern const char *const stw_bias_names[];      /* "default", "yes", "no" */
extern const char *const stw_bias_site_names[]; /* "qkv_bias", "out_bias", "mlp_bias" */
extern const char *const stw_op_kind_names[];  /* NULL-terminated, in enum order */
extern const char *const stw_norms_names[];     /* "pre", "both", "post" */
extern const char *const stw_vision_kind_names[]; /* "siglip", "gemma4", "pixtral", "clip",
                                                   * "qwen2_vl", "qwen2_5_vl", "qwen3_vl",
                                                   * "internvl", "mllama", "glm4v" */
extern const char *const stw_vision_projector_names[]; /* "default", "gemma3", "gemma4",
                                                        * "mistral3", "llava", "paligemma",
                                                        * "qwen", "idefics3", "internvl",
                                                        * "mllama", "glm4v", "aya" */
extern const char *const stw_linear_kind_names[]; /* "gdn", "mamba2", "short_conv",
                                                   * "lightning", "mamba1", "kda" */
extern const char *const stw_activation_names[]; /* "default", "gelu_new", "gelu", "relu" */
extern const char *const stw_norm_type_names[]; /* "default", "layernorm", "layernorm_no_bias",
                                                 * "layernorm_no_affine", "rmsnorm",
                                                 * "rmsnorm_no_affine" */
/* Whether CONFIG's block and final norms are RMSNorms (a llama-style block's default), and
 * whether they have a weight, and a bias. */
gboolean stw_model_rms_norm(const StwModelConfig *config);
gboolean stw_model_norm_weight(const StwModelConfig *config);
gboolean stw_model_norm_bias(const StwModelConfig *config);

STW_END_DECLS

#endif
