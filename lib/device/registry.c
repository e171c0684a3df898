/* The device registry: builds the list `cpu`, `gpu:0` ... once, from every backend's devices
 * (lib/backends/backends.c) selected by CLT_VISIBLE_DEVICES, resolves device names, keeps each
 * thread's current GPU, which clt_device_guard sets for a scope, and answers for the backends'
 * disk caches. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"
#include "registry.h"

static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
static clt_status registry_status;
static char registry_error[2048];
static clt_device cpu_device;
static clt_device **all_devices; /* every OpenCL device found (sub-devices in place of their
                                  * parents), in enumeration order */
static int all_count;
static clt_device **gpus; /* the visible ones: gpus[N] is gpu:N */
static int gpu_count;
static _Thread_local clt_device *current_gpu;

/* Appends "I (name), ..." for the devices to buf. */
static void list_devices(char *buf, size_t size, clt_device **devs, int n, bool gpu_names)
{
    size_t used = strlen(buf);
    for (int i = 0; i < n && used + 1 < size; i++) {
        snprintf(buf + used, size - used, "%s%s%d (%s)", i ? ", " : "", gpu_names ? "gpu:" : "",
                 i, devs[i]->info.name);
        used = strlen(buf);
    }
}

static bool contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return false;
}

/* A bad environment variable, raised at every device call: the message names the variable and
 * its value and says what is wrong, each cut to 200 characters. */
static clt_status env_error(const char *var, const char *value, const char *what)
{
    snprintf(registry_error, sizeof registry_error, "%s=\"%.200s%s\": %.200s", var, value,
             strlen(value) > 200 ? "..." : "", what);
    return CLT_ERR_ENVIRONMENT;
}

clt_status clt__visible_parse(const char *value, const char *const *names, int count, int *order,
                              int *chosen, char *why, size_t why_size)
{
    char token[256];
    bool *taken = calloc((size_t)count + 1, sizeof *taken);
    const char *p = value;
    clt_status st = CLT_OK;

    *chosen = 0;
    why[0] = '\0';
    if (!taken) {
        snprintf(why, why_size, "out of host memory reading it");
        return CLT_ERR_OUT_OF_MEMORY;
    }
    while (*value && st == CLT_OK) {
        size_t len = strcspn(p, ",");
        const char *start = p;
        while (len && isspace((unsigned char)*start)) {
            start++;
            len--;
        }
        while (len && isspace((unsigned char)start[len - 1]))
            len--;
        if (len == 0 || len >= sizeof token) {
            snprintf(why, why_size, "an entry is empty or too long");
            st = CLT_ERR_ENVIRONMENT;
            break;
        }
        memcpy(token, start, len);
        token[len] = '\0';
        if (strspn(token, "0123456789") == len) {
            errno = 0;
            long idx = strtol(token, NULL, 10);
            if (errno || idx >= count)
                snprintf(why, why_size, "index %s is out of range", token), st = CLT_ERR_ENVIRONMENT;
            else if (taken[idx])
                snprintf(why, why_size, "device %s is named twice", token), st = CLT_ERR_ENVIRONMENT;
            else {
                taken[idx] = true;
                order[(*chosen)++] = (int)idx;
            }
        } else {
            bool found = false;
            for (int i = 0; i < count; i++) {
                if (!taken[i] && contains_ci(names[i], token)) {
                    taken[i] = found = true;
                    order[(*chosen)++] = i;
                }
            }
            if (!found) {
                snprintf(why, why_size, "no other device's name contains \"%.200s\"", token);
                st = CLT_ERR_ENVIRONMENT;
            }
        }
        p += strcspn(p, ",");
        if (*p == ',')
            p++;
        else
            break;
    }
    free(taken);
    if (st != CLT_OK)
        *chosen = 0;
    return st;
}

