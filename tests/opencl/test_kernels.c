/* Kernels suite: every kernel once on gpu:0 with small inputs (contiguous, strided and
 * broadcast operands, every dtype), compared with cpu. ctest runs it under Oclgrind (label
 * "oclgrind"), whose device becomes gpu:0 there and reports out-of-bounds accesses, OpenCL API
 * errors and data races. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "opencl_helpers.h"
#include "backends/opencl/cl_launch.h"
#include "ops/ops_internal.h"

static const clt_dtype dtypes[] = {CLT_F32, CLT_F64, CLT_F16, CLT_BF16,
                                   CLT_I32, CLT_I64, CLT_U8,  CLT_BOOL};

static clt_device *gpu0(void)
{
    clt_device *dev = clt_device_count() > 0 ? clt_device_get("gpu:0") : NULL;
    ck_assert_msg(dev != NULL, "these tests need an OpenCL device");
    return dev;
}

/* Same bytes on the device and the host. */
static void assert_same(clt_tensor *got, clt_tensor *want, const char *what)
{
    ck_assert_msg(got && want, "%s: %s", what, clt_last_error());
    int64_t n = clt_tensor_numel(want);
    size_t size = clt_dtype_size(clt_tensor_dtype(want));
    ck_assert_int_eq(clt_tensor_numel(got), n);
    void *g = test_bytes(got), *w = test_bytes(want);
    ck_assert_msg(memcmp(g, w, (size_t)n * size) == 0, "%s differs from the host", what);
    free(g);
    free(w);
}

/* Casts, fills, copies of views and random numbers: exact on every device. */
START_TEST(test_kernels_exact)
{
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    for (int s = 0; s < 8; s++) {
        clt_tensor *h = clt_tensor_arange(-3, 4, 1, dtypes[s] == CLT_U8 || dtypes[s] == CLT_BOOL ? CLT_I32 : dtypes[s], cpu);
        clt_tensor *hs = clt_tensor_to_dtype(h, dtypes[s]);
        clt_tensor *g = clt_tensor_to(hs, dev);
        for (int d = 0; d < 8; d++) {
            clt_tensor *a = clt_tensor_to_dtype(g, dtypes[d]), *b = clt_tensor_to_dtype(hs, dtypes[d]);
            assert_same(a, b, "cast");
            clt_tensor_release(a), clt_tensor_release(b);
        }
        clt_tensor *f = clt_tensor_full(CLT_SHAPE(3), 2, dtypes[s], dev);
        clt_tensor *fh = clt_tensor_full(CLT_SHAPE(3), 2, dtypes[s], cpu);
        assert_same(f, fh, "fill");
        clt_tensor *gv = clt_slice(g, 0, 1, 7, 2), *hv = clt_slice(hs, 0, 1, 7, 2);
        clt_tensor *gc = clt_contiguous(gv), *hc = clt_contiguous(hv);
        assert_same(gc, hc, "strided copy");
        /* runs joined in one launch (ew_copy_runs): nine parts, offsets and an empty one */
        clt_tensor *gp[9], *hp[9];
        for (int k = 0; k < 9; k++) {
            gp[k] = clt_narrow(g, 0, k % 3, k % 5);
            hp[k] = clt_narrow(hs, 0, k % 3, k % 5);
        }
        clt_tensor *gj = clt_cat(gp, 9, 0), *hj = clt_cat(hp, 9, 0);
        assert_same(gj, hj, "cat of runs");
        for (int k = 0; k < 9; k++)
            clt_tensor_release(gp[k]), clt_tensor_release(hp[k]);
        clt_tensor *all[] = {hj, gj, hc, gc, hv, gv, fh, f, g, hs, h};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            clt_tensor_release(all[k]);
    }
    for (int s = 0; s < 4; s++) {
        clt_manual_seed(7);
        clt_tensor *a = clt_tensor_randn(CLT_SHAPE(9), dtypes[s], dev);
        clt_manual_seed(7);
        clt_tensor *b = clt_tensor_randn(CLT_SHAPE(9), dtypes[s], cpu);
        char what[64];
        snprintf(what, sizeof what, "randn %s", clt_dtype_name(dtypes[s]));
        assert_same(a, b, what);
        clt_tensor_release(a), clt_tensor_release(b);
    }
}
END_TEST

typedef clt_tensor *(*binary_fn)(clt_tensor *, clt_tensor *);
typedef clt_tensor *(*unary_fn)(clt_tensor *);

/* Every elementwise kernel on contiguous, strided and broadcast operands of every dtype. The
 * values are small integers, on which every backend agrees exactly. */
static void elementwise_cases(void)
{
    static const binary_fn binaries[] = {clt_add, clt_mul, clt_maximum, clt_minimum, clt_eq,
                                         clt_ne,  clt_lt,  clt_le,      clt_gt,      clt_ge};
    static const binary_fn no_bool[] = {clt_sub, clt_pow, clt_div};
    static const unary_fn unaries[] = {clt_relu, clt_abs, clt_neg};
    static const unary_fn floats[] = {clt_exp, clt_log, clt_sqrt, clt_rsqrt, clt_sin, clt_cos,
                                      clt_tanh, clt_sigmoid, clt_gelu, clt_gelu_tanh, clt_silu};
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    for (int s = 0; s < 8; s++) {
        clt_tensor *h0 = clt_tensor_arange(1, 7, 1, CLT_I32, cpu);
        clt_tensor *h1 = clt_tensor_to_dtype(h0, dtypes[s]);
        clt_tensor *ha = clt_view(h1, CLT_SHAPE(2, 3)), *hb = clt_slice(h1, 0, 0, 6, 2); /* (3,) strided */
        clt_tensor *ga = clt_tensor_to(ha, dev), *g1 = clt_tensor_to(h1, dev);
        clt_tensor *gb = clt_slice(g1, 0, 0, 6, 2), *gt = clt_transpose(ga, 0, 1);
        clt_tensor *ht = clt_transpose(ha, 0, 1);
        for (size_t k = 0; k < sizeof binaries / sizeof *binaries; k++) {
            clt_tensor *x = binaries[k](ga, gb), *y = binaries[k](ha, hb);
            assert_same(x, y, "binary");
            clt_tensor_release(x), clt_tensor_release(y);
        }
        for (size_t k = 0; dtypes[s] != CLT_BOOL && k < sizeof no_bool / sizeof *no_bool; k++) {
            clt_tensor *x = no_bool[k](ga, gb), *y = no_bool[k](ha, hb);
            ck_assert_ptr_nonnull(x);
            clt_tensor_release(x), clt_tensor_release(y);
        }
        for (size_t k = 0; dtypes[s] != CLT_BOOL && k < sizeof unaries / sizeof *unaries; k++) {
            clt_tensor *x = unaries[k](gt), *y = unaries[k](ht);
            char what[64];
            snprintf(what, sizeof what, "unary %zu on %s", k, clt_dtype_name(dtypes[s]));
            assert_same(x, y, what);
            clt_tensor_release(x), clt_tensor_release(y);
        }
        for (size_t k = 0; k < sizeof floats / sizeof *floats; k++) {
            clt_tensor *x = floats[k](gt);
            ck_assert_msg(x != NULL, "%s", clt_last_error());
            clt_tensor_release(x);
        }
        if (dtypes[s] != CLT_BOOL) {
            clt_tensor *x = clt_addcmul(gb, ga, ga, 3), *y = clt_addcmul(hb, ha, ha, 3);
            assert_same(x, y, "addcmul");
            clt_tensor_release(x), clt_tensor_release(y);
        }
        clt_tensor *cond = clt_gt(ga, gb), *w = clt_where(cond, ga, gb);
        clt_tensor *c = clt_clamp(gt, 2, 4), *sc = clt_add_scalar(ga, 1), *p = clt_pow_scalar(ga, 2);
        ck_assert_ptr_nonnull(w);
        ck_assert(c || dtypes[s] == CLT_BOOL);
        ck_assert_ptr_nonnull(sc);
        ck_assert(p || dtypes[s] == CLT_BOOL);
        clt_tensor *all[] = {p, sc, c, w, cond, ht, gt, gb, g1, ga, hb, ha, h1, h0};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            clt_tensor_release(all[k]);
    }
}

