/* The OpenCL backend's optimizer update (cl/optim.cl): up to CLT__OPTIM_GROUP parameters a
 * launch, each work-item looping over several elements of each (cl_launch.h). */
#include "cl_internal.h"
#include "cl_launch.h"
#include "core/core.h"

#define OPTIM_ARGS_PER_TENSOR 7

clt_status clt__cl_optim_step(const char *fn, clt_device *dev, const clt__optim_call *c)
{
    cl_mem mem[CLT__OPTIM_GROUP][4];
    cl_ulong po[CLT__OPTIM_GROUP], go[CLT__OPTIM_GROUP], n[CLT__OPTIM_GROUP];
    clt__cl_arg args[CLT__OPTIM_GROUP * OPTIM_ARGS_PER_TENSOR + 14];
    size_t total = 0;
    int at = 0;
    for (int j = 0; j < CLT__OPTIM_GROUP; j++) { /* tensors past count: none, any buffer */
        const clt__optim_tensor *t = &c->t[j < c->count ? j : 0];
        mem[j][0] = t->param, mem[j][1] = t->grad;
        mem[j][2] = t->m ? (cl_mem)t->m : mem[j][0], mem[j][3] = t->v ? (cl_mem)t->v : mem[j][0];
        po[j] = t->param_offset, go[j] = t->grad_offset, n[j] = j < c->count ? t->n : 0;
        total += n[j];
        args[at++] = (clt__cl_arg){sizeof mem[j][0], &mem[j][0]};
        args[at++] = (clt__cl_arg){sizeof po[j], &po[j]};
        args[at++] = (clt__cl_arg){sizeof mem[j][1], &mem[j][1]};
        args[at++] = (clt__cl_arg){sizeof go[j], &go[j]};
        args[at++] = (clt__cl_arg){sizeof mem[j][2], &mem[j][2]};
        args[at++] = (clt__cl_arg){sizeof mem[j][3], &mem[j][3]};
        args[at++] = (clt__cl_arg){sizeof n[j], &n[j]};
    }
    cl_int count = c->count, kind = (cl_int)c->kind, nesterov = c->nesterov, first = c->first;
    cl_int blocked = clt__cl_run_layout(dev);
    const double s[9] = {c->lr,    c->momentum, c->dampening, c->weight_decay, c->beta1,
                         c->beta2, c->eps,      c->bias1,     c->bias2};
    cl_float f[9];
    cl_double d[9];
    bool dbl = c->dtype == CLT_F64;
    size_t ss = dbl ? sizeof(cl_double) : sizeof(cl_float);
    for (int i = 0; i < 9; i++)
        f[i] = (cl_float)s[i], d[i] = s[i];
#define S(i) (clt__cl_arg){ss, dbl ? (const void *)&d[i] : (const void *)&f[i]}
    args[at++] = (clt__cl_arg){sizeof count, &count};
    args[at++] = (clt__cl_arg){sizeof kind, &kind};
    for (int i = 0; i < 4; i++) /* lr, momentum, dampening, weight_decay */
        args[at++] = S(i);
    args[at++] = (clt__cl_arg){sizeof nesterov, &nesterov};
    args[at++] = (clt__cl_arg){sizeof first, &first};
    for (int i = 4; i < 9; i++) /* beta1, beta2, eps, bias1, bias2 */
        args[at++] = S(i);
    args[at++] = (clt__cl_arg){sizeof blocked, &blocked};
#undef S
    return clt__cl_run(fn, dev, "optim", clt__dtype(c->dtype)->options, "optim_step", args, at,
                       total);
}
