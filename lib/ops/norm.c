/* Batch and layer normalisation, composed from the reductions and the elementwise operations;
 * batch normalisation in evaluation folds its fixed statistics into one scale and shift per
 * channel. */
#include "cltensor/ops.h"
#include "core/core.h"
#include "cltensor/autograd.h"
#include "ops_internal.h"

/* (x - mean) / sqrt(var + eps) * weight + bias, every statistic already broadcastable. */
static clt_tensor *normalise(clt_tensor *x, clt_tensor *mean, clt_tensor *var, double eps,
                             clt_tensor *weight, clt_tensor *bias)
{
    clt_tensor *t[4] = {NULL}, *out = NULL;
    t[0] = clt_sub(x, mean);
    t[1] = t[0] ? clt_add_scalar(var, eps) : NULL;
    t[2] = t[1] ? clt_rsqrt(t[1]) : NULL;
    out = t[2] ? clt_mul(t[0], t[2]) : NULL;
    if (out && weight) {
        t[3] = out;
        out = clt_mul(t[3], weight);
        clt_tensor_release(t[3]);
        t[3] = NULL;
    }
    if (out && bias) {
        t[3] = out;
        out = clt_add(t[3], bias);
    }
    clt__release_all(t, 4);
    return out;
}

/* A (C,) tensor viewed as (1, C, 1, ...) for an ndim-dimensional input. */
static clt_tensor *per_channel(clt_tensor *v, int ndim)
{
    int64_t shape[CLT_MAX_DIMS];
    if (!v)
        return NULL;
    for (int d = 0; d < ndim; d++)
        shape[d] = d == 1 ? v->shape[0] : 1;
    return clt_reshape(v, ndim, shape);
}

/* normalise with fixed statistics, folded as PyTorch's inference does: x * scale + shift with
 * scale = weight / sqrt(var + eps) and shift = bias - mean * scale per channel, one pass over x
 * (addcmul) instead of four; the scale one fused operation (mul_rsqrt), the shift one addcmul:
 * three launches a call, where the scale and shift of separate operations took six. */
static clt_tensor *normalise_folded(clt_tensor *x, clt_tensor *mean, clt_tensor *var, double eps,
                                    clt_tensor *weight, clt_tensor *bias)
{
    clt_tensor *t[4] = {NULL}, *out = NULL;
    if (weight) {
        t[0] = clt__ew("clt_batch_norm", CLT_EW_mul_rsqrt, weight, var, eps, 0);
    } else {
        t[1] = clt_add_scalar(var, eps);
        t[0] = t[1] ? clt_rsqrt(t[1]) : NULL;
    }
    if (t[0] && bias) {
        t[2] = clt_addcmul(bias, mean, t[0], -1); /* bias - mean * scale */
    } else if (t[0]) {
        t[3] = clt_mul(mean, t[0]);
        t[2] = t[3] ? clt_neg(t[3]) : NULL;
    }
    out = t[2] ? clt_addcmul(t[2], x, t[0], 1) : NULL;
    clt__release_all(t, 4);
    return out;
}

