/* Memory-bound operations benchmark: on every device, over 64 MiB f32 tensors (16M elements),
 * add, relu, casts f32 -> f16, f16 -> f32 and f32 -> f64, clt_contiguous of a transposed
 * 4096 x 4096 view, a same-device clone, and one SGD-with-momentum and one Adam step, each in
 * GB/s (bytes read and written) against memcpy of the same traffic in the same run, on one
 * thread and on two (bench_mem.h); and the per-call overhead of a 16-element add in
 * microseconds. One JSON line per case, medians after a warm-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor.h>

#include "bench_mem.h"
#include "bench_util.h"

#define N ((int64_t)16 << 20) /* elements: 64 MiB of f32 */
#define SIDE 4096             /* SIDE * SIDE == N */

/* The tensors of one device and the case being run. */
typedef struct bench {
    clt_device *dev;
    clt_tensor *a, *b, *h, *t; /* f32, f32, f16, a viewed as SIDE x SIDE and transposed */
    clt_optimizer *opt;
    int which;
} bench;

enum { ADD, RELU, TO_F16, F16_TO_F32, TO_F64, CONTIGUOUS, CLONE, SGD, ADAM, CASES };

static const struct {
    const char *name;
    double traffic; /* bytes read and written, in units of the 64 MiB f32 tensor */
} cases[CASES] = {
    [ADD] = {"add 64MiB f32", 3},
    [RELU] = {"relu 64MiB f32", 2},
    [TO_F16] = {"cast f32->f16 64MiB f32", 1.5},
    [F16_TO_F32] = {"cast f16->f32 64MiB f32", 1.5},
    [TO_F64] = {"cast f32->f64 64MiB f32", 3},
    [CONTIGUOUS] = {"contiguous of a transposed 4096x4096 f32", 2},
    [CLONE] = {"clone 64MiB f32", 2},
    [SGD] = {"SGD momentum step 16M f32", 5}, /* reads p, g, m; writes p, m */
    [ADAM] = {"Adam step 16M f32", 7},        /* reads p, g, m, v; writes p, m, v */
};

static clt_tensor *run_case(bench *b)
{
    switch (b->which) {
    case ADD: return clt_add(b->a, b->b);
    case RELU: return clt_relu(b->a);
    case TO_F16: return clt_tensor_to_dtype(b->a, CLT_F16);
    case F16_TO_F32: return clt_tensor_to_dtype(b->h, CLT_F32);
    case TO_F64: return clt_tensor_to_dtype(b->a, CLT_F64);
    case CONTIGUOUS: return clt_contiguous(b->t);
    case CLONE: return clt_tensor_to_ex(b->a, &(clt_to_options){.copy = true});
    default: return clt_optim_step(b->opt) == CLT_OK ? clt_tensor_retain(b->a) : NULL;
    }
}

static int run(void *ctx)
{
    bench *b = ctx;
    clt_tensor *y = run_case(b);
    clt_status st = y ? clt_device_synchronize(b->dev) : CLT_ERR_INVALID_ARGUMENT;
    clt_tensor_release(y);
    return st == CLT_OK ? 0 : -1;
}

/* The optimizer of an SGD or Adam case over a fresh parameter with b->b as its gradient. */
static int make_optimizer(bench *b, int which)
{
    clt_tensor *p = clt_tensor_randn(1, &(int64_t){N}, CLT_F32, b->dev);
    if (!p || clt_tensor_set_requires_grad(p, true) != CLT_OK ||
        clt_tensor_set_grad(p, b->b) != CLT_OK)
        return -1;
    if (which == SGD)
        b->opt = clt_optim_sgd(&p, 1, BENCH_SGD(1e-3, 0.9));
    else
        b->opt = clt_optim_adam(&p, 1, BENCH_ADAM(1e-3));
    clt_tensor_release(b->a);
    b->a = p;
    return b->opt ? 0 : -1;
}

static int fail(void)
{
    fprintf(stderr, "%s\n", clt_last_error());
    return 1;
}

/* Median seconds of a 16-element add, synchronising after each call. */
static double time_small(clt_device *dev)
{
    double t[101];
    clt_tensor *s = clt_tensor_ones(CLT_SHAPE(16), CLT_F32, dev);
    for (int r = -2; r < 101 && s; r++) {
        double t0 = now_s();
        clt_tensor *y = clt_add(s, s);
        clt_device_synchronize(dev);
        if (r >= 0)
            t[r] = now_s() - t0;
        clt_tensor_release(y);
    }
    clt_tensor_release(s);
    return s ? median(t, 101) : -1;
}

int main(void)
{
    char *src, *dst;
    int count = clt_device_count();
    if (mem_buffers(&dst, &src) != 0 || count < 0)
        return fail();
    for (int d = -1; d < count; d++) {
        char name[16];
        snprintf(name, sizeof name, d < 0 ? "cpu" : "gpu:%d", d);
        bench b = {clt_device_get(name), NULL, NULL, NULL, NULL, NULL, 0};
        clt_manual_seed(1);
        b.a = clt_tensor_randn(1, &(int64_t){N}, CLT_F32, b.dev);
        b.b = clt_tensor_randn(1, &(int64_t){N}, CLT_F32, b.dev);
        b.h = b.a ? clt_tensor_to_dtype(b.a, CLT_F16) : NULL;
        clt_tensor *sq = b.a ? clt_view(b.a, CLT_SHAPE(SIDE, SIDE)) : NULL;
        b.t = sq ? clt_transpose(sq, 0, 1) : NULL;
        clt_tensor_release(sq);
        if (!b.b || !b.t || !b.h)
            return fail();
        for (b.which = 0; b.which < CASES; b.which++) {
            mem_times t;
            if ((b.which == SGD || b.which == ADAM) && make_optimizer(&b, b.which) != 0)
                return fail();
            if (mem_measure(run, &b, dst, src, &t) != 0)
                return fail();
            mem_report(cases[b.which].name, name, cases[b.which].traffic * (double)N * 4, &t,
                       NULL);
            clt_optim_free(b.opt);
            b.opt = NULL;
        }
        printf("{\"name\": \"add 16 elements\", \"device\": \"%s\", \"time_us\": %.2f}\n", name,
               time_small(b.dev) * 1e6);
        clt_tensor_release(b.t), clt_tensor_release(b.h), clt_tensor_release(b.b);
        clt_tensor_release(b.a);
    }
    free(src), free(dst);
    return 0;
}
