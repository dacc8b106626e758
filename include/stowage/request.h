/* request.h — what a caller asks of the planner, as it asked it, parsed and checked once.
 *
 * The CLI fills a request from its command line (`--gpu 4GiB`), a binding from a JSON object
 * ({"gpu": "4GiB"}, {"chunk_size": 8192}); both then resolve it with the same functions, so that
 * both accept the same values and refuse the same ones with the same words. An option is named
 * as the CLI spells it without its dashes ("gpu", "chunk-size"; a JSON member may write '_' for
 * '-'). Messages name the option as the CLI does ("--gpus: '0' is not valid: expected a whole
 * number from 1 to 1024"), whoever asked.
 *
 * Every function that fails returns FALSE (NULL for a constructor) and sets ERROR: in
 * STW_REQUEST_ERROR with STW_REQUEST_ERROR_USAGE for a value the caller gave (the CLI's exit
 * status 2), or in the domain of what failed beneath (a hardware profile file, say).
 */
#ifndef STW_REQUEST_H
#define STW_REQUEST_H

#include <glib.h>

#include <stowage/planner.h>
#include <stowage/synth.h>
#include <stowage/trace.h>
#include <stowage/whatif.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_PLANNER
#error "<stowage/request.h> belongs to the planner: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_REQUEST_ERROR (stw_request_error_quark())
GQuark stw_request_error_quark(void);

typedef enum {
  STW_REQUEST_ERROR_USAGE, /* an option unknown, missing, malformed or out of range */
} StwRequestError;

/* What a command takes: its options and which of them are flags (on or off, no value). */
typedef struct {
  const char *command;         /* "plan" */
  const char *const *options;  /* NULL-terminated, without dashes */
  const char *const *flags;    /* the options among them that take no value */
} StwRequestKind;

/* The kinds of request the library resolves. */
extern const StwRequestKind stw_request_plan_kind;
extern const StwRequestKind stw_request_compare_kind;
extern const StwRequestKind stw_request_minmem_kind;
extern const StwRequestKind stw_request_whatif_kind;
extern const StwRequestKind stw_request_capacity_kind;
extern const StwRequestKind stw_request_synth_kind;

typedef struct StwRequest StwRequest;

/* An empty request of KIND (static; it must outlive the request). */
StwRequest *stw_request_new(const StwRequestKind *kind);
void stw_request_free(StwRequest *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwRequest, stw_request_free)

/* Whether R's kind takes OPTION. */
gboolean stw_request_takes(const StwRequest *r, const char *option);
/* Gives OPTION the value TEXT (NULL: not given), as a command line does. */
void stw_request_set(StwRequest *r, const char *option, const char *text);
/* Turns the flag OPTION on or off. */
void stw_request_set_flag(StwRequest *r, const char *option, gboolean on);
/* The members of JSON, an object (NULL or "": none), as options: strings as they are, whole
 * numbers as their digits, other numbers as C's %.17g, true and false for flags, null as not
 * given. FALSE on an unknown member, a value of another type, or text that is no JSON object. */
gboolean stw_request_set_json(StwRequest *r, const char *json, GError **error);
/* OPTION's value as given; NULL when it was not (for a flag: "1" when on). */
const char *stw_request_get(const StwRequest *r, const char *option);

/* TEXT, the value of OPTION (named with its dashes, "--gpu", for the message), as a size ("4GiB",
 * "1.5 GB", "4096"), a positive budget, a whole number in [MIN, MAX], one of NAMES (an enum's
 * NULL-terminated name table; any case), or a number in [MIN, MAX]. Each leaves *OUT as it was
 * when TEXT is NULL. The CLI's parsers of other options are these too. */
gboolean stw_option_size(const char *option, const char *text, guint64 *out, GError **error);
gboolean stw_option_budget(const char *option, const char *text, guint64 *out, GError **error);
gboolean stw_option_count(const char *option, const char *text, guint64 min, guint64 max,
                          guint64 *out, GError **error);
gboolean stw_option_enum(const char *option, const char *text, const char *const *names,
                         int *out, GError **error);
gboolean stw_option_number(const char *option, const char *text, double min, double max,
                           double *out, GError **error);

/* A comma list of NAMES, or "all" (TEXT NULL: all), appended to OUT (ints); a comma list of
 * whole numbers from 1 to MAX appended to OUT (guint64s; TEXT NULL: none). */
gboolean stw_option_enum_list(const char *option, const char *text, const char *const *names,
                              GArray *out, GError **error);
gboolean stw_option_count_list(const char *option, const char *text, guint64 max, GArray *out,
                               GError **error);

/* The same parsers of a request's OPTION (named without dashes). */
gboolean stw_request_size(const StwRequest *r, const char *option, guint64 *out, GError **error);
gboolean stw_request_budget(const StwRequest *r, const char *option, guint64 *out,
                            GError **error);
gboolean stw_request_count(const StwRequest *r, const char *option, guint64 min, guint64 max,
                           guint64 *out, GError **error);
gboolean stw_request_enum(const StwRequest *r, const char *option, const char *const *names,
                          int *out, GError **error);
gboolean stw_request_number(const StwRequest *r, const char *option, double min, double max,
                            double *out, GError **error);

