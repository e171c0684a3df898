/* MobileNetV2 as torchvision builds it (see cltensor/models/mobilenet.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include <cltensor/models/mobilenet.h>

/* torchvision's _make_divisible(v, 8) into *out: the nearest multiple of 8, at least 8, and not
 * below 90% of v; false, converting nothing, when v (positive) is more channels than an int
 * holds. */
static bool divisible(double v, int64_t *out)
{
    if (!(v <= INT_MAX - 16)) /* the rounding below adds at most 12 */
        return false;
    int64_t r = (int64_t)(v + 4) / 8 * 8;
    r = r < 8 ? 8 : r;
    *out = (double)r < 0.9 * v ? r + 8 : r;
    return true;
}

/* Conv2dNormActivation: a convolution without bias, BatchNorm and (if relu6) ReLU6. */
static clt_module *conv_bn(int64_t in, int64_t out, int k, int stride, int groups, bool relu6)
{
    clt_conv2d_options o = clt_conv2d_options_default();
    o.stride[0] = o.stride[1] = stride;
    o.padding[0] = o.padding[1] = (k - 1) / 2;
    o.groups = groups;
    clt_module *conv = clt_nn_conv2d(in, out, k, k, &o, false);
    clt_module *bn = clt_nn_batch_norm(out, 1e-5, 0.1);
    if (!relu6)
        return CLT_SEQUENTIAL(conv, bn);
    return CLT_SEQUENTIAL(conv, bn, clt_nn_relu6());
}

/* ---- InvertedResidual: expand (1x1), depthwise (3x3), project (1x1, linear) --------------- */

typedef struct inverted_residual {
    clt_module base;
    clt_module *conv; /* the registered Sequential "conv" */
    bool residual;    /* stride 1 and as many channels out as in: + x */
} inverted_residual;

static clt_tensor *block_forward(clt_module *self, clt_tensor *x)
{
    inverted_residual *b = (inverted_residual *)self;
    clt_tensor *y = clt_module_forward(b->conv, x);
    if (!y || !b->residual)
        return y;
    clt_tensor *sum = clt_add(x, y);
    clt_tensor_release(y);
    return sum;
}

static const clt_module_type block_type = {.name = "InvertedResidual",
                                           .size = sizeof(inverted_residual),
                                           .forward = block_forward};

/* conv.0 the expansion (when t > 1), then the depthwise conv, then the projection and its
 * BatchNorm as two entries of conv itself: torchvision's names. */
static clt_module *block_new(int64_t in, int64_t out, int stride, int t)
{
    int64_t hidden = in * t;
    clt_module *parts[4];
    int n = 0;
    if (t != 1)
        parts[n++] = conv_bn(in, hidden, 1, 1, 1, true);
    parts[n++] = conv_bn(hidden, hidden, 3, stride, (int)hidden, true);
    parts[n++] = clt_nn_conv2d(hidden, out, 1, 1, NULL, false);
    parts[n++] = clt_nn_batch_norm(out, 1e-5, 0.1);
    clt_module *conv = clt_nn_sequential_take(parts, n), *m = NULL;
    if (conv && !(m = clt_module_new(&block_type)))
        clt_module_release(conv);
    if (!m || clt_module_register_module_take(m, "conv", conv) != CLT_OK) {
        clt_module_release(m);
        return NULL;
    }
    inverted_residual *b = (inverted_residual *)m;
    b->conv = clt_module_get_child(m, "conv");
    b->residual = stride == 1 && in == out;
    return m;
}

/* ---- the network ------------------------------------------------------------------------- */

typedef struct mobilenet {
    clt_module base;
    clt_module *features, *classifier;
} mobilenet;

static clt_tensor *mobilenet_forward(clt_module *self, clt_tensor *x)
{
    mobilenet *m = (mobilenet *)self;
    clt_tensor *f = clt_module_forward(m->features, x);
    clt_tensor *p = f ? clt_adaptive_avg_pool2d(f, 1, 1) : NULL;
    clt_tensor *flat = p ? clt_reshape(p, CLT_SHAPE(clt_tensor_size(p, 0), -1)) : NULL;
    clt_tensor *y = flat ? clt_module_forward(m->classifier, flat) : NULL;
    clt_tensor_release(flat), clt_tensor_release(p), clt_tensor_release(f);
    return y;
}

static const clt_module_type mobilenet_type = {.name = "MobileNetV2",
                                               .size = sizeof(mobilenet),
                                               .forward = mobilenet_forward};

enum { MAX_BLOCKS = 64 };

/* One InvertedResidual: its channels in and out, stride and expansion t. */
typedef struct block_plan {
    int64_t in, out;
    int stride, t;
} block_plan;

/* What clt_mobilenet_v2_new builds: the channels out of the stem, out of the last block (the
 * stem's when there is none) and out of the last convolution, and the blocks. */
typedef struct plan {
    int64_t stem, body, last;
    int blocks;
    block_plan block[MAX_BLOCKS];
} plan;

/* Adds stage s's blocks (torchvision's t, c, n, s in `row`) to the plan, each value checked on
 * its own before it is used: CLT_OK, or the error naming clt_mobilenet_v2_new. */
