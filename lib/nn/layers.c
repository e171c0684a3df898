/* The built-in layers but for the activations (activations.c): Linear, Flatten, Dropout,
 * Sequential, Conv2d, ConvTranspose2d, Upsample, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
 * BatchNorm, LayerNorm and Embedding, with PyTorch's default initialisation drawn from the
 * default generator. */
#include <math.h>
#include <stdio.h>

#include "cltensor/nn.h"
#include "core/core.h"
#include "nn/module_internal.h"
#include "ops/ops_internal.h"

/* ---- activations fused into the layer before them ------------------------------------------- */

int clt__sequential_fuse = 1;

/* The activation a Sequential fuses into the Linear or Conv2d it is about to run, which takes
 * it (clt__linear_act, clt__conv2d_act) in place of running the activation module after it: set
 * for that one layer's clt_module_forward, on the thread that runs it. */
static _Thread_local struct {
    const clt_module *layer;
    clt__act act;
} fused;

/* The activation fused into self's forward, if any; taken once. */
static clt__act take_fused(const clt_module *self)
{
    clt__act act = fused.layer == self ? fused.act : CLT__ACT_NONE;
    fused.layer = NULL;
    return act;
}

/* ---- Linear ---------------------------------------------------------------------------------------- */

typedef struct linear {
    clt_module base;
    clt_tensor *weight, *bias; /* registered: "weight", "bias" (or NULL) */
} linear;

static clt_tensor *linear_forward(clt_module *self, clt_tensor *x)
{
    linear *l = (linear *)self;
    return clt__linear_act(x, l->weight, l->bias, take_fused(self));
}

static int linear_repr(const clt_module *self, char *buf, size_t size)
{
    const linear *l = (const linear *)self;
    return snprintf(buf, size, "in_features=%lld, out_features=%lld, bias=%s",
                    (long long)clt_tensor_size(l->weight, 1),
                    (long long)clt_tensor_size(l->weight, 0), l->bias ? "True" : "False");
}

static const clt_module_type linear_type = {.name = "Linear",
                                            .size = sizeof(linear),
                                            .forward = linear_forward,
                                            .extra_repr = linear_repr};

/* Uniform on [-bound, bound) on cpu, from the default generator. */
static clt_tensor *uniform(const char *fn, int ndim, const int64_t *shape, double bound)
{
    clt_tensor *r = clt_tensor_rand(ndim, shape, CLT_F32, clt_device_cpu());
    clt_tensor *s = r ? clt_mul_scalar(r, 2 * bound) : NULL;
    clt_tensor *u = s ? clt_sub_scalar(s, bound) : NULL;
    if (!u)
        clt__rename_error(fn);
    clt_tensor_release(s);
    clt_tensor_release(r);
    return u;
}

clt_module *clt_nn_linear(int64_t in_features, int64_t out_features, bool bias)
{
    static const char *const fn = "clt_nn_linear";
    clt_module *m;
    linear *l;
    double bound;
    if (in_features <= 0 || out_features <= 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "in_features %lld and out_features %lld must be positive",
                   (long long)in_features, (long long)out_features);
        return NULL;
    }
    m = clt_module_new(&linear_type);
    if (!m)
        return NULL;
    l = (linear *)m;
    /* PyTorch: kaiming_uniform_(a=sqrt(5)) for the weight and U(+-1/sqrt(in)) for the bias,
     * both bounds 1/sqrt(in_features) */
    bound = 1.0 / sqrt((double)in_features);
    l->weight = uniform(fn, 2, (int64_t[]){out_features, in_features}, bound);
    l->bias = l->weight && bias ? uniform(fn, 1, &out_features, bound) : NULL;
    if (!l->weight || (bias && !l->bias) ||
        clt_module_register_parameter(m, "weight", l->weight) != CLT_OK ||
        (bias && clt_module_register_parameter(m, "bias", l->bias) != CLT_OK)) {
        clt_tensor_release(l->weight);
        clt_tensor_release(l->bias);
        l->weight = l->bias = NULL;
        clt_module_release(m);
        return NULL;
    }
    /* the module holds its references; the fields borrow them */
    clt_tensor_release(l->weight);
    clt_tensor_release(l->bias);
    return m;
}

/* ---- Flatten and Dropout -------------------------------------------------------------------- */

