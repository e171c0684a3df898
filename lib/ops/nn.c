/* Neural-network functions apart from the losses, convolution, pooling and normalisation:
 * softmax and log_softmax, prelu, the gathers (index_select and embedding, and the gathers of
 * checked indices that the losses, pooling, resizing and transposed convolution build on), and
 * dropout. Softmax and dropout are compositions of the elementwise operations and reductions;
 * prelu is one elementwise operation with the slopes broadcast; the gathers have a kernel. */
#include <string.h>

#include "cltensor/ops.h"
#include "core/core.h"
#include "device/registry.h"
#include "graph/graph.h"
#include "ops_internal.h"

/* ---- softmax ---------------------------------------------------------------------------------- */

static clt_tensor *softmax_impl(const char *fn, clt_tensor *x, int dim, bool log)
{
    clt_tensor *t[5] = {NULL}, *out = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__need_floating(fn, x) != CLT_OK ||
        clt__dim_check(fn, &dim, x->ndim) != CLT_OK)
        return NULL;
    if (x->ndim == 0) /* a 0-d tensor is its own dimension */
        dim = 0;
    if (x->numel == 0)
        return clt_tensor_empty(x->ndim, x->shape, x->dtype, x->storage->device);
    int dims = dim;
    t[0] = x->ndim ? clt_amax(x, &dims, 1, true) : clt_tensor_retain(x); /* m */
    t[1] = t[0] ? clt_sub(x, t[0]) : NULL;                              /* x - m */
    t[2] = t[1] ? clt_exp(t[1]) : NULL;                                 /* e */
    t[3] = t[2] ? (x->ndim ? clt_sum(t[2], &dims, 1, true) : clt_tensor_retain(t[2])) : NULL;
    if (t[3] && log) {
        t[4] = clt_log(t[3]);
        out = t[4] ? clt_sub(t[1], t[4]) : NULL;
    } else if (t[3]) {
        out = clt_div(t[2], t[3]);
    }
    if (!out)
        clt__rename_error(fn);
    clt__release_all(t, 5);
    return out;
}

/* softmax_impl, recorded for autograd as one operation. */
static clt_tensor *softmax_recorded(const char *fn, clt_tensor *x, int dim, bool log)
{
    bool prev, rec = clt__grad_begin(&x, 1, &prev);
    clt_tensor *out = softmax_impl(fn, x, dim, log);
    clt__grad_end(prev);
    if (!rec || !out)
        return out;
    if (dim < 0)
        dim += x->ndim;
    return clt__record(fn, log ? CLT__OP_log_softmax : CLT__OP_softmax, &x, 1, out,
                       &(clt__node_args){.dim = x->ndim ? dim : 0});
}

clt_tensor *clt_softmax(clt_tensor *x, int dim)
{
    return softmax_recorded("clt_softmax", x, dim, false);
}

clt_tensor *clt_log_softmax(clt_tensor *x, int dim)
{
    return softmax_recorded("clt_log_softmax", x, dim, true);
}

/* ---- prelu ----------------------------------------------------------------------------------- */

/* The slopes' checks: one for every element, or one per channel (dimension 1). */
static clt_status prelu_check(const char *fn, const clt_tensor *x, const clt_tensor *weight)
{
    int64_t c = x->ndim >= 2 ? x->shape[1] : 1, n = (int64_t)weight->numel;
    if (weight->dtype != x->dtype)
        return clt__error(CLT_ERR_DTYPE, fn,
                          "weight is %s and the input %s: both need one dtype",
                          clt_dtype_name(weight->dtype), clt_dtype_name(x->dtype));
    if (weight->ndim > 1)
        return clt__error(CLT_ERR_SHAPE, fn,
                          "weight must be 1-D (or 0-d), not of %d dimensions", weight->ndim);
    if (n == 1 || n == c)
        return CLT_OK;
    if (x->ndim < 2)
        return clt__error(CLT_ERR_SHAPE, fn,
                          "weight has %lld elements; an input of %d dimension%s takes 1",
                          (long long)n, x->ndim, x->ndim == 1 ? "" : "s");
    return clt__error(CLT_ERR_SHAPE, fn,
                      "weight has %lld elements; the input's %lld channels (dimension 1) take 1 "
                      "or %lld",
                      (long long)n, (long long)c, (long long)c);
}

