/* clones.h — STW_CLONES: a hot loop compiled for AVX-512, AVX2 and the x86-64 baseline, the best
 * one picked when the program starts, so that an installed binary runs anywhere and uses the
 * vector units it finds. (ISA clones rather than arch= clones: the bodies they call inline only
 * into a caller of the same arch.) Every clone of an integer loop computes the same bits; a
 * float loop's do where nothing contracts or reassociates (train/kernels.h). */
#ifndef STW_CLONES_H
#define STW_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__)
#define STW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define STW_CLONES
#endif

#endif
