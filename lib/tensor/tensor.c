/* Tensor objects: creation with shape checks, reference counting, properties, conversions of
 * host memory between dtypes, fills and the default random generator. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "device/allocator.h"
#include "device/registry.h"
#include "tensor_internal.h"

void clt__format_shape(char *buf, size_t size, int ndim, const int64_t *shape)
{
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                                 (long long)shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, ndim == 1 ? ",)" : ")");
}

/* The element count of a valid shape, or an error for a bad one. */
static clt_status check_shape(const char *fn, int ndim, const int64_t *shape, clt_dtype dtype,
                              size_t *numel)
{
    char text[256];
    int64_t n;
    size_t bytes;

    if (ndim < 0 || ndim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_SHAPE, fn, "ndim %d is outside 0..%d", ndim, CLT_MAX_DIMS);
    if (ndim > 0 && !shape)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "shape is NULL with ndim %d", ndim);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            clt__format_shape(text, sizeof text, ndim, shape);
            return clt__error(CLT_ERR_SHAPE, fn, "shape %s: size %lld of dimension %d is negative",
                              text, (long long)shape[i], i);
        }
    }
    if (!clt__shape_numel(ndim, shape, &n)) {
        clt__format_shape(text, sizeof text, ndim, shape);
        return clt__error(CLT_ERR_SHAPE, fn, "shape %s has more elements than memory can hold",
                          text);
    }
    if (!clt__mul_size((size_t)n, clt_dtype_size(dtype), &bytes)) {
        clt__format_shape(text, sizeof text, ndim, shape);
        return clt__error(CLT_ERR_SHAPE, fn, "shape %s of %s needs more bytes than memory can hold",
                          text, clt_dtype_name(dtype));
    }
    *numel = (size_t)n;
    return CLT_OK;
}

clt_status clt__output_check(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                              const int64_t *shape)
{
    char text[256];
    int64_t n;
    size_t bytes, limit;
    clt__format_shape(text, sizeof text, ndim, shape);
    if (!clt__shape_numel(ndim, shape, &n) ||
        !clt__mul_size((size_t)n, clt_dtype_size(dtype), &bytes))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "the output %s of %s would have more bytes than memory can hold", text,
                          clt_dtype_name(dtype));
    if (dev->info.max_alloc_bytes && bytes > dev->info.max_alloc_bytes)
        return clt__error(clt__is_host(dev) ? CLT_ERR_OUT_OF_MEMORY : CLT_ERR_DEVICE_OUT_OF_MEMORY,
                          fn, "the output %s of %s needs %zu bytes, more than %s can allocate at "
                          "once (%llu bytes)",
                          text, clt_dtype_name(dtype), bytes, dev->name,
                          (unsigned long long)dev->info.max_alloc_bytes);
    clt__error_state saved;
    clt__error_save(&saved); /* the pool is made once; its failure is the allocation's to tell */
    limit = clt__device_memory_limit(dev);
    clt__error_restore(&saved);
    if (limit && bytes > limit)
        return clt__error(clt__is_host(dev) ? CLT_ERR_OUT_OF_MEMORY : CLT_ERR_DEVICE_OUT_OF_MEMORY,
                          fn, "the output %s of %s needs %zu bytes, more than the %zu that %s's "
                          "tensors may hold (its memory, or CLT_DEVICE_MEMORY_LIMIT)",
                          text, clt_dtype_name(dtype), bytes, limit, dev->name);
    return CLT_OK;
}

clt_tensor *clt__tensor_new(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                            const int64_t *shape)
{
    return clt__tensor_new_ex(fn, dev, dtype, ndim, shape, false);
}

clt_tensor *clt__tensor_new_ex(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                               const int64_t *shape, bool fresh)
{
    size_t numel;
    clt_tensor *t = NULL;
    clt__storage *s = NULL;

    if (clt__device_dtype_check(fn, dev, dtype) != CLT_OK ||
        check_shape(fn, ndim, shape, dtype, &numel) != CLT_OK)
        return NULL;
    t = clt__alloc_zeroed(fn, sizeof *t);
    s = t ? clt__alloc_zeroed(fn, sizeof *s) : NULL;
    if (!s)
        goto fail;
    s->nbytes = numel * clt_dtype_size(dtype);
    s->device = dev;
    if (s->nbytes && clt__device_alloc(fn, dev, s->nbytes, fresh, &s->buf, &s->capacity) != CLT_OK)
        goto fail;
    pthread_mutex_init(&s->lock, NULL);
    atomic_init(&s->refs, 1);
    atomic_init(&t->refs, 1);
    t->storage = s;
    t->ndim = ndim;
    t->numel = numel;
    t->dtype = dtype;
    for (int i = ndim - 1; i >= 0; i--) {
        t->shape[i] = shape[i];
        t->strides[i] = i == ndim - 1 ? 1 : t->strides[i + 1] * (shape[i + 1] ? shape[i + 1] : 1);
    }
    return t;
fail:
    clt__free(s);
    clt__free(t);
    return NULL;
}

