/* cli.c — shared CLI plumbing: error reporting, option parsing, aligned tables. */
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

#include <stowage/comm.h>
#include <stowage/hardware.h>
#include <stowage/model.h>
#include <stowage/plan.h>
#include <stowage/planner.h>
#include <stowage/units.h>

#include "cli.h"

/* the rank messages come from, on several ranks (cli.h) */
static guint32 cli_rank, cli_world;

void
stw_cli_set_rank(guint32 rank, guint32 world)
{
  cli_rank = rank;
  cli_world = world;
}

gboolean
stw_cli_start_ranks(const char *command, StwComm **comm, int *status)
{
  *comm = NULL;
  if (!stw_comm_launched_with_ranks())
    return TRUE;
  GError *error = NULL;
  *comm = stw_comm_mpi_new(STW_CLI_COLLECTIVE_TIMEOUT_MS, &error);
  if (*comm == NULL) {
    *status = stw_cli_fail(STW_EXIT_FAILURE, "%s: started with several ranks, but %s", command,
                           error->message);
    g_error_free(error);
    return FALSE;
  }
  stw_cli_set_rank((*comm)->rank, (*comm)->world);
  return TRUE;
}

int
stw_cli_fail(int status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (cli_world > 1)
    fprintf(stderr, "stowage (rank %u of %u): %s\n", cli_rank, cli_world, msg);
  else
    fprintf(stderr, "stowage: %s\n", msg);
  g_free(msg);
  return status;
}

int
stw_cli_error(GError *error)
{
  /* names the user typed that mean nothing are usage errors; bad files are failures */
  gboolean usage = g_error_matches(error, STW_MODEL_ERROR, STW_MODEL_ERROR_UNKNOWN) ||
                   g_error_matches(error, STW_HARDWARE_ERROR, STW_HARDWARE_ERROR_UNKNOWN) ||
                   error->domain == STW_UNITS_ERROR || error->domain == G_OPTION_ERROR ||
                   error->domain == STW_REQUEST_ERROR;
  int status = stw_cli_fail(usage ? STW_EXIT_USAGE : STW_EXIT_FAILURE, "%s", error->message);
  g_error_free(error);
  return status;
}

gboolean
stw_cli_parse(GOptionContext *ctx, int *argc, char ***argv, const char *command)
{
  GError *error = NULL;
  if (!g_option_context_parse(ctx, argc, argv, &error)) {
    fprintf(stderr, "stowage %s: %s\nTry 'stowage %s --help'.\n", command, error->message,
            command);
    g_error_free(error);
    return FALSE;
  }
  return TRUE;
}

struct StwTable {
  guint n_cols;
  GPtrArray *cells; /* char*, row-major, the header first */
};

StwTable *
stw_table_new(guint n_cols, ...)
{
  StwTable *t = g_new0(StwTable, 1);
  t->n_cols = n_cols;
  t->cells = g_ptr_array_new_with_free_func(g_free);
  va_list ap;
  va_start(ap, n_cols);
  for (guint i = 0; i < n_cols; i++)
    g_ptr_array_add(t->cells, g_strdup(va_arg(ap, const char *)));
  va_end(ap);
  return t;
}

void
stw_table_row(StwTable *t, ...)
{
  va_list ap;
  va_start(ap, t);
  for (guint i = 0; i < t->n_cols; i++)
    g_ptr_array_add(t->cells, g_strdup(va_arg(ap, const char *)));
  va_end(ap);
}

StwTable *
stw_table_new_v(guint n_cols, const char *const *heads)
{
  StwTable *t = g_new0(StwTable, 1);
  t->n_cols = n_cols;
  t->cells = g_ptr_array_new_with_free_func(g_free);
  stw_table_row_v(t, heads);
  return t;
}

void
stw_table_row_v(StwTable *t, const char *const *cells)
{
  for (guint i = 0; i < t->n_cols; i++)
    g_ptr_array_add(t->cells, g_strdup(cells[i]));
}

