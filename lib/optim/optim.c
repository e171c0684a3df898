/* Optimizers: SGD, Adam and AdamW over a set of parameters, with per-parameter state kept on
 * the parameter's device (and moved there before a step when the parameter has moved), updated
 * by the backends' fused optimizer kernel. */
#include <math.h>
#include <string.h>

#include "graph/graph.h"
#include "cltensor/autograd.h"
#include "cltensor/optim.h"
#include "core/core.h"
#include "nn/module_internal.h"
#include "ops/ops_internal.h"

/* One parameter and its state. */
typedef struct slot {
    clt_tensor *param;
    clt_tensor *m, *v; /* SGD's momentum buffer; Adam's moment estimates */
    int64_t steps;     /* updates of this parameter so far */
} slot;

struct clt_optimizer {
    clt__optim_kind kind;
    clt_sgd_options sgd;
    clt_adam_options adam;
    int count;
    slot *slots;
    int64_t steps;
};

static const char *kind_fn(clt__optim_kind kind)
{
    return kind == CLT_OPTIM_SGD ? "clt_optim_sgd" : kind == CLT_OPTIM_ADAM ? "clt_optim_adam"
                                                                            : "clt_optim_adamw";
}

clt_sgd_options clt_sgd_options_default(void)
{
    return (clt_sgd_options){.init = CLT__OPTIONS_INIT, .lr = 1e-3};
}

clt_adam_options clt_adam_options_default(void)
{
    return (clt_adam_options){.init = CLT__OPTIONS_INIT, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999,
                              .eps = 1e-8};
}

clt_adam_options clt_adamw_options_default(void)
{
    clt_adam_options o = clt_adam_options_default();
    o.weight_decay = 0.01;
    return o;
}

static clt_status check_init(const char *fn, uint32_t init, const char *made_by)
{
    if (init == CLT__OPTIONS_INIT)
        return CLT_OK;
    return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                      "options did not start from %s() (init is %#x): a zeroed struct's fields "
                      "would be taken as values; start from the defaults and change the fields "
                      "you need",
                      made_by, (unsigned)init);
}

static clt_status check_sgd(const char *fn, clt_sgd_options *o)
{
    if (check_init(fn, o->init, "clt_sgd_options_default") != CLT_OK)
        return clt_last_status();
    if (!(o->lr >= 0) || !(o->momentum >= 0) || !(o->dampening >= 0) || !(o->weight_decay >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "lr %g, momentum %g, dampening %g and weight_decay %g must not be "
                          "negative", o->lr, o->momentum, o->dampening, o->weight_decay);
    if (o->nesterov && (o->momentum <= 0 || o->dampening != 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "Nesterov momentum needs momentum > 0 and dampening 0 (got %g and %g)",
                          o->momentum, o->dampening);
    return CLT_OK;
}

static clt_status check_adam(const char *fn, clt_adam_options *o, bool adamw)
{
    if (check_init(fn, o->init, adamw ? "clt_adamw_options_default" : "clt_adam_options_default") !=
        CLT_OK)
        return clt_last_status();
    if (!(o->lr >= 0) || !(o->eps >= 0) || !(o->weight_decay >= 0) ||
        !(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "lr %g, eps %g and weight_decay %g must not be negative, betas %g and "
                          "%g must lie in [0, 1)", o->lr, o->eps, o->weight_decay, o->beta1,
                          o->beta2);
    return CLT_OK;
}

static clt_status check_param(const char *fn, clt_tensor *p, int i)
{
    if (!p)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "parameter %d is NULL", i);
    if (clt__grad_fn(p))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "parameter %d was made by %s: parameters must be leaves", i,
                          clt__op_name(clt__grad_fn(p)->op));
    if (p->dtype != CLT_F32 && p->dtype != CLT_F64)
        return clt__error(CLT_ERR_DTYPE, fn, "parameter %d is %s: optimizers update f32 and f64",
                          i, clt_dtype_name(p->dtype));
    if (!clt_tensor_is_contiguous(p))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "parameter %d is not contiguous", i);
    return CLT_OK;
}

