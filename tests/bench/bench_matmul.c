/* Matrix product benchmark: clt_matmul of two n x n f32 matrices on cpu and on every gpu:N,
 * against a BLAS called directly on the same memory: cblas_sgemm on the host buffers for cpu
 * (OpenBLAS with the OPENBLAS_CORETYPE this process has, named in the line, on as many of its
 * own threads as cpu has), CLBlastSgemm with
 * its default parameters on the same cl_mem buffers and queue for OpenCL devices. Each time
 * waits for the device. Prints one JSON line per case: medians of repeated runs after a warm-up,
 * GFLOP/s (2 n^3 per product), the time ratio to the direct call, the GEMM variant the device's
 * tuning chose, and the largest difference between the two results (relative to the largest
 * element): above 1e-4 the benchmark fails. `bench_matmul cpu` runs the cpu cases alone (for
 * OpenBLAS under another OPENBLAS_CORETYPE). In a build without CBLAS the direct call on cpu is
 * the library's own GEMM (lib/backends/host/host_blas.h).
 *
 * Then the library's own host GEMM: clt__blas_sgemm with each of its kernels the processor runs
 * (AVX-512, AVX2, the baseline) against cblas_sgemm on one thread, both on this thread with the
 * same operands, in alternate rounds ("host gemm f32" lines, with the speed ratio), and
 * clt_matmul on cpu with the built-in GEMM against clt_matmul with CBLAS, on cpu's threads
 * ("matmul f32 builtin gemm" lines). `bench_matmul host-gemm` runs these alone. Not run by
 * ctest. */
#include "cl_internal.h" /* first: it sets the OpenCL version CLBlast's header then sees */
#include "tensor/tensor_internal.h"
#include "backends/host/host.h"
#include "backends/host/host_blas.h"

#if defined(CLT_HAVE_CBLAS)
#include <cblas.h>
#endif
#include <clblast_c.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor.h>

#include "bench_util.h"

#if defined(CLT_HAVE_CBLAS)
#define BENCH_HAVE_CBLAS 1
#else
#define BENCH_HAVE_CBLAS 0
#endif

/* C = A B through the BLAS directly, on the tensors' own memory; 0 on success. */
static int direct_sgemm(clt_device *dev, clt_tensor *a, clt_tensor *b, clt_tensor *c, size_t n)
{
    if (clt_device_get_info(dev)->type == CLT_DEVICE_HOST) {
#if defined(CLT_HAVE_CBLAS)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)n,
                    (blasint)n, 1.0f, clt_tensor_data(a), (blasint)n, clt_tensor_data(b),
                    (blasint)n, 0.0f, clt_tensor_data(c), (blasint)n);
        return 0;
#else
        clt__blas_sgemm(false, false, n, n, n, 1.0f, clt_tensor_data(a), n, clt_tensor_data(b),
                        n, 0.0f, clt_tensor_data(c), n);
        return 0;
#endif
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
        return clt__host_gemm_builtin() ? "builtin" : "cblas_sgemm";
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
     * PoCL the first tens of products of 256 in a process ran slower than later ones, and one
     * warm-up product left them slower and more scattered than 0.3 s of them
     * (docs/performance.md, The other benchmarks) */
    double warm_until = now_s() + 0.3;
    while (now_s() < warm_until) {
        clt_tensor *p = clt_matmul(a, b);
        clt_device_synchronize(dev);
        clt_tensor_release(p);
    }
    /* the check against the direct call comes after the timed runs: the reference's first
     * call builds CLBlast's kernels, after which the library's products of 256 ran slower for
     * a while than without it (docs/performance.md, The other benchmarks) */
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
#if defined(CLT_HAVE_CBLAS)
    if (host) /* on OpenBLAS's own threads, as many as cpu's (the library leaves OpenBLAS one) */
        openblas_set_num_threads(clt_get_num_threads());
#endif
    for (int r = -1; r < repeats; r++) {
        double t0 = now_s();
        if (direct_sgemm(dev, a, b, c, (size_t)n) != 0)
            return -1;
        if (r >= 0)
            t_ref[r] = now_s() - t0;
    }
#if defined(CLT_HAVE_CBLAS)
    if (host)
        openblas_set_num_threads(1);
#endif
    double t = median(t_clt, repeats), ref = median(t_ref, repeats);
    double flop = 2.0 * (double)n * (double)n * (double)n;
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    char reference[96];
    if (host && BENCH_HAVE_CBLAS)
        snprintf(reference, sizeof reference, "OpenBLAS cblas_sgemm (OPENBLAS_CORETYPE=%s)",
                 coretype && *coretype ? coretype : "detected");
    else if (host)
        snprintf(reference, sizeof reference, "clt__blas_sgemm (%s)",
                 clt__blas_isa_name(clt__blas_isa_get()));
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

/* ---- the library's own host GEMM -------------------------------------------------------- */

/* The reference of the host GEMM lines: cblas_sgemm on one of OpenBLAS's threads. */
static void reference_sgemm(size_t n, const float *a, const float *b, float *c)
{
#if defined(CLT_HAVE_CBLAS)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)n, (blasint)n,
                1.0f, a, (blasint)n, b, (blasint)n, 0.0f, c, (blasint)n);
#else
    (void)n, (void)a, (void)b, (void)c;
#endif
}

