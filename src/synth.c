/* synth.c — synthesize a trace from a model graph; the memory model is docs/synth.md. */
#include "config.h"

#include <stowage/synth.h>

#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(stw-synth-error-quark, stw_synth_error)

typedef struct {
  StwTrace *trace;
  const StwModelGraph *graph;
  const StwHardware *hw;
  StwKernels kernels;     /* how the ops between GEMMs run */
  double host_ns, gpu_ns; /* eager, and a for-loop optimizer: when the host has issued the last
                           * kernel, and when the GPU finishes it */
  guint64 e;              /* activation element bytes */
  guint64 live;           /* non-model bytes live now */
  GArray *residuals;      /* guint64: skipped gradients waiting for their block's start */
  gboolean framework;     /* gradients are the framework's tensors (several micro-steps) */
  gboolean host_gradients; /* ... copied to the host after the op that writes them */
  guint32 *writes_left;   /* per tensor, with HOST_GRADIENTS: the ops of this micro-step's
                           * backward still to write its gradient (a tied weight's several) */
  guint8 *has_grad;       /* per tensor, with FRAMEWORK: its gradient tensor exists */
  gboolean autocast;      /* fp32 weights cast to the compute dtype at each GEMM's use */
  guint64 cached;         /* with AUTOCAST, in a checkpointed forward: the casts autocast's
                           * cache holds to the forward's end */
} Synth;

/* Whether op G's time is its GEMMs' (projections; attention's scores and weighted sum, fused or
 * not) rather than its memory traffic's (norms, activations, residuals, embeddings, the loss). */
static gboolean
is_matmul(const StwGraphOp *g)
{
  switch (g->kind) {
  case STW_OP_ATTN_QKV:
  case STW_OP_ATTN_CORE:
  case STW_OP_ATTN_OUT:
  case STW_OP_MLP_IN:
  case STW_OP_MLP_OUT:
  case STW_OP_POOLER:
  case STW_OP_LM_HEAD:
  case STW_OP_MOE_ROUTER:
  case STW_OP_INDEXER:
  case STW_OP_LINEAR_ATTN:
    return TRUE;
  default:
    return FALSE;
  }
}

/* Whether CFG's MLP activation is written out op by op in eager PyTorch: GELU-new's tanh
 * approximation, and xIELU's Python form, timed and kept as GELU-new's (as many kernels and as
 * much kept for backward, within a few). */
static gboolean
act_op_by_op(const StwModelConfig *c)
{
  return stw_model_gelu_new(c) || stw_model_activation(c) == STW_ACT_XIELU;
}

/* A norm over the hidden state (not Qwen3's over the queries and keys). */
static gboolean
is_norm(const StwGraphOp *g)
{
  switch (g->kind) {
  case STW_OP_NORM_EMBED:
  case STW_OP_NORM_ATTN:
  case STW_OP_NORM_POST_ATTN:
  case STW_OP_NORM_MLP:
  case STW_OP_NORM_POST_MLP:
  case STW_OP_NORM_FINAL:
    return TRUE;
  default:
    return FALSE;
  }
}

/* Whether autocast casts op G's weights to the compute dtype: a projection's (a GEMM of
 * weights); the attention's products multiply activations, and what it reads (gpt-oss's sinks)
 * joins its fp32 softmax as it is, as norms and embeddings read theirs. */
static gboolean
casts_weights(const StwGraphOp *g)
{
  return is_matmul(g) && g->kind != STW_OP_ATTN_CORE && g->kind != STW_OP_LINEAR_ATTN;
}

/* The bytes of op G's weights cast to the compute dtype where the trace is autocast's (fp32
 * weights, the GEMMs computed in 16 bits: PyTorch's AMP): every parameter of a projection, 0
 * for the others. TRAINED_ONLY: of the trained ones. */
static guint64
cast_bytes(const Synth *s, const StwGraphOp *g, gboolean trained_only)
{
  if (!s->autocast || !casts_weights(g))
    return 0;
  guint64 bytes = 0;
  for (guint i = 0; i < g->params->len; i++) {
    guint32 id = g_array_index(g->params, guint32, i);
    if (!trained_only || !stw_trace_tensor(s->trace, id)->frozen)
      bytes += ((StwGraphTensor *)s->graph->tensors->pdata[id])->numel * s->e;
  }
  return bytes;
}

/* The per-op cost model (docs/synth.md): matmuls at the efficiency their size reaches, the rest
 * from the bytes they touch. */
static guint64
op_duration_ns(const Synth *s, const StwGraphOp *g, double flops, double bytes)
{
  if (is_matmul(g))
    return stw_hardware_matmul_ns(s->hw, s->graph->dtype, flops, bytes);
  return stw_hardware_memory_op_ns(s->hw, bytes);
}

/* What PyTorch eager, running op G as Hugging Face's modules write it, adds to the fused op's
 * model: the bytes its extra kernels move, forward and backward, and how many kernels each pass
 * launches. Worked out per module in docs/synth.md ("Eager kernels"); e is the activations'
 * element size, and the fused model already counts each op's input and output once. */
typedef struct {
  double fwd_bytes, bwd_bytes;
  guint fwd_kernels, bwd_kernels;
} Eager;

#define FP32 4.0 /* bytes of an fp32 element */

/* The attention scores of one block: batch x heads x seq x seq. */
static double
naive_scores(const Synth *s)
{
  return (double)s->graph->batch * (double)s->graph->config.heads * (double)s->graph->seq *
         (double)s->graph->seq;
}

/* The 2-D weights op G reads: the projections it stands for (Llama's q, k and v: 3). */
static guint
weight_matrices(const Synth *s, const StwGraphOp *g)
{
  guint n = 0;
  for (guint i = 0; i < g->params->len; i++)
    if (((StwGraphTensor *)s->graph->tensors->pdata[g_array_index(g->params, guint32, i)])
            ->ndim == 2)
      n++;
  return n;
}

/* The elements a rotary op turns: each head's query and key (OTHERWISE), or with latent
 * attention each head's rotary query part and the one rotary key the heads share. */
static double
mla_rotated(const StwModelConfig *c, double T, double otherwise)
{
  return c->kv_lora_rank != 0 ? T * (double)(c->heads * c->rope_dim + c->rope_dim) : otherwise;
}

/* What PyTorch's autocast adds to op G's eager kernels, beyond the 16-bit model above
 * (docs/synth.md, "Eager kernels under autocast"). Under autocast the embeddings' fp32 output
 * makes the residual stream fp32 (each residual add promotes), the norms run in fp32 (layer_norm
 * is on autocast's fp32 list, and an RMSNorm's casts to and from fp32 find fp32 already), and
 * every GEMM casts its fp32 input down to 16 bits, one cast a projection reading it, its
 * gradient cast back up; rotary positions' fp32 cos and sin (cast to the fp32 stream's dtype)
 * promote the queries and keys to fp32, which attention casts down again; GELU-new's pow is on
 * the fp32 list, so the rest of its chain and its output are fp32 too. w: the bytes an fp32
 * element moves beyond a 16-bit one. */
