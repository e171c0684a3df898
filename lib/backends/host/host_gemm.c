/* The host backend's matrix products: a strided-batched GEMM (see clt__gemm_call in backend.h)
 * as CBLAS calls (OpenBLAS) on host memory, a GEMV where the product has one row or one column,
 * else a GEMM; in a build without CBLAS, or with CLT_HOST_GEMM=builtin (host.h), as calls of the
 * library's own GEMM (host_blas.h). The calls run on the host's pool of threads
 * (host_parallel.h), each on one thread (OpenBLAS's too): the matrices of a batch in parallel,
 * and a product with fewer matrices than threads in ranges of C's columns (or rows, where it
 * has more of them). One pool for every host kernel: with OpenBLAS's own threads beside it
 * (which spin for a while after each call), three threads shared two cores, and ResNet-18's
 * inference ran slower and less steadily than on the one pool (docs/performance.md, Matrix
 * products on the host). */
#if defined(CLT_HAVE_CBLAS)
#include <cblas.h>
#endif
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "host_blas.h"
#include "host_parallel.h"
#include "host_simd.h"
#include "core/core.h"

/* Whether products take the built-in GEMM: 1 yes, 0 CBLAS, -1 not yet read from CLT_HOST_GEMM
 * ("builtin", or "cblas", unset or empty for CBLAS; anything else ignored with a warning). */
static atomic_int builtin_gemm = -1;

bool clt__host_gemm_builtin(void)
{
#if defined(CLT_HAVE_CBLAS)
    int use = atomic_load(&builtin_gemm);
    if (use >= 0)
        return use == 1;
    const char *v = getenv("CLT_HOST_GEMM");
    bool builtin = v && strcmp(v, "builtin") == 0;
    if (v && *v && !builtin && strcmp(v, "cblas") != 0)
        clt__log(CLT_LOG_WARN, "CLT_HOST_GEMM=\"%s\" is neither builtin nor cblas: ignored", v);
    atomic_compare_exchange_strong(&builtin_gemm, &use, builtin); /* a setter's choice stays */
    return atomic_load(&builtin_gemm) == 1;
#else
    return true;
#endif
}

void clt__host_gemm_use_builtin(bool builtin)
{
    atomic_store(&builtin_gemm, builtin);
}

/* One product (c's first matrix) through the built-in GEMM. */
static void builtin_product(const clt__gemm_call *c)
{
    if (c->dtype == CLT_F64)
        clt__blas_dgemm(c->trans_a, c->trans_b, c->m, c->n, c->k, c->alpha,
                        (const double *)c->a + c->a_offset, c->lda,
                        (const double *)c->b + c->b_offset, c->ldb, c->beta,
                        (double *)c->c + c->c_offset, c->ldc);
    else
        clt__blas_sgemm(c->trans_a, c->trans_b, c->m, c->n, c->k, (float)c->alpha,
                        (const float *)c->a + c->a_offset, c->lda,
                        (const float *)c->b + c->b_offset, c->ldb, (float)c->beta,
                        (float *)c->c + c->c_offset, c->ldc);
}

#if defined(CLT_HAVE_CBLAS)
/* Whether a size fits CBLAS's integer type (int, or 64 bits in OpenBLAS's ILP64 builds). */
static bool fits(size_t v)
{
    return v <= (sizeof(blasint) == sizeof(int64_t) ? (size_t)INT64_MAX : (size_t)INT_MAX);
}

/* A product with one row (m 1) or one column (n 1) as a matrix-vector product: OpenBLAS's
 * sgemm with m 1 ran a GPT-2 decoding step's products well below sgemv's speed. The matrix
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

/* One product (c's first matrix) in elements of T through CBLAS's GEMV or GEMM for T. */
#define HOST_PRODUCT(T, gemv_fn, gemm_fn)                                                      \
    do {                                                                                       \
        const T *a = (const T *)c->a + c->a_offset, *b = (const T *)c->b + c->b_offset;        \
        T *out = (T *)c->c + c->c_offset;                                                      \
        if (gemv && c->beta == 0)                                                              \
            for (size_t e = 0; e < (g.trans ? g.cols : g.rows); e++)                           \
                out[e * g.out_inc] = 0;                                                        \
        if (gemv)                                                                              \
            gemv_fn(CblasRowMajor, g.trans ? CblasTrans : CblasNoTrans, (blasint)g.rows,       \
                    (blasint)g.cols, (T)c->alpha, g.of_a ? a : b, (blasint)g.ld,               \
                    g.of_a ? b : a, (blasint)g.inc, (T)c->beta, out, (blasint)g.out_inc);      \
        else                                                                                   \
            gemm_fn(CblasRowMajor, c->trans_a ? CblasTrans : CblasNoTrans,                     \
                    c->trans_b ? CblasTrans : CblasNoTrans, (blasint)c->m, (blasint)c->n,      \
                    (blasint)c->k, (T)c->alpha, a, (blasint)c->lda, b, (blasint)c->ldb,        \
                    (T)c->beta, out, (blasint)c->ldc);                                         \
    } while (0)

static void cblas_product(const clt__gemm_call *c)
{
    gemv_call g = {0};
    const bool gemv = as_gemv(c, &g);
    if (c->dtype == CLT_F64)
        HOST_PRODUCT(double, cblas_dgemv, cblas_dgemm);
    else
        HOST_PRODUCT(float, cblas_sgemv, cblas_sgemm);
}

