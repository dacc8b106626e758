/* model.c — model configurations (checked, counted, read and written) and operator graphs; see
 * model.h and docs/models.md. The zoo is zoo.c, the name tables names.c. */
#include "config.h"

#include <stowage/model.h>

#include "json.h"

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

G_DEFINE_QUARK(stw-model-error-quark, stw_model_error)

gboolean
stw_model_has_bias(const StwModelConfig *cfg, StwBiasSite site)
{
  if (cfg->bias[site] != STW_BIAS_DEFAULT)
    return cfg->bias[site] == STW_BIAS_YES;
  return cfg->arch != STW_ARCH_LLAMA;
}

/* The architectures whose configurations train with dropout by default (GPT-2's attn_pdrop and
 * resid_pdrop, BERT's dropout probabilities: 0.1). */
static gboolean
arch_dropout(StwArch arch)
{
  return arch == STW_ARCH_GPT || arch == STW_ARCH_BERT;
}

static gboolean
dropout_of(StwBias setting, StwArch arch)
{
  return setting != STW_BIAS_DEFAULT ? setting == STW_BIAS_YES : arch_dropout(arch);
}

gboolean
stw_model_attn_dropout(const StwModelConfig *cfg)
{
  return dropout_of(cfg->attn_dropout, cfg->arch);
}

gboolean
stw_model_resid_dropout(const StwModelConfig *cfg)
{
  return dropout_of(cfg->resid_dropout, cfg->arch);
}

gboolean
stw_model_rms_norm(const StwModelConfig *cfg)
{
  return (cfg->arch == STW_ARCH_LLAMA && cfg->norm_type == STW_NORM_DEFAULT) ||
         cfg->norm_type == STW_NORM_RMS || cfg->norm_type == STW_NORM_RMS_NO_AFFINE;
}

gboolean
stw_model_norm_weight(const StwModelConfig *cfg)
{
  return cfg->norm_type != STW_NORM_LAYER_NO_AFFINE && cfg->norm_type != STW_NORM_RMS_NO_AFFINE;
}

gboolean
stw_model_norm_bias(const StwModelConfig *cfg)
{
  return cfg->norm_type == STW_NORM_LAYER ||
         (cfg->norm_type == STW_NORM_DEFAULT && cfg->arch != STW_ARCH_LLAMA);
}

StwActivation
stw_model_activation(const StwModelConfig *cfg)
{
  if (cfg->activation != STW_ACT_DEFAULT)
    return cfg->activation;
  return cfg->arch == STW_ARCH_GPT ? STW_ACT_GELU_NEW : STW_ACT_GELU;
}

gboolean
stw_model_gelu_new(const StwModelConfig *cfg)
{
  return stw_model_activation(cfg) == STW_ACT_GELU_NEW;
}

guint64
stw_model_head_dim(const StwModelConfig *cfg)
{
  return cfg->head_dim != 0 ? cfg->head_dim : cfg->hidden / cfg->heads;
}

guint64
stw_model_qk_head_dim(const StwModelConfig *cfg)
{
  return stw_model_head_dim(cfg) + (cfg->kv_lora_rank != 0 ? cfg->rope_dim : 0);
}

guint64
stw_model_v_head_dim(const StwModelConfig *cfg)
{
  return cfg->v_head_dim != 0 ? cfg->v_head_dim : stw_model_head_dim(cfg);
}

guint64
stw_model_experts(const StwModelConfig *cfg)
{
  return MAX(cfg->experts, 1);
}

guint64
stw_model_active_experts(const StwModelConfig *cfg)
{
  return stw_model_experts(cfg) > 1 ? MAX(cfg->experts_per_token, 1) : 1;
}

guint64
stw_model_routed_experts(const StwModelConfig *cfg)
{
  guint64 k = stw_model_active_experts(cfg), E = stw_model_experts(cfg), Z = cfg->zero_experts;
  if (E < 2 || Z == 0)
    return k;
  return MAX((k * E + (E + Z) / 2) / (E + Z), 1);
}

/* A mask of blocks, a bit each (StwModelConfig's dense_blocks and linear_blocks): block L's
 * bit, setting it, and how many are set whatever the model's layers. */
#define MASK_WORDS (STW_MODEL_MAX_LAYERS / 64)

static gboolean
mask_get(const guint64 *mask, guint64 l)
{
  return l < STW_MODEL_MAX_LAYERS && (mask[l / 64] >> (l % 64) & 1) != 0;
}

static void
mask_set(guint64 *mask, guint64 l, gboolean on)
{
  g_return_if_fail(l < STW_MODEL_MAX_LAYERS);
  guint64 bit = G_GUINT64_CONSTANT(1) << (l % 64);
  mask[l / 64] = on ? mask[l / 64] | bit : mask[l / 64] & ~bit;
}

static guint64
mask_count(const guint64 *mask)
{
  guint64 n = 0;
  for (gsize w = 0; w < MASK_WORDS; w++)
    n += (guint64)__builtin_popcountll(mask[w]);
  return n;
}

gboolean
stw_model_block_dense(const StwModelConfig *cfg, guint64 l)
{
  return stw_model_experts(cfg) > 1 && l < cfg->layers && mask_get(cfg->dense_blocks, l);
}

void
stw_model_set_block_dense(StwModelConfig *cfg, guint64 l, gboolean dense)
{
  mask_set(cfg->dense_blocks, l, dense);
}

gboolean
stw_model_block_linear(const StwModelConfig *cfg, guint64 l)
{
  return l < cfg->layers && mask_get(cfg->linear_blocks, l);
}

void
stw_model_set_block_linear(StwModelConfig *cfg, guint64 l, gboolean linear)
{
  mask_set(cfg->linear_blocks, l, linear);
}

/* How many of CFG's blocks IN says. */
static guint64
blocks_where(const StwModelConfig *cfg, gboolean (*in)(const StwModelConfig *, guint64))
{
  guint64 n = 0;
  for (guint64 l = 0; l < cfg->layers; l++)
    n += in(cfg, l);
  return n;
}

guint64
stw_model_linear_blocks(const StwModelConfig *cfg)
{
  return blocks_where(cfg, stw_model_block_linear);
}

gboolean
stw_model_block_mlp(const StwModelConfig *cfg, guint64 l)
{
  return l < cfg->layers && !mask_get(cfg->mixer_only_blocks, l);
}

gboolean
stw_model_block_mixer(const StwModelConfig *cfg, guint64 l)
{
  return l < cfg->layers && !mask_get(cfg->mlp_only_blocks, l);
}

void
stw_model_set_block_mlp(StwModelConfig *cfg, guint64 l, gboolean mlp)
{
  mask_set(cfg->mixer_only_blocks, l, !mlp);
}

void
stw_model_set_block_mixer(StwModelConfig *cfg, guint64 l, gboolean mixer)
{
  mask_set(cfg->mlp_only_blocks, l, !mixer);
}

guint64
stw_model_mlp_blocks(const StwModelConfig *cfg)
{
  return blocks_where(cfg, stw_model_block_mlp);
}

gboolean
stw_model_block_global(const StwModelConfig *cfg, guint64 l)
{
  return l < cfg->layers && mask_get(cfg->global_blocks, l);
}

gboolean
stw_model_block_kv_shared(const StwModelConfig *cfg, guint64 l)
{
  return l < cfg->layers && mask_get(cfg->kv_shared_blocks, l);
}

gboolean
stw_model_vision_full_block(const StwModelConfig *cfg, guint64 l)
{
  return l < cfg->vision_layers && mask_get(cfg->vision_full_blocks, l);
}

void
stw_model_set_vision_full_block(StwModelConfig *cfg, guint64 l, gboolean full)
{
  mask_set(cfg->vision_full_blocks, l, full);
}

void
stw_model_set_block_global(StwModelConfig *cfg, guint64 l, gboolean global)
{
  mask_set(cfg->global_blocks, l, global);
}

void
stw_model_set_block_kv_shared(StwModelConfig *cfg, guint64 l, gboolean shared)
{
  mask_set(cfg->kv_shared_blocks, l, shared);
}

gboolean
stw_model_block_indexed(const StwModelConfig *cfg, guint64 l)
{
  return cfg->index_heads != 0 && l < cfg->layers && !mask_get(cfg->unindexed_blocks, l);
}

void
stw_model_set_block_indexed(StwModelConfig *cfg, guint64 l, gboolean indexed)
{
  mask_set(cfg->unindexed_blocks, l, !indexed);
}

guint64
stw_model_head_vocab(const StwModelConfig *cfg)
{
  return cfg->head_vocab != 0 ? cfg->head_vocab : cfg->vocab;
}

guint64
stw_model_block_head_dim(const StwModelConfig *cfg, guint64 l)
{
  return stw_model_block_global(cfg, l) && cfg->global_head_dim != 0 ? cfg->global_head_dim
                                                                      : stw_model_head_dim(cfg);
}

guint64
stw_model_block_kv_heads(const StwModelConfig *cfg, guint64 l)
{
  return stw_model_block_global(cfg, l) && cfg->global_kv_heads != 0 ? cfg->global_kv_heads
                                                                      : cfg->kv_heads;
}

gboolean
stw_model_has_softmax(const StwModelConfig *cfg)
{
  for (guint64 l = 0; l < cfg->layers; l++)
    if (stw_model_block_mixer(cfg, l) &&
        (!stw_model_block_linear(cfg, l) || cfg->linear_parallel))
      return TRUE;
  return FALSE;
}

guint64
stw_model_dense_blocks(const StwModelConfig *cfg)
{
  return blocks_where(cfg, stw_model_block_dense);
}

guint64
stw_model_dense_prefix(const StwModelConfig *cfg)
{
  guint64 n = stw_model_dense_blocks(cfg);
  for (guint64 l = 0; l < n; l++)
    if (!stw_model_block_dense(cfg, l))
      return G_MAXUINT64;
  return n;
}

/* ---- configs ---------------------------------------------------------------------------- */

/* Whether C gives its linear blocks' heads or their widths. */
static gboolean
linear_heads_given(const StwModelConfig *c)
{
  return c->linear_k_heads != 0 || c->linear_v_heads != 0 || c->linear_k_head_dim != 0 ||
         c->linear_v_head_dim != 0;
}

/* What sets a block's parameters apart from another's of the same model: a bit each. */
enum {
  KIND_DENSE = 1,       /* a dense MLP among experts */
  KIND_LINEAR = 2,      /* mixing by linear attention */
  KIND_NO_MIXER = 4,    /* a norm and the MLP only */
  KIND_NO_MLP = 8,      /* a norm and the mixer only */
  KIND_GLOBAL = 16,     /* global attention, its own head width and key/value heads */
  KIND_KV_SHARED = 32,  /* an earlier block's keys and values */
  KIND_UNINDEXED = 64,  /* no indexer where the others have one */
  N_BLOCK_KINDS = 128
};

static guint
block_kind(const StwModelConfig *cfg, guint64 l)
{
  return (stw_model_block_dense(cfg, l) ? KIND_DENSE : 0) |
         (stw_model_block_linear(cfg, l) ? KIND_LINEAR : 0) |
         (stw_model_block_mixer(cfg, l) ? 0 : KIND_NO_MIXER) |
         (stw_model_block_mlp(cfg, l) ? 0 : KIND_NO_MLP) |
         (stw_model_block_global(cfg, l) ? KIND_GLOBAL : 0) |
         (stw_model_block_kv_shared(cfg, l) ? KIND_KV_SHARED : 0) |
         (cfg->index_heads != 0 && !stw_model_block_indexed(cfg, l) ? KIND_UNINDEXED : 0);
}

/* The parameters of CFG's graph at LAYERS blocks of one KIND (block_kind's bits); FALSE where
 * they overflow. */
static gboolean
graph_params(const StwModelConfig *cfg, guint64 layers, guint kind, guint64 *out)
{
  StwModelConfig few = *cfg;
  few.layers = layers;
  memset(few.dense_blocks, 0, sizeof few.dense_blocks);
  memset(few.linear_blocks, 0, sizeof few.linear_blocks);
  memset(few.mixer_only_blocks, 0, sizeof few.mixer_only_blocks);
  memset(few.mlp_only_blocks, 0, sizeof few.mlp_only_blocks);
  memset(few.global_blocks, 0, sizeof few.global_blocks);
  memset(few.kv_shared_blocks, 0, sizeof few.kv_shared_blocks);
  memset(few.unindexed_blocks, 0, sizeof few.unindexed_blocks);
  for (guint64 l = 0; l < layers; l++) {
    stw_model_set_block_indexed(&few, l, (kind & KIND_UNINDEXED) == 0);
    stw_model_set_block_global(&few, l, (kind & KIND_GLOBAL) != 0);
    stw_model_set_block_kv_shared(&few, l, (kind & KIND_KV_SHARED) != 0);
    stw_model_set_block_dense(&few, l, (kind & KIND_DENSE) != 0);
    stw_model_set_block_linear(&few, l, (kind & KIND_LINEAR) != 0);
    stw_model_set_block_mixer(&few, l, (kind & KIND_NO_MIXER) == 0);
    stw_model_set_block_mlp(&few, l, (kind & KIND_NO_MLP) == 0);
  }
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&few, 1, 1, STW_DTYPE_BF16,
                                                   STW_ATTENTION_NAIVE);
  *out = 0;
  for (guint i = 0; i < g->tensors->len; i++)
    if (!g_uint64_checked_add(out, *out, ((StwGraphTensor *)g->tensors->pdata[i])->numel))
      return FALSE;
  return TRUE;
}

/* The parameters of CFG, every size otherwise valid, into *OUT (may be NULL): FALSE when they are
 * more than STW_MODEL_MAX_PARAMS. Blocks of a kind are alike wherever they sit (dense among
 * experts or not, linear attention or softmax, with both parts or one: block_kind), so the
 * count is what the model holds outside its blocks (from models of one and two plain blocks)
 * and a line in each kind's blocks (from a model of one block of each kind there is), in
 * checked arithmetic: no sum wraps, and a model of thousands of blocks costs a few small
 * graphs. */
static gboolean
param_count_checked(const StwModelConfig *cfg, guint64 *out)
{
  guint64 one = 0, two = 0, count[N_BLOCK_KINDS] = { 0 };
  for (guint64 l = 0; l < cfg->layers; l++)
    count[block_kind(cfg, l)]++;
  if (!graph_params(cfg, 1, 0, &one) || !graph_params(cfg, 2, 0, &two))
    return FALSE;
  guint64 base = one - (two - one), total = base;
  for (guint kind = 0; kind < N_BLOCK_KINDS; kind++) {
    guint64 with_one = 0, blocks = 0;
    if (count[kind] == 0)
      continue;
    if (!graph_params(cfg, 1, kind, &with_one) ||
        !g_uint64_checked_mul(&blocks, with_one - base, count[kind]) ||
        !g_uint64_checked_add(&total, total, blocks))
      return FALSE;
  }
  if (total > STW_MODEL_MAX_PARAMS)
    return FALSE;
  if (out != NULL)
    *out = total;
  return TRUE;
}


/* The members of a vision tower and its projector beyond the tower's layers, width, MLP and
 * patch, a bit each: what each kind of tower and of projector reads, and what it needs */
enum {
  VISION_CHANNELS = 1 << 0,
  VISION_IMAGE = 1 << 1,
  VISION_POOLING_HEAD = 1 << 2,
  VISION_HEADS = 1 << 3, /* vision_heads, vision_kv_heads, vision_head_dim */
  VISION_MERGE = 1 << 4,
  VISION_FEATURE_LAYERS = 1 << 5,
  VISION_PROJECTOR_BIAS = 1 << 6,
  VISION_POSITIONS = 1 << 7,
  VISION_TEMPORAL_PATCH = 1 << 8,
  VISION_DEEPSTACK = 1 << 9,
  VISION_OUT = 1 << 10,
  VISION_NEWLINE = 1 << 11,
  VISION_INTERNVL = 1 << 12, /* vision_qk_norm, vision_rms_norm, vision_final_norm */
  VISION_TILES = 1 << 13,    /* vision_tiles, vision_aspect_ratios */
  VISION_GLOBAL_LAYERS = 1 << 14,
  VISION_FEATURES = 1 << 15,
  VISION_CROSS_LAYERS = 1 << 16,
  VISION_ATTN_BIAS = 1 << 17,
  VISION_WINDOW = 1 << 18, /* vision_window, vision_full_blocks */
  /* the Qwen-VL towers' members */
  VISION_QWEN = VISION_CHANNELS | VISION_TEMPORAL_PATCH,
};
static const char *const vision_member_names[] = {
  "vision_channels", "vision_image", "vision_pooling_head",
  "vision_heads, vision_kv_heads and vision_head_dim", "vision_merge",
  "vision_feature_layers", "vision_projector_bias", "vision_positions",
  "vision_temporal_patch", "vision_deepstack", "vision_out", "vision_newline",
  "vision_qk_norm, vision_rms_norm and vision_final_norm",
  "vision_tiles and vision_aspect_ratios", "vision_global_layers", "vision_features",
  "vision_cross_layers", "vision_attn_bias", "vision_window and vision_full_blocks",
};
#define PROJECTOR(p) (1u << (p))
static const struct {
  const char *whose;
  guint reads, needs;
  StwVisionProjector own; /* its projector where the config names none */
  guint others;           /* the projectors a file may pair it with instead, a bit each */
} vision_kinds[STW_N_VISION_KINDS] = {
  [STW_VISION_SIGLIP] = { "SigLIP's", VISION_CHANNELS | VISION_IMAGE | VISION_POOLING_HEAD,
                          VISION_CHANNELS | VISION_IMAGE, STW_PROJECTOR_GEMMA3,
                          PROJECTOR(STW_PROJECTOR_LLAVA) | PROJECTOR(STW_PROJECTOR_PALIGEMMA) |
                              PROJECTOR(STW_PROJECTOR_IDEFICS3) | PROJECTOR(STW_PROJECTOR_AYA) },
  [STW_VISION_GEMMA4] = { "Gemma 4's", VISION_HEADS | VISION_POSITIONS,
                          VISION_HEADS | VISION_POSITIONS, STW_PROJECTOR_GEMMA4, 0 },
  [STW_VISION_PIXTRAL] = { "Pixtral's", VISION_CHANNELS, VISION_CHANNELS, STW_PROJECTOR_MISTRAL3,
                           PROJECTOR(STW_PROJECTOR_LLAVA) },
  [STW_VISION_CLIP] = { "CLIP's", VISION_CHANNELS | VISION_IMAGE, VISION_CHANNELS | VISION_IMAGE,
                        STW_PROJECTOR_LLAVA, 0 },
  [STW_VISION_QWEN2_VL] = { "Qwen2-VL's", VISION_QWEN, VISION_QWEN, STW_PROJECTOR_QWEN, 0 },
  [STW_VISION_QWEN2_5_VL] = { "Qwen2.5-VL's", VISION_QWEN | VISION_WINDOW, VISION_QWEN,
                              STW_PROJECTOR_QWEN, 0 },
  [STW_VISION_QWEN3_VL] = { "Qwen3-VL's", VISION_QWEN | VISION_POSITIONS | VISION_DEEPSTACK,
                            VISION_QWEN | VISION_POSITIONS, STW_PROJECTOR_QWEN, 0 },
  [STW_VISION_INTERNVL] = { "InternViT's",
                            VISION_CHANNELS | VISION_IMAGE | VISION_INTERNVL | VISION_ATTN_BIAS,
                            VISION_CHANNELS | VISION_IMAGE, STW_PROJECTOR_INTERNVL, 0 },
  [STW_VISION_MLLAMA] = { "Llama 3.2 Vision's",
                          VISION_CHANNELS | VISION_IMAGE | VISION_TILES | VISION_GLOBAL_LAYERS |
                              VISION_CROSS_LAYERS,
                          VISION_CHANNELS | VISION_IMAGE | VISION_TILES, STW_PROJECTOR_MLLAMA,
                          0 },
  [STW_VISION_GLM4V] = { "GLM-4V's", VISION_QWEN | VISION_IMAGE | VISION_ATTN_BIAS,
                         VISION_QWEN | VISION_IMAGE, STW_PROJECTOR_GLM4V, 0 },
};
static const struct {
  guint reads, needs;
} vision_projectors[STW_N_PROJECTORS] = {
  [STW_PROJECTOR_GEMMA3] = { VISION_MERGE, 0 }, /* its pooling's kernel (side / 16: 256 tokens
                                                 * where not given) */
  [STW_PROJECTOR_MISTRAL3] = { VISION_MERGE | VISION_FEATURE_LAYERS | VISION_PROJECTOR_BIAS,
                               VISION_MERGE | VISION_FEATURE_LAYERS },
  [STW_PROJECTOR_LLAVA] = { VISION_FEATURE_LAYERS | VISION_PROJECTOR_BIAS | VISION_NEWLINE,
                            VISION_FEATURE_LAYERS },
  [STW_PROJECTOR_PALIGEMMA] = { VISION_OUT, VISION_OUT },
  [STW_PROJECTOR_QWEN] = { VISION_MERGE | VISION_OUT, VISION_MERGE | VISION_OUT },
  [STW_PROJECTOR_IDEFICS3] = { VISION_MERGE, VISION_MERGE },
  [STW_PROJECTOR_INTERNVL] = { VISION_MERGE, VISION_MERGE },
  [STW_PROJECTOR_MLLAMA] = { VISION_FEATURES, VISION_FEATURES },
  [STW_PROJECTOR_GLM4V] = { VISION_MERGE | VISION_OUT, VISION_MERGE | VISION_OUT },
  [STW_PROJECTOR_AYA] = { VISION_MERGE | VISION_OUT, VISION_MERGE | VISION_OUT },
};

StwVisionProjector
stw_model_vision_projector(const StwModelConfig *cfg)
{
  if (cfg->vision_projector != STW_PROJECTOR_DEFAULT ||
      (guint)cfg->vision_kind >= STW_N_VISION_KINDS)
    return cfg->vision_projector;
  return vision_kinds[cfg->vision_kind].own;
}

/* What is wrong with C's vision tower, or NULL: members without vision_layers or of another
 * kind's tower, a size missing, no whole patch in the image, more positions or a wider patch
 * than stowage counts. */
static const char *
vision_conflict(const StwModelConfig *c)
{
  gboolean heads = c->vision_heads && c->vision_kv_heads && c->vision_head_dim;
  guint given = (c->vision_channels ? VISION_CHANNELS : 0) | (c->vision_image ? VISION_IMAGE : 0) |
                (c->vision_pooling_head ? VISION_POOLING_HEAD : 0) |
                (c->vision_heads || c->vision_kv_heads || c->vision_head_dim ? VISION_HEADS : 0) |
                (c->vision_merge ? VISION_MERGE : 0) |
                (c->vision_feature_layers ? VISION_FEATURE_LAYERS : 0) |
                (c->vision_projector_bias ? VISION_PROJECTOR_BIAS : 0) |
                (c->vision_positions ? VISION_POSITIONS : 0) |
                (c->vision_temporal_patch ? VISION_TEMPORAL_PATCH : 0) |
                (c->vision_deepstack ? VISION_DEEPSTACK : 0) | (c->vision_out ? VISION_OUT : 0) |
                (c->vision_newline ? VISION_NEWLINE : 0) |
                (c->vision_qk_norm || c->vision_rms_norm || c->vision_final_norm
                     ? VISION_INTERNVL
                     : 0) |
                (c->vision_attn_bias ? VISION_ATTN_BIAS : 0) |
                (c->vision_tiles && c->vision_aspect_ratios ? VISION_TILES : 0) |
                (c->vision_global_layers ? VISION_GLOBAL_LAYERS : 0) |
                (c->vision_features ? VISION_FEATURES : 0) |
                (c->vision_cross_layers ? VISION_CROSS_LAYERS : 0) |
                (c->vision_window || mask_count(c->vision_full_blocks) ? VISION_WINDOW : 0);
  if ((c->vision_tiles != 0) != (c->vision_aspect_ratios != 0))
    return "vision_tiles and vision_aspect_ratios go together";
  if ((guint)c->vision_kind >= STW_N_VISION_KINDS)
    return "an unknown vision_kind";
  if ((guint)c->vision_projector >= STW_N_PROJECTORS)
    return "an unknown vision_projector";
  if (c->vision_layers == 0)
    return c->vision_hidden || c->vision_ffn || c->vision_patch || given ||
                   c->vision_kind != STW_VISION_SIGLIP ||
                   c->vision_projector != STW_PROJECTOR_DEFAULT
               ? "the vision tower's members go with vision_layers"
               : NULL;
  if (!c->vision_hidden || !c->vision_ffn || !c->vision_patch)
    return "a vision tower needs vision_hidden, vision_ffn and vision_patch";
  const char *whose = vision_kinds[c->vision_kind].whose;
  const char *kind = stw_vision_kind_names[c->vision_kind];
  StwVisionProjector p = stw_model_vision_projector(c);
  /* (the messages interned: a few, each kept once for the process) */
  if (p != vision_kinds[c->vision_kind].own &&
      (vision_kinds[c->vision_kind].others & PROJECTOR(p)) == 0) {
    g_autofree char *m = g_strdup_printf("vision_projector %s does not go with %s tower "
                                         "(vision_kind %s)", stw_vision_projector_names[p],
                                         whose, kind);
    return g_intern_string(m);
  }
  /* the projector named where it is not the tower's own */
  g_autofree char *with = p == vision_kinds[c->vision_kind].own
                              ? g_strdup("")
                              : g_strdup_printf(", vision_projector %s",
                                                stw_vision_projector_names[p]);
  guint reads = vision_kinds[c->vision_kind].reads | vision_projectors[p].reads;
  guint needs = vision_kinds[c->vision_kind].needs | vision_projectors[p].needs;
  guint missing = needs & ~(heads ? given : given & ~VISION_HEADS);
  for (guint bit = 0; bit < G_N_ELEMENTS(vision_member_names); bit++)
    if (given & ~reads & (1u << bit)) {
      g_autofree char *m = g_strdup_printf("%s: not %s tower's (vision_kind %s%s)",
                                           vision_member_names[bit], whose, kind, with);
      return g_intern_string(m);
    }
  for (guint bit = 0; bit < G_N_ELEMENTS(vision_member_names); bit++) {
    if (missing & (1u << bit)) {
      g_autofree char *m = g_strdup_printf("%s tower (vision_kind %s%s) needs %s", whose, kind,
                                           with, vision_member_names[bit]);
      return g_intern_string(m);
    }
  }
  if (c->vision_merge > 1024 || c->vision_feature_layers > STW_MODEL_MAX_LAYERS ||
      c->vision_deepstack > STW_MODEL_MAX_LAYERS)
    return "vision_merge at most 1024, vision_feature_layers and vision_deepstack at most 4096";
  if (c->vision_tiles > 64 || c->vision_aspect_ratios > 64 ||
      c->vision_global_layers > STW_MODEL_MAX_LAYERS ||
      c->vision_cross_layers > STW_MODEL_MAX_LAYERS || c->vision_features > STW_MODEL_MAX_WIDTH)
    return "vision_tiles and vision_aspect_ratios at most 64, vision_global_layers and "
           "vision_cross_layers at most 4096, vision_features at most 1048576";
  if (c->vision_cross_layers != 0 && c->arch != STW_ARCH_LLAMA)
    return "vision_cross_layers: llama only (Llama 3.2 Vision's cross-attention blocks)";
  if (c->vision_out > STW_MODEL_MAX_WIDTH || c->vision_temporal_patch > STW_MODEL_MAX_WIDTH ||
      c->vision_merge * c->vision_merge * c->vision_hidden > STW_MODEL_MAX_WIDTH)
    return "vision_out and the patch merger's width (vision_merge^2 x vision_hidden) at most "
           "1048576";
  if (c->vision_image && c->vision_patch > c->vision_image)
    return "vision_patch must be at most vision_image (a whole patch in the image)";
  guint64 full = 0;
  for (guint64 l = 0; l < c->vision_layers && l < STW_MODEL_MAX_LAYERS; l++)
    full += mask_get(c->vision_full_blocks, l) ? 1 : 0;
  if (full != mask_count(c->vision_full_blocks))
    return "vision_full_blocks must be blocks below vision_layers";
  if (full != 0 && c->vision_window == 0)
    return "vision_full_blocks go with vision_window (the other blocks' windows)";
  guint64 merged = c->vision_patch * MAX(c->vision_merge, 1);
  if (c->vision_window != 0 && (c->vision_window > STW_MODEL_MAX_IMAGE ||
                                c->vision_window < merged))
    return "vision_window must hold a merged patch (vision_patch x vision_merge pixels a "
           "side), and be at most 16384 pixels";
  guint64 side = c->vision_image ? c->vision_image / c->vision_patch : 1;
  guint64 channels = c->vision_channels ? c->vision_channels : 3;
  guint64 frames = c->vision_temporal_patch ? c->vision_temporal_patch : 1;
  if (side * side > STW_MODEL_MAX_VOCAB || c->vision_patch > STW_MODEL_MAX_WIDTH ||
      (double)channels * (double)frames * (double)c->vision_patch * (double)c->vision_patch >
          STW_MODEL_MAX_WIDTH)
    return "a vision tower of at most 16777216 patches an image, each of at most 1048576 values "
           "(vision_channels x vision_temporal_patch x vision_patch^2)";
  return NULL;
}

