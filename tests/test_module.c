/* Module suite: registration and dotted names, in-place moves that keep every handle, clones
 * that are independent, forward parity with the host, all-or-nothing moves under allocation
 * failures, and a 100M-parameter model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"

/* A user-defined model: Linear(6, 4) -> ReLU -> Linear(4, 3), with a pointer field to a child. */
typedef struct model {
    clt_module base;
    clt_module *seq;
    int calls; /* a plain field, copied by clones */
} model;

static clt_tensor *model_forward(clt_module *self, clt_tensor *x)
{
    ((model *)self)->calls++;
    return clt_module_forward(((model *)self)->seq, x);
}

static const clt_module_type model_type = {"Model", sizeof(model), model_forward, NULL, NULL};

static model *model_new(void)
{
    model *m = (model *)clt_module_new(&model_type);
    clt_module *parts[3] = {clt_nn_linear(6, 4, true), clt_nn_relu(), clt_nn_linear(4, 3, true)};
    clt_module *seq = clt_nn_sequential(parts, 3);
    ck_assert_ptr_nonnull(seq);
    ck_assert_int_eq(clt_module_register_module(&m->base, "seq", seq), CLT_OK);
    m->seq = seq;
    for (int i = 0; i < 3; i++)
        clt_module_release(parts[i]);
    clt_module_release(seq);
    return m;
}

typedef struct names {
    char list[8][64];
    clt_tensor *tensors[8];
    int n;
} names;

static int collect(const char *name, clt_tensor *t, void *user)
{
    names *n = user;
    snprintf(n->list[n->n], sizeof n->list[0], "%s", name);
    n->tensors[n->n++] = t;
    return 0;
}

START_TEST(test_module_names)
{
    clt_manual_seed(1);
    model *m = model_new();
    names n = {0};
    ck_assert_int_eq(clt_module_foreach_parameter(&m->base, collect, &n), 0);
    ck_assert_int_eq(n.n, 4);
    ck_assert_str_eq(n.list[0], "seq.0.weight");
    ck_assert_str_eq(n.list[1], "seq.0.bias");
    ck_assert_str_eq(n.list[3], "seq.2.bias");
    ck_assert_int_eq(clt_module_parameter_count(&m->base), 6 * 4 + 4 + 4 * 3 + 3);
    ck_assert_ptr_eq(clt_module_get_parameter(&m->base, "seq.2.bias"), n.tensors[3]);
    ck_assert_str_eq(clt_module_type_name(clt_module_get_child(&m->base, "seq.1")), "ReLU");
    ck_assert_ptr_null(clt_module_get_parameter(&m->base, "seq.5.weight"));
    ck_assert_error_has("clt_module_get_parameter: Model has no parameter named \"seq.5.weight\"");
    ck_assert_int_eq(clt_module_register_module(&m->base, "seq", m->seq), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("Model already has a member named \"seq\"");
    ck_assert_int_eq(clt_module_register_parameter(&m->base, "a.b", n.tensors[0]), CLT_ERR_INVALID_ARGUMENT);
    /* a tensor registered twice is counted and visited once */
    ck_assert_int_eq(clt_module_register_parameter(&m->base, "tied", n.tensors[0]), CLT_OK);
    ck_assert_int_eq(clt_module_parameter_count(&m->base), 6 * 4 + 4 + 4 * 3 + 3);
    clt_module_train(&m->base, false);
    ck_assert(!clt_module_is_training(clt_module_get_child(&m->base, "seq.2")));
    clt_module_release(&m->base);
}
END_TEST

/* Handles stay the same objects; values survive cpu -> device -> cpu bit for bit. */
START_TEST(test_module_to_in_place)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    clt_manual_seed(2);
    model *m = model_new();
    names before = {0}, after = {0};
    clt_module_foreach_parameter(&m->base, collect, &before);
    void *bytes[4];
    for (int i = 0; i < 4; i++)
        bytes[i] = test_bytes(before.tensors[i]);
    ck_assert_int_eq(clt_module_to(&m->base, dev), CLT_OK);
    clt_module_foreach_parameter(&m->base, collect, &after);
    for (int i = 0; i < 4; i++) {
        ck_assert_ptr_eq(after.tensors[i], before.tensors[i]);
        ck_assert_ptr_eq(clt_tensor_device(before.tensors[i]), dev);
    }
    ck_assert_ptr_eq(clt_module_device(&m->base), dev);
    /* already there: nothing is allocated */
    long made = clt__allocation_attempts(CLT__DEVICE) + clt__allocation_attempts(CLT__HOST);
    ck_assert_int_eq(clt_module_to(&m->base, dev), CLT_OK);
    ck_assert_int_eq(made, clt__allocation_attempts(CLT__DEVICE) + clt__allocation_attempts(CLT__HOST) - 2);
    ck_assert_int_eq(clt_module_to(&m->base, cpu), CLT_OK);
    for (int i = 0; i < 4; i++) {
        void *now = test_bytes(before.tensors[i]);
        ck_assert_mem_eq(now, bytes[i], (size_t)clt_tensor_numel(before.tensors[i]) * 4);
        free(now);
        free(bytes[i]);
    }
    if (clt_device_get_info(dev)->fp64) {
        ck_assert_int_eq(clt_module_to_dtype(&m->base, CLT_F64), CLT_OK);
        ck_assert_int_eq(clt_tensor_dtype(before.tensors[0]), CLT_F64);
        ck_assert_int_eq(clt_module_to_dtype(&m->base, CLT_F32), CLT_OK);
    }
    ck_assert_int_eq(clt_module_to_dtype(&m->base, CLT_I32), CLT_ERR_DTYPE);
    clt_module_release(&m->base);
}
END_TEST

