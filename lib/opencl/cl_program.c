/* Kernels compiled at load time: the sources in cl/ (embedded in the library, or read from
 * CLT_KERNEL_DIR), built per (device, program, options) the first time a device needs them (from
 * the disk cache's binary when it has one, cl_cache.c) and kept in memory with the kernels taken
 * from them; and the launch helper. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "cl_sources.h"
#include "core/core.h"

#define CLT__PRELUDE_COUNT 2 /* common.cl and scalar.cl come before every program */

clt_status clt__cl_source_text(const char *fn, const char *name, const char **text,
                               size_t *len, char **owned)
{
    const char *dir = getenv("CLT_KERNEL_DIR");
    *owned = NULL;
    if (!dir || !*dir) {
        for (size_t i = 0; i < clt__cl_source_count; i++) {
            if (strcmp(clt__cl_sources[i].name, name) == 0) {
                *text = clt__cl_sources[i].text;
                *len = clt__cl_sources[i].length;
                return CLT_OK;
            }
        }
        return clt__error(CLT_ERR_INTERNAL, fn, "no kernel source named %s.cl", name);
    }

    char path[4096];
    snprintf(path, sizeof path, "%s/%s.cl", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return clt__error(CLT_ERR_IO, fn, "cannot open %s (CLT_KERNEL_DIR)", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = size >= 0 ? clt__alloc(fn, (size_t)size + 1) : NULL;
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        clt__free(buf);
        return size < 0 || buf ? clt__error(CLT_ERR_IO, fn, "cannot read %s", path)
                               : CLT_ERR_OUT_OF_MEMORY;
    }
    fclose(f);
    buf[size] = '\0';
    *text = *owned = buf;
    *len = (size_t)size;
    return CLT_OK;
}

/* Appends the compiler's log for a failed build to the last error. */
static void append_build_log(cl_program program, cl_device_id id)
{
    char log[6144];
    size_t size = 0;
    log[0] = '\0';
    if (clGetProgramBuildInfo(program, id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &size) !=
        CL_SUCCESS) {
        /* a log longer than the buffer: take its start */
        char *all = NULL;
        if (clGetProgramBuildInfo(program, id, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) ==
                CL_SUCCESS &&
            (all = malloc(size + 1)) &&
            clGetProgramBuildInfo(program, id, CL_PROGRAM_BUILD_LOG, size, all, NULL) ==
                CL_SUCCESS) {
            all[size] = '\0';
            snprintf(log, sizeof log, "%s", all);
        }
        free(all);
    }
    log[sizeof log - 1] = '\0';
    clt__error_append("\nbuild log:\n");
    clt__error_append(log);
}

/* The sources of a program: the prelude, then what the program's own file needs first. */
static int program_sources(const char *name, const char **names)
{
    int n = 0;
    names[n++] = "common";
    names[n++] = "scalar";
    if (strcmp(name, "elementwise") == 0)
        names[n++] = "elementwise_ops";
    if (strcmp(name, "optim") == 0)
        names[n++] = "optim_step";
    else if (strcmp(name, "nn") == 0)
        names[n++] = "window";
    names[n++] = name;
    return n;
}

/* The program built from a cache entry's binary, or NULL (logged, counted as rejected) when the
 * driver refuses the binary or its build fails. */
static cl_program build_binary(clt_device *dev, const char *name, const char *options,
                               const unsigned char *binary, size_t size)
{
    clt__cl_device *cd = clt__cl(dev);
    cl_int err, status = CL_SUCCESS;
    cl_program program = clCreateProgramWithBinary(cd->context, 1, &cd->id, &size, &binary,
                                                   &status, &err);
    if (err == CL_SUCCESS && status == CL_SUCCESS)
        err = clBuildProgram(program, 1, &cd->id, options, NULL, NULL);
    else if (err == CL_SUCCESS)
        err = status;
    if (err == CL_SUCCESS)
        return program;
    if (program)
        clReleaseProgram(program);
    clt__cl_cache_note(CLT__CACHE_REJECTED);
    clt__log(CLT_LOG_WARN, "cached binary of OpenCL program '%s' refused by %s: %s (%d); "
             "building from source", name, dev->name, clt_status_name(err), (int)err);
    return NULL;
}

/* Stores a program built from source in the disk cache. */
static void store_binary(const char *fn, clt_device *dev, cl_program program, const char *key,
                         size_t key_len)
{
    size_t size = 0;
    unsigned char *binary;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
            CL_SUCCESS || size == 0 || !(binary = clt__alloc(fn, size)))
        return;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binary, &binary, NULL) == CL_SUCCESS)
        clt__cl_cache_store(fn, key, key_len, binary, size);
    else
        clt__log(CLT_LOG_WARN, "no binary of an OpenCL program from %s: not cached", dev->name);
    clt__free(binary);
}

