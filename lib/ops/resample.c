/* Padding (F.pad: constant, reflect, replicate, circular) and 2-D resizing (F.interpolate:
 * nearest, bilinear), composed from cat and index_select along one dimension at a time, so that
 * they run on every device and their gradients are those operations' own. */
#include <math.h>
#include <string.h>

#include "cltensor/ops.h"
#include "core/core.h"
#include "ops_internal.h"

/* ---- pad ---------------------------------------------------------------------------------------- */

/* x padded by `before` and `after` along dim. Consumes nothing. */
static clt_tensor *pad_dim(const char *fn, clt_tensor *x, int dim, int64_t before, int64_t after,
                           clt_pad_mode mode, double value)
{
    int64_t n = x->shape[dim], total = n + before + after;
    if (mode == CLT_PAD_CONSTANT) {
        int64_t shape[CLT_MAX_DIMS];
        clt_tensor *parts[3] = {NULL, x, NULL}, *out = NULL;
        memcpy(shape, x->shape, sizeof shape);
        shape[dim] = before;
        parts[0] = clt_tensor_full(x->ndim, shape, value, x->dtype, x->storage->device);
        shape[dim] = after;
        parts[2] = parts[0] ? clt_tensor_full(x->ndim, shape, value, x->dtype, x->storage->device)
                            : NULL;
        out = parts[2] ? clt_cat(parts, 3, dim) : NULL;
        if (!out)
            clt__rename_error(fn);
        clt_tensor_release(parts[0]), clt_tensor_release(parts[2]);
        return out;
    }
    int64_t *src = clt__alloc(fn, (size_t)total * sizeof *src);
    if (!src)
        return NULL;
    for (int64_t o = 0; o < total; o++) {
        int64_t i = o - before;
        if (mode == CLT_PAD_REFLECT)
            i = i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
        else if (mode == CLT_PAD_REPLICATE)
            i = i < 0 ? 0 : i >= n ? n - 1 : i;
        else
            i = ((i % n) + n) % n;
        src[o] = i;
    }
    clt_tensor *out = clt__index_select_host(fn, x, dim, src, total);
    clt__free(src);
    return out;
}

clt_tensor *clt_pad(clt_tensor *x, int npad, const int64_t *pad, clt_pad_mode mode, double value)
{
    static const char *const fn = "clt_pad";
    if (clt__tensor_check(fn, x) != CLT_OK)
        return NULL;
    if (npad < 0 || npad % 2 || npad > 2 * x->ndim || (npad && !pad) || mode < CLT_PAD_CONSTANT ||
        mode > CLT_PAD_CIRCULAR) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "needs an even number of pads, at most 2 for each of the %d dimensions (got "
                   "%d), and a pad mode (got %d)",
                   x->ndim, npad, (int)mode);
        return NULL;
    }
    for (int k = 0; k < npad; k++) {
        int dim = x->ndim - 1 - k / 2;
        int64_t n = x->shape[dim];
        /* reflect needs pads below the size; replicate and circular need elements to repeat */
        bool ok = pad[k] >= 0 && (mode != CLT_PAD_REFLECT || pad[k] < n) &&
                  (mode == CLT_PAD_CONSTANT || n > 0) && (mode != CLT_PAD_CIRCULAR || pad[k] <= n);
        if (!ok) {
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                       "pad[%d] = %lld does not suit dimension %d of size %lld in this mode (pads "
                       "are not negative; reflect's below the size, circular's at most it)",
                       k, (long long)pad[k], dim, (long long)n);
            return NULL;
        }
    }
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    for (int k = 0; k + 1 < npad; k += 2) {
        int dim = x->ndim - 1 - k / 2;
        if (!clt__add_i64(shape[dim], pad[k], &shape[dim]) ||
            !clt__add_i64(shape[dim], pad[k + 1], &shape[dim])) {
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                       "pads %lld and %lld make dimension %d of size %lld larger than int64",
                       (long long)pad[k], (long long)pad[k + 1], dim, (long long)x->shape[dim]);
            return NULL;
        }
    }
    clt_tensor *y;
    if (clt__resized_output(fn, x, x->ndim, shape, &y) != CLT_OK || y)
        return y;
    y = clt_tensor_retain(x);
    for (int k = 0; k + 1 < npad && y; k += 2) {
        clt_tensor *next = pad[k] || pad[k + 1] ? pad_dim(fn, y, x->ndim - 1 - k / 2, pad[k],
                                                          pad[k + 1], mode, value)
                                                : clt_tensor_retain(y);
        clt_tensor_release(y);
        y = next;
    }
    return y;
}

/* ---- interpolate -------------------------------------------------------------------------------- */

