/* Backend entries composed of a device's other entries, where a backend has no kernel of its
 * own for a case (see backend.h): the convolution as im2col and a product (OpenCL's conv2d, and
 * the host's for layers whose bands would not fit in a core's cache), and as Winograd's
 * transforms around 16 products (both backends' 3 x 3 convolutions at stride 1), with the choice
 * of when to take that path; and the copy between peer devices, as a device's copy between two
 * orderings of the queues. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/core.h"

clt_status clt__conv2d_composed(const char *fn, clt_device *dev, const clt__conv_call *c,
                                bool one_product)
{
    size_t es = clt_dtype_size(c->dtype), k = c->C * (size_t)c->kh * (size_t)c->kw;
    size_t L = c->OH * c->OW, nl = c->N * L, capacity = 0;
    void *cols = NULL;
    clt_status st = clt__scratch_alloc(fn, dev, k * nl * es, &cols, &capacity);
    clt__conv_call u = *c;
    u.out = cols, u.out_offset = 0;
    if (st == CLT_OK && (st = CLT__BACKEND_CALL(im2col, fn, dev, c->dtype, &u)) == CLT_OK) {
        /* one (mult, k) @ (k, N * L), its columns n * L on in image n's place of the output
         * (column groups), or (mult, k) @ (k, L) for each image, its columns n * L on in rows
         * of N * L */
        clt__gemm_call g = {.dtype = c->dtype,
                            .m = c->mult,
                            .n = one_product ? nl : L,
                            .k = k,
                            .batch = one_product ? 1 : c->N,
                            .alpha = 1,
                            .a = c->weight,
                            .a_offset = c->weight_offset,
                            .lda = k,
                            .b = cols,
                            .ldb = nl,
                            .b_stride = L,
                            .c = c->out,
                            .c_offset = c->out_offset,
                            .ldc = L,
                            .c_stride = c->mult * L,
                            .c_group = one_product && c->N > 1 ? L : 0,
                            .c_group_stride = c->mult * L};
        st = CLT__BACKEND_CALL(gemm, fn, dev, c->dtype, &g);
    }
    if (cols) /* work on one device runs in order */
        clt__scratch_free(dev, cols, capacity);
    return st;
}

/* A rows x cols matrix of dtype in a buffer of dev's caching allocator (*capacity its size for
 * clt__scratch_free), for `what`. */
static clt_status matrix_buffer(const char *fn, clt_device *dev, const char *what, size_t rows,
                                size_t cols, clt_dtype dtype, void **buf, size_t *capacity)
{
    size_t bytes;
    if (!clt__mul_size(rows, cols, &bytes) || !clt__mul_size(bytes, clt_dtype_size(dtype), &bytes))
        return clt__error(CLT_ERR_OUT_OF_MEMORY, fn, "%s of %zu x %zu on %s: more bytes than "
                          "memory holds", what, rows, cols, dev->name);
    return clt__scratch_alloc(fn, dev, bytes, buf, capacity);
}

clt_status clt__gemm_composed_groups(const char *fn, clt_device *dev, const clt__gemm_call *c,
                                     clt__gemm_fn gemm)
{
    size_t capacity = 0, groups = c->n / c->c_group;
    void *wide = NULL;
    if (c->batch != 1 || c->beta != 0 || c->n % c->c_group)
        return clt__error(CLT_ERR_INTERNAL, fn, "a product into column groups of %zu takes batch "
                          "1, beta 0 and groups that divide n (batch %zu, beta %g, n %zu)",
                          c->c_group, c->batch, c->beta, c->n);
    clt_status st = matrix_buffer(fn, dev, "a product", c->m, c->n, c->dtype, &wide, &capacity);
    clt__gemm_call p = *c;
    p.c = wide, p.c_offset = 0, p.ldc = c->n, p.c_stride = c->m * c->n;
    p.c_group = p.c_group_stride = 0;
    if (st == CLT_OK)
        st = gemm(fn, dev, &p);
    if (st == CLT_OK) { /* (m, groups, c_group) into (groups, m, c_group) */
        clt__ew_call e = {.op = CLT_EW_copy,
                          .dtype = c->dtype,
                          .ndim = 3,
                          .n = c->m * c->n,
                          .shape = {(int64_t)groups, (int64_t)c->m, (int64_t)c->c_group},
                          .out = {.buf = c->c,
                                  .offset = c->c_offset,
                                  .strides = {(int64_t)c->c_group_stride, (int64_t)c->ldc, 1}},
                          .in = {{.buf = wide,
                                  .strides = {(int64_t)c->c_group, (int64_t)c->n, 1}}}};
        clt__ew_collapse(&e, 1);
        st = CLT__BACKEND_CALL(elementwise, fn, dev, c->dtype, &e);
    }
    if (wide) /* work on one device runs in order */
        clt__scratch_free(dev, wide, capacity);
    return st;
}

