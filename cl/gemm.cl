/* The library's own strided-batched GEMM kernels (see clt__gemm_call in backends/backend.h), for
 * the devices where they beat CLBlast (lib/backends/opencl/cl_gemm.c tunes the choice per device):
 *   gemm_pack    op(B) copied into panels of PW columns, zero beyond n: [batch][panel][k][PW];
 *   gemm_packed  one work-item a MR x PW tile of C from rows of A and a packed panel of B;
 *   gemm_direct  the same tile with op(B) read in place (B not transposed);
 *   gemm_tiled   16 x 16 work-items sharing 64 x 64 tiles through local memory (GPUs);
 *   gemm_dot     one work-item a MR x 2 tile of C as dot products, B transposed (few rows).
 * The packed and direct kernels run in work-groups of one work-item, consecutive ones walking
 * down M so that a panel of B stays in cache: on CPU-type devices this keeps the PW-wide rows of
 * C in vector registers (MR x NV accumulators of VW lanes) instead of relying on implicit
 * vectorisation across work-items. Built with -DT=float or -DT=double, VW the device's native
 * vector width for T (CLT_VW_FLOAT, CLT_VW_DOUBLE: 2 to 16, from the build options) and NV
 * (CLT_GEMM_NV_FLOAT, CLT_GEMM_NV_DOUBLE: 3 or 4, as many as the registers that the native
 * vector's size suggests hold; clt__cl_gemm_nv), as one program per part (CLT_WANTED,
 * common.cl): packed (gemm_pack and gemm_packed), direct, tiled, dot.
 *
 * A is m x k with element (i, l) at a[a_off + b * a_bs + i * a_rs + l * a_cs] in batch b, B is
 * k x n likewise, C is m x n with rows ldc apart. Every product is fma(), so results depend
 * only on the order of summation, which is l = 0, 1, ... k - 1 for every element (gemm_dot: VW
 * interleaved partial sums, then the rest).
 *
 * Every product kernel ends with the epilogue's arguments (bias, bias_off, ep, rsum, rsum_off):
 * ep's bits EP_BIAS (bias[bias_off + i] added to row i of C with EP_ROWS, bias[bias_off + j] to
 * column j without) and EP_RELU (then x < 0 ? 0 : x), applied to alpha * AB + beta * C as it is
 * stored; ep 0 for none (bias then any buffer, not read). EP_RSUM (packed, direct and dot, batch
 * 1): each row i of A summed into rsum[rsum_off + i] as well, by the work-items of C's first
 * columns (a weight gradient's product giving its bias's). */

#if GEMM_F64
#define VW CLT_VW_DOUBLE
#define NV CLT_GEMM_NV_DOUBLE
#else
#define VW CLT_VW_FLOAT
#define NV CLT_GEMM_NV_FLOAT
#endif
#define VT CLT_PASTE(T, VW)
#define vloadw CLT_PASTE(vload, VW)
#define vstorew CLT_PASTE(vstore, VW)
#define MR 4 /* the register tile: MR rows of NV vectors of VW lanes */
#define PW (VW * NV) /* the panel's width */

#define EP_BIAS 1
#define EP_ROWS 2
#define EP_RELU 4
#define EP_RSUM 8
/* The epilogue's arguments, last in every product kernel. */
#define EPILOGUE_ARGS                                                                             \
    __global const T *bias, ulong bias_off, int ep, __global T *rsum, ulong rsum_off

/* x, element (i, j) of C, through the epilogue (bias already at bias_off). */
CLT_FN T epilogue(T x, int ep, __global const T *bias, int i, int j)
{
    if (ep & EP_BIAS)
        x += bias[(ep & EP_ROWS) ? i : j];
    if (ep & EP_RELU)
        x = x < 0 ? (T)0 : x;
    return x;
}

#if CLT_WANTED(packed)
/* The VW x VW square of rows v transposed in place, in log2(VW) rounds of shuffles (masks of
 * T's size, UT): the round of width w swaps, between rows i and i + w (i & w clear), the w-wide
 * blocks off the diagonal of each 2w-wide square (lane p of row i, p & w set, with lane p - w
 * of row i + w). */
