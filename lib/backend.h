/* The backend interface: the one seam between what an operation means and how a device runs
 * it. A device is a name, a description and a table of these functions; the front end never
 * knows which backend it talks to. Adding a backend means adding a folder that fills a table. */
#ifndef CLT_BACKEND_H
#define CLT_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "cltensor/device.h"
#include "cltensor/tensor.h"
#include "elementwise_ops.cl"

typedef struct clt__backend clt__backend;

struct clt_device {
    int index;                   /* N of gpu:N; -1 for cpu */
    char name[16];               /* "cpu", "gpu:N" */
    const clt__backend *backend;
    clt_device_info info;
    void *impl;                  /* the backend's own state */
};

/* True for `cpu`, the host device. */
static inline bool clt__is_host(const clt_device *dev)
{
    return dev->info.type == CLT_DEVICE_HOST;
}

/* Called once, from any thread, when an asynchronous transfer no longer needs its source. */
typedef void (*clt__done_fn)(void *ctx);

/* How a transfer completes: with `event` NULL it is finished when the call returns; otherwise
 * the call may return early, *event receives the completion event (NULL when already complete)
 * and done(ctx), if set, runs once the source memory may be reused. */
typedef struct clt__async {
    void **event;
    clt__done_fn done;
    void *ctx;
} clt__async;

/* The elementwise operations: those of cl/elementwise_ops.cl, then copy and where. */
#define CLT__EW_ENUM(name, ...) CLT_EW_##name,
typedef enum clt__ew_op { CLT_EW_OPS(CLT__EW_ENUM) CLT_EW_copy, CLT_EW_where, CLT_EW_COUNT } clt__ew_op;
#undef CLT__EW_ENUM

/* One operand as a kernel sees it: a buffer, an offset and strides, in elements. */
typedef struct clt__operand {
    void *buf;
    size_t offset;
    int64_t strides[CLT_MAX_DIMS];
} clt__operand;

/* One elementwise operation over n output elements. The inputs have `dtype` (where's condition
 * is bool); the output too, or bool for comparisons. */
typedef struct clt__ew_call {
    clt__ew_op op;
    clt_dtype dtype;
    int ndim;                     /* 0: every operand is contiguous over n elements */
    int64_t shape[CLT_MAX_DIMS];  /* the output's, when ndim > 0 */
    size_t n;
    clt__operand out, in[3];      /* unused inputs: buf NULL */
    double s0, s1;                /* scalar parameters, converted to the compute type */
} clt__ew_call;

/* Buffers are opaque handles (`void *`); offsets are in bytes for transfers and fills and in
 * elements for kernels. Every function sets the last error, naming `fn`, when it fails.
 * Work on one device runs in the order it was queued. */
struct clt__backend {
    const char *name;
    /* A buffer of nbytes > 0; CLT_ERR_DEVICE_OUT_OF_MEMORY or CLT_ERR_OUT_OF_MEMORY. */
    clt_status (*alloc)(const char *fn, clt_device *dev, size_t nbytes, void **buf);
    void (*free)(clt_device *dev, void *buf);
    clt_status (*write)(const char *fn, clt_device *dev, void *buf, size_t offset,
                        const void *src, size_t nbytes, const clt__async *async);
    clt_status (*read)(const char *fn, clt_device *dev, void *buf, size_t offset, void *dst,
                       size_t nbytes, const clt__async *async);
    /* Copies nbytes within the device, byte offsets (a same-dtype copy keeps every bit). */
    clt_status (*copy)(const char *fn, clt_device *dev, void *src, size_t src_offset, void *dst,
                       size_t dst_offset, size_t nbytes);
    /* Repeats a pattern of pattern_size bytes over nbytes (a multiple of it) from offset. */
    clt_status (*fill)(const char *fn, clt_device *dev, void *buf, size_t offset,
                       const void *pattern, size_t pattern_size, size_t nbytes);
    /* dst[dst_off + i] = convert(src[src_off + i]) for i < n, by the rules of clt_tensor_to_dtype. */
    clt_status (*cast)(const char *fn, clt_device *dev, void *src, size_t src_off,
                       clt_dtype src_dtype, void *dst, size_t dst_off, clt_dtype dst_dtype,
                       size_t n);
    clt_status (*elementwise)(const char *fn, clt_device *dev, const clt__ew_call *call);
    /* --- reductions (lib/host/host_reduce.c, lib/opencl/cl_reduce.c) --- */
    /* --- matrix products (lib/host/host_gemm.c, lib/opencl/cl_gemm.c) --- */
    /* n uniform [0, 1) or standard normal values of a floating dtype from Philox counters
     * counter, counter + 1, ... under key `seed` (4 values a counter, 2 for f64). */
    clt_status (*random)(const char *fn, clt_device *dev, void *buf, size_t off, clt_dtype dtype,
                         size_t n, bool normal, uint64_t seed, uint64_t counter);
    clt_status (*synchronize)(const char *fn, clt_device *dev);
    /* An event that completes when all work queued so far on the device has (NULL: done). */
    clt_status (*marker)(const char *fn, clt_device *dev, void **event);
    clt_status (*event_wait)(const char *fn, void *event);
    void (*event_release)(void *event);
};

/* Values a Philox counter gives for a dtype (4 from f32 arithmetic, 2 for f64). */
static inline size_t clt__random_per_counter(clt_dtype dtype)
{
    return dtype == CLT_F64 ? 2 : 4;
}

/* The token a dtype has in kernel names and in scalar.cl ("f32", ..., "b8" for bool). */
const char *clt__dtype_token(clt_dtype dtype);
/* The name of an elementwise operation ("add"), as its kernel is named ew_<name>. */
const char *clt__ew_name(clt__ew_op op);
/* How many tensor inputs it takes, and whether it gives bool. */
int clt__ew_inputs(clt__ew_op op);
bool clt__ew_gives_bool(clt__ew_op op);

/* The host backend (lib/host) and the OpenCL backend's device enumeration (lib/opencl). */
extern const clt__backend clt__host_backend;
clt_status clt__host_describe(clt_device *dev);
/* Appends every OpenCL device of every platform to *devices (GPU and accelerator types first,
 * in platform order, then CPU types), growing *count. No platform at all is not an error. */
clt_status clt__cl_enumerate(const char *fn, clt_device ***devices, int *count);

#endif
