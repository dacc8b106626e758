/* trainer.c — the GPT trainer: the model graph's ops executed with kernels.c over runtime
 * chunks; see trainer.h. */
#include "config.h"

#include <stowage/trainer.h>

#include <math.h>
#include <string.h>

#include <stowage/model.h>

#include "kernels.h"
#include "trainer-internal.h"

G_DEFINE_QUARK(stw-trainer-error-quark, stw_trainer_error)

void
stw_trainer_config_init(StwTrainerConfig *c)
{
  *c = (StwTrainerConfig){ .layers = 2, .width = 64, .heads = 4, .context = 64, .batch = 4,
                           .seed = 1337, .dtype = STW_DTYPE_FP32,
                           .attention = STW_ATTENTION_FLASH };
  stw_adam_config_init(&c->adam);
}

static gboolean
config_model(const StwTrainerConfig *c, StwModelConfig *m, GError **error)
{
  memset(m, 0, sizeof *m);
  g_snprintf(m->name, sizeof m->name, "gpt-bytes-l%" G_GUINT64_FORMAT "-w%" G_GUINT64_FORMAT,
             c->layers, c->width);
  m->arch = STW_ARCH_GPT;
  m->layers = c->layers;
  m->hidden = c->width;
  m->heads = c->heads;
  m->kv_heads = c->heads;
  m->ffn = 4 * c->width;
  m->vocab = 256;
  m->max_seq = c->context;
  m->tied = TRUE;
  if (c->dtype != STW_DTYPE_FP32 && c->dtype != STW_DTYPE_BF16) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CONFIG,
                "the trainer keeps its compute copy in fp32 or bf16, not %s",
                stw_dtype_name(c->dtype));
    return FALSE;
  }
  if (c->adam.state_dtype != STW_DTYPE_FP32 && c->adam.state_dtype != STW_DTYPE_BF16) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CONFIG,
                "Adam's moments are fp32 or bf16, not %s", stw_dtype_name(c->adam.state_dtype));
    return FALSE;
  }
  if (c->attention != STW_ATTENTION_NAIVE && c->attention != STW_ATTENTION_FLASH) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CONFIG,
                "the trainer's attention is naive or flash, not %d", (int)c->attention);
    return FALSE;
  }
  if (c->attention == STW_ATTENTION_FLASH && c->heads > 0 &&
      c->width / c->heads > STW_FLASH_MAX_HEAD_WIDTH) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CONFIG,
                "flash attention takes heads up to %d wide, and width %" G_GUINT64_FORMAT
                " over %" G_GUINT64_FORMAT " head%s makes them %" G_GUINT64_FORMAT ": use "
                "more heads, or naive attention", STW_FLASH_MAX_HEAD_WIDTH, c->width, c->heads,
                c->heads == 1 ? "" : "s", c->width / c->heads);
    return FALSE;
  }
  GError *local = NULL;
  if (!stw_model_config_validate(m, "trainer", &local) || c->batch < 1 || c->batch > 4096) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CONFIG, "%s",
                local ? local->message : "the batch must be 1 to 4096");
    g_clear_error(&local);
    return FALSE;
  }
  return TRUE;
}

StwTrace *
stw_trainer_model(const StwTrainerConfig *c, GError **error)
{
  StwModelConfig m;
  if (!config_model(c, &m, error))
    return NULL;
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&m, c->batch, c->context, STW_DTYPE_FP32,
                                                   c->attention);
  StwTrace *t = stw_trace_new();
  g_free(t->model.name);
  t->model.name = g_strdup(m.name);
  t->model.has_config = TRUE;
  t->model.config = m;
  t->model.batch = c->batch;
  t->model.seq = c->context;
  t->model.attention = c->attention;
  t->model.state_dtype = c->adam.state_dtype;
  for (guint i = 0; i < g->tensors->len; i++) {
    const StwGraphTensor *gt = g->tensors->pdata[i];
    guint32 id = stw_trace_add_tensor(t, gt->name, c->dtype, gt->shape, gt->ndim);
    for (guint k = 0; k < gt->aliases->len; k++)
      g_ptr_array_add(g_array_index(t->tensors, StwTensor, id).aliases,
                      g_strdup(gt->aliases->pdata[k]));
  }
  return t;
}

/* ---- initialization --------------------------------------------------------------------------- */

static guint64
splitmix(guint64 *s)
{
  guint64 z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static float
normal(guint64 *s)
{
  double u1 = ((double)(splitmix(s) >> 11) + 0.5) / 9007199254740992.0;
  double u2 = ((double)(splitmix(s) >> 11) + 0.5) / 9007199254740992.0;
  return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * G_PI * u2));
}

/* GPT-2's initialization, tensor by tensor in id order into the runtime's state: N(0, 0.02)
 * weights, the residual projections scaled by 1/sqrt(2L), zero biases, unit LayerNorm gains;
 * zero moments. One tensor at a time, so that the model is never held twice. */
