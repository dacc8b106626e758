/* import.c — which PyTorch file this is, and the import of a Kineto trace with the files of
 * the same run; see import.h. */
#include "config.h"

#include <stowage/import.h>

#include "import-internal.h"
#include "json-stream.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

#define HEAD_BYTES (64u << 10)

/* The first bytes of FILE's content (decompressed), NUL-terminated. */
static char *
head_of(const char *file, gsize *len_out, GError **error)
{
  g_autoptr(GFile) gf = g_file_new_for_path(file);
  GError *local = NULL;
  g_autoptr(GFileInputStream) fin = g_file_read(gf, NULL, &local);
  if (fin == NULL) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_KIND, "%s: cannot open: %s", file,
                local->message);
    g_error_free(local);
    return NULL;
  }
  g_autoptr(GInputStream) in = NULL;
  if (stw_json_stream_is_gzip(file)) {
    g_autoptr(GZlibDecompressor) z = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
    in = g_converter_input_stream_new(G_INPUT_STREAM(fin), G_CONVERTER(z));
  } else {
    in = G_INPUT_STREAM(g_object_ref(fin));
  }
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
  GStatBuf st;
  if (g_stat(file, &st) != 0 || !S_ISREG(st.st_mode)) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_KIND,
                "%s: %s", file, g_stat(file, &st) != 0 ? "cannot open: no such file"
                                                       : "not a regular file");
    return STW_IMPORT_AUTO;
  }
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

StwTrace *
stw_import(const char *file, const StwImportOptions *options, StwImportReport *report,
           GError **error)
{
  StwImportReport local_report;
  StwImportReport *rep = report != NULL ? report : &local_report;
  memset(rep, 0, sizeof *rep);
  StwImportKind kind = stw_import_detect(file, error);
  if (kind == STW_IMPORT_AUTO)
    return NULL;
  if (kind != STW_IMPORT_KINETO) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_KIND,
                "%s: this is %s, which has no %s: import the Kineto trace of the same run and "
                "give this file with %s", file,
                kind == STW_IMPORT_ET ? "an execution trace" : "a memory timeline",
                kind == STW_IMPORT_ET ? "durations or memory" : "ops",
                kind == STW_IMPORT_ET ? "--et" : "--memory-timeline");
    return NULL;
  }
  return stw_import_kineto(file, options, rep, error);
}