clt_tensor *clt_batch_norm(clt_tensor *x, clt_tensor *running_mean, clt_tensor *running_var,
                           clt_tensor *weight, clt_tensor *bias, bool training, double momentum,
                           double eps)
{
    static const char *const fn = "clt_batch_norm";
    clt_tensor *given[4] = {running_mean, running_var, weight, bias};
    clt_tensor *mean = NULL, *var = NULL, *mean_b = NULL, *var_b = NULL, *w_b = NULL, *b_b = NULL;
    clt_tensor *out = NULL;
    int dims[CLT_MAX_DIMS], nd = 0;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__need_floating(fn, x) != CLT_OK)
        return NULL;
    if (x->ndim < 2) {
        clt__error(CLT_ERR_SHAPE, fn, "the input needs (N, C, ...) dimensions, not %d", x->ndim);
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        if (clt__same_device_as(fn, x, given[i]) != CLT_OK)
            return NULL;
        if (given[i] && (given[i]->ndim != 1 || given[i]->shape[0] != x->shape[1])) {
            clt__error(CLT_ERR_SHAPE, fn, "running statistics, weight and bias must have shape (%lld,)",
                       (long long)x->shape[1]);
            return NULL;
        }
    }
    if (!training && (!running_mean || !running_var)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "evaluation needs the running mean and variance");
        return NULL;
    }
    if (x->numel == 0) /* nothing to normalise; the statistics stay as they are */
        return clt_tensor_empty(x->ndim, x->shape, x->dtype, x->storage->device);
    for (int d = 0; d < x->ndim; d++)
        if (d != 1)
            dims[nd++] = d;
    if (training) {
        mean = clt_mean(x, dims, nd, false);
        var = mean ? clt_var(x, dims, nd, 0, false) : NULL;
    } else {
        mean = clt_tensor_retain(running_mean);
        var = clt_tensor_retain(running_var);
    }
    mean_b = per_channel(mean, x->ndim);
    var_b = per_channel(var, x->ndim);
    w_b = per_channel(weight, x->ndim);
    b_b = per_channel(bias, x->ndim);
    if (mean_b && var_b && (!weight || w_b) && (!bias || b_b))
        out = (training ? normalise : normalise_folded)(x, mean_b, var_b, eps, w_b, b_b);
    if (out && training && running_mean && running_var) {
        /* last, so that a failure before leaves the running statistics as they were:
         * running = (1 - momentum) * running + momentum * batch (unbiased variance) */
        int64_t n = (int64_t)x->numel / x->shape[1];
        bool prev = clt_grad_set_enabled(false);
        clt_tensor *m1 = clt_mul_scalar(running_mean, 1 - momentum);
        clt_tensor *m2 = m1 ? clt_mul_scalar(mean, momentum) : NULL;
        clt_tensor *v1 = m2 ? clt_mul_scalar(running_var, 1 - momentum) : NULL;
        clt_tensor *v2 = v1 ? clt_mul_scalar(var, momentum * (double)n / (double)(n > 1 ? n - 1 : 1)) : NULL;
        clt_tensor *nm = v2 ? clt_add(m1, m2) : NULL, *nv = nm ? clt_add(v1, v2) : NULL;
        if (!nv || clt_copy_(running_mean, nm) != CLT_OK || clt_copy_(running_var, nv) != CLT_OK) {
            clt_tensor_release(out);
            out = NULL;
        }
        clt_tensor *tmp[6] = {m1, m2, v1, v2, nm, nv};
        clt__release_all(tmp, 6);
        clt_grad_set_enabled(prev);
    }
    if (!out)
        clt__rename_error(fn);
    clt_tensor *tmp[6] = {mean, var, mean_b, var_b, w_b, b_b};
    clt__release_all(tmp, 6);
    return out;
}

clt_tensor *clt_layer_norm(clt_tensor *x, int normalized_ndim, clt_tensor *weight,
                           clt_tensor *bias, double eps)
{
    static const char *const fn = "clt_layer_norm";
    int dims[CLT_MAX_DIMS];
    clt_tensor *mean = NULL, *var = NULL, *out = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__need_floating(fn, x) != CLT_OK ||
        clt__same_device_as(fn, x, weight) != CLT_OK || clt__same_device_as(fn, x, bias) != CLT_OK)
        return NULL;
    if (normalized_ndim < 1 || normalized_ndim > x->ndim) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "normalized_ndim %d is outside 1..%d (the input's dimensions)", normalized_ndim,
                   x->ndim);
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        clt_tensor *p = i ? bias : weight;
        bool fits = !p || p->ndim == normalized_ndim;
        for (int d = 0; fits && p && d < normalized_ndim; d++)
            fits = p->shape[d] == x->shape[x->ndim - normalized_ndim + d];
        if (!fits) {
            clt__error(CLT_ERR_SHAPE, fn, "weight and bias must have the shape of the last %d dimensions",
                       normalized_ndim);
            return NULL;
        }
    }
    for (int d = 0; d < normalized_ndim; d++)
        dims[d] = x->ndim - normalized_ndim + d;
    mean = clt_mean(x, dims, normalized_ndim, true);
    var = mean ? clt_var(x, dims, normalized_ndim, 0, true) : NULL;
    out = var ? normalise(x, mean, var, eps, weight, bias) : NULL;
    if (!out)
        clt__rename_error(fn);
    clt_tensor_release(var);
    clt_tensor_release(mean);
    return out;
}