/* The elementwise cases in both layouts of the strided kernels (each work-item stepping through
 * a run of elements, or one element at a time), and a strided, broadcast operation over more
 * elements than one run, so that runs start and end inside rows. */
START_TEST(test_kernels_elementwise)
{
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    clt_manual_seed(9);
    clt_tensor *h = clt_tensor_randn(CLT_SHAPE(29, 37), CLT_F32, cpu);
    clt_tensor *r = clt_tensor_randn(CLT_SHAPE(29), CLT_F32, cpu);
    clt_tensor *g = clt_tensor_to(h, dev), *gr = clt_tensor_to(r, dev);
    clt_tensor *ht = clt_transpose(h, 0, 1), *gt = clt_transpose(g, 0, 1); /* (37, 29) */
    clt_tensor *hs = clt_slice(h, 1, 1, 37, 2); /* (29, 18), columns 2 apart */
    clt_tensor *want = clt_sub(ht, r), *copy_want = clt_contiguous(hs);
    for (int blocked = 0; blocked < 2; blocked++) {
        clt__cl_run_blocked = blocked;
        elementwise_cases();
        clt_tensor *got = clt_sub(gt, gr), *part = clt_slice(g, 1, 1, 37, 2);
        clt_tensor *copy = clt_contiguous(part);
        assert_same(got, want, "strided and broadcast sub");
        assert_same(copy, copy_want, "strided copy");
        clt_tensor_release(copy), clt_tensor_release(part), clt_tensor_release(got);
    }
    clt__cl_run_blocked = -1;
    clt_tensor *all[] = {copy_want, want, hs, gt, ht, gr, g, r, h};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

/* Reductions, gathers, im2col and pooling: small inputs, a transposed operand, compared with cpu
 * within a float tolerance (the reductions may add in another order). */
static void assert_near(clt_tensor *got, clt_tensor *want, const char *what)
{
    test_assert_close(got, want, 1e-5, what);
}

START_TEST(test_kernels_reduce_nn)
{
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    clt_manual_seed(3);
    clt_tensor *h = clt_tensor_randn(CLT_SHAPE(2, 3, 5, 4), CLT_F32, cpu), *g = clt_tensor_to(h, dev);
    clt_tensor *ht = clt_transpose(h, 1, 3), *gt = clt_transpose(g, 1, 3);
    int dims[] = {1, 3};
    typedef clt_tensor *(*red)(clt_tensor *, const int *, int, bool);
    static const red reds[] = {clt_sum, clt_mean, clt_amax, clt_amin, clt_logsumexp};
    for (size_t k = 0; k < sizeof reds / sizeof *reds; k++) {
        clt_tensor *a = reds[k](gt, dims, 2, false), *b = reds[k](ht, dims, 2, false);
        assert_near(a, b, "reduction");
        clt_tensor_release(a), clt_tensor_release(b);
    }
    clt_tensor *a = clt_var(gt, dims, 2, 1, true), *b = clt_var(ht, dims, 2, 1, true);
    assert_near(a, b, "var");
    clt_tensor_release(a), clt_tensor_release(b);
    a = clt_argmax(gt, 2, false), b = clt_argmax(ht, 2, false);
    assert_same(a, b, "argmax");
    clt_tensor_release(a), clt_tensor_release(b);
    a = clt_argmin_all(g), b = clt_argmin_all(h);
    assert_same(a, b, "argmin_all");
    clt_tensor_release(a), clt_tensor_release(b);

    const clt_pool2d_options po = {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}, .dilation = {1, 2}};
    clt_tensor *gi = NULL, *hi = NULL;
    a = clt_max_pool2d(g, &po, &gi), b = clt_max_pool2d(h, &po, &hi);
    assert_same(a, b, "max pool");
    assert_same(gi, hi, "max pool indices");
    clt_tensor_release(a), clt_tensor_release(b), clt_tensor_release(gi), clt_tensor_release(hi);
    a = clt_avg_pool2d(g, &(clt_pool2d_options){.kernel = {2, 2}, .padding = {1, 1}});
    b = clt_avg_pool2d(h, &(clt_pool2d_options){.kernel = {2, 2}, .padding = {1, 1}});
    assert_near(a, b, "avg pool");
    clt_tensor_release(a), clt_tensor_release(b);
    int64_t iv[] = {2, 0, 2};
    clt_tensor *gx = clt_tensor_from_data(CLT_SHAPE(3), iv, CLT_I64, dev);
    clt_tensor *hx = clt_tensor_from_data(CLT_SHAPE(3), iv, CLT_I64, cpu);
    a = clt_index_select(gt, 1, gx), b = clt_index_select(ht, 1, hx);
    assert_same(a, b, "index_select");
    clt_tensor_release(a), clt_tensor_release(b), clt_tensor_release(gx), clt_tensor_release(hx);
    /* attention with a padding mask and causal, value rows wider than one chunk of 32 */
    clt_tensor *hq = clt_tensor_randn(CLT_SHAPE(2, 3, 5), CLT_F32, cpu), *gq = clt_tensor_to(hq, dev);
    clt_tensor *hv = clt_tensor_randn(CLT_SHAPE(2, 6, 35), CLT_F32, cpu), *gv = clt_tensor_to(hv, dev);
    clt_tensor *hk = clt_tensor_randn(CLT_SHAPE(2, 6, 5), CLT_F32, cpu), *gk = clt_tensor_to(hk, dev);
    uint8_t keep[] = {1, 0, 1, 1, 0, 1};
    clt_tensor *hm = clt_tensor_from_data(CLT_SHAPE(6), keep, CLT_BOOL, cpu), *gm = clt_tensor_to(hm, dev);
    clt_attention_options ho = clt_attention_options_default(), go = ho;
    ho.mask = hm, go.mask = gm;
    a = clt_scaled_dot_product_attention(gq, gk, gv, &go);
    b = clt_scaled_dot_product_attention(hq, hk, hv, &ho);
    assert_near(a, b, "attention (mask)");
    clt_tensor_release(a), clt_tensor_release(b);
    ho.mask = go.mask = NULL, ho.causal = go.causal = true;
    a = clt_scaled_dot_product_attention(gq, gk, gv, &go);
    b = clt_scaled_dot_product_attention(hq, hk, hv, &ho);
    assert_near(a, b, "attention (causal)");
    clt_tensor *att[] = {a, b, hq, gq, hv, gv, hk, gk, hm, gm};
    for (size_t k = 0; k < sizeof att / sizeof *att; k++)
        clt_tensor_release(att[k]);
    clt_tensor_release(gt), clt_tensor_release(ht), clt_tensor_release(g), clt_tensor_release(h);
}
END_TEST

/* The window kernels (depthwise convolution, pooling) in both layouts on rows of 37, so that
 * work-items' runs start and end inside rows: 3 x 3 windows plain, strided and dilated (the
 * blocked layout's loop over a row's inside columns and its edges), and a 3 x 2 window with a
 * channel multiplier of 2, strided, padded and dilated; pooling with positions in int and in
 * long, max and average (counting the padding or not, in ceil mode). */
