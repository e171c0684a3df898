/* Explicit casting: clt_tensor_to, clt_tensor_to_dtype and clt_tensor_to_ex move a tensor to
 * another device and convert its dtype, blocking or not, and hand back events to wait on. */
#include "autograd/derivatives.h"
#include "core/core.h"
#include "device/registry.h"
#include "ops/ops_internal.h"
#include "tensor_internal.h"

/* A new tensor on x's device holding x converted to dtype (a plain copy for the same dtype,
 * so that every bit, NaN payloads included, is kept). */
static clt_tensor *cast_here(const char *fn, clt_tensor *x, clt_dtype dtype)
{
    clt_device *dev = x->storage->device;
    clt_tensor *y = clt__tensor_new(fn, dev, dtype, x->ndim, x->shape);
    size_t size = clt_dtype_size(x->dtype);
    clt_status st;
    if (!y || y->numel == 0)
        return y;
    st = clt__storage_sync(fn, x->storage);
    if (st == CLT_OK && dtype == x->dtype)
        st = dev->backend->copy(fn, dev, x->storage->buf, x->offset * size, y->storage->buf, 0,
                                y->storage->nbytes);
    else if (st == CLT_OK)
        st = dev->backend->cast(fn, dev, x->storage->buf, x->offset, x->dtype, y->storage->buf,
                                0, dtype, x->numel);
    if (st == CLT_OK)
        return y;
    clt_tensor_release(y);
    return NULL;
}

static void release_storage(void *storage)
{
    clt__storage_release(storage);
}

static void free_staging(void *staging)
{
    clt__free(staging);
}

/* Host -> OpenCL device: with non_blocking the source storage stays alive until the write has
 * read it. */
static clt_status upload(const char *fn, clt_tensor *x, clt_tensor *y, bool non_blocking)
{
    clt_device *dev = y->storage->device;
    void *ev = NULL;
    clt__async async = {&ev, release_storage, x->storage};
    clt_status st = clt__storage_sync(fn, x->storage);
    if (st != CLT_OK)
        return st;
    if (!non_blocking)
        return dev->backend->write(fn, dev, y->storage->buf, 0, clt__host_ptr(x),
                                   y->storage->nbytes, NULL);
    atomic_fetch_add(&x->storage->refs, 1);
    st = dev->backend->write(fn, dev, y->storage->buf, 0, clt__host_ptr(x), y->storage->nbytes,
                             &async);
    if (st != CLT_OK)
        clt__storage_release(x->storage);
    else
        dev->backend->event_release(ev);
    return st;
}

/* OpenCL device -> host: with non_blocking the new host storage is marked pending until the
 * read lands; everything that touches it waits for that first. */
static clt_status download(const char *fn, clt_tensor *x, clt_tensor *y, bool non_blocking)
{
    clt_device *src = x->storage->device;
    size_t off = x->offset * clt_dtype_size(x->dtype);
    void *ev = NULL;
    clt__async async = {&ev, NULL, NULL};
    clt_status st = src->backend->read(fn, src, x->storage->buf, off, y->storage->buf,
                                       y->storage->nbytes, non_blocking ? &async : NULL);
    if (st == CLT_OK && ev) {
        y->storage->pending_backend = src->backend;
        y->storage->pending_event = ev;
    }
    return st;
}

/* OpenCL device -> another OpenCL device (each has its own context): through host memory. */
static clt_status through_host(const char *fn, clt_tensor *x, clt_tensor *y, bool non_blocking)
{
    clt_device *src = x->storage->device, *dst = y->storage->device;
    size_t nbytes = y->storage->nbytes;
    void *staging = clt__alloc(fn, nbytes), *ev = NULL;
    clt__async async = {&ev, free_staging, staging};
    clt_status st = staging ? CLT_OK : CLT_ERR_OUT_OF_MEMORY;

    if (st == CLT_OK)
        st = src->backend->read(fn, src, x->storage->buf, x->offset * clt_dtype_size(x->dtype),
                                staging, nbytes, NULL);
    if (st != CLT_OK || !non_blocking) {
        if (st == CLT_OK)
            st = dst->backend->write(fn, dst, y->storage->buf, 0, staging, nbytes, NULL);
        clt__free(staging);
        return st;
    }
    st = dst->backend->write(fn, dst, y->storage->buf, 0, staging, nbytes, &async);
    if (st != CLT_OK)
        clt__free(staging);
    else
        dst->backend->event_release(ev);
    return st;
}

