/* compute-cuda-bodies.h — what each thread of the CUDA compute table's kernels computes, as
 * functions of the thread's index that compile both as CUDA (nvcc, compute-cuda.cu: one thread
 * per index) and as C (gcc: kernels.c's loops run the same bodies wherever the CPU's loop has the
 * GPU's shape, so both devices share one copy of the arithmetic). Where the GPU's way is its own
 * (rows by warps, sums down columns in two stages, AdamW on device chunks, the matmuls' and the
 * attention's GEMMs) tests/test-compute.c runs the bodies on the CPU against the CPU's code; only
 * the launch and the memory are CUDA's alone.
 *
 * Where several threads add into one element (a token's embedding row, a tied weight) STW_ADD is
 * atomicAdd on the device and a plain += in the CPU loop. The
 * cuBLAS calls of the matmuls are described by StwGemm, which the test executes with a plain
 * column-major GEMM.
 */
#ifndef STW_COMPUTE_CUDA_BODIES_H
#define STW_COMPUTE_CUDA_BODIES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "bf16.h"
#include "fp16.h"

#ifdef __CUDACC__
#define STW_HD static __host__ __device__ inline
#define STW_HD_INLINED static __host__ __device__ __forceinline__
#else
#define STW_HD static inline
/* a body the loops over elements must have inlined to vectorize (the compiler's own judgement
 * leaves the larger ones, bf16 moments' stochastic rounding, as calls: 4x slower) */
#define STW_HD_INLINED static inline __attribute__((always_inline))
#endif

#ifdef __CUDA_ARCH__
#define STW_ADD(p, v) atomicAdd((p), (v))
#else
#define STW_ADD(p, v) (*(p) += (v))
#endif

#define STW_GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

/* index i over (B, T, C) */
STW_HD void
stw_cb_encoder_forward(size_t i, float *out, const int *inp, const float *wte, const float *wpe,
                       int T, int C)
{
  size_t bt = i / C;
  int c = (int)(i % C), t = (int)(bt % T);
  out[i] = wte[(size_t)inp[bt] * C + c] + wpe[(size_t)t * C + c];
}

/* index i over (B, T, C); adds into rows other threads share */
STW_HD void
stw_cb_encoder_backward(size_t i, float *dwte, float *dwpe, const float *dout, const int *inp,
                        int T, int C)
{
  size_t bt = i / C;
  int c = (int)(i % C), t = (int)(bt % T);
  STW_ADD(&dwte[(size_t)inp[bt] * C + c], dout[i]);
  STW_ADD(&dwpe[(size_t)t * C + c], dout[i]);
}

/* index: a row of (B*T) */
STW_HD void
stw_cb_layernorm_forward(size_t row, float *out, float *mean, float *rstd, const float *inp,
                         const float *weight, const float *bias, int C)
{
  const float *x = inp + row * C;
  float m = 0, v = 0;
  for (int i = 0; i < C; i++)
    m += x[i];
  m /= C;
  for (int i = 0; i < C; i++)
    v += (x[i] - m) * (x[i] - m);
  v /= C;
  float s = 1.0f / sqrtf(v + 1e-5f);
  float *o = out + row * C;
  for (int i = 0; i < C; i++)
    o[i] = s * (x[i] - m) * weight[i] + bias[i];
  mean[row] = m;
  rstd[row] = s;
}

/* index: a row of (B*T) */
STW_HD void
stw_cb_layernorm_backward_inp(size_t row, float *dinp, const float *dout, const float *inp,
                              const float *weight, const float *mean, const float *rstd, int C)
{
  const float *d = dout + row * C, *x = inp + row * C;
  float *di = dinp + row * C;
  float m = mean[row], s = rstd[row], a = 0, b = 0;
  for (int i = 0; i < C; i++) {
    float norm = (x[i] - m) * s, dnorm = weight[i] * d[i];
    a += dnorm;
    b += dnorm * norm;
  }
  a /= C;
  b /= C;
  for (int i = 0; i < C; i++) {
    float norm = (x[i] - m) * s, dnorm = weight[i] * d[i];
    di[i] += (dnorm - a - norm * b) * s;
  }
}

/* index: a column of C; rows in order */
STW_HD void
stw_cb_layernorm_backward_params(size_t i, float *dweight, float *dbias, const float *dout,
                                 const float *inp, const float *mean, const float *rstd, int N,
                                 int C, int accumulate)
{
  float dw = 0, db = 0;
  for (int r = 0; r < N; r++) {
    float d = dout[(size_t)r * C + i];
    dw += (inp[(size_t)r * C + i] - mean[r]) * rstd[r] * d;
    db += d;
  }
  dweight[i] = accumulate ? dweight[i] + dw : dw;
  dbias[i] = accumulate ? dbias[i] + db : db;
}

/* index over (rows, OC) */
STW_HD void
stw_cb_add_bias(size_t i, float *out, const float *bias, int OC)
{
  out[i] += bias[i % OC];
}

/* index: an output column o of OC; rows in order */
STW_HD void
stw_cb_bias_grad(size_t o, float *dbias, const float *dout, size_t rows, int OC, int accumulate)
{
  float s = 0;
  for (size_t r = 0; r < rows; r++)
    s += dout[r * OC + o];
  dbias[o] = accumulate ? dbias[o] + s : s;
}

