/* storage.c — files on a storage device, read and written asynchronously; see storage.h. */
#include "config.h"

#include <stowage/storage.h>

#include "clones.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef STW_HAVE_LIBURING
#include <liburing.h>
#endif

G_DEFINE_QUARK(stw-storage-error-quark, stw_storage_error)

typedef struct {
  guint file;
  gboolean write;
  gpointer buf;
  gsize bytes;
  guint64 offset;
  guint64 tag;
  gssize result;       /* bytes moved, or -errno */
  gboolean busy;
} Request;

typedef struct {
  char *path;
  int fd;
} File;

struct StwStorage {
  char *dir;
  StwStorageInfo info;
  GArray *files;         /* File */
  Request *requests;     /* (queue_depth) */
  GArray *free_slots;    /* guint: requests not in the engine */
  GArray *done;          /* Request: completed (their slots free again), not yet collected, in
                          * completion order */
  guint in_flight;       /* queued, not yet collected */
#ifdef STW_HAVE_LIBURING
  gboolean uring;
  struct io_uring ring;
#endif
  GThreadPool *pool;     /* the threads engine */
  gulong write_delay_us; /* the threads engine as a slow disk: each write held this long */
  GAsyncQueue *finished; /* the pool's completions: slot + 1 */
};

/* The checksum's lanes over the 64-byte blocks [LO, HI) of P, added into ACC: each block's
 * words keyed by their lane and the block's offset, accumulating the product of their halves
 * and the word itself (XXH3's accumulation, which vectorizes). A sum, so that any split of the
 * blocks over threads adds up to the same lanes. */
STW_CLONES static void
checksum_lanes(const guint8 *p, gsize lo, gsize hi, guint64 acc[8])
{
  static const guint64 key[8] = { 0x9E3779B185EBCA87ull, 0xC2B2AE3D27D4EB4Full,
                                  0x165667B19E3779F9ull, 0x85EBCA77C2B2AE63ull,
                                  0x27D4EB2F165667C5ull, 0x94D049BB133111EBull,
                                  0xBF58476D1CE4E5B9ull, 0xD6E8FEB86659FD93ull };
  guint64 a[8] = { 0 };
  for (gsize blk = lo; blk < hi; blk++) {
    gsize i = blk * 64;
    guint64 at = (guint64)i * 0x9E3779B97F4A7C15ull;
    for (int l = 0; l < 8; l++) {
      guint64 w;
      memcpy(&w, p + i + 8 * l, 8);
      guint64 x = w ^ key[l] ^ at;
      a[l] += (x & 0xffffffffu) * (x >> 32) + w;
    }
  }
  for (int l = 0; l < 8; l++)
    acc[l] += a[l];
}

