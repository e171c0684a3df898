/* The backend interface: the one seam between what an operation means and how a device runs
 * it. A device is a name, a description and a table of these functions; the front end never
 * knows which backend it talks to. Adding a backend means adding a folder that fills a table. */
#ifndef CLT_BACKEND_H
#define CLT_BACKEND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cltensor/device.h"
#include "cltensor/tensor.h"
#include "core/dtype.h"
#include "cl/elementwise_ops.cl"

typedef struct clt__backend clt__backend;

struct clt_device {
    int index;                   /* N of gpu:N; -1 for cpu */
    char name[16];               /* "cpu", "gpu:N" */
    const clt__backend *backend;
    const struct clt__backend_registry *registry; /* the backend's entry; NULL for cpu */
    clt_device_info info;
    void *impl;                  /* the backend's own state */
    struct clt__pool *_Atomic pool; /* the caching allocator's (lib/device/allocator.c) */
};

/* True for `cpu`, the host device. */
static inline bool clt__is_host(const clt_device *dev)
{
    return dev->info.type == CLT_DEVICE_HOST;
}

/* Called once, from any thread, when an asynchronous transfer no longer needs its source. */
typedef void (*clt__done_fn)(void *ctx);

/* How a transfer completes: with `event` NULL it is finished when the call returns; otherwise
 * the call may return early, *event receives the completion event (NULL when already complete)
 * and done(ctx), if set, runs once the source memory may be reused. */
typedef struct clt__async {
    void **event;
    clt__done_fn done;
    void *ctx;
} clt__async;

/* The elementwise operations: those of cl/elementwise_ops.cl, then copy and where. */
#define CLT__EW_ENUM(name, ...) CLT_EW_##name,
typedef enum clt__ew_op { CLT_EW_OPS(CLT__EW_ENUM) CLT_EW_copy, CLT_EW_where, CLT_EW_COUNT } clt__ew_op;
#undef CLT__EW_ENUM

/* One operand as a kernel sees it: a buffer, an offset and strides, in elements. */
typedef struct clt__operand {
    void *buf;
    size_t offset;
    int64_t strides[CLT_MAX_DIMS];
} clt__operand;

/* One elementwise operation over n output elements. The inputs have `dtype` (where's condition
 * is bool); the output too, or bool for comparisons. */
typedef struct clt__ew_call {
    clt__ew_op op;
    clt_dtype dtype;
    int ndim;                     /* 0: every operand is contiguous over n elements */
    int64_t shape[CLT_MAX_DIMS];  /* the output's, when ndim > 0 */
    size_t n;
    clt__operand out, in[3];      /* unused inputs: buf NULL */
    double s0, s1;                /* scalar parameters, converted to the compute type */
} clt__ew_call;

/* The same walk over fewer, longer dimensions (nin inputs): dimensions of size 1 dropped, each
 * merged into the one before it where every operand steps over both as over one, and ndim 0
 * where every operand then runs in order. */
void clt__ew_collapse(clt__ew_call *c, int nin);

/* A strided copy (CLT_EW_copy, ndim > 0) seen as a batch of 2-D transposes, which backends copy
 * in tiles (reading and writing whole cache lines) rather than element by element: the output
 * dimension `cols` is the one of output stride 1, whose input stride is not 1, and `rows` one of
 * input stride 1; both longer than 1. Within matrix b (the other dimensions, in row-major order
 * over bshape), out[out_b + i * out_rs + j] = in[in_b + i + j * in_cs] for i < rows, j < cols,
 * where out_b and in_b are the operands' offsets plus b's strides. */
typedef struct clt__tile_plan {
    size_t rows, cols, batch;
    int64_t out_rs, in_cs;
    int nb;                                /* batch dimensions */
    int64_t bshape[CLT_MAX_DIMS], out_bs[CLT_MAX_DIMS], in_bs[CLT_MAX_DIMS];
} clt__tile_plan;

/* Whether the copy `call` has that form; fills *plan when it does. */
bool clt__tile_plan_of(const clt__ew_call *call, clt__tile_plan *plan);

/* One strided-batched matrix product over row-major matrices, for i < batch:
 *   C_i = alpha * op(A_i) op(B_i) + beta * C_i,
 * op(A_i) m x k, op(B_i) k x n, C_i m x n; op(X) is X, or X^T with trans_x (X then stored k x m
 * for A, n x k for B). Matrix i of X starts at x_offset + i * x_stride; its rows as stored lie
 * ldx apart, at least the stored number of columns. Offsets, leading dimensions and batch
 * strides count elements; a_stride and b_stride may be 0 (one matrix for the whole batch). m,
 * n, k and batch are all > 0; dtype is CLT_F32 or CLT_F64; C does not overlap A or B. With
 * beta 0, C's previous contents are ignored (NaN included).
 * The epilogue, in the same pass over C: with `bias` set (beta then 0, and of dtype), element
 * bias_offset + i of it added to every element of row i of each C_i (bias_rows) or of column i;
 * then `act` applied (CLT__ACT_RELU: x < 0 ? 0 : x, as the relu operation). A zeroed call has
 * none.
 * Column groups, with c_group > 0 (batch 1, beta 0, c_group dividing n): C's columns lie in
 * groups of c_group, c_group_stride apart, element (i, j) at c_offset + (j / c_group) *
 * c_group_stride + i * ldc + j % c_group: a convolution's product over every image's columns
 * writes each image's (channels, positions) in place, (N, O, L) rather than (O, N * L). 0: C as
 * above.
 * Row sums, with row_sums set (batch 1, A dense: lda k, or m with trans_a): each row i of op(A)
 * summed over its k elements, without alpha, into element row_sums_offset + i of row_sums (of
 * dtype): a weight gradient's product gives its bias's gradient in the same pass over A. */
