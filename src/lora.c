/* lora.c — LoRA adapters on a model graph: low-rank A and B beside the projections they adapt
 * (docs/synth.md, "LoRA"). */
#include "config.h"

#include <string.h>

#include <stowage/model.h>

/* A target's role: which op kind holds it, the modules whose weights it is where the op's
 * weights are named so (llama-style blocks: q_proj, ...; latent attention's down and up
 * projections, q_a_proj and q_b_proj for q, kv_a_proj_with_mqa and kv_b_proj serving both k
 * and v; peft's target_modules), and else which of that op's weight matrices it is when the op
 * holds them apart (q, k, v; gate, up); a fused weight serves every role of its op. */
typedef struct {
  const char *name;
  StwOpKind kind;
  const char *modules[3];
  guint index;  /* among the op's 2-D weights, when there are PARTS of them */
  guint parts;
} Role;

static const Role roles[] = {
  { "q", STW_OP_ATTN_QKV, { "q_proj", "q_a_proj", "q_b_proj" }, 0, 3 },
  { "k", STW_OP_ATTN_QKV, { "k_proj", "kv_a_proj_with_mqa", "kv_b_proj" }, 1, 3 },
  { "v", STW_OP_ATTN_QKV, { "v_proj", "kv_a_proj_with_mqa", "kv_b_proj" }, 2, 3 },
  { "o", STW_OP_ATTN_OUT, { "o_proj" }, 0, 1 },
  { "gate", STW_OP_MLP_IN, { "gate_proj" }, 0, 2 },
  { "up", STW_OP_MLP_IN, { "up_proj" }, 1, 2 },
  { "down", STW_OP_MLP_OUT, { "down_proj" }, 0, 1 },
};

/* Whether tensor NAME is module MODULE's weight ("....MODULE.weight"). */
static gboolean
is_module_weight(const char *name, const char *module)
{
  gsize n = strlen(name), m = strlen(module), w = strlen(".weight");
  return n > m + w && name[n - m - w - 1] == '.' && strncmp(name + n - m - w, module, m) == 0 &&
         strcmp(name + n - w, ".weight") == 0;
}

/* Whether tensor NAME is the weight of one of ROLE's modules. */
static gboolean
is_role_weight(const char *name, const Role *role)
{
  for (gsize i = 0; i < G_N_ELEMENTS(role->modules) && role->modules[i] != NULL; i++)
    if (is_module_weight(name, role->modules[i]))
      return TRUE;
  return FALSE;
}

const char *const stw_lora_target_names[] = { "q", "k", "v", "o", "gate", "up", "down", NULL };

static const Role *
role_named(const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS(roles); i++)
    if (strcmp(roles[i].name, name) == 0)
      return &roles[i];
  return NULL;
}

#define invalid(error, ...) stw_fail(error, STW_MODEL_ERROR, STW_MODEL_ERROR_INVALID, __VA_ARGS__)

/* The 2-D weights of op O, in order, into OUT (tensor ids): the model's, below N_BASE, not the
 * adapters added to it. */
static void
weights_of(const StwModelGraph *g, const StwGraphOp *o, guint32 n_base, GArray *out)
{
  g_array_set_size(out, 0);
  for (guint i = 0; i < o->params->len; i++) {
    guint32 id = g_array_index(o->params, guint32, i);
    if (id < n_base && ((StwGraphTensor *)g->tensors->pdata[id])->ndim == 2)
      g_array_append_val(out, id);
  }
}

/* The weight of op O that ROLE names; G_MAXUINT32 where O holds none (a GPT has no gate).
 * *BY_NAME: whether it was found by its module's name, its layout then PyTorch Linear's. */
