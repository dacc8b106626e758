/* kernels.c — see kernels.h. The formulas are llm.c's (Karpathy), reorganized so that every
 * parallel loop writes disjoint outputs. Where the CPU's loop has the GPU's shape (one iteration
 * per element, row or column) it runs the CUDA table's thread body (compute-cuda-bodies.h), so
 * both devices share one copy of the arithmetic; the matmuls run the GEMMs the GPU gives cuBLAS
 * (a BLAS's sgemm here, or the loops below), and attention's backward has a loop of its own (the
 * GPU adds atomically there). */
#include "config.h"

#include "kernels.h"

#include "compute-cuda-bodies.h"

#include <math.h>
#include <string.h>

#include <glib.h>

#ifdef STW_HAVE_BLAS
#include <cblas.h>
#endif

/* ---- loops over elements and rows: a cloned range function each, run over the threads ------- */

STW_CLONES static void
encoder_forward_range(size_t lo, size_t hi, float *out, const int *inp, const float *wte,
                      const float *wpe, int T, int C)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_encoder_forward(i, out, inp, wte, wpe, T, C);
}

void
stw_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T,
                    int C)
{
  size_t n = (size_t)B * T * C;
  STW_PARALLEL_RANGE(n, n, encoder_forward_range, out, inp, wte, wpe, T, C);
}

void
stw_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T,
                     int C)
{
  /* serial: token rows repeat, and a fixed order keeps the sums reproducible */
  size_t n = (size_t)B * T * C;
  for (size_t i = 0; i < n; i++)
    stw_cb_encoder_backward(i, dwte, dwpe, dout, inp, T, C);
}

STW_CLONES static void
layernorm_forward_rows(size_t lo, size_t hi, float *out, float *mean, float *rstd,
                       const float *inp, const float *weight, const float *bias, int C)
{
  for (size_t r = lo; r < hi; r++)
    stw_cb_layernorm_forward(r, out, mean, rstd, inp, weight, bias, C);
}

void
stw_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                      const float *bias, int B, int T, int C)
{
  size_t rows = (size_t)B * T;
  STW_PARALLEL_RANGE(rows, rows * C, layernorm_forward_rows, out, mean, rstd, inp, weight, bias,
                     C);
}

STW_CLONES static void
layernorm_backward_rows(size_t lo, size_t hi, float *dinp, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int C)
{
  for (size_t r = lo; r < hi; r++)
    stw_cb_layernorm_backward_inp(r, dinp, dout, inp, weight, mean, rstd, C);
}

STW_CLONES static void
layernorm_backward_columns(size_t lo, size_t hi, float *dweight, float *dbias, const float *dout,
                           const float *inp, const float *mean, const float *rstd, int N, int C,
                           int accumulate)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_layernorm_backward_params(i, dweight, dbias, dout, inp, mean, rstd, N, C, accumulate);
}

void
stw_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                       const float *inp, const float *weight, const float *mean, const float *rstd,
                       int B, int T, int C, int accumulate)
{
  size_t rows = (size_t)B * T;
  /* the input's gradient first: DWEIGHT may be WEIGHT's own memory */
  STW_PARALLEL_RANGE(rows, rows * C, layernorm_backward_rows, dinp, dout, inp, weight, mean, rstd,
                     C);
  STW_PARALLEL_RANGE((size_t)C, rows * C, layernorm_backward_columns, dweight, dbias, dout, inp,
                     mean, rstd, (int)rows, C, accumulate);
}

/* ---- GEMMs ------------------------------------------------------------------------------- */

/* The portable GEMM: column-major as cuBLAS, C (m x n) = op(A) op(B) + beta C. Each thread owns
 * blocks of columns of C and sums every element over l in order, so the result is the same
 * whatever the thread count. op(A)'s columns are read contiguously (A transposed is copied
 * first); four columns of C at a time reuse each of them, in row blocks that stay in cache. */
#define GEMM_ROWS 256
#define GEMM_COLS 4

