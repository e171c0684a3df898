/* Neural-network kernels, built per dtype with the options of elementwise.cl (-DDT, -DST, -DCT,
 * -DKIND): index_select (embedding, picking targets), im2col (convolution as a matrix product)
 * and 2-D max and average pooling over NCHW tensors, and the adjoints the backward passes use
 * (index_add, col2im, pool2d_backward), each a gather: what reaches an output element is summed
 * in a fixed order, so results never depend on scheduling. The window kernels loop over their
 * outputs with CLT_RUN (common.cl), the per-element work in a function. Every operand is
 * contiguous; offsets are in elements. window.cl comes first. */

#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define STORE(v) CLT_CAT(CLT_CAT(CLT_CAT(clt_, KIND), _to_), DT)(v)
/* Whether v takes the place of best in a max pool: larger, or NaN over a number; and x where b
 * (0 or 1), else y, by its bits: LLVM kept `b ? x : y` of floats as a branch, which random data
 * mispredicts half the time (PoCL's max pooling of 8 x 8 images spent most of its time there). */
#if CLT_KIND_INT
#define BEATS(v, best) ((v) > (best))
#else
#define BEATS(v, best) (((v) > (best)) | (((v) != (v)) & ((best) == (best))))
#endif
#define PICK_int(b, x, y) ((b) ? (x) : (y))
#define PICK_flt(b, x, y) as_float((as_uint(x) & -(uint)(b)) | (as_uint(y) & ~-(uint)(b)))
#define PICK_dbl(b, x, y) as_double((as_ulong(x) & -(ulong)(b)) | (as_ulong(y) & ~-(ulong)(b)))
#define PICK(b, x, y) CLT_CAT(PICK_, KIND)(b, x, y)

/* out[a, m, b] = src[a, idx[m], b] for a < A, m < M, b < B; src is A x K x B. The indices were
 * checked to lie in 0..K-1. One work-item an output element. */
__kernel void index_select(__global ST *out, ulong out_off, __global const ST *src, ulong src_off,
                           __global const long *idx, ulong idx_off, ulong A, ulong K, ulong B,
                           ulong M)
{
    ulong i = get_global_id(0);
    if (i >= A * M * B)
        return;
    ulong b = i % B, m = (i / B) % M, a = i / (B * M);
    out[out_off + i] = src[src_off + (a * K + (ulong)idx[idx_off + m]) * B + b];
}

/* Tap (y, x) of channel c to the next, in the columns' order of rows. */
CLT_FN void next_tap(int *x, int *y, ulong *c, int kh, int kw)
{
    if (++*x < kw)
        return;
    *x = 0;
    if (++*y < kh)
        return;
    *y = 0;
    ++*c;
}

/* The columns for convolution: out[(c * kh + y) * kw + x, n, oy * OW + ox] = the input of image
 * n at channel c, row oy * sh - ph + y * dh, column ox * sw - pw + x * dw, or 0 outside it.
 * Images are N x C x H x W; out is (C * kh * kw) x N x (OH * OW), so that one matrix product of
 * the weights with its (C * kh * kw) x (N * OH * OW) rows convolves every image at once.
 * Elements [b, e) in order: the position of b found by division once (in 32 bits when the
 * columns' count fits), then a piece of an output row at a time, counting on. */
static void im2col_range(ulong b, ulong e, __global ST *out, __global const ST *in, ulong N,
                         ulong C, ulong H, ulong W, ulong OH, ulong OW, int kh, int kw, int sh,
                         int sw, int ph, int pw, int dh, int dw)
{
    ulong ox, oy, n, c;
    int x, y;
    if (b >= e)
        return;
    if (N * C * (ulong)kh * (ulong)kw * OH * OW <= 0xffffffffu) {
        uint i = (uint)b, t = i / (uint)OW;
        ox = i % (uint)OW, oy = t % (uint)OH, t /= (uint)OH;
        n = t % (uint)N, t /= (uint)N;
        x = (int)(t % (uint)kw), t /= (uint)kw;
        y = (int)(t % (uint)kh), c = t / (uint)kh;
    } else {
        ulong t = b / OW;
        ox = b % OW, oy = t % OH, t /= OH;
        n = t % N, t /= N;
        x = (int)(t % (ulong)kw), t /= (ulong)kw;
        y = (int)(t % (ulong)kh), c = t / (ulong)kh;
    }
    ST zero = STORE((CT)0);
    while (b < e) { /* a piece of an output row at a time */
        ulong piece = min(e - b, OW - ox);
        long iy = (long)oy * sh - ph + (long)y * dh, ix = (long)ox * sw - pw + (long)x * dw;
        __global ST *dst = out + b;
        if (iy < 0 || iy >= (long)H) {
            for (ulong k = 0; k < piece; k++)
                dst[k] = zero;
        } else {
            __global const ST *row = in + ((n * C + c) * H + (ulong)iy) * W;
            for (ulong k = 0; k < piece; k++, ix += sw)
                dst[k] = ix >= 0 && ix < (long)W ? row[ix] : zero;
        }
        b += piece;
        ox = 0; /* the next piece's position */
        if (++oy < OH)
            continue;
        oy = 0;
        if (++n < N)
            continue;
        n = 0;
        next_tap(&x, &y, &c, kh, kw);
    }
}

