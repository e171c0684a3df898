/* The host backend's elementwise operations: one loop per (operation, dtype), generated from
 * the table in cl/elementwise_ops.cl that the OpenCL kernels use too (host_elementwise.inc,
 * included once per dtype); copies that are batched transposes (clt__tile_plan) in cache-sized
 * tiles (host_tiled.inc, once per element size), 4 x 4 (2 x 2) blocks of 4-byte (8-byte)
 * elements transposed in SSE2 registers; and the dtype conversions, one loop per pair of
 * dtypes over the branch-free functions of cl/scalar.cl. */
#include <string.h>
#include <tgmath.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "host.h"
#include "host_parallel.h"
#include "host_simd.h"
#include "host_generic.h"
#include "backends/shared/scalar_host.h"

#define STORE_T(v) STORE(v)
#define STORE_B(v) ((clt_u8)((v) != 0))
#define OUT_T ST
#define OUT_B clt_u8
#define clt_rsqrt(v) (1 / sqrt(v))

typedef void (*ew_loop)(const clt__ew_call *c);

/* The rows of the innermost dimension, each from offsets o0, a0, b0, k0 at the constant steps
 * SO, SA, SB, SK (so that the compiler vectorises it), with an odometer over the outer
 * dimensions. */
#define EW_ROWS(c, BODY, SO, SA, SB, SK)                                                       \
    do {                                                                                       \
        int last = (c)->ndim - 1;                                                              \
        int64_t idx[CLT_MAX_DIMS] = {0}, len = (c)->shape[last];                               \
        int64_t o0 = 0, a0 = 0, b0 = 0, k0 = 0;                                                \
        for (size_t i = 0; i < (c)->n; i += (size_t)len) {                                     \
            for (int64_t j = 0; j < len; j++) {                                                \
                int64_t o = o0 + j * (SO), a = a0 + j * (SA), b = b0 + j * (SB);               \
                int64_t k = k0 + j * (SK);                                                     \
                BODY;                                                                          \
            }                                                                                  \
            for (int d = last - 1; d >= 0; d--) {                                              \
                o0 += (c)->out.strides[d];                                                     \
                a0 += (c)->in[0].strides[d];                                                   \
                b0 += (c)->in[1].strides[d];                                                   \
                k0 += (c)->in[2].strides[d];                                                   \
                if (++idx[d] < (c)->shape[d])                                                  \
                    break;                                                                     \
                o0 -= (c)->out.strides[d] * (c)->shape[d];                                     \
                a0 -= (c)->in[0].strides[d] * (c)->shape[d];                                   \
                b0 -= (c)->in[1].strides[d] * (c)->shape[d];                                   \
                k0 -= (c)->in[2].strides[d] * (c)->shape[d];                                   \
                idx[d] = 0;                                                                    \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* Whether the innermost steps of the call are so, sa, sb, sk (the inputs after the first unused
 * by an operation of fewer inputs). */
#define EW_STEPS(c, inputs, so, sa, sb, sk)                                                    \
    ((c)->out.strides[(c)->ndim - 1] == (so) && (c)->in[0].strides[(c)->ndim - 1] == (sa) &&   \
     ((inputs) < 2 || (c)->in[1].strides[(c)->ndim - 1] == (sb)) &&                            \
     ((inputs) < 3 || (c)->in[2].strides[(c)->ndim - 1] == (sk)))

/* Walks the output's elements in order, keeping each operand's offset: contiguous operands
 * directly; a binary operation whose innermost dimension runs in order but for one broadcast
 * operand (a bias, a per-channel scale), or a three-input one but for its last two (addcmul of a
 * per-channel scale and shift), a row at a time (EW_ROWS, for f32 and f64, where
 * EW_BROADCAST_ROWS is 1: the other dtypes' loops would double the file's compile time for
 * rarer work); others with an odometer over the shape. BODY uses o, a, b, k; inputs (a constant) is how many of them it reads. */
#define EW_WALK(c, inputs, BODY)                                                               \
    do {                                                                                       \
        if ((c)->ndim == 0) {                                                                  \
            for (size_t i = 0; i < (c)->n; i++) {                                              \
                size_t o = i, a = i, b = i, k = i;                                             \
                BODY;                                                                          \
            }                                                                                  \
            break;                                                                             \
        }                                                                                      \
        if (EW_BROADCAST_ROWS && (inputs) > 1 && EW_STEPS(c, inputs, 1, 1, 0, 0)) {            \
            EW_ROWS(c, BODY, 1, 1, 0, 0);                                                      \
            break;                                                                             \
        }                                                                                      \
        if (EW_BROADCAST_ROWS && (inputs) == 2 && EW_STEPS(c, inputs, 1, 0, 1, 0)) {           \
            EW_ROWS(c, BODY, 1, 0, 1, 0);                                                      \
            break;                                                                             \
        }                                                                                      \
        int64_t idx[CLT_MAX_DIMS] = {0};                                                       \
        int64_t o = 0, a = 0, b = 0, k = 0;                                                    \
        for (size_t i = 0; i < (c)->n; i++) {                                                  \
            BODY;                                                                              \
            for (int d = (c)->ndim - 1; d >= 0; d--) {                                         \
                o += (c)->out.strides[d];                                                      \
                a += (c)->in[0].strides[d];                                                    \
                b += (c)->in[1].strides[d];                                                    \
                k += (c)->in[2].strides[d];                                                    \
                if (++idx[d] < (c)->shape[d])                                                  \
                    break;                                                                     \
                o -= (c)->out.strides[d] * (c)->shape[d];                                      \
                a -= (c)->in[0].strides[d] * (c)->shape[d];                                    \
                b -= (c)->in[1].strides[d] * (c)->shape[d];                                    \
                k -= (c)->in[2].strides[d] * (c)->shape[d];                                    \
                idx[d] = 0;                                                                    \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* A copy whose innermost dimension runs in order on both sides, a row (memcpy) at a time with
 * the odometer over the others: stepping the odometer an element at a time was the cost of the
 * permuting copies of a convolution's training path, (O, N, L) to (N, O, L) with L 16 to 64
 * (docs/performance.md, Convolution and pooling). */
static void copy_rows(const clt__ew_call *c, void *out, const void *in, size_t es)
{
    int last = c->ndim - 1;
    size_t len = (size_t)c->shape[last], rows = c->n / len;
    int64_t idx[CLT_MAX_DIMS] = {0}, o = 0, a = 0;
    for (size_t r = 0; r < rows; r++) {
        memcpy((char *)out + (size_t)o * es, (const char *)in + (size_t)a * es, len * es);
        for (int d = last - 1; d >= 0; d--) {
            o += c->out.strides[d], a += c->in[0].strides[d];
            if (++idx[d] < c->shape[d])
                break;
            o -= c->out.strides[d] * c->shape[d], a -= c->in[0].strides[d] * c->shape[d];
            idx[d] = 0;
        }
    }
}

#define OPERANDS(OT, XT)                                                                       \
    OT *out = (OT *)c->out.buf + c->out.offset;                                                \
    const XT *xp = (const XT *)c->in[0].buf + c->in[0].offset;                                 \
    const ST *yp = c->in[1].buf ? (const ST *)c->in[1].buf + c->in[1].offset : NULL;           \
    const ST *zp = c->in[2].buf ? (const ST *)c->in[2].buf + c->in[2].offset : NULL

#define HOST_EW(name, inputs, fe, ie, res)                                                     \
    static void CLT_CAT(CLT_CAT(ew_, DT), _##name)(const clt__ew_call *c)                      \
    {                                                                                          \
        OPERANDS(OUT_##res, ST);                                                               \
        CT s0 = (CT)CLT_CAT(clt_dbl_to_, CT_TOKEN)(c->s0);                                     \
        CT s1 = (CT)CLT_CAT(clt_dbl_to_, CT_TOKEN)(c->s1);                                     \
        (void)s0;                                                                              \
        (void)s1;                                                                              \
        EW_WALK(c, inputs, {                                                                   \
            CT x = LOAD(xp[a]);                                                                \
            CT y = inputs > 1 ? (CT)LOAD(yp[b]) : (CT)0;                                       \
            CT z = inputs > 2 ? (CT)LOAD(zp[k]) : (CT)0;                                       \
            (void)y;                                                                           \
            (void)z;                                                                           \
            out[o] = STORE_##res(EXPR(fe, ie));                                                \
        });                                                                                    \
    }

#define TABLE_ENTRY(name, ...) [CLT_EW_##name] = CLT_CAT(CLT_CAT(ew_, DT), _##name),

/* The loops of each dtype (host_elementwise.inc). CT_TOKEN is the token of the compute type
 * (clt_dbl_to_<CT_TOKEN> converts the call's scalars to it). The floating dtypes compute their
 * floating expressions and take broadcast rows (EW_WALK) where stored as their compute type
 * (f32, f64); the integer and bool ones their integer expressions. */
#define CT_TOKEN_flt f32
#define CT_TOKEN_dbl f64
#define CT_TOKEN_int i64
#define CT_TOKEN CLT_CAT(CT_TOKEN_, KIND)
#define EXPR(fe, ie) (fe)
#define EW_BROADCAST_ROWS (sizeof(ST) == sizeof(CT))
#define HOST_GENERIC "host_elementwise.inc"
#include "host_each_floating.h"
#undef EXPR
#undef EW_BROADCAST_ROWS
#define EXPR(fe, ie) (ie)
#define EW_BROADCAST_ROWS 0
#define KIND int
#define CT clt_i64
#define DT i32
#define ST clt_i32
#include "host_elementwise.inc"
#undef DT
#undef ST
#define DT i64
#define ST clt_i64
#include "host_elementwise.inc"
#undef DT
#undef ST
#define DT u8
#define ST clt_u8
#include "host_elementwise.inc"
#undef DT
#define DT b8
#include "host_elementwise.inc"

static const ew_loop *const loops[CLT_DTYPE_COUNT] = {
    [CLT_F32] = loops_f32, [CLT_F64] = loops_f64, [CLT_F16] = loops_f16, [CLT_BF16] = loops_bf16,
    [CLT_I32] = loops_i32, [CLT_I64] = loops_i64, [CLT_U8] = loops_u8,   [CLT_BOOL] = loops_b8,
};

/* ---- copies of batched transposes, in tiles ------------------------------------------------ */

/* Tiles are CLT__TILE x CLT__TILE elements, their lines kept in L1. A large copy of 4- or 8-byte
 * elements whose output rows are 16-byte aligned takes tiles of CLT__NT_ROWS output rows by one
 * 64-byte line of output columns, written with non-temporal stores (as memcpy does for large
 * copies: no read of the output lines first), so that the input is read in long runs. */
#define CLT__TILE 32
#define CLT__NT_ROWS 512
#define CLT__NT_BYTES ((size_t)8 << 20) /* copies at least this large stream their output */

#if defined(__SSE2__)
#define VLD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
/* A 16-byte store: non-temporal with nt (p then 16-byte aligned). */
static inline void vst(void *p, __m128i v, bool nt)
{
    if (nt)
        _mm_stream_si128((__m128i *)p, v);
    else
        _mm_storeu_si128((__m128i *)p, v);
}

/* out[i * rs + j] = in[i + j * cs] for i in [i0, i1), j in [j0, j1) for 4-byte elements: 4 x 4
 * blocks transposed by integer unpacks (bit-exact). */
static void tile_uint32_t(uint32_t *restrict out, const uint32_t *restrict in, int64_t rs,
                          int64_t cs, size_t i0, size_t i1, size_t j0, size_t j1, bool nt)
{
    int64_t i = (int64_t)i0, j;
    for (; i + 4 <= (int64_t)i1; i += 4) {
        for (j = (int64_t)j0; j + 4 <= (int64_t)j1; j += 4) {
            __m128i r0 = VLD(in + i + j * cs), r1 = VLD(in + i + (j + 1) * cs);
            __m128i r2 = VLD(in + i + (j + 2) * cs), r3 = VLD(in + i + (j + 3) * cs);
            __m128i t0 = _mm_unpacklo_epi32(r0, r1), t1 = _mm_unpacklo_epi32(r2, r3);
            __m128i t2 = _mm_unpackhi_epi32(r0, r1), t3 = _mm_unpackhi_epi32(r2, r3);
            vst(out + i * rs + j, _mm_unpacklo_epi64(t0, t1), nt);
            vst(out + (i + 1) * rs + j, _mm_unpackhi_epi64(t0, t1), nt);
            vst(out + (i + 2) * rs + j, _mm_unpacklo_epi64(t2, t3), nt);
            vst(out + (i + 3) * rs + j, _mm_unpackhi_epi64(t2, t3), nt);
        }
        for (int64_t k = i; k < i + 4; k++) /* the columns left */
            for (int64_t m = j; m < (int64_t)j1; m++)
                out[k * rs + m] = in[k + m * cs];
    }
    for (; i < (int64_t)i1; i++) /* the rows left */
        for (j = (int64_t)j0; j < (int64_t)j1; j++)
            out[i * rs + j] = in[i + j * cs];
}

/* 8-byte elements: 2 x 2 blocks. */
static void tile_uint64_t(uint64_t *restrict out, const uint64_t *restrict in, int64_t rs,
                          int64_t cs, size_t i0, size_t i1, size_t j0, size_t j1, bool nt)
{
    int64_t i = (int64_t)i0, j;
    for (; i + 2 <= (int64_t)i1; i += 2) {
        for (j = (int64_t)j0; j + 2 <= (int64_t)j1; j += 2) {
            __m128i r0 = VLD(in + i + j * cs), r1 = VLD(in + i + (j + 1) * cs);
            vst(out + i * rs + j, _mm_unpacklo_epi64(r0, r1), nt);
            vst(out + (i + 1) * rs + j, _mm_unpackhi_epi64(r0, r1), nt);
        }
        for (int64_t k = i; k < i + 2; k++)
            for (int64_t m = j; m < (int64_t)j1; m++)
                out[k * rs + m] = in[k + m * cs];
    }
    for (; i < (int64_t)i1; i++)
        for (j = (int64_t)j0; j < (int64_t)j1; j++)
            out[i * rs + j] = in[i + j * cs];
}
#undef VLD

/* Whether plan t's output may be streamed: 4- or 8-byte elements, a large copy, and every
 * output row of every matrix 16-byte aligned (columns then go in whole vectors). */
static bool streams(const clt__ew_call *c, const clt__tile_plan *t, size_t size)
{
    size_t per = 16 / size; /* elements a vector */
    if (size < 4 || t->rows * t->cols * t->batch * size < CLT__NT_BYTES ||
        ((uintptr_t)c->out.buf + c->out.offset * size) % 16 || t->out_rs % (int64_t)per ||
        t->cols % per)
        return false;
    for (int d = 0; d < t->nb; d++)
        if (t->out_bs[d] % (int64_t)per)
            return false;
    return true;
}
#else
static bool streams(const clt__ew_call *c, const clt__tile_plan *t, size_t size)
{
    (void)c, (void)t, (void)size;
    return false;
}
#endif

/* The tiled copies of each element size (host_tiled.inc), with SSE2 by the tiles above for 4-
 * and 8-byte elements. */
#define TILE_PLAIN 1
#define T uint8_t
#include "host_tiled.inc"
#undef T
#define T uint16_t
#include "host_tiled.inc"
#undef T
#undef TILE_PLAIN
#if defined(__SSE2__)
#define TILE_PLAIN 0
#else
#define TILE_PLAIN 1
#endif
#define T uint32_t
#include "host_tiled.inc"
#undef T
#define T uint64_t
#include "host_tiled.inc"
#undef T
#undef TILE_PLAIN

/* Runs a copy of plan t, by element size. */
static void tiled_copy(const clt__ew_call *c, const clt__tile_plan *t)
{
    size_t size = clt_dtype_size(c->dtype);
    bool nt = streams(c, t, size);
    size_t ti = nt ? CLT__NT_ROWS : CLT__TILE, tj = nt ? 64 / size : CLT__TILE;
    switch (size) {
    case 1: tiled_uint8_t(c, t, ti, tj, nt); break;
    case 2: tiled_uint16_t(c, t, ti, tj, nt); break;
    case 4: tiled_uint32_t(c, t, ti, tj, nt); break;
    default: tiled_uint64_t(c, t, ti, tj, nt); break;
    }
#if defined(__SSE2__)
    if (nt)
        _mm_sfence(); /* the streamed stores complete before anything else reads them */
#endif
}

static void ew_run(const clt__ew_call *call)
{
    clt__tile_plan plan;
    if (clt__tile_plan_of(call, &plan))
        tiled_copy(call, &plan);
    else
        loops[call->dtype][call->op](call);
}

/* Items [lo, hi) of an elementwise call's outermost dimension (of its n elements when every
 * operand is contiguous), run as a call of their own. */
static void ew_part(const void *whole, size_t lo, size_t hi)
{
    const clt__ew_call *c = whole;
    clt__ew_call p = *c;
    clt__operand *ops[] = {&p.out, &p.in[0], &p.in[1], &p.in[2]};
    if (lo == 0 && hi == (c->ndim ? (size_t)c->shape[0] : c->n)) {
        ew_run(c);
        return;
    }
    p.n = c->ndim ? c->n / (size_t)c->shape[0] * (hi - lo) : hi - lo;
    if (c->ndim)
        p.shape[0] = (int64_t)(hi - lo);
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (ops[i]->buf)
            ops[i]->offset += c->ndim ? (size_t)((int64_t)lo * ops[i]->strides[0]) : lo;
    ew_run(&p);
}

clt_status clt__host_elementwise(const char *fn, clt_device *dev, const clt__ew_call *call)
{
    size_t outer = call->ndim ? (size_t)call->shape[0] : call->n;
    size_t inputs = 1 + (call->in[1].buf != NULL) + (call->in[2].buf != NULL);
    (void)fn;
    (void)dev;
    if (call->n == 0)
        return CLT_OK;
    clt__host_parallel(outer, call->n / outer * (inputs + 1), ew_part, call);
    return CLT_OK;
}

typedef void (*cast_loop)(const void *src, void *dst, size_t n);

#define CLT__HOST_CAST(S, ST_, SK, D, DT_, DK)                                                 \
    CLT__SIMD static void cast_##S##_##D(const void *src, void *dst, size_t n)                 \
    {                                                                                          \
        const ST_ *s = src;                                                           \
        DT_ *d = dst;                                                                 \
        for (size_t i = 0; i < n; i++)                                                         \
            d[i] = clt_cvt_##S##_##D(s[i]);                                                    \
    }
CLT_DTYPE_PAIRS(CLT__HOST_CAST)

/* The dtype tokens of scalar.cl as clt_dtype values. */
#define CLT__DT_f32 CLT_F32
#define CLT__DT_f64 CLT_F64
#define CLT__DT_f16 CLT_F16
#define CLT__DT_bf16 CLT_BF16
#define CLT__DT_i32 CLT_I32
#define CLT__DT_i64 CLT_I64
#define CLT__DT_u8 CLT_U8
#define CLT__DT_b8 CLT_BOOL
#define CLT__CAST_ENTRY(S, ST_, SK, D, DT_, DK) [CLT__DT_##S][CLT__DT_##D] = cast_##S##_##D,

static const cast_loop cast_table[CLT_DTYPE_COUNT][CLT_DTYPE_COUNT] = {
    CLT_DTYPE_PAIRS(CLT__CAST_ENTRY)};

typedef struct cast_part_call {
    cast_loop loop;
    const char *src;
    char *dst;
    size_t src_size, dst_size;
} cast_part_call;

static void cast_part(const void *call, size_t lo, size_t hi)
{
    const cast_part_call *c = call;
    c->loop(c->src + lo * c->src_size, c->dst + lo * c->dst_size, hi - lo);
}

/* dst[dst_off + i] = convert(src[src_off + i]) for i < n (the backend's cast). */
clt_status clt__host_cast(const char *fn, clt_device *dev, void *src, size_t src_off,
                          clt_dtype src_dtype, void *dst, size_t dst_off, clt_dtype dst_dtype,
                          size_t n)
{
    cast_part_call c = {cast_table[src_dtype][dst_dtype],
                        (const char *)src + src_off * clt_dtype_size(src_dtype),
                        (char *)dst + dst_off * clt_dtype_size(dst_dtype),
                        clt_dtype_size(src_dtype), clt_dtype_size(dst_dtype)};
    (void)fn;
    (void)dev;
    clt__host_parallel(n, 2, cast_part, &c);
    return CLT_OK;
}
