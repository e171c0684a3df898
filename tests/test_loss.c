/* Loss suite: nll, cross entropy and mse on every device against PyTorch's numbers and
 * references computed here in double (the reductions, class weights, ignored targets, label
 * smoothing, inputs of no class); the fused cross entropy against the composed path, and the
 * range of the targets that it checks without reading them back. */
#include <math.h>
#include <stdlib.h>

#include "helpers.h"
#include "ops/ops_internal.h"

START_TEST(test_losses)
{
    clt_device *dev = test_device(_i);
    const double logits[] = {0, 1, 2, 3, 4, 5, 1, 1, 1};
    clt_tensor *x = test_tensor(dev, CLT_F32, logits, CLT_SHAPE(3, 3));
    int64_t tv[] = {2, 0, -100};
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(3), tv, CLT_I64, dev);
    const double lse = log(1 + exp(1) + exp(2)); /* rows 0 and 1 share it (shifted) */
    const double l0 = lse - 2, l1 = lse - 0 + 0; /* -log_softmax: row 1 target 0 -> lse - (3 - 3) */
    test_assert_values(clt_cross_entropy(x, t, NULL), (double[]){(l0 + lse) / 2}, 1, 1e-6, "cross entropy mean, one ignored");
    test_assert_values(clt_cross_entropy(x, t, TEST_LOSS(CLT_REDUCTION_SUM)), (double[]){l0 + l1}, 1, 1e-6, "cross entropy sum");
    test_assert_values(clt_cross_entropy(x, t, TEST_LOSS(CLT_REDUCTION_NONE)), (double[]){l0, l1, 0}, 3, 1e-6, "cross entropy none");
    clt_tensor *lp = clt_log_softmax(x, 1);
    test_assert_values(clt_nll_loss(lp, t, NULL), (double[]){(l0 + l1) / 2}, 1, 1e-6, "nll");
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
    clt_tensor *ta = test_tensor(dev, CLT_F32, a, CLT_SHAPE(2, 2)), *tbb = test_tensor(dev, CLT_F32, b, CLT_SHAPE(2, 2));
    test_assert_values(clt_mse_loss(ta, tbb, CLT_REDUCTION_MEAN), (double[]){2}, 1, 1e-7, "mse mean");
    test_assert_values(clt_mse_loss(ta, tbb, CLT_REDUCTION_SUM), (double[]){8}, 1, 1e-7, "mse sum");
    test_assert_values(clt_mse_loss(ta, tbb, CLT_REDUCTION_NONE), (double[]){0, 4, 4, 0}, 4, 1e-7, "mse none");
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
        test_assert_values(loss(x, t, NULL), &nan, 1, 0, "mean");
        test_assert_values(loss(x, t, TEST_LOSS(CLT_REDUCTION_SUM)), zeros, 1, 0, "sum");
        test_assert_values(loss(x, t, TEST_LOSS(CLT_REDUCTION_NONE)), zeros, 3, 0, "none");
        test_assert_values(loss(x1, t1, NULL), &nan, 1, 0, "1-D mean");
        test_assert_values(loss(x4, t4, TEST_LOSS(CLT_REDUCTION_NONE)), zeros, 8, 0, "(N, C, d1, d2) none");
        clt_loss_options o = clt_loss_options_default();
        o.weight = weight;
        test_assert_values(loss(x, t, &o), &nan, 1, 0, "weighted mean");
        o.reduction = CLT_REDUCTION_SUM;
        test_assert_values(loss(x, t, &o), zeros, 1, 0, "weighted sum");
    }
    clt_loss_options o = clt_loss_options_default();
    o.label_smoothing = 0.1;
    test_assert_values(clt_cross_entropy(x, t, &o), &nan, 1, 0, "smoothed mean");
    o.reduction = CLT_REDUCTION_SUM;
    test_assert_values(clt_cross_entropy(x, t, &o), &nan, 1, 0, "smoothed sum");
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
    clt_tensor *x = test_tensor(dev, CLT_F32, logits, CLT_SHAPE(2, 3));
    int64_t tv[] = {2, 0}, lo = -1, hi = -1;
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(2), tv, CLT_I64, dev);
    ck_assert(clt__tensor_range(t, &lo, &hi));
    ck_assert_int_eq(lo, 0);
    ck_assert_int_eq(hi, 2);
    test_assert_values(clt_cross_entropy(x, t, NULL), (double[]){(l + (l + 2)) / 2}, 1, 1e-6, "known range");
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
    test_assert_values(clt_cross_entropy(x, ti, NULL), (double[]){l + 1}, 1, 1e-6, "one ignored");
    clt_loss_options skip1 = clt_loss_options_default(); /* ignore_index inside the range */
    skip1.ignore_index = 1;
    int64_t kv[] = {2, 1};
    clt_tensor *tk = clt_tensor_from_data(CLT_SHAPE(2), kv, CLT_I64, dev);
    test_assert_values(clt_cross_entropy(x, tk, &skip1), (double[]){l}, 1, 1e-6, "ignore_index in range");
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
    clt_tensor *x = test_tensor(dev, CLT_F32, logits, CLT_SHAPE(3, 3));
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
    double *xv = test_noise_new(37 * 11, 21), *gv = test_noise_new(37, 22), ones[11], upstream = 1.75;
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
            clt_tensor *w = test_tensor(dev, dt, ones, CLT_SHAPE(11)), *x[2], *loss[2], *grad[2];
            clt_tensor *g = rows ? test_tensor(dev, dt, gv, CLT_SHAPE(37))
                                 : test_tensor(dev, dt, &upstream, 0, (int64_t[]){0});
            for (int path = 0; path < 2; path++) {
                clt_loss_options o = clt_loss_options_default();
                o.weight = path ? w : NULL;
                o.reduction = reductions[r];
                x[path] = test_tensor(dev, dt, xv, CLT_SHAPE(37, 11));
                ck_assert_int_eq(clt_tensor_set_requires_grad(x[path], true), CLT_OK);
                loss[path] = clt_cross_entropy(x[path], t, &o);
                ck_assert_msg(loss[path] != NULL, "%s", clt_last_error());
                ck_assert_int_eq(clt_tensor_numel(loss[path]), n);
                ck_assert_int_eq(clt_backward(loss[path], g, false), CLT_OK);
                grad[path] = clt_tensor_grad(x[path]);
            }
            double *want = test_values(loss[1]), *gwant = test_values(grad[1]);
            test_assert_values(clt_tensor_retain(loss[0]), want, n, f64 ? 1e-12 : 1e-6, "fused cross entropy");
            test_assert_values(clt_tensor_retain(grad[0]), gwant, 37 * 11, f64 ? 1e-12 : 1e-6,
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
    clt_tensor *x = test_tensor(dev, CLT_F32, logits, CLT_SHAPE(3, 4));
    clt_tensor *w = test_tensor(dev, CLT_F32, wv, CLT_SHAPE(4));
    int64_t tv[] = {2, 0, 1}, zv[] = {0, 0, 0}, iv[] = {2, -100, 1};
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(3), tv, CLT_I64, dev);
    clt_tensor *zeros = clt_tensor_from_data(CLT_SHAPE(3), zv, CLT_I64, dev);
    clt_tensor *ti = clt_tensor_from_data(CLT_SHAPE(3), iv, CLT_I64, dev);
    /* class 0 is a class like any other by default */
    test_assert_values(clt_cross_entropy(x, zeros, NULL), (double[]){1.3913203837249413}, 1, 1e-6, "class 0");
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
        test_assert_values(clt_cross_entropy(x, cases[k].targets ? ti : t, &o), cases[k].want, cases[k].n,
              2e-6, cases[k].what);
    }
    /* (N, C, d): the class dimension second, the targets without it */
    double v3[12];
    for (int k = 0; k < 12; k++)
        v3[k] = sin(k);
    int64_t t3v[] = {0, 2, 1, -100};
    clt_tensor *x3 = test_tensor(dev, CLT_F32, v3, CLT_SHAPE(2, 3, 2));
    clt_tensor *t3 = clt_tensor_from_data(CLT_SHAPE(2, 2), t3v, CLT_I64, dev);
    test_assert_values(clt_cross_entropy(x3, t3, NULL), (double[]){1.361936741072742}, 1, 1e-6, "(N, C, d) mean");
    clt_tensor *n3 = clt_cross_entropy(x3, t3, TEST_LOSS(CLT_REDUCTION_NONE));
    ck_assert_int_eq(clt_tensor_ndim(n3), 2);
    test_assert_values(n3, (double[]){1.3741564725631146, 2.308203100102385, 0.40345065055272744, 0}, 4, 1e-6,
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

Suite *suite_loss(void)
{
    Suite *s = suite_create("loss");
    TCase *tc = test_case("loss", 600);
    ADD_DEVICE_TEST(tc, test_losses);
    ADD_DEVICE_TEST(tc, test_losses_no_class);
    ADD_DEVICE_TEST(tc, test_loss_options);
    ADD_DEVICE_TEST(tc, test_cross_entropy_fused);
    ADD_DEVICE_TEST(tc, test_cross_entropy_target_range);
    ADD_DEVICE_TEST(tc, test_cross_entropy_rows_out_of_range);
    suite_add_tcase(s, tc);
    return s;
}
