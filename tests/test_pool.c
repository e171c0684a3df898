/* Pooling suite: max, average and adaptive average pooling on every device against windows
 * scanned here and PyTorch's numbers (padding, dilation, ceil mode, NaN and equal taps, the
 * indices); and pooling's adjoint (pool2d_backward) against the scatter form. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"
#include "ops/ops_internal.h"

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
    clt_tensor *x = test_sines(dev, CLT_F32, CLT_SHAPE(2, 3, 7, 5), 0.3);
    clt_tensor *y = clt_adaptive_avg_pool2d(x, 3, 2);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_size(y, 2), 3);
    test_assert_values(y, want32, 36, 1e-6, "adaptive 7x5 -> 3x2");
    test_assert_values(clt_adaptive_avg_pool2d(x, 1, 1), want11, 6, 1e-6, "adaptive to 1x1");
    clt_module *m = clt_nn_adaptive_avg_pool2d(1, 1);
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    clt_tensor *first = clt_narrow(x, 0, 0, 1), *img = clt_squeeze(first, 0);
    clt_tensor_release(first);
    test_assert_values(clt_module_forward(m, img), want11, 3, 1e-6, "unbatched, as a module");
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
    clt_tensor *x5 = test_tensor(dev, CLT_F32, v, CLT_SHAPE(1, 1, 5, 5));
    clt_pool2d_options o = clt_pool2d_options_default(2, 2);
    test_assert_values(clt_max_pool2d(x5, &o, NULL), (double[]){6, 8, 16, 18}, 4, 0, "floor mode");
    o.ceil_mode = true;
    test_assert_values(clt_max_pool2d(x5, &o, NULL), (double[]){6, 8, 9, 16, 18, 19, 21, 23, 24}, 9, 0, "ceil max");
    test_assert_values(clt_avg_pool2d(x5, &o), (double[]){3, 5, 6.5, 13, 15, 16.5, 20.5, 22.5, 24}, 9, 1e-6, "ceil avg");
    clt_tensor *x6 = test_tensor(dev, CLT_F32, v, CLT_SHAPE(1, 1, 6, 6)), *idx = NULL;
    o = clt_pool2d_options_default(3, 3);
    o.stride[0] = o.stride[1] = 2, o.padding[0] = o.padding[1] = 1, o.ceil_mode = true;
    static const double mx[] = {7, 9, 11, 11, 19, 21, 23, 23, 31, 33, 35, 35, 31, 33, 35, 35};
    static const double av[] = {14.0 / 9, 30.0 / 9, 42.0 / 9, 16.0 / 6, 75.0 / 9, 14, 16, 51.0 / 6,
                                147.0 / 9, 26, 28, 87.0 / 6, 61.0 / 6, 16, 17, 8.75};
    static const double ex[] = {3.5, 5, 7, 8, 12.5, 14, 16, 17, 24.5, 26, 28, 29, 30.5, 32, 34, 35};
    test_assert_values(clt_max_pool2d(x6, &o, &idx), mx, 16, 0, "padded ceil max");
    test_assert_values(idx, (double[]){7, 9, 11, 11, 19, 21, 23, 23, 31, 33, 35, 35, 31, 33, 35, 35}, 16, 0,
          "padded ceil max indices");
    test_assert_values(clt_avg_pool2d(x6, &o), av, 16, 1e-5, "padded ceil avg counting padding");
    o.exclude_padding = true;
    test_assert_values(clt_avg_pool2d(x6, &o), ex, 16, 1e-5, "padded ceil avg without padding");
    o.exclude_padding = false, o.dilation[0] = o.dilation[1] = 1;
    clt_module *m = clt_nn_max_pool2d(&o);
    char *text = clt_module_format(m);
    ck_assert_str_eq(text, "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)");
    clt_free(text), clt_module_release(m);
    clt_tensor_release(x5), clt_tensor_release(x6);
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
    double *xv = test_noise_new(planes * h * w, 21);
    for (int i = 0; i < planes * h * w; i++) /* halves: equal taps */
        xv[i] = round(xv[i] * 2) / 2;
    xv[9] = xv[18] = xv[56 + 20] = xv[112 + 35] = NAN; /* top left, top right, bottom left, ... */
    for (size_t t = 0; t < sizeof dtypes / sizeof *dtypes; t++) {
        if (!test_has_dtype(dev, dtypes[t]))
            continue;
        clt_tensor *x = test_tensor(dev, dtypes[t], xv, CLT_SHAPE(1, planes, h, w));
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
            test_assert_values(m, mx, planes * oh * ow, 0, what); /* halves and NaN: exact in every dtype */
            test_assert_values(idx, ix, planes * oh * ow, 0, what);
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
    double *xv = test_noise_new(2 * 3 * 5 * 6, 9);
    xv[7] = NAN;
    for (int i = 2 * 30; i < 4 * 30; i++) /* planes 2 and 3 in steps of 0.5: equal taps */
        xv[i] = floor(xv[i] * 2) / 2;
    clt_tensor *x = test_tensor(dev, CLT_F32, xv, CLT_SHAPE(2, 3, 5, 6));
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
    test_assert_values(clt_tensor_retain(idx), ix, 6 * oh * ow, 0, "max pool indices");
    test_assert_values(clt_avg_pool2d(x, &po), av, 6 * oh * ow, 1e-6, "avg pool counting padding");
    clt_pool2d_options ex_po = po;
    ex_po.exclude_padding = true;
    test_assert_values(clt_avg_pool2d(x, &ex_po), ex, 6 * oh * ow, 1e-6, "avg pool without padding");
    ck_assert_ptr_null(clt_max_pool2d(x, &(clt_pool2d_options){.kernel = {2, 2}, .padding = {2, 0}}, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    clt_tensor_release(c), clt_tensor_release(idx), clt_tensor_release(m), clt_tensor_release(x);
    free(ix), free(ex), free(av), free(mx), free(xv);
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
    for (int t = 0; t < TEST_ADJOINT_DTYPES; t++)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            clt_dtype dt = test_adjoint_dtypes[t].dtype;
            if (!test_has_dtype(dev, dt))
                continue;
            const clt_pool2d_options *o = &cases[k].o;
            double *xv = test_noise_new(n * ch * h * w, 11), *gv, *want = calloc((size_t)(n * ch * h * w), sizeof *want);
            for (int i = 0; i < n * ch * h * w; i++) /* halves: ties, which the first element wins */
                xv[i] = round(xv[i] * 2) / 2;
            clt_tensor *x = test_tensor(dev, dt, xv, CLT_SHAPE(n, ch, h, w)), *idx = NULL;
            clt_tensor *y = cases[k].is_max ? clt_max_pool2d(x, o, &idx) : clt_avg_pool2d(x, o);
            ck_assert_msg(y != NULL, "%s", clt_last_error());
            clt__conv_call g;
            ck_assert_int_eq(clt__pool2d_geometry("test_pool2d_backward", x, o, cases[k].is_max, &g), CLT_OK);
            int oh = (int)g.OH, ow = (int)g.OW;
            ck_assert_int_eq(clt_tensor_size(y, 2), oh);
            clt_tensor *gy = test_noisy(dev, dt, (unsigned)k + 30, &gv, CLT_SHAPE(n, ch, oh, ow));
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
            test_assert_values(clt__pool2d_backward("test_pool2d_backward", gy, idx, &g), want, n * ch * h * w, test_adjoint_dtypes[t].tol, what);
            clt_tensor_release(gy), clt_tensor_release(y), clt_tensor_release(idx), clt_tensor_release(x);
            free(at), free(want), free(gv), free(xv);
        }
    /* a window wholly in the padding (index -1) passes nothing on */
    clt_tensor *one = clt_tensor_full(CLT_SHAPE(1, 1, 1, 1), 5, CLT_F32, dev), *idx = NULL;
    clt_pool2d_options po = {.kernel = {2, 2}, .padding = {1, 1}, .dilation = {2, 2}};
    clt_tensor *y = clt_max_pool2d(one, &po, &idx);
    clt__conv_call g;
    ck_assert_int_eq(clt__pool2d_geometry("test_pool2d_backward", one, &po, true, &g), CLT_OK);
    test_assert_values(clt__pool2d_backward("test_pool2d_backward", one, idx, &g), (double[]){0}, 1, 0, "a window in the padding");
    ck_assert_ptr_null(clt__pool2d_backward("test_pool2d_backward", one, NULL, &g));
    ck_assert_error_has("test_pool2d_backward: max pooling's gradient needs its i64 indices");
    clt_tensor_release(y), clt_tensor_release(idx), clt_tensor_release(one);
}
END_TEST

Suite *suite_pool(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = test_case("pool", 600);
    ADD_DEVICE_TEST(tc, test_adaptive_avg_pool);
    ADD_DEVICE_TEST(tc, test_pooling);
    ADD_DEVICE_TEST(tc, test_max_pool_2x2);
    ADD_DEVICE_TEST(tc, test_pool_ceil_mode);
    ADD_DEVICE_TEST(tc, test_pool2d_backward);
    suite_add_tcase(s, tc);
    return s;
}
