/* compute-cuda.cu — the CUDA table of compute.h: the trainer's kernels on the GPU, cuBLAS for
 * the matmuls. Compiled by nvcc only where the CUDA toolkit is, into a module of its own,
 * libstowage-compute-cuda.so, which stw_compute_cuda_new (compute-load.c) loads only when asked
 * for, so that cuBLAS loads only then.
 *
 * Everything runs on the legacy default stream, in issue order: the CUDA backend orders its
 * copies against it, and a slot freed by the runtime is reused only by later work on it. What
 * each thread computes is in compute-cuda-bodies.h, which the tests also run on the CPU against
 * kernels.c; this file launches those bodies and calls cuBLAS.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stowage/compute.h>

#include "compute-cuda-bodies.h"

/* the module links no stowage symbol: its errors have a domain of their own, and the loader
 * passes their message on in the runtime's */
/* g_quark_from_string copies the name: this module may be unloaded while the quark lives */
#define DEVICE_ERROR g_quark_from_string("stw-compute-cuda-error-quark")
#define DEVICE_ERROR_CODE 0

#define THREADS 256

typedef struct {
  StwCompute base;
  cublasHandle_t blas;
  cublasComputeType_t gemm_compute; /* fp32, or fp32 through bf16 tensor cores */
  gboolean failed;
  float *partials;                  /* the column sums' first stage, the table's own memory */
  size_t partials_bytes;
} Cuda;

static unsigned
blocks_for(size_t n)
{
  return (unsigned)((n + THREADS - 1) / THREADS);
}

#define INDEX() ((size_t)blockIdx.x * blockDim.x + threadIdx.x)

/* Records the first failure; later calls keep it. */
static void
note(Cuda *c, const char *what, const char *why)
{
  if (c->failed)
    return;
  c->failed = TRUE;
  g_snprintf(c->base.error, sizeof c->base.error, "%s: %s", what, why);
}

static void
check(Cuda *c, cudaError_t r, const char *what)
{
  if (r != cudaSuccess)
    note(c, what, cudaGetErrorString(r));
}

static void
launched(Cuda *c, const char *kernel)
{
  check(c, cudaGetLastError(), kernel);
}

/* ---- kernels: one thread per index of compute-cuda-bodies.h ---------------------------------- */

/* a kernel over N indices running BODY(i, ...) */
#define KERNEL(name, body, params, args)                                                       \
  __global__ void name params                                                                 \
  {                                                                                           \
    size_t i = INDEX();                                                                       \
    if (i < n)                                                                                \
      body args;                                                                              \
  }

KERNEL(encoder_forward_k, stw_cb_encoder_forward,
       (size_t n, float *out, const int *inp, const float *wte, const float *wpe, int T, int C),
       (i, out, inp, wte, wpe, T, C))
KERNEL(encoder_backward_k, stw_cb_encoder_backward,
       (size_t n, float *dwte, float *dwpe, const float *dout, const int *inp, int T, int C),
       (i, dwte, dwpe, dout, inp, T, C))
KERNEL(add_bias_k, stw_cb_add_bias, (size_t n, float *out, const float *bias, int OC),
       (i, out, bias, OC))
KERNEL(gelu_forward_k, stw_cb_gelu_forward, (size_t n, float *out, const float *inp),
       (i, out, inp))
KERNEL(gelu_backward_k, stw_cb_gelu_backward,
       (size_t n, float *dinp, const float *inp, const float *dout), (i, dinp, inp, dout))
KERNEL(residual_forward_k, stw_cb_residual, (size_t n, float *out, const float *a, const float *b),
       (i, out, a, b))
KERNEL(crossentropy_backward_k, stw_cb_crossentropy_backward,
       (size_t n, float *dlogits, const float *probs, const int *targets, int N, int V),
       (i, dlogits, probs, targets, N, V))
KERNEL(add_k, stw_cb_add, (size_t n, float *dst, const float *src), (i, dst, src))
KERNEL(widen_bf16_k, stw_cb_widen_bf16, (size_t n, float *dst, const uint16_t *src),
       (i, dst, src))
