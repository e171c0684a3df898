/* Moving a tensor to another device and converting its dtype, blocking or not, with events to
 * wait on (clt__tensor_convert; clt_tensor_to and the rest, lib/ops/to.c, record it for
 * autograd); the events; copies between a tensor and host memory, blocking and asynchronous,
 * and reading one element (clt_tensor_item). */
#include "core/core.h"
#include "device/registry.h"
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
        st = CLT__BACKEND_CALL(cast, fn, dev, dtype, x->storage->buf, x->offset, x->dtype,
                               y->storage->buf, 0, dtype, x->numel);
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

/* OpenCL device -> another OpenCL device of another context (sub-devices of one device share
 * theirs, and clt__copy_peer copies between them on the devices): through host memory, read
 * from the source (waiting for its queue), then written to the destination without waiting
 * for its queue, blocking or not: what is queued there later comes after the write, and the
 * staging memory is freed once the write has read it. A blocking write waited for everything
 * queued on the destination before it, so that DataParallel's backward pass, sending each
 * replica's gradients home, ran the devices one after the other. */
static clt_status through_host(const char *fn, clt_tensor *x, clt_tensor *y)
{
    clt_device *src = x->storage->device, *dst = y->storage->device;
    size_t nbytes = y->storage->nbytes;
    void *staging = clt__alloc(fn, nbytes), *ev = NULL;
    clt__async async = {&ev, free_staging, staging};
    clt_status st = staging ? CLT_OK : CLT_ERR_OUT_OF_MEMORY;

    if (st == CLT_OK)
        st = src->backend->read(fn, src, x->storage->buf, x->offset * clt_dtype_size(x->dtype),
                                staging, nbytes, NULL);
    if (st != CLT_OK) {
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
    else if (clt__peers(src, dev))
        st = clt__copy_peer(fn, src, x->storage->buf, x->offset * clt_dtype_size(x->dtype), dev,
                            y->storage->buf, 0, y->storage->nbytes);
    else
        st = through_host(fn, x, y);
    if (st == CLT_OK && x->dtype == CLT_I64) { /* what is known of the values goes with them */
        if (!clt__is_host(src))
            clt__storage_copy_range(y->storage, x->storage);
        else if (!non_blocking) /* (the source may change before the device reads it) */
            clt__storage_note_range(y->storage, clt__host_ptr(x), x->numel);
    }
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

clt_tensor *clt__tensor_convert(const char *fn, clt_tensor *x, const clt_to_options *o)
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
    } else if (!(c = clt__tensor_contiguous(fn, x))) { /* the copies below read in row-major order */
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

/* A new event for a transfer on dev: *handle is what the backend fills (NULL: complete). */
static clt_event *transfer_event(const char *fn, clt_device *dev)
{
    clt_event *e = clt__alloc_zeroed(fn, sizeof *e);
    if (e)
        e->backend = dev->backend;
    return e;
}

/* Checks of the async copies: t valid, host memory there and large enough; *need its size. */
static clt_status transfer_check(const char *fn, const clt_tensor *t, const void *host,
                                 size_t nbytes, size_t *need, clt_event **event)
{
    clt_status st;
    if (event)
        *event = NULL;
    if ((st = clt__tensor_check(fn, t)) != CLT_OK)
        return st;
    *need = t->numel * clt_dtype_size(t->dtype);
    if (!host && *need)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "the host memory is NULL");
    if (nbytes < *need)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "the host memory holds %zu bytes; the tensor needs %zu", nbytes, *need);
    return CLT_OK;
}

/* The copy of a contiguous t's `need` bytes to or from host memory on t's device: finished on
 * return without `event`, else *event receives its event. */
