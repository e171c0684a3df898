/* The tensor suite: creation from data and by fills, arange, the random generator, bad input,
 * reference counting, host access, PyTorch-style printing and allocation failures. Tests that
 * depend on a device run once per device: index 0 is cpu, index i is gpu:(i-1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "helpers.h"

static const clt_dtype all_dtypes[] = {CLT_F32, CLT_F64, CLT_F16, CLT_BF16,
                                       CLT_I32, CLT_I64, CLT_U8,  CLT_BOOL};
#define N_DTYPES ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))

static const clt_dtype float_dtypes[] = {CLT_F32, CLT_F64, CLT_F16, CLT_BF16};
#define N_FLOAT_DTYPES ((int)(sizeof float_dtypes / sizeof float_dtypes[0]))

/* Asserts that the last error's message begins with `prefix` (the function's name). */
#define ck_assert_error_starts(prefix)                                                         \
    ck_assert_msg(strncmp(clt_last_error(), prefix, strlen(prefix)) == 0,                      \
                  "last error \"%s\" does not start with \"%s\"", clt_last_error(), prefix)

/* Asserts a failed creation: NULL, the status and a message naming the function. */
#define ck_assert_fails(expr, status, fn_prefix)                                               \
    do {                                                                                       \
        clt_clear_error();                                                                     \
        clt_tensor *failed_ = (expr);                                                          \
        ck_assert_ptr_null(failed_);                                                           \
        ck_assert_msg(clt_last_status() == (status), "%s: status %s, expected %s", #expr,     \
                      clt_status_name(clt_last_status()), clt_status_name(status));            \
        ck_assert_error_starts(fn_prefix);                                                     \
    } while (0)

/* Whether the device holds f64 tensors. */
static bool has_f64(const clt_device *dev)
{
    return clt_device_get_info(dev)->fp64;
}

/* Element k of a buffer of `size`-byte elements, as an unsigned integer of its bits. */
static uint64_t elem_bits(const void *bytes, size_t size, size_t k)
{
    const unsigned char *p = (const unsigned char *)bytes + k * size;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (size) {
    case 1: memcpy(&u8, p, 1); return u8;
    case 2: memcpy(&u16, p, 2); return u16;
    case 4: memcpy(&u32, p, 4); return u32;
    default: memcpy(&u64, p, 8); return u64;
    }
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* Fills `out` with `n` distinct, valid values of dtype (n <= 6). */
static void sample_values(clt_dtype dtype, void *out, int n)
{
    static const float f32[] = {1.5f, -2.25f, 0.0f, 3.0e38f, -1.0e-40f, 7.0f};
    static const double f64[] = {1.5, -2.25, 0.0, 1.0e300, -4.9e-324, 0.1};
    static const uint16_t f16[] = {0x3e00, 0xc080, 0x0000, 0x7bff, 0x8001, 0x7c00};
    static const uint16_t bf16[] = {0x3fc0, 0xc010, 0x0000, 0x7f7f, 0x8001, 0xff80};
    static const int32_t i32[] = {1, -2, 0, INT32_MAX, INT32_MIN, 123456};
    static const int64_t i64[] = {1, -2, 0, INT64_MAX, INT64_MIN, 1234567890123LL};
    static const uint8_t u8[] = {1, 254, 0, 255, 128, 7};
    static const uint8_t b8[] = {1, 0, 0, 1, 1, 0};
    const void *src = NULL;
    switch (dtype) {
    case CLT_F32: src = f32; break;
    case CLT_F64: src = f64; break;
    case CLT_F16: src = f16; break;
    case CLT_BF16: src = bf16; break;
    case CLT_I32: src = i32; break;
    case CLT_I64: src = i64; break;
    case CLT_U8: src = u8; break;
    case CLT_BOOL: src = b8; break;
    default: ck_abort_msg("no sample values for dtype %d", (int)dtype);
    }
    memcpy(out, src, (size_t)n * clt_dtype_size(dtype));
}

/* ---- from_data and properties ---------------------------------------------------------------- */

START_TEST(test_from_data_round_trip)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();

    for (int d = 0; d < N_DTYPES; d++) {
        clt_dtype dtype = all_dtypes[d];
        size_t size = clt_dtype_size(dtype);
        unsigned char data[6 * 8], scalar[8];
        clt_tensor *t;
        void *back;

        if (dtype == CLT_F64 && !has_f64(dev))
            continue;
        /* (2, 3) */
        sample_values(dtype, data, 6);
        t = clt_tensor_from_data(CLT_SHAPE(2, 3), data, dtype, dev);
        ck_assert_msg(t != NULL, "%s: %s", clt_dtype_name(dtype), clt_last_error());
        ck_assert_int_eq(clt_tensor_ndim(t), 2);
        ck_assert_int_eq(clt_tensor_shape(t)[0], 2);
        ck_assert_int_eq(clt_tensor_shape(t)[1], 3);
        ck_assert_int_eq(clt_tensor_numel(t), 6);
        ck_assert_int_eq(clt_tensor_dtype(t), dtype);
        ck_assert_ptr_eq(clt_tensor_device(t), dev);
        back = test_bytes(t);
        ck_assert_msg(memcmp(back, data, 6 * size) == 0, "%s: bytes differ on %s",
                      clt_dtype_name(dtype), clt_device_name(dev));
        free(back);
        clt_tensor_release(t);

        /* 0-d: one element, no shape */
        sample_values(dtype, scalar, 1);
        t = clt_tensor_from_data(0, NULL, scalar, dtype, dev);
        ck_assert_msg(t != NULL, "%s: %s", clt_dtype_name(dtype), clt_last_error());
        ck_assert_int_eq(clt_tensor_ndim(t), 0);
        ck_assert_int_eq(clt_tensor_numel(t), 1);
        ck_assert_int_eq(clt_tensor_size(t, 0), -1);
        ck_assert_int_eq(clt_tensor_size(t, -1), -1);
        back = test_bytes(t);
        ck_assert_int_eq(memcmp(back, scalar, size), 0);
        free(back);
        clt_tensor_release(t);

        /* (0, 3): no elements */
        t = clt_tensor_from_data(CLT_SHAPE(0, 3), data, dtype, dev);
        ck_assert_msg(t != NULL, "%s: %s", clt_dtype_name(dtype), clt_last_error());
        ck_assert_int_eq(clt_tensor_ndim(t), 2);
        ck_assert_int_eq(clt_tensor_size(t, 0), 0);
        ck_assert_int_eq(clt_tensor_size(t, 1), 3);
        ck_assert_int_eq(clt_tensor_numel(t), 0);
        ck_assert_int_eq(clt_tensor_dtype(t), dtype);
        ck_assert_int_eq(clt_tensor_copy_to_host(t, NULL, 0), CLT_OK);
        clt_tensor_release(t);
    }
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

START_TEST(test_properties)
{
    clt_device *dev = test_device(_i);
    clt_tensor *t = clt_tensor_zeros(CLT_SHAPE(2, 3, 4), CLT_I32, dev);

    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(clt_tensor_ndim(t), 3);
    ck_assert_int_eq(clt_tensor_shape(t)[0], 2);
    ck_assert_int_eq(clt_tensor_shape(t)[1], 3);
    ck_assert_int_eq(clt_tensor_shape(t)[2], 4);
    ck_assert_int_eq(clt_tensor_size(t, 0), 2);
    ck_assert_int_eq(clt_tensor_size(t, 1), 3);
    ck_assert_int_eq(clt_tensor_size(t, 2), 4);
    ck_assert_int_eq(clt_tensor_size(t, -1), 4);
    ck_assert_int_eq(clt_tensor_size(t, -2), 3);
    ck_assert_int_eq(clt_tensor_size(t, -3), 2);
    ck_assert_int_eq(clt_tensor_size(t, 3), -1);
    ck_assert_int_eq(clt_tensor_size(t, -4), -1);
    ck_assert_int_eq(clt_tensor_size(t, 100), -1);
    ck_assert_int_eq(clt_tensor_numel(t), 24);
    ck_assert_int_eq(clt_tensor_dtype(t), CLT_I32);
    ck_assert_ptr_eq(clt_tensor_device(t), dev);
    ck_assert_str_eq(clt_device_name(clt_tensor_device(t)), clt_device_name(dev));
    clt_tensor_release(t);

    /* the accessors accept NULL */
    ck_assert_int_eq(clt_tensor_ndim(NULL), 0);
    ck_assert_ptr_null(clt_tensor_shape(NULL));
    ck_assert_int_eq(clt_tensor_size(NULL, 0), -1);
    ck_assert_int_eq(clt_tensor_numel(NULL), 0);
    ck_assert_int_eq(clt_tensor_dtype(NULL), CLT_DTYPE_NONE);
    ck_assert_ptr_null(clt_tensor_device(NULL));

    /* item: the one element of any dtype as a double */
    static const clt_dtype dts[] = {CLT_F32, CLT_F64, CLT_F16, CLT_BF16, CLT_I32, CLT_I64, CLT_U8, CLT_BOOL};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        double v = -1;
        if (!test_has_dtype(dev, dts[k]))
            continue;
        clt_tensor *one = clt_tensor_full(CLT_SHAPE(1, 1), dts[k] == CLT_BOOL ? 1 : 3.5, dts[k], dev);
        ck_assert_int_eq(clt_tensor_item(one, &v), CLT_OK);
        double want = dts[k] == CLT_BOOL ? 1 : k < 4 ? 3.5 : 3; /* the first four are floating */
        ck_assert_msg(v == want, "item of %s: %g", clt_dtype_name(dts[k]), v);
        clt_tensor_release(one);
    }
    double v = 7;
    t = clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, dev);
    ck_assert_int_eq(clt_tensor_item(t, &v), CLT_ERR_SHAPE);
    ck_assert_str_eq(clt_last_error(), "clt_tensor_item: a tensor of shape (2,) has 2 elements, not one");
    ck_assert(v == 7);
    clt_tensor_release(t);
}
END_TEST

