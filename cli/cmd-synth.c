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
  char *model, *model_config, *batch, *seq, *dtype, *attention, *kernels, *loss, *micro_steps,
      *checkpoint_every, *hw_name, *memory, *output, *freeze, *lora, *lora_targets,
      *optimizer_impl, *images, *image_size, *vision_trained, *gradients, *collectives,
      *reduce_bucket_size, *sub_group_size, *init, *checkpoints;
  gboolean checkpointing, amp;
} Line;

static void
line_clear(Line *l)
{
  char **texts[] = { &l->model, &l->model_config, &l->batch, &l->seq, &l->dtype, &l->attention,
                     &l->kernels, &l->loss, &l->micro_steps, &l->checkpoint_every, &l->hw_name,
                     &l->memory, &l->output, &l->freeze, &l->lora, &l->lora_targets,
                     &l->optimizer_impl, &l->images, &l->image_size, &l->vision_trained,
                     &l->gradients, &l->collectives, &l->reduce_bucket_size,
                     &l->sub_group_size, &l->init, &l->checkpoints };
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
    { "dtype", 0, 0, STW_OPTION_TEXT, &l->dtype,
      "compute dtype: bf16 (default; fp16 on a GPU without bf16), fp16, fp32", "T" },
    { "checkpointing", 'c', 0, G_OPTION_ARG_NONE, &l->checkpointing,
      "activation checkpointing per transformer block", NULL },
    { "amp", 0, 0, G_OPTION_ARG_NONE, &l->amp,
      "PyTorch's automatic mixed precision (autocast): fp32 weights, gradients and optimizer, "
      "each GEMM's weights cast to --dtype at its use", NULL },
    { "checkpoint-every", 0, 0, STW_OPTION_TEXT, &l->checkpoint_every,
      "checkpointing of segments of N blocks: only a segment's input kept, its blocks "
      "recomputed together (Megatron's --recompute-num-layers; implies --checkpointing)", "N" },
    { "checkpoints", 0, 0, STW_OPTION_TEXT, &l->checkpoints,
      "with --checkpointing: where each block's input waits for its recomputation: device "
      "(default) or host (copied to host memory after the block's forward and back before its "
      "recomputation: DeepSpeed's cpu_checkpointing)", "WHERE" },
    { "attention", 0, 0, STW_OPTION_TEXT, &l->attention,
      "attention kernel: naive (default) or flash", "A" },
    { "kernels", 0, 0, STW_OPTION_TEXT, &l->kernels,
      "the ops between the GEMMs: eager (default: PyTorch eager as Hugging Face's modules run "
      "them, chains of kernels, fp32 upcasts) or fused (one kernel each: compiled or fused "
      "models, stowage's trainer)", "K" },
    { "loss", 0, 0, STW_OPTION_TEXT, &l->loss,
      "the loss: full (default: every token's logits kept for backward, the cross-entropy in "
      "fp32, as Hugging Face's models), native (the same in the logits' 16-bit dtype: "
      "nn.CrossEntropyLoss on a 16-bit model without autocast, Hugging Face's GPT-2 before "
      "transformers 4.46) or chunked (the LM head and cross-entropy fused over pieces of "
      "tokens, no logits kept: Liger's FusedLinearCrossEntropy, torchtune's chunked loss)",
      "L" },
    { "micro-steps", 0, 0, STW_OPTION_TEXT, &l->micro_steps,
      "forward-backward passes per iteration, each over --batch sequences, then one optimizer "
      "step (gradient accumulation; default 1): the gradients are then the framework's "
      "tensors, held to the step", "K" },
    { "gradients", 0, 0, STW_OPTION_TEXT, &l->gradients,
      "where the loop keeps its gradients to the step: device (default), host (each "
      "micro-step's copied to host memory after the backward op that last writes it, freed on "
      "the device and added there to the earlier ones': FSDP's CPU offload) or host-via-device "
      "(the same, the host's sum brought back and added on the device, the copies on the "
      "compute stream: DeepSpeed's ZeRO-Offload)", "WHERE" },
    { "collectives", 0, 0, STW_OPTION_TEXT, &l->collectives,
      "whether the loop's collectives hold the compute stream: overlapped (default: on a "
      "stream of their own) or blocking (each op waits for those issued before it: DeepSpeed "
      "ZeRO-1 and 2 with overlap_comm off, its default there)", "WHEN" },
    { "optimizer-impl", 0, 0, STW_OPTION_TEXT, &l->optimizer_impl,
      "how the optimizer steps the tensors on the GPU: fused (default: one kernel, torch's "
      "fused=True, FusedAdam), foreach (torch 2's default on CUDA: seven passes, many tensors a "
      "launch), for-loop (torch 1's: seven launches a tensor) or deepspeed (DeepSpeed ZeRO's "
      "step without offload: fp64 norms, the gradients cast to fp32, the weights cast back)",
      "I" },
    { "init", 0, 0, STW_OPTION_TEXT, &l->init,
      "how each rank builds its model before training it: sharded (default: straight into its "
      "chunks or shards, as stowage's trainer and DeepSpeed's zero.Init), host (whole on the "
      "host in its dtype first: from_pretrained, then wrapped) or host-fp32 (whole on the host "
      "in fp32 first: a model constructed in PyTorch's default dtype, ColossalAI's "
      "ColoInitContext on the CPU); the plan holds every rank's start-up to the host budget",
      "HOW" },
    { "reduce-bucket-size", 0, 0, STW_OPTION_TEXT, &l->reduce_bucket_size,
      "with --optimizer-impl deepspeed: its ZeRO configuration's reduce_bucket_size, the "
      "gradients it reduces at once, in elements (default 500000000, DeepSpeed's; PyTorch "
      "Lightning's DeepSpeedStrategy sets 200000000)", "N" },
    { "sub-group-size", 0, 0, STW_OPTION_TEXT, &l->sub_group_size,
      "with --optimizer-impl deepspeed: its sub_group_size, the elements of a rank's partition "
      "whose gradients its step casts to fp32 at once (default 1000000000, DeepSpeed's; PyTorch "
      "Lightning's DeepSpeedStrategy sets 1000000000000, the whole partition)", "N" },
    { "freeze", 0, 0, STW_OPTION_TEXT, &l->freeze,
      "tensors nobody trains, by name (globs, comma-separated; e.g. 'h.*.attn.*,wte.weight'): "
      "no gradient, no optimizer state", "PATTERNS" },
    { "lora", 0, 0, STW_OPTION_TEXT, &l->lora,
      "LoRA adapters of this rank on --lora-targets, the rest of the model frozen", "RANK" },
    { "lora-targets", 0, 0, STW_OPTION_TEXT, &l->lora_targets,
      "the projections --lora adapts, by role: q, k, v, o, gate, up, down (comma-separated; "
      "default q,v)", "LIST" },
    { "images", 0, 0, STW_OPTION_TEXT, &l->images,
      "images in each sequence, run through a vision-language model's tower (frozen) before "
      "its language model reads their features (default: none, a text step)", "N" },
    { "image-size", 0, 0, STW_OPTION_TEXT, &l->image_size,
      "with --images: their side in pixels (default: the size the tower's processor resizes "
      "images or their tiles to; required for Qwen-VL's, Pixtral's and GLM-4V's towers)", "PX" },
    { "vision-trained", 0, 0, STW_OPTION_TEXT, &l->vision_trained,
      "with --images: what of the vision side they train: none (default: the tower and "
      "projector frozen, forward only), projector (the tower frozen below it) or all", "W" },
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

/* The line as a request (stw_request_synth reads it, as it reads Python's). */
static StwRequest *
request_of(const Line *l)
{
  StwRequest *r = stw_request_new(&stw_request_synth_kind);
  const char *const pairs[][2] = {
    { "model", l->model }, { "batch", l->batch }, { "seq", l->seq }, { "dtype", l->dtype },
    { "attention", l->attention }, { "kernels", l->kernels }, { "loss", l->loss },
    { "micro-steps", l->micro_steps }, { "freeze", l->freeze }, { "lora", l->lora },
    { "lora-targets", l->lora_targets }, { "hw", l->hw_name }, { "memory", l->memory },
    { "checkpoint-every", l->checkpoint_every }, { "optimizer-impl", l->optimizer_impl },
    { "images", l->images }, { "image-size", l->image_size },
    { "vision-trained", l->vision_trained }, { "gradients", l->gradients },
    { "collectives", l->collectives }, { "reduce-bucket-size", l->reduce_bucket_size },
    { "sub-group-size", l->sub_group_size }, { "init", l->init },
    { "checkpoints", l->checkpoints }
  };
  for (gsize i = 0; i < G_N_ELEMENTS(pairs); i++)
    stw_request_set(r, pairs[i][0], pairs[i][1]);
  stw_request_set_flag(r, "checkpointing", l->checkpointing);
  stw_request_set_flag(r, "amp", l->amp);
  return r;
}

int
stw_cmd_synth(int argc, char **argv)
{
  g_auto(Line) l = { 0 };
  if (!parse(&l, argc, argv))
    return STW_EXIT_USAGE;
  GError *error = NULL;
  g_autoptr(StwRequest) r = request_of(&l);
  g_autoptr(StwTrace) trace = stw_request_synth(r, &error);
  if (trace == NULL)
    return stw_cli_error(error);
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
    g_autofree char *images =
        trace->model.images == 0
            ? g_strdup("")
            : g_strdup_printf("; %" G_GUINT64_FORMAT " image%s of %" G_GUINT64_FORMAT " x %"
                              G_GUINT64_FORMAT " pixels a sequence through the vision tower",
                              trace->model.images, trace->model.images == 1 ? "" : "s",
                              trace->model.image_size, trace->model.image_size);
    fprintf(stderr, "wrote %s: %s (%s parameters), %u tensors%s, %u ops%s\n", l.output,
            trace->model.name, params, trace->tensors->len, of_them, trace->ops->len, images);
    if (l.dtype == NULL && stw_trace_compute_dtype(trace) == STW_DTYPE_FP16) /* the default */
      fprintf(stderr, "synth: %s has no bf16: the model computes in fp16 (--dtype to choose)\n",
              trace->device.name);
  }
  return STW_EXIT_OK;
}
