/* test-compute.c — where the CUDA compute table's arithmetic is its own, checked on the CPU
 * against the CPU's: the three cuBLAS GEMMs of a matmul (executed here by a plain column-major
 * GEMM, against the CPU's BLAS and its portable loops), the rows the GPU gives a warp (every
 * lane's body and the lanes' tree, the fused attention's too), the column sums it takes in two
 * stages, gradient accumulation and AdamW (compute-cuda-bodies.h run over every index); what the
 * backward kernels write and add into, with NaN where nothing may be read; the CPU's tanh. The other kernels are
 * one body that kernels.c runs too, so the trainer's tests cover them. No GPU needed. */
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

static float *
nans(size_t n)
{
  float *p = g_new(float, n);
  for (size_t i = 0; i < n; i++)
    p[i] = NAN;
  return p;
}

/* cuBLAS's contract, plainly: column-major, element (i, j) of X at X[i + j * ld]; with beta 0,
 * C is not read */
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
      Cm[i + (size_t)j * g.ldc] = g.beta == 0.0f ? acc : acc + g.beta * Cm[i + (size_t)j * g.ldc];
    }
  }
}

static void
test_matmul(void)
{
  g_autofree float *inp = randoms(BT * C), *weight = randoms(OC * C), *bias = randoms(OC);
  g_autofree float *o1 = nans(BT * OC), *o2 = nans(BT * OC); /* beta 0 does not read them */
  stw_matmul_forward(o1, inp, weight, bias, B, T, C, OC);
  float *fwd[] = { inp, weight, o2, NULL, NULL, NULL };
  reference_gemm(stw_cb_matmul_forward_gemm(BT, C, OC), fwd);
  for (size_t i = 0; i < BT * OC; i++)
    stw_cb_add_bias(i, o2, bias, OC);
  assert_close("matmul forward", o2, o1, BT * OC);

  /* backward: the input's gradient written, the weights' written (first) or added to */
  for (int accumulate = 0; accumulate <= 1; accumulate++) {
    g_autofree float *dout = randoms(BT * OC), *dinp = nans(BT * C);
    g_autofree float *dw = accumulate ? randoms(OC * C) : nans(OC * C);
    g_autofree float *db = accumulate ? randoms(OC) : nans(OC);
    g_autofree float *dinp2 = copy(dinp, BT * C), *dw2 = copy(dw, OC * C), *db2 = copy(db, OC);
    stw_matmul_backward(dinp, dw, db, dout, inp, weight, B, T, C, OC, accumulate);
    float *bwd[] = { inp, weight, NULL, dout, dinp2, dw2 };
    reference_gemm(stw_cb_matmul_dinp_gemm(BT, C, OC), bwd);
    reference_gemm(stw_cb_matmul_dweight_gemm(BT, C, OC, accumulate), bwd);
    for (size_t o = 0; o < OC; o++)
      stw_cb_bias_grad(o, db2, dout, BT, OC, accumulate);
    assert_close("matmul backward (input)", dinp2, dinp, BT * C);
    assert_close(accumulate ? "matmul backward (weight, added)" : "matmul backward (weight)", dw2,
                 dw, OC * C);
    assert_close("matmul backward (bias)", db2, db, OC);
  }
}

static float *
rounded_bf16(const float *p, size_t n)
{
  float *r = g_new(float, n);
  for (size_t i = 0; i < n; i++)
    r[i] = stw_bf16_to_float(stw_bf16_from_float(p[i]));
  return r;
}

/* the largest difference between A and B over the larger of 1 and B's largest magnitude */
static double
relative_gap(const float *a, const float *b, size_t n)
{
  double scale = 1, worst = 0;
  for (size_t i = 0; i < n; i++)
    scale = fmax(scale, fabs(b[i]));
  for (size_t i = 0; i < n; i++)
    worst = fmax(worst, fabs((double)a[i] - b[i]));
  return worst / scale;
}

/* Mixed precision's matmuls (oneDNN's bf16 matmul where the CPU has bf16 arithmetic, else the
 * rounded inputs through the fp32 GEMM): the fp32 GEMMs of the inputs rounded to bf16, within
 * fp32's summation error; and not the GEMMs of the inputs as they are. Shapes: the small one and
 * one that leaves partial blocks everywhere. */
static void
test_matmul_bf16(void)
{
  const char *isa = stw_compute_cpu_bf16_isa();
  g_test_message("bf16 products: %s", isa != NULL ? isa : "none here: the fp32 GEMM of rounded inputs");
  const int shapes[][4] = { { B, T, C, OC }, { 3, 17, 40, 72 } };
  for (guint s = 0; s < G_N_ELEMENTS(shapes); s++) {
    int b = shapes[s][0], t = shapes[s][1], c = shapes[s][2], oc = shapes[s][3], bt = b * t;
    g_autofree float *inp = randoms((size_t)bt * c), *weight = randoms((size_t)oc * c),
                     *bias = randoms(oc);
    g_autofree float *inp_r = rounded_bf16(inp, (size_t)bt * c),
                     *weight_r = rounded_bf16(weight, (size_t)oc * c);
    g_autofree float *o1 = nans((size_t)bt * oc), *o2 = nans((size_t)bt * oc),
                     *o3 = nans((size_t)bt * oc);
    stw_matmul_forward_bf16(o1, inp, weight, bias, b, t, c, oc);
    stw_matmul_forward(o2, inp_r, weight_r, bias, b, t, c, oc);
    stw_matmul_forward(o3, inp, weight, bias, b, t, c, oc);
    g_assert_cmpfloat(relative_gap(o1, o2, (size_t)bt * oc), <, 1e-5);
    g_assert_cmpfloat(relative_gap(o1, o3, (size_t)bt * oc), >, 1e-4); /* it did round */
    for (int accumulate = 0; accumulate <= 1; accumulate++) {
      g_autofree float *dout = randoms((size_t)bt * oc);
      g_autofree float *dout_r = rounded_bf16(dout, (size_t)bt * oc);
      g_autofree float *dinp = nans((size_t)bt * c), *dinp2 = nans((size_t)bt * c);
      g_autofree float *dw = accumulate ? randoms((size_t)oc * c) : nans((size_t)oc * c);
      g_autofree float *db = accumulate ? randoms(oc) : nans(oc);
      g_autofree float *dw2 = copy(dw, (size_t)oc * c), *db2 = copy(db, oc);
      stw_matmul_backward_bf16(dinp, dw, db, dout, inp, weight, b, t, c, oc, accumulate);
      stw_matmul_backward(dinp2, dw2, NULL, dout_r, inp_r, weight_r, b, t, c, oc, accumulate);
      for (int o = 0; o < oc; o++) /* the bias gradient sums dout as it is */
        stw_cb_bias_grad(o, db2, dout, bt, oc, accumulate);
      g_assert_cmpfloat(relative_gap(dinp, dinp2, (size_t)bt * c), <, 1e-5);
      g_assert_cmpfloat(relative_gap(dw, dw2, (size_t)oc * c), <, 1e-5);
      g_assert_cmpfloat(relative_gap(db, db2, oc), <, 1e-6);
    }
  }
  /* the mixed table runs them where the CPU has bf16 arithmetic, the fp32 table elsewhere */
  g_assert_cmpstr(stw_compute_cpu_mixed()->name, ==, isa != NULL ? "cpu-mixed" : "cpu");
}

