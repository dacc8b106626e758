/* store.c — host copies, device slots, copies in flight and the device budget; see store.h. */
#include "config.h"

#include "store.h"

#include <string.h>

#include <stowage/runtime.h>

/* One activation allocation of an iteration: its size, its lifetime on the iteration's clock of
 * allocations and releases, and its offset in the arena once laid out. */
typedef struct {
  guint64 bytes, offset;
  guint32 born, died;
} ActBlock;

#define ALIVE G_MAXUINT32
#define ARENA_ALIGN 256
#define NO_ITEM G_MAXUINT32

struct StwStore {
  StwBackend *be;
  guint32 n_items;
  guint64 *bytes;           /* per item */
  guint8 **host;            /* per item: the host copy; NULL once released (resident items a
                             * plan never moves: stw_store_release_host), made again when one
                             * is needed */
  guint8 **slot;            /* per item: the device slot (TO_DEVICE, ON_DEVICE, TO_HOST) */
  StwPlace *place;          /* per item */
  guint8 *dirty;            /* per item: the device copy is the only valid one */
  StwEvent **copy;          /* per item: the copy in flight (TO_DEVICE, TO_HOST) */
  guint64 *sum;             /* verify: per item, the checksum of the copy's source at issue */
  GQueue leaving;           /* guint32 items in TO_HOST, in issue order (GUINT_TO_POINTER) */
  guint64 capacity, used;   /* device bytes: slots (incl. leaving) + activations */
  guint64 slots_peak;       /* while learning: the most the slots held (beside the arena) */
  guint64 leaving_bytes;    /* of them, the leaving slots' */
  GHashTable *acts;         /* activation pointer -> size */
  guint64 act_bytes;
  /* the activation arena (store.h) */
  GArray *learning;         /* ActBlock per allocation of the iteration being learned, or NULL */
  GHashTable *learn_index;  /* while learning: activation pointer -> its index + 1 */
  guint32 act_clock;        /* allocations and releases so far in this iteration */
  GArray *layout;           /* ActBlock: the learned allocations in order, laid out; or NULL */
  guint8 *arena;
  guint32 next;             /* the next allocation's index in the layout */
  gboolean following;       /* this iteration's allocations have matched the layout so far */
  gboolean no_arena;        /* the backend had no room for one: allocate one by one */
  guint64 *last_use, clock; /* the on-demand policy: least recently used out */
  guint32 *needed, stamp;   /* per item: the op that needs it */
  guint64 room_evictions;
  gboolean verify, plain;
  gboolean in_place;        /* every item resident in its host copy for good */
  guint8 *volatile_;        /* per item: stw_store_set_volatile */
  guint8 *backed;           /* per item: its host copy is the backing's (NULL: none is) */
  StwStoreBacking backing;
#define N_LENT 2
  guint32 lent[N_LENT];     /* backed items whose copies use lent buffers, oldest first */
  guint8 *loading;          /* per item: TO_DEVICE, its bytes still being read into the buffer
                             * (its copy not issued yet) */
  guint64 copy_timeout_ms;
  StwStoreStats st;
  GError *failure;          /* a checksum failure, failed or stuck copy, not reported yet */
  gboolean halted;          /* a copy failed or never completed: no more waiting or copies */
};

