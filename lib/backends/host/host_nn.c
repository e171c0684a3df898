/* The host backend's neural-network kernels (see cl/nn.cl): index_select, im2col, depthwise
 * convolution and 2-D pooling, and their adjoints index_add, col2im and pool2d_backward,
 * attention, cross entropy's rows and Winograd's convolution's stages, as plain loops; the
 * floating ones compute in the same type and order as the OpenCL kernels. */
#include <string.h>
#include <tgmath.h>

#include "host.h"
#include "host_parallel.h"
#include "host_simd.h"
#include "platform/platform.h"
#include "backends/shared/scalar_host.h"
#include "cl/window.cl"

/* Rows [lo, hi) of the A x M rows of B elements index_select writes. */
static void index_select_part(const void *call, size_t lo, size_t hi)
{
    const clt__index_call *c = call;
    size_t size = clt_dtype_size(c->dtype);
    const char *src = (const char *)c->src + c->src_offset * size;
    const int64_t *idx = (const int64_t *)c->idx + c->idx_offset;
    char *out = (char *)c->out + c->out_offset * size;
    for (size_t r = lo; r < hi; r++)
        memcpy(out + r * c->B * size,
               src + (r / c->M * c->K + (size_t)idx[r % c->M]) * c->B * size, c->B * size);
}

clt_status clt__host_index_select(const char *fn, clt_device *dev, const clt__index_call *c)
{
    (void)fn;
    (void)dev;
    clt__host_parallel(c->A * c->M, 2 * c->B, index_select_part, c);
    return CLT_OK;
}

/* The output columns x0 + lo .. x0 + hi - 1 (of the block of n from x0) whose tap x lies inside
 * the image, at input column b + j * sw for column x0 + j. */
typedef struct tap_span {
    long lo, hi, b;
} tap_span;

static void tap_span_make(const clt__conv_call *c, int x, size_t x0, size_t n, tap_span *t)
{
    long off = (long)x * c->dw - c->pw, s = c->sw, last = (long)c->W - 1 - off;
    t->lo = off < 0 ? (-off + s - 1) / s - (long)x0 : -(long)x0;
    t->hi = last < 0 ? 0 : last / s + 1 - (long)x0;
    t->lo = t->lo < 0 ? 0 : t->lo;
    t->hi = t->hi > (long)n ? (long)n : t->hi;
    t->b = (long)x0 * s + off;
}

/* The input row that tap row y of output row oy reads, or -1 where it lies outside the image. */
static inline long window_row(const clt__conv_call *c, size_t oy, int y)
{
    long iy = (long)oy * c->sh - c->ph + (long)y * c->dh;
    return iy >= 0 && iy < (long)c->H ? iy : -1;
}

/* The input column that tap column x of output column ox reads, or -1 outside the image. */
static inline long window_col(const clt__conv_call *c, size_t ox, int x)
{
    long ix = (long)ox * c->sw - c->pw + (long)x * c->dw;
    return ix >= 0 && ix < (long)c->W ? ix : -1;
}

/* The taps (y, x) of output (oy, ox)'s window that lie inside the image, in order, each with the
 * input row iy and column ix it reads. */
#define FOR_WINDOW_TAPS(c, oy, ox, ...)                                                        \
    for (long y0_ = (long)(oy) * (c)->sh - (c)->ph, y = clt_window_tap_lo(y0_, (c)->dh),       \
              yb_ = clt_window_tap_hi(y0_, (c)->kh, (c)->dh, (long)(c)->H);                    \
         y < yb_; y++) {                                                                       \
        long iy = y0_ + y * (c)->dh;                                                           \
        for (long x0_ = (long)(ox) * (c)->sw - (c)->pw, x = clt_window_tap_lo(x0_, (c)->dw),   \
                  xb_ = clt_window_tap_hi(x0_, (c)->kw, (c)->dw, (long)(c)->W);                \
             x < xb_; x++) {                                                                   \
            long ix = x0_ + x * (c)->dw;                                                       \
            __VA_ARGS__;                                                                       \
        }                                                                                      \
    }

/* im2col for elements of one size (T an unsigned integer of that size): its rows [lo, hi) of
 * C * kh * kw for images [n0, n1) and output rows [oy0, oy1), in order from out, and the
 * backend's part, every image and output row. Output rows of at least IM2COL_NARROW go a row of
 * OW at a time: zero where the tap lies outside the image, the rest copied (one memcpy at stride
 * 1). Narrower ones (8 x 8 images) go IM2COL_TABLE outputs at a time, the same for every image
 * and channel of a tap: a table of the input element each reads and a mask keeping its bits or
 * none, then one gather without branches (vectorised) per image; element loops with a branch
 * each spent 2 cycles an element in mispredictions, and library calls a row more. */
#define IM2COL_NARROW 16
#define IM2COL_TABLE 256

#define HOST_GATHER_MASKED(T)                                                                  \
    static CLT__SIMD void gather_masked_##T(T *restrict out, const T *restrict in,             \
                                            const int32_t *restrict idx,                       \
                                            const T *restrict mask, size_t n)                  \
    {                                                                                          \
        for (size_t p = 0; p < n; p++)                                                         \
            out[p] = in[idx[p]] & mask[p];                                                     \
    }
HOST_GATHER_MASKED(uint8_t)
HOST_GATHER_MASKED(uint16_t)
HOST_GATHER_MASKED(uint32_t)
HOST_GATHER_MASKED(uint64_t)

