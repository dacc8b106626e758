/* test-storage.c — files on a storage device: asynchronous reads and writes, and what a
 * directory that cannot hold them says. */
#include "config.h"

#include <stowage/storage.h>

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "testutil.h"
#include "tier.h"

/* A scratch directory on the build tree's file system (not tmpfs: O_DIRECT there). */
static char *
scratch(void)
{
  g_autofree char *here = g_get_current_dir();
  char *dir = g_strdup_printf("%s/stw-storage.XXXXXX", here);
  g_assert_nonnull(g_mkdtemp(dir));
  return dir;
}

/* 64 requests of 64 KiB, 8 in flight, written with a pattern and read back in another order:
 * every byte where it was written, every tag back once; the files go with the storage. */
static void
round_trip(void)
{
  g_autofree char *dir = scratch();
  GError *error = NULL;
  StwStorage *s = stw_storage_open(dir, 8, &error);
  g_assert_no_error(error);
  const StwStorageInfo *in = stw_storage_info(s);
  g_test_message("engine %s, direct %d, %s: %s", in->engine, in->direct, in->fs_type,
                 in->fallback);
  g_assert_cmpuint(in->queue_depth, ==, 8);
  g_assert_cmpuint(in->free_bytes, >, 0);
#ifdef STW_HAVE_LIBURING
  if (g_getenv("STOWAGE_STORAGE_ENGINE") != NULL) {
    g_assert_cmpstr(in->engine, ==, "threads");
    g_assert_nonnull(strstr(in->fallback, "STOWAGE_STORAGE_ENGINE=threads: a pool of threads"));
  } else {
    g_assert_true(strcmp(in->engine, "io_uring") == 0 ||
                  strstr(in->fallback, "io_uring unavailable (") != NULL);
  }
#else
  g_assert_cmpstr(in->engine, ==, "threads");
#endif
  const gsize piece = 64 * 1024, n = 64;
  gint f = stw_storage_create(s, "chunks", piece * n, &error);
  g_assert_no_error(error);
  g_assert_cmpint(f, ==, 0);
  g_autofree char *path = g_build_filename(dir, "chunks", NULL);
  struct stat st;
  g_assert_cmpint(stat(path, &st), ==, 0);
  g_assert_cmpuint((guint64)st.st_size, ==, piece * n);
  guint8 *out = stw_storage_buffer(piece * n), *in_buf = stw_storage_buffer(piece * n);
  for (gsize i = 0; i < piece * n; i++)
    out[i] = (guint8)(i * 131 + i / 4096);
  guint64 tags[64];
  guint seen = 0;
  for (guint k = 0; k < n; k++) {
    g_assert_true(stw_storage_submit(s, 0, TRUE, out + k * piece, piece, k * piece, 1000 + k,
                                     &error));
    g_assert_cmpuint(stw_storage_in_flight(s), ==, k + 1); /* done or not, until collected */
  }
  while (stw_storage_in_flight(s) > 0) {
    gint got = stw_storage_complete(s, 1, tags + seen, 64 - seen, &error);
    g_assert_no_error(error);
    seen += (guint)got;
  }
  g_assert_cmpuint(seen, ==, n);
  guint64 sum = 0;
  for (guint k = 0; k < n; k++)
    sum += tags[k];
  g_assert_cmpuint(sum, ==, 1000 * n + n * (n - 1) / 2);
  for (guint k = n; k-- > 0;) /* backwards */
    g_assert_true(stw_storage_submit(s, 0, FALSE, in_buf + k * piece, piece, k * piece, k,
                                     &error));
  g_assert_cmpint(stw_storage_complete(s, 64, tags, 64, &error), ==, 64);
  g_assert_cmpint(memcmp(out, in_buf, piece * n), ==, 0);
  /* a request O_DIRECT cannot take */
  if (in->direct) {
    g_assert_false(stw_storage_submit(s, 0, FALSE, in_buf + 1, piece, 0, 0, &error));
    stw_assert_error_contains(error, "not aligned to 4096 bytes, which O_DIRECT needs");
  }
  g_assert_false(stw_storage_submit(s, 3, FALSE, in_buf, piece, 0, 0, &error));
  stw_assert_error_contains(error, "storage: no file 3 (1 made)");
  stw_storage_close(s);
  g_assert_cmpint(stat(path, &st), !=, 0); /* removed */
  stw_storage_buffer_free(out);
  stw_storage_buffer_free(in_buf);
  g_rmdir(dir);
}

