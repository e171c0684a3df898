/* Elementwise kernels: ew_<op> for every operation of elementwise_ops.cl, plus ew_copy and
 * ew_where, built for one dtype with -DDT=<token> (f32, f16, ..., b8), -DST=<storage type>,
 * -DCT=<compute type> and -DKIND=<flt, dbl or int> (-DCLT_KIND_INT=1 for int). ndim sizes and
 * per-operand strides (in elements) place output element i and its inputs (ndim 0: every
 * operand contiguous, element i at offset + i); the elements are spread over the work-items as
 * CLT_RUN spreads them (common.cl). Inputs an operation does not use are passed as any valid
 * buffer. Each program built from this file holds one part of it (CLT_WANTED, common.cl): the
 * ew_ and ewc_ kernels of one group of operations of elementwise_ops.cl (binary, scalar, sign,
 * math, compare, backward), copy (copy and where), fill, or transpose (the batched transposes at
 * the end). */

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

/* The strided operands' layout: sizes, and the strides of out, x, y, z (operand q's stride
 * along dimension d at st[8 q + d]). A struct, passed by value: vector arguments wider than the
 * CPU's registers would change a CPU driver's ABI. (One-dimensional arrays only: Rusticl 22
 * sizes a struct holding a two-dimensional one wrongly. A kernel copies such an argument into
 * private memory before any branch: Rusticl 22 reads an argument inside control flow as if
 * every work-item took the same path, and says so on stderr.) */
typedef struct ew_layout {
    long sh[8], st[32];
} ew_layout;

/* The arguments arrive with an _in suffix and EW_ARGS(OT, XT) reads every one of them into a
 * private variable of the plain name first, before any branch or loop (see ew_layout). */
#define EW_PARAMS(OT, XT)                                                                      \
    __global OT *out_in, ulong out_off_in, __global const XT *xp_in, ulong x_off_in,           \
        __global const ST *yp_in, ulong y_off_in, __global const ST *zp_in, ulong z_off_in,    \
        ew_layout layout_in, int ndim_in, ulong n_in, int blocked_in, CT s0_in, CT s1_in
#define EW_ARGS(OT, XT)                                                                        \
    __global OT *out = out_in;                                                                 \
    __global const XT *xp = xp_in;                                                             \
    __global const ST *yp = yp_in, *zp = zp_in;                                                \
    ulong out_off = out_off_in, x_off = x_off_in, y_off = y_off_in, z_off = z_off_in;          \
    ulong n = n_in;                                                                            \
    int ndim = ndim_in, blocked = blocked_in;                                                  \
    CT s0 = s0_in, s1 = s1_in;                                                                 \
    ew_layout layout = layout_in;                                                              \
    (void)yp, (void)zp, (void)y_off, (void)z_off, (void)s0, (void)s1

/* The offsets off[0..3] (out, x, y, z) of output element i, whose index along each dimension
 * goes to k. */
CLT_FN void ew_place(const ew_layout *l, int ndim, ulong i, long *k, ulong *off)
{
    for (int d = ndim - 1; d >= 0; d--) {
        k[d] = (long)(i % (ulong)l->sh[d]);
        i /= (ulong)l->sh[d];
        for (int q = 0; q < 4; q++)
            off[q] += (ulong)(k[d] * l->st[8 * q + d]);
    }
}

/* BODY over a piece of piece_ elements from offsets off_, the operands' strides along it SO, SA,
 * SB, SC: constants where EW_LOOP found the common ones (an operand broadcast along the piece
 * has stride 0), so that the compiler sees contiguous and repeated loads. */
#define EW_PIECE(SO, SA, SB, SC, BODY)                                                         \
    do {                                                                                       \
        for (ulong j_ = 0; j_ < piece_; j_++) {                                                \
            ulong o = off_[0] + j_ * (ulong)(SO), a = off_[1] + j_ * (ulong)(SA);              \
            ulong b = off_[2] + j_ * (ulong)(SB), c = off_[3] + j_ * (ulong)(SC);              \
            BODY;                                                                              \
        }                                                                                      \
    } while (0)

/* Runs BODY for every output element with o, a, b, c its offsets in out, x, y, z, spread over
 * the work-items as CLT_RUN does. Blocked (CPU-type devices): a work-item's run of consecutive
 * elements places its first one, then goes a piece of the innermost dimension at a time, the
 * four offsets stepping by that dimension's constant strides (a loop the compiler vectorises),
 * the index carried into the outer dimensions between pieces; so only one element a run pays
 * for the divisions. Otherwise each element is placed. */
