/* Sizes suite: the ops whose output's size comes from the caller's numbers (pads, output sizes,
 * strides, sample counts) on every device, given numbers whose output cannot exist: each is
 * refused at once with an error naming the op and the size, before any allocation or work, and
 * an output larger than the device's largest allocation is an out-of-memory error. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "helpers.h"

/* The allocations tried so far, host and device together. */
static long attempts(void)
{
    return clt__allocation_attempts(CLT__HOST) + clt__allocation_attempts(CLT__DEVICE);
}

/* Asserts that a call which returned `got` failed with `status` and an error starting with fn
 * and holding `text`, and that it tried no allocation since `before`. */
static void refused(clt_tensor *got, long before, clt_status status, const char *fn,
                    const char *text)
{
    ck_assert_msg(got == NULL, "%s succeeded", fn);
    ck_assert_int_eq(attempts(), before);
    ck_assert_msg(clt_last_status() == status, "%s: status %s, want %s (%s)", fn,
                  clt_status_name(clt_last_status()), clt_status_name(status), clt_last_error());
    ck_assert_msg(strncmp(clt_last_error(), fn, strlen(fn)) == 0, "%s", clt_last_error());
    ck_assert_error_has(text);
}

#define REFUSED(call, status, fn, text)                                                        \
    do {                                                                                       \
        long before_ = attempts();                                                             \
        refused((call), before_, status, fn, text);                                            \
    } while (0)

/* The status of an output larger than dev's largest allocation. */
static clt_status too_big(clt_device *dev)
{
    return dev == clt_device_cpu() ? CLT_ERR_OUT_OF_MEMORY : CLT_ERR_DEVICE_OUT_OF_MEMORY;
}

static clt_tensor *input(clt_device *dev, int ndim, const int64_t *shape)
{
    clt_tensor *x = clt_tensor_ones(ndim, shape, CLT_F32, dev);
    ck_assert_msg(x != NULL, "%s", clt_last_error());
    return x;
}

/* Pads of 2^61 in every mode (replicate and circular once wrote past a 24-byte block), and pads
 * whose sum with the size exceeds int64 (once a signed overflow before any check). */
START_TEST(test_sizes_pad)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = input(dev, CLT_SHAPE(1, 2, 3));
    int64_t big = (int64_t)1 << 61;
    for (int mode = CLT_PAD_CONSTANT; mode <= CLT_PAD_CIRCULAR; mode++) {
        if (mode == CLT_PAD_REFLECT || mode == CLT_PAD_CIRCULAR)
            continue; /* their pads must stay below the size */
        REFUSED(clt_pad(x, 2, (int64_t[]){big, big}, (clt_pad_mode)mode, 0),
                CLT_ERR_INVALID_ARGUMENT, "clt_pad",
                "the output (1, 2, 4611686018427387907) of f32 would have more bytes than "
                "memory can hold");
        REFUSED(clt_pad(x, 4, (int64_t[]){0, 0, INT64_MAX, 1}, (clt_pad_mode)mode, 0),
                CLT_ERR_INVALID_ARGUMENT, "clt_pad",
                "pads 9223372036854775807 and 1 make dimension 1 of size 2 larger than int64");
    }
    REFUSED(clt_pad(x, 2, (int64_t[]){big, 2}, CLT_PAD_CIRCULAR, 0), CLT_ERR_INVALID_ARGUMENT,
            "clt_pad", "does not suit dimension 2 of size 3");
    /* fits the address space, not the device: out of memory, named with the device's limit */
    const clt_device_info *info = clt_device_get_info(dev);
    int64_t past = (int64_t)(info->max_alloc_bytes / 4);
    REFUSED(clt_pad(x, 2, (int64_t[]){0, past}, CLT_PAD_CONSTANT, 0),
            too_big(dev), "clt_pad", "more than");
    ck_assert_error_has(clt_device_name(dev));
    /* what still fits works */
    clt_tensor *y = clt_pad(x, 2, (int64_t[]){1, 0}, CLT_PAD_REPLICATE, 0);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(y), 8);
    clt_tensor_release(y), clt_tensor_release(x);
}
END_TEST

/* Output sizes of 2^61 (once a 1-byte block written 2^61 times), INT64_MAX, and an output
 * small in itself whose rows-first step would not be. */
