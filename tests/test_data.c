/* The data suite: datasets. A user's dataset through clt_dataset_new and clt_dataset_get, with
 * its argument errors and a get that fails; the tensor dataset over contiguous and strided
 * tensors; the CSV dataset over the digits file and small files written here, with its options
 * and the errors of bad files; allocation failures that leak nothing. Datasets live on the host,
 * so these tests run once, not once per device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <zlib.h>

#include "helpers.h"

/* ---- a user's dataset ----------------------------------------------------------------------- */

/* Item i: a (2, 3) f32 field holding 10 * i + j and an i64 label 100 + i. */
typedef struct counting {
    int destroyed;
    int64_t fail_at;      /* the item whose get fails (-1: none) */
    bool report;          /* the failure comes with a message through clt_set_error */
} counting;

static clt_status counting_get(void *user, int64_t index, void *const *out)
{
    counting *c = user;
    if (index == c->fail_at)
        return c->report ? clt_set_error(CLT_ERR_IO, "counting", "item %lld is unreadable",
                                         (long long)index)
                         : CLT_ERR_IO;
    for (int j = 0; j < 6; j++)
        ((float *)out[0])[j] = (float)(10 * index + j);
    *(int64_t *)out[1] = 100 + index;
    return CLT_OK;
}

static void counting_destroy(void *user)
{
    ((counting *)user)->destroyed++;
}

static const clt_field counting_fields[2] = {{CLT_F32, 2, {2, 3}}, {CLT_I64, 0, {0}}};

static clt_dataset *counting_dataset(counting *c, int64_t length)
{
    clt_dataset *d = clt_dataset_new(length, 2, counting_fields, counting_get, counting_destroy, c);
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    return d;
}

START_TEST(test_data_user_dataset)
{
    counting c = {.fail_at = -1};
    clt_device_cpu();
    test_live base = test_live_now();
    clt_dataset *d = counting_dataset(&c, 5);
    ck_assert_int_eq(clt_dataset_length(d), 5);
    ck_assert_int_eq(clt_dataset_fields(d), 2);
    const clt_field *f0 = clt_dataset_field(d, 0), *f1 = clt_dataset_field(d, 1);
    ck_assert(f0->dtype == CLT_F32 && f0->ndim == 2 && f0->shape[0] == 2 && f0->shape[1] == 3);
    ck_assert(f1->dtype == CLT_I64 && f1->ndim == 0);
    ck_assert_ptr_null(clt_dataset_field(d, 2));
    ck_assert_ptr_null(clt_dataset_field(d, -1));
    for (int64_t i = 0; i < 5; i++) {
        clt_tensor *item[2];
        ck_assert_msg(clt_dataset_get(d, i, item) == CLT_OK, "%s", clt_last_error());
        ck_assert_ptr_eq(clt_tensor_device(item[0]), clt_device_cpu());
        ck_assert_int_eq(clt_tensor_ndim(item[0]), 2);
        ck_assert_int_eq(clt_tensor_size(item[0], 0), 2);
        ck_assert_int_eq(clt_tensor_size(item[0], 1), 3);
        ck_assert_int_eq(clt_tensor_dtype(item[0]), CLT_F32);
        ck_assert_int_eq(clt_tensor_ndim(item[1]), 0);
        ck_assert_int_eq(clt_tensor_dtype(item[1]), CLT_I64);
        const float *x = clt_tensor_data(item[0]);
        for (int j = 0; j < 6; j++)
            ck_assert(x[j] == (float)(10 * i + j));
        ck_assert_int_eq(*(const int64_t *)clt_tensor_data(item[1]), 100 + i);
        clt_tensor_release(item[0]), clt_tensor_release(item[1]);
    }
    /* destroy runs at the last release only */
    ck_assert_ptr_eq(clt_dataset_retain(d), d);
    clt_dataset_release(d);
    ck_assert_int_eq(c.destroyed, 0);
    clt_dataset_release(d);
    ck_assert_int_eq(c.destroyed, 1);
    clt_dataset_release(NULL);
    ck_assert_ptr_null(clt_dataset_retain(NULL));
    ck_assert_int_eq(clt_dataset_length(NULL), 0);
    ck_assert_int_eq(clt_dataset_fields(NULL), 0);
    ck_assert_ptr_null(clt_dataset_field(NULL, 0));
    /* an empty dataset, and a field without elements */
    clt_field empty = {CLT_U8, 2, {4, 0}};
    d = clt_dataset_new(0, 1, &empty, counting_get, NULL, &c);
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_dataset_length(d), 0);
    clt_dataset_release(d);
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* clt_dataset_new(length, nfields, fields, get) fails with status and a message holding text. */
static void new_fails(int64_t length, int nfields, const clt_field *fields, clt_dataset_get_fn get,
                      clt_status status, const char *text)
{
    counting c = {.fail_at = -1};
    ck_assert_ptr_null(clt_dataset_new(length, nfields, fields, get, counting_destroy, &c));
    ck_assert_msg(clt_last_status() == status, "%s: %s", text, clt_status_name(clt_last_status()));
    ck_assert_error_has("clt_dataset_new: ");
    ck_assert_error_has(text);
    ck_assert_int_eq(c.destroyed, 0);
}