void
stw_gemm_portable(const StwGemm *g, const float *const operands[])
{
  const float *A = operands[g->a], *Bm = operands[g->b];
  float *Cm = (float *)operands[g->c];
  int m = g->m, n = g->n, k = g->k;
  g_autofree float *at = NULL;
  size_t lda = (size_t)g->lda;
  if (g->trans_a) { /* op(A) (m x k) gathered column by column */
    at = g_new(float, (size_t)m * k);
    for (int l = 0; l < k; l++)
      for (int i = 0; i < m; i++)
        at[i + (size_t)l * m] = A[l + (size_t)i * lda];
    A = at;
    lda = (size_t)m;
  }
  int col_blocks = (n + GEMM_COLS - 1) / GEMM_COLS;
#pragma omp parallel for schedule(static)
  for (int jb = 0; jb < col_blocks; jb++) {
    int j0 = jb * GEMM_COLS, nj = MIN(GEMM_COLS, n - j0);
    for (int i0 = 0; i0 < m; i0 += GEMM_ROWS) {
      int ni = MIN(GEMM_ROWS, m - i0);
      float acc[GEMM_COLS][GEMM_ROWS];
      for (int j = 0; j < nj; j++)
        for (int i = 0; i < ni; i++)
          acc[j][i] = g->beta == 0.0f ? 0.0f : g->beta * Cm[i0 + i + (size_t)(j0 + j) * g->ldc];
      for (int l = 0; l < k; l++) {
        const float *a = A + i0 + (size_t)l * lda;
        for (int j = 0; j < nj; j++) {
          size_t jj = (size_t)(j0 + j);
          float b = g->trans_b ? Bm[jj + (size_t)l * g->ldb] : Bm[l + jj * g->ldb];
          float *c = acc[j];
          for (int i = 0; i < ni; i++)
            c[i] += a[i] * b;
        }
      }
      for (int j = 0; j < nj; j++)
        memcpy(Cm + i0 + (size_t)(j0 + j) * g->ldc, acc[j], (size_t)ni * sizeof(float));
    }
  }
}

void
stw_gemm_host(const StwGemm *g, const float *const operands[])
{
#ifdef STW_HAVE_BLAS
  cblas_sgemm(CblasColMajor, g->trans_a ? CblasTrans : CblasNoTrans,
              g->trans_b ? CblasTrans : CblasNoTrans, g->m, g->n, g->k, 1.0f, operands[g->a],
              g->lda, operands[g->b], g->ldb, g->beta, (float *)operands[g->c], g->ldc);
#else
  stw_gemm_portable(g, operands);
#endif
}

/* The bias gradient's columns [LO, HI): each the sum of its column over the rows in row order,
 * as the GPU's body sums it, taken row by row so that the loads are contiguous. */
STW_CLONES static void
bias_grad_columns(size_t lo, size_t hi, float *dbias, const float *dout, size_t rows, int OC,
                  int accumulate)
{
  size_t n = hi - lo;
  g_autofree float *sum = g_new0(float, MAX(n, 1));
  for (size_t r = 0; r < rows; r++) {
    const float *d = dout + r * OC + lo;
    for (size_t o = 0; o < n; o++)
      sum[o] += d[o];
  }
  for (size_t o = 0; o < n; o++)
    dbias[lo + o] = accumulate ? dbias[lo + o] + sum[o] : sum[o];
}

STW_CLONES static void
bias_rows(size_t lo, size_t hi, float *out, const float *bias, int OC)
{
  for (size_t r = lo; r < hi; r++)
    memcpy(out + r * OC, bias, (size_t)OC * sizeof(float));
}

void
stw_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int B,
                   int T, int C, int OC)
{
  int BT = B * T;
  const float *ops[] = { inp, weight, out, NULL, NULL, NULL };
  StwGemm g = stw_cb_matmul_forward_gemm(BT, C, OC);
  if (bias != NULL) { /* the bias in every row first, the GEMM adding to it: one pass fewer */
    STW_PARALLEL_RANGE((size_t)BT, (size_t)BT * OC, bias_rows, out, bias, OC);
    g.beta = 1.0f;
  }
  stw_gemm_host(&g, ops);
}

void
stw_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                    const float *inp, const float *weight, int B, int T, int C, int OC,
                    int accumulate)
{
  int BT = B * T;
  const float *ops[] = { inp, weight, NULL, dout, dinp, dweight };
  /* the input's gradient first: DWEIGHT may be WEIGHT's own memory */
  StwGemm gi = stw_cb_matmul_dinp_gemm(BT, C, OC), gw = stw_cb_matmul_dweight_gemm(BT, C, OC,
                                                                                   accumulate);
  stw_gemm_host(&gi, ops);
  stw_gemm_host(&gw, ops);
  if (dbias == NULL)
    return;
  STW_PARALLEL_RANGE((size_t)OC, (size_t)BT * OC, bias_grad_columns, dbias, dout, (size_t)BT, OC,
                     accumulate);
}

