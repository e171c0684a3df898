/* The host backend's matrix products: a strided-batched GEMM (see clt__gemm_call in backend.h)
 * as one CBLAS call (OpenBLAS) per matrix of the batch, on host memory. */
#include <cblas.h>
#include <limits.h>
#include <stdint.h>

#include "host.h"
#include "host_parallel.h"
#include "core/core.h"

/* Whether a size fits CBLAS's integer type (int, or 64 bits in OpenBLAS's ILP64 builds). */
static bool fits(size_t v)
{
    return v <= (sizeof(blasint) == sizeof(int64_t) ? (size_t)INT64_MAX : (size_t)INT_MAX);
}

clt_status clt__host_gemm(const char *fn, clt_device *dev, const clt__gemm_call *c)
{
    const size_t sizes[] = {c->m, c->n, c->k, c->lda, c->ldb, c->ldc};
    const enum CBLAS_TRANSPOSE ta = c->trans_a ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = c->trans_b ? CblasTrans : CblasNoTrans;

    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (!fits(sizes[i]))
            return clt__error(CLT_ERR_UNSUPPORTED, fn,
                              "a matrix product of %zu x %zu by %zu x %zu on %s exceeds the "
                              "sizes CBLAS takes (leading dimensions %zu, %zu, %zu)",
                              c->m, c->k, c->k, c->n, dev->name, c->lda, c->ldb, c->ldc);
    if (c->dtype == CLT_F64) {
        const double *a = (const double *)c->a + c->a_offset;
        const double *b = (const double *)c->b + c->b_offset;
        double *out = (double *)c->c + c->c_offset;
        for (size_t i = 0; i < c->batch; i++)
            cblas_dgemm(CblasRowMajor, ta, tb, (blasint)c->m, (blasint)c->n, (blasint)c->k,
                        c->alpha, a + i * c->a_stride, (blasint)c->lda, b + i * c->b_stride,
                        (blasint)c->ldb, c->beta, out + i * c->c_stride, (blasint)c->ldc);
    } else {
        const float *a = (const float *)c->a + c->a_offset;
        const float *b = (const float *)c->b + c->b_offset;
        float *out = (float *)c->c + c->c_offset;
        for (size_t i = 0; i < c->batch; i++)
            cblas_sgemm(CblasRowMajor, ta, tb, (blasint)c->m, (blasint)c->n, (blasint)c->k,
                        (float)c->alpha, a + i * c->a_stride, (blasint)c->lda,
                        b + i * c->b_stride, (blasint)c->ldb, (float)c->beta,
                        out + i * c->c_stride, (blasint)c->ldc);
    }
    return CLT_OK;
}

void clt__blas_threads(int n)
{
#if defined(CLT_HAVE_OPENBLAS_THREADS)
    openblas_set_num_threads(n);
#else
    (void)n; /* a CBLAS without a thread count of its own */
#endif
}
