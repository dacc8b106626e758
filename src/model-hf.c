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

#include <math.h>
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
  HF_QWEN3,
  HF_PHI3,
  HF_GEMMA2,
  HF_GEMMA3,
  HF_GRANITE,
  HF_SMOLLM3,
  HF_QWEN3_MOE,
  HF_OLMO2,
  HF_ROBERTA,
  HF_STARCODER2,
  HF_GPT_BIGCODE,
  HF_PHI,
  HF_GPTJ,
  HF_FALCON,
  HF_OLMOE,
  HF_QWEN2_MOE,
  HF_GLM,
  HF_GLM4,
  HF_OPT,
  HF_GPT_OSS,
  HF_OLMO3,
  HF_EXAONE4,
  HF_SEED_OSS,
  HF_ERNIE4_5,
  HF_BLOOM,
  HF_GLM4_MOE,
  HF_DEEPSEEK_V3,
  HF_DEEPSEEK_V2,
  HF_COHERE,
  HF_COHERE2,
  HF_LLAMA4_TEXT,
  HF_GPT_NEO,
  HF_STABLELM,
  HF_OLMO,
  HF_MPT,
  HF_NEMOTRON,
  HF_GRANITEMOE,
  HF_PHIMOE,
  HF_DBRX,
  HF_EXAONE,
  HF_MINISTRAL,
  HF_MINISTRAL3,
  HF_DOTS1,
  HF_HUNYUAN_DENSE,
  HF_HELIUM,
  HF_ARCEE,
  HF_JAIS2,
  HF_GRANITEMOESHARED,
  HF_NANOCHAT,
  HF_INTERNLM3,
  HF_IQUESTCODER,
  HF_HYPERCLOVAX,
  HF_MINIMAX_M2,
  HF_YOUTU,
  HF_SOLAR_OPEN,
  HF_GLM4_MOE_LITE,
  HF_CODEGEN,
  HF_VAULTGEMMA,
  HF_FLEX_OLMO,
  HF_EXAONE_MOE,
  HF_XGLM,
  HF_BIOGPT,
  HF_BITNET,
  HF_ERNIE4_5_MOE,
  HF_PERSIMMON,
  HF_CWM,
  HF_GRANITE_SWA,
  HF_GRANITEMOE_SWA,
  HF_HY_V3,
  HF_KOLIBRI1,
  HF_MELLUM,
  HF_CTRL,
  HF_SARVAM_MOE,
  HF_SARVAM_MLA,
  HF_GPT_SW3,
  HF_XLM_ROBERTA,
  HF_CAMEMBERT,
  HF_DATA2VEC_TEXT,
  HF_MINICPM3,
  HF_COHERE2_MOE,
  HF_AFMOE,
  HF_ERNIE,
  HF_FLINT,
  HF_APERTUS,
  HF_HUNYUAN_MOE,
  HF_OPENAI_GPT,
  HF_DIFFLLAMA,
  HF_DEEPSEEK_V32,
  HF_GLM_MOE_DSA,
  HF_BERT_GENERATION,
  HF_QWEN3_NEXT,
  HF_QWEN3_5_TEXT,
  HF_QWEN3_5_MOE_TEXT,
  HF_OLMO_HYBRID,
  HF_GRANITEMOEHYBRID,
  HF_BAMBA,
  HF_LFM2,
  HF_LFM2_MOE,
  HF_MINIMAX,
  HF_MAMBA2,
  HF_MAMBA,
  HF_FALCON_MAMBA,
  HF_JAMBA,
  HF_KIMI_LINEAR,
  HF_BAILING_HYBRID,
  HF_FALCON_H1,
  HF_NEMOTRON_H,
  HF_GEMMA4_TEXT,
  HF_LFM3,
  HF_APERTUS1P5_TEXT,
  HF_LARA_MINI,
  HF_AXK1,
  HF_MIMO_V2_FLASH,
  HF_ARIA_TEXT,
  HF_GEMMA3N_TEXT,
  HF_LONGCAT_FLASH,
  HF_LAGUNA,
  HF_MINIMAX_M3_TEXT,
  HF_QWEN2_VL_TEXT,
  HF_QWEN2_5_VL_TEXT,
  HF_QWEN3_VL_TEXT,
  HF_QWEN3_VL_MOE_TEXT,
  HF_MLLAMA_TEXT,
  HF_GLM4V_TEXT,
  HF_GLM4V_MOE_TEXT,
} HfType;

const char *const stw_hf_model_types[] = { "gpt2",    "gpt_neox", "llama", "mistral", "mixtral",
                                           "qwen2",   "gemma",    "bert",  "qwen3",   "phi3",
                                           "gemma2",  "gemma3_text", "granite", "smollm3",
                                           "qwen3_moe", "olmo2", "roberta",
                                           "starcoder2", "gpt_bigcode", "phi",
                                           "gptj",    "falcon",   "olmoe", "qwen2_moe",
                                           "glm",     "glm4",     "opt",   "gpt_oss",
                                           "olmo3",   "exaone4",  "seed_oss", "ernie4_5",
                                           "bloom",   "glm4_moe", "deepseek_v3",
                                           "deepseek_v2", "cohere", "cohere2", "llama4_text",
                                           "gpt_neo", "stablelm", "olmo", "mpt", "nemotron",
                                           "granitemoe", "phimoe", "dbrx", "exaone",
                                           "ministral", "ministral3", "dots1",
                                           "hunyuan_v1_dense", "helium", "arcee", "jais2",
                                           "granitemoeshared", "nanochat", "internlm3",
                                           "iquestcoder", "hyperclovax", "minimax_m2", "youtu",
                                           "solar_open", "glm4_moe_lite", "codegen",
                                           "vaultgemma", "flex_olmo", "exaone_moe", "xglm",
                                           "biogpt", "bitnet", "ernie4_5_moe", "persimmon",
                                           "cwm", "granite_swa", "granitemoe_swa", "hy_v3",
                                           "kolibri1", "mellum", "ctrl", "sarvam_moe",
                                           "sarvam_mla", "gpt-sw3", "xlm-roberta", "camembert",
                                           "data2vec-text", "minicpm3", "cohere2_moe",
                                           "afmoe", "ernie", "flint", "apertus",
                                           "hunyuan_v1_moe", "openai-gpt", "diffllama",
                                           "deepseek_v32", "glm_moe_dsa", "bert-generation",
                                           "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text",
                                           "olmo_hybrid", "granitemoehybrid", "bamba", "lfm2",
                                           "lfm2_moe", "minimax", "mamba2", "mamba",
                                           "falcon_mamba", "jamba", "kimi_linear",
                                           "bailing_hybrid", "falcon_h1", "nemotron_h",
                                           "gemma4_text", "lfm3",
                                           "apertus1p5_text", "lara_mini",
                                           "axk1", "mimo_v2_flash", "aria_text",
                                           "gemma3n_text", "longcat_flash", "laguna",
                                           "minimax_m3_vl_text", "qwen2_vl_text",
                                           "qwen2_5_vl_text", "qwen3_vl_text",
                                           "qwen3_vl_moe_text", "mllama_text_model",
                                           "glm4v_text", "glm4v_moe_text", NULL };

/* How a class places and sizes its linear blocks (HfRow.linear; read_linear_attn): none; Gated
 * DeltaNet by layer_types or full_attention_interval (Qwen3-Next's, Qwen3.5's), or sized from the
 * attention's (OLMo Hybrid's); Mamba-2 by its mamba_* members (Granite 4.0's, Bamba's) or its own
 * language model's; Mamba-1's language model; Jamba's; LFM2's short convolutions; MiniMax's
 * lightning attention (and LFM3's: read_lfm2); Kimi Delta Attention (Kimi Linear's) and Bailing's; Falcon-H1's Mamba-2
 * beside attention in every block; Nemotron-H's blocks of one part. */
typedef enum {
  HF_LINEAR_NONE,
  HF_LINEAR_GDN,
  HF_LINEAR_GDN_FROM_HEADS,
  HF_LINEAR_GDN_SLIDING,
  HF_LINEAR_MAMBA2,
  HF_LINEAR_MAMBA2_LM,
  HF_LINEAR_MAMBA1_LM,
  HF_LINEAR_JAMBA,
  HF_LINEAR_SHORT_CONV,
  HF_LINEAR_SHORT_CONV_LFM3,
  HF_LINEAR_LIGHTNING,
  HF_LINEAR_KDA,
  HF_LINEAR_BAILING,
  HF_LINEAR_FALCON_H1,
  HF_LINEAR_NEMOTRON_H,
} HfLinear;

/* What transformers' config class of a model type reads, and its defaults: a member left out
 * takes the default; one written null takes it too where the class's default is None (the
 * NULL_OK flags), and is refused where transformers refuses it. The table follows transformers 5
 * (python/tests/test_hf_configs.py holds stowage to it, family by family). */
typedef struct {
  const char *layers, *hidden, *heads, *ffn, *max_seq; /* the members' names */
  guint64 layers_default, hidden_default, heads_default, ffn_default, max_seq_default,
      vocab_default;                /* ffn 0: 4 x hidden (GPT-2's n_inner None) */
  guint64 kv_default;               /* num_key_value_heads: 0 = the heads (None); NOT_READ: the
                                     * architecture has as many as heads whatever the file says
                                     * (Qwen2's default is 32, and null is the heads) */
  guint64 head_dim_default;         /* head_dim: 0 = hidden / heads (None); NOT_READ: always */
  gboolean kv_null_ok, head_dim_null_ok; /* null allowed (the class's default is None) */
  const char *not_null[3];          /* members whose null the class's types refuse where
                                     * stowage does not read them (DeepSeek-V3.2's head_dim, an
                                     * int it then overwrites) or reads null as a default (Llama
                                     * 4's intermediate_size_mlp), refused null */
  const char *required[3];          /* members the class builds no model without, refused
                                     * absent or null: Nemotron's num_key_value_heads (its
                                     * attention divides by it), Ministral's head_dim (its
                                     * rotary positions' width), dots.llm1's experts */
  gboolean ffn_null_ok;
  gboolean ffn_fixed;               /* the MLP 4 x hidden, whatever the file says (BLOOM's) */
  gboolean positions_unbounded;     /* ALiBi: no table, so no longest sequence to read */
  gboolean tied;                    /* tie_word_embeddings' default */
  gboolean reads_tie;               /* a head to tie (BERT's encoder has none: ignored) */
  gboolean attention_bias;          /* attention_bias's default, read where reads_attention_bias */
  gboolean reads_attention_bias, reads_mlp_bias;
  gboolean mlp_bias;                /* the MLP's biases (mlp_bias's default where it is read) */
  gboolean qkv_bias_only;           /* q, k and v biased, o never (Qwen2's), whatever
                                     * attention_bias says; QKV_BIAS_MEMBER, given, reads it */
  const char *qkv_bias_member;
  gboolean out_bias_never;          /* o_proj never biased, attention_bias or not (GLM's) */
  gboolean out_bias_always;         /* o_proj always biased, q, k and v never (GPT-Neo's) */
  const char *out_bias_member;      /* o_proj's bias from a member of its own (Seed-OSS's
                                     * attention_out_bias, default false), not attention_bias */
  const char *attention_bias_alias; /* attention_bias's and mlp_bias's other names, which the
                                     * class's attribute_map reads into them (InternLM3's
                                     * qkv_bias and bias); the common names win */
  const char *mlp_bias_alias;
  gboolean heads_divide_hidden;     /* hidden_size not a multiple of the heads refused, a
                                     * head_dim given or not, as the class refuses it */
  gboolean biases_equal;            /* attention_bias and mlp_bias differing refused, as the
                                     * class refuses them (InternLM3's) */
  const char *post_norm_member;     /* a norm after each branch too (norms both) where this
                                     * member is true, the row's shape's default (HyperCLOVA
                                     * X's use_post_norm) */
  const char *bias_switch;          /* one member for every projection's bias (StarCoder 2's
                                     * use_bias, Falcon's bias), or NULL */
  const char *attn_dropout_member;  /* the attention probabilities' dropout probability, and
                                     * the residual branches', with the class's defaults; NULL:
                                     * the architecture's (a llama-style class reads
                                     * attention_dropout, default 0) */
  const char *resid_dropout_member;
  double attn_dropout_default, resid_dropout_default;
  StwModelConfig shape;             /* the block the type builds: its arch, norms, query and key
                                     * norms, softcaps' defaults, head bias */
  gboolean reads_softcaps;          /* final_logit_softcapping and attn_logit_softcapping */
  gboolean reads_logit_softcap;     /* final_logit_softcapping alone (NanoChat's) */
  gboolean reads_token_types;       /* type_vocab_size */
  gboolean reads_task_types;        /* use_task_id: task_type_vocab_size more rows beside the
                                     * token types' (ERNIE's task embeddings) */
  const char *experts_member;       /* the experts' count member (NULL: a dense MLP), then
                                     * num_experts_per_tok, with these defaults */
  guint64 experts_default, experts_per_token_default;
  gboolean experts_per_token_null_ok; /* num_experts_per_tok null taken as its default (the
                                       * classes whose default is None) */
  gboolean out_hidden_wide;         /* the output projection hidden x hidden whatever the heads
                                     * (Helium's): a head_dim apart from hidden / heads, whose
                                     * forward cannot run, is refused (not modelled) */
  gboolean experts_apart;           /* experts read by the type's own reader, not from
                                     * EXPERTS_MEMBER: from an object of their own (DBRX's
                                     * ffn_config: read_dbrx), by the blocks' parts
                                     * (read_nemotron_h), by enable_moe_block (read_gemma4) */
  guint64 shared_expert_default;    /* nonzero: shared_expert_intermediate_size is read */
  const char *shared_width_member;  /* a shared expert this member's width (0: none), one MLP
                                     * without a gate of its own (GraniteMoeShared's
                                     * shared_intermediate_size), SHARED_WIDTH_DEFAULT wide
                                     * where the file does not say (0: none) */
  guint64 shared_width_default;
  const char *experts_alias;        /* the experts' count's other name, which wins where both
                                     * are given (gpt-oss's num_experts; num_local_experts,
                                     * which DeepSeek's and GLM-4.5's attribute_map reads) */
  guint64 shared_experts_default;   /* shared experts of the routed width, run as one MLP
                                     * without a gate: this many (Llama 4's one), or as many as
                                     * SHARED_EXPERTS_MEMBER says where it is given (DeepSeek's,
                                     * GLM-4.5's n_shared_experts, 0 allowed) */
  const char *shared_experts_member;
  const char *dense_list_member;    /* dense blocks by a list of their indices (absent or
                                     * null: the first dense_layers_default), and those whose
                                     * number is not a multiple of decoder_sparse_step (Qwen's
                                     * mlp_only_layers; get_dense_list), intermediate_size wide
                                     * (dense_ffn_default) */
  const char *dense_types_member;   /* the blocks' MLPs by a list of "dense" and "sparse"
                                     * (GLM-4.7-Flash's mlp_layer_types; null or absent: the
                                     * first dense_layers_default dense), the dense ones
                                     * intermediate_size wide, in any order */
  const char *rope_dim_alias;       /* qk_rope_head_dim's other name, which the class's
                                     * attribute_map reads into it (GLM-4.7-Flash's head_dim) */
  HfLinear linear;                  /* how the class places and sizes its linear blocks, if
                                     * it has any (read_linear_attn) */
  gboolean experts_zero_dense;      /* no experts (0) leaves the shared MLP alone, a dense MLP
                                     * (Granite 4.0's dense hybrids) */
  gboolean attn_indices;            /* the blocks of attention by attn_layer_indices, the
                                     * others Mamba-2's (Bamba's), not by layer_types */
  gboolean ffn_adjusted;            /* its MLP's width adjusted from intermediate_size (LFM2's) */
  gboolean layer_types_required;    /* layer_types, which the class needs (LFM2-MoE's) */
  gboolean experts_per_token_by_layer; /* that member a whole number or a list of one a block
                                        * (Hunyuan's moe_topk), the blocks' all equal */
  gboolean one_expert_not_modelled; /* experts 1 refused, not modelled: a routed expert beside
                                     * a shared MLP, with its router (Hunyuan MoE's default) */
  const char *experts_per_token_member; /* experts a token's member (NULL: num_experts_per_tok,
                                         * which is then its other name, winning where both
                                         * are given: ERNIE 4.5's moe_k) */
  const char *dense_layers_member;  /* the dense blocks' count's member where not
                                     * first_k_dense_replace (ERNIE 4.5's moe_layer_start_index) */
  gboolean reads_dense_layers;      /* first_k_dense_replace is read (this default): the first
                                     * blocks dense, intermediate_size wide (dense_ffn_default) */
  guint64 dense_layers_default;
  guint64 dense_ffn_default;
  gboolean mlp_bias_not_modelled;   /* mlp_bias true refused, not modelled: the class biases its
                                     * dense MLPs and shared experts, not the routed ones
                                     * (DeepSeek-V2's, Hy V3's) */
  gboolean shared_zero_dense;       /* no shared experts (0) is one MLP intermediate_size wide,
                                     * as the class builds it (Hy V3's `0 or intermediate_size`) */
  const char *dense_ffn_member;     /* the dense blocks' width's member where not
                                     * intermediate_size, null there being the routed experts'
                                     * width (Cohere 2 MoE's prefix_dense_intermediate_size) */
  const char *qk_norm_member;       /* a norm over the queries and keys, where this member is
                                     * true (Cohere's use_qk_norm, StableLM's qk_layernorm) */
  const char *head_bias_member;     /* the LM head's bias, where this member is true (PhiMoE's
                                     * lm_head_bias) */
  const char *parallel_member;      /* a parallel block, one norm attention and the MLP share,
                                     * where this member is true (StableLM's
                                     * use_parallel_residual) */
  guint64 kv_lora_default;          /* nonzero: latent attention, read from kv_lora_rank,
                                     * q_lora_rank (null: none), qk_rope_head_dim,
                                     * qk_nope_head_dim and v_head_dim, with these defaults */
  guint64 q_lora_default, rope_dim_default, nope_dim_default, v_head_dim_default;
  gboolean v_head_dim_of_hidden;    /* v_head_dim absent or null: hidden / heads (MiniCPM3's) */
  guint64 index_heads_default, index_head_dim_default; /* nonzero: DSA's indexer, read from
                                                         * index_n_heads and index_head_dim */
  gboolean reads_indexer_types;     /* blocks that share the last one's choice of keys (GLM's
                                     * indexer_types "shared"): no indexer of their own */
  gboolean act_gpt1;                /* the activation from OpenAI GPT's own table (ACT_FNS):
                                     * gelu its GELU-new, relu, silu and swish; no other name */
  const char *act_member, *act_default; /* the MLP's activation's member (activation_function,
                                         * hidden_act) and its default; a default without a
                                         * member: the class's own, not read (CTRL's ReLU);
                                         * neither: the architecture's */
  guint64 position_offset;          /* learned positions' rows no position uses: OPT's offset,
                                     * beyond max_position_embeddings; RoBERTa's padding,
                                     * within them (OFFSET_WITHIN) */
  gboolean offset_within;
} HfRow;

#define NOT_READ G_MAXUINT64

/* GPT-J's row, which CodeGen's is too */
#define GPTJ_ROW                                                                                   \
  { .shape = { .arch = STW_ARCH_NEOX, .norms = STW_NORMS_SHARED, .head_bias = TRUE },              \
    .attn_dropout_member = "attn_pdrop", .resid_dropout_member = "resid_pdrop", .mlp_bias = TRUE, \
    .layers = "n_layer", .hidden = "n_embd", .heads = "n_head", .ffn = "n_inner",                 \
    .max_seq = "n_positions", .layers_default = 28, .hidden_default = 4096, .heads_default = 16,  \
    .ffn_default = 0, .max_seq_default = 2048, .vocab_default = 50400, .kv_default = NOT_READ,    \
    .head_dim_default = NOT_READ, .ffn_null_ok = TRUE, .reads_tie = TRUE,                         \
    .act_member = "activation_function", .act_default = "gelu_new" }

/* Granite MoE Shared's row, which its sliding-window models' is with SINKS */
#define GRANITEMOESHARED_ROW(SINKS)                                                                \
  { .shape = { .arch = STW_ARCH_LLAMA, .attn_sinks = (SINKS) },                                    \
    .experts_member = "num_local_experts", .experts_default = 8, .experts_per_token_default = 2,   \
    .shared_width_member = "shared_intermediate_size", .layers_default = 32,                      \
    .hidden_default = 4096, .heads_default = 32, .ffn_default = 11008, .max_seq_default = 2048,   \
    .vocab_default = 32000, .kv_null_ok = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE }

/* RoBERTa's row, which its copies' are with their own vocabulary's size by default */
#define ROBERTA_ROW(VOCAB)                                                                         \
  { .shape = { .arch = STW_ARCH_BERT }, .mlp_bias = TRUE, .reads_token_types = TRUE,              \
    .attn_dropout_member = "attention_probs_dropout_prob",                                         \
    .resid_dropout_member = "hidden_dropout_prob", .attn_dropout_default = 0.1,                   \
    .resid_dropout_default = 0.1, .layers_default = 12, .hidden_default = 768,                    \
    .heads_default = 12, .ffn_default = 3072, .max_seq_default = 512, .vocab_default = (VOCAB),   \
    .kv_default = NOT_READ, .head_dim_default = NOT_READ, .tied = TRUE, .attention_bias = TRUE,   \
    .act_member = "hidden_act", .act_default = "gelu", .position_offset = 2,                      \
    .offset_within = TRUE }

/* DeepSeek-V3.2's blocks (GLM-5's too), with the row's own defaults: V3's latent attention,
 * experts (256, 8 a token, one shared, moe_intermediate_size 2048 wide) after dense blocks (3,
 * by mlp_layer_types or first_k_dense_replace), and DSA's indexer (128 wide a head) */
#define DSA_ROW(...)                                                                               \
  { .shape = { .arch = STW_ARCH_LLAMA }, .reads_attention_bias = TRUE,                            \
    .experts_member = "n_routed_experts", .experts_alias = "num_local_experts",                   \
    .experts_default = 256, .experts_per_token_default = 8, .shared_experts_default = 1,          \
    .shared_experts_member = "n_shared_experts", .reads_dense_layers = TRUE,                      \
    .dense_types_member = "mlp_layer_types", .dense_layers_default = 3,                           \
    .ffn = "moe_intermediate_size", .kv_lora_default = 512, .rope_dim_default = 64,               \
    .index_head_dim_default = 128, .ffn_default = 2048, .kv_default = NOT_READ,                   \
    .head_dim_default = NOT_READ, .reads_tie = TRUE,                                              \
    .not_null = { "head_dim", "num_key_value_heads" }, __VA_ARGS__ }

/* BERT's encoder and its defaults, and the row's own fields */
#define BERT_ROW(...)                                                                              \
  { .shape = { .arch = STW_ARCH_BERT }, .mlp_bias = TRUE, .reads_token_types = TRUE,              \
    .attn_dropout_member = "attention_probs_dropout_prob",                                         \
    .resid_dropout_member = "hidden_dropout_prob", .attn_dropout_default = 0.1,                   \
    .resid_dropout_default = 0.1, .layers_default = 12, .hidden_default = 768,                    \
    .heads_default = 12, .ffn_default = 3072, .max_seq_default = 512, .vocab_default = 30522,     \
    .kv_default = NOT_READ, .head_dim_default = NOT_READ, .tied = TRUE, .attention_bias = TRUE,   \
    .act_member = "hidden_act", .act_default = "gelu", __VA_ARGS__ }

