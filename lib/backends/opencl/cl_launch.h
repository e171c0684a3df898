/* Launching the OpenCL backend's kernels, the one way every kernel file runs one: a kernel of a
 * program (built on first use) with its arguments, over n work-items, over work-groups, or over
 * an N-D range; and the launches of the kernels that loop over contiguous elements with CLT_RUN
 * (cl/common.cl), with their layout (blocked on CPU-type devices) and the work-group size and
 * count for n elements. */
#ifndef CLT_CL_LAUNCH_H
#define CLT_CL_LAUNCH_H

#include "cl_internal.h"

/* One kernel argument: its size and a pointer to its value (a cl_mem, a cl_ulong, ...). The
 * launches take an array of them with its length, CLT__CL_ARGS(array) for a fixed array; the
 * count is checked against the kernel's own (CL_KERNEL_NUM_ARGS) before anything is set. */
typedef struct clt__cl_arg {
    size_t size;
    const void *value;
} clt__cl_arg;
#define CLT__CL_ARG(v) {sizeof(v), &(v)}
#define CLT__CL_ARGS(array) (array), (int)(sizeof(array) / sizeof *(array))

/* Runs kernel `kernel` of program `program` (built with `options`) over n work-items in 1-D,
 * rounded up to the work-group size; the kernel checks the bound. *event, if event is not NULL,
 * receives the launch's event. */
clt_status clt__cl_launch(const char *fn, clt_device *dev, const char *program,
                          const char *options, const char *kernel, const clt__cl_arg *args,
                          int nargs, size_t n, cl_event *event);

/* Runs kernel `kernel` over `groups` work-groups of *local work-items in 1-D (no bound to
 * check). *local, asked for, is lowered to the largest power of two that the kernel and the
 * device allow, and receives the size used. */
clt_status clt__cl_launch_groups(const char *fn, clt_device *dev, const char *program,
                                 const char *options, const char *kernel,
                                 const clt__cl_arg *args, int nargs, size_t groups, size_t *local,
                                 cl_event *event);

/* Runs kernel `kernel` over an N-D range (dims 1 to 3): global[d] work-items in dimension d,
 * in work-groups of local[d] (local NULL: the driver's choice). Nothing runs when a global size
 * is 0. */
clt_status clt__cl_launch_nd(const char *fn, clt_device *dev, const char *program,
                             const char *options, const char *kernel, const clt__cl_arg *args,
                             int nargs, int dims, const size_t *global, const size_t *local,
                             cl_event *event);

/* The kernel arguments set so far on dev (clSetKernelArg calls), for tests. */
long clt__cl_args_set(clt_device *dev);

#define CLT__RUN_LOCAL 64         /* work-items a group, asked for */
#define CLT__RUN_GROUPS_PER_CU 16 /* work-groups per compute unit at most */
#define CLT__RUN_MIN_ITEM 64      /* elements a work-item takes at least */
/* The blocked layout: work-groups of one work-item, each taking this many elements at least. A
 * work-item there is a loop of its own, whose start (its run's place, the kernel's tests, the
 * vector loop's ends) costs PoCL enough that SGD's update of 203,000 parameters in 4 tensors ran
 * several times faster in 32 work-items of 4096 elements than in 2048 of 64 (docs/performance.md,
 * Memory-bound kernels). */
#define CLT__RUN_SERIAL_MIN_ITEM 4096

/* The layout of CLT_RUN kernels: -1 (the default) blocked on devices that run a work-group's
 * work-items one after another, keeping vectors as vectors (clt__cl_serial), 0 or 1 to force it
 * on every device (the tests run both layouts under Oclgrind). */
extern int clt__cl_run_blocked;

/* The `blocked` argument of a CLT_RUN kernel on dev. */
static inline cl_int clt__cl_run_layout(clt_device *dev)
{
    if (clt__cl_run_blocked >= 0)
        return clt__cl_run_blocked;
    return clt__cl_serial(dev);
}

/* Runs kernel `kernel` (one that loops with CLT_RUN) over n elements: work-groups enough for
 * CLT__RUN_MIN_ITEM elements a work-item (blocked: one work-item of CLT__RUN_SERIAL_MIN_ITEM a
 * group), at most CLT__RUN_GROUPS_PER_CU per compute unit. */
static inline clt_status clt__cl_run(const char *fn, clt_device *dev, const char *program,
                                     const char *options, const char *kernel,
                                     const clt__cl_arg *args, int nargs, size_t n)
{
    size_t local = CLT__RUN_LOCAL, per_group = CLT__RUN_LOCAL * CLT__RUN_MIN_ITEM;
    if (clt__cl_run_layout(dev))
        local = 1, per_group = CLT__RUN_SERIAL_MIN_ITEM;
    size_t most = (size_t)(dev->info.compute_units ? dev->info.compute_units : 1) *
                  CLT__RUN_GROUPS_PER_CU;
    size_t groups = n / per_group + (n % per_group != 0);
    if (n == 0)
        return CLT_OK;
    return clt__cl_launch_groups(fn, dev, program, options, kernel, args, nargs,
                                 groups < most ? groups : most, &local, NULL);
}

#endif
