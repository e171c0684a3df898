/* Transfer and cast benchmark: clt_tensor_to between cpu and gpu:0 against the same copy made
 * with OpenCL directly (its own context and queue) and against memcpy, and an f32 -> f16 cast on
 * gpu:0 against a device copy of the same bytes, at 4 KiB, 1, 64 and 256 MiB. Prints one JSON line per case with medians of
 * repeated runs after a warm-up, and the ratios. Not run by ctest. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor.h>

#include "bench_util.h"

#define REPEATS 15

/* Raw OpenCL on the first device of the platform whose device is gpu:0's. */
typedef struct raw_cl {
    cl_context ctx;
    cl_command_queue q;
    cl_mem buf;
} raw_cl;

static int raw_open(raw_cl *r, const char *device_name, size_t bytes)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    cl_int err;
    clGetPlatformIDs(16, plats, &np);
    for (cl_uint p = 0; p < np; p++) {
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd; d++) {
            char name[256] = "";
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof name, name, NULL);
            if (strcmp(name, device_name) != 0)
                continue;
            r->ctx = clCreateContext(NULL, 1, &devs[d], NULL, NULL, &err);
            r->q = clCreateCommandQueue(r->ctx, devs[d], 0, &err);
            r->buf = clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
            return err == CL_SUCCESS ? 0 : -1;
        }
    }
    return -1;
}

static void raw_close(raw_cl *r)
{
    clReleaseMemObject(r->buf);
    clReleaseCommandQueue(r->q);
    clReleaseContext(r->ctx);
}

static void report(const char *name, const char *dev, size_t bytes, double t, double ref,
                   const char *ref_name)
{
    printf("{\"name\": \"%s\", \"device\": \"%s\", \"bytes\": %zu, \"time_s\": %.6e, "
           "\"GB_per_s\": %.3f, \"reference\": \"%s\", \"reference_time_s\": %.6e, "
           "\"ratio_to_reference\": %.3f}\n",
           name, dev, bytes, t, (double)bytes / t * 1e-9, ref_name, ref, t / ref);
}

int main(void)
{
    static const size_t sizes[] = {4096, 1 << 20, 64 << 20, 256 << 20};
    clt_device *gpu = clt_device_get("gpu:0"), *cpu = clt_device_cpu();
    if (!gpu) {
        fprintf(stderr, "%s\n", clt_last_error());
        return 1;
    }
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t bytes = sizes[s];
        int64_t n = (int64_t)(bytes / sizeof(float));
        double t_up[REPEATS], t_down[REPEATS], t_raw_w[REPEATS], t_raw_r[REPEATS], t_mem[REPEATS];
        double t_cast[REPEATS], t_copy[REPEATS], t_fresh_w[REPEATS], t_fresh_r[REPEATS];
        raw_cl raw;
        char *a = malloc(bytes), *b = malloc(bytes);
        memset(a, 1, bytes);
        memset(b, 2, bytes);
        if (raw_open(&raw, clt_device_get_info(gpu)->name, bytes) != 0) {
            fprintf(stderr, "cannot open %s directly\n", clt_device_get_info(gpu)->name);
            return 1;
        }
        clt_tensor *h = clt_tensor_rand(1, &n, CLT_F32, cpu);
        clt_tensor *g = clt_tensor_to(h, gpu);
        for (int r = -2; r < REPEATS; r++) { /* two warm-up rounds */
            double t0 = now_s();
            clt_tensor *up = clt_tensor_to(h, gpu);
            clt_device_synchronize(gpu);
            double t1 = now_s();
            clt_tensor *down = clt_tensor_to(g, cpu);
            double t2 = now_s();
            clEnqueueWriteBuffer(raw.q, raw.buf, CL_TRUE, 0, bytes, a, 0, NULL, NULL);
            double t3 = now_s();
            clEnqueueReadBuffer(raw.q, raw.buf, CL_TRUE, 0, bytes, b, 0, NULL, NULL);
            double t4 = now_s();
            memcpy(b, a, bytes);
            double t5 = now_s();
            /* what clt_tensor_to does: a new destination each time */
            cl_int err;
            cl_mem fresh = clCreateBuffer(raw.ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
            clEnqueueWriteBuffer(raw.q, fresh, CL_TRUE, 0, bytes, a, 0, NULL, NULL);
            clReleaseMemObject(fresh);
            double t5b = now_s();
            char *host = malloc(bytes);
            clEnqueueReadBuffer(raw.q, raw.buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
            free(host);
            double t5c = now_s();
            clt_tensor *half = clt_tensor_to_dtype(g, CLT_F16);
            clt_device_synchronize(gpu);
            double t6 = now_s();
            clt_tensor *copy = clt_tensor_to_ex(g, &(clt_to_options){.copy = true});
            clt_device_synchronize(gpu);
            double t7 = now_s();
            if (!up || !down || !half || !copy) {
                fprintf(stderr, "%s\n", clt_last_error());
                return 1;
            }
            clt_tensor_release(up);
            clt_tensor_release(down);
            clt_tensor_release(half);
            clt_tensor_release(copy);
            if (r < 0)
                continue;
            t_up[r] = t1 - t0;
            t_down[r] = t2 - t1;
            t_raw_w[r] = t3 - t2;
            t_raw_r[r] = t4 - t3;
            t_mem[r] = t5 - t4;
            t_fresh_w[r] = t5b - t5;
            t_fresh_r[r] = t5c - t5b;
            t_cast[r] = t6 - t5c;
            t_copy[r] = t7 - t6;
        }
        double mem = median(t_mem, REPEATS);
        double raw_w = median(t_raw_w, REPEATS), raw_r = median(t_raw_r, REPEATS);
        report("to cpu->gpu:0", "gpu:0", bytes, median(t_up, REPEATS),
               median(t_fresh_w, REPEATS), "clCreateBuffer+clEnqueueWriteBuffer");
        report("to cpu->gpu:0", "gpu:0", bytes, median(t_up, REPEATS), raw_w,
               "clEnqueueWriteBuffer into a reused buffer");
        report("to gpu:0->cpu", "gpu:0", bytes, median(t_down, REPEATS),
               median(t_fresh_r, REPEATS), "malloc+clEnqueueReadBuffer");
        report("to gpu:0->cpu", "gpu:0", bytes, median(t_down, REPEATS), raw_r,
               "clEnqueueReadBuffer into reused memory");
        report("clEnqueueWriteBuffer", "gpu:0", bytes, raw_w, mem, "memcpy");
        report("to cpu->gpu:0", "gpu:0", bytes, median(t_up, REPEATS), mem, "memcpy");
        report("to gpu:0->cpu", "gpu:0", bytes, median(t_down, REPEATS), mem, "memcpy");
        report("to_dtype f32->f16", "gpu:0", bytes, median(t_cast, REPEATS),
               median(t_copy, REPEATS), "same-dtype copy on the device");
        clt_tensor_release(g);
        clt_tensor_release(h);
        raw_close(&raw);
        free(a);
        free(b);
    }
    return 0;
}
