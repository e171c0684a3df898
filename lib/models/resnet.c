/* ResNet as torchvision builds it (see cltensor/models/resnet.h): BasicBlock, Bottleneck, the
 * stages of torchvision's _make_layer and the network. */
#include <limits.h>
#include <stdio.h>

#include <cltensor/models/resnet.h>

#include "common.h"

/* ---- the blocks: their convolutions and BatchNorms, + identity (or downsample), relu ------- */

/* BasicBlock (conv1, bn1, conv2, bn2) and Bottleneck (also conv3, bn3); downsample may be
 * NULL. All registered children. */
typedef struct block {
    clt_module base;
    clt_module *conv[3], *bn[3], *downsample;
    int convs; /* 2 or 3 */
} block;

/* m(x), with x released: the forward chain's step. */
static clt_tensor *step(clt_module *m, clt_tensor *x)
{
    clt_tensor *y = x ? clt_module_forward(m, x) : NULL;
    clt_tensor_release(x);
    return y;
}

static clt_tensor *relu_of(clt_tensor *x)
{
    clt_tensor *y = x ? clt_relu(x) : NULL;
    clt_tensor_release(x);
    return y;
}

static clt_tensor *block_forward(clt_module *self, clt_tensor *x)
{
    block *b = (block *)self;
    clt_tensor *y = clt_tensor_retain(x);
    for (int i = 0; i < b->convs; i++) { /* relu after each but the last BatchNorm */
        y = step(b->bn[i], step(b->conv[i], y));
        y = i + 1 < b->convs ? relu_of(y) : y;
    }
    clt_tensor *identity = b->downsample ? clt_module_forward(b->downsample, x)
                                         : clt_tensor_retain(x);
    clt_tensor *sum = y && identity ? clt_add(y, identity) : NULL;
    clt_tensor_release(identity);
    clt_tensor_release(y);
    return relu_of(sum);
}

static const clt_module_type basic_type =
    {.name = "BasicBlock", .size = sizeof(block), .forward = block_forward};
static const clt_module_type bottleneck_type =
    {.name = "Bottleneck", .size = sizeof(block), .forward = block_forward};

/* A k x k convolution without bias, padded by dilation * (k - 1) / 2: torchvision's conv3x3
 * (padding = dilation), conv1x1 and the stem's 7 x 7 (padding 3). */
static clt_module *conv(int64_t in, int64_t out, int k, int stride, int groups, int dilation)
{
    clt_conv2d_options o = clt_conv2d_options_default();
    o.stride[0] = o.stride[1] = stride;
    o.padding[0] = o.padding[1] = dilation * (k - 1) / 2;
    o.dilation[0] = o.dilation[1] = dilation;
    o.groups = groups;
    return clt_nn_conv2d(in, out, k, k, &o, false);
}

static clt_module *batch_norm(int64_t channels)
{
    return clt_nn_batch_norm(channels, 1e-5, 0.1);
}

/* One block's shape: channels in, planes, stride, dilation, and whether it downsamples. */
typedef struct block_plan {
    int64_t in, planes;
    int stride, dilation;
    bool downsample;
} block_plan;

static clt_module *block_new(const clt_resnet_config *c, const block_plan *p)
{
    bool bottleneck = c->block == CLT_RESNET_BOTTLENECK;
    int64_t out = bottleneck ? 4 * p->planes : p->planes;
    /* Bottleneck: width = int(planes * (base_width / 64.0)) * groups */
    int64_t width = bottleneck ? p->planes * c->width_per_group / 64 * c->groups : p->planes;
    static const char *const names[7] = {"conv1", "bn1", "conv2", "bn2", "conv3", "bn3",
                                         "downsample"};
    clt_module *parts[7] = {NULL};
    int n = 0;
    if (bottleneck) {
        parts[n++] = conv(p->in, width, 1, 1, 1, 1), parts[n++] = batch_norm(width);
        parts[n++] = conv(width, width, 3, p->stride, c->groups, p->dilation);
        parts[n++] = batch_norm(width);
        parts[n++] = conv(width, out, 1, 1, 1, 1), parts[n++] = batch_norm(out);
    } else {
        parts[n++] = conv(p->in, out, 3, p->stride, 1, p->dilation), parts[n++] = batch_norm(out);
        parts[n++] = conv(out, out, 3, 1, 1, p->dilation), parts[n++] = batch_norm(out);
    }
    clt_module *m = clt_module_new(bottleneck ? &bottleneck_type : &basic_type);
    bool ok = m != NULL;
    for (int i = 0; i < n; i++) /* each part taken, also after a failure */
        ok = clt_module_register_module_take(m, names[i], parts[i]) == CLT_OK && ok;
    if (ok && p->downsample)
        ok = clt_module_register_module_take(
                 m, "downsample",
                 CLT_SEQUENTIAL(conv(p->in, out, 1, p->stride, 1, 1), batch_norm(out))) == CLT_OK;
    if (!ok) {
        clt_module_release(m);
        return NULL;
    }
    block *b = (block *)m;
    b->convs = n / 2;
    for (int i = 0; i < b->convs; i++) {
        b->conv[i] = clt_module_get_child(m, names[2 * i]);
        b->bn[i] = clt_module_get_child(m, names[2 * i + 1]);
    }
    b->downsample = p->downsample ? clt_module_get_child(m, "downsample") : NULL;
    return m;
}