static const HfRow hf_rows[] = {
  [HF_GPT2] = { .shape = { .arch = STW_ARCH_GPT }, .mlp_bias = TRUE, .layers = "n_layer",
                .attn_dropout_member = "attn_pdrop", .resid_dropout_member = "resid_pdrop",
                .attn_dropout_default = 0.1, .resid_dropout_default = 0.1,
                .hidden = "n_embd", .heads = "n_head", .ffn = "n_inner", .max_seq = "n_positions",
                .layers_default = 12, .hidden_default = 768, .heads_default = 12, .ffn_default = 0,
                .max_seq_default = 1024, .vocab_default = 50257, .kv_default = NOT_READ,
                .head_dim_default = NOT_READ, .ffn_null_ok = TRUE, .tied = TRUE, .reads_tie = TRUE,
                .attention_bias = TRUE, .act_member = "activation_function",
                .act_default = "gelu_new" },
  [HF_NEOX] = { .shape = { .arch = STW_ARCH_NEOX }, .mlp_bias = TRUE, .layers_default = 44,
                .attn_dropout_member = "attention_dropout", .resid_dropout_member = "hidden_dropout",
                .hidden_default = 6144, .heads_default = 64, .ffn_default = 24576,
                .max_seq_default = 2048, .vocab_default = 50432, .kv_default = NOT_READ,
                .head_dim_default = NOT_READ, .tied = FALSE, .reads_tie = TRUE,
                .attention_bias = TRUE, .reads_attention_bias = TRUE, .act_member = "hidden_act",
                .act_default = "gelu" },
  [HF_LLAMA] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 32, .hidden_default = 4096,
                 .heads_default = 32, .ffn_default = 11008, .max_seq_default = 2048,
                 .vocab_default = 32000, .kv_null_ok = TRUE, .head_dim_null_ok = TRUE,
                 .reads_tie = TRUE, .reads_attention_bias = TRUE, .reads_mlp_bias = TRUE },
  [HF_MISTRAL] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 32,
                   .hidden_default = 4096, .heads_default = 32, .ffn_default = 14336,
                   .max_seq_default = 131072, .vocab_default = 32000, .kv_default = 8,
                   .head_dim_null_ok = TRUE, .reads_tie = TRUE },
  [HF_MIXTRAL] = { .shape = { .arch = STW_ARCH_LLAMA }, .experts_member = "num_local_experts",
                   .experts_default = 8, .experts_per_token_default = 2, .layers_default = 32,
                   .hidden_default = 4096, .heads_default = 32, .ffn_default = 14336,
                   .max_seq_default = 131072, .vocab_default = 32000, .kv_default = 8,
                   .head_dim_null_ok = TRUE, .reads_tie = TRUE },
  [HF_QWEN2] = { .shape = { .arch = STW_ARCH_LLAMA }, .qkv_bias_only = TRUE, .layers_default = 32,
                 .hidden_default = 4096, .heads_default = 32, .ffn_default = 22016,
                 .max_seq_default = 32768, .vocab_default = 151936, .kv_default = 32,
                 .kv_null_ok = TRUE, .reads_tie = TRUE },
  [HF_GEMMA] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 28, .hidden_default = 3072,
                 .heads_default = 16, .ffn_default = 24576, .max_seq_default = 8192,
                 .vocab_default = 256000, .kv_default = 16, .head_dim_default = 256, .tied = TRUE,
                 .reads_tie = TRUE, .reads_attention_bias = TRUE },
  [HF_QWEN3] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE }, .layers_default = 32,
                 .hidden_default = 4096, .heads_default = 32, .ffn_default = 22016,
                 .max_seq_default = 32768, .vocab_default = 151936, .kv_default = 32,
                 .kv_null_ok = TRUE, .head_dim_default = 128, .reads_tie = TRUE,
                 .reads_attention_bias = TRUE },
  /* Phi-3: llama's block with q, k and v in one tensor (qkv_proj) and the gate and up in one
   * (gate_up_proj): the same parameters and FLOPs as llama's separate ones, which the graph
   * keeps; never biases */
  [HF_PHI3] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 32, .hidden_default = 3072,
                .heads_default = 32, .ffn_default = 8192, .max_seq_default = 4096,
                .vocab_default = 32064, .kv_null_ok = TRUE, .reads_tie = TRUE },
  /* Gemma 2 and 3: gemma's block with norms after attention and the MLP too; Gemma 2 caps the
   * logits and the scores, Gemma 3 norms each head's queries and keys instead */
  [HF_GEMMA2] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_BOTH,
                             .logit_softcap = TRUE, .attn_softcap = TRUE },
                  .reads_softcaps = TRUE, .layers_default = 26, .hidden_default = 2304,
                  .heads_default = 8, .ffn_default = 9216, .max_seq_default = 8192,
                  .vocab_default = 256000, .kv_default = 4, .head_dim_default = 256, .tied = TRUE,
                  .reads_tie = TRUE, .reads_attention_bias = TRUE },
  [HF_GEMMA3] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_BOTH, .qk_norm = TRUE },
                  .reads_softcaps = TRUE, .layers_default = 26, .hidden_default = 2304,
                  .heads_default = 8, .ffn_default = 9216, .max_seq_default = 131072,
                  .vocab_default = 262208, .kv_default = 4, .head_dim_default = 256, .tied = TRUE,
                  .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* Granite (IBM) and SmolLM3: llama's block (Granite's multipliers scale, they add nothing;
   * SmolLM3's layers without rotary positions differ in no weight) */
  [HF_GRANITE] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 32,
                   .hidden_default = 4096, .heads_default = 32, .ffn_default = 11008,
                   .max_seq_default = 2048, .vocab_default = 32000, .kv_null_ok = TRUE,
                   .reads_tie = TRUE, .reads_attention_bias = TRUE, .reads_mlp_bias = TRUE },
  [HF_SMOLLM3] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 36,
                   .hidden_default = 2048, .heads_default = 16, .ffn_default = 11008,
                   .max_seq_default = 32768, .vocab_default = 128256, .kv_default = 4,
                   .kv_null_ok = TRUE, .tied = TRUE, .reads_tie = TRUE,
                   .reads_attention_bias = TRUE, .reads_mlp_bias = TRUE },
  /* Qwen3's MoE: Qwen3's attention, and in every block experts moe_intermediate_size wide but
   * in the dense blocks (mlp_only_layers, and off decoder_sparse_step), intermediate_size wide */
  [HF_QWEN3_MOE] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                     .experts_member = "num_experts", .experts_default = 128,
                     .experts_per_token_default = 8, .ffn = "moe_intermediate_size",
                     .dense_list_member = "mlp_only_layers", .dense_ffn_default = 6144,
                     .layers_default = 24, .hidden_default = 2048, .heads_default = 32,
                     .ffn_default = 768, .max_seq_default = 32768, .vocab_default = 151936,
                     .kv_default = 4, .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* OLMo 2: llama's projections with the norms after attention and the MLP only, and one
   * RMSNorm over all the queries, one over all the keys */
  [HF_OLMO2] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_POST, .qk_norm = TRUE,
                            .qk_norm_full = TRUE },
                 .layers_default = 32, .hidden_default = 4096, .heads_default = 32,
                 .ffn_default = 11008, .max_seq_default = 2048, .vocab_default = 50304,
                 .kv_null_ok = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE },
  [HF_BERT] = BERT_ROW(),
  /* ERNIE 1 to 3 (Baidu): BERT's encoder, and with use_task_id a table of task_type_vocab_size
   * task embeddings added as the token types' are (counted as more token-type rows) */
  [HF_ERNIE] = BERT_ROW(.reads_task_types = TRUE),
  /* BertGeneration's encoder (the AutoModel of bert-generation): BERT's blocks, its embeddings
   * without token types, no pooler; cross-attention (add_cross_attention) refused, not
   * modelled */
  [HF_BERT_GENERATION] = { .shape = { .arch = STW_ARCH_BERT, .no_token_types = TRUE,
                                      .no_pooler = TRUE },
                           .mlp_bias = TRUE, .attn_dropout_member = "attention_probs_dropout_prob",
                           .resid_dropout_member = "hidden_dropout_prob",
                           .attn_dropout_default = 0.1, .resid_dropout_default = 0.1,
                           .layers_default = 24, .hidden_default = 1024, .heads_default = 16,
                           .ffn_default = 4096, .max_seq_default = 512, .vocab_default = 50358,
                           .kv_default = NOT_READ, .head_dim_default = NOT_READ, .tied = TRUE,
                           .attention_bias = TRUE, .act_member = "hidden_act",
                           .act_default = "gelu" },
  /* StarCoder 2: GPT-NeoX's block (LayerNorms, a GELU MLP, rotary positions) with grouped
   * keys and values, biases everywhere or nowhere (use_bias) */
  [HF_STARCODER2] = { .shape = { .arch = STW_ARCH_NEOX }, .mlp_bias = TRUE,
                      .attn_dropout_member = "attention_dropout",
                      .resid_dropout_member = "residual_dropout",
                      .bias_switch = "use_bias", .layers_default = 30, .hidden_default = 3072,
                      .heads_default = 24, .ffn_default = 12288, .max_seq_default = 4096,
                      .vocab_default = 49152, .kv_default = 2, .head_dim_null_ok = TRUE,
                      .tied = TRUE, .reads_tie = TRUE, .attention_bias = TRUE,
                      .act_member = "hidden_act", .act_default = "gelu_pytorch_tanh" },
  /* GPT-BigCode (StarCoder, SantaCoder): GPT-2 with one key and value head (multi_query) */
  [HF_GPT_BIGCODE] = { .shape = { .arch = STW_ARCH_GPT }, .mlp_bias = TRUE, .layers = "n_layer",
                       .attn_dropout_member = "attn_pdrop", .resid_dropout_member = "resid_pdrop",
                       .attn_dropout_default = 0.1, .resid_dropout_default = 0.1,
                       .hidden = "n_embd", .heads = "n_head", .ffn = "n_inner",
                       .max_seq = "n_positions", .layers_default = 12, .hidden_default = 768,
                       .heads_default = 12, .ffn_default = 0, .max_seq_default = 1024,
                       .vocab_default = 50257, .kv_default = NOT_READ,
                       .head_dim_default = NOT_READ, .ffn_null_ok = TRUE, .tied = TRUE,
                       .reads_tie = TRUE, .attention_bias = TRUE,
                       .act_member = "activation_function", .act_default = "gelu_pytorch_tanh" },
  /* Phi-2 and GPT-J: a parallel block (one LayerNorm that attention and the MLP both read),
   * rotary positions on part of each head, a GELU MLP with biases, an LM head with a bias;
   * Phi's attention has biases, GPT-J's none */
  [HF_PHI] = { .shape = { .arch = STW_ARCH_NEOX, .norms = STW_NORMS_SHARED, .head_bias = TRUE },
               .attn_dropout_member = "attention_dropout", .resid_dropout_member = "resid_pdrop",
               .mlp_bias = TRUE, .layers_default = 24, .hidden_default = 2048, .heads_default = 32,
               .ffn_default = 8192, .max_seq_default = 2048, .vocab_default = 51200,
               .kv_null_ok = TRUE, .reads_tie = TRUE, .attention_bias = TRUE,
               .qk_norm_member = "qk_layernorm", .act_member = "hidden_act",
               .act_default = "gelu_new" },
  [HF_GPTJ] = GPTJ_ROW,
  /* CodeGen (Salesforce): GPT-J's block (its q, k and v one projection, the same weights) with
   * GPT-J's defaults */
  [HF_CODEGEN] = GPTJ_ROW,
  /* Falcon: GPT-NeoX's block (LayerNorms, a GELU MLP, rotary positions), parallel with one
   * norm (or two, in the new decoder architecture), one key and value head (multi_query) or
   * num_kv_heads of them (new architecture), biases everywhere or nowhere (bias) */
  [HF_FALCON] = { .shape = { .arch = STW_ARCH_NEOX }, .bias_switch = "bias",
                  .attn_dropout_member = "attention_dropout",
                  .resid_dropout_member = "hidden_dropout",
                  .ffn = "ffn_hidden_size", .layers_default = 32, .hidden_default = 4544,
                  .heads_default = 71, .ffn_default = 0, .max_seq_default = 2048,
                  .vocab_default = 65024, .kv_default = NOT_READ, .head_dim_default = NOT_READ,
                  .ffn_null_ok = TRUE, .tied = TRUE, .reads_tie = TRUE },
  /* OLMoE: llama's attention with OLMo's norms over all the queries and all the keys, and in
   * every block experts intermediate_size wide */
  [HF_OLMOE] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE, .qk_norm_full = TRUE },
                 .experts_member = "num_experts", .experts_default = 64,
                 .experts_per_token_default = 8, .layers_default = 16, .hidden_default = 2048,
                 .heads_default = 16, .ffn_default = 2048, .max_seq_default = 4096,
                 .vocab_default = 50304, .kv_null_ok = TRUE, .reads_tie = TRUE,
                 .reads_attention_bias = TRUE },
  /* Qwen2's MoE (Qwen1.5-MoE): Qwen2's attention (qkv_bias), in every block experts
   * moe_intermediate_size wide and a shared expert shared_expert_intermediate_size wide but in
   * the dense blocks, as Qwen3's MoE */
  [HF_QWEN2_MOE] = { .shape = { .arch = STW_ARCH_LLAMA }, .qkv_bias_only = TRUE,
                     .qkv_bias_member = "qkv_bias", .experts_member = "num_experts",
                     .experts_default = 60, .experts_per_token_default = 4,
                     .shared_expert_default = 5632, .ffn = "moe_intermediate_size",
                     .dense_list_member = "mlp_only_layers", .dense_ffn_default = 5632,
                     .layers_default = 24, .hidden_default = 2048, .heads_default = 16,
                     .ffn_default = 1408, .max_seq_default = 32768, .vocab_default = 151936,
                     .kv_default = 16, .reads_tie = TRUE },
  /* GLM-4 (glm; glm4 with norms after attention and the MLP too): llama's block, biases on q, k
   * and v (attention_bias) but never on o */
  [HF_GLM] = { .shape = { .arch = STW_ARCH_LLAMA }, .out_bias_never = TRUE, .layers_default = 40,
               .hidden_default = 4096, .heads_default = 32, .ffn_default = 13696,
               .max_seq_default = 131072, .vocab_default = 151552, .kv_default = 2,
               .head_dim_default = 128, .reads_tie = TRUE, .attention_bias = TRUE,
               .reads_attention_bias = TRUE },
  [HF_GLM4] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_BOTH },
                .out_bias_never = TRUE, .layers_default = 40, .hidden_default = 4096,
                .heads_default = 32, .ffn_default = 13696, .max_seq_default = 131072,
                .vocab_default = 151552, .kv_default = 2, .head_dim_default = 128,
                .reads_tie = TRUE, .attention_bias = TRUE, .reads_attention_bias = TRUE },
  /* RoBERTa: BERT's encoder (its checkpoints: 514 positions, of which the first two, before
   * the padding index's next, no position uses; one token type) */
  [HF_ROBERTA] = ROBERTA_ROW(50265),
  /* XLM-RoBERTa, CamemBERT and data2vec's text model: RoBERTa's classes under other names, with
   * BERT's vocabulary by default */
  /* MiniCPM3 (OpenBMB): DeepSeek-V2's latent attention (attention_bias on the down projections
   * and o) in every block with a dense MLP (mlp_bias), the LM head tied; its values hidden / heads
   * wide where v_head_dim is absent or null; heads that do not divide hidden refused, as the
   * class refuses them; its embedding and depth scales change no weight */
  [HF_MINICPM3] = { .shape = { .arch = STW_ARCH_LLAMA }, .reads_attention_bias = TRUE,
                    .reads_mlp_bias = TRUE, .kv_lora_default = 256, .q_lora_default = 768,
                    .rope_dim_default = 32, .nope_dim_default = 64, .v_head_dim_of_hidden = TRUE,
                    .layers_default = 62, .hidden_default = 2560, .heads_default = 40,
                    .ffn_default = 6400, .max_seq_default = 32768, .vocab_default = 73448,
                    .kv_default = 40, .kv_null_ok = TRUE, .head_dim_default = NOT_READ,
                    .heads_divide_hidden = TRUE, .tied = TRUE, .reads_tie = TRUE },
  /* Cohere 2's mixture of experts: Command R7B's parallel block (cohere2: one norm attention
   * and the MLP both read, attention_bias on q, k, v and o), and num_experts experts
   * intermediate_size wide, num_experts_per_tok a token, with num_shared_experts (0) of their
   * width for every token, one MLP without a gate; the blocks' MLPs by mlp_layer_types, else
   * the first first_k_dense_replace (0) dense, prefix_dense_intermediate_size wide (null:
   * intermediate_size); its norms RMSNorms where rms_norm_eps is given, LayerNorms without a
   * bias otherwise: the same weights */
  [HF_COHERE2_MOE] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_SHARED },
                       .experts_member = "num_experts", .experts_default = 8,
                       .experts_per_token_default = 2,
                       .shared_experts_member = "num_shared_experts",
                       .reads_dense_layers = TRUE, .dense_layers_default = 0,
                       .dense_types_member = "mlp_layer_types",
                       .dense_ffn_member = "prefix_dense_intermediate_size",
                       .layers_default = 40, .hidden_default = 8192, .heads_default = 64,
                       .ffn_default = 22528, .max_seq_default = 8192, .vocab_default = 256000,
                       .kv_null_ok = TRUE, .head_dim_default = 128, .tied = TRUE,
                       .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* AFMoE (Arcee's Trinity): llama's attention with a norm over each head's queries and keys
   * and an output gate (gate_proj, its sigmoid times the heads' output), attention_bias on all
   * four projections, and an RMSNorm after each branch too; the first num_dense_layers blocks
   * dense (intermediate_size), the others num_experts experts moe_intermediate_size wide,
   * num_experts_per_tok a token, num_shared_experts of that width for every token (one MLP
   * without a gate), and the router's expert_bias, a weight an expert; its sliding-window
   * layers and muP scales change no weight */
  [HF_AFMOE] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_BOTH, .qk_norm = TRUE,
                            .attn_gate = TRUE, .router_score_bias = TRUE },
                 .experts_member = "num_experts", .experts_default = 64,
                 .experts_per_token_default = 6, .experts_per_token_null_ok = TRUE,
                 .shared_experts_default = 2, .shared_experts_member = "num_shared_experts",
                 .reads_dense_layers = TRUE, .dense_layers_member = "num_dense_layers",
                 .dense_layers_default = 1, .dense_ffn_default = 6144,
                 .ffn = "moe_intermediate_size", .layers_default = 32, .hidden_default = 2048,
                 .heads_default = 16, .ffn_default = 1408, .max_seq_default = 16384,
                 .vocab_default = 200192, .kv_null_ok = TRUE, .head_dim_default = 128,
                 .reads_tie = TRUE, .reads_attention_bias = TRUE },
  [HF_XLM_ROBERTA] = ROBERTA_ROW(30522),
  [HF_CAMEMBERT] = ROBERTA_ROW(30522),
  [HF_DATA2VEC_TEXT] = ROBERTA_ROW(30522),
  /* OPT: GPT-2's block with q, k and v apart (the same weights), a ReLU MLP ffn_dim wide, biases
   * everywhere or nowhere (enable_bias), its learned positions 2 rows beyond
   * max_position_embeddings; OPT-350m's post-norm blocks and projected embeddings refused */
  [HF_OPT] = { .shape = { .arch = STW_ARCH_GPT }, .mlp_bias = TRUE, .bias_switch = "enable_bias",
               .attn_dropout_member = "attention_dropout", .resid_dropout_member = "dropout",
               .resid_dropout_default = 0.1,
               .ffn = "ffn_dim", .layers_default = 12, .hidden_default = 768,
               .heads_default = 12, .ffn_default = 3072, .max_seq_default = 2048,
               .vocab_default = 50272, .kv_default = NOT_READ, .head_dim_default = NOT_READ,
               .tied = TRUE, .reads_tie = TRUE, .attention_bias = TRUE,
               .act_member = "activation_function", .act_default = "relu",
               .position_offset = 2 },
  /* gpt-oss (OpenAI): llama's block with biases on q, k, v and o (attention_bias), a learned
   * sink logit per head in each softmax, and in every block experts intermediate_size wide with
   * biases, and a router with one; its sliding-window layers change no weight */
  [HF_GPT_OSS] = { .shape = { .arch = STW_ARCH_LLAMA, .attn_sinks = TRUE },
                   .experts_member = "num_local_experts", .experts_alias = "num_experts",
                   .experts_default = 128,
                   .experts_per_token_default = 4, .mlp_bias = TRUE, .layers_default = 36,
                   .hidden_default = 2880, .heads_default = 64, .ffn_default = 2880,
                   .max_seq_default = 131072, .vocab_default = 201088, .kv_default = 8,
                   .head_dim_default = 64, .reads_tie = TRUE, .attention_bias = TRUE,
                   .reads_attention_bias = TRUE },
  /* OLMo 3 (HF_OLMO3): OLMo 2's row, defaults and all (its sliding-window layers change no
   * weight): row_of */
  /* EXAONE 4 (LG): llama's projections, never biased, with the norms after attention and the
   * MLP only (OLMo 2's) and an RMSNorm over each head's queries and keys (Qwen3's) */
  [HF_EXAONE4] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_POST, .qk_norm = TRUE },
                   .layers_default = 32, .hidden_default = 4096, .heads_default = 32,
                   .ffn_default = 16384, .max_seq_default = 2048, .vocab_default = 102400,
                   .kv_default = 32, .reads_tie = TRUE },
  /* Seed-OSS (ByteDance): llama's block, q, k and v biased (attention_bias, default true), o
   * by a member of its own (attention_out_bias), heads 128 wide */
  [HF_SEED_OSS] = { .shape = { .arch = STW_ARCH_LLAMA }, .out_bias_member = "attention_out_bias",
                    .layers_default = 64, .hidden_default = 4096, .heads_default = 80,
                    .ffn_default = 27648, .max_seq_default = 524288, .vocab_default = 155136,
                    .kv_default = 8, .kv_null_ok = TRUE, .head_dim_default = 128,
                    .head_dim_null_ok = TRUE, .reads_tie = TRUE, .attention_bias = TRUE,
                    .reads_attention_bias = TRUE, .reads_mlp_bias = TRUE },
  /* ERNIE 4.5 (Baidu), the dense models: llama's block, biases everywhere or nowhere
   * (use_bias), heads 128 wide, the LM head tied */
  [HF_ERNIE4_5] = { .shape = { .arch = STW_ARCH_LLAMA }, .bias_switch = "use_bias",
                    .layers_default = 18, .hidden_default = 1024, .heads_default = 16,
                    .ffn_default = 3072, .max_seq_default = 131072, .vocab_default = 103424,
                    .kv_default = 2, .kv_null_ok = TRUE, .head_dim_default = 128,
                    .head_dim_null_ok = TRUE, .tied = TRUE, .reads_tie = TRUE },
  /* GLM-4.5 (glm4_moe): llama's attention, q, k and v biased by attention_bias, o never, a
   * norm over each head's queries and keys where use_qk_norm; the first first_k_dense_replace
   * blocks' MLP dense (intermediate_size), the others' n_routed_experts experts
   * moe_intermediate_size wide, num_experts_per_tok a token, and n_shared_experts of that width
   * for every token, as one MLP without a gate; its multi-token-prediction layers are not built */
  [HF_GLM4_MOE] = { .shape = { .arch = STW_ARCH_LLAMA }, .out_bias_never = TRUE,
                    .reads_attention_bias = TRUE, .qk_norm_member = "use_qk_norm",
                    .experts_member = "n_routed_experts", .experts_alias = "num_local_experts",
                    .experts_default = 128, .experts_per_token_default = 8,
                    .shared_experts_default = 1,
                    .shared_experts_member = "n_shared_experts", .reads_dense_layers = TRUE,
                    .dense_layers_default = 1,
                    .dense_ffn_default = 10944, .ffn = "moe_intermediate_size",
                    .layers_default = 46, .hidden_default = 4096, .heads_default = 96,
                    .ffn_default = 1408, .max_seq_default = 131072, .vocab_default = 151552,
                    .kv_default = 8, .reads_tie = TRUE },
  /* DeepSeek-V3 (and R1, Kimi K2, Moonlight): latent attention (attention_bias on the down
   * projections and o), its first first_k_dense_replace blocks dense, the others' experts and
   * n_shared_experts shared ones as GLM-4.5's; num_key_value_heads and head_dim, which its
   * class sets from the rest, are not read; its multi-token-prediction layers are not built */
  [HF_DEEPSEEK_V3] = { .shape = { .arch = STW_ARCH_LLAMA }, .reads_attention_bias = TRUE,
                       .experts_member = "n_routed_experts", .experts_alias = "num_local_experts",
                       .experts_default = 256, .experts_per_token_default = 8,
                       .shared_experts_default = 1,
                       .shared_experts_member = "n_shared_experts", .reads_dense_layers = TRUE,
                       .dense_layers_default = 3,
                       .dense_ffn_default = 18432, .ffn = "moe_intermediate_size",
                       .kv_lora_default = 512, .q_lora_default = 1536, .rope_dim_default = 64,
                       .nope_dim_default = 128, .v_head_dim_default = 128,
                       .layers_default = 61, .hidden_default = 7168, .heads_default = 128,
                       .ffn_default = 2048, .max_seq_default = 4096, .vocab_default = 129280,
                       .kv_default = NOT_READ, .head_dim_default = NOT_READ, .reads_tie = TRUE },
  /* DeepSeek-V2 (and V2-Lite, V2.5): V3's blocks with its own defaults (no dense blocks first,
   * 64 experts of 1407, 2 shared), num_experts its experts' other name; its MLP biases (on the
   * dense MLPs and shared experts, not the routed ones) are refused, not modelled. transformers
   * leaves num_experts_per_tok None, which no parameter depends on: 6 (V2's) */
  [HF_DEEPSEEK_V2] = { .shape = { .arch = STW_ARCH_LLAMA }, .reads_attention_bias = TRUE,
                       .experts_member = "n_routed_experts", .experts_alias = "num_experts",
                       .experts_default = 64, .experts_per_token_default = 6,
                       .experts_per_token_null_ok = TRUE, .shared_experts_default = 2,
                       .shared_experts_member = "n_shared_experts", .reads_dense_layers = TRUE,
                       .dense_layers_default = 0, .dense_ffn_default = 11008,
                       .ffn = "moe_intermediate_size", .kv_lora_default = 512,
                       .q_lora_default = 1536, .rope_dim_default = 64, .nope_dim_default = 128,
                       .v_head_dim_default = 128, .layers_default = 32, .hidden_default = 4096,
                       .heads_default = 32, .ffn_default = 1407, .max_seq_default = 2048,
                       .vocab_default = 102400, .kv_default = NOT_READ,
                       .head_dim_default = NOT_READ, .reads_tie = TRUE,
                       .mlp_bias_not_modelled = TRUE },
  /* Cohere's Command R (cohere) and R7B, A (cohere2): llama's projections in a parallel block,
   * one norm (a LayerNorm without a bias: the same weights as an RMSNorm's) that attention and
   * the MLP both read; cohere's use_qk_norm norms each head's queries and keys with weights of
   * their own (heads x head_dim: qk_norm_full's count); the LM head tied, logit_scale no weight;
   * cohere2's sliding-window layers change no weight */
  [HF_COHERE] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_SHARED,
                             .qk_norm_full = TRUE },
                  .qk_norm_member = "use_qk_norm", .layers_default = 40, .hidden_default = 8192,
                  .heads_default = 64, .ffn_default = 22528, .max_seq_default = 8192,
                  .vocab_default = 256000, .kv_null_ok = TRUE, .tied = TRUE, .reads_tie = TRUE,
                  .reads_attention_bias = TRUE },
  [HF_COHERE2] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_SHARED },
                   .layers_default = 40, .hidden_default = 8192, .heads_default = 64,
                   .ffn_default = 22528, .max_seq_default = 8192, .vocab_default = 256000,
                   .kv_null_ok = TRUE, .tied = TRUE, .reads_tie = TRUE,
                   .reads_attention_bias = TRUE },
  /* Llama 4's language model (llama4_text, the text_config of a llama4 file): llama's attention
   * (its query and key norms are L2 norms without weights, its chunked attention and layers
   * without rotary positions change no weight), and in every block num_local_experts experts
   * intermediate_size wide, num_experts_per_tok a token, and a shared expert as wide without a
   * gate; the blocks moe_layers lists have them, or every interleave_moe_layer_step-th
   * (Maverick's every second), the others a dense MLP intermediate_size_mlp wide
   * (llama4_dense_blocks) */
  [HF_LLAMA4_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA },
                       .dense_ffn_member = "intermediate_size_mlp", .dense_ffn_default = 16384,
                       .not_null = { "intermediate_size_mlp" },
                       .experts_member = "num_local_experts", .experts_default = 16,
                       .experts_per_token_default = 1, .shared_experts_default = 1,
                       .layers_default = 48, .hidden_default = 5120, .heads_default = 40,
                       .ffn_default = 8192, .max_seq_default = 131072, .vocab_default = 202048,
                       .kv_default = 8, .head_dim_default = 128, .reads_tie = TRUE,
                       .reads_attention_bias = TRUE },
  /* BLOOM: GPT-NeoX's block run in sequence (GPT-2's), positions by ALiBi, a LayerNorm over
   * the embeddings, an MLP 4 x hidden wide whatever n_inner says with BLOOM's GELU (tanh's
   * approximation op by op, as GELU-new), biases everywhere, the head tied; hidden_size (or
   * its old name n_embed, which wins) defaults to 64 */
  [HF_BLOOM] = { .shape = { .arch = STW_ARCH_NEOX, .alibi = TRUE, .embed_norm = TRUE,
                            .activation = STW_ACT_GELU_NEW },
                 .attn_dropout_member = "attention_dropout",
                 .resid_dropout_member = "hidden_dropout",
                 .mlp_bias = TRUE, .layers = "n_layer", .heads = "n_head", .ffn_fixed = TRUE,
                 .positions_unbounded = TRUE, .layers_default = 2, .hidden_default = 64,
                 .heads_default = 8, .vocab_default = 250880, .kv_default = NOT_READ,
                 .head_dim_default = NOT_READ, .tied = TRUE, .reads_tie = TRUE,
                 .attention_bias = TRUE },
  /* GPT-Neo (EleutherAI): GPT-2's block (learned positions, LayerNorms, a GELU-new MLP 4 x
   * hidden wide where intermediate_size is null, the head tied) with q, k and v unbiased and o
   * biased; its local-attention layers (attention_types, window_size) change no weight, but
   * attention_types must describe num_layers layers, as transformers checks */
  [HF_GPT_NEO] = { .shape = { .arch = STW_ARCH_GPT, .attn_fp32 = TRUE }, .mlp_bias = TRUE,
                   .out_bias_always = TRUE,
                   .layers = "num_layers", .heads = "num_heads", .layers_default = 24,
                   .hidden_default = 2048, .heads_default = 16, .ffn_default = 0,
                   .ffn_null_ok = TRUE, .max_seq_default = 2048, .vocab_default = 50257,
                   .kv_default = NOT_READ, .head_dim_default = NOT_READ, .tied = TRUE,
                   .reads_tie = TRUE, .act_member = "activation_function",
                   .act_default = "gelu_new", .attn_dropout_member = "attention_dropout",
                   .resid_dropout_member = "resid_dropout" },
  /* StableLM (Stability AI): llama's projections and MLP with LayerNorms (weight and bias)
   * before attention and the MLP, or one both read (use_parallel_residual); q, k and v biased
   * with use_qkv_bias; qk_layernorm norms each head's queries and keys (weights only: as many as
   * one norm over all of them); partial_rotary_factor changes no weight */
  [HF_STABLELM] = { .shape = { .arch = STW_ARCH_LLAMA, .norm_type = STW_NORM_LAYER,
                               .qk_norm_full = TRUE },
                    .qk_norm_member = "qk_layernorm", .parallel_member = "use_parallel_residual",
                    .qkv_bias_member = "use_qkv_bias", .resid_dropout_member = "hidden_dropout",
                    .attn_dropout_member = "attention_dropout", .layers_default = 32,
                    .hidden_default = 2560, .heads_default = 32, .ffn_default = 6912,
                    .max_seq_default = 4096, .vocab_default = 50304, .kv_default = 32,
                    .head_dim_default = NOT_READ, .reads_tie = TRUE },
  /* OLMo (AI2's first): llama's block with LayerNorms that have no parameters at all */
  [HF_OLMO] = { .shape = { .arch = STW_ARCH_LLAMA, .norm_type = STW_NORM_LAYER_NO_AFFINE },
                .layers_default = 32, .hidden_default = 4096, .heads_default = 32,
                .ffn_default = 11008, .max_seq_default = 2048, .vocab_default = 50304,
                .kv_null_ok = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* MPT (MosaicML), as transformers builds it: GPT-NeoX's sequential block with positions by
   * ALiBi, LayerNorms without biases, no projection biases (no_bias and expansion_ratio are not
   * read: the MLP is 4 x d_model), the head tied */
  [HF_MPT] = { .shape = { .arch = STW_ARCH_NEOX, .alibi = TRUE,
                          .norm_type = STW_NORM_LAYER_NO_BIAS },
               .layers = "n_layers", .hidden = "d_model", .heads = "n_heads",
               .max_seq = "max_seq_len", .layers_default = 24, .hidden_default = 2048,
               .heads_default = 16, .max_seq_default = 2048, .vocab_default = 50368,
               .ffn_fixed = TRUE, .kv_default = NOT_READ, .head_dim_default = NOT_READ,
               .tied = TRUE, .reads_tie = TRUE, .resid_dropout_member = "resid_pdrop" },
  /* Nemotron (NVIDIA's Nemotron-4, Minitron): GPT-NeoX's sequential block (LayerNorms with
   * weight and bias, an MLP up and down without a gate, ReLU squared) with grouped keys and
   * values, no biases unless attention_bias and mlp_bias; partial_rotary_factor changes no
   * weight */
  [HF_NEMOTRON] = { .shape = { .arch = STW_ARCH_NEOX }, .layers_default = 32,
                    .hidden_default = 6144, .heads_default = 48, .ffn_default = 24576,
                    .max_seq_default = 4096, .vocab_default = 256000,
                    .required = { "num_key_value_heads" },
                    .head_dim_null_ok = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE,
                    .reads_mlp_bias = TRUE, .act_member = "hidden_act", .act_default = "relu2",
                    .attn_dropout_member = "attention_dropout" },
  /* Granite's mixture of experts (IBM Granite 3.0 MoE): llama's attention, and in every block
   * num_local_experts experts intermediate_size wide, num_experts_per_tok a token (the
   * multipliers scale, they add nothing) */
  [HF_GRANITEMOE] = { .shape = { .arch = STW_ARCH_LLAMA }, .experts_member = "num_local_experts",
                      .experts_default = 8, .experts_per_token_default = 2, .layers_default = 32,
                      .hidden_default = 4096, .heads_default = 32, .ffn_default = 11008,
                      .max_seq_default = 2048, .vocab_default = 32000, .kv_null_ok = TRUE,
                      .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* PhiMoE (Phi-3.5-MoE): Mixtral's block with LayerNorms (weight and bias), q, k, v and o
   * biased with attention_bias, the LM head with lm_head_bias */
  [HF_PHIMOE] = { .shape = { .arch = STW_ARCH_LLAMA, .norm_type = STW_NORM_LAYER },
                  .experts_member = "num_local_experts", .experts_default = 16,
                  .experts_per_token_default = 2, .layers_default = 32, .hidden_default = 4096,
                  .heads_default = 32, .ffn_default = 6400, .max_seq_default = 131072,
                  .vocab_default = 32064, .kv_default = 8, .reads_tie = TRUE,
                  .reads_attention_bias = TRUE, .head_bias_member = "lm_head_bias" },
  /* DBRX (Databricks): MPT's names and LayerNorms without biases around llama's attention and
   * a mixture of GLU experts; its key and value heads and its experts in nested objects
   * (read_dbrx) */
  [HF_DBRX] = { .shape = { .arch = STW_ARCH_LLAMA, .norm_type = STW_NORM_LAYER_NO_BIAS },
                .layers = "n_layers", .hidden = "d_model", .heads = "n_heads",
                .max_seq = "max_seq_len", .layers_default = 24, .hidden_default = 2048,
                .heads_default = 16, .max_seq_default = 2048, .vocab_default = 32000,
                .ffn_fixed = TRUE, .kv_default = NOT_READ, .head_dim_default = NOT_READ,
                .experts_apart = TRUE, .resid_dropout_member = "resid_pdrop" },
  /* EXAONE 3 and 3.5 (LG AI Research): llama's block (num_layers is num_hidden_layers'
   * other name, and wins where both are given) */
  [HF_EXAONE] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 32,
                  .hidden_default = 4096, .heads_default = 32,
                  .ffn_default = 14336, .max_seq_default = 4096, .vocab_default = 102400,
                  .kv_default = 8, .kv_null_ok = TRUE, .head_dim_null_ok = TRUE,
                  .reads_tie = TRUE, .reads_attention_bias = TRUE, .reads_mlp_bias = TRUE },
  /* Ministral (Mistral's small models): Mistral's block (its sliding windows change no
   * weight), and Ministral 3's with heads 128 wide by default */
  [HF_MINISTRAL] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 32,
                     .hidden_default = 4096, .heads_default = 32, .ffn_default = 14336,
                     .max_seq_default = 131072, .vocab_default = 32000, .kv_default = 8,
                     .required = { "head_dim" }, .reads_tie = TRUE },
  [HF_MINISTRAL3] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 34,
                      .hidden_default = 4096, .heads_default = 32, .ffn_default = 14336,
                      .max_seq_default = 262144, .vocab_default = 131072, .kv_default = 8,
                      .head_dim_default = 128, .reads_tie = TRUE },
  /* dots.llm1 (rednote): Qwen3's attention (each head's queries and keys RMS-normed) before
   * DeepSeek-V3's experts: the first first_k_dense_replace blocks dense (intermediate_size),
   * the others' n_routed_experts experts moe_intermediate_size wide and n_shared_experts of that
   * width for every token, one MLP without a gate. transformers builds no model without the
   * experts' counts, and leaves num_experts_per_tok None, which no parameter depends on: 6
   * (dots.llm1's) */
  [HF_DOTS1] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                 .required = { "n_routed_experts", "n_shared_experts" },
                 .experts_member = "n_routed_experts", .experts_alias = "num_local_experts",
                 .experts_per_token_default = 6, .experts_per_token_null_ok = TRUE,
                 .shared_experts_default = 1,
                 .shared_experts_member = "n_shared_experts", .reads_dense_layers = TRUE,
                 .dense_ffn_default = 10944, .ffn = "moe_intermediate_size",
                 .layers_default = 62, .hidden_default = 4608, .heads_default = 32,
                 .ffn_default = 1408, .max_seq_default = 2048, .vocab_default = 152064,
                 .kv_default = 32, .kv_null_ok = TRUE, .reads_tie = TRUE,
                 .reads_attention_bias = TRUE },
  /* Hunyuan's dense models (Tencent): llama's block with each head's queries and keys
   * RMS-normed; its heads head_dim wide, which transformers builds no model without */
  [HF_HUNYUAN_DENSE] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                         .required = { "head_dim" }, .layers_default = 32,
                         .hidden_default = 4096, .heads_default = 32, .ffn_default = 11008,
                         .max_seq_default = 2048, .vocab_default = 290943, .kv_null_ok = TRUE,
                         .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* Helium (Kyutai): llama's block, its heads head_dim (128) wide, the output projection never
   * biased and hidden x hidden (transformers builds it so whatever the heads) */
  [HF_HELIUM] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 24,
                  .hidden_default = 2560, .heads_default = 20, .ffn_default = 7040,
                  .max_seq_default = 4096, .vocab_default = 48000, .kv_default = 20,
                  .head_dim_default = 128, .out_bias_never = TRUE, .out_hidden_wide = TRUE,
                  .reads_tie = TRUE, .reads_attention_bias = TRUE, .reads_mlp_bias = TRUE },
  /* Arcee (AFM): llama's attention and RMSNorms beside an MLP up and down without a gate,
   * ReLU squared: GPT-NeoX's sequential block with RMSNorms (norm_type rmsnorm) */
  [HF_ARCEE] = { .shape = { .arch = STW_ARCH_NEOX, .norm_type = STW_NORM_RMS },
                 .layers_default = 32, .hidden_default = 2560, .heads_default = 32,
                 .ffn_default = 18432, .max_seq_default = 4096, .vocab_default = 32000,
                 .kv_null_ok = TRUE, .head_dim_null_ok = TRUE, .reads_tie = TRUE,
                 .reads_attention_bias = TRUE, .reads_mlp_bias = TRUE,
                 .act_member = "hidden_act", .act_default = "relu2",
                 .attn_dropout_member = "attention_dropout" },
  /* Jais 2 (Inception): llama's attention beside LayerNorms and an MLP up and down without a
   * gate, ReLU squared, every projection biased by default: GPT-NeoX's sequential block */
  [HF_JAIS2] = { .shape = { .arch = STW_ARCH_NEOX }, .layers_default = 32,
                 .hidden_default = 3328, .heads_default = 26, .ffn_default = 26624,
                 .max_seq_default = 8192, .vocab_default = 150272, .kv_null_ok = TRUE,
                 .head_dim_null_ok = TRUE, .reads_tie = TRUE, .attention_bias = TRUE,
                 .reads_attention_bias = TRUE, .mlp_bias = TRUE, .reads_mlp_bias = TRUE,
                 .act_member = "hidden_act", .act_default = "relu2",
                 .attn_dropout_member = "attention_dropout" },
  /* Granite MoE with a shared expert (IBM Granite 3.x MoE "shared"): Granite MoE's block and a
   * SwiGLU MLP shared_intermediate_size wide that every token runs, without a gate of its own
   * (0, the default: none) */
  [HF_GRANITEMOESHARED] = GRANITEMOESHARED_ROW(FALSE),
  /* NanoChat (Karpathy's nanochat): GPT-NeoX's sequential block with RMSNorms without weights
   * (one over the embeddings too), grouped keys and values, an MLP up and down without a gate
   * or biases (ReLU squared), the logits capped (final_logit_softcapping, 15); its query and
   * key norms have no weights either, and are not timed */
  [HF_NANOCHAT] = { .shape = { .arch = STW_ARCH_NEOX, .norm_type = STW_NORM_RMS_NO_AFFINE,
                               .embed_norm = TRUE, .logit_softcap = TRUE },
                    .reads_logit_softcap = TRUE, .layers_default = 12, .hidden_default = 768,
                    .heads_default = 6, .ffn_default = 8192, .max_seq_default = 2048,
                    .vocab_default = 50304, .kv_null_ok = TRUE, .reads_tie = TRUE,
                    .reads_attention_bias = TRUE, .act_member = "hidden_act",
                    .act_default = "relu2", .attn_dropout_member = "attention_dropout" },
  /* InternLM3: llama's block; its attribute_map reads qkv_bias into attention_bias and bias
   * into mlp_bias, and the two must agree */
  [HF_INTERNLM3] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 48,
                     .hidden_default = 4096, .heads_default = 32, .ffn_default = 10240,
                     .max_seq_default = 32768, .vocab_default = 128512, .kv_default = 2,
                     .head_dim_default = 128, .kv_null_ok = TRUE, .head_dim_null_ok = TRUE,
                     .reads_tie = TRUE, .reads_attention_bias = TRUE, .reads_mlp_bias = TRUE,
                     .attention_bias_alias = "qkv_bias", .mlp_bias_alias = "bias",
                     .biases_equal = TRUE, .heads_divide_hidden = TRUE },
  /* IQuest-Coder: llama's block, head_dim 128 by default */
  [HF_IQUESTCODER] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 80,
                       .hidden_default = 5120, .heads_default = 40, .ffn_default = 27648,
                       .max_seq_default = 131072, .vocab_default = 76800, .kv_default = 8,
                       .head_dim_default = 128, .kv_null_ok = TRUE, .head_dim_null_ok = TRUE,
                       .reads_tie = TRUE, .reads_attention_bias = TRUE, .reads_mlp_bias = TRUE,
                       .heads_divide_hidden = TRUE },
  /* HyperCLOVA X SEED: llama's block with a norm after each branch too (use_post_norm, true by
   * default: Gemma 2's four norms a block) and Granite's multipliers, which cost no weight */
  [HF_HYPERCLOVAX] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_BOTH },
                       .post_norm_member = "use_post_norm", .layers_default = 32,
                       .hidden_default = 4096, .heads_default = 32, .ffn_default = 11008,
                       .max_seq_default = 2048, .vocab_default = 32000, .kv_null_ok = TRUE,
                       .head_dim_null_ok = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE,
                       .reads_mlp_bias = TRUE, .heads_divide_hidden = TRUE },
  /* MiniMax-M2: llama's attention with RMSNorms over all the queries' and keys' heads at once
   * (qk_norm_full's weights), experts as Mixtral's (num_experts its other name), no projection
   * biased; its router's score correction is a buffer, no weight */
  [HF_MINIMAX_M2] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE, .qk_norm_full = TRUE },
                      .experts_member = "num_local_experts", .experts_alias = "num_experts",
                      .experts_default = 256, .experts_per_token_default = 8,
                      .layers_default = 62, .hidden_default = 3072, .heads_default = 48,
                      .ffn_default = 1536, .max_seq_default = 196608, .vocab_default = 200064,
                      .kv_default = 8, .head_dim_default = 128, .reads_tie = TRUE },
  /* Youtu-LLM (Tencent): DeepSeek-V2's latent attention in every block, a dense MLP, the LM
   * head tied; num_key_value_heads read (null refused, as its class refuses it), though latent
   * attention keeps a key and value a head */
  [HF_YOUTU] = { .shape = { .arch = STW_ARCH_LLAMA }, .reads_attention_bias = TRUE,
                 .kv_lora_default = 512, .q_lora_default = 1536, .rope_dim_default = 64,
                 .nope_dim_default = 128, .v_head_dim_default = 128, .layers_default = 32,
                 .hidden_default = 2048, .heads_default = 16, .ffn_default = 6144,
                 .max_seq_default = 131072, .vocab_default = 128256, .kv_default = 16,
                 .head_dim_default = NOT_READ, .tied = TRUE, .reads_tie = TRUE },
  /* Solar Open (Upstage): GLM-4.5's experts in every block (n_routed_experts, its other name
   * num_local_experts; n_shared_experts of their width for every token), no dense blocks and no
   * query and key norms; attention_bias on q, k and v, never o; the router's score correction
   * a buffer, no weight */
  [HF_SOLAR_OPEN] = { .shape = { .arch = STW_ARCH_LLAMA }, .reads_attention_bias = TRUE,
                      .out_bias_never = TRUE,
                      .experts_member = "n_routed_experts", .experts_alias = "num_local_experts",
                      .experts_default = 128, .experts_per_token_default = 8,
                      .shared_experts_default = 1, .shared_experts_member = "n_shared_experts",
                      .ffn = "moe_intermediate_size", .layers_default = 48,
                      .hidden_default = 4096, .heads_default = 64, .ffn_default = 1280,
                      .max_seq_default = 131072, .vocab_default = 196608, .kv_default = 8,
                      .head_dim_default = 128, .reads_tie = TRUE },
  /* GLM-4.7-Flash: DeepSeek-V3's latent attention and experts (n_routed_experts, its other
   * name num_local_experts; n_shared_experts of their width), the blocks' MLPs by
   * mlp_layer_types (the first dense by default); head_dim is qk_rope_head_dim's other name;
   * num_key_value_heads is read (null refused, as its class refuses it) and not used */
  [HF_GLM4_MOE_LITE] = { .shape = { .arch = STW_ARCH_LLAMA }, .reads_attention_bias = TRUE,
                         .experts_member = "n_routed_experts",
                         .experts_alias = "num_local_experts", .experts_default = 64,
                         .experts_per_token_default = 4, .shared_experts_default = 1,
                         .shared_experts_member = "n_shared_experts",
                         .dense_types_member = "mlp_layer_types", .dense_layers_default = 1,
                         .dense_ffn_default = 10240, .ffn = "moe_intermediate_size",
                         .kv_lora_default = 512, .q_lora_default = 768, .rope_dim_default = 64,
                         .rope_dim_alias = "head_dim", .nope_dim_default = 192,
                         .v_head_dim_default = 256, .layers_default = 47, .hidden_default = 2048,
                         .heads_default = 20, .ffn_default = 1536, .max_seq_default = 202752,
                         .vocab_default = 154880, .kv_default = 20,
                         .head_dim_default = NOT_READ, .reads_tie = TRUE },
  /* VaultGemma (Google): Gemma 2's block with a norm before each branch only, its softcaps */
  [HF_VAULTGEMMA] = { .shape = { .arch = STW_ARCH_LLAMA, .logit_softcap = TRUE,
                                 .attn_softcap = TRUE },
                      .reads_softcaps = TRUE, .layers_default = 26, .hidden_default = 2304,
                      .heads_default = 8, .ffn_default = 9216, .max_seq_default = 8192,
                      .vocab_default = 256000, .kv_default = 4, .head_dim_default = 256,
                      .tied = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE,
                      .heads_divide_hidden = TRUE },
  /* FlexOlmo (Ai2): OLMo 2's block (a norm after each branch, the queries' and keys' norms
   * over all heads) with OLMoE's experts (num_experts, its other name num_local_experts) */
  [HF_FLEX_OLMO] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_POST, .qk_norm = TRUE,
                                .qk_norm_full = TRUE },
                     .experts_member = "num_experts", .experts_alias = "num_local_experts",
                     .experts_default = 7, .experts_per_token_default = 5, .layers_default = 32,
                     .hidden_default = 4096, .heads_default = 32, .ffn_default = 11008,
                     .max_seq_default = 4096, .vocab_default = 100352, .kv_null_ok = TRUE,
                     .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* K-EXAONE (exaone_moe, LG): llama's attention with a norm over each head's queries and keys,
   * no projection biased; the blocks' MLPs by mlp_layer_types, else the first
   * first_k_dense_replace dense (intermediate_size), the others num_experts experts
   * moe_intermediate_size wide and num_shared_experts of that width for every token; head_dim
   * read where given (null refused) */
  [HF_EXAONE_MOE] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                      .experts_member = "num_experts", .experts_default = 64,
                      .experts_per_token_default = 8, .shared_experts_default = 1,
                      .shared_experts_member = "num_shared_experts", .reads_dense_layers = TRUE,
                      .dense_types_member = "mlp_layer_types", .dense_layers_default = 1,
                      .dense_ffn_default = 16384, .ffn = "moe_intermediate_size",
                      .layers_default = 32, .hidden_default = 4096, .heads_default = 32,
                      .ffn_default = 1024, .max_seq_default = 2048, .vocab_default = 102400,
                      .kv_default = 32, .reads_tie = TRUE },
  /* XGLM (Meta): GPT-2's sequential block (LayerNorms, every projection biased, a GELU MLP
   * ffn_dim wide) with sinusoidal positions, which have no weights: GPT-NeoX's block, whose
   * rotary positions have none either; fairseq's names (num_layers, d_model, attention_heads;
   * the common names too); the LM head tied */
  [HF_XGLM] = { .shape = { .arch = STW_ARCH_NEOX }, .layers = "num_layers", .hidden = "d_model",
                .heads = "attention_heads", .ffn = "ffn_dim", .layers_default = 24,
                .hidden_default = 1024, .heads_default = 16, .ffn_default = 4096,
                .max_seq_default = 2048, .vocab_default = 256008, .kv_default = NOT_READ,
                .head_dim_default = NOT_READ, .tied = TRUE, .reads_tie = TRUE,
                .attention_bias = TRUE, .mlp_bias = TRUE, .act_member = "activation_function",
                .act_default = "gelu", .attn_dropout_member = "attention_dropout",
                .resid_dropout_member = "dropout", .attn_dropout_default = 0.1,
                .resid_dropout_default = 0.1 },
  /* BioGPT (Microsoft): GPT-2's block (LayerNorms, every projection biased, a GELU MLP
   * intermediate_size wide) with OPT's learned positions, two rows beyond
   * max_position_embeddings; BERT's dropout names; the LM head tied */
  [HF_BIOGPT] = { .shape = { .arch = STW_ARCH_GPT }, .layers_default = 24, .hidden_default = 1024,
                  .heads_default = 16, .ffn_default = 4096, .max_seq_default = 1024,
                  .vocab_default = 42384, .kv_default = NOT_READ, .head_dim_default = NOT_READ,
                  .tied = TRUE, .reads_tie = TRUE, .attention_bias = TRUE, .mlp_bias = TRUE,
                  .act_member = "hidden_act", .act_default = "gelu",
                  .attn_dropout_member = "attention_probs_dropout_prob",
                  .resid_dropout_member = "hidden_dropout_prob", .attn_dropout_default = 0.1,
                  .resid_dropout_default = 0.1, .position_offset = 2 },
  /* BitNet b1.58 (Microsoft): llama's block with a norm over the heads' output before o_proj
   * and one over the MLP's activation before down_proj (sub_norms; its MLP ReLU squared where
   * llama's is SiLU, the same weights); head_dim read where given (null refused) */
  [HF_BITNET] = { .shape = { .arch = STW_ARCH_LLAMA, .sub_norms = TRUE }, .layers_default = 30,
                  .hidden_default = 2560, .heads_default = 20, .ffn_default = 6912,
                  .max_seq_default = 2048, .vocab_default = 128256, .kv_default = 5,
                  .kv_null_ok = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* ERNIE 4.5's mixtures of experts (Baidu): the dense models' block; from block
   * moe_layer_start_index on, moe_num_experts experts (num_experts its other name)
   * moe_intermediate_size wide, moe_k a token (num_experts_per_tok), moe_num_shared_experts of
   * that width for every token, the router's score correction a weight; the blocks before dense,
   * intermediate_size wide, and so are those past moe_layer_end_index or off moe_layer_interval
   * (ernie_dense_blocks). use_bias true (unbiased experts beside biased projections) is refused,
   * not modelled (read_ernie_moe) */
  [HF_ERNIE4_5_MOE] = { .shape = { .arch = STW_ARCH_LLAMA, .router_score_bias = TRUE },
                        .experts_member = "moe_num_experts", .experts_alias = "num_experts",
                        .experts_per_token_member = "moe_k", .experts_default = 64,
                        .experts_per_token_default = 6, .experts_per_token_null_ok = TRUE,
                        .shared_experts_default = 2,
                        .shared_experts_member = "moe_num_shared_experts",
                        .reads_dense_layers = TRUE, .dense_layers_member = "moe_layer_start_index",
                        .dense_layers_default = 1, .dense_ffn_default = 12288,
                        .ffn = "moe_intermediate_size", .layers_default = 28,
                        .hidden_default = 2560, .heads_default = 20, .ffn_default = 1536,
                        .max_seq_default = 131072, .vocab_default = 103424, .kv_default = 4,
                        .tied = TRUE, .reads_tie = TRUE },
  /* Persimmon (Adept): GPT-NeoX's sequential block (LayerNorms, every projection biased, an MLP
   * up and down without a gate, ReLU squared) with a LayerNorm over each head's queries and
   * keys where qk_layernorm (true), weight and bias shared by the heads; partial rotary
   * positions change no weight */
  [HF_PERSIMMON] = { .shape = { .arch = STW_ARCH_NEOX, .qk_norm = TRUE },
                     .qk_norm_member = "qk_layernorm", .layers_default = 36,
                     .hidden_default = 4096, .heads_default = 64, .ffn_default = 16384,
                     .max_seq_default = 16384, .vocab_default = 262144, .kv_default = NOT_READ,
                     .head_dim_default = NOT_READ, .reads_tie = TRUE, .attention_bias = TRUE,
                     .mlp_bias = TRUE, .act_member = "hidden_act", .act_default = "relu2",
                     .attn_dropout_member = "attention_dropout",
                     .resid_dropout_member = "hidden_dropout" },
  /* CWM (Meta's Code World Model): llama's block, its attention never biased, its MLP with
   * mlp_bias; heads that do not divide hidden refused, as the class refuses them; the
   * sliding-window layers change no weight */
  [HF_CWM] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 64, .hidden_default = 6144,
               .heads_default = 48, .ffn_default = 21504, .max_seq_default = 131072,
               .vocab_default = 128256, .kv_default = 8, .head_dim_default = 128,
               .heads_divide_hidden = TRUE,
               .reads_tie = TRUE, .reads_mlp_bias = TRUE },
  /* Granite's sliding-window models (IBM): Granite's and Granite MoE Shared's blocks with
   * gpt-oss's sink logit per head in each softmax (the windows change no weight) */
  [HF_GRANITE_SWA] = { .shape = { .arch = STW_ARCH_LLAMA, .attn_sinks = TRUE },
                       .layers_default = 24, .hidden_default = 2560, .heads_default = 20,
                       .ffn_default = 8192, .max_seq_default = 8192, .vocab_default = 100352,
                       .kv_default = 4, .kv_null_ok = TRUE, .tied = TRUE, .reads_tie = TRUE,
                       .reads_attention_bias = TRUE, .reads_mlp_bias = TRUE },
  [HF_GRANITEMOE_SWA] = GRANITEMOESHARED_ROW(TRUE),
  /* Flint: Qwen3-MoE's block (a norm over each head's queries and keys) with gpt-oss's sink
   * logit per head, its dense blocks (the first two by default; mlp_only_layers, and off
   * decoder_sparse_step) intermediate_size wide and in the others num_experts experts moe_intermediate_size wide and one shared expert
   * shared_expert_intermediate_size wide without a gate of its own; sliding windows change no
   * weight */
  /* Apertus (Swiss AI): Arcee's block (llama's attention and RMSNorms beside an MLP up and
   * down without a gate) with a norm over each head's queries and keys, and xIELU, whose two
   * learned scalars each block's MLP keeps; attention_bias on all four projections, the MLP
   * never biased; head_dim where the file gives one (transformers reads it as an attribute of
   * its own, and null builds no model) */
  [HF_APERTUS] = { .shape = { .arch = STW_ARCH_NEOX, .norm_type = STW_NORM_RMS, .qk_norm = TRUE },
                   .layers_default = 32, .hidden_default = 4096, .heads_default = 32,
                   .ffn_default = 14336, .max_seq_default = 65536, .vocab_default = 131072,
                   .kv_null_ok = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE,
                   .act_member = "hidden_act", .act_default = "xielu",
                   .attn_dropout_member = "attention_dropout" },
  /* Hunyuan MoE (Tencent, Hunyuan-A13B): Hunyuan's dense attention (a norm over each head's
   * queries and keys, head_dim required) and in every block num_experts experts (num_local_experts
   * its other name) intermediate_size wide, moe_topk a token (a whole number, or one a block),
   * beside a SwiGLU MLP as wide that every token runs, without a gate of its own */
  [HF_HUNYUAN_MOE] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                       .required = { "head_dim" }, .experts_member = "num_experts",
                       .experts_alias = "num_local_experts", .experts_default = 1,
                       .experts_per_token_member = "moe_topk", .experts_per_token_default = 1,
                       .experts_per_token_by_layer = TRUE, .one_expert_not_modelled = TRUE,
                       .shared_experts_default = 1, .layers_default = 32,
                       .hidden_default = 4096, .heads_default = 32, .ffn_default = 11008,
                       .max_seq_default = 2048, .vocab_default = 290943, .kv_null_ok = TRUE,
                       .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* OpenAI GPT (GPT-1): GPT-2's Conv1D projections, learned positions and tied head, its
   * LayerNorms after each residual add (modelled as GPT-2's before each branch: the same
   * parameters and FLOPs, the activations to within a block's input) and none before the head;
   * the MLP 4 x n_embd whatever the file says; n_layer, n_embd, n_head, n_positions (the
   * common names too, which its class reads into them); afn from its own table */
  [HF_OPENAI_GPT] = { .shape = { .arch = STW_ARCH_GPT, .no_final_norm = TRUE }, .mlp_bias = TRUE,
                      .layers = "n_layer", .hidden = "n_embd", .heads = "n_head",
                      .max_seq = "n_positions", .attn_dropout_member = "attn_pdrop",
                      .resid_dropout_member = "resid_pdrop", .attn_dropout_default = 0.1,
                      .resid_dropout_default = 0.1, .layers_default = 12,
                      .hidden_default = 768, .heads_default = 12, .max_seq_default = 512,
                      .vocab_default = 40478, .ffn_fixed = TRUE, .kv_default = NOT_READ,
                      .head_dim_default = NOT_READ, .tied = TRUE, .reads_tie = TRUE,
                      .attention_bias = TRUE, .act_member = "afn", .act_default = "gelu",
                      .act_gpt1 = TRUE },
  /* DiffLlama: llama's block with differential attention (two softmaxes a head, their outputs
   * combined pair by pair with four lambda vectors a block); its heads and key and value heads
   * even, no attention dropout, as transformers refuses otherwise */
  [HF_DIFFLLAMA] = { .shape = { .arch = STW_ARCH_LLAMA, .diff_attn = TRUE },
                     .layers_default = 16, .hidden_default = 2048, .heads_default = 32,
                     .ffn_default = 8192, .max_seq_default = 2048, .vocab_default = 32000,
                     .kv_null_ok = TRUE, .head_dim_null_ok = TRUE, .reads_tie = TRUE,
                     .reads_attention_bias = TRUE },
  /* DeepSeek-V3.2: V3's blocks with DeepSeek's sparse attention (an indexer a block, forward
   * only, its weights never trained: index_n_heads x index_head_dim queries from the queries'
   * latent, so q_lora_rank is required); the dense blocks by mlp_layer_types, else the first
   * first_k_dense_replace; its head_dim the rotary width (qk_rope_head_dim) whatever the file
   * says; n_routed_experts (num_local_experts its other name) */
  [HF_DEEPSEEK_V32] = DSA_ROW(.dense_ffn_default = 18432, .q_lora_default = 1536,
                              .nope_dim_default = 128, .v_head_dim_default = 128,
                              .index_heads_default = 64, .layers_default = 61,
                              .hidden_default = 7168, .heads_default = 128,
                              .max_seq_default = 163840, .vocab_default = 129280),
  /* GLM-5 (glm_moe_dsa): DeepSeek-V3.2's blocks with GLM's defaults; the blocks that reuse the
   * last one's choice of keys (indexer_types, or the pattern and frequency it is made from) no
   * indexer of their own (read_indexer_types) */
  [HF_GLM_MOE_DSA] = DSA_ROW(.dense_ffn_default = 12288, .q_lora_default = 2048,
                             .nope_dim_default = 192, .v_head_dim_default = 256,
                             .index_heads_default = 32, .reads_indexer_types = TRUE,
                             .layers_default = 78, .hidden_default = 6144, .heads_default = 64,
                             .max_seq_default = 202752, .vocab_default = 154880),
  [HF_FLINT] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE, .attn_sinks = TRUE },
                 .experts_member = "num_experts", .experts_default = 256,
                 .experts_per_token_default = 6, .ffn = "moe_intermediate_size",
                 .shared_width_member = "shared_expert_intermediate_size",
                 .shared_width_default = 1024, .dense_list_member = "mlp_only_layers",
                 .dense_layers_default = 2, .dense_ffn_default = 6144, .layers_default = 49,
                 .hidden_default = 2048, .heads_default = 32, .ffn_default = 512,
                 .max_seq_default = 262144, .vocab_default = 150144, .kv_default = 4,
                 .head_dim_default = 128, .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* Hy V3 (Tencent Hunyuan): llama's attention with a norm over each head's queries and keys,
   * attention_bias on all four projections; the blocks' MLPs by mlp_layer_types (null: the
   * first dense, intermediate_size wide), the others num_experts experts (num_local_experts
   * its other name) moe_intermediate_size wide, num_experts_per_tok a token, and
   * num_shared_experts of that width for every token, one MLP without a gate; mlp_bias (the
   * dense MLPs' and the shared experts', not the routed ones') refused, not modelled; the
   * router's fp32 weights counted as the others */
  [HF_HY_V3] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                 .experts_member = "num_experts", .experts_alias = "num_local_experts",
                 .experts_default = 192, .experts_per_token_default = 8,
                 .experts_per_token_null_ok = TRUE, .shared_experts_default = 1,
                 .shared_experts_member = "num_shared_experts",
                 .dense_types_member = "mlp_layer_types", .dense_layers_default = 1,
                 .dense_ffn_default = 13312, .ffn = "moe_intermediate_size",
                 .layers_default = 80, .hidden_default = 4096, .heads_default = 64,
                 .ffn_default = 1536, .max_seq_default = 131072, .vocab_default = 120832,
                 .kv_default = 8, .head_dim_default = 128, .reads_tie = TRUE,
                 .reads_attention_bias = TRUE, .mlp_bias_not_modelled = TRUE,
                 .shared_zero_dense = TRUE },
  /* Kolibri 1: llama's attention with a norm over each head's queries and keys, no projection
   * biased, and an RMSNorm after each branch too (Gemma 2's four); in every block
   * num_local_experts experts (num_experts its other name, which it overrides)
   * moe_intermediate_size wide,
   * num_experts_per_tok a token, and a SwiGLU MLP shared_expert_intermediate_size wide that
   * every token runs, without a gate of its own; its router's score correction is a buffer,
   * no weight; the sliding-window layers change no weight */
  [HF_KOLIBRI1] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_BOTH, .qk_norm = TRUE },
                    .experts_member = "num_experts", .experts_alias = "num_local_experts",
                    .experts_default = 384, .experts_per_token_default = 6,
                    .shared_width_member = "shared_expert_intermediate_size",
                    .shared_width_default = 512, .ffn = "moe_intermediate_size",
                    .layers_default = 50, .hidden_default = 2560, .heads_default = 48,
                    .ffn_default = 512, .max_seq_default = 262144, .vocab_default = 128000,
                    .kv_default = 4, .head_dim_default = 128, .reads_tie = TRUE },
  /* Mellum (JetBrains): Qwen3's MoE block (a norm over each head's queries and keys,
   * attention_bias on all four projections), the blocks' MLPs by mlp_layer_types (null: experts
   * in every block; dense ones first, intermediate_size wide), num_experts experts
   * (num_local_experts its other name) moe_intermediate_size wide, num_experts_per_tok a token;
   * its multi-token-prediction layer (num_mtp_layers, at most 1) is not built into the causal
   * model, no weight */
  [HF_MELLUM] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                  .experts_member = "num_experts", .experts_alias = "num_local_experts",
                  .experts_default = 64, .experts_per_token_default = 8,
                  .dense_types_member = "mlp_layer_types", .dense_layers_default = 0,
                  .dense_ffn_default = 7168, .ffn = "moe_intermediate_size",
                  .layers_default = 28, .hidden_default = 2304, .heads_default = 32,
                  .ffn_default = 896, .max_seq_default = 131072, .vocab_default = 98304,
                  .kv_default = 4, .head_dim_default = 128, .reads_tie = TRUE,
                  .reads_attention_bias = TRUE },
  /* CTRL (Salesforce): GPT-2's sequential block (LayerNorms, every projection biased, q, k and v
   * apart) with an MLP up and down in ReLU, dff wide, and sinusoidal positions, which have no
   * weights: GPT-NeoX's block, as XGLM's; the LM head tied, with a bias of its own; dropout on
   * the residual branches (resid_pdrop), none on the attention */
  [HF_CTRL] = { .shape = { .arch = STW_ARCH_NEOX, .head_bias = TRUE }, .layers = "n_layer",
                .hidden = "n_embd", .heads = "n_head", .ffn = "dff", .max_seq = "n_positions",
                .layers_default = 48, .hidden_default = 1280, .heads_default = 16,
                .ffn_default = 8192, .max_seq_default = 256, .vocab_default = 246534,
                .kv_default = NOT_READ, .head_dim_default = NOT_READ, .tied = TRUE,
                .reads_tie = TRUE, .attention_bias = TRUE, .mlp_bias = TRUE,
                .act_default = "relu", .resid_dropout_member = "resid_pdrop",
                .resid_dropout_default = 0.1 },
  /* Sarvam's mixtures of experts: transformers builds sarvam_moe as GLM-4.5 (glm4_moe: q, k and
   * v biased by attention_bias, use_qkv_bias its other name; a norm over each head's queries and
   * keys where use_qk_norm, true here) and sarvam_mla as DeepSeek-V3 (latent attention, the
   * queries without a low-rank projection by default), each with Sarvam's defaults */
  [HF_SARVAM_MOE] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                      .out_bias_never = TRUE, .reads_attention_bias = TRUE,
                      .attention_bias_alias = "use_qkv_bias", .qk_norm_member = "use_qk_norm",
                      .experts_member = "n_routed_experts", .experts_alias = "num_local_experts",
                      .experts_default = 128, .experts_per_token_default = 6,
                      .shared_experts_default = 1, .shared_experts_member = "n_shared_experts",
                      .reads_dense_layers = TRUE, .dense_layers_default = 1,
                      .dense_ffn_default = 8192, .ffn = "moe_intermediate_size",
                      .layers_default = 19, .hidden_default = 4096, .heads_default = 64,
                      .ffn_default = 1024, .max_seq_default = 131072, .vocab_default = 262144,
                      .kv_default = 4, .head_dim_default = 64, .reads_tie = TRUE },
  [HF_SARVAM_MLA] = { .shape = { .arch = STW_ARCH_LLAMA }, .reads_attention_bias = TRUE,
                      .experts_member = "n_routed_experts", .experts_alias = "num_local_experts",
                      .experts_default = 128, .experts_per_token_default = 8,
                      .experts_per_token_null_ok = TRUE, .shared_experts_default = 1,
                      .shared_experts_member = "n_shared_experts", .reads_dense_layers = TRUE,
                      .dense_layers_default = 1, .dense_ffn_default = 16384,
                      .ffn = "moe_intermediate_size", .kv_lora_default = 512,
                      .q_lora_default = 0, .rope_dim_default = 64, .nope_dim_default = 128,
                      .v_head_dim_default = 128, .layers_default = 32, .hidden_default = 4096,
                      .heads_default = 64, .ffn_default = 2048, .max_seq_default = 4096,
                      .vocab_default = 262144, .kv_default = NOT_READ,
                      .head_dim_default = NOT_READ, .reads_tie = TRUE },
  /* Qwen3-Next: Qwen3's MoE blocks (experts moe_intermediate_size wide but in the dense blocks
   * of mlp_only_layers and off decoder_sparse_step, intermediate_size wide; a shared expert
   * shared_expert_intermediate_size wide with its gate), three in four mixing by Gated
   * DeltaNet's linear attention (read_linear_attn), the others by softmax attention with an
   * output gate (q_proj twice as wide: the queries' and the gate's) and per-head query and key
   * norms; its rotary share and its norms' zero-centred weights change no weight's size */
  [HF_QWEN3_NEXT] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE, .attn_gate = TRUE,
                                  .attn_gate_in_q = TRUE },
                      .linear = HF_LINEAR_GDN, .experts_member = "num_experts",
                      .experts_default = 512, .experts_per_token_default = 10,
                      .shared_expert_default = 512, .ffn = "moe_intermediate_size",
                      .dense_list_member = "mlp_only_layers", .dense_ffn_default = 5632,
                      .layers_default = 48, .hidden_default = 2048, .heads_default = 16,
                      .ffn_default = 512, .max_seq_default = 32768, .vocab_default = 151936,
                      .kv_default = 2, .head_dim_default = 256, .reads_tie = TRUE,
                      .reads_attention_bias = TRUE },
  /* Qwen3.5's language models (the text_config of a qwen3_5 or qwen3_5_moe file): Qwen3-Next's
   * attention, linear and softmax, beside a dense MLP intermediate_size wide, or experts in
   * every block as Qwen3-Next's (no dense blocks) */
  [HF_QWEN3_5_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE, .attn_gate = TRUE,
                                    .attn_gate_in_q = TRUE },
                        .linear = HF_LINEAR_GDN, .layers_default = 32,
                        .hidden_default = 4096, .heads_default = 16, .ffn_default = 12288,
                        .max_seq_default = 32768, .vocab_default = 248320, .kv_default = 4,
                        .head_dim_default = 256, .reads_tie = TRUE,
                        .reads_attention_bias = TRUE },
  [HF_QWEN3_5_MOE_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE,
                                       .attn_gate = TRUE, .attn_gate_in_q = TRUE },
                            .linear = HF_LINEAR_GDN, .experts_member = "num_experts",
                            .experts_default = 256, .experts_per_token_default = 8,
                            .shared_expert_default = 512, .ffn = "moe_intermediate_size",
                            .layers_default = 40, .hidden_default = 2048, .heads_default = 16,
                            .ffn_default = 512, .max_seq_default = 32768,
                            .vocab_default = 248320, .kv_default = 2, .head_dim_default = 256,
                            .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* OLMo Hybrid (Ai2): OLMo 2's blocks (norms after attention and the MLP, one RMSNorm over all
   * the queries and one over all the keys) where one block in four runs softmax attention and
   * the others Gated DeltaNet (q, k, v, a, b and its gate apart: the same weights as Qwen's
   * fused projections), as many key and value heads as the attention's by default
   * (read_linear_attn); the linear blocks' norms, before their mixing and MLP, modelled as the
   * others' after them (the same parameters and FLOPs) */
  /* Granite 4.0's hybrids (IBM): Granite MoE's blocks with a shared MLP
   * (shared_intermediate_size wide) beside num_local_experts experts (0: the shared MLP alone),
   * and in the blocks layer_types names "mamba" (all by default) Mamba-2's mixer in attention's
   * place (read_mamba2); its multipliers and position_embedding_type change no weight */
  [HF_GRANITEMOEHYBRID] = { .shape = { .arch = STW_ARCH_LLAMA },
                            .experts_member = "num_local_experts", .experts_default = 8,
                            .experts_per_token_default = 2, .experts_zero_dense = TRUE,
                            .shared_width_member = "shared_intermediate_size",
                            .shared_width_default = 1024, .linear = HF_LINEAR_MAMBA2,
                            .layers_default = 32, .hidden_default = 4096,
                            .heads_default = 32, .ffn_default = 11008, .max_seq_default = 2048,
                            .vocab_default = 32000, .kv_null_ok = TRUE, .reads_tie = TRUE,
                            .reads_attention_bias = TRUE },
  /* Bamba (IBM): llama's blocks (an MLP biased where mlp_bias says) with Mamba-2's mixer in
   * attention's place but in the blocks attn_layer_indices lists (null: none) */
  [HF_BAMBA] = { .shape = { .arch = STW_ARCH_LLAMA }, .linear = HF_LINEAR_MAMBA2,
                 .attn_indices = TRUE, .layers_default = 32,
                 .hidden_default = 4096, .heads_default = 32, .ffn_default = 14336,
                 .max_seq_default = 262144, .vocab_default = 128000, .kv_default = 8,
                 .kv_null_ok = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE,
                 .reads_mlp_bias = TRUE },
  /* LFM2 (Liquid AI): llama's blocks (RMSNorms, an RMSNorm over each head's queries and keys,
   * no biases, head_dim absent: hidden / heads) with a gated short convolution
   * in attention's place but in the blocks full_attn_idxs lists or layer_types names (read_lfm2),
   * and its MLP's width adjusted from intermediate_size as its class adjusts it */
  [HF_LFM2] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                .linear = HF_LINEAR_SHORT_CONV, .ffn_adjusted = TRUE, .layers_default = 32,
                .hidden_default = 2560,
                .heads_default = 32, .ffn_default = 12288, .max_seq_default = 128000,
                .vocab_default = 65536, .kv_default = 8, .tied = TRUE, .reads_tie = TRUE },
  /* LFM2-MoE: LFM2's blocks, their kinds by layer_types (required: the class builds no model
   * without it), the first num_dense_layers blocks' MLP dense, intermediate_size wide as given,
   * the others num_experts experts moe_intermediate_size wide, num_experts_per_tok a token (its
   * expert bias a buffer, not a weight) */
  /* LFM3 (Liquid AI): LFM2's blocks with norms after the mixer and the MLP too where
   * use_sandwich_norm (true), a gate a head on attention's output where use_attention_gate
   * (true), q, k, v and o biased where attention_bias (false), the MLP intermediate_size wide as
   * given; its short convolutions conv_L_cache (7) wide, in the blocks its own default pattern
   * leaves them (read_lfm2) */
  /* Apertus 1.5's language model (the text_config of an apertus1p5 file): Apertus's blocks and
   * defaults over a vocabulary of 266752, its own LM head output_vocab_size rows where given
   * (pruned to the text's; null: every one): head_vocab (read_head_vocab) */
  [HF_APERTUS1P5_TEXT] = { .shape = { .arch = STW_ARCH_NEOX, .norm_type = STW_NORM_RMS,
                                      .qk_norm = TRUE },
                           .layers_default = 32, .hidden_default = 4096, .heads_default = 32,
                           .ffn_default = 14336, .max_seq_default = 65536,
                           .vocab_default = 266752, .kv_null_ok = TRUE, .reads_tie = TRUE,
                           .reads_attention_bias = TRUE, .act_member = "hidden_act",
                           .act_default = "xielu", .attn_dropout_member = "attention_dropout" },
  /* LaraMini: Qwen3.5's Gated DeltaNet beside softmax attention (Qwen3's: each head's queries
   * and keys normed, no output gate), full or sliding, by layer_types (null: a period of five,
   * linear, sliding, linear, full, sliding; read_gdn); in every block num_experts (128)
   * experts moe_intermediate_size (512) wide, num_experts_per_tok (4) a token, and a shared
   * MLP shared_expert_intermediate_size (512) wide without a gate of its own */
  [HF_LARA_MINI] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                     .linear = HF_LINEAR_GDN_SLIDING, .experts_member = "num_experts",
                     .experts_default = 128, .experts_per_token_default = 4,
                     .ffn = "moe_intermediate_size", .shared_width_member =
                     "shared_expert_intermediate_size", .shared_width_default = 512,
                     .layers_default = 34, .hidden_default = 1024, .heads_default = 16,
                     .ffn_default = 512, .max_seq_default = 131072, .vocab_default = 151936,
                     .kv_default = 4, .head_dim_default = 128, .tied = TRUE, .reads_tie = TRUE,
                     .reads_attention_bias = TRUE },
  /* A.X K1 (SK Telecom): DeepSeek-V3's blocks, its queries always through q_lora_rank (null
   * refused, as its class refuses it, and num_key_value_heads's), its blocks' MLPs by mlp_layer_types (null: the first
   * first_k_dense_replace (1) dense and those whose index moe_layer_freq (1) does not divide;
   * read_axk1), a norm over the experts' output in their blocks (post_mlp_layernorm) */
  [HF_AXK1] = { .shape = { .arch = STW_ARCH_LLAMA, .experts_post_norm = TRUE },
                .reads_attention_bias = TRUE,
                .not_null = { "q_lora_rank", "num_key_value_heads" },
                .experts_member = "n_routed_experts", .experts_alias = "num_local_experts",
                .experts_default = 192, .experts_per_token_default = 8,
                .shared_experts_default = 1, .shared_experts_member = "n_shared_experts",
                .dense_types_member = "mlp_layer_types", .dense_layers_default = 1,
                .dense_ffn_default = 18432, .ffn = "moe_intermediate_size",
                .kv_lora_default = 512, .q_lora_default = 1536, .rope_dim_default = 64,
                .nope_dim_default = 128, .v_head_dim_default = 128, .layers_default = 61,
                .hidden_default = 7168, .heads_default = 64, .ffn_default = 2048,
                .max_seq_default = 32768, .vocab_default = 163840, .kv_default = NOT_READ,
                .head_dim_default = NOT_READ, .reads_tie = TRUE },
  /* MiMo-V2-Flash (Xiaomi): llama's blocks (q, k and v biased where attention_bias, o never),
   * each head's values v_head_dim (128) wide beside queries and keys head_dim (192) wide, full
   * attention in the blocks layer_types says (null: the first and every sixth) and sliding in
   * the others, which have twice num_key_value_heads and a sink logit a head (read_mimo); the
   * MLPs by mlp_layer_types (null: the first dense, intermediate_size wide), the others
   * n_routed_experts experts (DeepSeek-V3's router, its score correction a buffer), no shared
   * one; its multi-token-prediction layers are not built into the causal model */
  [HF_MIMO_V2_FLASH] = { .shape = { .arch = STW_ARCH_LLAMA, .attn_sinks = TRUE },
                         .reads_attention_bias = TRUE, .out_bias_never = TRUE,
                         .experts_member = "n_routed_experts",
                         .experts_alias = "num_local_experts", .experts_default = 256,
                         .experts_per_token_default = 8, .dense_types_member = "mlp_layer_types",
                         .dense_layers_default = 1, .dense_ffn_default = 16384,
                         .ffn = "moe_intermediate_size", .layers_default = 48,
                         .hidden_default = 4096, .heads_default = 64, .ffn_default = 2048,
                         .max_seq_default = 131072, .vocab_default = 152576, .kv_default = 4,
                         .head_dim_default = 192, .reads_tie = TRUE },
  /* Aria's language model (Rhymes AI): llama's blocks (q, k, v and o biased where
   * attention_bias), each with moe_num_experts (8) experts intermediate_size (4096) wide,
   * moe_topk (2) a token, beside moe_num_shared_experts (2) of that width for every token (one
   * MLP without a gate of its own); mlp_bias true (biased shared experts beside unbiased
   * routed ones) is refused, not modelled; 32 layers of 4096, 32 heads, vocab_size 32000 */
  [HF_ARIA_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA }, .experts_member = "moe_num_experts",
                     .experts_default = 8, .experts_per_token_member = "moe_topk",
                     .experts_per_token_default = 2, .shared_experts_default = 2,
                     .shared_experts_member = "moe_num_shared_experts",
                     .mlp_bias_not_modelled = TRUE, .layers_default = 32,
                     .hidden_default = 4096, .heads_default = 32, .ffn_default = 4096,
                     .max_seq_default = 2048, .vocab_default = 32000, .kv_null_ok = TRUE,
                     .head_dim_null_ok = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE },
  [HF_LFM3] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE, .norms = STW_NORMS_BOTH,
                           .attn_head_gate = TRUE },
                .linear = HF_LINEAR_SHORT_CONV_LFM3, .post_norm_member = "use_sandwich_norm",
                .layers_default = 24, .hidden_default = 2048, .heads_default = 16,
                .ffn_default = 7680, .max_seq_default = 128000, .vocab_default = 128000,
                .kv_default = 4, .head_dim_default = 128, .tied = TRUE, .reads_tie = TRUE,
                .reads_attention_bias = TRUE },
  [HF_LFM2_MOE] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                    .linear = HF_LINEAR_SHORT_CONV,
                    .layer_types_required = TRUE, .experts_member = "num_experts",
                    .experts_default = 32, .experts_per_token_default = 4,
                    .ffn = "moe_intermediate_size", .reads_dense_layers = TRUE,
                    .dense_layers_member = "num_dense_layers", .dense_layers_default = 2,
                    .dense_ffn_default = 7168, .layers_default = 32, .hidden_default = 2048,
                    .heads_default = 32, .ffn_default = 1792, .max_seq_default = 128000,
                    .vocab_default = 65536, .kv_default = 8, .tied = TRUE, .reads_tie = TRUE },
  /* MiniMax-Text-01 and MiniMax-M1: Mixtral's blocks (experts in every block) where every
   * second block (layer_types; null: the odd ones) runs lightning attention with the softmax
   * attention's heads and head width (read_linear_attn); its residual factors change no
   * weight */
  [HF_MINIMAX] = { .shape = { .arch = STW_ARCH_LLAMA }, .linear = HF_LINEAR_LIGHTNING,
                   .experts_member = "num_local_experts",
                   .experts_default = 8, .experts_per_token_default = 2, .layers_default = 32,
                   .hidden_default = 4096, .heads_default = 32, .ffn_default = 14336,
                   .max_seq_default = 131072, .vocab_default = 32000, .kv_default = 8,
                   .head_dim_null_ok = TRUE, .reads_tie = TRUE },
  /* Mamba-2's language models (state-spaces' Mamba-2, Codestral Mamba): every block an RMSNorm
   * and Mamba-2's mixer, no attention and no MLP (num_heads of head_dim over expand x hidden,
   * n_groups of B and C of state_size, conv_kernel, use_conv_bias, use_bias; read_mamba2), no
   * positions; untied by default */
  [HF_MAMBA2] = { .shape = { .arch = STW_ARCH_LLAMA },
                  .linear = HF_LINEAR_MAMBA2_LM, .layers_default = 64,
                  .hidden_default = 4096, .heads_default = 1, .ffn_default = 4096,
                  .positions_unbounded = TRUE, .vocab_default = 32768, .kv_default = NOT_READ,
                  .head_dim_default = NOT_READ, .reads_tie = TRUE },
  /* Mamba (Mamba-1's language models) and Falcon Mamba (its mixer's B, C and step RMS-normed
   * without weights): every block an RMSNorm and Mamba-1's mixer (read_mamba1), no attention,
   * no MLP, no positions; tied by default */
  [HF_MAMBA] = { .shape = { .arch = STW_ARCH_LLAMA },
                 .linear = HF_LINEAR_MAMBA1_LM, .layers_default = 32, .hidden_default = 768,
                 .heads_default = 1, .ffn_default = 768, .positions_unbounded = TRUE,
                 .vocab_default = 50280, .kv_default = NOT_READ, .head_dim_default = NOT_READ,
                 .tied = TRUE, .reads_tie = TRUE },
  [HF_FALCON_MAMBA] = { .shape = { .arch = STW_ARCH_LLAMA },
                        .linear = HF_LINEAR_MAMBA1_LM, .layers_default = 32,
                        .hidden_default = 768, .heads_default = 1, .ffn_default = 768,
                        .positions_unbounded = TRUE, .vocab_default = 50280,
                        .kv_default = NOT_READ, .head_dim_default = NOT_READ, .tied = TRUE,
                        .reads_tie = TRUE },
  /* Jamba (AI21): llama's blocks, softmax attention in those attn_layer_period and its offset
   * choose and Mamba-1's mixer, its step, B and C RMS-normed, in the others; experts (Mixtral's,
   * intermediate_size wide) in those expert_layer_period and its offset choose and a dense MLP
   * as wide in the others (read_jamba) */
  [HF_JAMBA] = { .shape = { .arch = STW_ARCH_LLAMA }, .linear = HF_LINEAR_JAMBA,
                 .experts_member = "num_experts", .experts_default = 16,
                 .experts_per_token_default = 2, .layers_default = 32, .hidden_default = 4096,
                 .heads_default = 32, .ffn_default = 14336, .max_seq_default = 262144,
                 .vocab_default = 65536, .kv_default = 8, .reads_tie = TRUE },
  /* Kimi Linear (Moonshot): DeepSeek-V3's blocks (latent attention, experts after dense
   * blocks, shared experts; the router's score correction a buffer, not a weight) where three
   * blocks in four run Kimi Delta Attention instead (read_kda); its head its own whatever
   * tie_word_embeddings says, as transformers builds it */
  [HF_KIMI_LINEAR] = { .shape = { .arch = STW_ARCH_LLAMA }, .reads_attention_bias = TRUE,
                       .linear = HF_LINEAR_KDA,
                       .experts_member = "num_local_experts", .experts_default = 256,
                       .experts_per_token_default = 8, .experts_per_token_null_ok = TRUE,
                       .shared_experts_default = 1, .shared_experts_member = "n_shared_experts",
                       .reads_dense_layers = TRUE, .dense_types_member = "mlp_layer_types",
                       .dense_layers_default = 1, .dense_ffn_default = 9216,
                       .ffn = "moe_intermediate_size", .kv_lora_default = 512,
                       .q_lora_default = 0, .rope_dim_default = 64, .nope_dim_default = 128,
                       .v_head_dim_default = 128, .layers_default = 27, .hidden_default = 2304,
                       .heads_default = 32, .ffn_default = 1024, .max_seq_default = 1048576,
                       .vocab_default = 163840, .kv_default = NOT_READ,
                       .head_dim_default = NOT_READ },
  /* Bailing's hybrids (inclusionAI's Ring and Ling linear): Kimi Linear's blocks with their
   * own defaults, a gate a head on its latent attention's output (g_proj), Kimi Delta
   * Attention's gates projected straight to every channel, as many
   * linear heads as the attention's of head_dim, every layer_group_size-th block softmax
   * attention (read_bailing); the multi-token-prediction layers are not built into the causal
   * model; its head its own */
  [HF_BAILING_HYBRID] = { .shape = { .arch = STW_ARCH_LLAMA, .attn_head_gate = TRUE },
                          .reads_attention_bias = TRUE,
                          .linear = HF_LINEAR_BAILING,
                          .experts_member = "num_local_experts", .experts_default = 512,
                          .experts_per_token_default = 8, .shared_experts_default = 1,
                          .shared_experts_member = "n_shared_experts",
                          .reads_dense_layers = TRUE, .dense_types_member = "mlp_layer_types",
                          .dense_layers_default = 2, .dense_ffn_default = 6144,
                          .ffn = "moe_intermediate_size", .kv_lora_default = 512,
                          .q_lora_default = 0, .rope_dim_default = 64, .nope_dim_default = 128,
                          .v_head_dim_default = 128, .layers_default = 42,
                          .hidden_default = 2560, .heads_default = 32, .ffn_default = 768,
                          .max_seq_default = 262144, .vocab_default = 157184,
                          .kv_default = NOT_READ, .head_dim_default = NOT_READ },
  /* Falcon-H1 (TII): llama's blocks (an MLP biased where mlp_bias says, attention where
   * attention_bias) whose every block runs Mamba-2's mixer beside its attention, both on the
   * block's norm, their outputs summed (read_falcon_h1); its multipliers (embedding, attention,
   * SSM, MLP, lm_head, the mixer's mup_vector buffer) change no weight */
  [HF_FALCON_H1] = { .shape = { .arch = STW_ARCH_LLAMA }, .linear = HF_LINEAR_FALCON_H1,
                     .layers_default = 32, .hidden_default = 4096, .heads_default = 32,
                     .ffn_default = 14336, .max_seq_default = 8192, .vocab_default = 128000,
                     .kv_default = 8, .kv_null_ok = TRUE, .reads_tie = TRUE,
                     .reads_attention_bias = TRUE, .reads_mlp_bias = TRUE },
  /* Nemotron-H (NVIDIA's Nemotron-H, Nemotron Nano 2, Nemotron 3): llama's blocks of one part
   * each, a norm and one of Mamba-2's mixer, attention without positions (q, k, v and o never
   * biased), an ungated MLP (relu^2 by mlp_hidden_act) or experts as ungated, with a shared one
   * and a latent, by layers_block_type or hybrid_override_pattern (read_nemotron_h); its
   * multi-token-prediction layers are not built into the causal model; its head its own
   * whatever tie_word_embeddings says, as transformers builds it */
  [HF_NEMOTRON_H] = { .shape = { .arch = STW_ARCH_LLAMA, .mlp_ungated = TRUE, .no_rope = TRUE },
                      .linear = HF_LINEAR_NEMOTRON_H, .layers_default = 4,
                      .hidden_default = 4096, .heads_default = 32, .ffn_default = 21504,
                      .max_seq_default = 4096, .vocab_default = 131072, .kv_default = 8,
                      .head_dim_default = 128, .reads_mlp_bias = TRUE, .experts_apart = TRUE,
                      .act_member = "mlp_hidden_act", .act_default = "relu2" },
  /* Gemma 4's language model (the text_config of a gemma4 file): Gemma 3's block (norms before
   * and after attention and the MLP, each head's queries and keys normed, its values normed
   * without weights) whose full-attention blocks among the sliding ones have heads of their own
   * width and may take their values from their keys, whose last blocks may reuse an earlier
   * block's keys and values, with per-layer embeddings and a MoE block beside the MLP
   * (read_gemma4); its logits capped where final_logit_softcapping says */
  [HF_GEMMA4_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_BOTH,
                                  .qk_norm = TRUE },
                       .reads_logit_softcap = TRUE, .layers_default = 30,
                       .hidden_default = 2304, .heads_default = 8, .ffn_default = 9216,
                       .max_seq_default = 131072, .vocab_default = 262144, .kv_default = 4,
                       .head_dim_default = 256, .tied = TRUE, .reads_tie = TRUE,
                       .reads_attention_bias = TRUE, .experts_apart = TRUE },
  /* LongCat-Flash (Meituan): num_layers layers of two blocks each (read_longcat), every block
   * latent attention and a dense MLP ffn_hidden_size wide, the first of each pair also experts
   * beside its MLP (n_routed_experts of expert_ffn_hidden_size, moe_topk a token among them and
   * zero_expert_num zero experts); its multi-token-prediction layers are not built */
  [HF_LONGCAT_FLASH] = { .shape = { .arch = STW_ARCH_LLAMA }, .reads_attention_bias = TRUE,
                         .experts_member = "n_routed_experts",
                         .experts_alias = "num_local_experts", .experts_default = 512,
                         .experts_per_token_member = "moe_topk", .experts_per_token_default = 12,
                         .ffn = "expert_ffn_hidden_size", .kv_lora_default = 512,
                         .q_lora_default = 1536, .rope_dim_default = 64, .nope_dim_default = 128,
                         .v_head_dim_default = 128, .layers = "num_layers", .layers_default = 28,
                         .hidden_default = 6144, .heads_default = 64, .ffn_default = 2048,
                         .max_seq_default = 131072, .vocab_default = 131072,
                         .kv_default = NOT_READ, .head_dim_default = NOT_READ, .reads_tie = TRUE,
                         .not_null = { "q_lora_rank", "kv_lora_rank", "head_dim" } },
  /* Laguna (Poolside): llama's blocks with each head's queries and keys normed and its output
   * gated from the block's input (read_laguna: a scalar a head, or a channel), the first block's
   * MLP dense (mlp_layer_types), the others num_experts experts moe_intermediate_size wide
   * beside a shared MLP shared_expert_intermediate_size wide, the router's score correction a
   * weight; its sliding windows change no weight */
  [HF_LAGUNA] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE, .router_score_bias = TRUE },
                  .experts_member = "num_experts", .experts_default = 256,
                  .experts_per_token_default = 8, .shared_width_member =
                  "shared_expert_intermediate_size", .shared_width_default = 512,
                  .dense_types_member = "mlp_layer_types", .dense_layers_default = 1,
                  .dense_ffn_default = 8192, .ffn = "moe_intermediate_size",
                  .layers_default = 40, .hidden_default = 2048, .heads_default = 48,
                  .ffn_default = 512, .max_seq_default = 131072, .vocab_default = 100352,
                  .kv_default = 8, .head_dim_default = 128, .reads_tie = TRUE,
                  .reads_attention_bias = TRUE },
  /* MiniMax-M3's language model (the text_config of a minimax_m3_vl file): llama's blocks
   * without biases, each head's queries and keys normed (Gemma's norms: 1 + a weight, the same
   * parameters), MiniMax-M3's block indexer in its sparse-attention blocks (read_minimax_m3);
   * the MLPs by mlp_layer_types (null: all sparse), the dense ones dense_intermediate_size wide,
   * the others num_local_experts experts intermediate_size wide beside a shared MLP
   * shared_intermediate_size wide, the router's score correction a buffer */
  [HF_MINIMAX_M3_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                           .experts_member = "num_local_experts", .experts_default = 128,
                           .experts_per_token_default = 4,
                           .shared_width_member = "shared_intermediate_size",
                           .shared_width_default = 3072,
                           .dense_ffn_member = "dense_intermediate_size",
                           .dense_ffn_default = 12288, .layers_default = 60,
                           .hidden_default = 6144, .heads_default = 64, .ffn_default = 3072,
                           .max_seq_default = 524288, .vocab_default = 200064, .kv_default = 4,
                           .head_dim_default = 128, .reads_tie = TRUE,
                           .not_null = { "dense_intermediate_size" } },
  /* Gemma 3n's language model (the text_config of a gemma3n file): Gemma 3's block (norms before
   * and after attention and the MLP, each head's queries and keys normed, its values normed
   * without weights) with AltUp, LAuReL, per-layer embeddings and the last blocks reusing an
   * earlier block's keys and values (read_gemma3n); its logits capped where
   * final_logit_softcapping says */
  [HF_GEMMA3N_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_BOTH,
                                   .qk_norm = TRUE },
                        .reads_logit_softcap = TRUE, .ffn_fixed = TRUE, .layers_default = 35,
                        .hidden_default = 2048, .heads_default = 8, .max_seq_default = 32768,
                        .vocab_default = 262400, .kv_default = 2, .head_dim_default = 256,
                        .tied = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE },
  [HF_OLMO_HYBRID] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_POST,
                                  .qk_norm = TRUE, .qk_norm_full = TRUE },
                       .linear = HF_LINEAR_GDN_FROM_HEADS,
                       .layers_default = 32, .hidden_default = 3840, .heads_default = 30,
                       .ffn_default = 11008, .max_seq_default = 65536, .vocab_default = 100352,
                       .kv_null_ok = TRUE, .reads_tie = TRUE, .reads_attention_bias = TRUE },
  /* The Qwen-VL files' language models (their text_config, or Qwen2-VL's and Qwen2.5-VL's own
   * members where they give none): Qwen2's block with a head width of hidden / heads whatever
   * head_dim says; Qwen3's; Qwen3-MoE's */
  [HF_QWEN2_VL_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA }, .qkv_bias_only = TRUE,
                         .layers_default = 80, .hidden_default = 8192, .heads_default = 64,
                         .ffn_default = 29568, .max_seq_default = 32768,
                         .vocab_default = 152064, .kv_default = 8, .kv_null_ok = TRUE,
                         .head_dim_default = NOT_READ, .heads_divide_hidden = TRUE,
                         .reads_tie = TRUE },
  [HF_QWEN2_5_VL_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA }, .qkv_bias_only = TRUE,
                           .layers_default = 80, .hidden_default = 8192, .heads_default = 64,
                           .ffn_default = 29568, .max_seq_default = 32768,
                           .vocab_default = 152064, .kv_default = 8, .kv_null_ok = TRUE,
                           .head_dim_default = NOT_READ, .heads_divide_hidden = TRUE,
                           .reads_tie = TRUE },
  [HF_QWEN3_VL_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                         .layers_default = 32, .hidden_default = 4096, .heads_default = 32,
                         .ffn_default = 22016, .max_seq_default = 128000,
                         .vocab_default = 151936, .kv_default = 32, .kv_null_ok = TRUE,
                         .head_dim_default = 128, .reads_tie = TRUE,
                         .reads_attention_bias = TRUE },
  [HF_QWEN3_VL_MOE_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA, .qk_norm = TRUE },
                             .experts_member = "num_experts", .experts_default = 60,
                             .experts_per_token_default = 4, .ffn = "moe_intermediate_size",
                             .dense_list_member = "mlp_only_layers", .dense_ffn_default = 5632,
                             .layers_default = 24, .hidden_default = 2048, .heads_default = 16,
                             .ffn_default = 1408, .max_seq_default = 128000,
                             .vocab_default = 151936, .kv_default = 16,
                             .head_dim_null_ok = TRUE, .tied = TRUE, .reads_tie = TRUE,
                             .reads_attention_bias = TRUE },
  /* Llama 3.2 Vision's language model (an mllama file's text_config): Llama's blocks, a head
   * width of hidden / heads; its cross-attention blocks, which a text step skips, are read with
   * the file (read_mllama_text) */
  [HF_MLLAMA_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA }, .layers_default = 40,
                       .hidden_default = 4096, .heads_default = 32, .ffn_default = 14336,
                       .max_seq_default = 131072, .vocab_default = 128256, .kv_default = 8,
                       .head_dim_default = NOT_READ, .reads_tie = TRUE },
  /* GLM-4.1V's language model: GLM-4-0414's block (norms after attention and the MLP too), q,
   * k and v biased, o never, a head width of hidden / heads; GLM-4.5V's: GLM-4.5's, attention
   * biased by default, no norms over the queries and keys */
  [HF_GLM4V_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA, .norms = STW_NORMS_BOTH },
                      .qkv_bias_only = TRUE, .layers_default = 40, .hidden_default = 4096,
                      .heads_default = 32, .ffn_default = 13696, .max_seq_default = 32768,
                      .vocab_default = 151552, .kv_default = 2, .kv_null_ok = TRUE,
                      .head_dim_default = NOT_READ, .reads_tie = TRUE },
  [HF_GLM4V_MOE_TEXT] = { .shape = { .arch = STW_ARCH_LLAMA }, .out_bias_never = TRUE,
                          .reads_attention_bias = TRUE, .attention_bias = TRUE,
                          .experts_member = "n_routed_experts",
                          .experts_alias = "num_local_experts", .experts_default = 128,
                          .experts_per_token_default = 8, .shared_experts_default = 1,
                          .shared_experts_member = "n_shared_experts",
                          .reads_dense_layers = TRUE, .dense_layers_default = 1,
                          .dense_ffn_default = 10944, .ffn = "moe_intermediate_size",
                          .layers_default = 46, .hidden_default = 4096, .heads_default = 96,
                          .ffn_default = 1408, .max_seq_default = 65536,
                          .vocab_default = 151424, .kv_default = 8, .reads_tie = TRUE },
};

