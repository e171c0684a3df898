/* The public OpenCL interop functions (include/cltensor/opencl.h). */
#include "cltensor/opencl.h"
#include "cl_internal.h"
#include "core/core.h"
#include "device/registry.h"
#include "tensor/tensor_internal.h"

/* dev as an OpenCL device, or NULL with the error set: a device of another backend (cpu among
 * them) has no OpenCL objects. */
static clt__cl_device *opencl_device(const char *fn, const clt_device *dev)
{
    if (clt__device_check(fn, dev) != CLT_OK)
        return NULL;
    if (dev->backend != &clt__cl_backend) {
        clt__error(CLT_ERR_DEVICE_MISMATCH, fn, "%s is not an OpenCL device (its backend is %s)",
                   dev->name, dev->backend->name);
        return NULL;
    }
    return clt__cl((clt_device *)dev);
}

cl_device_id clt_device_cl_device(const clt_device *dev)
{
    clt__cl_device *cd = opencl_device("clt_device_cl_device", dev);
    return cd ? cd->id : NULL;
}

cl_context clt_device_cl_context(clt_device *dev, bool retain)
{
    static const char *const fn = "clt_device_cl_context";
    clt__cl_device *cd = opencl_device(fn, dev);
    if (!cd || clt__cl_start(fn, dev) != CLT_OK)
        return NULL;
    if (retain)
        clRetainContext(cd->context);
    return cd->context;
}

cl_command_queue clt_device_cl_queue(clt_device *dev, bool retain)
{
    static const char *const fn = "clt_device_cl_queue";
    clt__cl_device *cd = opencl_device(fn, dev);
    if (!cd || clt__cl_start(fn, dev) != CLT_OK)
        return NULL;
    if (retain)
        clRetainCommandQueue(cd->queue);
    return cd->queue;
}

cl_mem clt_tensor_cl_mem(const clt_tensor *t, bool retain)
{
    static const char *const fn = "clt_tensor_cl_mem";
    cl_mem mem;
    if (clt__tensor_check(fn, t) != CLT_OK || !opencl_device(fn, t->storage->device))
        return NULL;
    mem = t->storage->buf;
    if (!mem) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "a tensor without elements has no buffer");
        return NULL;
    }
    clt__storage_expose(t->storage); /* written, maybe, where the library cannot see */
    if (retain)
        clRetainMemObject(mem);
    return mem;
}

size_t clt_tensor_cl_offset(const clt_tensor *t)
{
    return t ? t->offset * clt_dtype_size(t->dtype) : 0;
}
