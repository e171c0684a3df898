/* OpenCL suite: the OpenCL backend's own device tests: which devices it can use, its interop
 * objects (and their refusal for other backends' devices; what a buffer handed out means for
 * what the library knows of its values), kernel builds from
 * CLT_KERNEL_DIR (a source that does not build, a missing file, sources equal to the embedded
 * ones), the kernel arguments a launch leaves as they were, and the scheduling policy of a CPU
 * device's runtime threads. */
#define _GNU_SOURCE /* SCHED_BATCH */
#include <stdio.h>
#include <stdlib.h>

#include "opencl_helpers.h"

#include <cltensor/opencl.h>

#include "backends/opencl/cl_internal.h"
#include "backends/opencl/cl_launch.h"
#include "tensor/tensor_internal.h"

bool clt__cl_usable(const char *c_version, const char *profile, const char **why);

#ifdef __linux__
#include <dirent.h>
#include <sched.h>

/* The process's threads under SCHED_BATCH (-1 where /proc cannot be read). */
static int batch_threads(void)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    if (!dir)
        return -1;
    while ((e = readdir(dir)))
        if (e->d_name[0] != '.' && sched_getscheduler(atoi(e->d_name)) == SCHED_BATCH)
            n++;
    closedir(dir);
    return n;
}
#endif

/* In a process that may run on one core, PoCL's worker threads, started while the platforms are
 * listed, run under SCHED_BATCH, the calling thread keeping SCHED_OTHER (case 0);
 * CLT_BATCH_WORKERS=0 leaves every thread alone (case 1); with a device that is not a CPU listed
 * as well (Oclgrind's), the threads started while listing go back to SCHED_OTHER (case 2); on
 * every core the process may use, nothing changes by default (case 3), and CLT_BATCH_WORKERS=1
 * does it there too (case 4). */
START_TEST(test_device_batch_workers)
{
#ifdef __linux__
    if (!test_use_vendors(true, _i == 2))
        return;
    if (_i == 1 || _i == 4)
        setenv("CLT_BATCH_WORKERS", _i == 1 ? "0" : "1", 1);
    if (_i <= 2) { /* one core: the one this runs on */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
    }
    ck_assert_int_eq(sched_getscheduler(0), SCHED_OTHER);
    ck_assert_int_ge(clt_device_count(), 1);
    clt_tensor *t = clt_tensor_ones(CLT_SHAPE(4), CLT_F32, clt_device_get("gpu:0"));
    ck_assert_msg(t && clt_device_synchronize(clt_device_get("gpu:0")) == CLT_OK, "%s",
                  clt_last_error());
    int batch = batch_threads();
    cpu_set_t allowed;
    ck_assert_int_eq(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    bool one_core = CPU_COUNT(&allowed) == 1; /* (case 3 on a machine of one core: case 0) */
    if (_i == 0 || _i == 4 || (_i == 3 && one_core))
        ck_assert_msg(batch >= 1, "no thread of PoCL's runs under SCHED_BATCH (%d)", batch);
    else
        ck_assert_msg(batch == 0, "%d threads run under SCHED_BATCH (case %d)", batch, _i);
    ck_assert_int_eq(sched_getscheduler(0), SCHED_OTHER);
    clt_tensor_release(t);
#endif
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

/* A device of a backend that is neither the host's nor OpenCL's (the host's table under another
 * name) has no OpenCL objects: refused by its backend, never taken for an OpenCL device. */
START_TEST(test_device_interop_other_backend)
{
    clt__backend other;
    clt_device fake;
    test_fake_device(&fake, &other, "other", "gpu:9", CLT_DEVICE_GPU);
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(4), CLT_F32, &fake);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_null(clt_device_cl_device(&fake));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DEVICE_MISMATCH);
    ck_assert_error_has("clt_device_cl_device: gpu:9 is not an OpenCL device (its backend is other)");
    ck_assert_ptr_null(clt_device_cl_queue(&fake, false));
    ck_assert_ptr_null(clt_tensor_cl_mem(x, false));
    ck_assert_error_has("clt_tensor_cl_mem: gpu:9 is not an OpenCL device");
    clt_tensor_release(x);
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

        /* labels whose buffer was handed out: their range is unknown from then on, and a
         * target written through the buffer is caught by cross entropy's check */
        int64_t tv[] = {1, 0}, lo, hi, seven = 7;
        clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(2), tv, CLT_I64, dev);
        clt_tensor *logits = clt_tensor_zeros(CLT_SHAPE(2, 3), CLT_F32, dev);
        ck_assert(clt__tensor_range(t, &lo, &hi));
        cl_mem tm = clt_tensor_cl_mem(t, false);
        ck_assert(!clt__tensor_range(t, &lo, &hi));
        ck_assert_int_eq(clEnqueueWriteBuffer(q, tm, CL_FALSE, clt_tensor_cl_offset(t), sizeof seven, &seven, 0, NULL, NULL), CL_SUCCESS);
        ck_assert_ptr_null(clt_cross_entropy(logits, t, NULL));
        ck_assert_error_has("clt_cross_entropy: target 7 (element 0) is out of range for size 3");
        /* its holder may go on writing the buffer: freed, it is not given to the next tensor */
        clt_memory_stats before, after;
        tm = clt_tensor_cl_mem(t, true);
        ck_assert_int_eq(clt_device_memory_stats(dev, &before), CLT_OK);
        clt_tensor_release(t);
        ck_assert_int_eq(clt_device_memory_stats(dev, &after), CLT_OK);
        ck_assert_uint_eq(after.cached, before.cached); /* not kept for reuse */
        ck_assert_uint_lt(after.allocated, before.allocated);
        t = clt_tensor_from_data(CLT_SHAPE(2), tv, CLT_I64, dev);
        ck_assert_ptr_ne(clt_tensor_cl_mem(t, false), tm);
        clReleaseMemObject(tm);
        clt_tensor_release(logits), clt_tensor_release(t);

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