guint
stw_table_rows(const StwTable *t)
{
  return t->cells->len / t->n_cols - 1;
}

void
stw_table_print(StwTable *t, FILE *out)
{
  guint rows = t->cells->len / t->n_cols;
  g_autofree gsize *width = g_new0(gsize, t->n_cols);
  for (guint r = 0; r < rows; r++) {
    for (guint c = 0; c < t->n_cols; c++) {
      const char *s = t->cells->pdata[r * t->n_cols + c];
      if (r == 0 && s[0] == '<')
        s++;
      width[c] = MAX(width[c], (gsize)g_utf8_strlen(s, -1));
    }
  }
  for (guint r = 0; r < rows; r++) {
    for (guint c = 0; c < t->n_cols; c++) {
      const char *head = t->cells->pdata[c];
      const char *s = t->cells->pdata[r * t->n_cols + c];
      gboolean left = head[0] == '<';
      if (r == 0 && left)
        s++;
      int pad = (int)(width[c] - (gsize)g_utf8_strlen(s, -1));
      const char *sep = c + 1 < t->n_cols ? "  " : "";
      if (left)
        fprintf(out, "%s%*s%s", s, c + 1 < t->n_cols ? pad : 0, "", sep);
      else
        fprintf(out, "%*s%s%s", pad, "", s, sep);
    }
    fputc('\n', out);
  }
}

void
stw_table_free(StwTable *t)
{
  if (t == NULL)
    return;
  g_ptr_array_unref(t->cells);
  g_free(t);
}

gboolean
stw_cli_option_needs(const char *command, const char *option, gboolean given, const char *needs,
                     gboolean satisfied)
{
  if (!given || satisfied)
    return TRUE;
  stw_cli_fail(STW_EXIT_USAGE, "%s: %s goes with %s; without it the option would be ignored",
               command, option, needs);
  return FALSE;
}

gboolean
stw_cli_model_option(const char *command, char **model, char **model_config)
{
  if (*model_config == NULL)
    return TRUE;
  if (*model != NULL) {
    stw_cli_fail(STW_EXIT_USAGE, "%s: give --model or --model-config, not both", command);
    return FALSE;
  }
  /* a path with a folder in it is read as a file by stw_model_resolve */
  *model = strchr(*model_config, '/') != NULL ? g_strdup(*model_config)
                                              : g_build_filename(".", *model_config, NULL);
  g_clear_pointer(model_config, g_free);
  return TRUE;
}

gboolean
stw_cli_outputs_apart(const char *command, const StwCliFile *inputs, gsize n_inputs,
                      const StwCliFile *outputs, gsize n_outputs)
{
  for (gsize o = 0; o < n_outputs; o++) {
    GStatBuf so;
    if (outputs[o].path == NULL || strcmp(outputs[o].path, "-") == 0 ||
        g_stat(outputs[o].path, &so) != 0)
      continue; /* a file that does not exist yet is none of the inputs */
    for (gsize i = 0; i < n_inputs; i++) {
      GStatBuf si;
      if (inputs[i].path == NULL || g_stat(inputs[i].path, &si) != 0)
        continue;
      if (si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
        stw_cli_fail(STW_EXIT_USAGE, "%s: %s %s is %s %s: writing it would replace what %s "
                     "reads; choose another %s", command, outputs[o].option, outputs[o].path,
                     inputs[i].option, inputs[i].path, command, outputs[o].option);
        return FALSE;
      }
    }
  }
  return TRUE;
}

/* PATH's components, canonical (absolute, without "." and ".."). */
static char **
components(const char *path)
{
  g_autofree char *canon = g_canonicalize_filename(path, NULL);
  return g_strsplit(canon + 1, "/", -1); /* past the leading "/" */
}

