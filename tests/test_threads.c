/* Threads suite: the library used from several threads at once. Threads each training their own
 * model on their own device (cpu and two PoCL sub-devices, CLT_SUBDEVICES=2), each choosing its
 * device for its scope with CLT_WITH_DEVICE, end with the parameters that the same training gives
 * when run alone; threads sharing one device's tensors and module read-only (products,
 * reductions, elementwise operations, a forward without recording, copies to the host) all get
 * the results computed before they started; a module moved between devices and dtypes while
 * another thread retains and releases its parameter keeps every reference. The cpu device's pool
 * of threads covers every item of a loop exactly once, at every thread count, nested and from
 * several callers at once; cpu's kernels give the same bytes on 1 thread and on 4. CI runs this
 * suite, the loader's and DataParallel's under ThreadSanitizer too (CLT_SANITIZE_THREAD). */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/host/host_parallel.h"
#include "helpers.h"
#include "tensor/tensor_internal.h"

enum { STEPS = 6, READERS = 4, ROUNDS = 5 };

/* ---- training on a device per thread ---------------------------------------------------------- */

typedef struct trainer {
    clt_device *dev;
    clt_module *m;  /* this thread's model, on dev */
    clt_tensor *x, *y; /* this thread's data, on the host */
    bool ok;
    char error[512];
} trainer;

/* STEPS steps of Adam on the trainer's data, its tensors made on the current device ("gpu") inside
 * CLT_WITH_DEVICE when dev is a GPU, so that each thread relies on its own current device. */
static bool train(trainer *t)
{
    clt_optimizer *opt = clt_optim_adam_module(t->m, TEST_ADAM(0.05));
    clt_tensor *x = NULL, *y = NULL;
    bool ok = opt != NULL;
    if (t->dev == clt_device_cpu()) {
        x = clt_tensor_retain(t->x), y = clt_tensor_retain(t->y);
    } else {
        CLT_WITH_DEVICE(t->dev) {
            clt_tensor *here = clt_tensor_zeros(CLT_SHAPE(1), CLT_F32, clt_device_get("gpu"));
            ok = ok && here && clt_tensor_device(here) == t->dev && clt_device_current() == t->dev;
            clt_tensor_release(here);
            x = clt_tensor_to(t->x, clt_device_current());
            y = clt_tensor_to(t->y, clt_device_current());
        }
    }
    for (int s = 0; ok && s < STEPS; s++) {
        clt_optim_zero_grad(opt);
        clt_tensor *out = x && y ? clt_module_forward(t->m, x) : NULL;
        clt_tensor *loss = out ? clt_cross_entropy(out, y, NULL) : NULL;
        ok = loss && clt_backward(loss, NULL, false) == CLT_OK && clt_optim_step(opt) == CLT_OK;
        clt_tensor_release(loss);
        clt_tensor_release(out);
    }
    ok = ok && clt_device_synchronize(t->dev) == CLT_OK;
    if (!ok)
        snprintf(t->error, sizeof t->error, "%s: %s", clt_device_name(t->dev), clt_last_error());
    clt_tensor_release(x);
    clt_tensor_release(y);
    clt_optim_free(opt);
    return ok;
}

static void *train_thread(void *arg)
{
    trainer *t = arg;
    t->ok = train(t);
    return NULL;
}

/* Asserts that a and b hold the same parameter values, bit for bit. */
static void same_parameters(clt_module *a, clt_module *b, const char *what)
{
    static const char *const names[4] = {"0.weight", "0.bias", "2.weight", "2.bias"};
    for (int i = 0; i < 4; i++) {
        clt_tensor *pa = clt_module_get_parameter(a, names[i]), *pb = clt_module_get_parameter(b, names[i]);
        double *va = test_values(pa), *vb = test_values(pb);
        for (int64_t k = 0; k < clt_tensor_numel(pa); k++)
            ck_assert_msg(va[k] == vb[k], "%s: %s[%lld]: %.9g in a thread, %.9g alone", what,
                          names[i], (long long)k, va[k], vb[k]);
        free(va), free(vb);
    }
}