START_TEST(test_data_new_arguments)
{
    clt_field f[CLT_DATA_MAX_FIELDS + 1];
    for (int k = 0; k <= CLT_DATA_MAX_FIELDS; k++)
        f[k] = (clt_field){CLT_F32, 1, {3}};
    clt_device_cpu();
    test_live base = test_live_now();
    new_fails(-1, 1, f, counting_get, CLT_ERR_INVALID_ARGUMENT, "length -1 is negative");
    new_fails(4, 0, f, counting_get, CLT_ERR_INVALID_ARGUMENT, "nfields 0 is outside 1..8");
    new_fails(4, 9, f, counting_get, CLT_ERR_INVALID_ARGUMENT, "nfields 9 is outside 1..8");
    new_fails(4, 1, NULL, counting_get, CLT_ERR_INVALID_ARGUMENT, "fields is NULL");
    new_fails(4, 1, f, NULL, CLT_ERR_INVALID_ARGUMENT, "get is NULL");
    f[1] = (clt_field){CLT_DTYPE_NONE, 1, {3}};
    new_fails(4, 2, f, counting_get, CLT_ERR_DTYPE, "field 1: dtype 0 is invalid");
    f[1] = (clt_field){(clt_dtype)99, 1, {3}};
    new_fails(4, 2, f, counting_get, CLT_ERR_DTYPE, "field 1: dtype 99 is invalid");
    f[1] = (clt_field){CLT_F32, -1, {3}};
    new_fails(4, 2, f, counting_get, CLT_ERR_SHAPE, "field 1: ndim -1 is outside 0..7");
    f[1] = (clt_field){CLT_F32, CLT_MAX_DIMS, {3}};
    new_fails(4, 2, f, counting_get, CLT_ERR_SHAPE, "field 1: ndim 8 is outside 0..7");
    f[1] = (clt_field){CLT_F32, 2, {3, -2}};
    new_fails(4, 2, f, counting_get, CLT_ERR_SHAPE,
              "field 1: shape (3, -2): size -2 of dimension 1 is negative");
    f[1] = (clt_field){CLT_F64, 3, {INT64_MAX, INT64_MAX, 2}};
    new_fails(4, 2, f, counting_get, CLT_ERR_SHAPE, "is too large");
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

START_TEST(test_data_get_errors)
{
    counting c = {.fail_at = 3, .report = true};
    clt_tensor *item[2] = {NULL, NULL};
    clt_device_cpu();
    test_live base = test_live_now();
    clt_dataset *d = counting_dataset(&c, 5);
    /* out of range */
    ck_assert_int_eq(clt_dataset_get(d, 5, item), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(clt_last_error(),
                     "clt_dataset_get: index 5 is out of range for a dataset of 5 items");
    ck_assert_int_eq(clt_dataset_get(d, -1, item), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("index -1 is out of range for a dataset of 5 items");
    ck_assert_int_eq(clt_dataset_get(NULL, 0, item), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_dataset_get: dataset is NULL");
    ck_assert_int_eq(clt_dataset_get(d, 0, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_dataset_get: fields is NULL");
    /* the dataset's own failure reaches the caller with its message, and nothing is made */
    ck_assert_int_eq(clt_dataset_get(d, 3, item), CLT_ERR_IO);
    ck_assert_str_eq(clt_last_error(), "counting: item 3 is unreadable");
    ck_assert_ptr_null(item[0]);
    ck_assert_ptr_null(item[1]);
    /* a failure without a message gets one */
    c.report = false;
    clt_clear_error();
    ck_assert_int_eq(clt_dataset_get(d, 3, item), CLT_ERR_IO);
    ck_assert_error_has("clt_dataset_get: the dataset failed to read item 3 (CLT_ERR_IO)");
    /* the next item reads */
    ck_assert_int_eq(clt_dataset_get(d, 4, item), CLT_OK);
    clt_tensor_release(item[0]), clt_tensor_release(item[1]);
    clt_dataset_release(d);
    ck_assert_int_eq(c.destroyed, 1);
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

typedef struct get_case {
    clt_dataset *d;
    int64_t index;
} get_case;

static bool run_get(void *ctx)
{
    get_case *g = ctx;
    clt_tensor *item[2];
    if (clt_dataset_get(g->d, g->index, item) != CLT_OK)
        return false;
    clt_tensor_release(item[0]), clt_tensor_release(item[1]);
    return true;
}

START_TEST(test_data_get_allocation_failures)
{
    counting c = {.fail_at = -1};
    get_case g = {counting_dataset(&c, 5), 2};
    ck_assert_int_eq(test_fault_sweep(run_get, &g, "clt_dataset_get", CLT__HOST), 6);
    clt_dataset_release(g.d);
}
END_TEST

/* ---- tensor dataset ------------------------------------------------------------------------- */

/* Item i of d: field k's values as doubles into v[k] (at most 16 each). */
static void item_values(clt_dataset *d, int64_t i, double v[][16])
{
    clt_tensor *item[CLT_DATA_MAX_FIELDS];
    ck_assert_msg(clt_dataset_get(d, i, item) == CLT_OK, "%s", clt_last_error());
    for (int k = 0; k < clt_dataset_fields(d); k++) {
        double *x = test_values(item[k]);
        ck_assert_int_le(clt_tensor_numel(item[k]), 16);
        memcpy(v[k], x, (size_t)clt_tensor_numel(item[k]) * sizeof *x);
        free(x);
        clt_tensor_release(item[k]);
    }
}

START_TEST(test_data_tensors)
{
    clt_device_cpu();
    test_live base = test_live_now();
    clt_tensor *x = clt_tensor_arange(0, 12, 1, CLT_F32, clt_device_cpu());
    clt_tensor *xs = clt_view(x, CLT_SHAPE(4, 3));
    clt_tensor *y = clt_tensor_arange(7, 11, 1, CLT_I64, clt_device_cpu());
    clt_tensor *w = clt_view(x, CLT_SHAPE(3, 4)), *wt = clt_transpose(w, 0, 1); /* (4, 3) */
    clt_tensor *z = clt_tensor_arange(0, 24, 1, CLT_F64, clt_device_cpu());
    clt_tensor *zv = clt_view(z, CLT_SHAPE(2, 4, 3)), *zt = clt_transpose(zv, 0, 1); /* (4, 2, 3) */
    ck_assert(!clt_tensor_is_contiguous(wt) && !clt_tensor_is_contiguous(zt));
    clt_tensor *in[4] = {xs, y, wt, zt};
    clt_dataset *d = clt_dataset_tensors(in, 4);
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_dataset_length(d), 4);
    ck_assert_int_eq(clt_dataset_fields(d), 4);
    const clt_field *f = clt_dataset_field(d, 0);
    ck_assert(f->dtype == CLT_F32 && f->ndim == 1 && f->shape[0] == 3);
    f = clt_dataset_field(d, 1);
    ck_assert(f->dtype == CLT_I64 && f->ndim == 0);
    f = clt_dataset_field(d, 3);
    ck_assert(f->dtype == CLT_F64 && f->ndim == 2 && f->shape[0] == 2 && f->shape[1] == 3);
    for (int64_t i = 0; i < 4; i++) {
        double v[4][16];
        item_values(d, i, v);
        for (int j = 0; j < 3; j++) {
            ck_assert(v[0][j] == (double)(3 * i + j));
            ck_assert(v[2][j] == (double)(4 * j + i));   /* column i of the (3, 4) view */
            ck_assert(v[3][j] == (double)(12 * 0 + 3 * i + j));
            ck_assert(v[3][3 + j] == (double)(12 * 1 + 3 * i + j));
        }
        ck_assert(v[1][0] == (double)(7 + i));
    }
    /* a contiguous tensor is read, not copied: later writes show */
    ((float *)clt_tensor_data(xs))[3] = -1;
    double v[4][16];
    item_values(d, 1, v);
    ck_assert(v[0][0] == -1);
    clt_tensor_release(zt), clt_tensor_release(zv), clt_tensor_release(z);
    clt_tensor_release(wt), clt_tensor_release(w), clt_tensor_release(y);
    clt_tensor_release(xs), clt_tensor_release(x);
    item_values(d, 3, v); /* the dataset holds what it reads */
    ck_assert(v[2][2] == 11 && v[3][5] == 23);
    clt_dataset_release(d);
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* A strided tensor that requires grad: the dataset's copy records no graph. */
START_TEST(test_data_tensors_requires_grad)
{
    clt_device_cpu();
    test_live base = test_live_now();
    clt_tensor *w = clt_tensor_ones(CLT_SHAPE(3, 2), CLT_F32, clt_device_cpu());
    ck_assert_int_eq(clt_tensor_set_requires_grad(w, true), CLT_OK);
    clt_tensor *wt = clt_transpose(w, 0, 1);
    clt_dataset *d = clt_dataset_tensors(&wt, 1);
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    ck_assert(clt_grad_is_enabled());
    clt_tensor_release(wt), clt_tensor_release(w);
    double v[1][16];
    item_values(d, 1, v);
    ck_assert(v[0][0] == 1 && v[0][2] == 1);
    clt_dataset_release(d);
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

static void tensors_fail(clt_tensor *const *in, int n, clt_status status, const char *text)
{
    ck_assert_ptr_null(clt_dataset_tensors(in, n));
    ck_assert_msg(clt_last_status() == status, "%s: %s", text, clt_status_name(clt_last_status()));
    ck_assert_error_has("clt_dataset_tensors: ");
    ck_assert_error_has(text);
}

START_TEST(test_data_tensors_errors)
{
    clt_tensor *a = clt_tensor_zeros(CLT_SHAPE(4, 2), CLT_F32, clt_device_cpu());
    if (clt_device_count() > 0) {
        clt_tensor *g = clt_tensor_zeros(CLT_SHAPE(4), CLT_F32, clt_device_get("gpu:0"));
        ck_assert_msg(g != NULL, "%s", clt_last_error());
        tensors_fail((clt_tensor *[]){a, g}, 2, CLT_ERR_DEVICE_MISMATCH,
                     "tensor 1 is on gpu:0: the dataset reads cpu tensors (the loader moves the "
                     "batches to the device)");
        clt_tensor_release(g);
        test_sync_all();
    }
    test_live base = test_live_now();
    clt_tensor *b = clt_tensor_zeros(CLT_SHAPE(5), CLT_I64, clt_device_cpu());
    clt_tensor *s = clt_tensor_zeros(0, NULL, CLT_F32, clt_device_cpu());
    tensors_fail((clt_tensor *[]){a, b}, 2, CLT_ERR_SHAPE,
                 "tensor 1 of shape (5,) has 5 rows, tensor 0 of shape (4, 2) has 4");
    tensors_fail((clt_tensor *[]){a, s}, 2, CLT_ERR_SHAPE, "tensor 1 is 0-d");
    tensors_fail((clt_tensor *[]){a, NULL}, 2, CLT_ERR_INVALID_ARGUMENT, "tensor 1 is NULL");
    tensors_fail(NULL, 1, CLT_ERR_INVALID_ARGUMENT, "tensors is NULL");
    tensors_fail(&a, 0, CLT_ERR_INVALID_ARGUMENT, "n 0 is outside 1..8");
    tensors_fail((clt_tensor *[9]){a, a, a, a, a, a, a, a, a}, 9, CLT_ERR_INVALID_ARGUMENT,
                 "n 9 is outside 1..8");
    clt_tensor_release(s), clt_tensor_release(b);
    ck_assert_live_eq(test_live_now(), base);
    clt_tensor_release(a);
}
END_TEST

typedef struct tensors_case {
    clt_tensor *in[2];
} tensors_case;

static bool run_tensors(void *ctx)
{
    tensors_case *c = ctx;
    clt_dataset *d = clt_dataset_tensors(c->in, 2);
    clt_dataset_release(d);
    return d != NULL;
}

START_TEST(test_data_tensors_allocation_failures)
{
    clt_tensor *x = clt_tensor_arange(0, 12, 1, CLT_F32, clt_device_cpu());
    clt_tensor *v = clt_view(x, CLT_SHAPE(3, 4));
    tensors_case c = {{clt_transpose(v, 0, 1), clt_tensor_zeros(CLT_SHAPE(4), CLT_I64,
                                                                 clt_device_cpu())}};
    ck_assert_int_ge(test_fault_sweep(run_tensors, &c, "clt_dataset_tensors", CLT__HOST), 4);
    clt_tensor_release(c.in[1]), clt_tensor_release(c.in[0]);
    clt_tensor_release(v), clt_tensor_release(x);
}
END_TEST

/* ---- CSV dataset ---------------------------------------------------------------------------- */

/* The first row of the digits file: 64 pixels, then the label 0. */
static const double digits_row0[65] = {
    0, 0, 5,  13, 9, 1,  0,  0, 0, 0, 13, 15, 10, 15, 5,  0, 0, 3,  15, 2,  0, 11,
    8, 0, 0,  4,  12, 0, 0,  8, 8, 0, 0,  5,  8,  0,  0,  9, 8, 0,  0,  4,  11, 0,
    1, 12, 7, 0,  0,  2, 14, 5, 10, 12, 0, 0,  0,  0,  6,  13, 10, 0, 0,  0,  0};

START_TEST(test_data_csv_digits)
{
    clt_device_cpu();
    test_live base = test_live_now();
    clt_dataset *d = clt_dataset_csv(CLT_TEST_DIGITS, &(clt_csv_options){.label_column = -1});
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_dataset_length(d), 1797);
    ck_assert_int_eq(clt_dataset_fields(d), 2);
    const clt_field *f = clt_dataset_field(d, 0), *l = clt_dataset_field(d, 1);
    ck_assert(f->dtype == CLT_F32 && f->ndim == 1 && f->shape[0] == 64);
    ck_assert(l->dtype == CLT_I64 && l->ndim == 0);
    clt_tensor *item[2];
    ck_assert_int_eq(clt_dataset_get(d, 0, item), CLT_OK);
    const float *x = clt_tensor_data(item[0]);
    for (int j = 0; j < 64; j++)
        ck_assert_msg(x[j] == (float)digits_row0[j], "pixel %d: %g", j, x[j]);
    ck_assert_int_eq(*(const int64_t *)clt_tensor_data(item[1]), 0);
    clt_tensor_release(item[0]), clt_tensor_release(item[1]);
    ck_assert_int_eq(clt_dataset_get(d, 1796, item), CLT_OK); /* the last row: ...,8 */
    ck_assert_int_eq(*(const int64_t *)clt_tensor_data(item[1]), 8);
    ck_assert(((const float *)clt_tensor_data(item[0]))[2] == 10);
    clt_tensor_release(item[0]), clt_tensor_release(item[1]);
    clt_dataset_release(d);

    /* as (1, 8, 8) images scaled to [0, 1] */
    d = clt_dataset_csv(CLT_TEST_DIGITS, &(clt_csv_options){.label_column = 64, .scale = 1.0 / 16,
                                                             .ndim = 3, .shape = {1, 8, 8}});
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    f = clt_dataset_field(d, 0);
    ck_assert(f->ndim == 3 && f->shape[0] == 1 && f->shape[1] == 8 && f->shape[2] == 8);
    ck_assert_int_eq(clt_dataset_get(d, 0, item), CLT_OK);
    ck_assert_int_eq(clt_tensor_ndim(item[0]), 3);
    ck_assert_int_eq(clt_tensor_size(item[0], 2), 8);
    x = clt_tensor_data(item[0]);
    for (int j = 0; j < 64; j++)
        ck_assert(x[j] == (float)(digits_row0[j] / 16));
    clt_tensor_release(item[0]), clt_tensor_release(item[1]);
    clt_dataset_release(d);
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* Writes text into a new file, its path into path. */
static void csv_file(char *path, size_t size, const char *text)
{
    const char *dir = test_temp_dir();
    test_write_file(dir, "data.csv", text);
    snprintf(path, size, "%s/data.csv", dir);
}

START_TEST(test_data_csv_plain)
{
    char path[256];
    /* CRLF, blank lines, blanks around values, the label in the middle, every number form */
    csv_file(path, sizeof path, "1.5, 2 ,-3,\t0.1\r\n\r\n"
                                "1e2,-4,0x10,-0.25\n"
                                "\n"
                                "inf,7,2.5e-1,3\n");
    clt_device_cpu();
    test_live base = test_live_now();
    clt_dataset *d = clt_dataset_csv(path, &(clt_csv_options){.label_column = 1});
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_dataset_length(d), 3);
    const clt_field *f = clt_dataset_field(d, 0);
    ck_assert(f->dtype == CLT_F32 && f->ndim == 1 && f->shape[0] == 3);
    double v[2][16];
    item_values(d, 0, v);
    ck_assert(v[0][0] == 1.5 && v[0][1] == -3 && v[0][2] == (float)0.1 && v[1][0] == 2);
    item_values(d, 1, v);
    ck_assert(v[0][0] == 100 && v[0][1] == 16 && v[0][2] == -0.25 && v[1][0] == -4);
    item_values(d, 2, v);
    ck_assert(isinf(v[0][0]) && v[0][1] == 0.25 && v[0][2] == 3 && v[1][0] == 7);
    clt_dataset_release(d);
    /* options NULL: the label is column 0 */
    d = clt_dataset_csv(path, NULL);
    ck_assert_msg(d == NULL, "column 0 is not integer in every row");
    ck_assert_error_has(":1: label 1.5 is not an integer");
    csv_file(path, sizeof path, "3,0.5,1\n4,2,2\n");
    d = clt_dataset_csv(path, NULL);
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    item_values(d, 1, v);
    ck_assert(v[0][0] == 2 && v[0][1] == 2 && v[1][0] == 4);
    clt_dataset_release(d);
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* Integer labels are read exactly, to the last of 64 bits (not through a double). */
START_TEST(test_data_csv_label_limits)
{
    char path[256];
    csv_file(path, sizeof path, "9223372036854775807,1\n-9223372036854775808,2\n"
                                "9007199254740993,3\n1e3,4\n");
    clt_device_cpu();
    clt_dataset *d = clt_dataset_csv(path, NULL);
    static const int64_t want[] = {INT64_MAX, INT64_MIN, 9007199254740993, 1000};
    ck_assert_msg(d != NULL, "%s", clt_last_error());
    for (int i = 0; i < 4; i++) {
        clt_tensor *item[CLT_DATA_MAX_FIELDS];
        int64_t label;
        ck_assert_int_eq(clt_dataset_get(d, i, item), CLT_OK);
        ck_assert_int_eq(clt_tensor_copy_to_host(item[1], &label, sizeof label), CLT_OK);
        ck_assert_msg(label == want[i], "row %d: label %lld", i, (long long)label);
        clt_tensor_release(item[0]), clt_tensor_release(item[1]);
    }
    clt_dataset_release(d);
}
END_TEST

/* Values as the library's conversion from f64 gives them. */
static void *converted(const double *v, int64_t n, clt_dtype dtype)
{
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(n), v, CLT_F64, clt_device_cpu());
    clt_tensor *c = clt_tensor_to_dtype(t, dtype);
    void *bytes = test_bytes(c);
    clt_tensor_release(c), clt_tensor_release(t);
    return bytes;
}

START_TEST(test_data_csv_scale_and_dtype)
{
    char path[256];
    const double raw[2][4] = {{0.1, 1.0 / 3, 65519, -7}, {1e-8, 70000, 2, 0.3}};
    csv_file(path, sizeof path, "0.1,0.3333333333333333,65519,-7,1\n"
                                "1e-8,70000,2,0.3,0\n");
    clt_device_cpu();
    test_live base = test_live_now();
    const clt_dtype dtypes[] = {CLT_F64, CLT_F16, CLT_BF16, CLT_F32, CLT_I32};
    const double scales[] = {0, 0.5, -3};
    for (int di = 0; di < 5; di++) {
        for (int si = 0; si < 3; si++) {
            clt_dtype dt = dtypes[di];
            clt_dataset *d = clt_dataset_csv(path, &(clt_csv_options){
                                                       .label_column = -1, .dtype = dt,
                                                       .scale = scales[si], .ndim = 2,
                                                       .shape = {2, 2}});
            ck_assert_msg(d != NULL, "%s", clt_last_error());
            ck_assert_int_eq(clt_dataset_field(d, 0)->dtype, dt);
            for (int64_t i = 0; i < 2; i++) {
                double want[4];
                for (int j = 0; j < 4; j++)
                    want[j] = raw[i][j] * (scales[si] ? scales[si] : 1);
                void *expect = converted(want, 4, dt);
                clt_tensor *item[2];
                ck_assert_int_eq(clt_dataset_get(d, i, item), CLT_OK);
                ck_assert_msg(memcmp(clt_tensor_data(item[0]), expect,
                                     4 * clt_dtype_size(dt)) == 0,
                              "%s, scale %g, item %lld", clt_dtype_name(dt), scales[si],
                              (long long)i);
                ck_assert_int_eq(*(const int64_t *)clt_tensor_data(item[1]), 1 - i);
                free(expect);
                clt_tensor_release(item[0]), clt_tensor_release(item[1]);
            }
            clt_dataset_release(d);
        }
    }
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* A file holding text makes clt_dataset_csv fail with status and a message holding what: the
 * path and then `what`. */
static void csv_fails(const char *text, const clt_csv_options *o, clt_status status,
                      const char *what)
{
    char path[256], expect[512];
    csv_file(path, sizeof path, text);
    ck_assert_ptr_null(clt_dataset_csv(path, o));
    ck_assert_msg(clt_last_status() == status, "%s: %s (%s)", what,
                  clt_status_name(clt_last_status()), clt_last_error());
    snprintf(expect, sizeof expect, "clt_dataset_csv: %s%s", path, what);
    ck_assert_error_has(expect);
}

START_TEST(test_data_csv_bad_files)
{
    /* files with the label last, and the end of the message after "clt_dataset_csv: PATH" */
    static const struct {
        const char *text, *what;
    } bad[] = {
        {"1,2,3\n4,x,5\n", ":2: column 2: 'x' is not a number"},
        {"1,2,3\n\n4,,5\n", ":3: column 2: '' is not a number"},
        {"1,2,3\n4,5,\n", ":2: column 3: '' is not a number"},
        {"1,2,3\n4,5 6,7\n", ":2: column 2: '5 6' is not a number"},
        {"1,2,3\n4,1.5.2,7\n", ":2: column 2: '1.5.2' is not a number"},
        {"1,2,3\n1,2\n", ":2: 2 columns, the first row has 3"},
        {"1,2,3\n1,2,3,4\n", ":2: 4 columns, the first row has 3"},
        {"1,2,3\n1,2,3.5\n", ":2: label 3.5 is not an integer"},
        {"1,2,nan\n", ":1: label nan is not an integer"},
        {"1,2,inf\n", ":1: label inf is not an integer"},
        {"1,2,1e300\n", ":1: label 1e300 is beyond i64"},
        {"1,2,9223372036854775808\n", ":1: label 9223372036854775808 is beyond i64"},
        {"1,2,-9223372036854775809\n", ":1: label -9223372036854775809 is beyond i64"},
        {"", ": no rows"},
        {"\n\r\n\n", ": no rows"},
        {"1\n2\n", ": the first row has 1 column; a label and a feature need 2"},
    };
    const clt_csv_options last = {.label_column = -1};
    clt_device_cpu();
    test_live base = test_live_now();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        csv_fails(bad[i].text, &last, CLT_ERR_INVALID_ARGUMENT, bad[i].what);
    csv_fails("1,2,3\n", &(clt_csv_options){.label_column = 3}, CLT_ERR_INVALID_ARGUMENT,
              ": label_column 3 is out of range for 3 columns");
    csv_fails("1,2,3\n", &(clt_csv_options){.label_column = -4}, CLT_ERR_INVALID_ARGUMENT,
              ": label_column -4 is out of range for 3 columns");
    csv_fails("1,2,3,4\n", &(clt_csv_options){.ndim = 2, .shape = {2, 2}}, CLT_ERR_SHAPE,
              ": shape (2, 2) does not hold the 3 features");
    /* a shape whose product overflows holds no three features */
    csv_fails("1,2,3,4\n",
              &(clt_csv_options){.ndim = 3, .shape = {(int64_t)1 << 62, 4, (int64_t)1 << 62}},
              CLT_ERR_SHAPE,
              ": shape (4611686018427387904, 4, 4611686018427387904) does not hold the 3 features");
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* clt_dataset_csv(path, o) fails with status and a message holding text. */
static void csv_path_fails(const char *path, const clt_csv_options *o, clt_status status,
                           const char *text)
{
    ck_assert_ptr_null(clt_dataset_csv(path, o));
    ck_assert_msg(clt_last_status() == status, "%s: %s (%s)", text,
                  clt_status_name(clt_last_status()), clt_last_error());
    ck_assert_error_has("clt_dataset_csv: ");
    ck_assert_error_has(text);
}

START_TEST(test_data_csv_io_errors)
{
    char path[256], text[512];
    const char *dir = test_temp_dir();
    clt_device_cpu();
    test_live base = test_live_now();
    snprintf(path, sizeof path, "%s/missing.csv", dir);
    snprintf(text, sizeof text, "cannot open %s: No such file or directory", path);
    csv_path_fails(path, NULL, CLT_ERR_IO, text);
    snprintf(text, sizeof text, "cannot open %s: not a regular file", dir);
    csv_path_fails(dir, NULL, CLT_ERR_IO, text);
#ifndef _WIN32 /* no FIFOs on Windows */
    /* a FIFO: refused at once, not read (which would block until a writer came) */
    snprintf(path, sizeof path, "%s/fifo.csv", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    snprintf(text, sizeof text, "cannot open %s: not a regular file", path);
    csv_path_fails(path, NULL, CLT_ERR_IO, text);
#endif
    csv_path_fails(NULL, NULL, CLT_ERR_INVALID_ARGUMENT, "path is NULL");
    /* the first half of the digits file: a gzip stream cut short */
    FILE *in = fopen(CLT_TEST_DIGITS, "rb");
    ck_assert_ptr_nonnull(in);
    static char bytes[1 << 20];
    size_t n = fread(bytes, 1, sizeof bytes, in);
    fclose(in);
    ck_assert(n > 1000 && n < sizeof bytes);
    snprintf(path, sizeof path, "%s/cut.csv.gz", dir);
    FILE *out = fopen(path, "wb");
    ck_assert_ptr_nonnull(out);
    ck_assert_int_eq(fwrite(bytes, 1, n / 2, out), n / 2);
    fclose(out);
    snprintf(text, sizeof text, "cannot read %s: unexpected end of file", path);
    csv_path_fails(path, &(clt_csv_options){.label_column = -1}, CLT_ERR_IO, text);
    /* gzip's magic bytes, then no gzip stream */
    snprintf(path, sizeof path, "%s/bad.csv.gz", dir);
    out = fopen(path, "wb");
    ck_assert_ptr_nonnull(out);
    fputs("\x1f\x8b" "1,2,3\n", out);
    fclose(out);
    snprintf(text, sizeof text, "cannot read %s: ", path);
    csv_path_fails(path, NULL, CLT_ERR_IO, text);
    /* option errors, before the file is read */
    csv_path_fails(path, &(clt_csv_options){.dtype = CLT_DTYPE_COUNT}, CLT_ERR_DTYPE,
                   "dtype 9 is invalid");
    csv_path_fails(path, &(clt_csv_options){.ndim = CLT_MAX_DIMS}, CLT_ERR_SHAPE,
                   "ndim 8 is outside 0..7");
    csv_path_fails(path, &(clt_csv_options){.ndim = 2, .shape = {-8, -8}}, CLT_ERR_SHAPE,
                   "size -8 of dimension 0 is negative");
    ck_assert_live_eq(test_live_now(), base);
}
END_TEST

/* A gzip file written here reads as its plain twin does. */
START_TEST(test_data_csv_gzip)
{
    const char *dir = test_temp_dir();
    const char *text = "1,2,3\n4,5,6\n";
    char gz[256], plain[256];
    snprintf(gz, sizeof gz, "%s/t.csv.gz", dir);
    gzFile f = gzopen(gz, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(gzputs(f, text), (int)strlen(text));
    ck_assert_int_eq(gzclose(f), Z_OK);
    test_write_file(dir, "t.csv", text);
    snprintf(plain, sizeof plain, "%s/t.csv", dir);
    clt_dataset *a = clt_dataset_csv(gz, &(clt_csv_options){.label_column = 0});
    clt_dataset *b = clt_dataset_csv(plain, &(clt_csv_options){.label_column = 0});
    ck_assert_msg(a && b, "%s", clt_last_error());
    for (int64_t i = 0; i < 2; i++) {
        double va[2][16], vb[2][16];
        item_values(a, i, va);
        item_values(b, i, vb);
        ck_assert(va[0][0] == vb[0][0] && va[0][1] == vb[0][1] && va[1][0] == vb[1][0]);
        ck_assert(va[1][0] == (double)(1 + 3 * i) && va[0][1] == (double)(3 + 3 * i));
    }
    clt_dataset_release(a), clt_dataset_release(b);
}
END_TEST

typedef struct csv_case {
    const char *path;
    clt_csv_options options;
} csv_case;

static bool run_csv(void *ctx)
{
    csv_case *c = ctx;
    clt_dataset *d = clt_dataset_csv(c->path, &c->options);
    clt_dataset_release(d);
    return d != NULL;
}

START_TEST(test_data_csv_allocation_failures)
{
    char path[256];
    csv_file(path, sizeof path, "1,2,3\n4,5,6\n");
    csv_case plain = {path, {.label_column = -1, .dtype = CLT_F16}};
    csv_case digits = {CLT_TEST_DIGITS, {.label_column = -1}};
    ck_assert_int_eq(test_fault_sweep(run_csv, &plain, "clt_dataset_csv", CLT__HOST), 5);
    ck_assert_int_ge(test_fault_sweep(run_csv, &digits, "clt_dataset_csv", CLT__HOST), 5);
}
END_TEST

Suite *suite_data(void)
{
    Suite *s = suite_create("data");
    TCase *tc = test_case("data", 300);
    tcase_add_test(tc, test_data_user_dataset);
    tcase_add_test(tc, test_data_new_arguments);
    tcase_add_test(tc, test_data_get_errors);
    tcase_add_test(tc, test_data_get_allocation_failures);
    tcase_add_test(tc, test_data_tensors);
    tcase_add_test(tc, test_data_tensors_requires_grad);
    tcase_add_test(tc, test_data_tensors_errors);
    tcase_add_test(tc, test_data_tensors_allocation_failures);
    tcase_add_test(tc, test_data_csv_digits);
    tcase_add_test(tc, test_data_csv_plain);
    tcase_add_test(tc, test_data_csv_label_limits);
    tcase_add_test(tc, test_data_csv_scale_and_dtype);
    tcase_add_test(tc, test_data_csv_bad_files);
    tcase_add_test(tc, test_data_csv_io_errors);
    tcase_add_test(tc, test_data_csv_gzip);
    tcase_add_test(tc, test_data_csv_allocation_failures);
    suite_add_tcase(s, tc);
    return s;
}
