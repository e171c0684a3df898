/* How much of the data loader's copying hides behind compute: an epoch over a synthetic 1 GiB
 * dataset (4096 items of 256 x 256 f32, made on the fly) in batches of 32 (8 MiB) onto a
 * device, with a fixed compute step per batch. Three runs, measured in the same process:
 *   compute  the compute step alone, on one batch already on the device, once per batch;
 *   load     the loader alone: every batch made and copied, nothing computed;
 *   both     the loader with the compute step on each batch.
 * hidden = (compute + load - both) / min(compute, load): 1 when the shorter of the two is
 * hidden entirely, 0 when nothing overlaps. One JSON line per device; medians of 3 runs.
 *   bench_loader [device ...]      (default: every OpenCL device) */
#include <stdio.h>
#include <string.h>

#include <cltensor.h>

#include "bench_util.h"

enum { SIDE = 256, ITEMS = 4096, BATCH = 32, RUNS = 3 };

static float pattern[SIDE * SIDE];

/* Item i: the pattern, its first value replaced by i (a memcpy of 256 KiB, as reading a
 * decoded image from memory would be). */
static clt_status synthetic_get(void *user, int64_t i, void *const *out)
{
    (void)user;
    memcpy(out[0], pattern, sizeof pattern);
    ((float *)out[0])[0] = (float)i;
    *(int64_t *)out[1] = i % 10;
    return CLT_OK;
}

/* The compute step: one reduction over the batch (on PoCL about as long as the batch's copy,
 * so that neither hides the other trivially). */
static clt_status step(clt_tensor *x)
{
    clt_tensor *s = clt_sum(x, NULL, 0, false);
    clt_status st = s ? CLT_OK : clt_last_status();
    clt_tensor_release(s);
    return st;
}

static double run_compute(clt_device *dev)
{
    clt_tensor *x = clt_tensor_rand(CLT_SHAPE(BATCH, SIDE, SIDE), CLT_F32, dev);
    clt_device_synchronize(dev);
    double t0 = now_s();
    for (int b = 0; b < ITEMS / BATCH; b++)
        if (step(x) != CLT_OK)
            return -1;
    clt_device_synchronize(dev);
    double t = now_s() - t0;
    clt_tensor_release(x);
    return t;
}

static double run_loader(clt_dataset *d, clt_device *dev, bool compute)
{
    clt_loader *l = clt_loader_new(d, &(clt_loader_options){.batch_size = BATCH, .device = dev,
                                                            .prefetch = 3});
    clt_tensor *batch[2];
    clt_status st;
    if (!l)
        return -1;
    clt_device_synchronize(dev);
    double t0 = now_s();
    while ((st = clt_loader_next(l, batch)) == CLT_OK) {
        if (compute && step(batch[0]) != CLT_OK)
            st = clt_last_status();
        clt_tensor_release(batch[0]), clt_tensor_release(batch[1]);
        if (st != CLT_OK)
            break;
    }
    clt_device_synchronize(dev);
    double t = now_s() - t0;
    clt_loader_free(l);
    return st == CLT_END ? t : -1;
}

static int bench(clt_dataset *d, clt_device *dev)
{
    double tc[RUNS], tl[RUNS], tb[RUNS];
    run_loader(d, dev, true); /* warm-up: kernels built, staging made */
    for (int r = 0; r < RUNS; r++) {
        tc[r] = run_compute(dev);
        tl[r] = run_loader(d, dev, false);
        tb[r] = run_loader(d, dev, true);
        if (tc[r] < 0 || tl[r] < 0 || tb[r] < 0) {
            fprintf(stderr, "bench_loader: %s\n", clt_last_error());
            return 1;
        }
    }
    double c = median(tc, RUNS), l = median(tl, RUNS), b = median(tb, RUNS);
    double shorter = c < l ? c : l, hidden = (c + l - b) / shorter;
    double gib = (double)ITEMS * sizeof pattern / (1 << 30);
    printf("{\"name\": \"loader epoch\", \"device\": \"%s\", \"bytes\": %zu, \"batch\": %d, "
           "\"compute_s\": %.4f, \"load_s\": %.4f, \"load_gib_per_s\": %.2f, \"both_s\": %.4f, "
           "\"serial_s\": %.4f, \"ratio_to_serial\": %.3f, \"hidden\": %.2f}\n",
           clt_device_name(dev), (size_t)ITEMS * sizeof pattern, BATCH, c, l, gib / l, b, c + l,
           b / (c + l), hidden < 0 ? 0 : hidden > 1 ? 1 : hidden);
    return 0;
}

int main(int argc, char **argv)
{
    clt_field fields[2] = {{CLT_F32, 2, {SIDE, SIDE}}, {CLT_I64, 0, {0}}};
    clt_dataset *d;
    int failed = 0;
    for (int i = 0; i < SIDE * SIDE; i++)
        pattern[i] = (float)(i % 97) / 97.0f;
    d = clt_dataset_new(ITEMS, 2, fields, synthetic_get, NULL, NULL);
    if (!d) {
        fprintf(stderr, "bench_loader: %s\n", clt_last_error());
        return 1;
    }
    if (argc > 1) {
        for (int a = 1; a < argc; a++) {
            clt_device *dev = clt_device_get(argv[a]);
            failed |= dev ? bench(d, dev) : 1;
        }
    } else {
        for (int k = 0; k < clt_device_count(); k++) { /* every gpu:N */
            char name[16];
            snprintf(name, sizeof name, "gpu:%d", k);
            clt_device *dev = clt_device_get(name);
            failed |= dev ? bench(d, dev) : 1;
        }
    }
    clt_dataset_release(d);
    return failed;
}
