/* Reductions the backend runs: checking the dims, moving the reduced dimensions last and making
 * the input contiguous, so that the backend reduces `rows` contiguous rows of `len` elements (or
 * sums down the columns of the input as it lies, where the kept dimensions come last); sum,
 * amax, amin, argmax and argmin. The reductions composed of these and elementwise operations
 * are reduce_composed.c's. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cltensor/ops.h"
#include "core/core.h"
#include "graph/graph.h"
#include "ops_internal.h"
#include "reduce_plan.h"

/* Checks x and the dims and works out the plan. */
clt_status clt__reduce_plan_make(const char *fn, const clt_tensor *x, const int *dims,
                                 int ndims, bool keepdim, clt__reduce_plan *p)
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
void clt__reduce_columns(const clt_tensor *x, clt__reduce_plan *p)
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
clt_tensor *clt__reduce_arrange(const char *fn, clt_tensor *x, const clt__reduce_plan *p)
{
    clt_tensor *v, *c;
    if (!p->moved || p->inner > 1)
        return clt__contiguous(fn, x);
    v = clt__reduce_named(fn, clt_permute(x, p->perm));
    if (!v)
        return NULL;
    c = clt__contiguous(fn, v);
    clt_tensor_release(v);
    return c;
}

/* Runs op over `rows` rows of `len` elements of the contiguous xc into out (contiguous, rows
 * elements); mean (SQDEV) gives one value a row. Rows without elements give 0. */
clt_status clt__reduce_launch(const char *fn, clt__reduce_op op, clt_tensor *xc, size_t rows,
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
clt_tensor *clt__reduce_new(const char *fn, clt__reduce_op op, clt_tensor *xc, size_t rows,
                            size_t len, size_t inner, int ndim, const int64_t *shape,
                            clt_tensor *mean)
{
    clt_tensor *out = clt__tensor_new(fn, xc->storage->device, clt__reduce_dtype(op, xc->dtype),
                                      ndim, shape);
    if (out && clt__reduce_launch(fn, op, xc, rows, len, inner, out, mean) != CLT_OK) {
        clt_tensor_release(out);
        return NULL;
    }
    return out;
}

/* t converted to dtype (t's reference is taken over). */
clt_tensor *clt__reduce_finish(const char *fn, clt_tensor *t, clt_dtype dtype)
{
    clt_tensor *r;
    if (!t || t->dtype == dtype)
        return t;
    r = clt__reduce_named(fn, clt_tensor_to_dtype(t, dtype));
    clt_tensor_release(t);
    return r;
}


static clt_status need_elements(const char *fn, const clt_tensor *x, const clt__reduce_plan *p)
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
    clt__reduce_plan p;
    clt_tensor *xc, *out;
    if (clt__reduce_plan_make(fn, x, dims, ndims, keepdim, &p) != CLT_OK)
        return NULL;
    if (op != CLT_REDUCE_SUM && need_elements(fn, x, &p) != CLT_OK)
        return NULL;
    if (op == CLT_REDUCE_SUM)
        clt__reduce_columns(x, &p);
    xc = clt__reduce_arrange(fn, x, &p);
    if (!xc)
        return NULL;
    out = clt__reduce_new(fn, op, xc, p.rows, p.len, p.inner, p.ndim, p.shape, NULL);
    clt_tensor_release(xc);
    return out;
}

static clt_tensor *sum_impl(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    static const char *const fn = "clt_sum";
    clt_tensor *s = simple(fn, CLT_REDUCE_SUM, x, dims, ndims, keepdim);
    /* f16 and bf16 sum in f32 and give their own dtype back, as PyTorch */
    if (s && clt__is_floating(x->dtype) && clt__dtype(x->dtype)->compute != x->dtype)
        return clt__reduce_finish(fn, s, x->dtype);
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

/* ---- autograd ------------------------------------------------------------------------------ */

/* out, a reduction of x over dims, recorded for autograd as operation op. */
clt_tensor *clt__reduce_recorded(const char *fn, clt__op op, clt_tensor *x, clt_tensor *out,
                                  const int *dims, int ndims, bool keepdim, int64_t correction)
{
    clt__node_args args = {.i0 = correction};
    if (!out)
        return NULL;
    clt__reduce_args(&args, x->ndim, dims, ndims, keepdim);
    return clt__record(fn, op, &x, 1, out, &args);
}

clt_tensor *clt_sum(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    CLT__REDUCE_RECORDED("clt_sum", CLT__OP_sum, sum_impl(x, dims, ndims, keepdim), 0);
}

clt_tensor *clt_amax(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    CLT__REDUCE_RECORDED("clt_amax", CLT__OP_amax, max_impl(x, dims, ndims, keepdim), 0);
}

clt_tensor *clt_amin(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    CLT__REDUCE_RECORDED("clt_amin", CLT__OP_amin, min_impl(x, dims, ndims, keepdim), 0);
}
