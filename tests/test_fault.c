/* Fault suite: the main scenarios with each host and then each device allocation made to fail
 * in turn (N = 1, 2, ... until the scenario passes): moving a tensor between devices and dtypes,
 * moving a module, a training step (forward, loss, backward, Adam's step) of an MLP and of a
 * small CNN, a batch-norm forward in training mode, a data-loader epoch, saving and loading a
 * model. Every failure must return an out-of-memory error from one of the library's functions
 * and leak nothing; the objects the scenario works on must hold what they held before it
 * (values, devices, handles, optimizer steps), or what the calls that succeeded before the
 * failing one made of them; and they stay usable: the run after the last failure succeeds on
 * the same objects, and the model trained through every failed step matches one trained
 * without failures. On every device. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "helpers.h"
#include "ops/ops_internal.h"

/* ---- what a module holds ---------------------------------------------------------------------- */

enum { MAX_TENSORS = 16 };

/* Every parameter and buffer of a module: the handle, its device and its values. */
typedef struct module_state {
    int count;
    char names[MAX_TENSORS][64];
    clt_tensor *handles[MAX_TENSORS];
    clt_device *devices[MAX_TENSORS];
    double *values[MAX_TENSORS];
} module_state;

static int note_tensor(const char *name, clt_tensor *t, void *user)
{
    module_state *s = user;
    ck_assert_int_lt(s->count, MAX_TENSORS);
    snprintf(s->names[s->count], sizeof s->names[0], "%s", name);
    s->handles[s->count] = t;
    s->devices[s->count] = clt_tensor_device(t);
    s->values[s->count++] = test_values(t);
    return 0;
}

static void state_clear(module_state *s)
{
    for (int i = 0; i < s->count; i++)
        free(s->values[i]);
    s->count = 0;
}

static void state_take(module_state *s, clt_module *m)
{
    state_clear(s);
    ck_assert_int_eq(clt_module_foreach_parameter(m, note_tensor, s), CLT_OK);
    ck_assert_int_eq(clt_module_foreach_buffer(m, note_tensor, s), CLT_OK);
}

/* Asserts that m holds the same values as `s` under the same names, each on `dev` (NULL: on
 * the device it was on) and, with same_handles, in the same tensor objects. */
static void state_assert_ex(const module_state *s, clt_module *m, clt_device *dev,
                            bool same_handles)
{
    module_state now = {0};
    state_take(&now, m);
    ck_assert_int_eq(now.count, s->count);
    for (int i = 0; i < s->count; i++) {
        ck_assert_str_eq(now.names[i], s->names[i]);
        if (same_handles)
            ck_assert_ptr_eq(now.handles[i], s->handles[i]);
        ck_assert_ptr_eq(now.devices[i], dev ? dev : s->devices[i]);
        int64_t n = clt_tensor_numel(s->handles[i]);
        for (int64_t k = 0; k < n; k++)
            ELEMENT_CHECK(now.values[i][k] == s->values[i][k], "%s[%lld]: %.17g, was %.17g",
                          s->names[i], (long long)k, now.values[i][k], s->values[i][k]);
    }
    state_clear(&now);
}

static void state_assert(const module_state *s, clt_module *m, clt_device *dev)
{
    state_assert_ex(s, m, dev, true);
}

/* Runs the sweep for host and then device allocations (cpu tensors are host memory: a scenario
 * on cpu alone may make no device allocation). */
static void both_kinds(test_op op, test_check snapshot, test_check check, void *ctx,
                       clt_device *dev)
{
    ck_assert_int_ge(test_fault_sweep_checked(op, snapshot, check, ctx, NULL, CLT__HOST), 1);
    ck_assert_int_ge(test_fault_sweep_checked(op, snapshot, check, ctx, NULL, CLT__DEVICE),
                     dev == clt_device_cpu() ? 0 : 1);
}

/* The values of t, read with no allocation made to fail (inside a scenario under test). */
static double *values_unfaulted(clt_tensor *t)
{
    clt__fault_suspend(true);
    double *v = test_values(t);
    clt__fault_suspend(false);
    return v;
}

/* ---- a tensor to another device and dtype and back ------------------------------------------- */

