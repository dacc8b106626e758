/* cmd-synth.c — `stowage synth`: the trace of a model that has not run yet. */
#include <stdio.h>
#include <string.h>

#include <stowage/hardware.h>
#include <stowage/model.h>
#include <stowage/synth.h>
#include <stowage/units.h>

#include "cli.h"

int
stw_cmd_synth(int argc, char **argv)
{
  g_autofree char *model = NULL, *model_config = NULL, *batch = NULL, *seq = NULL, *dtype = NULL, *attention = NULL,
                  *hw_name = NULL, *memory = NULL, *output = NULL, *freeze = NULL;
  gboolean checkpointing = FALSE;
  GOptionEntry entries[] = {
    { "model", 'm', 0, STW_OPTION_TEXT, &model,
      "zoo model (see 'stowage models') or a model config .json", "M" },
    { "model-config", 0, 0, G_OPTION_ARG_FILENAME, &model_config, STW_CLI_MODEL_CONFIG_HELP,
      "FILE" },
    { "batch", 'b', 0, STW_OPTION_TEXT, &batch, "sequences per iteration (default 1)", "B" },
    { "seq", 's', 0, STW_OPTION_TEXT, &seq,
      "tokens per sequence (default: the model's maximum)", "S" },
    { "dtype", 0, 0, STW_OPTION_TEXT, &dtype, "compute dtype: bf16 (default), fp16, fp32",
      "T" },
    { "checkpointing", 'c', 0, G_OPTION_ARG_NONE, &checkpointing,
      "activation checkpointing per transformer block", NULL },
    { "attention", 0, 0, STW_OPTION_TEXT, &attention,
      "attention kernel: naive (default) or flash", "A" },
    { "freeze", 0, 0, STW_OPTION_TEXT, &freeze,
      "tensors nobody trains, by name (globs, comma-separated; e.g. 'h.*.attn.*,wte.weight'): "
      "no gradient, no optimizer state", "PATTERNS" },
    { "hw", 0, 0, STW_OPTION_TEXT, &hw_name,
      "hardware profile name or file (default " STW_HARDWARE_DEFAULT ")", "PROFILE" },
    { "memory", 0, 0, STW_OPTION_TEXT, &memory,
      "device memory to record, overriding the profile's (e.g. 40GiB)", "SIZE" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "trace file to write ('-': stdout)",
      "FILE" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx =
      g_option_context_new("- synthesize the trace of one training iteration");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Every forward and backward op of every layer, with the parameters it reads, the\n"
           "gradients it writes, the activation memory live at it and its modelled duration\n"
           "(docs/synth.md), then one optimizer op per tensor.\n\n"
           "Example: stowage synth --model gpt2-xl --batch 8 --seq 1024 --hw V100-32GB-PCIe3 "
           "--dtype fp16 -o gpt2-xl.json\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "synth"))
    return STW_EXIT_USAGE;
  if (argc > 1)
    return stw_cli_fail(STW_EXIT_USAGE, "synth: unexpected argument '%s'", argv[1]);
  if (!stw_cli_model_option("synth", &model, &model_config))
    return STW_EXIT_USAGE;
  if (model == NULL)
    return stw_cli_fail(STW_EXIT_USAGE, "synth: --model or --model-config is required (see "
                        "'stowage models')");
  if (output == NULL)
    return stw_cli_fail(STW_EXIT_USAGE, "synth: --output FILE is required ('-' for stdout)");
  const StwCliFile in[] = { { "--model", model } }, out[] = { { "--output", output } };
  if (!stw_cli_outputs_apart("synth", in, 1, out, 1))
    return STW_EXIT_USAGE;

  GError *error = NULL;
  StwModelConfig config;
  if (!stw_model_resolve(model, &config, &error))
    return stw_cli_error(error);

  StwSynthOptions opt = { .batch = 1, .seq = config.max_seq, .dtype = STW_DTYPE_BF16 };
  opt.checkpointing = checkpointing;
  opt.freeze = freeze;
  if (batch != NULL && !stw_cli_parse_count(batch, "--batch", 1, STW_SYNTH_MAX_BATCH, &opt.batch))
    return STW_EXIT_USAGE;
  if (seq != NULL && !stw_cli_parse_count(seq, "--seq", 1, config.max_seq, &opt.seq))
    return STW_EXIT_USAGE;
  int dt = opt.dtype, att = opt.attention;
  if (!stw_cli_parse_enum(dtype, "--dtype", stw_dtype_names, &dt) ||
      !stw_cli_parse_enum(attention, "--attention", stw_attention_names, &att))
    return STW_EXIT_USAGE;
  opt.dtype = (StwDtype)dt;
  opt.attention = (StwAttention)att;
  StwHardware hw;
  if (!stw_hardware_lookup(hw_name != NULL ? hw_name : STW_HARDWARE_DEFAULT, &hw, &error))
    return stw_cli_error(error);
  if (memory != NULL) {
    if (!stw_size_parse(memory, &hw.gpu_memory_bytes, &error)) {
      stw_cli_fail(STW_EXIT_USAGE, "--memory: %s", error->message);
      g_error_free(error);
      return STW_EXIT_USAGE;
    }
    if (hw.gpu_memory_bytes == 0)
      return stw_cli_fail(STW_EXIT_USAGE, "--memory: the device memory must be positive");
  }

  g_autoptr(StwTrace) trace = stw_synth_trace(&config, &opt, &hw, &error);
  if (trace == NULL) {
    /* the options do not fit the model or the hardware: a usage error */
    stw_cli_fail(STW_EXIT_USAGE, "synth: %s", error->message);
    g_error_free(error);
    return STW_EXIT_USAGE;
  }
  if (!stw_trace_save(trace, output, &error))
    return stw_cli_error(error);
  if (strcmp(output, "-") != 0) {
    g_autofree char *params = stw_cli_group_digits(stw_model_param_count(&config));
    guint64 frozen_numel = 0;
    guint32 frozen = stw_trace_frozen(trace, &frozen_numel);
    g_autofree char *frozen_params = stw_cli_group_digits(frozen_numel);
    g_autofree char *of_them = frozen > 0 ? g_strdup_printf(" (%u frozen: %s parameters)", frozen,
                                                            frozen_params)
                                          : g_strdup("");
    fprintf(stderr, "wrote %s: %s (%s parameters), %u tensors%s, %u ops\n", output,
            config.name, params, trace->tensors->len, of_them, trace->ops->len);
  }
  return STW_EXIT_OK;
}