static gboolean
initialize_weights(StwRuntime *rt, const StwTrace *m, guint64 seed, guint64 layers,
                   GError **error)
{
  guint64 s = seed, largest = stw_trace_largest_tensor(m, NULL);
  g_autofree float *w = g_new(float, MAX(largest, 1)), *zero = g_new0(float, MAX(largest, 1));
  for (guint32 i = 0; i < m->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(m, i);
    gboolean ln = strstr(x->name, "ln_") != NULL;
    gboolean bias = g_str_has_suffix(x->name, ".bias");
    float std = strstr(x->name, "c_proj.weight") ? 0.02f / sqrtf(2.0f * (float)layers) : 0.02f;
    for (guint64 k = 0; k < x->numel; k++)
      w[k] = bias ? 0.0f : ln ? 1.0f : std * normal(&s);
    if (!stw_runtime_write_state(rt, i, w, zero, zero, error))
      return FALSE;
  }
  return TRUE;
}

/* What the replayed plan does with each block's activations (its trace's blocks are the
 * layers, h0 .. hL-1). */
static gboolean
plan_blocks(StwTrainer *t, const StwRuntimeOptions *ro, GError **error)
{
  if (ro->mode != STW_RUNTIME_REPLAY || ro->plan == NULL ||
      ro->plan->recompute->len + ro->plan->offload->len == 0)
    return TRUE;
  GError *local = NULL;
  t->choice = stw_plan_block_choices(ro->plan, (guint32)t->c.layers, &local);
  if (t->choice == NULL) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CONFIG, "the plan does not fit the "
                "model's %" G_GUINT64_FORMAT " layers: %s", t->c.layers, local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}

StwTrainer *
stw_trainer_new(const StwTrainerConfig *c, const guint8 *text, gsize len,
                const StwRuntimeOptions *ro, StwBackend *backend, GError **error)
{
  StwModelConfig m;
  if (!config_model(c, &m, error))
    return NULL;
  guint64 world = ro->comm != NULL ? ro->comm->world : 1;
  if (len < world * c->batch * c->context + 1) {
    g_autofree char *ranks = world > 1 ? g_strdup_printf(" on %" G_GUINT64_FORMAT " ranks", world)
                                       : g_strdup("");
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_DATA,
                "the text has %" G_GSIZE_FORMAT " bytes; batch %" G_GUINT64_FORMAT " x context %"
                G_GUINT64_FORMAT "%s needs at least %" G_GUINT64_FORMAT, len, c->batch,
                c->context, ranks, world * c->batch * c->context + 1);
    return NULL;
  }
  if (world > 1 && ro->mode == STW_RUNTIME_PLAIN) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CONFIG,
                "plain mode trains one rank: several ranks need the runtime (profile or replay)");
    return NULL;
  }
  if (c->compute != NULL && c->compute->device_memory && ro->mode == STW_RUNTIME_PLAIN) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CONFIG,
                "plain mode keeps the model in host arrays; the %s compute table needs the "
                "runtime's device memory", c->compute->name);
    return NULL;
  }
  StwTrainer *t = g_new0(StwTrainer, 1);
  t->c = *c;
  t->cx = c->compute != NULL               ? c->compute
          : c->dtype == STW_DTYPE_BF16 ? stw_compute_cpu_mixed()
                                       : stw_compute_cpu();
  t->comm = ro->comm != NULL ? ro->comm->host : NULL; /* the loss and flags: host memory */
  t->world = (guint32)world;
  t->rank = ro->comm != NULL ? ro->comm->rank : 0;
  t->text = text;
  t->len = len;
  t->model = stw_trainer_model(c, error);
  t->graph = stw_model_graph_new(&m, c->batch, c->context, STW_DTYPE_FP32, c->attention);
  t->rt = stw_runtime_new(t->model, NULL, ro, backend, error);
  if (t->rt == NULL) {
    stw_trainer_free(t);
    return NULL;
  }
  if (!plan_blocks(t, ro, error) ||
      !initialize_weights(t->rt, t->model, c->seed, c->layers, error)) {
    stw_trainer_free(t);
    return NULL;
  }
  t->inputs = g_new(int, c->batch * c->context);
  t->targets = g_new(int, c->batch * c->context);
  t->blocks = g_new0(Block, c->layers);
  t->grad_written = g_new0(guint8, t->model->tensors->len);
  return t;
}

void
stw_trainer_free(StwTrainer *t)
{
  if (t == NULL)
    return;
  stw_runtime_free(t->rt);
  stw_model_graph_free(t->graph);
  stw_trace_free(t->model);
  g_free(t->inputs);
  g_free(t->targets);
  g_free(t->blocks);
  g_free(t->choice);
  g_free(t->grad_written);
  g_free(t);
}

/* ---- one step --------------------------------------------------------------------------------- */

typedef struct {
  StwTrainer *t;
  GError **error;
  gboolean failed;
  gboolean recomputing; /* a recomputed block's forward, in backward */
  float *w[4];        /* the current op's weights as the kernels read them: fp32 */
} Ctx;

/* the compute table of the trainer in scope as T */
#define CX (t->cx)

static float *
act(Ctx *x, gsize floats)
{
  if (x->failed)
    return NULL;
  float *p = stw_runtime_alloc(x->t->rt, floats * sizeof(float), x->error);
  if (p == NULL)
    x->failed = TRUE;
  return p;
}

