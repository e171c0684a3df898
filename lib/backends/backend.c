/* What the backends share about the elementwise operations: names, inputs and result kinds,
 * from the table in shared/elementwise_ops.cl; and which strided copies are batched transposes. */
#include "backends/backend.h"
#include "core/core.h"

#define CLT__EW_INFO(name, inputs, fe, ie, res) {#name, inputs, #res[0] == 'B'},
static const struct {
    const char *name;
    int inputs;
    bool gives_bool;
} ew_info[CLT_EW_COUNT] = {CLT_EW_OPS(CLT__EW_INFO){"copy", 1, false}, {"where", 3, false}};

const char *clt__ew_name(clt__ew_op op)
{
    return ew_info[op].name;
}

int clt__ew_inputs(clt__ew_op op)
{
    return ew_info[op].inputs;
}

bool clt__ew_gives_bool(clt__ew_op op)
{
    return ew_info[op].gives_bool;
}

/* The dimension of stride 1 and extent > 1 in strides (-1 if none). */
static int unit_dim(const clt__ew_call *c, const int64_t *strides)
{
    for (int d = c->ndim - 1; d >= 0; d--)
        if (strides[d] == 1 && c->shape[d] > 1)
            return d;
    return -1;
}

/* Fewer, longer dimensions for the same walk: dimensions of size 1 dropped, and each merged
 * into the one before it where every operand steps over both as over one (the outer stride the
 * inner one times the inner size). (N, C, H, W) against a broadcast (1, C, 1, 1) becomes
 * (N, C, H * W); operands that all run in order become the flat walk (ndim 0). */
void clt__ew_collapse(clt__ew_call *c, int nin)
{
    clt__operand *ops[4] = {&c->out, &c->in[0], &c->in[1], &c->in[2]};
    int nd = 0, nops = nin + 1;
    for (int d = 0; d < c->ndim; d++) {
        if (c->shape[d] == 1)
            continue;
        bool merge = nd > 0;
        for (int i = 0; merge && i < nops; i++)
            merge = ops[i]->strides[nd - 1] == ops[i]->strides[d] * c->shape[d];
        if (merge) {
            c->shape[nd - 1] *= c->shape[d];
            for (int i = 0; i < nops; i++)
                ops[i]->strides[nd - 1] = ops[i]->strides[d];
            continue;
        }
        c->shape[nd] = c->shape[d];
        for (int i = 0; i < nops; i++)
            ops[i]->strides[nd] = ops[i]->strides[d];
        nd++;
    }
    bool flat = nd <= 1;
    for (int i = 0; flat && nd == 1 && i < nops; i++)
        flat = ops[i]->strides[0] == 1;
    for (int d = nd; d < c->ndim; d++) { /* the dimensions left over: unused */
        c->shape[d] = 1;
        for (int i = 0; i < 4; i++)
            ops[i]->strides[d] = 0;
    }
    c->ndim = flat ? 0 : nd;
}

bool clt__tile_plan_of(const clt__ew_call *c, clt__tile_plan *plan)
{
    int q, p;
    if (c->op != CLT_EW_copy || c->ndim < 2)
        return false;
    q = unit_dim(c, c->out.strides);
    p = unit_dim(c, c->in[0].strides);
    if (q < 0 || p < 0 || p == q)
        return false;
    *plan = (clt__tile_plan){.rows = (size_t)c->shape[p], .cols = (size_t)c->shape[q], .batch = 1,
                             .out_rs = c->out.strides[p], .in_cs = c->in[0].strides[q]};
    for (int d = 0; d < c->ndim; d++) {
        if (d == p || d == q || c->shape[d] == 1)
            continue;
        plan->bshape[plan->nb] = c->shape[d];
        plan->out_bs[plan->nb] = c->out.strides[d];
        plan->in_bs[plan->nb++] = c->in[0].strides[d];
        plan->batch *= (size_t)c->shape[d];
    }
    return true;
}

clt_status clt__backend_unsupported(const char *fn, const clt_device *dev, const char *op,
                                    clt_dtype dtype)
{
    return clt__error(CLT_ERR_UNSUPPORTED, fn, "%s of %s is not supported on %s (%s): the %s "
                      "backend has no %s", op, clt_dtype_name(dtype), dev->name, dev->info.name,
                      dev->backend->name, op);
}

clt_status clt__backend_check(const char *fn, const clt__backend *b)
{
#define CLT__CHECK_REQUIRED(entry, ret, params, kind)                                          \
    if (CLT__IS_##kind && !b->entry)                                                           \
        return clt__error(CLT_ERR_INTERNAL, fn, "the %s backend has no %s", b->name, #entry);
#define CLT__IS_REQUIRED 1
#define CLT__IS_OPTIONAL 0
    CLT__BACKEND_OPS(CLT__CHECK_REQUIRED)
#undef CLT__CHECK_REQUIRED
#undef CLT__IS_REQUIRED
#undef CLT__IS_OPTIONAL
    return CLT_OK;
}
