/* Ops suite, elementwise part and views: every elementwise operation on every device against
 * the host on fresh random inputs (contiguous, broadcast and non-contiguous), PyTorch's type
 * promotion table, values worked out by hand, views sharing storage, cat and stack, the
 * in-place forms, bad input and allocation failures. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"

static const clt_dtype dtypes[] = {CLT_F32, CLT_F64, CLT_F16, CLT_BF16,
                                   CLT_I32, CLT_I64, CLT_U8,  CLT_BOOL};
#define NDT 8

static bool floating(clt_dtype t)
{
    return t == CLT_F32 || t == CLT_F64 || t == CLT_F16 || t == CLT_BF16;
}

/* Deterministic test data: values from a small generator, made on cpu in dtype. `positive`
 * keeps floats in (0.1, 3) for log, sqrt and pow; integers lie in -4..4 (0..8 for u8, and with
 * `positive`: an integer power's exponent must not be negative). */
static clt_tensor *data(clt_dtype dt, int ndim, const int64_t *shape, unsigned seed, bool positive)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    uint32_t s = seed * 2654435761u + 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        double u = (double)(s >> 8) / 16777216.0; /* [0, 1) */
        if (floating(dt))
            v[i] = positive ? 0.1 + 2.9 * u : (u - 0.5) * 8.0;
        else if (dt == CLT_BOOL)
            v[i] = u < 0.5;
        else
            v[i] = floor(u * 9.0) - (dt == CLT_U8 || positive ? 0 : 4);
    }
    clt_tensor *f = clt_tensor_from_data(ndim, shape, v, CLT_F64, clt_device_cpu());
    clt_tensor *t = clt_tensor_to_dtype(f, dt);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    clt_tensor_release(f);
    free(v);
    return t;
}

/* Bound on |device - host| relative to max(1, |host|), by dtype of the result. */
static double tolerance(clt_dtype t)
{
    switch (t) {
    case CLT_F32: return 2e-6;
    case CLT_F64: return 1e-13;
    case CLT_F16: return 1e-3;   /* one f16 ulp: the f32 results may differ in their last bits */
    case CLT_BF16: return 8e-3;  /* one bf16 ulp */
    default: return 0;           /* integers and bool: exact */
    }
}

/* Asserts that `got` (on any device) equals `want` (on cpu) in dtype, shape and values. */
static void assert_close(clt_tensor *got, clt_tensor *want, const char *what)
{
    ck_assert_msg(got != NULL, "%s: %s", what, clt_last_error());
    ck_assert_msg(clt_tensor_dtype(got) == clt_tensor_dtype(want), "%s: dtype %s, want %s", what,
                  clt_dtype_name(clt_tensor_dtype(got)), clt_dtype_name(clt_tensor_dtype(want)));
    ck_assert_int_eq(clt_tensor_ndim(got), clt_tensor_ndim(want));
    for (int d = 0; d < clt_tensor_ndim(want); d++)
        ck_assert_int_eq(clt_tensor_size(got, d), clt_tensor_size(want, d));
    clt_tensor *g = clt_tensor_to_ex(got, &(clt_to_options){.device = clt_device_cpu(), .dtype = CLT_F64});
    clt_tensor *w = clt_tensor_to_dtype(want, CLT_F64);
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_nonnull(w);
    double *gv = test_bytes(g), *wv = test_bytes(w), tol = tolerance(clt_tensor_dtype(want));
    for (int64_t i = 0; i < clt_tensor_numel(want); i++) {
        bool both_nan = isnan(gv[i]) && isnan(wv[i]);
        bool same_inf = isinf(wv[i]) && gv[i] == wv[i];
        double err = fabs(gv[i] - wv[i]) / fmax(1.0, fabs(wv[i]));
        ck_assert_msg(both_nan || same_inf || err <= tol,
                      "%s: element %lld is %.17g, the host gives %.17g (tolerance %g)", what,
                      (long long)i, gv[i], wv[i], tol);
    }
    free(gv);
    free(wv);
    clt_tensor_release(g);
    clt_tensor_release(w);
}

typedef clt_tensor *(*binary_fn)(clt_tensor *, clt_tensor *);
typedef clt_tensor *(*unary_fn)(clt_tensor *);

static const struct {
    const char *name;
    binary_fn fn;
    bool no_bool, positive;
} binaries[] = {
    {"add", clt_add, false, false},     {"sub", clt_sub, true, false},
    {"mul", clt_mul, false, false},     {"div", clt_div, false, true},
    {"pow", clt_pow, true, true},       {"maximum", clt_maximum, false, false},
    {"minimum", clt_minimum, false, false}, {"eq", clt_eq, false, false},
    {"ne", clt_ne, false, false},       {"lt", clt_lt, false, false},
    {"le", clt_le, false, false},       {"gt", clt_gt, false, false},
    {"ge", clt_ge, false, false},
};

/* Shape pairs: same and contiguous, broadcast, and a transposed (non-contiguous) left side. */
static const struct {
    int na, nb;
    int64_t a[3], b[3];
    bool transpose_a;
} layouts[] = {
    {1, 1, {1}, {1}, false},
    {1, 1, {7}, {7}, false},
    {3, 2, {3, 1, 5}, {4, 5}, false},
    {2, 2, {5, 3}, {3, 5}, true},
};

/* Inputs made on cpu; the same op on the device and on cpu must agree. */
static void check_binary(clt_device *dev, int op, clt_dtype dt, int layout)
{
    char what[128];
    clt_tensor *ha = data(dt, layouts[layout].na, layouts[layout].a, (unsigned)(op * 31 + layout), binaries[op].positive);
    clt_tensor *hb = data(dt, layouts[layout].nb, layouts[layout].b, (unsigned)(op * 17 + 7), binaries[op].positive);
    if (layouts[layout].transpose_a) {
        clt_tensor *t = clt_transpose(ha, 0, 1);
        clt_tensor_release(ha);
        ha = t;
    }
    clt_tensor *da = clt_tensor_to(ha, dev), *db = clt_tensor_to(hb, dev);
    clt_tensor *want = binaries[op].fn(ha, hb), *got = binaries[op].fn(da, db);
    snprintf(what, sizeof what, "%s %s layout %d on %s", binaries[op].name, clt_dtype_name(dt),
             layout, clt_device_name(dev));
    ck_assert_msg(want != NULL, "%s: %s", what, clt_last_error());
    ck_assert_ptr_eq(clt_tensor_device(got), dev);
    assert_close(got, want, what);
    clt_tensor_release(got);
    clt_tensor_release(want);
    clt_tensor_release(db);
    clt_tensor_release(da);
    clt_tensor_release(hb);
    clt_tensor_release(ha);
}

START_TEST(test_ops_binary_matches_host)
{
    clt_device *dev = test_device(_i);
    for (int op = 0; op < (int)(sizeof binaries / sizeof *binaries); op++)
        for (int d = 0; d < NDT; d++)
            for (int l = 0; l < (int)(sizeof layouts / sizeof *layouts); l++)
                if (!(binaries[op].no_bool && dtypes[d] == CLT_BOOL) &&
                    test_has_dtype(dev, dtypes[d]))
                    check_binary(dev, op, dtypes[d], l);
}
END_TEST

