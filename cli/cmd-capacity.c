/* cmd-capacity.c — `stowage capacity`: the largest model of a family the hardware can train. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <stowage/synth.h>
#include <stowage/units.h>
#include <stowage/whatif.h>

#include "cli.h"

typedef struct {
  const StwPlannerOptions *o;
  const StwHardware *hw;
  StwSynthOptions so;
  StwPolicy policy;
  StwWhatifPoint last;  /* of the last feasible probe */
  guint64 bound_params; /* the smallest model that did not fit, and why */
  char *bound_why;
} Probe;

/* What stopped a policy at its largest model: the budget the next larger model's plan failed on
 * (the planner's message names it). */
static const char *
bound_by(const Probe *pr)
{
  if (pr->bound_why == NULL)
    return "nothing larger tried";
  if (strstr(pr->bound_why, "host budget") != NULL)
    return "host memory";
  if (strstr(pr->bound_why, "GPU budget") != NULL)
    return "GPU memory";
  return "the model's size";
}

/* Synthesizes CFG and plans it; TRUE when the policy fits. */
static gboolean
fits(Probe *pr, const StwModelConfig *cfg)
{
  StwSynthOptions so = pr->so;
  so.seq = MIN(so.seq, cfg->max_seq);
  g_autoptr(StwTrace) t = stw_synth_trace(cfg, &so, pr->hw, NULL);
  if (t == NULL)
    return FALSE;
  StwWhatifPoint pt;
  stw_whatif_run(t, pr->o, pr->policy, pr->o->budgets.gpu_bytes, STW_WHATIF_UNKNOWN, &pt);
  if (isatty(STDERR_FILENO)) {
    fprintf(stderr, "\rcapacity: %-14s %-16s %s   ", stw_policy_names[pr->policy], cfg->name,
            pt.feasible ? "fits" : "does not fit");
    fflush(stderr);
  }
  if (!pt.feasible) {
    guint64 n = stw_model_param_count(cfg);
    if (pr->bound_why == NULL || n < pr->bound_params) {
      g_free(pr->bound_why);
      pr->bound_why = g_strdup(pt.why);
      pr->bound_params = n;
    }
    stw_whatif_point_clear(&pt);
    return FALSE;
  }
  stw_whatif_point_clear(&pr->last);
  pr->last = pt;
  return TRUE;
}

static void
gpt_of_width(StwModelConfig *c, guint64 hidden, guint64 layers, guint64 seq)
{
  memset(c, 0, sizeof *c);
  g_snprintf(c->name, sizeof c->name, "gpt-h%" G_GUINT64_FORMAT "-l%" G_GUINT64_FORMAT, hidden,
             layers);
  c->arch = STW_ARCH_GPT;
  c->layers = layers;
  c->hidden = hidden;
  c->heads = hidden % 128 == 0 ? hidden / 128 : hidden % 64 == 0 ? hidden / 64 : 1;
  c->kv_heads = c->heads;
  c->ffn = 4 * hidden;
  c->vocab = 50257;
  c->max_seq = MAX(seq, 1024);
  c->tied = TRUE;
}

/* Depths above a bisection's answer that are tried too: feasibility need not be monotone in the
 * layers (a chunk size or a placement that fits one depth can miss the next). */
#define NEIGHBOURS 4

/* The largest GPT of WIDTH whose plan fits, by layers: bisected, then the NEIGHBOURS depths above
 * the answer tried, and bisected again above any of them that fits. FALSE when none fits. */
static gboolean
largest_by_layers(Probe *pr, guint64 width, StwModelConfig *best)
{
  gboolean any = FALSE;
  guint64 lo = 0, hi = STW_MODEL_MAX_LAYERS;
  for (;;) {
    while (lo < hi) { /* the largest L that fits, in [lo, hi], lo fitting (or 0) */
      guint64 mid = lo + (hi - lo + 1) / 2;
      StwModelConfig c;
      gpt_of_width(&c, width, mid, pr->so.seq);
      if (fits(pr, &c)) {
        lo = mid;
        *best = c;
        any = TRUE;
      } else {
        hi = mid - 1;
      }
    }
    guint64 above = 0;
    for (guint64 l = lo + 2; l <= MIN(lo + 1 + NEIGHBOURS, STW_MODEL_MAX_LAYERS) && !above; l++) {
      StwModelConfig c; /* lo + 1 failed in the bisection */
      gpt_of_width(&c, width, l, pr->so.seq);
      if (fits(pr, &c)) {
        above = l;
        *best = c;
        any = TRUE;
      }
    }
    if (above == 0)
      return any;
    lo = above;
    hi = STW_MODEL_MAX_LAYERS;
  }
}

