/* test-compute.c — the CUDA compute table's thread bodies and GEMMs (compute-cuda-bodies.h), run
 * on the CPU over every index, against the CPU kernels (kernels.c). No GPU needed: this is the
 * CUDA trainer's arithmetic checked where it can be. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <glib.h>

#include "compute-cuda-bodies.h"
#include "compute.h"
#include "kernels.h"

enum { B = 2, T = 5, C = 8, NH = 2, V = 16, OC = 12, BT = B * T };

static guint64 rng = 42;

static float
uniform(void)
{
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((rng >> 40) & 0xffffff) / (float)0x1000000 * 2.0f - 1.0f;
}

static float *
randoms(size_t n)
{
  float *p = g_new(float, n);
  for (size_t i = 0; i < n; i++)
    p[i] = uniform();
  return p;
}

static float *
copy(const float *p, size_t n)
{
  return g_memdup2(p, n * sizeof(float));
}

/* every element within 1e-5 of the larger of 1 and the reference's largest magnitude */
static void
assert_close(const char *what, const float *got, const float *want, size_t n)
{
  double scale = 1, worst = 0;
  for (size_t i = 0; i < n; i++)
    scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < n; i++)
    worst = fmax(worst, fabs((double)got[i] - want[i]));
  if (worst > 1e-5 * scale)
    g_error("%s: the CUDA body differs from kernels.c by %g (scale %g)", what, worst, scale);
  g_test_message("%s: within %g", what, worst);
}

static int *
tokens(int range)
{
  int *p = g_new(int, BT);
  for (int i = 0; i < BT; i++)
    p[i] = (int)((uniform() + 1.0f) * 0.5f * (float)(range - 1) + 0.5f);
  return p;
}

static void
test_encoder(void)
{
  g_autofree int *inp = tokens(V);
  g_autofree float *wte = randoms(V * C), *wpe = randoms(T * C);
  g_autofree float *a = g_new0(float, BT * C), *b = g_new0(float, BT * C);
  stw_encoder_forward(a, inp, wte, wpe, B, T, C);
  for (size_t i = 0; i < BT * C; i++)
    stw_cb_encoder_forward(i, b, inp, wte, wpe, T, C);
  assert_close("encoder forward", b, a, BT * C);

  g_autofree float *dout = randoms(BT * C);
  g_autofree float *dwte = randoms(V * C), *dwpe = randoms(T * C);
  g_autofree float *dwte2 = copy(dwte, V * C), *dwpe2 = copy(dwpe, T * C);
  stw_encoder_backward(dwte, dwpe, dout, inp, B, T, C);
  for (size_t i = 0; i < BT * C; i++)
    stw_cb_encoder_backward(i, dwte2, dwpe2, dout, inp, T, C);
  assert_close("encoder backward (wte)", dwte2, dwte, V * C);
  assert_close("encoder backward (wpe)", dwpe2, dwpe, T * C);
}

static void
test_layernorm(void)
{
  g_autofree float *inp = randoms(BT * C), *w = randoms(C), *bias = randoms(C);
  g_autofree float *o1 = g_new0(float, BT * C), *o2 = g_new0(float, BT * C);
  g_autofree float *m1 = g_new0(float, BT), *m2 = g_new0(float, BT);
  g_autofree float *r1 = g_new0(float, BT), *r2 = g_new0(float, BT);
  stw_layernorm_forward(o1, m1, r1, inp, w, bias, B, T, C);
  for (size_t r = 0; r < BT; r++)
    stw_cb_layernorm_forward(r, o2, m2, r2, inp, w, bias, C);
  assert_close("layernorm forward", o2, o1, BT * C);
  assert_close("layernorm forward (mean)", m2, m1, BT);
  assert_close("layernorm forward (rstd)", r2, r1, BT);

  g_autofree float *dout = randoms(BT * C), *dinp = randoms(BT * C), *dw = randoms(C),
                   *db = randoms(C);
  g_autofree float *dinp2 = copy(dinp, BT * C), *dw2 = copy(dw, C), *db2 = copy(db, C);
  stw_layernorm_backward(dinp, dw, db, dout, inp, w, m1, r1, B, T, C);
  for (size_t r = 0; r < BT; r++)
    stw_cb_layernorm_backward_inp(r, dinp2, dout, inp, w, m1, r1, C);
  for (size_t i = 0; i < C; i++)
    stw_cb_layernorm_backward_params(i, dw2, db2, dout, inp, m1, r1, BT, C);
  assert_close("layernorm backward (input)", dinp2, dinp, BT * C);
  assert_close("layernorm backward (weight)", dw2, dw, C);
  assert_close("layernorm backward (bias)", db2, db, C);
}

