/* Host memory a device copies from and to fastest (clt_host_buffer, include/cltensor/device.h)
 * and the staging the data loader uses: the backend's pinned memory where it has it, ordinary
 * aligned host memory where it does not; uploads on the backend's copy queue where it has one,
 * plain writes on the device's queue where it does not. */
#include "core/core.h"
#include "device/pinned.h"
#include "device/registry.h"

struct clt_host_buffer {
    clt_device *device;
    void *handle, *ptr;
    size_t nbytes;
};

/* The backend whose pinned memory dev uses: its own, or the host's ordinary memory. */
static const clt__backend *pinned_backend(const clt_device *dev)
{
    return dev->backend->pinned_alloc && dev->backend->pinned_free ? dev->backend
                                                                   : &clt__host_backend;
}

clt_status clt__pinned_alloc(const char *fn, clt_device *dev, size_t nbytes, void **handle,
                             void **ptr)
{
    return pinned_backend(dev)->pinned_alloc(fn, dev, nbytes, handle, ptr);
}

void clt__pinned_free(clt_device *dev, void *handle, void *ptr)
{
    pinned_backend(dev)->pinned_free(dev, handle, ptr);
}

clt_status clt__pinned_upload(const char *fn, clt_device *dev, void *buf, const void *ptr,
                              size_t nbytes, void **event)
{
    *event = NULL;
    if (dev->backend->upload && dev->backend->queue_wait)
        return dev->backend->upload(fn, dev, buf, ptr, nbytes, event);
    return dev->backend->write(fn, dev, buf, 0, ptr, nbytes, NULL);
}

clt_host_buffer *clt_host_buffer_new(clt_device *dev, size_t nbytes)
{
    static const char fn[] = "clt_host_buffer_new";
    clt_host_buffer *b;
    if (clt__device_check(fn, dev) != CLT_OK)
        return NULL;
    if (nbytes == 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "nbytes is 0");
        return NULL;
    }
    if (!(b = clt__alloc_zeroed(fn, sizeof *b)))
        return NULL;
    if (clt__pinned_alloc(fn, dev, nbytes, &b->handle, &b->ptr) != CLT_OK) {
        clt__free(b); /* the cause, out of memory or another, is the backend's error */
        return NULL;
    }
    b->device = dev;
    b->nbytes = nbytes;
    return b;
}

void *clt_host_buffer_data(const clt_host_buffer *b)
{
    return b ? b->ptr : NULL;
}

size_t clt_host_buffer_size(const clt_host_buffer *b)
{
    return b ? b->nbytes : 0;
}

void clt_host_buffer_free(clt_host_buffer *b)
{
    if (!b)
        return;
    clt__pinned_free(b->device, b->handle, b->ptr);
    clt__free(b);
}