typedef struct to_case {
    clt_device *dev;
    clt_tensor *x;
    double *before;
} to_case;

static bool tensor_round_trip(void *ctx)
{
    to_case *c = ctx;
    clt_tensor *on = clt_tensor_to_ex(c->x, &(clt_to_options){.device = c->dev, .copy = true});
    clt_tensor *half = on ? clt_tensor_to_dtype(on, CLT_F16) : NULL;
    clt_tensor *back = half ? clt_tensor_to(half, clt_device_cpu()) : NULL;
    clt_tensor *wide = back ? clt_tensor_to_dtype(back, CLT_F32) : NULL;
    bool ok = wide != NULL;
    if (ok) { /* the values are halves: exact in f16 */
        double *got = values_unfaulted(wide);
        for (int k = 0; k < 15; k++)
            ck_assert_double_eq(got[k], c->before[k]);
        free(got);
    }
    clt_tensor *all[4] = {on, half, back, wide};
    for (int k = 0; k < 4; k++)
        clt_tensor_release(all[k]);
    return ok;
}

static void tensor_unchanged(void *ctx)
{
    to_case *c = ctx;
    double *now = test_values(c->x);
    ck_assert_ptr_eq(clt_tensor_device(c->x), clt_device_cpu());
    ck_assert_int_eq(clt_tensor_dtype(c->x), CLT_F32);
    for (int k = 0; k < 15; k++)
        ck_assert_double_eq(now[k], c->before[k]);
    free(now);
}

START_TEST(test_fault_tensor_to)
{
    double v[15];
    to_case c = {.dev = test_device(_i)};
    for (int k = 0; k < 15; k++)
        v[k] = (k - 7) * 0.5;
    c.x = test_tensor(clt_device_cpu(), CLT_F32, v, 2, (int64_t[]){3, 5});
    c.before = test_values(c.x);
    both_kinds(tensor_round_trip, NULL, tensor_unchanged, &c, c.dev);
    free(c.before);
    clt_tensor_release(c.x);
}
END_TEST

/* ---- a module to the device and back (cpu: to f64 and back) -------------------------------- */

typedef struct move_case {
    clt_device *dev;
    clt_module *m;
    module_state before;
    int failed_at; /* the call that failed: 1 the way there, 2 the way back */
} move_case;

static bool module_round_trip(void *ctx)
{
    move_case *c = ctx;
    bool host = c->dev == clt_device_cpu();
    c->failed_at = 1;
    if ((host ? clt_module_to_dtype(c->m, CLT_F64) : clt_module_to(c->m, c->dev)) != CLT_OK)
        return false;
    c->failed_at = 2;
    if ((host ? clt_module_to_dtype(c->m, CLT_F32) : clt_module_to(c->m, clt_device_cpu())) !=
        CLT_OK)
        return false;
    c->failed_at = 0;
    return true;
}

static void module_where_it_was(void *ctx)
{
    move_case *c = ctx;
    bool host = c->dev == clt_device_cpu();
    /* the values survive either way; the device (or dtype) is that before the failed call */
    state_assert(&c->before, c->m, c->failed_at == 2 && !host ? c->dev : clt_device_cpu());
    if (host)
        ck_assert_int_eq(clt_tensor_dtype(c->before.handles[0]),
                         c->failed_at == 2 ? CLT_F64 : CLT_F32);
    /* put it back where the next run starts */
    ck_assert_int_eq(host ? clt_module_to_dtype(c->m, CLT_F32) : clt_module_to(c->m, clt_device_cpu()),
                     CLT_OK);
}

START_TEST(test_fault_module_to)
{
    move_case c = {.dev = test_device(_i)};
    c.m = test_mlp(5, 7, 3, clt_nn_relu(), 11);
    state_take(&c.before, c.m);
    both_kinds(module_round_trip, NULL, module_where_it_was, &c, c.dev);
    state_assert(&c.before, c.m, clt_device_cpu());
    state_clear(&c.before);
    clt_module_release(c.m);
}
END_TEST

/* ---- a training step ----------------------------------------------------------------------- */

typedef struct train_case {
    clt_module *m;
    clt_optimizer *opt;
    clt_tensor *x, *y;
    module_state before;
    int64_t steps_before;
} train_case;

