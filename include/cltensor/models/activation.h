/* The activation functions of Hugging Face transformers' ACT2FN (transformers/activations.py)
 * that GPT-2's activation_function and BERT's hidden_act may name, each computed as
 * transformers defines it. A config.json naming one that is not here is refused by the config
 * readers (mish, laplace and sqrtsoftplus, not composed exactly from the library's operations;
 * prelu and xielu, which carry parameters of their own). */
#ifndef CLTENSOR_MODELS_ACTIVATION_H
#define CLTENSOR_MODELS_ACTIVATION_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum clt_models_activation {
    /* "gelu_new", "gelu_pytorch_tanh", "gelu_python_tanh", "gelu_accurate": one formula,
     * x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2 (clt_gelu_tanh) */
    CLT_MODELS_ACT_GELU_NEW,
    CLT_MODELS_ACT_GELU_PYTORCH_TANH,
    CLT_MODELS_ACT_GELU_PYTHON_TANH,
    CLT_MODELS_ACT_GELU_ACCURATE,
    /* "gelu", "gelu_python": x Phi(x) with erf (clt_gelu) */
    CLT_MODELS_ACT_GELU,
    CLT_MODELS_ACT_GELU_PYTHON,
    /* "gelu_fast": x (1 + tanh(0.7978845608 x (1 + 0.044715 x^2))) / 2 */
    CLT_MODELS_ACT_GELU_FAST,
    /* "gelu_10": gelu clipped to [-10, 10] */
    CLT_MODELS_ACT_GELU_10,
    /* "quick_gelu": x sigmoid(1.702 x) */
    CLT_MODELS_ACT_QUICK_GELU,
    CLT_MODELS_ACT_RELU,       /* "relu" */
    CLT_MODELS_ACT_RELU6,      /* "relu6": min(max(x, 0), 6) */
    CLT_MODELS_ACT_RELU2,      /* "relu2": relu(x)^2 */
    CLT_MODELS_ACT_LEAKY_RELU, /* "leaky_relu": nn.LeakyReLU(), slope 0.01 */
    CLT_MODELS_ACT_HARDSWISH,  /* "hardswish": x relu6(x + 3) / 6 */
    CLT_MODELS_ACT_SILU,       /* "silu": x sigmoid(x) */
    CLT_MODELS_ACT_SWISH,      /* "swish": the same */
    CLT_MODELS_ACT_TANH,       /* "tanh" */
    CLT_MODELS_ACT_SIGMOID,    /* "sigmoid" */
    CLT_MODELS_ACT_LINEAR      /* "linear": x itself */
} clt_models_activation;

#ifdef __cplusplus
}
#endif

#endif
