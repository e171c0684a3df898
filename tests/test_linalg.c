/* Linalg suite: clt_matmul and clt_linear on every device against a naive product computed in
 * double here from the same random inputs (f32 within 1e-5, f64 within 1e-12, of the sum of
 * the absolute products); 1-D, batched and broadcast shapes, views, zero sizes, bad input and
 * allocation failures that change nothing (the OpenCL backend's GEMM variants and tuner:
 * tests/opencl/test_gemm.c). The first run on an OpenCL device
 * compiles CLBlast's kernels, which is slow on PoCL: the shapes are few and small. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"
#include "backends/host/host.h"
#include "backends/host/host_blas.h"
#include "ops/ops_internal.h"
#include "tensor/tensor_internal.h"

#include "matmul_check.h"

#if CLT_TEST_OPENCL
bool clt__clblast_load(void); /* backends/opencl/cl_api.h */
#endif

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
#if CLT_TEST_OPENCL
    if (_i > 0 && !clt__clblast_load())
        return; /* a machine without CLBlast (Windows under Wine): the library's own kernels */
#endif
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
    TEST_RELEASE_ALL(parts);
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
    TEST_RELEASE_ALL(parts);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* test_assert_close within 1e-6, then both released. */
static void assert_same_values(clt_tensor *want, clt_tensor *got, const char *what)
{
    test_assert_close(got, want, 1e-6, what);
    clt_tensor_release(want), clt_tensor_release(got);
}

/* The products with the bias and ReLU in their epilogue (as a Sequential runs Linear or Conv2d
 * and ReLU) against the operations in turn: a strided bias, a batch of x, no terms (k 0:
 * relu(bias)), and the bias along the rows of a matrix product, strided and with k 0. */
