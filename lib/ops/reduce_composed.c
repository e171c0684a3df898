/* Reductions composed of the backend's (reduce.c) and elementwise operations: mean, var and std
 * from sums and squared deviations, logsumexp from the maximum and a sum of exponentials, and
 * torch.max / torch.min along a dimension with their indices. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cltensor/ops.h"
#include "core/core.h"
#include "graph/graph.h"
#include "ops_internal.h"
#include "reduce_plan.h"

/* ---- mean, var, std -------------------------------------------------------------------------- */

static clt_tensor *mean_impl(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    static const char *const fn = "clt_mean";
    clt__reduce_plan p;
    clt_tensor *xc, *s, *m = NULL;
    if (clt__reduce_plan_make(fn, x, dims, ndims, keepdim, &p) != CLT_OK ||
        clt__need_floating(fn, x) != CLT_OK)
        return NULL;
    clt__reduce_columns(x, &p);
    xc = clt__reduce_arrange(fn, x, &p);
    if (!xc)
        return NULL;
    if (p.len > 0 && p.inner <= 1) { /* one launch: the sum divided where it is made */
        m = clt__reduce_new(fn, CLT_REDUCE_MEAN, xc, p.rows, p.len, 0, p.ndim, p.shape, NULL);
    } else { /* down columns, or no elements (0 / 0 = NaN) */
        s = clt__reduce_new(fn, CLT_REDUCE_SUM, xc, p.rows, p.len, p.inner, p.ndim, p.shape, NULL);
        if (s)
            m = clt__reduce_named(fn, clt_div_scalar(s, (double)p.len));
        clt_tensor_release(s);
    }
    clt_tensor_release(xc);
    return clt__reduce_finish(fn, m, x->dtype);
}

static clt_tensor *variance(const char *fn, clt_tensor *x, const int *dims, int ndims,
                            int64_t correction, bool keepdim, bool root)
{
    clt__reduce_plan p;
    clt_tensor *xc, *s = NULL, *m = NULL, *q = NULL, *v = NULL, *r = NULL;
    double divisor;
    if (clt__reduce_plan_make(fn, x, dims, ndims, keepdim, &p) != CLT_OK ||
        clt__need_floating(fn, x) != CLT_OK)
        return NULL;
    xc = clt__reduce_arrange(fn, x, &p);
    if (!xc)
        return NULL;
    divisor = (double)p.len - (double)correction;
    s = clt__reduce_new(fn, CLT_REDUCE_SUM, xc, p.rows, p.len, 0, p.ndim, p.shape, NULL);
    if (s)
        m = clt__reduce_named(fn, clt_div_scalar(s, (double)p.len));
    if (m)
        q = clt__reduce_new(fn, CLT_REDUCE_SQDEV, xc, p.rows, p.len, 0, p.ndim, p.shape, m);
    if (q)
        v = clt__reduce_named(fn, clt_div_scalar(q, divisor > 0 ? divisor : 0.0));
    if (v)
        r = root ? clt__reduce_named(fn, clt_sqrt(v)) : clt_tensor_retain(v);
    clt_tensor_release(v);
    clt_tensor_release(q);
    clt_tensor_release(m);
    clt_tensor_release(s);
    clt_tensor_release(xc);
    return clt__reduce_finish(fn, r, x->dtype);
}

static clt_tensor *var_impl(clt_tensor *x, const int *dims, int ndims, int64_t correction,
                            bool keepdim)
{
    return variance("clt_var", x, dims, ndims, correction, keepdim, false);
}

static clt_tensor *std_impl(clt_tensor *x, const int *dims, int ndims, int64_t correction,
                            bool keepdim)
{
    return variance("clt_std", x, dims, ndims, correction, keepdim, true);
}

/* ---- logsumexp ------------------------------------------------------------------------------- */

/* max + log(sum(exp(x - max))) over rows of the arranged xc (f32 or f64), as a (rows, 1)
 * tensor. An infinite max is replaced by the largest finite value, which gives inf for a row
 * holding +inf and -inf for a row of -inf only, where x - max would be NaN. */
static clt_tensor *lse_rows(const char *fn, clt_tensor *xc, size_t rows, size_t len)
{
    clt_device *dev = xc->storage->device;
    double big = xc->dtype == CLT_F64 ? DBL_MAX : FLT_MAX;
    int64_t col[2] = {(int64_t)rows, 1}, all[2] = {(int64_t)rows, (int64_t)len};
    clt_tensor *m, *mc = NULL, *x2 = NULL, *d = NULL, *e = NULL, *s = NULL, *l = NULL, *r = NULL;
    m = clt__reduce_new(fn, CLT_REDUCE_AMAX, xc, rows, len, 0, 2, col, NULL);
    if (m)
        mc = clt__reduce_named(fn, clt_clamp(m, -big, big));
    if (mc)
        x2 = clt__reduce_named(fn, clt_view(xc, 2, all));
    if (x2)
        d = clt__reduce_named(fn, clt_sub(x2, mc));
    if (d)
        e = clt__reduce_named(fn, clt_exp(d));
    if (e)
        s = clt__tensor_new(fn, dev, xc->dtype, 2, col);
    if (s && clt__reduce_launch(fn, CLT_REDUCE_SUM, e, rows, len, 0, s, NULL) == CLT_OK)
        l = clt__reduce_named(fn, clt_log(s));
    if (l)
        r = clt__reduce_named(fn, clt_add(l, mc));
    clt_tensor_release(l);
    clt_tensor_release(s);
    clt_tensor_release(e);
    clt_tensor_release(d);
    clt_tensor_release(x2);
    clt_tensor_release(mc);
    clt_tensor_release(m);
    return r;
}

