/* The launch path of the OpenCL backend's kernels: the kernels taken from a device's programs
 * (cl_program.c) on first use, each keeping the arguments of its last launch so that a launch
 * sets only those that differ, and the launches themselves, in 1-D, in work-groups or over an
 * N-D range, all through one function that checks the arguments' count, sets them and enqueues
 * the kernel on the device's in-order queue. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cl_internal.h"
#include "cl_launch.h"
#include "core/core.h"

/* The arguments a kernel keeps from one launch to the next (by position, up to this many, each
 * up to this many bytes); the others are set at every launch. */
#define CLT__CL_KEPT_ARGS 32
#define CLT__CL_KEPT_BYTES 8

/* A kernel taken from a built program (on the program's list), with what its launches need. */
typedef struct clt__cl_kernel {
    struct clt__cl_kernel *next;
    char *name;
    cl_kernel kernel;
    size_t local_size; /* work-group size used for 1-D launches */
    size_t max_local;  /* CL_KERNEL_WORK_GROUP_SIZE (0: unknown) */
    cl_uint nargs;     /* CL_KERNEL_NUM_ARGS, which every launch's arguments are checked
                        * against (CLT__CL_NARGS_UNKNOWN when the driver does not say) */
    /* The arguments as last set: an argument keeps its value until it is set again (OpenCL
     * 1.2, clSetKernelArg), so a launch sets only those that differ. Each one's size (0: not
     * known, set it) and value, valid while clt__cl_mem_generation is still `generation`: a
     * released buffer's handle may come back for a new buffer, whose address some drivers
     * read when the argument is set, not at the launch. */
    unsigned generation;
    unsigned char kept_size[CLT__CL_KEPT_ARGS];
    uint64_t kept[CLT__CL_KEPT_ARGS]; /* (CLT__CL_KEPT_BYTES of each, zero-padded) */
} clt__cl_kernel;
#define CLT__CL_NARGS_UNKNOWN ((cl_uint)-1)

int clt__cl_run_blocked = -1;

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
    if (clGetKernelInfo(k->kernel, CL_KERNEL_NUM_ARGS, sizeof k->nargs, &k->nargs, NULL) !=
        CL_SUCCESS)
        k->nargs = CLT__CL_NARGS_UNKNOWN;
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
        /* a few items on a CPU device: a group no larger than they need, as its work-items run
         * one after another and those past n would still start */
        if (r->n < *lsize && clt__cl_serial(dev))
            for (*lsize = 1; *lsize < r->n;)
                *lsize *= 2;
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

long clt__cl_args_set(clt_device *dev)
{
    clt__cl_device *cd = clt__cl(dev);
    pthread_mutex_lock(&cd->lock);
    long n = cd->args_set;
    pthread_mutex_unlock(&cd->lock);
    return n;
}

/* Sets the kernel's arguments that differ from those it kept (every one where a buffer was
 * released since they were kept), and keeps what it set; on an error it keeps nothing. Under
 * cd's lock, which counts the arguments set. */
static cl_int set_args(clt__cl_device *cd, clt__cl_kernel *k, const clt__cl_arg *args, int nargs)
{
    unsigned generation = atomic_load(&clt__cl_mem_generation);
    cl_int err = CL_SUCCESS;
    if (k->generation != generation) {
        memset(k->kept_size, 0, sizeof k->kept_size);
        k->generation = generation;
    }
    for (int i = 0; i < nargs && err == CL_SUCCESS; i++) {
        const clt__cl_arg *a = &args[i];
        bool keep = i < CLT__CL_KEPT_ARGS && a->value && a->size <= CLT__CL_KEPT_BYTES;
        uint64_t value = 0; /* the argument's bytes, zero-padded to 8 */
        if (keep)
            memcpy(&value, a->value, a->size);
        if (keep && k->kept_size[i] == a->size && k->kept[i] == value)
            continue;
        err = clSetKernelArg(k->kernel, (cl_uint)i, a->size, a->value);
        cd->args_set++;
        if (i < CLT__CL_KEPT_ARGS)
            k->kept_size[i] = keep && err == CL_SUCCESS ? (unsigned char)a->size : 0;
        if (keep)
            k->kept[i] = value;
    }
    if (err != CL_SUCCESS)
        memset(k->kept_size, 0, sizeof k->kept_size);
    return err;
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
    st = clt__cl_program_get(fn, dev, program, options, kernel, &p);
    if (st == CLT_OK)
        st = get_kernel(fn, dev, p, kernel, &k);
    /* the one path every argument takes: checked against the kernel's own count (read once,
     * when the kernel was made), then set by position; a size that does not fit the
     * parameter's type is the driver's CL_INVALID_ARG_SIZE */
    if (st == CLT_OK && k->nargs != CLT__CL_NARGS_UNKNOWN && (cl_uint)nargs != k->nargs)
        st = clt__error(CLT_ERR_INTERNAL, fn, "kernel %s of program %s takes %u arguments; %d "
                        "were given", kernel, program, (unsigned)k->nargs, nargs);
    if (st == CLT_OK)
        err = set_args(cd, k, args, nargs);
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
