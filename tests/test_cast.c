/* Cast suite: conversion between every pair of dtypes on every device against the host and
 * against hand-computed bits; clt_tensor_to in every direction, across platforms, blocking or
 * not; options; bad input; and allocation failures that change nothing. */
#include <math.h>
#include <stdlib.h>

#include "backends/backend.h"
#include "helpers.h"

static const clt_dtype all_dtypes[] = {CLT_F32, CLT_F64, CLT_F16, CLT_BF16,
                                       CLT_I32, CLT_I64, CLT_U8,  CLT_BOOL};
#define NDTYPES 8

/* Edge values of every dtype, as raw bits. */
static const uint64_t edges_f32[] = {
    0x00000000, 0x80000000, 0x3f800000, 0xbfc00000, 0x40200000, 0x3dcccccd, 0x477fe000,
    0x477fefff, 0x477ff000, 0x501502f9, 0xd01502f9, 0x7f7fffff, 0x7f800000, 0xff800000,
    0x7fc00000, 0xffc00001, 0x7f800001, 0x000116c2, 0x00000001, 0x33800000, 0x33000000,
    0x33400000, 0x437f8000, 0x43800000, 0xbf800000, 0x4f32d05e, 0xcf32d05e, 0x5f0ac723,
    0xdf0ac723, 0x3f000000, 0x3f801000, 0x3f803000, 0x4effffff, 0x4f000000, 0xbf666666};
static const uint64_t edges_f64[] = {
    0x0000000000000000, 0x8000000000000000, 0x3ff0000000000000, 0xbff8000000000000,
    0x7e37e43c8800759c, 0xfe37e43c8800759c, 0x7ff0000000000000, 0xfff0000000000000,
    0x7ff8000000000000, 0x0000000000000001, 0x00000b8157268fdb, 0x41dfffffffe00000,
    0x41dfffffffb9999a, 0xc1e00000001ccccd, 0x43e02a0000000000, 0x47efffffe0000000,
    0x3ff0000010000000, 0x3fb999999999999a, 0x406ffccccccccccd, 0xbfeccccccccccccd,
    0x3ff0020000100000};
static const uint64_t edges_f16[] = {0x0000, 0x8000, 0x3c00, 0x0001, 0x03ff, 0x0400, 0x7bff,
                                     0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe01, 0x3555, 0x5bf8,
                                     0xd140, 0x5c00};
static const uint64_t edges_bf16[] = {0x0000, 0x8000, 0x3f80, 0x7f80, 0xff80, 0x7fc0, 0x7f81,
                                      0x0001, 0x4f80, 0xcf00, 0x437f, 0x4380, 0x3dcd, 0x3eab};
static const uint64_t edges_i32[] = {0,          1,          0xffffffff, 255,       256,
                                     257,        0xffffff7f, 0x7fffffff, 0x80000000, 16777217,
                                     0xfeffffff, 65520,      2049};
static const uint64_t edges_i64[] = {0,
                                     1,
                                     0xffffffffffffffff,
                                     0x100000005,
                                     0x80000000,
                                     0xffffffff7fffffff,
                                     0x7fffffffffffffff,
                                     0x8000000000000000,
                                     0x20000000000001,
                                     0x1000001,
                                     300,
                                     0xfffffffffffffed4,
                                     16777219};
static const uint64_t edges_u8[] = {0, 1, 127, 128, 255};
static const uint64_t edges_bool[] = {0, 1, 1, 0};

static const uint64_t *edges_of(clt_dtype dt, size_t *n)
{
#define EDGES(arr) (*n = sizeof arr / sizeof *arr, arr)
    switch (dt) {
    case CLT_F32: return EDGES(edges_f32);
    case CLT_F64: return EDGES(edges_f64);
    case CLT_F16: return EDGES(edges_f16);
    case CLT_BF16: return EDGES(edges_bf16);
    case CLT_I32: return EDGES(edges_i32);
    case CLT_I64: return EDGES(edges_i64);
    case CLT_U8: return EDGES(edges_u8);
    default: return EDGES(edges_bool);
    }
#undef EDGES
}