KERNEL(commit_bf16_k, stw_cb_commit_bf16,
       (size_t n, uint16_t *slot, const float *grad, int first), (i, slot, grad, first))
KERNEL(adam_bf16_k, stw_cb_adam_bf16,
       (size_t n, uint16_t *param, float *master, float *m, float *v, StwAdamStep s),
       (i, param, master, m, v, s))
KERNEL(adam_fp16_k, stw_cb_adam_fp16,
       (size_t n, uint16_t *param, float *master, float *m, float *v, StwAdamStep s),
       (i, param, master, m, v, s))
KERNEL(adam_k, stw_cb_adam,
       (size_t n, float *param, float *master, float *m, float *v, StwAdamStep s),
       (i, param, master, m, v, s))
KERNEL(adam_bs_k, stw_cb_adam_bs,
       (size_t n, float *param, float *master, uint16_t *m, uint16_t *v, StwAdamStep s),
       (i, param, master, m, v, s))
KERNEL(adam_bf16_bs_k, stw_cb_adam_bf16_bs,
       (size_t n, uint16_t *param, float *master, uint16_t *m, uint16_t *v, StwAdamStep s),
       (i, param, master, m, v, s))
KERNEL(adam_fp16_bs_k, stw_cb_adam_fp16_bs,
       (size_t n, uint16_t *param, float *master, uint16_t *m, uint16_t *v, StwAdamStep s),
       (i, param, master, m, v, s))

/* ---- rows by warps (compute-cuda-bodies.h): WARPS rows per block, a lane's partials meet in
 * shared memory, and every lane takes the same tree over them ------------------------------- */

#define WARPS (THREADS / STW_LANES)

/* the warp's row, lane and partials; the whole warp leaves together past the last row */
#define WARP_ROW(rows)                                                                        \
  __shared__ float parts[WARPS][STW_LANES];                                                   \
  int warp = threadIdx.x / STW_LANES, lane = threadIdx.x % STW_LANES;                         \
  size_t row = (size_t)blockIdx.x * WARPS + warp;                                             \
  if (row >= (rows))                                                                          \
    return;                                                                                   \
  float *part = parts[warp]

/* the tree of every lane's V, in every lane */
__device__ static float
warp_sum(float *part, int lane, float v)
{
  part[lane] = v;
  __syncwarp();
  float s = stw_cb_lane_sum(part);
  __syncwarp();
  return s;
}

__device__ static float
warp_max(float *part, int lane, float v)
{
  part[lane] = v;
  __syncwarp();
  float m = stw_cb_lane_max(part);
  __syncwarp();
  return m;
}

static unsigned
warp_blocks(size_t rows)
{
  return (unsigned)((rows + WARPS - 1) / WARPS);
}

__global__ void
layernorm_forward_k(size_t rows, float *out, float *mean, float *rstd, const float *inp,
                    const float *weight, const float *bias, int C)
{
  WARP_ROW(rows);
  float m = warp_sum(part, lane, stw_cb_ln_lane_sum(row, lane, inp, C)) / C;
  float v = warp_sum(part, lane, stw_cb_ln_lane_var(row, lane, inp, m, C)) / C;
  float rs = 1.0f / sqrtf(v + 1e-5f);
  stw_cb_ln_lane_write(row, lane, out, inp, weight, bias, m, rs, C);
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = rs;
  }
}

__global__ void
layernorm_backward_inp_k(size_t rows, float *dinp, const float *dout, const float *inp,
                         const float *weight, const float *mean, const float *rstd, int C)
{
  WARP_ROW(rows);
  float a, b;
  stw_cb_lnb_lane_sums(row, lane, dout, inp, weight, mean, rstd, C, &a, &b);
  a = warp_sum(part, lane, a) / C;
  b = warp_sum(part, lane, b) / C;
  stw_cb_lnb_lane_write(row, lane, dinp, dout, inp, weight, mean, rstd, a, b, C);
}