/* What is wrong with C's audio tower, or NULL. */
static const char *
audio_conflict(const StwModelConfig *c)
{
  if (c->audio_layers == 0)
    return c->audio_hidden || c->audio_heads || c->audio_conv || c->audio_conv2 ||
                   c->audio_kernel || c->audio_output
               ? "the audio tower's members go with audio_layers"
               : NULL;
  if (!c->audio_hidden || !c->audio_heads || !c->audio_conv || !c->audio_conv2 ||
      !c->audio_kernel || !c->audio_output)
    return "an audio tower needs audio_hidden, audio_heads, audio_conv, audio_conv2, "
           "audio_kernel and audio_output";
  if (c->audio_heads > c->audio_hidden)
    return "audio_heads must be at most audio_hidden (a head at least a channel wide)";
  if (c->audio_conv < 4)
    return "audio_conv must be at least 4 (the projection after the convolutions reads "
           "audio_conv / 4 x audio_conv2)";
  return NULL;
}

/* What is wrong with C's blocks of one part, or NULL: a block with neither part, a linear one
 * without a mixer, a dense MLP where there is none. */
static const char *
one_part_conflict(const StwModelConfig *c)
{
  for (guint64 l = 0; l < c->layers; l++) {
    gboolean mixer = stw_model_block_mixer(c, l), mlp = stw_model_block_mlp(c, l);
    if (!mixer && !mlp)
      return "a block in both mixer_only_blocks and mlp_only_blocks would be no block";
    if (!mixer && stw_model_block_linear(c, l))
      return "a block of mlp_only_blocks has no mixer: not a linear block";
    if (!mlp && stw_model_block_dense(c, l))
      return "a block of mixer_only_blocks has no MLP: not a dense block";
  }
  return NULL;
}

/* What is wrong with C's attention by block (global blocks, blocks of shared keys and values:
 * Gemma 4's, MiMo-V2-Flash's), or with its gate's rows in q_proj, or NULL. */
static const char *
attention_variant_conflict(const StwModelConfig *c)
{
  guint64 global = mask_count(c->global_blocks), shared = mask_count(c->kv_shared_blocks);
  if (global != blocks_where(c, stw_model_block_global) ||
      shared != blocks_where(c, stw_model_block_kv_shared))
    return "global_blocks and kv_shared_blocks must be blocks below layers";
  if ((global != 0 || shared != 0) && (c->arch != STW_ARCH_LLAMA || c->kv_lora_rank != 0))
    return "global_blocks and kv_shared_blocks are llama's softmax attention (not latent "
           "attention's)";
  if (global == 0 && (c->global_head_dim != 0 || c->global_kv_heads != 0 ||
                      c->global_values_are_keys))
    return "global_head_dim, global_kv_heads and global_values_are_keys go with global_blocks";
  if (c->global_head_dim > STW_MODEL_MAX_WIDTH ||
      c->heads * c->global_head_dim > 8 * (guint64)STW_MODEL_MAX_WIDTH)
    return "heads * global_head_dim must be at most 8388608";
  if (c->global_kv_heads != 0 && c->heads % c->global_kv_heads != 0)
    return "global_kv_heads must divide heads";
  for (guint64 l = 0; l < c->layers; l++)
    if ((stw_model_block_global(c, l) || stw_model_block_kv_shared(c, l)) &&
        (stw_model_block_linear(c, l) || !stw_model_block_mixer(c, l)))
      return "a block of global_blocks or kv_shared_blocks runs softmax attention: not linear "
             "attention, not a block without a mixer";
  if (c->kv_shared_wide_mlp && (shared == 0 || stw_model_experts(c) > 1))
    return "kv_shared_wide_mlp goes with kv_shared_blocks and dense MLPs";
  if (c->attn_gate_in_q && !c->attn_gate)
    return "attn_gate_in_q goes with attn_gate";
  if (c->global_no_sinks && (global == 0 || !c->attn_sinks))
    return "global_sinks false goes with global_blocks and attn_sinks";
  return NULL;
}

/* What is wrong with C's LM head rows, per-layer inputs (Gemma 4's) or the norms around its
 * experts (Gemma 4's, A.X K1's), or NULL. */
static const char *
head_and_mlp_variant_conflict(const StwModelConfig *c)
{
  if (c->head_vocab != 0 && (c->head_vocab >= c->vocab || c->tied || c->arch == STW_ARCH_BERT))
    return "head_vocab (fewer rows in the LM head than vocab) goes with an untied head of a "
           "decoder, below vocab";
  if ((c->per_layer_input != 0) != (c->per_layer_vocab != 0))
    return "per_layer_input and per_layer_vocab go together";
  if (c->per_layer_input != 0 &&
      (c->arch != STW_ARCH_LLAMA || c->per_layer_vocab > STW_MODEL_MAX_VOCAB ||
       c->per_layer_input * c->layers > 8 * (guint64)STW_MODEL_MAX_WIDTH))
    return "per-layer inputs are llama's: per_layer_vocab at most 16777216, per_layer_input x "
           "layers at most 8388608";
  if (c->experts_post_norm && (stw_model_experts(c) < 2 || c->norms != STW_NORMS_PRE))
    return "experts_post_norm goes with experts and norms before only (A.X K1's)";
  if (c->experts_normed && (stw_model_experts(c) < 2 || c->shared_expert_ffn == 0 ||
                            !c->shared_expert_ungated))
    return "experts_normed goes with experts and a shared expert without a gate of its own (the "
           "block's dense MLP: Gemma 4's)";
  if ((c->altup_inputs != 0 || c->laurel_rank != 0) &&
      (c->arch != STW_ARCH_LLAMA || c->norms == STW_NORMS_POST || c->norms == STW_NORMS_SHARED))
    return "altup_inputs and laurel_rank are llama's, with norms before each part (pre or both: "
           "Gemma 3n's)";
  if (c->altup_inputs > 64)
    return "altup_inputs must be 1 to 64";
  if (c->laurel_rank > c->hidden)
    return "laurel_rank must be 1 to hidden";
  const char *vision = vision_conflict(c);
  return vision != NULL ? vision : audio_conflict(c);
}

gboolean
stw_model_config_validate(const StwModelConfig *c, const char *file, GError **error)
{
  const char *where = file != NULL ? file : c->name;
  const char *problem = NULL, *conflict = NULL;
  if (c->name[0] == '\0')
    problem = "the name is empty";
  else if (c->layers < 1 || c->layers > STW_MODEL_MAX_LAYERS)
    problem = "layers must be 1 to 4096";
  else if (c->hidden < 1 || c->hidden > STW_MODEL_MAX_WIDTH)
    problem = "hidden must be 1 to 1048576";
  else if (c->heads < 1 || c->heads > STW_MODEL_MAX_WIDTH)
    problem = "heads must be 1 to 1048576";
  else if (c->head_dim == 0 && c->hidden % c->heads != 0)
    problem = "heads must divide hidden (or head_dim be given)";
  else if (c->head_dim > STW_MODEL_MAX_WIDTH || c->heads * c->head_dim > 8 * (guint64)STW_MODEL_MAX_WIDTH)
    problem = "heads * head_dim must be at most 8388608";
  else if (c->arch == STW_ARCH_BERT && c->head_dim != 0 && c->head_dim * c->heads != c->hidden)
    problem = "bert's heads are hidden / heads wide";
  else if (c->kv_heads < 1 || c->heads % c->kv_heads != 0)
    problem = "kv_heads must divide heads";
  else if (c->arch == STW_ARCH_BERT && c->kv_heads != c->heads)
    problem = "kv_heads must equal heads for bert (grouped-query attention is the decoders')";
  else if (c->experts > STW_MODEL_MAX_EXPERTS)
    problem = "experts must be at most 1024";
  else if (c->experts > 1 && c->arch != STW_ARCH_LLAMA)
    problem = "a mixture of experts is modelled for llama-style blocks only";
  else if (c->qk_norm && c->arch != STW_ARCH_LLAMA && c->arch != STW_ARCH_NEOX)
    problem = "qk_norm is modelled for llama and neox blocks only";
  else if (c->qk_norm_full && c->arch == STW_ARCH_NEOX)
    problem = "qk_norm_full is modelled for llama blocks only (neox's norms are a head wide)";
  else if ((guint)c->norms >= STW_N_NORMS)
    problem = "an unknown norms setting";
  else if (((c->norms != STW_NORMS_PRE && c->norms != STW_NORMS_SHARED) || c->attn_softcap) &&
           c->arch != STW_ARCH_LLAMA)
    problem = "norms after attention and the MLP and the attention's softcap are modelled for "
              "llama-style blocks only";
  else if (c->logit_softcap && c->arch == STW_ARCH_BERT)
    problem = "the logits' softcap is the decoders' (gpt, neox, llama)";
  else if (c->norms == STW_NORMS_SHARED && c->arch == STW_ARCH_BERT)
    problem = "a norm shared by attention and the MLP is modelled for the decoders only";
  else if (c->head_bias && c->arch == STW_ARCH_BERT)
    problem = "head_bias is the decoders' (bert's MLM head is not modelled apart)";
  else if (c->attn_sinks && c->arch != STW_ARCH_LLAMA)
    problem = "attn_sinks are modelled for llama-style blocks only";
  else if (c->attn_gate && (c->arch != STW_ARCH_LLAMA || c->kv_lora_rank != 0))
    problem = "attn_gate is modelled for llama-style blocks without latent attention only";
  else if (c->kv_lora_rank != 0 && c->arch != STW_ARCH_LLAMA)
    problem = "latent attention (kv_lora_rank) is modelled for llama-style blocks only";
  else if (c->kv_lora_rank == 0 && (c->q_lora_rank != 0 || c->rope_dim != 0))
    problem = "q_lora_rank and rope_dim go with latent attention (kv_lora_rank)";
  else if (c->kv_lora_rank == 0 && c->v_head_dim != 0 &&
           (c->arch != STW_ARCH_LLAMA || c->attn_gate || c->diff_attn ||
            c->heads * c->v_head_dim > 8 * (guint64)STW_MODEL_MAX_WIDTH))
    problem = "v_head_dim apart from latent attention is llama's softmax attention's, without "
              "attn_gate or diff_attn, heads * v_head_dim at most 8388608 (MiMo-V2-Flash's)";
  else if (c->kv_lora_rank != 0 && c->v_head_dim == 0)
    problem = "latent attention needs v_head_dim";
  else if (c->kv_lora_rank != 0 && c->kv_heads != c->heads)
    problem = "latent attention has a key and value per head: kv_heads must equal heads";
  else if (c->kv_lora_rank != 0 && (c->qk_norm || c->attn_sinks || c->attn_softcap))
    problem = "latent attention is modelled without qk_norm, attn_sinks or attn_softcap";
  else if (c->kv_lora_rank > STW_MODEL_MAX_WIDTH || c->q_lora_rank > STW_MODEL_MAX_WIDTH ||
           c->rope_dim > STW_MODEL_MAX_WIDTH || c->v_head_dim > STW_MODEL_MAX_WIDTH)
    problem = "kv_lora_rank, q_lora_rank, rope_dim and v_head_dim must be at most 1048576";
  else if (c->kv_lora_rank != 0 &&
           (c->heads * (stw_model_head_dim(c) + c->rope_dim) > 8 * (guint64)STW_MODEL_MAX_WIDTH ||
            c->heads * c->v_head_dim > 8 * (guint64)STW_MODEL_MAX_WIDTH))
    problem = "heads * (head_dim + rope_dim) and heads * v_head_dim must be at most 8388608";
  else if (c->alibi && c->arch != STW_ARCH_NEOX)
    problem = "alibi is modelled for neox blocks only (BLOOM's, Falcon's)";
  else if (c->embed_norm && c->arch != STW_ARCH_NEOX)
    problem = "embed_norm is modelled for neox blocks only (BLOOM's; bert's is its own)";
  else if (c->router_score_bias && c->experts <= 1)
    problem = "router_score_bias goes with experts";
  else if (c->sub_norms && (c->arch != STW_ARCH_LLAMA || c->experts > 1 || c->kv_lora_rank != 0))
    problem = "sub_norms are modelled for llama blocks with a dense MLP and no latent attention "
              "only (BitNet's)";
  else if (c->position_offset > STW_MODEL_MAX_POSITION_OFFSET)
    problem = "position_offset must be at most 1024";
  else if (c->position_offset != 0 && c->arch != STW_ARCH_GPT && c->arch != STW_ARCH_BERT)
    problem = "position_offset is for learned positions (gpt and bert blocks)";
  else if ((guint)c->activation >= STW_N_ACTS)
    problem = "an unknown activation";
  else if ((guint)c->norm_type >= STW_N_NORM_TYPES)
    problem = "an unknown norm_type";
  else if (c->norm_type != STW_NORM_DEFAULT && c->arch == STW_ARCH_BERT)
    problem = "norm_type is the decoders' (gpt, neox, llama)";
  else if (c->activation != STW_ACT_DEFAULT && c->arch == STW_ARCH_LLAMA && !c->mlp_ungated)
    problem = "activation is the gpt, neox and bert blocks' and llama's ungated MLPs' (mlp_gate "
              "false; llama-style blocks gate theirs)";
  else if (c->activation == STW_ACT_XIELU && c->arch == STW_ARCH_LLAMA)
    problem = "xielu in llama blocks: not modelled (its learned scalars are, in gpt and neox "
              "blocks)";
  else if (c->diff_attn && (c->arch != STW_ARCH_LLAMA || c->kv_lora_rank != 0 ||
                            c->attn_gate || c->attn_sinks))
    problem = "diff_attn is modelled for llama-style blocks without latent attention, an output "
              "gate or sinks only (DiffLlama's)";
  else if (c->diff_attn && (c->kv_heads % 2 != 0 || c->heads % 2 != 0))
    problem = "diff_attn needs an even number of heads and of kv_heads (its values in two "
              "halves, its heads in pairs)";
  else if (c->diff_attn && stw_model_attn_dropout(c))
    problem = "diff_attn takes no dropout on its attention (DiffLlama defines none)";
  else if ((c->index_heads != 0) != (c->index_head_dim != 0))
    problem = "index_heads and index_head_dim go together";
  else if (c->index_heads > STW_MODEL_MAX_WIDTH || c->index_head_dim > STW_MODEL_MAX_WIDTH)
    problem = "index_heads and index_head_dim must be 1 to 1048576";
  else if (c->index_heads != 0 && c->kv_lora_rank != 0 && c->q_lora_rank == 0)
    problem = "an indexer (index_heads) of latent attention reads the queries' latent: it goes "
              "with a q_lora_rank";
  else if (c->index_heads != 0 && (c->arch != STW_ARCH_LLAMA || c->diff_attn))
    problem = "an indexer (index_heads) is llama's, not differential attention's";
  else if (mask_count(c->unindexed_blocks) != 0 &&
           (c->index_heads == 0 ||
            mask_count(c->unindexed_blocks) != c->layers - blocks_where(c, stw_model_block_indexed)))
    problem = "unindexed_blocks go with index_heads, blocks below layers";
  else if (mask_count(c->linear_blocks) != stw_model_linear_blocks(c))
    problem = "linear_blocks must be blocks below layers";
  else if (mask_count(c->linear_blocks) != 0 &&
           (c->arch != STW_ARCH_LLAMA || c->index_heads != 0 || c->diff_attn ||
            c->attn_sinks || c->sub_norms))
    problem = "linear attention (linear_blocks) is in llama blocks, beside softmax attention "
              "without an indexer, not differential, without sinks or sub_norms";
  else if ((guint)c->linear_kind >= STW_N_LINEAR_KINDS)
    problem = "an unknown linear_kind";
  else if (mask_count(c->linear_blocks) == 0 &&
           (linear_heads_given(c) || c->linear_conv != 0 || c->linear_kind != STW_LINEAR_GDN ||
            c->linear_conv_bias || c->linear_proj_bias || c->linear_out_bias ||
            c->linear_no_out_norm || c->linear_parallel))
    problem = "linear_kind, linear_k_heads, linear_v_heads, linear_k_head_dim, "
              "linear_v_head_dim, linear_conv, their biases, linear_out_norm and "
              "linear_parallel go with linear_blocks";
  else if (c->linear_no_out_norm && c->linear_kind != STW_LINEAR_MAMBA2)
    problem = "linear_out_norm false is Mamba-2's mixer without its gated norm (linear_kind "
              "mamba2)";
  else if (c->linear_parallel && c->kv_lora_rank != 0)
    problem = "linear_parallel keeps softmax attention beside the linear mixer: not latent "
              "attention's (kv_lora_rank)";
  else if ((c->linear_kind == STW_LINEAR_MAMBA1) !=
           (c->linear_dt_rank != 0 && mask_count(c->linear_blocks) != 0))
    problem = "linear_dt_rank (1 or more) goes with Mamba-1's mixer (linear_kind mamba1)";
  else if (c->linear_kind == STW_LINEAR_MAMBA1 &&
           (c->linear_k_heads != 1 || c->linear_v_heads != 1 ||
            c->linear_dt_rank > STW_MODEL_MAX_WIDTH))
    problem = "Mamba-1's mixer (linear_kind mamba1) has one key and one value head "
              "(linear_k_heads and linear_v_heads 1) and linear_dt_rank at most 1048576";
  else if (c->linear_norms && c->linear_kind != STW_LINEAR_MAMBA1)
    problem = "linear_norms are Mamba-1's (linear_kind mamba1)";
  else if (c->linear_full_gates && c->linear_kind != STW_LINEAR_KDA)
    problem = "linear_full_gates are Kimi Delta Attention's (linear_kind kda)";
  else if (mask_count(c->linear_blocks) != 0 && c->linear_kind == STW_LINEAR_KDA &&
           (c->linear_k_heads != c->linear_v_heads ||
            c->linear_k_head_dim != c->linear_v_head_dim))
    problem = "Kimi Delta Attention (linear_kind kda) has as many key as value heads, as wide";
  else if (mask_count(c->linear_blocks) != 0 && c->linear_kind == STW_LINEAR_LIGHTNING &&
           (c->linear_conv != 0 || c->linear_k_heads != c->linear_v_heads ||
            c->linear_k_head_dim != c->linear_v_head_dim))
    problem = "lightning attention (linear_kind lightning) has no convolution (linear_conv not "
              "given) and as many key as value heads, as wide";
  else if (mask_count(c->linear_blocks) != 0 && c->linear_kind != STW_LINEAR_LIGHTNING &&
           (c->linear_conv < 1 || c->linear_conv > 1024))
    problem = "linear_blocks go with linear_conv, 1 to 1024";
  else if (mask_count(c->linear_blocks) != 0 && c->linear_kind == STW_LINEAR_SHORT_CONV &&
           linear_heads_given(c))
    problem = "a short convolution (linear_kind short_conv) has no heads: linear_k_heads, "
              "linear_v_heads and their widths are not given";
  else if (mask_count(c->linear_blocks) != 0 && c->linear_kind != STW_LINEAR_SHORT_CONV &&
           (c->linear_k_heads < 1 || c->linear_v_heads < 1 || c->linear_k_head_dim < 1 ||
            c->linear_v_head_dim < 1 ||
            c->linear_k_heads * c->linear_k_head_dim > STW_MODEL_MAX_WIDTH ||
            c->linear_v_heads * c->linear_v_head_dim > STW_MODEL_MAX_WIDTH ||
            c->linear_v_heads > STW_MODEL_MAX_WIDTH))
    problem = "linear_blocks go with linear_k_heads, linear_v_heads, linear_k_head_dim and "
              "linear_v_head_dim, each 1 or more, each side's heads x head width at most 1048576";
  else if (mask_count(c->mixer_only_blocks) != c->layers - stw_model_mlp_blocks(c) ||
           mask_count(c->mlp_only_blocks) != c->layers - blocks_where(c, stw_model_block_mixer))
    problem = "mixer_only_blocks and mlp_only_blocks must be blocks below layers";
  else if ((mask_count(c->mixer_only_blocks) != 0 || mask_count(c->mlp_only_blocks) != 0) &&
           (c->arch != STW_ARCH_LLAMA || c->norms != STW_NORMS_PRE))
    problem = "blocks of one part (mixer_only_blocks, mlp_only_blocks, mlp false) are llama "
              "blocks with norms before (Mamba's, Nemotron-H's)";
  else if ((conflict = one_part_conflict(c)) != NULL)
    problem = conflict;
  else if (stw_model_experts(c) > 1 && stw_model_mlp_blocks(c) == 0)
    problem = "experts go with blocks that have an MLP (not every block mixer-only)";
  else if (c->mlp_ungated && c->arch != STW_ARCH_LLAMA)
    problem = "mlp_gate false is llama's (gpt, neox and bert MLPs have no gate)";
  else if (c->expert_latent != 0 && (stw_model_experts(c) < 2 ||
                                     c->expert_latent > STW_MODEL_MAX_WIDTH))
    problem = "expert_latent (1 to 1048576) goes with experts";
  else if (c->no_rope && (c->arch != STW_ARCH_LLAMA || c->kv_lora_rank != 0))
    problem = "rope false is llama's softmax attention (latent attention keeps its rotary part)";
  else if ((conflict = attention_variant_conflict(c)) != NULL ||
           (conflict = head_and_mlp_variant_conflict(c)) != NULL)
    problem = conflict;
  else if (mask_count(c->linear_blocks) != 0 && c->linear_kind != STW_LINEAR_SHORT_CONV &&
           c->linear_v_heads % c->linear_k_heads != 0)
    problem = "linear_k_heads must divide linear_v_heads";
  else if ((c->linear_conv_bias || c->linear_proj_bias || c->linear_out_bias) &&
           c->linear_kind == STW_LINEAR_GDN)
    problem = "linear_conv_bias, linear_proj_bias and linear_out_bias are Mamba-2's and the "
              "short convolution's, not Gated DeltaNet's";
  else if (c->attn_head_gate && c->arch != STW_ARCH_LLAMA)
    problem = "attn_head_gate is llama's";
  else if ((c->no_pooler || c->no_token_types) && c->arch != STW_ARCH_BERT)
    problem = "pooler and token_types 0 are bert's";
  else if (c->no_token_types && c->token_types != 0)
    problem = "token_types is either none or a count";
  else if (c->no_final_norm && c->arch == STW_ARCH_BERT)
    problem = "final_norm is the decoders' (gpt, neox, llama): bert's encoder has none";
  else if (c->activation == STW_ACT_XIELU && c->arch == STW_ARCH_BERT)
    problem = "xielu in bert blocks: not modelled (its learned scalars are, in gpt and neox "
              "blocks)";
  else if (c->qk_norm_full && !c->qk_norm)
    problem = "qk_norm_full needs qk_norm";
  else if (c->token_types != 0 && c->arch != STW_ARCH_BERT)
    problem = "token_types are bert's";
  else if (c->token_types > STW_MODEL_MAX_TOKEN_TYPES)
    problem = "token_types must be 1 to 1024";
  else if (c->shared_expert_ffn != 0 && stw_model_experts(c) < 2)
    problem = "a shared expert goes with experts";
  else if (c->shared_expert_ungated && c->shared_expert_ffn == 0)
    problem = "shared_expert_gate goes with a shared expert (shared_expert_ffn)";
  else if (mask_count(c->dense_blocks) != 0 && stw_model_experts(c) < 2)
    problem = "dense blocks (dense_layers, dense_blocks) go with experts";
  else if (mask_count(c->dense_blocks) != stw_model_dense_blocks(c))
    problem = "dense_blocks must be blocks below layers (dense_layers at most layers)";
  else if ((mask_count(c->dense_blocks) != 0) != (c->dense_ffn != 0))
    problem = "dense blocks (dense_layers, dense_blocks) and dense_ffn go together";
  else if (c->dense_ffn > 8 * (guint64)STW_MODEL_MAX_WIDTH)
    problem = "dense_ffn must be 1 to 8388608";
  else if (c->shared_expert_ffn > 8 * (guint64)STW_MODEL_MAX_WIDTH)
    problem = "shared_expert_ffn must be 1 to 8388608";
  else if (c->zero_experts != 0 && (stw_model_experts(c) < 2 ||
                                     c->zero_experts > STW_MODEL_MAX_EXPERTS))
    problem = "zero_experts go with experts, at most 1024";
  else if (c->experts_per_token > stw_model_experts(c) + c->zero_experts)
    problem = "experts_per_token must be at most experts (and zero_experts)";
  else if (c->ffn < 1 || c->ffn > 8 * (guint64)STW_MODEL_MAX_WIDTH)
    problem = "ffn must be 1 to 8388608";
  else if (c->vocab < 1 || c->vocab > STW_MODEL_MAX_VOCAB)
    problem = "vocab must be 1 to 16777216";
  else if (c->max_seq < 1 || c->max_seq > STW_MODEL_MAX_SEQ)
    problem = "max_seq must be 1 to 16777216";
  else if ((guint)c->bias[STW_SITE_QKV] >= STW_N_BIAS || (guint)c->bias[STW_SITE_OUT] >= STW_N_BIAS ||
           (guint)c->bias[STW_SITE_MLP] >= STW_N_BIAS || (guint)c->arch >= STW_N_ARCHS ||
           (guint)c->attn_dropout >= STW_N_BIAS || (guint)c->resid_dropout >= STW_N_BIAS)
    problem = "an unknown architecture, bias or dropout setting";
  else if (c->arch == STW_ARCH_BERT && !c->tied)
    problem = "bert's MLM decoder is always tied to the word embeddings";
  else if (!param_count_checked(c, NULL))
    problem = "more than 2^53 parameters (9.0e15): beyond what stowage's files count exactly";
  if (problem != NULL) {
    g_set_error(error, STW_MODEL_ERROR, STW_MODEL_ERROR_INVALID, "%s: invalid model: %s",
                where, problem);
    return FALSE;
  }
  return TRUE;
}

