/* The OpenCL backend's devices: enumeration over every platform, the context and queue made on
 * first use, buffers, transfers, fills, events and synchronisation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "core/core.h"

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

clt_status clt__cl_error(const char *fn, clt_device *dev, cl_int err, const char *what)
{
    return clt__error(err, fn, "%s on %s failed: %s (%d)", what, dev->name, clt_status_name(err),
                      (int)err);
}

/* ---- enumeration ----------------------------------------------------------------------------- */

static void info_string(cl_device_id id, cl_device_info what, char *out, size_t size)
{
    out[0] = '\0';
    if (clGetDeviceInfo(id, what, size - 1, out, NULL) != CL_SUCCESS)
        out[0] = '\0';
    out[size - 1] = '\0';
}

static bool has_extension(cl_device_id id, const char *ext)
{
    size_t size = 0;
    bool found = false;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS || size == 0)
        return false;
    char *all = malloc(size + 1);
    if (!all)
        return false;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, size, all, NULL) == CL_SUCCESS) {
        all[size] = '\0';
        char *save = NULL;
        for (char *tok = strtok_r(all, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
            found = found || strcmp(tok, ext) == 0;
    }
    free(all);
    return found;
}

bool clt__cl_usable(const char *c_version, const char *profile, const char **why)
{
    int major = 0, minor = 0;
    if (sscanf(c_version, "OpenCL C %d.%d", &major, &minor) != 2 || major * 10 + minor < 12) {
        *why = "its OpenCL C is older than 1.2";
        return false;
    }
    if (strcmp(profile, "FULL_PROFILE") != 0) {
        *why = "it has only the embedded profile (no 64-bit integers)";
        return false;
    }
    return true;
}

static clt_device_type classify(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return CLT_DEVICE_GPU;
    if (t & CL_DEVICE_TYPE_CPU)
        return CLT_DEVICE_CPU;
    return CLT_DEVICE_ACCELERATOR;
}

/* A native vector width of the device (0 when not reported). */
static cl_uint native_width(cl_device_id id, cl_device_info which)
{
    cl_uint w = 0;
    clGetDeviceInfo(id, which, sizeof w, &w, NULL);
    return w;
}

/* The vector width the kernels use for a native width: the largest power of two up to it,
 * between 2 and 16. */
static unsigned kernel_width(cl_uint native)
{
    unsigned w = 2;
    while (w < 16 && w * 2 <= native)
        w *= 2;
    return w;
}

/* The vectors in a row of the GEMM register tile (cl/gemm.cl) for native vectors of
 * vector_bytes bytes. */
static unsigned gemm_nv(unsigned vector_bytes)
{
    /* 64-byte vectors (AVX-512) come with 32 registers: 4 x 4 accumulators, 4 of B, 1 of A;
     * narrower ones (AVX2, SSE) with 16 on x86-64: 4 x 3 + 3 + 1. 4 x 4 there spills, and runs
     * well below 4 x 3's rate (docs/performance.md, Matrix products on OpenCL devices). */
    return vector_bytes >= 64 ? 4 : 3;
}

/* A device record for one OpenCL device, with its description filled in; for part `sub` (from
 * 1) of a device split into `of` sub-devices, the name says so and the record takes over the
 * reference to id. */
static clt_device *describe(cl_platform_id platform, cl_device_id id, clt_device_type type,
                            unsigned sub, unsigned of)
{
    clt_device *dev = calloc(1, sizeof *dev);
    clt__cl_device *cd = calloc(1, sizeof *cd);
    cl_ulong mem = 0, max_alloc = 0;
    cl_uint units = 0;
    size_t wg = 0;
    cl_device_fp_config fp64 = 0;

    if (!dev || !cd) {
        free(dev);
        free(cd);
        return NULL;
    }
    cd->platform = platform;
    cd->id = id;
    cd->sub_device = sub > 0;
    pthread_mutex_init(&cd->lock, NULL);
    pthread_mutex_init(&cd->gemm_lock, NULL);
    info_string(id, CL_DEVICE_NAME, cd->strings[0], sizeof cd->strings[0]);
    if (sub) { /* the suffix always fits: the device's own name is cut if need be */
        char suffix[48];
        size_t len = (size_t)snprintf(suffix, sizeof suffix, " (sub-device %u of %u)", sub, of);
        size_t keep = strlen(cd->strings[0]);
        if (keep > sizeof cd->strings[0] - 1 - len)
            keep = sizeof cd->strings[0] - 1 - len;
        memcpy(cd->strings[0] + keep, suffix, len + 1);
    }
    info_string(id, CL_DEVICE_VENDOR, cd->strings[1], sizeof cd->strings[1]);
    if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof cd->strings[2] - 1, cd->strings[2],
                          NULL) != CL_SUCCESS)
        cd->strings[2][0] = '\0';
    info_string(id, CL_DEVICE_VERSION, cd->strings[3], sizeof cd->strings[3]);
    info_string(id, CL_DRIVER_VERSION, cd->strings[4], sizeof cd->strings[4]);
    clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    clGetDeviceInfo(id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL);
    clGetDeviceInfo(id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof cd->native_float_width,
                    &cd->native_float_width, NULL);
    cd->vw_float = kernel_width(cd->native_float_width);
    cd->vw_double = kernel_width(native_width(id, CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE));
    cd->vw_long = kernel_width(native_width(id, CL_DEVICE_NATIVE_VECTOR_WIDTH_LONG));
    cd->gemm_nv[0] = gemm_nv(cd->vw_float * 4);
    cd->gemm_nv[1] = gemm_nv(cd->vw_double * 8);
    dev->index = -1;
    dev->impl = cd;
    dev->info = (clt_device_info){
        .type = type,
        .name = cd->strings[0],
        .vendor = cd->strings[1],
        .platform = cd->strings[2],
        .backend = "opencl",
        .version = cd->strings[3],
        .driver_version = cd->strings[4],
        .global_mem_bytes = mem,
        .max_alloc_bytes = max_alloc,
        .compute_units = units,
        .max_work_group_size = wg ? wg : 1,
        .fp64 = fp64 != 0 || has_extension(id, "cl_khr_fp64"),
        .fp16 = has_extension(id, "cl_khr_fp16"),
    };
    return dev;
}

