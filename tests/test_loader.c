/* Loader suite, on every device: every item exactly once per epoch in order or shuffled (with
 * and without drop_last), the order reproducible from the seed, batches on the requested device
 * holding the right items, distributed shards (num_replicas, rank), an error inside the dataset
 * reaching the caller with its message, and stopping early, restarting and freeing that leak
 * nothing. */
#include <stdint.h>
#include <stdlib.h>

#include "helpers.h"
#include "tensor/tensor_internal.h"

enum { ITEMS = 10 };

/* Item i: x = (i, 10 + i) as f32, y = i as i64; item `bad` fails. */
typedef struct counting {
    int64_t bad;
} counting;

static clt_status counting_get(void *user, int64_t i, void *const *out)
{
    counting *c = user;
    float *x = out[0];
    if (i == c->bad)
        return clt_set_error(CLT_ERR_IO, "counting", "cannot read item %lld", (long long)i);
    x[0] = (float)i;
    x[1] = (float)(10 + i);
    *(int64_t *)out[1] = i;
    return CLT_OK;
}

static clt_dataset *counting_new(counting *c)
{
    clt_field fields[2] = {{CLT_F32, 1, {2}}, {CLT_I64, 0, {0}}};
    clt_dataset *d = clt_dataset_new(ITEMS, 2, fields, counting_get, NULL, c);
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    return d;
}

/* Runs one epoch; records the items in order into seen (returns how many) after checking each
 * batch's device, shapes and contents. */
static int epoch(clt_loader *l, clt_device *dev, int64_t batch_size, int64_t *seen)
{
    clt_tensor *b[2];
    clt_status st;
    int n = 0;
    while ((st = clt_loader_next(l, b)) == CLT_OK) {
        int64_t rows = clt_tensor_size(b[1], 0);
        ck_assert_ptr_eq(clt_tensor_device(b[0]), dev);
        ck_assert_ptr_eq(clt_tensor_device(b[1]), dev);
        ck_assert_int_eq(clt_tensor_ndim(b[0]), 2);
        ck_assert_int_eq(clt_tensor_size(b[0], 0), rows);
        ck_assert_int_eq(clt_tensor_size(b[0], 1), 2);
        ck_assert_int_eq(clt_tensor_dtype(b[1]), CLT_I64);
        ck_assert(rows >= 1 && rows <= batch_size);
        double *x = test_values(b[0]), *y = test_values(b[1]), lo_y = y[0], hi_y = y[0];
        for (int64_t r = 0; r < rows; r++) {
            ck_assert(x[2 * r] == y[r] && x[2 * r + 1] == 10 + y[r]);
            ck_assert_int_lt(n, ITEMS);
            seen[n++] = (int64_t)y[r];
            lo_y = y[r] < lo_y ? y[r] : lo_y, hi_y = y[r] > hi_y ? y[r] : hi_y;
        }
        if (!clt__is_host(dev)) { /* labels carry their range: checks need no read back */
            int64_t lo = -1, hi = -1;
            ck_assert(clt__tensor_range(b[1], &lo, &hi));
            ck_assert(lo == (int64_t)lo_y && hi == (int64_t)hi_y);
        }
        free(x), free(y);
        clt_tensor_release(b[0]), clt_tensor_release(b[1]);
    }
    ck_assert_msg(st == CLT_END, "%s", clt_last_error());
    return n;
}

START_TEST(test_loader_epochs)
{
    clt_device *dev = test_device(_i);
    counting c = {-1};
    clt_dataset *d = counting_new(&c);
    test_live before = test_live_now();
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        for (int drop = 0; drop < 2; drop++) {
            clt_loader_options o = {.batch_size = 3, .shuffle = shuffle, .seed = 42,
                                    .drop_last = drop, .device = dev};
            clt_loader *l = clt_loader_new(d, &o), *twin = clt_loader_new(d, &o);
            ck_assert_msg(l && twin, "%s", clt_last_error());
            ck_assert_int_eq(clt_loader_batches(l), drop ? 3 : 4);
            int64_t first[ITEMS], second[ITEMS], again[ITEMS];
            int n1 = epoch(l, dev, 3, first), n2 = epoch(l, dev, 3, second);
            ck_assert_int_eq(epoch(twin, dev, 3, again), n1);
            ck_assert_int_eq(clt_loader_epoch(l), 2);
            ck_assert_int_eq(n1, drop ? 9 : ITEMS);
            ck_assert_int_eq(n2, n1);
            bool counted[ITEMS] = {false}, same_order = true, sorted = true;
            for (int k = 0; k < n1; k++) {
                ck_assert_msg(!counted[first[k]], "item %lld twice", (long long)first[k]);
                counted[first[k]] = true;
                ck_assert_int_eq(again[k], first[k]); /* the seed fixes the order */
                same_order &= first[k] == second[k];
                sorted &= first[k] == k;
            }
            /* without shuffling, in order; with it, another order every epoch */
            ck_assert(shuffle ? !sorted && !same_order : sorted && same_order);
            clt_loader_free(twin);
            clt_loader_free(l);
        }
    }
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
    clt_dataset_release(d);
}
END_TEST