clt_status clt__tensor_check(const char *fn, const clt_tensor *t)
{
    return t ? CLT_OK : clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "tensor is NULL");
}

clt_status clt__storage_sync(const char *fn, clt__storage *s)
{
    clt_status st = CLT_OK;
    pthread_mutex_lock(&s->lock);
    if (s->pending_event) {
        st = s->pending_backend->event_wait(fn, s->pending_event);
        s->pending_backend->event_release(s->pending_event);
        s->pending_event = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

void clt__storage_release(clt__storage *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    clt__storage_sync("clt_tensor_release", s);
    if (s->buf && s->exposed && !clt__is_host(s->device)) /* its holder may still write it */
        clt__device_free_uncached(s->device, s->buf, s->capacity);
    else if (s->buf)
        clt__device_free(s->device, s->buf, s->capacity);
    pthread_mutex_destroy(&s->lock);
    clt__free(s);
}

void clt__tensor_copy_data(clt_tensor *dst, const clt_tensor *src)
{
    dst->storage = src->storage;
    dst->offset = src->offset;
    dst->ndim = src->ndim;
    memcpy(dst->shape, src->shape, sizeof dst->shape);
    memcpy(dst->strides, src->strides, sizeof dst->strides);
    dst->numel = src->numel;
    dst->dtype = src->dtype;
}

void clt__tensor_swap(clt_tensor *a, clt_tensor *b)
{
    /* the data alone: the reference counts, which other threads may change meanwhile, and the
     * ext stay where they are */
    clt_tensor held;
    clt__tensor_copy_data(&held, a);
    clt__tensor_copy_data(a, b);
    clt__tensor_copy_data(b, &held);
    clt__tensor_bump_version(a);
    clt__tensor_bump_version(b);
}

clt_tensor *clt_tensor_retain(clt_tensor *t)
{
    if (t)
        atomic_fetch_add(&t->refs, 1);
    return t;
}

void clt_tensor_release(clt_tensor *t)
{
    /* a gradient is let go after its tensor, by this loop: a chain of gradients of gradients
     * takes no recursion (nodes defer their own freeing: clt__node_release) */
    while (t && atomic_fetch_sub(&t->refs, 1) == 1) {
        clt__tensor_ext *ext = atomic_load(&t->ext);
        clt_tensor *next = ext ? ext->release(ext) : NULL;
        clt__storage_release(t->storage);
        clt__free(t);
        t = next;
    }
}

/* ---- properties --------------------------------------------------------------------------------- */

int clt_tensor_ndim(const clt_tensor *t)
{
    return t ? t->ndim : 0;
}

const int64_t *clt_tensor_shape(const clt_tensor *t)
{
    return t ? t->shape : NULL;
}

int64_t clt_tensor_size(const clt_tensor *t, int dim)
{
    if (!t)
        return -1;
    if (dim < 0)
        dim += t->ndim;
    return dim >= 0 && dim < t->ndim ? t->shape[dim] : -1;
}

int64_t clt_tensor_numel(const clt_tensor *t)
{
    return t ? (int64_t)t->numel : 0;
}

clt_dtype clt_tensor_dtype(const clt_tensor *t)
{
    return t ? t->dtype : CLT_DTYPE_NONE;
}

clt_device *clt_tensor_device(const clt_tensor *t)
{
    return t ? t->storage->device : NULL;
}

/* ---- host access ---------------------------------------------------------------------------------- */

void clt__host_convert(const void *src, size_t src_off, clt_dtype from, void *dst,
                       size_t dst_off, clt_dtype to, size_t n)
{
    /* the host's cast fails on nothing: no device, no allocation */
    (void)clt__host_backend.cast("clt__host_convert", NULL, (void *)src, src_off, from, dst,
                                 dst_off, to, n);
}

/* s's range as known now: recorded, and nothing written since. */
static bool current_range(clt__storage *s, int64_t *lo, int64_t *hi)
{
    pthread_mutex_lock(&s->lock);
    bool known = s->range_known && s->range_version == atomic_load(&s->version);
    *lo = s->range_min, *hi = s->range_max;
    pthread_mutex_unlock(&s->lock);
    return known;
}

/* Records s's range as of its current version (never for an exposed storage). */
static void set_range(clt__storage *s, bool known, int64_t lo, int64_t hi)
{
    pthread_mutex_lock(&s->lock);
    s->range_known = known && !s->exposed;
    s->range_min = lo, s->range_max = hi;
    s->range_version = atomic_load(&s->version);
    pthread_mutex_unlock(&s->lock);
}

void clt__storage_note_range(clt__storage *s, const void *values, size_t n)
{
    const unsigned char *at = values; /* a caller's data need not be aligned */
    int64_t lo = 0, hi = 0, v;
    for (size_t i = 0; i < n; i++, at += sizeof v) {
        memcpy(&v, at, sizeof v);
        lo = i == 0 || v < lo ? v : lo;
        hi = i == 0 || v > hi ? v : hi;
    }
    set_range(s, n > 0, lo, hi);
}

void clt__storage_copy_range(clt__storage *dst, clt__storage *src)
{
    int64_t lo, hi;
    bool known = current_range(src, &lo, &hi);
    set_range(dst, known, lo, hi);
}

void clt__storage_expose(clt__storage *s)
{
    pthread_mutex_lock(&s->lock);
    s->exposed = true;
    s->range_known = false;
    pthread_mutex_unlock(&s->lock);
}

bool clt__tensor_range(const clt_tensor *t, int64_t *lo, int64_t *hi)
{
    return t->dtype == CLT_I64 && current_range(t->storage, lo, hi);
}

void *clt_tensor_data(clt_tensor *t)
{
    static const char *const fn = "clt_tensor_data";
    if (clt__tensor_check(fn, t) != CLT_OK)
        return NULL;
    if (!clt__is_host(t->storage->device)) {
        clt__error(CLT_ERR_DEVICE_MISMATCH, fn,
                   "the tensor is on %s; only cpu tensors have host data (use clt_tensor_to)",
                   t->storage->device->name);
        return NULL;
    }
    if (clt__storage_sync(fn, t->storage) != CLT_OK)
        return NULL;
    if (!t->storage->buf) {
        static max_align_t no_elements; /* a valid address for a tensor without elements */
        return &no_elements;
    }
    clt__storage_expose(t->storage);
    return clt__host_ptr(t);
}

/* ---- creation ---------------------------------------------------------------------------------------- */

/* The new tensor of a creation function; a NULL *dev becomes the device chosen for it (the
 * current GPU, or cpu without OpenCL devices), which the caller goes on to use. */
static clt_tensor *create(const char *fn, clt_device **dev, clt_dtype dtype, int ndim,
                          const int64_t *shape)
{
    *dev = clt__device_or_cpu(fn, *dev);
    return *dev ? clt__tensor_new(fn, *dev, dtype, ndim, shape) : NULL;
}

clt_tensor *clt_tensor_empty(int ndim, const int64_t *shape, clt_dtype dtype, clt_device *dev)
{
    return create("clt_tensor_empty", &dev, dtype, ndim, shape);
}

clt_tensor *clt_tensor_from_data(int ndim, const int64_t *shape, const void *data,
                                 clt_dtype dtype, clt_device *dev)
{
    static const char *const fn = "clt_tensor_from_data";
    clt_tensor *t = create(fn, &dev, dtype, ndim, shape);
    if (!t || t->storage->nbytes == 0)
        return t;
    if (!data) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "data is NULL");
    } else if (dev->backend->write(fn, dev, t->storage->buf, 0, data, t->storage->nbytes, NULL) ==
                   CLT_OK &&
               (dtype != CLT_BOOL || /* any nonzero byte is true: store it as 1 */
                CLT__BACKEND_CALL(cast, fn, dev, CLT_BOOL, t->storage->buf, 0, CLT_U8,
                                  t->storage->buf, 0, CLT_BOOL, t->numel) == CLT_OK)) {
        if (dtype == CLT_I64)
            clt__storage_note_range(t->storage, data, t->numel);
        return t;
    }
    clt_tensor_release(t);
    return NULL;
}