/* The MLP on 8 rows of 5, or with `cnn` a convolution (2 -> 3 channels, 3 x 3 padded by 1,
 * bias and ReLU: its product into the (N, O, L) layout) and a linear layer on 8 images of
 * 2 x 4 x 4. */
static void train_setup(train_case *c, clt_device *dev, bool cnn)
{
    double xv[8 * 32], yv[8];
    int64_t per = cnn ? 32 : 5;
    test_noise(xv, 8 * per, 3, -1, 1);
    for (int k = 0; k < 8; k++)
        yv[k] = k % 3;
    if (cnn) {
        clt_conv2d_options same = clt_conv2d_options_default();
        same.padding[0] = same.padding[1] = 1;
        clt_manual_seed(5);
        c->m = CLT_SEQUENTIAL(clt_nn_conv2d(2, 3, 3, 3, &same, true), clt_nn_relu(),
                              clt_nn_flatten(), clt_nn_linear(3 * 4 * 4, 3, true));
    } else {
        c->m = test_mlp(5, 7, 3, clt_nn_tanh(), 5);
    }
    ck_assert_ptr_nonnull(c->m);
    ck_assert_int_eq(clt_module_to(c->m, dev), CLT_OK);
    c->opt = clt_optim_adam_module(c->m, TEST_ADAM(0.01));
    ck_assert_ptr_nonnull(c->opt);
    c->x = cnn ? test_tensor(dev, CLT_F32, xv, 4, (int64_t[]){8, 2, 4, 4})
               : test_tensor(dev, CLT_F32, xv, 2, (int64_t[]){8, 5});
    c->y = test_tensor(dev, CLT_I64, yv, 1, (int64_t[]){8});
}

static void train_free(train_case *c)
{
    state_clear(&c->before);
    clt_tensor_release(c->x);
    clt_tensor_release(c->y);
    clt_optim_free(c->opt);
    clt_module_release(c->m);
}

/* forward, loss, backward, step; the gradients are dropped at the end, as a training loop's
 * next zero_grad would, so that every run starts from none */
static bool train_step(void *ctx)
{
    train_case *c = ctx;
    clt_tensor *out = clt_module_forward(c->m, c->x);
    clt_tensor *loss = out ? clt_cross_entropy(out, c->y, NULL) : NULL;
    bool ok = loss && clt_backward(loss, NULL, false) == CLT_OK && clt_optim_step(c->opt) == CLT_OK;
    clt_tensor_release(loss);
    clt_tensor_release(out);
    clt_optim_zero_grad(c->opt);
    return ok;
}

static void train_snapshot(void *ctx)
{
    train_case *c = ctx;
    state_take(&c->before, c->m);
    c->steps_before = clt_optim_steps(c->opt);
}

/* A failed step updates no parameter and counts no step. */
static void train_unchanged(void *ctx)
{
    train_case *c = ctx;
    state_assert(&c->before, c->m, NULL);
    ck_assert_int_eq(clt_optim_steps(c->opt), c->steps_before);
}

static void train_steps_failing(clt_device *dev, bool cnn)
{
    train_case c = {0}, ref = {0};
    train_setup(&c, dev, cnn);
    both_kinds(train_step, train_snapshot, train_unchanged, &c, dev);
    /* a model that takes the same successful steps without failures ends up the same */
    train_setup(&ref, dev, cnn);
    for (int64_t k = 0; k < clt_optim_steps(c.opt); k++)
        ck_assert(train_step(&ref));
    state_take(&ref.before, ref.m);
    state_assert_ex(&ref.before, c.m, dev, false);
    train_free(&ref);
    train_free(&c);
}

START_TEST(test_fault_train_step)
{
    train_steps_failing(test_device(_i), false);
}
END_TEST

/* The same with a convolution: its columns, its product into column groups (on cpu through a
 * buffer and a copy) and its backward pass's copy under every allocation failure. */
START_TEST(test_fault_conv_train_step)
{
    train_steps_failing(test_device(_i), true);
}
END_TEST

/* ---- batch norm in training mode: the running statistics ------------------------------------ */

typedef struct norm_case {
    clt_module *m;
    clt_tensor *x;
    module_state before;
} norm_case;

