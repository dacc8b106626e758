/* compute.h — where the trainer's math runs.
 *
 * One table of the trainer's kernels (kernels.h's, in the same order and with the same meaning:
 * what each backward kernel writes and what it adds into is said there; none relies on memory
 * being zero) over memory the runtime hands out: chunk slots and activations, which are not
 * zeroed. The CPU table runs kernels.c on host memory, bitwise what the trainer always
 * computed; its mixed-precision twin ("cpu-mixed") runs the matmuls on bf16 inputs with fp32
 * sums (oneDNN) where the CPU has bf16 arithmetic. The CUDA table (compute-cuda.cu) runs CUDA kernels and cuBLAS on the CUDA backend's
 * device memory, on the legacy default stream, which the backend's copies are ordered against;
 * with `mixed` precision its matmuls round their inputs to bf16 for the tensor cores and
 * accumulate in fp32.
 *
 * The compute copy of the weights is fp32, or bf16 in mixed precision (the model's dtype); the
 * kernels read fp32, so the trainer widens a bf16 weight into an activation before an op, and
 * commits gradients and runs Adam through the table in the slot's dtype (a mixed table's matmuls
 * round those fp32 inputs to bf16 themselves). Master weights, Adam
 * state, activations and gradients before their commit are always fp32.
 *
 * Token ids and the loss cross between host and device through `upload` and `download`; the
 * CPU table's copies are memcpy.
 */
#ifndef STW_COMPUTE_H
#define STW_COMPUTE_H

#include <stddef.h>

#include <glib.h>

#include <stowage/adam.h>
#include <stowage/trace.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_TRAIN || STW_BUILDING_LAYER == STW_LAYER_PROFILE
#error "<stowage/compute.h> belongs to the trainer: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

typedef struct StwCompute StwCompute;

/* The widest attention head the fused attention takes (its rows' partial sums are per lane). */
#define STW_FLASH_MAX_HEAD_WIDTH 128

struct StwCompute {
  const char *name;           /* "cpu", "cpu-mixed", "cuda" or "cuda-mixed" */
  gboolean device_memory;     /* its pointers are not host memory: tokens must be uploaded */
  void (*encoder_forward)(StwCompute *x, float *out, const int *inp, const float *wte,
                          const float *wpe, int B, int T, int C);
  void (*encoder_backward)(StwCompute *x, float *dwte, float *dwpe, const float *dout,
                           const int *inp, int B, int T, int C);
  void (*layernorm_forward)(StwCompute *x, float *out, float *mean, float *rstd,
                            const float *inp, const float *weight, const float *bias, int B,
                            int T, int C);
  void (*layernorm_backward)(StwCompute *x, float *dinp, float *dweight, float *dbias,
                             const float *dout, const float *inp, const float *weight,
                             const float *mean, const float *rstd, int B, int T, int C,
                             gboolean accumulate);
  void (*matmul_forward)(StwCompute *x, float *out, const float *inp, const float *weight,
                         const float *bias, int B, int T, int C, int OC);
  void (*matmul_backward)(StwCompute *x, float *dinp, float *dweight, float *dbias,
                          const float *dout, const float *inp, const float *weight, int B, int T,
                          int C, int OC, gboolean accumulate);
  void (*attention_forward)(StwCompute *x, float *out, float *preatt, float *att,
                            const float *inp, int B, int T, int C, int NH);
  void (*attention_backward)(StwCompute *x, float *dinp, float *dpreatt, float *datt,
                             const float *dout, const float *inp, const float *att, int B, int T,
                             int C, int NH);
  /* fused causal attention (FlashAttention's arithmetic, no (T x T) matrix): OUT and LSE
   * (B, NH, T), each query row's log-sum-exp, written; head widths up to
   * STW_FLASH_MAX_HEAD_WIDTH */
  void (*attention_flash_forward)(StwCompute *x, float *out, float *lse, const float *inp, int B,
                                  int T, int C, int NH);
  /* DINP (B, T, 3C) written from the forward's OUT and LSE; DELTA (B, NH, T) is scratch */
  void (*attention_flash_backward)(StwCompute *x, float *dinp, float *delta, const float *dout,
                                   const float *inp, const float *out, const float *lse, int B,
                                   int T, int C, int NH);
  void (*gelu_forward)(StwCompute *x, float *out, const float *inp, size_t n);
  void (*gelu_backward)(StwCompute *x, float *dinp, const float *inp, const float *dout,
                        size_t n);
  void (*residual_forward)(StwCompute *x, float *out, const float *a, const float *b, size_t n);
  /* the mean loss, on the host */
  float (*crossentropy_forward)(StwCompute *x, float *probs, float *losses, const float *logits,
                                const int *targets, int B, int T, int V);
  void (*crossentropy_backward)(StwCompute *x, float *dlogits, const float *probs,
                                const int *targets, int B, int T, int V);
  /* N compute-copy values of SRC (fp32 or bf16, as DTYPE says) as fp32 in DST */
  void (*widen)(StwCompute *x, float *dst, const void *src, StwDtype dtype, size_t n);
  /* a gradient into its tensor's slot (of DTYPE): the first write replaces, later ones add (tied
   * weights) */
  void (*grad_commit)(StwCompute *x, void *slot, StwDtype dtype, const float *grad, size_t n,
                      gboolean first);
  /* AdamW on chunks in this table's memory: PARAM (of DTYPE) holds the gradient; MASTER, M and
   * V (in C's state dtype) are updated and PARAM gets the new weights */
  void (*adam)(StwCompute *x, void *param, StwDtype dtype, float *master, void *m, void *v,
               size_t n, const StwAdamConfig *c, guint64 step);
  /* BYTES of zeros at DST, in this table's memory */
  void (*zero)(StwCompute *x, void *dst, size_t bytes);
  void (*upload)(StwCompute *x, void *dst, const void *host_src, size_t bytes);
  void (*download)(StwCompute *x, void *host_dst, const void *src, size_t bytes);
  /* FALSE once a kernel or a copy has failed, with ERROR naming it */
  gboolean (*ok)(StwCompute *x);
  void (*free)(StwCompute *x);
  char error[256];
};

