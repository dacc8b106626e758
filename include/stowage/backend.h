/* backend.h — what the runtime needs from a device: memory on both sides and asynchronous
 * copies with completion events.
 *
 * The `host` backend emulates a GPU in host memory: device memory is ordinary memory (the
 * runtime enforces the budget byte for byte), and two copy-engine threads, one per direction,
 * execute copies in the order they were issued, concurrently with compute. The `cuda` backend
 * (its own issue) implements the same table with cudaMalloc, cudaHostAlloc, streams and events.
 */
#ifndef STW_BACKEND_H
#define STW_BACKEND_H

#include <glib.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_RUNTIME
#error "<stowage/backend.h> belongs to the runtime: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

typedef enum { STW_COPY_H2D, STW_COPY_D2H } StwCopyDir;

typedef struct StwEvent StwEvent;
typedef struct StwBackend StwBackend;

struct StwBackend {
  const char *name;
  void *(*device_alloc)(StwBackend *b, gsize bytes);  /* not zeroed; NULL when out of memory */
  void (*device_free)(StwBackend *b, void *p);
  void *(*host_alloc)(StwBackend *b, gsize bytes);    /* zeroed; pinned where that exists */
  void (*host_free)(StwBackend *b, void *p);
  /* Queues a copy; the returned event (never NULL) completes when it is done. A copy that could
   * not be queued completes at once, as failed. */
  StwEvent *(*copy)(StwBackend *b, StwCopyDir dir, void *dst, const void *src, gsize bytes);
  /* TRUE once the copy has finished, successfully or not; without blocking */
  gboolean (*done)(StwBackend *b, StwEvent *e);
  /* Blocks until the copy has finished; FALSE when it failed (the destination holds nothing
   * reliable), with ERROR naming the failing call. */
  gboolean (*wait)(StwBackend *b, StwEvent *e);
  void (*event_free)(StwBackend *b, StwEvent *e);  /* must not block on a stuck copy */
  void (*free)(StwBackend *b);
  /* optional: give back the memory of freed device blocks kept for reuse (the host backend's
   * emulated device: the pages of its free memory too); NULL when none is */
  void (*trim)(StwBackend *b);
  /* optional: name the ops for profilers (NVTX on CUDA); NULL when not needed */
  void (*range_push)(StwBackend *b, const char *name);
  void (*range_pop)(StwBackend *b);
  /* optional: wait for the compute queued on the device (profile mode times each op between
   * two of these, so that a trace holds an asynchronous device's op times, not its launch
   * times); NULL where compute is synchronous (the host backend) */
  void (*sync)(StwBackend *b);
  /* optional: the device memory in use now that is not the backend's own arena (the process's
   * CUDA context and loaded kernels, the compute libraries' workspaces, and any other process on
   * the device), what a plan's budget must leave free; NULL where the device is emulated */
  guint64 (*memory_outside)(StwBackend *b);
  /* optional: the device memory a program can allocate in all (cudaMemGetInfo's total, below
   * what nvidia-smi reports); NULL where the device is emulated */
  guint64 (*memory_total)(StwBackend *b);
  /* device memory is host memory (the host backend): the runtime may read and write it
   * directly; otherwise it goes through copies */
  gboolean device_is_host;
  /* the last failure, for messages ("cudaMalloc: out of memory"); empty when none */
  char error[256];
  /* test hook: a delay before every copy, to make copies slower than compute */
  guint64 copy_delay_us;
  /* the emulated device's memory (the host backend; set by the runtime to its budget): the
   * device blocks kept for reuse are given back before live and kept blocks together would
   * hold more, as a device of that size could not; 0: no bound */
  guint64 device_bytes;
};

/* The host backend: never NULL; the caller frees it with its free function. */
StwBackend *stw_backend_host_new(void);

/* The CUDA backend on DEVICE: chunk slots and activations carved from one cudaMalloc arena of
 * ARENA_BYTES, pinned host memory, dedicated H2D and D2H streams ordered after the compute stream,
 * events for readiness, NVTX ranges per op. NULL with ERROR naming the failing call when there is
 * no CUDA device (STW_RUNTIME_ERROR_DEVICE), or this stowage was built without CUDA
 * (STW_RUNTIME_ERROR_UNSUPPORTED). The caller frees the backend with its free function. */
StwBackend *stw_backend_cuda_new(int device, guint64 arena_bytes, GError **error);

/* The arena a backend's device needs to hold BUDGET bytes of a runtime's allocations (the CUDA
 * backend's cudaMalloc, the host backend's mapping): the arena rounds each up to 256 bytes and
 * carves them first-fit, so room for that and for its fragmentation beside the budget. */
static inline guint64
stw_backend_arena_for(guint64 budget)
{
  return budget + budget / 16 + ((guint64)64 << 20);
}

/* Test hook: a backend wrapping INNER (and owning it) that fails on purpose. */
typedef struct {
  guint fail_alloc_after;  /* the Nth device allocation fails (0: never) */
  guint64 copy_delay_us;   /* before every copy: a slow copy engine */
  guint corrupt_copy_at;   /* the Nth copy flips a byte of its destination */
  guint stall_copy_at;     /* the Nth copy never completes */
  guint fail_copy_at;      /* the Nth copy fails: nothing is copied, wait returns FALSE */
} StwFaults;

/* Never NULL; freeing it frees INNER. */
StwBackend *stw_backend_fault_new(StwBackend *inner, const StwFaults *faults);

STW_END_DECLS

#endif
