/* The host backend's pool of worker threads (host_parallel.h).
 *
 * A loop is split into `parts` contiguous ranges, taken in turn by whichever thread comes first,
 * the caller included: a worker slow to start (its processor busy, or asleep) leaves its part to
 * the others instead of holding them up. The caller publishes a job as one atomic word
 * (generation << 8 | parts) after writing its fields; parts are claimed from a second word
 * (generation << 32 | the next part), so that a worker still holding an older job's word claims
 * nothing of a newer one. The caller returns once every part is done, so a job's fields never
 * change while a thread that claimed a part reads them. Workers spin for a short while after a
 * job (the next one usually follows within microseconds), yielding the processor between
 * checks, then sleep on a condition variable. One loop at a time holds the pool; a loop started
 * while it is held, or from inside a part, runs in its caller alone. */
#define _GNU_SOURCE
#if defined(CLT_HAVE_CBLAS)
#include <cblas.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <cltensor/device.h>

#include "host_parallel.h"
#include "core/core.h"
#include "platform/platform.h"

#define MAX_THREADS 64
/* A part's least work in elementary operations: about 10-20 microseconds of memory-bound work,
 * against the microsecond a spinning worker takes to start (tens when it slept). */
#define MIN_PART_COST 32768
/* How long an idle worker watches for the next job before it sleeps. */
#define SPIN_NS 100000

typedef struct worker {
    pthread_t thread;
    unsigned long long seen; /* the job word when it started */
    int index;
} worker;

static struct {
    pthread_mutex_t run;  /* held by the loop that uses the pool */
    pthread_mutex_t lock; /* guards the count, the start of workers and sleeping */
    pthread_cond_t wake;
    atomic_ullong job; /* generation << 8 | parts; parts 0 tells workers to check the count */
    _Alignas(64) atomic_ullong next; /* generation (its low 32 bits) << 32 | next part to claim */
    _Alignas(64) atomic_size_t done; /* parts of the current job finished */
    atomic_int sleepers;
    atomic_int threads; /* wanted, the caller included; 0 until first chosen */
    int started;        /* workers running: indices 1 .. started */
    clt__host_part body;
    const void *call;
    size_t n;
    worker w[MAX_THREADS];
} pool = {.run = PTHREAD_MUTEX_INITIALIZER,
          .lock = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER};

static _Thread_local bool in_part;

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Items [lo, hi) of part k of `parts` over n: sizes differing by at most one. */
static void part_range(size_t n, unsigned parts, unsigned k, size_t *lo, size_t *hi)
{
    size_t q = n / parts, r = n % parts;
    *lo = k * q + (k < r ? k : r);
    *hi = *lo + q + (k < r);
}

/* Runs parts of job word v until none is left to claim. */
static void run_parts(unsigned long long v)
{
    unsigned long long gen = (v >> 8) & 0xffffffffu;
    unsigned parts = (unsigned)(v & 0xff);
    unsigned long long at = atomic_load_explicit(&pool.next, memory_order_acquire);
    while (at >> 32 == gen && (at & 0xffffffffu) < parts) {
        if (!atomic_compare_exchange_weak_explicit(&pool.next, &at, at + 1,
                                                   memory_order_acq_rel, memory_order_acquire))
            continue; /* at now holds the word another thread left */
        size_t lo, hi;
        part_range(pool.n, parts, (unsigned)(at & 0xffffffffu), &lo, &hi);
        pool.body(pool.call, lo, hi);
        atomic_fetch_add_explicit(&pool.done, 1, memory_order_release);
        at = atomic_load_explicit(&pool.next, memory_order_acquire);
    }
}

/* The job word after `seen` changes: spins for SPIN_NS, then sleeps. */
static unsigned long long next_job(unsigned long long seen)
{
    uint64_t start = clt__monotonic_ns();
    for (unsigned i = 1;; i++) {
        unsigned long long v = atomic_load_explicit(&pool.job, memory_order_acquire);
        if (v != seen)
            return v;
        relax();
        if (i % 64 == 0) {
            if (clt__monotonic_ns() - start > SPIN_NS)
                break;
            sched_yield(); /* a busy processor goes to whoever needs it */
        }
    }
    pthread_mutex_lock(&pool.lock);
    atomic_fetch_add(&pool.sleepers, 1);
    unsigned long long v;
    while ((v = atomic_load(&pool.job)) == seen)
        pthread_cond_wait(&pool.wake, &pool.lock);
    atomic_fetch_sub(&pool.sleepers, 1);
    pthread_mutex_unlock(&pool.lock);
    return v;
}

