/* model-file.c — a model named on the command line: a zoo name, or a model file in stowage's
 * format or Hugging Face's config.json (model-hf.c), told apart by the file's members. */
#include "config.h"

#include <stowage/model.h>

#include "json.h"

#include <string.h>

/* A small file: its kind named when another kind is given. */
static const StwJsonLimits model_limits = { .format = "stowage-model", .max_values = 1u << 16,
                                          .max_array = 1u << 12 };

static gboolean
read_config_file(StwJsonReader *r, const cJSON *root, gpointer out, GError **error)
{
  if (stw_model_config_is_hf(root))
    return stw_model_config_read_hf(r, root, out, error);
  return stw_model_config_read(r, root, TRUE, out, error);
}

gboolean
stw_model_config_parse(const char *file, const char *text, gsize len, StwModelConfig *out,
                       GError **error)
{
  return stw_json_read_text(file, text, len, &model_limits, read_config_file, out, error);
}

gboolean
stw_model_config_load(const char *file, StwModelConfig *out, GError **error)
{
  return stw_json_read_file(file, 1u << 20, &model_limits, read_config_file, out, error);
}

gboolean
stw_model_resolve(const char *name_or_file, StwModelConfig *out, GError **error)
{
  if (g_str_has_suffix(name_or_file, ".json") || strchr(name_or_file, '/') != NULL)
    return stw_model_config_load(name_or_file, out, error);
  return stw_zoo_lookup(name_or_file, out, error);
}

guint64
stw_model_active_param_count(const StwModelConfig *c)
{
  guint64 params = stw_model_param_count(c);
  guint64 E = stw_model_experts(c), k = stw_model_routed_experts(c);
  guint64 d = c->expert_latent != 0 ? c->expert_latent : c->hidden; /* what experts read */
  guint64 ups = c->mlp_ungated ? 1 : 2; /* the gate's and up's projections, or up's */
  guint64 expert = (ups + 1) * d * c->ffn +
                   (stw_model_has_bias(c, STW_SITE_MLP) ? ups * c->ffn + d : 0);
  /* the blocks of experts: those with an MLP that is not dense */
  return params - stw_model_tower_param_count(c) -
         (E - k) * expert * (stw_model_mlp_blocks(c) - stw_model_dense_blocks(c));
}

char *
stw_model_record_json(const StwModelConfig *c)
{
  guint64 params = stw_model_param_count(c);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "model", stw_model_config_to_json(c, TRUE));
  stw_json_add_u64(o, "params", params);
  stw_json_add_u64(o, "active_params", stw_model_active_param_count(c));
  if (c->vision_layers != 0 || c->audio_layers != 0)
    stw_json_add_u64(o, "tower_params", stw_model_tower_param_count(c));
  stw_json_add_u64(o, "model_bytes_16bit", stw_model_data_bytes(c));
  return stw_json_take_text(o, TRUE);
}

char *
stw_zoo_json(const char *family)
{
  gsize n;
  const StwZooEntry *zoo = stw_zoo_entries(&n);
  cJSON *arr = cJSON_CreateArray();
  for (gsize i = 0; i < n; i++) {
    if (family != NULL && strcmp(zoo[i].family, family) != 0)
      continue;
    guint64 params = stw_model_param_count(&zoo[i].config);
    cJSON *o = stw_model_config_to_json(&zoo[i].config, FALSE);
    cJSON_AddStringToObject(o, "family", zoo[i].family);
    cJSON_AddStringToObject(o, "source", zoo[i].note);
    stw_json_add_u64(o, "params", params);
    stw_json_add_u64(o, "model_bytes_16bit", params * 14);
    cJSON_AddItemToArray(arr, o);
  }
  return stw_json_take_text(arr, TRUE);
}