/* Fills a new tensor with `value` converted to its dtype by the host's conversion rules. */
static clt_tensor *filled(const char *fn, int ndim, const int64_t *shape, double value,
                          clt_dtype dtype, clt_device *dev)
{
    unsigned char pattern[8];
    clt_tensor *t = create(fn, &dev, dtype, ndim, shape);
    if (!t || t->storage->nbytes == 0)
        return t;
    clt__host_convert(&value, 0, CLT_F64, pattern, 0, dtype, 1);
    if (dev->backend->fill(fn, dev, t->storage->buf, 0, pattern, clt_dtype_size(dtype),
                           t->storage->nbytes) != CLT_OK) {
        clt_tensor_release(t);
        return NULL;
    }
    return t;
}

clt_tensor *clt_tensor_zeros(int ndim, const int64_t *shape, clt_dtype dtype, clt_device *dev)
{
    return filled("clt_tensor_zeros", ndim, shape, 0.0, dtype, dev);
}

clt_tensor *clt_tensor_ones(int ndim, const int64_t *shape, clt_dtype dtype, clt_device *dev)
{
    return filled("clt_tensor_ones", ndim, shape, 1.0, dtype, dev);
}

clt_tensor *clt_tensor_full(int ndim, const int64_t *shape, double value, clt_dtype dtype,
                            clt_device *dev)
{
    return filled("clt_tensor_full", ndim, shape, value, dtype, dev);
}

