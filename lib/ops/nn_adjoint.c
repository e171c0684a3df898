/* The adjoints of the gathers (nn.c) and sliding windows (conv.c, pool.c), for the backward
 * passes: index_add (of index_select), col2im (of im2col) and pool2d_backward (of pooling).
 * Internal helpers: their callers pass what a forward pass already checked; what is checked here
 * is what the kernels rely on. */
#include <string.h>

#include "core/core.h"
#include "ops_internal.h"

/* A new tensor for an adjoint's result: zeros when nothing reaches it (`none`), otherwise
 * uninitialised, for a kernel to overwrite. NULL with the error naming fn. */
static clt_tensor *result(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                          const int64_t *shape, bool none)
{
    clt_tensor *t;
    if (!none)
        return clt__tensor_new(fn, dev, dtype, ndim, shape);
    t = clt_tensor_zeros(ndim, shape, dtype, dev);
    if (!t)
        clt__rename_error(fn);
    return t;
}

/* The positions 0..m-1 of idx (values in 0..k-1) sorted by value, stably, in compressed form:
 * v[0..k] the starts, v[k+1..k+m] the positions (a counting sort). */
static void sort_indices(const int64_t *idx, int64_t m, int64_t k, int64_t *v)
{
    int64_t *starts = v, *order = v + k + 1;
    memset(starts, 0, (size_t)(k + 1) * sizeof *starts);
    for (int64_t i = 0; i < m; i++)
        starts[idx[i] + 1]++;
    for (int64_t j = 0; j < k; j++)
        starts[j + 1] += starts[j];
    for (int64_t i = 0; i < m; i++) /* each start moves on to the next value's */
        order[starts[idx[i]]++] = i;
    memmove(starts + 1, starts, (size_t)k * sizeof *starts);
    starts[0] = 0;
}

clt_tensor *clt__index_add(const char *fn, clt_tensor *src, int dim, const int64_t *host_idx,
                           int64_t k)
{
    int64_t shape[CLT_MAX_DIMS], m, n, *v = NULL;
    clt_tensor *c = NULL, *csr = NULL, *out = NULL;
    clt_device *dev;
    if (clt__tensor_check(fn, src) != CLT_OK || clt__need_floating(fn, src) != CLT_OK ||
        clt__dim_check(fn, &dim, src->ndim) != CLT_OK)
        return NULL;
    if (src->ndim == 0 || k < 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "index_add needs a dimension to add along and a size of at least 0 (got %d "
                   "dimensions and size %lld)",
                   src->ndim, (long long)k);
        return NULL;
    }
    dev = src->storage->device;
    m = src->shape[dim];
    memcpy(shape, src->shape, sizeof shape);
    shape[dim] = k;
    if (src->numel == 0)
        return result(fn, dev, src->dtype, src->ndim, shape, true);
    clt__index_add_call call = {.dtype = src->dtype, .A = 1, .K = (size_t)k, .B = 1,
                                .M = (size_t)m, .starts_offset = 0, .order_offset = (size_t)k + 1};
    for (int d = 0; d < dim; d++)
        call.A *= (size_t)src->shape[d];
    for (int d = dim + 1; d < src->ndim; d++)
        call.B *= (size_t)src->shape[d];
    n = k + 1 + m;
    v = clt__alloc(fn, (size_t)n * sizeof *v);
    if (!v)
        return NULL;
    sort_indices(host_idx, m, k, v);
    csr = clt_tensor_from_data(1, &n, v, CLT_I64, dev);
    c = csr ? clt__contiguous(fn, src) : NULL;
    out = c ? clt__tensor_new(fn, dev, src->dtype, src->ndim, shape) : NULL;
    if (out && out->numel) {
        call.src = c->storage->buf, call.src_offset = c->offset;
        call.starts = call.order = csr->storage->buf;
        call.out = out->storage->buf;
        if (CLT__BACKEND_CALL(index_add, fn, dev, call.dtype, &call) != CLT_OK) {
            clt_tensor_release(out);
            out = NULL;
        }
    }
    if (!csr)
        clt__rename_error(fn);
    clt_tensor_release(c);
    clt_tensor_release(csr);
    clt__free(v);
    return out;
}

/* col2im (arg NULL) or pool2d_backward on `in`, which holds what the forward pass of geometry g
 * wrote (`in_numel` elements): a new N x C x H x W tensor. */
static clt_tensor *window_adjoint(const char *fn, clt_tensor *in, clt_tensor *arg,
                                  const clt__conv_call *g, size_t in_numel, bool col2im)
{
    clt__conv_call c = *g;
    int64_t shape[4] = {(int64_t)g->N, (int64_t)g->C, (int64_t)g->H, (int64_t)g->W};
    clt_tensor *ic = NULL, *ac = NULL, *out = NULL;
    clt_device *dev = in->storage->device;
    if (in->numel != in_numel || (arg && arg->numel != in_numel)) {
        clt__error(CLT_ERR_SHAPE, fn, "%zu elements do not fit the geometry, which needs %zu",
                   arg && arg->numel != in_numel ? arg->numel : in->numel, in_numel);
        return NULL;
    }
    ic = clt__contiguous(fn, in);
    ac = ic && arg ? clt__contiguous(fn, arg) : NULL;
    if (ic && (!arg || ac))
        out = result(fn, dev, in->dtype, 4, shape, in->numel == 0);
    if (out && out->numel && in->numel) {
        c.dtype = in->dtype;
        c.in = ic->storage->buf, c.in_offset = ic->offset;
        c.arg = ac ? ac->storage->buf : NULL, c.arg_offset = ac ? ac->offset : 0;
        c.out = out->storage->buf, c.out_offset = 0;
        if ((col2im ? CLT__BACKEND_CALL(col2im, fn, dev, c.dtype, &c)
                    : CLT__BACKEND_CALL(pool2d_backward, fn, dev, c.dtype, &c)) != CLT_OK) {
            clt_tensor_release(out);
            out = NULL;
        }
    }
    clt_tensor_release(ac);
    clt_tensor_release(ic);
    return out;
}

clt_tensor *clt__col2im(const char *fn, clt_tensor *cols, const clt__conv_call *shape_of_call)
{
    const clt__conv_call *g = shape_of_call;
    if (clt__tensor_check(fn, cols) != CLT_OK || clt__need_floating(fn, cols) != CLT_OK)
        return NULL;
    return window_adjoint(fn, cols, NULL, g, g->N * g->C * ((size_t)g->kh * (size_t)g->kw) * g->OH * g->OW,
                          true);
}

clt_tensor *clt__pool2d_backward(const char *fn, clt_tensor *grad_out, clt_tensor *indices,
                                 const clt__conv_call *geometry)
{
    const clt__conv_call *g = geometry;
    if (clt__tensor_check(fn, grad_out) != CLT_OK || clt__need_floating(fn, grad_out) != CLT_OK ||
        (indices && clt__same_device(fn, (clt_tensor *[]){grad_out, indices}, 2) != CLT_OK))
        return NULL;
    if (g->is_max != (indices != NULL) || (indices && indices->dtype != CLT_I64)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "max pooling's gradient needs its i64 indices, average pooling's none");
        return NULL;
    }
    return window_adjoint(fn, grad_out, indices, g, g->N * g->C * g->OH * g->OW, false);
}
