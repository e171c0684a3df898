/* The losses: nll and cross entropy over a class dimension, with PyTorch's options (class
 * weights, an ignored target, label smoothing), and mse, each reduced to a mean, a sum or none.
 * Compositions of log_softmax, the gather and the reductions, but for cross entropy without
 * weights or smoothing, whose forward and backward passes are one device launch each. */
#include <string.h>

#include "cltensor/ops.h"
#include "core/core.h"
#include "device/registry.h"
#include "graph/graph.h"
#include "ops_internal.h"

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
    if (clt__tensor_check(fn, o->weight) != CLT_OK ||
        clt__same_device_as(fn, x, o->weight) != CLT_OK ||
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
    picked = idx ? clt__gather(fn, flat, 0, idx, pos, n) : NULL;
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

clt_tensor *clt__cross_entropy_backward(const char *fn, clt_tensor *x, clt_tensor *t,
                                       clt_tensor *g, int64_t ignore, bool reduced,
                                       double divisor)
{
    clt_device *dev = x->storage->device;
    clt_tensor *out = clt__tensor_new(fn, dev, x->dtype, x->ndim, x->shape);
    if (!out)
        return NULL;
    clt__xent_call c = {.dtype = x->dtype,
                        .backward = true,
                        .rows = (size_t)x->shape[0],
                        .classes = (size_t)x->shape[1],
                        .ignore = ignore,
                        .logits = x->storage->buf,
                        .logits_offset = x->offset,
                        .target = t->storage->buf,
                        .target_offset = t->offset,
                        .g = g->storage->buf,
                        .g_offset = g->offset,
                        .g_step = reduced ? 0 : 1,
                        .g_divisor = divisor,
                        .out = out->storage->buf,
                        .out_offset = out->offset};
    if (out->numel && CLT__BACKEND_CALL(cross_entropy, fn, dev, x->dtype, &c) != CLT_OK) {
        clt_tensor_release(out);
        return NULL;
    }
    return out;
}

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
        out = clt__record(fn, CLT__OP_cross_entropy, in, 2, out,
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
        clt__same_device_as(fn, x, target) != CLT_OK || clt__need_floating(fn, x) != CLT_OK)
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
