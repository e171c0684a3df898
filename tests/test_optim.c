/* Optimizer suite: SGD (momentum, dampening, Nesterov, weight decay), Adam and AdamW against
 * references computed here in double on every device; state that follows a model moved to
 * another device; argument errors; allocation failures that change nothing; and the same loss
 * trajectory on cpu and on every OpenCL device. */
#include <math.h>
#include <stdlib.h>

#include "helpers.h"
#include "graph/graph.h"

enum { N = 7, STEPS = 4 };

/* The reference: the update rules of torch.optim in double. kind 0 SGD, 1 Adam, 2 AdamW. */
typedef struct ref {
    int kind;
    double lr, momentum, dampening, wd, beta1, beta2, eps;
    bool nesterov;
    double p[N], m[N], v[N];
} ref;

static void ref_step(ref *r, const double *g0, int t)
{
    for (int i = 0; i < N; i++) {
        double g = g0[i], p = r->p[i];
        if (r->kind == 2)
            p *= 1 - r->lr * r->wd;
        else
            g += r->wd * p;
        if (r->kind == 0) {
            if (r->momentum != 0) {
                r->m[i] = t == 1 ? g : r->momentum * r->m[i] + (1 - r->dampening) * g;
                g = r->nesterov ? g + r->momentum * r->m[i] : r->m[i];
            }
            p -= r->lr * g;
        } else {
            r->m[i] = r->beta1 * r->m[i] + (1 - r->beta1) * g;
            r->v[i] = r->beta2 * r->v[i] + (1 - r->beta2) * g * g;
            double b1 = 1 - pow(r->beta1, t), b2 = 1 - pow(r->beta2, t);
            p -= r->lr / b1 * r->m[i] / (sqrt(r->v[i]) / sqrt(b2) + r->eps);
        }
        r->p[i] = p;
    }
}

/* Runs STEPS steps of opt (over p) and of the reference with the same gradients. */
static void compare(clt_device *dev, clt_dtype dt, ref *r, clt_optimizer *opt, clt_tensor *p,
                    const char *what)
{
    double tol = dt == CLT_F64 ? 1e-12 : 2e-6;
    for (int t = 1; t <= STEPS; t++) {
        double g[N];
        test_noise(g, N, 40 + (unsigned)t, -1, 1);
        clt_tensor *gt = test_tensor(dev, dt, g, CLT_SHAPE(N));
        ck_assert_int_eq(clt_tensor_set_grad(p, gt), CLT_OK);
        clt_tensor_release(gt);
        ck_assert_msg(clt_optim_step(opt) == CLT_OK, "%s: %s", what, clt_last_error());
        ref_step(r, g, t);
        double *got = test_values(p);
        for (int i = 0; i < N; i++)
            ELEMENT_CHECK(fabs(got[i] - r->p[i]) <= tol * fmax(1, fabs(r->p[i])),
                          "%s on %s, step %d, element %d: %.12g, want %.12g", what,
                          clt_device_name(dev), t, i, got[i], r->p[i]);
        free(got);
    }
    ck_assert_int_eq(clt_optim_steps(opt), STEPS);
}

static clt_tensor *parameter(clt_device *dev, clt_dtype dt, ref *r)
{
    test_noise(r->p, N, 3, -2, 2);
    clt_tensor *p = test_tensor(dev, dt, r->p, CLT_SHAPE(N));
    ck_assert_int_eq(clt_tensor_set_requires_grad(p, true), CLT_OK);
    return p;
}

