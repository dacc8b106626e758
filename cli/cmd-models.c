/* cmd-models.c — `stowage models`: the zoo with exact parameter counts. */
#include <stdio.h>
#include <string.h>

#include <stowage/model.h>
#include <stowage/units.h>

#include "cli.h"
#include "json.h"

int
stw_cmd_models(int argc, char **argv)
{
  gboolean json = FALSE;
  g_autofree char *family = NULL;
  GOptionEntry entries[] = {
    { "family", 'f', 0, G_OPTION_ARG_STRING, &family,
      "only this family: gpt2, gpt3, patrickstar, llama, bert", "F" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "machine-readable output", NULL },
    { NULL }
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- list the model zoo");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Model data is 14 bytes per parameter with a 16-bit compute dtype: the compute\n"
           "copy (2), fp32 master weights (4), Adam momentum (4) and variance (4).\n\n"
           "Example: stowage models --family llama\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "models"))
    return STW_EXIT_USAGE;
  if (argc > 1)
    return stw_cli_fail(STW_EXIT_USAGE, "models: unexpected argument '%s'", argv[1]);

  int fam = 0;
  if (!stw_cli_parse_enum(family, "--family", stw_zoo_families, &fam))
    return STW_EXIT_USAGE;
  if (family != NULL) { /* as the zoo spells it */
    g_free(family);
    family = g_strdup(stw_zoo_families[fam]);
  }
  gsize n;
  const StwZooEntry *zoo = stw_zoo_entries(&n);

  cJSON *arr = cJSON_CreateArray();
  g_autoptr(StwTable) table = stw_table_new(11, "<model", "<family", "<arch", "layers", "hidden",
                                            "heads", "kv", "ffn", "vocab", "parameters",
                                            "model data");
  for (gsize i = 0; i < n; i++) {
    const StwModelConfig *c = &zoo[i].config;
    if (family != NULL && strcmp(zoo[i].family, family) != 0)
      continue;
    guint64 params = stw_model_param_count(c);
    if (json) {
      cJSON *o = stw_model_config_to_json(c, FALSE);
      cJSON_AddStringToObject(o, "family", zoo[i].family);
      cJSON_AddStringToObject(o, "source", zoo[i].note);
      stw_json_add_u64(o, "params", params);
      stw_json_add_u64(o, "model_bytes_16bit", params * 14);
      cJSON_AddItemToArray(arr, o);
      continue;
    }
    char num[9][32];
    guint64 v[] = { c->layers, c->hidden, c->heads, c->kv_heads, c->ffn, c->vocab };
    for (gsize k = 0; k < G_N_ELEMENTS(v); k++)
      g_snprintf(num[k], sizeof num[k], "%" G_GUINT64_FORMAT, v[k]);
    g_autofree char *p = stw_cli_group_digits(params);
    g_autofree char *bytes = stw_size_format(params * 14);
    stw_table_row(table, c->name, zoo[i].family, stw_arch_name(c->arch), num[0], num[1], num[2],
                  num[3], num[4], num[5], p, bytes);
  }
  if (json) {
    char *text = cJSON_Print(arr);
    printf("%s\n", text);
    cJSON_free(text);
  } else {
    stw_table_print(table, stdout);
  }
  cJSON_Delete(arr);
  return STW_EXIT_OK;
}
