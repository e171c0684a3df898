/* The OpenCL backend's warm-up: every program the library's kernels use built ahead of time on a
 * device, several at once where the machine has the cores, and its GEMM tuned for each float
 * dtype, so that later operations start without compiling or tuning (and, with the disk cache,
 * later processes too). clt_device_warmup (lib/ops/warmup.c) then runs one small product per
 * dtype, which compiles the chosen GEMM kernels. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cl_internal.h"
#include "core/core.h"
#include "platform/platform.h"

/* Every program the kernels use, a kernel each holds (what its cached binary is checked for),
 * the dtypes each is built for (bits 1 << dtype: those the operations that use it accept; a
 * launch with another still builds what it needs) and the options that specialise it for one:
 * the dtype's (its dtype table row), gemm.cl's, or none (one build, only where the device
 * holds that dtype: a cast from it, random). Fills and transposes move bits, so they are built
 * for one dtype per storage size (bits_dtype in cl_ops.c). */
#define D(t) (1u << (t))
#define EVERY_DTYPE (D(CLT_F32) | D(CLT_F64) | D(CLT_F16) | D(CLT_BF16) | D(CLT_I32) |          \
                     D(CLT_I64) | D(CLT_U8) | D(CLT_BOOL))
#define FLOAT_DTYPES (D(CLT_F32) | D(CLT_F64) | D(CLT_F16) | D(CLT_BF16))
#define BIT_DTYPES (D(CLT_U8) | D(CLT_F16) | D(CLT_I32) | D(CLT_I64))
enum { DTYPE_OPTIONS, GEMM_OPTIONS, NO_OPTIONS };
static const struct {
    const char *name, *kernel;
    unsigned dtypes;
    int options;
} every_program[] = {
    {"elementwise:binary", "ew_add", EVERY_DTYPE, DTYPE_OPTIONS},
    {"elementwise:scalar", "ew_add_scalar", EVERY_DTYPE, DTYPE_OPTIONS},
    {"elementwise:sign", "ew_neg", EVERY_DTYPE & ~D(CLT_BOOL), DTYPE_OPTIONS},
    {"elementwise:math", "ew_exp", FLOAT_DTYPES, DTYPE_OPTIONS},
    {"elementwise:compare", "ew_eq", EVERY_DTYPE, DTYPE_OPTIONS},
    {"elementwise:backward", "ew_relu_backward", FLOAT_DTYPES, DTYPE_OPTIONS},
    {"elementwise:copy", "ew_copy", EVERY_DTYPE, DTYPE_OPTIONS},
    {"elementwise:fill", "ew_fill", BIT_DTYPES, DTYPE_OPTIONS},
    {"elementwise:transpose", "ew_copy_t", BIT_DTYPES, DTYPE_OPTIONS},
    {"reduce:sums", "sum_rows", EVERY_DTYPE, DTYPE_OPTIONS},
    {"reduce:extremes", "argmax_rows", EVERY_DTYPE, DTYPE_OPTIONS},
    {"nn", "index_select", EVERY_DTYPE, DTYPE_OPTIONS},
    {"attention", "attention", FLOAT_DTYPES, DTYPE_OPTIONS},
    {"loss", "cross_entropy", FLOAT_DTYPES, DTYPE_OPTIONS},
    {"winograd", "winograd_input", D(CLT_F32) | D(CLT_F64), DTYPE_OPTIONS},
    {"rows", "sort_rows", EVERY_DTYPE, DTYPE_OPTIONS},
    {"optim", "optim_step", D(CLT_F32) | D(CLT_F64), DTYPE_OPTIONS},
    {"gemm:direct", "gemm_direct", D(CLT_F32) | D(CLT_F64), GEMM_OPTIONS},
    {"gemm:packed", "gemm_packed", D(CLT_F32) | D(CLT_F64), GEMM_OPTIONS},
    {"gemm:tiled", "gemm_tiled", D(CLT_F32) | D(CLT_F64), GEMM_OPTIONS},
    {"gemm:dot", "gemm_dot", D(CLT_F32) | D(CLT_F64), GEMM_OPTIONS},
    {"random", "uniform_f32", D(CLT_F32), NO_OPTIONS},
    {"cast:from_f32", "cast_f32_f32", D(CLT_F32), NO_OPTIONS},
    {"cast:from_f64", "cast_f64_f32", D(CLT_F64), NO_OPTIONS},
    {"cast:from_f16", "cast_f16_f32", D(CLT_F16), NO_OPTIONS},
    {"cast:from_bf16", "cast_bf16_f32", D(CLT_BF16), NO_OPTIONS},
    {"cast:from_i32", "cast_i32_f32", D(CLT_I32), NO_OPTIONS},
    {"cast:from_i64", "cast_i64_f32", D(CLT_I64), NO_OPTIONS},
    {"cast:from_u8", "cast_u8_f32", D(CLT_U8), NO_OPTIONS},
    {"cast:from_b8", "cast_b8_f32", D(CLT_BOOL), NO_OPTIONS},
};
#undef D

