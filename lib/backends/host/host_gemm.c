/* The host backend's matrix products: a strided-batched GEMM (see clt__gemm_call in backend.h)
 * as one CBLAS call (OpenBLAS) per matrix of the batch, on host memory: a GEMV where the
 * product has one row or one column, else a GEMM. */
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

/* A product with one row (m 1) or one column (n 1) as a matrix-vector product: OpenBLAS's
 * sgemm with m 1 ran a GPT-2 decoding step's products at a third of sgemv's speed. The matrix
 * is `rows` x `cols` with rows ld apart at element offset mat (of B, or of A with of_a), times
 * op() per trans, the vector's elements inc apart from vec, the result's out_inc apart. With
 * beta 0 the result is zeroed first, so that whatever was in it (NaN) stays out of the sum
 * whichever way the BLAS build scales by 0. */
typedef struct gemv_call {
    bool of_a, trans;
    size_t rows, cols, ld, inc, out_inc;
} gemv_call;

static bool as_gemv(const clt__gemm_call *c, gemv_call *g)
{
    if (c->k == 0 || (c->m != 1 && c->n != 1))
        return false;
    if (c->m == 1) /* c = op(B)^T a: B is k x n, or n x k transposed */
        *g = (gemv_call){.of_a = false,
                         .trans = !c->trans_b,
                         .rows = c->trans_b ? c->n : c->k,
                         .cols = c->trans_b ? c->k : c->n,
                         .ld = c->ldb,
                         .inc = c->trans_a ? c->lda : 1,
                         .out_inc = 1};
    else /* c = op(A) b: A is m x k, or k x m transposed */
        *g = (gemv_call){.of_a = true,
                         .trans = c->trans_a,
                         .rows = c->trans_a ? c->k : c->m,
                         .cols = c->trans_a ? c->m : c->k,
                         .ld = c->lda,
                         .inc = c->trans_b ? 1 : c->ldb,
                         .out_inc = c->ldc};
    return g->ld >= g->cols && g->inc >= 1 && g->out_inc >= 1; /* as CBLAS requires */
}

/* The batch's products as elements of T through CBLAS's GEMV and GEMM for T, in
 * clt__host_gemm (c, g, gemv and the transposes ta, tb and tg in scope). */
#define HOST_GEMM_BATCH(T, gemv_fn, gemm_fn)                                                   \
    do {                                                                                       \
        const T *a = (const T *)c->a + c->a_offset, *b = (const T *)c->b + c->b_offset;        \
        for (size_t i = 0; i < c->batch; i++) {                                                \
            const T *ai = a + i * c->a_stride, *bi = b + i * c->b_stride;                      \
            T *out = (T *)c->c + c->c_offset + i * c->c_stride;                                \
            if (gemv && c->beta == 0)                                                          \
                for (size_t e = 0; e < (g.trans ? g.cols : g.rows); e++)                       \
                    out[e * g.out_inc] = 0;                                                    \
            if (gemv)                                                                          \
                gemv_fn(CblasRowMajor, tg, (blasint)g.rows, (blasint)g.cols, (T)c->alpha,      \
                        g.of_a ? ai : bi, (blasint)g.ld, g.of_a ? bi : ai, (blasint)g.inc,     \
                        (T)c->beta, out, (blasint)g.out_inc);                                  \
            else                                                                               \
                gemm_fn(CblasRowMajor, ta, tb, (blasint)c->m, (blasint)c->n, (blasint)c->k,    \
                        (T)c->alpha, ai, (blasint)c->lda, bi, (blasint)c->ldb, (T)c->beta,     \
                        out, (blasint)c->ldc);                                                 \
        }                                                                                      \
    } while (0)

clt_status clt__host_gemm(const char *fn, clt_device *dev, const clt__gemm_call *c)
{
    const size_t sizes[] = {c->m, c->n, c->k, c->lda, c->ldb, c->ldc};
    const enum CBLAS_TRANSPOSE ta = c->trans_a ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = c->trans_b ? CblasTrans : CblasNoTrans;
    gemv_call g = {0};
    const bool gemv = as_gemv(c, &g);
    const enum CBLAS_TRANSPOSE tg = gemv && g.trans ? CblasTrans : CblasNoTrans;

    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (!fits(sizes[i]))
            return clt__error(CLT_ERR_UNSUPPORTED, fn,
                              "a matrix product of %zu x %zu by %zu x %zu on %s exceeds the "
                              "sizes CBLAS takes (leading dimensions %zu, %zu, %zu)",
                              c->m, c->k, c->k, c->n, dev->name, c->lda, c->ldb, c->ldc);
    if (c->dtype == CLT_F64)
        HOST_GEMM_BATCH(double, cblas_dgemv, cblas_dgemm);
    else
        HOST_GEMM_BATCH(float, cblas_sgemv, cblas_sgemm);
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