/* the portable GEMM, which a build without a BLAS runs, on every transposition the matmuls use
 * and on shapes that leave partial blocks (GEMM_ROWS 256, GEMM_COLS 4) */
static void
test_portable_gemm(void)
{
  int bt = 300, c = 7, oc = 10;
  g_autofree float *inp = randoms((size_t)bt * c), *weight = randoms((size_t)oc * c);
  g_autofree float *dout = randoms((size_t)bt * oc);
  StwGemm gemms[] = { stw_cb_matmul_forward_gemm(bt, c, oc), stw_cb_matmul_dinp_gemm(bt, c, oc),
                      stw_cb_matmul_dweight_gemm(bt, c, oc, 0),
                      stw_cb_matmul_dweight_gemm(bt, c, oc, 1) };
  for (gsize k = 0; k < G_N_ELEMENTS(gemms); k++) {
    size_t n = (size_t)gemms[k].m * gemms[k].n;
    g_autofree float *got = gemms[k].beta == 0.0f ? nans(n) : randoms(n);
    g_autofree float *want = copy(got, n);
    float *ops[] = { inp, weight, got, dout, got, got };
    stw_gemm_portable(&gemms[k], (const float *const *)ops);
    float *ref[] = { inp, weight, want, dout, want, want };
    reference_gemm(gemms[k], ref);
    assert_close("portable GEMM", got, want, n);
  }
}

/* LayerNorm's backward: the input's gradient adds (the residual stream's), the weights' are
 * written or added to */
static void
test_layernorm_backward(void)
{
  g_autofree float *inp = randoms(BT * C), *w = randoms(C), *bias = randoms(C);
  g_autofree float *out = g_new(float, BT * C), *mean = g_new(float, BT), *rstd = g_new(float, BT);
  stw_layernorm_forward(out, mean, rstd, inp, w, bias, B, T, C);
  g_autofree float *dout = randoms(BT * C), *before = randoms(BT * C);
  /* written: from NaN */
  g_autofree float *dx = copy(before, BT * C), *dw = nans(C), *db = nans(C);
  stw_layernorm_backward(dx, dw, db, dout, inp, w, mean, rstd, B, T, C, FALSE);
  /* added to: what was there plus the same gradient */
  g_autofree float *dx2 = copy(before, BT * C), *dw0 = randoms(C), *db0 = randoms(C);
  g_autofree float *dw2 = copy(dw0, C), *db2 = copy(db0, C);
  stw_layernorm_backward(dx2, dw2, db2, dout, inp, w, mean, rstd, B, T, C, TRUE);
  for (size_t i = 0; i < C; i++) {
    g_assert_true(isfinite(dw[i]) && isfinite(db[i]));
    g_assert_cmpfloat(dw2[i], ==, dw0[i] + dw[i]);
    g_assert_cmpfloat(db2[i], ==, db0[i] + db[i]);
  }
  /* the input's gradient adds in both */
  g_autofree float *g = g_new0(float, BT * C);
  stw_layernorm_backward(g, dw0, db0, dout, inp, w, mean, rstd, B, T, C, FALSE);
  for (size_t i = 0; i < BT * C; i++) {
    g_assert_cmpfloat(dx[i], ==, before[i] + g[i]);
    g_assert_cmpfloat(dx2[i], ==, dx[i]);
  }
}

/* GELU's tanh, vectorizable on the CPU: within 2e-7 of libm's */
static void
test_tanh(void)
{
  double worst = 0;
  for (int k = -200000; k <= 200000; k++) {
    float a = (float)k * 1e-4f; /* -20 .. 20 */
    worst = fmax(worst, fabs((double)stw_cb_tanhf(a) - tanh((double)a)));
  }
  g_test_message("tanh: within %g of libm's", worst);
  g_assert_cmpfloat(worst, <=, 2e-7);
  g_assert_cmpfloat(stw_cb_tanhf(1e30f), ==, 1.0f);
  g_assert_cmpfloat(stw_cb_tanhf(-1e30f), ==, -1.0f);
}

/* ---- the GPU's rows by warps, every lane run here ---------------------------------------- */

/* LayerNorm forward and backward to the input by warp lanes against kernels.c, on rows narrower
 * and wider than a warp */
