/* kernels.c — see kernels.h. The formulas are llm.c's (Karpathy), reorganized so that every
 * parallel loop writes disjoint outputs. */
#include "config.h"

#include "kernels.h"

#include <math.h>
#include <string.h>

#define GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

void
stw_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T,
                    int C)
{
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      float *o = out + ((size_t)b * T + t) * C;
      const float *e = wte + (size_t)inp[b * T + t] * C, *p = wpe + (size_t)t * C;
      for (int i = 0; i < C; i++)
        o[i] = e[i] + p[i];
    }
  }
}

void
stw_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T,
                     int C)
{
  /* serial: token rows repeat, and a fixed order keeps the sums reproducible */
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      const float *d = dout + ((size_t)b * T + t) * C;
      float *e = dwte + (size_t)inp[b * T + t] * C, *p = dwpe + (size_t)t * C;
      for (int i = 0; i < C; i++) {
        e[i] += d[i];
        p[i] += d[i];
      }
    }
  }
}

void
stw_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                      const float *bias, int B, int T, int C)
{
  const float eps = 1e-5f;
#pragma omp parallel for
  for (int bt = 0; bt < B * T; bt++) {
    const float *x = inp + (size_t)bt * C;
    float m = 0, v = 0;
    for (int i = 0; i < C; i++)
      m += x[i];
    m /= C;
    for (int i = 0; i < C; i++)
      v += (x[i] - m) * (x[i] - m);
    v /= C;
    float s = 1.0f / sqrtf(v + eps);
    float *o = out + (size_t)bt * C;
    for (int i = 0; i < C; i++)
      o[i] = s * (x[i] - m) * weight[i] + bias[i];
    mean[bt] = m;
    rstd[bt] = s;
  }
}

void
stw_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                       const float *inp, const float *weight, const float *mean, const float *rstd,
                       int B, int T, int C)
{
#pragma omp parallel for
  for (int bt = 0; bt < B * T; bt++) {
    const float *d = dout + (size_t)bt * C, *x = inp + (size_t)bt * C;
    float *di = dinp + (size_t)bt * C;
    float m = mean[bt], s = rstd[bt], dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int i = 0; i < C; i++) {
      float norm = (x[i] - m) * s, dnorm = weight[i] * d[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int i = 0; i < C; i++) {
      float norm = (x[i] - m) * s, dnorm = weight[i] * d[i];
      di[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
#pragma omp parallel for
  for (int i = 0; i < C; i++) {
    float dw = 0, db = 0;
    for (int bt = 0; bt < B * T; bt++) {
      float d = dout[(size_t)bt * C + i];
      dw += (inp[(size_t)bt * C + i] - mean[bt]) * rstd[bt] * d;
      db += d;
    }
    dweight[i] += dw;
    dbias[i] += db;
  }
}

void
stw_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int B,
                   int T, int C, int OC)
{
#pragma omp parallel for collapse(2)
  for (int bt = 0; bt < B * T; bt++) {
    for (int o = 0; o < OC; o++) {
      const float *x = inp + (size_t)bt * C, *w = weight + (size_t)o * C;
      float v = bias != NULL ? bias[o] : 0.0f;
      for (int i = 0; i < C; i++)
        v += x[i] * w[i];
      out[(size_t)bt * OC + o] = v;
    }
  }
}

void
stw_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                    const float *inp, const float *weight, int B, int T, int C, int OC)
{
#pragma omp parallel for
  for (int bt = 0; bt < B * T; bt++) {
    const float *d = dout + (size_t)bt * OC;
    float *di = dinp + (size_t)bt * C;
    for (int o = 0; o < OC; o++) {
      const float *w = weight + (size_t)o * C;
      for (int i = 0; i < C; i++)
        di[i] += w[i] * d[o];
    }
  }
#pragma omp parallel for
  for (int o = 0; o < OC; o++) {
    float *dw = dweight + (size_t)o * C, db = 0;
    for (int bt = 0; bt < B * T; bt++) {
      float d = dout[(size_t)bt * OC + o];
      const float *x = inp + (size_t)bt * C;
      for (int i = 0; i < C; i++)
        dw[i] += x[i] * d;
      db += d;
    }
    if (dbias != NULL)
      dbias[o] += db;
  }
}

void
stw_attention_forward(float *out, float *preatt, float *att, const float *inp, int B, int T,
                      int C, int NH)
{
  int hs = C / NH, C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(3)
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      for (int h = 0; h < NH; h++) {
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
          maxv = v > maxv ? v : maxv;
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
        for (int i = 0; i < hs; i++)
          o[i] = 0;
        for (int t2 = 0; t2 <= t; t2++) {
          const float *v = inp + ((size_t)b * T + t2) * C3 + h * hs + 2 * C;
          for (int i = 0; i < hs; i++)
            o[i] += a[t2] * v[i];
        }
      }
    }
  }
}

