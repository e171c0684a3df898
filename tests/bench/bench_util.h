/* Timing helpers shared by the benchmarks: a monotonic clock and the median of samples. */
#ifndef CLT_BENCH_UTIL_H
#define CLT_BENCH_UTIL_H

#include <stdio.h>
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

/* Starts a PyTorch reference script (`script args`) with the first interpreter that imports torch
 * ($PYTHON, python3, /usr/bin/python3), reading its output; NULL when none does. Close with
 * pclose. */
static inline FILE *bench_torch_popen(const char *script, const char *args)
{
    const char *candidates[] = {getenv("PYTHON"), "python3", "/usr/bin/python3"};
    char cmd[2048];
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        if (!candidates[i] || !*candidates[i])
            continue;
        snprintf(cmd, sizeof cmd, "'%s' -c 'import torch' 2>/dev/null", candidates[i]);
        if (system(cmd) != 0)
            continue;
        snprintf(cmd, sizeof cmd, "'%s' '%s' %s", candidates[i], script, args);
        return popen(cmd, "r");
    }
    return NULL;
}

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
