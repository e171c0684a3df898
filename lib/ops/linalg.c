/* Matrix product front ends (matmul, linear): device, dtype and shape checks, torch.matmul's
 * shape rules (1-D operands promoted to matrices, broadcast batch dimensions), the layout each
 * operand has for BLAS (transposed or not, leading dimension, batch stride) with a copy only
 * where its strides allow none, and dispatch to the device's strided-batched GEMM. */
#include <stdio.h>
#include <string.h>

#include "cltensor/ops.h"
#include "core/core.h"
#include "graph/graph.h"
#include "ops_internal.h"

/* One operand as a batch of rows x cols matrices over a tensor's storage, in elements. */
typedef struct mat {
    clt_tensor *t;      /* whose storage holds the elements; owned when it is a copy */
    bool copy;
    int nb;             /* batch dimensions, their sizes and strides */
    int64_t bshape[CLT_MAX_DIMS], bstrides[CLT_MAX_DIMS];
    int64_t rows, cols, rs, cs; /* matrix sizes and the strides of rows and columns */
} mat;

/* How BLAS reads an operand: stored transposed or not, its leading dimension and batch stride. */
typedef struct layout {
    bool trans;
    size_t ld, stride;
} layout;

static clt_status check_tensors(const char *fn, clt_tensor *const *ts, int n)
{
    if (clt__same_device(fn, ts, n) != CLT_OK)
        return clt_last_status();
    for (int i = 0; i < n; i++) {
        clt_dtype dt = ts[i]->dtype;
        clt_device *dev = ts[i]->storage->device;
        if (dt != CLT_F32 && dt != CLT_F64)
            return clt__error(CLT_ERR_DTYPE, fn,
                              "dtype %s is not supported on %s: matrix products take f32 or f64",
                              clt_dtype_name(dt), dev->name);
        if (dt == CLT_F64 && !dev->info.fp64)
            return clt__error(CLT_ERR_DTYPE, fn,
                              "dtype f64 is not supported on %s (%s): the device has no fp64",
                              dev->name, dev->info.name);
    }
    for (int i = 1; i < n; i++)
        if (ts[i]->dtype != ts[0]->dtype)
            return clt__error(CLT_ERR_DTYPE, fn,
                              "expected all tensors of the same dtype, got %s and %s (matrix "
                              "products do not promote; convert with clt_tensor_to_dtype)",
                              clt_dtype_name(ts[0]->dtype), clt_dtype_name(ts[i]->dtype));
    return CLT_OK;
}

static clt_status shape_error(const char *fn, const clt_tensor *a, const clt_tensor *b,
                              const char *what)
{
    char sa[256], sb[256];
    clt__format_shape(sa, sizeof sa, a->ndim, a->shape);
    clt__format_shape(sb, sizeof sb, b->ndim, b->shape);
    return clt__error(CLT_ERR_SHAPE, fn, "shapes %s and %s %s", sa, sb, what);
}

/* Dimensions first .. first+nb-1 of t as the batch, the two after as the matrix. */
static mat mat_of(clt_tensor *t, int first, int nb)
{
    mat x = {.t = t, .nb = nb};
    for (int d = 0; d < nb; d++) {
        x.bshape[d] = t->shape[first + d];
        x.bstrides[d] = t->strides[first + d];
    }
    x.rows = t->shape[first + nb];
    x.cols = t->shape[first + nb + 1];
    x.rs = t->strides[first + nb];
    x.cs = t->strides[first + nb + 1];
    return x;
}

/* x's batch stride for the output's batch dimension d (0 where broadcast). */
static int64_t batch_stride(const mat *x, int nb, const int64_t *bshape, int d)
{
    int xd = d - (nb - x->nb);
    return xd >= 0 && x->bshape[xd] == bshape[d] ? x->bstrides[xd] : 0;
}

/* x's layout over the output's batch shape; false when its strides give BLAS none: the rows
 * or the columns must be unit-stride, and the batch must advance by one stride (0 included). */