void
stw_attention_backward(float *dinp, float *dpreatt, float *datt, const float *dout,
                       const float *inp, const float *att, int B, int T, int C, int NH)
{
  int hs = C / NH, C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
  /* per (b, h): t and t2 both write dk and dv rows, so the loop over t stays serial */
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      for (int t = 0; t < T; t++) {
        const float *a = att + (((size_t)b * NH + h) * T + t) * T;
        float *da = datt + (((size_t)b * NH + h) * T + t) * T;
        float *dpre = dpreatt + (((size_t)b * NH + h) * T + t) * T;
        const float *q = inp + ((size_t)b * T + t) * C3 + h * hs;
        float *dq = dinp + ((size_t)b * T + t) * C3 + h * hs;
        const float *d = dout + ((size_t)b * T + t) * C + h * hs;
        for (int t2 = 0; t2 <= t; t2++) {
          const float *v = inp + ((size_t)b * T + t2) * C3 + h * hs + 2 * C;
          float *dv = dinp + ((size_t)b * T + t2) * C3 + h * hs + 2 * C;
          for (int i = 0; i < hs; i++) {
            da[t2] += v[i] * d[i];
            dv[i] += a[t2] * d[i];
          }
        }
        for (int t2 = 0; t2 <= t; t2++)
          for (int t3 = 0; t3 <= t; t3++)
            dpre[t3] += a[t2] * ((t2 == t3 ? 1.0f : 0.0f) - a[t3]) * da[t2];
        for (int t2 = 0; t2 <= t; t2++) {
          const float *k = inp + ((size_t)b * T + t2) * C3 + h * hs + C;
          float *dk = dinp + ((size_t)b * T + t2) * C3 + h * hs + C;
          for (int i = 0; i < hs; i++) {
            dq[i] += k[i] * dpre[t2] * scale;
            dk[i] += q[i] * dpre[t2] * scale;
          }
        }
      }
    }
  }
}

void
stw_gelu_forward(float *out, const float *inp, size_t n)
{
#pragma omp parallel for
  for (size_t i = 0; i < n; i++) {
    float x = inp[i], cube = 0.044715f * x * x * x;
    out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + cube)));
  }
}

void
stw_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
#pragma omp parallel for
  for (size_t i = 0; i < n; i++) {
    float x = inp[i], cube = 0.044715f * x * x * x;
    float arg = GELU_SCALE * (x + cube), th = tanhf(arg), ch = coshf(arg);
    float sech2 = 1.0f / (ch * ch);
    float grad = 0.5f * (1.0f + th) + x * 0.5f * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += grad * dout[i];
  }
}

void
stw_residual_forward(float *out, const float *a, const float *b, size_t n)
{
#pragma omp parallel for
  for (size_t i = 0; i < n; i++)
    out[i] = a[i] + b[i];
}

float
stw_crossentropy_forward(float *probs, float *losses, const float *logits, const int *targets,
                         int B, int T, int V)
{
#pragma omp parallel for
  for (int bt = 0; bt < B * T; bt++) {
    const float *l = logits + (size_t)bt * V;
    float *p = probs + (size_t)bt * V;
    float maxv = -1e30f, sum = 0;
    for (int i = 0; i < V; i++)
      maxv = l[i] > maxv ? l[i] : maxv;
    for (int i = 0; i < V; i++) {
      p[i] = expf(l[i] - maxv);
      sum += p[i];
    }
    for (int i = 0; i < V; i++)
      p[i] /= sum;
    losses[bt] = -logf(p[targets[bt]]);
  }
  double mean = 0;
  for (int bt = 0; bt < B * T; bt++)
    mean += losses[bt];
  return (float)(mean / (B * T));
}

void
stw_crossentropy_backward(float *dlogits, const float *probs, const int *targets, int B, int T,
                          int V)
{
  float scale = 1.0f / (float)(B * T);
#pragma omp parallel for
  for (int bt = 0; bt < B * T; bt++) {
    const float *p = probs + (size_t)bt * V;
    float *d = dlogits + (size_t)bt * V;
    for (int i = 0; i < V; i++)
      d[i] += (p[i] - (i == targets[bt] ? 1.0f : 0.0f)) * scale;
  }
}
