/* The OpenCL backend's matrix products (clt__cl_gemm) and GEMM tuning: which variant (CLBlast or
 * one of the library's kernels, run by cl_gemm.c) runs a product on an OpenCL device. Until a
 * device is tuned, products run the default for its kind: the register-tile kernels (direct,
 * packed) where the driver runs each work-item's vectors as such (native float vector width above
 * 1: CPU devices such as PoCL), CLBlast where it vectorises across work-items (GPUs, Mesa's
 * llvmpipe), for which those kernels are the wrong shape (llvmpipe takes minutes to compile them).
 * Tuning runs in clt_device_warmup, never under a product: every candidate (see candidate()) is
 * verified on awkward shapes (every transpose, odd sizes, offsets, batch strides, alpha and beta)
 * against the exact result, then the verified ones are timed on an n x n x n product for n = 64 ...
 * 1024 within a few seconds; each size class takes the fastest, but for the class of 2048 and more,
 * which keeps the default: timed at 1024, a winner there could be the loser above (direct has won
 * at 1024 and then run 2048 at less than half packed's rate: docs/performance.md, Matrix products
 * on OpenCL devices). A variant that fails verification is never chosen. The choices are stored in
 * the disk cache (under a key holding the device, its driver, the library version and cl/gemm.cl),
 * so that later processes start tuned. CLT_GEMM=<variant> skips all of this. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "core/core.h"
#include "platform/platform.h"

#define TUNE_MAX_N 1024      /* the largest product timed */
#define TUNE_BUDGET_S 4.0    /* seconds of timed runs that larger classes may not take past: they
                              * keep the default (a slow device, a simulator) */
#define TUNE_WALL_S 3.0      /* seconds of tuning (compiles and checks included) past which no
                              * larger class is timed */
#define TUNE_CLOSE 1.5        /* a runner-up this much slower or less is timed again */
#define TUNE_FEW_ROUNDS 3     /* a few-row class times dot and the fallback this often in turn */
#define TUNE_DOT_MARGIN 1.25  /* and takes dot only where this much faster: timed warm, as the
                               * tuner times it, dot lost more inside a training step (the MLP's
                               * 128 x 256 x 784 forward product on PoCL; docs/performance.md,
                               * Matrix products on OpenCL devices) */
/* The stored choices' first line; a new number where the rules of choosing change, so that
 * choices made by the old ones are tuned again */
#define TUNE_FORMAT "cltensor gemm tuning 8\n"

static double now_s(void)
{
    return (double)clt__monotonic_ns() * 1e-9;
}

static const size_t few_rows[CLT__GEMM_FEW_CLASSES] = CLT__GEMM_FEW_ROWS;

/* The index of c's choice among a device's few-row ones, or -1 when it has none. */
static int few_class(const clt__gemm_call *c)
{
    for (int f = 0; c->trans_b && f < CLT__GEMM_FEW_CLASSES; f++)
        if (c->m <= few_rows[f])
            return CLT__GEMM_FEW + f;
    return -1;
}

int clt__gemm_class(const clt__gemm_call *c)
{
    double g = cbrt((double)c->m * (double)c->n * (double)c->k);
    int cls = 0;
    /* boundaries at the geometric midpoints of 64, 128, ... */
    for (double edge = 64 * 1.41421356; cls < CLT__GEMM_CLASSES - 1 && g > edge; edge *= 2)
        cls++;
    return cls;
}

/* CLT_GEMM, read once: -1 auto, a variant, or -2 for a value that names none. */
static int forced = -1;
static pthread_once_t forced_once = PTHREAD_ONCE_INIT;

static void read_forced(void)
{
    const char *s = getenv("CLT_GEMM");
    if (!s || !*s || strcmp(s, "auto") == 0)
        return;
    forced = -2;
    for (int v = 0; v < CLT__GEMM_VARIANTS; v++)
        if (strcmp(s, clt__gemm_variant_names[v]) == 0)
            forced = v;
}

/* Device buffers of the tuning problems. */
typedef struct scratch {
    cl_mem a, b, c, panels;
    size_t elems; /* of each */
} scratch;

static void scratch_free(scratch *s)
{
    cl_mem all[] = {s->a, s->b, s->c, s->panels};
    for (int i = 0; i < 4; i++)
        if (all[i])
            clt__cl_release_mem(all[i]);
}

