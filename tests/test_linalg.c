/* Linalg suite: clt_matmul and clt_linear on every device against a naive product computed in
 * double here from the same random inputs (f32 within 1e-5, f64 within 1e-12, of the sum of
 * the absolute products); 1-D, batched and broadcast shapes, views, zero sizes, bad input and
 * allocation failures that change nothing. Every GEMM variant of the OpenCL backend on awkward
 * strided-batched calls; the tuner (a variant that gives wrong results is never chosen, the
 * choice is stored and read back by another process). The first run on an OpenCL device
 * compiles CLBlast's kernels, which is slow on PoCL: the shapes are few and small. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "opencl/cl_internal.h"
#include "tensor/tensor_internal.h"

#define TOL_F32 1e-5
#define TOL_F64 1e-12

/* A standard normal tensor made on cpu (the same values for every device), moved to dev. */
static clt_tensor *rnd(clt_device *dev, clt_dtype dt, int ndim, const int64_t *shape)
{
    clt_tensor *h = clt_tensor_randn(ndim, shape, dt, clt_device_cpu());
    ck_assert_msg(h != NULL, "%s", clt_last_error());
    clt_tensor *t = clt_tensor_to(h, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    clt_tensor_release(h);
    return t;
}

/* The tensor's elements in row-major order as doubles (the caller frees them). */
static double *values(const clt_tensor *t)
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

static void assert_shape(const clt_tensor *t, int ndim, const int64_t *shape)
{
    ck_assert_int_eq(clt_tensor_ndim(t), ndim);
    for (int d = 0; d < ndim; d++)
        ck_assert_int_eq(clt_tensor_shape(t)[d], shape[d]);
}

/* Compares got with the sum over p of a[r, p] * b[p, c] (+ bias[c]), per output element, within
 * tol of the sum of the absolute terms. */
static void compare(const double *want, const double *bound, const clt_tensor *got, double tol)
{
    double *g = values(got);
    size_t n = (size_t)clt_tensor_numel(got);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs(g[i] - want[i]) <= tol * bound[i],
                      "element %zu on %s: %.17g, expected %.17g (bound %.3g)", i,
                      clt_device_name(clt_tensor_device(got)), g[i], want[i], tol * bound[i]);
    free(g);
}

/* torch.matmul computed naively: checks out's shape and values against a @ b. */
static void check_matmul(clt_tensor *a, clt_tensor *b, clt_tensor *out, double tol)
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

/* x @ weight^T + bias computed naively: checks out's shape and values. */
static void check_linear(clt_tensor *x, clt_tensor *w, clt_tensor *bias, clt_tensor *out,
                         double tol)
{
    int xn = clt_tensor_ndim(x);
    int64_t in = clt_tensor_shape(x)[xn - 1], outf = clt_tensor_shape(w)[0];
    int64_t rows = clt_tensor_numel(x) / (in ? in : 1), oshape[CLT_MAX_DIMS];
    if (in == 0) {
        rows = 1;
        for (int d = 0; d < xn - 1; d++)
            rows *= clt_tensor_shape(x)[d];
    }
    memcpy(oshape, clt_tensor_shape(x), (size_t)xn * sizeof *oshape);
    oshape[xn - 1] = outf;
    assert_shape(out, xn, oshape);

    double *xv = values(x), *wv = values(w), *bv = bias ? values(bias) : NULL;
    size_t total = (size_t)(rows * outf);
    double *want = malloc((total ? total : 1) * sizeof *want);
    double *bound = malloc((total ? total : 1) * sizeof *bound);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < outf; o++) {
            double s = bv ? bv[o] : 0, abs_s = bv ? fabs(bv[o]) : 0;
            for (int64_t p = 0; p < in; p++) {
                double t = xv[r * in + p] * wv[o * in + p];
                s += t;
                abs_s += fabs(t);
            }
            want[r * outf + o] = s;
            bound[r * outf + o] = abs_s;
        }
    compare(want, bound, out, tol);
    free(want);
    free(bound);
    free(xv);
    free(wv);
    free(bv);
}

/* clt_matmul of random operands of the given shapes, checked. */
static void matmul_case(clt_device *dev, clt_dtype dt, int an, const int64_t *as, int bn,
                        const int64_t *bs, double tol)
{
    clt_tensor *a = rnd(dev, dt, an, as), *b = rnd(dev, dt, bn, bs);
    clt_tensor *c = clt_matmul(a, b);
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    ck_assert_ptr_eq(clt_tensor_device(c), dev);
    ck_assert_int_eq(clt_tensor_dtype(c), dt);
    check_matmul(a, b, c, tol);
    clt_tensor_release(c);
    clt_tensor_release(b);
    clt_tensor_release(a);
}

