/* Elementwise benchmark: on every device, add and relu over 64 MiB f32 tensors in GB/s (bytes
 * read and written) against memcpy of the same bytes in the same run, and the per-call overhead
 * of a 16-element add in microseconds. One JSON line per case, medians after a warm-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor.h>

#include "bench_util.h"

#define REPEATS 11

typedef clt_tensor *(*op_fn)(clt_tensor *a, clt_tensor *b);

static clt_tensor *relu2(clt_tensor *a, clt_tensor *b)
{
    (void)b;
    return clt_relu(a);
}

/* Median seconds of op(a, b), synchronising the device after each call. */
static double time_op(op_fn op, clt_tensor *a, clt_tensor *b, clt_device *dev, int repeats)
{
    double t[101];
    for (int r = -2; r < repeats; r++) {
        double t0 = now_s();
        clt_tensor *y = op(a, b);
        clt_device_synchronize(dev);
        double t1 = now_s();
        if (!y) {
            fprintf(stderr, "%s\n", clt_last_error());
            exit(1);
        }
        clt_tensor_release(y);
        if (r >= 0)
            t[r] = t1 - t0;
    }
    return median(t, repeats);
}

int main(void)
{
    const int64_t n = (64 << 20) / 4; /* 64 MiB of f32 */
    const size_t bytes = (size_t)n * 4;
    char *src = malloc(bytes), *dst = malloc(bytes);
    double mem[REPEATS];
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    for (int r = -2; r < REPEATS; r++) {
        double t0 = now_s();
        memcpy(dst, src, bytes);
        double t1 = now_s();
        if (r >= 0)
            mem[r] = t1 - t0;
    }
    double t_mem = median(mem, REPEATS); /* reads and writes 2 * bytes */
    int count = clt_device_count();
    for (int d = -1; d < count; d++) {
        char name[16];
        snprintf(name, sizeof name, d < 0 ? "cpu" : "gpu:%d", d);
        clt_device *dev = clt_device_get(name);
        clt_manual_seed(1);
        clt_tensor *a = clt_tensor_randn(1, &n, CLT_F32, dev), *b = clt_tensor_randn(1, &n, CLT_F32, dev);
        struct { const char *name; op_fn fn; double traffic; } ops[] = {
            {"add", clt_add, 3.0 * (double)bytes}, {"relu", relu2, 2.0 * (double)bytes}};
        for (int k = 0; k < 2; k++) {
            double t = time_op(ops[k].fn, a, b, dev, REPEATS);
            /* memcpy moves 2 * bytes in t_mem: scale to this op's traffic */
            double ref = t_mem * ops[k].traffic / (2.0 * (double)bytes);
            printf("{\"name\": \"%s 64MiB f32\", \"device\": \"%s\", \"bytes\": %zu, \"time_s\": %.6e, "
                   "\"GB_per_s\": %.2f, \"reference\": \"memcpy of the same traffic\", "
                   "\"reference_GB_per_s\": %.2f, \"ratio_to_reference\": %.3f}\n",
                   ops[k].name, name, bytes, t, ops[k].traffic / t * 1e-9,
                   2.0 * (double)bytes / t_mem * 1e-9, t / ref);
        }
        clt_tensor *s = clt_tensor_ones(CLT_SHAPE(16), CLT_F32, dev);
        double t_small = time_op(clt_add, s, s, dev, 101);
        printf("{\"name\": \"add 16 elements\", \"device\": \"%s\", \"time_us\": %.2f}\n", name,
               t_small * 1e6);
        clt_tensor_release(s), clt_tensor_release(b), clt_tensor_release(a);
    }
    free(src), free(dst);
    return 0;
}
