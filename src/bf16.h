/* bf16.h — bfloat16 as the trainer stores its compute copy in mixed precision: the top 16 bits
 * of an IEEE float, rounded to nearest, ties to even (NaN stays NaN). Compiles as C and as CUDA
 * (host and device), so the CPU, the runtime and the CUDA kernels round the same way. */
#ifndef STW_BF16_H
#define STW_BF16_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define STW_BF16_FN static __host__ __device__ inline
#else
#define STW_BF16_FN static inline
#endif

STW_BF16_FN uint16_t
stw_bf16_from_float(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)
    return (uint16_t)((u >> 16) | 0x40u); /* a quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

STW_BF16_FN float
stw_bf16_to_float(uint16_t h)
{
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

#endif