char *
stw_cli_trace_name_for_plan(const char *trace_file, const char *plan_file)
{
  if (strcmp(plan_file, "-") == 0)
    return g_canonicalize_filename(trace_file, NULL);
  g_autofree char *plan_dir = g_path_get_dirname(plan_file);
  g_auto(GStrv) from = components(plan_dir), to = components(trace_file);
  guint common = 0;
  while (from[common] != NULL && to[common] != NULL && strcmp(from[common], to[common]) == 0)
    common++;
  GString *rel = g_string_new(NULL);
  for (guint i = common; from[i] != NULL; i++) {
    if (from[i][0] != '\0')
      g_string_append(rel, "../");
  }
  for (guint i = common; to[i] != NULL; i++)
    g_string_append_printf(rel, "%s%s", to[i], to[i + 1] != NULL ? "/" : "");
  return g_string_free(rel, FALSE);
}

/* The trace file a plan names: relative to the plan's folder; a name that is not there but is
 * from the current folder (a plan written before names were recorded that way) is taken from
 * there. */
static char *
plan_trace_path(const char *plan_file, const char *recorded)
{
  if (g_path_is_absolute(recorded))
    return g_strdup(recorded);
  g_autofree char *dir = g_path_get_dirname(plan_file);
  char *path = g_build_filename(dir, recorded, NULL);
  if (!g_file_test(path, G_FILE_TEST_EXISTS) && g_file_test(recorded, G_FILE_TEST_EXISTS)) {
    g_free(path);
    return g_strdup(recorded);
  }
  return path;
}

void
stw_cli_throughput_cells(const StwThroughput *th, char **tokens_per_s, char **mfu)
{
  if (th->tokens_per_s <= 0) {
    *tokens_per_s = g_strdup("-");
    *mfu = g_strdup("-");
    return;
  }
  *tokens_per_s = stw_cli_rate_format(th->tokens_per_s);
  *mfu = th->peak_flops_per_s > 0 ? g_strdup_printf("%.1f%%", th->mfu * 100) : g_strdup("-");
}

/* FLOPS in words, to three significant digits: "6.96 MFLOP", "17.2 PFLOP" */
static char *
flop_amount(double flops)
{
  static const char *const prefix[] = { "", "k", "M", "G", "T", "P", "E" };
  guint i = 0;
  while (flops >= 999.5 && i + 1 < G_N_ELEMENTS(prefix)) {
    flops /= 1000;
    i++;
  }
  return g_strdup_printf("%.3g %sFLOP", flops, prefix[i]);
}

char *
stw_cli_measured_elsewhere(const StwTrace *t, const StwHardware *hw, gboolean kept)
{
  const char *on = stw_trace_measured_elsewhere(t, hw);
  if (on == NULL)
    return NULL;
  StwRetiming rt;
  StwRetimingBasis b;
  g_autofree char *why_not = NULL;
  gboolean retimable = stw_retiming(t, hw, &rt, &b, &why_not);
  if (!retimable && why_not == NULL) /* another GPU's */
    return g_strdup_printf("the trace's op times as measured on %s, not on %s, which runs them at "
                           "its own speed (synthesize the trace for it with `stowage synth`, or "
                           "profile there); no MFU from them", on, hw->name);
  if (!retimable)
    return g_strdup_printf("the trace's op times as measured on %s, not on %s, which runs them "
                           "at its own speed: they cannot be re-timed for it (%s); synthesize "
                           "the trace for it with `stowage synth`, or profile there; no MFU from "
                           "them", on, hw->name, why_not);
  if (kept)
    return g_strdup_printf("the trace's op times as measured on %s, not on %s, which runs them "
                           "at its own speed: kept as measured (--measured-times; without it "
                           "they are re-timed for the profile); no MFU from them", on, hw->name);
  StwDtype dtype = stw_trace_compute_dtype(t);
  g_autofree char *launch = stw_duration_format(rt.op_overhead_ns);
  g_autofree char *measured = stw_duration_format(b.measured_ns);
  g_autofree char *flops = flop_amount(b.flops);
  return g_strdup_printf("the trace's op times, measured on %s, re-timed for %s: each forward and "
                         "backward op %s (a launch) and %.3g of its measured time, the "
                         "iteration's %s at %.4g TFLOP/s (%.0f%% of the profile's %s %.4g) "
                         "where %s measured %s; each optimizer step on the GPU from its bytes at "
                         "the profile's memory bandwidth (--measured-times keeps them as "
                         "measured); no MFU from them", on, hw->name, launch, rt.scale, flops,
                         b.flops_per_s / 1e12, hw->matmul_efficiency * 100, stw_dtype_name(dtype),
                         hw->flops_per_s[dtype] / 1e12, on, measured);
}