static const struct {
    const char *name;
    unary_fn fn;
    bool positive, floats_only, no_bool;
} unaries[] = {
    {"neg", clt_neg, false, false, true},        {"abs", clt_abs, false, false, true},
    {"exp", clt_exp, false, false, false},       {"log", clt_log, true, true, false},
    {"sqrt", clt_sqrt, true, true, false},       {"rsqrt", clt_rsqrt, true, true, false},
    {"sin", clt_sin, false, false, false},       {"cos", clt_cos, false, false, false},
    {"tanh", clt_tanh, false, false, false},     {"sigmoid", clt_sigmoid, false, false, false},
    {"relu", clt_relu, false, false, true},      {"gelu", clt_gelu, false, false, false},
    {"silu", clt_silu, false, false, false},     {"gelu_tanh", clt_gelu_tanh, false, false, false},
};

START_TEST(test_ops_unary_matches_host)
{
    clt_device *dev = test_device(_i);
    for (int op = 0; op < (int)(sizeof unaries / sizeof *unaries); op++) {
        for (int d = 0; d < NDT; d++) {
            char what[128];
            if ((unaries[op].floats_only && !floating(dtypes[d])) ||
                (unaries[op].no_bool && dtypes[d] == CLT_BOOL) || !test_has_dtype(dev, dtypes[d]))
                continue;
            clt_tensor *h = data(dtypes[d], CLT_SHAPE(4, 6), (unsigned)op, unaries[op].positive);
            clt_tensor *v = clt_slice(h, 1, 1, 6, 2); /* non-contiguous */
            clt_tensor *x = clt_tensor_to(v, dev);
            clt_tensor *want = unaries[op].fn(v), *got = unaries[op].fn(x);
            snprintf(what, sizeof what, "%s %s on %s", unaries[op].name,
                     clt_dtype_name(dtypes[d]), clt_device_name(dev));
            ck_assert_msg(want != NULL, "%s: %s", what, clt_last_error());
            assert_close(got, want, what);
            clt_tensor_release(got);
            clt_tensor_release(want);
            clt_tensor_release(x);
            clt_tensor_release(v);
            clt_tensor_release(h);
        }
    }
}
END_TEST

/* Scalar forms, clamp and where, and a size that is no multiple of any work-group size. */
START_TEST(test_ops_scalar_where_large)
{
    clt_device *dev = test_device(_i);
    for (int d = 0; d < NDT; d++) {
        if (dtypes[d] == CLT_BOOL || !test_has_dtype(dev, dtypes[d]))
            continue;
        clt_tensor *h = data(dtypes[d], CLT_SHAPE(3, 7), 5, false), *x = clt_tensor_to(h, dev);
        clt_tensor *hw = clt_add_scalar(h, 1.5), *dw = clt_add_scalar(x, 1.5);
        assert_close(dw, hw, "add_scalar");
        clt_tensor_release(hw), clt_tensor_release(dw);
        hw = clt_mul_scalar(h, -0.25), dw = clt_mul_scalar(x, -0.25);
        assert_close(dw, hw, "mul_scalar");
        clt_tensor_release(hw), clt_tensor_release(dw);
        hw = clt_sub_scalar(h, 2), dw = clt_sub_scalar(x, 2);
        assert_close(dw, hw, "sub_scalar");
        clt_tensor_release(hw), clt_tensor_release(dw);
        hw = clt_div_scalar(h, 3), dw = clt_div_scalar(x, 3);
        assert_close(dw, hw, "div_scalar");
        clt_tensor_release(hw), clt_tensor_release(dw);
        hw = clt_clamp(h, -1, 2), dw = clt_clamp(x, -1, 2);
        assert_close(dw, hw, "clamp");
        clt_tensor_release(hw), clt_tensor_release(dw);
        clt_tensor *hc = data(CLT_BOOL, CLT_SHAPE(7), 9, false), *dc = clt_tensor_to(hc, dev);
        clt_tensor *hb = data(CLT_F32, CLT_SHAPE(3, 1), 4, false), *db = clt_tensor_to(hb, dev);
        hw = clt_where(hc, h, hb), dw = clt_where(dc, x, db);
        assert_close(dw, hw, "where");
        clt_tensor_release(hw), clt_tensor_release(dw);
        /* addcmul: a row broadcast over x's rows, a column over its columns */
        clt_tensor *hr = data(dtypes[d], CLT_SHAPE(7), 6, false), *dr = clt_tensor_to(hr, dev);
        hw = clt_addcmul(hb, h, hr, 2), dw = clt_addcmul(db, x, dr, 2);
        assert_close(dw, hw, "addcmul");
        clt_tensor *hm = clt_mul(h, hr), *hm2 = clt_mul_scalar(hm, 2), *hs = clt_add(hb, hm2);
        if (dtypes[d] != CLT_F16 && dtypes[d] != CLT_BF16) /* there h * hr rounds on its own */
            assert_close(hw, hs, "addcmul against add and mul");
        clt_tensor *t[] = {hs, hm2, hm, hr, dr, hw, dw};
        for (size_t k = 0; k < sizeof t / sizeof *t; k++)
            clt_tensor_release(t[k]);
        clt_tensor_release(db), clt_tensor_release(hb), clt_tensor_release(dc), clt_tensor_release(hc);
        clt_tensor_release(x), clt_tensor_release(h);
    }
    /* 1000003 elements */
    clt_tensor *h = data(CLT_F32, CLT_SHAPE(1000003), 1, false), *x = clt_tensor_to(h, dev);
    clt_tensor *hw = clt_exp(h), *dw = clt_exp(x);
    assert_close(dw, hw, "exp of 1000003");
    clt_tensor *hs = clt_add(hw, h), *ds = clt_add(dw, x);
    assert_close(ds, hs, "add of 1000003");
    clt_tensor_release(ds), clt_tensor_release(hs), clt_tensor_release(dw), clt_tensor_release(hw);
    clt_tensor_release(x), clt_tensor_release(h);
}
END_TEST

