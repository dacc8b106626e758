/* backend-host.c — the emulated device: host memory and two copy-engine threads. */
#include "config.h"

#include <stowage/backend.h>

#include <string.h>

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

static void *
host_device_alloc(StwBackend *b, gsize bytes)
{
  (void)b;
  return g_try_malloc0(MAX(bytes, 1));
}

static void
host_device_free(StwBackend *b, void *p)
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
  g_free(h);
}

StwBackend *
stw_backend_host_new(void)
{
  HostBackend *h = g_new0(HostBackend, 1);
  h->base = (StwBackend){ .name = "host", .device_is_host = TRUE,
                          .device_alloc = host_device_alloc,
                          .device_free = host_device_free, .host_alloc = host_device_alloc,
                          .host_free = host_device_free, .copy = host_copy, .done = host_done,
                          .wait = host_wait, .event_free = host_event_free, .free = host_free };
  static const char *const names[] = { "stowage-h2d", "stowage-d2h" };
  for (int i = 0; i < 2; i++) {
    h->queues[i] = g_async_queue_new();
    h->engines[i] = g_thread_new(names[i], engine, h->queues[i]);
  }
  return &h->base;
}