/* A tensor of dtype dt on dev holding the given raw bit patterns. */
static clt_tensor *from_bits(clt_dtype dt, const uint64_t *bits, size_t n, clt_device *dev)
{
    size_t size = clt_dtype_size(dt);
    unsigned char *buf = malloc(n * size);
    for (size_t i = 0; i < n; i++)
        memcpy(buf + i * size, &bits[i], size); /* little-endian: the low bytes */
    int64_t shape = (int64_t)n;
    clt_tensor *t = clt_tensor_from_data(1, &shape, buf, dt, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    free(buf);
    return t;
}

static uint64_t bits_at(const void *bytes, clt_dtype dt, size_t i)
{
    uint64_t v = 0;
    memcpy(&v, (const char *)bytes + i * clt_dtype_size(dt), clt_dtype_size(dt));
    return v;
}

/* Every source dtype to every destination dtype on this device equals the host's bits. */
START_TEST(test_cast_all_pairs_match_host)
{
    clt_device *dev = test_device(_i);
    for (int s = 0; s < NDTYPES; s++) {
        size_t n;
        if (!test_has_dtype(dev, all_dtypes[s]))
            continue;
        const uint64_t *edges = edges_of(all_dtypes[s], &n);
        clt_tensor *host = from_bits(all_dtypes[s], edges, n, clt_device_cpu());
        clt_tensor *x = clt_tensor_to(host, dev);
        ck_assert_ptr_nonnull(x);
        for (int d = 0; d < NDTYPES; d++) {
            if (!test_has_dtype(dev, all_dtypes[d]))
                continue;
            clt_tensor *want = clt_tensor_to_dtype(host, all_dtypes[d]);
            clt_tensor *got = clt_tensor_to_dtype(x, all_dtypes[d]);
            ck_assert_msg(got != NULL, "%s", clt_last_error());
            ck_assert_ptr_eq(clt_tensor_device(got), dev);
            ck_assert_int_eq(clt_tensor_dtype(got), all_dtypes[d]);
            void *w = test_bytes(want), *g = test_bytes(got);
            for (size_t i = 0; i < n; i++)
                ck_assert_msg(bits_at(w, all_dtypes[d], i) == bits_at(g, all_dtypes[d], i),
                              "%s -> %s on %s, element %zu (0x%llx): host 0x%llx, device 0x%llx",
                              clt_dtype_name(all_dtypes[s]), clt_dtype_name(all_dtypes[d]),
                              clt_device_name(dev), i, (unsigned long long)edges[i],
                              (unsigned long long)bits_at(w, all_dtypes[d], i),
                              (unsigned long long)bits_at(g, all_dtypes[d], i));
            free(w);
            free(g);
            clt_tensor_release(want);
            clt_tensor_release(got);
        }
        clt_tensor_release(x);
        clt_tensor_release(host);
    }
}
END_TEST

/* Conversions worked out by hand from the rules in tensor.h. */
static const struct {
    clt_dtype from;
    uint64_t in;
    clt_dtype to;
    uint64_t out;
} expected[] = {
    {CLT_F32, 0x3f800000, CLT_F16, 0x3c00},         /* 1 */
    {CLT_F32, 0x3f801000, CLT_F16, 0x3c00},         /* 1 + 2^-11: tie to even */
    {CLT_F32, 0x3f803000, CLT_F16, 0x3c02},         /* 1 + 3 * 2^-11: tie to even */
    {CLT_F32, 0x477ff000, CLT_F16, 0x7c00},         /* 65520 -> inf */
    {CLT_F32, 0x477fef00, CLT_F16, 0x7bff},         /* 65519 -> 65504 */
    {CLT_F32, 0x33800000, CLT_F16, 0x0001},         /* 2^-24: smallest subnormal */
    {CLT_F32, 0x33000000, CLT_F16, 0x0000},         /* 2^-25: tie to even, zero */
    {CLT_F32, 0x33400000, CLT_F16, 0x0001},         /* 1.5 * 2^-25 */
    {CLT_F32, 0x387fc000, CLT_F16, 0x03ff},         /* largest subnormal */
    {CLT_F32, 0x7fc00000, CLT_F16, 0x7e00},         /* NaN */
    {CLT_F32, 0xffc00001, CLT_F16, 0xfe00},         /* -NaN keeps its sign */
    {CLT_F32, 0x80000000, CLT_F16, 0x8000},         /* -0 */
    {CLT_F32, 0xff800000, CLT_F16, 0xfc00},         /* -inf */
    {CLT_F32, 0x000116c2, CLT_F16, 0x0000},         /* f32 subnormal */
    {CLT_F32, 0x3f808000, CLT_BF16, 0x3f80},        /* 1 + 2^-8: tie to even */
    {CLT_F32, 0x3f818000, CLT_BF16, 0x3f82},        /* 1 + 3 * 2^-8: tie to even */
    {CLT_F32, 0x7f800001, CLT_BF16, 0x7fc0},        /* signalling NaN -> quiet */
    {CLT_F32, 0xff800001, CLT_BF16, 0xffc0},
    {CLT_F32, 0x7f7fffff, CLT_BF16, 0x7f80},        /* FLT_MAX rounds to inf */
    {CLT_F32, 0x402ccccd, CLT_I32, 2},              /* 2.7 */
    {CLT_F32, 0xc02ccccd, CLT_I32, 0xfffffffe},     /* -2.7 -> -2 */
    {CLT_F32, 0x4f32d05e, CLT_I32, 0x7fffffff},     /* 3e9 saturates */
    {CLT_F32, 0xcf32d05e, CLT_I32, 0x80000000},     /* -3e9 */
    {CLT_F32, 0x4f000000, CLT_I32, 0x7fffffff},     /* 2^31 */
    {CLT_F32, 0x7fc00000, CLT_I32, 0},              /* NaN -> 0 */
    {CLT_F32, 0x7f800000, CLT_I32, 0x7fffffff},     /* inf */
    {CLT_F32, 0x5f0ac723, CLT_I64, 0x7fffffffffffffff},  /* 1e19 */
    {CLT_F32, 0xdf0ac723, CLT_I64, 0x8000000000000000},  /* -1e19 */
    {CLT_F32, 0xbf800000, CLT_U8, 0},               /* -1 -> 0 */
    {CLT_F32, 0x437f8000, CLT_U8, 255},             /* 255.5 */
    {CLT_F32, 0x43960000, CLT_U8, 255},             /* 300 */
    {CLT_F32, 0x437ee666, CLT_U8, 254},             /* 254.9 */
    {CLT_F32, 0x7fc00000, CLT_BOOL, 1},             /* NaN is true */
    {CLT_F32, 0x80000000, CLT_BOOL, 0},             /* -0 is false */
    {CLT_F32, 0x00000001, CLT_BOOL, 1},             /* subnormals are true */
    {CLT_F32, 0x00000001, CLT_F64, 0x36a0000000000000}, /* 2^-149 exactly */
    {CLT_F64, 0x3ff0000010000000, CLT_F32, 0x3f800000}, /* 1 + 2^-24: tie to even */
    {CLT_F64, 0x7e37e43c8800759c, CLT_F32, 0x7f800000}, /* 1e300 -> inf */
    {CLT_F64, 0x0000000000000001, CLT_F32, 0x00000000},
    {CLT_F64, 0x41dfffffffb9999a, CLT_I32, 0x7ffffffe}, /* 2147483646.9 truncates */
    {CLT_F64, 0x41dffffffff9999a, CLT_I32, 0x7fffffff}, /* 2147483647.9 */
    {CLT_F64, 0xc1e00000001ccccd, CLT_I32, 0x80000000}, /* -2147483648.9 saturates */
    {CLT_F64, 0x7ff8000000000000, CLT_I64, 0},
    {CLT_F64, 0x0000000000000001, CLT_BOOL, 1},
    {CLT_F64, 0x3ff0020000100000, CLT_F16, 0x3c00}, /* through f32, as PyTorch: 1 + 2^-11 + 2^-40 */
    {CLT_F64, 0x40effdffae147ae1, CLT_F16, 0x7bff}, /* 65519.99 */
    {CLT_I64, 0x100000005, CLT_I32, 5},             /* wraps */
    {CLT_I64, 0x80000000, CLT_I32, 0x80000000},
    {CLT_I64, 0xffffffffffffffff, CLT_U8, 255},
    {CLT_I64, 300, CLT_U8, 44},
    {CLT_I32, 0xffffff7f, CLT_U8, 127},             /* -129 */
    {CLT_I64, 0x20000000000001, CLT_F64, 0x4340000000000000}, /* 2^53 + 1 -> 2^53 */
    {CLT_I64, 0x1000001, CLT_F32, 0x4b800000},      /* 2^24 + 1 -> 2^24 */
    {CLT_I64, 16777219, CLT_F32, 0x4b800002},       /* tie to even -> 16777220 */
    {CLT_I64, 0x7fffffffffffffff, CLT_F32, 0x5f000000},
    {CLT_I32, 65520, CLT_F16, 0x7c00},
    {CLT_I32, 2049, CLT_F16, 0x6800},               /* tie to even -> 2048 */
    {CLT_U8, 255, CLT_F16, 0x5bf8},
    {CLT_BOOL, 1, CLT_F32, 0x3f800000},
    {CLT_BOOL, 1, CLT_I64, 1},
    {CLT_I32, 0xfffffffe, CLT_BOOL, 1},
    {CLT_F16, 0x0001, CLT_F32, 0x33800000},
    {CLT_F16, 0x03ff, CLT_F32, 0x387fc000},
    {CLT_F16, 0x7bff, CLT_F32, 0x477fe000},
    {CLT_F16, 0x7c01, CLT_F32, 0x7f802000},         /* NaN payload kept */
    {CLT_F16, 0xfc00, CLT_F32, 0xff800000},
    {CLT_F16, 0x5bf8, CLT_U8, 255},
    {CLT_F16, 0xd140, CLT_I32, 0xffffffd6},         /* -42 */
    {CLT_F16, 0x3555, CLT_BF16, 0x3eab},
    {CLT_BF16, 0x3dcd, CLT_F32, 0x3dcd0000},
    {CLT_BF16, 0x7f81, CLT_F32, 0x7f810000},
    {CLT_BF16, 0x4f80, CLT_I32, 0x7fffffff},        /* 2^32 */
    {CLT_BF16, 0x4f80, CLT_I64, 0x100000000},
    {CLT_BF16, 0x4380, CLT_F16, 0x5c00},            /* 256 */
    /* f32 <-> f64: subnormals kept, NaN quieted with sign and payload */
    {CLT_BF16, 0x0001, CLT_F64, 0x37a0000000000000},  /* 2^-133, an f32 subnormal */
    {CLT_F64, 0x37a16c262777579c, CLT_F32, 0x000116c2}, /* 1e-40 */
    {CLT_F64, 0x36a8000000000000, CLT_F32, 0x00000002}, /* 1.5 * 2^-149: tie to even */
    {CLT_F64, 0x3690000000000000, CLT_F32, 0x00000000}, /* 2^-150: tie to even */
    {CLT_F64, 0x3690000000000001, CLT_F32, 0x00000001},
    {CLT_F64, 0x380fffffffffffff, CLT_F32, 0x00800000}, /* rounds up to 2^-126 */
    {CLT_F64, 0x47efffffe0000000, CLT_F32, 0x7f7fffff}, /* FLT_MAX */
    {CLT_F64, 0x47effffff0000000, CLT_F32, 0x7f800000}, /* FLT_MAX + half an ulp */
    {CLT_F64, 0x7ff0000000000001, CLT_F32, 0x7fc00000}, /* the low payload goes */
    {CLT_F64, 0x7ff4000020000000, CLT_F32, 0x7fe00001}, /* the top of the payload stays */
    {CLT_F64, 0xfff8000000000000, CLT_F16, 0xfe00},     /* -NaN keeps its sign */
    {CLT_F32, 0x7f800001, CLT_F64, 0x7ff8000020000000}, /* signalling NaN: quieted */
    {CLT_F32, 0xff800000, CLT_F64, 0xfff0000000000000},
    {CLT_F32, 0x00400000, CLT_F64, 0x3800000000000000}, /* 2^-127 */
    {CLT_F32, 0x80000001, CLT_F64, 0xb6a0000000000000}, /* -2^-149 */
};

START_TEST(test_cast_expected_bits)
{
    clt_device *dev = test_device(_i);
    for (size_t k = 0; k < sizeof expected / sizeof *expected; k++) {
        if (!test_has_dtype(dev, expected[k].from) || !test_has_dtype(dev, expected[k].to))
            continue;
        clt_tensor *h = from_bits(expected[k].from, &expected[k].in, 1, clt_device_cpu());
        clt_tensor *x = clt_tensor_to(h, dev);
        clt_tensor *y = clt_tensor_to_dtype(x, expected[k].to);
        ck_assert_msg(y != NULL, "%s", clt_last_error());
        void *b = test_bytes(y);
        ck_assert_msg(bits_at(b, expected[k].to, 0) == expected[k].out,
                      "case %zu on %s: %s 0x%llx -> %s: want 0x%llx, got 0x%llx", k,
                      clt_device_name(dev), clt_dtype_name(expected[k].from),
                      (unsigned long long)expected[k].in, clt_dtype_name(expected[k].to),
                      (unsigned long long)expected[k].out,
                      (unsigned long long)bits_at(b, expected[k].to, 0));
        free(b);
        clt_tensor_release(y);
        clt_tensor_release(x);
        clt_tensor_release(h);
    }
}
END_TEST

/* A copy to the same dtype keeps every bit (NaN payloads too), on every device. */
START_TEST(test_to_copy_keeps_bits)
{
    static const struct {
        clt_dtype dtype;
        uint64_t bits;
    } cases[] = {{CLT_F16, 0x7d00}, {CLT_BF16, 0x7f81}, {CLT_F32, 0x7f800001},
                 {CLT_F64, 0x7ff0000000000001}, {CLT_F16, 0x8001}};
    clt_device *dev = test_device(_i);
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        if (!test_has_dtype(dev, cases[k].dtype))
            continue;
        clt_tensor *x = from_bits(cases[k].dtype, &cases[k].bits, 1, dev);
        clt_tensor *y = clt_tensor_to_ex(x, &(clt_to_options){.copy = true});
        ck_assert_ptr_nonnull(y);
        ck_assert_ptr_ne(y, x);
        void *b = test_bytes(y);
        ck_assert_uint_eq(bits_at(b, cases[k].dtype, 0), cases[k].bits);
        free(b);
        clt_tensor_release(y);
        clt_tensor_release(x);
    }
}
END_TEST