static guint64
checksum(const void *p, gsize n)
{
  const guint8 *b = p;
  guint64 h = 1469598103934665603ull;
  for (gsize i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static gboolean
in_arena(const StwStore *s, gconstpointer p)
{
  const guint8 *b = p;
  return s->arena != NULL && b >= s->arena && b < s->arena + s->st.arena_bytes;
}

static void
drop_arena(StwStore *s)
{
  if (s->arena != NULL)
    s->be->device_free(s->be, s->arena);
  s->arena = NULL;
  s->st.arena_bytes = 0;
  g_clear_pointer(&s->layout, g_array_unref);
}

StwStore *
stw_store_new(StwBackend *be, guint32 n_items, const guint64 *bytes, guint64 capacity,
              gboolean verify, guint64 copy_timeout_ms)
{
  return stw_store_new_backed(be, n_items, bytes, capacity, verify, copy_timeout_ms, NULL, NULL);
}

StwStore *
stw_store_new_backed(StwBackend *be, guint32 n_items, const guint64 *bytes, guint64 capacity,
                     gboolean verify, guint64 copy_timeout_ms, const StwStoreBacking *backing,
                     const guint8 *backed)
{
  StwStore *s = g_new0(StwStore, 1);
  s->be = be;
  s->n_items = n_items;
  gsize n = MAX(n_items, 1);
  s->bytes = g_memdup2(bytes, n * sizeof(guint64));
  s->host = g_new0(guint8 *, n);
  s->slot = g_new0(guint8 *, n);
  s->place = g_new0(StwPlace, n);
  s->dirty = g_new0(guint8, n);
  s->copy = g_new0(StwEvent *, n);
  s->sum = g_new0(guint64, n);
  s->last_use = g_new0(guint64, n);
  s->needed = g_new0(guint32, n);
  s->volatile_ = g_new0(guint8, n);
  for (int l = 0; l < N_LENT; l++)
    s->lent[l] = NO_ITEM;
  s->loading = g_new0(guint8, n);
  g_queue_init(&s->leaving);
  s->capacity = capacity;
  s->acts = g_hash_table_new(g_direct_hash, g_direct_equal);
  s->verify = verify;
  s->copy_timeout_ms = copy_timeout_ms;
  if (backing != NULL) {
    s->backing = *backing;
    s->backed = g_memdup2(backed, n);
  }
  for (guint32 i = 0; i < n_items; i++) /* a backed item's host copy is the backing's */
    s->host[i] = stw_store_backed(s, i) ? NULL : be->host_alloc(be, s->bytes[i]);
  return s;
}

/* The peaks, after device memory was taken: as held, and as a plan counts it (the slots of
 * write-backs in flight free). */
static void
note_peak(StwStore *s)
{
  s->st.peak_bytes = MAX(s->st.peak_bytes, s->used);
  s->st.peak_settled_bytes = MAX(s->st.peak_settled_bytes, s->used - s->leaving_bytes);
}

void
stw_store_make_plain(StwStore *s)
{
  s->plain = TRUE;
  for (guint32 i = 0; i < s->n_items; i++) {
    s->slot[i] = s->host[i];
    s->place[i] = STW_ON_DEVICE;
  }
}

void
stw_store_keep_in_place(StwStore *s)
{
  g_assert(s->be->device_is_host && s->used == 0);
  s->in_place = TRUE;
  for (guint32 i = 0; i < s->n_items; i++) {
    s->slot[i] = s->host[i];
    s->place[i] = STW_ON_DEVICE;
    s->used += s->bytes[i];
  }
  note_peak(s);
}

void
stw_store_free(StwStore *s)
{
  if (s == NULL)
    return;
  /* events are released without waiting when a copy got stuck (event_free must not block on
   * one that never completes) */
  for (guint32 i = 0; i < s->n_items; i++) {
    if (s->copy[i] != NULL) {
      if (!s->halted && s->place[i] == STW_TO_HOST)
        s->be->wait(s->be, s->copy[i]);
      s->be->event_free(s->be, s->copy[i]);
    }
    if (s->slot[i] != NULL && !s->plain && !s->in_place)
      s->be->device_free(s->be, s->slot[i]);
    if (s->host[i] != NULL && !stw_store_backed(s, i)) /* a lent buffer is the backing's */
      s->be->host_free(s->be, s->host[i]);
  }
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, s->acts);
  while (g_hash_table_iter_next(&it, &key, NULL))
    if (!in_arena(s, key))
      s->be->device_free(s->be, key);
  g_hash_table_unref(s->acts);
  drop_arena(s);
  g_clear_pointer(&s->learning, g_array_unref);
  g_clear_pointer(&s->learn_index, g_hash_table_unref);
  g_queue_clear(&s->leaving);
  g_clear_error(&s->failure);
  g_free(s->bytes);
  g_free(s->host);
  g_free(s->slot);
  g_free(s->place);
  g_free(s->dirty);
  g_free(s->copy);
  g_free(s->sum);
  g_free(s->last_use);
  g_free(s->needed);
  g_free(s->volatile_);
  g_free(s->backed);
  g_free(s->loading);
  g_free(s);
}

gboolean
stw_store_backed(const StwStore *s, guint32 item)
{
  return s->backed != NULL && s->backed[item];
}

StwPlace
stw_store_place(const StwStore *s, guint32 item)
{
  return s->place[item];
}

gboolean
stw_store_resident(const StwStore *s, guint32 item)
{
  return s->place[item] == STW_TO_DEVICE || s->place[item] == STW_ON_DEVICE;
}

gboolean
stw_store_dirty(const StwStore *s, guint32 item)
{
  return s->dirty[item];
}

void
stw_store_set_dirty(StwStore *s, guint32 item)
{
  g_assert(stw_store_resident(s, item));
  s->dirty[item] = 1;
}

guint64
stw_store_bytes(const StwStore *s, guint32 item)
{
  return s->bytes[item];
}

/* ---- copies in flight ---------------------------------------------------------------------- */

/* Records a device failure (the first one is reported, at the next call that can fail) and stops
 * all copying: the copy's destination holds nothing reliable. */
static void
halt(StwStore *s, GError *why)
{
  if (s->failure == NULL)
    s->failure = why;
  else
    g_error_free(why);
  s->halted = TRUE;
}

static void
corrupt(StwStore *s, guint32 item, const char *direction)
{
  if (s->failure == NULL)
    s->failure = g_error_new(STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_CORRUPT,
                             "chunk item %u changed in its %s copy", item, direction);
}

/* Waits for E; with a copy timeout, a copy that does not complete in time is recorded as a
 * device error instead of hanging the run. A copy that fails is recorded the same way. */
static void
wait_event(StwStore *s, StwEvent *e)
{
  gint64 t0 = g_get_monotonic_time();
  if (s->copy_timeout_ms > 0) {
    gint64 deadline = g_get_monotonic_time() + (gint64)s->copy_timeout_ms * 1000;
    while (!s->be->done(s->be, e)) {
      if (g_get_monotonic_time() > deadline) {
        halt(s, g_error_new(STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE,
                            "a copy did not complete within %" G_GUINT64_FORMAT " ms: the "
                            "device or its driver is stuck; the run stops here, and the last "
                            "checkpoint holds the model state", s->copy_timeout_ms));
        return;
      }
      g_usleep(50);
    }
  }
  if (!s->be->wait(s->be, e))
    halt(s, g_error_new(STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE,
                        "a copy failed (%s): the run stops here, and the last checkpoint "
                        "holds the model state", s->be->error));
  s->st.copy_wait_ns += (guint64)(g_get_monotonic_time() - t0) * 1000;
}

/* Where ITEM is among the lent, or -1. */
static int
lent_at(const StwStore *s, guint32 item)
{
  for (int l = 0; l < N_LENT; l++)
    if (s->lent[l] == item)
      return l;
  return -1;
}

/* The buffer lent for backed ITEM's copy, done, given back (with WRITE: to be written). */
static void
end_lend(StwStore *s, guint32 item, gboolean write)
{
  int at = lent_at(s, item);
  if (at < 0)
    return;
  for (int l = at; l + 1 < N_LENT; l++)
    s->lent[l] = s->lent[l + 1];
  s->lent[N_LENT - 1] = NO_ITEM;
  s->host[item] = NULL;
  GError *why = NULL;
  if (!s->backing.give_back(s->backing.data, item, write, &why))
    halt(s, why);
}

/* A write-back of ITEM has landed: its slot is freed. */
static void
landed(StwStore *s, guint32 item)
{
  if (s->verify) {
    if (checksum(s->host[item], s->bytes[item]) != s->sum[item])
      corrupt(s, item, "device-to-host");
    s->st.verified_moves++;
  }
  end_lend(s, item, TRUE);
  s->be->event_free(s->be, s->copy[item]);
  s->copy[item] = NULL;
  s->be->device_free(s->be, s->slot[item]);
  s->slot[item] = NULL;
  s->used -= s->bytes[item];
  s->leaving_bytes -= s->bytes[item];
  s->place[item] = STW_AT_HOST;
}

/* Frees the slots of landed write-backs, in issue order; with WAIT, of all of them. */
static void
reap(StwStore *s, gboolean wait)
{
  while (!g_queue_is_empty(&s->leaving) && !s->halted) {
    guint32 item = GPOINTER_TO_UINT(g_queue_peek_head(&s->leaving));
    if (!wait && !s->be->done(s->be, s->copy[item]))
      break;
    wait_event(s, s->copy[item]);
    if (s->halted)
      break;
    g_queue_pop_head(&s->leaving);
    landed(s, item);
  }
}

static void progress(StwStore *s);

void
stw_store_reap(StwStore *s)
{
  reap(s, FALSE);
  progress(s);
}

/* The fetch of backed ITEM copied from its lent buffer, now that its bytes are there. */
static void
start_copy(StwStore *s, guint32 item)
{
  s->loading[item] = 0;
  if (s->verify)
    s->sum[item] = checksum(s->host[item], s->bytes[item]);
  s->copy[item] = s->be->copy(s->be, STW_COPY_H2D, s->slot[item], s->host[item], s->bytes[item]);
}

/* Whether backed ITEM's bytes have landed in its lent buffer (with WAIT: waited for), its copy
 * then issued; a failed read halts the store. */
static gboolean
load_landed(StwStore *s, guint32 item, gboolean wait)
{
  GError *why = NULL;
  gint64 t0 = wait ? g_get_monotonic_time() : 0;
  gint r = s->backing.loaded(s->backing.data, item, wait, &why);
  if (wait)
    s->st.copy_wait_ns += (guint64)(g_get_monotonic_time() - t0) * 1000;
  if (r < 0)
    halt(s, why);
  else if (r > 0)
    start_copy(s, item);
  return r > 0;
}

/* The fetches of backed items whose bytes have landed since: their copies issued. */
static void
progress(StwStore *s)
{
  for (int l = 0; l < N_LENT && !s->halted; l++)
    if (s->lent[l] != NO_ITEM && s->loading[s->lent[l]])
      load_landed(s, s->lent[l], FALSE);
}

/* A fetch of ITEM has arrived: its device copy is valid. */
static void
arrived(StwStore *s, guint32 item)
{
  if (s->loading[item] && !load_landed(s, item, TRUE))
    return; /* halted */
  wait_event(s, s->copy[item]);
  if (s->halted)
    return;
  s->be->event_free(s->be, s->copy[item]);
  s->copy[item] = NULL;
  s->place[item] = STW_ON_DEVICE;
  if (s->verify) {
    if (checksum(s->slot[item], s->bytes[item]) != s->sum[item])
      corrupt(s, item, "host-to-device");
    s->st.verified_moves++;
  }
  end_lend(s, item, FALSE);
}

void
stw_store_settle(StwStore *s, guint32 item)
{
  if (s->place[item] == STW_TO_DEVICE && !s->halted)
    arrived(s, item);
  while (s->place[item] == STW_TO_HOST && !s->halted)
    reap(s, TRUE);
}

/* ITEM's host copy, allocated again where it was released (its contents undefined). */
static guint8 *
host_buffer(StwStore *s, guint32 item)
{
  if (s->host[item] == NULL)
    s->host[item] = s->be->host_alloc(s->be, s->bytes[item]);
  return s->host[item];
}

static void device_copy(StwStore *s, StwCopyDir dir, void *dst, const void *src, gsize bytes);

/* A buffer from the backing for backed ITEM's copy (LOAD: its bytes being read into it), lent
 * until the copy is done: with every buffer lent, the oldest copy is settled first. NULL with
 * ERROR. */
static guint8 *
borrow(StwStore *s, guint32 item, gboolean load, GError **error)
{
  if (s->lent[N_LENT - 1] != NO_ITEM)
    stw_store_settle(s, s->lent[0]);
  if (s->halted || s->lent[N_LENT - 1] != NO_ITEM) {
    if (s->failure != NULL)
      g_propagate_error(error, g_steal_pointer(&s->failure));
    else
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE,
                  "a copy failed or did not complete: chunk item %u cannot be copied", item);
    return NULL;
  }
  s->host[item] = s->backing.borrow(s->backing.data, item, load, error);
  if (s->host[item] != NULL)
    s->lent[lent_at(s, NO_ITEM)] = item;
  return s->host[item];
}

