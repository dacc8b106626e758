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
#ifdef STW_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#include "bf16.h"

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

/* ---- mixed precision's matmuls: bf16 products, fp32 sums (oneDNN) ------------------------- */

#ifdef STW_HAVE_DNNL
/* oneDNN's engine, made once; NULL where it cannot be */
static dnnl_engine_t
dnnl_engine(void)
{
  static gsize once = 0;
  static dnnl_engine_t engine = NULL;
  if (g_once_init_enter(&once)) {
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success)
      engine = NULL;
    g_once_init_leave(&once, 1);
  }
  return engine;
}
#endif

#ifdef STW_HAVE_DNNL
static gpointer
bf16_isa_once(gpointer data)
{
  (void)data;
  /* what oneDNN will run (ONEDNN_MAX_CPU_ISA lowers it, read once by oneDNN itself): bf16
   * arithmetic from AVX512-BF16 on */
  dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  if (dnnl_engine() == NULL)
    return NULL;
  if ((isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx)
    return (gpointer) "AMX";
  if ((isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16)
    return (gpointer) "AVX512-BF16";
  return NULL;
}
#endif

const char *
stw_matmul_bf16_isa(void)
{
#ifdef STW_HAVE_DNNL
  static GOnce once = G_ONCE_INIT; /* asked once per process, not once per GEMM */
  return g_once(&once, bf16_isa_once, NULL);
#else
  return NULL;
#endif
}

STW_CLONES static void
to_bf16_range(size_t lo, size_t hi, uint16_t *dst, const float *src)
{
  for (size_t i = lo; i < hi; i++)
    dst[i] = stw_bf16_from_float(src[i]);
}

/* A thread's buffers for the operands rounded to bf16, kept from call to call (grown to the
 * largest): kernel workspace, as a BLAS keeps its own. */
typedef struct {
  uint16_t *buf[3];
  size_t n[3];
} Bf16Scratch;

static void
bf16_scratch_free(gpointer p)
{
  Bf16Scratch *s = p;
  for (int i = 0; i < 3; i++)
    g_free(s->buf[i]);
  g_free(s);
}

static GPrivate bf16_scratch = G_PRIVATE_INIT(bf16_scratch_free);

/* SRC's N elements rounded to nearest bf16 in this thread's buffer I */
static const uint16_t *
rounded(int i, const float *src, size_t n)
{
  Bf16Scratch *s = g_private_get(&bf16_scratch);
  if (s == NULL) {
    s = g_new0(Bf16Scratch, 1);
    g_private_set(&bf16_scratch, s);
  }
  if (s->n[i] < n) {
    g_free(s->buf[i]);
    s->buf[i] = g_new(uint16_t, n);
    s->n[i] = n;
  }
  STW_PARALLEL_RANGE(n, n, to_bf16_range, s->buf[i], src);
  return s->buf[i];
}

#ifdef STW_HAVE_DNNL
/* G (column-major, as for cuBLAS) with its A and B in bf16 and C fp32, as oneDNN's row-major
 * matmul: C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m), the transposes being strides. FALSE
 * where oneDNN refuses it (nothing written). */
static gboolean
gemm_bf16_dnnl(const StwGemm *g, const uint16_t *a, const uint16_t *b, float *c)
{
  dnnl_memory_desc_t src_md, wei_md, dst_md;
  dnnl_dims_t src_dims = { g->n, g->k }, wei_dims = { g->k, g->m }, dst_dims = { g->n, g->m };
  dnnl_dims_t src_strides = { g->trans_b ? 1 : g->ldb, g->trans_b ? g->ldb : 1 };
  dnnl_dims_t wei_strides = { g->trans_a ? 1 : g->lda, g->trans_a ? g->lda : 1 };
  dnnl_dims_t dst_strides = { g->ldc, 1 };
  dnnl_engine_t engine = dnnl_engine();
  if (engine == NULL ||
      dnnl_memory_desc_init_by_strides(&src_md, 2, src_dims, dnnl_bf16, src_strides) ||
      dnnl_memory_desc_init_by_strides(&wei_md, 2, wei_dims, dnnl_bf16, wei_strides) ||
      dnnl_memory_desc_init_by_strides(&dst_md, 2, dst_dims, dnnl_f32, dst_strides))
    return FALSE;
  dnnl_matmul_desc_t desc;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t post = NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t prim = NULL;
  dnnl_stream_t stream = NULL;
  dnnl_memory_t mem[3] = { NULL, NULL, NULL };
  gboolean ok = dnnl_matmul_desc_init(&desc, &src_md, &wei_md, NULL, &dst_md) == dnnl_success &&
                dnnl_primitive_attr_create(&attr) == dnnl_success;
  if (ok && g->beta != 0.0f) /* C = product + beta C */
    ok = dnnl_post_ops_create(&post) == dnnl_success &&
         dnnl_post_ops_append_sum(post, g->beta) == dnnl_success &&
         dnnl_primitive_attr_set_post_ops(attr, post) == dnnl_success;
  /* oneDNN keeps made primitives in its cache: a shape seen before is not compiled again */
  ok = ok && dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL) == dnnl_success &&
       dnnl_primitive_create(&prim, pd) == dnnl_success &&
       dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success &&
       dnnl_memory_create(&mem[0], &src_md, engine, (void *)b) == dnnl_success &&
       dnnl_memory_create(&mem[1], &wei_md, engine, (void *)a) == dnnl_success &&
       dnnl_memory_create(&mem[2], &dst_md, engine, c) == dnnl_success;
  if (ok) {
    dnnl_exec_arg_t args[] = { { DNNL_ARG_SRC, mem[0] }, { DNNL_ARG_WEIGHTS, mem[1] },
                               { DNNL_ARG_DST, mem[2] } };
    ok = dnnl_primitive_execute(prim, stream, 3, args) == dnnl_success &&
         dnnl_stream_wait(stream) == dnnl_success;
  }
  for (int i = 0; i < 3; i++)
    if (mem[i] != NULL)
      dnnl_memory_destroy(mem[i]);
  if (stream != NULL)
    dnnl_stream_destroy(stream);
  if (prim != NULL)
    dnnl_primitive_destroy(prim);
  if (pd != NULL)
    dnnl_primitive_desc_destroy(pd);
  if (post != NULL)
    dnnl_post_ops_destroy(post);
  if (attr != NULL)
    dnnl_primitive_attr_destroy(attr);
  return ok;
}
#endif

/* G with its A and B operands given in bf16 (A16, B16), C fp32: oneDNN's where it runs; else
 * the same products in fp32 from the operands widened back, so that the result is the same
 * rounding of the inputs on any machine (slower) */
static void
gemm_bf16(const StwGemm *g, const uint16_t *a16, size_t na, const uint16_t *b16, size_t nb,
          const float *const operands[])
{
  float *c = (float *)operands[g->c];
#ifdef STW_HAVE_DNNL
  if (stw_matmul_bf16_isa() != NULL && gemm_bf16_dnnl(g, a16, b16, c))
    return;
#endif
  g_autofree float *a = g_new(float, MAX(na, 1)), *b = g_new(float, MAX(nb, 1));
  stw_widen_bf16(a, a16, na);
  stw_widen_bf16(b, b16, nb);
  const float *ops[STW_GEMM_DWEIGHT + 1];
  memcpy(ops, operands, sizeof ops);
  ops[g->a] = a;
  ops[g->b] = b;
  stw_gemm_host(g, ops);
}

void
stw_matmul_forward_bf16(float *out, const float *inp, const float *weight, const float *bias,
                        int B, int T, int C, int OC)
{
  int BT = B * T;
  size_t n_inp = (size_t)BT * C, n_w = (size_t)OC * C;
  const uint16_t *inp16 = rounded(0, inp, n_inp), *w16 = rounded(1, weight, n_w);
  const float *ops[] = { inp, weight, out, NULL, NULL, NULL };
  StwGemm g = stw_cb_matmul_forward_gemm(BT, C, OC);
  if (bias != NULL) {
    STW_PARALLEL_RANGE((size_t)BT, (size_t)BT * OC, bias_rows, out, bias, OC);
    g.beta = 1.0f;
  }
  gemm_bf16(&g, w16, n_w, inp16, n_inp, ops);
}

void
stw_matmul_backward_bf16(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, int B, int T, int C, int OC,
                         int accumulate)
{
  int BT = B * T;
  size_t n_inp = (size_t)BT * C, n_w = (size_t)OC * C, n_out = (size_t)BT * OC;
  /* every operand rounded before anything is written: DWEIGHT may be WEIGHT's memory */
  const uint16_t *inp16 = rounded(0, inp, n_inp), *w16 = rounded(1, weight, n_w),
                 *dout16 = rounded(2, dout, n_out);
  const float *ops[] = { inp, weight, NULL, dout, dinp, dweight };
  StwGemm gi = stw_cb_matmul_dinp_gemm(BT, C, OC), gw = stw_cb_matmul_dweight_gemm(BT, C, OC,
                                                                                   accumulate);
  gemm_bf16(&gi, w16, n_w, dout16, n_out, ops);
  gemm_bf16(&gw, inp16, n_inp, dout16, n_out, ops);
  if (dbias == NULL)
    return;
  STW_PARALLEL_RANGE((size_t)OC, (size_t)BT * OC, bias_grad_columns, dbias, dout, (size_t)BT, OC,
                     accumulate);
}

/* ---- the rest ------------------------------------------------------------------------------ */

/* Attention by heads: for each (batch row, head) its products are GEMMs (compute-cuda-bodies.h
 * describes them; the BLAS's, or the portable loops), the scores of the whole T x T square (the
 * masked half too: a GEMM of it is faster than loops over the causal half), and the softmax and
 * its backward by rows between them. The heads are shared among the threads, each GEMM one
 * thread's, so no result depends on the thread count. */
enum { HEAD_A = STW_GEMM_INP, HEAD_B = STW_GEMM_WEIGHT, HEAD_C = STW_GEMM_OUT };

/* C = op(A) op(B) + BETA C, column-major (m x n); with BETA 0, C is written without being read */
static void
head_gemm(int trans_a, int trans_b, int m, int n, int k, const float *a, int lda, const float *b,
          int ldb, float beta, float *c, int ldc)
{
  StwGemm g = { trans_a, trans_b, m, n, k, (StwGemmOperand)HEAD_A, (StwGemmOperand)HEAD_B,
                (StwGemmOperand)HEAD_C, lda, ldb, ldc, beta };
  const float *ops[STW_GEMM_DWEIGHT + 1] = { NULL };
  ops[HEAD_A] = a;
  ops[HEAD_B] = b;
  ops[HEAD_C] = c;
  stw_gemm_host(&g, ops);
}

/* PRE's row t: the scores of keys t2 <= t, scaled; ATT's: their softmax, zero past t */
STW_CLONES static void
softmax_rows(float *pre, float *att, int T, float scale)
{
  for (int t = 0; t < T; t++) {
    float *p = pre + (size_t)t * T, *a = att + (size_t)t * T, maxv = -1e30f, sum = 0;
    for (int t2 = 0; t2 <= t; t2++) {
      p[t2] *= scale;
      maxv = fmaxf(maxv, p[t2]);
    }
    for (int t2 = 0; t2 <= t; t2++) {
      a[t2] = expf(p[t2] - maxv);
      sum += a[t2];
    }
    float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
    for (int t2 = 0; t2 < T; t2++) {
      a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
      if (t2 > t)
        p[t2] = 0.0f;
    }
  }
}

/* Attention's product P for head H of batch row B (compute-cuda-bodies.h), over the operands'
 * whole arrays in BASE (StwAttOperand) */
static void
att_gemm(StwAttProduct p, float *const base[], int b, int h, int T, int C, int NH)
{
  StwAttGemm g = stw_cb_att_gemm(p, T, C / NH);
  head_gemm(g.trans_a, g.trans_b, g.m, g.n, g.k,
            base[g.a] + stw_cb_att_offset(g.a, b, h, T, C, NH), stw_cb_att_ld(g.a, T, C), base[g.b] + stw_cb_att_offset(g.b, b, h, T, C, NH),
            stw_cb_att_ld(g.b, T, C), 0, base[g.c] + stw_cb_att_offset(g.c, b, h, T, C, NH),
            stw_cb_att_ld(g.c, T, C));
}

void
stw_attention_forward(float *out, float *preatt, float *att, const float *inp, int B, int T,
                      int C, int NH)
{
  float scale = 1.0f / sqrtf((float)(C / NH));
  float *base[STW_ATT_N_OPERANDS];
  stw_cb_att_operands(base, inp, out, preatt, att, NULL, NULL, NULL, NULL);
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      size_t head = stw_cb_att_offset(STW_ATT_PRE, b, h, T, C, NH);
      att_gemm(STW_ATT_SCORES, base, b, h, T, C, NH);
      softmax_rows(preatt + head, att + head, T, scale);
      att_gemm(STW_ATT_VALUES, base, b, h, T, C, NH);
    }
}