/* The source of a non-blocking upload, released at once, is freed by the next kernel launch
 * once the copy has finished: no synchronize needed. */
START_TEST(test_to_non_blocking_source_freed)
{
    clt_device *dev = test_device(_i);
    if (_i == 0)
        return; /* cpu has no asynchronous copies */
    clt_tensor *warm = clt_tensor_ones(CLT_SHAPE(2), CLT_F32, dev);
    clt_tensor *warm16 = clt_tensor_to_dtype(warm, CLT_F16); /* builds the cast program */
    clt_tensor_release(warm16);
    clt_tensor_release(warm);
    test_live base = test_live_now();
    clt_tensor *h = clt_tensor_ones(CLT_SHAPE(1000), CLT_F32, clt_device_cpu());
    clt_event *ev = NULL;
    clt_tensor *up = clt_tensor_to_ex(h, &(clt_to_options){.device = dev, .non_blocking = true,
                                                           .event = &ev});
    ck_assert_ptr_nonnull(up);
    clt_tensor_release(h);
    ck_assert_int_eq(clt_event_wait(ev), CLT_OK);
    clt_event_release(ev);
    clt_tensor *y = clt_tensor_to_dtype(up, CLT_F16);
    ck_assert_ptr_nonnull(y);
    test_live now = test_live_now();
    ck_assert_int_eq(now.host, base.host + 4); /* up and y: a tensor and a storage each */
    ck_assert_int_eq(now.device, base.device + 2);
    clt_tensor_release(y);
    clt_tensor_release(up);
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* x.to(device) on a tensor already there is x itself; copy=true makes a new one. */
START_TEST(test_to_identity)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = clt_tensor_arange(0, 6, 1, CLT_F32, dev);
    clt_tensor *same = clt_tensor_to(x, dev);
    ck_assert_ptr_eq(same, x);
    clt_tensor_release(same); /* the retained reference */
    same = clt_tensor_to_dtype(x, CLT_F32);
    ck_assert_ptr_eq(same, x);
    clt_tensor_release(same);

    clt_to_options o = {.copy = true};
    clt_tensor *copy = clt_tensor_to_ex(x, &o);
    ck_assert_ptr_nonnull(copy);
    ck_assert_ptr_ne(copy, x);
    ck_assert_ptr_eq(clt_tensor_device(copy), dev);
    void *a = test_bytes(x), *b = test_bytes(copy);
    ck_assert_mem_eq(a, b, 6 * sizeof(float));
    free(a);
    free(b);
    clt_tensor_release(copy);
    clt_tensor_release(x);
}
END_TEST

