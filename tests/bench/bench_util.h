/* Timing helpers shared by the benchmarks: a monotonic clock and the median of samples. */
#ifndef CLT_BENCH_UTIL_H
#define CLT_BENCH_UTIL_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* The first interpreter that imports torch ($PYTHON, python3, /usr/bin/python3), or NULL. */
static inline const char *bench_torch_python(void)
{
    const char *candidates[] = {getenv("PYTHON"), "python3", "/usr/bin/python3"};
    char cmd[2048];
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        if (!candidates[i] || !*candidates[i])
            continue;
        snprintf(cmd, sizeof cmd, "'%s' -c 'import torch' 2>/dev/null", candidates[i]);
        if (system(cmd) == 0)
            return candidates[i];
    }
    return NULL;
}

/* Starts a PyTorch reference script (`script args`) with bench_torch_python, reading its
 * output; NULL when no interpreter imports torch. Close with pclose. */
static inline FILE *bench_torch_popen(const char *script, const char *args)
{
    const char *python = bench_torch_python();
    char cmd[2048];
    if (!python)
        return NULL;
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s", python, script, args);
    return popen(cmd, "r");
}

/* Starts `script args` as bench_torch_popen does, with pipes both ways: *to writes its standard
 * input, *from reads its output. Its process id, or -1 when no interpreter imports torch or it
 * cannot start. Close both streams and waitpid it. */
static inline pid_t bench_torch_spawn(const char *script, const char *args, FILE **to, FILE **from)
{
    const char *python = bench_torch_python();
    char cmd[2048];
    int in[2], out[2];
    pid_t pid;
    if (!python || pipe(in) != 0)
        return -1;
    if (pipe(out) != 0) {
        close(in[0]), close(in[1]);
        return -1;
    }
    snprintf(cmd, sizeof cmd, "exec '%s' '%s' %s", python, script, args);
    /* this side's ends closed in every program started later: a second script holding the
     * first's input open would keep it from ever seeing its end */
    fcntl(in[1], F_SETFD, FD_CLOEXEC);
    fcntl(out[0], F_SETFD, FD_CLOEXEC);
    if ((pid = fork()) == 0) {
        dup2(in[0], 0), dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(in[0]), close(out[1]);
    *to = pid > 0 ? fdopen(in[1], "w") : NULL;
    *from = *to ? fdopen(out[0], "r") : NULL;
    if (!*from) { /* (closing its input ends the script) */
        if (*to)
            fclose(*to);
        else
            close(in[1]);
        close(out[0]);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
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