/* DA's row t (in: dA = dO V^T) and DPRE's: the softmax's backward, dpre = a (da - sum(a da)),
 * zero past t, with dpre scaled by SCALE for the products after it */
STW_CLONES static void
softmax_backward_rows(float *dpre, float *da, const float *att, int T)
{
  for (int t = 0; t < T; t++) {
    const float *a = att + (size_t)t * T;
    float *d = da + (size_t)t * T, *dp = dpre + (size_t)t * T, dot = 0;
    for (int t2 = 0; t2 <= t; t2++)
      dot += a[t2] * d[t2];
    for (int t2 = 0; t2 < T; t2++) {
      dp[t2] = t2 <= t ? a[t2] * (d[t2] - dot) : 0.0f;
      if (t2 > t)
        d[t2] = 0.0f;
    }
  }
}

STW_CLONES static void
scale_rows(float *x, int rows, int cols, int ld, float scale)
{
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++)
      x[(size_t)r * ld + c] *= scale;
}

/* row r of X (ROWS x COLS, leading dimension LD) times F[r] */
STW_CLONES static void
scale_rows_by(float *x, int rows, int cols, int ld, const float *f)
{
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++)
      x[(size_t)r * ld + c] *= f[r];
}

void
stw_attention_backward(float *dinp, float *dpreatt, float *datt, const float *dout,
                       const float *inp, const float *att, int B, int T, int C, int NH)
{
  int hs = C / NH, C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
  float *base[STW_ATT_N_OPERANDS];
  stw_cb_att_operands(base, inp, NULL, NULL, att, dout, dinp, datt, dpreatt);
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      size_t head = stw_cb_att_offset(STW_ATT_PRE, b, h, T, C, NH);
      att_gemm(STW_ATT_GRAD_V, base, b, h, T, C, NH);
      att_gemm(STW_ATT_GRAD_ATT, base, b, h, T, C, NH);
      softmax_backward_rows(dpreatt + head, datt + head, att + head, T);
      att_gemm(STW_ATT_GRAD_Q, base, b, h, T, C, NH);
      att_gemm(STW_ATT_GRAD_K, base, b, h, T, C, NH);
      scale_rows(dinp + stw_cb_att_offset(STW_ATT_DQ, b, h, T, C, NH), T, hs, C3, scale);
      scale_rows(dinp + stw_cb_att_offset(STW_ATT_DK, b, h, T, C, NH), T, hs, C3, scale);
    }
}

