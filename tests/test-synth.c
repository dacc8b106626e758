/* test-synth.c — synthesized traces: op structure, exact activation bytes, modelled times. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <glib.h>

#include <stowage/synth.h>

#include "json.h"
#include "testutil.h"

static const StwOp *
find_op_or_null(const StwTrace *t, const char *name)
{
  for (guint i = 0; i < t->ops->len; i++) {
    if (g_str_equal(stw_trace_op(t, i)->name, name))
      return stw_trace_op(t, i);
  }
  return NULL;
}

static const StwOp *
find_op(const StwTrace *t, const char *name)
{
  const StwOp *o = find_op_or_null(t, name);
  if (o == NULL)
    g_error("no op %s", name);
  return o;
}

/* CFG synthesized with OPT on the default profile. */
static StwTrace *
synth_on_default(const StwModelConfig *cfg, const StwSynthOptions *opt)
{
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  GError *error = NULL;
  StwTrace *t = stw_synth_trace(cfg, opt, &hw, &error);
  g_assert_no_error(error);
  return t;
}

/* A 1-layer GPT, d = 4, ffn 16, vocab 10, 2 heads, its head tied to its embedding. */
static const StwModelConfig tiny_gpt = { .name = "tiny", .arch = STW_ARCH_GPT, .layers = 1,
                                         .hidden = 4, .heads = 2, .kv_heads = 2, .ffn = 16,
                                         .vocab = 10, .max_seq = 8, .tied = TRUE };

/* A 1-layer GPT of 6 tokens, d = 4, ffn 16, vocab 10, 2 heads, fp32. */
static StwTrace *
synth_tiny_kernels(gboolean checkpointing, StwAttention attention, StwKernels kernels)
{
  StwModelConfig cfg = tiny_gpt;
  StwSynthOptions opt = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_FP32,
                          .checkpointing = checkpointing, .attention = attention,
                          .kernels = kernels };
  return synth_on_default(&cfg, &opt);
}

static StwTrace *
synth_tiny(gboolean checkpointing, StwAttention attention)
{
  return synth_tiny_kernels(checkpointing, attention, STW_KERNELS_FUSED);
}

/* The activation bytes of a 1-layer GPT (T = 6 tokens, d = 4, ffn 16, vocab 10, 2 heads, fp32),
 * worked out by hand from docs/synth.md: io = 2*T*8 = 96, one hidden state T*d*4 = 96 bytes,
 * LayerNorm statistics T*8 = 48, qkv 288, scores B*a*S*S*4 = 144, MLP 384, logits 240. */
static void
test_tiny_exact_bytes(void)
{
  g_autoptr(StwTrace) t = synth_tiny(FALSE, STW_ATTENTION_NAIVE);
  static const struct {
    const char *op;
    guint64 start, peak;
  } expect[] = {
    { "embed", 96, 192 },
    { "h0.ln_1", 192, 336 },
    { "h0.attn.qkv", 336, 624 },
    { "h0.attn.core", 624, 1008 },  /* + output 96 + scores 144 + softmax kept 144 */
    { "h0.attn.proj", 864, 960 },   /* the raw scores are gone */
    { "h0.ln_2", 960, 1104 },
    { "h0.mlp.fc", 1104, 1488 },
    { "h0.mlp.gelu", 1488, 1872 },
    { "h0.mlp.proj", 1872, 1968 },
    { "ln_f", 1968, 2112 },
    { "lm_head", 2112, 2352 },
    { "loss", 2352, 2620 },         /* + fp32 softmax 240 + log-sum-exp 24 + the loss 4 */
    { "loss.bwd", 2380, 2860 },     /* + grad of logits 240 + fp32 softmax 240 */
    { "lm_head.bwd", 2352, 2448 },
    { "h0.mlp.proj.bwd", 1968, 2352 }, /* its grad-out stays for the residual path */
    { "h0.mlp.gelu.bwd", 1968, 2352 },
    { "h0.mlp.fc.bwd", 1584, 1680 },
    { "h0.ln_2.bwd", 1200, 1296 },  /* then frees the kept residual gradient too */
    { "h0.attn.proj.bwd", 960, 1056 },
    { "embed.bwd", 192, 192 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(expect); i++) {
    const StwOp *op = find_op(t, expect[i].op);
    g_test_message("%s", expect[i].op);
    g_assert_cmpuint(op->nonmodel_bytes, ==, expect[i].start);
    g_assert_cmpuint(op->nonmodel_peak_bytes, ==, expect[i].peak);
  }
  g_assert_cmpuint(t->ops->len, ==, 12 + 12 + 16);
  /* gradients: every parameter's gradient is written in backward, wte's twice (tied) */
  g_autofree guint *writes = g_new0(guint, t->tensors->len);
  for (guint i = 0; i < t->ops->len; i++) {
    const StwOp *op = stw_trace_op(t, i);
    for (guint k = 0; k < op->n_grads; k++)
      writes[op->grads[k]]++;
  }
  g_assert_cmpuint(writes[0], ==, 2);
  for (guint i = 1; i < t->tensors->len; i++)
    g_assert_cmpuint(writes[i], ==, 1);
}

/* The index of the K-th (from 0) op named NAME in T. */
static guint
nth_op(const StwTrace *t, const char *name, guint k)
{
  for (guint i = 0; i < t->ops->len; i++)
    if (g_str_equal(stw_trace_op(t, i)->name, name) && k-- == 0)
      return i;
  g_error("no op %s", name);
  return 0;
}

/* Gradient accumulation (synth --micro-steps 3) on the same GPT: the forward-backward ops three
 * times, then the optimizer's; the gradients PyTorch's .grad tensors (324 parameters, 1,296
 * bytes), each held from the first op that writes it to the optimizer step, a later write (the
 * tied wte's second, the next micro-steps') computed apart and added in at its op; every run's
 * ops as long as the single run's. */
static void
test_micro_steps(void)
{
  g_autoptr(StwTrace) one = synth_tiny(FALSE, STW_ATTENTION_NAIVE);
  StwModelConfig cfg = tiny_gpt;
  StwSynthOptions opt = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_FP32, .micro_steps = 3 };
  g_autoptr(StwTrace) t = synth_on_default(&cfg, &opt);
  g_assert_cmpuint(t->ops->len, ==, 3 * 24 + 16);
  g_assert_cmpuint(t->model.micro_steps, ==, 3);
  g_assert_cmpint(t->model.gradients, ==, STW_GRADIENTS_FRAMEWORK);
  g_assert_cmpuint(t->model.batch, ==, 6); /* the iteration's sequences */
  g_assert_cmpuint(one->model.batch, ==, 2);
  guint64 grads = 0;
  for (guint i = 0; i < t->tensors->len; i++)
    grads += stw_trace_tensor(t, i)->numel * 4;
  g_assert_cmpuint(grads, ==, 1296);
  static const struct {
    const char *op;
    guint run;
    guint64 start, peak;
  } expect[] = {
    { "embed", 0, 96, 192 },          /* as the single run's */
    { "loss.bwd", 0, 2380, 2860 },
    { "lm_head.bwd", 0, 2352, 2448 + 160 }, /* wte's gradient, held */
    { "embed.bwd", 0, 192 + 1296 - 128, 192 + 1296 - 128 + 128 + 160 }, /* wpe's new, wte's added */
    { "embed", 1, 96 + 1296, 192 + 1296 }, /* the gradients through the next run */
    { "lm_head.bwd", 1, 2352 + 1296, 2448 + 1296 + 160 },
    { "embed.bwd", 2, 192 + 1296, 192 + 1296 + 128 + 160 },
    { "adam.wte", 0, 1296, 1296 }, /* all of them to the step */
  };
  for (gsize i = 0; i < G_N_ELEMENTS(expect); i++) {
    const StwOp *op = stw_trace_op(t, nth_op(t, expect[i].op, expect[i].run));
    g_test_message("%s, run %u", expect[i].op, expect[i].run);
    g_assert_cmpuint(op->nonmodel_bytes, ==, expect[i].start);
    g_assert_cmpuint(op->nonmodel_peak_bytes, ==, expect[i].peak);
  }
  for (guint run = 0; run < 3; run++)
    for (guint i = 0; i < 24; i++) {
      const StwOp *a = stw_trace_op(one, i), *b = stw_trace_op(t, run * 24 + i);
      g_assert_cmpstr(a->name, ==, b->name);
      g_assert_cmpuint(a->duration_ns, ==, b->duration_ns);
      g_assert_cmpuint(a->flops, ==, b->flops);
    }
  /* the blocks are the last run's */
  g_assert_cmpuint(t->blocks->len, ==, 1);
  const StwBlock *b = &g_array_index(t->blocks, StwBlock, 0);
  g_assert_cmpuint(b->fwd_first, ==, 2 * 24 + 1);
  g_assert_cmpuint(b->saved_bytes, ==, g_array_index(one->blocks, StwBlock, 0).saved_bytes);
}

/* The same accumulation with the gradients on the host (synth --gradients host): none held on
 * the device between micro-steps or to the step. A gradient is there at the op that writes
 * it, and leaves after its micro-step's last write: the tied wte's from lm_head.bwd (its first)
 * to embed.bwd (its last, where it is added to and wpe's made), every other at its op alone.
 * Every op starts and peaks as the single run's (gradients in the chunks, not counted) but for
 * the gradients its op writes and wte's between its two writes; the ops, times and FLOPs as
 * with the gradients on the device. */
static void
test_host_gradients(void)
{
  g_autoptr(StwTrace) one = synth_tiny(FALSE, STW_ATTENTION_NAIVE);
  StwModelConfig cfg = tiny_gpt;
  StwSynthOptions opt = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_FP32, .micro_steps = 3 };
  g_autoptr(StwTrace) framework = synth_on_default(&cfg, &opt);
  opt.host_gradients = STW_GRADIENTS_HOST;
  g_autoptr(StwTrace) t = synth_on_default(&cfg, &opt);
  g_assert_cmpint(t->model.gradients, ==, STW_GRADIENTS_HOST);
  g_assert_cmpuint(stw_trace_host_gradient_bytes(t), ==, 1296);
  g_assert_cmpuint(stw_trace_host_gradient_bytes(framework), ==, 0);
  g_assert_cmpuint(t->ops->len, ==, framework->ops->len);
  guint32 head = nth_op(one, "lm_head.bwd", 0), embed = nth_op(one, "embed.bwd", 0);
  for (guint run = 0; run < 3; run++)
    for (guint i = 0; i < 24; i++) {
      const StwOp *a = stw_trace_op(one, i), *b = stw_trace_op(t, run * 24 + i);
      guint64 grads = 0;
      for (guint32 k = 0; k < a->n_grads; k++)
        grads += stw_trace_tensor(t, a->grads[k])->numel * 4;
      guint64 wte = i > head && i <= embed ? 160 : 0; /* held between its writes */
      g_test_message("run %u, %s", run, a->name);
      g_assert_cmpstr(a->name, ==, b->name);
      g_assert_cmpuint(b->nonmodel_bytes, ==, a->nonmodel_bytes + wte);
      g_assert_cmpuint(b->nonmodel_peak_bytes, ==, a->nonmodel_peak_bytes + wte + grads);
      g_assert_cmpuint(b->duration_ns, ==, stw_trace_op(framework, run * 24 + i)->duration_ns);
    }
  g_assert_cmpuint(stw_trace_op(t, head)->nonmodel_peak_bytes, ==, 2448 + 160);
  g_assert_cmpuint(stw_trace_op(t, embed)->nonmodel_bytes, ==, 192 + 160);
  g_assert_cmpuint(stw_trace_op(t, embed)->nonmodel_peak_bytes, ==, 192 + 160 + 128 + 160);
  const StwOp *adam = stw_trace_op(t, nth_op(t, "adam.wte", 0));
  g_assert_cmpuint(adam->nonmodel_bytes, ==, 0); /* nothing on the device to the step */
  g_assert_cmpuint(adam->nonmodel_peak_bytes, ==, 160); /* its gradient, for a step there */
}

