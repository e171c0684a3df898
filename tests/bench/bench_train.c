/* Training-step benchmark: the time of one step (zero_grad, forward, cross_entropy, backward,
 * SGD step, waiting for the device) of a 784-256-10 MLP and of the CNN of
 * samples/train_digits.c (on 8x8 single-channel images), batch 128 of random data, on cpu and
 * on every gpu:N. The references, measured in the same run: PyTorch on the CPU, its faster of
 * one thread and as many threads as the cpu device has (CLT_NUM_THREADS, else one a core), both
 * reported, by tests/bench/train_torch.py when an interpreter with torch is found ($PYTHON,
 * python3, /usr/bin/python3): each case's steps are timed in ROUNDS blocks, the library's and
 * PyTorch's in turn (PyTorch's in one process per thread count, kept between blocks), so that a
 * change in the machine's speed during the run (a virtual machine's neighbours) moves both
 * sides alike; and for the MLP the same step written by hand
 * with cblas_sgemm (two products forward, three backward) and plain loops, the reference when
 * PyTorch is missing ("pytorch": "none"; the CNN then has none). One JSON line per case:
 * medians of REPEATS steps after a warm-up. Not run by ctest. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor.h>

#include "bench_util.h"

#define BATCH 128
/* Steps before each block's timed ones, for every device and for PyTorch alike: on PoCL a step
 * of the MLP shortens over its first hundred steps (no such drift on cpu), and drifts again
 * after the other side's block: blocks of ten timed steps after ten untimed ones measured it
 * slower than one long run of steps (docs/performance.md, Training steps). */
#define WARMUP 100
#define REPEATS 150
#define ROUNDS 3 /* blocks of REPEATS / ROUNDS timed steps, each side's in turn */
/* The pause after a block of PyTorch's: its OpenBLAS threads keep spinning for about 0.1 s
 * after their last call (see blas_step_time), which would take a core from the next block. */
#define SETTLE_S 0.15
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

/* A model training on a device: its batch, labels and optimizer. */
typedef struct lib_run {
    clt_module *model;
    clt_device *dev;
    clt_tensor *x, *y;
    clt_optimizer *optimizer;
} lib_run;

static lib_run lib_start(clt_module *model, int ndim, const int64_t *shape, clt_device *dev)
{
    int64_t labels[BATCH];
    for (int i = 0; i < BATCH; i++)
        labels[i] = (i * 7) % 10;
    lib_run r = {model, dev, clt_tensor_randn(ndim, shape, CLT_F32, dev),
                 clt_tensor_from_data(CLT_SHAPE(BATCH), labels, CLT_I64, dev), NULL};
    CHECK(r.x && r.y && clt_module_to(model, dev) == CLT_OK);
    CHECK(r.optimizer = clt_optim_sgd_module(model, BENCH_SGD(LR, 0)));
    return r;
}

/* `steps` whole training steps, each one's seconds into t (unless NULL). */
static void lib_steps(lib_run *r, int steps, double *t)
{
    for (int s = 0; s < steps; s++) {
        double t0 = now_s();
        clt_optim_zero_grad(r->optimizer);
        clt_tensor *logits = clt_module_forward(r->model, r->x);
        clt_tensor *loss = logits ? clt_cross_entropy(logits, r->y, NULL) : NULL;
        CHECK(loss && clt_backward(loss, NULL, false) == CLT_OK);
        CHECK(clt_optim_step(r->optimizer) == CLT_OK && clt_device_synchronize(r->dev) == CLT_OK);
        double t1 = now_s();
        clt_tensor_release(loss);
        clt_tensor_release(logits);
        if (t)
            t[s] = t1 - t0;
    }
}

