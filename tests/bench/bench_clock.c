/* The CPU's clock while it runs, measured: a chain of dependent integer additions retires one a
 * cycle on every x86-64 and AArch64 core, so the chain's length over its time is the clock. The
 * median of 9 runs of 200 million additions (after one to wake the core up), on one core. For
 * tests/bench/run's fp32 peak, where /proc/cpuinfo's "cpu MHz" is the nominal clock of a virtual
 * machine rather than the one the core runs at. One JSON line:
 * {"bench": "cpu_clock", "mhz": ..., "method": ...}; on other CPUs it says it cannot measure and
 * exits with 2. */
#include <stdint.h>
#include <stdio.h>

#include "bench_util.h"

#define ADDS_PER_STEP 20
#define STEPS 10000000L

#if defined(__x86_64__)
#define ADD1 "add $1, %0\n\t"
#elif defined(__aarch64__)
#define ADD1 "add %0, %0, #1\n\t"
#endif

#ifdef ADD1
static double chain_seconds(void)
{
    uint64_t v = 0;
    double start = now_s();
    for (long i = 0; i < STEPS; i++)
        __asm__ volatile(ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1
                             ADD1 ADD1 ADD1 ADD1 ADD1 ADD1
                         : "+r"(v));
    double t = now_s() - start;
    if (v != (uint64_t)STEPS * ADDS_PER_STEP)
        fprintf(stderr, "bench_clock: the chain counted %llu\n", (unsigned long long)v);
    return t;
}
#endif

int main(void)
{
#ifdef ADD1
    double t[9];
    chain_seconds();
    for (int r = 0; r < 9; r++)
        t[r] = chain_seconds();
    /* the loop's own increment and branch run beside the chain, off its critical path */
    double mhz = (double)STEPS * ADDS_PER_STEP / median(t, 9) / 1e6;
    printf("{\"bench\": \"cpu_clock\", \"mhz\": %.0f, \"method\": \"%d dependent additions a "
           "step, one a cycle\"}\n",
           mhz, ADDS_PER_STEP);
    return 0;
#else
    fprintf(stderr, "bench_clock: no dependent-addition chain for this CPU architecture\n");
    return 2;
#endif
}
