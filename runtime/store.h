/* store.h — the chunk store: every item's host copy, its device slot, where its valid data is,
 * and the device budget, byte for byte.
 *
 * An item (a chunk of one list; plan.h) is always in one of four places. Its host copy always
 * exists; a device slot exists from the moment a fetch is issued until a write-back has landed or
 * a drop frees it:
 *
 *   AT_HOST     no slot; the host copy is the valid one
 *   TO_DEVICE   a fetch (H2D) in flight: the slot is allocated and counted, its data not valid yet
 *   ON_DEVICE   resident; with `dirty` the device copy is the only valid one
 *   TO_HOST     a write-back (D2H) in flight: the slot is still counted, the host copy becomes valid
 *               when it lands
 *
 * Another tier (NVMe) or another kind of copy (a collective filling a gathered group) is another
 * place, not another array of pointers. Copies complete lazily: a fetch is waited for when the
 * item is used, a write-back when its slot is needed or its host copy is read. A copy that fails,
 * or does not complete within the timeout, halts the store: nothing more is copied, and the
 * failure is reported at the next call that can fail. With `verify` every move is checksummed.
 *
 * Activations share the budget: they are allocated here too, and counted beside the slots. Their
 * memory comes from an arena whose layout the store learns from the first iteration: the
 * iterations of a training run allocate and free the same sizes in the same order, so the first
 * one's allocations are laid out offline (by size, largest first, each at the lowest offset no
 * allocation alive at the same time holds) and later iterations take their offsets, with no
 * allocation at all. An iteration that allocates otherwise falls back to the backend from that
 * point and the layout is learned again. The budget counts bytes in use either way.
 *
 * Internal to the library: not installed.
 */
#ifndef STW_STORE_H
#define STW_STORE_H

#include <glib.h>

#include <stowage/backend.h>

G_BEGIN_DECLS

typedef enum {
  STW_AT_HOST,
  STW_TO_DEVICE,
  STW_ON_DEVICE,
  STW_TO_HOST,
} StwPlace;

typedef struct StwStore StwStore;

/* A store of N_ITEMS items of BYTES each (copied), host copies allocated (zeroed) on BACKEND,
 * with CAPACITY device bytes for slots and activations. COPY_TIMEOUT_MS (0: none) bounds every
 * wait for a copy. */
StwStore *stw_store_new(StwBackend *backend, guint32 n_items, const guint64 *bytes,
                        guint64 capacity, gboolean verify, guint64 copy_timeout_ms);
/* Items whose host copy is another tier's (a chunk's parameters on the storage tier, tier.h):
 * a backed item keeps no host copy. While it is AT_HOST its data is the backing's; a fetch
 * borrows a host buffer the backing reads it into and copies from there once the read has
 * landed (the store looks at each op and at each wait: the compute goes on meanwhile), a
 * write-back borrows one to copy into and gives it back to be written; a buffer is given back
 * when its copy is done, and at most two are lent at a time (the oldest settled first). A backed
 * item on the device is not dirty unless changed there: dropping it loses nothing. */
typedef struct {
  /* A host buffer of ITEM's bytes, lent until given back; with LOAD they are being read into it
   * (loaded says when they are there). NULL with ERROR. */
  guint8 *(*borrow)(gpointer data, guint32 item, gboolean load, GError **error);
  /* Whether the read into ITEM's lent buffer has landed (with WAIT, waited for): 1, its bytes
   * checked; 0, not yet; -1 with ERROR when it failed or does not match what was written. */
  gint (*loaded)(gpointer data, guint32 item, gboolean wait, GError **error);
  /* The buffer lent for ITEM given back; with WRITE its bytes are ITEM's newest, written to the
   * backing. FALSE with ERROR. */
  gboolean (*give_back)(gpointer data, guint32 item, gboolean write, GError **error);
  gpointer data;
} StwStoreBacking;

/* As stw_store_new, BACKING holding the host copies of the items I with BACKED[I] (N_ITEMS of them,
 * copied), which get none here. */
StwStore *stw_store_new_backed(StwBackend *backend, guint32 n_items, const guint64 *bytes,
                               guint64 capacity, gboolean verify, guint64 copy_timeout_ms,
                               const StwStoreBacking *backing, const guint8 *backed);
