/* Reduce suite: every reduction on every device against the host and against values computed
 * here in double; layouts (transposed and sliced views, several dims, keepdim), sizes 1, 7 and
 * 1000003, an accurate f32 sum of 10^7 elements, f16 and bf16, NaN and infinities, ties, empty
 * and 0-d tensors, result dtypes, every error, and allocation failures that change nothing.
 * Random inputs are fresh on every run: the seed comes from CLT_TEST_SEED, or else the clock, and
 * every failure message names it.
 *
 * Error bounds against the value computed in double from the very same input values, for
 * floating results: |got - want| <= out * |want| + acc * scale, with
 *   dtype   out (rounding to the result dtype)   acc (accumulation)
 *   f64     2^-52                                1e-13
 *   f32     2^-23                                2e-6 (var, std, logsumexp: 1e-5)
 *   f16     2^-10                                as f32 (computed in f32)
 *   bf16    2^-7                                 as f32
 * and scale sum(|x|) for sum, sum(|x|) / N for mean, |want| for var and std, and
 * |want| + max(|x|) for logsumexp. Device against host: twice these bounds. Integer sums,
 * max, min (their bits), argmax and argmin must be exact, against the host and the reference. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "ops/ops_internal.h"

/* ---- random numbers ------------------------------------------------------------------------- */

static uint64_t seed_value, rng;