/* The same, its bytes there (read, waited for and checked): for a copy the caller makes now.
 * NULL with ERROR. */
static guint8 *
borrow_loaded(StwStore *s, guint32 item, GError **error)
{
  guint8 *p = borrow(s, item, TRUE, error);
  if (p != NULL && s->backing.loaded(s->backing.data, item, TRUE, error) < 0) {
    end_lend(s, item, FALSE);
    return NULL;
  }
  return p;
}

guint8 *
stw_store_host(StwStore *s, guint32 item)
{
  g_assert(!stw_store_backed(s, item));
  while (s->place[item] == STW_TO_HOST && !s->halted)
    reap(s, TRUE);
  if (s->host[item] == NULL) { /* released: the device holds the values; bring them over */
    device_copy(s, STW_COPY_D2H, host_buffer(s, item), stw_store_device(s, item),
                s->bytes[item]);
    s->dirty[item] = 0;
  }
  return s->host[item];
}

gboolean
stw_store_swap_host(StwStore *s, guint32 a, guint32 b)
{
  if (s->plain || s->in_place || a == b || s->bytes[a] != s->bytes[b] ||
      stw_store_backed(s, a) || stw_store_backed(s, b))
    return FALSE;
  for (int k = 0; k < 2; k++) {
    guint32 item = k == 0 ? a : b;
    if (s->host[item] == NULL ||
        (s->place[item] != STW_AT_HOST && s->place[item] != STW_ON_DEVICE))
      return FALSE;
  }
  guint8 *host = s->host[a];
  s->host[a] = s->host[b];
  s->host[b] = host;
  return TRUE;
}