/* Every ordered pair of devices (loop index = from * total + to). */
START_TEST(test_to_every_direction)
{
    clt_device *from = test_device(_i / test_device_total);
    clt_device *to = test_device(_i % test_device_total);
    for (int d = 0; d < NDTYPES; d++) {
        size_t n;
        if (!test_has_dtype(from, all_dtypes[d]) || !test_has_dtype(to, all_dtypes[d]))
            continue;
        const uint64_t *edges = edges_of(all_dtypes[d], &n);
        clt_tensor *x = from_bits(all_dtypes[d], edges, n, from);
        clt_tensor *y = clt_tensor_to(x, to);
        ck_assert_msg(y != NULL, "%s", clt_last_error());
        ck_assert_ptr_eq(clt_tensor_device(y), to);
        ck_assert_int_eq(clt_tensor_ndim(y), 1);
        ck_assert_int_eq(clt_tensor_size(y, 0), (int64_t)n);
        void *a = test_bytes(x), *b = test_bytes(y);
        ck_assert_mem_eq(a, b, n * clt_dtype_size(all_dtypes[d]));
        free(a);
        free(b);
        clt_tensor_release(y);
        clt_tensor_release(x);
    }
}
END_TEST

static void fault_sweep(clt_tensor *x, const clt_to_options *o, clt__alloc_kind kind);