/* Fused attention on the CPU, FlashAttention's way over tiles of FA_TILE queries by FA_TILE
 * keys, one head per thread: a tile's scores are one GEMM; the forward keeps each query row's
 * running maximum and sum, rescales the row's output when the maximum grows, and adds the tile's
 * weights times its values (a second GEMM) into it; the backward recomputes each tile's weights
 * from the log-sum-exp and takes its four products as GEMMs. No (T x T) matrix, and no result
 * depends on the thread count. The GPU takes a row by a warp's lanes (compute-cuda-bodies.h),
 * which tests/test-compute.c checks against these. */
#define FA_TILE 64

/* The tile's weights P (ROWS x COLS, leading dimension FA_TILE) from its raw scores in P: query
 * I0 + r sees keys J0 + c <= I0 + r; with MAXV (per row, updated), the forward's running
 * maximum, and SUM and CORR (per row) its sums and rescale factors; with LSE instead, the
 * backward's weights exp(s - lse). Masked weights are 0. */
STW_CLONES static void
fa_tile_weights(float *p, int rows, int cols, int i0, int j0, float scale, float *maxv,
                float *sum, float *corr, const float *lse)
{
  for (int r = 0; r < rows; r++) {
    float *pr = p + (size_t)r * FA_TILE;
    int last = MIN(cols - 1, i0 + r - j0); /* the row's last key in the tile; < 0: none */
    for (int c = 0; c <= last; c++)
      pr[c] *= scale;
    if (lse != NULL) {
      for (int c = 0; c <= last; c++)
        pr[c] = expf(pr[c] - lse[r]);
    } else {
      float m = maxv[r];
      for (int c = 0; c <= last; c++)
        m = fmaxf(m, pr[c]);
      corr[r] = expf(maxv[r] - m);
      maxv[r] = m;
      float s = 0;
      for (int c = 0; c <= last; c++) {
        pr[c] = expf(pr[c] - m);
        s += pr[c];
      }
      sum[r] = sum[r] * corr[r] + s;
    }
    for (int c = MAX(last + 1, 0); c < cols; c++)
      pr[c] = 0.0f;
  }
}

