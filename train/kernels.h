/* kernels.h — the GPT trainer's math on the CPU, fp32, after llm.c.
 *
 * Shapes in comments: B batch, T tokens per sequence, C width, NH heads, V vocabulary, OC a
 * matmul's output width. Weights are (OC, C) row-major, as nn.Linear stores them. Backward
 * kernels accumulate (+=) into the gradients they are given, so that a tied weight's two uses add
 * up; callers zero a gradient before its first use. Every loop gives each output element to one
 * thread and sums in a fixed order, so results are bitwise reproducible whatever the thread
 * count.
 */
#ifndef STW_KERNELS_H
#define STW_KERNELS_H

#include <stddef.h>

void stw_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B,
                         int T, int C);
void stw_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B,
                          int T, int C);
void stw_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                           const float *weight, const float *bias, int B, int T, int C);
void stw_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                            const float *inp, const float *weight, const float *mean,
                            const float *rstd, int B, int T, int C);
void stw_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                        int B, int T, int C, int OC);
void stw_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, int B, int T, int C, int OC);
void stw_attention_forward(float *out, float *preatt, float *att, const float *inp, int B, int T,
                           int C, int NH);
void stw_attention_backward(float *dinp, float *dpreatt, float *datt, const float *dout,
                            const float *inp, const float *att, int B, int T, int C, int NH);
void stw_gelu_forward(float *out, const float *inp, size_t n);
void stw_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
void stw_residual_forward(float *out, const float *a, const float *b, size_t n);
/* probs (B,T,V) from logits; losses (B,T); returns the mean loss */
float stw_crossentropy_forward(float *probs, float *losses, const float *logits,
                               const int *targets, int B, int T, int V);
/* dlogits = (probs - onehot) / (B*T) */
void stw_crossentropy_backward(float *dlogits, const float *probs, const int *targets, int B,
                               int T, int V);

#endif