START_TEST(test_optim_rules)
{
    clt_device *dev = test_device(_i);
    clt_dtype dts[2] = {CLT_F32, CLT_F64};
    clt_sgd_options sgds[3] = {clt_sgd_options_default(), clt_sgd_options_default(),
                               clt_sgd_options_default()};
    sgds[0].lr = 0.1;
    sgds[1].lr = 0.05, sgds[1].momentum = 0.9, sgds[1].dampening = 0.1, sgds[1].weight_decay = 0.01;
    sgds[2].lr = 0.05, sgds[2].momentum = 0.8, sgds[2].nesterov = true, sgds[2].weight_decay = 0.02;
    /* the second Adam asks for what zeros once meant "the default" for: beta1 0, eps 0 */
    clt_adam_options adams[2] = {clt_adam_options_default(), clt_adam_options_default()};
    adams[0].lr = 0.01, adams[0].beta1 = 0.8, adams[0].beta2 = 0.99, adams[0].eps = 1e-6;
    adams[0].weight_decay = 0.05;
    adams[1].lr = 0.02, adams[1].beta1 = 0, adams[1].eps = 0;
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = dts[d];
        if (dt == CLT_F64 && !clt_device_get_info(dev)->fp64)
            continue;
        for (int k = 0; k < 3; k++) {
            ref r = {.kind = 0, .lr = sgds[k].lr, .momentum = sgds[k].momentum,
                     .dampening = sgds[k].dampening, .wd = sgds[k].weight_decay,
                     .nesterov = sgds[k].nesterov};
            clt_tensor *p = parameter(dev, dt, &r);
            clt_optimizer *opt = clt_optim_sgd(&p, 1, &sgds[k]);
            ck_assert_msg(opt != NULL, "%s", clt_last_error());
            compare(dev, dt, &r, opt, p, "SGD");
            clt_optim_free(opt);
            clt_tensor_release(p);
        }
        for (int kind = 1; kind <= 4; kind++) {
            const clt_adam_options adam = adams[(kind - 1) / 2];
            ref r = {.kind = 2 - kind % 2, .lr = adam.lr, .beta1 = adam.beta1, .beta2 = adam.beta2,
                     .eps = adam.eps, .wd = adam.weight_decay};
            clt_tensor *p = parameter(dev, dt, &r);
            clt_optimizer *opt = kind % 2 ? clt_optim_adam(&p, 1, &adam) : clt_optim_adamw(&p, 1, &adam);
            ck_assert_msg(opt != NULL, "%s", clt_last_error());
            compare(dev, dt, &r, opt, p, kind % 2 ? "Adam" : "AdamW");
            clt_optim_free(opt);
            clt_tensor_release(p);
        }
    }
}
END_TEST

/* One optimizer over many parameters, which it updates a group at a time (one launch for up to
 * 8 of one device, dtype and step count): 12 parameters, f32 with two f64 among them (where
 * the device has f64), one without elements, and one without a gradient at the first step, so
 * that its step count lags; each against its own reference, for SGD with momentum and Adam. */
START_TEST(test_optim_groups)
{
    enum { P = 12, EMPTY = 9, LATE = 2 };
    clt_device *dev = test_device(_i);
    bool fp64 = clt_device_get_info(dev)->fp64;
    for (int kind = 0; kind < 2; kind++) {
        ref r[P];
        clt_tensor *p[P];
        int steps[P] = {0};
        for (int k = 0; k < P; k++) {
            clt_dtype dt = fp64 && (k == 4 || k == 5) ? CLT_F64 : CLT_F32;
            r[k] = (ref){.kind = kind, .lr = 0.05, .momentum = 0.9, .beta1 = 0.8, .beta2 = 0.99,
                         .eps = 1e-6};
            test_noise(r[k].p, N, 3 + (unsigned)k, -2, 2);
            p[k] = k == EMPTY ? clt_tensor_zeros(CLT_SHAPE(0), dt, dev)
                              : test_tensor(dev, dt, r[k].p, CLT_SHAPE(N));
            ck_assert_int_eq(clt_tensor_set_requires_grad(p[k], true), CLT_OK);
        }
        clt_sgd_options sgd = clt_sgd_options_default();
        sgd.lr = 0.05, sgd.momentum = 0.9;
        clt_adam_options adam = clt_adam_options_default();
        adam.lr = 0.05, adam.beta1 = 0.8, adam.beta2 = 0.99, adam.eps = 1e-6;
        clt_optimizer *opt = kind ? clt_optim_adam(p, P, &adam) : clt_optim_sgd(p, P, &sgd);
        ck_assert_msg(opt != NULL, "%s", clt_last_error());
        for (int t = 1; t <= STEPS; t++) {
            double g[P][N];
            for (int k = 0; k < P; k++) {
                test_noise(g[k], N, 40 + (unsigned)(t + 10 * k), -1, 1);
                clt_tensor *gt = k == EMPTY ? clt_tensor_zeros(CLT_SHAPE(0),
                                                               clt_tensor_dtype(p[k]), dev)
                                            : test_tensor(dev, clt_tensor_dtype(p[k]), g[k],
                                                          CLT_SHAPE(N));
                ck_assert_int_eq(clt_tensor_set_grad(p[k], k == LATE && t == 1 ? NULL : gt),
                                 CLT_OK);
                clt_tensor_release(gt);
            }
            ck_assert_msg(clt_optim_step(opt) == CLT_OK, "%s", clt_last_error());
            for (int k = 0; k < P; k++) {
                if (k == EMPTY || (k == LATE && t == 1))
                    continue;
                ref_step(&r[k], g[k], ++steps[k]);
                double tol = clt_tensor_dtype(p[k]) == CLT_F64 ? 1e-12 : 2e-6;
                double *got = test_values(p[k]);
                for (int i = 0; i < N; i++)
                    ELEMENT_CHECK(fabs(got[i] - r[k].p[i]) <= tol * fmax(1, fabs(r[k].p[i])),
                                  "%s on %s, step %d, parameter %d, element %d: %.12g, want "
                                  "%.12g", kind ? "Adam" : "SGD", clt_device_name(dev), t, k, i,
                                  got[i], r[k].p[i]);
                free(got);
            }
        }
        clt_optim_free(opt);
        for (int k = 0; k < P; k++)
            clt_tensor_release(p[k]);
    }
}
END_TEST

