/* json.h — the one place where stowage's file formats meet cJSON.
 *
 * Every format (trace, plan, hardware profile, model config) is read through a StwJsonReader,
 * which knows the file name and the JSON path of the value being read, so that any error reads
 * "FILE: $.ops[12].params[3]: what was expected". Numbers are range-checked as they are read;
 * integers are exact only up to 2^53 (JSON numbers are doubles), which is the documented limit
 * of every integer field. Writers build cJSON trees and print them with stw_json_print_lines(),
 * which puts each element of a top-level array on its own line: compact, yet diffable. The
 * functions that turn one module's records into JSON for another format (a trace's model
 * section, a plan's hardware profile, `inspect --json`) are declared here too, so that no public
 * header needs cJSON.
 *
 * Internal to the library: not installed.
 */
#ifndef STW_JSON_H
#define STW_JSON_H

#include <cjson/cJSON.h>
#include <glib.h>

G_DEFINE_AUTOPTR_CLEANUP_FUNC(cJSON, cJSON_Delete)

#include <stowage/hardware.h>
#include <stowage/model.h>
#include <stowage/errors.h>
#include <stowage/summary.h>

G_BEGIN_DECLS

/* STW_JSON_ERROR is public: errors.h. */

/* The largest integer any stowage format holds: 2^53, exact in a double. */
#define STW_JSON_INT_MAX (G_GUINT64_CONSTANT(1) << 53)

typedef struct {
  const char *file;  /* for messages; not owned */
  GString *path;     /* "$", "$.ops[3]", ...: the value being read */
} StwJsonReader;

/* How large a document of one format may be, checked in one pass over the text before any tree
 * is built: a hostile file is refused in linear time and without memory beyond its own text.
 * Arrays are matched by their path with every index written "[]" ("$.ops[].params"). */
typedef struct {
  const char *path;  /* NULL ends a list */
  gsize max;         /* elements */
} StwJsonArrayLimit;

typedef struct {
  const char *format;                /* "stowage-trace", ...: another format named in the file
                                      * before a limit is met is said instead */
  gsize max_values;                  /* JSON values in the whole document */
  gsize max_array;                   /* elements of an array no rule names */
  const StwJsonArrayLimit *arrays;   /* may be NULL */
} StwJsonLimits;

/* The limits of a small document (a hardware profile, a model configuration). */
extern const StwJsonLimits stw_json_small_limits;

/* Reads FILE (a regular file of at most MAX_BYTES; errors of the reading are STW_FILES_ERROR)
 * and parses it within LIMITS. On success *ROOT_OUT owns the tree. */
gboolean stw_json_parse_file(const char *file, gsize max_bytes, const StwJsonLimits *limits,
                             cJSON **root_out, GError **error);
/* Parses TEXT of LEN bytes within LIMITS; FILE names it in messages. */
gboolean stw_json_parse_text(const char *file, const char *text, gsize len,
                             const StwJsonLimits *limits, cJSON **root_out, GError **error);

/* Reads a whole document: FN is handed a reader positioned at the root ("$") and fills OUT. */
typedef gboolean (*StwJsonReadFunc)(StwJsonReader *r, const cJSON *root, gpointer out,
                                    GError **error);
gboolean stw_json_read_text(const char *file, const char *text, gsize len,
                            const StwJsonLimits *limits, StwJsonReadFunc fn, gpointer out,
                            GError **error);
gboolean stw_json_read_file(const char *file, gsize max_bytes, const StwJsonLimits *limits,
                            StwJsonReadFunc fn, gpointer out, GError **error);

void stw_json_reader_init(StwJsonReader *r, const char *file);
void stw_json_reader_clear(StwJsonReader *r);

/* Path bookkeeping: push returns the length to restore with stw_json_pop. */
gsize stw_json_push_key(StwJsonReader *r, const char *key);
gsize stw_json_push_index(StwJsonReader *r, gsize index);
void stw_json_pop(StwJsonReader *r, gsize saved_len);

