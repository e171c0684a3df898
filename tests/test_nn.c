/* Neural-network suite: softmax, losses, gathers, convolution, pooling, normalisation and
 * dropout on every device, against the host and against references computed here in double;
 * and the adjoint kernels of the backward passes (index_add, col2im, pool2d_backward) against
 * references written in scatter form. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"
#include "ops/ops_internal.h"

/* A cpu tensor of dtype from doubles, moved to dev. */
static clt_tensor *make(clt_device *dev, clt_dtype dt, const double *v, int ndim, const int64_t *shape)
{
    clt_tensor *h = clt_tensor_from_data(ndim, shape, v, CLT_F64, clt_device_cpu());
    clt_tensor *t = clt_tensor_to_ex(h, &(clt_to_options){.device = dev, .dtype = dt});
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    clt_tensor_release(h);
    return t;
}

/* n pseudo-random values in [-2, 2). */
static double *noise(int64_t n, unsigned seed)
{
    double *v = malloc((size_t)n * sizeof *v);
    uint32_t s = seed * 747796405u + 1;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (double)(s >> 8) / 4194304.0 - 2.0;
    }
    return v;
}

/* The values of t (any device, any dtype) as doubles, row-major; the caller frees them. */
static double *values(clt_tensor *t)
{
    clt_tensor *c = clt_tensor_to_ex(t, &(clt_to_options){.device = clt_device_cpu(), .dtype = CLT_F64});
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    double *v = test_bytes(c);
    clt_tensor_release(c);
    return v;
}

/* Asserts t (any device, any floating dtype) holds want (n values) within tol, relative to
 * max(1, |want|), and releases t. */
static void check(clt_tensor *t, const double *want, int64_t n, double tol, const char *what)
{
    ck_assert_msg(t != NULL, "%s: %s", what, clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(t), n);
    double *v = values(t);
    for (int64_t i = 0; i < n; i++)
        ELEMENT_CHECK((isnan(v[i]) && isnan(want[i])) || v[i] == want[i] ||
                          fabs(v[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])),
                      "%s: element %lld is %.9g, want %.9g", what, (long long)i, v[i], want[i]);
    free(v);
    clt_tensor_release(t);
}