static void
autocast_cost(const Synth *s, const StwGraphOp *g, Eager *x)
{
  const StwModelConfig *c = &s->graph->config;
  double e = (double)s->e, w = FP32 - e, T = (double)s->graph->batch * (double)s->graph->seq;
  double in = (double)g->in_bytes / e, out = (double)g->out_bytes / e; /* elements */
  if (is_norm(g) && c->arch != STW_ARCH_LLAMA) { /* LayerNorm reading and writing fp32;
                                                   * backward its gradients too */
    x->fwd_bytes += 2 * w * in;
    x->bwd_bytes += 3 * w * in;
  } else if (is_norm(g) && g->kind != STW_OP_NORM_POST_ATTN && g->kind != STW_OP_NORM_POST_MLP) {
    /* an RMSNorm on the fp32 stream: its casts find fp32 (two kernels fewer), the weight's
     * product fp32; one after attention or the MLP (Gemma 2, OLMo 2) reads the 16-bit branch
     * and casts as without autocast */
    x->fwd_bytes -= 4 * e * in;
    x->bwd_bytes -= (6 * e - 8) * in;
    x->fwd_kernels -= 2;
    x->bwd_kernels -= 2;
  }
  switch (g->kind) {
  case STW_OP_EMBED: /* the embeddings' fp32 output, and its gradient read back */
    x->fwd_bytes += w * out;
    x->bwd_bytes += w * out;
    break;
  case STW_OP_ATTN_QKV:
  case STW_OP_MLP_IN:
  case STW_OP_LM_HEAD:
  case STW_OP_MOE_ROUTER:
  case STW_OP_POOLER: {
    /* the fp32 input cast down once for each projection reading it (a token's k experts' two
     * each, a shared expert's two), the input's gradient cast up as often */
    double casts = weight_matrices(s, g);
    guint64 experts = stw_model_experts(c);
    if (g->kind == STW_OP_MLP_IN && experts > 1) {
      double shared = c->shared_expert_ffn != 0 ? 2 : 0;
      casts = (casts - shared) / (double)experts * (double)stw_model_routed_experts(c) + shared;
    }
    x->fwd_bytes += casts * (FP32 + e) * in;
    x->bwd_bytes += casts * (FP32 + e) * in;
    x->fwd_kernels += (guint)ceil(casts);
    x->bwd_kernels += (guint)ceil(casts);
    break;
  }
  case STW_OP_ROPE: { /* q * cos + rotate_half(q) * sin written in fp32, then cast down */
    double rotated =
        mla_rotated(c, T, in - T * (double)c->kv_heads * (double)stw_model_head_dim(c));
    x->fwd_bytes += rotated * (5 * w + FP32 + e);
    x->bwd_bytes += rotated * (5 * w + FP32 + e);
    x->fwd_kernels += 2;
    x->bwd_kernels += 2;
    break;
  }
  case STW_OP_ATTN_CORE:
    /* BERT drops its fp32 probabilities out before the product casts them down */
    if (s->graph->attention == STW_ATTENTION_NAIVE && c->arch == STW_ARCH_BERT &&
        stw_model_attn_dropout(c)) {
      x->fwd_bytes += 2 * w * naive_scores(s);
      x->bwd_bytes += 2 * w * naive_scores(s);
    }
    break;
  case STW_OP_MLP_ACT:
    if (act_op_by_op(c)) { /* GELU-new from its pow on in fp32, its output cast down for
                                  * the projection: 16 fp32 + 4 16-bit passes, not 16 16-bit */
      x->fwd_bytes += (16 * w + 4 * e) * in;
      x->bwd_bytes += (23 * FP32 - 17 * e) * in;
      x->fwd_kernels += 2;
      x->bwd_kernels += 3;
    }
    break;
  default:
    break;
  }
  if (g->residual == STW_RESIDUAL_CLOSE) { /* fp32 stream + 16-bit branch -> fp32; backward the
                                            * branch's gradient cast down */
    x->fwd_bytes += 2 * w * out;
    x->bwd_bytes += (FP32 + e) * out;
    x->bwd_kernels += 1;
  }
  /* the weights' casts (their bytes are in the op's fused model) and the trained ones'
   * gradients' */
  if (casts_weights(g))
    for (guint i = 0; i < g->params->len; i++) {
      x->fwd_kernels++;
      if (!stw_trace_tensor(s->trace, g_array_index(g->params, guint32, i))->frozen)
        x->bwd_kernels++;
    }
}

/* Whether a naive attention's softmax runs in fp32: Llama's modules ask for it (softmax(...,
 * dtype=float32)), so do the ALiBi ones, and autocast puts softmax on its fp32 list. */
static gboolean
fp32_softmax(const Synth *s)
{
  const StwModelConfig *c = &s->graph->config;
  return c->arch == STW_ARCH_LLAMA || c->alibi || c->attn_fp32 || s->autocast;
}

/* The elements of op G's (kind STW_OP_NORM_QK) input its RMSNorms normalize: the queries and
 * keys (the values pass by), or with latent attention the latents. */
static double
qk_normed(const Synth *s, const StwGraphOp *g)
{
  const StwModelConfig *c = &s->graph->config;
  double T = (double)s->graph->batch * (double)s->graph->seq;
  if (c->kv_lora_rank != 0)
    return T * (double)(c->q_lora_rank + c->kv_lora_rank);
  return (double)g->in_bytes / (double)s->e - T * (double)(c->kv_heads * stw_model_head_dim(c));
}