/* The values are computed in f64 on the host, converted and written in one transfer, so every
 * device holds the same bits. */
clt_tensor *clt_tensor_arange(double start, double end, double step, clt_dtype dtype,
                              clt_device *dev)
{
    static const char *const fn = "clt_tensor_arange";
    double count;
    int64_t n;
    clt_tensor *t;
    void *host = NULL;
    double *values = NULL;

    if (!isfinite(start) || !isfinite(end) || !isfinite(step) || step == 0.0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "start %g, end %g, step %g: all must be finite and step nonzero", start, end,
                   step);
        return NULL;
    }
    if ((end - start) / step < 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "step %g goes away from end: start %g, end %g", step, start, end);
        return NULL;
    }
    count = ceil((end - start) / step);
    if (count > 9.0e15) {
        clt__error(CLT_ERR_SHAPE, fn, "start %g, end %g, step %g give too many elements", start,
                   end, step);
        return NULL;
    }
    n = (int64_t)count;
    t = create(fn, &dev, dtype, 1, &n);
    if (!t || n == 0)
        return t;
    values = clt__alloc(fn, (size_t)n * sizeof *values);
    host = values ? clt__alloc(fn, t->storage->nbytes) : NULL;
    if (!host)
        goto fail;
    for (int64_t i = 0; i < n; i++)
        values[i] = start + (double)i * step;
    clt__host_convert(values, 0, CLT_F64, host, 0, dtype, (size_t)n);
    if (dev->backend->write(fn, dev, t->storage->buf, 0, host, t->storage->nbytes, NULL) != CLT_OK)
        goto fail;
    clt__free(values);
    clt__free(host);
    return t;
fail:
    clt__free(values);
    clt__free(host);
    clt_tensor_release(t);
    return NULL;
}

/* ---- random ---------------------------------------------------------------------------------------------- */

static pthread_mutex_t generator_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t generator_seed;
static uint64_t generator_counter;

void clt_manual_seed(uint64_t seed)
{
    pthread_mutex_lock(&generator_lock);
    generator_seed = seed;
    generator_counter = 0;
    pthread_mutex_unlock(&generator_lock);
}

static clt_tensor *random_tensor(const char *fn, int ndim, const int64_t *shape, clt_dtype dtype,
                                 clt_device *dev, bool normal)
{
    clt_tensor *t;
    uint64_t seed, counter;
    size_t per;

    if (dtype != CLT_F32 && dtype != CLT_F64 && dtype != CLT_F16 && dtype != CLT_BF16) {
        clt__error(CLT_ERR_DTYPE, fn, "dtype %s is not a floating dtype", clt_dtype_name(dtype));
        return NULL;
    }
    t = create(fn, &dev, dtype, ndim, shape);
    if (!t || t->numel == 0)
        return t;
    per = clt__random_per_counter(dtype);
    pthread_mutex_lock(&generator_lock);
    seed = generator_seed;
    counter = generator_counter;
    generator_counter += (t->numel + per - 1) / per;
    pthread_mutex_unlock(&generator_lock);
    if (CLT__BACKEND_CALL(random, fn, dev, dtype, t->storage->buf, 0, dtype, t->numel, normal,
                          seed, counter) != CLT_OK) {
        /* give the counters back unless another call took some since */
        pthread_mutex_lock(&generator_lock);
        if (generator_seed == seed && generator_counter == counter + (t->numel + per - 1) / per)
            generator_counter = counter;
        pthread_mutex_unlock(&generator_lock);
        clt_tensor_release(t);
        return NULL;
    }
    return t;
}

clt_tensor *clt_tensor_rand(int ndim, const int64_t *shape, clt_dtype dtype, clt_device *dev)
{
    return random_tensor("clt_tensor_rand", ndim, shape, dtype, dev, false);
}

clt_tensor *clt_tensor_randn(int ndim, const int64_t *shape, clt_dtype dtype, clt_device *dev)
{
    return random_tensor("clt_tensor_randn", ndim, shape, dtype, dev, true);
}