clt_tensor *clt_prelu(clt_tensor *x, clt_tensor *weight)
{
    static const char *const fn = "clt_prelu";
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *slope, *out;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__tensor_check(fn, weight) != CLT_OK ||
        clt__same_device_as(fn, x, weight) != CLT_OK || clt__need_floating(fn, x) != CLT_OK ||
        prelu_check(fn, x, weight) != CLT_OK)
        return NULL;
    /* the slopes as (C, 1, ..., 1) against (N, C, ...), or one value for every element */
    if (weight->numel == 1) {
        slope = clt_reshape(weight, 0, NULL);
    } else {
        shape[0] = x->shape[1];
        for (int d = 1; d < x->ndim - 1; d++)
            shape[d] = 1;
        slope = clt_reshape(weight, x->ndim - 1, shape);
    }
    out = slope ? clt__ew(fn, CLT_EW_prelu, x, slope, 0, 0) : NULL;
    if (!slope)
        clt__rename_error(fn);
    clt_tensor_release(slope);
    return out;
}

/* ---- gathers ---------------------------------------------------------------------------------- */

/* The i64 indices of idx copied to the host, each checked to lie in 0..k-1 (or to equal
 * `allowed`, when allow is true). The caller frees the array. */
int64_t *clt__host_indices(const char *fn, clt_tensor *idx, int64_t k, bool allow,
                           int64_t allowed, const char *what)
{
    int64_t *v;
    if (idx->dtype != CLT_I64) {
        clt__error(CLT_ERR_DTYPE, fn, "%s must be i64, not %s", what, clt_dtype_name(idx->dtype));
        return NULL;
    }
    v = clt__alloc(fn, idx->numel ? idx->numel * sizeof *v : 1);
    if (!v)
        return NULL;
    if (clt_tensor_copy_to_host(idx, v, idx->numel * sizeof *v) != CLT_OK) {
        clt__rename_error(fn);
        clt__free(v);
        return NULL;
    }
    for (size_t i = 0; i < idx->numel; i++) {
        if ((v[i] < 0 || v[i] >= k) && !(allow && v[i] == allowed)) {
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                       "%s %lld (element %zu) is out of range for size %lld (valid: 0..%lld)",
                       what, (long long)v[i], i, (long long)k, (long long)k - 1);
            clt__free(v);
            return NULL;
        }
    }
    return v;
}

/* out = x with dimension dim indexed by the M indices in idx_dev (i64 on x's device). */
static clt_tensor *gather_impl(const char *fn, clt_tensor *x, int dim, clt_tensor *idx_dev, int64_t m)
{
    clt_device *dev = x->storage->device;
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *c = clt__contiguous(fn, x), *out = NULL;
    if (!c)
        return NULL;
    memcpy(shape, x->shape, sizeof shape);
    shape[dim] = m;
    out = clt__tensor_new(fn, dev, x->dtype, x->ndim, shape);
    if (out && out->numel) {
        clt__index_call call = {.dtype = x->dtype, .A = 1, .K = (size_t)x->shape[dim], .B = 1,
                                .M = (size_t)m, .src = c->storage->buf, .idx = idx_dev->storage->buf,
                                .out = out->storage->buf, .src_offset = c->offset,
                                .idx_offset = idx_dev->offset};
        for (int d = 0; d < dim; d++)
            call.A *= (size_t)x->shape[d];
        for (int d = dim + 1; d < x->ndim; d++)
            call.B *= (size_t)x->shape[d];
        if (CLT__BACKEND_CALL(index_select, fn, dev, call.dtype, &call) != CLT_OK) {
            clt_tensor_release(out);
            out = NULL;
        }
    }
    clt_tensor_release(c);
    return out;
}

clt_tensor *clt__gather(const char *fn, clt_tensor *x, int dim, clt_tensor *idx_dev,
                        const int64_t *host, int64_t m)
{
    clt__node_args args = {.dim = dim, .i0 = m, .i1 = x->shape[dim]};
    bool prev, rec = clt__grad_begin(&x, 1, &prev);
    clt_tensor *out = gather_impl(fn, x, dim, idx_dev, m);
    clt__grad_end(prev);
    if (!rec || !out)
        return out;
    if (!(args.idx = clt__alloc(fn, (size_t)(m ? m : 1) * sizeof *args.idx))) {
        clt_tensor_release(out);
        return NULL;
    }
    if (m)
        memcpy(args.idx, host, (size_t)m * sizeof *args.idx);
    return clt__record(fn, CLT__OP_gather, &x, 1, out, &args);
}

