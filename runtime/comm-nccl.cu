/* comm-nccl.cu — the communicator over NCCL (comm.h): the chunk groups' collectives between the
 * ranks' GPUs, on the CUDA backend's device memory. Compiled by nvcc only where NCCL is, into a
 * module of its own, libstowage-comm-nccl.so, which stw_comm_nccl_new (comm.c) loads only when
 * training on several GPUs asks for it, so that NCCL loads only then.
 *
 * Bootstrapped through a host communicator (MPI): rank 0's NCCL id goes to every rank in one
 * broadcast. The collectives run on a CUDA stream of their own, so that they overlap the
 * compute; each first waits for the work issued before it on the legacy default stream (where
 * the compute and the backend's copies are ordered), so a gather never overwrites a slot a
 * kernel still reads, nor a reduce-scatter reads gradients a kernel is still writing. An
 * operation is an event recorded after it; done queries it, wait polls it against the timeout
 * and aborts the NCCL communicator when a peer is gone, so no rank hangs.
 *
 * The data moves as bytes in point-to-point sends and receives grouped per collective (the
 * chunk-group layout of comm.h, without a copy); the reductions are added here by a kernel in
 * rank order, with the same fp32 operations as the MPI communicator's, so that every rank, every
 * run and both communicators get the same bits. All-reduce therefore sends the whole buffer to
 * every peer ((N - 1) x its bytes received, as with MPI) rather than a ring's 2 (N - 1) / N: the
 * price of reproducible sums, paid only in profile mode's gradient averaging; the plans' own
 * collectives (gathers and reduce-scatters) move exactly what a ring would.
 *
 * The received parts of a reduction wait in a scratch buffer of (N - 1) x the largest reduction,
 * the module's own device memory beside the runtime's budget.
 */
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include <stowage/comm.h>

#include "bf16.h"

/* the module links no stowage symbol: its errors have comm.h's domain by name, and the loader
 * passes their message on */
/* g_quark_from_string copies the name: this module may be unloaded while the quark lives */
#define COMM_ERROR g_quark_from_string("stw-comm-error-quark")

#define THREADS 256

typedef struct {
  StwComm base;
  ncclComm_t nccl;
  cudaStream_t stream;      /* the collectives' */
  cudaEvent_t issued;       /* the legacy stream's work before a collective */
  guint8 *scratch;          /* received parts of a reduction */
  gsize scratch_bytes;
  int *token;               /* a barrier's one int */
  gboolean broken;          /* aborted, or a CUDA or NCCL call failed: every later call fails */
} Nccl;

struct StwCommOp {
  cudaEvent_t done;
  gboolean failed;          /* could not be issued */
};

/* block index of rank Q in a rank's (world - 1)-block buffer that leaves out ME */
static __host__ __device__ gsize
slot(guint32 q, guint32 me)
{
  return q < me ? q : q - 1;
}

/* The mean over the ranks of element I: every rank's value in rank order, this rank's own (in
 * TARGET) at its place, summed, then scaled; as comm-mpi.c's reduce, operation for operation. */
template <typename T>
__global__ void
reduce_kernel(T *target, const guint8 *parts, gsize n, gsize bytes, guint32 world, guint32 me,
              float scale)
{
  gsize i = (gsize)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float sum = 0;
  for (guint32 q = 0; q < world; q++) {
    const T *from = q == me ? target : (const T *)(parts + slot(q, me) * bytes);
    float v;
    if constexpr (sizeof(T) == 2)
      v = stw_bf16_to_float(from[i]);
    else
      v = from[i];
    sum = q == 0 ? v : __fadd_rn(sum, v);
  }
  sum = __fmul_rn(sum, scale);
  if constexpr (sizeof(T) == 2)
    target[i] = stw_bf16_from_float(sum);
  else
    target[i] = sum;
}

static void
fail(Nccl *m, const char *what, const char *why)
{
  if (!m->broken)
    g_snprintf(m->base.error, sizeof m->base.error, "%s: %s", what, why);
  m->broken = TRUE;
}

static gboolean
cuda_ok(Nccl *m, cudaError_t r, const char *what)
{
  if (r != cudaSuccess)
    fail(m, what, cudaGetErrorString(r));
  return r == cudaSuccess;
}

static gboolean
nccl_ok(Nccl *m, ncclResult_t r, const char *what)
{
  if (r != ncclSuccess)
    fail(m, what, ncclGetErrorString(r));
  return r == ncclSuccess;
}

/* A new operation, its stream after the legacy stream's work so far; NULL when broken. */
static gboolean
begin(Nccl *m)
{
  return !m->broken && cuda_ok(m, cudaEventRecord(m->issued, 0), "cudaEventRecord") &&
         cuda_ok(m, cudaStreamWaitEvent(m->stream, m->issued, 0), "cudaStreamWaitEvent");
}

static StwCommOp *
end(Nccl *m, gboolean issued)
{
  StwCommOp *op = g_new0(StwCommOp, 1);
  op->failed = !issued || m->broken ||
               !cuda_ok(m, cudaEventCreateWithFlags(&op->done, cudaEventDisableTiming),
                        "cudaEventCreate") ||
               !cuda_ok(m, cudaEventRecord(op->done, m->stream), "cudaEventRecord");
  return op;
}

