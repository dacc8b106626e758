/* store.c — host copies, device slots, copies in flight and the device budget; see store.h. */
#include "config.h"

#include "store.h"

#include <string.h>

#include <stowage/runtime.h>

struct StwStore {
  StwBackend *be;
  guint32 n_items;
  guint64 *bytes;           /* per item */
  guint8 **host;            /* per item: the host copy, always there */
  guint8 **slot;            /* per item: the device slot (TO_DEVICE, ON_DEVICE, TO_HOST) */
  StwPlace *place;          /* per item */
  guint8 *dirty;            /* per item: the device copy is the only valid one */
  StwEvent **copy;          /* per item: the copy in flight (TO_DEVICE, TO_HOST) */
  guint64 *sum;             /* verify: per item, the checksum of the copy's source at issue */
  GQueue leaving;           /* guint32 items in TO_HOST, in issue order (GUINT_TO_POINTER) */
  guint64 capacity, used;   /* device bytes: slots (incl. leaving) + activations */
  GHashTable *acts;         /* activation pointer -> size */
  guint64 act_bytes;
  guint64 *last_use, clock; /* the on-demand policy: least recently used out */
  guint32 *needed, stamp;   /* per item: the op that needs it */
  guint64 room_evictions;
  gboolean verify, plain;
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

StwStore *
stw_store_new(StwBackend *be, guint32 n_items, const guint64 *bytes, guint64 capacity,
              gboolean verify, guint64 copy_timeout_ms)
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
  g_queue_init(&s->leaving);
  s->capacity = capacity;
  s->acts = g_hash_table_new(g_direct_hash, g_direct_equal);
  s->verify = verify;
  s->copy_timeout_ms = copy_timeout_ms;
  for (guint32 i = 0; i < n_items; i++)
    s->host[i] = be->host_alloc(be, s->bytes[i]);
  return s;
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
    if (s->slot[i] != NULL && !s->plain)
      s->be->device_free(s->be, s->slot[i]);
    s->be->host_free(s->be, s->host[i]);
  }
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, s->acts);
  while (g_hash_table_iter_next(&it, &key, NULL))
    s->be->device_free(s->be, key);
  g_hash_table_unref(s->acts);
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
  g_free(s);
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
  s->be->event_free(s->be, s->copy[item]);
  s->copy[item] = NULL;
  s->be->device_free(s->be, s->slot[item]);
  s->slot[item] = NULL;
  s->used -= s->bytes[item];
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

void
stw_store_reap(StwStore *s)
{
  reap(s, FALSE);
}

/* A fetch of ITEM has arrived: its device copy is valid. */
static void
arrived(StwStore *s, guint32 item)
{
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
}

void
stw_store_settle(StwStore *s, guint32 item)
{
  if (s->place[item] == STW_TO_DEVICE && !s->halted)
    arrived(s, item);
  while (s->place[item] == STW_TO_HOST && !s->halted)
    reap(s, TRUE);
}

guint8 *
stw_store_host(StwStore *s, guint32 item)
{
  while (s->place[item] == STW_TO_HOST && !s->halted)
    reap(s, TRUE);
  return s->host[item];
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
  for (guint32 i = 0; i < s->n_items; i++) {
    if (!stw_store_resident(s, i) || s->needed[i] == s->stamp)
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
  s->st.peak_bytes = MAX(s->st.peak_bytes, s->used);
  return TRUE;
}

void
stw_store_next_op(StwStore *s)
{
  s->stamp++;
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

gboolean
stw_store_fetch(StwStore *s, guint32 item, GError **error)
{
  g_assert(!stw_store_resident(s, item));
  stw_store_host(s, item); /* a write-back in flight lands first */
  if (!reserve(s, s->bytes[item], error))
    return FALSE;
  s->slot[item] = s->be->device_alloc(s->be, s->bytes[item]);
  if (s->slot[item] == NULL) {
    s->used -= s->bytes[item];
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET,
                "the backend could not allocate %" G_GUINT64_FORMAT " bytes", s->bytes[item]);
    return FALSE;
  }
  if (s->verify)
    s->sum[item] = checksum(s->host[item], s->bytes[item]);
  s->copy[item] = s->be->copy(s->be, STW_COPY_H2D, s->slot[item], s->host[item], s->bytes[item]);
  s->place[item] = STW_TO_DEVICE;
  s->dirty[item] = 0;
  s->st.h2d_bytes += s->bytes[item];
  return TRUE;
}

void
stw_store_evict(StwStore *s, guint32 item)
{
  g_assert(stw_store_resident(s, item));
  stw_store_device(s, item); /* the fetch lands first */
  if (s->verify)
    s->sum[item] = checksum(s->slot[item], s->bytes[item]);
  s->copy[item] = s->be->copy(s->be, STW_COPY_D2H, s->host[item], s->slot[item], s->bytes[item]);
  s->place[item] = STW_TO_HOST;
  g_queue_push_tail(&s->leaving, GUINT_TO_POINTER(item));
  s->dirty[item] = 0;
  s->st.d2h_bytes += s->bytes[item];
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

/* ---- activations --------------------------------------------------------------------------- */

gpointer
stw_store_alloc(StwStore *s, gsize bytes, GError **error)
{
  if (s->plain)
    return g_malloc0(MAX(bytes, 1));
  if (!reserve(s, bytes, error))
    return NULL;
  gpointer p = s->be->device_alloc(s->be, MAX(bytes, 1));
  if (p == NULL) {
    s->used -= bytes;
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET,
                "the backend could not allocate %" G_GSIZE_FORMAT " bytes: %s", bytes,
                s->be->error);
    return NULL;
  }
  g_hash_table_insert(s->acts, p, GSIZE_TO_POINTER(bytes));
  s->act_bytes += bytes;
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
  s->be->device_free(s->be, p);
  s->act_bytes -= bytes;
  s->used -= bytes;
  return bytes;
}

guint64
stw_store_activation_bytes(const StwStore *s)
{
  return s->act_bytes;
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
    if (s->dirty[item]) {
      device_copy(s, STW_COPY_D2H, out, dev + off, n);
      return;
    }
  }
  memcpy(out, stw_store_host(s, item) + off, n);
}

void
stw_store_write(StwStore *s, guint32 item, guint64 off, const void *in, gsize n)
{
  memcpy(stw_store_host(s, item) + off, in, n);
  if (stw_store_resident(s, item) && !s->plain)
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