/* The largest of MEMBERS (zoo models) whose plan fits. FALSE when none fits. */
static gboolean
largest_of(Probe *pr, const GArray *members, StwModelConfig *best)
{
  gboolean any = FALSE;
  for (guint i = 0; i < members->len; i++) {
    const StwModelConfig *c = &g_array_index(members, StwModelConfig, i);
    if (stw_model_param_count(c) <= (any ? stw_model_param_count(best) : 0))
      continue;
    if (fits(pr, c)) {
      *best = *c;
      any = TRUE;
    }
  }
  return any;
}

/* --family: gpt (layers at a width), or one of the zoo's families. */
static gboolean
parse_family(const char *family, gboolean *by_layers, GArray *members)
{
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  g_ptr_array_add(names, (gpointer) "gpt");
  for (int i = 0; stw_zoo_families[i] != NULL; i++)
    g_ptr_array_add(names, (gpointer)stw_zoo_families[i]);
  g_ptr_array_add(names, NULL);
  int f = 0;
  if (!stw_cli_parse_enum(family, "--family", (const char *const *)names->pdata, &f))
    return FALSE;
  *by_layers = f == 0;
  gsize n_zoo;
  const StwZooEntry *zoo = stw_zoo_entries(&n_zoo);
  for (gsize i = 0; f > 0 && i < n_zoo; i++) {
    if (strcmp(zoo[i].family, stw_zoo_families[f - 1]) == 0)
      g_array_append_val(members, zoo[i].config);
  }
  return TRUE;
}