/* tanh for GELU. On the GPU its own tanhf; on the CPU 1 - 2 / (e^2a + 1) with e^x by range
 * reduction (x = n ln 2 + r, |r| <= ln 2 / 2; r's Taylor polynomial to degree 7, error below
 * 1e-8; 2^n into the exponent bits), branch-free so that GELU's loops vectorize where libm's
 * tanhf would not. Within 2e-7 of tanhf. */
STW_HD float
stw_cb_tanhf(float a)
{
#ifdef __CUDA_ARCH__
  return tanhf(a);
#else
  float x = 2.0f * a;
  x = x < -87.0f ? -87.0f : x; /* two selects, which vectorize */
  x = x > 88.0f ? 88.0f : x;
  float n = floorf(x * 1.44269504f + 0.5f);
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  union {
    int32_t i;
    float f;
  } scale;
  scale.i = ((int32_t)n + 127) << 23;
  return 1.0f - 2.0f / (p * scale.f + 1.0f);
#endif
}

STW_HD void
stw_cb_gelu_forward(size_t i, float *out, const float *inp)
{
  float x = inp[i], cube = 0.044715f * x * x * x;
  out[i] = 0.5f * x * (1.0f + stw_cb_tanhf(STW_GELU_SCALE * (x + cube)));
}

STW_HD void
stw_cb_gelu_backward(size_t i, float *dinp, const float *inp, const float *dout)
{
  float x = inp[i], cube = 0.044715f * x * x * x;
  float th = stw_cb_tanhf(STW_GELU_SCALE * (x + cube)), sech2 = 1.0f - th * th;
  float grad = 0.5f * (1.0f + th) +
               x * 0.5f * sech2 * STW_GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
  dinp[i] = grad * dout[i];
}

STW_HD void
stw_cb_residual(size_t i, float *out, const float *a, const float *b)
{
  out[i] = a[i] + b[i];
}

/* index: a row of (B*T) */
STW_HD void
stw_cb_crossentropy_forward(size_t r, float *probs, float *losses, const float *logits,
                            const int *targets, int V)
{
  const float *l = logits + r * V;
  float *p = probs + r * V;
  float maxv = -1e30f, sum = 0;
  for (int i = 0; i < V; i++)
    maxv = fmaxf(maxv, l[i]);
  for (int i = 0; i < V; i++) {
    p[i] = expf(l[i] - maxv);
    sum += p[i];
  }
  for (int i = 0; i < V; i++)
    p[i] /= sum;
  losses[r] = -logf(p[targets[r]]);
}

/* index over (B*T, V) */
STW_HD void
stw_cb_crossentropy_backward(size_t i, float *dlogits, const float *probs, const int *targets,
                             int N, int V)
{
  size_t r = i / V;
  int v = (int)(i % V);
  dlogits[i] = (probs[i] - (v == targets[r] ? 1.0f : 0.0f)) * (1.0f / (float)N);
}

STW_HD void
stw_cb_add(size_t i, float *dst, const float *src)
{
  dst[i] += src[i];
}

/* One AdamW step's constants; the bias corrections 1 - beta^step are taken in double (powf
 * loses precision for large steps) and kept as reciprocals, so that an element costs one
 * division. */
typedef struct {
  float lr, b1, b2, eps, wd;
  float rbc1, rbc2;
  float unscale; /* an fp16 compute copy's gradient carries the loss scale: times this first */
  size_t vmax; /* AMSGrad: element i's largest variance so far is v[i + vmax]; 0: plain Adam */
  uint32_t seed; /* bf16 moments: the stochastic rounding's bits are hashed from it and i, */
  uint32_t base; /* i counted from this (0; a CPU loop over a block of the arrays: its start) */
  int bf16_moments; /* the moments (and largest variances) are bf16 (uint16_t arrays) */
} StwAdamStep;

STW_HD StwAdamStep
stw_cb_adam_step(float lr, float b1, float b2, float eps, float wd, float loss_scale, double step)
{
  StwAdamStep s = { lr, b1, b2, eps, wd, (float)(1.0 / (1.0 - pow(b1, step))),
                    (float)(1.0 / (1.0 - pow(b2, step))),
                    loss_scale > 0 ? 1.0f / loss_scale : 1.0f, 0,
                    stw_bits_hash((uint32_t)step * 0x9e3779b9u), 0, 0 };
  return s;
}

/* The step's arithmetic from the moments' old values M0, V0 (and the largest variance VMAX0):
 * their new values out, and the new weight from W. Shared by the fp32 and the bf16 moments. */
STW_HD_INLINED float
stw_cb_adam_core(float g, float m0, float v0, float vmax0, float *m1, float *v1, float *vmax1,
                 float w, StwAdamStep s)
{
  float mi = s.b1 * m0 + (1.0f - s.b1) * g;
  float vi = s.b2 * v0 + (1.0f - s.b2) * g * g;
  *m1 = mi;
  *v1 = vi;
  if (s.vmax != 0) { /* the step divides by the largest variance so far (torch.maximum's) */
    vi = vi > vmax0 || vi != vi ? vi : vmax0;
    *vmax1 = vi;
  }
  float mhat = mi * s.rbc1, vhat = vi * s.rbc2;
  return w - s.lr * (mhat / (sqrtf(vhat) + s.eps) + s.wd * w);
}

