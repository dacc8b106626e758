/* zoo.c — the model zoo: published configurations by name and family; see model.h and
 * docs/models.md. */
#include "config.h"

#include <stowage/model.h>

const char *const stw_zoo_families[] = { "gpt2", "gpt3", "patrickstar", "llama", "mistral",
                                          "qwen2", "neox", "bert", NULL };

#define GPT(n, l, d, h, v, s) \
  { .name = n, .arch = STW_ARCH_GPT, .layers = l, .hidden = d, .heads = h, .kv_heads = h, \
    .ffn = 4 * (d), .vocab = v, .max_seq = s, .tied = TRUE }
#define LLAMA(n, l, d, h, kv, f, v, s, t) \
  { .name = n, .arch = STW_ARCH_LLAMA, .layers = l, .hidden = d, .heads = h, .kv_heads = kv, \
    .ffn = f, .vocab = v, .max_seq = s, .tied = t }
/* Qwen2 and Qwen2.5 (model_type qwen2): Llama's block with biases on q, k and v only */
#define QWEN2(n, l, d, h, kv, f, v, t) \
  { .name = n, .arch = STW_ARCH_LLAMA, .layers = l, .hidden = d, .heads = h, .kv_heads = kv, \
    .ffn = f, .vocab = v, .max_seq = 32768, .tied = t, .bias = { [STW_SITE_QKV] = STW_BIAS_YES } }
#define NEOX(n, l, d, h, v) \
  { .name = n, .arch = STW_ARCH_NEOX, .layers = l, .hidden = d, .heads = h, .kv_heads = h, \
    .ffn = 4 * (d), .vocab = v, .max_seq = 2048, .tied = FALSE }
#define BERT(n, l, d, h) \
  { .name = n, .arch = STW_ARCH_BERT, .layers = l, .hidden = d, .heads = h, .kv_heads = h, \
    .ffn = 4 * (d), .vocab = 30522, .max_seq = 512, .tied = TRUE }

static const char gpt2_note[] = "Radford et al. 2019 (GPT-2), Hugging Face config";
static const char gpt3_note[] = "Brown et al. 2020, Table 2.1; heads chosen for 128-dim heads";
static const char qwen2_note[] =
    "Yang et al. 2024 (Qwen2), Hugging Face config: biases on q, k and v only (Qwen2.5 the same)";
static const char qwen25_note[] =
    "Qwen Team 2024 (Qwen2.5 Technical Report), Hugging Face config: biases on q, k and v only";
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
  { "llama", "Meta 2024 (Llama 3), Hugging Face config",
    LLAMA("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, FALSE) },
  { "llama", "Grattafiori et al. 2024 (The Llama 3 Herd of Models), Hugging Face config of Llama 3.1",
    LLAMA("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, 131072, FALSE) },
  { "llama", "Meta 2024 (Llama 3.2), Hugging Face config: the embeddings tied to the head",
    LLAMA("llama3.2-1b", 16, 2048, 32, 8, 8192, 128256, 131072, TRUE) },
  { "llama", "Meta 2024 (Llama 3.2), Hugging Face config: the embeddings tied to the head",
    LLAMA("llama3.2-3b", 28, 3072, 24, 8, 8192, 128256, 131072, TRUE) },
  { "mistral", "Jiang et al. 2023 (Mistral 7B), Hugging Face config",
    LLAMA("mistral-7b", 32, 4096, 32, 8, 14336, 32000, 32768, FALSE) },
  { "mistral", "Jiang et al. 2024 (Mixtral of Experts), Hugging Face config: 8 experts, top 2",
    { .name = "mixtral-8x7b", .arch = STW_ARCH_LLAMA, .layers = 32, .hidden = 4096, .heads = 32,
      .kv_heads = 8, .ffn = 14336, .vocab = 32000, .max_seq = 32768, .tied = FALSE,
      .experts = 8, .experts_per_token = 2 } },
  { "mistral", "Mistral AI 2024 (Mixtral 8x22B), Hugging Face config: 8 experts, top 2",
    { .name = "mixtral-8x22b", .arch = STW_ARCH_LLAMA, .layers = 56, .hidden = 6144, .heads = 48,
      .kv_heads = 8, .ffn = 16384, .vocab = 32768, .max_seq = 65536, .tied = FALSE,
      .experts = 8, .experts_per_token = 2 } },
  { "qwen2", qwen2_note, QWEN2("qwen2-0.5b", 24, 896, 14, 2, 4864, 151936, TRUE) },
  { "qwen2", qwen2_note, QWEN2("qwen2-1.5b", 28, 1536, 12, 2, 8960, 151936, TRUE) },
  { "qwen2", qwen25_note, QWEN2("qwen2.5-3b", 36, 2048, 16, 2, 11008, 151936, TRUE) },
  { "qwen2", qwen2_note, QWEN2("qwen2-7b", 28, 3584, 28, 4, 18944, 152064, FALSE) },
  { "qwen2", qwen25_note, QWEN2("qwen2.5-14b", 48, 5120, 40, 8, 13824, 152064, FALSE) },
  { "qwen2", qwen25_note, QWEN2("qwen2.5-32b", 64, 5120, 40, 8, 27648, 152064, FALSE) },
  { "qwen2", qwen2_note, QWEN2("qwen2-72b", 80, 8192, 64, 8, 29568, 152064, FALSE) },
  { "neox", "Biderman et al. 2023 (Pythia), Hugging Face config", NEOX("pythia-70m", 6, 512, 8, 50304) },
  { "neox", "Biderman et al. 2023 (Pythia), Hugging Face config",
    NEOX("pythia-1.4b", 24, 2048, 16, 50304) },
  { "neox", "Black et al. 2022 (GPT-NeoX-20B), Hugging Face config",
    NEOX("gpt-neox-20b", 44, 6144, 64, 50432) },
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
