/* The activations of transformers' ACT2FN (transformers/activations.py) that the library
 * computes, by name and as operations (see common.h). Each is composed in the order of
 * transformers' formula. */
#include <string.h>

#include "common.h"

static const struct {
    const char *name;
    clt_models_activation act;
} names[] = {
    {"gelu_new", CLT_MODELS_ACT_GELU_NEW},
    {"gelu_pytorch_tanh", CLT_MODELS_ACT_GELU_PYTORCH_TANH},
    {"gelu_python_tanh", CLT_MODELS_ACT_GELU_PYTHON_TANH},
    {"gelu_accurate", CLT_MODELS_ACT_GELU_ACCURATE},
    {"gelu", CLT_MODELS_ACT_GELU},
    {"gelu_python", CLT_MODELS_ACT_GELU_PYTHON},
    {"gelu_fast", CLT_MODELS_ACT_GELU_FAST},
    {"gelu_10", CLT_MODELS_ACT_GELU_10},
    {"quick_gelu", CLT_MODELS_ACT_QUICK_GELU},
    {"relu", CLT_MODELS_ACT_RELU},
    {"relu6", CLT_MODELS_ACT_RELU6},
    {"relu2", CLT_MODELS_ACT_RELU2},
    {"leaky_relu", CLT_MODELS_ACT_LEAKY_RELU},
    {"hardswish", CLT_MODELS_ACT_HARDSWISH},
    {"silu", CLT_MODELS_ACT_SILU},
    {"swish", CLT_MODELS_ACT_SWISH},
    {"tanh", CLT_MODELS_ACT_TANH},
    {"sigmoid", CLT_MODELS_ACT_SIGMOID},
    {"linear", CLT_MODELS_ACT_LINEAR},
};

/* ACT2FN's other names: functions of parameters of their own (prelu, xielu) or not composed
 * exactly from the library's operations (mish and sqrtsoftplus need log1p, laplace erf of
 * an argument gelu does not give). */
static const char *const not_computed[] = {"mish", "laplace", "sqrtsoftplus", "prelu", "xielu"};

bool clt__models_activation_parse(const char *name, clt_models_activation *act, bool *known)
{
    *known = false;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(names[i].name, name) == 0) {
            *act = names[i].act;
            return *known = true;
        }
    for (size_t i = 0; i < sizeof not_computed / sizeof *not_computed; i++)
        *known = *known || strcmp(not_computed[i], name) == 0;
    return false;
}

const char *clt__models_activation_name(clt_models_activation act)
{
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].act == act)
            return names[i].name;
    return NULL;
}

#define K(expr) MODELS_KEEP(&p, (expr))

/* 0.5 x (1 + tanh(x 0.7978845608 (1 + 0.044715 x x))): FastGELUActivation. */
static clt_tensor *gelu_fast(clt_tensor *x)
{
    models_pool p = {.n = 0};
    clt_tensor *a = K(clt_mul_scalar(x, 0.7978845608));
    clt_tensor *b = a ? K(clt_mul(K(clt_mul_scalar(x, 0.044715)), x)) : NULL;
    clt_tensor *t = b ? K(clt_tanh(K(clt_mul(a, K(clt_add_scalar(b, 1)))))) : NULL;
    clt_tensor *out = t ? clt_mul(K(clt_mul_scalar(x, 0.5)), K(clt_add_scalar(t, 1))) : NULL;
    clt__models_drain(&p);
    return out;
}

/* The activations of two operations or more. */
static clt_tensor *composed(clt_tensor *x, clt_models_activation act)
{
    models_pool p = {.n = 0};
    clt_tensor *out = NULL, *r;
    switch (act) {
    case CLT_MODELS_ACT_GELU_10: /* torch.clip(gelu(x), -10, 10) */
        r = K(clt_gelu(x));
        out = r ? clt_clamp(r, -10, 10) : NULL;
        break;
    case CLT_MODELS_ACT_QUICK_GELU: /* x * sigmoid(1.702 x) */
        r = K(clt_sigmoid(K(clt_mul_scalar(x, 1.702))));
        out = r ? clt_mul(x, r) : NULL;
        break;
    case CLT_MODELS_ACT_RELU2: /* square(relu(x)) */
        r = K(clt_relu(x));
        out = r ? clt_mul(r, r) : NULL;
        break;
    case CLT_MODELS_ACT_LEAKY_RELU: /* x > 0 ? x : 0.01 x, as relu(x) + 0.01 min(x, 0) */
        r = K(clt_relu(x));
        out = r ? clt_add(r, K(clt_mul_scalar(K(clt_sub(x, r)), 0.01))) : NULL;
        break;
    case CLT_MODELS_ACT_HARDSWISH: /* x relu6(x + 3) / 6 */
        r = K(clt_clamp(K(clt_add_scalar(x, 3)), 0, 6));
        out = r ? clt_div_scalar(K(clt_mul(x, r)), 6) : NULL;
        break;
    default:
        out = gelu_fast(x);
        break;
    }
    clt__models_drain(&p);
    return out;
}

clt_tensor *clt__models_activate(clt_tensor *x, clt_models_activation act)
{
    switch (act) {
    case CLT_MODELS_ACT_GELU_NEW:
    case CLT_MODELS_ACT_GELU_PYTORCH_TANH:
    case CLT_MODELS_ACT_GELU_PYTHON_TANH:
    case CLT_MODELS_ACT_GELU_ACCURATE:
        return clt_gelu_tanh(x);
    case CLT_MODELS_ACT_GELU:
    case CLT_MODELS_ACT_GELU_PYTHON:
        return clt_gelu(x);
    case CLT_MODELS_ACT_RELU:
        return clt_relu(x);
    case CLT_MODELS_ACT_RELU6:
        return clt_clamp(x, 0, 6);
    case CLT_MODELS_ACT_SILU:
    case CLT_MODELS_ACT_SWISH:
        return clt_silu(x);
    case CLT_MODELS_ACT_TANH:
        return clt_tanh(x);
    case CLT_MODELS_ACT_SIGMOID:
        return clt_sigmoid(x);
    case CLT_MODELS_ACT_LINEAR:
        return clt_tensor_retain(x);
    case CLT_MODELS_ACT_GELU_FAST:
    case CLT_MODELS_ACT_GELU_10:
    case CLT_MODELS_ACT_QUICK_GELU:
    case CLT_MODELS_ACT_RELU2:
    case CLT_MODELS_ACT_LEAKY_RELU:
    case CLT_MODELS_ACT_HARDSWISH:
        return composed(x, act);
    }
    clt_set_error(CLT_ERR_INVALID_ARGUMENT, "cltensor_models",
                  "activation %d is not one of clt_models_activation", (int)act);
    return NULL;
}
