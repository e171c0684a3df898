/* Learning-rate schedules (torch.optim.lr_scheduler's StepLR, ExponentialLR, CosineAnnealingLR,
 * LinearLR and SequentialLR) in their closed forms, and gradient clipping by the total norm
 * (torch.nn.utils.clip_grad_norm_). */
#include <math.h>

#include "cltensor/autograd.h"
#include "cltensor/optim.h"
#include "core/core.h"
#include "nn/module_internal.h"

#define PI 3.14159265358979323846

typedef enum kind { STEP, EXPONENTIAL, COSINE, LINEAR, SEQUENTIAL } kind;

struct clt_lr_scheduler {
    kind kind;
    clt_optimizer *opt;   /* borrowed */
    double base_lr;       /* the optimizer's rate when the schedule was made */
    int64_t epoch;        /* steps taken */
    int64_t period;       /* STEP: step_size; COSINE: T_max; LINEAR: total_iters */
    double a, b;          /* STEP, EXPONENTIAL: gamma; COSINE: eta_min; LINEAR: the factors */
    clt_lr_scheduler **parts; /* SEQUENTIAL: owned */
    int64_t *milestones;
    int count;
    double last_lr;
};

/* The rate of schedule s (not SEQUENTIAL) at `epoch`, from base. */
static double rate_at(const clt_lr_scheduler *s, double base, int64_t epoch)
{
    switch (s->kind) {
    case STEP:
        return base * pow(s->a, (double)(epoch / s->period));
    case EXPONENTIAL:
        return base * pow(s->a, (double)epoch);
    case COSINE:
        return s->a + (base - s->a) * (1 + cos(PI * (double)epoch / (double)s->period)) / 2;
    case LINEAR: {
        int64_t e = epoch < s->period ? epoch : s->period;
        return base * (s->a + (s->b - s->a) * (double)e / (double)s->period);
    }
    case SEQUENTIAL:
        break;
    }
    return base;
}

/* The rate at the scheduler's current epoch; SEQUENTIAL picks its part by the milestones and
 * runs it from 0 at its milestone. */
static double current_rate(const clt_lr_scheduler *s)
{
    if (s->kind != SEQUENTIAL)
        return rate_at(s, s->base_lr, s->epoch);
    int i = 0;
    while (i < s->count - 1 && s->epoch >= s->milestones[i])
        i++;
    return rate_at(s->parts[i], s->base_lr, s->epoch - (i ? s->milestones[i - 1] : 0));
}

static clt_status apply(const char *fn, clt_lr_scheduler *s)
{
    double lr = current_rate(s);
    if (clt_optim_set_lr(s->opt, lr) != CLT_OK)
        return clt__rename_error(fn);
    s->last_lr = lr;
    return CLT_OK;
}

/* A schedule of `k` over opt, its rate at epoch 0 set (as PyTorch's constructors do). */
static clt_lr_scheduler *make(const char *fn, clt_optimizer *opt, kind k, int64_t period, double a,
                              double b)
{
    if (!opt) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "optimizer is NULL");
        return NULL;
    }
    clt_lr_scheduler *s = clt__alloc_zeroed(fn, sizeof *s);
    if (!s)
        return NULL;
    *s = (clt_lr_scheduler){.kind = k, .opt = opt, .base_lr = clt_optim_lr(opt), .period = period,
                            .a = a, .b = b};
    if (k != SEQUENTIAL && apply(fn, s) != CLT_OK) {
        clt__free(s);
        return NULL;
    }
    return s;
}

/* A schedule with a period (step_size, t_max; 1 for ExponentialLR) and one value (gamma,
 * eta_min), both checked. */
static clt_lr_scheduler *periodic(const char *fn, clt_optimizer *opt, kind k, const char *pname,
                                  int64_t period, const char *vname, double v)
{
    if (period < 1 || !(v >= 0) || isinf(v)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "%s %lld must be positive and %s %g finite and not negative", pname,
                   (long long)period, vname, v);
        return NULL;
    }
    return make(fn, opt, k, period, v, 0);
}

clt_lr_scheduler *clt_lr_step(clt_optimizer *opt, int64_t step_size, double gamma)
{
    return periodic("clt_lr_step", opt, STEP, "step_size", step_size, "gamma", gamma);
}

