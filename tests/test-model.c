/* test-model.c — the zoo's exact parameter counts, configs from files, operator graphs. */
#include "config.h"

#include <glib.h>
#include <glib/gstdio.h>

#include <stowage/model.h>

#include "json.h"
#include "testutil.h"

static void
test_param_counts(void)
{
  static const struct {
    const char *name;
    guint64 params;
  } cases[] = {
    /* published counts (GPT-2 with its tied LM head; BERT-base with the pooler) */
    { "gpt2", G_GUINT64_CONSTANT(124439808) },
    { "gpt2-medium", G_GUINT64_CONSTANT(354823168) },
    { "gpt2-large", G_GUINT64_CONSTANT(774030080) },
    { "gpt2-xl", G_GUINT64_CONSTANT(1557611200) },
    { "llama2-7b", G_GUINT64_CONSTANT(6738415616) },
    { "llama2-13b", G_GUINT64_CONSTANT(13015864320) },
    { "llama2-70b", G_GUINT64_CONSTANT(68976648192) },
    { "llama3-8b", G_GUINT64_CONSTANT(8030261248) },
    { "llama3-70b", G_GUINT64_CONSTANT(70553706496) },
    { "llama3.1-405b", G_GUINT64_CONSTANT(405853388800) },
    { "llama3.2-1b", G_GUINT64_CONSTANT(1235814400) },
    { "llama3.2-3b", G_GUINT64_CONSTANT(3212749824) },
    { "bert-base", G_GUINT64_CONSTANT(109482240) },
    { "bert-large", G_GUINT64_CONSTANT(335141888) },
    { "mistral-7b", G_GUINT64_CONSTANT(7241732096) },
    { "mixtral-8x7b", G_GUINT64_CONSTANT(46702792704) },
    { "qwen2-0.5b", G_GUINT64_CONSTANT(494032768) },
    { "qwen2-1.5b", G_GUINT64_CONSTANT(1543714304) },
    { "qwen2.5-3b", G_GUINT64_CONSTANT(3085938688) },
    { "qwen2-7b", G_GUINT64_CONSTANT(7615616512) },
    { "qwen2.5-14b", G_GUINT64_CONSTANT(14770033664) },
    { "qwen2.5-32b", G_GUINT64_CONSTANT(32763876352) },
    { "qwen2-72b", G_GUINT64_CONSTANT(72706203648) },
    { "pythia-70m", G_GUINT64_CONSTANT(70426624) },
    { "pythia-1.4b", G_GUINT64_CONSTANT(1414647808) },
    { "gpt-neox-20b", G_GUINT64_CONSTANT(20554567680) },
    /* Mixtral 8x22B from its config, by hand: 56 x (attention 88,080,384 + 8 experts'
     * 2,415,919,104 + router 49,152 + norms 12,288) + embeddings and head 402,653,184 + 6,144
     * (published as 141B) */
    { "mixtral-8x22b", G_GUINT64_CONSTANT(140630071296) },
    /* 12*L*d^2 + 13*L*d + (V + S)*d + 2d, checked by hand for the largest */
    { "gpt3-175b", G_GUINT64_CONSTANT(174604259328) },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    StwModelConfig cfg;
    g_assert_true(stw_zoo_lookup(cases[i].name, &cfg, NULL));
    g_test_message("%s", cases[i].name);
    g_assert_cmpuint(stw_model_param_count(&cfg), ==, cases[i].params);
  }
  /* the closed form for GPT */
  StwModelConfig c;
  g_assert_true(stw_zoo_lookup("pstar-12b", &c, NULL));
  guint64 L = c.layers, d = c.hidden;
  g_assert_cmpuint(stw_model_param_count(&c), ==,
                   12 * L * d * d + 13 * L * d + (c.vocab + c.max_seq) * d + 2 * d);
}

static void
test_zoo_valid(void)
{
  gsize n;
  const StwZooEntry *zoo = stw_zoo_entries(&n);
  g_assert_cmpuint(n, >=, 30);
  GHashTable *names = g_hash_table_new(g_str_hash, g_str_equal);
  gsize pstar = 0;
  for (gsize i = 0; i < n; i++) {
    GError *error = NULL;
    g_assert_true(stw_model_config_validate(&zoo[i].config, NULL, &error));
    g_assert_no_error(error);
    g_assert_true(g_hash_table_add(names, (gpointer)zoo[i].config.name));
    if (g_str_equal(zoo[i].family, "patrickstar")) {
      pstar++;
      g_assert_cmpuint(zoo[i].config.hidden, >=, 2048);
      g_assert_cmpuint(zoo[i].config.hidden, <=, 12288);
      g_assert_cmpuint(zoo[i].config.layers, >=, 20);
      g_assert_cmpuint(zoo[i].config.layers, <=, 137);
    }
  }
  g_assert_cmpuint(pstar, >=, 10);
  g_hash_table_unref(names);
}

static void
test_lookup(void)
{
  StwModelConfig cfg;
  GError *error = NULL;
  g_assert_true(stw_zoo_lookup("GPT2-XL", &cfg, &error));
  g_assert_cmpstr(cfg.name, ==, "gpt2-xl");
  g_assert_false(stw_zoo_lookup("gpt5", &cfg, &error));
  g_assert_error(error, STW_MODEL_ERROR, STW_MODEL_ERROR_UNKNOWN);
  g_assert_nonnull(strstr(error->message, "unknown model 'gpt5'"));
  stw_assert_error_contains(error, "llama3-8b");
}

static void
test_config_files(void)
{
  StwModelConfig cfg;
  GError *error = NULL;
  g_autofree char *good = stw_test_fixture("models/tiny-gpt.json");
  g_assert_true(stw_model_resolve(good, &cfg, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(cfg.name, ==, "tiny-gpt");
  g_assert_cmpuint(cfg.ffn, ==, 256);   /* default 4 * hidden */
  g_assert_cmpuint(cfg.kv_heads, ==, 4); /* default heads */
  g_assert_true(cfg.tied);
  /* 2 layers of 12d^2+13d, (256 + 128) * 64 embeddings, final norm */
  g_assert_cmpuint(stw_model_param_count(&cfg), ==, 2 * (12 * 64 * 64 + 13 * 64) + 384 * 64 + 128);

  static const struct {
    const char *file;
    const char *needle;
  } bad[] = {
    { "models/bad-heads.json", "$: invalid model: heads must divide hidden" },
    { "models/bad-arch.json", "$.arch: \"rnn\" is not one of \"gpt\", \"llama\", \"bert\"" },
    { "models/bad-layers.json", "$.layers: 100000 is out of range (expected 1 to 4096)" },
    { "models/bad-format.json", "$.format: this is a stowage trace (\"stowage-trace\"), not a stowage model configuration" },
    { "models/missing.json", "cannot open" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *path = stw_test_fixture(bad[i].file);
    g_assert_false(stw_model_resolve(path, &cfg, &error));
    g_assert_nonnull(strstr(error->message, path));
    stw_assert_error_contains(error, bad[i].needle);
    g_clear_error(&error);
  }
  /* the MLP's activation and the position table's offset: read, written back, refused where
   * they mean nothing */
  static const struct {
    const char *members, *needle;
  } shape[] = {
    { "\"activation\": \"swish\"", "$.activation: \"swish\" is not one of \"default\", "
                                     "\"gelu_new\", \"gelu\", \"relu\"" },
    { "\"position_offset\": 2000", "$.position_offset: 2000 is out of range (expected 0 to "
                                    "1024)" },
    { "\"arch\": \"llama\", \"position_offset\": 2",
      "$: invalid model: position_offset is for learned positions (gpt and bert blocks)" },
    { "\"arch\": \"llama\", \"activation\": \"relu\"",
      "$: invalid model: activation is the gpt, neox and bert blocks'" },
    { "\"position_offset\": 2, \"activation\": \"relu\"", NULL },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(shape); i++) {
    g_autofree char *text = g_strdup_printf(
        "{\"format\": \"stowage-model\", \"version\": 1, \"name\": \"m\", \"layers\": 2, "
        "\"hidden\": 64, \"heads\": 4, \"vocab\": 100, \"max_seq\": 64, %s%s}",
        strstr(shape[i].members, "\"arch\"") != NULL ? "" : "\"arch\": \"gpt\", ",
        shape[i].members);
    gboolean ok = stw_model_config_parse("m.json", text, strlen(text), &cfg, &error);
    if (shape[i].needle != NULL) {
      g_assert_false(ok);
      stw_assert_error_contains(error, shape[i].needle);
      g_clear_error(&error);
      continue;
    }
    g_assert_no_error(error);
    g_assert_cmpint(cfg.activation, ==, STW_ACT_RELU);
    /* 66 position rows: 2 beyond the longest sequence */
    g_assert_cmpuint(stw_model_param_count(&cfg), ==,
                     2 * (12 * 64 * 64 + 13 * 64) + (100 + 66) * 64 + 128);
    cJSON *j = stw_model_config_to_json(&cfg, FALSE);
    g_assert_cmpstr(cJSON_GetStringValue(cJSON_GetObjectItem(j, "activation")), ==, "relu");
    g_autofree char *written = cJSON_PrintUnformatted(j);
    g_assert_nonnull(strstr(written, "\"position_offset\":2"));
    cJSON_Delete(j);
  }
}

/* TEXT written as a config.json in DIR and resolved into *CFG. */
static void
resolve_text(const char *dir, const char *text, StwModelConfig *cfg)
{
  g_autofree char *path = g_build_filename(dir, "config.json", NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  GError *error = NULL;
  g_test_message("%s", text);
  g_assert_true(stw_model_resolve(path, cfg, &error));
  g_assert_no_error(error);
  g_assert_cmpint(g_remove(path), ==, 0);
}

/* A config.json read as transformers reads it: left-out members at its config class's defaults
 * (Gemma's head width 256, Mistral's 8 key/value heads), a member given twice at its last value
 * (the model type too), members its model does not use ignored (Mistral's MLP bias). The figures
 * are transformers 5's parameter counts for the same files (python/tests/test_hf_configs.py
 * checks 1,208 configs). */
static void
test_hf_defaults(void)
{
  static const struct {
    const char *json;
    guint64 params;
  } cases[] = {
    { "{\"model_type\": \"llama\"}", G_GUINT64_CONSTANT(6738415616) },
    /* Granite MoE's block with a shared SwiGLU expert 96 wide, no gate of its own; without it */
    { "{\"model_type\": \"granitemoeshared\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"intermediate_size\": 48, "
      "\"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"shared_intermediate_size\": 96, "
      "\"vocab_size\": 128}", G_GUINT64_CONSTANT(152384) },
    { "{\"model_type\": \"granitemoeshared\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"intermediate_size\": 48, "
      "\"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"vocab_size\": 128}",
      G_GUINT64_CONSTANT(115520) },
    /* the type given twice: the last, as everything else (Python's json) */
    { "{\"model_type\": \"gpt2\", \"model_type\": \"llama\"}", G_GUINT64_CONSTANT(6738415616) },
    { "{\"model_type\": \"gpt2\"}", G_GUINT64_CONSTANT(124439808) },
    { "{\"model_type\": \"mistral\", \"mlp_bias\": true, \"attention_bias\": true}",
      G_GUINT64_CONSTANT(7241732096) },
    { "{\"model_type\": \"gemma\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 1, \"intermediate_size\": 160, "
      "\"vocab_size\": 128}", G_GUINT64_CONSTANT(397632) },
    { "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"intermediate_size\": 160, \"vocab_size\": 128, "
      "\"num_hidden_layers\": 3}", G_GUINT64_CONSTANT(158144) },
    { "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"num_hidden_layers\": 3, \"n_embd\": 32, "
      "\"n_head\": 2, \"vocab_size\": 100}", G_GUINT64_CONSTANT(74144) },
  };
  g_autofree char *dir = g_dir_make_tmp("stowage-hf-XXXXXX", NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    StwModelConfig cfg;
    resolve_text(dir, cases[i].json, &cfg);
    g_assert_cmpuint(stw_model_param_count(&cfg), ==, cases[i].params);
  }
  g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/* Gemma 2 and 3: a norm after attention and after the MLP, the residual added after it; Gemma
 * 2 caps the logits (an op of its own, keeping the logits' size for tanh's backward) and the
 * scores (naive attention keeps the capped scores' tanh beside the softmax); a softcap written
 * null is off. Worked out for gemma-2-9b at batch 1 x 16 in bf16: T V e = 16 x 256000 x 2. */
static void
test_gemma(void)
{
  StwModelConfig g2, g3;
  g_autofree char *p2 = stw_test_fixture("hf/gemma-2-9b/config.json");
  g_autofree char *p3 = stw_test_fixture("hf/gemma-3-1b-pt/config.json");
  g_assert_true(stw_model_resolve(p2, &g2, NULL));
  g_assert_true(stw_model_resolve(p3, &g3, NULL));
  g_assert_true(g2.norms == STW_NORMS_BOTH && g2.logit_softcap && g2.attn_softcap && !g2.qk_norm);
  g_assert_true(g3.norms == STW_NORMS_BOTH && !g3.logit_softcap && !g3.attn_softcap && g3.qk_norm);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&g2, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_NAIVE);
  const char *want[] = { "embed", "h0.ln_1", "h0.attn.qkv", "h0.attn.rope", "h0.attn.core",
                         "h0.attn.o_proj", "h0.attn.post_norm", "h0.ln_2", "h0.mlp.gate_up",
                         "h0.mlp.swiglu", "h0.mlp.down", "h0.mlp.post_norm", "h1.ln_1" };
  for (gsize i = 0; i < G_N_ELEMENTS(want); i++)
    g_assert_cmpstr(((StwGraphOp *)g->ops->pdata[i])->name, ==, want[i]);
  const StwGraphOp *o_proj = g->ops->pdata[5], *post = g->ops->pdata[6], *down = g->ops->pdata[10];
  g_assert_cmpint(o_proj->residual, ==, STW_RESIDUAL_NONE);
  g_assert_cmpint(post->residual, ==, STW_RESIDUAL_CLOSE);
  g_assert_cmpint(down->residual, ==, STW_RESIDUAL_NONE);
  g_assert_cmpint(((StwGraphOp *)g->ops->pdata[11])->residual, ==, STW_RESIDUAL_CLOSE);
  g_assert_cmpstr(((StwGraphTensor *)g->tensors->pdata[g_array_index(post->params, guint32, 0)])
                      ->name, ==, "layers.0.post_attention_layernorm.weight");
  g_assert_cmpstr(((StwGraphTensor *)g->tensors->pdata[g_array_index(
                      ((StwGraphOp *)g->ops->pdata[7])->params, guint32, 0)])->name, ==,
                  "layers.0.pre_feedforward_layernorm.weight");
  /* the scores: 16 heads x 16 x 16, bf16; the softmax's and the cap's kept */
  const StwGraphOp *core = g->ops->pdata[4];
  g_assert_cmpuint(core->saved_extra_bytes, ==, 2 * 16 * 16 * 16 * 2);
  const StwGraphOp *head = g->ops->pdata[g->ops->len - 3], *cap = g->ops->pdata[g->ops->len - 2];
  g_assert_cmpint(head->kind, ==, STW_OP_LM_HEAD);
  g_assert_cmpint(cap->kind, ==, STW_OP_LOGIT_SOFTCAP);
  g_assert_cmpuint(cap->in_bytes, ==, 16 * 256000 * 2);
  g_assert_cmpuint(cap->out_bytes, ==, 16 * 256000 * 2);
  g_assert_true(cap->saves_input);
  g_assert_cmpuint(cap->flops, ==, 3 * 16 * 256000);
  /* over pieces of the loss, the cap is inside them */
  stw_model_graph_chunk_loss(g, TRUE);
  g_assert_cmpuint(cap->in_bytes, ==, 4);
  g_assert_false(cap->saves_input);
  /* Gemma 3's graph has no cap op */
  g_autoptr(StwModelGraph) h = stw_model_graph_new(&g3, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_NAIVE);
  for (guint i = 0; i < h->ops->len; i++)
    g_assert_cmpint(((StwGraphOp *)h->ops->pdata[i])->kind, !=, STW_OP_LOGIT_SOFTCAP);
  g_assert_cmpuint(((StwGraphOp *)h->ops->pdata[5])->saved_extra_bytes, ==, 4 * 16 * 16 * 2);

  /* written in stowage's format and read back; a softcap null is off, a string refused */
  cJSON *j = stw_model_config_to_json(&g2, TRUE);
  g_assert_cmpstr(cJSON_GetStringValue(cJSON_GetObjectItem(j, "norms")), ==, "both");
  g_assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "logit_softcap")));
  g_autofree char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  g_autofree char *dir = g_dir_make_tmp("stowage-gemma-XXXXXX", NULL);
  g_autofree char *back = g_build_filename(dir, "g2.json", NULL);
  g_autofree char *off = g_build_filename(dir, "off.json", NULL);
  g_autofree char *bad = g_build_filename(dir, "bad.json", NULL);
  g_assert_true(g_file_set_contents(back, text, -1, NULL));
  g_assert_true(g_file_set_contents(off, "{\"model_type\": \"gemma2\", "
                                    "\"final_logit_softcapping\": null}", -1, NULL));
  g_assert_true(g_file_set_contents(bad, "{\"model_type\": \"gemma2\", "
                                    "\"attn_logit_softcapping\": \"50\"}", -1, NULL));
  StwModelConfig again, o;
  g_assert_true(stw_model_resolve(back, &again, NULL));
  g_assert_true(again.norms == STW_NORMS_BOTH && again.logit_softcap && again.attn_softcap);
  g_assert_cmpuint(stw_model_param_count(&again), ==, G_GUINT64_CONSTANT(9241705984));
  g_assert_true(stw_model_resolve(off, &o, NULL));
  g_assert_true(!o.logit_softcap && o.attn_softcap);
  GError *error = NULL;
  g_assert_false(stw_model_resolve(bad, &o, &error));
  g_assert_nonnull(strstr(error->message, "$.attn_logit_softcapping: expected a number or null"));
  g_clear_error(&error);
  /* a gpt with post-norms is refused */
  StwModelConfig gpt = g2;
  gpt.arch = STW_ARCH_GPT;
  gpt.kv_heads = gpt.heads;
  gpt.head_dim = 0;
  g_assert_false(stw_model_config_validate(&gpt, NULL, &error));
  g_assert_nonnull(strstr(error->message, "norms after attention and the MLP and the "
                                          "attention's softcap are modelled for llama-style "
                                          "blocks only"));
  g_clear_error(&error);
  /* the logits' cap is any decoder's (NanoChat's neox block), not bert's */
  gpt.norms = STW_NORMS_PRE;
  gpt.attn_softcap = FALSE;
  g_assert_true(stw_model_config_validate(&gpt, NULL, &error));
  gpt.arch = STW_ARCH_BERT;
  g_assert_false(stw_model_config_validate(&gpt, NULL, &error));
  stw_assert_error_contains(error, "the logits' softcap is the decoders' (gpt, neox, llama)");
  g_clear_error(&error);
  g_remove(back);
  g_remove(off);
  g_remove(bad);
  g_rmdir(dir);
}

/* OLMo 2: the norms after attention and the MLP only, so each block opens at its projections
 * (the residual's skip path from the block input), and one RMSNorm over all the queries (4096
 * weights) and one over all the keys, a statistic per token each; synthesized, its residuals
 * and memory balance (synth's assertions) */
/* The norms' kinds: StableLM's llama-style block with LayerNorms (weight and bias), OLMo's
 * LayerNorms without parameters, MPT's without biases: each first block norm's parameters, its
 * cost as a LayerNorm (8 FLOPs an element, mean and rstd kept: 8 bytes a token), the model file's
 * norm_type written and read back, and the refusals. */
static void
test_norm_types(void)
{
  static const struct {
    const char *dir;
    StwNormType type;
    const char *name;
    guint params;
  } cases[] = {
    { "stablelm-2-1_6b", STW_NORM_LAYER, "layernorm", 2 },
    { "OLMo-1B-hf", STW_NORM_LAYER_NO_AFFINE, "layernorm_no_affine", 0 },
    { "mpt-7b", STW_NORM_LAYER_NO_BIAS, "layernorm_no_bias", 1 },
  };
  g_autofree char *dir = g_dir_make_tmp("stowage-norms-XXXXXX", NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *rel = g_strdup_printf("hf/%s/config.json", cases[i].dir);
    g_autofree char *path = stw_test_fixture(rel);
    StwModelConfig c;
    g_assert_true(stw_model_resolve(path, &c, NULL));
    g_assert_cmpint(c.norm_type, ==, cases[i].type);
    g_assert_false(stw_model_rms_norm(&c));
    g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                     STW_ATTENTION_FLASH);
    const StwGraphOp *ln = NULL, *final = NULL;
    for (guint k = 0; k < g->ops->len; k++) {
      const StwGraphOp *o = g->ops->pdata[k];
      if (o->kind == STW_OP_NORM_ATTN && ln == NULL)
        ln = o;
      if (o->kind == STW_OP_NORM_FINAL)
        final = o;
    }
    g_assert_cmpuint(ln->params->len, ==, cases[i].params);
    g_assert_cmpuint(final->params->len, ==, cases[i].params);
    g_assert_cmpuint(ln->flops, ==, 8 * 16 * c.hidden);
    g_assert_cmpuint(ln->saved_extra_bytes, ==, 16 * 8);
    cJSON *j = stw_model_config_to_json(&c, TRUE);
    g_assert_cmpstr(cJSON_GetStringValue(cJSON_GetObjectItem(j, "norm_type")), ==,
                    cases[i].name);
    g_autofree char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    g_autofree char *back = g_build_filename(dir, "back.json", NULL);
    g_assert_true(g_file_set_contents(back, text, -1, NULL));
    StwModelConfig again;
    g_assert_true(stw_model_resolve(back, &again, NULL));
    g_assert_cmpint(again.norm_type, ==, cases[i].type);
    g_assert_cmpuint(stw_model_param_count(&again), ==, stw_model_param_count(&c));
    g_unlink(back);
  }
  /* GPT-Neo's attention in fp32, written and read back */
  {
    g_autofree char *neo_path = stw_test_fixture("hf/gpt-neo-125m/config.json");
    StwModelConfig neo;
    g_assert_true(stw_model_resolve(neo_path, &neo, NULL));
    g_assert_true(neo.attn_fp32);
    cJSON *nj = stw_model_config_to_json(&neo, TRUE);
    g_assert_true(cJSON_IsTrue(cJSON_GetObjectItem(nj, "attn_fp32")));
    g_autofree char *text = cJSON_PrintUnformatted(nj);
    cJSON_Delete(nj);
    g_autofree char *back = g_build_filename(dir, "neo.json", NULL);
    g_assert_true(g_file_set_contents(back, text, -1, NULL));
    StwModelConfig again;
    g_assert_true(stw_model_resolve(back, &again, NULL));
    g_assert_true(again.attn_fp32);
    g_unlink(back);
  }
  /* the default is written as nothing; llama's is RMSNorm with a weight */
  StwModelConfig llama;
  g_assert_true(stw_zoo_lookup("llama3-8b", &llama, NULL));
  g_assert_true(stw_model_rms_norm(&llama) && stw_model_norm_weight(&llama) &&
                !stw_model_norm_bias(&llama));
  cJSON *j = stw_model_config_to_json(&llama, TRUE);
  g_assert_null(cJSON_GetObjectItem(j, "norm_type"));
  cJSON_Delete(j);
  /* bert keeps its own; an unknown kind is refused, named */
  StwModelConfig bert;
  g_assert_true(stw_zoo_lookup("bert-base", &bert, NULL));
  bert.norm_type = STW_NORM_LAYER_NO_BIAS;
  GError *error = NULL;
  g_assert_false(stw_model_config_validate(&bert, NULL, &error));
  stw_assert_error_contains(error, "norm_type is the decoders' (gpt, neox, llama)");
  g_autofree char *bad = g_build_filename(dir, "bad.json", NULL);
  g_assert_true(g_file_set_contents(bad, "{\"format\": \"stowage-model\", \"version\": 1, "
                                    "\"name\": \"x\", \"arch\": \"gpt\", \"layers\": 1, "
                                    "\"hidden\": 64, \"heads\": 4, \"vocab\": 100, "
                                    "\"norm_type\": \"batchnorm\"}",
                                    -1, NULL));
  StwModelConfig none;
  g_assert_false(stw_model_resolve(bad, &none, &error));
  stw_assert_error_contains(error, "bad.json: $.norm_type: \"batchnorm\" is not one of "
                                   "\"default\", \"layernorm\", \"layernorm_no_bias\", "
                                   "\"layernorm_no_affine\"");
  g_unlink(bad);
  g_rmdir(dir);
}

static void
test_olmo2(void)
{
  StwModelConfig c;
  g_autofree char *path = stw_test_fixture("hf/OLMo-2-1124-7B/config.json");
  g_assert_true(stw_model_resolve(path, &c, NULL));
  g_assert_cmpint(c.norms, ==, STW_NORMS_POST);
  g_assert_true(c.qk_norm && c.qk_norm_full);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  const char *want[] = { "embed", "h0.attn.qkv", "h0.attn.qk_norm", "h0.attn.rope",
                         "h0.attn.core", "h0.attn.o_proj", "h0.attn.post_norm", "h0.mlp.gate_up",
                         "h0.mlp.swiglu", "h0.mlp.down", "h0.mlp.post_norm", "h1.attn.qkv" };
  StwResidual residual[] = { STW_RESIDUAL_NONE, STW_RESIDUAL_OPEN, STW_RESIDUAL_NONE,
                             STW_RESIDUAL_NONE, STW_RESIDUAL_NONE, STW_RESIDUAL_NONE,
                             STW_RESIDUAL_CLOSE, STW_RESIDUAL_OPEN, STW_RESIDUAL_NONE,
                             STW_RESIDUAL_NONE, STW_RESIDUAL_CLOSE, STW_RESIDUAL_OPEN };
  for (gsize i = 0; i < G_N_ELEMENTS(want); i++) {
    const StwGraphOp *o = g->ops->pdata[i];
    g_assert_cmpstr(o->name, ==, want[i]);
    g_assert_cmpint(o->residual, ==, residual[i]);
  }
  const StwGraphOp *qkn = g->ops->pdata[2];
  g_assert_cmpuint(((StwGraphTensor *)g->tensors->pdata[g_array_index(qkn->params, guint32, 0)])
                       ->numel, ==, 4096);
  g_assert_cmpuint(qkn->saved_extra_bytes, ==, 16 * 2 * 4);
  cJSON *j = stw_model_config_to_json(&c, FALSE);
  g_assert_cmpstr(cJSON_GetStringValue(cJSON_GetObjectItem(j, "norms")), ==, "post");
  g_assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "qk_norm_full")));
  cJSON_Delete(j);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  c.layers = 2;
  for (int ck = 0; ck < 2; ck++) {
    StwSynthOptions o = { .batch = 1, .seq = 16, .dtype = STW_DTYPE_BF16, .checkpointing = ck };
    g_autoptr(StwTrace) t = stw_synth_trace(&c, &o, &hw, NULL);
    g_assert_nonnull(t);
    g_assert_true(stw_trace_validate(t, "olmo2", NULL));
  }
  /* qk_norm_full alone is refused */
  StwModelConfig bad = c;
  bad.qk_norm = FALSE;
  GError *error = NULL;
  g_assert_false(stw_model_config_validate(&bad, NULL, &error));
  g_assert_nonnull(strstr(error->message, "qk_norm_full needs qk_norm"));
  g_clear_error(&error);
}

/* Grouped and multi-query attention in GPT-2's block (StarCoder 2 on NeoX's, GPT-BigCode on
 * GPT-2's): the fused projection q + 2 kv wide, the attention reading narrower keys and
 * values; synthesized, memory balances (synth's assertions) */
static void
test_gqa_gelu_blocks(void)
{
  const struct {
    const char *dir;
    guint64 q, kv;
  } cases[] = { { "starcoder2-3b", 3072, 256 }, { "starcoderbase-1b", 2048, 128 } };
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    StwModelConfig c;
    g_autofree char *rel = g_strdup_printf("hf/%s/config.json", cases[i].dir);
    g_autofree char *path = stw_test_fixture(rel);
    g_assert_true(stw_model_resolve(path, &c, NULL));
    c.layers = 2;
    g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                     STW_ATTENTION_NAIVE);
    for (guint k = 0; k < g->ops->len; k++) {
      const StwGraphOp *o = g->ops->pdata[k];
      if (o->kind == STW_OP_ATTN_QKV)
        g_assert_cmpuint(o->out_bytes, ==, 16 * (cases[i].q + 2 * cases[i].kv) * 2);
      if (o->kind == STW_OP_ATTN_CORE)
        g_assert_cmpuint(o->in_bytes, ==, 16 * (cases[i].q + 2 * cases[i].kv) * 2);
    }
    StwSynthOptions o = { .batch = 1, .seq = 16, .dtype = STW_DTYPE_BF16 };
    g_autoptr(StwTrace) t = stw_synth_trace(&c, &o, &hw, NULL);
    g_assert_nonnull(t);
  }
}

/* Phi-2 and GPT-J: a parallel block, its one LayerNorm read by attention and the MLP, modelled
 * as the sequential block without the MLP's norm (the MLP's first projection opens the skip
 * path), and an LM head with a vocab-wide bias, read by the head's op; synthesized, memory
 * balances */
static void
test_parallel_blocks(void)
{
  StwModelConfig c;
  g_autofree char *path = stw_test_fixture("hf/phi-2/config.json");
  g_assert_true(stw_model_resolve(path, &c, NULL));
  g_assert_cmpint(c.norms, ==, STW_NORMS_SHARED);
  g_assert_true(c.head_bias);
  c.layers = 2;
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  const char *want[] = { "embed", "h0.ln_1", "h0.attn.qkv", "h0.attn.rope", "h0.attn.core",
                         "h0.attn.proj", "h0.mlp.fc", "h0.mlp.gelu", "h0.mlp.proj", "h1.ln_1" };
  StwResidual residual[] = { STW_RESIDUAL_NONE, STW_RESIDUAL_OPEN, STW_RESIDUAL_NONE,
                             STW_RESIDUAL_NONE, STW_RESIDUAL_NONE, STW_RESIDUAL_CLOSE,
                             STW_RESIDUAL_OPEN, STW_RESIDUAL_NONE, STW_RESIDUAL_CLOSE,
                             STW_RESIDUAL_OPEN };
  for (gsize i = 0; i < G_N_ELEMENTS(want); i++) {
    const StwGraphOp *o = g->ops->pdata[i];
    g_assert_cmpstr(o->name, ==, want[i]);
    g_assert_cmpint(o->residual, ==, residual[i]);
  }
  const StwGraphOp *head = g->ops->pdata[g->ops->len - 2];
  g_assert_cmpint(head->kind, ==, STW_OP_LM_HEAD);
  g_assert_cmpuint(head->params->len, ==, 2);
  const StwGraphTensor *bias = g->tensors->pdata[g_array_index(head->params, guint32, 1)];
  g_assert_cmpstr(bias->name, ==, "embed_out.bias");
  g_assert_cmpuint(bias->numel, ==, 51200);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwSynthOptions o = { .batch = 1, .seq = 16, .dtype = STW_DTYPE_BF16, .checkpointing = TRUE };
  g_autoptr(StwTrace) t = stw_synth_trace(&c, &o, &hw, NULL);
  g_assert_nonnull(t);
  /* a shared norm in bert's encoder is refused (its norms come after attention and the MLP) */
  StwModelConfig bad = c;
  bad.arch = STW_ARCH_BERT;
  bad.head_bias = FALSE;
  bad.tied = TRUE;
  GError *error = NULL;
  g_assert_false(stw_model_config_validate(&bad, NULL, &error));
  g_assert_nonnull(strstr(error->message, "a norm shared by attention and the MLP is modelled "
                                          "for the decoders only"));
  g_clear_error(&error);

  /* Cohere 2 MoE's: the experts' branch opens at their first projection, past the router that
   * passes the norm's output through; synthesized (checkpointed), memory balances */
  StwModelConfig moe = { .name = "cohere2-moe-small", .arch = STW_ARCH_LLAMA, .layers = 2,
                         .hidden = 64, .heads = 4, .kv_heads = 4, .ffn = 48, .vocab = 128,
                         .max_seq = 64, .tied = TRUE, .experts = 4, .experts_per_token = 2,
                         .norms = STW_NORMS_SHARED };
  g_assert_true(stw_model_config_validate(&moe, NULL, &error));
  g_autoptr(StwModelGraph) gm = stw_model_graph_new(&moe, 1, 16, STW_DTYPE_BF16,
                                                    STW_ATTENTION_FLASH);
  const char *moe_want[] = { "embed", "h0.ln_1", "h0.attn.qkv", "h0.attn.rope", "h0.attn.core",
                             "h0.attn.o_proj", "h0.moe.router", "h0.moe.w1_w3", "h0.moe.swiglu",
                             "h0.moe.w2", "h1.ln_1" };
  StwResidual moe_residual[] = { STW_RESIDUAL_NONE, STW_RESIDUAL_OPEN, STW_RESIDUAL_NONE,
                                 STW_RESIDUAL_NONE, STW_RESIDUAL_NONE, STW_RESIDUAL_CLOSE,
                                 STW_RESIDUAL_NONE, STW_RESIDUAL_OPEN, STW_RESIDUAL_NONE,
                                 STW_RESIDUAL_CLOSE, STW_RESIDUAL_OPEN };
  for (gsize i = 0; i < G_N_ELEMENTS(moe_want); i++) {
    const StwGraphOp *op = gm->ops->pdata[i];
    g_assert_cmpstr(op->name, ==, moe_want[i]);
    g_assert_cmpint(op->residual, ==, moe_residual[i]);
  }
  g_autoptr(StwTrace) tm = stw_synth_trace(&moe, &o, &hw, NULL);
  g_assert_nonnull(tm);
}

/* AFMoE's output gate on attention: q x d more weights a block, read with the queries (the
 * projection op's output q wider), and a gate op between the attention and o_proj; written to
 * and read from stowage's model format; refused outside llama's block */
static void
test_attn_gate(void)
{
  StwModelConfig c = { .name = "gated", .arch = STW_ARCH_LLAMA, .layers = 2, .hidden = 64,
                       .heads = 4, .kv_heads = 2, .ffn = 160, .vocab = 128, .max_seq = 64 };
  guint64 plain = stw_model_param_count(&c);
  c.attn_gate = TRUE;
  GError *error = NULL;
  g_assert_true(stw_model_config_validate(&c, NULL, &error));
  g_assert_cmpuint(stw_model_param_count(&c), ==, plain + 2 * 64 * 64);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  const char *want[] = { "embed", "h0.ln_1", "h0.attn.qkv", "h0.attn.rope", "h0.attn.core",
                         "h0.attn.gate", "h0.attn.o_proj" };
  for (gsize i = 0; i < G_N_ELEMENTS(want); i++)
    g_assert_cmpstr(((StwGraphOp *)g->ops->pdata[i])->name, ==, want[i]);
  const StwGraphOp *qkv = g->ops->pdata[2], *gate = g->ops->pdata[5];
  g_assert_cmpuint(qkv->out_bytes, ==, 16 * (64 + 2 * 32 + 64) * 2);
  g_assert_cmpuint(qkv->params->len, ==, 4);
  g_assert_cmpuint(gate->in_bytes, ==, 16 * 2 * 64 * 2);
  g_assert_cmpuint(gate->out_bytes, ==, 16 * 64 * 2);
  g_autofree char *record = stw_model_record_json(&c);
  g_assert_nonnull(strstr(record, "\"attn_gate\":\ttrue"));
  static const char text[] = "{\"format\": \"stowage-model\", \"version\": 1, "
                             "\"name\": \"g\", \"arch\": \"llama\", \"layers\": 2, "
                             "\"hidden\": 64, \"heads\": 4, \"ffn\": 160, \"vocab\": 128, "
                             "\"max_seq\": 64, \"attn_gate\": true}";
  StwModelConfig back;
  g_assert_true(stw_model_config_parse("g.json", text, strlen(text), &back, &error));
  g_assert_true(back.attn_gate);
  c.arch = STW_ARCH_GPT;
  g_assert_false(stw_model_config_validate(&c, "g.json", &error));
  stw_assert_error_contains(error, "attn_gate is modelled for llama-style blocks without latent "
                                   "attention only");
  g_clear_error(&error);
}

