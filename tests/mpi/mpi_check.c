/* The distributed-training checks, run by ctest under `mpirun -np 2` (one process per rank, each
 * on cpu or, with CLT_SUBDEVICES=2, on its own PoCL sub-device gpu:(local rank)):
 *   train     N steps of Adam over 2 ranks, each on its half of every batch with the gradients
 *             averaged, end with the parameters one process gets training on the whole batch
 *             (within 1e-5 relative), the same on every rank; rank 1 starts from other values,
 *             which clt_dist_sync_module replaces by rank 0's; on cpu the gradients are views
 *             of one tensor, one after the other
 *   overlap   the same with clt_dist_backward, buckets averaged on a thread of their own
 *   overlap_single  the same with MPI on the main thread only (MPI_Init)
 *   backward_failure  clt_dist_backward failing on rank 1 fails on every rank, no gradient kept
 *   errors    NULL arguments, and f16 parameters, which neither way of averaging takes
 *   unused    a parameter without a gradient on one rank counts as zeros there, both ways
 *   sampler   the loader's shards over the ranks hold every item exactly once per epoch
 *   mismatch  ranks holding different models: clt_dist_sync_module fails on every rank
 *   badinit   a rank that cannot initialise (CLT_VISIBLE_DEVICES names no device there): every
 *             rank's clt_dist_init fails with that rank's error, none waits for ever
 *   average_failure  (mpi_fault_check, built with the library's objects and MPI_CHECK_FAULTS)
 *             each allocation of averaging on rank 1 failing in turn fails the average on
 *             every rank, naming rank 1 on rank 0, and the next average succeeds
 * Exit status 0 when the check holds on this rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor.h>
#include <cltensor/distributed.h>
#ifdef MPI_CHECK_FAULTS
#include "core/core.h" /* clt__fault_inject */
#endif

enum { ROWS = 16, IN = 6, HIDDEN = 12, OUT = 3, STEPS = 5, ITEMS = 24 };

static int fail(int rank, const char *what)
{
    fprintf(stderr, "mpi_check (rank %d): %s: %s\n", rank, what, clt_last_error());
    return 1;
}

static clt_module *mlp(uint64_t seed, int64_t hidden)
{
    clt_manual_seed(seed);
    clt_module *parts[3] = {clt_nn_linear(IN, hidden, true), clt_nn_tanh(),
                            clt_nn_linear(hidden, OUT, true)};
    clt_module *m = parts[0] && parts[1] && parts[2] ? clt_nn_sequential(parts, 3) : NULL;
    for (int k = 0; k < 3; k++)
        clt_module_release(parts[k]);
    return m;
}

/* Rows first ... first+n-1 of the fixed batch, on dev. */
static void batch(clt_device *dev, int first, int n, clt_tensor **x, clt_tensor **y)
{
    float xv[ROWS * IN];
    int64_t yv[ROWS];
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < IN; c++)
            xv[r * IN + c] = (float)sin(0.7 * r + 1.3 * c);
        yv[r] = r % OUT;
    }
    clt_tensor *hx = clt_tensor_from_data(CLT_SHAPE(n, IN), xv + first * IN, CLT_F32, clt_device_cpu());
    clt_tensor *hy = clt_tensor_from_data(CLT_SHAPE(n), yv + first, CLT_I64, clt_device_cpu());
    *x = clt_tensor_to(hx, dev);
    *y = clt_tensor_to(hy, dev);
    clt_tensor_release(hx);
    clt_tensor_release(hy);
}

static bool overlap; /* clt_dist_backward instead of clt_backward + clt_dist_average_gradients */

/* One step; with d, the gradients are averaged over the ranks before the update. */
static bool step(clt_module *m, clt_optimizer *opt, clt_tensor *x, clt_tensor *y, clt_dist *d)
{
    clt_optim_zero_grad(opt);
    clt_tensor *out = clt_module_forward(m, x);
    clt_tensor *loss = out ? clt_cross_entropy(out, y, NULL) : NULL;
    bool ok = loss &&
              (d && overlap ? clt_dist_backward(d, m, loss) == CLT_OK
                            : clt_backward(loss, NULL, false) == CLT_OK &&
                                  (!d || clt_dist_average_gradients(d, m) == CLT_OK)) &&
              clt_optim_step(opt) == CLT_OK;
    clt_tensor_release(loss);
    clt_tensor_release(out);
    return ok;
}