typedef enum clt__act { CLT__ACT_NONE, CLT__ACT_RELU } clt__act;

typedef struct clt__gemm_call {
    clt_dtype dtype;
    bool trans_a, trans_b;
    size_t m, n, k, batch;
    double alpha, beta;
    void *a, *b, *c;
    size_t a_offset, b_offset, c_offset;
    size_t lda, ldb, ldc;
    size_t a_stride, b_stride, c_stride;
    void *bias;
    size_t bias_offset;
    bool bias_rows;
    clt__act act;
    size_t c_group, c_group_stride;
    void *row_sums;
    size_t row_sums_offset;
} clt__gemm_call;

/* Whether the call has an epilogue. */
static inline bool clt__gemm_has_epilogue(const clt__gemm_call *c)
{
    return c->bias || c->act != CLT__ACT_NONE;
}

/* The reductions a backend runs: each of `rows` contiguous rows of `len` elements gives one
 * value. Result dtypes (clt__reduce_dtype): SUM gives f32 for f32, f16 and bf16 (compensated
 * summation), f64 for f64 and i64 for integers and bool (wrapping); AMAX and AMIN give the row's
 * element that ARGMAX and ARGMIN pick, with its bits, in the input dtype; ARGMAX and ARGMIN give
 * the i64 index within the row of the largest (smallest) element, the first among equals, a NaN
 * counting as beyond every number (the first NaN wins); SQDEV, floating only, gives in the SUM
 * dtype sum((x - m)^2) - sum(x - m)^2 / len with m the row's entry of `mean` (also in the SUM
 * dtype): the corrected two-pass sum of squared deviations; MEAN, floating only, gives the SUM
 * divided by len, in the SUM dtype (one launch for clt_mean). */
typedef enum clt__reduce_op {
    CLT_REDUCE_SUM,
    CLT_REDUCE_AMAX,
    CLT_REDUCE_AMIN,
    CLT_REDUCE_ARGMAX,
    CLT_REDUCE_ARGMIN,
    CLT_REDUCE_SQDEV,
    CLT_REDUCE_MEAN,
} clt__reduce_op;

static inline clt_dtype clt__reduce_dtype(clt__reduce_op op, clt_dtype in)
{
    if (op == CLT_REDUCE_AMAX || op == CLT_REDUCE_AMIN)
        return in;
    if (op == CLT_REDUCE_ARGMAX || op == CLT_REDUCE_ARGMIN)
        return CLT_I64;
    return clt__dtype(in)->compute;
}

/* One reduction: rows >= 1, len >= 1; the input, output and mean are contiguous buffers at
 * element offsets (mean only for SQDEV: one value a row). With inner > 1 (SUM of a floating
 * dtype only, len at most CLT__REDUCE_COLUMNS_MAX) the input is rows x len x inner and the sums
 * run down its columns: out[r * inner + i] = the sum over l of in[(r * len + l) * inner + i]
 * (a bias's gradient, no transposing copy first). */
#define CLT__REDUCE_COLUMNS_MAX 4096
typedef struct clt__reduce_call {
    clt__reduce_op op;
    clt_dtype dtype; /* the input's */
    size_t rows, len, inner;
    void *in, *out, *mean;
    size_t in_offset, out_offset, mean_offset;
} clt__reduce_call;

/* Gathers: out[a, m, b] = src[a, idx[m], b] with src A x K x B, idx M i64 values already checked
 * to lie in 0..K-1, out A x M x B; all contiguous, offsets in elements. */
typedef struct clt__index_call {
    clt_dtype dtype;
    size_t A, K, B, M;
    void *src, *idx, *out;
    size_t src_offset, idx_offset, out_offset;
} clt__index_call;

/* The adjoint of the gather: out[a, k, b] = the sum of src[a, m, b] over the m with idx[m] == k
 * (0 where there is none), with src A x M x B and out A x K x B, both contiguous and of a
 * floating dtype (f16 and bf16 add in f32). The indices come sorted, in compressed form: starts
 * holds K + 1 i64 values, order M, and order[starts[k]] .. order[starts[k + 1] - 1] are the m
 * with idx[m] == k, increasing; sums run in that order. Offsets in elements. */
