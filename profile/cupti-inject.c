/* cupti-inject.c — the CUPTI injection library behind `stowage profile`.
 *
 * Loaded into any CUDA program through CUDA_INJECTION64_PATH (and NVTX's through
 * NVTX_INJECTION64_PATH, which it hands to the CUPTI it records with), it records the program's run as the events of events.h, written as they
 * come to $STOWAGE_EVENTS_OUT (flushed and closed at exit; a second CUDA process of the run, a
 * child or a sibling, writes $STOWAGE_EVENTS_OUT.PID instead): NVTX range pushes and pops (default domain, or only the domain
 * named by $STOWAGE_NVTX_DOMAIN), device allocations and releases (CUPTI_ACTIVITY_KIND_MEMORY2),
 * every kernel launch with its pointer-sized arguments (driver-API callback on cuLaunchKernel,
 * cuLaunchKernelEx and cuLaunchCooperativeKernel and their per-thread-stream forms; the arguments
 * from kernelParams or the `extra` buffer, their layout from cuFuncGetParamInfo or, for a
 * CUkernel, cuKernelGetParamInfo) and every kernel's GPU time
 * (CONCURRENT_KERNEL). It only converts records into events; events.c makes the trace.
 *
 * It must never crash or change the program: every CUPTI failure disables recording with one
 * message on stderr, and the program runs on. $STOWAGE_CUPTI_DEBUG=N prints what it sees of
 * the first N launches (the callback, the driver function, the kernel, the arguments found) and
 * of its start, to stderr: whether driver callbacks fire for a program's launches and whether
 * the argument lookup works, in one run.
 */
#define _GNU_SOURCE 1 /* dladdr */
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti-rules.h"

#define BUFFER_BYTES (8u << 20)
#define MAX_ARGS 64
#define MAX_DOMAINS 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;                 /* the events file, NULL when recording is off */
static CUpti_SubscriberHandle subscriber;
static const char *want_domain;   /* NULL: the default domain */
static struct {
  const void *handle;
  char name[64];
} domains[MAX_DOMAINS];
static int n_domains;
static unsigned long dropped;     /* under the lock: buffers complete on CUPTI's thread */
static int debug_left;            /* launches still to describe on stderr ($STOWAGE_CUPTI_DEBUG) */
static StwCuptiThreads threads;   /* under the lock: the threads of the pushes and pops */

static void
disable(const char *what, CUptiResult r)
{
  const char *msg = NULL;
  cuptiGetResultString(r, &msg);
  fprintf(stderr, "stowage-cupti: %s failed (%s); recording stops, the program runs on\n", what,
          msg ? msg : "?");
  pthread_mutex_lock(&lock);
  if (out != NULL) {
    fclose(out);
    out = NULL;
  }
  pthread_mutex_unlock(&lock);
}