gboolean
stw_store_release_host(StwStore *s, guint32 item)
{
  if (s->plain || s->in_place || s->volatile_[item] || s->place[item] != STW_ON_DEVICE ||
      s->host[item] == NULL)
    return FALSE;
  s->be->host_free(s->be, s->host[item]);
  s->host[item] = NULL;
  s->dirty[item] = 1; /* the device copy is the only one now */
  return TRUE;
}

guint8 *
stw_store_device(StwStore *s, guint32 item)
{
  g_assert(stw_store_resident(s, item));
  if (s->place[item] == STW_TO_DEVICE && !s->halted)
    arrived(s, item);
  return s->slot[item];
}

/* ---- the budget ---------------------------------------------------------------------------- */

/* The resident item, not needed now, to make room with: least recently used. */
static guint32
victim(const StwStore *s)
{
  guint32 best = G_MAXUINT32;
  for (guint32 i = 0; i < s->n_items && !s->in_place; i++) {
    if (!stw_store_resident(s, i) || s->needed[i] == s->stamp || s->volatile_[i])
      continue;
    if (best == G_MAXUINT32 || s->last_use[i] < s->last_use[best])
      best = i;
  }
  return best;
}

/* Makes BYTES of device memory available: landed and then pending write-backs first, then (on
 * demand) evicting items the current op does not need. */
static gboolean
reserve(StwStore *s, guint64 bytes, GError **error)
{
  reap(s, FALSE);
  while (s->used + bytes > s->capacity) {
    if (!g_queue_is_empty(&s->leaving) && !s->halted) {
      guint32 head = GPOINTER_TO_UINT(g_queue_peek_head(&s->leaving));
      wait_event(s, s->copy[head]);
      reap(s, FALSE);
      continue;
    }
    if (s->halted) {
      if (s->failure != NULL) /* why: the failed or stuck copy */
        g_propagate_error(error, g_steal_pointer(&s->failure));
      else
        g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE,
                    "a copy failed or did not complete: no device memory can be reclaimed");
      return FALSE;
    }
    guint32 v = victim(s);
    if (v == G_MAXUINT32) {
      g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET,
                  "the device budget of %" G_GUINT64_FORMAT " bytes cannot hold %" G_GUINT64_FORMAT
                  " more bytes: %" G_GUINT64_FORMAT " are taken by this op's chunks and by "
                  "activations", s->capacity, bytes, s->used);
      return FALSE;
    }
    s->room_evictions++;
    stw_store_evict(s, v);
  }
  s->used += bytes;
  note_peak(s);
  return TRUE;
}