/* A device whose backend has no pinned memory and no copy queue (the host's table without
 * those entries, on a device that is not the host): the loader stages batches in ordinary host
 * memory and writes them on the device's own queue, every item once, on that device; a pinned
 * host buffer there is ordinary memory. */
START_TEST(test_loader_without_pinned_memory)
{
    clt__backend plain;
    clt_device fake;
    test_fake_device(&fake, &plain, "plain", "gpu:9", CLT_DEVICE_GPU);
    plain.pinned_alloc = NULL, plain.pinned_free = NULL;
    plain.upload = NULL, plain.queue_wait = NULL;
    counting c = {-1};
    clt_dataset *d = counting_new(&c);
    test_live before = test_live_now();
    clt_loader *l = clt_loader_new(d, &(clt_loader_options){.batch_size = 4, .device = &fake});
    ck_assert_msg(l != NULL, "%s", clt_last_error());
    int64_t seen[ITEMS];
    ck_assert_int_eq(epoch(l, &fake, 4, seen), ITEMS);
    for (int k = 0; k < ITEMS; k++)
        ck_assert_int_eq(seen[k], k);
    clt_loader_free(l);
    clt_host_buffer *b = clt_host_buffer_new(&fake, 100);
    ck_assert_ptr_nonnull(b);
    ((unsigned char *)clt_host_buffer_data(b))[99] = 7;
    clt_host_buffer_free(b);
    ck_assert_live_eq(test_live_now(), before);
    clt_dataset_release(d);
}
END_TEST

/* A batch size far beyond the dataset's length gives one batch of every item on every device
 * (staging memory is sized by the items a batch has); sizes whose memory would have no size are
 * refused when the loader is made. */
START_TEST(test_loader_huge_batch_size)
{
    clt_device *dev = test_device(_i);
    counting c = {-1};
    clt_dataset *d = counting_new(&c);
    static const int64_t sizes[] = {((int64_t)1 << 61) + 1, INT64_MAX, ITEMS + 1};
    for (int k = 0; k < 3; k++) {
        for (int drop = 0; drop < 2; drop++) {
            clt_loader_options o = {.batch_size = sizes[k], .drop_last = drop, .device = dev};
            clt_loader *l = clt_loader_new(d, &o);
            int64_t seen[ITEMS];
            ck_assert_msg(l != NULL, "%s", clt_last_error());
            ck_assert_int_eq(clt_loader_batches(l), drop ? 0 : 1);
            ck_assert_int_eq(epoch(l, dev, sizes[k], seen), drop ? 0 : ITEMS);
            for (int i = 0; !drop && i < ITEMS; i++)
                ck_assert_int_eq(seen[i], i);
            clt_loader_free(l);
        }
    }
    /* a dataset whose batch of every item would need more than 2^64 bytes */
    clt_field wide[2] = {{CLT_F32, 1, {(int64_t)1 << 40}}, {CLT_I64, 0, {0}}};
    clt_dataset *huge = clt_dataset_new((int64_t)1 << 30, 2, wide, counting_get, NULL, &c);
    ck_assert_ptr_nonnull(huge);
    ck_assert_ptr_null(clt_loader_new(huge, &(clt_loader_options){.batch_size = 1 << 30,
                                                                  .device = dev}));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_loader_new: a batch of field 0 would have shape (1073741824, "
                        "1099511627776): more elements than memory can hold");
    clt_field many[1] = {{CLT_U8, 0, {0}}};
    clt_dataset *long_one = clt_dataset_new(INT64_MAX, 1, many, counting_get, NULL, &c);
    ck_assert_ptr_null(clt_loader_new(long_one, &(clt_loader_options){.device = dev}));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_OUT_OF_MEMORY);
    ck_assert_error_has("clt_loader_new: the order of 9223372036854775807 items needs more bytes");
    clt_dataset_release(long_one);
    clt_dataset_release(huge);
    clt_dataset_release(d);
}
END_TEST

