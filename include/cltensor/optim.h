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

/* ---- learning-rate schedules (torch.optim.lr_scheduler) -------------------------------------- */

/* A schedule sets its optimizer's rate (clt_optim_set_lr) from the rate the optimizer had when
 * the schedule was made (base), by PyTorch's closed forms in the epoch e, the number of
 * clt_lr_scheduler_step calls so far. Making one sets the rate for e = 0, as PyTorch's
 * constructors do; call clt_lr_scheduler_step after each epoch's (or step's) clt_optim_step.
 * The optimizer is borrowed and must outlive the schedule, which clt_lr_scheduler_free frees.
 * NULL with CLT_ERR_INVALID_ARGUMENT for a NULL optimizer or a setting out of range. */
typedef struct clt_lr_scheduler clt_lr_scheduler;
/* StepLR: base * gamma^floor(e / step_size); step_size >= 1, gamma >= 0. */
CLT_API clt_lr_scheduler *clt_lr_step(clt_optimizer *opt, int64_t step_size, double gamma);
/* ExponentialLR: base * gamma^e. */
CLT_API clt_lr_scheduler *clt_lr_exponential(clt_optimizer *opt, double gamma);
/* CosineAnnealingLR: eta_min + (base - eta_min) (1 + cos(pi e / t_max)) / 2; t_max >= 1. */
CLT_API clt_lr_scheduler *clt_lr_cosine(clt_optimizer *opt, int64_t t_max, double eta_min);
/* LinearLR (linear warm-up): base * (start + (end - start) min(e, total_iters) / total_iters),
 * start_factor in (0, 1], end_factor in [0, 1], total_iters >= 1. PyTorch's defaults are 1/3,
 * 1 and 5. */
CLT_API clt_lr_scheduler *clt_lr_linear(clt_optimizer *opt, double start_factor,
                                        double end_factor, int64_t total_iters);
/* SequentialLR: schedulers[0] until epoch milestones[0], then schedulers[1] from its own epoch 0,
 * and so on (n - 1 increasing positive milestones; NULL for n = 1). Every part runs from
 * schedulers[0]'s base rate (make it first, as in PyTorch, where the first sets the initial
 * rate). Takes the n schedulers (of opt, none sequential) whatever happens: they are freed
 * with the result, or at once on failure. */
CLT_API clt_lr_scheduler *clt_lr_sequential_take(clt_optimizer *opt,
                                                 clt_lr_scheduler *const *schedulers, int n,
                                                 const int64_t *milestones);
/* Advances one epoch and sets the new rate; CLT_ERR_INVALID_ARGUMENT for NULL. On failure the
 * epoch is unchanged. */
CLT_API clt_status clt_lr_scheduler_step(clt_lr_scheduler *s);
/* The rate the schedule last set (NaN for NULL), and its epoch (-1 for NULL). */
CLT_API double clt_lr_scheduler_get_last_lr(const clt_lr_scheduler *s);
CLT_API int64_t clt_lr_scheduler_epoch(const clt_lr_scheduler *s);
/* Frees the schedule (and a sequential one's parts); accepts NULL. The optimizer keeps its rate. */
CLT_API void clt_lr_scheduler_free(clt_lr_scheduler *s);

/* ---- gradient clipping (torch.nn.utils.clip_grad_norm_) ---------------------------------------- */

/* Scales the gradients of the n parameters in place so that their total norm (the norm_type
 * norm of all gradients taken as one vector: 2 for Euclidean, INFINITY for the largest |g|) is
 * at most max_norm: each is multiplied by max_norm / (total + 1e-6) when that is below 1, as
 * PyTorch does (a NaN or infinite total scales by NaN or 0; PyTorch's error_if_nonfinite is not
 * offered). Parameters without a gradient are skipped, one listed twice counts once; the
 * gradients may lie on several devices. *total_norm (if not NULL) receives the total before
 * clipping (0 without gradients). CLT_ERR_INVALID_ARGUMENT for n < 0, a NULL parameter,
 * max_norm < 0 or norm_type <= 0 (NaN included). Everything that can run out of memory is done
 * before the first gradient changes, so a failed allocation leaves every gradient as it was. The
 * module form clips every parameter of m. */
CLT_API clt_status clt_clip_grad_norm_(clt_tensor *const *params, int n, double max_norm,
                                       double norm_type, double *total_norm);
CLT_API clt_status clt_module_clip_grad_norm_(clt_module *m, double max_norm, double norm_type,
                                              double *total_norm);

#ifdef __cplusplus
}
#endif

#endif
