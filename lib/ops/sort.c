/* Operations along one dimension: cumsum (the backends' running-sum rows), sort, argsort and
 * topk (the backends' stable sort rows), gather (index_select over flat positions, so that its
 * gradient is index_select's), masked_fill (where) and multinomial sampling (composed from
 * cumsum, random numbers and comparisons, or topk for sampling without replacement). */
#include <math.h>
#include <string.h>

#include "cltensor/autograd.h"
#include "cltensor/ops.h"
#include "graph/graph.h"
#include "core/core.h"
#include "device/registry.h"
#include "ops_internal.h"

/* x with dimension dim moved last and made contiguous (rows of x->shape[dim]). */
static clt_tensor *dim_last(const char *fn, clt_tensor *x, int dim)
{
    clt_tensor *t = dim == x->ndim - 1 ? clt_tensor_retain(x) : clt_transpose(x, dim, -1);
    clt_tensor *c = t ? clt__contiguous(fn, t) : NULL;
    clt_tensor_release(t);
    return c;
}

/* The inverse of dim_last for a result laid out with dim last. Consumes t. */
static clt_tensor *dim_back(clt_tensor *t, int dim)
{
    if (!t || dim == t->ndim - 1)
        return t;
    clt_tensor *r = clt_transpose(t, dim, -1);
    clt_tensor_release(t);
    return r;
}

/* ---- cumsum ------------------------------------------------------------------------------------ */

clt_tensor *clt__cumsum(const char *fn, clt_tensor *x, int dim, bool reverse)
{
    clt_tensor *in = NULL, *rows = NULL, *out = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__dim_check(fn, &dim, x->ndim ? x->ndim : 1))
        return NULL;
    if (x->ndim == 0)
        return clt__is_floating(x->dtype) ? clt_tensor_retain(x) : clt_tensor_to_dtype(x, CLT_I64);
    bool prev, rec = clt__grad_begin(&x, 1, &prev);
    /* integers and bool sum in i64, as PyTorch's */
    in = clt__is_floating(x->dtype) ? clt_tensor_retain(x) : clt_tensor_to_dtype(x, CLT_I64);
    rows = in ? dim_last(fn, in, dim) : NULL;
    out = rows ? clt__tensor_new(fn, x->storage->device, rows->dtype, rows->ndim, rows->shape)
               : NULL;
    if (out && out->numel) {
        clt__rows_call c = {.dtype = rows->dtype, .rows = rows->numel / (size_t)x->shape[dim],
                            .len = (size_t)x->shape[dim], .reverse = reverse,
                            .in = rows->storage->buf, .out = out->storage->buf,
                            .in_offset = rows->offset, .out_offset = out->offset};
        if (CLT__BACKEND_CALL(cumsum, fn, x->storage->device, c.dtype, &c) != CLT_OK) {
            clt_tensor_release(out);
            out = NULL;
        }
    }
    out = dim_back(out, dim);
    clt_tensor_release(rows), clt_tensor_release(in);
    clt__grad_end(prev);
    if (!rec || !out)
        return out;
    return clt__record(fn, CLT__OP_cumsum, &x, 1, out,
                       &(clt__node_args){.dim = dim, .keepdim = reverse});
}

clt_tensor *clt_cumsum(clt_tensor *x, int dim)
{
    return clt__cumsum("clt_cumsum", x, dim, false);
}

/* ---- gather ------------------------------------------------------------------------------------ */

clt_tensor *clt_gather(clt_tensor *x, int dim, clt_tensor *index)
{
    static const char *const fn = "clt_gather";
    int64_t *host = NULL, n;
    clt_tensor *flat = NULL, *picked = NULL, *out = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__tensor_check(fn, index) != CLT_OK ||
        clt__same_device(fn, (clt_tensor *[]){x, index}, 2) != CLT_OK ||
        clt__dim_check(fn, &dim, x->ndim ? x->ndim : 1) != CLT_OK)
        return NULL;
    int nd = x->ndim ? x->ndim : 1;
    bool fits = (index->ndim ? index->ndim : 1) == nd;
    for (int d = 0; fits && d < index->ndim; d++)
        fits = d == dim || index->shape[d] <= x->shape[d];
    if (!fits) {
        clt__error(CLT_ERR_SHAPE, fn,
                   "index %s must have x's %d dimensions and no size above x's %s but along "
                   "dimension %d",
                   clt__shape_of(index).text, nd, clt__shape_of(x).text, dim);
        return NULL;
    }
    /* flat positions in contiguous x: the index along dim, the element's own coordinates in the
     * other dimensions */
    int64_t k = x->ndim ? x->shape[dim] : 1, strides[CLT_MAX_DIMS], coord[CLT_MAX_DIMS] = {0};
    int64_t stride = 1;
    for (int d = nd - 1; d >= 0; d--)
        strides[d] = stride, stride *= x->ndim ? x->shape[d] : 1;
    if (!(host = clt__host_indices(fn, index, k, false, 0, "index")))
        return NULL;
    for (size_t i = 0; i < index->numel; i++) {
        int64_t p = 0;
        for (int d = 0; d < index->ndim; d++)
            p += (d == dim ? host[i] : coord[d]) * strides[d];
        host[i] = index->ndim ? p : host[i];
        for (int d = index->ndim - 1; d >= 0 && ++coord[d] == index->shape[d]; d--)
            coord[d] = 0;
    }
    n = (int64_t)x->numel;
    flat = clt_reshape(x, 1, &n);
    picked = flat ? clt__index_select_host(fn, flat, 0, host, (int64_t)index->numel) : NULL;
    out = picked ? clt_reshape(picked, index->ndim, index->shape) : NULL;
    if (!out)
        clt__rename_error(fn);
    clt_tensor_release(picked), clt_tensor_release(flat);
    clt__free(host);
    return out;
}

