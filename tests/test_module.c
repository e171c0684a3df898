/* Module suite: registration and dotted names, in-place moves that keep every handle, clones
 * that are independent, forward parity with the host, all-or-nothing moves under allocation
 * failures, cycles refused, a 100M-parameter model, the PReLU layer, and forwards of several
 * inputs and outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"
#include "nn/module_internal.h"

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

static const clt_module_type model_type = {.name = "Model",
                                           .size = sizeof(model),
                                           .forward = model_forward};

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

/* Registration refuses any cycle, however deep (every walk over the modules would recurse
 * forever, and the cycle would never be freed); a child shared by two parents is no cycle. The
 * refused call changes nothing: counts, walks and release work after it and leak nothing. */
START_TEST(test_module_cycles_refused)
{
    test_live before = test_live_now();
    model *a = model_new();
    clt_module *b = clt_nn_sequential(NULL, 0), *c = clt_nn_sequential(NULL, 0);
    int64_t count = clt_module_parameter_count(&a->base);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(clt_module_register_module(&a->base, "self", &a->base), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_module_register_module: \"self\" (Model) is or contains the module "
                        "(Model) it would join: modules cannot form a cycle");
    ck_assert_int_eq(clt_module_register_module(b, "a", &a->base), CLT_OK);
    ck_assert_int_eq(clt_module_register_module(&a->base, "b", b), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_module_register_module(c, "b", b), CLT_OK);
    /* a -> seq, b -> a, c -> b: seq -> c would close a loop four modules long */
    ck_assert_int_eq(clt_module_register_module(a->seq, "c", c), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("\"c\" (Sequential) is or contains the module (Sequential)");
    /* the same child under two parents (a DAG) is allowed, and counted once */
    ck_assert_int_eq(clt_module_register_module(c, "seq_too", a->seq), CLT_OK);
    ck_assert_int_eq(clt_module_parameter_count(c), count);
    ck_assert_int_eq(clt_module_parameter_count(&a->base), count);
    names n = {0};
    ck_assert_int_eq(clt_module_foreach_parameter(b, collect, &n), 0);
    ck_assert_int_eq(n.n, 4);
    ck_assert_str_eq(n.list[0], "a.seq.0.weight");
    if (test_device_total > 1)
        ck_assert_int_eq(clt_module_to(c, test_device(1)), CLT_OK);
    clt_module *copy = clt_module_clone_to(c, clt_device_cpu());
    ck_assert_ptr_nonnull(copy);
    ck_assert_int_eq(clt_module_parameter_count(copy), count);
    clt_module_release(copy);
    clt_module_release(c);
    clt_module_release(b);
    clt_module_release(&a->base);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Registration checks devices against the tensors already held, wherever they are: a module of
 * activations alone takes a tensor on any device, and a child whose only tensors are buffers is
 * checked like any other. */
START_TEST(test_module_register_devices)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    clt_module *acts[2] = {clt_nn_relu(), clt_nn_tanh()};
    clt_module *seq = clt_nn_sequential(acts, 2);
    clt_tensor *w = clt_tensor_ones(CLT_SHAPE(3), CLT_F32, dev);
    clt_tensor *b = clt_tensor_zeros(CLT_SHAPE(3), CLT_F32, cpu);
    clt_module *holder = clt_nn_sequential(NULL, 0), *bufs = clt_nn_sequential(NULL, 0);
    ck_assert_ptr_nonnull(seq);
    ck_assert_ptr_nonnull(holder);
    ck_assert_ptr_nonnull(bufs);
    ck_assert_ptr_eq(clt_module_device(seq), cpu); /* no tensor: reported as cpu */
    ck_assert_int_eq(clt_module_register_parameter(seq, "scale", w), CLT_OK);
    ck_assert_ptr_eq(clt_module_device(seq), dev);

    ck_assert_int_eq(clt_module_register_buffer(bufs, "stat", w), CLT_OK); /* buffers only */
    ck_assert_int_eq(clt_module_register_parameter(holder, "b", b), CLT_OK);
    ck_assert_int_eq(clt_module_register_module(holder, "bufs", bufs),
                     dev == cpu ? CLT_OK : CLT_ERR_DEVICE_MISMATCH);
    if (dev != cpu) {
        char text[128];
        snprintf(text, sizeof text, "\"bufs\" is on %s, the module (Sequential) on cpu",
                 clt_device_name(dev));
        ck_assert_error_has(text);
    }
    for (int k = 0; k < 2; k++)
        clt_module_release(acts[k]);
    clt_module_release(bufs);
    clt_module_release(holder);
    clt_module_release(seq);
    clt_tensor_release(b);
    clt_tensor_release(w);
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
        ELEMENT_CHECK(fabsf(a[i] - b[i]) <= 1e-5f * fmaxf(1.0f, fabsf(a[i])),
                      "output %d: %g vs %g", i, b[i], a[i]);
    free(a), free(b);
    if (dev != cpu) {
        ck_assert_ptr_null(clt_module_forward(c, x));
        ck_assert_int_eq(clt_last_status(), CLT_ERR_DEVICE_MISMATCH);
        ck_assert_error_has("clt_module_forward: the input is on cpu, the module (Model) on");
    }
    /* independent: changing the clone leaves the original */
    clt_tensor *w = clt_module_get_parameter(c, "seq.0.weight");
    ck_assert(clt_tensor_requires_grad(w) && clt_tensor_is_leaf(w));
    ck_assert_int_eq(clt_fill_(w, 0), CLT_ERR_INVALID_ARGUMENT); /* a parameter, recorded */
    CLT_NO_GRAD ck_assert_int_eq(clt_fill_(w, 0), CLT_OK);
    ck_assert(clt_grad_is_enabled());
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

/* The tensor's values as doubles on the host (the test frees them). */
static double *values_f64(clt_tensor *t)
{
    clt_to_options o = {.device = clt_device_cpu(), .dtype = CLT_F64, .copy = true};
    clt_tensor *h = clt_tensor_to_ex(t, &o);
    ck_assert_ptr_nonnull(h);
    double *v = test_bytes(h);
    clt_tensor_release(h);
    return v;
}

/* Asserts that a and b have the same shape and values within 1e-5 relative. */
static void assert_close(clt_tensor *a, clt_tensor *b, const char *what)
{
    test_assert_close(b, a, 1e-5, what);
}

/* Runs m on cpu and its clone c on dev with the same input; the outputs must agree. */
static void assert_forward_parity(clt_module *m, clt_module *c, clt_device *dev, clt_tensor *x, const char *what)
{
    clt_tensor *xd = clt_tensor_to(x, dev);
    ck_assert_ptr_nonnull(xd);
    clt_tensor *want = clt_module_forward(m, x), *got = clt_module_forward(c, xd);
    assert_close(want, got, what);
    clt_tensor_release(got), clt_tensor_release(want), clt_tensor_release(xd);
}

/* Builds a layer after clt_manual_seed(seed) (the result of make), clones it to dev and checks
 * forward parity on a standard normal input of the given shape; releases everything. */
static void check_layer(clt_device *dev, uint64_t seed, clt_module *(*make)(void), int ndim, const int64_t *shape)
{
    clt_manual_seed(seed);
    clt_module *m = make();
    ck_assert_ptr_nonnull(m);
    clt_module *c = clt_module_clone_to(m, dev);
    ck_assert_ptr_nonnull(c);
    if (clt_module_parameter_count(m) > 0) /* a module without tensors reports cpu */
        ck_assert_ptr_eq(clt_module_device(c), dev);
    clt_tensor *x = clt_tensor_randn(ndim, shape, CLT_F32, clt_device_cpu());
    ck_assert_ptr_nonnull(x);
    assert_forward_parity(m, c, dev, x, clt_module_type_name(m));
    clt_tensor_release(x);
    clt_module_release(c);
    clt_module_release(m);
}

static clt_module *make_linear(void) { return clt_nn_linear(6, 4, true); }
static clt_module *make_softmax(void) { return clt_nn_softmax(1); }
static clt_module *make_conv_grouped(void)
{
    return clt_nn_conv2d(4, 6, 3, 2, &(clt_conv2d_options){.stride = {1, 2}, .padding = {1, 1}, .groups = 2}, true);
}
static clt_module *make_conv_plain(void) { return clt_nn_conv2d(3, 2, 3, 3, NULL, false); }
static clt_module *make_max_pool(void)
{
    return clt_nn_max_pool2d(&(clt_pool2d_options){.kernel = {2, 3}, .stride = {2, 2}, .padding = {1, 1}});
}
static clt_module *make_avg_pool(void)
{
    return clt_nn_avg_pool2d(&(clt_pool2d_options){.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
}
static clt_module *make_layer_norm(void) { return clt_nn_layer_norm(2, (const int64_t[]){4, 5}, 1e-5); }

static int64_t read_i64(clt_tensor *t)
{
    int64_t v = -1;
    ck_assert_int_eq(clt_tensor_copy_to_host(t, &v, sizeof v), CLT_OK);
    return v;
}

/* Every layer gives the host's output on the device: built from the same seed on cpu, cloned to
 * the device, run on the same input. Also names, buffers and constructor errors. */
START_TEST(test_module_layers_match_host)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();

    check_layer(dev, 11, make_linear, CLT_SHAPE(3, 6));
    check_layer(dev, 12, clt_nn_relu, CLT_SHAPE(3, 5));
    check_layer(dev, 13, clt_nn_sigmoid, CLT_SHAPE(3, 5));
    check_layer(dev, 14, clt_nn_tanh, CLT_SHAPE(3, 5));
    check_layer(dev, 15, clt_nn_gelu, CLT_SHAPE(3, 5));
    check_layer(dev, 16, make_softmax, CLT_SHAPE(3, 5));
    check_layer(dev, 17, clt_nn_flatten, CLT_SHAPE(2, 3, 4));
    check_layer(dev, 18, make_conv_grouped, CLT_SHAPE(2, 4, 5, 6));
    check_layer(dev, 19, make_conv_plain, CLT_SHAPE(1, 3, 5, 5));
    check_layer(dev, 20, make_max_pool, CLT_SHAPE(2, 3, 6, 7));
    check_layer(dev, 21, make_avg_pool, CLT_SHAPE(2, 3, 6, 7));
    check_layer(dev, 22, make_layer_norm, CLT_SHAPE(3, 4, 5));

    /* Conv2d's parameters */
    clt_manual_seed(23);
    clt_module *conv = make_conv_grouped();
    names n = {0};
    ck_assert_int_eq(clt_module_foreach_parameter(conv, collect, &n), 0);
    ck_assert_int_eq(n.n, 2);
    ck_assert_str_eq(n.list[0], "weight");
    ck_assert_str_eq(n.list[1], "bias");
    ck_assert_int_eq(clt_tensor_ndim(n.tensors[0]), 4);
    ck_assert_int_eq(clt_tensor_size(n.tensors[0], 1), 2);
    ck_assert_int_eq(clt_module_parameter_count(conv), 6 * 2 * 3 * 2 + 6);
    ck_assert_str_eq(clt_module_type_name(conv), "Conv2d");
    clt_module_release(conv);
    clt_module *plain = make_conv_plain();
    ck_assert_int_eq(clt_module_parameter_count(plain), 2 * 3 * 3 * 3);
    ck_assert_ptr_null(clt_module_get_parameter(plain, "bias"));
    clt_module_release(plain);

    /* Embedding with i64 indices */
    clt_manual_seed(24);
    clt_module *emb = clt_nn_embedding(10, 4);
    ck_assert_ptr_nonnull(emb);
    clt_module *embc = clt_module_clone_to(emb, dev);
    ck_assert_ptr_nonnull(embc);
    int64_t idx[6] = {0, 9, 3, 3, 7, 1};
    clt_tensor *ix = clt_tensor_from_data(CLT_SHAPE(2, 3), idx, CLT_I64, cpu);
    assert_forward_parity(emb, embc, dev, ix, "Embedding");
    clt_tensor_release(ix);
    clt_module_release(embc), clt_module_release(emb);

    /* BatchNorm for (N, C, L) and (N, C, H, W): training (running statistics updated alike on
     * both) then evaluation */
    for (int two_d = 0; two_d < 2; two_d++) {
        clt_manual_seed(25);
        clt_module *bn = clt_nn_batch_norm(3, 1e-5, 0.1);
        ck_assert_ptr_nonnull(bn);
        names p = {0}, b = {0};
        ck_assert_int_eq(clt_module_foreach_parameter(bn, collect, &p), 0);
        ck_assert_int_eq(p.n, 2);
        ck_assert_str_eq(p.list[0], "weight");
        ck_assert_str_eq(p.list[1], "bias");
        ck_assert_int_eq(clt_module_foreach_buffer(bn, collect, &b), 0);
        ck_assert_int_eq(b.n, 3);
        ck_assert_str_eq(b.list[0], "running_mean");
        ck_assert_str_eq(b.list[1], "running_var");
        ck_assert_str_eq(b.list[2], "num_batches_tracked");
        ck_assert_int_eq(clt_tensor_ndim(b.tensors[2]), 0);
        ck_assert_int_eq(clt_tensor_dtype(b.tensors[2]), CLT_I64);
        clt_module *bnc = clt_module_clone_to(bn, dev);
        ck_assert_ptr_nonnull(bnc);
        clt_tensor *x = two_d ? clt_tensor_randn(CLT_SHAPE(2, 3, 4, 4), CLT_F32, cpu)
                              : clt_tensor_randn(CLT_SHAPE(4, 3, 5), CLT_F32, cpu);
        ck_assert_ptr_nonnull(x);
        assert_forward_parity(bn, bnc, dev, x, "BatchNorm (training)");
        clt_tensor *rm = clt_module_get_buffer(bn, "running_mean"), *rmc = clt_module_get_buffer(bnc, "running_mean");
        assert_close(rm, rmc, "running_mean");
        assert_close(clt_module_get_buffer(bn, "running_var"), clt_module_get_buffer(bnc, "running_var"),
                     "running_var");
        double *mean = values_f64(rmc);
        ck_assert_msg(mean[0] != 0 || mean[1] != 0 || mean[2] != 0, "running_mean stayed zero");
        free(mean);
        ck_assert_int_eq(read_i64(clt_module_get_buffer(bn, "num_batches_tracked")), 1);
        ck_assert_int_eq(read_i64(clt_module_get_buffer(bnc, "num_batches_tracked")), 1);
        clt_module_train(bn, false);
        clt_module_train(bnc, false);
        assert_forward_parity(bn, bnc, dev, x, "BatchNorm (evaluation)");
        ck_assert_int_eq(read_i64(clt_module_get_buffer(bnc, "num_batches_tracked")), 1);
        clt_tensor_release(x);
        clt_module_release(bnc), clt_module_release(bn);
    }

    /* constructor errors */
    ck_assert_ptr_null(clt_nn_conv2d(3, 4, 3, 3, &(clt_conv2d_options){.groups = 2}, true));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_nn_conv2d: in_channels 3 and out_channels 4 must be divisible by groups 2");
    ck_assert_ptr_null(clt_nn_max_pool2d(NULL));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_nn_max_pool2d: options");
    ck_assert_ptr_null(clt_nn_avg_pool2d(&(clt_pool2d_options){.kernel = {0, 2}}));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_nn_avg_pool2d: kernel 0x2 must be positive");
    ck_assert_ptr_null(clt_nn_batch_norm(0, 1e-5, 0.1));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_nn_batch_norm: num_features 0 must be positive");
    ck_assert_ptr_null(clt_nn_layer_norm(2, (const int64_t[]){4, 0}, 1e-5));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_nn_layer_norm: normalized_shape[1] = 0 must be positive");
    ck_assert_ptr_null(clt_nn_embedding(10, -1));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_nn_embedding: num_embeddings 10 and embedding_dim -1 must be positive");
}
END_TEST

/* One forward of net on x (and, recording, a backward of sum(out * w)) with the Sequential's
 * fusion on or off: the output, and each parameter's gradient into grads (taken). */
static clt_tensor *fused_run(clt_module *net, clt_tensor *x, bool fuse, bool record,
                             clt_tensor **grads)
{
    names p = {0};
    clt__sequential_fuse = fuse;
    ck_assert_int_eq(clt_module_foreach_parameter(net, collect, &p), 0);
    for (int i = 0; i < p.n; i++)
        clt_tensor_set_grad(p.tensors[i], NULL);
    bool previous = clt_grad_set_enabled(record);
    clt_tensor *out = clt_module_forward(net, x);
    clt_grad_set_enabled(previous);
    clt__sequential_fuse = 1;
    ck_assert_msg(out != NULL, "%s", clt_last_error());
    if (record) {
        clt_manual_seed(77); /* the same weights for both runs */
        clt_tensor *w = clt_tensor_randn(clt_tensor_ndim(out), clt_tensor_shape(out), CLT_F32,
                                         clt_tensor_device(out));
        clt_tensor *prod = clt_mul(out, w), *loss = clt_sum(prod, NULL, 0, false);
        ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_OK);
        for (int i = 0; i < p.n; i++)
            grads[i] = clt_tensor_grad(p.tensors[i]); /* a reference of its own */
        clt_tensor_release(loss), clt_tensor_release(prod), clt_tensor_release(w);
    }
    return out;
}

/* A Sequential runs Linear and Conv2d with the ReLU after them fused into the product's
 * epilogue: the same outputs and gradients as each module by itself, recording and not, on
 * every device; the ReLU's zeros are there, and a ReLU after another layer still runs. */
START_TEST(test_module_fused_activation)
{
    clt_device *dev = test_device(_i);
    clt_conv2d_options same = clt_conv2d_options_default();
    same.padding[0] = same.padding[1] = 1;
    clt_manual_seed(41);
    clt_module *mlp = CLT_SEQUENTIAL(clt_nn_linear(6, 5, true), clt_nn_relu(),
                                     clt_nn_linear(5, 4, false), clt_nn_relu(),
                                     clt_nn_linear(4, 3, true), clt_nn_tanh(), clt_nn_relu());
    clt_module *cnn = CLT_SEQUENTIAL(clt_nn_conv2d(2, 3, 3, 3, &same, true), clt_nn_relu(),
                                     clt_nn_conv2d(3, 4, 3, 3, NULL, false), clt_nn_relu(),
                                     clt_nn_flatten());
    ck_assert_int_eq(clt_module_to(mlp, dev), CLT_OK);
    ck_assert_int_eq(clt_module_to(cnn, dev), CLT_OK);
    clt_tensor *x[2] = {clt_tensor_randn(CLT_SHAPE(7, 6), CLT_F32, dev),
                        clt_tensor_randn(CLT_SHAPE(3, 2, 6, 5), CLT_F32, dev)};
    clt_module *nets[2] = {mlp, cnn};
    for (int k = 0; k < 2; k++)
        for (int record = 0; record < 2; record++) {
            clt_tensor *gf[8] = {0}, *gu[8] = {0};
            clt_tensor *fused = fused_run(nets[k], x[k], true, record, gf);
            clt_tensor *plain = fused_run(nets[k], x[k], false, record, gu);
            assert_close(plain, fused, k ? "Conv2d + ReLU" : "Linear + ReLU");
            double *v = values_f64(fused);
            int64_t zeros = 0, positive = 0;
            for (int64_t i = 0; i < clt_tensor_numel(fused); i++)
                zeros += v[i] == 0, positive += v[i] > 0;
            ck_assert_msg(zeros > 0 && positive > 0 && zeros + positive == clt_tensor_numel(fused),
                          "%lld zeros, %lld positive of %lld", (long long)zeros,
                          (long long)positive, (long long)clt_tensor_numel(fused));
            free(v);
            for (int i = 0; record && i < 8 && (gf[i] || gu[i]); i++)
                assert_close(gu[i], gf[i], "a parameter's gradient");
            for (int i = 0; i < 8; i++)
                clt_tensor_release(gf[i]), clt_tensor_release(gu[i]);
            clt_tensor_release(plain), clt_tensor_release(fused);
        }
    clt_tensor_release(x[0]), clt_tensor_release(x[1]);
    clt_module_release(cnn), clt_module_release(mlp);
}
END_TEST

/* A frozen parameter registered under two names stays one tensor in a clone, and stays frozen
 * (the second name's registration in the clone does not make it require grad again). */
START_TEST(test_module_clone_shared_frozen)
{
    clt_device *dev = test_device(_i);
    clt_module *m = clt_nn_linear(2, 2, true);
    clt_tensor *w = clt_module_get_parameter(m, "weight");
    ck_assert_int_eq(clt_module_register_parameter(m, "tied", w), CLT_OK);
    ck_assert_int_eq(clt_tensor_set_requires_grad(w, false), CLT_OK);
    clt_module *c = clt_module_clone_to(m, dev);
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    clt_tensor *cw = clt_module_get_parameter(c, "weight"), *ct = clt_module_get_parameter(c, "tied");
    ck_assert_ptr_eq(cw, ct);
    ck_assert_ptr_ne(cw, w);
    ck_assert(!clt_tensor_requires_grad(cw));
    ck_assert(clt_tensor_requires_grad(clt_module_get_parameter(c, "bias")));
    clt_module_release(c);
    clt_module_release(m);
}
END_TEST

/* The ownership rule's _take forms leak nothing on success or failure (NULL members included,
 * naming the error their creation left), and clt_tensor_to_ replaces the handle. */
START_TEST(test_module_take_forms)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    clt_module *net = CLT_SEQUENTIAL(clt_nn_linear(4, 3, true), clt_nn_relu(),
                                     clt_nn_linear(3, 2, false));
    ck_assert_msg(net != NULL, "%s", clt_last_error());
    ck_assert_str_eq(clt_module_type_name(clt_module_get_child(net, "2")), "Linear");
    ck_assert_int_eq(clt_module_parameter_count(net), 4 * 3 + 3 + 3 * 2);
    clt_module_release(net);
    ck_assert_live_eq(test_live_now(), before);
    /* a layer that could not be made: nothing leaks and the error says which and why */
    net = CLT_SEQUENTIAL(clt_nn_linear(4, 3, true), clt_nn_linear(-1, 2, true), clt_nn_relu());
    ck_assert_ptr_null(net);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_nn_sequential_take: module 1 is NULL (the last error: clt_nn_linear: ");
    ck_assert_live_eq(test_live_now(), before);

    clt_module *m = clt_module_new(&(clt_module_type){.name = "Mine", .size = sizeof(clt_module)});
    ck_assert_int_eq(clt_module_register_module_take(m, "fc", clt_nn_linear(2, 2, true)), CLT_OK);
    ck_assert_int_eq(clt_module_register_parameter_take(
                         m, "scale", clt_tensor_ones(CLT_SHAPE(2), CLT_F32, NULL)), CLT_OK);
    ck_assert_int_eq(clt_module_register_buffer_take(
                         m, "steps", clt_tensor_zeros(CLT_SHAPE(1), CLT_I64, NULL)), CLT_OK);
    /* a taken name: refused, and the object passed is released all the same */
    ck_assert_int_eq(clt_module_register_module_take(m, "fc", clt_nn_relu()),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_module_register_parameter_take(m, "w", NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_module_register_parameter_take: w is NULL (the last error: ");
    ck_assert_int_eq(clt_module_parameter_count(m), 2 * 2 + 2 + 2);
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    clt_module_release(m);
    ck_assert_live_eq(test_live_now(), before);

    /* x = x.to(dev) */
    clt_tensor *x = clt_tensor_arange(0, 4, 1, CLT_F32, NULL), *same = x;
    ck_assert_int_eq(clt_tensor_to_(&x, dev), CLT_OK);
    ck_assert_ptr_eq(clt_tensor_device(x), dev);
    ck_assert(dev == clt_device_cpu() ? x == same : x != same);
    double *v = test_values(x);
    ck_assert(v[3] == 3);
    free(v);
    ck_assert_int_eq(clt_tensor_to_(&x, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_eq(clt_tensor_device(x), dev);
    ck_assert_int_eq(clt_tensor_to_(NULL, dev), CLT_ERR_INVALID_ARGUMENT);
    clt_tensor_release(x);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* A failure inside nested modules names the module's path and type, as PyTorch's traceback
 * would lead to it; Conv2d takes unbatched (C, H, W) input. */
START_TEST(test_module_errors_name_the_layer)
{
    clt_device *dev = test_device(_i);
    clt_module *inner = CLT_SEQUENTIAL(clt_nn_linear(3, 2, true), clt_nn_linear(5, 1, true));
    clt_module *net = CLT_SEQUENTIAL(clt_nn_linear(4, 3, true), clt_nn_relu(), inner);
    ck_assert_int_eq(clt_module_to(net, dev), CLT_OK);
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(2, 4), CLT_F32, dev);
    ck_assert_ptr_null(clt_module_forward(net, x));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_module_forward: 2.1 (Linear): ");
    /* a second failure starts afresh */
    clt_tensor *y = clt_tensor_ones(CLT_SHAPE(2, 7), CLT_F32, dev);
    ck_assert_ptr_null(clt_module_forward(net, y));
    ck_assert_error_has("clt_module_forward: 0 (Linear): ");
    /* a failure of the top module itself has no path */
    ck_assert_ptr_null(clt_module_forward(clt_module_get_child(net, "0"), y));
    ck_assert_msg(strncmp(clt_last_error(), "clt_module_forward: shapes", 26) == 0, "%s",
                  clt_last_error());
    clt_tensor_release(y), clt_tensor_release(x), clt_module_release(net);

    clt_manual_seed(3);
    clt_conv2d_options o = clt_conv2d_options_default();
    o.padding[0] = o.padding[1] = 1;
    clt_module *conv = clt_nn_conv2d(2, 3, 3, 3, &o, true);
    ck_assert_int_eq(clt_module_to(conv, dev), CLT_OK);
    clt_tensor *img = clt_tensor_randn(CLT_SHAPE(2, 5, 4), CLT_F32, clt_device_cpu());
    clt_tensor *on = clt_tensor_to(img, dev), *batch = clt_unsqueeze(on, 0);
    clt_tensor *one = clt_module_forward(conv, on), *many = clt_module_forward(conv, batch);
    ck_assert_msg(one && many, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_ndim(one), 3);
    ck_assert_int_eq(clt_tensor_size(one, 0), 3);
    clt_tensor *flat = clt_squeeze(many, 0);
    test_assert_same_bytes(one, flat);
    clt_pool2d_options po = clt_pool2d_options_default(2, 2);
    clt_tensor *idx = NULL, *pooled = clt_max_pool2d(one, &po, &idx);
    ck_assert_msg(pooled && idx, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_ndim(pooled), 3);
    ck_assert_int_eq(clt_tensor_ndim(idx), 3);
    ck_assert_int_eq(clt_tensor_size(pooled, 1), 2);
    clt_tensor *two = clt_tensor_ones(CLT_SHAPE(5, 4), CLT_F32, dev);
    ck_assert_ptr_null(clt_module_forward(conv, two));
    ck_assert_error_has("clt_module_forward: ");
    clt_tensor *all[] = {two, idx, pooled, flat, many, one, batch, on, img};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
    clt_module_release(conv);
}
END_TEST

/* A custom type with settings over two lines and children, rendered as nn.Module.__repr__ does. */
static int two_lines_repr(const clt_module *self, char *buf, size_t size)
{
    (void)self;
    return snprintf(buf, size, "first=1,\nsecond=2");
}
static const clt_module_type two_lines_type = {.name = "TwoLines", .size = sizeof(clt_module),
                                               .extra_repr = two_lines_repr};

/* print(model) as PyTorch 1.13 prints the same layers (BatchNorm named as this library's type):
 * settings inline, children indented two spaces a level, multi-line settings indented too. */
START_TEST(test_module_format)
{
    clt_conv2d_options co = clt_conv2d_options_default();
    co.stride[0] = co.stride[1] = 2, co.padding[0] = co.padding[1] = 3;
    clt_conv2d_options grouped = clt_conv2d_options_default();
    grouped.padding[0] = grouped.padding[1] = 2, grouped.dilation[0] = grouped.dilation[1] = 2;
    grouped.groups = 2;
    clt_pool2d_options po = clt_pool2d_options_default(3, 3);
    po.stride[0] = po.stride[1] = 2, po.padding[0] = po.padding[1] = 1;
    clt_pool2d_options avg = clt_pool2d_options_default(2, 3);
    clt_conv_transpose2d_options ct = clt_conv_transpose2d_options_default();
    ct.stride[0] = ct.stride[1] = 2, ct.padding[0] = ct.padding[1] = 1;
    ct.output_padding[0] = ct.output_padding[1] = 1;
    clt_module *m =
        CLT_SEQUENTIAL(clt_nn_conv2d(3, 64, 7, 7, &co, false), clt_nn_batch_norm(64, 1e-5, 0.1),
                       clt_nn_relu(), clt_nn_max_pool2d(&po),
                       CLT_SEQUENTIAL(clt_nn_linear(4, 2, true), clt_nn_gelu_tanh(),
                                      clt_nn_linear(2, 1, false)),
                       clt_nn_adaptive_avg_pool2d(1, 1), clt_nn_flatten(), clt_nn_dropout(0.5),
                       clt_nn_layer_norm(1, (int64_t[]){768}, 1e-5), clt_nn_embedding(10, 3),
                       clt_nn_softmax(1), clt_nn_conv2d(4, 8, 3, 3, &grouped, true),
                       clt_nn_avg_pool2d(&avg), clt_nn_gelu(),
                       clt_nn_layer_norm(2, (int64_t[]){2, 3}, 1e-6),
                       clt_nn_batch_norm(5, 0.001, 0.01),
                       clt_nn_conv_transpose2d(16, 8, 4, 4, &ct, true),
                       clt_nn_upsample(2, CLT_INTERPOLATE_BILINEAR, true), clt_nn_relu6());
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    char *text = clt_module_format(m);
    ck_assert_str_eq(
        text,
        "Sequential(\n"
        "  (0): Conv2d(3, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)\n"
        "  (1): BatchNorm(64, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
        "  (2): ReLU()\n"
        "  (3): MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)\n"
        "  (4): Sequential(\n"
        "    (0): Linear(in_features=4, out_features=2, bias=True)\n"
        "    (1): GELU(approximate='tanh')\n"
        "    (2): Linear(in_features=2, out_features=1, bias=False)\n"
        "  )\n"
        "  (5): AdaptiveAvgPool2d(output_size=(1, 1))\n"
        "  (6): Flatten(start_dim=1, end_dim=-1)\n"
        "  (7): Dropout(p=0.5, inplace=False)\n"
        "  (8): LayerNorm((768,), eps=1e-05, elementwise_affine=True)\n"
        "  (9): Embedding(10, 3)\n"
        "  (10): Softmax(dim=1)\n"
        "  (11): Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=(2, 2), dilation=(2, 2), "
        "groups=2)\n"
        "  (12): AvgPool2d(kernel_size=(2, 3), stride=(2, 3), padding=0)\n"
        "  (13): GELU(approximate='none')\n"
        "  (14): LayerNorm((2, 3), eps=1e-06, elementwise_affine=True)\n"
        "  (15): BatchNorm(5, eps=0.001, momentum=0.01, affine=True, track_running_stats=True)\n"
        "  (16): ConvTranspose2d(16, 8, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1), "
        "output_padding=(1, 1))\n"
        "  (17): Upsample(scale_factor=2.0, mode='bilinear')\n"
        "  (18): ReLU6()\n"
        ")");
    clt_free(text);
    /* settings over several lines, then children; a leaf's own lines indented under it */
    clt_module *outer = clt_module_new(&two_lines_type);
    ck_assert_int_eq(clt_module_register_module_take(outer, "inner", clt_module_new(&two_lines_type)), CLT_OK);
    ck_assert_int_eq(clt_module_register_module_take(outer, "seq", CLT_SEQUENTIAL(clt_nn_tanh())), CLT_OK);
    text = clt_module_format(outer);
    ck_assert_str_eq(text, "TwoLines(\n"
                           "  first=1,\n"
                           "  second=2\n"
                           "  (inner): TwoLines(\n"
                           "    first=1,\n"
                           "    second=2\n"
                           "  )\n"
                           "  (seq): Sequential(\n"
                           "    (0): Tanh()\n"
                           "  )\n"
                           ")");
    clt_free(text);
    ck_assert_ptr_null(clt_module_format(NULL));
    ck_assert_error_has("clt_module_format: module is NULL");
    ck_assert_int_eq(clt_module_print(NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_module_print: module is NULL");
    clt_module_release(outer), clt_module_release(m);
}
END_TEST

/* Every options struct's _default() holds PyTorch's defaults. */
START_TEST(test_module_options_defaults)
{
    clt_conv2d_options c = clt_conv2d_options_default();
    ck_assert(c.stride[0] == 1 && c.stride[1] == 1 && c.padding[0] == 0 && c.padding[1] == 0 &&
              c.dilation[0] == 1 && c.dilation[1] == 1 && c.groups == 1);
    clt_pool2d_options p = clt_pool2d_options_default(3, 2);
    ck_assert(p.kernel[0] == 3 && p.kernel[1] == 2 && p.stride[0] == 3 && p.stride[1] == 2 &&
              p.padding[0] == 0 && p.dilation[0] == 1 && !p.exclude_padding);
    clt_loader_options l = clt_loader_options_default();
    ck_assert(l.batch_size == 1 && !l.shuffle && l.seed == 0 && !l.drop_last && !l.device &&
              l.prefetch == 2 && l.num_replicas == 1 && l.rank == 0);
    clt_csv_options v = clt_csv_options_default();
    ck_assert(v.label_column == 0 && v.dtype == CLT_F32 && v.scale == 1 && v.ndim == 0);
    clt_loss_options s = clt_loss_options_default();
    ck_assert(s.reduction == CLT_REDUCTION_MEAN && s.ignore_index == -100 &&
              s.label_smoothing == 0 && !s.weight);
}
END_TEST

/* ---- PReLU ---------------------------------------------------------------------------------- */

/* nn.PReLU(3, 0.1): its parameter, print and state dict; its forward on the device against the
 * host, and its slopes' gradient (x summed where x <= 0, per channel) after sum(y).backward(). */
START_TEST(test_module_prelu_layer)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    clt_module *m = clt_nn_prelu(3, 0.1), *one = clt_nn_prelu(1, 0.25);
    ck_assert_msg(m && one, "%s", clt_last_error());
    ck_assert_str_eq(clt_module_type_name(m), "PReLU");
    ck_assert_int_eq(clt_module_parameter_count(m), 3);
    char *text = clt_module_format(m), *text1 = clt_module_format(one);
    ck_assert_str_eq(text, "PReLU(num_parameters=3)");
    ck_assert_str_eq(text1, "PReLU(num_parameters=1)");
    clt_free(text), clt_free(text1);
    clt_state_dict sd = {0};
    ck_assert_int_eq(clt_module_state_dict(m, &sd), CLT_OK);
    ck_assert_int_eq(sd.count, 1);
    ck_assert_str_eq(sd.tensors[0].name, "weight");
    test_assert_values(clt_tensor_retain(sd.tensors[0].tensor), (double[]){0.1, 0.1, 0.1}, 3,
                       1e-7, "PReLU's weight");
    clt_state_dict_clear(&sd);
    clt_tensor *w = clt_module_get_parameter(m, "weight");
    ck_assert(clt_tensor_requires_grad(w));
    ck_assert_int_eq(clt_tensor_dtype(w), CLT_F32);

    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    double *xv, want[24], grad[3] = {0};
    clt_tensor *x = test_noisy(dev, CLT_F32, 80, &xv, CLT_SHAPE(2, 3, 2, 2));
    for (int i = 0; i < 24; i++) {
        int c = (i / 4) % 3;
        want[i] = xv[i] > 0 ? xv[i] : 0.1 * xv[i];
        grad[c] += xv[i] > 0 ? 0 : xv[i];
    }
    clt_tensor *y = clt_module_forward(m, x);
    ck_assert_msg(y != NULL, "%s", clt_last_error());
    test_assert_values(clt_tensor_retain(y), want, 24, 1e-6, "PReLU's forward");
    clt_tensor *s = clt_sum(y, NULL, 0, false);
    ck_assert_int_eq(clt_backward(s, NULL, false), CLT_OK);
    test_assert_values(clt_tensor_grad(w), grad, 3, 1e-5, "PReLU's weight gradient");
    clt_tensor *wide = clt_tensor_ones(CLT_SHAPE(2, 4), CLT_F32, dev);
    ck_assert_ptr_null(clt_module_forward(m, wide));
    ck_assert_error_has("clt_module_forward: weight has 3 elements; the input's 4 channels "
                        "(dimension 1) take 1 or 4");
    ck_assert_ptr_null(clt_nn_prelu(0, 0.25));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_nn_prelu: num_parameters 0 must be positive");
    clt_tensor_release(wide), clt_tensor_release(s), clt_tensor_release(y);
    clt_tensor_release(x), free(xv);
    clt_module_release(one), clt_module_release(m);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* ---- several inputs and outputs ------------------------------------------------------------- */

/* MTCNN's ONet in small: an input (N, 4) and an optional shift added to it first (NULL: none),
 * a trunk Linear(4, 3) and PReLU(3), then three heads: face probabilities (softmax of
 * Linear(3, 2)), box offsets (Linear(3, 4)) and landmarks (Linear(3, 10)). Asked for one output,
 * it gives the probabilities alone. */
typedef struct onet {
    clt_module base;
    clt_module *trunk, *act, *cls, *box, *landmark;
} onet;

static clt_status onet_forward_many(clt_module *self, int n_in, clt_tensor *const *in,
                                    int n_out, clt_tensor **out)
{
    onet *o = (onet *)self;
    if (n_in < 1 || n_in > 2 || !in[0] || (n_out != 1 && n_out != 3))
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "onet_forward_many",
                             "ONet takes an input and an optional shift, and gives 1 or 3 "
                             "outputs (not %d and %d)",
                             n_in, n_out);
    clt_tensor *x = n_in == 2 && in[1] ? clt_add(in[0], in[1]) : clt_tensor_retain(in[0]);
    clt_tensor *h = x ? clt_module_forward(o->trunk, x) : NULL;
    clt_tensor *a = h ? clt_module_forward(o->act, h) : NULL;
    clt_tensor *logits = a ? clt_module_forward(o->cls, a) : NULL;
    out[0] = logits ? clt_softmax(logits, 1) : NULL;
    if (n_out == 3 && out[0]) {
        out[1] = clt_module_forward(o->box, a);
        out[2] = out[1] ? clt_module_forward(o->landmark, a) : NULL;
    }
    bool ok = out[0] && (n_out == 1 || out[2]);
    clt_tensor *temps[] = {logits, a, h, x};
    TEST_RELEASE_ALL(temps);
    if (ok)
        return CLT_OK;
    for (int i = 0; i < n_out; i++)
        clt_tensor_release(out[i]);
    return clt_last_status();
}

static const clt_module_type onet_type = {.name = "ONet",
                                          .size = sizeof(onet),
                                          .forward_many = onet_forward_many};

static clt_module *onet_new(void)
{
    clt_module *m = clt_module_new(&onet_type);
    onet *o = (onet *)m;
    ck_assert_int_eq(clt_module_register_module_take(m, "trunk", clt_nn_linear(4, 3, true)),
                     CLT_OK);
    ck_assert_int_eq(clt_module_register_module_take(m, "act", clt_nn_prelu(3, 0.25)), CLT_OK);
    ck_assert_int_eq(clt_module_register_module_take(m, "cls", clt_nn_linear(3, 2, true)),
                     CLT_OK);
    ck_assert_int_eq(clt_module_register_module_take(m, "box", clt_nn_linear(3, 4, true)),
                     CLT_OK);
    ck_assert_int_eq(clt_module_register_module_take(m, "landmark", clt_nn_linear(3, 10, true)),
                     CLT_OK);
    o->trunk = clt_module_get_child(m, "trunk"), o->act = clt_module_get_child(m, "act");
    o->cls = clt_module_get_child(m, "cls"), o->box = clt_module_get_child(m, "box");
    o->landmark = clt_module_get_child(m, "landmark");
    return m;
}

/* y (n, out) = x (n, in) W^T + b in double. */
static void linear_reference(const double *x, int n, int in, int out, const double *w,
                             const double *b, double *y)
{
    for (int r = 0; r < n; r++)
        for (int j = 0; j < out; j++) {
            double s = b[j];
            for (int k = 0; k < in; k++)
                s += x[r * in + k] * w[j * in + k];
            y[r * out + j] = s;
        }
}

/* ONet's parameters on the host, and its heads for n rows of x (+ shift, when not NULL): the
 * trunk's output h before PReLU, the probabilities, boxes and landmarks. */
typedef struct onet_ref {
    double *p[9]; /* trunk.weight, trunk.bias, act.weight, cls.*, box.*, landmark.* */
    double h[8 * 3], prob[8 * 2], box[8 * 4], mark[8 * 10];
} onet_ref;

static void onet_reference(clt_module *m, const double *x, const double *shift, int n,
                           onet_ref *r)
{
    static const char *const names[9] = {"trunk.weight", "trunk.bias",      "act.weight",
                                         "cls.weight",   "cls.bias",        "box.weight",
                                         "box.bias",     "landmark.weight", "landmark.bias"};
    double in[8 * 4], a[8 * 3], logits[8 * 2];
    for (int i = 0; i < 9; i++)
        r->p[i] = test_values(clt_module_get_parameter(m, names[i]));
    for (int i = 0; i < n * 4; i++)
        in[i] = x[i] + (shift ? shift[i % 4] : 0);
    linear_reference(in, n, 4, 3, r->p[0], r->p[1], r->h);
    for (int i = 0; i < n * 3; i++)
        a[i] = r->h[i] > 0 ? r->h[i] : r->p[2][i % 3] * r->h[i];
    linear_reference(a, n, 3, 2, r->p[3], r->p[4], logits);
    for (int i = 0; i < n; i++) {
        double m0 = fmax(logits[2 * i], logits[2 * i + 1]);
        double e0 = exp(logits[2 * i] - m0), e1 = exp(logits[2 * i + 1] - m0);
        r->prob[2 * i] = e0 / (e0 + e1), r->prob[2 * i + 1] = e1 / (e0 + e1);
    }
    linear_reference(a, n, 3, 4, r->p[5], r->p[6], r->box);
    linear_reference(a, n, 3, 10, r->p[7], r->p[8], r->mark);
}

static void onet_ref_free(onet_ref *r)
{
    for (int i = 0; i < 9; i++)
        free(r->p[i]);
}

/* A type with both forwards: forward doubles, forward_many triples. */
static clt_tensor *both_forward(clt_module *self, clt_tensor *x)
{
    (void)self;
    return clt_mul_scalar(x, 2);
}

static clt_status both_forward_many(clt_module *self, int n_in, clt_tensor *const *in,
                                    int n_out, clt_tensor **out)
{
    (void)self, (void)n_in, (void)n_out;
    out[0] = clt_mul_scalar(in[0], 3);
    return out[0] ? CLT_OK : clt_last_status();
}

static const clt_module_type both_type = {.name = "Both",
                                          .size = sizeof(clt_module),
                                          .forward = both_forward,
                                          .forward_many = both_forward_many};

/* A module of one input and three outputs, with an optional second input: every output by
 * value against the host, with the shift left out (NULL) and given; the one-tensor form through
 * both entry points, and which forward each runs of a type with both; the gradients of the
 * input, the shift and the PReLU's slopes from the boxes and landmarks at once. */
START_TEST(test_module_forward_many)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    clt_manual_seed(11);
    clt_module *m = onet_new();
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    double *xv, *sv;
    clt_tensor *x = test_noisy(dev, CLT_F32, 90, &xv, CLT_SHAPE(5, 4));
    clt_tensor *shift = test_noisy(dev, CLT_F32, 91, &sv, CLT_SHAPE(4));
    onet_ref plain, shifted;
    onet_reference(m, xv, NULL, 5, &plain);
    onet_reference(m, xv, sv, 5, &shifted);

    clt_tensor *out[3];
    ck_assert_int_eq(clt_module_forward_many(m, 2, (clt_tensor *[]){x, NULL}, 3, out), CLT_OK);
    test_assert_values(out[0], plain.prob, 10, 1e-5, "probabilities");
    test_assert_values(out[1], plain.box, 20, 1e-5, "boxes");
    test_assert_values(out[2], plain.mark, 50, 1e-5, "landmarks");
    ck_assert_int_eq(clt_module_forward_many(m, 1, &x, 3, out), CLT_OK);
    test_assert_values(out[2], plain.mark, 50, 1e-5, "landmarks of one input");
    clt_tensor_release(out[0]), clt_tensor_release(out[1]);
    /* the one-tensor forms: ONet asked for one output, a Linear through forward_many */
    test_assert_values(clt_module_forward(m, x), plain.prob, 10, 1e-5, "clt_module_forward");
    clt_tensor *trunk_out;
    ck_assert_int_eq(clt_module_forward_many(((onet *)m)->trunk, 1, &x, 1, &trunk_out), CLT_OK);
    test_assert_values(trunk_out, plain.h, 15, 1e-5, "a Linear through forward_many");
    clt_module *both = clt_module_new(&both_type);
    clt_tensor *tripled;
    double twice[20], thrice[20];
    for (int i = 0; i < 20; i++)
        twice[i] = 2 * xv[i], thrice[i] = 3 * xv[i];
    ck_assert_int_eq(clt_module_forward_many(both, 1, &x, 1, &tripled), CLT_OK);
    test_assert_values(tripled, thrice, 20, 1e-6, "a type with both: forward_many");
    test_assert_values(clt_module_forward(both, x), twice, 20, 1e-6,
                       "a type with both: forward");
    clt_module_release(both);

    /* with the shift, gradients from two outputs at once: d(sum(box) + sum(landmark)) */
    ck_assert_int_eq(clt_tensor_set_requires_grad(x, true), CLT_OK);
    ck_assert_int_eq(clt_tensor_set_requires_grad(shift, true), CLT_OK);
    ck_assert_int_eq(clt_module_forward_many(m, 2, (clt_tensor *[]){x, shift}, 3, out), CLT_OK);
    test_assert_values(clt_tensor_retain(out[0]), shifted.prob, 10, 1e-5,
                       "shifted probabilities");
    test_assert_values(clt_tensor_retain(out[1]), shifted.box, 20, 1e-5, "shifted boxes");
    test_assert_values(clt_tensor_retain(out[2]), shifted.mark, 50, 1e-5, "shifted landmarks");
    clt_tensor *sb = clt_sum(out[1], NULL, 0, false), *sm = clt_sum(out[2], NULL, 0, false);
    clt_tensor *loss = clt_add(sb, sm);
    ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_OK);
    double v[3], gx[5 * 4] = {0}, gs[4] = {0}, galpha[3] = {0};
    for (int k = 0; k < 3; k++) { /* d loss / d a: the heads' weight columns summed */
        v[k] = 0;
        for (int j = 0; j < 4; j++)
            v[k] += shifted.p[5][j * 3 + k];
        for (int j = 0; j < 10; j++)
            v[k] += shifted.p[7][j * 3 + k];
    }
    for (int r = 0; r < 5; r++)
        for (int k = 0; k < 3; k++) {
            double h = shifted.h[r * 3 + k], dh = v[k] * (h > 0 ? 1 : shifted.p[2][k]);
            galpha[k] += h > 0 ? 0 : v[k] * h;
            for (int i = 0; i < 4; i++) {
                gx[r * 4 + i] += dh * shifted.p[0][k * 4 + i];
                gs[i] += dh * shifted.p[0][k * 4 + i];
            }
        }
    test_assert_values(clt_tensor_grad(x), gx, 20, 1e-5, "the input's gradient");
    test_assert_values(clt_tensor_grad(shift), gs, 4, 1e-5, "the shift's gradient");
    test_assert_values(clt_tensor_grad(clt_module_get_parameter(m, "act.weight")), galpha, 3,
                       1e-5, "the slopes' gradient");
    clt_tensor *all[] = {loss, sm, sb, out[0], out[1], out[2], shift, x};
    TEST_RELEASE_ALL(all);
    onet_ref_free(&plain), onet_ref_free(&shifted);
    free(xv), free(sv);
    clt_module_release(m);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Two inputs summed, one output: a type with forward_many alone that one tensor cannot run. */
static clt_status pair_forward_many(clt_module *self, int n_in, clt_tensor *const *in,
                                    int n_out, clt_tensor **out)
{
    (void)self;
    if (n_in != 2 || !in[0] || !in[1] || n_out != 1)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "pair_forward_many",
                             "Pair takes two inputs and gives one output (not %d and %d)", n_in,
                             n_out);
    out[0] = clt_add(in[0], in[1]);
    return out[0] ? CLT_OK : clt_last_status();
}

/* Says it succeeded with its second output missing. */
static clt_status forgetful_forward_many(clt_module *self, int n_in, clt_tensor *const *in,
                                         int n_out, clt_tensor **out)
{
    (void)self, (void)n_in, (void)n_out;
    out[0] = clt_tensor_retain(in[0]);
    return CLT_OK;
}

static const clt_module_type pair_type = {.name = "Pair",
                                          .size = sizeof(clt_module),
                                          .forward_many = pair_forward_many};
static const clt_module_type forgetful_type = {.name = "Forgetful",
                                               .size = sizeof(clt_module),
                                               .forward_many = forgetful_forward_many};
static const clt_module_type empty_type = {.name = "Empty", .size = sizeof(clt_module)};

/* Asserts that a failed clt_module_forward_many returned `want` with an error holding text, and
 * left its first n outputs NULL and the others as they were (x). */
static void expect_none(clt_status st, clt_status want, clt_tensor **out, int n, clt_tensor *x,
                        const char *text)
{
    ck_assert_int_eq(st, want);
    ck_assert_int_eq(clt_last_status(), want);
    ck_assert_error_has(text);
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_eq(out[i], i < n ? NULL : x);
}

/* Errors of clt_module_forward_many leave every output NULL: NULL arguments, counts refused by
 * the library, the type or a type of one tensor, an input on another device, a failing child
 * (named by its path), a type that forgets an output; and the one-tensor callers (Sequential,
 * DataParallel) name a type that one tensor cannot run. */
START_TEST(test_module_forward_many_errors)
{
    clt_device *dev = test_device(_i), *cpu = clt_device_cpu();
    clt_device *other = dev != cpu ? cpu : test_device_total > 1 ? test_device(1) : NULL;
    test_live before = test_live_now();
    clt_manual_seed(12);
    clt_module *m = onet_new(), *lin = clt_nn_linear(4, 3, true);
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    ck_assert_int_eq(clt_module_to(lin, dev), CLT_OK);
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(2, 4), CLT_F32, dev);
    clt_tensor *out[3] = {x, x, x}; /* not references: each must come back NULL untouched */
#define FILL() (out[0] = out[1] = out[2] = x)
    expect_none(clt_module_forward_many(NULL, 1, &x, 3, out), CLT_ERR_INVALID_ARGUMENT, out, 3,
                x, "clt_module_forward_many: the module is NULL");
    FILL();
    expect_none(clt_module_forward_many(m, 1, NULL, 3, out), CLT_ERR_INVALID_ARGUMENT, out, 3,
                x, "clt_module_forward_many: inputs is NULL");
    ck_assert_int_eq(clt_module_forward_many(m, 1, &x, 3, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_module_forward_many: outputs is NULL");
    FILL();
    expect_none(clt_module_forward_many(m, -1, &x, 3, out), CLT_ERR_INVALID_ARGUMENT, out, 3, x,
                "clt_module_forward_many: n_inputs -1 and n_outputs 3: a forward takes 0 or more "
                "inputs and gives 1 or more outputs");
    ck_assert_int_eq(clt_module_forward_many(m, 1, &x, 0, out), CLT_ERR_INVALID_ARGUMENT);
    FILL();
    expect_none(clt_module_forward_many(m, 1, &x, 2, out), CLT_ERR_INVALID_ARGUMENT, out, 2, x,
                "clt_module_forward_many: ONet takes an input and an optional shift, and gives 1 "
                "or 3 outputs (not 1 and 2)");
    FILL();
    expect_none(clt_module_forward_many(m, 1, (clt_tensor *[]){NULL}, 3, out),
                CLT_ERR_INVALID_ARGUMENT, out, 3, x, "ONet takes an input");
    FILL();
    expect_none(clt_module_forward_many(lin, 2, (clt_tensor *[]){x, x}, 1, out),
                CLT_ERR_INVALID_ARGUMENT, out, 1, x,
                "clt_module_forward_many: Linear takes one input and gives one output, not 2 "
                "and 1");
    FILL();
    expect_none(clt_module_forward_many(lin, 1, (clt_tensor *[]){NULL}, 1, out),
                CLT_ERR_INVALID_ARGUMENT, out, 1, x,
                "clt_module_forward_many: Linear needs its one input, and it is NULL");
    /* a child's failure, named by its path */
    clt_tensor *wide = clt_tensor_ones(CLT_SHAPE(2, 5), CLT_F32, dev);
    FILL();
    expect_none(clt_module_forward_many(m, 1, &wide, 3, out), CLT_ERR_SHAPE, out, 3, x,
                "clt_module_forward_many: trunk (Linear): ");
    if (other) {
        clt_tensor *far = clt_tensor_ones(CLT_SHAPE(4), CLT_F32, other);
        FILL();
        expect_none(clt_module_forward_many(m, 2, (clt_tensor *[]){x, far}, 3, out),
                    CLT_ERR_DEVICE_MISMATCH, out, 3, x,
                    "clt_module_forward_many: input 1 is on ");
        ck_assert_error_has("the module (ONet) on ");
        clt_tensor_release(far);
    }
    /* a type that says it succeeded without every output: what it wrote is released */
    clt_module *forgetful = clt_module_new(&forgetful_type),
               *empty = clt_module_new(&empty_type);
    FILL();
    expect_none(clt_module_forward_many(forgetful, 1, &x, 2, out), CLT_ERR_INVALID_ARGUMENT,
                out, 2, x,
                "clt_module_forward_many: Forgetful's forward_many succeeded without output 1");
    FILL();
    expect_none(clt_module_forward_many(empty, 1, &x, 1, out), CLT_ERR_INVALID_ARGUMENT, out, 1,
                x, "clt_module_forward_many: Empty has no forward function");
    ck_assert_ptr_null(clt_module_forward(empty, x));
    ck_assert_error_has("clt_module_forward: Empty has no forward function");
    /* one tensor where a type takes two: clt_module_forward, Sequential, DataParallel */
    clt_module *pair = clt_module_new(&pair_type);
    clt_tensor *two;
    ck_assert_int_eq(clt_module_forward_many(pair, 2, (clt_tensor *[]){x, x}, 1, &two), CLT_OK);
    test_assert_values(two, (double[]){2, 2, 2, 2, 2, 2, 2, 2}, 8, 0, "Pair's sum");
    ck_assert_ptr_null(clt_module_forward(pair, x));
    ck_assert_error_has("clt_module_forward: Pair takes two inputs and gives one output (not 1 "
                        "and 1)");
    clt_module *seq = CLT_SEQUENTIAL(clt_module_retain(pair));
    ck_assert_ptr_null(clt_module_forward(seq, x));
    ck_assert_error_has("clt_module_forward: 0 (Pair): Pair takes two inputs");
    clt_module *dp = clt_nn_data_parallel(pair, &dev, 1, NULL);
    ck_assert_ptr_nonnull(dp);
    ck_assert_ptr_null(clt_module_forward(dp, x));
    ck_assert_error_has("clt_module_forward: module (Pair): Pair takes two inputs");
    FILL();
    expect_none(clt_module_forward_many(dp, 2, (clt_tensor *[]){x, x}, 1, out),
                CLT_ERR_INVALID_ARGUMENT, out, 1, x,
                "DataParallel takes one input and gives one "
                "output, not 2 and 1");
#undef FILL
    clt_module *mods[] = {dp, seq, pair, empty, forgetful, lin, m};
    for (size_t k = 0; k < sizeof mods / sizeof *mods; k++)
        clt_module_release(mods[k]);
    clt_tensor_release(wide), clt_tensor_release(x);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

Suite *suite_module(void)
{
    Suite *s = suite_create("module");
    TCase *tc = test_case("module", 600);
    tcase_add_test(tc, test_module_names);
    tcase_add_test(tc, test_module_cycles_refused);
    ADD_DEVICE_TEST(tc, test_module_to_in_place);
    ADD_DEVICE_TEST(tc, test_module_clone_and_forward);
    ADD_DEVICE_TEST(tc, test_module_clone_shared_frozen);
    ADD_DEVICE_TEST(tc, test_module_register_devices);
    ADD_DEVICE_TEST(tc, test_module_to_atomic);
    ADD_DEVICE_TEST(tc, test_module_100m);
    ADD_DEVICE_TEST(tc, test_module_layers_match_host);
    ADD_DEVICE_TEST(tc, test_module_take_forms);
    ADD_DEVICE_TEST(tc, test_module_errors_name_the_layer);
    ADD_DEVICE_TEST(tc, test_module_fused_activation);
    ADD_DEVICE_TEST(tc, test_module_prelu_layer);
    ADD_DEVICE_TEST(tc, test_module_forward_many);
    ADD_DEVICE_TEST(tc, test_module_forward_many_errors);
    tcase_add_test(tc, test_module_options_defaults);
    tcase_add_test(tc, test_module_format);
    suite_add_tcase(s, tc);
    return s;
}
