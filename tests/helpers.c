/* Test helpers: see helpers.h. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

#if defined(__SANITIZE_ADDRESS__)
#define CLT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CLT_TEST_ASAN 1
#endif
#endif
#ifdef CLT_TEST_ASAN
#include <sanitizer/lsan_interface.h>
#endif
#include "device/allocator.h"
#include "tensor/tensor_internal.h"

int test_device_total = 1;

clt_device *test_device(int i)
{
    char name[16];
    if (i == 0)
        return clt_device_cpu();
    snprintf(name, sizeof name, "gpu:%d", i - 1);
    clt_device *dev = clt_device_get(name);
    ck_assert_msg(dev != NULL, "%s", clt_last_error());
    return dev;
}

bool test_has_dtype(clt_device *dev, clt_dtype dt)
{
    return dt != CLT_F64 || clt_device_get_info(dev)->fp64;
}

test_live test_live_now(void)
{
    return (test_live){clt__live_allocations(CLT__HOST), clt__live_allocations(CLT__DEVICE)};
}

/* What the test wrote on stderr goes to this file (test_setup), which must stay empty: the
 * library and the drivers it uses never print. (Not in sanitizer builds.) */
static FILE *stderr_file;

void test_setup(void)
{
#if defined(CLT_TEST_ASAN) || defined(__SANITIZE_THREAD__)
    return; /* the sanitizers report there */
#endif
    fflush(stderr);
    stderr_file = tmpfile();
    if (stderr_file)
        dup2(fileno(stderr_file), STDERR_FILENO);
}

void test_allow_stderr(void)
{
    fflush(stderr);
    if (stderr_file)
        fclose(stderr_file);
    stderr_file = NULL;
}

/* Fails the test when anything reached stderr, quoting the start of it. */
static void check_stderr(void)
{
    char text[600];
    size_t n;
    if (!stderr_file)
        return;
    fflush(stderr);
    rewind(stderr_file);
    n = fread(text, 1, sizeof text - 1, stderr_file);
    text[n] = '\0';
    fclose(stderr_file);
    stderr_file = NULL;
    /* The one line of Mesa 22's llvmpipe that no kernel can avoid: it compiles OpenCL's pow()
     * inside a loop with a read of an argument of its own (the table libclc's pow uses) */
    static const char mesa_pow[] = "MESA: warning: Treating load_kernel_arg in control flow as "
                                   "uniform, results may be incorrect.\n";
    for (char *at; (at = strstr(text, mesa_pow)) != NULL;)
        memmove(at, at + strlen(mesa_pow), strlen(at + strlen(mesa_pow)) + 1);
    ck_assert_msg(text[0] == '\0', "the test wrote on stderr:\n%s", text);
}

void test_teardown(void)
{
    int n = clt_device_count(); /* negative when the test broke the device list on purpose */
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", i);
        clt_device *dev = clt_device_get(name);
        if (dev)
            clt_device_synchronize(dev);
    }
#ifdef CLT_TEST_ASAN
    /* Leaks are looked for here, with the drivers' threads idle and the test's work done,
     * rather than at exit, while they wind down; this turns the check at exit off. (Does
     * nothing unless ASAN_OPTIONS has detect_leaks=1.) */
    __lsan_do_leak_check();
#endif
    check_stderr();
}

TCase *test_case(const char *name, int timeout)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout);
    tcase_add_checked_fixture(tc, test_setup, test_teardown);
    return tc;
}

void test_sync_all(void)
{
    int n = clt_device_count();
    for (int i = 0; i <= n; i++)
        ck_assert_int_eq(clt_device_synchronize(test_device(i)), CLT_OK);
}

long test_fault_sweep(test_op op, void *ctx, const char *fn, clt__alloc_kind kind)
{
    return test_fault_sweep_checked(op, NULL, NULL, ctx, fn, kind);
}

long test_fault_sweep_checked(test_op op, test_check snapshot, test_check check, void *ctx,
                              const char *fn, clt__alloc_kind kind)
{
    clt_status oom = kind == CLT__HOST ? CLT_ERR_OUT_OF_MEMORY : CLT_ERR_DEVICE_OUT_OF_MEMORY;
    char prefix[128];
    long made;
    test_live base;

    snprintf(prefix, sizeof prefix, "%s%s", fn ? fn : "clt_", fn ? ": " : "");
    for (int run = 0; run < 2; run++) { /* a warm-up, then a run that counts */
        if (snapshot)
            snapshot(ctx);
        test_sync_all();
        base = test_live_now();
        made = clt__allocation_attempts(kind);
        ck_assert_msg(op(ctx), "%s%s", run ? "" : "warm-up failed: ", clt_last_error());
        made = clt__allocation_attempts(kind) - made;
        test_sync_all();
    }
    ck_assert_live_eq(test_live_now(), base);
    for (long n = 1; n <= made + 1; n++) {
        if (snapshot)
            snapshot(ctx);
        clt__fault_inject(kind, n);
        clt_clear_error();
        bool ok = op(ctx);
        clt__fault_inject(kind, 0);
        clt__error_state failure;
        clt__error_save(&failure);
        test_sync_all();
        if (!ok && check) /* asserts, and puts the objects back where the next run starts */
            check(ctx);
        clt__error_restore(&failure);
        test_live now = test_live_now();
        ck_assert_msg(now.host == base.host && now.device == base.device,
                      "%s, %s allocation %ld of %ld failed: %ld host and %ld device allocations "
                      "live, %ld and %ld before (%s)", fn ? fn : "the scenario",
                      kind == CLT__HOST ? "host" : "device", n, made, now.host, now.device,
                      base.host, base.device, ok ? "it succeeded" : clt_last_error());
        if (n == made + 1) {
            ck_assert_msg(ok, "%s", clt_last_error());
            break;
        }
        ck_assert_msg(!ok, "%s: allocation %ld of %ld was made to fail, yet the call succeeded",
                      fn ? fn : "the scenario", n, made);
        ck_assert_msg(clt_last_status() == oom, "%s, allocation %ld: %s (%s)",
                      fn ? fn : "the scenario", n, clt_status_name(clt_last_status()),
                      clt_last_error());
        ck_assert_msg(strncmp(clt_last_error(), prefix, strlen(prefix)) == 0,
                      "last error \"%s\" does not start with \"%s\"", clt_last_error(), prefix);
    }
    return made;
}

