/* Views as operations: tensors that share another tensor's storage with their own shape,
 * strides and offset (view, reshape, transpose, permute, squeeze, unsqueeze, narrow, slice,
 * expand) and contiguous copies, recorded for autograd (the tensor layer's own views and copies,
 * lib/tensor/layout.c, record nothing). */
#include <stdio.h>
#include <string.h>

#include "cltensor/ops.h"
#include "graph/graph.h"
#include "cltensor/autograd.h"
#include "core/core.h"
#include "ops_internal.h"

/* v (a view or copy of x, or NULL) recorded for autograd as operation op. */
static clt_tensor *recorded(const char *fn, clt__op op, clt_tensor *x, clt_tensor *v,
                            const clt__node_args *args)
{
    if (!v || !clt_grad_is_enabled() || !clt__requires_grad(x))
        return v;
    return clt__record(fn, op, &x, 1, v, args);
}

clt_tensor *clt__contiguous(const char *fn, clt_tensor *x)
{
    if (clt_tensor_is_contiguous(x))
        return clt_tensor_retain(x);
    return recorded(fn, CLT__OP_identity, x, clt__tensor_contiguous(fn, x), NULL);
}

clt_tensor *clt_contiguous(clt_tensor *x)
{
    if (clt__tensor_check("clt_contiguous", x) != CLT_OK)
        return NULL;
    return clt__contiguous("clt_contiguous", x);
}

/* The shape with a -1 resolved, checked against numel. */
static clt_status infer_shape(const char *fn, const clt_tensor *x, int ndim, const int64_t *shape,
                              int64_t *out)
{
    char want[256], have[256];
    int infer = -1;
    int64_t known, numel;
    if (ndim < 0 || ndim > CLT_MAX_DIMS || (ndim > 0 && !shape))
        return clt__error(CLT_ERR_SHAPE, fn, "ndim %d is outside 0..%d (or shape is NULL)", ndim,
                          CLT_MAX_DIMS);
    for (int d = 0; d < ndim; d++) {
        out[d] = shape[d];
        if (shape[d] == -1 && infer < 0)
            infer = d, out[d] = 1;
        else if (shape[d] < 0)
            return clt__error(CLT_ERR_SHAPE, fn, "size %lld of dimension %d is invalid",
                              (long long)shape[d], d);
    }
    if (!clt__shape_numel(ndim, out, &known))
        goto mismatch;
    if (infer >= 0) {
        if (known == 0 || (int64_t)x->numel % known != 0)
            goto mismatch;
        out[infer] = (int64_t)x->numel / known;
        if (!clt__shape_numel(ndim, out, &numel)) /* the sizes with 0 taken as 1 overflow */
            goto mismatch;
    } else if (known != (int64_t)x->numel) {
        goto mismatch;
    }
    return CLT_OK;
mismatch:
    clt__format_shape(want, sizeof want, ndim, shape);
    clt__format_shape(have, sizeof have, x->ndim, x->shape);
    return clt__error(CLT_ERR_SHAPE, fn, "shape %s is invalid for a tensor of shape %s (%zu elements)",
                      want, have, x->numel);
}

/* Strides that give x's elements in `shape` without a copy (PyTorch's computeStride), or
 * false when there are none. */