__global__ void
crossentropy_forward_k(size_t rows, float *probs, float *losses, const float *logits,
                       const int *targets, int V)
{
  WARP_ROW(rows);
  float m = warp_max(part, lane, stw_cb_ce_lane_max(row, lane, logits, V));
  float sum = warp_sum(part, lane, stw_cb_ce_lane_exp(row, lane, probs, logits, m, V));
  stw_cb_ce_lane_write(row, lane, probs, losses, targets, sum, V);
}

/* the naive attention's softmax and its backward: one warp per score row */
__global__ void
softmax_rows_k(size_t rows, float *pre, float *att, int T, float scale)
{
  WARP_ROW(rows);
  float m = warp_max(part, lane, stw_cb_att_lane_max(row, lane, pre, T, scale));
  float sum = warp_sum(part, lane, stw_cb_att_lane_exp(row, lane, pre, att, m, T));
  stw_cb_att_lane_norm(row, lane, pre, att, sum, T);
}

__global__ void
softmax_backward_rows_k(size_t rows, float *dpre, float *datt, const float *att, int T)
{
  WARP_ROW(rows);
  float dot = warp_sum(part, lane, stw_cb_attb_lane_dot(row, lane, att, datt, T));
  stw_cb_attb_lane_grad(row, lane, dpre, datt, att, dot, T);
}

KERNEL(scale_dqk_k, stw_cb_att_scale_dqk, (size_t n, float *dinp, int C, float scale),
       (i, dinp, C, scale))

/* fused attention: one warp per query row and head, its lanes' partial rows in ACC meeting in
 * the tree one dimension at a time */
__global__ void
flash_forward_k(size_t n, float *out, float *lse, const float *inp, int T, int C, int NH)
{
  WARP_ROW(n);
  int h = (int)(row % NH), t = (int)((row / NH) % T), b = (int)(row / ((size_t)NH * T));
  int hs = C / NH;
  float m, l, acc[STW_FA_MAX_HS];
  stw_cb_fa_lane_stats(row, lane, inp, T, C, NH, &m, &l);
  float maxv = warp_max(part, lane, m);
  float e = maxv + logf(warp_sum(part, lane, stw_cb_fa_lane_rescaled(m, l, maxv)));
  stw_cb_fa_lane_out(row, lane, acc, inp, e, T, C, NH);
  float *o = out + ((size_t)b * T + t) * C + h * hs;
  for (int i = 0; i < hs; i++) {
    float s = warp_sum(part, lane, acc[i]);
    if (lane == 0)
      o[i] = s;
  }
  if (lane == 0)
    lse[((size_t)b * NH + h) * T + t] = e;
}

__global__ void
flash_dq_k(size_t n, float *dinp, float *delta, const float *dout, const float *inp,
           const float *out, const float *lse, int T, int C, int NH)
{
  WARP_ROW(n);
  int h = (int)(row % NH), t = (int)((row / NH) % T), b = (int)(row / ((size_t)NH * T));
  int hs = C / NH;
  size_t r = ((size_t)b * NH + h) * T + t;
  float acc[STW_FA_MAX_HS];
  float d = warp_sum(part, lane, stw_cb_fa_lane_delta(row, lane, dout, out, T, C, NH));
  stw_cb_fa_lane_dq(row, lane, acc, dout, inp, lse[r], d, T, C, NH);
  float *dq = dinp + ((size_t)b * T + t) * 3 * C + h * hs;
  for (int i = 0; i < hs; i++) {
    float s = warp_sum(part, lane, acc[i]);
    if (lane == 0)
      dq[i] = s;
  }
  if (lane == 0)
    delta[r] = d;
}

__global__ void
flash_dkv_k(size_t n, float *dinp, const float *dout, const float *inp, const float *lse,
            const float *delta, int T, int C, int NH)
{
  WARP_ROW(n);
  int h = (int)(row % NH), t2 = (int)((row / NH) % T), b = (int)(row / ((size_t)NH * T));
  int hs = C / NH;
  float acck[STW_FA_MAX_HS], accv[STW_FA_MAX_HS];
  stw_cb_fa_lane_dkv(row, lane, acck, accv, dout, inp, lse, delta, T, C, NH);
  float *dk = dinp + ((size_t)b * T + t2) * 3 * C + h * hs + C, *dv = dk + C;
  for (int i = 0; i < hs; i++) {
    float sk = warp_sum(part, lane, acck[i]);
    float sv = warp_sum(part, lane, accv[i]);
    if (lane == 0) {
      dk[i] = sk;
      dv[i] = sv;
    }
  }
}

