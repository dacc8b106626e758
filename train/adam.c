/* adam.c — fused AdamW; see adam.h. */
#include "config.h"

#include <stowage/adam.h>

#include "kernels.h"

void
stw_adam_config_init(StwAdamConfig *c)
{
  c->lr = 1e-3f;
  c->beta1 = 0.9f;
  c->beta2 = 0.999f;
  c->eps = 1e-8f;
  c->weight_decay = 0.01f;
  c->amsgrad = FALSE;
  c->loss_scale = 1.0f;
  c->state_dtype = STW_DTYPE_FP32;
}

StwAdamStep
stw_adam_step(const StwAdamConfig *c, guint64 step, size_t n)
{
  StwAdamStep s =
      stw_cb_adam_step(c->lr, c->beta1, c->beta2, c->eps, c->weight_decay, c->loss_scale,
                       (double)step);
  s.vmax = c->amsgrad ? n : 0;
  s.bf16_moments = c->state_dtype == STW_DTYPE_BF16;
  return s;
}

void
stw_adam_update(float *param, const float *grad, void *m, void *v, size_t n,
                const StwAdamConfig *c, guint64 step)
{
  StwAdamStep s = stw_adam_step(c, step, n);
  stw_adam_range(0, n, param, grad, m, v, s);
}
