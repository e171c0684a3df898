/* Neural-network kernels, built per dtype with the options of elementwise.cl (-DDT, -DST, -DCT,
 * -DKIND): index_select (embedding, picking targets), im2col (convolution as a matrix product)
 * and 2-D max and average pooling over NCHW tensors. Every operand is contiguous; offsets are in
 * elements. */

#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define STORE(v) CLT_CAT(CLT_CAT(CLT_CAT(clt_, KIND), _to_), DT)(v)

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

/* The columns of one image for convolution: out[(c * kh + y) * kw + x, oy * OW + ox] = the input
 * at channel c, row oy * sh - ph + y * dh, column ox * sw - pw + x * dw, or 0 outside it.
 * Images are N x C x H x W; out is N x (C * kh * kw) x (OH * OW). */
__kernel void im2col(__global ST *out, ulong out_off, __global const ST *in, ulong in_off,
                     ulong N, ulong C, ulong H, ulong W, ulong OH, ulong OW, int kh, int kw,
                     int sh, int sw, int ph, int pw, int dh, int dw)
{
    ulong i = get_global_id(0);
    ulong cols = OH * OW, rows = C * (ulong)(kh * kw);
    if (i >= N * rows * cols)
        return;
    ulong col = i % cols, row = (i / cols) % rows, n = i / (cols * rows);
    ulong c = row / (ulong)(kh * kw);
    long y = (long)((row / (ulong)kw) % (ulong)kh), x = (long)(row % (ulong)kw);
    long iy = (long)(col / OW) * sh - ph + y * dh, ix = (long)(col % OW) * sw - pw + x * dw;
    ST zero = STORE((CT)0);
    out[out_off + i] = iy >= 0 && iy < (long)H && ix >= 0 && ix < (long)W
                           ? in[in_off + ((n * C + c) * H + (ulong)iy) * W + (ulong)ix]
                           : zero;
}

/* 2-D pooling: out[n, c, oy, ox] over the window at (oy * sh - ph, ox * sw - pw), dilation
 * (dh, dw). Max: the largest element (NaN wins), its flat index within the image plane written
 * to `arg` (i64, for the backward pass). Average: the sum over the window divided by its size,
 * counting the padding when count_pad, else only the elements inside the image. */
__kernel void pool2d(__global ST *out, ulong out_off, __global long *arg, ulong arg_off,
                     __global const ST *in, ulong in_off, ulong NC, ulong H, ulong W, ulong OH,
                     ulong OW, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw,
                     int is_max, int count_pad)
{
    ulong i = get_global_id(0);
    if (i >= NC * OH * OW)
        return;
    ulong ox = i % OW, oy = (i / OW) % OH, nc = i / (OW * OH);
    __global const ST *plane = in + in_off + nc * H * W;
    CT best = 0, sum = 0;
    long best_at = -1, inside = 0;
    for (int y = 0; y < kh; y++) {
        long iy = (long)oy * sh - ph + (long)y * dh;
        for (int x = 0; x < kw; x++) {
            long ix = (long)ox * sw - pw + (long)x * dw;
            if (iy < 0 || iy >= (long)H || ix < 0 || ix >= (long)W)
                continue;
            CT v = LOAD(plane[iy * (long)W + ix]);
            inside++;
            sum += v;
            if (best_at < 0 || v > best || (v != v && best == best)) {
                best = v;
                best_at = iy * (long)W + ix;
            }
        }
    }
    if (is_max) {
        out[out_off + i] = STORE(best_at < 0 ? -INFINITY : best); /* a window wholly in padding */
        arg[arg_off + i] = best_at;
    } else {
        long count = count_pad ? (long)kh * kw : inside;
        out[out_off + i] = STORE(sum / (CT)count);
    }
}