static void
test_warp_layernorm(void)
{
  static const int widths[] = { 8, 72 };
  for (gsize k = 0; k < G_N_ELEMENTS(widths); k++) {
    int c = widths[k];
    size_t n = (size_t)BT * c;
    g_autofree float *inp = randoms(n), *w = randoms(c), *bias = randoms(c);
    g_autofree float *o1 = g_new(float, n), *m1 = g_new(float, BT), *r1 = g_new(float, BT);
    g_autofree float *o2 = nans(n), *m2 = nans(BT), *r2 = nans(BT);
    stw_layernorm_forward(o1, m1, r1, inp, w, bias, B, T, c);
    float p[STW_LANES];
    for (size_t row = 0; row < BT; row++) {
      for (int l = 0; l < STW_LANES; l++)
        p[l] = stw_cb_ln_lane_sum(row, l, inp, c);
      float m = stw_cb_lane_sum(p) / c;
      for (int l = 0; l < STW_LANES; l++)
        p[l] = stw_cb_ln_lane_var(row, l, inp, m, c);
      float rs = 1.0f / sqrtf(stw_cb_lane_sum(p) / c + 1e-5f);
      for (int l = 0; l < STW_LANES; l++)
        stw_cb_ln_lane_write(row, l, o2, inp, w, bias, m, rs, c);
      m2[row] = m;
      r2[row] = rs;
    }
    assert_close("layernorm forward by warps", o2, o1, n);
    assert_close("layernorm forward by warps (mean)", m2, m1, BT);
    assert_close("layernorm forward by warps (rstd)", r2, r1, BT);

    g_autofree float *dout = randoms(n), *d1 = randoms(n), *dw = g_new(float, c),
                     *db = g_new(float, c);
    g_autofree float *d2 = copy(d1, n);
    stw_layernorm_backward(d1, dw, db, dout, inp, w, m1, r1, B, T, c, FALSE);
    float pa[STW_LANES], pb[STW_LANES];
    for (size_t row = 0; row < BT; row++) {
      for (int l = 0; l < STW_LANES; l++)
        stw_cb_lnb_lane_sums(row, l, dout, inp, w, m1, r1, c, &pa[l], &pb[l]);
      float a = stw_cb_lane_sum(pa) / c, b = stw_cb_lane_sum(pb) / c;
      for (int l = 0; l < STW_LANES; l++)
        stw_cb_lnb_lane_write(row, l, d2, dout, inp, w, m1, r1, a, b, c);
    }
    assert_close("layernorm backward by warps", d2, d1, n);
  }
}

/* cross-entropy forward by warp lanes, the target in any lane */
static void
test_warp_crossentropy(void)
{
  static const int vocabs[] = { 256, 50 };
  for (gsize k = 0; k < G_N_ELEMENTS(vocabs); k++) {
    int v = vocabs[k];
    size_t n = (size_t)BT * v;
    g_autofree float *logits = randoms(n), *p1 = g_new(float, n), *p2 = nans(n);
    g_autofree float *l1 = g_new(float, BT), *l2 = nans(BT);
    g_autofree int *targets = g_new(int, BT);
    for (size_t r = 0; r < BT; r++)
      targets[r] = (int)((r * 37 + 11) % (size_t)v);
    stw_crossentropy_forward(p1, l1, logits, targets, B, T, v);
    float part[STW_LANES];
    for (size_t r = 0; r < BT; r++) {
      for (int l = 0; l < STW_LANES; l++)
        part[l] = stw_cb_ce_lane_max(r, l, logits, v);
      float m = stw_cb_lane_max(part);
      for (int l = 0; l < STW_LANES; l++)
        part[l] = stw_cb_ce_lane_exp(r, l, p2, logits, m, v);
      float sum = stw_cb_lane_sum(part);
      for (int l = 0; l < STW_LANES; l++)
        stw_cb_ce_lane_write(r, l, p2, l2, targets, sum, v);
    }
    assert_close("cross-entropy by warps (probabilities)", p2, p1, n);
    assert_close("cross-entropy by warps (losses)", l2, l1, BT);
  }
}

/* Attention's product P for every head, as cuBLAS runs the GPU's strided batches: column-major,
 * by the plain GEMM, over the operands' arrays in BASE */
static void
att_gemm_reference(StwAttProduct p, float *const base[], int b, int t, int c, int nh)
{
  StwAttGemm g = stw_cb_att_gemm(p, t, c / nh);
  for (int bi = 0; bi < b; bi++)
    for (int h = 0; h < nh; h++) {
      /* the GPU reaches head h as the batch row's first head plus h strides */
      StwAttOperand roles[] = { g.a, g.b, g.c };
      for (int k = 0; k < 3; k++)
        g_assert_cmpuint(stw_cb_att_offset(roles[k], bi, h, t, c, nh), ==,
                         stw_cb_att_offset(roles[k], bi, 0, t, c, nh) +
                             (size_t)h * stw_cb_att_head_stride(roles[k], t, c, nh));
      float *ops[STW_GEMM_DWEIGHT + 1] = { NULL };
      ops[STW_GEMM_INP] = base[g.a] + stw_cb_att_offset(g.a, bi, h, t, c, nh);
      ops[STW_GEMM_WEIGHT] = base[g.b] + stw_cb_att_offset(g.b, bi, h, t, c, nh);
      ops[STW_GEMM_OUT] = base[g.c] + stw_cb_att_offset(g.c, bi, h, t, c, nh);
      StwGemm x = { g.trans_a, g.trans_b, g.m, g.n, g.k, STW_GEMM_INP, STW_GEMM_WEIGHT,
                    STW_GEMM_OUT, stw_cb_att_ld(g.a, t, c), stw_cb_att_ld(g.b, t, c),
                    stw_cb_att_ld(g.c, t, c), 0.0f };
      reference_gemm(x, ops);
    }
}

/* The naive attention as the GPU computes it — its products as strided batches of GEMMs, the
 * softmax and its backward by warp lanes (a score row each; T above a warp's width, so that
 * lanes take several keys), the queries' and keys' gradients scaled last — against kernels.c;
 * every output written (NaN before) */
