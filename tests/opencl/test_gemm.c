/* Gemm suite: every GEMM variant of the OpenCL backend on awkward strided-batched calls against
 * a product computed in double here; CLBlast's status codes; the defaults per device type; the
 * tuner (a variant that gives wrong results is never chosen, the choice is stored and read back
 * by another process; a kernel that does not build is skipped); CLT_GEMM forcing a variant. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "matmul_check.h"
#include "opencl_helpers.h"
#include "tensor/tensor_internal.h"

/* What a GPU-type device's products run where nothing else is chosen: CLBlast when the library
 * found it (the gemm_no_clblast run sets CLT_CLBLAST_LIBRARY=off), else the tiled kernel. */
static clt__gemm_variant gpu_default(void)
{
    return clt__clblast_load() ? CLT__GEMM_CLBLAST : CLT__GEMM_TILED;
}

/* The OpenCL backend turns CLBlast's own status codes into CLT_ERR_INTERNAL naming the code
 * (here a leading dimension below the column count, which the front end never passes). */
START_TEST(test_gemm_clblast_status)
{
    clt_device *dev = test_device(_i);
    char text[200];
    if (clt_device_get_info(dev)->type == CLT_DEVICE_HOST)
        return;
    if (!clt__clblast_load()) { /* asked for, CLBlast's absence is an error that says why */
        clt__gemm_call none = {.dtype = CLT_F32, .m = 4, .n = 4, .k = 4, .batch = 1};
        ck_assert_int_eq(clt__cl_gemm_run("clt_matmul", dev, CLT__GEMM_CLBLAST, &none, NULL),
                         CLT_ERR_UNSUPPORTED);
        const char *off = getenv("CLT_CLBLAST_LIBRARY"); /* else not installed (Wine) */
        ck_assert_error_has(off && strcmp(off, "off") == 0
                                ? "asks for CLBlast, which is not used: CLBlast not loaded: "
                                  "CLT_CLBLAST_LIBRARY=off"
                                : "asks for CLBlast, which is not used: CLBlast not found: ");
        return;
    }
    clt_tensor *a = clt_tensor_ones(CLT_SHAPE(4, 4), CLT_F32, dev);
    clt_tensor *c = clt_tensor_zeros(CLT_SHAPE(4, 4), CLT_F32, dev);
    clt__gemm_call g = {.dtype = CLT_F32, .m = 4, .n = 4, .k = 4, .batch = 1, .alpha = 1,
                        .a = a->storage->buf, .b = a->storage->buf, .c = c->storage->buf,
                        .lda = 2, .ldb = 4, .ldc = 4};
    clt_clear_error();
    ck_assert_int_eq(clt__cl_gemm_run("clt_matmul", dev, CLT__GEMM_CLBLAST, &g, NULL),
                     CLT_ERR_INTERNAL);
    snprintf(text, sizeof text,
             "clt_matmul: CLBlastSgemm (4 x 4 by 4 x 4, batch 1) on %s failed with CLBlast "
             "status -1016 (CLBlastInvalidLeadDimA)",
             clt_device_name(dev));
    ck_assert_error_has(text);
    g.lda = 4;
    g.batch = 2;
    g.c_stride = 256; /* C's buffer (512 bytes: the allocator's smallest class) lacks the second */
    ck_assert_int_eq(clt__cl_gemm_run("clt_matmul", dev, CLT__GEMM_CLBLAST, &g, NULL),
                     CLT_ERR_INTERNAL);
    ck_assert_error_has("CLBlastSgemmStridedBatched (4 x 4 by 4 x 4, batch 2)");
    ck_assert_error_has("CLBlastInsufficientMemoryC");
    clt_tensor_release(c);
    clt_tensor_release(a);
}
END_TEST

/* Strided-batched calls for the variant test: see test_gemm_check. */
static const test_gemm_case gemm_cases[] = {
    {1, 1, 1, 1, false, false, 1, 0, false, 0},    {4, 64, 8, 1, false, false, 1, 0, false, 0},
    {5, 65, 3, 1, false, false, 1, 0, false, 0},   {3, 1, 100, 1, true, false, 1, 0, false, 0},
    {1, 200, 7, 1, false, true, 1, 0, false, 0},   {70, 130, 45, 2, true, true, 0.5, 2, false, 0},
    {33, 64, 129, 3, false, false, 1, 1, true, 0}, {130, 17, 64, 1, false, true, 1, -1, false, 0},
    {257, 70, 31, 2, true, false, 2, 0, true, 0},  {8, 128, 256, 1, false, false, 1, 0, false, 0},
    /* the epilogue: a bias along the columns or the rows, ReLU with and without a bias or beta */
    {37, 70, 19, 2, false, true, 1, 0, false, TEST_EP_BIAS},
    {37, 70, 19, 2, true, false, 0.5, 0, true, TEST_EP_BIAS | TEST_EP_ROWS | TEST_EP_RELU},
    {70, 5, 33, 1, false, false, 1, 0, false, TEST_EP_BIAS | TEST_EP_RELU},
    {9, 66, 12, 3, false, true, 1, 1, false, TEST_EP_RELU},
    /* a last panel of whole vectors, a cut one and none (AVX-512's 64-wide f32 panels) */
    {6, 104, 20, 2, true, false, 1, 0, false, TEST_EP_BIAS | TEST_EP_RELU},
};