/* CLT_VISIBLE_DEVICES applied to the enumerated devices: the gpu:N list. */
static clt_status apply_visible(const char *value)
{
    const char **names = calloc((size_t)all_count + 1, sizeof *names);
    int *order = calloc((size_t)all_count + 1, sizeof *order);
    char why[512];
    clt_status st = CLT_ERR_OUT_OF_MEMORY;

    gpu_count = 0;
    if (names && order) {
        for (int i = 0; i < all_count; i++)
            names[i] = all_devices[i]->info.name;
        st = clt__visible_parse(value, names, all_count, order, &gpu_count, why, sizeof why);
    } else {
        snprintf(why, sizeof why, "out of host memory reading it");
    }
    if (st == CLT_OK) {
        for (int i = 0; i < gpu_count; i++)
            gpus[i] = all_devices[order[i]];
    } else {
        size_t used;
        env_error("CLT_VISIBLE_DEVICES", value, why);
        used = strlen(registry_error);
        snprintf(registry_error + used, sizeof registry_error - used,
                 "; the OpenCL devices are %s", all_count ? "" : "none");
        list_devices(registry_error, sizeof registry_error, all_devices, all_count, false);
    }
    free(names);
    free(order);
    return st == CLT_ERR_OUT_OF_MEMORY ? st : st != CLT_OK ? CLT_ERR_ENVIRONMENT : CLT_OK;
}

static const char enumerate_fn[] = "clt_device";

/* A failed step of building the list as the registry's own error: the last error's message
 * without the step's name (each device call raises it under its own). */
static clt_status registry_failed(clt_status st)
{
    const char *message = clt_last_error();
    size_t n = strlen(enumerate_fn);
    if (strncmp(message, enumerate_fn, n) == 0 && strncmp(message + n, ": ", 2) == 0)
        message += n + 2;
    snprintf(registry_error, sizeof registry_error, "%s", message);
    return st;
}

/* Every backend's devices, in the order of clt__backends, each device's table checked for its
 * required entries. */
static clt_status enumerate_all(void)
{
    clt_status st = CLT_OK;
    for (const clt__backend_registry *const *b = clt__backends; *b && st == CLT_OK; b++) {
        int first = all_count;
        st = (*b)->enumerate(enumerate_fn, &all_devices, &all_count);
        for (int i = first; i < all_count; i++)
            all_devices[i]->registry = *b;
    }
    for (int i = 0; i < all_count && st == CLT_OK; i++)
        st = clt__backend_check(enumerate_fn, all_devices[i]->backend);
    return st == CLT_OK ? CLT_OK : registry_failed(st);
}

static void registry_init(void)
{
    const char *visible = getenv("CLT_VISIBLE_DEVICES");

    cpu_device.index = -1;
    snprintf(cpu_device.name, sizeof cpu_device.name, "cpu");
    cpu_device.backend = &clt__host_backend;
    registry_status = clt__host_describe(&cpu_device);
    if (registry_status != CLT_OK) {
        snprintf(registry_error, sizeof registry_error, "%s", clt_last_error());
        return;
    }
    registry_status = enumerate_all();
    if (registry_status != CLT_OK)
        return;
    gpus = calloc((size_t)all_count + 1, sizeof *gpus);
    if (!gpus) {
        registry_status = CLT_ERR_OUT_OF_MEMORY;
        snprintf(registry_error, sizeof registry_error, "out of host memory listing devices");
        return;
    }
    if (visible) {
        registry_status = apply_visible(visible);
    } else {
        for (int i = 0; i < all_count; i++)
            gpus[i] = all_devices[i];
        gpu_count = all_count;
    }
    for (int i = 0; i < gpu_count; i++) {
        gpus[i]->index = i;
        snprintf(gpus[i]->name, sizeof gpus[i]->name, "gpu:%d", i);
    }
    if (registry_status != CLT_OK)
        gpu_count = 0;
}

/* CLT_OK once the list exists; otherwise the error of building it, re-raised under fn. */
static clt_status registry_ready(const char *fn)
{
    pthread_once(&registry_once, registry_init);
    if (registry_status != CLT_OK)
        return clt__error(registry_status, fn, "%s", registry_error);
    return CLT_OK;
}

