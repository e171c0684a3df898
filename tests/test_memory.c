/* Memory suite: the caching allocator on every device (reuse by size class, exact statistics,
 * emptying the cache), the out-of-memory path under CLT_DEVICE_MEMORY_LIMIT (a retry that
 * succeeds once the cache is given back; a clean failure that names the sizes and leaves
 * existing tensors intact; values that name no size refused with a warning), Oclgrind's 128 MiB
 * device as a real small GPU, and pinned host buffers with the asynchronous copies through them,
 * on every device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static clt_memory_stats stats_of(clt_device *dev)
{
    clt_memory_stats s;
    ck_assert_int_eq(clt_device_memory_stats(dev, &s), CLT_OK);
    return s;
}

START_TEST(test_memory_reuse)
{
    clt_device *dev = test_device(_i);
    clt_device_empty_cache(dev);
    clt_memory_stats s0 = stats_of(dev), s;
    ck_assert_uint_eq(s0.cached, 0);
    /* 1000 f32 = 4000 bytes: the 4096-byte class */
    clt_tensor *a = clt_tensor_zeros(CLT_SHAPE(1000), CLT_F32, dev);
    s = stats_of(dev);
    ck_assert_uint_eq(s.allocated, s0.allocated + 4096);
    ck_assert_uint_eq(s.allocations, s0.allocations + 1);
    ck_assert_uint_eq(s.driver_allocations, s0.driver_allocations + 1);
    ck_assert_uint_ge(s.peak, s.allocated);
    clt_tensor_release(a);
    test_sync_all();
    s = stats_of(dev);
    ck_assert_uint_eq(s.allocated, s0.allocated);
    ck_assert_uint_eq(s.cached, 4096);
    /* 975 f32 = 3900 bytes: the same class, reused */
    clt_tensor *b = clt_tensor_zeros(CLT_SHAPE(975), CLT_F32, dev);
    s = stats_of(dev);
    ck_assert_uint_eq(s.cached, 0);
    ck_assert_uint_eq(s.allocations, s0.allocations + 2);
    ck_assert_uint_eq(s.driver_allocations, s0.driver_allocations + 1);
    float *v = test_bytes(b);
    ck_assert(v[0] == 0 && v[974] == 0);
    free(v);
    /* a size of another class: new memory; emptying the cache gives the freed back */
    clt_tensor *c = clt_tensor_zeros(CLT_SHAPE(3000), CLT_F32, dev);
    clt_tensor_release(c);
    clt_tensor_release(b);
    test_sync_all();
    s = stats_of(dev);
    ck_assert_uint_eq(s.driver_allocations, s0.driver_allocations + 2);
    ck_assert_uint_eq(s.cached, 4096 + 12288);
    clt_device_empty_cache(dev);
    ck_assert_uint_eq(stats_of(dev).cached, 0);
    ck_assert_uint_eq(stats_of(dev).allocated, s0.allocated);
}
END_TEST

START_TEST(test_memory_limit)
{
    clt_device *dev = test_device(_i);
    setenv("CLT_DEVICE_MEMORY_LIMIT", "1M", 1);
    ck_assert_uint_eq(stats_of(dev).limit, 1 << 20);
    int64_t big = 600 * 1024 / 4, bigger = 700 * 1024 / 4;
    clt_tensor *a = clt_tensor_zeros(CLT_SHAPE(big), CLT_F32, dev);
    ck_assert_ptr_nonnull(a);
    clt_tensor_release(a);
    test_sync_all();
    ck_assert_uint_gt(stats_of(dev).cached, 0);
    /* 700 KiB more does not fit beside the cached 600 KiB: the cache goes, then it fits */
    clt_tensor *b = clt_tensor_full(CLT_SHAPE(bigger), 1.5, CLT_F32, dev);
    ck_assert_msg(b != NULL, "%s", clt_last_error());
    ck_assert_uint_eq(stats_of(dev).cached, 0);
    /* another 700 KiB cannot fit at all: a clean error, b intact */
    test_live live = test_live_now();
    ck_assert_ptr_null(clt_tensor_zeros(CLT_SHAPE(bigger), CLT_F32, dev));
    ck_assert(clt_last_status() == CLT_ERR_DEVICE_OUT_OF_MEMORY || clt_last_status() == CLT_ERR_OUT_OF_MEMORY);
    ck_assert_error_has("memory allocating 716800 bytes on");
    ck_assert_error_has("CLT_DEVICE_MEMORY_LIMIT reached");
    ck_assert_error_has("bytes allocated, 0 cached");
    ck_assert_live_eq(test_live_now(), live);
    float *v = test_bytes(b); /* read without a device-side conversion */
    ck_assert(v[0] == 1.5f && v[bigger - 1] == 1.5f);
    free(v);
    clt_tensor_release(b);
}
END_TEST

static char warned[512];

static void keep_warning(clt_log_level level, const char *message, void *user)
{
    (void)user;
    if (level == CLT_LOG_WARN && strstr(message, "CLT_DEVICE_MEMORY_LIMIT"))
        snprintf(warned, sizeof warned, "%s", message);
}