typedef struct dropout {
    clt_module base;
    double p;
} dropout;

static clt_tensor *dropout_forward(clt_module *self, clt_tensor *x)
{
    return clt_dropout(x, ((dropout *)self)->p, clt_module_is_training(self));
}

static clt_tensor *flatten_forward(clt_module *self, clt_tensor *x)
{
    (void)self;
    if (clt_tensor_ndim(x) <= 1)
        return clt_tensor_retain(x);
    return clt_reshape(x, CLT_SHAPE(clt_tensor_size(x, 0), -1));
}

static int flatten_repr(const clt_module *self, char *buf, size_t size)
{
    (void)self;
    return snprintf(buf, size, "start_dim=1, end_dim=-1");
}

static int dropout_repr(const clt_module *self, char *buf, size_t size)
{
    char p[32];
    clt__format_py_float(p, sizeof p, ((const dropout *)self)->p);
    return snprintf(buf, size, "p=%s, inplace=False", p);
}

static const clt_module_type flatten_type = {.name = "Flatten",
                                             .size = sizeof(clt_module),
                                             .forward = flatten_forward,
                                             .extra_repr = flatten_repr};
static const clt_module_type dropout_type = {.name = "Dropout",
                                             .size = sizeof(dropout),
                                             .forward = dropout_forward,
                                             .extra_repr = dropout_repr};

clt_module *clt_nn_flatten(void) { return clt_module_new(&flatten_type); }

clt_module *clt_nn_dropout(double p)
{
    clt_module *m;
    if (!(p >= 0 && p <= 1)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_nn_dropout", "probability %g is outside 0..1", p);
        return NULL;
    }
    m = clt_module_new(&dropout_type);
    if (m)
        ((dropout *)m)->p = p;
    return m;
}

/* ---- Sequential ------------------------------------------------------------------------------------------ */

typedef struct sequential {
    clt_module base;
    int n;
} sequential;

static const clt_module_type conv2d_type;

/* Child i of a Sequential. */
static clt_module *sequential_child(clt_module *self, int i)
{
    char name[16];
    snprintf(name, sizeof name, "%d", i);
    return clt_module_get_child(self, name);
}

/* A Linear or Conv2d followed by a ReLU runs as one operation with the ReLU in its product's
 * epilogue (nothing outside the Sequential sees the layer's own output); the ReLU module is
 * then not called. */
static clt_tensor *sequential_forward(clt_module *self, clt_tensor *x)
{
    clt_tensor *y = clt_tensor_retain(x);
    int n = ((sequential *)self)->n;
    for (int i = 0; i < n && y; i++) {
        clt_module *m = sequential_child(self, i);
        clt_module *after = i + 1 < n ? sequential_child(self, i + 1) : NULL;
        bool fuse = clt__sequential_fuse && after && clt__module_is_relu(after) &&
                    (m->type == &linear_type || m->type == &conv2d_type);
        if (fuse)
            fused.layer = m, fused.act = CLT__ACT_RELU, i++;
        clt_tensor *next = clt_module_forward(m, y);
        fused.layer = NULL;
        clt_tensor_release(y);
        y = next;
    }
    return y;
}

static const clt_module_type sequential_type = {.name = "Sequential",
                                                .size = sizeof(sequential),
                                                .forward = sequential_forward};

clt_module *clt_nn_sequential(clt_module *const *modules, int n)
{
    static const char *const fn = "clt_nn_sequential";
    clt_module *m;
    if (n < 0 || (n > 0 && !modules)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%d modules from %p", n, (const void *)modules);
        return NULL;
    }
    m = clt_module_new(&sequential_type);
    for (int i = 0; m && i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "%d", i);
        if (clt_module_register_module(m, name, modules[i]) != CLT_OK) {
            clt__rename_error(fn);
            clt_module_release(m);
            return NULL;
        }
        ((sequential *)m)->n = i + 1;
    }
    return m;
}

clt_module *clt_nn_sequential_take(clt_module *const *modules, int n)
{
    static const char *const fn = "clt_nn_sequential_take";
    clt_module *m = NULL;
    if (n < 0 || (n > 0 && !modules)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%d modules from %p", n, (const void *)modules);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!modules[i]) { /* its creation failed: say so, with the error it left */
            char what[32];
            snprintf(what, sizeof what, "module %d", i);
            clt__error_null_taken(fn, what);
            goto release;
        }
    }
    if (!(m = clt_nn_sequential(modules, n)))
        clt__rename_error(fn);
