/* Padding (F.pad: constant, reflect, replicate, circular) and 2-D resizing (F.interpolate:
 * nearest, bilinear), composed from cat and index_select along one dimension at a time, so that
 * they run on every device and their gradients are those operations' own. */
#include <math.h>
#include <string.h>

#include "cltensor/autograd.h"
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

/* ---- conv_transpose2d ------------------------------------------------------------------------- */

clt_conv_transpose2d_options clt_conv_transpose2d_options_default(void)
{
    return (clt_conv_transpose2d_options){.stride = {1, 1}, .dilation = {1, 1}, .groups = 1};
}

bool clt__conv_transpose2d_options_ok(const clt_conv_transpose2d_options *o)
{
    bool ok = o->groups >= 1;
    for (int i = 0; ok && i < 2; i++)
        ok = o->stride[i] >= 1 && o->dilation[i] >= 1 && o->padding[i] >= 0 &&
             o->output_padding[i] >= 0 &&
             (o->output_padding[i] < o->stride[i] || o->output_padding[i] < o->dilation[i]);
    return ok;
}

/* x with s - 1 zeros between neighbours along dim (s >= 1): size (n - 1) s + 1. */
static clt_tensor *spread(const char *fn, clt_tensor *x, int dim, int s)
{
    if (s == 1)
        return clt_tensor_retain(x);
    int64_t shape[CLT_MAX_DIMS + 1], n = x->shape[dim];
    int nd = x->ndim;
    for (int d = 0, k = 0; d < nd; d++) {
        shape[k++] = x->shape[d];
        if (d == dim)
            shape[k++] = s - 1;
    }
    clt_tensor *u = clt_unsqueeze(x, dim + 1);
    clt_tensor *z = u ? clt_tensor_zeros(nd + 1, shape, x->dtype, x->storage->device) : NULL;
    clt_tensor *both = z ? clt_cat((clt_tensor *[]){u, z}, 2, dim + 1) : NULL;
    int64_t flat[CLT_MAX_DIMS];
    memcpy(flat, x->shape, sizeof(int64_t) * (size_t)nd);
    flat[dim] = n * s;
    clt_tensor *r = both ? clt_reshape(both, nd, flat) : NULL;
    clt_tensor *out = r ? clt_narrow(r, dim, 0, (n - 1) * s + 1) : NULL;
    if (!out)
        clt__rename_error(fn);
    clt_tensor *t[] = {u, z, both, r};
    for (size_t k = 0; k < sizeof t / sizeof *t; k++)
        clt_tensor_release(t[k]);
    return out;
}

/* x grown by lo zeros before and hi after along dim; negative amounts crop instead. */
static clt_tensor *grow(const char *fn, clt_tensor *x, int dim, int64_t lo, int64_t hi)
{
    int64_t start = lo < 0 ? -lo : 0, end = x->shape[dim] - (hi < 0 ? -hi : 0);
    clt_tensor *c = clt_narrow(x, dim, start, end - start);
    int64_t pad[2] = {lo > 0 ? lo : 0, hi > 0 ? hi : 0}, all[2 * CLT_MAX_DIMS] = {0};
    int k = 2 * (x->ndim - 1 - dim);
    all[k] = pad[0], all[k + 1] = pad[1];
    clt_tensor *out = c ? clt_pad(c, k + 2, all, CLT_PAD_CONSTANT, 0) : NULL;
    clt_tensor_release(c);
    if (!out)
        clt__rename_error(fn);
    return out;
}

/* The spatial sizes of a transposed convolution along one dimension of `in` positions with a
 * kernel of k, checked: the input grown for the stride-1 convolution ((in - 1) s + 1 spread,
 * d (k - 1) - p more on each side, output_padding after) and the output, PyTorch's
 * (in - 1) s - 2 p + d (k - 1) + output_padding + 1. False when one exceeds int64. */
static bool transposed_extent(int64_t in, int64_t k, int s, int p, int d, int op, int64_t *grown,
                              int64_t *out)
{
    int64_t g, span;
    if (!clt__mul_i64(in - 1, s, &g) || !clt__mul_i64(d, k - 1, &span) ||
        !clt__add_i64(g, 1 + (int64_t)op - 2 * (int64_t)p, &g) || !clt__add_i64(g, span, &g) ||
        !clt__add_i64(g, span, &g))
        return false;
    *grown = g, *out = g - span;
    return true;
}

/* Whether the transposed convolution's output, and the grown input it convolves, can exist on
 * x's device: an error naming fn and the sizes before any work, when not. */
