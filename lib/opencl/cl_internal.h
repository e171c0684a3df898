/* The OpenCL backend's private state: one context and one in-order queue per device, the
 * programs built for it, and the launch helper the kernels go through. */
#ifndef CLT_CL_INTERNAL_H
#define CLT_CL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 120
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif
#include <pthread.h>

#include "backend.h"

/* A built program and the kernels taken from it so far. */
typedef struct clt__cl_program {
    struct clt__cl_program *next;
    char *key; /* "name options" */
    cl_program program;
    struct clt__cl_kernel *kernels;
} clt__cl_program;

typedef struct clt__cl_kernel {
    struct clt__cl_kernel *next;
    char *name;
    cl_kernel kernel;
    size_t local_size; /* work-group size used for 1-D launches */
    size_t max_local;  /* CL_KERNEL_WORK_GROUP_SIZE (0: unknown) */
} clt__cl_kernel;

typedef struct clt__cl_device {
    cl_platform_id platform;
    cl_device_id id;
    bool sub_device;      /* id came from clCreateSubDevices (CLT_SUBDEVICES) and this record
                           * holds its reference; records live as long as the process, so it is
                           * released (clReleaseDevice) only when enumeration drops the record */
    pthread_mutex_t lock; /* guards everything below and every launch */
    bool started;         /* context and queue exist */
    cl_context context;
    cl_command_queue queue;
    cl_command_queue copy_queue; /* the data loader's uploads, ordered against queue by events */
    clt__cl_program *programs;
    struct clt__cl_deferred *deferred; /* work waiting for asynchronous transfers */
    char strings[5][256]; /* backing store of info.name, vendor, platform, versions */
} clt__cl_device;

static inline clt__cl_device *clt__cl(clt_device *dev)
{
    return (clt__cl_device *)dev->impl;
}

extern const clt__backend clt__cl_backend;

/* Runs the work deferred until asynchronous transfers finish: what has finished, or with wait
 * everything (after the queue was finished). */
void clt__cl_reap(clt_device *dev, bool wait);

/* Whether a device can run the library's kernels: OpenCL C 1.2 or later ("OpenCL C 1.2 ...")
 * and the full profile (64-bit integers). On false, *why says what is missing. */
bool clt__cl_usable(const char *c_version, const char *profile, const char **why);

/* Creates the device's context and queue on first use (under the device lock). */
clt_status clt__cl_start(const char *fn, clt_device *dev);

/* Build options that specialise elementwise.cl, nn.cl and the like for a dtype: -DDT (its token),
 * -DST (storage type), -DCT (compute type), -DKIND (flt, dbl or int), -DCLT_KIND_INT. */
const char *clt__cl_dtype_options(clt_dtype dtype);

/* One kernel argument: its size and a pointer to its value (a cl_mem, a cl_ulong, ...). */
typedef struct clt__cl_arg {
    size_t size;
    const void *value;
} clt__cl_arg;

/* Runs kernel `kernel` of program `program` (built with `options`) over n work-items in 1-D,
 * rounded up to the work-group size; the kernel checks the bound. *event, if event is not NULL,
 * receives the launch's event. */
clt_status clt__cl_launch(const char *fn, clt_device *dev, const char *program,
                          const char *options, const char *kernel, const clt__cl_arg *args,
                          int nargs, size_t n, cl_event *event);

/* Runs kernel `kernel` over `groups` work-groups of *local work-items in 1-D (no bound to
 * check). *local, asked for, is lowered to the largest power of two that the kernel and the
 * device allow, and receives the size used. */
clt_status clt__cl_launch_groups(const char *fn, clt_device *dev, const char *program,
                                 const char *options, const char *kernel,
                                 const clt__cl_arg *args, int nargs, size_t groups, size_t *local,
                                 cl_event *event);

/* The disk cache of built programs (cl_cache.c). Its folder is CLT_CACHE_DIR (default
 * $XDG_CACHE_HOME/cltensor or $HOME/.cache/cltensor; "off" disables it), its size cap
 * CLT_CACHE_SIZE, both read once per process. Nothing here fails for the caller: an unusable
 * entry or folder is logged and behaves as a miss. */

/* What happened to programs so far in this process, for tests. */
typedef struct clt__cl_cache_stats {
    long programs; /* programs built for a device, from a binary or from source */
    long hits;     /* built from a cache entry */
    long misses;   /* built from source (no usable entry, or the cache off) */
    long rejected; /* entries found but not used: corrupt, truncated, foreign, refused */
    long stored;   /* entries written */
} clt__cl_cache_stats;

typedef enum clt__cl_cache_event {
    CLT__CACHE_PROGRAM,
    CLT__CACHE_HIT,
    CLT__CACHE_MISS,
    CLT__CACHE_REJECTED,
    CLT__CACHE_STORED,
} clt__cl_cache_event;

void clt__cl_cache_note(clt__cl_cache_event event);
clt__cl_cache_stats clt__cl_cache_get_stats(void);

/* The key material of a program: library version, platform name and version, device name,
 * driver version, build options and every source part, each length-prefixed. Returns a new
 * buffer (clt__free) of *key_len bytes, or NULL when out of memory. */
char *clt__cl_cache_key(const char *fn, clt_device *dev, const char *options, int count,
                        const char *const *texts, const size_t *lens, size_t *key_len);

/* The binary stored under the key (clt__free), *size its length; NULL on a miss, or after a
 * corrupt, truncated or foreign entry was logged and counted as rejected. */
unsigned char *clt__cl_cache_load(const char *fn, const char *key, size_t key_len, size_t *size);

/* Stores the binary under the key (temp file + rename), then evicts least recently used
 * entries down to the size cap. Failures are logged, never returned. */
void clt__cl_cache_store(const char *fn, const char *key, size_t key_len,
                         const unsigned char *binary, size_t size);

/* Builds every program the library's kernels use on the device, for every dtype it supports. */
clt_status clt__cl_build_all(const char *fn, clt_device *dev);

/* A readable failure from an OpenCL call: "what on gpu:0 failed: CL_... (-5)". */
clt_status clt__cl_error(const char *fn, clt_device *dev, cl_int err, const char *what);

#endif