#if GEMM_F64
#define UT ulong
#else
#define UT uint
#endif
#define SQUARE_ROUND(w)                                                                           \
    if ((w) < VW) {                                                                               \
        CLT_PASTE(UT, VW) lo, hi;                                                                 \
        UT lo_[VW], hi_[VW];                                                                      \
        _Pragma("unroll") for (int p_ = 0; p_ < VW; p_++) {                                       \
            lo_[p_] = (p_ & (w)) ? VW + p_ - (w) : p_;                                            \
            hi_[p_] = (p_ & (w)) ? VW + p_ : p_ + (w);                                            \
        }                                                                                         \
        lo = CLT_PASTE(vload, VW)(0, lo_), hi = CLT_PASTE(vload, VW)(0, hi_);                     \
        _Pragma("unroll") for (int i_ = 0; i_ < VW; i_++) if (!(i_ & (w))) {                      \
            VT a_ = v[i_], b_ = v[i_ + (w)];                                                      \
            v[i_] = shuffle2(a_, b_, lo);                                                         \
            v[i_ + (w)] = shuffle2(a_, b_, hi);                                                   \
        }                                                                                         \
    }
CLT_FN void transpose_square(VT *v)
{
    SQUARE_ROUND(8)
    SQUARE_ROUND(4)
    SQUARE_ROUND(2)
    SQUARE_ROUND(1)
}
#endif

/* One work-item a row l of a panel p of batch b: global (k, panels, batch). Where op(B) is a
 * transpose (b_rs 1, b_cs not), one work-item VW rows l * VW ... of the panel instead, read as
 * a vector along each of its columns (a stored row of B) and written as VW x PW: global
 * (ceil(k / VW), panels, batch); one element per row read from a different line made the pack
 * of a 784 x 256 transposed B cost as much as the product. A whole VW x PW block goes VW x VW
 * at a time, transposed in registers (transpose_square), its rows stored as vectors: faster
 * than element by element, and than a square through private memory (docs/performance.md,
 * Matrix products on OpenCL devices). */
#if CLT_WANTED(packed)
__kernel void gemm_pack(int n, int k, __global const T *bsrc, ulong b_off, ulong b_rs, ulong b_cs,
                        ulong b_bs, __global T *panels)
{
    int l = get_global_id(0), p = get_global_id(1), b = get_global_id(2);
    int np = get_global_size(1), j0 = p * PW;
    if (b_rs == 1 && b_cs != 1) {
        int l0 = l * VW, rows = min(VW, k - l0);
        __global const T *col = bsrc + b_off + b * b_bs + l0 + (ulong)j0 * b_cs;
        __global T *dst = panels + (((ulong)b * np + p) * k + l0) * PW;
        if (l0 >= k)
            return;
        if (rows == VW && j0 + PW <= n) {
            _Pragma("unroll") for (int q = 0; q < NV; q++) {
                VT v[VW];
                _Pragma("unroll") for (int j = 0; j < VW; j++)
                    v[j] = vloadw(0, col + (ulong)(q * VW + j) * b_cs);
                transpose_square(v);
                _Pragma("unroll") for (int r = 0; r < VW; r++) vstorew(v[r], q, dst + r * PW);
            }
            return;
        }
        for (int j = 0; j < PW; j++, col += b_cs) {
            T v[VW];
            if (j0 + j < n && rows == VW)
                vstorew(vloadw(0, col), 0, v);
            else
                for (int r = 0; r < rows; r++)
                    v[r] = j0 + j < n ? col[r] : (T)0;
            for (int r = 0; r < rows; r++)
                dst[r * PW + j] = v[r];
        }
        return;
    }
    __global const T *src = bsrc + b_off + b * b_bs + l * b_rs;
    __global T *dst = panels + (((ulong)b * np + p) * k + l) * PW;
    if (l >= k)
        return;
    if (b_cs == 1 && j0 + PW <= n) {
        for (int q = 0; q < NV; q++)
            vstorew(vloadw(0, src + j0 + q * VW), q, dst);
        return;
    }
    for (int j = 0; j < PW; j++)
        dst[j] = j0 + j < n ? src[(j0 + j) * b_cs] : (T)0;
}

