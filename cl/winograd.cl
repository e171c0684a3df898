/* Winograd's convolution F(2 x 2, 3 x 3), built for f32 and f64 with the options of
 * elementwise.cl (-DST ...): its three stages as lib/backends/backend.h's clt__winograd_call
 * describes them, each sum in the order written there, as the host computes it
 * (lib/backends/host/host_winograd.inc). The conv2d entry multiplies the transformed tiles between the
 * stages. Each kernel loops over its items with CLT_RUN (common.cl), the work of an item in a
 * function: on GPUs an item is a tile (neighbouring work-items, neighbouring tiles); in the
 * blocked layout (CPU devices) the weight's items are output channels, the input's and the
 * output's whole tile rows, WINOGRAD_CHUNK tiles at a time through private rows, in loops over
 * the channels or the tiles that the compiler vectorises, as the host does (a tile an item ran
 * several times slower on PoCL: docs/performance.md, Convolution and pooling). Every count fits
 * in 32 bits (the host checks), so items are split with 32-bit divisions. Offsets are in
 * elements. */

/* The blocked layout's loop over n row items: each work-item (g of gs, read before any branch:
 * see clt_run_span) one run of them, as even as the work-items allow (no item is short enough to
 * want CLT_RUN's runs in multiples of 16). */
#define WINOGRAD_CHUNK 32

#define WINOGRAD_ROWS(g, gs, n, BODY)                                                          \
    do {                                                                                       \
        ulong n_ = (n), gs_ = (gs), per_ = (n_ + gs_ - 1) / gs_;                               \
        ulong b_ = min((g) * per_, n_), e_ = min(b_ + per_, n_);                               \
        for (ulong i = b_; i < e_; i++)                                                        \
            BODY;                                                                              \
    } while (0)

/* Item k * C + c: u[(k * 16 + e) * C + c] = (G g G^T)[e] for g = w[k, c] (3 x 3). */
static void winograd_weight_at(uint i, __global ST *u, __global const ST *w, uint C)
{
    const ST h = (ST)0.5; /* one half */
    uint k = i / C, c = i % C;
    __global const ST *q = w + (ulong)i * 9;
    ST t[4][3];
    for (int j = 0; j < 3; j++) { /* G g: the kernel's columns */
        ST a = q[j], b = q[3 + j], d = q[6 + j];
        t[0][j] = a;
        t[1][j] = ((a + b) + d) * h;
        t[2][j] = ((a - b) + d) * h;
        t[3][j] = d;
    }
    __global ST *o = u + (ulong)k * 16 * C + c;
    for (int r = 0; r < 4; r++) { /* (G g) G^T: its rows */
        ST a = t[r][0], b = t[r][1], d = t[r][2];
        o[(4 * r) * C] = a;
        o[(4 * r + 1) * C] = ((a + b) + d) * h;
        o[(4 * r + 2) * C] = ((a - b) + d) * h;
        o[(4 * r + 3) * C] = d;
    }
}

/* Items: K * C pairs, or the K output channels in the blocked layout. */
__kernel void winograd_weight(__global ST *u, __global const ST *w, ulong w_off, uint K, uint C,
                              int blocked)
{
    ulong g = get_global_id(0), gs = get_global_size(0);
    if (blocked)
        WINOGRAD_ROWS(g, gs, (ulong)K,
                      for (uint c = 0; c < C; c++)
                          winograd_weight_at((uint)i * C + c, u, w + w_off, C));
    else
        CLT_RUN_AT(g, gs, (ulong)K * C, 0, winograd_weight_at((uint)i, u, w + w_off, C));
}

/* Item c * P + p: v[(e * C + c) * P + p] = (B^T d B)[e] for channel c's 4 x 4 patch d of tile
 * p of the block (tile rows from row0, P tiles). */
