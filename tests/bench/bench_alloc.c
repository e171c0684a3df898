/* The caching allocator's round trip: a tensor made and released (clt_tensor_empty, then
 * clt_tensor_release) against the memory it would otherwise get from the system each time,
 * measured in the same run: posix_memalign and free on cpu, clCreateBuffer touched on the
 * device (as the allocator does with new memory) and clReleaseMemObject on an OpenCL device.
 * One JSON line per device and size; medians of 7 runs of 200 round trips. */
#include <stdio.h>
#include <stdlib.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <cltensor.h>
#include <cltensor/opencl.h>

#include "bench_util.h"

enum { TRIPS = 200, RUNS = 7 };

static double cached(clt_device *dev, size_t bytes)
{
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_s();
        for (int i = 0; i < TRIPS; i++)
            clt_tensor_release(clt_tensor_empty(CLT_SHAPE((int64_t)bytes), CLT_U8, dev));
        t[r] = (now_s() - t0) / TRIPS;
    }
    return median(t, RUNS);
}

static double system_memory(clt_device *dev, size_t bytes)
{
    double t[RUNS];
    cl_context ctx = clt_device_get_info(dev)->type == CLT_DEVICE_HOST ? NULL : clt_device_cl_context(dev, false);
    cl_command_queue q = ctx ? clt_device_cl_queue(dev, false) : NULL;
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_s();
        for (int i = 0; i < TRIPS; i++) {
            if (!ctx) {
                void *p = NULL;
                if (posix_memalign(&p, 64, bytes) != 0)
                    return -1;
                ((volatile char *)p)[0] = 0;
                free(p);
                continue;
            }
            cl_int err;
            cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
            cl_event ev;
            if (err != CL_SUCCESS)
                return -1;
            clEnqueueMigrateMemObjects(q, 1, &m, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 0, NULL, &ev);
            clWaitForEvents(1, &ev);
            clReleaseEvent(ev);
            clReleaseMemObject(m);
        }
        t[r] = (now_s() - t0) / TRIPS;
    }
    return median(t, RUNS);
}

int main(void)
{
    const size_t sizes[3] = {4096, 1 << 20, 64 << 20};
    int n = clt_device_count();
    for (int d = -1; d < (n > 0 ? n : 0); d++) {
        char name[16];
        snprintf(name, sizeof name, d < 0 ? "cpu" : "gpu:%d", d);
        clt_device *dev = clt_device_get(name);
        for (int k = 0; k < 3; k++) {
            double c = cached(dev, sizes[k]), s = system_memory(dev, sizes[k]);
            printf("{\"name\": \"alloc+free round trip\", \"device\": \"%s\", \"bytes\": %zu, "
                   "\"cached_us\": %.3f, \"reference\": \"%s\", \"reference_us\": %.3f, "
                   "\"ratio_to_reference\": %.3f}\n",
                   name, sizes[k], c * 1e6, d < 0 ? "posix_memalign+free" : "clCreateBuffer+migrate+clReleaseMemObject",
                   s * 1e6, c / s);
        }
        clt_device_synchronize(dev);
    }
    return 0;
}