/* ---- the network ------------------------------------------------------------------------- */

typedef struct resnet {
    clt_module base;
    clt_module *stem[4], *stages[4], *avgpool, *fc; /* conv1, bn1, relu, maxpool; layer1-4 */
} resnet;

static clt_tensor *resnet_forward(clt_module *self, clt_tensor *x)
{
    resnet *r = (resnet *)self;
    clt_tensor *y = clt_tensor_retain(x);
    for (int i = 0; i < 4; i++)
        y = step(r->stem[i], y);
    for (int i = 0; i < 4; i++)
        y = step(r->stages[i], y);
    y = step(r->avgpool, y);
    if (y) { /* torch.flatten(x, 1) */
        int64_t shape[2] = {clt_tensor_size(y, 0), -1};
        clt_tensor *flat = clt_reshape(y, 2, shape);
        clt_tensor_release(y);
        y = flat;
    }
    return step(r->fc, y);
}

static const clt_module_type resnet_type =
    {.name = "ResNet", .size = sizeof(resnet), .forward = resnet_forward};

enum { MAX_STAGE_BLOCKS = 64 };

/* What _make_layer tracks from stage to stage: channels in (inplanes) and the dilation. */
typedef struct stage_state {
    int64_t inplanes;
    int dilation;
} stage_state;

/* layer<s + 1> as torchvision's _make_layer(block, planes, blocks, stride, dilate) makes it. */
static clt_module *stage_new(const clt_resnet_config *c, int s, stage_state *st)
{
    int64_t planes = (int64_t)c->planes << s;
    int64_t out = c->block == CLT_RESNET_BOTTLENECK ? 4 * planes : planes;
    int stride = s ? 2 : 1, previous = st->dilation;
    if (s && c->replace_stride_with_dilation[s - 1])
        st->dilation *= stride, stride = 1;
    clt_module *list[MAX_STAGE_BLOCKS];
    for (int i = 0; i < c->layers[s]; i++) {
        block_plan p = {st->inplanes, planes, i ? 1 : stride, i ? st->dilation : previous,
                        !i && (stride != 1 || st->inplanes != out)};
        list[i] = block_new(c, &p);
        st->inplanes = out;
    }
    return clt_nn_sequential_take(list, c->layers[s]);
}

/* c with torchvision's defaults for the zeros a zeroed struct leaves. */
static clt_resnet_config defaults_in(const clt_resnet_config *c)
{
    clt_resnet_config d = *c;
    d.groups = d.groups ? d.groups : 1;
    d.width_per_group = d.width_per_group ? d.width_per_group : 64;
    d.planes = d.planes ? d.planes : 64;
    return d;
}

/* CLT_OK when c can be built, else the error naming clt_resnet_new and the first value at
 * fault (torchvision's own refusals in its words). */
static clt_status check_config(const clt_resnet_config *c)
{
    const char *f = "clt_resnet_new";
    bool basic = c->block == CLT_RESNET_BASIC_BLOCK;
    if (!basic && c->block != CLT_RESNET_BOTTLENECK)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f, "block %d is not a clt_resnet_block",
                             (int)c->block);
    for (int s = 0; s < 4; s++)
        if (c->layers[s] < 1 || c->layers[s] > MAX_STAGE_BLOCKS)
            return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f, "layer%d: %d blocks, not 1 to %d",
                                 s + 1, c->layers[s], MAX_STAGE_BLOCKS);
    if (c->planes < 1 || c->planes > (1 << 20) || c->groups < 1 || c->width_per_group < 1 ||
        c->num_classes < 1)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f,
                             "planes %d (at most 2^20), groups %d, width_per_group %d and "
                             "num_classes %d must be positive",
                             c->planes, c->groups, c->width_per_group, c->num_classes);
    if (basic && (c->groups != 1 || c->width_per_group != 64))
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f,
                             "BasicBlock only supports groups=1 and base_width=64 (groups %d, "
                             "width_per_group %d)",
                             c->groups, c->width_per_group);
    for (int s = 0; s < 3; s++)
        if (basic && c->replace_stride_with_dilation[s])
            return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f,
                                 "Dilation > 1 not supported in BasicBlock "
                                 "(replace_stride_with_dilation[%d] for layer%d)",
                                 s, s + 2);
    /* the widest Bottleneck, layer4's: (planes << 3) * width_per_group / 64 * groups */
    int64_t per_group = ((int64_t)c->planes << 3) * c->width_per_group / 64;
    if (!basic && ((int64_t)c->planes * c->width_per_group / 64 < 1 ||
                   per_group > INT_MAX / c->groups))
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f,
                             "planes %d, width_per_group %d and groups %d give a Bottleneck "
                             "width below 1 or above %d",
                             c->planes, c->width_per_group, c->groups, INT_MAX);
    return CLT_OK;
}