static uint64_t
now(void)
{
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

static void
emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void
emit(const char *fmt, ...)
{
  va_list ap;
  pthread_mutex_lock(&lock);
  if (out != NULL) {
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
  }
  pthread_mutex_unlock(&lock);
}

/* A host event, "KIND T REST": its time is read under the lock, so that the host events of all
 * threads are written in time order, as the event format requires. */
static void
emit_timed(const char *kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void
emit_timed(const char *kind, const char *fmt, ...)
{
  va_list ap;
  pthread_mutex_lock(&lock);
  if (out != NULL) {
    fprintf(out, "%s %llu", kind, (unsigned long long)now());
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
  }
  pthread_mutex_unlock(&lock);
}

/* A push (NAME) or a pop (NAME NULL), after `thread N` when another thread wrote the last one:
 * one write under the lock, so that no other thread's event comes between. */
static void
range_event(const char *name)
{
  pthread_mutex_lock(&lock);
  if (out != NULL) {
    int number;
    if (stw_cupti_thread_switch(&threads, pthread_self(), &number))
      fprintf(out, "thread %d\n", number);
    if (name != NULL)
      fprintf(out, "push %llu %s\n", (unsigned long long)now(), name);
    else
      fprintf(out, "pop %llu\n", (unsigned long long)now());
  }
  pthread_mutex_unlock(&lock);
}

/* Names may not contain newlines; spaces are fine (the name is the rest of the line). */
static void
clean(char *dst, size_t n, const char *src)
{
  size_t i = 0;
  for (; src != NULL && src[i] != '\0' && i + 1 < n; i++)
    dst[i] = src[i] == '\n' || src[i] == '\r' ? ' ' : src[i];
  dst[i] = '\0';
  if (i == 0 && n > 1) {
    dst[0] = '?';
    dst[1] = '\0';
  }
}

static int
domain_wanted(const void *handle)
{
  if (want_domain == NULL)
    return handle == NULL;
  int wanted = 0;
  pthread_mutex_lock(&lock); /* another thread may be creating a domain */
  for (int i = 0; i < n_domains; i++)
    if (domains[i].handle == handle) {
      wanted = strcmp(domains[i].name, want_domain) == 0;
      break;
    }
  pthread_mutex_unlock(&lock);
  return wanted;
}

static void
on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData *d)
{
  char name[512];
  switch (cbid) {
  case CUPTI_CBID_NVTX_nvtxDomainCreateA: {
    const nvtxDomainCreateA_params *p = d->functionParams;
    pthread_mutex_lock(&lock);
    if (n_domains < MAX_DOMAINS && d->functionReturnValue != NULL) {
      domains[n_domains].handle = *(const void *const *)d->functionReturnValue;
      clean(domains[n_domains].name, sizeof domains[n_domains].name, p->name);
      n_domains++;
    }
    pthread_mutex_unlock(&lock);
    break;
  }
  case CUPTI_CBID_NVTX_nvtxRangePushA:
    if (domain_wanted(NULL)) {
      clean(name, sizeof name, ((const nvtxRangePushA_params *)d->functionParams)->message);
      range_event(name);
    }
    break;
  case CUPTI_CBID_NVTX_nvtxRangePushEx:
    if (domain_wanted(NULL)) {
      const nvtxEventAttributes_t *a = ((const nvtxRangePushEx_params *)d->functionParams)->eventAttrib;
      clean(name, sizeof name, a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "?");
      range_event(name);
    }
    break;
  case CUPTI_CBID_NVTX_nvtxRangePop:
    if (domain_wanted(NULL))
      range_event(NULL);
    break;
  case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
    const nvtxDomainRangePushEx_params *p = d->functionParams;
    if (domain_wanted(p->domain)) {
      const nvtxEventAttributes_t *a = p->core.eventAttrib;
      clean(name, sizeof name, a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "?");
      range_event(name);
    }
    break;
  }
  case CUPTI_CBID_NVTX_nvtxDomainRangePop:
    if (domain_wanted(((const nvtxDomainRangePop_params *)d->functionParams)->domain))
      range_event(NULL);
    break;
  default:
    break;
  }
}

/* The pointer-sized arguments of a launch, as the kernel's parameter layout describes them,
 * from PARAMS (a pointer to each argument) or else EXTRA's buffer. */