static void
flash_forward_head(float *out, float *lse, const float *q, const float *k, const float *v,
                   int T, int C, int hs)
{
  int C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
  float p[FA_TILE * FA_TILE], maxv[FA_TILE], sum[FA_TILE], corr[FA_TILE];
  for (int i0 = 0; i0 < T; i0 += FA_TILE) {
    int rows = MIN(FA_TILE, T - i0);
    float *o = out + (size_t)i0 * C;
    for (int r = 0; r < rows; r++) {
      maxv[r] = -1e30f;
      sum[r] = 0;
    }
    for (int j0 = 0; j0 < i0 + rows; j0 += FA_TILE) {
      int cols = MIN(FA_TILE, i0 + rows - j0);
      /* P = Q_i K_j^T, then the tile's weights */
      head_gemm(1, 0, cols, rows, hs, k + (size_t)j0 * C3, C3, q + (size_t)i0 * C3, C3, 0, p,
                FA_TILE);
      fa_tile_weights(p, rows, cols, i0, j0, scale, maxv, sum, corr, NULL);
      if (j0 > 0)
        scale_rows_by(o, rows, hs, C, corr);
      /* O_i = (first tile) or += P V_j */
      head_gemm(0, 0, hs, rows, cols, v + (size_t)j0 * C3, C3, p, FA_TILE, j0 > 0 ? 1.0f : 0.0f,
                o, C);
    }
    for (int r = 0; r < rows; r++) {
      corr[r] = 1.0f / sum[r];
      lse[i0 + r] = maxv[r] + logf(sum[r]);
    }
    scale_rows_by(o, rows, hs, C, corr);
  }
}