const char *test_temp_dir(void)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/clt_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(path));
    return path;
}

void test_write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

bool test_host_only(void)
{
    const char *v = getenv("CLT_TEST_HOST_ONLY");
    return v && strcmp(v, "1") == 0;
}

bool test_use_vendors(bool pocl, bool oclgrind)
{
    if (test_host_only() && (pocl || oclgrind))
        return false;
    const char *dir = test_temp_dir();
    if (pocl) {
        ck_assert_msg(CLT_TEST_POCL_ICD[0] != '\0', "PoCL's ICD file was not found at build time");
        FILE *f = fopen(CLT_TEST_POCL_ICD, "r");
        char line[512] = "";
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
        fclose(f);
        test_write_file(dir, "pocl.icd", line);
    }
    if (oclgrind) {
        ck_assert_msg(CLT_TEST_OCLGRIND_ICD[0] != '\0',
                      "oclgrind was not found at build time (apt-get install oclgrind)");
        char line[512];
        snprintf(line, sizeof line, "%s\n", CLT_TEST_OCLGRIND_ICD);
        test_write_file(dir, "oclgrind.icd", line);
    }
    setenv("OCL_ICD_VENDORS", dir, 1);
    return true;
}

void *test_bytes(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t) * clt_dtype_size(clt_tensor_dtype(t));
    void *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(clt_tensor_copy_to_host(t, p, n), CLT_OK);
    return p;
}

void test_assert_same_bytes(const clt_tensor *a, const clt_tensor *b)
{
    size_t n = (size_t)clt_tensor_numel(a) * clt_dtype_size(clt_tensor_dtype(a));
    ck_assert_int_eq(clt_tensor_dtype(a), clt_tensor_dtype(b));
    ck_assert_int_eq(clt_tensor_numel(a), clt_tensor_numel(b));
    void *x = test_bytes(a), *y = test_bytes(b);
    ck_assert_mem_eq(x, y, n);
    free(x);
    free(y);
}

double *test_values(clt_tensor *t)
{
    clt_tensor *c = clt_tensor_to_ex(t, &(clt_to_options){.device = clt_device_cpu(), .dtype = CLT_F64});
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    double *v = test_bytes(c);
    clt_tensor_release(c);
    return v;
}

void test_noise(double *v, int64_t n, unsigned seed, double lo, double hi)
{
    uint32_t s = seed * 747796405u + 12345u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = lo + (hi - lo) * ((double)(s >> 8) / 16777216.0);
    }
}

clt_tensor *test_tensor(clt_device *dev, clt_dtype dtype, const double *v, int ndim,
                        const int64_t *shape)
{
    clt_tensor *h = clt_tensor_from_data(v, CLT_F64, ndim, shape, clt_device_cpu());
    clt_tensor *t = h ? clt_tensor_to_ex(h, &(clt_to_options){.device = dev, .dtype = dtype}) : NULL;
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    clt_tensor_release(h);
    return t;
}

clt_module *test_mlp(int64_t in, int64_t hidden, int64_t out, clt_module *activation,
                     uint64_t seed)
{
    clt_manual_seed(seed);
    clt_module *parts[3] = {clt_nn_linear(in, hidden, true), activation,
                            clt_nn_linear(hidden, out, true)};
    clt_module *m = clt_nn_sequential(parts, 3);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    for (int k = 0; k < 3; k++)
        clt_module_release(parts[k]);
    return m;
}

void test_copy_kernel(const char *dir, const char *name)
{
    char from[512], to[512], buf[4096];
    size_t n;
    snprintf(from, sizeof from, "%s/%s", CLT_TEST_CL_DIR, name);
    snprintf(to, sizeof to, "%s/%s", dir, name);
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

void test_copy_kernels(const char *dir)
{
    DIR *d = opendir(CLT_TEST_CL_DIR);
    struct dirent *e;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > 3 && strcmp(e->d_name + n - 3, ".cl") == 0)
            test_copy_kernel(dir, e->d_name);
    }
    closedir(d);
}


