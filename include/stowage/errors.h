/* errors.h — the one way stowage reports a problem in a file.
 *
 * Every module has its own GError domain (STW_TRACE_ERROR, STW_PLAN_ERROR, ...); messages about
 * a file always start with the file's name, then where in it, then what was expected.
 */
#ifndef STW_ERRORS_H
#define STW_ERRORS_H

#include <glib.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_CORE
#error "<stowage/errors.h> belongs to the core: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

/* Sets ERROR to "FILE: MESSAGE" in DOMAIN with CODE. Returns FALSE, so that a check can
 * `return stw_fail_file(...)`. */
gboolean stw_fail_file(GError **error, GQuark domain, int code, const char *file,
                       const char *fmt, ...) G_GNUC_PRINTF(5, 6);

STW_END_DECLS

#endif