guint64
stw_storage_checksum(const void *data, gsize n)
{
  const guint8 *p = data;
  guint64 acc[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
  gsize blocks = n / 64;
#ifdef _OPENMP
  /* the lanes of each thread's share of the blocks, added: the same sum on any team */
  if (n >= STW_STORAGE_CHECKSUM_PARALLEL && omp_get_max_threads() > 1) {
    guint64 part[8][8] = { { 0 } };
    int used = 1;
#pragma omp parallel num_threads(MIN(omp_get_max_threads(), 8))
    {
      gsize k = (gsize)omp_get_thread_num(), t = (gsize)omp_get_num_threads();
#pragma omp single
      used = (int)t;
      checksum_lanes(p, blocks * k / t, blocks * (k + 1) / t, part[k]);
    }
    for (int k = 0; k < used; k++)
      for (int l = 0; l < 8; l++)
        acc[l] += part[k][l];
  } else
#endif
    checksum_lanes(p, 0, blocks, acc);
  guint64 all = (guint64)n * 0x9E3779B97F4A7C15ull;
  for (gsize i = blocks * 64; i < n; i++)
    all = (all ^ p[i]) * 0x100000001B3ull;
  for (int l = 0; l < 8; l++) {
    all = (all ^ acc[l]) * 0xBF58476D1CE4E5B9ull;
    all ^= all >> 31;
  }
  return all;
}


static gboolean
fail(GError **error, StwStorageError code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean
fail(GError **error, StwStorageError code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error_literal(error, STW_STORAGE_ERROR, code, msg);
  g_free(msg);
  return FALSE;
}

gpointer
stw_storage_buffer(gsize bytes)
{
  void *p = NULL;
  if (posix_memalign(&p, STW_STORAGE_ALIGN, MAX(bytes, 1)) != 0)
    return NULL;
  memset(p, 0, MAX(bytes, 1));
  return p;
}

void
stw_storage_buffer_free(gpointer buf)
{
  free(buf);
}

/* The file system's kind, by its magic number. */
static const char *
fs_name(long type)
{
  static const struct {
    long magic;
    const char *name;
  } kinds[] = { { 0xEF53, "ext4" },       { 0x58465342, "xfs" },   { 0x9123683E, "btrfs" },
                { 0x01021994, "tmpfs" },  { 0x6969, "nfs" },       { 0x794c7630, "overlayfs" },
                { 0x2FC12FC1, "zfs" },    { 0xF2F52010, "f2fs" },  { 0x65735546, "fuse" },
                { 0x858458f6, "ramfs" } };
  for (gsize i = 0; i < G_N_ELEMENTS(kinds); i++)
    if (kinds[i].magic == type)
      return kinds[i].name;
  return "unknown";
}

/* Whether DIR takes O_DIRECT: a file opened with it, and an aligned write through it. The
 * reason when it does not, in WHY. */
static gboolean
direct_works(const char *dir, char *why, gsize why_size)
{
  g_autofree char *path = g_build_filename(dir, ".stowage-direct-probe", NULL);
  int fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_DIRECT, 0600);
  if (fd < 0) {
    g_snprintf(why, why_size, "%s", g_strerror(errno));
    unlink(path);
    return FALSE;
  }
  gpointer buf = stw_storage_buffer(STW_STORAGE_ALIGN);
  gssize n = buf != NULL ? pwrite(fd, buf, STW_STORAGE_ALIGN, 0) : -1;
  int saved = errno;
  stw_storage_buffer_free(buf);
  close(fd);
  unlink(path);
  if (n != (gssize)STW_STORAGE_ALIGN) {
    g_snprintf(why, why_size, "%s", n < 0 ? g_strerror(saved) : "a short write");
    return FALSE;
  }
  return TRUE;
}

/* The threads engine: one request, run to its end (pread and pwrite may move less than asked). */
static void
run_request(gpointer data, gpointer user_data)
{
  StwStorage *s = user_data;
  guint slot = GPOINTER_TO_UINT(data) - 1;
  Request *r = &s->requests[slot];
  int fd = g_array_index(s->files, File, r->file).fd;
  gsize moved = 0;
  if (r->write && s->write_delay_us > 0)
    g_usleep(s->write_delay_us);
  while (moved < r->bytes) {
    gssize n = r->write ? pwrite(fd, (const guint8 *)r->buf + moved, r->bytes - moved,
                                 (off_t)(r->offset + moved))
                        : pread(fd, (guint8 *)r->buf + moved, r->bytes - moved,
                                (off_t)(r->offset + moved));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      r->result = n < 0 ? -errno : (gssize)moved;
      g_async_queue_push(s->finished, data);
      return;
    }
    moved += (gsize)n;
  }
  r->result = (gssize)moved;
  g_async_queue_push(s->finished, data);
}