/* The chunked loss (synth --loss chunked) on the same GPT: pieces of 2 tokens (T = 6 over
 * ceil(10 / 4) = 3, to a power of two), a piece's logits 2 x 10 x 4 = 80 bytes at a time; the
 * hidden states' gradient (96) and the tied head's weight gradient (160) kept from the forward
 * to the backward instead of the logits (240) and the fp32 softmax; the forward's input not
 * kept; every op before and after the head as with the full loss, and the same FLOPs. With LoRA
 * (the head frozen) no weight gradient is kept. */
static void
test_chunked_loss(void)
{
  g_assert_cmpuint(stw_model_loss_piece(6, 10, 4), ==, 2);
  g_assert_cmpuint(stw_model_loss_piece(3, 10, 1000), ==, 3);  /* never more than the tokens */
  g_assert_cmpuint(stw_model_loss_piece(1, 50257, 768), ==, 1);
  g_assert_cmpuint(stw_model_loss_piece(256, 50257, 768), ==, 4);
  g_assert_cmpuint(stw_model_loss_piece(8192, 128256, 4096), ==, 256); /* Llama-3 at 8k */
  StwModelConfig cfg = tiny_gpt;
  StwSynthOptions opt = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_FP32,
                          .attention = STW_ATTENTION_NAIVE };
  g_autoptr(StwTrace) full = synth_on_default(&cfg, &opt);
  opt.loss = STW_LOSS_CHUNKED;
  g_autoptr(StwTrace) t = synth_on_default(&cfg, &opt);
  g_assert_cmpint(full->model.loss, ==, STW_LOSS_FULL);
  g_assert_cmpint(t->model.loss, ==, STW_LOSS_CHUNKED);
  static const struct {
    const char *op;
    guint64 start, peak;
  } expect[] = {
    { "lm_head", 2112, 2112 + 4 + 80 + 96 + 160 },
    { "loss", 2276, 2280 },      /* the piece gone, the input not kept: 2112 - 96 + 4 + 256 */
    { "loss.bwd", 2276, 2280 },
    { "lm_head.bwd", 2276, 2372 }, /* the input's gradient; then the kept gradients go */
  };
  for (gsize i = 0; i < G_N_ELEMENTS(expect); i++) {
    const StwOp *op = find_op(t, expect[i].op);
    g_test_message("%s", expect[i].op);
    g_assert_cmpuint(op->nonmodel_bytes, ==, expect[i].start);
    g_assert_cmpuint(op->nonmodel_peak_bytes, ==, expect[i].peak);
  }
  g_assert_cmpuint(find_op(full, "loss.bwd")->nonmodel_peak_bytes, ==, 2860);
  g_assert_cmpuint(t->ops->len, ==, full->ops->len);
  guint64 flops_full = 0, flops = 0;
  for (guint i = 0; i < t->ops->len; i++) {
    const StwOp *a = stw_trace_op(full, i), *b = stw_trace_op(t, i);
    g_assert_cmpstr(a->name, ==, b->name);
    flops_full += a->flops;
    flops += b->flops;
    gboolean head = g_str_has_prefix(a->name, "lm_head") || g_str_has_prefix(a->name, "loss");
    if (!head) {
      g_assert_cmpuint(a->nonmodel_bytes, ==, b->nonmodel_bytes);
      g_assert_cmpuint(a->nonmodel_peak_bytes, ==, b->nonmodel_peak_bytes);
    }
  }
  g_assert_cmpuint(flops, ==, flops_full);
  /* the model records it, and it survives the file */
  GError *error = NULL;
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(text, "\"loss\":\"chunked\""));
  g_autoptr(StwTrace) back = stw_trace_parse("chunked.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpint(back->model.loss, ==, STW_LOSS_CHUNKED);
  g_autofree char *d0 = stw_trace_digest(t), *d1 = stw_trace_digest(back),
                  *d2 = stw_trace_digest(full);
  g_assert_cmpstr(d0, ==, d1);
  g_assert_cmpstr(d0, !=, d2);
  /* LoRA: the head is frozen, only the hidden states' gradient is kept */
  opt.lora_rank = 1;
  g_autoptr(StwTrace) lora = synth_on_default(&cfg, &opt);
  const StwOp *head = find_op(lora, "lm_head");
  g_assert_cmpuint(head->nonmodel_peak_bytes - head->nonmodel_bytes, ==, 4 + 80 + 96);
}

/* The loss in the logits' own dtype (synth --loss native) on the same GPT in bf16: the shifted
 * logits' copy and log_softmax's output 2 bytes an element where the fp32 loss holds 4, forward
 * and backward (T V = 6 x 10: 120 bytes less at the loss's two ops), every other op as with
 * the full loss; the trace says it; refused under autocast and on fp32 logits, by name. */
static void
test_native_loss(void)
{
  StwModelConfig cfg = tiny_gpt;
  StwSynthOptions opt = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_BF16,
                          .attention = STW_ATTENTION_NAIVE, .kernels = STW_KERNELS_EAGER };
  g_autoptr(StwTrace) full = synth_on_default(&cfg, &opt);
  opt.loss = STW_LOSS_NATIVE;
  g_autoptr(StwTrace) t = synth_on_default(&cfg, &opt);
  g_assert_cmpint(t->model.loss, ==, STW_LOSS_NATIVE);
  g_assert_cmpuint(t->ops->len, ==, full->ops->len);
  for (guint i = 0; i < t->ops->len; i++) {
    const StwOp *a = stw_trace_op(full, i), *b = stw_trace_op(t, i);
    g_assert_cmpstr(a->name, ==, b->name);
    gboolean loss = g_str_has_prefix(a->name, "loss");
    g_test_message("%s", a->name);
    g_assert_cmpuint(b->nonmodel_bytes, ==, a->nonmodel_bytes);
    g_assert_cmpuint(b->nonmodel_peak_bytes, ==, a->nonmodel_peak_bytes - (loss ? 120 : 0));
    g_assert_cmpuint(b->flops, ==, a->flops);
  }
  /* fewer bytes moved at the loss: 4e T V forward, not 12 T V */
  g_assert_cmpuint(find_op(t, "loss")->duration_ns, <, find_op(full, "loss")->duration_ns);
  GError *error = NULL;
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(text, "\"loss\":\"native\""));
  g_autoptr(StwTrace) back = stw_trace_parse("native.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpint(back->model.loss, ==, STW_LOSS_NATIVE);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  opt.amp = TRUE;
  g_assert_null(stw_synth_trace(&cfg, &opt, &hw, &error));
  stw_assert_error_contains(error, "--loss native computes the cross-entropy in the logits' "
                                   "16-bit dtype, and autocast computes it in fp32 (--amp): that "
                                   "is --loss full");
  g_clear_error(&error);
  opt.amp = FALSE;
  opt.dtype = STW_DTYPE_FP32;
  g_assert_null(stw_synth_trace(&cfg, &opt, &hw, &error));
  stw_assert_error_contains(error, "the model's logits are fp32 (--dtype fp32)");
  g_clear_error(&error);
}

static void
test_tiny_checkpointing(void)
{
  g_autoptr(StwTrace) plain = synth_tiny(FALSE, STW_ATTENTION_NAIVE);
  g_autoptr(StwTrace) ckpt = synth_tiny(TRUE, STW_ATTENTION_NAIVE);
  /* 8 block ops are recomputed in backward */
  g_assert_cmpuint(ckpt->ops->len, ==, plain->ops->len + 8);
  const StwOp *r = find_op(ckpt, "h0.attn.qkv.recompute");
  g_assert_cmpint(r->stage, ==, STW_STAGE_BWD);
  g_assert_cmpuint(r->n_params, ==, 2);
  g_assert_cmpuint(r->n_grads, ==, 0);
  /* only the block input (96) survives the block in forward: ln_f starts at io + embed out */
  g_assert_cmpuint(find_op(ckpt, "ln_f")->nonmodel_bytes, ==, 96 + 96 + 96);
  g_assert_cmpuint(find_op(plain, "ln_f")->nonmodel_bytes, ==, 1968);
  /* the recomputation runs right before the block's backward and in order */
  guint qkv = 0, core_bwd = 0, ln1 = 0;
  for (guint i = 0; i < ckpt->ops->len; i++) {
    const char *n = stw_trace_op(ckpt, i)->name;
    if (g_str_equal(n, "h0.ln_1.recompute"))
      ln1 = i;
    if (g_str_equal(n, "h0.attn.qkv.recompute"))
      qkv = i;
    if (g_str_equal(n, "h0.attn.core.bwd"))
      core_bwd = i;
  }
  g_assert_cmpuint(ln1 + 1, ==, qkv);
  g_assert_cmpuint(qkv, <, core_bwd);
}

/* DeepSpeed's cpu_checkpointing on a 2-layer tiny GPT (T = 6 tokens, d = 4, fp32): each
 * block's input, 96 bytes, leaves the device once the next block's forward is done and comes
 * back as the backward of the block after it begins; every op holds exactly the inputs on the
 * host less than the checkpointed trace, and nothing else changes. */
