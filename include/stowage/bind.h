/* bind.h — the library for other languages: opaque handles, JSON in and out, errors as strings.
 *
 * Python's package (python/stowage, through ctypes) and any other binding call these and
 * nothing else, so that no struct layout crosses the boundary and no logic is written twice:
 * each function is a few lines over the public C API it names. Strings returned are the
 * caller's, freed with stw_bind_free; on failure a function returns NULL (or FALSE) and sets
 * *ERROR_OUT to the message (the caller's too). Handles are freed with their own _free.
 */
#ifndef STW_BIND_H
#define STW_BIND_H

#include <glib.h>

#include <stowage/api.h>
#include <stowage/plan.h>
#include <stowage/trace.h>

#if STW_BUILDING_LAYER < STW_LAYER_BIND
#error "<stowage/bind.h> belongs to the bindings: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

void stw_bind_free(void *p);
/* "stowage 0.1.0" (static) */
const char *stw_bind_version(void);

/* Traces: stw_trace_load, stw_import (OPTIONS_JSON: {"et", "memory_timeline", "iteration"
 * (a number, "last" or "whole"), "depth", "device_id", "pid", "params_from_memory"}; NULL for
 * the defaults), stw_trace_save. */
StwTrace *stw_bind_trace_load(const char *file, char **error_out);
StwTrace *stw_bind_import(const char *file, const char *options_json, char **error_out);
/* The trace `stowage synth` writes, its options as OPTIONS_JSON's members ("model",
 * "model_config", "batch", "seq", "dtype", "checkpointing", "attention", "kernels", "loss",
 * "freeze", "lora", "lora_targets", "hw", "memory"; stw_request_synth reads them). */
StwTrace *stw_bind_synth(const char *options_json, char **error_out);
gboolean stw_bind_trace_save(const StwTrace *t, const char *file, char **error_out);
void stw_bind_trace_free(StwTrace *t);
/* What `stowage inspect --json` prints: the summary with the TOP largest tensors. */
char *stw_bind_trace_summary(const StwTrace *t, guint32 top);

/* Building a trace (a profiler in another language): a new trace named NAME for DEVICE of
 * MEMORY_BYTES; tensors (DTYPE "fp32", "fp16", "bf16"), ops (STAGE "fwd", "bwd", "optim") with
 * the tensors they read and the gradients they write, the non-model memory at their start and
 * peak and their duration; a warning for its source. Indices are returned; -1 with *ERROR_OUT
 * on a bad argument. stw_bind_trace_validate checks the whole trace. */
StwTrace *stw_bind_trace_new(const char *name, const char *device, guint64 memory_bytes);
gint64 stw_bind_trace_add_tensor(StwTrace *t, const char *name, const char *dtype,
                                 const guint64 *shape, guint32 ndim, char **error_out);
gint64 stw_bind_trace_add_op(StwTrace *t, const char *name, const char *stage,
                             const guint32 *params, guint32 n_params, const guint32 *grads,
                             guint32 n_grads, guint64 nonmodel_bytes, guint64 peak_bytes,
                             guint64 duration_ns, char **error_out);
void stw_bind_trace_warn(StwTrace *t, const char *name, guint64 count);
/* A block (trace.h's StwBlock) over ops [FWD_FIRST, FWD_LAST] and [BWD_FIRST, BWD_LAST]: its
 * index; the trace's validation checks it against the ops. */
gint64 stw_bind_trace_add_block(StwTrace *t, const char *name, guint32 fwd_first,
                                guint32 fwd_last, guint32 bwd_first, guint32 bwd_last,
                                guint64 input_bytes, guint64 saved_bytes, guint64 forward_ns);
void stw_bind_trace_set_shape(StwTrace *t, guint64 batch, guint64 seq);
/* The iteration's shape: MICRO_STEPS forward-backward runs, GRADIENTS "chunks" or "framework"
 * (trace.h's StwGradients); FALSE with *ERROR_OUT on a bad value. */
gboolean stw_bind_trace_set_steps(StwTrace *t, guint32 micro_steps, const char *gradients,
                                  char **error_out);
/* The loop runs under autocast, its GEMMs in DTYPE ("bf16" or "fp16"; NULL or "": none) over
 * fp32 weights (model.autocast); FALSE with *ERROR_OUT on another. */
gboolean stw_bind_trace_set_autocast(StwTrace *t, const char *dtype, char **error_out);
/* The trace's optimizer keeps AMSGrad's largest variances (model.amsgrad). */
void stw_bind_trace_set_amsgrad(StwTrace *t, gboolean amsgrad);
/* The profiled process's own host memory at its peak (device.process_bytes; 0: not measured). */
void stw_bind_trace_set_process_bytes(StwTrace *t, guint64 bytes);
/* The profiled process's own GPU memory outside its tensors (device.gpu_process_bytes; 0: not
 * measured). */
