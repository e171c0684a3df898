/* Devices: the host `cpu` and the OpenCL devices `gpu:0` ... `gpu:N-1`, one flat list over all
 * OpenCL platforms (GPU and accelerator types first, in platform order, then CPU-type OpenCL
 * devices). Devices belong to the library and live until the process ends: callers never free
 * them. The list is built on first use; CLT_VISIBLE_DEVICES filters and reorders it. */
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
    CLT_DEVICE_HOST = 0,        /* `cpu`: plain C on the host */
    CLT_DEVICE_GPU = 1,         /* an OpenCL GPU */
    CLT_DEVICE_ACCELERATOR = 2, /* an OpenCL accelerator */
    CLT_DEVICE_OPENCL_CPU = 3,  /* a CPU-type OpenCL device (PoCL, Intel's CPU runtime) */
} clt_device_type;

/* What a device is. Strings are owned by the library and live as long as the device. */
typedef struct clt_device_info {
    clt_device_type type;
    const char *name;            /* the device's own name ("pthread-skylake-avx512-...") */
    const char *vendor;
    const char *platform;        /* OpenCL platform name; "host" for cpu */
    const char *opencl_version;  /* CL_DEVICE_VERSION; "" for cpu */
    const char *driver_version;  /* CL_DRIVER_VERSION; "" for cpu */
    uint64_t global_mem_bytes;   /* device memory (physical memory for cpu) */
    uint64_t max_alloc_bytes;    /* largest single buffer */
    unsigned compute_units;      /* OpenCL compute units; online processors for cpu */
    size_t max_work_group_size;  /* 1 for cpu */
    bool fp64;                   /* f64 tensors allowed */
    bool fp16;                   /* native half arithmetic (f16 storage works everywhere) */
} clt_device_info;

/* The number of OpenCL devices (`gpu:N`) after CLT_VISIBLE_DEVICES; 0 on a machine without
 * OpenCL. On failure (a bad CLT_VISIBLE_DEVICES) returns a negative clt_status and sets the
 * last error. */
CLT_API int clt_device_count(void);

/* The device with this name: "cpu", "gpu" (the current GPU, gpu:0 unless set) or "gpu:N".
 * Returns NULL and sets the last error, listing the valid names, for anything else. */
CLT_API clt_device *clt_device_get(const char *name);

/* The host device; NULL only when the device list could not be built (last error set). */
CLT_API clt_device *clt_device_cpu(void);

/* gpu:0 when there is one, else cpu: torch.device("cuda" if available else "cpu").
 * NULL only when the device list could not be built (last error set). */
CLT_API clt_device *clt_device_default(void);

/* The current GPU of this thread: what "gpu" names (gpu:0 unless set). NULL and the last error
 * set when there is no OpenCL device. */
CLT_API clt_device *clt_device_current(void);

/* Makes `dev` (an OpenCL device) the current GPU of this thread. CLT_ERR_INVALID_ARGUMENT for
 * NULL or cpu. */
CLT_API clt_status clt_device_set_current(clt_device *dev);

/* "cpu" or "gpu:N": a static string. "(null)" for NULL. */
CLT_API const char *clt_device_name(const clt_device *dev);

/* The device's description, owned by the library; NULL for NULL. */
CLT_API const clt_device_info *clt_device_get_info(const clt_device *dev);

/* Waits until all work queued on the device has finished. CLT_OK, or the device's error. */
CLT_API clt_status clt_device_synchronize(clt_device *dev);

#ifdef __cplusplus
}
#endif

#endif