static void
test_warp_attention(void)
{
  enum { b = 2, t = 40, c = 8, nh = 2, bt = b * t };
  size_t n_att = (size_t)b * nh * t * t, rows = (size_t)b * nh * t;
  float scale = 1.0f / sqrtf((float)(c / nh));
  g_autofree float *qkv = randoms((size_t)bt * 3 * c);
  g_autofree float *o1 = nans((size_t)bt * c), *pre1 = nans(n_att), *a1 = nans(n_att);
  g_autofree float *o2 = nans((size_t)bt * c), *pre2 = nans(n_att), *a2 = nans(n_att);
  stw_attention_forward(o1, pre1, a1, qkv, b, t, c, nh);
  float *base[STW_ATT_N_OPERANDS];
  stw_cb_att_operands(base, qkv, o2, pre2, a2, NULL, NULL, NULL, NULL);
  float part[STW_LANES];
  att_gemm_reference(STW_ATT_SCORES, base, b, t, c, nh);
  for (size_t r = 0; r < rows; r++) {
    for (int l = 0; l < STW_LANES; l++)
      part[l] = stw_cb_att_lane_max(r, l, pre2, t, scale);
    float m = stw_cb_lane_max(part);
    for (int l = 0; l < STW_LANES; l++)
      part[l] = stw_cb_att_lane_exp(r, l, pre2, a2, m, t);
    float sum = stw_cb_lane_sum(part);
    for (int l = 0; l < STW_LANES; l++)
      stw_cb_att_lane_norm(r, l, pre2, a2, sum, t);
  }
  att_gemm_reference(STW_ATT_VALUES, base, b, t, c, nh);
  assert_close("attention forward by warps", o2, o1, (size_t)bt * c);
  assert_close("attention forward by warps (scores)", pre2, pre1, n_att);
  assert_close("attention forward by warps (weights)", a2, a1, n_att);

  g_autofree float *dout = randoms((size_t)bt * c), *d1 = nans((size_t)bt * 3 * c);
  g_autofree float *dp1 = nans(n_att), *da1 = nans(n_att);
  g_autofree float *d2 = nans((size_t)bt * 3 * c), *dp2 = nans(n_att), *da2 = nans(n_att);
  stw_attention_backward(d1, dp1, da1, dout, qkv, a1, b, t, c, nh);
  stw_cb_att_operands(base, qkv, NULL, NULL, a1, dout, d2, da2, dp2);
  att_gemm_reference(STW_ATT_GRAD_V, base, b, t, c, nh);
  att_gemm_reference(STW_ATT_GRAD_ATT, base, b, t, c, nh);
  for (size_t r = 0; r < rows; r++) {
    for (int l = 0; l < STW_LANES; l++)
      part[l] = stw_cb_attb_lane_dot(r, l, a1, da2, t);
    float dot = stw_cb_lane_sum(part);
    for (int l = 0; l < STW_LANES; l++)
      stw_cb_attb_lane_grad(r, l, dp2, da2, a1, dot, t);
  }
  att_gemm_reference(STW_ATT_GRAD_Q, base, b, t, c, nh);
  att_gemm_reference(STW_ATT_GRAD_K, base, b, t, c, nh);
  for (size_t i = 0; i < (size_t)bt * c; i++)
    stw_cb_att_scale_dqk(i, d2, c, scale);
  assert_close("attention backward by warps", d2, d1, (size_t)bt * 3 * c);
  assert_close("attention backward by warps (scores)", dp2, dp1, n_att);
  assert_close("attention backward by warps (weights)", da2, da1, n_att);
}

/* Fused attention as the GPU's warps compute it: every query or key row by its 32 lanes in
 * turn, their partials through the same tree (compute-cuda-bodies.h, compute-cuda.cu). */
static void
warp_flash_forward(size_t lo, size_t hi, float *out, float *lse, const float *inp, int seq, int width,
                   int heads)
{
  int hs = width / heads;
  float m[STW_LANES], l[STW_LANES], part[STW_LANES], acc[STW_LANES][STW_FA_MAX_HS];
  for (size_t idx = lo; idx < hi; idx++) {
    int h = (int)(idx % heads), t = (int)((idx / heads) % seq), b = (int)(idx / ((size_t)heads * seq));
    for (int lane = 0; lane < STW_LANES; lane++)
      stw_cb_fa_lane_stats(idx, lane, inp, seq, width, heads, &m[lane], &l[lane]);
    float maxv = stw_cb_lane_max(m);
    for (int lane = 0; lane < STW_LANES; lane++)
      part[lane] = stw_cb_fa_lane_rescaled(m[lane], l[lane], maxv);
    float e = maxv + logf(stw_cb_lane_sum(part));
    lse[((size_t)b * heads + h) * seq + t] = e;
    for (int lane = 0; lane < STW_LANES; lane++)
      stw_cb_fa_lane_out(idx, lane, acc[lane], inp, e, seq, width, heads);
    float *o = out + ((size_t)b * seq + t) * width + h * hs;
    for (int i = 0; i < hs; i++) {
      for (int lane = 0; lane < STW_LANES; lane++)
        part[lane] = acc[lane][i];
      o[i] = stw_cb_lane_sum(part);
    }
  }
}

static void
warp_flash_dq(size_t lo, size_t hi, float *dinp, float *delta, const float *dout,
              const float *inp, const float *out, const float *lse, int seq, int width, int heads)
{
  int hs = width / heads, C3 = 3 * width;
  float part[STW_LANES], acc[STW_LANES][STW_FA_MAX_HS];
  for (size_t idx = lo; idx < hi; idx++) {
    int h = (int)(idx % heads), t = (int)((idx / heads) % seq), b = (int)(idx / ((size_t)heads * seq));
    size_t r = ((size_t)b * heads + h) * seq + t;
    for (int lane = 0; lane < STW_LANES; lane++)
      part[lane] = stw_cb_fa_lane_delta(idx, lane, dout, out, seq, width, heads);
    delta[r] = stw_cb_lane_sum(part);
    for (int lane = 0; lane < STW_LANES; lane++)
      stw_cb_fa_lane_dq(idx, lane, acc[lane], dout, inp, lse[r], delta[r], seq, width, heads);
    float *dq = dinp + ((size_t)b * seq + t) * C3 + h * hs;
    for (int i = 0; i < hs; i++) {
      for (int lane = 0; lane < STW_LANES; lane++)
        part[lane] = acc[lane][i];
      dq[i] = stw_cb_lane_sum(part);
    }
  }
}

