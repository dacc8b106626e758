/* cmd-import.c — `stowage import`: PyTorch's profiler files as a trace (docs/profiling.md). */
#include <stdio.h>
#include <string.h>

#include <stowage/import.h>
#include <stowage/units.h>

#include "cli.h"

/* --iteration: N, "last" or "whole". */
static gboolean
parse_iteration(const char *text, gint64 *out)
{
  if (text == NULL || strcmp(text, "last") == 0) {
    *out = STW_IMPORT_LAST;
    return TRUE;
  }
  if (strcmp(text, "whole") == 0) {
    *out = STW_IMPORT_WHOLE;
    return TRUE;
  }
  guint64 n;
  if (!stw_cli_parse_count(text, "--iteration", 0, G_MAXINT32, &n))
    return FALSE;
  *out = (gint64)n;
  return TRUE;
}

/* The lines on which iteration was read and how its ops and times were found. */
static void
print_iteration(const StwImportReport *r, gboolean has_optimizer)
{
  if (r->iteration >= 0 && r->untimed)
    printf("iteration   ProfilerStep#%" G_GINT64_FORMAT " of %" G_GUINT64_FORMAT " (%"
           G_GUINT64_FORMAT " nodes of %" G_GUINT64_FORMAT " in the execution trace)\n",
           r->iteration, r->iterations, r->cpu_ops, r->events);
  else if (r->iteration >= 0)
    printf("iteration   ProfilerStep#%" G_GINT64_FORMAT " of %" G_GUINT64_FORMAT ", %.3f ms "
           "(%" G_GUINT64_FORMAT " op events of %" G_GUINT64_FORMAT " events read)\n",
           r->iteration, r->iterations, (r->end_us - r->start_us) / 1000.0, r->cpu_ops,
           r->events);
  else
    printf("iteration   the whole trace (%" G_GUINT64_FORMAT " op events of %" G_GUINT64_FORMAT
           " events read)\n", r->cpu_ops, r->events);
  if (r->modules > 0)
    printf("ops         the nn.Module forwards at depth %u of the module tree (%" G_GUINT64_FORMAT
           " module events), the ops outside them, backward and the optimizer\n", r->depth,
           r->modules);
  if (r->untimed)
    printf("durations   none: an execution trace records no times (import its Kineto trace "
           "with --et for them)\n");
  else
    printf("durations   %" G_GUINT64_FORMAT " ops timed by their %" G_GUINT64_FORMAT
         " GPU kernels, %" G_GUINT64_FORMAT " by their CPU time%s\n",
         r->ops_gpu_timed, r->kernels, r->ops_cpu_timed,
         has_optimizer ? " (the optimizer step shared by its parameters)" : "");
}

/* The lines on memory: the [memory] events, the memory timeline, what was skipped. */
static void
print_memory(const StwTrace *t, const StwImportReport *r)
{
  g_autofree char *peak = stw_size_format(r->peak_above_start);
  if (r->memory_events == 0) {
    printf("memory      no [memory] events%s: non-model memory unknown (0)\n",
           r->device_id >= 0 ? " for this device" : "");
  } else {
    printf("memory      %" G_GUINT64_FORMAT " [memory] events on %s; peak %s above the "
           "iteration's start", r->memory_events, r->device_id >= 0 ? "the GPU" : "the CPU", peak);
    if (r->has_total_allocated) {
      g_autofree char *start = stw_size_format(r->allocated_at_start);
      g_autofree char *high = stw_size_format(r->allocated_peak);
      printf(" (the file's Total Allocated: %s at the start, %s at the peak)", start, high);
    }
    printf("\n");
  }
  if (r->timeline_rows > 0) {
    g_autofree char *tp = stw_size_format(r->timeline_peak);
    g_autofree char *act = stw_size_format(r->timeline_at_peak[4]);
    g_autofree char *par = stw_size_format(r->timeline_at_peak[0] + r->timeline_at_peak[1] +
                                           r->timeline_at_peak[5]);
    printf("timeline    %" G_GUINT64_FORMAT " rows; at its peak of %s, %s of activations and "
           "%s of parameters, gradients and optimizer state; non-model memory from its "
           "categories\n", r->timeline_rows, tp, act, par);
  }
  if (r->unknown_events > 0)
    printf("skipped     %" G_GUINT64_FORMAT " events of kinds the importer does not use\n",
           r->unknown_events);
  if (t->source.warnings->len > 0) {
    printf("source      ");
    for (guint i = 0; i < t->source.warnings->len; i++) {
      const StwTraceWarning *w = &g_array_index(t->source.warnings, StwTraceWarning, i);
      printf("%s%s %" G_GUINT64_FORMAT, i ? ", " : "", w->name, w->count);
    }
    printf("\n");
  }
}