release:
    for (int i = 0; i < n; i++)
        clt_module_release(modules[i]);
    return m;
}

/* ---- shared by the layers with parameters and buffers ------------------------------------------------ */

/* Registers ts[0..n_params) as parameters and ts[n_params..n) as buffers of m under names[i].
 * The caller's references are dropped either way (on success the module holds its own). False
 * with the last error set, renamed to fn, when a tensor is NULL (its creation failed) or a
 * registration failed; the caller then releases m. */
static bool adopt(clt_module *m, const char *fn, int n, int n_params, const char *const *names,
                  clt_tensor *const *ts)
{
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
        ok = ts[i] && (i < n_params ? clt_module_register_parameter(m, names[i], ts[i])
                                    : clt_module_register_buffer(m, names[i], ts[i])) == CLT_OK;
    if (!ok)
        clt__rename_error(fn);
    for (int i = 0; i < n; i++)
        clt_tensor_release(ts[i]);
    return ok;
}

/* ---- Conv2d --------------------------------------------------------------------------------------------- */

typedef struct conv2d {
    clt_module base;
    clt_tensor *weight, *bias; /* registered: "weight", "bias" (or NULL) */
    clt_conv2d_options options;
} conv2d;

static clt_tensor *conv2d_forward(clt_module *self, clt_tensor *x)
{
    conv2d *c = (conv2d *)self;
    return clt__conv2d_act(x, c->weight, c->bias, &c->options, take_fused(self));
}

/* Appends to a fixed buffer (the settings of one layer are far shorter than it). */
#define REPR_ADD(text, used, ...)                                                              \
    ((used) += snprintf((text) + (used), sizeof(text) - (size_t)(used), __VA_ARGS__))

/* PyTorch's Conv2d.extra_repr: channels, kernel and stride, then what differs from the default. */
static int conv2d_repr(const clt_module *self, char *buf, size_t size)
{
    const conv2d *c = (const conv2d *)self;
    const clt_conv2d_options *o = &c->options;
    int groups = o->groups ? o->groups : 1, n = 0;
    char text[512];
    REPR_ADD(text, n, "%lld, %lld, kernel_size=(%lld, %lld), stride=(%d, %d)",
             (long long)clt_tensor_size(c->weight, 1) * groups,
             (long long)clt_tensor_size(c->weight, 0), (long long)clt_tensor_size(c->weight, 2),
             (long long)clt_tensor_size(c->weight, 3), o->stride[0] ? o->stride[0] : 1,
             o->stride[1] ? o->stride[1] : 1);
    if (o->padding[0] || o->padding[1])
        REPR_ADD(text, n, ", padding=(%d, %d)", o->padding[0], o->padding[1]);
    if ((o->dilation[0] ? o->dilation[0] : 1) != 1 || (o->dilation[1] ? o->dilation[1] : 1) != 1)
        REPR_ADD(text, n, ", dilation=(%d, %d)", o->dilation[0], o->dilation[1]);
    if (groups != 1)
        REPR_ADD(text, n, ", groups=%d", groups);
    if (!c->bias)
        REPR_ADD(text, n, ", bias=False");
    return snprintf(buf, size, "%s", text);
}

static const clt_module_type conv2d_type = {.name = "Conv2d",
                                            .size = sizeof(conv2d),
                                            .forward = conv2d_forward,
                                            .extra_repr = conv2d_repr};