/* Lets go of a record's share of its group; the last frees it. */
static void group_release(clt__cl_group *g)
{
    if (!g || atomic_fetch_sub(&g->refs, 1) != 1)
        return;
    if (g->context)
        clReleaseContext(g->context);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

/* Frees a record that never made it into the list, with the sub-device reference it holds. */
static void drop(clt_device *dev)
{
    if (!dev)
        return;
    clt__cl_device *cd = clt__cl(dev);
    group_release(cd->group);
    if (cd->sub_device)
        clReleaseDevice(cd->id);
    pthread_mutex_destroy(&cd->lock);
    pthread_mutex_destroy(&cd->gemm_lock);
    free(cd);
    free(dev);
}

/* Appends dev (NULL: describe ran out of memory) to the list; on failure drops it. */
static clt_status append(clt_device ***devices, int *count, clt_device *dev)
{
    clt_device **grown = dev ? realloc(*devices, (size_t)(*count + 1) * sizeof *grown) : NULL;
    if (!grown) {
        drop(dev);
        return CLT_ERR_OUT_OF_MEMORY;
    }
    *devices = grown;
    grown[(*count)++] = dev;
    return CLT_OK;
}

/* Why the device cannot be split equally into n sub-devices, or NULL when it can. */
static const char *unsplittable(cl_device_id id, unsigned n, char *why, size_t size)
{
    cl_device_partition_property props[16];
    size_t props_size = 0;
    cl_uint units = 0, max_sub = 0;
    bool equally = false;

    if (clGetDeviceInfo(id, CL_DEVICE_PARTITION_PROPERTIES, sizeof props, props, &props_size) !=
        CL_SUCCESS)
        props_size = 0;
    for (size_t i = 0; i < props_size / sizeof *props && props[i]; i++)
        equally = equally || props[i] == CL_DEVICE_PARTITION_EQUALLY;
    clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    clGetDeviceInfo(id, CL_DEVICE_PARTITION_MAX_SUB_DEVICES, sizeof max_sub, &max_sub, NULL);
    if (!equally)
        snprintf(why, size, "it does not support CL_DEVICE_PARTITION_EQUALLY");
    else if (units < n)
        snprintf(why, size, "it has %u compute units", (unsigned)units);
    else if (max_sub < n)
        snprintf(why, size, "it allows at most %u sub-devices", (unsigned)max_sub);
    else
        return NULL;
    return why;
}

/* Appends the n equal sub-devices of a CPU-type device in its place. *split is false, with
 * nothing appended and a warning logged, when the device cannot be split that way. Sub-devices
 * that the partition makes beyond n (compute units not a multiple of n) are released. */
static clt_status add_split(cl_platform_id platform, cl_device_id id, unsigned n,
                            clt_device ***devices, int *count, bool *split)
{
    char why[128], name[256];
    cl_uint units = 0, made = 0, i = 0;
    cl_device_id *subs = NULL;
    clt_status st = CLT_OK;
    cl_int err;

    *split = false;
    info_string(id, CL_DEVICE_NAME, name, sizeof name);
    if (unsplittable(id, n, why, sizeof why)) {
        clt__log(CLT_LOG_WARN, "CLT_SUBDEVICES=%u: OpenCL device %s stays whole: %s", n, name,
                 why);
        return CLT_OK;
    }
    clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    cl_device_partition_property props[] = {CL_DEVICE_PARTITION_EQUALLY,
                                            (cl_device_partition_property)(units / n), 0};
    err = clCreateSubDevices(id, props, 0, NULL, &made);
    if (err == CL_SUCCESS && made >= n) {
        subs = calloc(made, sizeof *subs);
        if (!subs)
            return CLT_ERR_OUT_OF_MEMORY;
        err = clCreateSubDevices(id, props, made, subs, NULL);
    }
    if (err != CL_SUCCESS || made < n) {
        clt__log(CLT_LOG_WARN, "CLT_SUBDEVICES=%u: OpenCL device %s stays whole: "
                 "clCreateSubDevices gave %s (%d), %u sub-devices", n, name,
                 clt_status_name(err), (int)err, (unsigned)made);
        free(subs);
        return CLT_OK;
    }
    clt__cl_group *group = calloc(1, sizeof *group + n * sizeof *group->ids);
    if (!group) {
        for (i = 0; i < made; i++)
            clReleaseDevice(subs[i]);
        free(subs);
        return CLT_ERR_OUT_OF_MEMORY;
    }
    pthread_mutex_init(&group->lock, NULL);
    atomic_init(&group->refs, 1); /* this function's, until the members hold it */
    group->n = n;
    memcpy(group->ids, subs, n * sizeof *subs);
    for (; i < n && st == CLT_OK; i++) {
        clt_device *dev = describe(platform, subs[i], CLT_DEVICE_CPU, i + 1, n);
        if (!dev) {
            clReleaseDevice(subs[i]);
        } else {
            atomic_fetch_add(&group->refs, 1);
            clt__cl(dev)->group = group;
        }
        st = append(devices, count, dev);
    }
    if (st != CLT_OK) /* the context is of the members listed (the first i - 1) alone */
        group->n = i - 1;
    group_release(group);
    for (; i < made; i++)
        clReleaseDevice(subs[i]);
    free(subs);
    *split = st == CLT_OK;
    return st;
}

/* Appends the devices of one platform that belong to this pass (GPU/accelerator or CPU), CPU
 * types split into `subdevices` parts when that is above 1. */
static clt_status add_platform(cl_platform_id platform, bool cpu_pass, unsigned subdevices,
                               clt_device ***devices, int *count, bool *not_cpu)
{
    cl_uint n = 0;
    cl_device_id *ids;
    clt_status st = CLT_OK;

    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &n) != CL_SUCCESS || n == 0)
        return CLT_OK; /* a platform without devices is skipped */
    ids = calloc(n, sizeof *ids);
    if (!ids || clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, ids, NULL) != CL_SUCCESS) {
        free(ids);
        return CLT_OK;
    }
    for (cl_uint i = 0; i < n && st == CLT_OK; i++) {
        cl_device_type t = 0;
        cl_bool available = CL_FALSE, compiler = CL_FALSE;
        clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof t, &t, NULL);
        clGetDeviceInfo(ids[i], CL_DEVICE_AVAILABLE, sizeof available, &available, NULL);
        clGetDeviceInfo(ids[i], CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, NULL);
        clt_device_type type = classify(t);
        char c_version[128], profile[64], name[256];
        *not_cpu |= type != CLT_DEVICE_CPU;
        const char *why = available ? "it has no compiler" : "it is unavailable";
        bool split = false;
        if ((type == CLT_DEVICE_CPU) != cpu_pass)
            continue;
        info_string(ids[i], CL_DEVICE_OPENCL_C_VERSION, c_version, sizeof c_version);
        info_string(ids[i], CL_DEVICE_PROFILE, profile, sizeof profile);
        if (!available || !compiler || !clt__cl_usable(c_version, profile, &why)) {
            info_string(ids[i], CL_DEVICE_NAME, name, sizeof name);
            clt__log(CLT_LOG_WARN, "skipping OpenCL device %s: %s", name, why);
            continue;
        }
        if (type == CLT_DEVICE_CPU && subdevices > 1)
            st = add_split(platform, ids[i], subdevices, devices, count, &split);
        if (st == CLT_OK && !split)
            st = append(devices, count, describe(platform, ids[i], type, 0, 0));
    }
    free(ids);
    return st;
}