static bool layout_of(const mat *x, int nb, const int64_t *bshape, layout *l)
{
    int64_t s = -1, inner = 1;
    if ((x->cols == 1 || x->cs == 1) && (x->rows == 1 || x->rs >= x->cols)) {
        l->trans = false;
        l->ld = (size_t)(x->rows == 1 ? x->cols : x->rs);
    } else if ((x->rows == 1 || x->rs == 1) && (x->cols == 1 || x->cs >= x->rows)) {
        l->trans = true;
        l->ld = (size_t)(x->cols == 1 ? x->rows : x->cs);
    } else {
        return false;
    }
    for (int d = nb - 1; d >= 0; d--) {
        int64_t st = batch_stride(x, nb, bshape, d);
        if (bshape[d] == 1)
            continue;
        if (s < 0)
            s = st;
        else if (st != s * inner)
            return false;
        inner *= bshape[d];
    }
    l->stride = s < 0 ? 0 : (size_t)s;
    return true;
}

/* x's elements copied into a new contiguous tensor: over the output's batch shape when
 * `expand`, else over x's own. x then describes the copy. */
static clt_status materialize(const char *fn, mat *x, int nb, const int64_t *bshape, bool expand)
{
    clt_tensor *src = x->t, *y;
    clt_device *dev = src->storage->device;
    int n = (expand ? nb : x->nb) + 2;
    int64_t shape[CLT_MAX_DIMS];
    clt__ew_call c = {.op = CLT_EW_copy, .dtype = src->dtype, .ndim = n};
    for (int d = 0; d < n - 2; d++) {
        shape[d] = expand ? bshape[d] : x->bshape[d];
        c.in[0].strides[d] = expand ? batch_stride(x, nb, bshape, d) : x->bstrides[d];
    }
    shape[n - 2] = x->rows;
    shape[n - 1] = x->cols;
    c.in[0].strides[n - 2] = x->rs;
    c.in[0].strides[n - 1] = x->cs;
    y = clt__tensor_new(fn, dev, src->dtype, n, shape);
    if (!y)
        return clt_last_status();
    memcpy(c.shape, y->shape, sizeof c.shape);
    memcpy(c.out.strides, y->strides, sizeof c.out.strides);
    c.out.buf = y->storage->buf;
    c.in[0].buf = src->storage->buf;
    c.in[0].offset = src->offset;
    c.n = y->numel;
    clt__ew_collapse(&c, 1);
    if (y->numel && CLT__BACKEND_CALL(elementwise, fn, dev, c.dtype, &c) != CLT_OK) {
        clt_tensor_release(y);
        return clt_last_status();
    }
    if (x->copy)
        clt_tensor_release(src);
    *x = mat_of(y, 0, n - 2);
    x->copy = true;
    return CLT_OK;
}

/* x's layout, copying x first when its strides allow none: over its own batch shape when that
 * is enough, else over the output's. */
static clt_status prepare(const char *fn, mat *x, int nb, const int64_t *bshape, layout *l)
{
    mat packed = *x;
    if (layout_of(x, nb, bshape, l))
        return CLT_OK;
    packed.rs = x->cols; /* what a contiguous copy of its own shape would have */
    packed.cs = 1;
    int64_t step = x->rows * x->cols;
    for (int d = packed.nb - 1; d >= 0; d--) {
        packed.bstrides[d] = step;
        step *= packed.bshape[d];
    }
    if (materialize(fn, x, nb, bshape, !layout_of(&packed, nb, bshape, l)) != CLT_OK)
        return clt_last_status();
    layout_of(x, nb, bshape, l);
    return CLT_OK;
}

/* What follows the product in its epilogue: a bias (NULL, or (n,) added to every row of each
 * matrix, or with `rows` (m, 1) to every column), then act; with `group` (batch 1), C's columns
 * in groups of that many, the output (n / group, m, group) (clt__gemm_call's c_group). */
typedef struct epilogue {
    clt_tensor *bias;
    bool rows;
    clt__act act;
    size_t group;
    clt_tensor *row_sums; /* a's rows summed into it as well (batch 1, a dense) */
} epilogue;