clt_module *clt_nn_conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_h, int64_t kernel_w,
                          const clt_conv2d_options *options, bool bias)
{
    static const char *const fn = "clt_nn_conv2d";
    static const char *const names[] = {"weight", "bias"};
    clt_conv2d_options o = {.groups = 0};
    int64_t groups;
    clt_module *m;
    clt_tensor *ts[2];
    double bound;
    if (options)
        o = *options;
    groups = o.groups ? o.groups : 1;
    if (in_channels <= 0 || out_channels <= 0 || kernel_h <= 0 || kernel_w <= 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "in_channels %lld, out_channels %lld and kernel %lldx%lld must be positive",
                   (long long)in_channels, (long long)out_channels, (long long)kernel_h, (long long)kernel_w);
        return NULL;
    }
    if (groups < 0 || in_channels % groups || out_channels % groups) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "in_channels %lld and out_channels %lld must be divisible by groups %lld",
                   (long long)in_channels, (long long)out_channels, (long long)groups);
        return NULL;
    }
    for (int i = 0; i < 2; i++)
        if (o.stride[i] < 0 || o.padding[i] < 0 || o.dilation[i] < 0) {
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "stride %d, padding %d and dilation %d must not be negative",
                       o.stride[i], o.padding[i], o.dilation[i]);
            return NULL;
        }
    m = clt_module_new(&conv2d_type);
    if (!m)
        return NULL;
    /* PyTorch: kaiming_uniform_(a=sqrt(5)) for the weight and U(+-1/sqrt(fan_in)) for the bias,
     * both bounds 1/sqrt(fan_in) with fan_in = in_channels / groups * kh * kw */
    bound = 1.0 / sqrt((double)(in_channels / groups * kernel_h * kernel_w));
    ts[0] = uniform(fn, 4, (int64_t[]){out_channels, in_channels / groups, kernel_h, kernel_w}, bound);
    ts[1] = ts[0] && bias ? uniform(fn, 1, &out_channels, bound) : NULL;
    if (!adopt(m, fn, bias ? 2 : 1, 2, names, ts)) {
        clt_module_release(m);
        return NULL;
    }
    /* the module holds the references; the fields borrow them */
    ((conv2d *)m)->weight = ts[0];
    ((conv2d *)m)->bias = ts[1];
    ((conv2d *)m)->options = o;
    return m;
}

/* ---- ConvTranspose2d and Upsample ------------------------------------------------------------ */

typedef struct conv_transpose2d {
    clt_module base;
    clt_tensor *weight, *bias; /* registered: "weight", "bias" (or NULL) */
    clt_conv_transpose2d_options options;
} conv_transpose2d;

static clt_tensor *conv_transpose2d_forward(clt_module *self, clt_tensor *x)
{
    conv_transpose2d *c = (conv_transpose2d *)self;
    return clt_conv_transpose2d(x, c->weight, c->bias, &c->options);
}

/* PyTorch's ConvTranspose2d.extra_repr: channels, kernel and stride, then what differs. */
static int conv_transpose2d_repr(const clt_module *self, char *buf, size_t size)
{
    const conv_transpose2d *c = (const conv_transpose2d *)self;
    const clt_conv_transpose2d_options *o = &c->options;
    int n = 0;
    char text[512];
    REPR_ADD(text, n, "%lld, %lld, kernel_size=(%lld, %lld), stride=(%d, %d)",
             (long long)clt_tensor_size(c->weight, 0),
             (long long)clt_tensor_size(c->weight, 1) * o->groups,
             (long long)clt_tensor_size(c->weight, 2), (long long)clt_tensor_size(c->weight, 3),
             o->stride[0], o->stride[1]);
    if (o->padding[0] || o->padding[1])
        REPR_ADD(text, n, ", padding=(%d, %d)", o->padding[0], o->padding[1]);
    if (o->dilation[0] != 1 || o->dilation[1] != 1)
        REPR_ADD(text, n, ", dilation=(%d, %d)", o->dilation[0], o->dilation[1]);
    if (o->output_padding[0] || o->output_padding[1])
        REPR_ADD(text, n, ", output_padding=(%d, %d)", o->output_padding[0],
                 o->output_padding[1]);
    if (o->groups != 1)
        REPR_ADD(text, n, ", groups=%d", o->groups);
    if (!c->bias)
        REPR_ADD(text, n, ", bias=False");
    return snprintf(buf, size, "%s", text);
}

static const clt_module_type conv_transpose2d_type = {.name = "ConvTranspose2d",
                                                      .size = sizeof(conv_transpose2d),
                                                      .forward = conv_transpose2d_forward,
                                                      .extra_repr = conv_transpose2d_repr};

