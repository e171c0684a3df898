/* The products the linalg and gemm suites check against: random operands and a naive product
 * computed in double here (f32 within TOL_F32, f64 within TOL_F64, of the sum of the absolute
 * products). */
#ifndef CLT_TEST_MATMUL_CHECK_H
#define CLT_TEST_MATMUL_CHECK_H

#include <math.h>
#include <stdlib.h>

#include "helpers.h"

#define TOL_F32 1e-5
#define TOL_F64 1e-12

/* A standard normal tensor made on cpu (the same values for every device), moved to dev. */
static inline clt_tensor *rnd(clt_device *dev, clt_dtype dt, int ndim, const int64_t *shape)
{
    clt_tensor *h = clt_tensor_randn(ndim, shape, dt, clt_device_cpu());
    ck_assert_msg(h != NULL, "%s", clt_last_error());
    clt_tensor *t = clt_tensor_to(h, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    clt_tensor_release(h);
    return t;
}

/* The tensor's elements in row-major order as doubles (the caller frees them). */
static inline double *values(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    void *raw = test_bytes(t);
    double *v = malloc((n ? n : 1) * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < n; i++)
        v[i] = clt_tensor_dtype(t) == CLT_F64 ? ((double *)raw)[i] : ((float *)raw)[i];
    free(raw);
    return v;
}

static inline void assert_shape(const clt_tensor *t, int ndim, const int64_t *shape)
{
    ck_assert_int_eq(clt_tensor_ndim(t), ndim);
    for (int d = 0; d < ndim; d++)
        ck_assert_int_eq(clt_tensor_shape(t)[d], shape[d]);
}

/* Compares got with the sum over p of a[r, p] * b[p, c] (+ bias[c]), per output element, within
 * tol of the sum of the absolute terms. */
static inline void compare(const double *want, const double *bound, const clt_tensor *got, double tol)
{
    double *g = values(got);
    size_t n = (size_t)clt_tensor_numel(got);
    for (size_t i = 0; i < n; i++)
        ELEMENT_CHECK(fabs(g[i] - want[i]) <= tol * bound[i],
                      "element %zu on %s: %.17g, expected %.17g (bound %.3g)", i,
                      clt_device_name(clt_tensor_device(got)), g[i], want[i], tol * bound[i]);
    free(g);
}

/* torch.matmul computed naively: checks out's shape and values against a @ b. */
static inline void check_matmul(clt_tensor *a, clt_tensor *b, clt_tensor *out, double tol)
{
    int an = clt_tensor_ndim(a), bn = clt_tensor_ndim(b), nb, on = 0;
    const int64_t *as = clt_tensor_shape(a), *bs = clt_tensor_shape(b);
    int64_t m = an == 1 ? 1 : as[an - 2], k = as[an - 1], n = bn == 1 ? 1 : bs[bn - 1];
    int64_t bshape[CLT_MAX_DIMS], oshape[CLT_MAX_DIMS], batch = 1;
    int anb = an > 2 ? an - 2 : 0, bnb = bn > 2 ? bn - 2 : 0;
    nb = anb > bnb ? anb : bnb;
    for (int d = 0; d < nb; d++) {
        int64_t sa = d - (nb - anb) >= 0 ? as[d - (nb - anb)] : 1;
        int64_t sb = d - (nb - bnb) >= 0 ? bs[d - (nb - bnb)] : 1;
        bshape[d] = sa == 1 ? sb : sa;
        oshape[on++] = bshape[d];
        batch *= bshape[d];
    }
    if (an > 1)
        oshape[on++] = m;
    if (bn > 1)
        oshape[on++] = n;
    assert_shape(out, on, oshape);

    double *av = values(a), *bv = values(b);
    size_t total = (size_t)(batch * m * n);
    double *want = malloc((total ? total : 1) * sizeof *want);
    double *bound = malloc((total ? total : 1) * sizeof *bound);
    for (int64_t i = 0; i < batch; i++) {
        int64_t ia = 0, ib = 0, rest = i, sa_mul = 1, sb_mul = 1;
        for (int d = nb - 1; d >= 0; d--) { /* batch index of a and of b (size 1: 0) */
            int64_t idx = rest % bshape[d];
            rest /= bshape[d];
            int ad = d - (nb - anb), bd = d - (nb - bnb);
            if (ad >= 0) {
                ia += (as[ad] == 1 ? 0 : idx) * sa_mul;
                sa_mul *= as[ad];
            }
            if (bd >= 0) {
                ib += (bs[bd] == 1 ? 0 : idx) * sb_mul;
                sb_mul *= bs[bd];
            }
        }
        for (int64_t r = 0; r < m; r++)
            for (int64_t c = 0; c < n; c++) {
                double s = 0, abs_s = 0;
                for (int64_t p = 0; p < k; p++) {
                    double t = av[ia * m * k + r * k + p] * bv[ib * k * n + p * n + c];
                    s += t;
                    abs_s += fabs(t);
                }
                want[(i * m + r) * n + c] = s;
                bound[(i * m + r) * n + c] = abs_s;
            }
    }
    compare(want, bound, out, tol);
    free(want);
    free(bound);
    free(av);
    free(bv);
}

#endif