static clt_status transfer(const char *fn, clt_tensor *t, void *host, size_t need, bool write,
                           clt_event **event)
{
    clt_device *dev = t->storage->device;
    clt_event *e = event ? transfer_event(fn, dev) : NULL;
    size_t offset = t->offset * clt_dtype_size(t->dtype);
    clt_status st;

    if (event && !e)
        return clt_last_status();
    st = need ? clt__storage_sync(fn, t->storage) : CLT_OK;
    if (st == CLT_OK && need) {
        clt__async async = {.event = e ? &e->handle : NULL};
        st = write ? dev->backend->write(fn, dev, t->storage->buf, offset, host, need, &async)
                   : dev->backend->read(fn, dev, t->storage->buf, offset, host, need, &async);
    }
    if (st != CLT_OK) {
        clt_event_release(e);
        return st;
    }
    if (event)
        *event = e;
    return CLT_OK;
}

clt_status clt_tensor_read_async(const clt_tensor *t, void *dst, size_t nbytes, clt_event **event)
{
    static const char fn[] = "clt_tensor_read_async";
    size_t need;
    clt_status st = transfer_check(fn, t, dst, nbytes, &need, event);

    if (st != CLT_OK)
        return st;
    if (clt_tensor_is_contiguous(t))
        return transfer(fn, (clt_tensor *)t, dst, need, false, event); /* reads t only */
    /* a view: gathered in row-major order, finished on return */
    if (event && !(*event = transfer_event(fn, t->storage->device)))
        return clt_last_status();
    if ((st = clt_tensor_copy_to_host(t, dst, nbytes)) != CLT_OK) {
        if (event) {
            clt_event_release(*event);
            *event = NULL;
        }
        return clt__rename_error(fn);
    }
    return CLT_OK;
}

clt_status clt_tensor_write_async(clt_tensor *t, const void *src, size_t nbytes,
                                  clt_event **event)
{
    static const char fn[] = "clt_tensor_write_async";
    size_t need;
    clt_status st = transfer_check(fn, t, src, nbytes, &need, event);

    if (st != CLT_OK)
        return st;
    if (!clt_tensor_is_contiguous(t))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "the tensor is not contiguous");
    if ((st = transfer(fn, t, (void *)src, need, true, event)) == CLT_OK)
        clt__tensor_bump_version(t);
    return st;
}

clt_status clt_tensor_copy_to_host(const clt_tensor *t, void *dst, size_t nbytes)
{
    static const char *const fn = "clt_tensor_copy_to_host";
    clt_status st = clt__tensor_check(fn, t);
    size_t need;

    if (st != CLT_OK)
        return st;
    need = t->numel * clt_dtype_size(t->dtype);
    if (!dst && need)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "dst is NULL");
    if (nbytes < need)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "dst holds %zu bytes; the tensor needs %zu", nbytes, need);
    if (need == 0)
        return CLT_OK;
    clt_tensor *c = clt__tensor_contiguous(fn, (clt_tensor *)t); /* reads t only */
    if (!c)
        return clt_last_status();
    st = clt__storage_sync(fn, c->storage);
    if (st == CLT_OK)
        st = c->storage->device->backend->read(fn, c->storage->device, c->storage->buf,
                                               c->offset * clt_dtype_size(c->dtype), dst, need,
                                               NULL);
    clt_tensor_release(c);
    return st;
}

clt_status clt_tensor_item(const clt_tensor *t, double *value)
{
    static const char *const fn = "clt_tensor_item";
    unsigned char raw[8];
    bool floating;
    int64_t i = 0;
    clt_status st = clt__tensor_check(fn, t);
    if (st != CLT_OK)
        return st;
    if (!value)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "value is NULL");
    if (t->numel != 1) {
        char shape[256];
        clt__format_shape(shape, sizeof shape, t->ndim, t->shape);
        return clt__error(CLT_ERR_SHAPE, fn, "a tensor of shape %s has %zu elements, not one",
                          shape, t->numel);
    }
    if ((st = clt_tensor_copy_to_host(t, raw, sizeof raw)) != CLT_OK)
        return clt__rename_error(fn);
    floating = clt__is_floating(t->dtype);
    if (floating) {
        clt__host_convert(raw, 0, t->dtype, value, 0, CLT_F64, 1);
        return CLT_OK;
    }
    clt__host_convert(raw, 0, t->dtype, &i, 0, CLT_I64, 1);
    *value = (double)i;
    return CLT_OK;
}