static void
test_checkpoints_host(void)
{
  StwModelConfig cfg = tiny_gpt;
  cfg.layers = 2;
  StwSynthOptions o = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_FP32, .checkpointing = TRUE };
  g_autoptr(StwTrace) dev = synth_on_default(&cfg, &o);
  o.checkpoints = STW_CHECKPOINTS_HOST;
  g_autoptr(StwTrace) host = synth_on_default(&cfg, &o);
  g_assert_cmpuint(host->ops->len, ==, dev->ops->len);
  g_assert_cmpuint(host->blocks->len, ==, 2);
  g_autoptr(GArray) none = stw_trace_activation_moves(dev);
  g_autoptr(GArray) moves = stw_trace_activation_moves(host);
  g_assert_cmpuint(none->len, ==, 0);
  g_assert_cmpuint(moves->len, ==, 2);
  const StwBlock *h0 = &g_array_index(host->blocks, StwBlock, 0);
  const StwBlock *h1 = &g_array_index(host->blocks, StwBlock, 1);
  const StwActivationMove *m0 = &g_array_index(moves, StwActivationMove, 0);
  const StwActivationMove *m1 = &g_array_index(moves, StwActivationMove, 1);
  g_assert_cmpint(h0->choice, ==, STW_BLOCK_RECOMPUTE_HOST);
  g_assert_cmpint(h1->choice, ==, STW_BLOCK_RECOMPUTE_HOST);
  g_assert_cmpuint(h0->input_bytes, ==, 96);
  g_assert_cmpuint(m0->bytes, ==, 96);
  g_assert_cmpuint(m1->bytes, ==, 96);
  g_assert_cmpuint(m0->out_moment, ==, h0->fwd_last + 1);
  g_assert_cmpuint(m0->out_done, ==, h1->fwd_last + 1);
  g_assert_cmpuint(m0->in_moment, ==, h1->bwd_first);
  g_assert_cmpuint(m0->in_done, ==, h0->bwd_first);
  g_assert_cmpstr(stw_trace_op(host, h0->bwd_first)->name, ==, "h0.ln_1.recompute");
  g_assert_cmpuint(stw_activation_moves_host_peak(moves), ==, 192);
  for (guint32 i = 0; i < host->ops->len; i++) {
    const StwOp *a = stw_trace_op(host, i), *b = stw_trace_op(dev, i);
    guint64 away = 0;
    for (guint k = 0; k < moves->len; k++) {
      const StwActivationMove *m = &g_array_index(moves, StwActivationMove, k);
      away += m->out_done <= i && i < m->in_moment ? m->bytes : 0;
    }
    g_assert_cmpstr(a->name, ==, b->name);
    g_assert_cmpuint(a->nonmodel_bytes + away, ==, b->nonmodel_bytes);
    g_assert_cmpuint(a->nonmodel_peak_bytes + away, ==, b->nonmodel_peak_bytes);
    g_assert_cmpuint(a->duration_ns, ==, b->duration_ns);
  }
  /* at the loss, both inputs are on the host */
  g_assert_cmpuint(find_op(dev, "loss")->nonmodel_bytes - find_op(host, "loss")->nonmodel_bytes,
                   ==, 192);
  /* the choice is the trace's: written, read back, and in its digest */
  GError *error = NULL;
  g_autofree char *text = stw_trace_to_string(host, &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(text, "\"activations\":\"recompute-host\""));
  g_autoptr(StwTrace) back = stw_trace_parse("host.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpint(g_array_index(back->blocks, StwBlock, 1).choice, ==, STW_BLOCK_RECOMPUTE_HOST);
  g_autofree char *d_back = stw_trace_digest(back), *d_host = stw_trace_digest(host);
  g_autofree char *d_dev = stw_trace_digest(dev);
  g_assert_cmpstr(d_back, ==, d_host);
  g_assert_cmpstr(d_host, !=, d_dev);
  /* the planner's decision of the same, from the trace that keeps every block: the same ops,
   * moves and memory outside the blocks' forwards (as for recomputing, test below) */
  o.checkpointing = FALSE;
  o.checkpoints = STW_CHECKPOINTS_DEVICE;
  g_autoptr(StwTrace) kept = synth_on_default(&cfg, &o);
  guint8 all[2] = { STW_BLOCK_RECOMPUTE_HOST, STW_BLOCK_RECOMPUTE_HOST };
  g_autoptr(StwTrace) decided = stw_trace_decide(kept, all, &error);
  g_assert_no_error(error);
  g_assert_true(decided->model.checkpointing);
  g_autoptr(GArray) decided_moves = stw_trace_activation_moves(decided);
  g_assert_cmpuint(decided_moves->len, ==, moves->len);
  for (guint k = 0; k < moves->len; k++) { /* field by field: the struct has padding */
    const StwActivationMove *a = &g_array_index(decided_moves, StwActivationMove, k);
    const StwActivationMove *b = &g_array_index(moves, StwActivationMove, k);
    g_assert_cmpuint(a->block, ==, b->block);
    g_assert_cmpuint(a->out_moment, ==, b->out_moment);
    g_assert_cmpuint(a->out_done, ==, b->out_done);
    g_assert_cmpuint(a->in_moment, ==, b->in_moment);
    g_assert_cmpuint(a->in_done, ==, b->in_done);
    g_assert_cmpuint(a->bytes, ==, b->bytes);
  }
  for (guint32 i = 0; i < host->ops->len; i++) {
    gboolean in_forward = (i > h0->fwd_first && i <= h0->fwd_last) ||
                          (i > h1->fwd_first && i <= h1->fwd_last);
    const StwOp *a = stw_trace_op(decided, i), *b = stw_trace_op(host, i);
    g_assert_cmpstr(a->name, ==, b->name);
    if (!in_forward)
      g_assert_cmpuint(a->nonmodel_bytes, ==, b->nonmodel_bytes);
  }
  /* refused without checkpointing, with segments of several blocks, with micro-steps */
  o.checkpoints = STW_CHECKPOINTS_HOST;
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  g_assert_null(stw_synth_trace(&cfg, &o, &hw, &error));
  stw_assert_error_contains(error, "give --checkpointing with it");
  o.checkpointing = TRUE;
  o.checkpoint_every = 2;
  g_assert_null(stw_synth_trace(&cfg, &o, &hw, &error));
  stw_assert_error_contains(error, "give it without --checkpoint-every");
  o.checkpoint_every = 1;
  o.micro_steps = 2;
  g_assert_null(stw_synth_trace(&cfg, &o, &hw, &error));
  stw_assert_error_contains(error, "give it without --micro-steps");
}

static guint32
op_index(const StwTrace *t, const char *name)
{
  return (guint32)(find_op(t, name) - stw_trace_op(t, 0));
}

/* Autocast (PyTorch's AMP) on the tiny GPT in bf16: the weights fp32 in the trace, and each
 * GEMM's weights cast to 16 bits at its use, kept to its backward: c_attn 60 elements (120 B),
 * attn c_proj 20 (40 B), c_fc 80 (160 B), mlp c_proj 68 (136 B), the tied head 40 (80 B). So
 * ln_f starts 456 B above the run without autocast, the loss's backward 536 B, and the head's
 * backward peaks 616 B above (its 16-bit weight gradient, 80 B, cast into the fp32 one). With
 * checkpointing, autocast's cache holds the block's casts to the forward's end (456 B at ln_f
 * again), and the loss's backward finds only the head's (80 B). */
static void
test_autocast(void)
{
  StwModelConfig cfg = tiny_gpt;
  for (int ck = 0; ck < 2; ck++) {
    StwSynthOptions plain_o = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_BF16,
                                .checkpointing = ck };
    StwSynthOptions amp_o = plain_o;
    amp_o.amp = TRUE;
    g_autoptr(StwTrace) plain = synth_on_default(&cfg, &plain_o);
    g_autoptr(StwTrace) amp = synth_on_default(&cfg, &amp_o);
    g_assert_cmpint(stw_trace_tensor(amp, 0)->dtype, ==, STW_DTYPE_FP32);
    g_assert_cmpint(amp->model.autocast, ==, STW_DTYPE_BF16);
    g_assert_cmpint(plain->model.autocast, ==, STW_DTYPE_FP32);
    g_assert_cmpuint(amp->ops->len, ==, plain->ops->len);
    g_assert_cmpuint(find_op(amp, "ln_f")->nonmodel_bytes - find_op(plain, "ln_f")->nonmodel_bytes,
                     ==, 456);
    g_assert_cmpuint(find_op(amp, "loss.bwd")->nonmodel_bytes -
                         find_op(plain, "loss.bwd")->nonmodel_bytes, ==, ck ? 80 : 536);
    if (!ck)
      g_assert_cmpuint(find_op(amp, "lm_head.bwd")->nonmodel_peak_bytes -
                           find_op(plain, "lm_head.bwd")->nonmodel_peak_bytes, ==, 616);
    /* all of it gone at the end of backward */
    const StwOp *last_a = find_op(amp, "embed.bwd"), *last_p = find_op(plain, "embed.bwd");
    g_assert_cmpuint(last_a->nonmodel_bytes, ==, last_p->nonmodel_bytes);
    g_assert_true(stw_trace_validate(amp, "amp", NULL));
    /* written and read back, the autocast dtype kept, and in the digest */
    g_autofree char *text = stw_trace_to_string(amp, NULL);
    g_autoptr(StwTrace) back = stw_trace_parse("amp.json", text, strlen(text), NULL);
    g_assert_nonnull(back);
    g_assert_cmpint(back->model.autocast, ==, STW_DTYPE_BF16);
    g_autofree char *d1 = stw_trace_digest(amp), *d2 = stw_trace_digest(back);
    g_assert_cmpstr(d1, ==, d2);
  }
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwSynthOptions bad = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_FP32, .amp = TRUE };
  GError *error = NULL;
  g_assert_null(stw_synth_trace(&cfg, &bad, &hw, &error));
  stw_assert_error_contains(error, "--amp computes in 16 bits: give --dtype bf16 or fp16");
  g_clear_error(&error);
}

/* The optimizer's implementations on a profile of round figures (1e12 B/s at full efficiency,
 * 10 us a launch): the tiny GPT's tensors (wte 10 x 4 = 40 elements; h.0.mlp.c_fc.weight 4 x 16 =
 * 64) stepped fused move 32 bytes an element (fp32: gradient, master, moments and the compute
 * copy), foreach 72 (seven passes), and a for-loop's seven launches a tensor at 10 us each bound
 * it: 70 us a tensor; DeepSpeed's step two launches a tensor (its fp64 norm), 20 us. Under fp16
 * autocast GradScaler's unscale_ reads and writes each gradient
 * too (80 bytes with foreach); a fused step takes the scale itself. */
static void
test_optimizer_impl(void)
{
  StwModelConfig cfg = tiny_gpt;
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  hw.hbm_bytes_per_s = 1e12;
  hw.memory_efficiency = 1.0;
  hw.op_overhead_ns = 10000;
  hw.flops_per_s[STW_DTYPE_FP16] = hw.flops_per_s[STW_DTYPE_BF16];
  static const struct {
    StwOptimizerImpl impl;
    gboolean amp;
    guint64 wte_ns, fc_ns; /* wte: 40 elements, h.0.mlp.c_fc.weight: 64 */
  } cases[] = {
    { STW_OPTIMIZER_FUSED, FALSE, 1, 2 },        /* 40 x 32 B = 1,280 B: 1.28 ns */
    { STW_OPTIMIZER_FOREACH, FALSE, 3, 5 },      /* 40 x 72 B: 2.88 ns; 64 x 72: 4.61 */
    { STW_OPTIMIZER_FOR_LOOP, FALSE, 70000, 70001 }, /* the GPU waits on the host (70 us and
                                                      * the fractions carried) */
    { STW_OPTIMIZER_FUSED, TRUE, 1, 2 },         /* fp32 weights: 32 B, no unscale pass */
    { STW_OPTIMIZER_FOREACH, TRUE, 3, 5 },       /* 40 x 80 B = 3.2 ns; 64 x 80: 5.12 */
    { STW_OPTIMIZER_DEEPSPEED, FALSE, 20002, 20003 }, /* 5e + 60 = 80 B an element (40 x 80 B
                                                       * = 3.2 ns), bound by the norm's two
                                                       * launches a tensor: 20 us, the last
                                                       * kernel's half of the work after the
                                                       * last launch, and the fractions
                                                       * carried */
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    StwSynthOptions opt = { .batch = 2, .seq = 3, .dtype = cases[i].amp ? STW_DTYPE_FP16
                                                                        : STW_DTYPE_FP32,
                            .amp = cases[i].amp, .optimizer_impl = cases[i].impl };
    GError *error = NULL;
    g_autoptr(StwTrace) t = stw_synth_trace(&cfg, &opt, &hw, &error);
    g_assert_no_error(error);
    g_assert_cmpint(t->model.optimizer_impl, ==, cases[i].impl);
    g_assert_cmpuint(find_op(t, "adam.wte")->duration_ns, ==, cases[i].wte_ns);
    g_assert_cmpuint(find_op(t, "adam.h.0.mlp.c_fc.weight")->duration_ns, ==, cases[i].fc_ns);
    /* the forward and backward do not change with the optimizer */
    StwSynthOptions fused_o = opt;
    fused_o.optimizer_impl = STW_OPTIMIZER_FUSED;
    g_autoptr(StwTrace) fused = stw_synth_trace(&cfg, &fused_o, &hw, &error);
    g_assert_no_error(error);
    for (guint k = 0; k < t->ops->len; k++)
      if (stw_trace_op(t, k)->stage != STW_STAGE_OPTIM)
        g_assert_cmpuint(stw_trace_op(t, k)->duration_ns, ==,
                         stw_trace_op(fused, k)->duration_ns);
    /* written only when not fused, read back, in the digest */
    g_autofree char *text = stw_trace_to_string(t, NULL);
    g_assert_true((strstr(text, "\"optimizer_impl\"") != NULL) ==
                  (cases[i].impl != STW_OPTIMIZER_FUSED));
    g_autoptr(StwTrace) back = stw_trace_parse("impl.json", text, strlen(text), NULL);
    g_assert_nonnull(back);
    g_assert_cmpint(back->model.optimizer_impl, ==, cases[i].impl);
    g_autofree char *d1 = stw_trace_digest(t), *d2 = stw_trace_digest(back);
    g_assert_cmpstr(d1, ==, d2);
  }
  /* at 10 MB/s the GPU is the slower: only the first tensor waits for its first launch, and
   * the launches of the others are hidden behind the work before them (40 x 72 B = 288 us;
   * 64 x 72 B = 460.8 us) */
  StwHardware slow = hw;
  slow.hbm_bytes_per_s = 1e7;
  StwSynthOptions loop = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_FP32,
                           .optimizer_impl = STW_OPTIMIZER_FOR_LOOP };
  g_autoptr(StwTrace) hidden = stw_synth_trace(&cfg, &loop, &slow, NULL);
  guint first = 0;
  while (stw_trace_op(hidden, first)->stage != STW_STAGE_OPTIM)
    first++;
  g_assert_cmpstr(stw_trace_op(hidden, first)->name, ==, "adam.wte");
  g_assert_cmpuint(find_op(hidden, "adam.wte")->duration_ns, ==, 10000 + 288000);
  g_assert_cmpuint(find_op(hidden, "adam.h.0.mlp.c_fc.weight")->duration_ns, ==, 460800);

  /* a name the reader does not know is refused, said where */
  StwSynthOptions opt = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_FP32,
                          .optimizer_impl = STW_OPTIMIZER_FOREACH };
  g_autoptr(StwTrace) t = stw_synth_trace(&cfg, &opt, &hw, NULL);
  g_autofree char *text = stw_trace_to_string(t, NULL);
  char *at = strstr(text, "\"optimizer_impl\":");
  g_assert_nonnull(at);
  g_autofree char *broken = g_strdup_printf("%.*s\"optimizer_impl\": \"apex\"%s",
                                            (int)(at - text), text,
                                            strchr(strchr(at + 17, '"') + 1, '"') + 1);
  GError *error = NULL;
  g_assert_null(stw_trace_parse("impl.json", broken, strlen(broken), &error));
  stw_assert_error_contains(error, "$.model.optimizer_impl: \"apex\" is not one of \"fused\", "
                                   "\"foreach\", \"for-loop\", \"deepspeed\"");
}