/* Whether ROW's type has experts a file can give: at the top (experts_member) or nested. */
static gboolean
reads_experts(const HfRow *row)
{
  return row->experts_member != NULL || row->experts_apart;
}

/* TYPE's row: its own, or the type's whose class it repeats. */
static const HfRow *
row_of(HfType type)
{
  /* OLMo 3 is OLMo 2's row, defaults and all; GPT-SW3 is GPT-2's class under its own name */
  return &hf_rows[type == HF_OLMO3 ? HF_OLMO2 : type == HF_GPT_SW3 ? HF_GPT2 : type];
}

/* Hugging Face's activations (transformers' ACT2FN) as stowage models them: GELU with tanh's
 * approximation written out op by op, or one kernel; an unknown name is refused, as transformers
 * refuses it. */
static const struct {
  const char *name;
  StwActivation act;
} hf_activations[] = {
  { "gelu_new", STW_ACT_GELU_NEW }, { "gelu_fast", STW_ACT_GELU_NEW },
  { "gelu_accurate", STW_ACT_GELU_NEW }, { "gelu_python_tanh", STW_ACT_GELU_NEW },
  { "relu", STW_ACT_RELU }, { "gelu", STW_ACT_GELU }, { "gelu_pytorch_tanh", STW_ACT_GELU },
  { "gelu_python", STW_ACT_GELU }, { "gelu_10", STW_ACT_GELU }, { "quick_gelu", STW_ACT_GELU },
  { "silu", STW_ACT_GELU }, { "swish", STW_ACT_GELU }, { "relu2", STW_ACT_RELU2 },
  { "relu6", STW_ACT_RELU }, { "leaky_relu", STW_ACT_RELU }, { "tanh", STW_ACT_GELU },
  { "sigmoid", STW_ACT_GELU }, { "mish", STW_ACT_GELU }, { "linear", STW_ACT_GELU },
  { "hardswish", STW_ACT_GELU }, { "laplace", STW_ACT_GELU }, { "sqrtsoftplus", STW_ACT_GELU },
  { "xielu", STW_ACT_XIELU },
};

