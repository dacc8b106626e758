/* summary.h — what `stowage inspect` reports about a trace, computed once for every output. */
#ifndef STW_SUMMARY_H
#define STW_SUMMARY_H

#include <glib.h>

#include <stowage/trace.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_CORE
#error "<stowage/summary.h> belongs to the core: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

typedef struct {
  guint64 params;                   /* elements of all model tensors */
  guint64 frozen_params;            /* ... of the frozen ones (no gradient, no optimizer state) */
  guint32 frozen_tensors;
  guint64 list_bytes[STW_N_LISTS];  /* model-data bytes per list (a frozen tensor in the param
                                     * list only) */
  guint64 model_bytes;              /* the sum of list_bytes */
  guint64 peak_nonmodel_bytes;      /* max nonmodel_peak_bytes over ops */
  guint32 peak_op;                  /* the op where that peak occurs (first, if several) */
  guint32 stage_ops[STW_N_STAGES];
  guint64 stage_ns[STW_N_STAGES];   /* summed durations */
  guint64 stage_flops[STW_N_STAGES];
  guint32 blocks;                   /* the trace's blocks (0: it knows none) */
  guint64 block_saved_bytes;        /* what they keep for backward when kept, in all */
  guint64 block_input_bytes;        /* their inputs, in all: what recomputing them all keeps */
  guint64 block_forward_ns;         /* their forwards' time: recomputing them all costs this */
  guint64 recomputed_peak_bytes;    /* the peak non-model memory with every block recomputed
                                     * (stw_trace_recompute); 0 where the trace's blocks are
                                     * decided (checkpointing, micro-steps) or it has none */
  guint32 *largest;                 /* tensor ids, largest first */
  guint32 n_largest;
  char *digest;                     /* stw_trace_digest() */
} StwTraceSummary;

/* Summarizes T, listing its TOP largest tensors. Free with stw_trace_summary_free. */
StwTraceSummary *stw_trace_summary_new(const StwTrace *t, guint32 top);
void stw_trace_summary_free(StwTraceSummary *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwTraceSummary, stw_trace_summary_free)
/* S as the record `stowage inspect --json` prints (and Python's Trace.summary returns): a new
 * string the caller frees with g_free. */
char *stw_trace_summary_json(const StwTrace *t, const StwTraceSummary *s);

STW_END_DECLS

#endif
