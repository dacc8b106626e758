/* model.c — architectures, the zoo and operator graphs; see model.h and docs/models.md. */
#include "config.h"

#include <stowage/model.h>

#include "json.h"

#include <stdarg.h>
#include <string.h>

G_DEFINE_QUARK(stw-model-error-quark, stw_model_error)

const char *const stw_dtype_names[] = { "fp32", "fp16", "bf16", NULL };
const char *const stw_zoo_families[] = { "gpt2", "gpt3", "patrickstar", "llama", "bert",
                                          NULL };
const char *const stw_arch_names[] = { "gpt", "llama", "bert", NULL };
const char *const stw_attention_names[] = { "naive", "flash", NULL };
const char *const stw_op_kind_names[] = {
  "embed", "norm_embed", "norm_attn", "attn_qkv", "rope", "attn_core", "attn_out",
  "norm_post_attn", "norm_mlp", "mlp_in", "mlp_act", "mlp_out", "norm_post_mlp", "norm_final",
  "pooler", "lm_head", "loss", NULL
};

guint64
stw_dtype_bytes(StwDtype dtype)
{
  return dtype == STW_DTYPE_FP32 ? 4 : 2;
}

const char *
stw_dtype_name(StwDtype dtype)
{
  return stw_dtype_names[dtype];
}

gboolean
stw_dtype_parse(const char *text, StwDtype *out)
{
  for (int i = 0; stw_dtype_names[i] != NULL; i++) {
    if (g_ascii_strcasecmp(text, stw_dtype_names[i]) == 0) {
      *out = (StwDtype)i;
      return TRUE;
    }
  }
  return FALSE;
}

const char *
stw_arch_name(StwArch arch)
{
  return stw_arch_names[arch];
}

const char *
stw_attention_name(StwAttention attention)
{
  return stw_attention_names[attention];
}

/* ---- the zoo ---------------------------------------------------------------------------- */

#define GPT(n, l, d, h, v, s) \
  { .name = n, .arch = STW_ARCH_GPT, .layers = l, .hidden = d, .heads = h, .kv_heads = h, \
    .ffn = 4 * (d), .vocab = v, .max_seq = s, .tied = TRUE }
#define LLAMA(n, l, d, h, kv, f, v, s, t) \
  { .name = n, .arch = STW_ARCH_LLAMA, .layers = l, .hidden = d, .heads = h, .kv_heads = kv, \
    .ffn = f, .vocab = v, .max_seq = s, .tied = t }
#define BERT(n, l, d, h) \
  { .name = n, .arch = STW_ARCH_BERT, .layers = l, .hidden = d, .heads = h, .kv_heads = h, \
    .ffn = 4 * (d), .vocab = 30522, .max_seq = 512, .tied = TRUE }

static const char gpt2_note[] = "Radford et al. 2019 (GPT-2), Hugging Face config";
static const char gpt3_note[] = "Brown et al. 2020, Table 2.1; heads chosen for 128-dim heads";
static const char pstar_note[] = "GPT shapes benchmarked by PatrickStar (Fang et al. 2021)";

