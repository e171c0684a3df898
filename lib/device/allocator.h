/* The caching allocator behind tensor memory (lib/device/allocator.c). */
#ifndef CLT_ALLOCATOR_H
#define CLT_ALLOCATOR_H

#include "backends/backend.h"

/* nbytes of memory on dev for a tensor: a cached buffer of the size class, or new memory
 * (always new with `fresh`, for buffers another queue writes first: the data loader's copies).
 * *capacity receives the buffer's size, for clt__device_free. Errors name fn. */
clt_status clt__device_alloc(const char *fn, clt_device *dev, size_t nbytes, bool fresh,
                             void **buf, size_t *capacity);
/* The most bytes dev's tensors may hold together (CLT_DEVICE_MEMORY_LIMIT, else an OpenCL
 * device's memory), 0 for no limit (cpu without the variable) or when it cannot be read. */
size_t clt__device_memory_limit(clt_device *dev);
/* Gives a buffer back: kept for reuse, or freed when it cannot be. */
void clt__device_free(clt_device *dev, void *buf, size_t capacity);
/* The same, straight back to the driver, never cached: for a buffer that was handed out
 * through the interop API, which its holder may still write, so that no later tensor gets it. */
void clt__device_free_uncached(clt_device *dev, void *buf, size_t capacity);

#endif
