/* The host backend's optimizer update (shared/optim_step.cl), in the parameter's own precision as
 * the OpenCL kernel computes it, one tensor of the call after another. One loop per (precision,
 * kind, momentum or not), with every switch a constant, so that it vectorises; in blocks of
 * CLT__OPTIM_BLOCK elements (a loop of constant length vectorises at every optimisation level)
 * and then the tail. */
#include <tgmath.h>

#include "host.h"
#include "host_simd.h"
#include "cl/optim_step.cl"

#define CLT__OPTIM_BLOCK 16

/* Elements [i, end) with kind K and momentum used (M) or not, as constants. */
#define OPTIM_RANGE(CT, K, M)                                                                  \
    for (; i < end; i++) {                                                                     \
        CT p = param[i], g = grad[i];                                                          \
        CT m = (K) == 0 && (!(M) || first) ? 0 : ms[i];                                        \
        CT v = (K) == 0 ? 0 : vs[i];                                                           \
        CLT_OPTIM_STEP(K, p, g, m, v, lr, momentum, dampening, weight_decay, nesterov, first,  \
                       beta1, beta2, eps, bias1, bias2);                                       \
        param[i] = p;                                                                          \
        if ((K) != 0 || (M))                                                                   \
            ms[i] = m;                                                                         \
        if ((K) != 0)                                                                          \
            vs[i] = v;                                                                         \
    }

#define HOST_OPTIM_KIND(CT, K, M)                                                              \
    CLT__SIMD static void optim_##CT##_##K##_##M(const clt__optim_call *c,                     \
                                                 const clt__optim_tensor *t)                   \
    {                                                                                          \
        CT *restrict param = (CT *)t->param + t->param_offset;                                 \
        CT *restrict ms = t->m, *restrict vs = t->v;                                           \
        const CT *restrict grad = (const CT *)t->grad + t->grad_offset;                        \
        CT lr = (CT)c->lr, momentum = (CT)c->momentum, dampening = (CT)c->dampening;           \
        CT weight_decay = (CT)c->weight_decay, beta1 = (CT)c->beta1, beta2 = (CT)c->beta2;     \
        CT eps = (CT)c->eps, bias1 = (CT)c->bias1, bias2 = (CT)c->bias2;                       \
        bool nesterov = c->nesterov, first = c->first;                                         \
        size_t i = 0, n = t->n;                                                                \
        for (size_t b = 0; b + CLT__OPTIM_BLOCK <= n; b += CLT__OPTIM_BLOCK) {                 \
            size_t end = b + CLT__OPTIM_BLOCK;                                                 \
            i = b;                                                                             \
            OPTIM_RANGE(CT, K, M)                                                              \
        }                                                                                      \
        size_t end = n;                                                                        \
        OPTIM_RANGE(CT, K, M)                                                                  \
    }

#define HOST_OPTIM(CT)                                                                         \
    HOST_OPTIM_KIND(CT, 0, 0)                                                                  \
    HOST_OPTIM_KIND(CT, 0, 1)                                                                  \
    HOST_OPTIM_KIND(CT, 1, 1)                                                                  \
    HOST_OPTIM_KIND(CT, 2, 1)                                                                  \
    static void optim_##CT(const clt__optim_call *c, const clt__optim_tensor *t)               \
    {                                                                                          \
        if (c->kind == CLT_OPTIM_ADAM)                                                         \
            optim_##CT##_1_1(c, t);                                                            \
        else if (c->kind == CLT_OPTIM_ADAMW)                                                   \
            optim_##CT##_2_1(c, t);                                                            \
        else if ((CT)c->momentum != 0)                                                         \
            optim_##CT##_0_1(c, t);                                                            \
        else                                                                                   \
            optim_##CT##_0_0(c, t);                                                            \
    }

HOST_OPTIM(float)
HOST_OPTIM(double)

clt_status clt__host_optim_step(const char *fn, clt_device *dev, const clt__optim_call *c)
{
    (void)fn;
    (void)dev;
    for (int j = 0; j < c->count; j++) {
        if (c->dtype == CLT_F64)
            optim_double(c, &c->t[j]);
        else
            optim_float(c, &c->t[j]);
    }
    return CLT_OK;
}
