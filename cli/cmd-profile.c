/* cmd-profile.c — `stowage profile -- COMMAND`: the trace of any CUDA program, through CUPTI. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <unistd.h>

#include <glib/gstdio.h>

#include <stowage/events-build.h>
#include <stowage/files.h>
#include <stowage/units.h>

#include "cli.h"

/* Runs ARGV under the injection library; the events land in EVENTS. */
static int
run_command(char **argv, const char *events, const char *domain)
{
#ifndef STW_HAVE_CUPTI
  (void)argv;
  (void)events;
  (void)domain;
  return stw_cli_fail(STW_EXIT_FAILURE, "profile: this stowage was built without CUPTI; build it "
                      "where the CUDA toolkit is installed, or pass --events FILE");
#else
  /* $STOWAGE_CUPTI_LIB, the build tree's, the one beside the library, the installed one */
  g_autofree char *lib = stw_module_path("STOWAGE_CUPTI_LIB", STW_CUPTI_BUILT,
                                         STW_CUPTI_INSTALLED);
  if (!g_file_test(lib, G_FILE_TEST_EXISTS))
    return stw_cli_fail(STW_EXIT_FAILURE, "profile: the injection library %s is missing "
                        "(set STOWAGE_CUPTI_LIB)", lib);
  g_auto(GStrv) env = g_get_environ();
  env = g_environ_setenv(env, "CUDA_INJECTION64_PATH", lib, TRUE);
  /* NVTX reaches CUPTI through the same library, which hands it to the CUPTI the process loaded
   * (not a libcupti.so of its own: a program with its own CUPTI, PyTorch, would hold two) */
  env = g_environ_setenv(env, "NVTX_INJECTION64_PATH", lib, FALSE);
  env = g_environ_setenv(env, "STOWAGE_EVENTS_OUT", events, TRUE);
  if (domain != NULL)
    env = g_environ_setenv(env, "STOWAGE_NVTX_DOMAIN", domain, TRUE);
  int wait_status = 0;
  GError *error = NULL;
  if (!g_spawn_sync(NULL, argv, env, G_SPAWN_SEARCH_PATH | G_SPAWN_CHILD_INHERITS_STDIN, NULL,
                    NULL, NULL, NULL, &wait_status, &error)) {
    int st = stw_cli_fail(STW_EXIT_FAILURE, "profile: cannot run %s: %s", argv[0], error->message);
    g_error_free(error);
    return st;
  }
  if (!g_spawn_check_wait_status(wait_status, &error)) {
    int st = stw_cli_fail(STW_EXIT_FAILURE, "profile: %s failed (%s); no trace written", argv[0],
                          error->message);
    g_error_free(error);
    return st;
  }
  GStatBuf sb;
  if (g_stat(events, &sb) != 0 || sb.st_size == 0)
    return stw_cli_fail(STW_EXIT_FAILURE, "profile: %s recorded no events: it never initialized "
                        "CUDA (is it a CUDA program, and is there a CUDA driver and a GPU?)",
                        argv[0]);
  return STW_EXIT_OK;
#endif
}

/* Other CUDA processes of the run (a child, a sibling rank) record to EVENTS.PID (the injection
 * library leaves EVENTS to the first): said, kept beside KEEP when given (KEEP.PID), else
 * removed. */
static void
other_processes(const char *events, const char *keep)
{
  g_autofree char *dir = g_path_get_dirname(events);
  g_autofree char *base = g_path_get_basename(events);
  g_autofree char *prefix = g_strconcat(base, ".", NULL);
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  guint n = 0;
  GString *kept = g_string_new(NULL);
  while (d != NULL && (name = g_dir_read_name(d)) != NULL) {
    const char *pid = name + strlen(prefix);
    if (!g_str_has_prefix(name, prefix) || *pid == '\0' || strspn(pid, "0123456789") != strlen(pid))
      continue;
    n++;
    g_autofree char *path = g_build_filename(dir, name, NULL);
    if (keep != NULL) {
      g_autofree char *to = g_strconcat(keep, ".", pid, NULL);
      if (stw_file_copy_atomic(path, to, NULL))
        g_string_append_printf(kept, " %s", to);
    }
    g_unlink(path);
  }
  if (n > 0)
    g_printerr("stowage: profile: %u other CUDA process%s of the run recorded events of %s own; "
               "the trace is the first process's%s%s\n", n, n == 1 ? "" : "es",
               n == 1 ? "its" : "their", kept->len > 0 ? "; kept:" : "", kept->str);
  g_string_free(kept, TRUE);
}

/* Builds the trace of the events in EVENTS, names its model NAME and saves it to OUTPUT. */
static int
save_trace(const char *events, const StwEventsOptions *o, const char *name, const char *output)
{
  GError *error = NULL;
  g_autoptr(StwEvents) ev = stw_events_load(events, &error);
  StwEventsReport rep;
  g_autoptr(StwTrace) t = ev != NULL ? stw_events_build(ev, o, &rep, &error) : NULL;
  if (t == NULL)
    return stw_cli_error(error);
  g_free(t->model.name);
  t->model.name = g_strdup(name);
  if (!stw_trace_save(t, output, &error))
    return stw_cli_error(error);
  printf("wrote %s: %u ops, %u tensors from %u iterations%s", output, t->ops->len,
         t->tensors->len, rep.iterations, rep.dropped_launches ? "" : "\n");
  if (rep.dropped_launches)
    printf("; %u kernel launches had no GPU record (dropped by CUPTI)\n", rep.dropped_launches);
  if (rep.unknown_frees > 0 || rep.open_ranges > 0)
    printf("counted in the trace's source: %u frees of memory allocated before profiling began, "
           "%u ranges never closed\n", rep.unknown_frees, rep.open_ranges);
  return STW_EXIT_OK;
}

