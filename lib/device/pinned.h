/* The data loader's staging on any backend (lib/device/pinned.c): the backend's pinned memory
 * and copy queue where it has them, ordinary memory and the device's own queue where not. */
#ifndef CLT_PINNED_H
#define CLT_PINNED_H

#include "backends/backend.h"

/* nbytes > 0 of host memory for dev's uploads: *ptr its address, *handle what
 * clt__pinned_free takes. */
clt_status clt__pinned_alloc(const char *fn, clt_device *dev, size_t nbytes, void **handle,
                             void **ptr);
void clt__pinned_free(clt_device *dev, void *handle, void *ptr);
/* Copies nbytes at ptr (from clt__pinned_alloc) into buf from byte 0: queued on the copy queue
 * with *event its completion (order later work after it with the backend's queue_wait), or
 * finished on return with *event NULL. */
clt_status clt__pinned_upload(const char *fn, clt_device *dev, void *buf, const void *ptr,
                              size_t nbytes, void **event);

#endif