static void
release(Ctx *x, float **p)
{
  stw_runtime_release(x->t->rt, *p);
  *p = NULL;
}

static guint64
numel(const StwTrainer *t, const StwGraphOp *op, guint i)
{
  return stw_trace_tensor(t->model, g_array_index(op->params, guint32, i))->numel;
}

/* The op's weights where the kernels read them: the compute copies themselves in fp32; in mixed
 * precision widened from bf16 into activations (counted in the budget) until the op ends. */
static void
weights_in(Ctx *x, const StwGraphOp *op)
{
  StwTrainer *t = x->t;
  g_assert(op->params->len <= G_N_ELEMENTS(x->w));
  for (guint i = 0; i < op->params->len; i++) {
    gpointer slot = stw_runtime_param(t->rt, g_array_index(op->params, guint32, i));
    if (t->c.dtype != STW_DTYPE_BF16) {
      x->w[i] = slot;
      continue;
    }
    x->w[i] = act(x, numel(t, op, i));
    if (x->w[i] != NULL)
      CX->widen(CX, x->w[i], slot, STW_DTYPE_BF16, numel(t, op, i));
  }
}

static void
weights_out(Ctx *x)
{
  gboolean widened = x->t->c.dtype == STW_DTYPE_BF16;
  for (guint i = 0; i < G_N_ELEMENTS(x->w); i++) {
    if (widened && x->w[i] != NULL)
      stw_runtime_release(x->t->rt, x->w[i]);
    x->w[i] = NULL;
  }
}

/* the op's weight I, as weights_in left it */
static float *
P(Ctx *x, guint i)
{
  return x->w[i];
}

/* Where the kernel of an op writes the gradient of its weight I: in fp32 straight into the
 * tensor's slot, which it replaces (the kernels read a weight before they write its gradient);
 * with a bf16 slot into an fp32 activation, committed after the kernel. *ACCUMULATE: whether the
 * kernel adds to what is there (a tied weight's second gradient of the iteration). */
static float *
grad_in(Ctx *x, const StwGraphOp *op, guint i, gboolean *accumulate)
{
  StwTrainer *t = x->t;
  guint32 tensor = g_array_index(op->params, guint32, i);
  if (t->c.dtype == STW_DTYPE_BF16) {
    *accumulate = FALSE;
    return act(x, numel(t, op, i));
  }
  *accumulate = t->grad_written[tensor];
  return stw_runtime_param(t->rt, tensor);
}

/* The gradient of weight I is complete: a bf16 slot gets it from G (the first write of the
 * iteration replaces the weight, later ones add up), which is released. */
static void
grad_out(Ctx *x, const StwGraphOp *op, guint i, float **g)
{
  StwTrainer *t = x->t;
  guint32 tensor = g_array_index(op->params, guint32, i);
  if (t->c.dtype == STW_DTYPE_BF16) {
    if (!x->failed)
      CX->grad_commit(CX, stw_runtime_param(t->rt, tensor), STW_DTYPE_BF16, *g,
                      numel(t, op, i), !t->grad_written[tensor]);
    release(x, g);
  }
  *g = NULL;
  if (!x->failed)
    t->grad_written[tensor] = 1;
}

/* A gradient a kernel only adds into (the embedding's) made zero before its first write. */
static void
zero_unless(Ctx *x, float *g, gboolean accumulate, guint64 n)
{
  if (!x->failed && !accumulate)
    x->t->cx->zero(x->t->cx, g, n * sizeof(float));
}

/* Token ids where the compute table reads them: the host array itself on the CPU, else an
 * activation of the same size with the ids uploaded. */
static int *
tokens(Ctx *x, const int *host)
{
  StwTrainer *t = x->t;
  if (!CX->device_memory)
    return (int *)host;
  gsize n = t->c.batch * t->c.context;
  G_STATIC_ASSERT(sizeof(int) == sizeof(float));
  int *dev = (int *)act(x, n);
  if (dev != NULL)
    CX->upload(CX, dev, host, n * sizeof(int));
  return dev;
}

static void
release_tokens(Ctx *x, int **p)
{
  if (x->t->cx->device_memory)
    stw_runtime_release(x->t->rt, *p);
  *p = NULL;
}

/* An op of a kind the GPT trainer has no kernels for (the graph of another architecture). */
static void
unsupported(Ctx *x, const StwGraphOp *op)
{
  if (!x->failed)
    g_set_error(x->error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CONFIG,
                "op %s: the GPT trainer has no kernels for a %s op", op->name,
                stw_op_kind_names[op->kind]);
  x->failed = TRUE;
}

/* The forward pass of op OP of transformer block B (PREV: the block before, NULL for the
 * first). */
