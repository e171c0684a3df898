/* DataParallel suite, over two OpenCL devices: two sub-devices of PoCL (CLT_SUBDEVICES=2) and
 * the two platforms PoCL and Oclgrind. Forward equals the single-device forward; training
 * follows the single-device loss trajectory; replicas are refreshed only after the parameters
 * change; a batch smaller than the number of devices works; bad uses give clear errors. */
#include <math.h>
#include <stdlib.h>

#include "helpers.h"

/* The two device set-ups, chosen by the loop index. Returns false when this run has no OpenCL
 * (valgrind's cpu-only runs). */
static bool two_devices(int setup, clt_device **devs)
{
    if (!test_use_vendors(true, setup == 1))
        return false;
    if (setup == 0)
        setenv("CLT_SUBDEVICES", "2", 1);
    ck_assert_int_ge(clt_device_count(), 2);
    devs[0] = clt_device_get("gpu:0");
    devs[1] = clt_device_get("gpu:1");
    return true;
}

#define ADD_SETUP_TEST(tc, fn) tcase_add_loop_test(tc, fn, 0, 2)

static clt_tensor *batch(clt_device *dev, int rows, unsigned seed)
{
    double *v = malloc((size_t)rows * 6 * sizeof *v);
    test_noise(v, rows * 6, seed, -1, 1);
    clt_tensor *t = test_tensor(dev, CLT_F32, v, CLT_SHAPE(rows, 6));
    free(v);
    return t;
}

static void assert_close(clt_tensor *a, clt_tensor *b, double tol, const char *what)
{
    ck_assert_msg(a && b, "%s: %s", what, clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(a), clt_tensor_numel(b));
    double *x = test_values(a), *y = test_values(b);
    for (int64_t i = 0; i < clt_tensor_numel(a); i++)
        ELEMENT_CHECK(fabs(x[i] - y[i]) <= tol * fmax(1, fabs(y[i])),
                      "%s: element %lld: %.9g, want %.9g", what, (long long)i, x[i], y[i]);
    free(x), free(y);
}

START_TEST(test_parallel_forward)
{
    clt_device *devs[2];
    if (!two_devices(_i, devs))
        return;
    clt_module *m = test_mlp(6, 8, 3, clt_nn_tanh(), 4), *ref = clt_module_clone_to(m, clt_device_cpu());
    ck_assert_int_eq(clt_module_to(m, devs[0]), CLT_OK);
    clt_module *dp = clt_nn_data_parallel(m, devs, 2, clt_device_cpu());
    ck_assert_msg(dp != NULL, "%s", clt_last_error());
    ck_assert_ptr_eq(clt_data_parallel_get_module(dp), m);
    ck_assert_str_eq(clt_module_type_name(dp), "DataParallel");
    ck_assert_int_eq(clt_module_parameter_count(dp), clt_module_parameter_count(m));
    for (int rows = 1; rows <= 7; rows += 6) { /* 1 row: fewer rows than devices */
        clt_tensor *x = batch(clt_device_cpu(), rows, 9), *xd = clt_tensor_to(x, devs[0]);
        clt_tensor *y = clt_module_forward(dp, xd), *want = clt_module_forward(ref, x);
        ck_assert_ptr_eq(clt_tensor_device(y), clt_device_cpu());
        ck_assert_int_eq(clt_tensor_size(y, 0), rows);
        assert_close(y, want, 1e-5, "forward");
        clt_tensor_release(want), clt_tensor_release(y), clt_tensor_release(xd), clt_tensor_release(x);
    }
    clt_module_release(dp), clt_module_release(ref), clt_module_release(m);
}
END_TEST

static double train_epoch(clt_module *m, clt_optimizer *opt, clt_device *dev)
{
    double total = 0;
    for (int b = 0; b < 4; b++) {
        int64_t t[9];
        for (int i = 0; i < 9; i++)
            t[i] = (b * 9 + i) % 3;
        clt_tensor *x = batch(dev, 9, 20 + (unsigned)b);
        clt_tensor *y = clt_tensor_from_data(CLT_SHAPE(9), t, CLT_I64, clt_device_cpu());
        clt_tensor *out = clt_module_forward(m, x);
        ck_assert_msg(out != NULL, "%s", clt_last_error());
        clt_tensor *loss = clt_cross_entropy(out, y, NULL);
        clt_optim_zero_grad(opt);
        ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_OK);
        ck_assert_int_eq(clt_optim_step(opt), CLT_OK);
        double v;
        ck_assert_int_eq(clt_tensor_item(loss, &v), CLT_OK);
        total += v;
        clt_tensor_release(loss), clt_tensor_release(out), clt_tensor_release(y), clt_tensor_release(x);
    }
    return total / 4;
}