static bool norm_forward(void *ctx)
{
    norm_case *c = ctx;
    clt_tensor *y = clt_module_forward(c->m, c->x);
    clt_tensor_release(y);
    return y != NULL;
}

static void norm_snapshot(void *ctx)
{
    norm_case *c = ctx;
    state_take(&c->before, c->m);
}

static void norm_unchanged(void *ctx)
{
    norm_case *c = ctx;
    state_assert(&c->before, c->m, NULL);
}

START_TEST(test_fault_batch_norm)
{
    clt_device *dev = test_device(_i);
    double xv[6 * 4];
    norm_case c = {0};
    test_noise(xv, 6 * 4, 9, -2, 2);
    ck_assert_ptr_nonnull(c.m = clt_nn_batch_norm(4, 1e-5, 0.1));
    ck_assert_int_eq(clt_module_to(c.m, dev), CLT_OK);
    c.x = test_tensor(dev, CLT_F32, xv, 2, (int64_t[]){6, 4});
    both_kinds(norm_forward, norm_snapshot, norm_unchanged, &c, dev);
    state_clear(&c.before);
    clt_tensor_release(c.x);
    clt_module_release(c.m);
}
END_TEST

/* ---- a data-loader epoch --------------------------------------------------------------------- */

enum { ITEMS = 22 };

typedef struct loader_case {
    clt_device *dev;
    clt_dataset *d;
} loader_case;

/* A loader over the dataset and one shuffled epoch: every item exactly once, on the loader's
 * device, with its features. (The loader lives for one run: while its thread prepares batches
 * the live allocations are not a fixed count.) */
static bool loader_epoch(void *ctx)
{
    loader_case *c = ctx;
    int seen[ITEMS] = {0};
    clt_tensor *batch[2];
    clt_status st = CLT_OK;
    clt_loader *l = clt_loader_new(c->d, &(clt_loader_options){.batch_size = 5, .shuffle = true,
                                                               .seed = 3, .device = c->dev});
    while (l && (st = clt_loader_next(l, batch)) == CLT_OK) {
        double *x = values_unfaulted(batch[0]), *y = values_unfaulted(batch[1]);
        int64_t n = clt_tensor_size(batch[1], 0);
        ck_assert_ptr_eq(clt_tensor_device(batch[0]), c->dev);
        for (int64_t k = 0; k < n; k++) {
            int item = (int)y[k];
            ck_assert(item >= 0 && item < ITEMS);
            seen[item]++;
            ck_assert_double_eq(x[2 * k], item);
            ck_assert_double_eq(x[2 * k + 1], -item);
        }
        free(x), free(y);
        clt_tensor_release(batch[0]);
        clt_tensor_release(batch[1]);
    }
    if (!l || st != CLT_END) {
        clt__error_state e; /* the loader's failure, not freeing's */
        clt__error_save(&e);
        clt_loader_free(l);
        clt__error_restore(&e);
        return false;
    }
    clt_loader_free(l);
    for (int k = 0; k < ITEMS; k++)
        ck_assert_int_eq(seen[k], 1);
    return true;
}

/* The dataset still gives every item. */
static void dataset_unchanged(void *ctx)
{
    loader_case *c = ctx;
    ck_assert_int_eq(clt_dataset_length(c->d), ITEMS);
    for (int k = 0; k < ITEMS; k += 7) {
        clt_tensor *f[2];
        ck_assert_int_eq(clt_dataset_get(c->d, k, f), CLT_OK);
        double *y = test_values(f[1]);
        ck_assert_double_eq(y[0], k);
        free(y);
        clt_tensor_release(f[0]);
        clt_tensor_release(f[1]);
    }
}

START_TEST(test_fault_loader_epoch)
{
    double xv[ITEMS * 2], yv[ITEMS];
    loader_case c = {.dev = test_device(_i)};
    for (int k = 0; k < ITEMS; k++)
        xv[2 * k] = k, xv[2 * k + 1] = -k, yv[k] = k;
    clt_tensor *x = test_tensor(clt_device_cpu(), CLT_F32, xv, 2, (int64_t[]){ITEMS, 2});
    clt_tensor *y = test_tensor(clt_device_cpu(), CLT_I64, yv, 1, (int64_t[]){ITEMS});
    ck_assert_ptr_nonnull(c.d = clt_dataset_tensors((clt_tensor *[]){x, y}, 2));
    both_kinds(loader_epoch, NULL, dataset_unchanged, &c, c.dev);
    clt_dataset_release(c.d);
    clt_tensor_release(y);
    clt_tensor_release(x);
}
END_TEST