static void check_equal_to_host_cast(clt_tensor *y, clt_tensor *host_src, clt_dtype dt)
{
    clt_tensor *want = clt_tensor_to_dtype(host_src, dt);
    int64_t n = clt_tensor_numel(want);
    ck_assert_int_eq(clt_tensor_numel(y), n);
    ck_assert_int_eq(clt_tensor_dtype(y), dt);
    void *a = test_bytes(want), *b = test_bytes(y);
    ck_assert_mem_eq(a, b, (size_t)n * clt_dtype_size(dt));
    free(a);
    free(b);
    clt_tensor_release(want);
}

/* Two platforms at once (Oclgrind as gpu:0, PoCL as gpu:1): copies and casts between them. */
START_TEST(test_to_across_platforms)
{
    if (!test_use_vendors(true, true))
        return;
    ck_assert_int_eq(clt_device_count(), 2);
    clt_device *g0 = clt_device_get("gpu:0"), *g1 = clt_device_get("gpu:1");
    clt_manual_seed(11);
    clt_tensor *h = clt_tensor_randn(CLT_SHAPE(3, 5), CLT_F32, clt_device_cpu());
    clt_tensor *a = clt_tensor_to(h, g0);
    clt_tensor *b = clt_tensor_to(a, g1);
    clt_tensor *back = clt_tensor_to(b, clt_device_cpu());
    ck_assert_ptr_nonnull(back);
    ck_assert_int_eq(clt_tensor_size(back, 1), 5);
    check_equal_to_host_cast(back, h, CLT_F32);

    clt_event *ev = NULL;
    clt_to_options o = {.device = g0, .dtype = CLT_F16, .non_blocking = true, .event = &ev};
    clt_tensor *c = clt_tensor_to_ex(b, &o); /* gpu:1 f32 -> gpu:0 f16 */
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    ck_assert_ptr_nonnull(ev);
    ck_assert_int_eq(clt_event_wait(ev), CLT_OK);
    ck_assert_ptr_eq(clt_tensor_device(c), g0);
    check_equal_to_host_cast(c, h, CLT_F16);
    clt_event_release(ev);

    /* gpu -> gpu goes through host memory: its failures change nothing either */
    fault_sweep(b, &(clt_to_options){.device = g0}, CLT__HOST);
    fault_sweep(b, &(clt_to_options){.device = g0, .non_blocking = true}, CLT__HOST);
    fault_sweep(b, &(clt_to_options){.device = g0, .dtype = CLT_F16}, CLT__DEVICE);
    clt_tensor_release(c);
    clt_tensor_release(back);
    clt_tensor_release(b);
    clt_tensor_release(a);
    clt_tensor_release(h);
}
END_TEST