typedef struct clt__index_add_call {
    clt_dtype dtype;
    size_t A, K, B, M;
    void *src, *starts, *order, *out;
    size_t src_offset, starts_offset, order_offset, out_offset;
} clt__index_add_call;

/* Scaled dot-product attention: out[r, :] = softmax_j(scale * q[r, :] . k[b, j, :] + mask[r, j])
 * v[b, j, :] for the rows r = b * L + i (b < B, i < L) of q (B x L x E), with k B x S x E, v
 * B x S x D, out B x L x D and, when mask is not NULL, an additive mask B x L x S, all of one
 * floating dtype (f16 and bf16 compute in f32) and contiguous; causal keeps the keys j <= i
 * (PyTorch's is_causal). A row whose every score is -inf gives NaN. Offsets in elements. */
typedef struct clt__attention_call {
    clt_dtype dtype;
    size_t B, L, S, E, D;
    double scale;
    bool causal;
    void *q, *k, *v, *mask, *out;
    size_t q_offset, k_offset, v_offset, mask_offset, out_offset;
} clt__attention_call;

/* Row operations over `rows` contiguous rows of `len` >= 1 elements of one dtype (see
 * cl/sort_scan.cl). cumsum: out[r, j] = in[r, 0] + ... + in[r, j] (with reverse,
 * in[r, j] + ... + in[r, len - 1]), summed in the compute dtype in order from the row's start
 * (end), stored in the dtype. sort: each row in a stable order (ascending, or descending with
 * reverse; NaN above every number) into out, the positions within the row (i64) into idx, with
 * tmp and tmp_idx rows x len scratch from element 0. Offsets in elements. */
typedef struct clt__rows_call {
    clt_dtype dtype;
    size_t rows, len;
    bool reverse;
    void *in, *out, *idx, *tmp, *tmp_idx;
    size_t in_offset, out_offset, idx_offset;
} clt__rows_call;

/* Sliding windows over N x C x H x W images (contiguous): im2col writes the columns for
 * convolution, (C * kh * kw) x N x (OH * OW) (row (c * kh + y) * kw + x, image n, output
 * position oy * OW + ox); pool2d writes N x C x OH x OW maxima (and their
 * flat indices within each H x W plane to `arg`, i64) or averages. Window (y, x) of output
 * (oy, ox) reads row oy * sh - ph + y * dh, column ox * sw - pw + x * dw; outside the image it
 * reads 0 (im2col) or nothing (pooling; averages divide by kh * kw with count_pad, else by the
 * elements inside; a window that ceil mode lets run past the padding counts only its taps inside
 * the padded image). col2im and pool2d_backward take the same geometry the other way round:
 * `in` has the shape of the forward output, `out` that of the image. */
typedef struct clt__conv_call {
    clt_dtype dtype;
    size_t N, C, H, W, OH, OW;
    int kh, kw, sh, sw, ph, pw, dh, dw;
    bool is_max, count_pad;
    void *in, *out, *arg;
    size_t in_offset, out_offset, arg_offset;
    size_t mult;  /* depthwise2d: output channels per input channel; conv2d: output channels */
    void *weight; /* depthwise2d: (C * mult) x kh x kw, contiguous */
    size_t weight_offset;
} clt__conv_call;

/* Cross entropy over `rows` contiguous rows of `classes` logits (a floating dtype; f16 and bf16
 * compute in f32), the target of row r target[r] (i64, checked by the caller to lie in
 * 0..classes-1 or to equal `ignore`); m is a row's largest logit and s = sum_c exp(x_c - m),
 * summed in class order:
 *   forward   out[r] = log(s) - (x_t - m), 0 where the target is `ignore`;
 *   backward  out[r, c] = (g[r * g_step] / g_divisor) (exp(x_c - m) / s - (c == t)), with g
 *             the forward output's gradient: one value a row (g_step 1, g_divisor 1), or the
 *             gradient of the rows' sum (g_step 0) or of their mean (g_step 0, g_divisor the
 *             rows counted), the division in the compute dtype; 0 in rows whose target is
 *             `ignore`.
 * Contiguous operands, offsets in elements. */
typedef struct clt__xent_call {
    clt_dtype dtype;
    bool backward;
    size_t rows, classes;
    int64_t ignore;
    void *logits, *target, *g, *out;
    size_t logits_offset, target_offset, g_offset, out_offset;
    size_t g_step;    /* backward: 1, or 0 for one gradient shared by every row */
    double g_divisor; /* backward: what divides the gradient (1 but for a mean) */
} clt__xent_call;

