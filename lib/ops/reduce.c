/* Reduction front ends: checking the dims, moving the reduced dimensions last and making the
 * input contiguous, so that the backend reduces `rows` contiguous rows of `len` elements (or
 * sums down the columns of the input as it lies, where the kept dimensions come last), and
 * composing mean, var, std and logsumexp from the backend's sums, maxima and squared
 * deviations with elementwise operations. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cltensor/ops.h"
#include "core/core.h"
#include "graph/graph.h"
#include "ops_internal.h"

/* How x is reduced: the dims, the permutation that moves them last, the rows and their length,
 * and the result's shape. */
typedef struct plan {
    bool reduced[CLT_MAX_DIMS];
    int perm[CLT_MAX_DIMS]; /* the kept dimensions in order, then the reduced ones */
    bool moved;             /* perm is not the identity */
    size_t rows, len;
    size_t inner; /* > 1: sums down the columns of x as it lies (columns_plan) */
    int ndim; /* the result's */
    int64_t shape[CLT_MAX_DIMS];
    int empty_dim; /* a reduced dimension of size 0, or -1 */
} plan;

/* t, or, when t is NULL (a call made for fn failed), NULL with the error renamed "fn: cause". */
static clt_tensor *named(const char *fn, clt_tensor *t)
{
    if (!t)
        clt__rename_error(fn);
    return t;
}

/* Checks x and the dims and works out the plan. */
static clt_status make_plan(const char *fn, const clt_tensor *x, const int *dims, int ndims,
                            bool keepdim, plan *p)
{
    int n = 0;
    if (clt__tensor_check(fn, x) != CLT_OK)
        return CLT_ERR_INVALID_ARGUMENT;
    if (ndims < 0 || ndims > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "ndims %d is outside 0..%d", ndims,
                          CLT_MAX_DIMS);
    if (ndims > 0 && !dims)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "dims is NULL (ndims %d)", ndims);
    memset(p, 0, sizeof *p);
    for (int i = 0; i < ndims; i++) {
        int d = dims[i];
        if (clt__dim_check(fn, &d, x->ndim) != CLT_OK)
            return CLT_ERR_INVALID_ARGUMENT;
        if (p->reduced[d])
            return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                              "dim %d appears more than once in dims (valid: %d..%d, each once)",
                              dims[i], x->ndim > 0 ? -x->ndim : -1, x->ndim > 0 ? x->ndim - 1 : 0);
        p->reduced[d] = true;
    }
    p->rows = p->len = 1;
    p->empty_dim = -1;
    for (int d = 0; d < x->ndim; d++) {
        if (ndims == 0)
            p->reduced[d] = true;
        if (!p->reduced[d]) {
            p->rows *= (size_t)x->shape[d];
            p->perm[n++] = d;
            p->shape[p->ndim++] = x->shape[d];
        } else {
            p->len *= (size_t)x->shape[d];
            if (x->shape[d] == 0 && p->empty_dim < 0)
                p->empty_dim = d;
            if (keepdim)
                p->shape[p->ndim++] = 1;
        }
    }
    for (int d = 0; d < x->ndim; d++)
        if (p->reduced[d])
            p->perm[n++] = d;
    for (int d = 0; d < x->ndim; d++)
        p->moved = p->moved || p->perm[d] != d;
    return CLT_OK;
}

/* Sums of a floating x whose reduced dimensions are one block with kept ones after it, whose
 * elements number at least COLUMNS_MIN, run down the columns of x as it lies: p's rows become
 * the groups before the block, each of len rows of p->inner columns (no transposing copy: the
 * bias's gradient of a linear layer, (N, out) summed over N, took one, and its launch; a
 * classifier's 10 outputs too). One column is a contiguous row of its own. */
#define COLUMNS_MIN 2
static void columns_plan(const clt_tensor *x, plan *p)
{
    int a = 0, b;
    size_t outer = 1, inner = 1;
    while (a < x->ndim && !p->reduced[a])
        outer *= (size_t)x->shape[a++];
    for (b = a; b < x->ndim && p->reduced[b]; b++)
        ;
    for (int d = b; d < x->ndim; d++) {
        if (p->reduced[d])
            return; /* a second block */
        inner *= (size_t)x->shape[d];
    }
    if (!clt__is_floating(x->dtype) || b == x->ndim || inner < COLUMNS_MIN ||
        p->len > CLT__REDUCE_COLUMNS_MAX)
        return;
    p->rows = outer, p->inner = inner;
}

