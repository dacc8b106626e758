/* events-build.h — from a stream of profiling events (events.h) to a trace, with no CUDA in
 * sight.
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
#ifndef STW_EVENTS_BUILD_H
#define STW_EVENTS_BUILD_H

#include <glib.h>

#include <stowage/api.h>
#include <stowage/events.h>
#include <stowage/trace.h>

#if STW_BUILDING_LAYER < STW_LAYER_PROFILE
#error "<stowage/events-build.h> belongs to the profilers: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

typedef struct {
  const char *iteration_range; /* default "stowage.iteration"; NULL or "" = the whole run */
  guint iteration;             /* which one, from 1; 0 = the last complete one */
  guint depth;                 /* op ranges' depth below the iteration range (default 1) */
  StwDtype dtype;              /* element type of unnamed tensors (default fp32) */
} StwEventsOptions;

void stw_events_options_init(StwEventsOptions *o);

/* The builder's verdict on what it saw, for people. */
typedef struct {
  guint iterations;        /* complete iteration ranges found */
  guint dropped_launches;  /* launches with no GPU record (dropped by CUPTI) */
  guint incomplete_kernels; /* kernel records that ended before they started (left out) */
  guint unlaunched_kernels; /* kernel records of no recorded launch (a CUDA graph's: left out) */
  guint duplicate_allocs;  /* repeated allocation records ignored */
  guint unknown_frees;     /* frees of memory allocated before the profiler attached */
  guint open_ranges;       /* ranges still open at the end (the program exited inside them) */
} StwEventsReport;

/* The trace of one iteration of E, validated; the caller frees it. NULL with ERROR set
 * (STW_EVENTS_ERROR) when the stream has no such iteration or no op in it, or its ranges do not
 * nest. REPORT may be NULL. */
StwTrace *stw_events_build(const StwEvents *e, const StwEventsOptions *o, StwEventsReport *report,
                           GError **error);

STW_END_DECLS

#endif