START_TEST(test_module_clone_and_forward)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    clt_manual_seed(3);
    model *m = model_new();
    m->calls = 7;
    clt_module *c = clt_module_clone_to(&m->base, dev);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_ne(c, &m->base);
    model *mc = (model *)c;
    ck_assert_int_eq(mc->calls, 7);
    ck_assert_ptr_eq(mc->seq, clt_module_get_child(c, "seq")); /* redirected to the clone's own */
    ck_assert_ptr_ne(mc->seq, m->seq);
    ck_assert_ptr_eq(clt_module_device(c), dev);
    ck_assert_ptr_eq(clt_module_device(&m->base), cpu);

    clt_tensor *x = clt_tensor_randn(CLT_SHAPE(5, 6), CLT_F32, cpu), *xd = clt_tensor_to(x, dev);
    clt_tensor *want = clt_module_forward(&m->base, x), *got = clt_module_forward(c, xd);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(got);
    float *a = test_bytes(want), *b = test_bytes(got);
    for (int i = 0; i < 15; i++)
        ck_assert_msg(fabsf(a[i] - b[i]) <= 1e-5f * fmaxf(1.0f, fabsf(a[i])), "output %d: %g vs %g", i, b[i], a[i]);
    free(a), free(b);
    if (dev != cpu) {
        ck_assert_ptr_null(clt_module_forward(c, x));
        ck_assert_int_eq(clt_last_status(), CLT_ERR_DEVICE_MISMATCH);
        ck_assert_error_has("clt_module_forward: the input is on cpu, the module (Model) on");
    }
    /* independent: changing the clone leaves the original */
    clt_tensor *w = clt_module_get_parameter(c, "seq.0.weight");
    ck_assert_int_eq(clt_fill_(w, 0), CLT_OK);
    clt_tensor *s = clt_sum(clt_module_get_parameter(&m->base, "seq.0.weight"), NULL, 0, false);
    float total;
    clt_tensor_copy_to_host(s, &total, sizeof total);
    ck_assert(total != 0);
    clt_tensor_release(s), clt_tensor_release(got), clt_tensor_release(want);
    clt_tensor_release(xd), clt_tensor_release(x);
    clt_module_release(c);
    clt_module_release(&m->base);
}
END_TEST

