/* kernels.c — see kernels.h. The formulas are llm.c's (Karpathy), reorganized so that every
 * parallel loop writes disjoint outputs. Where the CPU's loop has the GPU's shape (one iteration
 * per element, row or column) it runs the CUDA table's thread body (compute-cuda-bodies.h), so
 * both devices share one copy of the arithmetic; the matmuls and attention's backward have loops
 * of their own here (the GPU uses cuBLAS and atomic adds there). */
#include "config.h"

#include "kernels.h"

#include "compute-cuda-bodies.h"

#include <math.h>
#include <string.h>

void
stw_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T,
                    int C)
{
  size_t n = (size_t)B * T * C;
#pragma omp parallel for
  for (size_t i = 0; i < n; i++)
    stw_cb_encoder_forward(i, out, inp, wte, wpe, T, C);
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

void
stw_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                      const float *bias, int B, int T, int C)
{
#pragma omp parallel for
  for (int bt = 0; bt < B * T; bt++)
    stw_cb_layernorm_forward((size_t)bt, out, mean, rstd, inp, weight, bias, C);
}

void
stw_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                       const float *inp, const float *weight, const float *mean, const float *rstd,
                       int B, int T, int C)
{
#pragma omp parallel for
  for (int bt = 0; bt < B * T; bt++)
    stw_cb_layernorm_backward_inp((size_t)bt, dinp, dout, inp, weight, mean, rstd, C);
#pragma omp parallel for
  for (int i = 0; i < C; i++)
    stw_cb_layernorm_backward_params((size_t)i, dweight, dbias, dout, inp, mean, rstd, B * T, C);
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
  size_t n = (size_t)B * T * NH;
#pragma omp parallel for
  for (size_t i = 0; i < n; i++)
    stw_cb_attention_forward(i, out, preatt, att, inp, T, C, NH);
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
  for (size_t i = 0; i < n; i++)
    stw_cb_gelu_forward(i, out, inp);
}

void
stw_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
#pragma omp parallel for
  for (size_t i = 0; i < n; i++)
    stw_cb_gelu_backward(i, dinp, inp, dout);
}

void
stw_residual_forward(float *out, const float *a, const float *b, size_t n)
{
#pragma omp parallel for
  for (size_t i = 0; i < n; i++)
    stw_cb_residual(i, out, a, b);
}

float
stw_crossentropy_forward(float *probs, float *losses, const float *logits, const int *targets,
                         int B, int T, int V)
{
#pragma omp parallel for
  for (int bt = 0; bt < B * T; bt++)
    stw_cb_crossentropy_forward((size_t)bt, probs, losses, logits, targets, V);
  double mean = 0;
  for (int bt = 0; bt < B * T; bt++)
    mean += losses[bt];
  return (float)(mean / (B * T));
}

void
stw_crossentropy_backward(float *dlogits, const float *probs, const int *targets, int B, int T,
                          int V)
{
  size_t n = (size_t)B * T * V;
#pragma omp parallel for
  for (size_t i = 0; i < n; i++)
    stw_cb_crossentropy_backward(i, dlogits, probs, targets, B * T, V);
}