static guint32
weight_for(const StwModelGraph *g, const StwGraphOp *o, const Role *role, guint32 n_base,
           GArray *scratch, gboolean *by_name)
{
  gboolean names_only = o->kind != role->kind; /* (an indexer's: by name or none) */
  weights_of(g, o, n_base, scratch);
  /* by name where the op's weights are its modules': a block without this one (Gemma 4's
   * reused keys and values, its values from the keys) has none to adapt */
  gboolean named = FALSE;
  *by_name = TRUE;
  for (guint i = 0; i < scratch->len; i++) {
    guint32 id = g_array_index(scratch, guint32, i);
    const char *name = ((const StwGraphTensor *)g->tensors->pdata[id])->name;
    if (is_role_weight(name, role))
      return id;
    for (gsize r = 0; r < G_N_ELEMENTS(roles); r++)
      named |= roles[r].kind == role->kind && is_role_weight(name, &roles[r]);
  }
  *by_name = FALSE;
  if (named || names_only)
    return G_MAXUINT32;
  if (scratch->len == role->parts)
    return g_array_index(scratch, guint32, role->index);
  if (scratch->len == 1 && (role->kind == STW_OP_ATTN_QKV || role->index == role->parts - 1))
    return g_array_index(scratch, guint32, 0); /* fused q, k and v; an MLP without a gate */
  return G_MAXUINT32;
}

static guint32
add_tensor(StwModelGraph *g, const char *base, const char *which, guint64 d0, guint64 d1)
{
  StwGraphTensor *t = g_new0(StwGraphTensor, 1);
  gsize n = strlen(base);
  gboolean weight = n > 7 && strcmp(base + n - 7, ".weight") == 0;
  t->name = g_strdup_printf("%.*s.%s.weight", (int)(weight ? n - 7 : n), base, which);
  t->ndim = 2;
  t->shape[0] = d0;
  t->shape[1] = d1;
  t->numel = d0 * d1;
  t->aliases = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(g->tensors, t);
  return g->tensors->len - 1;
}

/* The input width of op O: its input's elements per token. */
static guint64
in_width(const StwModelGraph *g, const StwGraphOp *o)
{
  return o->in_bytes / (g->batch * g->seq * stw_dtype_bytes(g->dtype));
}

/* Adapters A [RANK, IN] and B [out, RANK] (PyTorch's Linear layout, as peft makes them) for
 * weight W of op O, whatever W's own layout (GPT-2's Conv1D weights are [in, out]): read by O,
 * which computes x A^T B^T beside x W^T and keeps x A^T for backward. */
static void
adapt(StwModelGraph *g, StwGraphOp *o, guint32 w, guint64 rank, guint64 in)
{
  const StwGraphTensor *base = g->tensors->pdata[w];
  guint64 out = base->numel / in, T = g->batch * g->seq;
  g_autofree char *name = g_strdup(base->name); /* the array may move as it grows */
  guint32 a = add_tensor(g, name, "lora_A", rank, in);
  guint32 b = add_tensor(g, name, "lora_B", out, rank);
  g_array_append_val(o->params, a);
  g_array_append_val(o->params, b);
  o->flops += 2 * T * rank * (in + out);
  if (!o->no_grad) /* (a forward-only op keeps nothing for a backward) */
    o->saved_extra_bytes += T * rank * stw_dtype_bytes(g->dtype);
}

/* Adapters for the weights of ROLE's modules that no op reads (a vision tower's q_proj, k_proj
 * and v_proj beside a language model trained on text, Pixtral's o_proj and MLP too), as peft
 * adds them by the modules' names: held, and never given a gradient. */