/* ---- sums down columns, in two stages (compute-cuda-bodies.h) ------------------------------ */

__global__ void
ln_column_partial_k(int C, int chunks, float *pw, float *pb, const float *dout, const float *inp,
                    const float *mean, const float *rstd, int N)
{
  size_t i = INDEX();
  if (i < (size_t)C)
    stw_cb_ln_column_partial(i, (int)blockIdx.y, pw, pb, dout, inp, mean, rstd, N, C);
}

__global__ void
bias_column_partial_k(int OC, float *pb, const float *dout, size_t rows)
{
  size_t o = INDEX();
  if (o < (size_t)OC)
    stw_cb_bias_column_partial(o, (int)blockIdx.y, pb, dout, rows, OC);
}

KERNEL(column_total_k, stw_cb_column_total,
       (size_t n, int chunks, float *out, const float *partial, int C, int accumulate),
       (i, chunks, out, partial, C, accumulate))

/* The table's memory for LISTS first-stage partials of COLUMNS columns over ROWS rows: its
 * chunk count, or 0 when it cannot be had (recorded). */
static int
column_chunks(Cuda *c, size_t rows, int columns, int lists)
{
  int chunks = (int)((rows + STW_COLUMN_ROWS - 1) / STW_COLUMN_ROWS);
  size_t need = (size_t)chunks * columns * lists * sizeof(float);
  if (need > c->partials_bytes) {
    if (c->partials != NULL)
      check(c, cudaFree(c->partials), "cudaFree (column partials)");
    c->partials = NULL;
    c->partials_bytes = 0;
    if (cudaMalloc((void **)&c->partials, need) != cudaSuccess) {
      note(c, "cudaMalloc (column partials)", "out of device memory");
      return 0;
    }
    c->partials_bytes = need;
  }
  return chunks;
}

/* ---- the table ----------------------------------------------------------------------------- */

static void
encoder_forward(StwCompute *x, float *out, const int *inp, const float *wte, const float *wpe,
                int B, int T, int C)
{
  size_t n = (size_t)B * T * C;
  encoder_forward_k<<<blocks_for(n), THREADS>>>(n, out, inp, wte, wpe, T, C);
  launched((Cuda *)x, "encoder_forward");
}

static void
encoder_backward(StwCompute *x, float *dwte, float *dwpe, const float *dout, const int *inp,
                 int B, int T, int C)
{
  size_t n = (size_t)B * T * C;
  encoder_backward_k<<<blocks_for(n), THREADS>>>(n, dwte, dwpe, dout, inp, T, C);
  launched((Cuda *)x, "encoder_backward");
}

static void
layernorm_forward(StwCompute *x, float *out, float *mean, float *rstd, const float *inp,
                  const float *weight, const float *bias, int B, int T, int C)
{
  size_t n = (size_t)B * T;
  layernorm_forward_k<<<warp_blocks(n), THREADS>>>(n, out, mean, rstd, inp, weight, bias, C);
  launched((Cuda *)x, "layernorm_forward");
}

static void
layernorm_backward(StwCompute *x, float *dinp, float *dweight, float *dbias, const float *dout,
                   const float *inp, const float *weight, const float *mean, const float *rstd,
                   int B, int T, int C, gboolean accumulate)
{
  Cuda *c = (Cuda *)x;
  size_t n = (size_t)B * T;
  layernorm_backward_inp_k<<<warp_blocks(n), THREADS>>>(n, dinp, dout, inp, weight, mean, rstd,
                                                         C);
  launched(c, "layernorm_backward");
  int chunks = column_chunks(c, n, C, 2);
  if (chunks == 0)
    return;
  float *pw = c->partials, *pb = c->partials + (size_t)chunks * C;
  dim3 grid(blocks_for((size_t)C), (unsigned)chunks);
  ln_column_partial_k<<<grid, THREADS>>>(C, chunks, pw, pb, dout, inp, mean, rstd, (int)n);
  column_total_k<<<blocks_for((size_t)C), THREADS>>>((size_t)C, chunks, dweight, pw, C,
                                                     accumulate);
  column_total_k<<<blocks_for((size_t)C), THREADS>>>((size_t)C, chunks, dbias, pb, C,
                                                     accumulate);
  launched(c, "layernorm_backward (weights)");
}

