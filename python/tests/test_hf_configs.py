"""stowage's reader of Hugging Face config.json files against transformers' own: the same
config.json (every family stowage reads, members left out for their defaults, written null,
given under another name, given twice, biases and head widths set) read by `stowage models --hf`
and by transformers (AutoConfig, then the model built on the meta device, no weights): the
parameter counts must be equal, and so must the attention's key/value heads. Skips without
transformers."""
import json
import os
import subprocess
import tempfile
import unittest

STOWAGE = os.environ.get("STOWAGE")

try:
    import torch
    import transformers
except ImportError as e:
    torch = transformers = None
    WHY = str(e)

# DeepSeek-V3.2's and GLM-5's blocks at the same small size
# Qwen3-Next's and Qwen3.5's: four blocks, every other softmax attention (its gate and head norms)
# and Gated DeltaNet in the rest
GDN_SMALL = {"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96,
             "vocab_size": 128, "max_position_embeddings": 64, "linear_num_key_heads": 2,
             "linear_num_value_heads": 4, "linear_key_head_dim": 8,
             "linear_value_head_dim": 16, "linear_conv_kernel_dim": 3,
             "full_attention_interval": 2}
DSA_SMALL = {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
             "intermediate_size": 96, "moe_intermediate_size": 32, "n_routed_experts": 4,
             "num_experts_per_tok": 2, "kv_lora_rank": 16, "q_lora_rank": 24,
             "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16, "index_n_heads": 4,
             "index_head_dim": 16, "first_k_dense_replace": 1, "vocab_size": 128,
             "max_position_embeddings": 64}