/* model.collectives: written only when blocking (so the traces before it keep their digests),
 * read back, in the digest; the ops themselves the same; a name the reader does not know is
 * refused, said where. */
static void
test_collectives(void)
{
  StwModelConfig cfg = tiny_gpt;
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwSynthOptions opt = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_BF16 };
  GError *error = NULL;
  g_autoptr(StwTrace) overlapped = stw_synth_trace(&cfg, &opt, &hw, &error);
  g_assert_no_error(error);
  opt.collectives = STW_COLLECTIVES_BLOCKING;
  g_autoptr(StwTrace) blocking = stw_synth_trace(&cfg, &opt, &hw, &error);
  g_assert_no_error(error);
  g_autofree char *plain = stw_trace_to_string(overlapped, NULL);
  g_autofree char *text = stw_trace_to_string(blocking, NULL);
  g_assert_null(strstr(plain, "\"collectives\""));
  g_assert_nonnull(strstr(text, "\"collectives\""));
  g_assert_nonnull(strstr(text, "\"blocking\""));
  g_assert_cmpuint(overlapped->ops->len, ==, blocking->ops->len);
  for (guint k = 0; k < blocking->ops->len; k++)
    g_assert_cmpuint(stw_trace_op(blocking, k)->duration_ns, ==,
                     stw_trace_op(overlapped, k)->duration_ns);
  g_autoptr(StwTrace) back = stw_trace_parse("c.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpint(back->model.collectives, ==, STW_COLLECTIVES_BLOCKING);
  g_autofree char *d0 = stw_trace_digest(overlapped), *d1 = stw_trace_digest(blocking),
                  *d2 = stw_trace_digest(back);
  g_assert_cmpstr(d1, ==, d2);
  g_assert_cmpstr(d0, !=, d1);
  char *at = strstr(text, "\"blocking\"");
  g_autofree char *broken = g_strdup_printf("%.*s\"sometimes\"%s", (int)(at - text), text,
                                            at + strlen("\"blocking\""));
  g_assert_null(stw_trace_parse("c.json", broken, strlen(broken), &error));
  stw_assert_error_contains(error, "$.model.collectives: \"sometimes\" is not one of "
                                   "\"overlapped\", \"blocking\"");
}

/* Checkpointed segments: the tiny GPT with 3 blocks (each hidden state 96 B), in segments of 2
 * (h0-h1, h2): only the segments' inputs survive the forward, so ln_f starts at io 96 + 2
 * inputs + the last output = 384 B (480 with every block's input kept, 288 with one segment),
 * and h0 and h1 are recomputed together, after h2's backward and before h1's, noted in h1's
 * backward so that the blocks' backwards stay apart. */
static void
test_checkpoint_segments(void)
{
  StwModelConfig cfg = { .name = "tiny3", .arch = STW_ARCH_GPT, .layers = 3, .hidden = 4,
                         .heads = 2, .kv_heads = 2, .ffn = 16, .vocab = 10, .max_seq = 8,
                         .tied = TRUE };
  guint64 want[] = { 480, 480, 384, 288, 288 };
  guint32 plain_ops = 0;
  for (guint64 every = 0; every <= 4; every++) {
    StwSynthOptions opt = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_FP32,
                            .checkpointing = TRUE, .checkpoint_every = every };
    g_autoptr(StwTrace) t = synth_on_default(&cfg, &opt);
    g_assert_cmpuint(find_op(t, "ln_f")->nonmodel_bytes, ==, want[every]);
    g_assert_true(stw_trace_validate(t, "segments", NULL));
    if (every == 0) {
      plain_ops = t->ops->len;
      continue;
    }
    g_assert_cmpuint(t->ops->len, ==, plain_ops); /* every block recomputed once */
    if (every != 2)
      continue;
    guint32 h2_last = op_index(t, "h2.ln_1.bwd"), h0_first = op_index(t, "h0.ln_1.recompute");
    guint32 h1_last = op_index(t, "h1.mlp.proj.recompute");
    g_assert_cmpuint(h2_last + 1, ==, h0_first);
    g_assert_cmpuint(op_index(t, "h0.mlp.proj.recompute") + 1, ==, op_index(t, "h1.ln_1.recompute"));
    g_assert_cmpuint(h1_last + 1, ==, op_index(t, "h1.mlp.proj.bwd"));
    const StwBlock *b0 = &g_array_index(t->blocks, StwBlock, 0);
    const StwBlock *b1 = &g_array_index(t->blocks, StwBlock, 1);
    g_assert_cmpuint(b1->bwd_first, ==, h0_first);
    g_assert_cmpuint(b1->bwd_last, ==, op_index(t, "h1.ln_1.bwd"));
    g_assert_cmpuint(b0->bwd_first, ==, op_index(t, "h0.mlp.proj.bwd"));
  }
  /* a segment longer than any model is refused */
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwSynthOptions bad = { .batch = 2, .seq = 3, .dtype = STW_DTYPE_FP32, .checkpointing = TRUE,
                          .checkpoint_every = 4097 };
  GError *error = NULL;
  g_assert_null(stw_synth_trace(&cfg, &bad, &hw, &error));
  stw_assert_error_contains(error, "checkpoint segments of 4097 blocks are out of range "
                                   "(expected 1 to 4096)");
  g_clear_error(&error);
}

/* The tiny GPT's one block: its forward ops h0.ln_1..h0.mlp.proj, its backward (a
 * recomputation among it when checkpointed), its input (one hidden state, 96 B) and what keeping
 * it costs: ln_f starts at io 96 + the block's keeping + its output 96 (1968 B kept), so 1,776 B,
 * the same whether the run checkpoints or not. */
static void
test_tiny_blocks(void)
{
  for (int ck = 0; ck < 2; ck++) {
    g_autoptr(StwTrace) t = synth_tiny(ck, STW_ATTENTION_NAIVE);
    g_assert_cmpuint(t->blocks->len, ==, 1);
    const StwBlock *b = &g_array_index(t->blocks, StwBlock, 0);
    g_assert_cmpstr(b->name, ==, "h0");
    g_assert_cmpuint(b->fwd_first, ==, op_index(t, "h0.ln_1"));
    g_assert_cmpuint(b->fwd_last, ==, op_index(t, "h0.mlp.proj"));
    g_assert_cmpuint(b->bwd_first, ==, op_index(t, ck ? "h0.ln_1.recompute" : "h0.mlp.proj.bwd"));
    g_assert_cmpuint(b->bwd_last, ==, op_index(t, "h0.ln_1.bwd"));
    g_assert_cmpuint(b->input_bytes, ==, 96);
    g_assert_cmpuint(b->saved_bytes, ==, 1776);
    guint64 ns = 0;
    for (guint32 k = b->fwd_first; k <= b->fwd_last; k++)
      ns += stw_trace_op(t, k)->duration_ns;
    g_assert_cmpuint(b->forward_ns, ==, ns);
    g_assert_true(stw_trace_validate(t, "blocks", NULL));
  }
  /* GPT-2 at batch 1 x 1024 (bf16): the block keeps 32 s b h (docs/synth.md: Korthikanti's 34,
   * less the dropout masks), and with naive attention the softmax, 2 a s^2 b, besides */
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwModelConfig cfg;
  g_assert_true(stw_model_resolve("gpt2", &cfg, NULL));
  for (int naive = 0; naive < 2; naive++) {
    StwSynthOptions o = { .batch = 1, .seq = 1024, .dtype = STW_DTYPE_BF16,
                          .attention = naive ? STW_ATTENTION_NAIVE : STW_ATTENTION_FLASH };
    g_autoptr(StwTrace) t = stw_synth_trace(&cfg, &o, &hw, NULL);
    g_assert_cmpuint(t->blocks->len, ==, 12);
    const StwBlock *b = &g_array_index(t->blocks, StwBlock, 11);
    g_assert_cmpstr(b->name, ==, "h11");
    g_assert_cmpuint(b->input_bytes, ==, 1024 * 768 * 2);
    g_assert_cmpuint(b->saved_bytes, ==, naive ? 50348032 : 25231360);
    g_assert_cmpuint(b->saved_bytes - (naive ? 2 * 12 * 1024 * 1024 : 0), >=, 32 * 1024 * 768);
  }
}

/* Recomputing every block of a kept trace (stw_trace_decide) gives synth's own checkpointed
 * trace: the same ops in the same order and times, the same non-model memory at every op start
 * outside the blocks' forwards, and within them at least as much (the transform knows what a
 * block keeps in all, not op by op: it keeps the forward's own memory, a bound). The tiny GPT,
 * and GPT-2. */