/* Winograd's minimal filtering F(2 x 2, 3 x 3) (Lavin and Gray, "Fast Algorithms for Convolutional
 * Neural Networks", 2016): a 3 x 3 convolution of one group at stride 1 (conv's geometry, K =
 * conv->mult output channels) as 16 products of transformed tiles, 4 multiply-adds an output
 * element and input channel where the direct convolution takes 9. The output is cut into 2 x 2
 * tiles, TH = ceil(OH / 2) rows of TW = ceil(OW / 2) an image; tile row R of the N * TH (image R
 * / TH, row ty = R % TH) holds tiles (ty, tx), each reading the 4 x 4 input patch d from row
 * 2 ty - ph, column 2 tx - pw (0 outside the image). A block is the tile rows [row0, row0 +
 * rows), P = rows * TW tiles, tile p of it at row row0 + p / TW, column p % TW. Each stage writes
 * `t` or the output, from element 0, overwriting it:
 *   WEIGHT  t = u, K x 16 x C: for each kernel g (3 x 3, conv->weight row k, channel c), G g G^T,
 *           its element e = 4 i + j at (k * 16 + e) * C + c;
 *   INPUT   t = v, 16 x C x P: (B^T d) B of channel c's patch of tile p, element e at
 *           (e * C + c) * P + p;
 *   OUTPUT  reads t = m, 16 x K x P (m_e = u_e v_e, the products) and writes A^T m A, the 2 x 2
 *           outputs of each tile of the block, to conv->out (N x K x OH x OW), those inside it;
 * with G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0;
 * 0 1 0 -1] and A^T = [1 1 1 0; 0 1 -1 -1], each product of three in the order written (G g
 * first, B^T d first, A^T m first), each sum of three left to right, in the dtype (f32, f64).
 * Sizes fit in 32 bits (clt__winograd_fits). */
typedef enum clt__winograd_stage {
    CLT_WINOGRAD_WEIGHT,
    CLT_WINOGRAD_INPUT,
    CLT_WINOGRAD_OUTPUT
} clt__winograd_stage;
typedef struct clt__winograd_call {
    clt__winograd_stage stage;
    const clt__conv_call *conv;
    size_t row0, rows; /* the block, in tile rows (INPUT and OUTPUT) */
    void *t;           /* u, v or m, from element 0 */
} clt__winograd_call;

/* Tile rows and columns of c's output: ceil(OH / 2) x ceil(OW / 2) an image. */
static inline size_t clt__winograd_tile_rows(const clt__conv_call *c)
{
    return (c->OH + 1) / 2;
}
static inline size_t clt__winograd_tile_cols(const clt__conv_call *c)
{
    return (c->OW + 1) / 2;
}

/* Whether the convolution c (its mult the output channels) has Winograd's form: a 3 x 3 kernel
 * at stride 1 without dilation, f32 or f64, with input and output channels, and every count the
 * stages index by within 32 bits. */
static inline bool clt__winograd_fits(const clt__conv_call *c)
{
    const uint64_t most = 0x7fffffff;
    uint64_t tiles = (uint64_t)c->N * clt__winograd_tile_rows(c) * clt__winograd_tile_cols(c);
    uint64_t big = c->C > c->mult ? c->C : c->mult;
    return c->kh == 3 && c->kw == 3 && c->sh == 1 && c->sw == 1 && c->dh == 1 && c->dw == 1 &&
           (c->dtype == CLT_F32 || c->dtype == CLT_F64) && c->C > 0 && c->mult > 0 &&
           c->OH > 0 && c->OW > 0 && big <= most / 16 &&
           tiles <= most / (16 * big) && (uint64_t)c->N * c->C * c->H * c->W <= most &&
           (uint64_t)c->N * c->mult * c->OH * c->OW <= most;
}

/* The convolution through Winograd's stages (clt__winograd_call) and one strided-batched
 * product of the 16 a block, composed of dev's winograd and gemm entries: the tile rows in
 * blocks whose v and m take at most `budget` bytes together (one tile row at least), each
 * transformed, multiplied and transformed back before the next; u, v and m from the caching
 * allocator. */
clt_status clt__conv2d_winograd(const char *fn, clt_device *dev, const clt__conv_call *c,
                                size_t budget);
/* Whether a backend's conv2d entry takes Winograd's path for c: where it fits and saves enough
 * multiply-adds (see composed.c), wherever it fits, or never, as clt__conv_winograd says (-1,
 * 1, 0), or where that is -1 (the default), the environment's CLT_WINOGRAD (auto, 1, 0). */
bool clt__winograd_chosen(const clt__conv_call *c);
extern int clt__conv_winograd;
/* Tile rows a block of clt__conv2d_winograd at most, where not 0 (the tests' several blocks). */
extern size_t clt__winograd_rows;

/* Whether no input element lies in two windows of c (stride > (k - 1) * dilation both ways):
 * max pooling's adjoint then scatters each window's gradient to the element its index names,
 * which is what the gather of every window holding an element adds (0 + g, or 0 where none
 * holds it). */
static inline bool clt__windows_apart(const clt__conv_call *c)
{
    return c->sh > (c->kh - 1) * c->dh && c->sw > (c->kw - 1) * c->dw;
}

