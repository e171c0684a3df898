/* The host backend's reductions: each contiguous row is loaded in blocks converted to the
 * compute type (float for f32, f16 and bf16, double for f64, int64 for integers and bool) by the
 * conversions of cl/scalar.cl, then reduced with the rules of cl/reduce.cl: compensated sums
 * over CLT__LANES interleaved accumulators, ties broken by the smaller index, NaN first. */
#include <math.h>
#include <stdbool.h>

#include "host.h"
#include "core/core.h"
#include "host_parallel.h"
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
/* The lanes as vectors of CLT__VEC_BYTES: one register of an AVX2 or AVX-512 clone (the
 * baseline's splits it in two). GCC lowers a vector wider than the clone's registers through
 * memory, so the lanes are an array of such vectors, not one vector of all of them. */
#define CLT__VEC_BYTES 32
#define LANES_CSUM(CT, v, n, i, s, c)                                                          \
    do {                                                                                       \
        typedef CT vt_ __attribute__((vector_size(CLT__VEC_BYTES)));                           \
        enum { W_ = CLT__VEC_BYTES / sizeof(CT), V_ = CLT__LANES / W_ };                       \
        vt_ s_[V_], c_[V_];                                                                    \
        memcpy(s_, s, sizeof s_);                                                              \
        memcpy(c_, c, sizeof c_);                                                              \
        for (; i + CLT__LANES <= n; i += CLT__LANES) {                                         \
            for (int k_ = 0; k_ < V_; k_++) {                                                  \
                vt_ x_, t_, bp_;                                                               \
                memcpy(&x_, v + i + (size_t)k_ * W_, sizeof x_);                               \
                t_ = s_[k_] + x_;                                                              \
                bp_ = t_ - s_[k_];                                                             \
                c_[k_] += (s_[k_] - (t_ - bp_)) + (x_ - bp_);                                  \
                s_[k_] = t_;                                                                   \
            }                                                                                  \
        }                                                                                      \
        memcpy(s, s_, sizeof s_);                                                              \
        memcpy(c, c_, sizeof c_);                                                              \
    } while (0)
