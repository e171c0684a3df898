/* The device registry's private interface for the rest of the library. */
#ifndef CLT_REGISTRY_H
#define CLT_REGISTRY_H

#include "backend.h"

/* CLT_OK when dev is a device (not NULL); otherwise sets the last error naming fn. */
clt_status clt__device_check(const char *fn, const clt_device *dev);
/* dev itself; for NULL this thread's current GPU, or cpu when there is no OpenCL device. NULL
 * with the last error set (naming fn) only when the device list could not be built. */
clt_device *clt__device_or_current(const char *fn, clt_device *dev);
/* CLT_OK when dtype is valid and dev can hold it (f64 needs fp64); otherwise the error. */
clt_status clt__device_dtype_check(const char *fn, const clt_device *dev, clt_dtype dtype);

#endif
