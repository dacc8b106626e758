/* model-hf.c — a Hugging Face `config.json` as a stowage model; the mapping is docs/models.md.
 *
 * A config.json names its sizes by model type (GPT-2's n_layer, Llama's num_hidden_layers). Each
 * type read has a row below: its architecture, the members it takes its sizes from, and the
 * defaults its transformers class uses where the file leaves a member out (or writes null).
 * Members that do not change parameters, FLOPs or activations (dropout, rope scaling, token ids)
 * are ignored; members that would and are not modelled are refused by name.
 */
#include "config.h"

#include <stowage/model.h>

#include "json.h"

#include <string.h>

typedef enum {
  HF_GPT2,
  HF_NEOX,
  HF_LLAMA,
  HF_MISTRAL,
  HF_MIXTRAL,
  HF_QWEN2,
  HF_GEMMA,
  HF_BERT,
} HfType;

const char *const stw_hf_model_types[] = { "gpt2",    "gpt_neox", "llama", "mistral", "mixtral",
                                           "qwen2",   "gemma",    "bert",  NULL };

/* Member names by what they hold: GPT-2's names first where it has its own. */
typedef struct {
  const char *layers, *hidden, *heads, *ffn, *max_seq;
} HfNames;

static const HfNames gpt2_names = { "n_layer", "n_embd", "n_head", "n_inner", "n_positions" };
static const HfNames common_names = { "num_hidden_layers", "hidden_size", "num_attention_heads",
                                      "intermediate_size", "max_position_embeddings" };

/* OBJ's member KEY unless it is absent or null (config.json writes null for "the default"). */
static const cJSON *
member(const cJSON *obj, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return v == NULL || cJSON_IsNull(v) ? NULL : v;
}

/* A config.json being read: its reader at the root, and its model type for messages. */
typedef struct {
  StwJsonReader *r;
  const cJSON *root;
  const char *type;
} Hf;

static gboolean
get_u64(const Hf *h, const char *key, gboolean required, guint64 max, guint64 *out,
        GError **error)
{
  if (member(h->root, key) == NULL) {
    if (required)
      return stw_json_fail(h->r, error, "expected the member '%s' of a %s config.json: it is %s",
                           key, h->type,
                           cJSON_GetObjectItemCaseSensitive(h->root, key) ? "null" : "missing");
    return TRUE;
  }
  return stw_json_get_u64(h->r, h->root, key, TRUE, 1, max, out, error);
}

static gboolean
get_bool(const Hf *h, const char *key, gboolean *out, GError **error)
{
  return member(h->root, key) == NULL || stw_json_get_bool(h->r, h->root, key, TRUE, out, error);
}

/* The model's name: the checkpoint's (its "_name_or_path" after the last '/'), else the folder
 * holding a file called config.json, else the file's name without .json. */
static void
model_name(const cJSON *root, const char *file, const char *type, char out[STW_MODEL_MAX_NAME])
{
  const cJSON *p = member(root, "_name_or_path");
  g_autofree char *name = NULL;
  if (cJSON_IsString(p) && p->valuestring[0] != '\0') {
    const char *slash = strrchr(p->valuestring, '/');
    name = g_strdup(slash != NULL && slash[1] != '\0' ? slash + 1 : p->valuestring);
  } else if (file != NULL) {
    g_autofree char *base = g_path_get_basename(file);
    g_autofree char *dir = g_path_get_dirname(file);
    g_autofree char *dir_base = g_path_get_basename(dir);
    if (strcmp(base, "config.json") == 0 && strcmp(dir_base, ".") != 0 &&
        strcmp(dir_base, "/") != 0)
      name = g_strdup(dir_base);
    else if (g_str_has_suffix(base, ".json") && strlen(base) > 5)
      name = g_strndup(base, strlen(base) - 5);
  }
  g_strlcpy(out, name != NULL && name[0] != '\0' ? name : type, STW_MODEL_MAX_NAME);
}

/* What the file says of the parts that have no row in StwModelConfig: refused where it would
 * change the model's parameters, and otherwise left as the graph models them. */
static gboolean
check_unmodelled(const Hf *h, HfType type, GError **error)
{
  StwJsonReader *r = h->r;
  const cJSON *root = h->root;
  guint64 types = 2;
  if (type == HF_BERT) {
    if (!get_u64(h, "type_vocab_size", FALSE, 1u << 20, &types, error))
      return FALSE;
    if (types != 2)
      return stw_json_fail_at(r, "type_vocab_size", error,
                              "%" G_GUINT64_FORMAT " token types: bert is modelled with 2", types);
  }
  const cJSON *moe = member(root, "num_experts");
  if (type != HF_MIXTRAL && moe != NULL && !(cJSON_IsNumber(moe) && moe->valuedouble <= 1))
    return stw_json_fail_at(r, "num_experts", error,
                            "experts are modelled for model_type mixtral only");
  return TRUE;
}