int
stw_cmd_capacity(int argc, char **argv)
{
  g_auto(StwCliPlanning) pl = { 0 };
  g_autofree char *family = NULL, *hidden = NULL, *batch = NULL, *seq = NULL, *policy = NULL,
                  *attention = NULL, *dtype = NULL;
  gboolean no_ckpt = FALSE;
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
    { "attention", 0, 0, STW_OPTION_TEXT, &attention, "flash (default) or naive", "A" },
    { "dtype", 0, 0, STW_OPTION_TEXT, &dtype,
      "compute dtype: bf16 (default; fp16 where the GPU has no bf16), fp16 or fp32", "T" },
    { "policy", 'p', 0, STW_OPTION_TEXT, &policy, "comma list of policies, or all (default)",
      "LIST" },
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
    return STW_EXIT_USAGE;
  if (argc > 1)
    return stw_cli_fail(STW_EXIT_USAGE, "capacity: unexpected argument '%s'", argv[1]);
  if (family == NULL)
    return stw_cli_fail(STW_EXIT_USAGE, "capacity: --family is required (gpt, gpt2, gpt3, "
                        "patrickstar, llama, mistral, qwen2, neox, bert)");
  guint64 width = 4096;
  StwPlannerOptions o;
  int status;
  g_autoptr(StwRequest) r = stw_cli_planning_request(&pl, &stw_request_capacity_kind);
  if (!stw_cli_planning_options(r, NULL, &o, &status))
    return status;
  o.world_size = MAX(o.world_size, 1);
  const StwHardware hw = o.hw;
  Probe pr = { .o = &o, .hw = &hw,
               .so = { .batch = 8, .seq = 1024, .dtype = STW_DTYPE_BF16,
                       .checkpointing = !no_ckpt, .attention = STW_ATTENTION_FLASH } };
  if (hw.flops_per_s[STW_DTYPE_BF16] <= 0) /* V100: no bf16 */
    pr.so.dtype = STW_DTYPE_FP16;
  int att = pr.so.attention, dt = pr.so.dtype;
  gboolean by_layers = FALSE;
  g_autoptr(GArray) members = g_array_new(FALSE, FALSE, sizeof(StwModelConfig));
  g_autoptr(GArray) policies = g_array_new(FALSE, FALSE, sizeof(int));
  if ((batch != NULL && !stw_cli_parse_count(batch, "--batch", 1, STW_SYNTH_MAX_BATCH,
                                             &pr.so.batch)) ||
      (seq != NULL && !stw_cli_parse_count(seq, "--seq", 1, STW_MODEL_MAX_SEQ, &pr.so.seq)) ||
      (hidden != NULL && !stw_cli_parse_count(hidden, "--hidden", 64, 65536, &width)) ||
      !stw_cli_parse_enum(attention, "--attention", stw_attention_names, &att) ||
      !stw_cli_parse_enum(dtype, "--dtype", stw_dtype_names, &dt) ||
      !parse_family(family, &by_layers, members) ||
      !stw_cli_parse_enum_list(policy, "--policy", stw_policy_names, policies))
    return STW_EXIT_USAGE;
  pr.so.attention = (StwAttention)att;
  pr.so.dtype = (StwDtype)dt;
  if (hw.flops_per_s[pr.so.dtype] <= 0)
    return stw_cli_fail(STW_EXIT_USAGE, "--dtype: %s has no %s compute", hw.name,
                        stw_dtype_name(pr.so.dtype));
  if (!stw_cli_option_needs("capacity", "--hidden", hidden != NULL, "--family gpt", by_layers))
    return STW_EXIT_USAGE;

  g_autoptr(StwTable) tab = stw_table_new(9, "<policy", "<largest model", "layers", "parameters",
                                          "iteration", "tokens/s", "MFU", "moves", "<bound by");
  for (guint k = 0; k < policies->len; k++) {
    int p = g_array_index(policies, int, k);
    pr.policy = (StwPolicy)p;
    StwModelConfig best = { 0 };
    g_clear_pointer(&pr.bound_why, g_free);
    if (by_layers ? !largest_by_layers(&pr, width, &best) : !largest_of(&pr, members, &best)) {
      stw_table_row(tab, stw_policy_names[p], "none fits", "-", "-", "-", "-", "-", "-",
                    bound_by(&pr));
      continue;
    }
    /* the smallest failure above the best is what bound it */
    if (pr.bound_params <= stw_model_param_count(&best))
      g_clear_pointer(&pr.bound_why, g_free);
    g_autofree char *layers = g_strdup_printf("%" G_GUINT64_FORMAT, best.layers);
    g_autofree char *params = stw_cli_group_digits(stw_model_param_count(&best));
    g_autofree char *it = stw_duration_format(pr.last.iteration_ns);
    g_autofree char *mv = stw_size_format(pr.last.h2d_bytes + pr.last.d2h_bytes);
    g_autofree char *tps = NULL, *mfu = NULL;
    stw_cli_throughput_cells(&pr.last.throughput, &tps, &mfu);
    stw_table_row(tab, stw_policy_names[p], best.name, layers, params, it, tps, mfu, mv,
                  bound_by(&pr));
  }
  stw_whatif_point_clear(&pr.last);
  g_free(pr.bound_why);
  if (isatty(STDERR_FILENO))
    fprintf(stderr, "\r%*s\r", 60, "");
  g_autofree char *cpub = stw_size_format(o.budgets.cpu_bytes);
  /* what was assumed, the defaults named as such */
  GString *assumed = g_string_new(NULL);
  if (batch == NULL || seq == NULL)
    g_string_append_printf(assumed, "%s%s", assumed->len ? ", " : "",
                           batch == NULL && seq == NULL ? "the batch and sequence"
                           : batch == NULL ? "the batch" : "the sequence");
  if (!no_ckpt)
    g_string_append_printf(assumed, "%scheckpointing", assumed->len ? ", " : "");
  if (attention == NULL)
    g_string_append_printf(assumed, "%sflash attention", assumed->len ? ", " : "");
  if (dtype == NULL)
    g_string_append_printf(assumed, "%s%s", assumed->len ? ", " : "",
                           stw_dtype_name(pr.so.dtype));
  printf("%s, %u GPU%s, %s of host memory; batch %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
         " tokens per GPU, %s, %s attention, %s%s%s%s\n\n", hw.name, o.world_size,
         o.world_size > 1 ? "s" : "", cpub, pr.so.batch, pr.so.seq,
         pr.so.checkpointing ? "checkpointing" : "no checkpointing",
         stw_attention_name(pr.so.attention), stw_dtype_name(pr.so.dtype),
         assumed->len ? " (defaults: " : "", assumed->str, assumed->len ? ")" : "");
  g_string_free(assumed, TRUE);
  stw_table_print(tab, stdout);
  return STW_EXIT_OK;
}