/* The result dtype of a binary operation for every pair, as PyTorch gives it. */
START_TEST(test_ops_promotion_table)
{
    enum { F32 = CLT_F32, F64 = CLT_F64, F16 = CLT_F16, BF = CLT_BF16, I32 = CLT_I32,
           I64 = CLT_I64, U8 = CLT_U8, B = CLT_BOOL };
    /* rows and columns in the order of `dtypes` */
    static const int table[NDT][NDT] = {
        /*          f32  f64  f16  bf16 i32  i64  u8   bool */
        /* f32 */ {F32, F64, F32, F32, F32, F32, F32, F32},
        /* f64 */ {F64, F64, F64, F64, F64, F64, F64, F64},
        /* f16 */ {F32, F64, F16, F32, F16, F16, F16, F16},
        /* bf16 */ {F32, F64, F32, BF, BF, BF, BF, BF},
        /* i32 */ {F32, F64, F16, BF, I32, I64, I32, I32},
        /* i64 */ {F32, F64, F16, BF, I64, I64, I64, I64},
        /* u8 */ {F32, F64, F16, BF, I32, I64, U8, U8},
        /* bool */ {F32, F64, F16, BF, I32, I64, U8, B},
    };
    clt_device *cpu = clt_device_cpu();
    for (int i = 0; i < NDT; i++) {
        for (int j = 0; j < NDT; j++) {
            clt_tensor *a = clt_tensor_ones(CLT_SHAPE(2), dtypes[i], cpu);
            clt_tensor *b = clt_tensor_ones(CLT_SHAPE(2), dtypes[j], cpu);
            clt_tensor *s = clt_add(a, b), *q = clt_div(a, b), *c = clt_lt(a, b);
            ck_assert_msg(clt_tensor_dtype(s) == (clt_dtype)table[i][j], "%s + %s gives %s",
                          clt_dtype_name(dtypes[i]), clt_dtype_name(dtypes[j]),
                          clt_dtype_name(clt_tensor_dtype(s)));
            ck_assert_int_eq(clt_tensor_dtype(q), floating((clt_dtype)table[i][j]) ? table[i][j] : F32);
            ck_assert_int_eq(clt_tensor_dtype(c), CLT_BOOL);
            clt_tensor_release(c), clt_tensor_release(q), clt_tensor_release(s);
            clt_tensor_release(b), clt_tensor_release(a);
        }
        /* a double scalar is a Python float */
        clt_tensor *a = clt_tensor_ones(CLT_SHAPE(2), dtypes[i], cpu);
        clt_tensor *s = clt_add_scalar(a, 1), *e = clt_exp(a);
        ck_assert_int_eq(clt_tensor_dtype(s), floating(dtypes[i]) ? dtypes[i] : CLT_F32);
        ck_assert_int_eq(clt_tensor_dtype(e), floating(dtypes[i]) ? dtypes[i] : CLT_F32);
        clt_tensor_release(e), clt_tensor_release(s), clt_tensor_release(a);
    }
}
END_TEST

static clt_tensor *vec(clt_dtype dt, const double *v, int64_t n, clt_device *dev)
{
    clt_tensor *f = clt_tensor_from_data(1, &n, v, CLT_F64, clt_device_cpu());
    clt_tensor *t = clt_tensor_to_ex(f, &(clt_to_options){.device = dev, .dtype = dt});
    ck_assert_ptr_nonnull(t);
    clt_tensor_release(f);
    return t;
}

static void expect(clt_tensor *t, const double *want, int64_t n, double tol, const char *what)
{
    ck_assert_msg(t != NULL, "%s: %s", what, clt_last_error());
    clt_tensor *c = clt_tensor_to_ex(t, &(clt_to_options){.device = clt_device_cpu(), .dtype = CLT_F64});
    double *v = test_bytes(c);
    ck_assert_int_eq(clt_tensor_numel(t), n);
    for (int64_t i = 0; i < n; i++)
        ELEMENT_CHECK((isnan(want[i]) && isnan(v[i])) || v[i] == want[i] ||
                          fabs(v[i] - want[i]) <= tol,
                      "%s: element %lld is %.10g, want %.10g", what, (long long)i, v[i],
                      want[i]);
    free(v);
    clt_tensor_release(c);
    clt_tensor_release(t);
}

/* Values worked out by hand: wrapping, NaN rules, rounding, integer powers. */
START_TEST(test_ops_values)
{
    clt_device *dev = test_device(_i);
    const double big[] = {2147483647, -2147483648.0, 5}, one[] = {1, -1, 2};
    clt_tensor *a = vec(CLT_I32, big, 3, dev), *b = vec(CLT_I32, one, 3, dev);
    expect(clt_add(a, b), (double[]){-2147483648.0, 2147483647, 7}, 3, 0, "i32 add wraps");
    expect(clt_abs(a), (double[]){2147483647, -2147483648.0, 5}, 3, 0, "abs(INT_MIN) wraps");
    clt_tensor *odd = vec(CLT_I32, (double[]){1, 3, 2}, 3, dev);
    expect(clt_pow(b, odd), (double[]){1, -1, 4}, 3, 0, "integer pow");
    clt_tensor_release(odd);
    clt_tensor_release(a), clt_tensor_release(b);

    const double u[] = {200, 255, 3}, w[] = {100, 1, 4};
    a = vec(CLT_U8, u, 3, dev), b = vec(CLT_U8, w, 3, dev);
    expect(clt_add(a, b), (double[]){44, 0, 7}, 3, 0, "u8 add wraps");
    expect(clt_div(a, b), (double[]){2, 255, 0.75}, 3, 1e-6, "u8 div is f32");
    clt_tensor_release(a), clt_tensor_release(b);

    const double x[] = {NAN, -2, 0, 1}, y[] = {1, NAN, -1, 3};
    a = vec(CLT_F32, x, 4, dev), b = vec(CLT_F32, y, 4, dev);
    expect(clt_maximum(a, b), (double[]){NAN, NAN, 0, 3}, 4, 0, "maximum: NaN wins");
    expect(clt_minimum(a, b), (double[]){NAN, NAN, -1, 1}, 4, 0, "minimum: NaN wins");
    expect(clt_relu(a), (double[]){NAN, 0, 0, 1}, 4, 0, "relu keeps NaN");
    expect(clt_clamp(a, -1, 0.5), (double[]){NAN, -1, 0, 0.5}, 4, 0, "clamp keeps NaN");
    expect(clt_sigmoid(a), (double[]){NAN, 0.11920292202211755, 0.5, 0.7310585786300049}, 4, 1e-6, "sigmoid");
    expect(clt_gelu(a), (double[]){NAN, -0.04550026389635842, 0, 0.8413447460685429}, 4, 1e-6, "gelu (erf)");
    expect(clt_gelu_tanh(a), (double[]){NAN, -0.04540230591222494, 0, 0.8411919906082768}, 4, 1e-6, "gelu (tanh, PyTorch's)");
    expect(clt_silu(a), (double[]){NAN, -0.23840584404423515, 0, 0.7310585786300049}, 4, 1e-6, "silu");
    expect(clt_eq(a, a), (double[]){0, 1, 1, 1}, 4, 0, "NaN != NaN");
    clt_tensor_release(a), clt_tensor_release(b);

    const double h[] = {1, 1, 65504}, g[] = {0.00048828125, 0.0014648438, 32};
    a = vec(CLT_F16, h, 3, dev), b = vec(CLT_F16, g, 3, dev);
    /* computed in f32, rounded once: 1 + 2^-11 ties to 1; 65504 + 32 rounds to inf */
    expect(clt_add(a, b), (double[]){1, 1.001953125, INFINITY}, 3, 0, "f16 add rounds once");
    clt_tensor_release(a), clt_tensor_release(b);

    const double t[] = {1, 0, 1};
    a = vec(CLT_BOOL, t, 3, dev);
    expect(clt_add(a, a), (double[]){1, 0, 1}, 3, 0, "bool + bool is or");
    expect(clt_mul(a, a), (double[]){1, 0, 1}, 3, 0, "bool * bool is and");
    clt_tensor_release(a);
}
END_TEST

/* ---- views -------------------------------------------------------------------------------------- */