void
stw_store_next_op(StwStore *s)
{
  s->stamp++;
  progress(s);
}

void
stw_store_need(StwStore *s, guint32 item)
{
  s->needed[item] = s->stamp;
  s->last_use[item] = ++s->clock;
}

guint64
stw_store_room_evictions(const StwStore *s)
{
  return s->room_evictions;
}

/* ---- moves --------------------------------------------------------------------------------- */

/* A device slot for ITEM, not resident, within the budget (a write-back in flight lands first).
 * FALSE with ERROR when the budget or the backend has no room. */
static gboolean
take_slot(StwStore *s, guint32 item, GError **error)
{
  g_assert(!stw_store_resident(s, item));
  if (stw_store_backed(s, item))
    stw_store_settle(s, item);
  else
    stw_store_host(s, item);
  if (!reserve(s, s->bytes[item], error))
    return FALSE;
  s->slot[item] = s->be->device_alloc(s->be, MAX(s->bytes[item], 1));
  if (s->slot[item] == NULL) {
    s->used -= s->bytes[item];
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET,
                "the backend could not allocate %" G_GUINT64_FORMAT " bytes", s->bytes[item]);
    return FALSE;
  }
  s->slots_peak = MAX(s->slots_peak, s->used - s->act_bytes);
  return TRUE;
}

gboolean
stw_store_fetch(StwStore *s, guint32 item, GError **error)
{
  if (!take_slot(s, item, error))
    return FALSE;
  if (stw_store_backed(s, item)) { /* the copy waits for the read (progress, arrived) */
    if (borrow(s, item, TRUE, error) == NULL) {
      s->be->device_free(s->be, s->slot[item]);
      s->slot[item] = NULL;
      s->used -= s->bytes[item];
      return FALSE;
    }
    s->loading[item] = 1;
    progress(s);
  } else {
    if (s->verify)
      s->sum[item] = checksum(s->host[item], s->bytes[item]);
    s->copy[item] = s->be->copy(s->be, STW_COPY_H2D, s->slot[item], s->host[item],
                                s->bytes[item]);
  }
  s->place[item] = STW_TO_DEVICE;
  s->dirty[item] = 0;
  s->st.h2d_bytes += s->bytes[item];
  return TRUE;
}

gboolean
stw_store_claim(StwStore *s, guint32 item, GError **error)
{
  if (!take_slot(s, item, error))
    return FALSE;
  s->place[item] = STW_ON_DEVICE;
  s->dirty[item] = 0;
  return TRUE;
}

void
stw_store_set_volatile(StwStore *s, guint32 item)
{
  s->volatile_[item] = 1;
}

gboolean
stw_store_volatile(const StwStore *s, guint32 item)
{
  return s->volatile_[item];
}

void
stw_store_clear_dirty(StwStore *s, guint32 item)
{
  /* a released item's device copy stays the only one */
  if (s->host[item] != NULL || stw_store_backed(s, item))
    s->dirty[item] = 0;
}

void
stw_store_evict(StwStore *s, guint32 item)
{
  g_assert(stw_store_resident(s, item));
  stw_store_device(s, item); /* the fetch lands first */
  guint8 *host;
  if (stw_store_backed(s, item)) {
    GError *why = NULL;
    host = borrow(s, item, FALSE, &why);
    if (host == NULL) { /* it stays where it is, and the store halts */
      halt(s, why);
      return;
    }
  } else {
    host = host_buffer(s, item);
  }
  if (s->verify)
    s->sum[item] = checksum(s->slot[item], s->bytes[item]);
  s->copy[item] = s->be->copy(s->be, STW_COPY_D2H, host, s->slot[item], s->bytes[item]);
  s->place[item] = STW_TO_HOST;
  g_queue_push_tail(&s->leaving, GUINT_TO_POINTER(item));
  s->leaving_bytes += s->bytes[item];
  s->dirty[item] = 0;
  s->st.d2h_bytes += s->bytes[item];
}

void
stw_store_forget(StwStore *s, guint32 item)
{
  stw_store_settle(s, item);
  if (s->copy[item] != NULL) { /* a halted store's copy: released without waiting */
    s->be->event_free(s->be, s->copy[item]);
    s->copy[item] = NULL;
  }
  if (s->place[item] == STW_TO_HOST) { /* halted while leaving */
    g_queue_remove(&s->leaving, GUINT_TO_POINTER(item));
    s->leaving_bytes -= s->bytes[item];
  }
  if (s->slot[item] != NULL) {
    if (!s->plain && !s->in_place) /* else the slot is the host copy */
      s->be->device_free(s->be, s->slot[item]);
    if (!s->plain) /* a plain store counts no slots */
      s->used -= s->bytes[item];
    s->slot[item] = NULL;
  }
  if (s->host[item] != NULL && !stw_store_backed(s, item))
    s->be->host_free(s->be, s->host[item]);
  s->host[item] = NULL;
  s->place[item] = STW_AT_HOST;
  s->dirty[item] = 0;
}

