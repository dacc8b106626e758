/* compute-cuda.cu — the CUDA table of compute.h: the trainer's kernels on the GPU, cuBLAS for
 * the matmuls. Compiled by nvcc only where the CUDA toolkit is, into a module of its own,
 * libstowage-compute-cuda.so, which stw_compute_cuda_new (compute-load.c) loads only when asked
 * for, so that cuBLAS loads only then.
 *
 * Everything runs on the legacy default stream, in issue order: the CUDA backend orders its
 * copies against it, and a slot freed by the runtime is reused only by later work on it. Each
 * kernel gives every output element to one thread, except where gradients from several positions
 * meet (a token's embedding row, an attention key or value row): those add with atomicAdd, so
 * their sums are not bitwise reproducible, and the CPU's are the reference. Attention backward
 * uses the softmax identity dpre = a * (da - sum(a * da)), which the CPU expands term by term.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "compute.h"

/* the module links no stowage symbol: its errors have a domain of their own, and the loader
 * passes their message on in the runtime's */
#define DEVICE_ERROR g_quark_from_static_string("stw-compute-cuda-error-quark")
#define DEVICE_ERROR_CODE 0

#define GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */
#define THREADS 256

typedef struct {
  StwCompute base;
  cublasHandle_t blas;
  cublasComputeType_t gemm_compute; /* fp32, or fp32 through bf16 tensor cores */
  gboolean failed;
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

/* ---- kernels ------------------------------------------------------------------------------- */

__global__ void
encoder_forward_k(float *out, const int *inp, const float *wte, const float *wpe, int B, int T,
                  int C)
{
  size_t i = INDEX();
  if (i >= (size_t)B * T * C)
    return;
  size_t bt = i / C;
  int c = (int)(i % C), t = (int)(bt % T);
  out[i] = wte[(size_t)inp[bt] * C + c] + wpe[(size_t)t * C + c];
}

__global__ void
encoder_backward_k(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T,
                   int C)
{
  size_t i = INDEX();
  if (i >= (size_t)B * T * C)
    return;
  size_t bt = i / C;
  int c = (int)(i % C), t = (int)(bt % T);
  atomicAdd(&dwte[(size_t)inp[bt] * C + c], dout[i]);
  atomicAdd(&dwpe[(size_t)t * C + c], dout[i]);
}

__device__ float
warp_sum(float v)
{
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_down_sync(0xffffffffu, v, o);
  return __shfl_sync(0xffffffffu, v, 0);
}

/* one warp per row */
__global__ void
layernorm_forward_k(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                    const float *bias, int N, int C)
{
  int row = blockIdx.x, lane = threadIdx.x;
  if (row >= N)
    return;
  const float *x = inp + (size_t)row * C;
  float s = 0;
  for (int i = lane; i < C; i += 32)
    s += x[i];
  float m = warp_sum(s) / C;
  float v = 0;
  for (int i = lane; i < C; i += 32)
    v += (x[i] - m) * (x[i] - m);
  float r = 1.0f / sqrtf(warp_sum(v) / C + 1e-5f);
  float *o = out + (size_t)row * C;
  for (int i = lane; i < C; i += 32)
    o[i] = r * (x[i] - m) * weight[i] + bias[i];
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

__global__ void
layernorm_backward_inp_k(float *dinp, const float *dout, const float *inp, const float *weight,
                         const float *mean, const float *rstd, int N, int C)
{
  int row = blockIdx.x, lane = threadIdx.x;
  if (row >= N)
    return;
  const float *d = dout + (size_t)row * C, *x = inp + (size_t)row * C;
  float *di = dinp + (size_t)row * C;
  float m = mean[row], s = rstd[row], a = 0, b = 0;
  for (int i = lane; i < C; i += 32) {
    float norm = (x[i] - m) * s, dnorm = weight[i] * d[i];
    a += dnorm;
    b += dnorm * norm;
  }
  float dnorm_mean = warp_sum(a) / C, dnorm_norm_mean = warp_sum(b) / C;
  for (int i = lane; i < C; i += 32) {
    float norm = (x[i] - m) * s, dnorm = weight[i] * d[i];
    di[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
  }
}

/* one thread per column, rows in order */
__global__ void
layernorm_backward_params_k(float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *mean, const float *rstd, int N, int C)
{
  size_t i = INDEX();
  if (i >= (size_t)C)
    return;
  float dw = 0, db = 0;
  for (int r = 0; r < N; r++) {
    float d = dout[(size_t)r * C + i];
    dw += (inp[(size_t)r * C + i] - mean[r]) * rstd[r] * d;
    db += d;
  }
  dweight[i] += dw;
  dbias[i] += db;
}

__global__ void
add_bias_k(float *out, const float *bias, size_t rows, int OC)
{
  size_t i = INDEX();
  if (i < rows * OC)
    out[i] += bias[i % OC];
}

__global__ void
bias_grad_k(float *dbias, const float *dout, size_t rows, int OC)
{
  size_t o = INDEX();
  if (o >= (size_t)OC)
    return;
  float s = 0;
  for (size_t r = 0; r < rows; r++)
    s += dout[r * OC + o];
  dbias[o] += s;
}

/* one thread per (b, t, h) */
__global__ void
attention_forward_k(float *out, float *preatt, float *att, const float *inp, int B, int T, int C,
                    int NH)
{
  size_t idx = INDEX();
  if (idx >= (size_t)B * T * NH)
    return;
  int h = (int)(idx % NH), t = (int)((idx / NH) % T), b = (int)(idx / ((size_t)NH * T));
  int hs = C / NH, C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
  const float *q = inp + ((size_t)b * T + t) * C3 + h * hs;
  float *pre = preatt + (((size_t)b * NH + h) * T + t) * T;
  float *a = att + (((size_t)b * NH + h) * T + t) * T;
  float maxv = -1e30f;
  for (int t2 = 0; t2 <= t; t2++) {
    const float *k = inp + ((size_t)b * T + t2) * C3 + h * hs + C;
    float v = 0;
    for (int i = 0; i < hs; i++)
      v += q[i] * k[i];
    v *= scale;
    maxv = fmaxf(maxv, v);
    pre[t2] = v;
  }
  float sum = 0;
  for (int t2 = 0; t2 <= t; t2++) {
    float e = expf(pre[t2] - maxv);
    sum += e;
    a[t2] = e;
  }
  float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
  for (int t2 = 0; t2 < T; t2++)
    a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
  float *o = out + ((size_t)b * T + t) * C + h * hs;
  for (int i = 0; i < hs; i++) {
    float s = 0;
    for (int t2 = 0; t2 <= t; t2++)
      s += a[t2] * inp[((size_t)b * T + t2) * C3 + h * hs + 2 * C + i];
    o[i] = s;
  }
}

__global__ void
attention_backward_k(float *dinp, float *dpreatt, float *datt, const float *dout,
                     const float *inp, const float *att, int B, int T, int C, int NH)
{
  size_t idx = INDEX();
  if (idx >= (size_t)B * T * NH)
    return;
  int h = (int)(idx % NH), t = (int)((idx / NH) % T), b = (int)(idx / ((size_t)NH * T));
  int hs = C / NH, C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
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
    float s = 0;
    for (int i = 0; i < hs; i++) {
      s += v[i] * d[i];
      atomicAdd(&dv[i], a[t2] * d[i]);
    }
    da[t2] += s;
    dot += a[t2] * da[t2];
  }
  for (int t2 = 0; t2 <= t; t2++)
    dpre[t2] += a[t2] * (da[t2] - dot);
  for (int t2 = 0; t2 <= t; t2++) {
    const float *k = inp + ((size_t)b * T + t2) * C3 + h * hs + C;
    float *dk = dinp + ((size_t)b * T + t2) * C3 + h * hs + C;
    float g = dpre[t2] * scale;
    for (int i = 0; i < hs; i++) {
      dq[i] += k[i] * g;
      atomicAdd(&dk[i], q[i] * g);
    }
  }
}

__global__ void
gelu_forward_k(float *out, const float *inp, size_t n)
{
  size_t i = INDEX();
  if (i >= n)
    return;
  float x = inp[i], cube = 0.044715f * x * x * x;
  out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + cube)));
}

