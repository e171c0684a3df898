/* Neural-network functions: softmax and log_softmax, the losses (nll, cross entropy, mse),
 * index_select and embedding, 2-D convolution (im2col and a matrix product), max and average
 * pooling, batch and layer normalisation, and dropout. Most are compositions of the elementwise
 * operations, reductions and matrix products; gathers and sliding windows have kernels. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cltensor/ops.h"
#include "core/core.h"
#include "device/registry.h"
#include "autograd/derivatives.h"
#include "cltensor/autograd.h"
#include "ops_internal.h"

/* One tensor (or NULL) against another's device. */
static clt_status same_device(const char *fn, clt_tensor *a, clt_tensor *b)
{
    return b ? clt__same_device(fn, (clt_tensor *[]){a, b}, 2) : CLT_OK;
}

/* Releases a list of tensors (NULL entries allowed). */
static void release_all(clt_tensor **ts, int n)
{
    for (int i = 0; i < n; i++)
        clt_tensor_release(ts[i]);
}

/* ---- softmax ---------------------------------------------------------------------------------- */

static clt_tensor *softmax_impl(const char *fn, clt_tensor *x, int dim, bool log)
{
    clt_tensor *t[5] = {NULL}, *out = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__need_floating(fn, x) != CLT_OK ||
        clt__dim_check(fn, &dim, x->ndim) != CLT_OK)
        return NULL;
    if (x->ndim == 0) /* a 0-d tensor is its own dimension */
        dim = 0;
    if (x->numel == 0)
        return clt_tensor_empty(x->ndim, x->shape, x->dtype, x->storage->device);
    int dims = dim;
    t[0] = x->ndim ? clt_amax(x, &dims, 1, true) : clt_tensor_retain(x); /* m */
    t[1] = t[0] ? clt_sub(x, t[0]) : NULL;                              /* x - m */
    t[2] = t[1] ? clt_exp(t[1]) : NULL;                                 /* e */
    t[3] = t[2] ? (x->ndim ? clt_sum(t[2], &dims, 1, true) : clt_tensor_retain(t[2])) : NULL;
    if (t[3] && log) {
        t[4] = clt_log(t[3]);
        out = t[4] ? clt_sub(t[1], t[4]) : NULL;
    } else if (t[3]) {
        out = clt_div(t[2], t[3]);
    }
    if (!out)
        clt__rename_error(fn);
    release_all(t, 5);
    return out;
}

/* softmax_impl, recorded for autograd as one operation. */
static clt_tensor *softmax_recorded(const char *fn, clt_tensor *x, int dim, bool log)
{
    bool prev, rec = clt__grad_begin(&x, 1, &prev);
    clt_tensor *out = softmax_impl(fn, x, dim, log);
    clt__grad_end(prev);
    if (!rec || !out)
        return out;
    if (dim < 0)
        dim += x->ndim;
    return clt__record(fn, log ? &clt__d_log_softmax : &clt__d_softmax, &x, 1, out,
                       &(clt__node_args){.dim = x->ndim ? dim : 0});
}

clt_tensor *clt_softmax(clt_tensor *x, int dim)
{
    return softmax_recorded("clt_softmax", x, dim, false);
}

clt_tensor *clt_log_softmax(clt_tensor *x, int dim)
{
    return softmax_recorded("clt_log_softmax", x, dim, true);
}

/* ---- gathers ---------------------------------------------------------------------------------- */

/* The i64 indices of idx copied to the host, each checked to lie in 0..k-1 (or to equal
 * `allowed`, when allow is true). The caller frees the array. */
int64_t *clt__host_indices(const char *fn, clt_tensor *idx, int64_t k, bool allow,
                           int64_t allowed, const char *what)
{
    int64_t *v;
    if (idx->dtype != CLT_I64) {
        clt__error(CLT_ERR_DTYPE, fn, "%s must be i64, not %s", what, clt_dtype_name(idx->dtype));
        return NULL;
    }
    v = clt__alloc(fn, idx->numel ? idx->numel * sizeof *v : 1);
    if (!v)
        return NULL;
    if (clt_tensor_copy_to_host(idx, v, idx->numel * sizeof *v) != CLT_OK) {
        clt__rename_error(fn);
        clt__free(v);
        return NULL;
    }
    for (size_t i = 0; i < idx->numel; i++) {
        if ((v[i] < 0 || v[i] >= k) && !(allow && v[i] == allowed)) {
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                       "%s %lld (element %zu) is out of range for size %lld (valid: 0..%lld)",
                       what, (long long)v[i], i, (long long)k, (long long)k - 1);
            clt__free(v);
            return NULL;
        }
    }
    return v;
}

/* out = x with dimension dim indexed by the M indices in idx_dev (i64 on x's device). */
static clt_tensor *gather_impl(const char *fn, clt_tensor *x, int dim, clt_tensor *idx_dev, int64_t m)
{
    clt_device *dev = x->storage->device;
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *c = clt__contiguous(fn, x), *out = NULL;
    if (!c)
        return NULL;
    memcpy(shape, x->shape, sizeof shape);
    shape[dim] = m;
    out = clt__tensor_new(fn, dev, x->dtype, x->ndim, shape);
    if (out && out->numel) {
        clt__index_call call = {.dtype = x->dtype, .A = 1, .K = (size_t)x->shape[dim], .B = 1,
                                .M = (size_t)m, .src = c->storage->buf, .idx = idx_dev->storage->buf,
                                .out = out->storage->buf, .src_offset = c->offset,
                                .idx_offset = idx_dev->offset};
        for (int d = 0; d < dim; d++)
            call.A *= (size_t)x->shape[d];
        for (int d = dim + 1; d < x->ndim; d++)
            call.B *= (size_t)x->shape[d];
        if (CLT__BACKEND_CALL(index_select, fn, dev, call.dtype, &call) != CLT_OK) {
            clt_tensor_release(out);
            out = NULL;
        }
    }
    clt_tensor_release(c);
    return out;
}

/* gather_impl recorded for autograd; `host` holds the M indices too. */
static clt_tensor *gather(const char *fn, clt_tensor *x, int dim, clt_tensor *idx_dev,
                          const int64_t *host, int64_t m)
{
    clt__node_args args = {.dim = dim, .i0 = m, .i1 = x->shape[dim]};
    bool prev, rec = clt__grad_begin(&x, 1, &prev);
    clt_tensor *out = gather_impl(fn, x, dim, idx_dev, m);
    clt__grad_end(prev);
    if (!rec || !out)
        return out;
    if (!(args.idx = clt__alloc(fn, (size_t)(m ? m : 1) * sizeof *args.idx))) {
        clt_tensor_release(out);
        return NULL;
    }
    if (m)
        memcpy(args.idx, host, (size_t)m * sizeof *args.idx);
    return clt__record(fn, &clt__d_gather, &x, 1, out, &args);
}

clt_tensor *clt__index_select_host(const char *fn, clt_tensor *x, int dim, const int64_t *host,
                                   int64_t m)
{
    clt_tensor *idx = clt_tensor_from_data(1, &m, host, CLT_I64, x->storage->device);
    clt_tensor *out = idx ? gather(fn, x, dim, idx, host, m) : NULL;
    if (!idx)
        clt__rename_error(fn);
    clt_tensor_release(idx);
    return out;
}

clt_tensor *clt_index_select(clt_tensor *x, int dim, clt_tensor *index)
{
    static const char *const fn = "clt_index_select";
    clt_tensor *c = NULL, *out;
    int64_t *host;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__tensor_check(fn, index) != CLT_OK ||
        same_device(fn, x, index) != CLT_OK || clt__dim_check(fn, &dim, x->ndim) != CLT_OK)
        return NULL;
    if (x->ndim == 0 || index->ndim > 1) {
        clt__error(CLT_ERR_SHAPE, fn, "x needs a dimension and index at most one (got %d and %d)",
                   x->ndim, index->ndim);
        return NULL;
    }
    host = clt__host_indices(fn, index, x->shape[dim], false, 0, "index");
    if (!host)
        return NULL;
    c = clt__contiguous(fn, index);
    out = c ? gather(fn, x, dim, c, host, (int64_t)index->numel) : NULL;
    clt_tensor_release(c);
    clt__free(host);
    return out;
}