clt_lr_scheduler *clt_lr_exponential(clt_optimizer *opt, double gamma)
{
    return periodic("clt_lr_exponential", opt, EXPONENTIAL, "period", 1, "gamma", gamma);
}

clt_lr_scheduler *clt_lr_cosine(clt_optimizer *opt, int64_t t_max, double eta_min)
{
    return periodic("clt_lr_cosine", opt, COSINE, "t_max", t_max, "eta_min", eta_min);
}

clt_lr_scheduler *clt_lr_linear(clt_optimizer *opt, double start_factor, double end_factor,
                                int64_t total_iters)
{
    if (!(start_factor > 0 && start_factor <= 1) || !(end_factor >= 0 && end_factor <= 1) ||
        total_iters < 1) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_lr_linear",
                   "start_factor %g must be within (0, 1], end_factor %g within [0, 1] and "
                   "total_iters %lld positive",
                   start_factor, end_factor, (long long)total_iters);
        return NULL;
    }
    return make("clt_lr_linear", opt, LINEAR, total_iters, start_factor, end_factor);
}

clt_lr_scheduler *clt_lr_sequential_take(clt_optimizer *opt, clt_lr_scheduler *const *schedulers,
                                         int n, const int64_t *milestones)
{
    static const char *const fn = "clt_lr_sequential_take";
    clt_lr_scheduler *s = NULL;
    bool ok = opt && schedulers && n >= 1 && (n == 1 || milestones);
    for (int i = 0; ok && i < n; i++)
        ok = schedulers[i] && schedulers[i]->opt == opt && schedulers[i]->kind != SEQUENTIAL &&
             (i == 0 || milestones[i - 1] > (i > 1 ? milestones[i - 2] : 0));
    if (!ok)
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "needs an optimizer, %d schedules of it (not sequential ones) and %d "
                   "increasing positive milestones",
                   n, n - 1);
    else if ((s = make(fn, opt, SEQUENTIAL, 0, 0, 0))) {
        s->parts = clt__alloc(fn, (size_t)n * sizeof *s->parts);
        s->milestones = n > 1 ? clt__alloc(fn, (size_t)(n - 1) * sizeof *s->milestones) : NULL;
        if (!s->parts || (n > 1 && !s->milestones)) {
            clt__free(s->parts), clt__free(s->milestones), clt__free(s);
            s = NULL;
        } else {
            /* every part counts from the rate the first was made with */
            s->base_lr = schedulers[0]->base_lr;
            for (int i = 0; i < n; i++)
                s->parts[i] = schedulers[i];
            for (int i = 0; i + 1 < n; i++)
                s->milestones[i] = milestones[i];
            s->count = n;
            if (apply(fn, s) != CLT_OK) {
                s->count = 0;
                clt__free(s->parts), clt__free(s->milestones), clt__free(s);
                s = NULL;
            }
        }
    }
    if (!s)
        for (int i = 0; schedulers && i < n; i++)
            clt_lr_scheduler_free(schedulers[i]);
    return s;
}

clt_status clt_lr_scheduler_step(clt_lr_scheduler *s)
{
    if (!s)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_lr_scheduler_step", "scheduler is NULL");
    s->epoch++;
    if (apply("clt_lr_scheduler_step", s) != CLT_OK) {
        s->epoch--;
        return clt_last_status();
    }
    return CLT_OK;
}

double clt_lr_scheduler_get_last_lr(const clt_lr_scheduler *s)
{
    return s ? s->last_lr : NAN;
}

int64_t clt_lr_scheduler_epoch(const clt_lr_scheduler *s)
{
    return s ? s->epoch : -1;
}

void clt_lr_scheduler_free(clt_lr_scheduler *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->count; i++)
        clt_lr_scheduler_free(s->parts[i]);
    clt__free(s->parts);
    clt__free(s->milestones);
    clt__free(s);
}

/* ---- clip_grad_norm_ ---------------------------------------------------------------------- */

