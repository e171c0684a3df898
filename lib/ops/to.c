/* Explicit casting as operations: clt_tensor_to, clt_tensor_to_dtype and clt_tensor_to_ex
 * (lib/tensor/convert.c moves and converts), recorded for autograd when they make a new
 * floating tensor. */
#include "graph/graph.h"
#include "core/core.h"
#include "device/registry.h"
#include "ops_internal.h"

/* convert, recorded for autograd when it makes a new floating tensor. */
static clt_tensor *to_impl(const char *fn, clt_tensor *x, const clt_to_options *o)
{
    bool prev, rec = clt__grad_begin(&x, 1, &prev);
    clt_tensor *y = clt__tensor_convert(fn, x, o);
    clt__grad_end(prev);
    if (!rec || !y || y == x || !clt__is_floating(y->dtype))
        return y;
    y = clt__record(fn, CLT__OP_to, &x, 1, y, NULL);
    if (!y && o->event) {
        clt_event_release(*o->event);
        *o->event = NULL;
    }
    return y;
}

clt_tensor *clt_tensor_to_ex(clt_tensor *x, const clt_to_options *options)
{
    if (!options) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_tensor_to_ex", "options is NULL");
        return NULL;
    }
    return to_impl("clt_tensor_to_ex", x, options);
}

clt_tensor *clt_tensor_to(clt_tensor *x, clt_device *dev)
{
    clt_to_options o = {.device = dev};
    if (clt__device_check("clt_tensor_to", dev) != CLT_OK)
        return NULL;
    return to_impl("clt_tensor_to", x, &o);
}

clt_status clt_tensor_to_(clt_tensor **x, clt_device *dev)
{
    static const char *const fn = "clt_tensor_to_";
    clt_tensor *y;
    if (!x || !*x)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s is NULL", x ? "*x" : "x");
    if (clt__device_check(fn, dev) != CLT_OK)
        return clt_last_status();
    if (!(y = to_impl(fn, *x, &(clt_to_options){.device = dev})))
        return clt_last_status();
    clt_tensor_release(*x);
    *x = y;
    return CLT_OK;
}

clt_tensor *clt_tensor_to_dtype(clt_tensor *x, clt_dtype dtype)
{
    clt_to_options o = {.dtype = dtype};
    if (dtype == CLT_DTYPE_NONE) {
        clt__error(CLT_ERR_DTYPE, "clt_tensor_to_dtype", "invalid dtype %d", (int)dtype);
        return NULL;
    }
    return to_impl("clt_tensor_to_dtype", x, &o);
}

