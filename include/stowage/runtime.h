/* runtime.h — the chunk runtime: model data in chunks, moved between host and device at op
 * boundaries, either on demand while recording a trace (profile) or exactly as a plan says
 * (replay).
 *
 * A training step is a sequence of ops bracketed by stw_runtime_op_begin/op_end; the runtime
 * makes every chunk the op declares resident before it returns, and the pointers it hands out
 * (stw_runtime_param, stw_runtime_optim) are valid until op_end. Activations are allocated
 * through stw_runtime_alloc so that they count against the same device budget as the chunks. Data
 * is never lost: a chunk whose device copy is the only valid one is written back before its slot
 * is freed, whatever the plan says (a deviation, counted), and with `verify` every move is
 * checksummed.
 */
#ifndef STW_RUNTIME_H
#define STW_RUNTIME_H

#include <glib.h>

#include <stowage/backend.h>
#include <stowage/comm.h>
#include <stowage/plan.h>
#include <stowage/trace.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_RUNTIME
#error "<stowage/runtime.h> belongs to the runtime: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_RUNTIME_ERROR (stw_runtime_error_quark())
GQuark stw_runtime_error_quark(void);

typedef enum {
  STW_RUNTIME_ERROR_BUDGET,   /* the device budget cannot hold what an op needs */
  STW_RUNTIME_ERROR_MISMATCH, /* the plan was made for another model, configuration or device */
  STW_RUNTIME_ERROR_CORRUPT,  /* a checksum failed after a move (verify mode) */
  STW_RUNTIME_ERROR_DEVICE,   /* the device failed: no device, a copy failed or did not complete */
  STW_RUNTIME_ERROR_UNSUPPORTED, /* what this build or this backend cannot do */
  STW_RUNTIME_ERROR_STATE,    /* asked for what the runtime's state does not allow: training
                               * after the model was handed back, a tensor it does not have */
} StwRuntimeError;

typedef enum {
  STW_RUNTIME_PROFILE, /* on demand, least recently used out; records a trace */
  STW_RUNTIME_REPLAY,  /* the plan's actions at every op boundary */
  STW_RUNTIME_PLAIN,   /* the baseline the runtime's cost is measured against: every list in
                        * plain host arrays, no budget, no moves, no bookkeeping, no trace */
} StwRuntimeMode;

typedef struct {
  StwRuntimeMode mode;
  guint64 device_bytes;       /* the emulated device's budget: chunks + activations */
  guint64 chunk_size_elems;   /* profile mode: 0 = the largest tensor */
  const StwPlan *plan;        /* replay mode */
  const StwTrace *plan_trace; /* replay mode: the trace the plan was made for */
  gboolean verify;            /* checksum every chunk across every move */
  guint64 copy_timeout_ms;    /* a copy not done by then is an error (0: wait forever) */
  StwComm *comm;              /* the data-parallel ranks (not owned); NULL: one rank */
  gboolean activations_outside; /* replay: the activations are the caller's framework's own
                                 * (stowage.torch.wrap's PyTorch tensors), not allocated here: it
                                 * moves an offloading plan's blocks itself, and the runtime
                                 * expects none handed over (stw_runtime_offload) */
  const char *storage_dir;    /* replay of a plan that keeps chunks' optimizer state on the
                               * storage tier ("cpu-storage"): the directory for its file
                               * (optimizer-state.rankN, removed at the end); needed then */
  guint32 storage_queue_depth; /* requests in flight on it at most (0: 32) */
  gboolean check_store;       /* after every op's begin and end, the chunk store's invariants
                               * (stw_runtime_check_store): for tests; a violation fails the op,
                               * or the next call after an op's end (STW_RUNTIME_ERROR_CORRUPT) */
} StwRuntimeOptions;

