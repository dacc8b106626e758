/* import-internal.h — the importer's parts: the Kineto reader hands one iteration's records to
 * the builder, which makes the trace. Internal to the profilers' layer. */
#ifndef STW_IMPORT_INTERNAL_H
#define STW_IMPORT_INTERNAL_H

#include <cjson/cJSON.h>
#include <glib.h>

#include <stowage/import.h>
#include <stowage/units.h>

#include "json.h"

/* Whether NAME is an iteration marker, "ProfilerStep#N", and its N. */
static inline gboolean
import_step_number(const char *name, gint64 *number)
{
  if (!g_str_has_prefix(name, "ProfilerStep#"))
    return FALSE;
  char *end = NULL;
  gint64 n = g_ascii_strtoll(name + 13, &end, 10);
  if (end == name + 13 || *end != '\0')
    return FALSE;
  *number = n;
  return TRUE;
}

/* The parameters an op takes, from its recorded input shapes ("Input Dims", "Input type"). */
#define IMPORT_MAX_SHAPE_DIMS 8
typedef struct {
  const char *role;  /* "weight", "bias" (static) */
  guint ndim;
  guint64 shape[IMPORT_MAX_SHAPE_DIMS];
  StwDtype dtype;
} ImportParam;

typedef struct {
  guint n;
  ImportParam p[4];
} ImportShapes;

/* The parameters of an op NAME that takes them (aten::linear, aten::conv2d, aten::layer_norm,
 * ...) from its ARGS, or NULL (another op, no shapes recorded). */
ImportShapes *import_shapes_of(const char *name, const cJSON *args);
void import_shapes_free(ImportShapes *shapes);

typedef struct {
  double ts, end;      /* µs, the file's clock */
  const char *name;    /* owned by the reader's string chunk */
  gint64 pid, tid;
  gint64 ext_id, seq, rf_id;
  const char *module;  /* "Module Hierarchy", or NULL */
  ImportShapes *shapes; /* owned */
  gboolean is_module;  /* an nn.Module's forward ("nn.Module: Linear_3", python_function) */
  /* set by the builder, in one pass over the events in nesting order (parents first): what a
   * walk up the parents would find is kept per event, so that no question costs the depth */
  guint32 parent, depth, trace_op;
  gboolean has_children;
  guint32 mdepth;          /* modules among its ancestors and itself */
  gboolean has_module_desc; /* a module nests inside it */
  const char *path;        /* a module's path ("GPT2Model_0.GPT2Block_1", capped), in the
                            * iteration's string chunk; or NULL */
  const char *near_path;   /* the path of the innermost module around it, itself included */
  gboolean shapes_above;   /* an event around it records parameter shapes */
  guint32 unit;            /* its trace op's event (unit_of), G_MAXUINT32: none */
} ImportEvent;

typedef struct {
  double ts, dur;
  gint64 ext_id, correlation, device;
} ImportKernel;

/* A CUDA runtime call (cudaLaunchKernel, cudaMemcpyAsync): which op launched a kernel, by the
 * kernel's correlation id and the call's place on the op's thread. */
typedef struct {
  double ts;
  gint64 tid, correlation;
} ImportRuntime;

typedef struct {
  double ts;
  gint64 order, bytes, total; /* total: Total Allocated, -1 when absent */
} ImportMem;

/* The execution trace's view of one op: which tensors it reads, by the op's rf_id. */
typedef struct {
  guint64 storage;  /* storage id */
  guint64 numel;
  guint itemsize;
  StwDtype dtype;
} ImportTensorRef;

#define IMPORT_TIMELINE_CATEGORIES 8
typedef struct {
  double ns;        /* the timeline's clock (epoch ns); -1: before profiling */
  gint64 bytes;
  guint category;   /* 0 parameter ... 7 unknown (import_timeline_categories) */
  guint order;      /* in the file */
} ImportTimelineRow;

extern const char *const import_timeline_categories[];