static void
forward_block(Ctx *x, const StwGraphOp *op, Block *b, const Block *prev)
{
  StwTrainer *t = x->t;
  int B = (int)t->c.batch, T = (int)t->c.context, C = (int)t->c.width, NH = (int)t->c.heads;
  gsize BTC = (gsize)B * T * C;
  switch (op->kind) {
  case STW_OP_NORM_ATTN:
    if (prev != NULL)
      b->x = prev->res3;
    b->ln1 = act(x, BTC);
    b->ln1_mean = act(x, (gsize)B * T);
    b->ln1_rstd = act(x, (gsize)B * T);
    if (!x->failed)
      CX->layernorm_forward(CX, b->ln1, b->ln1_mean, b->ln1_rstd, b->x, P(x, 0), P(x, 1), B,
                            T, C);
    break;
  case STW_OP_ATTN_QKV:
    b->qkv = act(x, 3 * BTC);
    if (!x->failed)
      CX->matmul_forward(CX, b->qkv, b->ln1, P(x, 0), P(x, 1), B, T, C, 3 * C);
    break;
  case STW_OP_ATTN_CORE:
    if (t->c.attention == STW_ATTENTION_FLASH) {
      b->lse = act(x, (gsize)B * NH * T);
      b->atty = act(x, BTC);
      if (!x->failed)
        CX->attention_flash_forward(CX, b->atty, b->lse, b->qkv, B, T, C, NH);
      break;
    }
    b->preatt = act(x, (gsize)B * NH * T * T);
    b->att = act(x, (gsize)B * NH * T * T);
    b->atty = act(x, BTC);
    if (!x->failed)
      CX->attention_forward(CX, b->atty, b->preatt, b->att, b->qkv, B, T, C, NH);
    break;
  case STW_OP_ATTN_OUT: {
    float *proj = act(x, BTC);
    b->res2 = act(x, BTC);
    if (!x->failed) {
      CX->matmul_forward(CX, proj, b->atty, P(x, 0), P(x, 1), B, T, C, C);
      CX->residual_forward(CX, b->res2, b->x, proj, BTC);
    }
    release(x, &proj);
    break;
  }
  case STW_OP_NORM_MLP:
    b->ln2 = act(x, BTC);
    b->ln2_mean = act(x, (gsize)B * T);
    b->ln2_rstd = act(x, (gsize)B * T);
    if (!x->failed)
      CX->layernorm_forward(CX, b->ln2, b->ln2_mean, b->ln2_rstd, b->res2, P(x, 0), P(x, 1),
                            B, T, C);
    break;
  case STW_OP_MLP_IN:
    b->fch = act(x, 4 * BTC);
    if (!x->failed)
      CX->matmul_forward(CX, b->fch, b->ln2, P(x, 0), P(x, 1), B, T, C, 4 * C);
    break;
  case STW_OP_MLP_ACT:
    b->fch_gelu = act(x, 4 * BTC);
    if (!x->failed)
      CX->gelu_forward(CX, b->fch_gelu, b->fch, 4 * BTC);
    break;
  case STW_OP_MLP_OUT: {
    if (x->recomputing) /* the block's output lives on as the next block's input */
      break;
    float *proj = act(x, BTC);
    b->res3 = act(x, BTC);
    if (!x->failed) {
      CX->matmul_forward(CX, proj, b->fch_gelu, P(x, 0), P(x, 1), B, T, 4 * C, C);
      CX->residual_forward(CX, b->res3, b->res2, proj, BTC);
    }
    release(x, &proj);
    break;
  }
  default:
    unsupported(x, op);
    break;
  }
}

/* The forward pass of op K. */
static void
forward_op(Ctx *x, guint k)
{
  StwTrainer *t = x->t;
  const StwGraphOp *op = t->graph->ops->pdata[k];
  int B = (int)t->c.batch, T = (int)t->c.context, C = (int)t->c.width, V = 256;
  gsize BTC = (gsize)B * T * C;
  if (op->layer >= 0) {
    forward_block(x, op, &t->blocks[op->layer], op->layer > 0 ? &t->blocks[op->layer - 1] : NULL);
    return;
  }
  switch (op->kind) {
  case STW_OP_EMBED:
    t->d_inputs = tokens(x, t->inputs);
    t->blocks[0].x = act(x, BTC);
    if (!x->failed)
      CX->encoder_forward(CX, t->blocks[0].x, t->d_inputs, P(x, 0), P(x, 1), B, T, C);
    break;
  case STW_OP_NORM_FINAL: {
    Block *last = &t->blocks[t->c.layers - 1];
    t->lnf = act(x, BTC);
    t->lnf_mean = act(x, (gsize)B * T);
    t->lnf_rstd = act(x, (gsize)B * T);
    if (!x->failed)
      CX->layernorm_forward(CX, t->lnf, t->lnf_mean, t->lnf_rstd, last->res3, P(x, 0),
                            P(x, 1), B, T, C);
    break;
  }
  case STW_OP_LM_HEAD:
    t->logits = act(x, (gsize)B * T * V);
    if (!x->failed)
      CX->matmul_forward(CX, t->logits, t->lnf, P(x, 0), NULL, B, T, C, V);
    break;
  case STW_OP_LOSS:
    t->d_targets = tokens(x, t->targets);
    t->probs = act(x, (gsize)B * T * V);
    t->losses = act(x, (gsize)B * T);
    if (!x->failed)
      t->loss = CX->crossentropy_forward(CX, t->probs, t->losses, t->logits, t->d_targets, B, T,
                                         V);
    break;
  default:
    unsupported(x, op);
    break;
  }
}