static void *work(void *arg)
{
    worker *me = arg;
    unsigned long long seen = me->seen;
    in_part = true; /* a loop inside a part runs in that part's thread */
    for (;;) {
        seen = next_job(seen);
        unsigned parts = (unsigned)(seen & 0xff);
        if (parts == 0 && me->index >= atomic_load(&pool.threads))
            return NULL; /* the count went down */
        if (parts)
            run_parts(seen);
    }
}

/* Publishes job word v and wakes sleeping workers. */
static void publish(unsigned long long v)
{
    atomic_store(&pool.job, v);
    if (atomic_load(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
}

/* Leaves the BLAS library's own pool (OpenBLAS's, where it has one) one thread: the products
 * are split over this pool instead (host_gemm.c). */
static void blas_single_thread(void)
{
#if defined(CLT_HAVE_OPENBLAS_THREADS)
    openblas_set_num_threads(1);
#endif
}

/* In a child after fork() the workers do not exist: the pool starts again when first used. */
static void after_fork_in_child(void)
{
    pthread_mutex_init(&pool.run, NULL);
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    atomic_store(&pool.sleepers, 0);
    pool.started = 0;
}

static void choose_count(void)
{
    if (atomic_load(&pool.threads) != 0)
        return;
    int n = 0;
    const char *env = getenv("CLT_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        n = *end == '\0' && v > 0 ? (int)(v < MAX_THREADS ? v : MAX_THREADS) : 0;
        if (n == 0)
            clt__log(CLT_LOG_WARN, "CLT_NUM_THREADS=\"%s\" is not a count of at least 1: ignored",
                     env);
    }
    if (n == 0)
        n = clt__cpu_count();
    atomic_store(&pool.threads, n < MAX_THREADS ? n : MAX_THREADS);
    blas_single_thread();
    clt__at_fork_child(after_fork_in_child);
}

/* Starts the workers the count asks for (as many as the system gives); called holding `run`. */
static int workers_ready(void)
{
    pthread_mutex_lock(&pool.lock);
    choose_count();
    int want = atomic_load(&pool.threads) - 1;
    while (pool.started < want) {
        worker *w = &pool.w[pool.started + 1];
        w->index = pool.started + 1;
        w->seen = atomic_load(&pool.job); /* no job is published while the caller holds run */
        if (pthread_create(&w->thread, NULL, work, w) != 0)
            break;
        pool.started++;
    }
    int ready = pool.started < want ? pool.started : want;
    pthread_mutex_unlock(&pool.lock);
    return ready;
}

void clt__host_parallel(size_t n, size_t cost, clt__host_part body, const void *call)
{
    size_t total = cost && n > SIZE_MAX / cost ? SIZE_MAX : n * (cost ? cost : 1);
    if (n < 2 || in_part || total < 2 * MIN_PART_COST || pthread_mutex_trylock(&pool.run) != 0) {
        body(call, 0, n);
        return;
    }
    size_t parts = (size_t)workers_ready() + 1;
    parts = parts < total / MIN_PART_COST ? parts : total / MIN_PART_COST;
    parts = parts < n ? parts : n;
    if (parts < 2) {
        pthread_mutex_unlock(&pool.run);
        body(call, 0, n);
        return;
    }
    pool.body = body;
    pool.call = call;
    pool.n = n;
    unsigned long long job = ((atomic_load(&pool.job) >> 8) + 1) << 8 | parts;
    atomic_store(&pool.done, 0);
    atomic_store(&pool.next, ((job >> 8) & 0xffffffffu) << 32);
    publish(job);
    in_part = true;
    run_parts(job);
    in_part = false;
    for (unsigned i = 1; atomic_load_explicit(&pool.done, memory_order_acquire) < parts; i++) {
        relax(); /* the parts other threads claimed */
        if (i % 64 == 0)
            sched_yield();
    }
    pthread_mutex_unlock(&pool.run);
}

clt_status clt_set_num_threads(int n)
{
    if (n < 1 || n > MAX_THREADS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_set_num_threads",
                          "the thread count %d is outside 1 .. %d", n, MAX_THREADS);
    pthread_mutex_lock(&pool.run);
    pthread_mutex_lock(&pool.lock);
    choose_count();
    atomic_store(&pool.threads, n);
    int keep = pool.started < n - 1 ? pool.started : n - 1, had = pool.started;
    pool.started = keep;
    pthread_mutex_unlock(&pool.lock);
    if (had > keep) { /* workers keep..had see a job of no parts and leave */
        publish(((atomic_load(&pool.job) >> 8) + 1) << 8);
        for (int k = keep + 1; k <= had; k++)
            pthread_join(pool.w[k].thread, NULL);
    }
    pthread_mutex_unlock(&pool.run);
    return CLT_OK;
}

int clt_get_num_threads(void)
{
    pthread_mutex_lock(&pool.lock);
    choose_count();
    int n = atomic_load(&pool.threads);
    pthread_mutex_unlock(&pool.lock);
    return n;
}