typedef struct {
  guint64 h2d_bytes, d2h_bytes;     /* in the last completed iteration */
  guint64 warmup_h2d_bytes;         /* replay: loading the plan's start state */
  guint64 peak_device_bytes;        /* over the run */
  guint64 peak_settled_bytes;       /* the same counting an evicted chunk's memory free from its
                                     * write-back's issue, as a plan counts it (the plan's
                                     * peak_gpu_bytes); peak_device_bytes is more by what copies
                                     * still in flight held (a slow copy engine, a loaded
                                     * machine), within the budget */
  guint64 deviations;               /* moves the plan did not foresee */
  guint64 verified_moves;
  guint64 bookkeeping_ns;           /* time spent in op_begin/op_end */
  guint64 ops;
  guint64 arena_bytes;              /* the activation arena learned from the first iteration */
  guint64 arena_iterations;         /* iterations whose activations all came from it */
  guint64 comm_bytes;               /* received in collectives in the last iteration */
  guint64 copy_wait_ns;             /* over the run: blocked until chunk copies completed */
  guint64 comm_wait_ns;             /* over the run: blocked until collectives completed (with
                                     * MPI, whose messages progress while waited for, about
                                     * their whole time) */
  guint64 unplanned_ops;            /* over the run: ops outside the plan (evaluations) */
  guint64 unplanned_h2d_bytes;      /* over the run: moved for them, and to restore the plan's */
  guint64 unplanned_d2h_bytes;      /* start state after them; none of it in h2d_bytes */
  guint64 abandoned_iterations;     /* over the run: stw_runtime_iteration_abandon's */
  guint64 storage_read_bytes;       /* optimizer state read from the storage tier, and written */
  guint64 storage_write_bytes;      /* to it, in the last completed iteration */
  guint64 storage_wait_ns;          /* over the run: blocked until its requests completed */
  char storage_engine[16];          /* "io_uring" or "threads"; empty without a storage tier */
  char storage_fallback[512];       /* what its directory did not allow (storage.h), or empty */
} StwRuntimeStats;

typedef struct StwRuntime StwRuntime;

/* MODEL gives the tensors and, for profile traces, the model section: their dtype is the compute
 * copy's (the param list's: fp32, or bf16 or fp16 in mixed precision, each rounded to nearest
 * even from the fp32 master; the other lists are fp32). Every tensor is initialized from INIT
 * (numel floats each, in id order), master included; with INIT NULL the
 * state starts at zero, for stw_runtime_write_state to fill tensor by tensor. MODEL, BACKEND and, in
 * replay, the plan and its trace must outlive the runtime. NULL with ERROR when the plan does not
 * fit the model (STW_RUNTIME_ERROR_MISMATCH) or the backend cannot do what is asked
 * (UNSUPPORTED: fp16 on several ranks among it); the caller frees the runtime with stw_runtime_free. */
StwRuntime *stw_runtime_new(const StwTrace *model, const float *const *init,
                            const StwRuntimeOptions *o, StwBackend *backend, GError **error);
void stw_runtime_free(StwRuntime *rt);
/* TENSOR read out for good (its weights and state, by stw_runtime_read_state): once every
 * tensor of its chunk is, the chunk's memory is freed, device and host (on one rank; on several
 * it is freed with the runtime), so that a model handed back to its framework tensor by tensor
 * never holds its chunks and the framework's copies at once. From the first call on the runtime
 * trains no more: ops, iterations and reads fail (STW_RUNTIME_ERROR_STATE). FALSE with ERROR for
 * a tensor the model does not have. */
gboolean stw_runtime_hand_back(StwRuntime *rt, guint32 tensor, GError **error);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwRuntime, stw_runtime_free)

/* The chunk store's invariants: every item in one place (on the host, on its way, on the device,
 * on its way back) with the slot and copy that place holds, the copies queued to land, and the
 * device bytes in use counted byte for byte within the budget. FALSE with ERROR
 * (STW_RUNTIME_ERROR_CORRUPT) naming the first that does not hold. */
gboolean stw_runtime_check_store(StwRuntime *rt, GError **error);

void stw_runtime_iteration_begin(StwRuntime *rt);
/* Ends the iteration: in replay, checks it ended in the plan's start state. FALSE with ERROR
 * (STW_RUNTIME_ERROR_DEVICE) when a copy failed or did not complete, or in verify mode
 * (STW_RUNTIME_ERROR_CORRUPT) when a chunk's data changed in a move. */
gboolean stw_runtime_iteration_end(StwRuntime *rt, GError **error);
/* Ends the iteration begun without running the rest of its ops (the caller's step raised an
 * exception, or was interrupted, before its end): nothing of the model data is lost (every chunk
 * keeps its valid copy), the next iteration first puts every chunk back where the plan starts
 * (moves counted as unplanned, as after an unplanned op), and the runtime replays the plan from
 * its first op again. Counted in the stats (abandoned_iterations). An iteration whose
 * optimizer ops have begun should not be abandoned: its tensors stepped so far keep their step. */
void stw_runtime_iteration_abandon(StwRuntime *rt);

/* Begins an op reading PARAMS (writing GRADS' gradients in backward): their chunks resident on
 * the device when it returns. FALSE with ERROR: STW_RUNTIME_ERROR_MISMATCH (in replay, an op the
 * plan's trace does not have here), STW_RUNTIME_ERROR_BUDGET (the budget cannot hold the op's
 * chunks), STW_RUNTIME_ERROR_DEVICE, STW_RUNTIME_ERROR_CORRUPT (as iteration_end). */