START_TEST(test_threads_train_per_device)
{
    enum { N = 3 };
    trainer t[N], alone[N];
    pthread_t threads[N];
    if (!test_use_vendors(true, false))
        return;
    setenv("CLT_SUBDEVICES", "2", 1);
    ck_assert_int_ge(clt_device_count(), 2);
    clt_device *devs[N] = {clt_device_cpu(), clt_device_get("gpu:0"), clt_device_get("gpu:1")};
    for (int i = 0; i < N; i++) {
        double xv[16 * 6], yv[16];
        test_noise(xv, 16 * 6, 10 + i, -1, 1);
        for (int k = 0; k < 16; k++)
            yv[k] = (k + i) % 3;
        clt_module *init = test_mlp(6, 12, 3, clt_nn_tanh(), 30 + i);
        t[i] = (trainer){.dev = devs[i], .m = clt_module_clone_to(init, devs[i])};
        alone[i] = (trainer){.dev = devs[i], .m = clt_module_clone_to(init, devs[i])};
        ck_assert(t[i].m && alone[i].m);
        t[i].x = alone[i].x = test_tensor(clt_device_cpu(), CLT_F32, xv, 2, (int64_t[]){16, 6});
        t[i].y = alone[i].y = test_tensor(clt_device_cpu(), CLT_I64, yv, 1, (int64_t[]){16});
        clt_module_release(init);
    }
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(pthread_create(&threads[i], NULL, train_thread, &t[i]), 0);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
    for (int i = 0; i < N; i++) {
        ck_assert_msg(t[i].ok, "%s", t[i].error);
        ck_assert_msg(train(&alone[i]), "%s", alone[i].error); /* the same, one at a time */
        same_parameters(t[i].m, alone[i].m, clt_device_name(devs[i]));
        ck_assert_ptr_eq(clt_module_device(t[i].m), devs[i]);
    }
    ck_assert_ptr_eq(clt_device_current(), devs[1]); /* the threads' scopes left this one alone */
    for (int i = 0; i < N; i++) {
        clt_tensor_release(t[i].x);
        clt_tensor_release(t[i].y);
        clt_module_release(t[i].m);
        clt_module_release(alone[i].m);
    }
}
END_TEST

/* ---- readers sharing one device's tensors ------------------------------------------------------ */

typedef struct shared {
    clt_tensor *a, *b;       /* 33 x 40 and 40 x 17, on the device */
    clt_module *m;           /* evaluation mode, on the device */
    double *product, *sum, *ew, *forward; /* what each result must be */
    float a_host[33 * 40];   /* a's elements */
} shared;

typedef struct reader {
    const shared *s;
    bool ok;
    char error[512];
} reader;

static bool equal(clt_tensor *t, const double *want, int64_t n)
{
    clt__error_state e;
    bool ok = t && clt_tensor_numel(t) == n;
    clt__error_save(&e);
    double *got = ok ? test_values(t) : NULL;
    for (int64_t k = 0; ok && k < n; k++)
        ok = got[k] == want[k];
    free(got);
    clt__error_restore(&e);
    return ok;
}

/* The four results from the shared tensors, as new references (NULL where one failed). */
static void compute(const shared *s, clt_tensor **r)
{
    clt_tensor *relu = clt_relu(s->a);
    r[0] = clt_matmul(s->a, s->b);
    r[1] = clt_sum(s->a, (int[]){1}, 1, false);
    r[2] = relu ? clt_mul_scalar(relu, 3) : NULL;
    CLT_NO_GRAD r[3] = clt_module_forward(s->m, s->b);
    clt_tensor_release(relu);
}