/* One optimizer update of `count` (1 to CLT__OPTIM_GROUP) f32 or f64 parameters of one dtype
 * with the same settings and step count, in one launch (see cl/optim_step.cl):
 * each tensor's n contiguous elements. SGD uses m (the momentum buffer, when momentum is not 0;
 * with `first` it is written, not read), Adam and AdamW use m and v (the moment estimates).
 * bias1 and bias2 are Adam's 1 - beta^t. State buffers are contiguous from element 0; unused
 * ones are NULL. */
#define CLT__OPTIM_GROUP 8
typedef enum clt__optim_kind { CLT_OPTIM_SGD, CLT_OPTIM_ADAM, CLT_OPTIM_ADAMW } clt__optim_kind;
typedef struct clt__optim_tensor {
    size_t n;
    void *param, *grad, *m, *v;
    size_t param_offset, grad_offset;
} clt__optim_tensor;
typedef struct clt__optim_call {
    clt__optim_kind kind;
    clt_dtype dtype;
    int count;
    clt__optim_tensor t[CLT__OPTIM_GROUP];
    double lr, momentum, dampening, weight_decay, beta1, beta2, eps, bias1, bias2;
    bool nesterov, first;
} clt__optim_call;

/* Copies of up to CLT__COPY_GROUP runs of contiguous elements of one dtype into one buffer in
 * one launch (the parts of clt_cat): run j's n elements from src at src_offset to dst at
 * dst_offset, offsets in elements. The runs do not overlap one another in dst, nor dst their
 * sources. */
#define CLT__COPY_GROUP 8
typedef struct clt__copy_run {
    void *src;
    size_t src_offset, dst_offset, n;
} clt__copy_run;
typedef struct clt__copies_call {
    clt_dtype dtype;
    int count;
    void *dst;
    clt__copy_run run[CLT__COPY_GROUP];
} clt__copies_call;

/* The backend's table, declared once: X(name, return type, parameters, REQUIRED or OPTIONAL).
 * Buffers are opaque handles (`void *`); offsets are in bytes for transfers and fills and in
 * elements for kernels. Every function sets the last error, naming `fn`, when it fails. Work on
 * one device runs in the order it was queued. An OPTIONAL entry may be NULL: a backend without
 * it leaves it out, and the call then fails with CLT_ERR_UNSUPPORTED naming the operation, the
 * device and the dtype (CLT__BACKEND_CALL), never running elsewhere. */
/* The entries of memory and transfers. */
#define CLT__BACKEND_MEMORY_OPS(X)                                                            \
    /* A buffer of nbytes > 0; CLT_ERR_DEVICE_OUT_OF_MEMORY or CLT_ERR_OUT_OF_MEMORY. */          \
    X(alloc, clt_status, (const char *fn, clt_device *dev, size_t nbytes, void **buf),            \
      REQUIRED)                                                                                   \
    X(free, void, (clt_device * dev, void *buf), REQUIRED)                                        \
    /* Host memory to and from a buffer, completing as clt__async says. */                        \
    X(write, clt_status,                                                                          \
      (const char *fn, clt_device *dev, void *buf, size_t offset, const void *src,                \
       size_t nbytes, const clt__async *async),                                                   \
      REQUIRED)                                                                                   \
    X(read, clt_status,                                                                           \
      (const char *fn, clt_device *dev, void *buf, size_t offset, void *dst, size_t nbytes,       \
       const clt__async *async),                                                                  \
      REQUIRED)                                                                                   \
    /* Copies nbytes within the device, byte offsets (a same-dtype copy keeps every bit). */      \
    X(copy, clt_status,                                                                           \
      (const char *fn, clt_device *dev, void *src, size_t src_offset, void *dst,                  \
       size_t dst_offset, size_t nbytes),                                                         \
      REQUIRED)                                                                                   \
    /* Whether dev and `to` (the same backend) use each other's buffers in what they queue (one  \
     * context), ordered by peer_order: clt__copy_peer copies between them on the devices. */   \
    X(peer, bool, (const clt_device *dev, const clt_device *to), REQUIRED)                        \
    /* What `then` queues from now on runs after what dev has queued so far, and the host waits  \
     * for neither (where peer(dev, then)). On an error the order still holds as far as it can:  \
     * a device that cannot start has nothing queued, and where the wait cannot be queued on     \
     * `then` the host waits for dev's marker. */                                                \
    X(peer_order, clt_status, (const char *fn, clt_device *dev, clt_device *then), REQUIRED)      \
    /* The runs of clt__copies_call, in one launch. */                                         \
    X(copy_runs, clt_status, (const char *fn, clt_device *dev, const clt__copies_call *call),     \
      OPTIONAL)                                                                                   \
    /* Repeats a pattern of pattern_size bytes over nbytes (a multiple of it) from offset. */     \
    X(fill, clt_status,                                                                           \
      (const char *fn, clt_device *dev, void *buf, size_t offset, const void *pattern,            \
       size_t pattern_size, size_t nbytes),                                                       \
      REQUIRED)