gboolean
stw_store_drop(StwStore *s, guint32 item)
{
  g_assert(stw_store_resident(s, item));
  if (s->dirty[item]) {
    stw_store_evict(s, item);
    return FALSE;
  }
  stw_store_device(s, item);
  s->be->device_free(s->be, s->slot[item]);
  s->slot[item] = NULL;
  s->used -= s->bytes[item];
  s->place[item] = STW_AT_HOST;
  return TRUE;
}

/* ---- activations ------------------------------------------------------------------------- */

static gint
larger_first(gconstpointer a, gconstpointer b, gpointer data)
{
  const ActBlock *x = &g_array_index((GArray *)data, ActBlock, *(const guint32 *)a);
  const ActBlock *y = &g_array_index((GArray *)data, ActBlock, *(const guint32 *)b);
  if (x->bytes != y->bytes)
    return x->bytes > y->bytes ? -1 : 1;
  return x->born < y->born ? -1 : x->born > y->born;
}

static gint
lower_offset(gconstpointer a, gconstpointer b)
{
  const ActBlock *x = *(ActBlock *const *)a, *y = *(ActBlock *const *)b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* A block's room in the arena: at least one alignment unit, so that no two live blocks share an
 * address. */
static guint64
aligned(guint64 bytes)
{
  return (MAX(bytes, 1) + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
}

/* Lays BLOCKS out (greedy by size: the largest first, each at the lowest aligned offset that no
 * block alive at the same time holds) and returns the arena's size. */
static guint64
lay_out(GArray *blocks)
{
  guint32 n = blocks->len;
  g_autofree guint32 *order = g_new(guint32, MAX(n, 1));
  for (guint32 i = 0; i < n; i++)
    order[i] = i;
  g_qsort_with_data(order, (gint)n, sizeof(guint32), larger_first, blocks);
  g_autoptr(GPtrArray) placed = g_ptr_array_new(), overlapping = g_ptr_array_new();
  guint64 size = 0;
  for (guint32 k = 0; k < n; k++) {
    ActBlock *b = &g_array_index(blocks, ActBlock, order[k]);
    g_ptr_array_set_size(overlapping, 0);
    for (guint i = 0; i < placed->len; i++) {
      const ActBlock *o = placed->pdata[i];
      if (b->born < o->died && o->born < b->died)
        g_ptr_array_add(overlapping, (gpointer)o);
    }
    g_ptr_array_sort(overlapping, lower_offset);
    guint64 at = 0, need = aligned(b->bytes);
    for (guint i = 0; i < overlapping->len; i++) {
      const ActBlock *o = overlapping->pdata[i];
      if (at + need <= o->offset)
        break;
      guint64 end = o->offset + aligned(o->bytes);
      at = MAX(at, end);
    }
    b->offset = at;
    size = MAX(size, at + need);
    g_ptr_array_add(placed, b);
  }
  return size;
}

void
stw_store_iteration_begin(StwStore *s)
{
  s->act_clock = 0;
  s->next = 0;
  s->following = s->layout != NULL;
  /* learn from an iteration that starts with no activation alive */
  if (s->layout == NULL && !s->no_arena && !s->plain && s->act_bytes == 0 && s->learning == NULL) {
    s->learning = g_array_new(FALSE, FALSE, sizeof(ActBlock));
    s->learn_index = g_hash_table_new(g_direct_hash, g_direct_equal);
    s->slots_peak = s->used;
  }
}

void
stw_store_iteration_end(StwStore *s)
{
  if (s->layout != NULL) {
    if (s->following && s->next == s->layout->len)
      s->st.arena_iterations++;
    else if (s->act_bytes == 0) /* the run changed its allocations: learn them again */
      drop_arena(s);
  }
  if (s->learning == NULL)
    return;
  gboolean complete = s->act_bytes == 0 && s->learning->len > 0;
  for (guint i = 0; complete && i < s->learning->len; i++)
    complete = g_array_index(s->learning, ActBlock, i).died != ALIVE;
  if (complete) {
    guint64 size = lay_out(s->learning);
    if (s->be->trim != NULL) /* the blocks of the iteration learned from are not needed again */
      s->be->trim(s->be);
    /* the arena holds its bytes all iteration: beside the most the slots held, within the
     * device, or not at all (a device can hold no more than its memory) */
    s->arena = s->slots_peak + size <= s->capacity ? s->be->device_alloc(s->be, size) : NULL;
    if (s->arena != NULL) {
      s->layout = g_steal_pointer(&s->learning);
      s->st.arena_bytes = size;
    } else {
      s->no_arena = TRUE; /* no room beside the slots: one by one, as they come */
    }
  }
  g_clear_pointer(&s->learning, g_array_unref);
  g_clear_pointer(&s->learn_index, g_hash_table_unref);
}

gpointer
stw_store_alloc(StwStore *s, gsize bytes, GError **error)
{
  gpointer p = NULL;
  if (s->plain) {
    p = g_malloc(MAX(bytes, 1));
  } else {
    if (!reserve(s, bytes, error))
      return NULL;
    if (s->following && s->next < s->layout->len &&
        g_array_index(s->layout, ActBlock, s->next).bytes == bytes) {
      p = s->arena + g_array_index(s->layout, ActBlock, s->next).offset;
      s->next++;
    } else {
      s->following = FALSE;
      p = s->be->device_alloc(s->be, MAX(bytes, 1));
      if (p == NULL) {
        s->used -= bytes;
        g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET,
                    "the backend could not allocate %" G_GSIZE_FORMAT " bytes: %s", bytes,
                    s->be->error);
        return NULL;
      }
    }
    if (s->learning != NULL) {
      ActBlock b = { .bytes = bytes, .born = s->act_clock++, .died = ALIVE };
      g_array_append_val(s->learning, b);
      g_hash_table_insert(s->learn_index, p, GUINT_TO_POINTER(s->learning->len));
    }
    g_hash_table_insert(s->acts, p, GSIZE_TO_POINTER(bytes));
    s->act_bytes += bytes;
  }
  if (s->verify)
    memset(p, 0xff, bytes); /* a NaN in every float: a kernel reading before writing shows */
  return p;
}

gsize
stw_store_release(StwStore *s, gpointer p)
{
  if (s->plain) {
    g_free(p);
    return 0;
  }
  gsize bytes = GPOINTER_TO_SIZE(g_hash_table_lookup(s->acts, p));
  g_hash_table_remove(s->acts, p);
  if (!in_arena(s, p))
    s->be->device_free(s->be, p);
  if (s->learning != NULL) {
    guint index = GPOINTER_TO_UINT(g_hash_table_lookup(s->learn_index, p));
    if (index > 0)
      g_array_index(s->learning, ActBlock, index - 1).died = s->act_clock++;
    g_hash_table_remove(s->learn_index, p);
  }
  s->act_bytes -= bytes;
  s->used -= bytes;
  return bytes;
}

guint64
stw_store_activation_bytes(const StwStore *s)
{
  return s->act_bytes;
}

gsize
stw_store_allocation_bytes(const StwStore *s, gconstpointer p)
{
  return s->plain ? 0 : GPOINTER_TO_SIZE(g_hash_table_lookup(s->acts, p));
}

StwEvent *
stw_store_copy_out(StwStore *s, gconstpointer p, gpointer host)
{
  gsize bytes = stw_store_allocation_bytes(s, p);
  s->st.d2h_bytes += bytes;
  return s->be->copy(s->be, STW_COPY_D2H, host, p, bytes);
}

gpointer
stw_store_copy_in(StwStore *s, gconstpointer host, gsize bytes, StwEvent **event, GError **error)
{
  gpointer p = stw_store_alloc(s, bytes, error);
  if (p == NULL)
    return NULL;
  s->st.h2d_bytes += bytes;
  *event = s->be->copy(s->be, STW_COPY_H2D, p, host, bytes);
  return p;
}

gboolean
stw_store_wait_copy(StwStore *s, StwEvent *event, GError **error)
{
  wait_event(s, event);
  s->be->event_free(s->be, event);
  if (!s->halted)
    return TRUE;
  if (s->failure != NULL)
    g_propagate_error(error, g_steal_pointer(&s->failure));
  else
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE, "a copy failed earlier: "
                "the run stops here, and the last checkpoint holds the model state");
  return FALSE;
}