static clt_status transposed_sizes_check(const char *fn, clt_tensor *x, clt_tensor *weight,
                                         const clt_conv_transpose2d_options *o)
{
    int64_t n = x->ndim == 4 ? x->shape[0] : 1, grown[4] = {n, x->shape[x->ndim - 3]},
            out[4] = {n, weight->shape[1] * o->groups};
    for (int i = 0; i < 2; i++) {
        int64_t in = x->shape[x->ndim - 2 + i], k = weight->shape[2 + i];
        if (in < 1 || k < 1)
            return clt__error(CLT_ERR_SHAPE, fn, "input %s and weight %s: no empty sizes",
                              clt__shape_of(x).text, clt__shape_of(weight).text);
        if (!transposed_extent(in, k, o->stride[i], o->padding[i], o->dilation[i],
                               o->output_padding[i], &grown[2 + i], &out[2 + i]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                              "input %s, weight %s, stride %d, padding %d and dilation %d: the "
                              "output's dimension %d would exceed int64",
                              clt__shape_of(x).text, clt__shape_of(weight).text, o->stride[i],
                              o->padding[i], o->dilation[i], 2 + i);
        if (out[2 + i] < 1)
            return clt__error(CLT_ERR_SHAPE, fn,
                              "input %s and weight %s with padding %d: the output's dimension "
                              "%d would be %lld, too small",
                              clt__shape_of(x).text, clt__shape_of(weight).text, o->padding[i],
                              2 + i, (long long)out[2 + i]);
    }
    clt_device *dev = x->storage->device;
    if (clt__output_check(fn, dev, x->dtype, 4, out) != CLT_OK ||
        clt__output_check(fn, dev, x->dtype, 4, grown) != CLT_OK)
        return clt_last_status();
    return CLT_OK;
}

clt_tensor *clt_conv_transpose2d(clt_tensor *x, clt_tensor *weight, clt_tensor *bias,
                                 const clt_conv_transpose2d_options *options)
{
    static const char *const fn = "clt_conv_transpose2d";
    clt_conv_transpose2d_options o = options ? *options : clt_conv_transpose2d_options_default();
    if (clt__tensor_check(fn, x) != CLT_OK || clt__tensor_check(fn, weight) != CLT_OK)
        return NULL;
    bool unbatched = x->ndim == 3;
    int g = o.groups;
    bool ok = clt__conv_transpose2d_options_ok(&o) && (x->ndim == 3 || x->ndim == 4) &&
              weight->ndim == 4 && x->shape[x->ndim - 3] == weight->shape[0] &&
              weight->shape[0] % g == 0 &&
              (!bias || (bias->ndim == 1 && bias->shape[0] == weight->shape[1] * g));
    if (!ok) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "input %s and weight %s (groups %d): expected (N, C, H, W) or (C, H, W), "
                   "(C, O / groups, kh, kw) with C divisible by groups, a bias of (O,), strides "
                   "and dilations >= 1, paddings >= 0 and output paddings below the stride or "
                   "the dilation",
                   clt__shape_of(x).text, clt__shape_of(weight).text, g);
        return NULL;
    }
    int64_t kh = weight->shape[2], kw = weight->shape[3], cin = weight->shape[0];
    int64_t cout_g = weight->shape[1];
    if (transposed_sizes_check(fn, x, weight, &o) != CLT_OK)
        return NULL;
    clt_tensor *t[12] = {0}, *out = NULL;
    /* the input spread by the stride and grown so that a stride-1 convolution with the flipped,
     * transposed kernel gives PyTorch's (H - 1) s - 2 p + d (k - 1) + output_padding + 1 */
    t[0] = unbatched ? clt_unsqueeze(x, 0) : clt_tensor_retain(x);
    t[1] = t[0] ? spread(fn, t[0], 2, o.stride[0]) : NULL;
    t[2] = t[1] ? spread(fn, t[1], 3, o.stride[1]) : NULL;
    int64_t eh = (int64_t)o.dilation[0] * (kh - 1) - o.padding[0];
    int64_t ew = (int64_t)o.dilation[1] * (kw - 1) - o.padding[1];
    t[3] = t[2] ? grow(fn, t[2], 2, eh, eh + o.output_padding[0]) : NULL;
    t[4] = t[3] ? grow(fn, t[3], 3, ew, ew + o.output_padding[1]) : NULL;
    /* (C, O / g, kh, kw) -> (O, C / g, kh, kw), flipped in both spatial dimensions */
    t[5] = t[4] ? clt_reshape(weight, CLT_SHAPE(g, cin / g, cout_g, kh, kw)) : NULL;
    t[6] = t[5] ? clt_transpose(t[5], 1, 2) : NULL;
    t[7] = t[6] ? clt_reshape(t[6], CLT_SHAPE(g * cout_g, cin / g, kh, kw)) : NULL;
    int64_t *rev = t[7] ? clt__alloc(fn, (size_t)(kh > kw ? kh : kw) * sizeof *rev) : NULL;
    if (rev) {
        for (int64_t i = 0; i < kh; i++)
            rev[i] = kh - 1 - i;
        t[8] = clt__index_select_host(fn, t[7], 2, rev, kh);
        for (int64_t i = 0; i < kw; i++)
            rev[i] = kw - 1 - i;
        t[9] = t[8] ? clt__index_select_host(fn, t[8], 3, rev, kw) : NULL;
        clt__free(rev);
    }
    if (t[9]) {
        clt_conv2d_options co = {.stride = {1, 1},
                                 .dilation = {o.dilation[0], o.dilation[1]},
                                 .groups = g};
        t[10] = clt_conv2d(t[4], t[9], bias, &co);
        out = t[10] && unbatched ? clt_squeeze(t[10], 0) : clt_tensor_retain(t[10]);
    }
    if (!out && t[9])
        clt__rename_error(fn);
    for (int i = 0; i < 12; i++)
        clt_tensor_release(t[i]);
    return out;
}