/* A convolution's columns (nn.cl's im2col) written straight into the panels gemm_pack would make
 * of them, so that neither the columns nor a second pass over them exist: row l = (c * kh + y) *
 * kw + x of panel p holds, for its columns j = j0 ... j0 + PW - 1 (j = img * OH * OW + oy * OW +
 * ox, zero from n on), the input of image img at channel c, row oy * sh - ph + y * dh, column ox
 * * sw - pw + x * dw, or 0 outside it. Images are N x C x H x W from in + in_off; positions
 * within a plane fit in int (the host checks). One work-item a row of a panel, walking the
 * panel's columns a piece of an output row at a time: global (k, panels). */
__kernel void gemm_pack_im2col(int n, int k, __global const T *in, ulong in_off, int C, int H,
                               int W, int OH, int OW, int kh, int kw, int sh, int sw, int ph,
                               int pw, int dh, int dw, __global T *panels)
{
    int l = get_global_id(0), p = get_global_id(1);
    if (l >= k)
        return;
    int x = l % kw, y = l / kw % kh, c = l / kw / kh, j0 = p * PW, L = OH * OW;
    int img = j0 / L, s = j0 % L, oy = s / OW, ox = s % OW, end = min(PW, n - j0);
    int iy = oy * sh - ph + y * dh, ix0 = x * dw - pw;
    __global const T *plane = in + in_off + ((ulong)img * C + c) * (ulong)H * W;
    T row[PW];
    for (int j = 0; j < PW;) {
        int piece = min(end - j, OW - ox), ix = ox * sw + ix0;
        if (piece <= 0) { /* past n */
            row[j++] = 0;
            continue;
        }
        if (iy < 0 || iy >= H) {
            for (int q = 0; q < piece; q++)
                row[j + q] = 0;
        } else {
            __global const T *src = plane + iy * W;
            for (int q = 0; q < piece; q++, ix += sw)
                row[j + q] = ix >= 0 && ix < W ? src[ix] : (T)0;
        }
        j += piece;
        ox += piece;
        if (ox < OW)
            continue;
        ox = 0, oy++, iy += sh;
        if (oy < OH)
            continue;
        oy = 0, iy = y * dh - ph, plane += (ulong)C * H * W; /* the next image */
    }
    __global T *dst = panels + ((ulong)p * k + l) * PW;
    _Pragma("unroll") for (int q = 0; q < NV; q++) vstorew(vloadw(q, row), q, dst);
}
#endif

/* The tile's accumulators, acc[r][q] lanes q * VW ... of row r, and the rows of A it reads. */
#define ACC_TILE()                                                                                \
    VT acc[MR][NV];                                                                               \
    _Pragma("unroll") for (int r = 0; r < MR; r++)                                                \
        _Pragma("unroll") for (int q = 0; q < NV; q++) acc[r][q] = 0
/* One step l of the tile: a column of MR elements of A times a row of PW elements of B (bv). */
#define TILE_STEP(bv)                                                                             \
    _Pragma("unroll") for (int r = 0; r < MR; r++) {                                              \
        VT x = (VT)ar[r][0];                                                                      \
        ar[r] += a_cs;                                                                            \
        _Pragma("unroll") for (int q = 0; q < NV; q++) acc[r][q] = fma(x, bv[q], acc[r][q]);       \
    }
/* C's rows i0 + r below m from their accumulators: alpha * acc + beta * C, through the
 * epilogue (bias at bias_off, its columns from j0's). */
#define STORE_TILE()                                                                              \
    _Pragma("unroll") for (int r = 0; r < MR; r++) if (i0 + r < m)                                \
        store_row(cb + (ulong)(i0 + r) * ldc, j0, n, alpha, beta, acc[r], ep, bias, i0 + r)

