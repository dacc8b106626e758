/* events.h — the event stream: one profiled run, one event per line.
 *
 * The CUPTI injection library (profile/cupti-inject.c) and the runtime's own profile mode both
 * describe a run as the same kind of events, written one per line:
 *
 *   push T NAME                 an NVTX range opens at T (ns) on the host
 *   pop T                       the innermost range of the pushing thread closes
 *   thread N                    the pushes and pops after it are thread N's (a small number;
 *                               thread 0 until a line names another): each thread has its own
 *                               stack of ranges, as NVTX does, and a thread's outermost range
 *                               nests in the innermost one open on the first thread that pushed
 *                               (PyTorch's autograd thread runs backward inside the main
 *                               thread's step)
 *   alloc T PTR BYTES           device memory is allocated (CUPTI MEMORY2, deduplicated)
 *   free T PTR                  and released
 *   launch T ID N ARG...        a kernel is launched at T with N pointer-sized arguments (hex)
 *   kernel ID START END NAME    the launch ID ran on the GPU from START to END (END < START: a
 *                               record flushed before the kernel ended, left out and counted)
 *   tensor PTR NDIM D... NAME [ALIAS...]  names a long-lived allocation (optional)
 *
 * This module is the format's one reader and writer; events-build.h makes a trace of a stream.
 */
#ifndef STW_EVENTS_H
#define STW_EVENTS_H

#include <glib.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_CORE
#error "<stowage/events.h> belongs to the core: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_EVENTS_ERROR (stw_events_error_quark())
GQuark stw_events_error_quark(void);

typedef enum {
  STW_EVENTS_ERROR_SYNTAX,  /* a line that is not an event */
  STW_EVENTS_ERROR_NESTING, /* a pop without a push, a push never popped */
  STW_EVENTS_ERROR_EMPTY,   /* no iteration, or no op in it */
  STW_EVENTS_ERROR_ORDER,   /* time going back, or a record that contradicts another */
} StwEventsError;

#define STW_EVENTS_MAX_RECORDS (1u << 24)

/* The range that marks one training iteration: the runtime pushes it through the backend (NVTX on
 * CUDA, so that CUPTI sees it) and its own recorder, and the builder looks for it by default. */
#define STW_ITERATION_RANGE "stowage.iteration"

typedef enum {
  STW_EVENT_PUSH,
  STW_EVENT_POP,
  STW_EVENT_ALLOC,
  STW_EVENT_FREE,
  STW_EVENT_LAUNCH,
  STW_EVENT_KERNEL,
  STW_EVENT_TENSOR,
  STW_EVENT_THREAD,
} StwEventKind;

/* One line of the stream. */
typedef struct {
  StwEventKind kind;
  guint64 t;        /* ns; a kernel's start */
  guint64 ptr;      /* alloc, free, tensor: the address */
  guint64 bytes;    /* alloc */
  guint64 id;       /* launch, kernel: the correlation id; thread: its number */
  guint64 end;      /* kernel: ns */
  guint64 *args;    /* launch: the pointer arguments; tensor: the shape */
  guint n_args;
  char *name;       /* push, kernel: the name; tensor: its names, space-separated */
  gboolean incomplete; /* kernel: END before START (a record flushed before the kernel ended) */
  guint line;       /* in the file, from 1 */
} StwEventRecord;

/* A parsed stream: plain records to read freely. */
typedef struct {
  char *file;       /* for messages */
  GArray *records;  /* StwEventRecord, in file order */
} StwEvents;

/* Parses an event stream; FILE names it in messages ("FILE:LINE: ..."). Returns a stream the
 * caller frees with stw_events_free, or NULL with ERROR set (STW_EVENTS_ERROR; reading the file:
 * STW_FILES_ERROR, a regular file of at most 1 GiB). */
StwEvents *stw_events_parse(const char *file, const char *text, gsize len, GError **error);
StwEvents *stw_events_load(const char *file, GError **error);
void stw_events_free(StwEvents *e);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwEvents, stw_events_free)

/* Writing events (the runtime's profile mode). */
typedef struct StwEventWriter StwEventWriter;
/* A writer (never NULL), the caller's (stw_event_writer_free). */
StwEventWriter *stw_event_writer_new(void);
void stw_event_push(StwEventWriter *w, guint64 t, const char *name);
void stw_event_pop(StwEventWriter *w, guint64 t);
void stw_event_alloc(StwEventWriter *w, guint64 t, guint64 ptr, guint64 bytes);
void stw_event_free(StwEventWriter *w, guint64 t, guint64 ptr);
void stw_event_launch(StwEventWriter *w, guint64 t, guint64 id, const guint64 *args, guint n);
void stw_event_kernel(StwEventWriter *w, guint64 id, guint64 start, guint64 end, const char *name);
void stw_event_tensor(StwEventWriter *w, guint64 ptr, const guint64 *shape, guint ndim,
                      const char *name);
/* The text so far, owned by the writer and valid until its next event. */
const char *stw_event_writer_text(StwEventWriter *w, gsize *len);
void stw_event_writer_free(StwEventWriter *w);

STW_END_DECLS

#endif
