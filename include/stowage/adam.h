/* adam.h — AdamW on fp32 arrays: the CPU Adam of the optimizer stage.
 *
 * One fused pass per element reads the gradient, updates momentum and variance and the fp32
 * master weight, as DeepSpeed's and PatrickStar's CPU Adam do. Used by `stowage probe` to
 * measure this machine's rate, and by the trainer.
 */
#ifndef STW_ADAM_H
#define STW_ADAM_H

#include <stddef.h>

#include <glib.h>

#include <stowage/api.h>
#include <stowage/model.h>

#if STW_BUILDING_LAYER < STW_LAYER_TRAIN || STW_BUILDING_LAYER == STW_LAYER_PROFILE
#error "<stowage/adam.h> belongs to the trainer: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

typedef struct {
  float lr;            /* learning rate */
  float beta1, beta2;  /* moment decay rates */
  float eps;
  float weight_decay;  /* decoupled (AdamW) */
  gboolean amsgrad;    /* AMSGrad: the step divides by the largest variance so far, kept after
                        * the variance: V holds 2 N values (a tensor's region of a variance chunk
                        * in a trace of model.amsgrad) */
  float loss_scale;    /* an fp16 compute copy's gradient is this many times the loss's (the
                        * dynamic loss scale); the step divides it out in fp32. 1: none. Only
                        * fp16 compute copies carry one: fp32 and bf16 gradients are taken as
                        * they are */
  StwDtype state_dtype; /* the moments' dtype: STW_DTYPE_FP32, or STW_DTYPE_BF16 (M and V are
                         * bf16 arrays, rounded stochastically at each step; the master
                         * weights stay fp32) */
} StwAdamConfig;

/* The usual defaults: lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01, no AMSGrad, loss
 * scale 1, fp32 moments. */
void stw_adam_config_init(StwAdamConfig *c);

/* One AdamW step (STEP counts from 1) on N fp32 elements from the gradient GRAD, in one thread;
 * M and V (2 N with AMSGrad) in C's state dtype. */
void stw_adam_update(float *param, const float *grad, void *m, void *v, size_t n,
                     const StwAdamConfig *c, guint64 step);

STW_END_DECLS

#endif
