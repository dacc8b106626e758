/* backend-host.c — the emulated device: host memory and two copy-engine threads.
 *
 * With its memory set (device_bytes: the runtime sets the budget's), the device is one mapping
 * of that size and the CUDA backend's room for fragmentation (stw_backend_arena_for), carved
 * first-fit like the CUDA backend's arena (spans.h): chunk slots and
 * activations come and go every iteration at no cost but a scan, and the process holds the pages
 * the device ever used, at most its memory. An allocation the mapping cannot hold (fragmented,
 * or a device of no set size) is a block of its own; those are reused: a freed block is kept, by
 * its size, for the next allocation of that size. A size never holds more spare blocks than were
 * once live at the same time, and live and spare blocks together never more than the emulated
 * device's memory: a fresh block that would pass it first gives the spare ones back. */
#include "config.h"

#include <stowage/backend.h>

#include <string.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sys/mman.h>
#include <unistd.h>

#include "spans.h"

#define DEVICE_ALIGN 256

/* Device blocks this large are mappings of their own, given back to the system when freed: the
 * emulated device's memory is then exactly its live and kept blocks (the heap would keep freed
 * ones, and the process's memory would pass the budget the plan counts). */
#define OWN_MAPPING_BYTES (256u << 10)

static void *
block_new(gsize bytes)
{
  if (bytes < OWN_MAPPING_BYTES)
    return g_try_malloc(bytes);
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void
block_free(void *p, gsize bytes)
{
  if (bytes < OWN_MAPPING_BYTES)
    g_free(p);
  else
    munmap(p, bytes);
}

struct StwEvent {
  GMutex lock;
  GCond cond;
  gboolean done;
};

typedef struct {
  StwEvent *event;
  void *dst;
  const void *src;
  gsize bytes;
} Job;

typedef struct {
  StwBackend base;
  GAsyncQueue *queues[2];  /* per direction */
  GThread *engines[2];
  GHashTable *sizes;       /* device block -> its bytes */
  GHashTable *spare;       /* bytes -> GSList of free device blocks of that size */
  guint64 live_bytes, spare_bytes;
  guint8 *arena;           /* the device's memory, one mapping; NULL before device_bytes is set */
  StwSpans *spans;         /* of it, carved first-fit */
} HostBackend;

static Job stop_job; /* a job that tells an engine to exit */

static gpointer
engine(gpointer data)
{
  GAsyncQueue *q = data;
  for (;;) {
    Job *j = g_async_queue_pop(q);
    if (j == &stop_job)
      return NULL;
    if (j->event == NULL) {
      g_free(j);
      continue;
    }
    memcpy(j->dst, j->src, j->bytes);
    g_mutex_lock(&j->event->lock);
    j->event->done = TRUE;
    g_cond_broadcast(&j->event->cond);
    g_mutex_unlock(&j->event->lock);
    g_free(j);
  }
}

/* Frees one kept block of the largest size kept. */
static void
give_back_largest(HostBackend *h)
{
  GHashTableIter it;
  gpointer key, list;
  gsize largest = 0;
  g_hash_table_iter_init(&it, h->spare);
  while (g_hash_table_iter_next(&it, &key, &list))
    if (list != NULL && GPOINTER_TO_SIZE(key) > largest)
      largest = GPOINTER_TO_SIZE(key);
  if (largest == 0)
    return;
  gpointer k = GSIZE_TO_POINTER(largest);
  GSList *l = g_hash_table_lookup(h->spare, k);
  block_free(l->data, largest);
  g_hash_table_insert(h->spare, k, g_slist_delete_link(l, l));
  h->spare_bytes -= largest;
}

/* The device's memory mapped at its set size with a CUDA device's room for fragmentation (again,
 * at another size, once nothing is taken from it): pages are the process's only once used. */
static void
map_arena(HostBackend *h)
{
  guint64 want = h->base.device_bytes > 0
                     ? stw_backend_arena_for(h->base.device_bytes) / DEVICE_ALIGN * DEVICE_ALIGN
                     : 0;
  if (h->spans != NULL && (stw_spans_bytes(h->spans) == want || stw_spans_used(h->spans) > 0))
    return;
  if (h->spans != NULL) {
    munmap(h->arena, stw_spans_bytes(h->spans));
    g_clear_pointer(&h->spans, stw_spans_free);
    h->arena = NULL;
  }
  if (want == 0)
    return;
  void *p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED)
    return; /* blocks of their own, then */
  h->arena = p;
  h->spans = stw_spans_new(want, DEVICE_ALIGN);
}