static bool view_strides(const clt_tensor *x, int ndim, const int64_t *shape, int64_t *strides)
{
    if (x->numel == 0 || clt_tensor_is_contiguous(x)) {
        int64_t s = 1; /* no overflow: clt__shape_numel accepted the shape */
        for (int d = ndim - 1; d >= 0; d--) {
            strides[d] = s;
            s *= shape[d] ? shape[d] : 1;
        }
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk = x->ndim ? x->strides[x->ndim - 1] : 1, tensor_numel = 1, view_numel = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        int64_t span;
        tensor_numel *= x->shape[d]; /* a product of x's sizes: fits */
        if (d == 0 || (x->shape[d - 1] != 1 &&
                       (!clt__mul_i64(tensor_numel, chunk, &span) || x->strides[d - 1] != span))) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                if (!clt__mul_i64(view_numel, chunk, &strides[view_d]))
                    return false;
                view_numel *= shape[view_d]; /* at most tensor_numel times a size of the view */
                view_d--;
            }
            if (view_numel != tensor_numel)
                return false;
            if (d > 0) {
                chunk = x->strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

clt_tensor *clt_view(clt_tensor *x, int ndim, const int64_t *shape)
{
    static const char *const fn = "clt_view";
    int64_t s[CLT_MAX_DIMS], st[CLT_MAX_DIMS];
    char text[256];
    if (clt__tensor_check(fn, x) != CLT_OK || infer_shape(fn, x, ndim, shape, s) != CLT_OK)
        return NULL;
    if (!view_strides(x, ndim, s, st)) {
        clt__format_shape(text, sizeof text, ndim, s);
        clt__error(CLT_ERR_SHAPE, fn,
                   "a view of shape %s is not possible with this tensor's strides; use "
                   "clt_reshape (which copies)",
                   text);
        return NULL;
    }
    return recorded(fn, CLT__OP_view, x, clt__tensor_view(fn, x, ndim, s, st, x->offset), NULL);
}

clt_tensor *clt_reshape(clt_tensor *x, int ndim, const int64_t *shape)
{
    static const char *const fn = "clt_reshape";
    int64_t s[CLT_MAX_DIMS], st[CLT_MAX_DIMS];
    clt_tensor *c, *v = NULL;
    bool prev, rec;
    if (clt__tensor_check(fn, x) != CLT_OK || infer_shape(fn, x, ndim, shape, s) != CLT_OK)
        return NULL;
    if (view_strides(x, ndim, s, st))
        return recorded(fn, CLT__OP_view, x, clt__tensor_view(fn, x, ndim, s, st, x->offset), NULL);
    rec = clt__grad_begin(&x, 1, &prev);
    c = clt__contiguous(fn, x);
    if (c) {
        view_strides(c, ndim, s, st);
        v = clt__tensor_view(fn, c, ndim, s, st, c->offset);
        clt_tensor_release(c);
    }
    clt__grad_end(prev);
    return rec ? clt__record(fn, CLT__OP_view, &x, 1, v, NULL) : v;
}

static clt_tensor *permute(const char *fn, clt_tensor *x, const int *dims)
{
    int64_t s[CLT_MAX_DIMS], st[CLT_MAX_DIMS];
    bool seen[CLT_MAX_DIMS] = {false};
    clt__node_args args = {0};
    if (clt__tensor_check(fn, x) != CLT_OK)
        return NULL;
    if (!dims && x->ndim > 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "dims is NULL");
        return NULL;
    }
    for (int d = 0; d < x->ndim; d++) {
        int k = dims[d];
        if (clt__dim_check(fn, &k, x->ndim) != CLT_OK)
            return NULL;
        if (seen[k]) {
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "dim %d appears twice in the permutation",
                       dims[d]);
            return NULL;
        }
        seen[k] = true;
        s[d] = x->shape[k];
        st[d] = x->strides[k];
        args.dims[d] = k;
    }
    args.ndims = x->ndim;
    return recorded(fn, CLT__OP_permute, x, clt__tensor_view(fn, x, x->ndim, s, st, x->offset),
                    &args);
}

clt_tensor *clt_permute(clt_tensor *x, const int *dims)
{
    return permute("clt_permute", x, dims);
}

clt_tensor *clt_transpose(clt_tensor *x, int dim0, int dim1)
{
    static const char *const fn = "clt_transpose";
    int dims[CLT_MAX_DIMS];
    if (clt__tensor_check(fn, x) != CLT_OK || clt__dim_check(fn, &dim0, x->ndim) != CLT_OK ||
        clt__dim_check(fn, &dim1, x->ndim) != CLT_OK)
        return NULL;
    if (x->ndim == 0)
        return recorded(fn, CLT__OP_view, x,
                        clt__tensor_view(fn, x, 0, x->shape, x->strides, x->offset), NULL);
    for (int d = 0; d < x->ndim; d++)
        dims[d] = d;
    dims[dim0] = dim1;
    dims[dim1] = dim0;
    return permute(fn, x, dims);
}

static clt_tensor *squeeze(const char *fn, clt_tensor *x, int only)
{
    int64_t s[CLT_MAX_DIMS], st[CLT_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1 && (only < 0 || only == d))
            continue;
        s[n] = x->shape[d];
        st[n++] = x->strides[d];
    }
    return recorded(fn, CLT__OP_view, x, clt__tensor_view(fn, x, n, s, st, x->offset), NULL);
}

clt_tensor *clt_squeeze(clt_tensor *x, int dim)
{
    static const char *const fn = "clt_squeeze";
    if (clt__tensor_check(fn, x) != CLT_OK || clt__dim_check(fn, &dim, x->ndim) != CLT_OK)
        return NULL;
    return squeeze(fn, x, x->ndim ? dim : -1);
}

clt_tensor *clt_squeeze_all(clt_tensor *x)
{
    if (clt__tensor_check("clt_squeeze_all", x) != CLT_OK)
        return NULL;
    return squeeze("clt_squeeze_all", x, -1);
}