static void expect_i64(clt_tensor *t, const int64_t *want, int64_t n, const char *what)
{
    ck_assert_msg(t != NULL, "%s: %s", what, clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(t), n);
    int64_t *v = test_bytes(t);
    for (int64_t i = 0; i < n; i++)
        ELEMENT_CHECK(v[i] == want[i], "%s: element %lld is %lld, want %lld", what,
                      (long long)i, (long long)v[i], (long long)want[i]);
    free(v);
}

START_TEST(test_views_share_storage)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = clt_tensor_arange(0, 24, 1, CLT_I64, dev); /* 0..23 */
    clt_tensor *m = clt_view(x, CLT_SHAPE(2, 3, 4));
    ck_assert_ptr_nonnull(m);
    ck_assert(clt_tensor_is_contiguous(m));
    ck_assert_int_eq(clt_tensor_strides(m)[0], 12);

    clt_tensor *t = clt_transpose(m, 0, 2); /* (4, 3, 2) */
    ck_assert(!clt_tensor_is_contiguous(t));
    ck_assert_int_eq(clt_tensor_size(t, 0), 4);
    expect_i64(t, (int64_t[]){0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21,
                              2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23}, 24, "transpose");
    clt_tensor *p = clt_permute(m, (int[]){1, 2, 0}); /* (3, 4, 2) */
    expect_i64(p, (int64_t[]){0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17,
                              6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23}, 24, "permute");
    clt_tensor *n = clt_narrow(m, 2, 1, 2); /* [..., 1:3] */
    expect_i64(n, (int64_t[]){1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22}, 12, "narrow");
    clt_tensor *s = clt_slice(x, 0, -5, 100, 2);
    expect_i64(s, (int64_t[]){19, 21, 23}, 3, "slice with negative start");
    clt_tensor *u = clt_unsqueeze(n, 0);
    ck_assert_int_eq(clt_tensor_ndim(u), 4);
    clt_tensor *q = clt_squeeze(u, 0);
    ck_assert_int_eq(clt_tensor_ndim(q), 3);
    clt_tensor *col = clt_narrow(m, 2, 0, 1);
    clt_tensor *e = clt_expand(col, CLT_SHAPE(2, 3, 3));
    ck_assert_int_eq(clt_tensor_strides(e)[2], 0);
    expect_i64(e, (int64_t[]){0, 0, 0, 4, 4, 4, 8, 8, 8, 12, 12, 12, 16, 16, 16, 20, 20, 20}, 18, "expand");

    /* a transposed tensor cannot be viewed flat, but reshaped (a copy) */
    ck_assert_ptr_null(clt_view(t, CLT_SHAPE(24)));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_view: a view of shape (24,) is not possible");
    clt_tensor *r = clt_reshape(t, CLT_SHAPE(-1));
    ck_assert(clt_tensor_is_contiguous(r));
    expect_i64(r, (int64_t[]){0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21,
                              2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23}, 24, "reshape copies");
    /* writes through a view reach the base */
    ck_assert_int_eq(clt_fill_(n, -1), CLT_OK);
    expect_i64(x, (int64_t[]){0, -1, -1, 3, 4, -1, -1, 7, 8, -1, -1, 11,
                              12, -1, -1, 15, 16, -1, -1, 19, 20, -1, -1, 23}, 24, "fill_ on a view");

    /* a split of a narrowed dimension is still a view */
    clt_tensor *v2 = clt_view(n, CLT_SHAPE(6, 2));
    ck_assert_ptr_nonnull(v2);
    clt_tensor *c = clt_contiguous(t);
    ck_assert(clt_tensor_is_contiguous(c));
    clt_tensor *same = clt_contiguous(c);
    ck_assert_ptr_eq(same, c);
    clt_tensor_release(same);

    clt_tensor *all[] = {c, v2, r, e, col, q, u, s, n, p, t, m, x};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clt_tensor_release(all[i]);
}
END_TEST

