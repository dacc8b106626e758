/* cmd-inspect.c — `stowage inspect TRACE`: what a trace holds, at a glance. */
#include <stdio.h>

#include <stowage/summary.h>
#include <stowage/trace.h>
#include <stowage/units.h>

#include "cli.h"

/* The lines naming the trace, its model, device and parameters. */
static void
print_header(const char *file, const StwTrace *t, const StwTraceSummary *s)
{
  printf("trace       %s (%s, %s%s%s)\n", file, stw_source_kind_name(t->source.kind),
         t->source.tool, t->source.created[0] ? ", " : "", t->source.created);
  printf("digest      %s\n", s->digest);
  g_autofree char *model = stw_cli_model_said(t, TRUE);
  printf("model       %s\n", model);
  g_autofree char *devmem = stw_size_format(t->device.memory_bytes);
  printf("device      %s, %s (rank %u of %u)\n", t->device.name, devmem, t->device.rank,
         t->device.world_size);
  g_autofree char *params = stw_cli_group_digits(s->params);
  printf("parameters  %s in %u tensors\n", params, t->tensors->len);
  if (s->frozen_tensors > 0) {
    g_autofree char *frozen = stw_cli_group_digits(s->frozen_params);
    printf("frozen      %s in %u tensors (no gradient, no optimizer state)\n", frozen,
           s->frozen_tensors);
  }
  if (stw_trace_micro_steps(t) > 1 || t->model.gradients != STW_GRADIENTS_CHUNKS)
    printf("iteration   %u micro-step%s; gradients in the %s\n", stw_trace_micro_steps(t),
           stw_trace_micro_steps(t) > 1 ? "s" : "",
           t->model.gradients == STW_GRADIENTS_CHUNKS ? "param chunks"
           : t->model.gradients == STW_GRADIENTS_HOST
               ? "framework's tensors, each micro-step's copied to host memory and added there"
           : t->model.gradients == STW_GRADIENTS_HOST_VIA_DEVICE
               ? "framework's tensors, each micro-step's copied to host memory, added on the "
                 "device"
               : "framework's tensors");
}

/* Model data by list: its bytes, the parameters it holds (the param list every one, the others
 * the trained ones) and the bytes each costs there. */
static void
print_model_data(const StwTraceSummary *s)
{
  g_autoptr(StwTable) md = stw_table_new(4, "<model data", "bytes", "parameters",
                                         "per parameter");
  guint64 trained = s->params - s->frozen_params;
  for (int l = 0; l <= STW_N_LISTS; l++) {
    guint64 bytes = l < STW_N_LISTS ? s->list_bytes[l] : s->model_bytes;
    guint64 held = l == STW_LIST_PARAM || l == STW_N_LISTS ? s->params : trained;
    g_autofree char *b = stw_size_format(bytes);
    g_autofree char *n = stw_cli_group_digits(held);
    double per = held ? (double)bytes / (double)held : 0.0;
    g_autofree char *each = g_strdup_printf(per == (double)(guint64)per ? "%.0f" : "%.2f", per);
    stw_table_row(md, l < STW_N_LISTS ? stw_chunk_list_name((StwChunkList)l) : "total", b, n,
                  each);
  }
  stw_table_print(md, stdout);
}

/* Ops, time and FLOPs by stage. */
static void
print_stages(const StwTraceSummary *s)
{
  g_autoptr(StwTable) st = stw_table_new(4, "<stage", "ops", "time", "TFLOP");
  guint64 ops = 0, ns = 0, flops = 0;
  for (int i = 0; i < STW_N_STAGES; i++) {
    g_autofree char *n = g_strdup_printf("%u", s->stage_ops[i]);
    g_autofree char *d = stw_duration_format(s->stage_ns[i]);
    g_autofree char *f = g_strdup_printf("%.2f", (double)s->stage_flops[i] / 1e12);
    stw_table_row(st, stw_stage_name((StwStage)i), n, d, f);
    ops += s->stage_ops[i];
    ns += s->stage_ns[i];
    flops += s->stage_flops[i];
  }
  g_autofree char *n = g_strdup_printf("%" G_GUINT64_FORMAT, ops);
  g_autofree char *d = stw_duration_format(ns);
  g_autofree char *f = g_strdup_printf("%.2f", (double)flops / 1e12);
  stw_table_row(st, "total", n, d, f);
  stw_table_print(st, stdout);
}