static void
warp_flash_dkv(size_t lo, size_t hi, float *dinp, const float *dout, const float *inp,
               const float *lse, const float *delta, int seq, int width, int heads)
{
  int hs = width / heads, C3 = 3 * width;
  float part[STW_LANES], acck[STW_LANES][STW_FA_MAX_HS], accv[STW_LANES][STW_FA_MAX_HS];
  for (size_t idx = lo; idx < hi; idx++) {
    int h = (int)(idx % heads), t2 = (int)((idx / heads) % seq), b = (int)(idx / ((size_t)heads * seq));
    for (int lane = 0; lane < STW_LANES; lane++)
      stw_cb_fa_lane_dkv(idx, lane, acck[lane], accv[lane], dout, inp, lse, delta, seq, width,
                         heads);
    float *dk = dinp + ((size_t)b * seq + t2) * C3 + h * hs + width, *dv = dk + width;
    for (int i = 0; i < hs; i++) {
      for (int lane = 0; lane < STW_LANES; lane++)
        part[lane] = acck[lane][i];
      dk[i] = stw_cb_lane_sum(part);
      for (int lane = 0; lane < STW_LANES; lane++)
        part[lane] = accv[lane][i];
      dv[i] = stw_cb_lane_sum(part);
    }
  }
}

/* Fused attention against the naive kernels, and by warps against the CPU's loops: the same
 * outputs, each query row's log-sum-exp of the naive scores, and the same gradients, with every
 * output written (NaN before) and no (T x T) matrix; lanes with several keys (T above 32) and
 * none (T below), heads up to the widest. */
static void
flash_case(int b, int t, int c, int nh)
{
  size_t bt = (size_t)b * t, n_att = (size_t)b * nh * t * t, n_rows = (size_t)b * nh * t;
  g_autofree float *qkv = randoms(bt * 3 * c), *dout = randoms(bt * c);
  g_autofree float *o1 = g_new(float, bt * c), *pre = g_new(float, n_att),
                   *att = g_new(float, n_att);
  stw_attention_forward(o1, pre, att, qkv, b, t, c, nh);
  g_autofree float *o2 = nans(bt * c), *lse = nans(n_rows), *want_lse = g_new(float, n_rows);
  stw_attention_flash_forward(o2, lse, qkv, b, t, c, nh);
  assert_close("flash attention forward", o2, o1, bt * c);
  for (size_t r = 0; r < n_rows; r++) { /* row r = (b, h, t): its scores up to t */
    int q = (int)(r % t);
    double m = -1e30, sum = 0;
    for (int k = 0; k <= q; k++)
      m = fmax(m, pre[r * t + k]);
    for (int k = 0; k <= q; k++)
      sum += exp(pre[r * t + k] - m);
    want_lse[r] = (float)(m + log(sum));
  }
  assert_close("flash attention log-sum-exp", lse, want_lse, n_rows);

  g_autofree float *d1 = nans(bt * 3 * c), *dp = nans(n_att), *da = nans(n_att);
  stw_attention_backward(d1, dp, da, dout, qkv, att, b, t, c, nh);
  g_autofree float *d2 = nans(bt * 3 * c), *delta = nans(n_rows);
  stw_attention_flash_backward(d2, delta, dout, qkv, o2, lse, b, t, c, nh);
  assert_close("flash attention backward", d2, d1, bt * 3 * c);
  /* the GPU's lanes and tree against the CPU's loops */
  size_t n_idx = (size_t)b * t * nh;
  g_autofree float *o4 = nans(bt * c), *lse4 = nans(n_rows), *d4 = nans(bt * 3 * c),
                   *delta4 = nans(n_rows);
  warp_flash_forward(0, n_idx, o4, lse4, qkv, t, c, nh);
  assert_close("flash attention forward by warps", o4, o2, bt * c);
  assert_close("flash attention log-sum-exp by warps", lse4, lse, n_rows);
  warp_flash_dq(0, n_idx, d4, delta4, dout, qkv, o2, lse, t, c, nh);
  warp_flash_dkv(0, n_idx, d4, dout, qkv, lse, delta4, t, c, nh);
  assert_close("flash attention backward by warps", d4, d2, bt * 3 * c);
  assert_close("flash attention's delta by warps", delta4, delta, n_rows);
  g_autofree float *d3 = nans(bt * 3 * c), *o3 = nans(bt * c);
  stw_attention_flash_forward(o3, lse, qkv, b, t, c, nh);
  stw_attention_flash_backward(d3, delta, dout, qkv, o3, lse, b, t, c, nh);
  g_assert_cmpmem(o3, bt * c * sizeof(float), o2, bt * c * sizeof(float));
  g_assert_cmpmem(d3, bt * 3 * c * sizeof(float), d2, bt * 3 * c * sizeof(float));
}

static void
test_flash_attention(void)
{
  flash_case(B, T, C, NH);
  flash_case(2, 70, 128, 2);                            /* GPT-2's heads: 64 wide */
  flash_case(1, 130, 64, 4);                            /* three tiles of the CPU's 64 */
  flash_case(1, 33, 2 * STW_FLASH_MAX_HEAD_WIDTH, 2);   /* the widest */
}

/* the GPU's column sums in two stages (chunks of STW_COLUMN_ROWS rows) against kernels.c, over
 * more rows than one chunk */