/* The product of no terms (k 0), for the epilogue alone. */
static clt_status no_product(const char *fn, clt_device *dev, const clt__gemm_call *c)
{
    (void)fn, (void)dev, (void)c;
    return CLT_OK;
}

/* out = act(bias) where the product has no terms (k 0), bias (contiguous) in every row or
 * column: the epilogue as backends without one run it (clt__gemm_composed_epilogue); zeros
 * without a bias (relu(0) is 0). */
static clt_status bias_only(const char *fn, clt_tensor *out, clt_tensor *bias, const epilogue *e)
{
    clt_device *dev = out->storage->device;
    size_t esize = clt_dtype_size(out->dtype);
    static const unsigned char zeros[8] = {0};
    if (!bias)
        return dev->backend->fill(fn, dev, out->storage->buf, out->offset * esize, zeros, esize,
                                  out->numel * esize);
    size_t n = e->rows ? (size_t)out->shape[out->ndim - 1] : (size_t)bias->shape[0];
    clt__gemm_call g = {.dtype = out->dtype,
                        .m = out->numel / n,
                        .n = n,
                        .batch = 1,
                        .c = out->storage->buf,
                        .c_offset = out->offset,
                        .ldc = n,
                        .c_stride = out->numel,
                        .bias = bias->storage->buf,
                        .bias_offset = bias->offset,
                        .bias_rows = e->rows,
                        .act = e->act};
    if (e->group) /* (n / group, m, group): a batch of m x group, the bias along each's rows */
        g.batch = (size_t)out->shape[0], g.m = (size_t)out->shape[1], g.c_stride = g.m * n;
    return clt__gemm_composed_epilogue(fn, dev, &g, no_product);
}

/* out (batch..., m, n, contiguous; the 1 of a 1-D operand left out) = a @ b, through the
 * epilogue e (NULL: none). */
static clt_status product(const char *fn, clt_tensor *out, mat *a, mat *b, const epilogue *e)
{
    clt_device *dev = out->storage->device;
    int nb = a->nb > b->nb ? a->nb : b->nb;
    int64_t bshape[CLT_MAX_DIMS];
    size_t batch = 1;
    layout la, lb;
    clt__gemm_call g;
    clt_tensor *bias = e ? e->bias : NULL;
    clt_status st;

    for (int d = 0; d < nb; d++) {
        int ad = d - (nb - a->nb), bd = d - (nb - b->nb);
        int64_t sa = ad >= 0 ? a->bshape[ad] : 1, sb = bd >= 0 ? b->bshape[bd] : 1;
        bshape[d] = sa == 1 ? sb : sa;
        batch *= (size_t)bshape[d];
    }
    if (out->numel == 0)
        return CLT_OK;
    if (clt__storage_sync(fn, a->t->storage) != CLT_OK ||
        clt__storage_sync(fn, b->t->storage) != CLT_OK ||
        (bias && clt__storage_sync(fn, bias->storage) != CLT_OK))
        return clt_last_status();
    /* the epilogue reads the bias's elements one after another */
    if (bias && !(bias = bias->shape[0] > 1 && bias->strides[0] != 1
                             ? clt__contiguous(fn, bias)
                             : clt_tensor_retain(bias)))
        return clt_last_status();
    if (a->cols == 0 || prepare(fn, a, nb, bshape, &la) != CLT_OK ||
        prepare(fn, b, nb, bshape, &lb) != CLT_OK) {
        st = a->cols == 0 ? bias_only(fn, out, bias, e) : clt_last_status();
        clt_tensor_release(bias);
        return st;
    }
    g = (clt__gemm_call){
        .dtype = out->dtype,
        .trans_a = la.trans,
        .trans_b = lb.trans,
        .m = (size_t)a->rows,
        .n = (size_t)b->cols,
        .k = (size_t)a->cols,
        .batch = batch,
        .alpha = 1,
        .a = a->t->storage->buf,
        .b = b->t->storage->buf,
        .c = out->storage->buf,
        .a_offset = a->t->offset,
        .b_offset = b->t->offset,
        .c_offset = out->offset,
        .lda = la.ld,
        .ldb = lb.ld,
        .ldc = (size_t)b->cols,
        .a_stride = la.stride,
        .b_stride = lb.stride,
        .c_stride = (size_t)(a->rows * b->cols),
        .bias = bias ? bias->storage->buf : NULL,
        .bias_offset = bias ? bias->offset : 0,
        .bias_rows = bias && e->rows,
        .act = e ? e->act : CLT__ACT_NONE,
        .row_sums = e && e->row_sums ? e->row_sums->storage->buf : NULL,
        .row_sums_offset = e && e->row_sums ? e->row_sums->offset : 0,
    };
    if (e && e->group && e->group < g.n) /* (n / group, m, group): each group's m rows in turn */
        g.ldc = e->group, g.c_group = e->group, g.c_group_stride = g.m * e->group;
    /* one B for the whole batch and A's matrices one after another: a single taller product
     * (not with a bias along the rows, which each matrix repeats) */
    if (g.batch > 1 && g.b_stride == 0 && !g.trans_a && g.a_stride == g.m * g.lda &&
        !g.bias_rows) {
        g.m *= g.batch;
        g.batch = 1;
    }
    st = CLT__BACKEND_CALL(gemm, fn, dev, g.dtype, &g);
    clt_tensor_release(bias);
    return st;
}

