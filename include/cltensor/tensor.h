/* Tensors: n-dimensional arrays of one dtype on one device, reference counted, created from
 * host data or by fill and random functions, and cast explicitly between devices and dtypes with
 * clt_tensor_to. Conversion rules between dtypes are written out at clt_tensor_to_dtype. */
#ifndef CLTENSOR_TENSOR_H
#define CLTENSOR_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"
#include "status.h"

#ifdef __cplusplus
#include <initializer_list>
extern "C" {
#endif

#define CLT_MAX_DIMS 8

/* Expands to the two arguments `ndim, shape` from a list of sizes: CLT_SHAPE(1, 10). In C++,
 * which has no compound literals, the sizes are an initializer_list, whose array lives until
 * the end of the full expression holding the call. */
#ifdef __cplusplus
#define CLT_SHAPE(...)                                                                           \
    (int)std::initializer_list<int64_t>{__VA_ARGS__}.size(),                                     \
        std::initializer_list<int64_t>{__VA_ARGS__}.begin()
#else
#define CLT_SHAPE(...) \
    (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}
#endif

typedef enum clt_dtype {
    CLT_DTYPE_NONE = 0, /* "no dtype": keeps the dtype where an option takes one */
    CLT_F32,
    CLT_F64, /* only where the device has fp64 (clt_device_info.fp64); always on cpu */
    CLT_F16, /* IEEE binary16 storage; arithmetic in f32 */
    CLT_BF16, /* bfloat16 storage; arithmetic in f32 */
    CLT_I32,
    CLT_I64,
    CLT_U8,
    CLT_BOOL, /* one byte, 0 or 1 */
    CLT_DTYPE_COUNT
} clt_dtype;

/* "f32", "f64", "f16", "bf16", "i32", "i64", "u8", "bool" (static strings); "invalid" for
 * anything else. */
CLT_API const char *clt_dtype_name(clt_dtype dtype);
/* Bytes per element; 0 for an invalid dtype. */
CLT_API size_t clt_dtype_size(clt_dtype dtype);

typedef struct clt_tensor clt_tensor;

/* --- creation: every function returns a new reference, or NULL with the last error set ------ */
/* `dev` NULL means cpu, as everywhere in the API (PyTorch's default device). Errors: CLT_ERR_SHAPE for ndim outside
 * 0..CLT_MAX_DIMS, a negative size or too many elements; CLT_ERR_INVALID_ARGUMENT for a NULL
 * shape with ndim > 0; CLT_ERR_DTYPE for an invalid dtype; CLT_ERR_UNSUPPORTED for f64 on a
 * device without fp64; CLT_ERR_OUT_OF_MEMORY / _DEVICE_OUT_OF_MEMORY. */

/* A tensor of the given shape on `dev` holding a copy of `data` (numel * dtype size bytes,
 * row-major; the caller keeps data), in the order of clt_tensor_full: shape, values, dtype,
 * device. ndim may be 0 (a scalar); sizes may be 0, and data NULL then
 * (CLT_ERR_INVALID_ARGUMENT otherwise). For CLT_BOOL any nonzero byte is stored as 1. */
CLT_API clt_tensor *clt_tensor_from_data(int ndim, const int64_t *shape, const void *data,
                                         clt_dtype dtype, clt_device *dev);
/* A tensor with uninitialised contents. */
CLT_API clt_tensor *clt_tensor_empty(int ndim, const int64_t *shape, clt_dtype dtype,
                                     clt_device *dev);
/* A tensor with every element 0 / every element 1 in dtype. */
CLT_API clt_tensor *clt_tensor_zeros(int ndim, const int64_t *shape, clt_dtype dtype,
                                     clt_device *dev);
CLT_API clt_tensor *clt_tensor_ones(int ndim, const int64_t *shape, clt_dtype dtype,
                                    clt_device *dev);
/* A tensor with every element `value` converted to dtype by the rules of clt_tensor_to_dtype. */
CLT_API clt_tensor *clt_tensor_full(int ndim, const int64_t *shape, double value, clt_dtype dtype,
                                    clt_device *dev);
/* 1-D: start, start+step, ... while below `end` (above, for a negative step), as PyTorch's
 * arange: ceil((end - start) / step) elements, element i = start + i * step computed in f64
 * and converted to dtype. CLT_ERR_INVALID_ARGUMENT for a value that is not finite, a zero
 * step or a step that goes away from end. */
CLT_API clt_tensor *clt_tensor_arange(double start, double end, double step, clt_dtype dtype,
                                      clt_device *dev);

/* Uniform on [0, 1) and standard normal values for a floating dtype (CLT_ERR_DTYPE for
 * another), from the default generator (Philox4x32-10, counter based): after the same
 * clt_manual_seed, the same calls give bit-identical values on every device. */
CLT_API clt_tensor *clt_tensor_rand(int ndim, const int64_t *shape, clt_dtype dtype,
                                    clt_device *dev);
CLT_API clt_tensor *clt_tensor_randn(int ndim, const int64_t *shape, clt_dtype dtype,
                                     clt_device *dev);
/* Seeds the default generator and restarts its counter (torch.manual_seed). The seed at
 * start-up is 0. Thread-safe. */
CLT_API void clt_manual_seed(uint64_t seed);

/* --- references and properties --------------------------------------------------------------- */

/* Returns t with one more reference, which the caller releases (NULL for NULL). */
CLT_API clt_tensor *clt_tensor_retain(clt_tensor *t);
/* Drops one reference; the last one frees the tensor. Accepts NULL.
 * Threads: retain and release of one handle may run on any threads at once, also while
 * clt_module_to or clt_module_to_dtype moves the module holding it. Any calls that only read a
 * tensor may run at once; an in-place write (clt_add_, clt_fill_, clt_copy_, an optimizer step)
 * races with every other use of that tensor's elements, as in PyTorch: updates are lost. */
CLT_API void clt_tensor_release(clt_tensor *t);

/* The properties below set no error: for a NULL t they give 0 dimensions, a NULL shape, size
 * -1, 0 elements, CLT_DTYPE_NONE and a NULL device. */
/* The number of dimensions. */
CLT_API int clt_tensor_ndim(const clt_tensor *t);
/* The sizes, ndim of them; owned by the tensor and valid while it lives. */
CLT_API const int64_t *clt_tensor_shape(const clt_tensor *t);
/* The size of dimension `dim` (negative counts from the end); -1 when out of range. */
CLT_API int64_t clt_tensor_size(const clt_tensor *t, int dim);
/* The number of elements and the dtype. */
CLT_API int64_t clt_tensor_numel(const clt_tensor *t);
CLT_API clt_dtype clt_tensor_dtype(const clt_tensor *t);
/* The device the tensor lives on (owned by the library). */
CLT_API clt_device *clt_tensor_device(const clt_tensor *t);
/* Whether the elements lie in row-major order without gaps (true without elements; false for
 * NULL). */
CLT_API bool clt_tensor_is_contiguous(const clt_tensor *x);
/* The strides of x, in elements (ndim of them, owned by x and valid while it lives); NULL for
 * NULL. */
CLT_API const int64_t *clt_tensor_strides(const clt_tensor *x);

/* --- host access ------------------------------------------------------------------------------ */

typedef struct clt_event clt_event;

/* Waits until the work behind the event has finished: that work's status, or
 * CLT_ERR_INVALID_ARGUMENT for NULL. The event still needs clt_event_release. */
CLT_API clt_status clt_event_wait(clt_event *event);
/* Frees the event (without waiting). Accepts NULL. */
CLT_API void clt_event_release(clt_event *event);


/* Copies the elements, row-major, into `dst` of `nbytes` (at least numel * dtype size), from any
 * device; waits for pending work on the tensor first. CLT_ERR_INVALID_ARGUMENT for a NULL t,
 * a NULL dst (unless t has no elements) or too small an nbytes. */
CLT_API clt_status clt_tensor_copy_to_host(const clt_tensor *t, void *dst, size_t nbytes);
/* Asynchronous copies between a tensor and host memory, at full speed from and into a
 * clt_host_buffer of the tensor's device. clt_tensor_read_async copies the elements, row-major,
 * into dst (nbytes at least numel * dtype size); clt_tensor_write_async overwrites the elements
 * of a contiguous tensor from src (the same count of bytes). With event NULL the call returns
 * when the copy has finished; otherwise it may return once the copy is queued, *event receives
 * an event to wait on (the caller releases it; NULL when the call fails) and the host memory
 * must stay untouched until the event has completed. Work queued on the device afterwards
 * sees the written values. Errors as clt_tensor_copy_to_host; clt_tensor_write_async also
 * CLT_ERR_INVALID_ARGUMENT for a tensor that is not contiguous. */
CLT_API clt_status clt_tensor_read_async(const clt_tensor *t, void *dst, size_t nbytes,
                                         clt_event **event);
CLT_API clt_status clt_tensor_write_async(clt_tensor *t, const void *src, size_t nbytes,
                                          clt_event **event);

/* Stores in *value the element of a one-element tensor of any dtype and device as a double
 * (PyTorch's x.item()), waiting for pending work on it; CLT_ERR_SHAPE unless t has exactly one
 * element, CLT_ERR_INVALID_ARGUMENT for NULL. */
CLT_API clt_status clt_tensor_item(const clt_tensor *t, double *value);
/* The address of element 0 of a cpu tensor, after pending copies into it have finished; the
 * elements lie at the tensor's strides from it (clt_tensor_strides; row-major when contiguous).
 * Borrowed: valid while the tensor lives and keeps its storage (clt_module_to and
 * clt_module_to_dtype give a module's tensors new storage); an address that must not be read
 * for a tensor without elements. NULL with the last error set for NULL (CLT_ERR_INVALID_ARGUMENT)
 * or a tensor on another device (CLT_ERR_DEVICE_MISMATCH). */
CLT_API void *clt_tensor_data(clt_tensor *t);

/* A PyTorch-style rendering: "tensor([[ 0.1234, -1.5000]], device='gpu:0')". Returns a string
 * the caller frees with clt_free, or NULL with the last error set. */
CLT_API char *clt_tensor_format(const clt_tensor *t);
/* Writes clt_tensor_format(t) and a newline to stdout; CLT_OK, or the error of
 * clt_tensor_format with nothing written. */
CLT_API clt_status clt_tensor_print(const clt_tensor *t);

/* --- explicit casting ------------------------------------------------------------------------- */

/* `x` itself, retained, when it is already on `dev` (x.to(device) "has no effect"); otherwise a
 * new tensor on `dev` with the same values. Works between any two devices, across platforms.
 * Either way a new reference; dev must not be NULL (CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_tensor *clt_tensor_to(clt_tensor *x, clt_device *dev);

/* x = x.to(dev) in one call, without a leak: *x is replaced by clt_tensor_to(*x, dev) and the
 * reference it held released (nothing changes when *x is already on dev). On failure *x is
 * unchanged and still the caller's; CLT_ERR_INVALID_ARGUMENT for a NULL x, *x or dev. */
CLT_API clt_status clt_tensor_to_(clt_tensor **x, clt_device *dev);
/* `x` itself, retained, when it already has `dtype`; otherwise a new tensor on the same device
 * with every element converted, giving exactly the same bits on every device (either way a new
 * reference; CLT_ERR_DTYPE for an invalid dtype, CLT_ERR_UNSUPPORTED for f64 without fp64):
 * - float -> f16/bf16 rounds to nearest even; f64 and integers go through f32 first, as PyTorch
 *   does; values beyond the range become +-inf; NaN stays NaN (f16 0x7e00, bf16 0x7fc0, sign
 *   kept).
 * - float -> integer truncates toward zero and saturates at the integer type's limits (u8:
 *   0..255); NaN becomes 0. (C and PyTorch leave these undefined; here they are defined.)
 * - integer -> narrower integer wraps modulo 2^bits; integer -> float rounds to nearest even.
 * - anything -> bool is (x != 0), so NaN -> true; bool -> anything is 0 or 1.
 * - f64 -> f32 rounds to nearest even, overflowing to +-inf, subnormals kept; f32 -> f64 is
 *   exact. NaN keeps its sign and the top of its payload and becomes quiet.
 * A copy to the same dtype (clt_to_options.copy) keeps every bit. */
CLT_API clt_tensor *clt_tensor_to_dtype(clt_tensor *x, clt_dtype dtype);

typedef struct clt_to_options {
    clt_device *device;  /* NULL keeps the device */
    clt_dtype dtype;     /* CLT_DTYPE_NONE keeps the dtype */
    bool copy;           /* true: always a new tensor, even when nothing changes */
    bool non_blocking;   /* true: return once the copy is queued, see `event` */
    clt_event **event;   /* if not NULL: receives an event to wait on, with or without
                          * non_blocking (the caller releases it), or NULL when the call fails
                          * (a NULL x leaves it untouched). Without one, clt_device_synchronize
                          * on the OpenCL device involved (the source when the destination is
                          * cpu) waits for a non_blocking copy. Reading the result through the
                          * library always waits by itself. */
} clt_to_options;

/* The general form of clt_tensor_to / clt_tensor_to_dtype (x.to(device, dtype, non_blocking,
 * copy)). A new reference (x itself, retained, when nothing changes and copy is false), or NULL
 * with the last error set (CLT_ERR_INVALID_ARGUMENT for NULL x or options); x is never
 * changed. */
CLT_API clt_tensor *clt_tensor_to_ex(clt_tensor *x, const clt_to_options *options);

#ifdef __cplusplus
}
#endif

#endif
