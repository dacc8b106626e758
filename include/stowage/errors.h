/* errors.h — the one way stowage reports a problem in a file, and the library's error contract.
 *
 * Every module has its own GError domain (STW_TRACE_ERROR, STW_PLAN_ERROR, ...); messages about
 * a file always start with the file's name, then where in it, then what was expected.
 *
 * The contract, for every public function that can fail: it returns FALSE (NULL for one that
 * returns a new object or string, -1 for an index) and sets its GError ** (when not NULL); a
 * function that cannot fail says nothing of errors. The domains a function may set are named in
 * its header's comment; beside its module's own, any reader of a file may set STW_FILES_ERROR
 * (the file: missing, unreadable, not regular, too large, or an output that cannot be written)
 * and STW_JSON_ERROR (its text: not JSON, or not what the format expects). A request's values
 * are STW_REQUEST_ERROR (request.h). The codes say what kind of failure it is; the messages are
 * for people and are not parsed.
 */
#ifndef STW_ERRORS_H
#define STW_ERRORS_H

#include <glib.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_CORE
#error "<stowage/errors.h> belongs to the core: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

/* A JSON file's text: every format's reader may set it, with the file's name and the path
 * inside it in the message. */
#define STW_JSON_ERROR (stw_json_error_quark())
GQuark stw_json_error_quark(void);

typedef enum {
  STW_JSON_ERROR_SYNTAX,  /* not JSON, or an empty file */
  STW_JSON_ERROR_INVALID, /* JSON, but not what the format expects */
} StwJsonError;

/* Sets ERROR to "FILE: MESSAGE" in DOMAIN with CODE. Returns FALSE, so that a check can
 * `return stw_fail_file(...)`. */
gboolean stw_fail_file(GError **error, GQuark domain, int code, const char *file,
                       const char *fmt, ...) G_GNUC_PRINTF(5, 6);
/* Sets ERROR to MESSAGE in DOMAIN with CODE, for what is not a file's. Returns FALSE. */
gboolean stw_fail(GError **error, GQuark domain, int code, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

STW_END_DECLS

#endif