/* cuBLAS's contract, plainly: column-major, element (i, j) of X at X[i + j * ld] */
static void
reference_gemm(StwGemm g, float *const ops[])
{
  const float *A = ops[g.a], *Bm = ops[g.b];
  float *Cm = ops[g.c];
  for (int j = 0; j < g.n; j++) {
    for (int i = 0; i < g.m; i++) {
      float acc = 0;
      for (int l = 0; l < g.k; l++) {
        float a = g.trans_a ? A[l + (size_t)i * g.lda] : A[i + (size_t)l * g.lda];
        float b = g.trans_b ? Bm[j + (size_t)l * g.ldb] : Bm[l + (size_t)j * g.ldb];
        acc += a * b;
      }
      Cm[i + (size_t)j * g.ldc] = acc + g.beta * Cm[i + (size_t)j * g.ldc];
    }
  }
}

static void
test_matmul(void)
{
  g_autofree float *inp = randoms(BT * C), *weight = randoms(OC * C), *bias = randoms(OC);
  g_autofree float *o1 = g_new0(float, BT * OC), *o2 = randoms(BT * OC); /* beta 0 ignores it */
  stw_matmul_forward(o1, inp, weight, bias, B, T, C, OC);
  float *fwd[] = { inp, weight, o2, NULL, NULL, NULL };
  reference_gemm(stw_cb_matmul_forward_gemm(BT, C, OC), fwd);
  for (size_t i = 0; i < BT * OC; i++)
    stw_cb_add_bias(i, o2, bias, OC);
  assert_close("matmul forward", o2, o1, BT * OC);

  /* backward adds into what it is given */
  g_autofree float *dout = randoms(BT * OC), *dinp = randoms(BT * C), *dw = randoms(OC * C),
                   *db = randoms(OC);
  g_autofree float *dinp2 = copy(dinp, BT * C), *dw2 = copy(dw, OC * C), *db2 = copy(db, OC);
  stw_matmul_backward(dinp, dw, db, dout, inp, weight, B, T, C, OC);
  float *bwd[] = { inp, weight, NULL, dout, dinp2, dw2 };
  reference_gemm(stw_cb_matmul_dinp_gemm(BT, C, OC), bwd);
  reference_gemm(stw_cb_matmul_dweight_gemm(BT, C, OC), bwd);
  for (size_t o = 0; o < OC; o++)
    stw_cb_bias_grad(o, db2, dout, BT, OC);
  assert_close("matmul backward (input)", dinp2, dinp, BT * C);
  assert_close("matmul backward (weight)", dw2, dw, OC * C);
  assert_close("matmul backward (bias)", db2, db, OC);
}

static void
test_attention(void)
{
  size_t n_att = (size_t)B * NH * T * T;
  g_autofree float *qkv = randoms(BT * 3 * C);
  g_autofree float *o1 = g_new0(float, BT * C), *o2 = g_new0(float, BT * C);
  g_autofree float *p1 = g_new0(float, n_att), *p2 = g_new0(float, n_att);
  g_autofree float *a1 = g_new0(float, n_att), *a2 = g_new0(float, n_att);
  stw_attention_forward(o1, p1, a1, qkv, B, T, C, NH);
  for (size_t i = 0; i < (size_t)B * T * NH; i++)
    stw_cb_attention_forward(i, o2, p2, a2, qkv, T, C, NH);
  assert_close("attention forward", o2, o1, BT * C);
  assert_close("attention forward (scores)", p2, p1, n_att);
  assert_close("attention forward (weights)", a2, a1, n_att);

  /* zeroed scratch, as the trainer's activations are; dinp adds */
  g_autofree float *dout = randoms(BT * C), *dinp = randoms(BT * 3 * C);
  g_autofree float *dinp2 = copy(dinp, BT * 3 * C);
  g_autofree float *dp1 = g_new0(float, n_att), *dp2 = g_new0(float, n_att);
  g_autofree float *da1 = g_new0(float, n_att), *da2 = g_new0(float, n_att);
  stw_attention_backward(dinp, dp1, da1, dout, qkv, a1, B, T, C, NH);
  for (size_t i = 0; i < (size_t)B * T * NH; i++)
    stw_cb_attention_backward(i, dinp2, dp2, da2, dout, qkv, a1, T, C, NH);
  assert_close("attention backward (qkv)", dinp2, dinp, BT * 3 * C);
  assert_close("attention backward (scores)", dp2, dp1, n_att);
  assert_close("attention backward (weights)", da2, da1, n_att);
}