/* A model's members, inside a trace's or plan's "model" and in a file of its own (which names
 * its format and version first). */
#define MODEL_MEMBERS                                                                             \
  "name", "arch", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "max_seq", "tied",    \
      "head_dim", "qkv_bias", "out_bias", "mlp_bias", "experts", "experts_per_token", "qk_norm", \
      "norms", "qk_norm_full", "logit_softcap", "attn_softcap", "head_bias", "token_types",      \
      "shared_expert_ffn", "activation", "position_offset", "attn_sinks", "alibi", "embed_norm", \
      "sub_norms", "router_score_bias", "attn_gate", "final_norm", "diff_attn", "index_heads",   \
      "index_head_dim", "pooler",                                                                \
      "attn_fp32",                                                                               \
      "shared_expert_gate", "dense_layers", "dense_blocks", "dense_ffn", "kv_lora_rank",         \
      "linear_blocks", "linear_k_heads", "linear_v_heads", "linear_k_head_dim",                  \
      "linear_v_head_dim", "linear_conv", "linear_kind", "linear_conv_bias", "linear_proj_bias", \
      "mlp", "linear_dt_rank", "linear_norms", "linear_full_gates", "attn_head_gate",            \
      "linear_out_bias", "linear_out_norm", "linear_parallel", "q_lora_rank",                    \
      "rope_dim", "v_head_dim", "attn_dropout", "resid_dropout", "norm_type",                    \
      "mixer_only_blocks", "mlp_only_blocks", "mlp_gate", "expert_latent", "rope",               \
      "global_blocks", "global_head_dim", "global_kv_heads", "global_values_are_keys",           \
      "kv_shared_blocks", "kv_shared_wide_mlp", "per_layer_input", "per_layer_vocab",            \
      "experts_normed", "head_vocab", "experts_post_norm", "global_sinks", "attn_gate_in_q",   \
      "altup_inputs", "laurel_rank", "zero_experts", "unindexed_blocks", "vision_layers",        \
      "vision_hidden", "vision_ffn", "vision_channels", "vision_patch", "vision_image",          \
      "vision_pooling_head", "vision_kind", "vision_heads", "vision_kv_heads", "vision_head_dim", \
      "vision_positions", "audio_layers", "audio_hidden", "audio_heads", "audio_conv",           \
      "audio_conv2", "audio_kernel", "audio_output", "vision_merge", "vision_feature_layers",    \
      "vision_projector_bias", "vision_temporal_patch", "vision_deepstack", "vision_out",      \
      "vision_projector", "vision_newline", "vision_qk_norm", "vision_attn_bias",            \
      "vision_rms_norm", "vision_final_norm", "vision_global_layers", "vision_tiles",          \
      "vision_aspect_ratios", "vision_features", "vision_cross_layers", "vision_window",        \
      "vision_full_blocks"
static const char *const config_members[] = { MODEL_MEMBERS, NULL };
static const char *const standalone_members[] = { "format", "version", MODEL_MEMBERS, NULL };

/* Member KEY of OBJ, a list of block indices in ascending order (absent: none), into MASK;
 * whether they lie below layers is stw_model_config_validate's to say. */
static gboolean
read_block_list(StwJsonReader *r, const cJSON *obj, const char *key, guint64 *mask,
                GError **error)
{
  const cJSON *list = NULL;
  if (!stw_json_get_array(r, obj, key, FALSE, STW_MODEL_MAX_LAYERS, &list, error))
    return FALSE;
  gsize saved = stw_json_push_key(r, key);
  guint64 k = 0, before = 0;
  for (const cJSON *e = list != NULL ? list->child : NULL; e != NULL; e = e->next, k++) {
    gsize s2 = stw_json_push_index(r, k);
    guint64 l = 0;
    if (!stw_json_as_u64(r, e, 0, STW_MODEL_MAX_LAYERS - 1, &l, error))
      return FALSE;
    if (k > 0 && l <= before)
      return stw_json_fail(r, error, "%" G_GUINT64_FORMAT " after %" G_GUINT64_FORMAT ": "
                           "expected block indices in ascending order, each once", l, before);
    mask_set(mask, l, TRUE);
    before = l;
    stw_json_pop(r, s2);
  }
  stw_json_pop(r, saved);
  return TRUE;
}

/* Its blocks as a list of indices, member KEY of O, where any of MASK's first LAYERS is set. */
static void
add_block_list(cJSON *o, const char *key, const guint64 *mask, guint64 layers)
{
  cJSON *list = NULL;
  for (guint64 l = 0; l < layers; l++)
    if (mask_get(mask, l)) {
      if (list == NULL)
        list = cJSON_AddArrayToObject(o, key);
      cJSON_AddItemToArray(list, stw_json_u64(l));
    }
}

/* The dense blocks among the experts' into C: dense_layers, the first so many, or dense_blocks,
 * any (one or the other). */
static gboolean
read_dense_blocks(StwJsonReader *r, const cJSON *obj, StwModelConfig *c, GError **error)
{
  guint64 first = 0;
  if (!stw_json_get_u64(r, obj, "dense_layers", FALSE, 1, STW_MODEL_MAX_LAYERS, &first, error) ||
      !read_block_list(r, obj, "dense_blocks", c->dense_blocks, error))
    return FALSE;
  if (first != 0 && mask_count(c->dense_blocks) != 0)
    return stw_json_fail_at(r, "dense_blocks", error, "expected dense_layers (the first blocks) "
                            "or dense_blocks (any), not both");
  for (guint64 l = 0; l < first; l++)
    stw_model_set_block_dense(c, l, TRUE);
  return TRUE;
}

/* The members written only where a model has them (a model without them reads as before). */
static gboolean
read_optional_shape(StwJsonReader *r, const cJSON *obj, StwModelConfig *c, GError **error)
{
  int norms = (int)c->norms, activation = (int)c->activation, norm_type = (int)c->norm_type;
  int linear_kind = (int)c->linear_kind, vision_kind = (int)c->vision_kind;
  int vision_projector = (int)c->vision_projector;
  gboolean gated = !c->shared_expert_ungated, final_norm = !c->no_final_norm,
           pooler = !c->no_pooler, mlp = TRUE, gate = !c->mlp_ungated, rope = !c->no_rope,
           global_sinks = !c->global_no_sinks;
  if (!stw_json_get_enum(r, obj, "activation", FALSE, stw_activation_names, &activation, error) ||
      !stw_json_get_u64(r, obj, "head_dim", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->head_dim, error) ||
      !stw_json_get_u64(r, obj, "experts", FALSE, 1, STW_MODEL_MAX_EXPERTS, &c->experts, error) ||
      !stw_json_get_u64(r, obj, "experts_per_token", FALSE, 1, STW_MODEL_MAX_EXPERTS,
                        &c->experts_per_token, error) ||
      !stw_json_get_bool(r, obj, "qk_norm", FALSE, &c->qk_norm, error) ||
      !stw_json_get_enum(r, obj, "norms", FALSE, stw_norms_names, &norms, error) ||
      !stw_json_get_enum(r, obj, "norm_type", FALSE, stw_norm_type_names, &norm_type, error) ||
      !stw_json_get_bool(r, obj, "qk_norm_full", FALSE, &c->qk_norm_full, error) ||
      !stw_json_get_bool(r, obj, "logit_softcap", FALSE, &c->logit_softcap, error) ||
      !stw_json_get_bool(r, obj, "attn_softcap", FALSE, &c->attn_softcap, error) ||
      !stw_json_get_bool(r, obj, "head_bias", FALSE, &c->head_bias, error) ||
      !stw_json_get_bool(r, obj, "attn_sinks", FALSE, &c->attn_sinks, error) ||
      !stw_json_get_bool(r, obj, "attn_fp32", FALSE, &c->attn_fp32, error) ||
      !stw_json_get_bool(r, obj, "alibi", FALSE, &c->alibi, error) ||
      !stw_json_get_bool(r, obj, "embed_norm", FALSE, &c->embed_norm, error) ||
      !stw_json_get_bool(r, obj, "sub_norms", FALSE, &c->sub_norms, error) ||
      !stw_json_get_bool(r, obj, "attn_gate", FALSE, &c->attn_gate, error) ||
      !stw_json_get_bool(r, obj, "attn_head_gate", FALSE, &c->attn_head_gate, error) ||
      !stw_json_get_bool(r, obj, "final_norm", FALSE, &final_norm, error) ||
      !stw_json_get_bool(r, obj, "mlp", FALSE, &mlp, error) ||
      !stw_json_get_bool(r, obj, "diff_attn", FALSE, &c->diff_attn, error) ||
      !stw_json_get_bool(r, obj, "pooler", FALSE, &pooler, error) ||
      !stw_json_get_u64(r, obj, "index_heads", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->index_heads,
                        error) ||
      !stw_json_get_u64(r, obj, "index_head_dim", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->index_head_dim, error) ||
      !stw_json_get_bool(r, obj, "router_score_bias", FALSE, &c->router_score_bias, error) ||
      !stw_json_get_bool(r, obj, "shared_expert_gate", FALSE, &gated, error) ||
      !read_dense_blocks(r, obj, c, error) ||
      !read_block_list(r, obj, "linear_blocks", c->linear_blocks, error) ||
      !read_block_list(r, obj, "mixer_only_blocks", c->mixer_only_blocks, error) ||
      !read_block_list(r, obj, "mlp_only_blocks", c->mlp_only_blocks, error) ||
      !stw_json_get_bool(r, obj, "mlp_gate", FALSE, &gate, error) ||
      !stw_json_get_bool(r, obj, "rope", FALSE, &rope, error) ||
      !stw_json_get_u64(r, obj, "expert_latent", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->expert_latent, error) ||
      !read_block_list(r, obj, "global_blocks", c->global_blocks, error) ||
      !stw_json_get_u64(r, obj, "global_head_dim", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->global_head_dim, error) ||
      !stw_json_get_u64(r, obj, "global_kv_heads", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->global_kv_heads, error) ||
      !stw_json_get_bool(r, obj, "global_values_are_keys", FALSE, &c->global_values_are_keys,
                         error) ||
      !read_block_list(r, obj, "kv_shared_blocks", c->kv_shared_blocks, error) ||
      !read_block_list(r, obj, "unindexed_blocks", c->unindexed_blocks, error) ||
      !stw_json_get_bool(r, obj, "kv_shared_wide_mlp", FALSE, &c->kv_shared_wide_mlp, error) ||
      !stw_json_get_u64(r, obj, "per_layer_input", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->per_layer_input, error) ||
      !stw_json_get_u64(r, obj, "per_layer_vocab", FALSE, 1, STW_MODEL_MAX_VOCAB,
                        &c->per_layer_vocab, error) ||
      !stw_json_get_bool(r, obj, "experts_normed", FALSE, &c->experts_normed, error) ||
      !stw_json_get_bool(r, obj, "experts_post_norm", FALSE, &c->experts_post_norm, error) ||
      !stw_json_get_bool(r, obj, "attn_gate_in_q", FALSE, &c->attn_gate_in_q, error) ||
      !stw_json_get_u64(r, obj, "altup_inputs", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->altup_inputs,
                        error) ||
      !stw_json_get_u64(r, obj, "laurel_rank", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->laurel_rank,
                        error) ||
      !stw_json_get_u64(r, obj, "zero_experts", FALSE, 1, STW_MODEL_MAX_EXPERTS,
                        &c->zero_experts, error) ||
      !stw_json_get_u64(r, obj, "vision_layers", FALSE, 1, STW_MODEL_MAX_LAYERS,
                        &c->vision_layers, error) ||
      !stw_json_get_u64(r, obj, "vision_hidden", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->vision_hidden, error) ||
      !stw_json_get_u64(r, obj, "vision_ffn", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->vision_ffn,
                        error) ||
      !stw_json_get_u64(r, obj, "vision_channels", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->vision_channels, error) ||
      !stw_json_get_u64(r, obj, "vision_patch", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->vision_patch, error) ||
      !stw_json_get_u64(r, obj, "vision_image", FALSE, 1, STW_MODEL_MAX_SEQ, &c->vision_image,
                        error) ||
      !stw_json_get_bool(r, obj, "vision_pooling_head", FALSE, &c->vision_pooling_head,
                         error) ||
      !stw_json_get_enum(r, obj, "vision_kind", FALSE, stw_vision_kind_names, &vision_kind,
                         error) ||
      !stw_json_get_u64(r, obj, "vision_heads", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->vision_heads,
                        error) ||
      !stw_json_get_u64(r, obj, "vision_kv_heads", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->vision_kv_heads, error) ||
      !stw_json_get_u64(r, obj, "vision_head_dim", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->vision_head_dim, error) ||
      !stw_json_get_u64(r, obj, "vision_positions", FALSE, 1, STW_MODEL_MAX_SEQ,
                        &c->vision_positions, error) ||
      !stw_json_get_u64(r, obj, "vision_merge", FALSE, 1, 1024, &c->vision_merge, error) ||
      !stw_json_get_u64(r, obj, "vision_feature_layers", FALSE, 1, STW_MODEL_MAX_LAYERS,
                        &c->vision_feature_layers, error) ||
      !stw_json_get_u64(r, obj, "vision_temporal_patch", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->vision_temporal_patch, error) ||
      !stw_json_get_u64(r, obj, "vision_deepstack", FALSE, 1, STW_MODEL_MAX_LAYERS,
                        &c->vision_deepstack, error) ||
      !stw_json_get_u64(r, obj, "vision_out", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->vision_out,
                        error) ||
      !stw_json_get_enum(r, obj, "vision_projector", FALSE, stw_vision_projector_names,
                         &vision_projector, error) ||
      !stw_json_get_bool(r, obj, "vision_newline", FALSE, &c->vision_newline, error) ||
      !stw_json_get_bool(r, obj, "vision_qk_norm", FALSE, &c->vision_qk_norm, error) ||
      !stw_json_get_bool(r, obj, "vision_attn_bias", FALSE, &c->vision_attn_bias, error) ||
      !stw_json_get_bool(r, obj, "vision_rms_norm", FALSE, &c->vision_rms_norm, error) ||
      !stw_json_get_bool(r, obj, "vision_final_norm", FALSE, &c->vision_final_norm, error) ||
      !stw_json_get_u64(r, obj, "vision_global_layers", FALSE, 1, STW_MODEL_MAX_LAYERS,
                        &c->vision_global_layers, error) ||
      !stw_json_get_u64(r, obj, "vision_tiles", FALSE, 1, 64, &c->vision_tiles, error) ||
      !stw_json_get_u64(r, obj, "vision_aspect_ratios", FALSE, 1, 64, &c->vision_aspect_ratios,
                        error) ||
      !stw_json_get_u64(r, obj, "vision_features", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->vision_features, error) ||
      !stw_json_get_u64(r, obj, "vision_cross_layers", FALSE, 1, STW_MODEL_MAX_LAYERS,
                        &c->vision_cross_layers, error) ||
      !stw_json_get_u64(r, obj, "vision_window", FALSE, 1, STW_MODEL_MAX_IMAGE,
                        &c->vision_window, error) ||
      !read_block_list(r, obj, "vision_full_blocks", c->vision_full_blocks, error) ||
      !stw_json_get_bool(r, obj, "vision_projector_bias", FALSE, &c->vision_projector_bias,
                         error) ||
      !stw_json_get_u64(r, obj, "audio_layers", FALSE, 1, STW_MODEL_MAX_LAYERS,
                        &c->audio_layers, error) ||
      !stw_json_get_u64(r, obj, "audio_hidden", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->audio_hidden,
                        error) ||
      !stw_json_get_u64(r, obj, "audio_heads", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->audio_heads,
                        error) ||
      !stw_json_get_u64(r, obj, "audio_conv", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->audio_conv,
                        error) ||
      !stw_json_get_u64(r, obj, "audio_conv2", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->audio_conv2,
                        error) ||
      !stw_json_get_u64(r, obj, "audio_kernel", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->audio_kernel,
                        error) ||
      !stw_json_get_u64(r, obj, "audio_output", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->audio_output,
                        error) ||
      !stw_json_get_bool(r, obj, "global_sinks", FALSE, &global_sinks, error) ||
      !stw_json_get_u64(r, obj, "head_vocab", FALSE, 1, STW_MODEL_MAX_VOCAB, &c->head_vocab,
                        error) ||
      !stw_json_get_u64(r, obj, "linear_k_heads", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->linear_k_heads, error) ||
      !stw_json_get_u64(r, obj, "linear_v_heads", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->linear_v_heads, error) ||
      !stw_json_get_u64(r, obj, "linear_k_head_dim", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->linear_k_head_dim, error) ||
      !stw_json_get_u64(r, obj, "linear_v_head_dim", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->linear_v_head_dim, error) ||
      !stw_json_get_u64(r, obj, "linear_conv", FALSE, 1, 1024, &c->linear_conv, error) ||
      !stw_json_get_enum(r, obj, "linear_kind", FALSE, stw_linear_kind_names, &linear_kind,
                         error) ||
      !stw_json_get_bool(r, obj, "linear_conv_bias", FALSE, &c->linear_conv_bias, error) ||
      !stw_json_get_u64(r, obj, "linear_dt_rank", FALSE, 1, STW_MODEL_MAX_WIDTH,
                        &c->linear_dt_rank, error) ||
      !stw_json_get_bool(r, obj, "linear_norms", FALSE, &c->linear_norms, error) ||
      !stw_json_get_bool(r, obj, "linear_full_gates", FALSE, &c->linear_full_gates, error) ||
      !stw_json_get_bool(r, obj, "linear_proj_bias", FALSE, &c->linear_proj_bias, error) ||
      !stw_json_get_u64(r, obj, "dense_ffn", FALSE, 1, 8 * (guint64)STW_MODEL_MAX_WIDTH,
                        &c->dense_ffn, error) ||
      !stw_json_get_u64(r, obj, "kv_lora_rank", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->kv_lora_rank,
                        error) ||
      !stw_json_get_u64(r, obj, "q_lora_rank", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->q_lora_rank,
                        error) ||
      !stw_json_get_u64(r, obj, "rope_dim", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->rope_dim, error) ||
      !stw_json_get_u64(r, obj, "v_head_dim", FALSE, 1, STW_MODEL_MAX_WIDTH, &c->v_head_dim,
                        error) ||
      !stw_json_get_u64(r, obj, "shared_expert_ffn", FALSE, 1, 8 * (guint64)STW_MODEL_MAX_WIDTH,
                        &c->shared_expert_ffn, error) ||
      !stw_json_get_u64(r, obj, "token_types", FALSE, 0, STW_MODEL_MAX_TOKEN_TYPES,
                        &c->token_types, error) ||
      !stw_json_get_u64(r, obj, "position_offset", FALSE, 0, STW_MODEL_MAX_POSITION_OFFSET,
                        &c->position_offset, error))
    return FALSE;
  /* the output projection biased as the input's unless it says (Falcon-H1's apart) */
  c->linear_out_bias = c->linear_proj_bias;
  gboolean out_norm = TRUE;
  if (!stw_json_get_bool(r, obj, "linear_out_bias", FALSE, &c->linear_out_bias, error) ||
      !stw_json_get_bool(r, obj, "linear_out_norm", FALSE, &out_norm, error) ||
      !stw_json_get_bool(r, obj, "linear_parallel", FALSE, &c->linear_parallel, error))
    return FALSE;
  c->linear_no_out_norm = !out_norm;
  c->norms = (StwNorms)norms;
  c->norm_type = (StwNormType)norm_type;
  c->linear_kind = (StwLinearKind)linear_kind;
  c->vision_kind = (StwVisionKind)vision_kind;
  c->vision_projector = (StwVisionProjector)vision_projector;
  if (cJSON_GetObjectItemCaseSensitive(obj, "token_types") != NULL && c->token_types == 0)
    c->no_token_types = TRUE; /* 0 written: none at all (absent: the usual 2) */
  c->activation = (StwActivation)activation;
  c->shared_expert_ungated = !gated;
  c->no_final_norm = !final_norm;
  c->mlp_ungated = !gate;
  c->no_rope = !rope;
  c->global_no_sinks = !global_sinks;
  if (!mlp && mask_count(c->mixer_only_blocks) != 0)
    return stw_json_fail_at(r, "mixer_only_blocks", error, "expected mlp false (every block) or "
                            "mixer_only_blocks (any), not both");
  for (guint64 l = 0; !mlp && l < c->layers; l++)
    stw_model_set_block_mlp(c, l, FALSE);
  c->no_pooler = !pooler;
  if (c->token_types == 2)
    c->token_types = 0; /* the usual: as the default */
  for (int site = 0; site < STW_N_SITES; site++) {
    if (cJSON_GetObjectItemCaseSensitive(obj, stw_bias_site_names[site]) == NULL)
      continue;
    gboolean on = FALSE;
    if (!stw_json_get_bool(r, obj, stw_bias_site_names[site], TRUE, &on, error))
      return FALSE;
    c->bias[site] = on ? STW_BIAS_YES : STW_BIAS_NO;
  }
  /* dropout where the configuration says otherwise than its architecture */
  const char *const dropout_names[] = { "attn_dropout", "resid_dropout" };
  StwBias *dropout[] = { &c->attn_dropout, &c->resid_dropout };
  for (int k = 0; k < 2; k++) {
    if (cJSON_GetObjectItemCaseSensitive(obj, dropout_names[k]) == NULL)
      continue;
    gboolean on = FALSE;
    if (!stw_json_get_bool(r, obj, dropout_names[k], TRUE, &on, error))
      return FALSE;
    *dropout[k] = on ? STW_BIAS_YES : STW_BIAS_NO;
  }
  return TRUE;
}

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
      !stw_json_get_bool(r, obj, "tied", FALSE, &c.tied, error) ||
      !read_optional_shape(r, obj, &c, error))
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
  if (c->head_dim != 0)
    stw_json_add_u64(o, "head_dim", c->head_dim);
  for (int site = 0; site < STW_N_SITES; site++) {
    StwModelConfig arch_default = { .arch = c->arch };
    if (stw_model_has_bias(c, site) != stw_model_has_bias(&arch_default, site))
      cJSON_AddBoolToObject(o, stw_bias_site_names[site], stw_model_has_bias(c, site));
  }
  if (stw_model_attn_dropout(c) != arch_dropout(c->arch))
    cJSON_AddBoolToObject(o, "attn_dropout", stw_model_attn_dropout(c));
  if (stw_model_resid_dropout(c) != arch_dropout(c->arch))
    cJSON_AddBoolToObject(o, "resid_dropout", stw_model_resid_dropout(c));
  if (stw_model_experts(c) > 1) {
    stw_json_add_u64(o, "experts", c->experts);
    stw_json_add_u64(o, "experts_per_token", stw_model_active_experts(c));
    if (c->zero_experts != 0)
      stw_json_add_u64(o, "zero_experts", c->zero_experts);
    if (c->shared_expert_ffn != 0)
      stw_json_add_u64(o, "shared_expert_ffn", c->shared_expert_ffn);
    if (c->shared_expert_ungated)
      cJSON_AddBoolToObject(o, "shared_expert_gate", FALSE);
    guint64 first = stw_model_dense_prefix(c);
    if (first != G_MAXUINT64 && first != 0) /* the first blocks: their count */
      stw_json_add_u64(o, "dense_layers", first);
    else if (first == G_MAXUINT64) /* any others: their indices */
      add_block_list(o, "dense_blocks", c->dense_blocks, c->layers);
    if (stw_model_dense_blocks(c) != 0)
      stw_json_add_u64(o, "dense_ffn", c->dense_ffn);
  }
  if (stw_model_linear_blocks(c) != 0) {
    add_block_list(o, "linear_blocks", c->linear_blocks, c->layers);
    if (linear_heads_given(c)) { /* not a short convolution's */
      stw_json_add_u64(o, "linear_k_heads", c->linear_k_heads);
      stw_json_add_u64(o, "linear_v_heads", c->linear_v_heads);
      stw_json_add_u64(o, "linear_k_head_dim", c->linear_k_head_dim);
      stw_json_add_u64(o, "linear_v_head_dim", c->linear_v_head_dim);
    }
    if (c->linear_conv != 0) /* not lightning attention's */
      stw_json_add_u64(o, "linear_conv", c->linear_conv);
    if (c->linear_kind != STW_LINEAR_GDN)
      cJSON_AddStringToObject(o, "linear_kind", stw_linear_kind_names[c->linear_kind]);
    if (c->linear_dt_rank != 0)
      stw_json_add_u64(o, "linear_dt_rank", c->linear_dt_rank);
    if (c->linear_norms)
      cJSON_AddBoolToObject(o, "linear_norms", TRUE);
    if (c->linear_full_gates)
      cJSON_AddBoolToObject(o, "linear_full_gates", TRUE);
    if (c->linear_conv_bias)
      cJSON_AddBoolToObject(o, "linear_conv_bias", TRUE);
    if (c->linear_proj_bias)
      cJSON_AddBoolToObject(o, "linear_proj_bias", TRUE);
    if (c->linear_out_bias != c->linear_proj_bias)
      cJSON_AddBoolToObject(o, "linear_out_bias", c->linear_out_bias);
    if (c->linear_no_out_norm)
      cJSON_AddBoolToObject(o, "linear_out_norm", FALSE);
    if (c->linear_parallel)
      cJSON_AddBoolToObject(o, "linear_parallel", TRUE);
  }
  if (c->qk_norm)
    cJSON_AddBoolToObject(o, "qk_norm", TRUE);
  if (c->norms != STW_NORMS_PRE)
    cJSON_AddStringToObject(o, "norms", stw_norms_names[c->norms]);
  if (c->norm_type != STW_NORM_DEFAULT)
    cJSON_AddStringToObject(o, "norm_type", stw_norm_type_names[c->norm_type]);
  if (c->qk_norm_full)
    cJSON_AddBoolToObject(o, "qk_norm_full", TRUE);
  if (c->logit_softcap)
    cJSON_AddBoolToObject(o, "logit_softcap", TRUE);
  if (c->attn_softcap)
    cJSON_AddBoolToObject(o, "attn_softcap", TRUE);
  if (c->head_bias)
    cJSON_AddBoolToObject(o, "head_bias", TRUE);
  if ((c->token_types != 0 && c->token_types != 2) || c->no_token_types)
    stw_json_add_u64(o, "token_types", c->token_types);
  if (c->activation != STW_ACT_DEFAULT)
    cJSON_AddStringToObject(o, "activation", stw_activation_names[c->activation]);
  if (c->position_offset != 0)
    stw_json_add_u64(o, "position_offset", c->position_offset);
  if (c->attn_sinks)
    cJSON_AddBoolToObject(o, "attn_sinks", TRUE);
  if (c->attn_fp32)
    cJSON_AddBoolToObject(o, "attn_fp32", TRUE);
  if (c->kv_lora_rank != 0) {
    stw_json_add_u64(o, "kv_lora_rank", c->kv_lora_rank);
    if (c->q_lora_rank != 0)
      stw_json_add_u64(o, "q_lora_rank", c->q_lora_rank);
    if (c->rope_dim != 0)
      stw_json_add_u64(o, "rope_dim", c->rope_dim);
    stw_json_add_u64(o, "v_head_dim", c->v_head_dim);
  }
  if (c->alibi)
    cJSON_AddBoolToObject(o, "alibi", TRUE);
  if (c->embed_norm)
    cJSON_AddBoolToObject(o, "embed_norm", TRUE);
  if (c->sub_norms)
    cJSON_AddBoolToObject(o, "sub_norms", TRUE);
  if (c->attn_gate)
    cJSON_AddBoolToObject(o, "attn_gate", TRUE);
  if (c->attn_head_gate)
    cJSON_AddBoolToObject(o, "attn_head_gate", TRUE);
  if (c->no_final_norm)
    cJSON_AddBoolToObject(o, "final_norm", FALSE);
  guint64 mlps = stw_model_mlp_blocks(c);
  if (mlps == 0) /* every block: Mamba's */
    cJSON_AddBoolToObject(o, "mlp", FALSE);
  else if (mlps != c->layers)
    add_block_list(o, "mixer_only_blocks", c->mixer_only_blocks, c->layers);
  add_block_list(o, "mlp_only_blocks", c->mlp_only_blocks, c->layers);
  if (c->mlp_ungated)
    cJSON_AddBoolToObject(o, "mlp_gate", FALSE);
  if (c->expert_latent != 0)
    stw_json_add_u64(o, "expert_latent", c->expert_latent);
  if (c->no_rope)
    cJSON_AddBoolToObject(o, "rope", FALSE);
  add_block_list(o, "global_blocks", c->global_blocks, c->layers);
  if (c->global_head_dim != 0)
    stw_json_add_u64(o, "global_head_dim", c->global_head_dim);
  if (c->global_kv_heads != 0)
    stw_json_add_u64(o, "global_kv_heads", c->global_kv_heads);
  if (c->global_values_are_keys)
    cJSON_AddBoolToObject(o, "global_values_are_keys", TRUE);
  add_block_list(o, "kv_shared_blocks", c->kv_shared_blocks, c->layers);
  add_block_list(o, "unindexed_blocks", c->unindexed_blocks, c->layers);
  if (c->kv_shared_wide_mlp)
    cJSON_AddBoolToObject(o, "kv_shared_wide_mlp", TRUE);
  if (c->per_layer_input != 0) {
    stw_json_add_u64(o, "per_layer_input", c->per_layer_input);
    stw_json_add_u64(o, "per_layer_vocab", c->per_layer_vocab);
  }
  if (c->experts_normed)
    cJSON_AddBoolToObject(o, "experts_normed", TRUE);
  if (c->head_vocab != 0)
    stw_json_add_u64(o, "head_vocab", c->head_vocab);
  if (c->experts_post_norm)
    cJSON_AddBoolToObject(o, "experts_post_norm", TRUE);
  if (c->global_no_sinks)
    cJSON_AddBoolToObject(o, "global_sinks", FALSE);
  if (c->altup_inputs != 0)
    stw_json_add_u64(o, "altup_inputs", c->altup_inputs);
  if (c->laurel_rank != 0)
    stw_json_add_u64(o, "laurel_rank", c->laurel_rank);
  if (c->vision_layers != 0) {
    if (c->vision_kind != STW_VISION_SIGLIP)
      cJSON_AddStringToObject(o, "vision_kind", stw_vision_kind_names[c->vision_kind]);
    const struct {
      const char *key;
      guint64 value;
    } sizes[] = {
      { "vision_layers", c->vision_layers },       { "vision_hidden", c->vision_hidden },
      { "vision_ffn", c->vision_ffn },             { "vision_channels", c->vision_channels },
      { "vision_patch", c->vision_patch },         { "vision_image", c->vision_image },
      { "vision_heads", c->vision_heads },         { "vision_kv_heads", c->vision_kv_heads },
      { "vision_head_dim", c->vision_head_dim },   { "vision_positions", c->vision_positions },
      { "vision_merge", c->vision_merge },
      { "vision_feature_layers", c->vision_feature_layers },
      { "vision_temporal_patch", c->vision_temporal_patch },
      { "vision_deepstack", c->vision_deepstack }, { "vision_out", c->vision_out },
      { "vision_global_layers", c->vision_global_layers },
      { "vision_tiles", c->vision_tiles }, { "vision_aspect_ratios", c->vision_aspect_ratios },
      { "vision_features", c->vision_features },
      { "vision_cross_layers", c->vision_cross_layers },
      { "vision_window", c->vision_window },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++)
      if (sizes[i].value != 0)
        stw_json_add_u64(o, sizes[i].key, sizes[i].value);
    if (c->vision_pooling_head)
      cJSON_AddBoolToObject(o, "vision_pooling_head", TRUE);
    if (c->vision_projector_bias)
      cJSON_AddBoolToObject(o, "vision_projector_bias", TRUE);
    const struct {
      const char *key;
      gboolean on;
    } flags[] = {
      { "vision_newline", c->vision_newline },       { "vision_qk_norm", c->vision_qk_norm },
      { "vision_attn_bias", c->vision_attn_bias },   { "vision_rms_norm", c->vision_rms_norm },
      { "vision_final_norm", c->vision_final_norm },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(flags); i++)
      if (flags[i].on)
        cJSON_AddBoolToObject(o, flags[i].key, TRUE);
    add_block_list(o, "vision_full_blocks", c->vision_full_blocks, c->vision_layers);
    if (c->vision_projector != STW_PROJECTOR_DEFAULT &&
        (guint)c->vision_kind < STW_N_VISION_KINDS &&
        c->vision_projector != vision_kinds[c->vision_kind].own)
      cJSON_AddStringToObject(o, "vision_projector",
                              stw_vision_projector_names[c->vision_projector]);
  }
  if (c->audio_layers != 0) {
    stw_json_add_u64(o, "audio_layers", c->audio_layers);
    stw_json_add_u64(o, "audio_hidden", c->audio_hidden);
    stw_json_add_u64(o, "audio_heads", c->audio_heads);
    stw_json_add_u64(o, "audio_conv", c->audio_conv);
    stw_json_add_u64(o, "audio_conv2", c->audio_conv2);
    stw_json_add_u64(o, "audio_kernel", c->audio_kernel);
    stw_json_add_u64(o, "audio_output", c->audio_output);
  }
  if (c->attn_gate_in_q)
    cJSON_AddBoolToObject(o, "attn_gate_in_q", TRUE);
  if (c->kv_lora_rank == 0 && c->v_head_dim != 0) /* (latent attention's written with it) */
    stw_json_add_u64(o, "v_head_dim", c->v_head_dim);
  if (c->diff_attn)
    cJSON_AddBoolToObject(o, "diff_attn", TRUE);
  if (c->no_pooler)
    cJSON_AddBoolToObject(o, "pooler", FALSE);
  if (c->index_heads != 0) {
    stw_json_add_u64(o, "index_heads", c->index_heads);
    stw_json_add_u64(o, "index_head_dim", c->index_head_dim);
  }
  if (c->router_score_bias)
    cJSON_AddBoolToObject(o, "router_score_bias", TRUE);
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

