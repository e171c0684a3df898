/* CLT__SIMD marks the host's hot loops (the cpu device's kernels: reductions, casts, optimizer
 * steps) for function multiversioning: with GCC on x86-64 and glibc (ifunc) each such function
 * is compiled for AVX-512F, AVX2 and the baseline, and the loader picks the best the processor
 * has. The library builds with -ffp-contract=off and no fast-math, so every clone does the
 * same operations in the same order and rounds alike (no fma, no reassociation): the results
 * are bit for bit those of the baseline. Elsewhere (and under ThreadSanitizer) CLT__SIMD is
 * empty.
 *
 * The compilers' own vectoriser does not reliably vectorise loops over explicit lanes (GCC 12
 * leaves the AVX clones scalar), so with GCC and Clang CLT__VEC_EXT is 1 and the lanes are
 * written with their vector extensions (a vector type of a fixed number of lanes, split into
 * whatever registers the clone has); elsewhere 0, and the same lanes are plain arrays. Either
 * way each lane does the same operations in the same order. */
#ifndef CLT_HOST_SIMD_H
#define CLT_HOST_SIMD_H

#include <limits.h> /* defines __GLIBC__ on glibc */

/* Not under ThreadSanitizer: the clones' resolvers run while the loader relocates, before the
 * sanitizer's runtime exists, and its instrumentation of them crashes. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) &&   \
    __GNUC__ >= 6 && !defined(CLT_NO_SIMD_CLONES) && !defined(__SANITIZE_THREAD__)
#define CLT__SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLT__SIMD
#endif

#if defined(__GNUC__)
#define CLT__VEC_EXT 1
#else
#define CLT__VEC_EXT 0
#endif

#endif