/* The registry's device list lives as long as the process, so it is allocated outside the
 * counted allocator (and outside fault injection). */
int clt__cl_platforms_found = -1;

clt_status clt__cl_enumerate(const char *fn, unsigned subdevices, clt_device ***devices,
                             int *count)
{
    cl_uint np = 0;
    cl_platform_id *platforms;
    clt__cl_batch batch; /* the runtimes start their threads while listed */
    if (!clt__cl_load())
        return CLT_OK; /* no OpenCL library: only cpu (clt_backend_status says why) */
    clt__cl_batch_begin(&batch, true);
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    clt_status st = CLT_OK;
    bool not_cpu = false;

    clt__cl_check_vendors(); /* the loader has loaded what it could */
    clt__cl_platforms_found = err == CL_SUCCESS ? (int)np : 0;
    if (err != CL_SUCCESS || np == 0) {
        clt__cl_batch_end(&batch, false);
        if (err != CL_SUCCESS && err != CL_PLATFORM_NOT_FOUND_KHR)
            clt__log(CLT_LOG_WARN, "clGetPlatformIDs failed (%d): using cpu only", (int)err);
        return CLT_OK; /* no OpenCL at all: only cpu */
    }
    platforms = calloc(np, sizeof *platforms);
    if (!platforms) {
        clt__cl_batch_end(&batch, false);
        return clt__error(CLT_ERR_OUT_OF_MEMORY, fn, "out of host memory listing platforms");
    }
    if (clGetPlatformIDs(np, platforms, NULL) != CL_SUCCESS)
        np = 0;
    for (int pass = 0; pass < 2 && st == CLT_OK; pass++)
        for (cl_uint p = 0; p < np && st == CLT_OK; p++)
            st = add_platform(platforms[p], pass == 1, subdevices, devices, count, &not_cpu);
    free(platforms);
    clt__cl_batch_end(&batch, np > 0 && !not_cpu); /* a GPU's driver threads as they were */
    if (st != CLT_OK)
        return clt__error(st, fn, "out of host memory listing OpenCL devices");
    return CLT_OK;
}