clt_tensor *clt_embedding(clt_tensor *indices, clt_tensor *weight)
{
    static const char *const fn = "clt_embedding";
    int64_t shape[CLT_MAX_DIMS], n;
    clt_tensor *flat = NULL, *rows = NULL, *out = NULL;
    if (clt__tensor_check(fn, weight) != CLT_OK || clt__tensor_check(fn, indices) != CLT_OK ||
        same_device(fn, weight, indices) != CLT_OK)
        return NULL;
    if (weight->ndim != 2 || indices->ndim >= CLT_MAX_DIMS) {
        clt__error(CLT_ERR_SHAPE, fn, "weight must be 2-D (got %d dimensions) and indices below %d",
                   weight->ndim, CLT_MAX_DIMS);
        return NULL;
    }
    n = (int64_t)indices->numel;
    flat = clt_reshape(indices, 1, &n);
    rows = flat ? clt_index_select(weight, 0, flat) : NULL;
    if (rows) {
        memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
        shape[indices->ndim] = weight->shape[1];
        out = clt_reshape(rows, indices->ndim + 1, shape);
    }
    if (!out)
        clt__rename_error(fn);
    clt_tensor_release(rows);
    clt_tensor_release(flat);
    return out;
}

/* ---- losses ----------------------------------------------------------------------------------- */

/* Applies the reduction to per-element losses; mean divides by `count` (clt_mean's one launch
 * where that is every element). Consumes `loss`. */
static clt_tensor *reduce_loss(clt_tensor *loss, clt_reduction reduction, double count)
{
    clt_tensor *s, *out;
    if (!loss || reduction == CLT_REDUCTION_NONE)
        return loss;
    if (reduction == CLT_REDUCTION_MEAN && loss->numel > 0 && count == (double)loss->numel) {
        out = clt_mean(loss, NULL, 0, false);
        clt_tensor_release(loss);
        return out;
    }
    s = clt_sum(loss, NULL, 0, false);
    clt_tensor_release(loss);
    if (!s || reduction == CLT_REDUCTION_SUM)
        return s;
    out = clt_div_scalar(s, count);
    clt_tensor_release(s);
    return out;
}

static clt_status check_reduction(const char *fn, clt_reduction r)
{
    if (r == CLT_REDUCTION_MEAN || r == CLT_REDUCTION_SUM || r == CLT_REDUCTION_NONE)
        return CLT_OK;
    return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "reduction %d is not one of mean, sum, none",
                      (int)r);
}

clt_loss_options clt_loss_options_default(void)
{
    return (clt_loss_options){.init = CLT__OPTIONS_INIT, .reduction = CLT_REDUCTION_MEAN,
                              .ignore_index = -100};
}

/* The options (the defaults for NULL), checked; weight's values copied to the host in *w
 * (NULL without weight), for c classes on x's device. */
static clt_status loss_options(const char *fn, const clt_loss_options *given, clt_tensor *x,
                               int64_t c, clt_loss_options *o, double **w)
{
    char a[256];
    *w = NULL;
    *o = given ? *given : clt_loss_options_default();
    if (o->init != CLT__OPTIONS_INIT)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "options did not start from clt_loss_options_default() (init is %#x): "
                          "a zeroed struct's ignore_index 0 would drop class 0; start from the "
                          "defaults and change the fields you need",
                          (unsigned)o->init);
    if (check_reduction(fn, o->reduction) != CLT_OK)
        return clt_last_status();
    if (!(o->label_smoothing >= 0 && o->label_smoothing <= 1))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "label_smoothing %g is not in [0, 1]",
                          o->label_smoothing);
    if (!o->weight)
        return CLT_OK;
    if (clt__tensor_check(fn, o->weight) != CLT_OK || same_device(fn, x, o->weight) != CLT_OK ||
        clt__need_floating(fn, o->weight) != CLT_OK)
        return clt_last_status();
    if (o->weight->ndim != 1 || o->weight->shape[0] != c) {
        clt__format_shape(a, sizeof a, o->weight->ndim, o->weight->shape);
        return clt__error(CLT_ERR_SHAPE, fn, "weight %s must have one value per class (%lld)", a,
                          (long long)c);
    }
    clt_tensor *f64 = clt_tensor_to_ex(o->weight, &(clt_to_options){.device = clt_device_cpu(),
                                                                     .dtype = CLT_F64});
    *w = f64 ? clt__alloc(fn, (size_t)(c ? c : 1) * sizeof **w) : NULL;
    if (*w && clt_tensor_copy_to_host(f64, *w, (size_t)c * sizeof **w) != CLT_OK) {
        clt__free(*w);
        *w = NULL;
    }
    clt_tensor_release(f64);
    if (!*w)
        return clt__rename_error(fn);
    return CLT_OK;
}

/* The per-row losses -w[t] log_probs[i, t] of 2-D log_probs (N, C) or 1-D (C,) (a 0-d result),
 * 0 where the target is ignored; *keep receives the bool (N,) mask of rows that count and
 * *denominator what the mean divides by (the rows that count, or their weights' sum). */
static clt_tensor *nll_rows(const char *fn, clt_tensor *lp, clt_tensor *target,
                            const clt_loss_options *o, const double *w, clt_tensor **keep,
                            double *denominator)
{
    clt_device *dev = lp->storage->device;
    clt_tensor *flat = NULL, *idx = NULL, *picked = NULL, *neg = NULL, *zero = NULL,
               *kept_rows = NULL, *weights = NULL, *rows = NULL, *loss = NULL;
    int64_t n = lp->ndim == 2 ? lp->shape[0] : 1, c = lp->shape[lp->ndim - 1], total = n * c;
    int64_t *t = clt__host_indices(fn, target, c, true, o->ignore_index, "target"), *pos = NULL;
    uint8_t *keeps = NULL;
    double *row_w = NULL;
    *keep = NULL;
    *denominator = 0;
    if (!t)
        return NULL;
    pos = clt__alloc(fn, (size_t)(n ? n : 1) * sizeof *pos);
    keeps = pos ? clt__alloc(fn, (size_t)(n ? n : 1)) : NULL;
    row_w = keeps && w ? clt__alloc(fn, (size_t)(n ? n : 1) * sizeof *row_w) : NULL;
    if (!keeps || (w && !row_w))
        goto done;
    for (int64_t i = 0; i < n; i++) {
        bool ignored = t[i] == o->ignore_index;
        pos[i] = i * c + (ignored ? 0 : t[i]);
        keeps[i] = !ignored;
        if (row_w)
            row_w[i] = ignored ? 0 : w[t[i]];
        *denominator += ignored ? 0 : row_w ? row_w[i] : 1;
    }
    /* -log_probs[i, target[i]], and 0 (not -x * 0, which is NaN for x = -inf) where ignored */
    flat = clt_reshape(lp, 1, &total);
    idx = flat ? clt_tensor_from_data(1, &n, pos, CLT_I64, dev) : NULL;
    picked = idx ? gather(fn, flat, 0, idx, pos, n) : NULL;
    neg = picked ? clt_neg(picked) : NULL;
    kept_rows = neg ? clt_tensor_from_data(1, &n, keeps, CLT_BOOL, dev) : NULL;
    zero = kept_rows ? clt_tensor_zeros(0, NULL, lp->dtype, dev) : NULL;
    rows = zero ? clt_where(kept_rows, neg, zero) : NULL;
    if (rows && row_w) {
        clt_tensor *wf = clt_tensor_from_data(1, &n, row_w, CLT_F64, clt_device_cpu());
        weights = wf ? clt_tensor_to_ex(wf, &(clt_to_options){.device = dev, .dtype = lp->dtype})
                     : NULL;
        clt_tensor_release(wf);
        clt_tensor *weighted = weights ? clt_mul(rows, weights) : NULL;
        clt_tensor_release(rows);
        rows = weighted;
    }
    if (rows && lp->ndim == 1) { /* (1,) -> () */
        loss = clt_reshape(rows, 0, NULL);
        clt_tensor_release(rows);
    } else {
        loss = rows;
    }
    if (loss)
        *keep = clt_tensor_retain(kept_rows);
done:
    clt_tensor_release(weights);
    clt_tensor_release(zero);
    clt_tensor_release(kept_rows);
    clt_tensor_release(neg);
    clt_tensor_release(picked);
    clt_tensor_release(idx);
    clt_tensor_release(flat);
    clt__free(row_w);
    clt__free(keeps);
    clt__free(pos);
    clt__free(t);
    return loss;
}