static clt_status scratch_make(const char *fn, clt_device *dev, size_t elems, size_t elem,
                               scratch *s)
{
    cl_mem *all[] = {&s->a, &s->b, &s->c, &s->panels};
    cl_int err = CL_SUCCESS;
    *s = (scratch){.elems = elems};
    double half = 0.5;
    float half32 = 0.5f;
    const void *pattern = elem == 8 ? (const void *)&half : (const void *)&half32;
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        *all[i] = clCreateBuffer(clt__cl(dev)->context, CL_MEM_READ_WRITE, elems * elem, NULL,
                                 &err);
    /* timed products read numbers, never garbage that may hold slow subnormals or NaNs */
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clEnqueueFillBuffer(clt__cl(dev)->queue, *all[i], pattern, elem, 0, elems * elem, 0,
                                  NULL, NULL);
    if (err == CL_SUCCESS)
        return CLT_OK;
    scratch_free(s);
    return clt__cl_error(fn, dev, err, "allocating GEMM tuning buffers");
}

/* One product with its operands in the scratch buffers. */
static clt_status run(const char *fn, clt_device *dev, clt__gemm_variant v, clt__gemm_call c,
                      const scratch *s)
{
    c.a = s->a, c.b = s->b, c.c = s->c;
    return clt__cl_gemm_run(fn, dev, v, &c, s->panels);
}

/* The verification shapes: every transpose, sizes off every tile edge, offsets, padded
 * leading dimensions, batch strides, alpha and beta. */
typedef struct shape {
    size_t m, n, k, batch;
    bool ta, tb;
    double alpha, beta;
} shape;
static const shape checks[] = {
    {37, 70, 19, 1, false, false, 1, 0}, {5, 130, 67, 2, true, false, 1, 0},
    {66, 3, 9, 1, false, true, 0.5, 2},  {65, 129, 33, 3, true, true, 1, 1},
    {1, 1, 1, 1, false, false, 1, 0},
};

/* The call for a check on matrices stored with padded rows at offsets, batch after batch. */
static clt__gemm_call check_call(clt_dtype dtype, const shape *sh)
{
    clt__gemm_call c = {.dtype = dtype, .trans_a = sh->ta, .trans_b = sh->tb, .m = sh->m,
                        .n = sh->n, .k = sh->k, .batch = sh->batch, .alpha = sh->alpha,
                        .beta = sh->beta, .a_offset = 3, .b_offset = 5, .c_offset = 7};
    size_t ar = sh->ta ? sh->k : sh->m, ac = sh->ta ? sh->m : sh->k;
    size_t br = sh->tb ? sh->n : sh->k, bc = sh->tb ? sh->k : sh->n;
    c.lda = ac + 2, c.ldb = bc + 1, c.ldc = sh->n + 3;
    c.a_stride = ar * c.lda + 1, c.b_stride = br * c.ldb + 2, c.c_stride = sh->m * c.ldc + 1;
    return c;
}

static size_t check_elems(const clt__gemm_call *c, char which)
{
    size_t off = which == 'a' ? c->a_offset : which == 'b' ? c->b_offset : c->c_offset;
    size_t stride = which == 'a' ? c->a_stride : which == 'b' ? c->b_stride : c->c_stride;
    return off + stride * c->batch;
}

/* Small integers: every product and sum is exact in f32, so every variant must give exactly
 * the reference, whatever its order of summation. */
static double value(size_t i, unsigned salt)
{
    return (double)((i * 2654435761u + salt * 40503u) % 7) - 3;
}

static clt_status write_values(const char *fn, clt_device *dev, cl_mem buf, size_t n,
                               clt_dtype dtype, unsigned salt, double *host)
{
    size_t elem = clt_dtype_size(dtype);
    void *tmp = clt__alloc(fn, n * elem);
    if (!tmp)
        return CLT_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++) {
        host[i] = value(i, salt);
        if (dtype == CLT_F64)
            ((double *)tmp)[i] = host[i];
        else
            ((float *)tmp)[i] = (float)host[i];
    }
    cl_int err = clEnqueueWriteBuffer(clt__cl(dev)->queue, buf, CL_TRUE, 0, n * elem, tmp, 0,
                                      NULL, NULL);
    clt__free(tmp);
    return err == CL_SUCCESS ? CLT_OK : clt__cl_error(fn, dev, err, "writing GEMM checks");
}