/* A config.json and what its refusal says. */
typedef struct {
  const char *json, *says;
} Refusal;

/* The elements of G's tensors whose names begin with PREFIX. */
static guint64
prefix_numel(const StwModelGraph *g, const char *prefix)
{
  guint64 n = 0;
  for (guint i = 0; i < g->tensors->len; i++) {
    const StwGraphTensor *x = g->tensors->pdata[i];
    if (g_str_has_prefix(x->name, prefix))
      n += x->numel;
  }
  return n;
}

/* C written in stowage's format, its text holding SAYS, and read back into *BACK with the same
 * parameters. */
static void
round_trip(const StwModelConfig *c, const char *says, StwModelConfig *back)
{
  cJSON *j = stw_model_config_to_json(c, TRUE);
  g_autofree char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  g_assert_nonnull(strstr(text, says));
  g_assert_true(stw_model_config_parse("back.json", text, strlen(text), back, NULL));
  g_assert_cmpuint(stw_model_param_count(back), ==, stw_model_param_count(c));
}

/* BAD refused by stw_model_config_validate as m.json, saying SAYS. */
static void
assert_invalid(const StwModelConfig *bad, const char *says)
{
  GError *error = NULL;
  g_assert_false(stw_model_config_validate(bad, "m.json", &error));
  stw_assert_error_contains(error, says);
  g_clear_error(&error);
}

/* Each of CASES written to PATH is refused, saying what it says. */
static void
assert_refused(const char *path, const Refusal *cases, gsize n)
{
  for (gsize i = 0; i < n; i++) {
    g_assert_true(g_file_set_contents(path, cases[i].json, -1, NULL));
    StwModelConfig cfg;
    GError *error = NULL;
    g_test_message("%s", cases[i].json);
    g_assert_false(stw_model_resolve(path, &cfg, &error));
    stw_assert_error_contains(error, cases[i].says);
  }
}

/* Each of CASES refused as assert_refused says, written to DIR's config.json; then DIR and its
 * file removed. */
static void
assert_refused_in(const char *dir, const Refusal *cases, gsize n)
{
  g_autofree char *path = g_build_filename(dir, "config.json", NULL);
  assert_refused(path, cases, n);
  g_assert_cmpint(g_remove(path), ==, 0);
  g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/* The parameters rank-4 LoRA adapters on TARGETS add to C's graph. */
static guint64
lora_params(const StwModelConfig *c, const char *targets)
{
  g_autoptr(StwModelGraph) g = stw_model_graph_new(c, 1, 16, STW_DTYPE_BF16, STW_ATTENTION_FLASH);
  guint32 n_base = 0;
  GError *error = NULL;
  g_test_message("%s: %s", c->name, targets);
  g_assert_true(stw_model_graph_add_lora(g, 4, targets, &n_base, &error));
  g_assert_no_error(error);
  guint64 added = 0;
  for (guint k = n_base; k < g->tensors->len; k++)
    added += ((StwGraphTensor *)g->tensors->pdata[k])->numel;
  return added;
}

/* The ops of block L of G, their names joined by spaces. */
static char *
block_ops(const StwModelGraph *g, gint32 l)
{
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < g->ops->len; i++) {
    const StwGraphOp *o = g->ops->pdata[i];
    if (o->layer == l)
      g_string_append_printf(s, "%s%s", s->len != 0 ? " " : "", o->name);
  }
  return g_string_free(s, FALSE);
}

/* Nemotron-H: blocks of one part each, a norm and one of Mamba-2's mixer, attention without
 * positions, an ungated MLP, experts (ungated, a shared one, an optional latent); every count
 * transformers 5.24's (python/tests/test_hf_configs.py holds the variants to it) */
