/* fp16.h — IEEE binary16 as the runtime stores a 16-bit compute copy in fp16 mixed precision:
 * rounded to nearest, ties to even, as PyTorch's .half() rounds (values from 65520 up become
 * infinity; subnormals kept; NaN stays NaN). Compiles as C and as CUDA (host and device), so the
 * CPU, the runtime and the CUDA kernels round the same way. After Fabian Giesen's
 * float_to_half_fast3_rtne. */
#ifndef STW_FP16_H
#define STW_FP16_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define STW_FP16_FN static __host__ __device__ inline
#else
#define STW_FP16_FN static inline
#endif

STW_FP16_FN uint16_t
stw_fp16_from_float(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u >= 0x47800000u) /* 65536 and above, infinity, NaN */
    return (uint16_t)(sign | (u > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (u < 0x38800000u) { /* below 2^-14: a subnormal or zero, rounded by adding 0.5 */
    float a;
    memcpy(&a, &u, sizeof a);
    a += 0.5f;
    uint32_t r;
    memcpy(&r, &a, sizeof r);
    return (uint16_t)(sign | (r - 0x3f000000u));
  }
  uint32_t odd = (u >> 13) & 1u;
  u += 0xc8000fffu + odd; /* the exponent rebiased by -112, rounded to nearest even */
  return (uint16_t)(sign | (u >> 13));
}

STW_FP16_FN float
stw_fp16_to_float(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu, u;
  if (em >= 0x7c00u) { /* infinity, NaN */
    u = sign | 0x7f800000u | ((em & 0x3ffu) << 13);
  } else if (em >= 0x400u) {
    u = sign | ((em << 13) + 0x38000000u);
  } else { /* a subnormal: em units of 2^-24, exactly */
    float f = (float)em * 5.9604644775390625e-8f;
    memcpy(&u, &f, sizeof u);
    u |= sign;
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

#endif