static void
print_report(const char *output, const StwTrace *t, const StwImportReport *r)
{
  guint64 by_stage[STW_N_STAGES] = { 0 };
  for (guint i = 0; i < t->ops->len; i++)
    by_stage[stw_trace_op(t, i)->stage]++;
  g_autofree char *pbytes = stw_size_format(r->param_bytes);
  printf("wrote %s: %u ops (%" G_GUINT64_FORMAT " forward, %" G_GUINT64_FORMAT " backward, %"
         G_GUINT64_FORMAT " optimizer), %" G_GUINT64_FORMAT " parameters (%s, from %s)\n",
         output, t->ops->len, by_stage[STW_STAGE_FWD], by_stage[STW_STAGE_BWD],
         by_stage[STW_STAGE_OPTIM], r->params, pbytes, r->param_source);
  print_iteration(r, by_stage[STW_STAGE_OPTIM] > 0);
  print_memory(t, r);
}

/* The command line's texts, before they are parsed. */
typedef struct {
  char *output, *kind, *iteration, *depth, *device, *pid, *et, *timeline;
  gboolean from_memory, json;
} Line;

static void
line_clear(Line *l)
{
  g_free(l->output);
  g_free(l->kind);
  g_free(l->iteration);
  g_free(l->depth);
  g_free(l->device);
  g_free(l->pid);
  g_free(l->et);
  g_free(l->timeline);
}

/* A count option into *out, left alone when not given. */
static gboolean
parse_optional_count(const char *text, const char *option, guint64 min, guint64 max,
                     gint64 *out)
{
  guint64 n;
  if (text == NULL)
    return TRUE;
  if (!stw_cli_parse_count(text, option, min, max, &n))
    return FALSE;
  *out = (gint64)n;
  return TRUE;
}

/* The texts into import options; false (a usage error said) on a bad one. */
static gboolean
parse_options(const Line *l, StwImportOptions *o, int *kind)
{
  stw_import_options_init(o);
  gint64 depth = o->depth;
  if (!stw_cli_parse_enum(l->kind, "--kind", stw_import_kind_names, kind) ||
      !parse_iteration(l->iteration, &o->iteration) ||
      !parse_optional_count(l->depth, "--depth", 1, 64, &depth) ||
      !parse_optional_count(l->device, "--device-id", 0, 4095, &o->device_id) ||
      !parse_optional_count(l->pid, "--pid", 0, G_MAXINT32, &o->pid))
    return FALSE;
  o->depth = (guint)depth;
  o->et_file = l->et;
  o->timeline_file = l->timeline;
  o->params_from_memory = l->from_memory;
  return TRUE;
}