/* Every variant of the OpenCL backend, f32 and f64, on every case: transposes, sizes off the
 * tile edges, offsets, padded rows, batch strides, a B shared by the batch, alpha and beta, and
 * the epilogue (CLBlast's through elementwise operations). */
START_TEST(test_gemm_variants)
{
    clt_device *dev = test_device(_i);
    if (clt__is_host(dev))
        return;
    srand(5);
    for (int v = 0; v < CLT__GEMM_VARIANTS; v++)
        for (int d = 0; d < 2; d++) {
            clt_dtype dt = d ? CLT_F64 : CLT_F32;
            if ((dt == CLT_F64 && !dev->info.fp64) ||
                (v == CLT__GEMM_CLBLAST && !clt__clblast_load())) /* test_gemm_clblast_status */
                continue;
            for (size_t i = 0; i < sizeof gemm_cases / sizeof *gemm_cases; i++)
                test_gemm_check(dev, dt, (clt__gemm_variant)v, &gemm_cases[i]);
        }
}
END_TEST

static void collect_log(clt_log_level level, const char *message, void *user)
{
    char *log = user;
    (void)level;
    size_t used = strlen(log);
    snprintf(log + used, 8192 - used, "%s\n", message);
}

/* f32 tuning on gpu:0, the choices into choice[CLT__GEMM_CHOICES]: 0 when they came out of
 * tuning (logged "tuned in"), the log holds `expect` and no choice is the variant `never`. */
static int tune_into(clt__gemm_variant *choice, clt__gemm_variant never, const char *expect,
                     char *log)
{
    clt_device *gpu = clt_device_get("gpu:0");
    clt_set_log_callback(collect_log, log, CLT_LOG_INFO);
    if (!gpu || clt__cl_gemm_tune("test", gpu, CLT_F32, choice) != CLT_OK)
        return 1;
    for (int i = 0; i < CLT__GEMM_CHOICES; i++)
        if (choice[i] == never)
            return 2;
    if (!strstr(log, expect))
        return 4;
    return strstr(log, "tuned in") ? 0 : 5;
}

/* tune_into in this process, asserting it succeeded: choice receives the choices. */
static void tune_here(clt__gemm_variant never, const char *expect, char *log,
                      clt__gemm_variant *choice)
{
    ck_assert_int_eq(tune_into(choice, never, expect, log), 0);
}

/* A copy of the kernels in a fresh folder, made CLT_KERNEL_DIR, in which the GEMM kernel whose
 * body holds `line` negates every product it computes. */
static void break_gemm_kernel(const char *line)
{
    const char *kernels = test_temp_dir();
    char path[512], *text = calloc(1, 1 << 16), *at;
    FILE *f;
    test_copy_kernels(kernels);
    snprintf(path, sizeof path, "%s/gemm.cl", kernels);
    ck_assert_ptr_nonnull(f = fopen(path, "rb"));
    ck_assert_uint_gt(fread(text, 1, (1 << 16) - 1, f), 0);
    fclose(f);
    ck_assert_ptr_nonnull(at = strstr(text, line));
    ck_assert_ptr_nonnull(f = fopen(path, "wb"));
    fwrite(text, 1, (size_t)(at - text) + strlen(line), f);
    fputs(" alpha = -alpha;", f);
    fputs(at + strlen(line), f);
    fclose(f);
    free(text);
    setenv("CLT_KERNEL_DIR", kernels, 1);
}

/* a @ b (b^T with transpose_b) of a few sizes, one from each of several classes, checked. */
/* An m x k by k x n product of random f32 on dev (B stored transposed with transpose_b) against
 * the host's. */
