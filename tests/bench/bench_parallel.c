/* DataParallel's speed-up: training steps per second of a compute-bound MLP step (784-1024-1024-10,
 * batch 512, forward, cross_entropy, backward, SGD) on one device against DataParallel over two,
 * measured in the same run. Without arguments it splits PoCL into two sub-devices
 * (CLT_SUBDEVICES=2, unless already set) and compares gpu:0 alone with gpu:0 + gpu:1: two
 * halves of the same CPU. The ratio DataParallel can reach is what the two devices give when
 * each runs its half of the batch at the same time with nothing shared: two threads, each
 * stepping its own model on its own device, timed too (the ceiling; with two halves of one CPU
 * it is below 2, since both cores then share caches, memory and whatever the host machine runs
 * beside them). Two JSON lines; medians of 5 runs of 10 steps after a warm-up.
 *   bench_parallel [device device]   (default: gpu:0 gpu:1) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cltensor.h>

#include "bench_util.h"

enum { IN = 784, HIDDEN = 1024, OUT = 10, BATCH = 512, STEPS = 10, RUNS = 5 };

static clt_module *mlp(void)
{
    clt_manual_seed(1);
    clt_module *layers[5] = {clt_nn_linear(IN, HIDDEN, true), clt_nn_relu(),
                             clt_nn_linear(HIDDEN, HIDDEN, true), clt_nn_relu(),
                             clt_nn_linear(HIDDEN, OUT, true)};
    clt_module *m = clt_nn_sequential(layers, 5);
    for (int k = 0; k < 5; k++)
        clt_module_release(layers[k]);
    return m;
}

/* Seconds per step at a batch of `batch` rows, the median of RUNS runs; -1 on failure. */
static double time_steps(clt_module *model, clt_device *dev, int batch)
{
    clt_optimizer *opt = clt_optim_sgd_module(model, BENCH_SGD(0.01, 0));
    clt_tensor *x = clt_tensor_randn(CLT_SHAPE(batch, IN), CLT_F32, dev);
    int64_t labels[BATCH];
    for (int i = 0; i < batch; i++)
        labels[i] = i % OUT;
    clt_tensor *y = clt_tensor_from_data(CLT_SHAPE(batch), labels, CLT_I64, dev);
    double t[RUNS];
    if (!opt || !x || !y)
        return -1;
    for (int r = -1; r < RUNS; r++) { /* run -1 warms up */
        double t0 = now_s();
        for (int s = 0; s < STEPS; s++) {
            clt_tensor *out = clt_module_forward(model, x);
            clt_tensor *loss = out ? clt_cross_entropy(out, y, NULL) : NULL;
            clt_optim_zero_grad(opt);
            if (!loss || clt_backward(loss, NULL, false) != CLT_OK || clt_optim_step(opt) != CLT_OK)
                return -1;
            clt_tensor_release(loss), clt_tensor_release(out);
        }
        clt_device_synchronize(dev);
        if (r >= 0)
            t[r] = (now_s() - t0) / STEPS;
    }
    clt_tensor_release(y), clt_tensor_release(x);
    clt_optim_free(opt);
    return median(t, RUNS);
}

/* One of the ceiling's two halves: its own model on its own device. */
typedef struct half {
    clt_module *model;
    clt_device *dev;
    double seconds;
} half;

static void *run_half(void *arg)
{
    half *h = arg;
    clt_device_set_current(h->dev);
    h->seconds = time_steps(h->model, h->dev, BATCH / 2);
    return NULL;
}

/* Seconds per step of two half-batch steps run at once, one a device (the slower's); -1 on
 * failure. */
static double time_halves(clt_device *const devs[2])
{
    half h[2] = {{mlp(), devs[0], -1}, {mlp(), devs[1], -1}};
    pthread_t other;
    bool started = false;
    if (clt_module_to(h[0].model, devs[0]) == CLT_OK &&
        clt_module_to(h[1].model, devs[1]) == CLT_OK &&
        (started = pthread_create(&other, NULL, run_half, &h[1]) == 0))
        run_half(&h[0]);
    if (started)
        pthread_join(other, NULL);
    clt_module_release(h[0].model), clt_module_release(h[1].model);
    if (h[0].seconds < 0 || h[1].seconds < 0)
        return -1;
    return h[0].seconds > h[1].seconds ? h[0].seconds : h[1].seconds;
}

int main(int argc, char **argv)
{
    const char *names[2] = {"gpu:0", "gpu:1"};
    if (argc == 3)
        names[0] = argv[1], names[1] = argv[2];
    else
        setenv("CLT_SUBDEVICES", "2", 0);
    clt_device *devs[2] = {clt_device_get(names[0]), clt_device_get(names[1])};
    if (!devs[0] || !devs[1]) {
        fprintf(stderr, "bench_parallel: %s\n", clt_last_error());
        return 1;
    }
    clt_module *one = mlp(), *wrapped = mlp(), *dp = NULL;
    if (clt_module_to(one, devs[0]) != CLT_OK || clt_module_to(wrapped, devs[0]) != CLT_OK ||
        !(dp = clt_nn_data_parallel(wrapped, devs, 2, NULL))) {
        fprintf(stderr, "bench_parallel: %s\n", clt_last_error());
        return 1;
    }
    double single = time_steps(one, devs[0], BATCH), parallel = time_steps(dp, devs[0], BATCH);
    double halves = time_halves(devs);
    if (single < 0 || parallel < 0 || halves < 0) {
        fprintf(stderr, "bench_parallel: %s\n", clt_last_error());
        return 1;
    }
    printf("{\"name\": \"data parallel train step mlp %d-%d-%d-%d\", \"devices\": \"%s + %s\", "
           "\"batch\": %d, \"one_device_steps_per_s\": %.2f, \"two_devices_steps_per_s\": %.2f, "
           "\"speedup\": %.3f, \"fraction_of_ceiling\": %.3f}\n",
           IN, HIDDEN, HIDDEN, OUT, names[0], names[1], BATCH, 1 / single, 1 / parallel,
           single / parallel, halves / parallel);
    printf("{\"name\": \"ceiling: two independent half-batch steps at once, mlp %d-%d-%d-%d\", "
           "\"devices\": \"%s + %s\", \"batch\": %d, \"one_device_steps_per_s\": %.2f, "
           "\"two_devices_steps_per_s\": %.2f, \"speedup\": %.3f}\n",
           IN, HIDDEN, HIDDEN, OUT, names[0], names[1], BATCH, 1 / single, 1 / halves,
           single / halves);
    clt_device_synchronize(devs[1]);
    clt_module_release(dp), clt_module_release(wrapped), clt_module_release(one);
    return 0;
}