static const StwZooEntry zoo[] = {
  { "gpt2", gpt2_note, GPT("gpt2", 12, 768, 12, 50257, 1024) },
  { "gpt2", gpt2_note, GPT("gpt2-medium", 24, 1024, 16, 50257, 1024) },
  { "gpt2", gpt2_note, GPT("gpt2-large", 36, 1280, 20, 50257, 1024) },
  { "gpt2", gpt2_note, GPT("gpt2-xl", 48, 1600, 25, 50257, 1024) },
  { "gpt3", gpt3_note, GPT("gpt3-125m", 12, 768, 12, 50257, 2048) },
  { "gpt3", gpt3_note, GPT("gpt3-350m", 24, 1024, 16, 50257, 2048) },
  { "gpt3", gpt3_note, GPT("gpt3-760m", 24, 1536, 16, 50257, 2048) },
  { "gpt3", gpt3_note, GPT("gpt3-1.3b", 24, 2048, 16, 50257, 2048) },
  { "gpt3", gpt3_note, GPT("gpt3-2.7b", 32, 2560, 32, 50257, 2048) },
  { "gpt3", gpt3_note, GPT("gpt3-6.7b", 32, 4096, 32, 50257, 2048) },
  { "gpt3", "Brown et al. 2020; hidden 5120 (the paper's 5140 is not divisible into 40 heads)",
    GPT("gpt3-13b", 40, 5120, 40, 50257, 2048) },
  { "gpt3", gpt3_note, GPT("gpt3-175b", 96, 12288, 96, 50257, 2048) },
  { "patrickstar", pstar_note, GPT("pstar-1b", 20, 2048, 16, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-2b", 40, 2048, 16, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-4b", 64, 2304, 18, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-6b", 53, 3072, 24, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-8b", 72, 3072, 24, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-10b", 50, 4096, 32, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-12b", 60, 4096, 32, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-15b", 78, 4096, 32, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-18b", 90, 4096, 32, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-20b", 25, 8192, 64, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-30b", 37, 8192, 64, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-40b", 50, 8192, 64, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-50b", 62, 8192, 64, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-60b", 75, 8192, 64, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-70b", 69, 9216, 72, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-110b", 137, 8192, 64, 50257, 1024) },
  { "patrickstar", pstar_note, GPT("pstar-175b", 96, 12288, 96, 50257, 1024) },
  { "llama", "Touvron et al. 2023 (Llama 2), Hugging Face config",
    LLAMA("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096, FALSE) },
  { "llama", "Touvron et al. 2023 (Llama 2), Hugging Face config",
    LLAMA("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096, FALSE) },
  { "llama", "Touvron et al. 2023 (Llama 2), Hugging Face config",
    LLAMA("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096, FALSE) },
  { "llama", "Meta 2024 (Llama 3), Hugging Face config",
    LLAMA("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, FALSE) },
  { "bert", "Devlin et al. 2019, with pooler; MLM decoder tied, its transform omitted",
    BERT("bert-base", 12, 768, 12) },
  { "bert", "Devlin et al. 2019, with pooler; MLM decoder tied, its transform omitted",
    BERT("bert-large", 24, 1024, 16) },
};

const StwZooEntry *
stw_zoo_entries(gsize *n_out)
{
  *n_out = G_N_ELEMENTS(zoo);
  return zoo;
}

gboolean
stw_zoo_lookup(const char *name, StwModelConfig *out, GError **error)
{
  for (gsize i = 0; i < G_N_ELEMENTS(zoo); i++) {
    if (g_ascii_strcasecmp(zoo[i].config.name, name) == 0) {
      *out = zoo[i].config;
      return TRUE;
    }
  }
  GString *names = g_string_new(NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(zoo); i++)
    g_string_append_printf(names, "%s%s", i ? ", " : "", zoo[i].config.name);
  g_set_error(error, STW_MODEL_ERROR, STW_MODEL_ERROR_UNKNOWN,
              "unknown model '%s': expected a model config file (.json) or one of: %s", name,
              names->str);
  g_string_free(names, TRUE);
  return FALSE;
}

gboolean
stw_model_resolve(const char *name_or_file, StwModelConfig *out, GError **error)
{
  if (g_str_has_suffix(name_or_file, ".json") || strchr(name_or_file, '/') != NULL)
    return stw_model_config_load(name_or_file, out, error);
  return stw_zoo_lookup(name_or_file, out, error);
}

/* ---- configs ---------------------------------------------------------------------------- */

gboolean
stw_model_config_validate(const StwModelConfig *c, const char *file, GError **error)
{
  const char *where = file != NULL ? file : c->name;
  const char *problem = NULL;
  if (c->name[0] == '\0')
    problem = "the name is empty";
  else if (c->layers < 1 || c->layers > STW_MODEL_MAX_LAYERS)
    problem = "layers must be 1 to 4096";
  else if (c->hidden < 1 || c->hidden > STW_MODEL_MAX_WIDTH)
    problem = "hidden must be 1 to 1048576";
  else if (c->heads < 1 || c->hidden % c->heads != 0)
    problem = "heads must divide hidden";
  else if (c->kv_heads < 1 || c->heads % c->kv_heads != 0)
    problem = "kv_heads must divide heads";
  else if (c->arch != STW_ARCH_LLAMA && c->kv_heads != c->heads)
    problem = "kv_heads must equal heads for gpt and bert (grouped-query attention is llama's)";
  else if (c->ffn < 1 || c->ffn > 8 * (guint64)STW_MODEL_MAX_WIDTH)
    problem = "ffn must be 1 to 8388608";
  else if (c->vocab < 1 || c->vocab > STW_MODEL_MAX_VOCAB)
    problem = "vocab must be 1 to 16777216";
  else if (c->max_seq < 1 || c->max_seq > STW_MODEL_MAX_SEQ)
    problem = "max_seq must be 1 to 16777216";
  else if (c->arch == STW_ARCH_BERT && !c->tied)
    problem = "bert's MLM decoder is always tied to the word embeddings";
  if (problem != NULL) {
    g_set_error(error, STW_MODEL_ERROR, STW_MODEL_ERROR_INVALID, "%s: invalid model: %s",
                where, problem);
    return FALSE;
  }
  return TRUE;
}

/* A small file: its kind named when another kind is given. */
static const StwJsonLimits model_limits = { .format = "stowage-model", .max_values = 1u << 16,
                                          .max_array = 1u << 12 };

static const char *const config_members[] = {
  "name", "arch", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "max_seq", "tied",
  NULL
};
static const char *const standalone_members[] = {
  "format", "version", "name", "arch", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab",
  "max_seq", "tied", NULL
};

gboolean
stw_model_config_read(StwJsonReader *r, const cJSON *obj, gboolean standalone,
                      StwModelConfig *out, GError **error)
{
  StwModelConfig c = { .tied = TRUE };
  const char *name = NULL, *format = NULL;
  int arch = 0;
  guint64 version = 0;

  if ((standalone && !stw_json_check_format(r, obj, "stowage-model", error)) ||
      !stw_json_check_object(r, obj, standalone ? standalone_members : config_members, error))
    return FALSE;
  if (standalone) {
    if (!stw_json_get_string(r, obj, "format", TRUE, 64, &format, error) ||
        !stw_json_get_u64(r, obj, "version", TRUE, 1, 1, &version, error))
      return FALSE;
  }
  if (!stw_json_get_string(r, obj, "name", TRUE, STW_MODEL_MAX_NAME - 1, &name, error) ||
      !stw_json_get_enum(r, obj, "arch", TRUE, stw_arch_names, &arch, error) ||
      !stw_json_get_u64(r, obj, "layers", TRUE, 1, STW_MODEL_MAX_LAYERS, &c.layers, error) ||
      !stw_json_get_u64(r, obj, "hidden", TRUE, 1, STW_MODEL_MAX_WIDTH, &c.hidden, error) ||
      !stw_json_get_u64(r, obj, "heads", TRUE, 1, STW_MODEL_MAX_WIDTH, &c.heads, error))
    return FALSE;
  c.arch = (StwArch)arch;
  c.kv_heads = c.heads;
  c.ffn = 4 * c.hidden;
  c.max_seq = c.arch == STW_ARCH_BERT ? 512 : 2048;
  if (!stw_json_get_u64(r, obj, "kv_heads", FALSE, 1, STW_MODEL_MAX_WIDTH, &c.kv_heads, error) ||
      !stw_json_get_u64(r, obj, "ffn", FALSE, 1, 8 * (guint64)STW_MODEL_MAX_WIDTH, &c.ffn,
                        error) ||
      !stw_json_get_u64(r, obj, "vocab", TRUE, 1, STW_MODEL_MAX_VOCAB, &c.vocab, error) ||
      !stw_json_get_u64(r, obj, "max_seq", FALSE, 1, STW_MODEL_MAX_SEQ, &c.max_seq, error) ||
      !stw_json_get_bool(r, obj, "tied", FALSE, &c.tied, error))
    return FALSE;
  g_strlcpy(c.name, name, sizeof c.name);
  GError *local = NULL;
  if (!stw_model_config_validate(&c, NULL, &local)) {
    /* re-home the message at this JSON path */
    const char *msg = strstr(local->message, "invalid model: ");
    stw_json_fail(r, error, "%s", msg != NULL ? msg : local->message);
    g_error_free(local);
    return FALSE;
  }
  *out = c;
  return TRUE;
}

static gboolean
read_config_file(StwJsonReader *r, const cJSON *root, gpointer out, GError **error)
{
  return stw_model_config_read(r, root, TRUE, out, error);
}

gboolean
stw_model_config_parse(const char *file, const char *text, gsize len, StwModelConfig *out,
                       GError **error)
{
  return stw_json_read_text(file, text, len, &model_limits, read_config_file, out, error);
}

gboolean
stw_model_config_load(const char *file, StwModelConfig *out, GError **error)
{
  return stw_json_read_file(file, 1u << 20, &model_limits, read_config_file, out, error);
}

cJSON *
stw_model_config_to_json(const StwModelConfig *c, gboolean standalone)
{
  cJSON *o = cJSON_CreateObject();
  if (standalone) {
    cJSON_AddStringToObject(o, "format", "stowage-model");
    stw_json_add_u64(o, "version", 1);
  }
  cJSON_AddStringToObject(o, "name", c->name);
  cJSON_AddStringToObject(o, "arch", stw_arch_name(c->arch));
  stw_json_add_u64(o, "layers", c->layers);
  stw_json_add_u64(o, "hidden", c->hidden);
  stw_json_add_u64(o, "heads", c->heads);
  stw_json_add_u64(o, "kv_heads", c->kv_heads);
  stw_json_add_u64(o, "ffn", c->ffn);
  stw_json_add_u64(o, "vocab", c->vocab);
  stw_json_add_u64(o, "max_seq", c->max_seq);
  cJSON_AddBoolToObject(o, "tied", c->tied);
  return o;
}

/* ---- graphs ----------------------------------------------------------------------------- */

typedef struct {
  StwModelGraph *g;
  guint64 T;   /* tokens per iteration: batch * seq */
  guint64 e;   /* bytes per activation element */
} Builder;

static void
graph_tensor_free(gpointer p)
{
  StwGraphTensor *t = p;
  g_free(t->name);
  g_ptr_array_unref(t->aliases);
  g_free(t);
}

static void
graph_op_free(gpointer p)
{
  StwGraphOp *op = p;
  g_free(op->name);
  g_array_unref(op->params);
  g_free(op);
}

void
stw_model_graph_free(StwModelGraph *g)
{
  if (g == NULL)
    return;
  g_ptr_array_unref(g->tensors);
  g_ptr_array_unref(g->ops);
  g_free(g);
}

/* A parameter tensor; D1 == 0 makes it one-dimensional. Returns its id. */
static guint32
tensor(Builder *b, guint64 d0, guint64 d1, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static guint32
tensor(Builder *b, guint64 d0, guint64 d1, const char *fmt, ...)
{
  StwGraphTensor *t = g_new0(StwGraphTensor, 1);
  va_list ap;
  va_start(ap, fmt);
  t->name = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  t->ndim = d1 == 0 ? 1 : 2;
  t->shape[0] = d0;
  t->shape[1] = d1;
  t->numel = d1 == 0 ? d0 : d0 * d1;
  t->aliases = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(b->g->tensors, t);
  return b->g->tensors->len - 1;
}

/* A forward op reading N_PARAMS tensor ids (given after the name's format arguments end: the
 * caller adds them with op_params). */
static StwGraphOp *
op(Builder *b, gint32 layer, StwOpKind kind, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static StwGraphOp *
op(Builder *b, gint32 layer, StwOpKind kind, const char *fmt, ...)
{
  StwGraphOp *o = g_new0(StwGraphOp, 1);
  o->kind = kind;
  va_list ap;
  va_start(ap, fmt);
  char *base = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  o->name = layer >= 0 ? g_strdup_printf("h%d.%s", layer, base) : g_strdup(base);
  g_free(base);
  o->layer = layer;
  o->params = g_array_new(FALSE, FALSE, sizeof(guint32));
  g_ptr_array_add(b->g->ops, o);
  return o;
}

static void
op_params(StwGraphOp *o, guint n, const guint32 *ids)
{
  g_array_append_vals(o->params, ids, n);
}

/* A matmul-like op: consumes IN_W-wide activations, produces OUT_W-wide ones, keeps its input. */
static StwGraphOp *
linear(Builder *b, gint32 layer, StwOpKind kind, const char *name, guint64 in_w, guint64 out_w,
       guint n, const guint32 *ids)
{
  StwGraphOp *o = op(b, layer, kind, "%s", name);
  op_params(o, n, ids);
  o->flops = 2 * b->T * in_w * out_w;
  o->in_bytes = b->T * in_w * b->e;
  o->out_bytes = b->T * out_w * b->e;
  o->saves_input = TRUE;
  return o;
}

/* LayerNorm or RMSNorm over width D: keeps its input and per-token fp32 statistics. */
static StwGraphOp *
norm(Builder *b, gint32 layer, StwOpKind kind, const char *name, guint64 d, gboolean rms, guint n,
     const guint32 *ids)
{
  StwGraphOp *o = op(b, layer, kind, "%s", name);
  op_params(o, n, ids);
  o->flops = (rms ? 4 : 8) * b->T * d;
  o->in_bytes = o->out_bytes = b->T * d * b->e;
  o->saved_extra_bytes = b->T * (rms ? 4 : 8);
  o->saves_input = TRUE;
  return o;
}

/* An elementwise op (activation function) that keeps its input. */
static StwGraphOp *
elementwise(Builder *b, gint32 layer, StwOpKind kind, const char *name, guint64 in_w,
            guint64 out_w, guint64 flops_per_elem, gboolean saves)
{
  StwGraphOp *o = op(b, layer, kind, "%s", name);
  o->flops = flops_per_elem * b->T * in_w;
  o->in_bytes = b->T * in_w * b->e;
  o->out_bytes = b->T * out_w * b->e;
  o->saves_input = saves;
  return o;
}

/* Scaled dot-product attention over packed q, k, v (widths Q_W, KV_W, KV_W). */
static StwGraphOp *
attention_core(Builder *b, gint32 layer, guint64 q_w, guint64 kv_w, gboolean causal)
{
  StwModelGraph *g = b->g;
  guint64 B = g->batch, S = g->seq, a = g->config.heads;
  StwGraphOp *o = op(b, layer, STW_OP_ATTN_CORE, "attn.core");
  o->in_bytes = b->T * (q_w + 2 * kv_w) * b->e;
  o->out_bytes = b->T * q_w * b->e;
  o->saves_input = TRUE;
  /* QK^T and PV: 2*S*S*head_dim each per head; a fused causal kernel skips the masked half */
  o->flops = 4 * B * S * S * q_w;
  if (g->attention == STW_ATTENTION_NAIVE) {
    guint64 scores = B * a * S * S * b->e;
    o->work_bytes = scores;         /* the raw scores, before softmax */
    o->saved_extra_bytes = scores;  /* the softmax output, for backward */
    o->bwd_work_bytes = 2 * scores; /* dP and dS */
  } else {
    o->saved_extra_bytes = B * a * S * 4; /* fp32 log-sum-exp per row */
    if (causal)
      o->flops /= 2;
  }
  return o;
}

/* Cross-entropy over VOCAB logits: keeps the logits, computes softmax in fp32. */
static void
loss(Builder *b, guint64 vocab)
{
  StwGraphOp *o = op(b, -1, STW_OP_LOSS, "loss");
  o->flops = 5 * b->T * vocab;
  o->in_bytes = b->T * vocab * b->e;
  o->out_bytes = 4;
  o->saves_input = TRUE;
  o->saved_extra_bytes = b->T * 4;
  o->work_bytes = b->T * vocab * 4;
  o->bwd_work_bytes = b->T * vocab * 4;
}

static void
build_gpt(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, f = c->ffn, V = c->vocab;
  guint32 wte = tensor(b, V, d, "wte");
  guint32 wpe = tensor(b, c->max_seq, d, "wpe");
  guint32 lm = wte;
  if (c->tied)
    g_ptr_array_add(((StwGraphTensor *)b->g->tensors->pdata[wte])->aliases,
                    g_strdup("lm_head.weight"));

  StwGraphOp *o = op(b, -1, STW_OP_EMBED, "embed");
  op_params(o, 2, (guint32[]){ wte, wpe });
  o->flops = b->T * d;
  o->out_bytes = b->T * d * b->e;

  for (gint32 l = 0; l < (gint32)c->layers; l++) {
    guint32 ln1w = tensor(b, d, 0, "h.%d.ln_1.weight", l);
    guint32 ln1b = tensor(b, d, 0, "h.%d.ln_1.bias", l);
    guint32 qkvw = tensor(b, d, 3 * d, "h.%d.attn.c_attn.weight", l);
    guint32 qkvb = tensor(b, 3 * d, 0, "h.%d.attn.c_attn.bias", l);
    guint32 projw = tensor(b, d, d, "h.%d.attn.c_proj.weight", l);
    guint32 projb = tensor(b, d, 0, "h.%d.attn.c_proj.bias", l);
    guint32 ln2w = tensor(b, d, 0, "h.%d.ln_2.weight", l);
    guint32 ln2b = tensor(b, d, 0, "h.%d.ln_2.bias", l);
    guint32 fcw = tensor(b, d, f, "h.%d.mlp.c_fc.weight", l);
    guint32 fcb = tensor(b, f, 0, "h.%d.mlp.c_fc.bias", l);
    guint32 mpw = tensor(b, f, d, "h.%d.mlp.c_proj.weight", l);
    guint32 mpb = tensor(b, d, 0, "h.%d.mlp.c_proj.bias", l);

    norm(b, l, STW_OP_NORM_ATTN, "ln_1", d, FALSE, 2, (guint32[]){ ln1w, ln1b })->residual = STW_RESIDUAL_OPEN;
    linear(b, l, STW_OP_ATTN_QKV, "attn.qkv", d, 3 * d, 2, (guint32[]){ qkvw, qkvb });
    attention_core(b, l, d, d, TRUE);
    linear(b, l, STW_OP_ATTN_OUT, "attn.proj", d, d, 2, (guint32[]){ projw, projb })->residual =
        STW_RESIDUAL_CLOSE;
    norm(b, l, STW_OP_NORM_MLP, "ln_2", d, FALSE, 2, (guint32[]){ ln2w, ln2b })->residual = STW_RESIDUAL_OPEN;
    linear(b, l, STW_OP_MLP_IN, "mlp.fc", d, f, 2, (guint32[]){ fcw, fcb });
    elementwise(b, l, STW_OP_MLP_ACT, "mlp.gelu", f, f, 8, TRUE);
    linear(b, l, STW_OP_MLP_OUT, "mlp.proj", f, d, 2, (guint32[]){ mpw, mpb })->residual = STW_RESIDUAL_CLOSE;
  }
  guint32 lnfw = tensor(b, d, 0, "ln_f.weight");
  guint32 lnfb = tensor(b, d, 0, "ln_f.bias");
  if (!c->tied)
    lm = tensor(b, V, d, "lm_head.weight");
  norm(b, -1, STW_OP_NORM_FINAL, "ln_f", d, FALSE, 2, (guint32[]){ lnfw, lnfb });
  linear(b, -1, STW_OP_LM_HEAD, "lm_head", d, V, 1, &lm);
  loss(b, V);
  b->g->io_bytes = 2 * b->T * 8; /* int64 input ids and targets */
}

static void
build_llama(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, f = c->ffn, V = c->vocab;
  guint64 kv = d / c->heads * c->kv_heads; /* key/value width */
  guint32 emb = tensor(b, V, d, "embed_tokens.weight");
  guint32 lm = emb;
  if (c->tied)
    g_ptr_array_add(((StwGraphTensor *)b->g->tensors->pdata[emb])->aliases,
                    g_strdup("lm_head.weight"));

  StwGraphOp *o = op(b, -1, STW_OP_EMBED, "embed");
  op_params(o, 1, &emb);
  o->out_bytes = b->T * d * b->e;

  for (gint32 l = 0; l < (gint32)c->layers; l++) {
    guint32 ln1 = tensor(b, d, 0, "layers.%d.input_layernorm.weight", l);
    guint32 q = tensor(b, d, d, "layers.%d.self_attn.q_proj.weight", l);
    guint32 k = tensor(b, kv, d, "layers.%d.self_attn.k_proj.weight", l);
    guint32 v = tensor(b, kv, d, "layers.%d.self_attn.v_proj.weight", l);
    guint32 out = tensor(b, d, d, "layers.%d.self_attn.o_proj.weight", l);
    guint32 ln2 = tensor(b, d, 0, "layers.%d.post_attention_layernorm.weight", l);
    guint32 gate = tensor(b, f, d, "layers.%d.mlp.gate_proj.weight", l);
    guint32 up = tensor(b, f, d, "layers.%d.mlp.up_proj.weight", l);
    guint32 down = tensor(b, d, f, "layers.%d.mlp.down_proj.weight", l);

    norm(b, l, STW_OP_NORM_ATTN, "ln_1", d, TRUE, 1, &ln1)->residual = STW_RESIDUAL_OPEN;
    linear(b, l, STW_OP_ATTN_QKV, "attn.qkv", d, d + 2 * kv, 3, (guint32[]){ q, k, v });
    elementwise(b, l, STW_OP_ROPE, "attn.rope", d + 2 * kv, d + 2 * kv, 3, FALSE);
    attention_core(b, l, d, kv, TRUE);
    linear(b, l, STW_OP_ATTN_OUT, "attn.o_proj", d, d, 1, &out)->residual = STW_RESIDUAL_CLOSE;
    norm(b, l, STW_OP_NORM_MLP, "ln_2", d, TRUE, 1, &ln2)->residual = STW_RESIDUAL_OPEN;
    linear(b, l, STW_OP_MLP_IN, "mlp.gate_up", d, 2 * f, 2, (guint32[]){ gate, up });
    elementwise(b, l, STW_OP_MLP_ACT, "mlp.swiglu", 2 * f, f, 3, TRUE);
    linear(b, l, STW_OP_MLP_OUT, "mlp.down", f, d, 1, &down)->residual = STW_RESIDUAL_CLOSE;
  }
  guint32 nw = tensor(b, d, 0, "norm.weight");
  if (!c->tied)
    lm = tensor(b, V, d, "lm_head.weight");
  norm(b, -1, STW_OP_NORM_FINAL, "ln_f", d, TRUE, 1, &nw);
  linear(b, -1, STW_OP_LM_HEAD, "lm_head", d, V, 1, &lm);
  loss(b, V);
  b->g->io_bytes = 2 * b->T * 8;
}

static void
build_bert(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, f = c->ffn, V = c->vocab;
  guint32 word = tensor(b, V, d, "embeddings.word_embeddings.weight");
  g_ptr_array_add(((StwGraphTensor *)b->g->tensors->pdata[word])->aliases,
                  g_strdup("cls.predictions.decoder.weight"));
  guint32 pos = tensor(b, c->max_seq, d, "embeddings.position_embeddings.weight");
  guint32 type = tensor(b, 2, d, "embeddings.token_type_embeddings.weight");
  guint32 elnw = tensor(b, d, 0, "embeddings.LayerNorm.weight");
  guint32 elnb = tensor(b, d, 0, "embeddings.LayerNorm.bias");

  StwGraphOp *o = op(b, -1, STW_OP_EMBED, "embed");
  op_params(o, 3, (guint32[]){ word, pos, type });
  o->flops = 2 * b->T * d;
  o->out_bytes = b->T * d * b->e;
  norm(b, -1, STW_OP_NORM_EMBED, "embed.ln", d, FALSE, 2, (guint32[]){ elnw, elnb });

  for (gint32 l = 0; l < (gint32)c->layers; l++) {
    const char *p = "encoder.layer";
    guint32 qw = tensor(b, d, d, "%s.%d.attention.self.query.weight", p, l);
    guint32 qb = tensor(b, d, 0, "%s.%d.attention.self.query.bias", p, l);
    guint32 kw = tensor(b, d, d, "%s.%d.attention.self.key.weight", p, l);
    guint32 kb = tensor(b, d, 0, "%s.%d.attention.self.key.bias", p, l);
    guint32 vw = tensor(b, d, d, "%s.%d.attention.self.value.weight", p, l);
    guint32 vb = tensor(b, d, 0, "%s.%d.attention.self.value.bias", p, l);
    guint32 aow = tensor(b, d, d, "%s.%d.attention.output.dense.weight", p, l);
    guint32 aob = tensor(b, d, 0, "%s.%d.attention.output.dense.bias", p, l);
    guint32 alnw = tensor(b, d, 0, "%s.%d.attention.output.LayerNorm.weight", p, l);
    guint32 alnb = tensor(b, d, 0, "%s.%d.attention.output.LayerNorm.bias", p, l);
    guint32 iw = tensor(b, f, d, "%s.%d.intermediate.dense.weight", p, l);
    guint32 ib = tensor(b, f, 0, "%s.%d.intermediate.dense.bias", p, l);
    guint32 ow = tensor(b, d, f, "%s.%d.output.dense.weight", p, l);
    guint32 ob = tensor(b, d, 0, "%s.%d.output.dense.bias", p, l);
    guint32 olnw = tensor(b, d, 0, "%s.%d.output.LayerNorm.weight", p, l);
    guint32 olnb = tensor(b, d, 0, "%s.%d.output.LayerNorm.bias", p, l);

    linear(b, l, STW_OP_ATTN_QKV, "attn.qkv", d, 3 * d, 6, (guint32[]){ qw, qb, kw, kb, vw, vb })->residual =
        STW_RESIDUAL_OPEN;
    attention_core(b, l, d, d, FALSE);
    linear(b, l, STW_OP_ATTN_OUT, "attn.out", d, d, 2, (guint32[]){ aow, aob })->residual = STW_RESIDUAL_CLOSE;
    norm(b, l, STW_OP_NORM_POST_ATTN, "attn.ln", d, FALSE, 2, (guint32[]){ alnw, alnb });
    linear(b, l, STW_OP_MLP_IN, "ffn.in", d, f, 2, (guint32[]){ iw, ib })->residual = STW_RESIDUAL_OPEN;
    elementwise(b, l, STW_OP_MLP_ACT, "ffn.gelu", f, f, 8, TRUE);
    linear(b, l, STW_OP_MLP_OUT, "ffn.out", f, d, 2, (guint32[]){ ow, ob })->residual = STW_RESIDUAL_CLOSE;
    norm(b, l, STW_OP_NORM_POST_MLP, "ffn.ln", d, FALSE, 2, (guint32[]){ olnw, olnb });
  }
  guint32 pw = tensor(b, d, d, "pooler.dense.weight");
  guint32 pb = tensor(b, d, 0, "pooler.dense.bias");
  /* The pooler reads the first token of every sequence for next-sentence prediction (whose
   * two-way classifier is omitted) and leaves the hidden states to the MLM head. */
  o = op(b, -1, STW_OP_POOLER, "pooler");
  op_params(o, 2, (guint32[]){ pw, pb });
  o->passthrough = TRUE;
  o->flops = 2 * b->g->batch * d * d;
  o->saved_extra_bytes = b->g->batch * d * b->e;
  o->work_bytes = b->g->batch * d * b->e;
  o->bwd_work_bytes = b->g->batch * d * b->e;
  linear(b, -1, STW_OP_LM_HEAD, "mlm_head", d, V, 1, &word);
  loss(b, V);
  b->g->io_bytes = 4 * b->T * 8; /* ids, token types, attention mask, targets */
}

StwModelGraph *
stw_model_graph_new(const StwModelConfig *cfg, guint64 batch, guint64 seq, StwDtype dtype,
                    StwAttention attention)
{
  StwModelGraph *g = g_new0(StwModelGraph, 1);
  g->config = *cfg;
  g->batch = batch;
  g->seq = seq;
  g->dtype = dtype;
  g->attention = attention;
  g->tensors = g_ptr_array_new_with_free_func(graph_tensor_free);
  g->ops = g_ptr_array_new_with_free_func(graph_op_free);
  Builder b = { .g = g, .T = batch * seq, .e = stw_dtype_bytes(dtype) };
  switch (cfg->arch) {
  case STW_ARCH_GPT: build_gpt(&b); break;
  case STW_ARCH_LLAMA: build_llama(&b); break;
  case STW_ARCH_BERT: build_bert(&b); break;
  default: g_assert_not_reached();
  }
  return g;
}

guint64
stw_model_param_count(const StwModelConfig *cfg)
{
  g_autoptr(StwModelGraph) g = stw_model_graph_new(cfg, 1, 1, STW_DTYPE_BF16,
                                                   STW_ATTENTION_NAIVE);
  guint64 n = 0;
  for (guint i = 0; i < g->tensors->len; i++)
    n += ((StwGraphTensor *)g->tensors->pdata[i])->numel;
  return n;
}

const char *const stw_chunk_list_names[] = { "param", "master", "momentum", "variance", NULL };

const char *
stw_chunk_list_name(StwChunkList list)
{
  return stw_chunk_list_names[list];
}

guint64
stw_chunk_list_elem_bytes(StwChunkList list, StwDtype dtype)
{
  return list == STW_LIST_PARAM ? stw_dtype_bytes(dtype) : 4;
}