clt_module *clt_nn_conv_transpose2d(int64_t in_channels, int64_t out_channels, int64_t kernel_h,
                                    int64_t kernel_w,
                                    const clt_conv_transpose2d_options *options, bool bias)
{
    static const char *const fn = "clt_nn_conv_transpose2d";
    static const char *const names[] = {"weight", "bias"};
    clt_conv_transpose2d_options o = options ? *options : clt_conv_transpose2d_options_default();
    clt_tensor *ts[2];
    int64_t g = o.groups;
    bool ok = clt__conv_transpose2d_options_ok(&o) && in_channels > 0 && out_channels > 0 &&
              kernel_h > 0 && kernel_w > 0 && in_channels % g == 0 && out_channels % g == 0;
    if (!ok) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "in_channels %lld, out_channels %lld (both divisible by groups %lld) and kernel "
                   "%lldx%lld must be positive, strides and dilations >= 1, paddings >= 0 and "
                   "output paddings below the stride or the dilation",
                   (long long)in_channels, (long long)out_channels, (long long)g,
                   (long long)kernel_h, (long long)kernel_w);
        return NULL;
    }
    clt_module *m = clt_module_new(&conv_transpose2d_type);
    if (!m)
        return NULL;
    /* PyTorch: both bounds 1/sqrt(fan_in), fan_in = weight.size(1) * kh * kw, the weight
     * (in_channels, out_channels / groups, kh, kw) */
    double bound = 1.0 / sqrt((double)(out_channels / g * kernel_h * kernel_w));
    ts[0] =
        uniform(fn, 4, (int64_t[]){in_channels, out_channels / g, kernel_h, kernel_w}, bound);
    ts[1] = ts[0] && bias ? uniform(fn, 1, &out_channels, bound) : NULL;
    if (!adopt(m, fn, bias ? 2 : 1, 2, names, ts)) {
        clt_module_release(m);
        return NULL;
    }
    conv_transpose2d *c = (conv_transpose2d *)m;
    c->weight = ts[0], c->bias = ts[1], c->options = o;
    return m;
}

typedef struct upsample {
    clt_module base;
    int scale;
    clt_interpolate_mode mode;
    bool align_corners;
} upsample;

static clt_tensor *upsample_forward(clt_module *self, clt_tensor *x)
{
    const upsample *u = (const upsample *)self;
    int nd = clt_tensor_ndim(x);
    if (nd != 3 && nd != 4)
        return clt_interpolate2d(x, 1, 1, u->mode, u->align_corners); /* its error */
    return clt_interpolate2d(x, clt_tensor_size(x, nd - 2) * u->scale,
                             clt_tensor_size(x, nd - 1) * u->scale, u->mode, u->align_corners);
}

static int upsample_repr(const clt_module *self, char *buf, size_t size)
{
    const upsample *u = (const upsample *)self; /* PyTorch's leaves align_corners out */
    return snprintf(buf, size, "scale_factor=%d.0, mode='%s'", u->scale,
                    u->mode == CLT_INTERPOLATE_NEAREST ? "nearest" : "bilinear");
}

static const clt_module_type upsample_type = {.name = "Upsample",
                                              .size = sizeof(upsample),
                                              .forward = upsample_forward,
                                              .extra_repr = upsample_repr};

clt_module *clt_nn_upsample(int scale_factor, clt_interpolate_mode mode, bool align_corners)
{
    if (scale_factor < 1 ||
        (mode != CLT_INTERPOLATE_NEAREST && mode != CLT_INTERPOLATE_BILINEAR)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_nn_upsample",
                   "scale_factor %d must be positive and the mode nearest or bilinear (got %d)",
                   scale_factor, (int)mode);
        return NULL;
    }
    clt_module *m = clt_module_new(&upsample_type);
    if (m) {
        upsample *u = (upsample *)m;
        u->scale = scale_factor, u->mode = mode, u->align_corners = align_corners;
    }
    return m;
}

/* ---- MaxPool2d and AvgPool2d ------------------------------------------------------------------------------ */

typedef struct pool2d {
    clt_module base;
    clt_pool2d_options options;
} pool2d;

static clt_tensor *max_pool2d_forward(clt_module *self, clt_tensor *x)
{
    return clt_max_pool2d(x, &((pool2d *)self)->options, NULL);
}

static clt_tensor *avg_pool2d_forward(clt_module *self, clt_tensor *x)
{
    return clt_avg_pool2d(x, &((pool2d *)self)->options);
}