START_TEST(test_optim_arguments)
{
    clt_device *dev = test_device(_i);
    clt_tensor *p = clt_tensor_zeros(CLT_SHAPE(3), CLT_F32, dev);
    clt_tensor *q = clt_tensor_ones(CLT_SHAPE(3), CLT_F32, dev);
    clt_tensor *i = clt_tensor_zeros(CLT_SHAPE(3), CLT_I64, dev);
    clt_tensor_set_requires_grad(q, true);
    clt_tensor *made = clt_mul_scalar(q, 2);
    clt_sgd_options nesterov = test_sgd_lr(0.1, 0);
    nesterov.nesterov = true;
    ck_assert_ptr_null(clt_optim_sgd(&p, 1, &nesterov));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_optim_sgd: Nesterov momentum needs momentum > 0 and dampening 0");
    ck_assert_ptr_null(clt_optim_sgd(&p, 1, TEST_SGD(-1, 0)));
    ck_assert_error_has("clt_optim_sgd: lr -1");
    ck_assert_ptr_null(clt_optim_adam(&i, 1, NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_DTYPE);
    ck_assert_error_has("clt_optim_adam: parameter 0 is i64");
    ck_assert_ptr_null(clt_optim_adamw(&made, 1, NULL));
    ck_assert_error_has("clt_optim_adamw: parameter 0 was made by MulBackward");
    clt_adam_options bad = clt_adamw_options_default();
    bad.beta2 = 1.5;
    ck_assert_ptr_null(clt_optim_adamw(&q, 1, &bad));
    ck_assert_error_has("betas 0.9 and 1.5");
    /* PyTorch's defaults */
    clt_sgd_options sd = clt_sgd_options_default();
    clt_adam_options ad = clt_adam_options_default(), awd = clt_adamw_options_default();
    ck_assert(sd.lr == 1e-3 && sd.momentum == 0 && sd.dampening == 0 && sd.weight_decay == 0 &&
              !sd.nesterov);
    ck_assert(ad.lr == 1e-3 && ad.beta1 == 0.9 && ad.beta2 == 0.999 && ad.eps == 1e-8 &&
              ad.weight_decay == 0);
    ck_assert(awd.lr == 1e-3 && awd.beta1 == 0.9 && awd.beta2 == 0.999 && awd.eps == 1e-8 &&
              awd.weight_decay == 0.01);
    /* options that did not start from the defaults: their zeros would be taken as values */
    ck_assert_ptr_null(clt_optim_adam(&q, 1, &(clt_adam_options){.lr = 0.1}));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_optim_adam: options did not start from clt_adam_options_default()");
    ck_assert_ptr_null(clt_optim_sgd(&q, 1, &(clt_sgd_options){.lr = 0.1}));
    ck_assert_error_has("clt_optim_sgd: options did not start from clt_sgd_options_default()");
    ck_assert_ptr_null(clt_optim_adamw_module(NULL, NULL));
    ck_assert_error_has("clt_optim_adamw: module is NULL");

    /* a parameter without a gradient is skipped; zero_grad clears; lr can change */
    clt_tensor *both[3] = {p, q, q};
    clt_optimizer *opt = clt_optim_sgd(both, 3, TEST_SGD(0.5, 0));
    ck_assert_ptr_nonnull(opt);
    clt_tensor *g = clt_tensor_ones(CLT_SHAPE(3), CLT_F32, dev);
    ck_assert_int_eq(clt_tensor_set_grad(q, g), CLT_OK);
    ck_assert_int_eq(clt_optim_step(opt), CLT_OK); /* q -= 0.5 once, though listed twice */
    double *pv = test_values(p), *qv = test_values(q);
    for (int k = 0; k < 3; k++)
        ck_assert(pv[k] == 0 && qv[k] == 0.5);
    free(pv), free(qv);
    ck_assert_int_eq(clt_optim_set_lr(opt, -1), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_optim_set_lr(opt, 0.25), CLT_OK);
    ck_assert(clt_optim_lr(opt) == 0.25);
    clt_optim_zero_grad(opt);
    ck_assert_ptr_null(clt_tensor_grad(q));
    ck_assert_int_eq(clt_optim_step(opt), CLT_OK); /* nothing to do */
    clt_optim_free(opt);
    clt_optim_free(NULL);
    clt_tensor_release(g), clt_tensor_release(made), clt_tensor_release(i);
    clt_tensor_release(q), clt_tensor_release(p);
}
END_TEST

/* ---- a model trained on a synthetic task -------------------------------------------------------- */

static clt_module *model(void)
{
    return test_mlp(4, 16, 3, clt_nn_relu(), 11);
}

/* Batch b of a fixed synthetic data set: 4 features, the class of the largest of the first
 * three. */
static void batch(clt_device *dev, int b, clt_tensor **x, clt_tensor **t)
{
    double v[16 * 4];
    int64_t c[16];
    test_noise(v, 16 * 4, 100 + (unsigned)b, -1, 1);
    for (int i = 0; i < 16; i++) {
        const double *r = &v[i * 4];
        c[i] = r[0] > r[1] ? (r[0] > r[2] ? 0 : 2) : (r[1] > r[2] ? 1 : 2);
    }
    *x = test_tensor(dev, CLT_F32, v, CLT_SHAPE(16, 4));
    *t = clt_tensor_from_data(CLT_SHAPE(16), c, CLT_I64, dev);
}

/* One epoch of 8 batches: the mean loss. */
static double epoch(clt_module *m, clt_optimizer *opt)
{
    double total = 0;
    clt_device *dev = clt_module_device(m);
    for (int b = 0; b < 8; b++) {
        clt_tensor *x, *t;
        batch(dev, b, &x, &t);
        clt_optim_zero_grad(opt);
        clt_tensor *y = clt_module_forward(m, x);
        clt_tensor *l = clt_cross_entropy(y, t, NULL);
        ck_assert_msg(l != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt_backward(l, NULL, false), CLT_OK);
        ck_assert_msg(clt_optim_step(opt) == CLT_OK, "%s", clt_last_error());
        double *v = test_values(l);
        total += v[0];
        free(v);
        clt_tensor_release(l), clt_tensor_release(y), clt_tensor_release(t), clt_tensor_release(x);
    }
    return total / 8;
}

/* A gradient of another shape than its parameter's (clt_tensor_set_grad and backward refuse to
 * store one; the optimizer checks again) fails the step, which changes nothing, rather than
 * reading past the gradient. */
START_TEST(test_optim_gradient_shape_refused)
{
    clt_device *dev = test_device(_i);
    clt_tensor *w = clt_tensor_full(CLT_SHAPE(64, 64), 2, CLT_F32, dev);
    clt_tensor *g = clt_tensor_ones(CLT_SHAPE(1), CLT_F32, dev);
    clt_tensor_set_requires_grad(w, true);
    for (int kind = 0; kind < 2; kind++) {
        clt_optimizer *opt = kind ? clt_optim_adam(&w, 1, TEST_ADAM(0.1))
                                  : clt_optim_sgd(&w, 1, TEST_SGD(0.1, 0));
        ck_assert_ptr_nonnull(opt);
        clt__grad_state_get("test", w)->grad = clt_tensor_retain(g); /* past the public checks */
        ck_assert_int_eq(clt_optim_step(opt), CLT_ERR_SHAPE);
        ck_assert_error_has("parameter 0 has shape (64, 64), its gradient (1,)");
        ck_assert_int_eq(clt_optim_steps(opt), 0);
        double *v = test_values(w);
        for (int k = 0; k < 64 * 64; k++)
            ck_assert_double_eq(v[k], 2);
        free(v);
        clt_tensor_release(clt__grad_of(w));
        clt__grad_state_of(w)->grad = NULL;
        clt_optim_free(opt);
    }
    clt_tensor_release(g);
    clt_tensor_release(w);
}
END_TEST

START_TEST(test_optim_same_trajectory)
{
    clt_device *dev = test_device(_i);
    clt_module *a = model(), *b = model();
    clt_optimizer *oa = clt_optim_sgd_module(a, TEST_SGD(0.2, 0.9));
    clt_optimizer *ob = clt_optim_sgd_module(b, TEST_SGD(0.2, 0.9));
    ck_assert_int_eq(clt_module_to(b, dev), CLT_OK);
    double first = 0, last = 0;
    for (int e = 0; e < 5; e++) {
        double la = epoch(a, oa), lb = epoch(b, ob);
        ck_assert_msg(fabs(la - lb) <= 1e-4 * fabs(la), "epoch %d: loss %.9g on cpu, %.9g on %s",
                      e, la, lb, clt_device_name(dev));
        if (e == 0)
            first = la;
        last = la;
    }
    ck_assert_msg(last < 0.7 * first, "training does not learn: %g -> %g", first, last);
    clt_optim_free(ob), clt_optim_free(oa);
    clt_module_release(b), clt_module_release(a);
}
END_TEST

/* An optimizer made on cpu keeps training a model moved to dev after two epochs exactly as one
 * whose model stayed on cpu. */
START_TEST(test_optim_state_follows_the_model)
{
    clt_device *dev = test_device(_i);
    clt_module *a = model(), *b = model();
    clt_optimizer *oa = clt_optim_adam_module(a, TEST_ADAM(0.01)), *oa2 = clt_optim_adam_module(b, TEST_ADAM(0.01));
    for (int e = 0; e < 2; e++)
        ck_assert(epoch(a, oa) == epoch(b, oa2));
    ck_assert_int_eq(clt_module_to(b, dev), CLT_OK);
    for (int e = 0; e < 2; e++) {
        double la = epoch(a, oa), lb = epoch(b, oa2);
        ck_assert_msg(fabs(la - lb) <= 1e-4 * fabs(la), "after the move, epoch %d: %.9g on cpu, %.9g on %s",
                      e, la, lb, clt_device_name(dev));
    }
    clt_tensor *w = clt_module_get_parameter(b, "2.weight");
    ck_assert_ptr_eq(clt_tensor_device(w), dev);
    clt_optim_free(oa2), clt_optim_free(oa);
    clt_module_release(b), clt_module_release(a);
}
END_TEST

typedef struct step_case {
    clt_module *m;
    clt_optimizer *opt;
} step_case;

static bool run_step(void *ctx)
{
    step_case *c = ctx;
    return clt_optim_step(c->opt) == CLT_OK;
}

static double weight_sum(clt_module *m)
{
    clt_tensor *s = clt_sum(clt_module_get_parameter(m, "0.weight"), NULL, 0, false);
    double *v = test_values(s), r = v[0];
    free(v);
    clt_tensor_release(s);
    return r;
}

START_TEST(test_optim_allocation_failures)
{
    clt_device *dev = test_device(_i);
    step_case c = {model(), NULL};
    clt_tensor *x, *t;
    c.opt = clt_optim_adam_module(c.m, TEST_ADAM(0.01));
    ck_assert_int_eq(clt_module_to(c.m, dev), CLT_OK);
    batch(dev, 0, &x, &t);
    clt_tensor *y = clt_module_forward(c.m, x), *l = clt_cross_entropy(y, t, NULL);
    ck_assert_int_eq(clt_backward(l, NULL, false), CLT_OK);
    /* the first step makes the state: a failure there leaves every parameter as it was */
    double before = weight_sum(c.m);
    clt__fault_inject(clt_device_get_info(dev)->type == CLT_DEVICE_HOST ? CLT__HOST : CLT__DEVICE, 3);
    ck_assert_int_ne(clt_optim_step(c.opt), CLT_OK);
    clt__fault_inject(CLT__HOST, 0), clt__fault_inject(CLT__DEVICE, 0);
    ck_assert_error_has("clt_optim_step: ");
    ck_assert(weight_sum(c.m) == before);
    ck_assert_int_eq(clt_optim_steps(c.opt), 0);
    test_fault_sweep(run_step, &c, "clt_optim_step", CLT__HOST);
    test_fault_sweep(run_step, &c, "clt_optim_step", CLT__DEVICE);
    clt_tensor_release(l), clt_tensor_release(y), clt_tensor_release(t), clt_tensor_release(x);
    clt_optim_free(c.opt);
    clt_module_release(c.m);
}
END_TEST

/* Each schedule's rates over its first epochs against PyTorch's (the closed forms of
 * torch.optim.lr_scheduler; PyTorch's own recursive forms agree to rounding), read back from
 * the schedule and from the optimizer. */
static void expect_rates(clt_lr_scheduler *s, clt_optimizer *opt, const double *want, int n,
                         const char *what)
{
    ck_assert_msg(s != NULL, "%s: %s", what, clt_last_error());
    for (int e = 0; e < n; e++) {
        if (e)
            ck_assert_int_eq(clt_lr_scheduler_step(s), CLT_OK);
        ck_assert_int_eq(clt_lr_scheduler_epoch(s), e);
        ck_assert_msg(fabs(clt_lr_scheduler_get_last_lr(s) - want[e]) <= 1e-12 &&
                          clt_optim_lr(opt) == clt_lr_scheduler_get_last_lr(s),
                      "%s at epoch %d: %.17g (optimizer %.17g), want %.17g", what, e,
                      clt_lr_scheduler_get_last_lr(s), clt_optim_lr(opt), want[e]);
    }
    clt_lr_scheduler_free(s);
}

START_TEST(test_optim_schedules)
{
    clt_tensor *p = clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, NULL);
    clt_optimizer *opt = clt_optim_sgd(&p, 1, TEST_SGD(1.0, 0));
    expect_rates(clt_lr_step(opt, 2, 0.1), opt, (double[]){1, 1, 0.1, 0.1, 0.01}, 5, "StepLR");
    clt_optim_set_lr(opt, 1);
    expect_rates(clt_lr_exponential(opt, 0.5), opt, (double[]){1, 0.5, 0.25}, 3, "ExponentialLR");
    clt_optim_set_lr(opt, 1);
    expect_rates(clt_lr_cosine(opt, 4, 0.1), opt,
                 (double[]){1, 0.1 + 0.9 * (1 + sqrt(0.5)) / 2, 0.55, 0.1 + 0.9 * (1 - sqrt(0.5)) / 2, 0.1},
                 5, "CosineAnnealingLR");
    clt_optim_set_lr(opt, 2);
    expect_rates(clt_lr_linear(opt, 0.25, 1, 3), opt, (double[]){0.5, 1, 1.5, 2, 2}, 5, "LinearLR");
    /* linear warm-up for 2 epochs, then cosine from the base rate */
    clt_optim_set_lr(opt, 1);
    clt_lr_scheduler *warm = clt_lr_linear(opt, 0.5, 1, 2), *cos = clt_lr_cosine(opt, 2, 0);
    expect_rates(clt_lr_sequential_take(opt, (clt_lr_scheduler *[]){warm, cos}, 2, (int64_t[]){2}),
                 opt, (double[]){0.5, 0.75, 1, 0.5, 0}, 5, "SequentialLR");
    /* bad settings are refused, the rate unchanged; the sequential form frees what it took */
    clt_optim_set_lr(opt, 1);
    ck_assert_ptr_null(clt_lr_step(opt, 0, 0.1));
    ck_assert_error_has("clt_lr_step: step_size 0 must be positive and gamma 0.1 finite");
    ck_assert_ptr_null(clt_lr_cosine(NULL, 4, 0));
    ck_assert_error_has("clt_lr_cosine: optimizer is NULL");
    ck_assert_ptr_null(clt_lr_linear(opt, 0, 1, 5));
    ck_assert_error_has("clt_lr_linear: start_factor 0 must be within (0, 1]");
    ck_assert(clt_optim_lr(opt) == 1);
    clt_lr_scheduler *a = clt_lr_step(opt, 1, 0.5), *b = clt_lr_step(opt, 1, 0.5);
    ck_assert_ptr_null(clt_lr_sequential_take(opt, (clt_lr_scheduler *[]){a, b}, 2, (int64_t[]){0}));
    ck_assert_error_has("clt_lr_sequential_take: needs an optimizer, 2 schedules");
    ck_assert_int_eq(clt_lr_scheduler_step(NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert(isnan(clt_lr_scheduler_get_last_lr(NULL)));
    clt_lr_scheduler_free(NULL);
    clt_optim_free(opt);
    clt_tensor_release(p);
}
END_TEST

/* clip_grad_norm_ on every device: the total 2-, 1- and inf-norm over two gradients, scaling by
 * max_norm / (total + 1e-6) only below 1, parameters without a gradient skipped, the module
 * form, bad arguments refused with the gradients unchanged. */
static clt_tensor *with_grad(clt_device *dev, int ndim, const int64_t *shape, const double *g)
{
    clt_tensor *p = clt_tensor_zeros(ndim, shape, CLT_F32, dev);
    clt_tensor_set_requires_grad(p, true);
    clt_tensor *h = clt_tensor_from_data(ndim, shape, g, CLT_F64, NULL);
    clt_tensor *gd = clt_tensor_to_ex(h, &(clt_to_options){.device = dev, .dtype = CLT_F32});
    ck_assert_int_eq(clt_tensor_set_grad(p, gd), CLT_OK);
    clt_tensor_release(h), clt_tensor_release(gd);
    return p;
}

static void expect_grad(clt_tensor *p, const double *want, int n, const char *what)
{
    clt_tensor *g = clt_tensor_grad(p);
    double *v = test_values(g);
    for (int i = 0; i < n; i++)
        ELEMENT_CHECK(fabs(v[i] - want[i]) <= 1e-6 * fmax(1, fabs(want[i])),
                      "%s: element %d is %.9g, want %.9g", what, i, v[i], want[i]);
    free(v);
    clt_tensor_release(g);
}

START_TEST(test_optim_clip_grad_norm)
{
    clt_device *dev = test_device(_i);
    clt_tensor *ps[3] = {with_grad(dev, CLT_SHAPE(2), (double[]){3, -4}),
                         clt_tensor_zeros(CLT_SHAPE(3), CLT_F32, dev),
                         with_grad(dev, CLT_SHAPE(1, 2), (double[]){0, 12})};
    double total = -1;
    ck_assert_int_eq(clt_clip_grad_norm_(ps, 3, 100, 2, &total), CLT_OK);
    ck_assert_double_eq_tol(total, 13, 1e-5);
    expect_grad(ps[0], (double[]){3, -4}, 2, "under max_norm: unchanged");
    ck_assert_int_eq(clt_clip_grad_norm_(ps, 3, 100, 1, &total), CLT_OK);
    ck_assert_double_eq_tol(total, 19, 1e-5);
    ck_assert_int_eq(clt_clip_grad_norm_(ps, 3, 100, INFINITY, &total), CLT_OK);
    ck_assert_double_eq_tol(total, 12, 1e-6);
    ck_assert_int_eq(clt_clip_grad_norm_(ps, 3, 100, 3, &total), CLT_OK);
    ck_assert_double_eq_tol(total, cbrt(27 + 64 + 1728), 1e-4);
    ck_assert_int_eq(clt_clip_grad_norm_(ps, 3, 6.5, 2, &total), CLT_OK);
    double c = 6.5 / (13 + 1e-6);
    expect_grad(ps[0], (double[]){3 * c, -4 * c}, 2, "clipped to 6.5, first");
    expect_grad(ps[2], (double[]){0, 12 * c}, 2, "clipped to 6.5, second");
    ck_assert_ptr_null(clt_tensor_grad(ps[1]));
    /* the largest |g| to 1 */
    ck_assert_int_eq(clt_clip_grad_norm_(ps, 3, 1, INFINITY, &total), CLT_OK);
    expect_grad(ps[2], (double[]){0, 1}, 2, "inf-norm clipped to 1");
    /* refused, nothing changed */
    ck_assert_int_eq(clt_clip_grad_norm_(ps, 3, -1, 2, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_clip_grad_norm_: needs 3 parameters (not NULL), max_norm -1 >= 0");
    ck_assert_int_eq(clt_clip_grad_norm_(ps, 3, 1, 0, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_clip_grad_norm_((clt_tensor *[]){ps[0], NULL}, 2, 1, 2, NULL),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_clip_grad_norm_: parameter 1 is NULL");
    expect_grad(ps[2], (double[]){0, 1}, 2, "after refusals");
    ck_assert_int_eq(clt_clip_grad_norm_(NULL, 0, 1, 2, &total), CLT_OK);
    ck_assert(total == 0);
    /* the module form: every parameter of a Linear */
    clt_module *m = clt_nn_linear(2, 1, true);
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    clt_tensor *gw = clt_tensor_full(CLT_SHAPE(1, 2), 2, CLT_F32, dev), *gb = clt_tensor_full(CLT_SHAPE(1), 1, CLT_F32, dev);
    ck_assert_int_eq(clt_tensor_set_grad(clt_module_get_parameter(m, "weight"), gw), CLT_OK);
    ck_assert_int_eq(clt_tensor_set_grad(clt_module_get_parameter(m, "bias"), gb), CLT_OK);
    ck_assert_int_eq(clt_module_clip_grad_norm_(m, 1.5, 2, &total), CLT_OK);
    ck_assert_double_eq_tol(total, 3, 1e-6);
    expect_grad(clt_module_get_parameter(m, "bias"), (double[]){1.5 / (3 + 1e-6)}, 1, "module bias");
    ck_assert_int_eq(clt_module_clip_grad_norm_(NULL, 1, 2, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_module_clip_grad_norm_: module is NULL");
    clt_tensor_release(gw), clt_tensor_release(gb), clt_module_release(m);
    for (int i = 0; i < 3; i++)
        clt_tensor_release(ps[i]);
}
END_TEST

/* Allocation failures in clip_grad_norm_: every one leaves the gradients as they were. Each
 * run starts from the same gradients (norm 5.48 above max_norm 1, so every run scales). */
typedef struct clip_case {
    clt_tensor *ps[2];
    double before[4];
} clip_case;

static void clip_grads(clip_case *c, double out[4])
{
    for (int i = 0; i < 2; i++) {
        clt_tensor *g = clt_tensor_grad(c->ps[i]);
        double *v = test_values(g);
        out[2 * i] = v[0], out[2 * i + 1] = v[1];
        free(v);
        clt_tensor_release(g);
    }
}

static void clip_snapshot(void *ctx)
{
    clip_case *c = ctx;
    static const double start[4] = {3, -4, 1, 2};
    for (int i = 0; i < 2; i++) {
        clt_tensor *h = clt_tensor_from_data(CLT_SHAPE(2), start + 2 * i, CLT_F64, NULL);
        clt_tensor *g = clt_tensor_to_ex(h, &(clt_to_options){.device = clt_tensor_device(c->ps[i]),
                                                               .dtype = CLT_F32});
        ck_assert_int_eq(clt_tensor_set_grad(c->ps[i], g), CLT_OK);
        clt_tensor_release(h), clt_tensor_release(g);
    }
    clip_grads(c, c->before);
}

static void clip_unchanged(void *ctx)
{
    clip_case *c = ctx;
    double now[4];
    clip_grads(c, now);
    for (int i = 0; i < 4; i++)
        ELEMENT_CHECK(now[i] == c->before[i], "gradient element %d changed by a failed clip", i);
}

static bool clip_run(void *ctx)
{
    clip_case *c = ctx;
    return clt_clip_grad_norm_(c->ps, 2, 1, 2, NULL) == CLT_OK;
}

START_TEST(test_optim_clip_allocation_failures)
{
    clt_device *dev = test_device(_i);
    clip_case c = {.ps = {with_grad(dev, CLT_SHAPE(2), (double[]){3, -4}),
                          with_grad(dev, CLT_SHAPE(2), (double[]){1, 2})}};
    clt__alloc_kind kind = clt_device_get_info(dev)->type == CLT_DEVICE_HOST ? CLT__HOST : CLT__DEVICE;
    ck_assert_int_ge(test_fault_sweep_checked(clip_run, clip_snapshot, clip_unchanged, &c,
                                              "clt_clip_grad_norm_", kind), 1);
    clt_tensor_release(c.ps[0]), clt_tensor_release(c.ps[1]);
}
END_TEST

Suite *suite_optim(void)
{
    Suite *s = suite_create("optim");
    TCase *tc = test_case("optim", 900);
    ADD_DEVICE_TEST(tc, test_optim_rules);
    ADD_DEVICE_TEST(tc, test_optim_groups);
    ADD_DEVICE_TEST(tc, test_optim_arguments);
    ADD_DEVICE_TEST(tc, test_optim_gradient_shape_refused);
    ADD_DEVICE_TEST(tc, test_optim_same_trajectory);
    ADD_DEVICE_TEST(tc, test_optim_state_follows_the_model);
    ADD_DEVICE_TEST(tc, test_optim_allocation_failures);
    tcase_add_test(tc, test_optim_schedules);
    ADD_DEVICE_TEST(tc, test_optim_clip_grad_norm);
    ADD_DEVICE_TEST(tc, test_optim_clip_allocation_failures);
    suite_add_tcase(s, tc);
    return s;
}