static clt_status plan_stage(plan *p, int s, const int row[4], double width_mult)
{
    static const char *const names[4] = {"t", "c", "n", "s"};
    int64_t out;
    for (int i = 0; i < 4; i++)
        if (row[i] < (i == 2 ? 0 : 1))
            return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_mobilenet_v2_new",
                                 "stage %d: %s %d must be at least %d", s, names[i], row[i],
                                 i == 2 ? 0 : 1);
    if (row[2] > MAX_BLOCKS - p->blocks)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_mobilenet_v2_new",
                             "stage %d: n %d blocks after the %d of the stages before it are "
                             "more than %d",
                             s, row[2], p->blocks, MAX_BLOCKS);
    if (!divisible(row[1] * width_mult, &out))
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_mobilenet_v2_new",
                             "stage %d: c %d times width_mult %g is more channels than an int "
                             "holds",
                             s, row[1], width_mult);
    for (int i = 0; i < row[2]; i++, p->body = out) {
        if (p->body > INT_MAX / row[0]) /* the depthwise convolution's groups: an int */
            return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_mobilenet_v2_new",
                                 "stage %d: t %d times %lld channels in is more hidden channels "
                                 "than an int holds",
                                 s, row[0], (long long)p->body);
        p->block[p->blocks++] = (block_plan){p->body, out, i ? 1 : row[3], row[0]};
    }
    return CLT_OK;
}

/* CLT_OK when config c's own values can be built, else the error naming clt_mobilenet_v2_new
 * and the first value that cannot. */
static clt_status check_config(const clt_mobilenet_v2_config *c)
{
    const char *f = "clt_mobilenet_v2_new";
    if (!c)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f, "config is NULL");
    if (!(c->width_mult > 0 && isfinite(c->width_mult)))
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f,
                             "width_mult %g must be positive and finite", c->width_mult);
    if (c->num_classes < 1)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f, "num_classes %d must be positive",
                             c->num_classes);
    if (!(c->dropout >= 0 && c->dropout <= 1))
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f, "dropout %g must be from 0 to 1",
                             c->dropout);
    if (c->setting && c->stages < 1)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f,
                             "stages %d must be at least 1 with a setting", c->stages);
    return CLT_OK;
}

/* The plan of config c, every value checked before it is converted or used: CLT_OK, or the
 * error naming clt_mobilenet_v2_new. */
static clt_status plan_new(const clt_mobilenet_v2_config *c, plan *p)
{
    static const int v2[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    clt_status st = check_config(c);
    if (st != CLT_OK)
        return st;
    if (!divisible(32 * c->width_mult, &p->stem) ||
        !divisible(1280 * (c->width_mult > 1 ? c->width_mult : 1), &p->last))
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_mobilenet_v2_new",
                             "width_mult %g makes more channels than an int holds (1280 times "
                             "it in the last convolution)",
                             c->width_mult);
    p->body = p->stem;
    const int(*setting)[4] = c->setting ? c->setting : v2;
    int stages = c->setting ? c->stages : 7;
    for (int s = 0; st == CLT_OK && s < stages; s++)
        st = plan_stage(p, s, setting[s], c->width_mult);
    return st;
}

clt_module *clt_mobilenet_v2_new(const clt_mobilenet_v2_config *c)
{
    plan p = {.blocks = 0};
    clt_module *features[MAX_BLOCKS + 2], *m = NULL;
    if (plan_new(c, &p) != CLT_OK)
        return NULL;
    int n = 0;
    features[n++] = conv_bn(3, p.stem, 3, 2, 1, true);
    for (int i = 0; i < p.blocks; i++)
        features[n++] =
            block_new(p.block[i].in, p.block[i].out, p.block[i].stride, p.block[i].t);
    features[n++] = conv_bn(p.body, p.last, 1, 1, 1, true);
    clt_module *body = clt_nn_sequential_take(features, n);
    if (body && !(m = clt_module_new(&mobilenet_type)))
        clt_module_release(body);
    if (!body || !m || clt_module_register_module_take(m, "features", body) != CLT_OK ||
        clt_module_register_module_take(m, "classifier",
                                        CLT_SEQUENTIAL(clt_nn_dropout(c->dropout),
                                                       clt_nn_linear(p.last, c->num_classes,
                                                                     true))) != CLT_OK) {
        clt_module_release(m);
        return NULL;
    }
    mobilenet *net = (mobilenet *)m;
    net->features = clt_module_get_child(m, "features");
    net->classifier = clt_module_get_child(m, "classifier");
    return m;
}

clt_mobilenet_v2_config clt_mobilenet_v2_config_default(void)
{
    return (clt_mobilenet_v2_config){
        .width_mult = 1.0, .num_classes = 1000, .dropout = 0.2, .setting = NULL, .stages = 0};
}

clt_module *clt_mobilenet_v2(int num_classes)
{
    clt_mobilenet_v2_config c = clt_mobilenet_v2_config_default();
    c.num_classes = num_classes;
    return clt_mobilenet_v2_new(&c);
}