void stw_bind_trace_set_gpu_process_bytes(StwTrace *t, guint64 bytes);
/* TENSOR is frozen: no gradient, no optimizer state. */
gboolean stw_bind_trace_freeze(StwTrace *t, guint32 tensor, char **error_out);
/* A size as the CLI reads it ("24MiB", "1.5GB", "4096") into *BYTES_OUT. */
gboolean stw_bind_size_parse(const char *text, guint64 *bytes_out, char **error_out);
gboolean stw_bind_trace_validate(const StwTrace *t, char **error_out);

/* Plans: stw_planner_plan by OPTIONS_JSON, the options of `stowage plan` by name ("gpu"
 * (required), "cpu", "reserve", "gpus", "nodes", "hw", "beyond_device", "policy", "objective",
 * "chunk_size", "oversized", "gemini_fraction", "prefetch_bucket"; request.h reads them, as it
 * reads the CLI's, with the CLI's messages), stw_plan_load and stw_plan_save. */
StwPlan *stw_bind_plan(const StwTrace *t, const char *trace_file, const char *options_json,
                       char **error_out);
StwPlan *stw_bind_plan_load(const char *file, char **error_out);
gboolean stw_bind_plan_save(const StwPlan *plan, const StwTrace *t, const char *file,
                            char **error_out);
void stw_bind_plan_free(StwPlan *plan);
/* The plan's predictions as JSON (the plan file's "predictions" names), its policy, chunk
 * size, GPU budget ("gpu_budget"), when it names one its trace's file ("trace_file"), the
 * blocks it recomputes and offloads ("recompute", "offload": indices into its trace's blocks,
 * ascending) and the offloaded blocks' copies ("activation_moves", as in the plan file). */
char *stw_bind_plan_predictions(const StwPlan *plan);

/* stw_plan_check: NULL with *ERROR_OUT naming the first failure; else the recomputed
 * predictions as JSON. */
char *stw_bind_check(const StwPlan *plan, const StwTrace *t, char **error_out);
/* stw_simulate on the plan's hardware (the plan must check): the record `stowage simulate
 * --json` prints (report.h), every op and transfer in it with DETAIL. */
char *stw_bind_simulate(const StwPlan *plan, const StwTrace *t, gboolean detail,
                        char **error_out);
/* `stowage compare`: every policy on the budget of OPTIONS_JSON ("gpu", and the planning
 * options "cpu", "reserve", "gpus", "nodes", "hw", "beyond_device"), the record its --json
 * prints (whatif.h's stw_whatif_comparison_json; TRACE_FILE, may be NULL, names the trace). */
char *stw_bind_compare(const StwTrace *t, const char *trace_file, const char *options_json,
                       char **error_out);
/* `stowage whatif` on T (NULL: the options name a "trace" file or a "model") by OPTIONS_JSON,
 * its options by name ("gpu" a list such as "8GiB..16GiB:4GiB", "policy", "batch",
 * "chunk_size" comma lists; request.h): its rows as `whatif --json` prints them. */
char *stw_bind_whatif(const StwTrace *t, const char *options_json, char **error_out);
/* `stowage minmem` on T by OPTIONS_JSON ("slowdown", "policy" and the planning options): the
 * record `minmem --json` prints. */
char *stw_bind_minmem(const StwTrace *t, const char *trace_file, const char *options_json,
                      char **error_out);
/* `stowage capacity` by OPTIONS_JSON ("family", "hidden", "batch", "seq", "no_checkpointing",
 * "attention", "dtype", "policy" and the planning options): the record `capacity --json`
 * prints. */
char *stw_bind_capacity(const char *options_json, char **error_out);
/* `stowage probe` by OPTIONS_JSON ("base", "name", "device": host or cuda; "collectives" needs
 * ranks, which a binding does not start: refused as the CLI refuses it on one rank): the record
 * `probe --json` prints, the profile in it. Takes some seconds. */
char *stw_bind_probe(const char *options_json, char **error_out);

/* The trace's JSON (the file's text), for a binding to read its ops. */
char *stw_bind_trace_json(const StwTrace *t, char **error_out);

/* The runtime on DEVICE ("host": the host backend, an emulated device; "cuda": the CUDA
 * backend on GPU 0, its arena DEVICE_BYTES and room for rounding) with a budget of DEVICE_BYTES,
 * replaying PLAN (made for PLAN_TRACE, which it must check for: stw_plan_check's message
 * otherwise) or, with PLAN NULL, in profile mode; MODEL's tensors (fp32) start from INIT (one
 * host array of numel floats per tensor, in id order; NULL: zeros). MODEL, PLAN and PLAN_TRACE
 * must outlive it; STORAGE_DIR (or NULL) is the runtime options' storage_dir. The op-by-op calls are stw_runtime_*'s (runtime.h). */
typedef struct StwBindRuntime StwBindRuntime;
StwBindRuntime *stw_bind_runtime_new(const StwTrace *model, const float *const *init,
                                     const StwPlan *plan, const StwTrace *plan_trace,
                                     guint64 device_bytes, const char *device,
                                     const char *storage_dir, char **error_out);