/* Builds the program from its sources, and stores its binary under key (when not NULL). */
static clt_status build_source(const char *fn, clt_device *dev, const char *name,
                               const char *options, int count, const char **texts,
                               const size_t *lens, const char *key, size_t key_len,
                               cl_program *out)
{
    clt__cl_device *cd = clt__cl(dev);
    cl_int err;

    clt__cl_cache_note(CLT__CACHE_MISS);
    *out = clCreateProgramWithSource(cd->context, (cl_uint)count, texts, lens, &err);
    if (err != CL_SUCCESS)
        return clt__cl_error(fn, dev, err, "creating an OpenCL program");
    err = clBuildProgram(*out, 1, &cd->id, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        clt_status st = clt__error(CLT_ERR_KERNEL_BUILD, fn,
                                   "building OpenCL program '%s' (%s) for %s (%s) failed: %s (%d)",
                                   name, options, dev->name, dev->info.name,
                                   clt_status_name(err), (int)err);
        append_build_log(*out, cd->id);
        clReleaseProgram(*out);
        return st;
    }
    if (key)
        store_binary(fn, dev, *out, key, key_len);
    return CLT_OK;
}

/* Builds cl/<name>.cl for the device: from the disk cache's binary when it holds a usable one,
 * else from source (then stored there). Called with the device lock held. */
static clt_status build(const char *fn, clt_device *dev, const char *name, const char *options,
                        cl_program *out)
{
    const char *names[CLT__PRELUDE_COUNT + 2];
    const char *texts[CLT__PRELUDE_COUNT + 2];
    size_t lens[CLT__PRELUDE_COUNT + 2], key_len = 0, size = 0;
    char *owned[CLT__PRELUDE_COUNT + 2] = {NULL}, *key = NULL;
    unsigned char *binary = NULL;
    clt_status st = CLT_OK;
    int count = program_sources(name, names);

    for (int i = 0; i < count && st == CLT_OK; i++)
        st = clt__cl_source_text(fn, names[i], &texts[i], &lens[i], &owned[i]);
    if (st == CLT_OK) {
        clt__cl_cache_note(CLT__CACHE_PROGRAM);
        key = clt__cl_cache_key(fn, dev, options, count, texts, lens, &key_len);
        binary = key ? clt__cl_cache_load(fn, key, key_len, &size) : NULL;
        *out = binary ? build_binary(dev, name, options, binary, size) : NULL;
        if (*out)
            clt__cl_cache_note(CLT__CACHE_HIT);
        else
            st = build_source(fn, dev, name, options, count, texts, lens, key, key_len, out);
    }
    clt__free(binary);
    clt__free(key);
    for (int i = 0; i < count; i++)
        clt__free(owned[i]);
    return st;
}

/* The program `name` with `extra` options for the device, built on first use. Lock held. A
 * program is found by its name and extra options as given, so that a launch formats nothing. */
