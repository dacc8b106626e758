/* cli.h — what every `stowage` subcommand shares: exit statuses, messages, tables.
 *
 * Only the CLI prints and decides exit statuses: 0 success, 1 failure (bad input file, I/O),
 * 2 usage (unknown option, model, profile, or a malformed value on the command line).
 */
#ifndef STW_CLI_H
#define STW_CLI_H

#include <glib.h>

#include "check.h"
#include "hardware.h"
#include "planner.h"
#include "trace.h"

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

/* Prints "stowage: MESSAGE" to stderr and returns STATUS. */
int stw_cli_fail(int status, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Prints ERROR's message, frees it, and returns the status its domain and code call for. */
int stw_cli_error(GError *error);
/* Parses ARGV with CTX (usage errors exit 2 with a hint); TRUE on success. */
gboolean stw_cli_parse(GOptionContext *ctx, int *argc, char ***argv, const char *command);

/* Aligned text tables: columns right-aligned unless the header starts with '<'. */
typedef struct StwTable StwTable;
StwTable *stw_table_new(guint n_cols, ...);
void stw_table_row(StwTable *t, ...);  /* N_COLS strings, copied */
void stw_table_print(StwTable *t, FILE *out);
void stw_table_free(StwTable *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwTable, stw_table_free)

/* Parses a whole number for OPTION in [MIN, MAX]; prints a usage error and returns FALSE. */
gboolean stw_cli_parse_count(const char *text, const char *option, guint64 min, guint64 max,
                             guint64 *out);

/* Parses a size for OPTION (NULL text: leaves *OUT); prints a usage error and returns FALSE. */
gboolean stw_cli_parse_size(const char *text, const char *option, guint64 *out);

/* The hardware profile NAME, or when NAME is NULL the one the trace was made on (when stowage
 * ships it), else the default. Prints the error and returns FALSE, setting *STATUS. */
gboolean stw_cli_hardware(const char *name, const char *trace_device, StwHardware *hw,
                          int *status);

/* What plan, compare and minmem share: load the trace FILE, resolve the hardware profile
 * (HW_NAME, else the trace's device), and set the planner's defaults and its --cpu and --reserve
 * budgets. Prints the error and returns FALSE with *STATUS set. The trace goes to *TRACE_OUT. */
gboolean stw_cli_planner_setup(const char *file, const char *hw_name, const char *cpu,
                               const char *reserve, StwTrace **trace_out,
                               StwPlannerOptions *options, int *status);

/* What check, simulate and train share: load PLAN_FILE and its trace (TRACE_FILE, or when NULL
 * the file the plan names) and prove the plan sound for it (REPORT may be NULL). Prints the error
 * and returns FALSE with *STATUS set; the plan and trace go to *PLAN_OUT and *TRACE_OUT. */
gboolean stw_cli_load_checked_plan(const char *plan_file, const char *trace_file,
                                   StwPlan **plan_out, StwTrace **trace_out,
                                   StwCheckReport *report, int *status);

/* "124,439,808" */
char *stw_cli_group_digits(guint64 v);

G_END_DECLS

#endif