static const char *
blas_status(cublasStatus_t s)
{
  switch (s) {
  case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
  case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
  case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "architecture mismatch";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
  case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
  default: return "error";
  }
}

/* One GEMM of compute-cuda-bodies.h, with the matmul's operands, in the table's precision. */
static void
gemm(Cuda *c, StwGemm g, const float *const operands[])
{
  float alpha = 1.0f;
  cublasStatus_t s = cublasGemmEx(
      c->blas, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.m,
      g.n, g.k, &alpha, operands[g.a], CUDA_R_32F, g.lda, operands[g.b], CUDA_R_32F, g.ldb,
      &g.beta, (float *)operands[g.c], CUDA_R_32F, g.ldc, c->gemm_compute, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS)
    note(c, "cublasGemmEx", blas_status(s));
}

static void
matmul_forward(StwCompute *x, float *out, const float *inp, const float *weight,
               const float *bias, int B, int T, int C, int OC)
{
  Cuda *c = (Cuda *)x;
  int BT = B * T;
  const float *ops[] = { inp, weight, out, NULL, NULL, NULL };
  gemm(c, stw_cb_matmul_forward_gemm(BT, C, OC), ops);
  if (bias != NULL) {
    size_t n = (size_t)BT * OC;
    add_bias_k<<<blocks_for(n), THREADS>>>(n, out, bias, OC);
    launched(c, "matmul_forward (bias)");
  }
}

static void
matmul_backward(StwCompute *x, float *dinp, float *dweight, float *dbias, const float *dout,
                const float *inp, const float *weight, int B, int T, int C, int OC,
                gboolean accumulate)
{
  Cuda *c = (Cuda *)x;
  int BT = B * T;
  const float *ops[] = { inp, weight, NULL, dout, dinp, dweight };
  /* the input's gradient first: DWEIGHT may be WEIGHT's own memory */
  gemm(c, stw_cb_matmul_dinp_gemm(BT, C, OC), ops);
  gemm(c, stw_cb_matmul_dweight_gemm(BT, C, OC, accumulate), ops);
  int chunks = dbias != NULL ? column_chunks(c, (size_t)BT, OC, 1) : 0;
  if (chunks > 0) {
    dim3 grid(blocks_for((size_t)OC), (unsigned)chunks);
    bias_column_partial_k<<<grid, THREADS>>>(OC, c->partials, dout, (size_t)BT);
    column_total_k<<<blocks_for((size_t)OC), THREADS>>>((size_t)OC, chunks, dbias, c->partials,
                                                        OC, accumulate);
    launched(c, "matmul_backward (bias)");
  }
}

/* Attention's product P (compute-cuda-bodies.h) for every head of every batch row: per batch
 * row one strided batch of its NH heads, over the operands' whole arrays in BASE */