static void *read_thread(void *arg)
{
    reader *rd = arg;
    const shared *s = rd->s;
    rd->ok = true;
    for (int round = 0; rd->ok && round < ROUNDS; round++) {
        clt_tensor *r[4];
        float a[33 * 40];
        compute(s, r);
        rd->ok = equal(r[0], s->product, 33 * 17) && equal(r[1], s->sum, 33) &&
                 equal(r[2], s->ew, 33 * 40) && equal(r[3], s->forward, 40 * 5) &&
                 clt_tensor_copy_to_host(s->a, a, sizeof a) == CLT_OK &&
                 memcmp(a, s->a_host, sizeof a) == 0;
        if (!rd->ok)
            snprintf(rd->error, sizeof rd->error, "round %d: %s", round, clt_last_error());
        for (int k = 0; k < 4; k++)
            clt_tensor_release(r[k]);
    }
    return NULL;
}

START_TEST(test_threads_shared_read_only)
{
    clt_device *dev = test_device(_i);
    shared s = {0};
    reader rd[READERS];
    pthread_t threads[READERS];
    double av[33 * 40], bv[40 * 17];
    clt_tensor *r[4];
    test_noise(av, 33 * 40, 5, -1, 1);
    test_noise(bv, 40 * 17, 6, -1, 1);
    s.a = test_tensor(dev, CLT_F32, av, 2, (int64_t[]){33, 40});
    s.b = test_tensor(dev, CLT_F32, bv, 2, (int64_t[]){40, 17});
    for (int k = 0; k < 33 * 40; k++)
        s.a_host[k] = (float)av[k];
    s.m = test_mlp(17, 9, 5, clt_nn_relu(), 8);
    ck_assert_int_eq(clt_module_to(s.m, dev), CLT_OK);
    clt_module_train(s.m, false);
    compute(&s, r); /* before any thread: the results every thread must get */
    for (int k = 0; k < 4; k++)
        ck_assert_msg(r[k] != NULL, "%s", clt_last_error());
    s.product = test_values(r[0]), s.sum = test_values(r[1]);
    s.ew = test_values(r[2]), s.forward = test_values(r[3]);
    for (int k = 0; k < 4; k++)
        clt_tensor_release(r[k]);
    ck_assert_int_eq(clt_device_synchronize(dev), CLT_OK);

    for (int i = 0; i < READERS; i++) {
        rd[i] = (reader){.s = &s};
        ck_assert_int_eq(pthread_create(&threads[i], NULL, read_thread, &rd[i]), 0);
    }
    for (int i = 0; i < READERS; i++)
        ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
    for (int i = 0; i < READERS; i++)
        ck_assert_msg(rd[i].ok, "reader %d on %s: %s", i, clt_device_name(dev), rd[i].error);
    /* the shared tensor is as it was */
    double *again = test_values(s.a);
    for (int k = 0; k < 33 * 40; k++)
        ck_assert_double_eq(again[k], (float)av[k]);
    free(again);
    free(s.product), free(s.sum), free(s.ew), free(s.forward);
    clt_module_release(s.m);
    clt_tensor_release(s.b);
    clt_tensor_release(s.a);
}
END_TEST

/* ---- moving a module while another thread retains and releases its parameters ----------------- */

typedef struct holder {
    clt_tensor *p;
    atomic_bool stop;
    atomic_long rounds;
} holder;

static void *hold_thread(void *arg)
{
    holder *h = arg;
    while (!atomic_load(&h->stop)) {
        for (int k = 0; k < 3; k++)
            clt_tensor_retain(h->p);
        for (int k = 0; k < 3; k++)
            clt_tensor_release(h->p);
        atomic_fetch_add(&h->rounds, 1);
    }
    return NULL;
}

/* clt_module_to swaps a parameter's data in place: a retain or release of that handle on another
 * thread meanwhile must not be lost (the handle would be freed while the module holds it, or
 * never). Moves between cpu and the device, and between f32 and f64, while a thread retains and
 * releases the weight; afterwards the handle has exactly the module's reference and ours. */
