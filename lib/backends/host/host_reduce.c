/* The host backend's reductions: each contiguous row is loaded in blocks converted to the
 * compute type (float for f32, f16 and bf16, double for f64, int64 for integers and bool) by the
 * conversions of shared/scalar.cl, then reduced with the rules of kernels/reduce.cl: compensated sums
 * over CLT__LANES interleaved accumulators, ties broken by the smaller index, NaN first. */
#include <math.h>
#include <stdbool.h>

#include "host.h"
#include "core/core.h"
#include "host_simd.h"
#include "backends/shared/scalar_host.h"

#define CLT__BLOCK 512 /* elements converted at a time */
#define CLT__LANES 16  /* independent accumulators of a compensated sum */
#define CLT__ARG_LANES 16 /* lanes of a block's largest (smallest) value */

/* Element `start` .. start + n - 1 of a row of dtype dt, in the compute type of its kind. */
static void load_flt(const void *row, clt_dtype dt, size_t start, size_t n, float *buf)
{
    if (dt == CLT_F32) {
        memcpy(buf, (const float *)row + start, n * sizeof *buf);
    } else if (dt == CLT_F16) {
        for (size_t i = 0; i < n; i++)
            buf[i] = clt_load_f16(((const clt_u16 *)row)[start + i]);
    } else {
        for (size_t i = 0; i < n; i++)
            buf[i] = clt_load_bf16(((const clt_u16 *)row)[start + i]);
    }
}

static void load_dbl(const void *row, clt_dtype dt, size_t start, size_t n, double *buf)
{
    (void)dt;
    memcpy(buf, (const double *)row + start, n * sizeof *buf);
}

static void load_int(const void *row, clt_dtype dt, size_t start, size_t n, clt_i64 *buf)
{
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case CLT_I32: buf[i] = clt_load_i32(((const clt_i32 *)row)[start + i]); break;
        case CLT_I64: buf[i] = clt_load_i64(((const clt_i64 *)row)[start + i]); break;
        case CLT_U8: buf[i] = clt_load_u8(((const clt_u8 *)row)[start + i]); break;
        default: buf[i] = clt_load_b8(((const clt_u8 *)row)[start + i]); break;
        }
    }
}

/* The lanes' loops. LANES_CSUM adds v[i ..) into the compensated sums s, c (CLT__LANES lanes,
 * element i into lane i % CLT__LANES) while whole vectors remain, advancing i; LANES_BEST sets
 * b[l] to the largest (smallest) of lane l of v[0 .. n) (n a multiple of CLT__ARG_LANES, NaNs
 * never chosen) and, with flt, z[l] to the sum of x - x over the lane: 0 unless it holds a NaN
 * or an infinity. */
#if CLT__VEC_EXT
#define LANES_CSUM(CT, v, n, i, s, c)                                                          \
    do {                                                                                       \
        typedef CT vt_ __attribute__((vector_size(CLT__LANES * sizeof(CT))));                  \
        vt_ s_, c_;                                                                            \
        memcpy(&s_, s, sizeof s_);                                                             \
        memcpy(&c_, c, sizeof c_);                                                             \
        for (; i + CLT__LANES <= n; i += CLT__LANES) {                                         \
            vt_ x_, t_, bp_;                                                                   \
            memcpy(&x_, v + i, sizeof x_);                                                     \
            t_ = s_ + x_;                                                                      \
            bp_ = t_ - s_;                                                                     \
            c_ += (s_ - (t_ - bp_)) + (x_ - bp_);                                              \
            s_ = t_;                                                                           \
        }                                                                                      \
        memcpy(s, &s_, sizeof s_);                                                             \
        memcpy(c, &c_, sizeof c_);                                                             \
    } while (0)
