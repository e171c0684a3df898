/* The host backend's elementwise operations: one loop per (operation, dtype), generated from
 * the table in cl/elementwise_ops.cl that the OpenCL kernels use too. */
#include <tgmath.h>

#include "backend.h"
#include "scalar_host.h"

#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define STORE_T(v) CLT_CAT(CLT_CAT(CLT_CAT(clt_, KIND), _to_), DT)(v)
#define STORE_B(v) ((clt_u8)((v) != 0))
#define OUT_T ST
#define OUT_B clt_u8
#define clt_rsqrt(v) (1 / sqrt(v))

typedef void (*ew_loop)(const clt__ew_call *c);

/* Walks the output's elements in order, keeping each operand's offset: contiguous operands
 * directly, others with an odometer over the shape. BODY uses o, a, b, k. */
#define EW_WALK(c, BODY)                                                                       \
    do {                                                                                       \
        if ((c)->ndim == 0) {                                                                  \
            for (size_t i = 0; i < (c)->n; i++) {                                              \
                size_t o = i, a = i, b = i, k = i;                                             \
                BODY;                                                                          \
            }                                                                                  \
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
        (void)zp;                                                                              \
        EW_WALK(c, {                                                                           \
            CT x = LOAD(xp[a]);                                                                \
            CT y = inputs > 1 ? (CT)LOAD(yp[b]) : (CT)0;                                       \
            (void)y;                                                                           \
            (void)k;                                                                           \
            out[o] = STORE_##res(EXPR(fe, ie));                                                \
        });                                                                                    \
    }

#define HOST_EW_SPECIAL                                                                        \
    static void CLT_CAT(ew_, CLT_CAT(DT, _copy))(const clt__ew_call *c)                        \
    {                                                                                          \
        OPERANDS(ST, ST);                                                                      \
        (void)yp;                                                                              \
        (void)zp;                                                                              \
        EW_WALK(c, {                                                                           \
            (void)b;                                                                           \
            (void)k;                                                                           \
            out[o] = xp[a];                                                                    \
        });                                                                                    \
    }                                                                                          \
    static void CLT_CAT(ew_, CLT_CAT(DT, _where))(const clt__ew_call *c)                       \
    {                                                                                          \
        OPERANDS(ST, clt_u8);                                                                  \
        EW_WALK(c, { out[o] = xp[a] ? yp[b] : zp[k]; });                                       \
    }

#define TABLE_ENTRY(name, ...) [CLT_EW_##name] = CLT_CAT(CLT_CAT(ew_, DT), _##name),
#define TABLE_ROW                                                                              \
    {CLT_EW_OPS(TABLE_ENTRY)[CLT_EW_copy] = CLT_CAT(ew_, CLT_CAT(DT, _copy)),                   \
     [CLT_EW_where] = CLT_CAT(ew_, CLT_CAT(DT, _where))}

/* One dtype at a time: DT, its storage type, compute type and kind. */
#define EXPR(fe, ie) (fe)
#define KIND flt
#define CT float
#define CT_TOKEN f32
#define DT f32
#define ST float
CLT_EW_OPS(HOST_EW)
HOST_EW_SPECIAL
static const ew_loop loops_f32[CLT_EW_COUNT] = TABLE_ROW;
#undef DT
#undef ST
#define DT f16
#define ST clt_u16
CLT_EW_OPS(HOST_EW)
HOST_EW_SPECIAL
static const ew_loop loops_f16[CLT_EW_COUNT] = TABLE_ROW;
#undef DT
#define DT bf16
CLT_EW_OPS(HOST_EW)
HOST_EW_SPECIAL
static const ew_loop loops_bf16[CLT_EW_COUNT] = TABLE_ROW;
#undef DT
#undef ST
#undef KIND
#undef CT
#undef CT_TOKEN
#define KIND dbl
#define CT double
#define CT_TOKEN f64
#define DT f64
#define ST double
CLT_EW_OPS(HOST_EW)
HOST_EW_SPECIAL
static const ew_loop loops_f64[CLT_EW_COUNT] = TABLE_ROW;
#undef DT
#undef ST
#undef KIND
#undef CT
#undef CT_TOKEN
#undef EXPR
#define EXPR(fe, ie) (ie)
#define KIND int
#define CT clt_i64
#define CT_TOKEN i64
#define DT i32
#define ST clt_i32
CLT_EW_OPS(HOST_EW)
HOST_EW_SPECIAL
static const ew_loop loops_i32[CLT_EW_COUNT] = TABLE_ROW;
#undef DT
#undef ST
#define DT i64
#define ST clt_i64
CLT_EW_OPS(HOST_EW)
HOST_EW_SPECIAL
static const ew_loop loops_i64[CLT_EW_COUNT] = TABLE_ROW;
#undef DT
#undef ST
#define DT u8
#define ST clt_u8
CLT_EW_OPS(HOST_EW)
HOST_EW_SPECIAL
static const ew_loop loops_u8[CLT_EW_COUNT] = TABLE_ROW;
#undef DT
#define DT b8
CLT_EW_OPS(HOST_EW)
HOST_EW_SPECIAL
static const ew_loop loops_b8[CLT_EW_COUNT] = TABLE_ROW;

static const ew_loop *const loops[CLT_DTYPE_COUNT] = {
    [CLT_F32] = loops_f32, [CLT_F64] = loops_f64, [CLT_F16] = loops_f16, [CLT_BF16] = loops_bf16,
    [CLT_I32] = loops_i32, [CLT_I64] = loops_i64, [CLT_U8] = loops_u8,   [CLT_BOOL] = loops_b8,
};

clt_status clt__host_elementwise(const char *fn, clt_device *dev, const clt__ew_call *call)
{
    (void)fn;
    (void)dev;
    loops[call->dtype][call->op](call);
    return CLT_OK;
}