START_TEST(test_sizes_interpolate)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = input(dev, CLT_SHAPE(1, 1, 4, 4));
    int64_t big = (int64_t)1 << 61;
    for (int mode = CLT_INTERPOLATE_NEAREST; mode <= CLT_INTERPOLATE_BILINEAR; mode++) {
        REFUSED(clt_interpolate2d(x, 2, big, (clt_interpolate_mode)mode, false),
                CLT_ERR_INVALID_ARGUMENT, "clt_interpolate2d",
                "the output (1, 1, 2, 2305843009213693952) of f32 would have more bytes");
        REFUSED(clt_interpolate2d(x, INT64_MAX, INT64_MAX, (clt_interpolate_mode)mode, true),
                CLT_ERR_INVALID_ARGUMENT, "clt_interpolate2d", "more bytes than memory");
    }
    /* a (1, 1, 1, 2^28) row shrunk to (2^28, 1): columns first, 2^28 elements at most */
    clt_tensor *wide = input(dev, CLT_SHAPE(1, 1, 1, (int64_t)1 << 28));
    clt_tensor *y = clt_interpolate2d(wide, (int64_t)1 << 14, 1, CLT_INTERPOLATE_NEAREST, false);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(y), (int64_t)1 << 14);
    clt_tensor_release(y), clt_tensor_release(wide), clt_tensor_release(x);
}
END_TEST

/* Adaptive pooling to (INT_MAX, INT_MAX): 2^62 results, once a loop of 2^31 windows that ran
 * until the system ran out of memory. */
START_TEST(test_sizes_adaptive_pool)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = input(dev, CLT_SHAPE(1, 1, 4, 4));
    REFUSED(clt_adaptive_avg_pool2d(x, INT_MAX, INT_MAX), too_big(dev), "clt_adaptive_avg_pool2d",
            "the output (1, 1, 2147483647, 2147483647) of f32 needs 18446744056529682436 bytes, "
            "more than");
    ck_assert_error_has(clt_device_name(dev));
    clt_tensor_release(x);
    /* many windows of few inputs (gathered) and few of many (narrowed), against PyTorch's
     * definition: window i of out over n covers floor(i n / out) .. ceil((i + 1) n / out) - 1 */
    enum { H = 3, W = 50, OH = 1000, OW = 7 };
    static double v[H * W], want[OH * OW];
    for (int i = 0; i < H * W; i++)
        v[i] = (i * 37 % 101) / 10.0;
    for (int i = 0; i < OH; i++)
        for (int j = 0; j < OW; j++) {
            int h0 = i * H / OH, h1 = ((i + 1) * H + OH - 1) / OH;
            int w0 = j * W / OW, w1 = ((j + 1) * W + OW - 1) / OW;
            double sum = 0;
            for (int h = h0; h < h1; h++)
                for (int k = w0; k < w1; k++)
                    sum += v[h * W + k];
            want[i * OW + j] = sum / ((h1 - h0) * (w1 - w0));
        }
    clt_tensor *h = clt_tensor_from_data(CLT_SHAPE(1, H, W), v, CLT_F64, clt_device_cpu());
    clt_tensor *xd = clt_tensor_to_ex(h, &(clt_to_options){.device = dev, .dtype = CLT_F32});
    clt_tensor *y = clt_adaptive_avg_pool2d(xd, OH, OW);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(y), OH * OW);
    clt_tensor *yh = clt_tensor_to_ex(y, &(clt_to_options){.device = clt_device_cpu(),
                                                           .dtype = CLT_F64});
    double *got = test_bytes(yh);
    for (int i = 0; i < OH * OW; i++)
        ELEMENT_CHECK(fabs(got[i] - want[i]) <= 1e-5 * fmax(1, fabs(want[i])),
                      "adaptive 3x50 -> 1000x7: element %d is %.9g, want %.9g", i, got[i],
                      want[i]);
    free(got);
    clt_tensor *all[] = {yh, y, xd, h};
    TEST_RELEASE_ALL(all);
}
END_TEST

/* Convolutions, pooling and sampling whose padding, stride or count makes the output too
 * large; a transposed convolution whose output would be empty. */