char *
stw_cli_host_said(const StwHardware *hw)
{
  g_autofree char *memory =
      hw->host_memory_bytes_per_s > 0
          ? g_strdup_printf("its memory %.0f GB/s read and written, for all of a node's ranks",
                            hw->host_memory_bytes_per_s / 1e9)
          : g_strdup("its memory bandwidth not stated (not a limit)");
  return g_strdup_printf("%s: CPU Adam %.2f G elements/s a rank, %s",
                         hw->cpu_model[0] != '\0' ? hw->cpu_model : "not named by the profile",
                         hw->cpu_adam_elems_per_s / 1e9, memory);
}

char *
stw_cli_model_said(const StwTrace *t, gboolean batch)
{
  const StwTraceModel *m = &t->model;
  GString *s = g_string_new(m->name);
  if (m->has_config)
    g_string_append_printf(s, ": %s, %" G_GUINT64_FORMAT " layers, hidden %" G_GUINT64_FORMAT
                           ", %" G_GUINT64_FORMAT " heads", stw_arch_name(m->config.arch),
                           m->config.layers, m->config.hidden, m->config.heads);
  if (m->has_config && m->config.kv_heads != m->config.heads)
    g_string_append_printf(s, " (%" G_GUINT64_FORMAT " key/value)", m->config.kv_heads);
  if (m->has_config && stw_model_experts(&m->config) > 1)
    g_string_append_printf(s, ", %" G_GUINT64_FORMAT " experts, top %" G_GUINT64_FORMAT,
                           stw_model_experts(&m->config), stw_model_active_experts(&m->config));
  if (batch && m->batch > 0)
    g_string_append_printf(s, "; batch %" G_GUINT64_FORMAT " x seq %" G_GUINT64_FORMAT,
                           m->batch, m->seq);
  else if (!batch && m->seq > 0)
    g_string_append_printf(s, "; seq %" G_GUINT64_FORMAT, m->seq);
  if (m->images > 0)
    g_string_append_printf(s, " with %" G_GUINT64_FORMAT " image%s of %" G_GUINT64_FORMAT
                           " x %" G_GUINT64_FORMAT " pixels a sequence", m->images,
                           m->images == 1 ? "" : "s", m->image_size, m->image_size);
  if (t->tensors->len > 0)
    g_string_append_printf(s, ", %s", stw_dtype_name(stw_trace_tensor(t, 0)->dtype));
  if (m->autocast != STW_DTYPE_FP32) /* PyTorch's AMP: fp32 weights, 16-bit GEMMs */
    g_string_append_printf(s, " weights, autocast to %s", stw_dtype_name(m->autocast));
  /* synth --checkpoints host: the blocks' inputs wait on the host */
  gboolean on_host = stw_trace_blocks_chosen(t, STW_BLOCK_RECOMPUTE_HOST) > 0;
  g_string_append_printf(s, "%s%s, %s attention%s%s", m->checkpointing ? ", checkpointing" : "",
                         on_host ? ", its checkpoints in host memory" : "",
                         stw_attention_name(m->attention),
                         m->kernels == STW_KERNELS_EAGER ? ", eager kernels" : "",
                         m->loss == STW_LOSS_CHUNKED  ? ", chunked loss"
                         : m->loss == STW_LOSS_NATIVE ? ", the loss in the logits' dtype"
                                                      : "");
  if (m->optimizer_impl != STW_OPTIMIZER_FUSED)
    g_string_append_printf(s, ", %s optimizer", stw_optimizer_impl_name(m->optimizer_impl));
  if (m->collectives == STW_COLLECTIVES_BLOCKING)
    g_string_append(s, ", collectives on the compute stream");
  if (m->init != STW_INIT_SHARDED)
    g_string_append_printf(s, ", the model built whole on the host%s first",
                           m->init == STW_INIT_HOST_FP32 ? " in fp32" : "");
  return g_string_free(s, FALSE);
}

