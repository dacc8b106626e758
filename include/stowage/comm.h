/* comm.h — the ranks of data-parallel training talking to each other: the collectives a plan of
 * chunk groups needs, asynchronous, on a lane of their own.
 *
 * A plan for N ranks (plan.h, "Several GPUs") groups chunks by N: rank r owns chunk r of every
 * group and holds the others' only while a gather has brought them. The collectives work on
 * that layout directly, in the runtime's memory (the backend's device memory):
 *
 *   all_gather(own, others, bytes)      OTHERS, (N - 1) x BYTES, receives every other rank's
 *                                       OWN, in rank order without this rank
 *   reduce_scatter(own, others, bytes)  OWN becomes the mean over the ranks of their parts for
 *                                       this rank: its own OWN and block (this rank) of every
 *                                       other rank's OTHERS, summed in rank order, then scaled
 *                                       by 1/N (data parallelism averages the gradients)
 *   all_reduce(buf, count, dtype)       the mean over the ranks, in place, in rank order
 *   broadcast(buf, bytes, root)
 *   barrier()                           completes once every rank has called it
 *
 * The reductions add in rank order whatever the world, so every rank gets bitwise the same
 * result and a run is bitwise reproducible. Each call returns an operation in flight, completed
 * by wait (or tested by done) like a backend copy; wait fails, with the reason in ERROR, when a
 * peer is gone or the operation does not complete within the communicator's timeout, so that a
 * dead rank stops the others instead of hanging them.
 *
 * Implementations: one rank (stw_comm_self_new: every collective is the identity), MPI between
 * processes (Open MPI or MPICH, on host memory), NCCL between GPUs (on the CUDA backend's device
 * memory, bootstrapped through an MPI communicator: rank 0's NCCL id broadcast over it). A
 * communicator on device memory says so (device_memory) and names, in host, the one for host
 * memory (the loss, a flag): for MPI and one rank, itself.
 */
#ifndef STW_COMM_H
#define STW_COMM_H

#include <glib.h>

#include <stowage/trace.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_RUNTIME
#error "<stowage/comm.h> belongs to the runtime: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_COMM_ERROR (stw_comm_error_quark())
GQuark stw_comm_error_quark(void);

typedef enum {
  STW_COMM_ERROR_UNSUPPORTED, /* this build has no such communicator */
  STW_COMM_ERROR_FAILED,      /* it could not start, or a collective failed */
  STW_COMM_ERROR_MISMATCH,    /* the ranks disagree (another plan, other data) */
} StwCommError;

typedef struct StwComm StwComm;
typedef struct StwCommOp StwCommOp;

struct StwComm {
  const char *name;     /* "self", "mpi", "nccl" */
  guint32 rank, world;
  guint32 local_rank;   /* among the ranks of this machine: which GPU is this rank's */
  /* the collectives of the chunk-group layout above; DTYPE the elements' (fp32 or bf16) */
  StwCommOp *(*all_gather)(StwComm *c, const void *own, void *others, gsize bytes);
  StwCommOp *(*reduce_scatter)(StwComm *c, void *own, const void *others, gsize bytes,
                               StwDtype dtype);
  StwCommOp *(*all_reduce)(StwComm *c, void *buf, gsize count, StwDtype dtype);
  StwCommOp *(*broadcast)(StwComm *c, void *buf, gsize bytes, guint32 root);
  StwCommOp *(*barrier)(StwComm *c);
  /* TRUE once OP has finished, without blocking */
  gboolean (*done)(StwComm *c, StwCommOp *op);
  /* Blocks until OP has finished; FALSE with ERROR when it failed or timed out. */
  gboolean (*wait)(StwComm *c, StwCommOp *op);
  void (*op_free)(StwComm *c, StwCommOp *op);
  void (*free)(StwComm *c);
  /* Ends every rank's process now with STATUS (a rank that failed alone: the others would wait
   * for it in a collective); NULL where there is one rank. */
  void (*abort)(StwComm *c, int status);
  gboolean device_memory; /* its buffers are the CUDA backend's device memory (NCCL) */
  StwComm *host;        /* the communicator for host memory, on the same ranks: this one
                         * unless device_memory */
  guint64 timeout_ms;   /* for wait; 0: none */
  guint64 sent_bytes, received_bytes; /* since the communicator was made */
  char error[256];
};

/* One rank, alone: collectives are copies or nothing. Never NULL; freed with its free. */
StwComm *stw_comm_self_new(void);

/* MPI_COMM_WORLD (initialized here, finalized by free), its collectives on host memory. NULL
 * with ERROR (STW_COMM_ERROR_UNSUPPORTED) in a build without MPI. */
StwComm *stw_comm_mpi_new(guint64 timeout_ms, GError **error);

/* NCCL between the GPUs of HOST's ranks (an MPI communicator, which must outlive it): each rank
 * on its GPU LOCAL_RANK (made current), rank 0's NCCL id broadcast over HOST. Loaded on demand
 * (libstowage-comm-nccl.so) so that NCCL loads only then; NULL with ERROR
 * (STW_COMM_ERROR_UNSUPPORTED) in a build without NCCL and MPI, STW_COMM_ERROR_FAILED when NCCL
 * does not start. Its collectives run on a CUDA stream of their own. */
StwComm *stw_comm_nccl_new(StwComm *host, guint64 timeout_ms, GError **error);

/* Whether this process was started by mpirun (or a launcher like it) with more than one rank:
 * what a CLI asks before it starts MPI. */
gboolean stw_comm_launched_with_ranks(void);

/* Waits for OP and frees it: FALSE with ERROR (STW_COMM_ERROR_FAILED) naming WHAT when it failed. */
gboolean stw_comm_finish(StwComm *c, StwCommOp *op, const char *what, GError **error);

/* The ranks agree on KEY (a digest, a length...): FALSE with ERROR (STW_COMM_ERROR_MISMATCH)
 * naming WHAT and the first rank that differs. */
gboolean stw_comm_agree(StwComm *c, const char *what, const char *key, GError **error);

/* The ranks agree on N named values (NAMES[i], VALUES[i]: the options of a run, as text of at
 * most 63 bytes each): FALSE with ERROR (STW_COMM_ERROR_MISMATCH) on every rank naming WHAT, the
 * first rank that differs, the first of its values that does and rank 0's. */
gboolean stw_comm_agree_fields(StwComm *c, const char *what, const char *const *names,
                               const char *const *values, guint n, GError **error);

STW_END_DECLS

#endif
