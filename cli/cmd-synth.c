/* cmd-synth.c — `stowage synth`: the trace of a model that has not run yet. */
#include <stdio.h>
#include <string.h>

#include <stowage/hardware.h>
#include <stowage/model.h>
#include <stowage/synth.h>
#include <stowage/units.h>

#include "cli.h"

/* The command line as the user typed it. */
typedef struct {
  char *model, *model_config, *batch, *seq, *dtype, *attention, *kernels, *loss, *hw_name,
      *memory, *output, *freeze, *lora, *lora_targets;
  gboolean checkpointing;
} Line;

static void
line_clear(Line *l)
{
  char **texts[] = { &l->model, &l->model_config, &l->batch, &l->seq, &l->dtype, &l->attention,
                     &l->kernels, &l->loss, &l->hw_name, &l->memory, &l->output, &l->freeze,
                     &l->lora, &l->lora_targets };
  for (gsize i = 0; i < G_N_ELEMENTS(texts); i++)
    g_clear_pointer(texts[i], g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Line, line_clear)

static gboolean
parse(Line *l, int argc, char **argv)
{
  GOptionEntry entries[] = {
    { "model", 'm', 0, STW_OPTION_TEXT, &l->model,
      "zoo model (see 'stowage models') or a model config .json", "M" },
    { "model-config", 0, 0, G_OPTION_ARG_FILENAME, &l->model_config, STW_CLI_MODEL_CONFIG_HELP,
      "FILE" },
    { "batch", 'b', 0, STW_OPTION_TEXT, &l->batch, "sequences per iteration (default 1)", "B" },
    { "seq", 's', 0, STW_OPTION_TEXT, &l->seq,
      "tokens per sequence (default: the model's maximum)", "S" },
    { "dtype", 0, 0, STW_OPTION_TEXT, &l->dtype, "compute dtype: bf16 (default), fp16, fp32",
      "T" },
    { "checkpointing", 'c', 0, G_OPTION_ARG_NONE, &l->checkpointing,
      "activation checkpointing per transformer block", NULL },
    { "attention", 0, 0, STW_OPTION_TEXT, &l->attention,
      "attention kernel: naive (default) or flash", "A" },
    { "kernels", 0, 0, STW_OPTION_TEXT, &l->kernels,
      "the ops between the GEMMs: eager (default: PyTorch eager as Hugging Face's modules run "
      "them, chains of kernels, fp32 upcasts) or fused (one kernel each: compiled or fused "
      "models, stowage's trainer)", "K" },
    { "loss", 0, 0, STW_OPTION_TEXT, &l->loss,
      "the loss: full (default: every token's logits kept for backward, as Hugging Face's "
      "models) or chunked (the LM head and cross-entropy fused over pieces of tokens, no logits "
      "kept: Liger's FusedLinearCrossEntropy, torchtune's chunked loss)", "L" },
    { "freeze", 0, 0, STW_OPTION_TEXT, &l->freeze,
      "tensors nobody trains, by name (globs, comma-separated; e.g. 'h.*.attn.*,wte.weight'): "
      "no gradient, no optimizer state", "PATTERNS" },
    { "lora", 0, 0, STW_OPTION_TEXT, &l->lora,
      "LoRA adapters of this rank on --lora-targets, the rest of the model frozen", "RANK" },
    { "lora-targets", 0, 0, STW_OPTION_TEXT, &l->lora_targets,
      "the projections --lora adapts, by role: q, k, v, o, gate, up, down (comma-separated; "
      "default q,v)", "LIST" },
    { "hw", 0, 0, STW_OPTION_TEXT, &l->hw_name,
      "hardware profile name or file (default " STW_HARDWARE_DEFAULT ")", "PROFILE" },
    { "memory", 0, 0, STW_OPTION_TEXT, &l->memory,
      "device memory to record, overriding the profile's (e.g. 40GiB)", "SIZE" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &l->output, "trace file to write ('-': stdout)",
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
    return FALSE;
  if (argc > 1)
    return stw_cli_fail(STW_EXIT_USAGE, "synth: unexpected argument '%s'", argv[1]) && FALSE;
  if (!stw_cli_model_option("synth", &l->model, &l->model_config))
    return FALSE;
  if (l->model == NULL)
    return stw_cli_fail(STW_EXIT_USAGE, "synth: --model or --model-config is required (see "
                        "'stowage models')") && FALSE;
  if (l->output == NULL)
    return stw_cli_fail(STW_EXIT_USAGE, "synth: --output FILE is required ('-' for stdout)") &&
           FALSE;
  const StwCliFile in[] = { { "--model", l->model } }, out[] = { { "--output", l->output } };
  return stw_cli_outputs_apart("synth", in, 1, out, 1);
}

/* The synthesis options and the hardware the line asks for, for CONFIG. */
static int
resolve(const Line *l, const StwModelConfig *config, StwSynthOptions *opt, StwHardware *hw)
{
  *opt = (StwSynthOptions){ .batch = 1, .seq = config->max_seq, .dtype = STW_DTYPE_BF16,
                            .checkpointing = l->checkpointing, .kernels = STW_KERNELS_DEFAULT,
                            .freeze = l->freeze, .lora_targets = l->lora_targets };
  int dt = opt->dtype, att = opt->attention, kern = opt->kernels, loss = opt->loss;
  if ((l->batch != NULL &&
       !stw_cli_parse_count(l->batch, "--batch", 1, STW_SYNTH_MAX_BATCH, &opt->batch)) ||
      (l->seq != NULL && !stw_cli_parse_count(l->seq, "--seq", 1, config->max_seq, &opt->seq)) ||
      !stw_cli_parse_enum(l->dtype, "--dtype", stw_dtype_names, &dt) ||
      !stw_cli_parse_enum(l->attention, "--attention", stw_attention_names, &att) ||
      !stw_cli_parse_enum(l->kernels, "--kernels", stw_kernels_names, &kern) ||
      !stw_cli_parse_enum(l->loss, "--loss", stw_loss_names, &loss) ||
      (l->lora != NULL && !stw_cli_parse_count(l->lora, "--lora", 1, 65536, &opt->lora_rank)))
    return STW_EXIT_USAGE;
  opt->dtype = (StwDtype)dt;
  opt->attention = (StwAttention)att;
  opt->kernels = (StwKernels)kern;
  opt->loss = (StwLoss)loss;
  GError *error = NULL;
  if (!stw_hardware_lookup(l->hw_name != NULL ? l->hw_name : STW_HARDWARE_DEFAULT, hw, &error))
    return stw_cli_error(error);
  if (l->memory != NULL && !stw_cli_parse_budget(l->memory, "--memory", &hw->gpu_memory_bytes))
    return STW_EXIT_USAGE;
  return STW_EXIT_OK;
}

int
stw_cmd_synth(int argc, char **argv)
{
  g_auto(Line) l = { 0 };
  if (!parse(&l, argc, argv))
    return STW_EXIT_USAGE;
  GError *error = NULL;
  StwModelConfig config;
  StwSynthOptions opt;
  StwHardware hw;
  if (!stw_model_resolve(l.model, &config, &error))
    return stw_cli_error(error);
  int status = resolve(&l, &config, &opt, &hw);
  if (status != STW_EXIT_OK)
    return status;
  g_autoptr(StwTrace) trace = stw_synth_trace(&config, &opt, &hw, &error);
  if (trace == NULL) {
    /* the options do not fit the model or the hardware: a usage error */
    stw_cli_fail(STW_EXIT_USAGE, "synth: %s", error->message);
    g_error_free(error);
    return STW_EXIT_USAGE;
  }
  if (!stw_trace_save(trace, l.output, &error))
    return stw_cli_error(error);
  if (strcmp(l.output, "-") != 0) {
    guint64 numel = 0; /* the model's, and the adapters' with --lora */
    for (guint i = 0; i < trace->tensors->len; i++)
      numel += stw_trace_tensor(trace, i)->numel;
    g_autofree char *params = stw_cli_group_digits(numel);
    guint64 frozen_numel = 0;
    guint32 frozen = stw_trace_frozen(trace, &frozen_numel);
    g_autofree char *frozen_params = stw_cli_group_digits(frozen_numel);
    g_autofree char *of_them = frozen > 0 ? g_strdup_printf(" (%u frozen: %s parameters)", frozen,
                                                            frozen_params)
                                          : g_strdup("");
    fprintf(stderr, "wrote %s: %s (%s parameters), %u tensors%s, %u ops\n", l.output,
            config.name, params, trace->tensors->len, of_them, trace->ops->len);
  }
  return STW_EXIT_OK;
}