/* Distributed shards: with 2, 3 and 4 replicas of the 10 items, each replica gets ceil(10 / n)
 * items an epoch; together they hold every item, each once but for the padding (the first items
 * of the epoch's order again); the same seed gives the same shards, each epoch new ones; the
 * single loader's order dealt out is exactly what the replicas get. */
START_TEST(test_loader_replicas)
{
    clt_device *dev = test_device(_i);
    counting c = {-1};
    clt_dataset *d = counting_new(&c);
    for (int replicas = 2; replicas <= 4; replicas++) {
        int64_t share = (ITEMS + replicas - 1) / replicas, whole[2][ITEMS];
        clt_loader *one = clt_loader_new(d, &(clt_loader_options){.batch_size = 3, .shuffle = true,
                                                                  .seed = 7, .device = dev});
        ck_assert_ptr_nonnull(one);
        ck_assert_int_eq(epoch(one, dev, 3, whole[0]), ITEMS);
        ck_assert_int_eq(epoch(one, dev, 3, whole[1]), ITEMS);
        for (int e = 0; e < 2; e++) {
            int count[ITEMS] = {0};
            for (int r = 0; r < replicas; r++) {
                clt_loader_options o = {.batch_size = 3, .shuffle = true, .seed = 7,
                                        .device = dev, .num_replicas = replicas, .rank = r};
                clt_loader *l = clt_loader_new(d, &o);
                int64_t seen[ITEMS];
                ck_assert_msg(l != NULL, "%s", clt_last_error());
                ck_assert_int_eq(clt_loader_batches(l), (share + 2) / 3);
                if (e == 1) /* the second epoch's shard */
                    ck_assert_int_eq(epoch(l, dev, 3, seen), share);
                ck_assert_int_eq(epoch(l, dev, 3, seen), share);
                for (int64_t k = 0; k < share; k++) {
                    ck_assert_int_eq(seen[k], whole[e][(k * replicas + r) % ITEMS]);
                    count[seen[k]]++;
                }
                clt_loader_free(l);
            }
            int64_t padding = share * replicas - ITEMS;
            for (int k = 0; k < ITEMS; k++) /* the padding: the epoch's first items again */
                ck_assert_int_eq(count[whole[e][k]], k < padding ? 2 : 1);
        }
        clt_loader_free(one);
    }
    ck_assert_ptr_null(clt_loader_new(d, &(clt_loader_options){.num_replicas = 2, .rank = 2}));
    ck_assert_error_has("clt_loader_new: rank 2 must lie in 0..1 (num_replicas 2)");
    ck_assert_ptr_null(clt_loader_new(d, &(clt_loader_options){.num_replicas = -1}));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    clt_dataset_release(d);
}
END_TEST

START_TEST(test_loader_dataset_error)
{
    clt_device *dev = test_device(_i);
    counting c = {4};
    clt_dataset *d = counting_new(&c);
    clt_loader *l = clt_loader_new(d, &(clt_loader_options){.batch_size = 3, .device = dev});
    clt_tensor *b[2];
    int ok = 0, failed = 0;
    clt_status st;
    while ((st = clt_loader_next(l, b)) != CLT_END) {
        if (st == CLT_OK) {
            ok++;
            clt_tensor_release(b[0]), clt_tensor_release(b[1]);
            continue;
        }
        failed++;
        ck_assert_int_eq(st, CLT_ERR_IO);
        ck_assert_str_eq(clt_last_error(), "clt_loader_next: item 4: counting: cannot read item 4");
    }
    ck_assert_int_eq(ok, 3); /* the batch of items 3, 4, 5 is lost, the others come */
    ck_assert_int_eq(failed, 1);
    clt_loader_free(l);

    ck_assert_ptr_null(clt_loader_new(NULL, NULL));
    ck_assert_error_has("clt_loader_new: the dataset is NULL");
    ck_assert_ptr_null(clt_loader_new(d, &(clt_loader_options){.batch_size = -2}));
    ck_assert_error_has("batch_size -2 must be positive");
    ck_assert_int_eq(clt_loader_next(NULL, b), CLT_ERR_INVALID_ARGUMENT);
    clt_dataset_release(d);
}
END_TEST

