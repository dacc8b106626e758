/* cmd-models.c — `stowage models`: the zoo with exact parameter counts, or one model from a
 * config file (stowage's or a Hugging Face config.json). */
#include <stdio.h>
#include <string.h>

#include <stowage/model.h>
#include <stowage/units.h>

#include "cli.h"

static StwTable *
models_table(void)
{
  return stw_table_new(11, "<model", "<family", "<arch", "layers", "hidden", "heads", "kv", "ffn",
                       "vocab", "parameters", "model data");
}

static void
models_row(StwTable *table, const StwModelConfig *c, const char *family, guint64 params)
{
  char num[6][32];
  guint64 v[] = { c->layers, c->hidden, c->heads, c->kv_heads, c->ffn, c->vocab };
  /* no heads where every block's mixer is linear, no width where blocks have no MLP */
  gboolean none[] = { FALSE, FALSE, !stw_model_has_softmax(c), !stw_model_has_softmax(c),
                      stw_model_mlp_blocks(c) == 0, FALSE };
  for (gsize k = 0; k < G_N_ELEMENTS(v); k++)
    g_snprintf(num[k], sizeof num[k], none[k] ? "-" : "%" G_GUINT64_FORMAT, v[k]);
  g_autofree char *p = stw_cli_group_digits(params);
  g_autofree char *bytes = stw_size_format(stw_model_data_bytes(c));
  stw_table_row(table, c->name, family, stw_arch_name(c->arch), num[0], num[1], num[2], num[3],
                num[4], num[5], p, bytes);
}

/* The blocks of C that IN says, as runs ("blocks 0-2, 5, 7"): the first eight runs and a count
 * of the rest. */
static char *
block_runs(const StwModelConfig *c, gboolean (*in)(const StwModelConfig *, guint64))
{
  g_autoptr(GString) runs = g_string_new(NULL);
  guint shown = 0, more = 0, blocks = 0;
  for (guint64 l = 0; l < c->layers; l++) {
    blocks += in(c, l);
    if (!in(c, l) || (l > 0 && in(c, l - 1)))
      continue; /* not the start of a run */
    guint64 end = l;
    while (end + 1 < c->layers && in(c, end + 1))
      end++;
    if (shown == 8) {
      more++;
      continue;
    }
    g_string_append_printf(runs, "%s%" G_GUINT64_FORMAT, shown++ == 0 ? "" : ", ", l);
    if (end > l)
      g_string_append_printf(runs, "-%" G_GUINT64_FORMAT, end);
  }
  if (more > 0)
    g_string_append_printf(runs, " and %u more", more);
  return g_strdup_printf("block%s %s", blocks == 1 ? "" : "s", runs->str);
}