/* The largest tensors: name, shape, elements and bytes. */
static void
print_largest(const StwTrace *t, const StwTraceSummary *s)
{
  g_autoptr(StwTable) lt = stw_table_new(4, "<largest tensors", "<shape", "elements", "bytes");
  for (guint32 i = 0; i < s->n_largest; i++) {
    const StwTensor *x = stw_trace_tensor(t, s->largest[i]);
    GString *shape = g_string_new(NULL);
    for (guint32 k = 0; k < x->ndim; k++)
      g_string_append_printf(shape, "%s%" G_GUINT64_FORMAT, k ? " x " : "", x->shape[k]);
    g_autofree char *num = stw_cli_group_digits(x->numel);
    g_autofree char *b = stw_size_format(stw_tensor_bytes(x));
    stw_table_row(lt, x->name, shape->str, num, b);
    g_string_free(shape, TRUE);
  }
  stw_table_print(lt, stdout);
}

/* The blocks: what keeping, recomputing or offloading their activations involves. */
static void
print_blocks(const StwTraceSummary *s)
{
  if (s->blocks == 0) {
    printf("blocks                 none known (a trace of version 1, or of a source that does "
           "not record them)\n");
    return;
  }
  g_autofree char *saved = stw_size_format(s->block_saved_bytes);
  g_autofree char *input = stw_size_format(s->block_input_bytes);
  g_autofree char *fwd = stw_duration_format(s->block_forward_ns);
  printf("blocks                 %u: %s kept for backward when kept, %s of inputs, %s of "
         "forward to recompute\n", s->blocks, saved, input, fwd);
  if (s->recomputed_peak_bytes > 0) {
    g_autofree char *peak = stw_size_format(s->recomputed_peak_bytes);
    printf("all recomputed         peak non-model memory %s, for %s more compute\n", peak, fwd);
  }
}

static void
print_summary(const char *file, const StwTrace *t, const StwTraceSummary *s)
{
  print_header(file, t, s);
  printf("\n");
  print_model_data(s);
  const StwOp *peak = stw_trace_op(t, s->peak_op);
  g_autofree char *pk = stw_size_format(s->peak_nonmodel_bytes);
  printf("\npeak non-model memory  %s at op %u %s (%s)\n", pk, s->peak_op, peak->name,
         stw_stage_name(peak->stage));
  print_blocks(s);
  printf("\n");
  print_stages(s);
  if (s->n_largest == 0)
    return;
  printf("\n");
  print_largest(t, s);
}

int
stw_cmd_inspect(int argc, char **argv)
{
  gboolean json = FALSE;
  g_autofree char *top_text = NULL;
  GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "machine-readable output", NULL },
    { "top", 'n', 0, STW_OPTION_TEXT, &top_text, "largest tensors to list (default 5)",
      "N" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("TRACE - summarize a trace");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(ctx, "Example: stowage inspect traces/gpt2-b8-s1024.json\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "inspect"))
    return STW_EXIT_USAGE;
  if (argc != 2)
    return stw_cli_fail(STW_EXIT_USAGE, "inspect: expected one trace file (see --help)");
  guint64 top = 5;
  if (top_text != NULL && !stw_cli_parse_count(top_text, "--top", 0, 1000000, &top))
    return STW_EXIT_USAGE;

  GError *error = NULL;
  g_autoptr(StwTrace) trace = stw_trace_load(argv[1], &error);
  if (trace == NULL)
    return stw_cli_error(error);
  g_autoptr(StwTraceSummary) s = stw_trace_summary_new(trace, (guint32)top);
  if (json) {
    g_autofree char *text = stw_trace_summary_json(trace, s);
    printf("%s\n", text);
  } else {
    print_summary(argv[1], trace, s);
  }
  return STW_EXIT_OK;
}
