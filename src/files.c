/* files.c — bounded reads and atomic writes of whole files; see files.h. */
#include "config.h"

#include <stowage/files.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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

/* Temporaries are FILE.stowage-tmp-PID-XXXXXX: a save that was killed leaves one behind, and the
 * next save of FILE removes those whose writer no longer runs. */
#define TMP_TAG ".stowage-tmp-"

/* Removes the temporaries of FILE left by saves whose process is gone. */
static void
clean_stale_temporaries(const char *file)
{
  g_autofree char *dir = g_path_get_dirname(file);
  g_autofree char *base = g_path_get_basename(file);
  g_autofree char *prefix = g_strconcat(base, TMP_TAG, NULL);
  GDir *d = g_dir_open(dir, 0, NULL);
  if (d == NULL)
    return;
  const char *name;
  while ((name = g_dir_read_name(d)) != NULL) {
    if (!g_str_has_prefix(name, prefix))
      continue;
    guint64 pid = 0;
    const char *p = name + strlen(prefix), *dash = strchr(p, '-');
    g_autofree char *digits = dash != NULL ? g_strndup(p, (gsize)(dash - p)) : NULL;
    if (digits == NULL || !g_ascii_string_to_unsigned(digits, 10, 1, G_MAXINT32, &pid, NULL))
      continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue; /* its writer may still be writing */
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_unlink(path);
  }
  g_dir_close(d);
}

static gboolean
write_all(int fd, const char *text, gsize len)
{
  while (len > 0) {
    gssize n = write(fd, text, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return FALSE;
    text += n;
    len -= (gsize)n;
  }
  return TRUE;
}

/* Writes FILE atomically with FILL(fd, DATA), which returns FALSE with errno set on failure (and
 * *WHAT naming what failed when not FILE itself). */
typedef gboolean (*Fill)(int fd, gconstpointer data, const char **what);

/* How many symbolic links a path may pass through, as the kernel's own bound (ELOOP). */
#define MAX_LINKS 40

/* The file a write to FILE lands in: FILE, or where its chain of symbolic links ends (the link
 * stays a link, as a shell's '>' leaves it). NULL with ERROR on a loop. */
static char *
write_target(const char *file, GError **error)
{
  char *path = g_strdup(file);
  for (int hops = 0;; hops++) {
    GStatBuf st;
    if (g_lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
      return path;
    g_autofree char *to = g_file_read_link(path, NULL);
    if (to == NULL || hops == MAX_LINKS) {
      g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO,
                  "%s: cannot write: %s", file,
                  to == NULL ? "a symbolic link that cannot be read"
                             : "more than 40 symbolic links (a loop?)");
      g_free(path);
      return NULL;
    }
    g_autofree char *dir = g_path_get_dirname(path);
    char *next = g_path_is_absolute(to) ? g_strdup(to) : g_build_filename(dir, to, NULL);
    g_free(path);
    path = next;
  }
}

/* Writes FILE in place, as it is not a regular file a rename could replace (a device, a FIFO:
 * /dev/null, /dev/stdout). */
static gboolean
write_in_place(const char *file, Fill fill, gconstpointer data, GError **error)
{
  int fd = open(file, O_WRONLY | O_CLOEXEC);
  const char *what = NULL;
  gboolean ok = fd >= 0 && fill(fd, data, &what);
  int e = errno;
  if (fd >= 0 && close(fd) != 0 && ok) {
    ok = FALSE;
    e = errno;
  }
  if (!ok)
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO, "%s: cannot %s: %s",
                what != NULL ? what : file, what != NULL ? "read" : "write", g_strerror(e));
  return ok;
}

static gboolean
write_atomic_with(const char *link, Fill fill, gconstpointer data, GError **error)
{
  /* test hook: a full disk, as the tests of docs/bad-input.md need one */
  if (g_getenv("STOWAGE_FAULT_WRITE") != NULL) {
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO,
                "%s: cannot write: No space left on device (injected by STOWAGE_FAULT_WRITE)",
                link);
    return FALSE;
  }
  GStatBuf st;
  gboolean exists = g_stat(link, &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO, "%s: cannot write: a folder", link);
    return FALSE;
  }
  if (exists && !S_ISREG(st.st_mode))
    return write_in_place(link, fill, data, error);
  g_autofree char *file = write_target(link, error);
  if (file == NULL)
    return FALSE;
  clean_stale_temporaries(file);
  /* a temporary beside FILE, synced, renamed over it, and the folder synced: on any failure the
   * temporary is removed and FILE is left as it was */
  g_autofree char *tmp = g_strdup_printf("%s" TMP_TAG "%d-XXXXXX", file, (int)getpid());
  int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) {
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO, "%s: cannot write: %s", file,
                g_strerror(errno));
    return FALSE;
  }
  const char *what = NULL;
  /* a file written again keeps its permissions */
  gboolean ok = (!exists || fchmod(fd, st.st_mode & 07777) == 0) && fill(fd, data, &what) &&
                fsync(fd) == 0;
  int e = errno;
  if (close(fd) != 0 && ok) {
    ok = FALSE;
    e = errno;
  }
  if (ok && rename(tmp, file) != 0) {
    ok = FALSE;
    e = errno;
  }
  if (!ok) {
    g_unlink(tmp);
    if (what != NULL)
      g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO, "%s: cannot read: %s", what,
                  g_strerror(e));
    else
      g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO, "%s: cannot write: %s", file,
                  g_strerror(e));
    return FALSE;
  }
  g_autofree char *dir = g_path_get_dirname(file);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) { /* the rename is durable once the folder is */
    fsync(dfd);
    close(dfd);
  }
  return TRUE;
}

typedef struct {
  const char *text;
  gsize len;
} Text;

static gboolean
fill_text(int fd, gconstpointer data, const char **what)
{
  (void)what;
  const Text *t = data;
  return write_all(fd, t->text, t->len);
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
  Text t = { text, len };
  return write_atomic_with(file, fill_text, &t, error);
}

/* copies the file named DATA into FD, a block at a time */
static gboolean
fill_copy(int fd, gconstpointer data, const char **what)
{
  const char *src = data;
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    *what = src;
    return FALSE;
  }
  g_autofree char *block = g_malloc(1u << 20);
  gboolean ok = TRUE;
  for (;;) {
    gssize n = read(in, block, 1u << 20);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      *what = src;
      ok = FALSE;
      break;
    }
    if (n == 0 || !(ok = write_all(fd, block, (gsize)n)))
      break;
  }
  int e = errno;
  close(in);
  errno = e;
  return ok;
}

gboolean
stw_file_copy_atomic(const char *src, const char *file, GError **error)
{
  return write_atomic_with(file, fill_copy, src, error);
}
