/* backend-cuda.c — the CUDA backend; see backend.h. Compiled only where the CUDA toolkit is. */
#include "config.h"

#include <stowage/backend.h>

#include <string.h>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <stowage/runtime.h>

#include "spans.h"

struct StwEvent {
  cudaEvent_t done;
  gboolean created;  /* DONE exists */
  char *failure;     /* the call that failed while queueing the copy, and why; NULL: none */
};

typedef struct {
  StwBackend base;
  int device;
  guint8 *arena;              /* one cudaMalloc */
  guint64 arena_bytes;
  StwSpans *spans;            /* of it, carved first-fit */
  cudaStream_t h2d, d2h;
  cudaEvent_t compute;        /* recorded on the compute stream before a copy is queued */
} CudaBackend;

#define ALIGN 256

static gboolean
ok(CudaBackend *c, cudaError_t r, const char *call)
{
  if (r == cudaSuccess)
    return TRUE;
  g_snprintf(c->base.error, sizeof c->base.error, "%s: %s", call, cudaGetErrorString(r));
  return FALSE;
}

static void *
cuda_device_alloc(StwBackend *b, gsize bytes)
{
  CudaBackend *c = (CudaBackend *)b;
  guint64 at = stw_spans_take(c->spans, bytes);
  if (at != STW_SPANS_NONE)
    return c->arena + at;
  g_snprintf(b->error, sizeof b->error, "the arena of %" G_GUINT64_FORMAT " bytes has no free "
             "span of %" G_GUINT64_FORMAT " bytes", c->arena_bytes,
             (guint64)(MAX(bytes, 1) + ALIGN - 1) / ALIGN * ALIGN);
  return NULL;
}

static void
cuda_device_free(StwBackend *b, void *p)
{
  CudaBackend *c = (CudaBackend *)b;
  guint8 *q = p;
  if (q >= c->arena && q < c->arena + c->arena_bytes) /* not the arena's: nothing to give */
    stw_spans_give(c->spans, (guint64)(q - c->arena));
}

static void *
cuda_host_alloc(StwBackend *b, gsize bytes)
{
  CudaBackend *c = (CudaBackend *)b;
  void *p = NULL;
  if (!ok(c, cudaHostAlloc(&p, MAX(bytes, 1), cudaHostAllocPortable), "cudaHostAlloc"))
    return NULL;
  memset(p, 0, MAX(bytes, 1));
  return p;
}

static void
cuda_host_free(StwBackend *b, void *p)
{
  if (p != NULL)
    ok((CudaBackend *)b, cudaFreeHost(p), "cudaFreeHost");
}