gboolean stw_store_backed(const StwStore *s, guint32 item);
void stw_store_free(StwStore *s);

/* Every item's host copy is its device copy, resident for good: the plain mode, with no budget,
 * no moves and no bookkeeping (the baseline the runtime's cost is measured against). */
void stw_store_make_plain(StwStore *s);

/* Every item resident for good in its host copy, counted against the budget: on a device whose
 * memory is host memory, a model state that stays needs no second copy. Nothing is moved. */
void stw_store_keep_in_place(StwStore *s);

StwPlace stw_store_place(const StwStore *s, guint32 item);
/* Whether ITEM has a device slot: fetched, or on its way there. */
gboolean stw_store_resident(const StwStore *s, guint32 item);
gboolean stw_store_dirty(const StwStore *s, guint32 item);
/* The device copy is the only valid one from now (a gradient, an optimizer step). */
void stw_store_set_dirty(StwStore *s, guint32 item);
guint64 stw_store_bytes(const StwStore *s, guint32 item);

/* The host copy of ITEM, complete (any write-back in flight is waited for; a released one is
 * made again from the device copy). Not for a backed item (stw_store_read and write are). */
guint8 *stw_store_host(StwStore *s, guint32 item);
/* Exchanges the host copies of items A and B, of the same size, each with one and with no copy
 * in flight: host buffers that change roles (an fp32 compute copy's gradient landing where its
 * master weights were while the weights wait in the other; runtime.c). Nothing else changes,
 * where the valid data is included: the caller knows what each buffer holds (and marks a
 * resident item dirty when its host copy is no longer its values). FALSE, and nothing done,
 * where the store cannot (sizes, copies in flight, a backed or released item, a plain or
 * in-place store). */
gboolean stw_store_swap_host(StwStore *s, guint32 a, guint32 b);
/* Frees the host copy of ITEM, resident and settled, which its plan keeps on the device for good:
 * the device copy is then the only one (dirty), read and written there, and a host copy is made
 * again only if it must leave (an eviction the plan did not make). FALSE, and nothing done, for a
 * volatile item, one not settled on the device, or a store whose items are their host copies. */
gboolean stw_store_release_host(StwStore *s, guint32 item);
/* The device copy of resident ITEM, complete (its fetch is waited for). */
guint8 *stw_store_device(StwStore *s, guint32 item);

/* Issues the fetch of ITEM (AT_HOST or TO_HOST; a write-back is waited for first), making room
 * by evicting the least recently used items not needed by the current op. FALSE with ERROR when
 * the budget cannot hold it or the backend refuses the slot. */
gboolean stw_store_fetch(StwStore *s, guint32 item, GError **error);
/* A slot for ITEM without copying anything into it (AT_HOST to ON_DEVICE): what a collective
 * fills (the others' chunks of a group, all-gathered). FALSE with ERROR when the budget cannot
 * hold it. */
gboolean stw_store_claim(StwStore *s, guint32 item, GError **error);
/* ITEM's data lives only on the device while it is there (a gathered group): it is never chosen
 * to make room, and never fetched from its host copy. */
void stw_store_set_volatile(StwStore *s, guint32 item);
gboolean stw_store_volatile(const StwStore *s, guint32 item);
/* The device copy need not reach the host (a group's gradients, reduce-scattered). */
void stw_store_clear_dirty(StwStore *s, guint32 item);

/* ITEM's memory freed, its values gone: its copy in flight settled, its slot and its host copy
 * freed (a backed item's buffer is the backing's). Nothing may read or move it afterwards: for
 * handing a model back when training is over (stw_runtime_hand_back). */
void stw_store_forget(StwStore *s, guint32 item);

/* Issues the write-back of resident ITEM; its slot is freed when the copy lands. */
void stw_store_evict(StwStore *s, guint32 item);
/* Frees the slot of resident ITEM. A dirty item is written back instead: data is never lost.
 * Returns FALSE when it had to be (the caller counts a deviation). */
gboolean stw_store_drop(StwStore *s, guint32 item);
/* Waits for ITEM's copy in flight either way, if any. */
void stw_store_settle(StwStore *s, guint32 item);
/* Frees the slots of write-backs that have landed, without waiting. */
void stw_store_reap(StwStore *s);

