/* test-files.c — bounded reads, atomic writes and module paths (files.h). */
#include "config.h"

#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include <stowage/files.h>

#include "testutil.h"

static void
test_atomic_write(void)
{
  g_autofree char *dir = g_dir_make_tmp("stw-files-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "out.json", NULL);
  GError *error = NULL;
  g_assert_true(stw_file_write_atomic(file, "old", 3, &error));
  g_autofree char *missing = g_build_filename(dir, "no-such-dir", "out.json", NULL);
  g_assert_false(stw_file_write_atomic(missing, "new", 3, &error));
  g_assert_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO);
  stw_assert_error_contains(error, "cannot write");
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(file, &text, NULL, NULL));
  g_assert_cmpstr(text, ==, "old");
  /* nothing but the file itself is left in the directory */
  GDir *d = g_dir_open(dir, 0, NULL);
  g_assert_cmpstr(g_dir_read_name(d), ==, "out.json");
  g_assert_null(g_dir_read_name(d));
  g_dir_close(d);
  g_unlink(file);
  g_rmdir(dir);
}

/* A write through a symbolic link lands in the file it names, as a shell's '>' does: the link
 * stays, the file keeps its permissions; a dangling link makes its file; a loop and a folder are
 * refused; a device (/dev/null) is written in place, never replaced. */
static void
test_write_through_links(void)
{
  g_autofree char *dir = g_dir_make_tmp("stw-files-XXXXXX", NULL);
  g_autofree char *sub = g_build_filename(dir, "real", NULL);
  g_autofree char *target = g_build_filename(sub, "t.json", NULL);
  g_autofree char *link = g_build_filename(dir, "link.json", NULL);
  GError *error = NULL;
  g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
  g_assert_true(stw_file_write_atomic(target, "old", 3, &error));
  g_assert_cmpint(g_chmod(target, 0600), ==, 0);
  g_assert_cmpint(symlink("real/t.json", link), ==, 0);
  g_assert_true(stw_file_write_atomic(link, "new", 3, &error));
  GStatBuf st;
  g_assert_cmpint(g_lstat(link, &st), ==, 0);
  g_assert_true(S_ISLNK(st.st_mode));
  g_assert_cmpint(g_stat(target, &st), ==, 0);
  g_assert_cmpint(st.st_mode & 07777, ==, 0600);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(target, &text, NULL, NULL));
  g_assert_cmpstr(text, ==, "new");

  g_autofree char *dangling = g_build_filename(dir, "dangling.json", NULL);
  g_autofree char *made = g_build_filename(dir, "made.json", NULL);
  g_assert_cmpint(symlink("made.json", dangling), ==, 0);
  g_assert_true(stw_file_write_atomic(dangling, "x", 1, &error));
  g_assert_true(g_file_test(made, G_FILE_TEST_IS_REGULAR));

  g_autofree char *loop1 = g_build_filename(dir, "loop1", NULL);
  g_autofree char *loop2 = g_build_filename(dir, "loop2", NULL);
  g_assert_cmpint(symlink("loop2", loop1), ==, 0);
  g_assert_cmpint(symlink("loop1", loop2), ==, 0);
  g_assert_false(stw_file_write_atomic(loop1, "x", 1, &error));
  stw_assert_error_contains(error, "loop1: cannot write: more than 40 symbolic links (a loop?)");
  g_assert_false(stw_file_write_atomic(sub, "x", 1, &error));
  stw_assert_error_contains(error, "real: cannot write: a folder");

  g_assert_true(stw_file_write_atomic("/dev/null", "x", 1, &error));
  g_assert_cmpint(g_stat("/dev/null", &st), ==, 0);
  g_assert_true(S_ISCHR(st.st_mode));

  for (const char *f[] = { link, dangling, made, loop1, loop2, target }, **p = f;
       p < f + G_N_ELEMENTS(f); p++)
    g_unlink(*p);
  g_rmdir(sub);
  g_rmdir(dir);
}

