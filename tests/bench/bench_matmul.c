/* Matrix product benchmark: clt_matmul of two n x n f32 matrices on cpu and on every gpu:N,
 * against a BLAS called directly on the same memory: cblas_sgemm on the host buffers for cpu
 * (OpenBLAS with the OPENBLAS_CORETYPE this process has, named in the line, on as many of its
 * own threads as cpu has), CLBlastSgemm with
 * its default parameters on the same cl_mem buffers and queue for OpenCL devices. Each time
 * waits for the device. Prints one JSON line per case: medians of repeated runs after a warm-up,
 * GFLOP/s (2 n^3 per product), the time ratio to the direct call, the GEMM variant the device's
 * tuning chose, and the largest difference between the two results (relative to the largest
 * element): above 1e-4 the benchmark fails. `bench_matmul cpu` runs the cpu cases alone (for
 * OpenBLAS under another OPENBLAS_CORETYPE). Not run by ctest. */
#include "cl_internal.h" /* first: it sets the OpenCL version CLBlast's header then sees */
#include "tensor/tensor_internal.h"

#include <cblas.h>
#include <clblast_c.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
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

/* The largest |x - y| over the largest |y|, of two n x n results. */
static double difference(clt_tensor *x, clt_tensor *y, int64_t n)
{
    size_t count = (size_t)(n * n);
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
    double most = 0, scale = 0;
    if (!a || !b || clt_tensor_copy_to_host(x, a, count * sizeof *a) != CLT_OK ||
        clt_tensor_copy_to_host(y, b, count * sizeof *b) != CLT_OK) {
        free(a), free(b);
        return 1e30;
    }
    for (size_t i = 0; i < count; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        most = d > most ? d : most;
        scale = fabs((double)b[i]) > scale ? fabs((double)b[i]) : scale;
    }
    free(a), free(b);
    return scale > 0 ? most / scale : most;
}

/* The variant the device's tuning chose for an n x n x n product. */
static const char *variant_of(clt_device *dev, int64_t n)
{
    clt__gemm_variant choice[CLT__GEMM_CHOICES];
    clt__gemm_call c = {.dtype = CLT_F32, .m = (size_t)n, .n = (size_t)n, .k = (size_t)n};
    const char *forced = getenv("CLT_GEMM");
    if (clt_device_get_info(dev)->type == CLT_DEVICE_HOST)
        return "cblas_sgemm";
    if (forced && *forced && strcmp(forced, "auto") != 0)
        return forced;
    if (clt__cl_gemm_tune("bench_matmul", dev, CLT_F32, choice) != CLT_OK)
        return "unknown";
    return clt__gemm_variant_names[choice[clt__gemm_class(&c)]];
}

static int bench(clt_device *dev, int64_t n)
{
    double diff = 0;
    int repeats = n <= 512 ? 15 : n <= 1024 ? 7 : 5;
    double t_clt[15], t_ref[15];
    clt_tensor *a = clt_tensor_rand(CLT_SHAPE(n, n), CLT_F32, dev);
    clt_tensor *b = clt_tensor_rand(CLT_SHAPE(n, n), CLT_F32, dev);
    clt_tensor *c = clt_tensor_empty(CLT_SHAPE(n, n), CLT_F32, dev);
    if (!a || !b || !c || clt_device_synchronize(dev) != CLT_OK) {
        fprintf(stderr, "%s\n", clt_last_error());
        return -1;
    }
    /* the library's runs, then the direct calls', each after a warm-up: interleaved, the
     * threads one leaves spinning for a while (OpenBLAS's) would slow the other's. The warm-up
     * lasts 0.3 s, each product waited for: on cpu OpenBLAS's idle worker spins for about 0.1 s
     * after a threaded call, and in a process with the OpenCL drivers loaded after its first
     * use, holding a core (the library's products of 256 ran at one core's speed then); on
     * PoCL the first tens of products of 256 took 350-500 us where later ones took 250-330
     * (a 2-core EPYC: its products of 256 measured 46-109 GFLOP/s after one warm-up product,
     * 103-124 after 0.3 s) */
    double warm_until = now_s() + 0.3;
    while (now_s() < warm_until) {
        clt_tensor *p = clt_matmul(a, b);
        clt_device_synchronize(dev);
        clt_tensor_release(p);
    }
    /* the check against the direct call comes after the timed runs: the reference's first
     * call builds CLBlast's kernels, after which the library's products of 256 ran at 40-60
     * GFLOP/s on a 2-core EPYC for a while, against 75-100 without it */
    clt_tensor *last = NULL;
    for (int r = -1; r < repeats; r++) {
        double t0 = now_s();
        clt_tensor *p = clt_matmul(a, b);
        clt_status st = clt_device_synchronize(dev);
        double t1 = now_s();
        if (!p || st != CLT_OK) {
            fprintf(stderr, "%s\n", clt_last_error());
            return -1;
        }
        clt_tensor_release(last);
        last = p;
        if (r >= 0)
            t_clt[r] = t1 - t0;
    }
    diff = direct_sgemm(dev, a, b, c, (size_t)n) == 0 ? difference(last, c, n) : -1;
    clt_tensor_release(last);
    if (diff < 0)
        return -1;
    bool host = clt_device_get_info(dev)->type == CLT_DEVICE_HOST;
    if (host) /* on OpenBLAS's own threads, as many as cpu's (the library leaves OpenBLAS one) */
        openblas_set_num_threads(clt_get_num_threads());
    for (int r = -1; r < repeats; r++) {
        double t0 = now_s();
        if (direct_sgemm(dev, a, b, c, (size_t)n) != 0)
            return -1;
        if (r >= 0)
            t_ref[r] = now_s() - t0;
    }
    if (host)
        openblas_set_num_threads(1);
    double t = median(t_clt, repeats), ref = median(t_ref, repeats);
    double flop = 2.0 * (double)n * (double)n * (double)n;
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    char reference[96];
    if (clt_device_get_info(dev)->type == CLT_DEVICE_HOST)
        snprintf(reference, sizeof reference, "OpenBLAS cblas_sgemm (OPENBLAS_CORETYPE=%s)",
                 coretype && *coretype ? coretype : "detected");
    else
        snprintf(reference, sizeof reference, "CLBlastSgemm default parameters");
    printf("{\"name\": \"matmul f32\", \"device\": \"%s\", \"size\": %lld, \"time_s\": %.6e, "
           "\"GFLOP_per_s\": %.2f, \"variant\": \"%s\", \"reference\": \"%s\", "
           "\"reference_time_s\": %.6e, \"reference_GFLOP_per_s\": %.2f, "
           "\"ratio_to_reference\": %.3f, \"max_relative_difference\": %.2e}\n",
           clt_device_name(dev), (long long)n, t, flop / t * 1e-9, variant_of(dev, n), reference,
           ref, flop / ref * 1e-9, t / ref, diff);
    if (diff > 1e-4) {
        fprintf(stderr, "bench_matmul: the results on %s differ by %.2e\n", clt_device_name(dev),
                diff);
        return -1;
    }
    fflush(stdout);
    clt_tensor_release(c);
    clt_tensor_release(b);
    clt_tensor_release(a);
    return 0;
}

int main(int argc, char **argv)
{
    static const int64_t sizes[] = {256, 512, 1024, 2048};
    int gpus = argc > 1 && strcmp(argv[1], "cpu") == 0 ? 0 : clt_device_count();
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