static void winograd_input_at(uint i, __global ST *v, __global const ST *in, uint C, uint H,
                              uint W, uint TH, uint TW, int ph, int pw, uint row0, uint P)
{
    uint c = i / P, p = i % P, R = row0 + p / TW, tx = p % TW;
    uint n = R / TH, ty = R % TH;
    __global const ST *plane = in + ((ulong)n * C + c) * H * W;
    int y0 = 2 * (int)ty - ph, x0 = 2 * (int)tx - pw;
    ST d[4][4];
    for (int r = 0; r < 4; r++) { /* the patch, 0 outside the image */
        int iy = y0 + r;
        for (int j = 0; j < 4; j++) {
            int ix = x0 + j;
            d[r][j] = iy >= 0 && iy < (int)H && ix >= 0 && ix < (int)W
                          ? plane[(uint)iy * W + (uint)ix]
                          : (ST)0;
        }
    }
    ST q[4][4];
    for (int j = 0; j < 4; j++) { /* B^T d: the rows combined */
        q[0][j] = d[0][j] - d[2][j];
        q[1][j] = d[1][j] + d[2][j];
        q[2][j] = d[2][j] - d[1][j];
        q[3][j] = d[1][j] - d[3][j];
    }
    ulong e1 = (ulong)C * P; /* from element e to e + 1 */
    __global ST *o = v + (ulong)c * P + p;
    for (int r = 0; r < 4; r++) { /* (B^T d) B, row r */
        o[(4 * r) * e1] = q[r][0] - q[r][2];
        o[(4 * r + 1) * e1] = q[r][1] + q[r][2];
        o[(4 * r + 2) * e1] = q[r][2] - q[r][1];
        o[(4 * r + 3) * e1] = q[r][1] - q[r][3];
    }
}

/* Item c * rows + r: the same for every tile of tile row r of the block, channel c, through
 * private rows WINOGRAD_CHUNK tiles wide: the patches' rows with their zeros (seg), then B^T
 * applied to them (q). PoCL vectorised this; a loop reading the image straight, with the tiles
 * at its edges apart, ran slower. */
static void winograd_input_row(uint i, __global ST *v, __global const ST *in, uint C, uint H,
                               uint W, uint TH, uint TW, int ph, int pw, uint row0, uint rows)
{
    uint c = i / rows, r = i % rows, R = row0 + r, P = rows * TW;
    uint n = R / TH, ty = R % TH;
    __global const ST *plane = in + ((ulong)n * C + c) * H * W;
    ST seg[4][2 * WINOGRAD_CHUNK + 2], q[4][2 * WINOGRAD_CHUNK + 2];
    ulong e1 = (ulong)C * P; /* from element e to e + 1 */
    for (uint tx0 = 0; tx0 < TW; tx0 += WINOGRAD_CHUNK) {
        int nt = (int)min((uint)WINOGRAD_CHUNK, TW - tx0);
        int x0 = 2 * (int)tx0 - pw, len = 2 * nt + 2;
        for (int k = 0; k < 4; k++) { /* the patches' row k, 0 outside the image */
            int iy = 2 * (int)ty - ph + k, a = x0 < 0 ? -x0 : 0, b = min((int)W - x0, len);
            if (iy < 0 || iy >= (int)H || b <= a)
                a = b = 0;
            for (int j = 0; j < a; j++)
                seg[k][j] = 0;
            for (int j = a; j < b; j++)
                seg[k][j] = plane[(uint)iy * W + (uint)(x0 + j)];
            for (int j = max(a, b); j < len; j++)
                seg[k][j] = 0;
        }
        for (int j = 0; j < len; j++) { /* B^T d: the rows combined */
            q[0][j] = seg[0][j] - seg[2][j];
            q[1][j] = seg[1][j] + seg[2][j];
            q[2][j] = seg[2][j] - seg[1][j];
            q[3][j] = seg[1][j] - seg[3][j];
        }
        for (int k = 0; k < 4; k++) { /* (B^T d) B, row k */
            __global ST *o = v + (4 * k * (ulong)C + c) * P + r * TW + tx0;
            for (int x = 0; x < nt; x++) {
                ST d0 = q[k][2 * x], d1 = q[k][2 * x + 1], d2 = q[k][2 * x + 2];
                ST d3 = q[k][2 * x + 3];
                o[x] = d0 - d2;
                o[e1 + x] = d1 + d2;
                o[2 * e1 + x] = d2 - d1;
                o[3 * e1 + x] = d1 - d3;
            }
        }
    }
}

/* Items: C * P tiles, or C * rows tile rows in the blocked layout. */
__kernel void winograd_input(__global ST *v, __global const ST *in, ulong in_off, uint C, uint H,
                             uint W, uint TH, uint TW, int ph, int pw, uint row0, uint rows,
                             int blocked)
{
    ulong g = get_global_id(0), gs = get_global_size(0);
    if (blocked)
        WINOGRAD_ROWS(g, gs, (ulong)C * rows,
                      winograd_input_row((uint)i, v, in + in_off, C, H, W, TH, TW, ph, pw, row0,
                                         rows));
    else
        CLT_RUN_AT(g, gs, (ulong)C * rows * TW, 0,
                   winograd_input_at((uint)i, v, in + in_off, C, H, W, TH, TW, ph, pw, row0,
                                     rows * TW));
}