void
stw_attention_flash_forward(float *out, float *lse, const float *inp, int B, int T, int C, int NH)
{
  int hs = C / NH, C3 = 3 * C;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      const float *q = inp + (size_t)b * T * C3 + h * hs;
      flash_forward_head(out + (size_t)b * T * C + h * hs, lse + ((size_t)b * NH + h) * T, q,
                         q + C, q + 2 * C, T, C, hs);
    }
}

/* dS = P (dP - delta) scale, in DP, for the tile's ROWS */
STW_CLONES static void
fa_tile_dscores(float *dp, const float *p, int rows, int cols, const float *delta, float scale)
{
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      size_t at = (size_t)r * FA_TILE + c;
      dp[at] = p[at] * (dp[at] - delta[r]) * scale;
    }
}

static void
flash_backward_head(float *dq, float *delta, const float *d, const float *q, const float *o,
                    const float *lse, int T, int C, int hs)
{
  int C3 = 3 * C;
  const float *k = q + C, *v = q + 2 * C;
  float *dk = dq + C, *dv = dq + 2 * C;
  float scale = 1.0f / sqrtf((float)hs);
  float p[FA_TILE * FA_TILE], dp[FA_TILE * FA_TILE];
  for (int t = 0; t < T; t++) {
    const float *dt = d + (size_t)t * C, *ot = o + (size_t)t * C;
    float s = 0;
    for (int i = 0; i < hs; i++)
      s += dt[i] * ot[i];
    delta[t] = s;
  }
  for (int j0 = 0; j0 < T; j0 += FA_TILE) {
    int cols = MIN(FA_TILE, T - j0);
    for (int i0 = j0 / FA_TILE * FA_TILE; i0 < T; i0 += FA_TILE) {
      int rows = MIN(FA_TILE, T - i0);
      float first = i0 == j0 / FA_TILE * FA_TILE ? 0.0f : 1.0f; /* dK_j, dV_j: first tile */
      head_gemm(1, 0, cols, rows, hs, k + (size_t)j0 * C3, C3, q + (size_t)i0 * C3, C3, 0, p,
                FA_TILE);
      fa_tile_weights(p, rows, cols, i0, j0, scale, NULL, NULL, NULL, lse + i0);
      /* dV_j (+)= P^T dO_i; dP = dO_i V_j^T; dS; dQ_i (+)= dS K_j; dK_j (+)= dS^T Q_i */
      head_gemm(0, 1, hs, cols, rows, d + (size_t)i0 * C, C, p, FA_TILE, first,
                dv + (size_t)j0 * C3, C3);
      head_gemm(1, 0, cols, rows, hs, v + (size_t)j0 * C3, C3, d + (size_t)i0 * C, C, 0, dp,
                FA_TILE);
      fa_tile_dscores(dp, p, rows, cols, delta + i0, scale);
      head_gemm(0, 0, hs, rows, cols, k + (size_t)j0 * C3, C3, dp, FA_TILE, j0 > 0 ? 1.0f : 0.0f,
                dq + (size_t)i0 * C3, C3);
      head_gemm(0, 1, hs, cols, rows, q + (size_t)i0 * C3, C3, dp, FA_TILE, first,
                dk + (size_t)j0 * C3, C3);
    }
  }
}

void
stw_attention_flash_backward(float *dinp, float *delta, const float *dout, const float *inp,
                             const float *out, const float *lse, int B, int T, int C, int NH)
{
  int hs = C / NH, C3 = 3 * C;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      size_t at = (size_t)b * T * C + h * hs, row = ((size_t)b * NH + h) * T;
      flash_backward_head(dinp + (size_t)b * T * C3 + h * hs, delta + row, dout + at,
                          inp + (size_t)b * T * C3 + h * hs, out + at, lse + row, T, C, hs);
    }
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

/* Each AdamW range function (NAME, with the function attribute ATTR) steps [LO, HI) twice
 * written: AMSGrad's loop of CALL, which reads and writes v[i + s.vmax], and the plain loop
 * LOOP(BODY), where s.vmax is a known 0 and that folds away (with it unknown the compiler
 * versions the loop on v[i] and v[i + vmax] not overlapping, which they do at 0, and every plain
 * step ran the scalar loop: 3x slower). */
#define STW_ADAM_RANGE_AS(ATTR, NAME, PARAM_T, GRAD, M_T, CALL, LOOP, BODY)                       \
  ATTR static void NAME(size_t lo, size_t hi, PARAM_T *param, GRAD, M_T *m, M_T *v,               \
                        StwAdamStep s)                                                             \
  {                                                                                                \
    if (s.vmax != 0) {                                                                             \
      for (size_t i = lo; i < hi; i++)                                                             \
        CALL;                                                                                      \
      return;                                                                                      \
    }                                                                                              \
    s.vmax = 0;                                                                                    \
    LOOP(BODY)                                                                                     \
  }