int clt_device_count(void)
{
    clt_status st = registry_ready("clt_device_count");
    return st != CLT_OK ? st : gpu_count;
}

const char *clt_backend_status(const char *backend)
{
    static const char *const fn = "clt_backend_status";
    char names[256] = "host";
    if (!backend)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "backend is NULL"), NULL;
    pthread_once(&registry_once, registry_init); /* the backends have tried to load */
    if (strcmp(backend, "host") == 0)
        return "built in";
    for (const clt__backend_registry *const *b = clt__backends; *b; b++) {
        if (strcmp(backend, (*b)->name) == 0)
            return (*b)->status ? (*b)->status() : "built in";
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, ", %s", (*b)->name);
    }
    clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "no backend named \"%.64s\" is built into the "
               "library (it has %s)", backend, names);
    return NULL;
}

clt_device *clt_device_cpu(void)
{
    return registry_ready("clt_device_cpu") == CLT_OK ? &cpu_device : NULL;
}

clt_device *clt_device_default(void)
{
    static const char *const fn = "clt_device_default";
    const char *env = getenv("CLT_DEVICE");
    if (registry_ready(fn) != CLT_OK)
        return NULL;
    if (env && *env) {
        clt_device *dev = clt_device_get(env);
        if (!dev) {
            char context[512];
            snprintf(context, sizeof context, "CLT_DEVICE=%s", env);
            clt__rename_error_in(fn, context);
        }
        return dev;
    }
    /* An OpenCL implementation running on the host CPU is no GPU: the native cpu is faster. */
    for (int i = 0; i < gpu_count; i++)
        if (gpus[i]->info.type == CLT_DEVICE_GPU || gpus[i]->info.type == CLT_DEVICE_ACCELERATOR)
            return gpus[i];
    return &cpu_device;
}

/* This thread's current GPU once the list exists; NULL when there is no OpenCL device. */
static clt_device *current_or_first(void)
{
    return current_gpu ? current_gpu : gpu_count ? gpus[0] : NULL;
}

clt_device *clt_device_current(void)
{
    if (registry_ready("clt_device_current") != CLT_OK)
        return NULL;
    if (!current_or_first())
        clt__error(CLT_ERR_NO_DEVICE, "clt_device_current",
                   "no GPU: this machine has only cpu (no OpenCL device)");
    return current_or_first();
}

clt_device *clt__device_or_cpu(const char *fn, clt_device *dev)
{
    if (dev)
        return dev;
    if (registry_ready(fn) != CLT_OK)
        return NULL;
    return &cpu_device;
}

/* Makes dev this thread's current GPU after checking that it is one of gpu:0 ... gpu:N-1. */
static clt_status set_current(const char *fn, clt_device *dev)
{
    clt_status st = clt__device_check(fn, dev);
    if (st == CLT_OK)
        st = registry_ready(fn);
    if (st != CLT_OK)
        return st;
    if (dev == &cpu_device)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "cpu is not a GPU; the current GPU is one of gpu:0 ... gpu:N-1");
    for (int i = 0; i < gpu_count; i++) {
        if (gpus[i] == dev) {
            current_gpu = dev;
            return CLT_OK;
        }
    }
    return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                      "%p is not a device of this library (from clt_device_get)", (void *)dev);
}

clt_status clt_device_set_current(clt_device *dev)
{
    return set_current("clt_device_set_current", dev);
}

/* The guard remembers the resolved previous device (gpu:0 when none was set), which names the
 * same GPU as "unset" for the whole life of the process. */
clt_status clt_device_guard_push(clt_device_guard *g, clt_device *dev)
{
    static const char *const fn = "clt_device_guard_push";
    clt_device *previous = current_gpu;
    clt_status st;
    if (!g)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "guard is NULL");
    *g = (clt_device_guard){NULL, false};
    st = set_current(fn, dev);
    if (st != CLT_OK)
        return st;
    g->previous = previous ? previous : gpus[0]; /* dev is one of gpus[], so gpus[0] exists */
    g->active = true;
    return CLT_OK;
}

