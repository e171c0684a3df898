/* Reduction benchmark: clt_sum over a 64 MiB f32 tensor on every device, in GB/s of input read,
 * against memcpy of the same bytes on the host in the same run and, on OpenCL devices, against
 * a same-dtype copy of the tensor on the device. Prints one JSON line per case with medians of
 * repeated runs after a warm-up, the ratio, and the sum's relative error against a double sum.
 * Not run by ctest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor.h>

#include "bench_util.h"

#define REPEATS 15
#define BYTES ((size_t)64 << 20)

static void report(const char *name, const char *dev, double t, double ref, const char *ref_name,
                   double rel_error)
{
    printf("{\"name\": \"%s\", \"device\": \"%s\", \"bytes\": %zu, \"time_s\": %.6e, "
           "\"GB_per_s\": %.3f, \"reference\": \"%s\", \"reference_time_s\": %.6e, "
           "\"reference_GB_per_s\": %.3f, \"ratio_to_reference\": %.3f, \"rel_error\": %.3e}\n",
           name, dev, BYTES, t, (double)BYTES / t * 1e-9, ref_name, ref,
           (double)BYTES / ref * 1e-9, t / ref, rel_error);
}

static int fail(void)
{
    fprintf(stderr, "%s\n", clt_last_error());
    return 1;
}

int main(void)
{
    int64_t n = (int64_t)(BYTES / sizeof(float));
    int gpus = clt_device_count();
    char *a = malloc(BYTES), *b = malloc(BYTES);
    float *host = malloc(BYTES);
    if (gpus < 0 || !a || !b || !host)
        return fail();
    memset(a, 1, BYTES);
    memset(b, 2, BYTES);
    for (int64_t i = 0; i < n; i++) /* 0.1 and noise: a plain f32 loop would drift */
        host[i] = 0.1f + (float)((i * 2654435761u) % 1000) * 1e-5f;
    double exact = 0;
    for (int64_t i = 0; i < n; i++)
        exact += host[i];

    for (int d = -1; d < gpus; d++) {
        char name[16];
        snprintf(name, sizeof name, d < 0 ? "cpu" : "gpu:%d", d);
        clt_device *dev = clt_device_get(name);
        if (!dev)
            return fail();
        clt_tensor *x = clt_tensor_from_data(host, CLT_F32, 1, &n, dev);
        if (!x)
            return fail();
        double t_sum[REPEATS], t_mem[REPEATS], t_copy[REPEATS];
        float got = 0;
        for (int r = -2; r < REPEATS; r++) { /* two warm-up rounds */
            double t0 = now_s();
            clt_tensor *s = clt_sum(x, NULL, 0, false);
            if (!s || clt_tensor_copy_to_host(s, &got, sizeof got) != CLT_OK)
                return fail();
            double t1 = now_s();
            memcpy(b, a, BYTES);
            double t2 = now_s();
            clt_tensor *c = NULL;
            if (d >= 0) {
                c = clt_tensor_to_ex(x, &(clt_to_options){.copy = true});
                if (!c || clt_device_synchronize(dev) != CLT_OK)
                    return fail();
            }
            double t3 = now_s();
            clt_tensor_release(c);
            clt_tensor_release(s);
            if (r < 0)
                continue;
            t_sum[r] = t1 - t0;
            t_mem[r] = t2 - t1;
            t_copy[r] = t3 - t2;
        }
        double err = fabs((double)got - exact) / exact;
        double sum = median(t_sum, REPEATS);
        report("sum f32", name, sum, median(t_mem, REPEATS), "memcpy", err);
        if (d >= 0)
            report("sum f32", name, sum, median(t_copy, REPEATS), "same-dtype copy on the device",
                   err);
        clt_tensor_release(x);
    }
    free(host);
    free(b);
    free(a);
    return 0;
}