static Eager
eager_cost(const Synth *s, const StwGraphOp *g)
{
  const StwModelConfig *c = &s->graph->config;
  double e = (double)s->e, T = (double)s->graph->batch * (double)s->graph->seq;
  double dh = (double)stw_model_head_dim(c), q = (double)c->heads * dh;
  double kv = (double)c->kv_heads * dh;
  double in = (double)g->in_bytes / e, out = (double)g->out_bytes / e; /* elements */
  /* dropout as the configuration trains with it (GPT-2's and BERT's 0.1 on the attention
   * probabilities and the residual branches by default; OPT's on the residuals) */
  gboolean dropout = stw_model_attn_dropout(c), resid_dropout = stw_model_resid_dropout(c);
  Eager x = { 0, 0, 1, 2 }; /* one kernel; backward: the input's gradient and the weights' */
  if (g->image) { /* the tower's own sizes, forward only: its RMSNorms op by op in fp32, its
                   * attention's heads split and merged */
    if (g->kind == STW_OP_NORM_ATTN && g->rms)
      x = (Eager){ in * (28 + 2 * e), in * (52 + 4 * e), 8, 12 };
    else if (g->kind == STW_OP_ATTN_CORE)
      x = (Eager){ 2 * out * e, 2 * out * e, 2, 3 };
    if (s->autocast)
      autocast_cost(s, g, &x);
    return x;
  }
  if (is_norm(g) && stw_model_rms_norm(c)) /* RMSNorm in fp32, op by op; LayerNorm is one
                                           * kernel */
    x = (Eager){ in * (28 + 2 * e), in * (52 + 4 * e), 8, 12 };
  switch (g->kind) {
  case STW_OP_NORM_QK: { /* Qwen3's two RMSNorms, in fp32 op by op, over q and k: the values,
                          * which the fused model counts moved, are not touched (latent
                          * attention's: over the latents, the rotary key passing by) */
    double normed = qk_normed(s, g);
    double passing = in - normed; /* moved by the fused model, untouched here */
    x = (Eager){ normed * (28 + 2 * e) - 2 * e * passing, normed * (52 + 4 * e) - 3 * e * passing,
                 16, 24 };
    break;
  }
  case STW_OP_ROPE: { /* q and k (not v): x*cos + rotate_half(x)*sin, five kernels each */
    double rotated = mla_rotated(c, T, in - T * kv);
    if (c->kv_lora_rank != 0) { /* latent attention: the rotary parts turned, then each head's
                                 * query and key put together (torch.cat), read and written */
      double qk = T * (double)(c->heads * stw_model_qk_head_dim(c));
      x = (Eager){ 12 * e * rotated + 4 * e * qk, 12 * e * rotated + 4 * e * qk, 12, 16 };
    } else {
      x = (Eager){ 12 * e * rotated - 2 * e * in, 12 * e * rotated - 2 * e * in, 10, 14 };
    }
    break;
  }
  case STW_OP_ATTN_CORE: {
    /* the heads merged back: transpose(1, 2).contiguous() (differential attention's two
     * outputs: its op's output is both) */
    x = (Eager){ 2 * out * e, 2 * out * e, 2, 3 };
    Eager merged = x;
    if (kv < q) { /* repeat_kv copies the shared keys and values out to every head */
      x.fwd_bytes += 2 * T * (q + kv) * e;
      x.bwd_bytes += 2 * T * (q + kv) * e;
      x.fwd_kernels += 2;
      x.bwd_kernels += 2;
    }
    if (s->graph->attention == STW_ATTENTION_NAIVE) {
      /* per score: scaled, masked, softmaxed (and dropped out), each a kernel reading and
       * writing the scores */
      double n = naive_scores(s);
      x.fwd_bytes += n * (5 * e + 1 + (dropout ? 2 * e + 1 : 0));
      x.bwd_bytes += n * (6 * e + 1 + (dropout ? 2 * e + 1 : 0));
      x.fwd_kernels += 4 + (dropout ? 1 : 0);
      x.bwd_kernels += 5 + (dropout ? 1 : 0);
      if (fp32_softmax(s)) {
        /* the softmax in fp32: Llama's modules ask for it (softmax(..., dtype=float32), then
         * .to(query.dtype)), and so do the ALiBi ones (BLOOM's; Falcon's casts its scores up
         * before the bias joins them); under autocast softmax is on its fp32 list: the scores
         * cast up, the softmax reading and writing 4 bytes a score, the probabilities cast
         * back; backward the same chain reversed */
        x.fwd_bytes += n * 4 * FP32;
        x.bwd_bytes += n * (5 * FP32 - e);
        x.fwd_kernels += 2;
        x.bwd_kernels += 2;
      }
      if (c->attn_fp32 && e < FP32) {
        /* GPT-Neo's queries and keys cast up (their product at fp32's rate: fp32_scores_ns),
         * and backward their gradients cast back down */
        x.fwd_bytes += T * (q + kv) * (e + FP32);
        x.bwd_bytes += T * (q + kv) * (FP32 + e);
        x.fwd_kernels += 2;
        x.bwd_kernels += 2;
      }
      if (c->attn_softcap) { /* Gemma 2's cap: / c, tanh, * c over the scores */
        x.fwd_bytes += n * 6 * e;
        x.bwd_bytes += n * 7 * e;
        x.fwd_kernels += 3;
        x.bwd_kernels += 3;
      }
    }
    if (c->diff_attn) { /* DiffLlama's two calls: all but the merge twice, after each half of
                         * the values is repeated out to every key and value head */
      double halves = 2 * T * (double)(c->kv_heads * stw_model_head_dim(c)) * e;
      x = (Eager){ 2 * x.fwd_bytes - merged.fwd_bytes + halves,
                   2 * x.bwd_bytes - merged.bwd_bytes + halves,
                   2 * x.fwd_kernels - merged.fwd_kernels + 2,
                   2 * x.bwd_kernels - merged.bwd_kernels + 2 };
    }
    break;
  }
  case STW_OP_MLP_ACT:
    if (act_op_by_op(c)) /* GELU-new: tanh's approximation written out, 8 kernels */
      x = (Eager){ 16 * e * in, 27 * e * in, 8, 16 };
    else if (c->arch == STW_ARCH_LLAMA && !c->mlp_ungated) /* silu(gate) * up */
      x = (Eager){ 2 * e * out, 4 * e * out, 2, 4 };
    else if (stw_model_activation(c) == STW_ACT_RELU2) /* relu, then square reading its output
                                                        * (which it keeps); backward, each */
      x = (Eager){ 2 * e * in, 3 * e * in, 2, 4 };
    break;
  case STW_OP_LOGIT_SOFTCAP: /* x / c, tanh, * c: three kernels over the logits */
    x = (Eager){ 4 * e * in, 5 * e * in, 3, 3 };
    break;
  case STW_OP_ALTUP: {
    /* Gemma 3n's module op by op: the router's RMSNorm in fp32 and its scale over the first
     * copy (or the block's output); predicting, the copies permuted to the matmul and its
     * output back, added to them and made contiguous (7 passes over all the copies);
     * correcting, the innovation repeated to every copy, scaled, added to the predictions and
     * made contiguous (9), the first copy cloned and scaled. Backward as the chain reversed,
     * each pass's gradient read and written */
    double Td = T * (double)c->hidden, nTd = (double)c->altup_inputs * Td;
    if (!g->saves_input) /* the correction (the prediction keeps the copies it read; with one
                          * copy both read and write as much, so widths cannot tell them) */
      x = (Eager){ Td * (28 + 12 * e) + 9 * e * nTd, Td * (52 + 16 * e) + 14 * e * nTd, 22, 30 };
    else
      x = (Eager){ Td * (28 + 4 * e) + 7 * e * nTd, Td * (52 + 6 * e) + 10 * e * nTd, 17, 26 };
    break;
  }
  case STW_OP_LINEAR_ATTN: {
    double o = out;
    /* the convolved channels: queries and keys (B and C) and values (x) */
    double conv = T * (2.0 * (double)(c->linear_k_heads * c->linear_k_head_dim) + o / T);
    if (c->linear_kind == STW_LINEAR_MAMBA1) /* Mamba-1 as transformers runs it with mamba_ssm's
                                              * and causal_conv1d's kernels: x and z apart and
                                              * the channels moved (2), the convolution (1), the
                                              * projections to the step, B and C and the step's
                                              * up (2), the selective scan (1; backward 2) */
      x = (Eager){ 4 * e * o, 6 * e * o, 6, 10 };
    else if (c->linear_kind == STW_LINEAR_LIGHTNING) { /* MiniMax's, a PyTorch loop over blocks of
                                                   * 256 tokens: each block's decayed scores
                                                   * (written and read, kept), its products with
                                                   * v and the state (8 kernels a block), the
                                                   * norm op by op and the gate (10) */
      double blocks = ceil((double)s->graph->seq / 256.0);
      double scores = T * (double)c->linear_v_heads * 256.0 * e;
      x = (Eager){ 2 * scores + o * (28 + 4 * e), 3 * scores + o * (52 + 6 * e),
                   (guint)(8 * blocks) + 10, (guint)(16 * blocks) + 14 };
    } else if (c->linear_kind == STW_LINEAR_SHORT_CONV) /* LFM2's in eager PyTorch: B x, the channels
                                                  * moved to the front and back (2), the
                                                  * convolution, C times it (5; backward 8) */
      x = (Eager){ 4 * e * o, 6 * e * o, 5, 8 };
    else if (c->linear_kind == STW_LINEAR_MAMBA2) /* as transformers runs Mamba-2 with mamba_ssm's
                                              * kernels: the convolution (1), the step (2),
                                              * the chunked scan (5; backward 10), the gated
                                              * norm fused (1; 2) */
      x = (Eager){ conv * 2 * e, conv * 3 * e, 9, 15 };
    else /* Gated DeltaNet with flash-linear-attention's kernels: the convolution and its SiLU
          * (2), the decay and rate op by op (5), the chunked delta rule's kernels (7; backward
          * 12), its output RMS-normed and gated in fp32 op by op as an RMSNorm is (8; 12) */
      x = (Eager){ o * (28 + 2 * e) + conv * 2 * e, o * (52 + 4 * e) + conv * 3 * e, 22, 34 };
    break;
  }
  case STW_OP_LOSS:
    if (s->graph->loss == STW_LOSS_NATIVE) /* the shifted logits made contiguous, log_softmax
                                            * and NLL in their dtype; backward NLL's gradient,
                                            * log_softmax's reading its output, the slice's */
      x = (Eager){ 4 * e * in, 5 * e * in, 3, 3 };
    else /* logits.float(), then log_softmax and the loss in fp32 */
      x = (Eager){ 12 * in, (12 - e) * in, 4, 4 };
    break;
  default:
    break;
  }
  if (g->residual == STW_RESIDUAL_CLOSE) { /* the residual added (after dropout) */
    x.fwd_bytes += out * (3 * e + (resid_dropout ? 2 * e + 1 : 0));
    x.bwd_bytes += out * (3 * e + (resid_dropout ? 2 * e + 1 : 0));
    x.fwd_kernels += resid_dropout ? 2 : 1;
    x.bwd_kernels += resid_dropout ? 2 : 1;
  }
  if (s->autocast)
    autocast_cost(s, g, &x);
  return x;
}

