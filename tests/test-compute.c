/* test-compute.c — where the CUDA compute table's arithmetic is its own, checked on the CPU
 * against the CPU's: the three cuBLAS GEMMs of a matmul (executed here by a plain column-major
 * GEMM), attention's backward, gradient accumulation and AdamW (compute-cuda-bodies.h run over
 * every index). The other kernels are one body that kernels.c runs too, so the trainer's tests
 * cover them. No GPU needed. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <glib.h>

#include <stowage/compute.h>

#include "compute-cuda-bodies.h"
#include "kernels.h"

enum { B = 2, T = 5, C = 8, NH = 2, OC = 12, BT = B * T };

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

/* attention backward: the GPU's thread per query position adds into the key and value rows
 * (atomically) and takes the softmax's backward as an identity; the CPU's loop is its own */
static void
test_attention_backward(void)
{
  size_t n_att = (size_t)B * NH * T * T;
  g_autofree float *qkv = randoms(BT * 3 * C);
  g_autofree float *out = g_new0(float, BT * C), *pre = g_new0(float, n_att);
  g_autofree float *att = g_new0(float, n_att);
  stw_attention_forward(out, pre, att, qkv, B, T, C, NH);
  /* zeroed scratch, as the trainer's activations are; dinp adds */
  g_autofree float *dout = randoms(BT * C), *dinp = randoms(BT * 3 * C);
  g_autofree float *dinp2 = copy(dinp, BT * 3 * C);
  g_autofree float *dp1 = g_new0(float, n_att), *dp2 = g_new0(float, n_att);
  g_autofree float *da1 = g_new0(float, n_att), *da2 = g_new0(float, n_att);
  stw_attention_backward(dinp, dp1, da1, dout, qkv, att, B, T, C, NH);
  for (size_t i = 0; i < (size_t)B * T * NH; i++)
    stw_cb_attention_backward(i, dinp2, dp2, da2, dout, qkv, att, T, C, NH);
  assert_close("attention backward (qkv)", dinp2, dinp, BT * 3 * C);
  assert_close("attention backward (scores)", dp2, dp1, n_att);
  assert_close("attention backward (weights)", da2, da1, n_att);
}

/* a tied weight's second gradient: the GPU's add against the CPU table's */
static void
test_gradient_accumulation(void)
{
  size_t n = BT * 4 * C;
  g_autofree float *x = randoms(n), *s1 = randoms(n);
  g_autofree float *s2 = copy(s1, n);
  stw_compute_cpu()->grad_commit(stw_compute_cpu(), s1, STW_DTYPE_FP32, x, n, FALSE);
  for (size_t i = 0; i < n; i++)
    stw_cb_add(i, s2, x);
  assert_close("gradient accumulation", s2, s1, n);
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
  stw_compute_host_adam(grad, STW_DTYPE_FP32, master, m, v, n, &c, step);
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

  /* with a bf16 compute copy: the gradient widened, the update in fp32 (adam.c here), the new
   * weights rounded */
  g_autofree uint16_t *h = g_new(uint16_t, n);
  g_autofree float *g32 = g_new(float, n), *master3 = randoms(n), *m3 = randoms(n),
                   *v3 = randoms(n);
  for (size_t i = 0; i < n; i++) {
    v3[i] = fabsf(v3[i]);
    h[i] = stw_bf16_from_float(uniform());
    g32[i] = stw_bf16_to_float(h[i]);
  }
  g_autofree float *master4 = copy(master3, n), *m4 = copy(m3, n), *v4 = copy(v3, n);
  stw_compute_host_adam(h, STW_DTYPE_BF16, master3, m3, v3, n, &c, step);
  stw_adam_update(master4, g32, m4, v4, n, &c, step);
  assert_close("adam, bf16 compute copy (master)", master3, master4, n);
  assert_close("adam, bf16 compute copy (momentum)", m3, m4, n);
  for (size_t i = 0; i < n; i++)
    g_assert_cmphex(h[i], ==, stw_bf16_from_float(master3[i]));
}

/* bf16: the top half of a float, rounded to nearest with ties to even */
static void
test_bf16_rounding(void)
{
  static const struct {
    float f;
    uint16_t h;
  } cases[] = {
    { 1.0f, 0x3f80 },
    { 1.00390625f, 0x3f80 },          /* 1 + 2^-8: halfway, to the even 0x3f80 */
    { 1.01171875f, 0x3f82 },          /* 1 + 3 * 2^-8: halfway, to the even 0x3f82 */
    { 1.00390720f, 0x3f81 },          /* just above halfway: up */
    { -2.5f, 0xc020 },
    { 0.0f, 0x0000 },
    { 3.4028234663852886e38f, 0x7f80 }, /* the largest float rounds to infinity */
    { 1e-40f, 0x0001 },               /* a subnormal keeps its top bits */
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_test_message("%.9g -> 0x%04x", cases[i].f, stw_bf16_from_float(cases[i].f));
    g_assert_cmphex(stw_bf16_from_float(cases[i].f), ==, cases[i].h);
  }
  g_assert_cmpfloat(stw_bf16_to_float(0x3f80), ==, 1.0f);
  g_assert_cmpfloat(stw_bf16_to_float(0xc020), ==, -2.5f);
  g_assert_true(isnan(stw_bf16_to_float(stw_bf16_from_float(NAN))));
  /* every bf16 value survives the round trip */
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = stw_bf16_to_float((uint16_t)h);
    if (!isnan(f))
      g_assert_cmphex(stw_bf16_from_float(f), ==, h);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/compute/matmul-gemms", test_matmul);
  g_test_add_func("/compute/attention-backward", test_attention_backward);
  g_test_add_func("/compute/gradient-accumulation", test_gradient_accumulation);
  g_test_add_func("/compute/adam", test_adam);
  g_test_add_func("/compute/bf16-rounding", test_bf16_rounding);
  return g_test_run();
}