/* 2-D, 1-D, batched and broadcast shapes, in f32. */
START_TEST(test_matmul_shapes)
{
    clt_device *dev = test_device(_i);
    test_live base = test_live_now();
    clt_manual_seed(1);
    matmul_case(dev, CLT_F32, CLT_SHAPE(1, 1), CLT_SHAPE(1, 1), TOL_F32);
    matmul_case(dev, CLT_F32, CLT_SHAPE(7, 13), CLT_SHAPE(13, 5), TOL_F32);
    matmul_case(dev, CLT_F32, CLT_SHAPE(13), CLT_SHAPE(13), TOL_F32);        /* dot: 0-d */
    matmul_case(dev, CLT_F32, CLT_SHAPE(13), CLT_SHAPE(13, 5), TOL_F32);     /* (5,) */
    matmul_case(dev, CLT_F32, CLT_SHAPE(7, 13), CLT_SHAPE(13), TOL_F32);     /* (7,) */
    matmul_case(dev, CLT_F32, CLT_SHAPE(3, 4, 5), CLT_SHAPE(5, 2), TOL_F32); /* folded */
    matmul_case(dev, CLT_F32, CLT_SHAPE(3, 4, 5), CLT_SHAPE(3, 5, 2), TOL_F32);
    matmul_case(dev, CLT_F32, CLT_SHAPE(4, 5), CLT_SHAPE(3, 5, 2), TOL_F32); /* shared a */
    matmul_case(dev, CLT_F32, CLT_SHAPE(2, 1, 4, 5), CLT_SHAPE(3, 5, 6), TOL_F32);
    matmul_case(dev, CLT_F32, CLT_SHAPE(5), CLT_SHAPE(3, 5, 2), TOL_F32);    /* (3, 2) */
    matmul_case(dev, CLT_F32, CLT_SHAPE(3, 4, 5), CLT_SHAPE(5), TOL_F32);    /* (3, 4) */
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* Host allocations one clt_matmul makes (the output, and any copies of its operands). */
static long allocations_of(clt_tensor *a, clt_tensor *b, clt_tensor **out)
{
    long before = clt__allocation_attempts(CLT__HOST) + clt__allocation_attempts(CLT__DEVICE);
    *out = clt_matmul(a, b);
    ck_assert_msg(*out != NULL, "%s", clt_last_error());
    return clt__allocation_attempts(CLT__HOST) + clt__allocation_attempts(CLT__DEVICE) - before;
}

/* Transposed, sliced and expanded views: the results match, and views BLAS can read as they are
 * (a transposed contiguous matrix, rows a stride apart, a batch broadcast by stride 0) cost no
 * more allocations than contiguous operands. OpenCL devices use CLBlast here, which reads every
 * such layout in place (the library's own kernels may pack B into a buffer of their own). */
START_TEST(test_matmul_views)
{
    setenv("CLT_GEMM", "clblast", 1);
    clt_device *dev = test_device(_i);
    test_live base = test_live_now();
    clt_manual_seed(2);
    clt_tensor *at = rnd(dev, CLT_F32, CLT_SHAPE(13, 7)), *bt = rnd(dev, CLT_F32, CLT_SHAPE(5, 13));
    clt_tensor *a = clt_transpose(at, 0, 1), *b = clt_transpose(bt, 0, 1); /* (7, 13), (13, 5) */
    clt_tensor *ac = clt_contiguous(a), *bc = clt_contiguous(b);
    clt_tensor *wide = rnd(dev, CLT_F32, CLT_SHAPE(7, 26));
    clt_tensor *strided = clt_slice(wide, 1, 0, 26, 2);  /* (7, 13), columns 2 apart */
    clt_tensor *narrow = clt_narrow(wide, 1, 3, 13);     /* (7, 13), rows 26 apart */
    clt_tensor *b3 = rnd(dev, CLT_F32, CLT_SHAPE(3, 2, 5));
    clt_tensor *b3t = clt_transpose(b3, 1, 2);           /* (3, 5, 2), each matrix transposed */
    clt_tensor *a1 = rnd(dev, CLT_F32, CLT_SHAPE(1, 4, 5));
    clt_tensor *a3 = clt_expand(a1, CLT_SHAPE(3, 4, 5)); /* batch stride 0 */
    clt_tensor *r;
    ck_assert_ptr_nonnull(a3);

    r = clt_matmul(ac, bc); /* the first product builds kernels: not counted */
    ck_assert_ptr_nonnull(r);
    clt_tensor_release(r);
    long plain = allocations_of(ac, bc, &r);
    check_matmul(ac, bc, r, TOL_F32);
    clt_tensor_release(r);
    ck_assert_int_eq(allocations_of(a, b, &r), plain);
    check_matmul(a, b, r, TOL_F32);
    clt_tensor_release(r);
    ck_assert_int_eq(allocations_of(narrow, b, &r), plain);
    check_matmul(narrow, b, r, TOL_F32);
    clt_tensor_release(r);
    ck_assert_int_gt(allocations_of(strided, bc, &r), plain); /* copied */
    check_matmul(strided, bc, r, TOL_F32);
    clt_tensor_release(r);

    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(3, 4, 5), CLT_F32, dev);
    clt_tensor *y = clt_contiguous(b3t);
    long batched = allocations_of(x, y, &r);
    clt_tensor_release(r);
    ck_assert_int_eq(allocations_of(a3, b3t, &r), batched);
    check_matmul(a3, b3t, r, TOL_F32);
    clt_tensor_release(r);
    clt_tensor_release(y);
    clt_tensor_release(x);

    clt_tensor *parts[] = {a3, a1, b3, b3t, narrow, strided, wide, bc, ac, b, a, bt, at};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        clt_tensor_release(parts[i]);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* Zero sizes: k = 0 gives zeros (or the bias), m, n or a batch of 0 an empty result. */
START_TEST(test_matmul_zero_sizes)
{
    clt_device *dev = test_device(_i);
    test_live base = test_live_now();
    clt_manual_seed(3);
    matmul_case(dev, CLT_F32, CLT_SHAPE(3, 0), CLT_SHAPE(0, 4), TOL_F32);
    matmul_case(dev, CLT_F32, CLT_SHAPE(0), CLT_SHAPE(0), TOL_F32);
    matmul_case(dev, CLT_F32, CLT_SHAPE(2, 3, 0), CLT_SHAPE(0, 4), TOL_F32);
    matmul_case(dev, CLT_F32, CLT_SHAPE(0, 5), CLT_SHAPE(5, 4), TOL_F32);
    matmul_case(dev, CLT_F32, CLT_SHAPE(3, 5), CLT_SHAPE(5, 0), TOL_F32);
    matmul_case(dev, CLT_F32, CLT_SHAPE(0, 2, 5), CLT_SHAPE(5, 4), TOL_F32);

    /* the output's memory held NaN before: k = 0 must still give exact zeros */
    clt_tensor *junk = clt_tensor_full(CLT_SHAPE(4, 4), NAN, CLT_F32, dev);
    clt_tensor_release(junk);
    clt_tensor *a = clt_tensor_empty(CLT_SHAPE(4, 0), CLT_F32, dev);
    clt_tensor *b = clt_tensor_empty(CLT_SHAPE(0, 4), CLT_F32, dev);
    clt_tensor *c = clt_matmul(a, b);
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    double *v = values(c);
    for (int i = 0; i < 16; i++)
        ck_assert(v[i] == 0 && !signbit(v[i]));
    free(v);
    clt_tensor_release(c);

    clt_tensor *w = clt_tensor_empty(CLT_SHAPE(3, 0), CLT_F32, dev);
    clt_tensor *bias = rnd(dev, CLT_F32, CLT_SHAPE(3));
    clt_tensor *y = clt_linear(a, w, bias);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    check_linear(a, w, bias, y, 0);
    clt_tensor_release(y);
    y = clt_linear(a, w, NULL);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    check_linear(a, w, NULL, y, 0);
    clt_tensor_release(y);
    clt_tensor_release(bias);
    clt_tensor_release(w);
    clt_tensor_release(b);
    clt_tensor_release(a);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

static void linear_case(clt_device *dev, clt_dtype dt, int xn, const int64_t *xs, int64_t outf,
                        bool with_bias, double tol)
{
    int64_t in = xs[xn - 1];
    clt_tensor *x = rnd(dev, dt, xn, xs), *w = rnd(dev, dt, CLT_SHAPE(outf, in));
    clt_tensor *bias = with_bias ? rnd(dev, dt, CLT_SHAPE(outf)) : NULL;
    clt_tensor *y = clt_linear(x, w, bias);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    ck_assert_ptr_eq(clt_tensor_device(y), dev);
    check_linear(x, w, bias, y, tol);
    clt_tensor_release(y);
    clt_tensor_release(bias);
    clt_tensor_release(w);
    clt_tensor_release(x);
}

/* linear with and without bias, 1-D to 3-D x, and a weight that is a transposed view. */
START_TEST(test_linear)
{
    clt_device *dev = test_device(_i);
    test_live base = test_live_now();
    clt_manual_seed(4);
    linear_case(dev, CLT_F32, CLT_SHAPE(4, 5), 3, true, TOL_F32);
    linear_case(dev, CLT_F32, CLT_SHAPE(4, 5), 3, false, TOL_F32);
    linear_case(dev, CLT_F32, CLT_SHAPE(2, 4, 5), 3, true, TOL_F32);
    linear_case(dev, CLT_F32, CLT_SHAPE(5), 3, true, TOL_F32);

    clt_tensor *x = rnd(dev, CLT_F32, CLT_SHAPE(2, 4, 5));
    clt_tensor *wt = rnd(dev, CLT_F32, CLT_SHAPE(5, 3));
    clt_tensor *w = clt_transpose(wt, 0, 1);
    clt_tensor *wide = rnd(dev, CLT_F32, CLT_SHAPE(6));
    clt_tensor *bias = clt_slice(wide, 0, 0, 6, 2); /* (3,), stride 2 */
    clt_tensor *y = clt_linear(x, w, bias);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    check_linear(x, w, bias, y, TOL_F32);
    clt_tensor_release(y);
    clt_tensor *xt = clt_transpose(x, 1, 2); /* (2, 5, 4): each matrix transposed */
    clt_tensor *w4 = rnd(dev, CLT_F32, CLT_SHAPE(3, 4));
    y = clt_linear(xt, w4, NULL);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    check_linear(xt, w4, NULL, y, TOL_F32);
    clt_tensor_release(y);
    clt_tensor *parts[] = {w4, xt, bias, wide, w, wt, x};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        clt_tensor_release(parts[i]);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* f64 where the device has it. */
START_TEST(test_matmul_f64)
{
    clt_device *dev = test_device(_i);
    if (!clt_device_get_info(dev)->fp64)
        return;
    test_live base = test_live_now();
    clt_manual_seed(5);
    matmul_case(dev, CLT_F64, CLT_SHAPE(7, 13), CLT_SHAPE(13, 5), TOL_F64);
    matmul_case(dev, CLT_F64, CLT_SHAPE(13), CLT_SHAPE(13), TOL_F64);
    matmul_case(dev, CLT_F64, CLT_SHAPE(3, 4, 5), CLT_SHAPE(3, 5, 2), TOL_F64);
    matmul_case(dev, CLT_F64, CLT_SHAPE(2, 1, 4, 5), CLT_SHAPE(3, 5, 6), TOL_F64);
    linear_case(dev, CLT_F64, CLT_SHAPE(2, 4, 5), 3, true, TOL_F64);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

#define EXPECT_FAIL(call, status, text)                                                        \
    do {                                                                                       \
        clt_clear_error();                                                                     \
        ck_assert_ptr_null(call);                                                              \
        ck_assert_msg(clt_last_status() == (status), "%s: %s",                                \
                      clt_status_name(clt_last_status()), clt_last_error());                   \
        ck_assert_error_has(text);                                                             \
    } while (0)

/* Every error: its status and message, and nothing leaked. */
START_TEST(test_matmul_bad_input)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    char text[160];
    clt_tensor *a = clt_tensor_ones(CLT_SHAPE(7, 13), CLT_F32, dev);
    clt_tensor *b = clt_tensor_ones(CLT_SHAPE(12, 5), CLT_F32, dev);
    clt_tensor *b13 = clt_tensor_ones(CLT_SHAPE(13, 5), CLT_F32, dev);
    clt_tensor *i32 = clt_tensor_ones(CLT_SHAPE(13, 5), CLT_I32, dev);
    clt_tensor *f16 = clt_tensor_ones(CLT_SHAPE(7, 13), CLT_F16, dev);
    clt_tensor *s = clt_tensor_ones(0, NULL, CLT_F32, dev);
    clt_tensor *v = clt_tensor_ones(CLT_SHAPE(3), CLT_F32, dev);
    clt_tensor *x3 = clt_tensor_ones(CLT_SHAPE(2, 4, 13), CLT_F32, dev);
    clt_tensor *y3 = clt_tensor_ones(CLT_SHAPE(3, 13, 5), CLT_F32, dev);
    clt_tensor *w = clt_tensor_ones(CLT_SHAPE(5, 13), CLT_F32, dev);
    clt_tensor *bias4 = clt_tensor_ones(CLT_SHAPE(4), CLT_F32, dev);
    clt_tensor *host = clt_tensor_ones(CLT_SHAPE(13, 5), CLT_F32, cpu);
    clt_tensor *f64 = clt_device_get_info(dev)->fp64
                          ? clt_tensor_ones(CLT_SHAPE(13, 5), CLT_F64, dev) : NULL;
    test_live base = test_live_now();

    EXPECT_FAIL(clt_matmul(NULL, b), CLT_ERR_INVALID_ARGUMENT, "clt_matmul: tensor is NULL");
    EXPECT_FAIL(clt_matmul(a, NULL), CLT_ERR_INVALID_ARGUMENT, "clt_matmul: tensor is NULL");
    EXPECT_FAIL(clt_linear(NULL, w, NULL), CLT_ERR_INVALID_ARGUMENT, "clt_linear: tensor is NULL");
    EXPECT_FAIL(clt_matmul(a, b), CLT_ERR_SHAPE,
                "clt_matmul: shapes (7, 13) and (12, 5) cannot be multiplied (inner sizes 13 "
                "and 12 differ)");
    EXPECT_FAIL(clt_matmul(b13, v), CLT_ERR_SHAPE,
                "clt_matmul: shapes (13, 5) and (3,) cannot be multiplied (inner sizes 5 and 3");
    EXPECT_FAIL(clt_matmul(x3, y3), CLT_ERR_SHAPE,
                "clt_matmul: shapes (2, 4, 13) and (3, 13, 5) cannot be multiplied: their batch "
                "dimensions do not broadcast (batch dimension 0: 2 and 3)");
    EXPECT_FAIL(clt_matmul(s, v), CLT_ERR_SHAPE,
                "clt_matmul: shapes () and (3,) cannot be multiplied: both need at least 1 "
                "dimension");
    EXPECT_FAIL(clt_matmul(v, s), CLT_ERR_SHAPE, "clt_matmul: shapes (3,) and ()");
    snprintf(text, sizeof text,
             "clt_matmul: dtype i32 is not supported on %s: matrix products take f32 or f64",
             clt_device_name(dev));
    EXPECT_FAIL(clt_matmul(a, i32), CLT_ERR_DTYPE, text);
    snprintf(text, sizeof text, "clt_matmul: dtype f16 is not supported on %s",
             clt_device_name(dev));
    EXPECT_FAIL(clt_matmul(f16, b13), CLT_ERR_DTYPE, text);
    if (f64) {
        EXPECT_FAIL(clt_matmul(a, f64), CLT_ERR_DTYPE,
                    "clt_matmul: expected all tensors of the same dtype, got f32 and f64 "
                    "(matrix products do not promote");
        EXPECT_FAIL(clt_linear(a, w, f64), CLT_ERR_DTYPE, "clt_linear: expected all tensors "
                                                          "of the same dtype, got f32 and f64");
    }
    if (dev != cpu) {
        snprintf(text, sizeof text,
                 "clt_matmul: expected all tensors on the same device, got %s and cpu",
                 clt_device_name(dev));
        EXPECT_FAIL(clt_matmul(a, host), CLT_ERR_DEVICE_MISMATCH, text);
        snprintf(text, sizeof text,
                 "clt_linear: expected all tensors on the same device, got %s and cpu",
                 clt_device_name(dev));
        EXPECT_FAIL(clt_linear(a, w, host), CLT_ERR_DEVICE_MISMATCH, text);
    }
    EXPECT_FAIL(clt_linear(a, b13, NULL), CLT_ERR_SHAPE,
                "clt_linear: shapes (7, 13) and (13, 5) do not fit x (..., in) and weight (out, "
                "in): in is 13 and 5");
    EXPECT_FAIL(clt_linear(a, v, NULL), CLT_ERR_SHAPE,
                "clt_linear: shapes (7, 13) and (3,) do not fit x (..., in) and weight (out, in)");
    EXPECT_FAIL(clt_linear(s, w, NULL), CLT_ERR_SHAPE, "clt_linear: shapes () and (5, 13)");
    EXPECT_FAIL(clt_linear(a, w, bias4), CLT_ERR_SHAPE,
                "clt_linear: shapes (5, 13) and (4,) do not fit weight (out, in) and bias (out) "
                "with out = 5");
    EXPECT_FAIL(clt_linear(a, w, a), CLT_ERR_SHAPE, "clt_linear: shapes (5, 13) and (7, 13)");
    if (f64) { /* a device without fp64, as the device reports it */
        clt_tensor *f64b = clt_tensor_ones(CLT_SHAPE(5, 2), CLT_F64, dev);
        dev->info.fp64 = false;
        snprintf(text, sizeof text, "clt_matmul: dtype f64 is not supported on %s (%s): the "
                 "device has no fp64", clt_device_name(dev), clt_device_get_info(dev)->name);
        EXPECT_FAIL(clt_matmul(f64, f64b), CLT_ERR_DTYPE, text);
        dev->info.fp64 = true;
        clt_tensor_release(f64b);
    }
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);

    clt_tensor *parts[] = {a, b, b13, i32, f16, s, v, x3, y3, w, bias4, host, f64};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        clt_tensor_release(parts[i]);
}
END_TEST

/* One product under fault injection: the operands and which function. */
typedef struct fault_case {
    clt_tensor *a, *b, *bias;
    bool linear;
} fault_case;

static bool run_fault_case(void *ctx)
{
    fault_case *c = ctx;
    clt_tensor *r = c->linear ? clt_linear(c->a, c->b, c->bias) : clt_matmul(c->a, c->b);
    clt_tensor_release(r);
    return r != NULL;
}

/* Every allocation of clt_matmul (and clt_linear) failing in turn: the right status and
 * message, nothing leaked, the operands unchanged. Includes operands that must be copied. */
static void allocation_failures(clt_device *dev)
{
    clt_manual_seed(6);
    clt_tensor *a = rnd(dev, CLT_F32, CLT_SHAPE(7, 13)), *b = rnd(dev, CLT_F32, CLT_SHAPE(13, 5));
    clt_tensor *wide = rnd(dev, CLT_F32, CLT_SHAPE(2, 1, 4, 10));
    clt_tensor *strided = clt_slice(wide, 3, 0, 10, 2); /* (2, 1, 4, 5), copied */
    clt_tensor *b3 = rnd(dev, CLT_F32, CLT_SHAPE(3, 5, 6));
    clt_tensor *w = rnd(dev, CLT_F32, CLT_SHAPE(5, 13)), *bias = rnd(dev, CLT_F32, CLT_SHAPE(5));
    double *before = values(strided);
    fault_case cases[] = {{a, b, NULL, false}, {strided, b3, NULL, false}, {a, w, bias, true}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *fn = cases[i].linear ? "clt_linear" : "clt_matmul";
        test_fault_sweep(run_fault_case, &cases[i], fn, CLT__HOST);
        test_fault_sweep(run_fault_case, &cases[i], fn, CLT__DEVICE);
    }
    double *after = values(strided);
    ck_assert_mem_eq(before, after, 40 * sizeof *before);
    free(after);
    free(before);
    clt_tensor *parts[] = {bias, w, b3, strided, wide, b, a};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        clt_tensor_release(parts[i]);
}

START_TEST(test_matmul_allocation_failures)
{
    allocation_failures(test_device(_i));
}
END_TEST

/* The same with the packed GEMM on OpenCL devices, whose copy of B is an allocation too. */
START_TEST(test_matmul_allocation_failures_packed)
{
    setenv("CLT_GEMM", "packed", 1);
    allocation_failures(test_device(_i));
}
END_TEST

/* The OpenCL backend turns CLBlast's own status codes into CLT_ERR_INTERNAL naming the code
 * (here a leading dimension below the column count, which the front end never passes). */
START_TEST(test_gemm_clblast_status)
{
    clt_device *dev = test_device(_i);
    char text[200];
    if (clt_device_get_info(dev)->type == CLT_DEVICE_HOST)
        return;
    clt_tensor *a = clt_tensor_ones(CLT_SHAPE(4, 4), CLT_F32, dev);
    clt_tensor *c = clt_tensor_zeros(CLT_SHAPE(4, 4), CLT_F32, dev);
    clt__gemm_call g = {.dtype = CLT_F32, .m = 4, .n = 4, .k = 4, .batch = 1, .alpha = 1,
                        .a = a->storage->buf, .b = a->storage->buf, .c = c->storage->buf,
                        .lda = 2, .ldb = 4, .ldc = 4};
    clt_clear_error();
    ck_assert_int_eq(clt__cl_gemm_run("clt_matmul", dev, CLT__GEMM_CLBLAST, &g, NULL),
                     CLT_ERR_INTERNAL);
    snprintf(text, sizeof text,
             "clt_matmul: CLBlastSgemm (4 x 4 by 4 x 4, batch 1) on %s failed with CLBlast "
             "status -1016 (CLBlastInvalidLeadDimA)",
             clt_device_name(dev));
    ck_assert_error_has(text);
    g.lda = 4;
    g.batch = 2;
    g.c_stride = 256; /* C's buffer (512 bytes: the allocator's smallest class) lacks the second */
    ck_assert_int_eq(clt__cl_gemm_run("clt_matmul", dev, CLT__GEMM_CLBLAST, &g, NULL),
                     CLT_ERR_INTERNAL);
    ck_assert_error_has("CLBlastSgemmStridedBatched (4 x 4 by 4 x 4, batch 2)");
    ck_assert_error_has("CLBlastInsufficientMemoryC");
    clt_tensor_release(c);
    clt_tensor_release(a);
}
END_TEST

/* Strided-batched calls for the variant test: see test_gemm_check. */
static const test_gemm_case gemm_cases[] = {
    {1, 1, 1, 1, false, false, 1, 0, false},    {4, 64, 8, 1, false, false, 1, 0, false},
    {5, 65, 3, 1, false, false, 1, 0, false},   {3, 1, 100, 1, true, false, 1, 0, false},
    {1, 200, 7, 1, false, true, 1, 0, false},   {70, 130, 45, 2, true, true, 0.5, 2, false},
    {33, 64, 129, 3, false, false, 1, 1, true}, {130, 17, 64, 1, false, true, 1, -1, false},
    {257, 70, 31, 2, true, false, 2, 0, true},  {8, 128, 256, 1, false, false, 1, 0, false},
};

/* Every variant of the OpenCL backend, f32 and f64, on every case: transposes, sizes off the
 * tile edges, offsets, padded rows, batch strides, a B shared by the batch, alpha and beta. */
START_TEST(test_gemm_variants)
{
    clt_device *dev = test_device(_i);
    if (clt__is_host(dev))
        return;
    srand(5);
    for (int v = 0; v < CLT__GEMM_VARIANTS; v++)
        for (int d = 0; d < 2; d++) {
            clt_dtype dt = d ? CLT_F64 : CLT_F32;
            if (dt == CLT_F64 && !dev->info.fp64)
                continue;
            for (size_t i = 0; i < sizeof gemm_cases / sizeof *gemm_cases; i++)
                test_gemm_check(dev, dt, (clt__gemm_variant)v, &gemm_cases[i]);
        }
}
END_TEST

static void collect_log(clt_log_level level, const char *message, void *user)
{
    char *log = user;
    (void)level;
    size_t used = strlen(log);
    snprintf(log + used, 8192 - used, "%s\n", message);
}

/* f32 tuning on gpu:0 with the choices written to fd: 0 when they came out of tuning (logged
 * "tuned in"), the log holds `expect` and no choice is the variant `never`. */
static int tune_into(int fd, clt__gemm_variant never, const char *expect, char *log)
{
    clt__gemm_variant choice[CLT__GEMM_CHOICES];
    clt_device *gpu = clt_device_get("gpu:0");
    clt_set_log_callback(collect_log, log, CLT_LOG_INFO);
    if (!gpu || clt__cl_gemm_tune("test", gpu, CLT_F32, choice) != CLT_OK)
        return 1;
    for (int i = 0; i < CLT__GEMM_CHOICES; i++)
        if (choice[i] == never)
            return 2;
    if (write(fd, choice, sizeof choice) != (ssize_t)sizeof choice)
        return 3;
    if (!strstr(log, expect))
        return 4;
    return strstr(log, "tuned in") ? 0 : 5;
}

/* tune_into in this process, asserting it succeeded: choice receives the choices. */
static void tune_here(clt__gemm_variant never, const char *expect, char *log,
                      clt__gemm_variant *choice)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(tune_into(fds[1], never, expect, log), 0);
    ck_assert_int_eq(read(fds[0], choice, CLT__GEMM_CHOICES * sizeof *choice),
                     (ssize_t)(CLT__GEMM_CHOICES * sizeof *choice));
    close(fds[0]), close(fds[1]);
}

/* A copy of the kernels in a fresh folder, made CLT_KERNEL_DIR, in which the GEMM kernel whose
 * body holds `line` negates every product it computes. */
static void break_gemm_kernel(const char *line)
{
    const char *kernels = test_temp_dir();
    char path[512], *text = calloc(1, 1 << 16), *at;
    FILE *f;
    test_copy_kernels(kernels);
    snprintf(path, sizeof path, "%s/gemm.cl", kernels);
    ck_assert_ptr_nonnull(f = fopen(path, "rb"));
    ck_assert_uint_gt(fread(text, 1, (1 << 16) - 1, f), 0);
    fclose(f);
    ck_assert_ptr_nonnull(at = strstr(text, line));
    ck_assert_ptr_nonnull(f = fopen(path, "wb"));
    fwrite(text, 1, (size_t)(at - text) + strlen(line), f);
    fputs(" alpha = -alpha;", f);
    fputs(at + strlen(line), f);
    fclose(f);
    free(text);
    setenv("CLT_KERNEL_DIR", kernels, 1);
}

/* a @ b (b^T with transpose_b) of a few sizes, one from each of several classes, checked. */
static void products_right(bool transpose_b)
{
    clt_device *gpu = clt_device_get("gpu:0");
    clt_manual_seed(4);
    for (int64_t n = 24; n <= 600; n *= 5) {
        clt_tensor *a = rnd(gpu, CLT_F32, CLT_SHAPE(n, n + 3));
        clt_tensor *b = transpose_b ? rnd(gpu, CLT_F32, CLT_SHAPE(n, n + 3))
                                    : rnd(gpu, CLT_F32, CLT_SHAPE(n + 3, n));
        clt_tensor *bt = transpose_b ? clt_transpose(b, 0, 1) : clt_tensor_retain(b);
        clt_tensor *c = clt_matmul(a, bt);
        ck_assert_msg(c != NULL, "%s", clt_last_error());
        check_matmul(a, bt, c, TOL_F32);
        clt_tensor_release(c), clt_tensor_release(bt), clt_tensor_release(b);
        clt_tensor_release(a);
    }
}

/* The tuner with a direct kernel that gives wrong results (CLT_KERNEL_DIR): it is verified out
 * with a warning and never chosen; a process started after reads the same choices from the disk
 * cache without tuning, and products are right with them. */
START_TEST(test_gemm_tuning)
{
    static char log[8192];
    clt__gemm_variant first[CLT__GEMM_CHOICES], again[CLT__GEMM_CHOICES];
    int fds[2], status = -1;
    if (!test_use_vendors(true, false))
        return;
    unsetenv("CLT_GEMM"); /* the tuned choice, whatever the environment says */
    setenv("CLT_CACHE_DIR", test_temp_dir(), 1);
    break_gemm_kernel("__global const T *bp = bsrc + b_off + b * b_bs + j0;"); /* direct */

    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork(); /* before this process touches OpenCL */
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(tune_into(fds[1], CLT__GEMM_DIRECT,
                        "GEMM variant direct on gpu:0 (f32) gave wrong results", log));
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tuning child: %d", status);
    ck_assert_int_eq(read(fds[0], first, sizeof first), (ssize_t)sizeof first);

    ck_assert_int_eq(tune_into(fds[1], CLT__GEMM_DIRECT, "", log), 5); /* not tuned again */
    ck_assert_int_eq(read(fds[0], again, sizeof again), (ssize_t)sizeof again);
    ck_assert_mem_eq(first, again, sizeof first);
    close(fds[0]), close(fds[1]);

    products_right(false);
    products_right(true);
}
END_TEST

/* A packed kernel that gives wrong results: never chosen, nor as the variant for products whose
 * class chose direct but whose B is transposed (CLBlast runs those), and products are right. */
START_TEST(test_gemm_tuning_fallback)
{
    static char log[8192];
    clt__gemm_variant choice[CLT__GEMM_CHOICES];
    if (!test_use_vendors(true, false))
        return;
    unsetenv("CLT_GEMM");
    setenv("CLT_CACHE_DIR", "off", 1);
    break_gemm_kernel(
        "__global const T *bp = panels + ((ulong)b * get_global_size(1) + p) * k * PW;");
    tune_here(CLT__GEMM_PACKED, "GEMM variant packed on gpu:0 (f32) gave wrong results", log,
              choice);
    ck_assert_int_eq(choice[CLT__GEMM_CLASSES], CLT__GEMM_CLBLAST);
    products_right(true);
    products_right(false);
}
END_TEST

/* A gemm.cl that does not build: the library's variants fail verification with the build's
 * error in a warning, and CLBlast runs every product. The failures are the tuner's own: the
 * caller's last error stays as it was. */
START_TEST(test_gemm_tuning_build_failure)
{
    static char log[8192];
    const char *kernels = test_temp_dir();
    clt__gemm_variant choice[CLT__GEMM_CHOICES];
    if (!test_use_vendors(true, false))
        return;
    unsetenv("CLT_GEMM");
    setenv("CLT_CACHE_DIR", "off", 1);
    test_copy_kernels(kernels);
    test_write_file(kernels, "gemm.cl", "__kernel void gemm_pack(void) { not OpenCL C }\n");
    test_allow_stderr(); /* PoCL prints the compiler's error count */
    setenv("CLT_KERNEL_DIR", kernels, 1);
    clt_set_error(CLT_ERR_SHAPE, "earlier", "a failure before tuning");
    tune_here(CLT__GEMM_PACKED, "building OpenCL program 'gemm:", log, choice);
    ck_assert_str_eq(clt_last_error(), "earlier: a failure before tuning");
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_msg(strstr(log, "GEMM variant packed on gpu:0 (f32) failed") != NULL, "%s", log);
    ck_assert_msg(strstr(log, "GEMM variant direct on gpu:0 (f32) failed") != NULL, "%s", log);
    for (int i = 0; i < CLT__GEMM_CHOICES; i++)
        ck_assert_int_eq(choice[i], CLT__GEMM_CLBLAST);
}
END_TEST

/* An untuned device runs the default variant for its kind at once, small products and large:
 * the register tiles where the driver keeps each work-item's vectors (native float width above
 * 1), CLBlast where it vectorises across work-items; nothing is tuned, and the products are
 * right. */
START_TEST(test_gemm_defaults)
{
    static char log[8192];
    clt_device *dev = test_device(_i);
    clt__gemm_variant v;
    if (clt__is_host(dev))
        return;
    unsetenv("CLT_GEMM");
    setenv("CLT_CACHE_DIR", test_temp_dir(), 1); /* no stored choices */
    clt_set_log_callback(collect_log, log, CLT_LOG_INFO);
    bool tiles = clt__cl(dev)->native_float_width > 1;
    clt__gemm_call small = {.dtype = CLT_F32, .m = 1, .n = 5, .k = 10, .batch = 1};
    clt__gemm_call large = {.dtype = CLT_F32, .m = 1024, .n = 1024, .k = 1024, .batch = 1};
    ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &small, &v), CLT_OK);
    ck_assert_int_eq(v, tiles ? CLT__GEMM_DIRECT : CLT__GEMM_CLBLAST);
    ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &large, &v), CLT_OK);
    ck_assert_int_eq(v, tiles ? CLT__GEMM_PACKED : CLT__GEMM_CLBLAST);
    clt_manual_seed(6);
    for (int64_t n = 1; n <= 200; n *= 14) {
        clt_tensor *a = rnd(dev, CLT_F32, CLT_SHAPE(n, 10));
        clt_tensor *b = rnd(dev, CLT_F32, CLT_SHAPE(10, 5));
        clt_tensor *c = clt_matmul(a, b);
        ck_assert_msg(c != NULL, "%s", clt_last_error());
        check_matmul(a, b, c, TOL_F32);
        clt_tensor_release(c), clt_tensor_release(b), clt_tensor_release(a);
    }
    ck_assert_msg(strstr(log, "tuned in") == NULL, "%s", log);
}
END_TEST