/* Small planes (the blocked layout, the host choosing): convolutions of stride 1 whose output
 * rows are as wide as the input's (3 x 3 with padding 1, say), over planes of at most
 * CLT_SMALL_PLANE positions (cl_nn.c's CLT__CL_SMALL_PLANE). Then output position j of tap
 * (y, x) reads input position j + (y * dh - ph) * W + x * dw - pw, or nothing where its row or
 * column falls outside, so that a plane of columns is one loop over j with a test against the
 * positions' rows and columns (tabled once a work-item), which compilers vectorise with masked
 * loads: PoCL ran im2col and col2im of such planes much faster so than a piece of a row at a
 * time (docs/performance.md, Convolution and pooling). Kernels of their own (im2col_small,
 * col2im_small), so that the others hold no private tables. */
#define CLT_SMALL_PLANE 256

/* The row and column of each position of a plane of rows x cols. */
CLT_FN void plane_positions(int rows, int cols, int *row, int *col)
{
    for (int y = 0, j = 0; y < rows; y++)
        for (int x = 0; x < cols; x++, j++)
            row[j] = y, col[j] = x;
}

/* im2col of small planes: work-item g takes a run of the planes, plane p = k * N + n that of
 * tap k for image n (the arguments im2col's; sh, sw and blocked unused). */
__kernel void im2col_small(__global ST *out, ulong out_off, __global const ST *in, ulong in_off,
                           ulong N, ulong C, ulong H, ulong W, ulong OH, ulong OW, int kh,
                           int kw, int sh, int sw, int ph, int pw, int dh, int dw, int blocked)
{
    ulong planes = N * C * (ulong)kh * (ulong)kw, gs = get_global_size(0);
    ulong per = (planes + gs - 1) / gs, p = get_global_id(0) * per, e = min(p + per, planes);
    int row[CLT_SMALL_PLANE], col[CLT_SMALL_PLANE], L = (int)(OH * OW);
    ulong n = p % N, k = p / N, plane = H * W;
    int x = (int)(k % (ulong)kw), y = (int)(k / (ulong)kw % (ulong)kh);
    ulong c = k / (ulong)kw / (ulong)kh;
    __global ST *restrict dst = out + out_off + p * (ulong)L;
    (void)sh, (void)sw, (void)blocked;
    if (p >= e)
        return;
    plane_positions((int)OH, (int)OW, row, col);
    while (p < e) { /* the planes of one tap */
        int y0 = y * dh - ph, x0 = x * dw - pw, shift = y0 * (int)W + x0;
        int ylo = -y0, yhi = (int)H - y0, xlo = -x0, xhi = (int)W - x0;
        __global const ST *src = in + in_off + (n * C + c) * plane; /* image n's channel c */
        for (ulong stop = min(e, p + (N - n)); p < stop; p++, dst += L, src += C * plane) {
            __global const ST *restrict from = src;
            for (int j = 0; j < L; j++) {
                int inside = (row[j] >= ylo) & (row[j] < yhi) & (col[j] >= xlo) & (col[j] < xhi);
                dst[j] = inside ? from[j + shift] : STORE((CT)0);
            }
        }
        n = 0;
        next_tap(&x, &y, &c, kh, kw);
    }
}

/* CLT_RUN's two layouts, each work-item's elements counted on from its first. */
__kernel void im2col(__global ST *out, ulong out_off, __global const ST *in, ulong in_off,
                     ulong N, ulong C, ulong H, ulong W, ulong OH, ulong OW, int kh, int kw,
                     int sh, int sw, int ph, int pw, int dh, int dw, int blocked)
{
    ulong n_ = N * C * (ulong)kh * (ulong)kw * OH * OW, g_ = get_global_id(0);
    ulong gs_ = get_global_size(0);
    if (blocked) {
        ulong b_, e_;
        clt_run_span(n_, g_, gs_, &b_, &e_);
        im2col_range(b_, e_, out + out_off, in + in_off, N, C, H, W, OH, OW, kh,
                     kw, sh, sw, ph, pw, dh, dw);
    } else {
        for (ulong i = g_; i < n_; i += gs_)
            im2col_range(i, i + 1, out + out_off, in + in_off, N, C, H, W, OH, OW, kh, kw, sh,
                         sw, ph, pw, dh, dw);
    }
}

/* 2-D pooling: out[n, c, oy, ox] over the window at (oy * sh - ph, ox * sw - pw), dilation
 * (dh, dw). Max: the largest element (NaN wins); with is_max 2 its flat index within the image
 * plane written to `arg` too (i64, for the backward pass). Average: the sum over the window divided
 * by its size, counting the padding when count_pad (the window clipped to the padded image,
 * which differs from kh * kw only where ceil mode lets the last window overhang), else only the
 * elements inside the image. One kernel for each of max and average pooling (MAX 1 or 0) and
 * positions within a plane in int (where they fit) or long (_wide): PoCL ran a kernel that chose
 * at run time, or held positions in long, slower. A window's taps are clipped to the image
 * before the loops over them, which then test nothing: PoCL ran the max pool that tested each
 * tap several times slower (docs/performance.md, Convolution and pooling). */