/* OBJ's member KEY as Python's json reads it: the last of its name (a member given twice takes
 * its last value); NULL when absent. */
static const cJSON *
last_member(const cJSON *obj, const char *key)
{
  const cJSON *found = NULL;
  for (const cJSON *m = obj->child; m != NULL; m = m->next)
    if (m->string != NULL && strcmp(m->string, key) == 0)
      found = m;
  return found;
}

/* OBJ's member KEY unless it is absent or null (config.json writes null for "the default"). */
static const cJSON *
member(const cJSON *obj, const char *key)
{
  const cJSON *v = last_member(obj, key);
  return v == NULL || cJSON_IsNull(v) ? NULL : v;
}

/* A config.json being read: its reader at the root, and its model type for messages. */
typedef struct {
  StwJsonReader *r;
  const cJSON *root;
  const char *type;
} Hf;

/* KEY's whole number from MIN to MAX into *OUT (absent: as it was; null: 0 where NULL_OK,
 * else refused, as transformers refuses it). */
static gboolean
get_whole(const Hf *h, const char *key, gboolean null_ok, guint64 min, guint64 max,
          guint64 *out, GError **error)
{
  const cJSON *v = last_member(h->root, key);
  if (v == NULL)
    return TRUE;
  if (cJSON_IsNull(v)) {
    if (null_ok) {
      *out = 0;
      return TRUE;
    }
    return stw_json_fail_at(h->r, key, error, "null, where a %s config.json needs a whole number "
                            "(transformers refuses it)", h->type);
  }
  gsize saved = stw_json_push_key(h->r, key);
  gboolean ok = stw_json_as_u64(h->r, v, min, max, out, error);
  stw_json_pop(h->r, saved);
  return ok;
}

static gboolean
get_u64(const Hf *h, const char *key, gboolean null_ok, guint64 max, guint64 *out,
        GError **error)
{
  return get_whole(h, key, null_ok, 1, max, out, error);
}

/* Entry N (E) of list KEY as a whole number from MIN to MAX into *OUT, its path in the message
 * where it is not one. */
static gboolean
entry_u64(const Hf *h, const char *key, guint64 n, const cJSON *e, guint64 min, guint64 max,
          guint64 *out, GError **error)
{
  gsize saved = stw_json_push_key(h->r, key);
  stw_json_push_index(h->r, (gsize)n);
  gboolean ok = stw_json_as_u64(h->r, e, min, max, out, error);
  stw_json_pop(h->r, saved);
  return ok;
}

/* List KEY (V, an array) of one name a block, read as transformers indexes it by block: an entry
 * among ON (NULL-terminated) turns the block's flag on through SET, one among OFF off; any other
 * refused, naming ON's first and OFF's; fewer entries than blocks refused; where EXACT (the class
 * requires one a block) more refused too, else those beyond the blocks never read. */
static gboolean
read_block_names(const Hf *h, const char *key, const cJSON *v, const char *const *on,
                 const char *const *off, gboolean exact,
                 void (*set)(StwModelConfig *, guint64, gboolean), StwModelConfig *c,
                 GError **error)
{
  guint64 n = 0;
  for (const cJSON *e = v->child; e != NULL; e = e->next, n++) {
    if (n >= c->layers && !exact)
      continue;
    const char *s = cJSON_IsString(e) ? e->valuestring : "";
    gboolean is_on = g_strv_contains(on, s);
    if (!is_on && !g_strv_contains(off, s))
      return stw_json_fail_at(h->r, key, error, "entry %" G_GUINT64_FORMAT ": expected \"%s\" "
                              "or \"%s\"", n, on[0], off[0]);
    if (n < c->layers)
      set(c, n, is_on);
  }
  if (n < c->layers || (exact && n != c->layers))
    return stw_json_fail_at(h->r, key, error, "%" G_GUINT64_FORMAT " entries for %"
                            G_GUINT64_FORMAT " blocks: transformers %s one a block", n,
                            c->layers, exact ? "requires" : "reads");
  return TRUE;
}

/* GLM's blocks that reuse the last one's choice of keys ("shared": no indexer of their own)
 * marked unindexed in C: indexer_types (an entry a block, C's layers at least), else the
 * pattern index_topk_pattern ("F" full, "S" shared), else every block but every
 * index_topk_freq-th from index_skip_topk_offset on, as the class makes them. */
static gboolean
read_indexer_types(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 layers = c->layers;
  const char *key = "indexer_types";
  const cJSON *v = member(h->root, key);
  if (v == NULL && (v = member(h->root, "index_topk_pattern")) != NULL)
    key = "index_topk_pattern";
  if (v != NULL && cJSON_IsString(v) && strcmp(key, "index_topk_pattern") == 0) {
    /* a pattern of F and S */
    const char *p = v->valuestring;
    for (guint64 i = 0; i < layers; i++) {
      if (p[i] == '\0')
        return stw_json_fail_at(h->r, key, error, "%zu blocks' letters for %" G_GUINT64_FORMAT
                                " blocks: transformers reads one a block", strlen(p), layers);
      if (p[i] != 'F' && p[i] != 'S')
        return stw_json_fail_at(h->r, key, error, "'%c' at %" G_GUINT64_FORMAT ": expected F "
                                "(full) or S (shared), as transformers reads it", p[i], i);
      stw_model_set_block_indexed(c, i, p[i] == 'F');
    }
    return TRUE;
  }
  if (v != NULL) {
    static const char *const full[] = { "full", NULL }, *const shared[] = { "shared", NULL };
    if (!cJSON_IsArray(v))
      return stw_json_fail_at(h->r, key, error, "expected a list of \"full\" and \"shared\"");
    return read_block_names(h, key, v, full, shared, FALSE, stw_model_set_block_indexed, c,
                            error);
  }
  gint64 freq = 1, offset = 2;
  static const char *const keys[] = { "index_topk_freq", "index_skip_topk_offset" };
  gint64 *values[] = { &freq, &offset };
  for (int k = 0; k < 2; k++) { /* whole numbers, either sign (a block's index is shifted) */
    const cJSON *x = member(h->root, keys[k]);
    if (x == NULL)
      continue;
    if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) ||
        fabs(x->valuedouble) > (double)STW_MODEL_MAX_LAYERS)
      return stw_json_fail_at(h->r, keys[k], error, "expected a whole number from -%d to %d",
                              STW_MODEL_MAX_LAYERS, STW_MODEL_MAX_LAYERS);
    *values[k] = (gint64)x->valuedouble;
  }
  freq = MAX(freq, 1);
  for (guint64 i = 0; i < layers; i++)
    stw_model_set_block_indexed(c, i, MAX((gint64)i - offset + 1, 0) % freq == 0);
  return TRUE;
}

/* A count KEY that is a whole number from 1 to MAX, or a list of one a block (Hunyuan's
 * moe_topk, which transformers indexes by block: LAYERS entries at least, the others never
 * read), into *OUT; the blocks' differing is refused, not modelled. Absent, *OUT stays. */
static gboolean
get_by_layer(const Hf *h, const char *key, guint64 layers, guint64 max, guint64 *out,
             GError **error)
{
  const cJSON *v = last_member(h->root, key);
  if (v == NULL || !cJSON_IsArray(v))
    return get_u64(h, key, FALSE, max, out, error);
  guint64 n = 0, first = 0;
  for (const cJSON *e = v->child; e != NULL && n < layers; e = e->next, n++) {
    guint64 k = 0;
    if (!entry_u64(h, key, n, e, 1, max, &k, error))
      return FALSE;
    if (n == 0)
      first = k;
    else if (k != first)
      return stw_json_fail_at(h->r, key, error, "entry %" G_GUINT64_FORMAT " is %" G_GUINT64_FORMAT
                              " where entry 0 is %" G_GUINT64_FORMAT ": blocks that differ are "
                              "not modelled (one count for every block is)", n, k, first);
  }
  if (n < layers)
    return stw_json_fail_at(h->r, key, error, "%" G_GUINT64_FORMAT " entries for %"
                            G_GUINT64_FORMAT " blocks: transformers reads one a block", n, layers);
  *out = first;
  return TRUE;
}

/* The first N of C's blocks dense (all of them where N is more), the rest of experts. */
static void
dense_first(StwModelConfig *c, guint64 n)
{
  for (guint64 l = 0; l < c->layers; l++)
    stw_model_set_block_dense(c, l, l < n);
}

/* C's blocks' MLPs by list KEY of "dense" and "sparse" (GLM-4.7-Flash's mlp_layer_types), any
 * of them dense: absent or null, C's stay as the class's default makes them; one entry a block
 * at least (transformers indexes it by block; those beyond are never read). */
static gboolean
get_dense_types(const Hf *h, const char *key, StwModelConfig *c, GError **error)
{
  const cJSON *v = last_member(h->root, key);
  if (v == NULL || cJSON_IsNull(v))
    return TRUE;
  static const char *const dense[] = { "dense", NULL }, *const sparse[] = { "sparse", NULL };
  if (!cJSON_IsArray(v))
    return stw_json_fail_at(h->r, key, error, "expected a list of \"dense\" and \"sparse\"");
  return read_block_names(h, key, v, dense, sparse, FALSE, stw_model_set_block_dense, c, error);
}

/* The blocks list KEY (V, not null) names by their indices marked ON by SET in C, the others
 * left as they are (an index beyond the blocks never read); a list refused where it is not one
 * of whole numbers, naming the entry. */
static gboolean
mark_listed_blocks(const Hf *h, const char *key, const cJSON *v, StwModelConfig *c,
                   void (*set)(StwModelConfig *, guint64, gboolean), gboolean on, GError **error)
{
  if (!cJSON_IsArray(v))
    return stw_json_fail_at(h->r, key, error, "expected a list of block indices");
  guint64 n = 0;
  for (const cJSON *e = v->child; e != NULL; e = e->next, n++) {
    guint64 i = 0;
    if (!entry_u64(h, key, n, e, 0, STW_JSON_INT_MAX, &i, error))
      return FALSE;
    if (i < c->layers)
      set(c, i, on);
  }
  return TRUE;
}

/* C's blocks of experts as Qwen's MoE classes choose them: a block is dense where list KEY of
 * block indices names it (mlp_only_layers; absent or null: the class's default, C's dense blocks
 * as they are; an index beyond the blocks never read) or where its number (its index + 1) is not
 * a multiple of decoder_sparse_step. */
static gboolean
get_dense_list(const Hf *h, const char *key, StwModelConfig *c, GError **error)
{
  guint64 step = 1;
  const cJSON *v = last_member(h->root, key);
  if (!get_u64(h, "decoder_sparse_step", FALSE, STW_MODEL_MAX_LAYERS, &step, error))
    return FALSE;
  if (v != NULL && !cJSON_IsNull(v)) { /* the list alone, not the default */
    dense_first(c, 0);
    if (!mark_listed_blocks(h, key, v, c, stw_model_set_block_dense, TRUE, error))
      return FALSE;
  }
  for (guint64 l = 0; l < c->layers; l++)
    if ((l + 1) % step != 0)
      stw_model_set_block_dense(c, l, TRUE);
  return TRUE;
}

/* A count that may be 0 (n_shared_experts, first_k_dense_replace); null refused. */
static gboolean
get_count(const Hf *h, const char *key, guint64 max, guint64 *out, GError **error)
{
  return get_whole(h, key, FALSE, 0, max, out, error);
}

static gboolean
get_bool(const Hf *h, const char *key, gboolean *out, GError **error)
{
  const cJSON *v = member(h->root, key);
  if (v == NULL)
    return TRUE;
  if (!cJSON_IsBool(v))
    return stw_json_fail_at(h->r, key, error, "expected true or false");
  *out = cJSON_IsTrue(v);
  return TRUE;
}

/* A softcap member KEY (Gemma's): a number caps, null does not; absent, *ON stays the class's
 * default. */
static gboolean
get_cap(const Hf *h, const char *key, gboolean *on, GError **error)
{
  const cJSON *v = last_member(h->root, key);
  if (v == NULL)
    return TRUE;
  if (!cJSON_IsNull(v) && !cJSON_IsNumber(v))
    return stw_json_fail_at(h->r, key, error, "expected a number or null");
  *on = cJSON_IsNumber(v);
  return TRUE;
}

/* GPT-Neo's attention_types ([[["global", "local"], 12]] by default: a pattern of layers and how
 * often it repeats) must describe LAYERS layers, as transformers' GPTNeoConfig checks; their
 * kinds change no weight. */
static gboolean
check_gpt_neo_layers(const Hf *h, guint64 layers, GError **error)
{
  const cJSON *types = member(h->root, "attention_types");
  guint64 described = 24;
  if (types != NULL) {
    described = 0;
    const cJSON *item = NULL;
    if (!cJSON_IsArray(types))
      return stw_json_fail_at(h->r, "attention_types", error, "expected a list of [kinds, "
                              "repeats] pairs");
    cJSON_ArrayForEach(item, types) {
      const cJSON *kinds = cJSON_GetArrayItem(item, 0), *times = cJSON_GetArrayItem(item, 1);
      if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 2 || !cJSON_IsArray(kinds) ||
          !cJSON_IsNumber(times) || !(times->valuedouble >= 0) ||
          times->valuedouble > (double)STW_MODEL_MAX_LAYERS ||
          times->valuedouble != floor(times->valuedouble))
        return stw_json_fail_at(h->r, "attention_types", error, "expected a list of [kinds, "
                                "repeats] pairs");
      described += (guint64)cJSON_GetArraySize(kinds) * (guint64)times->valuedouble;
    }
  }
  if (described == layers)
    return TRUE;
  return stw_json_fail_at(h->r, "attention_types", error, "describes %" G_GUINT64_FORMAT
                          " layers, where num_layers is %" G_GUINT64_FORMAT " (transformers "
                          "refuses it)", described, layers);
}

/* Falcon's blocks: its key and value heads (num_kv_heads in the new decoder architecture, one
 * with multi_query, else the heads) and its norms (one for a parallel block, unless the new
 * architecture gives it two: num_ln_in_parallel_attn; two for a sequential one). */
static gboolean
read_falcon_blocks(const Hf *h, StwModelConfig *c, GError **error)
{
  gboolean new_arch = FALSE, multi = TRUE, parallel = TRUE;
  guint64 kv = c->heads, lns = 0;
  if (last_member(h->root, "head_dim") != NULL)
    return stw_json_fail_at(h->r, "head_dim", error, "a falcon head is hidden / heads wide "
                            "(transformers refuses the member)");
  if (!get_bool(h, "new_decoder_architecture", &new_arch, error) ||
      !get_bool(h, "alibi", &c->alibi, error) ||
      !get_bool(h, "multi_query", &multi, error) ||
      !get_bool(h, "parallel_attn", &parallel, error) ||
      !get_u64(h, "num_kv_heads", TRUE, STW_MODEL_MAX_WIDTH, &kv, error) ||
      !get_u64(h, "num_ln_in_parallel_attn", TRUE, 2, &lns, error))
    return FALSE;
  c->kv_heads = new_arch ? (kv != 0 ? kv : c->heads) : multi ? 1 : c->heads;
  if (lns == 0 && new_arch)
    lns = 2;
  c->norms = parallel && lns != 2 ? STW_NORMS_SHARED : STW_NORMS_PRE;
  return TRUE;
}

/* The MLP's activation ROW's class reads (ROW's member, else its default), as stowage models it:
 * the architecture's default where it is that. */
static gboolean
read_activation(const Hf *h, const HfRow *row, StwModelConfig *c, GError **error)
{
  const char *name = row->act_default;
  const cJSON *v = row->act_member != NULL ? last_member(h->root, row->act_member) : NULL;
  if (v != NULL && !cJSON_IsString(v))
    return stw_json_fail_at(h->r, row->act_member, error, "expected an activation's name (a "
                            "string: gelu_new, gelu, relu, ...)");
  if (v != NULL)
    name = v->valuestring;
  if (row->act_gpt1) { /* OpenAI GPT's ACT_FNS: its gelu is GELU-new */
    static const struct {
      const char *name;
      StwActivation act;
    } gpt1[] = { { "gelu", STW_ACT_DEFAULT }, { "relu", STW_ACT_RELU },
                 { "silu", STW_ACT_GELU }, { "swish", STW_ACT_GELU } };
    for (gsize i = 0; i < G_N_ELEMENTS(gpt1); i++)
      if (strcmp(gpt1[i].name, name) == 0) {
        c->activation = gpt1[i].act;
        return TRUE;
      }
    return stw_json_fail_at(h->r, row->act_member, error, "\"%.64s\" is not in %s's "
                            "activations (gelu, relu, silu, swish): transformers refuses the "
                            "model", name, h->type);
  }
  if (strcmp(name, "prelu") == 0) /* torch's PReLU: a learned slope in every MLP */
    return stw_json_fail_at(h->r, row->act_member, error, "\"prelu\": not modelled (its learned "
                            "slope is a parameter of every block's MLP)");
  for (gsize i = 0; i < G_N_ELEMENTS(hf_activations); i++)
    if (strcmp(hf_activations[i].name, name) == 0) {
      StwModelConfig arch_default = { .arch = c->arch };
      c->activation = hf_activations[i].act == stw_model_activation(&arch_default)
                          ? STW_ACT_DEFAULT
                          : hf_activations[i].act;
      return TRUE;
    }
  return stw_json_fail_at(h->r, row->act_member, error, "\"%.64s\" is not an activation "
                          "transformers knows (gelu_new, gelu, gelu_pytorch_tanh, relu, silu, "
                          "...): it refuses the model", name);
}

/* OPT's variants stowage does not model: OPT-350m's post-norm blocks (do_layer_norm_before
 * false) and its embeddings narrower than the blocks (word_embed_proj_dim, projected in and
 * out), a final norm removed; norms without weights are read (norm_type). */
static gboolean
read_opt(const Hf *h, StwModelConfig *c, GError **error)
{
  gboolean before = TRUE, removed = FALSE, affine = TRUE;
  guint64 proj = c->hidden;
  if (!get_bool(h, "do_layer_norm_before", &before, error) ||
      !get_bool(h, "_remove_final_layer_norm", &removed, error) ||
      !get_bool(h, "layer_norm_elementwise_affine", &affine, error) ||
      !get_u64(h, "word_embed_proj_dim", TRUE, STW_MODEL_MAX_WIDTH, &proj, error))
    return FALSE;
  if (proj != 0 && proj != c->hidden)
    return stw_json_fail_at(h->r, "word_embed_proj_dim", error, "%" G_GUINT64_FORMAT ": "
                            "embeddings narrower than the blocks, projected in and out "
                            "(OPT-350m's), are not modelled", proj);
  /* post-norm blocks (OPT-350m's) modelled as pre-norm ones, the same parameters and FLOPs
   * (OpenAI GPT's are so too), with no norm before the head, as _remove_final_layer_norm (kept
   * for old checkpoints) leaves it */
  c->no_final_norm = removed || !before;
  if (!affine) /* LayerNorms without weights or biases (the model format's norm_type) */
    c->norm_type = STW_NORM_LAYER_NO_AFFINE;
  return TRUE;
}

/* Whole number KEY of the object OUTER (DBRX's attn_config, ffn_config), from MIN to MAX, into
 * *OUT: left as it is where either is absent or OUTER is null (transformers' defaults). */
static gboolean
get_nested(const Hf *h, const char *outer, const char *key, guint64 min, guint64 max,
           guint64 *out, GError **error)
{
  const cJSON *o = last_member(h->root, outer);
  if (o == NULL || cJSON_IsNull(o))
    return TRUE;
  if (!cJSON_IsObject(o))
    return stw_json_fail_at(h->r, outer, error, "expected an object");
  gsize saved = stw_json_push_key(h->r, outer);
  const Hf in = { .r = h->r, .root = o, .type = h->type };
  gboolean ok = get_whole(&in, key, FALSE, min, max, out, error);
  stw_json_pop(h->r, saved);
  return ok;
}

/* DBRX's nested sizes: attn_config's kv_n_heads (1), ffn_config's ffn_hidden_size (3584, each
 * expert's width), moe_num_experts (4) and moe_top_k (1). */