clt_tensor *clt_unsqueeze(clt_tensor *x, int dim)
{
    static const char *const fn = "clt_unsqueeze";
    int64_t s[CLT_MAX_DIMS], st[CLT_MAX_DIMS];
    if (clt__tensor_check(fn, x) != CLT_OK)
        return NULL;
    if (x->ndim == CLT_MAX_DIMS) {
        clt__error(CLT_ERR_SHAPE, fn, "the tensor already has %d dimensions", CLT_MAX_DIMS);
        return NULL;
    }
    if (dim < -(x->ndim + 1) || dim > x->ndim) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "dim %d is out of range for inserting into %d dimensions (valid: %d..%d)", dim,
                   x->ndim, -(x->ndim + 1), x->ndim);
        return NULL;
    }
    if (dim < 0)
        dim += x->ndim + 1;
    for (int d = 0, k = 0; d <= x->ndim; d++) {
        if (d == dim) {
            s[d] = 1;
            /* any stride addresses a dimension of size 1: PyTorch's, when it fits */
            if (dim == x->ndim || !clt__mul_i64(x->shape[dim], x->strides[dim], &st[d]))
                st[d] = 1;
        } else {
            s[d] = x->shape[k];
            st[d] = x->strides[k++];
        }
    }
    return recorded(fn, CLT__OP_view, x,
                    clt__tensor_view(fn, x, x->ndim + 1, s, st, x->offset), NULL);
}

clt_tensor *clt_slice(clt_tensor *x, int dim, int64_t start, int64_t end, int64_t step)
{
    static const char *const fn = "clt_slice";
    int64_t s[CLT_MAX_DIMS], st[CLT_MAX_DIMS], size;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__dim_check(fn, &dim, x->ndim) != CLT_OK)
        return NULL;
    if (x->ndim == 0 || step <= 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, x->ndim ? "step %lld must be positive"
                                                         : "a 0-d tensor cannot be sliced",
                   (long long)step);
        return NULL;
    }
    size = x->shape[dim];
    if (start < 0)
        start += size;
    if (end < 0)
        end += size;
    start = start < 0 ? 0 : start > size ? size : start;
    end = end < start ? start : end > size ? size : end;
    memcpy(s, x->shape, sizeof s);
    memcpy(st, x->strides, sizeof st);
    s[dim] = (end - start) / step + ((end - start) % step != 0); /* 0 <= start <= end <= size */
    /* with two elements or more, stride * step spans less than the dimension does (no
     * overflow); a single element keeps its stride, which kernels may step by once more */
    st[dim] = s[dim] > 1 ? x->strides[dim] * step : x->strides[dim];
    return recorded(fn, CLT__OP_slice, x,
                    clt__tensor_view(fn, x, x->ndim, s, st,
                              s[dim] ? x->offset + (size_t)(start * x->strides[dim]) : x->offset),
                    &(clt__node_args){.dim = dim, .i0 = start, .i1 = end, .i2 = step});
}

clt_tensor *clt_narrow(clt_tensor *x, int dim, int64_t start, int64_t length)
{
    static const char *const fn = "clt_narrow";
    if (clt__tensor_check(fn, x) != CLT_OK || clt__dim_check(fn, &dim, x->ndim) != CLT_OK)
        return NULL;
    if (x->ndim == 0 || start < 0 || length < 0 || start > x->shape[dim] ||
        length > x->shape[dim] - start) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "start %lld and length %lld are out of range for dimension %d of size %lld",
                   (long long)start, (long long)length, dim,
                   (long long)(x->ndim ? x->shape[dim] : 0));
        return NULL;
    }
    return clt_slice(x, dim, start, start + length, 1);
}

clt_tensor *clt_expand(clt_tensor *x, int ndim, const int64_t *shape)
{
    static const char *const fn = "clt_expand";
    int64_t s[CLT_MAX_DIMS], st[CLT_MAX_DIMS];
    char want[256], have[256];
    if (clt__tensor_check(fn, x) != CLT_OK)
        return NULL;
    if (ndim < x->ndim || ndim > CLT_MAX_DIMS || (ndim > 0 && !shape))
        goto bad;
    for (int d = ndim - 1, k = x->ndim - 1; d >= 0; d--, k--) {
        int64_t have_size = k >= 0 ? x->shape[k] : 1;
        int64_t want_size = shape[d] == -1 && k >= 0 ? have_size : shape[d];
        if (want_size < 0 || (have_size != want_size && have_size != 1))
            goto bad;
        s[d] = want_size;
        st[d] = k >= 0 && have_size == want_size ? x->strides[k] : 0;
    }
    return recorded(fn, CLT__OP_expand, x, clt__tensor_view(fn, x, ndim, s, st, x->offset), NULL);
bad:
    clt__format_shape(want, sizeof want, ndim > 0 && shape ? ndim : 0, shape);
    clt__format_shape(have, sizeof have, x->ndim, x->shape);
    clt__error(CLT_ERR_SHAPE, fn, "a tensor of shape %s cannot be expanded to %s", have, want);
    return NULL;
}