/* The backward pass of op OP of transformer block B, its weight and bias gradients into DW and
 * DB (added to with ACC). */
static void
backward_block(Ctx *x, const StwGraphOp *op, Block *b, float *dw, float *db, gboolean acc)
{
  StwTrainer *t = x->t;
  int B = (int)t->c.batch, T = (int)t->c.context, C = (int)t->c.width, NH = (int)t->c.heads;
  gsize BTC = (gsize)B * T * C;
  switch (op->kind) {
  case STW_OP_MLP_OUT: /* res3 = res2 + proj(gelu): dx flows to res2 unchanged */
    t->dfch_gelu = act(x, 4 * BTC);
    if (!x->failed)
      CX->matmul_backward(CX, t->dfch_gelu, dw, db, t->dx, b->fch_gelu, P(x, 0), B, T, 4 * C, C,
                          acc);
    break;
  case STW_OP_MLP_ACT:
    t->dfch = act(x, 4 * BTC);
    if (!x->failed)
      CX->gelu_backward(CX, t->dfch, b->fch, t->dfch_gelu, 4 * BTC);
    release(x, &t->dfch_gelu);
    release(x, &b->fch_gelu);
    break;
  case STW_OP_MLP_IN:
    t->dln2 = act(x, BTC);
    if (!x->failed)
      CX->matmul_backward(CX, t->dln2, dw, db, t->dfch, b->ln2, P(x, 0), B, T, C, 4 * C, acc);
    release(x, &t->dfch);
    release(x, &b->fch);
    break;
  case STW_OP_NORM_MLP:
    if (!x->failed)
      CX->layernorm_backward(CX, t->dx, dw, db, t->dln2, b->res2, P(x, 0), b->ln2_mean,
                             b->ln2_rstd, B, T, C, acc);
    release(x, &t->dln2);
    release(x, &b->ln2);
    release(x, &b->ln2_mean);
    release(x, &b->ln2_rstd);
    release(x, &b->res3);
    break;
  case STW_OP_ATTN_OUT: /* res2 = x + proj(atty): dx flows to x unchanged */
    t->datty = act(x, BTC);
    if (!x->failed)
      CX->matmul_backward(CX, t->datty, dw, db, t->dx, b->atty, P(x, 0), B, T, C, C, acc);
    break;
  case STW_OP_ATTN_CORE: {
    t->dqkv = act(x, 3 * BTC);
    if (t->c.attention == STW_ATTENTION_FLASH) {
      float *delta = act(x, (gsize)B * NH * T);
      if (!x->failed)
        CX->attention_flash_backward(CX, t->dqkv, delta, t->datty, b->qkv, b->atty, b->lse, B, T,
                                     C, NH);
      release(x, &delta);
      release(x, &t->datty);
      release(x, &b->lse);
      release(x, &b->atty);
      break;
    }
    float *dpre = act(x, (gsize)B * NH * T * T), *datt = act(x, (gsize)B * NH * T * T);
    if (!x->failed)
      CX->attention_backward(CX, t->dqkv, dpre, datt, t->datty, b->qkv, b->att, B, T, C, NH);
    release(x, &dpre);
    release(x, &datt);
    release(x, &t->datty);
    release(x, &b->preatt);
    release(x, &b->att);
    release(x, &b->atty);
    break;
  }
  case STW_OP_ATTN_QKV:
    t->dln1 = act(x, BTC);
    if (!x->failed)
      CX->matmul_backward(CX, t->dln1, dw, db, t->dqkv, b->ln1, P(x, 0), B, T, C, 3 * C, acc);
    release(x, &t->dqkv);
    release(x, &b->qkv);
    break;
  case STW_OP_NORM_ATTN:
    if (!x->failed)
      CX->layernorm_backward(CX, t->dx, dw, db, t->dln1, b->x, P(x, 0), b->ln1_mean, b->ln1_rstd,
                             B, T, C, acc);
    release(x, &t->dln1);
    release(x, &b->ln1);
    release(x, &b->ln1_mean);
    release(x, &b->ln1_rstd);
    release(x, &b->res2);
    if (op->layer == 0)
      release(x, &b->x); /* the embedding's output */
    break;
  default:
    unsupported(x, op);
    break;
  }
}

/* The backward pass of op OP outside the blocks, its weight and bias gradients into DW and DB
 * (added to with ACC_W and ACC_B). */