static void product_right(clt_device *dev, int64_t m, int64_t k, int64_t n, bool transpose_b)
{
    clt_tensor *a = rnd(dev, CLT_F32, CLT_SHAPE(m, k));
    clt_tensor *b = transpose_b ? rnd(dev, CLT_F32, CLT_SHAPE(n, k))
                                : rnd(dev, CLT_F32, CLT_SHAPE(k, n));
    clt_tensor *bt = transpose_b ? clt_transpose(b, 0, 1) : clt_tensor_retain(b);
    clt_tensor *c = clt_matmul(a, bt);
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    check_matmul(a, bt, c, TOL_F32);
    clt_tensor_release(c), clt_tensor_release(bt), clt_tensor_release(b);
    clt_tensor_release(a);
}

static void products_right(bool transpose_b)
{
    clt_device *gpu = clt_device_get("gpu:0");
    clt_manual_seed(4);
    for (int64_t n = 24; n <= 600; n *= 5)
        product_right(gpu, n, n + 3, n, transpose_b);
}

/* Choices that name CLBlast (a tuning stored where CLBlast was found) on a run without it
 * (gemm_no_clblast): every product runs one of the library's kernels instead, and is right. */
START_TEST(test_gemm_stored_clblast_absent)
{
    clt_device *dev = test_device(_i);
    clt__gemm_variant v;
    if (clt__is_host(dev) || clt__clblast_load())
        return;
    unsetenv("CLT_GEMM");
    setenv("CLT_CACHE_DIR", "off", 1);
    clt__cl_device *cd = clt__cl(dev);
    ck_assert_int_eq(clt__cl_start("test", dev), CLT_OK);
    pthread_mutex_lock(&cd->gemm_lock);
    cd->gemm_state[0] = CLT__GEMM_TUNED;
    memset(cd->gemm_choice[0], CLT__GEMM_CLBLAST, sizeof cd->gemm_choice[0]);
    pthread_mutex_unlock(&cd->gemm_lock);
    for (int64_t m = 1; m <= 300; m += 299)
        for (int t = 0; t < 2; t++) {
            clt__gemm_call c = {.dtype = CLT_F32, .m = (size_t)m, .n = 200, .k = 96, .batch = 1,
                                .trans_b = t};
            ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &c, &v), CLT_OK);
            ck_assert_int_ne(v, CLT__GEMM_CLBLAST);
            product_right(dev, m, 96, 200, t);
        }
}
END_TEST

/* Tuning f32 on gpu:0 with the direct kernel broken (test_gemm_tuning), its choices written to
 * the file `arg`: true when they came out of tuning and direct is not among them. */
TEST_CHILD_FN(tune_without_direct)
{
    static char log[8192];
    clt__gemm_variant choice[CLT__GEMM_CHOICES];
    FILE *f = NULL;
    bool ok = tune_into(choice, CLT__GEMM_DIRECT,
                        "GEMM variant direct on gpu:0 (f32) gave wrong results", log) == 0 &&
              (f = fopen(arg, "wb")) != NULL && fwrite(choice, sizeof choice, 1, f) == 1;
    return f && fclose(f) == 0 && ok;
}

/* The tuner with a direct kernel that gives wrong results (CLT_KERNEL_DIR): it is verified out
 * with a warning and never chosen; a process started after reads the same choices from the disk
 * cache without tuning, and products are right with them. */
START_TEST(test_gemm_tuning)
{
    static char log[8192];
    clt__gemm_variant first[CLT__GEMM_CHOICES], again[CLT__GEMM_CHOICES];
    char cache[320], path[400];
    if (!test_use_vendors(true, false))
        return;
    unsetenv("CLT_GEMM"); /* the tuned choice, whatever the environment says */
    snprintf(cache, sizeof cache, "%s", test_temp_dir());
    setenv("CLT_CACHE_DIR", cache, 1);
    break_gemm_kernel("__global const T *bp = bsrc + b_off + b * b_bs + j0;"); /* direct */

    /* in a process started before this one touches OpenCL */
    snprintf(path, sizeof path, "%s/choices", test_temp_dir());
    ck_assert_msg(test_run_children(1, "tune_without_direct", tune_without_direct, path),
                  "the tuning child failed");
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(first, sizeof first, 1, f), 1);
    fclose(f);

    ck_assert_int_eq(tune_into(again, CLT__GEMM_DIRECT, "", log), 5); /* not tuned again */
    ck_assert_mem_eq(first, again, sizeof first);

    products_right(false);
    products_right(true);
}
END_TEST

/* A packed kernel that gives wrong results: never chosen, nor as the variant for products whose
 * class chose direct but whose B is transposed (CLBlast runs those), and products are right. */