START_TEST(test_sizes_windows)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = input(dev, CLT_SHAPE(1, 1, 4, 4)), *w = input(dev, CLT_SHAPE(1, 1, 1, 1));
    clt_conv2d_options c = clt_conv2d_options_default();
    c.padding[0] = c.padding[1] = 1 << 20;
    REFUSED(clt_conv2d(x, w, NULL, &c), too_big(dev), "clt_conv2d",
            "the output (1, 1, 2097156, 2097156) of f32 needs 17592253153344 bytes");
    clt_conv_transpose2d_options t = clt_conv_transpose2d_options_default();
    t.stride[0] = t.stride[1] = INT_MAX;
    REFUSED(clt_conv_transpose2d(x, w, NULL, &t), CLT_ERR_INVALID_ARGUMENT,
            "clt_conv_transpose2d", "the output (1, 1, 6442450942, 6442450942) of f32");
    t = clt_conv_transpose2d_options_default();
    t.padding[1] = 5;
    REFUSED(clt_conv_transpose2d(x, w, NULL, &t), CLT_ERR_SHAPE, "clt_conv_transpose2d",
            "the output's dimension 3 would be -6, too small");
    clt_tensor *big_w = input(dev, CLT_SHAPE(1, 1, 2, 2));
    t = clt_conv_transpose2d_options_default();
    t.dilation[0] = INT_MAX, t.stride[1] = INT_MAX;
    REFUSED(clt_conv_transpose2d(x, big_w, NULL, &t), CLT_ERR_INVALID_ARGUMENT,
            "clt_conv_transpose2d", "of f32 would have more bytes");
    clt_pool2d_options p = clt_pool2d_options_default(1, 1);
    p.stride[0] = p.stride[1] = 1;
    p.ceil_mode = true;
    clt_tensor *y = clt_max_pool2d(x, &p, NULL); /* still fine */
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    clt_tensor_release(y);
    clt_tensor *probs = input(dev, CLT_SHAPE(2, 3));
    REFUSED(clt_multinomial(probs, (int64_t)1 << 62, true), CLT_ERR_INVALID_ARGUMENT,
            "clt_multinomial", "the output (2, 4611686018427387904) of i64");
    REFUSED(clt_multinomial(probs, (int64_t)1 << 40, true), too_big(dev), "clt_multinomial",
            "the output (2, 1099511627776) of i64 needs 17592186044416 bytes");
    clt_tensor_release(probs), clt_tensor_release(big_w), clt_tensor_release(w);
    clt_tensor_release(x);
}
END_TEST

/* Pooling windows of INT_MAX x INT_MAX taps over a 2 x 2 image (padding INT_MAX / 2 makes them
 * fit), forward and backward: the taps inside are found without visiting the others (once 2^62
 * steps a window forward, and backward 2^31 an input element and more). */
START_TEST(test_sizes_huge_window)
{
    clt_device *dev = test_device(_i);
    clt_tensor *h = clt_tensor_from_data(CLT_SHAPE(1, 1, 2, 2), (float[]){1, 5, 3, 2}, CLT_F32,
                                         clt_device_cpu());
    clt_tensor *x = clt_tensor_to(h, dev);
    ck_assert_int_eq(clt_tensor_set_requires_grad(x, true), CLT_OK);
    clt_pool2d_options o = clt_pool2d_options_default(INT_MAX, INT_MAX);
    o.padding[0] = o.padding[1] = INT_MAX / 2;
    clt_tensor *mx = clt_max_pool2d(x, &o, NULL);
    o.exclude_padding = true;
    clt_tensor *avg = clt_avg_pool2d(x, &o);
    ck_assert_msg(mx && avg, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(mx), 1);
    ck_assert_int_eq(clt_tensor_numel(avg), 1);
    float *m = test_bytes(mx), *a = test_bytes(avg);
    ck_assert_float_eq(m[0], 5);
    ck_assert_float_eq(a[0], 2.75f);
    free(m), free(a);
    /* the gradient visits only the taps that reach a window: a quarter to each element */
    ck_assert_int_eq(clt_backward(avg, NULL, false), CLT_OK);
    clt_tensor *g = clt_tensor_grad(x);
    ck_assert_ptr_nonnull(g);
    float *gv = test_bytes(g);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(gv[i], 0.25f);
    free(gv);
    clt_tensor *all[] = {g, avg, mx, x, h};
    TEST_RELEASE_ALL(all);
}
END_TEST

/* An empty input's output is empty whatever the sizes asked: returned at once, of the shape
 * asked, with no work sized by its dimensions (adaptive pooling once looped over INT_MAX
 * windows of nothing, pad and interpolate sized index arrays by them). */