clt_tensor *clt__index_select_host(const char *fn, clt_tensor *x, int dim, const int64_t *host,
                                   int64_t m)
{
    clt_tensor *idx = clt_tensor_from_data(1, &m, host, CLT_I64, x->storage->device);
    clt_tensor *out = idx ? clt__gather(fn, x, dim, idx, host, m) : NULL;
    if (!idx)
        clt__rename_error(fn);
    clt_tensor_release(idx);
    return out;
}

clt_tensor *clt_index_select(clt_tensor *x, int dim, clt_tensor *index)
{
    static const char *const fn = "clt_index_select";
    clt_tensor *c = NULL, *out;
    int64_t *host;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__tensor_check(fn, index) != CLT_OK ||
        clt__same_device_as(fn, x, index) != CLT_OK || clt__dim_check(fn, &dim, x->ndim) != CLT_OK)
        return NULL;
    if (x->ndim == 0 || index->ndim > 1) {
        clt__error(CLT_ERR_SHAPE, fn, "x needs a dimension and index at most one (got %d and %d)",
                   x->ndim, index->ndim);
        return NULL;
    }
    host = clt__host_indices(fn, index, x->shape[dim], false, 0, "index");
    if (!host)
        return NULL;
    c = clt__contiguous(fn, index);
    out = c ? clt__gather(fn, x, dim, c, host, (int64_t)index->numel) : NULL;
    clt_tensor_release(c);
    clt__free(host);
    return out;
}

clt_tensor *clt_embedding(clt_tensor *indices, clt_tensor *weight)
{
    static const char *const fn = "clt_embedding";
    int64_t shape[CLT_MAX_DIMS], n;
    clt_tensor *flat = NULL, *rows = NULL, *out = NULL;
    if (clt__tensor_check(fn, weight) != CLT_OK || clt__tensor_check(fn, indices) != CLT_OK ||
        clt__same_device_as(fn, weight, indices) != CLT_OK)
        return NULL;
    if (weight->ndim != 2 || indices->ndim >= CLT_MAX_DIMS) {
        clt__error(CLT_ERR_SHAPE, fn, "weight must be 2-D (got %d dimensions) and indices below %d",
                   weight->ndim, CLT_MAX_DIMS);
        return NULL;
    }
    n = (int64_t)indices->numel;
    flat = clt_reshape(indices, 1, &n);
    rows = flat ? clt_index_select(weight, 0, flat) : NULL;
    if (rows) {
        memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
        shape[indices->ndim] = weight->shape[1];
        out = clt_reshape(rows, indices->ndim + 1, shape);
    }
    if (!out)
        clt__rename_error(fn);
    clt_tensor_release(rows);
    clt_tensor_release(flat);
    return out;
}

/* ---- dropout ------------------------------------------------------------------------------------ */

clt_tensor *clt_dropout(clt_tensor *x, double p, bool training)
{
    static const char *const fn = "clt_dropout";
    clt_tensor *r = NULL, *pt = NULL, *keep = NULL, *scaled = NULL, *zero = NULL, *out = NULL;
    clt_device *dev;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__need_floating(fn, x) != CLT_OK)
        return NULL;
    if (!(p >= 0 && p <= 1)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "probability %g is outside 0..1", p);
        return NULL;
    }
    if (!training || p == 0)
        return clt_tensor_retain(x);
    dev = x->storage->device;
    if (p == 1) { /* x * 0, as PyTorch: recorded, so the gradient is 0 */
        zero = clt_tensor_zeros(0, NULL, x->dtype, dev);
        out = zero ? clt_mul(x, zero) : NULL;
        clt_tensor_release(zero);
        if (!out)
            clt__rename_error(fn);
        return out;
    }
    /* the mask comes from the default generator: the same seed, the same mask on every device */
    r = clt_tensor_rand(x->ndim, x->shape, CLT_F32, dev);
    pt = r ? clt_tensor_full(0, NULL, p, CLT_F32, dev) : NULL;
    keep = pt ? clt_ge(r, pt) : NULL;
    scaled = keep ? clt_mul_scalar(x, 1.0 / (1.0 - p)) : NULL;
    zero = scaled ? clt_tensor_zeros(0, NULL, x->dtype, dev) : NULL;
    out = zero ? clt_where(keep, scaled, zero) : NULL;
    if (!out)
        clt__rename_error(fn);
    clt_tensor *tmp[5] = {r, pt, keep, scaled, zero};
    clt__release_all(tmp, 5);
    return out;
}