#define POOL2D_AT(NAME, IT, MAX)                                                               \
    CLT_INLINE void NAME##_at(ulong i, IT ox, IT oy, __global ST *out, __global long *arg,     \
                          __global const ST *plane, IT H, IT W, int kh, int kw, int sh,        \
                          int sw, int ph, int pw, int dh, int dw, int is_max, int count_pad)   \
    {                                                                                          \
        IT y0 = oy * sh - ph, x0 = ox * sw - pw; /* tap 0 */                                   \
        if (MAX && kh == 2 && kw == 2 && y0 >= 0 && x0 >= 0 && y0 + dh < H && x0 + dw < W) {   \
            IT at[4] = {y0 * W + x0, y0 * W + x0 + dw, (y0 + dh) * W + x0,                     \
                        (y0 + dh) * W + x0 + dw};                                              \
            CT best = LOAD(plane[at[0]]);                                                      \
            IT best_at = at[0];                                                                \
            _Pragma("unroll") for (int t = 1; t < 4; t++) {                                    \
                CT v = LOAD(plane[at[t]]);                                                     \
                int beats = BEATS(v, best);                                                    \
                best = PICK(beats, v, best);                                                   \
                best_at = beats ? at[t] : best_at;                                             \
            }                                                                                  \
            out[i] = STORE(best);                                                              \
            if (is_max > 1)                                                                    \
                arg[i] = best_at;                                                              \
            return;                                                                            \
        }                                                                                      \
        /* the taps inside, [ya, yb) x [xa, xb), in closed form, in long (a kernel of INT_MAX   \
         * taps costs what one of 3 does); written out here: window.cl's clt_window_tap_lo and \
         * _hi, inlined here, gave wrong windows on Mesa's llvmpipe */                         \
        long ya = y0 >= 0 ? 0 : (-(long)y0 - 1) / dh + 1;                                      \
        long xa = x0 >= 0 ? 0 : (-(long)x0 - 1) / dw + 1;                                      \
        long yb = y0 > H - 1 ? 0 : ((long)H - 1 - y0) / dh + 1;                                \
        long xb = x0 > W - 1 ? 0 : ((long)W - 1 - x0) / dw + 1;                                \
        yb = yb < kh ? yb : kh, xb = xb < kw ? xb : kw;                                        \
        yb = yb > ya ? yb : ya, xb = xb > xa ? xb : xa;                                        \
        if (MAX) {                                                                             \
            CT best = -INFINITY; /* a window wholly in padding */                              \
            IT best_at = -1;                                                                   \
            if (ya < yb && xa < xb) {                                                          \
                best_at = (y0 + (IT)ya * dh) * W + x0 + (IT)xa * dw;                           \
                best = LOAD(plane[best_at]);                                                   \
            }                                                                                  \
            for (int y = ya; y < yb; y++) {                                                    \
                IT row = (y0 + (IT)y * dh) * W;                                                \
                for (int x = xa; x < xb; x++) {                                                \
                    IT at = row + x0 + (IT)x * dw;                                             \
                    CT v = LOAD(plane[at]);                                                    \
                    int beats = BEATS(v, best);                                                \
                    best = PICK(beats, v, best);                                               \
                    best_at = beats ? at : best_at;                                            \
                }                                                                              \
            }                                                                                  \
            out[i] = STORE(best);                                                              \
            if (is_max > 1)                                                                    \
                arg[i] = best_at;                                                              \
        } else {                                                                               \
            CT sum = 0;                                                                        \
            for (int y = ya; y < yb; y++) {                                                    \
                __global const ST *row = plane + (y0 + (IT)y * dh) * W + x0;                   \
                for (int x = xa; x < xb; x++)                                                  \
                    sum += LOAD(row[(IT)x * dw]);                                              \
            }                                                                                  \
            /* the window clipped to the padded image: kh * kw but where ceil mode overhangs */ \
            long count =                                                                       \
                count_pad ? clt_window_taps_inside(oy, kh, sh, 0, dh, H + 2 * (ulong)ph) *     \
                                clt_window_taps_inside(ox, kw, sw, 0, dw, W + 2 * (ulong)pw)   \
                          : (long)(yb - ya) * (xb - xa);                                       \
            out[i] = STORE(sum / (CT)count);                                                   \
        }                                                                                      \
    }

/* Output rows [r, e) (the blocked layout) whose 2 x 2 windows all lie inside the image along
 * the rows, the first tap of column x at x * S, the second D after it: a row whose windows lie
 * inside down the columns too in one loop (the same taps in the same order as NAME##_at, without
 * its tests), any other row window by window; the indices too where ARG. With S, D and ARG
 * constants compilers vectorise the loop with interleaved loads: PoCL ran the max pool of 8 x 8
 * planes with indices fastest so, slower with S and D, or ARG, read at run time, and slowest
 * window by window (docs/performance.md, Convolution and pooling). */
