/* The caching allocator behind every tensor's memory (include/cltensor/device.h): per device,
 * freed buffers kept in free lists by size class and handed to the next request of the class;
 * statistics; CLT_DEVICE_MEMORY_LIMIT; on the driver's out-of-memory, the cache emptied and the
 * allocation tried once more. Each request counts as one allocation attempt for fault injection,
 * whether it reuses memory or not, so that tests fail the Nth request the same way either way;
 * cached buffers do not count as live. */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "device/allocator.h"
#include "core/core.h"

#define CLASSES 256

/* Buffers of one size class waiting for reuse. */
typedef struct free_list {
    void **items;
    int count, capacity;
} free_list;

typedef struct clt__pool {
    pthread_mutex_t lock;
    free_list lists[CLASSES];
    clt_memory_stats stats;
} clt__pool;

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;

/* The size class of n bytes: its index and its size (512 bytes, then four classes for each
 * power of two: 2^k, 1.25 * 2^k, 1.5 * 2^k, 1.75 * 2^k). */
static int size_class(size_t n, size_t *size)
{
    int k = 9;
    if (n <= 512) {
        *size = 512;
        return 0;
    }
    while (k < 62 && ((size_t)1 << (k + 1)) < n)
        k++;
    size_t base = (size_t)1 << k, step = base / 4;
    int q = (int)((n - base + step - 1) / step); /* 1 .. 4 */
    *size = base + (size_t)q * step;
    int index = 1 + (k - 9) * 4 + (q - 1);
    return index < CLASSES ? index : -1;
}

/* CLT_DEVICE_MEMORY_LIMIT in bytes (K, M, G suffixes); 0 when unset or unreadable. */
static size_t memory_limit(void)
{
    const char *v = getenv("CLT_DEVICE_MEMORY_LIMIT");
    char *end;
    double x;
    if (!v || !*v)
        return 0;
    x = strtod(v, &end);
    switch (toupper((unsigned char)*end)) {
    case 'K': x *= 1024, end++; break;
    case 'M': x *= 1024.0 * 1024, end++; break;
    case 'G': x *= 1024.0 * 1024 * 1024, end++; break;
    default: break;
    }
    /* at least one byte and a number of bytes a size_t holds: inf, 1e30 or 0.5 are no limit
     * anyone meant */
    if (end == v || *end || !(x >= 1) || !(x < (double)SIZE_MAX)) {
        clt__log(CLT_LOG_WARN, "CLT_DEVICE_MEMORY_LIMIT=\"%s\" is not a size of at least one "
                 "byte: ignored", v);
        return 0;
    }
    return (size_t)x;
}

static clt__pool *pool_of(clt_device *dev)
{
    clt__pool *p = atomic_load(&dev->pool); /* made once: no lock on the usual path */
    if (p)
        return p;
    pthread_mutex_lock(&pools_lock);
    p = dev->pool;
    if (!p) {
        clt__fault_suspend(true);
        p = clt__alloc_zeroed("clt_device", sizeof *p);
        clt__fault_suspend(false);
        if (p) {
            clt__live_add(CLT__HOST, -1); /* kept for the life of the process */
            pthread_mutex_init(&p->lock, NULL);
            /* an OpenCL device holds at most its memory, whatever its driver promises (some
             * overcommit and fail only in a later kernel) */
            p->stats.limit = memory_limit();
            if (!p->stats.limit && !clt__is_host(dev))
                p->stats.limit = (size_t)dev->info.global_mem_bytes;
            dev->pool = p;
        }
    }
    pthread_mutex_unlock(&pools_lock);
    return p;
}

size_t clt__device_memory_limit(clt_device *dev)
{
    clt__pool *p = pool_of(dev);
    return p ? p->stats.limit : 0;
}

static clt__alloc_kind kind_of(const clt_device *dev)
{
    return clt__is_host(dev) ? CLT__HOST : CLT__DEVICE;
}

/* Frees every cached buffer; called with the pool locked. */
static void drain(clt_device *dev, clt__pool *p)
{
    for (int c = 0; c < CLASSES; c++) {
        free_list *l = &p->lists[c];
        for (int i = 0; i < l->count; i++) {
            clt__live_add(kind_of(dev), 1); /* the backend's free counts it down */
            dev->backend->free(dev, l->items[i]);
        }
        l->count = 0;
    }
    p->stats.cached = 0;
}

/* New memory from the backend, without counting an attempt (the request did). */
static clt_status driver_alloc(const char *fn, clt_device *dev, size_t size, void **buf)
{
    clt_status st;
    clt__fault_suspend(true);
    st = dev->backend->alloc(fn, dev, size, buf);
    clt__fault_suspend(false);
    return st;
}

static clt_status out_of_memory(const char *fn, clt_device *dev, clt__pool *p, size_t n,
                                const char *why)
{
    clt_status kind = clt__is_host(dev) ? CLT_ERR_OUT_OF_MEMORY : CLT_ERR_DEVICE_OUT_OF_MEMORY;
    return clt__error(kind, fn,
                      "out of %s memory allocating %zu bytes on %s (%s; %zu bytes allocated, %zu "
                      "cached)", clt__is_host(dev) ? "host" : "device", n, dev->name, why,
                      p->stats.allocated, p->stats.cached);
}