/* A vision tower's kind and sizes ("SigLIP, 27 blocks of 1152 (MLP 4304), ..."). */
static void
append_vision_tower(GString *s, const StwModelConfig *c)
{
  const char *blocks = c->vision_layers == 1 ? "block" : "blocks";
  switch (c->vision_kind) {
  case STW_VISION_INTERNVL:
    g_string_append_printf(s, "InternViT, %" G_GUINT64_FORMAT " %s of %" G_GUINT64_FORMAT " (MLP %"
                           G_GUINT64_FORMAT "%s%s), %" G_GUINT64_FORMAT "-pixel images in %"
                           G_GUINT64_FORMAT "-pixel patches", c->vision_layers, blocks,
                           c->vision_hidden, c->vision_ffn,
                           c->vision_qk_norm ? ", queries and keys RMS-normed" : "",
                           c->vision_rms_norm ? ", RMSNorms" : "", c->vision_image,
                           c->vision_patch);
    break;
  case STW_VISION_MLLAMA:
    g_string_append_printf(s, "Llama 3.2 Vision's, %" G_GUINT64_FORMAT " %s and %" G_GUINT64_FORMAT
                           " global of %" G_GUINT64_FORMAT " (MLP %" G_GUINT64_FORMAT "), %"
                           G_GUINT64_FORMAT "-pixel tiles (at most %" G_GUINT64_FORMAT ") in %"
                           G_GUINT64_FORMAT "-pixel patches, %" G_GUINT64_FORMAT
                           " cross-attention blocks in the language model",
                           c->vision_layers, blocks, c->vision_global_layers, c->vision_hidden,
                           c->vision_ffn, c->vision_image, c->vision_tiles, c->vision_patch,
                           c->vision_cross_layers);
    break;
  case STW_VISION_SIGLIP:
  case STW_VISION_CLIP:
    g_string_append_printf(s, "%s, %" G_GUINT64_FORMAT " %s of %" G_GUINT64_FORMAT " (MLP %"
                           G_GUINT64_FORMAT "), %" G_GUINT64_FORMAT "-pixel images in %"
                           G_GUINT64_FORMAT "-pixel patches%s",
                           c->vision_kind == STW_VISION_CLIP ? "CLIP" : "SigLIP",
                           c->vision_layers, blocks, c->vision_hidden, c->vision_ffn,
                           c->vision_image, c->vision_patch,
                           c->vision_pooling_head ? ", an attention-pooling head" : "");
    break;
  case STW_VISION_GEMMA4:
    g_string_append_printf(s, "Gemma 4's, %" G_GUINT64_FORMAT " %s of %" G_GUINT64_FORMAT
                           " (%" G_GUINT64_FORMAT " heads of %" G_GUINT64_FORMAT ", %"
                           G_GUINT64_FORMAT " key/value heads, MLP %" G_GUINT64_FORMAT "), %"
                           G_GUINT64_FORMAT "-pixel patches", c->vision_layers, blocks,
                           c->vision_hidden, c->vision_heads, c->vision_head_dim,
                           c->vision_kv_heads, c->vision_ffn, c->vision_patch);
    break;
  case STW_VISION_PIXTRAL:
    g_string_append_printf(s, "Pixtral, %" G_GUINT64_FORMAT " %s of %" G_GUINT64_FORMAT " (MLP %"
                           G_GUINT64_FORMAT "), %" G_GUINT64_FORMAT "-pixel patches",
                           c->vision_layers, blocks, c->vision_hidden, c->vision_ffn,
                           c->vision_patch);
    break;
  case STW_VISION_GLM4V:
    g_string_append_printf(s, "GLM-4V's, %" G_GUINT64_FORMAT " %s of %" G_GUINT64_FORMAT " (MLP %"
                           G_GUINT64_FORMAT "), %" G_GUINT64_FORMAT "-pixel images in %"
                           G_GUINT64_FORMAT "-pixel patches of %" G_GUINT64_FORMAT " frames",
                           c->vision_layers, blocks, c->vision_hidden, c->vision_out,
                           c->vision_image, c->vision_patch, c->vision_temporal_patch);
    break;
  default: { /* the Qwen-VL towers */
    static const char *const whose[] = { "Qwen2-VL's", "Qwen2.5-VL's", "Qwen3-VL's" };
    g_string_append_printf(s, "%s, %" G_GUINT64_FORMAT " %s of %" G_GUINT64_FORMAT " (MLP %"
                           G_GUINT64_FORMAT "), %" G_GUINT64_FORMAT "-pixel patches of %"
                           G_GUINT64_FORMAT " frame%s",
                           whose[c->vision_kind - STW_VISION_QWEN2_VL], c->vision_layers, blocks,
                           c->vision_hidden, c->vision_ffn, c->vision_patch,
                           c->vision_temporal_patch, c->vision_temporal_patch == 1 ? "" : "s");
    if (c->vision_window != 0) { /* Qwen2.5-VL's windows */
      g_string_append_printf(s, ", attending within windows of %" G_GUINT64_FORMAT " pixels",
                             c->vision_window);
      const char *sep = " but over the whole image in block";
      guint64 full = 0;
      for (guint64 l = 0; l < c->vision_layers; l++)
        full += stw_model_vision_full_block(c, l);
      for (guint64 l = 0; l < c->vision_layers; l++)
        if (stw_model_vision_full_block(c, l)) {
          g_string_append_printf(s, "%s%s %" G_GUINT64_FORMAT, sep,
                                 sep[0] == ' ' && full > 1 ? "s" : "", l);
          sep = ",";
        }
    }
  }
  }
}

