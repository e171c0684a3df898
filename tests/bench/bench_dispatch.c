/* Dispatch benchmark: what the library adds to a kernel launch. On every OpenCL device, the time
 * to queue clt_add of two 16-element f32 tensors (the result made and released; the device
 * finished once per batch of calls) against the same add queued as a raw OpenCL kernel on the
 * same queue: a kernel with the arguments of the library's contiguous add (four buffers and
 * offsets, the count, the layout flag, two scalars: twelve clSetKernelArg) and its loop, and one
 * clEnqueueNDRangeKernel, on buffers made beforehand; the difference is the library's cost. Also a
 * call finished before the next (launch and finish), and on cpu the whole call. The library's and
 * the raw batches alternate, so that both see the same phases of a shared machine; the overhead
 * is the median of the rounds' differences. Prints one JSON line per case: medians of batches. */
#include <stdio.h>
#include <stdlib.h>

#include <cltensor.h>
#include <cltensor/opencl.h>

#include "bench_util.h"

#define BATCH 1000
#define ROUNDS 21

static const char *raw_source =
    "__kernel void add(__global float *c, ulong co, __global const float *a, ulong ao,\n"
    "                  __global const float *b, ulong bo, __global const float *z, ulong zo,\n"
    "                  ulong n, int blocked, float s0, float s1)\n"
    "{\n"
    "    ulong g = get_global_id(0), gs = get_global_size(0);\n"
    "    ulong per = ((n + gs - 1) / gs + 15) & ~(ulong)15, b0 = min(g * per, n);\n"
    "    for (ulong i = b0; i < min(b0 + per, n); i++)\n"
    "        c[co + i] = a[ao + i] + b[bo + i];\n"
    "}\n";

static void fail(const char *what)
{
    fprintf(stderr, "bench_dispatch: %s: %s\n", what, clt_last_error());
    exit(1);
}

/* Seconds per clt_add, over one batch of calls queued back to back (finish: after every call). */
static double batch_ours(clt_device *dev, clt_tensor *a, bool finish)
{
    int calls = finish ? BATCH / 10 : BATCH;
    double t0 = now_s();
    for (int i = 0; i < calls; i++) {
        clt_tensor *c = clt_add(a, a);
        if (!c)
            fail("clt_add");
        clt_tensor_release(c);
        if (finish)
            clt_device_synchronize(dev);
    }
    clt_device_synchronize(dev);
    return (now_s() - t0) / calls;
}

/* The median of ROUNDS batches of clt_add on cpu. */
static double time_ours(clt_device *dev, clt_tensor *a)
{
    double t[ROUNDS];
    for (int r = -1; r < ROUNDS; r++) {
        double x = batch_ours(dev, a, false);
        if (r >= 0)
            t[r] = x;
    }
    return median(t, ROUNDS);
}

/* The same batch with the raw kernel on the library's queue. */
static double batch_raw(cl_command_queue q, cl_kernel k, cl_mem a, cl_mem c, bool finish)
{
    int calls = finish ? BATCH / 10 : BATCH;
    cl_ulong n = 16, off = 0;
    cl_int blocked = 1;
    cl_float s = 0;
    size_t global = 64, local = 64;
    const struct {
        size_t size;
        const void *value;
    } args[] = {{sizeof c, &c},   {sizeof off, &off}, {sizeof a, &a},       {sizeof off, &off},
                {sizeof a, &a},   {sizeof off, &off}, {sizeof a, &a},       {sizeof off, &off},
                {sizeof n, &n},   {sizeof blocked, &blocked}, {sizeof s, &s}, {sizeof s, &s}};
    double t0 = now_s();
    for (int i = 0; i < calls; i++) {
        for (cl_uint j = 0; j < sizeof args / sizeof *args; j++) /* every argument, every call */
            clSetKernelArg(k, j, args[j].size, args[j].value);
        if (clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL) != CL_SUCCESS) {
            fprintf(stderr, "bench_dispatch: clEnqueueNDRangeKernel failed\n");
            exit(1);
        }
        if (finish)
            clFinish(q);
    }
    clFinish(q);
    return (now_s() - t0) / calls;
}

/* ROUNDS rounds of a raw batch then one of the library's: the medians of each into *ours and
 * *raw, and the median of the rounds' differences (the library's cost) returned. */
static double time_pair(clt_device *dev, clt_tensor *ta, cl_command_queue q, cl_kernel k,
                        cl_mem a, cl_mem c, bool finish, double *ours, double *raw)
{
    double to[ROUNDS], tr[ROUNDS], d[ROUNDS];
    for (int r = -1; r < ROUNDS; r++) {
        double x = batch_raw(q, k, a, c, finish), y = batch_ours(dev, ta, finish);
        if (r < 0)
            continue;
        tr[r] = x, to[r] = y, d[r] = y - x;
    }
    *ours = median(to, ROUNDS), *raw = median(tr, ROUNDS);
    return median(d, ROUNDS);
}

/* One case's line; overhead is the library's cost where there is a reference. */
static void print(const char *name, const char *dev, double t, const char *ref, double t_ref,
                  double overhead)
{
    printf("{\"name\": \"%s\", \"device\": \"%s\", \"time_us\": %.3f", name, dev, t * 1e6);
    if (ref)
        printf(", \"reference\": \"%s\", \"reference_time_us\": %.3f, \"overhead_us\": %.3f, "
               "\"ratio_to_reference\": %.3f", ref, t_ref * 1e6, overhead * 1e6, t / t_ref);
    printf("}\n");
    fflush(stdout);
}

int main(void)
{
    clt_tensor *h = clt_tensor_ones(CLT_SHAPE(16), CLT_F32, clt_device_cpu());
    if (!h)
        fail("clt_tensor_ones");
    print("add 16 elements, whole call", "cpu", time_ours(clt_device_cpu(), h), NULL, 0, 0);
    clt_tensor_release(h);

    for (int d = 0; d < clt_device_count(); d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", d);
        clt_device *dev = clt_device_get(name);
        clt_tensor *a = dev ? clt_tensor_ones(CLT_SHAPE(16), CLT_F32, dev) : NULL;
        clt_tensor *c = a ? clt_tensor_empty(CLT_SHAPE(16), CLT_F32, dev) : NULL;
        if (!c || clt_device_synchronize(dev) != CLT_OK)
            fail(name);
        cl_context ctx = clt_device_cl_context(dev, false);
        cl_command_queue q = clt_device_cl_queue(dev, false);
        cl_device_id id = clt_device_cl_device(dev);
        cl_int err;
        cl_program p = clCreateProgramWithSource(ctx, 1, &raw_source, NULL, &err);
        if (err != CL_SUCCESS || clBuildProgram(p, 1, &id, "-cl-std=CL1.2", NULL, NULL))
            fail("building the raw kernel");
        cl_kernel k = clCreateKernel(p, "add", &err);
        if (err != CL_SUCCESS)
            fail("clCreateKernel");
        cl_mem ma = clt_tensor_cl_mem(a, false), mc = clt_tensor_cl_mem(c, false);
        double ours, raw, extra = time_pair(dev, a, q, k, ma, mc, false, &ours, &raw);
        print("add 16 elements, queued", name, ours, "raw clEnqueueNDRangeKernel", raw, extra);
        extra = time_pair(dev, a, q, k, ma, mc, true, &ours, &raw);
        print("add 16 elements, launch and finish", name, ours,
              "raw clEnqueueNDRangeKernel + clFinish", raw, extra);
        clReleaseKernel(k);
        clReleaseProgram(p);
        clt_tensor_release(c), clt_tensor_release(a);
    }
    return 0;
}