/* C = alpha op(A) op(B) + beta C on the host, in double. */
static void reference(const clt__gemm_call *c, const double *a, const double *b, double *out)
{
    for (size_t bt = 0; bt < c->batch; bt++)
        for (size_t i = 0; i < c->m; i++)
            for (size_t j = 0; j < c->n; j++) {
                double sum = 0;
                for (size_t l = 0; l < c->k; l++) {
                    size_t ai = c->trans_a ? l * c->lda + i : i * c->lda + l;
                    size_t bi = c->trans_b ? j * c->ldb + l : l * c->ldb + j;
                    sum += a[c->a_offset + bt * c->a_stride + ai] *
                           b[c->b_offset + bt * c->b_stride + bi];
                }
                double *o = &out[c->c_offset + bt * c->c_stride + i * c->ldc + j];
                *o = c->alpha * sum + (c->beta != 0 ? c->beta * *o : 0);
            }
}

/* Runs one check with variant v; *ok says whether every element of C came out exact. */
static clt_status check_one(const char *fn, clt_device *dev, clt__gemm_variant v,
                            clt__gemm_call c, const scratch *s, double *host, bool *ok)
{
    size_t na = check_elems(&c, 'a'), nb = check_elems(&c, 'b'), nc = check_elems(&c, 'c');
    double *ha = host, *hb = ha + na, *hc = hb + nb;
    size_t elem = clt_dtype_size(c.dtype);
    void *got = NULL;
    clt_status st = write_values(fn, dev, s->a, na, c.dtype, 1, ha);
    if (st == CLT_OK)
        st = write_values(fn, dev, s->b, nb, c.dtype, 2, hb);
    if (st == CLT_OK)
        st = write_values(fn, dev, s->c, nc, c.dtype, 3, hc);
    if (st == CLT_OK)
        st = run(fn, dev, v, c, s);
    if (st == CLT_OK && !(got = clt__alloc(fn, nc * elem)))
        st = CLT_ERR_OUT_OF_MEMORY;
    if (st == CLT_OK) {
        cl_int err = clEnqueueReadBuffer(clt__cl(dev)->queue, s->c, CL_TRUE, 0, nc * elem, got,
                                         0, NULL, NULL);
        if (err != CL_SUCCESS)
            st = clt__cl_error(fn, dev, err, "reading GEMM checks");
    }
    if (st == CLT_OK) {
        reference(&c, ha, hb, hc);
        *ok = true;
        for (size_t i = 0; i < nc && *ok; i++) {
            double g = c.dtype == CLT_F64 ? ((double *)got)[i] : ((float *)got)[i];
            *ok = g == hc[i];
        }
    }
    clt__free(got);
    return st;
}

/* Whether variant v gives exact results on every check shape it can run (false on an error,
 * logged, and when it can run none). */
static bool verify(const char *fn, clt_device *dev, clt__gemm_variant v, clt_dtype dtype,
                   const scratch *s, double *host)
{
    int checked = 0;
    for (size_t i = 0; i < sizeof checks / sizeof *checks; i++) {
        clt__gemm_call c = check_call(dtype, &checks[i]);
        bool ok = false;
        clt_status st;
        if (!clt__cl_gemm_fits(dev, v, &c))
            continue;
        if ((st = check_one(fn, dev, v, c, s, host, &ok)) != CLT_OK || !ok) {
            clt__log(CLT_LOG_WARN, "GEMM variant %s on %s (%s) %s on %zu x %zu x %zu%s%s: not used",
                     clt__gemm_variant_names[v], dev->name, clt_dtype_name(dtype),
                     st != CLT_OK ? "failed" : "gave wrong results", c.m, c.n, c.k,
                     st != CLT_OK ? ": " : "", st != CLT_OK ? clt_last_error() : "");
            clt_clear_error();
            return false;
        }
        checked++;
    }
    return checked > 0;
}

double (*clt__cl_gemm_tune_clock)(clt__gemm_variant v, size_t m, size_t n, bool trans_b);

/* Seconds one product of v takes (finished), m x n x n with B transposed or not (the test
 * clock's where one is set); negative on an error. */