START_TEST(test_threads_move_while_retained)
{
    clt_device *dev = test_device(_i);
    clt_module *m = test_mlp(8, 16, 4, clt_nn_relu(), 3);
    holder h = {.p = clt_tensor_retain(clt_module_get_parameter(m, "0.weight"))};
    pthread_t thread;
    double *before = test_values(h.p);
    atomic_init(&h.stop, false);
    atomic_init(&h.rounds, 0);
    ck_assert_int_eq(pthread_create(&thread, NULL, hold_thread, &h), 0);
    while (atomic_load(&h.rounds) == 0) /* the moves must overlap the other thread's work */
        sched_yield();
    long first = atomic_load(&h.rounds);
    /* 200 moves there and back at least, and as many as the other thread needs for 2000 rounds */
    for (int round = 0; round < 200 || (atomic_load(&h.rounds) < first + 2000 && round < 100000);
         round++) {
        bool away = dev != clt_device_cpu(), f64_there = test_has_dtype(dev, CLT_F64);
        ck_assert_int_eq(clt_module_to_dtype(m, CLT_F64), CLT_OK);
        if (away && f64_there)
            ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
        ck_assert_int_eq(clt_module_to_dtype(m, CLT_F32), CLT_OK);
        if (away && !f64_there) /* (f64 only on cpu) */
            ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
        if (away)
            ck_assert_int_eq(clt_module_to(m, clt_device_cpu()), CLT_OK);
    }
    atomic_store(&h.stop, true);
    ck_assert_int_eq(pthread_join(thread, NULL), 0);
    ck_assert_int_ge(atomic_load(&h.rounds), first + 2000);
    ck_assert_int_eq(atomic_load(&h.p->refs), 2);
    ck_assert_ptr_eq(clt_module_get_parameter(m, "0.weight"), h.p);
    ck_assert_ptr_eq(clt_tensor_device(h.p), clt_device_cpu());
    ck_assert_int_eq(clt_tensor_dtype(h.p), CLT_F32);
    double *after = test_values(h.p);
    for (int k = 0; k < 8 * 16; k++)
        ck_assert_double_eq(after[k], before[k]);
    free(after), free(before);
    clt_tensor_release(h.p);
    clt_module_release(m);
}
END_TEST

/* ---- the cpu device's pool of threads --------------------------------------------------------- */

typedef struct cover {
    unsigned char *seen; /* how often each item ran */
    pthread_t caller;
    atomic_bool elsewhere; /* a part ran on another thread */
    atomic_int parts;
    bool nested; /* each part runs an inner loop over 10 items of `inner` */
    bool await;  /* the caller's parts wait for a worker to run one */
    unsigned char *inner;
} cover;

static void cover_part(const void *call, size_t lo, size_t hi)
{
    cover *c = (cover *)call;
    atomic_fetch_add(&c->parts, 1);
    if (!pthread_equal(pthread_self(), c->caller))
        atomic_store(&c->elsewhere, true);
    else if (c->await) /* the caller's part waits (for seconds at most) for a worker to join */
        for (long i = 0; i < 20000000 && !atomic_load(&c->elsewhere); i++)
            sched_yield();
    for (size_t i = lo; i < hi; i++) {
        c->seen[i]++;
        if (c->nested) { /* runs here alone, in this part's thread */
            cover in = {.seen = c->inner + i * 10, .caller = pthread_self()};
            atomic_init(&in.elsewhere, false);
            atomic_init(&in.parts, 0);
            clt__host_parallel(10, 1 << 20, cover_part, &in);
            if (atomic_load(&in.parts) != 1 || atomic_load(&in.elsewhere))
                c->seen[i] = 100; /* reported by the caller's check */
        }
    }
}

/* Runs a loop over n items of `cost` each; asserts each ran once and returns whether a part ran
 * on another thread than the caller (with `await`, the caller's parts waiting for one to). */