/* x with the reduced dimensions moved last (or as it lies, for columns), contiguous: a new
 * reference. */
static clt_tensor *arrange(const char *fn, clt_tensor *x, const plan *p)
{
    clt_tensor *v, *c;
    if (!p->moved || p->inner > 1)
        return clt__contiguous(fn, x);
    v = named(fn, clt_permute(x, p->perm));
    if (!v)
        return NULL;
    c = clt__contiguous(fn, v);
    clt_tensor_release(v);
    return c;
}

/* Runs op over `rows` rows of `len` elements of the contiguous xc into out (contiguous, rows
 * elements); mean (SQDEV) gives one value a row. Rows without elements give 0. */
static clt_status launch(const char *fn, clt__reduce_op op, clt_tensor *xc, size_t rows,
                         size_t len, size_t inner, clt_tensor *out, clt_tensor *mean)
{
    clt_device *dev = out->storage->device;
    clt__reduce_call c = {.op = op, .dtype = xc->dtype, .rows = rows, .len = len, .inner = inner,
                          .in = xc->storage->buf, .in_offset = xc->offset,
                          .out = out->storage->buf, .out_offset = out->offset};
    if (rows == 0)
        return CLT_OK;
    if (clt__storage_sync(fn, out->storage) != CLT_OK)
        return clt_last_status();
    if (len == 0) {
        static const unsigned char zero[8] = {0};
        size_t size = clt_dtype_size(out->dtype);
        return dev->backend->fill(fn, dev, out->storage->buf, out->offset * size, zero, size,
                                  rows * (inner > 1 ? inner : 1) * size);
    }
    if (mean) {
        c.mean = mean->storage->buf;
        c.mean_offset = mean->offset;
        if (clt__storage_sync(fn, mean->storage) != CLT_OK)
            return clt_last_status();
    }
    if (clt__storage_sync(fn, xc->storage) != CLT_OK)
        return clt_last_status();
    return CLT__BACKEND_CALL(reduce, fn, dev, c.dtype, &c);
}

/* op over the arranged xc into a new tensor of the given shape and the op's result dtype. */
static clt_tensor *reduce_new(const char *fn, clt__reduce_op op, clt_tensor *xc, size_t rows,
                              size_t len, size_t inner, int ndim, const int64_t *shape,
                              clt_tensor *mean)
{
    clt_tensor *out = clt__tensor_new(fn, xc->storage->device, clt__reduce_dtype(op, xc->dtype),
                                      ndim, shape);
    if (out && launch(fn, op, xc, rows, len, inner, out, mean) != CLT_OK) {
        clt_tensor_release(out);
        return NULL;
    }
    return out;
}

/* t converted to dtype (t's reference is taken over). */
static clt_tensor *finish(const char *fn, clt_tensor *t, clt_dtype dtype)
{
    clt_tensor *r;
    if (!t || t->dtype == dtype)
        return t;
    r = named(fn, clt_tensor_to_dtype(t, dtype));
    clt_tensor_release(t);
    return r;
}


static clt_status need_elements(const char *fn, const clt_tensor *x, const plan *p)
{
    char s[256];
    if (p->len > 0)
        return CLT_OK;
    clt__format_shape(s, sizeof s, x->ndim, x->shape);
    return clt__error(CLT_ERR_SHAPE, fn,
                      "cannot reduce over dim %d of size 0 (shape %s): the reduction has no "
                      "identity",
                      p->empty_dim, s);
}

/* ---- sum, max, min, argmax, argmin --------------------------------------------------------- */

/* op over the plan's rows: the result in the op's dtype. */
static clt_tensor *simple(const char *fn, clt__reduce_op op, clt_tensor *x, const int *dims,
                          int ndims, bool keepdim)
{
    plan p;
    clt_tensor *xc, *out;
    if (make_plan(fn, x, dims, ndims, keepdim, &p) != CLT_OK)
        return NULL;
    if (op != CLT_REDUCE_SUM && need_elements(fn, x, &p) != CLT_OK)
        return NULL;
    if (op == CLT_REDUCE_SUM)
        columns_plan(x, &p);
    xc = arrange(fn, x, &p);
    if (!xc)
        return NULL;
    out = reduce_new(fn, op, xc, p.rows, p.len, p.inner, p.ndim, p.shape, NULL);
    clt_tensor_release(xc);
    return out;
}