gboolean stw_runtime_op_begin(StwRuntime *rt, const char *name, StwStage stage,
                              const guint32 *params, guint32 n_params, const guint32 *grads,
                              guint32 n_grads, GError **error);
void stw_runtime_op_end(StwRuntime *rt);

/* An op outside the plan's trace (an evaluation forward between training steps): PARAMS' chunks
 * are made resident on demand within the budget, least recently used out, and
 * stw_runtime_param serves them until stw_runtime_op_end. What it moves is counted in the stats'
 * unplanned figures, not as deviations; in replay the next iteration first restores the plan's
 * start state (counted there too), so that the plan's own figures stay exact. Within an
 * iteration the plan's later actions find the chunks where the op left them (their misses are
 * deviations, handled safely). FALSE with ERROR when the budget cannot hold the chunks, on
 * several ranks (STW_RUNTIME_ERROR_UNSUPPORTED), or while another unplanned op is open. */
gboolean stw_runtime_unplanned_op_begin(StwRuntime *rt, const char *name, const guint32 *params,
                                        guint32 n_params, GError **error);

/* The compute copy of TENSOR on the device, for the current op (which must declare it), in the
 * model's dtype (fp32, or bf16 or fp16 in mixed precision; the other lists are always fp32); NULL when
 * its chunk is not resident (no op holds it). A backward op that declares TENSOR's gradient
 * writes the gradient there once it no longer needs the parameter. */
gpointer stw_runtime_param(StwRuntime *rt, guint32 tensor);

/* The tensors this rank steps at the optimizer op of TENSOR, into OUT (guint32): TENSOR itself
 * on one rank; on several replaying a plan, at the op of the first tensor of rank 0's own chunk
 * of a group, every tensor of this rank's own chunk of it, and nothing at the others. */
void stw_runtime_optim_tensors(StwRuntime *rt, guint32 tensor, GArray *out);

/* For the optimizer op of TENSOR: its four lists wherever the plan steps it, the moments in
 * stw_runtime_state_dtype's dtype. TRUE when they are device slots (GPU Adam: the backend's
 * memory), FALSE when host memory (CPU Adam). */
gboolean stw_runtime_optim(StwRuntime *rt, guint32 tensor, gpointer *param, float **master,
                           gpointer *momentum, gpointer *variance);
/* Whether the step of TENSOR, after stw_runtime_optim, writes its new weights into the compute
 * copy alone (stw_compute_host_adam_to_copy): an fp32 compute copy stepped by CPU Adam (on any
 * number of ranks) keeps the weights between steps, and its master is read, not written
 * (writing it too does no harm, and moves 4 bytes an element more). The master
 * stw_runtime_optim gives is then the compute copy itself where the chunk got no gradient this
 * iteration. */
gboolean stw_runtime_optim_weights_in_copy(const StwRuntime *rt, guint32 tensor);
/* The caller is about to copy TENSOR's gradient, the framework's own tensor on the device, into
 * the host memory stw_runtime_optim gives it (call this first), where CPU Adam steps it
 * (stw_gradients_cross_at_step): the copy counts in the iteration's d2h_bytes, as the plan
 * counts it, and where its chunk keeps the weights in its compute copy, the chunk's first
 * gradient of the iteration moves them to the master's buffer, the copy's place taking the
 * gradients. Nothing for gradients in the chunks, or a tensor stepped on the device. */
void stw_runtime_gradient_arrives(StwRuntime *rt, guint32 tensor);
/* Where TENSOR's weights are before its step when they are not where stw_runtime_optim's param
 * points (the gradient has taken the compute copy's place: stw_runtime_gradient_arrives): the
 * master's host buffer; NULL where they are there (what Adam's L2 decay reads). */
const float *stw_runtime_optim_weights(StwRuntime *rt, guint32 tensor);
/* The dtype of Adam's moments in the layout: STW_DTYPE_FP32 or STW_DTYPE_BF16 (the plan's, or
 * in profile mode the model trace's model.state_dtype). */
StwDtype stw_runtime_state_dtype(const StwRuntime *rt);

/* Profile mode on several ranks: every gradient (the chunks' param list, after backward) made
 * the mean over the ranks, in place, so that every rank steps the same update. FALSE with ERROR
 * when a collective fails. */
gboolean stw_runtime_reduce_gradients(StwRuntime *rt, GError **error);

StwRuntimeMode stw_runtime_mode(const StwRuntime *rt);