static double time_one(const char *fn, clt_device *dev, clt__gemm_variant v, clt_dtype dtype,
                       size_t m, size_t n, bool trans_b, const scratch *s)
{
    clt__gemm_call c = {.dtype = dtype,
                        .m = m,
                        .n = n,
                        .k = n,
                        .batch = 1,
                        .alpha = 1,
                        .lda = n,
                        .ldb = n,
                        .ldc = n,
                        .trans_b = trans_b};
    double t0 = now_s();
    if (run(fn, dev, v, c, s) != CLT_OK || clFinish(clt__cl(dev)->queue) != CL_SUCCESS)
        return -1;
    return clt__cl_gemm_tune_clock ? clt__cl_gemm_tune_clock(v, m, n, trans_b) : now_s() - t0;
}

/* The median of three timed runs after two more: the first may compile kernels (CLBlast builds
 * its own on first use) and is not counted; a variant whose second run is over three times the
 * best so far is not run again (it cannot win). *spent adds the counted runs' seconds. */
static double measure(const char *fn, clt_device *dev, clt__gemm_variant v, clt_dtype dtype,
                      size_t m, size_t n, bool trans_b, const scratch *s, double best,
                      double *spent)
{
    double t[3], second;
    if (time_one(fn, dev, v, dtype, m, n, trans_b, s) < 0 ||
        (second = time_one(fn, dev, v, dtype, m, n, trans_b, s)) < 0)
        return -1;
    *spent += second;
    if (best > 0 && second > 3 * best)
        return second;
    for (int r = 0; r < 3; r++) {
        if ((t[r] = time_one(fn, dev, v, dtype, m, n, trans_b, s)) < 0)
            return -1;
        *spent += t[r];
    }
    for (int i = 0; i < 2; i++) /* sort three */
        for (int j = 0; j < 2 - i; j++)
            if (t[j] > t[j + 1]) {
                double x = t[j];
                t[j] = t[j + 1], t[j + 1] = x;
            }
    return t[1];
}

static size_t host_elems(clt_dtype dtype)
{
    size_t most = 0;
    for (size_t i = 0; i < sizeof checks / sizeof *checks; i++) {
        clt__gemm_call c = check_call(dtype, &checks[i]);
        size_t n = check_elems(&c, 'a') + check_elems(&c, 'b') + check_elems(&c, 'c');
        if (n > most)
            most = n;
    }
    return most;
}

/* Whether tuning has run past its budget of wall-clock time; never under a test's clock, whose
 * times alone decide what is timed (the products still run, as fast as the machine lets them). */
static bool past_wall(double start)
{
    return !clt__cl_gemm_tune_clock && now_s() - start > TUNE_WALL_S;
}

/* Whether the register-tile kernels suit the device (see the top of this file). */
static bool tile_shaped(clt_device *dev)
{
    return clt__cl_serial(dev);
}

/* What a GPU's products run by default: CLBlast where it was found, else the library's tiled
 * kernel. */
static clt__gemm_variant gpu_default(void)
{
    return clt__clblast_load() ? CLT__GEMM_CLBLAST : CLT__GEMM_TILED;
}

/* The variant for a product no chosen one can run: CLBlast where it was found, else the first
 * of the library's kernels that takes it (tiled, or the one-work-item kernels that run on any
 * work-group size). */
static clt__gemm_variant last_resort(clt_device *dev, const clt__gemm_call *c)
{
    if (clt__clblast_load() || clt__cl_gemm_fits(dev, CLT__GEMM_TILED, c))
        return gpu_default();
    if (clt__cl_gemm_fits(dev, CLT__GEMM_PACKED, c))
        return CLT__GEMM_PACKED;
    return c->trans_b ? CLT__GEMM_DOT : CLT__GEMM_DIRECT;
}

/* The choices of a device that has not been tuned. */
static void defaults(clt_device *dev, unsigned char *choice)
{
    bool tiles = tile_shaped(dev);
    for (int cls = 0; cls < CLT__GEMM_CLASSES; cls++)
        choice[cls] = !tiles ? gpu_default() : cls < 3 ? CLT__GEMM_DIRECT : CLT__GEMM_PACKED;
    choice[CLT__GEMM_FALLBACK] = tiles ? CLT__GEMM_PACKED : gpu_default();
    for (int f = 0; f < CLT__GEMM_FEW_CLASSES; f++) /* dot has won to 64 rows */
        choice[CLT__GEMM_FEW + f] =
            tiles && few_rows[f] <= 64 ? CLT__GEMM_DOT : choice[CLT__GEMM_FALLBACK];
    choice[CLT__GEMM_NARROW] = tiles ? CLT__GEMM_DOT : choice[CLT__GEMM_FALLBACK];
    choice[CLT__GEMM_SHORT] = tiles ? CLT__GEMM_DIRECT : choice[CLT__GEMM_FALLBACK];
}

