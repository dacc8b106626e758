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

/* F rounded to bf16 stochastically with the random bits R: up with the probability of the
 * fraction of an ulp that the top 16 bits drop, so that the rounded value's mean is F. A moment
 * decayed by 0.999 a step changes by less than half an ulp of bf16 when the gradient is near it,
 * and nearest rounding would keep it where it is; this lets it drift as it should. Infinities and
 * NaN round as stw_bf16_from_float does. */
STW_BF16_FN uint16_t
stw_bf16_from_float_sr(float f, uint32_t r)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  /* one select, no branch, so that the loops over elements vectorize; an infinity's low bits
   * are zero and stay below a carry, a NaN is quieted as stw_bf16_from_float does */
  uint32_t nan = (u & 0x7fffffffu) > 0x7f800000u;
  return (uint16_t)(nan ? (u >> 16) | 0x40u : (u + (r & 0xffffu)) >> 16);
}

/* The random bits of the stochastic rounding, from the element's index and the step (so that a
 * step rounds the same on any number of threads): one multiply by the golden ratio's 2^32 and
 * its high half folded into the low, whose 16 bits round the momentum and the other 16 the
 * variance. A rounding needs bits that are uniform and do not follow the values, not a
 * cryptographer's, and on a few cores the bf16 step is bound by its arithmetic, not by memory:
 * a stronger hash's two more multiplies are not spent. */
STW_BF16_FN uint32_t
stw_bits_hash(uint32_t x)
{
  x *= 0x9e3779b1u;
  return x ^ x >> 16;
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