static void
test_nemotron_h(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-nh-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"nemotron_h\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 2, \"head_dim\": 16, \"intermediate_size\": 96, "
      "\"mamba_num_heads\": 8, \"mamba_head_dim\": 16, \"n_groups\": 2, \"ssm_state_size\": 8, "
      "\"n_routed_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, "
      "\"moe_shared_expert_intermediate_size\": 48, \"vocab_size\": 128, "
      "\"tie_word_embeddings\": true, \"hybrid_override_pattern\": \"M-*EM-\"%s}";
  g_autofree char *plain = g_strdup_printf(small, "");
  StwModelConfig c;
  resolve_text(dir, plain, &c);
  g_assert_cmpuint(c.layers, ==, 6);
  for (guint64 l = 0; l < 6; l++) {
    g_assert_cmpint(stw_model_block_linear(&c, l), ==, l == 0 || l == 4);
    g_assert_cmpint(stw_model_block_mixer(&c, l), ==, l == 0 || l == 2 || l == 4);
    g_assert_cmpint(stw_model_block_mlp(&c, l), ==, l == 1 || l == 3 || l == 5);
    g_assert_cmpint(stw_model_block_dense(&c, l), ==, l == 1 || l == 5);
  }
  g_assert_true(c.mlp_ungated && c.no_rope && !c.tied && c.shared_expert_ungated);
  g_assert_cmpuint(c.experts, ==, 4);
  g_assert_cmpuint(c.ffn, ==, 32);
  g_assert_cmpuint(c.dense_ffn, ==, 96);
  g_assert_cmpuint(c.shared_expert_ffn, ==, 48);
  g_assert_cmpint(stw_model_activation(&c), ==, STW_ACT_RELU2);
  /* embeddings and head 2 x 128 x 64 and the final norm; two Mamba-2 blocks (in_proj 64 -> x
   * and z 128 each, B and C 2 x 8 each, a step a head: 296 x 64; the convolution over 160
   * channels, 4 wide, biased; dt_bias, A_log, D; the gated norm 128; out_proj 128 -> 64; the
   * block's norm); two MLP blocks (up 96 x 64, down 64 x 96, the norm); attention (q and o 64 x
   * 64, k and v 32 x 64, the norm); experts (the router 4 x 64, four of up 32 x 64 and down
   * 64 x 32, the shared one 48 wide, the norm) */
  guint64 mamba = 296 * 64 + 160 * 4 + 160 + 3 * 8 + 128 + 128 * 64 + 64;
  guint64 mlp = 2 * 96 * 64 + 64, attn = 2 * 64 * 64 + 2 * 32 * 64 + 64;
  guint64 moe = 4 * 64 + 4 * 2 * 32 * 64 + 2 * 48 * 64 + 64;
  g_assert_cmpuint(stw_model_param_count(&c), ==,
                   2 * 128 * 64 + 64 + 2 * mamba + 2 * mlp + attn + moe);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 132656); /* transformers' */
  /* two of the four experts idle a token: their up and down */
  g_assert_cmpuint(stw_model_active_param_count(&c), ==, 132656 - 2 * 2 * 32 * 64);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "layers.1.input_layernorm"), ==, 0);
  g_assert_cmpuint(prefix_numel(g, "layers.0.post_attention_layernorm"), ==, 0);
  g_assert_cmpuint(prefix_numel(g, "layers.2.self_attn."), ==, attn - 64);
  g_assert_cmpuint(prefix_numel(g, "layers.3.block_sparse_moe."), ==, moe - 64);
  g_assert_cmpuint(prefix_numel(g, "layers.5.mlp."), ==, mlp - 64);
  const char *const expect[] = {
    "h0.ln_1 h0.attn.in_proj h0.attn.linear h0.attn.out_proj",
    "h1.ln_2 h1.mlp.up h1.mlp.act h1.mlp.down",
    "h2.ln_1 h2.attn.qkv h2.attn.core h2.attn.o_proj", /* no rotary op */
    "h3.ln_2 h3.moe.router h3.moe.w1_w3 h3.moe.act h3.moe.w2",
  };
  for (gint32 l = 0; l < 4; l++) {
    g_autofree char *ops = block_ops(g, l);
    g_assert_cmpstr(ops, ==, expect[l]);
  }
  StwModelConfig back;
  round_trip(&c, "\"mixer_only_blocks\":[0,2,4],\"mlp_only_blocks\":[1,3,5],\"mlp_gate\":false,"
                 "\"rope\":false", &back);
  g_assert_true(memcmp(back.mixer_only_blocks, c.mixer_only_blocks,
                       sizeof c.mixer_only_blocks) == 0 &&
                memcmp(back.mlp_only_blocks, c.mlp_only_blocks, sizeof c.mlp_only_blocks) == 0);

  /* Nemotron 3's latent: the routed experts read and write 24 wide, through a projection down
   * (24 x 64) and one up (64 x 24); the shared expert reads the block's input */
  g_autofree char *with_latent = g_strdup_printf(small, ", \"moe_latent_size\": 24");
  StwModelConfig lat;
  resolve_text(dir, with_latent, &lat);
  g_assert_cmpuint(lat.expert_latent, ==, 24);
  g_assert_cmpuint(stw_model_param_count(&lat), ==,
                   132656 - 4 * 2 * 32 * (64 - 24) + 2 * 24 * 64);
  g_assert_cmpuint(stw_model_param_count(&lat), ==, 125488); /* transformers' */
  round_trip(&lat, "\"expert_latent\":24", &back);
  /* the blocks by their names (layer_types winning over layers_block_type), and the shared
   * expert 0 wide as transformers builds it: intermediate_size's */
  StwModelConfig named;
  g_autofree char *by_name = g_strdup_printf(
      small, ", \"layers_block_type\": [\"mlp\"], \"layer_types\": [\"mamba\", \"attention\", "
             "\"mlp\", \"moe\"], \"moe_shared_expert_intermediate_size\": 0");
  resolve_text(dir, by_name, &named);
  g_assert_cmpuint(named.layers, ==, 4);
  g_assert_cmpuint(named.shared_expert_ffn, ==, 96);
  g_assert_true(stw_model_block_linear(&named, 0) && !stw_model_block_mlp(&named, 1) &&
                !stw_model_block_mixer(&named, 2) && stw_model_block_dense(&named, 2) &&
                !stw_model_block_dense(&named, 3));
  /* no experts where no block has them: the MLP blocks intermediate_size wide */
  StwModelConfig dense;
  resolve_text(dir, "{\"model_type\": \"nemotron_h\", \"hybrid_override_pattern\": \"M-*\"}",
               &dense);
  g_assert_cmpuint(dense.experts, ==, 0);
  g_assert_cmpuint(dense.ffn, ==, 21504);

  static const Refusal cases[] = {
    { "{\"model_type\": \"nemotron_h\", \"hybrid_override_pattern\": \"M*X\"}",
      "$.hybrid_override_pattern: 'X' at 2: expected M (Mamba-2), * (attention), - (MLP) or E "
      "(experts), as transformers does" },
    { "{\"model_type\": \"nemotron_h\", \"hybrid_override_pattern\": null}",
      "$.hybrid_override_pattern: expected a string of M (Mamba-2), * (attention), - (MLP) and "
      "E (experts), one a block" },
    { "{\"model_type\": \"nemotron_h\", \"hybrid_override_pattern\": \"\"}",
      "$.hybrid_override_pattern: no blocks: a model needs one at least" },
    { "{\"model_type\": \"nemotron_h\", \"layers_block_type\": [\"mamba\", \"conv\"]}",
      "$.layers_block_type: entry 1: expected \"linear_attention\", \"full_attention\", "
      "\"mlp\" or \"moe\"" },
    { "{\"model_type\": \"nemotron_h\", \"layer_types\": \"M*\"}",
      "$.layer_types: expected a list of \"linear_attention\", \"full_attention\", \"mlp\" and "
      "\"moe\", one a block" },
    { "{\"model_type\": \"nemotron_h\", \"mlp_bias\": true}",
      "$.mlp_bias: true with experts: not modelled (the shared expert and the latent's "
      "projections are biased, the routed experts and the router never)" },
    { "{\"model_type\": \"nemotron_h\", \"n_routed_experts\": 1}",
      "$.n_routed_experts: 1: not modelled (2 or more experts are)" },
    { "{\"model_type\": \"nemotron_h\", \"moe_latent_size\": 0}",
      "$.moe_latent_size: 0 is out of range" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
}

/* Gemma 4's language model: global blocks among sliding ones with heads of their own width,
 * blocks reusing an earlier block's keys and values (their MLP twice as wide), values from the
 * keys, per-layer embeddings, experts beside the MLP; every count transformers 5.24's */
static void
test_gemma4(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-g4-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
      "\"global_head_dim\": 32, \"intermediate_size\": 96, \"vocab_size\": 128, "
      "\"hidden_size_per_layer_input\": 8, \"vocab_size_per_layer_input\": 64, "
      "\"layer_types\": [\"sliding_attention\", \"full_attention\", \"sliding_attention\", "
      "\"sliding_attention\"]%s}";
  g_autofree char *plain = g_strdup_printf(small, "");
  StwModelConfig c;
  resolve_text(dir, plain, &c);
  /* the last block made global, as transformers makes it */
  for (guint64 l = 0; l < 4; l++)
    g_assert_cmpint(stw_model_block_global(&c, l), ==, l % 2 == 1);
  g_assert_cmpuint(stw_model_block_head_dim(&c, 0), ==, 16);
  g_assert_cmpuint(stw_model_block_head_dim(&c, 1), ==, 32);
  /* outside the blocks: the embeddings (tied), the per-layer table 64 x 4 x 8, its projection
   * 32 x 64 and norm 8, the final norm; a sliding block: q and o 64 x 64, k and v 32 x 64, the
   * query and key norms 16 each, four norms, the MLP 3 x 64 x 96, the per-layer branch (a gate
   * 8 x 64, a projection 64 x 8, a norm 64); a global one: q and o 128 x 64, k and v 64 x 64,
   * its query and key norms 32 each */
  guint64 outside = 128 * 64 + 64 * 32 + 32 * 64 + 8 + 64;
  guint64 rest = 4 * 64 + 3 * 64 * 96 + 2 * 8 * 64 + 64;
  guint64 sliding = 2 * 64 * 64 + 2 * 32 * 64 + 2 * 16 + rest;
  guint64 global = 2 * 128 * 64 + 2 * 64 * 64 + 2 * 32 + rest;
  g_assert_cmpuint(stw_model_param_count(&c), ==, outside + 2 * sliding + 2 * global);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 165384); /* transformers' */
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "layers.1.self_attn."), ==, 2 * 128 * 64 + 2 * 64 * 64 + 64);
  g_autofree char *ops = block_ops(g, 0);
  g_assert_cmpstr(ops, ==, "h0.ln_1 h0.attn.qkv h0.attn.qk_norm h0.attn.rope h0.attn.core "
                           "h0.attn.o_proj h0.attn.post_norm h0.ln_2 h0.mlp.gate_up "
                           "h0.mlp.swiglu h0.mlp.down h0.mlp.post_norm h0.ple.gate h0.ple.act "
                           "h0.ple.proj h0.ple.post_norm");
  /* the per-layer inputs: one op after the embeddings, kept for every block (4 x 8 a token) */
  const StwGraphOp *ple = g->ops->pdata[1];
  g_assert_cmpstr(ple->name, ==, "per_layer_inputs");
  g_assert_true(ple->passthrough);
  g_assert_cmpuint(ple->saved_extra_bytes, ==, 16 * 4 * 8 * 2);
  StwModelConfig back;
  round_trip(&c, "\"global_blocks\":[1,3],\"global_head_dim\":32,\"per_layer_input\":8,"
                 "\"per_layer_vocab\":64", &back);

  /* the last two blocks reuse the keys and values of earlier ones (no k or v, no key norm),
   * their MLP twice as wide; the global ones take their values from their keys, one key head */
  g_autofree char *shared_text = g_strdup_printf(
      small, ", \"num_kv_shared_layers\": 2, \"use_double_wide_mlp\": true, "
             "\"attention_k_eq_v\": true, \"num_global_key_value_heads\": 1");
  StwModelConfig sh;
  resolve_text(dir, shared_text, &sh);
  g_assert_true(!stw_model_block_kv_shared(&sh, 1) && stw_model_block_kv_shared(&sh, 2) &&
                sh.kv_shared_wide_mlp && sh.global_values_are_keys);
  g_assert_cmpuint(stw_model_block_kv_heads(&sh, 1), ==, 1);
  guint64 mlp = 3 * 64 * 96;
  guint64 b1 = 2 * 128 * 64 + 32 * 64 + 2 * 32 + rest;          /* global: k, no v */
  guint64 b2 = 2 * 64 * 64 + 16 + rest + mlp;                    /* sliding, shared */
  guint64 b3 = 2 * 128 * 64 + 32 + rest + mlp;                   /* global, shared */
  g_assert_cmpuint(stw_model_param_count(&sh), ==, outside + sliding + b1 + b2 + b3);
  g_assert_cmpuint(stw_model_param_count(&sh), ==, 183768); /* transformers' */
  round_trip(&sh, "\"global_kv_heads\":1,\"global_values_are_keys\":true,"
                  "\"kv_shared_blocks\":[2,3],\"kv_shared_wide_mlp\":true", &back);

  /* experts beside each block's MLP (the shared expert, ungated): the router 4 x 64 with its
   * scales (64 and 4), four experts 3 x 32 x 64, the three norms of the branches */
  g_autofree char *moe_text = g_strdup_printf(
      small, ", \"enable_moe_block\": true, \"num_experts\": 4, \"top_k_experts\": 2, "
             "\"moe_intermediate_size\": 32");
  StwModelConfig moe;
  resolve_text(dir, moe_text, &moe);
  g_assert_true(moe.experts_normed && moe.shared_expert_ungated);
  g_assert_cmpuint(moe.shared_expert_ffn, ==, 96);
  g_assert_cmpuint(stw_model_param_count(&moe), ==,
                   165384 + 4 * (4 * 64 + 64 + 4 + 4 * 3 * 32 * 64 + 3 * 64));
  g_assert_cmpuint(stw_model_param_count(&moe), ==, 265752); /* transformers' */
  round_trip(&moe, "\"experts_normed\":true", &back);

  static const Refusal cases[] = {
    { "{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 2, \"layer_types\": "
      "[\"sliding_attention\", \"attention\"]}",
      "$.layer_types: entry 1: expected \"sliding_attention\" or \"full_attention\"" },
    { "{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 4, \"num_kv_shared_layers\": 5}",
      "$.num_kv_shared_layers: 5 of 4 blocks: more than there are, not modelled" },
    { "{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 4, \"layer_types\": "
      "[\"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\"], "
      "\"num_kv_shared_layers\": 3}",
      "$.num_kv_shared_layers: 3: the blocks before them are not of every kind they are "
      "(sliding and full): transformers refuses it" },
    { "{\"model_type\": \"gemma4_text\", \"enable_moe_block\": true, \"num_experts\": 8}",
      "$.moe_intermediate_size: required (a number) with enable_moe_block" },
    { "{\"model_type\": \"gemma4_text\", \"enable_moe_block\": true, \"num_experts\": 1, "
      "\"moe_intermediate_size\": 64}",
      "$.num_experts: 1: one expert beside the MLP, with its router: not modelled" },
    { "{\"model_type\": \"gemma4_text\", \"per_layer_config\": {\"1\": {\"head_dim\": 32}}}",
      "$.per_layer_config: blocks with sizes of their own beyond the global ones: not "
      "modelled" },
    { "{\"model_type\": \"gemma4_text\", \"global_head_dim\": null}",
      "$.global_head_dim: null, where a gemma4_text config.json needs a whole number" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
}

/* Gemma 3n's language model: AltUp over copies of the stream, LAuReL beside attention,
 * per-layer embeddings, the last blocks reusing earlier keys and values; every count
 * transformers 5.24's */
static void
test_gemma3n(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-g3n-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"gemma3n_text\", \"num_hidden_layers\": 5, \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
      "\"intermediate_size\": %s, \"vocab_size\": 128, \"vocab_size_per_layer_input\": 100, "
      "\"hidden_size_per_layer_input\": 8, \"altup_num_inputs\": 3, \"laurel_rank\": 4, "
      "\"num_kv_shared_layers\": 2, \"layer_types\": [\"sliding_attention\", "
      "\"full_attention\", \"sliding_attention\", \"sliding_attention\", \"full_attention\"]}";
  g_autofree char *plain = g_strdup_printf(small, "96");
  StwModelConfig c;
  resolve_text(dir, plain, &c);
  g_assert_cmpuint(c.altup_inputs, ==, 3);
  g_assert_cmpuint(c.laurel_rank, ==, 4);
  for (guint64 l = 0; l < 5; l++) /* the full blocks as wide as the sliding ones */
    g_assert_true(!stw_model_block_global(&c, l) && stw_model_block_kv_shared(&c, l) == (l > 2));
  /* outside the blocks: the embeddings (tied), the per-layer table 100 x 5 x 8, its projection
   * 40 x 64 and norm 8, the final norm, AltUp's two projections in and two out (64 x 64); a
   * block: q and o 64 x 64, k and v 32 x 64, the query and key norms 16 each, four norms, the
   * MLP 3 x 64 x 96, the per-layer branch (8 x 64, 64 x 8, a norm 64), AltUp's router (a norm
   * 64, 3 x 64), its coefficients (9 x 3, 3 x 3) and scale 64, LAuReL's 4 x 64 and 64 x 4 and
   * norm 64; the last two without k, v and the key norm */
  guint64 outside = 128 * 64 + 100 * 40 + 40 * 64 + 8 + 64 + 4 * 64 * 64;
  guint64 block = 2 * 64 * 64 + 2 * 32 * 64 + 2 * 16 + 4 * 64 + 3 * 64 * 96 +
                  (2 * 8 * 64 + 64) + (64 + 3 * 64 + 27 + 9 + 64) + (2 * 4 * 64 + 64);
  guint64 shared = block - 2 * 32 * 64 - 16;
  g_assert_cmpuint(stw_model_param_count(&c), ==, outside + 3 * block + 2 * shared);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 188124); /* transformers' */
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "layers.0.altup."), ==, 64 + 3 * 64 + 27 + 9 + 64);
  g_assert_cmpuint(prefix_numel(g, "layers.4.laurel."), ==, 2 * 4 * 64 + 64);
  g_autofree char *ops = block_ops(g, 0);
  g_assert_cmpstr(ops, ==, "h0.altup.predict h0.ln_1 h0.laurel.left h0.laurel.right "
                           "h0.laurel.norm h0.attn.qkv h0.attn.qk_norm h0.attn.rope h0.attn.core "
                           "h0.attn.o_proj h0.attn.post_norm h0.ln_2 h0.mlp.gate_up "
                           "h0.mlp.swiglu h0.mlp.down h0.mlp.post_norm h0.altup.correct "
                           "h0.ple.gate h0.ple.act h0.ple.proj h0.ple.post_norm");
  /* the stream three copies wide: made after the per-layer inputs, read by each prediction,
   * written by each correction, merged back before the final norm */
  const StwGraphOp *in = g->ops->pdata[2], *predict = g->ops->pdata[3];
  g_assert_cmpstr(in->name, ==, "altup.in");
  g_assert_cmpuint(in->out_bytes, ==, 16 * 3 * 64 * 2);
  g_assert_cmpuint(predict->in_bytes, ==, 16 * 3 * 64 * 2);
  g_assert_cmpuint(predict->out_bytes, ==, 16 * 64 * 2);
  g_assert_cmpint(predict->kind, ==, STW_OP_ALTUP);
  StwModelConfig back;
  round_trip(&c, "\"altup_inputs\":3,\"laurel_rank\":4", &back);
  g_assert_true(back.altup_inputs == 3 && back.laurel_rank == 4);
  /* one width a block, all equal */
  g_autofree char *listed = g_strdup_printf(small, "[96, 96, 96, 96, 96]");
  StwModelConfig l;
  resolve_text(dir, listed, &l);
  g_assert_cmpuint(stw_model_param_count(&l), ==, 188124);
  /* the defaults: Gemma 3n E4B's language model */
  StwModelConfig e4b;
  resolve_text(dir, "{\"model_type\": \"gemma3n_text\"}", &e4b);
  g_assert_cmpuint(stw_model_param_count(&e4b), ==, G_GUINT64_CONSTANT(6835235568));
  guint64 sharing = 0;
  for (guint64 k = 0; k < e4b.layers; k++)
    sharing += stw_model_block_kv_shared(&e4b, k);
  g_assert_cmpuint(sharing, ==, 15);

  g_autofree char *uneven = g_strdup_printf(small, "[96, 96, 64, 96, 96]");
  g_autofree char *short_list = g_strdup_printf(small, "[96, 96]");
  const Refusal cases[] = {
    { uneven, "$.intermediate_size: entry 2 is 64 where entry 0 is 96: blocks that differ are "
              "not modelled" },
    { short_list, "$.intermediate_size: 2 entries for 5 blocks: one a block, or one number for "
                  "all (transformers refuses any other count)" },
    { "{\"model_type\": \"gemma3n_text\", \"altup_num_inputs\": 2, \"altup_active_idx\": 2}",
      "$.altup_active_idx: 2 of 2 copies: no such copy, not modelled" },
    { "{\"model_type\": \"gemma3n_text\", \"laurel_rank\": 0}",
      "$.laurel_rank: 0: not modelled (1 to hidden_size is; 0 leaves LAuReL its norm alone)" },
    { "{\"model_type\": \"gemma3n_text\", \"hidden_size_per_layer_input\": 0}",
      "$.hidden_size_per_layer_input: 0: not modelled" },
    { "{\"model_type\": \"gemma3n_text\", \"activation_sparsity_pattern\": [0.95]}",
      "$.activation_sparsity_pattern: expected null or a list of 35 numbers, one a block" },
    { "{\"model_type\": \"gemma3n_text\", \"final_logit_softcapping\": null}",
      "$.final_logit_softcapping: null, where a gemma3n_text config.json needs a number" },
    { "{\"model_type\": \"gemma3n_text\", \"num_kv_shared_layers\": 33}",
      "$.num_kv_shared_layers: 33: the blocks before them are not of every kind they are" },
    { "{\"model_type\": \"gemma3n_text\", \"num_hidden_layers\": 2, \"num_kv_shared_layers\": 0, "
      "\"activation_sparsity_pattern\": [0.5, \"x\"]}",
      "$.activation_sparsity_pattern: expected a number a block" },
    { "{\"model_type\": \"gemma3n_text\", \"altup_num_inputs\": 0}",
      "$.altup_num_inputs: 0: not modelled (1 to 64 copies of the stream are)" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
  /* the model format: AltUp and LAuReL are llama's, before-norm blocks' */
  StwModelConfig bad = c;
  bad.norms = STW_NORMS_POST;
  assert_invalid(&bad, "m.json: invalid model: altup_inputs and laurel_rank are "
                       "llama's, with norms before each part (pre or both: Gemma "
                       "3n's)");
  bad = c;
  bad.laurel_rank = 65;
  assert_invalid(&bad, "laurel_rank must be 1 to hidden");
  bad = c;
  bad.altup_inputs = 65;
  assert_invalid(&bad, "altup_inputs must be 1 to 64");
}

/* LongCat-Flash: layers of two blocks of latent attention and a dense MLP, experts and zero
 * experts beside the first one's; every count transformers 5.24's but for the gate_up rows its
 * class builds for the zero experts, which no checkpoint holds */
static void
test_longcat(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-lc-XXXXXX", NULL);
  StwModelConfig c;
  resolve_text(dir, "{\"model_type\": \"longcat_flash\", \"num_layers\": 2, \"hidden_size\": 64, "
                    "\"num_attention_heads\": 4, \"ffn_hidden_size\": 96, "
                    "\"expert_ffn_hidden_size\": 32, \"n_routed_experts\": 4, "
                    "\"zero_expert_num\": 2, \"moe_topk\": 3, \"kv_lora_rank\": 16, "
                    "\"q_lora_rank\": 24, \"qk_rope_head_dim\": 8, \"qk_nope_head_dim\": 8, "
                    "\"v_head_dim\": 16, \"vocab_size\": 128}",
               &c);
  g_assert_cmpuint(c.layers, ==, 4);
  for (guint64 l = 0; l < 4; l++)
    g_assert_cmpint(stw_model_block_dense(&c, l), ==, l % 2 == 1);
  g_assert_cmpuint(c.zero_experts, ==, 2);
  g_assert_cmpuint(stw_model_active_experts(&c), ==, 3);
  g_assert_cmpuint(stw_model_routed_experts(&c), ==, 2); /* 3 x 4 / 6 */
  /* outside the blocks: the embeddings, the head, the final norm; a block: latent attention
   * (q_a 24 x 64 and its norm, q_b 64 x 24, kv_a 24 x 64 and its norm 16, kv_b 96 x 16, o 64 x
   * 64), two norms, the MLP 3 x 64 x 96; the first of each layer's two also the router (4
   * experts and 2 zero experts: 6 x 64) and four experts 3 x 32 x 64 */
  guint64 block = (24 * 64 + 24 + 64 * 24 + 24 * 64 + 16 + 96 * 16 + 64 * 64) + 2 * 64 +
                  3 * 64 * 96;
  guint64 experts = 6 * 64 + 4 * 3 * 32 * 64;
  g_assert_cmpuint(stw_model_param_count(&c), ==, 2 * 128 * 64 + 64 + 4 * block + 2 * experts);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 181728);
  /* a token runs through two experts of the four: the other two's weights idle */
  g_assert_cmpuint(stw_model_active_param_count(&c), ==, 181728 - 2 * 2 * 3 * 32 * 64);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "layers.0.block_sparse_moe.gate."), ==, 6 * 64);
  for (guint i = 0; i < g->ops->len; i++) {
    const StwGraphOp *o = g->ops->pdata[i];
    if (strcmp(o->name, "h0.moe.router") == 0) /* every choice scored, zero experts too */
      g_assert_cmpuint(o->flops, ==, 2 * 16 * 64 * 6);
    if (strcmp(o->name, "h0.moe.w1_w3") == 0) /* two experts' gate and up, the MLP's */
      g_assert_cmpuint(o->flops, ==, 2 * 16 * (64 * 2 * 2 * 32 + 64 * 2 * 96));
  }
  StwModelConfig back;
  round_trip(&c, "\"experts_per_token\":3,\"zero_experts\":2", &back);
  g_assert_cmpuint(back.zero_experts, ==, 2);
  /* the defaults: LongCat-Flash's 560B, about 27B a token */
  StwModelConfig flash;
  resolve_text(dir, "{\"model_type\": \"longcat_flash\"}", &flash);
  g_assert_cmpuint(stw_model_param_count(&flash), ==, G_GUINT64_CONSTANT(560664958976));
  g_assert_cmpuint(stw_model_routed_experts(&flash), ==, 8);
  g_assert_cmpuint(stw_model_active_param_count(&flash), ==, G_GUINT64_CONSTANT(27954796544));

  static const Refusal cases[] = {
    { "{\"model_type\": \"longcat_flash\", \"num_hidden_layers\": 1}",
      "$.num_hidden_layers: 1: 0 layers of two blocks each: not modelled (1 to 2048 are)" },
    { "{\"model_type\": \"longcat_flash\", \"n_routed_experts\": 1}",
      "$.n_routed_experts: 1: not modelled (2 or more experts are)" },
    { "{\"model_type\": \"longcat_flash\", \"router_bias\": true}",
      "$.router_bias: true: a biased router is not modelled" },
    { "{\"model_type\": \"longcat_flash\", \"qk_head_dim\": 100}",
      "$.qk_head_dim: 100: queries apart from qk_nope_head_dim + qk_rope_head_dim (192) wide "
      "are not modelled" },
    { "{\"model_type\": \"longcat_flash\", \"q_lora_rank\": null}",
      "$.q_lora_rank: null, where a longcat_flash config.json needs a whole number" },
    { "{\"model_type\": \"longcat_flash\", \"moe_topk\": 800}",
      "experts_per_token must be at most experts (and zero_experts)" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
  StwModelConfig bad = c;
  bad.experts = 0;
  bad.experts_per_token = 0;
  memset(bad.dense_blocks, 0, sizeof bad.dense_blocks);
  bad.dense_ffn = 0;
  bad.shared_expert_ffn = 0;
  bad.shared_expert_ungated = FALSE;
  assert_invalid(&bad, "m.json: invalid model: zero_experts go with experts, at "
                       "most 1024");
}

/* Laguna: attention gated a head (or a channel) from the block's input, heads given a block,
 * a dense block then experts beside a shared MLP, the router's score correction a weight;
 * every count transformers 5.24's */
static void
test_laguna(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-lg-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"laguna\", \"num_hidden_layers\": 3, \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
      "\"intermediate_size\": 96, \"moe_intermediate_size\": 32, "
      "\"shared_expert_intermediate_size\": 48, \"num_experts\": 4, \"num_experts_per_tok\": 2, "
      "\"vocab_size\": 128%s}";
  g_autofree char *plain = g_strdup_printf(small, "");
  StwModelConfig c;
  resolve_text(dir, plain, &c);
  g_assert_true(c.attn_head_gate && !c.attn_gate && c.router_score_bias && c.qk_norm);
  g_assert_true(stw_model_block_dense(&c, 0) && !stw_model_block_dense(&c, 1));
  /* outside: the embeddings and the head (untied), the final norm; a block: q and o 64 x 64, k
   * and v 32 x 64, the query and key norms 16 each, the gate 4 x 64, two norms; the first the
   * MLP 3 x 64 x 96, the others the router 4 x 64 and its correction 4, four experts 3 x 32 x
   * 64 and the shared MLP 3 x 48 x 64 */
  guint64 attn = 2 * 64 * 64 + 2 * 32 * 64 + 2 * 16 + 4 * 64 + 2 * 64;
  guint64 moe = 4 * 64 + 4 + 4 * 3 * 32 * 64 + 3 * 48 * 64;
  g_assert_cmpuint(stw_model_param_count(&c), ==,
                   2 * 128 * 64 + 64 + 3 * attn + 3 * 64 * 96 + 2 * moe);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 141096); /* transformers' */
  /* gated a channel: q-wide */
  g_autofree char *channel = g_strdup_printf(small, ", \"gating\": \"per-channel\"");
  StwModelConfig ch;
  resolve_text(dir, channel, &ch);
  g_assert_true(ch.attn_gate && !ch.attn_head_gate);
  g_assert_cmpuint(stw_model_param_count(&ch), ==, 141096 + 3 * (64 - 4) * 64);
  /* heads a block, all equal */
  g_autofree char *wide = g_strdup_printf(small, ", \"num_attention_heads_per_layer\": [8, 8, 8]");
  StwModelConfig w;
  resolve_text(dir, wide, &w);
  g_assert_cmpuint(w.heads, ==, 8);
  g_assert_cmpuint(stw_model_param_count(&w), ==, 166440); /* transformers' */

  g_autofree char *uneven = g_strdup_printf(small, ", \"num_attention_heads_per_layer\": [4, 8, 4]");
  g_autofree char *two = g_strdup_printf(small, ", \"layer_types\": [\"full_attention\"]");
  const Refusal cases[] = {
    { uneven, "$.num_attention_heads_per_layer: entry 1 is 8 where entry 0 is 4: blocks that "
              "differ are not modelled" },
    { two, "$.layer_types: expected null or a list of 3, one a block (transformers refuses "
           "anything else)" },
    { "{\"model_type\": \"laguna\", \"moe_apply_router_weight_on_input\": true}",
      "$.moe_apply_router_weight_on_input: true: not run by its class" },
    { "{\"model_type\": \"laguna\", \"gating\": 3}", "$.gating: expected true or false" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
}

/* MiniMax-M3's language model: a block indexer in its sparse-attention blocks (queries and a
 * key from the block's input, normed a head; forward only, never trained), a dense block among
 * experts beside a shared MLP; every count transformers 5.24's */
static void
test_minimax_m3(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-mm3-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"minimax_m3_vl_text\", \"num_hidden_layers\": 3, \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
      "\"intermediate_size\": 32, \"dense_intermediate_size\": 96, "
      "\"shared_intermediate_size\": 48, \"num_local_experts\": 4, \"num_experts_per_tok\": 2, "
      "\"index_n_heads\": 2, \"index_head_dim\": 8, \"vocab_size\": 128%s}";
  g_autofree char *plain = g_strdup_printf(
      small, ", \"layer_types\": [\"full_attention\", \"minimax_m3_sparse\", \"full_attention\"], "
             "\"mlp_layer_types\": [\"dense\", \"sparse\", \"sparse\"]");
  StwModelConfig c;
  resolve_text(dir, plain, &c);
  g_assert_cmpuint(c.index_heads, ==, 2);
  for (guint64 l = 0; l < 3; l++)
    g_assert_cmpint(stw_model_block_indexed(&c, l), ==, l == 1);
  /* outside: the embeddings and the head, the final norm; a block: q and o 64 x 64, k and v 32
   * x 64, the query and key norms 16 each, two norms; the first the MLP 3 x 64 x 96, the others
   * the router 4 x 64, four experts 3 x 32 x 64 and the shared MLP 3 x 48 x 64; the sparse one
   * its indexer's queries 16 x 64, key 8 x 64 and their norms 8 each */
  guint64 attn = 2 * 64 * 64 + 2 * 32 * 64 + 2 * 16 + 2 * 64;
  guint64 moe = 4 * 64 + 4 * 3 * 32 * 64 + 3 * 48 * 64, indexer = 16 * 64 + 8 * 64 + 2 * 8;
  g_assert_cmpuint(stw_model_param_count(&c), ==,
                   2 * 128 * 64 + 64 + 3 * attn + 3 * 64 * 96 + 2 * moe + indexer);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 141872); /* transformers' */
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 2, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "layers.1.self_attn.indexer."), ==, indexer);
  g_assert_cmpuint(prefix_numel(g, "layers.0.self_attn.indexer."), ==, 0);
  g_autofree char *ops = block_ops(g, 1);
  g_assert_nonnull(strstr(ops, "h1.attn.qkv h1.attn.indexer h1.attn.qk_norm"));
  for (guint i = 0; i < g->ops->len; i++) {
    const StwGraphOp *o = g->ops->pdata[i];
    if (strcmp(o->name, "h1.attn.indexer") != 0)
      continue;
    g_assert_true(o->no_grad && o->passthrough);
    /* its projections and norms, and every query's score of every key a head */
    g_assert_cmpuint(o->flops, ==, 2 * 32 * 64 * (16 + 8) + 4 * 32 * 3 * 8 + 2 * 2 * 16 * 16 * 2 * 8);
    /* fp32 queries and key, fp32 scores a head, the attention's mask a head in bf16 */
    g_assert_cmpuint(o->work_bytes, ==, 32 * 3 * 8 * 4 + 2 * 16 * 16 * 2 * 4 + 2 * 16 * 16 * 4 * 2);
  }
  /* LoRA's q and k reach the indexer's q_proj and k_proj too, as peft's target_modules do (its
   * counts, peft 0.21's; no gradient reaches them) */
  g_assert_cmpuint(lora_params(&c, "q,v"), ==, 3008);
  g_assert_cmpuint(lora_params(&c, "q,k,v,o"), ==, 5984);
  StwModelConfig back;
  round_trip(&c, "\"unindexed_blocks\":[0,2]", &back);
  g_assert_true(!stw_model_block_indexed(&back, 0) && stw_model_block_indexed(&back, 1));
  /* the legacy forms: sparse_attention_config's flags and sizes, moe_layer_freq */
  g_autofree char *legacy = g_strdup_printf(
      small, ", \"sparse_attention_config\": {\"sparse_attention_freq\": [0, 1, 0], "
             "\"sparse_num_index_heads\": 2, \"sparse_index_dim\": 8}, "
             "\"moe_layer_freq\": [0, 1, 1]");
  StwModelConfig old;
  resolve_text(dir, legacy, &old);
  g_assert_cmpuint(stw_model_param_count(&old), ==, 141872);
  /* no sparse block: no indexer at all */
  g_autofree char *full = g_strdup_printf(small, "");
  StwModelConfig f;
  resolve_text(dir, full, &f);
  g_assert_cmpuint(f.index_heads, ==, 0);
  g_assert_cmpuint(stw_model_param_count(&f), ==, 2 * 128 * 64 + 64 + 3 * attn + 3 * moe);
  g_assert_cmpuint(stw_model_param_count(&f), ==, 155936); /* transformers' (all sparse MLPs) */

  g_autofree char *wrong = g_strdup_printf(
      small, ", \"layer_types\": [\"full_attention\", \"sparse\", \"full_attention\"]");
  g_autofree char *few = g_strdup_printf(small, ", \"mlp_layer_types\": [\"dense\"]");
  const Refusal cases[] = {
    { wrong, "$.layer_types: entry 1: expected \"full_attention\" or \"minimax_m3_sparse\"" },
    { few, "$.mlp_layer_types: expected a list of 3, one a block (transformers requires one a "
           "block)" },
    { "{\"model_type\": \"minimax_m3_vl_text\", \"sparse_attention_config\": 3}",
      "$.sparse_attention_config: expected an object" },
    { "{\"model_type\": \"minimax_m3_vl_text\", \"dense_intermediate_size\": null}",
      "$.dense_intermediate_size: null, where a minimax_m3_vl_text config.json needs a whole "
      "number" },
    { "{\"model_type\": \"minimax_m3_vl_text\", \"num_hidden_layers\": 2, "
      "\"moe_layer_freq\": [1, \"yes\"]}",
      "$.moe_layer_freq: entry 1: expected a flag (true, false, 1 or 0)" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
  StwModelConfig bad = f;
  stw_model_set_block_indexed(&bad, 1, FALSE);
  assert_invalid(&bad, "m.json: invalid model: unindexed_blocks go with index_heads, "
                       "blocks below layers");
  bad = c;
  bad.diff_attn = TRUE;
  assert_invalid(&bad, "m.json: invalid model: an indexer (index_heads) is llama's, "
                       "not differential attention's");
}

/* A multimodal file whose causal language model is its text_config's alone (Qwen3.5's, Llama
 * 4's): read as that language model, as AutoModelForCausalLM builds it; its errors under
 * $.text_config */
static void
test_language_model_of_multimodal(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-mm-XXXXXX", NULL);
  static const char inner[] =
      "\"num_hidden_layers\": 4, \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 2, \"head_dim\": 16, \"intermediate_size\": 96, "
      "\"vocab_size\": 128, \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4, "
      "\"linear_key_head_dim\": 8, \"linear_value_head_dim\": 16, "
      "\"linear_conv_kernel_dim\": 3, \"full_attention_interval\": 2";
  g_autofree char *text_only = g_strdup_printf("{\"model_type\": \"qwen3_5_text\", %s}", inner);
  g_autofree char *wrapped = g_strdup_printf(
      "{\"model_type\": \"qwen3_5\", \"tie_word_embeddings\": true, \"_name_or_path\": "
      "\"Qwen/Qwen3.5-Tiny\", \"vision_config\": {\"depth\": 2}, \"text_config\": {%s}}", inner);
  StwModelConfig a, b;
  resolve_text(dir, text_only, &a);
  resolve_text(dir, wrapped, &b);
  g_assert_cmpuint(stw_model_param_count(&b), ==, stw_model_param_count(&a));
  g_assert_cmpuint(stw_model_param_count(&b), ==, 153840); /* transformers' causal LM */
  g_assert_false(b.tied); /* the outer file's tie is not the language model's */
  g_assert_cmpstr(b.name, ==, "Qwen3.5-Tiny");
  StwModelConfig scout;
  resolve_text(dir, "{\"model_type\": \"llama4\"}", &scout);
  g_assert_cmpuint(stw_model_param_count(&scout), ==, G_GUINT64_CONSTANT(107769861120));

  static const Refusal cases[] = {
    { "{\"model_type\": \"qwen3_5\", \"text_config\": {\"num_hidden_layers\": \"4\"}}",
      "$.text_config.num_hidden_layers: expected an integer, found a string" },
    { "{\"model_type\": \"qwen3_5_moe\", \"text_config\": {\"model_type\": \"qwen3_5_text\"}}",
      "$.text_config.model_type: expected \"qwen3_5_moe_text\", this file's language model" },
    { "{\"model_type\": \"llama4\", \"text_config\": [1]}",
      "$.text_config: expected an object: the language model's config" },
    { "{\"model_type\": \"gemma3\", \"vision_config\": 3}",
      "$.vision_config: expected an object: the vision tower's config (null: its defaults)" },
    { "{\"model_type\": \"gemma3\", \"vision_config\": {\"model_type\": \"clip_vision_model\"}}",
      "$.vision_config.model_type: expected \"siglip_vision_model\" (Gemma 3's checkpoints' "
      "SigLIP): another vision tower is not modelled" },
    { "{\"model_type\": \"gemma3\", \"vision_config\": {\"num_attention_heads\": 5}}",
      "$.vision_config.num_attention_heads: 5 heads do not divide hidden_size 768 (SigLIP's "
      "attention refuses it)" },
    { "{\"model_type\": \"gemma3\", \"vision_config\": {\"patch_size\": 300}}",
      "$.vision_config.patch_size: 300 is larger than image_size 224: no whole patch in the "
      "image; not modelled" },
    { "{\"model_type\": \"gemma3\", \"vision_config\": {\"num_hidden_layers\": 0}}",
      "$.vision_config.num_hidden_layers: 0 is out of range (expected 1 to 4096)" },
    { "{\"model_type\": \"gemma3\", \"text_config\": {\"hidden_size\": \"x\"}}",
      "$.text_config.hidden_size: expected an integer, found a string" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
}

/* Gemma 4's multimodal file, which AutoModelForCausalLM builds whole: its language model with
 * Gemma 4's vision and audio towers beside it (each optional) and their embedders, read by no
 * op of a text step; LoRA adapts the language model alone (peft refuses the towers' clippable
 * linears by name: a user's target_modules reach the language model's alone). Every count
 * transformers 5.24's and peft 0.21's. */
static void
test_gemma4_multimodal(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-g4-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"gemma4\", \"text_config\": {\"model_type\": \"gemma4_text\", "
      "\"num_hidden_layers\": 2, \"hidden_size\": 64, \"intermediate_size\": 96, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
      "\"global_head_dim\": 16, \"vocab_size\": 128, \"vocab_size_per_layer_input\": 128, "
      "\"hidden_size_per_layer_input\": 4}, \"vision_config\": {\"model_type\": "
      "\"gemma4_vision\", \"num_hidden_layers\": 1, \"hidden_size\": 32, \"intermediate_size\": "
      "48, \"num_attention_heads\": 2, \"num_key_value_heads\": 2, \"head_dim\": 16, "
      "\"position_embedding_size\": 64}, \"audio_config\": {\"model_type\": \"gemma4_audio\", "
      "\"num_hidden_layers\": 1, \"hidden_size\": 32, \"num_attention_heads\": 2, "
      "\"output_proj_dims\": 48}}";
  StwModelConfig c;
  resolve_text(dir, small, &c);
  g_assert_cmpint(c.vision_kind, ==, STW_VISION_GEMMA4);
  g_assert_cmpuint(c.audio_conv, ==, 128);
  /* the vision tower: positions 2 x 64 x 32, patches 32 x 768, a block of 4 x 32 x 32
   * projections, two head norms, 3 x 32 x 48 of MLP and four norms; its embedder 64 x 32 */
  guint64 vision = 2 * 64 * 32 + 32 * 768 + 4 * 32 * 32 + 2 * 16 + 3 * 32 * 48 + 4 * 32 + 64 * 32;
  /* the audio tower: convolutions 128 x 9 and 32 x 128 x 9, their norms, a projection of 32 x
   * 32 x 32; a block of two feed-forwards (2 x 4 x 32 x 32 and two norms each), attention
   * (5 x 32 x 32, a scale of 16), the light convolution (3 x 32 x 32, 32 x 5, two norms) and
   * three norms; the output 48 x 32 and its bias; its embedder 64 x 48 */
  guint64 audio = 128 * 9 + 128 + 32 * 128 * 9 + 32 + 32 * 32 * 32 +
                  2 * (2 * 4 * 32 * 32 + 2 * 32) + 5 * 32 * 32 + 16 + 3 * 32 * 32 + 32 * 5 +
                  2 * 32 + 3 * 32 + 48 * 32 + 48 + 64 * 48;
  g_assert_cmpuint(stw_model_tower_param_count(&c), ==, vision + audio);
  g_assert_cmpuint(vision + audio, ==, 140224);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 213188);
  g_assert_cmpuint(stw_model_active_param_count(&c), ==, 213188 - 140224);
  g_assert_cmpuint(stw_model_data_bytes(&c), ==, (213188 - 140224) * 14 + 140224 * 2);
  g_assert_cmpuint(lora_params(&c, "q,v"), ==, 1792);
  StwModelConfig back;
  round_trip(&c, "\"vision_kind\":\"gemma4\"", &back);
  g_assert_cmpuint(back.audio_output, ==, 48);
  g_assert_cmpuint(back.vision_positions, ==, 64);
  /* without towers (Gemma4Config's defaults), and both towers' defaults */
  resolve_text(dir, "{\"model_type\": \"gemma4\"}", &back);
  g_assert_cmpuint(stw_model_param_count(&back), ==, G_GUINT64_CONSTANT(5077177856));
  g_assert_cmpuint(back.vision_layers + back.audio_layers, ==, 0);
  resolve_text(dir, "{\"model_type\": \"gemma4\", \"vision_config\": {}, \"audio_config\": {}}",
               &back);
  g_assert_cmpuint(stw_model_param_count(&back), ==, G_GUINT64_CONSTANT(5554675488));

  StwModelConfig bad = c;
  bad.vision_positions = 0;
  assert_invalid(&bad, "Gemma 4's tower (vision_kind gemma4) needs vision_positions");
  bad = c;
  bad.vision_kv_heads = 0;
  assert_invalid(&bad, "Gemma 4's tower (vision_kind gemma4) needs vision_heads, "
                       "vision_kv_heads and vision_head_dim");
  bad = c;
  bad.vision_image = 224;
  assert_invalid(&bad, "vision_image: not Gemma 4's tower's (vision_kind gemma4)");
  bad = c;
  bad.vision_channels = 3;
  assert_invalid(&bad, "vision_channels: not Gemma 4's tower's (vision_kind gemma4)");
  bad = c;
  bad.audio_conv = 3;
  assert_invalid(&bad, "audio_conv must be at least 4");
  bad = c;
  bad.audio_heads = 33;
  assert_invalid(&bad, "audio_heads must be at most audio_hidden");
  bad = c;
  bad.audio_layers = 0;
  assert_invalid(&bad, "the audio tower's members go with audio_layers");
  bad = c;
  bad.audio_kernel = 0;
  assert_invalid(&bad, "an audio tower needs audio_hidden, audio_heads, audio_conv, "
                       "audio_conv2, audio_kernel and audio_output");
  bad = c;
  bad.vision_kind = STW_N_VISION_KINDS;
  assert_invalid(&bad, "an unknown vision_kind");

  static const Refusal cases[] = {
    { "{\"model_type\": \"gemma4\", \"audio_config\": \"x\"}",
      "$.audio_config: expected an object: the audio tower's config (null: no such tower)" },
    { "{\"model_type\": \"gemma4\", \"vision_config\": {\"model_type\": \"siglip_vision_model\"}}",
      "$.vision_config.model_type: expected \"gemma4_vision\" (Gemma 4's): another vision tower "
      "is not modelled" },
    { "{\"model_type\": \"gemma4\", \"audio_config\": {\"subsampling_conv_channels\": [8]}}",
      "$.audio_config.subsampling_conv_channels: expected a list of two whole numbers: the two "
      "convolutions' channels" },
    { "{\"model_type\": \"gemma4\", \"audio_config\": {\"subsampling_conv_channels\": [8, 0]}}",
      "$.audio_config.subsampling_conv_channels[1]: 0 is out of range (expected 1 to 1048576)" },
    { "{\"model_type\": \"gemma4\", \"audio_config\": {\"subsampling_conv_channels\": [2, 8]}}",
      "$.audio_config.subsampling_conv_channels: 2 channels first: the projection after the "
      "convolutions reads a quarter of them, none; not modelled" },
    { "{\"model_type\": \"gemma4\", \"audio_config\": {\"num_attention_heads\": 2000}}",
      "$.audio_config.num_attention_heads: 2000 heads for hidden_size 1024: heads of no width; "
      "not modelled" },
    { "{\"model_type\": \"gemma4\", \"vision_config\": {\"head_dim\": null}}",
      "$.vision_config.head_dim: null, where a gemma4_vision config.json needs a whole number" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
}

/* Mistral 3's multimodal file, read whole as AutoModelForImageTextToText builds it (its
 * AutoModelForCausalLM builds none): Pixtral's tower and Mistral 3's projector beside the
 * language model; LoRA reaches the tower's projections by name, as peft does (its counts,
 * peft 0.21's) */
static void
test_mistral3_multimodal(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-m3-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"mistral3\", \"text_config\": {\"model_type\": \"mistral\", "
      "\"num_hidden_layers\": 2, \"hidden_size\": 64, \"num_attention_heads\": 8, "
      "\"num_key_value_heads\": 2, \"intermediate_size\": 128, \"vocab_size\": 128, "
      "\"head_dim\": 8}, \"vision_config\": {\"model_type\": \"pixtral\", \"hidden_size\": 32, "
      "\"intermediate_size\": 48, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
      "\"patch_size\": 4, \"image_size\": 16, \"head_dim\": 8}%s}";
  g_autofree char *text = g_strdup_printf(small, "");
  StwModelConfig c;
  resolve_text(dir, text, &c);
  g_assert_cmpint(c.vision_kind, ==, STW_VISION_PIXTRAL);
  g_assert_true(c.tied); /* Mistral3Config's default */
  /* the tower: patches 32 x 3 x 16, a norm, two blocks of two norms, 3 x 32 x 48 of MLP and
   * 4 x 32 x 32 of attention; the projector: a norm, the merger 32 x 4 x 32, 64 x 32, 64 x 64 */
  guint64 tower = 32 * 48 + 32 + 2 * (2 * 32 + 3 * 32 * 48 + 4 * 32 * 32) + 32 + 32 * 128 +
                  64 * 32 + 64 * 64;
  g_assert_cmpuint(stw_model_tower_param_count(&c), ==, tower);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 107520);
  g_assert_cmpuint(lora_params(&c, "q,v"), ==, 2688);
  g_assert_cmpuint(lora_params(&c, "q,k,v,o,gate,up,down"), ==, 11904);
  g_assert_cmpuint(lora_params(&c, "down"), ==, 2176);
  StwModelConfig back;
  round_trip(&c, "\"vision_kind\":\"pixtral\"", &back);
  g_assert_cmpuint(back.vision_merge, ==, 2);
  /* the projector's members at the file's top level */
  g_autofree char *wide = g_strdup_printf(small, ", \"spatial_merge_size\": 3, "
                                          "\"vision_feature_layer\": [-1, -2], "
                                          "\"multimodal_projector_bias\": true, "
                                          "\"tie_word_embeddings\": false");
  resolve_text(dir, wide, &back);
  g_assert_cmpuint(stw_model_param_count(&back), ==,
                   107520 + 32 * 5 * 32 + 64 * 32 + 2 * 64 + 128 * 64);
  /* no text_config: Mistral3Config's own Mistral (Mistral Small 3.1's), its tower Pixtral at
   * patches of 14 */
  resolve_text(dir, "{\"model_type\": \"mistral3\", \"text_config\": null}", &back);
  g_assert_cmpuint(back.hidden, ==, 5120);
  g_assert_cmpuint(back.vision_patch, ==, 14);
  g_assert_cmpuint(stw_model_param_count(&back), ==, G_GUINT64_CONSTANT(23340272640));

  StwModelConfig bad = c;
  bad.vision_merge = 0;
  assert_invalid(&bad, "Pixtral's tower (vision_kind pixtral) needs vision_merge");
  bad = c;
  bad.vision_kind = STW_VISION_SIGLIP; /* (Gemma 3's projector reads vision_merge: its pooling) */
  assert_invalid(&bad, "vision_feature_layers: not SigLIP's tower's (vision_kind siglip)");
  static const Refusal cases[] = {
    { "{\"model_type\": \"mistral3\", \"vision_config\": {\"model_type\": \"siglip_vision_model\"}}",
      "$.vision_config.model_type: expected \"pixtral\" (Mistral 3's checkpoints' Pixtral): "
      "another vision tower is not modelled" },
    { "{\"model_type\": \"mistral3\", \"vision_feature_layer\": \"last\"}",
      "$.vision_feature_layer: expected a layer's index or a list of them" },
    { "{\"model_type\": \"mistral3\", \"spatial_merge_size\": 0}",
      "$.spatial_merge_size: 0 is out of range (expected 1 to 1024)" },
    { "{\"model_type\": \"mistral3\", \"text_config\": {\"model_type\": \"llama\"}}",
      "$.text_config.model_type: expected \"mistral\", this file's language model" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
}

/* LLaVA's file, read whole as AutoModelForImageTextToText builds it: CLIP's tower and LLaVA's
 * projector beside a language model of any type stowage reads (a Llama where the file names
 * none); LoRA reaches the tower's q, k and v as peft does (its counts, peft 0.21's) */
static void
test_llava_multimodal(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-lv-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"llava\", \"text_config\": {%s\"num_hidden_layers\": 2, "
      "\"hidden_size\": 64, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
      "\"intermediate_size\": 96, \"vocab_size\": 128}, \"vision_config\": {\"model_type\": "
      "\"clip_vision_model\", \"hidden_size\": 32, \"intermediate_size\": 48, "
      "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"patch_size\": 4, "
      "\"image_size\": 16}%s}";
  g_autofree char *text = g_strdup_printf(small, "\"model_type\": \"llama\", ", "");
  StwModelConfig c;
  resolve_text(dir, text, &c);
  g_assert_cmpint(c.vision_kind, ==, STW_VISION_CLIP);
  g_assert_false(c.tied); /* LlavaConfig's default */
  g_assert_true(c.vision_projector_bias);
  /* the tower: a class embedding, patches 32 x 48, 17 positions, two LayerNorms around two
   * blocks of 8,416; the projector 64 x 32 and 64 x 64, biased */
  guint64 tower = 32 + 32 * 48 + 17 * 32 + 2 * 64 +
                  2 * (4 * (32 * 32 + 32) + 4 * 32 + 32 * 48 + 48 + 48 * 32 + 32) + 64 * 32 +
                  64 + 64 * 64 + 64;
  g_assert_cmpuint(stw_model_tower_param_count(&c), ==, tower);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 101664);
  g_assert_cmpuint(lora_params(&c, "q,v"), ==, 2816);
  g_assert_cmpuint(lora_params(&c, "q,k,v,o,gate,up,down"), ==, 8960);
  g_assert_cmpuint(lora_params(&c, "down"), ==, 1280);
  StwModelConfig back;
  round_trip(&c, "\"vision_kind\":\"clip\"", &back);
  g_assert_cmpuint(back.vision_image, ==, 16);
  /* any language model inside; none named: a Llama */
  g_autofree char *qwen = g_strdup_printf(small, "\"model_type\": \"qwen2\", ", "");
  resolve_text(dir, qwen, &back);
  g_assert_cmpuint(stw_model_param_count(&back), ==, 101664 + 2 * (64 + 32 + 32)); /* biases */
  g_autofree char *untyped = g_strdup_printf(small, "", ", \"vision_feature_layer\": [-1, -2]");
  resolve_text(dir, untyped, &back);
  g_assert_cmpuint(stw_model_param_count(&back), ==, 101664 + 64 * 32);

  StwModelConfig bad = c;
  bad.vision_image = 0;
  assert_invalid(&bad, "CLIP's tower (vision_kind clip) needs vision_image");
  static const Refusal cases[] = {
    { "{\"model_type\": \"llava\", \"text_config\": {\"model_type\": \"gemma3\"}}",
      "$.text_config.model_type: expected a language model's type (\"llama\" where absent), not a "
      "multimodal model's" },
    { "{\"model_type\": \"llava\", \"vision_config\": {\"model_type\": \"gemma4_vision\"}}",
      "$.vision_config.model_type: expected \"clip_vision_model\", \"siglip_vision_model\" or "
      "\"pixtral\" (the vision towers this class is read with): another vision tower is not "
      "modelled" },
    { "{\"model_type\": \"paligemma\", \"projection_dim\": 0}",
      "$.projection_dim: 0 is out of range" },
    { "{\"model_type\": \"internvl\", \"vision_config\": {\"image_size\": [448, 224]}}",
      "$.vision_config.image_size: 448 x 224: not square; not modelled" },
    { "{\"model_type\": \"internvl\", \"vision_config\": {\"norm_type\": \"batch_norm\"}}",
      "$.vision_config.norm_type: expected \"layer_norm\" or \"rms_norm\"" },
    { "{\"model_type\": \"internvl\", \"vision_config\": {\"use_mask_token\": true}}",
      "$.vision_config.use_mask_token: true: InternViT with a mask token; not modelled" },
    { "{\"model_type\": \"internvl\", \"downsample_ratio\": 2}",
      "$.downsample_ratio: 2: a pixel shuffle of no patches a side; not modelled (1/1024 to 1)" },
    { "{\"model_type\": \"internvl\", \"downsample_ratio\": \"half\"}",
      "$.downsample_ratio: expected a number" },
    { "{\"model_type\": \"internvl\", \"vision_config\": {\"patch_size\": [14, 14, 14]}}",
      "$.vision_config.patch_size: expected a whole number or a list of two" },
    { "{\"model_type\": \"internvl\", \"vision_config\": "
      "{\"use_absolute_position_embeddings\": false}}",
      "$.vision_config.use_absolute_position_embeddings: false: InternViT without its position "
      "table; not modelled" },
    { "{\"model_type\": \"aya_vision\", \"vision_config\": {}, "
      "\"alignment_intermediate_size\": 1}",
      "$.alignment_intermediate_size: 1: a SwiGLU of no width; not modelled" },
    { "{\"model_type\": \"llava\", \"vision_config\": {\"num_attention_heads\": 7}}",
      "$.vision_config.num_attention_heads: 7 heads do not divide hidden_size 768 (CLIP's "
      "attention refuses it)" },
    { "{\"model_type\": \"llava\", \"vision_feature_layer\": []}",
      "$.vision_feature_layer: an empty list: a projector of no features; not modelled" },
    { "{\"model_type\": \"llava\", \"multimodal_projector_bias\": 1}",
      "$.multimodal_projector_bias: expected true or false" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
}

/* The FLOPs of GRAPH's image ops, and how many there are; *NORMS: their norms' share. */
static guint64
image_flops(const StwModelGraph *g, guint *n, guint64 *norms)
{
  guint64 flops = 0;
  *n = 0;
  *norms = 0;
  for (guint i = 0; i < g->ops->len; i++) {
    const StwGraphOp *o = g->ops->pdata[i];
    if (!o->image)
      continue;
    g_assert_true(o->no_grad);
    g_assert_cmpuint(i, ==, *n); /* before every op of the language model */
    flops += o->flops;
    *norms += o->kind == STW_OP_NORM_ATTN ? o->flops : 0;
    (*n)++;
  }
  return flops;
}

/* Images through a vision tower (stw_model_graph_add_images): what an image becomes, one op per
 * matmul at the rows it is applied to, each block's attention (Qwen2.5-VL's in windows), the
 * pixels held, and the images refused (python/tests/test_images.py holds the FLOPs of every
 * family to torch's FlopCounterMode over transformers' own modules) */
static void
test_images(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-img-XXXXXX", NULL);
  StwModelConfig c;
  resolve_text(dir,
               "{\"model_type\": \"qwen2_5_vl\", \"text_config\": {\"model_type\": "
               "\"qwen2_5_vl_text\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
               "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
               "\"intermediate_size\": 96, \"vocab_size\": 128}, \"vision_config\": "
               "{\"depth\": 2, \"hidden_size\": 32, \"intermediate_size\": 40, "
               "\"out_hidden_size\": 64, \"num_heads\": 2, \"patch_size\": 4, "
               "\"window_size\": 16, \"fullatt_block_indexes\": [1, 7]}}",
               &c);
  g_assert_cmpuint(c.vision_window, ==, 16);
  g_assert_true(stw_model_vision_full_block(&c, 1));
  g_assert_false(stw_model_vision_full_block(&c, 0)); /* (7: past the tower's 2 blocks) */
  g_assert_cmpuint(stw_model_image_size(&c), ==, 0);
  StwImageTokens tok;
  g_assert_true(stw_model_image_tokens(&c, 48, &tok, NULL));
  g_assert_cmpuint(tok.side, ==, 12);
  g_assert_cmpuint(tok.patches, ==, 144);
  g_assert_cmpuint(tok.tower, ==, 144);
  g_assert_cmpuint(tok.merged, ==, 36);
  /* two sequences of one image each: patches 2 x 144 rows of 3 x 2 x 16 to 32; a block's q, k
   * and v 32 to 96, its output 32 to 32, its gated MLP 40 wide; the merger 128 to 128 and to
   * 64 at 2 x 36 merged rows */
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 2, 64, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  guint64 io = g->io_bytes;
  g_assert_true(stw_model_graph_add_images(g, 1, 48, STW_VISION_TRAINED_NONE, NULL));
  g_assert_cmpuint(g->io_bytes - io, ==, 2 * 3 * 2 * 48 * 48 * 4); /* fp32, two frames */
  double rows = 288, merged = 72;
  double block = 2 * rows * (96 * 32 + 32 * 32 + 3 * 40 * 32);
  /* block 0 attends within windows of 2 x 2 merged patches (16 patches), 9 of them an image;
   * block 1 over the whole image */
  double windowed = 2 * 4 * 32 * 9.0 * 16 * 16, whole = 2 * 4 * 32 * 144.0 * 144;
  double expected = 2 * rows * (3 * 2 * 16 * 32) + 2 * block + windowed + whole +
                    2 * merged * (128 * 128 + 64 * 128);
  guint n = 0;
  guint64 norms = 0, flops = image_flops(g, &n, &norms);
  g_assert_cmpuint(flops - norms, ==, (guint64)expected);
  g_assert_cmpuint(norms, ==, 4 * 32 * 288 * 5); /* RMSNorms: 2 a block, the merger's */
  /* the patch embedding, 2 x (2 norms, 5 projections, the attention), the merger's norm and
   * its 2 projections, the merge */
  g_assert_cmpuint(n, ==, 1 + 2 * 8 + 3 + 1);
  const StwGraphOp *first = g->ops->pdata[0], *merge = g->ops->pdata[n - 1];
  g_assert_cmpstr(first->name, ==, "visual.patch_embed.proj");
  g_assert_true(first->passthrough); /* the pixels stay */
  g_assert_cmpstr(merge->name, ==, "image_features.merge");
  g_assert_cmpuint(merge->out_bytes, ==, 0);
  g_assert_cmpuint(merge->in_bytes, ==, 72 * 64 * 2); /* the features, into the embeddings */

  for (guint i = 0; i < n; i++) /* the tower and projector frozen: forward only */
    g_assert_true(((StwGraphOp *)g->ops->pdata[i])->no_grad);

  /* the projector trained: its ops (and the merge) differentiated and keeping their inputs, the
   * first of them computing no gradient for the frozen tower's output; all trained: the patch
   * embedding first, reading the pixels */
  static const StwVisionTrained trained[] = { STW_VISION_TRAINED_PROJECTOR,
                                              STW_VISION_TRAINED_ALL };
  for (gsize k = 0; k < G_N_ELEMENTS(trained); k++) {
    g_autoptr(StwModelGraph) t = stw_model_graph_new(&c, 2, 64, STW_DTYPE_BF16,
                                                     STW_ATTENTION_FLASH);
    g_assert_true(stw_model_graph_add_images(t, 1, 48, trained[k], NULL));
    guint differentiated = 0, lowest = G_MAXUINT;
    for (guint i = 0; i < n; i++) {
      const StwGraphOp *o = t->ops->pdata[i];
      gboolean in_projector = i >= n - 4; /* the merger's norm and projections, the merge */
      g_assert_cmpint(o->no_grad, ==, trained[k] == STW_VISION_TRAINED_PROJECTOR &&
                                          !in_projector);
      if (!o->no_grad) {
        differentiated++;
        lowest = MIN(lowest, i);
        g_assert_cmpint(o->no_input_grad, ==, i == lowest);
        g_assert_cmpint(o->saves_input, ==, i != n - 1);
      }
    }
    g_assert_cmpuint(differentiated, ==, k == 0 ? 4 : n);
    g_assert_cmpuint(lowest, ==, k == 0 ? n - 4 : 0);
  }

  /* refused: a side that is not whole merged patches, more tokens than the sequence, Llama 3.2
   * Vision's cross-attention, a text model */
  GError *error = NULL;
  g_assert_false(stw_model_image_tokens(&c, 50, &tok, &error));
  g_assert_nonnull(strstr(error->message, "an image side of 50 pixels is not a whole number of "
                                          "8-pixel merged patches"));
  g_clear_error(&error);
  g_assert_false(stw_model_graph_add_images(g, 2, 48, STW_VISION_TRAINED_NONE, &error));
  g_assert_nonnull(strstr(error->message, "2 images of 48 x 48 pixels are 72 tokens of features "
                                          "(36 an image), more than a sequence of 64 holds"));
  g_clear_error(&error);
  /* an image of 16384 x 16384 pixels: 4096^2 patches, whose attention is 2^55 FLOPs */
  g_autoptr(StwModelGraph) huge = stw_model_graph_new(&c, 1, 1u << 23, STW_DTYPE_BF16,
                                                      STW_ATTENTION_FLASH);
  g_assert_false(stw_model_graph_add_images(huge, 1, 16384, STW_VISION_TRAINED_NONE, &error));
  g_assert_nonnull(strstr(error->message, "need more FLOPs or tokens than a trace counts "
                                          "exactly"));
  g_clear_error(&error);
  StwModelConfig text;
  g_assert_true(stw_zoo_lookup("gpt2", &text, NULL));
  g_assert_false(stw_model_image_tokens(&text, 224, &tok, &error));
  g_assert_nonnull(strstr(error->message, "gpt2 has no vision tower to take images"));
  g_clear_error(&error);
  g_assert_false(stw_model_image_tokens(&c, 0, &tok, &error));
  g_assert_nonnull(strstr(error->message, "an image side of 0 pixels is out of range (expected 1 "
                                          "to 16384)"));
  g_clear_error(&error);
  /* Gemma 3's class defaults: SigLIP's 14 x 14 patches, fewer than the 16 x 16 tokens its
   * projector pools to (transformers builds it, and cannot run an image through it) */
  StwModelConfig gemma3;
  resolve_text(dir, "{\"model_type\": \"gemma3\"}", &gemma3);
  g_assert_cmpuint(gemma3.vision_merge, ==, 0);
  g_assert_false(stw_model_image_tokens(&gemma3, 224, &tok, &error));
  g_assert_nonnull(strstr(error->message, "Gemma 3's projector pools an image to 16 x 16 tokens, "
                                          "more than its tower's 14 x 14 patches"));
  g_clear_error(&error);
  static const Refusal windows[] = {
    { "{\"model_type\": \"qwen2_5_vl\", \"vision_config\": {\"fullatt_block_indexes\": 7}}",
      "$.vision_config.fullatt_block_indexes: expected a list of the vision blocks' indices" },
    { "{\"model_type\": \"qwen2_5_vl\", \"vision_config\": "
      "{\"fullatt_block_indexes\": [7, -1]}}",
      "$.vision_config.fullatt_block_indexes: expected the indices of blocks (whole numbers "
      "from 0)" },
  };
  g_autofree char *path = g_build_filename(dir, "config.json", NULL);
  assert_refused(path, windows, G_N_ELEMENTS(windows));
  g_assert_cmpint(g_remove(path), ==, 0);
  StwModelConfig bad = c;
  bad.vision_window = 4; /* less than a merged patch */
  assert_invalid(&bad, "vision_window must hold a merged patch");
  bad = c;
  bad.vision_window = 0;
  assert_invalid(&bad, "vision_full_blocks go with vision_window");
  bad = c;
  stw_model_set_vision_full_block(&bad, 5, TRUE);
  assert_invalid(&bad, "vision_full_blocks must be blocks below vision_layers");
  StwModelConfig back;
  round_trip(&c, "\"vision_full_blocks\":[1]", &back);
  g_assert_cmpuint(back.vision_window, ==, 16);
  g_assert_true(stw_model_vision_full_block(&back, 1));
  g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/* The Qwen-VL files (qwen2_vl, qwen2_5_vl, qwen3_vl, qwen3_vl_moe), read whole: each vision
 * tower and its patch merger (Qwen3-VL's DeepStack mergers too) beside the language model,
 * given as text_config or, in Qwen2-VL's and Qwen2.5-VL's checkpoints, as the file's own
 * members; LoRA reaches Qwen2.5-VL's gated vision MLPs by their names, as peft does (peft 0.21's
 * counts at rank 4) */
static void
test_qwen_vl_multimodal(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-qvl-XXXXXX", NULL);
  static const char text[] = "\"num_hidden_layers\": 2, \"hidden_size\": 64, "
                             "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                             "\"intermediate_size\": 96, \"vocab_size\": 128";
  g_autofree char *qwen25 = g_strdup_printf(
      "{\"model_type\": \"qwen2_5_vl\", \"text_config\": {\"model_type\": "
      "\"qwen2_5_vl_text\", %s}, \"vision_config\": {\"depth\": 2, \"hidden_size\": 32, "
      "\"intermediate_size\": 40, \"out_hidden_size\": 64, \"num_heads\": 2, "
      "\"patch_size\": 4}}", text);
  StwModelConfig c;
  resolve_text(dir, qwen25, &c);
  g_assert_cmpint(c.vision_kind, ==, STW_VISION_QWEN2_5_VL);
  g_assert_false(c.tied);
  /* the tower: patches 3 x 2 x 4^2 to 32; two blocks of two RMSNorms, q, k and v 32 to 96 and
   * the output 32 to 32, the gated MLP 40 wide, all biased; the merger an RMSNorm, 128 to 128
   * and to 64, biased */
  guint64 block = 2 * 32 + 96 * 32 + 96 + 32 * 32 + 32 + 2 * (40 * 32 + 40) + 32 * 40 + 32;
  guint64 tower = 3 * 2 * 16 * 32 + 2 * block + 32 + 128 * 128 + 128 + 64 * 128 + 64;
  g_assert_cmpuint(tower, ==, 44352);
  g_assert_cmpuint(stw_model_tower_param_count(&c), ==, tower);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 122752);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "visual."), ==, tower);
  /* peft adds the vision MLPs' too (2 blocks x 3 x 288) where gate, up and down are targets */
  g_assert_cmpuint(lora_params(&c, "q,v"), ==, 1792);
  g_assert_cmpuint(lora_params(&c, "q,k,v,o,gate,up,down"), ==, 9152);
  g_assert_cmpuint(lora_params(&c, "down"), ==, 1856);
  StwModelConfig back;
  round_trip(&c, "\"vision_kind\":\"qwen2_5_vl\"", &back);
  g_assert_cmpuint(back.vision_out, ==, 64);
  g_assert_cmpuint(back.vision_temporal_patch, ==, 2);

  /* Qwen2-VL's checkpoints: the language model's members the file's own, tied where it says */
  g_autofree char *qwen2 = g_strdup_printf(
      "{\"model_type\": \"qwen2_vl\", %s, \"vision_config\": {\"depth\": 2, "
      "\"embed_dim\": 32, \"hidden_size\": 64, \"num_heads\": 2, \"patch_size\": 4, "
      "\"mlp_ratio\": 2}%%s}", text);
  g_autofree char *flat = g_strdup_printf(qwen2, "");
  resolve_text(dir, flat, &c);
  g_assert_cmpint(c.vision_kind, ==, STW_VISION_QWEN2_VL);
  g_assert_cmpuint(c.vision_ffn, ==, 64); /* embed_dim x mlp_ratio */
  g_assert_cmpuint(stw_model_param_count(&c), ==, 123392);
  g_assert_cmpuint(lora_params(&c, "q,k,v,o,gate,up,down"), ==, 7424);
  g_autofree char *tied = g_strdup_printf(qwen2, ", \"tie_word_embeddings\": true");
  resolve_text(dir, tied, &back);
  g_assert_cmpuint(stw_model_param_count(&back), ==, 123392 - 128 * 64);

  /* Qwen3-VL's: a position table, biased patches, two DeepStack mergers normed after merging */
  g_autofree char *qwen3 = g_strdup_printf(
      "{\"model_type\": \"qwen3_vl\", \"text_config\": {\"model_type\": \"qwen3_vl_text\", "
      "\"head_dim\": 16, %s}, \"vision_config\": {\"model_type\": \"qwen3_vl\", "
      "\"depth\": 3, \"hidden_size\": 32, \"intermediate_size\": 40, "
      "\"out_hidden_size\": 64, \"num_heads\": 2, \"patch_size\": 4, "
      "\"num_position_embeddings\": 16, \"deepstack_visual_indexes\": [0, 2]}}", text);
  resolve_text(dir, qwen3, &c);
  g_assert_cmpint(c.vision_kind, ==, STW_VISION_QWEN3_VL);
  g_assert_cmpuint(c.vision_deepstack, ==, 2);
  g_assert_cmpuint(c.vision_positions, ==, 16);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 177656);
  g_assert_cmpuint(lora_params(&c, "q,k,v,o,gate,up,down"), ==, 7424);
  round_trip(&c, "\"vision_deepstack\":2", &back);

  StwModelConfig bad = c;
  bad.vision_out = 0;
  assert_invalid(&bad, "Qwen3-VL's tower (vision_kind qwen3_vl) needs vision_out");
  bad = c;
  bad.vision_kind = STW_VISION_QWEN2_VL;
  assert_invalid(&bad, "vision_positions: not Qwen2-VL's tower's (vision_kind qwen2_vl)");
  bad = c;
  bad.vision_merge = 1024;
  assert_invalid(&bad, "vision_out and the patch merger's width (vision_merge^2 x vision_hidden) "
                       "at most 1048576");
  static const Refusal cases[] = {
    { "{\"model_type\": \"qwen2_vl\", \"num_hidden_layers\": \"x\"}",
      "$.num_hidden_layers: expected an integer, found a string" },
    { "{\"model_type\": \"qwen3_vl\", \"vision_config\": {\"deepstack_visual_indexes\": 3}}",
      "$.vision_config.deepstack_visual_indexes: expected a list of the vision blocks' indices "
      "(a merger each)" },
    { "{\"model_type\": \"qwen2_vl\", \"vision_config\": {\"mlp_ratio\": 1000}}",
      "$.vision_config.mlp_ratio: 1000 x embed_dim 1280: an MLP more than 1048576 wide" },
    { "{\"model_type\": \"qwen2_5_vl\", \"vision_config\": {\"model_type\": \"qwen2_vl\"}}",
      "$.vision_config.model_type: expected \"qwen2_5_vl_vision\" (Qwen2.5-VL's): another "
      "vision tower is not modelled" },
    { "{\"model_type\": \"qwen3_vl_moe\", \"text_config\": {\"model_type\": \"qwen3_moe\"}}",
      "$.text_config.model_type: expected \"qwen3_vl_moe_text\", this file's language model" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
}

/* Llama 3.2 Vision's file (mllama): its tower and projector, and the language model's
 * cross-attention blocks, which a text step skips (held with the tower, frozen by synth): the
 * language model's layers are its self-attention blocks; its embeddings 8 rows more than its
 * head, which is never tied (peft 0.21's counts at rank 4, the cross-attention blocks' and the
 * tower's adapters among them) */
static void
test_mllama_multimodal(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-ml-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"mllama\", \"text_config\": {\"model_type\": \"mllama_text_model\", "
      "\"num_hidden_layers\": 3, \"cross_attention_layers\": [1%s], \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"intermediate_size\": 96, "
      "\"vocab_size\": 128, \"pad_token_id\": 0}, \"vision_config\": {\"hidden_size\": 32, "
      "\"intermediate_size\": 48, \"num_hidden_layers\": 2, \"num_global_layers\": 1, "
      "\"attention_heads\": 4, \"image_size\": 16, \"patch_size\": 4, \"max_num_tiles\": 2, "
      "\"supported_aspect_ratios\": [[1, 1], [1, 2], [2, 1]], \"vision_output_dim\": 96}%s}";
  g_autofree char *text = g_strdup_printf(small, "", "");
  StwModelConfig c, back;
  resolve_text(dir, text, &c);
  g_assert_cmpint(c.vision_kind, ==, STW_VISION_MLLAMA);
  g_assert_cmpuint(c.layers, ==, 2);
  g_assert_cmpuint(c.vision_cross_layers, ==, 1);
  g_assert_cmpuint(c.vocab, ==, 136);
  g_assert_cmpuint(stw_model_head_vocab(&c), ==, 128);
  g_assert_false(c.tied);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 144983);
  /* a cross-attention block: q and o 64 x 64, k and v 32 x 64, the heads' norms 16 each, an
   * MLP 3 x 64 x 96, two norms, two gates */
  guint64 cross = 2 * 64 * 64 + 2 * 32 * 64 + 2 * 16 + 3 * 64 * 96 + 2 * 64 + 2;
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "cross_attention_layers."), ==, cross);
  g_assert_cmpuint(prefix_numel(g, "multi_modal_projector."), ==, 96 * 64 + 64);
  g_assert_cmpuint(prefix_numel(g, "vision_model.") + cross + 96 * 64 + 64, ==,
                   stw_model_tower_param_count(&c));
  g_assert_cmpuint(lora_params(&c, "q,v"), ==, 4224);
  g_assert_cmpuint(lora_params(&c, "q,k,v,o,gate,up,down"), ==, 14208);
  round_trip(&c, "\"vision_cross_layers\":1", &back);
  g_assert_cmpuint(back.vision_tiles, ==, 2);
  g_assert_cmpuint(back.vision_aspect_ratios, ==, 3);
  /* the file's tie changes nothing; indices past the blocks and repeated count once */
  g_autofree char *tied = g_strdup_printf(small, ", 1, 9", ", \"tie_word_embeddings\": true");
  resolve_text(dir, tied, &back);
  g_assert_cmpuint(stw_model_param_count(&back), ==, 144983);
  g_assert_cmpuint(back.vision_cross_layers, ==, 1);

  StwModelConfig bad = c;
  bad.vision_tiles = 0;
  assert_invalid(&bad, "vision_tiles and vision_aspect_ratios go together");
  bad = c;
  bad.vision_features = 0;
  assert_invalid(&bad, "Llama 3.2 Vision's tower (vision_kind mllama) needs vision_features");
  bad = c;
  bad.vision_tiles = 65;
  assert_invalid(&bad, "vision_tiles and vision_aspect_ratios at most 64");
  bad = c;
  bad.arch = STW_ARCH_GPT;
  assert_invalid(&bad, "vision_cross_layers: llama only (Llama 3.2 Vision's cross-attention "
                       "blocks)");
  static const Refusal cases[] = {
    { "{\"model_type\": \"mllama\", \"vision_config\": {\"max_num_tiles\": 2}}",
      "$.vision_config.max_num_tiles: 2: the default supported_aspect_ratios need 4 "
      "(transformers refuses others)" },
    { "{\"model_type\": \"mllama\", \"vision_config\": {\"attention_heads\": 7}}",
      "$.vision_config.attention_heads: 7 heads do not divide hidden_size 1280: Llama 3.2 "
      "Vision's attention is then narrower than its width; not modelled" },
    { "{\"model_type\": \"mllama\", \"text_config\": {\"num_hidden_layers\": 2, "
      "\"cross_attention_layers\": [0, 1]}}",
      "$.text_config.cross_attention_layers: every one of the 2 blocks: a language model of "
      "cross-attention alone; not modelled" },
    { "{\"model_type\": \"mllama\", \"text_config\": {\"cross_attention_layers\": [\"3\"]}}",
      "$.text_config.cross_attention_layers: entry 0: expected a block's index" },
    { "{\"model_type\": \"mllama\", \"text_config\": {\"cross_attention_layers\": 3}}",
      "$.text_config.cross_attention_layers: expected a list of the blocks' indices" },
    { "{\"model_type\": \"mllama\", \"vision_config\": {\"supported_aspect_ratios\": 8}}",
      "$.vision_config.supported_aspect_ratios: expected a list of [width, height] in tiles" },
    { "{\"model_type\": \"mllama\", \"vision_config\": {\"supported_aspect_ratios\": []}}",
      "$.vision_config.supported_aspect_ratios: 0 entries: 1 to 64" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
}

/* GLM-4.1V's and GLM-4.5V's files (glm4v, glm4v_moe): their tower (its MLPs out_hidden_size
 * wide) and its downsampling merger beside a GLM-4-0414 (GLM-4.5) language model; the class's
 * defaults are GLM-4.1V-9B's, 10,292,777,472 parameters (transformers'); peft's adapters reach the
 * tower's and the merger's gated MLPs by name */
static void
test_glm4v_multimodal(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-g4v-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"glm4v\", \"text_config\": {\"model_type\": \"glm4v_text\", "
      "\"num_hidden_layers\": 2, \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 2, \"intermediate_size\": 96, \"vocab_size\": 128}, "
      "\"vision_config\": {\"depth\": 2, \"hidden_size\": 32, \"out_hidden_size\": 48, "
      "\"intermediate_size\": 40, \"num_heads\": 2, \"image_size\": 16, \"patch_size\": 4}}";
  StwModelConfig c, back;
  resolve_text(dir, small, &c);
  g_assert_cmpint(c.vision_kind, ==, STW_VISION_GLM4V);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 114224);
  /* the merger: 2^2 x 32 to 48 and a bias, 48 x 48, a LayerNorm, a gated MLP 40 wide */
  guint64 merger = 48 * 128 + 48 + 48 * 48 + 2 * 48 + 3 * 40 * 48;
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "visual.merger.") + prefix_numel(g, "visual.downsample."), ==,
                   merger);
  g_assert_cmpuint(lora_params(&c, "q,v"), ==, 1792);
  g_assert_cmpuint(lora_params(&c, "down"), ==, 1280 + 2 * 320 + 352);
  round_trip(&c, "\"vision_kind\":\"glm4v\"", &back);
  g_assert_cmpuint(back.vision_out, ==, 48);
  resolve_text(dir, "{\"model_type\": \"glm4v\"}", &back);
  g_assert_cmpuint(stw_model_param_count(&back), ==, G_GUINT64_CONSTANT(10292777472));
  resolve_text(dir, "{\"model_type\": \"glm4v_moe\"}", &back);
  g_assert_cmpuint(stw_model_param_count(&back), ==, G_GUINT64_CONSTANT(104372866880));
  g_assert_cmpuint(stw_model_experts(&back), ==, 128);
  static const Refusal cases[] = {
    { "{\"model_type\": \"glm4v\", \"vision_config\": {\"model_type\": \"qwen2_vl\"}}",
      "$.vision_config.model_type: expected \"glm4v_vision\" (GLM-4V's): another vision tower "
      "is not modelled" },
    { "{\"model_type\": \"glm4v_moe\", \"vision_config\": {\"patch_size\": 400}}",
      "$.vision_config.patch_size: 400 is larger than image_size 336: no whole patch in the "
      "image; not modelled" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
}

/* The rest of the LLaVA family: LLaVA with SigLIP's or Pixtral's tower, LLaVA-NeXT's and
 * LLaVA-OneVision's image_newline beside LLaVA's projector, PaliGemma's one projection; the
 * projector written in stowage's format where it is not the tower's own, and refused beside a
 * tower it does not go with (peft 0.21's counts at rank 4) */
static void
test_llava_family(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-lf-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"%s\", \"text_config\": {\"model_type\": \"%s\", %s"
      "\"num_hidden_layers\": 2, \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 2, \"intermediate_size\": 96, \"vocab_size\": 128}, "
      "\"vision_config\": {\"model_type\": \"%s\", \"hidden_size\": 32, "
      "\"intermediate_size\": 48, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
      "\"patch_size\": 4, \"image_size\": 16, \"head_dim\": 8}%s}";
  /* LLaVA-NeXT with SigLIP's tower (its pooling head, SigLIP's default): LLaVA's projector and
   * the image_newline, 64 values */
  g_autofree char *next = g_strdup_printf(small, "llava_next", "llama", "",
                                          "siglip_vision_model", "");
  StwModelConfig c, back;
  resolve_text(dir, next, &c);
  g_assert_cmpint(c.vision_kind, ==, STW_VISION_SIGLIP);
  g_assert_cmpint(stw_model_vision_projector(&c), ==, STW_PROJECTOR_LLAVA);
  g_assert_true(c.vision_newline && c.vision_pooling_head);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 109104);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "image_newline"), ==, 64);
  g_assert_cmpuint(prefix_numel(g, "multi_modal_projector."), ==, 64 * 32 + 64 + 64 * 64 + 64);
  g_assert_cmpuint(lora_params(&c, "q,v"), ==, 2816);
  g_assert_cmpuint(lora_params(&c, "q,k,v,o,gate,up,down"), ==, 8960);
  round_trip(&c, "\"vision_projector\":\"llava\"", &back);
  g_assert_true(back.vision_newline);
  /* LLaVA with Pixtral's tower (Pixtral-12B's checkpoint): LLaVA's projector, no merger */
  g_autofree char *pix = g_strdup_printf(small, "llava", "llama", "", "pixtral", "");
  resolve_text(dir, pix, &c);
  g_assert_cmpint(c.vision_kind, ==, STW_VISION_PIXTRAL);
  g_assert_cmpint(stw_model_vision_projector(&c), ==, STW_PROJECTOR_LLAVA);
  g_assert_false(c.vision_newline);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 103520);
  g_assert_cmpuint(lora_params(&c, "q,k,v,o,gate,up,down"), ==, 11392);
  /* PaliGemma: a Gemma inside, tied; SigLIP's width to projection_dim and a bias */
  g_autofree char *pali = g_strdup_printf(small, "paligemma", "gemma", "\"head_dim\": 16, ",
                                          "siglip_vision_model", ", \"projection_dim\": 64");
  resolve_text(dir, pali, &c);
  g_assert_cmpint(stw_model_vision_projector(&c), ==, STW_PROJECTOR_PALIGEMMA);
  g_assert_true(c.tied);
  g_assert_cmpuint(c.vision_out, ==, 64);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 96688);
  g_assert_cmpuint(lora_params(&c, "q,v"), ==, 2816);
  round_trip(&c, "\"vision_projector\":\"paligemma\"", &back);
  g_assert_cmpuint(back.vision_out, ==, 64);

  /* SmolVLM (and Idefics3): SigLIP's blocks under vision_model, without a head, and the pixel
   * shuffle's connector, 2^2 x 32 to 64 without a bias */
  g_autofree char *smol = g_strdup_printf(small, "smolvlm", "llama", "", "smolvlm_vision",
                                          ", \"scale_factor\": 2");
  StwModelConfig s;
  resolve_text(dir, smol, &s);
  g_assert_cmpint(stw_model_vision_projector(&s), ==, STW_PROJECTOR_IDEFICS3);
  g_assert_false(s.vision_pooling_head);
  g_assert_cmpuint(stw_model_param_count(&s), ==, 103488);
  g_autoptr(StwModelGraph) sg = stw_model_graph_new(&s, 1, 16, STW_DTYPE_BF16,
                                                    STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(sg, "connector."), ==, 64 * 4 * 32);
  g_assert_cmpuint(prefix_numel(sg, "vision_model."), ==,
                   stw_model_tower_param_count(&s) - 64 * 4 * 32);
  g_assert_cmpuint(lora_params(&s, "q,v"), ==, 2816);
  round_trip(&s, "\"vision_projector\":\"idefics3\"", &back);

  /* InternVL: InternViT (its q, k and v unbiased unless attention_bias, two layer scales a
   * block) and a LayerNorm over the pixel shuffle's 2^2 x 32 before two projections */
  g_autofree char *intern = g_strdup_printf(small, "internvl", "qwen2", "", "internvl_vision",
                                            ", \"downsample_ratio\": 0.5");
  resolve_text(dir, intern, &s);
  g_assert_cmpint(s.vision_kind, ==, STW_VISION_INTERNVL);
  g_assert_true(s.tied && !s.vision_attn_bias && !s.vision_final_norm);
  g_assert_cmpuint(s.vision_merge, ==, 2);
  g_assert_cmpuint(stw_model_param_count(&s), ==, 99968);
  g_assert_cmpuint(lora_params(&s, "q,v"), ==, 2816);
  g_assert_cmpuint(lora_params(&s, "q,k,v,o,gate,up,down"), ==, 8960);
  StwModelConfig rms = s;
  rms.vision_rms_norm = rms.vision_qk_norm = rms.vision_final_norm = TRUE;
  round_trip(&rms, "\"vision_qk_norm\":true,\"vision_rms_norm\":true,\"vision_final_norm\":true",
             &back);
  g_assert_true(back.vision_qk_norm && back.vision_rms_norm && back.vision_final_norm);
  g_assert_false(back.vision_attn_bias);

  /* Aya Vision: SigLIP's tower (its head: the file's vision_use_head), a LayerNorm over the
   * pixel shuffle's 2^2 x 32, to 96 and half of it to 64, biased; a Command R7B inside, tied */
  g_autofree char *aya = g_strdup_printf(small, "aya_vision", "cohere2", "\"pad_token_id\": 0, ",
                                         "siglip_vision_model",
                                         ", \"alignment_intermediate_size\": 96");
  resolve_text(dir, aya, &s);
  g_assert_cmpint(stw_model_vision_projector(&s), ==, STW_PROJECTOR_AYA);
  g_assert_true(s.tied);
  g_assert_cmpuint(stw_model_param_count(&s), ==, 110224);
  g_autoptr(StwModelGraph) ag = stw_model_graph_new(&s, 1, 16, STW_DTYPE_BF16,
                                                    STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(ag, "multi_modal_projector."), ==,
                   2 * 128 + 96 * 128 + 96 + 64 * 48 + 64);
  round_trip(&s, "\"vision_projector\":\"aya\"", &back);

  StwModelConfig bad = c;
  bad.vision_kind = STW_VISION_PIXTRAL;
  bad.vision_image = 0;
  assert_invalid(&bad, "vision_projector paligemma does not go with Pixtral's tower "
                       "(vision_kind pixtral)");
  bad = c;
  bad.vision_newline = TRUE;
  assert_invalid(&bad, "vision_newline: not SigLIP's tower's (vision_kind siglip, "
                       "vision_projector paligemma)");
  bad = c;
  bad.vision_out = 0;
  assert_invalid(&bad, "SigLIP's tower (vision_kind siglip, vision_projector paligemma) needs "
                       "vision_out");
  bad = c;
  bad.vision_projector = STW_PROJECTOR_DEFAULT;
  assert_invalid(&bad, "vision_out: not SigLIP's tower's (vision_kind siglip)");
}

