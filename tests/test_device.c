/* Device suite: enumeration, names, the default and current device, platforms (none, one,
 * two), CLT_VISIBLE_DEVICES, CLT_SUBDEVICES, the current-device guard (CLT_WITH_DEVICE) and
 * synchronisation, through the public API; in a build without OpenCL, on cpu alone (the OpenCL
 * backend's own device tests: tests/opencl/test_opencl.c). */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"

#if CLT_TEST_OPENCL
#include <cltensor/opencl.h>

#include "backends/opencl/cl_api.h" /* OpenCL through the library's loaded table */
#endif

/* Whether the description of the device called `name` ("gpu:1") has `text` in its name. */
static bool name_has(const char *name, const char *text)
{
    const clt_device_info *info = clt_device_get_info(clt_device_get(name));
    ck_assert_msg(info != NULL, "%s", clt_last_error());
    return strstr(info->name, text) != NULL;
}

START_TEST(test_device_list)
{
    int n = clt_device_count();
    const char *require = getenv("CLT_TEST_REQUIRE_GPU");
    ck_assert_int_ge(n, 0);
    if (CLT_TEST_OPENCL && require && strcmp(require, "1") == 0) /* not in a host-only build */
        ck_assert_msg(n >= 1, "CLT_TEST_REQUIRE_GPU=1 but no OpenCL device was found");
    if (!CLT_TEST_OPENCL)
        ck_assert_int_eq(n, 0);

    const clt_device_info *cpu = clt_device_get_info(clt_device_cpu());
    ck_assert_str_eq(clt_device_name(clt_device_cpu()), "cpu");
    ck_assert_int_eq(cpu->type, CLT_DEVICE_HOST);
    ck_assert(cpu->fp64);
    ck_assert_uint_ge(cpu->compute_units, 1);
    ck_assert_uint_gt(cpu->global_mem_bytes, 0);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", i);
        clt_device *dev = clt_device_get(name);
        ck_assert_ptr_nonnull(dev);
        ck_assert_str_eq(clt_device_name(dev), name);
        const clt_device_info *info = clt_device_get_info(dev);
        ck_assert_int_ne(info->type, CLT_DEVICE_HOST);
        ck_assert_int_gt(strlen(info->name), 0);
        ck_assert_int_gt(strlen(info->platform), 0);
        ck_assert_int_gt(strlen(info->version), 0);
        ck_assert_uint_ge(info->compute_units, 1);
        ck_assert_uint_ge(info->max_work_group_size, 1);
        ck_assert_uint_gt(info->max_alloc_bytes, 0);
        ck_assert_uint_le(info->max_alloc_bytes, info->global_mem_bytes);
    }
    ck_assert_ptr_null(clt_device_get_info(NULL));
    ck_assert_str_eq(clt_device_name(NULL), "(null)");
}
END_TEST

START_TEST(test_device_default_and_gpu)
{
    int n = clt_device_count();
    clt_device *def = clt_device_default(), *first_gpu = NULL;
    for (int i = 0; i < n && !first_gpu; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", i);
        clt_device *d = clt_device_get(name);
        clt_device_type type = clt_device_get_info(d)->type;
        if (type == CLT_DEVICE_GPU || type == CLT_DEVICE_ACCELERATOR)
            first_gpu = d;
    }
    /* the first GPU- or accelerator-type device; an OpenCL CPU device (PoCL) is not one */
    ck_assert_ptr_eq(def, first_gpu ? first_gpu : clt_device_cpu());
    ck_assert_ptr_eq(clt_device_get("cpu"), clt_device_cpu());
    /* a NULL device is cpu, whatever the default */
    clt_tensor *x = clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, NULL);
    ck_assert_ptr_eq(clt_tensor_device(x), clt_device_cpu());
    clt_tensor_release(x);
    /* CLT_DEVICE overrides the choice; a name of no device is an error naming it */
    setenv("CLT_DEVICE", "cpu", 1);
    ck_assert_ptr_eq(clt_device_default(), clt_device_cpu());
    if (n > 0) {
        setenv("CLT_DEVICE", "gpu:0", 1);
        ck_assert_ptr_eq(clt_device_default(), clt_device_get("gpu:0"));
    }
    setenv("CLT_DEVICE", "gpu:99", 1);
    ck_assert_ptr_null(clt_device_default());
    ck_assert_int_eq(clt_last_status(), CLT_ERR_NO_DEVICE);
    ck_assert_error_has("clt_device_default: CLT_DEVICE=gpu:99: ");
    unsetenv("CLT_DEVICE");
    if (n == 0)
        return;
    ck_assert_ptr_eq(clt_device_get("gpu"), clt_device_get("gpu:0"));
    ck_assert_ptr_eq(clt_device_current(), clt_device_get("gpu:0"));
}
END_TEST

static void *current_in_thread(void *arg)
{
    (void)arg;
    return clt_device_current();
}