/* One pooling setting as PyTorch shows it: "3" when both sides agree, else "(3, 2)". */
static int pool_pair(char *buf, size_t size, const char *name, const int v[2])
{
    return v[0] == v[1] ? snprintf(buf, size, "%s=%d", name, v[0])
                        : snprintf(buf, size, "%s=(%d, %d)", name, v[0], v[1]);
}

static int pool2d_repr(const clt_module *self, char *buf, size_t size, bool is_max)
{
    const clt_pool2d_options *o = &((const pool2d *)self)->options;
    int stride[2] = {o->stride[0] ? o->stride[0] : o->kernel[0],
                     o->stride[1] ? o->stride[1] : o->kernel[1]};
    int dilation[2] = {o->dilation[0] ? o->dilation[0] : 1, o->dilation[1] ? o->dilation[1] : 1};
    char k[48], s[48], p[48], d[48];
    pool_pair(k, sizeof k, "kernel_size", o->kernel);
    pool_pair(s, sizeof s, "stride", stride);
    pool_pair(p, sizeof p, "padding", o->padding);
    pool_pair(d, sizeof d, "dilation", dilation);
    if (is_max)
        return snprintf(buf, size, "%s, %s, %s, %s, ceil_mode=%s", k, s, p, d,
                        o->ceil_mode ? "True" : "False");
    return snprintf(buf, size, "%s, %s, %s", k, s, p);
}

static int max_pool2d_repr(const clt_module *self, char *buf, size_t size)
{
    return pool2d_repr(self, buf, size, true);
}

static int avg_pool2d_repr(const clt_module *self, char *buf, size_t size)
{
    return pool2d_repr(self, buf, size, false);
}

static const clt_module_type max_pool2d_type = {.name = "MaxPool2d",
                                                .size = sizeof(pool2d),
                                                .forward = max_pool2d_forward,
                                                .extra_repr = max_pool2d_repr};
static const clt_module_type avg_pool2d_type = {.name = "AvgPool2d",
                                                .size = sizeof(pool2d),
                                                .forward = avg_pool2d_forward,
                                                .extra_repr = avg_pool2d_repr};

static clt_module *pool2d_new(const char *fn, const clt_module_type *type, const clt_pool2d_options *options)
{
    clt_module *m;
    if (!options) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "options (with the kernel size) are required");
        return NULL;
    }
    for (int i = 0; i < 2; i++)
        if (options->kernel[i] <= 0 || options->stride[i] < 0 || options->padding[i] < 0 ||
            options->dilation[i] < 0) {
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                       "kernel %dx%d must be positive and stride %dx%d, padding %dx%d, dilation %dx%d "
                       "not negative",
                       options->kernel[0], options->kernel[1], options->stride[0], options->stride[1],
                       options->padding[0], options->padding[1], options->dilation[0], options->dilation[1]);
            return NULL;
        }
    m = clt_module_new(type);
    if (m)
        ((pool2d *)m)->options = *options;
    return m;
}

clt_module *clt_nn_max_pool2d(const clt_pool2d_options *options)
{
    return pool2d_new("clt_nn_max_pool2d", &max_pool2d_type, options);
}

clt_module *clt_nn_avg_pool2d(const clt_pool2d_options *options)
{
    return pool2d_new("clt_nn_avg_pool2d", &avg_pool2d_type, options);
}

typedef struct adaptive_pool {
    clt_module base;
    int out_h, out_w;
} adaptive_pool;

static clt_tensor *adaptive_avg_pool2d_forward(clt_module *self, clt_tensor *x)
{
    adaptive_pool *p = (adaptive_pool *)self;
    return clt_adaptive_avg_pool2d(x, p->out_h, p->out_w);
}

static int adaptive_repr(const clt_module *self, char *buf, size_t size)
{
    const adaptive_pool *p = (const adaptive_pool *)self;
    return snprintf(buf, size, "output_size=(%d, %d)", p->out_h, p->out_w);
}

static const clt_module_type adaptive_avg_pool2d_type = {.name = "AdaptiveAvgPool2d",
                                                         .size = sizeof(adaptive_pool),
                                                         .forward = adaptive_avg_pool2d_forward,
                                                         .extra_repr = adaptive_repr};

