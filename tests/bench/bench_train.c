/* Training-step benchmark: the time of one step (zero_grad, forward, cross_entropy, backward,
 * SGD step, waiting for the device) of a 784-256-10 MLP and of the CNN of
 * samples/train_digits.c (on 8x8 single-channel images), batch 128 of random data, on cpu and
 * on every gpu:N. The references, measured in the same run: PyTorch on the CPU, its faster of
 * one thread and as many threads as the cpu device has (CLT_NUM_THREADS, else one a core), both reported, by tests/bench/train_torch.py when an
 * interpreter with torch is found
 * ($PYTHON, python3, /usr/bin/python3); and for the MLP the same step written by hand with
 * cblas_sgemm (two products forward, three backward) and plain loops, the reference when
 * PyTorch is missing ("pytorch": "none"; the CNN then has none). One JSON line per case:
 * medians of repeated steps after a warm-up. Not run by ctest. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor.h>

#include "bench_util.h"

#define BATCH 128
/* Steps before the timed ones, for every device and for PyTorch alike: on PoCL a step of the MLP
 * took 1.5-1.9 ms for its first 25 steps, 1.2-1.3 ms from the 50th and 1.1-1.2 ms from the 100th
 * (2-core Zen 4 EPYC; no such drift on cpu), so that five steps' warm-up timed PoCL's start. */
#define WARMUP 100
#define REPEATS 100
#define LR 0.01

#define CHECK(expr)                                                                            \
    do {                                                                                       \
        if (!(expr)) {                                                                         \
            fprintf(stderr, "bench_train: %s\n", clt_last_error());                            \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* ---- the models, as PyTorch would write them ------------------------------------------------- */

/* nn.Sequential(*layers), taking over the layers' references. */
static clt_module *sequential(clt_module *const *layers, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(layers[i]);
    clt_module *seq = clt_nn_sequential(layers, n);
    for (int i = 0; i < n; i++)
        clt_module_release(layers[i]);
    CHECK(seq);
    return seq;
}

static clt_module *mlp_new(void)
{
    return sequential((clt_module *[]){clt_nn_linear(784, 256, true), clt_nn_relu(),
                                       clt_nn_linear(256, 10, true)},
                      3);
}

/* samples/train_digits.c's CNN without its view: input (N, 1, 8, 8). */
static clt_module *cnn_new(void)
{
    const clt_conv2d_options same = {.padding = {1, 1}};
    const clt_pool2d_options halve = {.kernel = {2, 2}};
    return sequential((clt_module *[]){clt_nn_conv2d(1, 16, 3, 3, &same, true), clt_nn_relu(),
                                       clt_nn_max_pool2d(&halve),
                                       clt_nn_conv2d(16, 32, 3, 3, &same, true), clt_nn_relu(),
                                       clt_nn_flatten(), clt_nn_linear(32 * 4 * 4, 10, true)},
                      7);
}

/* The median time of a whole training step of model on dev, input of `shape`. */
static double step_time(clt_module *model, int ndim, const int64_t *shape, clt_device *dev)
{
    int64_t labels[BATCH];
    for (int i = 0; i < BATCH; i++)
        labels[i] = (i * 7) % 10;
    clt_tensor *x = clt_tensor_randn(ndim, shape, CLT_F32, dev);
    clt_tensor *y = clt_tensor_from_data(CLT_SHAPE(BATCH), labels, CLT_I64, dev);
    CHECK(x && y && clt_module_to(model, dev) == CLT_OK);
    clt_optimizer *optimizer = clt_optim_sgd_module(model, BENCH_SGD(LR, 0));
    CHECK(optimizer);
    double t[REPEATS];
    for (int r = -WARMUP; r < REPEATS; r++) {
        double t0 = now_s();
        clt_optim_zero_grad(optimizer);
        clt_tensor *logits = clt_module_forward(model, x);
        clt_tensor *loss = logits ? clt_cross_entropy(logits, y, NULL) : NULL;
        CHECK(loss && clt_backward(loss, NULL, false) == CLT_OK);
        CHECK(clt_optim_step(optimizer) == CLT_OK && clt_device_synchronize(dev) == CLT_OK);
        double t1 = now_s();
        clt_tensor_release(loss);
        clt_tensor_release(logits);
        if (r >= 0)
            t[r] = t1 - t0;
    }
    clt_optim_free(optimizer);
    clt_tensor_release(y);
    clt_tensor_release(x);
    return median(t, REPEATS);
}

/* ---- the MLP step by hand: cblas_sgemm and loops --------------------------------------------- */

enum { IN = 784, HID = 256, OUT = 10 };

typedef struct blas_mlp {
    float x[BATCH * IN], w1[HID * IN], b1[HID], w2[OUT * HID], b2[OUT];
    float h[BATCH * HID], z[BATCH * OUT], g[BATCH * OUT], gh[BATCH * HID];
    float dw1[HID * IN], db1[HID], dw2[OUT * HID], db2[OUT];
    int y[BATCH];
} blas_mlp;

/* s[j] = sum over rows of a (rows x cols). */
static void column_sums(const float *a, int rows, int cols, float *s)
{
    memset(s, 0, (size_t)cols * sizeof *s);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            s[j] += a[i * cols + j];
}

static void blas_step(blas_mlp *m)
{
    /* forward: h = relu(x w1^T + b1), z = h w2^T + b2 */
    for (int i = 0; i < BATCH; i++)
        memcpy(m->h + i * HID, m->b1, sizeof m->b1);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BATCH, HID, IN, 1, m->x, IN, m->w1, IN,
                1, m->h, HID);
    for (int i = 0; i < BATCH * HID; i++)
        m->h[i] = m->h[i] > 0 ? m->h[i] : 0;
    for (int i = 0; i < BATCH; i++)
        memcpy(m->z + i * OUT, m->b2, sizeof m->b2);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BATCH, OUT, HID, 1, m->h, HID, m->w2,
                HID, 1, m->z, OUT);
    /* the mean cross-entropy's gradient: (softmax(z) - onehot(y)) / BATCH */
    for (int i = 0; i < BATCH; i++) {
        float *z = m->z + i * OUT, *g = m->g + i * OUT, top = z[0], sum = 0;
        for (int j = 1; j < OUT; j++)
            top = fmaxf(top, z[j]);
        for (int j = 0; j < OUT; j++)
            sum += g[j] = expf(z[j] - top);
        for (int j = 0; j < OUT; j++)
            g[j] = (g[j] / sum - (j == m->y[i])) / BATCH;
    }
    /* backward: dw2 = g^T h, db2, gh = (g w2) * (h > 0), dw1 = gh^T x, db1 */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OUT, HID, BATCH, 1, m->g, OUT, m->h, HID,
                0, m->dw2, HID);
    column_sums(m->g, BATCH, OUT, m->db2);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BATCH, HID, OUT, 1, m->g, OUT, m->w2,
                HID, 0, m->gh, HID);
    for (int i = 0; i < BATCH * HID; i++)
        m->gh[i] = m->h[i] > 0 ? m->gh[i] : 0;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, HID, IN, BATCH, 1, m->gh, HID, m->x, IN,
                0, m->dw1, IN);
    column_sums(m->gh, BATCH, HID, m->db1);
    /* SGD */
    cblas_saxpy(HID * IN, -LR, m->dw1, 1, m->w1, 1);
    cblas_saxpy(HID, -LR, m->db1, 1, m->b1, 1);
    cblas_saxpy(OUT * HID, -LR, m->dw2, 1, m->w2, 1);
    cblas_saxpy(OUT, -LR, m->db2, 1, m->b2, 1);
}