/* -sum_c w_c log_probs[i, c] per row (the label-smoothing term), 0 where the row is ignored. */
static clt_tensor *smooth_rows(clt_tensor *lp, clt_tensor *keep, clt_tensor *weight)
{
    int dim = lp->ndim - 1;
    clt_tensor *w = weight ? clt_tensor_to_dtype(weight, lp->dtype) : NULL;
    clt_tensor *weighted = w ? clt_mul(lp, w) : weight ? NULL : clt_tensor_retain(lp);
    clt_tensor_release(w);
    clt_tensor *s = weighted ? clt_sum(weighted, &dim, 1, false) : NULL;
    clt_tensor *neg = s ? clt_neg(s) : NULL;
    clt_tensor *zero = neg ? clt_tensor_zeros(0, NULL, lp->dtype, lp->storage->device) : NULL;
    clt_tensor *k = zero && lp->ndim == 1 ? clt_reshape(keep, 0, NULL) : clt_tensor_retain(keep);
    clt_tensor *out = k && zero ? clt_where(k, neg, zero) : NULL;
    clt_tensor_release(k);
    clt_tensor_release(zero);
    clt_tensor_release(neg);
    clt_tensor_release(s);
    clt_tensor_release(weighted);
    return out;
}

/* Moves the class dimension of (N, C, d1, ...) inputs last and flattens them to (N * d1 * ...,
 * C) rows, with the targets (N, d1, ...) flattened alike; 1-D and 2-D inputs stay as they are. */
static clt_status class_rows(const char *fn, clt_tensor *x, clt_tensor *target, clt_tensor **rows,
                             clt_tensor **flat_target)
{
    char a[256], b[256];
    bool fits = (x->ndim == 1 && target->ndim == 0) ||
                (x->ndim >= 2 && target->ndim == x->ndim - 1 && target->shape[0] == x->shape[0]);
    for (int d = 2; fits && d < x->ndim; d++)
        fits = target->shape[d - 1] == x->shape[d];
    *rows = *flat_target = NULL;
    if (!fits) {
        clt__format_shape(a, sizeof a, x->ndim, x->shape);
        clt__format_shape(b, sizeof b, target->ndim, target->shape);
        return clt__error(CLT_ERR_SHAPE, fn,
                          "input %s and target %s: expected (N, C) with (N,), (C,) with (), or "
                          "(N, C, d1, ...) with (N, d1, ...)", a, b);
    }
    if (x->ndim <= 2) {
        *rows = clt_tensor_retain(x), *flat_target = clt_tensor_retain(target);
        return CLT_OK;
    }
    int perm[CLT_MAX_DIMS];
    perm[0] = 0;
    for (int d = 2; d < x->ndim; d++)
        perm[d - 1] = d;
    perm[x->ndim - 1] = 1;
    /* the rows counted, not inferred: with no class (C = 0) a reshape cannot infer them */
    int64_t shape[2] = {x->shape[0], x->shape[1]}, n;
    for (int d = 2; d < x->ndim; d++)
        if (!clt__mul_i64(shape[0], x->shape[d], &shape[0]))
            return clt__error(CLT_ERR_SHAPE, fn, "input %s has more than %lld rows",
                              clt__shape_of(x).text, (long long)INT64_MAX);
    n = shape[0];
    clt_tensor *moved = clt_permute(x, perm);
    *rows = moved ? clt_reshape(moved, 2, shape) : NULL;
    *flat_target = *rows ? clt_reshape(target, 1, &n) : NULL;
    clt_tensor_release(moved);
    if (!*flat_target) {
        clt_tensor_release(*rows);
        *rows = NULL;
        return clt__rename_error(fn);
    }
    return CLT_OK;
}

/* The gradient of cross entropy's rows, or of their sum or mean (a.i1 set, a.s0 the divisor):
 * the device's fused backward pass, which reads the reduced loss's gradient itself. */
static clt_status xent_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    clt_tensor *x = clt__node_saved(n, 0), *t = clt__node_saved(n, 1);
    clt_device *dev = x->storage->device;
    clt_tensor *out = clt__tensor_new("clt_backward", dev, x->dtype, x->ndim, x->shape);
    if (!out)
        return clt_last_status();
    clt__xent_call c = {.dtype = x->dtype,
                        .backward = true,
                        .rows = (size_t)x->shape[0],
                        .classes = (size_t)x->shape[1],
                        .ignore = n->a.i0,
                        .logits = x->storage->buf,
                        .logits_offset = x->offset,
                        .target = t->storage->buf,
                        .target_offset = t->offset,
                        .g = g->storage->buf,
                        .g_offset = g->offset,
                        .g_step = n->a.i1 ? 0 : 1,
                        .g_divisor = n->a.s0,
                        .out = out->storage->buf,
                        .out_offset = out->offset};
    clt_status st = out->numel ? CLT__BACKEND_CALL(cross_entropy, "clt_backward", dev, x->dtype, &c)
                               : CLT_OK;
    if (st != CLT_OK) {
        clt_tensor_release(out);
        return st;
    }
    gi[0] = out;
    return CLT_OK;
}

static const clt__derivative xent_derivative = {"CrossEntropyBackward", xent_bw, 1u | 2u};

/* Cross entropy of logits (N, C) with targets (N,), none weighted or smoothed: the per-row
 * losses, or their sum or mean over the rows not ignored (`reduction`), recorded as one
 * operation whose backward pass is one device launch (instead of log_softmax's and the
 * gather's dozen, and the reduction's gradient and its broadcast copy: the backward pass reads
 * the reduced loss's gradient itself). The targets are checked, and the rows that are not
 * ignored counted, from their known range (clt__tensor_range: a batch of labels written from
 * the host, none of them ignore) where it shows every target in 0..C-1, else on the host:
 * reading them back would make the host wait for the forward pass. NULL with the error set. */