static void
test_column_sums(void)
{
  enum { rows = 600, c = 8 };
  int chunks = (rows + STW_COLUMN_ROWS - 1) / STW_COLUMN_ROWS;
  g_autofree float *inp = randoms(rows * c), *w = randoms(c), *bias = randoms(c);
  g_autofree float *out = g_new(float, rows * c), *mean = g_new(float, rows),
                   *rstd = g_new(float, rows);
  stw_layernorm_forward(out, mean, rstd, inp, w, bias, 1, rows, c);
  g_autofree float *dout = randoms(rows * c), *dx = g_new0(float, rows * c);
  g_autofree float *dw1 = randoms(c), *db1 = randoms(c);
  g_autofree float *dw2 = copy(dw1, c), *db2 = copy(db1, c);
  stw_layernorm_backward(dx, dw1, db1, dout, inp, w, mean, rstd, 1, rows, c, TRUE);
  g_autofree float *pw = nans((size_t)chunks * c), *pb = nans((size_t)chunks * c);
  for (int k = 0; k < chunks; k++)
    for (size_t i = 0; i < c; i++)
      stw_cb_ln_column_partial(i, k, pw, pb, dout, inp, mean, rstd, rows, c);
  for (size_t i = 0; i < c; i++) {
    stw_cb_column_total(i, chunks, dw2, pw, c, TRUE);
    stw_cb_column_total(i, chunks, db2, pb, c, TRUE);
  }
  assert_close("layernorm weight gradient in two stages", dw2, dw1, c);
  assert_close("layernorm bias gradient in two stages", db2, db1, c);

  g_autofree float *bg1 = nans(c), *bg2 = nans(c), *part = nans((size_t)chunks * c);
  for (size_t o = 0; o < c; o++)
    stw_cb_bias_grad(o, bg1, dout, rows, c, FALSE);
  for (int k = 0; k < chunks; k++)
    for (size_t o = 0; o < c; o++)
      stw_cb_bias_column_partial(o, k, part, dout, rows, c);
  for (size_t o = 0; o < c; o++)
    stw_cb_column_total(o, chunks, bg2, part, c, FALSE);
  assert_close("bias gradient in two stages", bg2, bg1, c);
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

/* Adam with bf16 moments: over the threads bitwise what one element at a time gives (the
 * rounding's bits come from the element's index and the step, not the thread); each moment one of
 * the two bf16 values around the fp32 update; the master weights the fp32 update of the widened
 * moments; and the rounding unbiased where nearest would stall: a variance of 1 decayed towards a
 * squared gradient of 1.5 moves by 5e-4 a step, under half an ulp of bf16 at 1 (2^-8 = 0.0039),
 * so nearest rounding keeps it at 1 forever, and the stochastic rounding's mean over 65613
 * elements lands within 5e-5 of 1.0005. */
static void
test_adam_bf16_moments(void)
{
  size_t n = 65536 + 77; /* strips of 512 and a part of one (kernels.c) */
  StwAdamConfig c;
  stw_adam_config_init(&c);
  c.state_dtype = STW_DTYPE_BF16;
  g_autofree float *grad = randoms(n), *master = randoms(n);
  g_autofree uint16_t *m = g_new(uint16_t, n), *v = g_new(uint16_t, n);
  for (size_t i = 0; i < n; i++) {
    m[i] = stw_bf16_from_float(uniform());
    v[i] = stw_bf16_from_float(fabsf(uniform()));
  }
  g_autofree float *grad2 = copy(grad, n), *master2 = copy(master, n);
  g_autofree uint16_t *m2 = g_memdup2(m, n * 2), *v2 = g_memdup2(v, n * 2);
  guint64 step = 7;
  stw_compute_host_adam(grad, STW_DTYPE_FP32, master, m, v, n, &c, step);
  StwAdamStep s = stw_adam_step(&c, step, n);
  g_assert_true(s.bf16_moments);
  for (size_t i = 0; i < n; i++) {
    float m1, v1, vmax = 0;
    float w = stw_cb_adam_core(grad2[i], stw_bf16_to_float(m2[i]), stw_bf16_to_float(v2[i]), 0,
                               &m1, &v1, &vmax, master2[i], s);
    stw_cb_adam_bs(i, grad2, master2, m2, v2, s);
    g_assert_cmpfloat(master2[i], ==, w);
    /* within an ulp of bf16 (2^-7 of the value): one of the two around it */
    g_assert_cmpfloat(fabsf(stw_bf16_to_float(m2[i]) - m1), <=, fabsf(m1) / 128.0f);
    g_assert_cmpfloat(fabsf(stw_bf16_to_float(v2[i]) - v1), <=, v1 / 128.0f);
  }
  g_assert_cmpmem(master, n * sizeof(float), master2, n * sizeof(float));
  g_assert_cmpmem(grad, n * sizeof(float), grad2, n * sizeof(float));
  g_assert_cmpmem(m, n * 2, m2, n * 2);
  g_assert_cmpmem(v, n * 2, v2, n * 2);

  /* unbiased where nearest stalls */
  g_assert_cmphex(stw_bf16_from_float(1.0005f), ==, stw_bf16_from_float(1.0f));
  c.weight_decay = 0;
  for (size_t i = 0; i < n; i++) {
    grad[i] = sqrtf(1.5f);
    v[i] = stw_bf16_from_float(1.0f);
    m[i] = 0;
  }
  stw_compute_host_adam(grad, STW_DTYPE_FP32, master, m, v, n, &c, 100);
  double mean = 0;
  for (size_t i = 0; i < n; i++)
    mean += stw_bf16_to_float(v[i]);
  mean /= (double)n;
  g_assert_cmpfloat(fabs(mean - (0.999 * 1.0 + 0.001 * 1.5)), <, 5e-5);
}

/* The AdamW kernels with 16-bit lanes (a bf16 or fp16 compute copy, bf16 moments) have an
 * AVX512BW version of their own (kernels.c): bitwise what every other CPU's gives, for each
 * compute copy and moments' dtype, with AMSGrad's loop too */
static void
test_adam_avx512bw(void)
{
  if (!__builtin_cpu_supports("avx512bw"))
    g_test_message("this CPU has no AVX512BW: both runs take the same kernels");
  size_t n = 65536 + 77;
  StwDtype copies[] = { STW_DTYPE_FP32, STW_DTYPE_BF16, STW_DTYPE_FP16 };
  StwDtype moments[] = { STW_DTYPE_FP32, STW_DTYPE_BF16 };
  for (guint a = 0; a < G_N_ELEMENTS(copies); a++)
    for (guint b = 0; b < G_N_ELEMENTS(moments); b++)
      for (int amsgrad = 0; amsgrad <= 1; amsgrad++) {
        if (copies[a] == STW_DTYPE_FP32 && moments[b] == STW_DTYPE_FP32)
          continue; /* no 16-bit lanes */
        StwAdamConfig c;
        stw_adam_config_init(&c);
        c.state_dtype = moments[b];
        c.amsgrad = amsgrad;
        c.loss_scale = copies[a] == STW_DTYPE_FP16 ? 1024.0f : 0.0f;
        size_t esize = copies[a] == STW_DTYPE_FP32 ? 4 : 2;
        size_t msize = moments[b] == STW_DTYPE_FP32 ? 4 : 2;
        size_t vn = amsgrad ? 2 * n : n;
        g_autofree guint8 *param = g_malloc(n * esize), *m = g_malloc(n * msize),
                          *v = g_malloc(vn * msize);
        g_autofree float *master = randoms(n);
        for (size_t i = 0; i < n; i++) {
          float g = uniform() * 1e-2f, mi = uniform() * 1e-3f, vi = fabsf(uniform()) * 1e-5f;
          if (copies[a] == STW_DTYPE_FP32)
            ((float *)param)[i] = g;
          else
            ((uint16_t *)param)[i] = copies[a] == STW_DTYPE_BF16
                                        ? stw_bf16_from_float(g)
                                        : stw_fp16_from_float(g * 1024.0f);
          if (msize == 4) {
            ((float *)m)[i] = mi;
            ((float *)v)[i] = vi;
          } else {
            ((uint16_t *)m)[i] = stw_bf16_from_float(mi);
            ((uint16_t *)v)[i] = stw_bf16_from_float(vi);
          }
        }
        memcpy(v + n * msize, v, (vn - n) * msize); /* AMSGrad's largest so far */
        g_autofree guint8 *param2 = g_memdup2(param, n * esize), *m2 = g_memdup2(m, n * msize),
                          *v2 = g_memdup2(v, vn * msize);
        g_autofree float *master2 = copy(master, n);
        stw_compute_host_adam(param, copies[a], master, m, v, n, &c, 5);
        gboolean was = stw_kernels_allow_avx512bw(FALSE);
        stw_compute_host_adam(param2, copies[a], master2, m2, v2, n, &c, 5);
        stw_kernels_allow_avx512bw(was);
        g_assert_cmpmem(param, n * esize, param2, n * esize);
        g_assert_cmpmem(master, n * 4, master2, n * 4);
        g_assert_cmpmem(m, n * msize, m2, n * msize);
        g_assert_cmpmem(v, vn * msize, v2, vn * msize);
      }

  /* the fp32 compute copy stepped in place (its master only read, or the copy itself: one
   * rank's weights in one array) and one array's step (stw_adam_update): the bf16 moments'
   * loops that ask for their lines ahead (kernels.c) give every other CPU's bits */
  for (int aliased = 0; aliased <= 1; aliased++) {
    StwAdamConfig c;
    stw_adam_config_init(&c);
    c.state_dtype = STW_DTYPE_BF16;
    g_autofree float *param = randoms(n), *master = aliased ? NULL : randoms(n);
    g_autofree uint16_t *m = g_new(uint16_t, n), *v = g_new(uint16_t, n);
    for (size_t i = 0; i < n; i++) {
      m[i] = stw_bf16_from_float(uniform() * 1e-3f);
      v[i] = stw_bf16_from_float(fabsf(uniform()) * 1e-5f);
    }
    g_autofree float *param2 = copy(param, n), *master2 = aliased ? NULL : copy(master, n);
    g_autofree uint16_t *m2 = g_memdup2(m, n * 2), *v2 = g_memdup2(v, n * 2);
    g_autofree float *grad = randoms(n), *param3 = copy(param, n), *param4 = copy(param, n);
    g_autofree uint16_t *m3 = g_memdup2(m, n * 2), *v3 = g_memdup2(v, n * 2),
                        *m4 = g_memdup2(m, n * 2), *v4 = g_memdup2(v, n * 2);
    stw_compute_host_adam_to_copy(param, aliased ? param : master, m, v, n, &c, 9);
    stw_adam_update(param3, grad, m3, v3, n, &c, 9);
    gboolean was = stw_kernels_allow_avx512bw(FALSE);
    stw_compute_host_adam_to_copy(param2, aliased ? param2 : master2, m2, v2, n, &c, 9);
    stw_adam_update(param4, grad, m4, v4, n, &c, 9);
    stw_kernels_allow_avx512bw(was);
    g_assert_cmpmem(param, n * 4, param2, n * 4);
    g_assert_cmpmem(m, n * 2, m2, n * 2);
    g_assert_cmpmem(v, n * 2, v2, n * 2);
    g_assert_cmpmem(param3, n * 4, param4, n * 4);
    g_assert_cmpmem(m3, n * 2, m4, n * 2);
    g_assert_cmpmem(v3, n * 2, v4, n * 2);
    g_assert_true(memcmp(m, m3, n * 2) != 0); /* the two steps' inputs differ: not one run */
  }
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
  StwAdamStep s = stw_adam_step(&c, step, n);
  for (size_t i = 0; i < n; i++)
    stw_cb_adam(i, grad2, master2, m2, v2, s);
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

  /* with an fp16 compute copy holding the gradient times a loss scale of 2^10: unscaled in fp32,
   * bitwise the fp32 step on the unscaled gradient; the new weights rounded to fp16 */
  c.loss_scale = 1024.0f;
  g_autofree float *master7 = copy(master4, n), *m7 = copy(m4, n), *v7 = copy(v4, n);
  g_autofree float *master8 = copy(master4, n), *m8 = copy(m4, n), *v8 = copy(v4, n);
  for (size_t i = 0; i < n; i++) {
    h[i] = stw_fp16_from_float(uniform() * 1e-3f * c.loss_scale);
    g32[i] = stw_fp16_to_float(h[i]) * (1.0f / c.loss_scale);
  }
  stw_compute_host_adam(h, STW_DTYPE_FP16, master7, m7, v7, n, &c, step);
  c.loss_scale = 1.0f;
  stw_adam_update(master8, g32, m8, v8, n, &c, step);
  g_assert_cmpmem(master7, n * sizeof(float), master8, n * sizeof(float));
  g_assert_cmpmem(m7, n * sizeof(float), m8, n * sizeof(float));
  g_assert_cmpmem(v7, n * sizeof(float), v8, n * sizeof(float));
  for (size_t i = 0; i < n; i++)
    g_assert_cmphex(h[i], ==, stw_fp16_from_float(master7[i]));

  /* AMSGrad (PyTorch's amsgrad=True): the largest variance so far, after the variances, is what
   * the step divides by; against the update written out in double */
  c.amsgrad = TRUE;
  c.weight_decay = 0.0f;
  g_autofree float *w5 = randoms(n), *g5 = randoms(n), *m5 = randoms(n), *v5 = g_new(float, 2 * n);
  g_autofree double *w6 = g_new(double, n), *m6 = g_new(double, n), *v6 = g_new(double, 2 * n);
  for (size_t i = 0; i < n; i++) {
    v5[i] = fabsf(uniform());
    v5[n + i] = i % 2 ? fabsf(uniform()) : 0.0f; /* half above what the step makes, half not */
    w6[i] = w5[i];
    m6[i] = m5[i];
    v6[i] = v5[i];
    v6[n + i] = v5[n + i];
  }
  g_autofree float *param5 = copy(g5, n);
  g_autofree float *w5m = copy(w5, n);
  stw_compute_host_adam(param5, STW_DTYPE_FP32, w5m, m5, v5, n, &c, step);
  double bc1 = 1.0 - pow(c.beta1, (double)step), bc2 = 1.0 - pow(c.beta2, (double)step);
  guint kept = 0;
  for (size_t i = 0; i < n; i++) {
    m6[i] = c.beta1 * m6[i] + (1.0 - c.beta1) * g5[i];
    v6[i] = c.beta2 * v6[i] + (1.0 - c.beta2) * (double)g5[i] * g5[i];
    kept += v6[n + i] > v6[i];
    v6[n + i] = MAX(v6[n + i], v6[i]);
    w6[i] -= c.lr * (m6[i] / bc1) / (sqrt(v6[n + i] / bc2) + c.eps);
    g_assert_cmpfloat(fabs(w6[i] - w5m[i]), <=, 1e-6 * MAX(1.0, fabs(w6[i])));
    g_assert_cmpfloat(fabs(v6[n + i] - v5[n + i]), <=, 1e-6 * MAX(1e-3, v6[n + i]));
    g_assert_cmpfloat(param5[i], ==, w5m[i]);
  }
  g_assert_cmpuint(kept, >, 0); /* both branches of the maximum were taken */
  g_assert_cmpuint(kept, <, n);
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

static void
test_fp16_rounding(void)
{
  static const struct {
    float f;
    uint16_t h;
  } cases[] = {
    { 1.0f, 0x3c00 },
    { 1.00048828125f, 0x3c00 },        /* 1 + 2^-11: halfway, to the even 0x3c00 */
    { 1.00146484375f, 0x3c02 },        /* 1 + 3 * 2^-11: halfway, to the even 0x3c02 */
    { 1.0004884f, 0x3c01 },            /* just above halfway: up */
    { -2.5f, 0xc100 },
    { 0.0f, 0x0000 },
    { 65504.0f, 0x7bff },              /* the largest fp16 */
    { 65519.99f, 0x7bff },
    { 65520.0f, 0x7c00 },              /* halfway to 2^16: infinity */
    { 1e9f, 0x7c00 },
    { 6.103515625e-05f, 0x0400 },      /* 2^-14, the smallest normal */
    { 5.9604644775390625e-08f, 0x0001 }, /* 2^-24, the smallest subnormal */
    { 2.98023223876953125e-08f, 0x0000 }, /* 2^-25: halfway, to the even 0 */
    { 8.94069671630859375e-08f, 0x0002 }, /* 3 * 2^-25: halfway, to the even 2 */
    { -1e-10f, 0x8000 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_test_message("%.9g -> 0x%04x", cases[i].f, stw_fp16_from_float(cases[i].f));
    g_assert_cmphex(stw_fp16_from_float(cases[i].f), ==, cases[i].h);
  }
  g_assert_cmpfloat(stw_fp16_to_float(0x3c00), ==, 1.0f);
  g_assert_cmpfloat(stw_fp16_to_float(0xc100), ==, -2.5f);
  g_assert_cmpfloat(stw_fp16_to_float(0x0001), ==, 5.9604644775390625e-08f);
  g_assert_true(isinf(stw_fp16_to_float(0x7c00)));
  g_assert_true(isnan(stw_fp16_to_float(stw_fp16_from_float(NAN))));
  /* every fp16 value survives the round trip */
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = stw_fp16_to_float((uint16_t)h);
    if (!isnan(f))
      g_assert_cmphex(stw_fp16_from_float(f), ==, h);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/compute/matmul-gemms", test_matmul);
  g_test_add_func("/compute/portable-gemm", test_portable_gemm);
  g_test_add_func("/compute/matmul-bf16", test_matmul_bf16);
  g_test_add_func("/compute/layernorm-backward", test_layernorm_backward);
  g_test_add_func("/compute/tanh", test_tanh);
  g_test_add_func("/compute/flash-attention", test_flash_attention);
  g_test_add_func("/compute/warp-layernorm", test_warp_layernorm);
  g_test_add_func("/compute/warp-crossentropy", test_warp_crossentropy);
  g_test_add_func("/compute/warp-attention", test_warp_attention);
  g_test_add_func("/compute/column-sums", test_column_sums);
  g_test_add_func("/compute/gradient-accumulation", test_gradient_accumulation);
  g_test_add_func("/compute/adam", test_adam);
  g_test_add_func("/compute/adam-bf16-moments", test_adam_bf16_moments);
  g_test_add_func("/compute/adam-avx512bw", test_adam_avx512bw);
  g_test_add_func("/compute/bf16-rounding", test_bf16_rounding);
  g_test_add_func("/compute/fp16-rounding", test_fp16_rounding);
  return g_test_run();
}
