/* names.c — the name tables of stowage's enums (dtypes, architectures, biases, attention kinds,
 * op kinds) and what goes with them: one place where each name is spelled; see model.h. */
#include "config.h"

#include <stowage/model.h>

#include <string.h>

const char *const stw_dtype_names[] = { "fp32", "fp16", "bf16", NULL };
const char *const stw_arch_names[] = { "gpt", "llama", "bert", "neox", NULL };
const char *const stw_bias_names[] = { "default", "yes", "no", NULL };
const char *const stw_bias_site_names[] = { "qkv_bias", "out_bias", "mlp_bias", NULL };
const char *const stw_attention_names[] = { "naive", "flash", NULL };
const char *const stw_kernels_names[] = { "fused", "eager", NULL };
const char *const stw_loss_names[] = { "full", "chunked", "native", NULL };
const char *const stw_optimizer_impl_names[] = { "fused", "foreach", "for-loop", "deepspeed",
                                                 NULL };
const char *const stw_vision_trained_names[] = { "none", "projector", "all", NULL };
G_STATIC_ASSERT(G_N_ELEMENTS(stw_vision_trained_names) == STW_N_VISION_TRAINED + 1);
G_STATIC_ASSERT(G_N_ELEMENTS(stw_optimizer_impl_names) == STW_N_OPTIMIZERS + 1);
const char *const stw_collectives_names[] = { "overlapped", "blocking", NULL };
G_STATIC_ASSERT(G_N_ELEMENTS(stw_collectives_names) == STW_N_COLLECTIVES + 1);
const char *const stw_init_names[] = { "sharded", "host", "host-fp32", NULL };
G_STATIC_ASSERT(G_N_ELEMENTS(stw_init_names) == STW_N_INITS + 1);
const char *const stw_checkpoints_names[] = { "device", "host", NULL };
G_STATIC_ASSERT(G_N_ELEMENTS(stw_checkpoints_names) == STW_N_CHECKPOINTS + 1);
const char *const stw_op_kind_names[] = {
  "embed", "norm_embed", "norm_attn", "attn_qkv", "rope", "attn_core", "attn_out",
  "norm_post_attn", "norm_mlp", "mlp_in", "mlp_act", "mlp_out", "norm_post_mlp", "norm_final",
  "pooler", "lm_head", "loss", "moe_router", "norm_qk", "logit_softcap", "indexer",
  "linear_attn", "altup", NULL
};
G_STATIC_ASSERT(G_N_ELEMENTS(stw_op_kind_names) == STW_N_OP_KINDS + 1);
const char *const stw_norms_names[] = { "pre", "both", "post", "shared", NULL };
const char *const stw_vision_kind_names[] = { "siglip", "gemma4", "pixtral", "clip",
                                                "qwen2_vl", "qwen2_5_vl", "qwen3_vl",
                                                "internvl", "mllama", "glm4v", NULL };
G_STATIC_ASSERT(G_N_ELEMENTS(stw_vision_kind_names) == STW_N_VISION_KINDS + 1);
const char *const stw_vision_projector_names[] = { "default", "gemma3", "gemma4", "mistral3",
                                                     "llava", "paligemma", "qwen",
                                                     "idefics3", "internvl", "mllama",
                                                     "glm4v", "aya", NULL };
G_STATIC_ASSERT(G_N_ELEMENTS(stw_vision_projector_names) == STW_N_PROJECTORS + 1);
const char *const stw_linear_kind_names[] = { "gdn", "mamba2", "short_conv", "lightning",
                                                "mamba1", "kda", NULL };
G_STATIC_ASSERT(G_N_ELEMENTS(stw_linear_kind_names) == STW_N_LINEAR_KINDS + 1);
const char *const stw_activation_names[] = { "default", "gelu_new", "gelu", "relu", "xielu",
                                             "relu2", NULL };
G_STATIC_ASSERT(G_N_ELEMENTS(stw_activation_names) == STW_N_ACTS + 1);
const char *const stw_norm_type_names[] = { "default", "layernorm", "layernorm_no_bias",
                                            "layernorm_no_affine", "rmsnorm",
                                            "rmsnorm_no_affine", NULL };
G_STATIC_ASSERT(G_N_ELEMENTS(stw_norm_type_names) == STW_N_NORM_TYPES + 1);

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

const char *const stw_state_dtype_names[] = { "fp32", "bf16", NULL };

StwDtype
stw_state_dtype_at(int index)
{
  return index == 1 ? STW_DTYPE_BF16 : STW_DTYPE_FP32;
}

const char *
stw_state_dtype_name(StwDtype state)
{
  return stw_state_dtype_names[state == STW_DTYPE_BF16];
}

gboolean
stw_state_dtype_parse(const char *text, StwDtype *out)
{
  for (int i = 0; stw_state_dtype_names[i] != NULL; i++) {
    if (g_ascii_strcasecmp(text, stw_state_dtype_names[i]) == 0) {
      *out = stw_state_dtype_at(i);
      return TRUE;
    }
  }
  return FALSE;
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

const char *
stw_kernels_name(StwKernels kernels)
{
  return stw_kernels_names[kernels];
}

const char *
stw_optimizer_impl_name(StwOptimizerImpl impl)
{
  return stw_optimizer_impl_names[impl];
}

const char *
stw_loss_name(StwLoss loss)
{
  return stw_loss_names[loss];
}

const char *
stw_bias_name(StwBias bias)
{
  return stw_bias_names[bias];
}
