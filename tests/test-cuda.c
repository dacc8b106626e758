/* test-cuda.c — the CUDA backend: the arena, pinned memory, copies both ways; the NCCL
 * communicator on one rank. Skips itself, saying why, without a GPU (or without CUDA or NCCL in
 * this build). */
#include "config.h"

#include <string.h>

#include <glib.h>

#include <stowage/backend.h>
#include <stowage/comm.h>
#include <stowage/units.h>

static StwBackend *
backend_or_skip(guint64 arena)
{
  GError *error = NULL;
  StwBackend *b = stw_backend_cuda_new(0, arena, &error);
  if (b == NULL) {
    g_autofree char *why = g_strdup_printf("no GPU here: %s", error->message);
    g_test_skip(why);
    g_error_free(error);
  }
  return b;
}

static void
test_arena(void)
{
  StwBackend *b = backend_or_skip(64 * STW_MiB);
  if (b == NULL)
    return;
  void *p[8];
  for (int i = 0; i < 8; i++) {
    p[i] = b->device_alloc(b, 8 * STW_MiB - 256);
    g_assert_nonnull(p[i]);
  }
  g_assert_null(b->device_alloc(b, STW_MiB)); /* full */
  g_assert_nonnull(strstr(b->error, "has no free span"));
  for (int i = 0; i < 8; i += 2)
    b->device_free(b, p[i]);
  for (int i = 1; i < 8; i += 2)
    b->device_free(b, p[i]);
  void *all = b->device_alloc(b, 64 * STW_MiB); /* coalesced back into one span */
  g_assert_nonnull(all);
  b->device_free(b, all);
  b->free(b);
}

static void
test_round_trip(void)
{
  StwBackend *b = backend_or_skip(256 * STW_MiB);
  if (b == NULL)
    return;
  gsize n = 64 * STW_MiB;
  guint8 *src = b->host_alloc(b, n), *dst = b->host_alloc(b, n);
  for (gsize i = 0; i < n; i++)
    src[i] = (guint8)(i * 131 + 7);
  void *dev = b->device_alloc(b, n);
  StwEvent *up = b->copy(b, STW_COPY_H2D, dev, src, n);
  /* the two directions are separate streams: like the runtime, wait for the upload first */
  g_assert_true(b->wait(b, up));
  StwEvent *down = b->copy(b, STW_COPY_D2H, dst, dev, n);
  g_assert_true(b->wait(b, down));
  g_assert_true(b->done(b, down));
  g_assert_cmpmem(src, n, dst, n);
  b->event_free(b, up);
  b->event_free(b, down);
  b->device_free(b, dev);
  b->host_free(b, src);
  b->host_free(b, dst);
  g_assert_cmpstr(b->error, ==, "");
  b->free(b);
}

/* NCCL on one rank (bootstrapped over the one-rank host communicator): it loads, starts, and its
 * collectives complete on the backend's device memory with the mean of one, the values as they
 * were, bit for bit. */
static void
test_nccl_one_rank(void)
{
  StwBackend *b = backend_or_skip(64 * STW_MiB);
  if (b == NULL)
    return;
  StwComm *self = stw_comm_self_new();
  GError *error = NULL;
  StwComm *nccl = stw_comm_nccl_new(self, 60000, &error);
  if (nccl == NULL) {
    g_autofree char *why = g_strdup_printf("NCCL did not start: %s", error->message);
    g_error_free(error);
    self->free(self);
    b->free(b);
    if (g_str_has_prefix(why, "NCCL did not start: this stowage was built without NCCL")) {
      g_test_skip(why);
      return;
    }
    g_test_message("%s", why);
    g_test_fail();
    return;
  }
  g_assert_cmpuint(nccl->world, ==, 1);
  g_assert_true(nccl->device_memory);
  gsize n = 1 << 20, bytes = n * sizeof(float);
  float *host = b->host_alloc(b, bytes), *back = b->host_alloc(b, bytes);
  for (gsize i = 0; i < n; i++)
    host[i] = (float)i * 0.25f - 7.0f;
  void *dev = b->device_alloc(b, bytes);
  StwEvent *up = b->copy(b, STW_COPY_H2D, dev, host, bytes);
  g_assert_true(b->wait(b, up));
  b->event_free(b, up);
  g_assert_true(stw_comm_finish(nccl, nccl->all_reduce(nccl, dev, n, STW_DTYPE_FP32),
                                "all-reduce", &error));
  g_assert_true(stw_comm_finish(nccl, nccl->reduce_scatter(nccl, dev, NULL, bytes,
                                                           STW_DTYPE_FP32),
                                "reduce-scatter", &error));
  g_assert_true(stw_comm_finish(nccl, nccl->all_gather(nccl, dev, NULL, bytes), "all-gather",
                                &error));
  g_assert_true(stw_comm_finish(nccl, nccl->barrier(nccl), "barrier", &error));
  g_assert_no_error(error);
  StwEvent *down = b->copy(b, STW_COPY_D2H, back, dev, bytes);
  g_assert_true(b->wait(b, down));
  b->event_free(b, down);
  g_assert_cmpmem(host, bytes, back, bytes);
  nccl->free(nccl);
  self->free(self);
  b->device_free(b, dev);
  b->host_free(b, host);
  b->host_free(b, back);
  b->free(b);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cuda/arena", test_arena);
  g_test_add_func("/cuda/round-trip", test_round_trip);
  g_test_add_func("/cuda/nccl-one-rank", test_nccl_one_rank);
  return g_test_run();
}