clt_status clt__device_alloc(const char *fn, clt_device *dev, size_t nbytes, bool fresh,
                             void **buf, size_t *capacity)
{
    clt__pool *p = pool_of(dev);
    clt__alloc_kind kind = kind_of(dev);
    size_t size;
    int c;
    clt_status st;
    *buf = NULL;
    if (!p)
        return clt__rename_error(fn);
    if (dev->info.max_alloc_bytes && nbytes > dev->info.max_alloc_bytes)
        return clt__error(CLT_ERR_DEVICE_OUT_OF_MEMORY, fn,
                          "%zu bytes exceed the largest single allocation of %s (%llu bytes)",
                          nbytes, dev->name, (unsigned long long)dev->info.max_alloc_bytes);
    c = size_class(nbytes, &size);
    if (c < 0 || (dev->info.max_alloc_bytes && size > dev->info.max_alloc_bytes))
        size = nbytes; /* too large to round up: its own size, never cached */
    pthread_mutex_lock(&p->lock);
    if (clt__fault_check(kind)) {
        st = out_of_memory(fn, dev, p, nbytes, "an injected failure");
        pthread_mutex_unlock(&p->lock);
        return st;
    }
    if (c >= 0 && !fresh && p->lists[c].count > 0) {
        *buf = p->lists[c].items[--p->lists[c].count];
        p->stats.cached -= size;
        clt__live_add(kind, 1);
    } else {
        if (p->stats.limit && p->stats.allocated + p->stats.cached + size > p->stats.limit)
            drain(dev, p);
        if (p->stats.limit && p->stats.allocated + size > p->stats.limit) {
            st = out_of_memory(fn, dev, p, nbytes,
                               memory_limit() ? "CLT_DEVICE_MEMORY_LIMIT reached"
                                              : "the device's memory is full");
            pthread_mutex_unlock(&p->lock);
            return st;
        }
        st = driver_alloc(fn, dev, size, buf);
        if (st != CLT_OK && p->stats.cached) { /* give the cache back and try once more */
            drain(dev, p);
            st = driver_alloc(fn, dev, size, buf);
        }
        if (st != CLT_OK) {
            st = out_of_memory(fn, dev, p, nbytes, clt_status_name(st));
            pthread_mutex_unlock(&p->lock);
            return st;
        }
        p->stats.driver_allocations++;
    }
    p->stats.allocations++;
    p->stats.allocated += size;
    if (p->stats.allocated > p->stats.peak)
        p->stats.peak = p->stats.allocated;
    pthread_mutex_unlock(&p->lock);
    *capacity = size;
    return CLT_OK;
}

/* clt__device_free, the buffer kept for reuse only where `cache`. */
static void give_back(clt_device *dev, void *buf, size_t capacity, bool cache)
{
    clt__pool *p = dev->pool;
    size_t size;
    int c = size_class(capacity, &size);
    if (!buf)
        return;
    pthread_mutex_lock(&p->lock);
    p->stats.allocated -= capacity;
    if (cache && c >= 0 && size == capacity) {
        free_list *l = &p->lists[c];
        if (l->count == l->capacity) { /* bookkeeping: never made to fail by tests */
            int cap = l->capacity ? 2 * l->capacity : 8;
            clt__fault_suspend(true);
            void **grown = clt__alloc("clt_tensor_release", (size_t)cap * sizeof *grown);
            clt__fault_suspend(false);
            if (grown) {
                clt__live_add(CLT__HOST, -1);
                if (l->count)
                    memcpy(grown, l->items, (size_t)l->count * sizeof *grown);
                if (l->items) {
                    clt__live_add(CLT__HOST, 1);
                    clt__free(l->items);
                }
                l->items = grown;
                l->capacity = cap;
            }
        }
        if (l->count < l->capacity) {
            l->items[l->count++] = buf;
            p->stats.cached += capacity;
            clt__live_add(kind_of(dev), -1);
            pthread_mutex_unlock(&p->lock);
            return;
        }
    }
    pthread_mutex_unlock(&p->lock);
    dev->backend->free(dev, buf);
}

void clt__device_free(clt_device *dev, void *buf, size_t capacity)
{
    give_back(dev, buf, capacity, true);
}

void clt__device_free_uncached(clt_device *dev, void *buf, size_t capacity)
{
    give_back(dev, buf, capacity, false);
}

clt_status clt_device_memory_stats(clt_device *dev, clt_memory_stats *stats)
{
    clt__pool *p;
    if (!stats)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_device_memory_stats", "stats is NULL");
    memset(stats, 0, sizeof *stats);
    if (!dev)
        return CLT_OK;
    if (!(p = pool_of(dev)))
        return clt_last_status();
    pthread_mutex_lock(&p->lock);
    *stats = p->stats;
    pthread_mutex_unlock(&p->lock);
    return CLT_OK;
}

void clt_device_empty_cache(clt_device *dev)
{
    clt__pool *p = dev ? dev->pool : NULL;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock); /* OpenCL keeps a released buffer until queued work is done */
    drain(dev, p);
    pthread_mutex_unlock(&p->lock);
}

clt_status clt__scratch_alloc(const char *fn, clt_device *dev, size_t nbytes, void **buf,
                              size_t *capacity)
{
    return clt__device_alloc(fn, dev, nbytes, false, buf, capacity);
}

void clt__scratch_free(clt_device *dev, void *buf, size_t capacity)
{
    clt__device_free(dev, buf, capacity);
}