/* Gemma 3's multimodal file, which AutoModelForCausalLM builds whole: its language model with
 * SigLIP's vision tower and the projector beside it, weights a text step never reads (no
 * gradient, no optimizer state); LoRA's q, k and v reach the tower's q_proj, k_proj and v_proj
 * too, as peft's target_modules do */
static void
test_gemma3_multimodal(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-g3-XXXXXX", NULL);
  static const char small[] =
      "{\"model_type\": \"gemma3\", \"mm_tokens_per_image\": 4, \"text_config\": "
      "{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
      "\"intermediate_size\": 128, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
      "\"head_dim\": 16, \"vocab_size\": 1000, \"sliding_window\": 16}, \"vision_config\": "
      "{\"model_type\": \"siglip_vision_model\", \"hidden_size\": 32, \"intermediate_size\": "
      "48, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"image_size\": 28, "
      "\"patch_size\": 14, \"vision_use_head\": false}%s}";
  g_autofree char *text = g_strdup_printf(small, "");
  StwModelConfig c;
  resolve_text(dir, text, &c);
  g_assert_cmpuint(c.vision_layers, ==, 2);
  g_assert_false(c.vision_pooling_head);
  g_assert_true(c.tied);
  /* transformers' count: the language model's 138,368 (its head tied), the tower's 36,128
   * (patches 3 x 14^2 x 32 and 32, 4 positions x 32, 2 blocks of 8,416, a final LayerNorm)
   * and the projector's 32 x 64 and 32 */
  guint64 tower = 3 * 14 * 14 * 32 + 32 + 4 * 32 + 2 * (4 * (32 * 32 + 32) + 4 * 32 +
                                                      32 * 48 + 48 + 48 * 32 + 32) + 2 * 32;
  g_assert_cmpuint(tower + 32 * 64 + 32, ==, 36128);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 174496);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "vision_tower."), ==, tower);
  g_assert_cmpuint(prefix_numel(g, "multi_modal_projector."), ==, 32 * 64 + 32);
  for (guint i = 0; i < g->ops->len; i++) { /* no op reads them */
    const StwGraphOp *o = g->ops->pdata[i];
    for (guint k = 0; k < o->params->len; k++) {
      const StwGraphTensor *x = g->tensors->pdata[g_array_index(o->params, guint32, k)];
      g_assert_false(g_str_has_prefix(x->name, "vision_tower.") ||
                     g_str_has_prefix(x->name, "multi_modal_projector."));
    }
  }
  /* peft 0.21's adapters at rank 4 (the tower's: 2 blocks x (4 x 32 + 32 x 4) a projection) */
  g_assert_cmpuint(lora_params(&c, "q,v"), ==, 2816);
  g_assert_cmpuint(lora_params(&c, "k"), ==, 1280);
  g_assert_cmpuint(lora_params(&c, "q,k,v,o,gate,up,down"), ==, 9728);
  StwModelConfig back;
  round_trip(&c, "\"vision_layers\":2,\"vision_hidden\":32,\"vision_ffn\":48,"
                 "\"vision_channels\":3,\"vision_patch\":14,\"vision_image\":28", &back);
  g_assert_cmpuint(back.vision_image, ==, 28);
  /* the file's own tie decides the head, not its language model's; SigLIP's pooling head */
  g_autofree char *untied = g_strdup_printf(small, ", \"tie_word_embeddings\": false");
  resolve_text(dir, untied, &back);
  g_assert_cmpuint(stw_model_param_count(&back), ==, 174496 + 1000 * 64);
  StwModelConfig dflt;
  resolve_text(dir, "{\"model_type\": \"gemma3\"}", &dflt);
  g_assert_true(dflt.vision_pooling_head);
  g_assert_cmpuint(stw_model_param_count(&dflt), ==, G_GUINT64_CONSTANT(2723312896));

  /* the model format: a tower's members go together, with a whole patch */
  StwModelConfig bad = c;
  bad.vision_layers = 0;
  assert_invalid(&bad, "m.json: invalid model: the vision tower's members go with "
                       "vision_layers");
  bad = c;
  bad.vision_ffn = 0;
  assert_invalid(&bad, "a vision tower needs vision_hidden, vision_ffn and vision_patch");
  bad = c;
  bad.vision_image = 0;
  assert_invalid(&bad, "SigLIP's tower (vision_kind siglip) needs vision_image");
  bad = c;
  bad.vision_heads = 2;
  assert_invalid(&bad, "vision_heads, vision_kv_heads and vision_head_dim: "
                       "not SigLIP's tower's (vision_kind siglip)");
  bad = c;
  bad.vision_patch = 29;
  assert_invalid(&bad, "vision_patch must be at most vision_image");
  bad = c;
  bad.vision_patch = 1;
  bad.vision_image = 5000;
  assert_invalid(&bad, "a vision tower of at most 16777216 patches an image");
  g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/* An LM head of fewer rows than the embeddings (Apertus 1.5's pruned output_vocab_size): its
 * weight, its logits and its loss that wide; refused tied or as wide as the vocabulary; tied, a
 * config.json's head is the embeddings' every row, as transformers ties it */
static void
test_head_vocab(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-hv-XXXXXX", NULL);
  StwModelConfig c;
  resolve_text(dir, "{\"model_type\": \"apertus1p5_text\", \"num_hidden_layers\": 2, "
                    "\"hidden_size\": 64, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                    "\"intermediate_size\": 160, \"vocab_size\": 128, \"output_vocab_size\": 96}",
               &c);
  g_assert_cmpuint(c.head_vocab, ==, 96);
  g_assert_cmpuint(stw_model_head_vocab(&c), ==, 96);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 80260); /* transformers' */
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 2, 8, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "embed_out.weight"), ==, 96 * 64); /* the head (neox) */
  g_assert_cmpuint(prefix_numel(g, "gpt_neox.embed_in.weight"), ==, 128 * 64);
  for (guint i = 0; i < g->ops->len; i++) {
    const StwGraphOp *o = g->ops->pdata[i];
    if (o->kind == STW_OP_LM_HEAD)
      g_assert_cmpuint(o->out_bytes, ==, 16 * 96 * 2);
    if (o->kind == STW_OP_LOSS)
      g_assert_cmpuint(o->in_bytes, ==, 16 * 96 * 2);
  }
  StwModelConfig back;
  round_trip(&c, "\"head_vocab\":96", &back);
  g_assert_cmpuint(back.head_vocab, ==, 96);
  StwModelConfig tied;
  resolve_text(dir, "{\"model_type\": \"apertus1p5_text\", \"num_hidden_layers\": 2, "
                    "\"hidden_size\": 64, \"num_attention_heads\": 4, \"vocab_size\": 128, "
                    "\"output_vocab_size\": 96, \"tie_word_embeddings\": true}",
               &tied);
  g_assert_cmpuint(tied.head_vocab, ==, 0);
  StwModelConfig bad = c;
  bad.tied = TRUE;
  assert_invalid(&bad, "m.json: invalid model: head_vocab (fewer rows in the LM "
                       "head than vocab) goes with an untied head of a decoder, "
                       "below vocab");
  bad = c;
  bad.head_vocab = 128;
  assert_invalid(&bad, "goes with an untied head of a decoder, below vocab");
  static const Refusal cases[] = {
    { "{\"model_type\": \"apertus1p5_text\", \"vocab_size\": 128, \"output_vocab_size\": 200}",
      "$.output_vocab_size: 200 above vocab_size (128): transformers refuses it" },
  };
  assert_refused_in(dir, cases, G_N_ELEMENTS(cases));
}

/* MiMo-V2-Flash: values narrower than queries and keys (v_head_dim beside head_dim, not latent
 * attention), full attention (global blocks) with the model's key/value heads and no sinks,
 * sliding attention with twice as many and a sink logit a head; transformers 5.24's counts */
