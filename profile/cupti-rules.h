/* cupti-rules.h — the CUPTI injection library's decisions that need no GPU, so that the tests run
 * them on the CPU (tests/test-cupti.c): which memory records are device allocations, where a
 * launch's arguments are, which file a process records to, and which thread a range is on. Header-only: the library (cupti-inject.c) is a module of its own that
 * links no stowage code. Needs <cuda.h> and <cupti.h> for their constants only.
 */
#ifndef STW_CUPTI_RULES_H
#define STW_CUPTI_RULES_H

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda.h>
#include <cupti.h>

/* A memory record is a GPU allocation (non-model GPU memory unless a tensor): device and managed
 * memory; not pinned host or static memory, and not an empty record. */
static inline int
stw_cupti_keeps_memory(CUpti_ActivityMemoryKind kind, uint64_t bytes)
{
  return (kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED) &&
         bytes > 0;
}

/* A launch's argument buffer when it passes its arguments through EXTRA
 * (CU_LAUNCH_PARAM_BUFFER_POINTER, one buffer holding them at their offsets) instead of an array
 * of pointers; NULL when it does not. */
static inline const char *
stw_cupti_extra_buffer(void **extra)
{
  for (size_t i = 0; extra != NULL && extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2)
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      return (const char *)extra[i + 1];
  return NULL;
}

/* This process's events file: PATH when it is the run's first CUDA process (PATH is empty and no
 * other process holds it; the lock is kept as long as the file is open), else PATH.PID (written
 * into OWN, OWN_LEN bytes, and said on stderr), so that a child, a sibling rank or a later
 * process never truncates another's events. NULL when neither can be opened. */
static inline FILE *
stw_cupti_open_events(const char *path, char *own, size_t own_len)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  struct stat st;
  snprintf(own, own_len, "%s", path);
  if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st) == 0 && st.st_size == 0) {
    FILE *f = fdopen(fd, "w");
    if (f == NULL)
      close(fd);
    return f;
  }
  if (fd >= 0)
    close(fd);
  snprintf(own, own_len, "%s.%ld", path, (long)getpid());
  fprintf(stderr, "stowage-cupti: %s is another process's; this one (pid %ld) records to %s\n",
          path, (long)getpid(), own);
  return fopen(own, "w");
}

/* The threads that push and pop NVTX ranges, numbered as they first do (events.h's `thread N`):
 * NVTX keeps a stack per thread, and so does the builder. The writer names the thread of a push
 * or pop when it is not the one it named last. Threads beyond the numbers kept share the last
 * number (their ranges then share one stack). The caller serializes the calls. */
#define STW_CUPTI_MAX_THREADS 256
typedef struct {
  pthread_t thread[STW_CUPTI_MAX_THREADS];
  int n;
  int last; /* the number last written; thread 0 until one is */
} StwCuptiThreads;

/* SELF's number into *NUMBER; TRUE when the writer must say `thread *NUMBER` first. */
static inline int
stw_cupti_thread_switch(StwCuptiThreads *t, pthread_t self, int *number)
{
  int k = 0;
  while (k < t->n && !pthread_equal(t->thread[k], self))
    k++;
  if (k == t->n) {
    if (t->n < STW_CUPTI_MAX_THREADS)
      t->thread[t->n++] = self;
    else
      k = STW_CUPTI_MAX_THREADS - 1;
  }
  *number = k;
  if (k == t->last)
    return 0;
  t->last = k;
  return 1;
}

#endif