/* A CLT_DEVICE_MEMORY_LIMIT that names no size of at least one byte is refused with a warning
 * naming the value (and no limit applies), where it silently meant "no limit" (or, cast from
 * a double out of range, anything); good values still apply. One process a value (a loop test):
 * the limit is read once, when a device's allocator starts. */
static const struct {
    const char *value;
    size_t limit; /* 0: refused */
} limit_cases[] = {{"inf", 0}, {"1e30", 0}, {"0.5", 0}, {"-1", 0}, {"nan", 0}, {"1x", 0},
                   {"K", 0}, {"1", 1}, {"1.5K", 1536}, {"2G", (size_t)2 << 30}};

START_TEST(test_memory_limit_refused)
{
    clt_memory_stats st;
    char want[128];
    ck_assert(test_use_vendors(false, false)); /* cpu alone */
    setenv("CLT_DEVICE_MEMORY_LIMIT", limit_cases[_i].value, 1);
    clt_set_log_callback(keep_warning, NULL, CLT_LOG_WARN);
    ck_assert_int_eq(clt_device_memory_stats(clt_device_cpu(), &st), CLT_OK);
    clt_set_log_callback(NULL, NULL, CLT_LOG_WARN);
    ck_assert_msg(st.limit == limit_cases[_i].limit, "CLT_DEVICE_MEMORY_LIMIT=%s: limit %zu",
                  limit_cases[_i].value, st.limit);
    snprintf(want, sizeof want, "CLT_DEVICE_MEMORY_LIMIT=\"%s\" is not a size",
             limit_cases[_i].value);
    if (limit_cases[_i].limit)
        ck_assert_msg(warned[0] == '\0', "CLT_DEVICE_MEMORY_LIMIT=%s: warned \"%s\"",
                      limit_cases[_i].value, warned);
    else
        ck_assert_msg(strstr(warned, want) != NULL, "CLT_DEVICE_MEMORY_LIMIT=%s: warned \"%s\"",
                      limit_cases[_i].value, warned);
}
END_TEST

/* Oclgrind's device has 128 MiB: the driver's own out-of-memory, and the retry after the cache
 * is given back. */
START_TEST(test_memory_small_gpu)
{
    if (!test_use_vendors(false, true))
        return;
    clt_device *dev = clt_device_get("gpu:0");
    const clt_device_info *info = clt_device_get_info(dev);
    size_t chunk = (size_t)info->max_alloc_bytes < info->global_mem_bytes / 4
                       ? (size_t)info->max_alloc_bytes : (size_t)(info->global_mem_bytes / 4);
    chunk -= chunk % 4096;
    int64_t n = (int64_t)(chunk / 4);
    clt_tensor *held[8] = {NULL};
    int made = 0;
    for (; made < 8; made++) /* fill the device */
        if (!(held[made] = clt_tensor_empty(CLT_SHAPE(n), CLT_F32, dev)))
            break;
    ck_assert_int_lt(made, 8);
    ck_assert_int_ge(made, 2);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DEVICE_OUT_OF_MEMORY);
    ck_assert_error_has("out of device memory allocating");
    ck_assert_error_has("the device's memory is full");
    ck_assert_uint_eq(stats_of(dev).limit, 128 << 20);
    /* free two into the cache: a tensor of another size class fits only after the cache goes */
    clt_tensor_release(held[--made]);
    clt_tensor_release(held[--made]);
    clt_tensor *other = clt_tensor_empty(CLT_SHAPE(n + n / 2), CLT_F32, dev);
    ck_assert_msg(other != NULL, "%s", clt_last_error());
    ck_assert_uint_eq(stats_of(dev).cached, 0);
    clt_tensor_release(other);
    for (int k = 0; k < made; k++)
        clt_tensor_release(held[k]);
    /* one tensor larger than the largest allocation: its own error */
    ck_assert_ptr_null(clt_tensor_empty(CLT_SHAPE((int64_t)(info->max_alloc_bytes / 4) + 1024), CLT_F32, dev));
    ck_assert_error_has("exceed the largest single allocation of gpu:0");
    clt_device_synchronize(dev);
}
END_TEST

/* ---- pinned host memory and asynchronous copies -------------------------------------------- */

/* A pinned buffer of the device: its size, writable memory, counted as device memory while it
 * lives; bad sizes and devices refused. */
START_TEST(test_memory_host_buffer)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    clt_host_buffer *b = clt_host_buffer_new(dev, 1000);
    ck_assert_msg(b != NULL, "%s", clt_last_error());
    ck_assert_uint_eq(clt_host_buffer_size(b), 1000);
    unsigned char *p = clt_host_buffer_data(b);
    ck_assert_ptr_nonnull(p);
    for (int k = 0; k < 1000; k++)
        p[k] = (unsigned char)k;
    for (int k = 0; k < 1000; k++)
        ck_assert_uint_eq(p[k], (unsigned char)k);
    clt_host_buffer_free(b);
    clt_host_buffer_free(NULL);
    ck_assert_ptr_null(clt_host_buffer_data(NULL));
    ck_assert_uint_eq(clt_host_buffer_size(NULL), 0);
    ck_assert_ptr_null(clt_host_buffer_new(dev, 0));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_host_buffer_new: nbytes is 0");
    ck_assert_ptr_null(clt_host_buffer_new(NULL, 16));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* A round trip through a pinned buffer with and without events: the tensor's values out, other
 * values in, every byte as sent; a transposed view read in row-major order. */