START_TEST(test_kernels_windows)
{
    static const struct {
        int64_t kh, kw, mult;
        clt_conv2d_options o;
    } convs[] = {
        {3, 3, 1, {.stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 4}},
        {3, 3, 1, {.stride = {2, 2}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 4}},
        {3, 3, 1, {.stride = {1, 1}, .padding = {2, 2}, .dilation = {2, 2}, .groups = 4}},
        {3, 3, 1, {.stride = {1, 1}, .padding = {0, 0}, .dilation = {1, 1}, .groups = 4}},
        {3, 2, 2, {.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}, .groups = 4}},
    };
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    clt_manual_seed(4);
    clt_tensor *h = clt_tensor_randn(CLT_SHAPE(2, 4, 6, 37), CLT_F32, cpu),
               *g = clt_tensor_to(h, dev);
    for (int blocked = 0; blocked < 2; blocked++) {
        clt__cl_run_blocked = blocked;
        for (size_t k = 0; k < sizeof convs / sizeof *convs; k++) {
            char what[64];
            snprintf(what, sizeof what, "depthwise conv2d %zu, blocked %d", k, blocked);
            clt_tensor *hw =
                clt_tensor_randn(CLT_SHAPE(4 * convs[k].mult, 1, convs[k].kh, convs[k].kw),
                                 CLT_F32, cpu);
            clt_tensor *gw = clt_tensor_to(hw, dev);
            clt_tensor *a = clt_conv2d(g, gw, NULL, &convs[k].o),
                       *b = clt_conv2d(h, hw, NULL, &convs[k].o);
            assert_near(a, b, what);
            clt_tensor_release(a), clt_tensor_release(b), clt_tensor_release(gw),
                clt_tensor_release(hw);
        }
        const clt_pool2d_options po = {.kernel = {3, 2},
                                       .stride = {2, 1},
                                       .padding = {1, 1},
                                       .dilation = {1, 2}};
        for (int wide = 0; wide < 2; wide++) { /* positions in int, then in long */
            clt__cl_window_wide = wide;
            clt_tensor *gi = NULL, *hi = NULL;
            clt_tensor *a = clt_max_pool2d(g, &po, &gi), *b = clt_max_pool2d(h, &po, &hi);
            assert_same(a, b, "max pool");
            assert_same(gi, hi, "max pool indices");
            clt_tensor_release(a), clt_tensor_release(b), clt_tensor_release(gi),
                clt_tensor_release(hi);
            /* 2 x 2 windows, those inside the image four taps in a row */
            const clt_pool2d_options p2 = {.kernel = {2, 2}, .stride = {1, 2}, .padding = {1, 0},
                                           .dilation = {2, 3}};
            a = clt_max_pool2d(g, &p2, &gi), b = clt_max_pool2d(h, &p2, &hi);
            assert_same(a, b, "2 x 2 max pool");
            assert_same(gi, hi, "2 x 2 max pool indices");
            clt_tensor_release(a), clt_tensor_release(b), clt_tensor_release(gi),
                clt_tensor_release(hi);
            /* the usual 2 x 2 pooling of stride 2 (the blocked layout's loop with its taps as
             * constants), with and without the indices, max and average */
            const clt_pool2d_options p22 = {.kernel = {2, 2}};
            a = clt_max_pool2d(g, &p22, &gi), b = clt_max_pool2d(h, &p22, &hi);
            assert_same(a, b, "2 x 2 stride 2 max pool");
            assert_same(gi, hi, "2 x 2 stride 2 max pool indices");
            clt_tensor_release(a), clt_tensor_release(gi), clt_tensor_release(hi);
            a = clt_max_pool2d(g, &p22, NULL);
            assert_same(a, b, "2 x 2 stride 2 max pool without indices");
            clt_tensor_release(a), clt_tensor_release(b);
            a = clt_avg_pool2d(g, &p22), b = clt_avg_pool2d(h, &p22);
            assert_near(a, b, "2 x 2 stride 2 avg pool");
            clt_tensor_release(a), clt_tensor_release(b);
            for (int exclude = 0; exclude < 2; exclude++) {
                clt_pool2d_options ao = po;
                ao.exclude_padding = exclude, ao.ceil_mode = true;
                ao.dilation[0] = ao.dilation[1] = 1; /* average pooling has none */
                a = clt_avg_pool2d(g, &ao), b = clt_avg_pool2d(h, &ao);
                assert_near(a, b, exclude ? "avg pool without padding" : "avg pool");
                clt_tensor_release(a), clt_tensor_release(b);
            }
        }
        clt__cl_window_wide = -1;
    }
    clt__cl_run_blocked = -1;
    clt_tensor_release(g), clt_tensor_release(h);
}
END_TEST

/* The row kernels (cumsum, sort both ways) in every dtype, on rows of 13 with ties, and pooling
 * in ceil mode: bit for bit against cpu, which runs the same algorithms. */
START_TEST(test_kernels_rows)
{
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    clt_manual_seed(5);
    clt_tensor *r = clt_tensor_randn(CLT_SHAPE(3, 13), CLT_F32, cpu), *r4 = clt_mul_scalar(r, 4);
    for (size_t k = 0; k < sizeof dtypes / sizeof *dtypes; k++) {
        if (!test_has_dtype(dev, dtypes[k]))
            continue;
        clt_tensor *h = clt_tensor_to_dtype(r4, dtypes[k]), *g = clt_tensor_to(h, dev);
        for (int desc = 0; desc < 2; desc++) {
            clt_tensor *gi = NULL, *hi = NULL;
            clt_tensor *a = clt_sort(g, 1, desc, &gi), *b = clt_sort(h, 1, desc, &hi);
            assert_same(a, b, clt_dtype_name(dtypes[k]));
            assert_same(gi, hi, "sort indices");
            clt_tensor_release(a), clt_tensor_release(b), clt_tensor_release(gi),
                clt_tensor_release(hi);
        }
        clt_tensor *a = clt_cumsum(g, 1), *b = clt_cumsum(h, 1);
        assert_same(a, b, "cumsum");
        clt_tensor_release(a), clt_tensor_release(b), clt_tensor_release(g),
            clt_tensor_release(h);
    }
    clt_tensor *h = clt_tensor_randn(CLT_SHAPE(1, 2, 6, 5), CLT_F32, cpu),
               *g = clt_tensor_to(h, dev);
    clt_pool2d_options po = {.kernel = {3, 2},
                             .stride = {2, 2},
                             .padding = {1, 0},
                             .ceil_mode = true};
    clt_tensor *a = clt_avg_pool2d(g, &po), *b = clt_avg_pool2d(h, &po);
    assert_near(a, b, "avg pool in ceil mode");
    clt_tensor_release(a), clt_tensor_release(b), clt_tensor_release(g), clt_tensor_release(h);
    clt_tensor_release(r), clt_tensor_release(r4);
}
END_TEST

/* The reductions in both layouts (blocked: vectors of 16, blocks of 256) on rows around their
 * edges, a NaN in the third block and -0 before 0: exact ones bit for bit against cpu, sums
 * within rounding. */
START_TEST(test_kernels_reduce_layouts)
{
    static const int64_t lens[] = {33, 271, 600};
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    for (int blocked = 0; blocked < 2; blocked++) {
        clt__cl_run_blocked = blocked;
        for (int l = 0; l < 3; l++) {
            clt_manual_seed(5);
            clt_tensor *h = clt_tensor_randn(CLT_SHAPE(2, lens[l]), CLT_F32, cpu);
            float *p = clt_tensor_data(h);
            p[lens[l] + 520 % lens[l]] = NAN, p[7] = -0.0f, p[8] = 0.0f;
            clt_tensor *g = clt_tensor_to(h, dev);
            typedef clt_tensor *(*red)(clt_tensor *, int, bool);
            static const red args[] = {clt_argmax, clt_argmin};
            for (int k = 0; k < 2; k++) {
                clt_tensor *a = args[k](g, 1, false), *b = args[k](h, 1, false);
                assert_same(a, b, "argmax/argmin");
                clt_tensor_release(a), clt_tensor_release(b);
            }
            int dim = 1;
            clt_tensor *a = clt_amax(g, &dim, 1, false), *b = clt_amax(h, &dim, 1, false);
            assert_same(a, b, "max");
            clt_tensor_release(a), clt_tensor_release(b);
            clt_tensor *g0 = clt_narrow(g, 0, 0, 1), *h0 = clt_narrow(h, 0, 0, 1); /* no NaN */
            a = clt_sum(g0, &dim, 1, false), b = clt_sum(h0, &dim, 1, false);
            assert_near(a, b, "sum");
            clt_tensor_release(a), clt_tensor_release(b);
            a = clt_var(g0, &dim, 1, 1, false), b = clt_var(h0, &dim, 1, 1, false);
            assert_near(a, b, "var");
            clt_tensor_release(a), clt_tensor_release(b);
            clt_tensor_release(g0), clt_tensor_release(h0);
            clt_tensor_release(g), clt_tensor_release(h);
        }
    }
    clt__cl_run_blocked = -1;
}
END_TEST