static bool cover_run(size_t n, size_t cost, bool nested, bool await)
{
    cover c = {.seen = calloc(n ? n : 1, 1),
               .caller = pthread_self(),
               .nested = nested,
               .await = await,
               .inner = nested ? calloc(n * 10, 1) : NULL};
    atomic_init(&c.elsewhere, false);
    atomic_init(&c.parts, 0);
    ck_assert_ptr_nonnull(c.seen);
    clt__host_parallel(n, cost, cover_part, &c);
    for (size_t i = 0; i < n; i++)
        ELEMENT_CHECK(c.seen[i] == 1, "item %zu of %zu ran %d times", i, n, c.seen[i]);
    for (size_t i = 0; nested && i < n * 10; i++)
        ELEMENT_CHECK(c.inner[i] == 1, "inner item %zu ran %d times", i, c.inner[i]);
    free(c.seen);
    free(c.inner);
    return atomic_load(&c.elsewhere);
}

START_TEST(test_threads_pool_covers_once)
{
    const size_t sizes[] = {0, 1, 2, 3, 7, 1000, 100003};
    const int counts[] = {1, 2, 3, 5, 4};
    for (size_t t = 0; t < sizeof counts / sizeof *counts; t++) {
        ck_assert_int_eq(clt_set_num_threads(counts[t]), CLT_OK);
        ck_assert_int_eq(clt_get_num_threads(), counts[t]);
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            /* a large loop is split when there are workers (the caller's part waits for one to
             * take another part); one item never is */
            bool split = counts[t] > 1 && sizes[k] >= 2;
            ck_assert_msg(cover_run(sizes[k], 1 << 20, false, split) == split,
                          "%d threads, %zu items", counts[t], sizes[k]);
            cover_run(sizes[k], 1 << 20, false, false); /* without waiting: any thread may */
            /* too little work to split: at most 1000 items of 8 operations */
            ck_assert(!cover_run(sizes[k] < 1000 ? sizes[k] : 1000, 8, false, false));
        }
        ck_assert(cover_run(64, 1 << 20, true, counts[t] > 1) == (counts[t] > 1));
    }
}
END_TEST

typedef struct caller_job {
    bool ok;
} caller_job;

static void *caller_thread(void *arg)
{
    caller_job *j = arg;
    for (int r = 0; r < 200; r++) {
        unsigned char *seen = calloc(5000, 1);
        cover c = {.seen = seen, .caller = pthread_self()};
        atomic_init(&c.elsewhere, false);
        atomic_init(&c.parts, 0);
        clt__host_parallel(5000, 1 << 12, cover_part, &c);
        for (int i = 0; i < 5000; i++)
            j->ok = j->ok && seen[i] == 1;
        free(seen);
    }
    return NULL;
}