static void
test_recompute_is_checkpointing(void)
{
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwModelConfig cfg;
  g_assert_true(stw_model_resolve("gpt2", &cfg, NULL));
  for (int big = 0; big < 2; big++) {
    StwSynthOptions o = { .batch = 2, .seq = 128, .dtype = STW_DTYPE_BF16 };
    g_autoptr(StwTrace) kept = big ? stw_synth_trace(&cfg, &o, &hw, NULL)
                                   : synth_tiny(FALSE, STW_ATTENTION_NAIVE);
    o.checkpointing = TRUE;
    g_autoptr(StwTrace) ckpt = big ? stw_synth_trace(&cfg, &o, &hw, NULL)
                                   : synth_tiny(TRUE, STW_ATTENTION_NAIVE);
    g_autofree guint8 *all = g_new(guint8, kept->blocks->len);
    memset(all, STW_BLOCK_RECOMPUTE, kept->blocks->len);
    GError *error = NULL;
    g_autoptr(StwTrace) re = stw_trace_decide(kept, all, &error);
    g_assert_no_error(error);
    g_assert_true(re->model.checkpointing);
    g_assert_cmpuint(re->ops->len, ==, ckpt->ops->len);
    guint64 peak_re = 0, peak_ck = 0;
    for (guint i = 0; i < re->ops->len; i++) {
      const StwOp *a = stw_trace_op(re, i), *b = stw_trace_op(ckpt, i);
      g_test_message("%u %s", i, a->name);
      g_assert_cmpstr(a->name, ==, b->name);
      gboolean in_forward = FALSE;
      for (guint k = 0; k < ckpt->blocks->len; k++) {
        const StwBlock *x = &g_array_index(ckpt->blocks, StwBlock, k);
        in_forward |= i > x->fwd_first && i <= x->fwd_last;
      }
      if (in_forward)
        g_assert_cmpuint(a->nonmodel_bytes, >=, b->nonmodel_bytes);
      else
        g_assert_cmpuint(a->nonmodel_bytes, ==, b->nonmodel_bytes);
      g_assert_cmpuint(a->duration_ns, ==, b->duration_ns);
      peak_re = MAX(peak_re, a->nonmodel_peak_bytes);
      peak_ck = MAX(peak_ck, b->nonmodel_peak_bytes);
    }
    g_assert_cmpuint(peak_re, >=, peak_ck);
    g_test_message("peak %" G_GUINT64_FORMAT " against %" G_GUINT64_FORMAT, peak_re, peak_ck);
    for (guint k = 0; k < re->blocks->len; k++) {
      const StwBlock *a = &g_array_index(re->blocks, StwBlock, k);
      const StwBlock *b = &g_array_index(ckpt->blocks, StwBlock, k);
      g_assert_cmpuint(a->bwd_first, ==, b->bwd_first);
      g_assert_cmpuint(a->bwd_last, ==, b->bwd_last);
    }
    /* a trace that recomputes already is refused */
    g_assert_null(stw_trace_decide(ckpt, all, &error));
    stw_assert_error_contains(error, "recomputes its blocks (profiled with checkpointing)");
    /* and one decided by the planner */
    g_autofree guint8 *one = g_new0(guint8, kept->blocks->len);
    one[0] = STW_BLOCK_OFFLOAD;
    g_autoptr(StwTrace) off = stw_trace_decide(kept, one, &error);
    g_assert_no_error(error);
    g_assert_null(stw_trace_decide(off, all, &error));
    stw_assert_error_contains(error, "decides its blocks' activations (a planned trace)");
    g_assert_false(stw_planner_decides_blocks(off));
    /* and a choice that is none of the four */
    one[0] = STW_N_BLOCK_CHOICES;
    g_assert_null(stw_trace_decide(kept, one, &error));
    stw_assert_error_contains(error, "block 0 (h0): choice 4, not keep, recompute, offload or "
                              "recompute-host");
    /* and one without blocks */
    g_array_set_size(kept->blocks, 0);
    g_assert_null(stw_trace_decide(kept, all, &error));
    stw_assert_error_contains(error, "the trace has no blocks (a trace of version 1");
  }
}

static void
test_flash_attention(void)
{
  g_autoptr(StwTrace) naive = synth_tiny(FALSE, STW_ATTENTION_NAIVE);
  g_autoptr(StwTrace) flash = synth_tiny(FALSE, STW_ATTENTION_FLASH);
  const StwOp *n = find_op(naive, "h0.attn.core");
  const StwOp *f = find_op(flash, "h0.attn.core");
  /* flash keeps only a fp32 log-sum-exp per row (B*a*S*4 = 48) and no scores */
  g_assert_cmpuint(f->nonmodel_peak_bytes - f->nonmodel_bytes, ==, 96 + 48);
  g_assert_cmpuint(n->nonmodel_peak_bytes - n->nonmodel_bytes, ==, 96 + 144 + 144);
  g_assert_cmpuint(f->flops * 2, ==, n->flops);  /* causal half skipped */
}

static StwTrace *
synth_llama_as(StwKernels kernels, gboolean amp)
{
  /* T = 4096 tokens, d = 1024, 8 query heads of 128 sharing 2 key-value heads, ffn 2816 */
  StwModelConfig cfg = { .name = "eager", .arch = STW_ARCH_LLAMA, .layers = 2, .hidden = 1024,
                         .heads = 8, .kv_heads = 2, .ffn = 2816, .vocab = 1000, .max_seq = 512 };
  StwSynthOptions opt = { .batch = 8, .seq = 512, .dtype = STW_DTYPE_BF16, .amp = amp,
                          .attention = STW_ATTENTION_FLASH, .kernels = kernels };
  return synth_on_default(&cfg, &opt);
}

static StwTrace *
synth_llama(StwKernels kernels)
{
  return synth_llama_as(kernels, FALSE);
}

/* Each of the N ops NAMES of EAGER takes its time in FUSED (less the one launch the fused model
 * adds) plus its EXTRA bytes at 80% of the default profile's 1,935 GB/s (what it keeps:
 * test_eager_memory). */
static void
assert_eager_extra(const StwTrace *fused, const StwTrace *eager, const char *const *names,
                   const double *extra, gsize n)
{
  for (gsize i = 0; i < n; i++) {
    const StwOp *f = find_op(fused, names[i]), *e = find_op(eager, names[i]);
    double want = (double)f->duration_ns - 10000 + extra[i] / (1935e9 * 0.8) * 1e9;
    if (g_test_verbose())
      g_test_message("%s: %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " (%.0f)", names[i],
                     f->duration_ns, e->duration_ns, want);
    g_assert_cmpfloat(fabs((double)e->duration_ns - want), <=, 1.0);
  }
}

/* What each block of EAGER keeps beyond FUSED's: PER_BLOCK bytes, every block. */
static void
assert_blocks_keep(const StwTrace *fused, const StwTrace *eager, guint64 per_block)
{
  g_assert_cmpuint(eager->blocks->len, ==, fused->blocks->len);
  g_assert_cmpuint(eager->blocks->len, >, 0);
  for (guint b = 0; b < eager->blocks->len; b++) {
    const StwBlock *e = &g_array_index(eager->blocks, StwBlock, b);
    const StwBlock *f = &g_array_index(fused->blocks, StwBlock, b);
    g_assert_cmpuint(e->saved_bytes - f->saved_bytes, ==, per_block);
    g_assert_cmpuint(e->input_bytes, ==, f->input_bytes);
  }
}

/* How much op NAME's own step raises the non-model memory (its peak over what it found). */
static guint64
op_rise(const StwTrace *t, const char *name)
{
  const StwOp *op = find_op(t, name);
  return op->nonmodel_peak_bytes - op->nonmodel_bytes;
}

static StwTrace *synth_gpt_amp(StwKernels kernels, gboolean amp);
static StwTrace *synth_gpt_dropout(StwKernels kernels, gboolean amp, StwBias attn_dropout);

/* Eager memory (docs/synth.md): what the modules keep for backward beyond the fused model's,
 * worked out by hand from the table there, per block; and the transients of a chain's backward. */
static void
test_eager_memory(void)
{
  /* Llama (e = 2, T = 4096, d = 1024, f = 2816, flash): two RMSNorms' fp32 copies, 4 T d
   * each, and silu(gate), e T f */
  g_autoptr(StwTrace) lf = synth_llama(STW_KERNELS_FUSED);
  g_autoptr(StwTrace) le = synth_llama(STW_KERNELS_EAGER);
  assert_blocks_keep(lf, le, 2 * 4 * 4096 * 1024 + 2 * 4096 * 2816);
  g_assert_cmpuint(op_rise(le, "h1.mlp.swiglu.bwd"), ==, op_rise(lf, "h1.mlp.swiglu.bwd"));
  /* RMSNorm's backward: two fp32 gradients where the fused op holds the input's, (8 - e) T d */
  g_assert_cmpuint(op_rise(le, "h1.ln_1.bwd") - op_rise(lf, "h1.ln_1.bwd"), ==, 6 * 4096 * 1024);
  /* under autocast the stream and the normalized copy are fp32 too: (8 - e) T d a norm */
  g_autoptr(StwTrace) laf = synth_llama_as(STW_KERNELS_FUSED, TRUE);
  g_autoptr(StwTrace) lae = synth_llama_as(STW_KERNELS_EAGER, TRUE);
  assert_blocks_keep(laf, lae, 2 * 6 * 4096 * 1024 + 2 * 4096 * 2816);
  /* GPT-2 in bf16 (T = 4096, d = 1024, f = 4096, n = 16,777,216 naive scores, dropout):
   * GELU-new 3e T f, the dropout's mask and output 3n, the residual branches' masks 2 T d */
  const guint64 T = 4096, d = 1024, f = 4096, n = 8 * 8 * 512 * 512;
  g_autoptr(StwTrace) gf = synth_gpt_amp(STW_KERNELS_FUSED, FALSE);
  g_autoptr(StwTrace) ge = synth_gpt_amp(STW_KERNELS_EAGER, FALSE);
  assert_blocks_keep(gf, ge, 3 * 2 * T * f + 3 * n + 2 * T * d);
  /* backward, GELU-new's two gradients of the chain, 2e T f; the 16-bit softmax's and
   * dropout's gradients two at a time, as the fused op's */
  g_assert_cmpuint(op_rise(ge, "h1.mlp.gelu.bwd") - op_rise(gf, "h1.mlp.gelu.bwd"), ==,
                   2 * 2 * T * f);
  g_assert_cmpuint(op_rise(ge, "h1.attn.core.bwd"), ==, op_rise(gf, "h1.attn.core.bwd"));
  /* under autocast: the LayerNorms' fp32 inputs 2 (4 - e) T d, GELU-new's chain in fp32 12 T f,
   * per score the fp32 softmax (4 - e), the mask and the 16-bit copy the product keeps (1 + e) */
  g_autoptr(StwTrace) af = synth_gpt_amp(STW_KERNELS_FUSED, TRUE);
  g_autoptr(StwTrace) ae = synth_gpt_amp(STW_KERNELS_EAGER, TRUE);
  assert_blocks_keep(af, ae, 2 * 2 * T * d + 12 * T * f + 5 * n + 2 * T * d);
  g_assert_cmpuint(op_rise(ae, "h1.attn.core.bwd") - op_rise(af, "h1.attn.core.bwd"), ==,
                   (2 * 4 - 2 * 2) * n);
  /* without the attention's dropout (OPT's configuration): the scores keep the softmax's
   * output alone, as the fused op; the residual branches' masks stay */
  g_autoptr(StwTrace) of = synth_gpt_dropout(STW_KERNELS_FUSED, FALSE, STW_BIAS_NO);
  g_autoptr(StwTrace) oe = synth_gpt_dropout(STW_KERNELS_EAGER, FALSE, STW_BIAS_NO);
  assert_blocks_keep(of, oe, 3 * 2 * T * f + 2 * T * d);
  g_assert_cmpuint(find_op(oe, "h1.attn.core")->duration_ns, <,
                   find_op(ge, "h1.attn.core")->duration_ns); /* and two kernels fewer */
  /* fused, nothing more: a fused trace keeps what it kept */
  g_autoptr(StwTrace) again = synth_gpt_amp(STW_KERNELS_FUSED, FALSE);
  assert_blocks_keep(gf, again, 0);
}

/* Eager kernels (docs/synth.md). At 4096 tokens the GPU is the bound after the first block (the
 * host issues each kernel 10 us after the one before, and runs ahead during the GEMMs): each
 * op takes its fused work (less the one launch the fused model adds) plus its extra bytes at 80%
 * of 1,935 GB/s, the bytes worked out by hand from the table there (e = 2, T = 4096, q = 1024,
 * kv = 256). */