/* The planner's options every planning command shares, for trace T (NULL: traces made later):
 * the hardware profile ("hw": else T's device where stowage has its profile, else the default),
 * host memory ("cpu"), the reserve, the world ("gpus", "nodes"; else T's world size) and its
 * topology. */
gboolean stw_request_planning(const StwRequest *r, const StwTrace *t, StwPlannerOptions *o,
                              GError **error);
/* FALSE, saying "COMMAND: --OPTION SIZE is required", when OPTION (a size) was not given. */
gboolean stw_request_require(const StwRequest *r, const char *option, GError **error);
/* A GPU budget from OPTION (required): positive, and within the profile's GPU memory unless the
 * request says "beyond-device". */
gboolean stw_request_gpu_budget(const StwRequest *r, const char *option,
                                const StwPlannerOptions *o, guint64 *out, GError **error);
/* FALSE, naming OPTION, when BYTES is more than the profile's GPU has and the request does not
 * say "beyond-device". */
gboolean stw_request_on_device(const StwRequest *r, const char *option,
                               const StwPlannerOptions *o, guint64 bytes, GError **error);
/* LoRA for a model synthesized from a request: "lora" (a rank, 1 to 65536) into SO's lora_rank,
 * "lora-targets" (borrowed from R: it must outlive SO) into its lora_targets. */
gboolean stw_request_lora(const StwRequest *r, StwSynthOptions *so, GError **error);
/* How the loop of a model synthesized from a request runs: where it keeps its gradients,
 * "gradients" "device" (the default), "host" or "host-via-device" into SO's host_gradients, its
 * collectives, "collectives" "overlapped" (the default) or "blocking" into SO's collectives, and
 * DeepSpeed's "reduce-bucket-size" and "sub-group-size" (elements; none: DeepSpeed's defaults;
 * the synthesis refuses them without its step) into SO's, and how each rank builds its model,
 * "init" "sharded" (the default), "host" or "host-fp32", into SO's init. */
gboolean stw_request_loop(const StwRequest *r, StwSynthOptions *so, GError **error);
/* What `stowage whatif` sweeps: "trace" (a file) or "model" (or "model-config", a file) with
 * "batch" (a comma list), "seq", "dtype", "attention", "checkpointing", "lora", "lora-targets";
 * "gpu" (budgets:
 * FROM..TO:STEP or a comma list, each on the device), "policy" (a comma list, or all),
 * "chunk-size" (a comma list; default: search) and the planning options. OUT is the caller's,
 * cleared with stw_whatif_sweep_clear (also on failure). */
gboolean stw_request_whatif(const StwRequest *r, StwWhatifSweep *out, GError **error);
/* The same for TRACE, in memory (no "trace" nor "model" in R): OUT borrows it, which must
 * outlive OUT. */
gboolean stw_request_whatif_trace(const StwRequest *r, const StwTrace *trace,
                                  StwWhatifSweep *out, GError **error);

/* The trace `stowage synth` writes: "model" (a zoo name or a file) or "model-config" (a file),
 * "batch" (default 1), "seq", "dtype", "checkpointing", "attention", "kernels", "loss", "lora",
 * "lora-targets" as whatif --model reads them, "freeze" (globs), "hw" (default
 * STW_HARDWARE_DEFAULT) and "memory" (the device memory it records); the caller's, or NULL with
 * ERROR (STW_REQUEST_ERROR_USAGE for options that do not fit the model or the hardware). */
StwTrace *stw_request_synth(const StwRequest *r, GError **error);
/* What `stowage minmem` asks for: stw_request_planning, the policy ("policy", default stowage)
 * into *POLICY, the slowdown allowed ("slowdown", a percentage such as "10%" or "10"; default
 * 10%) into *ALLOWED as a fraction; with "host" the GPU budget ("gpu", default all the
 * profile's) into O's budgets, "cpu" refused (the host budget is what is searched). */
gboolean stw_request_minmem(const StwRequest *r, const StwTrace *t, StwPlannerOptions *o,
                            StwPolicy *policy, double *allowed, GError **error);
/* The minmem R asks for, run: the GPU budget searched (stw_whatif_minmem), or with "host" the
 * host budget at O's GPU budget (stw_whatif_minmem_host). */
gboolean stw_request_minmem_run(const StwRequest *r, const StwTrace *t,
                                const StwPlannerOptions *o, StwPolicy policy, double allowed,
                                StwMinmem *out, GError **error);

/* What `stowage capacity` asks for: "family" (required), "hidden" (with gpt), "batch", "seq",
 * "no-checkpointing", "attention", "dtype" (default bf16, fp16 where the GPU has none), "lora"
 * and "lora-targets" (each model LoRA-tuned), "policy"
 * (a comma list, or all) and the planning options. OUT is the caller's, cleared with
 * stw_capacity_query_clear (also on failure). */
gboolean stw_request_capacity(const StwRequest *r, StwCapacityQuery *out, GError **error);

/* What `stowage plan` asks for: stw_request_planning and the budget ("gpu"), the policy, its
 * objective, the chunk size, "oversized", and the options of one policy ("gemini-fraction",
 * "prefetch-bucket"), refused when the policy would ignore them. */
gboolean stw_request_plan(const StwRequest *r, const StwTrace *t, StwPlannerOptions *o,
                          GError **error);

STW_END_DECLS

#endif
