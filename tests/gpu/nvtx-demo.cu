// nvtx-demo.cu — a tiny CUDA "training loop" for tests/gpu/run.sh: two weight matrices that live
// across iterations, activations that do not, NVTX ranges for iterations and ops. Profiling it
// with `stowage profile` must find 2 tensors and 5 ops per iteration.
#include <cstdio>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void scale(float *out, const float *w, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = w[i] * in[i];
}

__global__ void adam(float *w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= 1e-3f * w[i];
}

int main() {
  const int n = 1 << 20;
  float *w1, *w2;
  if (cudaMalloc(&w1, n * sizeof(float)) != cudaSuccess) return 1;
  cudaMalloc(&w2, n * sizeof(float));
  cudaMemset(w1, 0, n * sizeof(float));
  cudaMemset(w2, 0, n * sizeof(float));
  for (int it = 0; it < 3; it++) {
    nvtxRangePushA("stowage.iteration");
    float *x, *h;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&h, n * sizeof(float));
    nvtxRangePushA("fc1"); scale<<<n / 256, 256>>>(h, w1, x, n); nvtxRangePop();
    nvtxRangePushA("fc2"); scale<<<n / 256, 256>>>(x, w2, h, n); nvtxRangePop();
    nvtxRangePushA("fc2.bwd"); scale<<<n / 256, 256>>>(h, w2, x, n); nvtxRangePop();
    nvtxRangePushA("fc1.bwd"); scale<<<n / 256, 256>>>(x, w1, h, n); nvtxRangePop();
    cudaDeviceSynchronize();
    cudaFree(x);
    cudaFree(h);
    nvtxRangePushA("adam.step"); adam<<<n / 256, 256>>>(w1, n); adam<<<n / 256, 256>>>(w2, n);
    nvtxRangePop();
    cudaDeviceSynchronize();
    nvtxRangePop();
  }
  cudaFree(w1);
  cudaFree(w2);
  printf("nvtx-demo: 3 iterations\n");
  return 0;
}