static clt_status get_program(const char *fn, clt_device *dev, const char *name,
                              const char *extra, clt__cl_program **out)
{
    clt__cl_device *cd = clt__cl(dev);
    char options[512];
    clt__cl_program *p;
    size_t name_size = strlen(name) + 1, extra_size;
    clt_status st;

    if (!extra)
        extra = "";
    for (clt__cl_program **link = &cd->programs; (p = *link) != NULL; link = &p->next) {
        if (strcmp(p->name, name) == 0 && strcmp(p->extra, extra) == 0) {
            *link = p->next; /* to the front: the next launch likely needs it again */
            p->next = cd->programs;
            cd->programs = p;
            *out = p;
            return CLT_OK;
        }
    }
    snprintf(options, sizeof options, "-cl-std=CL1.2 -DCLT_HAS_FP64=%d%s%s",
             dev->info.fp64 ? 1 : 0, *extra ? " " : "", extra);
    extra_size = strlen(extra) + 1;
    p = clt__alloc_zeroed(fn, sizeof *p);
    if (!p || !(p->name = clt__alloc(fn, name_size + extra_size))) {
        clt__free(p);
        return CLT_ERR_OUT_OF_MEMORY;
    }
    p->extra = p->name + name_size; /* one block: name, then the extra options */
    memcpy(p->name, name, name_size);
    memcpy(p->extra, extra, extra_size);
    st = build(fn, dev, name, options, &p->program);
    if (st != CLT_OK) {
        clt__free(p->name);
        clt__free(p);
        return st;
    }
    clt__log(CLT_LOG_INFO, "built OpenCL program '%s' for %s", name, dev->name);
    clt__live_add(CLT__HOST, -2); /* cached for the life of the process: not counted as live */
    p->next = cd->programs;
    cd->programs = p;
    *out = p;
    return CLT_OK;
}

/* A kernel of a built program, created on first use. Lock held. */
static clt_status get_kernel(const char *fn, clt_device *dev, clt__cl_program *p,
                             const char *name, clt__cl_kernel **out)
{
    clt__cl_kernel *k;
    cl_int err;
    size_t wg = 0;

    for (clt__cl_kernel **link = &p->kernels; (k = *link) != NULL; link = &k->next) {
        if (strcmp(k->name, name) == 0) {
            *link = k->next; /* to the front, as programs */
            k->next = p->kernels;
            p->kernels = k;
            *out = k;
            return CLT_OK;
        }
    }
    k = clt__alloc_zeroed(fn, sizeof *k);
    if (!k || !(k->name = clt__strdup(fn, name))) {
        clt__free(k);
        return CLT_ERR_OUT_OF_MEMORY;
    }
    k->kernel = clCreateKernel(p->program, name, &err);
    if (err != CL_SUCCESS) {
        clt__free(k->name);
        clt__free(k);
        return clt__error(err, fn, "kernel %s not found in a program built for %s: %s", name,
                          dev->name, clt_status_name(err));
    }
    clGetKernelWorkGroupInfo(k->kernel, clt__cl(dev)->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg,
                             &wg, NULL);
    k->max_local = wg;
    k->local_size = 64;
    while (k->local_size > 1 && wg && k->local_size > wg)
        k->local_size /= 2;
    clt__live_add(CLT__HOST, -2); /* cached for the life of the process: not counted as live */
    k->next = p->kernels;
    p->kernels = k;
    *out = k;
    return CLT_OK;
}

/* How a launch covers its work: `n` work-items rounded up to the kernel's 1-D work-group size
 * (groups 0, dims 0); `groups` work-groups of *local work-items (dims 0); or, with dims > 0, the
 * global and local sizes as given (local NULL: the driver's choice). */
typedef struct range {
    size_t n, groups, *local;
    cl_uint dims;
    const size_t *global_nd, *local_nd;
} range;

/* The global and local sizes of a 1-D launch. */
static clt_status one_dim(const char *fn, clt_device *dev, const clt__cl_kernel *k,
                          const range *r, size_t *global, size_t *lsize)
{
    *lsize = k->local_size;
    if (r->groups == 0) {
        *global = (r->n + *lsize - 1) / *lsize * *lsize;
        return CLT_OK;
    }
    size_t cap = dev->info.max_work_group_size;
    if (k->max_local && k->max_local < cap)
        cap = k->max_local;
    for (*lsize = 1; *lsize * 2 <= *r->local && *lsize * 2 <= cap;)
        *lsize *= 2;
    *r->local = *lsize;
    if (!clt__mul_size(r->groups, *lsize, global))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "%zu work-groups of %zu work-items are too many for %s", r->groups,
                          *lsize, dev->name);
    return CLT_OK;
}