/* ---- reading and writing the data ------------------------------------------------------------ */

/* Copies BYTES between host memory and device memory DEV: directly where the backend's device
 * memory is host memory, else through a copy, waited for. */
static void
device_copy(StwStore *s, StwCopyDir dir, void *dst, const void *src, gsize bytes)
{
  if (s->be->device_is_host || s->plain) {
    memcpy(dst, src, bytes);
    return;
  }
  StwEvent *e = s->be->copy(s->be, dir, dst, src, bytes);
  wait_event(s, e);
  s->be->event_free(s->be, e);
}

void
stw_store_read(StwStore *s, guint32 item, guint64 off, void *out, gsize n)
{
  if (stw_store_resident(s, item)) {
    guint8 *dev = stw_store_device(s, item);
    if (s->dirty[item] || s->host[item] == NULL) {
      device_copy(s, STW_COPY_D2H, out, dev + off, n);
      return;
    }
  }
  if (stw_store_backed(s, item)) { /* from the backing, through a lent buffer */
    stw_store_settle(s, item);
    GError *why = NULL;
    const guint8 *host = borrow_loaded(s, item, &why);
    if (host == NULL) {
      memset(out, 0, n);
      halt(s, why); /* reported by the next call that can fail */
      return;
    }
    memcpy(out, host + off, n);
    end_lend(s, item, FALSE);
    return;
  }
  memcpy(out, stw_store_host(s, item) + off, n);
}