static uint64_t test_seed(void)
{
    if (!seed_value) {
        const char *env = getenv("CLT_TEST_SEED");
        seed_value = env && *env ? strtoull(env, NULL, 0)
                                 : (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
        if (!seed_value)
            seed_value = 1;
        rng = seed_value;
    }
    return seed_value;
}

static uint64_t next_u64(void) /* splitmix64 */
{
    test_seed();
    uint64_t z = (rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(next_u64() >> 11) * 0x1.0p-53;
}

/* ---- tensors -------------------------------------------------------------------------------- */

static const clt_dtype all_dtypes[] = {CLT_F32, CLT_F64, CLT_F16, CLT_BF16,
                                       CLT_I32, CLT_I64, CLT_U8,  CLT_BOOL};
#define NDTYPES 8

static bool is_float(clt_dtype dt)
{
    return dt == CLT_F32 || dt == CLT_F64 || dt == CLT_F16 || dt == CLT_BF16;
}

static bool holds(clt_device *dev, clt_dtype dt)
{
    return dt != CLT_F64 || clt_device_get_info(dev)->fp64;
}

/* A cpu tensor of dtype dt holding v (n values) converted by the library's rules. */
static clt_tensor *from_doubles(const double *v, int ndim, const int64_t *shape, clt_dtype dt)
{
    clt_tensor *d = clt_tensor_from_data(ndim, shape, v, CLT_F64, clt_device_cpu());
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    clt_tensor *t = clt_tensor_to_dtype(d, dt);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    clt_tensor_release(d);
    return t;
}

/* Random values suited to dt: floats in [-2, 2), integers in [-1000, 1000], u8 0..255, bool
 * 0 or 1. */
static double random_value(clt_dtype dt)
{
    switch (dt) {
    case CLT_U8: return (double)(next_u64() % 256);
    case CLT_BOOL: return (double)(next_u64() % 2);
    case CLT_I32:
    case CLT_I64: return (double)((int64_t)(next_u64() % 2001) - 1000);
    default: return uniform(-2, 2);
    }
}

static clt_tensor *random_tensor(clt_dtype dt, int ndim, const int64_t *shape)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= (size_t)shape[d];
    double *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = random_value(dt);
    clt_tensor *t = from_doubles(v, ndim, shape, dt);
    free(v);
    return t;
}

/* The tensor's values in row-major order as doubles (exact for every dtype but large i64). */
static double *values(clt_tensor *t)
{
    clt_to_options o = {.device = clt_device_cpu(), .dtype = CLT_F64};
    clt_tensor *c = clt_tensor_to_ex(t, &o);
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    double *v = test_bytes(c);
    clt_tensor_release(c);
    return v;
}

static clt_tensor *on(clt_tensor *x, clt_device *dev)
{
    clt_tensor *t = clt_tensor_to(x, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    return t;
}

/* ---- the reductions under test and their reference ---------------------------------------- */

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_ARGMAX, R_ARGMIN, R_VAR, R_STD, R_LSE, R_COUNT } red;
static const char *const red_names[R_COUNT] = {"sum",    "mean",   "max", "min",      "argmax",
                                               "argmin", "var",    "std", "logsumexp"};

typedef struct spec {
    red r;
    int ndims; /* 0: all; argmax and argmin: flattened */
    int dims[CLT_MAX_DIMS];
    bool keepdim;
    int64_t correction;
} spec;

static bool applies(red r, clt_dtype dt, const spec *s)
{
    if ((r == R_MEAN || r == R_VAR || r == R_STD) && !is_float(dt))
        return false;
    if ((r == R_ARGMAX || r == R_ARGMIN) && s->ndims > 1)
        return false;
    return true;
}

static clt_tensor *run_red(red r, clt_tensor *x, const spec *s)
{
    switch (r) {
    case R_SUM: return clt_sum(x, s->dims, s->ndims, s->keepdim);
    case R_MEAN: return clt_mean(x, s->dims, s->ndims, s->keepdim);
    case R_MAX: return clt_amax(x, s->dims, s->ndims, s->keepdim);
    case R_MIN: return clt_amin(x, s->dims, s->ndims, s->keepdim);
    case R_ARGMAX: return s->ndims ? clt_argmax(x, s->dims[0], s->keepdim) : clt_argmax_all(x);
    case R_ARGMIN: return s->ndims ? clt_argmin(x, s->dims[0], s->keepdim) : clt_argmin_all(x);
    case R_VAR: return clt_var(x, s->dims, s->ndims, s->correction, s->keepdim);
    case R_STD: return clt_std(x, s->dims, s->ndims, s->correction, s->keepdim);
    default: return clt_logsumexp(x, s->dims, s->ndims, s->keepdim);
    }
}

static clt_dtype result_dtype(red r, clt_dtype dt)
{
    switch (r) {
    case R_SUM: return is_float(dt) ? dt : CLT_I64;
    case R_ARGMAX:
    case R_ARGMIN: return CLT_I64;
    case R_LSE: return is_float(dt) ? dt : CLT_F32;
    default: return dt;
    }
}

/* Which dims of x the spec reduces. */
static void reduced_dims(const spec *s, int ndim, bool *red_dims)
{
    for (int d = 0; d < CLT_MAX_DIMS; d++)
        red_dims[d] = s->ndims == 0;
    for (int i = 0; i < s->ndims; i++)
        red_dims[s->dims[i] < 0 ? s->dims[i] + (ndim ? ndim : 1) : s->dims[i]] = true;
}

/* The result's shape; its ndim. */
static int expected_shape(const spec *s, int ndim, const int64_t *shape, int64_t *out)
{
    bool red_dims[CLT_MAX_DIMS];
    int n = 0;
    if ((s->r == R_ARGMAX || s->r == R_ARGMIN) && s->ndims == 0)
        return 0;
    reduced_dims(s, ndim, red_dims);
    for (int d = 0; d < ndim; d++) {
        if (!red_dims[d])
            out[n++] = shape[d];
        else if (s->keepdim)
            out[n++] = 1;
    }
    return n;
}

/* x's values grouped by result element: a row of `len` values (the reduced dims, row-major) for
 * each of `rows` results (the kept dims, row-major). */
static double *group(const double *x, int ndim, const int64_t *shape, const bool *red_dims,
                     size_t *rows, size_t *len)
{
    int64_t idx[CLT_MAX_DIMS] = {0};
    size_t numel = 1;
    *rows = *len = 1;
    for (int d = 0; d < ndim; d++) {
        numel *= (size_t)shape[d];
        *(red_dims[d] ? len : rows) *= (size_t)shape[d];
    }
    double *g = malloc((numel ? numel : 1) * sizeof *g);
    for (size_t i = 0; i < numel; i++) {
        size_t o = 0, k = 0;
        for (int d = 0; d < ndim; d++) {
            if (red_dims[d])
                k = k * (size_t)shape[d] + (size_t)idx[d];
            else
                o = o * (size_t)shape[d] + (size_t)idx[d];
        }
        g[o * *len + k] = x[i];
        for (int d = ndim - 1; d >= 0; d--) {
            if (++idx[d] < shape[d])
                break;
            idx[d] = 0;
        }
    }
    return g;
}

/* r over one row, in double (argmax and argmin: the index). */
static double ref_row(red r, const double *v, size_t len, int64_t correction)
{
    double s = 0, best = 0, m, q = 0;
    long at = -1;
    bool nan = false;
    for (size_t k = 0; k < len; k++) {
        nan = nan || isnan(v[k]);
        s += v[k];
    }
    switch (r) {
    case R_SUM: return s;
    case R_MEAN: return s / (double)len;
    case R_MAX:
    case R_MIN:
    case R_ARGMAX:
    case R_ARGMIN:
    case R_LSE:
        for (size_t k = 0; k < len; k++) {
            bool least = r == R_MIN || r == R_ARGMIN;
            bool better = at < 0 || (isnan(v[k]) && !isnan(best)) ||
                          (!isnan(best) && (least ? v[k] < best : v[k] > best));
            if (better) {
                best = v[k];
                at = (long)k;
            }
        }
        if (r == R_ARGMAX || r == R_ARGMIN)
            return (double)at;
        if (r != R_LSE)
            return best;
        if (nan || len == 0)
            return len == 0 ? -INFINITY : NAN;
        if (isinf(best))
            return best;
        for (size_t k = 0; k < len; k++)
            q += exp(v[k] - best);
        return best + log(q);
    default: /* var, std */
        m = s / (double)len;
        for (size_t k = 0; k < len; k++)
            q += (v[k] - m) * (v[k] - m);
        q /= fmax(0.0, (double)len - (double)correction);
        return r == R_STD ? sqrt(q) : q;
    }
}

/* The bound on |got - want| for a floating result (see the top of the file). */
static double bound(red r, clt_dtype dt, double want, const double *row, size_t len)
{
    double out = dt == CLT_F64   ? 0x1p-52
                 : dt == CLT_F32 ? 0x1p-23
                 : dt == CLT_F16 ? 0x1p-10
                                 : 0x1p-7;
    double acc = dt == CLT_F64 ? 1e-13 : (r == R_VAR || r == R_STD || r == R_LSE) ? 1e-5 : 2e-6;
    double scale = 0, top = 0;
    for (size_t k = 0; k < len; k++) {
        scale += fabs(row[k]);
        top = fmax(top, fabs(row[k]));
    }
    if (r == R_MEAN)
        scale /= (double)len;
    else if (r == R_VAR || r == R_STD)
        scale = fabs(want);
    else if (r == R_LSE)
        scale = fabs(want) + top;
    if (!is_float(dt))
        return 0;
    return out * fabs(want) + acc * scale + DBL_MIN;
}

static bool exact_kind(red r, clt_dtype dt)
{
    return r == R_MAX || r == R_MIN || r == R_ARGMAX || r == R_ARGMIN ||
           (r == R_SUM && !is_float(dt));
}

static bool same_value(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

static void describe(char *buf, size_t size, const spec *s, clt_dtype dt, const clt_tensor *x,
                     const clt_device *dev)
{
    char dims[64] = "";
    size_t at = 0;
    for (int i = 0; i < s->ndims; i++)
        at += (size_t)snprintf(dims + at, sizeof dims - at, "%s%d", i ? "," : "", s->dims[i]);
    int n = snprintf(buf, size, "%s of %s [", red_names[s->r], clt_dtype_name(dt));
    for (int d = 0; d < clt_tensor_ndim(x) && n < (int)size; d++)
        n += snprintf(buf + n, size - (size_t)n, "%s%lld", d ? "," : "",
                      (long long)clt_tensor_shape(x)[d]);
    if (n < (int)size)
        snprintf(buf + n, size - (size_t)n,
                 "%s] dims {%s} keepdim %d correction %lld on %s (seed %llu)",
                 clt_tensor_is_contiguous(x) ? "" : " view", dims, s->keepdim,
                 (long long)s->correction, clt_device_name(dev),
                 (unsigned long long)test_seed());
}

/* Runs the spec on x (any device) and on the same values on cpu: checks shape and dtype, the
 * device against the host (exact where exact, else twice the bound) and both against the
 * double computation. */
static void check_spec(const spec *s, clt_tensor *x, clt_device *dev)
{
    char what[384];
    clt_dtype dt = clt_tensor_dtype(x);
    int64_t want_shape[CLT_MAX_DIMS];
    int ndim = clt_tensor_ndim(x);
    int want_ndim = expected_shape(s, ndim, clt_tensor_shape(x), want_shape);
    clt_tensor *xd = on(x, dev), *xh = on(x, clt_device_cpu());
    describe(what, sizeof what, s, dt, xd, dev);

    clt_tensor *got = run_red(s->r, xd, s), *host = run_red(s->r, xh, s);
    ck_assert_msg(got != NULL, "%s: %s", what, clt_last_error());
    ck_assert_msg(host != NULL, "%s on cpu: %s", what, clt_last_error());
    ck_assert_ptr_eq(clt_tensor_device(got), dev);
    ck_assert_msg(clt_tensor_dtype(got) == result_dtype(s->r, dt), "%s: dtype %s", what,
                  clt_dtype_name(clt_tensor_dtype(got)));
    ck_assert_msg(clt_tensor_ndim(got) == want_ndim, "%s: ndim %d, expected %d", what,
                  clt_tensor_ndim(got), want_ndim);
    for (int d = 0; d < want_ndim; d++)
        ck_assert_msg(clt_tensor_shape(got)[d] == want_shape[d], "%s: size %lld of dim %d", what,
                      (long long)clt_tensor_shape(got)[d], d);

    size_t n = (size_t)clt_tensor_numel(got), esize = clt_dtype_size(clt_tensor_dtype(got));
    unsigned char *gb = test_bytes(got), *hb = test_bytes(host);
    double *gv = values(got), *hv = values(host);

    size_t nrows = 0, len = 0;
    bool red_dims[CLT_MAX_DIMS];
    double *xv = values(x), *rows;
    reduced_dims(s, ndim, red_dims);
    rows = group(xv, ndim, clt_tensor_shape(x), red_dims, &nrows, &len);
    ck_assert_uint_eq(nrows, n);
    for (size_t i = 0; i < n; i++) {
        if (exact_kind(s->r, dt)) {
            ELEMENT_CHECK(memcmp(gb + i * esize, hb + i * esize, esize) == 0,
                          "%s, element %zu: device %.17g, host %.17g", what, i, gv[i], hv[i]);
        } else {
            double b = bound(s->r, clt_tensor_dtype(got), hv[i], rows + i * len, len);
            ELEMENT_CHECK(same_value(gv[i], hv[i]) || fabs(gv[i] - hv[i]) <= 2 * b,
                          "%s, element %zu: device %.17g, host %.17g (bound %.3g)", what, i,
                          gv[i], hv[i], 2 * b);
        }
        {
            double want = ref_row(s->r, rows + i * len, len, s->correction);
            double b = bound(s->r, clt_tensor_dtype(got), want, rows + i * len, len);
            if (exact_kind(s->r, dt) && s->r == R_SUM && clt_tensor_dtype(got) == CLT_I64) {
                int64_t g;
                memcpy(&g, gb + i * esize, sizeof g);
                ELEMENT_CHECK(g == (int64_t)want, "%s, element %zu: %lld, expected %.17g", what,
                              i, (long long)g, want);
            } else if (exact_kind(s->r, dt)) {
                ELEMENT_CHECK(same_value(gv[i], want), "%s, element %zu: %.17g, expected %.17g",
                              what, i, gv[i], want);
            } else {
                ELEMENT_CHECK(same_value(gv[i], want) || fabs(gv[i] - want) <= b,
                              "%s, element %zu: device %.17g, expected %.17g (bound %.3g)", what,
                              i, gv[i], want, b);
                ELEMENT_CHECK(same_value(hv[i], want) || fabs(hv[i] - want) <= b,
                              "%s, element %zu: host %.17g, expected %.17g (bound %.3g)", what, i,
                              hv[i], want, b);
            }
        }
    }
    free(rows);
    free(xv);
    free(gv);
    free(hv);
    free(gb);
    free(hb);
    clt_tensor_release(got);
    clt_tensor_release(host);
    clt_tensor_release(xd);
    clt_tensor_release(xh);
}

/* Every reduction that applies to x's dtype, over the given dims. */
static void check_all(clt_tensor *x, clt_device *dev, const int *dims, int ndims)
{
    for (int r = 0; r < R_COUNT; r++) {
        for (int keep = 0; keep < 2; keep++) {
            spec s = {.r = (red)r, .ndims = ndims, .keepdim = keep, .correction = 1};
            memcpy(s.dims, dims, (size_t)ndims * sizeof *dims);
            if (!applies(s.r, clt_tensor_dtype(x), &s))
                continue;
            check_spec(&s, x, dev);
            if (s.r == R_VAR || s.r == R_STD) {
                s.correction = 0;
                check_spec(&s, x, dev);
                s.correction = 2;
                check_spec(&s, x, dev);
            }
        }
    }
}

/* ---- the tests ------------------------------------------------------------------------------- */

/* Small inputs of every dtype against the double computation, contiguous and as views. */
START_TEST(test_reduce_small_expected)
{
    static const int d_all[1] = {0}, d1[] = {1}, d02[] = {0, 2}, dm1[] = {-1}, d20[] = {2, 0},
                     d012[] = {0, 1, 2};
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    for (int t = 0; t < NDTYPES; t++) {
        clt_dtype dt = all_dtypes[t];
        if (!holds(dev, dt))
            continue;
        clt_tensor *x = random_tensor(dt, CLT_SHAPE(3, 4, 5));
        check_all(x, dev, d_all, 0);
        check_all(x, dev, d1, 1);
        check_all(x, dev, d02, 2);
        check_all(x, dev, dm1, 1);
        check_all(x, dev, d20, 2);
        check_all(x, dev, d012, 3);

        /* a transposed view and a strided slice */
        clt_tensor *b = random_tensor(dt, CLT_SHAPE(6, 9));
        clt_tensor *tv = clt_transpose(b, 0, 1);
        clt_tensor *sv = clt_slice(b, 1, 1, 9, 3);
        ck_assert_ptr_nonnull(tv);
        ck_assert_ptr_nonnull(sv);
        ck_assert(!clt_tensor_is_contiguous(tv) && !clt_tensor_is_contiguous(sv));
        static const int d0[] = {0};
        check_all(tv, dev, d0, 1);
        check_all(tv, dev, d1, 1);
        check_all(tv, dev, d_all, 0);
        check_all(sv, dev, d0, 1);
        check_all(sv, dev, d1, 1);
        clt_tensor_release(sv);
        clt_tensor_release(tv);
        clt_tensor_release(b);
        clt_tensor_release(x);
    }
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Larger random inputs of every dtype, rows long enough to be split across work-groups, in
 * several layouts: the device against the host, and against the double computation. */
START_TEST(test_reduce_matches_host)
{
    static const int d0[] = {0}, d1[] = {1}, d13[] = {1, 3}, d_all[1] = {0};
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    for (int t = 0; t < NDTYPES; t++) {
        clt_dtype dt = all_dtypes[t];
        if (!holds(dev, dt))
            continue;
        clt_tensor *a = random_tensor(dt, CLT_SHAPE(2, 20000)); /* split rows */
        check_all(a, dev, d1, 1);
        check_all(a, dev, d_all, 0);
        clt_tensor *at = clt_transpose(a, 0, 1); /* (20000, 2): reduced over dim 0 */
        check_all(at, dev, d0, 1);
        clt_tensor *b = random_tensor(dt, CLT_SHAPE(2, 3, 4, 50));
        check_all(b, dev, d13, 2);
        clt_tensor *c = random_tensor(dt, CLT_SHAPE(300, 40)); /* a work-group per row */
        check_all(c, dev, d1, 1);
        check_all(c, dev, d0, 1);
        clt_tensor_release(c);
        clt_tensor_release(b);
        clt_tensor_release(at);
        clt_tensor_release(a);
    }
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Rows of 1, 7 and 1000003 elements, one or many of them. */
START_TEST(test_reduce_sizes)
{
    static const int d0[] = {0}, d1[] = {1}, d_all[1] = {0};
    static const clt_dtype dts[] = {CLT_F32, CLT_F16, CLT_I32};
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    for (int t = 0; t < 3; t++) {
        static const int64_t lens[] = {1, 7, 1000003};
        for (int l = 0; l < 3; l++) {
            clt_tensor *x = random_tensor(dts[t], 1, &lens[l]);
            check_all(x, dev, d_all, 0);
            check_all(x, dev, d0, 1);
            clt_tensor_release(x);
        }
        clt_tensor *many = random_tensor(dts[t], CLT_SHAPE(1000003, 7));
        static const spec quick[] = {{R_SUM, 1, {1}, false, 1},    {R_MAX, 1, {1}, true, 1},
                                     {R_ARGMIN, 1, {1}, false, 1}, {R_SUM, 1, {0}, false, 1},
                                     {R_ARGMAX, 1, {0}, true, 1},  {R_MEAN, 1, {0}, false, 1},
                                     {R_VAR, 1, {1}, false, 1},    {R_LSE, 1, {1}, false, 1}};
        for (size_t q = 0; q < sizeof quick / sizeof *quick; q++)
            if (applies(quick[q].r, dts[t], &quick[q]))
                check_spec(&quick[q], many, dev);
        clt_tensor *wide = random_tensor(dts[t], CLT_SHAPE(3, 1000003));
        check_all(wide, dev, d1, 1);
        clt_tensor *ones = random_tensor(dts[t], CLT_SHAPE(7, 1));
        check_all(ones, dev, d1, 1);
        check_all(ones, dev, d0, 1);
        clt_tensor_release(ones);
        clt_tensor_release(wide);
        clt_tensor_release(many);
    }
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* The f32 sum of 10^7 values near 0.1 is within 1e-6 of the double sum of the same values; the
 * mean too. */
START_TEST(test_reduce_sum_1e7_accurate)
{
    const int64_t n = 10000000;
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    float *v = malloc((size_t)n * sizeof *v);
    double want = 0, naive_err;
    float naive = 0;
    for (int64_t i = 0; i < n; i++) {
        v[i] = 0.1f + (float)uniform(-0.01, 0.01);
        want += v[i];
        naive += v[i];
    }
    naive_err = fabs((double)naive - want) / want;
    clt_tensor *x = clt_tensor_from_data(1, &n, v, CLT_F32, dev);
    ck_assert_msg(x != NULL, "%s", clt_last_error());
    clt_tensor *s = clt_sum(x, NULL, 0, false), *m = clt_mean(x, NULL, 0, false);
    ck_assert_msg(s && m, "%s", clt_last_error());
    float got, mean;
    ck_assert_int_eq(clt_tensor_copy_to_host(s, &got, sizeof got), CLT_OK);
    ck_assert_int_eq(clt_tensor_copy_to_host(m, &mean, sizeof mean), CLT_OK);
    ck_assert_msg(fabs((double)got - want) <= 1e-6 * want,
                  "sum on %s: %.9g, double %.9g: relative error %.3g (a plain f32 loop: %.3g; "
                  "seed %llu)",
                  clt_device_name(dev), (double)got, want, fabs((double)got - want) / want,
                  naive_err, (unsigned long long)test_seed());
    ck_assert_msg(fabs((double)mean - want / (double)n) <= 1e-6 * want / (double)n,
                  "mean on %s: %.9g, double %.9g", clt_device_name(dev), (double)mean,
                  want / (double)n);
    clt_tensor_release(m);
    clt_tensor_release(s);
    clt_tensor_release(x);
    free(v);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Sums down columns (a leading dimension reduced, at least 16 elements kept after it: no
 * transposing copy) are compensated too: in each of 40 columns 10^4, 4094 f32 values near 0.1
 * and -10^4, summed over dim 0, and over dim 1 of (2, 2048, 40), within 1e-6 of the double sums
 * (a plain f32 loop, adding 0.1 to 10^4 in steps of 2^-10, is off by about 2e-5). */
START_TEST(test_reduce_columns_accurate)
{
    enum { L = 4096, C = 40 };
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    float *v = malloc((size_t)L * C * sizeof *v);
    double want[C] = {0};
    for (int64_t i = 0; i < (int64_t)L * C; i++) {
        v[i] = i < C                   ? 1e4f
               : i >= (int64_t)(L - 1) * C ? -1e4f
                                           : 0.1f + (float)uniform(-0.01, 0.01);
        want[i % C] += v[i];
    }
    clt_tensor *x = clt_tensor_from_data(CLT_SHAPE(L, C), v, CLT_F32, dev);
    clt_tensor *x3 = x ? clt_view(x, CLT_SHAPE(2, L / 2, C)) : NULL;
    ck_assert_msg(x3 != NULL, "%s", clt_last_error());
    static const int d0[] = {0}, d1[] = {1};
    clt_tensor *s = clt_sum(x, d0, 1, false), *s3 = clt_sum(x3, d1, 1, false);
    ck_assert_msg(s && s3, "%s", clt_last_error());
    float got[C], got3[2 * C];
    ck_assert_int_eq(clt_tensor_copy_to_host(s, got, sizeof got), CLT_OK);
    ck_assert_int_eq(clt_tensor_copy_to_host(s3, got3, sizeof got3), CLT_OK);
    for (int j = 0; j < C; j++) {
        ELEMENT_CHECK(fabs((double)got[j] - want[j]) <= 1e-6 * want[j],
                      "column %d on %s: %.9g, double %.9g (seed %llu)", j, clt_device_name(dev),
                      (double)got[j], want[j], (unsigned long long)test_seed());
        double halves = (double)got3[j] + (double)got3[C + j]; /* 10^4 + ..., ... - 10^4 */
        ELEMENT_CHECK(fabs(halves - want[j]) <= 1e-6 * 1e4,
                      "column %d of the halves on %s: %.9g, double %.9g (seed %llu)", j,
                      clt_device_name(dev), halves, want[j], (unsigned long long)test_seed());
    }
    clt_tensor_release(s3), clt_tensor_release(s), clt_tensor_release(x3), clt_tensor_release(x);
    free(v);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* A 1-D tensor of n values of dtype dt on dev (from doubles, converted by the library). */
static clt_tensor *vec(clt_device *dev, clt_dtype dt, const double *v, int64_t n)
{
    clt_tensor *h = from_doubles(v, 1, &n, dt);
    clt_tensor *t = on(h, dev);
    clt_tensor_release(h);
    return t;
}

/* The single value of a 1-element result, as a double; releases it. */
static double scalar_of(clt_tensor *t, const char *what)
{
    ck_assert_msg(t != NULL, "%s: %s", what, clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(t), 1);
    double *v = values(t);
    double r = v[0];
    free(v);
    clt_tensor_release(t);
    return r;
}

/* NaN wins in max, min, argmax and argmin and spreads through sums; infinities. */
START_TEST(test_reduce_nan_and_inf)
{
    static const clt_dtype fdt[] = {CLT_F32, CLT_F64, CLT_F16, CLT_BF16};
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    for (int t = 0; t < 4; t++) {
        clt_dtype dt = fdt[t];
        char what[64];
        if (!holds(dev, dt))
            continue;
        snprintf(what, sizeof what, "%s on %s", clt_dtype_name(dt), clt_device_name(dev));
        const double a[] = {1, 5, NAN, 7, NAN, -3};
        clt_tensor *x = vec(dev, dt, a, 6);
        ck_assert_msg(isnan(scalar_of(clt_amax(x, NULL, 0, false), what)), "%s", what);
        ck_assert_msg(isnan(scalar_of(clt_amin(x, NULL, 0, false), what)), "%s", what);
        ck_assert_msg(scalar_of(clt_argmax_all(x), what) == 2, "%s", what);
        ck_assert_msg(scalar_of(clt_argmin(x, 0, false), what) == 2, "%s", what);
        ck_assert_msg(isnan(scalar_of(clt_sum(x, NULL, 0, false), what)), "%s", what);
        ck_assert_msg(isnan(scalar_of(clt_mean(x, NULL, 0, false), what)), "%s", what);
        ck_assert_msg(isnan(scalar_of(clt_var(x, NULL, 0, 1, false), what)), "%s", what);
        ck_assert_msg(isnan(scalar_of(clt_logsumexp(x, NULL, 0, false), what)), "%s", what);
        clt_tensor_release(x);

        const double b[] = {1, INFINITY, 2}, c[] = {INFINITY, -INFINITY},
                     d[] = {-INFINITY, -INFINITY}, e[] = {100, 100, 100};
        x = vec(dev, dt, b, 3);
        ck_assert_msg(scalar_of(clt_sum(x, NULL, 0, false), what) == INFINITY, "%s", what);
        ck_assert_msg(scalar_of(clt_amax(x, NULL, 0, false), what) == INFINITY, "%s", what);
        ck_assert_msg(scalar_of(clt_argmax_all(x), what) == 1, "%s", what);
        ck_assert_msg(scalar_of(clt_logsumexp(x, NULL, 0, false), what) == INFINITY, "%s", what);
        clt_tensor_release(x);
        x = vec(dev, dt, c, 2);
        ck_assert_msg(isnan(scalar_of(clt_sum(x, NULL, 0, false), what)), "%s", what);
        ck_assert_msg(scalar_of(clt_logsumexp(x, NULL, 0, false), what) == INFINITY, "%s", what);
        ck_assert_msg(scalar_of(clt_argmin_all(x), what) == 1, "%s", what);
        clt_tensor_release(x);
        x = vec(dev, dt, d, 2);
        ck_assert_msg(scalar_of(clt_logsumexp(x, NULL, 0, false), what) == -INFINITY, "%s", what);
        ck_assert_msg(scalar_of(clt_amax(x, NULL, 0, false), what) == -INFINITY, "%s", what);
        clt_tensor_release(x);
        x = vec(dev, dt, e, 3); /* exp(100) overflows f32: the shift by the maximum avoids it */
        double l = scalar_of(clt_logsumexp(x, NULL, 0, false), what);
        ck_assert_msg(fabs(l - (100 + log(3.0))) <= 100 * (dt == CLT_BF16 ? 0x1p-7 : 0x1p-10),
                      "%s: logsumexp %.9g", what, l);
        clt_tensor_release(x);

        /* a NaN deep in a row split across work-groups */
        int64_t n = 50001;
        double *big = malloc((size_t)n * sizeof *big);
        for (int64_t i = 0; i < n; i++)
            big[i] = (double)(i % 100);
        big[31234] = NAN;
        big[40000] = NAN;
        x = vec(dev, dt, big, n);
        ck_assert_msg(scalar_of(clt_argmax_all(x), what) == 31234, "%s", what);
        ck_assert_msg(scalar_of(clt_argmin_all(x), what) == 31234, "%s", what);
        ck_assert_msg(isnan(scalar_of(clt_amax(x, NULL, 0, false), what)), "%s", what);
        ck_assert_msg(isnan(scalar_of(clt_sum(x, NULL, 0, false), what)), "%s", what);
        clt_tensor_release(x);
        free(big);
    }
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* argmax and argmin give the first index among equal values, in short and split rows, in
 * every dtype; max and min of -0 and 0 take the first. */
START_TEST(test_reduce_ties)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    for (int t = 0; t < NDTYPES; t++) {
        clt_dtype dt = all_dtypes[t];
        char what[64];
        if (!holds(dev, dt))
            continue;
        snprintf(what, sizeof what, "%s on %s", clt_dtype_name(dt), clt_device_name(dev));
        const double a[] = {0, 1, 1, 0, 1};
        clt_tensor *x = vec(dev, dt, a, 5);
        ck_assert_msg(scalar_of(clt_argmax_all(x), what) == 1, "%s", what);
        ck_assert_msg(scalar_of(clt_argmin(x, 0, true), what) == 0, "%s", what);
        clt_tensor_release(x);

        int64_t n = 70001;
        double *v = malloc((size_t)n * sizeof *v);
        for (int64_t i = 0; i < n; i++)
            v[i] = 1;
        x = vec(dev, dt, v, n);
        ck_assert_msg(scalar_of(clt_argmax_all(x), what) == 0, "%s: all equal", what);
        ck_assert_msg(scalar_of(clt_argmin_all(x), what) == 0, "%s: all equal", what);
        clt_tensor_release(x);
        v[30001] = v[40000] = v[69999] = 2; /* bool: 1, as everywhere but the zeros */
        v[50000] = v[60000] = 0;
        x = vec(dev, dt, v, n);
        ck_assert_msg(scalar_of(clt_argmax_all(x), what) == (dt == CLT_BOOL ? 0 : 30001), "%s",
                      what);
        ck_assert_msg(scalar_of(clt_argmin_all(x), what) == 50000, "%s", what);
        clt_tensor_release(x);
        free(v);

        /* ties along dim 0 of a transposed view: column j has its maximum 9 at rows j and j+1 */
        double m[4 * 5];
        for (int i = 0; i < 20; i++)
            m[i] = 1;
        for (int j = 0; j < 4; j++)
            m[j * 5 + j] = m[j * 5 + j + 1] = 9; /* bool: 1, as everywhere */
        clt_tensor *h = from_doubles(m, CLT_SHAPE(4, 5), dt), *hd = on(h, dev);
        clt_tensor *tv = clt_transpose(hd, 0, 1); /* (5, 4): column j of tv is row j of m */
        clt_tensor *am = clt_argmax(tv, 0, false);
        ck_assert_msg(am != NULL, "%s", clt_last_error());
        int64_t idx[4];
        ck_assert_int_eq(clt_tensor_copy_to_host(am, idx, sizeof idx), CLT_OK);
        for (int j = 0; j < 4; j++)
            ck_assert_msg(idx[j] == (dt == CLT_BOOL ? 0 : j), "%s: column %d gives %lld", what,
                          j, (long long)idx[j]);
        clt_tensor_release(am);
        clt_tensor_release(tv);
        clt_tensor_release(hd);
        clt_tensor_release(h);
    }

    /* -0 and 0: the first of equal elements, bits and all */
    const double z[] = {-0.0, 0.0};
    clt_tensor *x = vec(dev, CLT_F32, z, 2);
    clt_tensor *mx = clt_amax(x, NULL, 0, false), *mn = clt_amin(x, NULL, 0, false);
    float fm, fn;
    ck_assert_int_eq(clt_tensor_copy_to_host(mx, &fm, sizeof fm), CLT_OK);
    ck_assert_int_eq(clt_tensor_copy_to_host(mn, &fn, sizeof fn), CLT_OK);
    ck_assert(fm == 0 && signbit(fm) && fn == 0 && signbit(fn));
    clt_tensor_release(mn);
    clt_tensor_release(mx);
    clt_tensor_release(x);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Tensors without elements: sum 0, mean and var NaN, logsumexp -inf, max and argmax refused
 * when the reduced dimension is empty, results without elements where a kept one is. */
START_TEST(test_reduce_empty)
{
    static const int d0[] = {0}, d1[] = {1};
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    clt_tensor *x = clt_tensor_zeros(CLT_SHAPE(0, 3), CLT_F32, dev);
    clt_tensor *xi = clt_tensor_zeros(CLT_SHAPE(0, 3), CLT_I32, dev);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(xi);

    struct {
        clt_tensor *r;
        double want;
        int ndim;
        int64_t size0;
    } cases[] = {
        {clt_sum(x, d0, 1, false), 0, 1, 3},
        {clt_sum(x, d0, 1, true), 0, 2, 1},
        {clt_sum(x, NULL, 0, false), 0, 0, 1},
        {clt_sum(xi, NULL, 0, true), 0, 2, 1},
        {clt_mean(x, d0, 1, false), NAN, 1, 3},
        {clt_var(x, d0, 1, 1, false), NAN, 1, 3},
        {clt_std(x, NULL, 0, 0, false), NAN, 0, 1},
        {clt_logsumexp(x, d0, 1, false), -INFINITY, 1, 3},
        {clt_logsumexp(xi, NULL, 0, false), -INFINITY, 0, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ck_assert_msg(cases[c].r != NULL, "case %zu: %s", c, clt_last_error());
        ck_assert_int_eq(clt_tensor_ndim(cases[c].r), cases[c].ndim);
        if (cases[c].ndim > 0)
            ck_assert_int_eq(clt_tensor_size(cases[c].r, 0), cases[c].size0);
        double *v = values(cases[c].r);
        for (int64_t i = 0; i < clt_tensor_numel(cases[c].r); i++)
            ck_assert_msg(same_value(v[i], cases[c].want), "case %zu on %s: %g", c,
                          clt_device_name(dev), v[i]);
        free(v);
        clt_tensor_release(cases[c].r);
    }
    clt_tensor *si = clt_sum(xi, NULL, 0, false);
    ck_assert_int_eq(clt_tensor_dtype(si), CLT_I64);
    clt_tensor_release(si);

    /* a reduction over a dimension that has elements, of a tensor without any */
    clt_tensor *r[] = {clt_amax(x, d1, 1, false), clt_argmin(x, 1, true), clt_sum(x, d1, 1, false),
                       clt_var(x, d1, 1, 1, false), clt_logsumexp(x, d1, 1, false)};
    for (size_t k = 0; k < sizeof r / sizeof *r; k++) {
        ck_assert_msg(r[k] != NULL, "%zu: %s", k, clt_last_error());
        ck_assert_int_eq(clt_tensor_numel(r[k]), 0);
        ck_assert_int_eq(clt_tensor_size(r[k], 0), 0);
        clt_tensor_release(r[k]);
    }
    clt_tensor_release(xi);
    clt_tensor_release(x);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Result dtypes as PyTorch gives them, and 0-d tensors. */
START_TEST(test_reduce_dtypes_and_0d)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    for (int t = 0; t < NDTYPES; t++) {
        clt_dtype dt = all_dtypes[t];
        if (!holds(dev, dt))
            continue;
        clt_tensor *x = clt_tensor_ones(CLT_SHAPE(2, 3), dt, dev);
        clt_tensor *s = clt_sum(x, NULL, 0, false), *m = clt_amax(x, NULL, 0, false),
                   *a = clt_argmax(x, 1, false), *l = clt_logsumexp(x, NULL, 0, false);
        ck_assert_msg(s && m && a && l, "%s", clt_last_error());
        ck_assert_int_eq(clt_tensor_dtype(s), is_float(dt) ? dt : CLT_I64);
        ck_assert_int_eq(clt_tensor_dtype(m), dt);
        ck_assert_int_eq(clt_tensor_dtype(a), CLT_I64);
        ck_assert_int_eq(clt_tensor_dtype(l), is_float(dt) ? dt : CLT_F32);
        double *v = values(s);
        ck_assert(v[0] == 6);
        free(v);
        clt_tensor_release(l);
        clt_tensor_release(a);
        clt_tensor_release(m);
        clt_tensor_release(s);
        clt_tensor_release(x);
    }

    /* a 0-d tensor: dim 0 and -1 name its one element */
    clt_tensor *x = clt_tensor_full(0, NULL, 3.5, CLT_F32, dev);
    static const int d0[] = {0}, dm1[] = {-1}, d1[] = {1};
    const char *w = "0-d";
    ck_assert(scalar_of(clt_sum(x, d0, 1, true), w) == 3.5);
    ck_assert(scalar_of(clt_amax(x, dm1, 1, false), w) == 3.5);
    ck_assert(scalar_of(clt_argmax(x, 0, false), w) == 0);
    ck_assert(scalar_of(clt_argmin_all(x), w) == 0);
    ck_assert(scalar_of(clt_var(x, NULL, 0, 0, false), w) == 0);
    ck_assert(isnan(scalar_of(clt_std(x, NULL, 0, 1, false), w)));
    ck_assert(fabs(scalar_of(clt_logsumexp(x, d0, 1, true), w) - 3.5) < 1e-6);
    clt_tensor *r = clt_mean(x, d0, 1, true);
    ck_assert_int_eq(clt_tensor_ndim(r), 0);
    clt_tensor_release(r);
    ck_assert_ptr_null(clt_sum(x, d1, 1, false));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("valid: -1..0");
    clt_tensor_release(x);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Every error, with its status and message; a failed call leaves nothing behind. */
START_TEST(test_reduce_errors)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(2, 3), CLT_F32, dev);
    clt_tensor *xi = clt_tensor_ones(CLT_SHAPE(2, 3), CLT_I32, dev);
    clt_tensor *xb = clt_tensor_ones(CLT_SHAPE(2, 3), CLT_BOOL, dev);
    clt_tensor *e = clt_tensor_zeros(CLT_SHAPE(2, 0), CLT_F32, dev);
    test_live before = test_live_now();
    static const int d2[] = {2}, dm3[] = {-3}, rep[] = {0, -2}, d1[] = {1}, d01[] = {0, 1};
    static const struct {
        clt_status status;
        const char *fn, *text;
    } want[] = {
        {CLT_ERR_INVALID_ARGUMENT, "clt_sum", "tensor is NULL"},
        {CLT_ERR_INVALID_ARGUMENT, "clt_sum", "ndims -1 is outside 0..8"},
        {CLT_ERR_INVALID_ARGUMENT, "clt_mean", "ndims 9 is outside 0..8"},
        {CLT_ERR_INVALID_ARGUMENT, "clt_amax", "dims is NULL (ndims 1)"},
        {CLT_ERR_INVALID_ARGUMENT, "clt_sum",
         "dim 2 is out of range for a tensor of 2 dimensions (valid: -2..1)"},
        {CLT_ERR_INVALID_ARGUMENT, "clt_amin",
         "dim -3 is out of range for a tensor of 2 dimensions (valid: -2..1)"},
        {CLT_ERR_INVALID_ARGUMENT, "clt_var",
         "dim -2 appears more than once in dims (valid: -2..1, each once)"},
        {CLT_ERR_INVALID_ARGUMENT, "clt_logsumexp", "dim -2 appears more than once"},
        {CLT_ERR_INVALID_ARGUMENT, "clt_argmax",
         "dim 2 is out of range for a tensor of 2 dimensions (valid: -2..1)"},
        {CLT_ERR_INVALID_ARGUMENT, "clt_argmin", "tensor is NULL"},
        {CLT_ERR_INVALID_ARGUMENT, "clt_argmax_all", "tensor is NULL"},
        {CLT_ERR_DTYPE, "clt_mean",
         "dtype i32 is not supported on %s: a floating dtype is needed"},
        {CLT_ERR_DTYPE, "clt_var", "dtype bool is not supported on %s"},
        {CLT_ERR_DTYPE, "clt_std", "dtype i32 is not supported on %s"},
        {CLT_ERR_SHAPE, "clt_amax", "cannot reduce over dim 1 of size 0 (shape (2, 0))"},
        {CLT_ERR_SHAPE, "clt_amin", "cannot reduce over dim 1 of size 0 (shape (2, 0))"},
        {CLT_ERR_SHAPE, "clt_argmax", "cannot reduce over dim 1 of size 0"},
        {CLT_ERR_SHAPE, "clt_argmin_all", "cannot reduce over dim 1 of size 0"},
        {CLT_ERR_SHAPE, "clt_amax", "cannot reduce over dim 1 of size 0"},
    };
#define EXPECT(call, idx)                                                                      \
    do {                                                                                       \
        char text_[256];                                                                       \
        clt_clear_error();                                                                     \
        ck_assert_ptr_null(call);                                                              \
        ck_assert_msg(clt_last_status() == want[idx].status, "case %d: %s", idx,               \
                      clt_last_error());                                                       \
        snprintf(text_, sizeof text_, "%s: ", want[idx].fn);                                   \
        ck_assert_msg(strncmp(clt_last_error(), text_, strlen(text_)) == 0,                    \
                      "case %d: \"%s\" does not start with \"%s\"", idx, clt_last_error(),     \
                      text_);                                                                  \
        snprintf(text_, sizeof text_, want[idx].text, clt_device_name(dev));                   \
        ck_assert_error_has(text_);                                                            \
    } while (0)
    EXPECT(clt_sum(NULL, NULL, 0, false), 0);
    EXPECT(clt_sum(x, d1, -1, false), 1);
    EXPECT(clt_mean(x, d1, 9, false), 2);
    EXPECT(clt_amax(x, NULL, 1, false), 3);
    EXPECT(clt_sum(x, d2, 1, false), 4);
    EXPECT(clt_amin(x, dm3, 1, true), 5);
    EXPECT(clt_var(x, rep, 2, 1, false), 6);
    EXPECT(clt_logsumexp(x, rep, 2, false), 7);
    EXPECT(clt_argmax(x, 2, false), 8);
    EXPECT(clt_argmin(NULL, 0, false), 9);
    EXPECT(clt_argmax_all(NULL), 10);
    EXPECT(clt_mean(xi, NULL, 0, false), 11);
    EXPECT(clt_var(xb, d1, 1, 1, false), 12);
    EXPECT(clt_std(xi, NULL, 0, 1, true), 13);
    EXPECT(clt_amax(e, d1, 1, false), 14);
    EXPECT(clt_amin(e, NULL, 0, false), 15);
    EXPECT(clt_argmax(e, -1, false), 16);
    EXPECT(clt_argmin_all(e), 17);
    EXPECT(clt_amax(e, d01, 2, true), 18);
#undef EXPECT
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
    clt_tensor_release(e);
    clt_tensor_release(xb);
    clt_tensor_release(xi);
    clt_tensor_release(x);
}
END_TEST

/* clt_sum under allocation failures, host and device: every one fails cleanly. */
typedef struct sum_case {
    clt_tensor *x;
    const int *dims;
    int ndims;
} sum_case;

static bool run_sum(void *ctx)
{
    sum_case *c = ctx;
    clt_tensor *s = clt_sum(c->x, c->dims, c->ndims, false);
    clt_tensor_release(s);
    return s != NULL;
}

START_TEST(test_reduce_sum_allocation_failures)
{
    static const int d0[] = {0};
    clt_device *dev = test_device(_i);
    clt_tensor *h16 = random_tensor(CLT_F16, CLT_SHAPE(40, 30));
    clt_tensor *x16 = on(h16, dev);
    clt_tensor *t16 = clt_transpose(x16, 0, 1); /* permuted, copied, summed in f32, cast back */
    clt_tensor *hl = random_tensor(CLT_F32, CLT_SHAPE(100000));
    clt_tensor *xl = on(hl, dev); /* one long row: split across work-groups on devices */
    sum_case cases[] = {{t16, d0, 1}, {xl, NULL, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        long host = test_fault_sweep(run_sum, &cases[c], "clt_sum", CLT__HOST);
        long device = test_fault_sweep(run_sum, &cases[c], "clt_sum", CLT__DEVICE);
        ck_assert_int_gt(host + device, 0);
    }
    clt_tensor_release(xl);
    clt_tensor_release(hl);
    clt_tensor_release(t16);
    clt_tensor_release(x16);
    clt_tensor_release(h16);
}
END_TEST

/* Lengths around every lane, vector and block edge of the host (16 lanes, blocks of 512) and of
 * the blocked kernels (vectors of 16, blocks of 256, parts of 4096 and more), at an odd offset
 * into the buffer, every reduction of each dtype against the host and the double computation. */
START_TEST(test_reduce_lane_edges)
{
    static const int64_t lens[] = {15, 16, 17, 255, 256, 257, 511, 512, 513, 4097, 65553};
    static const clt_dtype dts[] = {CLT_F32, CLT_F64, CLT_F16, CLT_BF16, CLT_I32, CLT_I64,
                                    CLT_U8};
    static const int d_all[1] = {0};
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    for (size_t t = 0; t < sizeof dts / sizeof *dts; t++) {
        if (!holds(dev, dts[t]))
            continue;
        for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
            int64_t n = lens[l] + 3;
            clt_tensor *x = random_tensor(dts[t], 1, &n);
            clt_tensor *v = clt_narrow(x, 0, 3, lens[l]);
            ck_assert_msg(v != NULL, "%s", clt_last_error());
            check_all(v, dev, d_all, 0);
            clt_tensor_release(v);
            clt_tensor_release(x);
        }
    }
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* The index max, min, argmax and argmin pick in long rows, worked out here: a NaN at every lane
 * and block edge (and a later one), the largest value twice in different blocks, an infinity
 * beside it, and -0 before 0 among negative values; at an offset into the buffer. */
START_TEST(test_reduce_arg_placement)
{
    static const int64_t at[] = {0, 15, 16, 255, 256, 257, 511, 512, 4095, 4096, 20000, 20002};
    static const clt_dtype fdt[] = {CLT_F32, CLT_F64, CLT_F16, CLT_BF16};
    const int64_t n = 20003;
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    double *a = malloc((size_t)(n + 1) * sizeof *a);
    for (int t = 0; t < 4; t++) {
        char what[96];
        if (!holds(dev, fdt[t]))
            continue;
        for (size_t p = 0; p < sizeof at / sizeof *at; p++) {
            snprintf(what, sizeof what, "%s on %s, NaN at %lld", clt_dtype_name(fdt[t]),
                     clt_device_name(dev), (long long)at[p]);
            for (int64_t i = 0; i <= n; i++)
                a[i] = (double)((i * 37) % 101) - 50;
            a[1 + at[p]] = NAN;
            if (at[p] + 700 < n)
                a[1 + at[p] + 700] = NAN;
            clt_tensor *x = vec(dev, fdt[t], a, n + 1), *v = clt_narrow(x, 0, 1, n);
            ck_assert_msg(scalar_of(clt_argmax_all(v), what) == (double)at[p], "%s", what);
            ck_assert_msg(scalar_of(clt_argmin_all(v), what) == (double)at[p], "%s", what);
            ck_assert_msg(isnan(scalar_of(clt_amax(v, NULL, 0, false), what)), "%s", what);
            ck_assert_msg(isnan(scalar_of(clt_amin(v, NULL, 0, false), what)), "%s", what);
            clt_tensor_release(v), clt_tensor_release(x);
        }
        snprintf(what, sizeof what, "%s on %s, ties", clt_dtype_name(fdt[t]), clt_device_name(dev));
        for (int64_t i = 0; i <= n; i++)
            a[i] = -1 - (double)(i % 7);
        a[1 + 300] = -0.0, a[1 + 9000] = 0.0, a[1 + 9001] = 0.0; /* the max: -0 first */
        a[1 + 600] = -100, a[1 + 17000] = -100;                 /* the min, twice */
        clt_tensor *x = vec(dev, fdt[t], a, n + 1), *v = clt_narrow(x, 0, 1, n);
        ck_assert_msg(scalar_of(clt_argmax_all(v), what) == 300, "%s", what);
        ck_assert_msg(scalar_of(clt_argmin_all(v), what) == 600, "%s", what);
        double m = scalar_of(clt_amax(v, NULL, 0, false), what);
        ck_assert_msg(m == 0 && signbit(m), "%s: max %g", what, m);
        clt_tensor_release(v), clt_tensor_release(x);
        a[1 + 12345] = INFINITY, a[1 + 12346] = INFINITY, a[1 + 5] = -INFINITY;
        x = vec(dev, fdt[t], a, n + 1), v = clt_narrow(x, 0, 1, n);
        ck_assert_msg(scalar_of(clt_argmax_all(v), what) == 12345, "%s", what);
        ck_assert_msg(scalar_of(clt_argmin_all(v), what) == 5, "%s", what);
        ck_assert_msg(scalar_of(clt_amax(v, NULL, 0, false), what) == INFINITY, "%s", what);
        clt_tensor_release(v), clt_tensor_release(x);
    }
    free(a);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Rows long enough for cpu to reduce in pieces on its threads (pieces of 16896 elements in
 * rows of 50001, groups of 16 rows of 33000 in two pieces): every reduction against the double
 * computation and the host; argmax and argmin where the best value ends one piece and starts
 * the next, and where a NaN starts a later piece or lies in two; the same bits at 1 and 4
 * threads. */
START_TEST(test_reduce_pieces)
{
    static const clt_dtype dts[] = {CLT_F32, CLT_F64, CLT_BF16, CLT_I32};
    static const int d1[] = {1};
    clt_device *dev = test_device(_i);
    int threads = clt_get_num_threads();
    test_live before = test_live_now();
    for (size_t t = 0; t < sizeof dts / sizeof *dts; t++) {
        if (!holds(dev, dts[t]))
            continue;
        clt_tensor *x = random_tensor(dts[t], CLT_SHAPE(5, 50001));
        check_all(x, dev, d1, 1);
        clt_tensor_release(x);
        x = random_tensor(dts[t], CLT_SHAPE(40, 33000));
        static const spec quick[] = {{R_SUM, 1, {1}, false, 1},
                                     {R_ARGMAX, 1, {1}, false, 1},
                                     {R_VAR, 1, {1}, false, 1}};
        for (size_t q = 0; q < sizeof quick / sizeof *quick; q++)
            if (applies(quick[q].r, dts[t], &quick[q]))
                check_spec(&quick[q], x, dev);
        clt_tensor_release(x);
    }

    const int64_t n = 50001;
    double *a = malloc((size_t)n * sizeof *a);
    for (int t = 0; t < 2; t++) {
        clt_dtype dt = t ? CLT_F64 : CLT_F32;
        char what[96];
        if (!holds(dev, dt))
            continue;
        snprintf(what, sizeof what, "%s on %s, pieces", clt_dtype_name(dt), clt_device_name(dev));
        for (int64_t i = 0; i < n; i++)
            a[i] = (double)((i * 37) % 101) - 50;
        a[16895] = a[16896] = 1000, a[33791] = a[33792] = -1000;
        clt_tensor *v = vec(dev, dt, a, n);
        ck_assert_msg(scalar_of(clt_argmax_all(v), what) == 16895, "%s", what);
        ck_assert_msg(scalar_of(clt_argmin_all(v), what) == 33791, "%s", what);
        clt_tensor_release(v);
        a[33792] = NAN;
        v = vec(dev, dt, a, n);
        ck_assert_msg(scalar_of(clt_argmax_all(v), what) == 33792, "%s", what);
        ck_assert_msg(isnan(scalar_of(clt_amin(v, NULL, 0, false), what)), "%s", what);
        clt_tensor_release(v);
        a[40000] = a[20000] = NAN;
        v = vec(dev, dt, a, n);
        ck_assert_msg(scalar_of(clt_argmin_all(v), what) == 20000, "%s", what);
        clt_tensor_release(v);
    }
    free(a);

    clt_tensor *x = random_tensor(CLT_F32, CLT_SHAPE(3, 1000003)), *xd = on(x, dev);
    clt_tensor *sums[2], *vars[2];
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(clt_set_num_threads(k ? 4 : 1), CLT_OK);
        sums[k] = clt_sum(xd, d1, 1, false);
        vars[k] = clt_var(xd, d1, 1, 1, false);
        ck_assert_msg(sums[k] && vars[k], "%s", clt_last_error());
    }
    ck_assert_int_eq(clt_set_num_threads(threads), CLT_OK);
    unsigned char *b[4] = {test_bytes(sums[0]), test_bytes(sums[1]), test_bytes(vars[0]),
                           test_bytes(vars[1])};
    ck_assert_msg(memcmp(b[0], b[1], 3 * sizeof(float)) == 0, "sums differ by thread count");
    ck_assert_msg(memcmp(b[2], b[3], 3 * sizeof(float)) == 0, "variances differ by threads");
    for (int k = 0; k < 4; k++)
        free(b[k]);
    for (int k = 0; k < 2; k++)
        clt_tensor_release(sums[k]), clt_tensor_release(vars[k]);
    clt_tensor_release(xd), clt_tensor_release(x);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* torch.max(x, dim) / torch.min(x, dim): values, the first index among equal ones, and the
 * gradient at that index alone (amax shares it among the equal elements). */
START_TEST(test_reduce_max_with_indices)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    const double v[] = {1, 3, 3, -2, 7, NAN};
    clt_tensor *x = test_tensor(dev, CLT_F32, v, CLT_SHAPE(2, 3)), *idx = NULL;
    ck_assert_int_eq(clt_tensor_set_requires_grad(x, true), CLT_OK);
    clt_tensor *m = clt_max(x, 1, false, &idx);
    ck_assert_msg(m && idx, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_ndim(m), 1);
    double *got = test_values(m), *gi = test_values(idx);
    ck_assert(got[0] == 3 && isnan(got[1]) && gi[0] == 1 && gi[1] == 2);
    free(got), free(gi);
    clt_tensor *s = clt_sum(m, NULL, 0, false);
    ck_assert_int_eq(clt_backward(s, NULL, false), CLT_OK);
    clt_tensor *g = clt_tensor_grad(x);
    got = test_values(g);
    const double want[] = {0, 1, 0, 0, 0, 1};
    for (int k = 0; k < 6; k++)
        ck_assert_msg(got[k] == want[k], "grad[%d] %g on %s", k, got[k], clt_device_name(dev));
    free(got);
    clt_tensor_release(g), clt_tensor_release(s), clt_tensor_release(idx), clt_tensor_release(m);
    clt_tensor *i32 = clt_tensor_to_dtype(x, CLT_I32), *mi = clt_min(i32, 0, true, &idx);
    ck_assert_int_eq(clt_tensor_dtype(mi), CLT_I32);
    ck_assert_int_eq(clt_tensor_ndim(mi), 2);
    got = test_values(mi), gi = test_values(idx);
    ck_assert(got[0] == -2 && got[1] == 3 && got[2] == 0 && gi[0] == 1 && gi[1] == 0 && gi[2] == 1);
    free(got), free(gi);
    clt_tensor_release(idx), clt_tensor_release(mi);
    ck_assert_ptr_null(clt_max(x, 2, false, &idx));
    ck_assert_ptr_null(idx);
    ck_assert_error_has("clt_max: ");
    clt_tensor_release(i32), clt_tensor_release(x);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* The backends refuse a mean and squared deviations of an integer dtype (clt_mean and clt_var
 * refuse them first), naming the operation, the dtype and the device, and write nothing. */
START_TEST(test_reduce_backend_floating_only)
{
    clt_device *dev = test_device(_i);
    static const clt__reduce_op ops[] = {CLT_REDUCE_MEAN, CLT_REDUCE_SQDEV};
    static const char *const what[] = {"a mean of dtype i64", "squared deviations of dtype i64"};
    clt_tensor *x = clt_tensor_arange(0, 6, 1, CLT_I64, dev);
    clt_tensor *out = clt_tensor_full(CLT_SHAPE(1), 7, CLT_I64, dev);
    for (int k = 0; k < 2; k++) {
        clt__reduce_call c = {.op = ops[k], .dtype = CLT_I64, .rows = 1, .len = 6,
                              .in = x->storage->buf, .in_offset = x->offset,
                              .out = out->storage->buf, .out_offset = out->offset,
                              .mean = out->storage->buf, .mean_offset = out->offset};
        ck_assert_int_eq(CLT__BACKEND_CALL(reduce, "test", dev, CLT_I64, &c), CLT_ERR_DTYPE);
        ck_assert_error_has(what[k]);
        ck_assert_error_has(dev->name);
    }
    int64_t kept = 0;
    ck_assert_int_eq(clt_tensor_copy_to_host(out, &kept, sizeof kept), CLT_OK);
    ck_assert_int_eq(kept, 7);
    clt_tensor_release(out), clt_tensor_release(x);
}
END_TEST

Suite *suite_reduce(void)
{
    Suite *s = suite_create("reduce");
    TCase *tc = test_case("reduce", 300);
    ADD_DEVICE_TEST(tc, test_reduce_small_expected);
    ADD_DEVICE_TEST(tc, test_reduce_backend_floating_only);
    ADD_DEVICE_TEST(tc, test_reduce_matches_host);
    ADD_DEVICE_TEST(tc, test_reduce_sizes);
    ADD_DEVICE_TEST(tc, test_reduce_sum_1e7_accurate);
    ADD_DEVICE_TEST(tc, test_reduce_columns_accurate);
    ADD_DEVICE_TEST(tc, test_reduce_nan_and_inf);
    ADD_DEVICE_TEST(tc, test_reduce_ties);
    ADD_DEVICE_TEST(tc, test_reduce_empty);
    ADD_DEVICE_TEST(tc, test_reduce_dtypes_and_0d);
    ADD_DEVICE_TEST(tc, test_reduce_errors);
    ADD_DEVICE_TEST(tc, test_reduce_sum_allocation_failures);
    ADD_DEVICE_TEST(tc, test_reduce_lane_edges);
    ADD_DEVICE_TEST(tc, test_reduce_arg_placement);
    ADD_DEVICE_TEST(tc, test_reduce_max_with_indices);
    ADD_DEVICE_TEST(tc, test_reduce_pieces);
    suite_add_tcase(s, tc);
    return s;
}