static void
att_gemm(Cuda *c, StwAttProduct p, float *const base[], int B, int T, int C, int NH)
{
  StwAttGemm g = stw_cb_att_gemm(p, T, C / NH);
  float alpha = 1.0f, beta = 0.0f;
  for (int b = 0; b < B; b++) {
    cublasStatus_t s = cublasGemmStridedBatchedEx(
        c->blas, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
        g.m, g.n, g.k, &alpha, base[g.a] + stw_cb_att_offset(g.a, b, 0, T, C, NH), CUDA_R_32F,
        stw_cb_att_ld(g.a, T, C), (long long)stw_cb_att_head_stride(g.a, T, C, NH),
        base[g.b] + stw_cb_att_offset(g.b, b, 0, T, C, NH), CUDA_R_32F,
        stw_cb_att_ld(g.b, T, C), (long long)stw_cb_att_head_stride(g.b, T, C, NH), &beta,
        base[g.c] + stw_cb_att_offset(g.c, b, 0, T, C, NH), CUDA_R_32F,
        stw_cb_att_ld(g.c, T, C), (long long)stw_cb_att_head_stride(g.c, T, C, NH), NH,
        c->gemm_compute, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) {
      note(c, "cublasGemmStridedBatchedEx (attention)", blas_status(s));
      return;
    }
  }
}

/* as kernels.c's: the scores by GEMMs, the softmax by rows, the output by GEMMs */
static void
attention_forward(StwCompute *x, float *out, float *preatt, float *att, const float *inp, int B,
                  int T, int C, int NH)
{
  Cuda *c = (Cuda *)x;
  float *base[STW_ATT_N_OPERANDS];
  stw_cb_att_operands(base, inp, out, preatt, att, NULL, NULL, NULL, NULL);
  size_t rows = (size_t)B * NH * T;
  att_gemm(c, STW_ATT_SCORES, base, B, T, C, NH);
  softmax_rows_k<<<warp_blocks(rows), THREADS>>>(rows, preatt, att, T,
                                                 1.0f / sqrtf((float)(C / NH)));
  launched(c, "attention_forward (softmax)");
  att_gemm(c, STW_ATT_VALUES, base, B, T, C, NH);
}

static void
attention_backward(StwCompute *x, float *dinp, float *dpreatt, float *datt, const float *dout,
                   const float *inp, const float *att, int B, int T, int C, int NH)
{
  Cuda *c = (Cuda *)x;
  float *base[STW_ATT_N_OPERANDS];
  stw_cb_att_operands(base, inp, NULL, NULL, att, dout, dinp, datt, dpreatt);
  size_t rows = (size_t)B * NH * T, n = (size_t)B * T * C;
  att_gemm(c, STW_ATT_GRAD_V, base, B, T, C, NH);
  att_gemm(c, STW_ATT_GRAD_ATT, base, B, T, C, NH);
  softmax_backward_rows_k<<<warp_blocks(rows), THREADS>>>(rows, dpreatt, datt, att, T);
  launched(c, "attention_backward (softmax)");
  att_gemm(c, STW_ATT_GRAD_Q, base, B, T, C, NH);
  att_gemm(c, STW_ATT_GRAD_K, base, B, T, C, NH);
  scale_dqk_k<<<blocks_for(n), THREADS>>>(n, dinp, C, 1.0f / sqrtf((float)(C / NH)));
  launched(c, "attention_backward (scale)");
}

static void
attention_flash_forward(StwCompute *x, float *out, float *lse, const float *inp, int B, int T,
                        int C, int NH)
{
  size_t n = (size_t)B * T * NH;
  flash_forward_k<<<warp_blocks(n), THREADS>>>(n, out, lse, inp, T, C, NH);
  launched((Cuda *)x, "attention_flash_forward");
}

static void
attention_flash_backward(StwCompute *x, float *dinp, float *delta, const float *dout,
                         const float *inp, const float *out, const float *lse, int B, int T,
                         int C, int NH)
{
  Cuda *c = (Cuda *)x;
  size_t n = (size_t)B * T * NH;
  /* the queries' pass writes DELTA, which the keys' pass reads: the stream orders them */
  flash_dq_k<<<warp_blocks(n), THREADS>>>(n, dinp, delta, dout, inp, out, lse, T, C, NH);
  flash_dkv_k<<<warp_blocks(n), THREADS>>>(n, dinp, dout, inp, lse, delta, T, C, NH);
  launched(c, "attention_flash_backward");
}

static void
gelu_forward(StwCompute *x, float *out, const float *inp, size_t n)
{
  gelu_forward_k<<<blocks_for(n), THREADS>>>(n, out, inp);
  launched((Cuda *)x, "gelu_forward");
}