/* Every allocation of a move failing in turn: the model stays wholly where it was. */
START_TEST(test_module_to_atomic)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    if (dev == cpu)
        return;
    clt_manual_seed(4);
    model *m = model_new();
    names p = {0};
    clt_module_foreach_parameter(&m->base, collect, &p);
    void *bytes[4];
    for (int i = 0; i < 4; i++)
        bytes[i] = test_bytes(p.tensors[i]);
    ck_assert_int_eq(clt_module_to(&m->base, dev), CLT_OK); /* warm-up: kernels built */
    ck_assert_int_eq(clt_module_to(&m->base, cpu), CLT_OK);
    for (int kind = 0; kind < 2; kind++) {
        test_live base = test_live_now();
        int n;
        for (n = 1; n < 100; n++) {
            clt__fault_inject((clt__alloc_kind)kind, n);
            clt_status st = clt_module_to(&m->base, dev);
            clt__fault_inject((clt__alloc_kind)kind, 0);
            if (st == CLT_OK)
                break;
            ck_assert_error_has("clt_module_to: ");
            for (int i = 0; i < 4; i++) {
                ck_assert_ptr_eq(clt_tensor_device(p.tensors[i]), cpu);
                void *now = test_bytes(p.tensors[i]);
                ck_assert_mem_eq(now, bytes[i], (size_t)clt_tensor_numel(p.tensors[i]) * 4);
                free(now);
            }
            test_sync_all();
            ck_assert_live_eq(test_live_now(), base);
        }
        ck_assert_int_gt(n, 1);
        ck_assert_int_lt(n, 100);
        ck_assert_ptr_eq(clt_module_device(&m->base), dev);
        ck_assert_int_eq(clt_module_to(&m->base, cpu), CLT_OK);
    }
    for (int i = 0; i < 4; i++)
        free(bytes[i]);
    clt_module_release(&m->base);
}
END_TEST

/* A 100M-parameter model (400 MB of f32) moves and comes back intact. */
START_TEST(test_module_100m)
{
    clt_device *dev = test_device(_i);
    if (_i == 0)
        return;
    clt_manual_seed(5);
    clt_module *big = clt_nn_linear(10000, 10000, false);
    ck_assert_ptr_nonnull(big);
    ck_assert_int_eq(clt_module_parameter_count(big), 100000000);
    clt_tensor *w = clt_module_get_parameter(big, "weight");
    clt_tensor *s0 = clt_sum(w, NULL, 0, false);
    ck_assert_int_eq(clt_module_to(big, dev), CLT_OK);
    ck_assert_ptr_eq(clt_module_get_parameter(big, "weight"), w);
    ck_assert_int_eq(clt_module_to(big, clt_device_cpu()), CLT_OK);
    clt_tensor *s1 = clt_sum(w, NULL, 0, false);
    float a, b;
    clt_tensor_copy_to_host(s0, &a, sizeof a);
    clt_tensor_copy_to_host(s1, &b, sizeof b);
    ck_assert(a == b);
    clt_tensor_release(s1), clt_tensor_release(s0);
    clt_module_release(big);
}
END_TEST

Suite *suite_module(void)
{
    Suite *s = suite_create("module");
    TCase *tc = tcase_create("module");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, NULL, test_teardown);
    tcase_add_test(tc, test_module_names);
    ADD_DEVICE_TEST(tc, test_module_to_in_place);
    ADD_DEVICE_TEST(tc, test_module_clone_and_forward);
    ADD_DEVICE_TEST(tc, test_module_to_atomic);
    ADD_DEVICE_TEST(tc, test_module_100m);
    suite_add_tcase(s, tc);
    return s;
}