/* Item k * P + p: the 2 x 2 outputs A^T m A of tile p of the block from m[(e * K + k) * P + p],
 * those inside OH x OW written to out (N x K x OH x OW). */
static void winograd_output_at(uint i, __global ST *out, __global const ST *m, uint K, uint OH,
                               uint OW, uint TH, uint TW, uint row0, uint P)
{
    uint k = i / P, p = i % P, R = row0 + p / TW, tx = p % TW;
    uint n = R / TH, ty = R % TH;
    ulong e1 = (ulong)K * P; /* from element e to e + 1 */
    __global const ST *s = m + (ulong)k * P + p;
    ST s0[4], s1[4];
    for (int j = 0; j < 4; j++) { /* A^T m */
        ST m0 = s[j * e1], m1 = s[(4 + j) * e1], m2 = s[(8 + j) * e1], m3 = s[(12 + j) * e1];
        s0[j] = (m0 + m1) + m2;
        s1[j] = (m1 - m2) - m3;
    }
    __global ST *plane = out + ((ulong)n * K + k) * OH * OW;
    uint oy = 2 * ty, ox = 2 * tx;
    plane[oy * OW + ox] = (s0[0] + s0[1]) + s0[2]; /* (A^T m) A */
    if (ox + 1 < OW)
        plane[oy * OW + ox + 1] = (s0[1] - s0[2]) - s0[3];
    if (oy + 1 < OH) {
        plane[(oy + 1) * OW + ox] = (s1[0] + s1[1]) + s1[2];
        if (ox + 1 < OW)
            plane[(oy + 1) * OW + ox + 1] = (s1[1] - s1[2]) - s1[3];
    }
}

/* Item k * rows + r: the same for every tile of tile row r of the block, output channel k,
 * WINOGRAD_CHUNK tiles' outputs at a time through private rows. */
static void winograd_output_row(uint i, __global ST *out, __global const ST *m, uint K, uint OH,
                                uint OW, uint TH, uint TW, uint row0, uint rows)
{
    uint k = i / rows, r = i % rows, R = row0 + r, P = rows * TW;
    uint n = R / TH, ty = R % TH;
    ulong e1 = (ulong)K * P; /* from element e to e + 1 */
    __global const ST *s = m + (ulong)k * P + r * TW;
    __global ST *plane = out + ((ulong)n * K + k) * OH * OW;
    ST o[2][2 * WINOGRAD_CHUNK];
    for (uint tx0 = 0; tx0 < TW; tx0 += WINOGRAD_CHUNK) {
        int nt = (int)min((uint)WINOGRAD_CHUNK, TW - tx0);
        for (int x = 0; x < nt; x++) {
            ST s0[4], s1[4];
            for (int j = 0; j < 4; j++) { /* A^T m */
                ST m0 = s[j * e1 + tx0 + x], m1 = s[(4 + j) * e1 + tx0 + x];
                ST m2 = s[(8 + j) * e1 + tx0 + x], m3 = s[(12 + j) * e1 + tx0 + x];
                s0[j] = (m0 + m1) + m2;
                s1[j] = (m1 - m2) - m3;
            }
            o[0][2 * x] = (s0[0] + s0[1]) + s0[2]; /* (A^T m) A */
            o[0][2 * x + 1] = (s0[1] - s0[2]) - s0[3];
            o[1][2 * x] = (s1[0] + s1[1]) + s1[2];
            o[1][2 * x + 1] = (s1[1] - s1[2]) - s1[3];
        }
        uint ox = 2 * tx0, cols = min(OW - ox, 2 * (uint)nt);
        for (uint y = 0; y < 2 && 2 * ty + y < OH; y++)
            for (uint x = 0; x < cols; x++)
                plane[(2 * ty + y) * OW + ox + x] = o[y][x];
    }
}

/* Items: K * P tiles, or K * rows tile rows in the blocked layout. */
__kernel void winograd_output(__global ST *out, ulong out_off, __global const ST *m, uint K,
                              uint OH, uint OW, uint TH, uint TW, uint row0, uint rows,
                              int blocked)
{
    ulong g = get_global_id(0), gs = get_global_size(0);
    if (blocked)
        WINOGRAD_ROWS(g, gs, (ulong)K * rows,
                      winograd_output_row((uint)i, out + out_off, m, K, OH, OW, TH, TW, row0,
                                          rows));
    else
        CLT_RUN_AT(g, gs, (ulong)K * rows * TW, 0,
                   winograd_output_at((uint)i, out + out_off, m, K, OH, OW, TH, TW, row0,
                                      rows * TW));
}