static void
test_eager_kernels(void)
{
  g_autoptr(StwTrace) fused = synth_llama(STW_KERNELS_FUSED);
  g_autoptr(StwTrace) eager = synth_llama(STW_KERNELS_EAGER);
  g_assert_cmpint(eager->model.kernels, ==, STW_KERNELS_EAGER);
  const double T = 4096;
  static const char *const names[] = { "h1.ln_1", "h1.ln_1.bwd", "h1.attn.rope",
                                       "h1.attn.rope.bwd", "h1.attn.core", "h1.attn.o_proj",
                                       "h1.attn.o_proj.bwd", "h1.mlp.swiglu", "h1.mlp.swiglu.bwd",
                                       "loss", "loss.bwd", "h1.mlp.gate_up" };
  const double extra[] = {
    T * 1024 * (28 + 4),                          /* RMSNorm: n (28 + 2e) */
    T * 1024 * (52 + 8),                          /* n (52 + 4e) */
    12.0 * 2 * T * 1280 - 2.0 * 2 * T * 1536,     /* q and k rotated, q + 2 kv counted */
    12.0 * 2 * T * 1280 - 2.0 * 2 * T * 1536,
    2.0 * 2 * T * 1024 + 2.0 * 2 * T * (1024 + 256), /* heads merged; repeat_kv */
    3.0 * 2 * T * 1024,                           /* the residual added */
    3.0 * 2 * T * 1024,
    2.0 * 2 * T * 2816,                           /* silu(gate) * up */
    4.0 * 2 * T * 2816,
    12.0 * T * 1000,                              /* logits.float() and an fp32 loss */
    10.0 * T * 1000,
    0,                                            /* a GEMM is one kernel either way */
  };
  assert_eager_extra(fused, eager, names, extra, G_N_ELEMENTS(names));
  /* RMSNorm's forward: 134 MB more than its fused kernel, 86.7 us at 1,548 GB/s */
  g_assert_cmpuint(find_op(eager, "h1.ln_1")->duration_ns, ==,
                   find_op(fused, "h1.ln_1")->duration_ns - 10000 + 86704);

  /* a model of 6 tokens is bound by the host: 83 kernels issued 10 us apart (GPT-2's block,
   * forward: embed 1, ln_1 1, qkv 1, naive attention 7, the projection and its residual with
   * dropout 3, ln_2 1, fc 1, GELU-new 8, proj 3, ln_f 1, lm_head 1, loss 4; backward 51) */
  g_autoptr(StwTrace) t = synth_tiny_kernels(FALSE, STW_ATTENTION_NAIVE, STW_KERNELS_EAGER);
  guint64 total = 0;
  for (guint i = 0; i < t->ops->len; i++)
    if (stw_trace_op(t, i)->stage != STW_STAGE_OPTIM)
      total += stw_trace_op(t, i)->duration_ns;
  g_assert_cmpuint(total, >=, 83 * 10000);
  g_assert_cmpuint(total, <, 83 * 10000 + 100); /* and the last kernel's few nanoseconds */
  /* GELU-new's 8 kernels: 80 us, less the 1.5 us the GEMM before it still ran after its issue */
  g_assert_cmpuint(find_op(t, "h0.mlp.gelu")->duration_ns, ==, 8 * 10000 - 1500);

  /* the trace says how it was modelled, and a fused one stays as it was written before */
  g_autofree char *text = stw_trace_to_string(eager, NULL);
  g_assert_nonnull(strstr(text, "\"kernels\""));
  g_autofree char *old = stw_trace_to_string(fused, NULL);
  g_assert_null(strstr(old, "\"kernels\""));
  g_autoptr(StwTrace) back = stw_trace_parse("eager.json", text, strlen(text), NULL);
  g_assert_nonnull(back);
  g_assert_cmpint(back->model.kernels, ==, STW_KERNELS_EAGER);
}

/* ReLU squared (Nemotron's ungated MLP, Arcee's): eager PyTorch runs relu and then square over
 * the MLP's activation, the second reading the first's output and writing its own (2e n more
 * forward, 3e n backward, n = T f); ReLU alone is one kernel, as the fused model counts it */
static void
test_eager_relu2(void)
{
  /* T = 4096, d = 1024, ffn 2816, an ungated MLP (up, the activation, down) */
  StwModelConfig cfg = { .name = "relu2", .arch = STW_ARCH_LLAMA, .layers = 2, .hidden = 1024,
                         .heads = 8, .kv_heads = 2, .ffn = 2816, .vocab = 1000, .max_seq = 512,
                         .mlp_ungated = TRUE, .activation = STW_ACT_RELU2 };
  StwSynthOptions opt = { .batch = 8, .seq = 512, .dtype = STW_DTYPE_BF16,
                          .attention = STW_ATTENTION_FLASH, .kernels = STW_KERNELS_FUSED };
  g_autoptr(StwTrace) fused = synth_on_default(&cfg, &opt);
  opt.kernels = STW_KERNELS_EAGER;
  g_autoptr(StwTrace) eager = synth_on_default(&cfg, &opt);
  static const char *const names[] = { "h1.mlp.act", "h1.mlp.act.bwd" };
  const double extra[] = { 2.0 * 2 * 4096 * 2816, 3.0 * 2 * 4096 * 2816 };
  assert_eager_extra(fused, eager, names, extra, G_N_ELEMENTS(names));
  cfg.activation = STW_ACT_RELU; /* one kernel: no more than the fused op */
  g_autoptr(StwTrace) relu = synth_on_default(&cfg, &opt);
  opt.kernels = STW_KERNELS_FUSED;
  g_autoptr(StwTrace) relu_fused = synth_on_default(&cfg, &opt);
  const double none[] = { 0, 0 };
  assert_eager_extra(relu_fused, relu, names, none, G_N_ELEMENTS(names));
}

/* GPT-2's block with its attention's dropout as ATTN_DROPOUT says (DEFAULT: GPT-2's 0.1) */
static StwTrace *
synth_gpt_dropout(StwKernels kernels, gboolean amp, StwBias attn_dropout)
{
  /* T = 4096 tokens, d = 1024, 8 heads, ffn 4096, naive attention: n = 8 x 8 x 512^2 scores */
  StwModelConfig cfg = { .name = "eager-amp", .arch = STW_ARCH_GPT, .layers = 2, .hidden = 1024,
                         .heads = 8, .kv_heads = 8, .ffn = 4096, .vocab = 1000, .max_seq = 512,
                         .tied = TRUE, .attn_dropout = attn_dropout };
  StwSynthOptions opt = { .batch = 8, .seq = 512, .dtype = STW_DTYPE_BF16, .amp = amp,
                          .attention = STW_ATTENTION_NAIVE, .kernels = kernels };
  return synth_on_default(&cfg, &opt);
}

static StwTrace *
synth_gpt_amp(StwKernels kernels, gboolean amp)
{
  return synth_gpt_dropout(kernels, amp, STW_BIAS_DEFAULT);
}

/* GPT-Neo's attention in fp32 (model.attn_fp32), against the same block without, both eager,
 * bf16, naive, no attention dropout (T = 4096, d = 1024, 8 heads of 128, n = 16,777,216 scores):
 * per block, the fp32 softmax's output (4 - e) n and the 16-bit copy the product keeps e n, and
 * the fp32 queries and keys the score product keeps, (4 - e) T 2d; the attention's forward the
 * casts' 6 T 2d bytes, the fp32 softmax chain's 16 n, and its score GEMM at fp32's rate. */
static void
test_attn_fp32(void)
{
  StwModelConfig cfg = { .name = "neo", .arch = STW_ARCH_GPT, .layers = 2, .hidden = 1024,
                         .heads = 8, .kv_heads = 8, .ffn = 4096, .vocab = 1000, .max_seq = 512,
                         .tied = TRUE, .attn_dropout = STW_BIAS_NO };
  StwSynthOptions opt = { .batch = 8, .seq = 512, .dtype = STW_DTYPE_BF16,
                          .attention = STW_ATTENTION_NAIVE, .kernels = STW_KERNELS_EAGER };
  g_autoptr(StwTrace) plain = synth_on_default(&cfg, &opt);
  cfg.attn_fp32 = TRUE;
  g_autoptr(StwTrace) neo = synth_on_default(&cfg, &opt);
  const guint64 T = 4096, d = 1024, n = 8 * 8 * 512 * 512;
  assert_blocks_keep(plain, neo, 4 * n + 2 * T * 2 * d);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  double flops = 2.0 * (double)n * 128;
  double slower = flops / hw.matmul_efficiency *
                  (1 / hw.flops_per_s[STW_DTYPE_FP32] - 1 / hw.flops_per_s[STW_DTYPE_BF16]) * 1e9;
  double bytes = 16.0 * (double)n + 6.0 * (double)(T * 2 * d);
  double expect = bytes / (hw.hbm_bytes_per_s * hw.memory_efficiency) * 1e9 + slower;
  double got = (double)find_op(neo, "h1.attn.core")->duration_ns -
               (double)find_op(plain, "h1.attn.core")->duration_ns;
  g_assert_cmpfloat(fabs(got - expect), <=, 2);
  g_assert_cmpfloat(slower, >, 300000); /* the score GEMM alone: 16x slower in fp32 on an A100 */
  /* backward: the queries' and keys' gradients' GEMMs at fp32's rate, twice the forward's */
  g_assert_cmpuint(find_op(neo, "h1.attn.core.bwd")->duration_ns -
                       find_op(plain, "h1.attn.core.bwd")->duration_ns,
                   >, (guint64)(2 * slower));
  /* read from GPT-Neo's config.json (the model file's round trip: /model/norm-types) */
  g_autofree char *path = stw_test_fixture("hf/gpt-neo-125m/config.json");
  StwModelConfig gn;
  g_assert_true(stw_model_resolve(path, &gn, NULL));
  g_assert_true(gn.attn_fp32);
}

/* Eager kernels under autocast (docs/synth.md): GPT-2's ops with their 16-bit eager bytes and
 * what autocast adds, worked out by hand from the two tables there (e = 2, w = 4 - e = 2,
 * T = 4096, d = 1024, f = 4096, n = 16,777,216 scores, GPT-2's dropout), each against the same
 * op of the fused autocast trace, GPU-bound as test_eager_kernels's; and Llama's naive attention
 * with its fp32 softmax, autocast or not. */
