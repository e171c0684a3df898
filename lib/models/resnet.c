/* ResNet-18/34 as torchvision builds them (see resnet.h). */
#include <stdio.h>

#include "resnet.h"

/* ---- BasicBlock: conv3x3, bn, relu, conv3x3, bn, + identity (or downsample), relu --------- */

typedef struct basic_block {
    clt_module base;
    clt_module *conv1, *bn1, *conv2, *bn2, *downsample; /* registered children; downsample may be NULL */
} basic_block;

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
    basic_block *b = (basic_block *)self;
    clt_tensor *y = relu_of(step(b->bn1, clt_module_forward(b->conv1, x)));
    y = step(b->bn2, step(b->conv2, y));
    clt_tensor *identity = b->downsample ? clt_module_forward(b->downsample, x)
                                         : clt_tensor_retain(x);
    clt_tensor *sum = y && identity ? clt_add(y, identity) : NULL;
    clt_tensor_release(identity);
    clt_tensor_release(y);
    return relu_of(sum);
}

static const clt_module_type block_type = {.name = "BasicBlock",
                                           .size = sizeof(basic_block),
                                           .forward = block_forward};

static clt_module *conv(int64_t in, int64_t out, int k, int stride, int padding)
{
    clt_conv2d_options o = clt_conv2d_options_default();
    o.stride[0] = o.stride[1] = stride;
    o.padding[0] = o.padding[1] = padding;
    return clt_nn_conv2d(in, out, k, k, &o, false);
}

static clt_module *block_new(int64_t in, int64_t out, int stride)
{
    clt_module *m = clt_module_new(&block_type);
    if (!m)
        return NULL;
    basic_block *b = (basic_block *)m;
    bool ok = clt_module_register_module_take(m, "conv1", conv(in, out, 3, stride, 1)) == CLT_OK &&
              clt_module_register_module_take(m, "bn1", clt_nn_batch_norm(out, 1e-5, 0.1)) == CLT_OK &&
              clt_module_register_module_take(m, "relu", clt_nn_relu()) == CLT_OK &&
              clt_module_register_module_take(m, "conv2", conv(out, out, 3, 1, 1)) == CLT_OK &&
              clt_module_register_module_take(m, "bn2", clt_nn_batch_norm(out, 1e-5, 0.1)) == CLT_OK;
    if (ok && (stride != 1 || in != out))
        ok = clt_module_register_module_take(
                 m, "downsample",
                 CLT_SEQUENTIAL(conv(in, out, 1, stride, 0), clt_nn_batch_norm(out, 1e-5, 0.1))) ==
             CLT_OK;
    if (!ok) {
        clt_module_release(m);
        return NULL;
    }
    b->conv1 = clt_module_get_child(m, "conv1"), b->bn1 = clt_module_get_child(m, "bn1");
    b->conv2 = clt_module_get_child(m, "conv2"), b->bn2 = clt_module_get_child(m, "bn2");
    b->downsample = stride != 1 || in != out ? clt_module_get_child(m, "downsample") : NULL;
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

static const clt_module_type resnet_type = {.name = "ResNet",
                                            .size = sizeof(resnet),
                                            .forward = resnet_forward};

enum { MAX_STAGE_BLOCKS = 16 };

/* layer<n>: `blocks` BasicBlocks (1 to MAX_STAGE_BLOCKS), the first changing in -> out channels
 * at `stride`. */
static clt_module *stage_new(int blocks, int64_t in, int64_t out, int stride)
{
    clt_module *list[MAX_STAGE_BLOCKS];
    for (int i = 0; i < blocks; i++)
        list[i] = block_new(i ? out : in, out, i ? 1 : stride);
    return clt_nn_sequential_take(list, blocks);
}

/* CLT_OK when c can be built, else the error naming resnet_new and the first value at fault. */
static clt_status check_config(const resnet_config *c)
{
    const char *f = "resnet_new";
    if (!c)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f, "config is NULL");
    for (int s = 0; s < 4; s++)
        if (c->blocks[s] < 1 || c->blocks[s] > MAX_STAGE_BLOCKS)
            return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f, "layer%d: %d blocks, not 1 to %d",
                                 s + 1, c->blocks[s], MAX_STAGE_BLOCKS);
    if (c->width < 1)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f, "width %d must be positive", c->width);
    if (c->num_classes < 1)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f, "num_classes %d must be positive",
                             c->num_classes);
    return CLT_OK;
}

clt_module *resnet_new(const resnet_config *c)
{
    static const char *const stem_names[4] = {"conv1", "bn1", "relu", "maxpool"};
    clt_module *m;
    if (check_config(c) != CLT_OK || !(m = clt_module_new(&resnet_type)))
        return NULL;
    resnet *r = (resnet *)m;
    int64_t w = c->width;
    clt_pool2d_options pool = clt_pool2d_options_default(3, 3);
    pool.stride[0] = pool.stride[1] = 2;
    pool.padding[0] = pool.padding[1] = 1;
    clt_module *stem[4] = {conv(3, w, 7, 2, 3), clt_nn_batch_norm(w, 1e-5, 0.1), clt_nn_relu(),
                           clt_nn_max_pool2d(&pool)};
    bool ok = true;
    for (int i = 0; i < 4; i++)
        ok = clt_module_register_module_take(m, stem_names[i], stem[i]) == CLT_OK && ok;
    for (int s = 0; s < 4 && ok; s++) {
        char name[8];
        snprintf(name, sizeof name, "layer%d", s + 1);
        int64_t in = s ? w << (s - 1) : w, out = w << s;
        ok = clt_module_register_module_take(m, name, stage_new(c->blocks[s], in, out,
                                                                s ? 2 : 1)) == CLT_OK;
        r->stages[s] = ok ? clt_module_get_child(m, name) : NULL;
    }
    ok = ok &&
         clt_module_register_module_take(m, "avgpool", clt_nn_adaptive_avg_pool2d(1, 1)) == CLT_OK &&
         clt_module_register_module_take(m, "fc", clt_nn_linear(w << 3, c->num_classes, true)) ==
             CLT_OK;
    if (!ok) {
        clt_module_release(m);
        return NULL;
    }
    for (int i = 0; i < 4; i++)
        r->stem[i] = clt_module_get_child(m, stem_names[i]);
    r->avgpool = clt_module_get_child(m, "avgpool"), r->fc = clt_module_get_child(m, "fc");
    return m;
}

clt_module *resnet18_new(int num_classes)
{
    return resnet_new(&(resnet_config){{2, 2, 2, 2}, 64, num_classes});
}

clt_module *resnet34_new(int num_classes)
{
    return resnet_new(&(resnet_config){{3, 4, 6, 3}, 64, num_classes});
}