/* Sets the arguments and enqueues the kernel over the range. */
static clt_status enqueue(const char *fn, clt_device *dev, const char *program,
                          const char *options, const char *kernel, const clt__cl_arg *args,
                          int nargs, const range *r, cl_event *event)
{
    clt__cl_device *cd = clt__cl(dev);
    clt__cl_program *p = NULL;
    clt__cl_kernel *k = NULL;
    clt_status st = clt__cl_start(fn, dev);
    cl_int err = CL_SUCCESS;

    if (st != CLT_OK || (r->dims == 0 && r->groups == 0 && r->n == 0))
        return st;
    clt__cl_reap(dev, false);
    pthread_mutex_lock(&cd->lock);
    st = get_program(fn, dev, program, options, &p);
    if (st == CLT_OK)
        st = get_kernel(fn, dev, p, kernel, &k);
    for (int i = 0; st == CLT_OK && i < nargs && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k->kernel, (cl_uint)i, args[i].size, args[i].value);
    if (st == CLT_OK && err == CL_SUCCESS) {
        size_t global = 0, lsize = 0;
        if (r->dims > 0)
            err = clEnqueueNDRangeKernel(cd->queue, k->kernel, r->dims, NULL, r->global_nd,
                                         r->local_nd, 0, NULL, event);
        else if ((st = one_dim(fn, dev, k, r, &global, &lsize)) == CLT_OK)
            err = clEnqueueNDRangeKernel(cd->queue, k->kernel, 1, NULL, &global, &lsize, 0, NULL,
                                         event);
    }
    pthread_mutex_unlock(&cd->lock);
    if (st == CLT_OK && err != CL_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "launching kernel %s", kernel);
        st = clt__cl_error(fn, dev, err, what);
    }
    return st;
}

clt_status clt__cl_launch(const char *fn, clt_device *dev, const char *program,
                          const char *options, const char *kernel, const clt__cl_arg *args,
                          int nargs, size_t n, cl_event *event)
{
    return enqueue(fn, dev, program, options, kernel, args, nargs, &(range){.n = n}, event);
}

clt_status clt__cl_launch_groups(const char *fn, clt_device *dev, const char *program,
                                 const char *options, const char *kernel,
                                 const clt__cl_arg *args, int nargs, size_t groups, size_t *local,
                                 cl_event *event)
{
    return enqueue(fn, dev, program, options, kernel, args, nargs,
                   &(range){.groups = groups, .local = local}, event);
}

clt_status clt__cl_launch_nd(const char *fn, clt_device *dev, const char *program,
                             const char *options, const char *kernel, const clt__cl_arg *args,
                             int nargs, int dims, const size_t *global, const size_t *local,
                             cl_event *event)
{
    for (int d = 0; d < dims; d++)
        if (global[d] == 0)
            return CLT_OK;
    return enqueue(fn, dev, program, options, kernel, args, nargs,
                   &(range){.dims = (cl_uint)dims, .global_nd = global, .local_nd = local}, event);
}

clt_status clt__cl_build_all(const char *fn, clt_device *dev)
{
    static const char *const plain[] = {"cast", "random"};
    static const struct {
        const char *name;
        bool floats_only; /* used for f32 and f64 tensors only */
    } typed[] = {{"elementwise", false}, {"reduce", false}, {"nn", false}, {"optim", true}};
    clt__cl_device *cd = clt__cl(dev);
    clt__cl_program *p;
    clt_status st = clt__cl_start(fn, dev);

    if (st != CLT_OK)
        return st;
    pthread_mutex_lock(&cd->lock);
    for (size_t i = 0; i < sizeof plain / sizeof *plain && st == CLT_OK; i++)
        st = get_program(fn, dev, plain[i], NULL, &p);
    for (size_t i = 0; i < sizeof typed / sizeof *typed && st == CLT_OK; i++) {
        for (int d = CLT_F32; d < CLT_DTYPE_COUNT && st == CLT_OK; d++) {
            if ((d == CLT_F64 && !dev->info.fp64) ||
                (typed[i].floats_only && d != CLT_F32 && d != CLT_F64))
                continue;
            st = get_program(fn, dev, typed[i].name, clt__cl_dtype_options((clt_dtype)d), &p);
        }
    }
    pthread_mutex_unlock(&cd->lock);
    return st;
}