/* The parameters as floats (4 tensors), into v; returns how many. */
static int parameters(clt_module *m, float *v, int room)
{
    static const char *const names[4] = {"0.weight", "0.bias", "2.weight", "2.bias"};
    int n = 0;
    for (int i = 0; i < 4; i++) {
        clt_tensor *p = clt_module_get_parameter(m, names[i]);
        int64_t k = clt_tensor_numel(p);
        if (!p || n + k > room || clt_tensor_copy_to_host(p, v + n, (size_t)k * sizeof *v) != CLT_OK)
            return -1;
        n += (int)k;
    }
    return n;
}

static int check_train(clt_dist *d)
{
    int rank = clt_dist_rank(d), size = clt_dist_size(d), share = ROWS / size;
    clt_device *dev = clt_dist_device(d);
    clt_module *m = mlp(rank == 0 ? 1 : 99, HIDDEN); /* rank 1 starts elsewhere */
    clt_optimizer *opt;
    clt_tensor *x, *y;
    float mine[512], want[512], theirs[512];
    if (!m || clt_module_to(m, dev) != CLT_OK)
        return fail(rank, "the model");
    if (clt_dist_sync_module(d, m) != CLT_OK)
        return fail(rank, "clt_dist_sync_module");
    clt_adam_options adam = clt_adam_options_default();
    adam.lr = 0.05;
    opt = clt_optim_adam_module(m, &adam);
    batch(dev, rank * share, share, &x, &y);
    for (int s = 0; s < STEPS; s++)
        if (!step(m, opt, x, y, d))
            return fail(rank, "a distributed step");
    int n = parameters(m, mine, 512);
    if (n < 0)
        return fail(rank, "reading the parameters");
    /* 0.bias (48 bytes) and 2.weight (144) share a bucket of 200 bytes: on cpu, where the data
     * can be seen, their averages are views of one tensor, one after the other */
    if (!overlap && dev == clt_device_cpu()) {
        clt_tensor *bias = clt_module_get_parameter(m, "0.bias");
        clt_tensor *gb = clt_tensor_grad(bias);
        clt_tensor *gw = clt_tensor_grad(clt_module_get_parameter(m, "2.weight"));
        const float *b = gb ? clt_tensor_data(gb) : NULL, *w = gw ? clt_tensor_data(gw) : NULL;
        if (!b || !w || !clt_tensor_is_contiguous(gw) || w != b + clt_tensor_numel(bias)) {
            fprintf(stderr, "mpi_check (rank %d): 2.weight's averaged gradient (%p) does not "
                    "follow 0.bias's (%p) in their bucket\n", rank, (void *)w, (void *)b);
            return 1;
        }
        clt_tensor_release(gb);
        clt_tensor_release(gw);
    }
    /* every rank the same as rank 0 */
    memcpy(theirs, mine, sizeof theirs);
    MPI_Bcast(theirs, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    for (int k = 0; k < n; k++)
        if (theirs[k] != mine[k]) {
            fprintf(stderr, "mpi_check (rank %d): parameter %d: %.9g, rank 0 has %.9g\n", rank, k,
                    mine[k], theirs[k]);
            return 1;
        }
    /* one process, the whole batch, from rank 0's start */
    clt_module *ref = mlp(1, HIDDEN);
    clt_optimizer *ropt;
    clt_tensor *fx, *fy;
    if (!ref || clt_module_to(ref, dev) != CLT_OK)
        return fail(rank, "the reference model");
    ropt = clt_optim_adam_module(ref, &adam);
    batch(dev, 0, ROWS, &fx, &fy);
    for (int s = 0; s < STEPS; s++)
        if (!step(ref, ropt, fx, fy, NULL))
            return fail(rank, "a reference step");
    if (parameters(ref, want, 512) != n)
        return fail(rank, "reading the reference");
    for (int k = 0; k < n; k++)
        if (fabsf(mine[k] - want[k]) > 1e-5f * fmaxf(1.0f, fabsf(want[k]))) {
            fprintf(stderr, "mpi_check (rank %d): parameter %d: %.9g over %d ranks, %.9g in one "
                    "process\n", rank, k, mine[k], size, want[k]);
            return 1;
        }
    printf("mpi_check train%s (rank %d of %d, %s): %d parameters after %d steps match one "
           "process\n", overlap ? " with overlap" : "", rank, size, clt_device_name(dev), n, STEPS);
    clt_tensor_release(fx), clt_tensor_release(fy), clt_tensor_release(x), clt_tensor_release(y);
    clt_optim_free(ropt), clt_optim_free(opt);
    clt_module_release(ref), clt_module_release(m);
    return 0;
}

static int check_sampler(clt_dist *d)
{
    int rank = clt_dist_rank(d), size = clt_dist_size(d);
    float xv[ITEMS];
    int64_t seen[ITEMS], all[ITEMS * 8];
    for (int k = 0; k < ITEMS; k++)
        xv[k] = (float)k;
    clt_tensor *x = clt_tensor_from_data(CLT_SHAPE(ITEMS), xv, CLT_F32, clt_device_cpu());
    clt_dataset *ds = clt_dataset_tensors(&x, 1);
    clt_loader *l = clt_loader_new(ds, &(clt_loader_options){.batch_size = 5, .shuffle = true,
                                                             .seed = 3, .device = clt_dist_device(d),
                                                             .num_replicas = size, .rank = rank});
    if (!l || size > 8 || ITEMS % size)
        return fail(rank, "the loader");
    for (int epoch = 0; epoch < 2; epoch++) {
        clt_tensor *b;
        int n = 0;
        while (clt_loader_next(l, &b) == CLT_OK) {
            float v[5];
            int64_t rows = clt_tensor_numel(b);
            if (clt_tensor_copy_to_host(b, v, sizeof v) != CLT_OK)
                return fail(rank, "a batch");
            for (int64_t r = 0; r < rows && n < ITEMS; r++)
                seen[n++] = (int64_t)v[r];
            clt_tensor_release(b);
        }
        if (n != ITEMS / size) {
            fprintf(stderr, "mpi_check (rank %d): %d items in epoch %d, want %d\n", rank, n, epoch,
                    ITEMS / size);
            return 1;
        }
        MPI_Allgather(seen, n, MPI_INT64_T, all, n, MPI_INT64_T, MPI_COMM_WORLD);
        int count[ITEMS] = {0};
        for (int k = 0; k < ITEMS; k++)
            count[all[k]]++;
        for (int k = 0; k < ITEMS; k++)
            if (count[k] != 1) {
                fprintf(stderr, "mpi_check (rank %d): item %d seen %d times in epoch %d\n", rank,
                        k, count[k], epoch);
                return 1;
            }
    }
    printf("mpi_check sampler (rank %d of %d): every item once per epoch over the ranks\n", rank,
           size);
    clt_loader_free(l);
    clt_dataset_release(ds);
    clt_tensor_release(x);
    return 0;
}

/* A backward that fails on rank 1 (its loss records nothing) fails on every rank, and no
 * gradient is left on rank 0. */
static int check_backward_failure(clt_dist *d)
{
    int rank = clt_dist_rank(d);
    clt_device *dev = clt_dist_device(d);
    clt_module *m = mlp(1, HIDDEN);
    clt_tensor *x, *y;
    if (!m || clt_module_to(m, dev) != CLT_OK)
        return fail(rank, "the model");
    batch(dev, 0, ROWS, &x, &y);
    clt_tensor *out = clt_module_forward(m, x);
    clt_tensor *loss = out ? clt_cross_entropy(out, y, NULL) : NULL;
    clt_tensor *used = rank == 1 && loss ? clt_tensor_detach(loss) : clt_tensor_retain(loss);
    clt_status st = clt_dist_backward(d, m, used);
    clt_tensor *g = clt_tensor_grad(clt_module_get_parameter(m, "0.weight"));
    int result = st == CLT_OK || g != NULL ||
                 (rank == 0 && !strstr(clt_last_error(), "rank 1 failed"));
    if (result)
        fprintf(stderr, "mpi_check (rank %d): status %d, gradient %p, \"%s\"\n", rank, st,
                (void *)g, clt_last_error());
    else
        printf("mpi_check backward_failure (rank %d): %s\n", rank, clt_last_error());
    clt_tensor_release(g), clt_tensor_release(used), clt_tensor_release(loss);
    clt_tensor_release(out), clt_tensor_release(x), clt_tensor_release(y);
    clt_module_release(m);
    return result;
}

/* A parameter that has no gradient on one rank counts as zeros there: rank 0's loss is the
 * model's cross entropy, rank 1's the sum of 0.weight alone (a gradient of ones for it, none
 * for the other parameters), so that the averages are (g + 1) / 2 for 0.weight and g / 2 for
 * the rest, g rank 0's own gradient; with clt_backward + clt_dist_average_gradients, then with
 * clt_dist_backward (buckets of 200 bytes, so that some buckets have no gradient at all on
 * rank 1). */
static int check_unused(clt_dist *d)
{
    static const char *const names[4] = {"0.weight", "0.bias", "2.weight", "2.bias"};
    int rank = clt_dist_rank(d);
    clt_device *dev = clt_dist_device(d);
    clt_module *m = mlp(1, HIDDEN);
    clt_tensor *x, *y;
    float g[512], got[512];
    if (!m || clt_module_to(m, dev) != CLT_OK)
        return fail(rank, "the model");
    batch(dev, 0, ROWS, &x, &y);
    for (int way = 0; way < 2; way++) {
        int n = 0, at = 0;
        clt_tensor *out = clt_module_forward(m, x);
        clt_tensor *ce = out ? clt_cross_entropy(out, y, NULL) : NULL;
        /* rank 0's own gradient, from the same loss */
        if (!ce || clt_backward(ce, NULL, true) != CLT_OK)
            return fail(rank, "the reference backward");
        for (int i = 0; i < 4; i++) {
            clt_tensor *p = clt_module_get_parameter(m, names[i]), *pg = clt_tensor_grad(p);
            int64_t k = clt_tensor_numel(p);
            if (!pg || clt_tensor_copy_to_host(pg, g + n, (size_t)k * sizeof *g) != CLT_OK)
                return fail(rank, "reading the gradient");
            n += (int)k;
            clt_tensor_release(pg);
            clt_tensor_set_grad(p, NULL);
        }
        MPI_Bcast(g, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        clt_tensor *loss = rank == 0 ? clt_tensor_retain(ce)
                                     : clt_sum(clt_module_get_parameter(m, "0.weight"), NULL, 0, false);
        clt_status st = way == 0 ? clt_backward(loss, NULL, false) : clt_dist_backward(d, m, loss);
        if (st != CLT_OK || (way == 0 && clt_dist_average_gradients(d, m) != CLT_OK))
            return fail(rank, way == 0 ? "clt_dist_average_gradients" : "clt_dist_backward");
        for (int i = 0; i < 4; i++) {
            clt_tensor *p = clt_module_get_parameter(m, names[i]), *pg = clt_tensor_grad(p);
            int64_t k = clt_tensor_numel(p);
            if (!pg || clt_tensor_copy_to_host(pg, got + at, (size_t)k * sizeof *got) != CLT_OK)
                return fail(rank, "reading the average");
            for (int64_t e = 0; e < k; e++, at++) {
                float want = (g[at] + (i == 0 ? 1.0f : 0.0f)) / 2;
                if (fabsf(got[at] - want) > 1e-6f * fmaxf(1.0f, fabsf(want))) {
                    fprintf(stderr, "mpi_check (rank %d): %s element %lld averaged to %.9g, want "
                            "%.9g (way %d)\n", rank, names[i], (long long)e, got[at], want, way);
                    return 1;
                }
            }
            clt_tensor_release(pg);
            clt_tensor_set_grad(p, NULL);
        }
        clt_tensor_release(loss), clt_tensor_release(ce), clt_tensor_release(out);
    }
    printf("mpi_check unused (rank %d): a parameter without a gradient counts as zeros, both "
           "ways\n", rank);
    clt_tensor_release(x), clt_tensor_release(y);
    clt_module_release(m);
    return 0;
}

/* Bad input: a NULL handle or module is an error on the calling rank; parameters that are not
 * f32 or f64 make both ways of averaging fail on every rank with CLT_ERR_DTYPE. */
static int check_errors(clt_dist *d)
{
    int rank = clt_dist_rank(d);
    clt_module *m = mlp(1, HIDDEN), *half = mlp(1, HIDDEN);
    if (!m || !half || clt_module_to_dtype(half, CLT_F16) != CLT_OK)
        return fail(rank, "the models");
    if (clt_dist_sync_module(NULL, m) != CLT_ERR_INVALID_ARGUMENT ||
        clt_dist_average_gradients(NULL, m) != CLT_ERR_INVALID_ARGUMENT ||
        clt_dist_backward(NULL, m, NULL) != CLT_ERR_INVALID_ARGUMENT || clt_dist_rank(NULL) != -1 ||
        clt_dist_device(NULL) != NULL)
        return fail(rank, "a NULL handle");
    if (clt_dist_sync_module(d, NULL) != CLT_ERR_INVALID_ARGUMENT ||
        !strstr(clt_last_error(), "module is NULL"))
        return fail(rank, "a NULL module");
    if (clt_dist_average_gradients(d, half) != CLT_ERR_DTYPE ||
        !strstr(clt_last_error(), "a parameter is f16"))
        return fail(rank, "an f16 model (average)");
    /* (matrix products take no f16: a loss straight from a parameter) */
    clt_tensor *loss = clt_sum(clt_module_get_parameter(half, "0.bias"), NULL, 0, false);
    if (!loss || clt_dist_backward(d, half, loss) != CLT_ERR_DTYPE ||
        !strstr(clt_last_error(), "a parameter is f16"))
        return fail(rank, "an f16 model (backward)");
    printf("mpi_check errors (rank %d): %s\n", rank, clt_last_error());
    clt_tensor_release(loss);
    clt_module_release(half), clt_module_release(m);
    return 0;
}

#ifdef MPI_CHECK_FAULTS
static int clear_grad(const char *name, clt_tensor *p, void *user)
{
    (void)name, (void)user;
    return clt_tensor_set_grad(p, NULL);
}

/* clt_dist_average_gradients with rank 1's k-th allocation of `kind` failing, k = 1, 2, ...
 * until one succeeds on every rank: each failure fails every rank (rank 0 naming rank 1), and
 * the average after it agrees on both ranks. */
static int check_average_failure(clt_dist *d)
{
    int rank = clt_dist_rank(d);
    clt_device *dev = clt_dist_device(d);
    clt__alloc_kind kind = strcmp(clt_device_name(dev), "cpu") ? CLT__DEVICE : CLT__HOST;
    clt_module *m = mlp(1, HIDDEN);
    clt_tensor *x, *y;
    static const char *const names[4] = {"0.weight", "0.bias", "2.weight", "2.bias"};
    float mine[IN * HIDDEN], other[IN * HIDDEN];
    long k = 1;
    int bad = 0;
    if (!m || clt_module_to(m, dev) != CLT_OK)
        return fail(rank, "the model");
    batch(dev, rank * (ROWS / 2), ROWS / 2, &x, &y);
    for (;; k++) {
        clt_module_foreach_parameter(m, clear_grad, NULL);
        clt_tensor *out = clt_module_forward(m, x);
        clt_tensor *loss = out ? clt_cross_entropy(out, y, NULL) : NULL;
        if (!loss || clt_backward(loss, NULL, false) != CLT_OK)
            return fail(rank, "the backward");
        clt_tensor_release(loss), clt_tensor_release(out);
        if (rank == 1)
            clt__fault_inject(kind, k);
        clt_status st = clt_dist_average_gradients(d, m);
        clt__fault_inject(kind, 0);
        if (st == CLT_OK) /* (on every rank alike: the status is agreed) */
            break;
        if (rank == 0 ? !strstr(clt_last_error(), "rank 1")
                      : st != CLT_ERR_OUT_OF_MEMORY && st != CLT_ERR_DEVICE_OUT_OF_MEMORY) {
            fprintf(stderr, "mpi_check (rank %d): allocation %ld: status %d, \"%s\"\n", rank, k,
                    st, clt_last_error());
            bad = 1; /* (the other rank goes on: no return before the loop ends) */
        }
    }
    if (k < 3) /* the staging, the averages' tensor: at least two allocations failed in turn */
        return fail(rank, "fewer allocations in averaging than expected");
    for (int i = 0; i < 4; i++) { /* every bucket averaged: the same gradients on both ranks */
        clt_tensor *p = clt_module_get_parameter(m, names[i]), *g = clt_tensor_grad(p);
        size_t bytes = (size_t)clt_tensor_numel(p) * sizeof *mine;
        if (!g || clt_tensor_copy_to_host(g, mine, bytes) != CLT_OK)
            return fail(rank, "reading the average");
        clt_tensor_release(g);
        memcpy(other, mine, bytes);
        MPI_Bcast(other, (int)(bytes / sizeof *mine), MPI_FLOAT, 0, MPI_COMM_WORLD);
        if (memcmp(mine, other, bytes) != 0) {
            fprintf(stderr, "mpi_check (rank %d): %s's average differs between the ranks after "
                    "%ld failures\n", rank, names[i], k - 1);
            bad = 1;
        }
    }
    if (!bad)
        printf("mpi_check average_failure (rank %d): %ld allocations failed in turn\n", rank,
               k - 1);
    clt_tensor_release(x), clt_tensor_release(y);
    clt_module_release(m);
    return bad;
}
#endif

static int check_mismatch(clt_dist *d)
{
    int rank = clt_dist_rank(d);
    clt_module *m = mlp(1, rank == 0 ? HIDDEN : HIDDEN + 1);
    if (!m || clt_module_to(m, clt_dist_device(d)) != CLT_OK)
        return fail(rank, "the model");
    clt_status st = clt_dist_sync_module(d, m);
    clt_module_release(m);
    if (st != CLT_ERR_INVALID_ARGUMENT ||
        !strstr(clt_last_error(), "the model differs between ranks") ||
        !strstr(clt_last_error(), "of rank 1 are not rank 0's")) {
        fprintf(stderr, "mpi_check (rank %d): status %d, \"%s\"\n", rank, st, clt_last_error());
        return 1;
    }
    printf("mpi_check mismatch (rank %d): %s\n", rank, clt_last_error());
    return 0;
}

int main(int argc, char **argv)
{
    int rank, result, provided;
    const char *mode = argc > 1 ? argv[1] : "";
    /* overlap: MPI from a second thread, so the buckets are averaged during the backward;
     * overlap_single: MPI on the main thread only, so as each bucket completes */
    if (!strcmp(mode, "overlap") || !strcmp(mode, "backward_failure"))
        MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    overlap = !strcmp(mode, "overlap") || !strcmp(mode, "overlap_single");
    /* small buckets: several per model */
    clt_dist *d = clt_dist_init(MPI_COMM_WORLD, &(clt_dist_options){.bucket_bytes = 200, .device_per_rank = true});
    if (!strcmp(mode, "badinit")) {
        /* rank 1 has no device; every rank's init must fail, naming rank 1 */
        result = d == NULL && strstr(clt_last_error(), rank == 1 ? "CLT_VISIBLE_DEVICES"
                                                                  : "rank 1 failed")
                     ? 0 : 1;
        if (result)
            fprintf(stderr, "mpi_check (rank %d): init gave %p, \"%s\"\n", rank, (void *)d,
                    clt_last_error());
        else
            printf("mpi_check badinit (rank %d): %s\n", rank, clt_last_error());
    } else if (!d) {
        result = fail(rank, "clt_dist_init");
    } else if (!strcmp(mode, "train") || overlap) {
        result = check_train(d);
    } else if (!strcmp(mode, "errors")) {
        result = check_errors(d);
    } else if (!strcmp(mode, "unused")) {
        result = check_unused(d);
    } else if (!strcmp(mode, "backward_failure")) {
        result = check_backward_failure(d);
    } else if (!strcmp(mode, "sampler")) {
        result = check_sampler(d);
    } else if (!strcmp(mode, "mismatch")) {
        result = check_mismatch(d);
#ifdef MPI_CHECK_FAULTS
    } else if (!strcmp(mode, "average_failure")) {
        result = check_average_failure(d);
#endif
    } else {
        fprintf(stderr, "usage: mpi_check train|overlap|overlap_single|backward_failure|errors|unused|sampler|mismatch|badinit\n");
        result = 2;
    }
    if (d)
        clt_device_synchronize(clt_dist_device(d));
    clt_dist_free(d);
    MPI_Finalize();
    return result;
}