/* An execution trace node as the builder sees it: its name (to check a link) and its reads. */
typedef struct {
  char *name;
  GArray *reads; /* ImportTensorRef */
} ImportEtOp;

typedef struct {
  const char *file;
  const StwImportOptions *o;
  StwImportReport *rep;
  gint64 pid, device, main_tid;
  double t0, t1;
  ImportEvent *evs;
  guint n_evs;
  ImportKernel *kernels;
  guint n_kernels;
  ImportMem *mems;
  guint n_mems;
  ImportRuntime *runtimes;
  guint n_runtimes;
  char *device_name;
  guint64 device_memory;
  guint32 rank, world_size;
  /* from an execution trace, when linked: rf_id -> GArray of ImportTensorRef read, and the
   * storages the optimizer updates */
  GHashTable *et_reads;       /* gint64* rf_id -> ImportEtOp* */
  GHashTable *et_optimized;   /* storage ids (gint64*) the optimizer's nodes read */
  GHashTable *et_created;     /* storage ids an op outputs without reading: made in the run */
  ImportTimelineRow *timeline; /* sorted by time; NULL: none */
  guint n_timeline;
  double base_ns;             /* baseTimeNanoseconds: the Kineto clock's origin in epoch ns */
  gboolean untimed;           /* events ordered but not timed (an execution trace alone) */
  GStringChunk *strings;      /* the builder's strings (module paths), each at most
                               * STW_TRACE_MAX_NAME bytes */
  guint32 *nest_order;        /* the events in nesting order: per thread, parents first */
} ImportIteration;

/* TEXT as a name a trace can hold, in CHUNK (one copy of equal names): itself up to
 * STW_TRACE_MAX_NAME bytes; longer, its first bytes and a digest of the whole, so that names
 * stay distinct and an importer's memory stays bounded by what it keeps. */
const char *import_capped_name(GStringChunk *chunk, const char *text);

/* The most bytes one file's memory events (or timeline rows) may move, allocations and frees
 * together: 2^53, so that every running sum and peak taken over them is exact and cannot
 * overflow. */
#define IMPORT_MAX_BYTES_MOVED (G_GUINT64_CONSTANT(1) << 53)
#define IMPORT_MAX_BYTES_MOVED_TEXT "2^53 bytes (8 PiB)"

/* Adds |BYTES| to *MOVED; FALSE, leaving it, when the total would pass IMPORT_MAX_BYTES_MOVED. */
gboolean import_bytes_moved(guint64 *moved, gint64 bytes);

/* Reads the execution trace FILE as the trace itself: its tables, and its nodes as IT's events
 * (ordered and nested, without times). */
gboolean import_et_as_trace(ImportIteration *it, const char *file, GError **error);

/* Reads a memory timeline into IT's timeline, and its peak into the report. */
gboolean import_timeline_load(ImportIteration *it, const char *file, GError **error);
/* Whether a row of IT's timeline falls in the span [FIRST_US, LAST_US] of the Kineto clock
 * (BASE_NS converting it): else the timeline is of another run, and an error says so. */
gboolean import_timeline_covers(const ImportIteration *it, double base_ns, double first_us,
                                double last_us, GError **error);
/* The non-model memory (all categories but parameters, gradients and optimizer state) at the
 * start and the peak of each of N spans [START_US, END_US] in the Kineto clock, BASE_NS
 * converting it to the timeline's. */
void import_timeline_apply(const ImportIteration *it, double base_ns, const double *start_us,
                           const double *end_us, guint64 *nonmodel, guint64 *peak, guint n);
/* Reads the execution trace FILE into IT's et_* tables. */
gboolean import_et_load(ImportIteration *it, const char *file, GError **error);

void import_device_info(ImportIteration *it, const cJSON *device_properties,
                        const cJSON *distributed_info);
void import_iteration_clear(ImportIteration *it);
StwTrace *import_build(ImportIteration *it, GError **error);

StwTrace *stw_import_kineto(const char *file, const StwImportOptions *o, StwImportReport *rep,
                            GError **error);

#endif