static void
test_elementwise(void)
{
  size_t n = BT * 4 * C;
  g_autofree float *x = randoms(n), *y = randoms(n), *dout = randoms(n);
  g_autofree float *a = g_new0(float, n), *b = g_new0(float, n);
  stw_gelu_forward(a, x, n);
  for (size_t i = 0; i < n; i++)
    stw_cb_gelu_forward(i, b, x);
  assert_close("gelu forward", b, a, n);
  g_autofree float *d1 = randoms(n), *d2 = copy(d1, n);
  stw_gelu_backward(d1, x, dout, n);
  for (size_t i = 0; i < n; i++)
    stw_cb_gelu_backward(i, d2, x, dout);
  assert_close("gelu backward", d2, d1, n);
  stw_residual_forward(a, x, y, n);
  for (size_t i = 0; i < n; i++)
    stw_cb_residual(i, b, x, y);
  assert_close("residual", b, a, n);
  g_autofree float *s1 = randoms(n), *s2 = copy(s1, n);
  stw_compute_cpu()->grad_commit(stw_compute_cpu(), s1, x, n, FALSE);
  for (size_t i = 0; i < n; i++)
    stw_cb_add(i, s2, x);
  assert_close("gradient accumulation", s2, s1, n);
}

static void
test_crossentropy(void)
{
  g_autofree int *targets = tokens(V);
  g_autofree float *logits = randoms(BT * V);
  g_autofree float *p1 = g_new0(float, BT * V), *p2 = g_new0(float, BT * V);
  g_autofree float *l1 = g_new0(float, BT), *l2 = g_new0(float, BT);
  stw_crossentropy_forward(p1, l1, logits, targets, B, T, V);
  for (size_t r = 0; r < BT; r++)
    stw_cb_crossentropy_forward(r, p2, l2, logits, targets, V);
  assert_close("cross-entropy forward (probabilities)", p2, p1, BT * V);
  assert_close("cross-entropy forward (losses)", l2, l1, BT);
  g_autofree float *d1 = randoms(BT * V), *d2 = copy(d1, BT * V);
  stw_crossentropy_backward(d1, p1, targets, B, T, V);
  for (size_t i = 0; i < BT * V; i++)
    stw_cb_crossentropy_backward(i, d2, p1, targets, BT, V);
  assert_close("cross-entropy backward", d2, d1, BT * V);
}

static void
test_adam(void)
{
  size_t n = 257;
  StwAdamConfig c;
  stw_adam_config_init(&c);
  g_autofree float *grad = randoms(n), *master = randoms(n), *m = randoms(n), *v = randoms(n);
  for (size_t i = 0; i < n; i++)
    v[i] = fabsf(v[i]);
  g_autofree float *grad2 = copy(grad, n), *master2 = copy(master, n), *m2 = copy(m, n),
                   *v2 = copy(v, n);
  guint64 step = 3;
  stw_compute_host_adam(grad, master, m, v, n, &c, step);
  float bc1 = (float)(1.0 - pow(c.beta1, (double)step));
  float bc2 = (float)(1.0 - pow(c.beta2, (double)step));
  for (size_t i = 0; i < n; i++)
    stw_cb_adam(i, grad2, master2, m2, v2, c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, bc1,
                bc2);
  assert_close("adam (weights)", grad2, grad, n);
  assert_close("adam (master)", master2, master, n);
  assert_close("adam (momentum)", m2, m, n);
  assert_close("adam (variance)", v2, v, n);
  g_assert_cmpmem(grad2, n * sizeof(float), master2, n * sizeof(float)); /* param = master */
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/compute/encoder", test_encoder);
  g_test_add_func("/compute/layernorm", test_layernorm);
  g_test_add_func("/compute/matmul-gemms", test_matmul);
  g_test_add_func("/compute/attention", test_attention);
  g_test_add_func("/compute/elementwise", test_elementwise);
  g_test_add_func("/compute/crossentropy", test_crossentropy);
  g_test_add_func("/compute/adam", test_adam);
  return g_test_run();
}