SMALL = {
    "gpt2": {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 128, "n_positions": 64},
    "gpt_neo": {"num_layers": 2, "hidden_size": 64, "num_heads": 4, "intermediate_size": 96,
                "vocab_size": 128, "max_position_embeddings": 64,
                "attention_types": [[["global", "local"], 1]]},
    "gpt_neox": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                 "intermediate_size": 256, "vocab_size": 128, "max_position_embeddings": 64},
    "llama": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "intermediate_size": 160, "vocab_size": 128, "max_position_embeddings": 64},
    "mistral": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 8,
                "intermediate_size": 160, "vocab_size": 128, "max_position_embeddings": 64},
    "mixtral": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 8,
                "intermediate_size": 96, "vocab_size": 128, "max_position_embeddings": 64},
    "qwen2": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
              "max_position_embeddings": 64},
    "qwen3": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
              "max_position_embeddings": 64},
    "gemma": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 1, "intermediate_size": 160, "vocab_size": 128,
              "max_position_embeddings": 64},
    # Phi-3's default padding token (32000) must be inside the vocabulary
    "phi3": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
             "intermediate_size": 160, "vocab_size": 128, "max_position_embeddings": 64,
             "pad_token_id": 0},
    "gemma2": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
               "num_key_value_heads": 1, "intermediate_size": 160, "vocab_size": 128,
               "max_position_embeddings": 64, "pad_token_id": 0},
    "gemma3_text": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 1, "intermediate_size": 160, "vocab_size": 128,
                    "max_position_embeddings": 64, "pad_token_id": 0},
    "granite": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                "intermediate_size": 160, "vocab_size": 128, "max_position_embeddings": 64,
                "pad_token_id": 0},
    "smollm3": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
                "max_position_embeddings": 64, "pad_token_id": 0},
    "qwen3_moe": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "moe_intermediate_size": 48, "num_experts": 4,
                  "num_experts_per_tok": 2, "vocab_size": 128, "max_position_embeddings": 64},
    "olmo2": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
              "max_position_embeddings": 64, "pad_token_id": 0},
    "bert": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
             "intermediate_size": 256, "vocab_size": 128, "max_position_embeddings": 64},
    "starcoder2": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "intermediate_size": 256, "vocab_size": 128,
                   "max_position_embeddings": 64},
    "gpt_bigcode": {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 128,
                    "n_positions": 64},
    "phi": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "intermediate_size": 256, "vocab_size": 128, "max_position_embeddings": 64},
    "gptj": {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 128, "n_positions": 64,
             "rotary_dim": 8},
    "falcon": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
               "vocab_size": 128, "max_position_embeddings": 64},
    "olmoe": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 48, "num_experts": 4,
              "num_experts_per_tok": 2, "vocab_size": 128, "max_position_embeddings": 64,
              "pad_token_id": 0},
    "qwen2_moe": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "moe_intermediate_size": 48, "num_experts": 4,
                  "num_experts_per_tok": 2, "shared_expert_intermediate_size": 96,
                  "vocab_size": 128, "max_position_embeddings": 64},
    "glm": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
            "vocab_size": 128, "max_position_embeddings": 64, "pad_token_id": 0},
    "glm4": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
             "vocab_size": 128, "max_position_embeddings": 64, "pad_token_id": 0},
    "roberta": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                "intermediate_size": 256, "vocab_size": 128, "max_position_embeddings": 66,
                "type_vocab_size": 1},
    "opt": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "ffn_dim": 96,
            "vocab_size": 128, "max_position_embeddings": 64},
    "gpt_oss": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 48,
                "num_local_experts": 4, "num_experts_per_tok": 2, "vocab_size": 128,
                "max_position_embeddings": 64},
    "olmo3": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
              "max_position_embeddings": 64, "pad_token_id": 0},
    "exaone4": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
                "max_position_embeddings": 64, "pad_token_id": 0},
    "seed_oss": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
                 "vocab_size": 128, "max_position_embeddings": 64, "pad_token_id": 0},
    "glm4_moe": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "intermediate_size": 160, "moe_intermediate_size": 48,
                 "n_routed_experts": 4, "num_experts_per_tok": 2, "vocab_size": 128,
                 "max_position_embeddings": 64, "pad_token_id": 0},
    "deepseek_v3": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                    "intermediate_size": 160, "moe_intermediate_size": 48, "n_routed_experts": 4,
                    "num_experts_per_tok": 2, "first_k_dense_replace": 1, "kv_lora_rank": 16,
                    "q_lora_rank": 24, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16,
                    "v_head_dim": 12, "n_group": 1, "topk_group": 1, "vocab_size": 128,
                    "max_position_embeddings": 64, "pad_token_id": 0},
    "deepseek_v2": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                    "intermediate_size": 160, "moe_intermediate_size": 48, "n_routed_experts": 4,
                    "num_experts_per_tok": 2, "first_k_dense_replace": 1, "kv_lora_rank": 16,
                    "q_lora_rank": 24, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16,
                    "v_head_dim": 12, "vocab_size": 128, "max_position_embeddings": 64,
                    "pad_token_id": 0},
    "cohere": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
               "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
               "max_position_embeddings": 64, "pad_token_id": 0},
    "cohere2": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
                "max_position_embeddings": 64, "pad_token_id": 0},
    "llama4_text": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 48,
                    "intermediate_size_mlp": 96, "num_local_experts": 4,
                    "num_experts_per_tok": 1, "vocab_size": 128, "max_position_embeddings": 64,
                    "pad_token_id": 0},
    "bloom": {"n_layer": 2, "hidden_size": 64, "n_head": 4, "vocab_size": 128},
    "ernie4_5": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
                 "vocab_size": 128, "max_position_embeddings": 64, "pad_token_id": 0},
    "stablelm": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                 "num_key_value_heads": 4, "intermediate_size": 160, "vocab_size": 128,
                 "max_position_embeddings": 64, "pad_token_id": 0},
    "olmo": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
             "intermediate_size": 160, "vocab_size": 128, "max_position_embeddings": 64,
             "pad_token_id": 0, "eos_token_id": 0},
    "mpt": {"n_layers": 2, "d_model": 64, "n_heads": 4, "vocab_size": 128, "max_seq_len": 64},
    "exaone": {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
               "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
               "max_position_embeddings": 64, "pad_token_id": 0, "eos_token_id": 0},
    "ministral": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
                  "max_position_embeddings": 64},
    "ministral3": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
                   "vocab_size": 128, "max_position_embeddings": 64, "pad_token_id": 0},
    "dots1": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 160, "moe_intermediate_size": 48,
              "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
              "first_k_dense_replace": 1, "vocab_size": 128, "max_position_embeddings": 64},
    "hunyuan_v1_dense": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                         "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
                         "vocab_size": 128, "max_position_embeddings": 64, "pad_token_id": 0,
                         "eos_token_id": 0},
    "helium": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
               "vocab_size": 128, "max_position_embeddings": 64, "pad_token_id": 0,
               "bos_token_id": 0, "eos_token_id": 0},
    "arcee": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
              "max_position_embeddings": 64, "bos_token_id": 0, "eos_token_id": 0},
    "jais2": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
              "max_position_embeddings": 64, "bos_token_id": 0, "eos_token_id": 0},
    "granitemoeshared": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                         "num_key_value_heads": 2, "intermediate_size": 48,
                         "num_local_experts": 4, "num_experts_per_tok": 2,
                         "shared_intermediate_size": 96, "vocab_size": 128,
                         "max_position_embeddings": 64},
    "internlm3": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
                  "vocab_size": 128, "max_position_embeddings": 64, "pad_token_id": 0,
                  "bos_token_id": 0, "eos_token_id": 0},
    "iquestcoder": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
                    "vocab_size": 128, "max_position_embeddings": 64, "bos_token_id": 0,
                    "eos_token_id": 0},
    "hyperclovax": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
                    "max_position_embeddings": 64, "bos_token_id": 0, "eos_token_id": 0},
    "minimax_m2": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 48,
                   "num_local_experts": 4, "num_experts_per_tok": 2, "vocab_size": 128,
                   "max_position_embeddings": 64, "bos_token_id": 0, "eos_token_id": 0},
    "youtu": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "intermediate_size": 160, "kv_lora_rank": 16, "q_lora_rank": 24,
              "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 12,
              "vocab_size": 128, "max_position_embeddings": 64, "bos_token_id": 0,
              "eos_token_id": 0},
    "solar_open": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 16, "moe_intermediate_size": 48,
                   "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
                   "vocab_size": 128, "max_position_embeddings": 64},
    "glm4_moe_lite": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                      "num_key_value_heads": 4, "intermediate_size": 160,
                      "moe_intermediate_size": 48, "n_routed_experts": 4, "n_shared_experts": 1,
                      "num_experts_per_tok": 2, "kv_lora_rank": 16, "q_lora_rank": 24,
                      "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 12,
                      "vocab_size": 128, "max_position_embeddings": 64},
    "codegen": {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 128, "n_positions": 64,
                "rotary_dim": 8, "bos_token_id": 0, "eos_token_id": 0},
    "vaultgemma": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                   "num_key_value_heads": 1, "head_dim": 16, "intermediate_size": 160,
                   "vocab_size": 128, "max_position_embeddings": 64, "pad_token_id": 0,
                   "bos_token_id": 0, "eos_token_id": 0, "query_pre_attn_scalar": 16},
    "flex_olmo": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "intermediate_size": 48, "num_experts": 4,
                  "num_experts_per_tok": 2, "vocab_size": 128, "max_position_embeddings": 64,
                  "pad_token_id": 0, "eos_token_id": 0},
    "exaone_moe": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "intermediate_size": 160,
                   "moe_intermediate_size": 48, "num_experts": 4, "num_experts_per_tok": 2,
                   "vocab_size": 128, "max_position_embeddings": 64, "pad_token_id": 0,
                   "bos_token_id": 0, "eos_token_id": 0},
    "xglm": {"num_layers": 2, "d_model": 64, "attention_heads": 4, "ffn_dim": 160,
             "vocab_size": 128, "max_position_embeddings": 64, "pad_token_id": 0,
             "bos_token_id": 0, "eos_token_id": 0, "decoder_start_token_id": 0},
    "biogpt": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
               "intermediate_size": 160, "vocab_size": 128, "max_position_embeddings": 64,
               "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0},
    "bitnet": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
               "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
               "max_position_embeddings": 64, "bos_token_id": 0, "eos_token_id": 0},
    "ernie4_5_moe": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "intermediate_size": 160,
                     "moe_intermediate_size": 48, "moe_num_experts": 4, "moe_k": 2,
                     "moe_num_shared_experts": 1, "vocab_size": 128,
                     "max_position_embeddings": 64},
    "persimmon": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                  "intermediate_size": 160, "vocab_size": 128, "max_position_embeddings": 64,
                  "bos_token_id": 0, "eos_token_id": 0},
    "nanochat": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
                 "max_position_embeddings": 64, "bos_token_id": 0, "eos_token_id": 0,
                 "pad_token_id": 0},
    "dbrx": {"n_layers": 2, "d_model": 64, "n_heads": 4, "vocab_size": 128, "max_seq_len": 64,
             "attn_config": {"kv_n_heads": 2},
             "ffn_config": {"ffn_hidden_size": 48, "moe_num_experts": 4, "moe_top_k": 2}},
    "nemotron": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
                 "max_position_embeddings": 64, "pad_token_id": 0, "bos_token_id": 0,
                 "eos_token_id": 0},
    "granitemoe": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "intermediate_size": 48, "num_local_experts": 4,
                   "num_experts_per_tok": 2, "vocab_size": 128, "max_position_embeddings": 64,
                   "pad_token_id": 0},
    "phimoe": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
               "num_key_value_heads": 2, "intermediate_size": 48, "num_local_experts": 4,
               "num_experts_per_tok": 2, "vocab_size": 128, "max_position_embeddings": 64,
               "pad_token_id": 0},
    "cwm": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
            "vocab_size": 128, "max_position_embeddings": 64},
    "granite_swa": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
                    "max_position_embeddings": 64},
    "flint": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96,
              "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
              "num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 128,
              "max_position_embeddings": 64},
    "granitemoe_swa": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                       "intermediate_size": 96, "vocab_size": 128,
                       "max_position_embeddings": 64, "num_local_experts": 4,
                       "num_experts_per_tok": 2, "shared_intermediate_size": 48},
    "hy_v3": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
              "moe_intermediate_size": 48, "num_experts": 4, "num_experts_per_tok": 2,
              "vocab_size": 128, "max_position_embeddings": 64},
    "mellum": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
               "moe_intermediate_size": 48, "num_experts": 4, "num_experts_per_tok": 2,
               "vocab_size": 128, "max_position_embeddings": 64},
    "ctrl": {"n_layer": 2, "n_embd": 64, "n_head": 4, "dff": 96, "vocab_size": 128,
             "n_positions": 64},
    "sarvam_moe": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
                   "moe_intermediate_size": 48, "n_routed_experts": 4,
                   "num_experts_per_tok": 2, "vocab_size": 128, "max_position_embeddings": 64},
    "sarvam_mla": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                   "intermediate_size": 160, "moe_intermediate_size": 48, "n_routed_experts": 4,
                   "num_experts_per_tok": 2, "kv_lora_rank": 16, "qk_rope_head_dim": 8,
                   "qk_nope_head_dim": 16, "v_head_dim": 12, "vocab_size": 128,
                   "max_position_embeddings": 64},
    "gpt-sw3": {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 128, "n_positions": 64},
    "xlm-roberta": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                    "intermediate_size": 256, "vocab_size": 128, "max_position_embeddings": 66,
                    "type_vocab_size": 1},
    "ernie": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "intermediate_size": 256, "vocab_size": 128, "max_position_embeddings": 64},
    "camembert": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                  "intermediate_size": 256, "vocab_size": 128, "max_position_embeddings": 66},
    "data2vec-text": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                      "intermediate_size": 256, "vocab_size": 128,
                      "max_position_embeddings": 66},
    "minicpm3": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                 "intermediate_size": 160, "kv_lora_rank": 16, "q_lora_rank": 24,
                 "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "vocab_size": 128,
                 "max_position_embeddings": 64},
    "cohere2_moe": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 48,
                    "num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 128,
                    "max_position_embeddings": 64},
    "afmoe": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 160,
              "moe_intermediate_size": 48, "num_experts": 4, "num_experts_per_tok": 2,
              "vocab_size": 128, "max_position_embeddings": 64},
    "kolibri1": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 16, "moe_intermediate_size": 48,
                 "num_local_experts": 4, "num_experts_per_tok": 2,
                 "shared_expert_intermediate_size": 40, "vocab_size": 128,
                 "max_position_embeddings": 64},
    "apertus": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
                "max_position_embeddings": 64},
    "apertus1p5_text": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
                        "max_position_embeddings": 64, "output_vocab_size": 96},
    "hunyuan_v1_moe": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                       "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 48,
                       "num_experts": 4, "moe_topk": 2, "vocab_size": 128,
                       "max_position_embeddings": 64},
    "openai-gpt": {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 128,
                   "n_positions": 64},
    "diffllama": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 128,
                  "max_position_embeddings": 64},
    "deepseek_v32": DSA_SMALL,
    "glm_moe_dsa": DSA_SMALL,
    "bert-generation": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                        "intermediate_size": 128, "vocab_size": 128,
                        "max_position_embeddings": 64},
    "qwen3_next": dict(GDN_SMALL, num_experts=4, num_experts_per_tok=2,
                       moe_intermediate_size=32, shared_expert_intermediate_size=48),
    "qwen3_5_text": GDN_SMALL,
    "qwen3_5_moe_text": dict(GDN_SMALL, num_experts=4, num_experts_per_tok=2,
                             moe_intermediate_size=32, shared_expert_intermediate_size=48),
    "granitemoehybrid": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                         "num_key_value_heads": 2, "intermediate_size": 48,
                         "shared_intermediate_size": 80, "num_local_experts": 4,
                         "num_experts_per_tok": 2, "vocab_size": 128,
                         "max_position_embeddings": 64, "mamba_n_heads": 8, "mamba_d_state": 16,
                         "layer_types": ["mamba", "attention", "mamba"]},
    "falcon_h1": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "intermediate_size": 80, "vocab_size": 128,
                  "max_position_embeddings": 64, "mamba_d_ssm": 96, "mamba_n_heads": 8,
                  "mamba_d_state": 16},
    # MiMo-V2-Flash: full and sliding attention (twice the key/value heads, sinks), narrower
    # values, a dense block then experts
    "mimo_v2_flash": {"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 8,
                      "num_key_value_heads": 2, "head_dim": 12, "v_head_dim": 8,
                      "intermediate_size": 96, "moe_intermediate_size": 32,
                      "n_routed_experts": 4, "num_experts_per_tok": 2, "vocab_size": 128,
                      "max_position_embeddings": 64,
                      "layer_types": ["full_attention", "sliding_attention",
                                      "sliding_attention", "full_attention"]},
    # Gemma 3n's language model: AltUp over three copies, LAuReL, per-layer embeddings, the last
    # two blocks reusing earlier keys and values
    "gemma3n_text": {"num_hidden_layers": 5, "hidden_size": 64, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96,
                     "vocab_size": 128, "vocab_size_per_layer_input": 100,
                     "hidden_size_per_layer_input": 8, "max_position_embeddings": 64,
                     "altup_num_inputs": 3, "laurel_rank": 4, "num_kv_shared_layers": 2,
                     "layer_types": ["sliding_attention", "full_attention", "sliding_attention",
                                     "sliding_attention", "full_attention"]},
    # LongCat-Flash: two layers of two blocks, latent attention, experts and zero experts
    # beside the first block's MLP
    "longcat_flash": {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                      "ffn_hidden_size": 96, "expert_ffn_hidden_size": 32, "n_routed_experts": 4,
                      "zero_expert_num": 2, "moe_topk": 3, "kv_lora_rank": 16, "q_lora_rank": 24,
                      "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16,
                      "vocab_size": 128, "max_position_embeddings": 64},
    # Laguna: heads gated, a dense block then experts beside a shared MLP
    "laguna": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96,
               "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
               "num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 128,
               "max_position_embeddings": 64},
    # MiniMax-M3's language model: a sparse-attention block (its indexer) among full ones, a
    # dense block among experts beside a shared MLP
    "minimax_m3_vl_text": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                           "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 32,
                           "dense_intermediate_size": 96, "shared_intermediate_size": 48,
                           "num_local_experts": 4, "num_experts_per_tok": 2,
                           "index_n_heads": 2, "index_head_dim": 8, "vocab_size": 128,
                           "max_position_embeddings": 64,
                           "layer_types": ["full_attention", "minimax_m3_sparse",
                                           "full_attention"],
                           "mlp_layer_types": ["dense", "sparse", "sparse"]},
    # Aria's language model: experts in every block beside shared ones of their width
    "aria_text": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                  "intermediate_size": 48, "moe_num_experts": 4, "moe_topk": 2,
                  "moe_num_shared_experts": 1, "vocab_size": 128,
                  "max_position_embeddings": 64},
    # A.X K1: DeepSeek-V3's blocks, a norm after the experts
    "axk1": {k: v for k, v in DSA_SMALL.items()
             if k not in ("index_n_heads", "index_head_dim", "first_k_dense_replace")},
    # LaraMini: Gated DeltaNet beside full and sliding attention, experts and a shared MLP
    "lara_mini": dict(GDN_SMALL, num_hidden_layers=5, num_experts=4, num_experts_per_tok=2,
                      moe_intermediate_size=32, shared_expert_intermediate_size=48,
                      full_attention_interval=None),
    # LFM3: short convolutions and attention (its own pattern), sandwich norms, a gate a head
    "lfm3": {"num_hidden_layers": 6, "hidden_size": 64, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96,
             "vocab_size": 128, "max_position_embeddings": 64, "conv_L_cache": 3,
             "pad_token_id": 0},
    # Gemma 4's language model: sliding blocks and a global one (its own head width), per-layer
    # embeddings
    "gemma4_text": {"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "head_dim": 16, "global_head_dim": 32,
                    "intermediate_size": 96, "vocab_size": 128, "max_position_embeddings": 64,
                    "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 64,
                    "layer_types": ["sliding_attention", "full_attention", "sliding_attention",
                                    "full_attention"]},
    # Nemotron-H: blocks of one part each (Mamba-2, MLP, attention, experts, Mamba-2, MLP)
    "nemotron_h": {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                   "head_dim": 16, "intermediate_size": 96, "mamba_num_heads": 8,
                   "mamba_head_dim": 16, "n_groups": 2, "ssm_state_size": 8,
                   "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                   "moe_shared_expert_intermediate_size": 48, "vocab_size": 128,
                   "max_position_embeddings": 64, "hybrid_override_pattern": "M-*EM-"},
    "bamba": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 80, "vocab_size": 128,
              "max_position_embeddings": 64, "mamba_n_heads": 8, "mamba_d_state": 16,
              "attn_layer_indices": [1]},
    "lfm2": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 128,
             "max_position_embeddings": 64, "block_multiple_of": 16, "full_attn_idxs": [1]},
    "lfm2_moe": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "intermediate_size": 96, "moe_intermediate_size": 32,
                 "num_experts": 4, "num_experts_per_tok": 2, "num_dense_layers": 1,
                 "vocab_size": 128, "max_position_embeddings": 64,
                 "layer_types": ["conv", "full_attention", "conv"]},
    "minimax": {"num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
                "num_key_value_heads": 2, "intermediate_size": 32, "num_local_experts": 4,
                "vocab_size": 128, "max_position_embeddings": 64},
    "mamba2": {"num_hidden_layers": 2, "hidden_size": 64, "num_heads": 8, "head_dim": 16,
               "n_groups": 2, "state_size": 8, "vocab_size": 128},
    "mamba": {"num_hidden_layers": 2, "hidden_size": 64, "state_size": 8, "vocab_size": 128},
    "falcon_mamba": {"num_hidden_layers": 2, "hidden_size": 64, "state_size": 8,
                     "vocab_size": 128},
    "jamba": {"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 48, "num_experts": 4,
              "vocab_size": 128, "max_position_embeddings": 64, "attn_layer_period": 2,
              "attn_layer_offset": 1, "mamba_d_state": 8},
    "kimi_linear": {"num_hidden_layers": 5, "hidden_size": 64, "num_attention_heads": 4,
                    "intermediate_size": 96, "moe_intermediate_size": 32, "num_local_experts": 4,
                    "num_experts_per_tok": 2, "kv_lora_rank": 16, "qk_rope_head_dim": 8,
                    "qk_nope_head_dim": 8, "v_head_dim": 8, "vocab_size": 128,
                    "max_position_embeddings": 64, "linear_num_heads": 4, "linear_head_dim": 16,
                    "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0},
    "bailing_hybrid": {"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
                       "head_dim": 16, "intermediate_size": 96, "moe_intermediate_size": 32,
                       "num_local_experts": 4, "num_experts_per_tok": 2, "n_group": 1,
                       "topk_group": 1, "kv_lora_rank": 16, "qk_rope_head_dim": 8,
                       "qk_nope_head_dim": 8, "v_head_dim": 8, "vocab_size": 128,
                       "max_position_embeddings": 64, "layer_group_size": 2, "pad_token_id": 0,
                       "eos_token_id": 0},
    "olmo_hybrid": {"num_hidden_layers": 5, "hidden_size": 64, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 128,
                    "max_position_embeddings": 64, "pad_token_id": 0, "eos_token_id": 0},
}


