/* Reduction benchmark: clt_sum, clt_mean and clt_amax over all of a 64 MiB f32 tensor on every
 * device, in GB/s of input read (the result is read back each time), against memcpy of the same
 * traffic on the host in the same run, on one thread and on two (bench_mem.h), and, for sum on
 * OpenCL devices, against a same-dtype copy of the tensor on the device (time over time). Prints
 * one JSON line per case with medians of repeated runs after a warm-up, the ratios, and the
 * sum's and mean's relative error against a double sum. Not run by ctest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor.h>

#include "bench_mem.h"
#include "bench_util.h"

#define BYTES ((size_t)64 << 20)

enum { SUM, MEAN, MAX, CASES };
static const char *const names[CASES] = {"sum 64MiB f32", "mean 64MiB f32", "max 64MiB f32"};

typedef struct bench {
    clt_device *dev;
    clt_tensor *x;
    int which;
    float got;
} bench;

static int run(void *ctx)
{
    bench *b = ctx;
    clt_tensor *s = b->which == SUM    ? clt_sum(b->x, NULL, 0, false)
                    : b->which == MEAN ? clt_mean(b->x, NULL, 0, false)
                                       : clt_amax(b->x, NULL, 0, false);
    int rc = s && clt_tensor_copy_to_host(s, &b->got, sizeof b->got) == CLT_OK ? 0 : -1;
    clt_tensor_release(s);
    return rc;
}

/* A same-dtype copy of x on its device, waited for. */
static int copy_on_device(void *ctx)
{
    bench *b = ctx;
    clt_tensor *c = clt_tensor_to_ex(b->x, &(clt_to_options){.copy = true});
    int rc = c && clt_device_synchronize(b->dev) == CLT_OK ? 0 : -1;
    clt_tensor_release(c);
    return rc;
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
    char *src, *dst, extra[64];
    float *host = malloc(BYTES);
    if (gpus < 0 || !host || mem_buffers(&dst, &src) != 0)
        return fail();
    for (int64_t i = 0; i < n; i++) /* 0.1 and noise: a plain f32 loop would drift */
        host[i] = 0.1f + (float)((i * 2654435761u) % 1000) * 1e-5f;
    double exact = 0, most = host[0];
    for (int64_t i = 0; i < n; i++)
        exact += host[i], most = host[i] > most ? host[i] : most;

    for (int d = -1; d < gpus; d++) {
        char name[16];
        snprintf(name, sizeof name, d < 0 ? "cpu" : "gpu:%d", d);
        bench b = {clt_device_get(name), NULL, 0, 0};
        if (!b.dev || !(b.x = clt_tensor_from_data(1, &n, host, CLT_F32, b.dev)))
            return fail();
        for (b.which = 0; b.which < CASES; b.which++) {
            mem_times t, c;
            if (mem_measure(run, &b, dst, src, &t) != 0)
                return fail();
            double want = b.which == SUM ? exact : b.which == MEAN ? exact / (double)n : most;
            snprintf(extra, sizeof extra, ", \"rel_error\": %.3e", fabs(b.got - want) / want);
            mem_report(names[b.which], name, (double)BYTES, &t, extra);
            if (b.which != SUM || d < 0)
                continue;
            if (mem_measure(copy_on_device, &b, dst, src, &c) != 0)
                return fail();
            printf("{\"name\": \"%s\", \"device\": \"%s\", \"time_s\": %.6e, \"reference\": "
                   "\"same-dtype copy on the device\", \"reference_time_s\": %.6e, "
                   "\"ratio_to_reference\": %.3f}\n",
                   names[SUM], name, t.op, c.op, t.op / c.op);
        }
        clt_tensor_release(b.x);
    }
    free(host), free(src), free(dst);
    return 0;
}