/* ---- context and queue ------------------------------------------------------------------------ */

clt_status clt__cl_start(const char *fn, clt_device *dev)
{
    clt__cl_device *cd = clt__cl(dev);
    cl_int err = CL_SUCCESS;
    clt_status st = CLT_OK;

    if (atomic_load(&cd->started)) /* set once, never cleared */
        return CLT_OK;
    pthread_mutex_lock(&cd->lock);
    if (!cd->started) {
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)cd->platform,
                                         0};
        clt__cl_group *g = cd->group;
        clt__cl_batch batch; /* the threads a CPU device's runtime starts for its queues */
        if (dev->info.type == CLT_DEVICE_CPU)
            clt__cl_batch_begin(&batch, false);
        if (g) { /* the group's context, made by its first member to start */
            pthread_mutex_lock(&g->lock);
            if (!g->context)
                g->context = clCreateContext(props, g->n, g->ids, NULL, NULL, &err);
            if (g->context)
                clRetainContext(g->context);
            cd->context = g->context;
            pthread_mutex_unlock(&g->lock);
        } else {
            cd->context = clCreateContext(props, 1, &cd->id, NULL, NULL, &err);
        }
        if (err == CL_SUCCESS) {
            cd->queue = clCreateCommandQueue(cd->context, cd->id, 0, &err);
            if (err == CL_SUCCESS) {
                cd->copy_queue = clCreateCommandQueue(cd->context, cd->id, 0, &err);
                if (err != CL_SUCCESS)
                    clReleaseCommandQueue(cd->queue);
            }
            if (err != CL_SUCCESS)
                clReleaseContext(cd->context);
        }
        if (dev->info.type == CLT_DEVICE_CPU)
            clt__cl_batch_end(&batch, true);
        if (err == CL_SUCCESS)
            cd->started = true;
        else
            st = clt__cl_error(fn, dev, err, "creating the OpenCL context and queues");
    }
    pthread_mutex_unlock(&cd->lock);
    return st;
}