#define LANES_BEST(CT, v, n, largest, flt, b, z)                                               \
    do {                                                                                       \
        typedef CT vt_ __attribute__((vector_size(CLT__ARG_LANES * sizeof(CT))));              \
        vt_ b_, z_ = {0};                                                                      \
        memcpy(&b_, v, sizeof b_);                                                             \
        for (size_t i_ = 0; i_ < n; i_ += CLT__ARG_LANES) {                                    \
            vt_ x_;                                                                            \
            memcpy(&x_, v + i_, sizeof x_);                                                    \
            __typeof__(x_ > b_) m_ = largest ? x_ > b_ : x_ < b_;                              \
            b_ = (vt_)(((__typeof__(m_))x_ & m_) | ((__typeof__(m_))b_ & ~m_));                \
            if (flt)                                                                           \
                z_ += x_ - x_;                                                                 \
        }                                                                                      \
        memcpy(b, &b_, sizeof b_);                                                             \
        memcpy(z, &z_, sizeof z_);                                                             \
    } while (0)
#else
#define LANES_CSUM(CT, v, n, i, s, c)                                                          \
    for (; i + CLT__LANES <= n; i += CLT__LANES) {                                             \
        for (int l_ = 0; l_ < CLT__LANES; l_++) {                                              \
            CT x_ = v[i + (size_t)l_], t_ = s[l_] + x_, bp_ = t_ - s[l_];                      \
            c[l_] += (s[l_] - (t_ - bp_)) + (x_ - bp_);                                        \
            s[l_] = t_;                                                                        \
        }                                                                                      \
    }
#define LANES_BEST(CT, v, n, largest, flt, b, z)                                               \
    do {                                                                                       \
        memcpy(b, v, CLT__ARG_LANES * sizeof(CT));                                             \
        memset(z, 0, CLT__ARG_LANES * sizeof(CT));                                             \
        for (size_t i_ = 0; i_ < n; i_ += CLT__ARG_LANES) {                                    \
            for (int l_ = 0; l_ < CLT__ARG_LANES; l_++) {                                      \
                CT x_ = v[i_ + (size_t)l_];                                                    \
                b[l_] = (largest ? x_ > b[l_] : x_ < b[l_]) ? x_ : b[l_];                      \
                if (flt)                                                                       \
                    z[l_] += x_ - x_;                                                          \
            }                                                                                  \
        }                                                                                      \
    } while (0)
#endif

/* Whether (a, ia) goes before (b, ib): NaN first, then the larger (largest) or smaller value,
 * then the smaller index; ib < 0 is no element. */
#define ARG_BEFORE(a, ia, b, ib, largest, is_float)                                            \
    ((ib) < 0 ? true                                                                           \
     : (is_float) && ((a) != (a) || (b) != (b)) ? ((a) != (a) && ((b) == (b) || (ia) < (ib)))  \
     : (a) == (b)                                ? (ia) < (ib)                                  \
     : (largest)                                 ? (a) > (b)                                    \
                                                 : (a) < (b))