static void
test_eager_autocast(void)
{
  g_autoptr(StwTrace) fused = synth_gpt_amp(STW_KERNELS_FUSED, TRUE);
  g_autoptr(StwTrace) eager = synth_gpt_amp(STW_KERNELS_EAGER, TRUE);
  const double T = 4096, d = 1024, f = 4096, n = 8.0 * 8 * 512 * 512;
  static const char *const names[] = { "h1.ln_1", "h1.ln_1.bwd", "h1.attn.qkv",
                                       "h1.attn.qkv.bwd", "h1.attn.core", "h1.attn.core.bwd",
                                       "h1.attn.proj", "h1.attn.proj.bwd", "h1.mlp.fc",
                                       "h1.mlp.gelu", "h1.mlp.gelu.bwd", "lm_head.bwd" };
  const double extra[] = {
    2 * 2 * T * d,                           /* LayerNorm in fp32: 2w n */
    3 * 2 * T * d,                           /* 3w n */
    (4 + 2) * T * d,                         /* the input cast down: (4 + e) n */
    (4 + 2) * T * d,                         /* its gradient cast up */
    2 * 2 * T * d + n * (5 * 2 + 1 + 2 * 2 + 1) + 16 * n,  /* heads merged, scale, mask,
                                                            * softmax, dropout; fp32 softmax */
    2 * 2 * T * d + n * (6 * 2 + 1 + 2 * 2 + 1) + n * (20 - 2),
    T * d * (3 * 2 + 2 * 2 + 1) + 2 * 2 * T * d, /* dropout, the add; the add to fp32 */
    T * d * (3 * 2 + 2 * 2 + 1) + (4 + 2) * T * d, /* the branch's gradient cast down */
    (4 + 2) * T * d,                         /* c_fc's input cast */
    16 * 2 * T * f + (16 * 2 + 4 * 2) * T * f,  /* GELU-new: 16e n, + (16w + 4e) n */
    27 * 2 * T * f + (92 - 17 * 2) * T * f,     /* 27e n, + (92 - 17e) n */
    (4 + 2) * T * d,                         /* the head's input gradient cast up */
  };
  assert_eager_extra(fused, eager, names, extra, G_N_ELEMENTS(names));
  /* GELU-new's forward: 1,208 MB beyond its fused kernel under autocast (780 us at 1,548
   * GB/s), 537 MB without (347 us): 72 and 32 bytes an element */
  g_autoptr(StwTrace) plain = synth_gpt_amp(STW_KERNELS_EAGER, FALSE);
  g_autoptr(StwTrace) plain_fused = synth_gpt_amp(STW_KERNELS_FUSED, FALSE);
  g_assert_cmpuint(find_op(plain, "h1.mlp.gelu")->duration_ns -
                       find_op(plain_fused, "h1.mlp.gelu")->duration_ns, ==, 346816 - 10000);
  g_assert_cmpuint(find_op(eager, "h1.mlp.gelu")->duration_ns -
                       find_op(fused, "h1.mlp.gelu")->duration_ns, ==, 780335 - 10000);

  /* Llama's naive attention: the softmax in fp32 whether autocast or not, 16 n forward and
   * (20 - e) n backward beyond the 16-bit chain */
  StwModelConfig cfg = { .name = "naive", .arch = STW_ARCH_LLAMA, .layers = 2, .hidden = 1024,
                         .heads = 8, .kv_heads = 8, .ffn = 2816, .vocab = 1000, .max_seq = 512 };
  StwSynthOptions opt = { .batch = 8, .seq = 512, .dtype = STW_DTYPE_BF16,
                          .attention = STW_ATTENTION_NAIVE, .kernels = STW_KERNELS_EAGER };
  g_autoptr(StwTrace) le = synth_on_default(&cfg, &opt);
  opt.kernels = STW_KERNELS_FUSED;
  g_autoptr(StwTrace) lf = synth_on_default(&cfg, &opt);
  const double core[] = { 2 * 2 * T * d + n * (5 * 2 + 1) + 16 * n,
                          2 * 2 * T * d + n * (6 * 2 + 1) + n * (20 - 2) };
  static const char *const core_names[] = { "h1.attn.core", "h1.attn.core.bwd" };
  assert_eager_extra(lf, le, core_names, core, G_N_ELEMENTS(core_names));
  /* and ALiBi's (BLOOM's, Falcon's): the biased scores in fp32 too, and no rotary op */
  StwModelConfig alibi = { .name = "alibi", .arch = STW_ARCH_NEOX, .layers = 2, .hidden = 1024,
                           .heads = 8, .kv_heads = 8, .ffn = 4096, .vocab = 1000,
                           .max_seq = 512, .alibi = TRUE, .embed_norm = TRUE };
  opt.kernels = STW_KERNELS_EAGER;
  g_autoptr(StwTrace) ae = synth_on_default(&alibi, &opt);
  opt.kernels = STW_KERNELS_FUSED;
  g_autoptr(StwTrace) af = synth_on_default(&alibi, &opt);
  assert_eager_extra(af, ae, core_names, core, G_N_ELEMENTS(core_names));
  g_assert_null(find_op_or_null(ae, "h1.attn.rope"));
  g_assert_nonnull(find_op_or_null(ae, "embed.ln"));

  /* gpt-oss's sinks, which the attention reads: under autocast not cast like a projection's
   * weights (nothing more held at the attention than without them) */
  cfg.attn_sinks = TRUE;
  opt.amp = TRUE;
  g_autoptr(StwTrace) sinks = synth_on_default(&cfg, &opt);
  cfg.attn_sinks = FALSE;
  g_autoptr(StwTrace) none = synth_on_default(&cfg, &opt);
  g_assert_cmpuint(find_op(sinks, "h1.attn.core")->nonmodel_peak_bytes, ==,
                   find_op(none, "h1.attn.core")->nonmodel_peak_bytes);
  g_assert_cmpuint(find_op(sinks, "h1.attn.core")->n_params, ==, 1);
}

/* Latent attention (DeepSeek's) in eager kernels, by hand (e = 2, T = 4096, 8 heads of 64 + 32
 * rotary, values 64, latents 384 and 256): the latents' RMSNorms in fp32 over 640 a token, the
 * rotary parts turned (8 x 32 + 32 a token) and each head's query and key put together
 * (2 x 8 x 96), the heads' outputs (8 x 64) merged; and the FLOPs of QK^T over 96 and PV over
 * 64 a head. */
static void
test_latent_attention(void)
{
  StwModelConfig cfg = { .name = "mla", .arch = STW_ARCH_LLAMA, .layers = 2, .hidden = 1024,
                         .heads = 8, .kv_heads = 8, .head_dim = 64, .ffn = 2816, .vocab = 1000,
                         .max_seq = 512, .kv_lora_rank = 256, .q_lora_rank = 384,
                         .rope_dim = 32, .v_head_dim = 64 };
  StwSynthOptions opt = { .batch = 8, .seq = 512, .dtype = STW_DTYPE_BF16,
                          .attention = STW_ATTENTION_NAIVE, .kernels = STW_KERNELS_EAGER };
  g_autoptr(StwTrace) eager = synth_on_default(&cfg, &opt);
  opt.kernels = STW_KERNELS_FUSED;
  g_autoptr(StwTrace) fused = synth_on_default(&cfg, &opt);
  const double T = 4096, n = 8.0 * 8 * 512 * 512;
  static const char *const names[] = { "h1.attn.latent_norm", "h1.attn.rope", "h1.attn.core" };
  const double extra[] = {
    T * 640 * (28 + 4) - 2 * 2 * T * 32,         /* RMSNorm: n (28 + 2e); the rotary key
                                                  * passes, which the fused op moved */
    12 * 2 * T * 288 + 4 * 2 * T * 768,          /* turned; q and k put together */
    2 * 2 * T * 512 + n * (5 * 2 + 1) + 16 * n,  /* merged; scale, mask, softmax; in fp32 */
  };
  assert_eager_extra(fused, eager, names, extra, G_N_ELEMENTS(names));
  g_assert_cmpuint(find_op(fused, "h1.attn.core")->flops, ==,
                   G_GUINT64_CONSTANT(2) * 8 * 512 * 512 * (8 * 96 + 8 * 64));
}

static void
test_gpt2_structure(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 8, 1024, FALSE);
  guint counts[STW_N_STAGES] = { 0 };
  for (guint i = 0; i < t->ops->len; i++)
    counts[stw_trace_op(t, i)->stage]++;
  g_assert_cmpuint(t->tensors->len, ==, 148);  /* 2 + 12 * 12 + 2 */
  g_assert_cmpuint(counts[STW_STAGE_FWD], ==, 1 + 12 * 8 + 3);
  g_assert_cmpuint(counts[STW_STAGE_BWD], ==, 1 + 12 * 8 + 3);
  g_assert_cmpuint(counts[STW_STAGE_OPTIM], ==, 148);
  const StwOp *qkv = find_op(t, "h0.attn.qkv");
  g_assert_cmpuint(qkv->flops, ==, G_GUINT64_CONSTANT(2) * 8192 * 768 * 2304);
  g_assert_cmpuint(find_op(t, "h0.attn.qkv.bwd")->flops, ==, 2 * qkv->flops);
  /* a large matmul is compute-bound: overhead + flops / (312 TFLOP/s * 0.6 * f / (f + f_half)),
   * f_half what that rate does in 1.5 us: 280.8 GFLOP */
  const StwOp *fc = find_op(t, "h0.mlp.fc");
  double f = 38654705664.0, rate = 312e12 * 0.6, f_half = rate * 1.5e-6;
  guint64 expect = 10000 + (guint64)llround(f / (rate * f / (f + f_half)) * 1e9);
  g_assert_cmpuint(fc->duration_ns, ==, expect);
  g_assert_cmpuint(expect, ==, 10000 + 206489 + 1500); /* 1.5 us more than at the full rate */
  /* a small one runs well below the rate: the same layer at batch 1 x 128 */
  g_autoptr(StwTrace) small = stw_test_synth("gpt2", 1, 128, FALSE);
  const StwOp *sfc = find_op(small, "h0.mlp.fc");
  double fs = 2.0 * 128 * 768 * 3072;
  g_assert_cmpuint(sfc->duration_ns, ==, 10000 + (guint64)llround((fs + f_half) / rate * 1e9));
  /* and a norm is memory-bound: its bytes at 80% of 1,935 GB/s */
  const StwOp *ln = find_op(t, "h0.ln_1");
  g_assert_cmpuint(ln->duration_ns, >, 10000);
  g_assert_cmpuint(ln->flops, >, 0);
  /* the largest activation moment is the loss backward, with logits and their gradient */
  guint64 peak = 0;
  const char *at = NULL;
  for (guint i = 0; i < t->ops->len; i++) {
    if (stw_trace_op(t, i)->nonmodel_peak_bytes > peak) {
      peak = stw_trace_op(t, i)->nonmodel_peak_bytes;
      at = stw_trace_op(t, i)->name;
    }
  }
  g_assert_cmpstr(at, ==, "loss.bwd");
  /* optimizer stage: no activations */
  g_assert_cmpuint(stw_trace_op(t, t->ops->len - 1)->nonmodel_peak_bytes, ==, 0);
}

static void
test_other_archs(void)
{
  g_autoptr(StwTrace) llama = stw_test_synth("llama2-7b", 1, 4096, TRUE);
  g_assert_cmpuint(llama->tensors->len, ==, 1 + 32 * 9 + 2);
  g_assert_cmpuint(find_op(llama, "h31.mlp.gate_up")->n_params, ==, 2);
  g_autoptr(StwTrace) bert = stw_test_synth("bert-base", 32, 512, FALSE);
  /* a neox block's norms over each head's queries and keys (Persimmon's, Phi's): LayerNorms a
   * head wide, weight and bias shared by the heads, after the projection */
  StwModelConfig neox;
  g_assert_true(stw_zoo_lookup("pythia-70m", &neox, NULL));
  guint64 plain = stw_model_param_count(&neox);
  neox.qk_norm = TRUE;
  g_assert_cmpuint(stw_model_param_count(&neox), ==, plain + neox.layers * 4 * (512 / 8));
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwSynthOptions opt = { .batch = 1, .seq = 64, .dtype = STW_DTYPE_BF16 };
  g_autoptr(StwTrace) persimmon = stw_synth_trace(&neox, &opt, &hw, NULL);
  const StwOp *qk = find_op(persimmon, "h2.attn.qk_norm");
  g_assert_cmpuint(qk->n_params, ==, 4);
  g_assert_cmpstr(g_array_index(persimmon->tensors, StwTensor, qk->params[1]).name, ==,
                  "gpt_neox.layers.2.attention.q_layernorm.bias");
  g_assert_true(qk > find_op(persimmon, "h2.attn.qkv") && qk < find_op(persimmon, "h2.attn.rope"));
  const StwOp *pooler = find_op(bert, "pooler");
  g_assert_cmpuint(pooler->n_params, ==, 2);
  /* the MLM head reads the word embeddings: the tied tensor has several users */
  const StwOp *mlm = find_op(bert, "mlm_head");
  g_assert_cmpuint(mlm->params[0], ==, 0);
  g_assert_cmpuint(find_op(bert, "embed")->params[0], ==, 0);
}