/* im2col and col2im in both layouts (col2im with positions in int and in long) against the
 * host, bit for bit: convolutions of stride 1 whose output rows are as wide as the input's, which
 * the blocked layout runs a plane at a time (3 x 3 padded by 1; dilated by 2 and padded by 2; 2 x
 * 3 with one more output row than input rows; 5 x 1), over 71 x 3 planes so that work-items take
 * several planes across images and taps and start inside them; then strided, unpadded and
 * 17 x 16 planes, which it runs element by element. */
START_TEST(test_kernels_columns)
{
    static const char *const fn = "test_kernels_columns";
    static const struct {
        int kh, kw;
        clt_conv2d_options o;
        int64_t h, w;
    } convs[] = {
        {3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, 5, 4}, {3, 3, {{1, 1}, {2, 2}, {2, 2}, 1}, 5, 4},
        {2, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, 5, 4}, {5, 1, {{1, 1}, {2, 0}, {1, 1}, 1}, 5, 4},
        {3, 3, {{2, 2}, {1, 1}, {1, 1}, 1}, 5, 4}, {3, 3, {{1, 1}, {0, 0}, {1, 1}, 1}, 5, 4},
        {3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, 17, 16},
    };
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    clt_manual_seed(9);
    for (size_t k = 0; k < sizeof convs / sizeof *convs; k++) {
        int64_t n = convs[k].h > 5 ? 2 : 71; /* col2im of 71 x 3 planes: two work-items */
        clt_tensor *h = clt_tensor_randn(CLT_SHAPE(n, 3, convs[k].h, convs[k].w), CLT_F32, cpu);
        clt_tensor *g = clt_tensor_to(h, dev);
        clt__conv_call c;
        ck_assert_int_eq(clt__conv2d_geometry(fn, h, convs[k].kh, convs[k].kw, &convs[k].o, &c),
                         CLT_OK);
        clt_tensor *hc = clt__im2col(fn, h, &c);
        clt_tensor *hd = clt__col2im(fn, hc, &c);
        for (int blocked = 0; blocked < 2; blocked++) {
            char what[64];
            clt__cl_run_blocked = blocked;
            clt_tensor *gc = clt__im2col(fn, g, &c);
            snprintf(what, sizeof what, "im2col %zu, blocked %d", k, blocked);
            assert_same(gc, hc, what);
            for (int wide = 0; wide < 2; wide++) {
                clt__cl_window_wide = wide;
                clt_tensor *gd = clt__col2im(fn, gc, &c);
                snprintf(what, sizeof what, "col2im %zu, blocked %d, wide %d", k, blocked, wide);
                assert_same(gd, hd, what);
                clt_tensor_release(gd);
            }
            clt_tensor_release(gc);
        }
        clt__cl_run_blocked = clt__cl_window_wide = -1;
        clt_tensor_release(hd), clt_tensor_release(hc), clt_tensor_release(g),
            clt_tensor_release(h);
    }
}
END_TEST

/* The adjoints of the backward passes: col2im, pool2d_backward (max and average) and index_add,
 * each a gather in the host's order (or, for max pooling whose windows do not overlap, a scatter
 * of what the gather would add), so the sums agree bit for bit but for the division. */
START_TEST(test_kernels_adjoints)
{
    static const char *const fn = "test_kernels_adjoints";
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    clt_manual_seed(5);
    clt_tensor *h = clt_tensor_randn(CLT_SHAPE(2, 3, 5, 4), CLT_F32, cpu), *g = clt_tensor_to(h, dev);
    clt__conv_call c;
    clt_tensor *a, *b;
    /* col2im strided, padded and dilated, and with stride 1; in both layouts, positions in int
     * and in long */
    const clt_conv2d_options convs[2] = {{{2, 1}, {1, 2}, {2, 1}, 1},
                                         {{1, 1}, {1, 1}, {1, 1}, 1}};
    for (int k = 0; k < 4 * 2; k++) {
        char what[64];
        clt__cl_run_blocked = k / 2 % 2, clt__cl_window_wide = k / 4;
        snprintf(what, sizeof what, "col2im %d, blocked %d, wide %d", k % 2, k / 2 % 2, k / 4);
        ck_assert_int_eq(clt__conv2d_geometry(fn, h, 2, 3, &convs[k % 2], &c), CLT_OK);
        int64_t rows = 3 * 2 * 3, cols = (int64_t)(c.OH * c.OW);
        clt_tensor *hc = clt_tensor_randn(CLT_SHAPE(rows, 2, cols), CLT_F32, cpu),
                   *gc = clt_tensor_to(hc, dev);
        a = clt__col2im(fn, gc, &c), b = clt__col2im(fn, hc, &c);
        assert_same(a, b, what);
        clt_tensor_release(a), clt_tensor_release(b), clt_tensor_release(gc),
            clt_tensor_release(hc);
    }
    clt__cl_run_blocked = clt__cl_window_wide = -1;

    /* average; max over overlapping windows; max over windows apart, with rows no window holds
     * (stride 3 over 2 taps, and over 2 taps dilated by 2); max over windows that tile the 5 x 4
     * planes (1 x 2 and 5 x 2), and over 2 x 2 windows that leave the fifth row out */
    const clt_pool2d_options pools[] = {
        {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}, .exclude_padding = true},
        {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}, .dilation = {1, 2}},
        {.kernel = {2, 2}, .stride = {3, 2}, .padding = {1, 0}},
        {.kernel = {2, 1}, .stride = {3, 2}, .dilation = {2, 1}},
        {.kernel = {1, 2}},
        {.kernel = {5, 2}},
        {.kernel = {2, 2}},
    };
    for (int p = 0; p < (int)(sizeof pools / sizeof *pools); p++) {
        clt_tensor *hi = NULL, *gi = NULL;
        int is_max = p > 0;
        clt_tensor *hy = is_max ? clt_max_pool2d(h, &pools[p], &hi) : clt_avg_pool2d(h, &pools[p]);
        ck_assert_msg(hy != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt__pool2d_geometry(fn, h, &pools[p], is_max, &c), CLT_OK);
        gi = hi ? clt_tensor_to(hi, dev) : NULL;
        clt_tensor *gy = clt_tensor_to(hy, dev);
        a = clt__pool2d_backward(fn, gy, gi, &c), b = clt__pool2d_backward(fn, hy, hi, &c);
        if (is_max)
            assert_same(a, b, "max pool backward");
        else
            assert_near(a, b, "avg pool backward");
        clt_tensor *all[] = {a, b, gy, gi, hy, hi};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            clt_tensor_release(all[k]);
    }
    /* 2 x 2 windows of stride 2 that tile 6 x 10 planes: in the blocked layout one pass over
     * the input's rows (two work-items, the second starting at an odd row), otherwise zeros
     * and the scatter */
    clt_tensor *he = clt_tensor_randn(CLT_SHAPE(7, 13, 6, 10), CLT_F32, cpu);
    for (int blocked = 0; blocked < 2; blocked++) {
        clt_tensor *hi = NULL, *gi = NULL;
        clt__cl_run_blocked = blocked;
        clt_tensor *hy = clt_max_pool2d(he, &pools[6], &hi);
        ck_assert_int_eq(clt__pool2d_geometry(fn, he, &pools[6], true, &c), CLT_OK);
        gi = clt_tensor_to(hi, dev);
        clt_tensor *gy = clt_tensor_to(hy, dev);
        a = clt__pool2d_backward(fn, gy, gi, &c), b = clt__pool2d_backward(fn, hy, hi, &c);
        assert_same(a, b, blocked ? "tiling max pool backward, blocked" : "tiling backward");
        clt_tensor *all[] = {a, b, gy, gi, hy, hi};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            clt_tensor_release(all[k]);
    }
    clt__cl_run_blocked = -1;
    clt_tensor_release(he);
    const int64_t idx[] = {1, 3, 1, 0, 1};
    clt_tensor *ht = clt_transpose(h, 1, 3), *gt = clt_transpose(g, 1, 3); /* (2, 4, 5, 3) */
    a = clt__index_add(fn, gt, 2, idx, 4), b = clt__index_add(fn, ht, 2, idx, 4);
    assert_same(a, b, "index_add");
    clt_tensor *all[] = {a, b, gt, ht, g, h};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

