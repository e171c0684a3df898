/* Elementwise kernels: ew_<op> for every operation of elementwise_ops.cl, plus ew_copy and
 * ew_where, built for one dtype with -DDT=<token> (f32, f16, ..., b8), -DST=<storage type>,
 * -DCT=<compute type> and -DKIND=<flt, dbl or int> (-DCLT_KIND_INT=1 for int). Work-item i
 * computes output element i. With ndim 0 every operand is contiguous and element i sits at
 * offset + i; otherwise ndim sizes and per-operand strides (in elements) place it. Inputs an
 * operation does not use are passed as any valid buffer. */

#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define STORE_T(v) CLT_CAT(CLT_CAT(CLT_CAT(clt_, KIND), _to_), DT)(v)
#define STORE_B(v) ((clt_u8)((v) != 0))
#define OUT_T ST
#define OUT_B clt_u8
#define clt_rsqrt(v) rsqrt(v)
#if CLT_KIND_INT
#define EXPR(fe, ie) (ie)
#else
#define EXPR(fe, ie) (fe)
#endif

#define EW_PARAMS(OT, XT)                                                                      \
    __global OT *out, ulong out_off, long8 out_st, __global const XT *xp, ulong x_off,         \
        long8 x_st, __global const ST *yp, ulong y_off, long8 y_st, __global const ST *zp,     \
        ulong z_off, long8 z_st, long8 shape, int ndim, ulong n, CT s0, CT s1

/* Offsets o, a, b, c of element i in the output and the three inputs. */
#define EW_OFFSETS                                                                             \
    ulong i = get_global_id(0);                                                                \
    ulong o = out_off + i, a = x_off + i, b = y_off + i, c = z_off + i;                        \
    if (i >= n)                                                                                \
        return;                                                                                \
    if (ndim > 0) {                                                                            \
        long sh[8], so[8], sx[8], sy[8], sz[8];                                                \
        ulong r = i;                                                                           \
        vstore8(shape, 0, sh);                                                                 \
        vstore8(out_st, 0, so);                                                                \
        vstore8(x_st, 0, sx);                                                                  \
        vstore8(y_st, 0, sy);                                                                  \
        vstore8(z_st, 0, sz);                                                                  \
        o = out_off;                                                                           \
        a = x_off;                                                                             \
        b = y_off;                                                                             \
        c = z_off;                                                                             \
        for (int d = ndim - 1; d >= 0; d--) {                                                  \
            ulong k = r % (ulong)sh[d];                                                        \
            r /= (ulong)sh[d];                                                                 \
            o += k * so[d];                                                                    \
            a += k * sx[d];                                                                    \
            b += k * sy[d];                                                                    \
            c += k * sz[d];                                                                    \
        }                                                                                      \
    }

#define EW_KERNEL(name, inputs, fe, ie, res)                                                   \
    __kernel void ew_##name(EW_PARAMS(OUT_##res, ST))                                          \
    {                                                                                          \
        EW_OFFSETS                                                                             \
        CT x = LOAD(xp[a]);                                                                    \
        CT y = inputs > 1 ? (CT)LOAD(yp[b]) : (CT)0;                                           \
        (void)y;                                                                               \
        (void)c;                                                                               \
        (void)s0;                                                                              \
        (void)s1;                                                                              \
        out[o] = STORE_##res(EXPR(fe, ie));                                                    \
    }
CLT_EW_OPS(EW_KERNEL)

__kernel void ew_copy(EW_PARAMS(ST, ST))
{
    EW_OFFSETS
    (void)b;
    (void)c;
    (void)s0;
    (void)s1;
    out[o] = xp[a];
}

/* n elements from offset `off` set to `value` (the stored bits). */
__kernel void ew_fill(__global ST *out, ulong off, ulong n, ST value)
{
    ulong i = get_global_id(0);
    if (i < n)
        out[off + i] = value;
}

__kernel void ew_where(EW_PARAMS(ST, clt_u8))
{
    EW_OFFSETS
    (void)s0;
    (void)s1;
    out[o] = xp[a] ? yp[b] : zp[c];
}

/* The same operations over contiguous operands (ndim 0), element i at offset + i, each
 * work-item looping over several with CLT_RUN (common.cl): ewc_<op>, ewc_copy and ewc_where. */
#define EWC_PARAMS(OT, XT)                                                                     \
    __global OT *out, ulong out_off, __global const XT *xp, ulong x_off,                       \
        __global const ST *yp, ulong y_off, __global const ST *zp, ulong z_off, ulong n,       \
        int blocked, CT s0, CT s1

#define EWC_KERNEL(name, inputs, fe, ie, res)                                                  \
    __kernel void ewc_##name(EWC_PARAMS(OUT_##res, ST))                                        \
    {                                                                                          \
        (void)zp;                                                                              \
        (void)z_off;                                                                           \
        (void)s0;                                                                              \
        (void)s1;                                                                              \
        CLT_RUN(n, blocked, {                                                                  \
            CT x = LOAD(xp[x_off + i]);                                                        \
            CT y = inputs > 1 ? (CT)LOAD(yp[y_off + i]) : (CT)0;                               \
            (void)y;                                                                           \
            out[out_off + i] = STORE_##res(EXPR(fe, ie));                                      \
        });                                                                                    \
    }
CLT_EW_OPS(EWC_KERNEL)

__kernel void ewc_copy(EWC_PARAMS(ST, ST))
{
    (void)yp;
    (void)y_off;
    (void)zp;
    (void)z_off;
    (void)s0;
    (void)s1;
    CLT_RUN(n, blocked, out[out_off + i] = xp[x_off + i]);
}

__kernel void ewc_where(EWC_PARAMS(ST, clt_u8))
{
    (void)s0;
    (void)s1;
    CLT_RUN(n, blocked, out[out_off + i] = xp[x_off + i] ? yp[y_off + i] : zp[z_off + i]);
}
