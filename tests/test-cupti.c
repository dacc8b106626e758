/* test-cupti.c — the CUPTI injection library's rules that need no GPU (profile/cupti-rules.h):
 * which memory records count, where an `extra`-buffer launch's arguments are, which events file
 * each process of a run writes, and the numbers of the threads that push and pop. Built against
 * CUDA's and CUPTI's headers only; without CUPTI every case skips. */
#include "config.h"

#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#ifdef STW_HAVE_CUPTI
#include "cupti-rules.h"

static void
test_memory_kinds(void)
{
  g_assert_true(stw_cupti_keeps_memory(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 4096));
  g_assert_true(stw_cupti_keeps_memory(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, 1));
  g_assert_false(stw_cupti_keeps_memory(CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 4096));
  g_assert_false(stw_cupti_keeps_memory(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 4096));
  g_assert_false(stw_cupti_keeps_memory(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, 4096));
  g_assert_false(stw_cupti_keeps_memory(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0));
}

static void
test_extra_buffer(void)
{
  char args[24] = { 0 };
  size_t size = sizeof args;
  void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                    CU_LAUNCH_PARAM_END };
  g_assert_true(stw_cupti_extra_buffer(extra) == args);
  void *size_first[] = { CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_BUFFER_POINTER, args,
                         CU_LAUNCH_PARAM_END };
  g_assert_true(stw_cupti_extra_buffer(size_first) == args);
  void *none[] = { CU_LAUNCH_PARAM_END };
  g_assert_null(stw_cupti_extra_buffer(none));
  g_assert_null(stw_cupti_extra_buffer(NULL));
}

/* The first process of a run records to the events file; one that finds it held (a child while
 * its parent runs) or already written (a process after it) records to EVENTS.PID. */
static void
test_events_file_per_process(void)
{
  g_autofree char *dir = g_dir_make_tmp("stw-cupti-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "run.events", NULL);
  g_assert_true(g_file_set_contents(path, "", 0, NULL)); /* as stowage profile leaves it */
  char own[4096], other[4096], later[4096];
  FILE *first = stw_cupti_open_events(path, own, sizeof own);
  g_assert_nonnull(first);
  g_assert_cmpstr(own, ==, path);
  fputs("push 1 stowage.iteration\n", first);
  g_autofree char *mine = g_strdup_printf("%s.%ld", path, (long)getpid());
  FILE *second = stw_cupti_open_events(path, other, sizeof other); /* the file is held */
  g_assert_nonnull(second);
  g_assert_cmpstr(other, ==, mine);
  fputs("push 2 x\n", second);
  fclose(second);
  fclose(first);
  g_unlink(mine);
  FILE *third = stw_cupti_open_events(path, later, sizeof later); /* free, but written */
  g_assert_nonnull(third);
  g_assert_cmpstr(later, ==, mine);
  fclose(third);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  g_assert_cmpstr(text, ==, "push 1 stowage.iteration\n"); /* never truncated */
  g_unlink(mine);
  g_unlink(path);
  g_rmdir(dir);
}

static StwCuptiThreads threads;
static int other_number, other_switched;

static gpointer
push_from_another_thread(gpointer data)
{
  (void)data;
  other_switched = stw_cupti_thread_switch(&threads, pthread_self(), &other_number);
  return NULL;
}

/* Threads are numbered as they first push or pop; the writer names one only when it changes. */
static void
test_threads(void)
{
  memset(&threads, 0, sizeof threads);
  int number = -1;
  g_assert_false(stw_cupti_thread_switch(&threads, pthread_self(), &number)); /* thread 0 */
  g_assert_cmpint(number, ==, 0);
  g_assert_false(stw_cupti_thread_switch(&threads, pthread_self(), &number));
  GThread *t = g_thread_new("push", push_from_another_thread, NULL);
  g_thread_join(t);
  g_assert_true(other_switched);
  g_assert_cmpint(other_number, ==, 1);
  g_assert_true(stw_cupti_thread_switch(&threads, pthread_self(), &number)); /* back to 0 */
  g_assert_cmpint(number, ==, 0);
  g_assert_cmpint(threads.n, ==, 2);
  /* full (of threads gone: a joined thread's id may be reused): a new one shares the last
   * number */
  for (int k = 1; k < STW_CUPTI_MAX_THREADS; k++)
    threads.thread[k] = pthread_self();
  threads.n = STW_CUPTI_MAX_THREADS;
  t = g_thread_new("push", push_from_another_thread, NULL);
  g_thread_join(t);
  g_assert_cmpint(other_number, ==, STW_CUPTI_MAX_THREADS - 1);
}
#endif

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
#ifdef STW_HAVE_CUPTI
  g_test_add_func("/cupti/memory-kinds", test_memory_kinds);
  g_test_add_func("/cupti/extra-buffer", test_extra_buffer);
  g_test_add_func("/cupti/events-file-per-process", test_events_file_per_process);
  g_test_add_func("/cupti/threads", test_threads);
#else
  g_test_skip("built without CUPTI");
#endif
  return g_test_run();
}