/* ---- buffers and transfers ---------------------------------------------------------------------- */

/* Drivers allocate device memory lazily, at a buffer's first use: moving the new buffer to the
 * device (on the copy queue, which holds no compute to wait for) makes running out of memory
 * show here, where the caller can free its cache and try again, not in a later kernel. */
static cl_int touch(clt_device *dev, cl_mem buf)
{
    cl_event ev = NULL;
    cl_int status = CL_COMPLETE;
    cl_int err = clEnqueueMigrateMemObjects(clt__cl(dev)->copy_queue, 1, &buf,
                                            CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 0, NULL, &ev);
    if (err != CL_SUCCESS)
        return err;
    err = clWaitForEvents(1, &ev);
    if (err == CL_SUCCESS)
        err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    clReleaseEvent(ev);
    return err != CL_SUCCESS ? err : status < 0 ? status : CL_SUCCESS;
}

atomic_uint clt__cl_mem_generation;

void clt__cl_release_mem(cl_mem buf)
{
    atomic_fetch_add(&clt__cl_mem_generation, 1);
    clReleaseMemObject(buf);
}

clt_status clt__cl_alloc(const char *fn, clt_device *dev, size_t nbytes, void **buf)
{
    cl_int err = CL_SUCCESS;
    clt_status st = clt__cl_start(fn, dev);
    *buf = NULL;
    if (st != CLT_OK)
        return st;
    if (nbytes > dev->info.max_alloc_bytes)
        return clt__error(CLT_ERR_DEVICE_OUT_OF_MEMORY, fn,
                          "%zu bytes exceed the largest allocation of %s (%llu bytes)", nbytes,
                          dev->name, (unsigned long long)dev->info.max_alloc_bytes);
    if (clt__fault_check(CLT__DEVICE))
        err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    else
        *buf = clCreateBuffer(clt__cl(dev)->context, CL_MEM_READ_WRITE, nbytes, NULL, &err);
    if (err == CL_SUCCESS && (err = touch(dev, (cl_mem)*buf)) != CL_SUCCESS)
        clt__cl_release_mem((cl_mem)*buf);
    if (err != CL_SUCCESS) {
        *buf = NULL;
        return clt__error(CLT_ERR_DEVICE_OUT_OF_MEMORY, fn,
                          "out of device memory allocating %zu bytes on %s (%s)", nbytes,
                          dev->name, clt_status_name(err));
    }
    clt__live_add(CLT__DEVICE, 1);
    return CLT_OK;
}