void clt_optim_free(clt_optimizer *opt)
{
    if (!opt)
        return;
    for (int i = 0; i < opt->count; i++) {
        clt_tensor_release(opt->slots[i].param);
        clt_tensor_release(opt->slots[i].m);
        clt_tensor_release(opt->slots[i].v);
    }
    clt__free(opt->slots);
    clt__free(opt);
}

static clt_optimizer *make(clt__optim_kind kind, clt_tensor *const *params, int n,
                           const clt_sgd_options *sgd, const clt_adam_options *adam)
{
    const char *fn = kind_fn(kind);
    clt_optimizer *opt;
    clt_sgd_options sgd_default = clt_sgd_options_default();
    clt_adam_options adam_default =
        kind == CLT_OPTIM_ADAMW ? clt_adamw_options_default() : clt_adam_options_default();
    if (n < 0 || (n > 0 && !params)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "needs %d parameters (params %s)", n,
                   params ? "given" : "NULL");
        return NULL;
    }
    if (kind == CLT_OPTIM_SGD && !sgd)
        sgd = &sgd_default;
    if (kind != CLT_OPTIM_SGD && !adam)
        adam = &adam_default;
    for (int i = 0; i < n; i++)
        if (check_param(fn, params[i], i) != CLT_OK)
            return NULL;
    opt = clt__alloc_zeroed(fn, sizeof *opt);
    if (!opt)
        return NULL;
    opt->kind = kind;
    if (sgd)
        opt->sgd = *sgd;
    if (adam)
        opt->adam = *adam;
    if ((sgd && check_sgd(fn, &opt->sgd) != CLT_OK) || (adam && check_adam(fn, &opt->adam, kind == CLT_OPTIM_ADAMW) != CLT_OK) ||
        !(opt->slots = clt__alloc_zeroed(fn, (size_t)(n ? n : 1) * sizeof *opt->slots))) {
        clt_optim_free(opt);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        bool repeated = false;
        for (int k = 0; k < opt->count && !repeated; k++)
            repeated = opt->slots[k].param == params[i];
        if (!repeated)
            opt->slots[opt->count++].param = clt_tensor_retain(params[i]);
    }
    return opt;
}

clt_optimizer *clt_optim_sgd(clt_tensor *const *params, int n, const clt_sgd_options *options)
{
    return make(CLT_OPTIM_SGD, params, n, options, NULL);
}

clt_optimizer *clt_optim_adam(clt_tensor *const *params, int n, const clt_adam_options *options)
{
    return make(CLT_OPTIM_ADAM, params, n, NULL, options);
}

clt_optimizer *clt_optim_adamw(clt_tensor *const *params, int n, const clt_adam_options *options)
{
    return make(CLT_OPTIM_ADAMW, params, n, NULL, options);
}

/* ---- from a module -------------------------------------------------------------------------- */

static clt_optimizer *from_module(clt__optim_kind kind, clt_module *m, const clt_sgd_options *sgd,
                                  const clt_adam_options *adam)
{
    clt_tensor **params = NULL;
    int n = 0;
    clt_optimizer *opt = NULL;
    if (!m) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, kind_fn(kind), "module is NULL");
        return NULL;
    }
    if (clt__module_collect(kind_fn(kind), m, false, true, &params, &n) == CLT_OK)
        opt = make(kind, params, n, sgd, adam);
    clt__free(params);
    return opt;
}

clt_optimizer *clt_optim_sgd_module(clt_module *m, const clt_sgd_options *options)
{
    return from_module(CLT_OPTIM_SGD, m, options, NULL);
}

clt_optimizer *clt_optim_adam_module(clt_module *m, const clt_adam_options *options)
{
    return from_module(CLT_OPTIM_ADAM, m, NULL, options);
}

clt_optimizer *clt_optim_adamw_module(clt_module *m, const clt_adam_options *options)
{
    return from_module(CLT_OPTIM_ADAMW, m, NULL, options);
}

/* ---- stepping ------------------------------------------------------------------------------- */

