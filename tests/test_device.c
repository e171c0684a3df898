/* Device suite: enumeration, names, the default and current device, platforms (none, one,
 * two), CLT_VISIBLE_DEVICES, synchronisation and kernel builds from CLT_KERNEL_DIR. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"

#include <cltensor/opencl.h>

bool clt__cl_usable(const char *c_version, const char *profile, const char **why);

START_TEST(test_device_list)
{
    int n = clt_device_count();
    const char *require = getenv("CLT_TEST_REQUIRE_GPU");
    ck_assert_int_ge(n, 0);
    if (require && strcmp(require, "1") == 0)
        ck_assert_msg(n >= 1, "CLT_TEST_REQUIRE_GPU=1 but no OpenCL device was found");

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
        ck_assert_int_gt(strlen(info->opencl_version), 0);
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
    clt_device *def = clt_device_default();
    if (n == 0) {
        ck_assert_ptr_eq(def, clt_device_cpu());
        return;
    }
    ck_assert_ptr_eq(def, clt_device_get("gpu:0"));
    ck_assert_ptr_eq(clt_device_get("gpu"), def);
    ck_assert_ptr_eq(clt_device_current(), def);
    ck_assert_ptr_eq(clt_device_get("cpu"), clt_device_cpu());
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
}
END_TEST

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
    ck_assert_int_eq(g1->type, CLT_DEVICE_OPENCL_CPU);
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
    ck_assert_int_eq(clt_device_get_info(clt_device_get("gpu:0"))->type, CLT_DEVICE_OPENCL_CPU);
    ck_assert_ptr_nonnull(strstr(clt_device_get_info(clt_device_get("gpu:1"))->name, "Oclgrind"));
}
END_TEST

START_TEST(test_device_visible_substring)
{
    if (!test_use_vendors(true, true))
        return;
    setenv("CLT_VISIBLE_DEVICES", " oclGRIND ", 1);
    ck_assert_int_eq(clt_device_count(), 1);
    ck_assert_ptr_nonnull(strstr(clt_device_get_info(clt_device_get("gpu:0"))->name, "Oclgrind"));
    ck_assert_ptr_null(clt_device_get("gpu:1"));
}
END_TEST

START_TEST(test_device_visible_empty)
{
    if (!test_use_vendors(true, false))
        return;
    setenv("CLT_VISIBLE_DEVICES", "", 1);
    ck_assert_int_eq(clt_device_count(), 0);
    ck_assert_ptr_eq(clt_device_default(), clt_device_cpu());
}
END_TEST

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

/* Devices the kernels cannot run on are left out of the list. */
START_TEST(test_device_usable_versions)
{
    static const struct {
        const char *c_version, *profile, *why;
    } cases[] = {
        {"OpenCL C 1.2 PoCL", "FULL_PROFILE", NULL},
        {"OpenCL C 3.0 ", "FULL_PROFILE", NULL},
        {"OpenCL C 2.0", "FULL_PROFILE", NULL},
        {"OpenCL C 1.1", "FULL_PROFILE", "older than 1.2"},
        {"OpenCL C 1.0 ", "FULL_PROFILE", "older than 1.2"},
        {"", "FULL_PROFILE", "older than 1.2"},
        {"OpenCL C 3.0", "EMBEDDED_PROFILE", "embedded profile"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *why = NULL;
        bool ok = clt__cl_usable(cases[i].c_version, cases[i].profile, &why);
        ck_assert_msg(ok == (cases[i].why == NULL), "case %zu", i);
        if (!ok)
            ck_assert_ptr_nonnull(strstr(why, cases[i].why));
    }
}
END_TEST

/* The OpenCL objects behind devices and tensors, borrowed or retained, in order with the
 * library's own work. */
START_TEST(test_device_opencl_interop)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = clt_tensor_arange(0, 10, 1, CLT_F32, dev);
    clt_tensor *v = clt_slice(x, 0, 2, 10, 3); /* elements 2, 5, 8 */
    if (_i == 0) {
        ck_assert_ptr_null(clt_device_cl_context(dev, false));
        ck_assert_int_eq(clt_last_status(), CLT_ERR_DEVICE_MISMATCH);
        ck_assert_error_has("clt_device_cl_context: cpu is not an OpenCL device");
        ck_assert_ptr_null(clt_device_cl_queue(dev, true));
        ck_assert_ptr_null(clt_device_cl_device(dev));
        ck_assert_ptr_null(clt_tensor_cl_mem(x, false));
        ck_assert_error_has("clt_tensor_cl_mem: cpu is not an OpenCL device");
    } else {
        cl_context ctx = clt_device_cl_context(dev, false);
        cl_command_queue q = clt_device_cl_queue(dev, false);
        cl_device_id id = NULL, qid = NULL;
        cl_uint refs0 = 0, refs1 = 0;
        ck_assert_ptr_nonnull(ctx);
        ck_assert_ptr_nonnull(q);
        clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof qid, &qid, NULL);
        id = clt_device_cl_device(dev);
        ck_assert_ptr_eq(id, qid);
        clGetContextInfo(ctx, CL_CONTEXT_REFERENCE_COUNT, sizeof refs0, &refs0, NULL);
        ck_assert_ptr_eq(clt_device_cl_context(dev, true), ctx);
        clGetContextInfo(ctx, CL_CONTEXT_REFERENCE_COUNT, sizeof refs1, &refs1, NULL);
        ck_assert_uint_eq(refs1, refs0 + 1);
        clReleaseContext(ctx);

        cl_mem mem = clt_tensor_cl_mem(v, true);
        ck_assert_ptr_nonnull(mem);
        ck_assert_uint_eq(clt_tensor_cl_offset(v), 2 * sizeof(float));
        float got = 0, put = 42;
        ck_assert_int_eq(clEnqueueReadBuffer(q, mem, CL_TRUE, clt_tensor_cl_offset(v), sizeof got, &got, 0, NULL, NULL), CL_SUCCESS);
        ck_assert_float_eq(got, 2.0f);
        /* a write queued directly is seen by the library's next read */
        ck_assert_int_eq(clEnqueueWriteBuffer(q, mem, CL_FALSE, 5 * sizeof(float), sizeof put, &put, 0, NULL, NULL), CL_SUCCESS);
        float back[3];
        ck_assert_int_eq(clt_tensor_copy_to_host(v, back, sizeof back), CLT_OK);
        ck_assert_float_eq(back[1], 42.0f);
        clReleaseMemObject(mem);
        clt_tensor *empty = clt_tensor_empty(CLT_SHAPE(0), CLT_F32, dev);
        ck_assert_ptr_null(clt_tensor_cl_mem(empty, false));
        ck_assert_error_has("a tensor without elements has no buffer");
        clt_tensor_release(empty);
    }
    ck_assert_ptr_null(clt_tensor_cl_mem(NULL, false));
    ck_assert_uint_eq(clt_tensor_cl_offset(NULL), 0);
    clt_tensor_release(v);
    clt_tensor_release(x);
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