static clt_tensor *logsumexp_impl(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    static const char *const fn = "clt_logsumexp";
    clt__reduce_plan p;
    clt_dtype work, out;
    clt_tensor *xf, *xc = NULL, *rows = NULL, *r = NULL;
    if (clt__reduce_plan_make(fn, x, dims, ndims, keepdim, &p) != CLT_OK)
        return NULL;
    out = clt__is_floating(x->dtype) ? x->dtype : CLT_F32;
    work = x->dtype == CLT_F64 ? CLT_F64 : CLT_F32;
    if (p.rows == 0 || p.len == 0) { /* log(0) = -inf for every row */
        unsigned char pattern[8];
        double value = -INFINITY;
        r = clt__tensor_new(fn, x->storage->device, out, p.ndim, p.shape);
        if (r && r->storage->nbytes > 0) {
            clt_device *dev = r->storage->device;
            clt__host_convert(&value, 0, CLT_F64, pattern, 0, out, 1);
            if (dev->backend->fill(fn, dev, r->storage->buf, 0, pattern, clt_dtype_size(out),
                                   r->storage->nbytes) != CLT_OK) {
                clt_tensor_release(r);
                r = NULL;
            }
        }
        return r;
    }
    xf = x->dtype == work ? clt_tensor_retain(x)
                          : clt__reduce_named(fn, clt_tensor_to_dtype(x, work));
    if (xf)
        xc = clt__reduce_arrange(fn, xf, &p);
    if (xc)
        rows = lse_rows(fn, xc, p.rows, p.len);
    if (rows)
        r = clt__reduce_named(fn, clt_view(rows, p.ndim, p.shape));
    clt_tensor_release(rows);
    clt_tensor_release(xc);
    clt_tensor_release(xf);
    return clt__reduce_finish(fn, r, out);
}

clt_tensor *clt_mean(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    CLT__REDUCE_RECORDED("clt_mean", CLT__OP_mean, mean_impl(x, dims, ndims, keepdim), 0);
}

clt_tensor *clt_var(clt_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim)
{
    CLT__REDUCE_RECORDED("clt_var", CLT__OP_var, var_impl(x, dims, ndims, correction, keepdim),
                         correction);
}

clt_tensor *clt_std(clt_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim)
{
    CLT__REDUCE_RECORDED("clt_std", CLT__OP_std, std_impl(x, dims, ndims, correction, keepdim),
                         correction);
}

clt_tensor *clt_logsumexp(clt_tensor *x, const int *dims, int ndims, bool keepdim)
{
    CLT__REDUCE_RECORDED("clt_logsumexp", CLT__OP_logsumexp,
                         logsumexp_impl(x, dims, ndims, keepdim), 0);
}

/* torch.max(x, dim) / torch.min(x, dim): the values picked by argmax / argmin, so that the
 * gradient reaches the element each index names (and only it), as in PyTorch; amax / amin share
 * it among equal elements instead. */
static clt_tensor *extreme_along(const char *fn, clt_tensor *x, int dim, bool keepdim,
                                 clt_tensor **indices, bool largest)
{
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *idx = NULL, *range = NULL, *at = NULL, *mask = NULL, *zero = NULL,
               *picked = NULL, *sum = NULL, *values = NULL;
    if (indices)
        *indices = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK ||
        clt__dim_check(fn, &dim, x->ndim ? x->ndim : 1) != CLT_OK)
        return NULL;
    if (x->ndim == 0) { /* a 0-d x is its own maximum, at index 0 */
        values = clt_tensor_to_ex(x, &(clt_to_options){.copy = true});
        idx = values ? clt_tensor_zeros(0, NULL, CLT_I64, x->storage->device) : NULL;
        goto out;
    }
    idx = largest ? clt_argmax(x, dim, true) : clt_argmin(x, dim, true);
    for (int d = 0; d < x->ndim; d++)
        shape[d] = d == dim ? x->shape[dim] : 1;
    range = idx ? clt_tensor_arange(0, (double)x->shape[dim], 1, CLT_I64, x->storage->device)
                : NULL;
    at = range ? clt_reshape(range, x->ndim, shape) : NULL;
    mask = at ? clt_eq(at, idx) : NULL;
    zero = mask ? clt_tensor_zeros(0, NULL, x->dtype, x->storage->device) : NULL;
    picked = zero ? clt_where(mask, x, zero) : NULL;
    sum = picked ? clt_sum(picked, &dim, 1, keepdim) : NULL;
    values = sum ? clt_tensor_to_dtype(sum, x->dtype) : NULL; /* integer sums are i64 */
    if (values && !keepdim) {
        clt_tensor *squeezed = clt_squeeze(idx, dim);
        clt_tensor_release(idx);
        idx = squeezed;
    }
out:
    if (!values || !idx) {
        clt__rename_error(fn);
        clt_tensor_release(values);
        values = NULL;
    } else if (indices) {
        *indices = clt_tensor_retain(idx);
    }
    clt_tensor_release(sum);
    clt_tensor_release(picked);
    clt_tensor_release(zero);
    clt_tensor_release(mask);
    clt_tensor_release(at);
    clt_tensor_release(range);
    clt_tensor_release(idx);
    return values;
}

clt_tensor *clt_max(clt_tensor *x, int dim, bool keepdim, clt_tensor **indices)
{
    return extreme_along("clt_max", x, dim, keepdim, indices, true);
}

clt_tensor *clt_min(clt_tensor *x, int dim, bool keepdim, clt_tensor **indices)
{
    return extreme_along("clt_min", x, dim, keepdim, indices, false);
}