static void
test_round_trip(void)
{
  round_trip();
}

/* The same through the pool of threads (io_uring's stand-in where the kernel refuses it). */
static void
test_round_trip_threads(void)
{
  g_setenv("STOWAGE_STORAGE_ENGINE", "threads", TRUE);
  round_trip();
  g_unsetenv("STOWAGE_STORAGE_ENGINE");
}

/* A file cut short behind the storage's back: the read past its end comes back short, and says
 * so with the file, the offset and the bytes. */
static void
test_truncated(void)
{
  g_autofree char *dir = scratch();
  GError *error = NULL;
  g_autoptr(StwStorage) s = stw_storage_open(dir, 2, &error);
  g_assert_no_error(error);
  g_assert_cmpint(stw_storage_create(s, "c0", 1 << 20, &error), ==, 0);
  g_autofree char *path = g_build_filename(dir, "c0", NULL);
  g_assert_cmpint(truncate(path, 1 << 19), ==, 0);
  guint8 *buf = stw_storage_buffer(1 << 20);
  guint64 tag;
  g_assert_true(stw_storage_submit(s, 0, FALSE, buf, 1 << 20, 0, 7, &error));
  g_assert_cmpint(stw_storage_complete(s, 1, &tag, 1, &error), ==, -1);
  g_assert_error(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_IO);
  g_autofree char *want = g_strdup_printf("storage file %s: a read of 1048576 bytes at 0 moved "
                                          "524288 (the file is shorter than it was made", path);
  stw_assert_error_contains(error, want);
  g_assert_cmpuint(stw_storage_in_flight(s), ==, 0);
  stw_storage_buffer_free(buf);
  g_clear_pointer(&s, stw_storage_close);
  g_rmdir(dir);
}

/* Two chunks whose parameters and state live on the tier. Chunk 0's parameters, written, are
 * altered in the file behind the tier's back; read into a lent buffer, the mismatch is found by
 * whichever call collects the read (here a sync) and said there, naming chunk 0, the bytes and
 * the offset; the lent buffer's own wait then says its read failed and where that was said,
 * never hands out the altered bytes, and the buffer goes back. Chunk 1, untouched, still reads
 * back what was written. */
static void
test_tier_altered_elsewhere(void)
{
  g_autofree char *dir = scratch();
  GError *error = NULL;
  const guint64 state[2] = { 8192, 8192 }, params[2] = { 4096, 4096 };
  const guint32 tensors[2] = { 1, 1 }, order[2] = { 0, 1 };
  StwTier *t = stw_tier_new(dir, "tier", 4, 2, state, params, tensors, order, 2, &error);
  g_assert_no_error(error);
  g_assert_true(stw_tier_holds_params(t, 0) && stw_tier_holds_params(t, 1));
  for (guint32 ch = 0; ch < 2; ch++) {
    guint8 *p = stw_tier_params_borrow(t, ch, FALSE, &error);
    g_assert_no_error(error);
    memset(p, 0x40 + ch, params[ch]);
    g_assert_true(stw_tier_params_return(t, ch, TRUE, &error));
    g_assert_no_error(error);
  }
  g_assert_true(stw_tier_sync(t, &error));
  g_assert_no_error(error);
  g_autofree char *path = g_build_filename(dir, "tier", NULL);
  FILE *f = fopen(path, "r+b");
  g_assert_nonnull(f);
  g_assert_cmpint(fseek(f, 100, SEEK_SET), ==, 0); /* chunk 0's parameters begin the file */
  g_assert_cmpint(fputc(0x41, f), ==, 0x41);
  g_assert_cmpint(fclose(f), ==, 0);

  g_assert_nonnull(stw_tier_params_borrow(t, 0, TRUE, &error));
  g_assert_no_error(error);
  g_assert_false(stw_tier_sync(t, &error));
  g_autofree char *found = g_strdup_printf("storage file %s: chunk 0's parameters (4096 bytes at "
                                           "offset 0) is not what was written to it", path);
  stw_assert_error_contains(error, found);
  g_assert_cmpint(stw_tier_params_loaded(t, 0, TRUE, &error), ==, -1);
  g_autofree char *said = g_strdup_printf("storage file %s: chunk 0's parameters could not be "
                                          "read (said where it was found)", path);
  stw_assert_error_contains(error, said);
  g_assert_true(stw_tier_params_return(t, 0, FALSE, &error));
  g_assert_no_error(error);

  guint8 *p = stw_tier_params_borrow(t, 1, TRUE, &error);
  g_assert_no_error(error);
  g_assert_cmpint(stw_tier_params_loaded(t, 1, TRUE, &error), ==, 1);
  g_assert_no_error(error);
  for (guint k = 0; k < params[1]; k++)
    g_assert_cmpuint(p[k], ==, 0x41);
  g_assert_true(stw_tier_params_return(t, 1, FALSE, &error));
  stw_tier_free(t);
  g_assert_cmpint(g_rmdir(dir), ==, 0); /* the file went with the tier */
}

