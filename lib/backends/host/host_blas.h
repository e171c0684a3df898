/* The library's own GEMM on host memory, for builds without CBLAS (and, at run time, instead of
 * it: host_gemm.c). Row-major, as cblas_sgemm(CblasRowMajor, ...): C = alpha op(A) op(B) +
 * beta C, with op(A) m x k, op(B) k x n and C m x n, rows lda, ldb and ldc elements apart, op()
 * the transpose where trans_a or trans_b. With beta 0, C is written without being read (NaN
 * there stays out); with alpha 0 or k 0, C = beta C (zeros for beta 0) and A and B are not
 * read. Each call runs on its caller's thread alone; calls on several threads at once are safe.
 *
 * The kernels are chosen once, by the processor's features: AVX-512F, else AVX2 with FMA, else
 * the baseline (SSE2 on x86-64; every other processor, and compilers without GCC's vector
 * extensions, take the baseline). The environment variable CLT_HOST_GEMM_ISA (avx512, avx2 or
 * baseline), read at the first call, picks a lesser one; a name the processor lacks, or one of
 * no ISA, is ignored. */
#ifndef CLT_HOST_BLAS_H
#define CLT_HOST_BLAS_H

#include <stdbool.h>
#include <stddef.h>

/* Neither fails: the packed operands of a product of more than a few thousand elements of A
 * and B live in a buffer from the heap, or, where the heap has none to give, in smaller blocks
 * on the stack (slower). That buffer is no allocation fault injection counts or fails (it has
 * the stack to fall back on); smaller products, and those with one row or one column, need
 * none. */
void clt__blas_sgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha,
                     const float *a, size_t lda, const float *b, size_t ldb, float beta,
                     float *c, size_t ldc);
void clt__blas_dgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, double alpha,
                     const double *a, size_t lda, const double *b, size_t ldb, double beta,
                     double *c, size_t ldc);

/* The kernels, from the least to the most capable. */
typedef enum clt__blas_isa {
    CLT__BLAS_BASELINE = 0,
    CLT__BLAS_AVX2 = 1, /* with FMA */
    CLT__BLAS_AVX512 = 2,
} clt__blas_isa;

/* The kernels in use (chosen at the first call, as above). */
clt__blas_isa clt__blas_isa_get(void);
/* Uses the kernels of `isa` from the next call on, for tests and benchmarks: false, changing
 * nothing, where the processor or the build lacks them. */
bool clt__blas_isa_set(clt__blas_isa isa);
/* "avx512", "avx2" or "baseline". */
const char *clt__blas_isa_name(clt__blas_isa isa);

#endif
