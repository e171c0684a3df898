/* The OpenCL backend's optimizer update (kernels/optim.cl), each work-item looping over several
 * elements (cl_run.h). */
#include "cl_internal.h"
#include "cl_run.h"
#include "core/core.h"

clt_status clt__cl_optim_step(const char *fn, clt_device *dev, const clt__optim_call *c)
{
    cl_mem p = c->param, g = c->grad, m = c->m ? (cl_mem)c->m : p, v = c->v ? (cl_mem)c->v : p;
    cl_ulong po = c->param_offset, go = c->grad_offset, n = c->n;
    cl_int kind = (cl_int)c->kind, nesterov = c->nesterov, first = c->first;
    cl_int blocked = clt__cl_run_layout(dev);
    const double s[9] = {c->lr,    c->momentum, c->dampening, c->weight_decay, c->beta1,
                         c->beta2, c->eps,      c->bias1,     c->bias2};
    cl_float f[9];
    cl_double d[9];
    bool dbl = c->dtype == CLT_F64;
    size_t ss = dbl ? sizeof(cl_double) : sizeof(cl_float);
    for (int i = 0; i < 9; i++)
        f[i] = (cl_float)s[i], d[i] = s[i];
#define S(i) {ss, dbl ? (const void *)&d[i] : (const void *)&f[i]}
    const clt__cl_arg args[] = {
        {sizeof p, &p},  {sizeof po, &po}, {sizeof g, &g}, {sizeof go, &go},
        {sizeof m, &m},  {sizeof v, &v},   {sizeof n, &n}, {sizeof kind, &kind},
        S(0),            S(1),             S(2),           S(3),
        {sizeof nesterov, &nesterov},      {sizeof first, &first},
        S(4),            S(5),             S(6),           S(7),
        S(8),            {sizeof blocked, &blocked},
    };
#undef S
    return clt__cl_run(fn, dev, "optim", clt__dtype(c->dtype)->options, "optim_step",
                       CLT__CL_ARGS(args), c->n);
}