/* The on-demand policy: ITEM is needed by the current op (not a victim until the next op), and
 * it was used now (least recently used goes first). */
void stw_store_next_op(StwStore *s);
void stw_store_need(StwStore *s, guint32 item);
/* How many items were evicted to make room since the store was made. */
guint64 stw_store_room_evictions(const StwStore *s);

/* An iteration's activations begin and end: the arena is learned from, and then used by, what
 * happens between the two. */
void stw_store_iteration_begin(StwStore *s);
void stw_store_iteration_end(StwStore *s);

/* Activation memory of BYTES on the device, counted against the budget; not zeroed (with
 * verify: every byte 0xff, a NaN, so that a read before a write shows). NULL with ERROR when the
 * budget or the backend cannot hold it. */
gpointer stw_store_alloc(StwStore *s, gsize bytes, GError **error);
/* Frees P (from stw_store_alloc) and returns its size. */
gsize stw_store_release(StwStore *s, gpointer p);
guint64 stw_store_activation_bytes(const StwStore *s);
/* The size of P (from stw_store_alloc); 0 for what is not one. */
gsize stw_store_allocation_bytes(const StwStore *s, gconstpointer p);

/* Activations to host memory and back (a block's that the plan offloads), on the copy engines
 * beside the chunks' and counted with their bytes. Copy out: P (from stw_store_alloc) into HOST
 * (its size); the event completes when it is done, and P is the caller's to release then. Copy
 * in: HOST's BYTES into new activation memory (counted against the budget), returned, its copy
 * in *EVENT; NULL with ERROR when the budget or the backend cannot hold it. */
StwEvent *stw_store_copy_out(StwStore *s, gconstpointer p, gpointer host);
gpointer stw_store_copy_in(StwStore *s, gconstpointer host, gsize bytes, StwEvent **event,
                           GError **error);
/* Waits for a copy of the two above and frees its event; FALSE with ERROR when it failed or did
 * not complete within the copy timeout (the store halts, as for a chunk's). */
gboolean stw_store_wait_copy(StwStore *s, StwEvent *event, GError **error);

/* Reads N bytes at OFF of ITEM's valid copy (the device's when it holds the only one). */
void stw_store_read(StwStore *s, guint32 item, guint64 off, void *out, gsize n);
/* Writes N bytes at OFF into ITEM's host copy and, when resident, its device copy. */
void stw_store_write(StwStore *s, guint32 item, guint64 off, const void *in, gsize n);

typedef struct {
  guint64 h2d_bytes, d2h_bytes;  /* since stw_store_reset_moved */
  guint64 peak_bytes;            /* device bytes in use, over the store's life */
  guint64 peak_settled_bytes;    /* the same with a write-back's slot free from its issue, not
                                  * its landing: what a plan counts (its evictions free their
                                  * memory at their moment); the copies in flight held the rest */
  guint64 verified_moves;
  guint64 arena_bytes;           /* the activation arena's size; 0 before it is learned */
  guint64 arena_iterations;      /* iterations whose activations all came from it */
  guint64 copy_wait_ns;          /* over the store's life: blocked on copies not yet done */
} StwStoreStats;

const StwStoreStats *stw_store_stats(const StwStore *s);
void stw_store_reset_moved(StwStore *s);

/* The store's invariants, every one of them: each item's host copy exists; AT_HOST holds no
 * slot, no copy in flight and is not dirty; TO_DEVICE and TO_HOST hold a slot and a copy in
 * flight and are not dirty; ON_DEVICE holds a slot and no copy in flight; exactly the TO_HOST
 * items are queued to land, once each; the bytes in use are the slots' and the activations',
 * byte for byte, and within the capacity. FALSE with ERROR (STW_RUNTIME_ERROR_CORRUPT) naming
 * the first that does not hold. A plain store keeps no books: TRUE. */
gboolean stw_store_check(const StwStore *s, GError **error);

/* The first copy failure or checksum mismatch not reported yet (the caller owns it), or NULL. */
GError *stw_store_take_failure(StwStore *s);

G_END_DECLS

#endif