static void
test_bounded_read(void)
{
  g_autofree char *dir = g_dir_make_tmp("stw-files-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "in.txt", NULL);
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  GError *error = NULL;
  g_assert_true(g_file_set_contents(file, "0123456789", 10, NULL));
  char *text = NULL;
  gsize len = 0;
  g_assert_true(stw_file_read(file, 10, &text, &len, &error));
  g_assert_cmpuint(len, ==, 10);
  g_assert_cmpstr(text, ==, "0123456789");
  g_free(text);
  text = NULL;
  /* one byte over the limit is refused before anything is read */
  g_assert_false(stw_file_read(file, 9, &text, &len, &error));
  g_assert_error(error, STW_FILES_ERROR, STW_FILES_ERROR_LIMIT);
  stw_assert_error_contains(error, "in.txt: file is 10 bytes, more than the limit of 9 bytes");
  g_assert_null(text);
  /* a FIFO or a device would be read until memory runs out: refused unopened */
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  g_assert_false(stw_file_read(fifo, 1 << 20, &text, &len, &error));
  g_assert_error(error, STW_FILES_ERROR, STW_FILES_ERROR_LIMIT);
  stw_assert_error_contains(error, "fifo: not a regular file");
  g_assert_false(stw_file_read("/dev/zero", 1 << 20, &text, &len, &error));
  stw_assert_error_contains(error, "/dev/zero: not a regular file");
  g_assert_false(stw_file_read("/nonexistent/in.txt", 1 << 20, &text, &len, &error));
  g_assert_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO);
  stw_assert_error_contains(error, "/nonexistent/in.txt: cannot open: No such file or directory");
  g_unlink(fifo);
  g_unlink(file);
  g_rmdir(dir);
}

/* A save killed half-way leaves its temporary; the next save of the same file removes it, and
 * leaves alone the temporaries of writers still running. */
static void
test_stale_temporaries(void)
{
  g_autofree char *dir = g_dir_make_tmp("stw-files-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "ckpt.bin", NULL);
  /* a process that has exited: its pid is free */
  pid_t gone = fork();
  if (gone == 0)
    _exit(0);
  int st;
  waitpid(gone, &st, 0);
  g_autofree char *stale = g_strdup_printf("%s.stowage-tmp-%d-AbCdEf", file, (int)gone);
  g_autofree char *live = g_strdup_printf("%s.stowage-tmp-%d-GhIjKl", file, (int)getpid());
  g_autofree char *other = g_build_filename(dir, "ckpt.bin.backup", NULL);
  g_assert_true(g_file_set_contents(stale, "half", 4, NULL));
  g_assert_true(g_file_set_contents(live, "busy", 4, NULL));
  g_assert_true(g_file_set_contents(other, "mine", 4, NULL));
  GError *error = NULL;
  g_assert_true(stw_file_write_atomic(file, "whole", 5, &error));
  g_assert_false(g_file_test(stale, G_FILE_TEST_EXISTS));
  g_assert_true(g_file_test(live, G_FILE_TEST_EXISTS));
  g_assert_true(g_file_test(other, G_FILE_TEST_EXISTS));
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(file, &text, NULL, NULL));
  g_assert_cmpstr(text, ==, "whole");
  g_unlink(live);
  g_unlink(other);
  g_unlink(file);
  g_rmdir(dir);
}

/* A copy goes a block at a time (3 MiB and a byte: several blocks) and atomically: a source that
 * cannot be read is named, and the destination keeps what it had. */
static void
test_copy_atomic(void)
{
  g_autofree char *dir = g_dir_make_tmp("stw-copy-XXXXXX", NULL);
  g_autofree char *src = g_build_filename(dir, "src", NULL);
  g_autofree char *dst = g_build_filename(dir, "dst", NULL);
  gsize n = (3u << 20) + 1;
  g_autofree char *data = g_malloc(n);
  for (gsize i = 0; i < n; i++)
    data[i] = (char)(i * 7 + i / 4096);
  g_assert_true(g_file_set_contents(src, data, (gssize)n, NULL));
  GError *error = NULL;
  g_assert_true(stw_file_copy_atomic(src, dst, &error));
  g_assert_no_error(error);
  g_autofree char *back = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(dst, &back, &len, NULL));
  g_assert_cmpuint(len, ==, n);
  g_assert_true(memcmp(back, data, n) == 0);
  g_autofree char *gone = g_build_filename(dir, "gone", NULL);
  g_assert_false(stw_file_copy_atomic(gone, dst, &error));
  g_autofree char *want = g_strdup_printf("%s: cannot read: No such file or directory", gone);
  g_assert_cmpstr(error->message, ==, want);
  g_clear_error(&error);
  g_autofree char *after = NULL;
  g_assert_true(g_file_get_contents(dst, &after, &len, NULL));
  g_assert_cmpuint(len, ==, n); /* untouched */
  GDir *d = g_dir_open(dir, 0, NULL);
  guint entries = 0;
  while (g_dir_read_name(d) != NULL)
    entries++;
  g_dir_close(d);
  g_assert_cmpuint(entries, ==, 2); /* no temporary left behind */
  g_unlink(src);
  g_unlink(dst);
  g_rmdir(dir);
}