/* Runs product into a new tensor of the given shape; releases the operands' copies. */
static clt_tensor *run(const char *fn, int ndim, const int64_t *shape, mat *a, mat *b,
                       const epilogue *e)
{
    clt_tensor *out = clt__tensor_new(fn, a->t->storage->device, a->t->dtype, ndim, shape);
    if (out && product(fn, out, a, b, e) != CLT_OK) {
        clt_tensor_release(out);
        out = NULL;
    }
    if (a->copy)
        clt_tensor_release(a->t);
    if (b->copy)
        clt_tensor_release(b->t);
    return out;
}

static clt_tensor *matmul_impl(clt_tensor *a, clt_tensor *b)
{
    static const char *const fn = "clt_matmul";
    clt_tensor *ts[2] = {a, b};
    int64_t shape[CLT_MAX_DIMS];
    int ndim = 0, nb;
    mat ma, mb;

    if (check_tensors(fn, ts, 2) != CLT_OK)
        return NULL;
    if (a->ndim == 0 || b->ndim == 0) {
        shape_error(fn, a, b, "cannot be multiplied: both need at least 1 dimension");
        return NULL;
    }
    /* a 1-D a is one row, a 1-D b one column */
    if (a->ndim == 1)
        ma = (mat){.t = a, .rows = 1, .cols = a->shape[0], .rs = a->shape[0], .cs = a->strides[0]};
    else
        ma = mat_of(a, 0, a->ndim - 2);
    if (b->ndim == 1)
        mb = (mat){.t = b, .rows = b->shape[0], .cols = 1, .rs = b->strides[0], .cs = 1};
    else
        mb = mat_of(b, 0, b->ndim - 2);
    if (ma.cols != mb.rows) {
        char what[96];
        snprintf(what, sizeof what, "cannot be multiplied (inner sizes %lld and %lld differ)",
                 (long long)ma.cols, (long long)mb.rows);
        shape_error(fn, a, b, what);
        return NULL;
    }
    nb = ma.nb > mb.nb ? ma.nb : mb.nb;
    for (int d = 0; d < nb; d++) {
        int ad = d - (nb - ma.nb), bd = d - (nb - mb.nb);
        int64_t sa = ad >= 0 ? ma.bshape[ad] : 1, sb = bd >= 0 ? mb.bshape[bd] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char what[128];
            snprintf(what, sizeof what,
                     "cannot be multiplied: their batch dimensions do not broadcast (batch "
                     "dimension %d: %lld and %lld)",
                     d, (long long)sa, (long long)sb);
            shape_error(fn, a, b, what);
            return NULL;
        }
        shape[ndim++] = sa == 1 ? sb : sa;
    }
    if (a->ndim > 1)
        shape[ndim++] = ma.rows;
    if (b->ndim > 1)
        shape[ndim++] = mb.cols;
    return run(fn, ndim, shape, &ma, &mb, NULL);
}