/* Scaled dot-product attention over packed q, k, v (widths Q_W, KV_W, KV_W), each head's output
 * as wide as its values (OUT_W in all: Q_W but with latent attention, whose values are narrower
 * than its queries and keys). */
static StwGraphOp *
attention_core(Builder *b, gint32 layer, guint64 q_w, guint64 kv_w, guint64 v_w, guint64 out_w,
               gboolean causal)
{
  StwModelGraph *g = b->g;
  guint64 B = g->batch, S = g->seq, a = g->config.heads;
  StwGraphOp *o = op(b, layer, STW_OP_ATTN_CORE, "attn.core");
  o->in_bytes = b->T * (q_w + kv_w + v_w) * b->e;
  o->out_bytes = b->T * out_w * b->e;
  o->saves_input = TRUE;
  /* QK^T and PV: 2*S*S*(a head's query width, its value width) per head; a fused causal kernel
   * skips the masked half */
  o->flops = 2 * B * S * S * (q_w + out_w);
  if (g->attention == STW_ATTENTION_NAIVE) {
    guint64 scores = B * a * S * S * b->e;
    o->work_bytes = scores;         /* the raw scores, before softmax */
    o->saved_extra_bytes = scores;  /* the softmax output, for backward */
    o->bwd_work_bytes = 2 * scores; /* dP and dS */
    if (g->config.attn_softcap)     /* and the capped scores' tanh, for its own backward */
      o->saved_extra_bytes += scores;
  } else {
    o->saved_extra_bytes = B * a * S * 4; /* fp32 log-sum-exp per row */
    if (causal)
      o->flops /= 2;
  }
  return o;
}

/* Cross-entropy over VOCAB logits: keeps the logits, computes softmax in fp32 (Hugging Face's
 * logits.float(); stw_model_graph_native_loss for the logits' own dtype). */
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

/* The tensor ids one op reads. */
typedef struct {
  guint32 id[12];
  guint n;
} Ids;

static void
ids_add(Ids *ids, guint32 id)
{
  g_assert(ids->n < G_N_ELEMENTS(ids->id));
  ids->id[ids->n++] = id;
}

/* A tensor whose name is PREFIX.SUFFIX, added to IDS. */
static guint32
named(Builder *b, Ids *ids, guint64 d0, guint64 d1, const char *prefix, const char *suffix)
{
  guint32 id = tensor(b, d0, d1, "%s.%s", prefix, suffix);
  ids_add(ids, id);
  return id;
}

/* PREFIX.weight of [D0, D1], and PREFIX.bias of [BIAS_W] where the model has biases at SITE. */
static void
projection(Builder *b, Ids *ids, StwBiasSite site, guint64 d0, guint64 d1, guint64 bias_w,
           const char *prefix)
{
  named(b, ids, d0, d1, prefix, "weight");
  if (stw_model_has_bias(&b->g->config, site))
    named(b, ids, bias_w, 0, prefix, "bias");
}

/* A LayerNorm's PREFIX.weight and PREFIX.bias (RMSNorm: the weight only). */
static void
norm_params(Builder *b, Ids *ids, guint64 d, gboolean rms, const char *prefix)
{
  named(b, ids, d, 0, prefix, "weight");
  if (!rms)
    named(b, ids, d, 0, prefix, "bias");
}

/* A block's, the final or the embeddings' norm's parameters, as the model's norm_type has them:
 * PREFIX.weight and PREFIX.bias, one of them or none. */
static void
model_norm_params(Builder *b, Ids *ids, guint64 d, const char *prefix)
{
  if (stw_model_norm_weight(&b->g->config))
    named(b, ids, d, 0, prefix, "weight");
  if (stw_model_norm_bias(&b->g->config))
    named(b, ids, d, 0, prefix, "bias");
}

/* The op of a block's, the final or the embeddings' norm (the model's kind: RMSNorm or
 * LayerNorm). */
static StwGraphOp *
model_norm(Builder *b, gint32 layer, StwOpKind kind, const char *name, guint64 d, const Ids *ids)
{
  return norm(b, layer, kind, name, d, stw_model_rms_norm(&b->g->config), ids->n, ids->id);
}

static void
tie(Builder *b, guint32 embedding, const char *alias)
{
  g_ptr_array_add(((StwGraphTensor *)b->g->tensors->pdata[embedding])->aliases, g_strdup(alias));
}

/* The widths of a block's attention: queries, and keys (= values). */
static guint64
q_width(const StwModelConfig *c)
{
  return c->heads * stw_model_head_dim(c);
}

static guint64
kv_width(const StwModelConfig *c)
{
  return c->kv_heads * stw_model_head_dim(c);
}

/* The norms over the queries and keys of block L, their weights QK: an fp32 statistic per head
 * (or per token, with qk_norm_full) and the input kept for backward; the values pass along,
 * counted with the queries and keys as the rotary op after it counts them (a kv-wide
 * overcount of what is kept). */
static void
qk_norm_op(Builder *b, gint32 l, const Ids *qk, guint64 q, guint64 kv)
{
  const StwModelConfig *c = &b->g->config;
  StwGraphOp *qkn = op(b, l, STW_OP_NORM_QK, "attn.qk_norm");
  op_params(qkn, qk->n, qk->id);
  qkn->flops = 4 * b->T * (q + kv);
  qkn->in_bytes = qkn->out_bytes = b->T * (q + 2 * kv) * b->e;
  qkn->saved_extra_bytes = b->T * (c->qk_norm_full ? 2 : c->heads + c->kv_heads) * 4;
  qkn->saves_input = TRUE;
}

/* A pre-norm decoder block with LayerNorms and a GELU MLP (GPT-2; GPT-NeoX with ROPE), its
 * parameters named as NAMES gives them. */
typedef struct {
  const char *block, *ln_1, *qkv, *out, *ln_2, *fc, *proj, *q_norm, *k_norm;
} GeluBlockNames;

static void
gelu_block(Builder *b, gint32 l, const GeluBlockNames *nm, gboolean rope)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, f = c->ffn, q = q_width(c), kv = kv_width(c);
  Ids ln1 = { 0 }, qkv = { 0 }, out = { 0 }, ln2 = { 0 }, fc = { 0 }, proj = { 0 };
  g_autofree char *p = g_strdup_printf(nm->block, l);
  g_autofree char *n_ln1 = g_strconcat(p, ".", nm->ln_1, NULL);
  g_autofree char *n_qkv = g_strconcat(p, ".", nm->qkv, NULL);
  g_autofree char *n_out = g_strconcat(p, ".", nm->out, NULL);
  g_autofree char *n_ln2 = g_strconcat(p, ".", nm->ln_2, NULL);
  g_autofree char *n_fc = g_strconcat(p, ".", nm->fc, NULL);
  g_autofree char *n_proj = g_strconcat(p, ".", nm->proj, NULL);
  model_norm_params(b, &ln1, d, n_ln1);
  /* GPT-2's Conv1D weights are [in, out]; NeoX's Linear ones [out, in]: the same bytes; with
   * grouped or multi-query attention (StarCoder 2, GPT-BigCode) the keys and values narrower */
  projection(b, &qkv, STW_SITE_QKV, d, q + 2 * kv, q + 2 * kv, n_qkv);
  projection(b, &out, STW_SITE_OUT, q, d, d, n_out);
  Ids qk = { 0 };
  if (c->qk_norm) { /* a norm of the block's kind over each head's queries and keys, its
                     * weights shared by the heads (Persimmon's q_layernorm, k_layernorm) */
    g_autofree char *nq = g_strconcat(p, ".", nm->q_norm, NULL);
    g_autofree char *nk = g_strconcat(p, ".", nm->k_norm, NULL);
    model_norm_params(b, &qk, stw_model_head_dim(c), nq);
    model_norm_params(b, &qk, stw_model_head_dim(c), nk);
  }
  gboolean shared = c->norms == STW_NORMS_SHARED; /* the parallel block's one norm */
  if (!shared)
    model_norm_params(b, &ln2, d, n_ln2);
  projection(b, &fc, STW_SITE_MLP, d, f, f, n_fc);
  projection(b, &proj, STW_SITE_MLP, f, d, d, n_proj);
  Ids act = { 0 };
  if (stw_model_activation(c) == STW_ACT_XIELU) { /* its two learned scalars */
    ids_add(&act, tensor(b, 1, 0, "%s.mlp.act_fn.alpha_p", p));
    ids_add(&act, tensor(b, 1, 0, "%s.mlp.act_fn.alpha_n", p));
  }

  model_norm(b, l, STW_OP_NORM_ATTN, "ln_1", d, &ln1)->residual = STW_RESIDUAL_OPEN;
  linear(b, l, STW_OP_ATTN_QKV, "attn.qkv", d, q + 2 * kv, qkv.n, qkv.id);
  if (c->qk_norm)
    qk_norm_op(b, l, &qk, q, kv);
  if (rope)
    elementwise(b, l, STW_OP_ROPE, "attn.rope", q + 2 * kv, q + 2 * kv, 3, FALSE);
  attention_core(b, l, q, kv, kv, q, TRUE);
  linear(b, l, STW_OP_ATTN_OUT, "attn.proj", q, d, out.n, out.id)->residual = STW_RESIDUAL_CLOSE;
  StwGraphOp *open = shared ? NULL : model_norm(b, l, STW_OP_NORM_MLP, "ln_2", d, &ln2);
  StwGraphOp *in = linear(b, l, STW_OP_MLP_IN, "mlp.fc", d, f, fc.n, fc.id);
  (open != NULL ? open : in)->residual = STW_RESIDUAL_OPEN;
  op_params(elementwise(b, l, STW_OP_MLP_ACT, "mlp.gelu", f, f, 8, TRUE), act.n, act.id);
  linear(b, l, STW_OP_MLP_OUT, "mlp.proj", f, d, proj.n, proj.id)->residual = STW_RESIDUAL_CLOSE;
}

/* The final norm, the LM head (EMBEDDING when tied, else a tensor named HEAD) and the loss. */
static void
decoder_head(Builder *b, guint32 embedding, const char *final_norm,
             const char *head)
{
  const StwModelConfig *c = &b->g->config;
  guint64 V = stw_model_head_vocab(c); /* the logits' width */
  Ids ln = { 0 }, lm = { 0 };
  if (!c->no_final_norm)
    model_norm_params(b, &ln, c->hidden, final_norm);
  if (c->tied) {
    tie(b, embedding, head);
    ids_add(&lm, embedding);
  } else {
    ids_add(&lm, tensor(b, V, c->hidden, "%s", head));
  }
  if (c->head_bias) { /* HEAD's bias: "lm_head.weight" -> "lm_head.bias" */
    g_autofree char *stem = g_str_has_suffix(head, ".weight")
                                ? g_strndup(head, strlen(head) - strlen(".weight"))
                                : g_strdup(head);
    ids_add(&lm, tensor(b, V, 0, "%s.bias", stem));
  }
  if (!c->no_final_norm)
    model_norm(b, -1, STW_OP_NORM_FINAL, "ln_f", c->hidden, &ln);
  linear(b, -1, STW_OP_LM_HEAD, "lm_head", c->hidden, V, lm.n, lm.id);
  if (c->logit_softcap) /* x / c, tanh, * c: tanh keeps its output (the logits' size) */
    elementwise(b, -1, STW_OP_LOGIT_SOFTCAP, "logit_softcap", V, V, 3, TRUE);
  loss(b, V);
  b->g->io_bytes = 2 * b->T * 8; /* int64 input ids and targets */
}

static void
build_gpt(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden;
  guint32 wte = tensor(b, c->vocab, d, "wte");
  guint32 wpe = tensor(b, c->max_seq + c->position_offset, d, "wpe");
  StwGraphOp *o = op(b, -1, STW_OP_EMBED, "embed");
  op_params(o, 2, (guint32[]){ wte, wpe });
  o->flops = b->T * d;
  o->out_bytes = b->T * d * b->e;

  static const GeluBlockNames names = { "h.%d", "ln_1", "attn.c_attn", "attn.c_proj", "ln_2",
                                        "mlp.c_fc", "mlp.c_proj", NULL, NULL };
  for (gint32 l = 0; l < (gint32)c->layers; l++)
    gelu_block(b, l, &names, FALSE);
  /* ln_f comes before an untied head, as in the published checkpoints */
  decoder_head(b, wte, "ln_f", "lm_head.weight");
}

/* GPT-NeoX: GPT-2's block with rotary positions instead of a position table, and an untied
 * head by default. Its parallel residual (attention and MLP read the same input) is modelled as
 * the sequential one: the same parameters, FLOPs and activations to within one block input. */
static void
build_neox(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint32 emb = tensor(b, c->vocab, c->hidden, "gpt_neox.embed_in.weight");
  StwGraphOp *o = op(b, -1, STW_OP_EMBED, "embed");
  op_params(o, 1, &emb);
  o->out_bytes = b->T * c->hidden * b->e;
  if (c->embed_norm) { /* BLOOM's word_embeddings_layernorm */
    Ids ln = { 0 };
    model_norm_params(b, &ln, c->hidden, "gpt_neox.embed_in_layernorm");
    model_norm(b, -1, STW_OP_NORM_EMBED, "embed.ln", c->hidden, &ln);
  }

  static const GeluBlockNames names = {
    "gpt_neox.layers.%d", "input_layernorm", "attention.query_key_value", "attention.dense",
    "post_attention_layernorm", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h",
    "attention.q_layernorm", "attention.k_layernorm"
  };
  for (gint32 l = 0; l < (gint32)c->layers; l++)
    gelu_block(b, l, &names, !c->alibi); /* ALiBi's bias joins the scores: no rotary op */
  decoder_head(b, emb, "gpt_neox.final_layer_norm", "embed_out.weight");
}

/* One SwiGLU expert of width F from and to width D named PREFIX.NAMES[0] (gate), [1] (down)
 * and [2] (up), declared in that order when DOWN_SECOND (Mixtral's), else gate, up, down: the
 * gate and up projections read by IN, the down one by OUT; no gate where the model's MLPs are
 * ungated (Nemotron-H's). */
static void
swiglu_expert(Builder *b, StwGraphOp *in, StwGraphOp *out, const char *prefix,
              const char *const names[3], guint64 d, guint64 f, gboolean down_second)
{
  Ids gate_up = { 0 }, down = { 0 };
  g_autofree char *g = g_strconcat(prefix, ".", names[0], NULL);
  g_autofree char *dn = g_strconcat(prefix, ".", names[1], NULL);
  g_autofree char *u = g_strconcat(prefix, ".", names[2], NULL);
  if (!b->g->config.mlp_ungated)
    projection(b, &gate_up, STW_SITE_MLP, f, d, f, g);
  if (down_second)
    projection(b, &down, STW_SITE_MLP, d, f, d, dn);
  projection(b, &gate_up, STW_SITE_MLP, f, d, f, u);
  if (!down_second)
    projection(b, &down, STW_SITE_MLP, d, f, d, dn);
  op_params(in, gate_up.n, gate_up.id);
  op_params(out, down.n, down.id);
}

