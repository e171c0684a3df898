/* The core suite: status names and descriptions, the thread-local last error, the version,
 * logging callbacks, dtype names and sizes, clt_free, and the backend seam's optional and
 * required entries. */
#include <stdio.h>
#include <string.h>

#include "helpers.h"

/* Asserts that the last error's message begins with `prefix`. */
#define ck_assert_error_starts(prefix)                                                         \
    ck_assert_msg(strncmp(clt_last_error(), prefix, strlen(prefix)) == 0,                      \
                  "last error \"%s\" does not start with \"%s\"", clt_last_error(), prefix)

/* ---- status names and descriptions --------------------------------------------------------- */

START_TEST(test_status_name_library_codes)
{
    ck_assert_str_eq(clt_status_name(CLT_OK), "CLT_OK");
    ck_assert_str_eq(clt_status_name(CLT_ERR_INVALID_ARGUMENT), "CLT_ERR_INVALID_ARGUMENT");
    ck_assert_str_eq(clt_status_name(CLT_ERR_OUT_OF_MEMORY), "CLT_ERR_OUT_OF_MEMORY");
    ck_assert_str_eq(clt_status_name(CLT_ERR_DEVICE_OUT_OF_MEMORY),
                     "CLT_ERR_DEVICE_OUT_OF_MEMORY");
    ck_assert_str_eq(clt_status_name(CLT_ERR_NO_DEVICE), "CLT_ERR_NO_DEVICE");
    ck_assert_str_eq(clt_status_name(CLT_ERR_UNSUPPORTED), "CLT_ERR_UNSUPPORTED");
    ck_assert_str_eq(clt_status_name(CLT_ERR_DEVICE_MISMATCH), "CLT_ERR_DEVICE_MISMATCH");
    ck_assert_str_eq(clt_status_name(CLT_ERR_SHAPE), "CLT_ERR_SHAPE");
    ck_assert_str_eq(clt_status_name(CLT_ERR_DTYPE), "CLT_ERR_DTYPE");
    ck_assert_str_eq(clt_status_name(CLT_ERR_KERNEL_BUILD), "CLT_ERR_KERNEL_BUILD");
    ck_assert_str_eq(clt_status_name(CLT_ERR_ENVIRONMENT), "CLT_ERR_ENVIRONMENT");
    ck_assert_str_eq(clt_status_name(CLT_ERR_IO), "CLT_ERR_IO");
    ck_assert_str_eq(clt_status_name(CLT_ERR_INTERNAL), "CLT_ERR_INTERNAL");
    ck_assert_int_eq(CLT_ERR_SHAPE, -1006);
    ck_assert_int_eq(CLT_ERR_INVALID_ARGUMENT, -1000);
}
END_TEST

/* OpenCL's codes are named by the OpenCL backend; a build without it knows none. */
START_TEST(test_status_name_opencl_and_unknown)
{
#if !CLT_TEST_OPENCL
    ck_assert_str_eq(clt_status_name(-5), "UNKNOWN");
    ck_assert_str_eq(clt_status_str(-5), "unknown status");
    return;
#endif
    ck_assert_str_eq(clt_status_name(-5), "CL_OUT_OF_RESOURCES");
    ck_assert_str_eq(clt_status_name(-1), "CL_DEVICE_NOT_FOUND");
    ck_assert_str_eq(clt_status_name(-4), "CL_MEM_OBJECT_ALLOCATION_FAILURE");
    ck_assert_str_eq(clt_status_name(-11), "CL_BUILD_PROGRAM_FAILURE");
    ck_assert_str_eq(clt_status_name(-30), "CL_INVALID_VALUE");
    ck_assert_str_eq(clt_status_name(-54), "CL_INVALID_WORK_GROUP_SIZE");
    /* values that are neither the library's nor OpenCL's */
    ck_assert_str_eq(clt_status_name(CLT_END), "CLT_END");
    ck_assert_str_eq(clt_status_name(2), "UNKNOWN");
    ck_assert_str_eq(clt_status_name(-999), "UNKNOWN");
    ck_assert_str_eq(clt_status_name(-1012), "UNKNOWN");
    ck_assert_str_eq(clt_status_name(-2000), "UNKNOWN");
}
END_TEST