/* What one parameter's update needs, made before any update. */
typedef struct prepared {
    clt_tensor *grad;  /* contiguous */
    clt_tensor *m, *v; /* the state on the parameter's device, new or moved (else NULL) */
} prepared;

/* The state tensor s for parameter p: s itself when it fits, a moved copy when p moved (or
 * changed dtype), zeros when there is none. *made receives a new reference or NULL. */
static clt_status state_for(const char *fn, clt_tensor *p, clt_tensor *s, clt_tensor **made)
{
    *made = NULL;
    if (s && s->storage->device == p->storage->device && s->dtype == p->dtype)
        return CLT_OK;
    if (s && s->numel != p->numel)
        return clt__error(CLT_ERR_SHAPE, fn, "a parameter changed its number of elements (%zu, "
                          "its state has %zu)", p->numel, s->numel);
    *made = s ? clt_tensor_to_ex(s, &(clt_to_options){.device = p->storage->device, .dtype = p->dtype})
              : clt_tensor_zeros(p->ndim, p->shape, p->dtype, p->storage->device);
    return *made ? CLT_OK : clt__rename_error(fn);
}

static clt_status prepare(const char *fn, const clt_optimizer *opt, const slot *s, prepared *w)
{
    clt_tensor *p = s->param, *grad = clt__grad_of(p);
    bool needs_m = opt->kind != CLT_OPTIM_SGD || opt->sgd.momentum != 0;
    clt_status st = check_param(fn, p, (int)(s - opt->slots));
    if (st == CLT_OK && (grad->storage->device != p->storage->device || grad->dtype != p->dtype))
        st = clt__error(CLT_ERR_DEVICE_MISMATCH, fn, "parameter %d is %s on %s, its gradient %s on %s",
                        (int)(s - opt->slots), clt_dtype_name(p->dtype), p->storage->device->name,
                        clt_dtype_name(grad->dtype), grad->storage->device->name);
    if (st == CLT_OK && !clt__same_shape(grad, p)) {
        char a[256], b[256];
        clt__format_shape(a, sizeof a, p->ndim, p->shape);
        clt__format_shape(b, sizeof b, grad->ndim, grad->shape);
        st = clt__error(CLT_ERR_SHAPE, fn, "parameter %d has shape %s, its gradient %s",
                        (int)(s - opt->slots), a, b);
    }
    if (st == CLT_OK && !(w->grad = clt__contiguous(fn, grad)))
        st = clt_last_status();
    if (st == CLT_OK && needs_m)
        st = state_for(fn, p, s->m, &w->m);
    if (st == CLT_OK && opt->kind != CLT_OPTIM_SGD)
        st = state_for(fn, p, s->v, &w->v);
    return st;
}

/* The launch's settings for a slot after `steps` updates. */
static void settings(const clt_optimizer *opt, clt_dtype dtype, int64_t steps, clt__optim_call *c)
{
    double t = (double)(steps + 1);
    *c = (clt__optim_call){.kind = opt->kind, .dtype = dtype, .first = steps == 0};
    if (opt->kind == CLT_OPTIM_SGD) {
        c->lr = opt->sgd.lr, c->momentum = opt->sgd.momentum, c->dampening = opt->sgd.dampening;
        c->weight_decay = opt->sgd.weight_decay, c->nesterov = opt->sgd.nesterov;
    } else {
        c->lr = opt->adam.lr, c->beta1 = opt->adam.beta1, c->beta2 = opt->adam.beta2;
        c->eps = opt->adam.eps, c->weight_decay = opt->adam.weight_decay;
        c->bias1 = 1 - pow(opt->adam.beta1, t), c->bias2 = 1 - pow(opt->adam.beta2, t);
    }
}

/* Takes slot s's new state and counts its step; fills *t with its tensors (n 0: nothing to
 * launch). */