/* ---- the rest ------------------------------------------------------------------------------ */

STW_CLONES static void
attention_forward_range(size_t lo, size_t hi, float *out, float *preatt, float *att,
                        const float *inp, int T, int C, int NH)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_attention_forward(i, out, preatt, att, inp, T, C, NH);
}

void
stw_attention_forward(float *out, float *preatt, float *att, const float *inp, int B, int T,
                      int C, int NH)
{
  size_t n = (size_t)B * T * NH;
  STW_PARALLEL_RANGE(n, n * T * (C / NH), attention_forward_range, out, preatt, att, inp, T, C,
                     NH);
}

/* Attention's backward for one (batch row, head): every position t adds into the key and value
 * rows of the positions it attends to, so t runs in order; the softmax's backward as
 * dpre = a (da - sum(a da)), as the GPU's body takes it. */
STW_CLONES static void
attention_backward_head(int b, int h, float *dinp, float *dpreatt, float *datt, const float *dout,
                        const float *inp, const float *att, int T, int C, int NH)
{
  int hs = C / NH, C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
  for (int t = 0; t < T; t++)
    for (int part = 0; part < 3; part++)
      memset(dinp + ((size_t)b * T + t) * C3 + part * C + h * hs, 0, (size_t)hs * sizeof(float));
  for (int t = 0; t < T; t++) {
    const float *a = att + (((size_t)b * NH + h) * T + t) * T;
    float *da = datt + (((size_t)b * NH + h) * T + t) * T;
    float *dpre = dpreatt + (((size_t)b * NH + h) * T + t) * T;
    const float *q = inp + ((size_t)b * T + t) * C3 + h * hs;
    float *dq = dinp + ((size_t)b * T + t) * C3 + h * hs;
    const float *d = dout + ((size_t)b * T + t) * C + h * hs;
    float dot = 0;
    for (int t2 = 0; t2 <= t; t2++) {
      const float *v = inp + ((size_t)b * T + t2) * C3 + h * hs + 2 * C;
      float *dv = dinp + ((size_t)b * T + t2) * C3 + h * hs + 2 * C;
      float sum = 0;
      for (int i = 0; i < hs; i++)
        sum += v[i] * d[i];
      for (int i = 0; i < hs; i++)
        dv[i] += a[t2] * d[i];
      da[t2] = sum;
      dot += a[t2] * sum;
    }
    for (int t2 = 0; t2 <= t; t2++)
      dpre[t2] = a[t2] * (da[t2] - dot);
    for (int t2 = t + 1; t2 < T; t2++)
      da[t2] = dpre[t2] = 0.0f;
    for (int t2 = 0; t2 <= t; t2++) {
      const float *k = inp + ((size_t)b * T + t2) * C3 + h * hs + C;
      float *dk = dinp + ((size_t)b * T + t2) * C3 + h * hs + C;
      float g = dpre[t2] * scale;
      for (int i = 0; i < hs; i++)
        dq[i] += k[i] * g;
      for (int i = 0; i < hs; i++)
        dk[i] += q[i] * g;
    }
  }
}

void
stw_attention_backward(float *dinp, float *dpreatt, float *datt, const float *dout,
                       const float *inp, const float *att, int B, int T, int C, int NH)
{
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++)
      attention_backward_head(b, h, dinp, dpreatt, datt, dout, inp, att, T, C, NH);
}

/* Fused attention on the CPU: a query row's keys in blocks of FA_BLOCK, their scores once, the
 * output row rescaled whenever the running maximum grows (FlashAttention's forward); the
 * backward recomputes each weight from LSE, the queries' gradients by query rows and the keys'
 * and values' by key rows, so that every row is one thread's and nothing is added across
 * threads. The GPU takes a row by a warp's lanes (compute-cuda-bodies.h), which
 * tests/test-compute.c checks against these loops. */
#define FA_BLOCK 32