static StwEvent *
cuda_copy(StwBackend *b, StwCopyDir dir, void *dst, const void *src, gsize bytes)
{
  CudaBackend *c = (CudaBackend *)b;
  cudaStream_t s = dir == STW_COPY_H2D ? c->h2d : c->d2h;
  StwEvent *e = g_new0(StwEvent, 1);
  /* a copy starts only after the compute queued so far: gradients are written before they go */
  if (!ok(c, cudaEventRecord(c->compute, 0), "cudaEventRecord") ||
      !ok(c, cudaStreamWaitEvent(s, c->compute, 0), "cudaStreamWaitEvent") ||
      !ok(c, cudaMemcpyAsync(dst, src, bytes,
                             dir == STW_COPY_H2D ? cudaMemcpyHostToDevice
                                                 : cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync") ||
      !ok(c, cudaEventCreateWithFlags(&e->done, cudaEventDisableTiming), "cudaEventCreate")) {
    e->failure = g_strdup(b->error);
    return e;
  }
  e->created = TRUE;
  if (!ok(c, cudaEventRecord(e->done, s), "cudaEventRecord"))
    e->failure = g_strdup(b->error);
  return e;
}

static gboolean
cuda_done(StwBackend *b, StwEvent *e)
{
  (void)b;
  /* an error finishes a copy too; wait says which */
  return e->failure != NULL || cudaEventQuery(e->done) != cudaErrorNotReady;
}

static gboolean
cuda_wait(StwBackend *b, StwEvent *e)
{
  if (e->failure != NULL) {
    g_strlcpy(b->error, e->failure, sizeof b->error);
    return FALSE;
  }
  return ok((CudaBackend *)b, cudaEventSynchronize(e->done), "cudaEventSynchronize");
}

static void
cuda_event_free(StwBackend *b, StwEvent *e)
{
  (void)b;
  if (e == NULL)
    return;
  if (e->created)
    cudaEventDestroy(e->done); /* released by CUDA once the copy completes; does not block */
  g_free(e->failure);
  g_free(e);
}

static void
cuda_range_push(StwBackend *b, const char *name)
{
  (void)b;
  nvtxRangePushA(name);
}

static void
cuda_range_pop(StwBackend *b)
{
  (void)b;
  nvtxRangePop();
}

static guint64
cuda_memory_outside(StwBackend *b)
{
  CudaBackend *c = (CudaBackend *)b;
  size_t free_bytes = 0, total = 0;
  if (!ok(c, cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo") || total < free_bytes)
    return 0;
  guint64 used = (guint64)(total - free_bytes);
  return used > c->arena_bytes ? used - c->arena_bytes : 0;
}

static guint64
cuda_memory_total(StwBackend *b)
{
  size_t free_bytes = 0, total = 0;
  return ok((CudaBackend *)b, cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo") ? total : 0;
}

/* the legacy default stream, where the compute tables run; not the copy streams */
static void
cuda_sync(StwBackend *b)
{
  ok((CudaBackend *)b, cudaStreamSynchronize(0), "cudaStreamSynchronize");
}

static void
cuda_free(StwBackend *b)
{
  CudaBackend *c = (CudaBackend *)b;
  cudaDeviceSynchronize();
  cudaStreamDestroy(c->h2d);
  cudaStreamDestroy(c->d2h);
  cudaEventDestroy(c->compute);
  cudaFree(c->arena);
  stw_spans_free(c->spans);
  g_free(c);
}

StwBackend *
stw_backend_cuda_new(int device, guint64 arena_bytes, GError **error)
{
  int count = 0;
  cudaError_t r = cudaGetDeviceCount(&count);
  if (r != cudaSuccess || count == 0) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE,
                "no CUDA device: cudaGetDeviceCount: %s",
                r != cudaSuccess ? cudaGetErrorString(r) : "0 devices");
    return NULL;
  }
  CudaBackend *c = g_new0(CudaBackend, 1);
  c->base = (StwBackend){ .name = "cuda", .device_alloc = cuda_device_alloc,
                          .device_free = cuda_device_free, .host_alloc = cuda_host_alloc,
                          .host_free = cuda_host_free, .copy = cuda_copy, .done = cuda_done,
                          .wait = cuda_wait, .event_free = cuda_event_free, .free = cuda_free,
                          .range_push = cuda_range_push, .range_pop = cuda_range_pop,
                          .sync = cuda_sync, .memory_outside = cuda_memory_outside,
                          .memory_total = cuda_memory_total };
  c->device = device;
  c->arena_bytes = (arena_bytes + ALIGN - 1) / ALIGN * ALIGN;
  void *arena = NULL;
  if (!ok(c, cudaSetDevice(device), "cudaSetDevice") ||
      !ok(c, cudaMalloc(&arena, c->arena_bytes), "cudaMalloc") ||
      !ok(c, cudaStreamCreateWithFlags(&c->h2d, cudaStreamNonBlocking), "cudaStreamCreate") ||
      !ok(c, cudaStreamCreateWithFlags(&c->d2h, cudaStreamNonBlocking), "cudaStreamCreate") ||
      !ok(c, cudaEventCreateWithFlags(&c->compute, cudaEventDisableTiming), "cudaEventCreate")) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE, "CUDA backend: %s",
                c->base.error);
    if (arena != NULL)
      cudaFree(arena);
    g_free(c);
    return NULL;
  }
  c->arena = arena;
  c->spans = stw_spans_new(c->arena_bytes, ALIGN);
  return &c->base;
}