/* One AdamW step of element I for gradient G from weight W: updates M, V (and with AMSGrad the
 * largest V); returns the new weight. */
STW_HD_INLINED float
stw_cb_adam_moments(size_t i, float g, float w, float *m, float *v, StwAdamStep s)
{
  float mi, vi, vmax = 0;
  w = stw_cb_adam_core(g, m[i], v[i], s.vmax != 0 ? v[i + s.vmax] : 0.0f, &mi, &vi, &vmax, w, s);
  m[i] = mi;
  v[i] = vi;
  if (s.vmax != 0)
    v[i + s.vmax] = vmax;
  return w;
}

/* The same with bf16 moments (M, V: bf16 bit patterns), widened for the step and rounded back
 * stochastically (stw_bf16_from_float_sr). */
STW_HD_INLINED float
stw_cb_adam_moments_bs(size_t i, float g, float w, uint16_t *m, uint16_t *v, StwAdamStep s)
{
  float mi, vi, vmax = 0;
  w = stw_cb_adam_core(g, stw_bf16_to_float(m[i]), stw_bf16_to_float(v[i]),
                       s.vmax != 0 ? stw_bf16_to_float(v[i + s.vmax]) : 0.0f, &mi, &vi, &vmax, w,
                       s);
  uint32_t r = stw_bits_hash(((uint32_t)i + s.base) ^ s.seed);
  m[i] = stw_bf16_from_float_sr(mi, r);
  v[i] = stw_bf16_from_float_sr(vi, r >> 16 | r << 16);
  if (s.vmax != 0) /* the largest of rounded values: it is one of them, no rounding */
    v[i + s.vmax] = vmax == vi ? v[i] : stw_bf16_from_float(vmax);
  return w;
}

/* One AdamW step of element I for gradient G: updates M, V (and with AMSGrad the largest V) and
 * MASTER. Returns the new weight. */
STW_HD_INLINED float
stw_cb_adam_element(size_t i, float g, float *master, float *m, float *v, StwAdamStep s)
{
  return master[i] = stw_cb_adam_moments(i, g, master[i], m, v, s);
}

/* The same with bf16 moments, the master weights fp32. */
STW_HD_INLINED float
stw_cb_adam_element_bs(size_t i, float g, float *master, uint16_t *m, uint16_t *v, StwAdamStep s)
{
  return master[i] = stw_cb_adam_moments_bs(i, g, master[i], m, v, s);
}

/* AdamW with the weights kept in an fp32 compute copy (runtime.c: the master holds them only
 * while the gradient is in the copy's place): PARAM holds the gradient and gets the new weights,
 * MASTER is only read (it may be PARAM itself) — 28 bytes an element where writing both moves
 * 32, bitwise the same weights. */
STW_HD_INLINED void
stw_cb_adam_to_copy(size_t i, float *param, const float *master, float *m, float *v,
                    StwAdamStep s)
{
  param[i] = stw_cb_adam_moments(i, param[i], master[i], m, v, s);
}

STW_HD_INLINED void
stw_cb_adam_to_copy_bs(size_t i, float *param, const float *master, uint16_t *m, uint16_t *v,
                       StwAdamStep s)
{
  param[i] = stw_cb_adam_moments_bs(i, param[i], master[i], m, v, s);
}

/* AdamW: PARAM holds the gradient and gets the new weights, in the same pass as MASTER */
STW_HD_INLINED void
stw_cb_adam(size_t i, float *param, float *master, float *m, float *v, StwAdamStep s)
{
  param[i] = stw_cb_adam_element(i, param[i], master, m, v, s);
}

/* ---- bf16 compute copies ------------------------------------------------------------------------ */

STW_HD void
stw_cb_widen_bf16(size_t i, float *dst, const uint16_t *src)
{
  dst[i] = stw_bf16_to_float(src[i]);
}

/* a gradient into a bf16 slot: replaced, or added to what the slot holds (a tied weight) */
STW_HD void
stw_cb_commit_bf16(size_t i, uint16_t *slot, const float *grad, int first)
{
  float g = first ? grad[i] : stw_bf16_to_float(slot[i]) + grad[i];
  slot[i] = stw_bf16_from_float(g);
}

/* AdamW with a bf16 compute copy: PARAM holds the gradient and gets the rounded new weights */
STW_HD_INLINED void
stw_cb_adam_bf16(size_t i, uint16_t *param, float *master, float *m, float *v, StwAdamStep s)
{
  float w = stw_cb_adam_element(i, stw_bf16_to_float(param[i]), master, m, v, s);
  param[i] = stw_bf16_from_float(w);
}

/* ---- fp16 compute copies ------------------------------------------------------------------------ */

/* AdamW with an fp16 compute copy: PARAM holds the gradient times the loss scale (unscaled here,
 * in fp32, so that it never underflows in fp16) and gets the rounded new weights */
