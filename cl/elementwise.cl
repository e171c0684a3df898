/* Elementwise kernels: ew_<op> for every operation of elementwise_ops.cl, plus ew_copy and
 * ew_where, built for one dtype with -DDT=<token> (f32, f16, ..., b8), -DST=<storage type>,
 * -DCT=<compute type> and -DKIND=<flt, dbl or int> (-DCLT_KIND_INT=1 for int). ndim sizes and
 * per-operand strides (in elements) place output element i and its inputs (ndim 0: every
 * operand contiguous, element i at offset + i); the elements are spread over the work-items as
 * CLT_RUN spreads them (common.cl). Inputs an operation does not use are passed as any valid
 * buffer. */

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
        ulong z_off, long8 z_st, long8 shape, int ndim, ulong n, int blocked, CT s0, CT s1

/* The strided operands' layout, as arrays: sizes, and the strides of out, x, y, z. */
typedef struct ew_layout {
    long sh[8], st[4][8];
} ew_layout;

/* The offsets off[0..3] (out, x, y, z) of output element i, whose index along each dimension
 * goes to k. */
static void ew_place(const ew_layout *l, int ndim, ulong i, long *k, ulong *off)
{
    for (int d = ndim - 1; d >= 0; d--) {
        k[d] = (long)(i % (ulong)l->sh[d]);
        i /= (ulong)l->sh[d];
        for (int q = 0; q < 4; q++)
            off[q] += (ulong)(k[d] * l->st[q][d]);
    }
}

/* Runs BODY for every output element with o, a, b, c its offsets in out, x, y, z, spread over
 * the work-items as CLT_RUN does. Blocked (CPU-type devices): a work-item's run of consecutive
 * elements places its first one and steps the index (and the four offsets) from there, so that
 * only one element a run pays for the divisions; otherwise each element is placed. */
#define EW_LOOP(BODY)                                                                          \
    ew_layout l_;                                                                              \
    long k_[8];                                                                                \
    ulong g_ = get_global_id(0), gs_ = get_global_size(0), first_ = g_, end_ = n, step_ = gs_; \
    vstore8(shape, 0, l_.sh);                                                                  \
    vstore8(out_st, 0, l_.st[0]);                                                              \
    vstore8(x_st, 0, l_.st[1]);                                                                \
    vstore8(y_st, 0, l_.st[2]);                                                                \
    vstore8(z_st, 0, l_.st[3]);                                                                \
    int nd_ = ndim;                                                                            \
    if (nd_ == 0) { /* contiguous: one dimension of n */                                       \
        nd_ = 1;                                                                               \
        l_.sh[0] = (long)n;                                                                    \
        l_.st[0][0] = l_.st[1][0] = l_.st[2][0] = l_.st[3][0] = 1;                             \
    }                                                                                          \
    if (blocked) {                                                                             \
        ulong per_ = ((n + gs_ - 1) / gs_ + 15) & ~(ulong)15;                                  \
        first_ = min(g_ * per_, n);                                                            \
        end_ = min(first_ + per_, n);                                                          \
        step_ = 1;                                                                             \
    }                                                                                          \
    for (ulong i_ = first_; i_ < end_; i_ += step_) {                                          \
        ulong off_[4] = {out_off, x_off, y_off, z_off};                                        \
        ew_place(&l_, nd_, i_, k_, off_);                                                      \
        for (;;) {                                                                             \
            ulong o = off_[0], a = off_[1], b = off_[2], c = off_[3];                          \
            BODY;                                                                              \
            if (!blocked || ++i_ >= end_)                                                      \
                break;                                                                         \
            for (int d_ = nd_ - 1; d_ >= 0; d_--) { /* the next element's index */             \
                for (int q_ = 0; q_ < 4; q_++)                                                 \
                    off_[q_] += (ulong)l_.st[q_][d_];                                          \
                if (++k_[d_] < l_.sh[d_])                                                      \
                    break;                                                                     \
                for (int q_ = 0; q_ < 4; q_++)                                                 \
                    off_[q_] -= (ulong)(l_.st[q_][d_] * l_.sh[d_]);                            \
                k_[d_] = 0;                                                                    \
            }                                                                                  \
        }                                                                                      \
    }

#define EW_KERNEL(name, inputs, fe, ie, res)                                                   \
    __kernel void ew_##name(EW_PARAMS(OUT_##res, ST))                                          \
    {                                                                                          \
        (void)s0;                                                                              \
        (void)s1;                                                                              \
        EW_LOOP({                                                                              \
            CT x = LOAD(xp[a]);                                                                \
            CT y = inputs > 1 ? (CT)LOAD(yp[b]) : (CT)0;                                       \
            (void)y;                                                                           \
            (void)c;                                                                           \
            out[o] = STORE_##res(EXPR(fe, ie));                                                \
        })                                                                                     \
    }
CLT_EW_OPS(EW_KERNEL)

__kernel void ew_copy(EW_PARAMS(ST, ST))
{
    (void)s0;
    (void)s1;
    EW_LOOP({
        (void)b;
        (void)c;
        out[o] = xp[a];
    })
}

/* n elements from offset `off` set to `value` (the stored bits). */
__kernel void ew_fill(__global ST *out, ulong off, ulong n, ST value, int blocked)
{
    CLT_RUN(n, blocked, out[off + i] = value);
}

