/* Checks, error handling and clean-up shared by the operation front ends (see ops_internal.h). */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "ops_internal.h"

clt_status clt__same_device(const char *fn, clt_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (clt__tensor_check(fn, ts[i]) != CLT_OK)
            return CLT_ERR_INVALID_ARGUMENT;
    for (int i = 1; i < n; i++) {
        clt_device *a = ts[0]->storage->device, *b = ts[i]->storage->device;
        if (a != b)
            return clt__error(CLT_ERR_DEVICE_MISMATCH, fn,
                              "expected all tensors on the same device, got %s and %s", a->name,
                              b->name);
    }
    return CLT_OK;
}

clt_status clt__same_device_as(const char *fn, clt_tensor *a, clt_tensor *b)
{
    return b ? clt__same_device(fn, (clt_tensor *[]){a, b}, 2) : CLT_OK;
}

clt_status clt__need_floating(const char *fn, const clt_tensor *x)
{
    if (clt__is_floating(x->dtype))
        return CLT_OK;
    return clt__error(CLT_ERR_DTYPE, fn,
                      "dtype %s is not supported on %s: a floating dtype is needed (convert the "
                      "input with clt_tensor_to_dtype)",
                      clt_dtype_name(x->dtype), x->storage->device->name);
}

clt_status clt__resized_output(const char *fn, clt_tensor *x, int ndim, const int64_t *shape,
                               clt_tensor **empty)
{
    *empty = NULL;
    if (clt__output_check(fn, x->storage->device, x->dtype, ndim, shape) != CLT_OK)
        return clt_last_status();
    if (x->numel > 0)
        return CLT_OK;
    if (!(*empty = clt_reshape(x, ndim, shape)))
        return clt__rename_error(fn);
    return CLT_OK;
}

void clt__release_all(clt_tensor **ts, int n)
{
    for (int i = 0; i < n; i++)
        clt_tensor_release(ts[i]);
}
