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
#define DEVICE_ERROR g_quark_from_static_string("stw-compute-cuda-error-quark")
#define DEVICE_ERROR_CODE 0

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
KERNEL(layernorm_forward_k, stw_cb_layernorm_forward,
       (size_t n, float *out, float *mean, float *rstd, const float *inp, const float *weight,
        const float *bias, int C),
       (i, out, mean, rstd, inp, weight, bias, C))
KERNEL(layernorm_backward_inp_k, stw_cb_layernorm_backward_inp,
       (size_t n, float *dinp, const float *dout, const float *inp, const float *weight,
        const float *mean, const float *rstd, int C),
       (i, dinp, dout, inp, weight, mean, rstd, C))
KERNEL(layernorm_backward_params_k, stw_cb_layernorm_backward_params,
       (size_t n, float *dweight, float *dbias, const float *dout, const float *inp,
        const float *mean, const float *rstd, int N, int C, int accumulate),
       (i, dweight, dbias, dout, inp, mean, rstd, N, C, accumulate))
KERNEL(add_bias_k, stw_cb_add_bias, (size_t n, float *out, const float *bias, int OC),
       (i, out, bias, OC))
KERNEL(bias_grad_k, stw_cb_bias_grad,
       (size_t n, float *dbias, const float *dout, size_t rows, int OC, int accumulate),
       (i, dbias, dout, rows, OC, accumulate))
KERNEL(attention_forward_k, stw_cb_attention_forward,
       (size_t n, float *out, float *preatt, float *att, const float *inp, int T, int C, int NH),
       (i, out, preatt, att, inp, T, C, NH))
KERNEL(attention_backward_k, stw_cb_attention_backward,
       (size_t n, float *dinp, float *dpreatt, float *datt, const float *dout, const float *inp,
        const float *att, int T, int C, int NH),
       (i, dinp, dpreatt, datt, dout, inp, att, T, C, NH))
KERNEL(gelu_forward_k, stw_cb_gelu_forward, (size_t n, float *out, const float *inp),
       (i, out, inp))
KERNEL(gelu_backward_k, stw_cb_gelu_backward,
       (size_t n, float *dinp, const float *inp, const float *dout), (i, dinp, inp, dout))
KERNEL(residual_forward_k, stw_cb_residual, (size_t n, float *out, const float *a, const float *b),
       (i, out, a, b))
KERNEL(crossentropy_forward_k, stw_cb_crossentropy_forward,
       (size_t n, float *probs, float *losses, const float *logits, const int *targets, int V),
       (i, probs, losses, logits, targets, V))
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
KERNEL(adam_k, stw_cb_adam,
       (size_t n, float *param, float *master, float *m, float *v, StwAdamStep s),
       (i, param, master, m, v, s))

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
  layernorm_forward_k<<<blocks_for(n), THREADS>>>(n, out, mean, rstd, inp, weight, bias, C);
  launched((Cuda *)x, "layernorm_forward");
}

static void
layernorm_backward(StwCompute *x, float *dinp, float *dweight, float *dbias, const float *dout,
                   const float *inp, const float *weight, const float *mean, const float *rstd,
                   int B, int T, int C, gboolean accumulate)
{
  size_t n = (size_t)B * T;
  layernorm_backward_inp_k<<<blocks_for(n), THREADS>>>(n, dinp, dout, inp, weight, mean, rstd,
                                                        C);
  launched((Cuda *)x, "layernorm_backward");
  layernorm_backward_params_k<<<blocks_for((size_t)C), THREADS>>>((size_t)C, dweight, dbias,
                                                                   dout, inp, mean, rstd, B * T,
                                                                   C, accumulate);
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
  if (dbias != NULL) {
    bias_grad_k<<<blocks_for((size_t)OC), THREADS>>>((size_t)OC, dbias, dout, (size_t)BT, OC,
                                                     accumulate);
    launched(c, "matmul_backward (bias)");
  }
}

static void
attention_forward(StwCompute *x, float *out, float *preatt, float *att, const float *inp, int B,
                  int T, int C, int NH)
{
  size_t n = (size_t)B * T * NH;
  attention_forward_k<<<blocks_for(n), THREADS>>>(n, out, preatt, att, inp, T, C, NH);
  launched((Cuda *)x, "attention_forward");
}

static void
attention_backward(StwCompute *x, float *dinp, float *dpreatt, float *datt, const float *dout,
                   const float *inp, const float *att, int B, int T, int C, int NH)
{
  Cuda *c = (Cuda *)x;
  size_t n = (size_t)B * T * NH, n_att = n * T;
  /* the kernel adds into what it writes */
  check(c, cudaMemsetAsync(dinp, 0, (size_t)B * T * 3 * C * sizeof(float), 0),
        "cudaMemsetAsync (attention backward)");
  check(c, cudaMemsetAsync(dpreatt, 0, n_att * sizeof(float), 0),
        "cudaMemsetAsync (attention backward)");
  check(c, cudaMemsetAsync(datt, 0, n_att * sizeof(float), 0),
        "cudaMemsetAsync (attention backward)");
  attention_backward_k<<<blocks_for(n), THREADS>>>(n, dinp, dpreatt, datt, dout, inp, att, T, C,
                                                    NH);
  launched(c, "attention_backward");
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
  crossentropy_forward_k<<<blocks_for((size_t)N), THREADS>>>((size_t)N, probs, losses, logits,
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
adam(StwCompute *x, void *param, StwDtype dtype, float *master, float *m, float *v, size_t n,
     const StwAdamConfig *cfg, guint64 step)
{
  StwAdamStep s = stw_cb_adam_step(cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay,
                                    (double)step); /* as the CPU's */
  if (dtype == STW_DTYPE_BF16)
    adam_bf16_k<<<blocks_for(n), THREADS>>>(n, (uint16_t *)param, master, m, v, s);
  else
    adam_k<<<blocks_for(n), THREADS>>>(n, (float *)param, master, m, v, s);
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
