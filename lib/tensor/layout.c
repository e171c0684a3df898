/* A tensor's layout: whether it is contiguous, its strides, views over its storage and
 * contiguous copies, none of them recorded for autograd (lib/ops/view.c records them). */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tensor_internal.h"

bool clt_tensor_is_contiguous(const clt_tensor *x)
{
    int64_t expected = 1;
    if (!x || x->numel == 0)
        return x != NULL;
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (x->shape[d] != 1 && x->strides[d] != expected)
            return false;
        expected *= x->shape[d];
    }
    return true;
}

const int64_t *clt_tensor_strides(const clt_tensor *x)
{
    return x ? x->strides : NULL;
}

/* A new tensor over x's storage; NULL with the error set when the shape has more elements than
 * a tensor can (an expanded view). */
clt_tensor *clt__tensor_view(const char *fn, clt_tensor *x, int ndim, const int64_t *shape,
                             const int64_t *strides, size_t offset)
{
    char text[256];
    int64_t numel;
    clt_tensor *v;
    if (!clt__shape_numel(ndim, shape, &numel)) {
        clt__format_shape(text, sizeof text, ndim, shape);
        clt__error(CLT_ERR_SHAPE, fn, "a view of shape %s would have more than %lld elements",
                   text, (long long)INT64_MAX);
        return NULL;
    }
    if (!(v = clt__alloc_zeroed(fn, sizeof *v)))
        return NULL;
    atomic_init(&v->refs, 1);
    atomic_fetch_add(&x->storage->refs, 1);
    v->storage = x->storage;
    v->offset = offset;
    v->ndim = ndim;
    v->dtype = x->dtype;
    v->numel = (size_t)numel;
    for (int d = 0; d < ndim; d++) {
        v->shape[d] = shape[d];
        v->strides[d] = strides[d];
    }
    return v;
}

/* Checks and normalises a dimension: -ndim .. ndim-1 (ndim+1 values for inserting ones). */
clt_status clt__dim_check(const char *fn, int *dim, int ndim)
{
    int n = ndim > 0 ? ndim : 1;
    if (*dim < -n || *dim >= n)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "dim %d is out of range for a tensor of %d dimensions (valid: %d..%d)",
                          *dim, ndim, -n, n - 1);
    if (*dim < 0)
        *dim += n;
    return CLT_OK;
}

clt_tensor *clt__tensor_contiguous(const char *fn, clt_tensor *x)
{
    clt_device *dev = x->storage->device;
    clt_tensor *y;
    if (clt_tensor_is_contiguous(x))
        return clt_tensor_retain(x);
    y = clt__tensor_new(fn, dev, x->dtype, x->ndim, x->shape);
    if (!y)
        return NULL;
    clt__ew_call c = {.op = CLT_EW_copy, .dtype = x->dtype, .ndim = x->ndim, .n = x->numel};
    memcpy(c.shape, x->shape, sizeof c.shape);
    c.out = (clt__operand){y->storage->buf, 0, {0}};
    memcpy(c.out.strides, y->strides, sizeof c.out.strides);
    c.in[0] = (clt__operand){x->storage->buf, x->offset, {0}};
    memcpy(c.in[0].strides, x->strides, sizeof c.in[0].strides);
    clt__ew_collapse(&c, 1);
    if (clt__storage_sync(fn, x->storage) != CLT_OK ||
        CLT__BACKEND_CALL(elementwise, fn, dev, c.dtype, &c) != CLT_OK) {
        clt_tensor_release(y);
        return NULL;
    }
    return y;
}
