/* Devices: the host `cpu` and the devices of the other backends `gpu:0` ... `gpu:N-1`, one
 * flat list (OpenCL: over all platforms, GPU and accelerator types first, in platform order,
 * then CPU-type devices). Devices belong to the library and live until the process ends:
 * callers never free them. The list is built on first use: CLT_SUBDEVICES=N splits each CPU-type OpenCL device into
 * N equal sub-devices listed in its place, then CLT_VISIBLE_DEVICES filters and reorders it.
 * Each thread has a current GPU, set for a scope with CLT_WITH_DEVICE. */
#ifndef CLTENSOR_DEVICE_H
#define CLTENSOR_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_device clt_device;

typedef enum clt_device_type {
    CLT_DEVICE_HOST = 0,        /* `cpu`: the library's own code on the host */
    CLT_DEVICE_GPU = 1,         /* a GPU */
    CLT_DEVICE_ACCELERATOR = 2, /* an accelerator */
    CLT_DEVICE_CPU = 3,         /* a backend's device that runs on the CPU (OpenCL: PoCL, Rusticl's
                                 * llvmpipe, Intel's CPU runtime) */
} clt_device_type;

/* What a device is, in the same terms for every backend (the OpenCL objects behind a device:
 * cltensor/opencl.h). Strings are owned by the library and live as long as the device. */
typedef struct clt_device_info {
    clt_device_type type;
    const char *backend;         /* the backend that runs it: "host" for cpu, "opencl" */
    const char *name;            /* the device's own name ("pthread-skylake-avx512-...") */
    const char *vendor;
    const char *platform;        /* the implementation (OpenCL: the platform's name, "rusticl");
                                  * "host" for cpu */
    const char *version;         /* the device's version as its backend states it (OpenCL:
                                  * CL_DEVICE_VERSION, "OpenCL 3.0 PoCL ..."); "" for cpu */
    const char *driver_version;  /* the driver's version; "" for cpu */
    uint64_t global_mem_bytes;   /* device memory (physical memory for cpu) */
    uint64_t max_alloc_bytes;    /* largest single buffer */
    unsigned compute_units;      /* compute units (OpenCL's); online processors for cpu */
    size_t max_work_group_size;  /* 1 for cpu */
    bool fp64;                   /* f64 tensors allowed */
    bool fp16;                   /* native half arithmetic (f16 storage works everywhere) */
} clt_device_info;

/* The number of OpenCL devices (`gpu:N`) after CLT_VISIBLE_DEVICES; 0 on a machine without
 * OpenCL. When the list cannot be built (a bad CLT_VISIBLE_DEVICES or CLT_SUBDEVICES, out of
 * memory) returns a negative clt_status and sets the last error; every later lookup of a
 * device in the process then fails with the same error. */
CLT_API int clt_device_count(void);

/* One line on how a backend stands, once the devices are listed: for "opencl", the OpenCL
 * library loaded and whether CLBlast was found ("OpenCL library libOpenCL.so.1; CLBlast
 * libclblast.so.1"), or why there is no gpu:N ("OpenCL library not found: libOpenCL.so.1: cannot
 * open shared object file: No such file or directory"); for "host", "built in". Owned by the
 * library, valid for the life of the process. NULL with the last error set
 * (CLT_ERR_INVALID_ARGUMENT) for NULL or a name no backend built into the library has (the
 * message lists those that are). Added in 0.2. */
CLT_API const char *clt_backend_status(const char *backend);

/* The device with this name: "cpu", "gpu" (the current GPU, gpu:0 unless set) or "gpu:N";
 * owned by the library. NULL with the last error set: CLT_ERR_NO_DEVICE, listing the valid
 * names, for any other name or a GPU that does not exist; CLT_ERR_INVALID_ARGUMENT for NULL. */
CLT_API clt_device *clt_device_get(const char *name);

/* The host device, owned by the library; NULL only when the device list could not be built
 * (last error set). */
CLT_API clt_device *clt_device_cpu(void);

/* torch.set_num_threads: the threads cpu's operations run on, the calling one included, and
 * OpenBLAS's count for its products. The default is the processors this process may run on,
 * or the environment variable CLT_NUM_THREADS when set (1 to 64). Large operations split their
 * output between the threads; each element is computed as on one thread, so results do not
 * change with the count. An operation called while another thread's operation uses the
 * threads, or from a DataParallel replica's thread, runs on its own thread alone.
 * CLT_ERR_INVALID_ARGUMENT outside 1 .. 64, the count unchanged. */
CLT_API clt_status clt_set_num_threads(int n);