static clt_tensor *sum_impl(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    static const char *const fn = "clt_sum";
    clt_tensor *s = simple(fn, CLT_REDUCE_SUM, x, dims, ndims, keepdim);
    /* f16 and bf16 sum in f32 and give their own dtype back, as PyTorch */
    if (s && clt__is_floating(x->dtype) && clt__dtype(x->dtype)->compute != x->dtype)
        return finish(fn, s, x->dtype);
    return s;
}

static clt_tensor *max_impl(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    return simple("clt_amax", CLT_REDUCE_AMAX, x, dims, ndims, keepdim);
}

static clt_tensor *min_impl(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    return simple("clt_amin", CLT_REDUCE_AMIN, x, dims, ndims, keepdim);
}

clt_tensor *clt_argmax(clt_tensor *x, int dim, bool keepdim)
{
    return simple("clt_argmax", CLT_REDUCE_ARGMAX, x, &dim, 1, keepdim);
}

clt_tensor *clt_argmin(clt_tensor *x, int dim, bool keepdim)
{
    return simple("clt_argmin", CLT_REDUCE_ARGMIN, x, &dim, 1, keepdim);
}

clt_tensor *clt_argmax_all(clt_tensor *x)
{
    return simple("clt_argmax_all", CLT_REDUCE_ARGMAX, x, NULL, 0, false);
}

clt_tensor *clt_argmin_all(clt_tensor *x)
{
    return simple("clt_argmin_all", CLT_REDUCE_ARGMIN, x, NULL, 0, false);
}

/* ---- mean, var, std -------------------------------------------------------------------------- */

static clt_tensor *mean_impl(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    static const char *const fn = "clt_mean";
    plan p;
    clt_tensor *xc, *s, *m = NULL;
    if (make_plan(fn, x, dims, ndims, keepdim, &p) != CLT_OK || clt__need_floating(fn, x) != CLT_OK)
        return NULL;
    columns_plan(x, &p);
    xc = arrange(fn, x, &p);
    if (!xc)
        return NULL;
    if (p.len > 0 && p.inner <= 1) { /* one launch: the sum divided where it is made */
        m = reduce_new(fn, CLT_REDUCE_MEAN, xc, p.rows, p.len, 0, p.ndim, p.shape, NULL);
    } else { /* down columns, or no elements (0 / 0 = NaN) */
        s = reduce_new(fn, CLT_REDUCE_SUM, xc, p.rows, p.len, p.inner, p.ndim, p.shape, NULL);
        if (s)
            m = named(fn, clt_div_scalar(s, (double)p.len));
        clt_tensor_release(s);
    }
    clt_tensor_release(xc);
    return finish(fn, m, x->dtype);
}

static clt_tensor *variance(const char *fn, clt_tensor *x, const int *dims, int ndims,
                            int64_t correction, bool keepdim, bool root)
{
    plan p;
    clt_tensor *xc, *s = NULL, *m = NULL, *q = NULL, *v = NULL, *r = NULL;
    double divisor;
    if (make_plan(fn, x, dims, ndims, keepdim, &p) != CLT_OK || clt__need_floating(fn, x) != CLT_OK)
        return NULL;
    xc = arrange(fn, x, &p);
    if (!xc)
        return NULL;
    divisor = (double)p.len - (double)correction;
    s = reduce_new(fn, CLT_REDUCE_SUM, xc, p.rows, p.len, 0, p.ndim, p.shape, NULL);
    if (s)
        m = named(fn, clt_div_scalar(s, (double)p.len));
    if (m)
        q = reduce_new(fn, CLT_REDUCE_SQDEV, xc, p.rows, p.len, 0, p.ndim, p.shape, m);
    if (q)
        v = named(fn, clt_div_scalar(q, divisor > 0 ? divisor : 0.0));
    if (v)
        r = root ? named(fn, clt_sqrt(v)) : clt_tensor_retain(v);
    clt_tensor_release(v);
    clt_tensor_release(q);
    clt_tensor_release(m);
    clt_tensor_release(s);
    clt_tensor_release(xc);
    return finish(fn, r, x->dtype);
}

static clt_tensor *var_impl(clt_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim)
{
    return variance("clt_var", x, dims, ndims, correction, keepdim, false);
}