static clt_tensor *xent_loss(const char *fn, clt_tensor *x, clt_tensor *target, int64_t ignore,
                             clt_reduction reduction)
{
    int64_t n = x->shape[0], c = x->shape[1], lo, hi;
    double denominator = 0;
    if (!clt__is_host(target->storage->device) && clt__tensor_range(target, &lo, &hi) &&
        lo >= 0 && hi < c && (ignore < lo || ignore > hi)) {
        denominator = (double)n;
    } else {
        int64_t *t = clt__host_indices(fn, target, c, true, ignore, "target");
        if (!t)
            return NULL;
        for (int64_t i = 0; i < n; i++)
            denominator += t[i] != ignore;
        clt__free(t);
    }
    clt_tensor *in[2] = {clt__contiguous(fn, x), NULL}, *out = NULL;
    in[1] = in[0] ? clt__contiguous(fn, target) : NULL;
    if (!in[1])
        goto done;
    bool prev, rec = clt__grad_begin(in, 2, &prev);
    clt_device *dev = x->storage->device;
    out = clt__tensor_new(fn, dev, x->dtype, 1, &n);
    clt__xent_call call = {.dtype = x->dtype,
                           .rows = (size_t)n,
                           .classes = (size_t)c,
                           .ignore = ignore,
                           .logits = in[0]->storage->buf,
                           .logits_offset = in[0]->offset,
                           .target = in[1]->storage->buf,
                           .target_offset = in[1]->offset};
    if (out && out->numel) {
        call.out = out->storage->buf, call.out_offset = out->offset;
        if (CLT__BACKEND_CALL(cross_entropy, fn, dev, x->dtype, &call) != CLT_OK) {
            clt_tensor_release(out);
            out = NULL;
        }
    }
    if (out)
        out = reduce_loss(out, reduction, denominator);
    clt__grad_end(prev);
    if (rec && out)
        out = clt__record(fn, &xent_derivative, in, 2, out,
                          &(clt__node_args){.i0 = ignore,
                                            .i1 = reduction != CLT_REDUCTION_NONE,
                                            .s0 = reduction == CLT_REDUCTION_MEAN ? denominator
                                                                                  : 1});
done:
    clt_tensor_release(in[1]);
    clt_tensor_release(in[0]);
    return out;
}

/* The per-row losses over no class (C = 0), where every target must be ignore_index: 0 for each
 * row, as a sum over the empty class dimension so that a gradient reaches x (itself empty). */
static clt_tensor *no_class_rows(const char *fn, clt_tensor *rows, clt_tensor *target,
                                 int64_t ignore)
{
    int64_t *t = clt__host_indices(fn, target, 0, true, ignore, "target");
    if (!t)
        return NULL;
    clt__free(t);
    int dim = rows->ndim - 1;
    return clt_sum(rows, &dim, 1, false);
}

/* The shared body of clt_nll_loss and clt_cross_entropy: `x` holds log-probabilities, or
 * logits when `logits` is true. */
static clt_tensor *class_loss(const char *fn, clt_tensor *x, clt_tensor *target,
                              const clt_loss_options *options, bool logits)
{
    clt_loss_options o;
    clt_tensor *rows = NULL, *t = NULL, *lp = NULL, *keep = NULL, *nll = NULL, *smooth = NULL,
               *out = NULL;
    double *w = NULL, denominator = 0;
    clt_reduction reduction; /* what is left to apply to the rows' losses */
    if (clt__tensor_check(fn, x) != CLT_OK || clt__tensor_check(fn, target) != CLT_OK ||
        same_device(fn, x, target) != CLT_OK || clt__need_floating(fn, x) != CLT_OK)
        return NULL;
    if (x->ndim == 0) {
        clt__error(CLT_ERR_SHAPE, fn, "input is 0-d: it needs a class dimension");
        return NULL;
    }
    if (loss_options(fn, options, x, x->shape[x->ndim == 1 ? 0 : 1], &o, &w) != CLT_OK)
        return NULL;
    reduction = o.reduction;
    if (!logits && o.label_smoothing != 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "label_smoothing %g: only clt_cross_entropy smooths labels",
                   o.label_smoothing);
        goto done;
    }
    if (class_rows(fn, x, target, &rows, &t) != CLT_OK)
        goto done;
    int64_t classes = rows->shape[rows->ndim - 1];
    if (classes == 0) { /* no row counts: the mean divides 0 by 0, NaN, as PyTorch's */
        nll = no_class_rows(fn, rows, t, o.ignore_index);
    } else if (logits && rows->ndim == 2 && !w && o.label_smoothing == 0 &&
               rows->storage->device->backend->cross_entropy) {
        nll = xent_loss(fn, rows, t, o.ignore_index, o.reduction);
        reduction = CLT_REDUCTION_NONE; /* reduced already */
    } else if ((lp = logits ? clt_log_softmax(rows, rows->ndim - 1) : clt_tensor_retain(rows))) {
        nll = nll_rows(fn, lp, t, &o, w, &keep, &denominator);
    }
    if (nll && o.label_smoothing != 0) {
        /* without classes the smoothing term is 0 too, and e / C infinite: NaN, as PyTorch's */
        double e = o.label_smoothing;
        clt_tensor *s = lp ? smooth_rows(lp, keep, o.weight) : clt_tensor_retain(nll);
        clt_tensor *a = s ? clt_mul_scalar(nll, 1 - e) : NULL;
        clt_tensor *b = a ? clt_mul_scalar(s, e / (double)classes) : NULL;
        smooth = b ? clt_add(a, b) : NULL;
        clt_tensor_release(b), clt_tensor_release(a), clt_tensor_release(s);
        clt_tensor_release(nll);
        nll = smooth;
    }
    if (nll && o.reduction == CLT_REDUCTION_NONE && x->ndim > 2) /* the targets' shape */
        out = clt_reshape(nll, target->ndim, target->shape);
    else
        out = nll ? clt_tensor_retain(nll) : NULL;
    out = out ? reduce_loss(out, reduction, denominator) : NULL;
    if (!out && strncmp(clt_last_error(), fn, strlen(fn)) != 0)
        clt__rename_error(fn);
done:
    clt_tensor_release(nll);
    clt_tensor_release(keep);
    clt_tensor_release(lp);
    clt_tensor_release(t);
    clt_tensor_release(rows);
    clt__free(w);
    return out;
}

clt_tensor *clt_nll_loss(clt_tensor *log_probs, clt_tensor *target,
                         const clt_loss_options *options)
{
    return class_loss("clt_nll_loss", log_probs, target, options, false);
}

clt_tensor *clt_cross_entropy(clt_tensor *logits, clt_tensor *target,
                              const clt_loss_options *options)
{
    return class_loss("clt_cross_entropy", logits, target, options, true);
}

clt_tensor *clt_mse_loss(clt_tensor *input, clt_tensor *target, clt_reduction reduction)
{
    static const char *const fn = "clt_mse_loss";
    clt_tensor *d, *sq, *out;
    if (clt__tensor_check(fn, input) != CLT_OK || clt__tensor_check(fn, target) != CLT_OK ||
        check_reduction(fn, reduction) != CLT_OK)
        return NULL;
    if (!clt__is_floating(input->dtype) && !clt__is_floating(target->dtype)) { /* in f32: no wrapping */
        clt_tensor *a = clt_tensor_to_dtype(input, CLT_F32);
        clt_tensor *b = a ? clt_tensor_to_dtype(target, CLT_F32) : NULL;
        out = b ? clt_mse_loss(a, b, reduction) : NULL;
        if (!out)
            clt__rename_error(fn);
        clt_tensor_release(b);
        clt_tensor_release(a);
        return out;
    }
    d = clt_sub(input, target);
    sq = d ? clt_mul(d, d) : NULL;
    clt_tensor_release(d);
    out = sq ? reduce_loss(sq, reduction, (double)sq->numel) : NULL;
    if (!out)
        clt__rename_error(fn);
    return out;
}

/* ---- sliding windows ---------------------------------------------------------------------------- */

clt_conv2d_options clt_conv2d_options_default(void)
{
    return (clt_conv2d_options){.stride = {1, 1}, .dilation = {1, 1}, .groups = 1};
}

clt_pool2d_options clt_pool2d_options_default(int kernel_h, int kernel_w)
{
    return (clt_pool2d_options){.kernel = {kernel_h, kernel_w}, .stride = {kernel_h, kernel_w},
                                .dilation = {1, 1}};
}