/* sum(|g|^p) of one gradient (p 2: sum(g * g); p inf: max |g|), read to the host. */
static clt_status grad_norm_term(const char *fn, clt_tensor *g, double p, double *term)
{
    clt_tensor *a = clt_abs(g), *powd = NULL, *r = NULL;
    if (a && isinf(p))
        r = clt_amax(a, NULL, 0, false);
    else if (a) {
        powd = p == 1 ? clt_tensor_retain(a) : p == 2 ? clt_mul(a, a) : clt_pow_scalar(a, p);
        r = powd ? clt_sum(powd, NULL, 0, false) : NULL;
    }
    clt_status st = r ? clt_tensor_item(r, term) : clt_last_status();
    clt_tensor_release(a), clt_tensor_release(powd), clt_tensor_release(r);
    return st == CLT_OK ? CLT_OK : clt__rename_error(fn);
}

clt_status clt_clip_grad_norm_(clt_tensor *const *params, int n, double max_norm, double norm_type,
                               double *total_norm)
{
    static const char *const fn = "clt_clip_grad_norm_";
    clt_status st = CLT_OK;
    double total = 0;
    int with_grad = 0;
    clt_tensor **grads, **coefs;
    if (n < 0 || (n && !params) || !(max_norm >= 0) || !(norm_type > 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "needs %d parameters (not NULL), max_norm %g >= 0 and norm_type %g > 0",
                          n, max_norm, norm_type);
    for (int i = 0; i < n; i++)
        if (!params[i])
            return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "parameter %d is NULL", i);
    grads = clt__alloc_zeroed(fn, (size_t)(n ? n : 1) * sizeof *grads);
    coefs = grads ? clt__alloc_zeroed(fn, (size_t)(n ? n : 1) * sizeof *coefs) : NULL;
    if (!coefs) {
        clt__free(grads);
        return clt_last_status();
    }
    bool prev = clt_grad_set_enabled(false);
    for (int i = 0; i < n && st == CLT_OK; i++) {
        double term;
        if (!(grads[i] = clt_tensor_grad(params[i])))
            continue;
        for (int j = 0; j < i; j++) /* a parameter listed twice counts once */
            if (grads[j] == grads[i]) {
                clt_tensor_release(grads[i]);
                grads[i] = NULL;
                break;
            }
        if (!grads[i])
            continue;
        with_grad++;
        st = grad_norm_term(fn, grads[i], norm_type, &term);
        total = isinf(norm_type) ? fmax(total, term) : total + term;
    }
    if (st == CLT_OK && !isinf(norm_type))
        total = norm_type == 1 ? total : norm_type == 2 ? sqrt(total) : pow(total, 1 / norm_type);
    /* PyTorch's coefficient, clamped to 1: max_norm / (total + 1e-6) */
    double coef = max_norm / (total + 1e-6);
    bool scale = !(coef >= 1); /* a NaN norm scales by NaN, as PyTorch's does */
    /* every coefficient made before any gradient changes, so a failure changes nothing */
    for (int i = 0; i < n && st == CLT_OK && scale; i++)
        if (grads[i] && !(coefs[i] = clt_tensor_full(0, NULL, coef, clt_tensor_dtype(grads[i]),
                                                     clt_tensor_device(grads[i]))))
            st = clt__rename_error(fn);
    for (int i = 0; i < n && st == CLT_OK && scale; i++)
        if (grads[i] && clt_mul_(grads[i], coefs[i]) != CLT_OK)
            st = clt__rename_error(fn);
    clt_grad_set_enabled(prev);
    for (int i = 0; i < n; i++)
        clt_tensor_release(grads[i]), clt_tensor_release(coefs[i]);
    clt__free(grads), clt__free(coefs);
    if (st == CLT_OK && total_norm)
        *total_norm = with_grad ? total : 0;
    return st;
}

clt_status clt_module_clip_grad_norm_(clt_module *m, double max_norm, double norm_type,
                                      double *total_norm)
{
    static const char *const fn = "clt_module_clip_grad_norm_";
    clt_tensor **params = NULL;
    int n = 0;
    clt_status st;
    if (!m)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
    if ((st = clt__module_collect(fn, m, false, false, &params, &n)) == CLT_OK &&
        (st = clt_clip_grad_norm_(params, n, max_norm, norm_type, total_norm)) != CLT_OK)
        clt__rename_error(fn);
    clt__free(params);
    return st;
}