CLT_FN void store_row(__global T *crow, int j0, int n, T alpha, T beta, VT *v, int ep,
                      __global const T *bias, int i)
{
    if (j0 + PW <= n) { /* as vectors, the epilogue's included (element by element, a
                          * convolution's bias and ReLU made its product much slower) */
        for (int q = 0; q < NV; q++) {
            VT o = beta != 0 ? fma((VT)alpha, v[q], (VT)beta * vloadw(q, crow + j0))
                             : v[q] * alpha;
            if (ep & EP_BIAS)
                o += (ep & EP_ROWS) ? (VT)bias[i] : vloadw(q, bias + j0);
            if (ep & EP_RELU)
                o = select(o, (VT)0, o < (VT)0);
            vstorew(o, q, crow + j0);
        }
        return;
    }
    T row[PW];
    for (int q = 0; q < NV; q++)
        vstorew(v[q], q, row);
    for (int j = 0; j < PW && j0 + j < n; j++)
        crow[j0 + j] = epilogue(beta != 0 ? fma(alpha, row[j], beta * crow[j0 + j])
                                          : alpha * row[j],
                                ep, bias, i, j0 + j);
}

#if CLT_WANTED(packed) || CLT_WANTED(direct) || CLT_WANTED(dot)
/* The VW lanes added up in lane order. */
CLT_FN T lanes_sum(VT v)
{
    T x[VW];
    vstorew(v, 0, x);
    T s = x[0];
    for (int q = 1; q < VW; q++)
        s += x[q];
    return s;
}

/* EP_RSUM: rows i0 ... i0 + MR - 1 of A below m (ab: batch 0's matrix) summed into sum[i]:
 * where a row is contiguous, in VW interleaved partial sums, then the rest; otherwise the MR
 * rows a column at a time (adjacent elements of A stored transposed), in order. */
CLT_FN void row_sums(__global const T *ab, int i0, int m, int k, ulong a_rs, ulong a_cs,
                     __global T *sum)
{
    T s[MR];
    if (a_cs == 1) {
        _Pragma("unroll") for (int r = 0; r < MR; r++) {
            __global const T *row = ab + (ulong)min(i0 + r, m - 1) * a_rs;
            VT v = 0;
            int l = 0;
            for (; l + VW <= k; l += VW)
                v += vloadw(0, row + l);
            s[r] = lanes_sum(v);
            for (; l < k; l++)
                s[r] += row[l];
        }
    } else {
        _Pragma("unroll") for (int r = 0; r < MR; r++) s[r] = 0;
        for (int l = 0; l < k; l++)
            _Pragma("unroll") for (int r = 0; r < MR; r++)
                s[r] += ab[(ulong)min(i0 + r, m - 1) * a_rs + (ulong)l * a_cs];
    }
    for (int r = 0; r < MR && i0 + r < m; r++)
        sum[i0 + r] = s[r];
}
#endif

/* The start of rows i0 ... i0 + MR - 1 of A (the last row stands in for rows beyond m). */
#define A_ROWS()                                                                                  \
    __global const T *ab = a + a_off + b * a_bs, *ar[MR];                                         \
    _Pragma("unroll") for (int r = 0; r < MR; r++) ar[r] = ab + (ulong)min(i0 + r, m - 1) * a_rs

/* C's columns may lie in groups of cg, cg_stride elements apart (column j of row i at (j / cg) *
 * cg_stride + i * ldc + j % cg; cg = n: one group): a convolution's product over every image's
 * columns writes each image's part of the output in place, and with cg 1, ldc 1 and cg_stride
 * C's ldc a product run as (AB)^T = B^T A^T writes C^T down C's columns (so that the smaller
 * operand is the one packed; cl_gemm.c). A tile within one group stores as STORE_TILE does; a
 * whole panel across groups of whole vectors vector by vector (store_row_vectors); any other
 * element by element, its first element placed by division and the rest counted on. */
#if CLT_WANTED(packed) || CLT_WANTED(direct)
CLT_FN void store_row_groups(__global T *crow, int j0, int n, int cg, ulong cg_stride, T alpha,
                             T beta, VT *v, int ep, __global const T *bias, int i)
{
    T row[PW];
    for (int q = 0; q < NV; q++)
        vstorew(v[q], q, row);
    int jg = j0 % cg;
    __global T *o = crow + (ulong)(j0 / cg) * cg_stride + jg;
    for (int j = 0; j < PW && j0 + j < n; j++) {
        *o = epilogue(beta != 0 ? fma(alpha, row[j], beta * *o) : alpha * row[j], ep, bias, i,
                      j0 + j);
        if (++jg < cg) {
            o++;
        } else { /* the next group's first column */
            jg = 0;
            o += cg_stride - (ulong)(cg - 1);
        }
    }
}