/* Whether tuning considers variant v on dev: the library's kernels shaped for it, and CLBlast
 * (where it was found) where the register tiles are not (on CPU-type devices its database knows
 * no parameters, its kernels ran an order of magnitude slower than the tiles, and compiling them
 * took PoCL long). */
static bool candidate(clt_device *dev, clt__gemm_variant v)
{
    if (v == CLT__GEMM_PACKED || v == CLT__GEMM_DIRECT || v == CLT__GEMM_DOT)
        return tile_shaped(dev);
    if (v == CLT__GEMM_CLBLAST)
        return !tile_shaped(dev) && clt__clblast_load();
    return v == CLT__GEMM_TILED;
}

/* A square class's winner against its runner-up where that came within TUNE_CLOSE of it: each timed
 * once more, the runner-up first, and each's faster of its two times taken (on a shared machine one
 * timing alone has stored the slower variant). t holds each variant's first time (-1 untimed),
 * *choice the winner; returns the winner's time. */
static double rematch(const char *fn, clt_device *dev, clt_dtype dtype, size_t size,
                      const scratch *s, double *t, double *spent, unsigned char *choice)
{
    int first = *choice, second = -1;
    for (int v = 0; v < CLT__GEMM_VARIANTS; v++)
        if (v != first && t[v] >= 0 && (second < 0 || t[v] < t[second]))
            second = v;
    if (t[first] < 0 || second < 0 || t[second] > TUNE_CLOSE * t[first])
        return t[first];
    int order[2] = {second, first};
    for (int i = 0; i < 2; i++) {
        double again =
            measure(fn, dev, (clt__gemm_variant)order[i], dtype, size, size, false, s, -1, spent);
        if (again >= 0 && again < t[order[i]])
            t[order[i]] = again;
    }
    if (t[second] < t[first])
        *choice = (unsigned char)second;
    return t[*choice];
}