#define LANES_BEST(CT, v, n, largest, flt, b, z)                                               \
    do {                                                                                       \
        typedef CT vt_ __attribute__((vector_size(CLT__VEC_BYTES)));                           \
        enum { W_ = CLT__VEC_BYTES / sizeof(CT), V_ = CLT__ARG_LANES / W_ };                   \
        vt_ b_[V_], z_[V_];                                                                    \
        memcpy(b_, v, sizeof b_);                                                              \
        memset(z_, 0, sizeof z_);                                                              \
        for (size_t i_ = 0; i_ < n; i_ += CLT__ARG_LANES) {                                    \
            for (int k_ = 0; k_ < V_; k_++) {                                                  \
                vt_ x_;                                                                        \
                memcpy(&x_, v + i_ + (size_t)k_ * W_, sizeof x_);                              \
                __typeof__(x_ > b_[k_]) m_ = largest ? x_ > b_[k_] : x_ < b_[k_];              \
                b_[k_] = (vt_)(((__typeof__(m_))x_ & m_) | ((__typeof__(m_))b_[k_] & ~m_));    \
                if (flt)                                                                       \
                    z_[k_] += x_ - x_;                                                         \
            }                                                                                  \
        }                                                                                      \
        memcpy(b, b_, sizeof b_);                                                              \
        memcpy(z, z_, sizeof z_);                                                              \
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

/* The lanes' partial sums of a range of a row: s, c of the values (of (x - m)^2 for SQDEV) and
 * d, dc of x - m (SQDEV only). */
#define LANE_SUMS(CT)                                                                          \
    struct {                                                                                   \
        CT s[CLT__LANES], c[CLT__LANES], d[CLT__LANES], dc[CLT__LANES];                        \
    }

/* Row reductions for one compute type CT with its loader. */
#define HOST_REDUCE_KIND(K, CT, NATIVE)                                                        \
    typedef LANE_SUMS(CT) sums_##K;                                                            \
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
    /* Adds lanes (s2, c2) into lanes (s, c), lane by lane. */                                 \
    static void lanes_add_##K(CT *s, CT *c, const CT *s2, const CT *c2)                        \
    {                                                                                          \
        for (int l = 0; l < CLT__LANES; l++) {                                                 \
            CT e;                                                                              \
            two_sum_##K(s[l], s2[l], &s[l], &e);                                               \
            c[l] += c2[l] + e;                                                                 \
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
    /* The lanes' compensated sums of elements [from, to) of the row (from a multiple of      \
     * CLT__BLOCK) into *out, zeroed first; with `sqdev`, those of (x - m)^2 in s, c and of   \
     * x - m in d, dc. */                                                                      \
    static void csum_##K(const void *row, clt_dtype dt, size_t from, size_t to, bool sqdev,    \
                         CT m, sums_##K *out)                                                  \
    {                                                                                          \
        CT buf[CLT__BLOCK], sq[CLT__BLOCK];                                                    \
        memset(out, 0, sizeof *out);                                                           \
        for (size_t start = from; start < to; start += CLT__BLOCK) {                           \
            size_t n = to - start < CLT__BLOCK ? to - start : CLT__BLOCK;                      \
            const CT *v = buf;                                                                 \
            if (dt == NATIVE)                                                                  \
                v = (const CT *)row + start;                                                   \
            else                                                                               \
                load_##K(row, dt, start, n, buf);                                              \
            if (sqdev) {                                                                       \
                for (size_t i = 0; i < n; i++) {                                               \
                    buf[i] = v[i] - m;                                                         \
                    sq[i] = buf[i] * buf[i];                                                   \
                }                                                                              \
                lanes_##K(buf, n, out->d, out->dc);                                            \
                v = sq;                                                                        \
            }                                                                                  \
            lanes_##K(v, n, out->s, out->c);                                                   \
        }                                                                                      \
    }                                                                                          \
    /* The row's SUM or SQDEV from the lanes' sums of its pieces, in order, `stride` bytes    \
     * apart from p. */                                                                        \
    static CT csum_result_##K(sums_##K *p, size_t stride, size_t pieces, bool sqdev,           \
                              size_t len)                                                      \
    {                                                                                          \
        for (size_t j = 1; j < pieces; j++) {                                                  \
            const sums_##K *q = (const sums_##K *)(const void *)((const char *)p + j * stride); \
            lanes_add_##K(p->s, p->c, q->s, q->c);                                             \
            if (sqdev)                                                                         \
                lanes_add_##K(p->d, p->dc, q->d, q->dc);                                       \
        }                                                                                      \
        CT q = lanes_total_##K(p->s, p->c);                                                    \
        if (!sqdev)                                                                            \
            return q;                                                                          \
        CT d = lanes_total_##K(p->d, p->dc), v = q - d * d / (CT)len;                          \
        return v < 0 ? (CT)0 : v;                                                              \
    }                                                                                          \
    HOST_ARG_KIND(K, CT, NATIVE, true)

/* A range's best element: its value and index in the row, at < 0 for none. */
#define ARG_BEST(CT)                                                                           \
    struct {                                                                                   \
        CT value;                                                                              \
        int64_t at;                                                                            \
    }

/* The index of a row's largest (smallest) element, for one compute type CT: each block's best
 * value is found lane by lane without indices (and whether it holds a NaN, or with `flt` an
 * infinity: x - x is not 0), and only a block holding a NaN or a value that goes before the
 * best so far is read again element by element with ARG_BEFORE, so the index is the one of
 * reading every element in order. A NaN ends the search (none after it can go before it). */
#define HOST_ARG_KIND(K, CT, NATIVE, FLT)                                                      \
    typedef ARG_BEST(CT) best_##K;                                                             \
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
        return at < 0 || (largest ? top > best : top < best);                                 \
    }                                                                                          \
    /* The best element of [from, to) (from a multiple of CLT__BLOCK) into *out. */           \
    static void arg_##K(const void *row, clt_dtype dt, size_t from, size_t to, bool largest,   \
                        best_##K *out)                                                         \
    {                                                                                          \
        CT buf[CLT__BLOCK], best = 0;                                                          \
        int64_t at = -1;                                                                       \
        for (size_t start = from; start < to; start += CLT__BLOCK) {                           \
            size_t n = to - start < CLT__BLOCK ? to - start : CLT__BLOCK;                      \
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
        *out = (best_##K){best, at};                                                           \
    }                                                                                          \
    /* The row's best index from its pieces' bests, in order: the first that goes before all  \
     * that come earlier, as one reading of the whole row finds. */                            \
    static int64_t arg_result_##K(const best_##K *p, size_t stride, size_t pieces,             \
                                  bool largest)                                                \
    {                                                                                          \
        best_##K b = *p;                                                                       \
        for (size_t j = 1; j < pieces; j++) {                                                  \
            const best_##K *q = (const best_##K *)(const void *)((const char *)p + j * stride); \
            if (q->at >= 0 && ARG_BEFORE(q->value, q->at, b.value, b.at, largest, FLT))        \
                b = *q;                                                                        \
        }                                                                                      \
        return b.at;                                                                           \
    }

HOST_REDUCE_KIND(flt, float, CLT_F32)
HOST_REDUCE_KIND(dbl, double, CLT_F64)
HOST_ARG_KIND(int, clt_i64, CLT_I64, false)

/* The sum of elements [from, to) of an integer or bool row, wrapping modulo 2^64. */
static clt_u64 sum_int(const void *row, clt_dtype dt, size_t from, size_t to)
{
    clt_i64 buf[CLT__BLOCK];
    clt_u64 s = 0;
    for (size_t start = from; start < to; start += CLT__BLOCK) {
        size_t n = to - start < CLT__BLOCK ? to - start : CLT__BLOCK;
        load_int(row, dt, start, n, buf);
        for (size_t i = 0; i < n; i++)
            s += (clt_u64)buf[i];
    }
    return s;
}

/* Rows of at least 2 * PIECE_MIN elements are reduced in pieces of the same length (at least
 * PIECE_MIN, a multiple of CLT__BLOCK, at most MAX_PIECES a row) on the pool's threads: each
 * piece gives its lanes' sums or its best element, and the row's value combines them in order.
 * The pieces depend on the row's length alone, so results do not depend on the thread count.
 * Shorter rows run whole, rows in parallel. Pieces are reduced in groups of rows of at most
 * MAX_PIECES pieces, their partial results on the stack. */
#define PIECE_MIN 16384
#define MAX_PIECES 32

typedef union piece_result {
    sums_flt f;
    sums_dbl d;
    best_flt bf;
    best_dbl bd;
    best_int bi;
    clt_u64 sum;
} piece_result;

typedef struct reduce_job {
    const clt__reduce_call *c;
    size_t size, piece, pieces; /* element size; piece length and count a row */
    size_t row0;                /* the group's first row */
    bool is_flt, is_dbl, largest;
    piece_result *out; /* a result a piece of the group, or NULL: rows write their value */
} reduce_job;

static const char *row_at(const reduce_job *j, size_t r)
{
    return (const char *)j->c->in + (j->c->in_offset + r * j->c->len) * j->size;
}

/* Elements [from, to) of row r into *p. */
static void piece_run(const reduce_job *j, size_t r, size_t from, size_t to, piece_result *p)
{
    const clt__reduce_call *c = j->c;
    const char *row = row_at(j, r);
    bool sqdev = c->op == CLT_REDUCE_SQDEV;
    size_t mo = c->mean_offset + r;
    if (c->op == CLT_REDUCE_SUM || c->op == CLT_REDUCE_MEAN || sqdev) {
        if (j->is_flt)
            csum_flt(row, c->dtype, from, to, sqdev, sqdev ? ((const float *)c->mean)[mo] : 0,
                     &p->f);
        else if (j->is_dbl)
            csum_dbl(row, c->dtype, from, to, sqdev, sqdev ? ((const double *)c->mean)[mo] : 0,
                     &p->d);
        else
            p->sum = sum_int(row, c->dtype, from, to);
    } else if (j->is_flt) {
        arg_flt(row, c->dtype, from, to, j->largest, &p->bf);
    } else if (j->is_dbl) {
        arg_dbl(row, c->dtype, from, to, j->largest, &p->bd);
    } else {
        arg_int(row, c->dtype, from, to, j->largest, &p->bi);
    }
}

/* Row r's value from its pieces' results p[0 .. pieces), written to the output. */
static void row_finish(const reduce_job *j, size_t r, piece_result *p, size_t pieces)
{
    const clt__reduce_call *c = j->c;
    size_t o = c->out_offset + r, len = c->len;
    bool sqdev = c->op == CLT_REDUCE_SQDEV, mean = c->op == CLT_REDUCE_MEAN;
    if (c->op == CLT_REDUCE_SUM || mean || sqdev) {
        if (j->is_flt) { /* a mean: the sum in its dtype, then divided, as the kernels do */
            float s = csum_result_flt(&p->f, sizeof *p, pieces, sqdev, len);
            ((float *)c->out)[o] = mean ? s / (float)len : s;
        } else if (j->is_dbl) {
            double s = csum_result_dbl(&p->d, sizeof *p, pieces, sqdev, len);
            ((double *)c->out)[o] = mean ? s / (double)len : s;
        } else {
            clt_u64 s = 0;
            for (size_t k = 0; k < pieces; k++)
                s += p[k].sum;
            ((clt_i64 *)c->out)[o] = clt_bits_i64(s);
        }
        return;
    }
    int64_t at = j->is_flt   ? arg_result_flt(&p->bf, sizeof *p, pieces, j->largest)
                 : j->is_dbl ? arg_result_dbl(&p->bd, sizeof *p, pieces, j->largest)
                             : arg_result_int(&p->bi, sizeof *p, pieces, j->largest);
    if (c->op == CLT_REDUCE_ARGMAX || c->op == CLT_REDUCE_ARGMIN)
        ((clt_i64 *)c->out)[o] = at;
    else
        memcpy((char *)c->out + o * j->size, row_at(j, r) + (size_t)at * j->size, j->size);
}

/* The pool's part: pieces [lo, hi) of the group (into j->out), or whole rows [lo, hi). */
static void reduce_part(const void *call, size_t lo, size_t hi)
{
    const reduce_job *j = call;
    size_t len = j->c->len;
    for (size_t i = lo; i < hi; i++) {
        if (j->out) {
            size_t r = j->row0 + i / j->pieces, from = i % j->pieces * j->piece;
            size_t to = from + j->piece < len ? from + j->piece : len;
            piece_run(j, r, from, to, &j->out[i]);
        } else {
            piece_result p;
            piece_run(j, i, 0, len, &p);
            row_finish(j, i, &p, 1);
        }
    }
}

/* Column sums (inner > 1): items (r, block of COLUMNS columns of row group r), each column's
 * compensated sum down the len rows of its group, in the compute type, the same two-sums as the
 * rows' lanes. */
#define COLUMNS 64
#define HOST_COLUMNS(CT, KIND)                                                                 \
    CLT__SIMD static void columns_##KIND(const void *call, size_t lo, size_t hi)               \
    {                                                                                          \
        const clt__reduce_call *c = call;                                                      \
        size_t blocks = (c->inner + COLUMNS - 1) / COLUMNS, es = clt_dtype_size(c->dtype);     \
        CT v[COLUMNS], s[COLUMNS], e[COLUMNS];                                                 \
        for (size_t item = lo; item < hi; item++) {                                            \
            size_t r = item / blocks, i0 = item % blocks * COLUMNS;                            \
            size_t n = c->inner - i0 < COLUMNS ? c->inner - i0 : COLUMNS;                      \
            const char *base =                                                                 \
                (const char *)c->in + (c->in_offset + r * c->len * c->inner) * es;             \
            for (size_t j = 0; j < n; j++)                                                     \
                s[j] = e[j] = 0;                                                               \
            for (size_t l = 0; l < c->len; l++) {                                              \
                load_##KIND(base + l * c->inner * es, c->dtype, i0, n, v);                     \
                for (size_t j = 0; j < n; j++) { /* two-sum */                                 \
                    CT t = s[j] + v[j], bp = t - s[j];                                         \
                    e[j] += (s[j] - (t - bp)) + (v[j] - bp);                                   \
                    s[j] = t;                                                                  \
                }                                                                              \
            }                                                                                  \
            CT *out = (CT *)c->out + c->out_offset + r * c->inner + i0;                        \
            for (size_t j = 0; j < n; j++)                                                     \
                out[j] = isfinite(s[j]) ? s[j] + e[j] : s[j];                                  \
        }                                                                                      \
    }
HOST_COLUMNS(float, flt)
HOST_COLUMNS(double, dbl)

clt_status clt__host_reduce(const char *fn, clt_device *dev, const clt__reduce_call *c)
{
    if (c->inner > 1) {
        clt__host_parallel(c->rows * ((c->inner + COLUMNS - 1) / COLUMNS), c->len * COLUMNS,
                           c->dtype == CLT_F64 ? columns_dbl : columns_flt, c);
        return CLT_OK;
    }
    reduce_job j = {.c = c,
                    .size = clt_dtype_size(c->dtype),
                    .is_flt = clt__dtype(c->dtype)->compute == CLT_F32,
                    .is_dbl = c->dtype == CLT_F64,
                    .largest = c->op == CLT_REDUCE_ARGMAX || c->op == CLT_REDUCE_AMAX};
    (void)dev;

    if ((c->op == CLT_REDUCE_SQDEV || c->op == CLT_REDUCE_MEAN) && !j.is_flt && !j.is_dbl)
        return clt__error(CLT_ERR_DTYPE, fn, "%s of dtype %s on cpu",
                          c->op == CLT_REDUCE_MEAN ? "a mean" : "squared deviations",
                          clt_dtype_name(c->dtype));
    size_t cost = c->op == CLT_REDUCE_SQDEV ? 2 * c->len : c->len;
    if (c->len < 2 * PIECE_MIN) {
        clt__host_parallel(c->rows, cost, reduce_part, &j);
        return CLT_OK;
    }
    piece_result out[MAX_PIECES];
    size_t pieces = c->len / PIECE_MIN < MAX_PIECES ? c->len / PIECE_MIN : MAX_PIECES;
    j.piece = (c->len + pieces - 1) / pieces;
    j.piece = (j.piece + CLT__BLOCK - 1) / CLT__BLOCK * CLT__BLOCK;
    j.pieces = (c->len + j.piece - 1) / j.piece;
    j.out = out;
    size_t group = MAX_PIECES / j.pieces; /* rows a group */
    for (j.row0 = 0; j.row0 < c->rows; j.row0 += group) {
        size_t rows = c->rows - j.row0 < group ? c->rows - j.row0 : group;
        clt__host_parallel(rows * j.pieces, cost / j.pieces, reduce_part, &j);
        for (size_t r = 0; r < rows; r++)
            row_finish(&j, j.row0 + r, &out[r * j.pieces], j.pieces);
    }
    return CLT_OK;
}
