/* The device registry's private interface for the rest of the library. */
#ifndef CLT_REGISTRY_H
#define CLT_REGISTRY_H

#include "backends/backend.h"

/* CLT_OK when dev is a device (not NULL); otherwise sets the last error naming fn. */
clt_status clt__device_check(const char *fn, const clt_device *dev);
/* dev itself, or cpu for NULL (the one meaning of a NULL device throughout the API). NULL with
 * the last error set (naming fn) only when the device list could not be built. */
clt_device *clt__device_or_cpu(const char *fn, clt_device *dev);
/* CLT_OK when dtype is valid and dev can hold it (f64 needs fp64); otherwise the error. */
clt_status clt__device_dtype_check(const char *fn, const clt_device *dev, clt_dtype dtype);

/* The parsers of device names and CLT_VISIBLE_DEVICES, apart from the registry's state (they
 * take untrusted text: tests/fuzz runs them on random input). */

/* What a device name denotes with gpu_count OpenCL devices: an index 0 ... gpu_count-1 for
 * "gpu:N", or one of these. */
enum {
    CLT__NAME_CPU = -1,       /* "cpu" */
    CLT__NAME_GPU = -2,       /* "gpu": the current GPU (there is one) */
    CLT__NAME_NO_DEVICE = -3, /* "gpu" or "gpu:N" naming a device that does not exist */
    CLT__NAME_INVALID = -4,   /* not a device name ("gpu:01", "GPU:0", "cuda") */
};
int clt__device_name_parse(const char *name, int gpu_count);

/* CLT_VISIBLE_DEVICES `value` (a comma list of indices and case-insensitive name substrings)
 * against the `count` devices named `names`: order[0 ... *chosen-1] receives the indices chosen,
 * in the order given, each once. CLT_OK; CLT_ERR_ENVIRONMENT with `why` saying what is wrong and
 * *chosen 0; CLT_ERR_OUT_OF_MEMORY. order holds at least count entries. */
clt_status clt__visible_parse(const char *value, const char *const *names, int count, int *order,
                              int *chosen, char *why, size_t why_size);

#endif
