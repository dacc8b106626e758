/* backend-fault.c — a backend that wraps another and misbehaves on purpose, for the tests of
 * what the runtime does when a device fails: allocations that fail, copies that are slow,
 * copies that corrupt their data, copies that fail, copies that never complete. */
#include "config.h"

#include <stowage/backend.h>

#include <string.h>

typedef struct {
  StwBackend base;
  StwBackend *inner;
  StwFaults faults;
  guint allocs, copies;
} FaultBackend;

/* The fault backend's events wrap the inner backend's; a stalled copy's never completes, a
 * failed copy's completes at once, as failed. Neither has an inner event. */
typedef struct {
  StwEvent *inner;
  gboolean stalled, failed;
} FaultEvent;

static void *
f_device_alloc(StwBackend *b, gsize bytes)
{
  FaultBackend *f = (FaultBackend *)b;
  if (f->faults.fail_alloc_after > 0 && ++f->allocs >= f->faults.fail_alloc_after) {
    g_snprintf(b->error, sizeof b->error, "injected allocation failure");
    return NULL;
  }
  return f->inner->device_alloc(f->inner, bytes);
}

static void
f_device_free(StwBackend *b, void *p)
{
  FaultBackend *f = (FaultBackend *)b;
  f->inner->device_free(f->inner, p);
}

static void *
f_host_alloc(StwBackend *b, gsize bytes)
{
  FaultBackend *f = (FaultBackend *)b;
  return f->inner->host_alloc(f->inner, bytes);
}

static void
f_host_free(StwBackend *b, void *p)
{
  FaultBackend *f = (FaultBackend *)b;
  f->inner->host_free(f->inner, p);
}

static StwEvent *
f_copy(StwBackend *b, StwCopyDir dir, void *dst, const void *src, gsize bytes)
{
  FaultBackend *f = (FaultBackend *)b;
  f->copies++;
  if (f->faults.copy_delay_us > 0)
    g_usleep(f->faults.copy_delay_us);
  FaultEvent *fe = g_new0(FaultEvent, 1);
  if (f->faults.stall_copy_at > 0 && f->copies == f->faults.stall_copy_at) {
    fe->stalled = TRUE; /* a copy that never completes, and never copies */
    return (StwEvent *)fe;
  }
  if (f->faults.fail_copy_at > 0 && f->copies == f->faults.fail_copy_at) {
    fe->failed = TRUE; /* like a cudaMemcpyAsync that returns an error: nothing is copied */
    return (StwEvent *)fe;
  }
  fe->inner = f->inner->copy(f->inner, dir, dst, src, bytes);
  if (f->faults.corrupt_copy_at > 0 && f->copies == f->faults.corrupt_copy_at) {
    f->inner->wait(f->inner, fe->inner);
    ((guint8 *)dst)[bytes / 2] ^= 0x5a;
  }
  return (StwEvent *)fe;
}

static gboolean
f_done(StwBackend *b, StwEvent *e)
{
  FaultBackend *f = (FaultBackend *)b;
  FaultEvent *fe = (FaultEvent *)e;
  if (fe->failed)
    return TRUE;
  return !fe->stalled && f->inner->done(f->inner, fe->inner);
}

static gboolean
f_wait(StwBackend *b, StwEvent *e)
{
  FaultBackend *f = (FaultBackend *)b;
  FaultEvent *fe = (FaultEvent *)e;
  if (fe->stalled)
    for (;;)
      g_usleep(G_USEC_PER_SEC); /* the runtime's timeout must catch this first */
  if (fe->failed) {
    g_snprintf(b->error, sizeof b->error, "injected copy failure");
    return FALSE;
  }
  if (!f->inner->wait(f->inner, fe->inner)) {
    g_strlcpy(b->error, f->inner->error, sizeof b->error);
    return FALSE;
  }
  return TRUE;
}

static void
f_event_free(StwBackend *b, StwEvent *e)
{
  FaultBackend *f = (FaultBackend *)b;
  FaultEvent *fe = (FaultEvent *)e;
  if (fe == NULL)
    return;
  if (fe->inner != NULL)
    f->inner->event_free(f->inner, fe->inner);
  g_free(fe);
}

static void
f_free(StwBackend *b)
{
  FaultBackend *f = (FaultBackend *)b;
  f->inner->free(f->inner);
  g_free(f);
}

StwBackend *
stw_backend_fault_new(StwBackend *inner, const StwFaults *faults)
{
  FaultBackend *f = g_new0(FaultBackend, 1);
  f->base = (StwBackend){ .name = inner->name, .device_is_host = inner->device_is_host,
                          .device_alloc = f_device_alloc,
                          .device_free = f_device_free, .host_alloc = f_host_alloc,
                          .host_free = f_host_free, .copy = f_copy, .done = f_done,
                          .wait = f_wait, .event_free = f_event_free, .free = f_free };
  f->inner = inner;
  f->faults = *faults;
  return &f->base;
}