/* Verifies and times every variant shaped for the device; fills choice. */
static clt_status tune(const char *fn, clt_device *dev, clt_dtype dtype, unsigned char *choice)
{
    size_t elem = clt_dtype_size(dtype), n = TUNE_MAX_N;
    bool ok[CLT__GEMM_VARIANTS], verified[CLT__GEMM_VARIANTS]; /* ok: verified and still timed */
    double start = now_s(), spent = 0, last = 0, *host; /* last: the last class's timed runs */
    scratch s;
    clt_status st;
    char line[512];
    int len;
    clt__gemm_call big = {.dtype = dtype, .m = n, .n = n, .k = n, .batch = 1};
    unsigned char fallback[CLT__GEMM_CHOICES]; /* what a class not timed takes, if verified */

    defaults(dev, fallback);

    if (!(host = clt__alloc(fn, host_elems(dtype) * sizeof *host)))
        return CLT_ERR_OUT_OF_MEMORY;
    st = scratch_make(fn, dev, clt__cl_gemm_panel_bytes(dev, &big) / elem, elem, &s);
    if (st != CLT_OK) {
        clt__free(host);
        return st;
    }
    for (int v = 0; v < CLT__GEMM_VARIANTS; v++)
        ok[v] = candidate(dev, (clt__gemm_variant)v) &&
                verify(fn, dev, (clt__gemm_variant)v, dtype, &s, host);
    memcpy(verified, ok, sizeof ok);
    clt__free(host);
    len = snprintf(line, sizeof line, "GEMM on %s (%s, %s):", dev->name, dev->info.name,
                   clt_dtype_name(dtype));
    for (int cls = 0; cls < CLT__GEMM_CLASSES; cls++) {
        size_t size = (size_t)64 << cls;
        double best = -1;
        choice[cls] = (unsigned char)gpu_default();
        /* each class costs about 8 times the last: stop before the budget would be passed, the
         * classes left taking the default (when it passed verification) */
        if (cls > 0 && (size > TUNE_MAX_N || spent + 8 * last > TUNE_BUDGET_S ||
                        past_wall(start))) {
            choice[cls] = verified[fallback[cls]] ? fallback[cls] : choice[cls - 1];
            continue;
        }
        double before = spent;
        double t[CLT__GEMM_VARIANTS];
        for (int v = 0; v < CLT__GEMM_VARIANTS; v++) {
            t[v] = ok[v] && v != CLT__GEMM_DOT /* not shaped for square products */
                       ? measure(fn, dev, (clt__gemm_variant)v, dtype, size, size, false, &s,
                                 best, &spent)
                       : -1;
            if (t[v] >= 0 && (best < 0 || t[v] < best))
                best = t[v], choice[cls] = (unsigned char)v;
        }
        best = rematch(fn, dev, dtype, size, &s, t, &spent, &choice[cls]);
        last = spent - before;
        /* a variant four times slower than the best is not timed at larger sizes (the library's
         * one-work-item kernels on a GPU), CLBlast's default always is */
        for (int v = CLT__GEMM_CLBLAST + 1; v < CLT__GEMM_VARIANTS; v++)
            if (v != CLT__GEMM_DOT && (t[v] < 0 || t[v] > 4 * best))
                ok[v] = false;
        if (len > 0 && (size_t)len < sizeof line)
            len += snprintf(line + len, sizeof line - (size_t)len, " %zu %s (%.1f GFLOP/s)", size,
                            clt__gemm_variant_names[choice[cls]],
                            best > 0 ? 2e-9 * (double)size * (double)size * (double)size / best
                                     : 0.0);
    }
    choice[CLT__GEMM_FALLBACK] =
        (unsigned char)(verified[CLT__GEMM_PACKED] ? CLT__GEMM_PACKED : gpu_default());
    /* few rows, B transposed: dot against the fallback on m x 512 x 512 */
    for (int f = 0; f < CLT__GEMM_FEW_CLASSES; f++) {
        unsigned char other = choice[CLT__GEMM_FALLBACK], *to = &choice[CLT__GEMM_FEW + f];
        double t_dot = -1, t_other = -1;
        if (!ok[CLT__GEMM_DOT]) {
            *to = other;
        } else if (past_wall(start)) { /* out of time: the default */
            *to = fallback[CLT__GEMM_FEW + f] == CLT__GEMM_DOT ? CLT__GEMM_DOT : other;
        } else { /* in turn, each's fastest taken: a shared machine's phases chose either of
                  * two close variants from run to run */
            for (int r = 0; r < TUNE_FEW_ROUNDS && (r == 0 || (t_other >= 0 && t_dot >= 0));
                 r++) {
                double a = measure(fn, dev, (clt__gemm_variant)other, dtype, few_rows[f], 512,
                                   true, &s, -1, &spent);
                double b = a >= 0 ? measure(fn, dev, CLT__GEMM_DOT, dtype, few_rows[f], 512,
                                            true, &s, -1, &spent)
                                  : -1;
                t_other = a < 0 ? -1 : r == 0 || a < t_other ? a : t_other;
                t_dot = b < 0 ? -1 : r == 0 || b < t_dot ? b : t_dot;
            }
            *to = t_dot >= 0 && t_other >= 0 && TUNE_DOT_MARGIN * t_dot < t_other ? CLT__GEMM_DOT
                                                                                 : other;
        }
        if (len > 0 && (size_t)len < sizeof line)
            len += snprintf(line + len, sizeof line - (size_t)len, "; %zu rows, B^T %s",
                            few_rows[f], clt__gemm_variant_names[*to]);
    }
    /* by the shape alone, where packing does not pay (cl_internal.h) */
    choice[CLT__GEMM_NARROW] =
        verified[CLT__GEMM_DOT] ? CLT__GEMM_DOT : choice[CLT__GEMM_FALLBACK];
    choice[CLT__GEMM_SHORT] =
        verified[CLT__GEMM_DIRECT] ? CLT__GEMM_DIRECT : choice[CLT__GEMM_FALLBACK];
    if (len > 0 && (size_t)len < sizeof line)
        len += snprintf(line + len, sizeof line - (size_t)len, "; narrow B^T %s; short %s",
                        clt__gemm_variant_names[choice[CLT__GEMM_NARROW]],
                        clt__gemm_variant_names[choice[CLT__GEMM_SHORT]]);
    scratch_free(&s);
    clt_clear_error();
    clt__log(CLT_LOG_INFO, "%s; tuned in %.2f s", line, now_s() - start);
    return CLT_OK;
}