/* Room for (world - 1) x BYTES of received parts; the stream's earlier work done first. */
static gboolean
scratch_for(Nccl *m, gsize bytes)
{
  gsize need = (m->base.world - 1) * bytes;
  if (need <= m->scratch_bytes)
    return TRUE;
  if (!cuda_ok(m, cudaStreamSynchronize(m->stream), "cudaStreamSynchronize"))
    return FALSE;
  if (m->scratch != NULL)
    cudaFree(m->scratch);
  m->scratch = NULL;
  m->scratch_bytes = 0;
  if (!cuda_ok(m, cudaMalloc((void **)&m->scratch, need), "cudaMalloc (the reductions' parts)"))
    return FALSE;
  m->scratch_bytes = need;
  return TRUE;
}

/* Every rank sends SEND_AT(q) to q and receives from q into RECV_AT(q), as one group. */
static gboolean
exchange(Nccl *m, const guint8 *send, gsize send_stride, guint8 *recv, gsize bytes)
{
  StwComm *c = &m->base;
  if (!nccl_ok(m, ncclGroupStart(), "ncclGroupStart"))
    return FALSE;
  gboolean ok = TRUE;
  for (guint32 q = 0; q < c->world && ok; q++) {
    if (q == c->rank)
      continue;
    ok = nccl_ok(m, ncclSend(send + slot(q, c->rank) * send_stride, bytes, ncclUint8, (int)q,
                             m->nccl, m->stream), "ncclSend") &&
         nccl_ok(m, ncclRecv(recv + slot(q, c->rank) * bytes, bytes, ncclUint8, (int)q,
                             m->nccl, m->stream), "ncclRecv");
  }
  return nccl_ok(m, ncclGroupEnd(), "ncclGroupEnd") && ok;
}

static gboolean
reduce_parts(Nccl *m, void *target, gsize bytes, StwDtype dtype)
{
  StwComm *c = &m->base;
  gsize elem = dtype == STW_DTYPE_BF16 ? 2 : 4, n = bytes / elem;
  if (n == 0)
    return TRUE;
  unsigned blocks = (unsigned)((n + THREADS - 1) / THREADS);
  float scale = 1.0f / (float)c->world;
  if (elem == 2)
    reduce_kernel<guint16><<<blocks, THREADS, 0, m->stream>>>((guint16 *)target, m->scratch, n,
                                                               bytes, c->world, c->rank, scale);
  else
    reduce_kernel<float><<<blocks, THREADS, 0, m->stream>>>((float *)target, m->scratch, n,
                                                             bytes, c->world, c->rank, scale);
  return cuda_ok(m, cudaGetLastError(), "the reduction kernel");
}

static StwCommOp *
nccl_all_gather(StwComm *c, const void *own, void *others, gsize bytes)
{
  Nccl *m = (Nccl *)c;
  gboolean ok = begin(m) && exchange(m, (const guint8 *)own, 0, (guint8 *)others, bytes);
  c->sent_bytes += (c->world - 1) * bytes;
  c->received_bytes += (c->world - 1) * bytes;
  return end(m, ok);
}

static StwCommOp *
nccl_reduce_scatter(StwComm *c, void *own, const void *others, gsize bytes, StwDtype dtype)
{
  Nccl *m = (Nccl *)c;
  g_assert(dtype == STW_DTYPE_FP32 || dtype == STW_DTYPE_BF16);
  /* to q: this rank's part for q; from q: its part for this rank */
  gboolean ok = begin(m) && scratch_for(m, bytes) &&
                exchange(m, (const guint8 *)others, bytes, m->scratch, bytes) &&
                reduce_parts(m, own, bytes, dtype);
  c->sent_bytes += (c->world - 1) * bytes;
  c->received_bytes += (c->world - 1) * bytes;
  return end(m, ok);
}

static StwCommOp *
nccl_all_reduce(StwComm *c, void *buf, gsize count, StwDtype dtype)
{
  Nccl *m = (Nccl *)c;
  g_assert(dtype == STW_DTYPE_FP32 || dtype == STW_DTYPE_BF16);
  gsize bytes = count * (dtype == STW_DTYPE_BF16 ? 2 : 4);
  gboolean ok = begin(m) && scratch_for(m, bytes) &&
                exchange(m, (const guint8 *)buf, 0, m->scratch, bytes) &&
                reduce_parts(m, buf, bytes, dtype);
  c->sent_bytes += (c->world - 1) * bytes;
  c->received_bytes += (c->world - 1) * bytes;
  return end(m, ok);
}

static StwCommOp *
nccl_broadcast(StwComm *c, void *buf, gsize bytes, guint32 root)
{
  Nccl *m = (Nccl *)c;
  gboolean ok = begin(m) && nccl_ok(m, ncclBroadcast(buf, buf, bytes, ncclUint8, (int)root,
                                                     m->nccl, m->stream), "ncclBroadcast");
  if (c->rank == root)
    c->sent_bytes += (c->world - 1) * bytes;
  else
    c->received_bytes += bytes;
  return end(m, ok);
}