/* Directories that cannot hold the files, and names and depths refused. */
static void
test_bad_directories(void)
{
  GError *error = NULL;
  g_assert_null(stw_storage_open("/nonexistent/stw", 4, &error));
  g_assert_error(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_DIRECTORY);
  stw_assert_error_contains(error, "storage directory /nonexistent/stw: No such file or directory");
  g_autofree char *dir = scratch();
  g_autofree char *file = g_build_filename(dir, "plain", NULL);
  g_assert_true(g_file_set_contents(file, "x", 1, NULL));
  g_assert_null(stw_storage_open(file, 4, &error));
  g_autofree char *want = g_strdup_printf("storage directory %s: not a directory", file);
  stw_assert_error_contains(error, want);
  g_assert_null(stw_storage_open(dir, 0, &error));
  stw_assert_error_contains(error, "a queue depth of 0, expected 1 to 256");
  if (access("/proc/sys", W_OK) != 0) { /* a read-only file system, where there is one */
    g_assert_null(stw_storage_open("/proc/sys", 4, &error));
    stw_assert_error_contains(error, "storage directory /proc/sys is not writable");
  }
  g_autoptr(StwStorage) s = stw_storage_open(dir, 4, &error);
  g_assert_no_error(error);
  g_assert_cmpint(stw_storage_create(s, "a/b", 4096, &error), ==, -1);
  stw_assert_error_contains(error, "storage file \"a/b\": a name without '/'");
  /* more than the file system can hold */
  g_assert_cmpint(stw_storage_create(s, "huge", G_GUINT64_CONSTANT(1) << 62, &error), ==, -1);
  g_assert_true(g_error_matches(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_FULL) ||
                g_error_matches(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_IO));
  stw_assert_error_contains(error, "4611686018427387904 bytes asked for, ");
  g_clear_pointer(&s, stw_storage_close);
  g_unlink(file);
  g_rmdir(dir);
}

/* tmpfs, where there is one: O_DIRECT works on some kernels' tmpfs and not on others'; where it
 * does not, the storage says so and falls back to buffered I/O, which still round-trips. */