START_TEST(test_gemm_tuning_fallback)
{
    static char log[8192];
    clt__gemm_variant choice[CLT__GEMM_CHOICES];
    if (!test_use_vendors(true, false))
        return;
    unsetenv("CLT_GEMM");
    setenv("CLT_CACHE_DIR", "off", 1);
    break_gemm_kernel(
        "__global const T *bp = panels + ((ulong)b * get_global_size(1) + p) * k * PW;");
    tune_here(CLT__GEMM_PACKED, "GEMM variant packed on gpu:0 (f32) gave wrong results", log,
              choice);
    ck_assert_int_eq(choice[CLT__GEMM_CLASSES], gpu_default());
    products_right(true);
    products_right(false);
}
END_TEST

/* A dot kernel that gives wrong results: never chosen, nor for narrow products with B
 * transposed (packed runs those), and products are right; the untimed class of 2048 and more
 * keeps packed. */
START_TEST(test_gemm_tuning_no_dot)
{
    static char log[8192];
    clt__gemm_variant choice[CLT__GEMM_CHOICES], v;
    if (!test_use_vendors(true, false))
        return;
    unsetenv("CLT_GEMM");
    setenv("CLT_CACHE_DIR", "off", 1);
    break_gemm_kernel("bt[q] = bb + (ulong)min(j0 + q, n - 1) * ldb;"); /* dot */
    tune_here(CLT__GEMM_DOT, "GEMM variant dot on gpu:0 (f32) gave wrong results", log, choice);
    ck_assert_int_eq(choice[CLT__GEMM_NARROW], CLT__GEMM_PACKED);
    /* the class of 2048 and more is not timed: it keeps the default, whatever won at 1024 */
    ck_assert_int_eq(choice[CLT__GEMM_CLASSES - 1], CLT__GEMM_PACKED);
    clt__gemm_call huge = {.dtype = CLT_F32, .m = 2048, .n = 2048, .k = 2048, .batch = 1};
    clt__gemm_call big = {.dtype = CLT_F32, .m = 1024, .n = 1024, .k = 1024, .batch = 1};
    ck_assert_int_eq(clt__gemm_class(&huge), CLT__GEMM_CLASSES - 1);
    ck_assert_int_eq(clt__gemm_class(&big), CLT__GEMM_CLASSES - 2);
    clt__gemm_call narrow = {.dtype = CLT_F32, .m = 7, .n = 3, .k = 300, .batch = 1,
                             .trans_b = true};
    ck_assert_int_eq(clt__cl_gemm_choose("test", clt_device_get("gpu:0"), &narrow, &v), CLT_OK);
    ck_assert_int_eq(v, CLT__GEMM_PACKED);
    products_right(true);
}
END_TEST

/* The tuner's clock for test_gemm_rematch and test_gemm_few_rows: square products of 64 take
 * fake_first[v] seconds in a variant's first five timed runs (one measure) and fake_again[v]
 * after; a few-row class's products (B transposed, m x 512) take few_time[class][v][round] in
 * the round-th measure of v there, for packed and dot; every other product is taken to favour
 * packed. fake_runs counts each variant's runs at 64. */
static double fake_first[CLT__GEMM_VARIANTS], fake_again[CLT__GEMM_VARIANTS];
static int fake_runs[CLT__GEMM_VARIANTS];
enum { FEW_ROUNDS = 3 };
static double few_time[CLT__GEMM_FEW_CLASSES][CLT__GEMM_VARIANTS][FEW_ROUNDS];
static int few_runs[CLT__GEMM_FEW_CLASSES][CLT__GEMM_VARIANTS];

static double fake_clock(clt__gemm_variant v, size_t m, size_t n, bool trans_b)
{
    static const size_t rows[CLT__GEMM_FEW_CLASSES] = CLT__GEMM_FEW_ROWS;
    for (int f = 0; trans_b && n == 512 && f < CLT__GEMM_FEW_CLASSES; f++)
        if (m == rows[f] && (v == CLT__GEMM_PACKED || v == CLT__GEMM_DOT)) {
            int round = few_runs[f][v]++ / 5;
            return few_time[f][v][round < FEW_ROUNDS ? round : FEW_ROUNDS - 1];
        }
    if (trans_b || m != n || n != 64)
        return v == CLT__GEMM_PACKED ? 1e-3 : 2e-3;
    return ++fake_runs[v] <= 5 ? fake_first[v] : fake_again[v];
}

