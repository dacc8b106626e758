/* test-cuda.c — the CUDA backend: the arena, pinned memory, copies both ways. Skips itself,
 * saying why, without a GPU (or without CUDA in this build). */
#include "config.h"

#include <string.h>

#include <glib.h>

#include <stowage/backend.h>
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

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cuda/arena", test_arena);
  g_test_add_func("/cuda/round-trip", test_round_trip);
  return g_test_run();
}