clt_module *clt_nn_adaptive_avg_pool2d(int out_h, int out_w)
{
    clt_module *m;
    if (out_h < 1 || out_w < 1) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_nn_adaptive_avg_pool2d",
                   "output size %dx%d must be positive", out_h, out_w);
        return NULL;
    }
    if ((m = clt_module_new(&adaptive_avg_pool2d_type)))
        ((adaptive_pool *)m)->out_h = out_h, ((adaptive_pool *)m)->out_w = out_w;
    return m;
}

/* ---- BatchNorm ------------------------------------------------------------------------------------------------ */

typedef struct batch_norm {
    clt_module base;
    /* registered: parameters "weight", "bias"; buffers "running_mean", "running_var",
     * "num_batches_tracked" */
    clt_tensor *weight, *bias, *running_mean, *running_var, *num_batches_tracked;
    double eps, momentum;
} batch_norm;

static clt_tensor *batch_norm_forward(clt_module *self, clt_tensor *x)
{
    batch_norm *b = (batch_norm *)self;
    bool training = clt_module_is_training(self);
    /* made first, so that no allocation fails once the running statistics have changed */
    clt_tensor *one = training ? clt_tensor_ones(0, NULL, CLT_I64,
                                                 clt_tensor_device(b->num_batches_tracked))
                               : NULL;
    clt_tensor *y = NULL;
    if (training && !one)
        return NULL;
    y = clt_batch_norm(x, b->running_mean, b->running_var, b->weight, b->bias, training,
                       b->momentum, b->eps);
    if (y && training && clt_add_(b->num_batches_tracked, one) != CLT_OK) {
        clt__rename_error("clt_module_forward");
        clt_tensor_release(y);
        y = NULL;
    }
    clt_tensor_release(one);
    return y;
}

static int batch_norm_repr(const clt_module *self, char *buf, size_t size)
{
    const batch_norm *b = (const batch_norm *)self;
    char eps[32], momentum[32];
    clt__format_py_float(eps, sizeof eps, b->eps);
    clt__format_py_float(momentum, sizeof momentum, b->momentum);
    return snprintf(buf, size,
                    "%lld, eps=%s, momentum=%s, affine=True, track_running_stats=True",
                    (long long)clt_tensor_size(b->weight, 0), eps, momentum);
}

static const clt_module_type batch_norm_type = {.name = "BatchNorm",
                                                .size = sizeof(batch_norm),
                                                .forward = batch_norm_forward,
                                                .extra_repr = batch_norm_repr};

clt_module *clt_nn_batch_norm(int64_t num_features, double eps, double momentum)
{
    static const char *const fn = "clt_nn_batch_norm";
    static const char *const names[] = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
    clt_device *cpu = clt_device_cpu();
    clt_module *m;
    clt_tensor *ts[5];
    if (num_features <= 0 || !(eps >= 0) || !(momentum >= 0 && momentum <= 1)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "num_features %lld must be positive, eps %g not negative and momentum %g within 0..1",
                   (long long)num_features, eps, momentum);
        return NULL;
    }
    m = clt_module_new(&batch_norm_type);
    if (!m)
        return NULL;
    ts[0] = clt_tensor_ones(1, &num_features, CLT_F32, cpu);
    ts[1] = clt_tensor_zeros(1, &num_features, CLT_F32, cpu);
    ts[2] = clt_tensor_zeros(1, &num_features, CLT_F32, cpu);
    ts[3] = clt_tensor_ones(1, &num_features, CLT_F32, cpu);
    ts[4] = clt_tensor_zeros(0, NULL, CLT_I64, cpu);
    if (!adopt(m, fn, 5, 2, names, ts)) {
        clt_module_release(m);
        return NULL;
    }
    batch_norm *b = (batch_norm *)m;
    b->weight = ts[0], b->bias = ts[1], b->running_mean = ts[2], b->running_var = ts[3];
    b->num_batches_tracked = ts[4];
    b->eps = eps, b->momentum = momentum;
    return m;
}

/* ---- LayerNorm ---------------------------------------------------------------------------------------------- */

typedef struct layer_norm {
    clt_module base;
    clt_tensor *weight, *bias; /* registered: "weight", "bias" */
    int normalized_ndim;
    double eps;
} layer_norm;

static clt_tensor *layer_norm_forward(clt_module *self, clt_tensor *x)
{
    layer_norm *l = (layer_norm *)self;
    return clt_layer_norm(x, l->normalized_ndim, l->weight, l->bias, l->eps);
}