/* One program of a warm-up: what to build, then what the build gave. */
typedef struct warm_job {
    const char *name, *extra, *kernel;
    cl_program program;
    clt_status status;
    char error[1024]; /* the failure's message, from the thread that built it */
} warm_job;

typedef struct warm_work {
    const char *fn;
    clt_device *dev;
    warm_job *jobs;
    size_t count;
    atomic_size_t next; /* the next job to take */
} warm_work;

/* A warm-up thread: builds jobs until none is left, each checked for the kernel every_program
 * names. */
static void *warm_thread(void *arg)
{
    warm_work *w = arg;
    size_t i;
    while ((i = atomic_fetch_add(&w->next, 1)) < w->count) {
        warm_job *j = &w->jobs[i];
        j->status = clt__cl_program_build(w->fn, w->dev, j->name, j->extra, j->kernel,
                                          &j->program);
        if (j->status == CLT_OK && !clt__cl_program_holds(j->program, j->kernel)) {
            clReleaseProgram(j->program);
            j->status = clt__error(CLT_ERR_INTERNAL, w->fn, "OpenCL program '%s' has no kernel %s",
                                   j->name, j->kernel);
        }
        if (j->status != CLT_OK)
            snprintf(j->error, sizeof j->error, "%s", clt_last_error());
    }
    return NULL;
}

/* The jobs of a warm-up of dev: every program of every_program for the dtypes dev supports that
 * is not built yet. Lock held. */
static size_t warm_jobs(clt_device *dev, warm_job *jobs)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof every_program / sizeof *every_program; i++) {
        for (int d = CLT_F32; d < CLT_DTYPE_COUNT; d++) {
            if (!(every_program[i].dtypes & (1u << d)) || (d == CLT_F64 && !dev->info.fp64))
                continue;
            int how = every_program[i].options;
            const char *extra = how == NO_OPTIONS     ? ""
                                : how == GEMM_OPTIONS ? (d == CLT_F64 ? CLT__CL_GEMM_F64
                                                                      : CLT__CL_GEMM_F32)
                                                      : clt__dtype((clt_dtype)d)->options;
            if (clt__cl_program_find(dev, every_program[i].name, extra))
                continue;
            if (jobs)
                jobs[n] = (warm_job){.name = every_program[i].name,
                                     .kernel = every_program[i].kernel, .extra = extra};
            n++;
        }
    }
    return n;
}

/* Builds every program of every_program that dev does not have yet, for every dtype it
 * supports, several at once where the machine has the cores. */
static clt_status build_all(const char *fn, clt_device *dev)
{
    clt__cl_device *cd = clt__cl(dev);
    warm_work w = {.fn = fn, .dev = dev};
    pthread_t threads[8];
    size_t started = 0, want;
    long cores = clt__cpu_count();
    clt_status st = clt__cl_start(fn, dev);

    if (st != CLT_OK)
        return st;
    pthread_mutex_lock(&cd->lock);
    clt__cl_first_build(dev);
    w.count = warm_jobs(dev, NULL);
    w.jobs = w.count ? clt__alloc_zeroed(fn, w.count * sizeof *w.jobs) : NULL;
    if (w.jobs)
        warm_jobs(dev, w.jobs);
    pthread_mutex_unlock(&cd->lock);
    if (w.count && !w.jobs)
        return CLT_ERR_OUT_OF_MEMORY;

    /* the builds run on up to one thread a core, this one among them */
    want = cores > 1 ? (size_t)cores - 1 : 0;
    if (want > sizeof threads / sizeof *threads)
        want = sizeof threads / sizeof *threads;
    if (want >= w.count)
        want = w.count ? w.count - 1 : 0;
    while (started < want && pthread_create(&threads[started], NULL, warm_thread, &w) == 0)
        started++;
    warm_thread(&w);
    for (size_t i = 0; i < started; i++)
        pthread_join(threads[i], NULL);

    pthread_mutex_lock(&cd->lock);
    for (size_t i = 0; i < w.count; i++) {
        warm_job *j = &w.jobs[i];
        clt__cl_program *p;
        if (j->status != CLT_OK) {
            const char *cause = strstr(j->error, ": "); /* past the name of the function */
            if (st == CLT_OK)
                st = clt__error(j->status, fn, "%s", cause ? cause + 2 : j->error);
        } else if (clt__cl_program_find(dev, j->name, j->extra)) {
            clReleaseProgram(j->program); /* a launch built it meanwhile */
        } else if (clt__cl_program_add(fn, dev, j->name, j->extra, j->program, &p) != CLT_OK &&
                   st == CLT_OK) {
            st = CLT_ERR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&cd->lock);
    clt__free(w.jobs);
    return st;
}

clt_status clt__cl_warmup(const char *fn, clt_device *dev)
{
    clt_status st = build_all(fn, dev);
    if (st == CLT_OK)
        st = clt__cl_gemm_tune(fn, dev, CLT_F32, NULL);
    if (st == CLT_OK && dev->info.fp64)
        st = clt__cl_gemm_tune(fn, dev, CLT_F64, NULL);
    return st;
}