/* A module is $ENV_VAR's, else the one beside the running code (for a program linking the
 * library statically, as this test does: ../lib/stowage/), else the build tree's, else the
 * installed one. */
static void
test_module_path(void)
{
  g_autofree char *dir = g_dir_make_tmp("stw-modules-XXXXXX", NULL);
  g_autofree char *built = g_build_filename(dir, "libstowage-module-path-test.so", NULL);
  const char *installed = "/nonexistent/lib/stowage/libstowage-module-path-test.so";
  g_unsetenv("STOWAGE_TEST_MODULE");
  g_autofree char *p1 = stw_module_path("STOWAGE_TEST_MODULE", built, installed);
  g_assert_cmpstr(p1, ==, installed); /* nothing built, nothing beside */
  g_assert_true(g_file_set_contents(built, "", 0, NULL));
  g_autofree char *p2 = stw_module_path("STOWAGE_TEST_MODULE", built, installed);
  g_assert_cmpstr(p2, ==, built);
  g_setenv("STOWAGE_TEST_MODULE", "/elsewhere/m.so", TRUE);
  g_autofree char *p3 = stw_module_path("STOWAGE_TEST_MODULE", built, installed);
  g_assert_cmpstr(p3, ==, "/elsewhere/m.so");
  g_setenv("STOWAGE_TEST_MODULE", "", TRUE); /* empty: not set */
  g_autofree char *p4 = stw_module_path("STOWAGE_TEST_MODULE", built, installed);
  g_assert_cmpstr(p4, ==, built);
  g_unsetenv("STOWAGE_TEST_MODULE");
  g_unlink(built);

  /* beside this program: <its folder>/../lib/stowage/NAME */
  g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
  g_assert_nonnull(self);
  g_autofree char *bindir = g_path_get_dirname(self);
  g_autofree char *libdir = g_build_filename(bindir, "..", "lib", NULL);
  g_autofree char *moddir = g_build_filename(libdir, "stowage", NULL);
  gboolean made_lib = !g_file_test(libdir, G_FILE_TEST_IS_DIR);
  g_assert_cmpint(g_mkdir_with_parents(moddir, 0755), ==, 0);
  g_autofree char *beside = g_build_filename(moddir, "libstowage-module-path-test.so", NULL);
  g_assert_true(g_file_set_contents(beside, "", 0, NULL));
  g_assert_true(g_file_set_contents(built, "", 0, NULL));
  g_autofree char *p5 = stw_module_path("STOWAGE_TEST_MODULE", built, installed);
  g_autofree char *want = g_canonicalize_filename(beside, NULL);
  g_assert_cmpstr(p5, ==, want); /* before the build tree's */
  g_setenv("STOWAGE_TEST_MODULE", "/elsewhere/m.so", TRUE);
  g_autofree char *p6 = stw_module_path("STOWAGE_TEST_MODULE", built, installed);
  g_assert_cmpstr(p6, ==, "/elsewhere/m.so");
  g_unsetenv("STOWAGE_TEST_MODULE");
  g_unlink(built);
  g_unlink(beside);
  g_rmdir(moddir);
  if (made_lib)
    g_rmdir(libdir);
  g_rmdir(dir);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/files/atomic-write", test_atomic_write);
  g_test_add_func("/files/write-through-links", test_write_through_links);
  g_test_add_func("/files/bounded-read", test_bounded_read);
  g_test_add_func("/files/stale-temporaries", test_stale_temporaries);
  g_test_add_func("/files/copy-atomic", test_copy_atomic);
  g_test_add_func("/files/module-path", test_module_path);
  return g_test_run();
}
