/* events.h — from a stream of profiling events to a trace, with no CUDA in sight.
 *
 * The CUPTI injection library (cupti-inject.c) and the runtime's own profile mode both describe a
 * run as the same kind of events, written one per line:
 *
 *   push T NAME                 an NVTX range opens at T (ns) on the host
 *   pop T                       the innermost range closes
 *   alloc T PTR BYTES           device memory is allocated (CUPTI MEMORY2, deduplicated)
 *   free T PTR                  and released
 *   launch T ID N ARG...        a kernel is launched at T with N pointer-sized arguments (hex)
 *   kernel ID START END NAME    the launch ID ran on the GPU from START to END
 *   tensor PTR NDIM D... NAME [ALIAS...]  names a long-lived allocation (optional)
 *
 * stw_events_build() selects one iteration (a range named --iteration-range, default
 * "stowage.iteration"), makes every range at the chosen depth below it an op, every allocation
 * alive across the whole iteration and touched by a forward op a model tensor (in allocation
 * order), and attributes kernels to ops by launch time: an op reads the tensors its kernels'
 * arguments point into. Non-model memory is every other live allocation: at the op's start and at
 * its peak. Durations are the ops' kernels' GPU time (the range's time when it launched none).
 * Stages: ops are forward until one whose name says backward (".bwd", "backward", "Backward"),
 * then backward until one that says optimizer ("adam", "optim", "step"); a backward op is taken to
 * write the gradients of the tensors it reads. These are heuristics, stated in docs/profiling.md.
 */
#ifndef STW_EVENTS_H
#define STW_EVENTS_H

#include <glib.h>

#include "trace.h"

G_BEGIN_DECLS

#define STW_EVENTS_ERROR (stw_events_error_quark())
GQuark stw_events_error_quark(void);

typedef enum {
  STW_EVENTS_ERROR_SYNTAX,  /* a line that is not an event */
  STW_EVENTS_ERROR_NESTING, /* a pop without a push, a push never popped */
  STW_EVENTS_ERROR_EMPTY,   /* no iteration, or no op in it */
} StwEventsError;

typedef struct {
  const char *iteration_range; /* default "stowage.iteration"; NULL or "" = the whole run */
  guint iteration;             /* which one, from 1; 0 = the last complete one */
  guint depth;                 /* op ranges' depth below the iteration range (default 1) */
  StwDtype dtype;              /* element type of unnamed tensors (default fp32) */
} StwEventsOptions;

void stw_events_options_init(StwEventsOptions *o);

/* Parses an event stream; FILE names it in messages ("FILE:LINE: ..."). */
typedef struct StwEvents StwEvents;
StwEvents *stw_events_parse(const char *file, const char *text, gsize len, GError **error);
StwEvents *stw_events_load(const char *file, GError **error);
void stw_events_free(StwEvents *e);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwEvents, stw_events_free)

/* The builder's verdict on what it saw, for people. */
typedef struct {
  guint iterations;        /* complete iteration ranges found */
  guint dropped_launches;  /* launches with no GPU record (dropped by CUPTI) */
  guint duplicate_allocs;  /* repeated allocation records ignored */
} StwEventsReport;

StwTrace *stw_events_build(const StwEvents *e, const StwEventsOptions *o, StwEventsReport *report,
                           GError **error);

/* Writing events (the runtime's profile mode and the injection library). */
typedef struct StwEventWriter StwEventWriter;
StwEventWriter *stw_event_writer_new(void);
void stw_event_push(StwEventWriter *w, guint64 t, const char *name);
void stw_event_pop(StwEventWriter *w, guint64 t);
void stw_event_alloc(StwEventWriter *w, guint64 t, guint64 ptr, guint64 bytes);
void stw_event_free(StwEventWriter *w, guint64 t, guint64 ptr);
void stw_event_launch(StwEventWriter *w, guint64 t, guint64 id, const guint64 *args, guint n);
void stw_event_kernel(StwEventWriter *w, guint64 id, guint64 start, guint64 end, const char *name);
void stw_event_tensor(StwEventWriter *w, guint64 ptr, const guint64 *shape, guint ndim,
                      const char *name);
/* The text so far; the writer keeps it. */
const char *stw_event_writer_text(StwEventWriter *w, gsize *len);
void stw_event_writer_free(StwEventWriter *w);

G_END_DECLS

#endif