/* The entries of computation. */
#define CLT__BACKEND_COMPUTE_OPS(X)                                                           \
    /* dst[dst_off + i] = convert(src[src_off + i]) for i < n (clt_tensor_to_dtype's rules). */   \
    X(cast, clt_status,                                                                           \
      (const char *fn, clt_device *dev, void *src, size_t src_off, clt_dtype src_dtype,           \
       void *dst, size_t dst_off, clt_dtype dst_dtype, size_t n),                                 \
      OPTIONAL)                                                                                   \
    X(elementwise, clt_status, (const char *fn, clt_device *dev, const clt__ew_call *call),       \
      OPTIONAL)                                                                                   \
    /* The reduction described at clt__reduce_call. */                                            \
    X(reduce, clt_status, (const char *fn, clt_device *dev, const clt__reduce_call *call),        \
      OPTIONAL)                                                                                   \
    /* The strided-batched product described at clt__gemm_call. */                                \
    X(gemm, clt_status, (const char *fn, clt_device *dev, const clt__gemm_call *call),            \
      OPTIONAL)                                                                                   \
    /* Neural-network kernels: the gather, its adjoint, sliding windows (clt__conv_call). */      \
    X(index_select, clt_status,                                                                   \
      (const char *fn, clt_device *dev, const clt__index_call *call), OPTIONAL)                   \
    X(index_add, clt_status,                                                                      \
      (const char *fn, clt_device *dev, const clt__index_add_call *call), OPTIONAL)               \
    X(im2col, clt_status, (const char *fn, clt_device *dev, const clt__conv_call *call),          \
      OPTIONAL)                                                                                   \
    /* The adjoint of im2col: `in` holds columns as im2col lays them out, `out` (N x C x H x W) \
     * is overwritten, each element the sum of the column entries im2col would read from it,  \
     * taps in order. Floating dtypes (f16 and bf16 add in f32). */ \
    X(col2im, clt_status, (const char *fn, clt_device *dev, const clt__conv_call *call),          \
      OPTIONAL)                                                                                   \
    X(pool2d, clt_status, (const char *fn, clt_device *dev, const clt__conv_call *call),          \
      OPTIONAL)                                                                                   \
    /* Depthwise convolution: `out` (N x (C * mult) x OH x OW) channel o is input channel      \
     * o / mult convolved with `weight` channel o over the window geometry, taps (y, x) in     \
     * order from 0, 0 outside the image. Floating dtypes (f16 and bf16 add in f32). */  \
    X(depthwise2d, clt_status, (const char *fn, clt_device *dev, const clt__conv_call *call),     \
      OPTIONAL)                                                                                   \
    /* Convolution of one group, as im2col and a product fused: `out` (N x mult x OH x OW),     \
     * overwritten, is `weight` (mult x C * kh * kw, contiguous) times the columns im2col would \
     * make of each image, C * kh * kw > 0. f32 and f64. Where a backend has none, the caller \
     * composes im2col and gemm. */ \
    X(conv2d, clt_status, (const char *fn, clt_device *dev, const clt__conv_call *call),          \
      OPTIONAL)                                                                                   \
    /* Cross entropy's rows, forward or backward (clt__xent_call). */                           \
    X(cross_entropy, clt_status, (const char *fn, clt_device *dev, const clt__xent_call *call), \
      OPTIONAL)                                                                                   \
    /* One stage of Winograd's convolution (clt__winograd_call), f32 and f64. */               \
    X(winograd, clt_status, (const char *fn, clt_device *dev, const clt__winograd_call *call),    \
      OPTIONAL)                                                                                   \
    /* The gradient of pool2d: `in` the output's gradient (N x C x OH x OW), `arg` for max     \
     * pooling the indices pool2d wrote, `out` the input's gradient (N x C x H x W),          \
     * overwritten. Max: each element gathers the windows whose index names it; average: each \
     * window's gradient divided by the divisor pool2d used. Floating dtypes. */  \
    X(pool2d_backward, clt_status,                                                                \
      (const char *fn, clt_device *dev, const clt__conv_call *call), OPTIONAL)                    \
    /* Scaled dot-product attention (clt__attention_call). */                                     \
    X(attention, clt_status,                                                                      \
      (const char *fn, clt_device *dev, const clt__attention_call *call), OPTIONAL)               \
    /* The row operations (clt__rows_call). */                                                    \
    X(cumsum, clt_status, (const char *fn, clt_device *dev, const clt__rows_call *call),          \
      OPTIONAL)                                                                                   \
    X(sort, clt_status, (const char *fn, clt_device *dev, const clt__rows_call *call),            \
      OPTIONAL)                                                                                   \
    /* One optimizer update of up to CLT__OPTIM_GROUP parameters (clt__optim_call). */        \
    X(optim_step, clt_status, (const char *fn, clt_device *dev, const clt__optim_call *call),     \
      OPTIONAL)                                                                                   \
    /* n uniform [0, 1) or standard normal values of a floating dtype from Philox counters     \
     * counter, counter + 1, ... under key `seed` (4 values a counter, 2 for f64). */  \
    X(random, clt_status,                                                                         \
      (const char *fn, clt_device *dev, void *buf, size_t off, clt_dtype dtype, size_t n,         \
       bool normal, uint64_t seed, uint64_t counter),                                             \
      OPTIONAL)