/* A device buffer of n values from the generator (also returned in host, as doubles); with
 * the matrices of C (c not NULL, beta 0) NaN, which C = alpha A B must ignore. */
static clt_tensor *gemm_operand(clt_device *dev, clt_dtype dt, size_t n, double *host,
                                const clt__gemm_call *c)
{
    for (size_t i = 0; i < n; i++)
        host[i] = (double)(rand() % 2001 - 1000) / 256.0; /* exact in f32 */
    for (size_t bt = 0; c && c->beta == 0 && bt < c->batch; bt++)
        for (size_t i = 0; i < c->m; i++)
            for (size_t j = 0; j < c->n; j++)
                host[c->c_offset + bt * c->c_stride + i * c->ldc + j] = NAN;
    clt_tensor *t = test_tensor(dev, dt, host, 1, (int64_t[]){(int64_t)n});
    ck_assert_ptr_nonnull(t);
    return t;
}

void test_gemm_check(clt_device *dev, clt_dtype dt, clt__gemm_variant v, const test_gemm_case *gc)
{
    size_t ar = gc->ta ? gc->k : gc->m, ac = gc->ta ? gc->m : gc->k;
    size_t br = gc->tb ? gc->n : gc->k, bc = gc->tb ? gc->k : gc->n;
    clt__gemm_call c = {.dtype = dt, .trans_a = gc->ta, .trans_b = gc->tb, .m = gc->m,
                        .n = gc->n, .k = gc->k, .batch = gc->batch, .alpha = gc->alpha,
                        .beta = gc->beta, .a_offset = 2, .b_offset = 1, .c_offset = 3,
                        .lda = ac + 3, .ldb = bc + 1, .ldc = gc->n + 2};
    c.a_stride = ar * c.lda + 5;
    c.b_stride = gc->shared_b ? 0 : br * c.ldb + 1;
    c.c_stride = gc->m * c.ldc + 4;
    if (!clt__cl_gemm_fits(dev, v, &c))
        return;
    size_t na = c.a_offset + c.a_stride * c.batch, nc = c.c_offset + c.c_stride * c.batch;
    size_t nb = c.b_offset + (gc->shared_b ? br * c.ldb : c.b_stride * c.batch);
    double *ha = malloc(na * sizeof *ha), *hb = malloc(nb * sizeof *hb);
    double *hc = malloc(nc * sizeof *hc), *bound = calloc(nc, sizeof *bound);
    clt_tensor *a = gemm_operand(dev, dt, na, ha, NULL), *b = gemm_operand(dev, dt, nb, hb, NULL);
    clt_tensor *out = gemm_operand(dev, dt, nc, hc, &c);
    void *panels = NULL;
    size_t capacity = 0;
    c.a = a->storage->buf, c.b = b->storage->buf, c.c = out->storage->buf;
    if (v == CLT__GEMM_PACKED)
        ck_assert_int_eq(clt__device_alloc("test", dev, clt__cl_gemm_panel_bytes(dev, &c), false,
                                           &panels, &capacity), CLT_OK);
    ck_assert_msg(clt__cl_gemm_run("test", dev, v, &c, panels) == CLT_OK, "%s",
                  clt_last_error());
    for (size_t bt = 0; bt < c.batch; bt++)
        for (size_t i = 0; i < c.m; i++)
            for (size_t j = 0; j < c.n; j++) {
                double sum = 0, abs_sum = 0;
                for (size_t l = 0; l < c.k; l++) {
                    size_t ai = c.a_offset + bt * c.a_stride + (c.trans_a ? l * c.lda + i
                                                                         : i * c.lda + l);
                    size_t bi = c.b_offset + bt * c.b_stride + (c.trans_b ? j * c.ldb + l
                                                                         : l * c.ldb + j);
                    sum += ha[ai] * hb[bi];
                    abs_sum += fabs(ha[ai] * hb[bi]);
                }
                size_t o = c.c_offset + bt * c.c_stride + i * c.ldc + j;
                bound[o] = fabs(c.alpha) * abs_sum + (c.beta != 0 ? fabs(c.beta * hc[o]) : 0);
                hc[o] = c.alpha * sum + (c.beta != 0 ? c.beta * hc[o] : 0);
            }
    double *got = test_values(out), tol = dt == CLT_F64 ? 1e-12 : 1e-5;
    for (size_t i = 0; i < nc; i++)
        ck_assert_msg(fabs(got[i] - hc[i]) <= tol * bound[i],
                      "%s on %s, %zu x %zu x %zu batch %zu%s%s: element %zu is %.9g, expected "
                      "%.9g", clt__gemm_variant_names[v], clt_device_name(dev), c.m, c.n, c.k,
                      c.batch, c.trans_a ? " A^T" : "", c.trans_b ? " B^T" : "", i, got[i],
                      hc[i]);
    if (panels)
        clt__device_free(dev, panels, capacity);
    free(got), free(bound), free(hc), free(hb), free(ha);
    clt_tensor_release(out), clt_tensor_release(b), clt_tensor_release(a);
}