char *
stw_cli_optimizer_assumed(const StwTrace *t)
{
  StwOptimizerImpl impl = t->model.optimizer_impl;
  if (impl == STW_OPTIMIZER_FUSED)
    return NULL;
  if (impl == STW_OPTIMIZER_DEEPSPEED)
    return g_strdup("the GPU's optimizer step as DeepSpeed's ZeRO runs it: fp64 norms tensor by "
                    "tensor, the gradients flattened and cast to fp32, FusedAdam on the fp32 "
                    "partition, the weights cast back");
  return g_strdup_printf("the GPU's optimizer step as PyTorch's %s Adam runs it: seven "
                         "passes%s", stw_optimizer_impl_name(impl),
                         impl == STW_OPTIMIZER_FOR_LOOP ? ", seven launches a tensor" : "");
}

char *
stw_cli_loop_buffers_said(const StwTrace *t, guint32 world)
{
  StwLoopBuffers b;
  if (!stw_trace_loop_buffers(t, world, &b))
    return NULL;
  g_autofree char *part = stw_size_format(b.partition);
  g_autofree char *bucket = stw_size_format(b.bucket);
  g_autofree char *step = stw_size_format(b.step);
  g_autofree char *where = world > 1 ? g_strdup_printf("each of %u GPUs", world)
                                      : g_strdup("the GPU");
  const StwTraceModel *m = &t->model;
  g_autofree char *rb = stw_cli_group_digits(b.reduce_bucket_size);
  g_autofree char *sg = stw_cli_group_digits(b.sub_group_size);
  const char *whose = m->reduce_bucket_size > 0 && m->sub_group_size > 0 ? "the trace's"
                      : m->reduce_bucket_size > 0 || m->sub_group_size > 0
                          ? "the trace's and DeepSpeed's defaults"
                          : "DeepSpeed's defaults";
  return g_strdup_printf("DeepSpeed's buffers beside the model on %s: its gradient partition %s, "
                         "a reduce bucket of %s in backward, the step's fp32 gradients %s "
                         "(reduce_bucket_size %s, sub_group_size %s elements: %s)", where, part,
                         bucket, step, rb, sg, whose);
}

char *
stw_cli_collectives_assumed(const StwTrace *t, guint32 world)
{
  if (world < 2 || t->model.collectives != STW_COLLECTIVES_BLOCKING)
    return NULL;
  return g_strdup("the collectives on the compute stream, each op waiting for those issued "
                  "before it (the trace's collectives blocking: DeepSpeed ZeRO-1 and 2 with "
                  "overlap_comm off)");
}

/* The system POLICY (at ZERO_STAGE) emulates, where it splits its chunks across the ranks */
static const char *
splitting_system(StwPolicy policy, guint64 zero_stage)
{
  if (!stw_policy_splits_chunks(policy, zero_stage))
    return NULL;
  return policy == STW_POLICY_GEMINI_STATIC ? "Gemini" : "ZeRO-3";
}