STW_HD_INLINED void
stw_cb_adam_fp16(size_t i, uint16_t *param, float *master, float *m, float *v, StwAdamStep s)
{
  float w = stw_cb_adam_element(i, stw_fp16_to_float(param[i]) * s.unscale, master, m, v, s);
  param[i] = stw_fp16_from_float(w);
}

/* ---- bf16 moments (the optimizer state "bf16"), for each compute copy's dtype -------------- */

STW_HD_INLINED void
stw_cb_adam_bs(size_t i, float *param, float *master, uint16_t *m, uint16_t *v, StwAdamStep s)
{
  param[i] = stw_cb_adam_element_bs(i, param[i], master, m, v, s);
}

STW_HD_INLINED void
stw_cb_adam_bf16_bs(size_t i, uint16_t *param, float *master, uint16_t *m, uint16_t *v,
                    StwAdamStep s)
{
  param[i] = stw_bf16_from_float(stw_cb_adam_element_bs(i, stw_bf16_to_float(param[i]), master,
                                                        m, v, s));
}

STW_HD_INLINED void
stw_cb_adam_fp16_bs(size_t i, uint16_t *param, float *master, uint16_t *m, uint16_t *v,
                    StwAdamStep s)
{
  param[i] = stw_fp16_from_float(stw_cb_adam_element_bs(i, stw_fp16_to_float(param[i]) *
                                                        s.unscale, master, m, v, s));
}

/* ---- rows by warps ---------------------------------------------------------------------------
 *
 * On the GPU a row (LayerNorm's, cross-entropy's) or a query position and head (attention's) is
 * a warp's: each of its STW_LANES lanes takes every 32nd element, and the lanes' partial sums
 * meet in a fixed tree, which every lane evaluates over the partials in shared memory. The
 * tests run the same lane bodies and the same tree for every lane on the CPU, so that what the
 * GPU computes is checked here, to the order of its sums. */

#define STW_LANES 32

/* The sum of 32 lane partials in a fixed order: lane i with lane i + 16, then halving. */
STW_HD float
stw_cb_lane_sum(const float *p)
{
  float s[16];
  for (int i = 0; i < 16; i++)
    s[i] = p[i] + p[i + 16];
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; i++)
      s[i] = s[i] + s[i + w];
  return s[0];
}

STW_HD float
stw_cb_lane_max(const float *p)
{
  float m = p[0];
  for (int i = 1; i < STW_LANES; i++)
    m = fmaxf(m, p[i]);
  return m;
}

/* LayerNorm forward, lane LANE of ROW: the partial sum of its elements; of their squared
 * deviations from the mean M; then its outputs. */
STW_HD float
stw_cb_ln_lane_sum(size_t row, int lane, const float *inp, int C)
{
  const float *x = inp + row * C;
  float s = 0;
  for (int i = lane; i < C; i += STW_LANES)
    s += x[i];
  return s;
}

STW_HD float
stw_cb_ln_lane_var(size_t row, int lane, const float *inp, float m, int C)
{
  const float *x = inp + row * C;
  float s = 0;
  for (int i = lane; i < C; i += STW_LANES)
    s += (x[i] - m) * (x[i] - m);
  return s;
}

STW_HD void
stw_cb_ln_lane_write(size_t row, int lane, float *out, const float *inp, const float *weight,
                     const float *bias, float m, float rs, int C)
{
  const float *x = inp + row * C;
  float *o = out + row * C;
  for (int i = lane; i < C; i += STW_LANES)
    o[i] = rs * (x[i] - m) * weight[i] + bias[i];
}

/* LayerNorm backward to the input, lane LANE of ROW: its partial sums of dnorm and dnorm * norm,
 * then its elements of DINP, added into. */
STW_HD void
stw_cb_lnb_lane_sums(size_t row, int lane, const float *dout, const float *inp,
                     const float *weight, const float *mean, const float *rstd, int C, float *a,
                     float *b)
{
  const float *d = dout + row * C, *x = inp + row * C;
  float m = mean[row], rs = rstd[row], sa = 0, sb = 0;
  for (int i = lane; i < C; i += STW_LANES) {
    float norm = (x[i] - m) * rs, dnorm = weight[i] * d[i];
    sa += dnorm;
    sb += dnorm * norm;
  }
  *a = sa;
  *b = sb;
}

STW_HD void
stw_cb_lnb_lane_write(size_t row, int lane, float *dinp, const float *dout, const float *inp,
                      const float *weight, const float *mean, const float *rstd, float a,
                      float b, int C)
{
  const float *d = dout + row * C, *x = inp + row * C;
  float *di = dinp + row * C;
  float m = mean[row], rs = rstd[row];
  for (int i = lane; i < C; i += STW_LANES) {
    float norm = (x[i] - m) * rs, dnorm = weight[i] * d[i];
    di[i] += (dnorm - a - norm * b) * rs;
  }
}

/* Cross-entropy forward, lane LANE of row R: its largest logit; the exponentials of its logits
 * (into PROBS) and their partial sum; then its probabilities, and the row's loss from the lane
 * holding the target. */
STW_HD float
stw_cb_ce_lane_max(size_t r, int lane, const float *logits, int V)
{
  const float *l = logits + r * V;
  float m = -1e30f;
  for (int i = lane; i < V; i += STW_LANES)
    m = fmaxf(m, l[i]);
  return m;
}

