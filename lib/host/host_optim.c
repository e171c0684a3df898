/* The host backend's optimizer update (cl/optim_step.cl), in the parameter's own precision as
 * the OpenCL kernel computes it. */
#include <tgmath.h>

#include "backend.h"
#include "optim_step.cl"

#define HOST_OPTIM(CT)                                                                         \
    static void optim_##CT(const clt__optim_call *c)                                           \
    {                                                                                          \
        CT *param = (CT *)c->param + c->param_offset, *ms = c->m, *vs = c->v;                  \
        const CT *grad = (const CT *)c->grad + c->grad_offset;                                 \
        CT lr = (CT)c->lr, momentum = (CT)c->momentum, dampening = (CT)c->dampening;           \
        CT weight_decay = (CT)c->weight_decay, beta1 = (CT)c->beta1, beta2 = (CT)c->beta2;     \
        CT eps = (CT)c->eps, bias1 = (CT)c->bias1, bias2 = (CT)c->bias2;                       \
        int kind = (int)c->kind;                                                               \
        for (size_t i = 0; i < c->n; i++) {                                                    \
            CT p = param[i], g = grad[i];                                                      \
            CT m = kind == 0 && (momentum == 0 || c->first) ? 0 : ms[i];                       \
            CT v = kind == 0 ? 0 : vs[i];                                                      \
            CLT_OPTIM_STEP(kind, p, g, m, v, lr, momentum, dampening, weight_decay,            \
                           c->nesterov, c->first, beta1, beta2, eps, bias1, bias2);            \
            param[i] = p;                                                                      \
            if (kind != 0 || momentum != 0)                                                    \
                ms[i] = m;                                                                     \
            if (kind != 0)                                                                     \
                vs[i] = v;                                                                     \
        }                                                                                      \
    }

HOST_OPTIM(float)
HOST_OPTIM(double)

clt_status clt__host_optim_step(const char *fn, clt_device *dev, const clt__optim_call *c)
{
    (void)fn;
    (void)dev;
    if (c->dtype == CLT_F64)
        optim_double(c);
    else
        optim_float(c);
    return CLT_OK;
}