/* CLT_GEMM names the variant every product uses; a name that is none is an error. */
START_TEST(test_gemm_forced)
{
    clt_device *gpu;
    if (!test_use_vendors(true, false))
        return;
    setenv("CLT_GEMM", "fastest", 1);
    gpu = clt_device_get("gpu:0");
    clt_tensor *a = clt_tensor_ones(CLT_SHAPE(3, 3), CLT_F32, gpu);
    ck_assert_ptr_null(clt_matmul(a, a));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_matmul: CLT_GEMM=fastest names no GEMM variant: expected auto, "
                        "clblast, packed, direct or tiled");
    clt_tensor_release(a);
}
END_TEST

Suite *suite_linalg(void)
{
    Suite *s = suite_create("linalg");
    /* CLBlast's kernels compile slowly on PoCL the first time */
    TCase *tc = test_case("matmul", 600);
    ADD_DEVICE_TEST(tc, test_matmul_shapes);
    ADD_DEVICE_TEST(tc, test_matmul_views);
    ADD_DEVICE_TEST(tc, test_matmul_zero_sizes);
    ADD_DEVICE_TEST(tc, test_linear);
    ADD_DEVICE_TEST(tc, test_matmul_f64);
    ADD_DEVICE_TEST(tc, test_matmul_bad_input);
    ADD_DEVICE_TEST(tc, test_matmul_allocation_failures);
    ADD_DEVICE_TEST(tc, test_matmul_allocation_failures_packed);
    ADD_DEVICE_TEST(tc, test_gemm_clblast_status);
    ADD_DEVICE_TEST(tc, test_gemm_variants);
    ADD_DEVICE_TEST(tc, test_gemm_defaults);
    tcase_add_test(tc, test_gemm_tuning);
    tcase_add_test(tc, test_gemm_tuning_fallback);
    tcase_add_test(tc, test_gemm_tuning_build_failure);
    tcase_add_test(tc, test_gemm_forced);
    suite_add_tcase(s, tc);
    return s;
}