/* The disk cache key of dtype's choices on dev: the kernels' text is part of it. */
static char *tuning_key(const char *fn, clt_device *dev, clt_dtype dtype, size_t *key_len)
{
    const char *text = NULL;
    char options[64], *owned = NULL, *key = NULL;
    size_t len = 0;
    snprintf(options, sizeof options, "gemm-tuning %s", clt_dtype_name(dtype));
    if (clt__cl_source_text(fn, "gemm", &text, &len, &owned) == CLT_OK)
        key = clt__cl_cache_key(fn, dev, options, 1, &text, &len, key_len);
    clt__free(owned);
    return key;
}

/* Choices read from a cache entry: the format line, then the name of each choice's variant. */
static bool parse(const unsigned char *data, size_t size, unsigned char *choice)
{
    char text[256], *save = NULL, *word;
    size_t head = strlen(TUNE_FORMAT);
    if (size >= sizeof text || size < head || memcmp(data, TUNE_FORMAT, head) != 0)
        return false;
    memcpy(text, data + head, size - head);
    text[size - head] = '\0';
    word = strtok_r(text, " \n", &save);
    for (int cls = 0; cls < CLT__GEMM_CHOICES; cls++, word = strtok_r(NULL, " \n", &save)) {
        int v = 0;
        while (word && v < CLT__GEMM_VARIANTS && strcmp(word, clt__gemm_variant_names[v]) != 0)
            v++;
        if (!word || v == CLT__GEMM_VARIANTS)
            return false;
        choice[cls] = (unsigned char)v;
    }
    return word == NULL;
}

static void store(const char *fn, const char *key, size_t key_len, const unsigned char *choice)
{
    char text[256];
    int len = snprintf(text, sizeof text, "%s", TUNE_FORMAT);
    for (int cls = 0; cls < CLT__GEMM_CHOICES; cls++)
        len += snprintf(text + len, sizeof text - (size_t)len, "%s\n",
                        clt__gemm_variant_names[choice[cls]]);
    clt__cl_cache_store(fn, key, key_len, (const unsigned char *)text, (size_t)len);
}

/* dtype's choices on dev from the disk cache into choice: whether there were any. With tune,
 * tunes when there were none (and stores the result). Called with gemm_lock held. */
static bool load_choices(const char *fn, clt_device *dev, clt_dtype dtype, bool tune_now,
                         unsigned char *choice)
{
    clt__error_state caller;
    clt__error_save(&caller);
    size_t key_len = 0, size = 0;
    char *key = tuning_key(fn, dev, dtype, &key_len);
    unsigned char *data = key ? clt__cl_cache_load(fn, key, key_len, &size) : NULL;
    bool found = key && data && parse(data, size, choice);
    if (found) {
        clt__log(CLT_LOG_DEBUG, "GEMM choices for %s (%s) from the disk cache", dev->name,
                 clt_dtype_name(dtype));
    } else if (tune_now && key && tune(fn, dev, dtype, choice) == CLT_OK) {
        store(fn, key, key_len, choice);
        found = true;
    } else if (tune_now) { /* not stored: a later warm-up tunes again */
        clt__log(CLT_LOG_WARN, "GEMM tuning on %s (%s) failed, products keep the default "
                 "variants: %s", dev->name, clt_dtype_name(dtype), clt_last_error());
    }
    clt__free(data);
    clt__free(key);
    clt__error_restore(&caller); /* tuning's own failures are handled above */
    return found;
}

/* dtype's choices on dev into choice: the stored or tuned ones, else the defaults; with
 * tune_now, tuned unless they were. */
static clt_status choices(const char *fn, clt_device *dev, clt_dtype dtype, bool tune_now,
                          clt__gemm_variant *choice)
{
    clt__cl_device *cd = clt__cl(dev);
    int d = dtype == CLT_F64;
    clt_status st = clt__cl_start(fn, dev);
    if (st != CLT_OK)
        return st;
    pthread_mutex_lock(&cd->gemm_lock);
    if (cd->gemm_state[d] == CLT__GEMM_UNKNOWN ||
        (tune_now && cd->gemm_state[d] == CLT__GEMM_DEFAULTS)) {
        if (load_choices(fn, dev, dtype, tune_now, cd->gemm_choice[d]))
            cd->gemm_state[d] = CLT__GEMM_TUNED;
        else if (cd->gemm_state[d] == CLT__GEMM_UNKNOWN)
            defaults(dev, cd->gemm_choice[d]), cd->gemm_state[d] = CLT__GEMM_DEFAULTS;
    }
    for (int cls = 0; choice && cls < CLT__GEMM_CHOICES; cls++)
        choice[cls] = (clt__gemm_variant)cd->gemm_choice[d][cls];
    pthread_mutex_unlock(&cd->gemm_lock);
    return CLT_OK;
}