/* The derivatives' fused kernels and the optimizers' update, against cpu. */
static clt_tensor *activations(clt_tensor *x)
{
    clt_tensor *parts[7] = {clt_relu(x), clt_sigmoid(x), clt_tanh(x), clt_gelu(x), clt_silu(x),
                            clt_abs(x), clt_clamp(x, -0.5, 0.5)};
    clt_tensor *all = clt_stack(parts, 7, 0), *s = clt_sum(all, NULL, 0, false);
    for (int k = 0; k < 7; k++)
        clt_tensor_release(parts[k]);
    clt_tensor_release(all);
    return s;
}

START_TEST(test_kernels_training)
{
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    clt_manual_seed(9);
    clt_tensor *x[2];
    x[0] = clt_tensor_randn(CLT_SHAPE(2, 5), CLT_F32, cpu);
    x[1] = clt_tensor_to(x[0], dev);
    for (int opt_kind = 0; opt_kind < 2; opt_kind++) {
        clt_optimizer *opts[2];
        for (int d = 0; d < 2; d++) {
            clt_tensor_set_requires_grad(x[d], true);
            clt_tensor *l = activations(x[d]);
            ck_assert_int_eq(clt_backward(l, NULL, false), CLT_OK);
            clt_tensor_release(l);
            opts[d] = opt_kind ? clt_optim_adam(&x[d], 1, TEST_ADAM(0.1))
                               : clt_optim_sgd(&x[d], 1, TEST_SGD(0.1, 0.5));
            ck_assert_int_eq(clt_optim_step(opts[d]), CLT_OK);
            ck_assert_int_eq(clt_optim_step(opts[d]), CLT_OK);
        }
        clt_tensor *g0 = clt_tensor_grad(x[0]), *g1 = clt_tensor_grad(x[1]);
        assert_near(g1, g0, "fused backward kernels");
        assert_near(x[1], x[0], opt_kind ? "Adam" : "SGD");
        clt_tensor_release(g0), clt_tensor_release(g1);
        clt_optim_free(opts[0]), clt_optim_free(opts[1]);
    }
    clt_tensor_release(x[0]), clt_tensor_release(x[1]);
}
END_TEST

/* n f32 values cycling through the conversions' edge cases (subnormals of f16 and f32, the
 * f16 rounding and overflow boundaries, infinities, NaN with a payload) and ordinary numbers. */
static clt_tensor *edge_values(int64_t n, clt_device *dev)
{
    static const uint32_t bits[] = {0x00000000, 0x80000001, 0x33000000, 0x33000001, 0x33400000,
                                    0x387fc000, 0x387ff000, 0x38800000, 0x477fefff, 0x477ff000,
                                    0x7f800000, 0xff800000, 0x7fc00123, 0x3f800000, 0xc0490fdb,
                                    0x00400000, 0x3dcccccd};
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        uint32_t b = bits[i % (int64_t)(sizeof bits / sizeof *bits)] ^ (uint32_t)(i / 17 % 3);
        memcpy(&v[i], &b, sizeof b);
    }
    clt_tensor *t = clt_tensor_from_data(1, &n, v, CLT_F32, dev);
    free(v);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    return t;
}

/* The contiguous kernels (ewc_*, casts, the optimizer step) in both layouts of CLT_RUN, on
 * lengths around a work-item's run and views at an odd offset: bit for bit against cpu (the
 * optimizer within rounding: OpenCL's sqrt is not correctly rounded). */
START_TEST(test_kernels_contiguous)
{
    static const int64_t lens[] = {1, 15, 16, 17, 1000, 4099};
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    for (int blocked = 0; blocked < 2; blocked++) {
        clt__cl_run_blocked = blocked;
        for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
            int64_t n = lens[k];
            clt_tensor *all_h = edge_values(n + 3, cpu), *all_g = clt_tensor_to(all_h, dev);
            clt_tensor *h = clt_narrow(all_h, 0, 3, n), *g = clt_narrow(all_g, 0, 3, n);
            clt_tensor *hb = clt_narrow(all_h, 0, 0, n), *gb = clt_narrow(all_g, 0, 0, n);
            clt_tensor *ch = clt_gt(h, hb), *cg = clt_gt(g, gb);
            clt_tensor *pairs[][2] = {
                {clt_add(g, gb), clt_add(h, hb)},
                {clt_relu(g), clt_relu(h)},
                {clt_where(cg, g, gb), clt_where(ch, h, hb)},
                {clt_tensor_to_dtype(g, CLT_F16), clt_tensor_to_dtype(h, CLT_F16)},
                {clt_tensor_to_dtype(g, CLT_BF16), clt_tensor_to_dtype(h, CLT_BF16)},
                {NULL, NULL},
                {NULL, NULL},
                {clt_addcmul(g, gb, g, -0.75), clt_addcmul(h, hb, h, -0.75)},
            };
            clt_tensor *h16 = pairs[3][1], *g16 = clt_tensor_to(h16, dev);
            pairs[5][0] = clt_tensor_to_dtype(g16, CLT_F32);
            pairs[5][1] = clt_tensor_to_dtype(h16, CLT_F32);
            if (dev->info.fp64) {
                pairs[6][0] = clt_tensor_to_dtype(g, CLT_F64);
                pairs[6][1] = clt_tensor_to_dtype(h, CLT_F64);
            }
            for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++) {
                char what[64];
                snprintf(what, sizeof what, "case %zu of length %lld, blocked %d", p,
                         (long long)n, blocked);
                if (pairs[p][0] || pairs[p][1])
                    assert_same(pairs[p][0], pairs[p][1], what);
                clt_tensor_release(pairs[p][0]), clt_tensor_release(pairs[p][1]);
            }
            clt_tensor *all[] = {g16, cg, ch, gb, hb, g, h, all_g, all_h};
            for (size_t i = 0; i < sizeof all / sizeof *all; i++)
                clt_tensor_release(all[i]);
        }
        for (int opt_kind = 0; opt_kind < 2; opt_kind++) {
            clt_tensor *x[2], *grad[2];
            clt_optimizer *opts[2];
            clt_manual_seed(3);
            x[0] = clt_tensor_randn(CLT_SHAPE(1001), CLT_F32, cpu);
            grad[0] = clt_tensor_randn(CLT_SHAPE(1001), CLT_F32, cpu);
            x[1] = clt_tensor_to(x[0], dev);
            grad[1] = clt_tensor_to(grad[0], dev);
            for (int d = 0; d < 2; d++) {
                clt_tensor_set_requires_grad(x[d], true);
                clt_tensor_set_grad(x[d], grad[d]);
                opts[d] = opt_kind ? clt_optim_adam(&x[d], 1, TEST_ADAM(0.1))
                                   : clt_optim_sgd(&x[d], 1,
                                                   TEST_SGD(0.1, 0.5));
                ck_assert_int_eq(clt_optim_step(opts[d]), CLT_OK);
                ck_assert_int_eq(clt_optim_step(opts[d]), CLT_OK);
            }
            assert_near(x[1], x[0], opt_kind ? "contiguous Adam" : "contiguous SGD");
            for (int d = 0; d < 2; d++)
                clt_optim_free(opts[d]), clt_tensor_release(x[d]), clt_tensor_release(grad[d]);
        }
    }
    clt__cl_run_blocked = -1;
}
END_TEST