START_TEST(test_views_bad_input)
{
    clt_device *dev = test_device(_i);
    clt_tensor *m = clt_tensor_zeros(CLT_SHAPE(2, 3), CLT_F32, dev);
    ck_assert_ptr_null(clt_transpose(m, 0, 2));
    ck_assert_error_has("clt_transpose: dim 2 is out of range for a tensor of 2 dimensions (valid: -2..1)");
    ck_assert_ptr_null(clt_permute(m, (int[]){0, 0}));
    ck_assert_error_has("dim 0 appears twice");
    ck_assert_ptr_null(clt_narrow(m, 1, 2, 2));
    ck_assert_error_has("clt_narrow: start 2 and length 2 are out of range for dimension 1 of size 3");
    ck_assert_ptr_null(clt_expand(m, CLT_SHAPE(4, 3)));
    ck_assert_error_has("clt_expand: a tensor of shape (2, 3) cannot be expanded to (4, 3)");
    ck_assert_ptr_null(clt_view(m, CLT_SHAPE(4, 2)));
    ck_assert_error_has("shape (4, 2) is invalid for a tensor of shape (2, 3) (6 elements)");
    ck_assert_ptr_null(clt_reshape(m, CLT_SHAPE(-1, -1)));
    ck_assert_ptr_null(clt_unsqueeze(m, 3));
    ck_assert_error_has("valid: -3..2");
    ck_assert_ptr_null(clt_slice(m, 0, 0, 2, 0));
    ck_assert_ptr_null(clt_contiguous(NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    clt_tensor_release(m);
}
END_TEST

/* clt_cat of contiguous parts of one dtype, each one run of the result (the backends' copy_runs,
 * 8 parts a launch): 11 parts of 0 to 13 elements, views with offsets among them, in f32, i64
 * and u8 (elements of 4, 8 and 1 bytes); along dimension 1 of (1, n) parts too, and of (2, n)
 * parts, which are not runs; and the gradient through it. */
START_TEST(test_cat_runs)
{
    clt_device *dev = test_device(_i);
    enum { PARTS = 11 };
    static const int64_t len[PARTS] = {5, 0, 7, 1, 3, 9, 2, 4, 6, 8, 13};
    static const clt_dtype dtypes[] = {CLT_F32, CLT_I64, CLT_U8};
    int64_t want[PARTS * 13], n = 0;
    for (int k = 0; k < PARTS; k++)
        for (int64_t e = 0; e < len[k]; e++)
            want[n++] = k * 20 + e;
    for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++) {
        clt_tensor *parts[PARTS], *rows[PARTS];
        for (int k = 0; k < PARTS; k++) {
            int64_t off = k % 3;
            clt_tensor *base = clt_tensor_arange((double)(k * 20 - off), (double)(k * 20 + len[k]),
                                                 1, dtypes[d], dev);
            parts[k] = clt_narrow(base, 0, off, len[k]);
            rows[k] = clt_view(parts[k], CLT_SHAPE(1, len[k]));
            ck_assert_msg(parts[k] && rows[k], "%s", clt_last_error());
            clt_tensor_release(base);
        }
        char what[64];
        clt_tensor *flat = clt_cat(parts, PARTS, 0), *wide = clt_cat(rows, PARTS, 1);
        clt_tensor *f64 = flat ? clt_tensor_to_dtype(flat, CLT_I64) : NULL;
        clt_tensor *w64 = wide ? clt_tensor_to_dtype(wide, CLT_I64) : NULL;
        snprintf(what, sizeof what, "%s parts along 0", clt_dtype_name(dtypes[d]));
        expect_i64(f64, want, n, what);
        snprintf(what, sizeof what, "%s (1, n) parts along 1", clt_dtype_name(dtypes[d]));
        expect_i64(w64, want, n, what);
        ck_assert_int_eq(clt_tensor_size(wide, 1), n);
        clt_tensor *all[] = {w64, f64, wide, flat};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            clt_tensor_release(all[i]);
        for (int k = 0; k < PARTS; k++)
            clt_tensor_release(rows[k]), clt_tensor_release(parts[k]);
    }
    /* on cpu, parts still landing from the device (non-blocking copies queued behind a long
     * product): the joined copy waits for them */
    if (!clt__is_host(dev)) {
        enum { N = 1 << 20 };
        clt_tensor *big = clt_tensor_ones(CLT_SHAPE(512, 512), CLT_F32, dev), *prods[4];
        for (int k = 0; k < 4; k++)
            prods[k] = clt_matmul(big, big);
        clt_tensor *src = clt_tensor_arange(0, N, 1, CLT_F32, dev);
        clt_tensor *down = clt_tensor_to_ex(src, &(clt_to_options){.device = clt_device_cpu(),
                                                                   .non_blocking = true});
        ck_assert_msg(down, "%s", clt_last_error());
        clt_tensor *twice = clt_cat((clt_tensor *[]){down, down}, 2, 0);
        ck_assert_msg(twice, "%s", clt_last_error());
        const float *v = clt_tensor_data(twice);
        for (int64_t i = 0; i < 2 * (int64_t)N; i += 4099)
            ck_assert_msg(v[i] == (float)(i % N), "element %lld is %g", (long long)i, v[i]);
        ck_assert(v[2 * N - 1] == (float)(N - 1));
        clt_tensor_release(twice), clt_tensor_release(down), clt_tensor_release(src);
        for (int k = 0; k < 4; k++)
            clt_tensor_release(prods[k]);
        clt_tensor_release(big);
    }
    /* (2, n) parts along 1: two runs each, copied one part at a time */
    clt_tensor *a6 = clt_tensor_arange(0, 6, 1, CLT_I64, dev), *b4 = clt_tensor_arange(6, 10, 1, CLT_I64, dev);
    clt_tensor *a = clt_view(a6, CLT_SHAPE(2, 3)), *b = clt_view(b4, CLT_SHAPE(2, 2));
    clt_tensor *ab = clt_cat((clt_tensor *[]){a, b}, 2, 1);
    expect_i64(ab, (int64_t[]){0, 1, 2, 6, 7, 3, 4, 5, 8, 9}, 10, "(2, n) parts along 1");
    clt_tensor *made[] = {ab, b, a, b4, a6};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++)
        clt_tensor_release(made[i]);
    /* the gradient of sum(cat(x, y) * weights): each part's own weights */
    clt_tensor *x = clt_tensor_arange(0, 3, 1, CLT_F32, dev), *y = clt_tensor_arange(0, 4, 1, CLT_F32, dev);
    clt_tensor_set_requires_grad(x, true);
    clt_tensor_set_requires_grad(y, true);
    clt_tensor *weights = clt_tensor_arange(10, 17, 1, CLT_F32, dev);
    clt_tensor *xy = clt_cat((clt_tensor *[]){x, y}, 2, 0);
    clt_tensor *prod = xy ? clt_mul(xy, weights) : NULL, *total = prod ? clt_sum(prod, NULL, 0, false) : NULL;
    ck_assert_msg(total && clt_backward(total, NULL, false) == CLT_OK, "%s", clt_last_error());
    clt_tensor *gx = clt_tensor_grad(x), *gy = clt_tensor_grad(y);
    expect(gx, (double[]){10, 11, 12}, 3, 0, "cat's gradient, first part"); /* (released) */
    expect(gy, (double[]){13, 14, 15, 16}, 4, 0, "cat's gradient, second part");
    clt_tensor *rest[] = {total, prod, xy, weights, y, x};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
        clt_tensor_release(rest[i]);
}
END_TEST