/* Whether CBLAS takes the product's sizes; else an error under fn. */
static clt_status cblas_check(const char *fn, clt_device *dev, const clt__gemm_call *c)
{
    const size_t sizes[] = {c->m, c->n, c->k, c->lda, c->ldb, c->ldc};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (!fits(sizes[i]))
            return clt__error(CLT_ERR_UNSUPPORTED, fn,
                              "a matrix product of %zu x %zu by %zu x %zu on %s exceeds the "
                              "sizes CBLAS takes (leading dimensions %zu, %zu, %zu)",
                              c->m, c->k, c->k, c->n, dev->name, c->lda, c->ldb, c->ldc);
    return CLT_OK;
}
#endif

/* The epilogue (clt__gemm_call) over an m x n matrix of T with rows ldc apart (bias NULL or at
 * its offset), row by row while the product's rows are still in cache. */
#define HOST_EPILOGUE(T)                                                                       \
    static CLT__SIMD void epilogue_##T(T *restrict c, size_t m, size_t n, size_t ldc,          \
                                       const T *restrict bias, bool bias_rows, bool relu)      \
    {                                                                                          \
        for (size_t i = 0; i < m; i++) {                                                       \
            T *restrict row = c + i * ldc;                                                     \
            if (bias && bias_rows)                                                             \
                for (size_t j = 0; j < n; j++)                                                 \
                    row[j] += bias[i];                                                         \
            else if (bias)                                                                     \
                for (size_t j = 0; j < n; j++)                                                 \
                    row[j] += bias[j];                                                         \
            if (relu)                                                                          \
                for (size_t j = 0; j < n; j++)                                                 \
                    row[j] = row[j] < 0 ? 0 : row[j];                                          \
        }                                                                                      \
    }
HOST_EPILOGUE(float)
HOST_EPILOGUE(double)

/* One product and its epilogue, built-in or through CBLAS. */
static void product(const clt__gemm_call *c, bool builtin)
{
    if (builtin)
        builtin_product(c);
#if defined(CLT_HAVE_CBLAS)
    else
        cblas_product(c);
#endif
    if (!clt__gemm_has_epilogue(c))
        return;
    const bool relu = c->act == CLT__ACT_RELU;
    if (c->dtype == CLT_F64)
        epilogue_double((double *)c->c + c->c_offset, c->m, c->n, c->ldc,
                        c->bias ? (const double *)c->bias + c->bias_offset : NULL, c->bias_rows,
                        relu);
    else
        epilogue_float((float *)c->c + c->c_offset, c->m, c->n, c->ldc,
                       c->bias ? (const float *)c->bias + c->bias_offset : NULL, c->bias_rows,
                       relu);
}

/* The least multiply-adds of one piece of a split product (about 5 microseconds of a core), and
 * the multiple of columns or rows a piece starts at (whole vectors of AVX-512 floats). */
#define PIECE_MIN_FMA 262144
#define PIECE_ALIGN 16

/* A strided-batched product as pieces for the pool: each matrix of the batch in `blocks`
 * ranges of `step` columns of C (along_n) or rows, piece i the range i % blocks of matrix
 * i / blocks. */
typedef struct gemm_split {
    const clt__gemm_call *c;
    size_t blocks, step;
    bool along_n, builtin;
} gemm_split;

static void run_pieces(const void *call, size_t lo, size_t hi)
{
    const gemm_split *s = call;
    for (size_t i = lo; i < hi; i++) {
        clt__gemm_call p = *s->c;
        size_t mat = i / s->blocks, r0 = (i % s->blocks) * s->step;
        size_t dim = s->along_n ? p.n : p.m, len = dim - r0 < s->step ? dim - r0 : s->step;
        p.a_offset += mat * p.a_stride, p.b_offset += mat * p.b_stride;
        p.c_offset += mat * p.c_stride, p.batch = 1;
        if (s->along_n)
            p.n = len, p.b_offset += r0 * (p.trans_b ? p.ldb : 1), p.c_offset += r0;
        else
            p.m = len, p.a_offset += r0 * (p.trans_a ? 1 : p.lda), p.c_offset += r0 * p.ldc;
        if (s->along_n != p.bias_rows) /* the bias along the split dimension */
            p.bias_offset += r0;
        product(&p, s->builtin);
    }
}

clt_status clt__host_gemm(const char *fn, clt_device *dev, const clt__gemm_call *c)
{
    if (c->row_sums) /* CBLAS gives the product alone */
        return clt__gemm_composed_row_sums(fn, dev, c, clt__host_gemm);
    if (c->c_group) /* CBLAS stores C's rows whole */
        return clt__gemm_composed_groups(fn, dev, c, clt__host_gemm);
    const bool builtin = clt__host_gemm_builtin();
#if defined(CLT_HAVE_CBLAS)
    clt_status st = builtin ? CLT_OK : cblas_check(fn, dev, c);
    if (st != CLT_OK)
        return st;
#endif
    /* the pool's count (its first reading also leaves OpenBLAS one thread: host_parallel.h) */
    size_t threads = (size_t)clt_get_num_threads();
    gemm_split s = {.c = c, .blocks = 1, .along_n = c->n >= c->m, .builtin = builtin};
    size_t dim = s.along_n ? c->n : c->m, fma = c->m * c->n * c->k; /* fits: sizes in memory */
    s.step = dim;
    if (threads > 1 && c->batch < threads && fma >= 2 * (size_t)PIECE_MIN_FMA) {
        /* each matrix in ranges enough for every thread, whole vectors apart */
        size_t want = (threads + c->batch - 1) / c->batch, most = fma / PIECE_MIN_FMA;
        want = want < most ? want : most;
        s.step = (dim + want - 1) / want;
        s.step = (s.step + PIECE_ALIGN - 1) / PIECE_ALIGN * PIECE_ALIGN;
        s.step = s.step < dim ? s.step : dim;
        s.blocks = (dim + s.step - 1) / s.step;
    }
    clt__host_parallel(c->batch * s.blocks, fma / s.blocks / 8 + 1, run_pieces, &s);
    return CLT_OK;
}