/* A mixture of experts' MLP: the router scores every expert for every token, and each token runs
 * through its top-k experts, so FLOPs and activations are k experts' while every expert's
 * parameters are read (some token reaches each, at any useful batch); a shared expert beside
 * them runs for every token. OPENS: the branch opens here (no norm before it). Returns the op
 * that closes it, which a norm after the branch takes over. */
static StwGraphOp *
moe_mlp(Builder *b, gint32 l, const char *p, gboolean opens)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, f = c->ffn, E = stw_model_experts(c), k = stw_model_routed_experts(c);
  guint64 R = E + c->zero_experts; /* the router's choices: the experts, and zero experts */
  guint64 fs = c->shared_expert_ffn, fa = k * f + fs; /* the widths every token runs through */
  guint64 gates = c->mlp_ungated ? 1 : 2; /* projections up: the gate's and up's, or up's */
  guint64 L = c->expert_latent, dr = L != 0 ? L : d; /* what the routed experts read */
  Ids gate = { 0 };
  g_autofree char *gate_name = g_strdup_printf("%s.block_sparse_moe.gate", p);
  /* with the MLP's biases, the router's too (gpt-oss) */
  projection(b, &gate, STW_SITE_MLP, R, d, R, gate_name);
  if (c->router_score_bias) { /* ERNIE 4.5's score correction, a weight an expert */
    g_autofree char *sb = g_strdup_printf("%s.block_sparse_moe.gate.moe_statics", p);
    named(b, &gate, E, 0, sb, "e_score_correction_bias");
  }
  if (c->experts_normed) { /* Gemma 4's scales of the router's input and of its choices */
    g_autofree char *rs = g_strdup_printf("%s.router", p);
    named(b, &gate, d, 0, rs, "scale");
    named(b, &gate, E, 0, rs, "per_expert_scale");
  }
  gboolean shared_gate = fs != 0 && !c->shared_expert_ungated;
  if (shared_gate) { /* the shared expert's own gate, a sigmoid of one score a token */
    g_autofree char *sg = g_strdup_printf("%s.block_sparse_moe.shared_expert_gate", p);
    named(b, &gate, 1, d, sg, "weight");
  }
  StwGraphOp *r = op(b, l, STW_OP_MOE_ROUTER, "moe.router");
  op_params(r, gate.n, gate.id);
  r->flops = 2 * b->T * d * (R + (shared_gate ? 1 : 0));
  r->in_bytes = b->T * d * b->e;
  r->passthrough = TRUE;
  /* fp32 router logits; the chosen experts */
  r->saved_extra_bytes = b->T * (R * 4 + stw_model_active_experts(c) * 8);

  StwGraphOp *in = op(b, l, STW_OP_MLP_IN, "moe.w1_w3");
  StwGraphOp *out = op(b, l, STW_OP_MLP_OUT, "moe.w2");
  g_ptr_array_steal_index(b->g->ops, b->g->ops->len - 1); /* placed after the activation */
  static const char *const routed[] = { "w1", "w2", "w3" }; /* Mixtral's, in its order */
  static const char *const shared[] = { "gate_proj", "down_proj", "up_proj" };
  if (L != 0) { /* the latent's projections (Nemotron 3's), timed with the experts' ops */
    Ids down = { 0 }, up = { 0 };
    g_autofree char *n1 = g_strdup_printf("%s.block_sparse_moe.fc1_latent_proj", p);
    g_autofree char *n2 = g_strdup_printf("%s.block_sparse_moe.fc2_latent_proj", p);
    projection(b, &down, STW_SITE_MLP, L, d, L, n1);
    projection(b, &up, STW_SITE_MLP, d, L, d, n2);
    op_params(in, down.n, down.id);
    op_params(out, up.n, up.id);
  }
  for (guint64 e = 0; e < E; e++) {
    g_autofree char *x = g_strdup_printf("%s.block_sparse_moe.experts.%" G_GUINT64_FORMAT, p, e);
    swiglu_expert(b, in, out, x, routed, dr, f, TRUE);
  }
  if (fs != 0) { /* a dense SwiGLU MLP beside the routed experts, for every token */
    g_autofree char *x = g_strdup_printf("%s.block_sparse_moe.shared_expert", p);
    swiglu_expert(b, in, out, x, shared, d, fs, FALSE);
  }
  if (c->experts_normed) { /* the experts' input normed apart, each branch's output normed
                            * (timed with the experts' projections) */
    Ids before = { 0 }, after = { 0 };
    g_autofree char *n0 = g_strdup_printf("%s.pre_feedforward_layernorm_2", p);
    g_autofree char *n1 = g_strdup_printf("%s.post_feedforward_layernorm_1", p);
    g_autofree char *n2 = g_strdup_printf("%s.post_feedforward_layernorm_2", p);
    model_norm_params(b, &before, d, n0);
    model_norm_params(b, &after, d, n1);
    model_norm_params(b, &after, d, n2);
    op_params(in, before.n, before.id);
    op_params(out, after.n, after.id);
  }
  in->flops = 2 * b->T * (dr * gates * k * f + d * gates * fs + d * L);
  in->in_bytes = b->T * d * b->e;
  in->out_bytes = b->T * gates * fa * b->e;
  in->saves_input = TRUE;
  if (opens) /* no norm before the branch: it opens at the experts' first projection (the
              * router passes its input through) */
    in->residual = STW_RESIDUAL_OPEN;
  elementwise(b, l, STW_OP_MLP_ACT, c->mlp_ungated ? "moe.act" : "moe.swiglu", gates * fa, fa,
              gates == 1 ? 2 : 3, TRUE);
  g_ptr_array_add(b->g->ops, out);
  out->flops = 2 * b->T * (k * f * dr + fs * d + L * d);
  out->in_bytes = b->T * fa * b->e;
  out->out_bytes = b->T * d * b->e;
  out->saves_input = TRUE;
  out->residual = STW_RESIDUAL_CLOSE;
  return out;
}

/* Multi-head latent attention's tensors (DeepSeek's names): the down projections (q_a_proj,
 * where the queries have a rank of their own, else q_proj; kv_a_proj_with_mqa, with the shared
 * rotary key), the latents' RMSNorms, the up projections (q_b_proj, kv_b_proj). The down
 * projections take attention_bias's biases; the up ones and q_proj never have any. */
typedef struct {
  Ids down, norms, up, indexer;
} Mla;

/* A linear block's weights: the input's projections, what the mixing op reads (the convolution,
 * each head's decay and step, the gated norm) and the output projection. */
typedef struct {
  Ids in, mix, out;
} LinearMix;

/* The chunk Gated DeltaNet's kernels run its recurrence in (flash-linear-attention's 64), and
 * Mamba-2's scan (its configurations' mamba_chunk_size, 256) and lightning attention's blocks
 * (MiniMax's block_size, 256). */
#define GDN_CHUNK 64
#define MAMBA2_CHUNK 256

/* What the input's projection writes in a linear block of C: Gated DeltaNet's queries, keys,
 * values, gate and two scalars a value head; Mamba-2's x, z, B, C and one step a head. */
static guint64
linear_in_width(const StwModelConfig *c)
{
  guint64 kd = c->linear_k_heads * c->linear_k_head_dim;
  guint64 vd = c->linear_v_heads * c->linear_v_head_dim;
  if (c->linear_kind == STW_LINEAR_SHORT_CONV) /* B, C and x */
    return 3 * c->hidden;
  if (c->linear_kind == STW_LINEAR_LIGHTNING) /* q, k, v and the output gate */
    return 2 * kd + 2 * vd;
  if (c->linear_kind == STW_LINEAR_MAMBA1) /* x and z */
    return 2 * vd;
  if (c->linear_kind == STW_LINEAR_KDA) /* q, k, v, the two gates (or their low ranks), a rate a
                                         * head */
    return 2 * kd + vd + 2 * (c->linear_full_gates ? vd : c->linear_v_head_dim) +
           c->linear_v_heads;
  return 2 * kd + 2 * vd + (c->linear_kind == STW_LINEAR_MAMBA2 ? 1 : 2) * c->linear_v_heads;
}

/* What the mixing op writes and the output projection reads in a linear block of C, and the
 * channels its convolution runs over. */
static guint64
linear_out_width(const StwModelConfig *c)
{
  return c->linear_kind == STW_LINEAR_SHORT_CONV ? c->hidden
                                                 : c->linear_v_heads * c->linear_v_head_dim;
}

static guint64
linear_conv_width(const StwModelConfig *c)
{
  if (c->linear_kind == STW_LINEAR_LIGHTNING) /* none */
    return 0;
  if (c->linear_kind == STW_LINEAR_MAMBA1) /* x alone */
    return linear_out_width(c);
  return c->linear_kind == STW_LINEAR_SHORT_CONV
             ? c->hidden
             : 2 * c->linear_k_heads * c->linear_k_head_dim + linear_out_width(c);
}

/* The weights (Qwen3.5's names for Gated DeltaNet, Granite 4.0's for Mamba-2, LFM2's for the
 * short convolution). */
static void
linear_mix_params(Builder *b, const char *p, LinearMix *g)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, kd = c->linear_k_heads * c->linear_k_head_dim;
  guint64 vd = c->linear_v_heads * c->linear_v_head_dim, hv = c->linear_v_heads;
  if (c->linear_kind == STW_LINEAR_SHORT_CONV) {
    g_autofree char *sc = g_strconcat(p, ".conv", NULL);
    named(b, &g->in, 3 * d, d, sc, "in_proj.weight");
    if (c->linear_proj_bias)
      named(b, &g->in, 3 * d, 0, sc, "in_proj.bias");
    named(b, &g->mix, d, c->linear_conv, sc, "conv.weight");
    if (c->linear_conv_bias)
      named(b, &g->mix, d, 0, sc, "conv.bias");
    named(b, &g->out, d, d, sc, "out_proj.weight");
    if (c->linear_out_bias)
      named(b, &g->out, d, 0, sc, "out_proj.bias");
    return;
  }
  if (c->linear_kind == STW_LINEAR_MAMBA1) { /* Mamba's names */
    g_autofree char *m = g_strconcat(p, ".mixer", NULL);
    guint64 r = c->linear_dt_rank, n = c->linear_k_head_dim;
    named(b, &g->in, 2 * vd, d, m, "in_proj.weight");
    if (c->linear_proj_bias)
      named(b, &g->in, 2 * vd, 0, m, "in_proj.bias");
    named(b, &g->mix, vd, c->linear_conv, m, "conv1d.weight");
    if (c->linear_conv_bias)
      named(b, &g->mix, vd, 0, m, "conv1d.bias");
    named(b, &g->mix, r + 2 * n, vd, m, "x_proj.weight");
    named(b, &g->mix, vd, r, m, "dt_proj.weight");
    named(b, &g->mix, vd, 0, m, "dt_proj.bias");
    if (c->linear_norms) { /* Jamba's norms over the step, B and C */
      named(b, &g->mix, r, 0, m, "dt_layernorm.weight");
      named(b, &g->mix, n, 0, m, "b_layernorm.weight");
      named(b, &g->mix, n, 0, m, "c_layernorm.weight");
    }
    named(b, &g->mix, vd, n, m, "A_log");
    named(b, &g->mix, vd, 0, m, "D");
    named(b, &g->out, d, vd, m, "out_proj.weight");
    if (c->linear_out_bias)
      named(b, &g->out, d, 0, m, "out_proj.bias");
    return;
  }
  if (c->linear_kind == STW_LINEAR_KDA) { /* Kimi Linear's names */
    g_autofree char *sa = g_strconcat(p, ".self_attn", NULL);
    guint64 w = c->linear_v_head_dim;
    named(b, &g->in, kd, d, sa, "q_proj.weight");
    named(b, &g->in, kd, d, sa, "k_proj.weight");
    named(b, &g->in, vd, d, sa, "v_proj.weight");
    if (c->linear_full_gates) { /* Bailing's, straight to every channel */
      named(b, &g->in, vd, d, sa, "forget_gate.f_proj.weight");
      named(b, &g->in, vd, d, sa, "g_proj.weight");
    } else {
      named(b, &g->in, w, d, sa, "forget_gate.f_a_proj.weight");
      named(b, &g->in, w, d, sa, "g_a_proj.weight");
    }
    named(b, &g->in, hv, d, sa, "b_proj.weight");
    named(b, &g->mix, 2 * kd + vd, c->linear_conv, sa, "conv1d.weight");
    if (!c->linear_full_gates)
      named(b, &g->mix, vd, w, sa, "forget_gate.f_b_proj.weight");
    named(b, &g->mix, vd, 0, sa, "forget_gate.dt_bias");
    named(b, &g->mix, hv, 0, sa, "forget_gate.A_log");
    if (!c->linear_full_gates)
      named(b, &g->mix, vd, w, sa, "g_b_proj.weight");
    named(b, &g->mix, w, 0, sa, "o_norm.weight");
    named(b, &g->out, d, vd, sa, "o_proj.weight");
    return;
  }
  if (c->linear_kind == STW_LINEAR_LIGHTNING) { /* MiniMax's names */
    g_autofree char *sa = g_strconcat(p, ".self_attn", NULL);
    named(b, &g->in, 3 * vd, d, sa, "qkv_proj.weight");
    named(b, &g->in, vd, d, sa, "output_gate.weight");
    named(b, &g->mix, vd, 0, sa, "norm.weight");
    named(b, &g->out, d, vd, sa, "out_proj.weight");
    return;
  }
  if (c->linear_kind == STW_LINEAR_MAMBA2) {
    g_autofree char *m = g_strconcat(p, ".mamba", NULL);
    named(b, &g->in, linear_in_width(c), d, m, "in_proj.weight");
    if (c->linear_proj_bias)
      named(b, &g->in, linear_in_width(c), 0, m, "in_proj.bias");
    named(b, &g->mix, 2 * kd + vd, c->linear_conv, m, "conv1d.weight");
    if (c->linear_conv_bias)
      named(b, &g->mix, 2 * kd + vd, 0, m, "conv1d.bias");
    named(b, &g->mix, hv, 0, m, "dt_bias");
    named(b, &g->mix, hv, 0, m, "A_log");
    named(b, &g->mix, hv, 0, m, "D");
    if (!c->linear_no_out_norm)
      named(b, &g->mix, vd, 0, m, "norm.weight");
    named(b, &g->out, d, vd, m, "out_proj.weight");
    if (c->linear_out_bias)
      named(b, &g->out, d, 0, m, "out_proj.bias");
    return;
  }
  g_autofree char *la = g_strconcat(p, ".linear_attn", NULL);
  named(b, &g->in, 2 * kd + vd, d, la, "in_proj_qkv.weight");
  named(b, &g->in, vd, d, la, "in_proj_z.weight");
  named(b, &g->in, hv, d, la, "in_proj_b.weight");
  named(b, &g->in, hv, d, la, "in_proj_a.weight");
  named(b, &g->mix, 2 * kd + vd, c->linear_conv, la, "conv1d.weight");
  named(b, &g->mix, hv, 0, la, "dt_bias");
  named(b, &g->mix, hv, 0, la, "A_log");
  named(b, &g->mix, c->linear_v_head_dim, 0, la, "norm.weight");
  named(b, &g->out, d, vd, la, "out_proj.weight");
}

/* Its ops, the first returned: the input's projection; the mixing; then the output projection,
 * left to the caller. The short convolution's mixing: B x, convolved depthwise, times C, its
 * product and the convolution's output kept. Gated DeltaNet's mixing: the causal depthwise convolution and its SiLU
 * over queries, keys and values, the queries and keys L2-normed, each value head's decay and
 * rate, the delta rule's recurrence in chunks of GDN_CHUNK tokens (within a chunk an
 * attention-like product of its queries and keys and the keys' own triangular system, across
 * chunks the state of k x v a head read and updated), the output RMS-normed per head and gated
 * by SiLU(z). Kept for backward: the convolution's output, the chunks' triangular matrices
 * (fp32), the decays and rates, the recurrence's output before its norm; the states are
 * recomputed. Mamba-2's: the convolution and its SiLU over x, B and C, the step's softplus, the
 * scan in chunks of MAMBA2_CHUNK (within a chunk C B^T and its product with x, across chunks the
 * state of state x head_dim a head), the skip D x, the RMSNorm gated by SiLU(z); kept alike,
 * the chunks' cumulative decays (fp32) in the triangular matrices' place. */
static StwGraphOp *
linear_mix_ops(Builder *b, gint32 l, const LinearMix *g)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, hv = c->linear_v_heads;
  guint64 dk = c->linear_k_head_dim, dv = c->linear_v_head_dim, T = b->T, e = b->e;
  guint64 vd = linear_out_width(c), conv = linear_conv_width(c), in_w = linear_in_width(c);
  /* Mamba-2's scan and lightning attention alike: a chunk's products 2 C (k + v) and the
   * state's two k x v products a head and token */
  gboolean mamba = c->linear_kind == STW_LINEAR_MAMBA2 || c->linear_kind == STW_LINEAR_LIGHTNING;
  guint64 chunk = mamba ? MAMBA2_CHUNK : GDN_CHUNK;
  guint64 chunks = b->g->batch * ((b->g->seq + chunk - 1) / chunk);
  StwGraphOp *in = linear(b, l, STW_OP_ATTN_QKV, "attn.in_proj", d, in_w, g->in.n, g->in.id);
  in->outside_roles = TRUE;
  StwGraphOp *mix = op(b, l, STW_OP_LINEAR_ATTN, "attn.linear");
  op_params(mix, g->mix.n, g->mix.id);
  /* the keys (B) repeated to every value head: per head and token, a chunk's products and the
   * state's k x v products (Gated DeltaNet's 2 C (2 dk + dv) and three; Mamba-2's 2 C (dk + dv)
   * and two) */
  mix->flops = 2 * T * conv * c->linear_conv + 10 * T * vd +
               (mamba ? T * hv * (2 * chunk * (dk + dv) + 4 * dk * dv)
                      : T * hv * (2 * chunk * (2 * dk + dv) + 6 * dk * dv));
  mix->in_bytes = T * in_w * e;
  mix->out_bytes = T * vd * e;
  mix->saves_input = TRUE;
  mix->saved_extra_bytes = T * conv * e + T * hv * (mamba ? 4 : chunk * 4) + T * hv * 8 +
                           T * vd * e;
  if (c->linear_kind == STW_LINEAR_LIGHTNING) /* its blocks' decayed scores, kept */
    mix->saved_extra_bytes += T * hv * chunk * e;
  mix->work_bytes = chunks * hv * dk * dv * 4; /* the chunks' states */
  mix->bwd_work_bytes = 2 * mix->work_bytes;
  if (c->linear_kind == STW_LINEAR_KDA) { /* Gated DeltaNet's, and the gates' up projections
                                           * from a head's width to every channel; the decay a
                                           * channel kept in fp32 */
    mix->flops += c->linear_full_gates ? 0 : 2 * 2 * T * dv * vd;
    mix->saved_extra_bytes += T * vd * 4;
  }
  if (c->linear_kind == STW_LINEAR_MAMBA1) { /* the convolution, x's projection to the step, B
                                              * and C, the step's up to inner, the scan (9 a
                                              * channel and state: the decay's exp, B x, the
                                              * state's update, C h), the skip and the gate;
                                              * kept: the convolution's output, the projection's,
                                              * the step (fp32), the scan's output */
    guint64 r = c->linear_dt_rank, n = dk;
    mix->flops = 2 * T * vd * c->linear_conv + 2 * T * vd * (r + 2 * n) + 2 * T * r * vd +
                 9 * T * vd * n + 4 * T * vd;
    mix->saved_extra_bytes = T * vd * e + T * (r + 2 * n) * e + T * vd * 4 + T * vd * e;
    mix->work_bytes = b->g->batch * vd * n * 4; /* a sequence's state */
    mix->bwd_work_bytes = 2 * mix->work_bytes;
  }
  if (c->linear_kind == STW_LINEAR_SHORT_CONV) { /* B x, its convolution, C times it: kept, the
                                                  * product and the convolution's output */
    mix->flops = 2 * T * d * c->linear_conv + 2 * T * d;
    mix->saved_extra_bytes = 2 * T * d * e;
    mix->work_bytes = mix->bwd_work_bytes = 0;
  }
  return in;
}

static void
mla_params(Builder *b, gint32 l, const char *pa, Mla *m)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, H = c->heads, qk = stw_model_qk_head_dim(c);
  guint64 nope = stw_model_head_dim(c), ql = c->q_lora_rank, kl = c->kv_lora_rank;
  g_autofree char *qa = g_strconcat(pa, ".q_a_proj", NULL), *qn = g_strconcat(pa, ".q_a_layernorm", NULL);
  g_autofree char *qb = g_strconcat(pa, ".q_b_proj", NULL), *qp = g_strconcat(pa, ".q_proj", NULL);
  g_autofree char *ka = g_strconcat(pa, ".kv_a_proj_with_mqa", NULL);
  g_autofree char *kn = g_strconcat(pa, ".kv_a_layernorm", NULL);
  g_autofree char *kb = g_strconcat(pa, ".kv_b_proj", NULL);
  if (ql != 0) {
    projection(b, &m->down, STW_SITE_QKV, ql, d, ql, qa);
    norm_params(b, &m->norms, ql, TRUE, qn);
    named(b, &m->up, H * qk, ql, qb, "weight");
  } else {
    named(b, &m->down, H * qk, d, qp, "weight");
  }
  projection(b, &m->down, STW_SITE_QKV, kl + c->rope_dim, d, kl + c->rope_dim, ka);
  norm_params(b, &m->norms, kl, TRUE, kn);
  named(b, &m->up, H * (nope + c->v_head_dim), kl, kb, "weight");
  if (stw_model_block_indexed(c, (guint64)l)) { /* DSA's indexer: its queries from the
                                                  * queries' latent */
    guint64 ih = c->index_heads, id = c->index_head_dim;
    g_autofree char *ix = g_strconcat(pa, ".indexer", NULL);
    named(b, &m->indexer, ih * id, ql, ix, "wq_b.weight");
    named(b, &m->indexer, id, d, ix, "wk.weight");
    named(b, &m->indexer, id, 0, ix, "k_norm.weight");
    named(b, &m->indexer, id, 0, ix, "k_norm.bias");
    named(b, &m->indexer, ih, d, ix, "weights_proj.weight");
  }
}

/* Its ops, the first returned: the down projections; the latents normed (an fp32 statistic per
 * token for each); the up projections; rotary positions on each head's query part and the
 * shared key part, the keys then each head's whole; attention over head_dim + rope_dim wide
 * queries and keys and v_head_dim wide values. */
static StwGraphOp *
mla_ops(Builder *b, gint32 l, const Mla *m)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, H = c->heads, qk = stw_model_qk_head_dim(c), T = b->T, e = b->e;
  guint64 nope = stw_model_head_dim(c), vd = c->v_head_dim, ql = c->q_lora_rank;
  guint64 kl = c->kv_lora_rank, r = c->rope_dim;
  guint64 latent = (ql != 0 ? ql : H * qk) + kl + r; /* what the down projections write */
  guint64 upped = H * qk + H * (nope + vd) + r;       /* queries, keys without positions and
                                                       * values, the shared rotary key */
  StwGraphOp *down = linear(b, l, STW_OP_ATTN_QKV, "attn.qkv_a", d, latent, m->down.n,
                            m->down.id);
  StwGraphOp *ln = op(b, l, STW_OP_NORM_QK, "attn.latent_norm");
  op_params(ln, m->norms.n, m->norms.id);
  ln->flops = 4 * T * (ql + kl);
  ln->in_bytes = ln->out_bytes = T * latent * e;
  ln->saved_extra_bytes = T * (ql != 0 ? 2 : 1) * 4;
  ln->saves_input = TRUE;
  StwGraphOp *up = op(b, l, STW_OP_ATTN_QKV, "attn.qkv_b");
  op_params(up, m->up.n, m->up.id);
  up->flops = 2 * T * (ql * H * qk + kl * H * (nope + vd));
  up->in_bytes = T * latent * e;
  up->out_bytes = T * upped * e;
  up->saves_input = TRUE;
  if (m->indexer.n != 0) {
    /* DSA's indexer, forward only: its projections, then every query's fp32 score of every key
     * per indexer head, weighted and summed over the heads, the top keys chosen and scattered
     * into a mask of the scores' shape; none of it kept */
    guint64 ih = c->index_heads, id = c->index_head_dim, B = b->g->batch, S = b->g->seq;
    StwGraphOp *ix = op(b, l, STW_OP_INDEXER, "attn.indexer");
    op_params(ix, m->indexer.n, m->indexer.id);
    ix->flops = 2 * T * (ql * ih * id + d * id + d * ih) + 2 * B * S * S * ih * (id + 1);
    ix->in_bytes = T * (d + ql) * e;
    ix->work_bytes = T * (ih * id + id + ih) * 4 + B * S * S * (ih + 1) * 4 + B * S * S;
    ix->passthrough = TRUE;
    ix->no_grad = TRUE;
  }
  elementwise(b, l, STW_OP_ROPE, "attn.rope", upped, 2 * H * qk + H * vd, 3, FALSE);
  attention_core(b, l, H * qk, H * qk, H * vd, H * vd, TRUE);
  return down;
}

/* Gemma 4's per-layer inputs, after the embeddings: each token's rows of the per-layer table
 * (layers x per_layer_input wide) and a projection of its embedding to as many, normed per
 * layer, kept to the end of backward for the blocks to read (one op, its GEMM the projection's;
 * it passes the embeddings on) */
static void
per_layer_inputs(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 P = c->per_layer_input, LP = c->layers * P;
  if (P == 0)
    return;
  Ids ple = { 0 };
  named(b, &ple, c->per_layer_vocab, LP, "embed_tokens_per_layer", "weight");
  named(b, &ple, LP, c->hidden, "per_layer_model_projection", "weight");
  model_norm_params(b, &ple, P, "per_layer_projection_norm");
  StwGraphOp *o = linear(b, -1, STW_OP_MLP_IN, "per_layer_inputs", c->hidden, LP, ple.n, ple.id);
  o->passthrough = TRUE;
  o->saves_input = FALSE;
  o->saved_extra_bytes = o->out_bytes; /* read by every block */
  o->out_bytes = 0;
}