/* CLT_OK where c's row sums can be had apart (batch 1, A dense), else the error. */
static clt_status row_sums_refused(const char *fn, const clt__gemm_call *c)
{
    if (c->batch == 1 && c->lda == (c->trans_a ? c->m : c->k))
        return CLT_OK;
    return clt__error(CLT_ERR_INTERNAL, fn, "row sums of a product take batch 1 and a dense A "
                      "(batch %zu, %zu x %zu, leading dimension %zu%s)", c->batch, c->m, c->k,
                      c->lda, c->trans_a ? ", transposed" : "");
}

clt_status clt__gemm_row_sums_apart(const char *fn, clt_device *dev, const clt__gemm_call *c)
{
    clt_status st = row_sums_refused(fn, c);
    if (st != CLT_OK)
        return st;
    /* op(A)'s rows: A's rows of k, or down the k rows of m columns of A stored transposed (sums
     * down columns take at most CLT__REDUCE_COLUMNS_MAX rows: beyond, A^T copied first) */
    bool down = c->trans_a && c->m > 1, copied = down && c->k > CLT__REDUCE_COLUMNS_MAX;
    clt__reduce_call r = {.op = CLT_REDUCE_SUM,
                          .dtype = c->dtype,
                          .rows = down && !copied ? 1 : c->m,
                          .len = c->k,
                          .inner = down && !copied ? c->m : 1,
                          .in = c->a,
                          .out = c->row_sums,
                          .in_offset = c->a_offset,
                          .out_offset = c->row_sums_offset};
    size_t capacity = 0;
    void *rows = NULL;
    if (copied) {
        st = matrix_buffer(fn, dev, "row sums", c->m, c->k, c->dtype, &rows, &capacity);
        if (st != CLT_OK)
            return st;
        clt__ew_call e = {.op = CLT_EW_copy,
                          .dtype = c->dtype,
                          .ndim = 2,
                          .n = c->m * c->k,
                          .shape = {(int64_t)c->m, (int64_t)c->k},
                          .out = {.buf = rows, .strides = {(int64_t)c->k, 1}},
                          .in = {{.buf = c->a,
                                  .offset = c->a_offset,
                                  .strides = {1, (int64_t)c->lda}}}};
        st = CLT__BACKEND_CALL(elementwise, fn, dev, c->dtype, &e);
        r.in = rows, r.in_offset = 0;
    }
    if (st == CLT_OK)
        st = CLT__BACKEND_CALL(reduce, fn, dev, c->dtype, &r);
    if (rows) /* work on one device runs in order */
        clt__scratch_free(dev, rows, capacity);
    return st;
}

clt_status clt__gemm_composed_row_sums(const char *fn, clt_device *dev, const clt__gemm_call *c,
                                       clt__gemm_fn gemm)
{
    clt__gemm_call p = *c; /* the sums first: they check the call before any work */
    p.row_sums = NULL, p.row_sums_offset = 0;
    clt_status st = clt__gemm_row_sums_apart(fn, dev, c);
    return st == CLT_OK ? gemm(fn, dev, &p) : st;
}

