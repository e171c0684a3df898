/* The built-in layers: Linear, the activations, Softmax, Flatten, Dropout and Sequential, with
 * PyTorch's default initialisation drawn from the default generator. */
#include <math.h>
#include <stdio.h>

#include "cltensor/nn.h"
#include "core/core.h"
#include "ops/ops_internal.h"

/* ---- Linear ---------------------------------------------------------------------------------------- */

typedef struct linear {
    clt_module base;
    clt_tensor *weight, *bias; /* registered: "weight", "bias" (or NULL) */
} linear;

static clt_tensor *linear_forward(clt_module *self, clt_tensor *x)
{
    linear *l = (linear *)self;
    return clt_linear(x, l->weight, l->bias);
}

static const clt_module_type linear_type = {"Linear", sizeof(linear), linear_forward, NULL, NULL};

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

/* ---- layers without parameters ------------------------------------------------------------------------ */

typedef struct with_arg {
    clt_module base;
    double p; /* dropout probability */
    int dim;  /* softmax dimension */
} with_arg;

static clt_tensor *relu_forward(clt_module *self, clt_tensor *x) { (void)self; return clt_relu(x); }
static clt_tensor *sigmoid_forward(clt_module *self, clt_tensor *x) { (void)self; return clt_sigmoid(x); }
static clt_tensor *tanh_forward(clt_module *self, clt_tensor *x) { (void)self; return clt_tanh(x); }
static clt_tensor *gelu_forward(clt_module *self, clt_tensor *x) { (void)self; return clt_gelu(x); }

static clt_tensor *softmax_forward(clt_module *self, clt_tensor *x)
{
    return clt_softmax(x, ((with_arg *)self)->dim);
}

static clt_tensor *dropout_forward(clt_module *self, clt_tensor *x)
{
    return clt_dropout(x, ((with_arg *)self)->p, clt_module_is_training(self));
}

static clt_tensor *flatten_forward(clt_module *self, clt_tensor *x)
{
    (void)self;
    if (clt_tensor_ndim(x) <= 1)
        return clt_tensor_retain(x);
    return clt_reshape(x, CLT_SHAPE(clt_tensor_size(x, 0), -1));
}

static const clt_module_type relu_type = {"ReLU", sizeof(clt_module), relu_forward, NULL, NULL};
static const clt_module_type sigmoid_type = {"Sigmoid", sizeof(clt_module), sigmoid_forward, NULL, NULL};
static const clt_module_type tanh_type = {"Tanh", sizeof(clt_module), tanh_forward, NULL, NULL};
static const clt_module_type gelu_type = {"GELU", sizeof(clt_module), gelu_forward, NULL, NULL};
static const clt_module_type flatten_type = {"Flatten", sizeof(clt_module), flatten_forward, NULL, NULL};
static const clt_module_type softmax_type = {"Softmax", sizeof(with_arg), softmax_forward, NULL, NULL};
static const clt_module_type dropout_type = {"Dropout", sizeof(with_arg), dropout_forward, NULL, NULL};

clt_module *clt_nn_relu(void) { return clt_module_new(&relu_type); }
clt_module *clt_nn_sigmoid(void) { return clt_module_new(&sigmoid_type); }
clt_module *clt_nn_tanh(void) { return clt_module_new(&tanh_type); }
clt_module *clt_nn_gelu(void) { return clt_module_new(&gelu_type); }
clt_module *clt_nn_flatten(void) { return clt_module_new(&flatten_type); }

clt_module *clt_nn_softmax(int dim)
{
    clt_module *m = clt_module_new(&softmax_type);
    if (m)
        ((with_arg *)m)->dim = dim;
    return m;
}

clt_module *clt_nn_dropout(double p)
{
    clt_module *m;
    if (!(p >= 0 && p <= 1)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_nn_dropout", "probability %g is outside 0..1", p);
        return NULL;
    }
    m = clt_module_new(&dropout_type);
    if (m)
        ((with_arg *)m)->p = p;
    return m;
}

/* ---- Sequential ------------------------------------------------------------------------------------------ */

typedef struct sequential {
    clt_module base;
    int n;
} sequential;

static clt_tensor *sequential_forward(clt_module *self, clt_tensor *x)
{
    clt_tensor *y = clt_tensor_retain(x);
    for (int i = 0; i < ((sequential *)self)->n && y; i++) {
        char name[16];
        snprintf(name, sizeof name, "%d", i);
        clt_tensor *next = clt_module_forward(clt_module_get_child(self, name), y);
        clt_tensor_release(y);
        y = next;
    }
    return y;
}

static const clt_module_type sequential_type = {"Sequential", sizeof(sequential), sequential_forward, NULL, NULL};

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