/* A copy of a permutation: in_shape (ndim dimensions) of arange values from `off` permuted by
 * perm, made contiguous on dev in dtype dt. With check (i32), every element is compared with
 * the value it must hold. */
static clt_tensor *permuted_copy(clt_device *dev, clt_dtype dt, int ndim, const int64_t *in_shape,
                                 const int *perm, int64_t off, bool check)
{
    int64_t n = 1, st[CLT_MAX_DIMS], out_shape[CLT_MAX_DIMS];
    for (int d = ndim - 1; d >= 0; d--)
        st[d] = n, n *= in_shape[d];
    clt_tensor *base = clt_tensor_arange(0, (double)(off + n), 1, CLT_I32, clt_device_cpu());
    clt_tensor *typed = clt_tensor_to_dtype(base, dt), *on = clt_tensor_to(typed, dev);
    clt_tensor *part = clt_narrow(on, 0, off, n), *v = clt_view(part, ndim, in_shape);
    clt_tensor *p = clt_permute(v, perm), *c = clt_contiguous(p);
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    if (check) {
        int32_t *got = test_bytes(c);
        int64_t idx[CLT_MAX_DIMS] = {0};
        for (int d = 0; d < ndim; d++)
            out_shape[d] = in_shape[perm[d]];
        for (int64_t i = 0; i < n; i++) {
            int64_t want = off;
            for (int d = 0; d < ndim; d++)
                want += idx[d] * st[perm[d]];
            ELEMENT_CHECK(got[i] == want, "element %lld is %d, not %lld", (long long)i, got[i],
                          (long long)want);
            for (int d = ndim - 1; d >= 0 && ++idx[d] == out_shape[d]; d--)
                idx[d] = 0;
        }
        free(got);
    }
    clt_tensor *all[] = {p, v, part, on, typed, base};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
    return c;
}

/* Copies that are batched transposes (tiled: ew_copy_t, ew_copy_tb and the host's tiles) of
 * awkward sizes, batched and permuted in 3-D, and permutes that keep the last dimension
 * (ew_copy_rows), at offsets, every dtype, in both layouts: the host's values checked one by one,
 * the device's bit for bit against the host. */
START_TEST(test_kernels_transpose)
{
    static const struct {
        int ndim;
        int64_t shape[3];
        int perm[3];
    } cases[] = {
        {2, {1, 1}, {1, 0}},        {2, {1, 37}, {1, 0}},       {2, {37, 1}, {1, 0}},
        {2, {33, 65}, {1, 0}},      {2, {64, 64}, {1, 0}},      {2, {130, 67}, {1, 0}},
        {3, {3, 33, 65}, {0, 2, 1}}, {3, {2, 5, 64}, {0, 2, 1}}, {3, {5, 7, 9}, {2, 0, 1}},
        {3, {4, 6, 35}, {1, 2, 0}}, {3, {5, 7, 9}, {1, 0, 2}}, {3, {33, 3, 65}, {1, 0, 2}},
    };
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    for (int blocked = 0; blocked < 2; blocked++) {
        clt__cl_run_blocked = blocked;
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            for (int s = 0; s < 8; s++) {
                char what[96];
                clt_dtype dt = dtypes[s];
                if (dt == CLT_F64 && !dev->info.fp64)
                    continue;
                for (int64_t off = 0; off < 2; off++) {
                    clt_tensor *h = permuted_copy(cpu, dt, cases[k].ndim, cases[k].shape,
                                                  cases[k].perm, off * 3, dt == CLT_I32);
                    clt_tensor *g = permuted_copy(dev, dt, cases[k].ndim, cases[k].shape,
                                                  cases[k].perm, off * 3, dt == CLT_I32);
                    snprintf(what, sizeof what, "transpose case %zu, %s, offset %lld, blocked %d",
                             k, clt_dtype_name(dt), (long long)off * 3, blocked);
                    assert_same(g, h, what);
                    clt_tensor_release(g), clt_tensor_release(h);
                }
            }
        }
    }
    clt__cl_run_blocked = -1;
    for (int64_t off = 0; off < 2; off++) { /* the host's streamed tiles (8 MiB and more) */
        clt_tensor *big = permuted_copy(cpu, CLT_I32, 2, (const int64_t[]){1024, 2052},
                                        (const int[]){1, 0}, off, true);
        clt_tensor_release(big);
    }
}
END_TEST

/* The library's GEMM kernels (packing, packed, direct, tiled, dot), f32 and f64, on shapes
 * with partial tiles, transposes, batches, a beta, the epilogue and C's column groups (packed
 * and direct; the others refuse them) (CLBlast's kernels are not the library's). */
START_TEST(test_kernels_gemm)
{
    static const test_gemm_case cases[] = {
        {5, 67, 9, 2, true, false, 0.5, 2, false, 0},
        {66, 3, 17, 1, false, true, 1, 0, true, 0},
        {6, 67, 9, 2, false, false, 1, 0, false, TEST_EP_BIAS | TEST_EP_RELU},
        {66, 5, 17, 1, false, true, 1, 0, true, TEST_EP_BIAS | TEST_EP_ROWS | TEST_EP_RELU}};
    clt_device *dev = gpu0();
    /* the variants from CLBlast on where it is installed (not under Wine), else those after it */
    int first = clt__clblast_load() ? CLT__GEMM_CLBLAST : CLT__GEMM_CLBLAST + 1;
    for (int v = CLT__GEMM_CLBLAST + 1; v < CLT__GEMM_VARIANTS; v++)
        for (int d = 0; d < 2; d++)
            for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
                if (!d || dev->info.fp64)
                    test_gemm_check(dev, d ? CLT_F64 : CLT_F32, (clt__gemm_variant)v, &cases[i]);
    /* by the device's panel width: packed storing C^T (op(A)^T packed), direct's last panel
     * with a whole vector and a cut one, a whole panel with a bias along C's rows */
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_F64 : CLT_F32;
        size_t pw = clt__cl_gemm_panel_width(dev, dt);
        size_t vw = d ? clt__cl(dev)->vw_double : clt__cl(dev)->vw_float;
        const test_gemm_case transposed[] = {
            {pw, 3 * pw + 5, 9, 2, false, true, 0.5, 2, false, 0},
            {2 * pw, 4 * pw + 3, 5, 1, true, true, 1, 0, true,
             TEST_EP_BIAS | TEST_EP_ROWS | TEST_EP_RELU}};
        const test_gemm_case tail = {3, pw + vw + 1, 7, 1, false, false, 1, 0, false,
                                     TEST_EP_BIAS};
        const test_gemm_case rows = {5, pw + 3, 6, 1, false, false, 1, 0, false,
                                     TEST_EP_BIAS | TEST_EP_ROWS | TEST_EP_RELU};
        if (d && !dev->info.fp64)
            continue;
        for (size_t i = 0; i < 2; i++)
            test_gemm_check(dev, dt, CLT__GEMM_PACKED, &transposed[i]);
        test_gemm_check(dev, dt, CLT__GEMM_DIRECT, &tail);
        /* a whole panel's epilogue in vectors, the bias along the rows */
        test_gemm_check(dev, dt, CLT__GEMM_DIRECT, &rows);
        test_gemm_check(dev, dt, CLT__GEMM_PACKED, &rows);
        /* C in column groups: of 7 (panels across groups, stored element by element), of 16
         * (a convolution's 4 x 4 maps) with the bias along the rows and ReLU, or along the
         * columns, of a whole panel (stored as vectors within each group), and with a partial
         * last panel; every variant (those that store C's rows whole through a buffer) */
        const struct {
            test_gemm_case c;
            size_t group;
        } grouped[] = {
            {{6, 5 * 7, 9, 1, false, false, 1, 0, false, 0}, 7},
            {{9, 9 * 16, 13, 1, false, false, 1, 0, false,
              TEST_EP_BIAS | TEST_EP_ROWS | TEST_EP_RELU},
             16},
            {{7, 9 * 16, 5, 1, false, false, 1, 0, false, TEST_EP_BIAS | TEST_EP_RELU}, 16},
            {{5, 3 * pw, 4, 1, false, false, 1, 0, false, TEST_EP_BIAS | TEST_EP_ROWS}, pw},
            {{5, 2 * (pw + 3), 4, 1, false, false, 1, 0, false, 0}, pw + 3}};
        for (size_t i = 0; i < sizeof grouped / sizeof *grouped; i++)
            for (int v = first; v < CLT__GEMM_VARIANTS; v++)
                test_gemm_check_groups(dev, dt, (clt__gemm_variant)v, &grouped[i].c,
                                       grouped[i].group);
        /* op(A)'s row sums beside the product (a weight gradient's and its bias's): A's rows
         * read as vectors and past their last whole vector, down A stored transposed, rows
         * beyond the last whole tile, several panels or dot tiles across C (only the first
         * sums), packed storing C^T (the sums then apart), with the epilogue and with column
         * groups; every variant (CLBlast and tiled through the reduction apart; its sums down
         * more rows than a column sum takes: test_matmul_row_sums, linalg suite) */
        const struct {
            test_gemm_case c;
            size_t group;
        } summed[] = {
            {{6, 2 * pw + 3, 2 * vw + 3, 1, false, false, 1, 0, false, TEST_EP_RSUM}, 0},
            {{9, pw + 1, 13, 1, true, false, 0.5, 0, false, TEST_EP_RSUM}, 0},
            {{7, 11, 4 * vw + 1, 1, false, true, 1, 0, false, TEST_EP_RSUM}, 0},
            {{5, 9, 3, 1, true, true, 1, 2, false, TEST_EP_RSUM}, 0},
            {{pw, 4 * pw + 3, 5, 1, false, true, 1, 0, false, TEST_EP_RSUM}, 0},
            {{6, 3 * pw, 7, 1, false, false, 1, 0, false,
              TEST_EP_BIAS | TEST_EP_ROWS | TEST_EP_RELU | TEST_EP_RSUM}, 0},
            {{9, 9 * 16, 13, 1, false, false, 1, 0, false, TEST_EP_RSUM}, 16}};
        for (size_t i = 0; i < sizeof summed / sizeof *summed; i++)
            for (int v = first; v < CLT__GEMM_VARIANTS; v++)
                test_gemm_check_groups(dev, dt, (clt__gemm_variant)v, &summed[i].c,
                                       summed[i].group);
    }
}
END_TEST