/* "(768,), eps=1e-05, elementwise_affine=True": the shape as a Python tuple. */
static int layer_norm_repr(const clt_module *self, char *buf, size_t size)
{
    const layer_norm *l = (const layer_norm *)self;
    char text[512], eps[32];
    int n = 0;
    clt__format_py_float(eps, sizeof eps, l->eps);
    REPR_ADD(text, n, "(");
    for (int i = 0; i < l->normalized_ndim; i++)
        REPR_ADD(text, n, i ? ", %lld" : "%lld", (long long)clt_tensor_size(l->weight, i));
    REPR_ADD(text, n, "%s), eps=%s, elementwise_affine=True",
             l->normalized_ndim == 1 ? "," : "", eps);
    return snprintf(buf, size, "%s", text);
}

static const clt_module_type layer_norm_type = {.name = "LayerNorm",
                                                .size = sizeof(layer_norm),
                                                .forward = layer_norm_forward,
                                                .extra_repr = layer_norm_repr};

clt_module *clt_nn_layer_norm(int normalized_ndim, const int64_t *normalized_shape, double eps)
{
    static const char *const fn = "clt_nn_layer_norm";
    static const char *const names[] = {"weight", "bias"};
    clt_module *m;
    clt_tensor *ts[2];
    if (normalized_ndim < 1 || normalized_ndim > CLT_MAX_DIMS || !normalized_shape) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "normalized_ndim %d must be within 1..%d, with a shape from %p",
                   normalized_ndim, CLT_MAX_DIMS, (const void *)normalized_shape);
        return NULL;
    }
    for (int i = 0; i < normalized_ndim; i++)
        if (normalized_shape[i] <= 0) {
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "normalized_shape[%d] = %lld must be positive", i,
                       (long long)normalized_shape[i]);
            return NULL;
        }
    if (!(eps >= 0)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "eps %g must not be negative", eps);
        return NULL;
    }
    m = clt_module_new(&layer_norm_type);
    if (!m)
        return NULL;
    ts[0] = clt_tensor_ones(normalized_ndim, normalized_shape, CLT_F32, clt_device_cpu());
    ts[1] = clt_tensor_zeros(normalized_ndim, normalized_shape, CLT_F32, clt_device_cpu());
    if (!adopt(m, fn, 2, 2, names, ts)) {
        clt_module_release(m);
        return NULL;
    }
    layer_norm *l = (layer_norm *)m;
    l->weight = ts[0], l->bias = ts[1];
    l->normalized_ndim = normalized_ndim, l->eps = eps;
    return m;
}

/* ---- Embedding ---------------------------------------------------------------------------------------------- */

typedef struct embedding {
    clt_module base;
    clt_tensor *weight; /* registered: "weight" */
} embedding;

static clt_tensor *embedding_forward(clt_module *self, clt_tensor *x)
{
    return clt_embedding(x, ((embedding *)self)->weight);
}

static int embedding_repr(const clt_module *self, char *buf, size_t size)
{
    const clt_tensor *w = ((const embedding *)self)->weight;
    return snprintf(buf, size, "%lld, %lld", (long long)clt_tensor_size(w, 0),
                    (long long)clt_tensor_size(w, 1));
}

static const clt_module_type embedding_type = {.name = "Embedding",
                                               .size = sizeof(embedding),
                                               .forward = embedding_forward,
                                               .extra_repr = embedding_repr};

clt_module *clt_nn_embedding(int64_t num_embeddings, int64_t embedding_dim)
{
    static const char *const fn = "clt_nn_embedding";
    static const char *const names[] = {"weight"};
    clt_module *m;
    clt_tensor *ts[1];
    if (num_embeddings <= 0 || embedding_dim <= 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "num_embeddings %lld and embedding_dim %lld must be positive",
                   (long long)num_embeddings, (long long)embedding_dim);
        return NULL;
    }
    m = clt_module_new(&embedding_type);
    if (!m)
        return NULL;
    ts[0] = clt_tensor_randn(2, (int64_t[]){num_embeddings, embedding_dim}, CLT_F32, clt_device_cpu());
    if (!adopt(m, fn, 1, 1, names, ts)) {
        clt_module_release(m);
        return NULL;
    }
    ((embedding *)m)->weight = ts[0];
    return m;
}