/* A launch sets only the arguments that differ from the kernel's last launch: the same add
 * again sets at most its output's buffer; an add of other parts of the same tensors sets their
 * offsets too; after a buffer was released (the cache emptied), every argument is set again,
 * since a new buffer may come back with the released one's handle. Results stay right. */
START_TEST(test_device_kept_arguments)
{
    clt_device *dev = test_device(_i);
    if (_i == 0)
        return; /* (no kernel arguments on cpu) */
    clt_tensor *a = clt_tensor_arange(0, 32, 1, CLT_F32, dev);
    clt_tensor *b = clt_tensor_full(CLT_SHAPE(32), 2, CLT_F32, dev);
    clt_tensor *c = clt_add(a, b), *a2, *b2;
    float got[32];
    long before;
    ck_assert_ptr_nonnull(c);
    clt_tensor_release(c);
    ck_assert_int_eq(clt_device_synchronize(dev), CLT_OK);

    before = clt__cl_args_set(dev);
    c = clt_add(a, b);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_le(clt__cl_args_set(dev) - before, 1);
    ck_assert_int_eq(clt_tensor_copy_to_host(c, got, sizeof got), CLT_OK);
    for (int i = 0; i < 32; i++)
        ck_assert_float_eq(got[i], (float)i + 2);
    clt_tensor_release(c);

    a2 = clt_narrow(a, 0, 16, 16), b2 = clt_narrow(b, 0, 8, 16);
    before = clt__cl_args_set(dev);
    c = clt_add(a2, b2);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_ge(clt__cl_args_set(dev) - before, 2);  /* the two offsets at least */
    ck_assert_int_lt(clt__cl_args_set(dev) - before, 12); /* not the buffers nor the count */
    ck_assert_int_eq(clt_tensor_copy_to_host(c, got, 16 * sizeof *got), CLT_OK);
    for (int i = 0; i < 16; i++)
        ck_assert_float_eq(got[i], (float)(16 + i) + 2);
    clt_tensor_release(c);

    ck_assert_int_eq(clt_device_synchronize(dev), CLT_OK);
    clt_device_empty_cache(dev); /* c's buffer released */
    before = clt__cl_args_set(dev);
    c = clt_add(a2, b2);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(clt__cl_args_set(dev) - before, 12); /* every argument of ewc_add */
    ck_assert_int_eq(clt_tensor_copy_to_host(c, got, 16 * sizeof *got), CLT_OK);
    for (int i = 0; i < 16; i++)
        ck_assert_float_eq(got[i], (float)(16 + i) + 2);
    clt_tensor_release(c), clt_tensor_release(b2), clt_tensor_release(a2);
    clt_tensor_release(b), clt_tensor_release(a);
}
END_TEST

/* A broken kernel file: the build fails with the program's name and the compiler's log, every
 * time it is needed; other programs and other devices keep working. */
START_TEST(test_device_kernel_build_failure)
{
    const char *dir = test_temp_dir();
    char path[512];
    if (clt_device_count() == 0)
        return;
    test_copy_kernels(dir);
    snprintf(path, sizeof path, "%s/cast.cl", dir);
    FILE *f = fopen(path, "wb");
    fputs("__kernel void cast_f32_f16(__global float *x) { this is not OpenCL C; }\n", f);
    fclose(f);
    test_allow_stderr(); /* PoCL prints the compiler's error count */
    setenv("CLT_KERNEL_DIR", dir, 1);

    clt_device *gpu = clt_device_get("gpu:0");
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(4), CLT_F32, gpu);
    ck_assert_ptr_nonnull(x);
    for (int attempt = 0; attempt < 2; attempt++) {
        ck_assert_ptr_null(clt_tensor_to_dtype(x, CLT_F16));
        ck_assert_int_eq(clt_last_status(), CLT_ERR_KERNEL_BUILD);
        ck_assert_error_has("clt_tensor_to_dtype: building OpenCL program 'cast:from_f32'");
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
    test_copy_kernel(dir, "common.cl");
    setenv("CLT_KERNEL_DIR", dir, 1);
    clt_tensor *x = clt_tensor_rand(CLT_SHAPE(4), CLT_F32, clt_device_get("gpu:0"));
    ck_assert_ptr_null(x);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_IO);
    ck_assert_error_has("cannot open scalar.cl in CLT_KERNEL_DIR");
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
    test_assert_same_bytes(g, c);
    clt_tensor_release(g);
    clt_tensor_release(c);
}
END_TEST

Suite *suite_opencl(void)
{
    Suite *s = suite_create("opencl");
    TCase *tc = test_case("opencl", 600);
    tcase_add_test(tc, test_device_usable_versions);
    tcase_add_loop_test(tc, test_device_batch_workers, 0, 5);
    tcase_add_test(tc, test_device_interop_other_backend);
    ADD_DEVICE_TEST(tc, test_device_opencl_interop);
    ADD_DEVICE_TEST(tc, test_device_kept_arguments);
    tcase_add_test(tc, test_device_kernel_build_failure);
    tcase_add_test(tc, test_device_kernel_dir_missing_file);
    tcase_add_test(tc, test_device_kernel_dir_sources);
    suite_add_tcase(s, tc);
    return s;
}