/* Gemma 4's per-layer input branch of block L (its names under PREFIX), after its MLP: a gate
 * from the block's input, its activation times the block's per-layer input, a projection back,
 * a norm, added to the residual */
static void
per_layer_branch(Builder *b, gint32 l, const char *prefix)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, P = c->per_layer_input;
  if (P == 0)
    return;
  Ids gate = { 0 }, proj = { 0 }, norm_ids = { 0 };
  g_autofree char *nn = g_strconcat(prefix, ".post_per_layer_input_norm", NULL);
  named(b, &gate, P, d, prefix, "per_layer_input_gate.weight");
  named(b, &proj, d, P, prefix, "per_layer_projection.weight");
  model_norm_params(b, &norm_ids, d, nn);
  StwGraphOp *in = linear(b, l, STW_OP_MLP_IN, "ple.gate", d, P, gate.n, gate.id);
  in->residual = STW_RESIDUAL_OPEN;
  in->outside_roles = TRUE;
  elementwise(b, l, STW_OP_MLP_ACT, "ple.act", P, P, 3, TRUE);
  linear(b, l, STW_OP_MLP_OUT, "ple.proj", P, d, proj.n, proj.id)->outside_roles = TRUE;
  model_norm(b, l, STW_OP_NORM_POST_MLP, "ple.post_norm", d, &norm_ids)->residual =
      STW_RESIDUAL_CLOSE;
}

/* Gemma 3n's AltUp at the stream's ends: OUT false, after the embeddings, each other copy of
 * the stream a projection of them (hidden x hidden, altup_projections) rescaled to their
 * magnitude; OUT true, before the final norm, each other copy projected back
 * (altup_unembed_projections), rescaled to the first's magnitude, and the copies averaged */
static void
altup_end(Builder *b, gboolean out)
{
  const StwModelConfig *c = &b->g->config;
  guint64 n = c->altup_inputs, d = c->hidden;
  if (n == 0)
    return;
  StwGraphOp *o = linear(b, -1, STW_OP_MLP_IN, out ? "altup.out" : "altup.in", d, (n - 1) * d, 0,
                         NULL);
  for (guint64 i = 1; i < n; i++) {
    guint32 id = tensor(b, d, d, "%s.%" G_GUINT64_FORMAT ".weight",
                        out ? "altup_unembed_projections" : "altup_projections", i - 1);
    op_params(o, 1, &id);
  }
  o->flops += 6 * b->T * n * d; /* each copy's magnitude, and the rescaling */
  if (out) { /* all the copies in, the first's rows out */
    o->in_bytes = b->T * n * d * b->e;
    o->out_bytes = b->T * d * b->e;
  } else {
    o->out_bytes = b->T * n * d * b->e;
  }
  o->outside_roles = TRUE;
}

/* Gemma 3n's AltUp router of a block (names under PREFIX, ids into ROUTER), which its
 * prediction and its correction both run: a norm and altup_inputs scores a token */
static void
altup_router(Builder *b, const char *prefix, Ids *router)
{
  const StwModelConfig *c = &b->g->config;
  if (c->altup_inputs == 0)
    return;
  g_autofree char *pa = g_strconcat(prefix, ".altup", NULL);
  g_autofree char *rn = g_strconcat(pa, ".router_norm", NULL);
  model_norm_params(b, router, c->hidden, rn);
  named(b, router, c->altup_inputs, c->hidden, pa, "modality_router.weight");
}

/* Gemma 3n's AltUp in block L (names under PREFIX, its router's ids ROUTER): CORRECT false,
 * before the block, every copy of the stream predicted from all of them (the router over the
 * first copy, the tanh of its scores, altup_inputs^2 coefficients a token from them); the block
 * then runs on the first copy, the others kept for the correction. CORRECT true, after it, each
 * copy corrected by the block's output (the router again over it, altup_inputs coefficients),
 * the first scaled a channel for the per-layer branch. */
static void
altup_step(Builder *b, gint32 l, const char *prefix, gboolean correct, const Ids *router)
{
  const StwModelConfig *c = &b->g->config;
  guint64 n = c->altup_inputs, d = c->hidden, T = b->T, e = b->e;
  if (n == 0)
    return;
  g_autofree char *pa = g_strconcat(prefix, ".altup", NULL);
  Ids ids = *router;
  StwGraphOp *o = op(b, l, STW_OP_ALTUP, correct ? "altup.correct" : "altup.predict");
  guint64 routing = 4 * T * d + 2 * T * d * n + T * n; /* its norm, scores and tanh */
  if (correct) {
    named(b, &ids, n, n, pa, "correction_coefs.weight");
    named(b, &ids, d, 0, pa, "correct_output_scale");
    /* the innovation (the block's output less the first prediction), each copy's share of it
     * added, the first copy scaled */
    o->flops = routing + 2 * T * n * n + T * d + 2 * T * n * d + T * d;
    o->in_bytes = T * d * e;      /* the block's output */
    o->out_bytes = T * n * d * e; /* the next block's stream */
    o->saved_extra_bytes = T * (d * e + n * 4); /* the innovation, the coefficients */
  } else {
    named(b, &ids, n * n, n, pa, "prediction_coefs.weight");
    /* every copy a mix of all of them, added to itself */
    o->flops = routing + 2 * T * n * n * n + 2 * T * n * n * d + T * n * d;
    o->in_bytes = T * n * d * e;  /* the stream */
    o->out_bytes = T * d * e;     /* the first copy's prediction, which the block runs on */
    o->saves_input = TRUE;
    o->saved_extra_bytes = T * ((n - 1) * d * e + (n + n * n) * 4); /* the other predictions,
                                                                      * the coefficients */
  }
  op_params(o, ids.n, ids.id);
}

/* Gemma 3n's LAuReL in block L (names under PREFIX), beside its attention: the normed input
 * through hidden x laurel_rank and back, normed (its sum into the residual not timed apart) */
static void
laurel_branch(Builder *b, gint32 l, const char *prefix)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, r = c->laurel_rank;
  if (r == 0)
    return;
  g_autofree char *pl = g_strconcat(prefix, ".laurel", NULL);
  g_autofree char *nn = g_strconcat(pl, ".post_laurel_norm", NULL);
  Ids left = { 0 }, right = { 0 }, norm_ids = { 0 };
  named(b, &left, r, d, pl, "linear_left.weight");
  named(b, &right, d, r, pl, "linear_right.weight");
  model_norm_params(b, &norm_ids, d, nn);
  linear(b, l, STW_OP_MLP_IN, "laurel.left", d, r, left.n, left.id)->outside_roles = TRUE;
  linear(b, l, STW_OP_MLP_OUT, "laurel.right", r, d, right.n, right.id)->outside_roles = TRUE;
  model_norm(b, l, STW_OP_NORM_POST_ATTN, "laurel.norm", d, &norm_ids);
}

/* MiniMax-M3's block indexer of block L (names under PA.indexer, ids into IDS), where it has one
 * and its attention is not latent (DSA's reads the queries' latent: mla_params): queries
 * index_heads x index_head_dim and one key from the block's input, each normed a head */
static void
block_indexer_params(Builder *b, gint32 l, const char *pa, Ids *ids)
{
  const StwModelConfig *c = &b->g->config;
  if (c->kv_lora_rank != 0 || !stw_model_block_indexed(c, (guint64)l))
    return;
  guint64 ih = c->index_heads, id = c->index_head_dim, d = c->hidden;
  g_autofree char *ix = g_strconcat(pa, ".indexer", NULL);
  named(b, ids, ih * id, d, ix, "q_proj.weight");
  named(b, ids, id, d, ix, "k_proj.weight");
  named(b, ids, id, 0, ix, "q_norm.weight");
  named(b, ids, id, 0, ix, "k_norm.weight");
}

/* Its op, forward only (its choice of key blocks carries no gradient): the projections and
 * norms, every query's fp32 score of every key a head, max-pooled over blocks of keys, the best
 * chosen and expanded into the attention's mask (heads x seq x seq, as eager PyTorch builds
 * it); none of it kept */
static void
block_indexer_op(Builder *b, gint32 l, const Ids *ids)
{
  const StwModelConfig *c = &b->g->config;
  if (ids->n == 0)
    return;
  guint64 ih = c->index_heads, id = c->index_head_dim, d = c->hidden, T = b->T, e = b->e;
  guint64 B = b->g->batch, S = b->g->seq;
  StwGraphOp *ix = op(b, l, STW_OP_INDEXER, "attn.indexer");
  op_params(ix, ids->n, ids->id);
  ix->flops = 2 * T * d * (ih * id + id) + 4 * T * (ih + 1) * id + 2 * B * S * S * ih * id;
  ix->in_bytes = T * d * e;
  ix->work_bytes = T * (ih + 1) * id * 4 + B * S * S * ih * 4 + B * S * S * c->heads * e;
  ix->passthrough = TRUE;
  ix->no_grad = TRUE;
}

/* The end of llama block L (names under PREFIX, its AltUp router's ids ROUTER): AltUp's
 * correction, then the per-layer branch */
static void
block_end(Builder *b, gint32 l, const char *prefix, const Ids *router)
{
  altup_step(b, l, prefix, TRUE, router);
  per_layer_branch(b, l, prefix);
}

static void
build_llama(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, f = c->ffn;
  guint32 emb = tensor(b, c->vocab, d, "embed_tokens.weight");
  StwGraphOp *o = op(b, -1, STW_OP_EMBED, "embed");
  op_params(o, 1, &emb);
  o->out_bytes = b->T * d * b->e;
  per_layer_inputs(b);
  altup_end(b, FALSE);

  for (gint32 l = 0; l < (gint32)c->layers; l++) {
    g_autofree char *p = g_strdup_printf("layers.%d", l);
    g_autofree char *pa = g_strconcat(p, ".self_attn", NULL), *pm = g_strconcat(p, ".mlp", NULL);
    g_autofree char *n1 = g_strconcat(p, ".input_layernorm", NULL);
    /* with norms after attention (Gemma 2 and 3, OLMo 2) post_attention_layernorm is that one,
     * and the MLP's own before it, where there is one, pre_feedforward_layernorm; a parallel
     * block (Cohere's) has one norm that attention and the MLP both read, and no other */
    gboolean shared = c->norms == STW_NORMS_SHARED;
    gboolean pre = c->norms != STW_NORMS_POST;
    gboolean post = c->norms == STW_NORMS_BOTH || c->norms == STW_NORMS_POST;
    g_autofree char *n2 = g_strconcat(p, post ? ".pre_feedforward_layernorm"
                                              : ".post_attention_layernorm", NULL);
    g_autofree char *n3 = g_strconcat(p, ".post_attention_layernorm", NULL);
    g_autofree char *n4 = g_strconcat(p, ".post_feedforward_layernorm", NULL);
    g_autofree char *nq = g_strconcat(pa, ".q_proj", NULL), *nk = g_strconcat(pa, ".k_proj", NULL);
    g_autofree char *nv = g_strconcat(pa, ".v_proj", NULL), *no = g_strconcat(pa, ".o_proj", NULL);
    Ids ln1 = { 0 }, qkv = { 0 }, qk = { 0 }, out = { 0 }, ln2 = { 0 }, post1 = { 0 },
        post2 = { 0 }, sinks = { 0 };
    /* a block of one part (Mamba's, Nemotron-H's): its norm and the mixer, or the MLP */
    gboolean mixer = stw_model_block_mixer(c, (guint64)l);
    gboolean mlp = stw_model_block_mlp(c, (guint64)l);
    /* the attention's widths (a global block's its own, Gemma 4's); keys and values of its
     * own unless it reuses an earlier block's, values unless they are its keys */
    guint64 hd = stw_model_block_head_dim(c, (guint64)l);
    guint64 kvh = stw_model_block_kv_heads(c, (guint64)l);
    guint64 q = c->heads * hd, kv = kvh * hd;
    gboolean own_kv = !stw_model_block_kv_shared(c, (guint64)l);
    gboolean own_v =
        own_kv && !(c->global_values_are_keys && stw_model_block_global(c, (guint64)l));
    /* the values' width: the keys', or v_head_dim's (MiMo-V2-Flash's narrower heads) */
    guint64 kvv = c->kv_lora_rank == 0 && c->v_head_dim != 0 ? kvh * c->v_head_dim : kv;
    guint64 kv_proj = own_kv ? kv + (own_v ? kvv : 0) : 0; /* what the block projects */
    gboolean linear_attn = stw_model_block_linear(c, (guint64)l);
    /* softmax attention: the block's mixer, or beside the linear one (Falcon-H1's) */
    gboolean softmax = mixer && (!linear_attn || c->linear_parallel);
    if (pre && mixer)
      model_norm_params(b, &ln1, d, n1);
    gboolean has_sinks = c->attn_sinks && softmax &&
                         !(c->global_no_sinks && stw_model_block_global(c, (guint64)l));
    if (has_sinks) /* gpt-oss's logit per head, read by the attention's softmax */
      named(b, &sinks, c->heads, 0, pa, "sinks");
    Ids head_gate = { 0 };
    Ids lambdas = { 0 };
    if (c->diff_attn && softmax) /* DiffLlama's lambdas, read where the two softmaxes' outputs
                                  * combine */
      for (int k = 0; k < 4; k++)
        named(b, &lambdas, stw_model_head_dim(c), 0, pa,
              (const char *[]){ "lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2" }[k]);
    Mla mla = { 0 };
    LinearMix mix = { 0 };
    Ids indexer = { 0 };
    if (linear_attn)
      linear_mix_params(b, p, &mix);
    if (softmax && c->kv_lora_rank != 0) {
      mla_params(b, l, pa, &mla);
    } else if (softmax) {
      /* the queries, and the output gate's rows where q_proj makes them too (Qwen's) */
      guint64 q_rows = c->attn_gate && c->attn_gate_in_q ? 2 * q : q;
      projection(b, &qkv, STW_SITE_QKV, q_rows, d, q_rows, nq);
      if (own_kv)
        projection(b, &qkv, STW_SITE_QKV, kv, d, kv, nk);
      if (own_v)
        projection(b, &qkv, STW_SITE_QKV, kvv, d, kvv, nv);
      if (c->attn_gate && !c->attn_gate_in_q) /* AFMoE's output gate, read with the queries
                                               * (never biased) */
        named(b, &qkv, q, d, pa, "gate_proj.weight");
      block_indexer_params(b, l, pa, &indexer);
    }
    if (c->qk_norm && softmax) {
      g_autofree char *nqn = g_strconcat(pa, ".q_norm", NULL);
      g_autofree char *nkn = g_strconcat(pa, ".k_norm", NULL);
      /* per head (Qwen3, Gemma 3), or over all the queries and all the keys (OLMo 2) */
      norm_params(b, &qk, c->qk_norm_full ? q : hd, TRUE, nqn);
      if (own_kv)
        norm_params(b, &qk, c->qk_norm_full ? kv : hd, TRUE, nkn);
    }
    /* what the output projection reads */
    guint64 o_in = c->kv_lora_rank != 0 || c->v_head_dim != 0
                       ? c->heads * stw_model_v_head_dim(c)
                       : q;
    if (softmax)
      projection(b, &out, STW_SITE_OUT, d, o_in, d, no);
    if (c->attn_head_gate && softmax) /* Bailing's scalar a head */
      named(b, &head_gate, c->heads, d, pa, "g_proj.weight");
    Ids attn_sub = { 0 };
    if (c->sub_norms && softmax) { /* BitNet's norm over the heads' output, before o_proj */
      g_autofree char *ns = g_strconcat(pa, ".attn_sub_norm", NULL);
      model_norm_params(b, &attn_sub, o_in, ns);
    }
    if (post && mixer)
      model_norm_params(b, &post1, d, n3);
    if (pre && !shared && mlp)
      model_norm_params(b, &ln2, d, n2);

    StwGraphOp *close = NULL, *proj = NULL;
    Ids router = { 0 };
    altup_router(b, p, &router);
    altup_step(b, l, p, FALSE, &router);
    if (mixer) {
      /* the block opens at its first norm, or at the projections where there is none before */
      StwGraphOp *open = pre ? model_norm(b, l, STW_OP_NORM_ATTN, "ln_1", d, &ln1) : NULL;
      if (pre)
        laurel_branch(b, l, p);
      proj = !softmax               ? linear_mix_ops(b, l, &mix)
                         : c->kv_lora_rank != 0 ? mla_ops(b, l, &mla)
                                                : linear(b, l, STW_OP_ATTN_QKV, "attn.qkv", d,
                                                         q + kv_proj + (c->attn_gate ? q : 0),
                                                         qkv.n, qkv.id);
      (open != NULL ? open : proj)->residual = STW_RESIDUAL_OPEN;
      block_indexer_op(b, l, &indexer);
      if (c->qk_norm && softmax)
        qk_norm_op(b, l, &qk, q, kv);
      if (c->kv_lora_rank == 0 && softmax) {
        if (!c->no_rope)
          elementwise(b, l, STW_OP_ROPE, "attn.rope", q + 2 * kv, q + 2 * kv, 3, FALSE);
        StwGraphOp *core = attention_core(b, l, q, kv, kvv, o_in, TRUE);
        op_params(core, sinks.n, sinks.id);
        if (c->diff_attn) {
          /* two softmaxes one after the other, each with half the values: twice the products
           * and what each keeps for backward, their outputs side by side; then combined pair by
           * pair, normed (keeping its input) to the queries' width */
          core->flops *= 2;
          core->saved_extra_bytes *= 2;
          core->out_bytes *= 2;
          op_params(elementwise(b, l, STW_OP_MLP_ACT, "attn.diff", 2 * q, q, 8, TRUE), lambdas.n,
                    lambdas.id);
        }
        if (c->attn_gate) /* sigmoid(gate) x the heads' output: as the MLP's silu(gate) x up */
          elementwise(b, l, STW_OP_MLP_ACT, "attn.gate", 2 * q, q, 3, TRUE);
      }
      if (c->attn_head_gate && softmax) { /* a scalar a head from the block's input, its
                                                * sigmoid times the head's output */
        linear(b, l, STW_OP_ATTN_QKV, "attn.head_gate", d, c->heads, head_gate.n, head_gate.id);
        elementwise(b, l, STW_OP_MLP_ACT, "attn.head_gate_mul", o_in + c->heads, o_in, 3, TRUE);
      }
      /* (a norm of the 16-bit branch, as a post-norm is) */
      if (c->sub_norms)
        model_norm(b, l, STW_OP_NORM_POST_ATTN, "attn.sub_norm", o_in, &attn_sub);
      /* the residual added after the post-norm where there is one */
      if (softmax)
        close = linear(b, l, STW_OP_ATTN_OUT, "attn.o_proj", o_in, d, out.n, out.id);
      if (linear_attn && softmax) /* the linear mixer beside it, reading the same norm: its
                                   * output and the attention's summed into the residual */
        linear_mix_ops(b, l, &mix);
      if (linear_attn) {
        close = linear(b, l, STW_OP_ATTN_OUT, "attn.out_proj", linear_out_width(c), d, mix.out.n,
                       mix.out.id);
        close->outside_roles = TRUE;
      }
      if (post)
        close = model_norm(b, l, STW_OP_NORM_POST_ATTN, "attn.post_norm", d, &post1);
      close->residual = STW_RESIDUAL_CLOSE;
    }
    if (!mlp) { /* Mamba's block: its norm and its mixer */
      block_end(b, l, p, &router);
      continue;
    }
    if (pre && !shared)
      model_norm(b, l, STW_OP_NORM_MLP, "ln_2", d, &ln2)->residual = STW_RESIDUAL_OPEN;
    if (stw_model_experts(c) > 1 && !stw_model_block_dense(c, (guint64)l)) {
      close = moe_mlp(b, l, p, !pre || shared);
      if (post || c->experts_post_norm) { /* the residual added after the experts' norm
                                           * (FlexOlmo's; A.X K1's post_mlp_layernorm) */
        g_autofree char *np = g_strconcat(pm, ".post_mlp_layernorm", NULL);
        model_norm_params(b, &post2, d, post ? n4 : np);
        close->residual = STW_RESIDUAL_NONE;
        close = model_norm(b, l, STW_OP_NORM_POST_MLP, "mlp.post_norm", d, &post2);
        close->residual = STW_RESIDUAL_CLOSE;
      }
      block_end(b, l, p, &router);
      continue;
    }
    /* a dense MLP: every block's, or one of the dense blocks' among the experts' */
    guint64 w = stw_model_experts(c) > 1 ? c->dense_ffn : f;
    if (c->kv_shared_wide_mlp && !own_kv) /* Gemma 4's double-wide MLP */
      w *= 2;
    Ids gate_up = { 0 }, down = { 0 };
    g_autofree char *ng = g_strconcat(pm, ".gate_proj", NULL), *nu = g_strconcat(pm, ".up_proj", NULL);
    g_autofree char *nd = g_strconcat(pm, ".down_proj", NULL);
    guint64 gates = c->mlp_ungated ? 1 : 2; /* projections up: the gate's and up's, or up's */
    if (!c->mlp_ungated)
      projection(b, &gate_up, STW_SITE_MLP, w, d, w, ng);
    projection(b, &gate_up, STW_SITE_MLP, w, d, w, nu);
    projection(b, &down, STW_SITE_MLP, d, w, d, nd);
    Ids ffn_sub = { 0 };
    if (c->sub_norms) { /* BitNet's norm over the activation, before down_proj */
      g_autofree char *ns = g_strconcat(pm, ".ffn_sub_norm", NULL);
      model_norm_params(b, &ffn_sub, w, ns);
    }
    if (post)
      model_norm_params(b, &post2, d, n4);
    proj = linear(b, l, STW_OP_MLP_IN, c->mlp_ungated ? "mlp.up" : "mlp.gate_up", d, gates * w,
                  gate_up.n, gate_up.id);
    if (!pre || shared) /* the MLP's branch opens at its first projection */
      proj->residual = STW_RESIDUAL_OPEN;
    if (c->mlp_ungated)
      elementwise(b, l, STW_OP_MLP_ACT, "mlp.act", w, w, 2, TRUE);
    else
      elementwise(b, l, STW_OP_MLP_ACT, "mlp.swiglu", 2 * w, w, 3, TRUE);
    if (c->sub_norms)
      model_norm(b, l, STW_OP_NORM_POST_MLP, "mlp.sub_norm", w, &ffn_sub);
    close = linear(b, l, STW_OP_MLP_OUT, "mlp.down", w, d, down.n, down.id);
    if (post)
      close = model_norm(b, l, STW_OP_NORM_POST_MLP, "mlp.post_norm", d, &post2);
    close->residual = STW_RESIDUAL_CLOSE;
    block_end(b, l, p, &router);
  }
  altup_end(b, TRUE);
  decoder_head(b, emb, "norm", "lm_head.weight");
}

static void
build_bert(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->hidden, f = c->ffn, V = c->vocab;
  guint32 word = tensor(b, V, d, "embeddings.word_embeddings.weight");
  g_ptr_array_add(((StwGraphTensor *)b->g->tensors->pdata[word])->aliases,
                  g_strdup("cls.predictions.decoder.weight"));
  guint32 pos = tensor(b, c->max_seq + c->position_offset, d,
                       "embeddings.position_embeddings.weight");
  guint32 type = c->no_token_types ? G_MAXUINT32
                                    : tensor(b, c->token_types != 0 ? c->token_types : 2, d,
                                             "embeddings.token_type_embeddings.weight");
  guint32 elnw = tensor(b, d, 0, "embeddings.LayerNorm.weight");
  guint32 elnb = tensor(b, d, 0, "embeddings.LayerNorm.bias");

  StwGraphOp *o = op(b, -1, STW_OP_EMBED, "embed");
  op_params(o, c->no_token_types ? 2 : 3, (guint32[]){ word, pos, type });
  o->flops = (c->no_token_types ? 1 : 2) * b->T * d;
  o->out_bytes = b->T * d * b->e;
  norm(b, -1, STW_OP_NORM_EMBED, "embed.ln", d, FALSE, 2, (guint32[]){ elnw, elnb });

  for (gint32 l = 0; l < (gint32)c->layers; l++) {
    g_autofree char *p = g_strdup_printf("encoder.layer.%d", l);
    g_autofree char *nq = g_strconcat(p, ".attention.self.query", NULL);
    g_autofree char *nk = g_strconcat(p, ".attention.self.key", NULL);
    g_autofree char *nv = g_strconcat(p, ".attention.self.value", NULL);
    g_autofree char *nao = g_strconcat(p, ".attention.output.dense", NULL);
    g_autofree char *naln = g_strconcat(p, ".attention.output.LayerNorm", NULL);
    g_autofree char *ni = g_strconcat(p, ".intermediate.dense", NULL);
    g_autofree char *no = g_strconcat(p, ".output.dense", NULL);
    g_autofree char *noln = g_strconcat(p, ".output.LayerNorm", NULL);
    Ids qkv = { 0 }, ao = { 0 }, aln = { 0 }, in = { 0 }, out = { 0 }, oln = { 0 };
    projection(b, &qkv, STW_SITE_QKV, d, d, d, nq);
    projection(b, &qkv, STW_SITE_QKV, d, d, d, nk);
    projection(b, &qkv, STW_SITE_QKV, d, d, d, nv);
    projection(b, &ao, STW_SITE_OUT, d, d, d, nao);
    norm_params(b, &aln, d, FALSE, naln);
    projection(b, &in, STW_SITE_MLP, f, d, f, ni);
    projection(b, &out, STW_SITE_MLP, d, f, d, no);
    norm_params(b, &oln, d, FALSE, noln);

    linear(b, l, STW_OP_ATTN_QKV, "attn.qkv", d, 3 * d, qkv.n, qkv.id)->residual = STW_RESIDUAL_OPEN;
    attention_core(b, l, d, d, d, d, FALSE);
    linear(b, l, STW_OP_ATTN_OUT, "attn.out", d, d, ao.n, ao.id)->residual = STW_RESIDUAL_CLOSE;
    norm(b, l, STW_OP_NORM_POST_ATTN, "attn.ln", d, FALSE, aln.n, aln.id);
    linear(b, l, STW_OP_MLP_IN, "ffn.in", d, f, in.n, in.id)->residual = STW_RESIDUAL_OPEN;
    elementwise(b, l, STW_OP_MLP_ACT, "ffn.gelu", f, f, 8, TRUE);
    linear(b, l, STW_OP_MLP_OUT, "ffn.out", f, d, out.n, out.id)->residual = STW_RESIDUAL_CLOSE;
    norm(b, l, STW_OP_NORM_POST_MLP, "ffn.ln", d, FALSE, oln.n, oln.id);
  }
  if (!c->no_pooler) {
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
  }
  linear(b, -1, STW_OP_LM_HEAD, "mlm_head", d, V, 1, &word);
  loss(b, V);
  b->g->io_bytes = 4 * b->T * 8; /* ids, token types, attention mask, targets */
}