STW_CLONES static void
flash_forward_range(size_t lo, size_t hi, float *out, float *lse, const float *inp, int T, int C,
                    int NH)
{
  int hs = C / NH, C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs), sc[FA_BLOCK];
  for (size_t idx = lo; idx < hi; idx++) {
    int h = (int)(idx % NH), t = (int)((idx / NH) % T), b = (int)(idx / ((size_t)NH * T));
    const float *q = inp + ((size_t)b * T + t) * C3 + h * hs;
    const float *base = inp + (size_t)b * T * C3 + h * hs;
    float *o = out + ((size_t)b * T + t) * C + h * hs;
    float m = -1e30f, l = 0;
    for (int i = 0; i < hs; i++)
      o[i] = 0.0f;
    for (int k0 = 0; k0 <= t; k0 += FA_BLOCK) {
      int n = MIN(FA_BLOCK, t + 1 - k0);
      float bm = m;
      for (int j = 0; j < n; j++) {
        sc[j] = stw_cb_fa_score(q, base + (size_t)(k0 + j) * C3 + C, hs, scale);
        bm = fmaxf(bm, sc[j]);
      }
      if (bm > m) {
        float corr = expf(m - bm);
        l *= corr;
        for (int i = 0; i < hs; i++)
          o[i] *= corr;
        m = bm;
      }
      for (int j = 0; j < n; j++) {
        float p = expf(sc[j] - m);
        const float *v = base + (size_t)(k0 + j) * C3 + 2 * C;
        l += p;
        for (int i = 0; i < hs; i++)
          o[i] += p * v[i];
      }
    }
    float inv = 1.0f / l;
    for (int i = 0; i < hs; i++)
      o[i] *= inv;
    lse[((size_t)b * NH + h) * T + t] = m + logf(l);
  }
}

void
stw_attention_flash_forward(float *out, float *lse, const float *inp, int B, int T, int C, int NH)
{
  size_t n = (size_t)B * T * NH;
  STW_PARALLEL_RANGE(n, n * T * (C / NH), flash_forward_range, out, lse, inp, T, C, NH);
}

STW_CLONES static void
flash_dq_range(size_t lo, size_t hi, float *dinp, float *delta, const float *dout,
               const float *inp, const float *out, const float *lse, int T, int C, int NH)
{
  int hs = C / NH, C3 = 3 * C;
  for (size_t idx = lo; idx < hi; idx++) {
    int h = (int)(idx % NH), t = (int)((idx / NH) % T), b = (int)(idx / ((size_t)NH * T));
    size_t r = ((size_t)b * NH + h) * T + t, at = ((size_t)b * T + t) * C + h * hs;
    delta[r] = stw_cb_fa_dot(dout + at, out + at, hs);
    stw_cb_fa_dq(idx, 0, 1, dinp + ((size_t)b * T + t) * C3 + h * hs, dout, inp, lse[r],
                 delta[r], T, C, NH);
  }
}

STW_CLONES static void
flash_dkv_range(size_t lo, size_t hi, float *dinp, const float *dout, const float *inp,
                const float *lse, const float *delta, int T, int C, int NH)
{
  int hs = C / NH, C3 = 3 * C;
  for (size_t idx = lo; idx < hi; idx++) {
    int h = (int)(idx % NH), t2 = (int)((idx / NH) % T), b = (int)(idx / ((size_t)NH * T));
    float *dk = dinp + ((size_t)b * T + t2) * C3 + h * hs + C;
    stw_cb_fa_dkv(idx, 0, 1, dk, dk + C, dout, inp, lse, delta, T, C, NH);
  }
}

void
stw_attention_flash_backward(float *dinp, float *delta, const float *dout, const float *inp,
                             const float *out, const float *lse, int B, int T, int C, int NH)
{
  size_t n = (size_t)B * T * NH, work = n * T * (C / NH);
  /* the queries' pass writes DELTA, which the keys' pass reads */
  STW_PARALLEL_RANGE(n, work, flash_dq_range, dinp, delta, dout, inp, out, lse, T, C, NH);
  STW_PARALLEL_RANGE(n, work, flash_dkv_range, dinp, dout, inp, lse, delta, T, C, NH);
}

STW_CLONES static void
gelu_forward_range(size_t lo, size_t hi, float *out, const float *inp)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_gelu_forward(i, out, inp);
}