/* What carries a vision tower's features into the language model ("Gemma 3's projector"). */
static void
append_vision_projector(GString *s, const StwModelConfig *c)
{
  switch (stw_model_vision_projector(c)) {
  case STW_PROJECTOR_GEMMA4:
    g_string_append(s, "its embedder");
    break;
  case STW_PROJECTOR_MISTRAL3:
    g_string_append_printf(s, "Mistral 3's projector (patches merged %" G_GUINT64_FORMAT " x %"
                           G_GUINT64_FORMAT "%s)", c->vision_merge, c->vision_merge,
                           c->vision_projector_bias ? ", biased" : "");
    break;
  case STW_PROJECTOR_LLAVA:
    g_string_append_printf(s, "LLaVA's projector%s%s", c->vision_projector_bias ? " (biased)" : "",
                           c->vision_newline ? " with LLaVA-NeXT's image_newline" : "");
    break;
  case STW_PROJECTOR_PALIGEMMA:
    g_string_append_printf(s, "PaliGemma's projector (to %" G_GUINT64_FORMAT ")", c->vision_out);
    break;
  case STW_PROJECTOR_AYA:
    g_string_append_printf(s, "Aya Vision's projector (patches shuffled %" G_GUINT64_FORMAT " x %"
                           G_GUINT64_FORMAT ", SwiGLU %" G_GUINT64_FORMAT ")", c->vision_merge,
                           c->vision_merge, c->vision_out);
    break;
  case STW_PROJECTOR_GLM4V:
    g_string_append_printf(s, "its merger (%" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                           " patches to %" G_GUINT64_FORMAT ", MLP %" G_GUINT64_FORMAT ")",
                           c->vision_merge, c->vision_merge, c->vision_out, c->vision_ffn);
    break;
  case STW_PROJECTOR_MLLAMA:
    g_string_append_printf(s, "its projector (%" G_GUINT64_FORMAT " features)", c->vision_features);
    break;
  case STW_PROJECTOR_INTERNVL:
    g_string_append_printf(s, "InternVL's projector (patches shuffled %" G_GUINT64_FORMAT " x %"
                           G_GUINT64_FORMAT ")", c->vision_merge, c->vision_merge);
    break;
  case STW_PROJECTOR_IDEFICS3:
    g_string_append_printf(s, "Idefics3's connector (patches shuffled %" G_GUINT64_FORMAT " x %"
                           G_GUINT64_FORMAT ")", c->vision_merge, c->vision_merge);
    break;
  case STW_PROJECTOR_QWEN:
    g_string_append_printf(s, "its patch merger (%" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                           " patches to %" G_GUINT64_FORMAT ")", c->vision_merge, c->vision_merge,
                           c->vision_out);
    if (c->vision_deepstack != 0)
      g_string_append_printf(s, ", %" G_GUINT64_FORMAT " DeepStack merger%s more",
                             c->vision_deepstack, c->vision_deepstack == 1 ? "" : "s");
    break;
  default:
    g_string_append(s, "Gemma 3's projector");
    if (c->vision_merge != 0)
      g_string_append_printf(s, " (patches pooled %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT ")",
                             c->vision_merge, c->vision_merge);
  }
}

/* What an image becomes in C's tower (synth --images): its tokens at the tower's own size, or
 * at a few sides where it takes any; nothing where stowage runs no image through it. */
