/* offload.h — the runtime's replay of a plan's activation moves: the saved activations of the
 * blocks it offloads, copied to host memory after their forward and back before their backward.
 *
 * The trainer hands a block's saved allocations over at the end of its forward
 * (stw_runtime_offload); at each moment the offloader does what the plan's moves
 * (StwActivationMove) say: at OUT_MOMENT it queues their copies out, at OUT_DONE it waits for
 * them and frees the device memory, at IN_MOMENT it takes new device memory and queues the
 * copies back, pointing the trainer's slots at it, and at IN_DONE it waits for them. The host
 * buffers (pinned where the backend has that) are allocated once and kept for the run.
 *
 * Internal to the library: not installed.
 */
#ifndef STW_OFFLOAD_H
#define STW_OFFLOAD_H

#include <glib.h>

#include <stowage/trace.h>

#include "store.h"

G_BEGIN_DECLS

#define STW_OFFLOAD_MAX_SLOTS 64 /* allocations a block may hand over */

typedef struct StwOffloader StwOffloader;

/* An offloader of MOVES (StwActivationMove, copied) on S, whose backend allocates the host
 * buffers. */
StwOffloader *stw_offloader_new(const GArray *moves, StwStore *s, StwBackend *backend);
/* Waits for the copies in flight and frees the host buffers (and what device memory it holds). */
void stw_offloader_free(StwOffloader *o);

/* Block BLOCK's N saved allocations *SLOTS[i] (from stw_store_alloc), handed over at the end of
 * its forward. FALSE with ERROR (STW_RUNTIME_ERROR_MISMATCH) when the plan does not offload it,
 * it is handed over twice in one iteration, or its bytes are not the move's. */
gboolean stw_offloader_hand(StwOffloader *o, guint32 block, gpointer *const *slots, guint n,
                            GError **error);
/* Moment M's moves, before the chunks' actions: copies out queued, and those done by M waited
 * for, their device memory freed. */
gboolean stw_offloader_before(StwOffloader *o, guint32 m, GError **error);
/* ... and after them: copies back queued into new device memory, and those done by M waited
 * for. */
gboolean stw_offloader_after(StwOffloader *o, guint32 m, GError **error);
/* An iteration ended early: the copies in flight are waited for, the device memory the
 * offloader holds freed, and the trainer's slots left as they are. */
void stw_offloader_abandon(StwOffloader *o);

G_END_DECLS

#endif