/* The largest |x - y| over the largest |y|, of count elements. */
static double host_difference(const float *x, const float *y, size_t count)
{
    double most = 0, scale = 0;
    for (size_t i = 0; i < count; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        most = d > most ? d : most;
        scale = fabs((double)y[i]) > scale ? fabs((double)y[i]) : scale;
    }
    return scale > 0 ? most / scale : most;
}

/* Medians of clt__blas_sgemm (t) and the reference (ref) over n x n operands a, b, into c and
 * r, after 0.2 s of warm-up, the two alternating in every round. */
static void time_host_gemm(size_t n, const float *a, const float *b, float *c, float *r,
                           double *t, double *ref)
{
    int repeats = n <= 256 ? 31 : n <= 512 ? 15 : n <= 1024 ? 7 : 5;
    double t_own[31], t_ref[31];
    double warm_until = now_s() + 0.2;
    while (now_s() < warm_until) {
        clt__blas_sgemm(false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        reference_sgemm(n, a, b, r);
    }
    for (int i = 0; i < repeats; i++) {
        double t0 = now_s();
        clt__blas_sgemm(false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double t1 = now_s();
        reference_sgemm(n, a, b, r);
        t_own[i] = t1 - t0, t_ref[i] = now_s() - t1;
    }
    *t = median(t_own, repeats), *ref = median(t_ref, repeats);
}

/* One "host gemm f32" line: the kernels of isa against OpenBLAS on one thread; 0, or -1 when
 * the results differ. */
static int bench_host_gemm(size_t n, clt__blas_isa isa)
{
    size_t count = n * n;
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
    float *c = malloc(count * sizeof *c), *r = calloc(count, sizeof *r);
    if (!a || !b || !c || !r)
        return free(a), free(b), free(c), free(r), -1;
    for (size_t i = 0; i < count; i++)
        a[i] = (float)rand() / (float)RAND_MAX - 0.5f, b[i] = (float)rand() / (float)RAND_MAX;
    double t, ref, flop = 2.0 * (double)n * (double)n * (double)n;
    clt__blas_isa_set(isa);
    time_host_gemm(n, a, b, c, r, &t, &ref);
    double diff = BENCH_HAVE_CBLAS ? host_difference(c, r, count) : 0;
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    printf("{\"name\": \"host gemm f32\", \"device\": \"cpu\", \"size\": %zu, \"time_s\": %.6e, "
           "\"GFLOP_per_s\": %.2f, \"variant\": \"builtin %s\"",
           n, t, flop / t * 1e-9, clt__blas_isa_name(isa));
    if (BENCH_HAVE_CBLAS)
        printf(", \"reference\": \"OpenBLAS cblas_sgemm, 1 thread (OPENBLAS_CORETYPE=%s)\", "
               "\"reference_time_s\": %.6e, \"reference_GFLOP_per_s\": %.2f, "
               "\"ratio_to_reference\": %.3f, \"GFLOP_ratio_to_reference\": %.3f, "
               "\"max_relative_difference\": %.2e",
               coretype && *coretype ? coretype : "detected", ref, flop / ref * 1e-9, t / ref,
               ref / t, diff);
    printf("}\n");
    fflush(stdout);
    free(a), free(b), free(c), free(r);
    if (diff > 1e-4)
        fprintf(stderr, "bench_matmul: the host GEMM (%s) differs by %.2e at %zu\n",
                clt__blas_isa_name(isa), diff, n);
    return diff > 1e-4 ? -1 : 0;
}

/* The seconds clt_matmul(a, b) took with the built-in GEMM or with CBLAS; negative on failure. */
static double time_matmul(clt_tensor *a, clt_tensor *b, bool builtin)
{
    clt__host_gemm_use_builtin(builtin);
    double t0 = now_s();
    clt_tensor *p = clt_matmul(a, b);
    double t = now_s() - t0;
    clt_tensor_release(p);
    return p ? t : -1;
}

/* Medians of clt_matmul(a, b) on cpu with the built-in GEMM (t) and with CBLAS (ref), in
 * alternate rounds after 0.3 s of warm-up. */
static int time_builtin_matmul(clt_tensor *a, clt_tensor *b, int repeats, double *t, double *ref)
{
    double t_own[15], t_ref[15];
    double warm_until = now_s() + 0.3;
    while (now_s() < warm_until)
        if (time_matmul(a, b, true) < 0 || time_matmul(a, b, false) < 0)
            return -1;
    for (int i = 0; i < repeats; i++)
        if ((t_own[i] = time_matmul(a, b, true)) < 0 ||
            (t_ref[i] = time_matmul(a, b, false)) < 0)
            return -1;
    *t = median(t_own, repeats), *ref = median(t_ref, repeats);
    return 0;
}

/* One "matmul f32 builtin gemm" line: clt_matmul on cpu, built-in GEMM against CBLAS. */
static int bench_builtin_matmul(int64_t n)
{
    clt_device *cpu = clt_device_cpu();
    clt_tensor *a = clt_tensor_rand(CLT_SHAPE(n, n), CLT_F32, cpu);
    clt_tensor *b = clt_tensor_rand(CLT_SHAPE(n, n), CLT_F32, cpu);
    bool was = clt__host_gemm_builtin();
    double t, ref, flop = 2.0 * (double)n * (double)n * (double)n;
    int repeats = n <= 512 ? 15 : n <= 1024 ? 7 : 5;
    int rc = a && b ? time_builtin_matmul(a, b, repeats, &t, &ref) : -1;
    clt__host_gemm_use_builtin(was);
    clt_tensor_release(b);
    clt_tensor_release(a);
    if (rc != 0) {
        fprintf(stderr, "%s\n", clt_last_error());
        return -1;
    }
    printf("{\"name\": \"matmul f32 builtin gemm\", \"device\": \"cpu\", \"size\": %lld, "
           "\"threads\": %d, \"time_s\": %.6e, \"GFLOP_per_s\": %.2f, \"variant\": \"builtin "
           "%s\", \"reference\": \"clt_matmul with CBLAS\", \"reference_time_s\": %.6e, "
           "\"reference_GFLOP_per_s\": %.2f, \"ratio_to_reference\": %.3f, "
           "\"GFLOP_ratio_to_reference\": %.3f}\n",
           (long long)n, clt_get_num_threads(), t, flop / t * 1e-9,
           clt__blas_isa_name(clt__blas_isa_get()), ref, flop / ref * 1e-9, t / ref, ref / t);
    fflush(stdout);
    return 0;
}

/* The host GEMM lines at every size: each kernel the processor runs, then clt_matmul. */
static int bench_host_gemms(const int64_t *sizes, size_t count)
{
#if defined(CLT_HAVE_CBLAS)
    openblas_set_num_threads(1);
#endif
    clt__blas_isa best = clt__blas_isa_get();
    for (size_t s = 0; s < count; s++)
        for (int isa = (int)best; isa >= (int)CLT__BLAS_BASELINE; isa--)
            if (bench_host_gemm((size_t)sizes[s], (clt__blas_isa)isa) != 0)
                return -1;
    clt__blas_isa_set(best);
    for (size_t s = 0; s < count && BENCH_HAVE_CBLAS; s++)
        if (bench_builtin_matmul(sizes[s]) != 0)
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    static const int64_t sizes[] = {256, 512, 1024, 2048};
    const size_t count = sizeof sizes / sizeof *sizes;
    if (argc > 1 && strcmp(argv[1], "host-gemm") == 0)
        return bench_host_gemms(sizes, count) == 0 ? 0 : 1;
    int gpus = argc > 1 && strcmp(argv[1], "cpu") == 0 ? 0 : clt_device_count();
    for (int d = -1; d < gpus; d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", d);
        clt_device *dev = d < 0 ? clt_device_cpu() : clt_device_get(name);
        if (!dev) {
            fprintf(stderr, "%s\n", clt_last_error());
            return 1;
        }
        for (size_t s = 0; s < count; s++)
            if (bench(dev, sizes[s]) != 0)
                return 1;
    }
    return bench_host_gemms(sizes, count) == 0 ? 0 : 1;
}