/* Whether the layout keeps AMSGrad's largest variances (stw_runtime_optim's variance pointer
 * then has 2 numel floats). */
gboolean stw_runtime_amsgrad(const StwRuntime *rt);

/* The ranks (1 without a communicator) and this one's. */
guint32 stw_runtime_world(const StwRuntime *rt);
guint32 stw_runtime_rank(const StwRuntime *rt);

/* Activation memory, counted against the device budget; not zeroed (with verify, filled with
 * NaN). From the second iteration on it comes from an arena laid out from the first one, as
 * long as the iterations allocate alike. NULL with ERROR when the budget cannot hold it
 * (STW_RUNTIME_ERROR_BUDGET) or the device fails; stw_runtime_release frees it. */
gpointer stw_runtime_alloc(StwRuntime *rt, gsize bytes, GError **error);
/* Replay of a plan that offloads block BLOCK of its trace: the block's forward has ended, and
 * the N allocations *SLOTS[i] (from stw_runtime_alloc) are what it keeps for backward, its input
 * aside. The runtime moves them as the plan's activation move says: copied to host memory from
 * the next op on, their device memory freed when the copy is done, and brought back into new
 * device memory before the block's backward; *SLOTS[i] is NULL in between and points at the
 * memory brought back from then (the caller releases it as ever). FALSE with ERROR
 * (STW_RUNTIME_ERROR_MISMATCH) when the plan does not offload BLOCK, it is handed over twice,
 * or its bytes are not the plan's. */
gboolean stw_runtime_offload(StwRuntime *rt, guint32 block, gpointer *const *slots, guint n,
                             GError **error);
void stw_runtime_release(StwRuntime *rt, gpointer p);

/* Profile mode: the events of the run's first two iterations (events.h; a longer run writes no
 * more, so that its memory stays bounded), from which stw_events_build() gives the same trace as
 * stw_runtime_trace() gives after the second: one way to describe a run, whoever profiles it.
 * Owned by the runtime, valid until its next op; "" in the other modes. */
const char *stw_runtime_events(StwRuntime *rt, gsize *len);

/* Profile mode: the trace of the last completed timed iteration, owned by the runtime and valid
 * until the next one ends; NULL before the first one and in the other modes. */
StwTrace *stw_runtime_trace(StwRuntime *rt);

/* Profile mode: whether the iterations begun from now on are timed (the default): each op
 * between two waits for the device, so that the trace holds compute times, and the iteration
 * becomes stw_runtime_trace's. An untimed iteration runs as a replay does, never waiting for
 * the device, and its trace is dropped: a run that keeps one iteration's trace times that one
 * alone (on CUDA a wait per op costs its launch queue). */
void stw_runtime_set_timed(StwRuntime *rt, gboolean timed);
/* The runtime's figures, owned by it and updated as it runs; never NULL. */
const StwRuntimeStats *stw_runtime_stats(StwRuntime *rt);

/* Waits for the storage tier's writes in flight (a step's last ones overlap the next step):
 * then its file holds the whole state. TRUE at once without a tier; FALSE with ERROR
 * (STW_STORAGE_ERROR) when a write failed. */
gboolean stw_runtime_storage_sync(StwRuntime *rt, GError **error);

/* Copies every tensor's master weights, momentum and variance out (for checkpoints), or in,
 * from and to wherever they are (a device copy, the host's, the storage tier's file). The compute
 * copy is written from the master weights, in its precision. A frozen tensor's weights are its
 * compute copy, and its moments read as zeros and are not written. FALSE with ERROR when the
 * storage tier failed or its file does not hold what was written (STW_STORAGE_ERROR): nothing is
 * read out then (the outputs are zeros), and nothing half written. */
gboolean stw_runtime_read_state(StwRuntime *rt, guint32 tensor, float *master, float *m, float *v,
                                GError **error);
gboolean stw_runtime_write_state(StwRuntime *rt, guint32 tensor, const float *master,
                                 const float *m, const float *v, GError **error);
/* TENSOR's compute copy, widened to fp32, into OUT (numel floats). */
void stw_runtime_read_param(StwRuntime *rt, guint32 tensor, float *out);
/* With AMSGrad (a layout of the trace's model.amsgrad): TENSOR's largest variances so far,
 * numel floats, out or in; zeros out (and nothing in) without them. */
gboolean stw_runtime_read_max_variance(StwRuntime *rt, guint32 tensor, float *out,
                                       GError **error);
gboolean stw_runtime_write_max_variance(StwRuntime *rt, guint32 tensor, const float *in,
                                        GError **error);

STW_END_DECLS

#endif