/* What PyTorch eager, running op G as Hugging Face's modules write it, keeps for backward
 * beyond the fused model's saved tensors (its input where it saves it, its saved extras), and
 * the transient bytes its backward's chain of kernels holds beyond the fused model's at once:
 * the tensors autograd saves kernel by kernel (docs/synth.md, "Eager memory"). Zero with
 * --kernels fused. */
typedef struct {
  guint64 saved, bwd_work;
} EagerMemory;

static EagerMemory
eager_memory(const Synth *s, const StwGraphOp *g)
{
  EagerMemory m = { 0, 0 };
  if (s->kernels != STW_KERNELS_EAGER || g->image) /* an image's op keeps nothing */
    return m;
  const StwModelConfig *c = &s->graph->config;
  double e = (double)s->e, in = (double)g->in_bytes / e, out = (double)g->out_bytes / e;
  double saved = 0, work = 0;
  /* the same modules the time model's eager chains are (eager_cost) */
  gboolean dropout = stw_model_attn_dropout(c), resid_dropout = stw_model_resid_dropout(c);
  if (is_norm(g) && stw_model_rms_norm(c)) {
    /* RMSNorm op by op: the fp32 copy of its input (pow and the product keep it) and the
     * normalized copy cast back (the weight's product keeps it), where the fused op keeps the
     * input; under autocast the stream and the normalized copy are fp32 (a norm after a branch,
     * Gemma 2's or OLMo 2's, reads the 16-bit branch). Backward, two fp32 gradients of the chain
     * at once where the fused op holds the input's */
    gboolean stream = g->kind != STW_OP_NORM_POST_ATTN && g->kind != STW_OP_NORM_POST_MLP;
    saved += in * (FP32 + (s->autocast && stream ? FP32 - e : 0));
    work += in * (2 * FP32 - e);
  } else if (is_norm(g) && s->autocast) {
    saved += in * (FP32 - e); /* LayerNorm on autocast's fp32 list keeps its fp32 input */
  }
  switch (g->kind) {
  case STW_OP_NORM_QK: { /* Qwen3's RMSNorms over q and k, op by op as above */
    double normed = qk_normed(s, g);
    saved += normed * FP32;
    work += normed * (2 * FP32 - e);
    break;
  }
  case STW_OP_EMBED: /* the embeddings' dropout keeps its mask (a byte an element) */
    saved += resid_dropout ? out : 0;
    break;
  case STW_OP_MLP_ACT:
    if (act_op_by_op(c)) {
      /* tanh's approximation op by op: pow keeps the input (under autocast its fp32 copy), tanh
       * its output, the last product both its factors, 0.5 x and 1 + tanh (fp32 from the pow
       * on under autocast); backward, two gradients of the chain at once */
      double z = s->autocast ? FP32 : e;
      saved += in * 3 * z;
      work += in * 2 * z;
    } else if (c->arch == STW_ARCH_LLAMA && !c->mlp_ungated) {
      saved += in / 2 * e; /* silu(gate), kept by the product with up */
    }
    break;
  case STW_OP_ATTN_CORE:
    if (s->graph->attention == STW_ATTENTION_NAIVE) {
      double before = saved;
      /* per score: the softmax's output (fp32 where the module or autocast asks for it), the
       * dropout's mask and output, the product's 16-bit copy of fp32 probabilities; backward,
       * an fp32 softmax's two fp32 gradients at once where the fused op holds two in 16 bits */
      double n = naive_scores(s);
      gboolean fp32 = fp32_softmax(s);
      double sm = fp32 ? FP32 : e;
      saved += n * ((sm - e) + (dropout ? 1 + e : 0) + (fp32 && !dropout && e < FP32 ? e : 0));
      if (c->attn_fp32 && e < FP32) { /* the product keeps the fp32 queries and keys */
        double T = (double)s->graph->batch * (double)s->graph->seq,
               dh = (double)stw_model_head_dim(c);
        saved += T * (double)(c->heads + c->kv_heads) * dh * (FP32 - e);
      }
      work += n * (fp32 ? 2 * FP32 - 2 * e : 0);
      if (c->diff_attn) /* DiffLlama's second softmax keeps as much */
        saved += saved - before;
    }
    break;
  default:
    break;
  }
  if (g->residual == STW_RESIDUAL_CLOSE && resid_dropout)
    saved += out; /* the residual branch's dropout mask */
  m.saved = (guint64)llround(saved);
  m.bwd_work = (guint64)llround(work);
  return m;
}

/* WORK_NS of GPU work spread over KERNELS kernels, each issued by the host op_overhead_ns after
 * the one before and run when both it is issued and the GPU is free: the host runs ahead while
 * long kernels run, and a chain of short ones waits on the host. The time from the GPU finishing
 * the work before to finishing this one's last kernel. */
static guint64
issue_kernels(Synth *s, double work_ns, guint kernels)
{
  double overhead = (double)s->hw->op_overhead_ns;
  guint64 before = (guint64)llround(s->gpu_ns);
  for (guint k = 0; k < MAX(kernels, 1); k++) {
    s->host_ns += overhead;
    s->gpu_ns = fmax(s->gpu_ns, s->host_ns) + work_ns / MAX(kernels, 1);
  }
  return (guint64)llround(s->gpu_ns) - before;
}

/* Op G's duration from its fused model's. Fused: as it is, one launch's overhead and the work.
 * Eager: the work plus the extra bytes at HBM speed, issued as KERNELS kernels (issue_kernels). */
/* The time naive attention's scores take beyond the fused model's where the module computes
 * them in fp32 (GPT-Neo's: model.attn_fp32): their GEMM at fp32's rate rather than the compute
 * dtype's, forward the scores (2 x scores x head_dim FLOPs), backward the queries' and keys'
 * gradients (twice that). */
static double
fp32_scores_ns(const Synth *s, const StwGraphOp *g, gboolean backward)
{
  const StwModelConfig *c = &s->graph->config;
  double r16 = s->hw->flops_per_s[s->graph->dtype], r32 = s->hw->flops_per_s[STW_DTYPE_FP32];
  if (r16 <= 0 || r32 <= 0 || s->e >= FP32)
    return 0;
  double flops;
  if (g->kind == STW_OP_INDEXER && !backward) { /* an indexer scores every key in fp32 (DSA's
                                                 * its heads' weights too) */
    double S = (double)s->graph->seq;
    flops = 2 * (double)s->graph->batch * S * S * (double)c->index_heads *
            (double)(c->index_head_dim + (c->kv_lora_rank != 0 ? 1 : 0));
    return fmax(flops / s->hw->matmul_efficiency * (1 / r32 - 1 / r16) * 1e9, 0);
  }
  if (g->kind != STW_OP_ATTN_CORE || g->image || !c->attn_fp32 ||
      s->graph->attention != STW_ATTENTION_NAIVE)
    return 0;
  flops = 2 * naive_scores(s) * (double)stw_model_head_dim(c) * (backward ? 2 : 1);
  return fmax(flops / s->hw->matmul_efficiency * (1 / r32 - 1 / r16) * 1e9, 0);
}

static guint64
eager_ns(Synth *s, guint64 fused_ns, double extra_bytes, double extra_ns, guint kernels)
{
  if (s->kernels != STW_KERNELS_EAGER)
    return fused_ns;
  double work = fmax((double)fused_ns - (double)s->hw->op_overhead_ns, 0) +
                fmax(extra_bytes, 0) / (s->hw->hbm_bytes_per_s * s->hw->memory_efficiency) * 1e9 +
                extra_ns;
  return issue_kernels(s, work, kernels);
}