#define EW_LOOP(BODY)                                                                          \
    ew_layout l_ = layout;                                                                     \
    long k_[8];                                                                                \
    ulong g_ = get_global_id(0), gs_ = get_global_size(0);                                     \
    int nd_ = ndim;                                                                            \
    if (nd_ == 0) { /* contiguous: one dimension of n */                                       \
        nd_ = 1;                                                                               \
        l_.sh[0] = (long)n;                                                                    \
        l_.st[0] = l_.st[8] = l_.st[16] = l_.st[24] = 1;                                       \
    }                                                                                          \
    if (blocked) {                                                                             \
        ulong i_, end_;                                                                        \
        clt_run_span(n, g_, gs_, &i_, &end_);                                                  \
        ulong off_[4] = {out_off, x_off, y_off, z_off};                                        \
        int last_ = nd_ - 1;                                                                   \
        long so_ = l_.st[last_], sa_ = l_.st[8 + last_], sb_ = l_.st[16 + last_];              \
        long sc_ = l_.st[24 + last_];                                                          \
        if (i_ < end_)                                                                         \
            ew_place(&l_, nd_, i_, k_, off_);                                                  \
        while (i_ < end_) {                                                                    \
            ulong piece_ = min(end_ - i_, (ulong)(l_.sh[last_] - k_[last_]));                  \
            if (so_ == 1 && sa_ == 1 && sb_ == 0 && sc_ == 0) /* y, z broadcast or unused */   \
                EW_PIECE(1, 1, 0, 0, BODY);                                                    \
            else if (so_ == 1 && sa_ == 0 && sb_ == 1 && sc_ == 0) /* x, z broadcast */        \
                EW_PIECE(1, 0, 1, 0, BODY);                                                    \
            else if (so_ == 1 && sa_ == 1 && sb_ == 1 && sc_ == 0)                             \
                EW_PIECE(1, 1, 1, 0, BODY);                                                    \
            else                                                                               \
                EW_PIECE(so_, sa_, sb_, sc_, BODY);                                            \
            i_ += piece_;                                                                      \
            for (int q_ = 0; q_ < 4; q_++)                                                     \
                off_[q_] += (ulong)((long)piece_ * l_.st[8 * q_ + last_]);                     \
            k_[last_] += (long)piece_;                                                         \
            for (int d_ = last_; d_ > 0 && k_[d_] == l_.sh[d_]; d_--) { /* carry */            \
                for (int q_ = 0; q_ < 4; q_++)                                                 \
                    off_[q_] += (ulong)(l_.st[8 * q_ + d_ - 1] - l_.st[8 * q_ + d_] * l_.sh[d_]); \
                k_[d_] = 0;                                                                    \
                k_[d_ - 1]++;                                                                  \
            }                                                                                  \
        }                                                                                      \
    } else {                                                                                   \
        for (ulong i_ = g_; i_ < n; i_ += gs_) {                                               \
            ulong off_[4] = {out_off, x_off, y_off, z_off};                                    \
            ew_place(&l_, nd_, i_, k_, off_);                                                  \
            ulong o = off_[0], a = off_[1], b = off_[2], c = off_[3];                          \
            BODY;                                                                              \
        }                                                                                      \
    }

/* K(op...) for every operation, each group in the part of its name. */
#define EW_GROUPS(K)                                                                           \
    CLT_WHEN(binary)(CLT_EW_BINARY(K)) CLT_WHEN(scalar)(CLT_EW_SCALAR(K))                      \
    CLT_WHEN(sign)(CLT_EW_SIGN(K)) CLT_WHEN(math)(CLT_EW_MATH(K))                              \
    CLT_WHEN(compare)(CLT_EW_COMPARE(K)) CLT_WHEN(backward)(CLT_EW_BACKWARD(K))

