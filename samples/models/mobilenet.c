/* MobileNetV2 as torchvision builds it (see mobilenet.h). */
#include <stdio.h>

#include "mobilenet.h"

/* torchvision's _make_divisible(v, 8): the nearest multiple of 8, at least 8, and not below
 * 90% of v. */
static int64_t divisible(double v)
{
    int64_t r = (int64_t)(v + 4) / 8 * 8;
    r = r < 8 ? 8 : r;
    return (double)r < 0.9 * v ? r + 8 : r;
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

static const clt_module_type block_type =
    {"InvertedResidual", sizeof(inverted_residual), block_forward, NULL, NULL, NULL};

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

static const clt_module_type mobilenet_type =
    {"MobileNetV2", sizeof(mobilenet), mobilenet_forward, NULL, NULL, NULL};

clt_module *mobilenet_v2_new(const mobilenet_config *c)
{
    static const int v2[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    enum { MAX_BLOCKS = 64 };
    clt_module *features[MAX_BLOCKS + 2] = {NULL}, *m = NULL;
    int n = 0, blocks = 0;
    if (!c || !(c->width_mult > 0) || c->num_classes < 1 || !(c->dropout >= 0 && c->dropout < 1))
        return NULL;
    const int(*setting)[4] = c->setting ? c->setting : v2;
    int stages = c->setting ? c->stages : 7;
    for (int s = 0; s < stages; s++)
        blocks += setting[s][2];
    if (stages < 1 || blocks > MAX_BLOCKS)
        return NULL;
    int64_t in = divisible(32 * c->width_mult);
    int64_t last = divisible(1280 * (c->width_mult > 1 ? c->width_mult : 1));
    features[n++] = conv_bn(3, in, 3, 2, 1, true);
    for (int s = 0; s < stages; s++) {
        int64_t out = divisible(setting[s][1] * c->width_mult);
        for (int i = 0; i < setting[s][2]; i++, in = out)
            features[n++] = block_new(in, out, i ? 1 : setting[s][3], setting[s][0]);
    }
    features[n++] = conv_bn(in, last, 1, 1, 1, true);
    clt_module *body = clt_nn_sequential_take(features, n);
    if (body && !(m = clt_module_new(&mobilenet_type)))
        clt_module_release(body);
    if (!body || !m || clt_module_register_module_take(m, "features", body) != CLT_OK ||
        clt_module_register_module_take(m, "classifier",
                                        CLT_SEQUENTIAL(clt_nn_dropout(c->dropout),
                                                       clt_nn_linear(last, c->num_classes,
                                                                     true))) != CLT_OK) {
        clt_module_release(m);
        return NULL;
    }
    mobilenet *net = (mobilenet *)m;
    net->features = clt_module_get_child(m, "features");
    net->classifier = clt_module_get_child(m, "classifier");
    return m;
}

clt_module *mobilenet_v2_default_new(int num_classes)
{
    return mobilenet_v2_new(
        &(mobilenet_config){.width_mult = 1.0, .num_classes = num_classes, .dropout = 0.2});
}
