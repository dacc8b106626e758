/* bench-cuda.c — pinned H2D/D2H bandwidth of the stowage CUDA backend by chunk size against
 * cudaMemcpyAsync of the same size on a stream of its own, and how much of a backend copy hides
 * behind device work queued beside it (a cudaMemsetAsync of 1 GiB on another stream).
 *
 * Every timing waits for what it timed: the backend's copies by their events, the reference
 * by cudaStreamSynchronize; nothing is freed while a copy may be in flight. Each figure is the
 * median of 3 runs after one warm-up copy. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <glib.h>

#include <stowage/backend.h>
#include <stowage/units.h>

static double
now(void)
{
  return (double)g_get_monotonic_time() / 1e6;
}

static int
by_value(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double
median3(double v[3])
{
  qsort(v, 3, sizeof v[0], by_value);
  return v[1];
}

/* Seconds for REPS backend copies of N bytes queued back to back, waited for. */
static double
backend_copies(StwBackend *b, StwCopyDir dir, void *dev, void *host, gsize n, int reps)
{
  StwEvent **e = g_new0(StwEvent *, reps);
  double t0 = now();
  for (int r = 0; r < reps; r++)
    e[r] = dir == STW_COPY_H2D ? b->copy(b, dir, dev, host, n) : b->copy(b, dir, host, dev, n);
  gboolean ok = TRUE;
  for (int r = 0; r < reps; r++)
    ok = b->wait(b, e[r]) && ok;
  double t = now() - t0;
  for (int r = 0; r < reps; r++)
    b->event_free(b, e[r]);
  g_free(e);
  if (!ok)
    fprintf(stderr, "bench-cuda: a backend copy failed: %s\n", b->error);
  return t;
}

/* Seconds for REPS cudaMemcpyAsync of N bytes on STREAM, synchronized. */
static double
reference_copies(cudaStream_t stream, StwCopyDir dir, void *dev, void *host, gsize n, int reps)
{
  double t0 = now();
  for (int r = 0; r < reps; r++)
    cudaMemcpyAsync(dir == STW_COPY_H2D ? dev : host, dir == STW_COPY_H2D ? host : dev, n,
                    dir == STW_COPY_H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                    stream);
  cudaError_t r = cudaStreamSynchronize(stream);
  if (r != cudaSuccess)
    fprintf(stderr, "bench-cuda: cudaMemcpyAsync: %s\n", cudaGetErrorString(r));
  return now() - t0;
}

int
main(void)
{
  GError *error = NULL;
  StwBackend *b = stw_backend_cuda_new(0, 3 * STW_GiB, &error);
  if (b == NULL) {
    printf("bench-cuda: %s\n", error->message);
    return 0;
  }
  cudaStream_t stream;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    printf("bench-cuda: cannot create a stream\n");
    return 1;
  }
  static const gsize sizes[] = { 1 << 20, 16 << 20, 64 << 20, 256 << 20 };
  printf("| chunk | backend H2D | cudaMemcpyAsync H2D | ratio | backend D2H | cudaMemcpyAsync D2H "
         "| ratio |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    gsize n = sizes[i];
    int reps = (int)MAX(4, (1u << 30) / n);
    void *host = b->host_alloc(b, n), *dev = b->device_alloc(b, n);
    if (host == NULL || dev == NULL) {
      printf("bench-cuda: %s\n", b->error);
      return 1;
    }
    double rate[4];
    for (int dir = 0; dir < 2; dir++) {
      StwCopyDir d = dir == 0 ? STW_COPY_H2D : STW_COPY_D2H;
      backend_copies(b, d, dev, host, n, 1); /* warm-up */
      reference_copies(stream, d, dev, host, n, 1);
      double tb[3], tr[3];
      for (int k = 0; k < 3; k++) { /* interleaved */
        tb[k] = backend_copies(b, d, dev, host, n, reps);
        tr[k] = reference_copies(stream, d, dev, host, n, reps);
      }
      rate[2 * dir] = (double)n * reps / median3(tb);
      rate[2 * dir + 1] = (double)n * reps / median3(tr);
    }
    g_autofree char *sz = stw_size_format(n);
    printf("| %s | %.1f GB/s | %.1f GB/s | %.0f%% | %.1f GB/s | %.1f GB/s | %.0f%% |\n", sz,
           rate[0] / 1e9, rate[1] / 1e9, 100 * rate[0] / rate[1], rate[2] / 1e9, rate[3] / 1e9,
           100 * rate[2] / rate[3]);
    cudaDeviceSynchronize(); /* nothing in flight before the buffers go */
    b->device_free(b, dev);
    b->host_free(b, host);
  }

  /* overlap: 64 MiB H2D copies, alone, a 1 GiB memset alone, and both at once */
  gsize n = 64 << 20, big = 1u << 30;
  void *host = b->host_alloc(b, n), *dev = b->device_alloc(b, n), *work = NULL;
  if (host == NULL || dev == NULL || cudaMalloc(&work, big) != cudaSuccess) {
    printf("bench-cuda: no memory for the overlap test\n");
    return 1;
  }
  int reps = 16, fills = 8;
  double copy[3], fill[3], both[3];
  for (int k = 0; k < 3; k++) {
    copy[k] = backend_copies(b, STW_COPY_H2D, dev, host, n, reps);
    double t0 = now();
    for (int f = 0; f < fills; f++)
      cudaMemsetAsync(work, f, big, stream);
    cudaStreamSynchronize(stream);
    fill[k] = now() - t0;
    t0 = now();
    for (int f = 0; f < fills; f++)
      cudaMemsetAsync(work, f, big, stream);
    backend_copies(b, STW_COPY_H2D, dev, host, n, reps);
    cudaStreamSynchronize(stream);
    both[k] = now() - t0;
  }
  double c = median3(copy), f = median3(fill), t = median3(both);
  double hidden = (c + f - t) / MIN(c, f);
  printf("\noverlap: %d copies of 64 MiB H2D %.2f ms alone, %d memsets of 1 GiB %.2f ms alone, "
         "both %.2f ms: %.0f%% of the shorter hidden\n", reps, c * 1e3, fills, f * 1e3, t * 1e3,
         100 * CLAMP(hidden, 0.0, 1.0));
  cudaDeviceSynchronize();
  cudaFree(work);
  b->device_free(b, dev);
  b->host_free(b, host);
  cudaStreamDestroy(stream);
  b->free(b);
  return 0;
}
