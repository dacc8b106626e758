/* import.h — PyTorch's profiler files as stowage traces (docs/profiling.md, "PyTorch files").
 *
 * A Kineto (torch.profiler) trace gives the ops of one iteration in order, their stages, their
 * durations (the GPU kernels each launched, else its CPU time) and the memory allocated while
 * each ran; an execution trace gives which tensors each op reads and which of them the optimizer
 * updates (the parameters); a memory timeline labels bytes as parameters, gradients, optimizer
 * state or activations. stw_import() reads one Kineto trace, optionally with the execution
 * trace and the memory timeline of the same run, and builds the trace; what the files cannot tell
 * is recorded in the trace's source warnings and in the report, never invented.
 *
 * Every file is streamed (json-stream.h): memory is bounded by one iteration's events, not by the
 * file's size.
 */
#ifndef STW_IMPORT_H
#define STW_IMPORT_H

#include <glib.h>

#include <stowage/errors.h>
#include <stowage/api.h>
#include <stowage/trace.h>

#if STW_BUILDING_LAYER < STW_LAYER_PROFILE
#error "<stowage/import.h> belongs to the profilers: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_IMPORT_ERROR (stw_import_error_quark())
GQuark stw_import_error_quark(void);

typedef enum {
  STW_IMPORT_ERROR_KIND,      /* not a file of the kind expected, or of any kind known */
  STW_IMPORT_ERROR_ITERATION, /* no iteration marker, or not the one asked for */
  STW_IMPORT_ERROR_AMBIGUOUS, /* several processes or devices, and no choice given */
  STW_IMPORT_ERROR_EMPTY,     /* nothing to build a trace of (no ops, no parameters) */
  STW_IMPORT_ERROR_INVALID,   /* a value of the wrong type or range */
} StwImportError;

typedef enum {
  STW_IMPORT_AUTO,     /* detected from the file */
  STW_IMPORT_KINETO,   /* torch.profiler's Chrome trace JSON */
  STW_IMPORT_ET,       /* ExecutionTraceObserver JSON */
  STW_IMPORT_TIMELINE, /* export_memory_timeline_raw JSON */
  STW_N_IMPORT_KINDS
} StwImportKind;

extern const char *const stw_import_kind_names[]; /* "auto", "kineto", "et", "timeline" */

#define STW_IMPORT_LAST (-1) /* the last complete iteration */
#define STW_IMPORT_WHOLE (-2) /* the whole trace as one iteration (no ProfilerStep# needed) */
#define STW_IMPORT_ANY_DEVICE (-2)

/* The most events one iteration may hold (ops, kernels, memory events together), and the bytes
 * of one event: what bounds an import's memory. */
#define STW_IMPORT_MAX_EVENTS (1u << 24)
#define STW_IMPORT_MAX_EVENT_BYTES (1u << 20)

typedef struct {
  const char *et_file;       /* the execution trace of the same run; NULL: none */
  const char *timeline_file; /* the memory timeline of the same run; NULL: none */
  gint64 iteration;          /* N of ProfilerStep#N, STW_IMPORT_LAST or STW_IMPORT_WHOLE */
  guint depth;               /* ops: events at this nesting depth in the iteration (1: outermost);
                              * in a trace with nn.Module events, modules at this depth of the
                              * module tree; 0: the trace's default (1, or for modules the
                              * shallowest depth at which a module class repeats: the layers) */
  gint64 device_id;          /* CUDA device of kernels and memory; STW_IMPORT_ANY_DEVICE: the one */
  gint64 pid;                /* the process; -1: the one */
  gboolean params_from_memory; /* no parameter evidence: one tensor of the memory held at the
                                * iteration's start (said in the trace's source) */
} StwImportOptions;

void stw_import_options_init(StwImportOptions *o);

/* What an import saw and used, for the user. */
typedef struct {
  guint64 events;            /* elements of traceEvents read */
  guint64 unknown_events;    /* of kinds the importer does not use (skipped, counted) */
  gint64 iteration;          /* the ProfilerStep#N imported; -1: the whole trace */
  guint64 iterations;        /* ProfilerStep# markers in the file */
  double start_us, end_us;   /* the iteration's bounds in the file's clock */
  guint64 cpu_ops;           /* op events inside the iteration */
  guint64 modules;           /* nn.Module events inside it (with_stack=True) */
  guint depth;               /* the depth the ops were cut at (of modules when there are some) */
  guint64 kernels;           /* GPU kernels (and copies) attributed to ops */
  guint64 ops_gpu_timed;     /* ops timed by their kernels */
  guint64 ops_cpu_timed;     /* ops timed by their CPU time (no kernel, or none recorded) */
  guint64 memory_events;     /* [memory] events of the device inside the iteration */
  gint64 device_id;          /* the device of memory and kernels; -1: the CPU */
  gboolean has_total_allocated; /* the newer [memory] form */
  guint64 allocated_at_start;   /* Total Allocated just before the iteration (newer form) */
  guint64 allocated_peak;       /* the largest Total Allocated inside it (newer form) */
  guint64 peak_above_start;     /* the running sum's peak above the iteration's start */
  const char *param_source;  /* "execution trace", "shapes", "memory", ... (static) */
  guint64 params;            /* parameter tensors */
  guint64 param_bytes;
  guint64 et_nodes;          /* execution trace nodes read */
  guint64 et_linked;         /* Kineto ops matched to an execution trace node */
  gboolean untimed;          /* an execution trace alone: the ops have no durations */
  guint64 timeline_rows;     /* memory timeline rows read */
  guint64 timeline_peak;     /* the timeline's peak of all bytes */
  guint64 timeline_at_peak[8]; /* by category at that peak: parameter, optimizer state, input,
                                * temporary, activation, gradient, autograd, unknown */
} StwImportReport;

/* R (of T, written to OUTPUT, may be NULL) as the record `stowage import --json` prints: a new
 * string the caller frees with g_free. */
char *stw_import_report_json(const StwImportReport *r, const StwTrace *t, const char *output);

/* Builds the trace of FILE (a Kineto trace) by OPTIONS; NULL with ERROR set on failure
 * (STW_IMPORT_ERROR, STW_JSON_ERROR for broken JSON, STW_FILES_ERROR for the file). */
StwTrace *stw_import(const char *file, const StwImportOptions *options, StwImportReport *report,
                     GError **error);

/* The kind of FILE by its content (gzip or not); STW_IMPORT_AUTO when it is none of them. */
StwImportKind stw_import_detect(const char *file, GError **error);

STW_END_DECLS

#endif