#define STW_ADAM_RANGE(NAME, PARAM_T, GRAD, M_T, CALL, LOOP, BODY)                                 \
  STW_ADAM_RANGE_AS(STW_CLONES, NAME, PARAM_T, GRAD, M_T, CALL, LOOP, BODY)

/* Kernels with 16-bit lanes (bf16 or fp16 compute copies, bf16 moments) fill 512-bit vectors
 * only with AVX512BW; without it the compiler narrows them in 256-bit halves with saturating
 * packs, and the bf16 moments' step ran at half its memory's speed. GCC 12's target_clones does
 * not take avx512bw: STW_ADAM_RANGE_16 writes each such kernel twice, NAME as the other kernels
 * (its plain loop LOOP(BODY)) and NAME_bw for AVX512BW (its plain loop BW_LOOP(BW_BODY), the
 * element's body in one pass: 512-bit lanes hold the whole step there without spilling), and
 * STW_ADAM_16(NAME) picks one where the step runs. The same operations in the same order:
 * bitwise the same results (/compute/adam-avx512bw runs both). */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__)
#define STW_BW_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define STW_ADAM_RANGE_16(NAME, PARAM_T, GRAD, M_T, CALL, LOOP, BODY, BW_LOOP, BW_BODY)            \
  STW_ADAM_RANGE(NAME, PARAM_T, GRAD, M_T, CALL, LOOP, BODY)                                       \
  STW_ADAM_RANGE_AS(STW_BW_TARGET, NAME##_bw, PARAM_T, GRAD, M_T, CALL, BW_LOOP, BW_BODY)
#define STW_ADAM_16(NAME) (kernels_avx512bw() ? NAME##_bw : NAME)
static int avx512bw_allowed = 1;

static int
kernels_avx512bw(void)
{
  __builtin_cpu_init();
  return avx512bw_allowed && __builtin_cpu_supports("avx512bw");
}
#else
#define STW_ADAM_RANGE_16(NAME, PARAM_T, GRAD, M_T, CALL, LOOP, BODY, BW_LOOP, BW_BODY)            \
  STW_ADAM_RANGE(NAME, PARAM_T, GRAD, M_T, CALL, LOOP, BODY)
#define STW_ADAM_16(NAME) NAME
static int avx512bw_allowed = 0;
#endif

gboolean
stw_kernels_allow_avx512bw(gboolean allow)
{
  gboolean was = avx512bw_allowed;
  avx512bw_allowed = allow;
  return was;
}

/* fp32 moments: the plain loop is the element's */
#define STW_ADAM_ELEMENTS(CALL)                                                                    \
  for (size_t i = lo; i < hi; i++)                                                                 \
    CALL;
STW_ADAM_RANGE(adam_range, float, const float *grad, float,
               stw_cb_adam_element(i, grad[i], param, m, v, s),
               STW_ADAM_ELEMENTS, (stw_cb_adam_element(i, grad[i], param, m, v, s)))
STW_ADAM_RANGE(adam_slot_range, float, float *master, float, stw_cb_adam(i, param, master, m, v, s),
               STW_ADAM_ELEMENTS, (stw_cb_adam(i, param, master, m, v, s)))
STW_ADAM_RANGE(adam_copy_range, float, const float *master, float,
               stw_cb_adam_to_copy(i, param, master, m, v, s),
               STW_ADAM_ELEMENTS, (stw_cb_adam_to_copy(i, param, master, m, v, s)))
STW_ADAM_RANGE_16(adam_bf16_range, uint16_t, float *master, float,
               stw_cb_adam_bf16(i, param, master, m, v, s),
               STW_ADAM_ELEMENTS, (stw_cb_adam_bf16(i, param, master, m, v, s)),
               STW_ADAM_ELEMENTS, (stw_cb_adam_bf16(i, param, master, m, v, s)))
STW_ADAM_RANGE_16(adam_fp16_range, uint16_t, float *master, float,
               stw_cb_adam_fp16(i, param, master, m, v, s),
               STW_ADAM_ELEMENTS, (stw_cb_adam_fp16(i, param, master, m, v, s)),
               STW_ADAM_ELEMENTS, (stw_cb_adam_fp16(i, param, master, m, v, s)))

/* bf16 moments: the plain loop in strips of STW_ADAM_STRIP elements, each in three passes that
 * vectorize alone (one loop of all three keeps 8 lanes and spills its registers: 1.5x slower
 * than fp32 moments, where it should be faster): the moments widened into fp32 buffers, stepped
 * by the fp32 moments' body FP32_CALL over the strip (its arrays offset to it: index k), and
 * rounded back stochastically with the bits of their global index, bitwise what
 * stw_cb_adam_element_bs gives (/compute/adam-bf16-moments) */
#define STW_ADAM_STRIP 512
#define STW_ADAM_STRIPS(FP32_CALL)                                                                 \
  float mw[STW_ADAM_STRIP], vw[STW_ADAM_STRIP];                                                    \
  for (size_t b = lo; b < hi; b += STW_ADAM_STRIP) {                                               \
    uint32_t n = (uint32_t)MIN((size_t)STW_ADAM_STRIP, hi - b);                                    \
    for (uint32_t k = 0; k < n; k++) {                                                             \
      mw[k] = stw_bf16_to_float(m[b + k]);                                                         \
      vw[k] = stw_bf16_to_float(v[b + k]);                                                         \
    }                                                                                              \
    for (uint32_t k = 0; k < n; k++)                                                               \
      FP32_CALL;                                                                                   \
    uint32_t at = (uint32_t)b;                                                                     \
    for (uint32_t k = 0; k < n; k++) {                                                             \
      uint32_t r = stw_bits_hash((at + k) ^ s.seed);                                               \
      m[b + k] = stw_bf16_from_float_sr(mw[k], r);                                                 \
      v[b + k] = stw_bf16_from_float_sr(vw[k], r >> 16 | r << 16);                                 \
    }                                                                                              \
  }
/* AVX512BW's bf16 moments: the element's body over the range in blocks indexed by 32 bits (k,
 * its arrays offset to the block, its index counted from b in the step's SB.base), so that the
 * stochastic rounding's index, which is 32 bits, fills 16 lanes without narrowing 64-bit ones
 * (9% on one thread); in strips of STW_ADAM_AHEAD_STRIP elements, each first asking for the
 * cache lines of its four arrays (PARAM, SECOND, m, v) STW_ADAM_AHEAD elements on. One thread
 * keeps too few of its loads in flight while this step's arithmetic (twice the fp32 step's)
 * fills its window, the hardware's prefetchers do not run far enough ahead, and the step ran
 * at 80-87% of a kernel with its memory streams; asked ahead, at that kernel's speed: 1.36-1.45x
 * the fp32 moments' step, from 1.15x on one thread (bench/results/adam.md: less at 512
 * elements ahead, the same from 1,024 to 4,096, less with the lines asked for in the bursts of
 * longer strips; the fp32 step, bound by its bytes already, gains nothing and has none). A
 * prefetch does not fault: lines past the arrays' end are asked for harmlessly, their addresses
 * reckoned as integers. (GCC 12 vectorizes the strip's loop with the outer test written
 * `k + STRIP <= n` and the strip's as `k < end`; as `n - k >= STRIP`, or with the strip
 * counted from 0, it ran scalar, 8x slower.) */
#define STW_ADAM_BLOCK ((size_t)1 << 30)
#define STW_ADAM_AHEAD_STRIP 64u
#define STW_ADAM_AHEAD 1024u
/* the cache lines of ARRAY's STW_ADAM_AHEAD_STRIP elements from element AT on */
#define STW_PREFETCH_STRIP(ARRAY, AT, RW)                                                          \
  for (unsigned q_ = 0; q_ < sizeof *(ARRAY) * STW_ADAM_AHEAD_STRIP / 64u; q_++)               \
    __builtin_prefetch((const void *)((uintptr_t)(ARRAY) + (AT) * sizeof *(ARRAY) + 64u * q_),   \
                       RW, 3)
#define STW_ADAM_BLOCKS_AHEAD(CALL, SECOND)                                                        \
  for (size_t b = lo; b < hi; b += STW_ADAM_BLOCK) {                                               \
    uint32_t n = (uint32_t)MIN(STW_ADAM_BLOCK, hi - b), k = 0;                                     \
    StwAdamStep sb = s;                                                                            \
    sb.base = (uint32_t)b;                                                                         \
    while (k + STW_ADAM_AHEAD_STRIP <= n) {                                                        \
      size_t ahead = b + k + STW_ADAM_AHEAD;                                                       \
      STW_PREFETCH_STRIP(param, ahead, 1);                                                         \
      STW_PREFETCH_STRIP(SECOND, ahead, 0);                                                        \
      STW_PREFETCH_STRIP(m, ahead, 1);                                                             \
      STW_PREFETCH_STRIP(v, ahead, 1);                                                             \
      for (uint32_t end = k + STW_ADAM_AHEAD_STRIP; k < end; k++)                                  \
        CALL;                                                                                      \
    }                                                                                              \
    for (; k < n; k++)                                                                             \
      CALL;                                                                                        \
  }
#define STW_ADAM_BLOCKS(CALL) STW_ADAM_BLOCKS_AHEAD(CALL, master)
#define STW_ADAM_BLOCKS_GRAD(CALL) STW_ADAM_BLOCKS_AHEAD(CALL, grad)
STW_ADAM_RANGE_16(adam_range_bs, float, const float *grad, uint16_t,
               stw_cb_adam_element_bs(i, grad[i], param, m, v, s),
               STW_ADAM_STRIPS, (stw_cb_adam_element(k, grad[b + k], param + b, mw, vw, s)),
               STW_ADAM_BLOCKS_GRAD,
               (stw_cb_adam_element_bs(k, grad[b + k], param + b, m + b, v + b, sb)))
STW_ADAM_RANGE_16(adam_slot_range_bs, float, float *master, uint16_t,
               stw_cb_adam_bs(i, param, master, m, v, s),
               STW_ADAM_STRIPS, (stw_cb_adam(k, param + b, master + b, mw, vw, s)),
               STW_ADAM_BLOCKS, (stw_cb_adam_bs(k, param + b, master + b, m + b, v + b, sb)))
STW_ADAM_RANGE_16(adam_copy_range_bs, float, const float *master, uint16_t,
               stw_cb_adam_to_copy_bs(i, param, master, m, v, s),
               STW_ADAM_STRIPS, (stw_cb_adam_to_copy(k, param + b, master + b, mw, vw, s)),
               STW_ADAM_BLOCKS,
               (stw_cb_adam_to_copy_bs(k, param + b, master + b, m + b, v + b, sb)))
STW_ADAM_RANGE_16(adam_bf16_range_bs, uint16_t, float *master, uint16_t,
               stw_cb_adam_bf16_bs(i, param, master, m, v, s),
               STW_ADAM_STRIPS, (stw_cb_adam_bf16(k, param + b, master + b, mw, vw, s)),
               STW_ADAM_BLOCKS, (stw_cb_adam_bf16_bs(k, param + b, master + b, m + b, v + b, sb)))
STW_ADAM_RANGE_16(adam_fp16_range_bs, uint16_t, float *master, uint16_t,
               stw_cb_adam_fp16_bs(i, param, master, m, v, s),
               STW_ADAM_STRIPS, (stw_cb_adam_fp16(k, param + b, master + b, mw, vw, s)),
               STW_ADAM_BLOCKS, (stw_cb_adam_fp16_bs(k, param + b, master + b, m + b, v + b, sb)))

STW_CLONES static void
adam_streams_range(size_t lo, size_t hi, float *p, const float *g, float *m, float *v)
{
  for (size_t i = lo; i < hi; i++) {
    float gi = g[i];
    m[i] = 0.9f * m[i] + 0.1f * gi;
    v[i] = 0.999f * v[i] + 0.001f * gi * gi;
    p[i] = p[i] - 1e-3f * m[i];
  }
}

void
stw_adam_streams(float *p, const float *g, float *m, float *v, size_t n)
{
  STW_PARALLEL_RANGE(n, 4 * n, adam_streams_range, p, g, m, v);
}

/* (the clones stay static: an exported cloned function does not link across compilers) */
void
stw_adam_range(size_t lo, size_t hi, float *param, const float *grad, void *m, void *v,
               StwAdamStep s)
{
  if (s.bf16_moments)
    STW_ADAM_16(adam_range_bs)(lo, hi, param, grad, m, v, s);
  else
    adam_range(lo, hi, param, grad, m, v, s);
}

void
stw_adam_host(void *param, StwDtype dtype, float *master, void *m, void *v, size_t n,
              StwAdamStep s)
{
  if (s.bf16_moments && dtype == STW_DTYPE_BF16)
    STW_PARALLEL_RANGE(n, 4 * n, STW_ADAM_16(adam_bf16_range_bs), param, master, m, v, s);
  else if (s.bf16_moments && dtype == STW_DTYPE_FP16)
    STW_PARALLEL_RANGE(n, 4 * n, STW_ADAM_16(adam_fp16_range_bs), param, master, m, v, s);
  else if (s.bf16_moments)
    STW_PARALLEL_RANGE(n, 4 * n, STW_ADAM_16(adam_slot_range_bs), param, master, m, v, s);
  else if (dtype == STW_DTYPE_BF16)
    STW_PARALLEL_RANGE(n, 4 * n, STW_ADAM_16(adam_bf16_range), param, master, m, v, s);
  else if (dtype == STW_DTYPE_FP16)
    STW_PARALLEL_RANGE(n, 4 * n, STW_ADAM_16(adam_fp16_range), param, master, m, v, s);
  else
    STW_PARALLEL_RANGE(n, 4 * n, adam_slot_range, param, master, m, v, s);
}

void
stw_adam_host_to_copy(float *param, const float *master, void *m, void *v, size_t n,
                      StwAdamStep s)
{
  if (s.bf16_moments)
    STW_PARALLEL_RANGE(n, 4 * n, STW_ADAM_16(adam_copy_range_bs), param, master, m, v, s);
  else
    STW_PARALLEL_RANGE(n, 4 * n, adam_copy_range, param, master, m, v, s);
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
