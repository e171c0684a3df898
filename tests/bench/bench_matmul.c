/* Matrix product benchmark: clt_matmul of two n x n f32 matrices on cpu and on every gpu:N,
 * against the BLAS it calls, called directly on the same memory: cblas_sgemm on the host
 * buffers for cpu, CLBlastSgemm on the same cl_mem buffers and queue for OpenCL devices. Each
 * time waits for the device. Prints one JSON line per case: medians of repeated runs after a
 * warm-up, GFLOP/s (2 n^3 per product) and the time ratio to the direct call. Not run by ctest.
 */
#include "cl_internal.h" /* first: it sets the OpenCL version CLBlast's header then sees */
#include "tensor/tensor_internal.h"

#include <cblas.h>
#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cltensor.h>

#include "bench_util.h"

/* C = A B through the BLAS directly, on the tensors' own memory; 0 on success. */
static int direct_sgemm(clt_device *dev, clt_tensor *a, clt_tensor *b, clt_tensor *c, size_t n)
{
    if (clt_device_get_info(dev)->type == CLT_DEVICE_HOST) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)n,
                    (blasint)n, 1.0f, clt_tensor_data(a), (blasint)n, clt_tensor_data(b),
                    (blasint)n, 0.0f, clt_tensor_data(c), (blasint)n);
        return 0;
    }
    cl_command_queue q = clt__cl(dev)->queue;
    CLBlastStatusCode s = CLBlastSgemm(
        CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 1.0f,
        (cl_mem)a->storage->buf, a->offset, n, (cl_mem)b->storage->buf, b->offset, n, 0.0f,
        (cl_mem)c->storage->buf, c->offset, n, &q, NULL);
    if (s != CLBlastSuccess) {
        fprintf(stderr, "CLBlastSgemm failed: %d\n", (int)s);
        return -1;
    }
    return clFinish(q) == CL_SUCCESS ? 0 : -1;
}

static int bench(clt_device *dev, int64_t n)
{
    int repeats = n <= 512 ? 15 : n <= 1024 ? 7 : 5;
    double t_clt[15], t_ref[15];
    clt_tensor *a = clt_tensor_rand(CLT_SHAPE(n, n), CLT_F32, dev);
    clt_tensor *b = clt_tensor_rand(CLT_SHAPE(n, n), CLT_F32, dev);
    clt_tensor *c = clt_tensor_empty(CLT_SHAPE(n, n), CLT_F32, dev);
    if (!a || !b || !c || clt_device_synchronize(dev) != CLT_OK) {
        fprintf(stderr, "%s\n", clt_last_error());
        return -1;
    }
    for (int r = -1; r < repeats; r++) { /* one warm-up round */
        double t0 = now_s();
        clt_tensor *p = clt_matmul(a, b);
        clt_status st = clt_device_synchronize(dev);
        double t1 = now_s();
        if (!p || st != CLT_OK) {
            fprintf(stderr, "%s\n", clt_last_error());
            return -1;
        }
        clt_tensor_release(p);
        double t2 = now_s();
        if (direct_sgemm(dev, a, b, c, (size_t)n) != 0)
            return -1;
        double t3 = now_s();
        if (r < 0)
            continue;
        t_clt[r] = t1 - t0;
        t_ref[r] = t3 - t2;
    }
    double t = median(t_clt, repeats), ref = median(t_ref, repeats);
    double flop = 2.0 * (double)n * (double)n * (double)n;
    printf("{\"name\": \"matmul f32\", \"device\": \"%s\", \"size\": %lld, \"time_s\": %.6e, "
           "\"GFLOP_per_s\": %.2f, \"reference\": \"%s\", \"reference_time_s\": %.6e, "
           "\"reference_GFLOP_per_s\": %.2f, \"ratio_to_reference\": %.3f}\n",
           clt_device_name(dev), (long long)n, t, flop / t * 1e-9,
           clt_device_get_info(dev)->type == CLT_DEVICE_HOST ? "cblas_sgemm" : "CLBlastSgemm",
           ref, flop / ref * 1e-9, t / ref);
    fflush(stdout);
    clt_tensor_release(c);
    clt_tensor_release(b);
    clt_tensor_release(a);
    return 0;
}

int main(void)
{
    static const int64_t sizes[] = {256, 512, 1024, 2048};
    int gpus = clt_device_count();
    for (int d = -1; d < gpus; d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", d);
        clt_device *dev = d < 0 ? clt_device_cpu() : clt_device_get(name);
        if (!dev) {
            fprintf(stderr, "%s\n", clt_last_error());
            return 1;
        }
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            if (bench(dev, sizes[s]) != 0)
                return 1;
    }
    return 0;
}