/* Sets ERROR to "FILE: PATH: MESSAGE" (INVALID) and returns FALSE. */
gboolean stw_json_fail(const StwJsonReader *r, GError **error, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
/* Like stw_json_fail for a member KEY of the current value. */
gboolean stw_json_fail_at(const StwJsonReader *r, const char *key, GError **error,
                          const char *fmt, ...) G_GNUC_PRINTF(4, 5);

/* Checks that OBJ's "format" member says FORMAT ("stowage-trace", ...) before anything else is
 * read, so that another of stowage's files given in its place is named for what it is ("this is
 * a stowage plan, not a trace") rather than refused member by member. */
gboolean stw_json_check_format(const StwJsonReader *r, const cJSON *obj, const char *format,
                               GError **error);

/* Checks that OBJ is an object whose keys are all in ALLOWED (NULL-terminated), none twice. */
gboolean stw_json_check_object(const StwJsonReader *r, const cJSON *obj,
                               const char *const *allowed, GError **error);

/* Member accessors. With REQUIRED false a missing member leaves *OUT unchanged and succeeds;
 * a present member of the wrong type or range always fails. */
gboolean stw_json_get_object(const StwJsonReader *r, const cJSON *obj, const char *key,
                             gboolean required, const cJSON **out, GError **error);
/* OBJ's member KEY, required: a pair of integers up to MAX, into OUT; else FALSE with ERROR
 * saying "expected WHAT" (e.g. "[first, last]: two op indices"). */
gboolean stw_json_get_pair(StwJsonReader *r, const cJSON *obj, const char *key, guint64 max,
                           const char *what, guint64 out[2], GError **error);
gboolean stw_json_get_array(const StwJsonReader *r, const cJSON *obj, const char *key,
                            gboolean required, gsize max_len, const cJSON **out, GError **error);
gboolean stw_json_get_string(const StwJsonReader *r, const cJSON *obj, const char *key,
                             gboolean required, gsize max_len, const char **out, GError **error);
gboolean stw_json_get_u64(const StwJsonReader *r, const cJSON *obj, const char *key,
                          gboolean required, guint64 min, guint64 max, guint64 *out,
                          GError **error);
gboolean stw_json_get_double(const StwJsonReader *r, const cJSON *obj, const char *key,
                             gboolean required, double min, double max, double *out,
                             GError **error);
gboolean stw_json_get_bool(const StwJsonReader *r, const cJSON *obj, const char *key,
                           gboolean required, gboolean *out, GError **error);
/* The current value (an array element, say) as an integer in [MIN, MAX]. */
gboolean stw_json_as_u64(const StwJsonReader *r, const cJSON *item, guint64 min, guint64 max,
                         guint64 *out, GError **error);

/* Returns the index of TEXT in NAMES (NULL-terminated) or fails naming the accepted values. */
gboolean stw_json_get_enum(const StwJsonReader *r, const cJSON *obj, const char *key,
                           gboolean required, const char *const *names, int *out,
                           GError **error);

/* Writers. Integers are written exactly (not through a double). */
cJSON *stw_json_u64(guint64 v);
void stw_json_add_u64(cJSON *obj, const char *key, guint64 v);
void stw_json_add_double(cJSON *obj, const char *key, double v);
cJSON *stw_json_u64_array(const guint32 *v, gsize n);
/* MOVES (StwActivationMove, trace.h) as a plan file holds them: [{"block", "out": [moment,
 * done], "in": [moment, done], "bytes"}] (src/activations.c). */
cJSON *stw_json_activation_moves(const GArray *moves);

/* Prints ROOT with one top-level key per line and one array element per line. */
char *stw_json_print_lines(const cJSON *root);
/* ROOT printed (FORMATTED: with cJSON's tabs and newlines, as the CLI's --json shows records)
 * into a new string the caller frees with g_free; ROOT is deleted. */
char *stw_json_take_text(cJSON *root, gboolean formatted);

/* ---- sections of one format inside another, and JSON outputs ------------------------------- */

/* Reads a config object (the members of docs/model-format.md) at R's current path. */
gboolean stw_model_config_read(StwJsonReader *r, const cJSON *obj, gboolean standalone,
                               StwModelConfig *out, GError **error);
/* Builds the members of a config object (STANDALONE adds "format" and "version"). */
cJSON *stw_model_config_to_json(const StwModelConfig *cfg, gboolean standalone);
/* Whether ROOT is a Hugging Face config.json (a "model_type", no "format"), and reads one
 * (model-hf.c). */
gboolean stw_model_config_is_hf(const cJSON *root);
gboolean stw_model_config_read_hf(StwJsonReader *r, const cJSON *root, StwModelConfig *out,
                                  GError **error);

/* Reads a profile object at R's current path (a plan embeds its profile). */
gboolean stw_hardware_read(StwJsonReader *r, const cJSON *obj, StwHardware *out,
                           GError **error);
/* The profile as a JSON object, in the file format (without description and sources). */
cJSON *stw_hardware_to_json(const StwHardware *hw);

/* The summary (summary.h) as the JSON object `stowage inspect --json` prints. */
cJSON *stw_trace_summary_to_json(const StwTrace *t, const StwTraceSummary *s);

/* Whether the text at P (before END) is the escape of a NUL character, \u0000: cJSON would end
 * the string there, so that two names differing after it become one; every reader refuses it. */
static inline gboolean
stw_json_is_nul_escape(const char *p, const char *end)
{
  return end - p >= 6 && p[0] == '\\' && p[1] == 'u' && p[2] == '0' && p[3] == '0' &&
         p[4] == '0' && p[5] == '0';
}

/* The message for a NUL escape in FILE, at WHERE ("line 3", "traceEvents[12]"). */
#define STW_JSON_NUL_MESSAGE "%s: %s: a NUL character (\\u0000) in a string, which no name or " \
                             "text of stowage's may hold"

G_END_DECLS

#endif