/* The biases TYPE's transformers class gives a model, and what the file says of them. */
static gboolean
read_biases(const Hf *h, HfType type, StwModelConfig *c, GError **error)
{
  gboolean attn = type == HF_GPT2 || type == HF_NEOX || type == HF_BERT, mlp = attn;
  gboolean qkv_only = type == HF_QWEN2; /* Qwen2: q, k and v have biases, o_proj has none */
  if (type != HF_GPT2 && type != HF_BERT && type != HF_QWEN2 &&
      (!get_bool(h, "attention_bias", &attn, error) ||
       !get_bool(h, "mlp_bias", &mlp, error)))
    return FALSE;
  c->bias[STW_SITE_QKV] = attn || qkv_only ? STW_BIAS_YES : STW_BIAS_NO;
  c->bias[STW_SITE_OUT] = attn ? STW_BIAS_YES : STW_BIAS_NO;
  c->bias[STW_SITE_MLP] = mlp ? STW_BIAS_YES : STW_BIAS_NO;
  /* a bias setting equal to the architecture's default is written as the default */
  for (int site = 0; site < STW_N_SITES; site++) {
    StwModelConfig arch_default = { .arch = c->arch };
    if (stw_model_has_bias(c, site) == stw_model_has_bias(&arch_default, site))
      c->bias[site] = STW_BIAS_DEFAULT;
  }
  return TRUE;
}

static gboolean
read_hf(StwJsonReader *r, const cJSON *root, const char *file, StwModelConfig *out,
        GError **error)
{
  int t = 0;
  if (!stw_json_get_enum(r, root, "model_type", TRUE, stw_hf_model_types, &t, error))
    return FALSE;
  HfType type = (HfType)t;
  const char *type_name = stw_hf_model_types[t];
  const Hf hf = { .r = r, .root = root, .type = type_name }, *h = &hf;
  static const StwArch arch_of[] = { [HF_GPT2] = STW_ARCH_GPT,     [HF_NEOX] = STW_ARCH_NEOX,
                                     [HF_LLAMA] = STW_ARCH_LLAMA,  [HF_MISTRAL] = STW_ARCH_LLAMA,
                                     [HF_MIXTRAL] = STW_ARCH_LLAMA, [HF_QWEN2] = STW_ARCH_LLAMA,
                                     [HF_GEMMA] = STW_ARCH_LLAMA,  [HF_BERT] = STW_ARCH_BERT };
  StwModelConfig c = { .arch = arch_of[type] };
  const HfNames *n = type == HF_GPT2 ? &gpt2_names : &common_names;
  c.tied = type == HF_GPT2 || type == HF_GEMMA || type == HF_BERT;
  c.max_seq = type == HF_GPT2 ? 1024 : 2048;
  if (!get_u64(h, n->layers, TRUE, STW_MODEL_MAX_LAYERS, &c.layers, error) ||
      !get_u64(h, n->hidden, TRUE, STW_MODEL_MAX_WIDTH, &c.hidden, error) ||
      !get_u64(h, n->heads, TRUE, STW_MODEL_MAX_WIDTH, &c.heads, error) ||
      !get_u64(h, "vocab_size", TRUE, STW_MODEL_MAX_VOCAB, &c.vocab, error))
    return FALSE;
  c.ffn = 4 * c.hidden; /* GPT-2's n_inner: null */
  c.kv_heads = c.heads;
  if (!get_u64(h, n->ffn, type != HF_GPT2, 8 * (guint64)STW_MODEL_MAX_WIDTH, &c.ffn,
               error) ||
      !get_u64(h, n->max_seq, FALSE, STW_MODEL_MAX_SEQ, &c.max_seq, error) ||
      !get_bool(h, "tie_word_embeddings", &c.tied, error))
    return FALSE;
  if (c.arch == STW_ARCH_LLAMA &&
      (!get_u64(h, "num_key_value_heads", FALSE, STW_MODEL_MAX_WIDTH, &c.kv_heads,
                error) ||
       !get_u64(h, "head_dim", FALSE, STW_MODEL_MAX_WIDTH, &c.head_dim, error)))
    return FALSE;
  if (type == HF_MIXTRAL) {
    c.experts = 8;
    c.experts_per_token = 2;
    if (!get_u64(h, "num_local_experts", FALSE, STW_MODEL_MAX_EXPERTS, &c.experts, error) ||
        !get_u64(h, "num_experts_per_tok", FALSE, STW_MODEL_MAX_EXPERTS,
                 &c.experts_per_token, error))
      return FALSE;
  }
  if (c.head_dim != 0 && c.head_dim * c.heads == c.hidden)
    c.head_dim = 0; /* the usual width: written as the default */
  if (!read_biases(h, type, &c, error) || !check_unmodelled(h, type, error))
    return FALSE;
  model_name(root, file, type_name, c.name);

  GError *local = NULL;
  if (!stw_model_config_validate(&c, NULL, &local)) {
    const char *msg = strstr(local->message, "invalid model: ");
    stw_json_fail(r, error, "as a %s model: %s", type_name,
                  msg != NULL ? msg + strlen("invalid model: ") : local->message);
    g_error_free(local);
    return FALSE;
  }
  *out = c;
  return TRUE;
}

gboolean
stw_model_config_is_hf(const cJSON *root)
{
  return cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "format") == NULL &&
         cJSON_GetObjectItemCaseSensitive(root, "model_type") != NULL;
}

gboolean
stw_model_config_read_hf(StwJsonReader *r, const cJSON *root, StwModelConfig *out,
                         GError **error)
{
  return read_hf(r, root, r->file, out, error);
}