/* Every few-row class's packed and dot: 1 ms and 2 ms in every round. */
static void few_rows_favour_packed(void)
{
    for (int f = 0; f < CLT__GEMM_FEW_CLASSES; f++)
        for (int r = 0; r < FEW_ROUNDS; r++) {
            few_time[f][CLT__GEMM_PACKED][r] = 1e-3, few_time[f][CLT__GEMM_DOT][r] = 2e-3;
            few_runs[f][CLT__GEMM_PACKED] = few_runs[f][CLT__GEMM_DOT] = 0;
        }
}

/* Tunes gpu:0's f32 afresh with the fake clock: direct's first and second times (packed's 1 ms
 * then packed_again), the class of 64's choice, and direct's and packed's runs at 64. */
static clt__gemm_variant tune_faked(double direct, double direct_again, double packed_again,
                                    int *direct_runs, int *packed_runs)
{
    static char log[8192];
    clt__gemm_variant choice[CLT__GEMM_CHOICES];
    for (int v = 0; v < CLT__GEMM_VARIANTS; v++)
        fake_first[v] = fake_again[v] = 0.1, fake_runs[v] = 0; /* clblast, tiled: far behind */
    few_rows_favour_packed();
    fake_first[CLT__GEMM_PACKED] = 1e-3, fake_again[CLT__GEMM_PACKED] = packed_again;
    fake_first[CLT__GEMM_DIRECT] = direct, fake_again[CLT__GEMM_DIRECT] = direct_again;
    clt__cl(clt_device_get("gpu:0"))->gemm_state[0] = CLT__GEMM_UNKNOWN;
    log[0] = '\0';
    tune_here(CLT__GEMM_VARIANTS, "tuned in", log, choice);
    *direct_runs = fake_runs[CLT__GEMM_DIRECT], *packed_runs = fake_runs[CLT__GEMM_PACKED];
    return choice[0];
}

/* A square class's runner-up within 1.5 times the winner is timed again, in turn with the
 * winner, each keeping its faster time: a runner-up that is faster the second time wins, one
 * that is not loses; one further behind is not timed again. With a clock that names the
 * times (clt__cl_gemm_tune_clock), five runs a measure. */
START_TEST(test_gemm_rematch)
{
    int direct_runs, packed_runs;
    if (!test_use_vendors(true, false))
        return;
    unsetenv("CLT_GEMM");
    setenv("CLT_CACHE_DIR", "off", 1);
    clt__cl_gemm_tune_clock = fake_clock;
    /* 1.2 ms against 1 ms: timed again, 0.8 ms: direct wins */
    ck_assert_int_eq(tune_faked(1.2e-3, 0.8e-3, 1e-3, &direct_runs, &packed_runs),
                     CLT__GEMM_DIRECT);
    ck_assert_int_eq(direct_runs, 10);
    ck_assert_int_eq(packed_runs, 10);
    /* 1.4 ms, then 1.1 ms against packed's 1.2 ms: each keeps its faster, packed's 1 ms */
    ck_assert_int_eq(tune_faked(1.4e-3, 1.1e-3, 1.2e-3, &direct_runs, &packed_runs),
                     CLT__GEMM_PACKED);
    ck_assert_int_eq(direct_runs, 10);
    /* 1.6 ms: not timed again, though it would be faster */
    ck_assert_int_eq(tune_faked(1.6e-3, 0.5e-3, 1e-3, &direct_runs, &packed_runs),
                     CLT__GEMM_PACKED);
    ck_assert_int_eq(direct_runs, 5);
    ck_assert_int_eq(packed_runs, 5);
    clt__cl_gemm_tune_clock = NULL;
}
END_TEST

/* A few-row class takes dot over packed only where dot's fastest of three measures, each in
 * turn with packed's, is more than 1.25 times faster than packed's fastest: 0.7 ms against 1 ms
 * takes dot, 0.85 ms does not; dot fast in the third round only still wins, and packed fast in
 * its third only keeps it within the margin. */
