/* import-detect.c — which of PyTorch's profiler files a file is, by its first bytes. */
#include "config.h"

#include <stowage/import.h>

#include "json-stream.h"

#include <gio/gio.h>
#include <string.h>

#define HEAD_BYTES (64u << 10)

/* The first bytes of FILE's content (decompressed), NUL-terminated. */
static char *
head_of(const char *file, gsize *len_out, GError **error)
{
  g_autoptr(GInputStream) in = stw_json_stream_open(file, error);
  if (in == NULL)
    return NULL;
  GError *local = NULL;
  char *buf = g_malloc(HEAD_BYTES + 1);
  gsize len = 0;
  if (!g_input_stream_read_all(in, buf, HEAD_BYTES, &len, NULL, &local)) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_KIND, "%s: cannot be read: %s%s",
                file, local->message,
                stw_json_stream_is_gzip(file) ? " (a corrupt gzip file?)" : "");
    g_error_free(local);
    g_free(buf);
    return NULL;
  }
  buf[len] = '\0';
  *len_out = len;
  return buf;
}

StwImportKind
stw_import_detect(const char *file, GError **error)
{
  gsize len = 0;
  g_autofree char *head = head_of(file, &len, error);
  if (head == NULL)
    return STW_IMPORT_AUTO;
  const char *p = head;
  while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
    p++;
  if (*p == '[')
    return STW_IMPORT_TIMELINE;
  if (*p == '{') {
    if (strstr(p, "\"traceEvents\"") != NULL)
      return STW_IMPORT_KINETO;
    if (strstr(p, "\"nodes\"") != NULL && strstr(p, "\"schema\"") != NULL)
      return STW_IMPORT_ET;
    /* Kineto writes deviceProperties before traceEvents: a long list can hide it */
    if (strstr(p, "\"schemaVersion\"") != NULL || strstr(p, "\"deviceProperties\"") != NULL)
      return STW_IMPORT_KINETO;
  }
  g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_KIND,
              "%s: not a PyTorch profiler file: expected a Kineto trace (an object with "
              "\"traceEvents\"), an execution trace (\"schema\" and \"nodes\") or a memory "
              "timeline (an array of [time, action, bytes, category] rows)%s",
              file, len == 0 ? "; the file is empty" : "");
  return STW_IMPORT_AUTO;
}