static guint64
param_bytes(const Synth *s, const StwGraphOp *op)
{
  guint64 bytes = 0;
  for (guint i = 0; i < op->params->len; i++) {
    guint32 id = g_array_index(op->params, guint32, i);
    bytes += ((StwGraphTensor *)s->graph->tensors->pdata[id])->numel * s->e;
  }
  return bytes;
}

/* Bytes op G's forward moves beyond its own activations': the chunked loss's cross-entropy
 * reads and writes every piece's logits in place, all of them over the pieces (2 T V e). */
static double
hidden_traffic(const Synth *s, const StwGraphOp *g)
{
  if (g->kind != STW_OP_LOSS || s->graph->loss != STW_LOSS_CHUNKED)
    return 0;
  return 2.0 * (double)s->graph->batch * (double)s->graph->seq *
         (double)stw_model_head_vocab(&s->graph->config) * (double)s->e;
}

/* The share of op G's parameter elements that are trained (1 without parameters). */
static double
trained_share(const Synth *s, const StwGraphOp *g)
{
  guint64 all = 0, trained = 0;
  for (guint i = 0; i < g->params->len; i++) {
    const StwTensor *x = stw_trace_tensor(s->trace, g_array_index(g->params, guint32, i));
    all += x->numel;
    trained += x->frozen ? 0 : x->numel;
  }
  return all > 0 ? (double)trained / (double)all : 1.0;
}

static StwOp *
emit(Synth *s, const StwGraphOp *g, const char *suffix, StwStage stage, gboolean grads)
{
  g_autofree char *name = g_strconcat(g->name, suffix, NULL);
  guint32 *ids = (guint32 *)g->params->data;
  g_autofree guint32 *trained = g_new(guint32, MAX(g->params->len, 1));
  guint32 n = 0;
  for (guint i = 0; grads && i < g->params->len; i++)
    if (!stw_trace_tensor(s->trace, ids[i])->frozen)
      trained[n++] = ids[i];
  return stw_trace_add_op(s->trace, name, stage, ids, g->params->len, trained, n);
}

/* Runs one forward op. KEEP_SAVED is false inside a checkpointed block, where only the block's
 * input survives; FIRST_IN_BLOCK marks the op whose input is that block input. */
static void
forward_op(Synth *s, const StwGraphOp *g, StwStage stage, const char *suffix,
           gboolean keep_saved, gboolean first_in_block)
{
  StwOp *op = emit(s, g, suffix, stage, FALSE);
  op->nonmodel_bytes = s->live;
  /* autocast's 16-bit weights: kept for backward with what the op keeps; in a checkpointed
   * forward its cache holds the trained ones to the forward's end, the frozen ones go */
  guint64 cast = cast_bytes(s, g, FALSE), cached = keep_saved ? 0 : cast_bytes(s, g, TRUE);
  guint64 saved_extra = g->saved_extra_bytes + eager_memory(s, g).saved;
  s->live += g->out_bytes + g->work_bytes + saved_extra + cast;
  op->nonmodel_peak_bytes = s->live;
  if (!keep_saved) {
    s->live -= cast - cached;
    s->cached += cached;
  }
  s->live -= g->work_bytes;
  if (!keep_saved)
    s->live -= saved_extra;
  gboolean keep_input = g->saves_input && (keep_saved || first_in_block);
  if (!g->passthrough && !keep_input)
    s->live -= g->in_bytes;
  op->flops = g->flops;
  /* the casts read the fp32 weights and write the 16-bit ones */
  double bytes = (double)(param_bytes(s, g) + g->in_bytes + g->out_bytes + 2 * g->work_bytes +
                          g->saved_extra_bytes) +
                 hidden_traffic(s, g) + (double)cast / (double)s->e * (4.0 + (double)s->e);
  Eager x = eager_cost(s, g);
  op->duration_ns = eager_ns(s, op_duration_ns(s, g, (double)g->flops, bytes), x.fwd_bytes,
                             fp32_scores_ns(s, g, FALSE), x.fwd_kernels);
}

static void
backward_op(Synth *s, const StwGraphOp *g)
{
  StwOp *op = emit(s, g, ".bwd", STW_STAGE_BWD, TRUE);
  guint64 grad_in = g->passthrough || g->no_input_grad ? 0 : g->in_bytes;
  /* autocast: the weights' 16-bit gradients, cast into the fp32 ones, and then the 16-bit
   * weights the op kept go */
  guint64 cast = cast_bytes(s, g, FALSE), cast_grads = cast_bytes(s, g, TRUE);
  EagerMemory em = eager_memory(s, g);
  op->nonmodel_bytes = s->live;
  s->live += grad_in + g->bwd_work_bytes + em.bwd_work;
  op->nonmodel_peak_bytes = s->live + cast_grads;
  s->live -= g->bwd_work_bytes + em.bwd_work + g->saved_extra_bytes + em.saved + cast;
  if (!g->passthrough) {
    if (g->saves_input)
      s->live -= g->in_bytes;
    /* the output's gradient is consumed, except where the residual path still needs it */
    if (g->residual == STW_RESIDUAL_CLOSE)
      g_array_append_val(s->residuals, g->out_bytes);
    else
      s->live -= g->out_bytes;
    if (g->residual == STW_RESIDUAL_OPEN) {
      g_assert(s->residuals->len > 0);
      s->live -= g_array_index(s->residuals, guint64, s->residuals->len - 1);
      g_array_set_size(s->residuals, s->residuals->len - 1);
    }
  } else { /* its output's gradient, where it has an output (the first op of images, which
            * reads the pixels) */
    s->live -= g->out_bytes;
  }
  if (s->framework) {
    /* PyTorch's AccumulateGrad: a parameter's first gradient becomes its .grad, held to the
     * optimizer step; a later one (a tied weight's second use, the next micro-steps) is
     * computed apart and added in, only at its op */
    guint64 made = 0, added = 0, kept = 0, gone = 0;
    for (guint32 k = 0; k < op->n_grads; k++) {
      guint32 id = op->grads[k];
      guint64 bytes = stw_tensor_bytes(stw_trace_tensor(s->trace, id));
      gboolean held = s->has_grad[id];
      if (held)
        added += bytes;
      else
        made += bytes;
      /* on the host: copied there after its micro-step's last write, and freed here (a tied
       * weight's gradient stays on the device from its first write to its last) */
      gboolean leaves = s->host_gradients && --s->writes_left[id] == 0;
      if (!held && !leaves)
        kept += bytes;
      if (held && leaves)
        gone += bytes;
      s->has_grad[id] = !leaves;
    }
    op->nonmodel_peak_bytes += made + added;
    s->live += kept;
    s->live -= gone;
  }
  /* the input's gradient costs the forward's FLOPs (none where nothing below is
   * differentiated), the weights' gradient as much again: a frozen weight has none */
  double share = trained_share(s, g);
  double flops = (g->no_input_grad ? share : 1.0 + share) * (double)g->flops;
  op->flops = (guint64)flops;
  guint64 pbytes = param_bytes(s, g);
  double bytes = (double)pbytes * (1.0 + share) +
                 (double)(2 * g->in_bytes + g->out_bytes + 2 * g->bwd_work_bytes +
                          g->saved_extra_bytes) +
                 (double)cast_grads / (double)s->e * (2.0 * (double)s->e + 8.0);
  Eager x = eager_cost(s, g);
  op->duration_ns = eager_ns(s, op_duration_ns(s, g, flops, bytes), x.bwd_bytes,
                             fp32_scores_ns(s, g, TRUE), x.bwd_kernels);
}

/* The op indices of each transformer block's forward and backward, as they are emitted. */
typedef struct {
  guint32 *fwd_first, *fwd_last, *bwd_first, *bwd_last; /* per layer; G_MAXUINT32: none yet */
} BlockOps;