clt_status clt__cl_gemm_tune(const char *fn, clt_device *dev, clt_dtype dtype,
                             clt__gemm_variant *choice)
{
    return choices(fn, dev, dtype, true, choice);
}

/* clt__cl_gemm_choose, the choices by shape taken where by_shape. */
static clt_status choose(const char *fn, clt_device *dev, const clt__gemm_call *c, bool by_shape,
                         clt__gemm_variant *v)
{
    clt__gemm_variant choice[CLT__GEMM_CHOICES];
    clt_status st;
    pthread_once(&forced_once, read_forced);
    if (forced == -2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "CLT_GEMM=%s names no GEMM variant: expected auto, clblast, packed, "
                          "direct, tiled or dot",
                          getenv("CLT_GEMM"));
    if (forced >= 0) {
        choice[0] = (clt__gemm_variant)forced;
        choice[CLT__GEMM_FALLBACK] = CLT__GEMM_PACKED;
    } else if ((st = choices(fn, dev, c->dtype, false, choice)) != CLT_OK) {
        return st;
    }
    *v = choice[forced >= 0 ? 0 : clt__gemm_class(c)];
    if (forced < 0 && few_class(c) >= 0)
        *v = choice[few_class(c)];
    if (forced < 0 && by_shape &&
        (*v == CLT__GEMM_PACKED || (c->trans_b && *v == CLT__GEMM_DIRECT))) {
        /* where packing does not pay: by the shape (cl_internal.h) */
        if (c->trans_b && (2 * c->n <= clt__cl_gemm_panel_width(dev, c->dtype) ||
                           (c->m <= CLT__GEMM_LONG_ROWS && c->k / CLT__GEMM_LONG_RATIO >= c->n)))
            *v = choice[CLT__GEMM_NARROW];
        else if (!c->trans_b && c->m <= CLT__GEMM_SHORT_ROWS)
            *v = choice[CLT__GEMM_SHORT];
    }
    if (!clt__cl_gemm_fits(dev, *v, c))
        *v = choice[CLT__GEMM_FALLBACK];
    /* CLBlast chosen when it was there (a stored tuning), gone now */
    if (!clt__cl_gemm_fits(dev, *v, c) || (*v == CLT__GEMM_CLBLAST && forced < 0 &&
                                           !clt__clblast_load()))
        *v = last_resort(dev, c);
    return CLT_OK;
}

clt_status clt__cl_gemm_choose(const char *fn, clt_device *dev, const clt__gemm_call *c,
                               clt__gemm_variant *v)
{
    return choose(fn, dev, c, true, v);
}

clt_status clt__cl_gemm_choose_by_size(const char *fn, clt_device *dev, const clt__gemm_call *c,
                                       clt__gemm_variant *v)
{
    return choose(fn, dev, c, false, v);
}

/* The product run by the variant chosen for it: composed of products of C's column groups where
 * that variant stores C's rows whole, with the packed variant's panels from the scratch
 * buffers. */
clt_status clt__cl_gemm(const char *fn, clt_device *dev, const clt__gemm_call *c)
{
    clt__gemm_variant v;
    void *panels = NULL;
    size_t capacity = 0;
    clt__gemm_call plain = *c; /* the variant chosen as for C's rows whole, without row sums */
    plain.c_group = plain.c_group_stride = 0;
    plain.row_sums = NULL;
    clt_status st = clt__cl_gemm_choose(fn, dev, &plain, &v);

    if (st != CLT_OK)
        return st;
    if (c->c_group && !clt__cl_gemm_fits(dev, v, c)) /* a variant that stores rows whole */
        return clt__gemm_composed_groups(fn, dev, c, clt__cl_gemm);
    if (v == CLT__GEMM_PACKED &&
        (st = clt__scratch_alloc(fn, dev, clt__cl_gemm_panel_bytes(dev, c), &panels,
                                &capacity)) != CLT_OK)
        return st;
    st = clt__cl_gemm_run(fn, dev, v, c, panels);
    if (panels) /* the in-order queue runs whatever reuses it after this product */
        clt__scratch_free(dev, panels, capacity);
    return st;
}