/* ---- saving a model and loading it into another ------------------------------------------- */

typedef struct save_case {
    clt_module *src, *dst;
    char dir[128], path[256], start[256]; /* the file each run writes; dst's values at first */
    module_state saved, before;
} save_case;

static bool save_and_load(void *ctx)
{
    save_case *c = ctx;
    return clt_module_save(c->src, c->path, NULL, 0) == CLT_OK &&
           clt_module_load(c->dst, c->path, true, NULL) == CLT_OK;
}

/* dst back to its own values, and what it holds noted. */
static void save_snapshot(void *ctx)
{
    save_case *c = ctx;
    ck_assert_int_eq(clt_module_load(c->dst, c->start, true, NULL), CLT_OK);
    state_take(&c->before, c->dst);
}

/* The folder holds start.safetensors and nothing else: no file left half-written. */
static void no_stray_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL)
        ck_assert_msg(!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
                          !strcmp(e->d_name, "start.safetensors"),
                      "%s/%s was left behind", dir, e->d_name);
    closedir(d);
}

/* dst as it was; the file, if there is one, whole: src's values (every run writes the same). */
static void save_unchanged(void *ctx)
{
    save_case *c = ctx;
    clt_safetensors st;
    state_assert(&c->before, c->dst, NULL);
    if (access(c->path, F_OK) != 0) {
        no_stray_files(c->dir);
        return;
    }
    ck_assert_int_eq(clt_safetensors_load(c->path, clt_device_cpu(), &st), CLT_OK);
    ck_assert_int_eq(st.count, c->saved.count);
    for (int i = 0; i < c->saved.count; i++) {
        double *v = test_values(clt_safetensors_get(&st, c->saved.names[i]));
        for (int64_t k = 0; k < clt_tensor_numel(c->saved.handles[i]); k++)
            ck_assert_double_eq(v[k], c->saved.values[i][k]);
        free(v);
    }
    clt_safetensors_clear(&st);
    ck_assert_int_eq(unlink(c->path), 0);
    no_stray_files(c->dir);
}

START_TEST(test_fault_save_load)
{
    clt_device *dev = test_device(_i);
    save_case c = {0};
    const char *dir = test_temp_dir();
    c.src = test_mlp(4, 6, 2, clt_nn_relu(), 21);
    c.dst = test_mlp(4, 6, 2, clt_nn_relu(), 22);
    ck_assert_int_eq(clt_module_to(c.src, dev), CLT_OK);
    ck_assert_int_eq(clt_module_to(c.dst, dev), CLT_OK);
    snprintf(c.dir, sizeof c.dir, "%s", dir);
    snprintf(c.path, sizeof c.path, "%s/model.safetensors", dir);
    snprintf(c.start, sizeof c.start, "%s/start.safetensors", dir);
    ck_assert_int_eq(clt_module_save(c.dst, c.start, NULL, 0), CLT_OK);
    state_take(&c.saved, c.src);
    both_kinds(save_and_load, save_snapshot, save_unchanged, &c, dev);
    state_assert_ex(&c.saved, c.dst, dev, false); /* the last run loaded src's values */
    state_clear(&c.saved);
    state_clear(&c.before);
    clt_module_release(c.dst);
    clt_module_release(c.src);
}
END_TEST

/* ---- pinned host memory and asynchronous copies; a tensor's autograd state ------------------ */

typedef struct async_case {
    clt_device *dev;
    clt_tensor *t;
    double *before;
} async_case;