static void
block_ops_note(guint32 *first, guint32 *last, gint32 layer, guint32 op)
{
  if (layer < 0)
    return;
  if (first[layer] == G_MAXUINT32)
    first[layer] = op;
  last[layer] = op;
}

/* What keeping block LAYER's activations costs: its forward ops keep, each, its output and
 * saved extras and its input where it saves it or passes it on (docs/synth.md); the block's
 * input is counted in, its output (the next block's input) out. */
static guint64
block_saved_bytes(const Synth *s, gint32 layer, guint64 *input_out)
{
  const StwModelGraph *graph = s->graph;
  gint64 delta = 0;
  guint64 input = 0, output = 0;
  gboolean first = TRUE;
  for (guint i = 0; i < graph->ops->len; i++) {
    const StwGraphOp *g = graph->ops->pdata[i];
    if (g->layer != layer)
      continue;
    if (first)
      input = g->in_bytes;
    first = FALSE;
    delta += (gint64)(g->out_bytes + g->saved_extra_bytes + eager_memory(s, g).saved);
    if (!g->passthrough && !g->saves_input)
      delta -= (gint64)g->in_bytes;
    output = g->out_bytes;
  }
  *input_out = input;
  gint64 saved = delta + (gint64)input - (gint64)output;
  return saved > 0 ? (guint64)saved : 0;
}

/* The trace's blocks: one per transformer layer, over the ops BO noted. */
static void
add_blocks(const Synth *s, const BlockOps *bo)
{
  StwTrace *t = s->trace;
  const StwModelGraph *graph = s->graph;
  for (guint64 l = 0; l < graph->config.layers; l++) {
    if (bo->fwd_first[l] == G_MAXUINT32 || bo->bwd_first[l] == G_MAXUINT32)
      continue;
    g_autofree char *name = g_strdup_printf("h%" G_GUINT64_FORMAT, l);
    StwBlock *b = stw_trace_add_block(t, name, bo->fwd_first[l], bo->fwd_last[l],
                                      bo->bwd_first[l], bo->bwd_last[l]);
    b->saved_bytes = block_saved_bytes(s, (gint32)l, &b->input_bytes);
    for (guint32 k = b->fwd_first; k <= b->fwd_last; k++)
      b->forward_ns += stw_trace_op(t, k)->duration_ns;
  }
}

/* Index range [*first, *last] of the ops of block LAYER. */
static void
block_range(const StwModelGraph *g, gint32 layer, guint *first, guint *last)
{
  *first = G_MAXUINT;
  *last = 0;
  for (guint i = 0; i < g->ops->len; i++) {
    if (((StwGraphOp *)g->ops->pdata[i])->layer == layer) {
      *first = MIN(*first, i);
      *last = i;
    }
  }
}

/* The unfused Adams' passes (torch.optim.Adam's _multi_tensor_adam and _single_tensor_adam
 * without weight decay): m.lerp_(g), v.mul_(b2), v.addcmul_(g, g), d = v.sqrt(), d.div_(bc2),
 * d.add_(eps), p.addcdiv_(m, d): 64 + 2e bytes an element with gradients of e bytes, 40 more
 * than the fused step's 2e + 24 (docs/synth.md, "The optimizer step"). */
#define UNFUSED_ADAM_KERNELS 7
#define UNFUSED_ADAM_EXTRA_BYTES 40
/* GradScaler's unscale_ under fp16 autocast: each fp32 gradient read and written, one
 * multi-tensor pass; a fused step takes the scale itself */
#define UNSCALE_BYTES 8
/* DeepSpeed ZeRO's step on the GPU (stage_1_and_2.py's and stage3.py's step(), no
 * offload_optimizer), beyond the fused step's 2e + 24, with gradients of e bytes: the global norm
 * from each gradient cast to fp64 (torch.linalg.vector_norm(g.double()): e + 16, two launches a
 * tensor), the partition's gradients flattened (2e) and cast to fp32 (e + 4), scaled by the loss
 * scale and the clip in one mul_ (8), FusedAdam on the fp32 partition (28: it writes no 16-bit
 * copy), and the fp32 partition copied into the compute copy's (4 + e): 5e + 60 in all, 3e + 36
 * more than fused (docs/synth.md, "The optimizer step") */
#define DEEPSPEED_EXTRA_BYTES(e) (3 * (e) + 36)
#define DEEPSPEED_NORM_KERNELS 2

static void
optimizer_ops(Synth *s)
{
  StwTrace *t = s->trace;
  guint64 grads = s->live - s->graph->io_bytes; /* the framework's gradients, to the step */
  StwOptimizerImpl impl = t->model.optimizer_impl; /* how the loop's optimizer steps */
  gboolean unfused = impl == STW_OPTIMIZER_FOREACH || impl == STW_OPTIMIZER_FOR_LOOP;
  gboolean unscale = unfused && t->model.autocast == STW_DTYPE_FP16;
  double hbm = s->hw->hbm_bytes_per_s * s->hw->memory_efficiency;
  if (unscale) /* GradScaler reads whether a gradient overflowed: the host waits for the GPU */
    s->host_ns = s->gpu_ns = fmax(s->host_ns, s->gpu_ns);
  for (guint32 id = 0; id < t->tensors->len; id++) {
    const StwTensor *x = stw_trace_tensor(t, id);
    if (x->frozen)
      continue;
    g_autofree char *name = g_strconcat("adam.", x->name, NULL);
    StwOp *op = stw_trace_add_op(t, name, STW_STAGE_OPTIM, &id, 1, NULL, 0);
    op->nonmodel_bytes = op->nonmodel_peak_bytes = grads;
    /* with the gradients on the host, a step on the GPU brings its tensor's back first: counted
     * whatever the plan places, which the trace does not know (one tensor's gradient over a
     * CPU step, far below backward's peak) */
    if (s->host_gradients)
      op->nonmodel_peak_bytes += stw_tensor_bytes(x);
    /* reads the gradient, master, m, v; writes master, m, v and the new compute copy */
    double elem = stw_gpu_adam_bytes_per_elem(x->dtype);
    elem += unfused ? UNFUSED_ADAM_EXTRA_BYTES : 0;
    elem += unscale ? UNSCALE_BYTES : 0;
    elem += impl == STW_OPTIMIZER_DEEPSPEED ? DEEPSPEED_EXTRA_BYTES(stw_dtype_bytes(x->dtype)) : 0;
    double work_ns = (double)x->numel * elem / hbm * 1e9;
    if (impl == STW_OPTIMIZER_FOR_LOOP)
      op->duration_ns = issue_kernels(s, work_ns, UNFUSED_ADAM_KERNELS);
    else if (impl == STW_OPTIMIZER_DEEPSPEED) /* the norm's launches, tensor by tensor */
      op->duration_ns = issue_kernels(s, work_ns, DEEPSPEED_NORM_KERNELS);
    else /* no per-operator overhead: many tensors a launch (multi-tensor apply) */
      op->duration_ns = (guint64)llround(work_ns);
    op->flops = 12 * x->numel;
  }
}

