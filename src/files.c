/* files.c — bounded reads and atomic writes of whole files; see files.h. */
#include "config.h"

#include <stowage/files.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

G_DEFINE_QUARK(stw-files-error-quark, stw_files_error)

gboolean
stw_file_read(const char *file, gsize max_bytes, char **text_out, gsize *len_out, GError **error)
{
  GStatBuf st;
  if (g_stat(file, &st) != 0) {
    int e = errno;
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO, "%s: cannot open: %s", file,
                g_strerror(e));
    return FALSE;
  }
  if (!S_ISREG(st.st_mode)) {
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_LIMIT, "%s: not a regular file", file);
    return FALSE;
  }
  if ((guint64)st.st_size > max_bytes) {
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_LIMIT,
                "%s: file is %" G_GUINT64_FORMAT " bytes, more than the limit of %"
                G_GSIZE_FORMAT " bytes for this kind of file", file, (guint64)st.st_size,
                max_bytes);
    return FALSE;
  }
  GError *local = NULL;
  if (!g_file_get_contents(file, text_out, len_out, &local)) {
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO, "%s: cannot read: %s", file,
                local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}

gboolean
stw_file_write_atomic(const char *file, const char *text, gsize len, GError **error)
{
  if (strcmp(file, "-") == 0) {
    if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
      g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO,
                  "cannot write to standard output: %s", g_strerror(errno));
      return FALSE;
    }
    return TRUE;
  }
  GError *local = NULL;
  /* test hook: a full disk, as the tests of docs/bad-input.md need one */
  if (g_getenv("STOWAGE_FAULT_WRITE") != NULL) {
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO,
                "%s: cannot write: No space left on device (injected by STOWAGE_FAULT_WRITE)",
                file);
    return FALSE;
  }
  /* GLib writes a temporary beside FILE, fsyncs it and renames it over FILE; on any failure
   * the temporary is removed and FILE is left as it was. */
  if (!g_file_set_contents_full(file, text, (gssize)len,
                                G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_DURABLE,
                                0644, &local)) {
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO, "%s: cannot write: %s", file,
                local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}
