/* adam.c — fused AdamW; see adam.h. */
#include "config.h"

#include <stowage/adam.h>

#include <math.h>

void
stw_adam_config_init(StwAdamConfig *c)
{
  c->lr = 1e-3f;
  c->beta1 = 0.9f;
  c->beta2 = 0.999f;
  c->eps = 1e-8f;
  c->weight_decay = 0.01f;
}

void
stw_adam_update(float *param, const float *grad, float *m, float *v, size_t n,
                const StwAdamConfig *c, guint64 step)
{
  /* bias corrections in double: powf loses precision for large steps */
  float bc1 = (float)(1.0 - pow(c->beta1, (double)step));
  float bc2 = (float)(1.0 - pow(c->beta2, (double)step));
  float b1 = c->beta1, b2 = c->beta2, lr = c->lr, eps = c->eps, wd = c->weight_decay;
  for (size_t i = 0; i < n; i++) {
    float g = grad[i];
    float mi = b1 * m[i] + (1.0f - b1) * g;
    float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float mhat = mi / bc1, vhat = vi / bc2;
    param[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * param[i]);
  }
}