static gboolean
adapt_unread(StwModelGraph *g, const Role *role, guint64 rank, guint32 n_base, GError **error)
{
  g_autofree guint8 *read = g_new0(guint8, MAX(n_base, 1));
  for (guint i = 0; i < g->ops->len; i++) {
    const StwGraphOp *o = g->ops->pdata[i];
    for (guint k = 0; k < o->params->len; k++)
      if (g_array_index(o->params, guint32, k) < n_base)
        read[g_array_index(o->params, guint32, k)] = 1;
  }
  for (guint32 id = 0; id < n_base; id++) {
    const StwGraphTensor *x = g->tensors->pdata[id];
    if (read[id] || x->ndim != 2 || !is_role_weight(x->name, role))
      continue;
    guint64 in = x->shape[1], out = x->shape[0];
    if (rank < 1 || rank > MIN(in, out))
      return invalid(error, "--lora: rank %" G_GUINT64_FORMAT " is out of range for %s (%"
                     G_GUINT64_FORMAT " in, %" G_GUINT64_FORMAT " out): 1 to %" G_GUINT64_FORMAT,
                     rank, x->name, in, out, MIN(in, out));
    g_autofree char *name = g_strdup(x->name); /* the array may move as it grows */
    add_tensor(g, name, "lora_A", rank, in);
    add_tensor(g, name, "lora_B", out, rank);
  }
  return TRUE;
}

gboolean
stw_model_graph_add_lora(StwModelGraph *g, guint64 rank, const char *targets, guint32 *n_base,
                         GError **error)
{
  *n_base = g->tensors->len;
  g_auto(GStrv) names = g_strsplit(targets != NULL ? targets : "q,v", ",", -1);
  g_autoptr(GArray) scratch = g_array_new(FALSE, FALSE, sizeof(guint32));
  g_autoptr(GHashTable) adapted = g_hash_table_new(NULL, NULL); /* weight ids done */
  if (names[0] == NULL)
    return invalid(error, "--lora-targets: no target given (%s, comma-separated)",
                   "q, k, v, o, gate, up, down");
  for (char **n = names; *n != NULL; n++) {
    g_strstrip(*n);
    const Role *role = role_named(*n);
    if (role == NULL)
      return invalid(error, "--lora-targets: '%s' is not a target: q, k, v, o, gate, up, down "
                     "(the projections by their role; fused ones take any of theirs)", *n);
    if (stw_model_experts(&g->config) > 1 && role->kind != STW_OP_ATTN_QKV &&
        role->kind != STW_OP_ATTN_OUT)
      return invalid(error, "--lora-targets: %s is an MLP projection, and %s's MLP is a mixture "
                     "of experts, which stowage does not adapt: target q, k, v, o", *n,
                     g->config.name);
    guint found = 0;
    for (guint i = 0; i < g->ops->len; i++) {
      StwGraphOp *o = g->ops->pdata[i];
      /* an indexer's projections are q's and k's where named so (MiniMax-M3's q_proj and
       * k_proj, which peft's target_modules reach too) */
      gboolean indexer = o->kind == STW_OP_INDEXER && role->kind == STW_OP_ATTN_QKV;
      if ((o->kind != role->kind && !indexer) || o->layer < 0 || o->outside_roles)
        continue; /* (a linear mixer's projections, Gemma 4's per-layer ones: no role's) */
      gboolean by_name = FALSE;
      guint32 w = weight_for(g, o, role, *n_base, scratch, &by_name);
      if (w == G_MAXUINT32)
        continue;
      found++;
      const StwGraphTensor *x = g->tensors->pdata[w];
      if (!g_hash_table_add(adapted, GUINT_TO_POINTER(w + 1)))
        continue;
      /* a named module's input its weight's (latent attention's up projections read the
       * latents), else the op's (a fused or Conv1D weight) */
      guint64 in = by_name ? x->shape[1] : in_width(g, o), out = x->numel / MAX(in, 1);
      if (rank < 1 || rank > MIN(in, out))
        return invalid(error, "--lora: rank %" G_GUINT64_FORMAT " is out of range for %s (%"
                       G_GUINT64_FORMAT " in, %" G_GUINT64_FORMAT " out): 1 to %"
                       G_GUINT64_FORMAT, rank, x->name, in, out, MIN(in, out));
      adapt(g, o, w, rank, in);
    }
    if (found == 0)
      return invalid(error, "--lora-targets: %s has no %s projection", g->config.name, *n);
    if (!adapt_unread(g, role, rank, *n_base, error))
      return FALSE;
  }
  return TRUE;
}