static void
append_image_tokens(GString *s, const StwModelConfig *c)
{
  guint64 fixed = stw_model_image_size(c);
  StwImageTokens tok;
  if (fixed != 0) {
    if (stw_model_image_tokens(c, fixed, &tok, NULL))
      g_string_append_printf(s, "images (synth --images): %" G_GUINT64_FORMAT " x %"
                             G_GUINT64_FORMAT " pixels: %" G_GUINT64_FORMAT " tokens in the "
                             "tower, %" G_GUINT64_FORMAT " of features\n", fixed, fixed,
                             tok.tower, tok.merged);
    return;
  }
  guint64 unit = stw_model_image_step(c);
  if (unit == 0 || !stw_model_image_tokens(c, unit, &tok, NULL))
    return;
  g_string_append_printf(s, "images (synth --images --image-size PX): of any side a multiple of "
                         "%" G_GUINT64_FORMAT " pixels", unit);
  static const guint64 sides[] = { 448, 896 };
  for (gsize i = 0; i < G_N_ELEMENTS(sides); i++) {
    guint64 px = (sides[i] + unit / 2) / unit * unit;
    if (px != 0 && stw_model_image_tokens(c, px, &tok, NULL))
      g_string_append_printf(s, "%s %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT " pixels: %"
                             G_GUINT64_FORMAT " tokens in the tower, %" G_GUINT64_FORMAT
                             " of features", i == 0 ? ";" : ",", px, px, tok.tower, tok.merged);
  }
  g_string_append(s, "\n");
}

/* C's parts beyond its blocks' kind: global blocks, blocks of shared keys and values and
 * per-layer inputs (Gemma 4's), AltUp and LAuReL (Gemma 3n's), vision and audio towers (Gemma 3's
 * and 4's multimodal checkpoints), a line each ("" for none). */
static char *
variant_parts_said(const StwModelConfig *c)
{
  GString *s = g_string_new(NULL);
  guint64 global = 0, shared = 0;
  for (guint64 l = 0; l < c->layers; l++) {
    global += stw_model_block_global(c, l);
    shared += stw_model_block_kv_shared(c, l);
  }
  if (global != 0) {
    g_autofree char *runs = block_runs(c, stw_model_block_global);
    guint64 last = c->layers - 1;
    g_string_append_printf(s, "global attention in %" G_GUINT64_FORMAT " of the %"
                           G_GUINT64_FORMAT " blocks (%s): heads of %" G_GUINT64_FORMAT ", %"
                           G_GUINT64_FORMAT " key/value head%s%s\n", global, c->layers, runs,
                           stw_model_block_head_dim(c, last), stw_model_block_kv_heads(c, last),
                           stw_model_block_kv_heads(c, last) == 1 ? "" : "s",
                           c->global_values_are_keys ? ", their values the keys" : "");
  }
  if (shared != 0) {
    g_autofree char *runs = block_runs(c, stw_model_block_kv_shared);
    g_string_append_printf(s, "keys and values of an earlier block reused in %s%s\n", runs,
                           c->kv_shared_wide_mlp ? " (their MLP twice as wide)" : "");
  }
  if (c->per_layer_input != 0)
    g_string_append_printf(s, "per-layer embeddings: %" G_GUINT64_FORMAT " wide a block, %"
                           G_GUINT64_FORMAT " rows, and a gated branch in every block\n",
                           c->per_layer_input, c->per_layer_vocab);
  if (c->altup_inputs != 0)
    g_string_append_printf(s, "AltUp: the residual stream %" G_GUINT64_FORMAT " copies wide, "
                           "each block run on one, predicting and correcting them all\n",
                           c->altup_inputs);
  if (c->laurel_rank != 0)
    g_string_append_printf(s, "LAuReL: a rank-%" G_GUINT64_FORMAT " branch beside each "
                           "block's attention\n", c->laurel_rank);
  if (c->vision_layers != 0) {
    g_string_append(s, "vision tower: ");
    append_vision_tower(s, c);
    g_string_append(s, ", and ");
    append_vision_projector(s, c);
    g_string_append(s, "\n");
    append_image_tokens(s, c);
  }
  if (c->audio_layers != 0)
    g_string_append_printf(s, "audio tower: Gemma 4's Conformer, %" G_GUINT64_FORMAT " block%s "
                           "of %" G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " heads), its output %"
                           G_GUINT64_FORMAT " wide, and its embedder\n", c->audio_layers,
                           c->audio_layers == 1 ? "" : "s", c->audio_hidden, c->audio_heads,
                           c->audio_output);
  if (c->vision_layers != 0 || c->audio_layers != 0) {
    g_autofree char *n = stw_cli_group_digits(stw_model_tower_param_count(c));
    g_string_append_printf(s, "towers: %s parameters a text step never reads (held in 16 bits: "
                           "no gradient, no optimizer state)\n", n);
  }
  return g_string_free(s, FALSE);
}