void
stw_gelu_forward(float *out, const float *inp, size_t n)
{
  STW_PARALLEL_RANGE(n, 8 * n, gelu_forward_range, out, inp);
}

STW_CLONES static void
gelu_backward_range(size_t lo, size_t hi, float *dinp, const float *inp, const float *dout)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_gelu_backward(i, dinp, inp, dout);
}

void
stw_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
  STW_PARALLEL_RANGE(n, 8 * n, gelu_backward_range, dinp, inp, dout);
}

STW_CLONES static void
residual_range(size_t lo, size_t hi, float *out, const float *a, const float *b)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_residual(i, out, a, b);
}

void
stw_residual_forward(float *out, const float *a, const float *b, size_t n)
{
  STW_PARALLEL_RANGE(n, n, residual_range, out, a, b);
}

STW_CLONES static void
crossentropy_forward_rows(size_t lo, size_t hi, float *probs, float *losses, const float *logits,
                          const int *targets, int V)
{
  for (size_t r = lo; r < hi; r++)
    stw_cb_crossentropy_forward(r, probs, losses, logits, targets, V);
}

float
stw_crossentropy_forward(float *probs, float *losses, const float *logits, const int *targets,
                         int B, int T, int V)
{
  size_t rows = (size_t)B * T;
  STW_PARALLEL_RANGE(rows, rows * V * 4, crossentropy_forward_rows, probs, losses, logits,
                     targets, V);
  double mean = 0;
  for (size_t r = 0; r < rows; r++)
    mean += losses[r];
  return (float)(mean / (double)rows);
}

STW_CLONES static void
crossentropy_backward_range(size_t lo, size_t hi, float *dlogits, const float *probs,
                            const int *targets, int N, int V)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_crossentropy_backward(i, dlogits, probs, targets, N, V);
}

void
stw_crossentropy_backward(float *dlogits, const float *probs, const int *targets, int B, int T,
                          int V)
{
  size_t n = (size_t)B * T * V;
  STW_PARALLEL_RANGE(n, n, crossentropy_backward_range, dlogits, probs, targets, B * T, V);
}

/* ---- AdamW and bf16 copies ------------------------------------------------------------------ */

STW_CLONES static void
adam_range(size_t lo, size_t hi, float *param, const float *grad, float *m, float *v,
           StwAdamStep s)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_adam_element(i, grad[i], param, m, v, s);
}

/* (the clones stay static: an exported cloned function does not link across compilers) */
void
stw_adam_range(size_t lo, size_t hi, float *param, const float *grad, float *m, float *v,
               StwAdamStep s)
{
  adam_range(lo, hi, param, grad, m, v, s);
}

STW_CLONES static void
adam_slot_range(size_t lo, size_t hi, float *param, float *master, float *m, float *v,
                StwAdamStep s)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_adam(i, param, master, m, v, s);
}

STW_CLONES static void
adam_bf16_range(size_t lo, size_t hi, uint16_t *param, float *master, float *m, float *v,
                StwAdamStep s)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_adam_bf16(i, param, master, m, v, s);
}

void
stw_adam_host(void *param, int bf16, float *master, float *m, float *v, size_t n, StwAdamStep s)
{
  if (bf16)
    STW_PARALLEL_RANGE(n, 4 * n, adam_bf16_range, param, master, m, v, s);
  else
    STW_PARALLEL_RANGE(n, 4 * n, adam_slot_range, param, master, m, v, s);
}

STW_CLONES static void
widen_bf16_range(size_t lo, size_t hi, float *dst, const uint16_t *src)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_widen_bf16(i, dst, src);
}

void
stw_widen_bf16(float *dst, const uint16_t *src, size_t n)
{
  STW_PARALLEL_RANGE(n, n, widen_bf16_range, dst, src);
}

STW_CLONES static void
commit_bf16_range(size_t lo, size_t hi, uint16_t *slot, const float *grad, int first)
{
  for (size_t i = lo; i < hi; i++)
    stw_cb_commit_bf16(i, slot, grad, first);
}

void
stw_commit_bf16(uint16_t *slot, const float *grad, size_t n, int first)
{
  STW_PARALLEL_RANGE(n, n, commit_bf16_range, slot, grad, first);
}