void stw_bind_runtime_free(StwBindRuntime *r);
void stw_bind_runtime_iteration_begin(StwBindRuntime *r);
/* stw_runtime_iteration_abandon: the iteration ended early (an exception in the caller's step). */
void stw_bind_runtime_iteration_abandon(StwBindRuntime *r);
gboolean stw_bind_runtime_iteration_end(StwBindRuntime *r, char **error_out);
gboolean stw_bind_runtime_op_begin(StwBindRuntime *r, const char *name, const char *stage,
                                   const guint32 *params, guint32 n_params,
                                   const guint32 *grads, guint32 n_grads, char **error_out);
void stw_bind_runtime_op_end(StwBindRuntime *r);
/* stw_runtime_unplanned_op_begin: an op outside the plan (an evaluation), ended by op_end. */
gboolean stw_bind_runtime_unplanned_op_begin(StwBindRuntime *r, const char *name,
                                             const guint32 *params, guint32 n_params,
                                             char **error_out);
/* The compute copy of TENSOR for the current op (numel values of the model's dtype: fp32, or
 * bf16 or fp16 in mixed precision; on "cuda", device memory,
 * its fetch complete); after its backward, its gradient. NULL for a tensor the model does not
 * have or that no open op holds resident. */
float *stw_bind_runtime_param(StwBindRuntime *r, guint32 tensor);
/* At the optimizer op of TENSOR: one AdamW step (ADAM_JSON: {"lr", "beta1", "beta2", "eps",
 * "weight_decay", "amsgrad" (true: the layout must keep the largest variances, a trace of
 * model.amsgrad), "loss_scale" (what an fp16 gradient carries, divided out in fp32)}, missing
 * members at their defaults; STEP from 1) of every tensor this rank
 * steps there, wherever the plan places it: the library's CPU Adam on host memory, the CUDA
 * compute table's on a GPU's (queued on the legacy default stream, after the work before it). */
gboolean stw_bind_runtime_adam(StwBindRuntime *r, guint32 tensor, const char *adam_json,
                               guint64 step, char **error_out);
/* At the optimizer op of TENSOR: where its gradient goes for the step (the compute copy
 * wherever the plan steps it), numel values of the model's dtype; *ON_DEVICE (may be NULL) TRUE when that is a GPU's
 * memory, FALSE when host memory (the host backend's emulated device included). */
float *stw_bind_runtime_optim_grad(StwBindRuntime *r, guint32 tensor, gboolean *on_device);
/* After stw_bind_runtime_optim_grad: where TENSOR's weights are before its step, fp32 host memory,
 * when the gradient's place no longer holds them (an fp32 compute copy stepped by CPU Adam keeps
 * its weights there at rest, and they move to the master's buffer as the gradient arrives:
 * stw_runtime_gradient_arrives); NULL when the gradient's place still does (what Adam's L2
 * decay reads before the gradient is written). */
const float *stw_bind_runtime_optim_weights(StwBindRuntime *r, guint32 tensor);
/* The same AdamW step on plain arrays (the reference a binding compares with): PARAM holds the
 * gradient and gets the new weights, MASTER the fp32 weights, M and V the moments (V 2 N values
 * with "amsgrad": the variances, then their largest so far), fp32, or bf16 with "state":
 * "bf16". With "weights": "copy" the new weights go into PARAM alone and MASTER is only read, as
 * the runtime steps an fp32 compute copy on the CPU on one rank (4 bytes an element fewer). */
gboolean stw_bind_adam(float *param, float *master, void *m, void *v, guint64 n,
                       const char *adam_json, guint64 step, char **error_out);
/* The runtime's figures (runtime.h's StwRuntimeStats) as JSON. */
char *stw_bind_runtime_stats(StwBindRuntime *r);
/* TENSOR's fp32 master weights into OUT (numel floats); FALSE with *ERROR_OUT for a tensor the
 * model does not have. */
gboolean stw_bind_runtime_master(StwBindRuntime *r, guint32 tensor, float *out,
                                 char **error_out);
/* stw_runtime_hand_back: TENSOR read out for good; its chunk freed once all its tensors are. */
gboolean stw_bind_runtime_hand_back(StwBindRuntime *r, guint32 tensor, char **error_out);
/* stw_runtime_read_state and write_state: TENSOR's weights (its master; a frozen tensor's compute
 * copy), momentum and variance, and with VMAX (may be NULL) AMSGrad's largest variances, numel
 * floats each, wherever the runtime holds them. */
gboolean stw_bind_runtime_read_state(StwBindRuntime *r, guint32 tensor, float *master, float *m,
                                     float *v, float *vmax, char **error_out);
gboolean stw_bind_runtime_write_state(StwBindRuntime *r, guint32 tensor, const float *master,
                                      const float *m, const float *v, const float *vmax,
                                      char **error_out);

STW_END_DECLS

#endif