/* The convolution whose columns go straight into the packed GEMM's panels (gemm_pack_im2col,
 * and gemm_packed writing each image's part of the output in place), on every OpenCL device, f32
 * and f64, against cpu: padded, strided and dilated windows, a 1 x 1 kernel at stride 2, output
 * planes longer than a panel and shorter than one (a panel then holds many images), none a
 * multiple of the panel width so that panels straddle images. The output starts at 7 and sits
 * at an offset in its buffer: every element must be written, none outside. Then clt_conv2d
 * with the fused path on and off. */
START_TEST(test_kernels_conv_packed)
{
    static const char *const fn = "test_kernels_conv_packed";
    static const struct {
        int64_t n, c, h, w, o, kh, kw;
        clt_conv2d_options opt;
    } convs[] = {
        {3, 3, 9, 11, 5, 3, 3, {.stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}}},
        {2, 2, 10, 13, 7, 3, 2, {.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}}},
        {2, 4, 8, 9, 6, 1, 1, {.stride = {2, 2}, .padding = {0, 0}, .dilation = {1, 1}}},
        {5, 3, 2, 2, 4, 3, 3, {.stride = {2, 2}, .padding = {1, 1}, .dilation = {1, 1}}},
        {1, 2, 5, 40, 3, 3, 3, {.stride = {1, 1}, .padding = {0, 0}, .dilation = {1, 1}}},
    };
    clt_device *cpu = clt_device_cpu();
    gpu0();
    clt_manual_seed(8);
    for (int d = 0; d < clt_device_count(); d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", d);
        clt_device *dev = clt_device_get(name);
        for (int f64 = 0; f64 < 2; f64++) {
            clt_dtype dt = f64 ? CLT_F64 : CLT_F32;
            if (f64 && !dev->info.fp64)
                continue;
            for (size_t k = 0; k < sizeof convs / sizeof *convs; k++) {
                char what[96];
                const clt_conv2d_options *o = &convs[k].opt;
                clt_tensor *hx = clt_tensor_randn(CLT_SHAPE(convs[k].n, convs[k].c, convs[k].h,
                                                            convs[k].w),
                                                  dt, cpu),
                           *hw = clt_tensor_randn(CLT_SHAPE(convs[k].o, convs[k].c, convs[k].kh,
                                                            convs[k].kw),
                                                  dt, cpu);
                clt_tensor *gx = clt_tensor_to(hx, dev), *gw = clt_tensor_to(hw, dev);
                clt_tensor *want = clt_conv2d(hx, hw, NULL, o);
                ck_assert_msg(want != NULL, "%s", clt_last_error());
                int64_t numel = clt_tensor_numel(want);
                clt__conv_call c;
                ck_assert_int_eq(clt__conv2d_geometry(fn, gx, (int)convs[k].kh,
                                                      (int)convs[k].kw, o, &c),
                                 CLT_OK);
                clt_tensor *buf = clt_tensor_full(CLT_SHAPE(numel + 6), 7, dt, dev);
                c.dtype = dt, c.mult = (size_t)convs[k].o;
                c.in = gx->storage->buf, c.in_offset = gx->offset;
                c.weight = gw->storage->buf, c.weight_offset = gw->offset;
                c.out = buf->storage->buf, c.out_offset = buf->offset + 3;
                clt__gemm_call g = clt__cl_conv2d_product(&c);
                ck_assert(clt__cl_gemm_fits(dev, CLT__GEMM_PACKED, &g));
                ck_assert_int_eq(clt__cl_conv2d_packed(fn, dev, &c), CLT_OK);
                clt_tensor *h = clt_tensor_to_ex(buf, &(clt_to_options){.device = cpu,
                                                                        .dtype = CLT_F64}),
                           *w64 = clt_tensor_to_dtype(want, CLT_F64);
                double *all = test_bytes(h), *ref = test_bytes(w64);
                snprintf(what, sizeof what, "%s conv %zu on %s", clt_dtype_name(dt), k, name);
                for (int i = 0; i < 3; i++)
                    ck_assert_msg(all[i] == 7 && all[numel + 3 + i] == 7,
                                  "%s: written outside the output", what);
                for (int64_t i = 0; i < numel; i++)
                    ELEMENT_CHECK(fabs(all[3 + i] - ref[i]) <= 1e-5 * fmax(1.0, fabs(ref[i])),
                                  "%s: element %lld: %g, want %g", what, (long long)i,
                                  all[3 + i], ref[i]);
                free(all), free(ref);
                for (int fused = 0; fused < 2; fused++) {
                    clt__cl_conv_packed = fused;
                    clt_tensor *got = clt_conv2d(gx, gw, NULL, o);
                    snprintf(what, sizeof what, "clt_conv2d %s %zu on %s, fused %d",
                             clt_dtype_name(dt), k, name, fused);
                    assert_near(got, want, what);
                    clt_tensor_release(got);
                }
                clt__cl_conv_packed = -1;
                clt_tensor *rel[] = {hx, hw, gx, gw, want, buf, h, w64};
                for (size_t r = 0; r < sizeof rel / sizeof *rel; r++)
                    clt_tensor_release(rel[r]);
            }
        }
    }
}
END_TEST

/* Winograd's convolution (winograd.cl's three kernels between the products) on gpu:0 in both
 * layouts, f32 and f64, against cpu's direct convolution: padding 0, 1 and 2, odd output sizes,
 * a row of more tiles than a private row holds (35 against 32), several images, blocks of one
 * and of all tile rows. */