/* ---- sort, argsort, topk ---------------------------------------------------------------------- */

/* The stable order of x along dim: the sorted values (NULL values: not wanted) and their i64
 * positions. Values come from the sort rows, or, when x requires grad, from gather (so that the
 * gradient reaches the elements they came from). */
static clt_status sort_impl(const char *fn, clt_tensor *x, int dim, bool descending,
                            clt_tensor **values, clt_tensor **indices)
{
    clt_tensor *rows = NULL, *out = NULL, *idx = NULL, *tmp = NULL, *tmp_idx = NULL;
    *indices = NULL;
    if (values)
        *values = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__dim_check(fn, &dim, x->ndim ? x->ndim : 1))
        return clt_last_status();
    clt_device *dev = x->storage->device;
    bool grad = values && clt__any_requires_grad(&x, 1) && clt_grad_is_enabled();
    if (x->ndim == 0) {
        *indices = clt_tensor_zeros(0, NULL, CLT_I64, dev);
        if (values && *indices)
            *values = clt_tensor_retain(x);
        return *indices ? CLT_OK : clt__rename_error(fn);
    }
    bool prev = clt_grad_set_enabled(false);
    size_t len = (size_t)x->shape[dim];
    rows = dim_last(fn, x, dim);
    out = rows ? clt__tensor_new(fn, dev, x->dtype, rows->ndim, rows->shape) : NULL;
    idx = out ? clt__tensor_new(fn, dev, CLT_I64, rows->ndim, rows->shape) : NULL;
    tmp = idx && len > 1 ? clt__tensor_new(fn, dev, x->dtype, rows->ndim, rows->shape) : NULL;
    tmp_idx = tmp ? clt__tensor_new(fn, dev, CLT_I64, rows->ndim, rows->shape) : NULL;
    clt_status st = idx && (len <= 1 || tmp_idx) ? CLT_OK : clt_last_status();
    if (st == CLT_OK && out->numel) {
        clt__rows_call c = {.dtype = x->dtype, .rows = out->numel / len, .len = len,
                            .reverse = descending, .in = rows->storage->buf,
                            .out = out->storage->buf, .idx = idx->storage->buf,
                            .tmp = tmp ? tmp->storage->buf : out->storage->buf,
                            .tmp_idx = tmp_idx ? tmp_idx->storage->buf : idx->storage->buf,
                            .in_offset = rows->offset, .out_offset = out->offset,
                            .idx_offset = idx->offset};
        st = CLT__BACKEND_CALL(sort, fn, dev, c.dtype, &c);
    }
    clt_tensor_release(tmp), clt_tensor_release(tmp_idx), clt_tensor_release(rows);
    clt_grad_set_enabled(prev);
    if (st == CLT_OK)
        *indices = dim_back(clt_tensor_retain(idx), dim);
    if (*indices && values)
        *values = grad ? clt_gather(x, dim, *indices) : dim_back(clt_tensor_retain(out), dim);
    clt_tensor_release(out), clt_tensor_release(idx);
    if (st == CLT_OK && (!*indices || (values && !*values))) {
        st = clt__rename_error(fn);
        clt_tensor_release(*indices);
        *indices = NULL;
    }
    return st;
}

clt_tensor *clt_sort(clt_tensor *x, int dim, bool descending, clt_tensor **indices)
{
    clt_tensor *values, *idx;
    if (indices)
        *indices = NULL;
    if (sort_impl("clt_sort", x, dim, descending, &values, &idx) != CLT_OK)
        return NULL;
    if (indices)
        *indices = idx;
    else
        clt_tensor_release(idx);
    return values;
}

clt_tensor *clt_argsort(clt_tensor *x, int dim, bool descending)
{
    clt_tensor *idx;
    return sort_impl("clt_argsort", x, dim, descending, NULL, &idx) == CLT_OK ? idx : NULL;
}

