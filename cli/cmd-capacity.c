/* cmd-capacity.c — `stowage capacity`: the largest model of a family the hardware can train.
 * The library answers (whatif.h's StwCapacityQuery); this file reads the command line and
 * prints the table or the record. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <stowage/units.h>
#include <stowage/whatif.h>

#include "cli.h"

static void
progress(StwPolicy policy, const char *model, gboolean fits)
{
  if (!isatty(STDERR_FILENO))
    return;
  fprintf(stderr, "\rcapacity: %-14s %-16s %s   ", stw_policy_names[policy], model,
          fits ? "fits" : "does not fit");
  fflush(stderr);
}

static void
print_table(const StwCapacityQuery *q, const StwCapacityAnswer *answers, guint n)
{
  g_autoptr(StwTable) tab = stw_table_new(9, "<policy", "<largest model", "layers", "parameters",
                                          "iteration", "tokens/s", "MFU", "moves", "<bound by");
  for (guint k = 0; k < n; k++) {
    const StwCapacityAnswer *a = &answers[k];
    const char *policy = stw_policy_names[a->policy];
    if (!a->found) {
      stw_table_row(tab, policy, "none fits", "-", "-", "-", "-", "-", "-", a->bound_by);
      continue;
    }
    g_autofree char *layers = g_strdup_printf("%" G_GUINT64_FORMAT, a->best.layers);
    g_autofree char *params = stw_cli_group_digits(a->params);
    g_autofree char *it = stw_duration_format(a->point.iteration_ns);
    g_autofree char *mv = stw_size_format(a->point.h2d_bytes + a->point.d2h_bytes);
    g_autofree char *tps = NULL, *mfu = NULL;
    stw_cli_throughput_cells(&a->point.throughput, &tps, &mfu);
    stw_table_row(tab, policy, a->best.name, layers, params, it, tps, mfu, mv, a->bound_by);
  }
  const StwPlannerOptions *o = &q->options;
  const StwSynthOptions *so = &q->synth;
  g_autofree char *cpub = stw_size_format(o->budgets.cpu_bytes);
  g_autofree char *steps = so->micro_steps > 1 ? g_strdup_printf(
                                                     " in each of %" G_GUINT64_FORMAT
                                                     " micro-steps", so->micro_steps)
                                               : g_strdup("");
  g_autofree char *optimizer =
      so->optimizer_impl != STW_OPTIMIZER_FUSED
          ? g_strdup_printf("%s optimizer, ", stw_optimizer_impl_name(so->optimizer_impl))
          : g_strdup("");
  /* what was assumed, the defaults named as such */
  gboolean any = q->assumed[0] != '\0';
  printf("%s, %u GPU%s, %s of host memory; batch %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
         " tokens per GPU%s, %s, %s attention, %s kernels, %s%s%s%s%s%s%s%s\n", o->hw.name,
         o->world_size, o->world_size > 1 ? "s" : "", cpub, so->batch, so->seq, steps,
         !so->checkpointing                          ? "no checkpointing"
         : so->checkpoints == STW_CHECKPOINTS_HOST ? "checkpointing, the checkpoints in host memory"
                                                   : "checkpointing",
         stw_attention_name(so->attention), stw_kernels_name(so->kernels),
         optimizer,
         so->loss == STW_LOSS_CHUNKED  ? "chunked loss, "
         : so->loss == STW_LOSS_NATIVE ? "the loss in the logits' dtype, "
                                       : "",
         so->collectives == STW_COLLECTIVES_BLOCKING && o->world_size > 1
             ? "collectives on the compute stream, "
             : "",
         stw_dtype_name(so->dtype),
         o->state_dtype == STW_DTYPE_BF16 ? ", Adam's moments in bf16" : "",
         any ? " (defaults: " : "", q->assumed, any ? ")" : "");
  /* the hardware it assumes and where that came from, as plan and compare say them */
  g_autofree char *host = stw_cli_host_said(&o->hw);
  printf("%s: %s\nhost CPU %s\n", o->hw.name, o->hw.origin, host);
  g_autofree StwPolicy *policies = g_new(StwPolicy, MAX(n, 1));
  for (guint k = 0; k < n; k++)
    policies[k] = answers[k].policy;
  g_autofree char *layout = stw_cli_layout_assumed(o, o->world_size, policies, n);
  if (layout != NULL)
    printf("assumes %s\n", layout);
  printf("\n");
  if (so->lora_rank > 0)
    printf("LoRA rank %" G_GUINT64_FORMAT " on %s, the base frozen\n\n", so->lora_rank,
           so->lora_targets != NULL ? so->lora_targets : "q,v");
  stw_table_print(tab, stdout);
}