/* 0 means the default: 1 for strides and dilations, the kernel size for pooling strides. */
static int or_default(int v, int def)
{
    return v ? v : def;
}

/* The output size of a window sweep, or -1 when the window does not fit (or the padded input
 * would have more than INT64_MAX elements a row). */
static int64_t out_size(int64_t in, int k, int s, int p, int d, bool ceil_mode)
{
    int64_t span = (int64_t)d * (k - 1) + 1, padded, o; /* below 2^62 */
    if (!clt__add_i64(in, 2 * (int64_t)p, &padded) || padded < span)
        return -1;
    o = (padded - span) / s + 1;
    /* ceil mode: one more window where the floor leaves input over, if it starts inside the
     * input or the left padding (PyTorch's pooling_output_shape) */
    if (ceil_mode && (padded - span) % s && (o * s < in + p))
        o++;
    return o;
}

/* Fills c->OH and c->OW from the rest of the geometry, or fails with CLT_ERR_SHAPE when the
 * kernel (or window: `what`) does not fit the input. */
static clt_status output_size(const char *fn, clt__conv_call *c, const char *what,
                              bool ceil_mode)
{
    int64_t oh = out_size((int64_t)c->H, c->kh, c->sh, c->ph, c->dh, ceil_mode);
    int64_t ow = out_size((int64_t)c->W, c->kw, c->sw, c->pw, c->dw, ceil_mode);
    if (oh < 1 || ow < 1)
        return clt__error(CLT_ERR_SHAPE, fn, "the %dx%d %s does not fit the %zux%zu input", c->kh,
                          c->kw, what, c->H, c->W);
    c->OH = (size_t)oh, c->OW = (size_t)ow;
    return CLT_OK;
}

clt_status clt__pool2d_geometry(const char *fn, const clt_tensor *x, const clt_pool2d_options *o,
                                bool is_max, clt__conv_call *c)
{
    if (!o || x->ndim != 4 || o->kernel[0] <= 0 || o->kernel[1] <= 0 || o->stride[0] < 0 ||
        o->stride[1] < 0 || o->padding[0] < 0 || o->padding[1] < 0 || o->dilation[0] < 0 ||
        o->dilation[1] < 0 || o->padding[0] > o->kernel[0] / 2 || o->padding[1] > o->kernel[1] / 2 ||
        (!is_max && (o->dilation[0] > 1 || o->dilation[1] > 1)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "needs an (N, C, H, W) input (got %d dimensions) and options with a "
                          "positive kernel, padding at most half of it, no negative values (and no "
                          "dilation for average pooling)",
                          x->ndim);
    *c = (clt__conv_call){.dtype = x->dtype, .N = (size_t)x->shape[0], .C = (size_t)x->shape[1],
                          .H = (size_t)x->shape[2], .W = (size_t)x->shape[3],
                          .kh = o->kernel[0], .kw = o->kernel[1],
                          .sh = or_default(o->stride[0], o->kernel[0]),
                          .sw = or_default(o->stride[1], o->kernel[1]), .ph = o->padding[0],
                          .pw = o->padding[1], .dh = or_default(o->dilation[0], 1),
                          .dw = or_default(o->dilation[1], 1), .is_max = is_max,
                          .count_pad = !o->exclude_padding};
    return output_size(fn, c, "window", o->ceil_mode);
}

static clt_tensor *pool(const char *fn, clt_tensor *x, const clt_pool2d_options *o, bool is_max,
                        clt_tensor **indices)
{
    clt__conv_call c;
    int64_t shape[4];
    clt_tensor *in, *out = NULL, *arg = NULL;
    clt_device *dev;
    bool prev, rec;
    if (indices)
        *indices = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__need_floating(fn, x) != CLT_OK ||
        clt__pool2d_geometry(fn, x, o, is_max, &c) != CLT_OK)
        return NULL;
    int64_t oh = (int64_t)c.OH, ow = (int64_t)c.OW;
    shape[0] = x->shape[0], shape[1] = x->shape[1], shape[2] = oh, shape[3] = ow;
    dev = x->storage->device;
    if (clt__output_check(fn, dev, x->dtype, 4, shape) != CLT_OK)
        return NULL;
    rec = clt__grad_begin(&x, 1, &prev);
    in = clt__contiguous(fn, x);
    out = in ? clt__tensor_new(fn, dev, x->dtype, 4, shape) : NULL;
    /* the indices only where the backward pass or the caller needs them */
    bool want_arg = is_max && (rec || indices);
    arg = out && want_arg ? clt__tensor_new(fn, dev, CLT_I64, 4, shape) : NULL;
    if (out && (!want_arg || arg) && out->numel) {
        c.in = in->storage->buf, c.in_offset = in->offset;
        c.out = out->storage->buf;
        c.arg = arg ? arg->storage->buf : NULL;
        if (CLT__BACKEND_CALL(pool2d, fn, dev, c.dtype, &c) != CLT_OK) {
            clt_tensor_release(out);
            out = NULL;
        }
    } else if (out && want_arg && !arg) {
        clt_tensor_release(out);
        out = NULL;
    }
    clt_tensor_release(in);
    clt__grad_end(prev);
    if (rec && out) {
        clt_tensor *ins[2] = {x, arg};
        c.in = c.out = c.arg = NULL;
        out = clt__record(fn, is_max ? &clt__d_max_pool2d : &clt__d_avg_pool2d, ins, 2, out,
                          &(clt__node_args){.conv = c});
    }
    if (out && indices)
        *indices = arg;
    else
        clt_tensor_release(arg);
    return out;
}

/* The 2-D window operations on an unbatched (C, H, W) x, as PyTorch's: a batch of one made
 * and removed around `run`. */
typedef struct window_args {
    clt_tensor *weight, *bias, **indices;
    const clt_conv2d_options *conv;
    const clt_pool2d_options *pool;
    bool is_max;
    clt__act act; /* the convolution's, after its bias */
} window_args;

static clt_tensor *conv2d_batched(const char *fn, clt_tensor *x, const window_args *a);

static clt_tensor *window_op(const char *fn, clt_tensor *x, const window_args *a)
{
    if (!x || x->ndim != 3)
        return a->pool ? pool(fn, x, a->pool, a->is_max, a->indices) : conv2d_batched(fn, x, a);
    clt_tensor *batched = clt_unsqueeze(x, 0), *out = NULL, *idx = NULL, *squeezed = NULL;
    window_args b = *a;
    b.indices = a->indices ? &idx : NULL;
    if (batched)
        out = a->pool ? pool(fn, batched, a->pool, a->is_max, b.indices)
                      : conv2d_batched(fn, batched, &b);
    squeezed = out ? clt_squeeze(out, 0) : NULL;
    if (a->indices) {
        *a->indices = squeezed && idx ? clt_squeeze(idx, 0) : NULL;
        if (squeezed && !*a->indices) {
            clt_tensor_release(squeezed);
            squeezed = NULL;
        }
    }
    if (!squeezed && strncmp(clt_last_error(), fn, strlen(fn)) != 0)
        clt__rename_error(fn);
    clt_tensor_release(idx);
    clt_tensor_release(out);
    clt_tensor_release(batched);
    return squeezed;
}

clt_tensor *clt_max_pool2d(clt_tensor *x, const clt_pool2d_options *options, clt_tensor **indices)
{
    if (indices)
        *indices = NULL;
    return window_op("clt_max_pool2d", x,
                     &(window_args){.pool = options, .is_max = true, .indices = indices});
}

clt_tensor *clt_avg_pool2d(clt_tensor *x, const clt_pool2d_options *options)
{
    return window_op("clt_avg_pool2d", x, &(window_args){.pool = options});
}

/* PyTorch's adaptive window i of `out` along a dimension of n: inputs floor(i * n / out) ..
 * ceil((i + 1) * n / out) - 1, computed without overflow (out <= INT_MAX). */