/* Non-blocking copies: with an event, with synchronize, and with the source released at once
 * (the library keeps what the copy still reads alive). */
START_TEST(test_to_non_blocking)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    clt_manual_seed(5);
    clt_tensor *h = clt_tensor_rand(CLT_SHAPE(4096), CLT_F32, cpu);
    clt_tensor *src = clt_tensor_to_ex(h, &(clt_to_options){.copy = true});
    clt_event *ev = NULL;

    clt_tensor *up = clt_tensor_to_ex(src, &(clt_to_options){.device = dev, .non_blocking = true,
                                                             .event = &ev});
    clt_tensor_release(src); /* the copy may still be reading it */
    ck_assert_ptr_nonnull(up);
    ck_assert_ptr_nonnull(ev);
    ck_assert_int_eq(clt_event_wait(ev), CLT_OK);
    clt_event_release(ev);
    check_equal_to_host_cast(up, h, CLT_F32);

    clt_tensor *down = clt_tensor_to_ex(up, &(clt_to_options){.device = cpu, .non_blocking = true});
    ck_assert_ptr_nonnull(down);
    clt_tensor_release(up);
    /* reading through the library waits for the copy by itself */
    float *p = clt_tensor_data(down);
    ck_assert_ptr_nonnull(p);
    ck_assert_mem_eq(p, clt_tensor_data(h), 4096 * sizeof(float));

    clt_tensor *down2 = clt_tensor_to_ex(down, &(clt_to_options){.device = dev, .dtype = CLT_BF16,
                                                                 .non_blocking = true});
    ck_assert_int_eq(clt_device_synchronize(dev), CLT_OK);
    check_equal_to_host_cast(down2, h, CLT_BF16);
    clt_tensor_release(down2);
    clt_tensor_release(down);
    clt_tensor_release(h);
}
END_TEST