START_TEST(test_memory_async_copies)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    enum { N = 3000 };
    float host[N];
    for (int k = 0; k < N; k++)
        host[k] = (float)k * 0.5f - 7;
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(N), host, CLT_F32, dev);
    clt_host_buffer *b = clt_host_buffer_new(dev, sizeof host);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(b);
    float *p = clt_host_buffer_data(b);
    clt_event *ev = NULL;
    ck_assert_int_eq(clt_tensor_read_async(t, p, sizeof host, &ev), CLT_OK);
    ck_assert_ptr_nonnull(ev);
    ck_assert_int_eq(clt_event_wait(ev), CLT_OK);
    clt_event_release(ev);
    ck_assert_int_eq(memcmp(p, host, sizeof host), 0);
    for (int k = 0; k < N; k++)
        p[k] = (float)(N - k);
    ev = NULL;
    ck_assert_int_eq(clt_tensor_write_async(t, p, sizeof host, &ev), CLT_OK);
    ck_assert_ptr_nonnull(ev);
    ck_assert_int_eq(clt_event_wait(ev), CLT_OK);
    clt_event_release(ev);
    /* later work on the device sees the written values */
    clt_tensor *twice = clt_add(t, t);
    ck_assert_ptr_nonnull(twice);
    ck_assert_int_eq(clt_tensor_read_async(twice, host, sizeof host, NULL), CLT_OK);
    for (int k = 0; k < N; k++)
        ck_assert_float_eq(host[k], 2.0f * (float)(N - k));
    /* without an event, finished on return; a view is read in row-major order */
    clt_tensor *m = clt_view(t, CLT_SHAPE(2, 1500)), *mt = clt_transpose(m, 0, 1);
    ck_assert_ptr_nonnull(mt);
    ck_assert_int_eq(clt_tensor_read_async(mt, p, sizeof host, NULL), CLT_OK);
    for (int i = 0; i < 1500; i++)
        for (int j = 0; j < 2; j++)
            ck_assert_float_eq(p[i * 2 + j], (float)(N - (j * 1500 + i)));
    clt_tensor_release(mt), clt_tensor_release(m), clt_tensor_release(twice);
    clt_tensor_release(t);
    clt_host_buffer_free(b);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Bad input: named, the event left NULL, the tensor unchanged. */
START_TEST(test_memory_async_copies_bad)
{
    clt_device *dev = test_device(_i);
    float host[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(2, 4), host, CLT_F32, dev);
    clt_tensor *tt = clt_transpose(t, 0, 1);
    clt_event *ev = (clt_event *)&ev; /* not NULL: must be reset */
    ck_assert_ptr_nonnull(tt);
    ck_assert_int_eq(clt_tensor_read_async(t, out, sizeof out - 1, &ev), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_tensor_read_async: the host memory holds 31 bytes; the tensor needs 32");
    ck_assert_ptr_null(ev);
    ck_assert_int_eq(clt_tensor_read_async(NULL, out, sizeof out, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_tensor_read_async(t, NULL, sizeof out, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_tensor_read_async: the host memory is NULL");
    ev = (clt_event *)&ev;
    ck_assert_int_eq(clt_tensor_write_async(tt, out, sizeof out, &ev), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_tensor_write_async: the tensor is not contiguous");
    ck_assert_ptr_null(ev);
    ck_assert_int_eq(clt_tensor_write_async(t, out, 4, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("the host memory holds 4 bytes; the tensor needs 32");
    ck_assert_int_eq(clt_tensor_copy_to_host(t, out, sizeof out), CLT_OK);
    ck_assert_int_eq(memcmp(out, host, sizeof host), 0);
    clt_tensor_release(tt), clt_tensor_release(t);
}
END_TEST

Suite *suite_memory(void)
{
    Suite *s = suite_create("memory");
    TCase *tc = test_case("memory", 600);
    ADD_DEVICE_TEST(tc, test_memory_reuse);
    ADD_DEVICE_TEST(tc, test_memory_limit);
    tcase_add_loop_test(tc, test_memory_limit_refused, 0,
                        (int)(sizeof limit_cases / sizeof *limit_cases));
    tcase_add_test(tc, test_memory_small_gpu);
    ADD_DEVICE_TEST(tc, test_memory_host_buffer);
    ADD_DEVICE_TEST(tc, test_memory_async_copies);
    ADD_DEVICE_TEST(tc, test_memory_async_copies_bad);
    suite_add_tcase(s, tc);
    return s;
}
