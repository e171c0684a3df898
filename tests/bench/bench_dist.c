/* Distributed data-parallel training over MPI: steps per second of the digits MLP and CNN (batch
 * 64 of 8x8 images) on 2 ranks, each on its own device (two PoCL sub-devices with
 * CLT_SUBDEVICES=2) with half of every batch and the gradients averaged by clt_dist_backward,
 * against rank 0 alone taking the whole batch in the same run; the ceiling of that speed-up,
 * every rank stepping its half of the batch at the same time without averaging, timed by the
 * slowest rank (what the devices give when they run at once: on two halves of one CPU below 2,
 * the cores sharing caches, memory and the host machine); and the time of averaging the gradients
 * (clt_dist_average_gradients) against memcpy of the same bytes, as effective GB/s.
 * Started without mpirun it starts itself under `mpirun -np 2`. Rank 0 prints one JSON line per
 * case: medians of REPEATS runs of STEPS steps after a warm-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cltensor.h>
#include <cltensor/distributed.h>

#include "../../samples/digits_models.h"
#include "bench_util.h"

enum { BATCH = 64, STEPS = 20, REPEATS = 5 };

static void must(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "bench_dist: %s: %s\n", what, clt_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Rows first ... first+n-1 of a fixed batch of images and labels, on dev. */
static void batch(clt_device *dev, int first, int n, clt_tensor **x, clt_tensor **y)
{
    static float xv[BATCH * 64];
    static int64_t yv[BATCH];
    for (int r = 0; r < BATCH; r++) {
        for (int c = 0; c < 64; c++)
            xv[r * 64 + c] = (float)((r * 7 + c * 3) % 17) / 16;
        yv[r] = r % 10;
    }
    clt_tensor *hx = clt_tensor_from_data(CLT_SHAPE(n, 64), xv + first * 64, CLT_F32, clt_device_cpu());
    clt_tensor *hy = clt_tensor_from_data(CLT_SHAPE(n), yv + first, CLT_I64, clt_device_cpu());
    *x = clt_tensor_to(hx, dev);
    *y = clt_tensor_to(hy, dev);
    must(*x && *y, "the batch");
    clt_tensor_release(hx);
    clt_tensor_release(hy);
}

/* A barrier that sleeps while it waits (MPI's own spins, taking a core from the rank that runs
 * alone). */
static void quiet_barrier(void)
{
    MPI_Request rq;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &rq);
    for (;;) {
        MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        nanosleep(&(struct timespec){0, 500000}, NULL);
    }
}

/* Seconds for STEPS steps; with d, distributed (clt_dist_backward). */
static double steps(clt_module *m, clt_optimizer *opt, clt_tensor *x, clt_tensor *y, clt_dist *d,
                    clt_device *dev)
{
    double t0 = now_s();
    for (int s = 0; s < STEPS; s++) {
        clt_optim_zero_grad(opt);
        clt_tensor *out = clt_module_forward(m, x);
        clt_tensor *loss = out ? clt_cross_entropy(out, y, NULL) : NULL;
        must(loss && (d ? clt_dist_backward(d, m, loss) : clt_backward(loss, NULL, false)) == CLT_OK &&
                 clt_optim_step(opt) == CLT_OK,
             "a step");
        clt_tensor_release(loss);
        clt_tensor_release(out);
    }
    must(clt_device_synchronize(dev) == CLT_OK, "synchronising");
    return now_s() - t0;
}

static size_t gradient_bytes(clt_module *m)
{
    return (size_t)clt_module_parameter_count(m) * sizeof(float);
}