static void
gelu_backward(StwCompute *x, float *dinp, const float *inp, const float *dout, size_t n)
{
  gelu_backward_k<<<blocks_for(n), THREADS>>>(n, dinp, inp, dout);
  launched((Cuda *)x, "gelu_backward");
}

static void
residual_forward(StwCompute *x, float *out, const float *a, const float *b, size_t n)
{
  residual_forward_k<<<blocks_for(n), THREADS>>>(n, out, a, b);
  launched((Cuda *)x, "residual_forward");
}

static float
crossentropy_forward(StwCompute *x, float *probs, float *losses, const float *logits,
                     const int *targets, int B, int T, int V)
{
  Cuda *c = (Cuda *)x;
  int N = B * T;
  crossentropy_forward_k<<<warp_blocks((size_t)N), THREADS>>>((size_t)N, probs, losses, logits,
                                                              targets, V);
  launched(c, "crossentropy_forward");
  float *host = g_new(float, N);
  check(c, cudaMemcpy(host, losses, (size_t)N * sizeof(float), cudaMemcpyDeviceToHost),
        "cudaMemcpy (losses)");
  /* the mean as the CPU takes it: in order, in double */
  double mean = 0;
  for (int i = 0; i < N; i++)
    mean += host[i];
  g_free(host);
  return (float)(mean / N);
}

static void
crossentropy_backward(StwCompute *x, float *dlogits, const float *probs, const int *targets,
                      int B, int T, int V)
{
  int N = B * T;
  crossentropy_backward_k<<<blocks_for((size_t)N * V), THREADS>>>((size_t)N * V, dlogits, probs,
                                                                  targets, N, V);
  launched((Cuda *)x, "crossentropy_backward");
}

static void
grad_commit(StwCompute *x, void *slot, StwDtype dtype, const float *grad, size_t n,
            gboolean first)
{
  Cuda *c = (Cuda *)x;
  if (dtype == STW_DTYPE_BF16) {
    commit_bf16_k<<<blocks_for(n), THREADS>>>(n, (uint16_t *)slot, grad, first);
    launched(c, "grad_commit (bf16)");
    return;
  }
  if (first) {
    check(c, cudaMemcpyAsync(slot, grad, n * sizeof(float), cudaMemcpyDeviceToDevice, 0),
          "cudaMemcpyAsync (gradient)");
    return;
  }
  add_k<<<blocks_for(n), THREADS>>>(n, (float *)slot, grad);
  launched(c, "grad_commit");
}

static void
widen(StwCompute *x, float *dst, const void *src, StwDtype dtype, size_t n)
{
  Cuda *c = (Cuda *)x;
  if (dtype != STW_DTYPE_BF16) {
    check(c, cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, 0),
          "cudaMemcpyAsync (weights)");
    return;
  }
  widen_bf16_k<<<blocks_for(n), THREADS>>>(n, dst, (const uint16_t *)src);
  launched(c, "widen (bf16)");
}

static void
adam(StwCompute *x, void *param, StwDtype dtype, float *master, void *m, void *v, size_t n,
     const StwAdamConfig *cfg, guint64 step)
{
  StwAdamStep s = stw_cb_adam_step(cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay,
                                    cfg->loss_scale, (double)step); /* as the CPU's */
  s.vmax = cfg->amsgrad ? n : 0;
  s.bf16_moments = cfg->state_dtype == STW_DTYPE_BF16;
  uint16_t *m16 = (uint16_t *)m, *v16 = (uint16_t *)v;
  if (s.bf16_moments && dtype == STW_DTYPE_BF16)
    adam_bf16_bs_k<<<blocks_for(n), THREADS>>>(n, (uint16_t *)param, master, m16, v16, s);
  else if (s.bf16_moments && dtype == STW_DTYPE_FP16)
    adam_fp16_bs_k<<<blocks_for(n), THREADS>>>(n, (uint16_t *)param, master, m16, v16, s);
  else if (s.bf16_moments)
    adam_bs_k<<<blocks_for(n), THREADS>>>(n, (float *)param, master, m16, v16, s);
  else if (dtype == STW_DTYPE_BF16)
    adam_bf16_k<<<blocks_for(n), THREADS>>>(n, (uint16_t *)param, master, (float *)m,
                                             (float *)v, s);
  else if (dtype == STW_DTYPE_FP16)
    adam_fp16_k<<<blocks_for(n), THREADS>>>(n, (uint16_t *)param, master, (float *)m,
                                             (float *)v, s);
  else
    adam_k<<<blocks_for(n), THREADS>>>(n, (float *)param, master, (float *)m, (float *)v, s);
  launched((Cuda *)x, "adam");
}

