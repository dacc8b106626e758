/* tier.h — chunks on the storage tier: the replay of a plan's "cpu-storage" and "storage" chunks.
 *
 * Each such chunk's optimizer state (its master weights, moments and, with AMSGrad, largest
 * variances: the lists after the param list, back to back) lives in one region of a file under
 * the directory the user names, and in host memory only while it is stepped: one of two staging
 * buffers holds it, read from the file before its CPU Adam step and written back behind it,
 * while the next chunk in the step order is read into the other buffer. A "storage" chunk's
 * region begins with its parameters' 16-bit copy (which carries their gradients after backward),
 * 4 KiB-aligned, before the state: the step reads and writes both, and the chunk store's fetches
 * and write-backs of the param item go through two more staging buffers of the parameters alone
 * (stw_tier_params_borrow). Host memory is the four buffers, whatever the model's size.
 *
 * A region is checksummed (with the chunk and the count of its writes) when it is written and
 * checked when it is read back: a file truncated or altered between an iteration's write and
 * the next read stops the run, naming the chunk. The files are scratch: a checkpoint holds the
 * state (read through here), a resume writes it back.
 *
 * Internal to the library: not installed.
 */
#ifndef STW_TIER_H
#define STW_TIER_H

#include <glib.h>

#include <stowage/storage.h>

G_BEGIN_DECLS

typedef struct StwTier StwTier;

typedef struct {
  guint64 read_bytes, write_bytes; /* state moved since the iteration began */
  guint64 wait_ns;                 /* over the run: blocked until reads or writes completed */
} StwTierStats;

/* A tier under DIR with QUEUE_DEPTH requests in flight at most, for N_CHUNKS chunks of which
 * those with STATE_BYTES[c] > 0 live there, with PARAM_BYTES[c] of parameters before the state
 * where they live there too (NULL: none do); each to be stepped TENSORS[c] times an iteration, in
 * the order ORDER[0 .. N_ORDER-1] of first steps; its file NAME made (each region's first state
 * is the runtime's to give: stw_tier_state with FRESH; parameters never written read as zeros).
 * NULL with ERROR (STW_STORAGE_ERROR) naming the directory or file and why. */
StwTier *stw_tier_new(const char *dir, const char *name, guint32 queue_depth, guint32 n_chunks,
                      const guint64 *state_bytes, const guint64 *param_bytes,
                      const guint32 *tensors, const guint32 *order, guint32 n_order,
                      GError **error);
/* Waits for the requests in flight, frees the buffers and removes the file. */
void stw_tier_free(StwTier *t);
const StwStorageInfo *stw_tier_info(const StwTier *t);
/* Whether chunk CH's state lives on the tier; and its parameters. */
gboolean stw_tier_holds(const StwTier *t, guint32 ch);
gboolean stw_tier_holds_params(const StwTier *t, guint32 ch);
/* Where the state begins in the buffer stw_tier_state returns (its parameters, if here, before). */
guint64 stw_tier_state_offset(const StwTier *t, guint32 ch);
/* Before the read of chunk CH's region is issued ahead of its step: whether READY says its
 * parameters are whole on the tier (no write-back of them still on its way); a chunk that is not
 * is read when stepped. */
void stw_tier_set_ready(StwTier *t, gboolean (*ready)(gpointer data, guint32 ch), gpointer data);

/* Chunk CH's region (its parameters, if here, then its state at stw_tier_state_offset) in host
 * memory, its read waited for and checked. With MODIFY the buffer
 * becomes its newest copy (written back before the buffer holds another chunk); with FRESH its
 * state is not read but zeroed (the first state of a run). NULL with ERROR (STW_STORAGE_ERROR)
 * when the read failed, came back short or does not match what was written. The pointer is
 * valid until the next call on the tier. */
guint8 *stw_tier_state(StwTier *t, guint32 ch, gboolean modify, gboolean fresh, GError **error);
/* One of CH's tensors stepped: after the iteration's last, its state is written back and the
 * read of the next chunk in the order is issued. FALSE with ERROR when a request failed. */
gboolean stw_tier_stepped(StwTier *t, guint32 ch, GError **error);
/* The iteration's steps are over: chunks stepped in part are written back and their counts
 * start again. The last writes stay in flight into the next iteration (as the simulator has
 * them); stw_tier_sync waits for them. */
gboolean stw_tier_iteration_end(StwTier *t, GError **error);
/* Every newest copy written and every write landed: the file holds the whole state. */
gboolean stw_tier_sync(StwTier *t, GError **error);

/* A staging buffer for chunk CH's parameters (held here), lent until stw_tier_params_return: with
 * LOAD, their read into it is issued (a newer copy in a step's buffer written first), to be
 * waited for with stw_tier_params_loaded; else its contents are undefined (to be copied into).
 * One of the two buffers is never lent while the other is. NULL with ERROR when the read could
 * not be issued. */
guint8 *stw_tier_params_borrow(StwTier *t, guint32 ch, gboolean load, GError **error);
/* Whether the read into CH's lent buffer has landed (with WAIT, waited for): 1, checked against
 * what was written; 0, not yet; -1 with ERROR when it failed or does not match. */
gint stw_tier_params_loaded(StwTier *t, guint32 ch, gboolean wait, GError **error);
/* The buffer lent for CH given back; with WRITE its contents are CH's newest parameters, written
 * to the file (the buffer busy until they land; a step's older copy of them forgotten). FALSE
 * with ERROR when the write could not be issued. */
gboolean stw_tier_params_return(StwTier *t, guint32 ch, gboolean write, GError **error);

/* An iteration begins: state changed since the last (the run's first state, a checkpoint
 * loaded) written and waited for, and the buffers' chunks forgotten, so that the iteration
 * reads every chunk as the plan has it; the counts start again. */
gboolean stw_tier_iteration_begin(StwTier *t, GError **error);
const StwTierStats *stw_tier_stats(const StwTier *t);

G_END_DECLS

#endif