/* A new tensor on dev holding x's values (same dtype). */
static clt_tensor *move(const char *fn, clt_tensor *x, clt_device *dev, bool non_blocking)
{
    clt_device *src = x->storage->device;
    clt_tensor *y = clt__tensor_new(fn, dev, x->dtype, x->ndim, x->shape);
    clt_status st;
    if (!y || y->storage->nbytes == 0)
        return y;
    if (clt__is_host(src))
        st = upload(fn, x, y, non_blocking);
    else if (clt__is_host(dev))
        st = download(fn, x, y, non_blocking);
    else
        st = through_host(fn, x, y, non_blocking);
    if (st == CLT_OK)
        return y;
    clt_tensor_release(y);
    return NULL;
}

/* Where to convert when both device and dtype change: on the source when the destination cannot
 * read the input dtype or when the result is smaller, so that fewer bytes travel. */
static bool convert_at_source(const clt_device *src, const clt_device *dst, clt_dtype from,
                              clt_dtype to)
{
    if (to == CLT_F64 && !src->info.fp64)
        return false;
    if (from == CLT_F64 && !dst->info.fp64)
        return true;
    return clt_dtype_size(to) < clt_dtype_size(from);
}

static clt_tensor *convert(const char *fn, clt_tensor *x, const clt_to_options *o)
{
    clt_device *src, *dst, *queue;
    clt_dtype dtype;
    clt_event *event = NULL;
    clt_tensor *y, *tmp, *c = NULL;

    if (clt__tensor_check(fn, x) != CLT_OK)
        return NULL;
    if (o->event)
        *o->event = NULL;
    src = x->storage->device;
    dst = o->device ? o->device : src;
    dtype = o->dtype != CLT_DTYPE_NONE ? o->dtype : x->dtype;
    if (clt__device_dtype_check(fn, dst, dtype) != CLT_OK)
        return NULL;
    if (o->event && !(event = clt__alloc_zeroed(fn, sizeof *event)))
        return NULL;

    if (src == dst && dtype == x->dtype && !o->copy) {
        y = clt_tensor_retain(x);
    } else if (!(c = clt__contiguous(fn, x))) { /* the copies below read in row-major order */
        y = NULL;
    } else if (src == dst) {
        y = cast_here(fn, c, dtype);
    } else if (dtype == c->dtype) {
        y = move(fn, c, dst, o->non_blocking);
    } else if (convert_at_source(src, dst, c->dtype, dtype)) {
        tmp = cast_here(fn, c, dtype);
        y = tmp ? move(fn, tmp, dst, o->non_blocking) : NULL;
        clt_tensor_release(tmp);
    } else {
        tmp = move(fn, c, dst, o->non_blocking);
        y = tmp ? cast_here(fn, tmp, dtype) : NULL;
        clt_tensor_release(tmp);
    }
    clt_tensor_release(c);
    if (!y || !event) {
        clt__free(event);
        return y;
    }
    /* The event marks the queue that ran the last step: the destination's, or the source's when
     * the destination is the host. */
    queue = clt__is_host(dst) ? src : dst;
    event->backend = queue->backend;
    if (queue->backend->marker(fn, queue, &event->handle) != CLT_OK) {
        clt__free(event);
        clt_tensor_release(y);
        return NULL;
    }
    *o->event = event;
    return y;
}

/* convert, recorded for autograd when it makes a new floating tensor. */
static clt_tensor *to_impl(const char *fn, clt_tensor *x, const clt_to_options *o)
{
    bool prev, rec = clt__grad_begin(&x, 1, &prev);
    clt_tensor *y = convert(fn, x, o);
    clt__grad_end(prev);
    if (!rec || !y || y == x || !clt__is_floating(y->dtype))
        return y;
    y = clt__record(fn, &clt__d_to, &x, 1, y, NULL);
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

clt_tensor *clt_tensor_to_dtype(clt_tensor *x, clt_dtype dtype)
{
    clt_to_options o = {.dtype = dtype};
    if (dtype == CLT_DTYPE_NONE) {
        clt__error(CLT_ERR_DTYPE, "clt_tensor_to_dtype", "invalid dtype %d", (int)dtype);
        return NULL;
    }
    return to_impl("clt_tensor_to_dtype", x, &o);
}

clt_status clt_event_wait(clt_event *event)
{
    if (!event)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_event_wait", "event is NULL");
    return event->handle ? event->backend->event_wait("clt_event_wait", event->handle) : CLT_OK;
}

void clt_event_release(clt_event *event)
{
    if (!event)
        return;
    if (event->handle)
        event->backend->event_release(event->handle);
    clt__free(event);
}