# the encoders, counted as transformers' AutoModel builds them (no LM head)
# multimodal files read whole that AutoModelForCausalLM does not build: their
# ForConditionalGeneration, as a user fine-tuning on text loads it
IMAGE_TEXT = ("mistral3", "llava", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe",
              "llava_next", "llava_onevision", "paligemma", "idefics3", "smolvlm", "internvl",
              "mllama", "glm4v", "glm4v_moe", "aya_vision")
# small towers of the kinds the LLaVA family reads
CLIP = {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "patch_size": 4, "image_size": 16}
SIGLIP = {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 48,
          "num_hidden_layers": 2, "num_attention_heads": 4, "patch_size": 4, "image_size": 16}
PIXTRAL = {"model_type": "pixtral", "hidden_size": 32, "intermediate_size": 48,
           "num_hidden_layers": 2, "num_attention_heads": 4, "patch_size": 4, "image_size": 16,
           "head_dim": 8}
ENCODERS = ("bert", "roberta", "xlm-roberta", "camembert", "data2vec-text", "ernie",
            "bert-generation")


def variants(kind):
    """(what, config.json text) of KIND: its defaults, and small models with one thing each."""
    base = dict(SMALL[kind], model_type=kind)
    out = [("defaults", {"model_type": kind}), ("small", base)]
    for key in list(SMALL[kind]):
        if key not in ("vocab_size", "pad_token_id"):
            out.append(("without " + key, {k: v for k, v in base.items() if k != key}))
    out.append(("untied", dict(base, tie_word_embeddings=False)))
    out.append(("tied", dict(base, tie_word_embeddings=True)))
    for bias in ("attention_bias", "mlp_bias"):
        out.append((bias, dict(base, **{bias: True})))
        out.append(("no " + bias, dict(base, **{bias: False})))
    if kind in ENCODERS:  # the token types' table
        out.append(("one token type", dict(base, type_vocab_size=1)))
        out.append(("three token types", dict(base, type_vocab_size=3)))
    if kind == "ernie":  # its task embeddings, a second table beside the token types'
        out.append(("use_task_id", dict(base, use_task_id=True)))
        out.append(("use_task_id, 5 task types",
                    dict(base, use_task_id=True, task_type_vocab_size=5)))
        out.append(("use_task_id, one token type",
                    dict(base, use_task_id=True, type_vocab_size=1)))
    if kind not in ("gpt2", "gpt-sw3") + ENCODERS:
        out.append(("head_dim 32", dict(base, head_dim=32)))
        out.append(("head_dim null", dict(base, head_dim=None)))
        out.append(("kv heads null", dict(base, num_key_value_heads=None)))
        out.append(("kv heads 2", dict(base, num_key_value_heads=2)))
    if kind == "starcoder2":
        out.append(("use_bias false", dict(base, use_bias=False)))
    if kind == "opt":  # its switches; OPT-350m's post-norm blocks and projected embeddings
        for extra in ({"enable_bias": False}, {"activation_function": "gelu_new"},
                      {"word_embed_proj_dim": 64}, {"word_embed_proj_dim": None},
                      {"layer_norm_elementwise_affine": False},
                      {"word_embed_proj_dim": 32}, {"do_layer_norm_before": False},
                      {"_remove_final_layer_norm": True},
                      {"_remove_final_layer_norm": True, "layer_norm_elementwise_affine": False}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "falcon":  # its block's variants
        for extra in ({"multi_query": False}, {"bias": True}, {"parallel_attn": False},
                      {"alibi": True},
                      {"new_decoder_architecture": True, "num_kv_heads": 2},
                      {"new_decoder_architecture": True, "num_kv_heads": 2,
                       "num_ln_in_parallel_attn": 1},
                      {"ffn_hidden_size": 96}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "gpt_bigcode":
        out.append(("multi_query false", dict(base, multi_query=False)))
        out.append(("n_inner 96", dict(base, n_inner=96)))
    if kind == "gpt2":
        out.append(("n_inner null", dict(base, n_inner=None)))
        out.append(("n_inner 96", dict(base, n_inner=96)))
        out.append(("common names", {"model_type": "gpt2", "num_hidden_layers": 3,
                                     "hidden_size": 32, "num_attention_heads": 2,
                                     "vocab_size": 100}))
    if kind == "mixtral":
        out.append(("4 experts", dict(base, num_local_experts=4, num_experts_per_tok=1)))
    if kind == "gpt_oss":  # its experts under their other name; its attention without biases
        out.append(("num_experts", dict(base, num_experts=8)))
        out.append(("attention_bias false", dict(base, attention_bias=False)))
    if kind == "seed_oss":  # o's bias a member of its own
        out.append(("attention_out_bias", dict(base, attention_out_bias=True)))
        out.append(("attention_out_bias, no attention_bias",
                    dict(base, attention_out_bias=True, attention_bias=False)))
    if kind == "bloom":  # its width's old name, which wins; an MLP 4 x hidden whatever n_inner says
        out.append(("n_embed", dict(base, n_embed=32)))
        out.append(("n_embed null", dict(base, n_embed=None)))
        out.append(("n_inner", dict(base, n_inner=96)))
        out.append(("common names", {"model_type": "bloom", "num_hidden_layers": 3,
                                     "num_attention_heads": 2, "hidden_size": 32,
                                     "vocab_size": 100}))
    if kind == "glm4_moe":  # its dense blocks first, its ungated shared experts, its norms
        for extra in ({"first_k_dense_replace": 0}, {"first_k_dense_replace": 2},
                      {"first_k_dense_replace": 7}, {"first_k_dense_replace": None},
                      {"n_shared_experts": 0}, {"n_shared_experts": 2},
                      {"num_local_experts": 8}, {"use_qk_norm": True},
                      {"n_routed_experts": 8, "num_experts_per_tok": 1}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "llama4_text":  # weightless query and key norms; Maverick's interleaved blocks
        for extra in ({"use_qk_norm": False}, {"num_experts_per_tok": 2},
                      {"interleave_moe_layer_step": 2}, {"interleave_moe_layer_step": 3},
                      {"interleave_moe_layer_step": 2, "intermediate_size_mlp": 48},
                      {"interleave_moe_layer_step": 2, "intermediate_size_mlp": None},
                      {"moe_layers": [1]}, {"moe_layers": [0, 9]}, {"moe_layers": []},
                      {"moe_layers": None, "interleave_moe_layer_step": 2}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "cohere":  # its query and key norms, weights per head
        out.append(("use_qk_norm", dict(base, use_qk_norm=True)))
    if kind == "deepseek_v2":  # V3's block, its experts' other name
        for extra in ({"q_lora_rank": None}, {"num_experts": 8}, {"n_shared_experts": 0},
                      {"num_experts_per_tok": None}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "deepseek_v3":  # latent attention's ranks and widths; the dense blocks first
        for extra in ({"q_lora_rank": None}, {"kv_lora_rank": 32}, {"qk_rope_head_dim": 4},
                      {"qk_nope_head_dim": 8}, {"v_head_dim": 20}, {"v_head_dim": None},
                      {"first_k_dense_replace": 0}, {"first_k_dense_replace": 9},
                      {"n_shared_experts": 2}, {"num_local_experts": 8},
                      {"num_key_value_heads": 1}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "stablelm":  # its switches: q, k, v biases, a parallel block, per-head norms
        for extra in ({"use_qkv_bias": True}, {"use_parallel_residual": True},
                      {"qk_layernorm": True}, {"qk_layernorm": True, "num_key_value_heads": 2},
                      {"partial_rotary_factor": 0.5}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "mpt":  # what transformers does not read: the MLP stays 4 x d_model, no biases
        for extra in ({"expansion_ratio": 2}, {"no_bias": False},
                      {"attn_config": {"alibi": True, "attn_pdrop": 0}},
                      {"num_hidden_layers": 3, "hidden_size": 32, "num_attention_heads": 2}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "dbrx":  # its nested sizes, each left out, and the objects left out
        for outer, inner in (("attn_config", "kv_n_heads"), ("ffn_config", "ffn_hidden_size"),
                             ("ffn_config", "moe_num_experts"), ("ffn_config", "moe_top_k")):
            nested = {k: v for k, v in base[outer].items() if k != inner}
            out.append(("without %s.%s" % (outer, inner), dict(base, **{outer: nested})))
        out.append(("8 experts, top 1", dict(base, ffn_config={"ffn_hidden_size": 32,
                                                               "moe_num_experts": 8,
                                                               "moe_top_k": 1})))
    if kind == "dots1":  # its dense blocks first, its shared experts
        for extra in ({"first_k_dense_replace": 0}, {"first_k_dense_replace": 5},
                      {"n_shared_experts": 0}, {"n_shared_experts": 2},
                      {"num_local_experts": 8}, {"num_experts_per_tok": None}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "nanochat":  # the logits' cap off; an attention cap it does not read
        for extra in ({"final_logit_softcapping": None}, {"attn_logit_softcapping": 50.0}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "granitemoe_swa":  # no shared expert, or none said; one expert a token
        for extra in ({"shared_intermediate_size": 0}, {"shared_intermediate_size": None},
                      {"num_experts_per_tok": 1}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "hy_v3":  # the MLPs by their list; shared experts; the experts' other name
        for extra in ({"mlp_layer_types": ["dense", "dense", "sparse"]},
                      {"mlp_layer_types": ["sparse", "sparse", "sparse"]},
                      {"mlp_layer_types": ["sparse", "dense", "sparse"]},
                      {"num_shared_experts": 0}, {"num_shared_experts": 2},
                      {"num_shared_experts": None}, {"num_local_experts": 8},
                      {"num_experts_per_tok": None}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "mellum":  # dense blocks first by the list; the experts' other name; its MTP
        for extra in ({"mlp_layer_types": ["dense", "sparse", "sparse"]},
                      {"mlp_layer_types": ["dense", "dense", "dense"]},
                      {"num_local_experts": 8}, {"num_experts": 8, "num_local_experts": 2},
                      {"num_mtp_layers": 1}, {"num_mtp_layers": 0}, {"num_mtp_layers": 2},
                      {"num_nextn_predict_layers": 2}, {"num_experts_per_tok": 1}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind in ("deepseek_v32", "glm_moe_dsa"):  # the indexer; the dense blocks
        for extra in ({"index_n_heads": 2, "index_head_dim": 32}, {"q_lora_rank": None},
                      {"mlp_layer_types": ["dense", "dense", "sparse"]},
                      {"mlp_layer_types": ["sparse", "dense", "sparse"]},
                      {"first_k_dense_replace": 0}, {"num_local_experts": 8},
                      {"n_shared_experts": 0}, {"head_dim": 32}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "glm_moe_dsa":  # blocks that share the last one's choice of keys
        for extra in ({"indexer_types": ["full", "full", "full"]},
                      {"indexer_types": ["full", "shared", "full"]},
                      {"index_topk_pattern": "FFF"}, {"index_topk_pattern": "FSF"},
                      {"index_topk_freq": 2}, {"index_topk_freq": 2, "index_skip_topk_offset": 9}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"):  # linear and softmax blocks
        for extra in ({"layer_types": ["full_attention", "linear_attention", "full_attention",
                                       "linear_attention"]},
                      {"layer_types": ["mamba", "attention", "linear_attention", "attention"]},
                      {"layer_types": ["full_attention"] * 4},
                      {"layer_types": ["linear_attention"] * 4},
                      {"full_attention_interval": 2}, {"full_attention_interval": 1},
                      {"linear_num_key_heads": 1, "linear_num_value_heads": 3},
                      {"linear_key_head_dim": 24, "linear_value_head_dim": 8},
                      {"linear_conv_kernel_dim": 2}, {"head_dim": None}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "granitemoehybrid":  # Mamba-2's sizes; no experts: the shared MLP alone
        for extra in ({"num_local_experts": 0}, {"mamba_n_groups": 2}, {"mamba_n_groups": 3},
                      {"mamba_d_head": 16}, {"mamba_d_head": 32}, {"mamba_d_head": "auto"},
                      {"mamba_expand": 1}, {"mamba_d_conv": 2}, {"mamba_conv_bias": False},
                      {"mamba_proj_bias": True}, {"mamba_n_heads": 6},
                      {"layer_types": None}, {"layer_types": ["attention"] * 3},
                      {"layer_types": ["linear_attention", "full_attention", "mamba"]}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "falcon_h1":  # Mamba-2 beside attention in every block, its own widths
        for extra in ({"mamba_d_ssm": None}, {"mamba_d_ssm": None, "mamba_expand": 3},
                      {"mamba_d_ssm": 64}, {"mamba_d_head": 12}, {"mamba_d_head": 8},
                      {"mamba_d_head": "auto"}, {"mamba_n_heads": 5}, {"mamba_n_groups": 2},
                      {"mamba_n_groups": 3}, {"mamba_rms_norm": True},
                      {"mamba_proj_bias": True}, {"projectors_bias": True},
                      {"mamba_conv_bias": False}, {"mamba_d_conv": 3}, {"head_dim": 24},
                      {"mamba_norm_before_gate": False},
                      {"attention_in_multiplier": 0.5,
                       "ssm_multipliers": [1.0, 2.0, 3.0, 4.0, 5.0]}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "mimo_v2_flash":  # its blocks' kinds and widths; its MLPs
        for extra in ({"layer_types": None}, {"num_hidden_layers": 12, "layer_types": None},
                      {"layer_types": ["sliding_attention"] * 4},
                      {"layer_types": ["full_attention"] * 4}, {"v_head_dim": 12},
                      {"v_head_dim": None}, {"mlp_layer_types": ["sparse"] * 4},
                      {"mlp_layer_types": ["dense", "dense", "sparse", "sparse"]},
                      {"attention_bias": True}, {"num_key_value_heads": 4},
                      {"num_local_experts": 6}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "axk1":  # its MLPs by list or legacy members; its queries' rank required
        for extra in ({"mlp_layer_types": ["dense", "sparse", "sparse"]},
                      {"mlp_layer_types": ["sparse"] * 3}, {"mlp_layer_types": ["dense"] * 3},
                      {"first_k_dense_replace": 0}, {"first_k_dense_replace": 2},
                      {"moe_layer_freq": 2}, {"first_k_dense_replace": 3},
                      {"q_lora_rank": None}, {"n_shared_experts": 0}, {"num_local_experts": 6},
                      {"attention_bias": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "lara_mini":  # its blocks' kinds; Gated DeltaNet's heads; the shared MLP
        for extra in ({"layer_types": ["linear_attention", "sliding_attention", "full_attention",
                                       "linear_attention", "attention"]},
                      {"layer_types": ["linear_attention"] * 5}, {"num_hidden_layers": 12},
                      {"linear_num_key_heads": 2, "linear_num_value_heads": 6},
                      {"shared_expert_intermediate_size": 0}, {"attention_bias": True},
                      {"full_attention_interval": 2}, {"head_dim": 32}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "lfm3":  # its blocks' kinds, norms, gate and convolution
        for extra in ({"layer_types": None}, {"layer_types": ["conv"] * 6},
                      {"layer_types": ["conv", "full_attention", "sliding_attention", "conv",
                                       "attention", "conv"]},
                      {"layer_types": ["conv"] * 5},
                      {"use_sandwich_norm": False}, {"use_attention_gate": False},
                      {"conv_bias": True}, {"conv_L_cache": 5}, {"tie_embedding": False},
                      {"full_attn_idxs": [0, 1]}, {"num_hidden_layers": 9},
                      {"block_auto_adjust_ff_dim": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "gemma4_text":  # global blocks, shared keys and values, per-layer inputs, experts
        moe = {"enable_moe_block": True, "num_experts": 4, "top_k_experts": 2,
               "moe_intermediate_size": 32}
        for extra in ({"layer_types": None}, {"num_hidden_layers": 12, "layer_types": None},
                      {"layer_types": ["sliding_attention"] * 4},
                      {"layer_types": ["full_attention", "attention", "sliding_attention",
                                       "full_attention"]},
                      {"layer_types": ["sliding_attention", "chunked_attention",
                                       "sliding_attention", "full_attention"]},
                      {"layer_types": ["sliding_attention", "full_attention"]},
                      {"global_head_dim": 16}, {"global_head_dim": None},
                      {"attention_k_eq_v": True}, {"attention_k_eq_v": True,
                                                   "num_global_key_value_heads": 1},
                      {"num_global_key_value_heads": 1}, {"num_kv_shared_layers": 2},
                      {"num_kv_shared_layers": 4}, {"num_kv_shared_layers": 3},
                      {"num_kv_shared_layers": 5},
                      {"num_kv_shared_layers": 2, "use_double_wide_mlp": True},
                      {"use_double_wide_mlp": True}, {"hidden_size_per_layer_input": 0},
                      {"hidden_size_per_layer_input": None}, {"vocab_size_per_layer_input": 32},
                      moe, dict(moe, top_k_experts=None), dict(moe, num_experts=1),
                      dict(moe, num_kv_shared_layers=2, use_double_wide_mlp=True),
                      dict(moe, num_kv_shared_layers=2, attention_k_eq_v=True),
                      {"per_layer_config": {"1": {"head_dim": 32}}},
                      {"final_logit_softcapping": 30.0}, {"use_bidirectional_attention": "all"}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "nemotron_h":  # its blocks' parts by letters or names; Mamba-2's; experts
        for extra in ({"hybrid_override_pattern": "M*-"}, {"hybrid_override_pattern": "MMMM"},
                      {"hybrid_override_pattern": "E*"}, {"hybrid_override_pattern": "-"},
                      {"hybrid_override_pattern": "*E-E"}, {"hybrid_override_pattern": "M*X"},
                      {"hybrid_override_pattern": None},
                      {"layers_block_type": ["mamba", "attention", "mlp", "moe"]},
                      {"layers_block_type": ["linear_attention", "full_attention"]},
                      {"layers_block_type": ["mlp"], "layer_types": ["linear_attention", "moe"]},
                      {"layers_block_type": None}, {"layers_block_type": ["mamba", "conv"]},
                      {"n_groups": 4}, {"mamba_n_groups": 4}, {"n_groups": 3},
                      {"conv_kernel": 3}, {"mamba_d_conv": 2}, {"use_conv_bias": False},
                      {"mamba_conv_bias": False}, {"use_bias": True}, {"mamba_proj_bias": True},
                      {"mamba_head_dim": 8}, {"mamba_num_heads": 4}, {"ssm_state_size": 16},
                      {"moe_latent_size": 24}, {"moe_latent_size": None},
                      {"moe_shared_expert_intermediate_size": 0}, {"num_local_experts": 6},
                      {"n_routed_experts": 1}, {"num_experts_per_tok": 3},
                      {"mlp_bias": True, "hybrid_override_pattern": "M-*"},
                      {"mlp_hidden_act": "silu"}, {"num_nextn_predict_layers": 1},
                      {"head_dim": 32}, {"num_key_value_heads": 4}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "bamba":  # Mamba-2 but in the blocks of attention it lists
        for extra in ({"attn_layer_indices": None}, {"attn_layer_indices": [0, 2, 7]},
                      {"attn_layer_indices": []}, {"mamba_n_groups": 2},
                      {"mamba_d_head": 16}, {"mamba_d_head": 8}, {"mamba_expand": 1},
                      {"mamba_proj_bias": True}, {"mamba_conv_bias": False},
                      {"mlp_bias": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "lfm2":  # short convolutions but in the blocks of attention; its MLP's width
        for extra in ({"full_attn_idxs": None}, {"full_attn_idxs": [0, 2, 9]},
                      {"full_attn_idxs": []}, {"layer_types": ["conv", "conv", "full_attention"]},
                      {"layer_types": ["sliding_attention", "conv", "conv"]},
                      {"conv_L_cache": 5}, {"conv_bias": True}, {"block_ff_dim": 200},
                      {"block_auto_adjust_ff_dim": False}, {"block_ffn_dim_multiplier": 1.3}, {"block_multiple_of": 256},
                      {"tie_embedding": False}, {"head_dim": 32}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "lfm2_moe":  # experts after its dense blocks; its blocks' kinds required
        for extra in ({"num_dense_layers": 0}, {"num_dense_layers": 3}, {"conv_bias": True},
                      {"layer_types": None}, {"tie_embedding": False}, {"block_ff_dim": 40},
                      {"layer_types": ["full_attention", "full_attention", "conv"]}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "minimax":  # lightning attention in every second block, or where it says
        for extra in ({"layer_types": ["linear_attention"] * 3},
                      {"layer_types": ["full_attention"] * 3},
                      {"layer_types": ["linear_attention", "linear_attention", "full_attention"]},
                      {"head_dim": 32}, {"head_dim": None}, {"num_hidden_layers": 8}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "mamba2":  # its mixer's members without the hybrids' prefix; no MLP
        for extra in ({"use_bias": True}, {"use_conv_bias": False}, {"n_groups": 8},
                      {"n_groups": 3}, {"state_size": 32}, {"conv_kernel": 2},
                      {"expand": 1, "head_dim": 8}, {"head_dim": 8}, {"num_heads": 4},
                      {"intermediate_size": 10}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind in ("mamba", "falcon_mamba"):  # Mamba-1's mixer in every block; no MLP
        for extra in ({"use_bias": True}, {"use_conv_bias": False}, {"expand": 3},
                      {"state_size": 4}, {"conv_kernel": 2}, {"time_step_rank": 7},
                      {"time_step_rank": "auto"}, {"hidden_size": 72}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "jamba":  # attention and experts by their periods and offsets; Mamba-1's norms
        for extra in ({"attn_layer_period": 8, "attn_layer_offset": 4},
                      {"attn_layer_offset": 0}, {"expert_layer_period": 1,
                                                  "expert_layer_offset": 0},
                      {"expert_layer_offset": 0}, {"expert_layer_period": 3},
                      {"num_experts": 1}, {"mamba_dt_rank": 6}, {"mamba_expand": 3},
                      {"mamba_conv_bias": False}, {"mamba_proj_bias": True},
                      {"mamba_d_conv": 2}, {"attn_layer_offset": 2}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "kimi_linear":  # KDA's blocks and sizes, the checkpoints' sub-object winning
        for extra in ({"linear_attn_config": {"num_heads": 2, "head_dim": 8,
                                              "short_conv_kernel_size": 3}},
                      {"linear_attn_config": {"full_attn_layers": [1, 5],
                                              "kda_layers": [2, 3, 4]}},
                      {"linear_attn_config": {"full_attn_layers": [2]}},
                      {"layer_types": ["full_attention"] + ["linear_attention"] * 4},
                      {"linear_conv_kernel_dim": 2}, {"mlp_layer_types": ["sparse"] * 5},
                      {"first_k_dense_replace": 3}, {"n_shared_experts": 2},
                      {"q_lora_rank": 24}, {"num_hidden_layers": 9}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "bailing_hybrid":  # KDA's gates full rank; a gate a head on its attention
        for extra in ({"layer_group_size": 3}, {"layer_types": ["full_attention"] * 4},
                      {"short_conv_kernel_size": 2}, {"head_dim": 8},
                      {"first_k_dense_replace": 0}, {"n_shared_experts": 2}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "olmo_hybrid":  # its linear attention's sizes from the attention's by default
        for extra in ({"linear_num_key_heads": 2}, {"linear_num_value_heads": 8},
                      {"linear_key_head_dim": 12}, {"linear_value_head_dim": None},
                      {"linear_num_key_heads": None, "linear_key_head_dim": 16},
                      {"linear_conv_kernel_dim": 2}, {"num_hidden_layers": 3},
                      {"num_hidden_layers": 8}, {"attention_bias": True},
                      {"layer_types": ["linear_attention", "full_attention", "linear_attention",
                                       "full_attention", "full_attention"]},
                      {"num_key_value_heads": None}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "qwen3_next":  # Qwen's dense blocks among the experts'
        for extra in ({"mlp_only_layers": [0, 2]}, {"decoder_sparse_step": 2},
                      {"num_experts": 8}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "bert-generation":  # a decoder's cross-attention; token types it has none of
        for extra in ({"add_cross_attention": True, "is_decoder": True},
                      {"add_cross_attention": True}, {"is_decoder": True},
                      {"hidden_act": "relu"}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "diffllama":  # values in halves and heads in pairs; no attention dropout
        for extra in ({"num_key_value_heads": 1}, {"num_attention_heads": 2},
                      {"attention_dropout": 0.1}, {"attention_dropout": 0.0}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "openai-gpt":  # its own activations' table; the common names too
        for extra in ({"afn": "relu"}, {"afn": "silu"}, {"afn": "swish"}, {"afn": "gelu_new"},
                      {"hidden_size": 32}, {"num_hidden_layers": 3}, {"num_attention_heads": 2},
                      {"max_position_embeddings": 128}, {"n_inner": 100},
                      {"intermediate_size": 100}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "ctrl":  # the common names, which its attribute_map reads into its own
        for extra in ({"hidden_size": 32}, {"num_hidden_layers": 3}, {"num_attention_heads": 2},
                      {"max_position_embeddings": 128}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "sarvam_moe":  # GLM-4.5's switches under Sarvam's defaults and other names
        for extra in ({"first_k_dense_replace": 0}, {"first_k_dense_replace": 2},
                      {"n_shared_experts": 0}, {"n_shared_experts": 2},
                      {"num_local_experts": 8}, {"use_qk_norm": False},
                      {"use_qkv_bias": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "sarvam_mla":  # DeepSeek-V3's, the queries' low-rank projection among them
        for extra in ({"q_lora_rank": 24}, {"q_lora_rank": None}, {"first_k_dense_replace": 0},
                      {"n_shared_experts": 2}, {"num_local_experts": 8},
                      {"num_experts_per_tok": None}, {"v_head_dim": None}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "minicpm3":  # latent attention's ranks and widths, the values' by default
        for extra in ({"q_lora_rank": None}, {"kv_lora_rank": 32}, {"v_head_dim": 20},
                      {"v_head_dim": None}, {"attention_bias": True, "q_lora_rank": None},
                      {"num_attention_heads": 5}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "cohere2_moe":  # shared experts; dense blocks first by a count or a list, their
        # width; RMSNorms for its LayerNorms
        for extra in ({"num_shared_experts": 1}, {"num_shared_experts": 2},
                      {"first_k_dense_replace": 1},
                      {"first_k_dense_replace": 2, "prefix_dense_intermediate_size": 80},
                      {"mlp_layer_types": ["dense", "sparse", "sparse"]},
                      {"mlp_layer_types": ["dense", "sparse", "sparse"],
                       "prefix_dense_intermediate_size": None},
                      {"mlp_layer_types": ["sparse", "dense", "sparse"]},
                      {"rms_norm_eps": 1e-6}, {"attention_bias": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "afmoe":  # its dense blocks first, its shared experts
        for extra in ({"num_dense_layers": 0}, {"num_dense_layers": 2},
                      {"num_dense_layers": None}, {"num_shared_experts": 0},
                      {"num_shared_experts": 1}, {"num_shared_experts": None},
                      {"num_experts": None}, {"num_experts_per_tok": None}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "kolibri1":  # no shared expert; the experts' other name, both names
        for extra in ({"shared_expert_intermediate_size": 0}, {"num_experts": 8},
                      {"num_experts": 8, "num_local_experts": 2}, {"num_experts_per_tok": 1}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "cwm":  # heads that do not divide hidden: refused by the class and by stowage
        out.append(("heads 5", dict(base, num_attention_heads=5, num_key_value_heads=5)))
    if kind == "granitemoeshared":  # no shared expert, or none said
        for extra in ({"shared_intermediate_size": 0}, {"shared_intermediate_size": None}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "internlm3":  # its biases by their other names, together or apart (refused)
        for extra in ({"qkv_bias": True, "bias": True}, {"qkv_bias": True},
                      {"bias": True}, {"attention_bias": True, "mlp_bias": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "glm4_moe_lite":  # the MLPs by their list; head_dim the rope's other name
        for extra in ({"mlp_layer_types": ["dense", "dense", "sparse"]},
                      {"mlp_layer_types": ["sparse", "sparse", "sparse"]},
                      {"mlp_layer_types": ["dense", "dense", "dense", "sparse"]},
                      {"mlp_layer_types": ["sparse", "dense", "sparse"]},
                      {"mlp_layer_types": None}, {"head_dim": 4},
                      {"head_dim": 4, "qk_rope_head_dim": 12}, {"num_local_experts": 8},
                      {"n_shared_experts": 0}, {"q_lora_rank": None}, {"num_hidden_layers": 5}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "exaone_moe":  # its dense blocks by a count or a list, its shared experts
        for extra in ({"first_k_dense_replace": 0}, {"first_k_dense_replace": 2},
                      {"mlp_layer_types": ["dense", "dense", "sparse"]},
                      {"mlp_layer_types": ["sparse", "sparse", "sparse"],
                       "first_k_dense_replace": 2},
                      {"mlp_layer_types": ["sparse", "dense", "dense"]},
                      {"num_shared_experts": 0}, {"num_shared_experts": 2}, {"head_dim": 32},
                      {"head_dim": None}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "xglm":  # the common names beside fairseq's, untied, another activation
        for extra in ({"num_hidden_layers": 3}, {"hidden_size": 32, "d_model": 64},
                      {"tie_word_embeddings": False}, {"activation_function": "relu"}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "biogpt":  # untied; another activation
        for extra in ({"tie_word_embeddings": False}, {"hidden_act": "relu"}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "bitnet":  # the usual head width given, biases, tied
        for extra in ({"head_dim": 16}, {"attention_bias": True},
                      {"tie_word_embeddings": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "ernie4_5_moe":  # where its experts start and end; their names; no shared ones
        for extra in ({"moe_layer_start_index": 0}, {"moe_layer_start_index": 2},
                      {"moe_layer_end_index": 2}, {"moe_layer_end_index": 1},
                      {"moe_layer_interval": 2}, {"moe_layer_interval": 3},
                      {"moe_layer_interval": 2, "moe_layer_start_index": 0,
                       "moe_layer_end_index": 1},
                      {"use_bias": True}, {"num_experts": 8},
                      {"num_experts_per_tok": 1, "moe_k": 3}, {"moe_k": None},
                      {"moe_num_shared_experts": 0}, {"head_dim": 32},
                      {"tie_word_embeddings": False}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "gemma3n_text":  # its MLPs a block; AltUp's copies; sharing; its patterns
        for extra in ({"intermediate_size": [96] * 5}, {"intermediate_size": [96, 96, 64, 96, 96]},
                      {"intermediate_size": [96] * 4}, {"altup_num_inputs": 1},
                      {"altup_num_inputs": 6, "altup_active_idx": 5}, {"altup_active_idx": 3},
                      {"laurel_rank": 64}, {"laurel_rank": 0}, {"num_kv_shared_layers": 0},
                      {"num_kv_shared_layers": 5}, {"num_kv_shared_layers": 1},
                      {"layer_types": ["sliding_attention"] * 4 + ["full_attention"]},
                      {"layer_types": ["full_attention"] * 5}, {"hidden_size_per_layer_input": 0},
                      {"activation_sparsity_pattern": [0.95, 0.0, 0.0, 0.0, 0.0]},
                      {"activation_sparsity_pattern": [0.5]}, {"final_logit_softcapping": None},
                      {"tie_word_embeddings": False}, {"altup_num_inputs": None},
                      {"laurel_rank": None}, {"num_kv_shared_layers": None},
                      {"hidden_size_per_layer_input": None}, {"vocab_size_per_layer_input": None},
                      {"intermediate_size": None}, {"altup_active_idx": None},
                      {"activation_sparsity_pattern": None}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "longcat_flash":  # its blocks' count, its widths' other names, zero experts
        for extra in ({"num_hidden_layers": 6}, {"num_hidden_layers": 5, "num_layers": 1},
                      {"num_hidden_layers": 1}, {"intermediate_size": 48},
                      {"moe_intermediate_size": 16}, {"num_local_experts": 8},
                      {"num_experts_per_tok": 2}, {"zero_expert_num": 0},
                      {"zero_expert_num": None}, {"n_routed_experts": 1},
                      {"router_bias": True}, {"qk_head_dim": 16}, {"qk_head_dim": 20},
                      {"q_lora_rank": None}, {"attention_bias": True}, {"moe_topk": 7},
                      {"tie_word_embeddings": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "laguna":  # its gates, heads a block, blocks' MLPs and attention's kinds
        for extra in ({"gating": False}, {"gating": "per-head"}, {"gating": "per-channel"},
                      {"num_attention_heads_per_layer": [4, 4, 4]},
                      {"num_attention_heads_per_layer": [8, 8, 8]},
                      {"num_attention_heads_per_layer": [4, 8, 4]},
                      {"num_attention_heads_per_layer": [4, 4]},
                      {"mlp_layer_types": ["sparse", "dense", "sparse"]},
                      {"mlp_layer_types": ["dense"] * 3}, {"shared_expert_intermediate_size": 0},
                      {"layer_types": ["sliding_attention", "full_attention", "full_attention"]},
                      {"layer_types": ["full_attention"]},
                      {"moe_apply_router_weight_on_input": True}, {"attention_bias": True},
                      {"num_experts": 8, "num_experts_per_tok": 1}, {"tie_word_embeddings": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "minimax_m3_vl_text":  # its blocks' kinds, their legacy forms, its indexer
        for extra in ({"layer_types": None}, {"layer_types": ["minimax_m3_sparse"] * 3},
                      {"layer_types": ["full_attention"]},
                      {"layer_types": None, "sparse_attention_config":
                       {"sparse_attention_freq": [1, 0, 1], "sparse_num_index_heads": 4,
                        "sparse_index_dim": 16}},
                      {"sparse_attention_config": {"sparse_num_index_heads": 3}},
                      {"mlp_layer_types": None}, {"mlp_layer_types": None,
                                                  "moe_layer_freq": [0, 1, 1]},
                      {"mlp_layer_types": ["sparse"] * 4}, {"mlp_layer_types": ["dense"] * 3},
                      {"shared_intermediate_size": 0}, {"dense_intermediate_size": None},
                      {"index_n_heads": 6}, {"tie_word_embeddings": True},
                      {"attention_bias": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "aria_text":  # shared experts none or three; top-k; grouped heads
        for extra in ({"moe_num_shared_experts": 0}, {"moe_num_shared_experts": 3},
                      {"moe_topk": 1}, {"moe_num_experts": 8}, {"num_key_value_heads": 1},
                      {"attention_bias": True, "tie_word_embeddings": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    wrapper = {"qwen3_5_text": "qwen3_5", "qwen3_5_moe_text": "qwen3_5_moe",
               "llama4_text": "llama4"}.get(kind)
    if wrapper:  # the multimodal file, whose causal language model is its text_config's alone
        out.append(("in a %s file" % wrapper, {"model_type": wrapper, "text_config": base}))
        out.append(("in a %s file, text_config without model_type" % wrapper,
                    {"model_type": wrapper, "text_config": dict(SMALL[kind])}))
        out.append(("a %s file's defaults" % wrapper, {"model_type": wrapper}))
        out.append(("in a %s file, tied outside" % wrapper,
                    {"model_type": wrapper, "text_config": base, "tie_word_embeddings": True}))
    if kind == "gemma3_text":  # Gemma 3's multimodal file, which AutoModelForCausalLM builds
        # whole: its language model, SigLIP's vision tower and the projector beside it
        vision = {"model_type": "siglip_vision_model", "hidden_size": 32,
                  "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
                  "image_size": 28, "patch_size": 14}
        for extra in ({}, {"vision_use_head": False}, {"image_size": 30, "patch_size": 7},
                      {"num_channels": 1}, {"num_hidden_layers": 3}, {"model_type": None},
                      {"num_attention_heads": 5}, {"patch_size": 29},
                      {"model_type": "clip_vision_model"}):
            v = {k: x for k, x in dict(vision, **extra).items() if x is not None}
            out.append(("in a gemma3 file, vision %s" % json.dumps(extra),
                        {"model_type": "gemma3", "text_config": base, "vision_config": v,
                         "mm_tokens_per_image": 4}))
        for what, extra in (("defaults", {}), ("untied", {"tie_word_embeddings": False}),
                            ("vision_config null", {"vision_config": None}),
                            ("text_config untied, the file tied",
                             {"text_config": dict(base, tie_word_embeddings=False)})):
            f = {"model_type": "gemma3", "text_config": base, "vision_config": vision,
                 "mm_tokens_per_image": 4}
            out.append(("a gemma3 file, %s" % what,
                        {"model_type": "gemma3"} if what == "defaults" else dict(f, **extra)))
    if kind == "gemma4_text":  # Gemma 4's multimodal file, built whole: its vision and audio
        # towers (each optional) and their embedders beside the language model
        vision = {"model_type": "gemma4_vision", "num_hidden_layers": 1, "hidden_size": 32,
                  "intermediate_size": 48, "num_attention_heads": 2, "num_key_value_heads": 2,
                  "head_dim": 16, "position_embedding_size": 64, "patch_size": 4}
        audio = {"model_type": "gemma4_audio", "num_hidden_layers": 1, "hidden_size": 32,
                 "num_attention_heads": 2, "output_proj_dims": 48,
                 "subsampling_conv_channels": [8, 4], "conv_kernel_size": 3}
        f = {"model_type": "gemma4", "text_config": base}
        for what, extra in (("vision and audio", {"vision_config": vision,
                                                  "audio_config": audio}),
                            ("vision", {"vision_config": vision}),
                            ("audio", {"audio_config": audio, "vision_config": None}),
                            ("neither", {}), ("untied", {"vision_config": vision,
                                                         "tie_word_embeddings": False}),
                            ("vision kv heads 1, head_dim 8",
                             {"vision_config": dict(vision, num_key_value_heads=1,
                                                    head_dim=8)}),
                            ("vision without model_type",
                             {"vision_config": {k: v for k, v in vision.items()
                                                if k != "model_type"}}),
                            ("audio heads 3, channels [12, 5], two blocks",
                             {"audio_config": dict(audio, num_attention_heads=3,
                                                   subsampling_conv_channels=[12, 5],
                                                   num_hidden_layers=2)}),
                            ("audio heads 40", {"audio_config": dict(audio,
                                                                     num_attention_heads=40)}),
                            ("audio channels [3, 4]",
                             {"audio_config": dict(audio, subsampling_conv_channels=[3, 4])})):
            out.append(("a gemma4 file, %s" % what, dict(f, **extra)))
        out.append(("a gemma4 file's defaults, with both towers'",
                    {"model_type": "gemma4", "vision_config": {}, "audio_config": {}}))
    if kind == "mistral":  # Mistral 3's multimodal file, read whole: Pixtral's tower and
        # Mistral 3's projector beside the language model
        vision = {"model_type": "pixtral", "hidden_size": 32, "intermediate_size": 48,
                  "num_hidden_layers": 2, "num_attention_heads": 4, "patch_size": 4,
                  "image_size": 16, "head_dim": 8}
        f = {"model_type": "mistral3", "text_config": base, "vision_config": vision}
        for what, extra in (("", {}), ("untied", {"tie_word_embeddings": False}),
                            ("projector biased", {"multimodal_projector_bias": True}),
                            ("merge 3", {"spatial_merge_size": 3}),
                            ("two feature layers", {"vision_feature_layer": [-1, -2]}),
                            ("vision_config null", {"vision_config": None}),
                            ("channels 1, patches of 6",
                             {"vision_config": dict(vision, num_channels=1, patch_size=6)}),
                            ("vision without model_type",
                             {"vision_config": {k: v for k, v in vision.items()
                                                if k != "model_type"}}),
                            ("text_config null", {"text_config": None})):
            out.append(("a mistral3 file%s" % (", " + what if what else ""), dict(f, **extra)))
        out.append(("a mistral3 file's defaults", {"model_type": "mistral3"}))
    if kind == "llama":  # LLaVA's file, read whole: CLIP's tower and LLaVA's projector beside
        # a language model of any type
        vision = {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 48,
                  "num_hidden_layers": 2, "num_attention_heads": 4, "patch_size": 4,
                  "image_size": 16}
        f = {"model_type": "llava", "text_config": base, "vision_config": vision}
        mistral = dict(SMALL["mistral"], model_type="mistral")
        for what, extra in (("", {}), ("tied", {"tie_word_embeddings": True}),
                            ("projector unbiased", {"multimodal_projector_bias": False}),
                            ("three feature layers", {"vision_feature_layer": [-1, -2, -5]}),
                            ("vision_config null", {"vision_config": None}),
                            ("text_config null", {"text_config": None}),
                            ("a mistral inside", {"text_config": mistral}),
                            ("text without model_type",
                             {"text_config": {k: v for k, v in base.items()
                                              if k != "model_type"}}),
                            ("channels 1, image 20, patch 5",
                             {"vision_config": dict(vision, num_channels=1, image_size=20,
                                                    patch_size=5)}),
                            ("vision heads 5", {"vision_config": dict(vision,
                                                                      num_attention_heads=5)}),
                            ("an empty feature list", {"vision_feature_layer": []})):
            out.append(("a llava file%s" % (", " + what if what else ""), dict(f, **extra)))
        out.append(("a llava file's defaults", {"model_type": "llava"}))
        for what, extra in (("SigLIP's tower", {"vision_config": SIGLIP}),
                            ("SigLIP's tower without its head",
                             {"vision_config": dict(SIGLIP, vision_use_head=False)}),
                            ("Pixtral's tower", {"vision_config": PIXTRAL}),
                            ("Pixtral's tower, two feature layers, unbiased",
                             {"vision_config": PIXTRAL, "vision_feature_layer": [-1, -3],
                              "multimodal_projector_bias": False})):
            out.append(("a llava file, %s" % what, dict(f, **extra)))
        # LLaVA-NeXT's: LLaVA's with an image_newline
        g = dict(f, model_type="llava_next")
        for what, extra in (("", {}), ("SigLIP's tower", {"vision_config": SIGLIP}),
                            ("vision_config null", {"vision_config": None}),
                            ("text_config null", {"text_config": None}),
                            ("tied", {"tie_word_embeddings": True})):
            out.append(("a llava_next file%s" % (", " + what if what else ""), dict(g, **extra)))
        out.append(("a llava_next file's defaults", {"model_type": "llava_next"}))
        # Idefics3's and SmolVLM's: SigLIP's blocks without a head, the pixel shuffle's connector
        for outer in ("idefics3", "smolvlm"):
            vision = {k: v for k, v in SIGLIP.items() if k != "model_type"}
            g = {"model_type": outer, "text_config": base, "vision_config": vision}
            for what, extra in (("", {}), ("scale_factor 3", {"scale_factor": 3}),
                                ("vision typed", {"vision_config": dict(
                                    vision, model_type=outer + "_vision")}),
                                ("vision_config null", {"vision_config": None}),
                                ("text_config null", {"text_config": None}),
                                ("tied", {"tie_word_embeddings": True}),
                                ("a qwen2 inside", {"text_config": dict(SMALL["qwen2"],
                                                                        model_type="qwen2")})):
                out.append(("a %s file%s" % (outer, ", " + what if what else ""),
                            dict(g, **extra)))
            out.append(("a %s file's defaults" % outer, {"model_type": outer}))
        # Llama 3.2 Vision's: its tower, its projector, and the language model's cross-attention
        # blocks, which a text step skips
        text = dict(SMALL[kind], model_type="mllama_text_model", pad_token_id=0,
                    num_key_value_heads=2,
                    num_hidden_layers=3, cross_attention_layers=[1])
        vision = {"model_type": "mllama_vision_model", "hidden_size": 32,
                  "intermediate_size": 48, "num_hidden_layers": 2, "num_global_layers": 1,
                  "attention_heads": 4, "image_size": 16, "patch_size": 4, "max_num_tiles": 2,
                  "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]],
                  "vision_output_dim": 96}
        f = {"model_type": "mllama", "text_config": text, "vision_config": vision}
        for what, extra in (("", {}),
                            ("text tied", {"text_config": dict(text, tie_word_embeddings=True)}),
                            ("tied outside", {"tie_word_embeddings": True}),
                            ("cross-attention blocks 0, 2 and 7",
                             {"text_config": dict(text, cross_attention_layers=[0, 2, 7])}),
                            ("the default cross-attention blocks (none below 3)",
                             {"text_config": {k: v for k, v in text.items()
                                              if k != "cross_attention_layers"}}),
                            ("num_attention_heads in the tower",
                             {"vision_config": dict({k: v for k, v in vision.items()
                                                     if k != "attention_heads"},
                                                    num_attention_heads=2)}),
                            ("the default aspect ratios, four tiles",
                             {"vision_config": dict({k: v for k, v in vision.items()
                                                     if k != "supported_aspect_ratios"},
                                                    max_num_tiles=4)}),
                            ("vision_config null", {"vision_config": None}),
                            ("text_config null", {"text_config": None})):
            out.append(("an mllama file%s" % (", " + what if what else ""), dict(f, **extra)))
        out.append(("an mllama file's defaults", {"model_type": "mllama"}))
    if kind == "qwen2":  # Qwen2-VL's and Qwen2.5-VL's files, read whole: their vision towers
        # and patch mergers beside a language model given as text_config or as the file's own
        # members (their checkpoints'), tied where either says so
        towers = {"qwen2_vl": {"depth": 2, "embed_dim": 32, "hidden_size": 64, "num_heads": 2,
                               "patch_size": 4, "mlp_ratio": 2},
                  "qwen2_5_vl": {"depth": 2, "hidden_size": 32, "intermediate_size": 40,
                                 "out_hidden_size": 64, "num_heads": 2, "patch_size": 4,
                                 "fullatt_block_indexes": [1]}}
        for outer, vision in towers.items():
            text = dict(SMALL[kind], model_type=outer + "_text")
            flat = dict(SMALL[kind], model_type=outer, vision_config=vision)
            f = {"model_type": outer, "text_config": text, "vision_config": vision}
            for what, c in (("", f), ("flat", flat),
                            ("flat, tied", dict(flat, tie_word_embeddings=True)),
                            ("text tied", dict(f, text_config=dict(text,
                                                                   tie_word_embeddings=True))),
                            ("tied outside, text untied",
                             dict(f, tie_word_embeddings=True,
                                  text_config=dict(text, tie_word_embeddings=False))),
                            ("text_config null, flat", dict(flat, text_config=None)),
                            ("vision_config null", dict(f, vision_config=None)),
                            ("vision typed as the file", dict(f, vision_config=dict(
                                vision, model_type=outer))),
                            ("vision num_hidden_layers 3", dict(f, vision_config=dict(
                                {k: v for k, v in vision.items() if k != "depth"},
                                num_hidden_layers=3))),
                            ("channels 1, one frame, patch 6, merge 3",
                             dict(f, vision_config=dict(vision, in_channels=1,
                                                        temporal_patch_size=1, patch_size=6,
                                                        spatial_merge_size=3))),
                            ("merged into 48", dict(f, vision_config=dict(
                                vision, **{"hidden_size" if outer == "qwen2_vl"
                                           else "out_hidden_size": 48}))),
                            ("defaults", {"model_type": outer})):
                out.append(("a %s file%s" % (outer, ", " + what if what else ""), c))
    if kind == "qwen2":  # LLaVA-OneVision's files: SigLIP's tower by default, a Qwen2 inside
        f = {"model_type": "llava_onevision", "text_config": base, "vision_config": SIGLIP}
        for what, extra in (("", {}), ("CLIP's tower", {"vision_config": CLIP}),
                            ("vision_config null", {"vision_config": None}),
                            ("text_config null", {"text_config": None}),
                            ("a llama inside", {"text_config": dict(SMALL["llama"],
                                                                    model_type="llama")}),
                            ("text without model_type", {"text_config": dict(SMALL[kind])}),
                            ("vision without model_type",
                             {"vision_config": {k: v for k, v in SIGLIP.items()
                                                if k != "model_type"}})):
            out.append(("a llava_onevision file%s" % (", " + what if what else ""),
                        dict(f, **extra)))
        out.append(("a llava_onevision file's defaults", {"model_type": "llava_onevision"}))
        # InternVL's (HF-native InternVL3): InternViT and a pixel shuffle's projector
        vision = {"model_type": "internvl_vision", "hidden_size": 32, "intermediate_size": 48,
                  "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": 16,
                  "patch_size": 4, "attention_bias": True}
        f = {"model_type": "internvl", "text_config": base, "vision_config": vision}
        for what, extra in (("", {}), ("untied", {"tie_word_embeddings": False}),
                            ("InternViT-6B's kind", {"vision_config": dict(
                                vision, attention_bias=False, use_qk_norm=True,
                                norm_type="rms_norm", use_mean_pooling=False)}),
                            ("sizes as lists", {"vision_config": dict(
                                vision, image_size=[16, 16], patch_size=[4, 4])}),
                            ("downsample_ratio 0.25", {"downsample_ratio": 0.25}),
                            ("downsample_ratio 0.3", {"downsample_ratio": 0.3}),
                            ("vision_config null", {"vision_config": None}),
                            ("text_config null", {"text_config": None}),
                            ("a llama inside", {"text_config": dict(SMALL["llama"],
                                                                    model_type="llama")})):
            out.append(("an internvl file%s" % (", " + what if what else ""), dict(f, **extra)))
        out.append(("an internvl file's defaults", {"model_type": "internvl"}))
    if kind in ("gemma", "gemma2"):  # PaliGemma's files (PaliGemma 2's a Gemma 2 inside):
        # SigLIP's tower and one projection to projection_dim
        f = {"model_type": "paligemma", "text_config": base, "vision_config": SIGLIP,
             "projection_dim": 64}
        for what, extra in (("", {}), ("untied", {"tie_word_embeddings": False}),
                            ("projection_dim 48", {"projection_dim": 48}),
                            ("projection_dim absent", {"projection_dim": None}),
                            ("vision_config null", {"vision_config": None}),
                            ("text_config null", {"text_config": None})):
            c = {k: v for k, v in dict(f, **extra).items()
                 if v is not None or k != "projection_dim"}
            out.append(("a paligemma file%s" % (", " + what if what else ""), c))
        if kind == "gemma":
            out.append(("a paligemma file's defaults", {"model_type": "paligemma"}))
    if kind == "cohere2":  # Aya Vision's files: SigLIP's tower, a pixel shuffle's SwiGLU
        # projector, a Command R7B inside
        f = {"model_type": "aya_vision", "text_config": base,
             "vision_config": dict(SIGLIP, vision_use_head=False)}
        for what, extra in (("", {}), ("untied", {"tie_word_embeddings": False}),
                            ("text untied", {"text_config": dict(base,
                                                                 tie_word_embeddings=False)}),
                            ("alignment 96, downsample 3", {"alignment_intermediate_size": 96,
                                                            "downsample_factor": 3}),
                            ("alignment odd", {"alignment_intermediate_size": 33}),
                            ("vision_config null", {"vision_config": None}),
                            ("text_config null", {"text_config": None})):
            out.append(("an aya_vision file%s" % (", " + what if what else ""),
                        dict(f, **extra)))
        out.append(("an aya_vision file's defaults", {"model_type": "aya_vision"}))
    if kind in ("glm4", "glm4_moe"):  # GLM-4.1V's and GLM-4.5V's files: their tower, its
        # downsampling merger, a GLM-4 (or GLM-4.5) inside
        outer = {"glm4": "glm4v", "glm4_moe": "glm4v_moe"}[kind]
        text = dict({k: v for k, v in SMALL[kind].items() if k != "head_dim"},
                    model_type=outer + "_text")
        vision = {"depth": 2, "hidden_size": 32, "out_hidden_size": 48, "intermediate_size": 40,
                  "num_heads": 2, "image_size": 16, "patch_size": 4}
        f = {"model_type": outer, "text_config": text, "vision_config": vision}
        for what, extra in (("", {}), ("tied", {"tie_word_embeddings": True}),
                            ("text tied", {"text_config": dict(text, tie_word_embeddings=True)}),
                            ("vision attention biased, merge 4, one frame",
                             {"vision_config": dict(vision, attention_bias=True,
                                                    spatial_merge_size=4,
                                                    temporal_patch_size=1)}),
                            ("vision typed as the file", {"vision_config": dict(
                                vision, model_type=outer)}),
                            ("vision_config null", {"vision_config": None}),
                            ("text_config null", {"text_config": None}),
                            ("head_dim 32", {"text_config": dict(text, head_dim=32)}),
                            ("attention unbiased", {"text_config": dict(text,
                                                                        attention_bias=False)})):
            out.append(("a %s file%s" % (outer, ", " + what if what else ""), dict(f, **extra)))
        out.append(("a %s file's defaults" % outer, {"model_type": outer}))
    if kind in ("qwen3", "qwen3_moe"):  # Qwen3-VL's files, read whole: the vision tower, its
        # merger and DeepStack's beside the language model (text_config's alone, tied by the
        # file's own tie_word_embeddings)
        outer = {"qwen3": "qwen3_vl", "qwen3_moe": "qwen3_vl_moe"}[kind]
        vision = {"depth": 3, "hidden_size": 32, "intermediate_size": 40, "out_hidden_size": 64,
                  "num_heads": 2, "patch_size": 4, "num_position_embeddings": 16,
                  "deepstack_visual_indexes": [0, 2]}
        text = dict(SMALL[kind], model_type=outer + "_text", head_dim=16)
        f = {"model_type": outer, "text_config": text, "vision_config": vision}
        extras = [("", f), ("tied", dict(f, tie_word_embeddings=True)),
                  ("text tied", dict(f, text_config=dict(text, tie_word_embeddings=True))),
                  ("no DeepStack", dict(f, vision_config=dict(vision,
                                                              deepstack_visual_indexes=[]))),
                  ("vision defaults", dict(f, vision_config=None)),
                  ("vision typed as the file", dict(f, vision_config=dict(vision,
                                                                          model_type=outer))),
                  ("positions 9, merge 1, two channels",
                   dict(f, vision_config=dict(vision, num_position_embeddings=9,
                                              spatial_merge_size=1, in_channels=2))),
                  ("text_config null", dict(f, text_config=None)),
                  ("text without model_type", dict(f, text_config=dict(SMALL[kind],
                                                                       head_dim=16))),
                  ("defaults", {"model_type": outer})]
        if kind == "qwen3_moe":
            extras += [("a dense block", dict(f, text_config=dict(text, mlp_only_layers=[1],
                                                                  intermediate_size=40))),
                       ("sparse every second block",
                        dict(f, text_config=dict(text, decoder_sparse_step=2)))]
        for what, c in extras:
            out.append(("a %s file%s" % (outer, ", " + what if what else ""), c))
    if kind == "persimmon":  # no norms over the queries and keys; tied; another activation
        for extra in ({"qk_layernorm": False}, {"tie_word_embeddings": True},
                      {"hidden_act": "gelu"}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "codegen":  # its MLP's width, its other names
        for extra in ({"n_inner": 96}, {"hidden_size": 32, "n_embd": 64},
                      {"tie_word_embeddings": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "vaultgemma":  # its caps off, its biases
        for extra in ({"final_logit_softcapping": None, "attn_logit_softcapping": None},
                      {"attention_bias": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "flex_olmo":  # the experts by their other name, both names
        for extra in ({"num_local_experts": 8}, {"num_local_experts": 8, "num_experts": 2},
                      {"attention_bias": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "solar_open":  # shared experts none or two; the experts by their other name
        for extra in ({"n_shared_experts": 0}, {"n_shared_experts": 2},
                      {"num_local_experts": 8}, {"attention_bias": True},
                      {"intermediate_size": 1000}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "minimax_m2":  # the experts by their other name, both names, one a token
        for extra in ({"num_experts": 8}, {"num_experts": 8, "num_local_experts": 2},
                      {"num_experts_per_tok": 1}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "youtu":  # latent attention's ranks and widths, biases
        for extra in ({"q_lora_rank": None}, {"kv_lora_rank": 32}, {"v_head_dim": 20},
                      {"attention_bias": True}, {"tie_word_embeddings": False}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "hyperclovax":  # no norms after the branches; biases
        for extra in ({"use_post_norm": False}, {"attention_bias": True},
                      {"mlp_bias": True}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "phi":  # LayerNorms over the queries and keys (a head wide, shared by the heads)
        for extra in ({"qk_layernorm": True}, {"qk_layernorm": True, "num_key_value_heads": 2}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "phimoe":  # the LM head's bias
        out.append(("lm_head_bias", dict(base, lm_head_bias=True)))
    if kind == "nemotron":  # its activation's other names cost the same parameters
        out.append(("hidden_act gelu", dict(base, hidden_act="gelu")))
    if kind == "ernie4_5":  # every projection's bias, one switch
        out.append(("use_bias", dict(base, use_bias=True)))
    if kind == "qwen2_moe":
        out.append(("qkv_bias false", dict(base, qkv_bias=False)))
        out.append(("intermediate_size", dict(base, intermediate_size=1000)))
    if kind == "qwen3_moe":  # the dense MLP's width, which no block has, changes nothing
        out.append(("intermediate_size", dict(base, intermediate_size=1000)))
        out.append(("8 experts", dict(base, num_experts=8, num_experts_per_tok=1)))
    if kind == "hunyuan_v1_moe":  # top-k a whole number or one a block; its experts' names
        for extra in ({"moe_topk": [2, 2]}, {"moe_topk": [3, 3, 1]}, {"moe_topk": [2, 3]},
                      {"moe_topk": [2]}, {"num_experts": 1, "moe_topk": 1},
                      {"num_local_experts": 8}, {"num_experts": 8, "num_local_experts": 6},
                      {"num_experts": [4, 4]}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "apertus1p5_text":  # its LM head pruned, whole, tied
        for extra in ({"output_vocab_size": None}, {"output_vocab_size": 128},
                      {"output_vocab_size": 200}, {"output_vocab_size": 0},
                      {"output_vocab_size": 96, "tie_word_embeddings": True},
                      {"hidden_act": "silu"}):
            out.append((json.dumps(extra), dict(base, **extra)))
    if kind == "apertus":  # xIELU's two scalars a block; other activations have none
        for act in ("xielu", "silu", "relu2", "gelu"):
            out.append(("hidden_act %s" % act, dict(base, hidden_act=act)))
    if kind in ("flint", "qwen3_moe", "qwen2_moe"):  # the dense blocks by their indices
        for dense in ([], [0], [1, 0, 7], None, [1]):
            out.append(("mlp_only_layers %s" % json.dumps(dense),
                        dict(base, mlp_only_layers=dense)))
        for step in (2, 3):  # and those off decoder_sparse_step
            out.append(("decoder_sparse_step %d" % step, dict(base, decoder_sparse_step=step)))
        out.append(("decoder_sparse_step 2, mlp_only_layers [1]",
                    dict(base, decoder_sparse_step=2, mlp_only_layers=[1])))
        out.append(("a dense block, intermediate_size 40",
                    dict(base, mlp_only_layers=[0], intermediate_size=40)))
    texts = [(what, json.dumps(c)) for what, c in out]
    # a member given twice: Python's json (and so transformers) reads the last
    layers = "n_layer" if kind in ("gpt2", "bloom") else "num_hidden_layers"
    twice = json.dumps(base)[:-1] + ', "%s": 3}' % layers
    texts.append(("%s twice" % layers, twice))
    return texts


def transformers_count(path, kind):
    """(parameters, key/value heads) of the model transformers builds from PATH, or (None,
    why) when it builds none."""
    try:
        if kind == "dbrx":  # transformers 5's DBRX attention reads attn_config's rope_theta,
            # which its config class gives no default: one given where the file has none (it
            # changes no weight)
            with open(path) as f:
                given = json.load(f)
            attn = given.get("attn_config")
            given["attn_config"] = dict(attn if isinstance(attn, dict) else {})
            given["attn_config"].setdefault("rope_theta", 10000.0)
            cfg = transformers.AutoConfig.for_model(**given)
        else:
            cfg = transformers.AutoConfig.from_pretrained(os.path.dirname(path))
        with torch.device("meta"):
            if kind in ENCODERS:
                model = transformers.AutoModel.from_config(cfg)
            elif cfg.model_type in IMAGE_TEXT:
                model = transformers.AutoModelForImageTextToText.from_config(cfg)
            else:
                model = transformers.AutoModelForCausalLM.from_config(cfg)
    except Exception as e:  # noqa: BLE001 (a config transformers cannot build either)
        return None, str(e)
    import inspect
    cfg = cfg.get_text_config()  # a multimodal file's: its language model's
    # the heads of keys and values where the class has them (GPT-NeoX keeps an extra member of
    # that name without using it), else the heads
    reads_kv = "num_key_value_heads" in inspect.signature(type(cfg).__init__).parameters
    try:
        kv = getattr(cfg, "num_key_value_heads", None) if reads_kv else None
    except Exception:  # noqa: BLE001 (Gemma 4's differ by block: the model-wide one)
        kv = cfg.__dict__.get("num_key_value_heads")
    kv = kv or getattr(cfg, "num_attention_heads", None)
    if kind == "dbrx":  # its attention's own config
        kv = cfg.attn_config.kv_n_heads
    elif getattr(cfg, "kv_lora_rank", None):  # latent attention: a key and value per head
        kv = cfg.num_attention_heads
    elif getattr(cfg, "new_decoder_architecture", False):  # Falcon's groups
        kv = cfg.num_kv_heads
    elif getattr(cfg, "multi_query", False):  # GPT-BigCode's and Falcon's one key and value head
        kv = 1
    params = sum(p.numel() for p in model.parameters())
    if kind == "longcat_flash" and cfg.n_routed_experts > 0:
        # its class builds gate_up_proj for the zero experts too (n_routed_experts +
        # zero_expert_num rows), which no checkpoint holds and no token reads: the checkpoint's
        # count (LongCat-Flash's 560B) is the routed experts' alone
        params -= cfg.num_layers * (cfg.zero_expert_num or 0) * 2 * \
            cfg.expert_ffn_hidden_size * cfg.hidden_size
    return params, kv


def stowage_count(path, kind):
    r = subprocess.run([STOWAGE, "models", "--hf", path, "--json"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    j = json.loads(r.stdout)
    m = j["model"]
    if kind == "mimo_v2_flash":  # num_key_value_heads is the full blocks' (global ones'); the
        # sliding blocks (the others, with sinks) have twice as many
        full = m.get("global_kv_heads") or \
            (m["kv_heads"] // 2 if m.get("attn_sinks") else m["kv_heads"])
        return j["params"], full
    if kind in ("mamba", "mamba2", "falcon_mamba"):  # a norm and the mixer, no attention
        return j["params"], None
    return j["params"], m.get("kv_heads", m.get("heads"))


def check_family(kind):
    """(wrong, unmodelled, checked) of KIND's variants: what stowage reads apart from
    transformers, what it refuses by name though transformers builds it (in order), and how many
    were read."""
    wrong, unmodelled = [], []
    checked = 0
    with tempfile.TemporaryDirectory() as d:
        for what, text in variants(kind):
            folder = os.path.join(d, "%s-%d" % (kind, checked))
            os.makedirs(folder)
            path = os.path.join(folder, "config.json")
            with open(path, "w") as f:
                f.write(text)
            theirs = transformers_count(path, kind)
            ours = stowage_count(path, kind)
            checked += 1
            if theirs[0] is None:
                if ours[0] is not None:
                    wrong.append("%s, %s: transformers builds no model (%s), stowage reads %s"
                                 % (kind, what, theirs[1][:100], ours))
                continue
            heads = json.loads(text).get("num_attention_heads")
            if theirs[1] and heads and heads % theirs[1] != 0 and ours[0] is None and \
                    "kv_heads must divide heads" in ours[1]:
                continue  # weights transformers builds, and no forward it can run
            if ours[0] is None and "linear_k_heads must divide linear_v_heads" in ours[1]:
                continue  # the same of Gated DeltaNet's heads (repeat_interleave by 0)
            hidden = json.loads(text).get("hidden_size")
            if heads is None and hidden and ours[0] is None and \
                    "heads must divide hidden" in ours[1]:
                continue  # the default heads do not divide a small width: no model
            if ours[0] is None and "not modelled" in ours[1]:
                unmodelled.append((kind, what))  # refused by name: listed in the test
                continue
            if ours[0] is None and "experts_per_token must be at most experts" in ours[1]:
                continue  # more experts a token than there are: the same
            if ours != theirs:
                wrong.append("%s, %s: transformers %s parameters, %s kv heads; stowage %s"
                             % (kind, what, theirs[0], theirs[1], ours))
    return wrong, unmodelled, checked


@unittest.skipIf(transformers is None, "transformers is not installed: %s"
                 % (None if transformers else WHY))
@unittest.skipIf(not STOWAGE, "STOWAGE (the built stowage) is not set")
class TestHfConfigs(unittest.TestCase):
    def test_every_family_as_transformers_reads_it(self):
        # the families side by side, a process a CPU (each builds its models on the meta
        # device, nothing shared), their findings in the families' order
        import multiprocessing
        workers = min(len(os.sched_getaffinity(0)), 4)
        if workers > 1:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                found = pool.map(check_family, list(SMALL), chunksize=1)
        else:
            found = [check_family(kind) for kind in SMALL]
        wrong = [w for f in found for w in f[0]]
        unmodelled = [u for f in found for u in f[1]]
        checked = sum(f[2] for f in found)
        self.assertGreater(checked, 3000)
        self.assertEqual(wrong, [], "\n".join(wrong))
        # what stowage refuses by name though transformers builds it: LLaVA's projector of no
        # features (an empty vision_feature_layer); Gemma 3's multimodal file with a vision
        # tower other than SigLIP, or an image smaller than a patch; OLMoE with a
        # head width
        # apart from hidden / heads, whose query and key norms stay hidden / heads wide a head;
        # OPT-350m's embeddings narrower than its blocks; DeepSeek-V2's MLP biases (not the
        # routed experts'); Helium with heads x head_dim apart from hidden (its output projection
        # hidden x hidden), and BitNet so (its norm over the heads' output hidden wide); ERNIE
        # 4.5's biased projections beside unbiased experts; Hy V3's MLP biases, as DeepSeek-V2's;
        # Hunyuan's one routed expert and blocks of other top-k; BertGeneration's
        # cross-attention; Nemotron-H's MLP biases beside unbiased
        # routed experts and router, and its one routed expert; Gemma 4's kv-shared blocks
        # beyond its blocks, one expert, and double-wide MLPs beside experts, and its audio
        # tower with fewer than 4 channels first (a projection of none); Aria's biased
        # shared experts beside unbiased routed ones; Gemma 3n's blocks of MLPs of differing
        # widths, an AltUp copy that is not there (its forward fails), LAuReL and per-layer
        # branches of no width (their norms alone); LongCat-Flash without a layer, with one
        # routed expert, a biased router, or queries wider than their parts; Laguna's blocks of
        # differing heads
        self.assertEqual(unmodelled, [("llama", "a llava file, an empty feature list"),
                                      ("gemma3_text",
                                       'in a gemma3 file, vision {"patch_size": 29}'),
                                      ("gemma3_text", 'in a gemma3 file, vision '
                                       '{"model_type": "clip_vision_model"}'),
                                      ("olmoe", "head_dim 32"),
                                      ("opt", '{"word_embed_proj_dim": 32}'),
                                      ("deepseek_v2", "mlp_bias"),
                                      ("helium", "without hidden_size"),
                                      ("helium", "without num_attention_heads"),
                                      ("helium", "without head_dim"),
                                      ("helium", "head_dim 32"),
                                      ("bitnet", "without num_attention_heads"),
                                      ("bitnet", "head_dim 32"),
                                      ("ernie4_5_moe", '{"use_bias": true}'),
                                      ("hy_v3", "mlp_bias"),
                                      ("hunyuan_v1_moe", "without num_experts"),
                                      ("hunyuan_v1_moe", '{"moe_topk": [2, 3]}'),
                                      ("hunyuan_v1_moe", '{"num_experts": 1, "moe_topk": 1}'),
                                      ("bert-generation",
                                       '{"add_cross_attention": true, "is_decoder": true}'),
                                      ("gemma3n_text",
                                       '{"intermediate_size": [96, 96, 64, 96, 96]}'),
                                      ("gemma3n_text", '{"altup_active_idx": 3}'),
                                      ("gemma3n_text", '{"laurel_rank": 0}'),
                                      ("gemma3n_text", '{"hidden_size_per_layer_input": 0}'),
                                      ("longcat_flash", '{"num_hidden_layers": 1}'),
                                      ("longcat_flash", '{"n_routed_experts": 1}'),
                                      ("longcat_flash", '{"router_bias": true}'),
                                      ("longcat_flash", '{"qk_head_dim": 20}'),
                                      ("laguna",
                                       '{"num_attention_heads_per_layer": [4, 8, 4]}'),
                                      ("aria_text", "mlp_bias"),
                                      ("gemma4_text", '{"num_kv_shared_layers": 5}'),
                                      ("gemma4_text", '{"enable_moe_block": true, '
                                       '"num_experts": 1, "top_k_experts": 2, '
                                       '"moe_intermediate_size": 32}'),
                                      ("gemma4_text", '{"enable_moe_block": true, '
                                       '"num_experts": 4, "top_k_experts": 2, '
                                       '"moe_intermediate_size": 32, "num_kv_shared_layers": 2, '
                                       '"use_double_wide_mlp": true}'),
                                      ("gemma4_text", "a gemma4 file, audio channels [3, 4]"),
                                      ("nemotron_h", "mlp_bias"),
                                      ("nemotron_h", '{"n_routed_experts": 1}')])


if __name__ == "__main__":
    unittest.main()