static void adaptive_window(int64_t i, int64_t n, int64_t out, int64_t *start, int64_t *end)
{
    int64_t q = n / out, r = n % out;
    *start = i * q + i * r / out;
    *end = (i + 1) * q + ((i + 1) * r + out - 1) / out;
}

/* The windows one narrow and mean each, joined by cat: for few windows. */
static clt_tensor *adaptive_narrowed(const char *fn, clt_tensor *x, int dim, int64_t n,
                                     int64_t out)
{
    clt_tensor **parts = clt__alloc_zeroed(fn, (size_t)out * sizeof *parts);
    clt_tensor *joined = NULL;
    int64_t i = 0, start, end;
    if (!parts)
        return NULL;
    for (; i < out; i++) {
        adaptive_window(i, n, out, &start, &end);
        clt_tensor *w = clt_narrow(x, dim, start, end - start);
        parts[i] = w ? clt_mean(w, &dim, 1, true) : NULL;
        clt_tensor_release(w);
        if (!parts[i])
            break;
    }
    if (i == out)
        joined = clt_cat(parts, (int)out, dim);
    for (int64_t k = 0; k < out; k++)
        clt_tensor_release(parts[k]);
    clt__free(parts);
    return joined;
}

/* The windows as `longest` weighted gathers: the sum over k of w_k x[idx_k], where window i
 * takes idx_k[i] = its k-th input (its last past its end) with w_k[i] = 1 / its length (0 past
 * its end). For many windows: as many operations as the longest window has inputs. */
static clt_tensor *adaptive_gathered(const char *fn, clt_tensor *x, int dim, int64_t n,
                                     int64_t out, int64_t longest)
{
    int64_t *idx = clt__alloc(fn, (size_t)out * sizeof *idx), shape[CLT_MAX_DIMS], start, end;
    double *w = idx ? clt__alloc(fn, (size_t)out * sizeof *w) : NULL;
    clt_tensor *sum = NULL;
    for (int d = dim; d < x->ndim; d++) /* the weights along dim, broadcast over the rest */
        shape[d - dim] = d == dim ? out : 1;
    for (int64_t k = 0; w && k < longest; k++) {
        for (int64_t i = 0; i < out; i++) {
            adaptive_window(i, n, out, &start, &end);
            idx[i] = start + k < end ? start + k : end - 1;
            w[i] = start + k < end ? 1.0 / (double)(end - start) : 0;
        }
        clt_tensor *picked = clt__index_select_host(fn, x, dim, idx, out);
        clt_tensor *wh = picked ? clt_tensor_from_data(x->ndim - dim, shape, w, CLT_F64, NULL)
                                : NULL;
        clt_tensor *wt = wh ? clt_tensor_to_ex(wh, &(clt_to_options){.device = x->storage->device,
                                                                      .dtype = x->dtype})
                            : NULL;
        clt_tensor *term = wt ? clt_mul(picked, wt) : NULL;
        clt_tensor *next = term && sum ? clt_add(sum, term) : clt_tensor_retain(term);
        clt_tensor *t[] = {picked, wh, wt, term, sum};
        for (size_t j = 0; j < sizeof t / sizeof *t; j++)
            clt_tensor_release(t[j]);
        if (!(sum = next))
            break;
    }
    clt__free(idx), clt__free(w);
    return sum;
}

/* x averaged over PyTorch's adaptive windows along dim (n inputs to `out`), by whichever way
 * takes fewer operations: min(out, longest window) of them, at most about sqrt(n). */
static clt_tensor *adaptive_mean(const char *fn, clt_tensor *x, int dim, int64_t n, int64_t out)
{
    int64_t longest = 0, start, end;
    for (int64_t i = 0; i < out && longest < out; i++) {
        adaptive_window(i, n, out, &start, &end);
        longest = end - start > longest ? end - start : longest;
    }
    return out <= longest ? adaptive_narrowed(fn, x, dim, n, out)
                          : adaptive_gathered(fn, x, dim, n, out, longest);
}

clt_tensor *clt_adaptive_avg_pool2d(clt_tensor *x, int out_h, int out_w)
{
    static const char *const fn = "clt_adaptive_avg_pool2d";
    clt_tensor *out = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__need_floating(fn, x) != CLT_OK)
        return NULL;
    if (x->ndim != 3 && x->ndim != 4) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "x must be (N, C, H, W) or (C, H, W), not %d-D",
                   x->ndim);
        return NULL;
    }
    int64_t H = x->shape[x->ndim - 2], W = x->shape[x->ndim - 1];
    if (out_h < 1 || out_w < 1 || H < 1 || W < 1) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "output size %dx%d must be positive, and the input %lldx%lld not empty", out_h,
                   out_w, (long long)H, (long long)W);
        return NULL;
    }
    int64_t shape[4];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 2] = out_h, shape[x->ndim - 1] = out_w;
    if (clt__resized_output(fn, x, x->ndim, shape, &out) != CLT_OK || out)
        return out;
    if (H % out_h == 0 && W % out_w == 0 && H / out_h <= INT_MAX && W / out_w <= INT_MAX) {
        /* equal windows without overlap: one average pooling */
        clt_pool2d_options o = clt_pool2d_options_default((int)(H / out_h), (int)(W / out_w));
        out = clt_avg_pool2d(x, &o);
    } else {
        clt_tensor *rows = adaptive_mean(fn, x, x->ndim - 2, H, out_h);
        out = rows ? adaptive_mean(fn, rows, x->ndim - 1, W, out_w) : NULL;
        clt_tensor_release(rows);
    }
    if (!out)
        clt__rename_error(fn);
    return out;
}

clt_status clt__conv2d_geometry(const char *fn, const clt_tensor *x, int kh, int kw,
                                const clt_conv2d_options *o, clt__conv_call *c)
{
    static const clt_conv2d_options defaults = {{1, 1}, {0, 0}, {1, 1}, 1};
    o = o ? o : &defaults;
    if (o->stride[0] < 0 || o->stride[1] < 0 || o->padding[0] < 0 || o->padding[1] < 0 ||
        o->dilation[0] < 0 || o->dilation[1] < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "strides, padding and dilation must not be negative");
    *c = (clt__conv_call){.dtype = x->dtype, .N = (size_t)x->shape[0], .C = (size_t)x->shape[1],
                          .H = (size_t)x->shape[2], .W = (size_t)x->shape[3], .kh = kh, .kw = kw,
                          .sh = or_default(o->stride[0], 1), .sw = or_default(o->stride[1], 1),
                          .ph = o->padding[0], .pw = o->padding[1],
                          .dh = or_default(o->dilation[0], 1), .dw = or_default(o->dilation[1], 1)};
    return output_size(fn, c, "kernel", false);
}

clt_tensor *clt_conv2d(clt_tensor *x, clt_tensor *weight, clt_tensor *bias,
                       const clt_conv2d_options *o)
{
    return clt__conv2d_act(x, weight, bias, o, CLT__ACT_NONE);
}

clt_tensor *clt__conv2d_act(clt_tensor *x, clt_tensor *weight, clt_tensor *bias,
                            const clt_conv2d_options *o, clt__act act)
{
    return window_op("clt_conv2d", x,
                     &(window_args){.weight = weight, .bias = bias, .conv = o, .act = act});
}

