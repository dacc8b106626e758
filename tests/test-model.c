/* test-model.c — the zoo's exact parameter counts, configs from files, operator graphs. */
#include "config.h"

#include <glib.h>

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
    { "bert-base", G_GUINT64_CONSTANT(109482240) },
    { "bert-large", G_GUINT64_CONSTANT(335141888) },
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
  }
}

static void
test_config_roundtrip(void)
{
  StwModelConfig a, b;
  g_assert_true(stw_zoo_lookup("llama3-8b", &a, NULL));
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

/* Every op consumes what the op before it produced, for every architecture. */
static void
test_graph_chain(void)
{
  const char *models[] = { "gpt2", "llama3-8b", "bert-base" };
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
  g_test_add_func("/model/graph-chain", test_graph_chain);
  g_test_add_func("/model/graph-shapes", test_graph_shapes);
  g_test_add_func("/model/op-kinds", test_op_kinds);
  return g_test_run();
}