STW_HD float
stw_cb_ce_lane_exp(size_t r, int lane, float *probs, const float *logits, float maxv, int V)
{
  const float *l = logits + r * V;
  float *p = probs + r * V, s = 0;
  for (int i = lane; i < V; i += STW_LANES) {
    p[i] = expf(l[i] - maxv);
    s += p[i];
  }
  return s;
}

STW_HD void
stw_cb_ce_lane_write(size_t r, int lane, float *probs, float *losses, const int *targets,
                     float sum, int V)
{
  float *p = probs + r * V;
  for (int i = lane; i < V; i += STW_LANES)
    p[i] /= sum;
  if (targets[r] % STW_LANES == lane)
    losses[r] = -logf(p[targets[r]]);
}

/* ---- attention by heads: its products as GEMMs ----------------------------------------------
 *
 * The naive attention's six products for a (batch row b, head h) are GEMMs over (T, hs) views
 * into the (B, T, 3C) qkv rows, the (B, T, C) output and their gradients, and over the head's
 * (T, T) scores: on the CPU one call per head (kernels.c), on the GPU one strided batch of the
 * NH heads per batch row (compute-cuda.cu, cuBLAS). A row-major (T, hs) view of leading
 * dimension ld is a column-major (hs, T) matrix of that ld to the GEMM, and a row-major (T, T)
 * matrix its own transpose. The softmax and its backward run by rows between them. */

typedef enum { STW_ATT_Q, STW_ATT_K, STW_ATT_V, STW_ATT_OUT, STW_ATT_PRE, STW_ATT_ATT,
               STW_ATT_DOUT, STW_ATT_DQ, STW_ATT_DK, STW_ATT_DV, STW_ATT_DATT, STW_ATT_DPRE,
               STW_ATT_N_OPERANDS } StwAttOperand;

typedef enum { STW_ATT_SCORES,     /* pre = Q K^T (scaled later, by rows) */
               STW_ATT_VALUES,     /* out = att V */
               STW_ATT_GRAD_V,     /* dV = att^T dout */
               STW_ATT_GRAD_ATT,   /* datt = dout V^T */
               STW_ATT_GRAD_Q,     /* dQ = dpre K (scaled later) */
               STW_ATT_GRAD_K,     /* dK = dpre^T Q (scaled later) */
               STW_ATT_N_PRODUCTS } StwAttProduct;

/* C (m x n, column-major) = op(A) op(B), written; A, B and C by their role */
typedef struct {
  int trans_a, trans_b, m, n, k;
  StwAttOperand a, b, c;
} StwAttGemm;

STW_HD StwAttGemm
stw_cb_att_gemm(StwAttProduct p, int T, int hs)
{
  StwAttGemm g[STW_ATT_N_PRODUCTS] = {
    { 1, 0, T, T, hs, STW_ATT_K, STW_ATT_Q, STW_ATT_PRE },
    { 0, 0, hs, T, T, STW_ATT_V, STW_ATT_ATT, STW_ATT_OUT },
    { 0, 1, hs, T, T, STW_ATT_DOUT, STW_ATT_ATT, STW_ATT_DV },
    { 1, 0, T, T, hs, STW_ATT_V, STW_ATT_DOUT, STW_ATT_DATT },
    { 0, 0, hs, T, T, STW_ATT_K, STW_ATT_DPRE, STW_ATT_DQ },
    { 0, 1, hs, T, T, STW_ATT_Q, STW_ATT_DPRE, STW_ATT_DK },
  };
  return g[p];
}

/* An operand's leading dimension: the qkv rows' 3C, the output's C, the scores' T */
STW_HD int
stw_cb_att_ld(StwAttOperand o, int T, int C)
{
  switch (o) {
  case STW_ATT_OUT:
  case STW_ATT_DOUT:
    return C;
  case STW_ATT_PRE:
  case STW_ATT_ATT:
  case STW_ATT_DATT:
  case STW_ATT_DPRE:
    return T;
  default:
    return 3 * C;
  }
}

/* The operands' whole arrays by role, for the products of a forward (DOUT, DINP, DATT and DPRE
 * NULL) or a backward (OUT and PRE NULL) */
STW_HD void
stw_cb_att_operands(float *base[STW_ATT_N_OPERANDS], const float *inp, float *out, float *pre,
                    const float *att, const float *dout, float *dinp, float *datt, float *dpre)
{
  base[STW_ATT_Q] = base[STW_ATT_K] = base[STW_ATT_V] = (float *)inp;
  base[STW_ATT_OUT] = out;
  base[STW_ATT_PRE] = pre;
  base[STW_ATT_ATT] = (float *)att;
  base[STW_ATT_DOUT] = (float *)dout;
  base[STW_ATT_DQ] = base[STW_ATT_DK] = base[STW_ATT_DV] = dinp;
  base[STW_ATT_DATT] = datt;
  base[STW_ATT_DPRE] = dpre;
}