START_TEST(test_sizes_empty_input)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = input(dev, CLT_SHAPE(0, 2, 4, 4));
    int64_t big = (int64_t)1 << 40;
    clt_tensor *y[3] = {clt_pad(x, 2, (int64_t[]){big, big}, CLT_PAD_REPLICATE, 0),
                        clt_interpolate2d(x, 1 << 30, 1 << 30, CLT_INTERPOLATE_BILINEAR, false),
                        clt_adaptive_avg_pool2d(x, INT_MAX, INT_MAX)};
    const int64_t want[3][4] = {{0, 2, 4, 2 * big + 4},
                                {0, 2, 1 << 30, 1 << 30},
                                {0, 2, INT_MAX, INT_MAX}};
    for (int k = 0; k < 3; k++) {
        ck_assert_msg(y[k] != NULL, "%d: %s", k, clt_last_error());
        ck_assert_int_eq(clt_tensor_numel(y[k]), 0);
        for (int d = 0; d < 4; d++)
            ck_assert_int_eq(clt_tensor_shape(y[k])[d], want[k][d]);
    }
    TEST_RELEASE_ALL(y);
    clt_tensor_release(x);
}
END_TEST

/* Under CLT_DEVICE_MEMORY_LIMIT an output beyond it is refused before any work, as one beyond
 * the device's largest allocation. */
START_TEST(test_sizes_memory_limit)
{
    clt_device *dev = test_device(_i);
    setenv("CLT_DEVICE_MEMORY_LIMIT", "1M", 1);
    clt_tensor *x = input(dev, CLT_SHAPE(1, 2, 3));
    REFUSED(clt_pad(x, 2, (int64_t[]){0, 300000}, CLT_PAD_REPLICATE, 0), too_big(dev), "clt_pad",
            "the output (1, 2, 300003) of f32 needs 2400024 bytes, more than the 1048576 that");
    ck_assert_error_has("(its memory, or CLT_DEVICE_MEMORY_LIMIT)");
    clt_tensor_release(x);
}
END_TEST

/* The new paths under allocation failures: adaptive pooling as weighted gathers (3x50 to
 * 20x7), interpolate columns first, an empty input's resized output, and a loss over no class.
 * Each failure must name the op and leak nothing (test_fault_sweep). */
typedef struct sized_case {
    int which;
    clt_tensor *x, *wide, *empty, *no_class, *ignored;
} sized_case;

static bool run_sized_case(void *ctx)
{
    sized_case *c = ctx;
    clt_tensor *r = NULL;
    switch (c->which) {
    case 0: r = clt_adaptive_avg_pool2d(c->x, 20, 7); break;
    case 1: r = clt_interpolate2d(c->wide, 8, 1, CLT_INTERPOLATE_BILINEAR, false); break;
    case 2: r = clt_pad(c->empty, 2, (int64_t[]){1 << 20, 3}, CLT_PAD_REPLICATE, 0); break;
    default: r = clt_cross_entropy(c->no_class, c->ignored, NULL); break;
    }
    clt_tensor_release(r);
    return r != NULL;
}

START_TEST(test_sizes_allocation_failures)
{
    clt_device *dev = test_device(_i);
    static const char *const fns[] = {"clt_adaptive_avg_pool2d", "clt_interpolate2d", "clt_pad",
                                      "clt_cross_entropy"};
    sized_case c = {.x = input(dev, CLT_SHAPE(1, 3, 50)),
                    .wide = input(dev, CLT_SHAPE(1, 1, 2, 64)),
                    .empty = input(dev, CLT_SHAPE(0, 2, 3)),
                    .no_class = input(dev, CLT_SHAPE(3, 0)),
                    .ignored = clt_tensor_full(CLT_SHAPE(3), -100, CLT_I64, dev)};
    ck_assert_ptr_nonnull(c.ignored);
    for (c.which = 0; c.which < 4; c.which++) {
        ck_assert_int_gt(test_fault_sweep(run_sized_case, &c, fns[c.which], CLT__HOST), 0);
        test_fault_sweep(run_sized_case, &c, fns[c.which], CLT__DEVICE);
    }
    clt_tensor *all[] = {c.ignored, c.no_class, c.empty, c.wide, c.x};
    TEST_RELEASE_ALL(all);
}
END_TEST

Suite *suite_sizes(void)
{
    Suite *s = suite_create("sizes");
    TCase *tc = test_case("sizes", 300);
    ADD_DEVICE_TEST(tc, test_sizes_pad);
    ADD_DEVICE_TEST(tc, test_sizes_interpolate);
    ADD_DEVICE_TEST(tc, test_sizes_adaptive_pool);
    ADD_DEVICE_TEST(tc, test_sizes_windows);
    ADD_DEVICE_TEST(tc, test_sizes_huge_window);
    ADD_DEVICE_TEST(tc, test_sizes_empty_input);
    ADD_DEVICE_TEST(tc, test_sizes_memory_limit);
    ADD_DEVICE_TEST(tc, test_sizes_allocation_failures);
    suite_add_tcase(s, tc);
    return s;
}
