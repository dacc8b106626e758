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