/* Loops started from several threads at once: one holds the pool, the others run alone. */
START_TEST(test_threads_pool_several_callers)
{
    caller_job jobs[4];
    pthread_t threads[4];
    ck_assert_int_eq(clt_set_num_threads(3), CLT_OK);
    for (int i = 0; i < 4; i++) {
        jobs[i].ok = true;
        ck_assert_int_eq(pthread_create(&threads[i], NULL, caller_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
        ck_assert_msg(jobs[i].ok, "caller %d missed or repeated an item", i);
    }
}
END_TEST

START_TEST(test_threads_count_refused)
{
    ck_assert_int_eq(clt_set_num_threads(2), CLT_OK);
    const int bad[] = {0, -1, 65};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char value[16];
        ck_assert_int_eq(clt_set_num_threads(bad[i]), CLT_ERR_INVALID_ARGUMENT);
        ck_assert_error_has("clt_set_num_threads");
        snprintf(value, sizeof value, "%d", bad[i]);
        ck_assert_error_has(value);
        ck_assert_int_eq(clt_get_num_threads(), 2);
    }
}
END_TEST

static void count_warning(clt_log_level level, const char *message, void *user)
{
    if (level == CLT_LOG_WARN && strstr(message, "CLT_NUM_THREADS=\"two\""))
        ++*(int *)user;
}

/* A CLT_NUM_THREADS that is no count is ignored with a warning; one that is sets the count. Each
 * test runs in a process of its own, where the count is first chosen. */
START_TEST(test_threads_count_from_environment)
{
    int warnings = 0;
    clt_set_log_callback(count_warning, &warnings, CLT_LOG_WARN);
    setenv("CLT_NUM_THREADS", _i ? "3" : "two", 1);
    int n = clt_get_num_threads();
    clt_set_log_callback(NULL, NULL, CLT_LOG_WARN);
    unsetenv("CLT_NUM_THREADS");
    if (_i) {
        ck_assert_int_eq(n, 3);
        ck_assert_int_eq(warnings, 0);
    } else {
        ck_assert_int_ge(n, 1);
        ck_assert_int_le(n, 64);
        ck_assert_int_eq(warnings, 1);
    }
}
END_TEST

/* Every cpu kernel that splits its loop, on inputs large enough to split: f32 and f64. by_blas[i]
 * is set for the results that go through OpenBLAS's products (the convolution and the input's
 * gradient), whose sums depend on its thread count on some CPUs (an AVX2 EPYC; not an AVX-512
 * Xeon or EPYC). */
static void split_kernels(clt_dtype dt, clt_tensor **out, bool *by_blas, int *n)
{
    clt_device *cpu = clt_device_cpu();
    clt_manual_seed(7);
    clt_tensor *a = clt_tensor_randn(CLT_SHAPE(64, 1, 300), dt, cpu);
    clt_tensor *b = clt_tensor_randn(CLT_SHAPE(1, 50, 300), dt, cpu);
    clt_tensor *img = clt_tensor_randn(CLT_SHAPE(2, 8, 64, 64), dt, cpu);
    clt_tensor *w = clt_tensor_randn(CLT_SHAPE(16, 8, 3, 3), dt, cpu);
    clt_tensor *dw = clt_tensor_randn(CLT_SHAPE(16, 1, 3, 3), dt, cpu);
    clt_tensor *q = clt_tensor_randn(CLT_SHAPE(2, 4, 64, 32), dt, cpu);
    clt_tensor *table = clt_tensor_randn(CLT_SHAPE(100, 512), dt, cpu);
    int64_t ids[64 * 30];
    for (int i = 0; i < 64 * 30; i++)
        ids[i] = (i * 37) % 100;
    clt_tensor *idx = clt_tensor_from_data(CLT_SHAPE(64, 30), ids, CLT_I64, cpu);
    clt_tensor *wide = clt_tensor_randn(CLT_SHAPE(300, 500), dt, cpu),
               *t = clt_transpose(wide, 0, 1);
    ck_assert_int_eq(clt_tensor_set_requires_grad(img, true), CLT_OK);
    clt_pool2d_options mp = clt_pool2d_options_default(3, 3),
                       ap = clt_pool2d_options_default(3, 3);
    mp.stride[0] = mp.stride[1] = 2, mp.padding[0] = mp.padding[1] = 1;
    ap.stride[0] = ap.stride[1] = 2, ap.ceil_mode = true;
    clt_conv2d_options co = clt_conv2d_options_default(), cd = clt_conv2d_options_default();
    co.padding[0] = co.padding[1] = 1;
    cd.padding[0] = cd.padding[1] = 1, cd.groups = 8, cd.stride[0] = cd.stride[1] = 2;
    clt_tensor *indices = NULL;
    *n = 0;
    out[(*n)++] = clt_add(a, b);       /* broadcast rows */
    out[(*n)++] = clt_mul(wide, wide); /* contiguous */
    out[(*n)++] = clt_contiguous(t);   /* tiled transpose */
    out[(*n)++] = clt_tensor_to_dtype(wide, dt == CLT_F32 ? CLT_F64 : CLT_F32); /* cast */
    out[(*n)++] = clt_max_pool2d(img, &mp, &indices);
    out[(*n)++] = indices;
    out[(*n)++] = clt_avg_pool2d(img, &ap);
    clt_tensor *conv = clt_conv2d(img, w, NULL, &co), *depth = clt_conv2d(img, dw, NULL, &cd);
    by_blas[*n] = true;
    out[(*n)++] = conv; /* im2col */
    out[(*n)++] = depth;
    out[(*n)++] = clt_scaled_dot_product_attention(q, q, q, NULL);
    out[(*n)++] = clt_embedding(idx, table); /* index_select */
    clt_tensor *sc = clt_sum(conv, NULL, 0, false), *sd = clt_sum(depth, NULL, 0, false);
    clt_tensor *loss = clt_add(sc, sd);
    clt_tensor *pooled = clt_sum(out[4], NULL, 0, false), *total = clt_add(loss, pooled);
    ck_assert_msg(total && clt_backward(total, NULL, false) == CLT_OK, "%s", clt_last_error());
    by_blas[*n] = true;
    out[(*n)++] = clt_tensor_grad(img); /* col2im, pool backward */
    for (int i = 0; i < *n; i++)
        ck_assert_msg(out[i] != NULL, "result %d: %s", i, clt_last_error());
    clt_tensor_release(total), clt_tensor_release(pooled), clt_tensor_release(loss);
    clt_tensor_release(sd), clt_tensor_release(sc);
    clt_tensor *inputs[] = {a, b, img, w, dw, q, table, idx, wide, t};
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++)
        clt_tensor_release(inputs[i]);
}