/* Where head H of batch row B starts in its operand, in elements */
STW_HD size_t
stw_cb_att_offset(StwAttOperand o, int b, int h, int T, int C, int NH)
{
  size_t hs = (size_t)(C / NH), rows = (size_t)b * T;
  switch (o) {
  case STW_ATT_Q:
  case STW_ATT_DQ:
    return rows * 3 * C + h * hs;
  case STW_ATT_K:
  case STW_ATT_DK:
    return rows * 3 * C + C + h * hs;
  case STW_ATT_V:
  case STW_ATT_DV:
    return rows * 3 * C + 2 * (size_t)C + h * hs;
  case STW_ATT_OUT:
  case STW_ATT_DOUT:
    return rows * C + h * hs;
  default:
    return ((size_t)b * NH + h) * T * T;
  }
}

/* The step from one head's start to the next's in an operand (the GPU's batch stride) */
STW_HD size_t
stw_cb_att_head_stride(StwAttOperand o, int T, int C, int NH)
{
  return stw_cb_att_offset(o, 0, 1, T, C, NH) - stw_cb_att_offset(o, 0, 0, T, C, NH);
}

/* The softmax of score row R (over (B, NH, T), query t = R % T) by lane LANE: its scores up to t
 * scaled (in PRE) and their largest; their exponentials (into ATT) and partial sum; then ATT
 * normalized and both zero past t. */
STW_HD float
stw_cb_att_lane_max(size_t r, int lane, float *pre, int T, float scale)
{
  int t = (int)(r % T);
  float *p = pre + r * T, m = -1e30f;
  for (int t2 = lane; t2 <= t; t2 += STW_LANES) {
    p[t2] *= scale;
    m = fmaxf(m, p[t2]);
  }
  return m;
}

STW_HD float
stw_cb_att_lane_exp(size_t r, int lane, const float *pre, float *att, float maxv, int T)
{
  int t = (int)(r % T);
  const float *p = pre + r * T;
  float *a = att + r * T, s = 0;
  for (int t2 = lane; t2 <= t; t2 += STW_LANES) {
    a[t2] = expf(p[t2] - maxv);
    s += a[t2];
  }
  return s;
}

STW_HD void
stw_cb_att_lane_norm(size_t r, int lane, float *pre, float *att, float sum, int T)
{
  int t = (int)(r % T);
  float *p = pre + r * T, *a = att + r * T, inv = sum == 0.0f ? 0.0f : 1.0f / sum;
  for (int t2 = lane; t2 < T; t2 += STW_LANES) {
    a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
    if (t2 > t)
      p[t2] = 0.0f;
  }
}

/* The softmax's backward of row R by lane LANE: its share of sum(a da); then
 * dpre = a (da - sum(a da)), both zero past t */
STW_HD float
stw_cb_attb_lane_dot(size_t r, int lane, const float *att, const float *datt, int T)
{
  int t = (int)(r % T);
  const float *a = att + r * T, *d = datt + r * T;
  float s = 0;
  for (int t2 = lane; t2 <= t; t2 += STW_LANES)
    s += a[t2] * d[t2];
  return s;
}

STW_HD void
stw_cb_attb_lane_grad(size_t r, int lane, float *dpre, float *datt, const float *att, float dot,
                      int T)
{
  int t = (int)(r % T);
  const float *a = att + r * T;
  float *d = datt + r * T, *dp = dpre + r * T;
  for (int t2 = lane; t2 < T; t2 += STW_LANES) {
    dp[t2] = t2 <= t ? a[t2] * (d[t2] - dot) : 0.0f;
    if (t2 > t)
      d[t2] = 0.0f;
  }
}

/* index i over (B, T, C): the query's and the key's gradient element, times SCALE (the scores'
 * 1 / sqrt(hs), left out of the GEMMs) */
STW_HD void
stw_cb_att_scale_dqk(size_t i, float *dinp, int C, float scale)
{
  size_t bt = i / C, c = i % C;
  dinp[bt * 3 * C + c] *= scale;
  dinp[bt * 3 * C + C + c] *= scale;
}

/* ---- fused attention (FlashAttention's arithmetic) ------------------------------------------
 *
 * Causal attention that keeps no (T x T) matrix: the forward keeps each query row's log-sum-exp
 * of its scores (LSE, (B, NH, T)) beside the output, and the backward recomputes the scores and
 * weights from Q, K and LSE. The work is by warps, as above. A query row's lanes take its keys
 * t2 = lane, lane + 32, ... <= t; each keeps its own running maximum and sum of exponentials,
 * then its share of the output row (or of the query's gradient) over its keys in ACC, which the
 * warp's tree combines dimension by dimension. The keys' and values' gradients are a key row's
 * warp's, its lanes taking the queries t = t2 + lane, t2 + lane + 32, ... < T that see it. Every
 * gradient is written once, by one warp: nothing is added into across threads, so the result is
 * the same on every run and on both devices. DELTA (B, NH, T) carries each query row's
 * sum(dout * out) from the queries' pass to the keys' pass. Head widths up to STW_FA_MAX_HS. */

#define STW_FA_MAX_HS 128

/* Q K^T / sqrt(hs) for one query and key row: the same arithmetic in every pass */
STW_HD float
stw_cb_fa_score(const float *q, const float *k, int hs, float scale)
{
  float v = 0;
  for (int i = 0; i < hs; i++)
    v += q[i] * k[i];
  return v * scale;
}