/* A whole panel's row into groups of a multiple of VW columns: each vector within one group,
 * stored as a vector (a convolution's 4 x 4 maps, 16 columns a group, took longer element by
 * element on PoCL with 64-wide panels: docs/performance.md, Matrix products on OpenCL devices). */
CLT_FN void store_row_vectors(__global T *crow, int j0, int cg, ulong cg_stride, T alpha, T beta,
                              VT *v, int ep, __global const T *bias, int i)
{
    for (int q = 0; q < NV; q++) {
        int j = j0 + q * VW;
        __global T *o = crow + (ulong)(j / cg) * cg_stride + j % cg;
        VT x = beta != 0 ? fma((VT)alpha, v[q], (VT)beta * vloadw(0, o)) : v[q] * alpha;
        if (ep & EP_BIAS)
            x += (ep & EP_ROWS) ? (VT)bias[i] : vloadw(0, bias + j);
        if (ep & EP_RELU)
            x = select(x, (VT)0, x < (VT)0);
        vstorew(x, 0, o);
    }
}
#endif

/* The tile's rows into C's column groups (the bias at bias_off not yet added). */
#define STORE_TILE_GROUPS()                                                                       \
    bias += bias_off;                                                                             \
    int g = j0 / cg, jg = j0 % cg, last = jg + min(PW, n - j0); /* within the group: < last */    \
    if (last <= cg) {                                                                             \
        cb += (ulong)g * cg_stride, j0 = jg, n = last;                                            \
        bias += (ep & EP_ROWS) ? 0 : g * cg; /* column j0 + j of the group is g * cg + j0 + j */  \
        STORE_TILE();                                                                             \
    } else if (cg % VW == 0 && j0 + PW <= n) {                                                    \
        _Pragma("unroll") for (int r = 0; r < MR; r++) if (i0 + r < m)                            \
            store_row_vectors(cb + (ulong)(i0 + r) * ldc, j0, cg, cg_stride, alpha, beta, acc[r], \
                              ep, bias, i0 + r);                                                  \
    } else {                                                                                      \
        _Pragma("unroll") for (int r = 0; r < MR; r++) if (i0 + r < m)                            \
            store_row_groups(cb + (ulong)(i0 + r) * ldc, j0, n, cg, cg_stride, alpha, beta,       \
                             acc[r], ep, bias, i0 + r);                                           \
    }

/* Global (ceil(m / MR), ceil(n / PW), batch), work-groups of one work-item. */
#if CLT_WANTED(packed)
__kernel void gemm_packed(int m, int n, int k, T alpha, T beta, __global const T *a, ulong a_off,
                          ulong a_rs, ulong a_cs, ulong a_bs, __global const T *panels,
                          __global T *c, ulong c_off, ulong ldc, ulong c_bs, int cg,
                          ulong cg_stride, EPILOGUE_ARGS)
{
    int i0 = get_global_id(0) * MR, p = get_global_id(1), b = get_global_id(2);
    int j0 = p * PW;
    __global const T *bp = panels + ((ulong)b * get_global_size(1) + p) * k * PW;
    __global T *cb = c + c_off + b * c_bs;
    A_ROWS();
    if ((ep & EP_RSUM) && p == 0)
        row_sums(ab, i0, m, k, a_rs, a_cs, rsum + rsum_off);
    ACC_TILE();
    for (int l = 0; l < k; l++, bp += PW) {
        VT bv[NV];
        _Pragma("unroll") for (int q = 0; q < NV; q++) bv[q] = vloadw(q, bp);
        TILE_STEP(bv);
    }
    STORE_TILE_GROUPS();
}
#endif

/* As gemm_packed with B read in place: element (l, j) at b[b_off + b * b_bs + l * ldb + j]. A
 * panel that reaches past n reads its vectors within n as vectors, the one that n cuts element
 * by element, zero beyond n (element by element throughout, the last panel of nn.Linear's
 * weight gradient, 16 columns of 784, cost far more than its share of the product:
 * docs/performance.md, Matrix products on OpenCL devices). */