/* POLICIES' names whose SPLIT (whether their systems split chunks) is WANT, "a, b and c" */
static char *
policies_named(const StwPolicy *policies, guint n, const gboolean *split, gboolean want)
{
  GString *s = g_string_new(NULL);
  guint total = 0, k = 0;
  for (guint i = 0; i < n; i++)
    total += split[i] == want;
  for (guint i = 0; i < n; i++) {
    if (split[i] != want)
      continue;
    if (k > 0)
      g_string_append(s, k + 1 == total ? " and " : ", ");
    g_string_append(s, stw_policy_names[policies[i]]);
    k++;
  }
  return g_string_free(s, FALSE);
}

char *
stw_cli_layout_assumed(const StwPlannerOptions *o, guint32 world, const StwPolicy *policies,
                       guint n_policies)
{
  if (world < 2 || n_policies == 0)
    return NULL;
  g_autofree gboolean *split = g_new0(gboolean, n_policies);
  guint n_split = 0;
  const char *systems[2] = { NULL, NULL }; /* ZeRO-3, Gemini: as the policies name them */
  for (guint i = 0; i < n_policies; i++) {
    const char *system = splitting_system(policies[i], o->zero_stage);
    split[i] = system != NULL;
    n_split += split[i];
    if (system != NULL && systems[0] == NULL)
      systems[0] = system;
    else if (system != NULL && strcmp(system, systems[0]) != 0)
      systems[1] = system;
  }
  g_autofree char *splitting = policies_named(policies, n_policies, split, TRUE);
  g_autofree char *kept = policies_named(policies, n_policies, split, FALSE);
  g_autofree char *as_systems = systems[1] != NULL
                                    ? g_strdup_printf("%s and %s do", systems[0], systems[1])
                                    : g_strdup_printf("%s does", systems[0]);
  if (o->layout == STW_LAYOUT_SHARDS)
    return g_strdup_printf("every chunk split across the %u GPUs and gathered alone, for %s "
                           "(--layout shards: ZeRO-3's and Gemini's layout; train replays "
                           "PatrickStar's groups only)", world,
                           n_policies > 1 ? "every policy" : stw_policy_names[policies[0]]);
  if (n_split == 0)
    return NULL;
  if (o->layout == STW_LAYOUT_GROUPS)
    return g_strdup_printf("PatrickStar's groups of whole chunks on the %u GPUs for %s too, not "
                           "the chunks split across them as %s (--layout policy plans %s so; "
                           "train replays groups only)", world, splitting, as_systems,
                           n_split > 1 ? "them" : "it");
  if (n_split == n_policies)
    return g_strdup_printf("every chunk split across the %u GPUs and gathered alone, as %s "
                           "(each policy's own layout, --layout policy; train replays "
                           "PatrickStar's groups only: --layout groups)", world, as_systems);
  return g_strdup_printf("each policy's own layout on the %u GPUs (--layout policy): %s with "
                         "every chunk split across them and gathered alone, as %s; %s in "
                         "PatrickStar's groups of whole chunks, the layout train replays "
                         "(--layout groups or shards: one for all)", world, splitting,
                         as_systems, kept);
}

char *
stw_cli_bound_by(const StwPlan *p)
{
  guint64 ns = 0;
  StwBound b = stw_plan_bound(p, &ns);
  g_autofree char *busy = stw_duration_format(ns);
  g_autofree char *all = stw_duration_format(p->pred.cost_ns);
  return g_strdup_printf("%s, busy %s of the %s iteration", stw_bound_words[b], busy, all);
}

char *
stw_cli_slowdown_cell(double slowdown)
{
  return isfinite(slowdown) ? g_strdup_printf("%.2fx", slowdown) : g_strdup("-");
}

