/* comm-mpi.c — the communicator over MPI (comm.h): point-to-point messages between host buffers,
 * the reductions added here in rank order so that every rank and every run gets the same bits.
 *
 * MPI is initialized with MPI_THREAD_FUNNELED: only the thread that made the communicator calls
 * it (the runtime's, the trainer's). Messages larger than 1 GiB go in pieces (MPI counts are
 * ints). An operation's requests progress whenever MPI is called; done and wait test them, wait
 * with the communicator's timeout.
 */
#include "config.h"

#include <stowage/comm.h>

#include <string.h>

#include <mpi.h>
#include <stdio.h>

#include "bf16.h"

#define PIECE ((gsize)1 << 30)

typedef struct {
  StwComm base;
  guint32 seq; /* collectives issued: their tag, so that two in flight never match */
} Mpi;

typedef enum { REDUCE_NONE, REDUCE_SCATTER, REDUCE_ALL } ReduceKind;

struct StwCommOp {
  GArray *requests;      /* MPI_Request */
  gboolean finished;
  /* a reduction to add up when the messages are in */
  ReduceKind reduce;
  void *target;          /* the rank's result */
  guint8 *parts;         /* (world - 1) x bytes received, in rank order without this rank */
  gsize bytes;
  StwDtype dtype;
};

static int
tag_of(Mpi *m)
{
  return (int)(m->seq++ % 30000);
}

static void
post(StwCommOp *op, gboolean send, void *buf, gsize bytes, guint32 peer, int tag)
{
  for (gsize off = 0; off < bytes || (bytes == 0 && off == 0); off += PIECE) {
    int n = (int)MIN(PIECE, bytes - off);
    MPI_Request rq;
    if (send)
      MPI_Isend((guint8 *)buf + off, n, MPI_BYTE, (int)peer, tag, MPI_COMM_WORLD, &rq);
    else
      MPI_Irecv((guint8 *)buf + off, n, MPI_BYTE, (int)peer, tag, MPI_COMM_WORLD, &rq);
    g_array_append_val(op->requests, rq);
    if (bytes == 0)
      break;
  }
}

static StwCommOp *
new_op(void)
{
  StwCommOp *op = g_new0(StwCommOp, 1);
  op->requests = g_array_new(FALSE, FALSE, sizeof(MPI_Request));
  return op;
}

/* block index of rank Q in a rank's (world - 1)-block buffer that leaves out ME */
static gsize
slot(guint32 q, guint32 me)
{
  return q < me ? q : q - 1;
}

static StwCommOp *
mpi_all_gather(StwComm *c, const void *own, void *others, gsize bytes)
{
  Mpi *m = (Mpi *)c;
  StwCommOp *op = new_op();
  int tag = tag_of(m);
  for (guint32 q = 0; q < c->world; q++) {
    if (q == c->rank)
      continue;
    post(op, FALSE, (guint8 *)others + slot(q, c->rank) * bytes, bytes, q, tag);
    post(op, TRUE, (void *)own, bytes, q, tag);
  }
  c->sent_bytes += (c->world - 1) * bytes;
  c->received_bytes += (c->world - 1) * bytes;
  return op;
}

static StwCommOp *
mpi_reduce_scatter(StwComm *c, void *own, const void *others, gsize bytes, StwDtype dtype)
{
  Mpi *m = (Mpi *)c;
  StwCommOp *op = new_op();
  int tag = tag_of(m);
  op->reduce = REDUCE_SCATTER;
  op->target = own;
  op->bytes = bytes;
  op->dtype = dtype;
  op->parts = g_malloc(MAX((c->world - 1) * bytes, 1));
  for (guint32 q = 0; q < c->world; q++) {
    if (q == c->rank)
      continue;
    /* from q: its part for this rank; to q: this rank's part for q */
    post(op, FALSE, op->parts + slot(q, c->rank) * bytes, bytes, q, tag);
    post(op, TRUE, (guint8 *)others + slot(q, c->rank) * bytes, bytes, q, tag);
  }
  c->sent_bytes += (c->world - 1) * bytes;
  c->received_bytes += (c->world - 1) * bytes;
  return op;
}

static StwCommOp *
mpi_all_reduce(StwComm *c, void *buf, gsize count, StwDtype dtype)
{
  Mpi *m = (Mpi *)c;
  StwCommOp *op = new_op();
  int tag = tag_of(m);
  g_assert(dtype == STW_DTYPE_FP32 || dtype == STW_DTYPE_BF16);
  gsize bytes = count * stw_dtype_bytes(dtype);
  op->reduce = REDUCE_ALL;
  op->target = buf;
  op->bytes = bytes;
  op->dtype = dtype;
  op->parts = g_malloc(MAX((c->world - 1) * bytes, 1));
  for (guint32 q = 0; q < c->world; q++) {
    if (q == c->rank)
      continue;
    post(op, FALSE, op->parts + slot(q, c->rank) * bytes, bytes, q, tag);
    post(op, TRUE, buf, bytes, q, tag);
  }
  c->sent_bytes += (c->world - 1) * bytes;
  c->received_bytes += (c->world - 1) * bytes;
  return op;
}

static StwCommOp *
mpi_broadcast(StwComm *c, void *buf, gsize bytes, guint32 root)
{
  Mpi *m = (Mpi *)c;
  StwCommOp *op = new_op();
  int tag = tag_of(m);
  if (c->rank == root) {
    for (guint32 q = 0; q < c->world; q++)
      if (q != root)
        post(op, TRUE, buf, bytes, q, tag);
    c->sent_bytes += (c->world - 1) * bytes;
  } else {
    post(op, FALSE, buf, bytes, root, tag);
    c->received_bytes += bytes;
  }
  return op;
}