/* A tensor's elements out into a pinned buffer and back in, each copy with an event. */
static bool async_round_trip(void *ctx)
{
    async_case *c = ctx;
    size_t bytes = 40 * sizeof(float);
    clt_host_buffer *b = clt_host_buffer_new(c->dev, bytes);
    clt_event *e = NULL;
    bool ok = b && clt_tensor_read_async(c->t, clt_host_buffer_data(b), bytes, &e) == CLT_OK &&
              clt_event_wait(e) == CLT_OK;
    clt_event_release(e);
    e = NULL;
    ok = ok && clt_tensor_write_async(c->t, clt_host_buffer_data(b), bytes, &e) == CLT_OK &&
         clt_event_wait(e) == CLT_OK;
    clt_event_release(e);
    clt_host_buffer_free(b);
    return ok;
}

static void async_unchanged(void *ctx)
{
    async_case *c = ctx;
    double *now = values_unfaulted(c->t);
    for (int k = 0; k < 40; k++)
        ck_assert_double_eq(now[k], c->before[k]);
    free(now);
}

START_TEST(test_fault_async_copies)
{
    double v[40];
    async_case c = {.dev = test_device(_i)};
    for (int k = 0; k < 40; k++)
        v[k] = k * 0.25 - 3;
    c.t = test_tensor(c.dev, CLT_F32, v, 1, (int64_t[]){40});
    c.before = test_values(c.t);
    both_kinds(async_round_trip, NULL, async_unchanged, &c, c.dev);
    free(c.before);
    clt_tensor_release(c.t);
}
END_TEST

/* A fresh tensor's autograd state is made when it is first asked for: without it the tensor
 * neither requires grad nor has a gradient. */
static bool grad_state(void *ctx)
{
    clt_device *dev = ctx;
    clt_tensor *x = clt_tensor_zeros(CLT_SHAPE(3), CLT_F32, dev);
    clt_tensor *g = x ? clt_tensor_ones(CLT_SHAPE(3), CLT_F32, dev) : NULL;
    clt_tensor *y = g ? clt_tensor_zeros(CLT_SHAPE(3), CLT_F32, dev) : NULL;
    bool ok = y != NULL;
    if (ok) {
        clt_status st = clt_tensor_set_requires_grad(x, true);
        ck_assert(clt_tensor_requires_grad(x) == (st == CLT_OK)); /* unchanged on failure */
        ok = st == CLT_OK;
    }
    if (ok) {
        clt_status st = clt_tensor_set_grad(y, g);
        clt_tensor *now = clt_tensor_grad(y);
        ck_assert(now == (st == CLT_OK ? g : NULL));
        clt_tensor_release(now);
        ok = st == CLT_OK;
    }
    clt_tensor_release(y), clt_tensor_release(g), clt_tensor_release(x);
    return ok;
}

START_TEST(test_fault_grad_state)
{
    ck_assert_int_ge(test_fault_sweep(grad_state, test_device(_i), NULL, CLT__HOST), 2);
}
END_TEST

/* print(model): a failed allocation anywhere in the rendering gives NULL, never a cut text. */
static bool module_format(void *ctx)
{
    clt_module *m = ctx;
    char *text = clt_module_format(m);
    if (text)
        ck_assert_ptr_nonnull(strstr(text, "(1): Sequential(\n    (0): Linear(in_features=3"));
    clt_free(text);
    return text != NULL;
}

START_TEST(test_fault_module_format)
{
    clt_module *m = CLT_SEQUENTIAL(clt_nn_relu(), CLT_SEQUENTIAL(clt_nn_linear(3, 2, true)),
                                   clt_nn_layer_norm(1, (int64_t[]){2}, 1e-5));
    ck_assert_int_ge(test_fault_sweep(module_format, m, "clt_module_format", CLT__HOST), 1);
    clt_module_release(m);
}
END_TEST

/* The operations along one dimension: a failed allocation anywhere leaks nothing and names the
 * operation. */
static bool row_ops(void *ctx)
{
    clt_device *dev = ctx;
    clt_tensor *x = clt_tensor_arange(0, 12, 1, CLT_F32, dev),
               *m = x ? clt_reshape(x, CLT_SHAPE(3, 4)) : NULL;
    clt_tensor *idx = NULL, *top = m ? clt_topk(m, 2, 1, true, &idx) : NULL;
    clt_tensor *c = top ? clt_cumsum(m, 0) : NULL, *g = c ? clt_gather(m, 1, idx) : NULL;
    clt_tensor *d = g ? clt_multinomial(m, 2, false) : NULL;
    clt_tensor *j = d ? clt_cat((clt_tensor *[]){x, x, x}, 3, 0) : NULL; /* runs, one launch */
    bool ok = j != NULL;
    clt_tensor *all[] = {x, m, idx, top, c, g, d, j};
    TEST_RELEASE_ALL(all);
    return ok;
}