static clt_tensor *std_impl(clt_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim)
{
    return variance("clt_std", x, dims, ndims, correction, keepdim, true);
}

/* ---- logsumexp ------------------------------------------------------------------------------- */

/* max + log(sum(exp(x - max))) over rows of the arranged xc (f32 or f64), as a (rows, 1)
 * tensor. An infinite max is replaced by the largest finite value, which gives inf for a row
 * holding +inf and -inf for a row of -inf only, where x - max would be NaN. */
static clt_tensor *lse_rows(const char *fn, clt_tensor *xc, size_t rows, size_t len)
{
    clt_device *dev = xc->storage->device;
    double big = xc->dtype == CLT_F64 ? DBL_MAX : FLT_MAX;
    int64_t col[2] = {(int64_t)rows, 1}, all[2] = {(int64_t)rows, (int64_t)len};
    clt_tensor *m, *mc = NULL, *x2 = NULL, *d = NULL, *e = NULL, *s = NULL, *l = NULL, *r = NULL;
    m = reduce_new(fn, CLT_REDUCE_AMAX, xc, rows, len, 0, 2, col, NULL);
    if (m)
        mc = named(fn, clt_clamp(m, -big, big));
    if (mc)
        x2 = named(fn, clt_view(xc, 2, all));
    if (x2)
        d = named(fn, clt_sub(x2, mc));
    if (d)
        e = named(fn, clt_exp(d));
    if (e)
        s = clt__tensor_new(fn, dev, xc->dtype, 2, col);
    if (s && launch(fn, CLT_REDUCE_SUM, e, rows, len, 0, s, NULL) == CLT_OK)
        l = named(fn, clt_log(s));
    if (l)
        r = named(fn, clt_add(l, mc));
    clt_tensor_release(l);
    clt_tensor_release(s);
    clt_tensor_release(e);
    clt_tensor_release(d);
    clt_tensor_release(x2);
    clt_tensor_release(mc);
    clt_tensor_release(m);
    return r;
}

static clt_tensor *logsumexp_impl(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    static const char *const fn = "clt_logsumexp";
    plan p;
    clt_dtype work, out;
    clt_tensor *xf, *xc = NULL, *rows = NULL, *r = NULL;
    if (make_plan(fn, x, dims, ndims, keepdim, &p) != CLT_OK)
        return NULL;
    out = clt__is_floating(x->dtype) ? x->dtype : CLT_F32;
    work = x->dtype == CLT_F64 ? CLT_F64 : CLT_F32;
    if (p.rows == 0 || p.len == 0) { /* log(0) = -inf for every row */
        unsigned char pattern[8];
        double value = -INFINITY;
        r = clt__tensor_new(fn, x->storage->device, out, p.ndim, p.shape);
        if (r && r->storage->nbytes > 0) {
            clt_device *dev = r->storage->device;
            clt__host_convert(&value, 0, CLT_F64, pattern, 0, out, 1);
            if (dev->backend->fill(fn, dev, r->storage->buf, 0, pattern, clt_dtype_size(out),
                                   r->storage->nbytes) != CLT_OK) {
                clt_tensor_release(r);
                r = NULL;
            }
        }
        return r;
    }
    xf = x->dtype == work ? clt_tensor_retain(x) : named(fn, clt_tensor_to_dtype(x, work));
    if (xf)
        xc = arrange(fn, xf, &p);
    if (xc)
        rows = lse_rows(fn, xc, p.rows, p.len);
    if (rows)
        r = named(fn, clt_view(rows, p.ndim, p.shape));
    clt_tensor_release(rows);
    clt_tensor_release(xc);
    clt_tensor_release(xf);
    return finish(fn, r, out);
}

/* ---- autograd ------------------------------------------------------------------------------------ */

/* out, a reduction of x over dims, recorded for autograd as operation op. */
static clt_tensor *recorded(const char *fn, clt__op op, clt_tensor *x, clt_tensor *out,
                            const int *dims, int ndims, bool keepdim, int64_t correction)
{
    clt__node_args args = {.i0 = correction};
    if (!out)
        return NULL;
    clt__reduce_args(&args, x->ndim, dims, ndims, keepdim);
    return clt__record(fn, op, &x, 1, out, &args);
}

