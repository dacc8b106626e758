/* spans.h — one range of device memory carved first-fit: the backends' arenas (the CUDA
 * backend's one cudaMalloc, the host backend's one mapping of its emulated device).
 *
 * Allocations are offsets into the range, rounded up to the alignment and taken at the lowest
 * free offset that holds them; freed spans are merged with their free neighbours. Nothing is
 * allocated from the system after the range is made: a plan's allocations, the same every
 * iteration, cost a scan of the free spans each. (Taking chunk slots from the top and
 * activations from the bottom touched more of the range, not less: the two peak at different
 * moments, and each side keeps its own high-water mark.)
 *
 * Internal to the library: not installed.
 */
#ifndef STW_SPANS_H
#define STW_SPANS_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct StwSpans StwSpans;

#define STW_SPANS_NONE G_MAXUINT64

/* A range of BYTES, every allocation a multiple of ALIGN (a power of two). */
StwSpans *stw_spans_new(guint64 bytes, guint64 align);
void stw_spans_free(StwSpans *s);
guint64 stw_spans_bytes(const StwSpans *s);
/* BYTES (at least 1) taken at the lowest free offset that holds them, rounded up: that offset,
 * or STW_SPANS_NONE when no free span holds them. */
guint64 stw_spans_take(StwSpans *s, guint64 bytes);

/* What was taken at OFFSET given back: its size, or 0 (nothing done) where nothing was. */
guint64 stw_spans_give(StwSpans *s, guint64 offset);
/* Bytes taken now, and the end of the highest span ever taken (the range's memory touched). */
guint64 stw_spans_used(const StwSpans *s);
guint64 stw_spans_high(const StwSpans *s);
/* FN(offset, bytes, DATA) for each free span, lowest first. */
void stw_spans_each_free(const StwSpans *s,
                         void (*fn)(guint64 offset, guint64 bytes, gpointer data), gpointer data);

G_END_DECLS

#endif