static gboolean
mixers_all(const StwModelConfig *c)
{
  for (guint64 l = 0; l < c->layers; l++)
    if (!stw_model_block_mixer(c, l))
      return FALSE;
  return TRUE;
}

static gboolean
mixer_only(const StwModelConfig *c, guint64 l)
{
  return !stw_model_block_mlp(c, l);
}

static gboolean
mlp_only(const StwModelConfig *c, guint64 l)
{
  return !stw_model_block_mixer(c, l);
}

/* C's blocks of one part, a line ("" where every block has both, or every block is the
 * mixer's: said with the MLP's activation). */
static char *
one_part_blocks_said(const StwModelConfig *c)
{
  guint64 mlps = stw_model_mlp_blocks(c);
  if ((mlps == c->layers && mixers_all(c)) || mlps == 0)
    return g_strdup("");
  g_autofree char *a = mlps < c->layers ? block_runs(c, mixer_only) : NULL;
  g_autofree char *b = !mixers_all(c) ? block_runs(c, mlp_only) : NULL;
  return g_strdup_printf("blocks of one part:%s%s%s%s%s\n",
                         a != NULL ? " a norm and the mixer in " : "", a != NULL ? a : "",
                         a != NULL && b != NULL ? ";" : "",
                         b != NULL ? " a norm and the MLP in " : "", b != NULL ? b : "");
}

/* Where C's dense blocks sit among the experts' (empty without them): " after N dense blocks
 * (MLP W wide)" where they come first, else which they are (block_runs). Follows "experts: E
 * per block". */
static char *
dense_blocks_said(const StwModelConfig *c)
{
  guint64 n = stw_model_dense_blocks(c), first = stw_model_dense_prefix(c);
  if (n == 0)
    return g_strdup("");
  if (first != G_MAXUINT64)
    return g_strdup_printf(" after %" G_GUINT64_FORMAT " dense block%s (MLP %" G_GUINT64_FORMAT
                           " wide)", n, n == 1 ? "" : "s", c->dense_ffn);
  g_autofree char *runs = block_runs(c, stw_model_block_dense);
  guint64 mlps = stw_model_mlp_blocks(c); /* (blocks of the mixer alone have neither) */
  return g_strdup_printf(" in %" G_GUINT64_FORMAT " of the %" G_GUINT64_FORMAT " blocks%s, the "
                         "other %" G_GUINT64_FORMAT " dense (MLP %" G_GUINT64_FORMAT " wide: %s)",
                         mlps - n, mlps, mlps < c->layers ? " with an MLP" : "", n, c->dense_ffn,
                         runs);
}