static void
backward_edge(Ctx *x, const StwGraphOp *op, float *dw, float *db, gboolean acc_w, gboolean acc_b)
{
  StwTrainer *t = x->t;
  int B = (int)t->c.batch, T = (int)t->c.context, C = (int)t->c.width, V = 256;
  gsize BTC = (gsize)B * T * C;
  switch (op->kind) {
  case STW_OP_LOSS:
    t->dlogits = act(x, (gsize)B * T * V);
    if (!x->failed)
      CX->crossentropy_backward(CX, t->dlogits, t->probs, t->d_targets, B, T, V);
    release_tokens(x, &t->d_targets);
    release(x, &t->probs);
    release(x, &t->losses);
    release(x, &t->logits);
    break;
  case STW_OP_LM_HEAD:
    t->dlnf = act(x, BTC);
    if (!x->failed)
      CX->matmul_backward(CX, t->dlnf, dw, NULL, t->dlogits, t->lnf, P(x, 0), B, T, C, V, acc_w);
    release(x, &t->dlogits);
    break;
  case STW_OP_NORM_FINAL:
    t->dx = act(x, BTC);
    zero_unless(x, t->dx, FALSE, BTC); /* the residual stream's gradient: LayerNorms add into it */
    if (!x->failed)
      CX->layernorm_backward(CX, t->dx, dw, db, t->dlnf, t->blocks[t->c.layers - 1].res3, P(x, 0),
                             t->lnf_mean, t->lnf_rstd, B, T, C, acc_w);
    release(x, &t->dlnf);
    release(x, &t->lnf);
    release(x, &t->lnf_mean);
    release(x, &t->lnf_rstd);
    break;
  case STW_OP_EMBED:
    zero_unless(x, dw, acc_w, numel(t, op, 0));
    zero_unless(x, db, acc_b, numel(t, op, 1));
    if (!x->failed)
      CX->encoder_backward(CX, dw, db, t->dx, t->d_inputs, B, T, C);
    release_tokens(x, &t->d_inputs);
    release(x, &t->dx);
    break;
  default:
    unsupported(x, op);
    break;
  }
}

static void
backward_op(Ctx *x, guint k)
{
  StwTrainer *t = x->t;
  const StwGraphOp *op = t->graph->ops->pdata[k];
  gboolean acc_w = FALSE, acc_b = FALSE;
  float *dw = op->params->len > 0 ? grad_in(x, op, 0, &acc_w) : NULL;
  float *db = op->params->len > 1 ? grad_in(x, op, 1, &acc_b) : NULL;
  if (!x->failed && op->layer >= 0) {
    /* a block's weights are never tied: weight and bias gradients are first writes alike */
    g_assert(acc_w == acc_b || db == NULL);
    backward_block(x, op, &t->blocks[op->layer], dw, db, acc_w);
  } else if (!x->failed) {
    backward_edge(x, op, dw, db, acc_w, acc_b);
  }
  if (dw != NULL)
    grad_out(x, op, 0, &dw);
  if (db != NULL)
    grad_out(x, op, 1, &db);
}

/* The next global batch, world x batch x context tokens from the text's position on; this rank
 * trains on its slice of it (rank r: the r-th), the same for a seed and world size every run. */
static void
next_batch(StwTrainer *t)
{
  gsize n = t->c.batch * t->c.context, global = n * t->world;
  if (t->pos > t->len || t->len - t->pos < global + 1) /* no wrap, whatever pos holds */
    t->pos = 0;
  const guint8 *slice = t->text + t->pos + (gsize)t->rank * n;
  for (gsize i = 0; i < n; i++) {
    t->inputs[i] = slice[i];
    t->targets[i] = slice[i + 1];
  }
  t->pos += global;
}

void
stw_trainer_set_batch(StwTrainer *t, const int *inputs, const int *targets)
{
  gsize n = t->c.batch * t->c.context;
  memcpy(t->inputs, inputs, n * sizeof(int));
  memcpy(t->targets, targets, n * sizeof(int));
  t->fixed_batch = TRUE;
}

void
stw_trainer_set_grad_sink(StwTrainer *t, float **sink)
{
  t->grad_sink = sink;
}

/* Copies TENSOR's gradient (in its compute copy PARAM) to the sink, as fp32. */
static void
sink_gradient(StwTrainer *t, guint32 tensor, gconstpointer param, gboolean on_device)
{
  guint64 n = stw_trace_tensor(t->model, tensor)->numel;
  gsize bytes = n * stw_dtype_bytes(t->c.dtype);
  g_autofree guint8 *host = g_malloc(MAX(bytes, 1));
  if (on_device)
    t->cx->download(t->cx, host, param, bytes);
  else
    memcpy(host, param, bytes);
  stw_compute_cpu()->widen(stw_compute_cpu(), t->grad_sink[tensor], host, t->c.dtype, n);
}

static gboolean
run_op(Ctx *x, const char *name, StwStage stage, const GArray *params, gboolean grads)
{
  const guint32 *ids = (const guint32 *)params->data;
  return stw_runtime_op_begin(x->t->rt, name, stage, ids, params->len, ids,
                              grads ? params->len : 0, x->error);
}

/* Whether op K ends its block's forward (the next op is another block's or none). */
static gboolean
ends_block(const StwTrainer *t, guint k)
{
  const StwGraphOp *op = t->graph->ops->pdata[k];
  return op->layer >= 0 && (k + 1 == t->graph->ops->len ||
                            ((const StwGraphOp *)t->graph->ops->pdata[k + 1])->layer != op->layer);
}