static void copy_kernel(const char *dir, const char *name)
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

/* Every kernel source of the tree into dir. */
static void copy_all_kernels(const char *dir)
{
    DIR *d = opendir(CLT_TEST_CL_DIR);
    struct dirent *e;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > 3 && strcmp(e->d_name + n - 3, ".cl") == 0)
            copy_kernel(dir, e->d_name);
    }
    closedir(d);
}

/* A broken kernel file: the build fails with the program's name and the compiler's log, every
 * time it is needed; other programs and other devices keep working. */
START_TEST(test_device_kernel_build_failure)
{
    const char *dir = test_temp_dir();
    char path[512];
    if (clt_device_count() == 0)
        return;
    copy_all_kernels(dir);
    snprintf(path, sizeof path, "%s/cast.cl", dir);
    FILE *f = fopen(path, "w");
    fputs("__kernel void cast_f32_f16(__global float *x) { this is not OpenCL C; }\n", f);
    fclose(f);
    setenv("CLT_KERNEL_DIR", dir, 1);

    clt_device *gpu = clt_device_get("gpu:0");
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(4), CLT_F32, gpu);
    ck_assert_ptr_nonnull(x);
    for (int attempt = 0; attempt < 2; attempt++) {
        ck_assert_ptr_null(clt_tensor_to_dtype(x, CLT_F16));
        ck_assert_int_eq(clt_last_status(), CLT_ERR_KERNEL_BUILD);
        ck_assert_error_has("clt_tensor_to_dtype: building OpenCL program 'cast'");
        ck_assert_error_has("for gpu:0");
        ck_assert_error_has("build log:");
        ck_assert_error_has("error");
    }
    /* the other programs build from the same folder; cpu is untouched */
    clt_tensor *r = clt_tensor_rand(CLT_SHAPE(4), CLT_F32, gpu);
    ck_assert_ptr_nonnull(r);
    clt_tensor *c = clt_tensor_ones(CLT_SHAPE(4), CLT_F32, clt_device_cpu());
    clt_tensor *h = clt_tensor_to_dtype(c, CLT_F16);
    ck_assert_ptr_nonnull(h);
    ck_assert_uint_eq(((uint16_t *)clt_tensor_data(h))[0], 0x3c00);
    clt_tensor_release(h);
    clt_tensor_release(c);
    clt_tensor_release(r);
    clt_tensor_release(x);
}
END_TEST