START_TEST(test_status_str)
{
    ck_assert_str_eq(clt_status_str(CLT_OK), "success");
    ck_assert_str_eq(clt_status_str(CLT_ERR_INVALID_ARGUMENT), "invalid argument");
    ck_assert_str_eq(clt_status_str(CLT_ERR_OUT_OF_MEMORY), "out of host memory");
    ck_assert_str_eq(clt_status_str(CLT_ERR_DEVICE_OUT_OF_MEMORY), "out of device memory");
    ck_assert_str_eq(clt_status_str(CLT_ERR_SHAPE), "invalid shape");
    ck_assert_str_eq(clt_status_str(CLT_ERR_DTYPE), "invalid dtype");
    ck_assert_str_eq(clt_status_str(CLT_ERR_INTERNAL), "internal error");
#if CLT_TEST_OPENCL
    ck_assert_str_eq(clt_status_str(-5), "OpenCL error");
    ck_assert_str_eq(clt_status_str(-999), "OpenCL error");
#endif
    ck_assert_str_eq(clt_status_str(CLT_END), "the end of the data (not an error)");
    ck_assert_str_eq(clt_status_str(2), "unknown status");
    ck_assert_str_eq(clt_status_str(-1012), "unknown status");
}
END_TEST

/* ---- the last error ------------------------------------------------------------------------ */

START_TEST(test_last_error_after_failure)
{
    clt_device *cpu = clt_device_cpu();
    clt_tensor *t;

    ck_assert_ptr_nonnull(cpu);
    clt_clear_error();
    ck_assert_str_eq(clt_last_error(), "");
    ck_assert_int_eq(clt_last_status(), CLT_OK);

    t = clt_tensor_zeros(CLT_SHAPE(2, -5), CLT_F32, cpu);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_msg(strncmp(clt_last_error(), "clt_tensor_zeros: ", 18) == 0,
                  "last error \"%s\" does not name clt_tensor_zeros", clt_last_error());
    ck_assert_error_has("-5");

    /* callbacks report their failures the same way */
    ck_assert_int_eq(clt_set_error(CLT_ERR_IO, "my_dataset", "row %d is bad", 7), CLT_ERR_IO);
    ck_assert_str_eq(clt_last_error(), "my_dataset: row 7 is bad");
    ck_assert_int_eq(clt_last_status(), CLT_ERR_IO);
    t = clt_tensor_zeros(CLT_SHAPE(2, -5), CLT_F32, cpu);

    /* a successful call keeps the last failure */
    t = clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, cpu);
    ck_assert_ptr_nonnull(t);
    clt_tensor_release(t);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_starts("clt_tensor_zeros: ");

    /* a later failure replaces it */
    ck_assert_ptr_null(clt_tensor_ones(CLT_SHAPE(3), (clt_dtype)99, cpu));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    ck_assert_error_starts("clt_tensor_ones: ");
    ck_assert_error_has("99");

    clt_clear_error();
    ck_assert_str_eq(clt_last_error(), "");
    ck_assert_int_eq(clt_last_status(), CLT_OK);
}
END_TEST

/* ---- version ------------------------------------------------------------------------------- */

START_TEST(test_version)
{
    char expected[32];
    ck_assert_int_eq(clt_version_number(), CLT_VERSION_NUMBER);
    ck_assert_int_eq(CLT_VERSION_NUMBER,
                     CLT_VERSION_MAJOR * 10000 + CLT_VERSION_MINOR * 100 + CLT_VERSION_PATCH);
    ck_assert_ptr_nonnull(clt_version_string());
    ck_assert_str_eq(clt_version_string(), CLT_VERSION_STRING);
    snprintf(expected, sizeof expected, "%d.%d.%d", CLT_VERSION_MAJOR, CLT_VERSION_MINOR,
             CLT_VERSION_PATCH);
    ck_assert_str_eq(clt_version_string(), expected);
}
END_TEST