START_TEST(test_parallel_training)
{
    clt_device *devs[2];
    if (!two_devices(_i, devs))
        return;
    clt_module *single = test_mlp(6, 8, 3, clt_nn_relu(), 5), *m = test_mlp(6, 8, 3, clt_nn_relu(), 5);
    ck_assert_int_eq(clt_module_to(m, devs[0]), CLT_OK);
    clt_module *dp = clt_nn_data_parallel(m, devs, 2, clt_device_cpu());
    clt_sgd_options o = test_sgd_lr(0.3, 0.5);
    clt_optimizer *os = clt_optim_sgd_module(single, &o), *od = clt_optim_sgd_module(dp, &o);
    double first = 0, last = 0;
    for (int e = 0; e < 5; e++) {
        double ls = train_epoch(single, os, clt_device_cpu()), ld = train_epoch(dp, od, devs[0]);
        ck_assert_msg(fabs(ls - ld) <= 1e-4 * fabs(ls), "epoch %d: %.9g on one device, %.9g on two",
                      e, ls, ld);
        first = e ? first : ls;
        last = ls;
    }
    ck_assert_msg(last < first, "no learning: %g -> %g", first, last);
    /* the gradients went home: every parameter of the wrapped module has one, on devs[0] */
    clt_tensor *w = clt_module_get_parameter(m, "0.weight"), *g = clt_tensor_grad(w);
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_eq(clt_tensor_device(g), devs[0]);
    clt_tensor_release(g);
    clt_optim_free(od), clt_optim_free(os);
    clt_module_release(dp), clt_module_release(m), clt_module_release(single);
}
END_TEST

START_TEST(test_parallel_replicas_persist)
{
    clt_device *devs[2];
    if (!two_devices(_i, devs))
        return;
    clt_module *m = test_mlp(6, 8, 3, clt_nn_tanh(), 6), *ref = clt_module_clone_to(m, clt_device_cpu());
    ck_assert_int_eq(clt_module_to(m, devs[0]), CLT_OK);
    clt_module *dp = clt_nn_data_parallel(m, devs, 2, NULL);
    clt_tensor *x = batch(devs[0], 6, 3), *xh = clt_tensor_to(x, clt_device_cpu());
    long made[3];
    for (int k = 0; k < 3; k++) { /* the first call makes the replica, the others reuse it */
        long before = clt__allocation_attempts(CLT__DEVICE);
        clt_tensor *y = clt_module_forward(dp, x);
        ck_assert_ptr_eq(clt_tensor_device(y), devs[0]);
        made[k] = clt__allocation_attempts(CLT__DEVICE) - before;
        clt_tensor_release(y);
    }
    ck_assert_int_gt(made[0], made[1]);
    ck_assert_int_eq(made[1], made[2]);
    /* a change of the parameters reaches the replica before the next forward */
    clt_tensor *w = clt_module_get_parameter(m, "2.weight"), *wr = clt_module_get_parameter(ref, "2.weight");
    CLT_NO_GRAD {
        ck_assert_int_eq(clt_fill_(w, 0.25), CLT_OK);
        ck_assert_int_eq(clt_fill_(wr, 0.25), CLT_OK);
    }
    clt_tensor *y = clt_module_forward(dp, x), *want = clt_module_forward(ref, xh);
    assert_close(y, want, 1e-5, "after an update");
    clt_tensor_release(want), clt_tensor_release(y), clt_tensor_release(xh), clt_tensor_release(x);
    clt_module_release(dp), clt_module_release(ref), clt_module_release(m);
}
END_TEST

START_TEST(test_parallel_errors)
{
    clt_device *devs[2];
    if (!two_devices(_i, devs))
        return;
    clt_module *m = test_mlp(6, 8, 3, clt_nn_tanh(), 7);
    clt_device *twice[2] = {devs[0], devs[0]};
    ck_assert_ptr_null(clt_nn_data_parallel(m, twice, 2, NULL));
    ck_assert_error_has("clt_nn_data_parallel: gpu:0 is listed twice (devices 0 and 1)");
    ck_assert_ptr_null(clt_nn_data_parallel(NULL, devs, 2, NULL));
    ck_assert_error_has("clt_nn_data_parallel: the module is NULL");
    /* a negative count is refused, with a device list or without one (every GPU) */
    ck_assert_ptr_null(clt_nn_data_parallel(m, NULL, -1, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_nn_data_parallel: -1 devices: 1 .. 64 are possible");
    ck_assert_ptr_null(clt_nn_data_parallel(m, devs, -2, NULL));
    ck_assert_error_has("clt_nn_data_parallel: -2 devices");
    clt_module *dp = clt_nn_data_parallel(m, devs, 2, NULL);
    clt_tensor *x = batch(devs[0], 4, 1), *empty = clt_tensor_zeros(CLT_SHAPE(0, 6), CLT_F32, devs[0]);
    ck_assert_ptr_null(clt_module_forward(dp, x)); /* the module is still on cpu */
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DEVICE_MISMATCH);
    ck_assert_error_has("the wrapped module (Sequential) is on cpu; DataParallel runs it on its "
                        "first device, gpu:0");
    ck_assert_int_eq(clt_module_to(dp, devs[0]), CLT_OK); /* moves the wrapped module */
    ck_assert_ptr_eq(clt_module_device(m), devs[0]);
    ck_assert_ptr_null(clt_module_forward(dp, empty));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_module_forward: the batch has no rows to split");
    int n = 0;
    ck_assert_ptr_eq(clt_data_parallel_devices(dp, &n)[1], devs[1]);
    ck_assert_int_eq(n, 2);
    ck_assert_ptr_null(clt_data_parallel_get_module(m));
    clt_tensor_release(empty), clt_tensor_release(x);
    clt_module_release(dp), clt_module_release(m);
}
END_TEST

Suite *suite_parallel(void)
{
    Suite *s = suite_create("parallel");
    TCase *tc = test_case("parallel", 900);
    ADD_SETUP_TEST(tc, test_parallel_forward);
    ADD_SETUP_TEST(tc, test_parallel_training);
    ADD_SETUP_TEST(tc, test_parallel_replicas_persist);
    ADD_SETUP_TEST(tc, test_parallel_errors);
    suite_add_tcase(s, tc);
    return s;
}
