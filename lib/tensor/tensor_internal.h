/* Tensor and storage objects, shared by the files of lib/tensor and the layers above. The tensor
 * layer knows nothing of autograd: a layer above keeps its own state in a tensor's `ext`. */
#ifndef CLT_TENSOR_INTERNAL_H
#define CLT_TENSOR_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "backends/backend.h"

typedef struct clt__tensor_ext clt__tensor_ext;

/* State a layer above attaches to a tensor (lib/autograd: its gradient and graph node): kept
 * with the handle (clt__tensor_swap leaves it in place) and freed with it. */
struct clt__tensor_ext {
    /* Frees ext; returns a tensor it held for the caller to release next (so that a chain of
     * gradients of gradients takes no recursion), or NULL. */
    clt_tensor *(*release)(clt__tensor_ext *ext);
    /* Writes the suffix clt_tensor_format shows for it ("grad_fn=<MulBackward>") into buf;
     * false when there is none. */
    bool (*label)(const clt__tensor_ext *ext, char *buf, size_t size);
};

/* The memory behind one or more tensors, on one device. */
typedef struct clt__storage {
    atomic_int refs;
    clt_device *device;
    void *buf;     /* the backend's buffer; NULL when nbytes is 0 */
    size_t nbytes;
    size_t capacity;                      /* of buf: the allocator's size class */
    pthread_mutex_t lock;                 /* guards the two fields below */
    const clt__backend *pending_backend;  /* another device still writing into this (host) */
    void *pending_event;                  /* storage: wait for this before touching it */
    atomic_uint version;                  /* counts in-place writes (autograd's saved tensors) */
    /* The range of an i64 storage's values where the library wrote all of them from host values
     * it saw (clt__storage_note_range) and nothing has written since (range_version is still
     * version) nor can without its knowledge (exposed: its buffer was handed out): a check of
     * indices on another device then needs no read back (clt__tensor_range). Under lock. */
    bool range_known, exposed;
    unsigned range_version;
    int64_t range_min, range_max;
} clt__storage;

struct clt_tensor {
    atomic_int refs;
    clt__storage *storage;
    size_t offset;                    /* into the storage, in elements */
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
    int64_t strides[CLT_MAX_DIMS];    /* in elements */
    size_t numel;
    clt_dtype dtype;
    clt__tensor_ext *_Atomic ext;     /* a layer above's state (autograd's); NULL: none. Set
                                       * once, by compare-and-swap, so that two threads that
                                       * make it at once agree on one */
};

struct clt_event {
    const clt__backend *backend;
    void *handle; /* NULL: already complete */
};

/* A new contiguous tensor with uninitialised contents: validates the shape (ndim, negative
 * sizes, overflow) and that the device holds the dtype. NULL with the error set. */
clt_tensor *clt__tensor_new(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                            const int64_t *shape);
/* The same, with `fresh` memory that no earlier tensor used (for a buffer that another queue
 * writes first: see clt__device_alloc). */
clt_tensor *clt__tensor_new_ex(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                               const int64_t *shape, bool fresh);
/* Whether an op's output of `shape` (sizes >= 0, computed from the caller's parameters with
 * checked arithmetic) can exist on dev, checked before any allocation or work:
 * CLT_ERR_INVALID_ARGUMENT naming fn and the shape when its byte size does not fit the address
 * space, CLT_ERR_OUT_OF_MEMORY (CLT_ERR_DEVICE_OUT_OF_MEMORY on an OpenCL device) when it
 * exceeds the device's largest single allocation or what its tensors may hold together
 * (CLT_DEVICE_MEMORY_LIMIT, an OpenCL device's memory). */
clt_status clt__output_check(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                              const int64_t *shape);
/* CLT_OK when t is not NULL; otherwise the error naming fn. */
clt_status clt__tensor_check(const char *fn, const clt_tensor *t);
/* Waits until no other device is still writing into the storage. */
clt_status clt__storage_sync(const char *fn, clt__storage *s);
void clt__storage_release(clt__storage *s);
/* The host address of element 0 of a cpu tensor (after clt__storage_sync). */
static inline void *clt__host_ptr(const clt_tensor *t)
{
    return (char *)t->storage->buf + t->offset * clt_dtype_size(t->dtype);
}
/* x itself (retained) when contiguous, else a contiguous copy on its device, recorded for
 * nothing (clt__contiguous, lib/ops, records it). */