static void bench_model(clt_dist *d, const char *name)
{
    int rank = clt_dist_rank(d), size = clt_dist_size(d);
    clt_device *dev = clt_dist_device(d);
    clt_module *m = digits_model_new(name);
    must(m && clt_module_to(m, dev) == CLT_OK && clt_dist_sync_module(d, m) == CLT_OK, "the model");
    clt_optimizer *opt = clt_optim_adam_module(m, BENCH_ADAM(0.001));
    clt_tensor *x, *y, *fx, *fy;
    double dist_t[REPEATS], alone_t[REPEATS], halves_t[REPEATS], avg_t[REPEATS], copy_t[REPEATS];
    size_t bytes = gradient_bytes(m);
    char *a = malloc(bytes), *b = malloc(bytes);
    must(opt && a && b, "memory");
    memset(a, 1, bytes);
    batch(dev, rank * (BATCH / size), BATCH / size, &x, &y);
    batch(dev, 0, BATCH, &fx, &fy);
    steps(m, opt, x, y, d, dev); /* warm-up: kernels built, buffers cached */
    if (rank == 0)
        steps(m, opt, fx, fy, NULL, dev);
    quiet_barrier();
    for (int r = 0; r < REPEATS; r++) {
        quiet_barrier();
        dist_t[r] = steps(m, opt, x, y, d, dev);
        quiet_barrier();
        alone_t[r] = rank == 0 ? steps(m, opt, fx, fy, NULL, dev) : 0; /* the others sleep */
        quiet_barrier();
        halves_t[r] = steps(m, opt, x, y, NULL, dev); /* every rank, no averaging */
        quiet_barrier(); /* the slowest rank's time: a step in step with the others waits for it */
        MPI_Allreduce(MPI_IN_PLACE, &halves_t[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double t0 = now_s();
        for (int s = 0; s < STEPS; s++)
            must(clt_dist_average_gradients(d, m) == CLT_OK, "averaging");
        avg_t[r] = (now_s() - t0) / STEPS;
        t0 = now_s();
        for (int s = 0; s < STEPS; s++) {
            memcpy(b, a, bytes);
            a[s % bytes] ^= b[(s * 7) % bytes]; /* keeps the copies */
        }
        copy_t[r] = (now_s() - t0) / STEPS;
    }
    if (rank == 0) {
        double td = median(dist_t, REPEATS), ta = median(alone_t, REPEATS);
        double tv = median(avg_t, REPEATS), tc = median(copy_t, REPEATS);
        double th = median(halves_t, REPEATS);
        printf("{\"bench\": \"dist\", \"name\": \"%s step, batch %d over %d ranks\", \"device\": "
               "\"%s\", \"ranks\": %d, \"steps_per_s\": %.2f, \"reference\": \"1 rank, whole "
               "batch\", \"reference_steps_per_s\": %.2f, \"speedup\": %.3f, "
               "\"fraction_of_ceiling\": %.3f}\n",
               name, BATCH, size, clt_device_name(dev), size, STEPS / td, STEPS / ta, ta / td,
               th / td);
        printf("{\"bench\": \"dist\", \"name\": \"ceiling: %s step, batch %d over %d ranks "
               "without averaging\", \"device\": \"%s\", \"ranks\": %d, \"steps_per_s\": "
               "%.2f, \"reference\": \"1 rank, whole batch\", \"reference_steps_per_s\": %.2f, "
               "\"speedup\": %.3f}\n",
               name, BATCH, size, clt_device_name(dev), size, STEPS / th, STEPS / ta, ta / th);
        printf("{\"bench\": \"dist\", \"name\": \"%s gradient average\", \"device\": \"%s\", "
               "\"ranks\": %d, \"bytes\": %zu, \"time_us\": %.1f, \"GB_per_s\": %.3f, "
               "\"reference\": \"memcpy\", \"reference_time_us\": %.2f, "
               "\"ratio_to_reference\": %.1f}\n",
               name, clt_device_name(dev), size, bytes, tv * 1e6, (double)bytes / tv * 1e-9,
               tc * 1e6, tv / tc);
        fflush(stdout);
    }
    free(a), free(b);
    clt_tensor_release(x), clt_tensor_release(y), clt_tensor_release(fx), clt_tensor_release(fy);
    clt_optim_free(opt);
    clt_module_release(m);
}

int main(int argc, char **argv)
{
    int provided;
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE")) { /* not under mpirun: start it */
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            fprintf(stderr, "bench_dist: cannot find its own path\n");
            return 1;
        }
        self[n] = '\0';
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
        setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
        setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
        setenv("CLT_SUBDEVICES", "2", 0);
        execlp("mpirun", "mpirun", "-np", "2", self, (char *)NULL);
        perror("bench_dist: mpirun");
        return 1;
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    clt_dist *d = clt_dist_init(MPI_COMM_WORLD, &(clt_dist_options){.device_per_rank = true});
    must(d != NULL, "clt_dist_init");
    bench_model(d, "mlp");
    bench_model(d, "cnn");
    clt_dist_free(d);
    MPI_Finalize();
    return 0;
}