/* torch.get_num_threads: the count clt_set_num_threads set, or the default. */
CLT_API int clt_get_num_threads(void);

/* torch.device("cuda" if torch.cuda.is_available() else "cpu"): the first GPU- or
 * accelerator-type gpu:N, else cpu. An OpenCL implementation running on the host CPU (PoCL,
 * Rusticl's llvmpipe) is no GPU: the native cpu runs the same work faster. The environment
 * variable CLT_DEVICE ("cpu", "gpu:1") overrides the choice. Owned by the library; NULL with
 * the last error set when the device list could not be built or CLT_DEVICE names no device
 * (CLT_ERR_NO_DEVICE, naming it and the valid names). */
CLT_API clt_device *clt_device_default(void);

/* The current GPU of this thread: what "gpu" names (gpu:0 unless set); owned by the library.
 * NULL with the last error set (CLT_ERR_NO_DEVICE) when there is no OpenCL device. */
CLT_API clt_device *clt_device_current(void);

/* Makes `dev` (an OpenCL device) the current GPU of this thread. CLT_ERR_INVALID_ARGUMENT for
 * NULL, cpu or a pointer that is not one of gpu:0 ... gpu:N-1; on failure the current GPU is
 * unchanged. */
CLT_API clt_status clt_device_set_current(clt_device *dev);

/* "cpu" or "gpu:N", owned by the library and valid until the process ends; "(null)" for
 * NULL. */
CLT_API const char *clt_device_name(const clt_device *dev);

/* The device's description, owned by the library and valid until the process ends; NULL
 * (no error set) for NULL. */
CLT_API const clt_device_info *clt_device_get_info(const clt_device *dev);

/* Waits until all work queued on the device has finished. CLT_OK (at once for cpu), the
 * device's error, or CLT_ERR_INVALID_ARGUMENT for NULL. */
CLT_API clt_status clt_device_synchronize(clt_device *dev);

/* Tensor memory on a device goes through a caching allocator: a freed buffer is kept for the
 * next tensor of its size class (sizes rounded up to 512 bytes, then to a quarter of a power of
 * two) instead of going back to the driver, as PyTorch's CUDA allocator does. When the driver
 * cannot give memory, the cache is emptied and the allocation tried once more; a failure then
 * names the requested size and the bytes allocated and cached. New memory is touched when it is
 * made, so that running out of memory shows there rather than in a later kernel.
 * An OpenCL device holds at most its global memory (some drivers promise more and fail later);
 * CLT_DEVICE_MEMORY_LIMIT (bytes, with K/M/G) caps what each device may hold instead, cache
 * included; a value that is no size of at least one byte is ignored with a warning. */
typedef struct clt_memory_stats {
    size_t allocated;          /* held by tensors, in size-class bytes */
    size_t cached;             /* kept for reuse */
    size_t peak;               /* the largest `allocated` so far */
    size_t limit;              /* CLT_DEVICE_MEMORY_LIMIT, else an OpenCL device's memory;
                                * 0: none */
    uint64_t allocations;      /* requests served */
    uint64_t driver_allocations; /* of them, new memory from the driver (the rest reused) */
} clt_memory_stats;
/* Fills *stats with the device's figures: CLT_OK, also for a NULL device (all zeros);
 * CLT_ERR_INVALID_ARGUMENT for NULL stats. */
CLT_API clt_status clt_device_memory_stats(clt_device *dev, clt_memory_stats *stats);
/* Gives every cached buffer of the device back to the driver; tensors keep their memory.
 * Accepts NULL. */
CLT_API void clt_device_empty_cache(clt_device *dev);

/* Pinned host memory: host memory a device copies from and to fastest (page-locked on OpenCL
 * devices, which the driver can copy by DMA; ordinary aligned memory on cpu), for staging the
 * transfers of clt_tensor_read_async and clt_tensor_write_async. */
typedef struct clt_host_buffer clt_host_buffer;
/* nbytes of it for dev, contents undefined: a new buffer the caller frees with
 * clt_host_buffer_free. NULL with the last error set: CLT_ERR_INVALID_ARGUMENT for a NULL dev or
 * nbytes 0, CLT_ERR_OUT_OF_MEMORY or CLT_ERR_DEVICE_OUT_OF_MEMORY when there is none. */
CLT_API clt_host_buffer *clt_host_buffer_new(clt_device *dev, size_t nbytes);
/* Its address, valid until it is freed (NULL for NULL), and its size in bytes (0 for NULL). */
CLT_API void *clt_host_buffer_data(const clt_host_buffer *b);
CLT_API size_t clt_host_buffer_size(const clt_host_buffer *b);
/* Frees it; no copy may still be reading or writing it. Accepts NULL. */
CLT_API void clt_host_buffer_free(clt_host_buffer *b);