static gboolean
read_dbrx(const Hf *h, StwModelConfig *c, GError **error)
{
  c->kv_heads = 1;
  c->ffn = 3584;
  c->experts = 4;
  c->experts_per_token = 1;
  gboolean tied = FALSE;
  if (!get_bool(h, "tie_word_embeddings", &tied, error))
    return FALSE;
  if (tied)
    return stw_json_fail_at(h->r, "tie_word_embeddings", error, "true: DBRX's head is its own "
                            "(transformers refuses to tie it)");
  return get_nested(h, "attn_config", "kv_n_heads", 1, STW_MODEL_MAX_WIDTH, &c->kv_heads,
                    error) &&
         get_nested(h, "ffn_config", "ffn_hidden_size", 1, 8 * (guint64)STW_MODEL_MAX_WIDTH,
                    &c->ffn, error) &&
         get_nested(h, "ffn_config", "moe_num_experts", 1, STW_MODEL_MAX_EXPERTS, &c->experts,
                    error) &&
         get_nested(h, "ffn_config", "moe_top_k", 1, STW_MODEL_MAX_EXPERTS,
                    &c->experts_per_token, error);
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

/* ERNIE 4.5's blocks of experts, C's layers read: every block from the first (the dense
 * count C has) to the last (moe_layer_end_index -1, or the last or beyond), at an interval of 1;
 * others, and use_bias true (its experts and router unbiased beside biased projections), are
 * refused, not modelled. */
static gboolean
read_ernie_moe(const Hf *h, GError **error)
{
  gboolean bias = FALSE;
  if (!get_bool(h, "use_bias", &bias, error))
    return FALSE;
  if (bias)
    return stw_json_fail_at(h->r, "use_bias", error, "true: unbiased experts and router beside "
                            "biased projections are not modelled");
  return TRUE;
}

/* ERNIE 4.5's blocks of experts in C (its first ones dense by moe_layer_start_index already): a
 * block has experts from the start index to moe_layer_end_index (-1: the last) where its number
 * (its index + 1) is a multiple of moe_layer_interval; the others are dense. */
static gboolean
ernie_dense_blocks(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 interval = 1, start = stw_model_dense_prefix(c), end = c->layers;
  if (!get_u64(h, "moe_layer_interval", FALSE, STW_MODEL_MAX_LAYERS, &interval, error))
    return FALSE;
  const cJSON *e = last_member(h->root, "moe_layer_end_index");
  if (e != NULL && (!cJSON_IsNumber(e) || e->valuedouble != (double)(gint64)e->valuedouble ||
                    e->valuedouble < -1 || e->valuedouble > (double)STW_MODEL_MAX_LAYERS))
    return stw_json_fail_at(h->r, "moe_layer_end_index", error, "expected a block's index, or "
                            "-1 (the last)");
  if (e != NULL && e->valuedouble >= 0)
    end = (guint64)e->valuedouble;
  for (guint64 l = 0; l < c->layers; l++)
    stw_model_set_block_dense(c, l, !(l >= start && l <= end && (l + 1) % interval == 0));
  return TRUE;
}

/* Llama 4's blocks of experts in C: those moe_layers lists (indices; null or absent: every
 * interleave_moe_layer_step-th, Maverick's every second), the others dense. */
static gboolean
llama4_dense_blocks(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 step = 1;
  if (!get_u64(h, "interleave_moe_layer_step", FALSE, STW_MODEL_MAX_LAYERS, &step, error))
    return FALSE;
  const cJSON *v = last_member(h->root, "moe_layers");
  if (v == NULL || cJSON_IsNull(v)) {
    for (guint64 l = 0; l < c->layers; l++)
      stw_model_set_block_dense(c, l, (l + 1) % step != 0);
    return TRUE;
  }
  dense_first(c, c->layers);
  return mark_listed_blocks(h, "moe_layers", v, c, stw_model_set_block_dense, FALSE, error);
}

/* The names of layer_types' entries: a linear block (Qwen's, OLMo's, Granite's; the legacy name
 * transformers remaps) and one of softmax attention, and LFM2's. */
static const char *const linear_types[] = { "linear_attention", "mamba", NULL };
static const char *const attention_types[] = { "full_attention", "attention", NULL };
static const char *const conv_types[] = { "conv", NULL };
static const char *const lfm2_attention_types[] = { "full_attention", "sliding_attention",
                                                    "attention", NULL };
/* Gemma 4's (its legacy "attention" refused, as transformers refuses the blocks it makes) */
static const char *const sliding_types[] = { "sliding_attention", NULL };
static const char *const full_types[] = { "full_attention", NULL };

/* Each of C's blocks linear or softmax attention by the list V of layer_types: one entry a
 * block, no more and no fewer, each one of LINEAR's names or ATTENTION's. */
static gboolean
read_layer_types(const Hf *h, const cJSON *v, StwModelConfig *c, const char *const *linear,
                 const char *const *attention, GError **error)
{
  if (!cJSON_IsArray(v))
    return stw_json_fail_at(h->r, "layer_types", error, "expected a list of \"%s\" and \"%s\"",
                            linear[0], attention[0]);
  return read_block_names(h, "layer_types", v, linear, attention, TRUE,
                          stw_model_set_block_linear, c, error);
}

/* LFM2's blocks into C: a short convolution conv_L_cache (3) wide, its convolution and
 * projections biased where conv_bias (false), in every block but those of attention:
 * layer_types, one a block ("conv", or attention: "full_attention", "sliding_attention",
 * "attention"; required where ROW says so), else full_attn_idxs (null: every block attention).
 * Where ROW's class adjusts its MLP's width (LFM2's): intermediate_size (its old name
 * block_ff_dim winning), where
 * block_auto_adjust_ff_dim (true) two thirds of it floored, times block_ffn_dim_multiplier (1.0),
 * floored, rounded up to a multiple of block_multiple_of (256);
 * tie_embedding, the head's old name, wins over tie_word_embeddings. LFM3's (ROW's linear
 * HF_LINEAR_SHORT_CONV_LFM3): 7 wide by default, layer_types absent or null its own pattern
 * (full attention in blocks 2, 6, 10, ..., sliding in 4, 8, 12, ..., the rest convolutions),
 * the gate a head on attention's output where use_attention_gate (true); no old names. */
static gboolean
read_lfm2(const Hf *h, const HfRow *row, StwModelConfig *c, GError **error)
{
  gboolean bias = FALSE, adjust = TRUE, lfm3 = row->linear == HF_LINEAR_SHORT_CONV_LFM3;
  guint64 multiple = 256;
  double mult = 1.0;
  c->linear_kind = STW_LINEAR_SHORT_CONV;
  c->linear_conv = lfm3 ? 7 : 3;
  const cJSON *m = row->ffn_adjusted ? last_member(h->root, "block_ffn_dim_multiplier") : NULL;
  if (!get_u64(h, "conv_L_cache", FALSE, 1024, &c->linear_conv, error) ||
      !get_bool(h, "conv_bias", &bias, error) ||
      (!lfm3 && !get_bool(h, "tie_embedding", &c->tied, error)) ||
      (lfm3 && !get_bool(h, "use_attention_gate", &c->attn_head_gate, error)) ||
      (row->ffn_adjusted &&
       (!get_u64(h, "block_ff_dim", FALSE, 8 * (guint64)STW_MODEL_MAX_WIDTH, &c->ffn, error) ||
        !get_bool(h, "block_auto_adjust_ff_dim", &adjust, error) ||
        !get_u64(h, "block_multiple_of", FALSE, STW_MODEL_MAX_WIDTH, &multiple, error))))
    return FALSE;
  if (m != NULL && (!cJSON_IsNumber(m) || !(m->valuedouble > 0) || m->valuedouble > 1024))
    return stw_json_fail_at(h->r, "block_ffn_dim_multiplier", error, "expected a number above 0 "
                            "(at most 1024)");
  if (m != NULL)
    mult = m->valuedouble;
  c->linear_conv_bias = c->linear_proj_bias = c->linear_out_bias = bias;
  if (adjust && row->ffn_adjusted) {
    c->ffn = (guint64)(mult * (double)(guint64)(2.0 * (double)c->ffn / 3.0));
    c->ffn = multiple * ((c->ffn + multiple - 1) / multiple);
  }
  const cJSON *types = last_member(h->root, "layer_types");
  if (types != NULL && !cJSON_IsNull(types))
    return read_layer_types(h, types, c, conv_types, lfm2_attention_types, error);
  if (lfm3) { /* attention in blocks 2, 6, 10, ... (full) and 4, 8, 12, ... (sliding) */
    for (guint64 l = 0; l < c->layers; l++)
      stw_model_set_block_linear(c, l, l % 4 != 2 && !(l % 4 == 0 && l > 0));
    return TRUE;
  }
  if (row->layer_types_required)
    return stw_json_fail_at(h->r, "layer_types", error, "required (a list of \"conv\" and "
                            "\"full_attention\", one a block): transformers builds no %s model "
                            "without it", h->type);
  const cJSON *idx = last_member(h->root, "full_attn_idxs");
  if (idx == NULL || cJSON_IsNull(idx))
    return TRUE; /* attention in every block */
  for (guint64 l = 0; l < c->layers; l++)
    stw_model_set_block_linear(c, l, TRUE);
  return mark_listed_blocks(h, "full_attn_idxs", idx, c, stw_model_set_block_linear, FALSE,
                            error);
}

/* C without a linear block: attention in every block, no linear sizes (which would be refused
 * without blocks to use them). */
static void
no_linear_sizes(StwModelConfig *c)
{
  c->linear_k_heads = c->linear_v_heads = c->linear_k_head_dim = c->linear_v_head_dim = 0;
  c->linear_conv = 0;
  c->linear_kind = STW_LINEAR_GDN;
  c->linear_conv_bias = c->linear_proj_bias = c->linear_out_bias = FALSE;
  c->linear_norms = c->linear_full_gates = c->linear_no_out_norm = c->linear_parallel = FALSE;
  c->linear_dt_rank = 0;
}

/* The members of Mamba-2's mixer and their defaults: the hybrids' (mamba_*: Granite 4.0's, Bamba's,
 * Falcon-H1's) and Mamba-2's own language model's */
typedef struct {
  const char *heads, *head_dim, *groups, *state, *expand, *conv, *conv_bias, *proj_bias;
  /* (head_dim_default 0: "auto", inner / heads, allowed and the default) */
  guint64 heads_default, head_dim_default, groups_default, state_default;
} Mamba2Names;
static const Mamba2Names mamba2_hybrid_names = { "mamba_n_heads", "mamba_d_head", "mamba_n_groups",
                                                 "mamba_d_state", "mamba_expand", "mamba_d_conv",
                                                 "mamba_conv_bias", "mamba_proj_bias",
                                                 128, 0, 1, 256 };
static const Mamba2Names mamba2_lm_names = { "num_heads", "head_dim", "n_groups", "state_size",
                                             "expand", "conv_kernel", "use_conv_bias", "use_bias",
                                             128, 64, 8, 128 };

/* Mamba-2's mixer's sizes by the members N names into C (its kind, groups of B and C and their
 * state, convolution, biases: the output projection's as the input's) and *HEADS, *HEAD_DIM (0:
 * "auto", where N allows it) and *EXPAND (2 by default); its heads' widths are the caller's. */
static gboolean
read_mamba2_members(const Hf *h, const Mamba2Names *n, guint64 *heads, guint64 *head_dim,
                    guint64 *expand, StwModelConfig *c, GError **error)
{
  *heads = n->heads_default;
  *head_dim = n->head_dim_default;
  *expand = 2;
  c->linear_kind = STW_LINEAR_MAMBA2;
  c->linear_k_heads = n->groups_default;
  c->linear_k_head_dim = n->state_default;
  c->linear_conv = 4;
  c->linear_conv_bias = TRUE;
  c->linear_proj_bias = FALSE;
  const cJSON *dh = last_member(h->root, n->head_dim);
  gboolean auto_head = n->head_dim_default == 0 &&
                       (dh == NULL ||
                        (cJSON_IsString(dh) && strcmp(dh->valuestring, "auto") == 0));
  if (!get_u64(h, n->heads, FALSE, STW_MODEL_MAX_WIDTH, heads, error) ||
      !get_u64(h, n->groups, FALSE, STW_MODEL_MAX_WIDTH, &c->linear_k_heads, error) ||
      !get_u64(h, n->state, FALSE, STW_MODEL_MAX_WIDTH, &c->linear_k_head_dim, error) ||
      !get_u64(h, n->expand, FALSE, 64, expand, error) ||
      !get_u64(h, n->conv, FALSE, 1024, &c->linear_conv, error) ||
      !get_bool(h, n->conv_bias, &c->linear_conv_bias, error) ||
      !get_bool(h, n->proj_bias, &c->linear_proj_bias, error) ||
      (!auto_head && !get_u64(h, n->head_dim, FALSE, STW_MODEL_MAX_WIDTH, head_dim, error)))
    return FALSE;
  c->linear_out_bias = c->linear_proj_bias;
  return TRUE;
}

/* Mamba-2's HEADS over an inner width of INNER in every block of C */
static void
mamba2_in_every_block(StwModelConfig *c, guint64 heads, guint64 inner)
{
  c->linear_v_heads = heads;
  c->linear_v_head_dim = inner / heads;
  for (guint64 l = 0; l < c->layers; l++)
    stw_model_set_block_linear(c, l, TRUE);
}

/* Mamba-2's mixer (Granite 4.0's hybrids, Bamba) into C by ROW: mamba_n_heads (128) heads over
 * an inner width
 * of mamba_expand (2) x hidden, which they must divide as transformers requires, each
 * mamba_d_head wide ("auto": inner / heads; another width is refused, its forward runs only where
 * heads x head_dim is the inner width), mamba_n_groups (1) groups of B and C of mamba_d_state
 * (256), a convolution mamba_d_conv (4) wide biased where mamba_conv_bias (true), projections
 * biased where mamba_proj_bias (false); in every block (by default) but those of attention:
 * layer_types' "attention" ("full_attention"), or with ROW's attn_indices those
 * attn_layer_indices lists (an index beyond the blocks never read). */
static gboolean
read_mamba2(const Hf *h, const HfRow *row, StwModelConfig *c, GError **error)
{
  gboolean lm = row->linear == HF_LINEAR_MAMBA2_LM;
  const Mamba2Names *n = lm ? &mamba2_lm_names : &mamba2_hybrid_names;
  guint64 heads = 0, head_dim = 0, expand = 0;
  if (!read_mamba2_members(h, n, &heads, &head_dim, &expand, c, error))
    return FALSE;
  guint64 inner = expand * c->hidden;
  if (!lm && inner % heads != 0)
    return stw_json_fail_at(h->r, n->heads, error, "%" G_GUINT64_FORMAT " heads do not "
                            "divide mamba_expand x hidden_size (%" G_GUINT64_FORMAT "): "
                            "transformers refuses it", heads, inner);
  if (head_dim != 0 && head_dim * heads != inner)
    return stw_json_fail_at(h->r, n->head_dim, error, "%" G_GUINT64_FORMAT " a head, %"
                            G_GUINT64_FORMAT " heads: %s (%" G_GUINT64_FORMAT ")%s", head_dim,
                            heads,
                            lm ? "transformers refuses heads x head width apart from expand x "
                                 "hidden_size"
                               : "the mixer's forward runs only where heads x head width is "
                                 "mamba_expand x hidden_size",
                            inner, lm ? "" : "; not modelled");
  mamba2_in_every_block(c, heads, inner);
  if (lm) { /* no attention, no MLP: a norm and the mixer a block */
    for (guint64 l = 0; l < c->layers; l++)
      stw_model_set_block_mlp(c, l, FALSE);
    c->heads = c->kv_heads = 1;
    c->ffn = c->hidden;
    return TRUE;
  }
  const cJSON *v = last_member(h->root, row->attn_indices ? "attn_layer_indices" : "layer_types");
  if (v == NULL || cJSON_IsNull(v))
    return TRUE;
  if (!row->attn_indices)
    return read_layer_types(h, v, c, linear_types, attention_types, error);
  return mark_listed_blocks(h, "attn_layer_indices", v, c, stw_model_set_block_linear, FALSE,
                            error);
}

/* The members of Mamba-1's mixer: Mamba's and Falcon Mamba's, and Jamba's */
typedef struct {
  const char *expand, *state, *conv, *conv_bias, *proj_bias, *rank;
} Mamba1Names;
static const Mamba1Names mamba1_names = { "expand", "state_size", "conv_kernel",
                                          "use_conv_bias", "use_bias", "time_step_rank" };
static const Mamba1Names jamba_names = { "mamba_expand", "mamba_d_state", "mamba_d_conv",
                                         "mamba_conv_bias", "mamba_proj_bias", "mamba_dt_rank" };

/* Mamba-1's mixer's sizes into C by the members N names: an inner width of the expansion (2) x
 * hidden, a state (16) a channel, a step of a rank ("auto": hidden / 16 rounded up), a
 * convolution (4) wide biased (true), the input's and output's projections biased (false). */
static gboolean
read_mamba1_sizes(const Hf *h, const Mamba1Names *n, StwModelConfig *c, GError **error)
{
  guint64 expand = 2, state = 16, rank = (c->hidden + 15) / 16;
  c->linear_kind = STW_LINEAR_MAMBA1;
  c->linear_conv = 4;
  c->linear_conv_bias = TRUE;
  c->linear_proj_bias = FALSE;
  const cJSON *tr = last_member(h->root, n->rank);
  gboolean auto_rank = tr == NULL || (cJSON_IsString(tr) && strcmp(tr->valuestring, "auto") == 0);
  if (!get_u64(h, n->expand, FALSE, 64, &expand, error) ||
      !get_u64(h, n->state, FALSE, STW_MODEL_MAX_WIDTH, &state, error) ||
      !get_u64(h, n->conv, FALSE, 1024, &c->linear_conv, error) ||
      !get_bool(h, n->conv_bias, &c->linear_conv_bias, error) ||
      !get_bool(h, n->proj_bias, &c->linear_proj_bias, error) ||
      (!auto_rank && !get_u64(h, n->rank, FALSE, STW_MODEL_MAX_WIDTH, &rank, error)))
    return FALSE;
  c->linear_out_bias = c->linear_proj_bias;
  c->linear_k_heads = c->linear_v_heads = 1;
  c->linear_k_head_dim = state;
  c->linear_v_head_dim = expand * c->hidden;
  c->linear_dt_rank = rank;
  return TRUE;
}

/* Mamba-1's mixer in every block of C (Mamba's and Falcon Mamba's language models), by expand,
 * state_size, time_step_rank, conv_kernel, use_conv_bias and use_bias; no attention, no MLP. */
static gboolean
read_mamba1(const Hf *h, StwModelConfig *c, GError **error)
{
  if (!read_mamba1_sizes(h, &mamba1_names, c, error))
    return FALSE;
  for (guint64 l = 0; l < c->layers; l++) {
    stw_model_set_block_linear(c, l, TRUE);
    stw_model_set_block_mlp(c, l, FALSE); /* a norm and the mixer a block */
  }
  c->heads = c->kv_heads = 1;
  c->ffn = c->hidden;
  return TRUE;
}

/* Jamba's blocks into C: attention where the block's index modulo attn_layer_period (8) is
 * attn_layer_offset (4), Mamba-1's mixer elsewhere (its mamba_* members, its step, B and C
 * RMS-normed); experts where the index modulo expert_layer_period (2) is expert_layer_offset
 * (1), a dense MLP as wide elsewhere. An offset not below its period is refused, as
 * transformers refuses it. */
static gboolean
read_jamba(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 attn_period = 8, attn_offset = 4, exp_period = 2, exp_offset = 1;
  if (!get_u64(h, "attn_layer_period", FALSE, STW_MODEL_MAX_LAYERS, &attn_period, error) ||
      !get_count(h, "attn_layer_offset", STW_MODEL_MAX_LAYERS, &attn_offset, error) ||
      !get_u64(h, "expert_layer_period", FALSE, STW_MODEL_MAX_LAYERS, &exp_period, error) ||
      !get_count(h, "expert_layer_offset", STW_MODEL_MAX_LAYERS, &exp_offset, error) ||
      !read_mamba1_sizes(h, &jamba_names, c, error))
    return FALSE;
  if (attn_offset >= attn_period || exp_offset >= exp_period)
    return stw_json_fail_at(h->r, attn_offset >= attn_period ? "attn_layer_offset"
                                                             : "expert_layer_offset",
                            error, "%" G_GUINT64_FORMAT ": an offset must be below its period "
                            "(%" G_GUINT64_FORMAT "), as transformers requires",
                            attn_offset >= attn_period ? attn_offset : exp_offset,
                            attn_offset >= attn_period ? attn_period : exp_period);
  c->linear_norms = TRUE;
  for (guint64 l = 0; l < c->layers; l++) {
    stw_model_set_block_linear(c, l, l % attn_period != attn_offset);
    stw_model_set_block_dense(c, l, c->experts > 1 && l % exp_period != exp_offset);
  }
  c->dense_ffn = stw_model_dense_blocks(c) != 0 ? c->ffn : 0;
  return TRUE;
}

/* Kimi Linear's blocks into C: Kimi Delta Attention of linear_num_heads (32) heads of
 * linear_head_dim (128) with a convolution linear_conv_kernel_dim (4) wide, which the
 * checkpoints' linear_attn_config (num_heads, head_dim, short_conv_kernel_size) overrides; in
 * the blocks layer_types names "linear_attention", else those linear_attn_config's kda_layers
 * lists and not its full_attn_layers (both given; numbered from 1, 0 the last block as Python
 * indexes it), else all but every fourth from block 4 on. */
static gboolean
read_kda(const Hf *h, StwModelConfig *c, GError **error)
{
  c->linear_kind = STW_LINEAR_KDA;
  c->linear_v_heads = 32;
  c->linear_v_head_dim = 128;
  c->linear_conv = 4;
  const cJSON *lac = last_member(h->root, "linear_attn_config");
  if (lac != NULL && !cJSON_IsNull(lac) && !cJSON_IsObject(lac))
    return stw_json_fail_at(h->r, "linear_attn_config", error, "expected an object");
  if (!get_u64(h, "linear_num_heads", FALSE, STW_MODEL_MAX_WIDTH, &c->linear_v_heads, error) ||
      !get_u64(h, "linear_head_dim", FALSE, STW_MODEL_MAX_WIDTH, &c->linear_v_head_dim, error) ||
      !get_u64(h, "linear_conv_kernel_dim", FALSE, 1024, &c->linear_conv, error))
    return FALSE;
  const cJSON *full = NULL, *kda = NULL;
  if (cJSON_IsObject(lac)) {
    const Hf in = { .r = h->r, .root = lac, .type = h->type };
    gsize saved = stw_json_push_key(h->r, "linear_attn_config");
    if (!get_u64(&in, "num_heads", FALSE, STW_MODEL_MAX_WIDTH, &c->linear_v_heads, error) ||
        !get_u64(&in, "head_dim", FALSE, STW_MODEL_MAX_WIDTH, &c->linear_v_head_dim, error) ||
        !get_u64(&in, "short_conv_kernel_size", FALSE, 1024, &c->linear_conv, error))
      return FALSE;
    stw_json_pop(h->r, saved);
    full = last_member(lac, "full_attn_layers");
    kda = last_member(lac, "kda_layers");
  }
  c->linear_k_heads = c->linear_v_heads;
  c->linear_k_head_dim = c->linear_v_head_dim;
  const cJSON *types = last_member(h->root, "layer_types");
  if (types != NULL && !cJSON_IsNull(types))
    return read_layer_types(h, types, c, linear_types, attention_types, error);
  for (guint64 l = 0; l < c->layers; l++)
    stw_model_set_block_linear(c, l, full != NULL && kda != NULL ? TRUE : !(l != 0 && l % 4 == 0));
  if (full == NULL || kda == NULL)
    return TRUE;
  const cJSON *lists[] = { full, kda };
  const char *names[] = { "linear_attn_config.full_attn_layers", "linear_attn_config.kda_layers" };
  for (int k = 0; k < 2; k++) { /* the full ones first, then the linear ones over them */
    if (!cJSON_IsArray(lists[k]))
      return stw_json_fail_at(h->r, names[k], error, "expected a list of block numbers (from 1)");
    guint64 n = 0;
    for (const cJSON *e = lists[k]->child; e != NULL; e = e->next, n++) {
      guint64 i = 0;
      if (!entry_u64(h, names[k], n, e, 0, c->layers, &i, error))
        return FALSE;
      stw_model_set_block_linear(c, i == 0 ? c->layers - 1 : i - 1, k == 1);
    }
  }
  return TRUE;
}

/* Bailing's blocks into C: Kimi Delta Attention with its gates full rank, as many heads as the
 * attention's (num_attention_heads) of head_dim (128), a convolution short_conv_kernel_size (4)
 * wide; in the blocks layer_types names "linear_attention", else in all but every
 * layer_group_size-th (6). */
static gboolean
read_bailing(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 group = 6;
  c->linear_kind = STW_LINEAR_KDA;
  c->linear_full_gates = TRUE;
  c->linear_k_heads = c->linear_v_heads = c->heads;
  c->linear_v_head_dim = 128;
  c->linear_conv = 4;
  if (!get_u64(h, "head_dim", FALSE, STW_MODEL_MAX_WIDTH, &c->linear_v_head_dim, error) ||
      !get_u64(h, "short_conv_kernel_size", FALSE, 1024, &c->linear_conv, error) ||
      !get_u64(h, "layer_group_size", FALSE, STW_MODEL_MAX_LAYERS, &group, error))
    return FALSE;
  c->linear_k_head_dim = c->linear_v_head_dim;
  const cJSON *types = last_member(h->root, "layer_types");
  if (types != NULL && !cJSON_IsNull(types))
    return read_layer_types(h, types, c, linear_types, attention_types, error);
  for (guint64 l = 0; l < c->layers; l++)
    stw_model_set_block_linear(c, l, (l + 1) % group != 0);
  return TRUE;
}

/* Gated DeltaNet's blocks and sizes into C as the class KIND reads them: layer_types, one
 * "linear_attention" or "full_attention" a block (their old names "mamba" and "attention" too,
 * as transformers remaps them; LaraMini's, HF_LINEAR_GDN_SLIDING, "sliding_attention" too),
 * else Qwen3-Next's and Qwen3.5's every full_attention_interval-th block softmax attention and
 * the others linear, LaraMini's period of five (linear, sliding, linear, full, sliding), or
 * OLMo Hybrid's (HF_LINEAR_GDN_FROM_HEADS) every fourth block softmax attention and the last at
 * least (its class refuses a model without blocks of either kind). The sizes: Qwen's 16 key
 * heads and 32 value heads of 128 (LaraMini's 8 and 16), a convolution 4 wide; OLMo Hybrid's as
 * many key and value heads as the attention's (null as absent), a key head 0.75 x hidden / its
 * heads wide (floored), a value head twice that. */
static gboolean
read_gdn(const Hf *h, HfLinear kind, StwModelConfig *c, GError **error)
{
  gboolean from_heads = kind == HF_LINEAR_GDN_FROM_HEADS;
  gboolean sliding = kind == HF_LINEAR_GDN_SLIDING;
  guint64 interval = 4;
  c->linear_k_heads = from_heads ? 0 : sliding ? 8 : 16;
  c->linear_v_heads = from_heads ? 0 : sliding ? 16 : 32;
  c->linear_k_head_dim = c->linear_v_head_dim = from_heads ? 0 : 128;
  c->linear_conv = 4;
  if (!get_u64(h, "linear_num_key_heads", from_heads, STW_MODEL_MAX_WIDTH, &c->linear_k_heads,
               error) ||
      !get_u64(h, "linear_num_value_heads", from_heads, STW_MODEL_MAX_WIDTH,
               &c->linear_v_heads, error) ||
      !get_u64(h, "linear_key_head_dim", from_heads, STW_MODEL_MAX_WIDTH, &c->linear_k_head_dim,
               error) ||
      !get_u64(h, "linear_value_head_dim", from_heads, STW_MODEL_MAX_WIDTH,
               &c->linear_v_head_dim, error) ||
      !get_u64(h, "linear_conv_kernel_dim", FALSE, 1024, &c->linear_conv, error))
    return FALSE;
  if (from_heads) {
    c->linear_k_heads = c->linear_k_heads != 0 ? c->linear_k_heads : c->heads;
    c->linear_v_heads = c->linear_v_heads != 0 ? c->linear_v_heads : c->heads;
    if (c->linear_k_head_dim == 0)
      c->linear_k_head_dim = (guint64)(0.75 * (double)c->hidden / (double)c->linear_k_heads);
    if (c->linear_v_head_dim == 0)
      c->linear_v_head_dim = 2 * c->linear_k_head_dim;
  }
  const cJSON *v = last_member(h->root, "layer_types");
  if (v != NULL && !cJSON_IsNull(v)) {
    if (!read_layer_types(h, v, c, linear_types,
                          sliding ? lfm2_attention_types : attention_types, error))
      return FALSE;
  } else if (sliding) { /* linear, sliding, linear, full, sliding */
    for (guint64 l = 0; l < c->layers; l++)
      stw_model_set_block_linear(c, l, l % 5 == 0 || l % 5 == 2);
  } else if (from_heads) {
    for (guint64 l = 0; l < c->layers; l++)
      stw_model_set_block_linear(c, l, l % 4 != 3);
    if (c->layers < 4) /* no fourth block: the last one softmax attention */
      stw_model_set_block_linear(c, c->layers - 1, FALSE);
  } else {
    if (!get_u64(h, "full_attention_interval", FALSE, STW_MODEL_MAX_LAYERS, &interval, error))
      return FALSE;
    for (guint64 l = 0; l < c->layers; l++)
      stw_model_set_block_linear(c, l, (l + 1) % interval != 0);
  }
  guint64 n = stw_model_linear_blocks(c);
  if (from_heads && (n == 0 || n == c->layers))
    return stw_json_fail_at(h->r, v != NULL && !cJSON_IsNull(v) ? "layer_types"
                                                                : "num_hidden_layers",
                            error, "%s: %s's class expects blocks of both linear and softmax "
                            "attention (transformers refuses the model)",
                            n == 0 ? "no block of linear attention" : "no block of attention",
                            h->type);
  return TRUE;
}


/* MiniMax's lightning attention into C: the attention's heads and head width, in the blocks
 * layer_types names "linear_attention", else every second one. */
static gboolean
read_lightning(const Hf *h, StwModelConfig *c, GError **error)
{
  c->linear_kind = STW_LINEAR_LIGHTNING;
  c->linear_k_heads = c->linear_v_heads = c->heads;
  c->linear_k_head_dim = c->linear_v_head_dim = stw_model_head_dim(c);
  const cJSON *v = last_member(h->root, "layer_types");
  if (v != NULL && !cJSON_IsNull(v))
    return read_layer_types(h, v, c, linear_types, attention_types, error);
  for (guint64 l = 0; l < c->layers; l++)
    stw_model_set_block_linear(c, l, l % 2 == 1);
  return TRUE;
}

/* Falcon-H1's mixer into C: Mamba-2's in every block beside its attention (linear_parallel), an
 * inner width of mamba_d_ssm (1024; null: mamba_expand (2) x hidden) over mamba_n_heads (128)
 * heads, which must divide it, each mamba_d_head wide ("auto": inner / heads; another width
 * must still make heads x width the inner one, as transformers requires), mamba_n_groups (1)
 * groups of B and C of mamba_d_state (256), a convolution mamba_d_conv (4) wide biased where
 * mamba_conv_bias (true), the input's projection biased where mamba_proj_bias (false) and the
 * output's where projectors_bias (false), the gated RMSNorm only where mamba_rms_norm (false):
 * without it SiLU(z) alone gates the scan's output. */
static gboolean
read_falcon_h1(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 heads = 0, head_dim = 0, expand = 0, inner = 1024;
  gboolean norm = FALSE;
  const cJSON *ssm = last_member(h->root, "mamba_d_ssm");
  if (!read_mamba2_members(h, &mamba2_hybrid_names, &heads, &head_dim, &expand, c, error))
    return FALSE;
  c->linear_out_bias = FALSE; /* projectors_bias's, apart from mamba_proj_bias */
  if (!get_bool(h, "projectors_bias", &c->linear_out_bias, error) ||
      !get_bool(h, "mamba_rms_norm", &norm, error) ||
      (ssm != NULL && !cJSON_IsNull(ssm) &&
       !get_u64(h, "mamba_d_ssm", FALSE, STW_MODEL_MAX_WIDTH, &inner, error)))
    return FALSE;
  if (ssm != NULL && cJSON_IsNull(ssm))
    inner = expand * c->hidden;
  if (inner % heads != 0)
    return stw_json_fail_at(h->r, "mamba_n_heads", error, "%" G_GUINT64_FORMAT " heads do not "
                            "divide the mixer's inner width (%" G_GUINT64_FORMAT "): "
                            "transformers refuses it", heads, inner);
  if (head_dim != 0 && head_dim * heads != inner)
    return stw_json_fail_at(h->r, "mamba_d_head", error, "%" G_GUINT64_FORMAT " a head, %"
                            G_GUINT64_FORMAT " heads: transformers refuses heads x head width "
                            "apart from the mixer's inner width (%" G_GUINT64_FORMAT ")",
                            head_dim, heads, inner);
  mamba2_in_every_block(c, heads, inner);
  c->linear_no_out_norm = !norm;
  c->linear_parallel = TRUE;
  return TRUE;
}

/* Nemotron-H's Mamba-2 members, and their defaults (its mixer's inner width is its heads' alone) */
static const Mamba2Names mamba2_nemotron_names = { "mamba_num_heads", "mamba_head_dim", "n_groups",
                                                   "ssm_state_size", "expand", "conv_kernel",
                                                   "use_conv_bias", "use_bias", 128, 64, 8,
                                                   128 };

/* Nemotron-H's blocks: each one of four parts, from the names of layers_block_type (layer_types,
 * its other name, winning) or the letters of hybrid_override_pattern */
typedef enum { NH_MAMBA, NH_ATTENTION, NH_MLP, NH_MOE } NhPart;

/* The parts of Nemotron-H's blocks into PARTS (STW_MODEL_MAX_LAYERS of them) and *N: a list
 * (layers_block_type, or layer_types winning: "linear_attention" or its old name "mamba",
 * "full_attention" or "attention", "mlp", "moe"), else hybrid_override_pattern's letters (M,
 * *, -, E), else the class's four; num_hidden_layers is not read (transformers ignores it). */
static gboolean
nemotron_parts(const Hf *h, NhPart *parts, guint64 *n, GError **error)
{
  static const char *const names[][2] = { { "linear_attention", "mamba" },
                                          { "full_attention", "attention" },
                                          { "mlp", NULL },
                                          { "moe", NULL } };
  const char *key = "layer_types";
  const cJSON *v = last_member(h->root, key);
  if (v == NULL || cJSON_IsNull(v))
    v = last_member(h->root, key = "layers_block_type");
  *n = 0;
  if (v != NULL && !cJSON_IsNull(v)) {
    if (!cJSON_IsArray(v))
      return stw_json_fail_at(h->r, key, error, "expected a list of \"linear_attention\", "
                              "\"full_attention\", \"mlp\" and \"moe\", one a block");
    for (const cJSON *e = v->child; e != NULL; e = e->next, (*n)++) {
      const char *s = cJSON_IsString(e) ? e->valuestring : "";
      int part = -1;
      for (int k = 0; k < 4 && part < 0; k++)
        if (strcmp(s, names[k][0]) == 0 || (names[k][1] != NULL && strcmp(s, names[k][1]) == 0))
          part = k;
      if (part < 0)
        return stw_json_fail_at(h->r, key, error, "entry %" G_GUINT64_FORMAT ": expected "
                                "\"linear_attention\", \"full_attention\", \"mlp\" or "
                                "\"moe\" (transformers refuses others)", *n);
      if (*n >= STW_MODEL_MAX_LAYERS)
        return stw_json_fail_at(h->r, key, error, "more than 4096 blocks");
      parts[*n] = (NhPart)part;
    }
  } else {
    const cJSON *p = last_member(h->root, "hybrid_override_pattern");
    const char *pattern = "M*-E"; /* the class's default: one block of each */
    if (p != NULL && !cJSON_IsString(p)) /* null too: transformers reads it as letters */
      return stw_json_fail_at(h->r, "hybrid_override_pattern", error, "expected a string of M "
                              "(Mamba-2), * (attention), - (MLP) and E (experts), one a block");
    if (cJSON_IsString(p))
      pattern = p->valuestring;
    for (const char *ch = pattern; *ch != '\0'; ch++, (*n)++) {
      const char *at = strchr("M*-E", *ch);
      if (at == NULL)
        return stw_json_fail_at(h->r, "hybrid_override_pattern", error, "'%c' at %"
                                G_GUINT64_FORMAT ": expected M (Mamba-2), * (attention), - "
                                "(MLP) or E (experts), as transformers does", *ch, *n);
      if (*n >= STW_MODEL_MAX_LAYERS)
        return stw_json_fail_at(h->r, "hybrid_override_pattern", error, "more than 4096 "
                                "blocks");
      parts[*n] = (NhPart)(at - "M*-E");
    }
    key = "hybrid_override_pattern";
  }
  if (*n == 0)
    return stw_json_fail_at(h->r, key, error, "no blocks: a model needs one at least");
  return TRUE;
}

/* Nemotron-H into C: its blocks of one part each (nemotron_parts); Mamba-2's mixer
 * mamba_num_heads (128) heads of mamba_head_dim (64), n_groups (8; mamba_n_groups winning) of
 * B and C of ssm_state_size (128), a convolution conv_kernel (4; mamba_d_conv) wide biased
 * where use_conv_bias (true; mamba_conv_bias), its projections where use_bias (false); the MLP
 * blocks intermediate_size wide; where any block has experts, n_routed_experts (8;
 * num_local_experts winning) of moe_intermediate_size (7688), num_experts_per_tok (2) a token,
 * a shared one moe_shared_expert_intermediate_size (7688; 0: intermediate_size) wide, the
 * routed ones reading and writing
 * through moe_latent_size (null: none), the MLP blocks then dense among them. */
static gboolean
read_nemotron_h(const Hf *h, StwModelConfig *c, GError **error)
{
  g_autofree NhPart *parts = g_new(NhPart, STW_MODEL_MAX_LAYERS);
  guint64 n = 0, heads = 0, head_dim = 0, expand = 0, count[4] = { 0 };
  if (!nemotron_parts(h, parts, &n, error))
    return FALSE;
  c->layers = n;
  for (guint64 l = 0; l < n; l++)
    count[parts[l]]++;
  if (count[NH_MAMBA] != 0) {
    if (!read_mamba2_members(h, &mamba2_nemotron_names, &heads, &head_dim, &expand, c, error) ||
        !get_u64(h, "mamba_n_groups", FALSE, STW_MODEL_MAX_WIDTH, &c->linear_k_heads, error) ||
        !get_u64(h, "mamba_d_conv", FALSE, 1024, &c->linear_conv, error) ||
        !get_bool(h, "mamba_conv_bias", &c->linear_conv_bias, error))
      return FALSE;
    c->linear_v_heads = heads;
    c->linear_v_head_dim = head_dim;
  }
  if (count[NH_MOE] != 0) {
    gboolean bias = FALSE;
    guint64 moe_ffn = 7688, latent = 0;
    c->experts = 8;
    c->experts_per_token = 2;
    c->shared_expert_ffn = 7688;
    if (!get_bool(h, "mlp_bias", &bias, error) ||
        !get_whole(h, "n_routed_experts", FALSE, 0, STW_MODEL_MAX_EXPERTS, &c->experts, error) ||
        !get_whole(h, "num_local_experts", FALSE, 0, STW_MODEL_MAX_EXPERTS, &c->experts,
                   error) ||
        !get_u64(h, "num_experts_per_tok", FALSE, STW_MODEL_MAX_EXPERTS, &c->experts_per_token,
                 error) ||
        !get_u64(h, "moe_intermediate_size", FALSE, 8 * (guint64)STW_MODEL_MAX_WIDTH, &moe_ffn,
                 error) ||
        !get_count(h, "moe_shared_expert_intermediate_size", 8 * (guint64)STW_MODEL_MAX_WIDTH,
                   &c->shared_expert_ffn, error) ||
        !get_u64(h, "moe_latent_size", TRUE, STW_MODEL_MAX_WIDTH, &latent, error))
      return FALSE;
    if (bias)
      return stw_json_fail_at(h->r, "mlp_bias", error, "true with experts: not modelled (the "
                              "shared expert and the latent's projections are biased, the "
                              "routed experts and the router never)");
    if (c->experts < 2)
      return stw_json_fail_at(h->r, "n_routed_experts", error, "%" G_GUINT64_FORMAT ": not "
                              "modelled (2 or more experts are)", c->experts);
    if (c->shared_expert_ffn == 0) /* transformers' `0 or intermediate_size` */
      c->shared_expert_ffn = c->ffn;
    c->shared_expert_ungated = TRUE; /* one MLP, no gate of its own */
    c->expert_latent = latent;
    if (count[NH_MLP] != 0)
      c->dense_ffn = c->ffn; /* the MLP blocks': intermediate_size */
    c->ffn = moe_ffn;
  }
  for (guint64 l = 0; l < n; l++) {
    stw_model_set_block_linear(c, l, parts[l] == NH_MAMBA);
    stw_model_set_block_mlp(c, l, parts[l] == NH_MLP || parts[l] == NH_MOE);
    stw_model_set_block_mixer(c, l, parts[l] == NH_MAMBA || parts[l] == NH_ATTENTION);
    stw_model_set_block_dense(c, l, parts[l] == NH_MLP && count[NH_MOE] != 0);
  }
  return TRUE;
}

/* The blocks of full attention among sliding ones into C as global blocks: layer_types, one
 * "sliding_attention" or "full_attention" a block, else every PERIOD-th full (and the first,
 * where FIRST: MiMo-V2-Flash's) */
static gboolean
read_global_blocks(const Hf *h, StwModelConfig *c, gboolean first, guint64 period,
                   GError **error)
{
  const cJSON *types = last_member(h->root, "layer_types");
  if (types == NULL || cJSON_IsNull(types)) {
    for (guint64 l = 0; l < c->layers; l++)
      stw_model_set_block_global(c, l, (first && l == 0) || (l + 1) % period == 0);
    return TRUE;
  }
  if (!read_layer_types(h, types, c, sliding_types, full_types, error))
    return FALSE;
  for (guint64 l = 0; l < c->layers; l++) { /* read as "linear": the sliding ones */
    stw_model_set_block_global(c, l, !stw_model_block_linear(c, l));
    stw_model_set_block_linear(c, l, FALSE);
  }
  return TRUE;
}

/* The last SHARED of C's blocks reusing an earlier block's keys and values (Gemma 3n's and 4's
 * num_kv_shared_layers), C's global blocks being the kinds (full attention, sliding) transformers
 * matches them by: more than there are, or of a kind no block before them is, refused as
 * transformers refuses them (every block shared, where ALL_OK, as Gemma 4's allows) */
static gboolean
set_kv_shared(const Hf *h, StwModelConfig *c, guint64 shared, gboolean all_ok, GError **error)
{
  if (shared > c->layers)
    return stw_json_fail_at(h->r, "num_kv_shared_layers", error, "%" G_GUINT64_FORMAT " of %"
                            G_GUINT64_FORMAT " blocks: more than there are, not modelled "
                            "(transformers' arithmetic then runs on negative indices)", shared,
                            c->layers);
  guint64 first = c->layers - shared, kinds_before = 0, kinds_after = 0;
  for (guint64 l = 0; l < c->layers; l++) {
    guint64 kind = stw_model_block_global(c, l) ? 2 : 1;
    if (l < first)
      kinds_before |= kind;
    kinds_after |= kind;
    stw_model_set_block_kv_shared(c, l, l >= first);
  }
  if (shared != 0 && !(all_ok && shared == c->layers) && kinds_before != kinds_after)
    return stw_json_fail_at(h->r, "num_kv_shared_layers", error, "%" G_GUINT64_FORMAT ": the "
                            "blocks before them are not of every kind they are (sliding and "
                            "full): transformers refuses it", shared);
  return TRUE;
}

/* Gemma 3n's language model into C (its sizes read before, intermediate_size here): its MLPs
 * intermediate_size (16384) wide, a whole number or one a block (exactly as many; blocks that
 * differ are not modelled); the last num_kv_shared_layers (15) reusing an earlier block's keys
 * and values, matched by layer_types (null: every fifth full); per-layer embeddings as Gemma
 * 4's (hidden_size_per_layer_input 256 wide, vocab_size_per_layer_input 262144 rows); AltUp
 * over altup_num_inputs (4) copies of the stream, altup_active_idx (0) below it; LAuReL of
 * laurel_rank (64); activation_sparsity_pattern (null: its default) one number a block, as its
 * class requires, which no weight depends on. */
static gboolean
read_gemma3n(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 shared = 15, per_layer = 256, per_vocab = 262144, inputs = 4, active = 0, rank = 64;
  c->ffn = 16384;
  if (cJSON_IsNull(last_member(h->root, "final_logit_softcapping")))
    return stw_json_fail_at(h->r, "final_logit_softcapping", error, "null, where a gemma3n_text "
                            "config.json needs a number (transformers refuses it)");
  const cJSON *ffn = last_member(h->root, "intermediate_size");
  if (cJSON_IsArray(ffn) && (guint64)cJSON_GetArraySize(ffn) != c->layers)
    return stw_json_fail_at(h->r, "intermediate_size", error, "%d entries for %" G_GUINT64_FORMAT
                            " blocks: one a block, or one number for all (transformers refuses "
                            "any other count)", cJSON_GetArraySize(ffn), c->layers);
  const cJSON *sparsity = last_member(h->root, "activation_sparsity_pattern");
  if (sparsity != NULL && !cJSON_IsNull(sparsity) &&
      !(cJSON_IsArray(sparsity) && (guint64)cJSON_GetArraySize(sparsity) == c->layers))
    return stw_json_fail_at(h->r, "activation_sparsity_pattern", error, "expected null or a list "
                            "of %" G_GUINT64_FORMAT " numbers, one a block (transformers "
                            "refuses anything else)", c->layers);
  for (const cJSON *e = sparsity != NULL ? sparsity->child : NULL; e != NULL; e = e->next)
    if (!cJSON_IsNumber(e))
      return stw_json_fail_at(h->r, "activation_sparsity_pattern", error, "expected a number "
                              "a block");
  if ((ffn != NULL && !get_by_layer(h, "intermediate_size", c->layers,
                                    8 * (guint64)STW_MODEL_MAX_WIDTH, &c->ffn, error)) ||
      !get_count(h, "num_kv_shared_layers", STW_MODEL_MAX_LAYERS, &shared, error) ||
      !get_count(h, "hidden_size_per_layer_input", STW_MODEL_MAX_WIDTH, &per_layer, error) ||
      !get_u64(h, "vocab_size_per_layer_input", FALSE, STW_MODEL_MAX_VOCAB, &per_vocab, error) ||
      !get_count(h, "altup_num_inputs", STW_MODEL_MAX_WIDTH, &inputs, error) ||
      !get_count(h, "altup_active_idx", STW_MODEL_MAX_WIDTH, &active, error) ||
      !get_count(h, "laurel_rank", STW_MODEL_MAX_WIDTH, &rank, error) ||
      !read_global_blocks(h, c, FALSE, 5, error) || !set_kv_shared(h, c, shared, FALSE, error))
    return FALSE;
  memset(c->global_blocks, 0, sizeof c->global_blocks); /* full blocks as wide as the others */
  if (inputs == 0 || inputs > 64)
    return stw_json_fail_at(h->r, "altup_num_inputs", error, "%" G_GUINT64_FORMAT ": not "
                            "modelled (1 to 64 copies of the stream are)", inputs);
  if (active >= inputs)
    return stw_json_fail_at(h->r, "altup_active_idx", error, "%" G_GUINT64_FORMAT " of %"
                            G_GUINT64_FORMAT " copies: no such copy, not modelled (transformers "
                            "builds the weights; its forward fails)", active, inputs);
  if (rank == 0 || rank > c->hidden)
    return stw_json_fail_at(h->r, "laurel_rank", error, "%" G_GUINT64_FORMAT ": not modelled "
                            "(1 to hidden_size is; 0 leaves LAuReL its norm alone)", rank);
  if (per_layer == 0)
    return stw_json_fail_at(h->r, "hidden_size_per_layer_input", error, "0: not modelled (each "
                            "block's per-layer branch then its norm alone)");
  c->altup_inputs = inputs;
  c->laurel_rank = rank;
  c->per_layer_input = per_layer;
  c->per_layer_vocab = per_vocab;
  return TRUE;
}

/* LongCat-Flash's blocks into C (its sizes and latent attention read before): num_layers (28)
 * layers of two blocks, num_hidden_layers (twice num_layers, and the one that wins where both
 * are given, as its class reads it) naming the blocks; in each block a dense MLP
 * ffn_hidden_size (12288; intermediate_size winning) wide, beside it in the first of a layer's
 * two the experts (expert_ffn_hidden_size 2048 wide, moe_intermediate_size winning) and
 * zero_expert_num (256) zero experts among the router's choices. One routed expert, a biased
 * router (router_bias) and queries apart from qk_nope_head_dim + qk_rope_head_dim wide
 * (qk_head_dim) are not modelled. Its class builds gate_up_proj for the zero experts too, which
 * no checkpoint holds and no token reads: not counted. */
static gboolean
read_longcat(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 zero = 256, dense = 12288, qk = 0;
  gboolean router_bias = FALSE;
  if (!get_count(h, "zero_expert_num", STW_MODEL_MAX_EXPERTS, &zero, error) ||
      !get_u64(h, "ffn_hidden_size", FALSE, 8 * (guint64)STW_MODEL_MAX_WIDTH, &dense, error) ||
      !get_u64(h, "intermediate_size", FALSE, 8 * (guint64)STW_MODEL_MAX_WIDTH, &dense, error) ||
      !get_u64(h, "moe_intermediate_size", FALSE, 8 * (guint64)STW_MODEL_MAX_WIDTH, &c->ffn,
               error) ||
      !get_u64(h, "qk_head_dim", TRUE, STW_MODEL_MAX_WIDTH, &qk, error) ||
      !get_bool(h, "router_bias", &router_bias, error))
    return FALSE;
  gboolean blocks_given = member(h->root, "num_hidden_layers") != NULL;
  guint64 layers = blocks_given ? c->layers / 2 : c->layers;
  if (layers == 0 || 2 * layers > STW_MODEL_MAX_LAYERS)
    return stw_json_fail_at(h->r, blocks_given ? "num_hidden_layers" : "num_layers", error,
                            "%" G_GUINT64_FORMAT ": %" G_GUINT64_FORMAT " layers of two blocks "
                            "each: not modelled (1 to %d are)", c->layers, layers,
                            STW_MODEL_MAX_LAYERS / 2);
  if (c->experts < 2)
    return stw_json_fail_at(h->r, "n_routed_experts", error, "%" G_GUINT64_FORMAT ": not "
                            "modelled (2 or more experts are)", c->experts);
  if (router_bias)
    return stw_json_fail_at(h->r, "router_bias", error, "true: a biased router is not modelled");
  guint64 nope = c->head_dim != 0 ? c->head_dim : c->hidden / c->heads;
  if (qk != 0 && qk != nope + c->rope_dim)
    return stw_json_fail_at(h->r, "qk_head_dim", error, "%" G_GUINT64_FORMAT ": queries apart "
                            "from qk_nope_head_dim + qk_rope_head_dim (%" G_GUINT64_FORMAT ") "
                            "wide are not modelled", qk, nope + c->rope_dim);
  c->layers = 2 * layers;
  c->zero_experts = zero;
  c->shared_expert_ffn = dense; /* the first block's MLP, beside the experts */
  c->shared_expert_ungated = TRUE;
  c->dense_ffn = dense;
  memset(c->dense_blocks, 0, sizeof c->dense_blocks);
  for (guint64 l = 1; l < c->layers; l += 2)
    stw_model_set_block_dense(c, l, TRUE);
  return TRUE;
}

/* Laguna's attention into C: gating (true) a scalar a head from the block's input (true or
 * "per-head"), else one a channel; num_attention_heads_per_layer (null: num_attention_heads in
 * every block) exactly one a block, all equal (blocks that differ are not modelled);
 * layer_types one a block where given (its class requires it); the router's weight on its
 * input (moe_apply_router_weight_on_input), which its class does not run, refused. */
static gboolean
read_laguna(const Hf *h, StwModelConfig *c, GError **error)
{
  const cJSON *gating = last_member(h->root, "gating");
  gboolean per_head = TRUE, on_input = FALSE;
  if (cJSON_IsString(gating))
    per_head = strcmp(gating->valuestring, "per-head") == 0;
  else if (gating != NULL && !get_bool(h, "gating", &per_head, error))
    return FALSE;
  if (!get_bool(h, "moe_apply_router_weight_on_input", &on_input, error))
    return FALSE;
  if (on_input)
    return stw_json_fail_at(h->r, "moe_apply_router_weight_on_input", error, "true: not run "
                            "by its class (transformers refuses it)");
  static const char *const lists[] = { "num_attention_heads_per_layer", "layer_types" };
  for (gsize i = 0; i < G_N_ELEMENTS(lists); i++) {
    const cJSON *list = last_member(h->root, lists[i]);
    if (list != NULL && !cJSON_IsNull(list) &&
        (!cJSON_IsArray(list) || (guint64)cJSON_GetArraySize(list) != c->layers))
      return stw_json_fail_at(h->r, lists[i], error, "expected null or a list of %"
                              G_GUINT64_FORMAT ", one a block (transformers refuses anything "
                              "else)", c->layers);
  }
  const cJSON *heads = last_member(h->root, "num_attention_heads_per_layer");
  if (cJSON_IsArray(heads) &&
      !get_by_layer(h, "num_attention_heads_per_layer", c->layers, STW_MODEL_MAX_WIDTH,
                    &c->heads, error))
    return FALSE;
  c->attn_head_gate = per_head;
  c->attn_gate = !per_head;
  return TRUE;
}

/* MiniMax-M3's blocks into C (its sizes read before): layer_types, "full_attention" or
 * "minimax_m3_sparse" a block (null: sparse_attention_config's sparse_attention_freq, one a
 * block, true for sparse; else every block full), the sparse ones with an indexer of
 * index_n_heads (4) heads of index_head_dim (128), sparse_attention_config's
 * sparse_num_index_heads and sparse_index_dim winning; no sparse block, no indexer. The MLPs
 * by mlp_layer_types, else moe_layer_freq (one a block, true for experts). */
static gboolean
read_minimax_m3(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 ih = 4, id = 128;
  const cJSON *sparse = last_member(h->root, "sparse_attention_config");
  if (sparse != NULL && !cJSON_IsNull(sparse) && !cJSON_IsObject(sparse))
    return stw_json_fail_at(h->r, "sparse_attention_config", error, "expected an object");
  if (!get_u64(h, "index_n_heads", FALSE, STW_MODEL_MAX_WIDTH, &ih, error) ||
      !get_u64(h, "index_head_dim", FALSE, STW_MODEL_MAX_WIDTH, &id, error) ||
      (cJSON_IsObject(sparse) &&
       (!get_nested(h, "sparse_attention_config", "sparse_num_index_heads", 1,
                    STW_MODEL_MAX_WIDTH, &ih, error) ||
        !get_nested(h, "sparse_attention_config", "sparse_index_dim", 1, STW_MODEL_MAX_WIDTH,
                    &id, error))))
    return FALSE;
  /* the blocks' attention, and their MLPs, by a list of one flag a block where the named
   * lists are absent (their legacy forms) */
  static const struct {
    const char *list, *legacy, *on, *off;
  } kinds[] = {
    { "layer_types", "sparse_attention_freq", "minimax_m3_sparse", "full_attention" },
    { "mlp_layer_types", "moe_layer_freq", "sparse", "dense" },
  };
  guint64 indexed = 0;
  for (gsize k = 0; k < G_N_ELEMENTS(kinds); k++) {
    const cJSON *v = last_member(h->root, kinds[k].list);
    const char *key = kinds[k].list;
    gboolean flags = FALSE;
    if (v == NULL || cJSON_IsNull(v)) {
      v = k == 0 ? (cJSON_IsObject(sparse) ? last_member(sparse, kinds[k].legacy) : NULL)
                 : last_member(h->root, kinds[k].legacy);
      key = k == 0 ? "sparse_attention_config" : kinds[k].legacy;
      flags = TRUE;
    }
    if (v == NULL || cJSON_IsNull(v)) {
      if (k == 1)
        break; /* the MLPs all sparse, as the class makes them */
      continue; /* every block full attention */
    }
    if (!cJSON_IsArray(v) || (guint64)cJSON_GetArraySize(v) != c->layers)
      return stw_json_fail_at(h->r, key, error, "expected a list of %" G_GUINT64_FORMAT ", one a "
                              "block (transformers requires one a block)", c->layers);
    guint64 n = 0;
    for (const cJSON *e = v->child; e != NULL; e = e->next, n++) {
      gboolean on = flags ? (cJSON_IsBool(e) ? cJSON_IsTrue(e) : cJSON_IsNumber(e) &&
                                                                     e->valuedouble != 0)
                          : cJSON_IsString(e) && strcmp(e->valuestring, kinds[k].on) == 0;
      gboolean known = flags ? cJSON_IsBool(e) || cJSON_IsNumber(e)
                             : on || (cJSON_IsString(e) && strcmp(e->valuestring, kinds[k].off) == 0);
      if (!known)
        return stw_json_fail_at(h->r, key, error, "entry %" G_GUINT64_FORMAT ": expected %s",
                                n, flags ? "a flag (true, false, 1 or 0)"
                                         : k == 0 ? "\"full_attention\" or \"minimax_m3_sparse\""
                                                  : "\"dense\" or \"sparse\"");
      if (k == 0) {
        stw_model_set_block_indexed(c, n, on);
        indexed += on;
      } else {
        stw_model_set_block_dense(c, n, !on);
      }
    }
  }
  if (indexed != 0) {
    c->index_heads = ih;
    c->index_head_dim = id;
  } else {
    memset(c->unindexed_blocks, 0, sizeof c->unindexed_blocks);
  }
  c->dense_ffn = 0;
  if (stw_model_dense_blocks(c) != 0) {
    c->dense_ffn = 12288;
    if (!get_u64(h, "dense_intermediate_size", FALSE, 8 * (guint64)STW_MODEL_MAX_WIDTH,
                 &c->dense_ffn, error))
      return FALSE;
  }
  return TRUE;
}

/* Gemma 4's blocks into C (its sizes read before): layer_types, one a block of
 * "sliding_attention" or "full_attention" (null: every sixth full), the last made full as
 * transformers makes it; the full ones global, their heads global_head_dim (512) wide, with
 * num_global_key_value_heads (null: the others') key/value heads and no values of their own
 * where attention_k_eq_v (false), which the first applies with only; the last
 * num_kv_shared_layers (0) reusing an earlier block's keys and values, as transformers allows
 * (every block, or blocks of every kind before them), their MLP twice as wide where
 * use_double_wide_mlp (false); per-layer embeddings hidden_size_per_layer_input (256; 0: none)
 * wide of vocab_size_per_layer_input (262144) rows; with enable_moe_block (false), experts
 * beside each block's MLP: num_experts of moe_intermediate_size (both required), top_k_experts
 * a token (null: one), their branch and the MLP's normed apart (experts_normed); per_layer_config (any
 * block's own sizes) is not modelled. */
static gboolean
read_gemma4(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 global_dim = 512, global_kv = 0, shared = 0, per_layer = 256, per_vocab = 262144;
  gboolean k_eq_v = FALSE, wide = FALSE, moe = FALSE;
  if (member(h->root, "per_layer_config") != NULL)
    return stw_json_fail_at(h->r, "per_layer_config", error, "blocks with sizes of their own "
                            "beyond the global ones: not modelled");
  if (!get_u64(h, "global_head_dim", FALSE, STW_MODEL_MAX_WIDTH, &global_dim, error) ||
      !get_u64(h, "num_global_key_value_heads", TRUE, STW_MODEL_MAX_WIDTH, &global_kv, error) ||
      !get_bool(h, "attention_k_eq_v", &k_eq_v, error) ||
      !get_count(h, "num_kv_shared_layers", STW_MODEL_MAX_LAYERS, &shared, error) ||
      !get_bool(h, "use_double_wide_mlp", &wide, error) ||
      !get_count(h, "hidden_size_per_layer_input", STW_MODEL_MAX_WIDTH, &per_layer, error) ||
      !get_bool(h, "enable_moe_block", &moe, error))
    return FALSE;
  if (!read_global_blocks(h, c, FALSE, 6, error))
    return FALSE;
  stw_model_set_block_global(c, c->layers - 1, TRUE); /* transformers forces the last */
  c->global_head_dim = global_dim == stw_model_head_dim(c) ? 0 : global_dim;
  if (k_eq_v && global_kv != 0 && global_kv != c->kv_heads)
    c->global_kv_heads = global_kv;
  c->global_values_are_keys = k_eq_v;
  if (!set_kv_shared(h, c, shared, TRUE, error))
    return FALSE;
  c->kv_shared_wide_mlp = wide && shared != 0;
  if (per_layer != 0) {
    if (!get_u64(h, "vocab_size_per_layer_input", FALSE, STW_MODEL_MAX_VOCAB, &per_vocab,
                 error))
      return FALSE;
    c->per_layer_input = per_layer;
    c->per_layer_vocab = per_vocab;
  }
  if (moe) {
    static const char *const required[] = { "num_experts", "moe_intermediate_size" };
    for (gsize i = 0; i < G_N_ELEMENTS(required); i++)
      if (!cJSON_IsNumber(last_member(h->root, required[i])))
        return stw_json_fail_at(h->r, required[i], error, "required (a number) with "
                                "enable_moe_block: transformers builds no experts without it");
    guint64 ffn = 0;
    if (!get_u64(h, "num_experts", FALSE, STW_MODEL_MAX_EXPERTS, &c->experts, error) ||
        !get_u64(h, "top_k_experts", TRUE, STW_MODEL_MAX_EXPERTS, &c->experts_per_token,
                 error) ||
        !get_u64(h, "moe_intermediate_size", FALSE, 8 * (guint64)STW_MODEL_MAX_WIDTH, &ffn,
                 error))
      return FALSE;
    if (c->experts < 2)
      return stw_json_fail_at(h->r, "num_experts", error, "%" G_GUINT64_FORMAT ": one expert "
                              "beside the MLP, with its router: not modelled (2 or more are)",
                              c->experts);
    if (c->kv_shared_wide_mlp)
      return stw_json_fail_at(h->r, "use_double_wide_mlp", error, "true with enable_moe_block "
                              "and shared keys and values: not modelled (its MLP beside the "
                              "experts twice as wide in some blocks)");
    c->shared_expert_ffn = c->ffn; /* the block's MLP, beside the experts */
    c->shared_expert_ungated = TRUE;
    c->experts_normed = TRUE;
    c->ffn = ffn;
  }
  return TRUE;
}

/* MiMo-V2-Flash's attention into C (its kv_heads read as num_key_value_heads): layer_types,
 * one "full_attention" or "sliding_attention" a block (null: full in the first and every
 * sixth); the sliding blocks twice as many key/value heads as the full ones (those global, with
 * kv_heads as read) and a sink logit a head (global_no_sinks); values v_head_dim (128) wide. */
static gboolean
read_mimo(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 v_dim = 128, kv = c->kv_heads;
  if (!get_u64(h, "v_head_dim", FALSE, STW_MODEL_MAX_WIDTH, &v_dim, error) ||
      !read_global_blocks(h, c, TRUE, 6, error))
    return FALSE;
  guint64 global = 0;
  for (guint64 l = 0; l < c->layers; l++)
    global += stw_model_block_global(c, l);
  c->v_head_dim = v_dim == stw_model_head_dim(c) ? 0 : v_dim;
  if (global == c->layers) { /* no sliding block: the model-wide kv heads, no sinks */
    memset(c->global_blocks, 0, sizeof c->global_blocks);
    c->attn_sinks = FALSE;
    return TRUE;
  }
  c->kv_heads = 2 * kv;
  if (global != 0) {
    c->global_kv_heads = kv;
    c->global_no_sinks = TRUE;
  }
  return TRUE;
}

/* A.X K1's blocks' MLPs into C where mlp_layer_types is absent or null (its class builds them
 * from its legacy members): sparse from first_k_dense_replace (1) on where moe_layer_freq (1)
 * divides the block's index, dense elsewhere. */
static gboolean
read_axk1(const Hf *h, StwModelConfig *c, GError **error)
{
  const cJSON *types = last_member(h->root, "mlp_layer_types");
  guint64 first = 1, freq = 1;
  if (types != NULL && !cJSON_IsNull(types))
    return TRUE;
  if (!get_count(h, "first_k_dense_replace", STW_MODEL_MAX_LAYERS, &first, error) ||
      !get_u64(h, "moe_layer_freq", FALSE, STW_MODEL_MAX_LAYERS, &freq, error))
    return FALSE;
  for (guint64 l = 0; l < c->layers; l++)
    stw_model_set_block_dense(c, l, !(l >= first && l % freq == 0));
  if (stw_model_dense_blocks(c) == 0)
    c->dense_ffn = 0; /* (intermediate_size then unused) */
  return TRUE;
}

/* The LM head's rows into C: output_vocab_size (null: vocab_size's), 1 to vocab_size as
 * transformers requires, for a head of its own (a tied head is the embeddings, every row, as
 * transformers ties it whatever output_vocab_size says). */
static gboolean
read_head_vocab(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 rows = 0;
  if (!get_u64(h, "output_vocab_size", TRUE, STW_MODEL_MAX_VOCAB, &rows, error))
    return FALSE;
  if (rows > c->vocab)
    return stw_json_fail_at(h->r, "output_vocab_size", error, "%" G_GUINT64_FORMAT " above "
                            "vocab_size (%" G_GUINT64_FORMAT "): transformers refuses it", rows,
                            c->vocab);
  c->head_vocab = rows < c->vocab && !c->tied ? rows : 0;
  return TRUE;
}

/* C's linear blocks and their sizes as ROW's class places them (HfLinear), none of the sizes
 * where no block is linear. */
static gboolean
read_linear_attn(const Hf *h, const HfRow *row, StwModelConfig *c, GError **error)
{
  gboolean ok = TRUE;
  switch (row->linear) {
  case HF_LINEAR_GDN:
  case HF_LINEAR_GDN_FROM_HEADS:
  case HF_LINEAR_GDN_SLIDING:
    ok = read_gdn(h, row->linear, c, error);
    break;
  case HF_LINEAR_MAMBA2:
  case HF_LINEAR_MAMBA2_LM:
    ok = read_mamba2(h, row, c, error);
    break;
  case HF_LINEAR_MAMBA1_LM:
    ok = read_mamba1(h, c, error);
    break;
  case HF_LINEAR_JAMBA:
    ok = read_jamba(h, c, error);
    break;
  case HF_LINEAR_SHORT_CONV:
  case HF_LINEAR_SHORT_CONV_LFM3:
    ok = read_lfm2(h, row, c, error);
    break;
  case HF_LINEAR_LIGHTNING:
    ok = read_lightning(h, c, error);
    break;
  case HF_LINEAR_KDA:
    ok = read_kda(h, c, error);
    break;
  case HF_LINEAR_BAILING:
    ok = read_bailing(h, c, error);
    break;
  case HF_LINEAR_FALCON_H1:
    ok = read_falcon_h1(h, c, error);
    break;
  case HF_LINEAR_NEMOTRON_H:
    ok = read_nemotron_h(h, c, error);
    break;
  case HF_LINEAR_NONE:
    break;
  }
  if (ok && stw_model_linear_blocks(c) == 0)
    no_linear_sizes(c);
  return ok;
}

/* What the file says of the parts that have no row in StwModelConfig: refused where it would
 * change the model's parameters, and otherwise left as the graph models them. */
static gboolean
check_unmodelled(const Hf *h, HfType type, GError **error)
{
  StwJsonReader *r = h->r;
  const cJSON *root = h->root;
  const cJSON *moe = member(root, "num_experts");
  if (!reads_experts(row_of(type)) && moe != NULL &&
      !(cJSON_IsNumber(moe) && moe->valuedouble <= 1)) {
    /* the types whose rows read experts, from the table */
    g_autoptr(GString) with = g_string_new(NULL);
    guint n = 0, seen = 0;
    for (gsize t = 0; t < G_N_ELEMENTS(hf_rows); t++)
      n += reads_experts(&hf_rows[t]);
    for (gsize t = 0; t < G_N_ELEMENTS(hf_rows); t++)
      if (reads_experts(&hf_rows[t]))
        g_string_append_printf(with, "%s%s", seen++ == 0 ? "" : seen == n ? " and " : ", ",
                               stw_hf_model_types[t]);
    return stw_json_fail_at(r, "num_experts", error, "experts are modelled for model_type %s only",
                            with->str);
  }
  if (type == HF_BERT_GENERATION) { /* a decoder's cross-attention: more weights a block */
    gboolean cross = FALSE;
    if (!get_bool(h, "add_cross_attention", &cross, error))
      return FALSE;
    if (cross)
      return stw_json_fail_at(r, "add_cross_attention", error, "true: cross-attention to an "
                              "encoder is not modelled");
  }
  if (type == HF_MELLUM) { /* the class refuses more than one prediction layer */
    guint64 mtp = 0;
    const char *name = member(root, "num_mtp_layers") != NULL ? "num_mtp_layers"
                                                               : "num_nextn_predict_layers";
    if (!get_whole(h, name, TRUE, 0, STW_MODEL_MAX_LAYERS, &mtp, error))
      return FALSE;
    if (mtp > 1)
      return stw_json_fail_at(r, name, error, "%" G_GUINT64_FORMAT ": Mellum's class builds at "
                              "most one multi-token-prediction layer (transformers refuses "
                              "more)", mtp);
  }
  if (row_of(type)->mlp_bias_not_modelled) {
    gboolean mlp_bias = FALSE;
    if (!get_bool(h, "mlp_bias", &mlp_bias, error))
      return FALSE;
    if (mlp_bias)
      return stw_json_fail_at(r, "mlp_bias", error, "true: biases on the dense MLPs and the "
                              "shared experts but not the routed ones are not modelled");
  }
  return TRUE;
}

/* Dropout probability KEY (absent or null: DFLT; a NULL key: DFLT) as whether it drops anything
 * out into *ON. */
static gboolean
get_dropout(const Hf *h, const char *key, double dflt, gboolean *on, GError **error)
{
  double p = dflt;
  const cJSON *v = key != NULL ? member(h->root, key) : NULL;
  if (v != NULL) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1))
      return stw_json_fail_at(h->r, key, error, "expected a dropout probability from 0 to 1");
    p = v->valuedouble;
  }
  *on = p > 0;
  return TRUE;
}