/* What block B keeps for its backward, but its input (what it is recomputed from) and its
 * output (the next block's input): what recomputing or offloading it takes off the device. */
#define KEPT_FOR_BACKWARD(b)                                                                  \
  { &(b)->ln1, &(b)->ln1_mean, &(b)->ln1_rstd, &(b)->qkv, &(b)->preatt, &(b)->att, &(b)->lse,  \
    &(b)->atty, &(b)->res2, &(b)->ln2, &(b)->ln2_mean, &(b)->ln2_rstd, &(b)->fch,             \
    &(b)->fch_gelu }

/* A recomputed block at the end of its forward: what it kept for backward goes. */
static void
drop_block(Ctx *x, Block *b)
{
  float **kept[] = KEPT_FOR_BACKWARD(b);
  for (gsize i = G_N_ELEMENTS(kept); i-- > 0;)
    release(x, kept[i]);
}

/* An offloaded block at the end of its forward: what it kept for backward goes to the runtime,
 * which moves it to host memory and back as the plan says. */
static void
offload_block(Ctx *x, Block *b, guint32 layer)
{
  float **kept[] = KEPT_FOR_BACKWARD(b);
  gpointer *slots[G_N_ELEMENTS(kept)];
  guint n = 0;
  for (gsize i = 0; i < G_N_ELEMENTS(kept); i++)
    if (*kept[i] != NULL) /* (naive attention's scores, or flash attention's LSE) */
      slots[n++] = (gpointer *)kept[i];
  if (!x->failed && !stw_runtime_offload(x->t->rt, layer, slots, n, x->error))
    x->failed = TRUE;
}

/* Block LAYER's forward ops again, right before its backward, as the plan's NAME.recompute bwd
 * ops: what the forward kept is made again (bitwise: the same kernels on the same inputs). */
static gboolean
recompute_block(Ctx *x, guint last)
{
  StwTrainer *t = x->t;
  guint first = last;
  gint32 layer = ((const StwGraphOp *)t->graph->ops->pdata[last])->layer;
  while (first > 0 && ((const StwGraphOp *)t->graph->ops->pdata[first - 1])->layer == layer)
    first--;
  x->recomputing = TRUE;
  for (guint k = first; k <= last && !x->failed; k++) {
    const StwGraphOp *op = t->graph->ops->pdata[k];
    g_autofree char *name = g_strconcat(op->name, ".recompute", NULL);
    if (!run_op(x, name, STW_STAGE_BWD, op->params, FALSE))
      return FALSE;
    weights_in(x, op);
    forward_op(x, k);
    weights_out(x);
    stw_runtime_op_end(t->rt);
  }
  x->recomputing = FALSE;
  return TRUE;
}