START_TEST(test_gemm_few_rows)
{
    static char log[8192];
    clt__gemm_variant choice[CLT__GEMM_CHOICES];
    static const double dot_time[CLT__GEMM_FEW_CLASSES][FEW_ROUNDS] = {
        {0.7e-3, 0.7e-3, 0.7e-3}, {0.85e-3, 0.85e-3, 0.85e-3}, {2e-3, 2e-3, 0.7e-3},
        {0.8e-3, 0.8e-3, 0.8e-3}};
    if (!test_use_vendors(true, false))
        return;
    unsetenv("CLT_GEMM");
    setenv("CLT_CACHE_DIR", "off", 1);
    clt__cl_gemm_tune_clock = fake_clock;
    few_rows_favour_packed();
    for (int f = 0; f < CLT__GEMM_FEW_CLASSES; f++)
        for (int r = 0; r < FEW_ROUNDS; r++)
            few_time[f][CLT__GEMM_DOT][r] = dot_time[f][r];
    few_time[CLT__GEMM_FEW_CLASSES - 1][CLT__GEMM_PACKED][0] = 2e-3; /* 2, 2, 0.9 ms */
    few_time[CLT__GEMM_FEW_CLASSES - 1][CLT__GEMM_PACKED][1] = 2e-3;
    few_time[CLT__GEMM_FEW_CLASSES - 1][CLT__GEMM_PACKED][2] = 0.9e-3;
    clt__cl(clt_device_get("gpu:0"))->gemm_state[0] = CLT__GEMM_UNKNOWN;
    log[0] = '\0';
    tune_here(CLT__GEMM_VARIANTS, "tuned in", log, choice);
    static const clt__gemm_variant want[CLT__GEMM_FEW_CLASSES] = {
        CLT__GEMM_DOT, CLT__GEMM_PACKED, CLT__GEMM_DOT, CLT__GEMM_PACKED};
    for (int f = 0; f < CLT__GEMM_FEW_CLASSES; f++) {
        ck_assert_msg(choice[CLT__GEMM_FEW + f] == want[f], "few-row class %d: %s, want %s (%s)",
                      f, clt__gemm_variant_names[choice[CLT__GEMM_FEW + f]],
                      clt__gemm_variant_names[want[f]], log);
        ck_assert_int_eq(few_runs[f][CLT__GEMM_PACKED], 5 * FEW_ROUNDS); /* five a measure */
        ck_assert_int_eq(few_runs[f][CLT__GEMM_DOT], 5 * FEW_ROUNDS);
    }
    clt__cl_gemm_tune_clock = NULL;
}
END_TEST

/* A gemm.cl that does not build: the library's variants fail verification with the build's
 * error in a warning, and CLBlast runs every product. The failures are the tuner's own: the
 * caller's last error stays as it was. */
START_TEST(test_gemm_tuning_build_failure)
{
    static char log[8192];
    const char *kernels = test_temp_dir();
    clt__gemm_variant choice[CLT__GEMM_CHOICES];
    if (!test_use_vendors(true, false))
        return;
    unsetenv("CLT_GEMM");
    setenv("CLT_CACHE_DIR", "off", 1);
    test_copy_kernels(kernels);
    test_write_file(kernels, "gemm.cl", "__kernel void gemm_pack(void) { not OpenCL C }\n");
    test_allow_stderr(); /* PoCL prints the compiler's error count */
    setenv("CLT_KERNEL_DIR", kernels, 1);
    clt_set_error(CLT_ERR_SHAPE, "earlier", "a failure before tuning");
    tune_here(CLT__GEMM_PACKED, "building OpenCL program 'gemm:", log, choice);
    ck_assert_str_eq(clt_last_error(), "earlier: a failure before tuning");
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_msg(strstr(log, "GEMM variant packed on gpu:0 (f32) failed") != NULL, "%s", log);
    ck_assert_msg(strstr(log, "GEMM variant direct on gpu:0 (f32) failed") != NULL, "%s", log);
    for (int i = 0; i < CLT__GEMM_CHOICES; i++)
        ck_assert_int_eq(choice[i], gpu_default());
}
END_TEST

/* An untuned device runs the default variant for its kind at once, small products and large:
 * the register tiles where the driver keeps each work-item's vectors (native float width above
 * 1), and dot products for few rows by a transposed B, CLBlast where it vectorises across
 * work-items; nothing is tuned, and the products are right. */