void clt__cl_free(clt_device *dev, void *buf)
{
    (void)dev;
    if (!buf)
        return;
    clt__cl_release_mem((cl_mem)buf);
    clt__live_add(CLT__DEVICE, -1);
}

/* Work to run once an asynchronous transfer has finished (free its staging memory, release
 * its source). Kept on the device and run when the device is synchronised or a later transfer
 * finds the event complete, rather than from an event callback, which some drivers never call. */
typedef struct clt__cl_deferred {
    struct clt__cl_deferred *_Atomic next; /* the type of the list head (cd->deferred) */
    cl_event event;
    clt__done_fn done;
    void *ctx;
} clt__cl_deferred;

void clt__cl_reap(clt_device *dev, bool wait)
{
    clt__cl_device *cd = clt__cl(dev);
    clt__cl_deferred *ready = NULL, *_Atomic *link;

    if (!atomic_load(&cd->deferred)) /* nothing waits: no lock */
        return;
    pthread_mutex_lock(&cd->lock);
    link = &cd->deferred;
    while (*link) {
        clt__cl_deferred *d = *link;
        cl_int status = CL_COMPLETE;
        if (wait)
            clWaitForEvents(1, &d->event);
        else
            clGetEventInfo(d->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                           NULL);
        if (status <= CL_COMPLETE) { /* complete, or failed: either way it is over */
            *link = d->next;
            d->next = ready;
            ready = d;
        } else {
            link = &d->next;
        }
    }
    pthread_mutex_unlock(&cd->lock);
    while (ready) {
        clt__cl_deferred *d = ready;
        ready = d->next;
        d->done(d->ctx);
        clReleaseEvent(d->event);
        clt__free(d);
    }
}

/* Prepares an asynchronous transfer before anything is queued, so that running out of memory
 * changes nothing: the record for its deferred work, when it has some. */
static clt_status begin_async(const char *fn, const clt__async *async, clt__cl_deferred **d)
{
    *d = NULL;
    if (!async || !async->event || !async->done)
        return CLT_OK;
    *d = clt__alloc(fn, sizeof **d);
    return *d ? CLT_OK : CLT_ERR_OUT_OF_MEMORY;
}

/* Finishes an enqueued asynchronous transfer: the caller gets the event; the deferred work is
 * queued on the device. */
static clt_status finish_async(clt_device *dev, cl_event ev, const clt__async *async,
                               clt__cl_deferred *d)
{
    clt__cl_device *cd = clt__cl(dev);
    clFlush(cd->queue);
    if (d) {
        *d = (clt__cl_deferred){NULL, ev, async->done, async->ctx};
        clRetainEvent(ev);
        pthread_mutex_lock(&cd->lock);
        d->next = cd->deferred;
        cd->deferred = d;
        pthread_mutex_unlock(&cd->lock);
    }
    *async->event = ev;
    return CLT_OK;
}

/* A host <-> device copy, blocking unless async asks otherwise. */
static clt_status transfer(const char *fn, clt_device *dev, bool write, void *buf, size_t offset,
                           void *host, size_t nbytes, const clt__async *async)
{
    bool blocking = !async || !async->event;
    cl_bool flag = blocking ? CL_TRUE : CL_FALSE;
    cl_command_queue q = clt__cl(dev)->queue;
    cl_event ev = NULL;
    clt__cl_deferred *call;
    cl_int err;

    clt__cl_reap(dev, false);
    if (begin_async(fn, async, &call) != CLT_OK)
        return CLT_ERR_OUT_OF_MEMORY;
    if (write)
        err = clEnqueueWriteBuffer(q, (cl_mem)buf, flag, offset, nbytes, host, 0, NULL,
                                   blocking ? NULL : &ev);
    else
        err = clEnqueueReadBuffer(q, (cl_mem)buf, flag, offset, nbytes, host, 0, NULL,
                                  blocking ? NULL : &ev);
    if (err != CL_SUCCESS) {
        clt__free(call);
        return clt__cl_error(fn, dev, err, write ? "writing to the device" : "reading from the device");
    }
    return blocking ? CLT_OK : finish_async(dev, ev, async, call);
}