gboolean
stw_trainer_step(StwTrainer *t, float *loss, GError **error)
{
  if (!t->fixed_batch)
    next_batch(t);
  t->fixed_batch = FALSE;
  memset(t->grad_written, 0, t->model->tensors->len);
  Ctx x = { .t = t, .error = error };
  guint n_ops = t->graph->ops->len;
  stw_runtime_iteration_begin(t->rt);
  for (guint k = 0; k < n_ops && !x.failed; k++) {
    const StwGraphOp *op = t->graph->ops->pdata[k];
    if (!run_op(&x, op->name, STW_STAGE_FWD, op->params, FALSE))
      return FALSE;
    weights_in(&x, op);
    forward_op(&x, k);
    weights_out(&x);
    StwBlockChoice c = t->choice != NULL && ends_block(t, k) ? t->choice[op->layer]
                                                             : STW_BLOCK_KEEP;
    if (c == STW_BLOCK_RECOMPUTE)
      drop_block(&x, &t->blocks[op->layer]);
    else if (c == STW_BLOCK_OFFLOAD)
      offload_block(&x, &t->blocks[op->layer], (guint32)op->layer);
    stw_runtime_op_end(t->rt);
  }
  /* the global batch's loss: the mean of the ranks' (their slices are the same size) */
  if (!x.failed && t->world > 1 &&
      !stw_comm_finish(t->comm, t->comm->all_reduce(t->comm, &t->loss, 1, STW_DTYPE_FP32), "the loss", error))
    return FALSE;
  if (!x.failed && !isfinite(t->loss)) {
    /* stopped before backward: the model state is still the last step's */
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_DIVERGED,
                "step %" G_GUINT64_FORMAT ": the loss is %g: training diverged (lower the "
                "learning rate); the model state of step %" G_GUINT64_FORMAT " is kept, and no "
                "checkpoint is written from here", t->step + 1, t->loss, t->step);
    return FALSE;
  }
  for (guint k = n_ops; k-- > 0 && !x.failed;) {
    const StwGraphOp *op = t->graph->ops->pdata[k];
    if (t->choice != NULL && ends_block(t, k) && t->choice[op->layer] == STW_BLOCK_RECOMPUTE &&
        !recompute_block(&x, k))
      return FALSE;
    g_autofree char *name = g_strconcat(op->name, ".bwd", NULL);
    if (!run_op(&x, name, STW_STAGE_BWD, op->params, TRUE))
      return FALSE;
    weights_in(&x, op);
    backward_op(&x, k);
    weights_out(&x);
    stw_runtime_op_end(t->rt);
  }
  if (!x.failed && !t->cx->ok(t->cx)) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_DEVICE, "%s", t->cx->error);
    x.failed = TRUE;
  }
  if (x.failed)
    return FALSE;
  /* profile mode on several ranks: every rank steps the mean gradient (a plan's replay
   * reduce-scatters them at its own moments instead) */
  if (stw_runtime_mode(t->rt) == STW_RUNTIME_PROFILE && !stw_runtime_reduce_gradients(t->rt, error))
    return FALSE;
  t->step++;
  g_autoptr(GArray) stepped = g_array_new(FALSE, FALSE, sizeof(guint32));
  StwAdamConfig adam = t->c.adam; /* the moments in the layout's dtype (a plan may choose) */
  adam.state_dtype = stw_runtime_state_dtype(t->rt);
  for (guint32 id = 0; id < t->model->tensors->len; id++) {
    const StwTensor *ten = stw_trace_tensor(t->model, id);
    g_autofree char *name = g_strconcat("adam.", ten->name, NULL);
    if (!stw_runtime_op_begin(t->rt, name, STW_STAGE_OPTIM, &id, 1, NULL, 0, error))
      return FALSE;
    /* the tensor itself; on several ranks, this rank's own chunk at rank 0's op of its own */
    stw_runtime_optim_tensors(t->rt, id, stepped);
    for (guint i = 0; i < stepped->len; i++) {
      guint32 tensor = g_array_index(stepped, guint32, i);
      guint64 numel = stw_trace_tensor(t->model, tensor)->numel;
      gpointer param, m, v;
      float *master;
      gboolean on_device = stw_runtime_optim(t->rt, tensor, &param, &master, &m, &v);
      if (t->grad_sink != NULL)
        sink_gradient(t, tensor, param, on_device);
      /* the compute copy holds the gradient; the master weights get the update */
      if (on_device)
        t->cx->adam(t->cx, param, t->c.dtype, master, m, v, numel, &adam, t->step);
      else if (stw_runtime_optim_weights_in_copy(t->rt, tensor))
        stw_compute_host_adam_to_copy(param, master, m, v, numel, &adam, t->step);
      else
        stw_compute_host_adam(param, t->c.dtype, master, m, v, numel, &adam, t->step);
    }
    stw_runtime_op_end(t->rt);
  }
  if (!t->cx->ok(t->cx)) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_DEVICE, "%s", t->cx->error);
    return FALSE;
  }
  if (!stw_runtime_iteration_end(t->rt, error))
    return FALSE;
  *loss = t->loss;
  return TRUE;
}

StwRuntime *
stw_trainer_runtime(StwTrainer *t)
{
  return t->rt;
}

const StwTrace *
stw_trainer_model_of(StwTrainer *t)
{
  return t->model;
}

StwTrace *
stw_trainer_trace(StwTrainer *t)
{
  StwTrace *tr = stw_runtime_trace(t->rt);
  const StwModelGraph *g = t->graph;
  guint32 n = g->ops->len;
  if (tr == NULL || tr->blocks->len > 0 || tr->ops->len < 2 * n)
    return tr;
  /* the trace's ops are the graph's forward ops in order, then their backward ops in reverse */
  guint64 e = stw_dtype_bytes(g->dtype);
  for (guint64 l = 0; l < g->config.layers; l++) {
    guint32 first = G_MAXUINT32, last = 0;
    for (guint32 k = 0; k < n; k++) {
      if (((const StwGraphOp *)g->ops->pdata[k])->layer == (gint32)l) {
        first = MIN(first, k);
        last = k;
      }
    }
    if (first == G_MAXUINT32 || last + 1 >= n)
      continue;
    g_autofree char *name = g_strdup_printf("h%" G_GUINT64_FORMAT, l);
    StwBlock *b = stw_trace_add_block(tr, name, first, last, 2 * n - 1 - last, 2 * n - 1 - first);
    const StwGraphOp *in = g->ops->pdata[first], *out = g->ops->pdata[last];
    b->input_bytes = in->in_bytes / e * sizeof(float);
    guint64 output = out->out_bytes / e * sizeof(float);
    guint64 before = stw_trace_op(tr, first)->nonmodel_bytes;
    guint64 after = stw_trace_op(tr, last + 1)->nonmodel_bytes;
    b->saved_bytes = after + b->input_bytes > before + output
                         ? after + b->input_bytes - before - output : 0;
    for (guint32 k = first; k <= last; k++)
      b->forward_ns += stw_trace_op(tr, k)->duration_ns;
  }
  return tr;
}

guint64
stw_trainer_step_count(StwTrainer *t)
{
  return t->step;
}

gboolean
stw_trainer_weights(StwTrainer *t, guint32 tensor, float *out, GError **error)
{
  guint64 n = stw_trace_tensor(t->model, tensor)->numel;
  g_autofree float *m = g_new(float, n), *v = g_new(float, n);
  return stw_runtime_read_state(t->rt, tensor, out, m, v, error);
}
