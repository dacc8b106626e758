/* whatif.h — one question at a time: "with this policy and this budget, how fast?"
 *
 * The sweeps of `compare`, `whatif`, `minmem` and `capacity` are made of such points. Every point
 * is a full plan (chunk-size search included for the stowage policy), checked, and simulated.
 */
#ifndef STW_WHATIF_H
#define STW_WHATIF_H

#include <glib.h>

#include <stowage/planner.h>
#include <stowage/simulate.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_PLANNER
#error "<stowage/whatif.h> belongs to the planner: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

typedef struct {
  StwPolicy policy;
  guint64 gpu_bytes;
  gboolean feasible;
  char *why;                 /* when not feasible: the planner's message */
  guint64 chunk_size_elems;
  guint64 h2d_bytes, d2h_bytes;
  guint64 comm_bytes;        /* received by a rank in collectives (several GPUs) */
  guint64 iteration_ns;      /* simulated */
  guint64 peak_gpu_bytes;
  double slowdown;           /* iteration_ns / the unlimited-memory iteration time: 1 where
                              * both are 0, INFINITY where only the latter is, NAN where it is
                              * unknown (stw_whatif_slowdown) */
  StwThroughput throughput;  /* zeros where the trace does not say its batch and sequence */
} StwWhatifPoint;

void stw_whatif_point_clear(StwWhatifPoint *p);

/* An unlimited-memory time that is not known: its slowdowns are NAN. */
#define STW_WHATIF_UNKNOWN G_MAXUINT64

/* ITERATION_NS against UNLIMITED_NS, as StwWhatifPoint.slowdown says. */
double stw_whatif_slowdown(guint64 iteration_ns, guint64 unlimited_ns);

/* Plans T with BASE's options but POLICY and GPU_BYTES; UNLIMITED_NS (STW_WHATIF_UNKNOWN: not
 * known) scales the slowdown. Never fails: an infeasible point says why. */
void stw_whatif_run(const StwTrace *t, const StwPlannerOptions *base, StwPolicy policy,
                    guint64 gpu_bytes, guint64 unlimited_ns, StwWhatifPoint *out);

/* The simulated iteration time with every chunk resident, in *NS: the floor every budget is
 * measured against (0 for a trace whose ops take no time). FALSE, *NS STW_WHATIF_UNKNOWN and
 * *WHY (when not NULL; the caller frees it) the planner's message, when even that cannot be
 * planned. */
gboolean stw_whatif_unlimited(const StwTrace *t, const StwPlannerOptions *base, guint64 *ns,
                              char **why);

STW_END_DECLS

#endif