/* The CPU table: never NULL, static, never freed. */
StwCompute *stw_compute_cpu(void);

/* The CPU table of mixed precision: "cpu-mixed", whose matmuls round their inputs to bf16 and
 * sum in fp32 (oneDNN's bf16 matmul, as the CUDA table's tensor cores do), where the CPU has bf16
 * arithmetic (stw_compute_cpu_bf16_isa); elsewhere the CPU table itself, matmuls in fp32. The
 * trainer takes it for a bf16 compute copy. Never NULL, static, never freed. */
StwCompute *stw_compute_cpu_mixed(void);

/* The instructions the CPU's bf16 matmuls run on here ("AVX512-BF16", "AMX"), NULL where they
 * would not run natively: no oneDNN in this build, a CPU without them, or ONEDNN_MAX_CPU_ISA
 * set below AVX512_CORE_BF16 (which is how to keep mixed precision's matmuls fp32). */
const char *stw_compute_cpu_bf16_isa(void);

/* The CUDA table on the current device; MIXED: bf16 tensor-core matmuls. NULL with ERROR naming
 * the failing call when there is no device or its module cannot be loaded
 * (STW_TRAINER_ERROR_DEVICE), or this stowage was built without CUDA (UNSUPPORTED). The caller
 * frees the table with its free function. */
StwCompute *stw_compute_cuda_new(gboolean mixed, GError **error);

/* AdamW over host memory, as the CPU table does it: the update of the master weights, copied
 * into the compute copy (of DTYPE). */
void stw_compute_host_adam(void *param, StwDtype dtype, float *master, void *m, void *v,
                           size_t n, const StwAdamConfig *c, guint64 step);
/* The same where an fp32 compute copy keeps the weights (stw_runtime_optim_weights_in_copy):
 * PARAM holds the gradient and gets the new weights, MASTER (the weights, or PARAM itself) is
 * only read. Bitwise the weights of the above, 4 bytes an element fewer written. */
void stw_compute_host_adam_to_copy(float *param, const float *master, void *m, void *v,
                                   size_t n, const StwAdamConfig *c, guint64 step);

STW_END_DECLS

#endif