/* Row reductions for one compute type CT with its loader. */
#define HOST_REDUCE_KIND(K, CT, NATIVE)                                                        \
    /* a + b = *s + *e exactly */                                                              \
    static inline void two_sum_##K(CT a, CT b, CT *s, CT *e)                                   \
    {                                                                                          \
        CT t = a + b;                                                                          \
        CT bp = t - a;                                                                         \
        *e = (a - (t - bp)) + (b - bp);                                                        \
        *s = t;                                                                                \
    }                                                                                          \
    /* Adds v[0 .. n) into the lanes' compensated sums, element i into lane i % CLT__LANES   \
     * (n a multiple of CLT__LANES, or the row's last piece). */                               \
    CLT__SIMD static void lanes_##K(const CT *restrict v, size_t n, CT *restrict s,           \
                                    CT *restrict c)                                            \
    {                                                                                          \
        size_t i = 0;                                                                          \
        LANES_CSUM(CT, v, n, i, s, c);                                                         \
        for (int l = 0; i < n; i++, l++) {                                                     \
            CT e;                                                                              \
            two_sum_##K(s[l], v[i], &s[l], &e);                                                \
            c[l] += e;                                                                         \
        }                                                                                      \
    }                                                                                          \
    /* Combines the lanes into lane 0; s + c, or s alone when it is not finite. */            \
    static CT lanes_total_##K(CT *s, CT *c)                                                    \
    {                                                                                          \
        for (int w = CLT__LANES / 2; w > 0; w /= 2) {                                          \
            for (int l = 0; l < w; l++) {                                                      \
                CT e;                                                                          \
                two_sum_##K(s[l], s[l + w], &s[l], &e);                                        \
                c[l] += c[l + w] + e;                                                          \
            }                                                                                  \
        }                                                                                      \
        return isfinite(s[0]) ? s[0] + c[0] : s[0];                                            \
    }                                                                                          \
    /* The compensated sum of the row; with `dsum`, that of (x - m)^2 instead, and that of    \
     * x - m into *dsum. */                                                                    \
    static CT csum_##K(const void *row, clt_dtype dt, size_t len, CT m, CT *dsum)              \
    {                                                                                          \
        CT buf[CLT__BLOCK], sq[CLT__BLOCK];                                                    \
        CT s[CLT__LANES] = {0}, c[CLT__LANES] = {0}, d[CLT__LANES] = {0}, dc[CLT__LANES] = {0}; \
        for (size_t start = 0; start < len; start += CLT__BLOCK) {                             \
            size_t n = len - start < CLT__BLOCK ? len - start : CLT__BLOCK;                    \
            const CT *v = buf;                                                                 \
            if (dt == NATIVE)                                                                  \
                v = (const CT *)row + start;                                                   \
            else                                                                               \
                load_##K(row, dt, start, n, buf);                                              \
            if (dsum) {                                                                        \
                for (size_t i = 0; i < n; i++) {                                               \
                    buf[i] = v[i] - m;                                                         \
                    sq[i] = buf[i] * buf[i];                                                   \
                }                                                                              \
                lanes_##K(buf, n, d, dc);                                                      \
                v = sq;                                                                        \
            }                                                                                  \
            lanes_##K(v, n, s, c);                                                             \
        }                                                                                      \
        if (dsum)                                                                              \
            *dsum = lanes_total_##K(d, dc);                                                    \
        return lanes_total_##K(s, c);                                                          \
    }                                                                                          \
    HOST_ARG_KIND(K, CT, NATIVE, true)

/* The index of a row's largest (smallest) element, for one compute type CT: each block's best
 * value is found lane by lane without indices (and whether it holds a NaN, or with `flt` an
 * infinity: x - x is not 0), and only a block holding a NaN or a value that goes before the
 * best so far is read again element by element with ARG_BEFORE, so the index is the one of
 * reading every element in order. A NaN ends the search (none after it can go before it). */
