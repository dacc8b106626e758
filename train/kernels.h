/* kernels.h — the GPT trainer's math on the CPU, fp32, after llm.c.
 *
 * Shapes in comments: B batch, T tokens per sequence, C width, NH heads, V vocabulary, OC a
 * matmul's output width. Weights are (OC, C) row-major, as nn.Linear stores them.
 *
 * What a backward kernel does with the gradients it is given (none relies on memory being zero):
 * input gradients (dinp) are written, except LayerNorm's, which adds into the residual stream's
 * gradient; weight gradients are written, or added to with ACCUMULATE (a tied weight's second
 * use); the embedding's backward adds by token, so callers zero its gradients before their first
 * write. A weight gradient may be the weight itself (the runtime's param slot, which the gradient
 * replaces): every kernel reads the weight before it writes the weight's gradient.
 *
 * The matmuls are GEMMs (compute-cuda-bodies.h describes them, for cuBLAS and for the CPU): a
 * BLAS's sgemm where configure found one, else register-tiled loops of this file; so are the
 * attention's products, per head (and per 64 x 64 tile in the fused attention), one head per
 * thread. Every other
 * loop gives each output element to one thread and sums in a fixed order. Results are bitwise
 * reproducible from run to run for a given thread count (the BLAS splits its work by it) on a
 * given machine (the BLAS picks its kernels by CPU); without a BLAS, whatever the thread count.
 */
#ifndef STW_KERNELS_H
#define STW_KERNELS_H

#include <stddef.h>

#include <stowage/adam.h>
#include <stowage/model.h>

#include "compute-cuda-bodies.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* The hot loops are compiled for AVX-512, AVX2 and the x86-64 baseline (STW_CLONES, clones.h).
 * FMA contraction stays off (-std=c11) and no loop reassociates a sum, so every clone computes
 * bitwise the same results. */
#include "clones.h"

/* [*LO, *HI): the calling thread's even share of N items in its OpenMP team. */
static inline void
stw_team_share(size_t n, size_t *lo, size_t *hi)
{
#ifdef _OPENMP
  size_t t = (size_t)omp_get_num_threads(), k = (size_t)omp_get_thread_num();
#else
  size_t t = 1, k = 0;
#endif
  size_t q = n / t, r = n % t;
  *lo = k * q + (k < r ? k : r);
  *hi = *lo + q + (k < r ? 1 : 0);
}

/* FN(lo, hi, ...) over [0, N), split evenly over the threads when there is WORK enough (about
 * that many elements touched) to pay for them: an item's result does not depend on which thread
 * computes it. */
#define STW_PARALLEL_RANGE(n, work, fn, ...)                                                    \
  do {                                                                                         \
    size_t stw_n_ = (n), stw_work_ = (work);                                                   \
    (void)stw_work_; /* read only by OpenMP's if clause */                                     \
    _Pragma("omp parallel if (stw_work_ > 16384)")                                             \
    {                                                                                          \
      size_t stw_lo_, stw_hi_;                                                                 \
      stw_team_share(stw_n_, &stw_lo_, &stw_hi_);                                              \
      fn(stw_lo_, stw_hi_, __VA_ARGS__);                                                       \
    }                                                                                          \
  } while (0)

void stw_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B,
                         int T, int C);
void stw_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B,
                          int T, int C);
void stw_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                           const float *weight, const float *bias, int B, int T, int C);
void stw_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                            const float *inp, const float *weight, const float *mean,
                            const float *rstd, int B, int T, int C, int accumulate);
void stw_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                        int B, int T, int C, int OC);
void stw_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, int B, int T, int C, int OC,
                         int accumulate);
/* Mixed precision's matmuls: their inputs (inp, weight, dout) rounded to nearest bf16 and the
 * products summed in fp32, as cuBLAS's CUBLAS_COMPUTE_32F_FAST_16BF does on a GPU: oneDNN's
 * bf16 matmul where the CPU computes bf16 (stw_matmul_bf16_isa), else the same rounded inputs
 * through the fp32 GEMM (same rounding, not the same speed; the trainer does not ask for it). */
void stw_matmul_forward_bf16(float *out, const float *inp, const float *weight,
                             const float *bias, int B, int T, int C, int OC);
void stw_matmul_backward_bf16(float *dinp, float *dweight, float *dbias, const float *dout,
                              const float *inp, const float *weight, int B, int T, int C, int OC,
                              int accumulate);