__kernel void ew_where(EW_PARAMS(ST, clt_u8))
{
    (void)s0;
    (void)s1;
    EW_LOOP(out[o] = xp[a] ? yp[b] : zp[c])
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

/* ---- copies that are batched transposes (clt__tile_plan in lib/backend.h) ------------------- */
/* Within matrix b (batch index over the nb dimensions of bshape, with strides out_bs, in_bs),
 * out[o + i * out_rs + j] = in[a + i + j * in_cs] for i < rows, j < cols. Elements move as
 * unsigned integers of their size (TU, TU4): bit-exact. */
#define CLT_SIZE_f32 4
#define CLT_SIZE_f64 8
#define CLT_SIZE_f16 2
#define CLT_SIZE_bf16 2
#define CLT_SIZE_i32 4
#define CLT_SIZE_i64 8
#define CLT_SIZE_u8 1
#define CLT_SIZE_b8 1
#define CLT_DT_SIZE CLT_CAT(CLT_SIZE_, DT)
#if CLT_DT_SIZE == 1
#define TU uchar
#define TU4 uchar4
#elif CLT_DT_SIZE == 2
#define TU ushort
#define TU4 ushort4
#elif CLT_DT_SIZE == 4
#define TU uint
#define TU4 uint4
#else
#define TU ulong
#define TU4 ulong4
#endif
#define TP_T 32 /* a tile: TP_T x TP_T elements */
#define TP_ROWS 8 /* ew_copy_t: work-items a work-group has down a tile */

#define TP_PARAMS                                                                              \
    __global ST *outp, ulong out_off, __global const ST *inp, ulong in_off, ulong rows,        \
        ulong cols, long out_rs, long in_cs, ulong batch, long8 bshape, long8 out_bs,          \
        long8 in_bs, int nb

/* The offsets of matrix b's first element in the output (*o) and the input (*a). */
CLT_FN void tp_base(ulong b, long8 bshape, long8 out_bs, long8 in_bs, int nb, ulong *o, ulong *a)
{
    long sh[8], so[8], si[8];
    vstore8(bshape, 0, sh);
    vstore8(out_bs, 0, so);
    vstore8(in_bs, 0, si);
    for (int d = nb - 1; d >= 0; d--) {
        ulong k = b % (ulong)sh[d];
        b /= (ulong)sh[d];
        *o += k * so[d];
        *a += k * si[d];
    }
}

/* GPUs: work-group (TP_T, TP_ROWS) copies the tile at (group 1, group 0) of matrix global id 2
 * through local memory, reading input rows and writing output rows whole (coalesced). */
__kernel void ew_copy_t(TP_PARAMS)
{
    __local TU tile[TP_T][TP_T + 1];
    __global TU *out = (__global TU *)outp;
    __global const TU *in = (__global const TU *)inp;
    ulong o = out_off, a = in_off, i0 = get_group_id(1) * TP_T, j0 = get_group_id(0) * TP_T;
    uint lx = get_local_id(0), ly = get_local_id(1);
    tp_base(get_global_id(2), bshape, out_bs, in_bs, nb, &o, &a);
    (void)batch;
    for (uint k = ly; k < TP_T; k += TP_ROWS)
        if (i0 + lx < rows && j0 + k < cols)
            tile[k][lx] = in[a + (i0 + lx) + (j0 + k) * in_cs];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = ly; k < TP_T; k += TP_ROWS)
        if (i0 + k < rows && j0 + lx < cols)
            out[o + (i0 + k) * out_rs + (j0 + lx)] = tile[lx][k];
}

/* Rows i0 .. i1 - 1, columns j0 .. j1 - 1 of one matrix (o, a its offsets), 4 x 4 blocks
 * transposed in vectors. */
CLT_FN void tp_tile(__global TU *out, __global const TU *in, ulong o, ulong a, long out_rs,
                    long in_cs, ulong i0, ulong i1, ulong j0, ulong j1)
{
    ulong i = i0, j;
    for (; i + 4 <= i1; i += 4) {
        for (j = j0; j + 4 <= j1; j += 4) {
            __global const TU *p = in + a + i + j * in_cs;
            __global TU *q = out + o + i * out_rs + j;
            TU4 r0 = vload4(0, p), r1 = vload4(0, p + in_cs);
            TU4 r2 = vload4(0, p + 2 * in_cs), r3 = vload4(0, p + 3 * in_cs);
            vstore4((TU4)(r0.s0, r1.s0, r2.s0, r3.s0), 0, q);
            vstore4((TU4)(r0.s1, r1.s1, r2.s1, r3.s1), 0, q + out_rs);
            vstore4((TU4)(r0.s2, r1.s2, r2.s2, r3.s2), 0, q + 2 * out_rs);
            vstore4((TU4)(r0.s3, r1.s3, r2.s3, r3.s3), 0, q + 3 * out_rs);
        }
        for (ulong k = i; k < i + 4; k++) /* the columns left */
            for (ulong m = j; m < j1; m++)
                out[o + k * out_rs + m] = in[a + k + m * in_cs];
    }
    for (; i < i1; i++) /* the rows left */
        for (j = j0; j < j1; j++)
            out[o + i * out_rs + j] = in[a + i + j * in_cs];
}

/* CPU devices: work-item g copies one TP_T x TP_T tile, tiles in the order (matrix, row of
 * tiles, column of tiles), so that a work-group's consecutive tiles continue the same output
 * rows. */
__kernel void ew_copy_tb(TP_PARAMS)
{
    ulong tj = (cols + TP_T - 1) / TP_T, ti = (rows + TP_T - 1) / TP_T, g = get_global_id(0);
    ulong o = out_off, a = in_off, j0 = g % tj * TP_T, i0 = g / tj % ti * TP_T;
    if (g >= tj * ti * batch)
        return;
    tp_base(g / tj / ti, bshape, out_bs, in_bs, nb, &o, &a);
    tp_tile((__global TU *)outp, (__global const TU *)inp, o, a, out_rs, in_cs, i0,
            min(i0 + TP_T, rows), j0, min(j0 + TP_T, cols));
}