#define HOST_ARG_KIND(K, CT, NATIVE, FLT)                                                      \
    /* Whether v[0 .. n) (n a multiple of CLT__ARG_LANES) may hold an element that goes before \
     * `best` (at < 0: none yet). */                                                           \
    CLT__SIMD static bool block_may_##K(const CT *restrict v, size_t n, bool largest, CT best, \
                                        int64_t at)                                            \
    {                                                                                          \
        CT b[CLT__ARG_LANES], z[CLT__ARG_LANES], top;                                          \
        LANES_BEST(CT, v, n, largest, FLT, b, z);                                              \
        top = b[0];                                                                            \
        for (int l = 0; l < CLT__ARG_LANES; l++) {                                             \
            top = (largest ? b[l] > top : b[l] < top) ? b[l] : top;                            \
            if (FLT && z[l] != 0)                                                              \
                return true;                                                                   \
        }                                                                                      \
        return at < 0 || (largest ? top > best : top < best);                                  \
    }                                                                                          \
    static int64_t arg_##K(const void *row, clt_dtype dt, size_t len, bool largest)            \
    {                                                                                          \
        CT buf[CLT__BLOCK], best = 0;                                                          \
        int64_t at = -1;                                                                       \
        for (size_t start = 0; start < len; start += CLT__BLOCK) {                             \
            size_t n = len - start < CLT__BLOCK ? len - start : CLT__BLOCK;                    \
            const CT *v = buf;                                                                 \
            if (dt == NATIVE)                                                                  \
                v = (const CT *)row + start;                                                   \
            else                                                                               \
                load_##K(row, dt, start, n, buf);                                              \
            if (n == CLT__BLOCK && !block_may_##K(v, n, largest, best, at))                    \
                continue;                                                                      \
            for (size_t i = 0; i < n; i++) {                                                   \
                int64_t k = (int64_t)(start + i);                                              \
                if (ARG_BEFORE(v[i], k, best, at, largest, FLT)) {                             \
                    best = v[i];                                                               \
                    at = k;                                                                    \
                }                                                                              \
            }                                                                                  \
            if (FLT && best != best)                                                           \
                break;                                                                         \
        }                                                                                      \
        return at;                                                                             \
    }

HOST_REDUCE_KIND(flt, float, CLT_F32)
HOST_REDUCE_KIND(dbl, double, CLT_F64)
HOST_ARG_KIND(int, clt_i64, CLT_I64, false)

/* The sum of an integer or bool row, wrapping modulo 2^64. */
static clt_i64 sum_int(const void *row, clt_dtype dt, size_t len)
{
    clt_i64 buf[CLT__BLOCK];
    clt_u64 s = 0;
    for (size_t start = 0; start < len; start += CLT__BLOCK) {
        size_t n = len - start < CLT__BLOCK ? len - start : CLT__BLOCK;
        load_int(row, dt, start, n, buf);
        for (size_t i = 0; i < n; i++)
            s += (clt_u64)buf[i];
    }
    return clt_bits_i64(s);
}

clt_status clt__host_reduce(const char *fn, clt_device *dev, const clt__reduce_call *c)
{
    size_t size = clt_dtype_size(c->dtype);
    bool is_dbl = c->dtype == CLT_F64;
    bool is_flt = clt__dtype(c->dtype)->compute == CLT_F32;
    bool largest = c->op == CLT_REDUCE_ARGMAX || c->op == CLT_REDUCE_AMAX;
    (void)dev;

    if (c->op == CLT_REDUCE_SQDEV && !is_flt && !is_dbl)
        return clt__error(CLT_ERR_DTYPE, fn, "squared deviations of dtype %s on cpu",
                          clt_dtype_name(c->dtype));
    for (size_t r = 0; r < c->rows; r++) {
        const char *row = (const char *)c->in + (c->in_offset + r * c->len) * size;
        size_t o = c->out_offset + r;
        switch (c->op) {
        case CLT_REDUCE_SUM:
            if (is_flt)
                ((float *)c->out)[o] = csum_flt(row, c->dtype, c->len, 0, NULL);
            else if (is_dbl)
                ((double *)c->out)[o] = csum_dbl(row, c->dtype, c->len, 0, NULL);
            else
                ((clt_i64 *)c->out)[o] = sum_int(row, c->dtype, c->len);
            break;
        case CLT_REDUCE_SQDEV: {
            size_t mo = c->mean_offset + r;
            if (is_flt) {
                float d, q = csum_flt(row, c->dtype, c->len, ((const float *)c->mean)[mo], &d);
                float v = q - d * d / (float)c->len;
                ((float *)c->out)[o] = v < 0 ? 0.0f : v;
            } else {
                double d, q = csum_dbl(row, c->dtype, c->len, ((const double *)c->mean)[mo], &d);
                double v = q - d * d / (double)c->len;
                ((double *)c->out)[o] = v < 0 ? 0.0 : v;
            }
            break;
        }
        default: {
            int64_t at = is_flt   ? arg_flt(row, c->dtype, c->len, largest)
                         : is_dbl ? arg_dbl(row, c->dtype, c->len, largest)
                                  : arg_int(row, c->dtype, c->len, largest);
            if (c->op == CLT_REDUCE_ARGMAX || c->op == CLT_REDUCE_ARGMIN)
                ((clt_i64 *)c->out)[o] = at;
            else
                memcpy((char *)c->out + o * size, row + (size_t)at * size, size);
            break;
        }
        }
    }
    return CLT_OK;
}