/* a and b of one dtype (f32 or f64) within tol relative to max(1, |b|), element by element. */
static void assert_near(clt_tensor *a, clt_tensor *b, double tol)
{
    clt_tensor *a64 = clt_tensor_to_dtype(a, CLT_F64), *b64 = clt_tensor_to_dtype(b, CLT_F64);
    ck_assert_int_eq(clt_tensor_numel(a), clt_tensor_numel(b));
    double *x = test_bytes(a64), *y = test_bytes(b64);
    for (int64_t i = 0; i < clt_tensor_numel(b); i++)
        ELEMENT_CHECK(fabs(x[i] - y[i]) <= tol * fmax(1.0, fabs(y[i])),
                      "element %lld: %.17g on 1 thread, %.17g on 4", (long long)i, x[i], y[i]);
    free(x), free(y);
    clt_tensor_release(a64), clt_tensor_release(b64);
}

START_TEST(test_threads_kernels_same_on_any_count)
{
    const clt_dtype dts[] = {CLT_F32, CLT_F64};
    for (size_t d = 0; d < 2; d++) {
        clt_tensor *one[16], *four[16];
        bool by_blas[16] = {false};
        int n1, n4;
        ck_assert_int_eq(clt_set_num_threads(1), CLT_OK);
        split_kernels(dts[d], one, by_blas, &n1);
        ck_assert_int_eq(clt_set_num_threads(4), CLT_OK);
        split_kernels(dts[d], four, by_blas, &n4);
        ck_assert_int_eq(n1, n4);
        for (int i = 0; i < n1; i++) {
            if (by_blas[i])
                assert_near(one[i], four[i], dts[d] == CLT_F32 ? 1e-5 : 1e-12);
            else
                test_assert_same_bytes(one[i], four[i]);
            clt_tensor_release(one[i]);
            clt_tensor_release(four[i]);
        }
    }
}
END_TEST

Suite *suite_threads(void)
{
    Suite *s = suite_create("threads");
    TCase *tc = test_case("threads", 600);
    tcase_add_test(tc, test_threads_train_per_device);
    ADD_DEVICE_TEST(tc, test_threads_shared_read_only);
    ADD_DEVICE_TEST(tc, test_threads_move_while_retained);
    tcase_add_test(tc, test_threads_pool_covers_once);
    tcase_add_test(tc, test_threads_pool_several_callers);
    tcase_add_test(tc, test_threads_count_refused);
    tcase_add_loop_test(tc, test_threads_count_from_environment, 0, 2);
    tcase_add_test(tc, test_threads_kernels_same_on_any_count);
    suite_add_tcase(s, tc);
    return s;
}