/* Builds every OpenCL program the library uses on dev, for every dtype it supports, and the
 * matrix-product kernels, so that later operations compile nothing; with the disk cache
 * (CLT_CACHE_DIR) later processes load the binaries instead. CLT_OK at once for cpu;
 * CLT_ERR_KERNEL_BUILD with the build log when a program does not build, the error of any
 * other failed step, CLT_ERR_INVALID_ARGUMENT for NULL. */
CLT_API clt_status clt_device_warmup(clt_device *dev);

/* The disk cache of built programs: its folder is CLT_CACHE_DIR, else $XDG_CACHE_HOME/cltensor,
 * else $HOME/.cache/cltensor, read once, on first use. CLT_CACHE_DIR=off turns it off, and so
 * do a folder that cannot be created or written or a name too long (with a warning in the
 * log), and having none of the three variables set. */
typedef struct clt_cache_info {
    bool enabled;        /* programs are read from and stored in `dir` */
    const char *dir;     /* the folder in use, or the one that could not be used; "" when turned
                          * off or without a name; owned by the library, valid until the
                          * process ends */
    uint64_t size_limit; /* CLT_CACHE_SIZE in bytes (256M when unset or not a size): past it,
                          * the least recently used entries are deleted */
    uint64_t entries;    /* entry files in the folder now; 0 when the cache is off */
    uint64_t bytes;      /* their total size */
} clt_cache_info;

/* Fills *info from the settings read on first use and the folder's contents, read now. CLT_OK,
 * also when the cache is off or its folder cannot be listed (no entries then);
 * CLT_ERR_INVALID_ARGUMENT for NULL. */
CLT_API clt_status clt_cache_get_info(clt_cache_info *info);

/* The current GPU for a scope, as `with torch.cuda.device(d):`. Pops undo pushes in reverse
 * order, on the thread that pushed. */
typedef struct clt_device_guard {
    clt_device *previous; /* the current GPU before the push (gpu:0 if none had been set) */
    bool active;          /* pushed and not yet popped */
} clt_device_guard;

/* Makes `dev` (an OpenCL device) the current GPU of this thread and remembers the previous one
 * in g. On failure (NULL, cpu, unknown device) the current GPU is unchanged, g is inactive and
 * the status is that of clt_device_set_current; CLT_ERR_INVALID_ARGUMENT for a NULL g. */
CLT_API clt_status clt_device_guard_push(clt_device_guard *g, clt_device *dev);

/* Restores the current GPU that g's push replaced and makes g inactive. Does nothing for NULL
 * or an inactive guard, so a second pop is harmless. */
CLT_API void clt_device_guard_pop(clt_device_guard *g);

/* A guard pushed onto dev (inactive when the push failed), for CLT_WITH_DEVICE. */
static inline clt_device_guard clt__device_guard_begin(clt_device *dev)
{
    clt_device_guard g;
    clt_device_guard_push(&g, dev);
    return g;
}

/* CLT_WITH_DEVICE(dev) { ... } runs the block once with dev as this thread's current GPU and
 * then restores the previous one; blocks nest. When dev cannot be made current the block does
 * not run and clt_last_error() says why. `break` and `continue` inside the block leave the block
 * (they do not reach an enclosing loop). With GCC and Clang the previous device is restored on
 * every way out: the end, break, continue, goto and return. With other compilers it is restored
 * only at the end and by continue: there, never break, goto or return out of the block (use
 * clt_device_guard_push and clt_device_guard_pop instead). */
#define CLT__WITH_CAT2(a, b) a##b
#define CLT__WITH_CAT(a, b) CLT__WITH_CAT2(a, b)
#if defined(__GNUC__) || defined(__clang__)
#define CLT__GUARD_CLEANUP __attribute__((cleanup(clt_device_guard_pop)))
#else
#define CLT__GUARD_CLEANUP
#endif
#define CLT__WITH_DEVICE(dev, g)                                                                 \
    for (clt_device_guard g CLT__GUARD_CLEANUP = clt__device_guard_begin(dev); g.active;        \
         clt_device_guard_pop(&g))
#ifdef __COUNTER__ /* a fresh name for each block, so that nested blocks shadow nothing */
#define CLT__WITH_ID __COUNTER__
#else
#define CLT__WITH_ID __LINE__
#endif
#define CLT_WITH_DEVICE(dev) CLT__WITH_DEVICE(dev, CLT__WITH_CAT(clt__device_guard_, CLT__WITH_ID))

#ifdef __cplusplus
}
#endif

#endif