/* The dropout ROW's class trains with, as the file says where the class reads it: on the
 * attention probabilities and on the residual branches; written as the architecture's default
 * where it is that. */
static gboolean
read_dropout(const Hf *h, const HfRow *row, StwModelConfig *c, GError **error)
{
  const char *attn = row->attn_dropout_member;
  if (attn == NULL && c->arch == STW_ARCH_LLAMA)
    attn = "attention_dropout"; /* every llama-style class's, default 0 */
  if (attn == NULL && row->resid_dropout_member == NULL)
    return TRUE; /* the architecture's */
  gboolean a = FALSE, r = FALSE;
  if (!get_dropout(h, attn, row->attn_dropout_default, &a, error) ||
      !get_dropout(h, row->resid_dropout_member, row->resid_dropout_default, &r, error))
    return FALSE;
  const StwModelConfig arch_default = { .arch = c->arch };
  c->attn_dropout = a == stw_model_attn_dropout(&arch_default) ? STW_BIAS_DEFAULT
                                                              : (a ? STW_BIAS_YES : STW_BIAS_NO);
  c->resid_dropout = r == stw_model_resid_dropout(&arch_default) ? STW_BIAS_DEFAULT
                                                                : (r ? STW_BIAS_YES : STW_BIAS_NO);
  return TRUE;
}

/* The biases ROW's transformers class gives a model, and what the file says of them where the
 * class reads it (Mistral's, Mixtral's and Gemma's MLPs have none whatever the file says;
 * GPT-NeoX's always has one). */
static gboolean
read_biases(const Hf *h, const HfRow *row, StwModelConfig *c, GError **error)
{
  gboolean attn = row->attention_bias, mlp = row->mlp_bias, qkv_only = row->qkv_bias_only;
  if (row->bias_switch != NULL) { /* one switch for all of them */
    if (!get_bool(h, row->bias_switch, &attn, error))
      return FALSE;
    mlp = attn;
  }
  if (row->qkv_bias_member != NULL && !get_bool(h, row->qkv_bias_member, &qkv_only, error))
    return FALSE;
  if ((row->attention_bias_alias != NULL &&
       !get_bool(h, row->attention_bias_alias, &attn, error)) ||
      (row->mlp_bias_alias != NULL && !get_bool(h, row->mlp_bias_alias, &mlp, error)) ||
      (row->reads_attention_bias && !get_bool(h, "attention_bias", &attn, error)) ||
      (row->reads_mlp_bias && !get_bool(h, "mlp_bias", &mlp, error)))
    return FALSE;
  if (row->biases_equal && attn != mlp) { /* named by the first of them the file gives */
    const char *names[] = { "attention_bias", row->attention_bias_alias, row->mlp_bias_alias,
                            "mlp_bias" };
    guint k = 0;
    while (k < G_N_ELEMENTS(names) - 1 && (names[k] == NULL || member(h->root, names[k]) == NULL))
      k++;
    return stw_json_fail_at(h->r, names[k], error, "the attention's bias %s and the MLP's %s: "
                            "transformers refuses them apart (this class's projections share "
                            "one bias setting)", attn ? "true" : "false", mlp ? "true" : "false");
  }
  c->bias[STW_SITE_QKV] = attn || qkv_only ? STW_BIAS_YES : STW_BIAS_NO;
  gboolean out = row->out_bias_always || (attn && !row->out_bias_never);
  if (row->out_bias_member != NULL) {
    out = FALSE;
    if (!get_bool(h, row->out_bias_member, &out, error))
      return FALSE;
  }
  c->bias[STW_SITE_OUT] = out ? STW_BIAS_YES : STW_BIAS_NO;
  c->bias[STW_SITE_MLP] = mlp ? STW_BIAS_YES : STW_BIAS_NO;
  /* a bias setting equal to the architecture's default is written as the default */
  for (int site = 0; site < STW_N_SITES; site++) {
    StwModelConfig arch_default = { .arch = c->arch };
    if (stw_model_has_bias(c, site) == stw_model_has_bias(&arch_default, site))
      c->bias[site] = STW_BIAS_DEFAULT;
  }
  return TRUE;
}