static StwCommOp *
mpi_barrier(StwComm *c)
{
  (void)c;
  StwCommOp *op = new_op();
  MPI_Request rq;
  MPI_Ibarrier(MPI_COMM_WORLD, &rq);
  g_array_append_val(op->requests, rq);
  return op;
}

/* The mean over the ranks, element by element: every rank's value in rank order, this rank's
 * own (in TARGET) at its place, summed, then scaled. Added rank by rank over the whole buffer
 * (the same additions in the same order for every element as one element at a time, so the
 * same bits, but in loops the compiler vectorizes), in pieces that stay in cache. */
static void
reduce(StwComm *c, StwCommOp *op)
{
  g_assert(op->dtype == STW_DTYPE_FP32 || op->dtype == STW_DTYPE_BF16);
  gsize elem = stw_dtype_bytes(op->dtype), n = op->bytes / elem;
  float scale = 1.0f / (float)c->world;
  enum { PIECE_ELEMS = 4096 };
  float acc[PIECE_ELEMS];
  for (gsize at = 0; at < n; at += PIECE_ELEMS) {
    gsize k = MIN((gsize)PIECE_ELEMS, n - at);
    for (guint32 q = 0; q < c->world; q++) {
      const guint8 *from = q == c->rank ? (const guint8 *)op->target
                                        : op->parts + slot(q, c->rank) * op->bytes;
      if (elem == 2) {
        const guint16 *v = (const guint16 *)from + at;
        if (q == 0)
          for (gsize i = 0; i < k; i++)
            acc[i] = stw_bf16_to_float(v[i]);
        else
          for (gsize i = 0; i < k; i++)
            acc[i] += stw_bf16_to_float(v[i]);
      } else {
        const float *v = (const float *)from + at;
        if (q == 0)
          memcpy(acc, v, k * sizeof(float));
        else
          for (gsize i = 0; i < k; i++)
            acc[i] += v[i];
      }
    }
    if (elem == 2) {
      guint16 *t = (guint16 *)op->target + at;
      for (gsize i = 0; i < k; i++)
        t[i] = stw_bf16_from_float(acc[i] * scale);
    } else {
      float *t = (float *)op->target + at;
      for (gsize i = 0; i < k; i++)
        t[i] = acc[i] * scale;
    }
  }
}

static gboolean
mpi_done(StwComm *c, StwCommOp *op)
{
  if (op->finished)
    return TRUE;
  int flag = 0;
  if (op->requests->len > 0)
    MPI_Testall((int)op->requests->len, (MPI_Request *)op->requests->data, &flag,
                MPI_STATUSES_IGNORE);
  else
    flag = 1;
  if (!flag)
    return FALSE;
  if (op->reduce != REDUCE_NONE)
    reduce(c, op);
  op->finished = TRUE;
  return TRUE;
}

static gboolean
mpi_wait(StwComm *c, StwCommOp *op)
{
  gint64 deadline = c->timeout_ms > 0 ? g_get_monotonic_time() + (gint64)c->timeout_ms * 1000
                                      : G_MAXINT64;
  for (guint spins = 0; !mpi_done(c, op); spins++) {
    if (g_get_monotonic_time() > deadline) {
      g_snprintf(c->error, sizeof c->error, "a collective did not complete within %"
                 G_GUINT64_FORMAT " ms: another rank is gone or stuck", c->timeout_ms);
      return FALSE;
    }
    if (spins > 1000)
      g_usleep(20);
  }
  return TRUE;
}

static void
mpi_op_free(StwComm *c, StwCommOp *op)
{
  (void)c;
  if (op == NULL)
    return;
  if (!op->finished) { /* abandoned after a failure: nothing may write into freed memory */
    for (guint i = 0; i < op->requests->len; i++) {
      MPI_Request *rq = &g_array_index(op->requests, MPI_Request, i);
      if (*rq != MPI_REQUEST_NULL) {
        MPI_Cancel(rq);
        MPI_Request_free(rq);
      }
    }
  }
  g_array_unref(op->requests);
  g_free(op->parts);
  g_free(op);
}

static void
mpi_abort(StwComm *c, int status)
{
  (void)c;
  fflush(stdout);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, status);
}

static void
mpi_free(StwComm *c)
{
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
  g_free(c);
}

StwComm *
stw_comm_mpi_new(guint64 timeout_ms, GError **error)
{
  int initialized = 0, provided = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    g_set_error(error, STW_COMM_ERROR, STW_COMM_ERROR_FAILED, "MPI_Init_thread failed");
    return NULL;
  }
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  /* the ranks of this machine, for one GPU each */
  MPI_Comm local;
  int local_rank = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_free(&local);
  Mpi *m = g_new0(Mpi, 1);
  m->base = (StwComm){ .name = "mpi", .rank = (guint32)rank, .world = (guint32)world,
                       .local_rank = (guint32)local_rank, .all_gather = mpi_all_gather,
                       .reduce_scatter = mpi_reduce_scatter, .all_reduce = mpi_all_reduce,
                       .broadcast = mpi_broadcast, .barrier = mpi_barrier, .done = mpi_done,
                       .wait = mpi_wait, .op_free = mpi_op_free, .free = mpi_free,
                       .abort = mpi_abort,
                       .timeout_ms = timeout_ms };
  m->base.host = &m->base;
  return &m->base;
}