static clt_tensor *linear_impl(const char *fn, clt_tensor *x, clt_tensor *weight,
                               clt_tensor *bias, clt__act act)
{
    clt_tensor *ts[3] = {x, weight, bias};
    int64_t shape[CLT_MAX_DIMS];
    mat mx, mw;

    if (check_tensors(fn, ts, bias ? 3 : 2) != CLT_OK)
        return NULL;
    if (x->ndim == 0 || weight->ndim != 2) {
        shape_error(fn, x, weight,
                    "do not fit x (..., in) and weight (out, in): x needs at least 1 "
                    "dimension, weight exactly 2");
        return NULL;
    }
    if (x->shape[x->ndim - 1] != weight->shape[1]) {
        char what[128];
        snprintf(what, sizeof what,
                 "do not fit x (..., in) and weight (out, in): in is %lld and %lld",
                 (long long)x->shape[x->ndim - 1], (long long)weight->shape[1]);
        shape_error(fn, x, weight, what);
        return NULL;
    }
    if (bias && (bias->ndim != 1 || bias->shape[0] != weight->shape[0])) {
        char what[128];
        snprintf(what, sizeof what, "do not fit weight (out, in) and bias (out) with out = %lld",
                 (long long)weight->shape[0]);
        shape_error(fn, weight, bias, what);
        return NULL;
    }
    if (x->ndim == 1)
        mx = (mat){.t = x, .rows = 1, .cols = x->shape[0], .rs = x->shape[0], .cs = x->strides[0]};
    else
        mx = mat_of(x, 0, x->ndim - 2);
    /* weight^T: in x out */
    mw = (mat){.t = weight, .rows = weight->shape[1], .cols = weight->shape[0],
               .rs = weight->strides[1], .cs = weight->strides[0]};
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = weight->shape[0];
    return run(fn, x->ndim, shape, &mx, &mw, &(epilogue){.bias = bias, .act = act});
}

/* act(a @ b + bias) for matrices, bias NULL or (m, 1). */
static clt_tensor *matmul_act_impl(const char *fn, clt_tensor *a, clt_tensor *b,
                                   clt_tensor *bias, clt__act act)
{
    clt_tensor *ts[3] = {a, b, bias};
    if (check_tensors(fn, ts, bias ? 3 : 2) != CLT_OK)
        return NULL;
    if (a->ndim != 2 || b->ndim != 2 || a->shape[1] != b->shape[0] ||
        (bias && (bias->ndim != 2 || bias->shape[0] != a->shape[0] || bias->shape[1] != 1))) {
        shape_error(fn, a, b, "do not fit a (m, k), b (k, n) and a bias (m, 1)");
        return NULL;
    }
    mat ma = mat_of(a, 0, 0), mb = mat_of(b, 0, 0);
    return run(fn, 2, (int64_t[]){a->shape[0], b->shape[1]}, &ma, &mb,
               &(epilogue){.bias = bias, .rows = true, .act = act});
}

/* act(a @ b + bias) for a (m, k), b (k, n) and a bias NULL or (m, 1), as (n / group, m, group). */
static clt_tensor *conv_product_impl(const char *fn, clt_tensor *a, clt_tensor *b,
                                     clt_tensor *bias, clt__act act, int64_t group)
{
    clt_tensor *ts[3] = {a, b, bias};
    if (check_tensors(fn, ts, bias ? 3 : 2) != CLT_OK)
        return NULL;
    if (a->ndim != 2 || b->ndim != 2 || a->shape[1] != b->shape[0] || group < 1 ||
        b->shape[1] % group ||
        (bias && (bias->ndim != 2 || bias->shape[0] != a->shape[0] || bias->shape[1] != 1))) {
        shape_error(fn, a, b, "do not fit a (m, k), b (k, n), a bias (m, 1) and groups that "
                              "divide n");
        return NULL;
    }
    mat ma = mat_of(a, 0, 0), mb = mat_of(b, 0, 0);
    return run(fn, 3, (int64_t[]){b->shape[1] / group, a->shape[0], group}, &ma, &mb,
               &(epilogue){.bias = bias, .rows = true, .act = act, .group = (size_t)group});
}