#define POOL2D_PAIRS(NAME, IT, MAX, S, D, ARG)                                                 \
    do {                                                                                       \
        for (; r < e; r++) {                                                                   \
            IT y0 = oy * sh - ph;                                                              \
            if (y0 >= 0 && y0 + dh < (IT)H) {                                                  \
                IT top = y0 * (IT)W, below = (IT)dh * (IT)W;                                   \
                __global const ST *restrict q0 = plane + top, *restrict q1 = q0 + below;       \
                __global ST *restrict o = out + out_off + r * OW;                              \
                __global long *restrict a = arg + arg_off + r * OW;                            \
                for (IT x = 0; x < (IT)OW; x++) {                                              \
                    CT v0 = LOAD(q0[x * (S)]), v1 = LOAD(q0[x * (S) + (D)]);                   \
                    CT v2 = LOAD(q1[x * (S)]), v3 = LOAD(q1[x * (S) + (D)]);                   \
                    if (MAX) {                                                                 \
                        IT at = top + x * (S), best_at = at;                                   \
                        CT best = v0;                                                          \
                        int beats = BEATS(v1, best);                                           \
                        best = PICK(beats, v1, best), best_at = beats ? at + (D) : best_at;    \
                        beats = BEATS(v2, best);                                               \
                        best = PICK(beats, v2, best), best_at = beats ? at + below : best_at;  \
                        beats = BEATS(v3, best);                                               \
                        best = PICK(beats, v3, best);                                          \
                        best_at = beats ? at + below + (D) : best_at;                          \
                        o[x] = STORE(best);                                                    \
                        if (ARG)                                                               \
                            a[x] = best_at;                                                    \
                    } else {                                                                   \
                        CT sum = 0;                                                            \
                        sum += v0, sum += v1, sum += v2, sum += v3;                            \
                        o[x] = STORE(sum / (CT)4);                                             \
                    }                                                                          \
                }                                                                              \
            } else {                                                                           \
                for (IT x = 0; x < (IT)OW; x++)                                                \
                    NAME##_at(r * OW + (ulong)x, x, oy, out + out_off, arg + arg_off, plane,   \
                              (IT)H, (IT)W, kh, kw, sh, sw, ph, pw, dh, dw, is_max,            \
                              count_pad);                                                      \
            }                                                                                  \
            if (++oy == (IT)OH)                                                                \
                oy = 0, plane += H * W;                                                        \
        }                                                                                      \
    } while (0)

/* Output rows [r, e), the first placed by division, then counted on: where every window is
 * 2 x 2 and inside the image along the rows, POOL2D_PAIRS (its taps two apart side by side,
 * as in the usual 2 x 2 pooling of stride 2, with constants), else window by window. */