START_TEST(test_loader_early_stop)
{
    clt_device *dev = test_device(_i);
    counting c = {-1};
    clt_dataset *d = counting_new(&c);
    test_live before = test_live_now();
    clt_tensor *b[2];
    int64_t seen[ITEMS];
    /* stop after one batch, with more prepared ahead: freeing drops them */
    clt_loader *l = clt_loader_new(d, &(clt_loader_options){.batch_size = 2, .device = dev, .prefetch = 3});
    ck_assert_int_eq(clt_loader_next(l, b), CLT_OK);
    clt_loader_free(l);
    clt_tensor_release(b[0]), clt_tensor_release(b[1]); /* a batch outlives its loader */
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);

    /* restart abandons the epoch: the next batch is the first of a new one */
    l = clt_loader_new(d, &(clt_loader_options){.batch_size = 4, .device = dev});
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(clt_loader_next(l, b), CLT_OK);
        clt_tensor_release(b[0]), clt_tensor_release(b[1]);
    }
    clt_loader_restart(l);
    ck_assert_int_eq(epoch(l, dev, 4, seen), ITEMS);
    ck_assert_int_eq(seen[0], 0);
    ck_assert_int_eq(clt_loader_epoch(l), 2);
    clt_loader_free(l);
    clt_loader_free(NULL);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
    clt_dataset_release(d);
}
END_TEST

START_TEST(test_loader_subsets)
{
    counting c = {-1};
    clt_dataset *d = counting_new(&c), *train = NULL, *test = NULL, *again = NULL, *rest = NULL;
    ck_assert_int_eq(clt_dataset_split(d, 7, 5, &train, &test), CLT_OK);
    ck_assert_int_eq(clt_dataset_split(d, 7, 5, &again, &rest), CLT_OK);
    ck_assert_int_eq(clt_dataset_length(train), 7);
    ck_assert_int_eq(clt_dataset_length(test), 3);
    bool seen[ITEMS] = {false};
    for (int k = 0; k < ITEMS; k++) {
        clt_dataset *part = k < 7 ? train : test, *twin = k < 7 ? again : rest;
        clt_tensor *f[2], *g[2];
        ck_assert_int_eq(clt_dataset_get(part, k < 7 ? k : k - 7, f), CLT_OK);
        ck_assert_int_eq(clt_dataset_get(twin, k < 7 ? k : k - 7, g), CLT_OK);
        int64_t i = *(int64_t *)clt_tensor_data(f[1]);
        ck_assert(!seen[i]); /* a permutation: every item in one part, once */
        seen[i] = true;
        ck_assert_int_eq(*(int64_t *)clt_tensor_data(g[1]), i); /* the seed fixes it */
        ck_assert(((float *)clt_tensor_data(f[0]))[1] == (float)(10 + i));
        clt_tensor_release(f[0]), clt_tensor_release(f[1]);
        clt_tensor_release(g[0]), clt_tensor_release(g[1]);
    }
    const int64_t picks[3] = {9, 0, 9};
    clt_dataset *sub = clt_dataset_subset(d, picks, 3);
    clt_tensor *f[2];
    ck_assert_int_eq(clt_dataset_get(sub, 2, f), CLT_OK);
    ck_assert_int_eq(*(int64_t *)clt_tensor_data(f[1]), 9);
    clt_tensor_release(f[0]), clt_tensor_release(f[1]);
    const int64_t bad[1] = {10};
    ck_assert_ptr_null(clt_dataset_subset(d, bad, 1));
    ck_assert_error_has("clt_dataset_subset: index 10 (element 0) is outside the dataset's 0..9");
    ck_assert_int_eq(clt_dataset_split(d, 11, 0, &train, &test), CLT_ERR_INVALID_ARGUMENT);
    clt_dataset *all[] = {sub, rest, again, test, train, d};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_dataset_release(all[k]);
}
END_TEST

static bool make_loader(void *ctx)
{
    clt_loader *l = clt_loader_new(ctx, &(clt_loader_options){.batch_size = 4, .shuffle = true});
    clt_loader_free(l);
    return l != NULL;
}

START_TEST(test_loader_allocation_failures)
{
    counting c = {-1};
    clt_dataset *d = counting_new(&c);
    ck_assert_int_ge(test_fault_sweep(make_loader, d, "clt_loader_new", CLT__HOST), 3);
    clt_dataset_release(d);
}
END_TEST

Suite *suite_loader(void)
{
    Suite *s = suite_create("loader");
    TCase *tc = test_case("loader", 600);
    ADD_DEVICE_TEST(tc, test_loader_epochs);
    ADD_DEVICE_TEST(tc, test_loader_replicas);
    ADD_DEVICE_TEST(tc, test_loader_dataset_error);
    ADD_DEVICE_TEST(tc, test_loader_early_stop);
    ADD_DEVICE_TEST(tc, test_loader_huge_batch_size);
    tcase_add_test(tc, test_loader_subsets);
    tcase_add_test(tc, test_loader_allocation_failures);
    tcase_add_test(tc, test_loader_without_pinned_memory);
    suite_add_tcase(s, tc);
    return s;
}