clt_tensor *clt__matmul_row_sums(const char *fn, clt_tensor *a, clt_tensor *b, clt_tensor **sums)
{
    clt_tensor *ts[2] = {a, b}, *out = NULL;
    *sums = NULL;
    if (check_tensors(fn, ts, 2) != CLT_OK)
        return NULL;
    if (a->ndim != 2 || b->ndim != 2 || a->shape[1] != b->shape[0]) {
        shape_error(fn, a, b, "do not fit a (m, k) and b (k, n)");
        return NULL;
    }
    int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
    /* a dense, rows by rows or transposed (as the product reads it, without a copy) */
    bool dense = (a->strides[1] == 1 && a->strides[0] == k) ||
                 (a->strides[0] == 1 && a->strides[1] == m);
    if (m < 2 || k < 2 || n < 1 || !dense || (a->dtype != CLT_F32 && a->dtype != CLT_F64) ||
        b->dtype != a->dtype) { /* the sums apart */
        out = clt_matmul(a, b);
        *sums = out ? clt_sum(a, (int[]){1}, 1, false) : NULL;
        if (!*sums) {
            clt_tensor_release(out);
            return NULL;
        }
        return out;
    }
    mat ma = mat_of(a, 0, 0), mb = mat_of(b, 0, 0);
    if (!(*sums = clt__tensor_new(fn, a->storage->device, a->dtype, 1, &m)))
        return NULL;
    if (!(out = run(fn, 2, (int64_t[]){m, n}, &ma, &mb, &(epilogue){.row_sums = *sums}))) {
        clt_tensor_release(*sums);
        *sums = NULL;
    }
    return out;
}

/* ---- autograd ------------------------------------------------------------------------------------ */

clt_tensor *clt_matmul(clt_tensor *a, clt_tensor *b)
{
    clt_tensor *in[2] = {a, b}, *out;
    bool prev, rec = clt__grad_begin(in, 2, &prev);
    out = matmul_impl(a, b);
    clt__grad_end(prev);
    return rec ? clt__record("clt_matmul", CLT__OP_matmul, in, 2, out, NULL) : out;
}

clt_tensor *clt_linear(clt_tensor *x, clt_tensor *weight, clt_tensor *bias)
{
    return clt__linear_act(x, weight, bias, CLT__ACT_NONE);
}

clt_tensor *clt__linear_act(clt_tensor *x, clt_tensor *weight, clt_tensor *bias, clt__act act)
{
    static const char *const fn = "clt_linear";
    clt_tensor *in[3] = {x, weight, bias}, *out;
    bool prev, rec = clt__grad_begin(in, 3, &prev);
    out = linear_impl(fn, x, weight, bias, act);
    clt__grad_end(prev);
    return rec ? clt__record(fn, act ? CLT__OP_linear_act : CLT__OP_linear, in, bias ? 3 : 2,
                             out, &(clt__node_args){.i0 = act})
               : out;
}

clt_tensor *clt__conv_product(const char *fn, clt_tensor *a, clt_tensor *b, clt_tensor *bias,
                              clt__act act, int64_t group)
{
    clt_tensor *in[3] = {a, b, bias}, *out;
    bool prev, rec = clt__grad_begin(in, 3, &prev);
    out = conv_product_impl(fn, a, b, bias, act, group);
    clt__grad_end(prev);
    return rec ? clt__record(fn, CLT__OP_conv_product, in, bias ? 3 : 2, out,
                             &(clt__node_args){.i0 = act})
               : out;
}

clt_tensor *clt__matmul_act(const char *fn, clt_tensor *a, clt_tensor *b, clt_tensor *bias,
                            clt__act act)
{
    clt_tensor *in[3] = {a, b, bias}, *out;
    bool prev, rec = clt__grad_begin(in, 3, &prev);
    out = matmul_act_impl(fn, a, b, bias, act);
    clt__grad_end(prev);
    return rec ? clt__record(fn, CLT__OP_matmul_act, in, bias ? 3 : 2, out,
                             &(clt__node_args){.i0 = act})
               : out;
}