#define POOL2D_RUN(NAME, IT, MAX)                                                              \
    do {                                                                                       \
        IT oy = (IT)(r % OH);                                                                  \
        __global const ST *plane = in + in_off + r / OH * H * W;                               \
        if (kh == 2 && kw == 2 && pw == 0 && ((IT)OW - 1) * sw + dw < (IT)W) {                 \
            if (sw == 2 && dw == 1 && is_max > 1)                                              \
                POOL2D_PAIRS(NAME, IT, MAX, 2, 1, 1);                                          \
            else if (sw == 2 && dw == 1)                                                       \
                POOL2D_PAIRS(NAME, IT, MAX, 2, 1, 0);                                          \
            else                                                                               \
                POOL2D_PAIRS(NAME, IT, MAX, (IT)sw, (IT)dw, is_max > 1);                       \
        } else {                                                                               \
            for (; r < e; r++) {                                                               \
                for (IT x = 0; x < (IT)OW; x++)                                                \
                    NAME##_at(r * OW + (ulong)x, x, oy, out + out_off, arg + arg_off, plane,   \
                              (IT)H, (IT)W, kh, kw, sh, sw, ph, pw, dh, dw, is_max,            \
                              count_pad);                                                      \
                if (++oy == (IT)OH)                                                            \
                    oy = 0, plane += H * W;                                                    \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* Blocked, a work-item takes whole output rows; otherwise one output a work-item in turn. */
#define POOL2D_KERNEL(NAME, IT, MAX)                                                           \
    POOL2D_AT(NAME, IT, MAX)                                                                   \
    __kernel void NAME(__global ST *out, ulong out_off, __global long *arg, ulong arg_off,     \
                       __global const ST *in, ulong in_off, ulong NC, ulong H, ulong W,        \
                       ulong OH, ulong OW, int kh, int kw, int sh, int sw, int ph, int pw,     \
                       int dh, int dw, int is_max, int count_pad, int blocked)                 \
    {                                                                                          \
        ulong n = NC * OH * OW, g = get_global_id(0), gs = get_global_size(0);                 \
        if (blocked) {                                                                         \
            ulong rows = NC * OH, per = (rows + gs - 1) / gs, r = g * per;                     \
            ulong e = min(r + per, rows);                                                      \
            if (r < e)                                                                         \
                POOL2D_RUN(NAME, IT, MAX);                                                     \
            return;                                                                            \
        }                                                                                      \
        for (ulong i = g; i < n; i += gs)                                                      \
            NAME##_at(i, (IT)(i % OW), (IT)(i / OW % OH), out + out_off, arg + arg_off,        \
                      in + in_off + i / (OW * OH) * H * W, (IT)H, (IT)W, kh, kw, sh, sw, ph,   \
                      pw, dh, dw, is_max, count_pad);                                          \
    }
POOL2D_KERNEL(max_pool2d, int, 1)
POOL2D_KERNEL(max_pool2d_wide, long, 1)
POOL2D_KERNEL(avg_pool2d, int, 0)
POOL2D_KERNEL(avg_pool2d_wide, long, 0)

/* Depthwise convolution: out[n, o, oy, ox] = the sum over taps (y, x), in order, of
 * weight[o, y, x] times input channel o / mult at row oy * sh - ph + y * dh, column
 * ox * sw - pw + x * dw (nothing outside the image). out is N x (C * mult) x OH x OW, weight
 * (C * mult) x kh x kw. */
static void depthwise2d_at(ulong i, ulong ox, ulong oy, __global ST *out,
                           __global const ST *plane, __global const ST *taps, ulong H, ulong W,
                           int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw)
{
    CT sum = 0;
    long y0 = (long)oy * sh - ph, x0 = (long)ox * sw - pw;
    if (y0 >= 0 && y0 + (long)(kh - 1) * dh < (long)H && x0 >= 0 &&
        x0 + (long)(kw - 1) * dw < (long)W) { /* the window inside the image: no checks */
        __global const ST *at = plane + y0 * (long)W + x0;
        for (int y = 0; y < kh; y++)
            for (int x = 0; x < kw; x++)
                sum += LOAD(taps[y * kw + x]) * LOAD(at[(long)y * dh * (long)W + (long)x * dw]);
        out[i] = STORE(sum);
        return;
    }
    for (int y = 0; y < kh; y++) {
        long iy = (long)oy * sh - ph + (long)y * dh;
        if (iy < 0 || iy >= (long)H)
            continue;
        for (int x = 0; x < kw; x++) {
            long ix = (long)ox * sw - pw + (long)x * dw;
            if (ix >= 0 && ix < (long)W)
                sum += LOAD(taps[y * kw + x]) * LOAD(plane[iy * (long)W + ix]);
        }
    }
    out[i] = STORE(sum);
}

/* Outputs o[0 .. n) of a 3 x 3 window from input rows r0, r1, r2 (at output column 0's first
 * tap) at column step S and tap spacing D, the taps in t0 ... t8 (constant S and D at stride 1
 * let compilers vectorise the loop). */
#define DEPTHWISE3_RUN(S, D)                                                                   \
    do {                                                                                       \
        for (ulong j = 0; j < n; j++) {                                                        \
            ulong x = j * (S);                                                                 \
            CT sum = 0;                                                                        \
            sum += t0 * LOAD(r0[x]), sum += t1 * LOAD(r0[x + (D)]);                            \
            sum += t2 * LOAD(r0[x + 2 * (D)]), sum += t3 * LOAD(r1[x]);                        \
            sum += t4 * LOAD(r1[x + (D)]), sum += t5 * LOAD(r1[x + 2 * (D)]);                  \
            sum += t6 * LOAD(r2[x]), sum += t7 * LOAD(r2[x + (D)]);                            \
            sum += t8 * LOAD(r2[x + 2 * (D)]);                                                 \
            o[j] = STORE(sum);                                                                 \
        }                                                                                      \
    } while (0)

/* Outputs j < len of output row oy of one plane, from column ox0 (blocked depthwise2d): the
 * columns whose 3 x 3 window lies inside the image in one loop over the row with the taps in
 * registers, which compilers vectorise; other columns and other windows by depthwise2d_at. The
 * sums are the same, in the same order. */
static void depthwise2d_row(__global ST *out, __global const ST *plane, __global const ST *taps,
                            ulong oy, ulong ox0, ulong len, ulong H, ulong W, int kh, int kw,
                            int sh, int sw, int ph, int pw, int dh, int dw)
{
    long y0 = (long)oy * sh - ph;
    ulong lo = len, hi = len; /* the inside columns: ox0 + [lo, hi) */
    if (kh == 3 && kw == 3 && y0 >= 0 && y0 + 2L * dh < (long)H && 2L * dw < (long)W) {
        ulong first = ((ulong)pw + (ulong)sw - 1) / (ulong)sw; /* x0 >= 0 */
        ulong last = ((ulong)W - 1 - 2 * (ulong)dw + (ulong)pw) / (ulong)sw; /* x0 + 2 dw < W */
        lo = clamp(first, ox0, ox0 + len) - ox0;
        hi = max(lo, clamp(last + 1, ox0, ox0 + len) - ox0);
    }
    for (ulong j = 0; j < lo; j++)
        depthwise2d_at(j, ox0 + j, oy, out, plane, taps, H, W, kh, kw, sh, sw, ph, pw, dh, dw);
    if (lo < hi) {
        CT t0 = LOAD(taps[0]), t1 = LOAD(taps[1]), t2 = LOAD(taps[2]), t3 = LOAD(taps[3]);
        CT t4 = LOAD(taps[4]), t5 = LOAD(taps[5]), t6 = LOAD(taps[6]), t7 = LOAD(taps[7]);
        CT t8 = LOAD(taps[8]);
        long x0 = (long)(ox0 + lo) * sw - pw;
        __global const ST *r0 = plane + y0 * (long)W + x0, *r1 = r0 + (long)dh * (long)W;
        __global const ST *r2 = r1 + (long)dh * (long)W;
        __global ST *o = out + lo;
        ulong n = hi - lo;
        if (sw == 1 && dw == 1)
            DEPTHWISE3_RUN(1, 1);
        else
            DEPTHWISE3_RUN((ulong)sw, (ulong)dw);
    }
    for (ulong j = hi; j < len; j++)
        depthwise2d_at(j, ox0 + j, oy, out, plane, taps, H, W, kh, kw, sh, sw, ph, pw, dh, dw);
}

__kernel void depthwise2d(__global ST *out, ulong out_off, __global const ST *in, ulong in_off,
                          __global const ST *weight, ulong weight_off, ulong N, ulong C,
                          ulong mult, ulong H, ulong W, ulong OH, ulong OW, int kh, int kw,
                          int sh, int sw, int ph, int pw, int dh, int dw, int blocked)
{
    ulong CM = C * mult, taps_n = (ulong)kh * (ulong)kw, n = N * CM * OH * OW;
    ulong g = get_global_id(0), gs = get_global_size(0); /* before any branch (clt_run_span) */
    if (blocked) { /* a work-item's run a piece of an output row at a time */
        ulong i, e;
        clt_run_span(n, g, gs, &i, &e);
        ulong ox = i % OW, oy = (i / OW) % OH, p = i / (OW * OH);
        while (i < e) {
            ulong o = p % CM, len = min(e - i, OW - ox);
            depthwise2d_row(out + out_off + i,
                            in + in_off + ((p / CM) * C + o / mult) * H * W,
                            weight + weight_off + o * taps_n, oy, ox, len, H, W, kh, kw, sh, sw,
                            ph, pw, dh, dw);
            i += len, ox = 0;
            if (++oy == OH)
                oy = 0, p++;
        }
        return;
    }
    for (ulong i = g; i < n; i += gs) {
        ulong ox = i % OW, oy = (i / OW) % OH, p = i / (OW * OH), o = p % CM;
        __global const ST *plane = in + in_off + ((p / CM) * C + o / mult) * H * W;
        depthwise2d_at(i, ox, oy, out + out_off, plane, weight + weight_off + o * taps_n, H, W, kh,
                       kw, sh, sw, ph, pw, dh, dw);
    }
}

/* out[a, k, b] = the sum of src[a, m, b] over the m with idx[m] == k, which are order[starts[k]]
 * .. order[starts[k + 1] - 1], in that order; src is A x M x B, out A x K x B. One work-item an
 * output element. */
__kernel void index_add(__global ST *out, ulong out_off, __global const ST *src, ulong src_off,
                        __global const long *starts, ulong starts_off, __global const long *order,
                        ulong order_off, ulong A, ulong K, ulong B, ulong M)
{
    ulong i = get_global_id(0);
    if (i >= A * K * B)
        return;
    ulong b = i % B, k = (i / B) % K, a = i / (B * K);
    __global const ST *col = src + src_off + a * M * B + b;
    CT sum = 0;
    for (long p = starts[starts_off + k]; p < starts[starts_off + k + 1]; p++)
        sum += LOAD(col[(ulong)order[order_off + p] * B]);
    out[out_off + i] = STORE(sum);
}

/* clt_window_at (window.cl) for the kernels of both widths: in int, and the long one. */
CLT_WINDOW_AT(window_at_int, int)
#define window_at_long clt_window_at

/* The adjoint of im2col: out[n, c, h, w] = the sum of the column entries im2col reads from
 * (h, w), taps (y, x) in order. Columns are (C * kh * kw) x N x (OH * OW); out is N x C x H x W.
 * One work-item an image element: element i at (w, h) of channel c of image n, positions in
 * IT: col2im in int (where they fit: faster on PoCL), col2im_wide in long. */
#define COL2IM_AT(IT)                                                                          \
    static void col2im_at_##IT(ulong i, IT w, IT h, ulong n, ulong c, __global ST *out,        \
                               __global const ST *in, ulong N, IT OH, IT OW, int kh, int kw,   \
                               int sh, int sw, int ph, int pw, int dh, int dw)                 \
    {                                                                                          \
        ulong tap = N * (ulong)(OH * OW);                                                      \
        __global const ST *rows = in + (c * ((ulong)kh * (ulong)kw) * N + n) * (ulong)(OH * OW); \
        CT sum = 0;                                                                            \
        for (int y = 0; y < kh; y++) {                                                         \
            IT oy = window_at_##IT(h, y, sh, ph, dh, OH);                                      \
            for (int x = 0; oy >= 0 && x < kw; x++) {                                          \
                IT ox = window_at_##IT(w, x, sw, pw, dw, OW);                                  \
                if (ox >= 0)                                                                   \
                    sum += LOAD(rows[((ulong)y * kw + (ulong)x) * tap + (ulong)(oy * OW + ox)]); \
            }                                                                                  \
        }                                                                                      \
        out[i] = STORE(sum);                                                                   \
    }