/* The entries of pinned memory, the copy queue and synchronisation. */
#define CLT__BACKEND_QUEUE_OPS(X)                                                             \
    /* nbytes > 0 of host memory the device copies from and to fastest (OpenCL: a page-locked \
     * CL_MEM_ALLOC_HOST_PTR buffer, mapped): *ptr is its address, *handle what pinned_free   \
     * takes. Counted as a device allocation. Without it, ordinary host memory is used. */   \
    X(pinned_alloc, clt_status,                                                                   \
      (const char *fn, clt_device *dev, size_t nbytes, void **handle, void **ptr), OPTIONAL)      \
    X(pinned_free, void, (clt_device * dev, void *handle, void *ptr), OPTIONAL)                   \
    /* Queues a copy of nbytes from pinned memory at ptr into buf (from byte 0) on the         \
     * device's copy queue and returns at once: *event (NULL: already done) completes when the \
     * copy has. Without it, the data loader writes on the device's own queue. */  \
    X(upload, clt_status,                                                                         \
      (const char *fn, clt_device *dev, void *buf, const void *ptr, size_t nbytes,                \
       void **event),                                                                             \
      OPTIONAL)                                                                                   \
    /* Makes the work queued on the device after this call wait for event (an upload's),      \
     * without blocking the caller. */   \
    X(queue_wait, clt_status, (const char *fn, clt_device *dev, void *event), OPTIONAL)           \
    X(synchronize, clt_status, (const char *fn, clt_device *dev), REQUIRED)                       \
    /* An event that completes when all work queued so far on the device has (NULL: done). */     \
    X(marker, clt_status, (const char *fn, clt_device *dev, void **event), REQUIRED)              \
    X(event_wait, clt_status, (const char *fn, void *event), REQUIRED)                            \
    X(event_release, void, (void *event), REQUIRED)

/* The whole table, in that order. */
#define CLT__BACKEND_OPS(X)                                                                    \
    CLT__BACKEND_MEMORY_OPS(X) CLT__BACKEND_COMPUTE_OPS(X) CLT__BACKEND_QUEUE_OPS(X)

#define CLT__BACKEND_FIELD(name, ret, params, kind) ret(*name) params;
struct clt__backend {
    const char *name; /* "host", "opencl" */
    CLT__BACKEND_OPS(CLT__BACKEND_FIELD)
};
#undef CLT__BACKEND_FIELD

/* A backend names its functions <prefix><entry> (clt__host_alloc, clt__host_gemm), declares them
 * from the table, so that a definition drifting from it does not compile, and fills its
 * clt__backend from the table too:
 *   #define DECLARE(name, ret, params, kind) ret clt__host_##name params;
 *   CLT__BACKEND_OPS(DECLARE)
 *   #define ENTRY(name, ret, params, kind) .name = clt__host_##name,
 *   const clt__backend clt__host_backend = {.name = "host", CLT__BACKEND_OPS(ENTRY)};
 * (a backend without an OPTIONAL entry lists its entries by hand instead). */

/* Calls an OPTIONAL entry: `op` of dev's backend with (fn, dev, ...), or CLT_ERR_UNSUPPORTED
 * naming fn, op, the device and dtype when the backend lacks it. */