static clt_status enter(const char *fn, slot *s, const prepared *w, clt__optim_tensor *t)
{
    clt_tensor *p = s->param;
    if (w->m) {
        clt_tensor_release(s->m);
        s->m = clt_tensor_retain(w->m);
    }
    if (w->v) {
        clt_tensor_release(s->v);
        s->v = clt_tensor_retain(w->v);
    }
    *t = (clt__optim_tensor){.n = p->numel, .param = p->storage->buf, .param_offset = p->offset,
                             .grad = w->grad->storage->buf, .grad_offset = w->grad->offset,
                             .m = s->m ? s->m->storage->buf : NULL,
                             .v = s->v ? s->v->storage->buf : NULL};
    s->steps++;
    clt__tensor_bump_version(p);
    if (p->numel && clt__storage_sync(fn, p->storage) != CLT_OK)
        return clt_last_status();
    return CLT_OK;
}

/* Updates the parameters that have gradients (prepared in w): consecutive ones of one device,
 * dtype and step count CLT__OPTIM_GROUP to a launch (a model's few dozen parameters took a launch
 * each). */
static clt_status update_all(const char *fn, clt_optimizer *opt, const prepared *w)
{
    clt__optim_call c = {.count = 0};
    clt_device *dev = NULL;
    int64_t steps = 0;
    bool open = false; /* a group is being gathered into c */
    clt_status st = CLT_OK;
    for (int i = 0; i < opt->count && st == CLT_OK; i++) {
        slot *s = &opt->slots[i];
        clt_tensor *p = s->param;
        if (!w[i].grad)
            continue;
        if (open && (c.count == CLT__OPTIM_GROUP || p->storage->device != dev ||
                     p->dtype != c.dtype || s->steps != steps)) {
            st = c.count ? CLT__BACKEND_CALL(optim_step, fn, dev, c.dtype, &c) : CLT_OK;
            open = false;
        }
        if (st == CLT_OK && !open) {
            dev = p->storage->device, steps = s->steps, open = true;
            settings(opt, p->dtype, steps, &c);
        }
        clt__optim_tensor t;
        if (st == CLT_OK && (st = enter(fn, s, &w[i], &t)) == CLT_OK && t.n)
            c.t[c.count++] = t;
    }
    if (st == CLT_OK && open && c.count)
        st = CLT__BACKEND_CALL(optim_step, fn, dev, c.dtype, &c);
    return st;
}

clt_status clt_optim_step(clt_optimizer *opt)
{
    static const char *const fn = "clt_optim_step";
    prepared *w;
    clt_status st = CLT_OK;
    if (!opt)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "optimizer is NULL");
    w = clt__alloc_zeroed(fn, (size_t)(opt->count ? opt->count : 1) * sizeof *w);
    if (!w)
        return clt_last_status();
    bool prev = clt_grad_set_enabled(false);
    for (int i = 0; i < opt->count && st == CLT_OK; i++)
        if (clt__grad_of(opt->slots[i].param))
            st = prepare(fn, opt, &opt->slots[i], &w[i]);
    if (st == CLT_OK)
        st = update_all(fn, opt, w);
    if (st == CLT_OK)
        opt->steps++;
    for (int i = 0; i < opt->count; i++) {
        clt_tensor_release(w[i].grad);
        clt_tensor_release(w[i].m);
        clt_tensor_release(w[i].v);
    }
    clt_grad_set_enabled(prev);
    clt__free(w);
    return st;
}

void clt_optim_zero_grad(clt_optimizer *opt)
{
    for (int i = 0; opt && i < opt->count; i++)
        clt_tensor_set_grad(opt->slots[i].param, NULL);
}

double clt_optim_lr(const clt_optimizer *opt)
{
    if (!opt)
        return NAN;
    return opt->kind == CLT_OPTIM_SGD ? opt->sgd.lr : opt->adam.lr;
}

clt_status clt_optim_set_lr(clt_optimizer *opt, double lr)
{
    static const char *const fn = "clt_optim_set_lr";
    if (!opt || !(lr >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "needs an optimizer and a rate >= 0 (got %g)", lr);
    if (opt->kind == CLT_OPTIM_SGD)
        opt->sgd.lr = lr;
    else
        opt->adam.lr = lr;
    return CLT_OK;
}

int64_t clt_optim_steps(const clt_optimizer *opt)
{
    return opt ? opt->steps : 0;
}