/* A size of the model: member NAME of the row (GPT-2's own name, and the common name COMMON
 * that transformers maps onto it and that wins when both are given), else DEFAULT. */
static gboolean
get_size(const Hf *h, const char *name, const char *common, gboolean null_ok, guint64 max,
         guint64 dflt, guint64 *out, GError **error)
{
  *out = dflt;
  if (name != NULL && !get_u64(h, name, null_ok, max, out, error))
    return FALSE;
  return common == NULL || get_u64(h, common, FALSE, max, out, error);
}

/* Multimodal classes whose causal language model (AutoModelForCausalLM's) is their text_config's
 * alone, as transformers builds it from the whole file: that file read as its language model */
static const struct {
  const char *outer, *inner;
} language_models[] = {
  { "qwen3_5", "qwen3_5_text" },
  { "qwen3_5_moe", "qwen3_5_moe_text" },
  { "llama4", "llama4_text" },
};

static gboolean read_hf(StwJsonReader *r, const cJSON *root, const char *file,
                        StwModelConfig *out, GError **error);

static gboolean is_wrapper_type(const char *type);

/* ROOT, a multimodal file of type INNER's language model (where ANY_TYPE, of any language model's
 * type, INNER where it gives none), read as its text_config (absent or null: the members
 * DEFAULTS gives, a JSON object, or NULL: the language model's defaults; where FLAT, ROOT's own
 * members), errors named under $.text_config; the model named as the file is. */
static gboolean
read_language_model(StwJsonReader *r, const cJSON *root, const char *file, const char *inner,
                    gboolean any_type, const char *defaults, gboolean flat, StwModelConfig *out,
                    GError **error)
{
  if (flat && member(root, "text_config") == NULL) {
    /* the file's members are its language model's (transformers reads them so where
     * text_config is absent or null), its type INNER */
    g_autoptr(cJSON) lm = cJSON_Duplicate(root, TRUE);
    static const char *const outer_only[] = { "model_type", "text_config", "vision_config" };
    for (gsize k = 0; k < G_N_ELEMENTS(outer_only); k++)
      while (cJSON_GetObjectItemCaseSensitive(lm, outer_only[k]) != NULL)
        cJSON_DeleteItemFromObjectCaseSensitive(lm, outer_only[k]);
    cJSON_AddStringToObject(lm, "model_type", inner);
    return read_hf(r, lm, file, out, error);
  }
  const cJSON *text = member(root, "text_config"); /* (null: as absent) */
  if (text != NULL && !cJSON_IsObject(text))
    return stw_json_fail_at(r, "text_config", error, "expected an object: the language "
                            "model's config");
  const cJSON *type = text != NULL ? last_member(text, "model_type") : NULL;
  gsize saved = stw_json_push_key(r, "text_config");
  gboolean named = cJSON_IsString(type);
  if (type != NULL && (any_type ? !named || is_wrapper_type(type->valuestring)
                                : !(named && strcmp(type->valuestring, inner) == 0))) {
    if (any_type)
      stw_json_fail_at(r, "model_type", error, "expected a language model's type (\"%s\" where "
                       "absent), not a multimodal model's", inner);
    else
      stw_json_fail_at(r, "model_type", error, "expected \"%s\", this file's language model",
                       inner);
    stw_json_pop(r, saved);
    return FALSE;
  }
  cJSON *lm = text != NULL   ? cJSON_Duplicate(text, TRUE)
              : defaults != NULL ? cJSON_Parse(defaults)
                                 : cJSON_CreateObject();
  g_assert(lm != NULL);
  if (type == NULL)
    cJSON_AddStringToObject(lm, "model_type", inner);
  /* named as the file is (its _name_or_path, else its folder), not as the language model it
   * was made from (LLaVA's text_config names Vicuna) */
  const cJSON *name = member(root, "_name_or_path");
  while (cJSON_GetObjectItemCaseSensitive(lm, "_name_or_path") != NULL)
    cJSON_DeleteItemFromObjectCaseSensitive(lm, "_name_or_path");
  if (cJSON_IsString(name))
    cJSON_AddStringToObject(lm, "_name_or_path", name->valuestring);
  gboolean ok = read_hf(r, lm, file, out, error);
  stw_json_pop(r, saved);
  cJSON_Delete(lm);
  return ok;
}

/* Whether C, read from a TYPE config.json, is a model stowage can build; where not, the error
 * says why as that type's. */
static gboolean
valid_as(StwJsonReader *r, const char *type, const StwModelConfig *c, GError **error)
{
  GError *local = NULL;
  if (stw_model_config_validate(c, NULL, &local))
    return TRUE;
  const char *msg = strstr(local->message, "invalid model: ");
  stw_json_fail(r, error, "as a %s model: %s", type,
                msg != NULL ? msg + strlen("invalid model: ") : local->message);
  g_error_free(local);
  return FALSE;
}

/* Whether OBJ's model_type, where it gives one, is TYPE (or ALSO, where not NULL: the name the
 * class renames to TYPE, as Qwen-VL's checkpoints give their file's type); else the error says
 * so, and that another KIND ("vision", "audio") tower is not modelled. */
static gboolean
tower_type_or(StwJsonReader *r, const cJSON *obj, const char *type, const char *also,
              const char *whose, const char *kind, GError **error)
{
  const cJSON *given = last_member(obj, "model_type");
  if (given == NULL || (cJSON_IsString(given) && (strcmp(given->valuestring, type) == 0 ||
                                                  (also != NULL &&
                                                   strcmp(given->valuestring, also) == 0))))
    return TRUE;
  return stw_json_fail_at(r, "model_type", error, "expected \"%s\" (%s): another %s tower is "
                          "not modelled", type, whose, kind);
}

static gboolean
tower_type(StwJsonReader *r, const cJSON *obj, const char *type, const char *whose,
           const char *kind, GError **error)
{
  return tower_type_or(r, obj, type, NULL, whose, kind, error);
}

static gboolean get_square(const Hf *h, const char *key, guint64 max, guint64 *out,
                           GError **error);

/* Whether C's vision tower, read from H, has a whole patch in its image (a patch larger than
 * the image: none, not modelled). */
static gboolean
whole_patch(const Hf *h, const StwModelConfig *c, GError **error)
{
  if (c->vision_patch <= c->vision_image)
    return TRUE;
  return stw_json_fail_at(h->r, "patch_size", error, "%" G_GUINT64_FORMAT " is larger than "
                          "image_size %" G_GUINT64_FORMAT ": no whole patch in the image; not "
                          "modelled", c->vision_patch, c->vision_image);
}

/* A ViT's sizes where its config gives none: its class's */
typedef struct {
  guint64 hidden, ffn, layers, heads, image, patch;
} Vit;

/* A ViT of KIND (SigLIP's, CLIP's, Idefics3's, InternViT: WHOSE) from its config H, over its
 * class's sizes D: hidden_size, intermediate_size, num_hidden_layers, num_attention_heads
 * (dividing hidden_size, as its attention requires), num_channels (3), image_size and patch_size
 * (a number or a list of two equal ones; a patch larger than the image refused, not
 * modelled). */