START_TEST(test_gemm_defaults)
{
    static char log[8192];
    clt_device *dev = test_device(_i);
    clt__gemm_variant v;
    if (clt__is_host(dev))
        return;
    unsetenv("CLT_GEMM");
    setenv("CLT_CACHE_DIR", test_temp_dir(), 1); /* no stored choices */
    clt_set_log_callback(collect_log, log, CLT_LOG_INFO);
    bool tiles = clt__cl(dev)->native_float_width > 1;
    clt__gemm_call small = {.dtype = CLT_F32, .m = 1, .n = 5, .k = 10, .batch = 1};
    clt__gemm_call large = {.dtype = CLT_F32, .m = 1024, .n = 1024, .k = 1024, .batch = 1};
    ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &small, &v), CLT_OK);
    ck_assert_int_eq(v, tiles ? CLT__GEMM_DIRECT : gpu_default());
    ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &large, &v), CLT_OK);
    ck_assert_int_eq(v, tiles ? CLT__GEMM_PACKED : gpu_default());
    for (size_t m = 1; m <= 200; m += 63) { /* B transposed: dot products up to 64 rows */
        clt__gemm_call few =
            {.dtype = CLT_F32, .m = m, .n = 3072, .k = 768, .batch = 1, .trans_b = true};
        ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &few, &v), CLT_OK);
        ck_assert_int_eq(v, !tiles    ? gpu_default()
                            : m <= 64 ? CLT__GEMM_DOT
                                      : CLT__GEMM_PACKED);
    }
    /* by the shape: B transposed and at most half a panel wide runs dot, B as stored and at
     * most CLT__GEMM_SHORT_ROWS rows direct, where the size alone would pack */
    size_t half = clt__cl_gemm_panel_width(dev, CLT_F32) / 2;
    for (size_t n = half; n <= half + 1; n++) {
        clt__gemm_call narrow =
            {.dtype = CLT_F32, .m = 128, .n = n, .k = 512, .batch = 1, .trans_b = true};
        ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &narrow, &v), CLT_OK);
        ck_assert_int_eq(v, !tiles ? gpu_default() : n == half ? CLT__GEMM_DOT
                                                                   : CLT__GEMM_PACKED);
    }
    for (size_t m = CLT__GEMM_SHORT_ROWS; m <= CLT__GEMM_SHORT_ROWS + 1; m++) {
        clt__gemm_call wide = {.dtype = CLT_F32, .m = m, .n = 4096, .k = 4096, .batch = 1};
        ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &wide, &v), CLT_OK);
        ck_assert_int_eq(v, !tiles                       ? gpu_default()
                            : m <= CLT__GEMM_SHORT_ROWS ? CLT__GEMM_DIRECT
                                                         : CLT__GEMM_PACKED);
        /* a convolution's product keeps the size class's choice (its packed path) */
        ck_assert_int_eq(clt__cl_gemm_choose_by_size("test", dev, &wide, &v), CLT_OK);
        ck_assert_int_eq(v, tiles ? CLT__GEMM_PACKED : gpu_default());
    }
    clt_manual_seed(6);
    for (int64_t n = 1; n <= 200; n *= 14) {
        clt_tensor *a = rnd(dev, CLT_F32, CLT_SHAPE(n, 10));
        clt_tensor *b = rnd(dev, CLT_F32, CLT_SHAPE(10, 5));
        clt_tensor *c = clt_matmul(a, b);
        ck_assert_msg(c != NULL, "%s", clt_last_error());
        check_matmul(a, b, c, TOL_F32);
        clt_tensor_release(c), clt_tensor_release(b), clt_tensor_release(a);
    }
    ck_assert_msg(strstr(log, "tuned in") == NULL, "%s", log);
}
END_TEST

/* Few rows by a transposed B with k at least CLT__GEMM_LONG_RATIO times n (a convolution's
 * weight gradient) run dot even where the few-row choice is packed: the long panels would be
 * read out of cache by a few tiles each. More rows, or a shorter k, keep the tuned choice. */
START_TEST(test_gemm_long_k)
{
    clt_device *dev = test_device(_i);
    clt__gemm_variant v;
    if (clt__is_host(dev) || clt__cl(dev)->native_float_width == 1)
        return;
    unsetenv("CLT_GEMM");
    setenv("CLT_CACHE_DIR", test_temp_dir(), 1); /* no stored choices */
    clt__gemm_call c = {.dtype = CLT_F32, .m = 32, .n = 144, .k = 1152, .batch = 1,
                        .trans_b = true};
    ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &c, &v), CLT_OK); /* the defaults */
    clt__cl_device *cd = clt__cl(dev);
    ck_assert_int_eq(cd->gemm_choice[0][CLT__GEMM_NARROW], CLT__GEMM_DOT);
    for (int f = 0; f < CLT__GEMM_FEW_CLASSES; f++)
        cd->gemm_choice[0][CLT__GEMM_FEW + f] = CLT__GEMM_PACKED;
    ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &c, &v), CLT_OK);
    ck_assert_int_eq(v, CLT__GEMM_DOT);
    c.k = 1151;
    ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &c, &v), CLT_OK);
    ck_assert_int_eq(v, CLT__GEMM_PACKED);
    c.m = CLT__GEMM_LONG_ROWS + 1, c.k = 8192;
    ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &c, &v), CLT_OK);
    ck_assert_int_eq(v, CLT__GEMM_PACKED);
    /* B as stored: no dot (it needs B transposed) */
    c.m = 32, c.trans_b = false;
    ck_assert_int_eq(clt__cl_gemm_choose("test", dev, &c, &v), CLT_OK);
    ck_assert_int_ne(v, CLT__GEMM_DOT);
}
END_TEST