clt_status clt__gemm_composed_epilogue(const char *fn, clt_device *dev, const clt__gemm_call *c,
                                       clt__gemm_fn gemm)
{
    clt__gemm_call p = *c;
    /* C as (batch, m, n); the bias along its rows or columns */
    clt__ew_call e = {.dtype = c->dtype,
                      .ndim = 3,
                      .n = c->batch * c->m * c->n,
                      .shape = {(int64_t)c->batch, (int64_t)c->m, (int64_t)c->n},
                      .out = {.buf = c->c,
                              .offset = c->c_offset,
                              .strides = {(int64_t)c->c_stride, (int64_t)c->ldc, 1}}};
    clt_status st = CLT_OK;
    p.bias = NULL, p.act = CLT__ACT_NONE;
    if (c->bias) {
        e.op = CLT_EW_copy;
        e.in[0] = (clt__operand){c->bias, c->bias_offset, {0, c->bias_rows, !c->bias_rows}};
        st = CLT__BACKEND_CALL(elementwise, fn, dev, c->dtype, &e);
        p.beta = 1;
    }
    if (st == CLT_OK)
        st = gemm(fn, dev, &p);
    if (st == CLT_OK && c->act == CLT__ACT_RELU) {
        e.op = CLT_EW_relu;
        e.in[0] = e.out;
        st = CLT__BACKEND_CALL(elementwise, fn, dev, c->dtype, &e);
    }
    return st;
}

int clt__conv_winograd = -1;
size_t clt__winograd_rows = 0;

/* Winograd's path is taken where it saves at least this many multiply-adds for each pair of
 * input and output channels: the weight's transform costs about 25 elements read or written a
 * pair, each as long as many multiply-adds of a product (ResNet-18's 512-channel 7 x 7 layer at
 * batch 1, 185 saved a pair, ran slower through Winograd than direct; its 256-channel 14 x 14
 * layer, 980 saved, faster: docs/performance.md, Convolution and pooling). Fewer than
 * WINOGRAD_MIN_CHANNELS input or output channels make products too thin to repay the
 * transforms' passes over 16 copies of the tiles. */
#define WINOGRAD_MIN_SAVED 512
#define WINOGRAD_MIN_CHANNELS 16
/* And where the channels repay each tile's transforms: a tile saves 20 C K multiply-adds and
 * costs 16 (C + K) transformed elements, so C K / (C + K) must reach WINOGRAD_MIN_PAIR, or
 * WINOGRAD_MIN_PAIR_WIDE in images of at least WINOGRAD_WIDE_TILES tiles a row (the stages
 * work a tile row at a time, and short rows cost more a tile). Measured on cpu and PoCL, each
 * pair of paths alternating in one process: on images of 4 tiles a row Winograd ran slower
 * below WINOGRAD_MIN_PAIR, even at it and faster above it; at WINOGRAD_MIN_PAIR_WIDE it ran
 * slower on rows of 14 tiles, and on rows of 28 even on PoCL and faster on cpu
 * (docs/performance.md, Convolution and pooling). */
#define WINOGRAD_MIN_PAIR 32
#define WINOGRAD_MIN_PAIR_WIDE 16
#define WINOGRAD_WIDE_TILES 16

/* CLT_WINOGRAD: 0 never, 1 wherever it fits, -1 (unset, empty or "auto") where it pays; read
 * once, anything else ignored with a warning. */
static int winograd_from_env(void)
{
    static atomic_int mode = -2;
    int m = atomic_load(&mode);
    if (m != -2)
        return m;
    const char *v = getenv("CLT_WINOGRAD");
    m = !v || !*v || !strcmp(v, "auto") ? -1 : !strcmp(v, "0") ? 0 : !strcmp(v, "1") ? 1 : -1;
    if (m == -1 && v && *v && strcmp(v, "auto"))
        clt__log(CLT_LOG_WARN, "CLT_WINOGRAD=\"%s\" is none of 0, 1 and auto: ignored", v);
    atomic_store(&mode, m);
    return m;
}

bool clt__winograd_chosen(const clt__conv_call *c)
{
    int mode = clt__conv_winograd >= 0 ? clt__conv_winograd : winograd_from_env();
    if (mode == 0 || !clt__winograd_fits(c))
        return false;
    if (mode == 1)
        return true;
    double pixels = (double)c->N * (double)c->OH * (double)c->OW;
    double tiles = (double)c->N * (double)clt__winograd_tile_rows(c) *
                   (double)clt__winograd_tile_cols(c);
    double pair = (double)c->C * (double)c->mult / ((double)c->C + (double)c->mult);
    bool wide = clt__winograd_tile_cols(c) >= WINOGRAD_WIDE_TILES;
    return c->C >= WINOGRAD_MIN_CHANNELS && c->mult >= WINOGRAD_MIN_CHANNELS &&
           pair >= (wide ? WINOGRAD_MIN_PAIR_WIDE : WINOGRAD_MIN_PAIR) &&
           9 * pixels - 16 * tiles >= WINOGRAD_MIN_SAVED;
}