START_TEST(test_fault_row_ops)
{
    clt_device *dev = test_device(_i);
    both_kinds(row_ops, NULL, NULL, dev, dev);
}
END_TEST

/* A weight gradient's product with its bias's gradient (clt__matmul_row_sums): dense (the
 * kernels' own sums where the variant has them, a reduction apart elsewhere), strided (the sums
 * apart), and down more rows of a transposed A than a column sum takes (a transposed copy in a
 * buffer first, where the sums are apart): a failed allocation anywhere leaks nothing. */
static bool row_sums(void *ctx)
{
    clt_device *dev = ctx;
    clt_tensor *a = clt_tensor_full(CLT_SHAPE(4100, 3), 0.5, CLT_F32, dev);
    clt_tensor *at = a ? clt_transpose(a, 0, 1) : NULL;         /* (3, 4100), transposed */
    clt_tensor *dense = at ? clt_contiguous(at) : NULL;          /* (3, 4100) */
    clt_tensor *strided = dense ? clt_slice(at, 1, 0, 4100, 2) : NULL; /* (3, 2050) */
    clt_tensor *b = strided ? clt_tensor_full(CLT_SHAPE(4100, 2), 1, CLT_F32, dev) : NULL;
    clt_tensor *half = b ? clt_tensor_full(CLT_SHAPE(2050, 2), 1, CLT_F32, dev) : NULL;
    clt_tensor *sums[3] = {NULL}, *w[3] = {NULL};
    if (half)
        w[0] = clt__matmul_row_sums("clt_backward", at, b, &sums[0]);
    if (w[0])
        w[1] = clt__matmul_row_sums("clt_backward", dense, b, &sums[1]);
    if (w[1])
        w[2] = clt__matmul_row_sums("clt_backward", strided, half, &sums[2]);
    bool ok = w[2] != NULL;
    for (int k = 0; ok && k < 3; k++) { /* exact: halves and ones */
        double want = k < 2 ? 2050 : 1025;
        double *v = values_unfaulted(sums[k]), *p = values_unfaulted(w[k]);
        for (int i = 0; i < 3; i++)
            ck_assert_double_eq(v[i], want);
        for (int i = 0; i < 6; i++)
            ck_assert_double_eq(p[i], want);
        free(v), free(p);
    }
    for (int k = 0; k < 3; k++) /* a product only with its sums */
        ck_assert((w[k] == NULL) == (sums[k] == NULL));
    clt_tensor *all[] = {a, at, dense, strided, b, half, sums[0], sums[1], sums[2], w[0], w[1],
                         w[2]};
    TEST_RELEASE_ALL(all);
    return ok;
}

START_TEST(test_fault_row_sums)
{
    clt_device *dev = test_device(_i);
    both_kinds(row_sums, NULL, NULL, dev, dev);
}
END_TEST

Suite *suite_fault(void)
{
    Suite *s = suite_create("fault");
    TCase *tc = test_case("fault", 600);
    ADD_DEVICE_TEST(tc, test_fault_tensor_to);
    ADD_DEVICE_TEST(tc, test_fault_module_to);
    ADD_DEVICE_TEST(tc, test_fault_train_step);
    ADD_DEVICE_TEST(tc, test_fault_conv_train_step);
    ADD_DEVICE_TEST(tc, test_fault_batch_norm);
    ADD_DEVICE_TEST(tc, test_fault_loader_epoch);
    ADD_DEVICE_TEST(tc, test_fault_save_load);
    ADD_DEVICE_TEST(tc, test_fault_async_copies);
    ADD_DEVICE_TEST(tc, test_fault_grad_state);
    tcase_add_test(tc, test_fault_module_format);
    ADD_DEVICE_TEST(tc, test_fault_row_ops);
    ADD_DEVICE_TEST(tc, test_fault_row_sums);
    suite_add_tcase(s, tc);
    return s;
}