clt_tensor *clt_topk(clt_tensor *x, int64_t k, int dim, bool largest, clt_tensor **indices)
{
    static const char *const fn = "clt_topk";
    clt_tensor *values = NULL, *idx = NULL, *v = NULL, *i = NULL;
    if (indices)
        *indices = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__dim_check(fn, &dim, x->ndim ? x->ndim : 1))
        return NULL;
    int64_t len = x->ndim ? x->shape[dim] : 1;
    if (k < 0 || k > len) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "k %lld is outside 0..%lld, the size of dimension %d",
                   (long long)k, (long long)len, dim);
        return NULL;
    }
    if (sort_impl(fn, x, dim, largest, &values, &idx) != CLT_OK)
        return NULL;
    v = x->ndim ? clt_narrow(values, dim, 0, k) : clt_tensor_retain(values);
    i = v && x->ndim ? clt_narrow(idx, dim, 0, k) : v ? clt_tensor_retain(idx) : NULL;
    clt_tensor_release(values), clt_tensor_release(idx);
    if (!i) {
        clt__rename_error(fn);
        clt_tensor_release(v);
        return NULL;
    }
    if (indices)
        *indices = i;
    else
        clt_tensor_release(i);
    return v;
}

/* ---- masked_fill ------------------------------------------------------------------------------- */

clt_tensor *clt_masked_fill(clt_tensor *x, clt_tensor *mask, double value)
{
    static const char *const fn = "clt_masked_fill";
    if (clt__tensor_check(fn, x) != CLT_OK || clt__tensor_check(fn, mask) != CLT_OK)
        return NULL;
    if (mask->dtype != CLT_BOOL) {
        clt__error(CLT_ERR_DTYPE, fn, "mask must be bool, not %s", clt_dtype_name(mask->dtype));
        return NULL;
    }
    clt_tensor *fill = clt_tensor_full(0, NULL, value, x->dtype, x->storage->device);
    clt_tensor *out = fill ? clt_where(mask, fill, x) : NULL;
    if (!out)
        clt__rename_error(fn);
    else if (!clt__same_shape(out, x)) { /* the mask may broadcast x, never x the mask */
        clt__error(CLT_ERR_SHAPE, fn, "mask %s does not broadcast to x's shape %s",
                   clt__shape_of(mask).text, clt__shape_of(x).text);
        clt_tensor_release(out);
        out = NULL;
    }
    clt_tensor_release(fill);
    return out;
}

/* ---- multinomial ------------------------------------------------------------------------------- */

/* Checks that each row of p (rows x c, floating) is a distribution PyTorch accepts: no negative,
 * NaN or infinite weight, a positive sum, and with `need` > 0 that many nonzero weights. */
static clt_status check_weights(const char *fn, clt_tensor *p, int64_t need)
{
    clt_status st = CLT_ERR_OUT_OF_MEMORY;
    int last = p->ndim - 1;
    clt_tensor *lo = clt_amin(p, NULL, 0, false), *sums = lo ? clt_sum(p, &last, 1, false) : NULL;
    clt_tensor *zero = sums ? clt_tensor_zeros(0, NULL, p->dtype, p->storage->device) : NULL;
    clt_tensor *nz = zero ? clt_gt(p, zero) : NULL, *counts = nz ? clt_sum(nz, &last, 1, false) : NULL;
    size_t rows = counts ? counts->numel : 0;
    double *host = counts ? clt__alloc(fn, (2 * rows + 1) * sizeof *host) : NULL;
    int64_t *cnt = host ? clt__alloc(fn, (rows ? rows : 1) * sizeof *cnt) : NULL;
    if (cnt) {
        /* read in f64 on cpu (the device may have no f64) */
        clt_tensor *sums_h = clt_tensor_to(sums, clt_device_cpu()), *lo_h = clt_tensor_to(lo, clt_device_cpu());
        clt_tensor *sums64 = sums_h ? clt_tensor_to_dtype(sums_h, CLT_F64) : NULL;
        clt_tensor *lo64 = lo_h ? clt_tensor_to_dtype(lo_h, CLT_F64) : NULL;
        clt_tensor_release(sums_h), clt_tensor_release(lo_h);
        st = sums64 && lo64 &&
                     clt_tensor_copy_to_host(sums64, host, rows * sizeof *host) == CLT_OK &&
                     clt_tensor_copy_to_host(lo64, host + rows, sizeof *host) == CLT_OK &&
                     clt_tensor_copy_to_host(counts, cnt, rows * sizeof *cnt) == CLT_OK
                 ? CLT_OK
                 : clt__rename_error(fn);
        clt_tensor_release(sums64), clt_tensor_release(lo64);
    } else {
        st = clt__rename_error(fn);
    }
    if (st == CLT_OK && !(host[rows] >= 0))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                        "probabilities must not be negative or NaN (the smallest is %g)", host[rows]);
    for (size_t r = 0; st == CLT_OK && r < rows; r++)
        if (!(host[r] > 0) || isinf(host[r]))
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                            "row %zu of the probabilities sums to %g: it must be positive and finite",
                            r, host[r]);
        else if (cnt[r] < need)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                            "row %zu has %lld nonzero probabilities, fewer than the %lld samples "
                            "drawn without replacement",
                            r, (long long)cnt[r], (long long)need);
    clt__free(host), clt__free(cnt);
    clt_tensor_release(lo), clt_tensor_release(sums), clt_tensor_release(zero);
    clt_tensor_release(nz), clt_tensor_release(counts);
    return st;
}