/* ---- zeros, ones, full ------------------------------------------------------------------------- */

/* Asserts that every element of t has the bits `bits`. */
static void check_all_bits(const clt_tensor *t, uint64_t bits, const char *what)
{
    size_t size = clt_dtype_size(clt_tensor_dtype(t));
    void *p = test_bytes(t);
    for (int64_t k = 0; k < clt_tensor_numel(t); k++) {
        uint64_t got = elem_bits(p, size, (size_t)k);
        ELEMENT_CHECK(got == bits, "%s as %s on %s: element %lld is 0x%llx, expected 0x%llx",
                      what, clt_dtype_name(clt_tensor_dtype(t)),
                      clt_device_name(clt_tensor_device(t)), (long long)k,
                      (unsigned long long)got, (unsigned long long)bits);
    }
    free(p);
}

START_TEST(test_zeros_ones)
{
    static const uint64_t one_bits[CLT_DTYPE_COUNT] = {
        [CLT_F32] = 0x3f800000u, [CLT_F64] = 0x3ff0000000000000u, [CLT_F16] = 0x3c00,
        [CLT_BF16] = 0x3f80,     [CLT_I32] = 1, [CLT_I64] = 1, [CLT_U8] = 1, [CLT_BOOL] = 1,
    };
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();

    for (int d = 0; d < N_DTYPES; d++) {
        clt_dtype dtype = all_dtypes[d];
        clt_tensor *t;
        if (dtype == CLT_F64 && !has_f64(dev))
            continue;
        t = clt_tensor_zeros(CLT_SHAPE(3, 5), dtype, dev);
        ck_assert_msg(t != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt_tensor_numel(t), 15);
        ck_assert_int_eq(clt_tensor_dtype(t), dtype);
        check_all_bits(t, 0, "zeros");
        clt_tensor_release(t);

        t = clt_tensor_ones(CLT_SHAPE(3, 5), dtype, dev);
        ck_assert_msg(t != NULL, "%s", clt_last_error());
        check_all_bits(t, one_bits[dtype], "ones");
        clt_tensor_release(t);

        t = clt_tensor_ones(0, NULL, dtype, dev);
        ck_assert_msg(t != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt_tensor_ndim(t), 0);
        ck_assert_int_eq(clt_tensor_numel(t), 1);
        check_all_bits(t, one_bits[dtype], "0-d ones");
        clt_tensor_release(t);

        t = clt_tensor_zeros(CLT_SHAPE(4, 0), dtype, dev);
        ck_assert_msg(t != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt_tensor_numel(t), 0);
        clt_tensor_release(t);
    }
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

START_TEST(test_full_conversions)
{
    static const struct {
        double value;
        clt_dtype dtype;
        uint64_t bits;
    } cases[] = {
        /* float -> integer truncates toward zero, saturates, NaN -> 0 */
        {2.7, CLT_I32, 2},
        {-2.7, CLT_I32, 0xfffffffeu},
        {1.0e10, CLT_I32, 0x7fffffffu},
        {-1.0e10, CLT_I32, 0x80000000u},
        {NAN, CLT_I32, 0},
        {3.0e9, CLT_I64, 3000000000u},
        {-2.5, CLT_I64, 0xfffffffffffffffeu},
        {1.0e19, CLT_I64, 0x7fffffffffffffffu},
        {-1.0e19, CLT_I64, 0x8000000000000000u},
        {NAN, CLT_I64, 0},
        {-1.0, CLT_U8, 0},
        {300.0, CLT_U8, 255},
        {255.9, CLT_U8, 255},
        {7.9, CLT_U8, 7},
        {NAN, CLT_U8, 0},
        /* f16: round to nearest even, overflow to inf, NaN 0x7e00 with its sign */
        {1.0, CLT_F16, 0x3c00},
        {0.1, CLT_F16, 0x2e66},
        {NAN, CLT_F16, 0x7e00},
        {-NAN, CLT_F16, 0xfe00},
        {65519.0, CLT_F16, 0x7bff},
        {65520.0, CLT_F16, 0x7c00},
        {-1.0e6, CLT_F16, 0xfc00},
        {0x1p-24, CLT_F16, 0x0001},
        {1.0e-9, CLT_F16, 0x0000},
        /* bf16 */
        {1.0, CLT_BF16, 0x3f80},
        {-2.0, CLT_BF16, 0xc000},
        {1.00390625, CLT_BF16, 0x3f80}, /* 1 + 2^-8: a tie, to even */
        {1.01171875, CLT_BF16, 0x3f82}, /* 1 + 3 * 2^-8: a tie, to even */
        {NAN, CLT_BF16, 0x7fc0},
        {1.0e39, CLT_BF16, 0x7f80},
        /* f32 and f64 */
        {0.1, CLT_F32, 0x3dcccccdu},
        {-0.0, CLT_F32, 0x80000000u},
        {1.0e39, CLT_F32, 0x7f800000u},
        {-1.0e39, CLT_F32, 0xff800000u},
        {0.1, CLT_F64, 0x3fb999999999999au},
        {-0.0, CLT_F64, 0x8000000000000000u},
        /* bool is (x != 0) */
        {0.5, CLT_BOOL, 1},
        {0.0, CLT_BOOL, 0},
        {-0.0, CLT_BOOL, 0},
        {-3.0, CLT_BOOL, 1},
        {NAN, CLT_BOOL, 1},
    };
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();

    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char what[64];
        clt_tensor *t;
        if (cases[c].dtype == CLT_F64 && !has_f64(dev))
            continue;
        t = clt_tensor_full(CLT_SHAPE(5), cases[c].value, cases[c].dtype, dev);
        ck_assert_msg(t != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt_tensor_dtype(t), cases[c].dtype);
        snprintf(what, sizeof what, "full(%g) (case %zu)", cases[c].value, c);
        check_all_bits(t, cases[c].bits, what);
        clt_tensor_release(t);
    }
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* ---- arange ---------------------------------------------------------------------------------- */

START_TEST(test_arange)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    clt_tensor *t;
    float f[5];
    int64_t l[3];
    int32_t n[3];

    t = clt_tensor_arange(0, 5, 1, CLT_F32, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_ndim(t), 1);
    ck_assert_int_eq(clt_tensor_size(t, 0), 5);
    ck_assert_int_eq(clt_tensor_dtype(t), CLT_F32);
    ck_assert_int_eq(clt_tensor_copy_to_host(t, f, sizeof f), CLT_OK);
    for (int k = 0; k < 5; k++)
        ck_assert_uint_eq(f32_bits(f[k]), f32_bits((float)k));
    clt_tensor_release(t);

    if (has_f64(dev)) {
        double v[4];
        static const double approx[4] = {1.0, 1.3, 1.6, 1.9};
        t = clt_tensor_arange(1, 2, 0.3, CLT_F64, dev);
        ck_assert_msg(t != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt_tensor_numel(t), 4);
        ck_assert_int_eq(clt_tensor_copy_to_host(t, v, sizeof v), CLT_OK);
        for (int k = 0; k < 4; k++) {
            ck_assert_uint_eq(f64_bits(v[k]), f64_bits(1.0 + (double)k * 0.3));
            ck_assert_double_eq_tol(v[k], approx[k], 1e-12);
        }
        clt_tensor_release(t);
    }

    /* f32 elements are the f64 values rounded once */
    t = clt_tensor_arange(1, 2, 0.3, CLT_F32, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(t), 4);
    ck_assert_int_eq(clt_tensor_copy_to_host(t, f, 4 * sizeof f[0]), CLT_OK);
    for (int k = 0; k < 4; k++)
        ck_assert_uint_eq(f32_bits(f[k]), f32_bits((float)(1.0 + (double)k * 0.3)));
    clt_tensor_release(t);

    t = clt_tensor_arange(5, 0, -2, CLT_I64, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(t), 3);
    ck_assert_int_eq(clt_tensor_dtype(t), CLT_I64);
    ck_assert_int_eq(clt_tensor_copy_to_host(t, l, sizeof l), CLT_OK);
    ck_assert_int_eq(l[0], 5);
    ck_assert_int_eq(l[1], 3);
    ck_assert_int_eq(l[2], 1);
    clt_tensor_release(t);

    /* 0.5, 1.5, 2.5 truncated */
    t = clt_tensor_arange(0.5, 3, 1, CLT_I32, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(t), 3);
    ck_assert_int_eq(clt_tensor_copy_to_host(t, n, sizeof n), CLT_OK);
    ck_assert_int_eq(n[0], 0);
    ck_assert_int_eq(n[1], 1);
    ck_assert_int_eq(n[2], 2);
    clt_tensor_release(t);

    /* empty range */
    t = clt_tensor_arange(3, 3, 1, CLT_F32, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_ndim(t), 1);
    ck_assert_int_eq(clt_tensor_size(t, 0), 0);
    clt_tensor_release(t);

    ck_assert_fails(clt_tensor_arange(0, 5, 0, CLT_F32, dev), CLT_ERR_INVALID_ARGUMENT,
                    "clt_tensor_arange: ");
    ck_assert_fails(clt_tensor_arange(0, 5, -1, CLT_F32, dev), CLT_ERR_INVALID_ARGUMENT,
                    "clt_tensor_arange: ");
    ck_assert_fails(clt_tensor_arange(5, 0, 1, CLT_F32, dev), CLT_ERR_INVALID_ARGUMENT,
                    "clt_tensor_arange: ");
    ck_assert_fails(clt_tensor_arange(NAN, 5, 1, CLT_F32, dev), CLT_ERR_INVALID_ARGUMENT,
                    "clt_tensor_arange: ");
    ck_assert_fails(clt_tensor_arange(0, INFINITY, 1, CLT_F32, dev), CLT_ERR_INVALID_ARGUMENT,
                    "clt_tensor_arange: ");
    ck_assert_fails(clt_tensor_arange(0, 5, NAN, CLT_F32, dev), CLT_ERR_INVALID_ARGUMENT,
                    "clt_tensor_arange: ");
    ck_assert_fails(clt_tensor_arange(0, 5, -INFINITY, CLT_F32, dev), CLT_ERR_INVALID_ARGUMENT,
                    "clt_tensor_arange: ");
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* ---- random ---------------------------------------------------------------------------------- */

typedef clt_tensor *(*random_fn)(int, const int64_t *, clt_dtype, clt_device *);

/* Asserts that t and u hold the same bytes. */
static void check_same_bytes(const clt_tensor *t, const clt_tensor *u, const char *what)
{
    size_t nbytes = (size_t)clt_tensor_numel(t) * clt_dtype_size(clt_tensor_dtype(t));
    void *a = test_bytes(t), *b = test_bytes(u);
    ck_assert_int_eq(clt_tensor_numel(t), clt_tensor_numel(u));
    ck_assert_int_eq(clt_tensor_dtype(t), clt_tensor_dtype(u));
    ck_assert_msg(memcmp(a, b, nbytes) == 0, "%s: %s on %s differs from %s", what,
                  clt_dtype_name(clt_tensor_dtype(t)), clt_device_name(clt_tensor_device(t)),
                  clt_device_name(clt_tensor_device(u)));
    free(a);
    free(b);
}

START_TEST(test_random_matches_cpu)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    static const random_fn fns[2] = {clt_tensor_rand, clt_tensor_randn};
    static const char *const names[2] = {"rand", "randn"};
    test_live before;

    /* the first use of each kernel builds and caches it: not a leak */
    for (int r = 0; r < 2; r++)
        for (int d = 0; d < N_FLOAT_DTYPES; d++) {
            clt_tensor *w;
            if (float_dtypes[d] == CLT_F64 && !has_f64(dev))
                continue;
            w = fns[r](CLT_SHAPE(1), float_dtypes[d], dev);
            ck_assert_msg(w != NULL, "%s", clt_last_error());
            clt_tensor_release(w);
        }
    before = test_live_now();

    for (int r = 0; r < 2; r++) {
        for (int d = 0; d < N_FLOAT_DTYPES; d++) {
            clt_dtype dtype = float_dtypes[d];
            clt_tensor *a, *b, *c, *ha, *hb, *hc;
            if (dtype == CLT_F64 && !has_f64(dev))
                continue;
            /* 15, then 7 and 5 (not multiples of 4 or 2): counters must advance alike */
            clt_manual_seed(1234 + (uint64_t)d);
            a = fns[r](CLT_SHAPE(3, 5), dtype, dev);
            b = fns[r](CLT_SHAPE(7), dtype, dev);
            c = fns[r](CLT_SHAPE(5), dtype, dev);
            ck_assert_msg(a && b && c, "%s: %s", names[r], clt_last_error());
            clt_manual_seed(1234 + (uint64_t)d);
            ha = fns[r](CLT_SHAPE(3, 5), dtype, cpu);
            hb = fns[r](CLT_SHAPE(7), dtype, cpu);
            hc = fns[r](CLT_SHAPE(5), dtype, cpu);
            ck_assert_msg(ha && hb && hc, "%s: %s", names[r], clt_last_error());
            check_same_bytes(a, ha, names[r]);
            check_same_bytes(b, hb, names[r]);
            check_same_bytes(c, hc, names[r]);
            clt_tensor_release(a);
            clt_tensor_release(b);
            clt_tensor_release(c);
            clt_tensor_release(ha);
            clt_tensor_release(hb);
            clt_tensor_release(hc);
        }
    }
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Element k of a floating tensor's bytes as a double. */
static double float_value(const void *bytes, clt_dtype dtype, size_t k)
{
    uint32_t u;
    float f;
    double d;
    switch (dtype) {
    case CLT_F32: memcpy(&f, (const char *)bytes + 4 * k, 4); return f;
    case CLT_F64: memcpy(&d, (const char *)bytes + 8 * k, 8); return d;
    case CLT_BF16:
        u = (uint32_t)elem_bits(bytes, 2, k) << 16;
        memcpy(&f, &u, 4);
        return f;
    case CLT_F16: {
        uint32_t h = (uint32_t)elem_bits(bytes, 2, k), e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                    : ldexp(m + 1024, (int)e - 25);
        return (h & 0x8000) ? -v : v;
    }
    default: ck_abort_msg("not a floating dtype"); return 0;
    }
}

START_TEST(test_rand_uniform_range)
{
    clt_device *dev = test_device(_i);
    const int64_t n = 16384;
    char report[512] = "";
    size_t used = 0;

    for (int d = 0; d < N_FLOAT_DTYPES; d++) {
        clt_dtype dtype = float_dtypes[d];
        clt_tensor *t;
        void *p;
        double lo = 1, hi = 0;
        int64_t ones = 0;
        if (dtype == CLT_F64 && !has_f64(dev))
            continue;
        clt_manual_seed(42);
        t = clt_tensor_rand(1, &n, dtype, dev);
        ck_assert_msg(t != NULL, "%s", clt_last_error());
        p = test_bytes(t);
        for (int64_t k = 0; k < n; k++) {
            double v = float_value(p, dtype, (size_t)k);
            ELEMENT_CHECK(v >= 0.0, "%s: element %lld is %g", clt_dtype_name(dtype),
                          (long long)k, v);
            ones += v >= 1.0;
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
        if (ones != 0 && used < sizeof report)
            used += (size_t)snprintf(report + used, sizeof report - used,
                                     " %s: %lld of %lld values are 1.0;", clt_dtype_name(dtype),
                                     (long long)ones, (long long)n);
        /* the values spread over the interval */
        ck_assert_double_lt(lo, 0.01);
        ck_assert_double_gt(hi, 0.99);
        free(p);
        clt_tensor_release(t);
    }
    /* every dtype is checked before failing, so the report names all of them */
    ck_assert_msg(used == 0, "rand on %s gives values outside [0, 1):%s", clt_device_name(dev),
                  report);
}
END_TEST

START_TEST(test_rand_sequence_and_seed)
{
    clt_device *dev = test_device(_i);
    test_live before;
    clt_tensor *first, *a, *b, *again, *other;
    void *pa, *pb, *pfirst;

    /* the generator starts with seed 0; this first call also builds the device's kernels */
    first = clt_tensor_rand(CLT_SHAPE(16), CLT_F32, dev);
    ck_assert_msg(first != NULL, "%s", clt_last_error());
    pfirst = test_bytes(first);
    clt_tensor_release(first);
    before = test_live_now();
    clt_manual_seed(0);
    a = clt_tensor_rand(CLT_SHAPE(16), CLT_F32, dev);
    ck_assert_ptr_nonnull(a);
    pa = test_bytes(a);
    ck_assert_msg(memcmp(pa, pfirst, 16 * sizeof(float)) == 0,
                  "the start-up values differ from those of seed 0");
    free(pa);
    free(pfirst);

    /* successive calls differ; re-seeding repeats them */
    b = clt_tensor_rand(CLT_SHAPE(16), CLT_F32, dev);
    ck_assert_ptr_nonnull(b);
    pa = test_bytes(a);
    pb = test_bytes(b);
    ck_assert_int_ne(memcmp(pa, pb, 16 * sizeof(float)), 0);
    for (int k = 1; k < 16; k++)
        ck_assert_uint_ne(elem_bits(pa, 4, (size_t)k), elem_bits(pa, 4, 0));
    free(pa);
    free(pb);
    clt_manual_seed(0);
    again = clt_tensor_rand(CLT_SHAPE(16), CLT_F32, dev);
    ck_assert_ptr_nonnull(again);
    check_same_bytes(again, a, "re-seeded");
    clt_tensor_release(again);
    again = clt_tensor_rand(CLT_SHAPE(16), CLT_F32, dev);
    ck_assert_ptr_nonnull(again);
    check_same_bytes(again, b, "re-seeded, second call");

    /* another seed, other values */
    clt_manual_seed(1);
    other = clt_tensor_rand(CLT_SHAPE(16), CLT_F32, dev);
    ck_assert_ptr_nonnull(other);
    pa = test_bytes(a);
    pb = test_bytes(other);
    ck_assert_int_ne(memcmp(pa, pb, 16 * sizeof(float)), 0);
    free(pa);
    free(pb);

    clt_tensor_release(a);
    clt_tensor_release(b);
    clt_tensor_release(again);
    clt_tensor_release(other);
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

START_TEST(test_randn_statistics)
{
    clt_device *dev = test_device(_i);
    const int64_t n = 100000;

    for (int d = 0; d < 2; d++) {
        clt_dtype dtype = d == 0 ? CLT_F32 : CLT_F64;
        double sum = 0, sq = 0, mean, sd;
        clt_tensor *t;
        void *p;
        if (dtype == CLT_F64 && !has_f64(dev))
            continue;
        clt_manual_seed(7);
        t = clt_tensor_randn(1, &n, dtype, dev);
        ck_assert_msg(t != NULL, "%s", clt_last_error());
        p = test_bytes(t);
        for (int64_t k = 0; k < n; k++) {
            double v = float_value(p, dtype, (size_t)k);
            ELEMENT_CHECK(isfinite(v), "element %lld is %g", (long long)k, v);
            sum += v;
            sq += v * v;
        }
        mean = sum / (double)n;
        sd = sqrt(sq / (double)n - mean * mean);
        ck_assert_msg(fabs(mean) < 0.02, "randn %s on %s: mean %g", clt_dtype_name(dtype),
                      clt_device_name(dev), mean);
        ck_assert_msg(fabs(sd - 1.0) < 0.02, "randn %s on %s: std %g", clt_dtype_name(dtype),
                      clt_device_name(dev), sd);
        free(p);
        clt_tensor_release(t);
    }
}
END_TEST

START_TEST(test_random_bad_dtype)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    ck_assert_fails(clt_tensor_rand(CLT_SHAPE(4), CLT_I32, dev), CLT_ERR_DTYPE,
                    "clt_tensor_rand: ");
    ck_assert_error_has("i32");
    ck_assert_fails(clt_tensor_rand(CLT_SHAPE(4), CLT_U8, dev), CLT_ERR_DTYPE,
                    "clt_tensor_rand: ");
    ck_assert_fails(clt_tensor_randn(CLT_SHAPE(4), CLT_I64, dev), CLT_ERR_DTYPE,
                    "clt_tensor_randn: ");
    ck_assert_fails(clt_tensor_randn(CLT_SHAPE(4), CLT_BOOL, dev), CLT_ERR_DTYPE,
                    "clt_tensor_randn: ");
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* ---- bad input ------------------------------------------------------------------------------- */

START_TEST(test_bad_shapes)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t overflow[2] = {INT64_MAX / 2, 4};
    const int64_t too_many_bytes[2] = {INT64_MAX / 4, 4};
    float data[4] = {0};

    ck_assert_fails(clt_tensor_zeros(9, nine, CLT_F32, dev), CLT_ERR_SHAPE, "clt_tensor_zeros: ");
    ck_assert_error_has("9");
    ck_assert_fails(clt_tensor_empty(9, nine, CLT_F32, dev), CLT_ERR_SHAPE, "clt_tensor_empty: ");
    ck_assert_fails(clt_tensor_from_data(9, nine, data, CLT_F32, dev), CLT_ERR_SHAPE,
                    "clt_tensor_from_data: ");
    ck_assert_fails(clt_tensor_ones(-1, nine, CLT_F32, dev), CLT_ERR_SHAPE, "clt_tensor_ones: ");
    ck_assert_error_has("-1");

    ck_assert_fails(clt_tensor_zeros(CLT_SHAPE(2, -3), CLT_F32, dev), CLT_ERR_SHAPE,
                    "clt_tensor_zeros: ");
    ck_assert_error_has("-3");
    ck_assert_fails(clt_tensor_full(CLT_SHAPE(-7), 1.0, CLT_I32, dev), CLT_ERR_SHAPE,
                    "clt_tensor_full: ");
    ck_assert_error_has("-7");
    ck_assert_fails(clt_tensor_rand(CLT_SHAPE(4, -1), CLT_F32, dev), CLT_ERR_SHAPE,
                    "clt_tensor_rand: ");
    ck_assert_fails(clt_tensor_randn(CLT_SHAPE(-2), CLT_F32, dev), CLT_ERR_SHAPE,
                    "clt_tensor_randn: ");

    ck_assert_fails(clt_tensor_zeros(2, overflow, CLT_F32, dev), CLT_ERR_SHAPE,
                    "clt_tensor_zeros: ");
    ck_assert_fails(clt_tensor_empty(2, overflow, CLT_U8, dev), CLT_ERR_SHAPE,
                    "clt_tensor_empty: ");
    ck_assert_fails(clt_tensor_empty(2, too_many_bytes, CLT_I64, dev), CLT_ERR_SHAPE,
                    "clt_tensor_empty: ");
    /* no elements, but strides that would overflow */
    const int64_t empty_huge[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
    ck_assert_fails(clt_tensor_empty(3, empty_huge, CLT_F32, dev), CLT_ERR_SHAPE,
                    "clt_tensor_empty: ");
    ck_assert_error_has("more elements than memory can hold");

    ck_assert_fails(clt_tensor_zeros(2, NULL, CLT_F32, dev), CLT_ERR_INVALID_ARGUMENT,
                    "clt_tensor_zeros: ");
    ck_assert_fails(clt_tensor_from_data(2, NULL, data, CLT_F32, dev), CLT_ERR_INVALID_ARGUMENT,
                    "clt_tensor_from_data: ");
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

START_TEST(test_bad_device_dtype_data)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    float data[4] = {1, 2, 3, 4};

    ck_assert_fails(clt_tensor_zeros(CLT_SHAPE(4), CLT_DTYPE_NONE, dev), CLT_ERR_DTYPE,
                    "clt_tensor_zeros: ");
    ck_assert_fails(clt_tensor_zeros(CLT_SHAPE(4), (clt_dtype)99, dev), CLT_ERR_DTYPE,
                    "clt_tensor_zeros: ");
    ck_assert_error_has("99");
    ck_assert_fails(clt_tensor_full(CLT_SHAPE(4), 1.0, CLT_DTYPE_COUNT, dev), CLT_ERR_DTYPE,
                    "clt_tensor_full: ");
    ck_assert_fails(clt_tensor_from_data(CLT_SHAPE(4), data, (clt_dtype)99, dev), CLT_ERR_DTYPE,
                    "clt_tensor_from_data: ");
    ck_assert_fails(clt_tensor_arange(0, 4, 1, CLT_DTYPE_NONE, dev), CLT_ERR_DTYPE,
                    "clt_tensor_arange: ");

    ck_assert_fails(clt_tensor_from_data(CLT_SHAPE(4), NULL, CLT_F32, dev),
                    CLT_ERR_INVALID_ARGUMENT, "clt_tensor_from_data: ");
    ck_assert_error_has("data");
    ck_assert_live_eq(test_live_now(), before);

    /* no device: cpu, whatever the current GPU or the default device */
    clt_tensor *made[] = {clt_tensor_zeros(CLT_SHAPE(4), CLT_F32, NULL),
                          clt_tensor_from_data(CLT_SHAPE(4), data, CLT_F32, NULL),
                          clt_tensor_rand(CLT_SHAPE(4), CLT_F32, NULL),
                          clt_tensor_arange(0, 4, 1, CLT_F32, NULL)};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
        ck_assert_msg(made[i] != NULL, "%s", clt_last_error());
        ck_assert_ptr_eq(clt_tensor_device(made[i]), clt_device_cpu());
        clt_tensor_release(made[i]);
    }
}
END_TEST

START_TEST(test_f64_unsupported)
{
    clt_device *dev = test_device(_i);
    struct clt_device *d = (struct clt_device *)dev;
    const clt_device_info *info = clt_device_get_info(dev);
    double one = 1.0;
    clt_tensor *t;
    test_live before;

    if (_i == 0)
        return; /* cpu always holds f64 */
    t = clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, dev); /* starts the device */
    ck_assert_ptr_nonnull(t);
    clt_tensor_release(t);
    before = test_live_now();
    d->info.fp64 = false;
    ck_assert(!info->fp64);

    ck_assert_fails(clt_tensor_zeros(CLT_SHAPE(2), CLT_F64, dev), CLT_ERR_UNSUPPORTED,
                    "clt_tensor_zeros: ");
    ck_assert_error_has("f64");
    ck_assert_error_has(clt_device_name(dev));
    ck_assert_error_has(info->name);
    ck_assert_fails(clt_tensor_from_data(0, NULL, &one, CLT_F64, dev), CLT_ERR_UNSUPPORTED,
                    "clt_tensor_from_data: ");
    ck_assert_fails(clt_tensor_rand(CLT_SHAPE(2), CLT_F64, dev), CLT_ERR_UNSUPPORTED,
                    "clt_tensor_rand: ");
    ck_assert_fails(clt_tensor_arange(0, 2, 1, CLT_F64, dev), CLT_ERR_UNSUPPORTED,
                    "clt_tensor_arange: ");

    /* other dtypes still work */
    t = clt_tensor_ones(CLT_SHAPE(2), CLT_F32, dev);
    ck_assert_ptr_nonnull(t);
    clt_tensor_release(t);
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* ---- references and host access -------------------------------------------------------------- */

START_TEST(test_retain_release)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    clt_tensor *t = clt_tensor_full(CLT_SHAPE(3), 4.0, CLT_I32, dev), *r;
    int32_t v[3];

    ck_assert_ptr_nonnull(t);
    r = clt_tensor_retain(t);
    ck_assert_ptr_eq(r, t);
    clt_tensor_release(t);
    /* still alive through the second reference */
    ck_assert_int_eq(clt_tensor_numel(r), 3);
    ck_assert_int_eq(clt_tensor_copy_to_host(r, v, sizeof v), CLT_OK);
    ck_assert_int_eq(v[0], 4);
    ck_assert_int_eq(v[2], 4);
    ck_assert_int_ne(test_live_now().host, before.host);
    clt_tensor_release(r);
    ck_assert_live_eq(test_live_now(), before);

    ck_assert_ptr_null(clt_tensor_retain(NULL));
    clt_tensor_release(NULL);
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

START_TEST(test_copy_to_host_errors)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    int32_t src[4] = {10, -20, 30, -40}, dst[5] = {0, 0, 0, 0, 99};
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(4), src, CLT_I32, dev);

    ck_assert_ptr_nonnull(t);
    clt_clear_error();
    ck_assert_int_eq(clt_tensor_copy_to_host(t, dst, 15), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_starts("clt_tensor_copy_to_host: ");
    ck_assert_error_has("16");
    ck_assert_int_eq(dst[0], 0);
    ck_assert_int_eq(clt_tensor_copy_to_host(t, NULL, 16), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_starts("clt_tensor_copy_to_host: ");
    ck_assert_int_eq(clt_tensor_copy_to_host(NULL, dst, sizeof dst), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_starts("clt_tensor_copy_to_host: ");

    /* exactly enough, and more than enough (the rest untouched) */
    ck_assert_int_eq(clt_tensor_copy_to_host(t, dst, 16), CLT_OK);
    ck_assert_int_eq(memcmp(dst, src, sizeof src), 0);
    memset(dst, 0, 16);
    ck_assert_int_eq(clt_tensor_copy_to_host(t, dst, sizeof dst), CLT_OK);
    ck_assert_int_eq(memcmp(dst, src, sizeof src), 0);
    ck_assert_int_eq(dst[4], 99);
    clt_tensor_release(t);
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

START_TEST(test_tensor_data)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    float src[3] = {1.5f, -2.0f, 8.25f};
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(3), src, CLT_F32, dev);
    float *p;

    ck_assert_ptr_nonnull(t);
    clt_clear_error();
    p = clt_tensor_data(t);
    if (_i == 0) {
        float back[3];
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(memcmp(p, src, sizeof src), 0);
        /* the pointer is the tensor's own storage */
        p[1] = 42.0f;
        ck_assert_int_eq(clt_tensor_copy_to_host(t, back, sizeof back), CLT_OK);
        ck_assert_float_eq(back[1], 42.0f);
        ck_assert_ptr_eq(clt_tensor_data(t), p);
    } else {
        ck_assert_ptr_null(p);
        ck_assert_int_eq(clt_last_status(), CLT_ERR_DEVICE_MISMATCH);
        ck_assert_error_starts("clt_tensor_data: ");
        ck_assert_error_has(clt_device_name(dev));
    }
    clt_tensor_release(t);

    /* a cpu tensor without elements still has a (valid, unreadable) address */
    t = clt_tensor_empty(CLT_SHAPE(0, 4), CLT_F32, clt_device_cpu());
    ck_assert_ptr_nonnull(clt_tensor_data(t));
    clt_tensor_release(t);

    ck_assert_ptr_null(clt_tensor_data(NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Bool data: any nonzero byte is stored as 1, so bool converts to 0 or 1 everywhere. */
START_TEST(test_from_data_bool_bytes)
{
    static const uint8_t bytes[5] = {0, 2, 255, 1, 0x80};
    static const uint8_t want[5] = {0, 1, 1, 1, 1};
    static const int32_t want32[5] = {0, 1, 1, 1, 1};
    clt_device *dev = test_device(_i);
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(5), bytes, CLT_BOOL, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    uint8_t back[5];
    int32_t back32[5];
    ck_assert_int_eq(clt_tensor_copy_to_host(t, back, sizeof back), CLT_OK);
    ck_assert_mem_eq(back, want, sizeof want);
    clt_tensor *i = clt_tensor_to_dtype(t, CLT_I32);
    ck_assert_ptr_nonnull(i);
    ck_assert_int_eq(clt_tensor_copy_to_host(i, back32, sizeof back32), CLT_OK);
    ck_assert_mem_eq(back32, want32, sizeof want32);
    clt_tensor_release(i);
    clt_tensor_release(t);
}
END_TEST

/* ---- printing -------------------------------------------------------------------------------- */

/* A tensor on dev from data; the test fails when it cannot be made. */
static clt_tensor *make(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                        const void *data)
{
    clt_tensor *t = clt_tensor_from_data(ndim, shape, data, dtype, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    return t;
}

/* Asserts clt_tensor_format(t) == body + the device suffix off cpu + ", dtype_suffix" + ")",
 * for tensors whose last line leaves room for the suffixes. Releases t. */
static void check_format(clt_tensor *t, const char *body, const char *dtype_suffix)
{
    char expected[8192];
    const clt_device *dev = clt_tensor_device(t);
    int n = snprintf(expected, sizeof expected, "%s", body);
    char *s;
    if (strcmp(clt_device_name(dev), "cpu") != 0)
        n += snprintf(expected + n, sizeof expected - (size_t)n, ", device='%s'",
                      clt_device_name(dev));
    if (dtype_suffix)
        n += snprintf(expected + n, sizeof expected - (size_t)n, ", %s", dtype_suffix);
    snprintf(expected + n, sizeof expected - (size_t)n, ")");
    s = clt_tensor_format(t);
    ck_assert_msg(s != NULL, "%s", clt_last_error());
    ck_assert_str_eq(s, expected);
    clt_free(s);
    clt_tensor_release(t);
}

START_TEST(test_format_basic)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();

    {
        const float v[] = {1.5f, -2.25f};
        check_format(make(dev, CLT_F32, CLT_SHAPE(1, 2), v), "tensor([[ 1.5000, -2.2500]]", NULL);
    }
    {
        const float v[] = {1, 2, 3};
        check_format(make(dev, CLT_F32, CLT_SHAPE(3), v), "tensor([1., 2., 3.]", NULL);
    }
    {
        const float v[] = {1e-5f, 1};
        check_format(make(dev, CLT_F32, CLT_SHAPE(2), v), "tensor([1.0000e-05, 1.0000e+00]",
                     NULL);
    }
    {
        const float v[] = {1e9f, 1};
        check_format(make(dev, CLT_F32, CLT_SHAPE(2), v), "tensor([1.0000e+09, 1.0000e+00]",
                     NULL);
    }
    {
        const float v[] = {100, -1, 0};
        check_format(make(dev, CLT_F32, CLT_SHAPE(3), v), "tensor([100.,  -1.,   0.]", NULL);
    }
    {
        const int32_t v[] = {1, 2, 3};
        check_format(make(dev, CLT_I32, CLT_SHAPE(3), v), "tensor([1, 2, 3]", "dtype=i32");
    }
    {
        const int64_t v[] = {1, -20, 300};
        check_format(make(dev, CLT_I64, CLT_SHAPE(3), v), "tensor([  1, -20, 300]", NULL);
    }
    {
        const uint8_t v[] = {0, 255};
        check_format(make(dev, CLT_U8, CLT_SHAPE(2), v), "tensor([  0, 255]", "dtype=u8");
    }
    {
        const uint8_t v[] = {1, 0};
        check_format(make(dev, CLT_BOOL, CLT_SHAPE(2), v), "tensor([ True, False]", NULL);
    }
    {
        const uint16_t v[] = {0x3c00, 0x4000, 0x3800}; /* 1, 2, 0.5 */
        check_format(make(dev, CLT_F16, CLT_SHAPE(3), v), "tensor([1.0000, 2.0000, 0.5000]",
                     "dtype=f16");
    }
    {
        const uint16_t v[] = {0x3f80, 0xc000}; /* 1, -2 */
        check_format(make(dev, CLT_BF16, CLT_SHAPE(2), v), "tensor([ 1., -2.]", "dtype=bf16");
    }
    if (has_f64(dev)) {
        const double v[] = {0.5, 0.25};
        check_format(make(dev, CLT_F64, CLT_SHAPE(2), v), "tensor([0.5000, 0.2500]",
                     "dtype=f64");
    }
    /* 0-d */
    {
        const float v = 3.5f;
        check_format(make(dev, CLT_F32, 0, NULL, &v), "tensor(3.5000", NULL);
    }
    {
        const int64_t v = -7;
        check_format(make(dev, CLT_I64, 0, NULL, &v), "tensor(-7", NULL);
    }
    {
        const uint8_t v = 1;
        check_format(make(dev, CLT_BOOL, 0, NULL, &v), "tensor(True", NULL);
    }
    {
        const float v = 2.0f;
        check_format(make(dev, CLT_F32, 0, NULL, &v), "tensor(2.", NULL);
    }
    /* no elements */
    {
        const float v = 0;
        check_format(make(dev, CLT_F32, CLT_SHAPE(0), &v), "tensor([]", NULL);
        check_format(make(dev, CLT_F32, CLT_SHAPE(0, 3), &v), "tensor([], size=(0, 3)", NULL);
    }
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

START_TEST(test_format_nonfinite)
{
    clt_device *dev = test_device(_i);
    {
        const float v[] = {1.5f, NAN, INFINITY, -INFINITY};
        check_format(make(dev, CLT_F32, CLT_SHAPE(4), v),
                     "tensor([1.5000,    nan,    inf,   -inf]", NULL);
    }
    {
        const float v[] = {-NAN, NAN};
        check_format(make(dev, CLT_F32, CLT_SHAPE(2), v), "tensor([nan, nan]", NULL);
    }
    {
        const float v[] = {1e-5f, NAN};
        check_format(make(dev, CLT_F32, CLT_SHAPE(2), v), "tensor([1.0000e-05,        nan]",
                     NULL);
    }
    {
        const float v = INFINITY;
        check_format(make(dev, CLT_F32, 0, NULL, &v), "tensor(inf", NULL);
    }
}
END_TEST

/* PyTorch's _Formatter takes the column width from the nonzero finite values only, so "nan"
 * and "inf" do not widen integer-valued columns: torch.tensor([1., nan, inf]) prints as
 * tensor([1., nan, inf]). */
START_TEST(test_format_nonfinite_width)
{
    clt_device *dev = test_device(_i);
    {
        const float v[] = {1, NAN, INFINITY};
        check_format(make(dev, CLT_F32, CLT_SHAPE(3), v), "tensor([1., nan, inf]", NULL);
    }
    {
        const float v[] = {2, -INFINITY};
        check_format(make(dev, CLT_F32, CLT_SHAPE(2), v), "tensor([2., -inf]", NULL);
    }
}
END_TEST

START_TEST(test_format_summarized)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    clt_tensor *t = clt_tensor_arange(0, 2000, 1, CLT_I64, dev);

    ck_assert_ptr_nonnull(t);
    /* widths come from the shown values; " ..." is one more cell */
    check_format(t, "tensor([   0,    1,    2,  ..., 1997, 1998, 1999]", NULL);

    t = clt_tensor_zeros(CLT_SHAPE(40, 40), CLT_F32, dev);
    ck_assert_ptr_nonnull(t);
    check_format(t,
                 "tensor([[0., 0., 0.,  ..., 0., 0., 0.],\n"
                 "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                 "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                 "        ...,\n"
                 "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                 "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                 "        [0., 0., 0.,  ..., 0., 0., 0.]]",
                 NULL);

    /* exactly 1000 elements: all shown */
    t = clt_tensor_arange(0, 1000, 1, CLT_I64, dev);
    ck_assert_ptr_nonnull(t);
    {
        char *s = clt_tensor_format(t);
        ck_assert_ptr_nonnull(s);
        ck_assert_ptr_null(strstr(s, "..."));
        ck_assert_ptr_nonnull(strstr(s, "500, 501"));
        clt_free(s);
    }
    clt_tensor_release(t);
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

START_TEST(test_format_wrapping)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    clt_tensor *t = clt_tensor_arange(0, 30, 1, CLT_F32, dev);

    /* width 3 + 2: (80 - 7) / 5 = 14 a line, continuation lines indented by 8 */
    ck_assert_ptr_nonnull(t);
    check_format(t,
                 "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
                 "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
                 "        28., 29.]",
                 NULL);

    /* a (1, 10) row: indent 8, width 7 + 2: 8 a line */
    t = clt_tensor_arange(10.5, 20, 1, CLT_F32, dev);
    ck_assert_ptr_nonnull(t);
    {
        float v[10];
        ck_assert_int_eq(clt_tensor_copy_to_host(t, v, sizeof v), CLT_OK);
        clt_tensor_release(t);
        t = make(dev, CLT_F32, CLT_SHAPE(1, 10), v);
    }
    check_format(t,
                 "tensor([[10.5000, 11.5000, 12.5000, 13.5000, 14.5000, 15.5000, 16.5000, "
                 "17.5000,\n"
                 "         18.5000, 19.5000]]",
                 NULL);

    /* 3-D: a blank line between the blocks of the first dimension */
    {
        const float v[] = {1, 2, 3, 4, 5, 6, 7, 8};
        check_format(make(dev, CLT_F32, CLT_SHAPE(2, 2, 2), v),
                     "tensor([[[1., 2.],\n"
                     "         [3., 4.]],\n"
                     "\n"
                     "        [[5., 6.],\n"
                     "         [7., 8.]]]",
                     NULL);
    }
    {
        const int32_t v[] = {1, 2, 3, 4, 5, 6};
        check_format(make(dev, CLT_I32, CLT_SHAPE(2, 3), v),
                     "tensor([[1, 2, 3],\n"
                     "        [4, 5, 6]]",
                     "dtype=i32");
    }
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Suffixes move to their own line, indented by 7, when the line would grow too long. */
START_TEST(test_format_suffix_wrap)
{
    clt_device *dev = test_device(_i);
    const char *row = "tensor([10., 10., 10., 10., 10., 10., 10., 10., 10., 10., 10., 10., 10., "
                      "10.]";
    char expected[512];
    char *s;
    clt_tensor *t = clt_tensor_full(CLT_SHAPE(14), 10.0, CLT_BF16, dev);

    ck_assert_ptr_nonnull(t);
    if (_i == 0)
        snprintf(expected, sizeof expected, "%s,\n       dtype=bf16)", row);
    else
        snprintf(expected, sizeof expected, "%s,\n       device='%s', dtype=bf16)", row,
                 clt_device_name(dev));
    s = clt_tensor_format(t);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, expected);
    clt_free(s);
    clt_tensor_release(t);
}
END_TEST

/* PyTorch's _add_suffixes counts the last line as len(s) - s.rfind('\n') + 1, two more than its
 * length, so a suffix wraps once that line plus the suffix passes 76 characters. A 12-element
 * row "tensor([10., ..., 10.]" is 67 characters: with ", dtype=bf16" it wraps. */
START_TEST(test_format_suffix_wrap_boundary)
{
    clt_device *dev = test_device(_i);
    const char *row = "tensor([10., 10., 10., 10., 10., 10., 10., 10., 10., 10., 10., 10.]";
    char expected[512];
    char *s;
    clt_tensor *t = clt_tensor_full(CLT_SHAPE(12), 10.0, CLT_BF16, dev);

    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(strlen(row), 67);
    if (_i == 0)
        snprintf(expected, sizeof expected, "%s,\n       dtype=bf16)", row);
    else
        snprintf(expected, sizeof expected, "%s,\n       device='%s', dtype=bf16)", row,
                 clt_device_name(dev));
    s = clt_tensor_format(t);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, expected);
    clt_free(s);
    clt_tensor_release(t);
}
END_TEST

START_TEST(test_format_null)
{
    clt_clear_error();
    ck_assert_ptr_null(clt_tensor_format(NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_starts("clt_tensor_format: ");
}
END_TEST

/* ---- allocation failures --------------------------------------------------------------------- */

/* Every way of making a tensor, under fault injection: each host allocation and, on OpenCL
 * devices, each device allocation fails in turn with a clear error and changes nothing. */
typedef struct creation {
    int which;
    clt_device *dev;
    clt_tensor *src; /* for the conversion and the formatting */
} creation;

static const char *const creation_fn[] = {
    "clt_tensor_from_data", "clt_tensor_empty", "clt_tensor_zeros", "clt_tensor_ones",
    "clt_tensor_full",      "clt_tensor_arange", "clt_tensor_rand", "clt_tensor_randn",
    "clt_tensor_to_dtype",  "clt_tensor_format",
};
#define N_CREATIONS (int)(sizeof creation_fn / sizeof *creation_fn)

static bool run_creation(void *ctx)
{
    static const float data[6] = {1, 2, 3, 4, 5, 6};
    creation *c = ctx;
    clt_tensor *t = NULL;
    switch (c->which) {
    case 0: t = clt_tensor_from_data(CLT_SHAPE(2, 3), data, CLT_F32, c->dev); break;
    case 1: t = clt_tensor_empty(CLT_SHAPE(5, 7), CLT_I64, c->dev); break;
    case 2: t = clt_tensor_zeros(CLT_SHAPE(33), CLT_I32, c->dev); break;
    case 3: t = clt_tensor_ones(CLT_SHAPE(3, 3), CLT_BF16, c->dev); break;
    case 4: t = clt_tensor_full(CLT_SHAPE(9), -2.5, CLT_F16, c->dev); break;
    case 5: t = clt_tensor_arange(0, 10, 0.5, CLT_F32, c->dev); break;
    case 6: t = clt_tensor_rand(CLT_SHAPE(17), CLT_F32, c->dev); break;
    case 7: t = clt_tensor_randn(CLT_SHAPE(2, 9), CLT_F16, c->dev); break;
    case 8: t = clt_tensor_to_dtype(c->src, CLT_F16); break;
    default: {
        char *s = clt_tensor_format(c->src);
        if (s)
            ck_assert_ptr_nonnull(strstr(s, "tensor([[1., 2., 3.],"));
        clt_free(s);
        return s != NULL;
    }
    }
    if (!t)
        return false;
    ck_assert_ptr_eq(clt_tensor_device(t), c->dev);
    clt_tensor_release(t);
    return true;
}

START_TEST(test_fault_creation)
{
    static const float data[6] = {1, 2, 3, 4, 5, 6};
    clt_device *dev = test_device(_i);
    creation c = {0, dev, clt_tensor_from_data(CLT_SHAPE(2, 3), data, CLT_F32, dev)};
    ck_assert_ptr_nonnull(c.src);
    for (c.which = 0; c.which < N_CREATIONS; c.which++) {
        long host = test_fault_sweep(run_creation, &c, creation_fn[c.which], CLT__HOST);
        long device = test_fault_sweep(run_creation, &c, creation_fn[c.which], CLT__DEVICE);
        ck_assert_int_ge(host, 2); /* at least the tensor and its storage */
        /* one device buffer for each new tensor on an OpenCL device, none on cpu */
        ck_assert_int_eq(device, _i > 0 && c.which != N_CREATIONS - 1 ? 1 : 0);
    }
    clt_tensor_release(c.src);
}
END_TEST

Suite *suite_tensor(void)
{
    Suite *s = suite_create("tensor");
    TCase *tc = test_case("create", 120);
    ADD_DEVICE_TEST(tc, test_from_data_round_trip);
    ADD_DEVICE_TEST(tc, test_properties);
    ADD_DEVICE_TEST(tc, test_zeros_ones);
    ADD_DEVICE_TEST(tc, test_full_conversions);
    ADD_DEVICE_TEST(tc, test_arange);
    suite_add_tcase(s, tc);

    tc = test_case("random", 120);
    ADD_DEVICE_TEST(tc, test_random_matches_cpu);
    ADD_DEVICE_TEST(tc, test_rand_uniform_range);
    ADD_DEVICE_TEST(tc, test_rand_sequence_and_seed);
    ADD_DEVICE_TEST(tc, test_randn_statistics);
    ADD_DEVICE_TEST(tc, test_random_bad_dtype);
    suite_add_tcase(s, tc);

    tc = test_case("errors", 120);
    ADD_DEVICE_TEST(tc, test_bad_shapes);
    ADD_DEVICE_TEST(tc, test_bad_device_dtype_data);
    ADD_DEVICE_TEST(tc, test_f64_unsupported);
    suite_add_tcase(s, tc);

    tc = test_case("access", 120);
    ADD_DEVICE_TEST(tc, test_retain_release);
    ADD_DEVICE_TEST(tc, test_copy_to_host_errors);
    ADD_DEVICE_TEST(tc, test_tensor_data);
    ADD_DEVICE_TEST(tc, test_from_data_bool_bytes);
    suite_add_tcase(s, tc);

    tc = test_case("format", 120);
    ADD_DEVICE_TEST(tc, test_format_basic);
    ADD_DEVICE_TEST(tc, test_format_nonfinite);
    ADD_DEVICE_TEST(tc, test_format_nonfinite_width);
    ADD_DEVICE_TEST(tc, test_format_summarized);
    ADD_DEVICE_TEST(tc, test_format_wrapping);
    ADD_DEVICE_TEST(tc, test_format_suffix_wrap);
    ADD_DEVICE_TEST(tc, test_format_suffix_wrap_boundary);
    tcase_add_test(tc, test_format_null);
    suite_add_tcase(s, tc);

    tc = test_case("faults", 120);
    ADD_DEVICE_TEST(tc, test_fault_creation);
    suite_add_tcase(s, tc);
    return s;
}
