/* The host backend: `cpu` runs every operation as plain C loops over host memory, using the
 * same scalar functions (cl/scalar.cl) as the OpenCL kernels. */
#include <stdio.h>
#include <string.h>

#include "host.h"
#include "core/core.h"
#include "platform/platform.h"
#include "backends/shared/scalar_host.h"

#define CLT__HOST_ALIGNMENT 64

clt_status clt__host_alloc(const char *fn, clt_device *dev, size_t nbytes, void **buf)
{
    (void)dev;
    *buf = clt__alloc_aligned(fn, nbytes, CLT__HOST_ALIGNMENT);
    return *buf ? CLT_OK : CLT_ERR_OUT_OF_MEMORY;
}

void clt__host_free(clt_device *dev, void *buf)
{
    (void)dev;
    clt__free(buf);
}

clt_status clt__host_write(const char *fn, clt_device *dev, void *buf, size_t offset,
                             const void *src, size_t nbytes, const clt__async *async)
{
    (void)fn;
    (void)dev;
    memcpy((char *)buf + offset, src, nbytes);
    if (async && async->event)
        *async->event = NULL;
    return CLT_OK;
}

clt_status clt__host_read(const char *fn, clt_device *dev, void *buf, size_t offset, void *dst,
                            size_t nbytes, const clt__async *async)
{
    (void)fn;
    (void)dev;
    memcpy(dst, (const char *)buf + offset, nbytes);
    if (async && async->event)
        *async->event = NULL;
    return CLT_OK;
}

clt_status clt__host_copy(const char *fn, clt_device *dev, void *src, size_t src_offset,
                            void *dst, size_t dst_offset, size_t nbytes)
{
    (void)fn;
    (void)dev;
    memcpy((char *)dst + dst_offset, (const char *)src + src_offset, nbytes);
    return CLT_OK;
}

clt_status clt__host_copy_runs(const char *fn, clt_device *dev, const clt__copies_call *c)
{
    size_t size = clt_dtype_size(c->dtype);
    (void)fn;
    (void)dev;
    for (int j = 0; j < c->count; j++)
        memcpy((char *)c->dst + c->run[j].dst_offset * size,
               (const char *)c->run[j].src + c->run[j].src_offset * size, c->run[j].n * size);
    return CLT_OK;
}

/* There is one host device. */
bool clt__host_peer(const clt_device *dev, const clt_device *to)
{
    (void)dev;
    (void)to;
    return false;
}

clt_status clt__host_peer_order(const char *fn, clt_device *dev, clt_device *then)
{
    return clt__error(CLT_ERR_UNSUPPORTED, fn, "%s and %s are not peer devices", dev->name,
                      then->name);
}

clt_status clt__host_fill(const char *fn, clt_device *dev, void *buf, size_t offset,
                            const void *pattern, size_t pattern_size, size_t nbytes)
{
    char *p = (char *)buf + offset;
    (void)fn;
    (void)dev;
    for (size_t i = 0; i < nbytes; i += pattern_size)
        memcpy(p + i, pattern, pattern_size);
    return CLT_OK;
}

clt_status clt__host_random(const char *fn, clt_device *dev, void *buf, size_t off,
                              clt_dtype dtype, size_t n, bool normal, uint64_t seed,
                              uint64_t counter)
{
    clt_u32 k0 = (clt_u32)seed, k1 = (clt_u32)(seed >> 32);
    size_t per = clt__random_per_counter(dtype);
    int digits = dtype == CLT_F16 ? 11 : dtype == CLT_BF16 ? 8 : 24;
    (void)fn;
    (void)dev;
    for (size_t g = 0; g * per < n; g++) {
        float v[4];
        double w[2];
        size_t base = off + g * per, m = n - g * per < per ? n - g * per : per;
        if (dtype == CLT_F64)
            clt_random_block_f64(normal, counter + g, k0, k1, w);
        else
            clt_random_block_f32(normal, digits, counter + g, k0, k1, v);
        for (size_t j = 0; j < m; j++) {
            switch (dtype) {
            case CLT_F64: ((double *)buf)[base + j] = w[j]; break;
            case CLT_F16: ((clt_u16 *)buf)[base + j] = clt_f32_to_f16(v[j]); break;
            case CLT_BF16: ((clt_u16 *)buf)[base + j] = clt_f32_to_bf16(v[j]); break;
            default: ((float *)buf)[base + j] = v[j]; break;
            }
        }
    }
    return CLT_OK;
}

clt_status clt__host_synchronize(const char *fn, clt_device *dev)
{
    (void)fn;
    (void)dev;
    return CLT_OK;
}

clt_status clt__host_marker(const char *fn, clt_device *dev, void **event)
{
    (void)fn;
    (void)dev;
    *event = NULL;
    return CLT_OK;
}

clt_status clt__host_pinned_alloc(const char *fn, clt_device *dev, size_t nbytes,
                                     void **handle, void **ptr)
{
    (void)dev;
    *handle = *ptr = clt__alloc_aligned(fn, nbytes, CLT__HOST_ALIGNMENT);
    return *ptr ? CLT_OK : clt_last_status();
}

void clt__host_pinned_free(clt_device *dev, void *handle, void *ptr)
{
    (void)dev, (void)ptr;
    clt__free(handle);
}

clt_status clt__host_upload(const char *fn, clt_device *dev, void *buf, const void *ptr,
                              size_t nbytes, void **event)
{
    (void)fn, (void)dev;
    memcpy(buf, ptr, nbytes);
    *event = NULL;
    return CLT_OK;
}

clt_status clt__host_queue_wait(const char *fn, clt_device *dev, void *event)
{
    (void)fn, (void)dev, (void)event;
    return CLT_OK;
}

clt_status clt__host_event_wait(const char *fn, void *event)
{
    (void)fn;
    (void)event;
    return CLT_OK;
}

void clt__host_event_release(void *event)
{
    (void)event;
}

#define CLT__HOST_ENTRY(name, ret, params, kind) .name = clt__host_##name,
const clt__backend clt__host_backend = {.name = "host", CLT__BACKEND_OPS(CLT__HOST_ENTRY)};
#undef CLT__HOST_ENTRY

clt_status clt__host_describe(clt_device *dev)
{
    static char model[256], vendor[128];
    uint64_t memory = clt__memory_bytes();
    int cpus = clt__cpu_count();

    clt__cpu_names(model, sizeof model, vendor, sizeof vendor);
    dev->info = (clt_device_info){
        .type = CLT_DEVICE_HOST,
        .name = model,
        .vendor = vendor,
        .backend = "host",
        .platform = "host",
        .version = "",
        .driver_version = "",
        .global_mem_bytes = memory,
        .max_alloc_bytes = memory,
        .compute_units = (unsigned)cpus,
        .max_work_group_size = 1,
        .fp64 = true,
        .fp16 = false,
    };
    return CLT_OK;
}