__global__ void
gelu_backward_k(float *dinp, const float *inp, const float *dout, size_t n)
{
  size_t i = INDEX();
  if (i >= n)
    return;
  float x = inp[i], cube = 0.044715f * x * x * x;
  float arg = GELU_SCALE * (x + cube), th = tanhf(arg), ch = coshf(arg);
  float sech2 = 1.0f / (ch * ch);
  float grad = 0.5f * (1.0f + th) + x * 0.5f * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
  dinp[i] += grad * dout[i];
}

__global__ void
residual_forward_k(float *out, const float *a, const float *b, size_t n)
{
  size_t i = INDEX();
  if (i < n)
    out[i] = a[i] + b[i];
}

/* one thread per row */
__global__ void
crossentropy_forward_k(float *probs, float *losses, const float *logits, const int *targets,
                       int N, int V)
{
  size_t r = INDEX();
  if (r >= (size_t)N)
    return;
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

__global__ void
crossentropy_backward_k(float *dlogits, const float *probs, const int *targets, int N, int V)
{
  size_t i = INDEX();
  if (i >= (size_t)N * V)
    return;
  size_t r = i / V;
  int v = (int)(i % V);
  dlogits[i] += (probs[i] - (v == targets[r] ? 1.0f : 0.0f)) * (1.0f / (float)N);
}

__global__ void
add_k(float *dst, const float *src, size_t n)
{
  size_t i = INDEX();
  if (i < n)
    dst[i] += src[i];
}

__global__ void
adam_k(float *param, float *master, float *m, float *v, size_t n, float lr, float b1, float b2,
       float eps, float wd, float bc1, float bc2)
{
  size_t i = INDEX();
  if (i >= n)
    return;
  float g = param[i];
  float mi = b1 * m[i] + (1.0f - b1) * g;
  float vi = b2 * v[i] + (1.0f - b2) * g * g;
  m[i] = mi;
  v[i] = vi;
  float mhat = mi / bc1, vhat = vi / bc2, w = master[i];
  w -= lr * (mhat / (sqrtf(vhat) + eps) + wd * w);
  master[i] = w;
  param[i] = w;
}

/* ---- the table ----------------------------------------------------------------------------- */

static void
encoder_forward(StwCompute *x, float *out, const int *inp, const float *wte, const float *wpe,
                int B, int T, int C)
{
  encoder_forward_k<<<blocks_for((size_t)B * T * C), THREADS>>>(out, inp, wte, wpe, B, T, C);
  launched((Cuda *)x, "encoder_forward");
}

static void
encoder_backward(StwCompute *x, float *dwte, float *dwpe, const float *dout, const int *inp,
                 int B, int T, int C)
{
  encoder_backward_k<<<blocks_for((size_t)B * T * C), THREADS>>>(dwte, dwpe, dout, inp, B, T, C);
  launched((Cuda *)x, "encoder_backward");
}

static void
layernorm_forward(StwCompute *x, float *out, float *mean, float *rstd, const float *inp,
                  const float *weight, const float *bias, int B, int T, int C)
{
  layernorm_forward_k<<<B * T, 32>>>(out, mean, rstd, inp, weight, bias, B * T, C);
  launched((Cuda *)x, "layernorm_forward");
}

static void
layernorm_backward(StwCompute *x, float *dinp, float *dweight, float *dbias, const float *dout,
                   const float *inp, const float *weight, const float *mean, const float *rstd,
                   int B, int T, int C)
{
  layernorm_backward_inp_k<<<B * T, 32>>>(dinp, dout, inp, weight, mean, rstd, B * T, C);
  launched((Cuda *)x, "layernorm_backward");
  layernorm_backward_params_k<<<blocks_for((size_t)C), THREADS>>>(dweight, dbias, dout, inp,
                                                                   mean, rstd, B * T, C);
  launched((Cuda *)x, "layernorm_backward (weights)");
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

/* C (column-major, m x n) = op(A) op(B) + beta C, in the table's precision */
static void
gemm(Cuda *c, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *A,
     int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
  float alpha = 1.0f;
  cublasStatus_t s = cublasGemmEx(c->blas, ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, B,
                                  CUDA_R_32F, ldb, &beta, C, CUDA_R_32F, ldc, c->gemm_compute,
                                  CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS)
    note(c, "cublasGemmEx", blas_status(s));
}

/* Row-major out (BT, OC) = inp (BT, C) weight (OC, C)^T + bias. cuBLAS sees the row-major
 * arrays as their transposes, column-major: out^T (OC, BT) = (weight^T)^T (OC, C) inp^T (C, BT). */
static void
matmul_forward(StwCompute *x, float *out, const float *inp, const float *weight,
               const float *bias, int B, int T, int C, int OC)
{
  Cuda *c = (Cuda *)x;
  int BT = B * T;
  gemm(c, CUBLAS_OP_T, CUBLAS_OP_N, OC, BT, C, weight, C, inp, C, 0.0f, out, OC);
  if (bias != NULL) {
    add_bias_k<<<blocks_for((size_t)BT * OC), THREADS>>>(out, bias, (size_t)BT, OC);
    launched(c, "matmul_forward (bias)");
  }
}

static void
matmul_backward(StwCompute *x, float *dinp, float *dweight, float *dbias, const float *dout,
                const float *inp, const float *weight, int B, int T, int C, int OC)
{
  Cuda *c = (Cuda *)x;
  int BT = B * T;
  /* dinp (BT, C) += dout (BT, OC) weight (OC, C) */
  gemm(c, CUBLAS_OP_N, CUBLAS_OP_N, C, BT, OC, weight, C, dout, OC, 1.0f, dinp, C);
  /* dweight (OC, C) += dout^T (OC, BT) inp (BT, C) */
  gemm(c, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, BT, inp, C, dout, OC, 1.0f, dweight, C);
  if (dbias != NULL) {
    bias_grad_k<<<blocks_for((size_t)OC), THREADS>>>(dbias, dout, (size_t)BT, OC);
    launched(c, "matmul_backward (bias)");
  }
}

static void
attention_forward(StwCompute *x, float *out, float *preatt, float *att, const float *inp, int B,
                  int T, int C, int NH)
{
  attention_forward_k<<<blocks_for((size_t)B * T * NH), THREADS>>>(out, preatt, att, inp, B, T,
                                                                     C, NH);
  launched((Cuda *)x, "attention_forward");
}

static void
attention_backward(StwCompute *x, float *dinp, float *dpreatt, float *datt, const float *dout,
                   const float *inp, const float *att, int B, int T, int C, int NH)
{
  attention_backward_k<<<blocks_for((size_t)B * T * NH), THREADS>>>(dinp, dpreatt, datt, dout,
                                                                      inp, att, B, T, C, NH);
  launched((Cuda *)x, "attention_backward");
}

static void
gelu_forward(StwCompute *x, float *out, const float *inp, size_t n)
{
  gelu_forward_k<<<blocks_for(n), THREADS>>>(out, inp, n);
  launched((Cuda *)x, "gelu_forward");
}

static void
gelu_backward(StwCompute *x, float *dinp, const float *inp, const float *dout, size_t n)
{
  gelu_backward_k<<<blocks_for(n), THREADS>>>(dinp, inp, dout, n);
  launched((Cuda *)x, "gelu_backward");
}

static void
residual_forward(StwCompute *x, float *out, const float *a, const float *b, size_t n)
{
  residual_forward_k<<<blocks_for(n), THREADS>>>(out, a, b, n);
  launched((Cuda *)x, "residual_forward");
}

static float
crossentropy_forward(StwCompute *x, float *probs, float *losses, const float *logits,
                     const int *targets, int B, int T, int V)
{
  Cuda *c = (Cuda *)x;
  int N = B * T;
  crossentropy_forward_k<<<blocks_for((size_t)N), THREADS>>>(probs, losses, logits, targets, N,
                                                              V);
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
  crossentropy_backward_k<<<blocks_for((size_t)N * V), THREADS>>>(dlogits, probs, targets, N, V);
  launched((Cuda *)x, "crossentropy_backward");
}

static void
grad_commit(StwCompute *x, float *slot, const float *grad, size_t n, gboolean first)
{
  Cuda *c = (Cuda *)x;
  if (first) {
    check(c, cudaMemcpyAsync(slot, grad, n * sizeof(float), cudaMemcpyDeviceToDevice, 0),
          "cudaMemcpyAsync (gradient)");
    return;
  }
  add_k<<<blocks_for(n), THREADS>>>(slot, grad, n);
  launched(c, "grad_commit");
}

static void
adam(StwCompute *x, float *param, float *master, float *m, float *v, size_t n,
     const StwAdamConfig *cfg, guint64 step)
{
  /* bias corrections in double, as the CPU's */
  float bc1 = (float)(1.0 - pow(cfg->beta1, (double)step));
  float bc2 = (float)(1.0 - pow(cfg->beta2, (double)step));
  adam_k<<<blocks_for(n), THREADS>>>(param, master, m, v, n, cfg->lr, cfg->beta1, cfg->beta2,
                                     cfg->eps, cfg->weight_decay, bc1, bc2);
  launched((Cuda *)x, "adam");
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
  cublasSetStream(c->blas, 0);
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
  t->gelu_forward = gelu_forward;
  t->gelu_backward = gelu_backward;
  t->residual_forward = residual_forward;
  t->crossentropy_forward = crossentropy_forward;
  t->crossentropy_backward = crossentropy_backward;
  t->grad_commit = grad_commit;
  t->adam = adam;
  t->upload = upload;
  t->download = download;
  t->ok = ok;
  t->free = cuda_free;
  return t;
}