void clt_device_guard_pop(clt_device_guard *g)
{
    if (!g || !g->active)
        return;
    current_gpu = g->previous;
    g->active = false;
}

static clt_device *unknown_name(const char *fn, const char *name, const char *why)
{
    char valid[1024] = "";
    list_devices(valid, sizeof valid, gpus, gpu_count, true);
    clt__error(CLT_ERR_NO_DEVICE, fn, "%s: %s; the valid names are cpu%s%s", name, why,
               gpu_count ? ", gpu, " : " (this machine has no OpenCL device)", valid);
    return NULL;
}

clt_device *clt_device_get(const char *name)
{
    static const char *const fn = "clt_device_get";
    if (!name) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "name is NULL");
        return NULL;
    }
    if (registry_ready(fn) != CLT_OK)
        return NULL;
    int idx = clt__device_name_parse(name, gpu_count);
    switch (idx) {
    case CLT__NAME_CPU: return &cpu_device;
    case CLT__NAME_GPU: return current_or_first();
    case CLT__NAME_NO_DEVICE: return unknown_name(fn, name, "no such device");
    case CLT__NAME_INVALID: return unknown_name(fn, name, "not a device name");
    default: return gpus[idx];
    }
}

int clt__device_name_parse(const char *name, int gpu_count)
{
    if (strcmp(name, "cpu") == 0)
        return CLT__NAME_CPU;
    if (strcmp(name, "gpu") == 0)
        return gpu_count ? CLT__NAME_GPU : CLT__NAME_NO_DEVICE;
    if (strncmp(name, "gpu:", 4) == 0) {
        const char *digits = name + 4;
        size_t n = strlen(digits);
        if (n == 0 || n > 6 || strspn(digits, "0123456789") != n || (digits[0] == '0' && n > 1))
            return CLT__NAME_INVALID;
        long idx = strtol(digits, NULL, 10);
        return idx < gpu_count ? (int)idx : CLT__NAME_NO_DEVICE;
    }
    return CLT__NAME_INVALID;
}

const char *clt_device_name(const clt_device *dev)
{
    return dev ? dev->name : "(null)";
}

const clt_device_info *clt_device_get_info(const clt_device *dev)
{
    return dev ? &dev->info : NULL;
}

clt_status clt_device_synchronize(clt_device *dev)
{
    clt_status st = clt__device_check("clt_device_synchronize", dev);
    return st != CLT_OK ? st : dev->backend->synchronize("clt_device_synchronize", dev);
}

clt_status clt__device_check(const char *fn, const clt_device *dev)
{
    if (!dev)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "device is NULL");
    return CLT_OK;
}

clt_status clt__device_dtype_check(const char *fn, const clt_device *dev, clt_dtype dtype)
{
    clt_status st = clt__device_check(fn, dev);
    if (st != CLT_OK)
        return st;
    if (dtype <= CLT_DTYPE_NONE || dtype >= CLT_DTYPE_COUNT)
        return clt__error(CLT_ERR_DTYPE, fn, "invalid dtype %d", (int)dtype);
    if (dtype == CLT_F64 && !dev->info.fp64)
        return clt__error(CLT_ERR_UNSUPPORTED, fn,
                          "f64 is not supported on %s (%s): the device has no fp64", dev->name,
                          dev->info.name);
    return CLT_OK;
}

clt_status clt_cache_get_info(clt_cache_info *info)
{
    if (!info)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_cache_get_info", "info is NULL");
    for (const clt__backend_registry *const *b = clt__backends; *b; b++)
        if ((*b)->cache_info)
            return (*b)->cache_info(info);
    *info = (clt_cache_info){.enabled = false, .dir = ""};
    return CLT_OK;
}
