/* The activation layers: ReLU, ReLU6, Sigmoid, Tanh, GELU (both forms), Softmax and PReLU, the
 * last with its slopes as a parameter. */
#include <stdio.h>

#include "cltensor/nn.h"
#include "core/core.h"
#include "nn/module_internal.h"

/* ---- without parameters -------------------------------------------------------------------- */

static clt_tensor *relu_forward(clt_module *self, clt_tensor *x)
{
    (void)self;
    return clt_relu(x);
}
static clt_tensor *relu6_forward(clt_module *self, clt_tensor *x)
{
    (void)self;
    return clt_clamp(x, 0, 6);
}
static clt_tensor *sigmoid_forward(clt_module *self, clt_tensor *x)
{
    (void)self;
    return clt_sigmoid(x);
}
static clt_tensor *tanh_forward(clt_module *self, clt_tensor *x)
{
    (void)self;
    return clt_tanh(x);
}
static clt_tensor *gelu_forward(clt_module *self, clt_tensor *x)
{
    (void)self;
    return clt_gelu(x);
}
static clt_tensor *gelu_tanh_forward(clt_module *self, clt_tensor *x)
{
    (void)self;
    return clt_gelu_tanh(x);
}

static int gelu_repr(const clt_module *self, char *buf, size_t size)
{
    (void)self;
    return snprintf(buf, size, "approximate='none'");
}

static int gelu_tanh_repr(const clt_module *self, char *buf, size_t size)
{
    (void)self;
    return snprintf(buf, size, "approximate='tanh'");
}

static const clt_module_type relu_type = {.name = "ReLU",
                                          .size = sizeof(clt_module),
                                          .forward = relu_forward};
static const clt_module_type relu6_type = {.name = "ReLU6",
                                           .size = sizeof(clt_module),
                                           .forward = relu6_forward};
static const clt_module_type sigmoid_type = {.name = "Sigmoid",
                                             .size = sizeof(clt_module),
                                             .forward = sigmoid_forward};
static const clt_module_type tanh_type = {.name = "Tanh",
                                          .size = sizeof(clt_module),
                                          .forward = tanh_forward};
static const clt_module_type gelu_type = {.name = "GELU",
                                          .size = sizeof(clt_module),
                                          .forward = gelu_forward,
                                          .extra_repr = gelu_repr};
static const clt_module_type gelu_tanh_type = {.name = "GELU",
                                               .size = sizeof(clt_module),
                                               .forward = gelu_tanh_forward,
                                               .extra_repr = gelu_tanh_repr};

bool clt__module_is_relu(const clt_module *m)
{
    return m->type == &relu_type;
}

clt_module *clt_nn_relu(void)
{
    return clt_module_new(&relu_type);
}
clt_module *clt_nn_relu6(void)
{
    return clt_module_new(&relu6_type);
}
clt_module *clt_nn_sigmoid(void)
{
    return clt_module_new(&sigmoid_type);
}
clt_module *clt_nn_tanh(void)
{
    return clt_module_new(&tanh_type);
}
clt_module *clt_nn_gelu(void)
{
    return clt_module_new(&gelu_type);
}
clt_module *clt_nn_gelu_tanh(void)
{
    return clt_module_new(&gelu_tanh_type);
}

/* ---- Softmax ------------------------------------------------------------------------------- */

typedef struct softmax {
    clt_module base;
    int dim;
} softmax;

static clt_tensor *softmax_forward(clt_module *self, clt_tensor *x)
{
    return clt_softmax(x, ((softmax *)self)->dim);
}

static int softmax_repr(const clt_module *self, char *buf, size_t size)
{
    return snprintf(buf, size, "dim=%d", ((const softmax *)self)->dim);
}

static const clt_module_type softmax_type = {.name = "Softmax",
                                             .size = sizeof(softmax),
                                             .forward = softmax_forward,
                                             .extra_repr = softmax_repr};

clt_module *clt_nn_softmax(int dim)
{
    clt_module *m = clt_module_new(&softmax_type);
    if (m)
        ((softmax *)m)->dim = dim;
    return m;
}

/* ---- PReLU --------------------------------------------------------------------------------- */

typedef struct prelu {
    clt_module base;
    clt_tensor *weight; /* registered: "weight" */
} prelu;

static clt_tensor *prelu_forward(clt_module *self, clt_tensor *x)
{
    return clt_prelu(x, ((prelu *)self)->weight);
}

static int prelu_repr(const clt_module *self, char *buf, size_t size)
{
    return snprintf(buf, size, "num_parameters=%lld",
                    (long long)clt_tensor_numel(((const prelu *)self)->weight));
}

static const clt_module_type prelu_type = {.name = "PReLU",
                                           .size = sizeof(prelu),
                                           .forward = prelu_forward,
                                           .extra_repr = prelu_repr};

clt_module *clt_nn_prelu(int64_t num_parameters, double init)
{
    static const char *const fn = "clt_nn_prelu";
    clt_module *m;
    clt_tensor *w;
    if (num_parameters < 1) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "num_parameters %lld must be positive",
                   (long long)num_parameters);
        return NULL;
    }
    m = clt_module_new(&prelu_type);
    w = m ? clt_tensor_full(1, &num_parameters, init, CLT_F32, clt_device_cpu()) : NULL;
    if (!w || clt_module_register_parameter(m, "weight", w) != CLT_OK) {
        clt__rename_error(fn);
        clt_tensor_release(w);
        clt_module_release(m);
        return NULL;
    }
    /* the module holds the reference; the field borrows it */
    ((prelu *)m)->weight = w;
    clt_tensor_release(w);
    return m;
}