/* The command line's texts, before they are parsed. */
typedef struct {
  char *output, *iteration, *range, *depth, *domain, *dtype, *events_in, *keep;
} Line;

static void
line_clear(Line *l)
{
  g_free(l->output);
  g_free(l->iteration);
  g_free(l->range);
  g_free(l->depth);
  g_free(l->domain);
  g_free(l->dtype);
  g_free(l->events_in);
  g_free(l->keep);
}

/* The texts into the event stream's build options; false (a usage error said) on a bad one. */
static gboolean
parse_options(const Line *l, StwEventsOptions *o)
{
  stw_events_options_init(o);
  guint64 v;
  if (l->iteration != NULL) {
    if (!stw_cli_parse_count(l->iteration, "--iteration", 1, G_MAXUINT32, &v))
      return FALSE;
    o->iteration = (guint)v;
  }
  if (l->depth != NULL) {
    if (!stw_cli_parse_count(l->depth, "--depth", 1, 64, &v))
      return FALSE;
    o->depth = (guint)v;
  }
  if (l->range != NULL)
    o->iteration_range = l->range;
  int dt = o->dtype;
  if (!stw_cli_parse_enum(l->dtype, "--dtype", stw_dtype_names, &dt))
    return FALSE;
  o->dtype = (StwDtype)dt;
  return TRUE;
}

/* Records COMMAND's events (or takes --events), builds and saves the trace, keeps the events
 * where --keep-events says; the exit status. */
static int
run(const Line *l, char **command, const StwEventsOptions *o)
{
  g_autofree char *tmp = NULL;
  const char *events = l->events_in;
  int status = STW_EXIT_OK;
  if (events == NULL) {
    GError *error = NULL;
    int fd = g_file_open_tmp("stowage-events-XXXXXX", &tmp, &error);
    if (fd < 0)
      return stw_cli_error(error);
    close(fd);
    events = tmp;
    status = run_command(command, events, l->domain);
    other_processes(events, l->keep);
  }
  if (status == STW_EXIT_OK)
    status = save_trace(events, o, command[0] != NULL ? command[0] : events, l->output);
  if (l->keep != NULL) { /* a block at a time: an event stream may be large */
    GError *error = NULL;
    if (!stw_file_copy_atomic(events, l->keep, &error)) {
      g_printerr("stowage: profile: --keep-events: %s\n", error->message);
      g_error_free(error);
      if (status == STW_EXIT_OK)
        status = STW_EXIT_FAILURE;
    }
  }
  if (tmp != NULL)
    g_unlink(tmp);
  return status;
}

/* The parsed command line checked and run; the exit status. */
static int
run_line(const Line *l, int argc, char **argv)
{
  if (l->output == NULL)
    return stw_cli_fail(STW_EXIT_USAGE, "profile: --output FILE is required");
  /* GOption keeps the "--" when options follow it, so that they reach the command */
  if (argc > 1 && strcmp(argv[1], "--") == 0) {
    argv++;
    argc--;
  }
  if ((l->events_in == NULL) == (argc < 2))
    return stw_cli_fail(STW_EXIT_USAGE, "profile: give a command after '--', or --events FILE");
  if (!stw_cli_option_needs("profile", "--nvtx-domain", l->domain != NULL,
                            "a command to profile (not --events)", l->events_in == NULL))
    return STW_EXIT_USAGE;
  const StwCliFile in[] = { { "--events", l->events_in } };
  const StwCliFile out[] = { { "--output", l->output }, { "--keep-events", l->keep } };
  StwEventsOptions o;
  if (!stw_cli_outputs_apart("profile", in, 1, out, 2) || !parse_options(l, &o))
    return STW_EXIT_USAGE;
  return run(l, argv + 1, &o);
}

int
stw_cmd_profile(int argc, char **argv)
{
  Line l = { 0 };
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &l.output, "trace file to write", "FILE" },
    { "iteration", 0, 0, STW_OPTION_TEXT, &l.iteration,
      "which iteration, from 1 (default: the last complete one)", "N" },
    { "iteration-range", 0, 0, STW_OPTION_TEXT, &l.range,
      "the NVTX range that marks an iteration (default stowage.iteration; '' = whole run)",
      "NAME" },
    { "depth", 0, 0, STW_OPTION_TEXT, &l.depth,
      "depth of op ranges below the iteration range (default 1)", "N" },
    { "nvtx-domain", 0, 0, STW_OPTION_TEXT, &l.domain,
      "only ranges of this NVTX domain (default: the default domain)", "D" },
    { "dtype", 0, 0, STW_OPTION_TEXT, &l.dtype, "element type of model tensors (default fp32)",
      "T" },
    { "events", 0, 0, G_OPTION_ARG_FILENAME, &l.events_in,
      "build from a recorded event stream instead of running a command", "FILE" },
    { "keep-events", 0, 0, G_OPTION_ARG_FILENAME, &l.keep, "also keep the event stream here",
      "FILE" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx =
      g_option_context_new("-o TRACE -- COMMAND [ARGS...] - profile a CUDA program");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Runs COMMAND with stowage's CUPTI injection library and writes the trace of one\n"
           "iteration: ops from NVTX ranges, model tensors from long-lived allocations matched\n"
           "against kernel arguments, non-model memory from the others, kernel times from CUPTI.\n"
           "See docs/profiling.md (PyTorch: PYTORCH_NO_CUDA_MEMORY_CACHING=1, emit_nvtx).\n\n"
           "Example: stowage profile --iteration-range step -o trace.json -- python train.py\n");
  int status = stw_cli_parse(ctx, &argc, &argv, "profile") ? run_line(&l, argc, argv)
                                                           : STW_EXIT_USAGE;
  line_clear(&l);
  return status;
}