/* ---- logging ------------------------------------------------------------------------------- */

typedef struct log_record {
    int count;       /* messages received */
    int debug_count; /* of which at CLT_LOG_DEBUG */
    clt_log_level level;
    char message[1024];
    void *user_seen;
} log_record;

static void record_log(clt_log_level level, const char *message, void *user)
{
    log_record *rec = user;
    rec->count++;
    if (level == CLT_LOG_DEBUG)
        rec->debug_count++;
    rec->level = level;
    rec->user_seen = user;
    snprintf(rec->message, sizeof rec->message, "%s", message);
}

START_TEST(test_log_callback)
{
    log_record rec;
    clt_device *cpu = clt_device_cpu(); /* builds the device list before logging starts */

    ck_assert_ptr_nonnull(cpu);
    memset(&rec, 0, sizeof rec);
    clt_set_log_callback(record_log, &rec, CLT_LOG_DEBUG);
    ck_assert_ptr_null(clt_tensor_zeros(CLT_SHAPE(-1), CLT_F32, cpu));
    ck_assert_int_eq(rec.count, 1);
    ck_assert_int_eq(rec.debug_count, 1);
    ck_assert_int_eq(rec.level, CLT_LOG_DEBUG);
    ck_assert_ptr_eq(rec.user_seen, &rec);
    ck_assert_str_eq(rec.message, clt_last_error());
    ck_assert_msg(strncmp(rec.message, "clt_tensor_zeros: ", 18) == 0, "logged \"%s\"",
                  rec.message);

    /* above the level of the failure: nothing arrives */
    memset(&rec, 0, sizeof rec);
    clt_set_log_callback(record_log, &rec, CLT_LOG_INFO);
    ck_assert_ptr_null(clt_tensor_zeros(CLT_SHAPE(-1), CLT_F32, cpu));
    ck_assert_int_eq(rec.debug_count, 0);

    /* back to no callback: nothing arrives either */
    memset(&rec, 0, sizeof rec);
    clt_set_log_callback(NULL, NULL, CLT_LOG_DEBUG);
    ck_assert_ptr_null(clt_tensor_zeros(CLT_SHAPE(-1), CLT_F32, cpu));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_int_eq(rec.count, 0);
}
END_TEST

/* ---- dtypes ---------------------------------------------------------------------------------- */

START_TEST(test_dtype_names_and_sizes)
{
    static const struct {
        clt_dtype dtype;
        const char *name;
        size_t size;
    } table[] = {
        {CLT_F32, "f32", 4}, {CLT_F64, "f64", 8}, {CLT_F16, "f16", 2}, {CLT_BF16, "bf16", 2},
        {CLT_I32, "i32", 4}, {CLT_I64, "i64", 8}, {CLT_U8, "u8", 1},   {CLT_BOOL, "bool", 1},
    };
    ck_assert_int_eq(sizeof table / sizeof table[0], CLT_DTYPE_COUNT - 1);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        ck_assert_str_eq(clt_dtype_name(table[i].dtype), table[i].name);
        ck_assert_uint_eq(clt_dtype_size(table[i].dtype), table[i].size);
    }
    ck_assert_str_eq(clt_dtype_name(CLT_DTYPE_NONE), "invalid");
    ck_assert_uint_eq(clt_dtype_size(CLT_DTYPE_NONE), 0);
    ck_assert_str_eq(clt_dtype_name(CLT_DTYPE_COUNT), "invalid");
    ck_assert_uint_eq(clt_dtype_size(CLT_DTYPE_COUNT), 0);
    ck_assert_str_eq(clt_dtype_name((clt_dtype)99), "invalid");
    ck_assert_uint_eq(clt_dtype_size((clt_dtype)99), 0);
    ck_assert_str_eq(clt_dtype_name((clt_dtype)-1), "invalid");
    ck_assert_uint_eq(clt_dtype_size((clt_dtype)-1), 0);
}
END_TEST