/* A LayerNorm's weight and bias over D, named PREFIX.weight and PREFIX.bias. */
static void
layer_norm_params(Builder *b, guint64 d, const char *prefix)
{
  tensor(b, d, 0, "%s.weight", prefix);
  tensor(b, d, 0, "%s.bias", prefix);
}

/* A Linear's weight [OUT, IN] and bias [OUT], named PREFIX.weight and PREFIX.bias. */
static void
linear_params(Builder *b, guint64 in, guint64 out, const char *prefix)
{
  tensor(b, out, in, "%s.weight", prefix);
  tensor(b, out, 0, "%s.bias", prefix);
}

/* SigLIP's MLP (fc1, fc2) under PREFIX. */
static void
siglip_mlp_params(Builder *b, guint64 d, guint64 ffn, const char *prefix)
{
  g_autofree char *fc1 = g_strconcat(prefix, ".fc1", NULL);
  g_autofree char *fc2 = g_strconcat(prefix, ".fc2", NULL);
  linear_params(b, d, ffn, fc1);
  linear_params(b, ffn, d, fc2);
}

/* A bias-free Linear of Gemma 4's towers (Gemma4ClippableLinear: its weight under .linear). */
static void
clippable(Builder *b, guint64 in, guint64 out, const char *prefix, const char *name)
{
  tensor(b, out, in, "%s.%s.linear.weight", prefix, name);
}

/* Gemma 4's vision tower. */
static void
gemma4_vision_tower(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->vision_hidden, hd = c->vision_head_dim;
  tensor(b, 2 * c->vision_positions, d, "vision_tower.patch_embedder.position_embedding_table");
  tensor(b, d, 3 * c->vision_patch * c->vision_patch,
         "vision_tower.patch_embedder.input_proj.weight");
  for (guint64 l = 0; l < c->vision_layers; l++) {
    g_autofree char *p = g_strdup_printf("vision_tower.encoder.layers.%" G_GUINT64_FORMAT, l);
    g_autofree char *attn = g_strconcat(p, ".self_attn", NULL);
    g_autofree char *mlp = g_strconcat(p, ".mlp", NULL);
    clippable(b, d, c->vision_heads * hd, attn, "q_proj");
    clippable(b, d, c->vision_kv_heads * hd, attn, "k_proj");
    clippable(b, d, c->vision_kv_heads * hd, attn, "v_proj");
    clippable(b, c->vision_heads * hd, d, attn, "o_proj");
    tensor(b, hd, 0, "%s.q_norm.weight", attn);
    tensor(b, hd, 0, "%s.k_norm.weight", attn);
    clippable(b, d, c->vision_ffn, mlp, "gate_proj");
    clippable(b, d, c->vision_ffn, mlp, "up_proj");
    clippable(b, c->vision_ffn, d, mlp, "down_proj");
    static const char *const norms[] = { "input_layernorm", "post_attention_layernorm",
                                         "pre_feedforward_layernorm",
                                         "post_feedforward_layernorm" };
    for (gsize i = 0; i < G_N_ELEMENTS(norms); i++)
      tensor(b, d, 0, "%s.%s.weight", p, norms[i]);
  }
}

/* SigLIP's and CLIP's encoder blocks under PREFIX (LayerNorms; q, k, v and out projections and
 * an MLP, biased), L of them D wide with MLPs FFN wide. */
static void
vit_blocks(Builder *b, const char *prefix, guint64 layers, guint64 d, guint64 ffn)
{
  for (guint64 l = 0; l < layers; l++) {
    g_autofree char *p = g_strdup_printf("%s.encoder.layers.%" G_GUINT64_FORMAT, prefix, l);
    g_autofree char *ln1 = g_strconcat(p, ".layer_norm1", NULL);
    g_autofree char *ln2 = g_strconcat(p, ".layer_norm2", NULL);
    g_autofree char *mlp = g_strconcat(p, ".mlp", NULL);
    layer_norm_params(b, d, ln1);
    static const char *const proj[] = { "k_proj", "v_proj", "q_proj", "out_proj" };
    for (gsize i = 0; i < G_N_ELEMENTS(proj); i++) {
      g_autofree char *name = g_strdup_printf("%s.self_attn.%s", p, proj[i]);
      linear_params(b, d, d, name);
    }
    layer_norm_params(b, d, ln2);
    siglip_mlp_params(b, d, ffn, mlp);
  }
}

/* CLIP's vision tower (a class embedding, a patch embedding without a bias, a position a patch
 * and one more, LayerNorms before and after the blocks). */
static void
clip_tower(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->vision_hidden, side = c->vision_image / c->vision_patch;
  tensor(b, d, 0, "vision_tower.embeddings.class_embedding");
  tensor(b, d, c->vision_channels * c->vision_patch * c->vision_patch,
         "vision_tower.embeddings.patch_embedding.weight");
  tensor(b, side * side + 1, d, "vision_tower.embeddings.position_embedding.weight");
  layer_norm_params(b, d, "vision_tower.pre_layrnorm");
  vit_blocks(b, "vision_tower", c->vision_layers, d, c->vision_ffn);
  layer_norm_params(b, d, "vision_tower.post_layernorm");
}

/* Pixtral's vision tower (the patch embedding's convolution as its [hidden, channels x patch^2]
 * matrix). */
static void
pixtral_tower(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->vision_hidden, f = c->vision_ffn;
  tensor(b, d, c->vision_channels * c->vision_patch * c->vision_patch,
         "vision_tower.patch_conv.weight");
  tensor(b, d, 0, "vision_tower.ln_pre.weight");
  for (guint64 l = 0; l < c->vision_layers; l++) {
    g_autofree char *p = g_strdup_printf("vision_tower.transformer.layers.%" G_GUINT64_FORMAT, l);
    tensor(b, d, 0, "%s.attention_norm.weight", p);
    tensor(b, f, d, "%s.feed_forward.gate_proj.weight", p);
    tensor(b, f, d, "%s.feed_forward.up_proj.weight", p);
    tensor(b, d, f, "%s.feed_forward.down_proj.weight", p);
    static const char *const proj[] = { "k_proj", "v_proj", "q_proj", "o_proj" };
    for (gsize i = 0; i < G_N_ELEMENTS(proj); i++)
      tensor(b, d, d, "%s.attention.%s.weight", p, proj[i]);
    tensor(b, d, 0, "%s.ffn_norm.weight", p);
  }
}

/* A Qwen-VL patch merger under PREFIX: a norm over the tower's width (NORM_MERGED: over the
 * merged width, as DeepStack's mergers norm after merging; Qwen2.5-VL's an RMSNorm, the others'
 * LayerNorms), then vision_merge^2 x vision_hidden to as wide and to vision_out, biased; named
 * ln_q, mlp.0 and mlp.2 (Qwen2-VL's, Qwen2.5-VL's) or norm, linear_fc1, linear_fc2 (Qwen3-VL's). */
static void
qwen_merger(Builder *b, const char *prefix, gboolean norm_merged)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->vision_hidden, w = c->vision_merge * c->vision_merge * d;
  gboolean qwen3 = c->vision_kind == STW_VISION_QWEN3_VL;
  g_autofree char *norm = g_strconcat(prefix, qwen3 ? ".norm" : ".ln_q", NULL);
  g_autofree char *fc1 = g_strconcat(prefix, qwen3 ? ".linear_fc1" : ".mlp.0", NULL);
  g_autofree char *fc2 = g_strconcat(prefix, qwen3 ? ".linear_fc2" : ".mlp.2", NULL);
  if (c->vision_kind == STW_VISION_QWEN2_5_VL)
    tensor(b, d, 0, "%s.weight", norm);
  else
    layer_norm_params(b, norm_merged ? w : d, norm);
  linear_params(b, w, w, fc1);
  linear_params(b, w, c->vision_out, fc2);
}

/* A Qwen-VL vision tower (vision_kind qwen2_vl, qwen2_5_vl, qwen3_vl), as transformers names it
 * under the model's "visual" (the patch embedding's 3-D convolution as its [hidden, channels x
 * frames x patch^2] matrix). */
static void
qwen_vl_tower(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->vision_hidden, f = c->vision_ffn;
  gboolean qwen3 = c->vision_kind == STW_VISION_QWEN3_VL;
  gboolean rms = c->vision_kind == STW_VISION_QWEN2_5_VL;
  tensor(b, d, c->vision_channels * c->vision_temporal_patch * c->vision_patch * c->vision_patch,
         "visual.patch_embed.proj.weight");
  if (qwen3) {
    tensor(b, d, 0, "visual.patch_embed.proj.bias");
    tensor(b, c->vision_positions, d, "visual.pos_embed.weight");
  }
  for (guint64 l = 0; l < c->vision_layers; l++) {
    g_autofree char *p = g_strdup_printf("visual.blocks.%" G_GUINT64_FORMAT, l);
    static const char *const norms[] = { "norm1", "norm2" };
    for (gsize i = 0; i < G_N_ELEMENTS(norms); i++) {
      g_autofree char *n = g_strdup_printf("%s.%s", p, norms[i]);
      if (rms)
        tensor(b, d, 0, "%s.weight", n);
      else
        layer_norm_params(b, d, n);
    }
    g_autofree char *qkv = g_strconcat(p, ".attn.qkv", NULL);
    g_autofree char *proj = g_strconcat(p, ".attn.proj", NULL);
    g_autofree char *mlp = g_strconcat(p, ".mlp", NULL);
    linear_params(b, d, 3 * d, qkv);
    linear_params(b, d, d, proj);
    if (c->vision_kind == STW_VISION_QWEN2_VL) {
      siglip_mlp_params(b, d, f, mlp); /* fc1, fc2 */
    } else if (rms) {
      static const char *const in[] = { "gate_proj", "up_proj" };
      for (gsize i = 0; i < G_N_ELEMENTS(in); i++) {
        g_autofree char *n = g_strdup_printf("%s.%s", mlp, in[i]);
        linear_params(b, d, f, n);
      }
      g_autofree char *down = g_strconcat(mlp, ".down_proj", NULL);
      linear_params(b, f, d, down);
    } else {
      g_autofree char *fc1 = g_strconcat(mlp, ".linear_fc1", NULL);
      g_autofree char *fc2 = g_strconcat(mlp, ".linear_fc2", NULL);
      linear_params(b, d, f, fc1);
      linear_params(b, f, d, fc2);
    }
  }
}

/* Gemma 4's audio tower (audio_layers > 0) and its embedder: the convolutions' kernels as
 * [out, in x 3 x 3] and [channels, kernel] matrices. */
static void
audio_tower(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->audio_hidden, hd = d / MAX(c->audio_heads, 1), inner = c->audio_heads * hd;
  if (c->audio_layers == 0)
    return;
  const char *sub = "audio_tower.subsample_conv_projection";
  tensor(b, c->audio_conv, 9, "%s.layer0.conv.weight", sub);
  tensor(b, c->audio_conv, 0, "%s.layer0.norm.weight", sub);
  tensor(b, c->audio_conv2, c->audio_conv * 9, "%s.layer1.conv.weight", sub);
  tensor(b, c->audio_conv2, 0, "%s.layer1.norm.weight", sub);
  tensor(b, d, c->audio_conv / 4 * c->audio_conv2, "%s.input_proj_linear.weight", sub);
  for (guint64 l = 0; l < c->audio_layers; l++) {
    g_autofree char *p = g_strdup_printf("audio_tower.layers.%" G_GUINT64_FORMAT, l);
    for (int k = 1; k <= 2; k++) {
      g_autofree char *ff = g_strdup_printf("%s.feed_forward%d", p, k);
      clippable(b, d, 4 * d, ff, "ffw_layer_1");
      clippable(b, 4 * d, d, ff, "ffw_layer_2");
      tensor(b, d, 0, "%s.pre_layer_norm.weight", ff);
      tensor(b, d, 0, "%s.post_layer_norm.weight", ff);
    }
    g_autofree char *attn = g_strconcat(p, ".self_attn", NULL);
    tensor(b, hd, 0, "%s.per_dim_scale", attn);
    clippable(b, d, inner, attn, "q_proj");
    clippable(b, d, inner, attn, "k_proj");
    clippable(b, d, inner, attn, "v_proj");
    clippable(b, d, d, attn, "post");
    tensor(b, inner, d, "%s.relative_k_proj.weight", attn);
    g_autofree char *conv = g_strconcat(p, ".lconv1d", NULL);
    clippable(b, d, 2 * d, conv, "linear_start");
    clippable(b, d, d, conv, "linear_end");
    tensor(b, d, c->audio_kernel, "%s.depthwise_conv1d.weight", conv);
    tensor(b, d, 0, "%s.pre_layer_norm.weight", conv);
    tensor(b, d, 0, "%s.conv_norm.weight", conv);
    static const char *const norms[] = { "norm_pre_attn", "norm_post_attn", "norm_out" };
    for (gsize i = 0; i < G_N_ELEMENTS(norms); i++)
      tensor(b, d, 0, "%s.%s.weight", p, norms[i]);
  }
  tensor(b, c->audio_output, d, "audio_tower.output_proj.weight");
  tensor(b, c->audio_output, 0, "audio_tower.output_proj.bias");
  tensor(b, c->hidden, c->audio_output, "embed_audio.embedding_projection.weight");
}

/* SigLIP's vision tower (the patch embedding's convolution as its
 * [hidden, channels x patch^2] matrix). */
static void
siglip_tower(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->vision_hidden, side = c->vision_image / c->vision_patch;
  /* (Idefics3's and SmolVLM's vision_model) */
  const char *v = stw_model_vision_projector(c) == STW_PROJECTOR_IDEFICS3 ? "vision_model"
                                                                         : "vision_tower";
  tensor(b, d, c->vision_channels * c->vision_patch * c->vision_patch,
         "%s.embeddings.patch_embedding.weight", v);
  tensor(b, d, 0, "%s.embeddings.patch_embedding.bias", v);
  tensor(b, side * side, d, "%s.embeddings.position_embedding.weight", v);
  vit_blocks(b, v, c->vision_layers, d, c->vision_ffn);
  g_autofree char *post = g_strconcat(v, ".post_layernorm", NULL);
  layer_norm_params(b, d, post);
  if (c->vision_pooling_head) { /* a probe, torch's MultiheadAttention, a LayerNorm, an MLP */
    g_autofree char *h = g_strconcat(v, ".head", NULL);
    g_autofree char *ln = g_strconcat(h, ".layernorm", NULL);
    g_autofree char *mlp = g_strconcat(h, ".mlp", NULL);
    g_autofree char *out = g_strconcat(h, ".attention.out_proj", NULL);
    tensor(b, d, 0, "%s.probe", h);
    tensor(b, 3 * d, d, "%s.attention.in_proj_weight", h);
    tensor(b, 3 * d, 0, "%s.attention.in_proj_bias", h);
    linear_params(b, d, d, out);
    layer_norm_params(b, d, ln);
    siglip_mlp_params(b, d, c->vision_ffn, mlp);
  }
}

/* Gemma 3's projector: the tower's width to hidden, and an RMSNorm. */
static void
gemma3_projector(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  tensor(b, c->vision_hidden, c->hidden, "multi_modal_projector.mm_input_projection_weight");
  tensor(b, c->vision_hidden, 0, "multi_modal_projector.mm_soft_emb_norm.weight");
}

/* Gemma 4's vision embedder: a projection to hidden. */
static void
gemma4_embedder(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  tensor(b, c->hidden, c->vision_hidden, "embed_vision.embedding_projection.weight");
}

/* LLaVA's projector (multi_modal_projector: vision_feature_layers x the tower's width to hidden,
 * hidden to hidden, biased where vision_projector_bias; with vision_newline LLaVA-NeXT's
 * image_newline, hidden values). */
static void
llava_projector(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  const char *m = "multi_modal_projector";
  if (c->vision_newline)
    tensor(b, c->hidden, 0, "image_newline");
  tensor(b, c->hidden, c->vision_feature_layers * c->vision_hidden, "%s.linear_1.weight", m);
  if (c->vision_projector_bias)
    tensor(b, c->hidden, 0, "%s.linear_1.bias", m);
  tensor(b, c->hidden, c->hidden, "%s.linear_2.weight", m);
  if (c->vision_projector_bias)
    tensor(b, c->hidden, 0, "%s.linear_2.bias", m);
}

/* Mistral 3's projector: an RMSNorm, a patch merger of vision_merge^2 x the tower's width, and
 * LLaVA's. */
static void
mistral3_projector(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->vision_hidden;
  const char *m = "multi_modal_projector";
  tensor(b, d, 0, "%s.norm.weight", m);
  tensor(b, d, c->vision_merge * c->vision_merge * d, "%s.patch_merger.merging_layer.weight", m);
  llava_projector(b);
}

/* PaliGemma's projector: the tower's width to vision_out, biased. */
static void
paligemma_projector(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  linear_params(b, c->vision_hidden, c->vision_out, "multi_modal_projector.linear");
}

/* InternViT's tower (InternVL's). */
static void
internvl_tower(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->vision_hidden, side = c->vision_image / c->vision_patch;
  const char *v = "vision_tower";
  tensor(b, d, 0, "%s.embeddings.cls_token", v);
  tensor(b, side * side + 1, d, "%s.embeddings.position_embeddings", v);
  tensor(b, d, c->vision_channels * c->vision_patch * c->vision_patch,
         "%s.embeddings.patch_embeddings.projection.weight", v);
  tensor(b, d, 0, "%s.embeddings.patch_embeddings.projection.bias", v);
  for (guint64 l = 0; l < c->vision_layers; l++) {
    g_autofree char *p = g_strdup_printf("%s.encoder.layer.%" G_GUINT64_FORMAT, v, l);
    tensor(b, d, 0, "%s.lambda_1", p);
    tensor(b, d, 0, "%s.lambda_2", p);
    static const char *const qkv[] = { "q_proj", "k_proj", "v_proj" };
    for (gsize i = 0; i < G_N_ELEMENTS(qkv); i++) {
      tensor(b, d, d, "%s.attention.%s.weight", p, qkv[i]);
      if (c->vision_attn_bias)
        tensor(b, d, 0, "%s.attention.%s.bias", p, qkv[i]);
    }
    g_autofree char *out = g_strconcat(p, ".attention.projection_layer", NULL);
    g_autofree char *mlp = g_strconcat(p, ".mlp", NULL);
    linear_params(b, d, d, out);
    if (c->vision_qk_norm) {
      tensor(b, d, 0, "%s.attention.q_norm.weight", p);
      tensor(b, d, 0, "%s.attention.k_norm.weight", p);
    }
    siglip_mlp_params(b, d, c->vision_ffn, mlp);
    static const char *const norms[] = { "layernorm_before", "layernorm_after" };
    for (gsize i = 0; i < G_N_ELEMENTS(norms); i++) {
      g_autofree char *n = g_strdup_printf("%s.%s", p, norms[i]);
      if (c->vision_rms_norm)
        tensor(b, d, 0, "%s.weight", n);
      else
        layer_norm_params(b, d, n);
    }
  }
  if (c->vision_final_norm) {
    g_autofree char *n = g_strconcat(v, ".layernorm", NULL);
    layer_norm_params(b, d, n);
  }
}

/* Llama 3.2 Vision's encoder blocks under PREFIX (bias-free q, k, v, o, a biased MLP, two
 * LayerNorms; GATED, two gates more), L of them. */
static void
mllama_blocks(Builder *b, const char *prefix, guint64 layers, gboolean gated)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->vision_hidden;
  for (guint64 l = 0; l < layers; l++) {
    g_autofree char *p = g_strdup_printf("%s.layers.%" G_GUINT64_FORMAT, prefix, l);
    if (gated) {
      tensor(b, 1, 0, "%s.gate_attn", p);
      tensor(b, 1, 0, "%s.gate_ffn", p);
    }
    static const char *const proj[] = { "q_proj", "k_proj", "v_proj", "o_proj" };
    for (gsize i = 0; i < G_N_ELEMENTS(proj); i++)
      tensor(b, d, d, "%s.self_attn.%s.weight", p, proj[i]);
    g_autofree char *mlp = g_strconcat(p, ".mlp", NULL);
    g_autofree char *ln1 = g_strconcat(p, ".input_layernorm", NULL);
    g_autofree char *ln2 = g_strconcat(p, ".post_attention_layernorm", NULL);
    siglip_mlp_params(b, d, c->vision_ffn, mlp);
    layer_norm_params(b, d, ln1);
    layer_norm_params(b, d, ln2);
  }
}

/* Llama 3.2 Vision's tower (under vision_model), and the language model's cross-attention
 * blocks, which attend to its features alone (named cross_attention_layers.N: a text step skips
 * them). */
static void
mllama_tower(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->vision_hidden, side = c->vision_image / c->vision_patch;
  guint64 positions = side * side + 1, ratios = c->vision_aspect_ratios + 1;
  const char *v = "vision_model";
  tensor(b, d, 0, "%s.class_embedding", v);
  tensor(b, d, c->vision_channels * c->vision_patch * c->vision_patch, "%s.patch_embedding.weight",
         v);
  tensor(b, 1, 0, "%s.gated_positional_embedding.gate", v);
  tensor(b, positions, d, "%s.gated_positional_embedding.embedding", v);
  tensor(b, ratios, c->vision_tiles * positions * d,
         "%s.gated_positional_embedding.tile_embedding.weight", v);
  static const char *const tiles[] = { "pre_tile_positional_embedding",
                                       "post_tile_positional_embedding" };
  for (gsize i = 0; i < G_N_ELEMENTS(tiles); i++) {
    tensor(b, 1, 0, "%s.%s.gate", v, tiles[i]);
    tensor(b, ratios, c->vision_tiles * d, "%s.%s.embedding.weight", v, tiles[i]);
  }
  layer_norm_params(b, d, "vision_model.layernorm_pre");
  layer_norm_params(b, d, "vision_model.layernorm_post");
  mllama_blocks(b, "vision_model.transformer", c->vision_layers, FALSE);
  mllama_blocks(b, "vision_model.global_transformer", c->vision_global_layers, TRUE);
  guint64 h = c->hidden, hd = stw_model_head_dim(c), q = c->heads * hd, kv = c->kv_heads * hd;
  for (guint64 l = 0; l < c->vision_cross_layers; l++) {
    g_autofree char *p = g_strdup_printf("cross_attention_layers.%" G_GUINT64_FORMAT, l);
    tensor(b, q, h, "%s.cross_attn.q_proj.weight", p);
    tensor(b, kv, h, "%s.cross_attn.k_proj.weight", p);
    tensor(b, kv, h, "%s.cross_attn.v_proj.weight", p);
    tensor(b, h, q, "%s.cross_attn.o_proj.weight", p);
    tensor(b, hd, 0, "%s.cross_attn.q_norm.weight", p);
    tensor(b, hd, 0, "%s.cross_attn.k_norm.weight", p);
    tensor(b, h, 0, "%s.input_layernorm.weight", p);
    tensor(b, 1, 0, "%s.cross_attn_attn_gate", p);
    tensor(b, c->ffn, h, "%s.mlp.gate_proj.weight", p);
    tensor(b, c->ffn, h, "%s.mlp.up_proj.weight", p);
    tensor(b, h, c->ffn, "%s.mlp.down_proj.weight", p);
    tensor(b, 1, 0, "%s.cross_attn_mlp_gate", p);
    tensor(b, h, 0, "%s.post_attention_layernorm.weight", p);
  }
}

/* GLM-4V's tower (GLM-4.1V's, GLM-4.5V's), under the model's "visual". */
static void
glm4v_tower(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 d = c->vision_hidden, side = c->vision_image / c->vision_patch, f = c->vision_out;
  tensor(b, side * side, d, "visual.embeddings.position_embedding.weight");
  tensor(b, d, c->vision_channels * c->vision_temporal_patch * c->vision_patch * c->vision_patch,
         "visual.patch_embed.proj.weight");
  tensor(b, d, 0, "visual.patch_embed.proj.bias");
  for (guint64 l = 0; l < c->vision_layers; l++) {
    g_autofree char *p = g_strdup_printf("visual.blocks.%" G_GUINT64_FORMAT, l);
    tensor(b, d, 0, "%s.norm1.weight", p);
    tensor(b, d, 0, "%s.norm2.weight", p);
    tensor(b, 3 * d, d, "%s.attn.qkv.weight", p);
    if (c->vision_attn_bias)
      tensor(b, 3 * d, 0, "%s.attn.qkv.bias", p);
    tensor(b, d, d, "%s.attn.proj.weight", p);
    tensor(b, f, d, "%s.mlp.gate_proj.weight", p);
    tensor(b, f, d, "%s.mlp.up_proj.weight", p);
    tensor(b, d, f, "%s.mlp.down_proj.weight", p);
  }
  tensor(b, d, 0, "visual.post_conv_layernorm.weight");
  tensor(b, d, 0, "visual.post_layernorm.weight");
}

/* GLM-4V's merger: a strided convolution of vision_merge^2 x the tower's width to vision_out
 * with a bias, then vision_out to vision_out, a LayerNorm and a gated MLP vision_ffn wide. */