static void
zero(StwCompute *x, void *dst, size_t bytes)
{
  check((Cuda *)x, cudaMemsetAsync(dst, 0, bytes, 0), "cudaMemsetAsync");
}

static void
upload(StwCompute *x, void *dst, const void *host_src, size_t bytes)
{
  check((Cuda *)x, cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (H2D)");
}

static void
download(StwCompute *x, void *host_dst, const void *src, size_t bytes)
{
  check((Cuda *)x, cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (D2H)");
}

static gboolean
ok(StwCompute *x)
{
  Cuda *c = (Cuda *)x;
  check(c, cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return !c->failed;
}

static void
cuda_free(StwCompute *x)
{
  Cuda *c = (Cuda *)x;
  if (c == NULL)
    return;
  cublasDestroy(c->blas);
  if (c->partials != NULL)
    cudaFree(c->partials);
  g_free(c);
}

extern "C" __attribute__((visibility("default"))) StwCompute *
stw_compute_cuda_module_new(gboolean mixed, GError **error);

/* The module's entry point; stw_compute_cuda_new (compute-load.c) finds it with dlsym. */
StwCompute *
stw_compute_cuda_module_new(gboolean mixed, GError **error)
{
  int n = 0;
  cudaError_t r = cudaGetDeviceCount(&n);
  if (r != cudaSuccess || n == 0) {
    g_set_error(error, DEVICE_ERROR, DEVICE_ERROR_CODE,
                "no CUDA device: cudaGetDeviceCount: %s",
                r != cudaSuccess ? cudaGetErrorString(r) : "0 devices");
    return NULL;
  }
  Cuda *c = g_new0(Cuda, 1);
  cublasStatus_t s = cublasCreate(&c->blas);
  if (s != CUBLAS_STATUS_SUCCESS) {
    g_set_error(error, DEVICE_ERROR, DEVICE_ERROR_CODE, "cublasCreate: %s",
                blas_status(s));
    g_free(c);
    return NULL;
  }
  if ((s = cublasSetStream(c->blas, 0)) != CUBLAS_STATUS_SUCCESS) {
    g_set_error(error, DEVICE_ERROR, DEVICE_ERROR_CODE, "cublasSetStream: %s", blas_status(s));
    cublasDestroy(c->blas);
    g_free(c);
    return NULL;
  }
  c->gemm_compute = mixed ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
  StwCompute *t = &c->base;
  t->name = mixed ? "cuda-mixed" : "cuda";
  t->device_memory = TRUE;
  t->encoder_forward = encoder_forward;
  t->encoder_backward = encoder_backward;
  t->layernorm_forward = layernorm_forward;
  t->layernorm_backward = layernorm_backward;
  t->matmul_forward = matmul_forward;
  t->matmul_backward = matmul_backward;
  t->attention_forward = attention_forward;
  t->attention_backward = attention_backward;
  t->attention_flash_forward = attention_flash_forward;
  t->attention_flash_backward = attention_flash_backward;
  t->gelu_forward = gelu_forward;
  t->gelu_backward = gelu_backward;
  t->residual_forward = residual_forward;
  t->crossentropy_forward = crossentropy_forward;
  t->crossentropy_backward = crossentropy_backward;
  t->widen = widen;
  t->grad_commit = grad_commit;
  t->adam = adam;
  t->zero = zero;
  t->upload = upload;
  t->download = download;
  t->ok = ok;
  t->free = cuda_free;
  return t;
}