clt_tensor *clt__im2col(const char *fn, clt_tensor *in, const clt__conv_call *geometry)
{
    clt__conv_call c = *geometry;
    int64_t k = (int64_t)(c.C * (size_t)c.kh * (size_t)c.kw), nl = (int64_t)(c.N * c.OH * c.OW);
    clt_tensor *cols = clt__tensor_new(fn, in->storage->device, in->dtype, CLT_SHAPE(k, nl));
    if (cols && cols->numel) {
        c.in = in->storage->buf, c.in_offset = in->offset, c.out = cols->storage->buf;
        if (CLT__BACKEND_CALL(im2col, fn, in->storage->device, c.dtype, &c) != CLT_OK) {
            clt_tensor_release(cols);
            return NULL;
        }
    }
    if (cols && clt_grad_is_enabled() && clt__requires_grad(in)) {
        c.in = c.out = NULL;
        cols = clt__record(fn, &clt__d_im2col, &in, 1, cols, &(clt__node_args){.conv = c});
    }
    return cols;
}

/* Inputs x (contiguous) and the weight ((C * mult) x 1 x kh x kw), saved; a.conv the geometry.
 * The input's gradient is the transposed depthwise convolution of g; the weight's, per channel,
 * g's rows times x's columns: both composed from differentiable operations. */
static clt_status depthwise_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    const clt__conv_call *c = &n->a.conv;
    clt_tensor *x = clt__node_saved(n, 0), *w = clt__node_saved(n, 1);
    if (clt__node_wants(n, 0)) {
        clt_conv_transpose2d_options o =
            {.stride = {c->sh, c->sw},
             .padding = {c->ph, c->pw},
             .dilation = {c->dh, c->dw},
             .groups = (int)c->C,
             /* the rows and columns the forward windows left over, back in the output */
             .output_padding =
                 {(int)((c->H + 2 * (size_t)c->ph - (size_t)c->dh * (size_t)(c->kh - 1) - 1) %
                        (size_t)c->sh),
                  (int)((c->W + 2 * (size_t)c->pw - (size_t)c->dw * (size_t)(c->kw - 1) - 1) %
                        (size_t)c->sw)}};
        if (!(gi[0] = clt_conv_transpose2d(g, w, NULL, &o)))
            return clt_last_status();
    }
    if (clt__node_wants(n, 1)) {
        /* (C, mult, N * L) @ (C, N * L, kh * kw) -> (C, mult, kh * kw) */
        int64_t C = (int64_t)c->C, m = (int64_t)c->mult, nl = (int64_t)(c->N * c->OH * c->OW);
        int64_t kk = (int64_t)c->kh * c->kw;
        clt_tensor *t[6] = {NULL};
        t[0] = clt_view(g, CLT_SHAPE((int64_t)c->N, C * m, (int64_t)(c->OH * c->OW)));
        t[1] = t[0] ? clt_transpose(t[0], 0, 1) : NULL;
        t[2] = t[1] ? clt_reshape(t[1], 3, (int64_t[]){C, m, nl}) : NULL;
        t[3] = t[2] ? clt__im2col("clt_backward", x, c) : NULL;
        t[4] = t[3] ? clt_view(t[3], CLT_SHAPE(C, kk, nl)) : NULL;
        t[5] = t[4] ? clt_transpose(t[4], 1, 2) : NULL;
        clt_tensor *gw = t[5] ? clt_matmul(t[2], t[5]) : NULL;
        gi[1] = gw ? clt_reshape(gw, 4, w->shape) : NULL;
        clt_tensor_release(gw);
        release_all(t, 6);
        if (!gi[1])
            return clt_last_status();
    }
    return CLT_OK;
}

static const clt__derivative depthwise_derivative = {"DepthwiseConv2dBackward", depthwise_bw,
                                                     1u | 2u};

/* The (N, O, OH, OW) output of in (contiguous) and weight (O x ...) over the window geometry c
 * (its mult set): the backend's depthwise2d entry, or its conv2d, on the weight made contiguous;
 * NULL on an error. c receives the buffers. */
static clt_tensor *weighted_windows(const char *fn, clt_tensor *in, clt_tensor *weight,
                                    clt__conv_call *c, bool depthwise)
{
    clt_device *dev = in->storage->device;
    clt_tensor *w = clt__contiguous(fn, weight), *out = NULL;
    out = w ? clt__tensor_new(fn, dev, in->dtype,
                              CLT_SHAPE((int64_t)c->N, weight->shape[0], (int64_t)c->OH,
                                        (int64_t)c->OW))
            : NULL;
    if (out && out->numel) {
        c->in = in->storage->buf, c->in_offset = in->offset;
        c->out = out->storage->buf, c->out_offset = out->offset;
        c->weight = w->storage->buf, c->weight_offset = w->offset;
        clt_status st = depthwise ? CLT__BACKEND_CALL(depthwise2d, fn, dev, c->dtype, c)
                                  : CLT__BACKEND_CALL(conv2d, fn, dev, c->dtype, c);
        if (st != CLT_OK) {
            clt_tensor_release(out);
            out = NULL;
        }
    }
    clt_tensor_release(w);
    return out;
}

/* The convolution of in (contiguous) with a weight of one input channel a group, groups the
 * input's channels: one device operation over the window geometry c. */
static clt_tensor *depthwise(const char *fn, clt_tensor *in, clt_tensor *weight,
                             const clt__conv_call *geometry)
{
    clt__conv_call c = *geometry;
    clt_tensor *ins[2] = {in, weight};
    bool prev, rec = clt__grad_begin(ins, 2, &prev);
    c.mult = (size_t)weight->shape[0] / c.C;
    clt_tensor *out = weighted_windows(fn, in, weight, &c, true);
    clt__grad_end(prev);
    if (!rec || !out)
        return out;
    c.in = c.out = c.weight = NULL;
    return clt__record(fn, &depthwise_derivative, ins, 2, out, &(clt__node_args){.conv = c});
}