START_TEST(test_device_kernel_dir_missing_file)
{
    const char *dir = test_temp_dir();
    if (clt_device_count() == 0)
        return;
    copy_kernel(dir, "common.cl");
    setenv("CLT_KERNEL_DIR", dir, 1);
    clt_tensor *x = clt_tensor_rand(CLT_SHAPE(4), CLT_F32, clt_device_get("gpu:0"));
    ck_assert_ptr_null(x);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_IO);
    ck_assert_error_has("scalar.cl (CLT_KERNEL_DIR)");
}
END_TEST

/* Sources read from CLT_KERNEL_DIR give the same results as the embedded ones. */
START_TEST(test_device_kernel_dir_sources)
{
    if (clt_device_count() == 0)
        return;
    setenv("CLT_KERNEL_DIR", CLT_TEST_CL_DIR, 1);
    clt_manual_seed(3);
    clt_tensor *g = clt_tensor_randn(CLT_SHAPE(33), CLT_F32, clt_device_get("gpu:0"));
    clt_manual_seed(3);
    clt_tensor *c = clt_tensor_randn(CLT_SHAPE(33), CLT_F32, clt_device_cpu());
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_nonnull(c);
    void *gb = test_bytes(g), *cb = test_bytes(c);
    ck_assert_mem_eq(gb, cb, 33 * sizeof(float));
    free(gb);
    free(cb);
    clt_tensor_release(g);
    clt_tensor_release(c);
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
    tcase_add_test(tc, test_device_visible_reorder);
    tcase_add_test(tc, test_device_visible_substring);
    tcase_add_test(tc, test_device_visible_empty);
    tcase_add_loop_test(tc, test_device_visible_bad, 0, 4);
    tcase_add_test(tc, test_device_visible_long_value);
    tcase_add_test(tc, test_device_usable_versions);
    ADD_DEVICE_TEST(tc, test_device_synchronize);
    ADD_DEVICE_TEST(tc, test_device_opencl_interop);
    tcase_add_test(tc, test_device_kernel_build_failure);
    tcase_add_test(tc, test_device_kernel_dir_missing_file);
    tcase_add_test(tc, test_device_kernel_dir_sources);
    suite_add_tcase(s, tc);
    return s;
}