static void *
host_device_alloc(StwBackend *b, gsize bytes)
{
  HostBackend *h = (HostBackend *)b;
  bytes = MAX(bytes, 1);
  map_arena(h);
  guint64 at = h->spans != NULL ? stw_spans_take(h->spans, bytes) : STW_SPANS_NONE;
  if (at != STW_SPANS_NONE)
    return h->arena + at;
  gpointer key = GSIZE_TO_POINTER(bytes);
  GSList *free_list = g_hash_table_lookup(h->spare, key);
  void *p;
  while (free_list == NULL && b->device_bytes > 0 && h->spare_bytes > 0 &&
         h->live_bytes + h->spare_bytes + bytes > b->device_bytes)
    give_back_largest(h); /* the emulated device is full of kept blocks */
  if (free_list != NULL) {
    p = free_list->data;
    g_hash_table_insert(h->spare, key, g_slist_delete_link(free_list, free_list));
    h->spare_bytes -= bytes;
  } else if ((p = block_new(bytes)) == NULL) {
    g_snprintf(b->error, sizeof b->error, "out of host memory for %" G_GSIZE_FORMAT " bytes",
               bytes);
    return NULL;
  }
  g_hash_table_insert(h->sizes, p, key);
  h->live_bytes += bytes;
  return p;
}

static void
host_device_free(StwBackend *b, void *p)
{
  HostBackend *h = (HostBackend *)b;
  if (p == NULL)
    return;
  guint8 *q = p;
  if (h->spans != NULL && q >= h->arena && q < h->arena + stw_spans_bytes(h->spans)) {
    stw_spans_give(h->spans, (guint64)(q - h->arena));
    return;
  }
  gpointer key = g_hash_table_lookup(h->sizes, p);
  g_hash_table_remove(h->sizes, p);
  g_hash_table_insert(h->spare, key, g_slist_prepend(g_hash_table_lookup(h->spare, key), p));
  h->live_bytes -= GPOINTER_TO_SIZE(key);
  h->spare_bytes += GPOINTER_TO_SIZE(key);
}

/* The whole pages of a free span of the arena given back to the system (read as zeros, and
 * the process's again once written). */
static void
discard_free(guint64 offset, guint64 bytes, gpointer data)
{
  HostBackend *h = data;
  guint64 page = (guint64)sysconf(_SC_PAGESIZE);
  guint64 from = (offset + page - 1) / page * page, to = (offset + bytes) / page * page;
  if (to > from)
    madvise(h->arena + from, to - from, MADV_DONTNEED);
}

static void
host_trim(StwBackend *b)
{
  HostBackend *h = (HostBackend *)b;
  if (h->spans != NULL) /* the device's free memory: its pages the system's again */
    stw_spans_each_free(h->spans, discard_free, h);
  GHashTableIter it;
  gpointer size;
  GSList *spares;
  g_hash_table_iter_init(&it, h->spare);
  while (g_hash_table_iter_next(&it, &size, (gpointer *)&spares)) {
    for (GSList *l = spares; l != NULL; l = l->next)
      block_free(l->data, GPOINTER_TO_SIZE(size));
    g_slist_free(spares);
  }
  g_hash_table_remove_all(h->spare);
  h->spare_bytes = 0;
#ifdef __GLIBC__
  malloc_trim(0); /* blocks below glibc's mmap threshold went to its heap: give the pages back */
#endif
}