static int
print_config_file(const char *file, gboolean json)
{
  StwModelConfig c;
  g_autoptr(GError) error = NULL;
  if (!stw_model_config_load(file, &c, &error))
    return stw_cli_fail(STW_EXIT_FAILURE, "models: %s", error->message);
  guint64 params = stw_model_param_count(&c);
  if (json) {
    g_autofree char *text = stw_model_record_json(&c);
    printf("%s\n", text);
    return STW_EXIT_OK;
  }
  g_autoptr(StwTable) table = models_table();
  models_row(table, &c, "-", params);
  stw_table_print(table, stdout);
  char q_rank[32] = "";
  if (c.q_lora_rank != 0)
    g_snprintf(q_rank, sizeof q_rank, "%" G_GUINT64_FORMAT, c.q_lora_rank);
  g_autofree char *latent =
      c.kv_lora_rank == 0
          ? g_strdup("")
          : g_strdup_printf(", latent: keys and values through rank %" G_GUINT64_FORMAT
                            ", queries %s%s; queries and keys %" G_GUINT64_FORMAT " + %"
                            G_GUINT64_FORMAT " rotary wide, values %" G_GUINT64_FORMAT,
                            c.kv_lora_rank, c.q_lora_rank != 0 ? "through rank " : "directly",
                            q_rank, stw_model_head_dim(&c), c.rope_dim, c.v_head_dim);
  if (c.index_heads != 0) {
    guint64 indexed = 0;
    for (guint64 l = 0; l < c.layers; l++)
      indexed += stw_model_block_indexed(&c, l);
    g_autofree char *runs = block_runs(&c, stw_model_block_indexed);
    g_autofree char *where = indexed == c.layers ? g_strdup("")
                                                 : g_strdup_printf(" in %s", runs);
    char *with = g_strdup_printf("%s; keys chosen by an indexer of %" G_GUINT64_FORMAT " heads of %"
                                 G_GUINT64_FORMAT "%s (forward only, its weights never trained)",
                                 latent, c.index_heads, c.index_head_dim, where);
    g_free(latent);
    latent = with;
  }
  g_autofree char *context =
      c.alibi && c.max_seq == STW_MODEL_MAX_SEQ
          ? g_strdup("positions by ALiBi (no longest context)")
      : c.max_seq == STW_MODEL_MAX_SEQ ? g_strdup("no longest context")
                                                : g_strdup_printf("%scontext %" G_GUINT64_FORMAT,
                                                                  c.alibi ? "positions by ALiBi, "
                                                                  : c.no_rope ? "no positions "
                                                                                "(no rotary), "
                                                                              : "",
                                                                  c.max_seq);
  GString *biases = g_string_new(NULL);
  for (int site = 0; site < STW_N_SITES; site++)
    if (stw_model_has_bias(&c, site))
      g_string_append_printf(biases, "%s%s", biases->len ? ", " : "",
                             (const char *[]){ "q/k/v", "attention output", "MLP" }[site]);
  /* values narrower than the heads' queries and keys, outside latent attention (MiMo's) */
  g_autofree char *values =
      c.kv_lora_rank == 0 && c.v_head_dim != 0
          ? g_strdup_printf(", values %" G_GUINT64_FORMAT " wide", c.v_head_dim)
          : g_strdup("");
  /* an LM head of fewer rows than the vocabulary (Apertus 1.5's) */
  g_autofree char *head_rows =
      c.head_vocab != 0 ? g_strdup_printf(" (%" G_GUINT64_FORMAT " rows)", c.head_vocab)
                        : g_strdup("");
  /* softmax attention's heads, where any block has it */
  g_autofree char *heads =
      !stw_model_has_softmax(&c)
          ? g_strdup("none (every block's mixer linear)")
          : g_strdup_printf("%" G_GUINT64_FORMAT " heads of %" G_GUINT64_FORMAT ", %"
                            G_GUINT64_FORMAT " key/value heads%s%s%s%s%s%s",
                            c.heads, stw_model_head_dim(&c), c.kv_heads, latent, values,
                            !c.qk_norm      ? ""
                            : c.qk_norm_full ? ", queries and keys RMS-normed over all heads"
                                             : ", queries and keys RMS-normed per head",
                            c.attn_softcap ? ", scores capped" : "",
                            !c.attn_sinks       ? ""
                            : c.global_no_sinks ? ", a sink logit per head outside global blocks"
                                                : ", a sink logit per head",
                            c.attn_gate        ? ", an output gate"
                            : c.attn_head_gate ? ", a gate a head"
                            : c.diff_attn      ? ", differential (two softmaxes a head)"
                                               : "");
  printf("attention: %s; biases: %s; LM head %s%s%s; %s%s%s%s%s%s\n", heads,
         biases->len ? biases->str : "none",
         c.tied ? "tied to the embeddings" : "its own", head_rows,
         c.head_bias ? " with a bias" : c.logit_softcap ? ", logits capped" : "",
         context, c.embed_norm      ? "; a norm over the embeddings"
                  : c.no_final_norm ? "; no norm before the LM head"
                  : c.no_pooler     ? (c.no_token_types ? "; no token types, no pooler"
                                                        : "; no pooler")
                                    : "",
         (const char *[]){ "", "; norms after attention and the MLP too",
                           "; norms after attention and the MLP, none before",
                           "; one norm for attention and the MLP (a parallel block)" }[c.norms],
         (const char *[STW_N_ACTS]){ "", "; MLP activation GELU-new (tanh's approximation op by op)",
                                     "; MLP activation one kernel (GELU)", "; MLP activation ReLU",
                                     "; MLP activation xIELU (two learned scalars a block)",
                                     "; MLP activation ReLU squared (two kernels)" }
             [c.activation],
         (const char *[STW_N_NORM_TYPES]){ "", "; LayerNorms (weight and bias)",
                                           "; LayerNorms without biases",
                                           "; LayerNorms without parameters", "; RMSNorms",
                                           "; RMSNorms without parameters" }[c.norm_type],
         stw_model_mlp_blocks(&c) == 0 ? "; no MLP (a norm and the mixer a block)"
         : c.mlp_ungated                ? "; MLPs ungated (up, the activation, down)"
                                        : "");
  g_string_free(biases, TRUE);
  g_autofree char *one_part = one_part_blocks_said(&c);
  g_autofree char *variants = variant_parts_said(&c);
  printf("%s%s", one_part, variants);
  if (stw_model_linear_blocks(&c) != 0) {
    gboolean all = stw_model_linear_blocks(&c) == c.layers;
    g_autofree char *runs = all ? g_strdup("every block") : block_runs(&c, stw_model_block_linear);
    g_autofree char *sizes = NULL;
    const char *kind = NULL;
    switch (c.linear_kind) {
    case STW_LINEAR_SHORT_CONV:
      kind = "a gated short convolution";
      sizes = g_strdup_printf("%" G_GUINT64_FORMAT " wide%s", c.linear_conv,
                              c.linear_conv_bias ? ", biased" : "");
      break;
    case STW_LINEAR_MAMBA1:
      kind = "Mamba-1";
      sizes = g_strdup_printf("an inner width of %" G_GUINT64_FORMAT ", a state of %"
                              G_GUINT64_FORMAT " a channel, a step of rank %" G_GUINT64_FORMAT
                              "%s, a convolution %" G_GUINT64_FORMAT " wide%s%s",
                              c.linear_v_head_dim, c.linear_k_head_dim, c.linear_dt_rank,
                              c.linear_norms ? " (the step, B and C RMS-normed)" : "",
                              c.linear_conv, c.linear_conv_bias ? ", biased" : "",
                              c.linear_proj_bias ? ", projections biased" : "");
      break;
    case STW_LINEAR_LIGHTNING:
      kind = "lightning attention";
      sizes = g_strdup_printf("%" G_GUINT64_FORMAT " heads of %" G_GUINT64_FORMAT,
                              c.linear_v_heads, c.linear_v_head_dim);
      break;
    case STW_LINEAR_MAMBA2:
      kind = "Mamba-2";
      sizes = g_strdup_printf("%" G_GUINT64_FORMAT " heads of %" G_GUINT64_FORMAT ", %"
                              G_GUINT64_FORMAT " group%s of B and C, a state of %"
                              G_GUINT64_FORMAT ", a convolution %" G_GUINT64_FORMAT " wide%s%s%s",
                              c.linear_v_heads, c.linear_v_head_dim, c.linear_k_heads,
                              c.linear_k_heads == 1 ? "" : "s", c.linear_k_head_dim,
                              c.linear_conv, c.linear_conv_bias ? ", biased" : "",
                              c.linear_proj_bias && c.linear_out_bias ? ", projections biased"
                              : c.linear_proj_bias ? ", its input's projection biased"
                              : c.linear_out_bias  ? ", its output's projection biased"
                                                   : "",
                              c.linear_no_out_norm ? ", no gated norm (SiLU(z) alone)" : "");
      break;
    default:
      kind = "Gated DeltaNet";
      sizes = g_strdup_printf("%" G_GUINT64_FORMAT " key heads of %" G_GUINT64_FORMAT ", %"
                              G_GUINT64_FORMAT " value heads of %" G_GUINT64_FORMAT
                              ", a convolution %" G_GUINT64_FORMAT " wide",
                              c.linear_k_heads, c.linear_k_head_dim, c.linear_v_heads,
                              c.linear_v_head_dim, c.linear_conv);
      break;
    }
    printf("linear attention: %s in %" G_GUINT64_FORMAT " of the %" G_GUINT64_FORMAT
           " blocks (%s): %s%s\n", kind, stw_model_linear_blocks(&c), c.layers, runs, sizes,
           c.linear_parallel ? "; softmax attention beside it, the two summed"
           : all             ? ""
           : !stw_model_has_softmax(&c)   ? ""
           : mixers_all(&c)               ? "; softmax attention in the others"
                                          : "; softmax attention in the others with a mixer");
  }
  if (stw_model_experts(&c) > 1) {
    g_autofree char *active = stw_cli_group_digits(stw_model_active_param_count(&c));
    g_autofree char *shared = c.shared_expert_ffn == 0
                                  ? g_strdup("")
                                  : g_strdup_printf(", and a shared expert %" G_GUINT64_FORMAT
                                                    " wide%s", c.shared_expert_ffn,
                                                    c.shared_expert_ungated ? " (no gate)" : "");
    g_autofree char *dense = dense_blocks_said(&c);
    g_autofree char *latent_said =
        c.expert_latent == 0 ? g_strdup("")
                             : g_strdup_printf(", reading and writing a latent %" G_GUINT64_FORMAT
                                               " wide", c.expert_latent);
    g_autofree char *zero =
        c.zero_experts == 0
            ? g_strdup("")
            : g_strdup_printf(" chosen among them and %" G_GUINT64_FORMAT " zero experts, which "
                              "compute nothing (%" G_GUINT64_FORMAT " experts a token as "
                              "uniform routing expects)", c.zero_experts,
                              stw_model_routed_experts(&c));
    printf("experts: %" G_GUINT64_FORMAT " per block%s, %" G_GUINT64_FORMAT
           " per token%s%s%s%s%s; %s parameters active per token\n",
           stw_model_experts(&c), dense, stw_model_active_experts(&c), zero, latent_said, shared,
           c.experts_normed ? ", the block's MLP beside them, each branch normed apart" : "",
           c.experts_post_norm ? ", a norm over their output" : "", active);
  }
  return STW_EXIT_OK;
}