#define EW_KERNEL(name, inputs, fe, ie, res)                                                   \
    __kernel void ew_##name(EW_PARAMS(OUT_##res, ST))                                          \
    {                                                                                          \
        EW_ARGS(OUT_##res, ST);                                                                \
        EW_LOOP({                                                                              \
            CT x = LOAD(xp[a]);                                                                \
            CT y = inputs > 1 ? (CT)LOAD(yp[b]) : (CT)0;                                       \
            CT z = inputs > 2 ? (CT)LOAD(zp[c]) : (CT)0;                                       \
            (void)y;                                                                           \
            (void)z;                                                                           \
            out[o] = STORE_##res(EXPR(fe, ie));                                                \
        })                                                                                     \
    }
EW_GROUPS(EW_KERNEL)

#if CLT_WANTED(copy)
__kernel void ew_copy(EW_PARAMS(ST, ST))
{
    EW_ARGS(ST, ST);
    EW_LOOP({
        (void)b;
        (void)c;
        out[o] = xp[a];
    })
}
#endif

/* Up to 8 runs of contiguous elements into dst (backend.h's clt__copies_call): run j's n_j
 * elements from src_j at src_off_j to dst at dst_off_j (runs past `count` have none), each run
 * spread over every work-item in turn; built for the dtype whose storage has the elements'
 * size. */
#define RUN_PARAMS(J) __global const ST *src##J, ulong src_off##J, ulong dst_off##J, ulong n##J
#define RUN_TAKE(J)                                                                            \
    case J:                                                                                    \
        src = src##J, so = src_off##J, d = dst_off##J, n = n##J;                               \
        break

#if CLT_WANTED(copy)
__kernel void ew_copy_runs(__global ST *dst, RUN_PARAMS(0), RUN_PARAMS(1), RUN_PARAMS(2),
                           RUN_PARAMS(3), RUN_PARAMS(4), RUN_PARAMS(5), RUN_PARAMS(6),
                           RUN_PARAMS(7), int count, int blocked)
{
    for (int j = 0; j < count; j++) {
        __global const ST *src = src0;
        ulong so = src_off0, d = dst_off0, n = n0;
        CLT_TAKE_ONE_OF_8(j, RUN_TAKE);
        CLT_RUN(n, blocked, dst[d + i] = src[so + i]);
    }
}
#endif

/* n elements from offset `off` set to `value` (the stored bits). */
#if CLT_WANTED(fill)
__kernel void ew_fill(__global ST *out, ulong off, ulong n, ST value, int blocked)
{
    CLT_RUN(n, blocked, out[off + i] = value);
}
#endif

#if CLT_WANTED(copy)
__kernel void ew_where(EW_PARAMS(ST, clt_u8))
{
    EW_ARGS(ST, clt_u8);
    EW_LOOP(out[o] = xp[a] ? yp[b] : zp[c])
}
#endif

/* The same operations over contiguous operands (ndim 0), element i at offset + i, each
 * work-item looping over several with CLT_RUN (common.cl): ewc_<op>, ewc_copy and ewc_where. */
#define EWC_PARAMS(OT, XT)                                                                     \
    __global OT *out, ulong out_off, __global const XT *xp, ulong x_off,                       \
        __global const ST *yp, ulong y_off, __global const ST *zp, ulong z_off, ulong n,       \
        int blocked, CT s0, CT s1

#define EWC_KERNEL(name, inputs, fe, ie, res)                                                  \
    __kernel void ewc_##name(EWC_PARAMS(OUT_##res, ST))                                        \
    {                                                                                          \
        (void)s0;                                                                              \
        (void)s1;                                                                              \
        CLT_RUN(n, blocked, {                                                                  \
            CT x = LOAD(xp[x_off + i]);                                                        \
            CT y = inputs > 1 ? (CT)LOAD(yp[y_off + i]) : (CT)0;                               \
            CT z = inputs > 2 ? (CT)LOAD(zp[z_off + i]) : (CT)0;                               \
            (void)y;                                                                           \
            (void)z;                                                                           \
            out[out_off + i] = STORE_##res(EXPR(fe, ie));                                      \
        });                                                                                    \
    }
EW_GROUPS(EWC_KERNEL)

#if CLT_WANTED(copy)
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
#endif

#if CLT_WANTED(copy)
__kernel void ewc_where(EWC_PARAMS(ST, clt_u8))
{
    (void)s0;
    (void)s1;
    CLT_RUN(n, blocked, out[out_off + i] = xp[x_off + i] ? yp[y_off + i] : zp[z_off + i]);
}
#endif

/* ---- copies that are batched transposes (clt__tile_plan in backends/backend.h) ------------------- */
/* Within matrix b (batch index over the nb dimensions of bd),
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

/* The batch dimensions of a transpose: sizes, and the strides of out and in. */
typedef struct tp_batch {
    long sh[8], out[8], in[8];
} tp_batch;

#define TP_PARAMS                                                                              \
    __global ST *outp, ulong out_off, __global const ST *inp, ulong in_off, ulong rows,        \
        ulong cols, long out_rs, long in_cs, ulong batch, tp_batch bd, int nb

/* The offsets of matrix b's first element in the output (*o) and the input (*a). */
CLT_FN void tp_base(ulong b, const tp_batch *bd, int nb, ulong *o, ulong *a)
{
    for (int d = nb - 1; d >= 0; d--) {
        ulong k = b % (ulong)bd->sh[d];
        b /= (ulong)bd->sh[d];
        *o += k * bd->out[d];
        *a += k * bd->in[d];
    }
}

/* GPUs: work-group (TP_T, TP_ROWS) copies the tile at (group 1, group 0) of matrix global id 2
 * through local memory, reading input rows and writing output rows whole (coalesced). */
#if CLT_WANTED(transpose)
__kernel void ew_copy_t(TP_PARAMS)
{
    tp_batch bl = bd; /* read whole before any branch (see ew_layout) */
    __local TU tile[TP_T][TP_T + 1];
    __global TU *out = (__global TU *)outp;
    __global const TU *in = (__global const TU *)inp;
    ulong o = out_off, a = in_off, i0 = get_group_id(1) * TP_T, j0 = get_group_id(0) * TP_T;
    uint lx = get_local_id(0), ly = get_local_id(1);
    tp_base(get_global_id(2), &bl, nb, &o, &a);
    (void)batch;
    for (uint k = ly; k < TP_T; k += TP_ROWS)
        if (i0 + lx < rows && j0 + k < cols)
            tile[k][lx] = in[a + (i0 + lx) + (j0 + k) * in_cs];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = ly; k < TP_T; k += TP_ROWS)
        if (i0 + k < rows && j0 + lx < cols)
            out[o + (i0 + k) * out_rs + (j0 + lx)] = tile[lx][k];
}
#endif