static void
test_tmpfs(void)
{
  if (!g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) || access("/dev/shm", W_OK) != 0) {
    g_test_skip("no writable /dev/shm");
    return;
  }
  char dir[] = "/dev/shm/stw-storage.XXXXXX";
  g_assert_nonnull(g_mkdtemp(dir));
  GError *error = NULL;
  g_autoptr(StwStorage) s = stw_storage_open(dir, 2, &error);
  g_assert_no_error(error);
  const StwStorageInfo *in = stw_storage_info(s);
  g_test_message("%s: direct %d: %s", in->fs_type, in->direct, in->fallback);
  if (!in->direct)
    g_assert_nonnull(strstr(in->fallback, "O_DIRECT refused on tmpfs ("));
  g_autofree char *said = g_strdup_printf("%s is on tmpfs: its files are host memory, not "
                                          "storage (what they hold counts against the "
                                          "machine's RAM)", dir);
  g_assert_nonnull(strstr(in->fallback, said));
  g_assert_cmpint(stw_storage_create(s, "c", 8192, &error), ==, 0);
  guint8 *buf = stw_storage_buffer(8192);
  memset(buf, 0x5a, 8192);
  guint64 tag;
  g_assert_true(stw_storage_submit(s, 0, TRUE, buf, 8192, 0, 1, &error));
  g_assert_cmpint(stw_storage_complete(s, 1, &tag, 1, &error), ==, 1);
  memset(buf, 0, 8192);
  g_assert_true(stw_storage_submit(s, 0, FALSE, buf, 8192, 0, 2, &error));
  g_assert_cmpint(stw_storage_complete(s, 1, &tag, 1, &error), ==, 1);
  g_assert_cmpuint(tag, ==, 2);
  g_assert_cmpuint(buf[8191], ==, 0x5a);
  stw_storage_buffer_free(buf);
  g_clear_pointer(&s, stw_storage_close);
  g_rmdir(dir);
}

/* The checksum as written out plainly, one block after another. */
static guint64
checksum_by_hand(const guint8 *p, gsize n)
{
  static const guint64 key[8] = { 0x9E3779B185EBCA87ull, 0xC2B2AE3D27D4EB4Full,
                                  0x165667B19E3779F9ull, 0x85EBCA77C2B2AE63ull,
                                  0x27D4EB2F165667C5ull, 0x94D049BB133111EBull,
                                  0xBF58476D1CE4E5B9ull, 0xD6E8FEB86659FD93ull };
  guint64 acc[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
  gsize i = 0;
  for (; i + 64 <= n; i += 64)
    for (int l = 0; l < 8; l++) {
      guint64 w;
      memcpy(&w, p + i + 8 * l, 8);
      guint64 x = w ^ key[l] ^ ((guint64)i * 0x9E3779B97F4A7C15ull);
      acc[l] += (x & 0xffffffffu) * (x >> 32) + w;
    }
  guint64 all = (guint64)n * 0x9E3779B97F4A7C15ull;
  for (; i < n; i++)
    all = (all ^ p[i]) * 0x100000001B3ull;
  for (int l = 0; l < 8; l++) {
    all = (all ^ acc[l]) * 0xBF58476D1CE4E5B9ull;
    all ^= all >> 31;
  }
  return all;
}

/* The tier's checksum is the same sum on one thread and split over a team (regions from 1 MiB
 * on), whatever the team; one byte changed anywhere changes it. */
static void
test_checksum_teams(void)
{
  gsize n = (3u << 20) + 17;
  g_autofree guint8 *p = g_malloc(n);
  guint32 x = 12345;
  for (gsize i = 0; i < n; i++)
    p[i] = (guint8)((x = x * 1664525u + 1013904223u) >> 24);
  guint64 want = checksum_by_hand(p, n);
  g_assert_cmpuint(stw_storage_checksum(p, 100), ==, checksum_by_hand(p, 100));
#ifdef _OPENMP
  int was = omp_get_max_threads();
  for (int team = 1; team <= 5; team++) {
    omp_set_num_threads(team);
    g_assert_cmpuint(stw_storage_checksum(p, n), ==, want);
  }
  omp_set_num_threads(3);
  p[n / 2] ^= 1;
  g_assert_cmpuint(stw_storage_checksum(p, n), !=, want);
  p[n / 2] ^= 1;
  p[n - 1] ^= 0x80; /* in the tail */
  g_assert_cmpuint(stw_storage_checksum(p, n), !=, want);
  omp_set_num_threads(was);
#else
  g_assert_cmpuint(stw_storage_checksum(p, n), ==, want);
#endif
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/storage/round-trip", test_round_trip);
  g_test_add_func("/storage/round-trip-threads", test_round_trip_threads);
  g_test_add_func("/storage/truncated", test_truncated);
  g_test_add_func("/storage/bad-directories", test_bad_directories);
  g_test_add_func("/storage/tmpfs", test_tmpfs);
  g_test_add_func("/storage/tier-altered-elsewhere", test_tier_altered_elsewhere);
  g_test_add_func("/storage/checksum-teams", test_checksum_teams);
  return g_test_run();
}