static gboolean
read_vit(const Hf *h, const char *whose, StwVisionKind kind, Vit d, StwModelConfig *c,
         GError **error)
{
  guint64 heads = d.heads;
  c->vision_kind = kind;
  c->vision_hidden = d.hidden;
  c->vision_ffn = d.ffn;
  c->vision_layers = d.layers;
  c->vision_channels = 3;
  c->vision_image = d.image;
  c->vision_patch = d.patch;
  if (!get_u64(h, "hidden_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_hidden, error) ||
      !get_u64(h, "intermediate_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_ffn, error) ||
      !get_u64(h, "num_hidden_layers", FALSE, STW_MODEL_MAX_LAYERS, &c->vision_layers,
               error) ||
      !get_u64(h, "num_attention_heads", FALSE, STW_MODEL_MAX_WIDTH, &heads, error) ||
      !get_u64(h, "num_channels", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_channels, error) ||
      !get_square(h, "image_size", STW_MODEL_MAX_SEQ, &c->vision_image, error) ||
      !get_square(h, "patch_size", STW_MODEL_MAX_WIDTH, &c->vision_patch, error))
    return FALSE;
  if (c->vision_hidden % heads != 0)
    return stw_json_fail_at(h->r, "num_attention_heads", error, "%" G_GUINT64_FORMAT " heads "
                            "do not divide hidden_size %" G_GUINT64_FORMAT " (%s attention "
                            "refuses it)", heads, c->vision_hidden, whose);
  if (!whole_patch(h, c, error))
    return FALSE;
  return TRUE;
}

/* SigLIP's vision config (VISION; NULL: its defaults) into C's vision tower, errors named under
 * $.vision_config: hidden_size (768), intermediate_size (3072), num_hidden_layers (12),
 * num_attention_heads (12, dividing hidden_size as SigLIP's attention requires),
 * num_channels (3), image_size (224), patch_size (16), vision_use_head (true). */
static gboolean
read_siglip(StwJsonReader *r, const cJSON *vision, const char *outer G_GNUC_UNUSED,
            StwModelConfig *c, GError **error)
{
  g_autoptr(cJSON) none = cJSON_CreateObject();
  const Hf hv = { .r = r, .root = vision != NULL ? vision : none,
                  .type = "siglip_vision_model" }, *h = &hv;
  c->vision_pooling_head = TRUE;
  return tower_type(r, h->root, "siglip_vision_model", "Gemma 3's checkpoints' SigLIP", "vision",
                    error) &&
         read_vit(h, "SigLIP's", STW_VISION_SIGLIP, (Vit){ 768, 3072, 12, 12, 224, 16 }, c,
                  error) &&
         get_bool(h, "vision_use_head", &c->vision_pooling_head, error);
}

/* Gemma 4's vision config (VISION; NULL: its defaults) into C's vision tower: hidden_size (768),
 * intermediate_size (3072), num_hidden_layers (16), num_attention_heads (12),
 * num_key_value_heads (12), head_dim (64), patch_size (16), position_embedding_size (10240). */
static gboolean
read_gemma4_vision(StwJsonReader *r, const cJSON *vision, const char *outer G_GNUC_UNUSED,
                   StwModelConfig *c, GError **error)
{
  g_autoptr(cJSON) none = cJSON_CreateObject();
  const Hf hv = { .r = r, .root = vision != NULL ? vision : none, .type = "gemma4_vision" },
           *h = &hv;
  c->vision_kind = STW_VISION_GEMMA4;
  c->vision_hidden = 768;
  c->vision_ffn = 3072;
  c->vision_layers = 16;
  c->vision_heads = c->vision_kv_heads = 12;
  c->vision_head_dim = 64;
  c->vision_patch = 16;
  c->vision_positions = 10240;
  return tower_type(r, h->root, "gemma4_vision", "Gemma 4's", "vision", error) &&
         get_u64(h, "hidden_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_hidden, error) &&
         get_u64(h, "intermediate_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_ffn, error) &&
         get_u64(h, "num_hidden_layers", FALSE, STW_MODEL_MAX_LAYERS, &c->vision_layers,
                 error) &&
         get_u64(h, "num_attention_heads", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_heads,
                 error) &&
         get_u64(h, "num_key_value_heads", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_kv_heads,
                 error) &&
         get_u64(h, "head_dim", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_head_dim, error) &&
         get_u64(h, "patch_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_patch, error) &&
         get_u64(h, "position_embedding_size", FALSE, STW_MODEL_MAX_SEQ, &c->vision_positions,
                 error);
}

/* Gemma 4's audio config (AUDIO; NULL: its defaults) into C's audio tower: hidden_size (1024),
 * num_hidden_layers (12), num_attention_heads (8), subsampling_conv_channels ([128, 32]),
 * conv_kernel_size (5), output_proj_dims (1536). */
static gboolean
read_gemma4_audio(StwJsonReader *r, const cJSON *audio, const char *outer G_GNUC_UNUSED,
                  StwModelConfig *c, GError **error)
{
  g_autoptr(cJSON) none = cJSON_CreateObject();
  const Hf ha = { .r = r, .root = audio != NULL ? audio : none, .type = "gemma4_audio" },
           *h = &ha;
  c->audio_hidden = 1024;
  c->audio_layers = 12;
  c->audio_heads = 8;
  c->audio_conv = 128;
  c->audio_conv2 = 32;
  c->audio_kernel = 5;
  c->audio_output = 1536;
  if (!tower_type(r, h->root, "gemma4_audio", "Gemma 4's", "audio", error) ||
      !get_u64(h, "hidden_size", FALSE, STW_MODEL_MAX_WIDTH, &c->audio_hidden, error) ||
      !get_u64(h, "num_hidden_layers", FALSE, STW_MODEL_MAX_LAYERS, &c->audio_layers, error) ||
      !get_u64(h, "num_attention_heads", FALSE, STW_MODEL_MAX_WIDTH, &c->audio_heads, error) ||
      !get_u64(h, "conv_kernel_size", FALSE, STW_MODEL_MAX_WIDTH, &c->audio_kernel, error) ||
      !get_u64(h, "output_proj_dims", FALSE, STW_MODEL_MAX_WIDTH, &c->audio_output, error))
    return FALSE;
  const cJSON *channels = last_member(h->root, "subsampling_conv_channels");
  if (channels != NULL) {
    if (!cJSON_IsArray(channels) || cJSON_GetArraySize(channels) != 2)
      return stw_json_fail_at(r, "subsampling_conv_channels", error, "expected a list of two "
                              "whole numbers: the two convolutions' channels");
    if (!entry_u64(h, "subsampling_conv_channels", 0, channels->child, 1, STW_MODEL_MAX_WIDTH,
                   &c->audio_conv, error) ||
        !entry_u64(h, "subsampling_conv_channels", 1, channels->child->next, 1,
                   STW_MODEL_MAX_WIDTH, &c->audio_conv2, error))
      return FALSE;
  }
  if (c->audio_heads > c->audio_hidden)
    return stw_json_fail_at(r, "num_attention_heads", error, "%" G_GUINT64_FORMAT " heads for "
                            "hidden_size %" G_GUINT64_FORMAT ": heads of no width; not modelled",
                            c->audio_heads, c->audio_hidden);
  if (c->audio_conv < 4)
    return stw_json_fail_at(r, "subsampling_conv_channels", error, "%" G_GUINT64_FORMAT
                            " channels first: the projection after the convolutions reads a "
                            "quarter of them, none; not modelled", c->audio_conv);
  return TRUE;
}

static gboolean read_feature_layers(const Hf *h, StwModelConfig *c, GError **error);

/* Mistral 3's projector, from the file's top level: spatial_merge_size (2), vision_feature_layer
 * (-1: one layer's features; a list, as many), multimodal_projector_bias (false). */
static gboolean
read_mistral3_projector(const Hf *h, StwModelConfig *c, GError **error)
{
  c->vision_merge = 2;
  c->vision_projector_bias = FALSE;
  return get_u64(h, "spatial_merge_size", FALSE, 1024, &c->vision_merge, error) &&
         get_bool(h, "multimodal_projector_bias", &c->vision_projector_bias, error) &&
         read_feature_layers(h, c, error);
}

/* The layers whose features the projector reads (vision_feature_layer: an index, one; a list,
 * as many). */
static gboolean
read_feature_layers(const Hf *h, StwModelConfig *c, GError **error)
{
  c->vision_feature_layers = 1;
  const cJSON *layer = member(h->root, "vision_feature_layer");
  if (cJSON_IsArray(layer) && cJSON_GetArraySize(layer) == 0)
    return stw_json_fail_at(h->r, "vision_feature_layer", error, "an empty list: a projector "
                            "of no features; not modelled");
  if (cJSON_IsArray(layer))
    c->vision_feature_layers = (guint64)cJSON_GetArraySize(layer);
  else if (layer != NULL && !cJSON_IsNumber(layer))
    return stw_json_fail_at(h->r, "vision_feature_layer", error, "expected a layer's index or "
                            "a list of them");
  if (c->vision_feature_layers > STW_MODEL_MAX_LAYERS)
    return stw_json_fail_at(h->r, "vision_feature_layer", error, "%" G_GUINT64_FORMAT
                            " layers: at most 4096", c->vision_feature_layers);
  return TRUE;
}

/* Pixtral's vision config (VISION; NULL: Mistral 3's own, patches of 14) into C's vision tower:
 * hidden_size (1024), intermediate_size (4096), num_hidden_layers (24), num_channels (3),
 * patch_size (16) (its heads, image size and head width change no weight). */
static gboolean
read_pixtral(StwJsonReader *r, const cJSON *vision, const char *outer G_GNUC_UNUSED,
             StwModelConfig *c, GError **error)
{
  g_autoptr(cJSON) none = cJSON_CreateObject();
  const Hf hv = { .r = r, .root = vision != NULL ? vision : none, .type = "pixtral" }, *h = &hv;
  c->vision_kind = STW_VISION_PIXTRAL;
  c->vision_hidden = 1024;
  c->vision_ffn = 4096;
  c->vision_layers = 24;
  c->vision_channels = 3;
  c->vision_patch = vision != NULL ? 16 : 14;
  return tower_type(r, h->root, "pixtral", "Mistral 3's checkpoints' Pixtral", "vision",
                    error) &&
         get_u64(h, "hidden_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_hidden, error) &&
         get_u64(h, "intermediate_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_ffn, error) &&
         get_u64(h, "num_hidden_layers", FALSE, STW_MODEL_MAX_LAYERS, &c->vision_layers,
                 error) &&
         get_u64(h, "num_channels", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_channels, error) &&
         get_u64(h, "patch_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_patch, error);
}

/* CLIP's vision config into C's vision tower: hidden_size (768), intermediate_size (3072),
 * num_hidden_layers (12), num_attention_heads (12, dividing hidden_size as CLIP's attention
 * requires), num_channels (3), image_size (224), patch_size (32). */
static gboolean
read_clip(StwJsonReader *r, const cJSON *vision, StwModelConfig *c, GError **error)
{
  const Hf hv = { .r = r, .root = vision, .type = "clip_vision_model" };
  return read_vit(&hv, "CLIP's", STW_VISION_CLIP, (Vit){ 768, 3072, 12, 12, 224, 32 }, c,
                  error);
}

/* The LLaVA family's classes: the vision tower's type where its config names none, and the
 * tower the class makes where the file gives no config (LLaVA's and LLaVA-NeXT's CLIP
 * ViT-L/14 at 336 pixels, LLaVA-OneVision's SigLIP at 384 and PaliGemma's at 224, neither with
 * its pooling head). */
#define CLIP_VIT_L_336                                                                          \
  "{\"hidden_size\": 1024, \"intermediate_size\": 4096, \"num_hidden_layers\": 24, "            \
  "\"num_attention_heads\": 16, \"image_size\": 336, \"patch_size\": 14}"
static const struct {
  const char *outer, *type, *tower;
} llava_classes[] = {
  { "llava", "clip_vision_model", CLIP_VIT_L_336 },
  { "llava_next", "clip_vision_model", CLIP_VIT_L_336 },
  { "llava_onevision", "siglip_vision_model",
    "{\"hidden_size\": 1152, \"intermediate_size\": 4304, \"num_hidden_layers\": 26, "
    "\"num_attention_heads\": 16, \"image_size\": 384, \"patch_size\": 14, "
    "\"vision_use_head\": false}" },
  { "paligemma", "siglip_vision_model",
    "{\"hidden_size\": 1152, \"intermediate_size\": 4096, \"num_hidden_layers\": 27, "
    "\"num_attention_heads\": 16, \"image_size\": 224, \"patch_size\": 14, "
    "\"vision_use_head\": false}" },
  { "aya_vision", "siglip_vision_model",
    "{\"hidden_size\": 1152, \"intermediate_size\": 4304, \"num_hidden_layers\": 26, "
    "\"num_attention_heads\": 14, \"image_size\": 384, \"patch_size\": 14, "
    "\"vision_use_head\": false}" },
};

/* A LLaVA-family file's vision tower (OUTER's: llava_classes): its vision_config read by its
 * model_type (CLIP's, SigLIP's or Pixtral's; none: the class's type), or, null or absent, the
 * tower the class makes. */
static gboolean
read_llava_vision(StwJsonReader *r, const cJSON *vision, const char *outer, StwModelConfig *c,
                  GError **error)
{
  gsize k = 0;
  while (strcmp(llava_classes[k].outer, outer) != 0)
    k++;
  g_autoptr(cJSON) own = vision == NULL ? cJSON_Parse(llava_classes[k].tower) : NULL;
  const cJSON *config = vision != NULL ? vision : own;
  const cJSON *type = last_member(config, "model_type");
  const char *name = cJSON_IsString(type) ? type->valuestring : llava_classes[k].type;
  if (type == NULL || cJSON_IsString(type)) {
    if (strcmp(name, "clip_vision_model") == 0)
      return read_clip(r, config, c, error);
    if (strcmp(name, "siglip_vision_model") == 0)
      return read_siglip(r, config, outer, c, error);
    if (strcmp(name, "pixtral") == 0)
      return read_pixtral(r, config, outer, c, error);
  }
  return stw_json_fail_at(r, "model_type", error, "expected \"clip_vision_model\", "
                          "\"siglip_vision_model\" or \"pixtral\" (the vision towers this "
                          "class is read with): another vision tower is not modelled");
}

/* LLaVA's projector, from the file's top level: vision_feature_layer (one layer's features; a
 * list, as many), multimodal_projector_bias (true); LLaVA-NeXT's and LLaVA-OneVision's
 * image_newline beside it. */
static gboolean
read_llava_projector(const Hf *h, StwModelConfig *c, GError **error)
{
  c->vision_projector = STW_PROJECTOR_LLAVA;
  c->vision_projector_bias = TRUE;
  c->vision_newline = strcmp(h->type, "llava_next") == 0 ||
                      strcmp(h->type, "llava_onevision") == 0;
  return get_bool(h, "multimodal_projector_bias", &c->vision_projector_bias, error) &&
         read_feature_layers(h, c, error);
}

/* Gemma 3's projector's pooling, from the file's top level: mm_tokens_per_image (256) tokens an
 * image, a square's, each the average of vision_merge x vision_merge patches (its AvgPool2d's
 * kernel: the tower's patches a side over the tokens'); none where the tokens outnumber the
 * patches (a file transformers builds but cannot run images through: its weights are read). */
static gboolean
read_gemma3_projector(const Hf *h, StwModelConfig *c, GError **error)
{
  guint64 tokens = 256;
  if (!get_u64(h, "mm_tokens_per_image", FALSE, STW_MODEL_MAX_SEQ, &tokens, error))
    return FALSE;
  guint64 per_side = (guint64)sqrt((double)tokens), side = c->vision_image / c->vision_patch;
  while (per_side * per_side > tokens)
    per_side--;
  while ((per_side + 1) * (per_side + 1) <= tokens)
    per_side++;
  c->vision_merge = per_side == 0 || per_side > side ? 0 : side / per_side;
  return TRUE;
}

/* PaliGemma's projector, from the file's top level: the tower's width to projection_dim
 * (2048), biased. */
static gboolean
read_paligemma_projector(const Hf *h, StwModelConfig *c, GError **error)
{
  c->vision_projector = STW_PROJECTOR_PALIGEMMA;
  c->vision_out = 2048;
  return get_u64(h, "projection_dim", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_out, error);
}

/* Idefics3's and SmolVLM's vision config (their type OUTER_vision; NULL: its defaults) into C's
 * vision tower, SigLIP's blocks without a pooling head: hidden_size (1152), intermediate_size
 * (3072), num_hidden_layers (12), num_attention_heads (16, dividing hidden_size), num_channels
 * (3), image_size (224), patch_size (32). */
static gboolean
read_idefics3_vision(StwJsonReader *r, const cJSON *vision, const char *outer, StwModelConfig *c,
                     GError **error)
{
  g_autofree char *type = g_strconcat(outer, "_vision", NULL);
  g_autoptr(cJSON) none = cJSON_CreateObject();
  const Hf hv = { .r = r, .root = vision != NULL ? vision : none, .type = type };
  c->vision_pooling_head = FALSE;
  return tower_type(r, hv.root, type, "its SigLIP blocks", "vision", error) &&
         read_vit(&hv, "SigLIP's", STW_VISION_SIGLIP, (Vit){ 1152, 3072, 12, 16, 224, 32 }, c,
                  error);
}

/* Idefics3's and SmolVLM's connector, from the file's top level: scale_factor (2), the pixel
 * shuffle's merge. */
static gboolean
read_idefics3_projector(const Hf *h, StwModelConfig *c, GError **error)
{
  c->vision_projector = STW_PROJECTOR_IDEFICS3;
  c->vision_merge = 2;
  return get_u64(h, "scale_factor", FALSE, 1024, &c->vision_merge, error);
}

/* A square size of a vision config (image_size, patch_size): a whole number, or a list of two
 * equal ones (another, not modelled). */
static gboolean
get_square(const Hf *h, const char *key, guint64 max, guint64 *out, GError **error)
{
  const cJSON *v = member(h->root, key);
  if (!cJSON_IsArray(v))
    return get_u64(h, key, FALSE, max, out, error);
  guint64 side[2] = { 0, 0 };
  if (cJSON_GetArraySize(v) != 2)
    return stw_json_fail_at(h->r, key, error, "expected a whole number or a list of two");
  if (!entry_u64(h, key, 0, v->child, 1, max, &side[0], error) ||
      !entry_u64(h, key, 1, v->child->next, 1, max, &side[1], error))
    return FALSE;
  if (side[0] != side[1])
    return stw_json_fail_at(h->r, key, error, "%" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                            ": not square; not modelled", side[0], side[1]);
  *out = side[0];
  return TRUE;
}

/* InternVL's vision config (NULL: its defaults) into C's InternViT tower: hidden_size (1024),
 * intermediate_size (4096), num_hidden_layers (24), num_attention_heads (16, dividing
 * hidden_size), num_channels (3), image_size (448), patch_size (14) (each a number or a list of
 * two equal ones), attention_bias (false), use_qk_norm (false), norm_type ("layer_norm" or
 * "rms_norm"), use_mean_pooling (true: no final LayerNorm); a mask token or no position table
 * (use_mask_token, use_absolute_position_embeddings false) not modelled. */
static gboolean
read_internvl_vision(StwJsonReader *r, const cJSON *vision, const char *outer, StwModelConfig *c,
                     GError **error)
{
  g_autoptr(cJSON) none = cJSON_CreateObject();
  const Hf hv = { .r = r, .root = vision != NULL ? vision : none, .type = "internvl_vision" },
           *h = &hv;
  gboolean pooling = TRUE, mask = FALSE, positions = TRUE;
  if (!tower_type_or(r, h->root, "internvl_vision", outer, "InternVL's InternViT", "vision",
                     error) ||
      !read_vit(h, "InternViT's", STW_VISION_INTERNVL, (Vit){ 1024, 4096, 24, 16, 448, 14 }, c,
                error) ||
      !get_bool(h, "attention_bias", &c->vision_attn_bias, error) ||
      !get_bool(h, "use_qk_norm", &c->vision_qk_norm, error) ||
      !get_bool(h, "use_mean_pooling", &pooling, error) ||
      !get_bool(h, "use_mask_token", &mask, error) ||
      !get_bool(h, "use_absolute_position_embeddings", &positions, error))
    return FALSE;
  c->vision_final_norm = !pooling;
  const cJSON *norm = member(h->root, "norm_type");
  if (norm != NULL && !(cJSON_IsString(norm) && (strcmp(norm->valuestring, "layer_norm") == 0 ||
                                                 strcmp(norm->valuestring, "rms_norm") == 0)))
    return stw_json_fail_at(r, "norm_type", error, "expected \"layer_norm\" or \"rms_norm\"");
  c->vision_rms_norm = norm != NULL && strcmp(norm->valuestring, "rms_norm") == 0;
  if (mask || !positions)
    return stw_json_fail_at(r, mask ? "use_mask_token" : "use_absolute_position_embeddings",
                            error, "%s: InternViT %s; not modelled", mask ? "true" : "false",
                            mask ? "with a mask token" : "without its position table");
  return TRUE;
}

/* InternVL's projector, from the file's top level: downsample_ratio (0.5), its pixel shuffle
 * merging int(1 / downsample_ratio) patches a side. */
static gboolean
read_internvl_projector(const Hf *h, StwModelConfig *c, GError **error)
{
  c->vision_projector = STW_PROJECTOR_INTERNVL;
  const cJSON *ratio = member(h->root, "downsample_ratio");
  double r = 0.5;
  if (ratio != NULL && !cJSON_IsNumber(ratio))
    return stw_json_fail_at(h->r, "downsample_ratio", error, "expected a number");
  if (ratio != NULL)
    r = ratio->valuedouble;
  if (!(r > 0) || !(1 / r >= 1) || 1 / r > 1024)
    return stw_json_fail_at(h->r, "downsample_ratio", error, "%g: a pixel shuffle of %s patches "
                            "a side; not modelled (1/1024 to 1)", r, r > 1 ? "no" : "that many");
  c->vision_merge = (guint64)floor(1 / r);
  return TRUE;
}

/* Llama 3.2 Vision's tower (VISION; NULL: its defaults): hidden_size (1280), intermediate_size
 * (5120), num_hidden_layers (32), num_global_layers (8), attention_heads (its other name
 * num_attention_heads; 16, dividing hidden_size: otherwise its attention is narrower than its
 * width, not modelled), num_channels (3), image_size (448), patch_size (14), max_num_tiles (4),
 * supported_aspect_ratios (a list; eight by default, which need four tiles, as transformers
 * refuses others), vision_output_dim (7680: the projector's input). */
static gboolean
read_mllama_vision(StwJsonReader *r, const cJSON *vision, const char *outer, StwModelConfig *c,
                   GError **error)
{
  g_autoptr(cJSON) none = cJSON_CreateObject();
  const Hf hv = { .r = r, .root = vision != NULL ? vision : none,
                  .type = "mllama_vision_model" }, *h = &hv;
  guint64 heads = 16;
  c->vision_kind = STW_VISION_MLLAMA;
  c->vision_hidden = 1280;
  c->vision_ffn = 5120;
  c->vision_layers = 32;
  c->vision_global_layers = 8;
  c->vision_channels = 3;
  c->vision_image = 448;
  c->vision_patch = 14;
  c->vision_tiles = 4;
  c->vision_aspect_ratios = 8;
  c->vision_features = 7680;
  if (!tower_type_or(r, h->root, "mllama_vision_model", outer, "Llama 3.2 Vision's", "vision",
                     error) ||
      !get_u64(h, "hidden_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_hidden, error) ||
      !get_u64(h, "intermediate_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_ffn, error) ||
      !get_u64(h, "num_hidden_layers", FALSE, STW_MODEL_MAX_LAYERS, &c->vision_layers,
               error) ||
      !get_u64(h, "num_global_layers", FALSE, STW_MODEL_MAX_LAYERS, &c->vision_global_layers,
               error) ||
      !get_size(h, "attention_heads", "num_attention_heads", FALSE, STW_MODEL_MAX_WIDTH, 16,
                &heads, error) ||
      !get_u64(h, "num_channels", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_channels, error) ||
      !get_u64(h, "image_size", FALSE, STW_MODEL_MAX_SEQ, &c->vision_image, error) ||
      !get_u64(h, "patch_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_patch, error) ||
      !get_u64(h, "max_num_tiles", FALSE, 64, &c->vision_tiles, error) ||
      !get_u64(h, "vision_output_dim", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_features, error))
    return FALSE;
  const cJSON *ratios = member(h->root, "supported_aspect_ratios");
  if (ratios != NULL && !cJSON_IsArray(ratios))
    return stw_json_fail_at(r, "supported_aspect_ratios", error, "expected a list of [width, "
                            "height] in tiles");
  static const int standard[][2] = { { 1, 1 }, { 1, 2 }, { 1, 3 }, { 1, 4 },
                                     { 2, 1 }, { 2, 2 }, { 3, 1 }, { 4, 1 } };
  gboolean default_ratios = TRUE;
  if (ratios != NULL) {
    c->vision_aspect_ratios = (guint64)cJSON_GetArraySize(ratios);
    default_ratios = c->vision_aspect_ratios == G_N_ELEMENTS(standard);
    gsize i = 0;
    for (const cJSON *e = ratios->child; e != NULL && default_ratios; e = e->next, i++)
      default_ratios = cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 &&
                       cJSON_IsNumber(e->child) && e->child->valuedouble == standard[i][0] &&
                       cJSON_IsNumber(e->child->next) &&
                       e->child->next->valuedouble == standard[i][1];
  }
  if (c->vision_aspect_ratios == 0 || c->vision_aspect_ratios > 64)
    return stw_json_fail_at(r, "supported_aspect_ratios", error, "%" G_GUINT64_FORMAT
                            " entries: 1 to 64", c->vision_aspect_ratios);
  if (default_ratios && c->vision_tiles != 4)
    return stw_json_fail_at(r, "max_num_tiles", error, "%" G_GUINT64_FORMAT ": the default "
                            "supported_aspect_ratios need 4 (transformers refuses others)",
                            c->vision_tiles);
  if (c->vision_hidden % heads != 0)
    return stw_json_fail_at(r, "attention_heads", error, "%" G_GUINT64_FORMAT " heads do not "
                            "divide hidden_size %" G_GUINT64_FORMAT ": Llama 3.2 Vision's "
                            "attention is then narrower than its width; not modelled", heads,
                            c->vision_hidden);
  if (!whole_patch(h, c, error))
    return FALSE;
  return TRUE;
}

/* How many of LAYERS blocks LIST (a text_config's cross_attention_layers) names, each once,
 * into N; errors named under $.text_config. */
static gboolean
count_cross_layers(const Hf *h, const cJSON *list, guint64 layers, guint64 *n, GError **error)
{
  if (!cJSON_IsArray(list))
    return stw_json_fail_at(h->r, "cross_attention_layers", error, "expected a list of the "
                            "blocks' indices");
  g_autofree guint8 *cross = g_new0(guint8, layers);
  gsize k = 0;
  *n = 0;
  for (const cJSON *e = list->child; e != NULL; e = e->next, k++) {
    if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble))
      return stw_json_fail_at(h->r, "cross_attention_layers", error, "entry %" G_GSIZE_FORMAT
                              ": expected a block's index", k);
    if (e->valuedouble >= 0 && e->valuedouble < (double)layers && !cross[(gsize)e->valuedouble]) {
      cross[(gsize)e->valuedouble] = 1;
      (*n)++;
    }
  }
  if (*n == layers)
    return stw_json_fail_at(h->r, "cross_attention_layers", error, "every one of the %"
                            G_GUINT64_FORMAT " blocks: a language model of cross-attention "
                            "alone; not modelled", *n);
  return TRUE;
}

/* Llama 3.2 Vision's language model's cross-attention blocks, from the file's text_config:
 * cross_attention_layers (absent or null: [3, 8, ..., 38]), the indices of the blocks that
 * attend to the image (those below num_hidden_layers), which a text step skips: held beside
 * the tower (vision_cross_layers), the others the language model's layers; its embeddings 8
 * rows more than its head (image tokens), so the head is never tied. */
static gboolean
read_mllama_text(const Hf *h, StwModelConfig *c, GError **error)
{
  const cJSON *text = member(h->root, "text_config");
  const cJSON *given = cJSON_IsObject(text) ? member(text, "cross_attention_layers") : NULL;
  g_autoptr(cJSON) standard = given == NULL ? cJSON_Parse("[3, 8, 13, 18, 23, 28, 33, 38]")
                                            : NULL;
  guint64 n = 0;
  gsize saved = stw_json_push_key(h->r, "text_config");
  gboolean ok = count_cross_layers(h, given != NULL ? given : standard, c->layers, &n, error);
  stw_json_pop(h->r, saved);
  if (!ok)
    return FALSE;
  c->layers -= n;
  c->vision_cross_layers = n;
  c->tied = FALSE; /* (whatever the file says: transformers ties no head 8 rows short) */
  c->head_vocab = c->vocab;
  c->vocab += 8;
  return TRUE;
}

/* GLM-4.1V's and GLM-4.5V's vision config (NULL: its defaults; its type OUTER_vision or
 * OUTER) into C's glm4v tower: depth (24; num_hidden_layers its other name), hidden_size
 * (1536), out_hidden_size (4096: the blocks' MLPs and the merger), intermediate_size (13696: the
 * merger's MLP), in_channels (3), image_size (336: a position a patch), patch_size (14),
 * temporal_patch_size (2), spatial_merge_size (2), attention_bias (false). */
static gboolean
read_glm4v_vision(StwJsonReader *r, const cJSON *vision, const char *outer, StwModelConfig *c,
                  GError **error)
{
  g_autofree char *type = g_strconcat(outer, "_vision", NULL);
  g_autoptr(cJSON) none = cJSON_CreateObject();
  const Hf hv = { .r = r, .root = vision != NULL ? vision : none, .type = type }, *h = &hv;
  c->vision_kind = STW_VISION_GLM4V;
  c->vision_hidden = 1536;
  c->vision_out = 4096;
  c->vision_ffn = 13696;
  c->vision_channels = 3;
  c->vision_image = 336;
  c->vision_patch = 14;
  c->vision_temporal_patch = 2;
  c->vision_merge = 2;
  if (!tower_type_or(r, h->root, type, outer, "GLM-4V's", "vision", error) ||
      !get_size(h, "depth", "num_hidden_layers", FALSE, STW_MODEL_MAX_LAYERS, 24,
                &c->vision_layers, error) ||
      !get_u64(h, "hidden_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_hidden, error) ||
      !get_u64(h, "out_hidden_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_out, error) ||
      !get_u64(h, "intermediate_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_ffn, error) ||
      !get_u64(h, "in_channels", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_channels, error) ||
      !get_u64(h, "image_size", FALSE, STW_MODEL_MAX_SEQ, &c->vision_image, error) ||
      !get_u64(h, "patch_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_patch, error) ||
      !get_u64(h, "temporal_patch_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_temporal_patch,
               error) ||
      !get_u64(h, "spatial_merge_size", FALSE, 1024, &c->vision_merge, error) ||
      !get_bool(h, "attention_bias", &c->vision_attn_bias, error))
    return FALSE;
  if (!whole_patch(h, c, error))
    return FALSE;
  return TRUE;
}

/* Aya Vision's projector, from the file's top level: downsample_factor (2, its pixel
 * shuffle's), alignment_intermediate_size (the language model's width: its SwiGLU's). */
static gboolean
read_aya_projector(const Hf *h, StwModelConfig *c, GError **error)
{
  c->vision_projector = STW_PROJECTOR_AYA;
  c->vision_merge = 2;
  c->vision_out = c->hidden;
  if (!get_u64(h, "downsample_factor", FALSE, 1024, &c->vision_merge, error) ||
      !get_u64(h, "alignment_intermediate_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_out,
               error))
    return FALSE;
  if (c->vision_out < 2)
    return stw_json_fail_at(h->r, "alignment_intermediate_size", error, "%" G_GUINT64_FORMAT
                            ": a SwiGLU of no width; not modelled", c->vision_out);
  return TRUE;
}

/* PaliGemma's language model where its file gives none: the Gemma its class makes */
static const char paligemma_text[] =
    "{\"model_type\": \"gemma\", \"hidden_size\": 2048, \"num_hidden_layers\": 18, "
    "\"intermediate_size\": 16384, \"num_attention_heads\": 8, \"num_key_value_heads\": 1, "
    "\"vocab_size\": 257152}";

/* The blocks whose features DeepStack's mergers carry into the language model
 * (deepstack_visual_indexes: a merger each). */
static gboolean
read_deepstack(const Hf *h, StwModelConfig *c, GError **error)
{
  const cJSON *list = member(h->root, "deepstack_visual_indexes");
  if (list == NULL)
    return TRUE;
  if (!cJSON_IsArray(list))
    return stw_json_fail_at(h->r, "deepstack_visual_indexes", error, "expected a list of the "
                            "vision blocks' indices (a merger each)");
  c->vision_deepstack = (guint64)cJSON_GetArraySize(list);
  if (c->vision_deepstack > STW_MODEL_MAX_LAYERS)
    return stw_json_fail_at(h->r, "deepstack_visual_indexes", error, "%" G_GUINT64_FORMAT
                            " entries: at most 4096", c->vision_deepstack);
  return TRUE;
}

/* Qwen2.5-VL's attention windows: window_size (112 pixels a side) and the blocks that attend
 * over the whole image instead (fullatt_block_indexes: 7, 15, 23 and 31; those past depth, as
 * transformers ignores them, ignored). */
static gboolean
read_windows(const Hf *h, StwModelConfig *c, GError **error)
{
  c->vision_window = 112;
  if (!get_u64(h, "window_size", FALSE, STW_MODEL_MAX_IMAGE, &c->vision_window, error))
    return FALSE;
  const cJSON *list = member(h->root, "fullatt_block_indexes");
  if (list == NULL) {
    for (guint64 l = 7; l < c->vision_layers; l += 8)
      stw_model_set_vision_full_block(c, l, l < 32);
    return TRUE;
  }
  if (!cJSON_IsArray(list))
    return stw_json_fail_at(h->r, "fullatt_block_indexes", error, "expected a list of the "
                            "vision blocks' indices");
  for (const cJSON *e = list->child; e != NULL; e = e->next) {
    double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
    if (!(v >= 0) || v != floor(v))
      return stw_json_fail_at(h->r, "fullatt_block_indexes", error, "expected the indices of "
                              "blocks (whole numbers from 0)");
    if (v < (double)c->vision_layers)
      stw_model_set_vision_full_block(c, (guint64)v, TRUE);
  }
  return TRUE;
}

/* A Qwen-VL vision config (VISION; NULL: its defaults) of an OUTER file into C's vision tower,
 * its model_type OUTER_vision or OUTER (which the class renames so): depth
 * (num_hidden_layers, its other name, wins where both are given), the tower's width (Qwen2-VL's
 * embed_dim, the others' hidden_size), its MLP's (Qwen2-VL's embed_dim x mlp_ratio, the others'
 * intermediate_size), the mergers' output (Qwen2-VL's hidden_size, the others'
 * out_hidden_size), in_channels, patch_size, temporal_patch_size, spatial_merge_size; Qwen3-VL's
 * num_position_embeddings and deepstack_visual_indexes; Qwen2.5-VL's windows (read_windows).
 * The heads change no weight. */
static gboolean
read_qwen_vision(StwJsonReader *r, const cJSON *vision, const char *outer, StwModelConfig *c,
                 GError **error)
{
  static const struct {
    const char *outer, *whose;
    StwVisionKind kind;
  } towers[] = {
    { "qwen2_vl", "Qwen2-VL's", STW_VISION_QWEN2_VL },
    { "qwen2_5_vl", "Qwen2.5-VL's", STW_VISION_QWEN2_5_VL },
    { "qwen3_vl", "Qwen3-VL's", STW_VISION_QWEN3_VL },
    { "qwen3_vl_moe", "Qwen3-VL-MoE's", STW_VISION_QWEN3_VL },
  };
  gsize t = 0;
  while (strcmp(towers[t].outer, outer) != 0)
    t++;
  StwVisionKind kind = towers[t].kind;
  g_autofree char *type = g_strconcat(outer, "_vision", NULL);
  g_autoptr(cJSON) none = cJSON_CreateObject();
  const Hf hv = { .r = r, .root = vision != NULL ? vision : none, .type = type }, *h = &hv;
  gboolean qwen2 = kind == STW_VISION_QWEN2_VL, qwen3 = kind == STW_VISION_QWEN3_VL;
  guint64 ratio = 4;
  c->vision_kind = kind;
  c->vision_hidden = qwen2 ? 1280 : qwen3 ? 1152 : 3584;
  c->vision_ffn = qwen3 ? 4304 : 3420;
  c->vision_out = 3584;
  c->vision_channels = 3;
  c->vision_patch = qwen3 ? 16 : 14;
  c->vision_temporal_patch = 2;
  c->vision_merge = 2;
  c->vision_positions = qwen3 ? 2304 : 0;
  c->vision_deepstack = qwen3 ? 3 : 0;
  if (!tower_type_or(r, h->root, type, outer, towers[t].whose, "vision", error) ||
      !get_size(h, "depth", "num_hidden_layers", FALSE, STW_MODEL_MAX_LAYERS, qwen3 ? 27 : 32,
                &c->vision_layers, error) ||
      !get_u64(h, qwen2 ? "embed_dim" : "hidden_size", FALSE, STW_MODEL_MAX_WIDTH,
               &c->vision_hidden, error) ||
      !get_u64(h, qwen2 ? "hidden_size" : "out_hidden_size", FALSE, STW_MODEL_MAX_WIDTH,
               &c->vision_out, error) ||
      !get_u64(h, qwen2 ? "mlp_ratio" : "intermediate_size", FALSE, STW_MODEL_MAX_WIDTH,
               qwen2 ? &ratio : &c->vision_ffn, error) ||
      !get_u64(h, "in_channels", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_channels, error) ||
      !get_u64(h, "patch_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_patch, error) ||
      !get_u64(h, "temporal_patch_size", FALSE, STW_MODEL_MAX_WIDTH, &c->vision_temporal_patch,
               error) ||
      !get_u64(h, "spatial_merge_size", FALSE, 1024, &c->vision_merge, error))
    return FALSE;
  if (qwen3 && (!get_u64(h, "num_position_embeddings", FALSE, STW_MODEL_MAX_SEQ,
                         &c->vision_positions, error) ||
                !read_deepstack(h, c, error)))
    return FALSE;
  if (kind == STW_VISION_QWEN2_5_VL && !read_windows(h, c, error))
    return FALSE;
  if (qwen2 && !g_uint64_checked_mul(&c->vision_ffn, c->vision_hidden, ratio))
    c->vision_ffn = G_MAXUINT64;
  if (qwen2 && c->vision_ffn > STW_MODEL_MAX_WIDTH)
    return stw_json_fail_at(r, "mlp_ratio", error, "%" G_GUINT64_FORMAT " x embed_dim %"
                            G_GUINT64_FORMAT ": an MLP more than 1048576 wide", ratio,
                            c->vision_hidden);
  return TRUE;
}

/* Mistral 3's language model where its file gives none: the Mistral the class makes */
static const char mistral3_text[] =
    "{\"model_type\": \"mistral\", \"head_dim\": 128, \"hidden_size\": 5120, "
    "\"intermediate_size\": 32768, \"max_position_embeddings\": 131072, "
    "\"num_attention_heads\": 32, \"num_hidden_layers\": 40, \"num_key_value_heads\": 8, "
    "\"sliding_window\": null, \"vocab_size\": 131072}";

/* A tower's config (NULL: its defaults) in a file of type OUTER into C's tower, errors named
 * under the config's key. */
typedef gboolean TowerReader(StwJsonReader *r, const cJSON *config, const char *outer,
                             StwModelConfig *c, GError **error);

/* The multimodal files read as their whole model (their ForConditionalGeneration, which
 * AutoModelForCausalLM builds for Gemma 3 and 4, AutoModelForImageTextToText for the others):
 * the language model of type INNER (absent: TEXT_DEFAULTS, else its defaults; FLAT_TEXT: the
 * file's own members, as Qwen2-VL's and Qwen2.5-VL's checkpoints give them), and beside it
 * the towers that VISION and AUDIO read (NULL: none) and their projectors, which a text step
 * never reads; TOP_LEVEL reads what the file gives beside them at its top level (a projector's
 * members; Llama 3.2 Vision's cross-attention blocks, from its text_config). A tower's config
 * null or absent is its defaults where DEFAULTS_WHEN_NULL says, else none. */
static const struct {
  const char *outer, *inner;
  TowerReader *vision, *audio;
  gboolean (*top_level)(const Hf *, StwModelConfig *, GError **);
  gboolean defaults_when_null;
  const char *text_defaults;
  gboolean flat_text;
  gboolean any_text;   /* a language model of any type, INNER where the file names none */
  gboolean tied;       /* the class's tie_word_embeddings */
  gboolean tie_either; /* tied where the file or its language model says so (the Qwen2-VL
                        * classes'), not by the file's alone */
} towered_models[] = {
  { .outer = "gemma3", .inner = "gemma3_text", .vision = read_siglip,
    .top_level = read_gemma3_projector, .defaults_when_null = TRUE, .tied = TRUE },
  { .outer = "gemma4", .inner = "gemma4_text", .vision = read_gemma4_vision,
    .audio = read_gemma4_audio, .tied = TRUE },
  { .outer = "mistral3", .inner = "mistral", .vision = read_pixtral,
    .top_level = read_mistral3_projector, .defaults_when_null = TRUE,
    .text_defaults = mistral3_text, .tied = TRUE },
  { .outer = "llava", .inner = "llama", .vision = read_llava_vision,
    .top_level = read_llava_projector, .defaults_when_null = TRUE, .any_text = TRUE },
  { .outer = "llava_next", .inner = "llama", .vision = read_llava_vision,
    .top_level = read_llava_projector, .defaults_when_null = TRUE, .any_text = TRUE },
  { .outer = "llava_onevision", .inner = "qwen2", .vision = read_llava_vision,
    .top_level = read_llava_projector, .defaults_when_null = TRUE, .any_text = TRUE },
  { .outer = "idefics3", .inner = "llama", .vision = read_idefics3_vision,
    .top_level = read_idefics3_projector, .defaults_when_null = TRUE, .any_text = TRUE },
  { .outer = "smolvlm", .inner = "llama", .vision = read_idefics3_vision,
    .top_level = read_idefics3_projector, .defaults_when_null = TRUE, .any_text = TRUE },
  { .outer = "internvl", .inner = "qwen2", .vision = read_internvl_vision,
    .top_level = read_internvl_projector, .defaults_when_null = TRUE, .any_text = TRUE,
    .tied = TRUE },
  { .outer = "glm4v", .inner = "glm4v_text", .vision = read_glm4v_vision,
    .defaults_when_null = TRUE, .tie_either = TRUE },
  { .outer = "glm4v_moe", .inner = "glm4v_moe_text", .vision = read_glm4v_vision,
    .defaults_when_null = TRUE, .tie_either = TRUE },
  { .outer = "mllama", .inner = "mllama_text_model", .vision = read_mllama_vision,
    .top_level = read_mllama_text, .defaults_when_null = TRUE },
  { .outer = "aya_vision", .inner = "cohere2", .vision = read_llava_vision,
    .top_level = read_aya_projector, .defaults_when_null = TRUE, .any_text = TRUE,
    .tied = TRUE },
  { .outer = "paligemma", .inner = "gemma", .vision = read_llava_vision,
    .top_level = read_paligemma_projector, .defaults_when_null = TRUE,
    .text_defaults = paligemma_text, .any_text = TRUE, .tied = TRUE },
  { .outer = "qwen2_vl", .inner = "qwen2_vl_text", .vision = read_qwen_vision,
    .defaults_when_null = TRUE, .flat_text = TRUE, .tie_either = TRUE },
  { .outer = "qwen2_5_vl", .inner = "qwen2_5_vl_text", .vision = read_qwen_vision,
    .defaults_when_null = TRUE, .flat_text = TRUE, .tie_either = TRUE },
  { .outer = "qwen3_vl", .inner = "qwen3_vl_text", .vision = read_qwen_vision,
    .defaults_when_null = TRUE },
  { .outer = "qwen3_vl_moe", .inner = "qwen3_vl_moe_text", .vision = read_qwen_vision,
    .defaults_when_null = TRUE },
};

/* Whether TYPE is a multimodal file's that stowage reads through its language model. */
static gboolean
is_wrapper_type(const char *type)
{
  for (gsize i = 0; i < G_N_ELEMENTS(towered_models); i++)
    if (strcmp(type, towered_models[i].outer) == 0)
      return TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS(language_models); i++)
    if (strcmp(type, language_models[i].outer) == 0)
      return TRUE;
  return FALSE;
}

/* ROOT, a file of towered_models[I], as transformers builds it whole: its language model
 * (text_config), the LM head tied as the file's own tie_word_embeddings says (default: the
 * class's; transformers ties by the outer config), and its towers. */
static gboolean
read_towered(StwJsonReader *r, const cJSON *root, const char *file, gsize i,
             StwModelConfig *out, GError **error)
{
  StwModelConfig c;
  if (!read_language_model(r, root, file, towered_models[i].inner, towered_models[i].any_text,
                           towered_models[i].text_defaults, towered_models[i].flat_text, &c,
                           error))
    return FALSE;
  const Hf top = { .r = r, .root = root, .type = towered_models[i].outer };
  gboolean tied = towered_models[i].tied;
  if (!get_bool(&top, "tie_word_embeddings", &tied, error))
    return FALSE;
  c.tied = tied || (towered_models[i].tie_either && c.tied);
  const char *keys[] = { "vision_config", "audio_config" };
  TowerReader *readers[] = {
    towered_models[i].vision, towered_models[i].audio
  };
  for (gsize k = 0; k < G_N_ELEMENTS(keys); k++) {
    const cJSON *tower = last_member(root, keys[k]);
    if (readers[k] == NULL)
      continue;
    if (tower != NULL && !cJSON_IsNull(tower) && !cJSON_IsObject(tower))
      return stw_json_fail_at(r, keys[k], error, "expected an object: the %s tower's config "
                              "(null: %s)", k == 0 ? "vision" : "audio",
                              towered_models[i].defaults_when_null ? "its defaults"
                                                                   : "no such tower");
    if (!cJSON_IsObject(tower) && !towered_models[i].defaults_when_null)
      continue;
    gsize saved = stw_json_push_key(r, keys[k]);
    gboolean ok = readers[k](r, cJSON_IsObject(tower) ? tower : NULL, towered_models[i].outer, &c,
                             error);
    stw_json_pop(r, saved);
    if (!ok)
      return FALSE;
  }
  if (towered_models[i].top_level != NULL && !towered_models[i].top_level(&top, &c, error))
    return FALSE;
  if (!valid_as(r, towered_models[i].outer, &c, error))
    return FALSE;
  *out = c;
  return TRUE;
}

static gboolean
read_hf(StwJsonReader *r, const cJSON *root, const char *file, StwModelConfig *out,
        GError **error)
{
  int t = 0;
  const cJSON *outer = member(root, "model_type"), *text = member(root, "text_config");
  const cJSON *given_type = last_member(root, "model_type");
  for (gsize i = 0; cJSON_IsString(given_type) && i < G_N_ELEMENTS(language_models); i++)
    if (strcmp(given_type->valuestring, language_models[i].outer) == 0)
      return read_language_model(r, root, file, language_models[i].inner, FALSE, NULL, FALSE,
                                 out, error);
  for (gsize i = 0; cJSON_IsString(given_type) && i < G_N_ELEMENTS(towered_models); i++)
    if (strcmp(given_type->valuestring, towered_models[i].outer) == 0)
      return read_towered(r, root, file, i, out, error);
  if (cJSON_IsString(outer) && cJSON_IsObject(text) &&
      !g_strv_contains((const char *const *)stw_hf_model_types, outer->valuestring)) {
    /* a multimodal model's config (Gemma 3, LLaVA, Mistral 3): its language model inside */
    const cJSON *inner = member(text, "model_type");
    return stw_json_fail_at(r, "model_type", error,
                            "\"%s\" is a multimodal model, and stowage models language models: "
                            "write $.text_config%s%s%s to a file of its own and give that (the "
                            "vision tower's parameters are then left out)",
                            outer->valuestring, cJSON_IsString(inner) ? " (model_type \"" : "",
                            cJSON_IsString(inner) ? inner->valuestring : "",
                            cJSON_IsString(inner) ? "\")" : "");
  }
  /* the type as Python's json reads it: the last model_type of a file that gives two */
  const cJSON *given = last_member(root, "model_type");
  cJSON *last = cJSON_CreateObject();
  if (given != NULL)
    cJSON_AddItemToObject(last, "model_type", cJSON_Duplicate(given, TRUE));
  gboolean typed = stw_json_get_enum(r, last, "model_type", TRUE, stw_hf_model_types, &t, error);
  cJSON_Delete(last);
  if (!typed)
    return FALSE;
  HfType type = (HfType)t;
  const char *type_name = stw_hf_model_types[t];
  const Hf hf = { .r = r, .root = root, .type = type_name }, *h = &hf;
  const HfRow *row = row_of(type);
  for (gsize i = 0; i < G_N_ELEMENTS(row->not_null) && row->not_null[i] != NULL; i++)
    if (cJSON_IsNull(last_member(root, row->not_null[i])))
      return stw_json_fail_at(r, row->not_null[i], error, "null, where a %s config.json needs a "
                              "whole number (transformers refuses it)", type_name);
  for (gsize i = 0; i < G_N_ELEMENTS(row->required) && row->required[i] != NULL; i++)
    if (!cJSON_IsNumber(last_member(root, row->required[i])))
      return stw_json_fail_at(r, row->required[i], error, "required (a number): transformers "
                              "builds no %s model without it", type_name);
  StwModelConfig c = row->shape; /* the type's block, its sizes read below */
  c.tied = row->tied;
  /* GPT-2 and GPT-BigCode have names of their own, and take the common ones too */
  if (!get_size(h, row->layers, "num_hidden_layers", FALSE, STW_MODEL_MAX_LAYERS,
                row->layers_default, &c.layers, error) ||
      !get_size(h, row->hidden, "hidden_size", FALSE, STW_MODEL_MAX_WIDTH,
                row->hidden_default, &c.hidden, error) ||
      !get_size(h, row->heads, "num_attention_heads", FALSE, STW_MODEL_MAX_WIDTH,
                row->heads_default, &c.heads, error) ||
      (!row->positions_unbounded &&
       !get_size(h, row->max_seq, "max_position_embeddings", FALSE, STW_MODEL_MAX_SEQ,
                 row->max_seq_default, &c.max_seq, error)) ||
      !get_size(h, NULL, "vocab_size", FALSE, STW_MODEL_MAX_VOCAB, row->vocab_default, &c.vocab,
                error) ||
      (!row->ffn_fixed &&
       !get_size(h, row->ffn != NULL ? row->ffn : "intermediate_size", NULL, row->ffn_null_ok,
                 8 * (guint64)STW_MODEL_MAX_WIDTH, row->ffn_default, &c.ffn, error)))
    return FALSE;
  if (type == HF_EXAONE && !get_u64(h, "num_layers", FALSE, STW_MODEL_MAX_LAYERS, &c.layers,
                                    error))
    return FALSE;
  guint64 n_embed = 0; /* BLOOM's old name for hidden_size, which wins where it is a number */
  if (type == HF_BLOOM && !get_u64(h, "n_embed", TRUE, STW_MODEL_MAX_WIDTH, &n_embed, error))
    return FALSE;
  if (n_embed != 0)
    c.hidden = n_embed;
  if (row->positions_unbounded)
    c.max_seq = STW_MODEL_MAX_SEQ;
  if (c.ffn == 0)
    c.ffn = 4 * c.hidden; /* GPT-2's n_inner: None */
  c.position_offset = row->position_offset;
  if (row->offset_within && c.max_seq <= c.position_offset)
    return stw_json_fail_at(r, "max_position_embeddings", error, "%" G_GUINT64_FORMAT ": %s's "
                            "positions start at %" G_GUINT64_FORMAT ", so the table needs more "
                            "rows than that for any token", c.max_seq, type_name,
                            c.position_offset);
  if (row->offset_within)
    c.max_seq -= c.position_offset;
  if (row->reads_tie && !get_bool(h, "tie_word_embeddings", &c.tied, error))
    return FALSE;
  c.kv_heads = c.heads;
  if (row->kv_default != NOT_READ) {
    guint64 kv = row->kv_default;
    if (!get_u64(h, "num_key_value_heads", row->kv_null_ok, STW_MODEL_MAX_WIDTH, &kv, error))
      return FALSE;
    c.kv_heads = kv != 0 ? kv : c.heads;
  }
  if (type == HF_GPT_NEO && !check_gpt_neo_layers(h, c.layers, error))
    return FALSE;
  if (type == HF_FALCON && !read_falcon_blocks(h, &c, error))
    return FALSE;
  if (type == HF_DBRX && !read_dbrx(h, &c, error))
    return FALSE;
  if (type == HF_GPT_BIGCODE) { /* one key and value head for all, unless multi_query is off */
    gboolean multi = TRUE;
    if (!get_bool(h, "multi_query", &multi, error))
      return FALSE;
    c.kv_heads = multi ? 1 : c.heads;
  }
  if (row->head_dim_default != NOT_READ) {
    c.head_dim = row->head_dim_default;
    if (!get_u64(h, "head_dim", row->head_dim_null_ok, STW_MODEL_MAX_WIDTH, &c.head_dim, error))
      return FALSE;
  }
  if (row->reads_token_types) {
    c.token_types = 2;
    if (!get_u64(h, "type_vocab_size", FALSE, STW_MODEL_MAX_TOKEN_TYPES, &c.token_types, error))
      return FALSE;
    gboolean tasks = FALSE;
    guint64 task_types = 3;
    if (row->reads_task_types &&
        (!get_bool(h, "use_task_id", &tasks, error) ||
         (tasks && !get_u64(h, "task_type_vocab_size", FALSE,
                            STW_MODEL_MAX_TOKEN_TYPES - c.token_types, &task_types, error))))
      return FALSE;
    if (tasks) /* a second table beside the token types' (0 rows: none) */
      c.token_types += task_types;
    if (c.token_types == 2)
      c.token_types = 0; /* the usual: written as the default */
  }
  if (row->experts_member != NULL) {
    c.experts = row->experts_default;
    c.experts_per_token = row->experts_per_token_default;
    c.shared_expert_ffn = row->shared_expert_default;
    if ((c.shared_expert_ffn != 0 &&
         !get_u64(h, "shared_expert_intermediate_size", FALSE, 8 * (guint64)STW_MODEL_MAX_WIDTH,
                  &c.shared_expert_ffn, error)) ||
        !get_whole(h, row->experts_member, FALSE, row->experts_zero_dense ? 0 : 1,
                   STW_MODEL_MAX_EXPERTS, &c.experts, error) ||
        (row->experts_alias != NULL &&
         !get_u64(h, row->experts_alias, FALSE, STW_MODEL_MAX_EXPERTS, &c.experts, error)) ||
        (row->experts_per_token_member != NULL && !row->experts_per_token_by_layer &&
         !get_u64(h, row->experts_per_token_member, row->experts_per_token_null_ok,
                  STW_MODEL_MAX_EXPERTS, &c.experts_per_token, error)) ||
        (row->experts_per_token_by_layer &&
         !get_by_layer(h, row->experts_per_token_member, c.layers, STW_MODEL_MAX_EXPERTS,
                       &c.experts_per_token, error)) ||
        !get_u64(h, "num_experts_per_tok", row->experts_per_token_null_ok, STW_MODEL_MAX_EXPERTS,
                 &c.experts_per_token, error))
      return FALSE;
    if (c.experts_per_token == 0) /* null, which no parameter depends on: the row's */
      c.experts_per_token = row->experts_per_token_default;
    if (row->one_expert_not_modelled && c.experts == 1)
      return stw_json_fail_at(h->r, row->experts_member, error, "1: one routed expert beside the "
                              "shared MLP, with a router of its own: not modelled (2 or more "
                              "are)");
    guint64 shared = row->shared_experts_default, dense = row->dense_layers_default;
    c.dense_ffn = row->dense_ffn_default;
    gboolean reads_dense_ffn = row->reads_dense_layers || row->dense_types_member != NULL ||
                               row->dense_list_member != NULL || row->dense_ffn_member != NULL;
    if ((row->shared_experts_member != NULL &&
         !get_count(h, row->shared_experts_member, STW_MODEL_MAX_EXPERTS, &shared, error)) ||
        (row->reads_dense_layers &&
         !get_count(h, row->dense_layers_member != NULL ? row->dense_layers_member
                                                       : "first_k_dense_replace",
                    STW_MODEL_MAX_LAYERS, &dense, error)))
      return FALSE;
    dense_first(&c, dense); /* more than there are blocks: all of them */
    if ((row->dense_types_member != NULL &&
         !get_dense_types(h, row->dense_types_member, &c, error)) ||
        (row->dense_list_member != NULL && !get_dense_list(h, row->dense_list_member, &c, error)) ||
        (type == HF_ERNIE4_5_MOE && !ernie_dense_blocks(h, &c, error)) ||
        (type == HF_LLAMA4_TEXT && !llama4_dense_blocks(h, &c, error)) ||
        (reads_dense_ffn &&
         !get_u64(h, row->dense_ffn_member != NULL ? row->dense_ffn_member : "intermediate_size",
                  row->dense_ffn_member != NULL, 8 * (guint64)STW_MODEL_MAX_WIDTH, &c.dense_ffn,
                  error)))
      return FALSE;
    if (row->dense_ffn_member != NULL && c.dense_ffn == 0) /* null: the routed experts' width */
      c.dense_ffn = c.ffn;
    if (row->shared_experts_default != 0 || row->shared_experts_member != NULL) {
      /* shared experts of the routed width, one MLP */
      c.shared_expert_ffn = shared * c.ffn;
      if (shared == 0 && row->shared_zero_dense)
        c.shared_expert_ffn = c.dense_ffn;
      c.shared_expert_ungated = c.shared_expert_ffn != 0;
    }
    if (row->shared_width_member != NULL) {
      c.shared_expert_ffn = row->shared_width_default;
      if (!get_count(h, row->shared_width_member, 8 * (guint64)STW_MODEL_MAX_WIDTH,
                     &c.shared_expert_ffn, error))
        return FALSE;
      c.shared_expert_ungated = c.shared_expert_ffn != 0;
    }
    if (row->experts_zero_dense && c.experts == 0) { /* the shared MLP alone: a dense one */
      c.ffn = c.shared_expert_ffn;
      c.shared_expert_ffn = c.experts_per_token = 0;
      c.shared_expert_ungated = FALSE;
    }
    if (c.experts < 2) /* a dense MLP in every block: none among experts */
      memset(c.dense_blocks, 0, sizeof c.dense_blocks);
    if (stw_model_dense_blocks(&c) == 0)
      c.dense_ffn = 0;
  }
  if (row->qk_norm_member != NULL && !get_bool(h, row->qk_norm_member, &c.qk_norm, error))
    return FALSE;
  if (row->linear != HF_LINEAR_NONE && !read_linear_attn(h, row, &c, error))
    return FALSE;
  if (type == HF_GEMMA4_TEXT && !read_gemma4(h, &c, error))
    return FALSE;
  if (type == HF_GEMMA3N_TEXT && !read_gemma3n(h, &c, error))
    return FALSE;
  if (type == HF_APERTUS1P5_TEXT && !read_head_vocab(h, &c, error))
    return FALSE;
  if (type == HF_AXK1 && !read_axk1(h, &c, error))
    return FALSE;
  if (type == HF_MIMO_V2_FLASH && !read_mimo(h, &c, error))
    return FALSE;
  gboolean post_norm = c.norms == STW_NORMS_BOTH;
  if (row->post_norm_member != NULL) {
    if (!get_bool(h, row->post_norm_member, &post_norm, error))
      return FALSE;
    c.norms = post_norm ? STW_NORMS_BOTH : STW_NORMS_PRE;
  }
  gboolean parallel = FALSE;
  if ((row->parallel_member != NULL && !get_bool(h, row->parallel_member, &parallel, error)) ||
      (row->head_bias_member != NULL && !get_bool(h, row->head_bias_member, &c.head_bias, error)))
    return FALSE;
  if (parallel)
    c.norms = STW_NORMS_SHARED;
  if (!c.qk_norm)
    c.qk_norm_full = FALSE; /* the row's kind of norm, where the file asks for one */
  if (row->kv_lora_default != 0) { /* latent attention: a key and value per head */
    guint64 nope = row->nope_dim_default;
    c.kv_lora_rank = row->kv_lora_default;
    c.q_lora_rank = row->q_lora_default;
    c.rope_dim = row->rope_dim_default;
    c.v_head_dim = row->v_head_dim_default;
    if (!get_u64(h, "kv_lora_rank", FALSE, STW_MODEL_MAX_WIDTH, &c.kv_lora_rank, error) ||
        !get_u64(h, "q_lora_rank", TRUE, STW_MODEL_MAX_WIDTH, &c.q_lora_rank, error) ||
        !get_u64(h, "qk_rope_head_dim", FALSE, STW_MODEL_MAX_WIDTH, &c.rope_dim, error) ||
        (row->rope_dim_alias != NULL &&
         !get_u64(h, row->rope_dim_alias, FALSE, STW_MODEL_MAX_WIDTH, &c.rope_dim, error)) ||
        !get_u64(h, "qk_nope_head_dim", FALSE, STW_MODEL_MAX_WIDTH, &nope, error) ||
        !get_u64(h, "v_head_dim", row->v_head_dim_of_hidden, STW_MODEL_MAX_WIDTH, &c.v_head_dim,
                 error))
      return FALSE;
    if (c.v_head_dim == 0 && c.heads != 0) /* (v_head_dim_of_hidden) */
      c.v_head_dim = c.hidden / c.heads;
    if (row->index_heads_default != 0) { /* DSA's indexer */
      c.index_heads = row->index_heads_default;
      c.index_head_dim = row->index_head_dim_default;
      if (!get_u64(h, "index_n_heads", FALSE, STW_MODEL_MAX_WIDTH, &c.index_heads, error) ||
          !get_u64(h, "index_head_dim", FALSE, STW_MODEL_MAX_WIDTH, &c.index_head_dim, error) ||
          (row->reads_indexer_types && !read_indexer_types(h, &c, error)))
        return FALSE;
    }
    c.kv_heads = c.heads;
    c.head_dim = nope * c.heads == c.hidden ? 0 : nope;
  }
  if (type == HF_LONGCAT_FLASH && !read_longcat(h, &c, error))
    return FALSE;
  if (type == HF_LAGUNA && !read_laguna(h, &c, error))
    return FALSE;
  if (type == HF_MINIMAX_M3_TEXT && !read_minimax_m3(h, &c, error))
    return FALSE;
  if (row->heads_divide_hidden && c.heads != 0 && c.hidden % c.heads != 0)
    return stw_json_fail_at(r, "num_attention_heads", error, "%" G_GUINT64_FORMAT " heads do "
                            "not divide hidden_size %" G_GUINT64_FORMAT ": %s's class refuses "
                            "it, whatever head_dim says", c.heads, c.hidden,
                            stw_hf_model_types[type]);
  if (c.arch == STW_ARCH_LLAMA && c.head_dim == 0 && c.heads != 0 && c.hidden % c.heads != 0)
    c.head_dim = c.hidden / c.heads; /* transformers' hidden // heads, as its attention takes it */
  if (c.head_dim != 0 && c.head_dim * c.heads == c.hidden)
    c.head_dim = 0; /* the usual width: written as the default */
  if (type == HF_OLMOE && c.head_dim != 0) /* its norms stay hidden / heads wide a head */
    return stw_json_fail_at(r, "head_dim", error, "%" G_GUINT64_FORMAT ": OLMoE's query and key "
                            "norms are hidden / heads wide a head, which a head_dim apart from it "
                            "does not change; not modelled", c.head_dim);
  if ((row->out_hidden_wide || c.sub_norms) && c.head_dim != 0) {
    /* a part hidden wide whatever the heads: Helium's output projection, BitNet's norm over
     * the heads' output */
    g_autofree char *part =
        c.sub_norms ? g_strdup_printf("norm over the heads' output is hidden (%" G_GUINT64_FORMAT
                                      ") wide", c.hidden)
                    : g_strdup_printf("output projection is hidden x hidden (%" G_GUINT64_FORMAT
                                      ")", c.hidden);
    return stw_json_fail_at(r, "head_dim", error, "%" G_GUINT64_FORMAT " a head, %" G_GUINT64_FORMAT
                            " heads: %s's %s whatever the heads, and its forward runs only where "
                            "heads x head_dim is hidden; not modelled", c.head_dim, c.heads,
                            stw_hf_model_types[type], part);
  }
  if (!read_biases(h, row, &c, error) || !read_dropout(h, row, &c, error) ||
      !check_unmodelled(h, type, error) ||
      (type == HF_ERNIE4_5_MOE && !read_ernie_moe(h, error)) ||
      (row->act_default != NULL && !read_activation(h, row, &c, error)) ||
      (type == HF_OPT && !read_opt(h, &c, error)))
    return FALSE;
  if ((row->reads_softcaps || row->reads_logit_softcap) &&
      !get_cap(h, "final_logit_softcapping", &c.logit_softcap, error))
    return FALSE;
  if (row->reads_softcaps && !get_cap(h, "attn_logit_softcapping", &c.attn_softcap, error))
    return FALSE;
  model_name(root, file, type_name, c.name);

  if (!valid_as(r, type_name, &c, error))
    return FALSE;
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