StwStorage *
stw_storage_open(const char *dir, guint32 queue_depth, GError **error)
{
  struct stat st;
  if (queue_depth < 1 || queue_depth > STW_STORAGE_MAX_QUEUE_DEPTH) {
    fail(error, STW_STORAGE_ERROR_IO, "storage %s: a queue depth of %u, expected 1 to %u", dir,
         queue_depth, STW_STORAGE_MAX_QUEUE_DEPTH);
    return NULL;
  }
  if (stat(dir, &st) != 0) {
    fail(error, STW_STORAGE_ERROR_DIRECTORY, "storage directory %s: %s", dir, g_strerror(errno));
    return NULL;
  }
  if (!S_ISDIR(st.st_mode)) {
    fail(error, STW_STORAGE_ERROR_DIRECTORY, "storage directory %s: not a directory", dir);
    return NULL;
  }
  struct statfs fs;
  if (statfs(dir, &fs) != 0 || access(dir, W_OK) != 0) {
    fail(error, STW_STORAGE_ERROR_DIRECTORY, "storage directory %s is not writable: %s", dir,
         g_strerror(errno));
    return NULL;
  }
  StwStorage *s = g_new0(StwStorage, 1);
  s->dir = g_strdup(dir);
  s->files = g_array_new(FALSE, FALSE, sizeof(File));
  s->requests = g_new0(Request, queue_depth);
  s->free_slots = g_array_new(FALSE, FALSE, sizeof(guint));
  s->done = g_array_new(FALSE, FALSE, sizeof(Request));
  for (guint i = queue_depth; i-- > 0;)
    g_array_append_val(s->free_slots, i);
  StwStorageInfo *in = &s->info;
  in->queue_depth = queue_depth;
  in->free_bytes = (guint64)fs.f_bavail * (guint64)fs.f_bsize;
  g_strlcpy(in->fs_type, fs_name((long)fs.f_type), sizeof in->fs_type);
  char why[256] = "";
  in->direct = direct_works(dir, why, sizeof why);
  if (!in->direct)
    g_snprintf(in->fallback, sizeof in->fallback, "O_DIRECT refused on %s (%s): buffered I/O, "
               "the page cache holding what is written (a read of it measures memory, not the "
               "device); ", in->fs_type, why);
  if (g_strcmp0(in->fs_type, "tmpfs") == 0 || g_strcmp0(in->fs_type, "ramfs") == 0) {
    g_strlcat(in->fallback, dir, sizeof in->fallback);
    g_strlcat(in->fallback, " is on ", sizeof in->fallback);
    g_strlcat(in->fallback, in->fs_type, sizeof in->fallback);
    g_strlcat(in->fallback, ": its files are host memory, not storage (what they hold counts "
              "against the machine's RAM); ", sizeof in->fallback);
  }
  g_strlcpy(in->engine, "threads", sizeof in->engine);
  const char *forced = g_getenv("STOWAGE_STORAGE_ENGINE");
#ifdef STW_HAVE_LIBURING
  gboolean threads = g_strcmp0(forced, "threads") == 0 || g_strcmp0(forced, "threads-slow") == 0;
  int rc = threads ? -ENOTSUP : io_uring_queue_init(queue_depth, &s->ring, 0);
  if (threads) {
    g_strlcat(in->fallback, "STOWAGE_STORAGE_ENGINE=", sizeof in->fallback);
    g_strlcat(in->fallback, forced, sizeof in->fallback);
    g_strlcat(in->fallback, ": a pool of threads; ", sizeof in->fallback);
  } else if (rc == 0) {
    s->uring = TRUE;
    g_strlcpy(in->engine, "io_uring", sizeof in->engine);
  } else {
    g_strlcat(in->fallback, "io_uring unavailable (", sizeof in->fallback);
    g_strlcat(in->fallback, g_strerror(-rc), sizeof in->fallback);
    g_strlcat(in->fallback, "): a pool of threads; ", sizeof in->fallback);
  }
#else
  g_strlcat(in->fallback, "built without liburing: a pool of threads; ", sizeof in->fallback);
#endif
  gsize len = strlen(in->fallback);
  if (len >= 2 && in->fallback[len - 2] == ';')
    in->fallback[len - 2] = '\0';
  if (g_strcmp0(forced, "threads-slow") == 0) {
    s->write_delay_us = 20000; /* a disk that takes 20 ms a write: races made to happen */
    g_strlcat(in->fallback, in->fallback[0] ? "; " : "", sizeof in->fallback);
    g_strlcat(in->fallback, "each write held 20 ms", sizeof in->fallback);
  }
  if (g_strcmp0(in->engine, "threads") == 0) {
    s->finished = g_async_queue_new();
    s->pool = g_thread_pool_new(run_request, s, (gint)queue_depth, FALSE, NULL);
  }
  return s;
}

const StwStorageInfo *
stw_storage_info(const StwStorage *s)
{
  return &s->info;
}

guint
stw_storage_in_flight(const StwStorage *s)
{
  return s->in_flight;
}