static void
on_launch(const CUpti_CallbackData *d, CUpti_CallbackId cbid, CUfunction f, void **params,
          void **extra)
{
  char line[64 + MAX_ARGS * 20];
  uint64_t args[MAX_ARGS];
  int n = 0;
  const char *buffer = params == NULL ? stw_cupti_extra_buffer(extra) : NULL;
  int have = params != NULL || buffer != NULL;
  /* cuLaunchKernel also takes a CUkernel (a library's kernel, cuLibraryGetKernel) cast to a
   * CUfunction, whose layout only cuKernelGetParamInfo gives: the first parameter tells which */
  size_t offset0 = 0, size0 = 0;
  int as_kernel = have && cuFuncGetParamInfo(f, 0, &offset0, &size0) != CUDA_SUCCESS &&
                  cuKernelGetParamInfo((CUkernel)f, 0, &offset0, &size0) == CUDA_SUCCESS;
  size_t i = 0;
  for (; have && n < MAX_ARGS; i++) {
    size_t offset = 0, size = 0;
    CUresult r = as_kernel ? cuKernelGetParamInfo((CUkernel)f, i, &offset, &size)
                           : cuFuncGetParamInfo(f, i, &offset, &size);
    if (r != CUDA_SUCCESS)
      break;
    if (size == sizeof(uint64_t))
      memcpy(&args[n++], params != NULL ? params[i] : buffer + offset, sizeof(uint64_t));
  }
  int len = snprintf(line, sizeof line, " %u %d", d->correlationId, n);
  for (int k = 0; k < n && len < (int)sizeof line - 20; k++)
    len += snprintf(line + len, sizeof line - (size_t)len, " %llx", (unsigned long long)args[k]);
  emit_timed("launch", "%s\n", line);
  if (debug_left > 0 && __atomic_sub_fetch(&debug_left, 1, __ATOMIC_RELAXED) >= 0)
    fprintf(stderr, "stowage-cupti: launch %u: callback %u %s, kernel %s: %zu parameters (%s "
            "layout) from %s, %d pointer-sized\n", d->correlationId, (unsigned)cbid,
            d->functionName != NULL ? d->functionName : "?",
            d->symbolName != NULL ? d->symbolName : "?", i, as_kernel ? "CUkernel" : "CUfunction",
            params != NULL ? "kernelParams" : buffer != NULL ? "the extra buffer" : "nowhere", n);
}

static void CUPTIAPI
on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
  (void)user;
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    on_nvtx(cbid, data);
    return;
  }
  const CUpti_CallbackData *d = data;
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || d->callbackSite != CUPTI_API_ENTER)
    return;
  /* the legacy entry points and the per-thread-default-stream ones (--default-stream
   * per-thread, and the runtime's own launches in that mode); cooperative launches */
  switch (cbid) {
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel: {
    const cuLaunchKernel_params *p = d->functionParams;
    on_launch(d, cbid, p->f, p->kernelParams, p->extra);
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
    const cuLaunchKernel_ptsz_params *p = d->functionParams;
    on_launch(d, cbid, p->f, p->kernelParams, p->extra);
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: {
    const cuLaunchKernelEx_params *p = d->functionParams;
    on_launch(d, cbid, p->f, p->kernelParams, p->extra);
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
    const cuLaunchKernelEx_ptsz_params *p = d->functionParams;
    on_launch(d, cbid, p->f, p->kernelParams, p->extra);
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel: {
    const cuLaunchCooperativeKernel_params *p = d->functionParams;
    on_launch(d, cbid, p->f, p->kernelParams, NULL);
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
    const cuLaunchCooperativeKernel_ptsz_params *p = d->functionParams;
    on_launch(d, cbid, p->f, p->kernelParams, NULL);
    break;
  }
  default:
    break;
  }
}

static void CUPTIAPI
buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
  *buffer = aligned_alloc(8, BUFFER_BYTES);
  *size = *buffer != NULL ? BUFFER_BYTES : 0;
  *max_records = 0;
}

static void CUPTIAPI
buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *rec = NULL;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY2) {
      const CUpti_ActivityMemory4 *m = (const CUpti_ActivityMemory4 *)rec;
      if (!stw_cupti_keeps_memory(m->memoryKind, m->bytes))
        continue;
      if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
        emit("alloc %llu %llx %llu\n", (unsigned long long)m->timestamp,
             (unsigned long long)m->address, (unsigned long long)m->bytes);
      else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
        emit("free %llu %llx\n", (unsigned long long)m->timestamp, (unsigned long long)m->address);
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
      char name[512];
      clean(name, sizeof name, k->name);
      emit("kernel %u %llu %llu %s\n", k->correlationId, (unsigned long long)k->start,
           (unsigned long long)k->end, name);
    }
  }
  size_t drops = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &drops) == CUPTI_SUCCESS) {
    pthread_mutex_lock(&lock);
    dropped += drops;
    pthread_mutex_unlock(&lock);
  }
  free(buffer);
}