/* Rows i0 .. i1 - 1, columns j0 .. j1 - 1 of one matrix (o, a its offsets), 4 x 4 blocks
 * transposed in vectors where four elements fit the device's native vectors. */
CLT_FN void tp_tile(__global TU *out, __global const TU *in, ulong o, ulong a, long out_rs,
                    long in_cs, ulong i0, ulong i1, ulong j0, ulong j1)
{
    ulong i = i0, j;
#if CLT_DT_SIZE * 4 <= CLT_VW_LONG * 8 /* 4 elements fit the device's native vectors */
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
#endif
    for (; i < i1; i++) /* the rows left (every row, without the vectors) */
        for (j = j0; j < j1; j++)
            out[o + i * out_rs + j] = in[a + i + j * in_cs];
}

/* CPU devices: work-item g copies one TP_T x TP_T tile, tiles in the order (matrix, row of
 * tiles, column of tiles), so that a work-group's consecutive tiles continue the same output
 * rows. */
#if CLT_WANTED(transpose)
__kernel void ew_copy_tb(TP_PARAMS)
{
    tp_batch bl = bd;
    ulong tj = (cols + TP_T - 1) / TP_T, ti = (rows + TP_T - 1) / TP_T, g = get_global_id(0);
    ulong o = out_off, a = in_off, j0 = g % tj * TP_T, i0 = g / tj % ti * TP_T;
    if (g >= tj * ti * batch)
        return;
    tp_base(g / tj / ti, &bl, nb, &o, &a);
    tp_tile((__global TU *)outp, (__global const TU *)inp, o, a, out_rs, in_cs, i0,
            min(i0 + TP_T, rows), j0, min(j0 + TP_T, cols));
}
#endif

/* A strided copy whose last dimension runs contiguous in both tensors (a permute that keeps the
 * last dimension, as a convolution's output (O, N, L) to (N, O, L)): `rows` runs of `len`
 * elements, run r from the offsets tp_base gives r. Blocked, a work-item's runs are placed by
 * division once, then counted on, each copied in one loop that compilers vectorise: PoCL ran
 * ew_copy's general walk over such runs of 16 floats several times slower (docs/performance.md,
 * Convolution and pooling). */
#if CLT_WANTED(transpose)
__kernel void ew_copy_rows(__global ST *outp, ulong out_off, __global const ST *inp,
                           ulong in_off, ulong len, ulong rows, tp_batch bd, int nb, int blocked)
{
    tp_batch bl = bd;
    __global TU *restrict out = (__global TU *)outp;
    __global const TU *restrict in = (__global const TU *)inp;
    /* the work-item functions before any branch: Rusticl 22 reads get_global_id's offset from
     * an argument of its own (see ew_layout) */
    ulong gs = get_global_size(0), gid = get_global_id(0);
    if (!blocked) { /* one element a work-item in turn */
        for (ulong i = gid; i < rows * len; i += gs) {
            ulong o = out_off + i % len, a = in_off + i % len;
            tp_base(i / len, &bl, nb, &o, &a);
            out[o] = in[a];
        }
        return;
    }
    ulong per = (rows + gs - 1) / gs, r = gid * per, e = min(r + per, rows);
    ulong o = out_off, a = in_off;
    long k[8];
    if (r >= e)
        return;
    for (ulong t = r, d = nb; d-- > 0;) { /* run r's place, as tp_base, its counters kept */
        k[d] = (long)(t % (ulong)bl.sh[d]);
        t /= (ulong)bl.sh[d];
        o += (ulong)(k[d] * bl.out[d]);
        a += (ulong)(k[d] * bl.in[d]);
    }
    for (; r < e; r++) {
        for (ulong j = 0; j < len; j++)
            out[o + j] = in[a + j];
        for (int d = nb - 1; d >= 0; d--) { /* the next run: count on, carrying */
            o += (ulong)bl.out[d], a += (ulong)bl.in[d];
            if (++k[d] < bl.sh[d])
                break;
            o -= (ulong)(bl.out[d] * bl.sh[d]), a -= (ulong)(bl.in[d] * bl.sh[d]);
            k[d] = 0;
        }
    }
}
#endif