STW_HD float
stw_cb_fa_dot(const float *a, const float *b, int hs)
{
  float v = 0;
  for (int i = 0; i < hs; i++)
    v += a[i] * b[i];
  return v;
}

/* Forward, lane LANE of query row IDX (over (B, T, NH)): the largest of its keys' scores (*M;
 * -1e30 without keys) and the sum of their exponentials relative to it (*L), in one pass. */
STW_HD void
stw_cb_fa_lane_stats(size_t idx, int lane, const float *inp, int T, int C, int NH, float *m,
                     float *l)
{
  int h = (int)(idx % NH), t = (int)((idx / NH) % T), b = (int)(idx / ((size_t)NH * T));
  int hs = C / NH, C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs), mx = -1e30f, sum = 0;
  const float *q = inp + ((size_t)b * T + t) * C3 + h * hs;
  for (int t2 = lane; t2 <= t; t2 += STW_LANES) {
    float s = stw_cb_fa_score(q, inp + ((size_t)b * T + t2) * C3 + h * hs + C, hs, scale);
    if (s > mx) {
      sum = sum * expf(mx - s) + 1.0f;
      mx = s;
    } else {
      sum += expf(s - mx);
    }
  }
  *m = mx;
  *l = sum;
}

/* The lanes' (M, L) combined: the row's log-sum-exp from the lanes' maximum MAXV and their
 * sums rescaled to it, added by the warp's tree */
STW_HD float
stw_cb_fa_lane_rescaled(float m, float l, float maxv)
{
  return l * expf(m - maxv);
}

/* Forward, lane LANE: its keys' share of the output row, sum of exp(s - LSE) v, into ACC (hs) */
STW_HD void
stw_cb_fa_lane_out(size_t idx, int lane, float *acc, const float *inp, float lse, int T, int C,
                   int NH)
{
  int h = (int)(idx % NH), t = (int)((idx / NH) % T), b = (int)(idx / ((size_t)NH * T));
  int hs = C / NH, C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
  const float *q = inp + ((size_t)b * T + t) * C3 + h * hs;
  for (int i = 0; i < hs; i++)
    acc[i] = 0.0f;
  for (int t2 = lane; t2 <= t; t2 += STW_LANES) {
    const float *kv = inp + ((size_t)b * T + t2) * C3 + h * hs;
    float p = expf(stw_cb_fa_score(q, kv + C, hs, scale) - lse);
    for (int i = 0; i < hs; i++)
      acc[i] += p * kv[2 * C + i];
  }
}

/* Backward, lane LANE of query row IDX: its dimensions' share of sum(dout * out) */
STW_HD float
stw_cb_fa_lane_delta(size_t idx, int lane, const float *dout, const float *out, int T, int C,
                     int NH)
{
  int h = (int)(idx % NH), t = (int)((idx / NH) % T), b = (int)(idx / ((size_t)NH * T));
  int hs = C / NH;
  size_t at = ((size_t)b * T + t) * C + h * hs;
  float s = 0;
  for (int i = lane; i < hs; i += STW_LANES)
    s += dout[at + i] * out[at + i];
  return s;
}

/* Backward, lane LANE of query row IDX: its keys' share of the query's gradient, sum of
 * p (dout . v - DELTA) k / sqrt(hs), into ACC (hs, written) */
STW_HD void
stw_cb_fa_lane_dq(size_t idx, int lane, float *acc, const float *dout, const float *inp,
                  float lse, float delta, int T, int C, int NH)
{
  int h = (int)(idx % NH), t = (int)((idx / NH) % T), b = (int)(idx / ((size_t)NH * T));
  int hs = C / NH, C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
  const float *q = inp + ((size_t)b * T + t) * C3 + h * hs;
  const float *d = dout + ((size_t)b * T + t) * C + h * hs;
  for (int i = 0; i < hs; i++)
    acc[i] = 0.0f;
  for (int t2 = lane; t2 <= t; t2 += STW_LANES) {
    const float *kv = inp + ((size_t)b * T + t2) * C3 + h * hs;
    float p = expf(stw_cb_fa_score(q, kv + C, hs, scale) - lse);
    float g = p * (stw_cb_fa_dot(d, kv + 2 * C, hs) - delta) * scale;
    for (int i = 0; i < hs; i++)
      acc[i] += g * kv[C + i];
  }
}

/* Backward, lane LANE of key row IDX (over (B, T, NH)): the queries t = t2 + lane,
 * t2 + lane + 32, ... < T that see it, their share of the key's gradient (into ACCK) and of the
 * value's (ACCV), both written */
