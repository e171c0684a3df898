/* 2-D convolution and transposed convolution, and the window geometry pooling shares:
 * conv2d as im2col and a matrix product (the backend's fused conv2d where nothing is recorded, one
 * depthwise pass where each group is one channel, no columns for a 1x1 kernel), and
 * conv_transpose2d as a stride-1 convolution of the input spread by the stride and grown, with
 * the kernel flipped and transposed. */
#include <limits.h>
#include <string.h>

#include "cltensor/ops.h"
#include "core/core.h"
#include "device/registry.h"
#include "graph/graph.h"
#include "cltensor/autograd.h"
#include "ops_internal.h"

/* ---- window geometry ------------------------------------------------------------------------- */

int clt__or_default(int v, int def)
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

clt_status clt__window_output_size(const char *fn, clt__conv_call *c, const char *what,
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

clt_tensor *clt__window_op(const char *fn, clt_tensor *x, const clt__window_args *a,
                           clt__window_run run)
{
    if (!x || x->ndim != 3)
        return run(fn, x, a);
    clt_tensor *batched = clt_unsqueeze(x, 0), *out = NULL, *idx = NULL, *squeezed = NULL;
    clt__window_args b = *a;
    b.indices = a->indices ? &idx : NULL;
    if (batched)
        out = run(fn, batched, &b);
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

/* ---- conv2d ---------------------------------------------------------------------------------- */

clt_conv2d_options clt_conv2d_options_default(void)
{
    return (clt_conv2d_options){.stride = {1, 1}, .dilation = {1, 1}, .groups = 1};
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
                          .sh = clt__or_default(o->stride[0], 1),
                          .sw = clt__or_default(o->stride[1], 1), .ph = o->padding[0],
                          .pw = o->padding[1], .dh = clt__or_default(o->dilation[0], 1),
                          .dw = clt__or_default(o->dilation[1], 1)};
    return clt__window_output_size(fn, c, "kernel", false);
}

clt_tensor *clt_conv2d(clt_tensor *x, clt_tensor *weight, clt_tensor *bias,
                       const clt_conv2d_options *o)
{
    return clt__conv2d_act(x, weight, bias, o, CLT__ACT_NONE);
}

static clt_tensor *conv2d_batched(const char *fn, clt_tensor *x, const clt__window_args *a);

clt_tensor *clt__conv2d_act(clt_tensor *x, clt_tensor *weight, clt_tensor *bias,
                            const clt_conv2d_options *o, clt__act act)
{
    clt__window_args a = {.weight = weight, .bias = bias, .conv = o, .act = act};
    return clt__window_op("clt_conv2d", x, &a, conv2d_batched);
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
        cols = clt__record(fn, CLT__OP_im2col, &in, 1, cols, &(clt__node_args){.conv = c});
    }
    return cols;
}

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
    return clt__record(fn, CLT__OP_depthwise, ins, 2, out, &(clt__node_args){.conv = c});
}

static clt_tensor *conv2d_batched(const char *fn, clt_tensor *x, const clt__window_args *args)
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
        clt__same_device_as(fn, x, weight) != CLT_OK ||
        clt__same_device_as(fn, x, bias) != CLT_OK)
        return NULL;
    if (bias && bias->dtype != x->dtype) {
        clt__error(CLT_ERR_DTYPE, fn, "the bias is %s, the input %s: they must match",
                   clt_dtype_name(bias->dtype), clt_dtype_name(x->dtype));
        return NULL;
    }
    o = o ? o : &defaults;
    groups = clt__or_default(o->groups, 1);
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
