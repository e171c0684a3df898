/* The memcpy references of the memory-bound benchmarks (bench_ops, bench_reduce): a case's
 * bandwidth is its bytes read plus bytes written per second, compared with memcpy's (a copy of
 * B bytes moves 2 B) measured in the same run, right after each timing of the case, on one
 * thread (the target) and split over two (a fair reference for a two-thread device). One JSON
 * line per case and device: medians of REPEATS runs after two warm-up runs. */
#ifndef CLT_BENCH_MEM_H
#define CLT_BENCH_MEM_H

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cltensor.h>

#include "bench_util.h"

#define MEM_REPEATS 11
#define MEM_BYTES ((size_t)64 << 20) /* what each memcpy copies */

typedef struct mem_half {
    char *dst;
    const char *src;
    size_t bytes;
} mem_half;

static void *mem_copy_half(void *arg)
{
    mem_half *h = arg;
    memcpy(h->dst, h->src, h->bytes);
    return NULL;
}

/* Seconds of one memcpy of MEM_BYTES from src to dst on `threads` (1 or 2) threads. */
static inline double mem_time(char *dst, const char *src, int threads)
{
    double t0 = now_s();
    if (threads == 1) {
        memcpy(dst, src, MEM_BYTES);
    } else {
        size_t half = MEM_BYTES / 2;
        mem_half h[2] = {{dst, src, half}, {dst + half, src + half, MEM_BYTES - half}};
        pthread_t t;
        if (pthread_create(&t, NULL, mem_copy_half, &h[1]) != 0) {
            mem_copy_half(&h[1]);
            mem_copy_half(&h[0]);
        } else {
            mem_copy_half(&h[0]);
            pthread_join(t, NULL);
        }
    }
    return now_s() - t0;
}

/* One case: run() does the operation once and waits for it (returns 0, or -1 on an error). */
typedef int (*mem_case_fn)(void *ctx);

/* The medians of the case and of the two references, interleaved run by run. */
typedef struct mem_times {
    double op, copy1, copy2;
} mem_times;

static inline int mem_measure(mem_case_fn run, void *ctx, char *dst, const char *src,
                              mem_times *out)
{
    double op[MEM_REPEATS], c1[MEM_REPEATS], c2[MEM_REPEATS];
    for (int r = -2; r < MEM_REPEATS; r++) {
        double t0 = now_s();
        if (run(ctx) != 0)
            return -1;
        double t = now_s() - t0, m1 = mem_time(dst, src, 1), m2 = mem_time(dst, src, 2);
        if (r >= 0)
            op[r] = t, c1[r] = m1, c2[r] = m2;
    }
    out->op = median(op, MEM_REPEATS);
    out->copy1 = median(c1, MEM_REPEATS);
    out->copy2 = median(c2, MEM_REPEATS);
    return 0;
}

/* Prints the case's line: traffic bytes read plus written by one run; ratios are the case's
 * time over memcpy's for the same traffic (1.0 is parity, 1.11 is 90% of its bandwidth). */
static inline void mem_report(const char *name, const char *dev, double traffic,
                              const mem_times *t, const char *extra)
{
    double ref1 = 2.0 * (double)MEM_BYTES / t->copy1, ref2 = 2.0 * (double)MEM_BYTES / t->copy2;
    printf("{\"name\": \"%s\", \"device\": \"%s\", \"traffic_bytes\": %.0f, \"time_s\": %.6e, "
           "\"GB_per_s\": %.2f, \"reference\": \"memcpy of the same traffic\", "
           "\"reference_GB_per_s\": %.2f, \"ratio_to_reference\": %.3f, "
           "\"reference2\": \"memcpy over 2 threads\", \"reference2_GB_per_s\": %.2f, "
           "\"ratio_to_reference2\": %.3f%s}\n",
           name, dev, traffic, t->op, traffic / t->op * 1e-9, ref1 * 1e-9, t->op / (traffic / ref1),
           ref2 * 1e-9, t->op / (traffic / ref2), extra ? extra : "");
    fflush(stdout);
}

/* The source and destination of the references, touched once. */
static inline int mem_buffers(char **dst, char **src)
{
    *src = malloc(MEM_BYTES);
    *dst = malloc(MEM_BYTES);
    if (!*src || !*dst)
        return -1;
    memset(*src, 1, MEM_BYTES);
    memset(*dst, 0, MEM_BYTES);
    return 0;
}

#endif