clt_resnet_config clt_resnet_config_default(void)
{
    return (clt_resnet_config){.block = CLT_RESNET_BASIC_BLOCK,
                               .layers = {2, 2, 2, 2},
                               .num_classes = 1000,
                               .groups = 1,
                               .width_per_group = 64,
                               .replace_stride_with_dilation = {false, false, false},
                               .planes = 64};
}

/* Registers the stem, layer1-4, avgpool and fc on m. */
static bool add_children(clt_module *m, const clt_resnet_config *c)
{
    static const char *const stem_names[4] = {"conv1", "bn1", "relu", "maxpool"};
    resnet *r = (resnet *)m;
    int64_t w = c->planes;
    clt_pool2d_options pool = clt_pool2d_options_default(3, 3);
    pool.stride[0] = pool.stride[1] = 2;
    pool.padding[0] = pool.padding[1] = 1;
    clt_module *stem[4] = {conv(3, w, 7, 2, 1, 1), batch_norm(w), clt_nn_relu(),
                           clt_nn_max_pool2d(&pool)};
    bool ok = true;
    for (int i = 0; i < 4; i++) {
        ok = clt_module_register_module_take(m, stem_names[i], stem[i]) == CLT_OK && ok;
        r->stem[i] = ok ? clt_module_get_child(m, stem_names[i]) : NULL;
    }
    stage_state st = {w, 1};
    for (int s = 0; s < 4 && ok; s++) {
        char name[8];
        snprintf(name, sizeof name, "layer%d", s + 1);
        ok = clt_module_register_module_take(m, name, stage_new(c, s, &st)) == CLT_OK;
        r->stages[s] = ok ? clt_module_get_child(m, name) : NULL;
    }
    ok = ok &&
         clt_module_register_module_take(m, "avgpool", clt_nn_adaptive_avg_pool2d(1, 1)) ==
             CLT_OK &&
         clt_module_register_module_take(m, "fc", clt_nn_linear(st.inplanes, c->num_classes,
                                                                true)) == CLT_OK;
    r->avgpool = clt_module_get_child(m, "avgpool"), r->fc = clt_module_get_child(m, "fc");
    return ok;
}

clt_module *clt_resnet_new(const clt_resnet_config *config)
{
    if (!config) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_resnet_new", "config is NULL");
        return NULL;
    }
    clt_resnet_config c = defaults_in(config);
    clt_module *m;
    if (check_config(&c) != CLT_OK || !(m = clt_module_new(&resnet_type)))
        return NULL;
    if (!add_children(m, &c)) {
        clt_module_release(m);
        return NULL;
    }
    return m;
}

/* torchvision's resnet<depth>: the block and the blocks per stage. */
static clt_module *resnet_of(clt_resnet_block b, int l1, int l2, int l3, int l4, int classes)
{
    clt_resnet_config c = clt_resnet_config_default();
    c.block = b, c.num_classes = classes;
    c.layers[0] = l1, c.layers[1] = l2, c.layers[2] = l3, c.layers[3] = l4;
    return clt_resnet_new(&c);
}

clt_module *clt_resnet18(int num_classes)
{
    return resnet_of(CLT_RESNET_BASIC_BLOCK, 2, 2, 2, 2, num_classes);
}

clt_module *clt_resnet34(int num_classes)
{
    return resnet_of(CLT_RESNET_BASIC_BLOCK, 3, 4, 6, 3, num_classes);
}

clt_module *clt_resnet50(int num_classes)
{
    return resnet_of(CLT_RESNET_BOTTLENECK, 3, 4, 6, 3, num_classes);
}

clt_module *clt_resnet101(int num_classes)
{
    return resnet_of(CLT_RESNET_BOTTLENECK, 3, 4, 23, 3, num_classes);
}

clt_module *clt_resnet152(int num_classes)
{
    return resnet_of(CLT_RESNET_BOTTLENECK, 3, 8, 36, 3, num_classes);
}