START_TEST(test_cat_stack)
{
    clt_device *dev = test_device(_i);
    clt_tensor *a = clt_tensor_arange(0, 6, 1, CLT_I64, dev), *b = clt_tensor_arange(6, 10, 1, CLT_I32, dev);
    clt_tensor *a2 = clt_view(a, CLT_SHAPE(3, 2)), *b2 = clt_view(b, CLT_SHAPE(2, 2));
    clt_tensor *rows = clt_cat((clt_tensor *[]){a2, b2}, 2, 0);
    ck_assert_int_eq(clt_tensor_dtype(rows), CLT_I64);
    expect_i64(rows, (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 10, "cat rows");
    clt_tensor *at = clt_transpose(a2, 0, 1), *bt = clt_transpose(b2, 0, 1);
    clt_tensor *cols = clt_cat((clt_tensor *[]){at, bt}, 2, -1); /* (2, 5) */
    expect_i64(cols, (int64_t[]){0, 2, 4, 6, 8, 1, 3, 5, 7, 9}, 10, "cat columns of views");
    clt_tensor *st = clt_stack((clt_tensor *[]){b2, b2}, 2, 1); /* (2, 2, 2) */
    ck_assert_int_eq(clt_tensor_size(st, 1), 2);
    clt_tensor *st64 = clt_tensor_to_dtype(st, CLT_I64);
    expect_i64(st64, (int64_t[]){6, 7, 6, 7, 8, 9, 8, 9}, 8, "stack");
    clt_tensor_release(st64);
    ck_assert_ptr_null(clt_cat((clt_tensor *[]){a2, bt}, 2, 1));
    ck_assert_error_has("clt_cat: tensor 1 of shape (2, 2) does not match tensor 0 of shape (3, 2) except in dimension 1");
    ck_assert_ptr_null(clt_stack((clt_tensor *[]){a2, b2}, 2, 0));
    ck_assert_error_has("clt_stack: tensor 1 of shape (2, 2) differs");
    ck_assert_ptr_null(clt_cat(NULL, 0, 0));
    clt_tensor *all[] = {st, cols, bt, at, rows, b2, a2, b, a};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clt_tensor_release(all[i]);
}
END_TEST

START_TEST(test_in_place)
{
    clt_device *dev = test_device(_i), *other = test_device(_i == 0 && test_device_total > 1 ? 1 : 0);
    clt_tensor *x = clt_tensor_zeros(CLT_SHAPE(2, 3), CLT_F32, dev);
    clt_tensor *row = clt_tensor_arange(1, 4, 1, CLT_F32, dev);
    ck_assert_int_eq(clt_add_(x, row), CLT_OK);
    ck_assert_int_eq(clt_add_(x, row), CLT_OK);
    ck_assert_int_eq(clt_mul_(x, row), CLT_OK);
    expect(clt_tensor_retain(x), (double[]){2, 8, 18, 2, 8, 18}, 6, 0, "add_ and mul_ broadcast");

    /* into an integer tensor: an integer result converts, a floating one is refused */
    clt_tensor *i = clt_tensor_ones(CLT_SHAPE(3), CLT_I32, dev);
    clt_tensor *l = clt_tensor_full(CLT_SHAPE(3), 5, CLT_I64, dev);
    ck_assert_int_eq(clt_add_(i, l), CLT_OK);
    expect(clt_tensor_retain(i), (double[]){6, 6, 6}, 3, 0, "i32 += i64");
    ck_assert_int_eq(clt_add_(i, row), CLT_ERR_DTYPE);
    ck_assert_error_has("clt_add_: the result type f32 cannot be stored in i32");
    /* a broadcast view cannot be written */
    clt_tensor *e = clt_expand(row, CLT_SHAPE(2, 3));
    ck_assert_int_eq(clt_add_(e, x), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_add_(row, x), CLT_ERR_SHAPE);

    /* fill_ and copy_ through views; copy_ takes a source from another device */
    clt_tensor *col = clt_narrow(x, 1, 1, 1);
    ck_assert_int_eq(clt_fill_(col, -3), CLT_OK);
    clt_tensor *src = clt_tensor_arange(10, 12, 1, test_has_dtype(other, CLT_F64) ? CLT_F64 : CLT_I64, other);
    clt_tensor *first = clt_narrow(x, 1, 0, 1);
    clt_tensor *src2 = clt_view(src, CLT_SHAPE(2, 1));
    ck_assert_int_eq(clt_copy_(first, src2), CLT_OK);
    expect(clt_tensor_retain(x), (double[]){10, -3, 18, 11, -3, 18}, 6, 0, "fill_ and copy_ on views");
    clt_tensor *all[] = {src2, first, src, col, e, l, i, row, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

/* In-place forms read inputs that overlap the output at other positions as they were. */
START_TEST(test_in_place_overlap)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = clt_tensor_arange(0, 5, 1, CLT_F32, dev);
    clt_tensor *hi = clt_slice(x, 0, 1, 5, 1), *lo = clt_slice(x, 0, 0, 4, 1);
    ck_assert_int_eq(clt_add_(hi, lo), CLT_OK);
    expect(clt_tensor_retain(x), (double[]){0, 1, 3, 5, 7}, 5, 0, "x[1:] += x[:-1]");
    clt_tensor *m = clt_tensor_arange(0, 4, 1, CLT_F32, dev), *m2 = clt_view(m, CLT_SHAPE(2, 2));
    clt_tensor *t = clt_transpose(m2, 0, 1);
    ck_assert_int_eq(clt_copy_(m2, t), CLT_OK);
    expect(clt_tensor_retain(m), (double[]){0, 2, 1, 3}, 4, 0, "m.copy_(m.T)");
    ck_assert_int_eq(clt_mul_(m2, m2), CLT_OK); /* the same elements: no copy needed */
    expect(clt_tensor_retain(m), (double[]){0, 4, 1, 9}, 4, 0, "m *= m");
    expect(clt_clamp(x, 3, 1), (double[]){1, 1, 1, 1, 1}, 5, 0, "clamp with lo > hi gives hi");
    ck_assert_ptr_null(clt_stack((clt_tensor *[]){x, clt_tensor_retain(NULL)}, 1, 2));
    clt_tensor *zero_d = clt_tensor_zeros(0, NULL, CLT_F32, dev);
    ck_assert_ptr_null(clt_stack((clt_tensor *[]){zero_d, x}, 2, 0));
    ck_assert_error_has("clt_stack: tensor 1 of shape (5,) differs from tensor 0 of shape ()");
    clt_tensor *all[] = {zero_d, t, m2, m, lo, hi, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

START_TEST(test_ops_bad_input)
{
    clt_device *dev = test_device(_i);
    clt_tensor *a = clt_tensor_ones(CLT_SHAPE(2, 3), CLT_F32, dev);
    clt_tensor *b = clt_tensor_ones(CLT_SHAPE(4), CLT_F32, dev);
    clt_tensor *flag = clt_tensor_ones(CLT_SHAPE(3), CLT_BOOL, dev);
    ck_assert_ptr_null(clt_mul(a, b));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_mul: shapes (2, 3) and (4,) cannot be broadcast together (dimension 1: 3 and 4)");
    ck_assert_ptr_null(clt_sub(flag, flag));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    ck_assert_error_has("clt_sub: dtype bool is not supported (on ");
    ck_assert_ptr_null(clt_where(a, a, a));
    ck_assert_error_has("clt_where: the condition must be bool, not f32");
    ck_assert_ptr_null(clt_addcmul(a, a, b, 1));
    ck_assert_error_has("clt_addcmul: shapes (2, 3) and (4,) cannot be broadcast together");
    ck_assert_ptr_null(clt_addcmul(flag, flag, flag, 1));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    ck_assert_error_has("clt_addcmul: dtype bool is not supported (on ");
    clt_tensor *ints = clt_tensor_ones(CLT_SHAPE(3), CLT_I32, dev);
    ck_assert_ptr_null(clt_addcmul(ints, ints, flag, 0.5));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has(
        "clt_addcmul: value 0.5 is not an integer, and the tensors are of dtype i32");
    ck_assert_ptr_null(clt_addcmul(a, NULL, a, 1));
    ck_assert_error_has("clt_addcmul: tensor is NULL");
    clt_tensor_release(ints);
    ck_assert_ptr_null(clt_add(NULL, a));
    ck_assert_error_has("clt_add: tensor is NULL");
    if (test_device_total > 1) {
        clt_device *other = test_device(_i == 0 ? 1 : 0);
        clt_tensor *c = clt_tensor_ones(CLT_SHAPE(2, 3), CLT_F32, other);
        char msg[128];
        ck_assert_ptr_null(clt_add(a, c));
        ck_assert_int_eq(clt_last_status(), CLT_ERR_DEVICE_MISMATCH);
        snprintf(msg, sizeof msg, "clt_add: expected all tensors on the same device, got %s and %s",
                 clt_device_name(dev), clt_device_name(other));
        ck_assert_error_has(msg);
        ck_assert_ptr_null(clt_where(flag, a, c));
        ck_assert_int_eq(clt_add_(a, c), CLT_ERR_DEVICE_MISMATCH);
        clt_tensor_release(c);
    }
    clt_tensor_release(flag), clt_tensor_release(b), clt_tensor_release(a);
}
END_TEST

/* Sizes near the 64-bit limit: every view either has a shape whose elements it really holds
 * or fails with an error naming the function, and nothing reads or writes out of bounds. */
START_TEST(test_views_size_limits)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = clt_tensor_arange(0, 5, 1, CLT_I64, dev); /* 0..4 */
    /* x[0:5:huge] is x[0:1], x[3:5:huge] is x[3:4], as in Python */
    clt_tensor *a = clt_slice(x, 0, 0, 5, INT64_MAX - 1), *b = clt_slice(x, 0, 0, 5, INT64_MAX);
    clt_tensor *c = clt_slice(x, 0, 3, 5, INT64_MAX / 2);
    expect_i64(a, (int64_t[]){0}, 1, "x[0:5:INT64_MAX - 1]");
    expect_i64(b, (int64_t[]){0}, 1, "x[0:5:INT64_MAX]");
    expect_i64(c, (int64_t[]){3}, 1, "x[3:5:INT64_MAX / 2]");
    clt_tensor *e = clt_slice(x, 0, INT64_MIN, INT64_MAX, 2);
    expect_i64(e, (int64_t[]){0, 2, 4}, 3, "x[-huge:huge:2]");
    ck_assert_int_eq(clt_fill_(a, 7), CLT_OK);
    ck_assert_int_eq(clt_fill_(c, 9), CLT_OK);
    expect_i64(x, (int64_t[]){7, 1, 2, 9, 4}, 5, "fill_ through the one-element slices");

    /* a shape whose product wraps is no shape of four elements */
    ck_assert_ptr_null(clt_view(x, CLT_SHAPE(((int64_t)1 << 62) + 1, 4)));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_view: shape (4611686018427387905, 4) is invalid for a tensor of shape (5,)");
    clt_tensor *four = clt_narrow(x, 0, 0, 4);
    ck_assert_ptr_null(clt_reshape(four, CLT_SHAPE(((int64_t)1 << 62) + 1, 4)));
    ck_assert_error_has("clt_reshape: shape (4611686018427387905, 4) is invalid");
    ck_assert_ptr_null(clt_view(four, CLT_SHAPE(-1, (int64_t)1 << 62, 4)));
    ck_assert_error_has("clt_view: shape (-1, 4611686018427387904, 4) is invalid");
    clt_tensor *none = clt_tensor_zeros(CLT_SHAPE(0), CLT_F32, dev);
    /* no elements, but sizes whose strides would overflow */
    ck_assert_ptr_null(clt_view(none, CLT_SHAPE(INT64_MAX, 2, 0)));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    clt_tensor *ok = clt_view(none, CLT_SHAPE(INT64_MAX, 0));
    ck_assert_ptr_nonnull(ok);
    ck_assert_int_eq(clt_tensor_numel(ok), 0);

    /* narrow: start + length past INT64_MAX is out of range, not an empty view */
    ck_assert_ptr_null(clt_narrow(x, 0, 2, INT64_MAX));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_narrow: start 2 and length 9223372036854775807 are out of range");

    /* expand: (2^32)^2 elements do not fit in 64 bits; (2^31)^2 do, as a view */
    clt_tensor *one = clt_narrow(x, 0, 1, 1), *one2 = clt_view(one, CLT_SHAPE(1, 1));
    ck_assert_ptr_null(clt_expand(one2, CLT_SHAPE((int64_t)1 << 32, (int64_t)1 << 32)));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_expand: a view of shape (4294967296, 4294967296) would have more than");
    clt_tensor *big = clt_expand(one2, CLT_SHAPE((int64_t)1 << 31, (int64_t)1 << 31));
    ck_assert_ptr_nonnull(big);
    ck_assert_int_eq(clt_tensor_numel(big), (int64_t)1 << 62);
    clt_tensor *corner = clt_narrow(big, 1, ((int64_t)1 << 31) - 1, 1);
    clt_tensor *tiny = corner ? clt_narrow(corner, 0, 5, 2) : NULL;
    expect_i64(tiny, (int64_t[]){1, 1}, 2, "a corner of the expanded view");

    /* cat: sizes that add up past INT64_MAX */
    clt_tensor *half = clt_expand(one, CLT_SHAPE((int64_t)1 << 62));
    ck_assert_ptr_nonnull(half);
    ck_assert_ptr_null(clt_cat((clt_tensor *[]){half, half}, 2, 0));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_cat: the sizes of dimension 0 add up to more than 9223372036854775807");

    /* unsqueeze of a one-element slice whose stride is huge */
    clt_tensor *u = clt_unsqueeze(a, 0);
    expect_i64(u, (int64_t[]){7}, 1, "unsqueeze of x[0:5:huge]");
    clt_tensor *all[] = {u, half, tiny, corner, big, one2, one, ok, none, four, e, c, b, a, x};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clt_tensor_release(all[i]);
}
END_TEST

/* An integer to a negative integer power is refused, as PyTorch refuses it. */
START_TEST(test_ops_pow_negative_integer_exponent)
{
    clt_device *dev = test_device(_i);
    static const clt_dtype exps[] = {CLT_I32, CLT_I64};
    clt_tensor *base = test_tensor(dev, CLT_I64, (double[]){2, 3, -2}, 1, (int64_t[]){3});
    for (int k = 0; k < 2; k++) {
        clt_tensor *neg = test_tensor(dev, exps[k], (double[]){3, -1, 2}, 1, (int64_t[]){3});
        clt_tensor *pos = test_tensor(dev, exps[k], (double[]){3, 2, 0}, 1, (int64_t[]){3});
        ck_assert_ptr_null(clt_pow(base, neg));
        ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
        ck_assert_error_has("clt_pow: integers to negative integer powers are not allowed "
                            "(the exponent holds -1)");
        ck_assert_ptr_null(clt_pow(neg, neg)); /* i32 ** i32 too */
        clt_tensor *p = clt_pow(base, pos);
        expect_i64(p, (int64_t[]){8, 9, 1}, 3, "integer ** non-negative");
        clt_tensor_release(p);
        /* a floating side makes it a floating power: allowed */
        clt_tensor *f = clt_tensor_to_dtype(base, CLT_F32);
        expect(clt_pow(f, neg), (double[]){8, 1.0 / 3, 4}, 3, 1e-6, "f32 ** negative integers");
        clt_tensor_release(f), clt_tensor_release(pos), clt_tensor_release(neg);
    }
    clt_tensor_release(base);
}
END_TEST

typedef struct fault_case {
    clt_tensor *a, *b, *t; /* t: a transposed */
    clt_tensor *ia, *ib;   /* i64 operands of an integer power (its exponent read back) */
    int which;
} fault_case;

static bool run_fault_case(void *ctx)
{
    fault_case *c = ctx;
    clt_tensor *r = NULL;
    clt_tensor *t = NULL;
    switch (c->which) {
    case 0: r = clt_add(c->a, c->b); break;           /* broadcast, converting b */
    case 1: r = clt_contiguous(c->t); break;
    case 2: r = clt_cat((clt_tensor *[]){c->a, c->a}, 2, 0); break;
    case 3: r = clt_pow(c->ia, c->ib); break;
    default: return clt_add_(c->a, c->b) == CLT_OK;
    }
    clt_tensor_release(t);
    clt_tensor_release(r);
    return r != NULL;
}

START_TEST(test_ops_allocation_failures)
{
    static const char *const fns[] = {"clt_add", "clt_contiguous", "clt_cat", "clt_pow",
                                      "clt_add_"};
    clt_device *dev = test_device(_i);
    fault_case c = {clt_tensor_ones(CLT_SHAPE(3, 4), CLT_F32, dev),
                    clt_tensor_ones(CLT_SHAPE(4), CLT_F16, dev), NULL,
                    clt_tensor_full(CLT_SHAPE(3, 4), 2, CLT_I64, dev),
                    clt_tensor_full(CLT_SHAPE(4), 3, CLT_I64, dev), 0};
    c.t = clt_transpose(c.a, 0, 1);
    for (c.which = 0; c.which < 5; c.which++) {
        test_fault_sweep(run_fault_case, &c, fns[c.which], CLT__HOST);
        test_fault_sweep(run_fault_case, &c, fns[c.which], CLT__DEVICE);
    }
    clt_tensor_release(c.ib);
    clt_tensor_release(c.ia);
    clt_tensor_release(c.t);
    clt_tensor_release(c.b);
    clt_tensor_release(c.a);
}
END_TEST

/* Broadcast and strided layouts whose dimensions the front end merges and whose innermost rows
 * the host walks as loops of their own (a per-channel operand, a broadcast first operand, a
 * transposed one, size-1 dimensions between): sub and div (which tell their operands apart)
 * against the definition computed here, in f32 and f64, on every device. */
START_TEST(test_ops_broadcast_layouts)
{
    static const struct {
        int na, nb;
        int64_t a[4], b[4];
        bool transpose_a;
    } cases[] = {
        {4, 4, {2, 3, 4, 5}, {1, 3, 1, 1}, false}, /* (2, 3, 20) and a per-channel operand */
        {4, 4, {1, 3, 1, 1}, {2, 3, 4, 5}, false}, /* the broadcast one first */
        {4, 1, {2, 3, 4, 5}, {5}, false},          /* (24, 5) against one row */
        {3, 3, {2, 1, 3}, {2, 1, 1}, false},       /* size 1 between */
        {2, 2, {6, 4}, {1, 6}, true},              /* a transposed (4, 6) and a row */
        {2, 2, {3, 5}, {5, 1}, true},              /* a transposed (5, 3) and a column */
    };
    clt_device *dev = test_device(_i);
    for (size_t k = 0; k < 2 * sizeof cases / sizeof *cases; k++) {
        const int c = (int)(k / 2);
        clt_dtype dt = k % 2 && clt_device_get_info(dev)->fp64 ? CLT_F64 : CLT_F32;
        clt_tensor *ha = data(CLT_F64, cases[c].na, cases[c].a, (unsigned)k + 1, true);
        clt_tensor *hb = data(CLT_F64, cases[c].nb, cases[c].b, (unsigned)k + 50, true);
        double *av = test_values(ha), *bv = test_values(hb);
        int64_t as[4], bs[4], shape[4], ashape[4];
        int nd = cases[c].na > cases[c].nb ? cases[c].na : cases[c].nb;
        /* a's logical shape (transposed: its two dimensions swapped) and row-major strides
         * into its values as stored */
        for (int d = 0; d < cases[c].na; d++)
            ashape[d] = cases[c].a[d];
        int64_t st = 1, stored[4];
        for (int d = cases[c].na - 1; d >= 0; d--)
            stored[d] = st, st *= cases[c].a[d];
        if (cases[c].transpose_a) {
            int64_t t = ashape[0];
            ashape[0] = ashape[1], ashape[1] = t;
            t = stored[0], stored[0] = stored[1], stored[1] = t;
        }
        for (int d = 0; d < nd; d++) {
            int da = d - (nd - cases[c].na), db = d - (nd - cases[c].nb);
            int64_t sa = da >= 0 ? ashape[da] : 1, sb = db >= 0 ? cases[c].b[db] : 1;
            shape[d] = sa > sb ? sa : sb;
            as[d] = da >= 0 && sa == shape[d] ? stored[da] : 0;
            bs[d] = 1;
            for (int e = db + 1; db >= 0 && e < cases[c].nb; e++)
                bs[d] *= cases[c].b[e];
            bs[d] = db >= 0 && sb == shape[d] ? bs[d] : 0;
        }
        int64_t n = 1;
        for (int d = 0; d < nd; d++)
            n *= shape[d];
        double *sub = malloc((size_t)n * sizeof *sub), *quo = malloc((size_t)n * sizeof *quo);
        for (int64_t i = 0; i < n; i++) {
            int64_t rest = i, ia = 0, ib = 0;
            for (int d = nd - 1; d >= 0; d--) {
                int64_t x = rest % shape[d];
                rest /= shape[d];
                ia += x * as[d], ib += x * bs[d];
            }
            double x = dt == CLT_F32 ? (double)(float)av[ia] : av[ia];
            double y = dt == CLT_F32 ? (double)(float)bv[ib] : bv[ib];
            sub[i] = x - y, quo[i] = x / y;
        }
        /* a as stored on the device, transposed there: a strided operand */
        clt_tensor *a0 = clt_tensor_to_ex(ha, &(clt_to_options){.device = dev, .dtype = dt});
        clt_tensor *a = cases[c].transpose_a ? clt_transpose(a0, 0, 1) : clt_tensor_retain(a0);
        clt_tensor *b = clt_tensor_to_ex(hb, &(clt_to_options){.device = dev, .dtype = dt});
        char what[96];
        snprintf(what, sizeof what, "case %d sub (%s)", c, clt_dtype_name(dt));
        expect(clt_sub(a, b), sub, n, dt == CLT_F32 ? 1e-5 : 1e-13, what);
        snprintf(what, sizeof what, "case %d div (%s)", c, clt_dtype_name(dt));
        expect(clt_div(a, b), quo, n, dt == CLT_F32 ? 1e-5 : 1e-13, what);
        clt_tensor_release(a), clt_tensor_release(b), clt_tensor_release(a0);
        clt_tensor_release(ha), clt_tensor_release(hb);
        free(sub), free(quo), free(av), free(bv);
    }
}
END_TEST

Suite *suite_ops(void)
{
    Suite *s = suite_create("ops");
    TCase *tc = test_case("elementwise", 300);
    ADD_DEVICE_TEST(tc, test_ops_binary_matches_host);
    ADD_DEVICE_TEST(tc, test_ops_unary_matches_host);
    ADD_DEVICE_TEST(tc, test_ops_scalar_where_large);
    tcase_add_test(tc, test_ops_promotion_table);
    ADD_DEVICE_TEST(tc, test_ops_values);
    ADD_DEVICE_TEST(tc, test_ops_broadcast_layouts);
    ADD_DEVICE_TEST(tc, test_ops_bad_input);
    ADD_DEVICE_TEST(tc, test_ops_pow_negative_integer_exponent);
    ADD_DEVICE_TEST(tc, test_ops_allocation_failures);
    suite_add_tcase(s, tc);
    tc = test_case("views", 300);
    ADD_DEVICE_TEST(tc, test_views_share_storage);
    ADD_DEVICE_TEST(tc, test_views_bad_input);
    ADD_DEVICE_TEST(tc, test_cat_stack);
    ADD_DEVICE_TEST(tc, test_cat_runs);
    ADD_DEVICE_TEST(tc, test_in_place);
    ADD_DEVICE_TEST(tc, test_in_place_overlap);
    ADD_DEVICE_TEST(tc, test_views_size_limits);
    suite_add_tcase(s, tc);
    return s;
}