/* The instructions oneDNN runs bf16 products with here ("AVX512-BF16", "AMX"); NULL where it
 * would not run them natively (no oneDNN in the build, an older CPU, or ONEDNN_MAX_CPU_ISA
 * below AVX512_CORE_BF16), and mixed precision's matmuls stay fp32. */
const char *stw_matmul_bf16_isa(void);
/* One GEMM of compute-cuda-bodies.h on host memory, OPERANDS indexed by StwGemmOperand: the
 * BLAS's sgemm, or without one the portable loops, which every build has (and tests). */
void stw_gemm_host(const StwGemm *g, const float *const operands[]);
void stw_gemm_portable(const StwGemm *g, const float *const operands[]);
void stw_attention_forward(float *out, float *preatt, float *att, const float *inp, int B, int T,
                           int C, int NH);
/* dinp (B, T, 3C), dpreatt and datt (B, NH, T, T) written */
void stw_attention_backward(float *dinp, float *dpreatt, float *datt, const float *dout,
                            const float *inp, const float *att, int B, int T, int C, int NH);
/* Fused causal attention (compute-cuda-bodies.h): out (B, T, C) and lse (B, NH, T), the log-sum-
 * exp of each query row's scores, written; head widths up to STW_FA_MAX_HS */
void stw_attention_flash_forward(float *out, float *lse, const float *inp, int B, int T, int C,
                                 int NH);
/* dinp (B, T, 3C) and delta (B, NH, T, sum(dout * out) per query row) written, from the
 * forward's OUT and LSE */
void stw_attention_flash_backward(float *dinp, float *delta, const float *dout, const float *inp,
                                  const float *out, const float *lse, int B, int T, int C, int NH);
void stw_gelu_forward(float *out, const float *inp, size_t n);
void stw_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
void stw_residual_forward(float *out, const float *a, const float *b, size_t n);
/* probs (B,T,V) from logits; losses (B,T); returns the mean loss */
float stw_crossentropy_forward(float *probs, float *losses, const float *logits,
                               const int *targets, int B, int T, int V);
/* dlogits = (probs - onehot) / (B*T), written */
void stw_crossentropy_backward(float *dlogits, const float *probs, const int *targets, int B,
                               int T, int V);

/* AdamW's constants for step STEP (from 1) of C, over N elements (where AMSGrad's largest
 * variances begin after the variances) */
StwAdamStep stw_adam_step(const StwAdamConfig *c, guint64 step, size_t n);
/* AdamW on host memory. The range [LO, HI) of PARAM updated in place from GRAD, one thread: */
void stw_adam_range(size_t lo, size_t hi, float *param, const float *grad, void *m, void *v,
                    StwAdamStep s);
/* A kernel with AdamW's memory streams and little arithmetic, over the threads: G, P, M, V read, P,
 * M, V written, 28 bytes an element — the read-modify-write bandwidth an AdamW step is bound by
 * (bench-train adam). */
void stw_adam_streams(float *p, const float *g, float *m, float *v, size_t n);
/* N elements over the threads, PARAM holding the gradient (fp32, bf16 or fp16, as DTYPE says) and
 * getting the new weights in the same pass as MASTER; M and V fp32, or bf16 where
 * S.bf16_moments. */
void stw_adam_host(void *param, StwDtype dtype, float *master, void *m, void *v, size_t n,
                   StwAdamStep s);
/* The same where the fp32 compute copy PARAM keeps the weights: it gets the new ones, MASTER is
 * only read (and may be PARAM) — 28 bytes an element with fp32 moments, where the above moves 32
 * (bitwise the same weights). */
void stw_adam_host_to_copy(float *param, const float *master, void *m, void *v, size_t n,
                           StwAdamStep s);
/* Whether AdamW's kernels with 16-bit lanes may run their AVX512BW versions where the CPU has
 * it (the default; FALSE: the versions every other CPU runs, which a test compares bitwise).
 * Returns what it was. */
gboolean stw_kernels_allow_avx512bw(gboolean allow);
/* bf16 compute copies: N values widened to fp32; a gradient into a bf16 slot (FIRST: replacing
 * what it holds, else added to it) */
void stw_widen_bf16(float *dst, const uint16_t *src, size_t n);
void stw_commit_bf16(uint16_t *slot, const float *grad, size_t n, int first);

#endif