START_TEST(test_kernels_winograd)
{
    static const struct {
        int64_t n, c, h, w, o;
        int ph, pw;
    } convs[] = {{2, 3, 5, 7, 2, 1, 1}, {1, 2, 3, 70, 3, 1, 1}, {2, 2, 6, 5, 3, 0, 2}};
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    clt_manual_seed(9);
    for (int k = 0; k < 8 * 3; k++) { /* each case in each dtype, layout and block size */
        clt_dtype dt = k % 2 ? CLT_F64 : CLT_F32;
        int layout = k / 2 % 2, one_row = k / 4 % 2, which = k / 8;
        if (dt == CLT_F64 && !dev->info.fp64)
            continue;
        const clt_conv2d_options o = {.stride = {1, 1},
                                      .padding = {convs[which].ph, convs[which].pw},
                                      .dilation = {1, 1}};
        clt_tensor *hx = clt_tensor_randn(CLT_SHAPE(convs[which].n, convs[which].c,
                                                    convs[which].h, convs[which].w),
                                          dt, cpu);
        clt_tensor *hw = clt_tensor_randn(CLT_SHAPE(convs[which].o, convs[which].c, 3, 3), dt, cpu);
        clt_tensor *gx = clt_tensor_to(hx, dev), *gw = clt_tensor_to(hw, dev);
        clt__conv_winograd = 0;
        clt_tensor *want = clt_conv2d(hx, hw, NULL, &o);
        clt__conv_winograd = 1, clt__cl_run_blocked = layout, clt__winograd_rows = one_row;
        clt_tensor *got = clt_conv2d(gx, gw, NULL, &o);
        clt__conv_winograd = -1, clt__cl_run_blocked = -1, clt__winograd_rows = 0;
        char what[96];
        snprintf(what, sizeof what, "Winograd conv2d %d, %s, layout %d, %s", which,
                 clt_dtype_name(dt), layout, one_row ? "a tile row a block" : "one block");
        assert_near(got, want, what);
        clt_tensor *rel[] = {got, want, gw, gx, hw, hx};
        for (size_t r = 0; r < sizeof rel / sizeof *rel; r++)
            clt_tensor_release(rel[r]);
    }
}
END_TEST

/* Cross entropy's fused rows (loss.cl) forward and backward on gpu:0, f32 and f64, against cpu:
 * rows with an ignored target, the mean and its gradient. */
START_TEST(test_kernels_cross_entropy)
{
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    int64_t tv[] = {1, -100, 0, 4, 2, 4, 3};
    clt_manual_seed(10);
    for (int f64 = 0; f64 < 2; f64++) {
        clt_dtype dt = f64 ? CLT_F64 : CLT_F32;
        if (f64 && !dev->info.fp64)
            continue;
        clt_tensor *hx = clt_tensor_randn(CLT_SHAPE(7, 5), dt, cpu), *x[2], *loss[2], *g[2];
        x[0] = clt_tensor_to_dtype(hx, dt), x[1] = clt_tensor_to(hx, dev);
        for (int d = 0; d < 2; d++) {
            clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(7), tv, CLT_I64, d ? dev : cpu);
            ck_assert_int_eq(clt_tensor_set_requires_grad(x[d], true), CLT_OK);
            loss[d] = clt_cross_entropy(x[d], t, NULL);
            ck_assert_msg(loss[d] != NULL, "%s", clt_last_error());
            ck_assert_int_eq(clt_backward(loss[d], NULL, false), CLT_OK);
            g[d] = clt_tensor_grad(x[d]);
            clt_tensor_release(t);
        }
        assert_near(loss[1], loss[0], "cross entropy");
        assert_near(g[1], g[0], "cross entropy's gradient");
        for (int d = 0; d < 2; d++)
            clt_tensor_release(g[d]), clt_tensor_release(loss[d]), clt_tensor_release(x[d]);
        clt_tensor_release(hx);
    }
}
END_TEST

/* BatchNorm with running statistics where nothing records: the scale by one fused kernel
 * (mul_rsqrt), the shift and the output by addcmul, on gpu:0 in both layouts against cpu, f32
 * and f64. */
START_TEST(test_kernels_batch_norm_eval)
{
    clt_device *dev = gpu0(), *cpu = clt_device_cpu();
    clt_manual_seed(11);
    for (int k = 0; k < 4; k++) {
        clt_dtype dt = k % 2 ? CLT_F64 : CLT_F32;
        if (dt == CLT_F64 && !dev->info.fp64)
            continue;
        clt_tensor *h[5], *g[5], *out[2];
        h[0] = clt_tensor_randn(CLT_SHAPE(2, 3, 4, 5), dt, cpu);
        h[1] = clt_tensor_randn(CLT_SHAPE(3), dt, cpu);              /* running mean */
        h[2] = clt_tensor_rand(CLT_SHAPE(3), dt, cpu);               /* running variance */
        h[3] = clt_tensor_randn(CLT_SHAPE(3), dt, cpu);              /* weight */
        h[4] = clt_tensor_randn(CLT_SHAPE(3), dt, cpu);              /* bias */
        for (int i = 0; i < 5; i++)
            g[i] = clt_tensor_to(h[i], dev);
        clt__cl_run_blocked = k / 2;
        CLT_NO_GRAD {
            out[0] = clt_batch_norm(h[0], h[1], h[2], h[3], h[4], false, 0.1, 1e-5);
            out[1] = clt_batch_norm(g[0], g[1], g[2], g[3], g[4], false, 0.1, 1e-5);
        }
        clt__cl_run_blocked = -1;
        assert_near(out[1], out[0], "batch norm in evaluation");
        clt_tensor_release(out[0]), clt_tensor_release(out[1]);
        for (int i = 0; i < 5; i++)
            clt_tensor_release(g[i]), clt_tensor_release(h[i]);
    }
}
END_TEST

/* Every launch's arguments are checked against the kernel's own count before any is set: a
 * launch with one too few or one too many is refused, naming the kernel and both counts. */
START_TEST(test_kernels_argument_count)
{
    if (clt_device_count() == 0)
        return;
    clt_device *dev = clt_device_get("gpu:0");
    cl_ulong x = 0;
    const clt__cl_arg args[6] = {CLT__CL_ARG(x), CLT__CL_ARG(x), CLT__CL_ARG(x),
                                 CLT__CL_ARG(x), CLT__CL_ARG(x), CLT__CL_ARG(x)};
    const char *opts = clt__dtype(CLT_I32)->options;
    for (int n = 4; n <= 6; n += 2) {
        ck_assert_int_eq(clt__cl_launch("test", dev, "elementwise:fill", opts, "ew_fill", args, n,
                                        1, NULL),
                         CLT_ERR_INTERNAL);
        char want[128];
        snprintf(want, sizeof want, "test: kernel ew_fill of program elementwise:fill takes 5 "
                 "arguments; %d were given", n);
        ck_assert_error_has(want);
    }
}
END_TEST

Suite *suite_kernels(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = test_case("kernels", 900);
    tcase_add_test(tc, test_kernels_exact);
    tcase_add_test(tc, test_kernels_elementwise);
    tcase_add_test(tc, test_kernels_reduce_nn);
    tcase_add_test(tc, test_kernels_windows);
    tcase_add_test(tc, test_kernels_rows);
    tcase_add_test(tc, test_kernels_reduce_layouts);
    tcase_add_test(tc, test_kernels_columns);
    tcase_add_test(tc, test_kernels_adjoints);
    tcase_add_test(tc, test_kernels_training);
    tcase_add_test(tc, test_kernels_contiguous);
    tcase_add_test(tc, test_kernels_transpose);
    tcase_add_test(tc, test_kernels_gemm);
    tcase_add_test(tc, test_kernels_conv_packed);
    tcase_add_test(tc, test_kernels_winograd);
    tcase_add_test(tc, test_kernels_cross_entropy);
    tcase_add_test(tc, test_kernels_batch_norm_eval);
    tcase_add_test(tc, test_kernels_argument_count);
    suite_add_tcase(s, tc);
    return s;
}
