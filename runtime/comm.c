/* comm.c — one rank's communicator and what every communicator shares; see comm.h. */
#include "config.h"

#include <stowage/comm.h>
#include <stowage/files.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

G_DEFINE_QUARK(stw-comm-error-quark, stw_comm_error)

/* ---- one rank ---------------------------------------------------------------------------- */

struct StwCommOp {
  int unused;
};

static StwCommOp done_op;

static StwCommOp *
self_all_gather(StwComm *c, const void *own, void *others, gsize bytes)
{
  (void)c, (void)own, (void)others, (void)bytes; /* no other rank */
  return &done_op;
}

static StwCommOp *
self_reduce_scatter(StwComm *c, void *own, const void *others, gsize bytes, StwDtype dtype)
{
  (void)c, (void)own, (void)others, (void)bytes, (void)dtype; /* the mean of one */
  return &done_op;
}

static StwCommOp *
self_all_reduce(StwComm *c, void *buf, gsize count, StwDtype dtype)
{
  (void)c, (void)buf, (void)count, (void)dtype;
  return &done_op;
}

static StwCommOp *
self_barrier(StwComm *c)
{
  (void)c;
  return &done_op;
}

static StwCommOp *
self_broadcast(StwComm *c, void *buf, gsize bytes, guint32 root)
{
  (void)c, (void)buf, (void)bytes, (void)root;
  return &done_op;
}

static gboolean
self_done(StwComm *c, StwCommOp *op)
{
  (void)c, (void)op;
  return TRUE;
}

static void
self_op_free(StwComm *c, StwCommOp *op)
{
  (void)c, (void)op;
}

static void
self_free(StwComm *c)
{
  g_free(c);
}

StwComm *
stw_comm_self_new(void)
{
  StwComm *c = g_new0(StwComm, 1);
  *c = (StwComm){ .name = "self", .rank = 0, .world = 1, .all_gather = self_all_gather,
                  .reduce_scatter = self_reduce_scatter, .all_reduce = self_all_reduce,
                  .broadcast = self_broadcast, .barrier = self_barrier, .done = self_done,
                  .wait = self_done, .op_free = self_op_free, .free = self_free };
  c->host = c;
  return c;
}

/* ---- NCCL, a module loaded on demand (comm-nccl.cu) ---------------------------------------- */

StwComm *
stw_comm_nccl_new(StwComm *host, guint64 timeout_ms, GError **error)
{
#ifndef STW_HAVE_NCCL
  (void)host, (void)timeout_ms;
  g_set_error(error, STW_COMM_ERROR, STW_COMM_ERROR_UNSUPPORTED,
              "this stowage was built without NCCL, which training on several GPUs needs: "
              "configure where NCCL is (--with-nccl=DIR)");
  return NULL;
#else
  g_return_val_if_fail(host != NULL && !host->device_memory, NULL);
  /* $STOWAGE_COMM_NCCL, the build tree's, the one beside the library, the installed one */
  g_autofree char *path = stw_module_path("STOWAGE_COMM_NCCL", STW_COMM_NCCL_BUILT,
                                          STW_COMM_NCCL_INSTALLED);
  void *module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (module == NULL) {
    g_set_error(error, STW_COMM_ERROR, STW_COMM_ERROR_UNSUPPORTED,
                "cannot load the NCCL communicator %s: %s", path, dlerror());
    return NULL;
  }
  typedef StwComm *(*Make)(StwComm *host, guint64 timeout_ms, GError **error);
  Make make = (Make)dlsym(module, "stw_comm_nccl_module_new");
  if (make == NULL) {
    g_set_error(error, STW_COMM_ERROR, STW_COMM_ERROR_UNSUPPORTED,
                "%s is not stowage's NCCL communicator: %s", path, dlerror());
    dlclose(module);
    return NULL;
  }
  GError *inner = NULL;
  StwComm *c = make(host, timeout_ms, &inner);
  if (c == NULL) {
    g_set_error(error, STW_COMM_ERROR, STW_COMM_ERROR_FAILED, "rank %u of %u: %s", host->rank,
                host->world, inner != NULL ? inner->message : "NCCL failed to start");
    g_clear_error(&inner);
    dlclose(module);
    return NULL;
  }
  return c; /* the module stays loaded: the communicator's functions live in it */
#endif
}