clt_tensor *clt__tensor_contiguous(const char *fn, clt_tensor *x);
/* A new tensor over x's storage with this shape, strides (in elements) and offset, recorded for
 * nothing; NULL with the error set when the shape has more elements than a tensor can (an
 * expanded view). */
clt_tensor *clt__tensor_view(const char *fn, clt_tensor *x, int ndim, const int64_t *shape,
                             const int64_t *strides, size_t offset);
/* dst[dst_off + i] = src[src_off + i] converted from dtype `from` to `to` for i < n, in host
 * memory, with clt_tensor_to_dtype's rules (the cpu device's conversion). */
void clt__host_convert(const void *src, size_t src_off, clt_dtype from, void *dst,
                       size_t dst_off, clt_dtype to, size_t n);
/* x moved and converted as clt_tensor_to_ex says (x itself, retained, when nothing changes),
 * recorded for nothing; NULL with the error set. */
clt_tensor *clt__tensor_convert(const char *fn, clt_tensor *x, const clt_to_options *o);
/* Normalises dim (negative counts from the end) or sets the error naming the valid range. */
clt_status clt__dim_check(const char *fn, int *dim, int ndim);
/* Copies src's data (storage pointer, offset, shape, strides, numel, dtype) into dst, leaving
 * dst's reference count and ext alone; takes no reference to the storage. */
void clt__tensor_copy_data(clt_tensor *dst, const clt_tensor *src);
/* Exchanges the data of a and b (storage, offset, shape, strides, dtype), keeping each handle's
 * reference count and ext: a handle keeps its identity while taking another
 * tensor's data (modules moving in place). Counts as an in-place write of both storages. */
void clt__tensor_swap(clt_tensor *a, clt_tensor *b);
/* Records an in-place write into t's storage (saved tensors compare versions). */
static inline void clt__tensor_bump_version(clt_tensor *t)
{
    atomic_fetch_add(&t->storage->version, 1);
}
/* Records the range of the n i64 values at `values` (any alignment) that were just written into
 * the whole of s, and that nothing will change before the device has read them. */
void clt__storage_note_range(clt__storage *s, const void *values, size_t n);
/* Gives dst, just written with a copy of src's elements (all, or a part), src's known range. */
void clt__storage_copy_range(clt__storage *dst, clt__storage *src);
/* Marks s as reachable outside the library (its buffer or address handed out): its range is
 * never known again, and an OpenCL buffer goes back to the driver, not the cache, when s is
 * freed. */
void clt__storage_expose(clt__storage *s);
/* Whether the range of t's values (i64) is known without reading them; then *lo and *hi bound
 * them (those of its whole storage). */
bool clt__tensor_range(const clt_tensor *t, int64_t *lo, int64_t *hi);

/* Whether two elements of t share memory (a broadcast view, as clt_expand makes): writing into
 * it is refused. */
static inline bool clt__tensor_overlaps(const clt_tensor *t)
{
    for (int d = 0; d < t->ndim; d++)
        if (t->strides[d] == 0 && t->shape[d] > 1)
            return true;
    return false;
}
/* Whether a and b have one shape. */
static inline bool clt__same_shape(const clt_tensor *a, const clt_tensor *b)
{
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0;
}
/* Writes "(2, 3)" into buf. */
void clt__format_shape(char *buf, size_t size, int ndim, const int64_t *shape);
/* t's shape as text ("(2, 3)"), in a value that lives until the end of the full expression
 * that made it: clt__error(..., "shape %s", clt__shape_of(t).text). */
typedef struct clt__shape_text {
    char text[256];
} clt__shape_text;
static inline clt__shape_text clt__shape_of(const clt_tensor *t)
{
    clt__shape_text s;
    clt__format_shape(s.text, sizeof s.text, t->ndim, t->shape);
    return s;
}

#endif