clt_status clt__cl_write(const char *fn, clt_device *dev, void *buf, size_t offset,
                           const void *src, size_t nbytes, const clt__async *async)
{
    return transfer(fn, dev, true, buf, offset, (void *)src, nbytes, async);
}

clt_status clt__cl_read(const char *fn, clt_device *dev, void *buf, size_t offset, void *dst,
                          size_t nbytes, const clt__async *async)
{
    return transfer(fn, dev, false, buf, offset, dst, nbytes, async);
}

clt_status clt__cl_copy(const char *fn, clt_device *dev, void *src, size_t src_offset,
                          void *dst, size_t dst_offset, size_t nbytes)
{
    cl_int err = clEnqueueCopyBuffer(clt__cl(dev)->queue, (cl_mem)src, (cl_mem)dst, src_offset,
                                     dst_offset, nbytes, 0, NULL, NULL);
    return err == CL_SUCCESS ? CLT_OK : clt__cl_error(fn, dev, err, "copying a buffer");
}

bool clt__cl_peer(const clt_device *dev, const clt_device *to)
{
    const clt__cl_group *g = ((const clt__cl_device *)dev->impl)->group;
    return g && g == ((const clt__cl_device *)to->impl)->group && dev != to;
}

/* A marker on dev's queue and a barrier on then's waiting for it; where the barrier cannot be
 * queued, the host waits for the marker, and where the marker cannot, for dev's queue, so that
 * the order holds all the same (as far as those waits succeed). */
clt_status clt__cl_peer_order(const char *fn, clt_device *dev, clt_device *then)
{
    cl_event done = NULL;
    clt_status st = clt__cl_start(fn, dev);
    if (st == CLT_OK)
        st = clt__cl_start(fn, then);
    if (st != CLT_OK) /* (a device that cannot start has nothing queued, nor will have) */
        return st;
    cl_int err = clEnqueueMarkerWithWaitList(clt__cl(dev)->queue, 0, NULL, &done);
    if (err != CL_SUCCESS) {
        clt__cl_synchronize(fn, dev);
        return clt__cl_error(fn, dev, err, "queueing a marker for another device to wait for");
    }
    clFlush(clt__cl(dev)->queue);
    err = clEnqueueBarrierWithWaitList(clt__cl(then)->queue, 1, &done, NULL);
    if (err != CL_SUCCESS) {
        clWaitForEvents(1, &done);
        st = clt__cl_error(fn, then, err, "queueing a wait for another device");
    }
    clReleaseEvent(done);
    return st;
}

/* The device's queue, or NULL when nothing was ever queued on it. */
static cl_command_queue started_queue(clt_device *dev)
{
    clt__cl_device *cd = clt__cl(dev);
    cl_command_queue q;
    pthread_mutex_lock(&cd->lock);
    q = cd->started ? cd->queue : NULL;
    pthread_mutex_unlock(&cd->lock);
    return q;
}

clt_status clt__cl_synchronize(const char *fn, clt_device *dev)
{
    cl_command_queue q = started_queue(dev);
    cl_int err;
    if (!q)
        return CLT_OK;
    err = atomic_exchange(&clt__cl(dev)->copy_pending, false) ? clFinish(clt__cl(dev)->copy_queue)
                                                               : CL_SUCCESS;
    if (err == CL_SUCCESS)
        err = clFinish(q);
    clt__cl_reap(dev, true);
    return err == CL_SUCCESS ? CLT_OK : clt__cl_error(fn, dev, err, "waiting for the queue");
}

