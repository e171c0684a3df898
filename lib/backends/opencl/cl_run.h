/* Launches of the kernels that loop over contiguous elements with CLT_RUN (cl/common.cl): the
 * layout (blocked on CPU-type devices) and the work-group size and count for n elements. */
#ifndef CLT_CL_RUN_H
#define CLT_CL_RUN_H

#include "cl_internal.h"

#define CLT__RUN_LOCAL 64         /* work-items a group, asked for */
#define CLT__RUN_GROUPS_PER_CU 16 /* work-groups per compute unit at most */
#define CLT__RUN_MIN_ITEM 64      /* elements a work-item takes at least */
/* The blocked layout: work-groups of one work-item, each taking this many elements at least. A
 * work-item there is a loop of its own, whose start (its run's place, the kernel's tests, the
 * vector loop's ends) PoCL took 60-100 cycles for: SGD's update of 203,000 parameters in 4
 * tensors took 65 us in 2048 work-items of 64 or more elements, 15-25 in 32 of 4096. */
#define CLT__RUN_SERIAL_MIN_ITEM 4096

/* The layout of CLT_RUN kernels: -1 (the default) blocked on devices that run a work-group's
 * work-items one after another, keeping vectors as vectors (clt__cl_serial), 0 or 1 to force it
 * on every device (the tests run both layouts under Oclgrind). */
extern int clt__cl_run_blocked;

/* The positions of the pooling kernels and col2im: -1 (the default) in int where they fit, 1
 * to force long, 0 to force int (the tests run both). */
extern int clt__cl_window_wide;

/* Whether conv2d writes its columns straight into the packed GEMM's panels where the device
 * multiplies with that variant: -1 (the default) or 1 yes, 0 no (im2col, the product and a copy;
 * the tests compare the two). */
extern int clt__cl_conv_packed;

/* Whether dev runs each work-item on its own with its vectors in vector registers (a native
 * float vector width above 1: PoCL), rather than many work-items in the lanes of one vector
 * (GPUs, and Mesa's llvmpipe, a CPU device that also stops any loop after 65535 iterations, so
 * that one work-item must never walk a long run). */
static inline bool clt__cl_serial(clt_device *dev)
{
    return clt__cl(dev)->native_float_width > 1;
}

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