static clt_tensor *conv2d_batched(const char *fn, clt_tensor *x, const window_args *args)
{
    clt_tensor *weight = args->weight, *bias = args->bias;
    clt__act act = args->act;
    const clt_conv2d_options *o = args->conv;
    static const clt_conv2d_options defaults = {{1, 1}, {0, 0}, {1, 1}, 1};
    clt__conv_call c;
    clt_tensor *in = NULL, *cols = NULL, *out = NULL, *joined = NULL, *shaped = NULL;
    int groups;
    char a[256], b[256];
    if (clt__tensor_check(fn, x) != CLT_OK || clt__tensor_check(fn, weight) != CLT_OK ||
        same_device(fn, x, weight) != CLT_OK || same_device(fn, x, bias) != CLT_OK)
        return NULL;
    if (bias && bias->dtype != x->dtype) {
        clt__error(CLT_ERR_DTYPE, fn, "the bias is %s, the input %s: they must match",
                   clt_dtype_name(bias->dtype), clt_dtype_name(x->dtype));
        return NULL;
    }
    o = o ? o : &defaults;
    groups = or_default(o->groups, 1);
    if (x->ndim != 4 || weight->ndim != 4 || groups < 0 || x->shape[1] % groups ||
        weight->shape[0] % groups || weight->shape[1] != x->shape[1] / groups ||
        weight->shape[2] < 1 || weight->shape[2] > INT_MAX || weight->shape[3] < 1 ||
        weight->shape[3] > INT_MAX ||
        (bias && (bias->ndim != 1 || bias->shape[0] != weight->shape[0]))) {
        clt__format_shape(a, sizeof a, x->ndim, x->shape);
        clt__format_shape(b, sizeof b, weight->ndim, weight->shape);
        clt__error(CLT_ERR_SHAPE, fn,
                   "input %s and weight %s (groups %d): expected (N, C, H, W), (O, C / groups, "
                   "kh, kw) with C and O divisible by groups, kh and kw in 1..INT_MAX, and a "
                   "bias of (O,)",
                   a, b, groups);
        return NULL;
    }
    if (clt__conv2d_geometry(fn, x, (int)weight->shape[2], (int)weight->shape[3], o, &c) != CLT_OK)
        return NULL;
    int64_t oh = (int64_t)c.OH, ow = (int64_t)c.OW, n = x->shape[0], k, l, nl;
    if (!clt__mul_i64(x->shape[1], (int64_t)c.kh * c.kw, &k) || !clt__mul_i64(oh, ow, &l) ||
        !clt__mul_i64(n, l, &nl)) {
        clt__format_shape(a, sizeof a, x->ndim, x->shape);
        clt__format_shape(b, sizeof b, weight->ndim, weight->shape);
        clt__error(CLT_ERR_SHAPE, fn, "input %s and weight %s: the unfolded input would have "
                   "more than %lld elements a row or column", a, b, (long long)INT64_MAX);
        return NULL;
    }
    int64_t og = weight->shape[0] / groups, kg = k / groups;
    if (clt__output_check(fn, x->storage->device, x->dtype, 4,
                          (int64_t[]){n, weight->shape[0], oh, ow}) != CLT_OK)
        return NULL;
    in = clt__contiguous(fn, x);
    if (in && groups > 1 && groups == x->shape[1] && clt__is_floating(x->dtype)) {
        /* depthwise: one pass over the windows, no columns */
        shaped = depthwise(fn, in, weight, &c);
    } else if (in && groups == 1 && c.kh == 1 && c.kw == 1 && c.sh == 1 && c.sw == 1 &&
               c.ph == 0 && c.pw == 0) {
        /* a 1x1 kernel at stride 1 without padding: the input (N, K, L) is its own columns,
         * and (O, K) @ (N, K, L) gives (N, O, L), the output's layout */
        clt_tensor *b3 = clt_view(in, CLT_SHAPE(n, k, l));
        clt_tensor *w2 = b3 ? clt_reshape(weight, CLT_SHAPE(og, kg)) : NULL;
        clt_tensor *p3 = w2 ? clt_matmul(w2, b3) : NULL;
        shaped = p3 ? clt_reshape(p3, 4, (int64_t[]){n, weight->shape[0], oh, ow}) : NULL;
        clt_tensor_release(p3), clt_tensor_release(w2), clt_tensor_release(b3);
    } else if (in && groups == 1 && k > 0 && (x->dtype == CLT_F32 || x->dtype == CLT_F64) &&
               !(clt_grad_is_enabled() &&
                 (clt__requires_grad(in) || clt__requires_grad(weight)))) {
        /* nothing to record: the backend's conv2d entry (im2col and the product fused, or
         * composed: clt__conv2d_composed), written in the output's layout */
        c.mult = (size_t)weight->shape[0];
        shaped = weighted_windows(fn, in, weight, &c, false);
    } else {
        /* (K, N * L): one product convolves every image, each group a batch of it (one product
         * over N * L columns rather than one an image: measured faster on OpenBLAS at batch 16,
         * the transposing copy of the output included) */
        cols = in ? clt__im2col(fn, in, &c) : NULL;
        if (cols && groups == 1) {
            /* act((O, K) @ (K, N * L) + bias) as (N, O, L): the bias along the rows and the
             * activation in the product's epilogue, each image's columns into its place */
            clt_tensor *w2 = clt_reshape(weight, CLT_SHAPE(og, kg));
            clt_tensor *b2 = w2 && bias ? clt_reshape(bias, CLT_SHAPE(og, 1)) : NULL;
            joined = w2 && (b2 || !bias) ? clt__conv_product(fn, w2, cols, b2, act, l) : NULL;
            clt_tensor_release(b2), clt_tensor_release(w2);
            bias = NULL, act = CLT__ACT_NONE;
        } else if (cols) { /* (G, og, kg) @ (G, kg, N * L) -> (G, og, N * L) -> (N, O, L) */
            clt_tensor *w3 = clt_reshape(weight, 3, (int64_t[]){groups, og, kg});
            clt_tensor *c3 = w3 ? clt_view(cols, CLT_SHAPE(groups, kg, nl)) : NULL;
            clt_tensor *p3 = c3 ? clt_matmul(w3, c3) : NULL;
            clt_tensor *v3 = p3 ? clt_view(p3, CLT_SHAPE(weight->shape[0], n, l)) : NULL;
            joined = v3 ? clt_transpose(v3, 0, 1) : NULL;
            clt_tensor_release(v3), clt_tensor_release(p3), clt_tensor_release(c3),
                clt_tensor_release(w3);
        }
        /* (N, O, L) -> (N, O, OH, OW) */
        shaped = joined ? clt_reshape(joined, 4, (int64_t[]){n, weight->shape[0], oh, ow}) : NULL;
    }
    if (shaped && bias) {
        clt_tensor *b4 = clt_reshape(bias, 4, (int64_t[]){1, bias->shape[0], 1, 1});
        out = b4 ? clt_add(shaped, b4) : NULL;
        clt_tensor_release(b4);
        clt_tensor_release(shaped);
    } else {
        out = shaped;
    }
    if (out && act == CLT__ACT_RELU) {
        shaped = out;
        out = clt_relu(shaped);
        clt_tensor_release(shaped);
    }
    if (!out)
        clt__rename_error(fn);
    clt_tensor_release(joined);
    clt_tensor_release(cols);
    clt_tensor_release(in);
    return out;
}

/* ---- normalisation ---------------------------------------------------------------------------- */

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
    release_all(t, 4);
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
    release_all(t, 4);
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
        if (same_device(fn, x, given[i]) != CLT_OK)
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
        release_all(tmp, 6);
        clt_grad_set_enabled(prev);
    }
    if (!out)
        clt__rename_error(fn);
    clt_tensor *tmp[6] = {mean, var, mean_b, var_b, w_b, b_b};
    release_all(tmp, 6);
    return out;
}

clt_tensor *clt_layer_norm(clt_tensor *x, int normalized_ndim, clt_tensor *weight,
                           clt_tensor *bias, double eps)
{
    static const char *const fn = "clt_layer_norm";
    int dims[CLT_MAX_DIMS];
    clt_tensor *mean = NULL, *var = NULL, *out = NULL;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__need_floating(fn, x) != CLT_OK ||
        same_device(fn, x, weight) != CLT_OK || same_device(fn, x, bias) != CLT_OK)
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

/* ---- dropout ------------------------------------------------------------------------------------ */

clt_tensor *clt_dropout(clt_tensor *x, double p, bool training)
{
    static const char *const fn = "clt_dropout";
    clt_tensor *r = NULL, *pt = NULL, *keep = NULL, *scaled = NULL, *zero = NULL, *out = NULL;
    clt_device *dev;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__need_floating(fn, x) != CLT_OK)
        return NULL;
    if (!(p >= 0 && p <= 1)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "probability %g is outside 0..1", p);
        return NULL;
    }
    if (!training || p == 0)
        return clt_tensor_retain(x);
    dev = x->storage->device;
    if (p == 1) { /* x * 0, as PyTorch: recorded, so the gradient is 0 */
        zero = clt_tensor_zeros(0, NULL, x->dtype, dev);
        out = zero ? clt_mul(x, zero) : NULL;
        clt_tensor_release(zero);
        if (!out)
            clt__rename_error(fn);
        return out;
    }
    /* the mask comes from the default generator: the same seed, the same mask on every device */
    r = clt_tensor_rand(x->ndim, x->shape, CLT_F32, dev);
    pt = r ? clt_tensor_full(0, NULL, p, CLT_F32, dev) : NULL;
    keep = pt ? clt_ge(r, pt) : NULL;
    scaled = keep ? clt_mul_scalar(x, 1.0 / (1.0 - p)) : NULL;
    zero = scaled ? clt_tensor_zeros(0, NULL, x->dtype, dev) : NULL;
    out = zero ? clt_where(keep, scaled, zero) : NULL;
    if (!out)
        clt__rename_error(fn);
    clt_tensor *tmp[5] = {r, pt, keep, scaled, zero};
    release_all(tmp, 5);
    return out;
}