void
stw_storage_close(StwStorage *s)
{
  if (s == NULL)
    return;
  while (s->in_flight > 0) {
    guint64 tag;
    GError *ignored = NULL;
    if (stw_storage_complete(s, 1, &tag, 1, &ignored) < 0)
      g_clear_error(&ignored);
  }
  if (s->pool != NULL)
    g_thread_pool_free(s->pool, FALSE, TRUE);
  if (s->finished != NULL)
    g_async_queue_unref(s->finished);
#ifdef STW_HAVE_LIBURING
  if (s->uring)
    io_uring_queue_exit(&s->ring);
#endif
  for (guint i = 0; i < s->files->len; i++) {
    File *f = &g_array_index(s->files, File, i);
    close(f->fd);
    unlink(f->path);
    g_free(f->path);
  }
  g_array_unref(s->files);
  g_array_unref(s->free_slots);
  g_array_unref(s->done);
  g_free(s->requests);
  g_free(s->dir);
  g_free(s);
}

gint
stw_storage_create(StwStorage *s, const char *name, guint64 bytes, GError **error)
{
  if (name[0] == '\0' || strchr(name, '/') != NULL || s->files->len >= STW_STORAGE_MAX_FILES) {
    fail(error, STW_STORAGE_ERROR_IO, "storage file \"%s\": a name without '/', at most %u files",
         name, STW_STORAGE_MAX_FILES);
    return -1;
  }
  File f = { g_build_filename(s->dir, name, NULL), -1 };
  f.fd = open(f.path, O_CREAT | O_TRUNC | O_RDWR | (s->info.direct ? O_DIRECT : 0), 0600);
  if (f.fd < 0) {
    fail(error, errno == ENOSPC ? STW_STORAGE_ERROR_FULL : STW_STORAGE_ERROR_DIRECTORY,
         "storage file %s: %s", f.path, g_strerror(errno));
    g_free(f.path);
    return -1;
  }
  int rc = bytes > 0 ? posix_fallocate(f.fd, 0, (off_t)bytes) : 0;
  if (rc == EOPNOTSUPP || rc == EINVAL) /* a file system without it: blocks come at the writes */
    rc = ftruncate(f.fd, (off_t)bytes) == 0 ? 0 : errno;
  if (rc != 0) {
    struct statfs fs;
    guint64 free_bytes = statfs(s->dir, &fs) == 0 ? (guint64)fs.f_bavail * fs.f_bsize : 0;
    fail(error, rc == ENOSPC ? STW_STORAGE_ERROR_FULL : STW_STORAGE_ERROR_IO,
         "storage file %s: %" G_GUINT64_FORMAT " bytes asked for, %" G_GUINT64_FORMAT
         " free: %s", f.path, bytes, free_bytes, g_strerror(rc));
    close(f.fd);
    unlink(f.path);
    g_free(f.path);
    return -1;
  }
  g_array_append_val(s->files, f);
  return (gint)s->files->len - 1;
}

/* Request SLOT has completed: kept for collection, its slot free. */
static void
finished(StwStorage *s, guint slot)
{
  s->requests[slot].busy = FALSE;
  g_array_append_val(s->done, s->requests[slot]);
  g_array_append_val(s->free_slots, slot);
}

/* Takes the next completion from the engine (waiting for one when WAIT); FALSE when none was
 * there. */
static gboolean
reap_one(StwStorage *s, gboolean wait)
{
#ifdef STW_HAVE_LIBURING
  if (s->uring) {
    struct io_uring_cqe *cqe = NULL;
    int rc = wait ? io_uring_wait_cqe(&s->ring, &cqe) : io_uring_peek_cqe(&s->ring, &cqe);
    if (rc != 0 || cqe == NULL)
      return FALSE;
    guint slot = (guint)io_uring_cqe_get_data64(cqe);
    s->requests[slot].result = cqe->res;
    io_uring_cqe_seen(&s->ring, cqe);
    finished(s, slot);
    return TRUE;
  }
#endif
  gpointer data = wait ? g_async_queue_pop(s->finished) : g_async_queue_try_pop(s->finished);
  if (data == NULL)
    return FALSE;
  finished(s, GPOINTER_TO_UINT(data) - 1);
  return TRUE;
}