START_TEST(test_device_set_current)
{
    int n = clt_device_count();
    char name[16];
    pthread_t thread;
    void *seen = NULL;
    if (n == 0)
        return;
    snprintf(name, sizeof name, "gpu:%d", n - 1);
    clt_device *last = clt_device_get(name);
    ck_assert_int_eq(clt_device_set_current(last), CLT_OK);
    ck_assert_ptr_eq(clt_device_current(), last);
    ck_assert_ptr_eq(clt_device_get("gpu"), last);
    /* thread-local: another thread still has the default */
    ck_assert_int_eq(pthread_create(&thread, NULL, current_in_thread, NULL), 0);
    pthread_join(thread, &seen);
    ck_assert_ptr_eq(seen, clt_device_get("gpu:0"));

    ck_assert_int_eq(clt_device_set_current(clt_device_cpu()), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_device_set_current: cpu is not a GPU");
    ck_assert_int_eq(clt_device_set_current(NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_eq(clt_device_current(), last);
}
END_TEST

START_TEST(test_device_bad_names)
{
    static const char *const bad[] = {"gpu:7", "GPU", "gpu:", "gpu:-1", "gpu:01", "gpu:1x",
                                      "cuda:0", "", " cpu", "gpu:99999999999"};
    int n = clt_device_count();
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char expect[64];
        clt_clear_error();
        ck_assert_ptr_null(clt_device_get(bad[i]));
        ck_assert_int_eq(clt_last_status(), CLT_ERR_NO_DEVICE);
        snprintf(expect, sizeof expect, "clt_device_get: %s: ", bad[i]);
        ck_assert_error_has(expect);
        ck_assert_error_has("the valid names are cpu");
        if (n > 0)
            ck_assert_error_has("gpu:0 (");
    }
    ck_assert_ptr_null(clt_device_get("gpu:7"));
    ck_assert_error_has("gpu:7: no such device");
    ck_assert_ptr_null(clt_device_get(NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_device_no_platform)
{
    ck_assert(test_use_vendors(false, false));
    ck_assert_int_eq(clt_device_count(), 0);
    ck_assert_ptr_eq(clt_device_default(), clt_device_cpu());
    ck_assert_ptr_null(clt_device_get("gpu"));
    ck_assert_error_has("this machine has no OpenCL device");
    ck_assert_ptr_null(clt_device_get("gpu:0"));
    ck_assert_error_has("gpu:0: no such device");
    ck_assert_ptr_null(clt_device_current());
    ck_assert_int_eq(clt_last_status(), CLT_ERR_NO_DEVICE);

    /* the host works as usual */
    clt_tensor *x = clt_tensor_arange(0, 4, 1, CLT_F32, clt_device_cpu());
    clt_tensor *y = clt_tensor_to(x, clt_device_default());
    ck_assert_ptr_eq(x, y);
    ck_assert_float_eq(((float *)clt_tensor_data(y))[3], 3.0f);
    clt_tensor_release(y);
    clt_tensor_release(x);
    /* no device given: cpu, as there is no GPU */
    x = clt_tensor_ones(CLT_SHAPE(2), CLT_F32, NULL);
    ck_assert_ptr_eq(clt_tensor_device(x), clt_device_cpu());
    clt_tensor_release(x);
}
END_TEST

#ifndef _WIN32 /* no vendor files on Windows (its loader reads the registry; cl_vendors.c) */
static void collect_warnings(clt_log_level level, const char *message, void *user)
{
    char *log = user;
    size_t used = strlen(log);
    snprintf(log + used, 4096 - used, "%s: %s\n", level >= CLT_LOG_WARN ? "warning" : "note",
             message);
}

/* Vendor files naming a driver that does not exist (a warning names the file and the library)
 * and a file that is no driver (noted at info level: loaders also drop drivers that report no
 * platform); PoCL works as usual. */
START_TEST(test_device_vendor_missing)
{
    static char log[4096];
    char missing[512], bogus[1200], not_driver[512];
    if (!test_use_vendors(true, false))
        return;
    const char *dir = getenv("OCL_ICD_VENDORS");
    snprintf(not_driver, sizeof not_driver, "%s/pocl.icd", dir); /* exists, and is no library */
    test_write_file(dir, "missing.icd", "/nonexistent/libOpenCL-driver.so\n");
    test_write_file(dir, "bogus.icd", not_driver);
    snprintf(missing, sizeof missing, "warning: OpenCL: %s/missing.icd names "
             "/nonexistent/libOpenCL-driver.so, which does not exist: that platform is missing", dir);
    snprintf(bogus, sizeof bogus, "note: OpenCL: %s/bogus.icd names %s, which is not loaded: not an "
             "OpenCL driver, or one that reported no platform", dir, not_driver);
    clt_set_log_callback(collect_warnings, log, CLT_LOG_INFO);
    ck_assert_int_eq(clt_device_count(), 1);
    clt_set_log_callback(NULL, NULL, CLT_LOG_INFO);
    ck_assert_msg(strstr(log, missing) != NULL, "log: %s", log);
    ck_assert_msg(strstr(log, bogus) != NULL, "log: %s", log);
    ck_assert_msg(!strstr(log, "pocl.icd names libpocl"), "PoCL's platform reported: %s", log);
    clt_tensor *x = clt_tensor_arange(0, 5, 1, CLT_F32, clt_device_get("gpu:0"));
    clt_tensor *y = x ? clt_add(x, x) : NULL;
    double *v = y ? test_values(y) : NULL;
    ck_assert_msg(v != NULL, "%s", clt_last_error());
    ck_assert_double_eq(v[4], 8);
    free(v);
    clt_tensor_release(y);
    clt_tensor_release(x);
}
END_TEST
#endif

START_TEST(test_device_two_platforms)
{
    if (!test_use_vendors(true, true))
        return;
    ck_assert_int_eq(clt_device_count(), 2);
    const clt_device_info *g0 = clt_device_get_info(clt_device_get("gpu:0"));
    const clt_device_info *g1 = clt_device_get_info(clt_device_get("gpu:1"));
    /* GPU types first: Oclgrind reports itself as a GPU, PoCL's device is a CPU */
    ck_assert_ptr_nonnull(strstr(g0->name, "Oclgrind"));
    ck_assert_int_eq(g0->type, CLT_DEVICE_GPU);
    ck_assert_int_eq(g1->type, CLT_DEVICE_CPU);
    ck_assert_str_eq(g1->platform, "Portable Computing Language");
    ck_assert_ptr_eq(clt_device_default(), clt_device_get("gpu:0"));
}
END_TEST

START_TEST(test_device_visible_reorder)
{
    if (!test_use_vendors(true, true))
        return;
    setenv("CLT_VISIBLE_DEVICES", "1,0", 1);
    ck_assert_int_eq(clt_device_count(), 2);
    ck_assert_int_eq(clt_device_get_info(clt_device_get("gpu:0"))->type, CLT_DEVICE_CPU);
    ck_assert(name_has("gpu:1", "Oclgrind"));
}
END_TEST

START_TEST(test_device_visible_substring)
{
    if (!test_use_vendors(true, true))
        return;
    setenv("CLT_VISIBLE_DEVICES", " oclGRIND ", 1);
    ck_assert_int_eq(clt_device_count(), 1);
    ck_assert(name_has("gpu:0", "Oclgrind"));
    ck_assert_ptr_null(clt_device_get("gpu:1"));
}
END_TEST

#ifndef _WIN32 /* no empty environment variables on Windows: setting one to "" removes it */
START_TEST(test_device_visible_empty)
{
    if (!test_use_vendors(true, false))
        return;
    setenv("CLT_VISIBLE_DEVICES", "", 1);
    ck_assert_int_eq(clt_device_count(), 0);
    ck_assert_ptr_eq(clt_device_default(), clt_device_cpu());
}
END_TEST
#endif

/* Each bad value is an error at first use, for every device function, cpu included. */
START_TEST(test_device_visible_bad)
{
    static const struct {
        const char *value, *message;
    } cases[] = {
        {"5", "index 5 is out of range"},
        {"0,0", "device 0 is named twice"},
        {"nosuch", "no other device's name contains \"nosuch\""},
        {"0,,0", "an entry is empty"},
    };
    if (!test_use_vendors(true, false))
        return;
    setenv("CLT_VISIBLE_DEVICES", cases[_i].value, 1);
    ck_assert_int_eq(clt_device_count(), CLT_ERR_ENVIRONMENT);
    ck_assert_error_has("clt_device_count: CLT_VISIBLE_DEVICES=\"");
    ck_assert_error_has(cases[_i].message);
    ck_assert_error_has("the OpenCL devices are 0 (pthread");
    ck_assert_ptr_null(clt_device_get("cpu"));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_ENVIRONMENT);
    ck_assert_ptr_null(clt_device_default());
    ck_assert_ptr_null(clt_device_cpu());
}
END_TEST

/* A value far longer than any message: the error quotes its start. */
START_TEST(test_device_visible_long_value)
{
    char value[3001];
    memset(value, 'x', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    if (!test_use_vendors(true, false))
        return;
    setenv("CLT_VISIBLE_DEVICES", value, 1);
    ck_assert_int_eq(clt_device_count(), CLT_ERR_ENVIRONMENT);
    ck_assert_error_has("an entry is empty or too long");
    ck_assert_error_has("xxx...\"");
    ck_assert_int_lt(strlen(clt_last_error()), 1000);
}
END_TEST

START_TEST(test_device_synchronize)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = clt_tensor_rand(CLT_SHAPE(1000), CLT_F32, dev);
    ck_assert_ptr_nonnull(x);
    ck_assert_int_eq(clt_device_synchronize(dev), CLT_OK);
    clt_tensor_release(x);
    ck_assert_int_eq(clt_device_synchronize(NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_device_synchronize: device is NULL");
}
END_TEST

/* ---- CLT_SUBDEVICES ---------------------------------------------------------------------------- */

/* Two GPUs: PoCL and Oclgrind (no kernel runs), or PoCL split in two (kernels run). */
static bool two_gpus(bool split)
{
    if (!test_use_vendors(true, !split))
        return false;
    if (split)
        setenv("CLT_SUBDEVICES", "2", 1);
    ck_assert_int_eq(clt_device_count(), 2);
    return true;
}

#if CLT_TEST_OPENCL /* these two read OpenCL's own description of the sub-devices */
/* The compute units of the device a sub-device was split from. */
static cl_uint parent_units(clt_device *dev)
{
    cl_device_id parent = NULL;
    cl_uint units = 0;
    ck_assert_int_eq(clGetDeviceInfo(clt_device_cl_device(dev), CL_DEVICE_PARENT_DEVICE,
                                     sizeof parent, &parent, NULL), CL_SUCCESS);
    ck_assert_ptr_nonnull(parent);
    ck_assert_int_eq(clGetDeviceInfo(parent, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units,
                                     NULL), CL_SUCCESS);
    return units;
}

/* PoCL's one CPU device becomes gpu:0 and gpu:1, each with half its compute units, sharing one
 * context (so that copies between them stay on the devices). */
START_TEST(test_device_subdevices_split)
{
    if (!two_gpus(true))
        return;
    for (int i = 0; i < 2; i++) {
        char name[16], suffix[32];
        snprintf(name, sizeof name, "gpu:%d", i);
        snprintf(suffix, sizeof suffix, " (sub-device %d of 2)", i + 1);
        clt_device *dev = clt_device_get(name);
        const clt_device_info *info = clt_device_get_info(dev);
        cl_uint units = 0;
        ck_assert_int_eq(info->type, CLT_DEVICE_CPU);
        ck_assert_str_eq(info->platform, "Portable Computing Language");
        ck_assert_ptr_nonnull(strstr(info->name, "pthread"));
        ck_assert_str_eq(info->name + strlen(info->name) - strlen(suffix), suffix);
        clGetDeviceInfo(clt_device_cl_device(dev), CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units,
                        &units, NULL);
        ck_assert_uint_eq(info->compute_units, units);
        ck_assert_uint_ge(info->compute_units, 1);
        ck_assert_uint_eq(info->compute_units, parent_units(dev) / 2);
    }
    clt_device *g0 = clt_device_get("gpu:0"), *g1 = clt_device_get("gpu:1");
    ck_assert_ptr_ne(clt_device_cl_device(g0), clt_device_cl_device(g1));
    ck_assert_ptr_eq(clt_device_cl_context(g0, false), clt_device_cl_context(g1, false));
}
END_TEST
#endif

/* Operations on each sub-device give the host's results. */
START_TEST(test_device_subdevices_ops)
{
    double va[12], vb[20];
    if (!two_gpus(true))
        return;
    test_noise(va, 12, 1, -1, 1);
    test_noise(vb, 20, 2, -1, 1);
    clt_device *cpu = clt_device_cpu();
    clt_tensor *a = test_tensor(cpu, CLT_F32, va, CLT_SHAPE(3, 4));
    clt_tensor *b = test_tensor(cpu, CLT_F32, vb, CLT_SHAPE(4, 5));
    clt_tensor *want[3] = {clt_add(a, a), clt_sum(a, NULL, 0, false), clt_matmul(a, b)};
    for (int d = 0; d < 2; d++) {
        clt_device *dev = test_device(d + 1);
        clt_tensor *da = clt_tensor_to(a, dev), *db = clt_tensor_to(b, dev);
        clt_tensor *got[3] = {clt_add(da, da), clt_sum(da, NULL, 0, false), clt_matmul(da, db)};
        for (int k = 0; k < 3; k++) {
            ck_assert_msg(got[k] != NULL, "%s", clt_last_error());
            ck_assert_ptr_eq(clt_tensor_device(got[k]), dev);
            int64_t n = clt_tensor_numel(want[k]);
            double *w = test_values(want[k]), *g = test_values(got[k]);
            for (int64_t i = 0; i < n; i++)
                ck_assert_double_eq_tol(g[i], w[i], 1e-5);
            free(w);
            free(g);
            clt_tensor_release(got[k]);
        }
        clt_tensor_release(da);
        clt_tensor_release(db);
    }
    for (int k = 0; k < 3; k++)
        clt_tensor_release(want[k]);
    clt_tensor_release(a);
    clt_tensor_release(b);
}
END_TEST

/* gpu:0 -> gpu:1 -> cpu keeps every bit. */
START_TEST(test_device_subdevices_copy)
{
    if (!two_gpus(true))
        return;
    clt_manual_seed(7);
    clt_tensor *x = clt_tensor_randn(CLT_SHAPE(257), CLT_F32, clt_device_get("gpu:0"));
    clt_tensor *y = clt_tensor_to(x, clt_device_get("gpu:1"));
    clt_tensor *z = clt_tensor_to(y, clt_device_cpu());
    ck_assert_ptr_nonnull(z);
    ck_assert_ptr_ne(y, x);
    ck_assert_ptr_eq(clt_tensor_device(y), clt_device_get("gpu:1"));
    test_assert_same_bytes(x, z);
    clt_tensor_release(z);
    clt_tensor_release(y);
    clt_tensor_release(x);
}
END_TEST

/* Copies between the sub-devices run on them without waiting on the host: values passed back
 * and forth, each step's buffers released at once (so that the pools hand them out again while
 * copies and kernels may still be queued), give the host's sums, and a copy into a tensor that
 * the other device's queued work still reads waits for that work. */
START_TEST(test_device_subdevices_copy_ordering)
{
    if (!two_gpus(true))
        return;
    clt_device *g0 = clt_device_get("gpu:0"), *g1 = clt_device_get("gpu:1");
    enum { N = 4099, ROUNDS = 40 };
    double *host = malloc(N * sizeof *host), *want = malloc(N * sizeof *want);
    test_noise(host, N, 11, -1, 1);
    for (int i = 0; i < N; i++)
        want[i] = host[i];
    clt_tensor *a = test_tensor(g0, CLT_F64, host, CLT_SHAPE(N)), *b = NULL;
    for (int r = 0; r < ROUNDS; r++) { /* a on gpu:0 -> b = 2 a + 1 on gpu:1 -> a = b - 0.5 */
        clt_tensor *there = clt_tensor_to(a, g1), *twice = clt_mul_scalar(there, 2);
        b = clt_add_scalar(twice, 1);
        clt_tensor_release(there), clt_tensor_release(twice), clt_tensor_release(a);
        clt_tensor *back = clt_tensor_to(b, g0);
        a = clt_sub_scalar(back, 0.5);
        clt_tensor_release(back), clt_tensor_release(b);
        ck_assert_msg(a != NULL, "%s", clt_last_error());
        for (int i = 0; i < N; i++)
            want[i] = (2 * want[i] + 1) - 0.5;
    }
    double *got = test_values(a);
    for (int i = 0; i < N; i++)
        ELEMENT_CHECK(got[i] == want[i], "element %d: %.17g, expected %.17g", i, got[i], want[i]);
    free(got);
    /* copy_ into a tensor that gpu:1's queued product reads: the product sees the old values */
    clt_tensor *m = test_tensor(g1, CLT_F64, host, CLT_SHAPE(1, N));
    clt_tensor *mt = clt_transpose(m, 0, 1), *p = clt_matmul(m, mt);
    ck_assert_int_eq(clt_copy_(m, a), CLT_OK);
    double dot = 0, *pv = test_values(p);
    for (int i = 0; i < N; i++)
        dot += host[i] * host[i];
    ck_assert_double_eq_tol(pv[0], dot, 1e-9 * dot);
    test_assert_same_bytes(m, a);
    free(pv);
    clt_tensor_release(p), clt_tensor_release(mt), clt_tensor_release(m), clt_tensor_release(a);
    /* a copy into memory that gpu:1's queued product still reads (released, so its pool hands
     * it out again): the copy waits for the product */
    enum { M = 400 };
    double *big = malloc((size_t)M * M * sizeof *big), *other = malloc((size_t)M * M * sizeof *other);
    test_noise(big, M * M, 12, -1, 1);
    test_noise(other, M * M, 13, -1, 1);
    clt_tensor *w = test_tensor(g1, CLT_F64, big, CLT_SHAPE(M, M));
    clt_tensor *src = test_tensor(g0, CLT_F64, other, CLT_SHAPE(M, M));
    ck_assert_int_eq(clt_device_synchronize(g0), CLT_OK);
    ck_assert_int_eq(clt_device_synchronize(g1), CLT_OK);
    clt_tensor *sq = clt_matmul(w, w);
    clt_tensor_release(w); /* its buffer back in gpu:1's pool while the product is queued */
    clt_tensor *moved = clt_tensor_to(src, g1);
    ck_assert_msg(sq && moved, "%s", clt_last_error());
    double *sv = test_values(sq);
    for (int i = 0; i < M; i += 37)
        for (int j = 0; j < M; j += 41) {
            double e = 0;
            for (int k = 0; k < M; k++)
                e += big[i * M + k] * big[k * M + j];
            ELEMENT_CHECK(fabs(sv[i * M + j] - e) <= 1e-9 * M,
                          "the product's (%d, %d): %.17g, expected %.17g", i, j, sv[i * M + j], e);
        }
    test_assert_same_bytes(moved, src);
    free(sv), free(other), free(big);
    clt_tensor_release(moved), clt_tensor_release(sq), clt_tensor_release(src);
    free(want);
    free(host);
}
END_TEST

/* clt_copy_ between the sub-devices where both sides are contiguous and alike (here parts of
 * larger tensors, at offsets) is one copy on the devices, making no tensor: the source's bits
 * land in the part and nothing else changes, after the product queued before it has read the
 * old values; the destination's version moves on, so a backward that saved it refuses;
 * a destination that requires grad is refused with nothing changed. A transposed destination and
 * another dtype take the general path. */
START_TEST(test_device_subdevices_copy_into)
{
    if (!two_gpus(true))
        return;
    clt_device *g0 = clt_device_get("gpu:0"), *g1 = clt_device_get("gpu:1");
    enum { N = 1000, AT = 100, TO = 517, LEN = 300 };
    double hs[N], hd[N];
    test_noise(hs, N, 21, -1, 1);
    test_noise(hd, N, 22, -1, 1);
    clt_tensor *s = test_tensor(g0, CLT_F32, hs, CLT_SHAPE(N));
    clt_tensor *d = test_tensor(g1, CLT_F32, hd, CLT_SHAPE(N));
    clt_tensor *sp = clt_narrow(s, 0, AT, LEN), *dp = clt_narrow(d, 0, TO, LEN);
    clt_tensor *w = test_tensor(g1, CLT_F32, hd, CLT_SHAPE(LEN));
    ck_assert_int_eq(clt_tensor_set_requires_grad(w, true), CLT_OK);
    clt_tensor *y = clt_mul(w, dp), *loss = clt_sum(y, NULL, 0, false); /* saves dp */
    clt_memory_stats before[2], after[2];
    ck_assert_int_eq(clt_device_memory_stats(g0, &before[0]), CLT_OK);
    ck_assert_int_eq(clt_device_memory_stats(g1, &before[1]), CLT_OK);
    CLT_NO_GRAD {
        ck_assert_int_eq(clt_copy_(dp, sp), CLT_OK);
    }
    ck_assert_int_eq(clt_device_memory_stats(g0, &after[0]), CLT_OK);
    ck_assert_int_eq(clt_device_memory_stats(g1, &after[1]), CLT_OK);
    for (int k = 0; k < 2; k++) /* one copy on the devices: no tensor made on either */
        ck_assert_uint_eq(after[k].allocations, before[k].allocations);
    double *got = test_values(y); /* queued before the copy: the old values of dp */
    for (int i = 0; i < LEN; i++) {
        double want = (float)((float)hd[i] * (float)hd[TO + i]);
        ELEMENT_CHECK(got[i] == want, "y[%d]: %.9g, expected %.9g", i, got[i], want);
    }
    free(got);
    got = test_values(d);
    for (int i = 0; i < N; i++) {
        double want = (float)(i >= TO && i < TO + LEN ? hs[i - TO + AT] : hd[i]);
        ELEMENT_CHECK(got[i] == want, "element %d: %.9g, expected %.9g", i, got[i], want);
    }
    free(got);
    ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("saved for its backward pass was changed in place");
    /* into a leaf that requires grad: refused, the leaf as it was */
    ck_assert_int_eq(clt_copy_(w, sp), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_copy_: the tensor requires grad");
    got = test_values(w);
    for (int i = 0; i < LEN; i++)
        ELEMENT_CHECK(got[i] == (float)hd[i], "w[%d]: %.9g, expected %.9g", i, got[i], (float)hd[i]);
    free(got);
    /* transposed into, and f64 from: the general path, the same values */
    clt_tensor *s2 = test_tensor(g0, CLT_F64, hs, CLT_SHAPE(20, 50));
    clt_tensor *d2 = clt_tensor_zeros(CLT_SHAPE(50, 20), CLT_F32, g1), *d2t = clt_transpose(d2, 0, 1);
    ck_assert_int_eq(clt_copy_(d2t, s2), CLT_OK);
    got = test_values(d2);
    for (int i = 0; i < 20; i++)
        for (int j = 0; j < 50; j++)
            ELEMENT_CHECK(got[j * 20 + i] == (float)hs[i * 50 + j], "(%d, %d): %.9g, expected %.9g",
                          i, j, got[j * 20 + i], (float)hs[i * 50 + j]);
    free(got);
    clt_tensor_release(d2t), clt_tensor_release(d2), clt_tensor_release(s2);
    clt_tensor_release(loss), clt_tensor_release(y), clt_tensor_release(w);
    clt_tensor_release(dp), clt_tensor_release(sp), clt_tensor_release(d), clt_tensor_release(s);
}
END_TEST

/* sum(x @ w) on gpu:0 plus sum(x * x) of x copied to gpu:1, brought back: x's gradient from
 * gpu:1 reaches it where gpu:0's product already put one. Returns the loss (on gpu:0), whose
 * graph holds every part. */
static clt_tensor *peer_loss(clt_tensor *x, clt_tensor *w)
{
    clt_device *g0 = clt_device_get("gpu:0"), *g1 = clt_device_get("gpu:1");
    clt_tensor *p = clt_matmul(x, w), *a = clt_sum(p, NULL, 0, false);
    clt_tensor *there = clt_tensor_to(x, g1), *sq = clt_mul(there, there);
    clt_tensor *b = clt_sum(sq, NULL, 0, false), *back = clt_tensor_to(b, g0);
    clt_tensor *loss = clt_add(a, back);
    ck_assert_msg(loss != NULL, "%s", clt_last_error());
    clt_tensor *parts[] = {p, a, there, sq, b, back};
    for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
        clt_tensor_release(parts[k]);
    return loss;
}

/* A leaf on gpu:0 used there in a product and, copied over, on gpu:1 (peer_loss): the gradient
 * from gpu:1 is added to gpu:0's on the devices, from both buffers, once gpu:0's product has
 * made its part: W's row sums plus 2 x. */
START_TEST(test_device_subdevices_peer_gradient)
{
    if (!two_gpus(true))
        return;
    clt_device *g0 = clt_device_get("gpu:0");
    enum { M = 64, K = 300, N = 3000 }; /* gpu:0's part takes milliseconds */
    double *hx = malloc(M * K * sizeof *hx), *hw = malloc(K * N * sizeof *hw);
    test_noise(hx, M * K, 31, -1, 1);
    test_noise(hw, K * N, 32, -1, 1);
    clt_tensor *x = test_tensor(g0, CLT_F64, hx, CLT_SHAPE(M, K));
    clt_tensor *w = test_tensor(g0, CLT_F64, hw, CLT_SHAPE(K, N));
    ck_assert_int_eq(clt_tensor_set_requires_grad(x, true), CLT_OK);
    for (int round = 0; round < 3; round++) { /* the second and third add to a grad already there */
        clt_tensor *loss = peer_loss(x, w);
        ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_OK);
        clt_tensor *g = clt_tensor_grad(x);
        ck_assert_ptr_eq(clt_tensor_device(g), g0);
        double *got = test_values(g);
        for (int k = 0; k < K; k++) {
            double rows = 0;
            for (int j = 0; j < N; j++)
                rows += hw[k * N + j];
            for (int i = 0; i < M; i++) {
                double want = (round + 1) * (rows + 2 * hx[i * K + k]);
                ELEMENT_CHECK(fabs(got[i * K + k] - want) <= 1e-9 * (fabs(want) + 1),
                              "round %d, (%d, %d): %.17g, expected %.17g", round, i, k,
                              got[i * K + k], want);
            }
        }
        free(got);
        clt_tensor_release(g), clt_tensor_release(loss);
    }
    clt_tensor_release(w), clt_tensor_release(x);
    free(hw), free(hx);
}
END_TEST

/* peer_loss's backward pass under every host and device allocation failure in turn. */
typedef struct peer_case {
    clt_tensor *x, *loss;
    double *grad; /* x's grad before the pass */
} peer_case;

static bool peer_backward(void *ctx)
{
    peer_case *c = ctx;
    return clt_backward(c->loss, NULL, true) == CLT_OK;
}

static void peer_snapshot(void *ctx)
{
    peer_case *c = ctx;
    clt_tensor *g = clt_tensor_grad(c->x);
    free(c->grad);
    c->grad = test_values(g);
    clt_tensor_release(g);
}

static void peer_unchanged(void *ctx)
{
    peer_case *c = ctx;
    clt_tensor *g = clt_tensor_grad(c->x);
    double *now = test_values(g);
    for (int64_t i = 0; i < clt_tensor_numel(c->x); i++)
        ELEMENT_CHECK(now[i] == c->grad[i], "x's grad [%lld] after a failed pass: %.17g, was %.17g",
                      (long long)i, now[i], c->grad[i]);
    free(now);
    clt_tensor_release(g);
}

/* Each failure (the sum's allocation on gpu:0 among them) fails the pass with an error naming
 * clt_backward, leaks nothing and leaves x's grad as it was. */
START_TEST(test_device_subdevices_peer_gradient_failures)
{
    if (!two_gpus(true))
        return;
    double hx[6 * 5], hw[5 * 7];
    test_noise(hx, 6 * 5, 33, -1, 1);
    test_noise(hw, 5 * 7, 34, -1, 1);
    clt_device *g0 = clt_device_get("gpu:0");
    peer_case c = {test_tensor(g0, CLT_F32, hx, CLT_SHAPE(6, 5)), NULL, NULL};
    clt_tensor *w = test_tensor(g0, CLT_F32, hw, CLT_SHAPE(5, 7));
    ck_assert_int_eq(clt_tensor_set_requires_grad(c.x, true), CLT_OK);
    c.loss = peer_loss(c.x, w);
    ck_assert(peer_backward(&c)); /* x has a grad: the passes below add to it */
    test_fault_sweep_checked(peer_backward, peer_snapshot, peer_unchanged, &c, "clt_backward",
                             CLT__HOST);
    test_fault_sweep_checked(peer_backward, peer_snapshot, peer_unchanged, &c, "clt_backward",
                             CLT__DEVICE);
    free(c.grad);
    clt_tensor_release(c.loss), clt_tensor_release(w), clt_tensor_release(c.x);
}
END_TEST

/* Only CPU-type devices split: Oclgrind (a GPU) stays whole and first. */
START_TEST(test_device_subdevices_two_platforms)
{
    if (!test_use_vendors(true, true))
        return;
    setenv("CLT_SUBDEVICES", "2", 1);
    ck_assert_int_eq(clt_device_count(), 3);
    ck_assert_int_eq(clt_device_get_info(clt_device_get("gpu:0"))->type, CLT_DEVICE_GPU);
    ck_assert(name_has("gpu:0", "Oclgrind") && !name_has("gpu:0", "sub-device"));
    ck_assert(name_has("gpu:1", "(sub-device 1 of 2)"));
    ck_assert(name_has("gpu:2", "(sub-device 2 of 2)"));
}
END_TEST

/* CLT_VISIBLE_DEVICES chooses among the sub-devices, by index or by name. */
START_TEST(test_device_subdevices_visible)
{
    if (!test_use_vendors(true, false))
        return;
    setenv("CLT_SUBDEVICES", " 2 ", 1);
    setenv("CLT_VISIBLE_DEVICES", _i ? "SUB-DEVICE 2" : "1", 1);
    ck_assert_int_eq(clt_device_count(), 1);
    ck_assert(name_has("gpu:0", "(sub-device 2 of 2)"));
}
END_TEST

typedef struct log_text {
    char text[4096];
} log_text;

static void append_log(clt_log_level level, const char *message, void *user)
{
    log_text *log = user;
    size_t used = strlen(log->text);
    (void)level;
    snprintf(log->text + used, sizeof log->text - used, "%s\n", message);
}

/* 1 and empty mean no split; a device that cannot be split into N stays whole, with a
 * warning. */
START_TEST(test_device_subdevices_whole)
{
    static const char *const values[] = {"1", "", "64"};
    static log_text log;
    if (!test_use_vendors(true, false))
        return;
    setenv("CLT_SUBDEVICES", values[_i], 1);
    clt_set_log_callback(append_log, &log, CLT_LOG_WARN);
    ck_assert_int_eq(clt_device_count(), 1);
    ck_assert(!name_has("gpu:0", "sub-device"));
    if (_i == 2) {
        ck_assert_msg(strstr(log.text, "CLT_SUBDEVICES=64: OpenCL device pthread") != NULL &&
                          strstr(log.text, "stays whole: it has 2 compute units") != NULL,
                      "logged \"%s\"", log.text);
    } else {
        ck_assert_ptr_null(strstr(log.text, "CLT_SUBDEVICES"));
    }
    clt_set_log_callback(NULL, NULL, CLT_LOG_WARN);
}
END_TEST

/* A bad value is an error at first use, for every device function, like CLT_VISIBLE_DEVICES. */
START_TEST(test_device_subdevices_bad)
{
    static const char *const values[] = {"abc", "0", "100", "2x", "-2", "65"};
    char expect[64];
    if (!test_use_vendors(true, false))
        return;
    setenv("CLT_SUBDEVICES", values[_i], 1);
    ck_assert_int_eq(clt_device_count(), CLT_ERR_ENVIRONMENT);
    snprintf(expect, sizeof expect, "clt_device_count: CLT_SUBDEVICES=\"%s\": ", values[_i]);
    ck_assert_error_has(expect);
    ck_assert_error_has("a whole number from 1 (no split) to 64");
    ck_assert_ptr_null(clt_device_get("gpu:0"));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_ENVIRONMENT);
    ck_assert_ptr_null(clt_device_cpu());
    ck_assert_ptr_null(clt_device_default());
    ck_assert_ptr_null(clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, NULL));
    ck_assert_error_has("clt_tensor_zeros: CLT_SUBDEVICES=");
}
END_TEST

/* ---- the current-device guard ------------------------------------------------------------------ */

START_TEST(test_device_guard_push_pop)
{
    clt_device_guard outer, inner;
    static char other[64]; /* memory that is not a device of the library */
    clt_device *not_a_device = (clt_device *)other;
    if (!two_gpus(false))
        return;
    clt_device *g0 = clt_device_get("gpu:0"), *g1 = clt_device_get("gpu:1");
    ck_assert_int_eq(clt_device_guard_push(&outer, g1), CLT_OK);
    ck_assert(outer.active);
    ck_assert_ptr_eq(outer.previous, g0);
    ck_assert_ptr_eq(clt_device_current(), g1);
    ck_assert_ptr_eq(clt_device_get("gpu"), g1);
    ck_assert_int_eq(clt_device_guard_push(&inner, g0), CLT_OK);
    ck_assert_ptr_eq(inner.previous, g1);
    ck_assert_ptr_eq(clt_device_current(), g0);
    clt_device_guard_pop(&inner);
    ck_assert(!inner.active);
    ck_assert_ptr_eq(clt_device_current(), g1);
    clt_device_guard_pop(&inner); /* a second pop does nothing */
    ck_assert_ptr_eq(clt_device_current(), g1);
    clt_device_guard_pop(&outer);
    ck_assert_ptr_eq(clt_device_current(), g0);

    /* failures change nothing and leave the guard inactive */
    ck_assert_int_eq(clt_device_set_current(g1), CLT_OK);
    ck_assert_int_eq(clt_device_guard_push(&inner, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_device_guard_push: device is NULL");
    ck_assert(!inner.active);
    ck_assert_int_eq(clt_device_guard_push(&inner, clt_device_cpu()), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_device_guard_push: cpu is not a GPU");
    ck_assert(!inner.active);
    ck_assert_int_eq(clt_device_guard_push(&inner, not_a_device), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("is not a device of this library");
    ck_assert_int_eq(clt_device_set_current(not_a_device), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_device_guard_push(NULL, g0), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("guard is NULL");
    clt_device_guard_pop(&inner);
    clt_device_guard_pop(NULL);
    ck_assert_ptr_eq(clt_device_current(), g1);
}
END_TEST

/* Nested blocks: each restores what it replaced. */
START_TEST(test_device_with_nested)
{
    int ran = 0;
    if (!two_gpus(_i == 1))
        return;
    clt_device *g0 = clt_device_get("gpu:0"), *g1 = clt_device_get("gpu:1");
    CLT_WITH_DEVICE(g1) {
        ck_assert_ptr_eq(clt_device_current(), g1);
        CLT_WITH_DEVICE(g0) {
            ck_assert_ptr_eq(clt_device_current(), g0);
            CLT_WITH_DEVICE(g1) {
                ck_assert_ptr_eq(clt_device_get("gpu"), g1);
                ran++;
            }
            ck_assert_ptr_eq(clt_device_current(), g0);
            ran++;
        }
        ck_assert_ptr_eq(clt_device_current(), g1);
        ran++;
    }
    ck_assert_int_eq(ran, 3);
    ck_assert_ptr_eq(clt_device_current(), g0);
}
END_TEST

/* Returns from inside the block. */
static clt_device *current_inside(clt_device *dev)
{
    CLT_WITH_DEVICE(dev) {
        return clt_device_current();
    }
    return NULL;
}

/* break, continue, goto and return out of the block all restore the previous device; the
 * statements after them do not run. */
START_TEST(test_device_with_exits)
{
    int after = 0, loops = 0;
    if (!two_gpus(false))
        return;
    clt_device *g0 = clt_device_get("gpu:0"), *g1 = clt_device_get("gpu:1");

    CLT_WITH_DEVICE(g1) {
        if (clt_device_current() == g1)
            break;
        after++;
    }
    ck_assert_ptr_eq(clt_device_current(), g0);

    CLT_WITH_DEVICE(g1) {
        loops++;
        if (loops < 10)
            continue; /* ends the block: it runs once */
        after++;
    }
    ck_assert_int_eq(loops, 1);
    ck_assert_ptr_eq(clt_device_current(), g0);

    ck_assert_ptr_eq(current_inside(g1), g1);
    ck_assert_ptr_eq(clt_device_current(), g0);

    ck_assert_int_eq(clt_device_set_current(g1), CLT_OK);
    CLT_WITH_DEVICE(g0) {
        CLT_WITH_DEVICE(g1) {
            if (clt_device_current() == g1)
                goto out;
            after++;
        }
        after++;
    }
out:
    ck_assert_ptr_eq(clt_device_current(), g1);

    /* break inside an enclosing loop leaves only the block */
    for (int i = 0; i < 3; i++) {
        CLT_WITH_DEVICE(g0) {
            break;
        }
        loops++;
    }
    ck_assert_int_eq(loops, 4);
    ck_assert_ptr_eq(clt_device_current(), g1);
    ck_assert_int_eq(after, 0);
}
END_TEST

/* A device that cannot be current: the block does not run and the error says why. */
START_TEST(test_device_with_cpu)
{
    int ran = 0;
    clt_device *before = clt_device_count() > 0 ? clt_device_current() : NULL;
    CLT_WITH_DEVICE(clt_device_cpu()) {
        ran++;
    }
    ck_assert_int_eq(ran, 0);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_device_guard_push: cpu is not a GPU");
    CLT_WITH_DEVICE(NULL) {
        ran++;
    }
    ck_assert_int_eq(ran, 0);
    ck_assert_error_has("clt_device_guard_push: device is NULL");
    if (before)
        ck_assert_ptr_eq(clt_device_current(), before);
}
END_TEST

typedef struct thread_seen {
    clt_device *set, *start, *inside, *end;
} thread_seen;

/* A thread starts at gpu:0, makes `set` current for a while, then for good. */
static void *thread_sets_current(void *arg)
{
    thread_seen *seen = arg;
    seen->start = clt_device_current();
    CLT_WITH_DEVICE(seen->set) {
        seen->inside = clt_device_current();
    }
    clt_device_set_current(seen->set);
    seen->end = clt_device_current();
    return NULL;
}

START_TEST(test_device_with_threads)
{
    pthread_t thread;
    if (!two_gpus(false))
        return;
    clt_device *g0 = clt_device_get("gpu:0"), *g1 = clt_device_get("gpu:1");
    thread_seen seen = {.set = g1};

    /* another thread's current device is its own */
    ck_assert_int_eq(pthread_create(&thread, NULL, thread_sets_current, &seen), 0);
    pthread_join(thread, NULL);
    ck_assert_ptr_eq(seen.start, g0);
    ck_assert_ptr_eq(seen.inside, g1);
    ck_assert_ptr_eq(seen.end, g1);
    ck_assert_ptr_eq(clt_device_current(), g0);

    /* a new thread starts at gpu:0 whatever the creating thread has made current */
    CLT_WITH_DEVICE(g1) {
        thread_seen inner = {.set = g0};
        ck_assert_int_eq(pthread_create(&thread, NULL, thread_sets_current, &inner), 0);
        pthread_join(thread, NULL);
        ck_assert_ptr_eq(inner.start, g0);
        ck_assert_ptr_eq(inner.end, g0);
        ck_assert_ptr_eq(clt_device_current(), g1);
    }
    ck_assert_ptr_eq(clt_device_current(), g0);
}
END_TEST

/* Creation functions given no device use the current GPU. */
START_TEST(test_device_with_creation)
{
    double v[4] = {1, 2, 3, 4};
    if (!two_gpus(true))
        return;
    clt_device *g0 = clt_device_get("gpu:0"), *g1 = clt_device_get("gpu:1");
    for (int pass = 0; pass < 2; pass++) {
        clt_device *want = pass ? g1 : g0;
        if (pass)
            ck_assert_int_eq(clt_device_set_current(g1), CLT_OK);
        CLT_WITH_DEVICE(want) {
            clt_device *gpu = clt_device_get("gpu"); /* the block's device */
            clt_tensor *made[] = {
                clt_tensor_empty(CLT_SHAPE(4), CLT_F32, gpu),
                clt_tensor_zeros(CLT_SHAPE(4), CLT_F32, gpu),
                clt_tensor_ones(CLT_SHAPE(4), CLT_I32, gpu),
                clt_tensor_full(CLT_SHAPE(4), 2.5, CLT_F32, gpu),
                clt_tensor_arange(0, 4, 1, CLT_I64, gpu),
                clt_tensor_rand(CLT_SHAPE(4), CLT_F32, gpu),
                clt_tensor_randn(CLT_SHAPE(4), CLT_F32, gpu),
                clt_tensor_from_data(CLT_SHAPE(4), v, CLT_F64, gpu),
            };
            for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
                ck_assert_msg(made[i] != NULL, "%s", clt_last_error());
                ck_assert_ptr_eq(clt_tensor_device(made[i]), want);
            }
            double *got = test_values(made[3]);
            ck_assert_double_eq(got[3], 2.5);
            free(got);
            got = test_values(made[7]);
            ck_assert_double_eq(got[2], 3.0);
            free(got);
            for (size_t i = 0; i < sizeof made / sizeof *made; i++)
                clt_tensor_release(made[i]);
        }
    }
    /* outside any block: the thread's current GPU */
    ck_assert_ptr_eq(clt_device_get("gpu"), g1);
}
END_TEST

Suite *suite_device(void)
{
    Suite *s = suite_create("device");
    TCase *tc = test_case("device", 120);
    tcase_add_test(tc, test_device_list);
    tcase_add_test(tc, test_device_default_and_gpu);
    tcase_add_test(tc, test_device_set_current);
    tcase_add_test(tc, test_device_bad_names);
    tcase_add_test(tc, test_device_no_platform);
    tcase_add_test(tc, test_device_two_platforms);
#ifndef _WIN32 /* no vendor files on Windows (its loader reads the registry; cl_vendors.c) */
    tcase_add_test(tc, test_device_vendor_missing);
#endif
    tcase_add_test(tc, test_device_visible_reorder);
    tcase_add_test(tc, test_device_visible_substring);
#ifndef _WIN32 /* no empty environment variables on Windows: setting one to "" removes it */
    tcase_add_test(tc, test_device_visible_empty);
#endif
    tcase_add_loop_test(tc, test_device_visible_bad, 0, 4);
    tcase_add_test(tc, test_device_visible_long_value);
    ADD_DEVICE_TEST(tc, test_device_synchronize);
#if CLT_TEST_OPENCL
    tcase_add_test(tc, test_device_subdevices_split);
#endif
    tcase_add_test(tc, test_device_subdevices_ops);
    tcase_add_test(tc, test_device_subdevices_copy);
    tcase_add_test(tc, test_device_subdevices_copy_ordering);
    tcase_add_test(tc, test_device_subdevices_copy_into);
    tcase_add_test(tc, test_device_subdevices_peer_gradient);
    tcase_add_test(tc, test_device_subdevices_peer_gradient_failures);
    tcase_add_test(tc, test_device_subdevices_two_platforms);
    tcase_add_loop_test(tc, test_device_subdevices_visible, 0, 2);
    tcase_add_loop_test(tc, test_device_subdevices_whole, 0, 3);
    tcase_add_loop_test(tc, test_device_subdevices_bad, 0, 6);
    tcase_add_test(tc, test_device_guard_push_pop);
    tcase_add_loop_test(tc, test_device_with_nested, 0, 2);
    tcase_add_test(tc, test_device_with_exits);
    tcase_add_test(tc, test_device_with_cpu);
    tcase_add_test(tc, test_device_with_threads);
    tcase_add_test(tc, test_device_with_creation);
    suite_add_tcase(s, tc);
    return s;
}