static void
glm4v_merger(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  guint64 o = c->vision_out, f = c->vision_ffn;
  tensor(b, o, c->vision_merge * c->vision_merge * c->vision_hidden, "visual.downsample.weight");
  tensor(b, o, 0, "visual.downsample.bias");
  tensor(b, o, o, "visual.merger.proj.weight");
  layer_norm_params(b, o, "visual.merger.post_projection_norm");
  tensor(b, f, o, "visual.merger.gate_proj.weight");
  tensor(b, f, o, "visual.merger.up_proj.weight");
  tensor(b, o, f, "visual.merger.down_proj.weight");
}

/* A projector after a pixel shuffle: a LayerNorm (named NORM) over vision_merge^2 x the tower's
 * width, a projection to MID, and one of IN (MID, or SwiGLU's half of it) to hidden, biased. */
static void
shuffle_projector(Builder *b, const char *norm, guint64 mid, guint64 in)
{
  const StwModelConfig *c = &b->g->config;
  guint64 w = c->vision_merge * c->vision_merge * c->vision_hidden;
  g_autofree char *n = g_strconcat("multi_modal_projector.", norm, NULL);
  layer_norm_params(b, w, n);
  linear_params(b, w, mid, "multi_modal_projector.linear_1");
  linear_params(b, in, c->hidden, "multi_modal_projector.linear_2");
}

/* Aya Vision's projector: to vision_out, and half of that (SwiGLU's halves multiplied) to
 * hidden. */
static void
aya_projector(Builder *b)
{
  shuffle_projector(b, "layernorm", b->g->config.vision_out, b->g->config.vision_out / 2);
}

/* Llama 3.2 Vision's projector: vision_features to hidden, biased. */
static void
mllama_projector(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  linear_params(b, c->vision_features, c->hidden, "multi_modal_projector");
}

/* InternVL's projector: to hidden and to hidden. */
static void
internvl_projector(Builder *b)
{
  shuffle_projector(b, "layer_norm", b->g->config.hidden, b->g->config.hidden);
}

/* Idefics3's connector (SmolVLM's too): the pixel shuffle's vision_merge^2 x the tower's width
 * to hidden, without a bias. */
static void
idefics3_connector(Builder *b)
{
  const StwModelConfig *c = &b->g->config;
  tensor(b, c->hidden, c->vision_merge * c->vision_merge * c->vision_hidden,
         "connector.modality_projection.proj.weight");
}

/* The Qwen-VL mergers: the patch merger, and Qwen3-VL's DeepStack mergers. */
static void
qwen_mergers(Builder *b)
{
  qwen_merger(b, "visual.merger", FALSE);
  for (guint64 i = 0; i < b->g->config.vision_deepstack; i++) {
    g_autofree char *p = g_strdup_printf("visual.deepstack_merger_list.%" G_GUINT64_FORMAT, i);
    qwen_merger(b, p, TRUE);
  }
}

/* The model's vision tower and projector (vision_layers > 0), as transformers names them
 * (without the ForConditionalGeneration's "model."): weights read by no op of a text step. */
static void
vision_tower(Builder *b)
{
  static void (*const tower[STW_N_VISION_KINDS])(Builder *) = {
    [STW_VISION_SIGLIP] = siglip_tower,      [STW_VISION_GEMMA4] = gemma4_vision_tower,
    [STW_VISION_PIXTRAL] = pixtral_tower,    [STW_VISION_CLIP] = clip_tower,
    [STW_VISION_QWEN2_VL] = qwen_vl_tower,   [STW_VISION_QWEN2_5_VL] = qwen_vl_tower,
    [STW_VISION_QWEN3_VL] = qwen_vl_tower,   [STW_VISION_INTERNVL] = internvl_tower,
    [STW_VISION_MLLAMA] = mllama_tower,      [STW_VISION_GLM4V] = glm4v_tower,
  };
  static void (*const projector[STW_N_PROJECTORS])(Builder *) = {
    [STW_PROJECTOR_GEMMA3] = gemma3_projector,       [STW_PROJECTOR_GEMMA4] = gemma4_embedder,
    [STW_PROJECTOR_MISTRAL3] = mistral3_projector,   [STW_PROJECTOR_LLAVA] = llava_projector,
    [STW_PROJECTOR_PALIGEMMA] = paligemma_projector, [STW_PROJECTOR_QWEN] = qwen_mergers,
    [STW_PROJECTOR_IDEFICS3] = idefics3_connector, [STW_PROJECTOR_INTERNVL] = internvl_projector,
    [STW_PROJECTOR_MLLAMA] = mllama_projector,     [STW_PROJECTOR_GLM4V] = glm4v_merger,
    [STW_PROJECTOR_AYA] = aya_projector,
  };
  StwModelGraph *g = b->g;
  g->vision_first = g->projector_first = g->tensors->len;
  if (g->config.vision_layers != 0) {
    tower[g->config.vision_kind](b);
    g->projector_first = g->tensors->len;
    projector[stw_model_vision_projector(&g->config)](b);
  }
  g->vision_end = g->tensors->len;
}

/* ---- images through the vision tower ----------------------------------------------------- */

guint64
stw_model_image_size(const StwModelConfig *c)
{
  switch (c->vision_kind) {
  case STW_VISION_QWEN2_VL:
  case STW_VISION_QWEN2_5_VL:
  case STW_VISION_QWEN3_VL:
  case STW_VISION_PIXTRAL:
  case STW_VISION_GLM4V:
    return 0;
  default:
    return c->vision_layers != 0 ? c->vision_image : 0;
  }
}

guint64
stw_model_image_step(const StwModelConfig *c)
{
  StwVisionProjector p = stw_model_vision_projector(c);
  /* Qwen-VL's, GLM-4V's and Mistral 3's processors resize to whole merged patches */
  gboolean merges = p == STW_PROJECTOR_QWEN || p == STW_PROJECTOR_GLM4V ||
                    p == STW_PROJECTOR_MISTRAL3;
  return c->vision_patch * (merges ? MAX(c->vision_merge, 1) : 1);
}

#define model_fail(error, ...)                                                                  \
  stw_fail(error, STW_MODEL_ERROR, STW_MODEL_ERROR_INVALID, __VA_ARGS__)

/* Gemma 3's projector pools an image's patches to mm_tokens_per_image tokens, 16 x 16 in every
 * checkpoint Google released and transformers' default (vision_merge, the pooling's kernel,
 * where a file says otherwise). */
#define GEMMA3_SIDE_TOKENS 16

gboolean
stw_model_image_tokens(const StwModelConfig *c, guint64 px, StwImageTokens *out, GError **error)
{
  *out = (StwImageTokens){ 0 };
  if (c->vision_layers == 0)
    return model_fail(error, "%s has no vision tower to take images", c->name);
  if (c->vision_kind == STW_VISION_MLLAMA)
    return model_fail(error, "%s: Llama 3.2 Vision's images reach its language model through "
                      "cross-attention blocks, which stowage does not model with images (a text "
                      "step skips them)", c->name);
  if (c->vision_kind == STW_VISION_GEMMA4)
    return model_fail(error, "%s: Gemma 4's tower pools each image to a budget of soft tokens "
                      "that stowage does not model yet", c->name);
  guint64 fixed = stw_model_image_size(c), m = MAX(c->vision_merge, 1);
  StwVisionProjector p = stw_model_vision_projector(c);
  guint64 unit = stw_model_image_step(c);
  if (px < 1 || px > STW_MODEL_MAX_IMAGE)
    return model_fail(error, "an image side of %" G_GUINT64_FORMAT " pixels is out of range "
                      "(expected 1 to %d)", px, STW_MODEL_MAX_IMAGE);
  if (fixed != 0 && px != fixed)
    return model_fail(error, "%s: %s tower takes images of %" G_GUINT64_FORMAT " x %"
                      G_GUINT64_FORMAT " pixels (its processor resizes images, or cuts them "
                      "into tiles, to that size), not %" G_GUINT64_FORMAT, c->name,
                      vision_kinds[c->vision_kind].whose, fixed, fixed, px);
  if (fixed == 0 && px % unit != 0) /* (a fixed size's convolution drops what is left) */
    return model_fail(error, "%s: an image side of %" G_GUINT64_FORMAT " pixels is not a whole "
                      "number of %" G_GUINT64_FORMAT "-pixel %s (its processor resizes images "
                      "to such sides)", c->name, px, unit,
                      unit > c->vision_patch ? "merged patches" : "patches");
  out->side = px / c->vision_patch;
  out->patches = out->side * out->side;
  gboolean class_token = c->vision_kind == STW_VISION_CLIP ||
                         c->vision_kind == STW_VISION_INTERNVL;
  out->tower = out->patches + (class_token ? 1 : 0);
  if (p == STW_PROJECTOR_GEMMA3 && c->vision_merge == 0) { /* AvgPool2d's kernel for 256 */
    m = out->side / GEMMA3_SIDE_TOKENS;
    if (m == 0)
      return model_fail(error, "%s: Gemma 3's projector pools an image to 16 x 16 tokens, "
                        "more than its tower's %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                        " patches", c->name, out->side, out->side);
  }
  out->merged = (out->side / m) * (out->side / m); /* (AvgPool2d's floor) */
  return TRUE;
}

/* Whether tensor NAME of a tower is read by a lookup, not a matmul: a position table, a class
 * token, a probe, LLaVA-NeXT's image_newline. */
static gboolean
image_lookup(const char *name)
{
  static const char *const looked_up[] = { "position", "pos_embed", "class_embedding",
                                           "cls_token", ".probe", "image_newline" };
  for (gsize i = 0; i < G_N_ELEMENTS(looked_up); i++)
    if (strstr(name, looked_up[i]) != NULL)
      return TRUE;
  return FALSE;
}

/* The module a tensor of the tower belongs to: its name without the last component. */
static char *
module_of(const char *name)
{
  const char *dot = strrchr(name, '.');
  return dot != NULL ? g_strndup(name, (gsize)(dot - name)) : g_strdup(name);
}

/* Whether module MODULE is a norm (LayerNorm, RMSNorm; Qwen-VL's ln_q, Pixtral's ln_pre). */
static gboolean
image_norm(const char *module)
{
  const char *last = strrchr(module, '.');
  last = last != NULL ? last + 1 : module;
  return strstr(last, "norm") != NULL || g_str_has_prefix(last, "ln_") ||
         strcmp(last, "ln") == 0;
}

/* The encoder block tensor NAME belongs to ("....layers.3"), NULL outside the blocks. */
static char *
image_block(const char *name)
{
  static const char *const lists[] = { ".layers.", ".layer.", ".blocks." };
  for (gsize i = 0; i < G_N_ELEMENTS(lists); i++) {
    const char *at = strstr(name, lists[i]);
    if (at == NULL)
      continue;
    const char *n = at + strlen(lists[i]);
    const char *end = n;
    while (g_ascii_isdigit(*end))
      end++;
    if (end > n)
      return g_strndup(name, (gsize)(end - name));
  }
  return NULL;
}

/* Building the image ops: the rows the next op applies to, the bytes the last one produced. */
typedef struct {
  Builder b;
  const StwImageTokens *tok;
  StwVisionTrained trained;
  gboolean below;      /* no op below the next is differentiated */
  guint64 images;      /* in the micro-batch */
  guint64 rows;        /* the rows the ops apply to now */
  guint64 live_bytes;  /* the last op's output */
  GArray *pending;     /* guint32: looked-up tensors, read by the next op */
} Images;

/* An op of the images' path, in the projector where PROJECTOR: forward only unless what it
 * belongs to is trained, and then keeping its input; the first trained one computes no
 * gradient for its input. */
static StwGraphOp *
image_op(Images *im, StwOpKind kind, const char *name, guint64 out_bytes, gboolean projector)
{
  StwGraphOp *o = op(&im->b, -1, kind, "%s", name);
  o->image = TRUE;
  o->no_grad = im->trained == STW_VISION_TRAINED_NONE ||
               (im->trained == STW_VISION_TRAINED_PROJECTOR && !projector);
  o->saves_input = !o->no_grad && kind != STW_OP_EMBED; /* (the merge needs none) */
  o->no_input_grad = !o->no_grad && im->below;
  im->below &= o->no_grad;
  o->outside_roles = TRUE;
  o->in_bytes = im->live_bytes;
  o->out_bytes = out_bytes;
  o->passthrough = im->b.g->ops->len == 1; /* the first reads the pixels, which stay */
  op_params(o, im->pending->len, (const guint32 *)im->pending->data);
  g_array_set_size(im->pending, 0);
  im->live_bytes = out_bytes;
  return o;
}

/* The sum of the squares of the tokens in each attention window of an image SIDE patches a
 * side, windows of WINDOW merged patches (of MERGE x MERGE) a side cut from its top left as
 * Qwen2.5-VL's get_window_index cuts them, the last ones on each side narrower (WINDOW:
 * vision_window / merged patch's pixels, rounded down as transformers rounds it). */
static double
window_squares(guint64 side, guint64 merge, guint64 window)
{
  guint64 grid = side / merge, whole = grid / window, rest = grid % window;
  double along = (double)whole * (double)(window * window) + (double)(rest * rest);
  double m2 = (double)(merge * merge);
  return along * along * m2 * m2;
}

/* Each block's attention: scores and weighted sums over the tokens an image's block attends
 * (Pixtral's over every image of the call at once: transformers puts them in one sequence and
 * masks across them; Qwen2.5-VL's windowed blocks within each window), 4 T^2 A FLOPs for T
 * tokens A wide. */
static void
image_attention(Images *im, const char *block)
{
  const StwModelConfig *c = &im->b.g->config;
  double A = (double)c->vision_hidden, N = (double)im->tok->tower, n = (double)im->images;
  const char *digits = block + strlen(block);
  while (digits > block && g_ascii_isdigit(digits[-1]))
    digits--;
  guint64 l = g_ascii_strtoull(digits, NULL, 10);
  double flops = n * 4 * N * N * A;
  if (c->vision_kind == STW_VISION_PIXTRAL)
    flops = 4 * (n * N) * (n * N) * A;
  else if (c->vision_window != 0 && !mask_get(c->vision_full_blocks, l))
    flops = n * 4 * A * window_squares(im->tok->side, MAX(c->vision_merge, 1),
                                       c->vision_window / (c->vision_patch *
                                                           MAX(c->vision_merge, 1)));
  g_autofree char *name = g_strconcat(block, ".attention", NULL);
  StwGraphOp *o = image_op(im, STW_OP_ATTN_CORE, name,
                           im->images * im->tok->tower * c->vision_hidden * im->b.e, FALSE);
  o->flops = (guint64)flops;
}

/* The tensors of module MODULE, [first, end), as one op: a norm, or a matmul of its 2-D weight
 * (with its bias), or read with the next op (a lookup, a layer scale). */
static void
image_module(Images *im, const char *module, guint first, guint end)
{
  StwModelGraph *g = im->b.g;
  const StwModelConfig *c = &g->config;
  const StwGraphTensor *w = NULL;
  gboolean lookup = FALSE;
  for (guint i = first; i < end; i++) {
    const StwGraphTensor *t = g->tensors->pdata[i];
    lookup |= image_lookup(t->name);
    if (t->ndim == 2 && w == NULL)
      w = t;
  }
  gboolean projector = first >= g->projector_first;
  guint64 e = im->b.e, d = c->vision_hidden;
  /* the rows: the patch embedding's the patches, the blocks' their tokens, SigLIP's pooling
   * head's its probe's one an image; the projector's from the patches (the class token
   * dropped; Gemma 3's pooled to its tokens), the merged ones from the layer whose input is a
   * merge's vision_merge^2 patches side by side */
  gboolean head = strstr(module, ".head.") != NULL;
  if (!projector)
    im->rows = im->images * (strstr(module, "patch") != NULL ? im->tok->patches
                             : head                         ? 1
                                                            : im->tok->tower);
  else if (first == g->projector_first)
    im->rows = im->images * (stw_model_vision_projector(c) == STW_PROJECTOR_GEMMA3
                                 ? im->tok->merged
                                 : im->tok->patches);
  for (guint32 i = first; i < end; i++) /* read by this op, or the next one */
    g_array_append_val(im->pending, i);
  if (lookup || (w == NULL && !image_norm(module)))
    return;
  if (w == NULL) { /* a norm over the activations as they are */
    StwGraphTensor *t = g->tensors->pdata[first];
    guint64 width = t->numel, bytes = im->rows * width * e;
    StwGraphOp *o = image_op(im, STW_OP_NORM_ATTN, module, bytes, projector);
    o->rms = end - first == 1; /* a LayerNorm has a bias */
    o->flops = (o->rms ? 4 : 8) * im->rows * width;
    if (!o->no_grad) /* its fp32 statistics, a row each */
      o->saved_extra_bytes = im->rows * (o->rms ? 4 : 8);
    return;
  }
  guint64 m = MAX(c->vision_merge, 1);
  gboolean gemma3 = strstr(w->name, "mm_input_projection_weight") != NULL;
  if (projector && m > 1 && w->shape[1] == m * m * d)
    im->rows = im->images * im->tok->merged;
  guint64 out_w = gemma3 ? w->shape[1] : w->shape[0];
  if (head && g_str_has_suffix(module, ".head.attention")) {
    /* the pooling head's attention (torch's MultiheadAttention): the probe's query, every
     * token's key and value, the probe attending to them */
    double n = (double)im->images, N = (double)im->tok->tower;
    StwGraphOp *o = image_op(im, STW_OP_ATTN_QKV, module, im->rows * out_w * e, FALSE);
    o->flops = (guint64)(2 * n * (1 + 2 * N) * (double)(d * d));
    g_autofree char *name = g_strconcat(module, ".core", NULL);
    o = image_op(im, STW_OP_ATTN_CORE, name, im->rows * d * e, FALSE);
    o->flops = (guint64)(4 * n * N * (double)d);
    return;
  }
  StwGraphOp *o = image_op(im, STW_OP_ATTN_QKV, module, im->rows * out_w * e, projector);
  o->flops = 2 * im->rows * w->numel;
}

gboolean
stw_model_graph_add_images(StwModelGraph *g, guint64 images, guint64 px,
                           StwVisionTrained trained, GError **error)
{
  const StwModelConfig *c = &g->config;
  StwImageTokens tok;
  if (!stw_model_image_tokens(c, px, &tok, error))
    return FALSE;
  if (images == 0)
    return TRUE;
  if (images > STW_MODEL_MAX_IMAGES || images * tok.merged > g->seq)
    return model_fail(error, "%s: %" G_GUINT64_FORMAT " images of %" G_GUINT64_FORMAT " x %"
                      G_GUINT64_FORMAT " pixels are %" G_GUINT64_FORMAT " tokens of features "
                      "(%" G_GUINT64_FORMAT " an image), more than a sequence of %"
                      G_GUINT64_FORMAT " holds", c->name, images, px, px,
                      images * tok.merged, tok.merged, g->seq);
  /* the largest op's FLOPs (an attention: over every image of Pixtral's call at once) and
   * activations stay exact */
  double n = (double)(images * g->batch), N = (double)tok.tower, A = (double)c->vision_hidden;
  double worst = c->vision_kind == STW_VISION_PIXTRAL ? 4 * n * n * N * N * A : 4 * n * N * N * A;
  if (worst > (double)STW_JSON_INT_MAX / 4 || n * N > (double)(G_GUINT64_CONSTANT(1) << 31))
    return model_fail(error, "%s: %" G_GUINT64_FORMAT " images of %" G_GUINT64_FORMAT " x %"
                      G_GUINT64_FORMAT " pixels a sequence, %" G_GUINT64_FORMAT " sequences, "
                      "need more FLOPs or tokens than a trace counts exactly (2^51 FLOPs an op, "
                      "2^31 tokens)", c->name, images, px, px, g->batch);
  GPtrArray *text = g->ops;
  g->ops = g_ptr_array_new_with_free_func(graph_op_free);
  Images im = { .b = { .g = g, .T = g->batch * g->seq, .e = stw_dtype_bytes(g->dtype) },
                .tok = &tok, .trained = trained, .below = TRUE, .images = images * g->batch,
                .pending = g_array_new(FALSE, FALSE, sizeof(guint32)) };
  /* the pixels, as processors give them: fp32, channels x side^2 (Qwen-VL's and GLM-4V's each
   * image its temporal patch's frames, repeated) */
  im.live_bytes = im.images * c->vision_channels * MAX(c->vision_temporal_patch, 1) * px * px * 4;
  g->io_bytes += im.live_bytes;
  g_autofree char *block = NULL;
  for (guint first = g->vision_first; first < g->vision_end;) {
    const StwGraphTensor *t = g->tensors->pdata[first];
    g_autofree char *module = module_of(t->name);
    guint end = first + 1;
    while (end < g->vision_end && end != g->projector_first) {
      g_autofree char *next = module_of(((StwGraphTensor *)g->tensors->pdata[end])->name);
      if (strcmp(next, module) != 0)
        break;
      end++;
    }
    g_autofree char *in_block = first < g->projector_first ? image_block(t->name) : NULL;
    if (block != NULL && g_strcmp0(block, in_block) != 0) /* a block ended */
      image_attention(&im, block);
    g_free(block);
    block = g_steal_pointer(&in_block);
    image_module(&im, module, first, end);
    first = end;
  }
  if (block != NULL)
    image_attention(&im, block);
  /* the features scattered into the embeddings the language model reads */
  image_op(&im, STW_OP_EMBED, "image_features.merge", 0, TRUE);
  g_array_unref(im.pending);
  g_ptr_array_extend_and_steal(g->ops, text);
  return TRUE;
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
  case STW_ARCH_NEOX: build_neox(&b); break;
  default: g_assert_not_reached();
  }
  audio_tower(&b);
  vision_tower(&b);
  return g;
}

guint64
stw_model_loss_piece(guint64 tokens, guint64 vocab, guint64 width)
{
  guint64 inc = (MAX(vocab, 1) + MAX(width, 1) - 1) / MAX(width, 1);
  guint64 per = (tokens + inc - 1) / inc;
  guint64 piece = 1;
  while (piece < per)
    piece *= 2;
  return MIN(piece, tokens);
}

void
stw_model_graph_chunk_loss(StwModelGraph *g, gboolean weight_grad)
{
  if (g->loss == STW_LOSS_CHUNKED)
    return;
  StwGraphOp *head = NULL, *loss = NULL, *cap = NULL;
  for (guint i = 0; i < g->ops->len; i++) {
    StwGraphOp *o = g_ptr_array_index(g->ops, i);
    head = o->kind == STW_OP_LM_HEAD ? o : head;
    loss = o->kind == STW_OP_LOSS ? o : loss;
    cap = o->kind == STW_OP_LOGIT_SOFTCAP ? o : cap;
  }
  g_assert(head != NULL && loss != NULL);
  guint64 T = g->batch * g->seq, e = stw_dtype_bytes(g->dtype);
  guint64 vocab = stw_model_head_vocab(&g->config);
  guint64 width = head->in_bytes / (T * e), weight = weight_grad ? vocab * width * e : 0;
  /* the forward: one piece's logits at a time (their gradient written over them); the hidden
   * states' gradient and the head's weight gradient (zeros, then summed into) kept for the
   * backward, which scales them by the loss's gradient: the input itself is not kept */
  head->saves_input = FALSE;
  head->out_bytes = 4;
  head->work_bytes = stw_model_loss_piece(T, vocab, width) * vocab * e;
  head->saved_extra_bytes = T * width * e + weight;
  /* the softcap and the cross-entropy inside the pieces: the loss passes through */
  if (cap != NULL) {
    cap->in_bytes = cap->out_bytes = 4;
    cap->saves_input = FALSE;
  }
  loss->in_bytes = loss->out_bytes = 4;
  loss->saves_input = FALSE;
  loss->saved_extra_bytes = loss->work_bytes = loss->bwd_work_bytes = 0;
  g->loss = STW_LOSS_CHUNKED;
}

void
stw_model_graph_native_loss(StwModelGraph *g)
{
  if (g->loss != STW_LOSS_FULL)
    return;
  guint64 T = g->batch * g->seq, e = stw_dtype_bytes(g->dtype);
  guint64 vocab = stw_model_head_vocab(&g->config);
  for (guint i = 0; i < g->ops->len; i++) {
    StwGraphOp *o = g_ptr_array_index(g->ops, i);
    if (o->kind == STW_OP_LOSS) /* the shifted copy, log_softmax's output and its gradient */
      o->work_bytes = o->bwd_work_bytes = T * vocab * e;
  }
  g->loss = STW_LOSS_NATIVE;
}

guint64
stw_model_param_count(const StwModelConfig *cfg)
{
  guint64 n = 0;
  return param_count_checked(cfg, &n) ? n : G_MAXUINT64;
}

guint64
stw_model_tower_param_count(const StwModelConfig *cfg)
{
  if (cfg->vision_layers == 0 && cfg->audio_layers == 0)
    return 0;
  /* the towers' members are the struct's last, from vision_layers on (model.h): cleared, the
   * language model alone is left (vision_kind 0, SigLIP, is no tower without layers) */
  G_STATIC_ASSERT(offsetof(StwModelConfig, audio_output) + sizeof(guint64) ==
                  sizeof(StwModelConfig));
  StwModelConfig text = *cfg;
  gsize first = offsetof(StwModelConfig, vision_layers);
  memset((char *)&text + first, 0, sizeof text - first);
  return stw_model_param_count(cfg) - stw_model_param_count(&text);
}

guint64
stw_model_data_bytes(const StwModelConfig *cfg)
{
  guint64 unread = stw_model_tower_param_count(cfg);
  return (stw_model_param_count(cfg) - unread) * 14 + unread * 2;
}

const char *const stw_chunk_list_names[] = { "param", "master", "momentum", "variance", NULL };

const char *
stw_chunk_list_name(StwChunkList list)
{
  return stw_chunk_list_names[list];
}

guint64
stw_chunk_list_elem_bytes(StwChunkList list, StwDtype dtype, StwDtype state)
{
  if (list == STW_LIST_PARAM)
    return stw_dtype_bytes(dtype);
  return list == STW_LIST_MASTER ? 4 : stw_dtype_bytes(state);
}
