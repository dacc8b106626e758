/* compute-cpu.c — the CPU table of compute.h: kernels.c on host memory. */
#include "config.h"

#include <stowage/compute.h>

#include <math.h>
#include <string.h>

#include "compute-cuda-bodies.h"
#include "kernels.h"

static void
encoder_forward(StwCompute *x, float *out, const int *inp, const float *wte, const float *wpe,
                int B, int T, int C)
{
  (void)x;
  stw_encoder_forward(out, inp, wte, wpe, B, T, C);
}

static void
encoder_backward(StwCompute *x, float *dwte, float *dwpe, const float *dout, const int *inp,
                 int B, int T, int C)
{
  (void)x;
  stw_encoder_backward(dwte, dwpe, dout, inp, B, T, C);
}

static void
layernorm_forward(StwCompute *x, float *out, float *mean, float *rstd, const float *inp,
                  const float *weight, const float *bias, int B, int T, int C)
{
  (void)x;
  stw_layernorm_forward(out, mean, rstd, inp, weight, bias, B, T, C);
}

static void
layernorm_backward(StwCompute *x, float *dinp, float *dweight, float *dbias, const float *dout,
                   const float *inp, const float *weight, const float *mean, const float *rstd,
                   int B, int T, int C, gboolean accumulate)
{
  (void)x;
  stw_layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, T, C,
                         accumulate);
}

static void
matmul_forward(StwCompute *x, float *out, const float *inp, const float *weight,
               const float *bias, int B, int T, int C, int OC)
{
  (void)x;
  stw_matmul_forward(out, inp, weight, bias, B, T, C, OC);
}

static void
matmul_backward(StwCompute *x, float *dinp, float *dweight, float *dbias, const float *dout,
                const float *inp, const float *weight, int B, int T, int C, int OC,
                gboolean accumulate)
{
  (void)x;
  stw_matmul_backward(dinp, dweight, dbias, dout, inp, weight, B, T, C, OC, accumulate);
}

static void
attention_forward(StwCompute *x, float *out, float *preatt, float *att, const float *inp, int B,
                  int T, int C, int NH)
{
  (void)x;
  stw_attention_forward(out, preatt, att, inp, B, T, C, NH);
}

static void
attention_backward(StwCompute *x, float *dinp, float *dpreatt, float *datt, const float *dout,
                   const float *inp, const float *att, int B, int T, int C, int NH)
{
  (void)x;
  stw_attention_backward(dinp, dpreatt, datt, dout, inp, att, B, T, C, NH);
}

G_STATIC_ASSERT(STW_FA_MAX_HS == STW_FLASH_MAX_HEAD_WIDTH);

static void
attention_flash_forward(StwCompute *x, float *out, float *lse, const float *inp, int B, int T,
                        int C, int NH)
{
  (void)x;
  stw_attention_flash_forward(out, lse, inp, B, T, C, NH);
}

static void
attention_flash_backward(StwCompute *x, float *dinp, float *delta, const float *dout,
                         const float *inp, const float *out, const float *lse, int B, int T,
                         int C, int NH)
{
  (void)x;
  stw_attention_flash_backward(dinp, delta, dout, inp, out, lse, B, T, C, NH);
}

static void
gelu_forward(StwCompute *x, float *out, const float *inp, size_t n)
{
  (void)x;
  stw_gelu_forward(out, inp, n);
}

static void
gelu_backward(StwCompute *x, float *dinp, const float *inp, const float *dout, size_t n)
{
  (void)x;
  stw_gelu_backward(dinp, inp, dout, n);
}

static void
residual_forward(StwCompute *x, float *out, const float *a, const float *b, size_t n)
{
  (void)x;
  stw_residual_forward(out, a, b, n);
}

static float
crossentropy_forward(StwCompute *x, float *probs, float *losses, const float *logits,
                     const int *targets, int B, int T, int V)
{
  (void)x;
  return stw_crossentropy_forward(probs, losses, logits, targets, B, T, V);
}

static void
crossentropy_backward(StwCompute *x, float *dlogits, const float *probs, const int *targets,
                      int B, int T, int V)
{
  (void)x;
  stw_crossentropy_backward(dlogits, probs, targets, B, T, V);
}