START_TEST(test_linear_fused_relu)
{
    clt_device *dev = test_device(_i);
    test_live base = test_live_now();
    clt_manual_seed(9);
    clt_tensor *x = rnd(dev, CLT_F32, CLT_SHAPE(2, 4, 5)), *w = rnd(dev, CLT_F32, CLT_SHAPE(3, 5));
    clt_tensor *wide = rnd(dev, CLT_F32, CLT_SHAPE(6));
    clt_tensor *bias = clt_slice(wide, 0, 1, 6, 2); /* (3,), stride 2 */
    clt_tensor *lin = clt_linear(x, w, bias);
    assert_same_values(clt_relu(lin), clt__linear_act(x, w, bias, CLT__ACT_RELU), "linear");
    clt_tensor_release(lin);
    clt_tensor *x0 = clt_tensor_empty(CLT_SHAPE(4, 0), CLT_F32, dev);
    clt_tensor *w0 = clt_tensor_empty(CLT_SHAPE(3, 0), CLT_F32, dev);
    clt_tensor *r = clt_relu(bias), *want = clt_expand(r, CLT_SHAPE(4, 3));
    assert_same_values(want, clt__linear_act(x0, w0, bias, CLT__ACT_RELU), "linear, k 0");
    clt_tensor_release(r);

    clt_tensor *a = rnd(dev, CLT_F32, CLT_SHAPE(3, 7)), *b = rnd(dev, CLT_F32, CLT_SHAPE(7, 9));
    clt_tensor *col = rnd(dev, CLT_F32, CLT_SHAPE(6, 1));
    clt_tensor *rows = clt_slice(col, 0, 0, 6, 2); /* (3, 1), stride 2 */
    clt_tensor *p = clt_matmul(a, b), *sum = clt_add(p, rows);
    assert_same_values(clt_relu(sum), clt__matmul_act("test", a, b, rows, CLT__ACT_RELU),
                       "matmul, a bias along the rows");
    clt_tensor_release(sum), clt_tensor_release(p);
    clt_tensor *a0 = clt_tensor_empty(CLT_SHAPE(3, 0), CLT_F32, dev);
    clt_tensor *b0 = clt_tensor_empty(CLT_SHAPE(0, 9), CLT_F32, dev);
    r = clt_relu(rows);
    want = clt_expand(r, CLT_SHAPE(3, 9));
    assert_same_values(want, clt__matmul_act("test", a0, b0, rows, CLT__ACT_RELU),
                       "matmul, a bias along the rows, k 0");
    clt_tensor_release(r);
    clt_tensor *parts[] = {b0, a0, rows, col, b, a, w0, x0, bias, wide, w, x};
    TEST_RELEASE_ALL(parts);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* clt__matmul_row_sums against clt_matmul and clt_sum along a's rows: a dense (one product on
 * every device; the kernels' own row sums where the variant has them), stored transposed, wide
 * enough for several column tiles of C; a strided a, one row and no terms (the sums apart); and
 * operands that do not fit (NULL, the sums NULL, the error naming the caller). */
START_TEST(test_matmul_row_sums)
{
    clt_device *dev = test_device(_i);
    test_live base = test_live_now();
    clt_manual_seed(11);
    clt_tensor *a = rnd(dev, CLT_F32, CLT_SHAPE(37, 50)), *b = rnd(dev, CLT_F32, CLT_SHAPE(50, 300));
    clt_tensor *at = rnd(dev, CLT_F32, CLT_SHAPE(50, 37)), *a_t = clt_transpose(at, 0, 1);
    clt_tensor *wide = rnd(dev, CLT_F32, CLT_SHAPE(37, 100)), *a_s = clt_slice(wide, 1, 0, 100, 2);
    clt_tensor *row = rnd(dev, CLT_F32, CLT_SHAPE(1, 50));
    clt_tensor *a0 = clt_tensor_empty(CLT_SHAPE(37, 0), CLT_F32, dev);
    clt_tensor *b0 = clt_tensor_empty(CLT_SHAPE(0, 300), CLT_F32, dev);
    /* a linear layer's gradient over more rows than a column sum takes (and than llvmpipe runs
     * a loop for) */
    clt_tensor *tall = clt_tensor_full(CLT_SHAPE(70000, 3), 0.5, CLT_F32, dev);
    clt_tensor *tall_t = clt_transpose(tall, 0, 1), *b2 = rnd(dev, CLT_F32, CLT_SHAPE(70000, 8));
    struct {
        clt_tensor *a, *b;
        const char *what;
    } cases[] = {{a, b, "dense"}, {a_t, b, "transposed"}, {a_s, b, "strided"},
                 {row, b, "one row"}, {a0, b0, "no terms"}, {tall_t, b2, "70000 rows"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        clt_tensor *sums = NULL, *got = clt__matmul_row_sums("test", cases[i].a, cases[i].b, &sums);
        ck_assert_msg(got && sums, "%s: %s", cases[i].what, clt_last_error());
        char what[64];
        snprintf(what, sizeof what, "%s: the product", cases[i].what);
        assert_same_values(clt_matmul(cases[i].a, cases[i].b), got, what);
        snprintf(what, sizeof what, "%s: the row sums", cases[i].what);
        clt_tensor *want = clt_sum(cases[i].a, (int[]){1}, 1, false);
        test_assert_close(sums, want, 1e-5, what); /* (50 terms, in another order) */
        clt_tensor_release(want), clt_tensor_release(sums);
    }
    clt_tensor *sums = a; /* overwritten with NULL */
    ck_assert_ptr_null(clt__matmul_row_sums("test_caller", b, a, &sums));
    ck_assert_ptr_null(sums);
    ck_assert_error_has("test_caller");
    clt_tensor *parts[] = {b2, tall_t, tall, b0, a0, row, a_s, wide, a_t, at, b, a};
    TEST_RELEASE_ALL(parts);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* a @ b for views a and b (taken), checked, then released. */
static void view_product(clt_tensor *a, clt_tensor *b, double tol)
{
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    clt_tensor *c = clt_matmul(a, b);
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    check_matmul(a, b, c, tol);
    clt_tensor_release(c), clt_tensor_release(b), clt_tensor_release(a);
}

/* view, a view of t, with t released. */
static clt_tensor *viewed(clt_tensor *t, clt_tensor *view)
{
    clt_tensor_release(t);
    return view;
}

/* Products of one row or one column (the host runs them as matrix-vector products, OpenCL
 * devices by dot products where B is transposed) with transposed, strided and batched
 * operands, f32 and f64, and nn.Linear of one row and of one output with a bias. */
START_TEST(test_matmul_vectors)
{
    clt_device *dev = test_device(_i);
    test_live base = test_live_now();
    clt_manual_seed(7);
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_F64 : CLT_F32;
        double tol = d ? TOL_F64 : TOL_F32;
        if (d && !clt_device_get_info(dev)->fp64)
            continue;
        clt_tensor *t;
        /* (1, 37) with columns 2 apart, by B^T (37, 5) */
        t = rnd(dev, dt, CLT_SHAPE(37, 2));
        t = viewed(t, clt_transpose(t, 0, 1));
        clt_tensor *row = viewed(t, clt_narrow(t, 0, 1, 1));
        t = rnd(dev, dt, CLT_SHAPE(5, 37));
        view_product(row, viewed(t, clt_transpose(t, 0, 1)), tol);
        /* (1, 37) by (37, 5) with rows 9 apart */
        t = rnd(dev, dt, CLT_SHAPE(37, 9));
        view_product(rnd(dev, dt, CLT_SHAPE(1, 37)), viewed(t, clt_narrow(t, 1, 2, 5)), tol);
        /* A^T (7, 37) by a column (37, 1) with rows 3 apart */
        t = rnd(dev, dt, CLT_SHAPE(37, 7));
        clt_tensor *at = viewed(t, clt_transpose(t, 0, 1));
        t = rnd(dev, dt, CLT_SHAPE(37, 3));
        view_product(at, viewed(t, clt_narrow(t, 1, 1, 1)), tol);
        /* (7, 37) by (1, 37)^T */
        t = rnd(dev, dt, CLT_SHAPE(1, 37));
        view_product(rnd(dev, dt, CLT_SHAPE(7, 37)), viewed(t, clt_transpose(t, 0, 1)), tol);
        /* batches: (3, 1, 37) by B^T (3, 37, 5), (3, 7, 37) by (3, 37, 1) */
        t = rnd(dev, dt, CLT_SHAPE(3, 5, 37));
        view_product(rnd(dev, dt, CLT_SHAPE(3, 1, 37)), viewed(t, clt_transpose(t, 1, 2)), tol);
        view_product(rnd(dev, dt, CLT_SHAPE(3, 7, 37)), rnd(dev, dt, CLT_SHAPE(3, 37, 1)), tol);
        linear_case(dev, dt, CLT_SHAPE(1, 37), 5, true, tol);
        linear_case(dev, dt, CLT_SHAPE(4, 37), 1, true, tol);
    }
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* Products large enough for cpu to split over its threads (four here, whatever the machine
 * has): ranges of C's columns (more columns than rows, one row included) and of its rows, of
 * transposed and strided operands, a batch of fewer matrices than threads, f32 and f64. */
START_TEST(test_matmul_split)
{
    clt_device *dev = test_device(_i);
    int threads = clt_get_num_threads();
    test_live base = test_live_now();
    ck_assert_int_eq(clt_set_num_threads(4), CLT_OK);
    clt_manual_seed(8);
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_F64 : CLT_F32;
        double tol = d ? TOL_F64 : TOL_F32;
        if (d && !clt_device_get_info(dev)->fp64)
            continue;
        clt_tensor *t = rnd(dev, dt, CLT_SHAPE(2001, 600));
        view_product(rnd(dev, dt, CLT_SHAPE(1, 600)), viewed(t, clt_transpose(t, 0, 1)), tol);
        t = rnd(dev, dt, CLT_SHAPE(400, 301));
        clt_tensor *at = viewed(t, clt_transpose(t, 0, 1)); /* (301, 400) */
        view_product(at, rnd(dev, dt, CLT_SHAPE(400, 50)), tol);
        t = rnd(dev, dt, CLT_SHAPE(300, 710));
        view_product(rnd(dev, dt, CLT_SHAPE(41, 300)), viewed(t, clt_narrow(t, 1, 3, 701)), tol);
        view_product(rnd(dev, dt, CLT_SHAPE(3, 37, 200)), rnd(dev, dt, CLT_SHAPE(3, 200, 90)),
                     tol);
        linear_case(dev, dt, CLT_SHAPE(4, 300), 999, true, tol);
    }
    ck_assert_int_eq(clt_set_num_threads(threads), CLT_OK);
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
    TEST_RELEASE_ALL(parts);
}
END_TEST

/* One product under fault injection: the operands and which function. */
typedef struct fault_case {
    clt_tensor *a, *b, *bias;
    bool linear, relu; /* relu: clt__linear_act with ReLU */
} fault_case;

static bool run_fault_case(void *ctx)
{
    fault_case *c = ctx;
    clt_tensor *r = c->relu     ? clt__linear_act(c->a, c->b, c->bias, CLT__ACT_RELU)
                    : c->linear ? clt_linear(c->a, c->b, c->bias)
                                : clt_matmul(c->a, c->b);
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
    clt_tensor *bias10 = rnd(dev, CLT_F32, CLT_SHAPE(10));
    clt_tensor *bias_strided = clt_slice(bias10, 0, 0, 10, 2); /* (5,), copied */
    double *before = values(strided);
    fault_case cases[] = {{a, b, NULL, false, false},
                          {strided, b3, NULL, false, false},
                          {a, w, bias, true, false},
                          {a, w, bias_strided, true, true}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *fn = cases[i].linear ? "clt_linear" : "clt_matmul";
        test_fault_sweep(run_fault_case, &cases[i], fn, CLT__HOST);
        test_fault_sweep(run_fault_case, &cases[i], fn, CLT__DEVICE);
    }
    double *after = values(strided);
    ck_assert_mem_eq(before, after, 40 * sizeof *before);
    free(after);
    free(before);
    clt_tensor *parts[] = {bias_strided, bias10, bias, w, b3, strided, wide, b, a};
    TEST_RELEASE_ALL(parts);
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

/* ---- the host's own GEMM (host_blas.h) ------------------------------------------------------ */

/* A deterministic uniform value in [-1, 1) from *state (xorshift64). */
static double blas_uniform(uint64_t *state)
{
    *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17;
    return (double)(*state >> 11) / (double)(1ull << 52) - 1;
}

/* One product for clt__blas_sgemm or _dgemm: sizes, layouts and scalars. */
typedef struct blas_case {
    bool f64, trans_a, trans_b;
    size_t m, n, k, lda, ldb, ldc;
    double alpha, beta;
} blas_case;

/* Element (i, j) of an operand stored rows x cols with rows ld apart, read as op() reads it. */
static double blas_at(const double *x, bool trans, size_t ld, size_t i, size_t j)
{
    return trans ? x[j * ld + i] : x[i * ld + j];
}

/* Runs case t on fresh random operands (C's padding and, with beta 0, C itself holding NaN)
 * and checks every element of C against the product in double: within tol times the sum of
 * the absolute terms, the padding untouched. */
static void blas_check(const blas_case *t, uint64_t *state)
{
    size_t a_rows = t->trans_a ? t->k : t->m, b_rows = t->trans_b ? t->n : t->k;
    size_t na = a_rows * t->lda + 1, nb = b_rows * t->ldb + 1, nc = t->m * t->ldc + 1;
    double *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *c = malloc(nc * sizeof *c);
    double *out = malloc(nc * sizeof *out);
    void *ta = malloc(na * 8), *tb = malloc(nb * 8), *tc = malloc(nc * 8);
    ck_assert(a && b && c && out && ta && tb && tc);
    for (size_t i = 0; i < na; i++)
        a[i] = blas_uniform(state);
    for (size_t i = 0; i < nb; i++)
        b[i] = blas_uniform(state);
    for (size_t i = 0; i < nc; i++)
        c[i] = t->beta == 0 || i % t->ldc >= t->n ? NAN : blas_uniform(state);
    for (size_t i = 0; i < na + nb + nc; i++) { /* the operands in the case's dtype */
        double v = i < na ? a[i] : i < na + nb ? b[i - na] : c[i - na - nb];
        void *dst = i < na ? ta : i < na + nb ? tb : tc;
        size_t at = i < na ? i : i < na + nb ? i - na : i - na - nb;
        if (t->f64)
            ((double *)dst)[at] = v;
        else
            ((float *)dst)[at] = (float)v;
    }
    if (t->f64)
        clt__blas_dgemm(t->trans_a, t->trans_b, t->m, t->n, t->k, t->alpha, ta, t->lda, tb,
                        t->ldb, t->beta, tc, t->ldc);
    else
        clt__blas_sgemm(t->trans_a, t->trans_b, t->m, t->n, t->k, (float)t->alpha, ta, t->lda,
                        tb, t->ldb, (float)t->beta, tc, t->ldc);
    for (size_t i = 0; i < nc; i++)
        out[i] = t->f64 ? ((double *)tc)[i] : ((float *)tc)[i];
    double eps = t->f64 ? 1e-14 : 1e-6, tol = eps * (sqrt((double)t->k) + 2);
    for (size_t i = 0; i < t->m; i++) {
        for (size_t j = 0; j < t->ldc; j++) {
            double got = out[i * t->ldc + j], c0 = c[i * t->ldc + j];
            if (j >= t->n) { /* the padding: still NaN */
                ck_assert_msg(isnan(got), "padding (%zu, %zu) written: %g", i, j, got);
                continue;
            }
            double s = 0, bound = 0;
            for (size_t p = 0; p < t->k && t->alpha != 0; p++) {
                double x = blas_at(a, t->trans_a, t->lda, i, p);
                double y = blas_at(b, t->trans_b, t->ldb, p, j);
                if (!t->f64) /* the rounded operands */
                    x = (float)x, y = (float)y;
                s += x * y, bound += fabs(x * y);
            }
            double base = t->beta == 0 ? 0 : t->f64 ? c0 : (float)c0;
            double want = t->alpha * s + t->beta * base;
            bound = fabs(t->alpha) * bound + fabs(t->beta * base);
            ELEMENT_CHECK(fabs(got - want) <= tol * bound,
                          "%s %c%c %zux%zux%zu (ld %zu %zu %zu) alpha %g beta %g: C(%zu, %zu) = "
                          "%.17g, expected %.17g (bound %.3g)",
                          t->f64 ? "dgemm" : "sgemm", t->trans_a ? 'T' : 'N',
                          t->trans_b ? 'T' : 'N', t->m, t->n, t->k, t->lda, t->ldb, t->ldc,
                          t->alpha, t->beta, i, j, got, want, tol * bound);
        }
    }
    free(a), free(b), free(c), free(out), free(ta), free(tb), free(tc);
}

/* Every trans combination and a few scalars over one shape, rows padded at random. */
static void blas_shape(bool f64, size_t m, size_t n, size_t k, uint64_t *state)
{
    static const double scalars[][2] = {{1, 0}, {1, 1}, {-0.5, 0.75}, {2.5, 0}, {0, -1.5}};
    for (int tr = 0; tr < 4; tr++) {
        const double *ab = scalars[(m + n + k + (size_t)tr) % 5];
        blas_case t = {.f64 = f64,
                       .trans_a = tr & 1,
                       .trans_b = tr & 2,
                       .m = m,
                       .n = n,
                       .k = k,
                       .alpha = ab[0],
                       .beta = ab[1]};
        size_t pad = (size_t)(blas_uniform(state) * 2 + 2); /* 0 to 3 */
        t.lda = (t.trans_a ? m : k) + (tr == 0 ? 0 : pad);
        t.ldb = (t.trans_b ? k : n) + pad % 2;
        t.ldc = n + (tr == 3 ? 0 : pad);
        t.lda += t.lda == 0, t.ldb += t.ldb == 0, t.ldc += t.ldc == 0;
        blas_check(&t, state);
    }
}

/* clt__blas_sgemm and _dgemm, with every kernel the processor has, against a product in
 * double: sizes 1 to 17, primes, sizes across the blocks (depths past 384, B's columns past
 * 480, A's rows past 3072), single rows and columns; every trans combination, padded rows,
 * alpha 0, 1 and others, beta 0 (C holding NaN), 1 and others. */
START_TEST(test_host_blas_gemm)
{
    static const size_t small[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17};
    static const size_t shapes[][3] = {{31, 37, 41},  {61, 67, 97}, {127, 5, 131}, {3, 131, 29},
                                       {20, 23, 400}, {13, 500, 7}, {17, 33, 769}, {1, 300, 90},
                                       {300, 1, 90},  {1, 1, 1000}, {3100, 19, 3}, {65, 70, 0}};
    clt__blas_isa initial = clt__blas_isa_get();
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (int isa = CLT__BLAS_BASELINE; isa <= CLT__BLAS_AVX512; isa++) {
        if (!clt__blas_isa_set((clt__blas_isa)isa))
            continue;
        for (int d = 0; d < 2; d++) {
            for (size_t i = 0; i < sizeof small / sizeof *small; i++)
                for (size_t j = 0; j < sizeof small / sizeof *small; j += 3)
                    blas_shape(d, small[i], small[j], small[(i + j) % 14], &state);
            for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
                blas_shape(d, shapes[i][0], shapes[i][1], shapes[i][2], &state);
        }
    }
    ck_assert(clt__blas_isa_set(initial));
    ck_assert_int_eq(clt__blas_isa_get(), initial);
}
END_TEST

/* alpha 0 and k 0 leave A and B unread (NaN there changes nothing) and scale C by beta; sizes 0
 * touch nothing; a product large enough for a packing buffer on the heap leaks nothing, and
 * that buffer is no allocation fault injection counts (the product has the stack to fall back
 * on). */
START_TEST(test_host_blas_gemm_special)
{
    static float a[64 * 64], b[64 * 64], c[64 * 64], before[64 * 64];
    for (size_t i = 0; i < 64 * 64; i++)
        a[i] = NAN, b[i] = NAN, c[i] = (float)i;
    clt__blas_sgemm(false, false, 4, 5, 6, 0, a, 6, b, 5, 2, c, 5);
    for (size_t i = 0; i < 64 * 64; i++)
        ck_assert_float_eq(c[i], i < 20 ? 2 * (float)i : (float)i);
    clt__blas_sgemm(true, true, 3, 4, 0, 1, a, 3, b, 1, 0, c, 4);
    for (size_t i = 0; i < 12; i++)
        ck_assert_float_eq(c[i], 0);
    clt__blas_sgemm(false, false, 0, 4, 3, 1, a, 3, b, 4, 0, c, 4);
    clt__blas_sgemm(false, false, 4, 0, 3, 1, a, 3, b, 1, 0, c, 1);
    ck_assert_float_eq(c[0], 0);
    ck_assert_float_eq(c[12], 24);
    for (size_t i = 0; i < 64 * 64; i++)
        a[i] = (float)(i % 7), b[i] = (float)(i % 5), c[i] = before[i] = (float)i;
    test_live base = test_live_now();
    long attempts = clt__allocation_attempts(CLT__HOST);
    clt__fault_inject(CLT__HOST, 1);
    clt__blas_sgemm(false, false, 64, 64, 64, 1, a, 64, b, 64, 1, c, 64);
    clt__fault_inject(CLT__HOST, 0);
    ck_assert_int_eq(clt__allocation_attempts(CLT__HOST), attempts);
    ck_assert_live_eq(test_live_now(), base);
    for (size_t i = 0; i < 64; i += 9)
        for (size_t j = 0; j < 64; j += 7) {
            float want = before[i * 64 + j]; /* small integers: exact in any order */
            for (size_t p = 0; p < 64; p++)
                want += a[i * 64 + p] * b[p * 64 + j];
            ck_assert_float_eq(c[i * 64 + j], want);
        }
}
END_TEST

/* clt_matmul and clt_linear on cpu with the built-in GEMM chosen (as CLT_HOST_GEMM=builtin
 * does): shapes that cpu splits over its threads and that it does not, f32 and f64, a fused
 * bias and ReLU, and every allocation of a product large enough for a packing buffer made to
 * fail in turn (the output's: the buffer is not one of them). */
START_TEST(test_matmul_builtin_gemm)
{
    clt_device *cpu = clt_device_cpu();
    bool was = clt__host_gemm_builtin();
    int threads = clt_get_num_threads();
    clt__host_gemm_use_builtin(true);
    ck_assert(clt__host_gemm_builtin());
    ck_assert_int_eq(clt_set_num_threads(4), CLT_OK);
    test_live base = test_live_now();
    clt_manual_seed(11);
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_F64 : CLT_F32;
        double tol = d ? TOL_F64 : TOL_F32;
        matmul_case(cpu, dt, CLT_SHAPE(7, 13), CLT_SHAPE(13, 5), tol);
        matmul_case(cpu, dt, CLT_SHAPE(13), CLT_SHAPE(13, 5), tol);
        matmul_case(cpu, dt, CLT_SHAPE(7, 13), CLT_SHAPE(13), tol);
        matmul_case(cpu, dt, CLT_SHAPE(3, 37, 200), CLT_SHAPE(3, 200, 90), tol);
        matmul_case(cpu, dt, CLT_SHAPE(300, 301), CLT_SHAPE(301, 290), tol);
        matmul_case(cpu, dt, CLT_SHAPE(1, 600), CLT_SHAPE(600, 700), tol);
        clt_tensor *t = rnd(cpu, dt, CLT_SHAPE(400, 301));
        view_product(viewed(t, clt_transpose(t, 0, 1)), rnd(cpu, dt, CLT_SHAPE(400, 50)), tol);
        linear_case(cpu, dt, CLT_SHAPE(4, 300), 999, true, tol);
    }
    clt_tensor *a = rnd(cpu, CLT_F32, CLT_SHAPE(70, 80)),
               *b = rnd(cpu, CLT_F32, CLT_SHAPE(80, 90));
    fault_case big = {a, b, NULL, false, false};
    ck_assert_int_ge(test_fault_sweep(run_fault_case, &big, "clt_matmul", CLT__HOST), 1);
    clt_tensor_release(b);
    clt_tensor_release(a);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), base);
    ck_assert_int_eq(clt_set_num_threads(threads), CLT_OK);
    clt__host_gemm_use_builtin(was);
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
    ADD_DEVICE_TEST(tc, test_linear_fused_relu);
    ADD_DEVICE_TEST(tc, test_matmul_row_sums);
    ADD_DEVICE_TEST(tc, test_matmul_vectors);
    ADD_DEVICE_TEST(tc, test_matmul_split);
    ADD_DEVICE_TEST(tc, test_matmul_f64);
    ADD_DEVICE_TEST(tc, test_matmul_bad_input);
    ADD_DEVICE_TEST(tc, test_matmul_allocation_failures);
    ADD_DEVICE_TEST(tc, test_matmul_allocation_failures_packed);
    tcase_add_test(tc, test_host_blas_gemm);
    tcase_add_test(tc, test_host_blas_gemm_special);
    tcase_add_test(tc, test_matmul_builtin_gemm);
    suite_add_tcase(s, tc);
    return s;
}