/* The packed variant with a transposed B and A the smaller operand runs C^T = op(B)^T op(A)^T,
 * packing op(A)^T (the panels then as many as A's rows take) and storing C^T down C's columns:
 * right with either A, alpha and beta, a bias along C's rows or columns, ReLU, a batch with a
 * shared B, f32 and f64. A product of few rows, or with B as stored, packs op(B) as before. */
START_TEST(test_gemm_packs_smaller)
{
    clt_device *dev = test_device(_i);
    if (clt__is_host(dev))
        return;
    srand(9);
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_F64 : CLT_F32;
        if (dt == CLT_F64 && !dev->info.fp64)
            continue;
        size_t pw = clt__cl_gemm_panel_width(dev, dt), elem = clt_dtype_size(dt);
        const test_gemm_case cases[] = {
            {pw, 3 * pw + 5, 21, 1, false, true, 1, 0, false, TEST_EP_BIAS | TEST_EP_RELU},
            {2 * pw - 1, 3 * pw + 1, 9, 3, true, true, 0.5, 2, true, 0},
            {2 * pw, 4 * pw + 3, 17, 2, false, true, 1, 0, false, TEST_EP_BIAS | TEST_EP_ROWS},
            {pw, 3 * pw, 30, 1, false, true, -1, 1, false, TEST_EP_RELU},
        }; /* each makes no more tiles transposed, for any panel width of 3 or more */
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            const test_gemm_case *gc = &cases[i];
            clt__gemm_call c = {.dtype = dt, .m = gc->m, .n = gc->n, .k = gc->k,
                                .batch = gc->batch, .trans_a = gc->ta, .trans_b = true};
            size_t a_panels = (gc->m + pw - 1) / pw;
            ck_assert_uint_eq(clt__cl_gemm_panel_bytes(dev, &c),
                              gc->batch * a_panels * pw * gc->k * elem);
            test_gemm_check(dev, dt, CLT__GEMM_PACKED, gc);
        }
        /* one row (C^T would take more tiles where panels are wider than 4), or B as stored:
         * op(B)'s panels */
        clt__gemm_call few = {.dtype = dt, .m = 1, .n = 3 * pw, .k = 8, .batch = 1,
                              .trans_b = true};
        if (pw > 4)
            ck_assert_uint_eq(clt__cl_gemm_panel_bytes(dev, &few), 3 * pw * 8 * elem);
        few.m = pw, few.trans_b = false;
        ck_assert_uint_eq(clt__cl_gemm_panel_bytes(dev, &few), 3 * pw * 8 * elem);
    }
}
END_TEST

/* CLT_GEMM names the variant every product uses; a name that is none is an error. */
START_TEST(test_gemm_forced)
{
    clt_device *gpu;
    if (!test_use_vendors(true, false))
        return;
    setenv("CLT_GEMM", "fastest", 1);
    gpu = clt_device_get("gpu:0");
    clt_tensor *a = clt_tensor_ones(CLT_SHAPE(3, 3), CLT_F32, gpu);
    ck_assert_ptr_null(clt_matmul(a, a));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_matmul: CLT_GEMM=fastest names no GEMM variant: expected auto, "
                        "clblast, packed, direct, tiled or dot");
    clt_tensor_release(a);
}
END_TEST

Suite *suite_gemm(void)
{
    Suite *s = suite_create("gemm");
    /* CLBlast's kernels compile slowly on PoCL the first time */
    TCase *tc = test_case("gemm", 600);
    ADD_DEVICE_TEST(tc, test_gemm_clblast_status);
    ADD_DEVICE_TEST(tc, test_gemm_stored_clblast_absent);
    ADD_DEVICE_TEST(tc, test_gemm_variants);
    ADD_DEVICE_TEST(tc, test_gemm_defaults);
    ADD_DEVICE_TEST(tc, test_gemm_long_k);
    ADD_DEVICE_TEST(tc, test_gemm_packs_smaller);
    tcase_add_test(tc, test_gemm_tuning);
    tcase_add_test(tc, test_gemm_tuning_fallback);
    tcase_add_test(tc, test_gemm_tuning_no_dot);
    tcase_add_test(tc, test_gemm_rematch);
    tcase_add_test(tc, test_gemm_few_rows);
    tcase_add_test(tc, test_gemm_tuning_build_failure);
    tcase_add_test(tc, test_gemm_forced);
    suite_add_tcase(s, tc);
    return s;
}