#define RECORDED(name, op, call, correction)                                                   \
    do {                                                                                       \
        bool prev_, rec_ = clt__grad_begin(&x, 1, &prev_);                                     \
        clt_tensor *out_ = call;                                                               \
        clt__grad_end(prev_);                                                                  \
        if (!rec_ || !out_ || !clt__is_floating(out_->dtype))                                  \
            return out_;                                                                       \
        return recorded(name, op, x, out_, dims, ndims, keepdim, correction);                  \
    } while (0)

clt_tensor *clt_sum(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    RECORDED("clt_sum", CLT__OP_sum, sum_impl(x, dims, ndims, keepdim), 0);
}

clt_tensor *clt_mean(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    RECORDED("clt_mean", CLT__OP_mean, mean_impl(x, dims, ndims, keepdim), 0);
}

clt_tensor *clt_amax(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    RECORDED("clt_amax", CLT__OP_amax, max_impl(x, dims, ndims, keepdim), 0);
}

clt_tensor *clt_amin(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    RECORDED("clt_amin", CLT__OP_amin, min_impl(x, dims, ndims, keepdim), 0);
}

clt_tensor *clt_var(clt_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim)
{
    RECORDED("clt_var", CLT__OP_var, var_impl(x, dims, ndims, correction, keepdim), correction);
}

clt_tensor *clt_std(clt_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim)
{
    RECORDED("clt_std", CLT__OP_std, std_impl(x, dims, ndims, correction, keepdim), correction);
}

clt_tensor *clt_logsumexp(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    RECORDED("clt_logsumexp", CLT__OP_logsumexp, logsumexp_impl(x, dims, ndims, keepdim), 0);
}

/* torch.max(x, dim) / torch.min(x, dim): the values picked by argmax / argmin, so that the
 * gradient reaches the element each index names (and only it), as in PyTorch; amax / amin share
 * it among equal elements instead. */
static clt_tensor *extreme_along(const char *fn, clt_tensor *x, int dim, bool keepdim,
                                 clt_tensor **indices, bool largest)
{
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *idx = NULL, *range = NULL, *at = NULL, *mask = NULL, *zero = NULL,
               *picked = NULL, *sum = NULL, *values = NULL;
    if (indices)
        *indices = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK ||
        clt__dim_check(fn, &dim, x->ndim ? x->ndim : 1) != CLT_OK)
        return NULL;
    if (x->ndim == 0) { /* a 0-d x is its own maximum, at index 0 */
        values = clt_tensor_to_ex(x, &(clt_to_options){.copy = true});
        idx = values ? clt_tensor_zeros(0, NULL, CLT_I64, x->storage->device) : NULL;
        goto out;
    }
    idx = largest ? clt_argmax(x, dim, true) : clt_argmin(x, dim, true);
    for (int d = 0; d < x->ndim; d++)
        shape[d] = d == dim ? x->shape[dim] : 1;
    range = idx ? clt_tensor_arange(0, (double)x->shape[dim], 1, CLT_I64, x->storage->device)
                : NULL;
    at = range ? clt_reshape(range, x->ndim, shape) : NULL;
    mask = at ? clt_eq(at, idx) : NULL;
    zero = mask ? clt_tensor_zeros(0, NULL, x->dtype, x->storage->device) : NULL;
    picked = zero ? clt_where(mask, x, zero) : NULL;
    sum = picked ? clt_sum(picked, &dim, 1, keepdim) : NULL;
    values = sum ? clt_tensor_to_dtype(sum, x->dtype) : NULL; /* integer sums are i64 */
    if (values && !keepdim) {
        clt_tensor *squeezed = clt_squeeze(idx, dim);
        clt_tensor_release(idx);
        idx = squeezed;
    }
out:
    if (!values || !idx) {
        clt__rename_error(fn);
        clt_tensor_release(values);
        values = NULL;
    } else if (indices) {
        *indices = clt_tensor_retain(idx);
    }
    clt_tensor_release(sum);
    clt_tensor_release(picked);
    clt_tensor_release(zero);
    clt_tensor_release(mask);
    clt_tensor_release(at);
    clt_tensor_release(range);
    clt_tensor_release(idx);
    return values;
}

clt_tensor *clt_max(clt_tensor *x, int dim, bool keepdim, clt_tensor **indices)
{
    return extreme_along("clt_max", x, dim, keepdim, indices, true);
}

clt_tensor *clt_min(clt_tensor *x, int dim, bool keepdim, clt_tensor **indices)
{
    return extreme_along("clt_min", x, dim, keepdim, indices, false);
}