#if CLT_WANTED(direct)
__kernel void gemm_direct(int m, int n, int k, T alpha, T beta, __global const T *a, ulong a_off,
                          ulong a_rs, ulong a_cs, ulong a_bs, __global const T *bsrc, ulong b_off,
                          ulong ldb, ulong b_bs, __global T *c, ulong c_off, ulong ldc,
                          ulong c_bs, int cg, ulong cg_stride, EPILOGUE_ARGS)
{
    int i0 = get_global_id(0) * MR, b = get_global_id(2);
    int j0 = get_global_id(1) * PW;
    __global const T *bp = bsrc + b_off + b * b_bs + j0;
    __global T *cb = c + c_off + b * c_bs;
    A_ROWS();
    if ((ep & EP_RSUM) && j0 == 0)
        row_sums(ab, i0, m, k, a_rs, a_cs, rsum + rsum_off);
    ACC_TILE();
    if (j0 + PW <= n) {
        for (int l = 0; l < k; l++, bp += ldb) {
            VT bv[NV];
            _Pragma("unroll") for (int q = 0; q < NV; q++) bv[q] = vloadw(q, bp);
            TILE_STEP(bv);
        }
    } else {
        int left = n - j0; /* columns within n: its whole vectors are read as vectors */
        for (int l = 0; l < k; l++, bp += ldb) {
            VT bv[NV];
            _Pragma("unroll") for (int q = 0; q < NV; q++) {
                if ((q + 1) * VW <= left) {
                    bv[q] = vloadw(q, bp);
                } else if (q * VW >= left) {
                    bv[q] = 0;
                } else {
                    T v[VW];
                    for (int j = 0; j < VW; j++)
                        v[j] = q * VW + j < left ? bp[q * VW + j] : (T)0;
                    bv[q] = vloadw(0, v);
                }
            }
            TILE_STEP(bv);
        }
    }
    STORE_TILE_GROUPS();
}
#endif

/* Products of few rows with B transposed (B^T's element (j, l) at
 * bsrc[b_off + b * b_bs + j * ldb + l]), without packing B: one work-item a MR x DJ tile of C as
 * dot products of rows of A and rows of B^T, each VW lanes of partial sums (l = q, q + VW, ...
 * in lane q) added up in lane order at the end, then the last k % VW steps. A's rows are read as vectors where its columns are adjacent
 * (a_cs 1), gathered element by element otherwise. Global (ceil(m / MR), ceil(n / DJ), batch),
 * work-groups of one work-item. */
#define DJ 2
#if CLT_WANTED(dot)
__kernel void gemm_dot(int m, int n, int k, T alpha, T beta, __global const T *a, ulong a_off,
                       ulong a_rs, ulong a_cs, ulong a_bs, __global const T *bsrc, ulong b_off,
                       ulong ldb, ulong b_bs, __global T *c, ulong c_off, ulong ldc, ulong c_bs,
                       EPILOGUE_ARGS)
{
    int i0 = get_global_id(0) * MR, j0 = get_global_id(1) * DJ, b = get_global_id(2);
    __global const T *bb = bsrc + b_off + b * b_bs, *bt[DJ];
    __global T *cb = c + c_off + b * c_bs;
    A_ROWS();
    if ((ep & EP_RSUM) && j0 == 0)
        row_sums(ab, i0, m, k, a_rs, a_cs, rsum + rsum_off);
    _Pragma("unroll") for (int q = 0; q < DJ; q++) bt[q] = bb + (ulong)min(j0 + q, n - 1) * ldb;
    VT acc[MR][DJ];
    _Pragma("unroll") for (int r = 0; r < MR; r++)
        _Pragma("unroll") for (int q = 0; q < DJ; q++) acc[r][q] = 0;
    int l = 0;
    for (; l + VW <= k; l += VW) {
        VT bv[DJ];
        _Pragma("unroll") for (int q = 0; q < DJ; q++) bv[q] = vloadw(0, bt[q] + l);
        _Pragma("unroll") for (int r = 0; r < MR; r++) {
            VT x;
            if (a_cs == 1) {
                x = vloadw(0, ar[r] + l);
            } else {
                T e[VW];
                for (int u = 0; u < VW; u++)
                    e[u] = ar[r][(ulong)(l + u) * a_cs];
                x = vloadw(0, e);
            }
            _Pragma("unroll") for (int q = 0; q < DJ; q++) acc[r][q] = fma(x, bv[q], acc[r][q]);
        }
    }
    T s[MR][DJ];
    _Pragma("unroll") for (int r = 0; r < MR; r++)
        _Pragma("unroll") for (int q = 0; q < DJ; q++) s[r][q] = lanes_sum(acc[r][q]);
    for (; l < k; l++)
        _Pragma("unroll") for (int r = 0; r < MR; r++) {
            T x = ar[r][(ulong)l * a_cs];
            _Pragma("unroll") for (int q = 0; q < DJ; q++) s[r][q] = fma(x, bt[q][l], s[r][q]);
        }
    for (int r = 0; r < MR && i0 + r < m; r++)
        for (int q = 0; q < DJ && j0 + q < n; q++) {
            __global T *o = cb + (ulong)(i0 + r) * ldc + j0 + q;
            *o = epilogue(beta != 0 ? fma(alpha, s[r][q], beta * *o) : alpha * s[r][q], ep,
                          bias + bias_off, i0 + r, j0 + q);
        }
}
#endif