static void
finish(void)
{
  cuptiActivityFlushAll(1);
  pthread_mutex_lock(&lock);
  if (out != NULL) {
    if (dropped > 0)
      fprintf(stderr, "stowage-cupti: CUPTI dropped %lu activity records; the trace lacks them\n",
              dropped);
    fclose(out);
    out = NULL;
  }
  pthread_mutex_unlock(&lock);
}

/* NVTX's injection entry point: `stowage profile` names this library in NVTX_INJECTION64_PATH as
 * well, and it hands NVTX to the copy of CUPTI it was linked to in this process. Naming a
 * libcupti.so there instead loaded a second CUPTI wherever the program had one of its own
 * already (PyTorch's wheels bring theirs, which this library then shares): NVTX's ranges went to
 * the copy nobody subscribed to, and a PyTorch program's events held no range. */
int
InitializeInjectionNvtx2(const void *get_export_table)
{
  Dl_info info;
  void *cupti = NULL;
  int (*init)(const void *) = NULL;
  if (dladdr((void *)cuptiSubscribe, &info) != 0 && info.dli_fname != NULL &&
      (cupti = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) != NULL)
    init = (int (*)(const void *))dlsym(cupti, "InitializeInjectionNvtx2");
  if (init == NULL) {
    fprintf(stderr, "stowage-cupti: this process's CUPTI (%s) takes no NVTX injection; NVTX ranges "
            "are not recorded\n", cupti != NULL ? info.dli_fname : "not found");
    return 0;
  }
  if (debug_left > 0 || getenv("STOWAGE_CUPTI_DEBUG") != NULL)
    fprintf(stderr, "stowage-cupti: NVTX handed to %s\n", info.dli_fname);
  return init(get_export_table);
}

#define TRY(call)                                                                                 \
  do {                                                                                            \
    CUptiResult r_ = (call);                                                                      \
    if (r_ != CUPTI_SUCCESS) {                                                                    \
      disable(#call, r_);                                                                         \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

int
InitializeInjection(void)
{
  const char *path = getenv("STOWAGE_EVENTS_OUT");
  if (path == NULL || out != NULL)
    return 1;
  uint32_t version = 0;
  if (cuptiGetVersion(&version) != CUPTI_SUCCESS || version < CUPTI_API_VERSION) {
    fprintf(stderr, "stowage-cupti: this CUPTI (API version %u) is older than the one stowage was "
                    "built against (%u); not recording\n", version, (unsigned)CUPTI_API_VERSION);
    return 1;
  }
  char own[4096];
  out = stw_cupti_open_events(path, own, sizeof own);
  if (out == NULL) {
    fprintf(stderr, "stowage-cupti: cannot write %s; not recording\n", own);
    return 1;
  }
  want_domain = getenv("STOWAGE_NVTX_DOMAIN");
  if (want_domain != NULL && want_domain[0] == '\0')
    want_domain = NULL;
  const char *debug = getenv("STOWAGE_CUPTI_DEBUG");
  debug_left = debug != NULL ? atoi(debug) : 0;
  if (debug_left > 0)
    fprintf(stderr, "stowage-cupti: recording to %s (CUPTI API version %u, built against %u), "
            "NVTX domain %s, NVTX_INJECTION64_PATH=%s\n", own, version,
            (unsigned)CUPTI_API_VERSION, want_domain != NULL ? want_domain : "(default)",
            getenv("NVTX_INJECTION64_PATH") != NULL ? getenv("NVTX_INJECTION64_PATH") : "(unset)");
  TRY(cuptiSubscribe(&subscriber, on_callback, NULL));
  TRY(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX));
  TRY(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  TRY(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx));
  TRY(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz));
  TRY(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz));
  TRY(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel));
  TRY(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz));
  TRY(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  TRY(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2));
  TRY(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  atexit(finish);
  return 1;
}
