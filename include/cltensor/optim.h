/* Optimizers: SGD (momentum, dampening, Nesterov, weight decay), Adam and AdamW, as PyTorch's
 * torch.optim. An optimizer holds a reference to each parameter and keeps its state (momentum
 * buffers, moment estimates) on the parameter's device. When a parameter has moved since the
 * last step (clt_module_to), the next step moves its state along first, so an optimizer made
 * for a model on cpu keeps training correctly after the model moves to a GPU. */
#ifndef CLTENSOR_OPTIM_H
#define CLTENSOR_OPTIM_H

#include "nn.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_optimizer clt_optimizer;

/* Options structs start from their _default() function, which holds PyTorch's defaults; a
 * field then means exactly what it holds (an lr of 0 is 0, a beta1 of 0 is 0). A NULL options
 * pointer means the defaults. The `init` field is set by the _default() function: a struct that
 * did not start there (a zeroed or hand-built one, whose zeros would silently be taken as
 * values) is refused with CLT_ERR_INVALID_ARGUMENT saying so. */

/* torch.optim.SGD: with g the gradient (plus weight_decay * p), b = momentum * b + (1 -
 * dampening) * g (b = g at the first step), then p -= lr * (nesterov ? g + momentum * b : b);
 * without momentum p -= lr * g. */
typedef struct clt_sgd_options {
    uint32_t init; /* set by clt_sgd_options_default() */
    double lr;     /* 1e-3 */
    double momentum, dampening, weight_decay; /* 0, 0, 0 */
    bool nesterov; /* false; needs momentum > 0 and dampening 0 */
} clt_sgd_options;

/* torch.optim.Adam and AdamW: m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g^2,
 * p -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps). Adam adds weight_decay * p
 * to g; AdamW multiplies p by (1 - lr * weight_decay) first. */
typedef struct clt_adam_options {
    uint32_t init;        /* set by clt_adam_options_default() / clt_adamw_options_default() */
    double lr;            /* 1e-3 */
    double beta1, beta2;  /* 0.9, 0.999 */
    double eps;           /* 1e-8 */
    double weight_decay;  /* Adam 0, AdamW 0.01, as PyTorch */
} clt_adam_options;

/* PyTorch's defaults: SGD lr 1e-3 without momentum or decay; Adam lr 1e-3, betas (0.9, 0.999),
 * eps 1e-8, weight_decay 0; AdamW the same with weight_decay 0.01. */
CLT_API clt_sgd_options clt_sgd_options_default(void);
CLT_API clt_adam_options clt_adam_options_default(void);
CLT_API clt_adam_options clt_adamw_options_default(void);

/* A new optimizer, freed with clt_optim_free, over n parameters (each retained; repeated ones
 * count once), or over every parameter of a module that requires grad (module: borrowed).
 * NULL with the last error set: CLT_ERR_INVALID_ARGUMENT for a NULL module, n < 0 or
 * NULL params with n > 0, a NULL, non-leaf or non-contiguous parameter, options that did not
 * start from their _default() function, or options out of range (a negative or NaN lr,
 * momentum, dampening, weight decay or eps, a beta outside [0, 1), Nesterov without momentum or
 * with dampening), CLT_ERR_DTYPE for a parameter that is not f32 or f64. options NULL: the
 * defaults (AdamW's own, weight_decay 0.01). */
CLT_API clt_optimizer *clt_optim_sgd(clt_tensor *const *params, int n, const clt_sgd_options *options);
CLT_API clt_optimizer *clt_optim_adam(clt_tensor *const *params, int n, const clt_adam_options *options);
CLT_API clt_optimizer *clt_optim_adamw(clt_tensor *const *params, int n, const clt_adam_options *options);
CLT_API clt_optimizer *clt_optim_sgd_module(clt_module *m, const clt_sgd_options *options);
CLT_API clt_optimizer *clt_optim_adam_module(clt_module *m, const clt_adam_options *options);
CLT_API clt_optimizer *clt_optim_adamw_module(clt_module *m, const clt_adam_options *options);
/* Frees the optimizer and its state and drops its parameter references; accepts NULL. */
CLT_API void clt_optim_free(clt_optimizer *opt);

/* One update of every parameter that has a gradient (the others are skipped, as PyTorch does),
 * without recording. State that must be made or moved is made or moved for every parameter
 * before any update: if that fails (out of memory), or a gradient is not on its parameter's
 * device and dtype (CLT_ERR_DEVICE_MISMATCH), nothing has changed. CLT_ERR_INVALID_ARGUMENT
 * for NULL. */
CLT_API clt_status clt_optim_step(clt_optimizer *opt);
/* Clears every parameter's gradient (PyTorch's zero_grad(set_to_none=True)); accepts NULL. */
CLT_API void clt_optim_zero_grad(clt_optimizer *opt);
/* The learning rate (NaN for NULL) and its setter, for schedules: CLT_ERR_INVALID_ARGUMENT
 * for NULL or a negative or NaN rate, and the rate unchanged; 0 is a rate here, not the
 * default. */
CLT_API double clt_optim_lr(const clt_optimizer *opt);
CLT_API clt_status clt_optim_set_lr(clt_optimizer *opt, double lr);
/* Successful clt_optim_step calls so far (0 for NULL). */
CLT_API int64_t clt_optim_steps(const clt_optimizer *opt);

#ifdef __cplusplus
}
#endif

#endif