/* The command line as a request (NULL: a usage error, said); *JSON its --json. */
static StwRequest *
parse(int argc, char **argv, gboolean *json)
{
  g_auto(StwCliPlanning) pl = { 0 };
  g_autofree char *family = NULL, *hidden = NULL, *batch = NULL, *seq = NULL, *policy = NULL,
                  *attention = NULL, *kernels = NULL, *loss = NULL, *dtype = NULL,
                  *lora = NULL, *lora_targets = NULL, *micro_steps = NULL,
                  *optimizer_impl = NULL, *gradients = NULL, *collectives = NULL,
                  *reduce_bucket_size = NULL, *sub_group_size = NULL, *init = NULL,
                  *checkpoints = NULL;
  gboolean no_ckpt = FALSE, amp = FALSE;
  GOptionEntry entries[] = {
    STW_CLI_PLANNING_ENTRIES(pl),
    { "family", 'f', 0, STW_OPTION_TEXT, &family,
      "gpt (layers at --hidden), or a zoo family: gpt2, gpt3, patrickstar, llama, mistral, "
      "qwen2, neox, bert", "F" },
    { "hidden", 0, 0, STW_OPTION_TEXT, &hidden, "with --family gpt: the width (default 4096)",
      "D" },
    { "batch", 'b', 0, STW_OPTION_TEXT, &batch, "sequences per iteration (default 8)", "B" },
    { "seq", 's', 0, STW_OPTION_TEXT, &seq, "tokens per sequence (default 1024)", "S" },
    { "no-checkpointing", 0, 0, G_OPTION_ARG_NONE, &no_ckpt,
      "keep all activations (default: checkpoint every block)", NULL },
    { "checkpoints", 0, 0, STW_OPTION_TEXT, &checkpoints,
      "device (default) or host: where each checkpoint waits for its block's recomputation, "
      "as synth --checkpoints", "WHERE" },
    { "attention", 0, 0, STW_OPTION_TEXT, &attention, "flash (default) or naive", "A" },
    { "kernels", 0, 0, STW_OPTION_TEXT, &kernels,
      "eager (default: PyTorch eager, as synth --kernels) or fused", "K" },
    { "loss", 0, 0, STW_OPTION_TEXT, &loss,
      "full (default), native (in the logits' 16-bit dtype) or chunked (the LM head and "
      "cross-entropy over pieces of tokens), as synth --loss", "L" },
    { "micro-steps", 0, 0, STW_OPTION_TEXT, &micro_steps,
      "forward-backward passes per step (gradient accumulation), as synth --micro-steps "
      "(default 1)", "K" },
    { "gradients", 0, 0, STW_OPTION_TEXT, &gradients,
      "device (default), host or host-via-device, where the loop keeps its gradients, as synth "
      "--gradients",
      "WHERE" },
    { "collectives", 0, 0, STW_OPTION_TEXT, &collectives,
      "overlapped (default) or blocking, whether the loop's collectives hold the compute "
      "stream, as synth --collectives", "WHEN" },
    { "optimizer-impl", 0, 0, STW_OPTION_TEXT, &optimizer_impl,
      "fused (default), foreach, for-loop or deepspeed, as synth --optimizer-impl", "I" },
    { "init", 0, 0, STW_OPTION_TEXT, &init,
      "sharded (default), host or host-fp32: how each rank builds the model, as synth --init",
      "HOW" },
    { "reduce-bucket-size", 0, 0, STW_OPTION_TEXT, &reduce_bucket_size,
      "with --optimizer-impl deepspeed: its reduce_bucket_size, as synth's", "N" },
    { "sub-group-size", 0, 0, STW_OPTION_TEXT, &sub_group_size,
      "with --optimizer-impl deepspeed: its sub_group_size, as synth's", "N" },
    { "dtype", 0, 0, STW_OPTION_TEXT, &dtype,
      "compute dtype: bf16 (default; fp16 where the GPU has no bf16), fp16 or fp32", "T" },
    { "amp", 0, 0, G_OPTION_ARG_NONE, &amp,
      "PyTorch's automatic mixed precision: fp32 weights, the GEMMs in --dtype, as synth --amp",
      NULL },
    { "lora", 0, 0, STW_OPTION_TEXT, &lora,
      "LoRA-tune each model: adapters of this rank, the base frozen", "RANK" },
    { "lora-targets", 0, 0, STW_OPTION_TEXT, &lora_targets,
      "with --lora: q, k, v, o, gate, up, down (default q,v)", "LIST" },
    { "policy", 'p', 0, STW_OPTION_TEXT, &policy, "comma list of policies, or all (default)",
      "LIST" },
    { "json", 0, 0, G_OPTION_ARG_NONE, json, "machine-readable output", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- the largest model that fits");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "For each policy, the largest model of the family whose checked plan fits the GPU\n"
           "and the host memory: layers at a fixed width (--family gpt), bisected, or the\n"
           "zoo's sizes in order.\n\n"
           "With --gpus N the ranks train data-parallel in chunk groups and share the host\n"
           "memory and its CPU Adam rate; the batch is per GPU.\n\n"
           "Example: stowage capacity --hw A100-80GB-PCIe4 --gpus 8 --cpu 240GiB --family gpt "
           "--hidden 4096\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "capacity"))
    return NULL;
  if (argc > 1) {
    stw_cli_fail(STW_EXIT_USAGE, "capacity: unexpected argument '%s'", argv[1]);
    return NULL;
  }
  StwRequest *r = stw_request_new(&stw_request_capacity_kind);
  stw_cli_request_from_entries(r, entries);
  return r;
}

int
stw_cmd_capacity(int argc, char **argv)
{
  gboolean json = FALSE;
  g_autoptr(StwRequest) r = parse(argc, argv, &json);
  if (r == NULL)
    return STW_EXIT_USAGE;
  StwCapacityQuery q;
  GError *error = NULL;
  if (!stw_request_capacity(r, &q, &error)) {
    stw_capacity_query_clear(&q);
    return stw_cli_error(error);
  }
  guint n = q.policies->len;
  StwCapacityAnswer *answers = g_new0(StwCapacityAnswer, MAX(n, 1));
  for (guint k = 0; k < n; k++)
    stw_capacity_run(&q, (StwPolicy)g_array_index(q.policies, int, k), &answers[k], progress);
  if (isatty(STDERR_FILENO))
    fprintf(stderr, "\r%*s\r", 60, "");
  if (json) {
    g_autofree char *text = stw_capacity_json(&q, answers, n);
    printf("%s\n", text);
  } else {
    print_table(&q, answers, n);
  }
  for (guint k = 0; k < n; k++)
    stw_capacity_answer_clear(&answers[k]);
  g_free(answers);
  stw_capacity_query_clear(&q);
  return STW_EXIT_OK;
}