static void
grad_commit(StwCompute *x, void *slot, StwDtype dtype, const float *grad, size_t n,
            gboolean first)
{
  (void)x;
  if (dtype == STW_DTYPE_BF16) {
    stw_commit_bf16(slot, grad, n, first);
    return;
  }
  float *s = slot;
  if (first) {
    memcpy(s, grad, n * sizeof(float));
    return;
  }
  for (size_t i = 0; i < n; i++)
    s[i] += grad[i];
}

static void
widen(StwCompute *x, float *dst, const void *src, StwDtype dtype, size_t n)
{
  (void)x;
  if (dtype != STW_DTYPE_BF16) {
    memcpy(dst, src, n * sizeof(float));
    return;
  }
  stw_widen_bf16(dst, src, n);
}

void
stw_compute_host_adam(void *param, StwDtype dtype, float *master, void *m, void *v, size_t n,
                      const StwAdamConfig *c, guint64 step)
{
  /* the compute copy holds the gradient; it and the master weights get the update */
  stw_adam_host(param, dtype, master, m, v, n, stw_adam_step(c, step, n));
}

void
stw_compute_host_adam_to_copy(float *param, const float *master, void *m, void *v, size_t n,
                              const StwAdamConfig *c, guint64 step)
{
  stw_adam_host_to_copy(param, master, m, v, n, stw_adam_step(c, step, n));
}

static void
adam(StwCompute *x, void *param, StwDtype dtype, float *master, void *m, void *v, size_t n,
     const StwAdamConfig *c, guint64 step)
{
  (void)x;
  stw_compute_host_adam(param, dtype, master, m, v, n, c, step);
}

static void
zero(StwCompute *x, void *dst, size_t bytes)
{
  (void)x;
  memset(dst, 0, bytes);
}

static void
copy_bytes(StwCompute *x, void *dst, const void *src, size_t bytes)
{
  (void)x;
  memcpy(dst, src, bytes);
}

static gboolean
always_ok(StwCompute *x)
{
  (void)x;
  return TRUE;
}

static void
no_free(StwCompute *x)
{
  (void)x;
}

static StwCompute cpu = {
  .name = "cpu",
  .device_memory = FALSE,
  .encoder_forward = encoder_forward,
  .encoder_backward = encoder_backward,
  .layernorm_forward = layernorm_forward,
  .layernorm_backward = layernorm_backward,
  .matmul_forward = matmul_forward,
  .matmul_backward = matmul_backward,
  .attention_forward = attention_forward,
  .attention_backward = attention_backward,
  .attention_flash_forward = attention_flash_forward,
  .attention_flash_backward = attention_flash_backward,
  .gelu_forward = gelu_forward,
  .gelu_backward = gelu_backward,
  .residual_forward = residual_forward,
  .crossentropy_forward = crossentropy_forward,
  .crossentropy_backward = crossentropy_backward,
  .widen = widen,
  .grad_commit = grad_commit,
  .adam = adam,
  .zero = zero,
  .upload = copy_bytes,
  .download = copy_bytes,
  .ok = always_ok,
  .free = no_free,
};

StwCompute *
stw_compute_cpu(void)
{
  return &cpu;
}

static void
matmul_forward_bf16(StwCompute *x, float *out, const float *inp, const float *weight,
                    const float *bias, int B, int T, int C, int OC)
{
  (void)x;
  stw_matmul_forward_bf16(out, inp, weight, bias, B, T, C, OC);
}

static void
matmul_backward_bf16(StwCompute *x, float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int B, int T, int C, int OC,
                     gboolean accumulate)
{
  (void)x;
  stw_matmul_backward_bf16(dinp, dweight, dbias, dout, inp, weight, B, T, C, OC, accumulate);
}

StwCompute *
stw_compute_cpu_mixed(void)
{
  static gsize once = 0;
  static StwCompute mixed;
  if (g_once_init_enter(&once)) {
    mixed = cpu;
    mixed.name = "cpu-mixed";
    mixed.matmul_forward = matmul_forward_bf16;
    mixed.matmul_backward = matmul_backward_bf16;
    g_once_init_leave(&once, 1);
  }
  return stw_matmul_bf16_isa() != NULL ? &mixed : &cpu;
}

const char *
stw_compute_cpu_bf16_isa(void)
{
  return stw_matmul_bf16_isa();
}