static void
test_mimo(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-mimo-XXXXXX", NULL);
  StwModelConfig c;
  resolve_text(dir, "{\"model_type\": \"mimo_v2_flash\", \"num_hidden_layers\": 4, "
                    "\"hidden_size\": 64, \"num_attention_heads\": 8, \"num_key_value_heads\": 2, "
                    "\"head_dim\": 12, \"v_head_dim\": 8, \"intermediate_size\": 96, "
                    "\"moe_intermediate_size\": 32, \"n_routed_experts\": 4, "
                    "\"num_experts_per_tok\": 2, \"vocab_size\": 128, \"layer_types\": "
                    "[\"full_attention\", \"sliding_attention\", \"sliding_attention\", "
                    "\"full_attention\"]}",
               &c);
  g_assert_true(stw_model_block_global(&c, 0) && !stw_model_block_global(&c, 1) &&
                c.global_no_sinks && c.attn_sinks);
  g_assert_cmpuint(stw_model_block_kv_heads(&c, 0), ==, 2);
  g_assert_cmpuint(stw_model_block_kv_heads(&c, 1), ==, 4);
  g_assert_cmpuint(stw_model_v_head_dim(&c), ==, 8);
  g_assert_cmpuint(stw_model_param_count(&c), ==, 166224); /* transformers' */
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  /* full: q 96 x 64, k 24 x 64, v 16 x 64, o 64 x 64 (8 heads of 8 values); sliding: k and v
   * twice, and 8 sinks */
  g_assert_cmpuint(prefix_numel(g, "layers.0.self_attn."), ==,
                   96 * 64 + 24 * 64 + 16 * 64 + 64 * 64);
  g_assert_cmpuint(prefix_numel(g, "layers.1.self_attn."), ==,
                   96 * 64 + 48 * 64 + 32 * 64 + 64 * 64 + 8);
  StwModelConfig back;
  round_trip(&c, "\"global_blocks\":[0,3],\"global_kv_heads\":2,\"global_sinks\":false,"
                 "\"v_head_dim\":8", &back);
  g_assert_cmpuint(back.v_head_dim, ==, 8);
  StwModelConfig bad = c;
  bad.attn_gate = TRUE;
  assert_invalid(&bad, "v_head_dim apart from latent attention is llama's softmax "
                       "attention's, without attn_gate or diff_attn");
  bad = c;
  bad.attn_sinks = FALSE;
  assert_invalid(&bad, "global_sinks false goes with global_blocks and attn_sinks");
  g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/* LoRA on hybrid models adapts attention's projections only, as peft does with q_proj, v_proj
 * and o_proj (a linear mixer's in_proj and out_proj are none of them), and Qwen's q_proj with
 * the output gate's rows it makes: the adapters' parameters peft 0.21's (r 4) */
static void
test_lora_hybrid(void)
{
  static const struct {
    const char *json;
    guint64 qv, o, kv;
  } cases[] = {
    { "{\"model_type\": \"nemotron_h\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 2, \"head_dim\": 16, \"intermediate_size\": 96, "
      "\"mamba_num_heads\": 8, \"mamba_head_dim\": 16, \"n_groups\": 2, "
      "\"ssm_state_size\": 8, \"vocab_size\": 128, \"hybrid_override_pattern\": \"M-*-M*\"}",
      1792, 1024, 1536 },
    { "{\"model_type\": \"qwen3_next\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
      "\"intermediate_size\": 96, \"vocab_size\": 128, \"linear_num_key_heads\": 2, "
      "\"linear_num_value_heads\": 4, \"linear_key_head_dim\": 8, "
      "\"linear_value_head_dim\": 16, \"linear_conv_kernel_dim\": 3, "
      "\"full_attention_interval\": 2, \"num_experts\": 4, \"num_experts_per_tok\": 2, "
      "\"moe_intermediate_size\": 32, \"shared_expert_intermediate_size\": 48}",
      2304, 1024, 1536 },
    { "{\"model_type\": \"falcon_h1\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"intermediate_size\": 80, "
      "\"vocab_size\": 128, \"mamba_d_ssm\": 96, \"mamba_n_heads\": 8, "
      "\"mamba_d_state\": 16}",
      1792, 1024, 1536 },
  };
  g_autofree char *dir = g_dir_make_tmp("stowage-lora-XXXXXX", NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    StwModelConfig c;
    resolve_text(dir, cases[i].json, &c);
    const char *targets[] = { "q,v", "o", "k,v" };
    guint64 want[] = { cases[i].qv, cases[i].o, cases[i].kv };
    for (gsize t = 0; t < 3; t++)
      g_assert_cmpuint(lora_params(&c, targets[t]), ==, want[t]);
  }
  /* by name where a block lacks a projection: Gemma 4's blocks reusing keys and values have no
   * k or v, its global ones no v (values the keys); MiMo-V2-Flash's values narrower */
  static const struct {
    const char *file, *targets;
    guint64 params;
  } named[] = {
    { "tiny-gemma4", "q,k,v,o", 6272 },    { "tiny-gemma4", "k,v", 1152 },
    { "tiny-gemma4", "o", 2560 },          { "tiny-mimo-v2-flash", "q,k,v,o", 7616 },
    { "tiny-mimo-v2-flash", "k,v", 3008 }, { "tiny-mimo-v2-flash", "o", 2048 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(named); i++) {
    g_autofree char *rel = g_strdup_printf("hf/%s/config.json", named[i].file);
    g_autofree char *path = stw_test_fixture(rel);
    StwModelConfig c;
    GError *error = NULL;
    g_assert_true(stw_model_resolve(path, &c, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(lora_params(&c, named[i].targets), ==, named[i].params);
  }
  /* Gemma 4's per-layer input gate and projection are none of the MLP's (peft's gate_proj,
   * up_proj, down_proj): 7,680 as peft makes on its dense model with per-layer inputs */
  {
    StwModelConfig c;
    resolve_text(dir, "{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 4, "
                      "\"hidden_size\": 64, \"num_attention_heads\": 4, "
                      "\"num_key_value_heads\": 2, \"head_dim\": 16, \"global_head_dim\": 32, "
                      "\"intermediate_size\": 96, "
                      "\"vocab_size\": 128, \"hidden_size_per_layer_input\": 8, "
                      "\"vocab_size_per_layer_input\": 64}",
                 &c);
    g_assert_cmpuint(lora_params(&c, "gate,up,down"), ==, 7680);
  }
  /* latent attention: q its down and up projections (or q_proj without a rank of its own), k
   * and v both kv_a_proj_with_mqa and kv_b_proj, each its own input wide; counts peft 0.21's
   * with those modules named */
  static const char mla[] =
      "{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 3, \"hidden_size\": 64, "
      "\"num_attention_heads\": 4, \"intermediate_size\": 96, \"moe_intermediate_size\": 32, "
      "\"n_routed_experts\": 4, \"num_experts_per_tok\": 2, \"kv_lora_rank\": 16, "
      "\"q_lora_rank\": %s, \"qk_rope_head_dim\": 8, \"qk_nope_head_dim\": 8, "
      "\"v_head_dim\": 16, \"first_k_dense_replace\": 1, \"vocab_size\": 128}";
  static const struct {
    const char *q_rank, *targets;
    guint64 params;
  } latent[] = {
    { "24", "q,v", 4512 },   { "24", "q", 2112 },     { "24", "k", 2400 },
    { "24", "q,k,v,o", 6048 }, { "null", "q,v", 3936 }, { "null", "q", 1536 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(latent); i++) {
    g_autofree char *text = g_strdup_printf(mla, latent[i].q_rank);
    StwModelConfig c;
    resolve_text(dir, text, &c);
    g_assert_cmpuint(lora_params(&c, latent[i].targets), ==, latent[i].params);
  }
  /* a model of linear mixers alone has no attention to adapt */
  StwModelConfig mamba;
  resolve_text(dir, "{\"model_type\": \"mamba2\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
                    "\"num_heads\": 4, \"head_dim\": 32, \"n_groups\": 2, \"vocab_size\": 128}",
               &mamba);
  g_autoptr(StwModelGraph) mg = stw_model_graph_new(&mamba, 1, 16, STW_DTYPE_BF16,
                                                    STW_ATTENTION_FLASH);
  guint32 n_base = 0;
  GError *error = NULL;
  g_assert_false(stw_model_graph_add_lora(mg, 4, "q,v", &n_base, &error));
  stw_assert_error_contains(error, "has no q projection");
  g_clear_error(&error);
  g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/* BERT without token types and without a pooler (BertGeneration's encoder): the token-type
 * table's 2 x hidden and the pooler's hidden x (hidden + 1) fewer, no pooler op; written to
 * stowage's model format as "token_types": 0 and "pooler": false and read back; refused for
 * other blocks */
static void
test_bert_without_types_or_pooler(void)
{
  StwModelConfig c = { .name = "enc", .arch = STW_ARCH_BERT, .layers = 2, .hidden = 64,
                       .heads = 4, .kv_heads = 4, .ffn = 128, .vocab = 128, .max_seq = 64,
                       .tied = TRUE };
  guint64 full = stw_model_param_count(&c);
  c.no_token_types = TRUE;
  c.no_pooler = TRUE;
  GError *error = NULL;
  g_assert_true(stw_model_config_validate(&c, NULL, &error));
  g_assert_cmpuint(stw_model_param_count(&c), ==, full - 2 * 64 - 64 * 65);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  for (guint i = 0; i < g->ops->len; i++)
    g_assert_cmpint(((StwGraphOp *)g->ops->pdata[i])->kind, !=, STW_OP_POOLER);
  g_assert_cmpuint(((StwGraphOp *)g->ops->pdata[0])->params->len, ==, 2);
  g_autofree char *record = stw_model_record_json(&c);
  g_assert_nonnull(strstr(record, "\"token_types\":\t0"));
  g_assert_nonnull(strstr(record, "\"pooler\":\tfalse"));
  static const char text[] = "{\"format\": \"stowage-model\", \"version\": 1, "
                             "\"name\": \"enc\", \"arch\": \"bert\", \"layers\": 2, "
                             "\"hidden\": 64, \"heads\": 4, \"ffn\": 128, \"vocab\": 128, "
                             "\"max_seq\": 64, \"token_types\": 0, \"pooler\": false}";
  StwModelConfig back;
  g_assert_true(stw_model_config_parse("e.json", text, strlen(text), &back, &error));
  g_assert_no_error(error);
  g_assert_true(back.no_token_types && back.no_pooler);
  g_assert_cmpuint(stw_model_param_count(&back), ==, full - 2 * 64 - 64 * 65);
  c.arch = STW_ARCH_GPT;
  g_assert_false(stw_model_config_validate(&c, "e.json", &error));
  stw_assert_error_contains(error, "pooler and token_types 0 are bert's");
}

/* DeepSeek's sparse attention: the indexer's five weights a block (queries from the queries'
 * latent, one key LayerNormed, a weight per head), read by a forward-only op between the up
 * projections and the rotary positions whose time is its projections' and its fp32 scores';
 * synthesized, the indexer's weights are frozen (no gradient, no optimizer state), its op has
 * no backward (only its recompute), and memory balances; written to stowage's model format;
 * refused without a q_lora_rank or with one of its two sizes alone */
static void
test_indexer(void)
{
  StwModelConfig c = { .name = "dsa", .arch = STW_ARCH_LLAMA, .layers = 2, .hidden = 64,
                       .heads = 4, .kv_heads = 4, .ffn = 32, .vocab = 128, .max_seq = 64,
                       .kv_lora_rank = 16, .q_lora_rank = 24, .rope_dim = 8, .head_dim = 8,
                       .v_head_dim = 16 };
  guint64 plain = stw_model_param_count(&c);
  c.index_heads = 4;
  c.index_head_dim = 16;
  GError *error = NULL;
  g_assert_true(stw_model_config_validate(&c, NULL, &error));
  guint64 indexer = 4 * 16 * 24 + 16 * 64 + 2 * 16 + 4 * 64;
  g_assert_cmpuint(stw_model_param_count(&c), ==, plain + 2 * indexer);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 2, 32, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  const StwGraphOp *ix = NULL;
  for (guint i = 0; i < g->ops->len && ix == NULL; i++)
    if (((StwGraphOp *)g->ops->pdata[i])->kind == STW_OP_INDEXER)
      ix = g->ops->pdata[i];
  g_assert_nonnull(ix);
  g_assert_cmpstr(ix->name, ==, "h0.attn.indexer");
  g_assert_true(ix->no_grad && ix->passthrough);
  g_assert_cmpuint(ix->params->len, ==, 5);
  g_assert_cmpuint(ix->flops, ==, 2 * 64 * (24 * 64 + 64 * 16 + 64 * 4) + 2 * 2 * 32 * 32 * 4 * 17);
  g_assert_cmpuint(ix->out_bytes + ix->saved_extra_bytes, ==, 0);
  g_autofree char *record = stw_model_record_json(&c);
  g_assert_nonnull(strstr(record, "\"index_heads\":\t4"));
  g_assert_nonnull(strstr(record, "\"index_head_dim\":\t16"));
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwSynthOptions o = { .batch = 2, .seq = 32, .dtype = STW_DTYPE_BF16,
                        .kernels = STW_KERNELS_EAGER, .checkpointing = TRUE };
  g_autoptr(StwTrace) t = stw_synth_trace(&c, &o, &hw, &error);
  g_assert_no_error(error);
  guint64 frozen = 0;
  g_assert_cmpuint(stw_trace_frozen(t, &frozen), ==, 2 * 5);
  g_assert_cmpuint(frozen, ==, 2 * indexer);
  guint fwd = 0, recompute = 0, bwd = 0;
  for (guint i = 0; i < t->ops->len; i++) {
    const char *name = stw_trace_op(t, i)->name;
    fwd += g_str_has_suffix(name, "attn.indexer");
    recompute += g_str_has_suffix(name, "attn.indexer.recompute");
    bwd += g_str_has_suffix(name, "attn.indexer.bwd");
  }
  g_assert_cmpuint(fwd, ==, 2);
  g_assert_cmpuint(recompute, ==, 2);
  g_assert_cmpuint(bwd, ==, 0);
  StwModelConfig bad = c;
  bad.q_lora_rank = 0;
  g_assert_false(stw_model_config_validate(&bad, "d.json", &error));
  stw_assert_error_contains(error, "an indexer (index_heads) of latent attention reads the "
                                   "queries' latent: it goes with a q_lora_rank");
  bad = c;
  bad.index_head_dim = 0;
  g_assert_false(stw_model_config_validate(&bad, "d.json", &error));
  stw_assert_error_contains(error, "index_heads and index_head_dim go together");
  /* GLM-5's blocks that reuse the last one's choice of keys, by each of its three members: no
   * indexer of their own (the small DSA model's counts, transformers 5.24's) */
  static const struct {
    const char *extra;
    gboolean indexed[3];
  } shared[] = {
    { "\"indexer_types\": [\"full\", \"shared\", \"full\"]", { TRUE, FALSE, TRUE } },
    { "\"index_topk_pattern\": \"FSS\"", { TRUE, FALSE, FALSE } },
    { "\"index_topk_freq\": 2", { TRUE, TRUE, FALSE } }, /* from index_skip_topk_offset 2 */
    { "\"index_topk_freq\": 2, \"index_skip_topk_offset\": 9", { TRUE, TRUE, TRUE } },
  };
  g_autofree char *dsa_dir = g_dir_make_tmp("stowage-dsa-XXXXXX", NULL);
  guint64 full = 0;
  for (gsize i = 0; i < G_N_ELEMENTS(shared); i++) {
    g_autofree char *text = g_strdup_printf(
        "{\"model_type\": \"glm_moe_dsa\", \"num_hidden_layers\": 3, \"hidden_size\": 64, "
        "\"num_attention_heads\": 4, \"intermediate_size\": 96, \"moe_intermediate_size\": 32, "
        "\"n_routed_experts\": 4, \"num_experts_per_tok\": 2, \"kv_lora_rank\": 16, "
        "\"q_lora_rank\": 24, \"qk_rope_head_dim\": 8, \"qk_nope_head_dim\": 8, "
        "\"v_head_dim\": 16, \"index_n_heads\": 4, \"index_head_dim\": 16, "
        "\"first_k_dense_replace\": 1, \"vocab_size\": 128, %s}",
        shared[i].extra);
    StwModelConfig s;
    resolve_text(dsa_dir, text, &s);
    guint64 indexed = 0;
    for (guint64 l = 0; l < 3; l++) {
      g_assert_cmpint(stw_model_block_indexed(&s, l), ==, shared[i].indexed[l]);
      indexed += shared[i].indexed[l];
    }
    if (indexed == 3)
      full = stw_model_param_count(&s);
    else /* an indexer a block: queries 64 x 24, a key 16 x 64 and its norm, weights 4 x 64 */
      g_assert_cmpuint(stw_model_param_count(&s) + (3 - indexed) * (64 * 24 + 16 * 64 + 2 * 16 +
                                                                      4 * 64), ==, 136600);
  }
  g_assert_cmpuint(full, ==, 136600); /* transformers' */
  g_assert_cmpint(g_rmdir(dsa_dir), ==, 0);
  static const Refusal cases[] = {
    { "{\"model_type\": \"glm_moe_dsa\", \"indexer_types\": [\"full\", \"half\"]}",
      "$.indexer_types: entry 1: expected \"full\" or \"shared\"" },
    { "{\"model_type\": \"glm_moe_dsa\", \"indexer_types\": \"full\"}",
      "$.indexer_types: expected a list of \"full\" and \"shared\"" },
    { "{\"model_type\": \"glm_moe_dsa\", \"num_hidden_layers\": 3, "
      "\"index_topk_pattern\": \"FFX\"}",
      "$.index_topk_pattern: 'X' at 2: expected F (full) or S (shared)" },
    { "{\"model_type\": \"glm_moe_dsa\", \"index_topk_freq\": 1e300}",
      "$.index_topk_freq: expected a whole number from -4096 to 4096" },
    { "{\"model_type\": \"glm_moe_dsa\", \"index_skip_topk_offset\": \"2\"}",
      "$.index_skip_topk_offset: expected a whole number from -4096 to 4096" },
    { "{\"model_type\": \"glm_moe_dsa\", \"num_hidden_layers\": 3, "
      "\"index_topk_pattern\": \"FF\"}",
      "$.index_topk_pattern: 2 blocks' letters for 3 blocks: transformers reads one a block" },
    { "{\"model_type\": \"glm_moe_dsa\", \"num_hidden_layers\": 3, "
      "\"indexer_types\": [\"full\"]}",
      "$.indexer_types: 1 entries for 3 blocks: transformers reads one a block" },
    { "{\"model_type\": \"bert-generation\", \"add_cross_attention\": true, "
      "\"is_decoder\": true}",
      "$.add_cross_attention: true: cross-attention to an encoder is not modelled" },
    { "{\"model_type\": \"deepseek_v32\", \"q_lora_rank\": null}",
      "an indexer (index_heads) of latent attention reads the queries' latent: it goes with a "
      "q_lora_rank" },
    { "{\"model_type\": \"deepseek_v32\", \"head_dim\": null}",
      "$.head_dim: null, where a deepseek_v32 config.json needs a whole number" },
  };
  g_autofree char *dir = g_dir_make_tmp("stowage-hf-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "config.json", NULL);
  assert_refused(path, cases, G_N_ELEMENTS(cases));
  g_remove(path);
  g_rmdir(dir);
}

/* DiffLlama's differential attention: four lambda vectors of head_dim a block, read by the op
 * that combines the two softmaxes' outputs (twice the queries' width in, once out); the
 * attention op twice the products and twice what it keeps, its output both calls'; written to
 * stowage's model format; synthesized in eager kernels, naive and fused attention, memory
 * balances; refused with odd key and value heads, attention dropout, or outside llama's block */
static void
test_diff_attn(void)
{
  StwModelConfig c = { .name = "diff", .arch = STW_ARCH_LLAMA, .layers = 2, .hidden = 64,
                       .heads = 4, .kv_heads = 2, .ffn = 160, .vocab = 128, .max_seq = 64 };
  guint64 plain = stw_model_param_count(&c);
  g_autoptr(StwModelGraph) g0 = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                    STW_ATTENTION_NAIVE);
  c.diff_attn = TRUE;
  GError *error = NULL;
  g_assert_true(stw_model_config_validate(&c, NULL, &error));
  g_assert_cmpuint(stw_model_param_count(&c), ==, plain + 2 * 4 * 16);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_NAIVE);
  const char *want[] = { "embed", "h0.ln_1", "h0.attn.qkv", "h0.attn.rope", "h0.attn.core",
                         "h0.attn.diff", "h0.attn.o_proj" };
  for (gsize i = 0; i < G_N_ELEMENTS(want); i++)
    g_assert_cmpstr(((StwGraphOp *)g->ops->pdata[i])->name, ==, want[i]);
  const StwGraphOp *core0 = g0->ops->pdata[4], *core = g->ops->pdata[4], *diff = g->ops->pdata[5];
  g_assert_cmpuint(core->flops, ==, 2 * core0->flops);
  g_assert_cmpuint(core->saved_extra_bytes, ==, 2 * core0->saved_extra_bytes);
  g_assert_cmpuint(core->out_bytes, ==, 2 * 16 * 64 * 2);
  g_assert_cmpuint(diff->params->len, ==, 4);
  g_assert_cmpuint(diff->in_bytes, ==, 2 * 16 * 64 * 2);
  g_assert_cmpuint(diff->out_bytes, ==, 16 * 64 * 2);
  g_autofree char *record = stw_model_record_json(&c);
  g_assert_nonnull(strstr(record, "\"diff_attn\":\ttrue"));
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  for (int a = 0; a < 2; a++) {
    StwSynthOptions o = { .batch = 2, .seq = 16, .dtype = STW_DTYPE_BF16,
                          .kernels = STW_KERNELS_EAGER,
                          .attention = a ? STW_ATTENTION_FLASH : STW_ATTENTION_NAIVE };
    g_autoptr(StwTrace) t = stw_synth_trace(&c, &o, &hw, &error);
    g_assert_no_error(error);
    g_assert_nonnull(t);
  }
  static const struct {
    guint64 kv_heads;
    StwBias dropout;
    StwArch arch;
    const char *says;
  } bad[] = {
    { 1, STW_BIAS_DEFAULT, STW_ARCH_LLAMA, "diff_attn needs an even number of heads and of "
                                           "kv_heads" },
    { 2, STW_BIAS_YES, STW_ARCH_LLAMA, "diff_attn takes no dropout on its attention" },
    { 2, STW_BIAS_DEFAULT, STW_ARCH_NEOX, "diff_attn is modelled for llama-style blocks" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    StwModelConfig b = c;
    b.kv_heads = bad[i].kv_heads;
    b.attn_dropout = bad[i].dropout;
    b.arch = bad[i].arch;
    g_assert_false(stw_model_config_validate(&b, "d.json", &error));
    stw_assert_error_contains(error, bad[i].says);
  }
}

/* No norm before the LM head (OpenAI GPT's): 2 x hidden fewer parameters and no final norm op
 * (the last block's output is the head's input); written to and read from stowage's model
 * format; refused for bert, whose encoder has none; Apertus's xIELU: two scalars a block more,
 * read by the activation op */
static void
test_final_norm_and_xielu(void)
{
  StwModelConfig c = { .name = "gpt1", .arch = STW_ARCH_GPT, .layers = 2, .hidden = 64,
                       .heads = 4, .kv_heads = 4, .ffn = 256, .vocab = 128, .max_seq = 64,
                       .tied = TRUE };
  guint64 with = stw_model_param_count(&c);
  c.no_final_norm = TRUE;
  GError *error = NULL;
  g_assert_true(stw_model_config_validate(&c, NULL, &error));
  g_assert_cmpuint(stw_model_param_count(&c), ==, with - 2 * 64);
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  for (guint i = 0; i < g->ops->len; i++)
    g_assert_cmpint(((StwGraphOp *)g->ops->pdata[i])->kind, !=, STW_OP_NORM_FINAL);
  const StwGraphOp *last_block = g->ops->pdata[g->ops->len - 3];
  const StwGraphOp *head = g->ops->pdata[g->ops->len - 2];
  g_assert_cmpstr(last_block->name, ==, "h1.mlp.proj");
  g_assert_cmpstr(head->name, ==, "lm_head");
  g_autofree char *record = stw_model_record_json(&c);
  g_assert_nonnull(strstr(record, "\"final_norm\":\tfalse"));
  static const char text[] = "{\"format\": \"stowage-model\", \"version\": 1, "
                             "\"name\": \"gpt1\", \"arch\": \"gpt\", \"layers\": 2, "
                             "\"hidden\": 64, \"heads\": 4, \"ffn\": 256, \"vocab\": 128, "
                             "\"max_seq\": 64, \"tied\": true, \"final_norm\": false}";
  StwModelConfig back;
  g_assert_true(stw_model_config_parse("g.json", text, strlen(text), &back, &error));
  g_assert_no_error(error);
  g_assert_true(back.no_final_norm);
  g_assert_cmpuint(stw_model_param_count(&back), ==, with - 2 * 64);
  c.arch = STW_ARCH_BERT;
  g_assert_false(stw_model_config_validate(&c, "g.json", &error));
  stw_assert_error_contains(error, "final_norm is the decoders' (gpt, neox, llama): bert's "
                                   "encoder has none");
  c.arch = STW_ARCH_GPT;
  c.no_final_norm = FALSE;
  c.activation = STW_ACT_XIELU;
  g_assert_cmpuint(stw_model_param_count(&c), ==, with + 2 * 2);
  g_autoptr(StwModelGraph) gx = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                    STW_ATTENTION_FLASH);
  guint acts = 0;
  for (guint i = 0; i < gx->ops->len; i++) {
    const StwGraphOp *o = gx->ops->pdata[i];
    if (o->kind == STW_OP_MLP_ACT) {
      g_assert_cmpuint(o->params->len, ==, 2);
      acts++;
    }
  }
  g_assert_cmpuint(acts, ==, 2);
  g_autofree char *xrecord = stw_model_record_json(&c);
  g_assert_nonnull(strstr(xrecord, "\"activation\":\t\"xielu\""));
  c.arch = STW_ARCH_BERT;
  g_assert_false(stw_model_config_validate(&c, "g.json", &error));
  stw_assert_error_contains(error, "xielu in bert blocks: not modelled (its learned scalars "
                                   "are, in gpt and neox blocks)");
}

/* Qwen2-MoE's shared expert: a dense SwiGLU MLP 5632 wide beside the 4 routed experts of 1408
 * that every token runs (so the MoE ops' widths are 4 x 1408 + 5632 = 11264), and its one-score
 * gate read with the router's; 2,689,173,504 parameters active of 14,315,784,192 (the model
 * card's 2.7B); synthesized, memory balances */
static void
test_shared_expert(void)
{
  StwModelConfig c;
  g_autofree char *path = stw_test_fixture("hf/Qwen1.5-MoE-A2.7B/config.json");
  g_assert_true(stw_model_resolve(path, &c, NULL));
  g_assert_cmpuint(c.shared_expert_ffn, ==, 5632);
  g_assert_cmpuint(stw_model_active_param_count(&c), ==, G_GUINT64_CONSTANT(2689173504));
  c.layers = 1;
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&c, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  guint seen = 0;
  for (guint i = 0; i < g->ops->len; i++) {
    const StwGraphOp *o = g->ops->pdata[i];
    if (o->kind == STW_OP_MOE_ROUTER) {
      g_assert_cmpuint(o->params->len, ==, 2);
      g_assert_cmpuint(o->flops, ==, 2 * 16 * 2048 * 61);
      seen++;
    } else if (o->kind == STW_OP_MLP_IN) {
      g_assert_cmpuint(o->params->len, ==, 60 * 2 + 2);
      g_assert_cmpuint(o->flops, ==, 2 * 16 * 2048 * 2 * 11264);
      g_assert_cmpuint(o->out_bytes, ==, 16 * 2 * 11264 * 2);
      seen++;
    } else if (o->kind == STW_OP_MLP_OUT) {
      g_assert_cmpuint(o->params->len, ==, 60 + 1);
      g_assert_cmpuint(o->in_bytes, ==, 16 * 11264 * 2);
      seen++;
    }
  }
  g_assert_cmpuint(seen, ==, 3);
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  StwSynthOptions o = { .batch = 1, .seq = 16, .dtype = STW_DTYPE_BF16 };
  g_autoptr(StwTrace) t = stw_synth_trace(&c, &o, &hw, NULL);
  g_assert_nonnull(t);
  cJSON *j = stw_model_config_to_json(&c, FALSE);
  g_autofree char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  g_assert_nonnull(strstr(text, "\"shared_expert_ffn\":5632"));
  /* a shared expert without routed ones is refused */
  StwModelConfig dense = c;
  dense.experts = 1;
  GError *error = NULL;
  g_assert_false(stw_model_config_validate(&dense, NULL, &error));
  g_assert_nonnull(strstr(error->message, "a shared expert goes with experts"));
  g_clear_error(&error);
}

/* Dropout as each real config.json says it (attention probabilities, residual branches), and
 * as a model file writes and reads it back where it differs from its architecture's. */
static void
test_hf_dropout(void)
{
  static const struct {
    const char *dir;
    gboolean attn, resid;
  } cases[] = {
    { "gpt2", TRUE, TRUE },          { "opt-1.3b", FALSE, TRUE },
    { "bert-base-uncased", TRUE, TRUE }, { "roberta-base", TRUE, TRUE },
    { "phi-2", FALSE, TRUE },        { "gpt-j-6b", FALSE, FALSE },
    { "falcon-7b", FALSE, FALSE },   { "pythia-70m", FALSE, FALSE },
    { "bloom-560m", FALSE, FALSE },  { "starcoder2-3b", TRUE, TRUE },
    { "starcoderbase-1b", TRUE, TRUE }, { "Llama-2-7b-hf", FALSE, FALSE },
    { "Qwen2-7B", FALSE, FALSE },    { "gpt-neo-125m", FALSE, FALSE },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *rel = g_strdup_printf("hf/%s/config.json", cases[i].dir);
    g_autofree char *path = stw_test_fixture(rel);
    StwModelConfig cfg;
    g_test_message("%s", cases[i].dir);
    g_assert_true(stw_model_resolve(path, &cfg, NULL));
    g_assert_cmpint(stw_model_attn_dropout(&cfg), ==, cases[i].attn);
    g_assert_cmpint(stw_model_resid_dropout(&cfg), ==, cases[i].resid);
    /* a model file says what its architecture would not, and reads back the same */
    cJSON *j = stw_model_config_to_json(&cfg, TRUE);
    gboolean gpt_like = cfg.arch == STW_ARCH_GPT || cfg.arch == STW_ARCH_BERT;
    g_assert_cmpint(cJSON_GetObjectItem(j, "attn_dropout") != NULL, ==,
                    cases[i].attn != gpt_like);
    g_assert_cmpint(cJSON_GetObjectItem(j, "resid_dropout") != NULL, ==,
                    cases[i].resid != gpt_like);
    g_autofree char *text = stw_json_take_text(j, FALSE);
    g_autofree char *mp = g_build_filename(g_get_tmp_dir(), "stowage-dropout-model.json", NULL);
    g_assert_true(g_file_set_contents(mp, text, -1, NULL));
    StwModelConfig back;
    g_assert_true(stw_model_resolve(mp, &back, NULL));
    g_assert_cmpint(stw_model_attn_dropout(&back), ==, cases[i].attn);
    g_assert_cmpint(stw_model_resid_dropout(&back), ==, cases[i].resid);
    g_remove(mp);
  }
  /* a probability that is none: refused, named */
  g_autofree char *dir = g_dir_make_tmp("stowage-hf-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "config.json", NULL);
  g_assert_true(g_file_set_contents(path, "{\"model_type\": \"gpt2\", \"attn_pdrop\": 2}", -1,
                                    NULL));
  StwModelConfig bad;
  GError *error = NULL;
  g_assert_false(stw_model_resolve(path, &bad, &error));
  g_assert_nonnull(strstr(error->message, "attn_pdrop"));
  g_assert_nonnull(strstr(error->message, "expected a dropout probability from 0 to 1"));
  g_error_free(error);
  g_remove(path);
  g_rmdir(dir);
}

/* GPT-Neo's attention_types must describe num_layers layers (transformers checks it): a
 * mismatch and a malformed list refused, the member named. */
static void
test_hf_gpt_neo_layers(void)
{
  static const struct {
    const char *json, *says;
  } cases[] = {
    { "{\"model_type\": \"gpt_neo\", \"num_layers\": 3}",
      "attention_types: describes 24 layers, where num_layers is 3 (transformers refuses it)" },
    { "{\"model_type\": \"gpt_neo\", \"num_layers\": 2, \"attention_types\": "
      "[[[\"global\"], 1.5]]}", "attention_types: expected a list of [kinds, repeats] pairs" },
    { "{\"model_type\": \"gpt_neo\", \"attention_types\": 7}",
      "attention_types: expected a list of [kinds, repeats] pairs" },
  };
  g_autofree char *dir = g_dir_make_tmp("stowage-hf-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "config.json", NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_assert_true(g_file_set_contents(path, cases[i].json, -1, NULL));
    StwModelConfig cfg;
    GError *error = NULL;
    g_test_message("%s", cases[i].json);
    g_assert_false(stw_model_resolve(path, &cfg, &error));
    g_assert_nonnull(strstr(error->message, cases[i].says));
    g_error_free(error);
  }
  /* two layers as one global and one local: read */
  g_assert_true(g_file_set_contents(path, "{\"model_type\": \"gpt_neo\", \"num_layers\": 2, "
                                    "\"attention_types\": [[[\"global\", \"local\"], 1]]}",
                                    -1, NULL));
  StwModelConfig two;
  g_assert_true(stw_model_resolve(path, &two, NULL));
  g_assert_cmpuint(two.layers, ==, 2);
  g_remove(path);
  g_rmdir(dir);
}

/* Dense blocks among the experts' as each class places them (mlp_only_layers and
 * decoder_sparse_step: Flint, Qwen's MoEs; mlp_layer_types; ERNIE 4.5's start, end and interval;
 * Llama 4's moe_layers and interleave step) and ERNIE's task embeddings: each bad entry refused
 * naming it, the blocks placed as transformers places them (an index beyond the blocks never
 * read), and whole models counted as transformers 5.24 counts them. */
/* Gated DeltaNet's linear attention (Qwen3-Next, Qwen3.5): the blocks layer_types or
 * full_attention_interval choose, each block's weights and ops, the op's FLOPs and what it keeps,
 * stowage's format written and read back, and what is refused. */
static void
test_linear_attention(void)
{
  g_autofree char *dir = g_dir_make_tmp("stowage-hf-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "config.json", NULL);
  StwModelConfig next;
  resolve_text(dir, "{\"model_type\": \"qwen3_next\"}", &next);
  g_assert_cmpuint(stw_model_linear_blocks(&next), ==, 36);
  for (guint64 l = 0; l < 48; l++)
    g_assert_cmpint(stw_model_block_linear(&next, l), ==, (l + 1) % 4 != 0);
  g_assert_true(next.attn_gate && next.qk_norm);
  /* a small Qwen3.5: blocks 0 and 2 linear (the old names read as transformers remaps them) */
  StwModelConfig q;
  resolve_text(dir,
               "{\"model_type\": \"qwen3_5_text\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
               "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
               "\"intermediate_size\": 96, \"vocab_size\": 100, \"linear_num_key_heads\": 2, "
               "\"linear_num_value_heads\": 4, \"linear_key_head_dim\": 8, "
               "\"linear_value_head_dim\": 16, \"linear_conv_kernel_dim\": 3, \"layer_types\": "
               "[\"linear_attention\", \"full_attention\", \"mamba\", \"attention\"]}",
               &q);
  g_assert_cmpuint(stw_model_linear_blocks(&q), ==, 2);
  g_assert_true(stw_model_block_linear(&q, 0) && !stw_model_block_linear(&q, 1) &&
                stw_model_block_linear(&q, 2) && !stw_model_block_linear(&q, 3));
  /* a linear block's weights: in_proj_qkv (2 x 16 + 64) x 64, z 64 x 64, b and a 4 x 64, the
   * convolution 96 x 3, dt_bias and A_log 4 each, the norm 16, out_proj 64 x 64; a softmax
   * block's: q (and its gate) 2 x 64 x 64, k and v 32 x 64, o 64 x 64, the norms 16 each */
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&q, 2, 32, STW_DTYPE_BF16, STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(g, "layers.0.self_attn."), ==, 0);
  g_assert_cmpuint(prefix_numel(g, "layers.1.linear_attn."), ==, 0);
  g_assert_cmpuint(prefix_numel(g, "layers.0.linear_attn."), ==, 96 * 64 + 64 * 64 + 2 * 4 * 64 + 96 * 3 + 2 * 4 + 16 + 64 * 64);
  g_assert_cmpuint(prefix_numel(g, "layers.1.self_attn."), ==, 2 * 64 * 64 + 2 * 32 * 64 + 64 * 64 + 2 * 16);
  GString *names = g_string_new(NULL);
  for (guint i = 0; i < g->ops->len; i++) {
    const StwGraphOp *o = g->ops->pdata[i];
    if (o->layer == 0 && g_str_has_prefix(o->name, "h0.attn."))
      g_string_append_printf(names, "%s ", o->name + 3);
    if (o->kind == STW_OP_LINEAR_ATTN && o->layer == 2) {
      /* T = 64 tokens: the convolution 2 T 96 x 3, four value heads' chunked products
       * T (2 x 64 (2 x 8 + 16) + 6 x 8 x 16), the norm and gate 10 T 64 */
      g_assert_cmpuint(o->flops, ==, 2 * 64 * 96 * 3 + 64 * 4 * (2 * 64 * 32 + 6 * 8 * 16) +
                                         10 * 64 * 64);
      g_assert_cmpuint(o->in_bytes, ==, 64 * (96 + 64 + 8) * 2);
      g_assert_cmpuint(o->out_bytes, ==, 64 * 64 * 2);
      g_assert_cmpuint(o->saved_extra_bytes, ==, 64 * 96 * 2 + 64 * 4 * 64 * 4 + 64 * 4 * 8 +
                                                     64 * 64 * 2);
      g_assert_cmpuint(o->work_bytes, ==, 2 * 1 * 4 * 8 * 16 * 4); /* 2 sequences' chunk */
    }
  }
  g_assert_cmpstr(names->str, ==, "attn.in_proj attn.linear attn.out_proj ");
  g_string_free(names, TRUE);
  /* stowage's format: the linear blocks by their indices, and back */
  StwModelConfig back;
  round_trip(&q, "\"linear_blocks\":[0,2],\"linear_k_heads\":2,\"linear_v_heads\":4,"
                 "\"linear_k_head_dim\":8,\"linear_v_head_dim\":16,\"linear_conv\":3",
             &back);
  g_assert_true(memcmp(back.linear_blocks, q.linear_blocks, sizeof q.linear_blocks) == 0);
  static const struct {
    const char *with, *says;
  } invalid[] = {
    { "\"linear_blocks\":[1]}", "linear_blocks go with linear_conv, 1 to 1024" },
    { "\"linear_blocks\":[1],\"linear_conv\":4}", "linear_blocks go with linear_k_heads" },
    { "\"linear_conv\":4}", "linear_kind, linear_k_heads, linear_v_heads, linear_k_head_dim, "
                             "linear_v_head_dim, linear_conv, their biases, linear_out_norm and "
                             "linear_parallel go with linear_blocks" },
    { "\"linear_parallel\":true}", "linear_parallel go with linear_blocks" },
    { "\"linear_blocks\":[1],\"linear_k_heads\":2,\"linear_v_heads\":2,"
      "\"linear_k_head_dim\":8,\"linear_v_head_dim\":8,\"linear_conv\":4,"
      "\"linear_out_norm\":false}",
      "linear_out_norm false is Mamba-2's mixer without its gated norm (linear_kind mamba2)" },
    { "\"linear_blocks\":[1],\"linear_k_heads\":2,\"linear_v_heads\":2,"
      "\"linear_k_head_dim\":8,\"linear_v_head_dim\":8,\"linear_conv\":4,"
      "\"linear_out_bias\":true}",
      "linear_conv_bias, linear_proj_bias and linear_out_bias are Mamba-2's and the short "
      "convolution's, not Gated DeltaNet's" },
    { "\"linear_blocks\":[1],\"linear_kind\":\"mamba2\",\"linear_k_heads\":2,"
      "\"linear_v_heads\":2,\"linear_k_head_dim\":8,\"linear_v_head_dim\":8,"
      "\"linear_conv\":4,\"linear_parallel\":true,\"kv_lora_rank\":16,\"rope_dim\":8,"
      "\"v_head_dim\":16}",
      "linear_parallel keeps softmax attention beside the linear mixer: not latent attention's" },
    { "\"linear_parallel\":1}", "$.linear_parallel: expected true or false" },
    { "\"linear_blocks\":[4],\"linear_k_heads\":1,\"linear_v_heads\":1,"
      "\"linear_k_head_dim\":8,\"linear_v_head_dim\":8,\"linear_conv\":4}",
      "linear_blocks must be blocks below layers" },
    { "\"linear_blocks\":[1],\"linear_k_heads\":2,\"linear_v_heads\":3,"
      "\"linear_k_head_dim\":8,\"linear_v_head_dim\":8,\"linear_conv\":4}",
      "linear_k_heads must divide linear_v_heads" },
    { "\"linear_blocks\":[1],\"linear_k_heads\":2,\"linear_v_heads\":2,"
      "\"linear_k_head_dim\":8,\"linear_v_head_dim\":8,\"linear_conv\":4,\"alibi\":true}",
      "linear attention (linear_blocks) is in llama blocks" },
    { "\"linear_blocks\":[1,0]}", "$.linear_blocks[1]: 0 after 1: expected block indices" },
    { "\"linear_conv\":2000}", "$.linear_conv: 2000 is out of range" },
    /* blocks of one part (Mamba's, Nemotron-H's) */
    { "\"mlp\":false,\"mixer_only_blocks\":[1]}",
      "$.mixer_only_blocks: expected mlp false (every block) or mixer_only_blocks (any), not "
      "both" },
    { "\"mixer_only_blocks\":[1],\"mlp_only_blocks\":[1]}",
      "a block in both mixer_only_blocks and mlp_only_blocks would be no block" },
    { "\"mlp_only_blocks\":[4]}",
      "mixer_only_blocks and mlp_only_blocks must be blocks below layers" },
    { "\"mlp_only_blocks\":[1],\"norms\":\"both\"}",
      "blocks of one part (mixer_only_blocks, mlp_only_blocks, mlp false) are llama blocks with "
      "norms before" },
    { "\"mlp\":false,\"experts\":4}",
      "experts go with blocks that have an MLP (not every block mixer-only)" },
    { "\"linear_blocks\":[1],\"linear_kind\":\"lightning\",\"linear_k_heads\":2,"
      "\"linear_v_heads\":2,\"linear_k_head_dim\":8,\"linear_v_head_dim\":8,"
      "\"mlp_only_blocks\":[1]}",
      "a block of mlp_only_blocks has no mixer: not a linear block" },
    { "\"experts\":4,\"dense_blocks\":[2],\"dense_ffn\":64,\"mixer_only_blocks\":[2]}",
      "a block of mixer_only_blocks has no MLP: not a dense block" },
    { "\"activation\":\"relu\"}",
      "activation is the gpt, neox and bert blocks' and llama's ungated MLPs' (mlp_gate false" },
    { "\"mlp_gate\":false,\"activation\":\"xielu\"}", "xielu in llama blocks: not modelled" },
    { "\"expert_latent\":16}", "expert_latent (1 to 1048576) goes with experts" },
    { "\"rope\":false,\"kv_lora_rank\":16,\"v_head_dim\":16}",
      "rope false is llama's softmax attention (latent attention keeps its rotary part)" },
    { "\"linear_blocks\":[1],\"linear_kind\":\"mamba1\",\"linear_k_heads\":1,"
      "\"linear_v_heads\":1,\"linear_k_head_dim\":8,\"linear_v_head_dim\":64,\"linear_conv\":4}",
      "linear_dt_rank (1 or more) goes with Mamba-1's mixer (linear_kind mamba1)" },
    { "\"linear_blocks\":[1],\"linear_kind\":\"lightning\",\"linear_k_heads\":2,"
      "\"linear_v_heads\":2,\"linear_k_head_dim\":8,\"linear_v_head_dim\":8,\"linear_conv\":4}",
      "lightning attention (linear_kind lightning) has no convolution" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(invalid); i++) {
    g_autofree char *bad = g_strconcat("{\"format\":\"stowage-model\",\"version\":1,"
                                       "\"name\":\"m\",\"arch\":\"",
                                       strstr(invalid[i].with, "alibi") ? "neox" : "llama",
                                       "\",\"layers\":4,\"hidden\":64,\"heads\":4,"
                                       "\"vocab\":256,", invalid[i].with, NULL);
    GError *error = NULL;
    g_test_message("%s", bad);
    g_assert_false(stw_model_config_parse("m.json", bad, strlen(bad), &back, &error));
    stw_assert_error_contains(error, invalid[i].says);
  }
  static const Refusal cases[] = {
    { "{\"model_type\": \"qwen3_next\", \"num_hidden_layers\": 2, \"layer_types\": "
      "[\"full_attention\", \"sliding_attention\"]}",
      "$.layer_types: entry 1: expected \"linear_attention\" or \"full_attention\"" },
    { "{\"model_type\": \"qwen3_5_moe_text\", \"num_hidden_layers\": 3, \"layer_types\": "
      "[\"full_attention\", \"linear_attention\"]}",
      "$.layer_types: 2 entries for 3 blocks: transformers requires one a block" },
    { "{\"model_type\": \"qwen3_5_text\", \"layer_types\": \"linear_attention\"}",
      "$.layer_types: expected a list of \"linear_attention\" and \"full_attention\"" },
    { "{\"model_type\": \"qwen3_5_text\", \"full_attention_interval\": 0}",
      "$.full_attention_interval: 0 is out of range" },
    { "{\"model_type\": \"qwen3_next\", \"linear_num_value_heads\": 24}",
      "linear_k_heads must divide linear_v_heads" },
    { "{\"model_type\": \"olmo_hybrid\", \"num_hidden_layers\": 1}",
      "$.num_hidden_layers: no block of linear attention: olmo_hybrid's class expects blocks of "
      "both linear and softmax attention (transformers refuses the model)" },
    { "{\"model_type\": \"olmo_hybrid\", \"num_hidden_layers\": 2, \"layer_types\": "
      "[\"linear_attention\", \"linear_attention\"]}",
      "$.layer_types: no block of attention: olmo_hybrid's class expects blocks of both" },
    { "{\"model_type\": \"granitemoehybrid\", \"mamba_n_heads\": 100}",
      "$.mamba_n_heads: 100 heads do not divide mamba_expand x hidden_size (8192): transformers "
      "refuses it" },
    { "{\"model_type\": \"granitemoehybrid\", \"mamba_d_head\": 32}",
      "$.mamba_d_head: 32 a head, 128 heads: the mixer's forward runs only where heads x head "
      "width is mamba_expand x hidden_size (8192); not modelled" },
    { "{\"model_type\": \"granitemoehybrid\", \"mamba_d_head\": \"big\"}",
      "$.mamba_d_head: expected" },
    { "{\"model_type\": \"granitemoehybrid\", \"mamba_n_groups\": 3}",
      "linear_k_heads must divide linear_v_heads" },
    { "{\"model_type\": \"bamba\", \"attn_layer_indices\": 9}",
      "$.attn_layer_indices: expected a list of block indices" },
    { "{\"model_type\": \"bamba\", \"attn_layer_indices\": [9, -1]}",
      "$.attn_layer_indices[1]: -1 is out of range" },
    { "{\"model_type\": \"lfm2\", \"num_hidden_layers\": 2, \"layer_types\": [\"conv\", "
      "\"mamba\"]}", "$.layer_types: entry 1: expected \"conv\" or \"full_attention\"" },
    { "{\"model_type\": \"lfm2\", \"block_ffn_dim_multiplier\": \"1\"}",
      "$.block_ffn_dim_multiplier: expected a number above 0 (at most 1024)" },
    { "{\"model_type\": \"lfm2\", \"block_multiple_of\": 0}",
      "$.block_multiple_of: 0 is out of range" },
    { "{\"model_type\": \"lfm2\", \"full_attn_idxs\": [\"2\"]}",
      "$.full_attn_idxs[0]: expected an integer, found a string" },
    { "{\"model_type\": \"mamba2\", \"head_dim\": 32}",
      "$.head_dim: 32 a head, 128 heads: transformers refuses heads x head width apart from "
      "expand x hidden_size (8192)" },
    { "{\"model_type\": \"jamba\", \"attn_layer_offset\": 8}",
      "$.attn_layer_offset: 8: an offset must be below its period (8), as transformers "
      "requires" },
    { "{\"model_type\": \"jamba\", \"expert_layer_period\": 0}",
      "$.expert_layer_period: 0 is out of range" },
    { "{\"model_type\": \"kimi_linear\", \"linear_attn_config\": 4}",
      "$.linear_attn_config: expected an object" },
    { "{\"model_type\": \"kimi_linear\", \"num_hidden_layers\": 4, \"linear_attn_config\": "
      "{\"full_attn_layers\": [4], \"kda_layers\": [1, 2, 3, 5]}}",
      "$.linear_attn_config.kda_layers[3]: 5 is out of range" },
    { "{\"model_type\": \"falcon_h1\", \"mamba_n_heads\": 100}",
      "$.mamba_n_heads: 100 heads do not divide the mixer's inner width (1024): transformers "
      "refuses it" },
    { "{\"model_type\": \"falcon_h1\", \"mamba_d_head\": 16}",
      "$.mamba_d_head: 16 a head, 128 heads: transformers refuses heads x head width apart from "
      "the mixer's inner width (1024)" },
    { "{\"model_type\": \"falcon_h1\", \"mamba_d_ssm\": null, \"mamba_expand\": 0}",
      "$.mamba_expand: 0 is out of range" },
    { "{\"model_type\": \"falcon_h1\", \"mamba_rms_norm\": \"yes\"}",
      "$.mamba_rms_norm: expected true or false" },
    { "{\"model_type\": \"lfm2_moe\"}",
      "$.layer_types: required (a list of \"conv\" and \"full_attention\", one a block): "
      "transformers builds no lfm2_moe model without it" },
  };
  /* OLMo Hybrid's sizes from its attention's: 6 heads of 64 -> key heads 0.75 x 384 / 6 = 48
   * wide, value heads 96; its last block softmax attention where it has fewer than four */
  StwModelConfig oh;
  resolve_text(dir,
               "{\"model_type\": \"olmo_hybrid\", \"num_hidden_layers\": 3, \"hidden_size\": 384, "
               "\"num_attention_heads\": 6, \"linear_num_value_heads\": null}",
               &oh);
  g_assert_true(oh.linear_k_heads == 6 && oh.linear_v_heads == 6 &&
                oh.linear_k_head_dim == 48 && oh.linear_v_head_dim == 96);
  g_assert_true(stw_model_block_linear(&oh, 0) && stw_model_block_linear(&oh, 1) &&
                !stw_model_block_linear(&oh, 2));
  /* Mamba-2 (a small Granite 4.0 hybrid without experts: its shared MLP a dense one): 4 heads
   * over 2 x 32 = 64 inner, 2 groups of B and C of 8, a convolution 3 wide with its bias */
  StwModelConfig m2;
  resolve_text(dir,
               "{\"model_type\": \"granitemoehybrid\", \"num_hidden_layers\": 2, \"hidden_size\": 32, "
               "\"num_attention_heads\": 2, \"intermediate_size\": 48, \"shared_intermediate_size\": "
               "40, \"num_local_experts\": 0, \"vocab_size\": 100, \"mamba_n_heads\": 4, "
               "\"mamba_n_groups\": 2, \"mamba_d_state\": 8, \"mamba_d_conv\": 3, \"layer_types\": "
               "[\"mamba\", \"attention\"]}",
               &m2);
  g_assert_cmpint(m2.linear_kind, ==, STW_LINEAR_MAMBA2);
  g_assert_true(m2.linear_conv_bias && !m2.linear_proj_bias);
  g_assert_cmpuint(stw_model_experts(&m2), ==, 1);
  g_assert_cmpuint(m2.ffn, ==, 40);
  g_autoptr(StwModelGraph) mg = stw_model_graph_new(&m2, 1, 16, STW_DTYPE_BF16,
                                                    STW_ATTENTION_FLASH);
  guint64 mixer = prefix_numel(mg, "layers.0.mamba.");
  /* in_proj 32 -> x and z (64 each), B and C (2 x 2 x 8), a step a head (4): 164 x 32; the
   * convolution over 64 + 32 = 96 channels, 3 wide, and its bias; dt_bias, A_log, D; the norm
   * 64; out_proj 64 -> 32 */
  g_assert_cmpuint(mixer, ==, 164 * 32 + 96 * 3 + 96 + 3 * 4 + 64 + 32 * 64);
  for (guint i = 0; i < mg->ops->len; i++) {
    const StwGraphOp *o = mg->ops->pdata[i];
    if (o->kind == STW_OP_LINEAR_ATTN) /* T = 16 in one chunk of 256: 2 T 96 x 3, 10 T 64, and
                                        * each head's 2 x 256 (8 + 16) + 4 x 8 x 16 */
      g_assert_cmpuint(o->flops, ==, 2 * 16 * 96 * 3 + 10 * 16 * 64 +
                                         16 * 4 * (2 * 256 * 24 + 4 * 8 * 16));
  }
  StwModelConfig m2back;
  round_trip(&m2, "\"linear_conv\":3,\"linear_kind\":\"mamba2\",\"linear_conv_bias\":true",
             &m2back);
  g_assert_true(m2back.linear_out_bias == m2back.linear_proj_bias);
  /* Falcon-H1: Mamba-2 beside attention in every block, both on the block's norm (attention's
   * ops first, then the mixer's, whose output projection closes the branch); 4 heads over
   * mamba_d_ssm 48, 1 group of B and C of 8, the input's projection unbiased and the output's
   * biased (projectors_bias), no gated norm (mamba_rms_norm false) */
  StwModelConfig fh;
  resolve_text(dir,
               "{\"model_type\": \"falcon_h1\", \"num_hidden_layers\": 2, \"hidden_size\": 32, "
               "\"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"intermediate_size\": "
               "40, \"vocab_size\": 100, \"mamba_d_ssm\": 48, \"mamba_n_heads\": 4, "
               "\"mamba_d_state\": 8, \"projectors_bias\": true}",
               &fh);
  g_assert_true(fh.linear_parallel && fh.linear_no_out_norm && fh.linear_out_bias &&
                !fh.linear_proj_bias && fh.linear_conv_bias);
  StwModelConfig all_mamba;
  resolve_text(dir, "{\"model_type\": \"mamba2\"}", &all_mamba);
  g_assert_true(stw_model_has_softmax(&fh) && stw_model_has_softmax(&m2) &&
                !stw_model_has_softmax(&all_mamba));
  g_autoptr(StwModelGraph) fg = stw_model_graph_new(&fh, 1, 16, STW_DTYPE_BF16,
                                                    STW_ATTENTION_FLASH);
  /* in_proj 32 -> x and z (48 each), B and C (8 each), a step a head (4): 116 x 32; the
   * convolution over 48 + 16 = 64 channels, 4 wide, and its bias; dt_bias, A_log, D; no norm;
   * out_proj 48 -> 32 and its bias; attention's q 32 x 32, k and v 16 x 32, o 32 x 32 */
  g_assert_cmpuint(prefix_numel(fg, "layers.1.mamba."), ==,
                   116 * 32 + 64 * 4 + 64 + 3 * 4 + 32 * 48 + 32);
  g_assert_cmpuint(prefix_numel(fg, "layers.1.self_attn."), ==, 2 * 32 * 32 + 2 * 16 * 32);
  g_autoptr(GString) fops = g_string_new(NULL);
  for (guint i = 0; i < fg->ops->len; i++) {
    const StwGraphOp *o = fg->ops->pdata[i];
    if (o->layer == 1 && g_str_has_prefix(o->name, "h1.attn."))
      g_string_append_printf(fops, "%s%s ", o->name + 3,
                             o->residual == STW_RESIDUAL_CLOSE ? "(closes)" : "");
  }
  g_assert_cmpstr(fops->str, ==, "attn.qkv attn.rope attn.core attn.o_proj attn.in_proj "
                                 "attn.linear attn.out_proj(closes) ");
  StwModelConfig fhback;
  round_trip(&fh, "\"linear_kind\":\"mamba2\",\"linear_conv_bias\":true,"
                  "\"linear_out_bias\":true,\"linear_out_norm\":false,\"linear_parallel\":true",
             &fhback);
  g_assert_true(fhback.linear_parallel && fhback.linear_no_out_norm && fhback.linear_out_bias &&
                !fhback.linear_proj_bias);
  /* LFM2-1.2B: a short convolution in 10 of 16 blocks (in_proj 2048 -> 3 x 2048, the
   * convolution 2048 x 3, out_proj 2048 x 2048), its MLP 12288 x 2/3 = 8192 wide; its count
   * transformers 5.24's; no heads written */
  StwModelConfig lfm;
  resolve_text(dir,
               "{\"model_type\": \"lfm2\", \"block_ff_dim\": 12288, \"full_attn_idxs\": [2, 5, 8, "
               "10, 12, 14], \"hidden_size\": 2048, \"num_hidden_layers\": 16, \"tie_embedding\": "
               "true}",
               &lfm);
  g_assert_cmpuint(stw_model_param_count(&lfm), ==, G_GUINT64_CONSTANT(1170340608));
  g_assert_cmpuint(lfm.ffn, ==, 8192);
  g_assert_cmpuint(stw_model_linear_blocks(&lfm), ==, 10);
  g_autoptr(StwModelGraph) lg = stw_model_graph_new(&lfm, 1, 8, STW_DTYPE_BF16,
                                                    STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(lg, "layers.0.conv."), ==, 3 * 2048 * 2048 + 2048 * 3 + 2048 * 2048);
  for (guint i = 0; i < lg->ops->len; i++) {
    const StwGraphOp *o = lg->ops->pdata[i];
    if (o->kind == STW_OP_LINEAR_ATTN) { /* T = 8: B x and C y, the convolution 2 T d x 3 */
      g_assert_cmpuint(o->flops, ==, 2 * 8 * 2048 * 3 + 2 * 8 * 2048);
      g_assert_cmpuint(o->in_bytes, ==, 8 * 3 * 2048 * 2);
      g_assert_cmpuint(o->saved_extra_bytes, ==, 2 * 8 * 2048 * 2);
    }
  }
  StwModelConfig lback;
  round_trip(&lfm, "\"linear_conv\":3,\"linear_kind\":\"short_conv\"", &lback);
  /* MiniMax's lightning attention in its odd blocks by default: q, k, v and the gate 4 x 64 x 64,
   * the norm 64, out_proj 64 x 64, no convolution; its blocks' scores kept */
  StwModelConfig mm;
  resolve_text(dir,
               "{\"model_type\": \"minimax\", \"num_hidden_layers\": 3, \"hidden_size\": 64, "
               "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"intermediate_size\": 32, "
               "\"num_local_experts\": 4, \"vocab_size\": 100}",
               &mm);
  g_assert_cmpint(mm.linear_kind, ==, STW_LINEAR_LIGHTNING);
  g_assert_true(!stw_model_block_linear(&mm, 0) && stw_model_block_linear(&mm, 1) &&
                !stw_model_block_linear(&mm, 2));
  g_autoptr(StwModelGraph) mmg = stw_model_graph_new(&mm, 1, 8, STW_DTYPE_BF16,
                                                     STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(mmg, "layers.1.self_attn."), ==, 4 * 64 * 64 + 64 + 64 * 64);
  for (guint i = 0; i < mmg->ops->len; i++) {
    const StwGraphOp *o = mmg->ops->pdata[i];
    if (o->kind == STW_OP_LINEAR_ATTN) { /* T = 8 in a block of 256: 4 heads of 16 */
      g_assert_cmpuint(o->flops, ==, 10 * 8 * 64 + 8 * 4 * (2 * 256 * 32 + 4 * 16 * 16));
      g_assert_cmpuint(o->saved_extra_bytes, ==, 8 * 4 * 4 + 8 * 4 * 8 + 8 * 64 * 2 +
                                                     8 * 4 * 256 * 2);
    }
  }
  StwModelConfig mmback;
  round_trip(&mm, "\"linear_blocks\":[1],\"linear_k_heads\":4,\"linear_v_heads\":4,"
                  "\"linear_k_head_dim\":16,\"linear_v_head_dim\":16,\"linear_kind\":\"lightning\"",
             &mmback);
  /* Mamba-2's language model: every block a norm and the mixer, no MLP; its ops so */
  StwModelConfig mlm;
  resolve_text(dir,
               "{\"model_type\": \"mamba2\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
               "\"num_heads\": 8, \"head_dim\": 16, \"n_groups\": 2, \"state_size\": 8, "
               "\"vocab_size\": 128, \"use_bias\": true, \"use_conv_bias\": false, "
               "\"tie_word_embeddings\": true}",
               &mlm);
  g_assert_true(stw_model_mlp_blocks(&mlm) == 0 && mlm.linear_proj_bias && !mlm.linear_conv_bias);
  g_assert_cmpuint(stw_model_param_count(&mlm), ==, 64960); /* transformers 5.24's count */
  g_autoptr(StwModelGraph) mlg = stw_model_graph_new(&mlm, 1, 8, STW_DTYPE_BF16,
                                                     STW_ATTENTION_FLASH);
  GString *block = g_string_new(NULL);
  for (guint i = 0; i < mlg->ops->len; i++) {
    const StwGraphOp *o = mlg->ops->pdata[i];
    if (o->layer == 1)
      g_string_append_printf(block, "%s ", o->name + 3);
  }
  g_assert_cmpstr(block->str, ==, "ln_1 attn.in_proj attn.linear attn.out_proj ");
  g_string_free(block, TRUE);
  StwModelConfig mlback;
  round_trip(&mlm, "\"mlp\":false", &mlback);
  /* Mamba-1 (mamba-130m's sizes): in_proj 768 -> 2 x 1536, the convolution 1536 x 4 and its
   * bias, x_proj 1536 -> 48 + 2 x 16, dt_proj 48 -> 1536 and its bias, A_log 1536 x 16, D */
  StwModelConfig m1;
  resolve_text(dir, "{\"model_type\": \"mamba\", \"num_hidden_layers\": 24}", &m1);
  g_assert_true(m1.linear_kind == STW_LINEAR_MAMBA1 && m1.linear_dt_rank == 48 &&
                stw_model_mlp_blocks(&m1) == 0);
  g_assert_cmpuint(stw_model_param_count(&m1), ==, G_GUINT64_CONSTANT(129135360));
  g_autoptr(StwModelGraph) m1g = stw_model_graph_new(&m1, 1, 8, STW_DTYPE_BF16,
                                                     STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(m1g, "layers.0.mixer."), ==,
                   2 * 1536 * 768 + 1536 * 4 + 1536 + 80 * 1536 + 1536 * 48 + 1536 +
                       1536 * 16 + 1536 + 768 * 1536);
  StwModelConfig m1back;
  round_trip(&m1, "\"linear_kind\":\"mamba1\",\"linear_dt_rank\":48", &m1back);
  /* Jamba: attention in block 4 of every 8, experts in every odd block; its mixer's norms over
   * the step (256), B and C (16 each) */
  StwModelConfig jb;
  resolve_text(dir, "{\"model_type\": \"jamba\", \"num_hidden_layers\": 8}", &jb);
  g_assert_true(jb.linear_norms && stw_model_linear_blocks(&jb) == 7 &&
                !stw_model_block_linear(&jb, 4));
  g_assert_true(stw_model_block_dense(&jb, 0) && !stw_model_block_dense(&jb, 1) &&
                jb.dense_ffn == 14336);
  g_autoptr(StwModelGraph) jbg = stw_model_graph_new(&jb, 1, 8, STW_DTYPE_BF16,
                                                     STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(jbg, "layers.0.mixer.dt_layernorm") +
                       prefix_numel(jbg, "layers.0.mixer.b_layernorm") +
                       prefix_numel(jbg, "layers.0.mixer.c_layernorm"),
                   ==, 256 + 16 + 16);
  StwModelConfig jbback;
  round_trip(&jb, "\"linear_dt_rank\":256,\"linear_norms\":true", &jbback);
  /* Kimi Delta Attention (4 heads of 16 beside latent attention): q, k, v 3 x 64 x 64, the
   * gates down 2 x 16 x 64 and up 2 x 64 x 16, a rate a head 4 x 64, the convolution 192 x 4,
   * the decay bias 64 and decay 4, the norm 16, o_proj 64 x 64; its blocks by the checkpoint's
   * lists, numbered from 1 */
  StwModelConfig kl;
  resolve_text(dir,
               "{\"model_type\": \"kimi_linear\", \"num_hidden_layers\": 3, \"hidden_size\": 64, "
               "\"num_attention_heads\": 4, \"kv_lora_rank\": 16, \"qk_rope_head_dim\": 8, "
               "\"qk_nope_head_dim\": 8, \"v_head_dim\": 8, \"vocab_size\": 100, "
               "\"linear_attn_config\": {\"num_heads\": 4, \"head_dim\": 16, "
               "\"full_attn_layers\": [2], \"kda_layers\": [1, 3]}}",
               &kl);
  g_assert_true(kl.linear_kind == STW_LINEAR_KDA && stw_model_block_linear(&kl, 0) &&
                !stw_model_block_linear(&kl, 1) && stw_model_block_linear(&kl, 2));
  g_autoptr(StwModelGraph) klg = stw_model_graph_new(&kl, 1, 8, STW_DTYPE_BF16,
                                                     STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(klg, "layers.0.self_attn."), ==,
                   3 * 64 * 64 + 2 * 16 * 64 + 2 * 64 * 16 + 4 * 64 + 192 * 4 + 64 + 4 + 16 +
                       64 * 64);
  StwModelConfig klback;
  round_trip(&kl, "\"linear_kind\":\"kda\"", &klback);
  /* Bailing's: the gates full rank (f_proj and g_proj 64 x 64 where Kimi's go through 16), and
   * a gate a head on its latent attention (g_proj 4 x 64); every second block attention */
  StwModelConfig bh;
  resolve_text(dir,
               "{\"model_type\": \"bailing_hybrid\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
               "\"num_attention_heads\": 4, \"head_dim\": 16, \"kv_lora_rank\": 16, "
               "\"qk_rope_head_dim\": 8, \"qk_nope_head_dim\": 8, \"v_head_dim\": 8, "
               "\"vocab_size\": 100, \"layer_group_size\": 2, \"num_local_experts\": 4, "
               "\"num_experts_per_tok\": 2}",
               &bh);
  g_assert_true(bh.linear_full_gates && bh.attn_head_gate && stw_model_block_linear(&bh, 0) &&
                !stw_model_block_linear(&bh, 1));
  g_autoptr(StwModelGraph) bhg = stw_model_graph_new(&bh, 1, 8, STW_DTYPE_BF16,
                                                     STW_ATTENTION_FLASH);
  g_assert_cmpuint(prefix_numel(bhg, "layers.0.self_attn."), ==,
                   3 * 64 * 64 + 2 * 64 * 64 + 4 * 64 + 192 * 4 + 64 + 4 + 16 + 64 * 64);
  g_assert_cmpuint(prefix_numel(bhg, "layers.1.self_attn.g_proj."), ==, 4 * 64);
  StwModelConfig bhback;
  round_trip(&bh, "\"linear_full_gates\":true", &bhback);
  /* LFM2-MoE: its blocks' kinds required; experts after its dense blocks, none adjusted */
  StwModelConfig lmoe;
  resolve_text(dir,
               "{\"model_type\": \"lfm2_moe\", \"num_hidden_layers\": 4, \"layer_types\": "
               "[\"conv\", \"full_attention\", \"conv\", \"conv\"], \"block_ff_dim\": 99}",
               &lmoe);
  g_assert_cmpuint(stw_model_linear_blocks(&lmoe), ==, 3);
  g_assert_cmpuint(stw_model_dense_prefix(&lmoe), ==, 2);
  g_assert_true(lmoe.ffn == 1792 && lmoe.dense_ffn == 7168 && lmoe.experts == 32);
  g_autofree char *headed = g_strdup_printf(
      "{\"format\":\"stowage-model\",\"version\":1,\"name\":\"m\",\"arch\":\"llama\","
      "\"layers\":2,\"hidden\":64,\"heads\":4,\"vocab\":256,\"linear_blocks\":[0],"
      "\"linear_kind\":\"short_conv\",\"linear_conv\":3,\"linear_k_heads\":2}");
  GError *lerror = NULL;
  g_assert_false(stw_model_config_parse("m.json", headed, strlen(headed), &lback, &lerror));
  stw_assert_error_contains(lerror, "a short convolution (linear_kind short_conv) has no heads");
  /* Bamba's blocks of attention by their indices (9-B's: 9, 18 and 27 of 32; 40 beyond them);
   * the count transformers 5.24's */
  StwModelConfig bamba;
  resolve_text(dir, "{\"model_type\": \"bamba\", \"attn_layer_indices\": [9, 18, 27, 40]}",
               &bamba);
  g_assert_cmpuint(stw_model_linear_blocks(&bamba), ==, 29);
  g_assert_true(!stw_model_block_linear(&bamba, 9) && stw_model_block_linear(&bamba, 10));
  g_assert_cmpuint(stw_model_param_count(&bamba), ==, G_GUINT64_CONSTANT(9808584064));
  assert_refused(path, cases, G_N_ELEMENTS(cases));
  g_rmdir(dir);
}

static void
test_hf_dense_list_and_task_types(void)
{
  static const Refusal cases[] = {
    { "{\"model_type\": \"flint\", \"mlp_only_layers\": 7}",
      "$.mlp_only_layers: expected a list of block indices" },
    { "{\"model_type\": \"flint\", \"mlp_only_layers\": [0, -1]}",
      "$.mlp_only_layers[1]: -1 is out of range" },
    { "{\"model_type\": \"qwen3_moe\", \"mlp_only_layers\": [0, \"1\"]}",
      "$.mlp_only_layers[1]: expected an integer, found a string" },
    { "{\"model_type\": \"qwen2_moe\", \"mlp_only_layers\": [1.5]}",
      "$.mlp_only_layers[0]: expected an integer, found 1.5" },
    { "{\"model_type\": \"flint\", \"decoder_sparse_step\": 0}",
      "$.decoder_sparse_step: 0 is out of range" },
    { "{\"model_type\": \"ernie4_5_moe\", \"moe_layer_interval\": 0}",
      "$.moe_layer_interval: 0 is out of range" },
    { "{\"model_type\": \"ernie4_5_moe\", \"moe_layer_end_index\": -2}",
      "$.moe_layer_end_index: expected a block's index, or -1 (the last)" },
    { "{\"model_type\": \"llama4_text\", \"moe_layers\": 3}",
      "$.moe_layers: expected a list of block indices" },
    { "{\"model_type\": \"llama4_text\", \"moe_layers\": [1, \"2\"]}",
      "$.moe_layers[1]: expected an integer, found a string" },
    { "{\"model_type\": \"glm4_moe_lite\", \"num_hidden_layers\": 2, "
      "\"mlp_layer_types\": [\"dense\", \"moe\"]}",
      "$.mlp_layer_types: entry 1: expected \"dense\" or \"sparse\"" },
    { "{\"model_type\": \"glm4_moe_lite\", \"num_hidden_layers\": 3, "
      "\"mlp_layer_types\": [\"dense\", \"sparse\"]}",
      "$.mlp_layer_types: 2 entries for 3 blocks: transformers reads one a block" },
    { "{\"model_type\": \"glm4_moe_lite\", \"num_hidden_layers\": 2, "
      "\"mlp_layer_types\": [7, \"sparse\", \"dense\"]}",
      "$.mlp_layer_types: entry 0: expected \"dense\" or \"sparse\"" },
    { "{\"model_type\": \"ernie\", \"use_task_id\": \"yes\"}", "$.use_task_id" },
    { "{\"model_type\": \"ernie\", \"use_task_id\": true, \"task_type_vocab_size\": 1023}",
      "$.task_type_vocab_size: 1023 is out of range (expected 1 to 1022)" },
  };
  g_autofree char *dir = g_dir_make_tmp("stowage-hf-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "config.json", NULL);
  assert_refused(path, cases, G_N_ELEMENTS(cases));
  /* BLOCKS: the first eight blocks, D dense among experts, E of experts (NULL: no experts) */
  static const struct {
    const char *json;
    guint64 dense, token_types;
    const char *blocks;
  } good[] = {
    { "{\"model_type\": \"flint\", \"num_hidden_layers\": 4, \"mlp_only_layers\": [1, 0, 9]}",
      2, 0, "DDEE" },
    { "{\"model_type\": \"flint\", \"mlp_only_layers\": null}", 2, 0, "DDEEEEEE" },
    { "{\"model_type\": \"flint\", \"mlp_only_layers\": [3]}", 1, 0, "EEEDEEEE" },
    { "{\"model_type\": \"qwen3_moe\", \"mlp_only_layers\": [0]}", 1, 0, "DEEEEEEE" },
    { "{\"model_type\": \"qwen3_moe\", \"mlp_only_layers\": []}", 0, 0, "EEEEEEEE" },
    { "{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 6, \"decoder_sparse_step\": 3, "
      "\"mlp_only_layers\": [5]}", 5, 0, "DDEDDD" },
    { "{\"model_type\": \"qwen2_moe\", \"num_hidden_layers\": 5, \"decoder_sparse_step\": 2}",
      3, 0, "DEDED" },
    { "{\"model_type\": \"llama4_text\", \"num_hidden_layers\": 5, "
      "\"interleave_moe_layer_step\": 2}", 3, 0, "DEDED" },
    { "{\"model_type\": \"llama4_text\", \"num_hidden_layers\": 4, "
      "\"interleave_moe_layer_step\": 2, \"moe_layers\": [0, 3, 7]}", 2, 0, "EDDE" },
    { "{\"model_type\": \"ernie4_5_moe\", \"num_hidden_layers\": 7, "
      "\"moe_layer_start_index\": 1, \"moe_layer_end_index\": 5, \"moe_layer_interval\": 2}",
      4, 0, "DEDEDED" },
    { "{\"model_type\": \"ernie4_5_moe\", \"num_hidden_layers\": 4, "
      "\"moe_layer_end_index\": 2}", 2, 0, "DEED" },
    { "{\"model_type\": \"glm4_moe_lite\", \"num_hidden_layers\": 3, "
      "\"mlp_layer_types\": [\"sparse\", \"dense\", \"sparse\"]}", 1, 0, "EDE" },
    { "{\"model_type\": \"ernie\", \"use_task_id\": true}", 0, 5, NULL },
    { "{\"model_type\": \"ernie\", \"use_task_id\": false, \"task_type_vocab_size\": 0}",
      0, 0, NULL },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(good); i++) {
    g_assert_true(g_file_set_contents(path, good[i].json, -1, NULL));
    StwModelConfig cfg;
    GError *error = NULL;
    g_test_message("%s", good[i].json);
    g_assert_true(stw_model_resolve(path, &cfg, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(stw_model_dense_blocks(&cfg), ==, good[i].dense);
    g_assert_cmpuint(cfg.token_types, ==, good[i].token_types);
    char blocks[9] = { 0 };
    for (guint64 l = 0; l < MIN(cfg.layers, 8) && stw_model_experts(&cfg) > 1; l++)
      blocks[l] = stw_model_block_dense(&cfg, l) ? 'D' : 'E';
    g_assert_cmpstr(good[i].blocks != NULL ? blocks : NULL, ==, good[i].blocks);
  }
  static const struct {
    const char *file;
    guint64 params, dense;
  } counted[] = {
    { "hf/moe-dense-glm-types.json", G_GUINT64_CONSTANT(1439057664), 2 },
    { "hf/moe-dense-ernie-interval.json", G_GUINT64_CONSTANT(12928761216), 14 },
    { "hf/moe-dense-qwen-step.json", G_GUINT64_CONSTANT(8552813568), 12 },
    { "hf/moe-dense-qwen-list.json", G_GUINT64_CONSTANT(14217745408), 2 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(counted); i++) {
    g_autofree char *file = stw_test_fixture(counted[i].file);
    StwModelConfig cfg;
    g_assert_true(stw_model_resolve(file, &cfg, NULL));
    g_assert_cmpuint(stw_model_param_count(&cfg), ==, counted[i].params);
    g_assert_cmpuint(stw_model_dense_blocks(&cfg), ==, counted[i].dense);
  }
  g_remove(path);
  g_rmdir(dir);
}

/* Hunyuan MoE: its top-k a whole number or one a block (moe_topk), its experts by either name;
 * a block's differing, too few entries, one expert and no head_dim each refused, naming the
 * member. Hunyuan's defaults with head_dim 128 and 64 experts, 8 a token, as transformers 5.24
 * builds them: 285,893,464,064 parameters (every block's experts 11008 wide, as its shared MLP). */
static void
test_hf_hunyuan_moe(void)
{
  static const Refusal cases[] = {
    { "{\"model_type\": \"hunyuan_v1_moe\", \"num_experts\": 4}",
      "$.head_dim: required (a number): transformers builds no hunyuan_v1_moe model without it" },
    { "{\"model_type\": \"hunyuan_v1_moe\", \"head_dim\": 128}",
      "$.num_experts: 1: one routed expert beside the shared MLP, with a router of its own: not "
      "modelled (2 or more are)" },
    { "{\"model_type\": \"hunyuan_v1_moe\", \"head_dim\": 128, \"num_experts\": 64, "
      "\"num_hidden_layers\": 3, \"moe_topk\": [8, 8, 6]}",
      "$.moe_topk: entry 2 is 6 where entry 0 is 8: blocks that differ are not modelled (one "
      "count for every block is)" },
    { "{\"model_type\": \"hunyuan_v1_moe\", \"head_dim\": 128, \"num_experts\": 64, "
      "\"num_hidden_layers\": 3, \"moe_topk\": [8, 8]}",
      "$.moe_topk: 2 entries for 3 blocks: transformers reads one a block" },
    { "{\"model_type\": \"hunyuan_v1_moe\", \"head_dim\": 128, \"num_experts\": 64, "
      "\"moe_topk\": [8, 0]}",
      "$.moe_topk[1]: 0 is out of range" },
    { "{\"model_type\": \"hunyuan_v1_moe\", \"head_dim\": 128, \"num_experts\": 64, "
      "\"moe_topk\": \"8\"}",
      "$.moe_topk: expected an integer, found a string" },
  };
  g_autofree char *dir = g_dir_make_tmp("stowage-hf-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "config.json", NULL);
  assert_refused(path, cases, G_N_ELEMENTS(cases));
  static const char *const good[] = {
    "{\"model_type\": \"hunyuan_v1_moe\", \"head_dim\": 128, \"num_experts\": 64, "
    "\"moe_topk\": 8}",
    "{\"model_type\": \"hunyuan_v1_moe\", \"head_dim\": 128, \"num_local_experts\": 64, "
    "\"moe_topk\": [8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, "
    "8, 8, 8, 8, 8, 8, 8, 1]}", /* the entry beyond the blocks never read */
  };
  for (gsize i = 0; i < G_N_ELEMENTS(good); i++) {
    g_assert_true(g_file_set_contents(path, good[i], -1, NULL));
    StwModelConfig cfg;
    GError *error = NULL;
    g_assert_true(stw_model_resolve(path, &cfg, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(cfg.experts, ==, 64);
    g_assert_cmpuint(cfg.experts_per_token, ==, 8);
    g_assert_cmpuint(cfg.shared_expert_ffn, ==, 11008);
    g_assert_true(cfg.shared_expert_ungated);
    g_assert_true(cfg.qk_norm);
    g_assert_cmpuint(stw_model_param_count(&cfg), ==, G_GUINT64_CONSTANT(285893464064));
  }
  g_remove(path);
  g_rmdir(dir);
}

/* Families whose defaults are the checkpoint's shape, each as transformers 5.24 builds it from
 * {"model_type": ...} alone (python/tests/test_hf_configs.py holds every member to it): Helium's
 * llama block, Arcee's neox block with RMSNorms (weights only: the eager time's RMSNorm chain)
 * and ReLU squared, Jais 2's with LayerNorms and every projection biased, NanoChat's with
 * RMSNorms without weights and its logits capped. */
static void
test_hf_family_defaults(void)
{
  static const struct {
    const char *type;
    StwArch arch;
    guint64 params;
    gboolean rms, biased;
  } cases[] = {
    { "helium", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(2172643840), TRUE, FALSE },
    { "arcee", STW_ARCH_NEOX, G_GUINT64_CONSTANT(4022766080), TRUE, FALSE },
    { "jais2", STW_ARCH_NEOX, G_GUINT64_CONSTANT(8090401280), FALSE, TRUE },
    { "nanochat", STW_ARCH_NEOX, G_GUINT64_CONSTANT(256573440), TRUE, FALSE },
    { "internlm3", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(8804241408), TRUE, FALSE },
    { "iquestcoder", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(39794283520), TRUE, FALSE },
    { "hyperclovax", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(6738677760), TRUE, FALSE },
    { "minimax_m2", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(228689748992), TRUE, FALSE },
    { "youtu", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(1961560064), TRUE, FALSE },
    { "solar_open", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(102651793408), TRUE, FALSE },
    { "glm4_moe_lite", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(29943390976), TRUE, FALSE },
    { "codegen", STW_ARCH_NEOX, G_GUINT64_CONSTANT(6050882784), FALSE, TRUE },
    { "vaultgemma", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(2614222080), TRUE, FALSE },
    { "flex_olmo", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(33270665216), TRUE, FALSE },
    { "exaone_moe", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(28550639616), TRUE, FALSE },
    { "xglm", STW_ARCH_NEOX, G_GUINT64_CONSTANT(564463616), FALSE, TRUE },
    { "biogpt", STW_ARCH_GPT, G_GUINT64_CONSTANT(346763264), FALSE, TRUE },
    { "bitnet", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(2741155840), TRUE, FALSE },
    { "ernie4_5_moe", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(21825437888), TRUE, FALSE },
    { "persimmon", STW_ARCH_NEOX, G_GUINT64_CONSTANT(9397175296), FALSE, TRUE },
    { "cwm", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(32581097472), TRUE, FALSE },
    { "granite_swa", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(2144463840), TRUE, FALSE },
    { "granitemoe_swa", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(37039117312), TRUE, FALSE },
    { "hy_v3", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(295033528320), TRUE, FALSE },
    { "kolibri1", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(78103055360), TRUE, FALSE },
    { "mellum", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(12149923072), TRUE, FALSE },
    { "ctrl", STW_ARCH_NEOX, G_GUINT64_CONSTANT(1637964550), FALSE, TRUE },
    { "sarvam_moe", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(32152648064), TRUE, FALSE },
    { "sarvam_mla", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(106031763456), TRUE, FALSE },
    { "gpt-sw3", STW_ARCH_GPT, G_GUINT64_CONSTANT(124439808), FALSE, TRUE },
    { "xlm-roberta", STW_ARCH_BERT, G_GUINT64_CONSTANT(109482240), FALSE, TRUE },
    { "camembert", STW_ARCH_BERT, G_GUINT64_CONSTANT(109482240), FALSE, TRUE },
    { "data2vec-text", STW_ARCH_BERT, G_GUINT64_CONSTANT(109482240), FALSE, TRUE },
    { "minicpm3", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(4073875968), TRUE, FALSE },
    { "cohere2_moe", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(190004928512), TRUE, FALSE },
    { "afmoe", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(19232600000), TRUE, FALSE },
    { "ernie", STW_ARCH_BERT, G_GUINT64_CONSTANT(109482240), FALSE, TRUE },
    { "flint", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(39785287456), TRUE, FALSE },
    { "apertus", STW_ARCH_NEOX, G_GUINT64_CONSTANT(6979596352), TRUE, FALSE },
    { "openai-gpt", STW_ARCH_GPT, G_GUINT64_CONSTANT(116534784), FALSE, TRUE },
    { "diffllama", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(1204885504), TRUE, FALSE },
    { "deepseek_v32", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(671877929216), TRUE, FALSE },
    { "glm_moe_dsa", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(743911199232), TRUE, FALSE },
    { "bert-generation", STW_ARCH_BERT, G_GUINT64_CONSTANT(354402304), FALSE, TRUE },
    { "qwen3_next", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(79674391296), TRUE, FALSE },
    { "qwen3_5_text", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(8953803264), TRUE, FALSE },
    { "qwen3_5_moe_text", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(34660610688), TRUE, FALSE },
    { "olmo_hybrid", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(7430870688), TRUE, FALSE },
    { "granitemoehybrid", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(38601064448), TRUE, FALSE },
    { "bamba", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(9992765440), TRUE, FALSE },
    { "lfm2", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(2705497600), TRUE, FALSE },
    { "minimax", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(47373946880), TRUE, FALSE },
    { "mamba2", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(7285403648), TRUE, FALSE },
    { "mamba", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(159308544), TRUE, FALSE },
    { "falcon_mamba", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(159308544), TRUE, FALSE },
    { "jamba", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(51570323328), TRUE, FALSE },
    { "kimi_linear", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(49133074464), TRUE, FALSE },
    { "bailing_hybrid", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(124414191072), TRUE, FALSE },
    { "falcon_h1", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(8514961408), TRUE, FALSE },
    { "nemotron_h", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(1968355712), TRUE, FALSE },
    { "gemma4_text", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(5077177856), TRUE, FALSE },
    { "lfm3", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(1728801536), TRUE, FALSE },
    { "apertus1p5_text", STW_ARCH_NEOX, G_GUINT64_CONSTANT(8091086912), TRUE, FALSE },
    { "lara_mini", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(7281684672), TRUE, FALSE },
    { "axk1", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(518983052288), TRUE, FALSE },
    { "mimo_v2_flash", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(308778768832), TRUE, FALSE },
    { "aria_text", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(18517069824), TRUE, FALSE },
    { "gemma3n_text", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(6835235568), TRUE, FALSE },
    { "longcat_flash", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(560664958976), TRUE, FALSE },
    { "laguna", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(33189975808), TRUE, FALSE },
    { "minimax_m3_vl_text", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(447186441216), TRUE, FALSE },
  };
  g_autofree char *dir = g_dir_make_tmp("stowage-hf-XXXXXX", NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = g_strdup_printf("{\"model_type\": \"%s\"}", cases[i].type);
    StwModelConfig cfg;
    resolve_text(dir, text, &cfg);
    g_assert_cmpint(cfg.arch, ==, cases[i].arch);
    g_assert_cmpuint(stw_model_param_count(&cfg), ==, cases[i].params);
    g_assert_cmpint(stw_model_rms_norm(&cfg), ==, cases[i].rms);
    g_assert_cmpint(stw_model_norm_bias(&cfg), ==, !cases[i].rms);
    g_assert_cmpint(stw_model_has_bias(&cfg, STW_SITE_MLP), ==, cases[i].biased);
    /* CodeGen's MLP biased, as GPT-J's, its attention not */
    gboolean codegen = strcmp(cases[i].type, "codegen") == 0;
    g_assert_cmpint(stw_model_has_bias(&cfg, STW_SITE_OUT), ==, cases[i].biased && !codegen);
    /* CTRL's LM head has a bias of its own, as CodeGen's, and its MLP runs ReLU */
    gboolean ctrl = strcmp(cases[i].type, "ctrl") == 0;
    g_assert_cmpint(cfg.head_bias, ==, codegen || ctrl);
    if (ctrl)
      g_assert_cmpint(stw_model_activation(&cfg), ==, STW_ACT_RELU);
    g_assert_cmpint(cfg.diff_attn, ==, strcmp(cases[i].type, "diffllama") == 0);
    /* BertGeneration's encoder: no token types, no pooler */
    g_assert_cmpint(cfg.no_pooler, ==, strcmp(cases[i].type, "bert-generation") == 0);
    g_assert_cmpint(cfg.no_token_types, ==, strcmp(cases[i].type, "bert-generation") == 0);
    /* OpenAI GPT: no norm before its head */
    g_assert_cmpint(cfg.no_final_norm, ==, strcmp(cases[i].type, "openai-gpt") == 0);
    /* Apertus's xIELU, with its two learned scalars a block */
    g_assert_cmpint(stw_model_activation(&cfg) == STW_ACT_XIELU, ==,
                    g_str_has_prefix(cases[i].type, "apertus"));
    /* NanoChat's norms have no weights (one over the embeddings too), its logits capped, as
     * VaultGemma's are (its attention's too) */
    gboolean nanochat = strcmp(cases[i].type, "nanochat") == 0;
    gboolean vault = strcmp(cases[i].type, "vaultgemma") == 0;
    g_assert_cmpint(stw_model_norm_weight(&cfg), ==, !nanochat);
    g_assert_cmpint(cfg.embed_norm, ==, nanochat);
    g_assert_cmpint(cfg.logit_softcap, ==, nanochat || vault);
    g_assert_cmpint(cfg.attn_softcap, ==, vault);
    g_assert_cmpint(cfg.sub_norms, ==, strcmp(cases[i].type, "bitnet") == 0);
    g_assert_cmpint(cfg.router_score_bias, ==, strcmp(cases[i].type, "ernie4_5_moe") == 0 ||
                                                   strcmp(cases[i].type, "afmoe") == 0 ||
                                                   strcmp(cases[i].type, "laguna") == 0);
    /* a gate a head on attention's output: Laguna's by default, Ring's and LFM3's */
    g_assert_cmpint(cfg.attn_head_gate, ==, strcmp(cases[i].type, "laguna") == 0 ||
                                                strcmp(cases[i].type, "lfm3") == 0 ||
                                                strcmp(cases[i].type, "bailing_hybrid") == 0);
    g_assert_cmpint(cfg.attn_gate, ==, strcmp(cases[i].type, "afmoe") == 0 ||
                                           g_str_has_prefix(cases[i].type, "qwen3_next") ||
                                           g_str_has_prefix(cases[i].type, "qwen3_5"));
    g_assert_cmpint(stw_model_linear_blocks(&cfg) != 0, ==,
                    g_str_has_prefix(cases[i].type, "qwen3_next") ||
                        g_str_has_prefix(cases[i].type, "qwen3_5") ||
                        strcmp(cases[i].type, "olmo_hybrid") == 0 ||
                        strcmp(cases[i].type, "granitemoehybrid") == 0 ||
                        strcmp(cases[i].type, "bamba") == 0 ||
                        strcmp(cases[i].type, "minimax") == 0 ||
                        g_str_has_suffix(cases[i].type, "mamba2") ||
                        g_str_has_suffix(cases[i].type, "mamba") ||
                        strcmp(cases[i].type, "jamba") == 0 ||
                        strcmp(cases[i].type, "kimi_linear") == 0 ||
                        strcmp(cases[i].type, "falcon_h1") == 0 ||
                        strcmp(cases[i].type, "nemotron_h") == 0 ||
                        strcmp(cases[i].type, "lfm3") == 0 || /* its short convolutions */
                        strcmp(cases[i].type, "lara_mini") == 0 ||
                        strcmp(cases[i].type, "bailing_hybrid") == 0); /* LFM2's defaults:
                                                                        * attention in every
                                                                        * block */
    g_assert_cmpint(stw_model_mlp_blocks(&cfg) == 0, ==, g_str_has_suffix(cases[i].type, "mamba2") ||
                                        g_str_has_suffix(cases[i].type, "mamba"));
    /* Falcon-H1: Mamba-2 beside attention in every block, without its gated norm */
    g_assert_cmpint(cfg.linear_parallel, ==, strcmp(cases[i].type, "falcon_h1") == 0);
    g_assert_cmpint(cfg.linear_no_out_norm, ==, strcmp(cases[i].type, "falcon_h1") == 0);
    /* Granite's sliding-window models and Flint: gpt-oss's sink logit per head */
    g_assert_cmpint(cfg.attn_sinks, ==, g_str_has_suffix(cases[i].type, "_swa") ||
                                            strcmp(cases[i].type, "flint") == 0 ||
                                            strcmp(cases[i].type, "mimo_v2_flash") == 0);
    /* HyperCLOVA X's norms after the branches too (use_post_norm, on by default), FlexOlmo's
     * and OLMo Hybrid's after them only, CodeGen's one norm both branches read */
    const char *type = cases[i].type;
    gboolean both = strcmp(type, "hyperclovax") == 0 || strcmp(type, "kolibri1") == 0 ||
                    strcmp(type, "afmoe") == 0 || strcmp(type, "gemma4_text") == 0 ||
                    strcmp(type, "gemma3n_text") == 0 ||
                    strcmp(type, "lfm3") == 0;
    g_assert_cmpint(cfg.norms, ==, both                              ? STW_NORMS_BOTH
                                   : strcmp(type, "flex_olmo") == 0 ||
                                           strcmp(type, "olmo_hybrid") == 0
                                       ? STW_NORMS_POST
                                   : strcmp(type, "codegen") == 0 ||
                                           strcmp(type, "cohere2_moe") == 0
                                       ? STW_NORMS_SHARED
                                                                    : STW_NORMS_PRE);
  }
  g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/* Hugging Face config.json files as published with the checkpoints (tests/fixtures/hf): each
 * reads as its architecture with the checkpoint's exact parameter count. */
static void
test_hf_configs(void)
{
  static const struct {
    const char *dir;
    StwArch arch;
    guint64 params; /* the checkpoint's, from its safetensors index or model card */
    guint64 kv_heads, head_dim;
    gboolean tied;
  } cases[] = {
    { "gpt2", STW_ARCH_GPT, G_GUINT64_CONSTANT(124439808), 12, 64, TRUE },
    { "pythia-70m", STW_ARCH_NEOX, G_GUINT64_CONSTANT(70426624), 8, 64, FALSE },
    { "Llama-2-7b-hf", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(6738415616), 32, 128, FALSE },
    { "Llama-3.2-1B", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(1235814400), 8, 64, TRUE },
    { "Mistral-7B-v0.1", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(7241732096), 8, 128, FALSE },
    { "Mixtral-8x7B-v0.1", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(46702792704), 8, 128, FALSE },
    { "Qwen2-7B", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(7615616512), 4, 128, FALSE },
    { "Qwen2-0.5B", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(494032768), 2, 64, TRUE },
    { "gemma-7b", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(8537680896), 16, 256, TRUE },
    { "Qwen3-8B", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(8190735360), 8, 128, FALSE },
    /* (as transformers 5.24 builds it: Mistral3Config ties the head where the file does not
     * say, though the checkpoint holds a head of its own, 671,088,640 more) */
    { "Mistral-Small-3.1-24B-Instruct-2503", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(23340272640), 8,
      128, TRUE },
    { "Qwen3-4B", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(4022468096), 8, 128, TRUE },
    { "Phi-3-mini-4k-instruct", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(3821079552), 32, 96, FALSE },
    { "gemma-2-9b", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(9241705984), 8, 256, TRUE },
    { "gemma-3-1b-pt", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(999885952), 1, 256, TRUE },
    /* (the multimodal checkpoint as AutoModelForCausalLM builds it: 419,816,304 of SigLIP's and
     * the projector's beside the language model's 3,880,263,168) */
    { "gemma-3-4b-it", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(4300079472), 4, 256, TRUE },
    /* (324,487,168 of CLIP's and the projector's beside Vicuna's 6,738,939,904) */
    { "llava-1.5-7b-hf", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(7063427072), 32, 128, FALSE },
    /* (the rest of the LLaVA family: 324,491,264, 414,732,320, 434,957,312 and 415,098,864 of
     * their towers and projectors) */
    { "llava-v1.6-mistral-7b-hf", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(7566747648), 8, 128,
      FALSE },
    { "llava-onevision-qwen2-7b-ov-hf", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(8030807584), 4, 128,
      FALSE },
    { "pixtral-12b", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(12682739712), 8, 128, FALSE },
    { "paligemma2-3b-pt-224", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(3032242416), 4, 256, TRUE },
    /* (the checkpoint's count: 2,639,926,819 of the tower's, its projector's and the language
     * model's 8 cross-attention blocks, which a text step skips) */
    { "Llama-3.2-11B-Vision-Instruct", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(10670220835), 8, 128,
      FALSE },
    /* (the Qwen-VL checkpoints whole, as AutoModelForImageTextToText builds them: 675,759,104,
     * 676,550,144, 576,388,336 and 538,631,408 of their vision towers and mergers; Qwen2-VL's
     * and Qwen2.5-VL's language models given as the file's own members) */
    { "Qwen2-VL-7B-Instruct", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(8291375616), 4, 128, FALSE },
    { "Qwen2.5-VL-7B-Instruct", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(8292166656), 4, 128, FALSE },
    { "Qwen3-VL-8B-Instruct", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(8767123696), 8, 128, FALSE },
    { "Qwen3-VL-30B-A3B-Instruct", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(31070754032), 4, 128,
      FALSE },
    { "Qwen3-30B-A3B", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(30532122624), 4, 128, FALSE },
    { "granite-3.1-8b-base", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(8170848256), 8, 128, TRUE },
    { "SmolLM3-3B", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(3075098624), 4, 128, TRUE },
    { "OLMo-2-1124-7B", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(7298617344), 32, 128, FALSE },
    { "starcoder2-3b", STW_ARCH_NEOX, G_GUINT64_CONSTANT(3030371328), 2, 128, TRUE },
    { "starcoderbase-1b", STW_ARCH_GPT, G_GUINT64_CONSTANT(1137207296), 1, 128, TRUE },
    { "phi-2", STW_ARCH_NEOX, G_GUINT64_CONSTANT(2779683840), 32, 80, FALSE },
    { "gpt-j-6b", STW_ARCH_NEOX, G_GUINT64_CONSTANT(6050882784), 16, 256, FALSE },
    { "falcon-7b", STW_ARCH_NEOX, G_GUINT64_CONSTANT(6921720704), 1, 64, TRUE },
    { "OLMoE-1B-7B-0924", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(6919161856), 16, 128, FALSE },
    { "Qwen1.5-MoE-A2.7B", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(14315784192), 16, 128, FALSE },
    { "glm-4-9b-hf", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(9399951360), 2, 128, FALSE },
    { "GLM-4-9B-0414", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(9400279040), 2, 128, FALSE },
    { "bert-base-uncased", STW_ARCH_BERT, G_GUINT64_CONSTANT(109482240), 12, 64, TRUE },
    { "roberta-base", STW_ARCH_BERT, G_GUINT64_CONSTANT(124645632), 12, 64, TRUE },
    { "opt-1.3b", STW_ARCH_GPT, G_GUINT64_CONSTANT(1315758080), 32, 64, TRUE },
    { "gpt-neo-125m", STW_ARCH_GPT, G_GUINT64_CONSTANT(125198592), 12, 64, TRUE },
    { "gpt-oss-20b", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(20914757184), 8, 64, FALSE },
    { "bloom-560m", STW_ARCH_NEOX, G_GUINT64_CONSTANT(559214592), 16, 64, TRUE },
    { "GLM-4.5-Air", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(106852245504), 8, 128, FALSE },
    { "DeepSeek-V3", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(671026404352), 128, 128, FALSE },
    { "DeepSeek-V2-Lite", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(15706484224), 16, 128, FALSE },
    { "stablelm-2-1_6b", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(1644515328), 32, 64, FALSE },
    { "OLMo-1B-hf", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(1176764416), 16, 128, TRUE },
    { "mpt-7b", STW_ARCH_NEOX, G_GUINT64_CONSTANT(6649286656), 32, 128, TRUE },
    { "Minitron-4B-Base", STW_ARCH_NEOX, G_GUINT64_CONSTANT(4190509056), 8, 128, FALSE },
    { "granite-3.0-1b-a400m-base", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(1334628352), 8, 64, TRUE },
    { "Phi-3.5-MoE-instruct", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(41873153344), 8, 128, FALSE },
    { "dbrx-base", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(131596523520), 8, 128, FALSE },
    { "EXAONE-3.5-7.8B-Instruct", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(7818448896), 8, 128, FALSE },
    /* (transformers' counts of the configs; their cards say 8B, and 31.6B with 3.6B active) */
    { "Nemotron-H-8B-Base-8K", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(8100852736), 8, 128, FALSE },
    { "NVIDIA-Nemotron-3-Nano-30B-A3B", STW_ARCH_LLAMA, G_GUINT64_CONSTANT(31577937344), 2, 128,
      FALSE },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *rel = g_strdup_printf("hf/%s/config.json", cases[i].dir);
    g_autofree char *path = stw_test_fixture(rel);
    StwModelConfig cfg;
    GError *error = NULL;
    g_test_message("%s", cases[i].dir);
    g_assert_true(stw_model_resolve(path, &cfg, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(cfg.name, ==, cases[i].dir); /* the folder, or the checkpoint's name */
    g_assert_cmpint(cfg.arch, ==, cases[i].arch);
    g_assert_cmpuint(stw_model_param_count(&cfg), ==, cases[i].params);
    g_assert_cmpuint(cfg.kv_heads, ==, cases[i].kv_heads);
    g_assert_cmpuint(stw_model_head_dim(&cfg), ==, cases[i].head_dim);
    g_assert_cmpint(cfg.tied, ==, cases[i].tied);
  }
  /* gpt-oss: a sink logit per head (64 a block), biases on q, k, v, o, the 32 experts and the
   * router; 4 of 32 experts a token */
  StwModelConfig go;
  g_autofree char *gp = stw_test_fixture("hf/gpt-oss-20b/config.json");
  g_assert_true(stw_model_resolve(gp, &go, NULL));
  g_assert_true(go.attn_sinks);
  g_assert_cmpuint(go.experts, ==, 32);
  g_assert_cmpuint(stw_model_active_experts(&go), ==, 4);
  g_assert_true(stw_model_has_bias(&go, STW_SITE_MLP) && stw_model_has_bias(&go, STW_SITE_OUT));
  g_assert_cmpuint(stw_model_active_param_count(&go), ==, G_GUINT64_CONSTANT(4187440704));
  {
    StwModelConfig one = go;
    one.layers = 1;
    g_autoptr(StwModelGraph) gg = stw_model_graph_new(&one, 1, 16, STW_DTYPE_BF16,
                                                      STW_ATTENTION_FLASH);
    const StwGraphOp *core = NULL, *router = NULL;
    for (guint i = 0; i < gg->ops->len; i++) {
      const StwGraphOp *o = gg->ops->pdata[i];
      core = o->kind == STW_OP_ATTN_CORE ? o : core;
      router = o->kind == STW_OP_MOE_ROUTER ? o : router;
    }
    /* the attention reads the sinks (their gradient its backward's); the router its bias */
    g_assert_cmpuint(core->params->len, ==, 1);
    g_assert_cmpstr(((StwGraphTensor *)gg->tensors->pdata[g_array_index(core->params, guint32,
                                                                        0)])->name,
                    ==, "layers.0.self_attn.sinks");
    g_assert_cmpuint(router->params->len, ==, 2);
  }
  StwModelConfig no_sinks = go;
  no_sinks.attn_sinks = FALSE;
  g_assert_cmpuint(stw_model_param_count(&go) - stw_model_param_count(&no_sinks), ==, 24 * 64);
  /* the mixtures' active parameters (Granite 3.0's 400M a token of 1.3B, Phi-3.5-MoE's 6.6B
   * of 41.9B, as published), PhiMoE's LM head bias, Nemotron's ReLU squared as one kernel */
  static const struct {
    const char *dir;
    guint64 active;
  } moes[] = { { "granite-3.0-1b-a400m-base", G_GUINT64_CONSTANT(428658688) },
               { "Phi-3.5-MoE-instruct", G_GUINT64_CONSTANT(6640999744) },
               { "dbrx-base", G_GUINT64_CONSTANT(36469708800) } };
  for (gsize i = 0; i < G_N_ELEMENTS(moes); i++) {
    g_autofree char *rel = g_strdup_printf("hf/%s/config.json", moes[i].dir);
    g_autofree char *path = stw_test_fixture(rel);
    StwModelConfig cfg;
    g_assert_true(stw_model_resolve(path, &cfg, NULL));
    g_assert_cmpuint(stw_model_active_param_count(&cfg), ==, moes[i].active);
    g_assert_cmpint(cfg.head_bias, ==, i == 1);
    static const StwNormType norm_types[] = { STW_NORM_DEFAULT, STW_NORM_LAYER,
                                              STW_NORM_LAYER_NO_BIAS };
    g_assert_cmpint(cfg.norm_type, ==, norm_types[i]);
  }
  /* DBRX's sizes in objects of their own: what is wrong there is said there */
  static const struct {
    const char *extra, *needle;
  } dbrx_bad[] = {
    { "\"attn_config\": 8", "dbrx.json: $.attn_config: expected an object" },
    { "\"attn_config\": {\"kv_n_heads\": 0}",
      "dbrx.json: $.attn_config.kv_n_heads: 0 is out of range (expected 1 to 1048576)" },
    { "\"ffn_config\": {\"moe_num_experts\": 4, \"moe_top_k\": 5}",
      "dbrx.json: $: as a dbrx model: experts_per_token must be at most experts" },
    { "\"tie_word_embeddings\": true", "dbrx.json: $.tie_word_embeddings: true: DBRX's head is "
                                        "its own (transformers refuses to tie it)" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(dbrx_bad); i++) {
    g_autofree char *text = g_strdup_printf("{\"model_type\": \"dbrx\", \"n_layers\": 2, "
                                            "\"d_model\": 64, \"n_heads\": 4, %s}",
                                            dbrx_bad[i].extra);
    StwModelConfig cfg;
    GError *error = NULL;
    g_assert_false(stw_model_config_parse("dbrx.json", text, strlen(text), &cfg, &error));
    stw_assert_error_contains(error, dbrx_bad[i].needle);
  }
  {
    g_autofree char *path = stw_test_fixture("hf/Minitron-4B-Base/config.json");
    StwModelConfig cfg;
    g_assert_true(stw_model_resolve(path, &cfg, NULL));
    g_assert_cmpint(cfg.activation, ==, STW_ACT_RELU2); /* its hidden_act relu2 */
    g_assert_false(stw_model_has_bias(&cfg, STW_SITE_QKV) ||
                   stw_model_has_bias(&cfg, STW_SITE_MLP));
    /* its attention divides by num_key_value_heads: a file without it is refused */
    static const char no_kv[] = "{\"model_type\": \"nemotron\", \"num_hidden_layers\": 2, "
                                "\"hidden_size\": 64, \"num_attention_heads\": 4}";
    GError *error = NULL;
    g_assert_false(stw_model_config_parse("nemotron.json", no_kv, strlen(no_kv), &cfg, &error));
    stw_assert_error_contains(error, "nemotron.json: $.num_key_value_heads: required (a number): "
                                     "transformers builds no nemotron model without it");
    /* Ministral's rotary positions are head_dim wide: a file without it is refused too */
    static const char no_head_dim[] = "{\"model_type\": \"ministral\", \"head_dim\": null}";
    g_assert_false(stw_model_config_parse("ministral.json", no_head_dim, strlen(no_head_dim), &cfg,
                                          &error));
    stw_assert_error_contains(error, "ministral.json: $.head_dim: required (a number): "
                                     "transformers builds no ministral model without it");
    /* dots.llm1's experts likewise; its experts a token null: 6, which no weight depends on */
    static const char no_experts[] = "{\"model_type\": \"dots1\", \"n_shared_experts\": 1}";
    g_assert_false(stw_model_config_parse("dots1.json", no_experts, strlen(no_experts), &cfg,
                                          &error));
    stw_assert_error_contains(error, "dots1.json: $.n_routed_experts: required (a number): "
                                     "transformers builds no dots1 model without it");
    static const char dots[] = "{\"model_type\": \"dots1\", \"n_routed_experts\": 128, "
                               "\"n_shared_experts\": 2, \"num_experts_per_tok\": null}";
    g_assert_true(stw_model_config_parse("dots1.json", dots, strlen(dots), &cfg, &error));
    g_assert_cmpuint(stw_model_active_experts(&cfg), ==, 6);
    g_assert_cmpuint(cfg.shared_expert_ffn, ==, 2 * 1408);
    g_assert_true(cfg.qk_norm && cfg.shared_expert_ungated);
  }
  /* the MLPs' activations, where not their architecture's: OPT's ReLU, GPT-BigCode's one
   * GELU kernel (gelu_pytorch_tanh), Phi-2's and GPT-J's GELU-new in neox-style blocks */
  static const struct {
    const char *dir;
    StwActivation act;
    gboolean gelu_new;
  } acts[] = { { "opt-1.3b", STW_ACT_RELU, FALSE }, { "starcoderbase-1b", STW_ACT_GELU, FALSE },
               { "phi-2", STW_ACT_GELU_NEW, TRUE }, { "gpt-j-6b", STW_ACT_GELU_NEW, TRUE },
               { "gpt2", STW_ACT_DEFAULT, TRUE }, { "pythia-70m", STW_ACT_DEFAULT, FALSE },
               { "starcoder2-3b", STW_ACT_DEFAULT, FALSE } };
  for (gsize i = 0; i < G_N_ELEMENTS(acts); i++) {
    g_autofree char *rel = g_strdup_printf("hf/%s/config.json", acts[i].dir);
    g_autofree char *path = stw_test_fixture(rel);
    StwModelConfig cfg;
    g_assert_true(stw_model_resolve(path, &cfg, NULL));
    g_assert_cmpint(cfg.activation, ==, acts[i].act);
    g_assert_cmpint(stw_model_gelu_new(&cfg), ==, acts[i].gelu_new);
  }
  /* GLM-4.5-Air: its first block dense (10944 wide), then 128 experts of 1408, 8 a token, and
   * one shared expert of 1408 without a gate; the format writes and reads all of it back */
  StwModelConfig air;
  g_autofree char *airp = stw_test_fixture("hf/GLM-4.5-Air/config.json");
  g_assert_true(stw_model_resolve(airp, &air, NULL));
  g_assert_cmpuint(stw_model_dense_prefix(&air), ==, 1);
  g_assert_cmpuint(air.dense_ffn, ==, 10944);
  g_assert_cmpuint(air.shared_expert_ffn, ==, 1408);
  g_assert_true(air.shared_expert_ungated);
  g_assert_cmpuint(stw_model_active_param_count(&air), ==, G_GUINT64_CONSTANT(13424123904));
  {
    /* one dense block: 3 x 4096 x 10944 where the experts' block has 129 x 3 x 4096 x 1408
     * and the router's 128 x 4096 */
    StwModelConfig all_moe = air;
    memset(all_moe.dense_blocks, 0, sizeof all_moe.dense_blocks);
    all_moe.dense_ffn = 0;
    g_assert_cmpuint(stw_model_param_count(&all_moe) - stw_model_param_count(&air), ==,
                     G_GUINT64_CONSTANT(129) * 3 * 4096 * 1408 + 128 * 4096 -
                         G_GUINT64_CONSTANT(3) * 4096 * 10944);
    StwModelConfig back;
    round_trip(&air, "\"shared_expert_gate\":false,\"dense_layers\":1,\"dense_ffn\":10944",
               &back);
    static const struct {
      guint64 dense_block, dense_ffn, experts;
      const char *needle;
    } bad[] = { { 46, 10944, 128, "dense_blocks must be blocks below layers" },
                { 0, 0, 128, "dense blocks (dense_layers, dense_blocks) and dense_ffn go together" },
                { 0, 10944, 0, "dense blocks (dense_layers, dense_blocks) go with experts" } };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
      StwModelConfig x = air;
      stw_model_set_block_dense(&x, bad[i].dense_block, TRUE);
      x.dense_ffn = bad[i].dense_ffn;
      if (bad[i].experts == 0)
        x.experts = 0, x.shared_expert_ffn = 0, x.shared_expert_ungated = FALSE;
      GError *error = NULL;
      g_assert_false(stw_model_config_validate(&x, NULL, &error));
      stw_assert_error_contains(error, bad[i].needle);
    }
  }
  /* DeepSeek-V3's latent attention, a block's tensors by hand: q_a 1536 x 7168 and its norm,
   * q_b 128 x 192 x 1536, kv_a (512 + 64) x 7168 and its norm, kv_b 128 x 256 x 512, o 7168 x
   * 128 x 128; 37.6B of 671B active a token (3 dense blocks, 58 of 256 + 1 experts) */
  StwModelConfig ds;
  g_autofree char *dsp = stw_test_fixture("hf/DeepSeek-V3/config.json");
  g_assert_true(stw_model_resolve(dsp, &ds, NULL));
  g_assert_cmpuint(ds.kv_lora_rank, ==, 512);
  g_assert_cmpuint(ds.q_lora_rank, ==, 1536);
  g_assert_cmpuint(stw_model_qk_head_dim(&ds), ==, 192);
  g_assert_cmpuint(stw_model_v_head_dim(&ds), ==, 128);
  g_assert_cmpuint(stw_model_active_param_count(&ds), ==, G_GUINT64_CONSTANT(37552282624));
  {
    StwModelConfig one = ds;
    one.layers = 1;
    g_autoptr(StwModelGraph) dg = stw_model_graph_new(&one, 1, 16, STW_DTYPE_BF16,
                                                      STW_ATTENTION_FLASH);
    guint64 attn = 0;
    for (guint i = 0; i < dg->tensors->len; i++) {
      const StwGraphTensor *x = dg->tensors->pdata[i];
      if (strstr(x->name, ".self_attn.") != NULL)
        attn += x->numel;
    }
    g_assert_cmpuint(attn, ==, G_GUINT64_CONSTANT(1536) * 7168 + 1536 + 128 * 192 * 1536 +
                                   576 * 7168 + 512 + 128 * 256 * 512 + 7168 * 128 * 128);
    const StwGraphOp *core = NULL, *up = NULL;
    for (guint i = 0; i < dg->ops->len; i++) {
      const StwGraphOp *o = dg->ops->pdata[i];
      core = o->kind == STW_OP_ATTN_CORE ? o : core;
      up = g_str_equal(o->name, "h0.attn.qkv_b") ? o : up;
    }
    /* QK^T over 192 a head, PV over 128; the up projections' FLOPs from the ranks */
    g_assert_cmpuint(core->flops, ==, G_GUINT64_CONSTANT(2) * 16 * 16 * 128 * (192 + 128) / 2);
    g_assert_nonnull(up);
    g_assert_cmpuint(up->flops, ==, G_GUINT64_CONSTANT(2) * 16 * (1536 * 128 * 192 +
                                                                  512 * 128 * 256));
    cJSON *j = stw_model_config_to_json(&ds, TRUE);
    g_autofree char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    g_assert_nonnull(strstr(text, "\"kv_lora_rank\":512,\"q_lora_rank\":1536,\"rope_dim\":64,"
                                  "\"v_head_dim\":128"));
    StwModelConfig back;
    g_assert_true(stw_model_config_parse("ds.json", text, strlen(text), &back, NULL));
    g_assert_cmpuint(stw_model_param_count(&back), ==, G_GUINT64_CONSTANT(671026404352));
    static const struct {
      guint64 kv_heads, v_head_dim;
      StwArch arch;
      const char *needle;
    } bad[] = { { 1, 128, STW_ARCH_LLAMA, "kv_heads must equal heads" },
                { 128, 0, STW_ARCH_LLAMA, "latent attention needs v_head_dim" },
                { 128, 128, STW_ARCH_NEOX, "latent attention (kv_lora_rank) is modelled for "
                                           "llama-style blocks only" } };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
      StwModelConfig x = ds;
      x.kv_heads = bad[i].kv_heads;
      x.v_head_dim = bad[i].v_head_dim;
      x.arch = bad[i].arch;
      if (x.arch != STW_ARCH_LLAMA) { /* dense, so that the experts are not what is refused */
        x.experts = x.experts_per_token = x.shared_expert_ffn = 0;
        memset(x.dense_blocks, 0, sizeof x.dense_blocks);
        x.dense_ffn = 0;
        x.shared_expert_ungated = FALSE;
      }
      GError *error = NULL;
      g_assert_false(stw_model_config_validate(&x, NULL, &error));
      stw_assert_error_contains(error, bad[i].needle);
    }
  }
  /* Cohere's Command R (its defaults: 34,980,831,232 parameters): a parallel block, one norm a
   * block where Llama's sequential one has two; the MLP's branch opens at its projection */
  {
    const char *text = "{\"model_type\":\"cohere\"}";
    StwModelConfig co;
    g_assert_true(stw_model_config_parse("cohere.json", text, strlen(text), &co, NULL));
    g_assert_cmpint(co.norms, ==, STW_NORMS_SHARED);
    g_assert_cmpuint(stw_model_param_count(&co), ==, G_GUINT64_CONSTANT(34980831232));
    StwModelConfig seq = co;
    seq.norms = STW_NORMS_PRE;
    g_assert_cmpuint(stw_model_param_count(&seq) - stw_model_param_count(&co), ==, 40 * 8192);
    co.layers = 1;
    g_autoptr(StwModelGraph) cg = stw_model_graph_new(&co, 1, 16, STW_DTYPE_BF16,
                                                      STW_ATTENTION_FLASH);
    guint norms = 0;
    for (guint i = 0; i < cg->ops->len; i++) {
      const StwGraphOp *o = cg->ops->pdata[i];
      norms += o->kind == STW_OP_NORM_MLP;
      if (o->kind == STW_OP_MLP_IN)
        g_assert_cmpint(o->residual, ==, STW_RESIDUAL_OPEN);
    }
    g_assert_cmpuint(norms, ==, 0);
  }
  /* Llama 4 Scout's language model (its defaults): 16 experts and a shared one of 8192 in every
   * block, 107.8B parameters, 17.2B active; Maverick's: 128 experts in every second block, the
   * others dense (16384 wide), 400.7B parameters (transformers 5.24's count), 17.2B active */
  {
    const char *scout = "{\"model_type\":\"llama4_text\"}";
    const char *maverick = "{\"model_type\":\"llama4_text\",\"interleave_moe_layer_step\":2,"
                           "\"num_local_experts\":128}";
    const char *no_step = "{\"model_type\":\"llama4_text\",\"interleave_moe_layer_step\":0}";
    StwModelConfig l4;
    GError *error = NULL;
    g_assert_true(stw_model_config_parse("scout.json", scout, strlen(scout), &l4, NULL));
    g_assert_cmpuint(stw_model_param_count(&l4), ==, G_GUINT64_CONSTANT(107769861120));
    g_assert_cmpuint(stw_model_active_param_count(&l4), ==, G_GUINT64_CONSTANT(17172894720));
    g_assert_true(l4.shared_expert_ungated && l4.shared_expert_ffn == 8192);
    g_assert_true(stw_model_config_parse("maverick.json", maverick, strlen(maverick), &l4,
                                         NULL));
    g_assert_cmpuint(stw_model_param_count(&l4), ==, G_GUINT64_CONSTANT(400711848960));
    g_assert_cmpuint(stw_model_active_param_count(&l4), ==, G_GUINT64_CONSTANT(17184691200));
    g_assert_cmpuint(stw_model_dense_blocks(&l4), ==, 24);
    g_assert_true(stw_model_block_dense(&l4, 46) && !stw_model_block_dense(&l4, 47));
    g_assert_cmpuint(l4.dense_ffn, ==, 16384);
    /* stowage's own format: dense blocks that are not the first by their indices */
    StwModelConfig back;
    round_trip(&l4, "\"experts_per_token\":1,\"shared_expert_ffn\":8192,"
                    "\"shared_expert_gate\":false,\"dense_blocks\":[0,2,4,6,8,10,12,14,16,18,20,"
                    "22,24,26,28,30,32,34,36,38,40,42,44,46],\"dense_ffn\":16384",
               &back);
    g_assert_true(memcmp(back.dense_blocks, l4.dense_blocks, sizeof l4.dense_blocks) == 0);
    g_assert_false(stw_model_config_parse("step.json", no_step, strlen(no_step), &l4, &error));
    stw_assert_error_contains(error, "step.json: $.interleave_moe_layer_step: ");
    static const char *const head = "{\"format\":\"stowage-model\",\"version\":1,\"name\":\"m\","
                                    "\"arch\":\"llama\",\"layers\":4,\"hidden\":64,\"heads\":4,"
                                    "\"vocab\":256,\"experts\":4,\"dense_ffn\":128,";
    static const Refusal formats[] = {
      { "\"dense_layers\":1,\"dense_blocks\":[2]}",
        "$.dense_blocks: expected dense_layers (the first blocks) or dense_blocks (any), not both" },
      { "\"dense_blocks\":[2,1]}",
        "$.dense_blocks[1]: 1 after 2: expected block indices in ascending order, each once" },
      { "\"dense_blocks\":[1,1]}",
        "$.dense_blocks[1]: 1 after 1: expected block indices in ascending order, each once" },
      { "\"dense_blocks\":[1,4]}", "dense_blocks must be blocks below layers" },
      { "\"dense_blocks\":[1,-4]}", "$.dense_blocks[1]: -4 is out of range" },
      { "\"dense_blocks\":{}}", "$.dense_blocks: expected an array" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(formats); i++) {
      g_autofree char *bad = g_strconcat(head, formats[i].json, NULL);
      g_assert_false(stw_model_config_parse("m.json", bad, strlen(bad), &back, &error));
      stw_assert_error_contains(error, formats[i].says);
    }
    g_autofree char *good = g_strconcat(head, "\"dense_blocks\":[1,3]}", NULL);
    g_assert_true(stw_model_config_parse("m.json", good, strlen(good), &back, NULL));
    g_assert_true(!stw_model_block_dense(&back, 0) && stw_model_block_dense(&back, 1) &&
                  !stw_model_block_dense(&back, 2) && stw_model_block_dense(&back, 3));
    g_assert_cmpuint(stw_model_dense_prefix(&back), ==, G_MAXUINT64);
    /* the graph lays each block out as it is: a dense MLP 128 wide in blocks 1 and 3, experts
     * (a router first) in 0 and 2 */
    g_autoptr(StwModelGraph) g = stw_model_graph_new(&back, 1, 8, STW_DTYPE_BF16,
                                                     STW_ATTENTION_FLASH);
    GString *kinds = g_string_new(NULL);
    for (guint i = 0; i < g->ops->len; i++) {
      const char *name = ((StwGraphOp *)g->ops->pdata[i])->name;
      if (g_str_has_suffix(name, ".moe.router") || g_str_has_suffix(name, ".mlp.gate_up"))
        g_string_append_printf(kinds, "%c%s", name[1], strstr(name, "moe") ? "E" : "D");
    }
    g_assert_cmpstr(kinds->str, ==, "0E1D2E3D");
    g_string_free(kinds, TRUE);
    guint dense_weights = 0;
    for (guint i = 0; i < g->tensors->len; i++) {
      const StwGraphTensor *x = g->tensors->pdata[i];
      if (strcmp(x->name, "layers.1.mlp.gate_proj.weight") == 0 ||
          strcmp(x->name, "layers.3.mlp.down_proj.weight") == 0) {
        dense_weights++;
        g_assert_cmpuint(x->numel, ==, 128 * 64);
      }
      g_assert_false(g_str_has_prefix(x->name, "layers.0.mlp.") ||
                     g_str_has_prefix(x->name, "layers.2.mlp."));
    }
    g_assert_cmpuint(dense_weights, ==, 2);
  }
  /* BLOOM: ALiBi (no rotary op, no longest sequence), a norm over the embeddings (2 x 1024
   * parameters), GELU-new's ops; Falcon's alibi member read too */
  StwModelConfig bl;
  g_autofree char *blp = stw_test_fixture("hf/bloom-560m/config.json");
  g_assert_true(stw_model_resolve(blp, &bl, NULL));
  g_assert_true(bl.alibi && bl.embed_norm);
  g_assert_cmpuint(bl.max_seq, ==, STW_MODEL_MAX_SEQ);
  g_assert_true(stw_model_gelu_new(&bl));
  {
    StwModelConfig plain = bl;
    plain.embed_norm = FALSE;
    g_assert_cmpuint(stw_model_param_count(&bl) - stw_model_param_count(&plain), ==, 2 * 1024);
    g_autoptr(StwModelGraph) bg = stw_model_graph_new(&bl, 1, 16, STW_DTYPE_BF16,
                                                      STW_ATTENTION_NAIVE);
    guint ropes = 0, embed_norms = 0;
    for (guint i = 0; i < bg->ops->len; i++) {
      const StwGraphOp *o = bg->ops->pdata[i];
      ropes += o->kind == STW_OP_ROPE;
      embed_norms += o->kind == STW_OP_NORM_EMBED;
    }
    g_assert_cmpuint(ropes, ==, 0);
    g_assert_cmpuint(embed_norms, ==, 1);
    StwModelConfig bad = bl;
    bad.arch = STW_ARCH_LLAMA;
    bad.activation = STW_ACT_DEFAULT;
    GError *error = NULL;
    g_assert_false(stw_model_config_validate(&bad, NULL, &error));
    stw_assert_error_contains(error, "alibi is modelled for neox blocks only");
  }
  {
    const char *falcon = "{\"model_type\":\"falcon\",\"alibi\":true}";
    StwModelConfig fa;
    g_assert_true(stw_model_config_parse("falcon.json", falcon, strlen(falcon), &fa, NULL));
    g_assert_true(fa.alibi && !fa.embed_norm);
  }
  /* Qwen2: biases on q, k and v, none on o_proj; Mixtral: 8 experts, top 2 */
  StwModelConfig q, m;
  g_autofree char *qp = stw_test_fixture("hf/Qwen2-7B/config.json");
  g_autofree char *mp = stw_test_fixture("hf/Mixtral-8x7B-v0.1/config.json");
  g_assert_true(stw_model_resolve(qp, &q, NULL));
  g_assert_true(stw_model_has_bias(&q, STW_SITE_QKV));
  g_assert_false(stw_model_has_bias(&q, STW_SITE_OUT));
  g_assert_false(stw_model_has_bias(&q, STW_SITE_MLP));
  g_assert_true(stw_model_resolve(mp, &m, NULL));
  g_assert_cmpuint(stw_model_experts(&m), ==, 8);
  /* Qwen3's MoE: 128 experts of moe_intermediate_size, 8 a token, Qwen3's normed heads; 3.35B
   * active of 30.5B (the model card's 3.3B) */
  StwModelConfig qm;
  g_autofree char *qmp = stw_test_fixture("hf/Qwen3-30B-A3B/config.json");
  g_assert_true(stw_model_resolve(qmp, &qm, NULL));
  g_assert_cmpuint(stw_model_experts(&qm), ==, 128);
  g_assert_cmpuint(stw_model_active_experts(&qm), ==, 8);
  g_assert_cmpuint(qm.ffn, ==, 768);
  g_assert_true(qm.qk_norm);
  g_assert_cmpuint(stw_model_active_param_count(&qm), ==, G_GUINT64_CONSTANT(3353032704));
  /* Qwen3: no biases; each head's queries and keys RMS-normed (2 x 128 weights a block), which
   * the other llama-style models lack */
  StwModelConfig q3;
  g_autofree char *q3p = stw_test_fixture("hf/Qwen3-8B/config.json");
  g_assert_true(stw_model_resolve(q3p, &q3, NULL));
  g_assert_true(q3.qk_norm);
  g_assert_false(q.qk_norm);
  g_assert_false(stw_model_has_bias(&q3, STW_SITE_QKV));
  g_autoptr(StwModelGraph) g3 = stw_model_graph_new(&q3, 1, 16, STW_DTYPE_BF16,
                                                    STW_ATTENTION_FLASH);
  guint norms = 0;
  for (guint i = 0; i < g3->ops->len; i++) {
    const StwGraphOp *o = g3->ops->pdata[i];
    if (o->kind != STW_OP_NORM_QK)
      continue;
    norms++;
    g_assert_cmpuint(o->params->len, ==, 2);
    g_assert_cmpint(((StwGraphOp *)g3->ops->pdata[i - 1])->kind, ==, STW_OP_ATTN_QKV);
    g_assert_cmpint(((StwGraphOp *)g3->ops->pdata[i + 1])->kind, ==, STW_OP_ROPE);
    const StwGraphTensor *qn = g3->tensors->pdata[g_array_index(o->params, guint32, 0)];
    g_assert_cmpuint(qn->numel, ==, 128);
    g_assert_cmpuint(o->saved_extra_bytes, ==, 16 * (32 + 8) * 4); /* fp32, a head a token */
  }
  g_assert_cmpuint(norms, ==, 36);
  g_assert_cmpstr(((StwGraphTensor *)g3->tensors->pdata[5])->name, ==,
                  "layers.0.self_attn.q_norm.weight");
  /* written and read back: qk_norm only where it is set */
  cJSON *j = stw_model_config_to_json(&q3, TRUE);
  g_assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "qk_norm")));
  g_autofree char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  g_autofree char *dir = g_dir_make_tmp("stowage-q3-XXXXXX", NULL);
  g_autofree char *back = g_build_filename(dir, "q3.json", NULL);
  g_assert_true(g_file_set_contents(back, text, -1, NULL));
  StwModelConfig again;
  g_assert_true(stw_model_resolve(back, &again, NULL));
  g_assert_true(again.qk_norm);
  g_assert_cmpuint(stw_model_param_count(&again), ==, G_GUINT64_CONSTANT(8190735360));
  g_remove(back);
  g_rmdir(dir);
  cJSON *plain = stw_model_config_to_json(&q, TRUE);
  g_assert_null(cJSON_GetObjectItem(plain, "qk_norm"));
  cJSON_Delete(plain);
  g_assert_cmpuint(stw_model_active_experts(&m), ==, 2);

  static const struct {
    const char *file;
    const char *needle;
  } bad[] = {
    { "hf/bad-type.json", "$.model_type: \"t5\" is not one of \"gpt2\", \"gpt_neox\", \"llama\"" },
    { "hf/bad-null.json", "$.num_hidden_layers: null, where a llama config.json needs a whole "
                          "number (transformers refuses it)" },
    { "hf/bad-kv.json", "$: as a mistral model: kv_heads must divide heads" },
    { "hf/bad-helium-head-dim.json", "$.head_dim: 128 a head, 20 heads: helium's output "
                                     "projection is hidden x hidden (2048) whatever the heads, "
                                     "and its forward runs only where heads x head_dim is "
                                     "hidden; not modelled" },
    { "hf/bad-internlm3-biases.json", "$.qkv_bias: the attention's bias true and the MLP's "
                                      "false: transformers refuses them apart (this class's "
                                      "projections share one bias setting)" },
    { "hf/bad-iquestcoder-heads.json", "$.num_attention_heads: 40 heads do not divide "
                                       "hidden_size 5100: iquestcoder's class refuses it, "
                                       "whatever head_dim says" },
    { "hf/bad-bitnet-head-dim.json", "$.head_dim: 64 a head, 20 heads: bitnet's norm over the "
                                     "heads' output is hidden (2560) wide whatever the heads, "
                                     "and its forward runs only where heads x head_dim is "
                                     "hidden; not modelled" },
    { "hf/bad-hy-v3-mlp-bias.json", "$.mlp_bias: true: biases on the dense MLPs and the shared "
                                    "experts but not the routed ones are not modelled" },
    { "hf/bad-mellum-mtp.json", "$.num_mtp_layers: 2: Mellum's class builds at most one "
                                "multi-token-prediction layer (transformers refuses more)" },
    { "hf/bad-types.json", "$.type_vocab_size: 0 is out of range (expected 1 to 1024)" },
    { "hf/bad-multimodal.json",
      "$.model_type: \"idefics2\" is a multimodal model, and stowage models language models: "
      "write $.text_config (model_type \"mistral\") to a file of its own and give that" },
    { "hf/bad-layers.json", "$.n_layer: expected an integer" },
    /* 1.1e20 parameters: the count used to wrap at 2^64 and print 1.8e16 */
    { "hf/bad-huge.json", "$: as a mixtral model: more than 2^53 parameters (9.0e15): beyond what "
                          "stowage's files count exactly" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *path = stw_test_fixture(bad[i].file);
    StwModelConfig cfg;
    GError *error = NULL;
    g_assert_false(stw_model_resolve(path, &cfg, &error));
    g_assert_nonnull(strstr(error->message, path));
    stw_assert_error_contains(error, bad[i].needle);
  }
  /* experts where the model type has none */
  static const char moe[] = "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, "
                            "\"hidden_size\": 64, \"num_attention_heads\": 4, "
                            "\"intermediate_size\": 128, \"vocab_size\": 100, "
                            "\"num_experts\": 4}";
  StwModelConfig cfg;
  GError *error = NULL;
  g_assert_false(stw_model_config_parse("moe.json", moe, strlen(moe), &cfg, &error));
  /* every type that reads experts, in the table's order, and no other */
  GString *with = g_string_new("moe.json: $.num_experts: experts are modelled for model_type ");
  static const char *const moe_types[] = {
    "mixtral", "qwen3_moe", "olmoe", "qwen2_moe", "gpt_oss", "glm4_moe", "deepseek_v3",
    "deepseek_v2", "llama4_text", "granitemoe", "phimoe", "dbrx", "dots1", "granitemoeshared",
    "minimax_m2", "solar_open", "glm4_moe_lite", "flex_olmo", "exaone_moe", "ernie4_5_moe",
    "granitemoe_swa", "hy_v3", "kolibri1", "mellum", "sarvam_moe", "sarvam_mla", "cohere2_moe",
    "afmoe", "flint", "hunyuan_v1_moe", "deepseek_v32", "glm_moe_dsa", "qwen3_next",
    "qwen3_5_moe_text", "granitemoehybrid", "lfm2_moe", "minimax", "jamba", "kimi_linear",
    "bailing_hybrid", "nemotron_h", "gemma4_text", "lara_mini", "axk1", "mimo_v2_flash",
    "aria_text", "longcat_flash", "laguna", "minimax_m3_vl_text", "qwen3_vl_moe_text",
    "glm4v_moe_text"
  };
  for (gsize i = 0; i < G_N_ELEMENTS(moe_types); i++)
    g_string_append_printf(with, "%s%s", i == 0                              ? ""
                                         : i + 1 == G_N_ELEMENTS(moe_types) ? " and "
                                                                            : ", ",
                           moe_types[i]);
  g_string_append(with, " only");
  g_assert_cmpstr(error->message, ==, with->str);
  g_string_free(with, TRUE);
  g_clear_error(&error);
  /* OPT's variants that are not modelled, and an activation transformers does not know */
  static const struct {
    const char *extra, *needle;
  } opt_bad[] = {
    { "\"word_embed_proj_dim\": 32", "opt.json: $.word_embed_proj_dim: 32: embeddings narrower "
                                      "than the blocks, projected in and out (OPT-350m's), are "
                                      "not modelled" },
    { "\"activation_function\": \"gelu_fastest\"",
      "opt.json: $.activation_function: \"gelu_fastest\" is not an activation transformers "
      "knows" },
    { "\"activation_function\": 7", "opt.json: $.activation_function: expected an activation's "
                                     "name" },
    { "\"activation_function\": \"prelu\"",
      "opt.json: $.activation_function: \"prelu\": not modelled (its learned slope is a "
      "parameter of every block's MLP)" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(opt_bad); i++) {
    g_autofree char *opt_text =
        g_strdup_printf("{\"model_type\": \"opt\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
                        "\"num_attention_heads\": 4, \"ffn_dim\": 128, \"vocab_size\": 100, %s}",
                        opt_bad[i].extra);
    g_assert_false(stw_model_config_parse("opt.json", opt_text, strlen(opt_text), &cfg, &error));
    stw_assert_error_contains(error, opt_bad[i].needle);
    g_clear_error(&error);
  }
  /* OPT's positions: two rows beyond max_position_embeddings, which no position uses (the
   * longest sequence is 30); an activation in a gpt block */
  static const char opt[] = "{\"model_type\": \"opt\", \"num_hidden_layers\": 2, "
                            "\"hidden_size\": 64, \"num_attention_heads\": 4, \"ffn_dim\": 128, "
                            "\"vocab_size\": 100, \"max_position_embeddings\": 30, "
                            "\"activation_function\": \"gelu_new\", \"enable_bias\": false}";
  g_assert_true(stw_model_config_parse("opt.json", opt, strlen(opt), &cfg, &error));
  g_assert_cmpuint(cfg.max_seq, ==, 30);
  g_assert_cmpuint(cfg.position_offset, ==, 2);
  g_assert_cmpint(cfg.activation, ==, STW_ACT_DEFAULT); /* gelu_new: the gpt block's own */
  g_assert_false(stw_model_has_bias(&cfg, STW_SITE_MLP));
  g_autoptr(StwModelGraph) og = stw_model_graph_new(&cfg, 1, 4, STW_DTYPE_BF16, STW_ATTENTION_FLASH);
  g_assert_cmpuint(((StwGraphTensor *)og->tensors->pdata[1])->shape[0], ==, 32); /* wpe */
  /* its LayerNorms without weights or biases: 2 a block of 2 x 64, and the final one, fewer */
  static const char plain_opt[] = "{\"model_type\": \"opt\", \"num_hidden_layers\": 2, "
                                  "\"hidden_size\": 64, \"num_attention_heads\": 4, "
                                  "\"ffn_dim\": 128, \"vocab_size\": 100, "
                                  "\"max_position_embeddings\": 30, "
                                  "\"activation_function\": \"gelu_new\", "
                                  "\"enable_bias\": false, "
                                  "\"layer_norm_elementwise_affine\": false}";
  StwModelConfig affineless;
  g_assert_true(stw_model_config_parse("opt.json", plain_opt, strlen(plain_opt), &affineless,
                                       &error));
  g_assert_cmpint(affineless.norm_type, ==, STW_NORM_LAYER_NO_AFFINE);
  g_assert_cmpuint(stw_model_param_count(&cfg) - stw_model_param_count(&affineless), ==, 5 * 128);
  /* RoBERTa's 514 rows: the longest sequence 512, its positions from the padding index on; a
   * table of 2 rows holds no position */
  g_autofree char *rp = stw_test_fixture("hf/roberta-base/config.json");
  g_assert_true(stw_model_resolve(rp, &cfg, NULL));
  g_assert_cmpuint(cfg.max_seq, ==, 512);
  g_assert_cmpuint(cfg.position_offset, ==, 2);
  static const char rob[] = "{\"model_type\": \"roberta\", \"max_position_embeddings\": 2}";
  g_assert_false(stw_model_config_parse("rob.json", rob, strlen(rob), &cfg, &error));
  stw_assert_error_contains(error, "rob.json: $.max_position_embeddings: 2: roberta's positions "
                                   "start at 2, so the table needs more rows than that");
  g_clear_error(&error);
  /* Phi's LayerNorms over each head's queries and keys (Persimmon's: weight and bias a head
   * wide, shared by the heads), and its switch read as a boolean */
  static const char phi[] = "{\"model_type\": \"phi\", \"num_hidden_layers\": 2, "
                            "\"hidden_size\": 64, \"num_attention_heads\": 4, "
                            "\"intermediate_size\": 128, \"vocab_size\": 100, "
                            "\"qk_layernorm\": %s}";
  g_autofree char *phi_off = g_strdup_printf(phi, "false");
  g_assert_true(stw_model_config_parse("phi.json", phi_off, strlen(phi_off), &cfg, &error));
  g_assert_no_error(error);
  g_assert_cmpint(cfg.norms, ==, STW_NORMS_SHARED);
  g_assert_false(cfg.qk_norm);
  guint64 without_qk = stw_model_param_count(&cfg);
  g_autofree char *phi_on = g_strdup_printf(phi, "true");
  g_assert_true(stw_model_config_parse("phi.json", phi_on, strlen(phi_on), &cfg, &error));
  g_assert_no_error(error);
  g_assert_true(cfg.qk_norm);
  g_assert_cmpuint(stw_model_param_count(&cfg), ==, without_qk + 2 * 2 * 2 * 16);
  g_autofree char *phi_bad = g_strdup_printf(phi, "\"yes\"");
  g_assert_false(stw_model_config_parse("phi.json", phi_bad, strlen(phi_bad), &cfg, &error));
  stw_assert_error_contains(error, "phi.json: $.qk_layernorm: expected true or false");
  g_clear_error(&error);
}

/* A mixture of experts reads every expert's parameters and computes with the top-k: its MLP's
 * FLOPs are k dense MLPs', its activations k tokens' worth. */
static void
test_moe_graph(void)
{
  StwModelConfig moe, dense;
  g_assert_true(stw_zoo_lookup("mixtral-8x7b", &moe, NULL));
  dense = moe;
  dense.experts = 0;
  dense.experts_per_token = 0;
  g_autoptr(StwModelGraph) gm = stw_model_graph_new(&moe, 2, 64, STW_DTYPE_BF16, STW_ATTENTION_FLASH);
  g_autoptr(StwModelGraph) gd = stw_model_graph_new(&dense, 2, 64, STW_DTYPE_BF16, STW_ATTENTION_FLASH);
  const StwGraphOp *in_m = NULL, *in_d = NULL, *router = NULL;
  for (guint i = 0; i < gm->ops->len; i++) {
    const StwGraphOp *o = gm->ops->pdata[i];
    if (o->layer == 0 && o->kind == STW_OP_MLP_IN)
      in_m = o;
    if (o->layer == 0 && o->kind == STW_OP_MOE_ROUTER)
      router = o;
  }
  for (guint i = 0; i < gd->ops->len; i++) {
    const StwGraphOp *o = gd->ops->pdata[i];
    if (o->layer == 0 && o->kind == STW_OP_MLP_IN)
      in_d = o;
  }
  g_assert_nonnull(in_m);
  g_assert_nonnull(in_d);
  g_assert_nonnull(router);
  g_assert_cmpuint(in_m->flops, ==, 2 * in_d->flops);
  g_assert_cmpuint(in_m->out_bytes, ==, 2 * in_d->out_bytes);
  g_assert_cmpuint(in_m->params->len, ==, 16); /* w1 and w3 of 8 experts */
  g_assert_cmpuint(in_d->params->len, ==, 2);
  g_assert_cmpuint(router->flops, ==, 2 * 128 * 4096 * 8);
  g_assert_cmpuint(router->params->len, ==, 1);
  const StwGraphTensor *gate = gm->tensors->pdata[g_array_index(router->params, guint32, 0)];
  g_assert_cmpstr(gate->name, ==, "layers.0.block_sparse_moe.gate.weight");
  g_assert_cmpuint(gate->numel, ==, 8 * 4096);
}

static void
test_config_roundtrip(void)
{
  const char *models[] = { "llama3-8b", "mixtral-8x7b", "qwen2-7b", "pythia-70m" };
  for (gsize i = 0; i < G_N_ELEMENTS(models); i++) {
    StwModelConfig a, b;
    g_assert_true(stw_zoo_lookup(models[i], &a, NULL));
    cJSON *o = stw_model_config_to_json(&a, TRUE);
    char *text = cJSON_Print(o);
    cJSON *back = cJSON_Parse(text);
    StwJsonReader r;
    stw_json_reader_init(&r, "x");
    GError *error = NULL;
    g_assert_true(stw_model_config_read(&r, back, TRUE, &b, &error));
    g_assert_no_error(error);
    g_assert_cmpmem(&a, sizeof a, &b, sizeof b);
    stw_json_reader_clear(&r);
    cJSON_free(text);
    cJSON_Delete(o);
    cJSON_Delete(back);
  }
  /* a model without the newer members writes none of them: older traces keep their digests */
  StwModelConfig gpt;
  g_assert_true(stw_zoo_lookup("gpt2", &gpt, NULL));
  cJSON *o = stw_model_config_to_json(&gpt, FALSE);
  g_assert_cmpint(cJSON_GetArraySize(o), ==, 10);
  cJSON_Delete(o);
}

/* Every op consumes what the op before it produced, for every architecture. */
static void
test_graph_chain(void)
{
  const char *models[] = { "gpt2", "llama3-8b", "bert-base", "mixtral-8x7b", "qwen2-7b",
                           "pythia-70m" };
  for (gsize m = 0; m < G_N_ELEMENTS(models); m++) {
    StwModelConfig cfg;
    g_assert_true(stw_zoo_lookup(models[m], &cfg, NULL));
    for (int att = 0; att < STW_N_ATTENTIONS; att++) {
      g_autoptr(StwModelGraph) g = stw_model_graph_new(&cfg, 2, 128, STW_DTYPE_BF16,
                                                       (StwAttention)att);
      guint64 current = 0;
      int open = 0;
      for (guint i = 0; i < g->ops->len; i++) {
        const StwGraphOp *op = g->ops->pdata[i];
        if (op->passthrough)
          continue;
        g_assert_cmpuint(op->in_bytes, ==, current);
        current = op->out_bytes;
        open += op->residual == STW_RESIDUAL_OPEN ? 1 : 0;
        open -= op->residual == STW_RESIDUAL_CLOSE ? 1 : 0;
        g_assert_cmpint(open, >=, 0);
        g_assert_cmpint(open, <=, 1);
      }
      g_assert_cmpint(open, ==, 0);
      g_assert_cmpuint(current, ==, 4); /* the loss */
    }
  }
}

static void
test_graph_shapes(void)
{
  StwModelConfig cfg;
  g_assert_true(stw_zoo_lookup("llama3-8b", &cfg, NULL));
  g_autoptr(StwModelGraph) g = stw_model_graph_new(&cfg, 1, 16, STW_DTYPE_BF16,
                                                   STW_ATTENTION_FLASH);
  gboolean found = FALSE;
  for (guint i = 0; i < g->tensors->len; i++) {
    const StwGraphTensor *t = g->tensors->pdata[i];
    if (g_str_equal(t->name, "layers.0.self_attn.k_proj.weight")) {
      g_assert_cmpuint(t->shape[0], ==, 1024); /* 8 kv heads of 128 */
      g_assert_cmpuint(t->shape[1], ==, 4096);
      found = TRUE;
    }
  }
  g_assert_true(found);
  /* untied: the LM head is a tensor of its own */
  const StwGraphTensor *last = g->tensors->pdata[g->tensors->len - 1];
  g_assert_cmpstr(last->name, ==, "lm_head.weight");
  g_assert_cmpuint(last->numel, ==, G_GUINT64_CONSTANT(128256) * 4096);
}

/* Every op of a graph says what it does: the same sequence of kinds per block, per architecture. */
static void
test_op_kinds(void)
{
  static const struct {
    const char *model;
    const char *kinds; /* the first block's, and the ops before and after the blocks */
  } cases[] = {
    { "gpt2", "embed | norm_attn attn_qkv attn_core attn_out norm_mlp mlp_in mlp_act mlp_out | "
              "norm_final lm_head loss" },
    { "llama2-7b", "embed | norm_attn attn_qkv rope attn_core attn_out norm_mlp mlp_in mlp_act "
                   "mlp_out | norm_final lm_head loss" },
    { "bert-base", "embed norm_embed | attn_qkv attn_core attn_out norm_post_attn mlp_in mlp_act "
                   "mlp_out norm_post_mlp | pooler lm_head loss" },
    { "pythia-70m", "embed | norm_attn attn_qkv rope attn_core attn_out norm_mlp mlp_in mlp_act "
                    "mlp_out | norm_final lm_head loss" },
    { "mixtral-8x7b", "embed | norm_attn attn_qkv rope attn_core attn_out norm_mlp moe_router "
                      "mlp_in mlp_act mlp_out | norm_final lm_head loss" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    StwModelConfig cfg;
    g_assert_true(stw_zoo_lookup(cases[i].model, &cfg, NULL));
    g_autoptr(StwModelGraph) g = stw_model_graph_new(&cfg, 1, 16, STW_DTYPE_BF16,
                                                     STW_ATTENTION_NAIVE);
    GString *s = g_string_new(NULL);
    gint32 last = -2;
    for (guint k = 0; k < g->ops->len; k++) {
      const StwGraphOp *op = g->ops->pdata[k];
      g_assert_cmpint(op->kind, <, STW_N_OP_KINDS);
      if (op->layer > 0)
        continue;
      if (op->layer != last && k > 0)
        g_string_append(s, " |");
      last = op->layer;
      g_string_append_printf(s, "%s%s", s->len ? " " : "", stw_op_kind_names[op->kind]);
    }
    g_assert_cmpstr(s->str, ==, cases[i].kinds);
    g_string_free(s, TRUE);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/model/param-counts", test_param_counts);
  g_test_add_func("/model/zoo-valid", test_zoo_valid);
  g_test_add_func("/model/lookup", test_lookup);
  g_test_add_func("/model/config-files", test_config_files);
  g_test_add_func("/model/config-roundtrip", test_config_roundtrip);
  g_test_add_func("/model/hf-configs", test_hf_configs);
  g_test_add_func("/model/hf-defaults", test_hf_defaults);
  g_test_add_func("/model/hf-dropout", test_hf_dropout);
  g_test_add_func("/model/hf-gpt-neo-layers", test_hf_gpt_neo_layers);
  g_test_add_func("/model/hf-dense-list-and-task-types", test_hf_dense_list_and_task_types);
  g_test_add_func("/model/hf-hunyuan-moe", test_hf_hunyuan_moe);
  g_test_add_func("/model/gemma", test_gemma);
  g_test_add_func("/model/olmo2", test_olmo2);
  g_test_add_func("/model/norm-types", test_norm_types);
  g_test_add_func("/model/gqa-gelu-blocks", test_gqa_gelu_blocks);
  g_test_add_func("/model/parallel-blocks", test_parallel_blocks);
  g_test_add_func("/model/shared-expert", test_shared_expert);
  g_test_add_func("/model/attn-gate", test_attn_gate);
  g_test_add_func("/model/final-norm-and-xielu", test_final_norm_and_xielu);
  g_test_add_func("/model/diff-attn", test_diff_attn);
  g_test_add_func("/model/indexer", test_indexer);
  g_test_add_func("/model/bert-without-types-or-pooler", test_bert_without_types_or_pooler);
  g_test_add_func("/model/hf-family-defaults", test_hf_family_defaults);
  g_test_add_func("/model/linear-attention", test_linear_attention);
  g_test_add_func("/model/nemotron-h", test_nemotron_h);
  g_test_add_func("/model/gemma4", test_gemma4);
  g_test_add_func("/model/gemma3n", test_gemma3n);
  g_test_add_func("/model/longcat", test_longcat);
  g_test_add_func("/model/laguna", test_laguna);
  g_test_add_func("/model/minimax-m3", test_minimax_m3);
  g_test_add_func("/model/language-model-of-multimodal", test_language_model_of_multimodal);
  g_test_add_func("/model/gemma3-multimodal", test_gemma3_multimodal);
  g_test_add_func("/model/gemma4-multimodal", test_gemma4_multimodal);
  g_test_add_func("/model/mistral3-multimodal", test_mistral3_multimodal);
  g_test_add_func("/model/llava-multimodal", test_llava_multimodal);
  g_test_add_func("/model/qwen-vl-multimodal", test_qwen_vl_multimodal);
  g_test_add_func("/model/llava-family", test_llava_family);
  g_test_add_func("/model/mllama-multimodal", test_mllama_multimodal);
  g_test_add_func("/model/glm4v-multimodal", test_glm4v_multimodal);
  g_test_add_func("/model/images", test_images);
  g_test_add_func("/model/head-vocab", test_head_vocab);
  g_test_add_func("/model/mimo-v2-flash", test_mimo);
  g_test_add_func("/model/lora-hybrid", test_lora_hybrid);
  g_test_add_func("/model/moe-graph", test_moe_graph);
  g_test_add_func("/model/graph-chain", test_graph_chain);
  g_test_add_func("/model/graph-shapes", test_graph_shapes);
  g_test_add_func("/model/op-kinds", test_op_kinds);
  return g_test_run();
}