static void lib_end(lib_run *r)
{
    clt_optim_free(r->optimizer);
    clt_tensor_release(r->y);
    clt_tensor_release(r->x);
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

/* train_torch.py with a number of threads, running blocks of steps on request; version "" when
 * PyTorch was not found. */
typedef struct torch_server {
    FILE *to, *from;
    pid_t pid;
    char version[64];
} torch_server;

static void torch_start(torch_server *s, int threads)
{
    char args[64];
    *s = (torch_server){NULL, NULL, -1, ""};
    snprintf(args, sizeof args, "--threads %d --batch %d", threads, BATCH);
    s->pid = bench_torch_spawn(BENCH_TRAIN_TORCH_PY, args, &s->to, &s->from);
}

static void torch_stop(torch_server *s)
{
    if (s->pid < 0)
        return;
    fclose(s->to); /* the end of its input ends it */
    fclose(s->from);
    waitpid(s->pid, NULL, 0);
    s->pid = -1;
}

/* The script failed: the server stopped, false. */
static bool torch_failed(torch_server *s)
{
    torch_stop(s);
    s->version[0] = '\0';
    return false;
}

/* `steps` of PyTorch's steps of `model`: each one's seconds into t (unless NULL), the block's
 * CPU and wall seconds added to *cpu and *wall. False (and this server stopped) when the script
 * fails. */
static bool torch_steps(torch_server *s, const char *model, int steps, double *t, double *cpu,
                        double *wall)
{
    static char line[1 << 16];
    char name[16], version[64];
    int th, at;
    double c, w;
    if (s->pid < 0)
        return false;
    fprintf(s->to, "%s %d\n", model, steps);
    fflush(s->to);
    if (!fgets(line, sizeof line, s->from) ||
        sscanf(line,
               "{\"model\": \"%15[^\"]\", \"torch\": \"%63[^\"]\", \"threads\": %d, "
               "\"batch\": %*d, \"cpu_s\": %lf, \"wall_s\": %lf, \"times\": [%n",
               name, version, &th, &c, &w, &at) < 5)
        return torch_failed(s);
    const char *p = line + at;
    for (int k = 0; k < steps; k++) {
        char *end;
        double v = strtod(p, &end);
        if (end == p)
            return torch_failed(s);
        if (t)
            t[k] = v;
        p = end + (*end == ',');
    }
    snprintf(s->version, sizeof s->version, "%s", version);
    *cpu += c, *wall += w;
    return true;
}

static void pause_s(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

/* One case's medians: the library's step and PyTorch's with each server's threads (0 where
 * PyTorch was not found), with the cores PyTorch kept busy. */
typedef struct measured {
    double lib_s, torch_s[2], torch_busy[2];
} measured;

/* Times model on dev: ROUNDS rounds of a block of the library's steps and a block of each
 * PyTorch server's (one thread, and the cpu device's threads where that is more: torch[1] not
 * started otherwise), each block WARMUP untimed steps and REPEATS / ROUNDS timed ones; the
 * medians. */
static measured measure(torch_server torch[2], const char *model_name, clt_module *model,
                        int ndim, const int64_t *shape, clt_device *dev)
{
    enum { BLOCK = REPEATS / ROUNDS };
    static double lib_t[REPEATS], torch_t[2][REPEATS];
    double cpu[2] = {0, 0}, wall[2] = {0, 0}, ignored = 0;
    int settings = torch[1].pid >= 0 ? 2 : 1;
    measured m = {0, {0, 0}, {0, 0}};
    lib_run run = lib_start(model, ndim, shape, dev);
    for (int r = 0; r < ROUNDS; r++) {
        lib_steps(&run, WARMUP, NULL);
        lib_steps(&run, BLOCK, lib_t + r * BLOCK);
        for (int k = 0; k < settings; k++)
            if (torch_steps(&torch[k], model_name, WARMUP, NULL, &ignored, &ignored) &&
                torch_steps(&torch[k], model_name, BLOCK, torch_t[k] + r * BLOCK, &cpu[k],
                            &wall[k]))
                pause_s(SETTLE_S);
    }
    lib_end(&run);
    m.lib_s = median(lib_t, REPEATS);
    for (int k = 0; k < settings; k++)
        if (torch[k].pid >= 0)
            m.torch_s[k] = median(torch_t[k], REPEATS), m.torch_busy[k] = cpu[k] / wall[k];
    if (settings == 1)
        m.torch_s[1] = m.torch_s[0], m.torch_busy[1] = m.torch_busy[0];
    return m;
}

static void report(const char *name, clt_device *dev, const measured *m, const char *torch,
                   const int threads[2], double blas_s)
{
    double t = m->lib_s;
    int best = m->torch_s[1] > 0 && (m->torch_s[0] <= 0 || m->torch_s[1] < m->torch_s[0]);
    if (m->torch_s[best] <= 0)
        torch = ""; /* (every server failed) */
    printf("{\"name\": \"%s\", \"device\": \"%s\", \"batch\": %d, \"time_s\": %.6e, "
           "\"samples_per_s\": %.0f, \"pytorch\": \"%s\"",
           name, clt_device_name(dev), BATCH, t, BATCH / t, torch[0] ? torch : "none");
    if (torch[0])
        printf(", \"reference\": \"PyTorch CPU, faster of 1 and %d threads\", "
               "\"reference_threads\": %d, \"reference_cores_busy\": %.2f, "
               "\"reference_time_s\": %.6e, \"ratio_to_reference\": %.3f, "
               "\"interleaved_rounds\": %d, \"pytorch_%d_threads_time_s\": %.6e, "
               "\"pytorch_%d_threads_time_s\": %.6e",
               threads[1], threads[best], m->torch_busy[best], m->torch_s[best],
               t / m->torch_s[best], ROUNDS, threads[0], m->torch_s[0], threads[1], m->torch_s[1]);
    else if (blas_s > 0)
        printf(", \"reference\": \"cblas_sgemm step\", \"reference_time_s\": %.6e, "
               "\"ratio_to_reference\": %.3f", blas_s, t / blas_s);
    else
        printf(", \"reference\": \"none\"");
    if (torch[0] && blas_s > 0)
        printf(", \"cblas_sgemm_step_time_s\": %.6e, \"ratio_to_cblas_sgemm_step\": %.3f", blas_s,
               t / blas_s);
    printf("}\n");
    fflush(stdout);
}

int main(void)
{
    clt_device *cpu = clt_device_cpu();
    CHECK(cpu);
    /* PyTorch with one thread, and with the cpu device's threads where that is more */
    int threads[2] = {1, clt_get_num_threads() > 1 ? clt_get_num_threads() : 1};
    torch_server torch[2];
    torch_start(&torch[0], threads[0]);
    if (threads[1] > 1)
        torch_start(&torch[1], threads[1]);
    else
        torch[1] = (torch_server){NULL, NULL, -1, ""};
    int gpus = clt_device_count();
    CHECK(gpus >= 0);
    measured *runs = calloc(2 * (size_t)(gpus + 1), sizeof *runs);
    CHECK(runs);
    for (int d = -1; d < gpus; d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", d);
        clt_device *dev = d < 0 ? cpu : clt_device_get(name);
        CHECK(dev);
        clt_manual_seed(0);
        clt_module *mlp = mlp_new(), *cnn = cnn_new();
        runs[2 * (d + 1)] = measure(torch, "mlp", mlp, CLT_SHAPE(BATCH, 784), dev);
        runs[2 * (d + 1) + 1] = measure(torch, "cnn", cnn, CLT_SHAPE(BATCH, 1, 8, 8), dev);
        clt_module_release(cnn);
        clt_module_release(mlp);
        CHECK(clt_device_synchronize(dev) == CLT_OK);
    }
    char version[64];
    snprintf(version, sizeof version, "%s", torch[0].version[0] ? torch[0].version : torch[1].version);
    torch_stop(&torch[0]);
    torch_stop(&torch[1]);
    /* the hand-written step after the library's: run before them (with OpenBLAS on two
     * threads), OpenBLAS's worker kept spinning for a while after its last call and took a
     * core from the cpu device's pool, whose steps then measured much slower (not with
     * OPENBLAS_THREAD_TIMEOUT=4, which makes it sleep at once; docs/performance.md, Training
     * steps) */
    double blas_s = blas_step_time();
    for (int d = -1; d < gpus; d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", d);
        clt_device *dev = d < 0 ? cpu : clt_device_get(name);
        report("train step mlp 784-256-10", dev, &runs[2 * (d + 1)], version, threads, blas_s);
        report("train step cnn 8x8 (train_digits)", dev, &runs[2 * (d + 1) + 1], version, threads,
               0);
    }
    free(runs);
    return 0;
}