START_TEST(test_softmax)
{
    clt_device *dev = test_device(_i);
    double *v = noise(28, 3), want[28], lwant[28];
    clt_tensor *x = make(dev, CLT_F32, v, CLT_SHAPE(4, 7));
    for (int r = 0; r < 4; r++) { /* along dim 1 */
        double m = -INFINITY, s = 0;
        for (int c = 0; c < 7; c++)
            m = fmax(m, v[r * 7 + c]);
        for (int c = 0; c < 7; c++)
            s += exp(v[r * 7 + c] - m);
        for (int c = 0; c < 7; c++) {
            want[r * 7 + c] = exp(v[r * 7 + c] - m) / s;
            lwant[r * 7 + c] = v[r * 7 + c] - m - log(s);
        }
    }
    clt_tensor *s = clt_softmax(x, -1), *l = clt_log_softmax(x, 1);
    check(clt_tensor_retain(s), want, 28, 1e-6, "softmax");
    check(clt_tensor_retain(l), lwant, 28, 1e-6, "log_softmax");
    clt_tensor *s0 = clt_softmax(x, 0), *cs = clt_sum(s0, (int[]){0}, 1, false);
    check(clt_tensor_retain(cs), (double[]){1, 1, 1, 1, 1, 1, 1}, 7, 1e-6, "softmax along dim 0 sums to 1");
    clt_tensor *xi = clt_tensor_ones(CLT_SHAPE(3), CLT_I32, dev);
    ck_assert_ptr_null(clt_softmax(xi, 0));
    ck_assert_error_has("clt_softmax: dtype i32 is not supported");
    ck_assert_ptr_null(clt_softmax(x, 2));
    ck_assert_error_has("valid: -2..1");
    clt_tensor *all[] = {xi, cs, s0, l, s, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
    free(v);
}
END_TEST

START_TEST(test_losses)
{
    clt_device *dev = test_device(_i);
    const double logits[] = {0, 1, 2, 3, 4, 5, 1, 1, 1};
    clt_tensor *x = make(dev, CLT_F32, logits, CLT_SHAPE(3, 3));
    int64_t tv[] = {2, 0, -100};
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(3), tv, CLT_I64, dev);
    const double lse = log(1 + exp(1) + exp(2)); /* rows 0 and 1 share it (shifted) */
    const double l0 = lse - 2, l1 = lse - 0 + 0; /* -log_softmax: row 1 target 0 -> lse - (3 - 3) */
    check(clt_cross_entropy(x, t, NULL), (double[]){(l0 + lse) / 2}, 1, 1e-6, "cross entropy mean, one ignored");
    check(clt_cross_entropy(x, t, TEST_LOSS(CLT_REDUCTION_SUM)), (double[]){l0 + l1}, 1, 1e-6, "cross entropy sum");
    check(clt_cross_entropy(x, t, TEST_LOSS(CLT_REDUCTION_NONE)), (double[]){l0, l1, 0}, 3, 1e-6, "cross entropy none");
    clt_tensor *lp = clt_log_softmax(x, 1);
    check(clt_nll_loss(lp, t, NULL), (double[]){(l0 + l1) / 2}, 1, 1e-6, "nll");
    int64_t bad[] = {2, 3, 0};
    clt_tensor *tb = clt_tensor_from_data(CLT_SHAPE(3), bad, CLT_I64, dev);
    ck_assert_ptr_null(clt_cross_entropy(x, tb, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_cross_entropy: target 3 (element 1) is out of range for size 3 (valid: 0..2)");
    clt_tensor *ti = clt_tensor_to_dtype(t, CLT_I32);
    ck_assert_ptr_null(clt_nll_loss(lp, ti, NULL));
    ck_assert_error_has("clt_nll_loss: target must be i64, not i32");
    ck_assert_ptr_null(clt_nll_loss(lp, x, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);

    const double a[] = {1, 2, 3, 4}, b[] = {1, 0, 5, 4};
    clt_tensor *ta = make(dev, CLT_F32, a, CLT_SHAPE(2, 2)), *tbb = make(dev, CLT_F32, b, CLT_SHAPE(2, 2));
    check(clt_mse_loss(ta, tbb, CLT_REDUCTION_MEAN), (double[]){2}, 1, 1e-7, "mse mean");
    check(clt_mse_loss(ta, tbb, CLT_REDUCTION_SUM), (double[]){8}, 1, 1e-7, "mse sum");
    check(clt_mse_loss(ta, tbb, CLT_REDUCTION_NONE), (double[]){0, 4, 4, 0}, 4, 1e-7, "mse none");
    ck_assert_ptr_null(clt_mse_loss(ta, tbb, (clt_reduction)7));
    clt_tensor *all[] = {tbb, ta, ti, tb, lp, t, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

/* Losses over no class (C = 0), every target ignored, as PyTorch 1.13's: the mean over no
 * counted row is NaN, the sum 0, the rows 0; label smoothing's e / C makes each NaN. Once a NULL
 * read on cpu and a crash in the OpenCL gather. A target that is not ignored is out of range. */
START_TEST(test_losses_no_class)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = clt_tensor_zeros(CLT_SHAPE(3, 0), CLT_F32, dev);
    clt_tensor *t = clt_tensor_full(CLT_SHAPE(3), -100, CLT_I64, dev);
    clt_tensor *x1 = clt_tensor_zeros(CLT_SHAPE(0), CLT_F32, dev);
    clt_tensor *t1 = clt_tensor_full(CLT_SHAPE(), -100, CLT_I64, dev);
    clt_tensor *weight = clt_tensor_zeros(CLT_SHAPE(0), CLT_F32, dev);
    clt_tensor *x4 = clt_tensor_zeros(CLT_SHAPE(2, 0, 2, 2), CLT_F32, dev);
    clt_tensor *t4 = clt_tensor_full(CLT_SHAPE(2, 2, 2), -100, CLT_I64, dev);
    const double nan = NAN, zeros[8] = {0};
    for (int logits = 0; logits < 2; logits++) {
        clt_tensor *(*loss)(clt_tensor *, clt_tensor *, const clt_loss_options *) =
            logits ? clt_cross_entropy : clt_nll_loss;
        check(loss(x, t, NULL), &nan, 1, 0, "mean");
        check(loss(x, t, TEST_LOSS(CLT_REDUCTION_SUM)), zeros, 1, 0, "sum");
        check(loss(x, t, TEST_LOSS(CLT_REDUCTION_NONE)), zeros, 3, 0, "none");
        check(loss(x1, t1, NULL), &nan, 1, 0, "1-D mean");
        check(loss(x4, t4, TEST_LOSS(CLT_REDUCTION_NONE)), zeros, 8, 0, "(N, C, d1, d2) none");
        clt_loss_options o = clt_loss_options_default();
        o.weight = weight;
        check(loss(x, t, &o), &nan, 1, 0, "weighted mean");
        o.reduction = CLT_REDUCTION_SUM;
        check(loss(x, t, &o), zeros, 1, 0, "weighted sum");
    }
    clt_loss_options o = clt_loss_options_default();
    o.label_smoothing = 0.1;
    check(clt_cross_entropy(x, t, &o), &nan, 1, 0, "smoothed mean");
    o.reduction = CLT_REDUCTION_SUM;
    check(clt_cross_entropy(x, t, &o), &nan, 1, 0, "smoothed sum");
    /* the gradient reaches x, empty */
    clt_tensor *leaf = clt_tensor_zeros(CLT_SHAPE(3, 0), CLT_F32, dev);
    ck_assert_int_eq(clt_tensor_set_requires_grad(leaf, true), CLT_OK);
    clt_tensor *l = clt_cross_entropy(leaf, t, TEST_LOSS(CLT_REDUCTION_SUM));
    ck_assert_msg(l != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_backward(l, NULL, false), CLT_OK);
    clt_tensor *g = clt_tensor_grad(leaf);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(clt_tensor_numel(g), 0);
    ck_assert_int_eq(clt_tensor_ndim(g), 2);
    /* a target that counts has no class to name */
    clt_tensor *t0 = clt_tensor_zeros(CLT_SHAPE(3), CLT_I64, dev);
    ck_assert_ptr_null(clt_cross_entropy(x, t0, NULL));
    ck_assert_error_has("clt_cross_entropy: target 0 (element 0) is out of range for size 0");
    ck_assert_ptr_null(clt_nll_loss(x, t0, NULL));
    ck_assert_error_has("clt_nll_loss: target 0 (element 0) is out of range for size 0");
    clt_tensor *all[] = {t0, g, l, leaf, t4, x4, weight, t1, x1, t, x};
    TEST_RELEASE_ALL(all);
}
END_TEST

/* Targets written from the host carry the range of their values (so that cross entropy on an
 * OpenCL device checks them without reading them back); a write that changes them, or a
 * pointer handed out, makes it unknown, and a target out of range is an error whichever way
 * the check goes. (Buffers handed out on OpenCL devices: the opencl suite.) */
START_TEST(test_cross_entropy_target_range)
{
    clt_device *dev = test_device(_i);
    const double logits[] = {0, 1, 2, 3, 4, 5};
    const double l = log(1 + exp(-1.0) + exp(-2.0)); /* row 0's loss for target 2 */
    clt_tensor *x = make(dev, CLT_F32, logits, CLT_SHAPE(2, 3));
    int64_t tv[] = {2, 0}, lo = -1, hi = -1;
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(2), tv, CLT_I64, dev);
    ck_assert(clt__tensor_range(t, &lo, &hi));
    ck_assert_int_eq(lo, 0);
    ck_assert_int_eq(hi, 2);
    check(clt_cross_entropy(x, t, NULL), (double[]){(l + (l + 2)) / 2}, 1, 1e-6, "known range");
    clt_tensor *row = clt_slice(t, 0, 1, 2, 1); /* a view: bounded by its storage's range */
    ck_assert(clt__tensor_range(row, &lo, &hi));
    clt_tensor_release(row);

    /* copies take it along: from the host, and on to another device */
    clt_tensor *h = clt_tensor_from_data(CLT_SHAPE(2), tv, CLT_I64, clt_device_cpu());
    clt_tensor *d = clt_tensor_to(h, dev);
    ck_assert(clt__tensor_range(d, &lo, &hi));
    ck_assert_int_eq(hi, 2);
    clt_tensor *back = clt_tensor_to(d, clt_device_cpu());
    ck_assert(clt__tensor_range(back, &lo, &hi));
    ck_assert_int_eq(lo, 0);
    /* not from a copy that returns before the device has read the host's values */
    clt_tensor *later = clt_tensor_to_ex(h, &(clt_to_options){.device = dev, .non_blocking = true});
    ck_assert_ptr_nonnull(later);
    ck_assert(clt__is_host(dev) || !clt__tensor_range(later, &lo, &hi));
    clt_tensor_release(later);

    /* an in-place write: unknown, and the targets checked from their values */
    clt_tensor *three = clt_tensor_full(0, NULL, 3, CLT_I64, dev);
    ck_assert_int_eq(clt_copy_(t, three), CLT_OK);
    ck_assert(!clt__tensor_range(t, &lo, &hi));
    ck_assert_ptr_null(clt_cross_entropy(x, t, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_cross_entropy: target 3 (element 0) is out of range for size 3");

    /* a host pointer handed out: never known again, even after the library writes it */
    int64_t *p = clt_tensor_data(back);
    ck_assert_ptr_nonnull(p);
    ck_assert(!clt__tensor_range(back, &lo, &hi));
    p[1] = 5;
    clt_tensor *moved = clt_tensor_to(back, dev); /* from the values as they are now */
    if (!clt__is_host(dev)) { /* (on cpu, `back` itself) */
        ck_assert(clt__tensor_range(moved, &lo, &hi));
        ck_assert_int_eq(hi, 5);
    }
    ck_assert_ptr_null(clt_cross_entropy(x, moved, NULL));
    ck_assert_error_has("clt_cross_entropy: target 5 (element 1) is out of range for size 3");
    ck_assert_int_eq(clt_fill_(back, 1), CLT_OK);
    ck_assert(!clt__tensor_range(back, &lo, &hi));

    /* a range that includes the ignored value, or negative targets: checked from the values */
    int64_t iv[] = {-100, 1};
    clt_tensor *ti = clt_tensor_from_data(CLT_SHAPE(2), iv, CLT_I64, dev);
    check(clt_cross_entropy(x, ti, NULL), (double[]){l + 1}, 1, 1e-6, "one ignored");
    clt_loss_options skip1 = clt_loss_options_default(); /* ignore_index inside the range */
    skip1.ignore_index = 1;
    int64_t kv[] = {2, 1};
    clt_tensor *tk = clt_tensor_from_data(CLT_SHAPE(2), kv, CLT_I64, dev);
    check(clt_cross_entropy(x, tk, &skip1), (double[]){l}, 1, 1e-6, "ignore_index in range");
    clt_tensor_release(tk);
    clt_tensor *all[] = {ti, moved, three, back, d, h, t, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

/* The rows kernel reads nothing for a target outside the classes (the checks above keep such
 * targets from it): that row's loss is NaN, the others' as always. */
START_TEST(test_cross_entropy_rows_out_of_range)
{
    clt_device *dev = test_device(_i);
    const double logits[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    clt_tensor *x = make(dev, CLT_F32, logits, CLT_SHAPE(3, 3));
    int64_t tv[] = {2, -5, 1000000};
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(3), tv, CLT_I64, dev);
    clt_tensor *out = clt_tensor_empty(CLT_SHAPE(3), CLT_F32, dev);
    clt__xent_call c = {.dtype = CLT_F32, .rows = 3, .classes = 3, .ignore = -100,
                        .logits = x->storage->buf, .logits_offset = x->offset,
                        .target = t->storage->buf, .target_offset = t->offset,
                        .out = out->storage->buf, .out_offset = out->offset};
    ck_assert_int_eq(CLT__BACKEND_CALL(cross_entropy, "test", dev, CLT_F32, &c), CLT_OK);
    float got[3];
    ck_assert_int_eq(clt_tensor_copy_to_host(out, got, sizeof got), CLT_OK);
    ck_assert_float_eq_tol(got[0], log(1 + exp(-1.0) + exp(-2.0)), 1e-5);
    ck_assert(isnan(got[1]) && isnan(got[2]));
    clt_tensor_release(out), clt_tensor_release(t), clt_tensor_release(x);
}
END_TEST

/* Cross entropy without weights or smoothing runs as one device operation forward and one
 * backward (the fused rows, the mean or sum taken in the operation and its gradient read by the
 * backward launch itself): against the composed path (log_softmax and the gather, which weights
 * of 1 take) on 37 rows of 11 classes with ignored rows, f32 and f64, each reduction, the loss
 * and the gradient of the logits for an upstream gradient other than 1 (one value a row
 * without a reduction). */
START_TEST(test_cross_entropy_fused)
{
    static const clt_reduction reductions[] = {CLT_REDUCTION_MEAN, CLT_REDUCTION_SUM,
                                               CLT_REDUCTION_NONE};
    clt_device *dev = test_device(_i);
    double *xv = noise(37 * 11, 21), *gv = noise(37, 22), ones[11], upstream = 1.75;
    int64_t tv[37];
    for (int i = 0; i < 37; i++)
        tv[i] = i % 5 == 3 ? -100 : (i * 7) % 11;
    for (int k = 0; k < 11; k++)
        ones[k] = 1;
    for (int f64 = 0; f64 < 2; f64++) {
        clt_dtype dt = f64 ? CLT_F64 : CLT_F32;
        if (f64 && !clt_device_get_info(dev)->fp64)
            continue;
        for (int r = 0; r < 3; r++) {
            bool rows = reductions[r] == CLT_REDUCTION_NONE;
            int64_t n = rows ? 37 : 1;
            clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(37), tv, CLT_I64, dev);
            clt_tensor *w = make(dev, dt, ones, CLT_SHAPE(11)), *x[2], *loss[2], *grad[2];
            clt_tensor *g = rows ? make(dev, dt, gv, CLT_SHAPE(37))
                                 : make(dev, dt, &upstream, 0, (int64_t[]){0});
            for (int path = 0; path < 2; path++) {
                clt_loss_options o = clt_loss_options_default();
                o.weight = path ? w : NULL;
                o.reduction = reductions[r];
                x[path] = make(dev, dt, xv, CLT_SHAPE(37, 11));
                ck_assert_int_eq(clt_tensor_set_requires_grad(x[path], true), CLT_OK);
                loss[path] = clt_cross_entropy(x[path], t, &o);
                ck_assert_msg(loss[path] != NULL, "%s", clt_last_error());
                ck_assert_int_eq(clt_tensor_numel(loss[path]), n);
                ck_assert_int_eq(clt_backward(loss[path], g, false), CLT_OK);
                grad[path] = clt_tensor_grad(x[path]);
            }
            double *want = values(loss[1]), *gwant = values(grad[1]);
            check(clt_tensor_retain(loss[0]), want, n, f64 ? 1e-12 : 1e-6, "fused cross entropy");
            check(clt_tensor_retain(grad[0]), gwant, 37 * 11, f64 ? 1e-12 : 1e-6,
                  "fused cross entropy's gradient");
            free(gwant), free(want);
            for (int path = 0; path < 2; path++)
                clt_tensor_release(grad[path]), clt_tensor_release(loss[path]),
                    clt_tensor_release(x[path]);
            clt_tensor_release(g), clt_tensor_release(w), clt_tensor_release(t);
        }
    }
    free(gv), free(xv);
}
END_TEST

/* The class losses' options against PyTorch 1.13's F.cross_entropy on the same logits (f64
 * there, f32 here): class weights, label smoothing, ignore_index, (N, C, d) inputs. */
START_TEST(test_loss_options)
{
    clt_device *dev = test_device(_i);
    const double logits[] = {0.5, -1.0, 2.0, 0.1, 1.5, 0.3, -0.7, 0.0, -0.2, 0.4, 0.9, -1.1};
    const double wv[] = {0.5, 2.0, 1.0, 1.5};
    clt_tensor *x = make(dev, CLT_F32, logits, CLT_SHAPE(3, 4));
    clt_tensor *w = make(dev, CLT_F32, wv, CLT_SHAPE(4));
    int64_t tv[] = {2, 0, 1}, zv[] = {0, 0, 0}, iv[] = {2, -100, 1};
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(3), tv, CLT_I64, dev);
    clt_tensor *zeros = clt_tensor_from_data(CLT_SHAPE(3), zv, CLT_I64, dev);
    clt_tensor *ti = clt_tensor_from_data(CLT_SHAPE(3), iv, CLT_I64, dev);
    /* class 0 is a class like any other by default */
    check(clt_cross_entropy(x, zeros, NULL), (double[]){1.3913203837249413}, 1, 1e-6, "class 0");
    static const struct {
        const char *what;
        clt_reduction reduction;
        bool weight;
        double smoothing;
        int64_t ignore_index;
        int targets; /* 0: t, 1: ti */
        int n;
        double want[3];
    } cases[] = {
        {"mean", CLT_REDUCTION_MEAN, false, 0, -100, 0, 1, {0.6913203837249413}},
        {"weights, mean", CLT_REDUCTION_MEAN, true, 0, -100, 0, 1, {0.8736957605420409}},
        {"smoothing, mean", CLT_REDUCTION_MEAN, false, 0.1, -100, 0, 1, {0.7988203837249412}},
        {"weights, smoothing, ignored, mean", CLT_REDUCTION_MEAN, true, 0.2, -100, 1, 1,
         {1.0759066320978294}},
        {"ignore_index 0, mean", CLT_REDUCTION_MEAN, false, 0, 0, 0, 1, {0.7911201748043873}},
        {"weights, sum", CLT_REDUCTION_SUM, true, 0, -100, 0, 1, {3.0579351618971433}},
        {"smoothing, sum", CLT_REDUCTION_SUM, false, 0.1, -100, 0, 1, {2.396461151174824}},
        {"weights, smoothing, ignored, sum", CLT_REDUCTION_SUM, true, 0.2, -100, 1, 1,
         {3.2277198962934883}},
        {"weights, none", CLT_REDUCTION_NONE, true, 0, -100, 0, 3,
         {0.35240593810343074, 0.24586040078302476, 2.459668823010688}},
        {"smoothing, none", CLT_REDUCTION_NONE, false, 0.1, -100, 0, 3,
         {0.5124059381034307, 0.6142208015660495, 1.269834411505344}},
        {"weights, smoothing, ignored, none", CLT_REDUCTION_NONE, true, 0.2, -100, 1, 3,
         {0.8500262350086023, 0.0, 2.3776936612848862}},
        {"ignore_index 0, none", CLT_REDUCTION_NONE, false, 0, 0, 0, 3,
         {0.35240593810343074, 0.0, 1.229834411505344}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        clt_loss_options o = clt_loss_options_default();
        o.reduction = cases[k].reduction, o.label_smoothing = cases[k].smoothing;
        o.ignore_index = cases[k].ignore_index, o.weight = cases[k].weight ? w : NULL;
        check(clt_cross_entropy(x, cases[k].targets ? ti : t, &o), cases[k].want, cases[k].n,
              2e-6, cases[k].what);
    }
    /* (N, C, d): the class dimension second, the targets without it */
    double v3[12];
    for (int k = 0; k < 12; k++)
        v3[k] = sin(k);
    int64_t t3v[] = {0, 2, 1, -100};
    clt_tensor *x3 = make(dev, CLT_F32, v3, CLT_SHAPE(2, 3, 2));
    clt_tensor *t3 = clt_tensor_from_data(CLT_SHAPE(2, 2), t3v, CLT_I64, dev);
    check(clt_cross_entropy(x3, t3, NULL), (double[]){1.361936741072742}, 1, 1e-6, "(N, C, d) mean");
    clt_tensor *n3 = clt_cross_entropy(x3, t3, TEST_LOSS(CLT_REDUCTION_NONE));
    ck_assert_int_eq(clt_tensor_ndim(n3), 2);
    check(n3, (double[]){1.3741564725631146, 2.308203100102385, 0.40345065055272744, 0}, 4, 1e-6,
          "(N, C, d) none");
    /* bad options change nothing and say why */
    test_live before = test_live_now();
    ck_assert_ptr_null(clt_cross_entropy(x, t, &(clt_loss_options){.reduction = CLT_REDUCTION_SUM}));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_cross_entropy: options did not start from clt_loss_options_default()");
    clt_loss_options o = clt_loss_options_default();
    o.label_smoothing = 1.5;
    ck_assert_ptr_null(clt_cross_entropy(x, t, &o));
    ck_assert_error_has("clt_cross_entropy: label_smoothing 1.5 is not in [0, 1]");
    o.label_smoothing = 0.1;
    ck_assert_ptr_null(clt_nll_loss(x, t, &o));
    ck_assert_error_has("clt_nll_loss: label_smoothing 0.1: only clt_cross_entropy smooths labels");
    o = clt_loss_options_default();
    o.weight = t;
    ck_assert_ptr_null(clt_cross_entropy(x, t, &o));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    o.weight = x;
    ck_assert_ptr_null(clt_cross_entropy(x, t, &o));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_cross_entropy: weight (3, 4) must have one value per class (4)");
    ck_assert_ptr_null(clt_cross_entropy(x3, t, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("(N, C, d1, ...) with (N, d1, ...)");
    ck_assert_live_eq(test_live_now(), before);
    clt_tensor *all[] = {t3, x3, ti, zeros, t, w, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

/* A tensor of `shape` holding sin(0.37 i + phase), the values tests/reference uses. */
static clt_tensor *sines(clt_device *dev, clt_dtype dt, int ndim, const int64_t *shape, double phase)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = sin(0.37 * (double)i + phase);
    clt_tensor *t = make(dev, dt, v, ndim, shape);
    free(v);
    return t;
}

/* Scaled dot-product attention against PyTorch 1.13's softmax(q k^T / sqrt(E) + mask) v (f64
 * there): no mask, a padding mask, causal; a fully masked row; the errors. */
START_TEST(test_attention)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    static const double plain[] = {
        0.1808937618493223,  0.2487990040975313,   0.28303046831003004, 0.3270726732762341,
        0.3633776070318377,  0.3505010863570978,   -0.22949230116479982, -0.375930889662041,
        -0.4714889958150516, 0.4667249454096294,   0.2450018373497552,  -0.009881120039831302,
        -0.17682357137697166, -0.20824168475192725, -0.21147526300161357, -0.3437646408076281,
        -0.2440333427087202, -0.11127327648634894};
    static const double padded[] = {
        0.6035346895030866,  0.5490163875501964,   0.42019129309469033, 0.7386283920366771,
        0.6549520823352775,  0.482631080808911,    -0.058276859687308114, -0.14994349970773796,
        -0.22131599045948103, 0.7008474321032323,  0.613139905992978,   0.44244676997590054,
        0.015586254891847062, -0.018798820919667447, -0.050639564508960344, 0.1084215750953973,
        0.17300546539391848, 0.2141738775567003};
    static const double causal[] = {
        0.963558185417193,   0.9950833498101802,  0.8919286509533796,   0.8579846149929508,
        0.7659606993842275,  0.5702675963979262,  0.06360351068868764,  -0.20672093643567396,
        -0.44906667458521893, -0.4870325980319231, -0.6578194019199075, -0.7395734357283498,
        0.03327551360817105, 0.07225627327848431, 0.101457485330056,    0.536947602448011,
        0.8056753507392133,  0.9653587199017918,  0.795547796544539,    0.8526826450679839,
        0.7944108976965922,  0.6218291287469128,  0.39178668758523977,  0.10871775621334245,
        0.20767548294394023, 0.05353183822936952, -0.10785708966034024, -0.3642163276791739,
        -0.27646848038837424, -0.15130192124927944};
    const clt_dtype dts[] = {CLT_F32, CLT_F64, CLT_F16};
    for (int d = 0; d < 3; d++) {
        clt_dtype dt = dts[d];
        double tol = dt == CLT_F16 ? 4e-3 : dt == CLT_F32 ? 2e-6 : 1e-12;
        if (!test_has_dtype(dev, dt))
            continue;
        clt_tensor *q = sines(dev, dt, CLT_SHAPE(1, 2, 3, 4), 0.1);
        clt_tensor *k = sines(dev, dt, CLT_SHAPE(1, 2, 5, 4), 0.7);
        clt_tensor *v = sines(dev, dt, CLT_SHAPE(1, 2, 5, 3), 1.3);
        clt_tensor *qc = sines(dev, dt, CLT_SHAPE(1, 2, 5, 4), 0.1);
        if (dt == CLT_F16) { /* f16 operands: PyTorch's numbers are for the exact values */
            tol = 6e-3;
        }
        check(clt_scaled_dot_product_attention(q, k, v, NULL), plain, 18, tol, "attention");
        uint8_t keep[] = {1, 1, 0, 1, 0};
        clt_tensor *m = clt_tensor_from_data(CLT_SHAPE(1, 1, 1, 5), keep, CLT_BOOL, dev);
        clt_attention_options o = clt_attention_options_default();
        o.mask = m;
        check(clt_scaled_dot_product_attention(q, k, v, &o), padded, 18, tol, "padding mask");
        o = clt_attention_options_default();
        o.causal = true;
        check(clt_scaled_dot_product_attention(qc, k, v, &o), causal, 30, tol, "causal");
        clt_tensor_release(m), clt_tensor_release(qc), clt_tensor_release(v);
        clt_tensor_release(k), clt_tensor_release(q);
    }
    /* against the same operations composed, on larger shapes, with an additive mask */
    clt_tensor *q = sines(dev, CLT_F32, CLT_SHAPE(2, 3, 7, 40), 0.2);
    clt_tensor *k = sines(dev, CLT_F32, CLT_SHAPE(2, 3, 9, 40), 0.5);
    clt_tensor *v = sines(dev, CLT_F32, CLT_SHAPE(2, 3, 9, 37), 0.9);
    clt_tensor *add = sines(dev, CLT_F32, CLT_SHAPE(7, 9), 2.0);
    clt_attention_options o = clt_attention_options_default();
    o.mask = add, o.scale = 0.3;
    clt_tensor *got = clt_scaled_dot_product_attention(q, k, v, &o);
    clt_tensor *kt = clt_transpose(k, -1, -2), *qk = clt_matmul(q, kt);
    clt_tensor *s = clt_mul_scalar(qk, 0.3), *sm = clt_add(s, add), *p = clt_softmax(sm, -1);
    clt_tensor *want = clt_matmul(p, v);
    ck_assert_msg(got && want, "%s", clt_last_error());
    double *g = test_values(got), *w = test_values(want);
    for (int64_t i = 0; i < clt_tensor_numel(want); i++)
        ELEMENT_CHECK(fabs(g[i] - w[i]) <= 2e-5, "element %lld: %.9g, composed %.9g on %s",
                      (long long)i, g[i], w[i], clt_device_name(dev));
    free(g), free(w);
    clt_tensor *tmp[] = {want, p, sm, s, qk, kt, got};
    for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++)
        clt_tensor_release(tmp[i]);
    /* a row with every key masked is NaN, as in PyTorch */
    uint8_t none[9] = {0};
    clt_tensor *m0 = clt_tensor_from_data(CLT_SHAPE(9), none, CLT_BOOL, dev);
    o = clt_attention_options_default();
    o.mask = m0;
    got = clt_scaled_dot_product_attention(q, k, v, &o);
    g = test_values(got);
    ck_assert(isnan(g[0]) && isnan(g[clt_tensor_numel(got) - 1]));
    free(g);
    clt_tensor_release(got);
    /* errors change nothing */
    o.causal = true;
    ck_assert_ptr_null(clt_scaled_dot_product_attention(q, k, v, &o));
    ck_assert_error_has("clt_scaled_dot_product_attention: a mask and causal together");
    ck_assert_ptr_null(clt_scaled_dot_product_attention(q, v, v, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("q (2, 3, 7, 40), k (2, 3, 9, 37) and v (2, 3, 9, 37) do not fit");
    clt_tensor *q64 = clt_tensor_to_dtype(q, CLT_I32);
    ck_assert_ptr_null(clt_scaled_dot_product_attention(q64, k, v, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    o = clt_attention_options_default();
    o.mask = k;
    ck_assert_ptr_null(clt_scaled_dot_product_attention(q, k, v, &o));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    o.mask = NULL, o.scale = -1;
    ck_assert_ptr_null(clt_scaled_dot_product_attention(q, k, v, &o));
    ck_assert_error_has("scale -1");
    clt_tensor *rest[] = {q64, m0, add, v, k, q};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
        clt_tensor_release(rest[i]);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Adaptive average pooling against PyTorch 1.13's F.adaptive_avg_pool2d: windows that overlap
 * (7 rows into 3, 5 columns into 2), the global average, and the unbatched form. */
START_TEST(test_adaptive_avg_pool)
{
    clt_device *dev = test_device(_i);
    static const double want32[] = {
        0.08319000341185072,   -0.01687581842500758,  -0.00902045777244287,  0.08947319391814058,
        -0.06788950236614852,  -0.13488861877340583,  0.03367478947507433,   -0.06874448950045028,
        0.044998246596260054,  0.12465307948763583,   -0.11000081820547626,  -0.14269207183207835,
        -0.020735909864034285, -0.11061940411635009,  0.0924753136518152,    0.1417114759402018,
        -0.13612072301703365,  -0.1297516103608753,   -0.0721321183740727,   -0.1364129805410457,
        0.12650874660852335,   0.1381685123658011,    -0.14245202564659318,  -0.09794845889658693,
        -0.1130420925811187,   -0.14237546773438506,  0.14215092213071204,   0.11453924844943852,
        -0.12807431055232274,  -0.05190601274972454,  -0.13751852933458827,  -0.1276400668396699,
        0.137127852967879,     0.07425879747239945,   -0.0950777435662903,   0.0016822898574320301};
    static const double want11[] = {0.00894327725093242,  0.018858760035319864, 0.026032643365096603,
                                    0.029422021206805222, 0.028534161460090753, 0.023498137075284874};
    clt_tensor *x = sines(dev, CLT_F32, CLT_SHAPE(2, 3, 7, 5), 0.3);
    clt_tensor *y = clt_adaptive_avg_pool2d(x, 3, 2);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_size(y, 2), 3);
    check(y, want32, 36, 1e-6, "adaptive 7x5 -> 3x2");
    check(clt_adaptive_avg_pool2d(x, 1, 1), want11, 6, 1e-6, "adaptive to 1x1");
    clt_module *m = clt_nn_adaptive_avg_pool2d(1, 1);
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    clt_tensor *first = clt_narrow(x, 0, 0, 1), *img = clt_squeeze(first, 0);
    clt_tensor_release(first);
    check(clt_module_forward(m, img), want11, 3, 1e-6, "unbatched, as a module");
    ck_assert_ptr_null(clt_adaptive_avg_pool2d(x, 0, 2));
    ck_assert_error_has("clt_adaptive_avg_pool2d: output size 0x2 must be positive");
    ck_assert_ptr_null(clt_nn_adaptive_avg_pool2d(1, -1));
    clt_tensor_release(img), clt_module_release(m), clt_tensor_release(x);
}
END_TEST

/* Pooling with ceil_mode against PyTorch's rule (pooling_output_shape and the average's divisor
 * hend = min(hstart + k, H + pad)): a 5x5 input, 2x2 windows at stride 2 give 3x3 (2x2 without),
 * the last windows half outside; a 6x6 input, 3x3 windows at stride 2 padded by 1 give 4x4, the
 * last window starting in the input, its divisor the taps inside the padded input; the module
 * prints ceil_mode. */
START_TEST(test_pool_ceil_mode)
{
    clt_device *dev = test_device(_i);
    double v[36];
    for (int i = 0; i < 36; i++)
        v[i] = i;
    clt_tensor *x5 = make(dev, CLT_F32, v, CLT_SHAPE(1, 1, 5, 5));
    clt_pool2d_options o = clt_pool2d_options_default(2, 2);
    check(clt_max_pool2d(x5, &o, NULL), (double[]){6, 8, 16, 18}, 4, 0, "floor mode");
    o.ceil_mode = true;
    check(clt_max_pool2d(x5, &o, NULL), (double[]){6, 8, 9, 16, 18, 19, 21, 23, 24}, 9, 0, "ceil max");
    check(clt_avg_pool2d(x5, &o), (double[]){3, 5, 6.5, 13, 15, 16.5, 20.5, 22.5, 24}, 9, 1e-6, "ceil avg");
    clt_tensor *x6 = make(dev, CLT_F32, v, CLT_SHAPE(1, 1, 6, 6)), *idx = NULL;
    o = clt_pool2d_options_default(3, 3);
    o.stride[0] = o.stride[1] = 2, o.padding[0] = o.padding[1] = 1, o.ceil_mode = true;
    static const double mx[] = {7, 9, 11, 11, 19, 21, 23, 23, 31, 33, 35, 35, 31, 33, 35, 35};
    static const double av[] = {14.0 / 9, 30.0 / 9, 42.0 / 9, 16.0 / 6, 75.0 / 9, 14, 16, 51.0 / 6,
                                147.0 / 9, 26, 28, 87.0 / 6, 61.0 / 6, 16, 17, 8.75};
    static const double ex[] = {3.5, 5, 7, 8, 12.5, 14, 16, 17, 24.5, 26, 28, 29, 30.5, 32, 34, 35};
    check(clt_max_pool2d(x6, &o, &idx), mx, 16, 0, "padded ceil max");
    check(idx, (double[]){7, 9, 11, 11, 19, 21, 23, 23, 31, 33, 35, 35, 31, 33, 35, 35}, 16, 0,
          "padded ceil max indices");
    check(clt_avg_pool2d(x6, &o), av, 16, 1e-5, "padded ceil avg counting padding");
    o.exclude_padding = true;
    check(clt_avg_pool2d(x6, &o), ex, 16, 1e-5, "padded ceil avg without padding");
    o.exclude_padding = false, o.dilation[0] = o.dilation[1] = 1;
    clt_module *m = clt_nn_max_pool2d(&o);
    char *text = clt_module_format(m);
    ck_assert_str_eq(text, "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)");
    clt_free(text), clt_module_release(m);
    clt_tensor_release(x5), clt_tensor_release(x6);
}
END_TEST

/* A stable sort on the host: positions of v (n values) in order, NaN above every number. */
static void host_order(const double *v, int n, bool descending, int64_t *order)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort: stable */
        for (int j = i; j > 0; j--) {
            double a = v[order[j - 1]], b = v[order[j]];
            bool before = descending ? (b > a || (isnan(b) && !isnan(a)))
                                     : (b < a || (!isnan(b) && isnan(a)));
            if (!before)
                break;
            int64_t t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
}

/* cumsum, sort, argsort and topk on every device against the host: along every dimension, rows
 * of lengths that are no power of two, ties kept in order, NaN and infinities, integers that
 * doubles cannot hold, bool and integer running sums in i64. */
START_TEST(test_cumsum_sort)
{
    clt_device *dev = test_device(_i);
    /* cumsum along each dimension of a 3 x 5 x 7 f32 tensor, against the host's sums */
    double *xv = noise(105, 21);
    clt_tensor *x = make(dev, CLT_F32, xv, CLT_SHAPE(3, 5, 7));
    double *xf = test_values(x); /* the f32 values */
    const int sizes[3] = {3, 5, 7}, strides[3] = {35, 7, 1};
    for (int dim = 0; dim < 3; dim++) {
        double want[105];
        for (int i = 0; i < 105; i++) {
            int at = (i / strides[dim]) % sizes[dim];
            want[i] = 0;
            for (int k = 0; k <= at; k++)
                want[i] += xf[i - (at - k) * strides[dim]];
        }
        char what[32];
        snprintf(what, sizeof what, "cumsum along %d", dim);
        check(clt_cumsum(x, dim - 3), want, 105, 1e-5, what);
    }
    clt_tensor *b =
        clt_tensor_from_data(CLT_SHAPE(2, 3), (bool[]){1, 0, 1, 1, 1, 0}, CLT_BOOL, dev);
    clt_tensor *cb = clt_cumsum(b, 1);
    ck_assert_int_eq(clt_tensor_dtype(cb), CLT_I64);
    check(cb, (double[]){1, 1, 2, 1, 2, 2}, 6, 0, "cumsum of bool");
    clt_tensor *big =
        clt_tensor_from_data(CLT_SHAPE(3), (int64_t[]){INT64_C(1) << 60, 1, 1}, CLT_I64, dev);
    clt_tensor *cbig = clt_cumsum(big, 0);
    int64_t *cv = test_bytes(cbig);
    ck_assert(cv[2] == (INT64_C(1) << 60) + 2);
    free(cv), clt_tensor_release(cbig);
    /* sort with ties, NaN and infinities, both ways */
    static const double sv[] = {3, 1, NAN, 2, 1, -INFINITY, 3, INFINITY};
    clt_tensor *s = make(dev, CLT_F32, sv, CLT_SHAPE(8)), *idx = NULL;
    check(clt_sort(s, 0, false, &idx), (double[]){-INFINITY, 1, 1, 2, 3, 3, INFINITY, NAN}, 8,
          0, "ascending");
    check(idx, (double[]){5, 1, 4, 3, 0, 6, 7, 2}, 8, 0, "ascending indices (stable)");
    check(clt_sort(s, -1, true, &idx), (double[]){NAN, INFINITY, 3, 3, 2, 1, 1, -INFINITY}, 8,
          0, "descending");
    check(idx, (double[]){2, 7, 0, 6, 3, 1, 4, 5}, 8, 0, "descending indices (stable)");
    check(clt_argsort(s, 0, true), (double[]){2, 7, 0, 6, 3, 1, 4, 5}, 8, 0, "argsort");
    /* along dimension 1 of the 3 x 5 x 7 tensor, with ties (values rounded to halves) */
    for (int i = 0; i < 105; i++)
        xv[i] = round(xv[i] * 2) / 2;
    clt_tensor *xt =
        make(dev, test_has_dtype(dev, CLT_F64) ? CLT_F64 : CLT_F32, xv, CLT_SHAPE(3, 5, 7));
    for (int desc = 0; desc < 2; desc++) {
        double want[105], want_idx[105], row[5];
        int64_t order[5];
        for (int a = 0; a < 3; a++)
            for (int c = 0; c < 7; c++) {
                for (int k = 0; k < 5; k++)
                    row[k] = xv[a * 35 + k * 7 + c];
                host_order(row, 5, desc, order);
                for (int k = 0; k < 5; k++)
                    want[a * 35 + k * 7 + c] = row[order[k]],
                                          want_idx[a * 35 + k * 7 + c] = (double)order[k];
            }
        check(clt_sort(xt, 1, desc, &idx), want, 105, 0,
              desc ? "dim 1 descending" : "dim 1 ascending");
        check(idx, want_idx, 105, 0, "dim 1 indices");
    }
    /* rows of 37 (no power of two) and of 1 */
    double *lv = noise(74, 5);
    clt_tensor *l = make(dev, CLT_F32, lv, CLT_SHAPE(2, 37));
    double *lf = test_values(l), lw[74], lwi[74];
    for (int r = 0; r < 2; r++) {
        int64_t order[37];
        host_order(lf + 37 * r, 37, false, order);
        for (int k = 0; k < 37; k++)
            lw[37 * r + k] = lf[37 * r + order[k]], lwi[37 * r + k] = (double)order[k];
    }
    check(clt_sort(l, 1, false, &idx), lw, 74, 0, "rows of 37");
    check(idx, lwi, 74, 0, "rows of 37, indices");
    for (int k = 0; k < 37; k++)
        lw[k] = fmin(lf[k], lf[37 + k]), lw[37 + k] = fmax(lf[k], lf[37 + k]);
    check(clt_sort(l, 0, false, NULL), lw, 74, 0, "columns of 2");
    clt_tensor *one = make(dev, CLT_F32, (double[]){4, 2}, CLT_SHAPE(2, 1));
    check(clt_sort(one, 1, true, &idx), (double[]){4, 2}, 2, 0, "rows of one");
    check(idx, (double[]){0, 0}, 2, 0, "rows of one, indices");
    /* integers beyond doubles' precision keep their order */
    clt_tensor *ints =
        clt_tensor_from_data(CLT_SHAPE(3),
                             (int64_t[]){(INT64_C(1) << 60) + 1, INT64_C(1) << 60, -3}, CLT_I64,
                             dev);
    clt_tensor *si = clt_sort(ints, 0, false, &idx);
    int64_t *iv = test_bytes(si);
    ck_assert(iv[0] == -3 && iv[1] == INT64_C(1) << 60 && iv[2] == (INT64_C(1) << 60) + 1);
    free(iv), clt_tensor_release(si);
    check(idx, (double[]){2, 1, 0}, 3, 0, "i64 indices");
    /* topk: the largest and the smallest, ties in order */
    check(clt_topk(s, 3, 0, true, &idx), (double[]){NAN, INFINITY, 3}, 3, 0, "top 3");
    check(idx, (double[]){2, 7, 0}, 3, 0, "top 3 indices");
    check(clt_topk(s, 2, 0, false, &idx), (double[]){-INFINITY, 1}, 2, 0, "bottom 2");
    check(idx, (double[]){5, 1}, 2, 0, "bottom 2 indices");
    ck_assert_ptr_null(clt_topk(s, 9, 0, true, &idx));
    ck_assert_ptr_null(idx);
    ck_assert_error_has("clt_topk: k 9 is outside 0..8, the size of dimension 0");
    ck_assert_ptr_null(clt_sort(s, 1, false, NULL));
    ck_assert_error_has("clt_sort: ");
    ck_assert_ptr_null(clt_cumsum(NULL, 0));
    ck_assert_error_has("clt_cumsum: ");
    clt_tensor_release(x), clt_tensor_release(b), clt_tensor_release(big), clt_tensor_release(s);
    clt_tensor_release(xt), clt_tensor_release(l), clt_tensor_release(one),
        clt_tensor_release(ints);
    free(xv), free(xf), free(lv), free(lf);
}
END_TEST

/* gather and masked_fill on every device against torch.gather's and masked_fill's rule, and
 * their refusals. */
START_TEST(test_gather_masked_fill)
{
    clt_device *dev = test_device(_i);
    double xv[12];
    for (int i = 0; i < 12; i++)
        xv[i] = 10 * i;
    clt_tensor *x = make(dev, CLT_F32, xv, CLT_SHAPE(3, 4));
    clt_tensor *i1 =
        clt_tensor_from_data(CLT_SHAPE(2, 3), (int64_t[]){3, 0, 0, 1, 2, 3}, CLT_I64, dev);
    /* dim 1: out[i][j] = x[i][index[i][j]] */
    check(clt_gather(x, 1, i1), (double[]){30, 0, 0, 50, 60, 70}, 6, 0, "gather along 1");
    /* dim 0: out[i][j] = x[index[i][j]][j] */
    clt_tensor *i0 = clt_tensor_from_data(CLT_SHAPE(2, 4), (int64_t[]){2, 0, 1, 2, 0, 0, 2, 1},
                                          CLT_I64, dev);
    check(clt_gather(x, 0, i0), (double[]){80, 10, 60, 110, 0, 10, 100, 70}, 8, 0,
          "gather along 0");
    clt_tensor *bad = clt_tensor_from_data(CLT_SHAPE(1, 1), (int64_t[]){4}, CLT_I64, dev);
    ck_assert_ptr_null(clt_gather(x, 1, bad));
    ck_assert_error_has(
        "clt_gather: index 4 (element 0) is out of range for size 4 (valid: 0..3)");
    clt_tensor *wide = clt_tensor_zeros(CLT_SHAPE(4, 1), CLT_I64, dev),
               *flat = clt_tensor_zeros(CLT_SHAPE(2), CLT_I64, dev);
    ck_assert_ptr_null(clt_gather(x, 1, wide));
    ck_assert_error_has(
        "clt_gather: index (4, 1) must have x's 2 dimensions and no size above x's (3, 4)");
    ck_assert_ptr_null(clt_gather(x, 1, flat));
    clt_tensor *f32 = clt_tensor_zeros(CLT_SHAPE(1, 1), CLT_F32, dev);
    ck_assert_ptr_null(clt_gather(x, 1, f32));
    ck_assert_error_has("clt_gather: index must be i64, not f32");
    /* masked_fill with a mask broadcast over the rows */
    clt_tensor *m =
        clt_tensor_from_data(CLT_SHAPE(4), (bool[]){true, false, false, true}, CLT_BOOL, dev);
    check(clt_masked_fill(x, m, -INFINITY),
          (double[]){-INFINITY, 10, 20, -INFINITY, -INFINITY, 50, 60, -INFINITY, -INFINITY, 90,
                     100, -INFINITY},
          12, 0, "masked_fill");
    clt_tensor *big = clt_tensor_zeros(CLT_SHAPE(2, 3, 4), CLT_BOOL, dev);
    ck_assert_ptr_null(clt_masked_fill(x, big, 0));
    ck_assert_error_has("clt_masked_fill: mask (2, 3, 4) does not broadcast to x's shape (3, 4)");
    ck_assert_ptr_null(clt_masked_fill(x, f32, 0));
    ck_assert_error_has("clt_masked_fill: mask must be bool, not f32");
    clt_tensor_release(x), clt_tensor_release(i1), clt_tensor_release(i0),
        clt_tensor_release(bad);
    clt_tensor_release(wide), clt_tensor_release(flat), clt_tensor_release(f32),
        clt_tensor_release(m);
    clt_tensor_release(big);
}
END_TEST

/* multinomial on every device: zero weights never drawn, frequencies within 5 standard
 * deviations of the weights (the draws are the seeded generator's, the same on every device),
 * draws without replacement distinct and from the nonzero weights, bad weights refused. */
static void count_draws(clt_tensor *draws, int c, int64_t *counts)
{
    int64_t *v = test_bytes(draws);
    for (int i = 0; i < c; i++)
        counts[i] = 0;
    for (int64_t i = 0; i < clt_tensor_numel(draws); i++) {
        ELEMENT_CHECK(v[i] >= 0 && v[i] < c, "draw %lld is %lld", (long long)i, (long long)v[i]);
        counts[v[i]]++;
    }
    free(v);
}

START_TEST(test_multinomial)
{
    clt_device *dev = test_device(_i);
    int64_t counts[5];
    clt_manual_seed(3);
    clt_tensor *p = make(dev, CLT_F32, (double[]){0, 2, 0, 8, 0},
                         CLT_SHAPE(5)); /* weights, not normalised */
    clt_tensor *d = clt_multinomial(p, 4000, true);
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_ndim(d), 1);
    count_draws(d, 5, counts);
    ck_assert(counts[0] == 0 && counts[2] == 0 && counts[4] == 0);
    ck_assert_msg(fabs(counts[3] / 4000.0 - 0.8) < 5 * sqrt(0.16 / 4000),
                  "%lld of 4000 draws are 3", (long long)counts[3]);
    clt_tensor_release(d);
    /* without replacement: 3 of the 3 nonzero weights, each once; the first draw of 2000 rows
     * [0, 3, 1] is 1 three times in four */
    d = clt_multinomial(p, 2, false);
    count_draws(d, 5, counts);
    ck_assert(counts[1] == 1 && counts[3] == 1);
    clt_tensor_release(d);
    double *rows = malloc(3 * 2000 * sizeof *rows);
    for (int r = 0; r < 2000; r++)
        rows[3 * r] = 0, rows[3 * r + 1] = 3, rows[3 * r + 2] = 1;
    clt_tensor *pr = make(dev, CLT_F32, rows, CLT_SHAPE(2000, 3));
    d = clt_multinomial(pr, 2, false);
    ck_assert(clt_tensor_size(d, 0) == 2000 && clt_tensor_size(d, 1) == 2);
    int64_t *v = test_bytes(d), first1 = 0;
    for (int r = 0; r < 2000; r++) {
        ck_assert(v[2 * r] != v[2 * r + 1] && v[2 * r] != 0 && v[2 * r + 1] != 0);
        first1 += v[2 * r] == 1;
    }
    ck_assert_msg(fabs(first1 / 2000.0 - 0.75) < 5 * sqrt(0.1875 / 2000),
                  "%lld of 2000 first draws are 1", (long long)first1);
    free(v), free(rows), clt_tensor_release(d), clt_tensor_release(pr);
    /* refused */
    ck_assert_ptr_null(clt_multinomial(p, 4, false));
    ck_assert_error_has(
        "clt_multinomial: row 0 has 2 nonzero probabilities, fewer than the 4 samples");
    clt_tensor *neg = make(dev, CLT_F32, (double[]){1, -1}, CLT_SHAPE(2)),
               *zero = clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, dev);
    ck_assert_ptr_null(clt_multinomial(neg, 1, true));
    ck_assert_error_has(
        "clt_multinomial: probabilities must not be negative or NaN (the smallest is -1)");
    ck_assert_ptr_null(clt_multinomial(zero, 1, true));
    ck_assert_error_has("clt_multinomial: row 0 of the probabilities sums to 0");
    ck_assert_ptr_null(clt_multinomial(p, 0, true));
    ck_assert_error_has("clt_multinomial: needs 1-D or 2-D probabilities");
    clt_tensor_release(neg), clt_tensor_release(zero), clt_tensor_release(p);
}
END_TEST

/* F.pad in its four modes and F.interpolate (nearest, bilinear with and without
 * align_corners, up and down) on every device, against PyTorch 1.13's results for the same
 * small inputs; bad arguments refused. */
START_TEST(test_pad_interpolate)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = make(dev, CLT_F32, (double[]){1, 2, 3, 4, 5, 6}, CLT_SHAPE(1, 2, 3));
    check(clt_pad(x, 2, (int64_t[]){1, 2}, CLT_PAD_CONSTANT, 9),
          (double[]){9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9}, 12, 0, "constant");
    check(clt_pad(x, 4, (int64_t[]){2, 1, 1, 0}, CLT_PAD_REFLECT, 0),
          (double[]){6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5}, 18, 0, "reflect");
    check(clt_pad(x, 2, (int64_t[]){1, 1}, CLT_PAD_REPLICATE, 0),
          (double[]){1, 1, 2, 3, 3, 4, 4, 5, 6, 6}, 10, 0, "replicate");
    check(clt_pad(x, 2, (int64_t[]){1, 2}, CLT_PAD_CIRCULAR, 0),
          (double[]){3, 1, 2, 3, 1, 2, 6, 4, 5, 6, 4, 5}, 12, 0, "circular");
    ck_assert_ptr_null(clt_pad(x, 2, (int64_t[]){3, 0}, CLT_PAD_REFLECT, 0));
    ck_assert_error_has("clt_pad: pad[0] = 3 does not suit dimension 2 of size 3 in this mode");
    ck_assert_ptr_null(clt_pad(x, 3, (int64_t[]){1, 1, 1}, CLT_PAD_CONSTANT, 0));
    ck_assert_error_has("clt_pad: needs an even number of pads");
    ck_assert_ptr_null(clt_pad(x, 2, (int64_t[]){-1, 0}, CLT_PAD_CONSTANT, 0));

    clt_tensor *q = make(dev, CLT_F32, (double[]){1, 2, 3, 4}, CLT_SHAPE(1, 1, 2, 2));
    check(clt_interpolate2d(q, 4, 4, CLT_INTERPOLATE_NEAREST, false),
          (double[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 16, 0, "nearest 2 -> 4");
    check(clt_interpolate2d(q, 3, 3, CLT_INTERPOLATE_NEAREST, false),
          (double[]){1, 1, 2, 1, 1, 2, 3, 3, 4}, 9, 0, "nearest 2 -> 3");
    check(clt_interpolate2d(q, 4, 4, CLT_INTERPOLATE_BILINEAR, false),
          (double[]){1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25,
                     3.75, 4},
          16, 1e-6, "bilinear 2 -> 4");
    check(clt_interpolate2d(q, 3, 3, CLT_INTERPOLATE_BILINEAR, true),
          (double[]){1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}, 9, 1e-6,
          "bilinear 2 -> 3, align_corners");
    double v16[16];
    for (int i = 0; i < 16; i++)
        v16[i] = i;
    clt_tensor *b = make(dev, CLT_F32, v16, CLT_SHAPE(1, 4, 4)); /* unbatched */
    check(clt_interpolate2d(b, 2, 2, CLT_INTERPOLATE_BILINEAR, false),
          (double[]){2.5, 4.5, 10.5, 12.5}, 4, 1e-6, "bilinear 4 -> 2");
    clt_tensor *flat = clt_reshape(q, CLT_SHAPE(2, 2));
    ck_assert_ptr_null(clt_interpolate2d(flat, 2, 2, CLT_INTERPOLATE_NEAREST, false));
    ck_assert_error_has("(got 2 dimensions)");
    clt_tensor_release(flat);
    ck_assert_ptr_null(clt_interpolate2d(q, 0, 2, CLT_INTERPOLATE_NEAREST, false));
    ck_assert_error_has(
        "clt_interpolate2d: needs a non-empty (N, C, H, W) or (C, H, W) input (got 4 dimensions), a positive output size (got 0x2)");
    clt_tensor_release(x), clt_tensor_release(q), clt_tensor_release(b);
}
END_TEST

/* conv_transpose2d on every device against its definition (each input element adds weight
 * times itself to the output at h * s - p + ky * d), with groups, unequal strides, padding,
 * output padding and dilation, a bias, the unbatched form; bad options refused. */
START_TEST(test_conv_transpose2d)
{
    clt_device *dev = test_device(_i);
    enum { N = 2, C = 4, H = 3, W = 5, G = 2, OG = 3, KH = 3, KW = 2 };
    const int s[2] = {2, 3}, p[2] = {1, 0}, op[2] = {1, 2}, d[2] = {1, 2};
    const int OH = (H - 1) * s[0] - 2 * p[0] + d[0] * (KH - 1) + op[0] + 1;
    const int OW = (W - 1) * s[1] - 2 * p[1] + d[1] * (KW - 1) + op[1] + 1;
    double *xv = noise(N * C * H * W, 41), *wv = noise(C * OG * KH * KW, 42),
           *bv = noise(G * OG, 43);
    double *want = calloc((size_t)(N * G * OG * OH * OW), sizeof *want);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < G * OG; o++)
            for (int i = 0; i < OH * OW; i++)
                want[(n * G * OG + o) * OH * OW + i] = bv[o];
    for (int n = 0; n < N; n++)
        for (int ci = 0; ci < C; ci++)
            for (int h = 0; h < H; h++)
                for (int w = 0; w < W; w++)
                    for (int co = 0; co < OG; co++)
                        for (int ky = 0; ky < KH; ky++)
                            for (int kx = 0; kx < KW; kx++) {
                                int oy = h * s[0] - p[0] + ky * d[0],
                                    ox = w * s[1] - p[1] + kx * d[1];
                                int o = (ci / (C / G)) * OG + co;
                                if (oy >= 0 && oy < OH && ox >= 0 && ox < OW)
                                    want[((n * G * OG + o) * OH + oy) * OW + ox] +=
                                        xv[((n * C + ci) * H + h) * W + w] *
                                        wv[((ci * OG + co) * KH + ky) * KW + kx];
                            }
    clt_tensor *x = make(dev, CLT_F32, xv, CLT_SHAPE(N, C, H, W)),
               *wt = make(dev, CLT_F32, wv, CLT_SHAPE(C, OG, KH, KW));
    clt_tensor *b = make(dev, CLT_F32, bv, CLT_SHAPE(G * OG));
    clt_conv_transpose2d_options o = clt_conv_transpose2d_options_default();
    o.stride[0] = s[0], o.stride[1] = s[1], o.padding[0] = p[0], o.padding[1] = p[1];
    o.output_padding[0] = op[0], o.output_padding[1] = op[1], o.dilation[0] = d[0],
    o.dilation[1] = d[1];
    o.groups = G;
    clt_tensor *y = clt_conv_transpose2d(x, wt, b, &o);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    ck_assert(clt_tensor_size(y, 1) == G * OG && clt_tensor_size(y, 2) == OH &&
              clt_tensor_size(y, 3) == OW);
    check(y, want, N * G * OG * OH * OW, 1e-5, "conv_transpose2d");
    clt_tensor *x0 = clt_narrow(x, 0, 0, 1), *u = clt_squeeze(x0, 0);
    check(clt_conv_transpose2d(u, wt, b, &o), want, G * OG * OH * OW, 1e-5, "unbatched");
    o.output_padding[0] = 2; /* not below the stride (2) or the dilation (1) */
    ck_assert_ptr_null(clt_conv_transpose2d(x, wt, b, &o));
    ck_assert_error_has(
        "clt_conv_transpose2d: input (2, 4, 3, 5) and weight (4, 3, 3, 2) (groups 2)");
    o.output_padding[0] = 1, o.groups = 3;
    ck_assert_ptr_null(clt_conv_transpose2d(x, wt, b, &o));
    /* the modules: ConvTranspose2d(4, 6, (3, 2), groups 2) doubles, Upsample(2) doubles again */
    o.groups = 2;
    clt_module *m = CLT_SEQUENTIAL(clt_nn_conv_transpose2d(4, 6, 3, 2, &o, true),
                                   clt_nn_upsample(2, CLT_INTERPOLATE_NEAREST, false));
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    clt_tensor *my = clt_module_forward(m, x);
    ck_assert_msg(my != NULL, "%s", clt_last_error());
    ck_assert(clt_tensor_size(my, 1) == 6 && clt_tensor_size(my, 2) == 2 * OH &&
              clt_tensor_size(my, 3) == 2 * OW);
    clt_tensor_release(my), clt_module_release(m);
    ck_assert_ptr_null(clt_nn_conv_transpose2d(4, 5, 3, 2, &o, true));
    ck_assert_error_has(
        "clt_nn_conv_transpose2d: in_channels 4, out_channels 5 (both divisible by groups 2)");
    ck_assert_ptr_null(clt_nn_upsample(0, CLT_INTERPOLATE_NEAREST, false));
    clt_tensor_release(x), clt_tensor_release(wt), clt_tensor_release(b),
        clt_tensor_release(x0), clt_tensor_release(u);
    free(xv), free(wv), free(bv), free(want);
}
END_TEST

/* Edge cases: masked (-inf) log-probabilities under ignored targets, integer mse, empty inputs,
 * windows wholly in the padding, mismatched bias. */
START_TEST(test_nn_edges)
{
    clt_device *dev = test_device(_i);
    const double lp[] = {-INFINITY, -0.1, -2, -1, -0.5, -3};
    clt_tensor *x = make(dev, CLT_F32, lp, CLT_SHAPE(2, 3));
    int64_t tv[] = {-100, 1};
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(2), tv, CLT_I64, dev);
    check(clt_nll_loss(x, t, NULL), (double[]){0.5}, 1, 1e-7, "nll ignoring a -inf row");
    check(clt_nll_loss(x, t, TEST_LOSS(CLT_REDUCTION_NONE)), (double[]){0, 0.5}, 2, 1e-7, "nll none");
    const double a[] = {0, 3}, b[] = {20, 5};
    clt_tensor *ua = make(dev, CLT_U8, a, CLT_SHAPE(2)), *ub = make(dev, CLT_U8, b, CLT_SHAPE(2));
    check(clt_mse_loss(ua, ub, CLT_REDUCTION_NONE), (double[]){400, 4}, 2, 0, "mse of u8 does not wrap");
    clt_tensor *empty = clt_tensor_zeros(CLT_SHAPE(3, 0), CLT_F32, dev);
    clt_tensor *se = clt_softmax(empty, 1);
    ck_assert_msg(se != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(se), 0);
    clt_tensor *e4 = clt_tensor_zeros(CLT_SHAPE(2, 0, 3), CLT_F32, dev), *rs = clt_tensor_zeros(CLT_SHAPE(0), CLT_F32, dev);
    clt_tensor *bn = clt_batch_norm(e4, rs, rs, NULL, NULL, true, 0.1, 1e-5);
    ck_assert_msg(bn != NULL, "%s", clt_last_error());
    clt_tensor *one = clt_tensor_full(CLT_SHAPE(1, 1, 1, 1), 5, CLT_F32, dev);
    clt_tensor *idx = NULL;
    clt_tensor *mp = clt_max_pool2d(one, &(clt_pool2d_options){.kernel = {2, 2}, .padding = {1, 1}, .dilation = {2, 2}}, &idx);
    check(clt_tensor_retain(mp), (double[]){-INFINITY}, 1, 0, "a window wholly in the padding");
    check(clt_tensor_retain(idx), (double[]){-1}, 1, 0, "its index");
    clt_tensor *w = clt_tensor_ones(CLT_SHAPE(1, 1, 1, 1), CLT_F32, dev);
    clt_tensor *b64 = clt_tensor_ones(CLT_SHAPE(1), CLT_F16, dev);
    ck_assert_ptr_null(clt_conv2d(one, w, b64, NULL));
    ck_assert_error_has("clt_conv2d: the bias is f16, the input f32: they must match");
    clt_tensor *all[] = {b64, w, idx, mp, one, bn, rs, e4, se, empty, ub, ua, t, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

/* Window geometry near the int and int64 limits: errors, not overflows (UBSan) or geometry
 * from truncated sizes. */
START_TEST(test_nn_window_limits)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(1, 16, 2, 2), CLT_F32, dev);
    clt_tensor *w = clt_tensor_ones(CLT_SHAPE(1, 16, 1, 1), CLT_F32, dev);
    /* padding INT_MAX: more than half of any kernel */
    ck_assert_ptr_null(clt_max_pool2d(x, &(clt_pool2d_options){.kernel = {INT_MAX, 1},
                                                               .padding = {INT_MAX, 0}}, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("padding at most half of it");
    /* a padding just short of what a kernel of INT_MAX needs to fit the 2 rows */
    ck_assert_ptr_null(clt_avg_pool2d(x, &(clt_pool2d_options){.kernel = {INT_MAX, 1},
                                                               .padding = {INT_MAX / 2 - 1, 0}}));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_avg_pool2d: the 2147483647x1 window does not fit the 2x2 input");
    /* conv2d: padding INT_MAX each way would unfold into (2^32)^2 columns */
    ck_assert_ptr_null(clt_conv2d(x, w, NULL, &(clt_conv2d_options){.padding = {INT_MAX, INT_MAX}}));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_conv2d: input (1, 16, 2, 2) and weight (1, 16, 1, 1): the unfolded "
                        "input would have more than 9223372036854775807 elements");
    /* a kernel height beyond INT_MAX (in an empty weight) is refused, not truncated to 1 */
    clt_tensor *tall = clt_tensor_zeros(CLT_SHAPE(0, 16, ((int64_t)1 << 32) + 1, 1), CLT_F32, dev);
    ck_assert_ptr_null(clt_conv2d(x, tall, NULL, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("kh and kw in 1..INT_MAX");
    clt_tensor *flat = clt_tensor_zeros(CLT_SHAPE(1, 16, 0, 1), CLT_F32, dev);
    ck_assert_ptr_null(clt_conv2d(x, flat, NULL, NULL)); /* a kernel without rows */
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    clt_tensor_release(flat);
    /* C / groups against an enormous weight: compared, not multiplied */
    clt_tensor *wide = clt_tensor_zeros(CLT_SHAPE(0, (int64_t)1 << 60, 1, 1), CLT_F32, dev);
    ck_assert_ptr_null(clt_conv2d(x, wide, NULL, &(clt_conv2d_options){.groups = 16}));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("(groups 16): expected (N, C, H, W), (O, C / groups, kh, kw)");
    /* and a geometry at the limit that is fine: padding 3 of a 7-wide kernel */
    clt_tensor *x1 = clt_tensor_ones(CLT_SHAPE(1, 1, 2, 2), CLT_F32, dev);
    clt_tensor *p = clt_max_pool2d(x1, &(clt_pool2d_options){.kernel = {7, 7}, .stride = {1, 1},
                                                              .padding = {3, 3}}, NULL);
    check(clt_tensor_retain(p), (double[]){1, 1, 1, 1}, 4, 0, "7x7 max pool padded by 3");
    clt_tensor *all[] = {p, x1, wide, tall, w, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

START_TEST(test_gathers)
{
    clt_device *dev = test_device(_i);
    const double w[] = {0, 1, 10, 11, 20, 21, 30, 31};
    clt_tensor *weight = make(dev, CLT_F32, w, CLT_SHAPE(4, 2));
    int64_t iv[] = {3, 0, 3, 1};
    clt_tensor *idx = clt_tensor_from_data(CLT_SHAPE(2, 2), iv, CLT_I64, dev);
    clt_tensor *e = clt_embedding(idx, weight);
    ck_assert_int_eq(clt_tensor_ndim(e), 3);
    ck_assert_int_eq(clt_tensor_size(e, 2), 2);
    check(clt_tensor_retain(e), (double[]){30, 31, 0, 1, 30, 31, 10, 11}, 8, 0, "embedding");
    clt_tensor *flat = clt_reshape(idx, CLT_SHAPE(4));
    clt_tensor *t = clt_transpose(weight, 0, 1); /* (2, 4): columns picked */
    check(clt_index_select(t, 1, flat), (double[]){30, 0, 30, 10, 31, 1, 31, 11}, 8, 0, "index_select on a view");
    int64_t bad = 4;
    clt_tensor *b = clt_tensor_from_data(CLT_SHAPE(1), &bad, CLT_I64, dev);
    ck_assert_ptr_null(clt_embedding(b, weight));
    ck_assert_error_has("clt_embedding: index 4 (element 0) is out of range for size 4 (valid: 0..3)");
    clt_tensor *all[] = {b, t, flat, e, idx, weight};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

/* Direct convolution in double: the reference. */
static void conv_ref(const double *x, const double *w, const double *bias, int n, int c, int h,
                     int wd, int o, int kh, int kw, const clt_conv2d_options *p, double *out,
                     int oh, int ow)
{
    int g = p->groups ? p->groups : 1, cg = c / g, og = o / g;
    int sh = p->stride[0] ? p->stride[0] : 1, sw = p->stride[1] ? p->stride[1] : 1;
    int dh = p->dilation[0] ? p->dilation[0] : 1, dw = p->dilation[1] ? p->dilation[1] : 1;
    for (int b = 0; b < n; b++)
        for (int oc = 0; oc < o; oc++)
            for (int y = 0; y < oh; y++)
                for (int xx = 0; xx < ow; xx++) {
                    double s = bias ? bias[oc] : 0;
                    int grp = oc / og;
                    for (int ic = 0; ic < cg; ic++)
                        for (int ky = 0; ky < kh; ky++)
                            for (int kx = 0; kx < kw; kx++) {
                                int iy = y * sh - p->padding[0] + ky * dh;
                                int ix = xx * sw - p->padding[1] + kx * dw;
                                if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
                                    continue;
                                s += x[((b * c + grp * cg + ic) * h + iy) * wd + ix] *
                                     w[((oc * cg + ic) * kh + ky) * kw + kx];
                            }
                    out[((b * o + oc) * oh + y) * ow + xx] = s;
                }
}

/* Images large enough for cpu to convolve in bands of output rows (each band's columns made
 * and multiplied in a core's cache): several bands an image, the last one short, at strides 1
 * and 2 with padding and dilation, f32 and f64, against the direct convolution; and a
 * convolution with no input channels, all zeros. Nothing requires grad, so every device runs
 * its fused convolution. */
START_TEST(test_conv2d_bands)
{
    static const clt_conv2d_options cases[] = {
        {{1, 1}, {1, 1}, {1, 1}, 1},
        {{2, 1}, {2, 1}, {2, 1}, 1},
    };
    clt_device *dev = test_device(_i);
    const int n = 2, c = 32, h = 48, wd = 45, o = 8, kh = 3, kw = 3;
    clt__conv_winograd = 0; /* the direct convolution, in bands on cpu */
    double *xv = noise(n * c * h * wd, 4), *wv = noise(o * c * kh * kw, 5), *bv = noise(o, 6);
    for (int k = 0; k < 4; k++) {
        const clt_conv2d_options *p = &cases[k / 2];
        clt_dtype dt = k % 2 ? CLT_F64 : CLT_F32;
        if (dt == CLT_F64 && !clt_device_get_info(dev)->fp64)
            continue;
        int oh = (h + 2 * p->padding[0] - p->dilation[0] * (kh - 1) - 1) / p->stride[0] + 1;
        int ow = (wd + 2 * p->padding[1] - p->dilation[1] * (kw - 1) - 1) / p->stride[1] + 1;
        double *want = malloc((size_t)(n * o * oh * ow) * sizeof *want);
        conv_ref(xv, wv, bv, n, c, h, wd, o, kh, kw, p, want, oh, ow);
        clt_tensor *x = make(dev, dt, xv, CLT_SHAPE(n, c, h, wd));
        clt_tensor *w = make(dev, dt, wv, CLT_SHAPE(o, c, kh, kw));
        clt_tensor *b = make(dev, dt, bv, CLT_SHAPE(o));
        /* f32: sums of 288 products of up to 4 */
        check(clt_conv2d(x, w, b, p), want, n * o * oh * ow, dt == CLT_F64 ? 1e-12 : 1e-4,
              "banded conv2d");
        clt_tensor_release(b), clt_tensor_release(w), clt_tensor_release(x);
        free(want);
    }
    free(bv), free(wv), free(xv);
    clt_tensor *x = clt_tensor_zeros(CLT_SHAPE(1, 0, 5, 5), CLT_F32, dev);
    clt_tensor *w = clt_tensor_zeros(CLT_SHAPE(3, 0, 3, 3), CLT_F32, dev);
    double zeros[27] = {0};
    check(clt_conv2d(x, w, NULL, NULL), zeros, 27, 0, "conv2d of no channels");
    clt_tensor_release(w), clt_tensor_release(x);
    /* recorded, three images and a bias: every output its channel's bias (the product of no
     * terms writes the (N, O, L) layout image by image) */
    x = clt_tensor_zeros(CLT_SHAPE(3, 0, 4, 4), CLT_F32, dev);
    w = clt_tensor_zeros(CLT_SHAPE(2, 0, 3, 3), CLT_F32, dev);
    clt_tensor *b = make(dev, CLT_F32, (const double[]){1, 2}, CLT_SHAPE(2));
    clt_conv2d_options same = clt_conv2d_options_default();
    same.padding[0] = same.padding[1] = 1;
    double biased[96];
    for (int i = 0; i < 96; i++)
        biased[i] = i / 16 % 2 ? 2 : 1;
    clt_tensor_set_requires_grad(w, true);
    check(clt_conv2d(x, w, b, &same), biased, 96, 0, "conv2d of no channels with a bias, recorded");
    clt_tensor_release(b), clt_tensor_release(w), clt_tensor_release(x);
    /* an image of no rows, padded: every output reads padding only (the narrow images' tables
     * must not read the empty plane), recorded and not */
    x = clt_tensor_zeros(CLT_SHAPE(1, 1, 0, 5), CLT_F32, dev);
    w = clt_tensor_ones(CLT_SHAPE(1, 1, 1, 1), CLT_F32, dev);
    clt_conv2d_options pad = clt_conv2d_options_default();
    pad.padding[0] = pad.padding[1] = 1;
    check(clt_conv2d(x, w, NULL, &pad), zeros, 14, 0, "conv2d of an image of no rows");
    clt_tensor_set_requires_grad(w, true);
    check(clt_conv2d(x, w, NULL, &pad), zeros, 14, 0, "conv2d of an image of no rows, recorded");
    clt_tensor_release(w), clt_tensor_release(x);
    clt__conv_winograd = -1;
}
END_TEST

/* Winograd's 3 x 3 convolution at stride 1 (clt__conv2d_winograd), taken wherever it fits,
 * against the direct convolution in double: odd and even output sizes, padding 0, 1 and 2 on
 * either side, a bias, one image and several, a single block and blocks of 2 tile rows (the
 * last one short, blocks straddling images), f32 and f64. Then which convolutions the default
 * sends there: those that save enough multiply-adds, not ResNet's 7 x 7 layer at batch 1, no
 * thin ones, never a strided or dilated one. */
START_TEST(test_conv2d_winograd)
{
    static const struct {
        int n, c, h, w, o, ph, pw;
    } cases[] = {
        {2, 5, 7, 6, 3, 1, 1},
        {1, 3, 8, 9, 4, 0, 0},
        {3, 4, 5, 5, 6, 2, 1},
        {2, 17, 11, 13, 9, 1, 0},
    };
    clt_device *dev = test_device(_i);
    clt__conv_winograd = 1;
    for (size_t k = 0; k < 4 * sizeof cases / sizeof *cases; k++) {
        int n = cases[k / 4].n, c = cases[k / 4].c, h = cases[k / 4].h, wd = cases[k / 4].w;
        int o = cases[k / 4].o;
        const clt_conv2d_options p = {{1, 1}, {cases[k / 4].ph, cases[k / 4].pw}, {1, 1}, 1};
        clt_dtype dt = k % 2 ? CLT_F64 : CLT_F32;
        if (dt == CLT_F64 && !clt_device_get_info(dev)->fp64)
            continue;
        clt__winograd_rows = k / 2 % 2 ? 2 : 0;
        int oh = h + 2 * p.padding[0] - 2, ow = wd + 2 * p.padding[1] - 2;
        double *xv = noise(n * c * h * wd, 11), *wv = noise(o * c * 9, 12), *bv = noise(o, 13);
        double *want = malloc((size_t)(n * o * oh * ow) * sizeof *want);
        conv_ref(xv, wv, bv, n, c, h, wd, o, 3, 3, &p, want, oh, ow);
        clt_tensor *x = make(dev, dt, xv, CLT_SHAPE(n, c, h, wd));
        clt_tensor *w = make(dev, dt, wv, CLT_SHAPE(o, c, 3, 3));
        clt_tensor *b = make(dev, dt, bv, CLT_SHAPE(o));
        char what[96];
        snprintf(what, sizeof what, "Winograd conv2d, case %zu, %s, blocks of %zu tile rows",
                 k / 4, clt_dtype_name(dt), clt__winograd_rows);
        /* f32: sums of up to 153 products of up to 4 through the transforms */
        check(clt_conv2d(x, w, b, &p), want, n * o * oh * ow, dt == CLT_F64 ? 1e-12 : 1e-4,
              what);
        clt_tensor_release(b), clt_tensor_release(w), clt_tensor_release(x);
        free(want), free(bv), free(wv), free(xv);
    }
    clt__winograd_rows = 0;
    clt__conv_winograd = -1;
    static const struct {
        size_t n, c, h, o;
        int stride, dilation;
        bool chosen;
    } choices[] = {
        {1, 64, 56, 64, 1, 1, true},     /* ResNet-18's first stage */
        {1, 256, 14, 256, 1, 1, true},   /* its third */
        {1, 512, 7, 512, 1, 1, false},   /* its last, at batch 1: the weight's transform costs
                                            more than it saves */
        {16, 512, 7, 512, 1, 1, true},   /* ... at batch 16 */
        {1, 8, 56, 64, 1, 1, false},     /* too few input channels */
        {1, 64, 56, 8, 1, 1, false},     /* too few output channels */
        {1, 64, 56, 64, 2, 1, false},    /* strided */
        {1, 64, 56, 64, 1, 2, false},    /* dilated */
        {128, 16, 8, 32, 1, 1, false},   /* a small CNN's: channels too few for 4 tiles a row */
        {128, 32, 8, 64, 1, 1, false},   /* ... still */
        {128, 64, 8, 64, 1, 1, true},    /* enough */
        {8, 32, 28, 32, 1, 1, false},    /* 32 channels, 14 tiles a row */
        {1, 32, 56, 32, 1, 1, true},     /* ... and 28 */
    };
    for (size_t k = 0; k < sizeof choices / sizeof *choices; k++) {
        int s = choices[k].stride, d = choices[k].dilation;
        size_t out = (choices[k].h + 2 - (size_t)d * 2 - 1) / (size_t)s + 1;
        clt__conv_call c = {.dtype = CLT_F32, .N = choices[k].n, .C = choices[k].c,
                            .H = choices[k].h, .W = choices[k].h, .OH = out, .OW = out,
                            .kh = 3, .kw = 3, .sh = s, .sw = s, .ph = 1, .pw = 1, .dh = d,
                            .dw = d, .mult = choices[k].o};
        ck_assert_msg(clt__winograd_chosen(&c) == choices[k].chosen, "choice %zu", k);
    }
}
END_TEST

START_TEST(test_conv2d)
{
    static const clt_conv2d_options cases[] = {
        {{0, 0}, {0, 0}, {0, 0}, 0},
        {{2, 1}, {1, 2}, {1, 1}, 1},
        {{1, 1}, {2, 2}, {2, 1}, 2},
    };
    clt_device *dev = test_device(_i);
    const int n = 2, c = 4, h = 7, wd = 6, o = 6, kh = 3, kw = 2;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const clt_conv2d_options *p = &cases[k];
        int g = p->groups ? p->groups : 1;
        int sh = p->stride[0] ? p->stride[0] : 1, sw = p->stride[1] ? p->stride[1] : 1;
        int dh = p->dilation[0] ? p->dilation[0] : 1, dw = p->dilation[1] ? p->dilation[1] : 1;
        int oh = (h + 2 * p->padding[0] - dh * (kh - 1) - 1) / sh + 1;
        int ow = (wd + 2 * p->padding[1] - dw * (kw - 1) - 1) / sw + 1;
        double *xv = noise(n * c * h * wd, 1), *wv = noise(o * (c / g) * kh * kw, 2), *bv = noise(o, 3);
        double *want = malloc((size_t)(n * o * oh * ow) * sizeof *want);
        conv_ref(xv, wv, bv, n, c, h, wd, o, kh, kw, p, want, oh, ow);
        clt_tensor *x = make(dev, CLT_F32, xv, CLT_SHAPE(n, c, h, wd));
        clt_tensor *w = make(dev, CLT_F32, wv, CLT_SHAPE(o, c / g, kh, kw));
        clt_tensor *b = make(dev, CLT_F32, bv, CLT_SHAPE(o));
        clt_tensor *y = clt_conv2d(x, w, b, p);
        ck_assert_msg(y != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt_tensor_size(y, 2), oh);
        ck_assert_int_eq(clt_tensor_size(y, 3), ow);
        check(clt_tensor_retain(y), want, n * o * oh * ow, 2e-5, "conv2d");
        clt_tensor_release(y), clt_tensor_release(b), clt_tensor_release(w), clt_tensor_release(x);
        free(want), free(bv), free(wv), free(xv);
    }
    /* depthwise (groups = channels, one direct kernel), multipliers 1 and 2, f32 and f64 */
    static const clt_conv2d_options depthwise[] = {
        {{1, 1}, {1, 1}, {1, 1}, 4},
        {{2, 3}, {0, 2}, {1, 2}, 4},
        {{1, 2}, {2, 1}, {3, 1}, 4},
    };
    for (size_t k = 0; k < 2 * sizeof depthwise / sizeof *depthwise; k++) {
        const clt_conv2d_options *p = &depthwise[k / 2];
        int m = 1 + (int)(k % 2), dkh = 3, dkw = 3 - (int)(k % 2);
        clt_dtype dt = k % 2 && clt_device_get_info(dev)->fp64 ? CLT_F64 : CLT_F32;
        int oh = (h + 2 * p->padding[0] - p->dilation[0] * (dkh - 1) - 1) / p->stride[0] + 1;
        int ow = (wd + 2 * p->padding[1] - p->dilation[1] * (dkw - 1) - 1) / p->stride[1] + 1;
        double *xv = noise(n * c * h * wd, 4), *wv = noise(c * m * dkh * dkw, 5);
        double *bv = noise(c * m, 6),
               *want = malloc((size_t)(n * c * m * oh * ow) * sizeof *want);
        conv_ref(xv, wv, bv, n, c, h, wd, c * m, dkh, dkw, p, want, oh, ow);
        clt_tensor *x = make(dev, dt, xv, CLT_SHAPE(n, c, h, wd));
        clt_tensor *w = make(dev, dt, wv, CLT_SHAPE(c * m, 1, dkh, dkw));
        clt_tensor *b = make(dev, dt, bv, CLT_SHAPE(c * m));
        clt_tensor *y = clt_conv2d(x, w, b, p);
        ck_assert_msg(y != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt_tensor_size(y, 1), c * m);
        ck_assert_int_eq(clt_tensor_size(y, 2), oh);
        ck_assert_int_eq(clt_tensor_size(y, 3), ow);
        check(clt_tensor_retain(y), want, n * c * m * oh * ow, dt == CLT_F64 ? 1e-12 : 2e-5,
              "depthwise conv2d");
        clt_tensor_release(y), clt_tensor_release(b), clt_tensor_release(w),
            clt_tensor_release(x);
        free(want), free(bv), free(wv), free(xv);
    }
    /* depthwise on rows wide enough for cpu's loops over the inner columns (3 x 3: one loop at
     * column strides 1, 2 and others; other sizes: 16 or more inner columns in registers, an odd
     * number of blocks, the last overlapping): padding, dilation, a row stride, multiplier 2 and
     * no padding at all, f32 and f64 */
    static const struct {
        clt_conv2d_options o;
        int k;
    } wide[] = {
        {{{1, 1}, {1, 1}, {1, 1}, 3}, 3}, {{{2, 1}, {2, 2}, {1, 2}, 3}, 3},
        {{{1, 1}, {0, 0}, {1, 1}, 3}, 3}, {{{2, 2}, {1, 1}, {1, 1}, 3}, 3},
        {{{1, 3}, {1, 2}, {1, 1}, 3}, 3}, {{{1, 1}, {2, 2}, {1, 1}, 3}, 5},
        {{{1, 1}, {1, 3}, {2, 2}, 3}, 5},
    };
    for (size_t k = 0; k < 2 * sizeof wide / sizeof *wide; k++) {
        const clt_conv2d_options *p = &wide[k / 2].o;
        const int ww = 45, wh = 7, wc = 3, ks = wide[k / 2].k;
        int m = 1 + (int)(k % 2);
        clt_dtype dt = k % 2 && clt_device_get_info(dev)->fp64 ? CLT_F64 : CLT_F32;
        int oh = (wh + 2 * p->padding[0] - p->dilation[0] * (ks - 1) - 1) / p->stride[0] + 1;
        int ow = (ww + 2 * p->padding[1] - p->dilation[1] * (ks - 1) - 1) / p->stride[1] + 1;
        double *xv = noise(n * wc * wh * ww, 7), *wv = noise(wc * m * ks * ks, 8);
        double *want = malloc((size_t)(n * wc * m * oh * ow) * sizeof *want);
        conv_ref(xv, wv, NULL, n, wc, wh, ww, wc * m, ks, ks, p, want, oh, ow);
        clt_tensor *x = make(dev, dt, xv, CLT_SHAPE(n, wc, wh, ww));
        clt_tensor *w = make(dev, dt, wv, CLT_SHAPE(wc * m, 1, ks, ks));
        check(clt_conv2d(x, w, NULL, p), want, n * wc * m * oh * ow,
              dt == CLT_F64 ? 1e-12 : 2e-5, "wide depthwise conv2d");
        clt_tensor_release(w), clt_tensor_release(x);
        free(want), free(wv), free(xv);
    }
    { /* a 1x1 kernel at stride 1 without padding: the input is its own columns */
        const clt_conv2d_options p = {{1, 1}, {0, 0}, {1, 1}, 1};
        double *xv = noise(n * c * h * wd, 7), *wv = noise(o * c, 8), *bv = noise(o, 9);
        double *want = malloc((size_t)(n * o * h * wd) * sizeof *want);
        conv_ref(xv, wv, bv, n, c, h, wd, o, 1, 1, &p, want, h, wd);
        clt_tensor *x = make(dev, CLT_F32, xv, CLT_SHAPE(n, c, h, wd));
        clt_tensor *w = make(dev, CLT_F32, wv, CLT_SHAPE(o, c, 1, 1));
        clt_tensor *b = make(dev, CLT_F32, bv, CLT_SHAPE(o));
        check(clt_conv2d(x, w, b, &p), want, n * o * h * wd, 2e-5, "pointwise conv2d");
        clt_tensor_release(b), clt_tensor_release(w), clt_tensor_release(x);
        free(want), free(bv), free(wv), free(xv);
    }
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(1, 3, 4, 4), CLT_F32, dev);
    clt_tensor *w = clt_tensor_ones(CLT_SHAPE(2, 2, 3, 3), CLT_F32, dev);
    ck_assert_ptr_null(clt_conv2d(x, w, NULL, NULL));
    ck_assert_error_has("clt_conv2d: input (1, 3, 4, 4) and weight (2, 2, 3, 3) (groups 1)");
    clt_tensor *big = clt_tensor_ones(CLT_SHAPE(2, 3, 5, 5), CLT_F32, dev);
    ck_assert_ptr_null(clt_conv2d(x, big, NULL, NULL));
    ck_assert_error_has("the 5x5 kernel does not fit the 4x4 input");
    clt_tensor_release(big), clt_tensor_release(w), clt_tensor_release(x);
}
END_TEST

/* 2 x 2 max pooling (MaxPool2d(2) and its kin: OpenCL devices run windows wholly inside the
 * image through four taps in a row) against the windows scanned here: strides 2 and 1, dilation,
 * padding (windows inside and clipped ones side by side), NaN at each tap position of some
 * window, equal taps (the first wins), f32, f64 and f16; the values and the indices. */
START_TEST(test_max_pool_2x2)
{
    static const clt_pool2d_options cases[] = {
        {.kernel = {2, 2}},
        {.kernel = {2, 2}, .stride = {1, 1}},
        {.kernel = {2, 2}, .stride = {1, 2}, .padding = {1, 1}},
        {.kernel = {2, 2}, .stride = {2, 1}, .dilation = {2, 3}},
    };
    static const clt_dtype dtypes[] = {CLT_F32, CLT_F64, CLT_F16};
    clt_device *dev = test_device(_i);
    const int planes = 3, h = 7, w = 8;
    double *xv = noise(planes * h * w, 21);
    for (int i = 0; i < planes * h * w; i++) /* halves: equal taps */
        xv[i] = round(xv[i] * 2) / 2;
    xv[9] = xv[18] = xv[56 + 20] = xv[112 + 35] = NAN; /* top left, top right, bottom left, ... */
    for (size_t t = 0; t < sizeof dtypes / sizeof *dtypes; t++) {
        if (!test_has_dtype(dev, dtypes[t]))
            continue;
        clt_tensor *x = make(dev, dtypes[t], xv, CLT_SHAPE(1, planes, h, w));
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            const clt_pool2d_options *o = &cases[k];
            int sh = o->stride[0] ? o->stride[0] : 2, sw = o->stride[1] ? o->stride[1] : 2;
            int dh = o->dilation[0] ? o->dilation[0] : 1, dw = o->dilation[1] ? o->dilation[1] : 1;
            int ph = o->padding[0], pw = o->padding[1];
            int oh = (h + 2 * ph - dh - 1) / sh + 1, ow = (w + 2 * pw - dw - 1) / sw + 1;
            double *mx = malloc(sizeof(double) * planes * oh * ow);
            double *ix = malloc(sizeof(double) * planes * oh * ow);
            for (int p = 0; p < planes; p++)
                for (int y = 0; y < oh; y++)
                    for (int xx = 0; xx < ow; xx++) {
                        double best = -INFINITY;
                        int at = -1;
                        for (int ky = 0; ky < 2; ky++)
                            for (int kx = 0; kx < 2; kx++) {
                                int iy = y * sh - ph + ky * dh, jx = xx * sw - pw + kx * dw;
                                if (iy < 0 || iy >= h || jx < 0 || jx >= w)
                                    continue;
                                double v = xv[(p * h + iy) * w + jx];
                                if (at < 0 || v > best || (isnan(v) && !isnan(best)))
                                    best = v, at = iy * w + jx;
                            }
                        mx[(p * oh + y) * ow + xx] = best, ix[(p * oh + y) * ow + xx] = at;
                    }
            char what[64];
            snprintf(what, sizeof what, "%s case %zu", clt_dtype_name(dtypes[t]), k);
            clt_tensor *idx = NULL, *m = clt_max_pool2d(x, o, &idx);
            ck_assert_msg(m != NULL, "%s: %s", what, clt_last_error());
            ck_assert_int_eq(clt_tensor_size(m, 2), oh);
            ck_assert_int_eq(clt_tensor_size(m, 3), ow);
            check(m, mx, planes * oh * ow, 0, what); /* halves and NaN: exact in every dtype */
            check(idx, ix, planes * oh * ow, 0, what);
            free(mx), free(ix);
        }
        clt_tensor_release(x);
    }
    free(xv);
}
END_TEST

START_TEST(test_pooling)
{
    clt_device *dev = test_device(_i);
    double *xv = noise(2 * 3 * 5 * 6, 9);
    xv[7] = NAN;
    for (int i = 2 * 30; i < 4 * 30; i++) /* planes 2 and 3 in steps of 0.5: equal taps */
        xv[i] = floor(xv[i] * 2) / 2;
    clt_tensor *x = make(dev, CLT_F32, xv, CLT_SHAPE(2, 3, 5, 6));
    const clt_pool2d_options po = {.kernel = {3, 2}, .stride = {2, 2}, .padding = {1, 1}};
    int oh = (5 + 2 - 3) / 2 + 1, ow = (6 + 2 - 2) / 2 + 1;
    double *mx = malloc(sizeof(double) * 6 * oh * ow), *av = malloc(sizeof(double) * 6 * oh * ow);
    double *ex = malloc(sizeof(double) * 6 * oh * ow), *ix = malloc(sizeof(double) * 6 * oh * ow);
    for (int p = 0; p < 6; p++)
        for (int y = 0; y < oh; y++)
            for (int xx = 0; xx < ow; xx++) {
                double best = -INFINITY, sum = 0;
                int at = -1, inside = 0;
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 2; kx++) {
                        int iy = y * 2 - 1 + ky, jx = xx * 2 - 1 + kx;
                        if (iy < 0 || iy >= 5 || jx < 0 || jx >= 6)
                            continue;
                        double v = xv[p * 30 + iy * 6 + jx];
                        inside++;
                        sum += v;
                        if (at < 0 || v > best || (isnan(v) && !isnan(best)))
                            best = v, at = iy * 6 + jx;
                    }
                int o = (p * oh + y) * ow + xx;
                mx[o] = best, ix[o] = at, av[o] = sum / 6, ex[o] = sum / inside;
            }
    clt_tensor *idx = NULL;
    clt_tensor *m = clt_max_pool2d(x, &po, &idx);
    ck_assert_ptr_nonnull(idx);
    clt_tensor *c = clt_tensor_to_ex(m, &(clt_to_options){.device = clt_device_cpu(), .dtype = CLT_F64});
    double *got = test_bytes(c);
    for (int i = 0; i < 6 * oh * ow; i++)
        ELEMENT_CHECK((isnan(got[i]) && isnan(mx[i])) || got[i] == (double)(float)mx[i],
                      "max pool element %d: %g, want %g", i, got[i], mx[i]);
    free(got);
    /* without indices (no index bookkeeping on cpu, another kernel argument on OpenCL): the same
     * values; with them, the first of equal taps */
    clt_tensor *m2 = clt_max_pool2d(x, &po, NULL);
    ck_assert_msg(m2 != NULL, "%s", clt_last_error());
    test_assert_same_bytes(m2, m);
    clt_tensor_release(m2);
    check(clt_tensor_retain(idx), ix, 6 * oh * ow, 0, "max pool indices");
    check(clt_avg_pool2d(x, &po), av, 6 * oh * ow, 1e-6, "avg pool counting padding");
    clt_pool2d_options ex_po = po;
    ex_po.exclude_padding = true;
    check(clt_avg_pool2d(x, &ex_po), ex, 6 * oh * ow, 1e-6, "avg pool without padding");
    ck_assert_ptr_null(clt_max_pool2d(x, &(clt_pool2d_options){.kernel = {2, 2}, .padding = {2, 0}}, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    clt_tensor_release(c), clt_tensor_release(idx), clt_tensor_release(m), clt_tensor_release(x);
    free(ix), free(ex), free(av), free(mx), free(xv);
}
END_TEST

START_TEST(test_normalisation)
{
    clt_device *dev = test_device(_i);
    double *xv = noise(2 * 3 * 4, 5), want[24], mean[3], var[3], uvar[3];
    clt_tensor *x = make(dev, CLT_F32, xv, CLT_SHAPE(2, 3, 4));
    for (int ch = 0; ch < 3; ch++) {
        double s = 0, q = 0;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++)
                s += xv[(b * 3 + ch) * 4 + i];
        mean[ch] = s / 8;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++)
                q += pow(xv[(b * 3 + ch) * 4 + i] - mean[ch], 2);
        var[ch] = q / 8, uvar[ch] = q / 7;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++) {
                int at = (b * 3 + ch) * 4 + i;
                want[at] = (xv[at] - mean[ch]) / sqrt(var[ch] + 1e-5) * 2 + 0.5;
            }
    }
    clt_tensor *rm = clt_tensor_zeros(CLT_SHAPE(3), CLT_F32, dev), *rv = clt_tensor_ones(CLT_SHAPE(3), CLT_F32, dev);
    clt_tensor *w = clt_tensor_full(CLT_SHAPE(3), 2, CLT_F32, dev), *b = clt_tensor_full(CLT_SHAPE(3), 0.5, CLT_F32, dev);
    check(clt_batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5), want, 24, 1e-5, "batch norm, training");
    double rmw[3], rvw[3];
    for (int ch = 0; ch < 3; ch++)
        rmw[ch] = 0.1 * mean[ch], rvw[ch] = 0.9 + 0.1 * uvar[ch];
    check(clt_tensor_retain(rm), rmw, 3, 1e-6, "running mean");
    check(clt_tensor_retain(rv), rvw, 3, 1e-6, "running variance (unbiased)");
    for (int at = 0; at < 24; at++) {
        int ch = (at / 4) % 3;
        want[at] = (xv[at] - rmw[ch]) / sqrt(rvw[ch] + 1e-5);
    }
    check(clt_batch_norm(x, rm, rv, NULL, NULL, false, 0.1, 1e-5), want, 24, 1e-5, "batch norm, evaluation");
    ck_assert_ptr_null(clt_batch_norm(x, NULL, NULL, NULL, NULL, false, 0.1, 1e-5));
    ck_assert_error_has("evaluation needs the running mean and variance");

    for (int r = 0; r < 6; r++) { /* layer norm over the last dimension */
        double s = 0, q = 0;
        for (int i = 0; i < 4; i++)
            s += xv[r * 4 + i];
        for (int i = 0; i < 4; i++)
            q += pow(xv[r * 4 + i] - s / 4, 2);
        for (int i = 0; i < 4; i++)
            want[r * 4 + i] = (xv[r * 4 + i] - s / 4) / sqrt(q / 4 + 1e-5);
    }
    check(clt_layer_norm(x, 1, NULL, NULL, 1e-5), want, 24, 1e-5, "layer norm");
    ck_assert_ptr_null(clt_layer_norm(x, 4, NULL, NULL, 1e-5));
    ck_assert_error_has("normalized_ndim 4 is outside 1..3");
    clt_tensor *all[] = {b, w, rv, rm, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
    free(xv);
}
END_TEST

START_TEST(test_dropout)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(100, 100), CLT_F32, dev);
    clt_tensor *h = clt_tensor_ones(CLT_SHAPE(100, 100), CLT_F32, cpu);
    clt_manual_seed(42);
    clt_tensor *y = clt_dropout(x, 0.3, true);
    clt_manual_seed(42);
    clt_tensor *z = clt_dropout(h, 0.3, true);
    float *a = test_bytes(y), *b = test_bytes(z);
    int kept = 0;
    for (int i = 0; i < 10000; i++) {
        ELEMENT_CHECK(a[i] == b[i], "element %d: %g on %s, %g on cpu", i, a[i],
                      clt_device_name(dev), b[i]);
        ck_assert(a[i] == 0.0f || fabsf(a[i] - 1.0f / 0.7f) < 1e-6f);
        kept += a[i] != 0;
    }
    ck_assert_int_gt(kept, 6700); /* 7000 expected; 4 standard deviations is 183 */
    ck_assert_int_lt(kept, 7300);
    clt_tensor *same = clt_dropout(x, 0.3, false);
    ck_assert_ptr_eq(same, x);
    clt_tensor_release(same);
    clt_tensor *none = clt_dropout(x, 1, true);
    check(clt_sum(none, NULL, 0, false), (double[]){0}, 1, 0, "dropout p=1");
    clt_tensor_release(none);
    /* p = 1 on a tensor that requires grad: recorded, the gradient is 0 */
    ck_assert_int_eq(clt_tensor_set_requires_grad(x, true), CLT_OK);
    none = clt_dropout(x, 1, true);
    ck_assert(clt_tensor_requires_grad(none));
    clt_tensor *total = clt_sum(none, NULL, 0, false);
    ck_assert_int_eq(clt_backward(total, NULL, false), CLT_OK);
    clt_tensor *g = clt_tensor_grad(x);
    ck_assert_int_eq(clt_tensor_numel(g), 10000);
    check(clt_sum(g, NULL, 0, false), (double[]){0}, 1, 0, "dropout p=1 grad");
    clt_tensor_release(g);
    clt_tensor_release(total);
    clt_tensor_release(none);
    ck_assert_ptr_null(clt_dropout(x, 1.5, true));
    ck_assert_error_has("clt_dropout: probability 1.5 is outside 0..1");
    free(a), free(b);
    clt_tensor_release(z), clt_tensor_release(y), clt_tensor_release(h), clt_tensor_release(x);
}
END_TEST

/* ---- adjoints --------------------------------------------------------------------------------- */

/* The floating dtypes, with the tolerance of an adjoint's result relative to max(1, |want|):
 * float accumulation, or one rounding of the result for f16 and bf16. */
static const struct {
    clt_dtype dtype;
    double tol;
} adjoint_dtypes[] = {{CLT_F32, 1e-5}, {CLT_F64, 1e-12}, {CLT_F16, 1e-3}, {CLT_BF16, 8e-3}};
#define ADJOINT_DTYPES (int)(sizeof adjoint_dtypes / sizeof *adjoint_dtypes)

/* n values of noise as a tensor of dtype on dev; *v receives them as stored (rounded). */
static clt_tensor *noisy(clt_device *dev, clt_dtype dt, unsigned seed, double **v, int ndim,
                         const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    double *raw = noise(n, seed);
    clt_tensor *t = make(dev, dt, raw, ndim, shape);
    free(raw);
    *v = values(t);
    return t;
}

START_TEST(test_col2im)
{
    static const struct {
        int h, w, kh, kw;
        clt_conv2d_options o;
    } cases[] = {
        {5, 6, 3, 2, {{0, 0}, {0, 0}, {0, 0}, 0}},
        {7, 6, 3, 3, {{2, 1}, {1, 2}, {1, 1}, 1}},
        {7, 8, 2, 3, {{2, 3}, {1, 1}, {2, 2}, 1}},
        {8, 7, 2, 1, {{3, 2}, {0, 1}, {1, 1}, 1}}, /* rows no window reads */
    };
    clt_device *dev = test_device(_i);
    for (int t = 0; t < ADJOINT_DTYPES; t++)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            if (!test_has_dtype(dev, adjoint_dtypes[t].dtype))
                continue;
            const int n = 2, ch = 3, h = cases[k].h, w = cases[k].w, kh = cases[k].kh, kw = cases[k].kw;
            clt_tensor *x = clt_tensor_zeros(CLT_SHAPE(n, ch, h, w), adjoint_dtypes[t].dtype, dev);
            clt__conv_call g;
            ck_assert_int_eq(clt__conv2d_geometry("test_col2im", x, kh, kw, &cases[k].o, &g), CLT_OK);
            int oh = (int)g.OH, ow = (int)g.OW, rows = ch * kh * kw, cols = oh * ow;
            double *cv, *want = calloc((size_t)(n * ch * h * w), sizeof *want);
            clt_tensor *ct = noisy(dev, adjoint_dtypes[t].dtype, (unsigned)k + 20, &cv, CLT_SHAPE(rows, n, cols));
            for (int b = 0; b < n; b++) /* scatter: every column entry to where im2col read it */
                for (int r = 0; r < rows; r++)
                    for (int col = 0; col < cols; col++) {
                        int c = r / (kh * kw), y = r / kw % kh, xx = r % kw;
                        int iy = col / ow * g.sh - g.ph + y * g.dh, ix = col % ow * g.sw - g.pw + xx * g.dw;
                        if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                            want[((b * ch + c) * h + iy) * w + ix] += cv[(r * n + b) * cols + col];
                    }
            char what[64];
            snprintf(what, sizeof what, "col2im %s case %zu", clt_dtype_name(adjoint_dtypes[t].dtype), k);
            clt_tensor *img = clt__col2im("test_col2im", ct, &g);
            ck_assert_msg(img && clt_tensor_ndim(img) == 4 && clt_tensor_size(img, 2) == h, "%s: %s", what, clt_last_error());
            check(img, want, n * ch * h * w, adjoint_dtypes[t].tol, what);
            clt_tensor_release(ct), clt_tensor_release(x);
            free(want), free(cv);
        }
}
END_TEST

/* The gradient of pooling against the scatter form: every window's gradient to the element its
 * index names (max) or to each element inside it over the forward divisor (average). */
START_TEST(test_pool2d_backward)
{
    static const struct {
        bool is_max;
        clt_pool2d_options o;
    } cases[] = {
        {true, {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}, .dilation = {1, 2}}}, /* overlapping */
        {true, {.kernel = {2, 2}, .padding = {1, 0}}},
        {true, {.kernel = {2, 1}, .stride = {3, 2}, .dilation = {2, 1}}}, /* apart, with gaps */
        {true, {.kernel = {1, 2}}}, /* windows that tile the 5 x 6 planes */
        {true, {.kernel = {5, 3}}},
        {true, {.kernel = {2, 2}}}, /* apart, the fifth row in no window */
        {false, {.kernel = {3, 3}, .stride = {2, 1}, .padding = {1, 1}}}, /* counting the padding */
        {false, {.kernel = {3, 2}, .stride = {1, 2}, .padding = {1, 1}, .exclude_padding = true}},
        /* ceil mode: last windows that run past the padding */
        {true, {.kernel = {2, 4}, .stride = {2, 3}, .padding = {1, 1}, .ceil_mode = true}},
        {false, {.kernel = {3, 2}, .stride = {2, 4}, .padding = {1, 1}, .ceil_mode = true}},
        {false, {.kernel = {2, 3}, .stride = {3, 2}, .padding = {0, 1}, .exclude_padding = true, .ceil_mode = true}},
    };
    clt_device *dev = test_device(_i);
    const int n = 2, ch = 3, h = 5, w = 6;
    for (int t = 0; t < ADJOINT_DTYPES; t++)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            clt_dtype dt = adjoint_dtypes[t].dtype;
            if (!test_has_dtype(dev, dt))
                continue;
            const clt_pool2d_options *o = &cases[k].o;
            double *xv = noise(n * ch * h * w, 11), *gv, *want = calloc((size_t)(n * ch * h * w), sizeof *want);
            for (int i = 0; i < n * ch * h * w; i++) /* halves: ties, which the first element wins */
                xv[i] = round(xv[i] * 2) / 2;
            clt_tensor *x = make(dev, dt, xv, CLT_SHAPE(n, ch, h, w)), *idx = NULL;
            clt_tensor *y = cases[k].is_max ? clt_max_pool2d(x, o, &idx) : clt_avg_pool2d(x, o);
            ck_assert_msg(y != NULL, "%s", clt_last_error());
            clt__conv_call g;
            ck_assert_int_eq(clt__pool2d_geometry("test_pool2d_backward", x, o, cases[k].is_max, &g), CLT_OK);
            int oh = (int)g.OH, ow = (int)g.OW;
            ck_assert_int_eq(clt_tensor_size(y, 2), oh);
            clt_tensor *gy = noisy(dev, dt, (unsigned)k + 30, &gv, CLT_SHAPE(n, ch, oh, ow));
            int64_t *at = idx ? test_bytes(idx) : NULL;
            for (int p = 0; p < n * ch; p++)
                for (int oy = 0; oy < oh; oy++)
                    for (int ox = 0; ox < ow; ox++) {
                        int o_at = (p * oh + oy) * ow + ox, inside = 0, padded = 0;
                        if (at) {
                            if (at[o_at] >= 0)
                                want[p * h * w + at[o_at]] += gv[o_at];
                            continue;
                        }
                        for (int pass = 0; pass < 2; pass++) /* count, then spread */
                            for (int ky = 0; ky < g.kh; ky++)
                                for (int kx = 0; kx < g.kw; kx++) {
                                    int iy = oy * g.sh - g.ph + ky * g.dh, ix = ox * g.sw - g.pw + kx * g.dw;
                                    /* PyTorch's divisor counting padding: the window clipped to the padded input */
                                    if (pass == 0)
                                        padded += iy < h + g.ph && ix < w + g.pw;
                                    if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                                        continue;
                                    if (pass == 0)
                                        inside++;
                                    else
                                        want[(p * h + iy) * w + ix] += gv[o_at] / (o->exclude_padding ? inside : padded);
                                }
                    }
            char what[64];
            snprintf(what, sizeof what, "pool2d_backward %s case %zu", clt_dtype_name(dt), k);
            check(clt__pool2d_backward("test_pool2d_backward", gy, idx, &g), want, n * ch * h * w, adjoint_dtypes[t].tol, what);
            clt_tensor_release(gy), clt_tensor_release(y), clt_tensor_release(idx), clt_tensor_release(x);
            free(at), free(want), free(gv), free(xv);
        }
    /* a window wholly in the padding (index -1) passes nothing on */
    clt_tensor *one = clt_tensor_full(CLT_SHAPE(1, 1, 1, 1), 5, CLT_F32, dev), *idx = NULL;
    clt_pool2d_options po = {.kernel = {2, 2}, .padding = {1, 1}, .dilation = {2, 2}};
    clt_tensor *y = clt_max_pool2d(one, &po, &idx);
    clt__conv_call g;
    ck_assert_int_eq(clt__pool2d_geometry("test_pool2d_backward", one, &po, true, &g), CLT_OK);
    check(clt__pool2d_backward("test_pool2d_backward", one, idx, &g), (double[]){0}, 1, 0, "a window in the padding");
    ck_assert_ptr_null(clt__pool2d_backward("test_pool2d_backward", one, NULL, &g));
    ck_assert_error_has("test_pool2d_backward: max pooling's gradient needs its i64 indices");
    clt_tensor_release(y), clt_tensor_release(idx), clt_tensor_release(one);
}
END_TEST

/* clt__index_add of src along dim against the scatter form out[a, idx[m], b] += src[a, m, b]. */
static void check_index_add(clt_tensor *src, int dim, const int64_t *idx, int64_t k, double tol,
                            const char *what)
{
    int nd = clt_tensor_ndim(src);
    int64_t a_n = 1, m_n = clt_tensor_size(src, dim), b_n = 1, shape[CLT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        shape[d] = d == dim ? k : clt_tensor_size(src, d);
        a_n *= d < dim ? shape[d] : 1;
        b_n *= d > dim ? shape[d] : 1;
    }
    double *sv = values(src), *want = calloc((size_t)(a_n * k * b_n) + 1, sizeof *want);
    for (int64_t a = 0; a < a_n; a++)
        for (int64_t m = 0; m < m_n; m++)
            for (int64_t b = 0; b < b_n; b++)
                want[(a * k + idx[m]) * b_n + b] += sv[(a * m_n + m) * b_n + b];
    clt_tensor *out = clt__index_add("test_index_add", src, dim, idx, k);
    ck_assert_msg(out != NULL, "%s: %s", what, clt_last_error());
    ck_assert_int_eq(clt_tensor_ndim(out), nd);
    for (int d = 0; d < nd; d++)
        ck_assert_int_eq(clt_tensor_size(out, d), shape[d]);
    check(out, want, a_n * k * b_n, tol, what);
    free(want), free(sv);
}

START_TEST(test_index_add)
{
    static const int64_t idx[] = {3, 0, 3, 3, 0}; /* repeated; 1, 2 (and 4, 5) never hit */
    clt_device *dev = test_device(_i);
    for (int t = 0; t < ADJOINT_DTYPES; t++) {
        clt_dtype dt = adjoint_dtypes[t].dtype;
        double tol = adjoint_dtypes[t].tol, *v, *u;
        char what[64];
        if (!test_has_dtype(dev, dt))
            continue;
        clt_tensor *src = noisy(dev, dt, 40, &v, CLT_SHAPE(2, 5, 3));
        clt_tensor *base = noisy(dev, dt, 41, &u, CLT_SHAPE(3, 2, 5)), *view = clt_transpose(base, 0, 2);
        snprintf(what, sizeof what, "index_add %s", clt_dtype_name(dt));
        check_index_add(src, 1, idx, 4, tol, what);
        check_index_add(view, 0, idx, 6, tol, what); /* a transposed view, along dim 0 */
        check_index_add(base, 2, idx, 4, tol, what); /* along the last */
        clt_tensor *out = clt__index_add("test_index_add", base, -1, idx, 4);
        ck_assert_int_eq(clt_tensor_size(out, 2), 4);
        clt_tensor_release(out), clt_tensor_release(view), clt_tensor_release(base), clt_tensor_release(src);
        free(u), free(v);
    }
    clt_tensor *none = clt_tensor_zeros(CLT_SHAPE(2, 0, 3), CLT_F32, dev);
    const double zeros[18] = {0};
    check(clt__index_add("test_index_add", none, 1, NULL, 3), zeros, 18, 0, "no indices");
    clt_tensor *ints = clt_tensor_ones(CLT_SHAPE(5), CLT_I32, dev);
    ck_assert_ptr_null(clt__index_add("test_index_add", ints, 0, idx, 4));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    clt_tensor_release(ints), clt_tensor_release(none);
}
END_TEST

typedef struct nn_case {
    clt_tensor *x, *w, *t, *img, *xt, *img2, *dw, *big, *w3;
    int which;
} nn_case;

static bool run_nn_case(void *ctx)
{
    nn_case *c = ctx;
    clt_tensor *r = NULL;
    switch (c->which) {
    case 0: r = clt_softmax(c->x, 1); break;
    case 1: r = clt_cross_entropy(c->x, c->t, NULL); break;
    case 2: r = clt__index_add("clt__index_add", c->xt, 0, (const int64_t[]){1, 0, 3, 1}, 5); break;
    case 3: r = clt_conv2d(c->img, c->w, NULL, NULL); break;
    case 4: /* an image cpu convolves in bands */
        r = clt_conv2d(c->big, c->w3, NULL, &(clt_conv2d_options){.padding = {1, 1}});
        break;
    case 5: /* depthwise, two channels */
        r = clt_conv2d(c->img2, c->dw, NULL,
                       &(clt_conv2d_options){.padding = {1, 1}, .groups = 2});
        break;
    default: /* Winograd's, in blocks of 8 tile rows */
        clt__conv_winograd = 1, clt__winograd_rows = 8;
        r = clt_conv2d(c->big, c->w3, NULL, &(clt_conv2d_options){.padding = {1, 1}});
        clt__conv_winograd = -1, clt__winograd_rows = 0;
        break;
    }
    clt_tensor_release(r);
    return r != NULL;
}

START_TEST(test_nn_allocation_failures)
{
    static const char *const fns[] = {"clt_softmax", "clt_cross_entropy", "clt__index_add",
                                      "clt_conv2d",  "clt_conv2d",        "clt_conv2d",
                                      "clt_conv2d"};
    clt_device *dev = test_device(_i);
    int64_t tv[] = {1, 0, 3, 2};
    nn_case c = {clt_tensor_rand(CLT_SHAPE(4, 4), CLT_F32, dev),
                 clt_tensor_ones(CLT_SHAPE(2, 1, 2, 2), CLT_F32, dev),
                 clt_tensor_from_data(CLT_SHAPE(4), tv, CLT_I64, dev),
                 NULL,
                 NULL,
                 NULL,
                 clt_tensor_ones(CLT_SHAPE(2, 1, 3, 3), CLT_F32, dev),
                 clt_tensor_rand(CLT_SHAPE(1, 4, 40, 40), CLT_F32, dev),
                 clt_tensor_ones(CLT_SHAPE(2, 4, 3, 3), CLT_F32, dev),
                 0};
    c.img = clt_reshape(c.x, CLT_SHAPE(1, 1, 4, 4));
    c.img2 = clt_reshape(c.x, CLT_SHAPE(1, 2, 2, 4));
    c.xt = clt_transpose(c.x, 0, 1); /* index_add copies it contiguous first */
    for (c.which = 0; c.which < 7; c.which++) {
        test_fault_sweep(run_nn_case, &c, fns[c.which], CLT__HOST);
        test_fault_sweep(run_nn_case, &c, fns[c.which], CLT__DEVICE);
    }
    clt_tensor_release(c.img2), clt_tensor_release(c.dw);
    clt_tensor_release(c.big), clt_tensor_release(c.w3);
    clt_tensor_release(c.xt), clt_tensor_release(c.img), clt_tensor_release(c.t), clt_tensor_release(c.w), clt_tensor_release(c.x);
}
END_TEST

Suite *suite_nn(void)
{
    Suite *s = suite_create("nn");
    TCase *tc = test_case("nn", 600);
    ADD_DEVICE_TEST(tc, test_softmax);
    ADD_DEVICE_TEST(tc, test_losses);
    ADD_DEVICE_TEST(tc, test_losses_no_class);
    ADD_DEVICE_TEST(tc, test_loss_options);
    ADD_DEVICE_TEST(tc, test_attention);
    ADD_DEVICE_TEST(tc, test_adaptive_avg_pool);
    ADD_DEVICE_TEST(tc, test_gathers);
    ADD_DEVICE_TEST(tc, test_nn_edges);
    ADD_DEVICE_TEST(tc, test_nn_window_limits);
    ADD_DEVICE_TEST(tc, test_conv2d);
    ADD_DEVICE_TEST(tc, test_conv2d_bands);
    ADD_DEVICE_TEST(tc, test_conv2d_winograd);
    ADD_DEVICE_TEST(tc, test_cross_entropy_fused);
    ADD_DEVICE_TEST(tc, test_cross_entropy_target_range);
    ADD_DEVICE_TEST(tc, test_cross_entropy_rows_out_of_range);
    ADD_DEVICE_TEST(tc, test_pooling);
    ADD_DEVICE_TEST(tc, test_max_pool_2x2);
    ADD_DEVICE_TEST(tc, test_pool_ceil_mode);
    ADD_DEVICE_TEST(tc, test_cumsum_sort);
    ADD_DEVICE_TEST(tc, test_gather_masked_fill);
    ADD_DEVICE_TEST(tc, test_multinomial);
    ADD_DEVICE_TEST(tc, test_pad_interpolate);
    ADD_DEVICE_TEST(tc, test_conv_transpose2d);
    ADD_DEVICE_TEST(tc, test_col2im);
    ADD_DEVICE_TEST(tc, test_pool2d_backward);
    ADD_DEVICE_TEST(tc, test_index_add);
    ADD_DEVICE_TEST(tc, test_normalisation);
    ADD_DEVICE_TEST(tc, test_dropout);
    ADD_DEVICE_TEST(tc, test_nn_allocation_failures);
    suite_add_tcase(s, tc);
    return s;
}