clt_tensor *clt_multinomial(clt_tensor *probs, int64_t num_samples, bool replacement)
{
    static const char *const fn = "clt_multinomial";
    clt_tensor *p = NULL, *out = NULL, *t[10] = {0};
    if (clt__tensor_check(fn, probs) != CLT_OK || clt__need_floating(fn, probs) != CLT_OK)
        return NULL;
    if (probs->ndim < 1 || probs->ndim > 2 || probs->shape[probs->ndim - 1] < 1 ||
        num_samples < 1 || (!replacement && num_samples > probs->shape[probs->ndim - 1])) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "needs 1-D or 2-D probabilities with categories (got %d dimensions) and "
                   "1..categories samples without replacement, or any positive number with "
                   "(got %lld)",
                   probs->ndim, (long long)num_samples);
        return NULL;
    }
    int64_t rows = probs->ndim == 2 ? probs->shape[0] : 1, c = probs->shape[probs->ndim - 1];
    clt_device *dev = probs->storage->device;
    /* the draws, and with replacement the comparison of each with every category's bound */
    if (clt__output_check(fn, dev, CLT_I64, CLT_SHAPE(rows, num_samples)) != CLT_OK ||
        (replacement &&
         clt__output_check(fn, dev, CLT_BOOL, CLT_SHAPE(rows, num_samples, c)) != CLT_OK))
        return NULL;
    bool prev = clt_grad_set_enabled(false);
    clt_status st = (p = clt_reshape(probs, CLT_SHAPE(rows, c))) ? CLT_OK : clt__rename_error(fn);
    if (st == CLT_OK && (st = check_weights(fn, p, replacement ? 0 : num_samples)) == CLT_OK) {
        if (replacement) {
            /* category j is drawn when cdf[j - 1] <= u < cdf[j], with cdf normalised so that
             * its last entry is exactly 1, and u < 1 */
            t[0] = clt_cumsum(p, 1);
            t[1] = t[0] ? clt_narrow(t[0], 1, c - 1, 1) : NULL;
            t[2] = t[1] ? clt_div(t[0], t[1]) : NULL;
            t[3] = t[2] ? clt_reshape(t[2], CLT_SHAPE(rows, 1, c)) : NULL;
            t[4] = t[3] ? clt_tensor_rand(CLT_SHAPE(rows, num_samples, 1), p->dtype, dev) : NULL;
            t[5] = t[4] ? clt_le(t[3], t[4]) : NULL;
            out = t[5] ? clt_sum(t[5], (int[]){2}, 1, false) : NULL;
        } else {
            /* exponential races: the num_samples largest log(1 - u) / p (u < 1, so finite
             * where p > 0; -inf where p is 0) are a draw without replacement, in its order */
            t[0] = clt_tensor_rand(CLT_SHAPE(rows, c), p->dtype, dev);
            t[1] = t[0] ? clt_neg(t[0]) : NULL;
            t[2] = t[1] ? clt_add_scalar(t[1], 1) : NULL;
            t[3] = t[2] ? clt_log(t[2]) : NULL;
            t[4] = t[3] ? clt_div(t[3], p) : NULL;
            t[5] = t[4] ? clt_tensor_zeros(0, NULL, p->dtype, dev) : NULL;
            t[6] = t[5] ? clt_le(p, t[5]) : NULL;
            t[7] = t[6] ? clt_masked_fill(t[4], t[6], -INFINITY) : NULL;
            t[8] = t[7] ? clt_topk(t[7], num_samples, 1, true, &t[9]) : NULL;
            out = t[9] ? clt_tensor_retain(t[9]) : NULL;
        }
        if (out && probs->ndim == 1) {
            clt_tensor *flat = clt_reshape(out, 1, &num_samples);
            clt_tensor_release(out);
            out = flat;
        }
        if (!out)
            clt__rename_error(fn);
    }
    for (int i = 0; i < 10; i++)
        clt_tensor_release(t[i]);
    clt_tensor_release(p);
    clt_grad_set_enabled(prev);
    return out;
}