/* Experts between norms after each branch (FlexOlmo's OLMo 2 block): the branch opens at the
 * experts' first projection and closes at its norm, every block's residual stream whole; the
 * router's score correction as a weight (ERNIE 4.5's); and experts beside attention under one
 * norm (Cohere 2 MoE's parallel block) */
static void
test_moe_post_norms(void)
{
  StwModelConfig cfg;
  g_assert_true(stw_zoo_lookup("llama2-7b", &cfg, NULL));
  cfg.layers = 2;
  cfg.hidden = 64;
  cfg.heads = 4;
  cfg.kv_heads = 2;
  cfg.ffn = 48;
  cfg.vocab = 128;
  cfg.max_seq = 64;
  cfg.experts = 4;
  cfg.experts_per_token = 2;
  for (int n = 0; n < 2; n++) {
    cfg.norms = n == 0 ? STW_NORMS_POST : STW_NORMS_BOTH;
    GError *error = NULL;
    g_assert_true(stw_model_config_validate(&cfg, "moe", &error));
    g_assert_no_error(error);
    StwHardware hw;
    g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
    StwSynthOptions opt = { .batch = 2, .seq = 16, .dtype = STW_DTYPE_BF16 };
    g_autoptr(StwTrace) t = stw_synth_trace(&cfg, &opt, &hw, &error);
    g_assert_no_error(error);
    const StwOp *post = find_op(t, "h1.mlp.post_norm");
    g_assert_cmpuint(post->n_params, ==, 1);
    g_assert_cmpstr(g_array_index(t->tensors, StwTensor, post->params[0]).name, ==,
                    "layers.1.post_feedforward_layernorm.weight");
    g_assert_nonnull(find_op(t, "h1.mlp.post_norm.bwd"));
    /* a norm before the branch only where the block has both */
    gboolean has_ln2 = FALSE;
    for (guint i = 0; i < t->ops->len; i++)
      has_ln2 |= strcmp(g_array_index(t->ops, StwOp, i).name, "h1.ln_2") == 0;
    g_assert_cmpint(has_ln2, ==, n == 1);
  }
  /* ERNIE 4.5's router keeps its score correction as a weight: one an expert a block */
  cfg.norms = STW_NORMS_PRE;
  guint64 plain = stw_model_param_count(&cfg);
  cfg.router_score_bias = TRUE;
  g_assert_cmpuint(stw_model_param_count(&cfg), ==, plain + 2 * 4);
  StwHardware a100;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &a100, NULL));
  StwSynthOptions small = { .batch = 2, .seq = 16, .dtype = STW_DTYPE_BF16 };
  g_autoptr(StwTrace) ernie = stw_synth_trace(&cfg, &small, &a100, NULL);
  const StwOp *router = find_op(ernie, "h1.moe.router");
  g_assert_cmpuint(router->n_params, ==, 2);
  g_assert_cmpstr(g_array_index(ernie->tensors, StwTensor, router->params[1]).name, ==,
                  "layers.1.block_sparse_moe.gate.moe_statics.e_score_correction_bias");
  cfg.router_score_bias = FALSE;
  /* a norm shared by attention and the experts (Cohere 2 MoE's parallel block): no norm before
   * the experts, whose branch opens at their first projection */
  cfg.norms = STW_NORMS_SHARED;
  GError *error = NULL;
  g_assert_true(stw_model_config_validate(&cfg, "moe", &error));
  g_autoptr(StwTrace) parallel = stw_synth_trace(&cfg, &small, &a100, &error);
  g_assert_no_error(error);
  g_assert_null(find_op_or_null(parallel, "h1.ln_2"));
  g_assert_nonnull(find_op(parallel, "h1.moe.w1_w3"));
}

/* BitNet's norms inside the branches: over the heads' output before o_proj, over the MLP's
 * activation before down_proj, one weight an element each; kept in a model file; refused
 * where they are not modelled */
static void
test_sub_norms(void)
{
  StwModelConfig cfg;
  g_assert_true(stw_zoo_lookup("llama2-7b", &cfg, NULL));
  guint64 without = stw_model_param_count(&cfg);
  cfg.sub_norms = TRUE;
  g_assert_cmpuint(stw_model_param_count(&cfg), ==, without + 32 * (4096 + 11008));
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwSynthOptions opt = { .batch = 1, .seq = 64, .dtype = STW_DTYPE_BF16 };
  GError *error = NULL;
  g_autoptr(StwTrace) t = stw_synth_trace(&cfg, &opt, &hw, &error);
  g_assert_no_error(error);
  const StwOp *a = find_op(t, "h3.attn.sub_norm"), *m = find_op(t, "h3.mlp.sub_norm");
  g_assert_cmpuint(a->n_params, ==, 1);
  g_assert_cmpstr(g_array_index(t->tensors, StwTensor, a->params[0]).name, ==,
                  "layers.3.self_attn.attn_sub_norm.weight");
  g_assert_cmpuint(g_array_index(t->tensors, StwTensor, m->params[0]).numel, ==, 11008);
  /* between the attention and o_proj, between the activation and down_proj */
  g_assert_true(a > find_op(t, "h3.attn.core") && a < find_op(t, "h3.attn.o_proj"));
  g_assert_true(m > find_op(t, "h3.mlp.swiglu") && m < find_op(t, "h3.mlp.down"));
  cJSON *o = stw_model_config_to_json(&cfg, TRUE);
  g_autofree char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  StwModelConfig back;
  g_assert_true(stw_model_config_parse("bitnet.json", text, strlen(text), &back, &error));
  g_assert_no_error(error);
  g_assert_true(back.sub_norms);
  g_assert_cmpuint(stw_model_param_count(&back), ==, without + 32 * (4096 + 11008));
  cfg.experts = 4;
  cfg.experts_per_token = 2;
  g_assert_false(stw_model_config_validate(&cfg, "bitnet", &error));
  stw_assert_error_contains(error, "sub_norms are modelled for llama blocks with a dense MLP and "
                                   "no latent attention only (BitNet's)");
  g_clear_error(&error);
}

static void
test_bad_options(void)
{
  StwModelConfig cfg;
  StwHardware v100, a100;
  GError *error = NULL;
  g_assert_true(stw_zoo_lookup("gpt2", &cfg, NULL));
  g_assert_true(stw_hardware_lookup("V100-32GB-PCIe3", &v100, NULL));
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &a100, NULL));
  StwSynthOptions opt = { .batch = 8, .seq = 1024, .dtype = STW_DTYPE_BF16 };
  g_assert_null(stw_synth_trace(&cfg, &opt, &v100, &error));
  stw_assert_error_contains(error, "V100-32GB-PCIe3 has no bf16 compute");
  opt.seq = 2048;
  g_assert_null(stw_synth_trace(&cfg, &opt, &a100, &error));
  stw_assert_error_contains(error, "sequence length 2048 is out of range for gpt2 (expected 1 to 1024)");
  opt.seq = 1024;
  opt.batch = 0;
  g_assert_null(stw_synth_trace(&cfg, &opt, &a100, &error));
  stw_assert_error_contains(error, "batch 0 is out of range");
  g_assert_true(stw_zoo_lookup("llama3-8b", &cfg, NULL));
  opt.batch = 65536;
  opt.seq = 8192;
  g_assert_null(stw_synth_trace(&cfg, &opt, &a100, &error));
  stw_assert_error_contains(error, "more activation memory than a trace can express");
  /* a linear block's states a token times the tokens beyond what is counted exactly */
  static const char huge[] = "{\"format\":\"stowage-model\",\"version\":1,\"name\":\"huge\","
                             "\"arch\":\"llama\",\"layers\":1,\"hidden\":64,\"heads\":4,"
                             "\"vocab\":256,\"linear_blocks\":[0],\"linear_k_heads\":1,"
                             "\"linear_v_heads\":1,\"linear_k_head_dim\":1000000,"
                             "\"linear_v_head_dim\":1000000,\"linear_conv\":4}";
  g_assert_true(stw_model_config_parse("huge.json", huge, strlen(huge), &cfg, NULL));
  opt.batch = 64;
  opt.seq = 1024;
  g_assert_null(stw_synth_trace(&cfg, &opt, &a100, &error));
  stw_assert_error_contains(error, "batch 64 x seq 1024 over huge's linear states (1000000000000 "
                                   "elements a token) needs more FLOPs than stowage counts "
                                   "exactly (2^53)");
  opt.batch = 1;
  opt.seq = 8; /* 8 tokens: counted */
  StwTrace *t = stw_synth_trace(&cfg, &opt, &a100, &error);
  g_assert_no_error(error);
  stw_trace_free(t);
}

static void
test_deterministic(void)
{
  g_setenv("SOURCE_DATE_EPOCH", "1700000000", TRUE);
  g_autoptr(StwTrace) a = stw_test_synth("gpt2-medium", 4, 512, TRUE);
  g_autoptr(StwTrace) b = stw_test_synth("gpt2-medium", 4, 512, TRUE);
  g_autofree char *ta = stw_trace_to_string(a, NULL);
  g_autofree char *tb = stw_trace_to_string(b, NULL);
  g_assert_cmpstr(ta, ==, tb);
  g_assert_cmpstr(a->source.created, ==, "2023-11-14T22:13:20Z");
  g_unsetenv("SOURCE_DATE_EPOCH");
}

static void
test_175b(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt3-175b", 8, 2048, FALSE);
  g_assert_cmpuint(t->ops->len, ==, 2 * (1 + 96 * 8 + 3) + 1156);
  guint64 params = 0;
  for (guint i = 0; i < t->tensors->len; i++)
    params += stw_trace_tensor(t, i)->numel;
  g_assert_cmpuint(params, ==, G_GUINT64_CONSTANT(174604259328));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/synth/tiny-exact-bytes", test_tiny_exact_bytes);
  g_test_add_func("/synth/tiny-checkpointing", test_tiny_checkpointing);
  g_test_add_func("/synth/checkpoints-host", test_checkpoints_host);
  g_test_add_func("/synth/chunked-loss", test_chunked_loss);
  g_test_add_func("/synth/native-loss", test_native_loss);
  g_test_add_func("/synth/micro-steps", test_micro_steps);
  g_test_add_func("/synth/host-gradients", test_host_gradients);
  g_test_add_func("/synth/tiny-blocks", test_tiny_blocks);
  g_test_add_func("/synth/checkpoint-segments", test_checkpoint_segments);
  g_test_add_func("/synth/autocast", test_autocast);
  g_test_add_func("/synth/optimizer-impl", test_optimizer_impl);
  g_test_add_func("/synth/collectives", test_collectives);
  g_test_add_func("/synth/attn-fp32", test_attn_fp32);
  g_test_add_func("/synth/recompute-is-checkpointing", test_recompute_is_checkpointing);
  g_test_add_func("/synth/flash-attention", test_flash_attention);
  g_test_add_func("/synth/eager-kernels", test_eager_kernels);
  g_test_add_func("/synth/eager-relu2", test_eager_relu2);
  g_test_add_func("/synth/eager-autocast", test_eager_autocast);
  g_test_add_func("/synth/eager-memory", test_eager_memory);
  g_test_add_func("/synth/latent-attention", test_latent_attention);
  g_test_add_func("/synth/gpt2-structure", test_gpt2_structure);
  g_test_add_func("/synth/other-archs", test_other_archs);
  g_test_add_func("/synth/bad-options", test_bad_options);
  g_test_add_func("/synth/moe-post-norms", test_moe_post_norms);
  g_test_add_func("/synth/sub-norms", test_sub_norms);
  g_test_add_func("/synth/deterministic", test_deterministic);
  g_test_add_func("/synth/gpt3-175b", test_175b);
  return g_test_run();
}