/* ---- shared ------------------------------------------------------------------------------ */

gboolean
stw_comm_launched_with_ranks(void)
{
  static const char *const sizes[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
                                       "MPI_LOCALNRANKS" };
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    const char *v = g_getenv(sizes[i]);
    if (v != NULL && atoi(v) > 1)
      return TRUE;
  }
  return FALSE;
}

gboolean
stw_comm_finish(StwComm *c, StwCommOp *op, const char *what, GError **error)
{
  gboolean ok = c->wait(c, op);
  c->op_free(c, op);
  if (!ok)
    g_set_error(error, STW_COMM_ERROR, STW_COMM_ERROR_FAILED, "rank %u of %u: %s: %s", c->rank,
                c->world, what, c->error);
  return ok;
}

#define FIELD_BYTES 64

gboolean
stw_comm_agree_fields(StwComm *c, const char *what, const char *const *names,
                      const char *const *values, guint n, GError **error)
{
  if (c->world <= 1 || n == 0)
    return TRUE;
  /* rank 0's values to everyone; each rank's first value that differs, to everyone */
  g_autofree char *theirs = g_malloc0((gsize)n * FIELD_BYTES);
  for (guint i = 0; i < n; i++)
    g_strlcpy(theirs + (gsize)i * FIELD_BYTES, values[i], FIELD_BYTES);
  if (!stw_comm_finish(c, c->broadcast(c, theirs, (gsize)n * FIELD_BYTES, 0), what, error))
    return FALSE;
  g_autofree float *first = g_new0(float, c->world); /* 1 + the field's index; 0: none (each
                                                     * rank sets its own, the others are 0) */
  for (guint i = 0; i < n && first[c->rank] == 0; i++) {
    char mine[FIELD_BYTES];
    g_strlcpy(mine, values[i], FIELD_BYTES);
    if (strcmp(mine, theirs + (gsize)i * FIELD_BYTES) != 0)
      first[c->rank] = (float)(i + 1);
  }
  if (!stw_comm_finish(c, c->all_reduce(c, first, c->world, STW_DTYPE_FP32), what, error))
    return FALSE;
  for (guint32 r = 0; r < c->world; r++) {
    /* the all-reduce averages: rank r's own value, times the ranks */
    guint i = (guint)lrintf(first[r] * (float)c->world);
    if (i > 0 && i <= n) {
      i--;
      g_autofree char *here = r == c->rank ? g_strdup_printf(", %s here", values[i])
                                           : g_strdup("");
      g_set_error(error, STW_COMM_ERROR, STW_COMM_ERROR_MISMATCH,
                  "the ranks disagree on %s: rank %u has another %s than rank 0 (%s there%s); "
                  "start every rank with the same options", what, r, names[i],
                  theirs + (gsize)i * FIELD_BYTES, here);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
stw_comm_agree(StwComm *c, const char *what, const char *key, GError **error)
{
  if (c->world <= 1)
    return TRUE;
  /* rank 0's key, padded to a fixed length, to everyone; then who differs, to everyone */
  char buf[256] = { 0 };
  g_strlcpy(buf, key, sizeof buf);
  char mine[256];
  memcpy(mine, buf, sizeof buf);
  if (!stw_comm_finish(c, c->broadcast(c, buf, sizeof buf, 0), what, error))
    return FALSE;
  g_autofree float *differs = g_new0(float, c->world);
  differs[c->rank] = memcmp(buf, mine, sizeof buf) != 0;
  if (!stw_comm_finish(c, c->all_reduce(c, differs, c->world, STW_DTYPE_FP32), what, error))
    return FALSE;
  for (guint32 r = 0; r < c->world; r++) {
    if (differs[r] > 0) {
      g_set_error(error, STW_COMM_ERROR, STW_COMM_ERROR_MISMATCH,
                  "the ranks disagree on %s: rank %u has another than rank 0 (%s here); start "
                  "every rank with the same files", what, r, key);
      return FALSE;
    }
  }
  return TRUE;
}