char *
stw_cli_host_figure(const StwPlan *p, guint64 staging, guint64 gradients)
{
  const StwPlanPredictions *q = &p->pred;
  g_autofree char *all = stw_size_format(q->cpu_bytes + q->host_overhead_bytes);
  g_autofree char *chunks = stw_size_format(q->cpu_bytes);
  g_autofree char *over = stw_size_format(q->host_overhead_bytes);
  g_autofree char *st = stw_size_format(staging);
  g_autofree char *of_it = staging > 0 ? g_strdup_printf(", of which %s staging buffers for the "
                                                         "storage tier", st)
                                       : g_strdup("");
  g_autofree char *grads = stw_size_format(gradients);
  g_autofree char *with = gradients > 0 ? g_strdup_printf(", of which %s the gradients", grads)
                                        : g_strdup("");
  return g_strdup_printf("%s (%s of chunks%s%s%s%s, %s for the %s)", all, chunks,
                         p->moves->len > 0 ? " and offloaded activations" : "",
                         gradients > 0 ? " and gradients" : "", with, of_it, over,
                         p->chunking->world > 1 ? "ranks' processes" : "process");
}

char *
stw_cli_rate_format(double v)
{
  if (!(v >= 100))
    return g_strdup_printf("%.1f", v >= 0 ? v : 0);
  return stw_cli_group_digits((guint64)llround(fmin(v, 1e18)));
}

char *
stw_cli_group_digits(guint64 v)
{
  char digits[32];
  g_snprintf(digits, sizeof digits, "%" G_GUINT64_FORMAT, v);
  GString *out = g_string_new(NULL);
  gsize n = strlen(digits);
  for (gsize i = 0; i < n; i++) {
    if (i > 0 && (n - i) % 3 == 0)
      g_string_append_c(out, ',');
    g_string_append_c(out, digits[i]);
  }
  return g_string_free(out, FALSE);
}

/* Prints ERROR's message (a usage error) and frees it: FALSE, for the parsers' returns. */
static gboolean
usage_error(GError *error)
{
  stw_cli_fail(STW_EXIT_USAGE, "%s", error->message);
  g_error_free(error);
  return FALSE;
}

gboolean
stw_cli_parse_count(const char *text, const char *option, guint64 min, guint64 max,
                    guint64 *out)
{
  GError *error = NULL;
  return stw_option_count(option, text, min, max, out, &error) || usage_error(error);
}

gboolean
stw_cli_parse_enum(const char *text, const char *option, const char *const *names, int *out)
{
  GError *error = NULL;
  return stw_option_enum(option, text, names, out, &error) || usage_error(error);
}

gboolean
stw_cli_parse_enum_list(const char *text, const char *option, const char *const *names,
                        GArray *out)
{
  GError *error = NULL;
  return stw_option_enum_list(option, text, names, out, &error) || usage_error(error);
}

gboolean
stw_cli_parse_size(const char *text, const char *option, guint64 *out)
{
  GError *error = NULL;
  return stw_option_size(option, text, out, &error) || usage_error(error);
}

gboolean
stw_cli_parse_budget(const char *text, const char *option, guint64 *out)
{
  GError *error = NULL;
  return stw_option_budget(option, text, out, &error) || usage_error(error);
}

gboolean
stw_cli_hardware(const char *name, const char *trace_device, StwHardware *hw, int *status)
{
  GError *error = NULL;
  if (name == NULL) {
    name = STW_HARDWARE_DEFAULT;
    if (trace_device != NULL && stw_hardware_lookup(trace_device, hw, NULL))
      name = trace_device;
  }
  if (!stw_hardware_lookup(name, hw, &error)) {
    *status = stw_cli_error(error);
    return FALSE;
  }
  return TRUE;
}

void
stw_cli_planning_clear(StwCliPlanning *p)
{
  g_clear_pointer(&p->hw_name, g_free);
  g_clear_pointer(&p->cpu, g_free);
  g_clear_pointer(&p->reserve, g_free);
  g_clear_pointer(&p->gpus, g_free);
  g_clear_pointer(&p->nodes, g_free);
  g_clear_pointer(&p->activations, g_free);
  g_clear_pointer(&p->nvme, g_free);
  g_clear_pointer(&p->nvme_devices, g_free);
  g_clear_pointer(&p->storage, g_free);
  g_clear_pointer(&p->optimizer_state, g_free);
  g_clear_pointer(&p->pinned, g_free);
  g_clear_pointer(&p->layout, g_free);
}