static gboolean
check_options(const StwModelConfig *c, const StwSynthOptions *o, const StwHardware *hw,
              GError **error)
{
  if (o->batch < 1 || o->batch > STW_SYNTH_MAX_BATCH) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "batch %" G_GUINT64_FORMAT " is out of range (expected 1 to %d)", o->batch,
                STW_SYNTH_MAX_BATCH);
    return FALSE;
  }
  if (o->amp && o->dtype == STW_DTYPE_FP32) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "--amp computes in 16 bits: give --dtype bf16 or fp16 with it");
    return FALSE;
  }
  if (o->loss == STW_LOSS_NATIVE && (o->amp || o->dtype == STW_DTYPE_FP32)) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "--loss native computes the cross-entropy in the logits' 16-bit dtype, and %s: "
                "that is --loss full", o->amp ? "autocast computes it in fp32 (--amp)"
                                              : "the model's logits are fp32 (--dtype fp32)");
    return FALSE;
  }
  if (o->image_size != 0 && o->images == 0) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "--image-size goes with --images N; without it the option would be ignored");
    return FALSE;
  }
  if (o->checkpoint_every > STW_MODEL_MAX_LAYERS) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "checkpoint segments of %" G_GUINT64_FORMAT " blocks are out of range (expected "
                "1 to %d)", o->checkpoint_every, STW_MODEL_MAX_LAYERS);
    return FALSE;
  }
  if (o->checkpoints == STW_CHECKPOINTS_HOST &&
      (!o->checkpointing || o->checkpoint_every > 1 || o->micro_steps > 1)) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID, "--checkpoints host %s",
                !o->checkpointing ? "keeps the checkpoints of a checkpointed loop in host "
                                    "memory: give --checkpointing with it"
                : o->checkpoint_every > 1
                    ? "copies each block's input, the checkpoint of one block: give it without "
                      "--checkpoint-every"
                    : "copies the checkpoints of one forward-backward run, as a trace's blocks "
                      "describe it, and several micro-steps each keep their own: give it "
                      "without --micro-steps");
    return FALSE;
  }
  if (o->micro_steps > STW_SYNTH_MAX_MICRO_STEPS) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "%" G_GUINT64_FORMAT " micro-steps are out of range (expected 1 to %d)",
                o->micro_steps, STW_SYNTH_MAX_MICRO_STEPS);
    return FALSE;
  }
  if (o->seq < 1 || o->seq > c->max_seq) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "sequence length %" G_GUINT64_FORMAT " is out of range for %s (expected 1 to %"
                G_GUINT64_FORMAT ")", o->seq, c->name, c->max_seq);
    return FALSE;
  }
  if (hw->flops_per_s[o->dtype] <= 0) {
    g_set_error(error, STW_HARDWARE_ERROR, STW_HARDWARE_ERROR_UNSUPPORTED,
                "%s has no %s compute: choose another --dtype", hw->name,
                stw_dtype_name(o->dtype));
    return FALSE;
  }
  /* the largest activations (scores, logits) must stay exact in a trace's integers */
  double T = (double)o->batch * (double)o->seq;
  double scores = (double)o->batch * (double)c->heads * (double)o->seq * (double)o->seq * 4.0;
  double logits = T * (double)c->vocab * 4.0;
  double total = 2.0 * (double)c->layers * (scores + T * (double)(c->ffn + c->hidden) * 8.0);
  if (fmax(fmax(scores, logits), total) > (double)STW_JSON_INT_MAX / 16) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "batch %" G_GUINT64_FORMAT " x seq %" G_GUINT64_FORMAT " needs more "
                "activation memory than a trace can express (2^49 bytes)", o->batch, o->seq);
    return FALSE;
  }
  /* a linear block's recurrence: per token its heads' key x value states, counted exactly */
  double state = (double)MAX(c->linear_v_heads, 1) *
                 (double)MAX(c->linear_k_head_dim, 1) * (double)MAX(c->linear_v_head_dim, 1);
  if (stw_model_linear_blocks(c) != 0 && T * state * 16.0 > (double)STW_JSON_INT_MAX) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "batch %" G_GUINT64_FORMAT " x seq %" G_GUINT64_FORMAT " over %s's linear "
                "states (%.0f elements a token) needs more FLOPs than stowage counts exactly "
                "(2^53)", o->batch, o->seq, c->name, state);
    return FALSE;
  }
  return TRUE;
}

/* OPTIONS' images of IMAGE_SIZE pixels a side through GRAPH's vision tower. */
static gboolean
images(StwModelGraph *graph, const StwSynthOptions *options, guint64 image_size, GError **error)
{
  const StwModelConfig *c = &graph->config;
  GError *local = NULL;
  if (c->vision_layers != 0 && image_size == 0) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "--images: %s's vision tower takes images of any size: give their side with "
                "--image-size PIXELS", c->name);
    return FALSE;
  }
  if (!stw_model_graph_add_images(graph, options->images, image_size, options->vision_trained,
                                  &local)) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID, "--images: %s", local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}

static char *
now_iso8601(void)
{
  /* SOURCE_DATE_EPOCH makes generated files reproducible */
  const char *epoch = g_getenv("SOURCE_DATE_EPOCH");
  g_autoptr(GDateTime) dt = epoch != NULL
                                ? g_date_time_new_from_unix_utc(g_ascii_strtoll(epoch, NULL, 10))
                                : g_date_time_new_now_utc();
  if (dt == NULL)
    return g_strdup("");
  return g_date_time_format(dt, "%Y-%m-%dT%H:%M:%SZ");
}

/* One forward and backward run of S's graph, its blocks' op indices noted in OPS_NOTED (four
 * arrays of a slot per layer: forward first and last, backward first and last). With
 * CHECKPOINTING, segments of EVERY blocks (the last one maybe shorter): only a segment's input
 * survives the forward, and its blocks run again just before the last one's backward, noted
 * in that block's backward (the blocks' backwards stay apart). */
static void
micro_step(Synth *s, gboolean checkpointing, guint64 every, guint32 *ops_noted)
{
  const StwModelGraph *graph = s->graph;
  StwTrace *t = s->trace;
  gsize L = MAX(graph->config.layers, 1);
  memset(ops_noted, 0xff, 4 * L * sizeof(guint32));
  BlockOps bo = { ops_noted, ops_noted + L, ops_noted + 2 * L, ops_noted + 3 * L };
  guint64 live_before = s->live;
  for (guint i = 0; s->host_gradients && i < graph->ops->len; i++) {
    const StwGraphOp *g = graph->ops->pdata[i];
    for (guint k = 0; !g->no_grad && k < g->params->len; k++) {
      guint32 id = g_array_index(g->params, guint32, k);
      s->writes_left[id] += !stw_trace_tensor(t, id)->frozen;
    }
  }

  /* forward */
  for (guint i = 0; i < graph->ops->len; i++) {
    const StwGraphOp *g = graph->ops->pdata[i];
    gboolean ckpt = checkpointing && g->layer >= 0;
    gboolean first = (i == 0 || ((StwGraphOp *)graph->ops->pdata[i - 1])->layer != g->layer) &&
                     (guint64)MAX(g->layer, 0) % every == 0; /* the segment's input */
    forward_op(s, g, STW_STAGE_FWD, "", !ckpt, ckpt && first);
    block_ops_note(bo.fwd_first, bo.fwd_last, g->layer, t->ops->len - 1);
  }
  s->live -= s->cached; /* autocast's cache, cleared as the forward ends */
  s->cached = 0;

  /* backward, recomputing each checkpointed block just before its gradients */
  for (guint i = graph->ops->len; i-- > 0;) {
    const StwGraphOp *g = graph->ops->pdata[i];
    if (checkpointing && g->layer >= 0 &&
        (i + 1 == graph->ops->len || ((StwGraphOp *)graph->ops->pdata[i + 1])->layer != g->layer) &&
        ((guint64)g->layer % every == every - 1 || (guint64)g->layer + 1 == L)) {
      guint first, last, unused;
      block_range(graph, (gint32)((guint64)g->layer - (guint64)g->layer % every), &first, &unused);
      block_range(graph, g->layer, &unused, &last);
      for (guint k = first; k <= last; k++) {
        forward_op(s, graph->ops->pdata[k], STW_STAGE_BWD, ".recompute", TRUE, k == first);
        block_ops_note(bo.bwd_first, bo.bwd_last, g->layer, t->ops->len - 1);
      }
      /* the segment's output already lived once as the next one's input; drop the copy */
      s->live -= ((StwGraphOp *)graph->ops->pdata[last])->out_bytes;
    }
    if (g->no_grad) /* forward only */
      continue;
    backward_op(s, g);
    block_ops_note(bo.bwd_first, bo.bwd_last, g->layer, t->ops->len - 1);
  }
  g_assert(s->residuals->len == 0);
  /* what is left is what was there before and the gradients the run made */
  g_assert(s->framework && !s->host_gradients ? s->live >= live_before
                                               : s->live == live_before);
}