/* ---- clt_free -------------------------------------------------------------------------------- */

START_TEST(test_free)
{
    long before = clt__live_allocations(CLT__HOST);
    clt_tensor *t;
    char *s;

    clt_free(NULL);
    ck_assert_int_eq(clt__live_allocations(CLT__HOST), before);

    /* a string the library returned goes back through clt_free */
    t = clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, clt_device_cpu());
    ck_assert_ptr_nonnull(t);
    before = clt__live_allocations(CLT__HOST);
    s = clt_tensor_format(t);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, "tensor([0., 0.])");
    ck_assert_int_eq(clt__live_allocations(CLT__HOST), before + 1);
    clt_free(s);
    ck_assert_int_eq(clt__live_allocations(CLT__HOST), before);
    clt_tensor_release(t);
}
END_TEST

/* ---- the backend seam ------------------------------------------------------------------------ */

/* A device whose backend lacks an optional entry (the host's table without gemm): the operation
 * fails with CLT_ERR_UNSUPPORTED naming it, the dtype, the device and the backend, makes nothing
 * and runs nowhere else; the other operations still run on it. A table without a required
 * entry is refused. */
START_TEST(test_backend_missing_entry)
{
    clt__backend lacking;
    clt_device fake;
    test_fake_device(&fake, &lacking, "lacking", "fake", CLT_DEVICE_HOST);
    lacking.gemm = NULL;
    ck_assert_int_eq(clt__backend_check("test", &lacking), CLT_OK);

    clt_tensor *a = clt_tensor_ones(CLT_SHAPE(2, 2), CLT_F32, &fake);
    ck_assert_msg(a != NULL, "%s", clt_last_error());
    clt_tensor *sum = clt_add(a, a);
    ck_assert_msg(sum != NULL, "%s", clt_last_error());
    ck_assert_ptr_null(clt_matmul(a, a));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_UNSUPPORTED);
    ck_assert_error_has("gemm of f32 is not supported on fake (");
    ck_assert_error_has("the lacking backend has no gemm");
    float got[4];
    ck_assert_int_eq(clt_tensor_copy_to_host(sum, got, sizeof got), CLT_OK);
    for (int k = 0; k < 4; k++)
        ck_assert_float_eq(got[k], 2.0f);
    clt_tensor_release(sum);
    clt_tensor_release(a);

    lacking.synchronize = NULL;
    ck_assert_int_eq(clt__backend_check("test", &lacking), CLT_ERR_INTERNAL);
    ck_assert_error_has("test: the lacking backend has no synchronize");
}
END_TEST

Suite *suite_core(void)
{
    Suite *s = suite_create("core");
    TCase *tc = test_case("status", 120);
    tcase_add_test(tc, test_status_name_library_codes);
    tcase_add_test(tc, test_status_name_opencl_and_unknown);
    tcase_add_test(tc, test_status_str);
    tcase_add_test(tc, test_last_error_after_failure);
    tcase_add_test(tc, test_version);
    suite_add_tcase(s, tc);

    tc = test_case("backend", 120);
    tcase_add_test(tc, test_backend_missing_entry);
    suite_add_tcase(s, tc);

    tc = test_case("logging", 120);
    tcase_add_test(tc, test_log_callback);
    suite_add_tcase(s, tc);

    tc = test_case("dtype_and_free", 120);
    tcase_add_test(tc, test_dtype_names_and_sizes);
    tcase_add_test(tc, test_free);
    suite_add_tcase(s, tc);
    return s;
}