/* PyTorch's source coordinate of output position o of `out` from `in` positions. */
static double source_coordinate(int64_t o, int64_t in, int64_t out, bool align_corners)
{
    if (align_corners)
        return out > 1 ? (double)o * (double)(in - 1) / (double)(out - 1) : 0;
    double s = ((double)o + 0.5) * ((double)in / (double)out) - 0.5;
    return s < 0 ? 0 : s;
}

/* x resized along dim to `out` positions. */
static clt_tensor *resize_dim(const char *fn, clt_tensor *x, int dim, int64_t out,
                              clt_interpolate_mode mode, bool align_corners)
{
    int64_t in = x->shape[dim];
    if (in == out)
        return clt_tensor_retain(x);
    int64_t *lo = clt__alloc(fn, 2 * (size_t)out * sizeof *lo);
    double *w = lo ? clt__alloc(fn, (size_t)out * sizeof *w) : NULL;
    clt_tensor *y = NULL;
    if (!w) {
        clt__free(lo);
        return NULL;
    }
    int64_t *hi = lo + out;
    for (int64_t o = 0; o < out; o++) {
        if (mode == CLT_INTERPOLATE_NEAREST) { /* floor(o * in / out), as PyTorch's "nearest" */
            int64_t i = (int64_t)floor((double)o * ((double)in / (double)out));
            lo[o] = i < in ? i : in - 1;
            continue;
        }
        double s = source_coordinate(o, in, out, align_corners);
        int64_t i = (int64_t)s;
        lo[o] = i < in - 1 ? i : in - 1;
        hi[o] = lo[o] + 1 < in ? lo[o] + 1 : in - 1;
        w[o] = s - (double)lo[o];
    }
    if (mode == CLT_INTERPOLATE_NEAREST) {
        y = clt__index_select_host(fn, x, dim, lo, out);
    } else {
        /* (1 - w) x[lo] + w x[hi], w along dim broadcast over the rest */
        int64_t shape[CLT_MAX_DIMS];
        for (int d = 0; d < x->ndim; d++)
            shape[d] = d == dim ? out : 1;
        clt_tensor *a = clt__index_select_host(fn, x, dim, lo, out);
        clt_tensor *b = a ? clt__index_select_host(fn, x, dim, hi, out) : NULL;
        clt_tensor *wh = b ? clt_tensor_from_data(x->ndim - dim, shape + dim, w, CLT_F64, NULL) : NULL;
        clt_tensor *wt = wh ? clt_tensor_to_ex(wh, &(clt_to_options){.device = x->storage->device,
                                                                      .dtype = x->dtype})
                            : NULL;
        clt_tensor *d = wt ? clt_sub(b, a) : NULL, *dw = d ? clt_mul(d, wt) : NULL;
        y = dw ? clt_add(a, dw) : NULL;
        if (!y && a && b)
            clt__rename_error(fn);
        clt_tensor *t[] = {a, b, wh, wt, d, dw};
        for (size_t k = 0; k < sizeof t / sizeof *t; k++)
            clt_tensor_release(t[k]);
    }
    clt__free(lo), clt__free(w);
    return y;
}

clt_tensor *clt_interpolate2d(clt_tensor *x, int64_t out_h, int64_t out_w,
                              clt_interpolate_mode mode, bool align_corners)
{
    static const char *const fn = "clt_interpolate2d";
    if (clt__tensor_check(fn, x) != CLT_OK || clt__need_floating(fn, x) != CLT_OK)
        return NULL;
    if ((x->ndim != 3 && x->ndim != 4) || out_h < 1 || out_w < 1 ||
        x->shape[x->ndim - 1] < 1 || x->shape[x->ndim - 2] < 1 ||
        (mode != CLT_INTERPOLATE_NEAREST && mode != CLT_INTERPOLATE_BILINEAR)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "needs a non-empty (N, C, H, W) or (C, H, W) input (got %d dimensions), a "
                   "positive output size (got %lldx%lld) and a mode (got %d)",
                   x->ndim, (long long)out_h, (long long)out_w, (int)mode);
        return NULL;
    }
    int64_t shape[4];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 2] = out_h, shape[x->ndim - 1] = out_w;
    clt_tensor *empty;
    if (clt__resized_output(fn, x, x->ndim, shape, &empty) != CLT_OK || empty)
        return empty;
    /* one dimension at a time, rows first unless resizing the columns first keeps the step
     * between them smaller (out_h * W against H * out_w) */
    int dim[2] = {x->ndim - 2, x->ndim - 1};
    int64_t size[2] = {out_h, out_w};
    int first = (double)out_h * (double)x->shape[dim[1]] > (double)x->shape[dim[0]] * (double)out_w;
    clt_tensor *half = resize_dim(fn, x, dim[first], size[first], mode, align_corners);
    clt_tensor *out = half ? resize_dim(fn, half, dim[!first], size[!first], mode, align_corners)
                           : NULL;
    clt_tensor_release(half);
    return out;
}