/* ---- pinned host memory (clt_host_buffer, the data loader's staging) and the copy queue ------ */

clt_status clt__cl_pinned_alloc(const char *fn, clt_device *dev, size_t nbytes, void **handle,
                                   void **ptr)
{
    clt__cl_device *cd = clt__cl(dev);
    cl_int err = CL_SUCCESS;
    cl_mem buf = NULL;
    clt_status st = clt__cl_start(fn, dev);
    *handle = *ptr = NULL;
    if (st != CLT_OK)
        return st;
    if (clt__fault_check(CLT__DEVICE))
        err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    else
        buf = clCreateBuffer(cd->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, nbytes, NULL,
                             &err);
    if (err == CL_SUCCESS) { /* both ways: uploads from it, reads of tensors into it */
        *ptr = clEnqueueMapBuffer(cd->copy_queue, buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                  nbytes, 0, NULL, NULL, &err);
        if (err != CL_SUCCESS)
            clt__cl_release_mem(buf);
    }
    if (err != CL_SUCCESS) {
        *ptr = NULL;
        return clt__error(CLT_ERR_DEVICE_OUT_OF_MEMORY, fn,
                          "out of memory allocating %zu bytes of page-locked staging for %s (%s)",
                          nbytes, dev->name, clt_status_name(err));
    }
    *handle = buf;
    clt__live_add(CLT__DEVICE, 1);
    return CLT_OK;
}

void clt__cl_pinned_free(clt_device *dev, void *handle, void *ptr)
{
    clt__cl_device *cd = clt__cl(dev);
    if (!handle)
        return;
    clEnqueueUnmapMemObject(cd->copy_queue, (cl_mem)handle, ptr, 0, NULL, NULL);
    clFinish(cd->copy_queue);
    clt__cl_release_mem((cl_mem)handle);
    clt__live_add(CLT__DEVICE, -1);
}

clt_status clt__cl_upload(const char *fn, clt_device *dev, void *buf, const void *ptr,
                            size_t nbytes, void **event)
{
    clt__cl_device *cd = clt__cl(dev);
    cl_event ev = NULL;
    cl_int err = clEnqueueWriteBuffer(cd->copy_queue, (cl_mem)buf, CL_FALSE, 0, nbytes, ptr, 0,
                                      NULL, &ev);
    *event = NULL;
    if (err != CL_SUCCESS)
        return clt__cl_error(fn, dev, err, "queueing a copy to the device");
    atomic_store(&cd->copy_pending, true);
    clFlush(cd->copy_queue);
    *event = ev;
    return CLT_OK;
}

clt_status clt__cl_queue_wait(const char *fn, clt_device *dev, void *event)
{
    cl_event ev = event;
    cl_int err;
    if (!ev)
        return CLT_OK;
    err = clEnqueueBarrierWithWaitList(clt__cl(dev)->queue, 1, &ev, NULL);
    return err == CL_SUCCESS ? CLT_OK : clt__cl_error(fn, dev, err, "ordering work after a copy");
}

clt_status clt__cl_marker(const char *fn, clt_device *dev, void **event)
{
    cl_command_queue q = started_queue(dev);
    cl_event ev = NULL;
    cl_int err;
    *event = NULL;
    if (!q)
        return CLT_OK;
    err = clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
    if (err != CL_SUCCESS)
        return clt__cl_error(fn, dev, err, "queueing a marker");
    clFlush(q);
    *event = ev;
    return CLT_OK;
}

clt_status clt__cl_event_wait(const char *fn, void *event)
{
    cl_event ev = event;
    cl_int status = CL_COMPLETE;
    cl_int err = clWaitForEvents(1, &ev);
    if (err == CL_SUCCESS || err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    if (err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST && status < 0)
        err = status;
    if (err != CL_SUCCESS)
        return clt__error(err, fn, "the queued work failed: %s (%d)", clt_status_name(err),
                          (int)err);
    return CLT_OK;
}

void clt__cl_event_release(void *event)
{
    if (event)
        clReleaseEvent((cl_event)event);
}