/* col2im of small planes: work-item g takes a run of the image's planes, plane p = n * C + c,
 * each the sum of its taps' planes of columns, taps (y, x) in order as col2im_at, input
 * position j of tap (y, x) taking column position j + (ph - y * dh) * W + pw - x * dw where its
 * row and column fall inside (the arguments col2im's; sh, sw and blocked unused). */
__kernel void col2im_small(__global ST *out, ulong out_off, __global const ST *in, ulong in_off,
                           ulong N, ulong C, ulong H, ulong W, ulong OH, ulong OW, int kh,
                           int kw, int sh, int sw, int ph, int pw, int dh, int dw, int blocked)
{
    ulong planes = N * C, gs = get_global_size(0), tap = N * OH * OW;
    ulong per = (planes + gs - 1) / gs, p = get_global_id(0) * per, e = min(p + per, planes);
    int row[CLT_SMALL_PLANE], col[CLT_SMALL_PLANE], HW = (int)(H * W);
    CT sum[CLT_SMALL_PLANE];
    ulong n = p / C, c = p % C;
    __global ST *restrict dst = out + out_off + p * (ulong)HW;
    (void)sh, (void)sw, (void)blocked;
    if (p >= e)
        return;
    plane_positions((int)H, (int)W, row, col);
    for (; p < e; p++, dst += HW) {
        __global const ST *rows = in + in_off + (c * ((ulong)kh * (ulong)kw) * N + n) * OH * OW;
        for (int j = 0; j < HW; j++)
            sum[j] = 0;
        for (int y = 0; y < kh; y++) {
            for (int x = 0; x < kw; x++) {
                int y0 = ph - y * dh, x0 = pw - x * dw, shift = y0 * (int)W + x0;
                int ylo = -y0, yhi = (int)OH - y0, xlo = -x0, xhi = (int)OW - x0;
                __global const ST *restrict from = rows + ((ulong)y * (ulong)kw + (ulong)x) * tap;
                for (int j = 0; j < HW; j++) {
                    int inside =
                        (row[j] >= ylo) & (row[j] < yhi) & (col[j] >= xlo) & (col[j] < xhi);
                    sum[j] += inside ? LOAD(from[j + shift]) : (CT)0;
                }
            }
        }
        for (int j = 0; j < HW; j++)
            dst[j] = STORE(sum[j]);
        if (++c == C)
            c = 0, n++;
    }
}

