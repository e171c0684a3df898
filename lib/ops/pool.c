/* 2-D pooling: max and average pooling over sliding windows (one backend kernel; max pooling
 * keeps the indices its backward pass needs), and adaptive average pooling, one average pooling
 * where the windows are equal and apart, else composed from narrow and mean or from weighted
 * gathers. The window geometry is convolution's (conv.c). */
#include <limits.h>
#include <string.h>

#include "cltensor/ops.h"
#include "core/core.h"
#include "device/registry.h"
#include "graph/graph.h"
#include "ops_internal.h"

clt_pool2d_options clt_pool2d_options_default(int kernel_h, int kernel_w)
{
    return (clt_pool2d_options){.kernel = {kernel_h, kernel_w}, .stride = {kernel_h, kernel_w},
                                .dilation = {1, 1}};
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
                          .sh = clt__or_default(o->stride[0], o->kernel[0]),
                          .sw = clt__or_default(o->stride[1], o->kernel[1]), .ph = o->padding[0],
                          .pw = o->padding[1], .dh = clt__or_default(o->dilation[0], 1),
                          .dw = clt__or_default(o->dilation[1], 1), .is_max = is_max,
                          .count_pad = !o->exclude_padding};
    return clt__window_output_size(fn, c, "window", o->ceil_mode);
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
        out = clt__record(fn, is_max ? CLT__OP_max_pool2d : CLT__OP_avg_pool2d, ins, 2, out,
                          &(clt__node_args){.conv = c});
    }
    if (out && indices)
        *indices = arg;
    else
        clt_tensor_release(arg);
    return out;
}

/* pool over the options in a: the batched operation of clt__window_op. */
static clt_tensor *pool_batched(const char *fn, clt_tensor *x, const clt__window_args *a)
{
    return pool(fn, x, a->pool, a->is_max, a->indices);
}

clt_tensor *clt_max_pool2d(clt_tensor *x, const clt_pool2d_options *options, clt_tensor **indices)
{
    if (indices)
        *indices = NULL;
    return clt__window_op("clt_max_pool2d", x,
                          &(clt__window_args){.pool = options, .is_max = true, .indices = indices},
                          pool_batched);
}

clt_tensor *clt_avg_pool2d(clt_tensor *x, const clt_pool2d_options *options)
{
    return clt__window_op("clt_avg_pool2d", x, &(clt__window_args){.pool = options},
                          pool_batched);
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