/* Work-groups of 16 x 16 work-items, each a 64 x 64 tile of C (a work-item 4 x 4 elements, 16
 * apart), through 64 x 16 tiles of A and 16 x 64 tiles of B in local memory, zero beyond the
 * matrices. Global (16 * ceil(n / 64), 16 * ceil(m / 64), batch). (No reqd_work_group_size:
 * on a device that cannot run 256 work-items the program still builds for the other kernels.) */
#define TS 64
#define TK 16
#if CLT_WANTED(tiled)
__kernel void gemm_tiled(int m, int n, int k, T alpha, T beta, __global const T *a, ulong a_off, ulong a_rs,
           ulong a_cs, ulong a_bs, __global const T *bsrc, ulong b_off, ulong b_rs, ulong b_cs,
           ulong b_bs, __global T *c, ulong c_off, ulong ldc, ulong c_bs, EPILOGUE_ARGS)
{
    __local T as[TK][TS + 1], bs[TK][TS + 1];
    int tx = get_local_id(0), ty = get_local_id(1), b = get_global_id(2);
    int j0 = get_group_id(0) * TS, i0 = get_group_id(1) * TS, t = ty * 16 + tx;
    __global const T *ab = a + a_off + b * a_bs, *bb = bsrc + b_off + b * b_bs;
    T acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int q = 0; q < 4; q++)
            acc[r][q] = 0;
    for (int l0 = 0; l0 < k; l0 += TK) {
        /* 1024 elements of each tile, four a work-item */
        for (int e = t; e < TS * TK; e += 256) {
            int ai = e / TK, al = e % TK, bl = e / TS, bj = e % TS;
            as[al][ai] = i0 + ai < m && l0 + al < k
                             ? ab[(ulong)(i0 + ai) * a_rs + (ulong)(l0 + al) * a_cs] : (T)0;
            bs[bl][bj] = l0 + bl < k && j0 + bj < n
                             ? bb[(ulong)(l0 + bl) * b_rs + (ulong)(j0 + bj) * b_cs] : (T)0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int l = 0; l < TK; l++) {
            T x[4], y[4];
            for (int r = 0; r < 4; r++)
                x[r] = as[l][ty + 16 * r];
            for (int q = 0; q < 4; q++)
                y[q] = bs[l][tx + 16 * q];
            for (int r = 0; r < 4; r++)
                for (int q = 0; q < 4; q++)
                    acc[r][q] = fma(x[r], y[q], acc[r][q]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    __global T *cb = c + c_off + b * c_bs;
    for (int r = 0; r < 4; r++) {
        int i = i0 + ty + 16 * r;
        for (int q = 0; q < 4; q++) {
            int j = j0 + tx + 16 * q;
            if (i < m && j < n) {
                __global T *o = cb + (ulong)i * ldc + j;
                *o = epilogue(beta != 0 ? fma(alpha, acc[r][q], beta * *o) : alpha * acc[r][q],
                              ep, bias + bias_off, i, j);
            }
        }
    }
}
#endif
