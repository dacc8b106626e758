/* record.h — the runtime's profile mode: the trace of each iteration as the runtime sees it, and
 * the same run as an event stream (events.h).
 *
 * Every op the runtime runs becomes an op of the trace with the tensors it declared, the
 * activation bytes live at its start and at its peak, and its measured duration. The event
 * stream describes the same run the way the CUPTI injection library describes any CUDA program
 * (a range per op, one "kernel" touching what the op declares, an allocation per activation, on
 * virtual addresses), so that stw_events_build() of the stream gives the same trace: one way to
 * describe a run, whoever profiles it. The stream holds the run's first STW_RECORDED_ITERATIONS
 * iterations: a profile needs no more, and a long training run in profile mode stays bounded.
 *
 * Internal to the library: not installed.
 */
#ifndef STW_RECORD_H
#define STW_RECORD_H

#include <glib.h>

#include <stowage/trace.h>

G_BEGIN_DECLS

typedef struct StwRecorder StwRecorder;

#define STW_RECORDED_ITERATIONS 2

/* A recorder for MODEL's tensors (not copied: it must outlive the recorder) on a device named
 * DEVICE with DEVICE_BYTES; PARAM_ELEM_BYTES is the compute copy's element size. */
StwRecorder *stw_recorder_new(const StwTrace *model, const char *device, guint64 device_bytes,
                              guint64 param_elem_bytes, guint32 world);
void stw_recorder_free(StwRecorder *r);

void stw_recorder_iteration_begin(StwRecorder *r);
/* The iteration is complete: with KEEP it becomes the last trace, else it is dropped (an
 * iteration whose ops were not timed) and the last trace stays. */
void stw_recorder_iteration_end(StwRecorder *r, gboolean keep);

/* An op starts with NONMODEL_BYTES of activations live. */
void stw_recorder_op_begin(StwRecorder *r, const char *name, StwStage stage,
                           const guint32 *params, guint32 n_params, const guint32 *grads,
                           guint32 n_grads, guint64 nonmodel_bytes);
/* The op ends after DURATION_NS. */
void stw_recorder_op_end(StwRecorder *r, guint64 duration_ns);

/* Activation P of BYTES was allocated, or released; LIVE_BYTES are live after it. */
void stw_recorder_alloc(StwRecorder *r, gconstpointer p, gsize bytes, guint64 live_bytes);
void stw_recorder_release(StwRecorder *r, gconstpointer p);

/* The events of the run so far, owned by the recorder. */
const char *stw_recorder_events(StwRecorder *r, gsize *len);
/* The trace of the last completed iteration, owned by the recorder; NULL before the first. */
StwTrace *stw_recorder_trace(StwRecorder *r);

G_END_DECLS

#endif