/* Imports file as o says into output; the exit status. */
static int
run(const char *file, const char *output, const StwImportOptions *o, int kind, gboolean json)
{
  GError *error = NULL;
  if (kind != STW_IMPORT_AUTO) {
    StwImportKind found = stw_import_detect(file, &error);
    if (found == STW_IMPORT_AUTO)
      return stw_cli_error(error);
    if ((int)found != kind)
      return stw_cli_fail(STW_EXIT_FAILURE, "import: %s: --kind %s, but the file is a %s file",
                          file, stw_import_kind_names[kind], stw_import_kind_names[found]);
  }
  StwImportReport rep;
  g_autoptr(StwTrace) t = stw_import(file, o, &rep, &error);
  if (t == NULL || !stw_trace_save(t, output, &error))
    return stw_cli_error(error);
  if (json) {
    g_autofree char *text = stw_import_report_json(&rep, t, output);
    printf("%s\n", text);
  } else {
    print_report(output, t, &rep);
  }
  return STW_EXIT_OK;
}

/* The parsed command line checked and run; the exit status. */
static int
run_line(const Line *l, int argc, char **argv)
{
  if (argc != 2)
    return stw_cli_fail(STW_EXIT_USAGE, "import: give one PyTorch trace file");
  if (l->output == NULL)
    return stw_cli_fail(STW_EXIT_USAGE, "import: --output FILE is required");
  StwImportOptions o;
  int kind = 0;
  if (!parse_options(l, &o, &kind))
    return STW_EXIT_USAGE;
  const StwCliFile in[] = { { "the trace", argv[1] }, { "--et", l->et },
                            { "--memory-timeline", l->timeline } };
  const StwCliFile out[] = { { "--output", l->output } };
  if (!stw_cli_outputs_apart("import", in, G_N_ELEMENTS(in), out, 1))
    return STW_EXIT_USAGE;
  return run(argv[1], l->output, &o, kind, l->json);
}

int
stw_cmd_import(int argc, char **argv)
{
  Line l = { 0 };
  GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &l.json, "print what was imported as JSON", NULL },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &l.output, "trace file to write", "FILE" },
    { "kind", 0, 0, STW_OPTION_TEXT, &l.kind,
      "what FILE is: auto (default: detected), kineto, et, timeline", "K" },
    { "iteration", 0, 0, STW_OPTION_TEXT, &l.iteration,
      "which ProfilerStep#N, 'last' (default: the last complete one) or 'whole'", "N" },
    { "depth", 0, 0, STW_OPTION_TEXT, &l.depth,
      "ops are the events at this nesting depth in the iteration (default 1, the outermost; "
      "with nn.Module events, modules at this depth, by default the layers')", "N" },
    { "device-id", 0, 0, STW_OPTION_TEXT, &l.device,
      "the CUDA device of memory and kernels (default: the only one)", "N" },
    { "pid", 0, 0, STW_OPTION_TEXT, &l.pid, "the process (default: the only one)", "P" },
    { "et", 0, 0, G_OPTION_ARG_FILENAME, &l.et,
      "the execution trace of the same run: tensor identity", "FILE" },
    { "memory-timeline", 0, 0, G_OPTION_ARG_FILENAME, &l.timeline,
      "the memory timeline of the same run (export_memory_timeline_raw)", "FILE" },
    { "params-from-memory", 0, 0, G_OPTION_ARG_NONE, &l.from_memory,
      "with no parameter in the files: the memory held at the iteration's start as one "
      "model-state tensor", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx =
      g_option_context_new("FILE -o TRACE - import a PyTorch profiler trace");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "FILE is a torch.profiler (Kineto) trace, .json or .json.gz (or an execution trace\n"
           "alone: ops and parameters, no durations). The trace gets one op\n"
           "per event at --depth of one iteration, in order, with its stage, its GPU kernels'\n"
           "time (else its CPU time), the memory allocated while it ran, and the parameters\n"
           "that the recorded shapes (record_shapes=True) or the execution trace show.\n"
           "See docs/profiling.md.\n\n"
           "Example: stowage import trace.json.gz --et et.json -o trace-stowage.json\n");
  int status = stw_cli_parse(ctx, &argc, &argv, "import") ? run_line(&l, argc, argv)
                                                          : STW_EXIT_USAGE;
  line_clear(&l);
  return status;
}
