/* cli.h — what every `stowage` subcommand shares: exit statuses, messages, tables.
 *
 * Only the CLI prints and decides exit statuses: 0 success, 1 failure (bad input file, I/O),
 * 2 usage (unknown option, model, profile, or a malformed value on the command line).
 */
#ifndef STW_CLI_H
#define STW_CLI_H

#include <glib.h>

#include <stowage/check.h>
#include <stowage/comm.h>
#include <stowage/files.h>
#include <stowage/hardware.h>
#include <stowage/planner.h>
#include <stowage/request.h>
#include <stowage/simulate.h>
#include <stowage/trace.h>


G_BEGIN_DECLS

enum { STW_EXIT_OK = 0, STW_EXIT_FAILURE = 1, STW_EXIT_USAGE = 2 };

typedef int (*StwCommandFunc)(int argc, char **argv);

int stw_cmd_models(int argc, char **argv);
int stw_cmd_hardware(int argc, char **argv);
int stw_cmd_synth(int argc, char **argv);
int stw_cmd_inspect(int argc, char **argv);
int stw_cmd_plan(int argc, char **argv);
int stw_cmd_check(int argc, char **argv);
int stw_cmd_simulate(int argc, char **argv);
int stw_cmd_compare(int argc, char **argv);
int stw_cmd_whatif(int argc, char **argv);
int stw_cmd_minmem(int argc, char **argv);
int stw_cmd_capacity(int argc, char **argv);
int stw_cmd_probe(int argc, char **argv);
int stw_cmd_train(int argc, char **argv);
int stw_cmd_profile(int argc, char **argv);
int stw_cmd_import(int argc, char **argv);