#define HOST_IM2COL(T)                                                                         \
    static void im2col_narrow_##T(const clt__conv_call *c, size_t row, size_t n0, size_t n1,   \
                                  size_t oy0, size_t oy1, T *out)                              \
    {                                                                                          \
        size_t OW = c->OW, rows = IM2COL_TABLE / OW, span = (oy1 - oy0) * OW;                  \
        size_t ch = row / ((size_t)c->kh * (size_t)c->kw);                                     \
        int y = (int)((row / (size_t)c->kw) % (size_t)c->kh), x = (int)(row % (size_t)c->kw);  \
        const T *in = (const T *)c->in + c->in_offset + ch * c->H * c->W;                      \
        int32_t idx[IM2COL_TABLE];                                                             \
        T mask[IM2COL_TABLE];                                                                  \
        for (size_t a = oy0; a < oy1; a += rows) {                                             \
            size_t b = a + rows < oy1 ? a + rows : oy1, len = (b - a) * OW;                    \
            for (size_t p = 0; p < len; p++) {                                                 \
                long iy = window_row(c, a + p / OW, y), ix = window_col(c, p % OW, x);         \
                bool inside = iy >= 0 && ix >= 0;                                              \
                idx[p] = inside ? (int32_t)(iy * (long)c->W + ix) : 0;                         \
                mask[p] = inside ? (T)~(T)0 : 0;                                               \
            }                                                                                  \
            for (size_t n = n0; n < n1; n++)                                                   \
                gather_masked_##T(out + (n - n0) * span + (a - oy0) * OW,                      \
                                  in + n * c->C * c->H * c->W, idx, mask, len);                \
        }                                                                                      \
    }                                                                                          \
    static void im2col_span_##T(const clt__conv_call *c, size_t lo, size_t hi, size_t n0,      \
                                size_t n1, size_t oy0, size_t oy1, T *out)                     \
    {                                                                                          \
        size_t OW = c->OW;                                                                     \
        const T *in = c->in ? (const T *)c->in + c->in_offset : NULL; /* NULL: empty */        \
        for (size_t row = lo; row < hi; row++) {                                               \
            /* int32_t offsets; an empty plane has no element 0 for the masked loads */         \
            if (OW < IM2COL_NARROW && c->H * c->W <= INT32_MAX && c->H * c->W > 0) {           \
                im2col_narrow_##T(c, row, n0, n1, oy0, oy1, out);                              \
                out += (n1 - n0) * (oy1 - oy0) * OW;                                           \
                continue;                                                                      \
            }                                                                                  \
            size_t ch = row / ((size_t)c->kh * (size_t)c->kw);                                 \
            long y = (long)((row / (size_t)c->kw) % (size_t)c->kh);                            \
            tap_span t;                                                                        \
            tap_span_make(c, (int)(row % (size_t)c->kw), 0, OW, &t);                           \
            for (size_t n = n0; n < n1; n++) {                                                 \
                size_t plane = (n * c->C + ch) * c->H * c->W; /* in may be NULL: empty */     \
                for (size_t oy = oy0; oy < oy1; oy++, out += OW) {                             \
                    long iy = (long)oy * c->sh - c->ph + y * c->dh;                            \
                    if (iy < 0 || iy >= (long)c->H || t.lo >= t.hi) {                          \
                        memset(out, 0, OW * sizeof *out); /* every dtype's zero: zero bits */  \
                        continue;                                                              \
                    }                                                                          \
                    const T *src = in + plane + (size_t)iy * c->W;                             \
                    memset(out, 0, (size_t)t.lo * sizeof *out);                                \
                    if (c->sw == 1)                                                            \
                        memcpy(out + t.lo, src + t.b + t.lo,                                   \
                               (size_t)(t.hi - t.lo) * sizeof *out);                           \
                    else                                                                       \
                        for (long j = t.lo; j < t.hi; j++)                                     \
                            out[j] = src[t.b + j * c->sw];                                     \
                    memset(out + t.hi, 0, (OW - (size_t)t.hi) * sizeof *out);                  \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void im2col_##T(const void *call, size_t lo, size_t hi)                             \
    {                                                                                          \
        const clt__conv_call *c = call;                                                        \
        im2col_span_##T(c, lo, hi, 0, c->N, 0, c->OH,                                          \
                        (T *)c->out + c->out_offset + lo * c->N * c->OH * c->OW);              \
    }
HOST_IM2COL(uint8_t)
HOST_IM2COL(uint16_t)
HOST_IM2COL(uint32_t)
HOST_IM2COL(uint64_t)

clt_status clt__host_im2col(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    static const clt__host_part parts[] = {im2col_uint8_t, im2col_uint16_t,
                                           NULL,           im2col_uint32_t,
                                           NULL,           NULL,
                                           NULL,           im2col_uint64_t};
    (void)fn;
    (void)dev;
    clt__host_parallel(c->C * (size_t)c->kh * (size_t)c->kw, c->N * c->OH * c->OW * 2,
                       parts[clt_dtype_size(c->dtype) - 1], c);
    return CLT_OK;
}

/* The fused convolution (conv2d) in bands of output rows of one image: each band's columns
 * are made into a buffer of the thread's own and multiplied at once, while they are still in
 * the core's cache, instead of all the columns being written to memory and read back (ResNet-18's
 * first layers' columns are 7 MB an image). A band is at least BAND_COLUMNS columns wide, so
 * that packing the weight for its product costs little beside the product; the convolution
 * takes the path of one product over all the columns instead when such a band's columns would
 * not fit in half the core's second-level cache (the deeper layers: many channels, small
 * images). */
#define BAND_COLUMNS 128

typedef struct conv_bands {
    const char *fn;
    clt_device *dev;
    const clt__conv_call *c;
    size_t k, rows, bands, slots; /* k = C * kh * kw; bands an image, of `rows` output rows */
    char *scratch;                /* slots x k x rows * OW elements */
} conv_bands;

/* Slots [lo, hi): slot s takes bands s, s + slots, ... of all the images, in its own buffer. */
static void conv_band_part(const void *call, size_t lo, size_t hi)
{
    const conv_bands *b = call;
    const clt__conv_call *c = b->c;
    size_t es = clt_dtype_size(c->dtype), L = c->OH * c->OW;
    for (size_t s = lo; s < hi; s++) {
        void *cols = b->scratch + s * b->k * b->rows * c->OW * es;
        for (size_t i = s; i < c->N * b->bands; i += b->slots) {
            size_t n = i / b->bands, oy0 = i % b->bands * b->rows;
            size_t oy1 = oy0 + b->rows < c->OH ? oy0 + b->rows : c->OH,
                   width = (oy1 - oy0) * c->OW;
            if (es == 4)
                im2col_span_uint32_t(c, 0, b->k, n, n + 1, oy0, oy1, cols);
            else
                im2col_span_uint64_t(c, 0, b->k, n, n + 1, oy0, oy1, cols);
            clt__gemm_call g = {.dtype = c->dtype,
                                .m = c->mult,
                                .n = width,
                                .k = b->k,
                                .batch = 1,
                                .alpha = 1,
                                .a = c->weight,
                                .a_offset = c->weight_offset,
                                .lda = b->k,
                                .b = cols,
                                .ldb = width,
                                .c = c->out,
                                .c_offset = c->out_offset + n * c->mult * L + oy0 * c->OW,
                                .ldc = L};
            clt__host_gemm(b->fn, b->dev, &g); /* fits: the sizes are the caller's own */
        }
    }
}

/* Winograd's blocks' transformed tiles and products together, in bytes: the products of a
 * block read what its transform has just written while it is still in the last-level cache
 * (ResNet-18's 3 x 3 layers at batch 16 on a 2-core AMD EPYC ran within 10% of each other from 2
 * to 8 MiB, its first stage's 25% slower at 16 MiB). */
#define WINOGRAD_BUDGET ((size_t)8 << 20)

/* Half the second-level cache of a core, or 256 KiB where the system does not say. */
static size_t band_budget(void)
{
    long l2 = clt__l2_cache_bytes();
    return l2 >= 65536 ? (size_t)l2 / 2 : 256 * 1024;
}

clt_status clt__host_conv2d(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    if (clt__winograd_chosen(c))
        return clt__conv2d_winograd(fn, dev, c, WINOGRAD_BUDGET);
    size_t es = clt_dtype_size(c->dtype), k = c->C * (size_t)c->kh * (size_t)c->kw;
    size_t L = c->OH * c->OW, threads = (size_t)clt_get_num_threads();
    size_t rows = (BAND_COLUMNS + c->OW - 1) / c->OW, budget = band_budget();
    clt_status st;
    if (k * rows * c->OW * es <= budget && rows < c->OH) {
        conv_bands b = {.fn = fn, .dev = dev, .c = c, .k = k};
        b.rows = budget / (k * c->OW * es); /* as wide as the budget allows */
        b.rows = b.rows < c->OH ? b.rows : c->OH;
        b.bands = (c->OH + b.rows - 1) / b.rows;
        b.slots = threads < c->N * b.bands ? threads : c->N * b.bands;
        void *scratch = NULL;
        size_t capacity = 0, bytes = b.slots * k * b.rows * c->OW * es;
        if ((st = clt__scratch_alloc(fn, dev, bytes, &scratch, &capacity)) != CLT_OK)
            return st;
        b.scratch = scratch;
        clt__host_parallel(b.slots, c->N * L * k * c->mult / b.slots / 8 + 1, conv_band_part,
                           &b);
        clt__scratch_free(dev, scratch, capacity);
        return CLT_OK;
    }
    return clt__conv2d_composed(fn, dev, c, false); /* a product an image, in parallel */
}

/* Winograd's stages (clt__winograd_call) in elements of T (float, double): the weight's
 * transform an output channel at a time; the input's and the output's a (channel, tile row) at
 * a time, WINOGRAD_CHUNK tiles of the row at once through buffers on the stack (the patches'
 * rows with their padding made explicit), in loops the compiler vectorises. */
#define WINOGRAD_CHUNK 64

/* Item `item` of the input's or the output's stage: channel item / rows (input or output), tile
 * row item % rows of the block (*r), which is row *ty of image *n. */
static inline size_t winograd_item(const clt__winograd_call *w, size_t item, size_t *r,
                                   size_t *n, size_t *ty)
{
    size_t TH = clt__winograd_tile_rows(w->conv), R = w->row0 + item % w->rows;
    *r = item % w->rows, *n = R / TH, *ty = R % TH;
    return item / w->rows;
}

#define HOST_WINOGRAD(T)                                                                       \
    CLT__SIMD static void winograd_weight_##T(const void *call, size_t lo, size_t hi)          \
    {                                                                                          \
        const clt__winograd_call *w = call;                                                    \
        const clt__conv_call *c = w->conv;                                                     \
        const T *g = (const T *)c->weight + c->weight_offset, half = (T)0.5;                   \
        for (size_t k = lo; k < hi; k++) {                                                     \
            T *u = (T *)w->t + k * 16 * c->C;                                                  \
            for (size_t ch = 0; ch < c->C; ch++) {                                             \
                const T *q = g + (k * c->C + ch) * 9;                                          \
                T t[4][3];                                                                     \
                for (int j = 0; j < 3; j++) { /* G g: the kernel's columns */                  \
                    T a = q[j], b = q[3 + j], d = q[6 + j];                                    \
                    t[0][j] = a;                                                               \
                    t[1][j] = ((a + b) + d) * half;                                            \
                    t[2][j] = ((a - b) + d) * half;                                            \
                    t[3][j] = d;                                                               \
                }                                                                              \
                for (int i = 0; i < 4; i++) { /* (G g) G^T: its rows */                        \
                    T a = t[i][0], b = t[i][1], d = t[i][2];                                   \
                    u[(size_t)(4 * i) * c->C + ch] = a;                                        \
                    u[(size_t)(4 * i + 1) * c->C + ch] = ((a + b) + d) * half;                 \
                    u[(size_t)(4 * i + 2) * c->C + ch] = ((a - b) + d) * half;                 \
                    u[(size_t)(4 * i + 3) * c->C + ch] = d;                                    \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    /* Items (channel, tile row of the block), the rows of a channel together. */              \
    CLT__SIMD static void winograd_input_##T(const void *call, size_t lo, size_t hi)           \
    {                                                                                          \
        const clt__winograd_call *w = call;                                                    \
        const clt__conv_call *c = w->conv;                                                     \
        size_t TW = clt__winograd_tile_cols(c), P = w->rows * TW, r, n, ty;                    \
        T seg[4][2 * WINOGRAD_CHUNK + 2], q[4][2 * WINOGRAD_CHUNK + 2];                        \
        for (size_t item = lo; item < hi; item++) {                                            \
            size_t ch = winograd_item(w, item, &r, &n, &ty);                                   \
            const T *plane = (const T *)c->in + c->in_offset + (n * c->C + ch) * c->H * c->W;  \
            for (size_t tx0 = 0; tx0 < TW; tx0 += WINOGRAD_CHUNK) {                            \
                size_t nt = TW - tx0 < WINOGRAD_CHUNK ? TW - tx0 : WINOGRAD_CHUNK;             \
                long x0 = 2 * (long)tx0 - c->pw, len = 2 * (long)nt + 2;                       \
                for (int i = 0; i < 4; i++) { /* the patches' row i, 0 outside the image */    \
                    long iy = 2 * (long)ty - c->ph + i;                                        \
                    long a = x0 < 0 ? -x0 : 0, b = (long)c->W - x0;                            \
                    b = b < len ? b : len;                                                     \
                    if (iy < 0 || iy >= (long)c->H || b <= a)                                  \
                        a = b = 0;                                                             \
                    for (long j = 0; j < a; j++)                                               \
                        seg[i][j] = 0;                                                         \
                    if (b > a)                                                                 \
                        memcpy(seg[i] + a, plane + iy * (long)c->W + x0 + a,                   \
                               (size_t)(b - a) * sizeof(T));                                   \
                    for (long j = b > a ? b : 0; j < len; j++)                                 \
                        seg[i][j] = 0;                                                         \
                }                                                                              \
                for (long j = 0; j < len; j++) { /* B^T d: the rows combined */                \
                    q[0][j] = seg[0][j] - seg[2][j];                                           \
                    q[1][j] = seg[1][j] + seg[2][j];                                           \
                    q[2][j] = seg[2][j] - seg[1][j];                                           \
                    q[3][j] = seg[1][j] - seg[3][j];                                           \
                }                                                                              \
                for (int i = 0; i < 4; i++) { /* (B^T d) B, row i */                           \
                    T *v0 = (T *)w->t + ((size_t)(4 * i) * c->C + ch) * P + r * TW + tx0;      \
                    T *v1 = v0 + c->C * P, *v2 = v1 + c->C * P, *v3 = v2 + c->C * P;           \
                    const T *qi = q[i];                                                        \
                    for (size_t x = 0; x < nt; x++) {                                          \
                        T d0 = qi[2 * x], d1 = qi[2 * x + 1];                                  \
                        T d2 = qi[2 * x + 2], d3 = qi[2 * x + 3];                              \
                        v0[x] = d0 - d2;                                                       \
                        v1[x] = d1 + d2;                                                       \
                        v2[x] = d2 - d1;                                                       \
                        v3[x] = d1 - d3;                                                       \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    /* Items (output channel, tile row of the block). */                                      \
    CLT__SIMD static void winograd_output_##T(const void *call, size_t lo, size_t hi)          \
    {                                                                                          \
        const clt__winograd_call *w = call;                                                    \
        const clt__conv_call *c = w->conv;                                                     \
        size_t TW = clt__winograd_tile_cols(c), P = w->rows * TW, K = c->mult, r, n, ty;       \
        T o[2][2 * WINOGRAD_CHUNK];                                                            \
        for (size_t item = lo; item < hi; item++) {                                            \
            size_t k = winograd_item(w, item, &r, &n, &ty);                                    \
            T *plane = (T *)c->out + c->out_offset + (n * K + k) * c->OH * c->OW;              \
            for (size_t tx0 = 0; tx0 < TW; tx0 += WINOGRAD_CHUNK) {                            \
                size_t nt = TW - tx0 < WINOGRAD_CHUNK ? TW - tx0 : WINOGRAD_CHUNK;             \
                const T *m[16];                                                                \
                for (int e = 0; e < 16; e++)                                                   \
                    m[e] = (const T *)w->t + ((size_t)e * K + k) * P + r * TW + tx0;           \
                for (size_t x = 0; x < nt; x++) {                                              \
                    T s0[4], s1[4];                                                            \
                    for (int j = 0; j < 4; j++) { /* A^T m */                                  \
                        s0[j] = (m[j][x] + m[4 + j][x]) + m[8 + j][x];                         \
                        s1[j] = (m[4 + j][x] - m[8 + j][x]) - m[12 + j][x];                    \
                    }                                                                          \
                    o[0][2 * x] = (s0[0] + s0[1]) + s0[2]; /* (A^T m) A */                     \
                    o[0][2 * x + 1] = (s0[1] - s0[2]) - s0[3];                                 \
                    o[1][2 * x] = (s1[0] + s1[1]) + s1[2];                                     \
                    o[1][2 * x + 1] = (s1[1] - s1[2]) - s1[3];                                 \
                }                                                                              \
                size_t ox = 2 * tx0, cols = c->OW - ox < 2 * nt ? c->OW - ox : 2 * nt;         \
                for (size_t i = 0; i < 2 && 2 * ty + i < c->OH; i++)                           \
                    memcpy(plane + (2 * ty + i) * c->OW + ox, o[i], cols * sizeof(T));         \
            }                                                                                  \
        }                                                                                      \
    }
HOST_WINOGRAD(float)
HOST_WINOGRAD(double)

clt_status clt__host_winograd(const char *fn, clt_device *dev, const clt__winograd_call *w)
{
    static const clt__host_part parts[2][3] = {
        {winograd_weight_float, winograd_input_float, winograd_output_float},
        {winograd_weight_double, winograd_input_double, winograd_output_double},
    };
    const clt__conv_call *c = w->conv;
    clt__host_part part = parts[c->dtype == CLT_F64][w->stage];
    size_t TW = clt__winograd_tile_cols(c);
    (void)fn;
    (void)dev;
    if (w->stage == CLT_WINOGRAD_WEIGHT)
        clt__host_parallel(c->mult, 25 * c->C, part, w);
    else
        clt__host_parallel((w->stage == CLT_WINOGRAD_INPUT ? c->C : c->mult) * w->rows,
                           20 * TW, part, w);
    return CLT_OK;
}

/* For the adjoints' gathers: the output row (column) that tap y (x) of a window reads input
 * row h (column w) from, clt_window_at for every h < H and y < kh (w < W, x < kw), when that
 * fits; else window_y and window_x compute it. */
#define WINDOW_TABLE_MAX 512
typedef struct window_tables {
    bool has_y, has_x;
    long y[WINDOW_TABLE_MAX], x[WINDOW_TABLE_MAX];
} window_tables;

static void window_tables_make(window_tables *t, const clt__conv_call *c)
{
    t->has_y = c->H * (size_t)c->kh <= WINDOW_TABLE_MAX;
    t->has_x = c->W * (size_t)c->kw <= WINDOW_TABLE_MAX;
    for (size_t h = 0; t->has_y && h < c->H; h++)
        for (int y = 0; y < c->kh; y++)
            t->y[h * (size_t)c->kh + (size_t)y] =
                clt_window_at((long)h, y, c->sh, c->ph, c->dh, c->OH);
    for (size_t w = 0; t->has_x && w < c->W; w++)
        for (int x = 0; x < c->kw; x++)
            t->x[w * (size_t)c->kw + (size_t)x] =
                clt_window_at((long)w, x, c->sw, c->pw, c->dw, c->OW);
}

/* An average window's divisor counting the padding: its taps inside the padded image, kh * kw
 * but where ceil mode lets the last window run past the padding. */
static inline long padded_taps(const clt__conv_call *c, long oy, long ox)
{
    return clt_window_taps_inside(oy, c->kh, c->sh, 0, c->dh, c->H + 2 * (size_t)c->ph) *
           clt_window_taps_inside(ox, c->kw, c->sw, 0, c->dw, c->W + 2 * (size_t)c->pw);
}

static inline long window_y(const window_tables *t, const clt__conv_call *c, long h, int y)
{
    return t->has_y ? t->y[h * c->kh + y] : clt_window_at(h, y, c->sh, c->ph, c->dh, c->OH);
}

static inline long window_x(const window_tables *t, const clt__conv_call *c, long w, int x)
{
    return t->has_x ? t->x[w * c->kw + x] : clt_window_at(w, x, c->sw, c->pw, c->dw, c->OW);
}

/* The taps of a window. */
#define TAPS(c) ((size_t)(c)->kh * (size_t)(c)->kw)
#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define STORE(v) CLT_CAT(CLT_CAT(CLT_CAT(clt_, KIND), _to_), DT)(v)

/* Pooling over image planes [lo, hi) of N * C, each output element as the OpenCL kernel
 * computes it (the taps in the same order). Max pooling writes the indices where arg is set.
 * The output columns whose taps all lie inside the image's columns go in blocks of POOL_BLOCK,
 * tap after tap over the block (loops the compiler vectorises), with the index of each column's
 * best tap where indices are written; the others one at a time. Rows of fewer than POOL_NARROW
 * outputs, whose blocks would be all set-up (a training step's 2 x 2 pooling of 8 x 8 images
 * spent 22% of its time there), take the outputs whose window lies inside the image from
 * several rows at once (pool_gather), through tables of the windows' and the taps' offsets. */
#define POOL_BLOCK 256
#define POOL_NARROW 16
#define POOL_TABLE 64
#define HOST_POOL                                                                              \
    /* Outputs j < n whose windows lie inside the image, window j starting at plane[org[j]]  \
     * and written to out[dst[j]] (its index to arg[dst[j]]), the taps at offsets offs[t] from \
     * there for t < taps (row-major), without a branch on the data: a tap at a time over all  \
     * n outputs (vectorised, with gathers), each output's taps still in order. */             \
    CLT__SIMD static void CLT_CAT(pool_gather_, DT)(const clt__conv_call *c, const ST *plane,  \
                                                    const int32_t *org, const long *dst,       \
                                                    size_t n, const int32_t *offs, int taps,   \
                                                    ST *out, int64_t *arg)                     \
    {                                                                                          \
        CT best[POOL_BLOCK];                                                                   \
        int32_t at[POOL_BLOCK];                                                                \
        for (size_t j = 0; j < n; j++) {                                                       \
            at[j] = org[j] + offs[0];                                                          \
            best[j] = (CT)0 + LOAD(plane[at[j]]);                                              \
        }                                                                                      \
        if (!c->is_max) {                                                                      \
            for (int t = 1; t < taps; t++)                                                     \
                for (size_t j = 0; j < n; j++)                                                 \
                    best[j] += LOAD(plane[org[j] + offs[t]]);                                  \
            for (size_t j = 0; j < n; j++)                                                     \
                out[dst[j]] = STORE(best[j] / (CT)taps);                                       \
            return;                                                                            \
        }                                                                                      \
        for (int t = 1; t < taps; t++)                                                         \
            for (size_t j = 0; j < n; j++) {                                                   \
                int32_t o = org[j] + offs[t];                                                  \
                CT v = LOAD(plane[o]);                                                         \
                bool beats = (v > best[j]) | ((v != v) & (best[j] == best[j]));                \
                best[j] = beats ? v : best[j];                                                 \
                at[j] = beats ? o : at[j];                                                     \
            }                                                                                  \
        for (size_t j = 0; j < n; j++)                                                         \
            out[dst[j]] = STORE(best[j]);                                                      \
        for (size_t j = 0; arg && j < n; j++)                                                  \
            arg[dst[j]] = at[j];                                                               \
    }                                                                                          \
    static void CLT_CAT(pool_at_, DT)(const clt__conv_call *c, const ST *plane, size_t oy,     \
                                      size_t ox, ST *out, int64_t *arg)                        \
    {                                                                                          \
        CT best = 0, sum = 0;                                                                  \
        long best_at = -1, inside = 0;                                                         \
        FOR_WINDOW_TAPS(c, oy, ox, {                                                           \
            CT v = LOAD(plane[iy * (long)c->W + ix]);                                          \
            inside++;                                                                          \
            sum += v;                                                                          \
            if (best_at < 0 || v > best || (v != v && best == best)) {                         \
                best = v;                                                                      \
                best_at = iy * (long)c->W + ix;                                                \
            }                                                                                  \
        });                                                                                    \
        if (c->is_max) {                                                                       \
            *out = STORE(best_at < 0 ? -INFINITY : best);                                      \
            if (arg)                                                                           \
                *arg = best_at;                                                                \
        } else {                                                                               \
            long count = c->count_pad ? padded_taps(c, (long)oy, (long)ox) : inside;           \
            *out = STORE(sum / (CT)count);                                                     \
        }                                                                                      \
    }                                                                                          \
    /* Columns [x0, x0 + n) of output row oy, every tap of which lies inside the columns; with \
     * arg (max pooling), each one's index into the plane as well: a tap replaces the best so  \
     * far when it is larger, or NaN over a number, so the first of equal ones stays. */       \
    CLT__SIMD static void CLT_CAT(pool_block_, DT)(const clt__conv_call *c, const ST *plane,   \
                                                   size_t oy, size_t x0, size_t n, ST *out,    \
                                                   int64_t *arg)                               \
    {                                                                                          \
        CT acc[POOL_BLOCK];                                                                    \
        long rows = 0;                                                                         \
        for (size_t j = 0; j < n && !c->is_max; j++)                                           \
            acc[j] = 0;                                                                        \
        long y0 = (long)oy * c->sh - c->ph;                                                    \
        for (long y = clt_window_tap_lo(y0, c->dh),                                            \
                  yb = clt_window_tap_hi(y0, c->kh, c->dh, (long)c->H);                        \
             y < yb; y++) {                                                                    \
            long iy = y0 + y * c->dh;                                                          \
            for (int x = 0; x < c->kw; x++) {                                                  \
                long at = iy * (long)c->W + (long)x0 * c->sw - c->pw + (long)x * c->dw;        \
                const ST *src = plane + at;                                                    \
                long sw = c->sw;                                                               \
                if (c->is_max && rows == 0 && x == 0) { /* the first tap: the best so far */   \
                    for (size_t j = 0; j < n; j++)                                             \
                        acc[j] = LOAD(src[(long)j * sw]);                                      \
                    for (size_t j = 0; arg && j < n; j++)                                      \
                        arg[j] = at + (long)j * sw;                                            \
                } else if (c->is_max && arg) {                                                 \
                    for (size_t j = 0; j < n; j++) {                                           \
                        CT v = LOAD(src[(long)j * sw]);                                        \
                        bool beats = v > acc[j] || (v != v && acc[j] == acc[j]);               \
                        acc[j] = beats ? v : acc[j];                                           \
                        arg[j] = beats ? at + (long)j * sw : arg[j];                           \
                    }                                                                          \
                } else if (c->is_max)                                                          \
                    for (size_t j = 0; j < n; j++) {                                           \
                        CT v = LOAD(src[(long)j * sw]);                                        \
                        acc[j] = v > acc[j] || (v != v && acc[j] == acc[j]) ? v : acc[j];      \
                    }                                                                          \
                else                                                                           \
                    for (size_t j = 0; j < n; j++)                                             \
                        acc[j] += LOAD(src[(long)j * sw]);                                     \
            }                                                                                  \
            rows++;                                                                            \
        }                                                                                      \
        for (size_t j = 0; j < n; j++) {                                                       \
            long count =                                                                       \
                c->count_pad ? padded_taps(c, (long)oy, (long)(x0 + j)) : rows * c->kw;        \
            out[j] = STORE(!c->is_max ? acc[j] / (CT)count : rows ? acc[j] : (CT)-INFINITY);   \
        }                                                                                      \
        for (size_t j = 0; arg && !rows && j < n; j++)                                         \
            arg[j] = -1; /* no tap inside the image */                                         \
    }                                                                                          \
    static void CLT_CAT(pool_, DT)(const void *call, size_t lo, size_t hi)                     \
    {                                                                                          \
        const clt__conv_call *c = call;                                                        \
        size_t per = c->OH * c->OW;                                                            \
        /* the output columns whose taps all lie inside: [in_lo, in_hi) */                     \
        long reach = (long)c->W - 1 + c->pw - (long)(c->kw - 1) * c->dw;                       \
        size_t in_lo = (size_t)(((long)c->pw + c->sw - 1) / c->sw);                            \
        size_t in_hi = reach < 0 ? 0 : (size_t)(reach / c->sw + 1);                            \
        in_hi = in_hi < c->OW ? in_hi : c->OW;                                                 \
        if (in_hi <= in_lo)                                                                    \
            in_lo = in_hi = c->OW;                                                             \
        int32_t offs[POOL_TABLE], org[POOL_BLOCK];                                             \
        long dst[POOL_BLOCK];                                                                  \
        long taps = (long)c->kh * c->kw;                                                       \
        bool narrow = c->OW < POOL_NARROW && taps <= POOL_TABLE &&                             \
                      c->H * c->W <= INT32_MAX; /* int32_t offsets */                          \
        for (int t = 0; narrow && t < taps; t++)                                               \
            offs[t] = (int32_t)((long)(t / c->kw) * c->dh * (long)c->W + (long)(t % c->kw) * c->dw); \
        for (size_t nc = lo; nc < hi; nc++) {                                                  \
            const ST *plane = (const ST *)c->in + c->in_offset + nc * c->H * c->W;             \
            ST *out = (ST *)c->out + c->out_offset + nc * per;                                 \
            int64_t *arg = c->arg ? (int64_t *)c->arg + c->arg_offset + nc * per : NULL;       \
            size_t n = 0; /* the narrow rows' inside outputs gathered so far */                \
            for (size_t oy = 0; oy < c->OH; oy++) {                                            \
                long y0 = (long)oy * c->sh - c->ph; /* the window's first row */               \
                bool table = narrow && y0 >= 0 && y0 + (long)(c->kh - 1) * c->dh < (long)c->H; \
                for (size_t ox = 0; ox < in_lo; ox++)                                          \
                    CLT_CAT(pool_at_, DT)                                                      \
                    (c, plane, oy, ox, out + oy * c->OW + ox,                                  \
                     arg ? arg + oy * c->OW + ox : NULL);                                      \
                for (size_t ox = in_lo; table && ox < in_hi; ox++, n++) {                      \
                    org[n] = (int32_t)(y0 * (long)c->W + (long)ox * c->sw - c->pw);            \
                    dst[n] = (long)(oy * c->OW + ox);                                          \
                }                                                                              \
                if (n && (n + POOL_NARROW > POOL_BLOCK || oy + 1 == c->OH)) {                  \
                    CLT_CAT(pool_gather_, DT)(c, plane, org, dst, n, offs, (int)taps, out, arg); \
                    n = 0;                                                                     \
                }                                                                              \
                for (size_t x0 = in_lo; !table && x0 < in_hi; x0 += POOL_BLOCK) {              \
                    size_t len = in_hi - x0 < POOL_BLOCK ? in_hi - x0 : POOL_BLOCK;            \
                    CLT_CAT(pool_block_, DT)                                                   \
                    (c, plane, oy, x0, len, out + oy * c->OW + x0,                             \
                     arg ? arg + oy * c->OW + x0 : NULL);                                      \
                }                                                                              \
                for (size_t ox = in_hi; ox < c->OW; ox++)                                      \
                    CLT_CAT(pool_at_, DT)                                                      \
                    (c, plane, oy, ox, out + oy * c->OW + ox,                                  \
                     arg ? arg + oy * c->OW + ox : NULL);                                      \
            }                                                                                  \
        }                                                                                      \
    }

/* Outputs o[0 .. n) of a 3 x 3 depthwise convolution from input rows r0, r1, r2 (at output
 * column 0's first tap) at column step S and tap spacing D, the nine taps in t0 ... t8: constant
 * S and D let the compiler vectorise the loop. */
#define DEPTHWISE3_RUN(S, D)                                                                   \
    do {                                                                                       \
        for (size_t j = 0; j < n; j++) {                                                       \
            size_t x = j * (S);                                                                \
            CT sum = 0;                                                                        \
            sum += t0 * LOAD(r0[x]), sum += t1 * LOAD(r0[x + (D)]);                            \
            sum += t2 * LOAD(r0[x + 2 * (D)]);                                                 \
            sum += t3 * LOAD(r1[x]), sum += t4 * LOAD(r1[x + (D)]);                            \
            sum += t5 * LOAD(r1[x + 2 * (D)]);                                                 \
            sum += t6 * LOAD(r2[x]), sum += t7 * LOAD(r2[x + (D)]);                            \
            sum += t8 * LOAD(r2[x + 2 * (D)]);                                                 \
            o[j] = STORE(sum);                                                                 \
        }                                                                                      \
    } while (0)

/* HOST_DEPTHWISE3: depthwise_at_<DT>, one output of a depthwise convolution (its taps in order,
 * those outside the image skipped), and depthwise3x3_<DT>, 3 x 3 depthwise convolution over
 * output planes [lo, hi) at any stride and dilation: in the output rows whose three tap rows lie
 * inside the image, the columns whose three taps do too go in one loop with the nine taps in
 * registers (at strides 1 and 2 with constant steps, which compilers vectorise), every other
 * output by depthwise_at; the same sums in the same order as the general path below. */
#define HOST_DEPTHWISE3                                                                        \
    static inline CT CLT_CAT(depthwise_at_, DT)(const clt__conv_call *c, const ST *plane,      \
                                                const ST *taps, size_t oy, size_t ox)          \
    {                                                                                          \
        CT sum = 0;                                                                            \
        FOR_WINDOW_TAPS(c, oy, ox,                                                             \
                        sum += LOAD(taps[y * c->kw + x]) *                                     \
                               LOAD(plane[(size_t)iy * c->W + (size_t)ix]));                   \
        return sum;                                                                            \
    }                                                                                          \
    CLT__SIMD static void CLT_CAT(depthwise3x3_, DT)(const clt__conv_call *c, size_t lo,       \
                                                     size_t hi)                                \
    {                                                                                          \
        const ST *in = (const ST *)c->in + c->in_offset;                                       \
        const ST *weight = (const ST *)c->weight + c->weight_offset;                           \
        ST *out = (ST *)c->out + c->out_offset;                                                \
        size_t O = c->C * c->mult, OW = c->OW, W = c->W;                                       \
        long sw = c->sw, dw = c->dw, reach = (long)W - 1 - 2 * dw + c->pw;                     \
        size_t in_lo = (size_t)((c->pw + sw - 1) / sw),                                        \
               in_hi = reach < 0 ? 0 : (size_t)(reach / sw + 1);                               \
        in_lo = in_lo < OW ? in_lo : OW;                                                       \
        in_hi = in_hi < OW ? in_hi : OW;                                                       \
        in_hi = in_hi > in_lo ? in_hi : in_lo;                                                 \
        for (size_t no = lo; no < hi; no++) {                                                  \
            const ST *plane = in + ((no / O) * c->C + (no % O) / c->mult) * c->H * W;          \
            const ST *taps = weight + (no % O) * 9;                                            \
            CT t0 = LOAD(taps[0]), t1 = LOAD(taps[1]), t2 = LOAD(taps[2]),                     \
               t3 = LOAD(taps[3]);                                                             \
            CT t4 = LOAD(taps[4]), t5 = LOAD(taps[5]), t6 = LOAD(taps[6]),                     \
               t7 = LOAD(taps[7]);                                                             \
            CT t8 = LOAD(taps[8]);                                                             \
            for (size_t oy = 0; oy < c->OH; oy++) {                                            \
                ST *dst = out + (no * c->OH + oy) * OW;                                        \
                long y0 = (long)oy * c->sh - c->ph;                                            \
                bool rows = y0 >= 0 && y0 + 2L * c->dh < (long)c->H;                           \
                size_t a = rows ? in_lo : OW, b = rows ? in_hi : OW;                           \
                for (size_t ox = 0; ox < a; ox++)                                              \
                    dst[ox] = STORE(CLT_CAT(depthwise_at_, DT)(c, plane, taps, oy, ox));       \
                if (a < b) {                                                                   \
                    const ST *r0 = plane + (size_t)y0 * W + (size_t)((long)a * sw - c->pw);    \
                    const ST *r1 = r0 + (size_t)c->dh * W, *r2 = r1 + (size_t)c->dh * W;       \
                    ST *o = dst + a;                                                           \
                    size_t n = b - a;                                                          \
                    if (sw == 1 && dw == 1)                                                    \
                        DEPTHWISE3_RUN(1, 1);                                                  \
                    else if (sw == 2 && dw == 1)                                               \
                        DEPTHWISE3_RUN(2, 1);                                                  \
                    else                                                                       \
                        DEPTHWISE3_RUN((size_t)sw, (size_t)dw);                                \
                }                                                                              \
                for (size_t ox = b; ox < OW; ox++)                                             \
                    dst[ox] = STORE(CLT_CAT(depthwise_at_, DT)(c, plane, taps, oy, ox));       \
            }                                                                                  \
        }                                                                                      \
    }

/* Depthwise convolution (3 x 3 windows by depthwise3x3) over output planes [lo, hi) of
 * N * C * mult, in blocks of up to DEPTHWISE_BLOCK output columns, each block of a row
 * accumulated tap after tap (the OpenCL kernel's order for every element) over the columns whose
 * tap lies inside the image: a unit-stride loop the compiler vectorises. At stride 1 in f32 and
 * f64, the columns whose every tap lies inside (when there are DEPTHWISE_LANES of them) go
 * DEPTHWISE_LANES at a time with
 * their sums in registers over all the taps (the same sums in the same order; the last block
 * overlaps the one before it), the columns left one at a time. */
#define DEPTHWISE_BLOCK 256
#define DEPTHWISE_TAPS 16
#define DEPTHWISE_LANES 16
#if CLT__VEC_EXT
/* Columns [from, to) of output row oy into dst (to - from at least DEPTHWISE_LANES): blocks of
 * DEPTHWISE_LANES sums in a vector each, two blocks at a time (two chains of additions in
 * flight); the last block ends at `to`, overlapping the one before it, and with an odd count
 * the last pair takes that block twice. */
#define DEPTHWISE_REGISTERS(from, to)                                                          \
    do {                                                                                       \
        typedef CT lanes_t __attribute__((vector_size(DEPTHWISE_LANES * sizeof(CT))));         \
        long blocks_ = ((to) - (from) + DEPTHWISE_LANES - 1) / DEPTHWISE_LANES;                \
        for (long b_ = 0; b_ < blocks_; b_ += 2) {                                             \
            long j0 = (from) + b_ * DEPTHWISE_LANES, j1 = j0 + DEPTHWISE_LANES;                \
            j0 = j0 < (to)-DEPTHWISE_LANES ? j0 : (to)-DEPTHWISE_LANES;                        \
            j1 = j1 < (to)-DEPTHWISE_LANES ? j1 : (to)-DEPTHWISE_LANES;                        \
            lanes_t a0 = {0}, a1 = {0};                                                        \
            for (int y = 0; y < c->kh; y++) {                                                  \
                long iy = window_row(c, oy, y);                                                \
                if (iy < 0)                                                                    \
                    continue;                                                                  \
                const ST *row = plane + (size_t)iy * c->W;                                     \
                for (int x = 0; x < c->kw; x++) {                                              \
                    lanes_t v0, v1;                                                            \
                    CT w = (CT)taps[y * c->kw + x];                                            \
                    memcpy(&v0, row + spans[x].b + j0, sizeof v0);                             \
                    memcpy(&v1, row + spans[x].b + j1, sizeof v1);                             \
                    a0 += w * v0;                                                              \
                    a1 += w * v1;                                                              \
                }                                                                              \
            }                                                                                  \
            memcpy(dst + j0, &a0, sizeof a0); /* ST is CT here */                              \
            memcpy(dst + j1, &a1, sizeof a1);                                                  \
        }                                                                                      \
    } while (0)
#else
#define DEPTHWISE_REGISTERS(from, to) (void)0
#endif
#define HOST_DEPTHWISE                                                                          \
    HOST_DEPTHWISE3                                                                             \
    CLT__SIMD static void CLT_CAT(depthwise_, DT)(const void *call, size_t lo, size_t hi)       \
    {                                                                                           \
        const clt__conv_call *c = call;                                                         \
        if (c->kh == 3 && c->kw == 3) {                                                         \
            CLT_CAT(depthwise3x3_, DT)(c, lo, hi);                                              \
            return;                                                                             \
        }                                                                                       \
        const ST *in = (const ST *)c->in + c->in_offset;                                        \
        const ST *weight = (const ST *)c->weight + c->weight_offset;                            \
        ST *out = (ST *)c->out + c->out_offset;                                                 \
        size_t O = c->C * c->mult, OW = c->OW, kk = (size_t)c->kh * (size_t)c->kw;              \
        bool tabled = c->kw <= DEPTHWISE_TAPS;                                                  \
        bool lanes = CLT__VEC_EXT && tabled && c->sw == 1 && sizeof(ST) == sizeof(CT);          \
        tap_span spans[DEPTHWISE_TAPS], t;                                                      \
        CT acc[DEPTHWISE_BLOCK];                                                                \
        for (size_t x0 = 0; x0 < OW; x0 += DEPTHWISE_BLOCK) {                                   \
            size_t n = OW - x0 < DEPTHWISE_BLOCK ? OW - x0 : DEPTHWISE_BLOCK;                   \
            long in_lo = 0, in_hi = (long)n; /* the columns every tap of which lies inside */   \
            for (int x = 0; tabled && x < c->kw; x++) {                                         \
                tap_span_make(c, x, x0, n, &spans[x]);                                          \
                in_lo = spans[x].lo > in_lo ? spans[x].lo : in_lo;                              \
                in_hi = spans[x].hi < in_hi ? spans[x].hi : in_hi;                              \
            }                                                                                   \
            /* columns [in_lo, vec_hi) go in registers */                                       \
            long vec_hi = lanes && in_hi - in_lo >= DEPTHWISE_LANES ? in_hi : in_lo;            \
            for (size_t no = lo; no < hi; no++) {                                               \
                const ST *plane = in + ((no / O) * c->C + (no % O) / c->mult) * c->H * c->W;    \
                const ST *taps = weight + (no % O) * kk;                                        \
                for (size_t oy = 0; oy < c->OH; oy++) {                                         \
                    ST *dst = out + (no * c->OH + oy) * OW + x0;                                \
                    if (vec_hi > in_lo) { /* inner columns in registers, the rest one by one */ \
                        DEPTHWISE_REGISTERS(in_lo, vec_hi);                                     \
                        for (long j = in_lo ? 0 : vec_hi; j < (long)n;                          \
                             j = j + 1 == in_lo ? vec_hi : j + 1) {                             \
                            CT sum = 0;                                                         \
                            for (int y = 0; y < c->kh; y++) {                                   \
                                long iy = window_row(c, oy, y);                                \
                                if (iy < 0)                                                    \
                                    continue;                                                  \
                                const ST *row = plane + (size_t)iy * c->W;                      \
                                for (int x = 0; x < c->kw; x++)                                 \
                                    if (j >= spans[x].lo && j < spans[x].hi)                    \
                                        sum += LOAD(taps[y * c->kw + x]) *                      \
                                               LOAD(row[spans[x].b + j]);                       \
                            }                                                                   \
                            dst[j] = STORE(sum);                                                \
                        }                                                                       \
                        continue;                                                               \
                    }                                                                           \
                    for (size_t j = 0; j < n; j++)                                              \
                        acc[j] = 0;                                                             \
                    for (int y = 0; y < c->kh; y++) {                                           \
                        long iy = window_row(c, oy, y);                                        \
                        if (iy < 0)                                                            \
                            continue;                                                          \
                        const ST *row = plane + (size_t)iy * c->W;                              \
                        for (int x = 0; x < c->kw; x++) {                                       \
                            CT w = LOAD(taps[y * c->kw + x]);                                   \
                            if (tabled)                                                         \
                                t = spans[x];                                                   \
                            else                                                                \
                                tap_span_make(c, x, x0, n, &t);                                 \
                            if (c->sw == 1)                                                     \
                                for (long j = t.lo; j < t.hi; j++)                              \
                                    acc[j] += w * LOAD(row[t.b + j]);                           \
                            else                                                                \
                                for (long j = t.lo; j < t.hi; j++)                              \
                                    acc[j] += w * LOAD(row[t.b + j * c->sw]);                   \
                        }                                                                       \
                    }                                                                           \
                    for (size_t j = 0; j < n; j++)                                              \
                        dst[j] = STORE(acc[j]);                                                 \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }

/* The adjoints, as gathers in the order of the OpenCL kernels (so both give the same sums).
 * Loops run over (image and channel, h, w) with the output position each tap reads from taken
 * from a table (window_table) when it fits. col2im over narrow images (W < IM2COL_NARROW, as
 * im2col's) goes COL2IM_ENTRIES taps and positions at a time instead, each tap of each
 * position's window a column offset in a table with whether it lies in the image, the same for
 * every image and channel: the sums of every position in that order, with a zero added where
 * the tap lies outside, which changes no sum (they start at +0, which x + 0 keeps), and without
 * a branch (vectorised): a branch a tap spent most of the time of 8 x 8 images. */
#define COL2IM_ENTRIES 2048
#define HOST_COL2IM                                                                            \
    static CLT__SIMD void CLT_CAT(col2im_sums_, DT)(const ST *restrict rows, size_t tap,       \
                                                    size_t taps, size_t len,                   \
                                                    const int32_t *restrict at,                \
                                                    const bool *restrict inside,               \
                                                    ST *restrict out)                          \
    {                                                                                          \
        CT acc[COL2IM_ENTRIES];                                                                \
        for (size_t p = 0; p < len; p++)                                                       \
            acc[p] = 0;                                                                        \
        for (size_t t = 0; t < taps; t++, at += len, inside += len) {                          \
            const ST *r = rows + t * tap;                                                      \
            for (size_t p = 0; p < len; p++) {                                                 \
                CT v = LOAD(r[at[p]]);                                                         \
                acc[p] += inside[p] ? v : (CT)0;                                               \
            }                                                                                  \
        }                                                                                      \
        for (size_t p = 0; p < len; p++)                                                       \
            out[p] = STORE(acc[p]);                                                            \
    }                                                                                          \
    static void CLT_CAT(col2im_narrow_, DT)(const clt__conv_call *c, size_t lo, size_t hi)     \
    {                                                                                          \
        size_t cols = c->OH * c->OW, tap = c->N * cols, taps = TAPS(c), HW = c->H * c->W;      \
        size_t chunk = COL2IM_ENTRIES / taps;                                                  \
        int32_t at[COL2IM_ENTRIES];                                                            \
        bool inside[COL2IM_ENTRIES];                                                           \
        for (size_t p0 = 0; p0 < HW; p0 += chunk) {                                            \
            size_t len = HW - p0 < chunk ? HW - p0 : chunk;                                    \
            for (size_t t = 0; t < taps; t++)                                                  \
                for (size_t p = 0; p < len; p++) {                                             \
                    long h = (long)((p0 + p) / c->W), w = (long)((p0 + p) % c->W);             \
                    long oy = clt_window_at(h, (int)(t / (size_t)c->kw), c->sh, c->ph, c->dh,  \
                                            c->OH);                                            \
                    long ox = clt_window_at(w, (int)(t % (size_t)c->kw), c->sw, c->pw, c->dw,  \
                                            c->OW);                                            \
                    inside[t * len + p] = oy >= 0 && ox >= 0;                                  \
                    at[t * len + p] = oy >= 0 && ox >= 0 ? (int32_t)(oy * (long)c->OW + ox)    \
                                                         : 0;                                  \
                }                                                                              \
            for (size_t nc = lo; nc < hi; nc++) {                                              \
                size_t n = nc / c->C, ch = nc % c->C;                                          \
                const ST *rows =                                                               \
                    (const ST *)c->in + c->in_offset + (ch * taps * c->N + n) * cols;          \
                CLT_CAT(col2im_sums_, DT)(rows, tap, taps, len, at, inside,                    \
                                          (ST *)c->out + c->out_offset + nc * HW + p0);        \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void CLT_CAT(col2im_, DT)(const void *call, size_t lo, size_t hi)                   \
    {                                                                                          \
        const clt__conv_call *c = call;                                                        \
        if (c->W < IM2COL_NARROW && TAPS(c) <= COL2IM_ENTRIES &&                               \
            c->OH * c->OW <= INT32_MAX) {                                                      \
            CLT_CAT(col2im_narrow_, DT)(c, lo, hi);                                            \
            return;                                                                            \
        }                                                                                      \
        size_t cols = c->OH * c->OW, tap = c->N * cols;                                        \
        ST *out = (ST *)c->out + c->out_offset + lo * c->H * c->W;                             \
        window_tables t;                                                                       \
        window_tables_make(&t, c);                                                             \
        for (size_t nc = lo; nc < hi; nc++) {                                                  \
            size_t n = nc / c->C, ch = nc % c->C;                                              \
            const ST *rows = (const ST *)c->in + c->in_offset +                                \
                             (ch * ((size_t)c->kh * (size_t)c->kw) * c->N + n) * cols;         \
            for (long h = 0; h < (long)c->H; h++)                                              \
                for (long w = 0; w < (long)c->W; w++) {                                        \
                    CT sum = 0;                                                                \
                    for (int y = 0; y < c->kh; y++) {                                          \
                        long oy = window_y(&t, c, h, y);                                       \
                        for (int x = 0; oy >= 0 && x < c->kw; x++) {                           \
                            long ox = window_x(&t, c, w, x);                                   \
                            if (ox >= 0)                                                       \
                                sum += LOAD(rows[((size_t)y * c->kw + (size_t)x) * tap +       \
                                                 (size_t)(oy * (long)c->OW + ox)]);            \
                        }                                                                      \
                    }                                                                          \
                    *out++ = STORE(sum);                                                       \
                }                                                                              \
        }                                                                                      \
    }

#define HOST_POOL_BACKWARD                                                                     \
    static void CLT_CAT(pool_backward_, DT)(const void *call, size_t lo, size_t hi)            \
    {                                                                                          \
        const clt__conv_call *c = call;                                                        \
        const ST *in = (const ST *)c->in + c->in_offset;                                       \
        const int64_t *arg = c->arg ? (const int64_t *)c->arg + c->arg_offset : NULL;          \
        ST *out = (ST *)c->out + c->out_offset + lo * c->H * c->W;                             \
        size_t per = c->OH * c->OW, HW = c->H * c->W;                                          \
        if (c->is_max && clt__windows_apart(c)) {                                              \
            for (size_t nc = lo; nc < hi; nc++, out += HW) {                                   \
                for (size_t i = 0; i < HW; i++)                                                \
                    out[i] = STORE((CT)0);                                                     \
                for (size_t o = nc * per; o < (nc + 1) * per; o++)                             \
                    if (arg[o] >= 0 && (size_t)arg[o] < HW)                                    \
                        out[arg[o]] = STORE((CT)0 + LOAD(in[o]));                              \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        window_tables t;                                                                       \
        window_tables_make(&t, c);                                                             \
        for (size_t nc = lo; nc < hi; nc++) {                                                  \
            size_t plane = nc * c->OH * c->OW;                                                 \
            for (long h = 0; h < (long)c->H; h++)                                              \
                for (long w = 0; w < (long)c->W; w++) {                                        \
                    CT sum = 0;                                                                \
                    long y_hi = clt_window_reach_hi(h, c->ph, c->dh, c->kh);                   \
                    long x_lo = clt_window_reach_lo(w, c->pw, c->dw, c->sw, c->OW);            \
                    long x_hi = clt_window_reach_hi(w, c->pw, c->dw, c->kw);                   \
                    for (int y = (int)clt_window_reach_lo(h, c->ph, c->dh, c->sh, c->OH);      \
                         y < y_hi; y++) {                                                      \
                        long oy = window_y(&t, c, h, y);                                       \
                        long rows = oy < 0 ? c->kh                                             \
                                    : c->count_pad                                             \
                                        ? clt_window_taps_inside(oy, c->kh, c->sh, 0, c->dh,   \
                                                                 c->H + 2 * (size_t)c->ph)     \
                                        : clt_window_taps_inside(oy, c->kh, c->sh, c->ph,      \
                                                                 c->dh, c->H);                 \
                        for (int x = (int)x_lo; oy >= 0 && x < x_hi; x++) {                    \
                            long ox = window_x(&t, c, w, x);                                   \
                            if (ox < 0)                                                        \
                                continue;                                                      \
                            size_t o = plane + (size_t)(oy * (long)c->OW + ox);                \
                            if (c->is_max) {                                                   \
                                if (arg[o] == h * (long)c->W + w)                              \
                                    sum += LOAD(in[o]);                                        \
                            } else {                                                           \
                                long cols =                                                    \
                                    c->count_pad                                               \
                                        ? clt_window_taps_inside(ox, c->kw, c->sw, 0, c->dw,   \
                                                                 c->W + 2 * (size_t)c->pw)     \
                                        : clt_window_taps_inside(ox, c->kw, c->sw, c->pw,      \
                                                                 c->dw, c->W);                 \
                                sum += LOAD(in[o]) / (CT)(rows * cols);                        \
                            }                                                                  \
                        }                                                                      \
                    }                                                                          \
                    *out++ = STORE(sum);                                                       \
                }                                                                              \
        }                                                                                      \
    }

#define HOST_INDEX_ADD                                                                         \
    static void CLT_CAT(index_add_, DT)(const void *call, size_t lo, size_t hi)                \
    {                                                                                          \
        const clt__index_add_call *c = call;                                                   \
        const int64_t *starts = (const int64_t *)c->starts + c->starts_offset;                 \
        const int64_t *order = (const int64_t *)c->order + c->order_offset;                    \
        ST *out = (ST *)c->out + c->out_offset;                                                \
        for (size_t i = lo; i < hi; i++) {                                                     \
            size_t b = i % c->B, k = (i / c->B) % c->K, a = i / (c->B * c->K);                 \
            const ST *col = (const ST *)c->src + c->src_offset + a * c->M * c->B + b;          \
            CT sum = 0;                                                                        \
            for (int64_t p = starts[k]; p < starts[k + 1]; p++)                                \
                sum += LOAD(col[(size_t)order[p] * c->B]);                                     \
            out[i] = STORE(sum);                                                               \
        }                                                                                      \
    }

/* Attention as cl/attention.cl computes it, one query row at a time: the same sums in the
 * same order. */
#define HOST_ATTENTION                                                                         \
    static CT CLT_CAT(score_, DT)(const ST *qr, const ST *kj, const ST *mr, size_t j,          \
                                  size_t E, CT scale)                                          \
    {                                                                                          \
        CT s = 0;                                                                              \
        for (size_t e = 0; e < E; e++)                                                         \
            s += LOAD(qr[e]) * LOAD(kj[e]);                                                    \
        s *= scale;                                                                            \
        if (mr)                                                                                \
            s += LOAD(mr[j]);                                                                  \
        return s;                                                                              \
    }                                                                                          \
    static void CLT_CAT(attention_, DT)(const void *call, size_t lo, size_t hi)                \
    {                                                                                          \
        const clt__attention_call *c = call;                                                   \
        const CT scale = (CT)c->scale;                                                         \
        for (size_t r = lo; r < hi; r++) {                                                     \
            size_t b = r / c->L, i = r % c->L;                                                 \
            size_t end = c->causal ? (i + 1 < c->S ? i + 1 : c->S) : c->S;                     \
            const ST *qr = (const ST *)c->q + c->q_offset + r * c->E;                          \
            const ST *kb = (const ST *)c->k + c->k_offset + b * c->S * c->E;                   \
            const ST *vb = (const ST *)c->v + c->v_offset + b * c->S * c->D;                   \
            const ST *mr = c->mask ? (const ST *)c->mask + c->mask_offset + r * c->S : NULL;   \
            ST *o = (ST *)c->out + c->out_offset + r * c->D;                                   \
            CT m = -INFINITY, l = 0;                                                           \
            for (size_t j = 0; j < end; j++) {                                                 \
                CT s = CLT_CAT(score_, DT)(qr, kb + j * c->E, mr, j, c->E, scale);             \
                if (s == -INFINITY)                                                            \
                    continue;                                                                  \
                if (s > m) {                                                                   \
                    l = l * exp(m - s) + 1;                                                    \
                    m = s;                                                                     \
                } else {                                                                       \
                    l += exp(s - m);                                                           \
                }                                                                              \
            }                                                                                  \
            for (size_t d0 = 0; d0 < c->D; d0 += 32) {                                         \
                CT acc[32];                                                                    \
                size_t n = c->D - d0 < 32 ? c->D - d0 : 32;                                    \
                for (size_t k = 0; k < n; k++)                                                 \
                    acc[k] = 0;                                                                \
                for (size_t j = 0; j < end && l > 0; j++) {                                    \
                    CT s = CLT_CAT(score_, DT)(qr, kb + j * c->E, mr, j, c->E, scale);         \
                    if (s == -INFINITY)                                                        \
                        continue;                                                              \
                    CT p = exp(s - m) / l;                                                     \
                    const ST *vj = vb + j * c->D + d0;                                         \
                    for (size_t k = 0; k < n; k++)                                             \
                        acc[k] += p * LOAD(vj[k]);                                             \
                }                                                                              \
                for (size_t k = 0; k < n; k++)                                                 \
                    o[d0 + k] = STORE(l > 0 ? acc[k] : (CT)NAN);                               \
            }                                                                                  \
        }                                                                                      \
    }

/* Cross entropy's rows as cl/loss.cl computes them (clt__xent_call): the same sums in the
 * same order. */
#define HOST_XENT                                                                              \
    static void CLT_CAT(xent_, DT)(const void *call, size_t lo, size_t hi)                     \
    {                                                                                          \
        const clt__xent_call *c = call;                                                        \
        const int64_t *target = (const int64_t *)c->target + c->target_offset;                 \
        for (size_t r = lo; r < hi; r++) {                                                     \
            const ST *x = (const ST *)c->logits + c->logits_offset + r * c->classes;           \
            int64_t t = target[r];                                                             \
            CT m = LOAD(x[0]), s = 0;                                                          \
            for (size_t k = 1; k < c->classes; k++)                                            \
                m = LOAD(x[k]) > m ? LOAD(x[k]) : m;                                           \
            for (size_t k = 0; k < c->classes; k++)                                            \
                s += exp(LOAD(x[k]) - m);                                                      \
            if (!c->backward) { /* a target out of range (checked out before) reads nothing */ \
                CT picked = t >= 0 && (size_t)t < c->classes ? LOAD(x[t]) : (CT)NAN;          \
                ((ST *)c->out)[c->out_offset + r] =                                            \
                    STORE(t == c->ignore ? (CT)0 : log(s) - (picked - m));                     \
                continue;                                                                      \
            }                                                                                  \
            ST *o = (ST *)c->out + c->out_offset + r * c->classes;                             \
            CT g = LOAD(((const ST *)c->g)[c->g_offset + r * c->g_step]) / (CT)c->g_divisor;   \
            for (size_t k = 0; k < c->classes; k++)                                            \
                o[k] = STORE(t == c->ignore                                                    \
                                 ? (CT)0                                                       \
                                 : g * (exp(LOAD(x[k]) - m) / s - (CT)((int64_t)k == t)));     \
        }                                                                                      \
    }

/* The floating kernels of one dtype. */
typedef struct host_floating {
    clt__host_part pool, depthwise, col2im, pool_backward, index_add, attention, xent;
} host_floating;

#define HOST_FLOATING                                                                          \
    HOST_POOL                                                                                  \
    HOST_DEPTHWISE                                                                             \
    HOST_COL2IM                                                                                \
    HOST_POOL_BACKWARD                                                                         \
    HOST_INDEX_ADD                                                                             \
    HOST_ATTENTION                                                                             \
    HOST_XENT                                                                                  \
    static const host_floating CLT_CAT(floating_, DT) = {CLT_CAT(pool_, DT),                   \
                                                         CLT_CAT(depthwise_, DT),              \
                                                         CLT_CAT(col2im_, DT),                 \
                                                         CLT_CAT(pool_backward_, DT),          \
                                                         CLT_CAT(index_add_, DT),              \
                                                         CLT_CAT(attention_, DT),              \
                                                         CLT_CAT(xent_, DT)};

#define KIND flt
#define CT float
#define DT f32
#define ST float
HOST_FLOATING
#undef DT
#undef ST
#define DT f16
#define ST clt_u16
HOST_FLOATING
#undef DT
#define DT bf16
HOST_FLOATING
#undef DT
#undef ST
#undef KIND
#undef CT
#define KIND dbl
#define CT double
#define DT f64
#define ST double
HOST_FLOATING

/* The kernels of a floating dtype (f32 for any other). */
static const host_floating *floating(clt_dtype dtype)
{
    switch (dtype) {
    case CLT_F64: return &floating_f64;
    case CLT_F16: return &floating_f16;
    case CLT_BF16: return &floating_bf16;
    default: return &floating_f32;
    }
}

/* The backend entry clt__host_<name>: the floating kernel `member` of the call's dtype over its
 * `items` outer items of about `cost` element operations each, split over the threads. */
#define HOST_ENTRY(name, call_type, member, items, cost)                                       \
    clt_status clt__host_##name(const char *fn, clt_device *dev, const call_type *c)           \
    {                                                                                          \
        (void)fn;                                                                              \
        (void)dev;                                                                             \
        clt__host_parallel(items, cost, floating(c->dtype)->member, c);                        \
        return CLT_OK;                                                                         \
    }

HOST_ENTRY(pool2d, clt__conv_call, pool, c->N * c->C, c->OH * c->OW * (TAPS(c) + 2))
HOST_ENTRY(depthwise2d, clt__conv_call, depthwise, c->N * c->C * c->mult,
           c->OH * c->OW * (TAPS(c) + 1))
HOST_ENTRY(col2im, clt__conv_call, col2im, c->N * c->C, c->H * c->W * (TAPS(c) + 1))
HOST_ENTRY(pool2d_backward, clt__conv_call, pool_backward, c->N * c->C,
           c->H * c->W * (TAPS(c) + 1))
HOST_ENTRY(index_add, clt__index_add_call, index_add, c->A * c->K * c->B,
           c->M / (c->K ? c->K : 1) + 2)
HOST_ENTRY(attention, clt__attention_call, attention, c->B * c->L, c->S *(2 * c->E + c->D))
HOST_ENTRY(cross_entropy, clt__xent_call, xent, c->rows, 8 * c->classes)