/* CLT_RUN's two layouts; blocked, a work-item's first element placed by division and the
 * others counted on (PoCL spent most of the time on the divisions). */
#define COL2IM_KERNEL(NAME, IT)                                                                \
    COL2IM_AT(IT)                                                                              \
    __kernel void NAME(__global ST *out, ulong out_off, __global const ST *in, ulong in_off,   \
                       ulong N, ulong C, ulong H, ulong W, ulong OH, ulong OW, int kh, int kw, \
                       int sh, int sw, int ph, int pw, int dh, int dw, int blocked)            \
    {                                                                                          \
        ulong n_ = N * C * H * W, g = get_global_id(0), gs = get_global_size(0);               \
        if (blocked) {                                                                         \
            ulong i, e;                                                                        \
            clt_run_span(n_, g, gs, &i, &e);                                                   \
            IT w = (IT)(i % W), h = (IT)(i / W % H);                                           \
            ulong c = i / (W * H) % C, n = i / (W * H * C);                                    \
            for (; i < e; i++) {                                                               \
                col2im_at_##IT(i, w, h, n, c, out + out_off, in + in_off, N, (IT)OH, (IT)OW,   \
                               kh, kw, sh, sw, ph, pw, dh, dw);                                \
                if (++w < (IT)W)                                                               \
                    continue;                                                                  \
                w = 0;                                                                         \
                if (++h < (IT)H)                                                               \
                    continue;                                                                  \
                h = 0;                                                                         \
                if (++c == C)                                                                  \
                    c = 0, n++;                                                                \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        for (ulong i = g; i < n_; i += gs) {                                                   \
            ulong nc = i / (W * H);                                                            \
            col2im_at_##IT(i, (IT)(i % W), (IT)(i / W % H), nc / C, nc % C, out + out_off,     \
                           in + in_off, N, (IT)OH, (IT)OW, kh, kw, sh, sw, ph, pw, dh, dw);    \
        }                                                                                      \
    }
COL2IM_KERNEL(col2im, int)
COL2IM_KERNEL(col2im_wide, long)

/* The gradient of pool2d: out[n, c, h, w] gathers in[n, c, oy, ox] over the windows holding
 * (h, w), taps in order. Max: only the windows whose index in `arg` is h * W + w. Average: each
 * divided by the forward divisor, the taps inside the padded image with count_pad, else the taps
 * inside the image. One work-item an input element (max pooling whose windows do not overlap
 * runs pool2d_scatter instead). */