/* Host copies: zeroed, and written to so that their pages are the process's from the start (a
 * page first read as the shared zero page and then written costs a fault and a TLB shootdown
 * on every core the process runs on). */
static void *
host_host_alloc(StwBackend *b, gsize bytes)
{
  (void)b;
  void *p = g_try_malloc(MAX(bytes, 1));
  if (p != NULL)
    memset(p, 0, MAX(bytes, 1));
  return p;
}

static void
host_host_free(StwBackend *b, void *p)
{
  (void)b;
  g_free(p);
}

static StwEvent *
host_copy(StwBackend *b, StwCopyDir dir, void *dst, const void *src, gsize bytes)
{
  HostBackend *h = (HostBackend *)b;
  StwEvent *e = g_new0(StwEvent, 1);
  g_mutex_init(&e->lock);
  g_cond_init(&e->cond);
  if (b->copy_delay_us > 0)
    g_usleep(b->copy_delay_us);
  Job *j = g_new(Job, 1);
  *j = (Job){ .event = e, .dst = dst, .src = src, .bytes = bytes };
  g_async_queue_push(h->queues[dir], j);
  return e;
}

static gboolean
host_done(StwBackend *b, StwEvent *e)
{
  (void)b;
  g_mutex_lock(&e->lock);
  gboolean d = e->done;
  g_mutex_unlock(&e->lock);
  return d;
}

static gboolean
host_wait(StwBackend *b, StwEvent *e)
{
  (void)b;
  g_mutex_lock(&e->lock);
  while (!e->done)
    g_cond_wait(&e->cond, &e->lock);
  g_mutex_unlock(&e->lock);
  return TRUE; /* a memcpy does not fail */
}

static void
host_event_free(StwBackend *b, StwEvent *e)
{
  if (e == NULL)
    return;
  host_wait(b, e); /* the engine signals this event: it must finish before the event goes */
  g_mutex_clear(&e->lock);
  g_cond_clear(&e->cond);
  g_free(e);
}

static void
host_free(StwBackend *b)
{
  HostBackend *h = (HostBackend *)b;
  for (int i = 0; i < 2; i++) {
    g_async_queue_push(h->queues[i], &stop_job);
    g_thread_join(h->engines[i]);
    g_async_queue_unref(h->queues[i]);
  }
  GHashTableIter it;
  gpointer block, size;
  g_hash_table_iter_init(&it, h->sizes); /* blocks never freed by the user */
  while (g_hash_table_iter_next(&it, &block, &size))
    block_free(block, GPOINTER_TO_SIZE(size));
  g_hash_table_unref(h->sizes);
  host_trim(b);
  g_hash_table_unref(h->spare);
  if (h->spans != NULL)
    munmap(h->arena, stw_spans_bytes(h->spans));
  stw_spans_free(h->spans);
  g_free(h);
}

StwBackend *
stw_backend_host_new(void)
{
  HostBackend *h = g_new0(HostBackend, 1);
  h->base = (StwBackend){ .name = "host", .device_is_host = TRUE,
                          .device_alloc = host_device_alloc,
                          .device_free = host_device_free, .host_alloc = host_host_alloc,
                          .host_free = host_host_free, .trim = host_trim, .copy = host_copy, .done = host_done,
                          .wait = host_wait, .event_free = host_event_free, .free = host_free };
  h->sizes = g_hash_table_new(g_direct_hash, g_direct_equal);
  h->spare = g_hash_table_new(g_direct_hash, g_direct_equal);
  static const char *const names[] = { "stowage-h2d", "stowage-d2h" };
  for (int i = 0; i < 2; i++) {
    h->queues[i] = g_async_queue_new();
    h->engines[i] = g_thread_new(names[i], engine, h->queues[i]);
  }
  return &h->base;
}