/* Device and dtype change together; the result equals the host's conversion. */
START_TEST(test_to_device_and_dtype)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    for (int s = 0; s < NDTYPES; s++) {
        size_t n;
        if (!test_has_dtype(dev, all_dtypes[s]))
            continue;
        const uint64_t *edges = edges_of(all_dtypes[s], &n);
        clt_tensor *h = from_bits(all_dtypes[s], edges, n, cpu);
        clt_tensor *g = clt_tensor_to(h, dev);
        for (int d = 0; d < NDTYPES; d++) {
            if (!test_has_dtype(dev, all_dtypes[d]))
                continue;
            clt_tensor *y = clt_tensor_to_ex(h, &(clt_to_options){.device = dev,
                                                                   .dtype = all_dtypes[d]});
            ck_assert_msg(y != NULL, "%s", clt_last_error());
            ck_assert_ptr_eq(clt_tensor_device(y), dev);
            check_equal_to_host_cast(y, h, all_dtypes[d]);
            clt_tensor *z = clt_tensor_to_ex(g, &(clt_to_options){.device = cpu,
                                                                   .dtype = all_dtypes[d]});
            ck_assert_msg(z != NULL, "%s", clt_last_error());
            ck_assert_ptr_eq(clt_tensor_device(z), cpu);
            check_equal_to_host_cast(z, h, all_dtypes[d]);
            clt_tensor_release(z);
            clt_tensor_release(y);
        }
        clt_tensor_release(g);
        clt_tensor_release(h);
    }
}
END_TEST

/* A device without fp64: f64 cannot go there, but converts on the way; f64 results of its
 * tensors are made on the host. */
START_TEST(test_to_device_without_fp64)
{
    if (clt_device_count() == 0)
        return;
    clt_device *dev = clt_device_get("gpu:0"), *cpu = clt_device_cpu();
    dev->info.fp64 = false; /* as a device without cl_khr_fp64 reports itself */
    size_t n;
    const uint64_t *edges = edges_of(CLT_F64, &n);
    clt_tensor *h = from_bits(CLT_F64, edges, n, cpu);

    ck_assert_ptr_null(clt_tensor_to(h, dev));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_UNSUPPORTED);
    ck_assert_error_has("clt_tensor_to: f64 is not supported on gpu:0");

    clt_tensor *f = clt_tensor_to_ex(h, &(clt_to_options){.device = dev, .dtype = CLT_F16});
    ck_assert_msg(f != NULL, "%s", clt_last_error());
    check_equal_to_host_cast(f, h, CLT_F16);

    clt_tensor *hi = clt_tensor_to_dtype(h, CLT_I64);
    clt_tensor *gi = clt_tensor_to(hi, dev);
    ck_assert_ptr_null(clt_tensor_to_dtype(gi, CLT_F64));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_UNSUPPORTED);
    clt_tensor *back = clt_tensor_to_ex(gi, &(clt_to_options){.device = cpu, .dtype = CLT_F64});
    ck_assert_msg(back != NULL, "%s", clt_last_error());
    check_equal_to_host_cast(back, hi, CLT_F64);

    /* the other dtypes still convert on the device (its kernels are built without f64) */
    clt_tensor *g16 = clt_tensor_to_dtype(f, CLT_I32);
    ck_assert_msg(g16 != NULL, "%s", clt_last_error());
    clt_tensor *h16 = clt_tensor_to(f, cpu);
    check_equal_to_host_cast(g16, h16, CLT_I32);

    clt_tensor_release(h16);
    clt_tensor_release(g16);
    clt_tensor_release(back);
    clt_tensor_release(gi);
    clt_tensor_release(hi);
    clt_tensor_release(f);
    clt_tensor_release(h);
}
END_TEST

