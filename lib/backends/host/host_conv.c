/* The host backend's convolution kernels (see cl/nn.cl and cl/winograd.cl): im2col and its
 * adjoint col2im, the fused convolution in bands of output rows, Winograd's convolution's stages
 * and depthwise convolution, as plain loops; the floating ones compute in the same type and order
 * as the OpenCL kernels. The kernels written once for several types are in host_im2col.inc (by
 * element size), host_winograd.inc (float, double) and host_conv.inc (every floating dtype). */
#include <string.h>
#include <tgmath.h>

#include "host.h"
#include "host_generic.h"
#include "host_simd.h"
#include "host_window.h"
#include "platform/platform.h"
#include "backends/shared/scalar_host.h"

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

/* im2col for elements of one size (T an unsigned integer of that size): its rows [lo, hi) of
 * C * kh * kw for images [n0, n1) and output rows [oy0, oy1), in order from out, and the
 * backend's part, every image and output row. Output rows of at least IM2COL_NARROW go a row of
 * OW at a time: zero where the tap lies outside the image, the rest copied (one memcpy at stride
 * 1). Narrower ones (8 x 8 images) go IM2COL_TABLE outputs at a time, the same for every image
 * and channel of a tap: a table of the input element each reads and a mask keeping its bits or
 * none, then one gather without branches (vectorised) per image; element loops with a branch
 * each lost their time to mispredictions, and library calls a row more. */
#define IM2COL_NARROW 16
#define IM2COL_TABLE 256

/* im2col_<T> for every element size. */
#define T uint8_t
#include "host_im2col.inc"
#undef T
#define T uint16_t
#include "host_im2col.inc"
#undef T
#define T uint32_t
#include "host_im2col.inc"
#undef T
#define T uint64_t
#include "host_im2col.inc"
#undef T

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
 * (ResNet-18's 3 x 3 layers at batch 16 ran about as fast from 2 to 8 MiB, and its first stage
 * slower at 16 MiB: docs/performance.md, Convolution and pooling). */
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

/* winograd_<stage>_<T> for float and double. */
#define T float
#include "host_winograd.inc"
#undef T
#define T double
#include "host_winograd.inc"
#undef T

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

/* Depthwise convolution (3 x 3 windows by depthwise3x3) over output planes [lo, hi) of
 * N * C * mult, in blocks of up to DEPTHWISE_BLOCK output columns, each block of a row
 * accumulated tap after tap (the OpenCL kernel's order for every element) over the columns whose
 * tap lies inside the image: a unit-stride loop the compiler vectorises. At stride 1 in f32 and
 * f64, the columns whose every tap lies inside (when there are DEPTHWISE_LANES of them) go
 * DEPTHWISE_LANES at a time with their sums in registers over all the taps (the same sums in the
 * same order; the last block overlaps the one before it), the columns left one at a time. */
#define DEPTHWISE_BLOCK 256
#define DEPTHWISE_TAPS 16
#define DEPTHWISE_LANES 16

/* col2im, im2col's adjoint, as a gather in the order of the OpenCL kernel (so both give the same
 * sums): loops over (image and channel, h, w) with the output position each tap reads from taken
 * from a table (window_tables) when it fits. col2im over narrow images (W < IM2COL_NARROW, as
 * im2col's) goes COL2IM_ENTRIES taps and positions at a time instead, each tap of each
 * position's window a column offset in a table with whether it lies in the image, the same for
 * every image and channel: the sums of every position in that order, with a zero added where
 * the tap lies outside, which changes no sum (they start at +0, which x + 0 keeps), and without
 * a branch (vectorised): a branch a tap spent most of the time of 8 x 8 images. */
#define COL2IM_ENTRIES 2048

/* depthwise_<DT> and col2im_<DT> of every floating dtype. */
#define HOST_GENERIC "host_conv.inc"
#include "host_each_floating.h"

HOST_ENTRY(depthwise2d, clt__conv_call, depthwise, c->N * c->C * c->mult,
           c->OH * c->OW * (TAPS(c) + 1))
HOST_ENTRY(col2im, clt__conv_call, col2im, c->N * c->C, c->H * c->W * (TAPS(c) + 1))