int
stw_cmd_models(int argc, char **argv)
{
  gboolean json = FALSE;
  g_autofree char *family = NULL, *hf = NULL;
  GOptionEntry entries[] = {
    { "hf", 0, 0, G_OPTION_ARG_FILENAME, &hf,
      "print the model of this config file (a Hugging Face config.json, or stowage's format)",
      "FILE" },
    { "family", 'f', 0, STW_OPTION_TEXT, &family,
      "only this family: gpt2, gpt3, patrickstar, llama, mistral, qwen2, neox, bert", "F" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "machine-readable output", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- list the model zoo");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Model data is 14 bytes per parameter with a 16-bit compute dtype: the compute\n"
           "copy (2), fp32 master weights (4), Adam momentum (4) and variance (4).\n\n"
           "Examples: stowage models --family llama\n"
           "          stowage models --hf Mistral-7B-v0.1/config.json\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "models"))
    return STW_EXIT_USAGE;
  if (argc > 1)
    return stw_cli_fail(STW_EXIT_USAGE, "models: unexpected argument '%s'", argv[1]);

  if (hf != NULL && family != NULL)
    return stw_cli_fail(STW_EXIT_USAGE, "models: give --hf or --family, not both");
  if (hf != NULL)
    return print_config_file(hf, json);
  int fam = 0;
  if (!stw_cli_parse_enum(family, "--family", stw_zoo_families, &fam))
    return STW_EXIT_USAGE;
  if (family != NULL) { /* as the zoo spells it */
    g_free(family);
    family = g_strdup(stw_zoo_families[fam]);
  }
  if (json) {
    g_autofree char *text = stw_zoo_json(family);
    printf("%s\n", text);
    return STW_EXIT_OK;
  }
  gsize n;
  const StwZooEntry *zoo = stw_zoo_entries(&n);
  g_autoptr(StwTable) table = models_table();
  for (gsize i = 0; i < n; i++) {
    const StwModelConfig *c = &zoo[i].config;
    if (family == NULL || strcmp(zoo[i].family, family) == 0)
      models_row(table, c, zoo[i].family, stw_model_param_count(c));
  }
  stw_table_print(table, stdout);
  return STW_EXIT_OK;
}