STW_HD void
stw_cb_fa_lane_dkv(size_t idx, int lane, float *acck, float *accv, const float *dout,
                   const float *inp, const float *lse, const float *delta, int T, int C, int NH)
{
  int h = (int)(idx % NH), t2 = (int)((idx / NH) % T), b = (int)(idx / ((size_t)NH * T));
  int hs = C / NH, C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
  const float *kv = inp + ((size_t)b * T + t2) * C3 + h * hs;
  for (int i = 0; i < hs; i++)
    acck[i] = accv[i] = 0.0f;
  for (int t = t2 + lane; t < T; t += STW_LANES) {
    const float *q = inp + ((size_t)b * T + t) * C3 + h * hs;
    const float *d = dout + ((size_t)b * T + t) * C + h * hs;
    size_t r = ((size_t)b * NH + h) * T + t;
    float p = expf(stw_cb_fa_score(q, kv + C, hs, scale) - lse[r]);
    float g = p * (stw_cb_fa_dot(d, kv + 2 * C, hs) - delta[r]) * scale;
    for (int i = 0; i < hs; i++) {
      accv[i] += p * d[i];
      acck[i] += g * q[i];
    }
  }
}

/* ---- sums down columns, in two stages -------------------------------------------------------
 *
 * LayerNorm's weight and bias gradients and a matmul's bias gradient sum a column over every
 * row. On the GPU the rows are cut into chunks of STW_COLUMN_ROWS, one thread per (column,
 * chunk) sums its chunk into a partial, and one thread per column adds the partials in chunk
 * order, so that thousands of threads share the work and the result is the same every run. */

#define STW_COLUMN_ROWS 256

/* LayerNorm: the partials of column I over the rows of CHUNK (of N rows), into PW and PB at
 * [CHUNK * C + I] */
STW_HD void
stw_cb_ln_column_partial(size_t i, int chunk, float *pw, float *pb, const float *dout,
                         const float *inp, const float *mean, const float *rstd, int N, int C)
{
  float dw = 0, db = 0;
  int end = (chunk + 1) * STW_COLUMN_ROWS < N ? (chunk + 1) * STW_COLUMN_ROWS : N;
  for (int r = chunk * STW_COLUMN_ROWS; r < end; r++) {
    float d = dout[(size_t)r * C + i];
    dw += (inp[(size_t)r * C + i] - mean[r]) * rstd[r] * d;
    db += d;
  }
  pw[(size_t)chunk * C + i] = dw;
  pb[(size_t)chunk * C + i] = db;
}

/* a matmul's bias: the partial of column O over the rows of CHUNK */
STW_HD void
stw_cb_bias_column_partial(size_t o, int chunk, float *pb, const float *dout, size_t rows,
                           int OC)
{
  float s = 0;
  size_t end = (size_t)(chunk + 1) * STW_COLUMN_ROWS;
  end = end < rows ? end : rows;
  for (size_t r = (size_t)chunk * STW_COLUMN_ROWS; r < end; r++)
    s += dout[r * OC + o];
  pb[(size_t)chunk * OC + o] = s;
}

/* column I's partials of CHUNKS chunks, in order, into OUT (written, or added to) */
STW_HD void
stw_cb_column_total(size_t i, int chunks, float *out, const float *partial, int C,
                    int accumulate)
{
  float s = 0;
  for (int k = 0; k < chunks; k++)
    s += partial[(size_t)k * C + i];
  out[i] = accumulate ? out[i] + s : s;
}

/* ---- the matmuls' GEMMs ---------------------------------------------------------------------- */

/* One cuBLAS GEMM on column-major arrays: C (m x n) = op(A) op(B) + beta C, op transposing where
 * TRANS_A / TRANS_B say; with beta 0, C is written without being read. Row-major arrays are
 * their transposes to cuBLAS. A, B and C name the matmul's operands. */
typedef enum { STW_GEMM_INP, STW_GEMM_WEIGHT, STW_GEMM_OUT, STW_GEMM_DOUT, STW_GEMM_DINP,
               STW_GEMM_DWEIGHT } StwGemmOperand;

typedef struct StwGemm {
  int trans_a, trans_b;
  int m, n, k;
  StwGemmOperand a, b, c;
  int lda, ldb, ldc;
  float beta;
} StwGemm;

/* out (BT, OC) = inp (BT, C) weight (OC, C)^T: out^T (OC, BT) = (weight^T)^T inp^T */
STW_HD StwGemm
stw_cb_matmul_forward_gemm(int BT, int C, int OC)
{
  StwGemm g = { 1, 0, OC, BT, C, STW_GEMM_WEIGHT, STW_GEMM_INP, STW_GEMM_OUT, C, C, OC, 0.0f };
  return g;
}

/* dinp (BT, C) = dout (BT, OC) weight (OC, C): dinp^T (C, BT) = weight^T dout^T */
STW_HD StwGemm
stw_cb_matmul_dinp_gemm(int BT, int C, int OC)
{
  StwGemm g = { 0, 0, C, BT, OC, STW_GEMM_WEIGHT, STW_GEMM_DOUT, STW_GEMM_DINP, C, OC, C, 0.0f };
  return g;
}

/* dweight (OC, C) = dout^T (OC, BT) inp (BT, C), or += with ACCUMULATE:
 * dweight^T (C, OC) = inp^T (dout^T)^T */
STW_HD StwGemm
stw_cb_matmul_dweight_gemm(int BT, int C, int OC, int accumulate)
{
  StwGemm g = { 0, 1, C, OC, BT, STW_GEMM_INP, STW_GEMM_DOUT, STW_GEMM_DWEIGHT, C, OC, C,
                accumulate ? 1.0f : 0.0f };
  return g;
}

#endif