START_TEST(test_to_bad_input)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(2), CLT_F32, dev);
    clt_event *ev = (clt_event *)&ev; /* must be reset to NULL on failure */

    ck_assert_ptr_null(clt_tensor_to(NULL, dev));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_tensor_to: tensor is NULL");
    ck_assert_ptr_null(clt_tensor_to(x, NULL));
    ck_assert_error_has("clt_tensor_to: device is NULL");
    ck_assert_ptr_null(clt_tensor_to_ex(x, NULL));
    ck_assert_error_has("clt_tensor_to_ex: options is NULL");
    ck_assert_ptr_null(clt_tensor_to_dtype(x, CLT_DTYPE_NONE));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    ck_assert_ptr_null(clt_tensor_to_dtype(x, (clt_dtype)99));
    ck_assert_error_has("clt_tensor_to_dtype: invalid dtype 99");
    ck_assert_ptr_null(clt_tensor_to_ex(x, &(clt_to_options){.dtype = (clt_dtype)-3, .event = &ev}));
    ck_assert_ptr_null(ev);
    ck_assert_int_eq(clt_event_wait(NULL), CLT_ERR_INVALID_ARGUMENT);
    clt_event_release(NULL);
    clt_tensor_release(x);
}
END_TEST

/* Makes each host or device allocation of a cast fail in turn: every failure is an
 * out-of-memory error that leaks nothing and leaves the source as it was, and the call succeeds
 * once every allocation it makes has been failed once. */
/* clt_tensor_to_ex under fault injection: the source must be unchanged after every failure. */
typedef struct to_case {
    clt_tensor *x;
    clt_to_options options;
    void *before; /* x's bytes before the sweep */
} to_case;

static bool run_to(void *ctx)
{
    to_case *c = ctx;
    clt_event *ev = NULL;
    clt_to_options o = c->options;
    o.event = o.non_blocking ? &ev : NULL;
    clt_tensor *y = clt_tensor_to_ex(c->x, &o);
    if (!y) {
        void *now = test_bytes(c->x);
        ck_assert_ptr_null(ev);
        ck_assert_mem_eq(now, c->before,
                         (size_t)clt_tensor_numel(c->x) * clt_dtype_size(clt_tensor_dtype(c->x)));
        free(now);
        return false;
    }
    ck_assert(!o.non_blocking || ev != NULL);
    if (ev)
        ck_assert_int_eq(clt_event_wait(ev), CLT_OK);
    clt_event_release(ev);
    clt_tensor_release(y);
    return true;
}

static void fault_sweep(clt_tensor *x, const clt_to_options *o, clt__alloc_kind kind)
{
    to_case c = {x, *o, test_bytes(x)};
    test_fault_sweep(run_to, &c, "clt_tensor_to_ex", kind);
    free(c.before);
}

START_TEST(test_to_allocation_failures)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    clt_tensor *h = clt_tensor_arange(0, 64, 1, CLT_F32, cpu);
    clt_tensor *g = clt_tensor_to(h, dev);
    const clt_to_options cases[] = {
        {.device = dev},
        {.device = dev, .dtype = CLT_F16},
        {.device = dev, .non_blocking = true},
        {.dtype = CLT_I64, .copy = true},
        {.device = cpu, .dtype = CLT_F64},
        {.device = cpu, .non_blocking = true},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        clt_tensor *src = c < 3 ? h : g;
        fault_sweep(src, &cases[c], CLT__HOST);
        fault_sweep(src, &cases[c], CLT__DEVICE);
    }
    clt_tensor_release(g);
    clt_tensor_release(h);
}
END_TEST

Suite *suite_cast(void)
{
    Suite *s = suite_create("cast");
    TCase *tc = test_case("cast", 300);
    ADD_DEVICE_TEST(tc, test_cast_all_pairs_match_host);
    ADD_DEVICE_TEST(tc, test_cast_expected_bits);
    ADD_DEVICE_TEST(tc, test_to_identity);
    ADD_DEVICE_TEST(tc, test_to_copy_keeps_bits);
    ADD_DEVICE_TEST(tc, test_to_non_blocking_source_freed);
    tcase_add_loop_test(tc, test_to_every_direction, 0, test_device_total * test_device_total);
    tcase_add_test(tc, test_to_across_platforms);
    ADD_DEVICE_TEST(tc, test_to_non_blocking);
    ADD_DEVICE_TEST(tc, test_to_device_and_dtype);
    tcase_add_test(tc, test_to_device_without_fp64);
    ADD_DEVICE_TEST(tc, test_to_bad_input);
    ADD_DEVICE_TEST(tc, test_to_allocation_failures);
    suite_add_tcase(s, tc);
    return s;
}