#define CLT__BACKEND_CALL(op, fn, dev, dtype, ...)                                             \
    ((dev)->backend->op ? (dev)->backend->op(fn, dev, __VA_ARGS__)                             \
                        : clt__backend_unsupported(fn, dev, #op, dtype))
clt_status clt__backend_unsupported(const char *fn, const clt_device *dev, const char *op,
                                    clt_dtype dtype);
/* Scratch buffers for a backend's intermediate results, from dev's caching allocator, so that
 * they are reused between calls: the one service the layers above the seam give a backend
 * (lib/device/allocator.c implements it). *capacity receives the buffer's size, for
 * clt__scratch_free; errors name fn. clt__scratch_free gives the buffer back for reuse: work
 * already queued on the device's in-order queue may still read it. */
clt_status clt__scratch_alloc(const char *fn, clt_device *dev, size_t nbytes, void **buf,
                              size_t *capacity);
void clt__scratch_free(clt_device *dev, void *buf, size_t capacity);
/* The conv2d entry composed of dev's own im2col and gemm: the columns of every image into a
 * buffer of the caching allocator, then one strided-batched product, an image a matrix, written
 * in the output's layout; or with one_product, one product over every image's columns, written
 * into the output's layout by column groups. */
clt_status clt__conv2d_composed(const char *fn, clt_device *dev, const clt__conv_call *c,
                                bool one_product);
/* A product that runs a gemm call (a backend's own, or one variant of it), for the compositions
 * below. */
typedef clt_status (*clt__gemm_fn)(const char *fn, clt_device *dev, const clt__gemm_call *c);
/* The gemm call c with column groups (c_group) on a backend, or a variant, that stores C's rows
 * whole: `gemm` into a buffer of the caching allocator, then one copy into the groups. */
clt_status clt__gemm_composed_groups(const char *fn, clt_device *dev, const clt__gemm_call *c,
                                     clt__gemm_fn gemm);
/* The gemm call c on a backend whose product `gemm` has no epilogue of its own: the bias copied
 * into C, the product added to it, then the activation applied in place, each through dev's
 * elementwise entry. */
clt_status clt__gemm_composed_epilogue(const char *fn, clt_device *dev, const clt__gemm_call *c,
                                       clt__gemm_fn gemm);
/* The gemm call c with row sums on a backend, or a variant, whose product does not give them:
 * the row sums apart (which check the call first), then `gemm` without them. The sums are
 * dev's reduce entry over A's rows, or down its columns where stored transposed (beyond
 * CLT__REDUCE_COLUMNS_MAX rows, over the rows of a transposed copy in a buffer of the caching
 * allocator). */
clt_status clt__gemm_composed_row_sums(const char *fn, clt_device *dev, const clt__gemm_call *c,
                                       clt__gemm_fn gemm);
clt_status clt__gemm_row_sums_apart(const char *fn, clt_device *dev, const clt__gemm_call *c);
/* Whether a and b are two devices of one backend that use each other's buffers (its peer). */
static inline bool clt__peers(const clt_device *a, const clt_device *b)
{
    return a != b && a->backend == b->backend && a->backend->peer(a, b);
}
/* Work queued on dev for `then` (peer(dev, then)), st its outcome: what `then` queues next is
 * ordered after it (peer_order, also when st is an error: some of it may have been queued).
 * Returns st and keeps its error where it is one, else peer_order's outcome. */
clt_status clt__peer_order_after(const char *fn, clt_device *dev, clt_device *then,
                                 clt_status st);
/* Copies nbytes from dev's buffer src to `to`'s buffer dst (byte offsets; peer(dev, to)) on
 * dev, without a host round trip and without waiting: after what either device has queued so
 * far (`to`'s earlier work may still use dst, from its pool), before what either queues next. */
clt_status clt__copy_peer(const char *fn, clt_device *dev, void *src, size_t src_offset,
                          clt_device *to, void *dst, size_t dst_offset, size_t nbytes);
/* CLT_OK when every REQUIRED entry of b is set; else CLT_ERR_INTERNAL naming the first missing. */
clt_status clt__backend_check(const char *fn, const clt__backend *b);

/* Values a Philox counter gives for a dtype (4 from f32 arithmetic, 2 for f64). */
static inline size_t clt__random_per_counter(clt_dtype dtype)
{
    return dtype == CLT_F64 ? 2 : 4;
}

/* The name of an elementwise operation ("add"), as its kernel is named ew_<name>. */
const char *clt__ew_name(clt__ew_op op);
/* How many tensor inputs it takes, and whether it gives bool. */
int clt__ew_inputs(clt__ew_op op);
bool clt__ew_gives_bool(clt__ew_op op);

/* What the device registry (lib/device/registry.c) asks of each backend but the host's, in the
 * order of clt__backends (lib/backends/backends.c). Entries but name and enumerate may be NULL. */
typedef struct clt__backend_registry {
    const char *name; /* "opencl" */
    /* Appends the backend's devices to *devices (in the order they are to get gpu:N), growing
     * *count; reads the backend's own environment (CLT_SUBDEVICES for OpenCL). None is not an
     * error. */
    clt_status (*enumerate)(const char *fn, clt_device ***devices, int *count);
    /* Compiles and tunes ahead of time what the backend's kernels on dev will need; the
     * registry's clt_device_warmup then runs one small product per float dtype. */
    clt_status (*warmup)(const char *fn, clt_device *dev);
    /* The backend's disk cache of compiled kernels, for clt_cache_get_info. */
    clt_status (*cache_info)(clt_cache_info *info);
    /* The symbolic name of one of the backend's own status codes ("CL_OUT_OF_RESOURCES"), its
     * short description in *text; NULL for a code it does not know. */
    const char *(*status_name)(clt_status status, const char **text);
    /* One line on how the backend stands once its devices are listed: the libraries it loaded,
     * or why it has no devices (clt_backend_status). */
    const char *(*status)(void);
} clt__backend_registry;

/* Every backend built into the library but the host's, NULL-terminated. */
extern const clt__backend_registry *const clt__backends[];

/* The host backend (lib/backends/host): `cpu` and its description. */
extern const clt__backend clt__host_backend;
clt_status clt__host_describe(clt_device *dev);

#endif