static StwCommOp *
nccl_barrier(StwComm *c)
{
  Nccl *m = (Nccl *)c;
  gboolean ok = begin(m) && nccl_ok(m, ncclAllReduce(m->token, m->token, 1, ncclInt32, ncclSum,
                                                     m->nccl, m->stream), "ncclAllReduce");
  return end(m, ok);
}

static gboolean
nccl_done(StwComm *c, StwCommOp *op)
{
  Nccl *m = (Nccl *)c;
  if (op->failed || m->broken)
    return TRUE;
  cudaError_t r = cudaEventQuery(op->done);
  if (r == cudaErrorNotReady) {
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(m->nccl, &async);
    if (async == ncclSuccess || async == ncclInProgress)
      return FALSE;
    nccl_ok(m, async, "a collective");
    return TRUE;
  }
  if (!cuda_ok(m, r, "cudaEventQuery"))
    op->failed = TRUE;
  return TRUE;
}

static gboolean
nccl_wait(StwComm *c, StwCommOp *op)
{
  Nccl *m = (Nccl *)c;
  gint64 deadline = c->timeout_ms > 0 ? g_get_monotonic_time() + (gint64)c->timeout_ms * 1000
                                      : G_MAXINT64;
  for (guint spins = 0; !nccl_done(c, op); spins++) {
    if (g_get_monotonic_time() > deadline) {
      g_snprintf(c->error, sizeof c->error, "a collective did not complete within %"
                 G_GUINT64_FORMAT " ms: another rank is gone or stuck", c->timeout_ms);
      m->broken = TRUE;
      ncclCommAbort(m->nccl); /* nothing more runs on it: the stream's work ends */
      m->nccl = NULL;
      return FALSE;
    }
    if (spins > 1000)
      g_usleep(20);
  }
  return !op->failed && !m->broken;
}

static void
nccl_op_free(StwComm *c, StwCommOp *op)
{
  (void)c;
  if (op == NULL)
    return;
  if (op->done != NULL)
    cudaEventDestroy(op->done);
  g_free(op);
}

static void
nccl_free(StwComm *c)
{
  Nccl *m = (Nccl *)c;
  if (m->nccl != NULL) {
    if (!m->broken)
      cudaStreamSynchronize(m->stream);
    if (m->broken)
      ncclCommAbort(m->nccl);
    else
      ncclCommDestroy(m->nccl);
  }
  if (m->scratch != NULL)
    cudaFree(m->scratch);
  if (m->token != NULL)
    cudaFree(m->token);
  if (m->issued != NULL)
    cudaEventDestroy(m->issued);
  if (m->stream != NULL)
    cudaStreamDestroy(m->stream);
  g_free(m);
}

extern "C" __attribute__((visibility("default"))) StwComm *
stw_comm_nccl_module_new(StwComm *host, guint64 timeout_ms, GError **error);

/* The module's entry point; stw_comm_nccl_new (comm.c) finds it with dlsym. */
StwComm *
stw_comm_nccl_module_new(StwComm *host, guint64 timeout_ms, GError **error)
{
  Nccl *m = g_new0(Nccl, 1);
  StwComm *c = &m->base;
  c->name = "nccl";
  c->rank = host->rank;
  c->world = host->world;
  c->local_rank = host->local_rank;
  c->device_memory = TRUE;
  c->host = host;
  c->timeout_ms = timeout_ms;
  c->all_gather = nccl_all_gather;
  c->reduce_scatter = nccl_reduce_scatter;
  c->all_reduce = nccl_all_reduce;
  c->broadcast = nccl_broadcast;
  c->barrier = nccl_barrier;
  c->done = nccl_done;
  c->wait = nccl_wait;
  c->op_free = nccl_op_free;
  c->free = nccl_free;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  gboolean ok = cuda_ok(m, cudaSetDevice((int)host->local_rank), "cudaSetDevice") &&
                cuda_ok(m, cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking),
                        "cudaStreamCreate") &&
                cuda_ok(m, cudaEventCreateWithFlags(&m->issued, cudaEventDisableTiming),
                        "cudaEventCreate") &&
                cuda_ok(m, cudaMalloc((void **)&m->token, sizeof(int)), "cudaMalloc") &&
                (host->rank != 0 || nccl_ok(m, ncclGetUniqueId(&id), "ncclGetUniqueId"));
  /* every rank takes part in the broadcast, so that none waits for one that failed above */
  StwCommOp *op = host->broadcast(host, &id, sizeof id, 0);
  gboolean sent = host->wait(host, op);
  host->op_free(host, op);
  if (!sent)
    fail(m, "broadcasting the NCCL id", host->error);
  ok = ok && sent &&
       nccl_ok(m, ncclCommInitRank(&m->nccl, (int)c->world, id, (int)c->rank), "ncclCommInitRank");
  if (!ok) {
    g_set_error(error, COMM_ERROR, STW_COMM_ERROR_FAILED, "NCCL on GPU %u: %s",
                host->local_rank, c->error);
    nccl_free(c);
    return NULL;
  }
  return c;
}
