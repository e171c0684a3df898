/* Scaled dot-product attention, F.scaled_dot_product_attention: one device operation forward
 * (the backend's attention entry, one pass per query row without the score matrix), recorded
 * with its inputs for the backward pass (lib/autograd/derivatives.c), which is written with the
 * operations. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cltensor/ops.h"
#include "graph/graph.h"
#include "core/core.h"
#include "device/registry.h"
#include "ops_internal.h"

clt_attention_options clt_attention_options_default(void)
{
    return (clt_attention_options){.mask = NULL, .causal = false, .scale = 0};
}

clt_tensor *clt__attention_mask(const char *fn, clt_tensor *mask, clt_dtype dtype, int ndim,
                                const int64_t *shape)
{
    clt_tensor *add = NULL, *wide = NULL, *out = NULL;
    if (mask->dtype == CLT_BOOL) {
        clt_device *dev = mask->storage->device;
        clt_tensor *zero = clt_tensor_zeros(0, NULL, dtype, dev);
        clt_tensor *ninf = zero ? clt_tensor_full(0, NULL, -INFINITY, dtype, dev) : NULL;
        add = ninf ? clt_where(mask, zero, ninf) : NULL;
        clt_tensor_release(ninf);
        clt_tensor_release(zero);
    } else {
        add = clt_tensor_retain(mask);
    }
    wide = add ? clt_expand(add, ndim, shape) : NULL;
    out = wide ? clt__contiguous(fn, wide) : NULL;
    if (!out)
        clt__rename_error(fn);
    clt_tensor_release(wide);
    clt_tensor_release(add);
    return out;
}

/* ---- forward ------------------------------------------------------------------------------- */

static clt_status check_operands(const char *fn, clt_tensor *q, clt_tensor *k, clt_tensor *v,
                                 const clt_attention_options *o)
{
    char a[256], b[256], c[256];
    clt_tensor *all[4] = {q, k, v, o->mask};
    for (int i = 0; i < 3; i++)
        if (clt__tensor_check(fn, all[i]) != CLT_OK)
            return clt_last_status();
    if (clt__same_device(fn, all, o->mask ? 4 : 3) != CLT_OK || clt__need_floating(fn, q) != CLT_OK)
        return clt_last_status();
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return clt__error(CLT_ERR_DTYPE, fn, "q, k and v must have one dtype (got %s, %s, %s)",
                          clt_dtype_name(q->dtype), clt_dtype_name(k->dtype),
                          clt_dtype_name(v->dtype));
    bool fit = q->ndim >= 2 && k->ndim == q->ndim && v->ndim == q->ndim &&
               k->shape[q->ndim - 1] == q->shape[q->ndim - 1] &&
               v->shape[q->ndim - 2] == k->shape[q->ndim - 2];
    for (int d = 0; fit && d < q->ndim - 2; d++)
        fit = k->shape[d] == q->shape[d] && v->shape[d] == q->shape[d];
    if (!fit) {
        clt__format_shape(a, sizeof a, q->ndim, q->shape);
        clt__format_shape(b, sizeof b, k->ndim, k->shape);
        clt__format_shape(c, sizeof c, v->ndim, v->shape);
        return clt__error(CLT_ERR_SHAPE, fn,
                          "q %s, k %s and v %s do not fit: expected (..., L, E), (..., S, E) and "
                          "(..., S, D) with the same leading dimensions", a, b, c);
    }
    if (o->mask && o->causal)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "a mask and causal together: give one (PyTorch refuses both too)");
    if (o->mask && o->mask->dtype != CLT_BOOL && o->mask->dtype != q->dtype)
        return clt__error(CLT_ERR_DTYPE, fn, "the mask must be bool or %s like q, not %s",
                          clt_dtype_name(q->dtype), clt_dtype_name(o->mask->dtype));
    if (!(o->scale >= 0) || isinf(o->scale))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "scale %g is not a finite positive number (0: 1 / sqrt(E))", o->scale);
    return CLT_OK;
}

clt_tensor *clt_scaled_dot_product_attention(clt_tensor *q, clt_tensor *k, clt_tensor *v,
                                             const clt_attention_options *options)
{
    static const char *const fn = "clt_scaled_dot_product_attention";
    clt_attention_options o = options ? *options : clt_attention_options_default();
    clt_tensor *qc = NULL, *kc = NULL, *vc = NULL, *mc = NULL, *out = NULL;
    int64_t shape[CLT_MAX_DIMS];
    if (check_operands(fn, q, k, v, &o) != CLT_OK)
        return NULL;
    int nd = q->ndim;
    int64_t L = q->shape[nd - 2], S = k->shape[nd - 2], E = q->shape[nd - 1];
    int64_t D = v->shape[nd - 1], B = 1;
    for (int d = 0; d < nd - 2; d++)
        B *= q->shape[d];
    double scale = o.scale > 0 ? o.scale : 1 / sqrt((double)(E ? E : 1));
    clt_tensor *in[4] = {q, k, v, o.mask};
    bool prev, rec = clt__grad_begin(in, 4, &prev);
    memcpy(shape, q->shape, sizeof shape);
    shape[nd - 1] = S;
    qc = clt__contiguous(fn, q);
    kc = qc ? clt__contiguous(fn, k) : NULL;
    vc = kc ? clt__contiguous(fn, v) : NULL;
    mc = vc && o.mask ? clt__attention_mask(fn, o.mask, q->dtype, nd, shape) : NULL;
    shape[nd - 1] = D;
    if (vc && (mc || !o.mask))
        out = clt__tensor_new(fn, q->storage->device, q->dtype, nd, shape);
    if (out && out->numel) {
        clt__attention_call c = {.dtype = q->dtype, .B = (size_t)B, .L = (size_t)L,
                                 .S = (size_t)S, .E = (size_t)E, .D = (size_t)D, .scale = scale,
                                 .causal = o.causal, .q = qc->storage->buf,
                                 .k = kc->storage->buf, .v = vc->storage->buf,
                                 .mask = mc ? mc->storage->buf : NULL, .out = out->storage->buf,
                                 .q_offset = qc->offset, .k_offset = kc->offset,
                                 .v_offset = vc->offset, .mask_offset = mc ? mc->offset : 0,
                                 .out_offset = out->offset};
        if (CLT__BACKEND_CALL(attention, fn, q->storage->device, q->dtype, &c) != CLT_OK) {
            clt_tensor_release(out);
            out = NULL;
        }
    }
    clt__grad_end(prev);
    clt_tensor_release(mc);
    clt_tensor_release(vc);
    clt_tensor_release(kc);
    clt_tensor_release(qc);
    if (!rec || !out)
        return out;
    return clt__record(fn, CLT__OP_attention, in, 4, out,
                       &(clt__node_args){.s0 = scale, .i0 = o.causal});
}