/* One stage over the block [row0, row0 + rows) (or the weight). */
static clt_status winograd_stage(const char *fn, clt_device *dev, const clt__conv_call *c,
                                 clt__winograd_stage stage, size_t row0, size_t rows, void *t)
{
    clt__winograd_call w = {.stage = stage, .conv = c, .row0 = row0, .rows = rows, .t = t};
    return CLT__BACKEND_CALL(winograd, fn, dev, c->dtype, &w);
}

clt_status clt__conv2d_winograd(const char *fn, clt_device *dev, const clt__conv_call *c,
                                size_t budget)
{
    size_t es = clt_dtype_size(c->dtype), K = c->mult, C = c->C;
    size_t TW = clt__winograd_tile_cols(c), all = c->N * clt__winograd_tile_rows(c);
    size_t per_row = 16 * (C + K) * TW * es; /* v and m of one tile row */
    size_t rows = clt__winograd_rows ? clt__winograd_rows : budget / per_row;
    rows = rows < 1 ? 1 : rows > all ? all : rows;
    size_t blocks = (all + rows - 1) / rows;
    rows = (all + blocks - 1) / blocks; /* blocks of even size */
    void *u = NULL, *v = NULL, *m = NULL;
    size_t u_cap = 0, v_cap = 0, m_cap = 0;
    clt_status st = clt__scratch_alloc(fn, dev, 16 * K * C * es, &u, &u_cap);
    if (st == CLT_OK)
        st = clt__scratch_alloc(fn, dev, 16 * C * rows * TW * es, &v, &v_cap);
    if (st == CLT_OK)
        st = clt__scratch_alloc(fn, dev, 16 * K * rows * TW * es, &m, &m_cap);
    if (st == CLT_OK)
        st = winograd_stage(fn, dev, c, CLT_WINOGRAD_WEIGHT, 0, 0, u);
    for (size_t row0 = 0; st == CLT_OK && row0 < all; row0 += rows) {
        size_t r = all - row0 < rows ? all - row0 : rows, P = r * TW;
        st = winograd_stage(fn, dev, c, CLT_WINOGRAD_INPUT, row0, r, v);
        clt__gemm_call g = {.dtype = c->dtype,
                            .m = K,
                            .n = P,
                            .k = C,
                            .batch = 16,
                            .alpha = 1,
                            .a = u,
                            .lda = 16 * C,
                            .a_stride = C,
                            .b = v,
                            .ldb = P,
                            .b_stride = C * P,
                            .c = m,
                            .ldc = P,
                            .c_stride = K * P};
        if (st == CLT_OK)
            st = CLT__BACKEND_CALL(gemm, fn, dev, c->dtype, &g);
        if (st == CLT_OK)
            st = winograd_stage(fn, dev, c, CLT_WINOGRAD_OUTPUT, row0, r, m);
    }
    /* work on one device runs in order: the buffers may go back to the pool at once */
    if (m)
        clt__scratch_free(dev, m, m_cap);
    if (v)
        clt__scratch_free(dev, v, v_cap);
    if (u)
        clt__scratch_free(dev, u, u_cap);
    return st;
}

clt_status clt__peer_order_after(const char *fn, clt_device *dev, clt_device *then,
                                 clt_status st)
{
    clt__error_state first;
    if (st != CLT_OK)
        clt__error_save(&first);
    clt_status after = dev->backend->peer_order(fn, dev, then);
    if (st == CLT_OK)
        return after;
    clt__error_restore(&first);
    return st;
}

clt_status clt__copy_peer(const char *fn, clt_device *dev, void *src, size_t src_offset,
                          clt_device *to, void *dst, size_t dst_offset, size_t nbytes)
{
    clt_status st = dev->backend->peer_order(fn, to, dev);
    if (st != CLT_OK) /* nothing queued */
        return st;
    st = dev->backend->copy(fn, dev, src, src_offset, dst, dst_offset, nbytes);
    return clt__peer_order_after(fn, dev, to, st);
}