gboolean
stw_storage_submit(StwStorage *s, guint file, gboolean write, gpointer buf, gsize bytes,
                   guint64 offset, guint64 tag, GError **error)
{
  if (file >= s->files->len)
    return fail(error, STW_STORAGE_ERROR_IO, "storage: no file %u (%u made)", file,
                s->files->len);
  const char *path = g_array_index(s->files, File, file).path;
  if (s->info.direct && (((guintptr)buf | bytes | offset) % STW_STORAGE_ALIGN) != 0)
    return fail(error, STW_STORAGE_ERROR_IO, "storage file %s: a request of %" G_GSIZE_FORMAT
                " bytes at %" G_GUINT64_FORMAT " (buffer %p) not aligned to %u bytes, which "
                "O_DIRECT needs", path, bytes, offset, buf, STW_STORAGE_ALIGN);
  while (s->free_slots->len == 0) /* the queue is full: a completion first, kept */
    reap_one(s, TRUE);
  guint slot = g_array_index(s->free_slots, guint, s->free_slots->len - 1);
  g_array_set_size(s->free_slots, s->free_slots->len - 1);
  s->requests[slot] = (Request){ file, write, buf, bytes, offset, tag, 0, TRUE };
  s->in_flight++;
#ifdef STW_HAVE_LIBURING
  if (s->uring) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
    int fd = g_array_index(s->files, File, file).fd;
    if (write)
      io_uring_prep_write(sqe, fd, buf, (unsigned)bytes, offset);
    else
      io_uring_prep_read(sqe, fd, buf, (unsigned)bytes, offset);
    io_uring_sqe_set_data64(sqe, slot);
    int rc = io_uring_submit(&s->ring);
    if (rc < 0) {
      s->requests[slot].result = rc;
      finished(s, slot);
    }
    return TRUE;
  }
#endif
  g_thread_pool_push(s->pool, GUINT_TO_POINTER(slot + 1), NULL);
  return TRUE;
}

gboolean
stw_storage_flush(StwStorage *s, guint file, GError **error)
{
  if (file >= s->files->len)
    return fail(error, STW_STORAGE_ERROR_IO, "storage: no file %u (%u made)", file,
                s->files->len);
  const File *f = &g_array_index(s->files, File, file);
  if (fdatasync(f->fd) != 0)
    return fail(error, STW_STORAGE_ERROR_IO, "storage file %s: fdatasync: %s", f->path,
                g_strerror(errno));
  int rc = s->info.direct ? 0 : posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED);
  if (rc != 0)
    return fail(error, STW_STORAGE_ERROR_IO, "storage file %s: posix_fadvise: %s", f->path,
                g_strerror(rc));
  return TRUE;
}

gint
stw_storage_complete(StwStorage *s, guint min, guint64 *tags, guint max, GError **error)
{
  min = MIN(MIN(min, max), s->in_flight);
  while (reap_one(s, FALSE)) /* what is done by now */
    ;
  while (s->done->len < min)
    reap_one(s, TRUE);
  guint n = 0;
  gint failed = -1;
  while (n < max && s->done->len > 0) {
    Request done = g_array_index(s->done, Request, 0), *r = &done;
    g_array_remove_index(s->done, 0);
    s->in_flight--;
    if (r->result != (gssize)r->bytes && failed < 0) {
      failed = 1;
      const char *path = g_array_index(s->files, File, r->file).path;
      if (r->result < 0)
        fail(error, (gint)-r->result == ENOSPC ? STW_STORAGE_ERROR_FULL : STW_STORAGE_ERROR_IO,
             "storage file %s: %s of %" G_GSIZE_FORMAT " bytes at %" G_GUINT64_FORMAT ": %s",
             path, r->write ? "a write" : "a read", r->bytes, r->offset,
             g_strerror((gint)-r->result));
      else
        fail(error, STW_STORAGE_ERROR_IO, "storage file %s: %s of %" G_GSIZE_FORMAT " bytes at %"
             G_GUINT64_FORMAT " moved %" G_GSSIZE_FORMAT " (the file is shorter than it was "
             "made, or the disk is full)", path, r->write ? "a write" : "a read", r->bytes,
             r->offset, r->result);
      continue;
    }
    tags[n++] = r->tag;
  }
  return failed >= 0 ? -1 : (gint)n;
}
