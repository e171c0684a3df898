/* clt_device_warmup: the device's backend compiles and tunes what its kernels will need (the
 * registry entry's warmup), then one small product per float dtype runs, which compiles the
 * GEMM kernels the tuning chose, so that later operations start without compiling or tuning. */
#include "backends/backend.h"
#include "cltensor/ops.h"
#include "core/core.h"
#include "device/registry.h"

/* One 2x2 product of dtype on dev, finished. */
static clt_status tiny_matmul(const char *fn, clt_device *dev, clt_dtype dtype)
{
    clt_tensor *a = clt_tensor_ones(CLT_SHAPE(2, 2), dtype, dev);
    clt_tensor *c = a ? clt_matmul(a, a) : NULL;
    clt_status st = c ? clt_device_synchronize(dev) : CLT_OK;
    if (!c)
        st = clt__rename_error(fn);
    clt_tensor_release(c);
    clt_tensor_release(a);
    return st;
}

clt_status clt_device_warmup(clt_device *dev)
{
    static const char fn[] = "clt_device_warmup";
    clt_status st = clt__device_check(fn, dev);

    if (st != CLT_OK || !dev->registry || !dev->registry->warmup)
        return st;
    st = dev->registry->warmup(fn, dev);
    if (st == CLT_OK)
        st = tiny_matmul(fn, dev, CLT_F32);
    if (st == CLT_OK && dev->info.fp64)
        st = tiny_matmul(fn, dev, CLT_F64);
    if (st == CLT_OK)
        clt__log(CLT_LOG_INFO, "%s: every program is built on %s", fn, dev->name);
    return st;
}
