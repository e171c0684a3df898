/* Timing helpers shared by the benchmarks: a monotonic clock and the median of samples. */
#ifndef CLT_BENCH_UTIL_H
#define CLT_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

#include <cltensor.h>

/* PyTorch's Adam / SGD defaults with the learning rate (and SGD's momentum) changed;
 * BENCH_ADAM and BENCH_SGD give a pointer to such options in a compound literal. */
static inline clt_adam_options bench_adam_lr(double lr)
{
    clt_adam_options o = clt_adam_options_default();
    o.lr = lr;
    return o;
}

static inline clt_sgd_options bench_sgd_lr(double lr, double momentum)
{
    clt_sgd_options o = clt_sgd_options_default();
    o.lr = lr;
    o.momentum = momentum;
    return o;
}
#define BENCH_ADAM(lr) ((clt_adam_options[1]){bench_adam_lr(lr)})
#define BENCH_SGD(lr, momentum) ((clt_sgd_options[1]){bench_sgd_lr(lr, momentum)})

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n samples (sorts them). */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

#endif