/* Prints "stowage: MESSAGE" to stderr and returns STATUS. */
int stw_cli_fail(int status, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* On several ranks, messages name the rank they come from. */
void stw_cli_set_rank(guint32 rank, guint32 world);

/* How long a rank waits for the others in a collective before it says one is gone. */
#define STW_CLI_COLLECTIVE_TIMEOUT_MS (10 * 60 * 1000)

/* Started by mpirun (or a launcher like it) with several ranks: *COMM the ranks' MPI
 * communicator, and messages name the rank from then on; else *COMM NULL, one rank. FALSE with
 * *STATUS when MPI cannot start (a build without it among the reasons), COMMAND in the message. */
gboolean stw_cli_start_ranks(const char *command, StwComm **comm, int *status);
/* Prints ERROR's message, frees it, and returns the status its domain and code call for. */
int stw_cli_error(GError *error);
/* Parses ARGV with CTX (usage errors exit 2 with a hint); TRUE on success. */
gboolean stw_cli_parse(GOptionContext *ctx, int *argc, char ***argv, const char *command);

/* Aligned text tables: columns right-aligned unless the header starts with '<'. */
typedef struct StwTable StwTable;
StwTable *stw_table_new(guint n_cols, ...);
void stw_table_row(StwTable *t, ...);  /* N_COLS strings, copied */
/* the same from arrays: N_COLS headers, or N_COLS cells */
StwTable *stw_table_new_v(guint n_cols, const char *const *heads);
void stw_table_row_v(StwTable *t, const char *const *cells);
void stw_table_print(StwTable *t, FILE *out);
guint stw_table_rows(const StwTable *t); /* below the header */
void stw_table_free(StwTable *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwTable, stw_table_free)

/* Parses a whole number for OPTION in [MIN, MAX]; prints a usage error and returns FALSE. */
gboolean stw_cli_parse_count(const char *text, const char *option, guint64 min, guint64 max,
                             guint64 *out);

/* Parses TEXT (NULL: leaves *OUT) as one of NAMES (NULL-terminated, an enum's name table) for
 * OPTION, without regard to case: *OUT gets its index. Prints "OPTION: 'TEXT' is not one of
 * A, B, C" (a usage error) and returns FALSE otherwise. */
gboolean stw_cli_parse_enum(const char *text, const char *option, const char *const *names,
                            int *out);
/* A comma list of NAMES, or "all" (NULL text: all), appended to OUT as ints. */
gboolean stw_cli_parse_enum_list(const char *text, const char *option, const char *const *names,
                                 GArray *out);

/* Parses a size for OPTION (NULL text: leaves *OUT); prints a usage error and returns FALSE. */
gboolean stw_cli_parse_size(const char *text, const char *option, guint64 *out);
/* As stw_cli_parse_size, for a memory budget: 0 is refused as a usage error too. */
gboolean stw_cli_parse_budget(const char *text, const char *option, guint64 *out);

/* The hardware profile NAME, or when NAME is NULL the one the trace was made on (when stowage
 * ships it), else the default. Prints the error and returns FALSE, setting *STATUS. */
gboolean stw_cli_hardware(const char *name, const char *trace_device, StwHardware *hw,
                          int *status);

/* The planner options that plan, compare, whatif and minmem share, as the user typed them. */
typedef struct {
  char *hw_name; /* --hw: else the trace's device, else the default */
  char *cpu;     /* --cpu: host memory, all GPUs together */
  char *reserve; /* --reserve */
  char *gpus;    /* --gpus: else the trace's world size; per node with --nodes */
  char *nodes;   /* --nodes: the ranks spread over that many nodes */
  gboolean beyond_device; /* --beyond-device: GPU budgets above the profile's memory allowed */
  char *activations; /* --activations: the stowage policy's blocks */
  char *nvme;        /* --nvme: the storage tier's room for optimizer state */
  char *nvme_devices; /* --nvme-devices: the profile's storage with that many drives */
  char *storage;      /* --storage: another storage tier than the profile's (a preset or file) */
  char *optimizer_state; /* --optimizer-state: Adam's moments in fp32 or bf16 */
  char *pinned;          /* --pinned: host memory that may be page-locked for the copies */
  char *layout;          /* --layout: how several GPUs share the chunks: groups, shards or each
                          * policy's own */
  gboolean measured_times; /* --measured-times: a trace measured on another device keeps its
                            * times */
} StwCliPlanning;

void stw_cli_planning_clear(StwCliPlanning *p);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(StwCliPlanning, stw_cli_planning_clear)

/* Every text option is read as G_OPTION_ARG_FILENAME, which takes its bytes as given: the
 * string kind converts them from the locale's encoding and refuses a byte it cannot convert
 * ('８GiB' in the C locale) with a message that names no option. Each option's own parser then
 * says what it expected. */
#define STW_OPTION_TEXT G_OPTION_ARG_FILENAME

#define STW_CLI_PLANNING_ENTRIES(p)                                                              \
  { "hw", 0, 0, STW_OPTION_TEXT, &(p).hw_name,                                              \
    "hardware profile or file (default: the trace's device)", "PROFILE" },                      \
  { "cpu", 0, 0, STW_OPTION_TEXT, &(p).cpu,                                                 \
    "host memory for all GPUs together (default: the profile's, a node's, on each of --nodes)",   \
    "SIZE" },                     \
  { "reserve", 0, 0, STW_OPTION_TEXT, &(p).reserve, "GPU memory kept free (default 0)",     \
    "SIZE" },                                                                                   \
  { "gpus", 0, 0, STW_OPTION_TEXT, &(p).gpus,                                               \
    "data-parallel GPUs sharing the model (default: the trace's world size)",                   \
    "N" },                                                                                      \
  { "nodes", 0, 0, STW_OPTION_TEXT, &(p).nodes,                                             \
    "nodes of --gpus GPUs each (default 1; --gpus defaults to the profile's node)", "M" },     \
  { "beyond-device", 0, 0, G_OPTION_ARG_NONE, &(p).beyond_device,                               \
    "allow a GPU budget above the profile's memory (a GPU that does not exist)", NULL },         \
  { "activations", 0, 0, STW_OPTION_TEXT, &(p).activations,                                    \
    "the stowage policy's blocks: auto (default: each kept, recomputed or offloaded, as the "    \
    "plan is fastest), keep (as the trace has them), recompute (in backward) or offload (to "    \
    "host memory)", "A" },                                                                      \
  { "nvme", 0, 0, STW_OPTION_TEXT, &(p).nvme,                                                   \
    "room on the profile's storage tier (probe --nvme) for the optimizer state of CPU Adam "     \
    "chunks that host memory cannot hold, and then their parameters (default: none)", "SIZE" }, \
  { "nvme-devices", 0, 0, STW_OPTION_TEXT, &(p).nvme_devices,                                   \
    "with --nvme: the profile's storage with N drives of its kind, requests striped over them "  \
    "(bandwidth and capacity scaled from its own count)", "N" },                                \
  { "storage", 0, 0, STW_OPTION_TEXT, &(p).storage,                                             \
    "with --nvme: the storage tier a shipped storage preset's (nvme-gen3, nvme-gen4, "          \
    "nvme-gen5: one drive each) or a file's, not the profile's", "PRESET" },                    \
  { "optimizer-state", 0, 0, STW_OPTION_TEXT, &(p).optimizer_state,                             \
    "Adam's moments in fp32 or bf16 (rounded stochastically; the master weights stay fp32) "    \
    "(default: the trace's, fp32 unless it says)", "fp32|bf16" },                                \
  { "pinned", 0, 0, STW_OPTION_TEXT, &(p).pinned,                                                \
    "host memory that may be pinned (page-locked) for the copies, all GPUs together: what they "   \
    "touch beyond it is copied at the profile's pageable speed (default: all they need)",        \
    "SIZE" },                                                                                   \
  { "layout", 0, 0, STW_OPTION_TEXT, &(p).layout,                                                \
    "how several GPUs share the chunks: groups (PatrickStar's: whole chunks, each GPU's own "     \
    "gathered with the others' of its group; plan's default, the layout train replays), shards "  \
    "(ZeRO-3's and Gemini's: each chunk split across the GPUs, gathered alone; the chunk size a "  \
    "whole chunk's) or policy (each policy's system's own: shards for zero-infinity, "            \
    "gemini-static and zero-offload at stage 3, groups for the others; the default of compare, "  \
    "whatif, minmem and capacity)", "L" }

/* --measured-times, for the commands that plan a trace given (plan, compare, minmem, whatif) */
#define STW_CLI_MEASURED_TIMES_ENTRY(p)                                                         \
  { "measured-times", 0, 0, G_OPTION_ARG_NONE, &(p).measured_times,                             \
    "a trace measured on another device than the profile's (a CPU's) keeps the op times "        \
    "measured there (default: re-timed for the profile from the iteration's FLOPs)", NULL }

/* Into R, every option of ENTRIES (a command's table, parsed) that R's kind takes, by its long
 * name: text as given, flags on or off. The table and the request name options alike. */
void stw_cli_request_from_entries(StwRequest *r, const GOptionEntry *entries);

/* A request of KIND holding the shared options P was given (the library parses and checks it:
 * request.h). */
StwRequest *stw_cli_planning_request(const StwCliPlanning *p, const StwRequestKind *kind);

/* Sets O from R's shared options for trace T (NULL: traces made later; stw_request_planning).
 * Prints the error and returns FALSE with *STATUS set. */
gboolean stw_cli_planning_options(const StwRequest *r, const StwTrace *t, StwPlannerOptions *o,
                                  int *status);

/* What plan, compare and minmem share: load the trace FILE and set O from R's shared options
 * (without --gpus, the trace's world size). Prints the error and returns FALSE with *STATUS
 * set. The trace goes to *TRACE_OUT. */
gboolean stw_cli_planner_setup(const char *file, const StwRequest *r, StwTrace **trace_out,
                               StwPlannerOptions *options, int *status);

/* What check, simulate and train share: load PLAN_FILE and its trace (TRACE_FILE, or when NULL
 * the file the plan names) and prove the plan sound for it (REPORT and SIM may be NULL: what
 * check recomputed, and its simulation in detail). Prints the error and returns FALSE with
 * *STATUS set; the plan and the trace as recorded go to *PLAN_OUT and *TRACE_OUT (the one its
 * schedule runs over, where the plan recomputes blocks, is stw_plan_trace's). */
gboolean stw_cli_load_checked_plan(const char *plan_file, const char *trace_file,
                                   StwPlan **plan_out, StwTrace **trace_out,
                                   StwCheckReport *report, StwSimulation *sim, int *status);

/* FALSE, with a usage error "COMMAND: OPTION goes with NEEDS", when OPTION was GIVEN but what it
 * needs is not SATISFIED: an option that would be ignored is refused instead. */
gboolean stw_cli_option_needs(const char *command, const char *option, gboolean given,
                              const char *needs, gboolean satisfied);

/* Folds --model-config FILE into --model: *MODEL becomes FILE as a path (a model config file,
 * stowage's or a Hugging Face config.json, whatever its name). FALSE, with a usage error, when
 * both are given. */
gboolean stw_cli_model_option(const char *command, char **model, char **model_config);

/* The help line of --model-config, one for every command that takes a model. */
#define STW_CLI_MODEL_CONFIG_HELP \
  "a model config file: stowage's format or a Hugging Face config.json (docs/models.md)"

/* A file a command reads or writes, by the option that names it. */
typedef struct {
  const char *option;  /* "--output", "the trace", ... for messages */
  const char *path;    /* NULL: not given */
} StwCliFile;

/* FALSE, with a usage error printed, when one of OUTPUTS is the same file as one of INPUTS (the
 * same inode; "-" is standard output): writing it would replace what the command reads. */
gboolean stw_cli_outputs_apart(const char *command, const StwCliFile *inputs, gsize n_inputs,
                               const StwCliFile *outputs, gsize n_outputs);

/* The name a plan written to PLAN_FILE records for its trace TRACE_FILE: relative to the plan's
 * own folder, so that the pair can move together; absolute when the plan goes to stdout. */
char *stw_cli_trace_name_for_plan(const char *trace_file, const char *plan_file);

/* "124,439,808" */
char *stw_cli_group_digits(guint64 v);
/* A point's throughput as table cells (tokens/s; MFU), "-" where the trace does not say its
 * batch (whatif.h writes it as JSON). */
void stw_cli_throughput_cells(const StwThroughput *th, char **tokens_per_s, char **mfu);
/* A slowdown (StwWhatifPoint.slowdown) as a table cell ("1.25x"; "-" where it is no ratio). */
char *stw_cli_slowdown_cell(double slowdown);

/* The host memory a plan needs, for people: "2.65 GiB (662.57 MiB of chunks, 2.00 GiB for the
 * process)", the processes of all ranks together, the chunks' figure with the offloaded
 * activations and the GRADIENTS the loop holds there (stw_trace_host_gradient_bytes) where the
 * plan has them, and how much of it is STAGING (the storage tier's buffers:
 * stw_plan_staging_bytes) where there is some. */
char *stw_cli_host_figure(const StwPlan *p, guint64 staging, guint64 gradients);
/* What a prediction on HW assumes of T's op times where they were measured on another device
 * (stw_trace_measured_elsewhere), in one line for people: re-timed for HW (stw_retiming), or
 * KEPT as measured (--measured-times, or a plan that kept them), or kept as they cannot be
 * re-timed, and why; NULL where they were measured on HW's device. */
char *stw_cli_measured_elsewhere(const StwTrace *t, const StwHardware *hw, gboolean kept);
/* The host HW assumes, in one line for people: its CPU (cpu.model), CPU Adam's rate a rank and
 * the host memory's bandwidth. */
char *stw_cli_host_said(const StwHardware *hw);
/* How T's optimizer ops time the GPU's step where it is not one fused pass (the trace's
 * model.optimizer_impl), in words; NULL where it is. */
char *stw_cli_optimizer_assumed(const StwTrace *t);
/* T's model in words: its name and shape, with BATCH its batch and sequence, then its dtype,
 * autocast, checkpointing, attention, kernels, loss, optimizer and collectives ("llama3.2-1b:
 * llama, 16 layers, hidden 2048, 32 heads (8 key/value); batch 1 x seq 1024, fp16, naive
 * attention, eager kernels"). */
char *stw_cli_model_said(const StwTrace *t, gboolean batch);
/* What T's loop does with its collectives on WORLD ranks, where it holds the compute stream:
 * a new string, or NULL. */
char *stw_cli_collectives_assumed(const StwTrace *t, guint32 world);
/* What T's loop holds beside the model on each of WORLD GPUs (stw_trace_loop_buffers), in one
 * line: a new string, or NULL where it holds none. */
char *stw_cli_loop_buffers_said(const StwTrace *t, guint32 world);
/* How the N_POLICIES POLICIES planned with O on WORLD GPUs share the chunks, in one line, where
 * it is not what train replays for what they emulate: the chunks split across the GPUs (shards,
 * for every policy asked, or each policy's own for those whose systems split them), or an
 * emulation of a system that splits them kept in PatrickStar's groups. NULL on one GPU or where
 * every plan is in groups and no policy's system splits its chunks. */
char *stw_cli_layout_assumed(const StwPlannerOptions *o, guint32 world, const StwPolicy *policies,
                             guint n_policies);
/* What bounds plan P's iteration, in words, with its busy time: the engine busiest of compute,
 * the copies each way, CPU Adam, the storage tier and the collectives. */
char *stw_cli_bound_by(const StwPlan *p);

/* A rate for people: whole and grouped from 100 up ("12,345"), one decimal below ("42.5"). */
char *stw_cli_rate_format(double v);

G_END_DECLS

#endif