void
stw_store_write(StwStore *s, guint32 item, guint64 off, const void *in, gsize n)
{
  if (stw_store_resident(s, item))
    stw_store_device(s, item); /* a fetch lands first */
  if (s->host[item] == NULL && stw_store_resident(s, item)) { /* the device copy only */
    device_copy(s, STW_COPY_H2D, stw_store_device(s, item) + off, in, n);
    s->dirty[item] = 1; /* a backed item's: the backing's copy is older now */
    return;
  }
  if (stw_store_backed(s, item)) { /* through a lent buffer, read first unless all written */
    stw_store_settle(s, item);
    GError *why = NULL;
    guint8 *host = off != 0 || n != s->bytes[item] ? borrow_loaded(s, item, &why)
                                                   : borrow(s, item, FALSE, &why);
    if (host == NULL) {
      halt(s, why);
      return;
    }
    memcpy(host + off, in, n);
    end_lend(s, item, TRUE);
    return;
  }
  memcpy(stw_store_host(s, item) + off, in, n);
  if (stw_store_resident(s, item) && !s->plain && !s->in_place)
    device_copy(s, STW_COPY_H2D, stw_store_device(s, item) + off, in, n);
}

const StwStoreStats *
stw_store_stats(const StwStore *s)
{
  return &s->st;
}

void
stw_store_reset_moved(StwStore *s)
{
  s->st.h2d_bytes = s->st.d2h_bytes = 0;
}

GError *
stw_store_take_failure(StwStore *s)
{
  return g_steal_pointer(&s->failure);
}

/* ---- invariants -------------------------------------------------------------------------- */

static gboolean
broken(GError **error, guint32 item, const char *what)
{
  g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_CORRUPT,
              "the chunk store's books are wrong: item %u %s", item, what);
  return FALSE;
}

/* ITEM's place against its slot, copy and dirty flag. */
static gboolean
item_ok(const StwStore *s, guint32 i, GError **error)
{
  static const char *const places[] = { "AT_HOST", "TO_DEVICE", "ON_DEVICE", "TO_HOST" };
  if (stw_store_backed(s, i)) {
    gboolean moving = s->place[i] == STW_TO_DEVICE || s->place[i] == STW_TO_HOST;
    if (moving != (lent_at(s, i) >= 0) || moving != (s->host[i] != NULL))
      return broken(error, i, moving ? "is backed and in a copy without a lent buffer"
                                     : "is backed and holds a lent buffer with no copy");
  } else if (s->host[i] == NULL && (s->place[i] != STW_ON_DEVICE || !s->dirty[i])) {
    return broken(error, i, "has no host copy and is not the device's alone");
  }
  if ((guint)s->place[i] > STW_TO_HOST)
    return broken(error, i, "is in no place");
  g_autofree char *at = g_strdup_printf("is %s ", places[s->place[i]]);
  gboolean slot = s->slot[i] != NULL, copy = s->copy[i] != NULL, dirty = s->dirty[i] != 0;
  switch (s->place[i]) {
  case STW_AT_HOST:
    if (slot || copy || dirty)
      return broken(error, i, slot ? "is AT_HOST with a device slot"
                              : copy ? "is AT_HOST with a copy in flight"
                                     : "is AT_HOST and dirty (its device copy the only one)");
    break;
  case STW_TO_DEVICE:
  case STW_TO_HOST:
    copy |= s->loading[i]; /* a backed item's fetch: its copy waits for the read */
    if (!slot || !copy || dirty) {
      g_autofree char *why = g_strconcat(at, !slot ? "without a device slot"
                                             : !copy ? "without its copy in flight"
                                                     : "and dirty", NULL);
      return broken(error, i, why);
    }
    break;
  case STW_ON_DEVICE:
    if (!slot || copy) {
      g_autofree char *why = g_strconcat(at, !slot ? "without a device slot"
                                                   : "with a copy still in flight", NULL);
      return broken(error, i, why);
    }
    break;
  }
  return TRUE;
}

gboolean
stw_store_check(const StwStore *s, GError **error)
{
  if (s->plain)
    return TRUE;
  guint64 slots = 0;
  guint leaving = 0;
  for (guint32 i = 0; i < s->n_items; i++) {
    if (!item_ok(s, i, error))
      return FALSE;
    slots += s->slot[i] != NULL ? s->bytes[i] : 0;
    if (s->place[i] == STW_TO_HOST) {
      leaving++;
      if (g_queue_index((GQueue *)&s->leaving, GUINT_TO_POINTER(i)) < 0)
        return broken(error, i, "is TO_HOST but not queued to land");
    }
  }
  if (g_queue_get_length((GQueue *)&s->leaving) != leaving)
    return broken(error, GPOINTER_TO_UINT(g_queue_peek_head((GQueue *)&s->leaving)),
                  "is queued to land but not TO_HOST, or queued twice");
  guint64 acts = 0;
  GHashTableIter it;
  gpointer size;
  g_hash_table_iter_init(&it, s->acts);
  while (g_hash_table_iter_next(&it, NULL, &size))
    acts += GPOINTER_TO_SIZE(size);
  if (acts != s->act_bytes || slots + acts != s->used || s->used > s->capacity) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_CORRUPT,
                "the chunk store's books are wrong: %" G_GUINT64_FORMAT " bytes counted in use, "
                "where the slots hold %" G_GUINT64_FORMAT " and the activations %" G_GUINT64_FORMAT
                " (counted %" G_GUINT64_FORMAT "), of a capacity of %" G_GUINT64_FORMAT,
                s->used, slots, acts, s->act_bytes, s->capacity);
    return FALSE;
  }
  return TRUE;
}