static void pool2d_backward_at(ulong i, __global ST *out, __global const long *arg,
                               __global const ST *in, ulong H, ulong W, ulong OH, ulong OW,
                               int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw,
                               int is_max, int count_pad)
{
    long w = (long)(i % W), h = (long)((i / W) % H);
    ulong plane = (i / (W * H)) * OH * OW;
    CT sum = 0;
    /* only the taps through which (h, w) reaches a window */
    long y_hi = clt_window_reach_hi(h, ph, dh, kh), x_hi = clt_window_reach_hi(w, pw, dw, kw);
    long x_lo = clt_window_reach_lo(w, pw, dw, sw, OW);
    for (int y = (int)clt_window_reach_lo(h, ph, dh, sh, OH); y < y_hi; y++) {
        long oy = clt_window_at(h, y, sh, ph, dh, OH);
        long rows = oy < 0      ? kh
                    : count_pad ? clt_window_taps_inside(oy, kh, sh, 0, dh, H + 2 * (ulong)ph)
                                : clt_window_taps_inside(oy, kh, sh, ph, dh, H);
        for (int x = (int)x_lo; oy >= 0 && x < x_hi; x++) {
            long ox = clt_window_at(w, x, sw, pw, dw, OW);
            if (ox < 0)
                continue;
            ulong o = plane + (ulong)(oy * (long)OW + ox);
            if (is_max) {
                if (arg[o] == h * (long)W + w)
                    sum += LOAD(in[o]);
            } else {
                long cols = count_pad
                                ? clt_window_taps_inside(ox, kw, sw, 0, dw, W + 2 * (ulong)pw)
                                : clt_window_taps_inside(ox, kw, sw, pw, dw, W);
                sum += LOAD(in[o]) / (CT)(rows * cols);
            }
        }
    }
    out[i] = STORE(sum);
}

__kernel void pool2d_backward(__global ST *out, ulong out_off, __global const long *arg,
                              ulong arg_off, __global const ST *in, ulong in_off, ulong NC,
                              ulong H, ulong W, ulong OH, ulong OW, int kh, int kw, int sh,
                              int sw, int ph, int pw, int dh, int dw, int is_max, int count_pad,
                              int blocked)
{
    CLT_RUN(NC * H * W, blocked,
            pool2d_backward_at(i, out + out_off, arg + arg_off, in + in_off, H, W, OH, OW, kh,
                               kw, sh, sw, ph, pw, dh, dw, is_max, count_pad));
}

/* Max pooling's adjoint where 2 x 2 windows of stride 2 tile the planes (H = 2 OH, W = 2 OW), in
 * the blocked layout: input rows [r, e) of the NC planes whole, element (h, w) the gradient of
 * window (h / 2, w / 2) where its index names (h, w), else 0, what pool2d_backward's gather
 * gives (0 + g). One pass, writing each row once, instead of zeros and the scatter: faster on
 * PoCL, timed in turn (docs/performance.md, Convolution and pooling). */
__kernel void pool2d_pairs_backward(__global ST *out, ulong out_off, __global const long *arg,
                                    ulong arg_off, __global const ST *in, ulong in_off,
                                    ulong NC, ulong OH, ulong OW)
{
    ulong rows = NC * OH * 2, gs = get_global_size(0), per = (rows + gs - 1) / gs;
    ulong r = get_global_id(0) * per, e = min(r + per, rows);
    int ow = (int)OW, W = 2 * ow, h = (int)(r % (OH * 2)); /* the row within its plane */
    for (; r < e; r++) {
        long base = (long)h * W;
        __global const ST *restrict g = in + in_off + r / 2 * OW; /* its windows' row */
        __global const long *restrict a = arg + arg_off + r / 2 * OW;
        __global ST *restrict o = out + out_off + r * (ulong)W;
        for (int x = 0; x < ow; x++) {
            ST v = STORE((CT)0 + LOAD(g[x])), zero = STORE((CT)0);
            int at = (int)(a[x] - base); /* within the plane */
            o[2 * x] = at == 2 * x ? v : zero;
            o[2 * x + 1] = at == 2 * x + 1 ? v : zero;
        }
        if (++h == 2 * (int)OH)
            h = 0;
    }
}

/* Max pooling's adjoint where no input element lies in two windows (stride > (k - 1) *
 * dilation both ways), into an out of zeros: each window's gradient (n of them, per a plane)
 * to the element of its plane of HW that its index names, which is what pool2d_backward's
 * gather adds there (0 + g). One work-item a window: a quarter of the gather's for 2 x 2
 * windows, and no division by the image's sizes at every element. */
__kernel void pool2d_scatter(__global ST *out, ulong out_off, __global const long *arg,
                             ulong arg_off, __global const ST *in, ulong in_off, ulong n,
                             ulong per, ulong HW, int blocked)
{
    CLT_RUN(n, blocked, {
        long at = arg[arg_off + i];
        if (at >= 0 && (ulong)at < HW)
            out[out_off + i / per * HW + (ulong)at] = STORE((CT)0 + LOAD(in[in_off + i]));
    });
}