void
stw_cli_request_from_entries(StwRequest *r, const GOptionEntry *entries)
{
  for (const GOptionEntry *e = entries; e->long_name != NULL; e++) {
    if (!stw_request_takes(r, e->long_name))
      continue;
    if (e->arg == G_OPTION_ARG_NONE)
      stw_request_set_flag(r, e->long_name, *(gboolean *)e->arg_data);
    else if (e->arg == STW_OPTION_TEXT)
      stw_request_set(r, e->long_name, *(char **)e->arg_data);
  }
}

StwRequest *
stw_cli_planning_request(const StwCliPlanning *p, const StwRequestKind *kind)
{
  StwRequest *r = stw_request_new(kind);
  stw_request_set(r, "hw", p->hw_name);
  stw_request_set(r, "cpu", p->cpu);
  stw_request_set(r, "reserve", p->reserve);
  stw_request_set(r, "gpus", p->gpus);
  stw_request_set(r, "nodes", p->nodes);
  stw_request_set_flag(r, "beyond-device", p->beyond_device);
  stw_request_set(r, "activations", p->activations);
  stw_request_set(r, "nvme", p->nvme);
  stw_request_set(r, "nvme-devices", p->nvme_devices);
  stw_request_set(r, "storage", p->storage);
  stw_request_set(r, "optimizer-state", p->optimizer_state);
  stw_request_set(r, "pinned", p->pinned);
  stw_request_set(r, "layout", p->layout);
  stw_request_set_flag(r, "measured-times", p->measured_times);
  return r;
}

gboolean
stw_cli_planning_options(const StwRequest *r, const StwTrace *t, StwPlannerOptions *o,
                         int *status)
{
  GError *error = NULL;
  if (stw_request_planning(r, t, o, &error))
    return TRUE;
  *status = stw_cli_error(error);
  return FALSE;
}

gboolean
stw_cli_planner_setup(const char *file, const StwRequest *r, StwTrace **trace_out,
                      StwPlannerOptions *o, int *status)
{
  GError *error = NULL;
  g_autoptr(StwTrace) trace = stw_trace_load(file, &error);
  if (trace == NULL) {
    *status = stw_cli_error(error);
    return FALSE;
  }
  if (!stw_cli_planning_options(r, trace, o, status))
    return FALSE;
  *trace_out = g_steal_pointer(&trace);
  return TRUE;
}

gboolean
stw_cli_load_checked_plan(const char *plan_file, const char *trace_file, StwPlan **plan_out,
                          StwTrace **trace_out, StwCheckReport *report, StwSimulation *sim,
                          int *status)
{
  GError *error = NULL;
  g_autoptr(StwPlan) plan = stw_plan_load(plan_file, &error);
  if (plan == NULL) {
    *status = stw_cli_error(error);
    return FALSE;
  }
  g_autofree char *named = NULL;
  if (trace_file == NULL) {
    if (plan->trace_file[0] == '\0') {
      *status = stw_cli_fail(STW_EXIT_USAGE, "%s names no trace: give the trace it was made "
                             "for", plan_file);
      return FALSE;
    }
    named = plan_trace_path(plan_file, plan->trace_file);
  }
  g_autoptr(StwTrace) trace = stw_trace_load(trace_file != NULL ? trace_file : named, &error);
  if (trace == NULL && named != NULL) {
    g_prefix_error(&error, "%s names its trace \"%s\", looked for as %s (give the trace after "
                   "the plan to use another): ", plan_file, plan->trace_file, named);
    *status = stw_cli_error(error);
    return FALSE;
  }
  if (trace == NULL || !stw_plan_check(plan, trace, plan_file, report, sim, &error)) {
    *status = stw_cli_error(error);
    return FALSE;
  }
  *plan_out = g_steal_pointer(&plan);
  *trace_out = g_steal_pointer(&trace);
  return TRUE;
}
