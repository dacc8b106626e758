/* errors.c — see errors.h. */
#include "config.h"

#include <stowage/errors.h>

gboolean
stw_fail(GError **error, GQuark domain, int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error_literal(error, domain, code, msg);
  return FALSE;
}

gboolean
stw_fail_file(GError **error, GQuark domain, int code, const char *file, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, domain, code, "%s: %s", file, msg);
  return FALSE;
}