static double blas_step_time(void)
{
    blas_mlp *m = calloc(1, sizeof *m);
    if (!m)
        exit(1);
    srand(0);
    for (int i = 0; i < BATCH * IN; i++)
        m->x[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1;
    for (int i = 0; i < HID * IN; i++)
        m->w1[i] = (2.0f * (float)rand() / (float)RAND_MAX - 1) / 28;
    for (int i = 0; i < OUT * HID; i++)
        m->w2[i] = (2.0f * (float)rand() / (float)RAND_MAX - 1) / 16;
    for (int i = 0; i < BATCH; i++)
        m->y[i] = (i * 7) % 10;
    double t[REPEATS];
    openblas_set_num_threads(clt_get_num_threads()); /* the library leaves OpenBLAS one */
    for (int r = -WARMUP; r < REPEATS; r++) {
        double t0 = now_s();
        blas_step(m);
        if (r >= 0)
            t[r] = now_s() - t0;
    }
    openblas_set_num_threads(1);
    free(m);
    return median(t, REPEATS);
}

/* ---- PyTorch --------------------------------------------------------------------------------- */

typedef struct torch_ref {
    char version[64]; /* "" when PyTorch was not found */
    int threads;
    double mlp_s, cnn_s;
    double mlp_busy, cnn_busy; /* the process's CPU time over wall time: cores kept busy */
} torch_ref;

/* Runs train_torch.py with the first interpreter that imports torch; false if none does. */
static bool run_torch(int threads, torch_ref *ref)
{
    char args[256], line[512];
    *ref = (torch_ref){"", 0, 0, 0, 0, 0};
    snprintf(args, sizeof args, "--threads %d --batch %d --warmup %d --repeats %d", threads, BATCH,
             WARMUP, REPEATS);
    FILE *p = bench_torch_popen(BENCH_TRAIN_TORCH_PY, args);
    if (!p)
        return false;
    while (fgets(line, sizeof line, p)) {
        char model[16], version[64];
        int th;
        double t, busy = 0;
        if (sscanf(line,
                   "{\"model\": \"%15[^\"]\", \"torch\": \"%63[^\"]\", \"threads\": %d, "
                   "\"batch\": %*d, \"time_s\": %lf, \"cores_busy\": %lf",
                   model, version, &th, &t, &busy) < 4)
            continue;
        snprintf(ref->version, sizeof ref->version, "%s", version);
        ref->threads = th;
        bool mlp = strcmp(model, "mlp") == 0;
        *(mlp ? &ref->mlp_s : &ref->cnn_s) = t;
        *(mlp ? &ref->mlp_busy : &ref->cnn_busy) = busy;
    }
    return pclose(p) == 0 && ref->mlp_s > 0 && ref->cnn_s > 0;
}

/* The faster of PyTorch's two runs for one model (mlp true: the MLP): its time, threads and
 * cores kept busy. */
static double torch_best(const torch_ref *runs, bool mlp, int *threads, double *busy)
{
    double best = 0;
    for (int i = 0; i < 2; i++) {
        double t = mlp ? runs[i].mlp_s : runs[i].cnn_s;
        if (runs[i].version[0] && t > 0 && (best == 0 || t < best))
            best = t, *threads = runs[i].threads,
            *busy = mlp ? runs[i].mlp_busy : runs[i].cnn_busy;
    }
    return best;
}

static void report(const char *name, clt_device *dev, double t, const torch_ref *runs, bool mlp,
                   double blas_s)
{
    const torch_ref *torch = &runs[0];
    int best_threads = 0;
    double busy = 0, torch_s = torch_best(runs, mlp, &best_threads, &busy);
    printf("{\"name\": \"%s\", \"device\": \"%s\", \"batch\": %d, \"time_s\": %.6e, "
           "\"samples_per_s\": %.0f, \"pytorch\": \"%s\"",
           name, clt_device_name(dev), BATCH, t, BATCH / t,
           torch->version[0] ? torch->version : "none");
    if (torch->version[0])
        printf(", \"reference\": \"PyTorch CPU, faster of 1 and %d threads\", "
               "\"reference_threads\": %d, \"reference_cores_busy\": %.2f, "
               "\"reference_time_s\": %.6e, "
               "\"ratio_to_reference\": %.3f, \"pytorch_%d_threads_time_s\": %.6e, "
               "\"pytorch_%d_threads_time_s\": %.6e", runs[1].threads ? runs[1].threads : 1,
               best_threads, busy, torch_s, t / torch_s, runs[0].threads,
               mlp ? runs[0].mlp_s : runs[0].cnn_s, runs[1].threads ? runs[1].threads : 1,
               mlp ? runs[1].mlp_s : runs[1].cnn_s);
    else if (blas_s > 0)
        printf(", \"reference\": \"cblas_sgemm step\", \"reference_time_s\": %.6e, "
               "\"ratio_to_reference\": %.3f", blas_s, t / blas_s);
    else
        printf(", \"reference\": \"none\"");
    if (torch->version[0] && blas_s > 0)
        printf(", \"cblas_sgemm_step_time_s\": %.6e, \"ratio_to_cblas_sgemm_step\": %.3f", blas_s,
               t / blas_s);
    printf("}\n");
    fflush(stdout);
}

int main(void)
{
    clt_device *cpu = clt_device_cpu();
    CHECK(cpu);
    int threads = clt_get_num_threads();
    torch_ref torch[2]; /* one thread, and OpenBLAS's threads (or one again) */
    if (!run_torch(1, &torch[0]))
        torch[0].version[0] = '\0';
    if (threads <= 1 || !run_torch(threads, &torch[1]))
        torch[1] = torch[0];
    int gpus = clt_device_count();
    CHECK(gpus >= 0);
    double *times = calloc(2 * (size_t)(gpus + 1), sizeof *times);
    CHECK(times);
    for (int d = -1; d < gpus; d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", d);
        clt_device *dev = d < 0 ? cpu : clt_device_get(name);
        CHECK(dev);
        clt_manual_seed(0);
        clt_module *mlp = mlp_new(), *cnn = cnn_new();
        times[2 * (d + 1)] = step_time(mlp, CLT_SHAPE(BATCH, 784), dev);
        times[2 * (d + 1) + 1] = step_time(cnn, CLT_SHAPE(BATCH, 1, 8, 8), dev);
        clt_module_release(cnn);
        clt_module_release(mlp);
        CHECK(clt_device_synchronize(dev) == CLT_OK);
    }
    /* the hand-written step after the library's: run before them (with OpenBLAS on two
     * threads), OpenBLAS's worker kept spinning for a while after its last call and took a
     * core from the cpu device's pool, whose steps measured 1.6-1.8 times slower on a 2-core
     * Zen 4 EPYC (not with OPENBLAS_THREAD_TIMEOUT=4, which makes it sleep at once) */
    double blas_s = blas_step_time();
    for (int d = -1; d < gpus; d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", d);
        clt_device *dev = d < 0 ? cpu : clt_device_get(name);
        report("train step mlp 784-256-10", dev, times[2 * (d + 1)], torch, true, blas_s);
        report("train step cnn 8x8 (train_digits)", dev, times[2 * (d + 1) + 1], torch, false, 0);
    }
    free(times);
    return 0;
}
