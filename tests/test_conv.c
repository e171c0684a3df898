/* Convolution suite: conv2d (grouped, depthwise, in bands, by Winograd's transform) and
 * conv_transpose2d on every device against a direct convolution in double and against its
 * definition; im2col's adjoint (col2im) against the scatter form; and the window geometry of
 * convolution and pooling near the int and int64 limits. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"
#include "ops/ops_internal.h"

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
    double *xv = test_noise_new(n * c * h * wd, 4), *wv = test_noise_new(o * c * kh * kw, 5), *bv = test_noise_new(o, 6);
    for (int k = 0; k < 4; k++) {
        const clt_conv2d_options *p = &cases[k / 2];
        clt_dtype dt = k % 2 ? CLT_F64 : CLT_F32;
        if (dt == CLT_F64 && !clt_device_get_info(dev)->fp64)
            continue;
        int oh = (h + 2 * p->padding[0] - p->dilation[0] * (kh - 1) - 1) / p->stride[0] + 1;
        int ow = (wd + 2 * p->padding[1] - p->dilation[1] * (kw - 1) - 1) / p->stride[1] + 1;
        double *want = malloc((size_t)(n * o * oh * ow) * sizeof *want);
        conv_ref(xv, wv, bv, n, c, h, wd, o, kh, kw, p, want, oh, ow);
        clt_tensor *x = test_tensor(dev, dt, xv, CLT_SHAPE(n, c, h, wd));
        clt_tensor *w = test_tensor(dev, dt, wv, CLT_SHAPE(o, c, kh, kw));
        clt_tensor *b = test_tensor(dev, dt, bv, CLT_SHAPE(o));
        /* f32: sums of 288 products of up to 4 */
        test_assert_values(clt_conv2d(x, w, b, p), want, n * o * oh * ow, dt == CLT_F64 ? 1e-12 : 1e-4,
              "banded conv2d");
        clt_tensor_release(b), clt_tensor_release(w), clt_tensor_release(x);
        free(want);
    }
    free(bv), free(wv), free(xv);
    clt_tensor *x = clt_tensor_zeros(CLT_SHAPE(1, 0, 5, 5), CLT_F32, dev);
    clt_tensor *w = clt_tensor_zeros(CLT_SHAPE(3, 0, 3, 3), CLT_F32, dev);
    double zeros[27] = {0};
    test_assert_values(clt_conv2d(x, w, NULL, NULL), zeros, 27, 0, "conv2d of no channels");
    clt_tensor_release(w), clt_tensor_release(x);
    /* recorded, three images and a bias: every output its channel's bias (the product of no
     * terms writes the (N, O, L) layout image by image) */
    x = clt_tensor_zeros(CLT_SHAPE(3, 0, 4, 4), CLT_F32, dev);
    w = clt_tensor_zeros(CLT_SHAPE(2, 0, 3, 3), CLT_F32, dev);
    clt_tensor *b = test_tensor(dev, CLT_F32, (const double[]){1, 2}, CLT_SHAPE(2));
    clt_conv2d_options same = clt_conv2d_options_default();
    same.padding[0] = same.padding[1] = 1;
    double biased[96];
    for (int i = 0; i < 96; i++)
        biased[i] = i / 16 % 2 ? 2 : 1;
    clt_tensor_set_requires_grad(w, true);
    test_assert_values(clt_conv2d(x, w, b, &same), biased, 96, 0, "conv2d of no channels with a bias, recorded");
    clt_tensor_release(b), clt_tensor_release(w), clt_tensor_release(x);
    /* an image of no rows, padded: every output reads padding only (the narrow images' tables
     * must not read the empty plane), recorded and not */
    x = clt_tensor_zeros(CLT_SHAPE(1, 1, 0, 5), CLT_F32, dev);
    w = clt_tensor_ones(CLT_SHAPE(1, 1, 1, 1), CLT_F32, dev);
    clt_conv2d_options pad = clt_conv2d_options_default();
    pad.padding[0] = pad.padding[1] = 1;
    test_assert_values(clt_conv2d(x, w, NULL, &pad), zeros, 14, 0, "conv2d of an image of no rows");
    clt_tensor_set_requires_grad(w, true);
    test_assert_values(clt_conv2d(x, w, NULL, &pad), zeros, 14, 0, "conv2d of an image of no rows, recorded");
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
        double *xv = test_noise_new(n * c * h * wd, 11), *wv = test_noise_new(o * c * 9, 12), *bv = test_noise_new(o, 13);
        double *want = malloc((size_t)(n * o * oh * ow) * sizeof *want);
        conv_ref(xv, wv, bv, n, c, h, wd, o, 3, 3, &p, want, oh, ow);
        clt_tensor *x = test_tensor(dev, dt, xv, CLT_SHAPE(n, c, h, wd));
        clt_tensor *w = test_tensor(dev, dt, wv, CLT_SHAPE(o, c, 3, 3));
        clt_tensor *b = test_tensor(dev, dt, bv, CLT_SHAPE(o));
        char what[96];
        snprintf(what, sizeof what, "Winograd conv2d, case %zu, %s, blocks of %zu tile rows",
                 k / 4, clt_dtype_name(dt), clt__winograd_rows);
        /* f32: sums of up to 153 products of up to 4 through the transforms */
        test_assert_values(clt_conv2d(x, w, b, &p), want, n * o * oh * ow, dt == CLT_F64 ? 1e-12 : 1e-4,
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
        double *xv = test_noise_new(n * c * h * wd, 1), *wv = test_noise_new(o * (c / g) * kh * kw, 2), *bv = test_noise_new(o, 3);
        double *want = malloc((size_t)(n * o * oh * ow) * sizeof *want);
        conv_ref(xv, wv, bv, n, c, h, wd, o, kh, kw, p, want, oh, ow);
        clt_tensor *x = test_tensor(dev, CLT_F32, xv, CLT_SHAPE(n, c, h, wd));
        clt_tensor *w = test_tensor(dev, CLT_F32, wv, CLT_SHAPE(o, c / g, kh, kw));
        clt_tensor *b = test_tensor(dev, CLT_F32, bv, CLT_SHAPE(o));
        clt_tensor *y = clt_conv2d(x, w, b, p);
        ck_assert_msg(y != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt_tensor_size(y, 2), oh);
        ck_assert_int_eq(clt_tensor_size(y, 3), ow);
        test_assert_values(clt_tensor_retain(y), want, n * o * oh * ow, 2e-5, "conv2d");
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
        double *xv = test_noise_new(n * c * h * wd, 4), *wv = test_noise_new(c * m * dkh * dkw, 5);
        double *bv = test_noise_new(c * m, 6),
               *want = malloc((size_t)(n * c * m * oh * ow) * sizeof *want);
        conv_ref(xv, wv, bv, n, c, h, wd, c * m, dkh, dkw, p, want, oh, ow);
        clt_tensor *x = test_tensor(dev, dt, xv, CLT_SHAPE(n, c, h, wd));
        clt_tensor *w = test_tensor(dev, dt, wv, CLT_SHAPE(c * m, 1, dkh, dkw));
        clt_tensor *b = test_tensor(dev, dt, bv, CLT_SHAPE(c * m));
        clt_tensor *y = clt_conv2d(x, w, b, p);
        ck_assert_msg(y != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt_tensor_size(y, 1), c * m);
        ck_assert_int_eq(clt_tensor_size(y, 2), oh);
        ck_assert_int_eq(clt_tensor_size(y, 3), ow);
        test_assert_values(clt_tensor_retain(y), want, n * c * m * oh * ow, dt == CLT_F64 ? 1e-12 : 2e-5,
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
        double *xv = test_noise_new(n * wc * wh * ww, 7), *wv = test_noise_new(wc * m * ks * ks, 8);
        double *want = malloc((size_t)(n * wc * m * oh * ow) * sizeof *want);
        conv_ref(xv, wv, NULL, n, wc, wh, ww, wc * m, ks, ks, p, want, oh, ow);
        clt_tensor *x = test_tensor(dev, dt, xv, CLT_SHAPE(n, wc, wh, ww));
        clt_tensor *w = test_tensor(dev, dt, wv, CLT_SHAPE(wc * m, 1, ks, ks));
        test_assert_values(clt_conv2d(x, w, NULL, p), want, n * wc * m * oh * ow,
              dt == CLT_F64 ? 1e-12 : 2e-5, "wide depthwise conv2d");
        clt_tensor_release(w), clt_tensor_release(x);
        free(want), free(wv), free(xv);
    }
    { /* a 1x1 kernel at stride 1 without padding: the input is its own columns */
        const clt_conv2d_options p = {{1, 1}, {0, 0}, {1, 1}, 1};
        double *xv = test_noise_new(n * c * h * wd, 7), *wv = test_noise_new(o * c, 8), *bv = test_noise_new(o, 9);
        double *want = malloc((size_t)(n * o * h * wd) * sizeof *want);
        conv_ref(xv, wv, bv, n, c, h, wd, o, 1, 1, &p, want, h, wd);
        clt_tensor *x = test_tensor(dev, CLT_F32, xv, CLT_SHAPE(n, c, h, wd));
        clt_tensor *w = test_tensor(dev, CLT_F32, wv, CLT_SHAPE(o, c, 1, 1));
        clt_tensor *b = test_tensor(dev, CLT_F32, bv, CLT_SHAPE(o));
        test_assert_values(clt_conv2d(x, w, b, &p), want, n * o * h * wd, 2e-5, "pointwise conv2d");
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
    double *xv = test_noise_new(N * C * H * W, 41), *wv = test_noise_new(C * OG * KH * KW, 42),
           *bv = test_noise_new(G * OG, 43);
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
    clt_tensor *x = test_tensor(dev, CLT_F32, xv, CLT_SHAPE(N, C, H, W)),
               *wt = test_tensor(dev, CLT_F32, wv, CLT_SHAPE(C, OG, KH, KW));
    clt_tensor *b = test_tensor(dev, CLT_F32, bv, CLT_SHAPE(G * OG));
    clt_conv_transpose2d_options o = clt_conv_transpose2d_options_default();
    o.stride[0] = s[0], o.stride[1] = s[1], o.padding[0] = p[0], o.padding[1] = p[1];
    o.output_padding[0] = op[0], o.output_padding[1] = op[1], o.dilation[0] = d[0],
    o.dilation[1] = d[1];
    o.groups = G;
    clt_tensor *y = clt_conv_transpose2d(x, wt, b, &o);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    ck_assert(clt_tensor_size(y, 1) == G * OG && clt_tensor_size(y, 2) == OH &&
              clt_tensor_size(y, 3) == OW);
    test_assert_values(y, want, N * G * OG * OH * OW, 1e-5, "conv_transpose2d");
    clt_tensor *x0 = clt_narrow(x, 0, 0, 1), *u = clt_squeeze(x0, 0);
    test_assert_values(clt_conv_transpose2d(u, wt, b, &o), want, G * OG * OH * OW, 1e-5, "unbatched");
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
    for (int t = 0; t < TEST_ADJOINT_DTYPES; t++)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            if (!test_has_dtype(dev, test_adjoint_dtypes[t].dtype))
                continue;
            const int n = 2, ch = 3, h = cases[k].h, w = cases[k].w, kh = cases[k].kh, kw = cases[k].kw;
            clt_tensor *x = clt_tensor_zeros(CLT_SHAPE(n, ch, h, w), test_adjoint_dtypes[t].dtype, dev);
            clt__conv_call g;
            ck_assert_int_eq(clt__conv2d_geometry("test_col2im", x, kh, kw, &cases[k].o, &g), CLT_OK);
            int oh = (int)g.OH, ow = (int)g.OW, rows = ch * kh * kw, cols = oh * ow;
            double *cv, *want = calloc((size_t)(n * ch * h * w), sizeof *want);
            clt_tensor *ct = test_noisy(dev, test_adjoint_dtypes[t].dtype, (unsigned)k + 20, &cv, CLT_SHAPE(rows, n, cols));
            for (int b = 0; b < n; b++) /* scatter: every column entry to where im2col read it */
                for (int r = 0; r < rows; r++)
                    for (int col = 0; col < cols; col++) {
                        int c = r / (kh * kw), y = r / kw % kh, xx = r % kw;
                        int iy = col / ow * g.sh - g.ph + y * g.dh, ix = col % ow * g.sw - g.pw + xx * g.dw;
                        if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                            want[((b * ch + c) * h + iy) * w + ix] += cv[(r * n + b) * cols + col];
                    }
            char what[64];
            snprintf(what, sizeof what, "col2im %s case %zu", clt_dtype_name(test_adjoint_dtypes[t].dtype), k);
            clt_tensor *img = clt__col2im("test_col2im", ct, &g);
            ck_assert_msg(img && clt_tensor_ndim(img) == 4 && clt_tensor_size(img, 2) == h, "%s: %s", what, clt_last_error());
            test_assert_values(img, want, n * ch * h * w, test_adjoint_dtypes[t].tol, what);
            clt_tensor_release(ct), clt_tensor_release(x);
            free(want), free(cv);
        }
}
END_TEST

/* Window geometry near the int and int64 limits: errors, not overflows (UBSan) or geometry
 * from truncated sizes. */
START_TEST(test_window_limits)
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
    test_assert_values(clt_tensor_retain(p), (double[]){1, 1, 1, 1}, 4, 0, "7x7 max pool padded by 3");
    clt_tensor *all[] = {p, x1, wide, tall, w, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

Suite *suite_conv(void)
{
    Suite *s = suite_create("conv");
    TCase *tc = test_case("conv", 600);
    ADD_DEVICE_TEST(tc, test_window_limits);
    ADD_DEVICE_TEST(tc, test_conv2d);
    ADD_DEVICE_TEST(tc, test_conv2d_bands);
    ADD_DEVICE_TEST(tc, test_conv2d_winograd);
    ADD_DEVICE_TEST(tc, test_conv_transpose2d);
    ADD_DEVICE_TEST(tc, test_col2im);
    suite_add_tcase(s, tc);
    return s;
}