StwTrace *
stw_synth_trace(const StwModelConfig *config, const StwSynthOptions *options,
                const StwHardware *hw, GError **error)
{
  if (!stw_model_config_validate(config, NULL, error) ||
      !check_options(config, options, hw, error))
    return NULL;
  g_autoptr(StwModelGraph) graph = stw_model_graph_new(config, options->batch, options->seq,
                                                       options->dtype, options->attention);
  guint32 n_base = 0;
  if (options->lora_targets != NULL && options->lora_rank == 0) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "--lora-targets: the adapters' rank is --lora RANK's, which is not given");
    return NULL;
  }
  if (options->lora_rank > 0 &&
      !stw_model_graph_add_lora(graph, options->lora_rank, options->lora_targets, &n_base,
                                error))
    return NULL;
  guint64 image_size = options->image_size != 0 ? options->image_size
                                                : stw_model_image_size(config);
  if (options->images > 0 && !images(graph, options, image_size, error))
    return NULL;
  if (options->vision_trained != STW_VISION_TRAINED_NONE && options->images == 0) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "--vision-trained goes with --images N: without images no gradient reaches "
                "the tower or the projector");
    return NULL;
  }
  if ((options->reduce_bucket_size > 0 || options->sub_group_size > 0) &&
      options->optimizer_impl != STW_OPTIMIZER_DEEPSPEED) {
    g_set_error(error, STW_SYNTH_ERROR, STW_SYNTH_ERROR_INVALID,
                "--%s goes with --optimizer-impl deepspeed: it sizes the buffers DeepSpeed's "
                "step holds on the GPU, and the loop's optimizer is %s",
                options->sub_group_size > 0 ? "sub-group-size" : "reduce-bucket-size",
                stw_optimizer_impl_name(options->optimizer_impl));
    return NULL;
  }
  StwTrace *t = stw_trace_new();
  t->source.kind = STW_SOURCE_SYNTHETIC;
  g_free(t->source.created);
  t->source.created = now_iso8601();
  g_free(t->model.name);
  t->model.name = g_strdup(config->name);
  t->model.has_config = TRUE;
  t->model.config = *config;
  guint32 micro_steps = (guint32)MAX(options->micro_steps, 1);
  t->model.batch = options->batch * micro_steps; /* the iteration's, over its micro-steps */
  t->model.seq = options->seq;
  t->model.checkpointing = options->checkpointing;
  t->model.attention = options->attention;
  t->model.kernels = options->kernels;
  t->model.optimizer_impl = options->optimizer_impl;
  t->model.reduce_bucket_size = options->reduce_bucket_size;
  t->model.sub_group_size = options->sub_group_size;
  t->model.collectives = options->collectives;
  t->model.init = options->init;
  t->model.images = options->images;
  t->model.image_size = options->images > 0 ? image_size : 0;
  g_free(t->device.name);
  t->device.name = g_strdup(hw->name);
  t->device.memory_bytes = hw->gpu_memory_bytes;

  for (guint i = 0; i < graph->tensors->len; i++) {
    const StwGraphTensor *gt = graph->tensors->pdata[i];
    /* autocast (PyTorch's AMP): the weights fp32, computed in the 16-bit dtype */
    guint32 id = stw_trace_add_tensor(t, gt->name, options->amp ? STW_DTYPE_FP32 : options->dtype,
                                      gt->shape, gt->ndim);
    StwTensor *x = &g_array_index(t->tensors, StwTensor, id);
    for (guint k = 0; k < gt->aliases->len; k++)
      g_ptr_array_add(x->aliases, g_strdup(gt->aliases->pdata[k]));
    x->frozen = id < n_base; /* with LoRA, the base model */
  }
  /* weights only forward-only ops read (DSA's indexer) are never trained; the tower's and
   * projector's that images train are, LoRA or not */
  g_autofree guint8 *read_with_grad = g_new0(guint8, MAX(graph->tensors->len, 1));
  for (guint i = 0; i < graph->ops->len; i++) {
    const StwGraphOp *g = graph->ops->pdata[i];
    for (guint k = 0; !g->no_grad && k < g->params->len; k++)
      read_with_grad[g_array_index(g->params, guint32, k)] = g->image ? 2 : 1;
  }
  for (guint i = 0; i < graph->tensors->len; i++) {
    StwTensor *x = &g_array_index(t->tensors, StwTensor, i);
    x->frozen = read_with_grad[i] == 0 || (x->frozen && read_with_grad[i] != 2);
  }

  if (options->freeze != NULL && !stw_trace_freeze(t, options->freeze, NULL, error)) {
    stw_trace_free(t);
    return NULL;
  }

  if (options->loss == STW_LOSS_CHUNKED) {
    /* the head's weight gradient is kept from the forward where it is trained */
    gboolean trained = FALSE;
    for (guint i = 0; i < graph->ops->len; i++) {
      const StwGraphOp *g = graph->ops->pdata[i];
      for (guint k = 0; g->kind == STW_OP_LM_HEAD && k < g->params->len; k++)
        trained |= !stw_trace_tensor(t, g_array_index(g->params, guint32, k))->frozen;
    }
    stw_model_graph_chunk_loss(graph, trained);
  } else if (options->loss == STW_LOSS_NATIVE) {
    stw_model_graph_native_loss(graph);
  }
  t->model.loss = options->loss;
  t->model.autocast = options->amp ? options->dtype : STW_DTYPE_FP32;
  t->model.micro_steps = micro_steps;
  gboolean on_host = stw_gradients_on_host(options->host_gradients);
  if (on_host)
    t->model.gradients = options->host_gradients;
  else if (micro_steps > 1) /* the next forward must not find gradients in the chunks */
    t->model.gradients = STW_GRADIENTS_FRAMEWORK;
  g_autofree guint8 *has_grad = g_new0(guint8, t->tensors->len);
  g_autofree guint32 *writes_left = g_new0(guint32, MAX(t->tensors->len, 1));
  Synth s = { .trace = t, .graph = graph, .hw = hw, .kernels = options->kernels,
              .e = stw_dtype_bytes(options->dtype), .live = graph->io_bytes,
              .residuals = g_array_new(FALSE, FALSE, sizeof(guint64)),
              .framework = t->model.gradients != STW_GRADIENTS_CHUNKS,
              .host_gradients = on_host, .writes_left = writes_left,
              .has_grad = has_grad, .autocast = options->amp };
  gsize L = MAX(config->layers, 1);
  g_autofree guint32 *ops_noted = g_new(guint32, 4 * L);
  for (guint32 m = 0; m < micro_steps; m++)
    micro_step(&s, options->checkpointing, MAX(options->checkpoint_every, 1), ops_noted);
  g_array_unref(s.residuals);

  optimizer_ops(&s);
  /* the blocks of the last forward-backward run (with several, the planner decides none: they
   * say what each block keeps) */
  add_blocks(&s, &(BlockOps){ ops_noted, ops_noted + L, ops_noted + 2 * L, ops_noted + 3 * L });
  if (options->checkpoints == STW_CHECKPOINTS_HOST) { /* each block's input off the device */
    for (guint32 k = 0; k < t->blocks->len; k++)
      g_array_index(t->blocks, StwBlock, k).choice = STW_BLOCK_RECOMPUTE_HOST;
    stw_trace_free_moved_activations(t);
  }

  g_autofree char *what = g_strdup_printf("the trace of %s at batch %" G_GUINT64_FORMAT " x seq %"
                                          G_GUINT64_FORMAT, config->name, options->batch,
                                          options->seq);
  if (!stw_trace_validate(t, what, error)) {
    stw_trace_free(t);
    return NULL;
  }
  return t;
}
