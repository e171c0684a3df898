/* Elementwise front ends: device and dtype checks, PyTorch's type promotion and broadcasting,
 * conversion of the inputs to the computing dtype, and dispatch to the device's backend. Also
 * the in-place forms, fill_, copy_, cat and stack, which are copies into views. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cltensor/ops.h"
#include "core/core.h"
#include "device/registry.h"
#include "graph/graph.h"
#include "ops_internal.h"

/* bool 0 < integer 1 < floating 2 */
static int kind(clt_dtype t)
{
    return t == CLT_BOOL ? 0 : clt__is_floating(t) ? 2 : 1;
}

static clt_dtype promote(clt_dtype a, clt_dtype b)
{
    if (a == b)
        return a;
    if (kind(a) != kind(b))
        return kind(a) > kind(b) ? a : b;
    if (kind(a) == 2) {
        if ((a == CLT_F16 && b == CLT_BF16) || (a == CLT_BF16 && b == CLT_F16))
            return CLT_F32;
        return clt_dtype_size(a) >= clt_dtype_size(b) ? a : b;
    }
    return clt_dtype_size(a) >= clt_dtype_size(b) ? a : b; /* u8 < i32 < i64 */
}

/* The broadcast shape of the tensors, or an error naming the two shapes that do not fit. */
static clt_status broadcast(const char *fn, clt_tensor *const *ts, int n, int *ndim, int64_t *shape)
{
    *ndim = 0;
    for (int i = 0; i < n; i++)
        *ndim = ts[i]->ndim > *ndim ? ts[i]->ndim : *ndim;
    for (int d = 0; d < *ndim; d++)
        shape[d] = 1;
    for (int i = 0; i < n; i++) {
        for (int d = 0; d < ts[i]->ndim; d++) {
            int64_t *out = &shape[*ndim - ts[i]->ndim + d], s = ts[i]->shape[d];
            if (*out == 1)
                *out = s;
            else if (s != 1 && s != *out) {
                char a[256], b[256];
                clt__format_shape(a, sizeof a, ts[0]->ndim, ts[0]->shape);
                clt__format_shape(b, sizeof b, ts[i]->ndim, ts[i]->shape);
                return clt__error(CLT_ERR_SHAPE, fn,
                                  "shapes %s and %s cannot be broadcast together (dimension %d: "
                                  "%lld and %lld)",
                                  a, b, *ndim - ts[i]->ndim + d, (long long)*out, (long long)s);
            }
        }
    }
    return CLT_OK;
}

/* An operand for the kernel: x's strides aligned to the output's ndim, 0 where broadcast. */
static clt__operand operand(const clt_tensor *x, int ndim, const int64_t *shape)
{
    clt__operand op = {x->storage->buf, x->offset, {0}};
    for (int d = 0; d < x->ndim; d++) {
        int od = ndim - x->ndim + d;
        op.strides[od] = x->shape[d] == shape[od] ? x->strides[d] : 0;
    }
    return op;
}

static bool same_shape(const clt_tensor *x, int ndim, const int64_t *shape)
{
    if (x->ndim != ndim)
        return false;
    for (int d = 0; d < ndim; d++)
        if (x->shape[d] != shape[d])
            return false;
    return true;
}

/* Runs op into `out` (already the broadcast shape) from inputs already in `dtype` (where's
 * condition in bool). */
static clt_status dispatch_on(const char *fn, clt_device *dev, clt__ew_op op, clt_dtype dtype,
                              clt_tensor *out, clt_tensor *const *in, int nin, double s0,
                              double s1)
{
    clt__ew_call c = {.op = op, .dtype = dtype, .ndim = out->ndim, .n = out->numel, .s0 = s0, .s1 = s1};
    bool flat = clt_tensor_is_contiguous(out);
    if (out->numel == 0)
        return CLT_OK;
    memcpy(c.shape, out->shape, sizeof c.shape);
    c.out = operand(out, out->ndim, out->shape);
    for (int i = 0; i < nin; i++) {
        c.in[i] = operand(in[i], out->ndim, out->shape);
        flat = flat && same_shape(in[i], out->ndim, out->shape) && clt_tensor_is_contiguous(in[i]);
        if (clt__storage_sync(fn, in[i]->storage) != CLT_OK)
            return clt_last_status();
    }
    if (flat)
        c.ndim = 0;
    else
        clt__ew_collapse(&c, nin);
    if (clt__storage_sync(fn, out->storage) != CLT_OK)
        return clt_last_status();
    return CLT__BACKEND_CALL(elementwise, fn, dev, c.dtype, &c);
}

/* The elementwise operation on out's device. */
static clt_status dispatch(const char *fn, clt__ew_op op, clt_dtype dtype, clt_tensor *out,
                           clt_tensor *const *in, int nin, double s0, double s1)
{
    return dispatch_on(fn, out->storage->device, op, dtype, out, in, nin, s0, s1);
}

/* The inputs converted to dtype (new references; where's condition, input 0, kept as is). */
static clt_status convert_all(const char *fn, clt_tensor *const *in, int nin, clt_dtype dtype,
                              bool keep_first, clt_tensor **conv)
{
    for (int i = 0; i < nin; i++) {
        conv[i] = (keep_first && i == 0) || in[i]->dtype == dtype
                      ? clt_tensor_retain(in[i])
                      : clt_tensor_to_ex(in[i], &(clt_to_options){.dtype = dtype});
        if (!conv[i]) {
            for (int k = 0; k < i; k++)
                clt_tensor_release(conv[k]);
            return clt__rename_error(fn); /* the conversion named itself */
        }
    }
    return CLT_OK;
}

/* The general path: checks, promotion to `dtype`, broadcasting, a new output. */
static clt_tensor *compute(const char *fn, clt__ew_op op, clt_tensor *const *in, int nin,
                           clt_dtype dtype, double s0, double s1)
{
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *conv[3] = {NULL}, *out = NULL;
    bool is_where = op == CLT_EW_where;
    if (clt__same_device(fn, in, nin) != CLT_OK || broadcast(fn, in, nin, &ndim, shape) != CLT_OK)
        return NULL;
    if (clt__device_dtype_check(fn, in[0]->storage->device, dtype) != CLT_OK)
        return NULL;
    if (convert_all(fn, in, nin, dtype, is_where, conv) != CLT_OK)
        return NULL;
    out = clt__tensor_new(fn, in[0]->storage->device, clt__ew_gives_bool(op) ? CLT_BOOL : dtype,
                          ndim, shape);
    if (out && dispatch(fn, op, dtype, out, conv, nin, s0, s1) != CLT_OK) {
        clt_tensor_release(out);
        out = NULL;
    }
    for (int i = 0; i < nin; i++)
        clt_tensor_release(conv[i]);
    return out;
}

/* compute, recorded for autograd. */
static clt_tensor *run(const char *fn, clt__ew_op op, clt_tensor *const *in, int nin,
                       clt_dtype dtype, double s0, double s1)
{
    clt__op id = clt__op_of_ew(op);
    bool prev, rec = clt__grad_begin(in, nin, &prev) && id != CLT__OP_LEAF;
    clt_tensor *out = compute(fn, op, in, nin, dtype, s0, s1);
    clt__grad_end(prev);
    return rec ? clt__record(fn, id, in, nin, out, &(clt__node_args){.s0 = s0, .s1 = s1}) : out;
}

clt_tensor *clt__ew_n(const char *fn, clt__ew_op op, clt_tensor *const *in, double s0, double s1)
{
    int nin = clt__ew_inputs(op);
    clt_dtype dt;
    if (clt__same_device(fn, in, nin) != CLT_OK)
        return NULL;
    dt = in[0]->dtype;
    for (int i = 1; i < nin; i++)
        dt = promote(dt, in[i]->dtype);
    return run(fn, op, in, nin, dt, s0, s1);
}

clt_tensor *clt__ew(const char *fn, clt__ew_op op, clt_tensor *a, clt_tensor *b, double s0,
                    double s1)
{
    return clt__ew_n(fn, op, (clt_tensor *[3]){a, b, NULL}, s0, s1);
}

static clt_tensor *unsupported(const char *fn, clt_dtype dtype, const clt_tensor *x)
{
    clt__error(CLT_ERR_DTYPE, fn, "dtype %s is not supported (on %s)", clt_dtype_name(dtype),
               x->storage->device->name);
    return NULL;
}

/* ---- binary ------------------------------------------------------------------------------------ */

typedef enum { KEEP, TO_FLOAT, NO_BOOL } rule;

static clt_tensor *binary(const char *fn, clt__ew_op op, clt_tensor *a, clt_tensor *b, rule r)
{
    clt_tensor *in[2] = {a, b};
    clt_dtype dt;
    if (clt__same_device(fn, in, 2) != CLT_OK)
        return NULL;
    dt = promote(a->dtype, b->dtype);
    if (r == TO_FLOAT && kind(dt) < 2)
        dt = CLT_F32;
    if (r == NO_BOOL && dt == CLT_BOOL)
        return unsupported(fn, dt, a);
    return run(fn, op, in, 2, dt, 0, 0);
}

clt_tensor *clt_add(clt_tensor *a, clt_tensor *b) { return binary("clt_add", CLT_EW_add, a, b, KEEP); }
clt_tensor *clt_sub(clt_tensor *a, clt_tensor *b) { return binary("clt_sub", CLT_EW_sub, a, b, NO_BOOL); }
clt_tensor *clt_mul(clt_tensor *a, clt_tensor *b) { return binary("clt_mul", CLT_EW_mul, a, b, KEEP); }
clt_tensor *clt_div(clt_tensor *a, clt_tensor *b) { return binary("clt_div", CLT_EW_div, a, b, TO_FLOAT); }
/* An integer power refuses a negative integer exponent, as PyTorch does (its value would be a
 * fraction): the smallest exponent is read back from the device first. */
clt_tensor *clt_pow(clt_tensor *a, clt_tensor *b)
{
    static const char *const fn = "clt_pow";
    clt_tensor *in[2] = {a, b}, *least;
    double v = 0;
    if (clt__same_device(fn, in, 2) != CLT_OK)
        return NULL;
    if (kind(promote(a->dtype, b->dtype)) == 1 && (b->dtype == CLT_I32 || b->dtype == CLT_I64) &&
        b->numel) {
        least = clt_amin(b, NULL, 0, false);
        clt_status st = least ? clt_tensor_item(least, &v) : clt_last_status();
        clt_tensor_release(least);
        if (st != CLT_OK) {
            clt__rename_error(fn);
            return NULL;
        }
        if (v < 0) {
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "integers to negative integer powers are "
                       "not allowed (the exponent holds %.0f)", v);
            return NULL;
        }
    }
    return binary(fn, CLT_EW_pow, a, b, NO_BOOL);
}
clt_tensor *clt_maximum(clt_tensor *a, clt_tensor *b) { return binary("clt_maximum", CLT_EW_maximum, a, b, KEEP); }
clt_tensor *clt_minimum(clt_tensor *a, clt_tensor *b) { return binary("clt_minimum", CLT_EW_minimum, a, b, KEEP); }
clt_tensor *clt_eq(clt_tensor *a, clt_tensor *b) { return binary("clt_eq", CLT_EW_eq, a, b, KEEP); }
clt_tensor *clt_ne(clt_tensor *a, clt_tensor *b) { return binary("clt_ne", CLT_EW_ne, a, b, KEEP); }
clt_tensor *clt_lt(clt_tensor *a, clt_tensor *b) { return binary("clt_lt", CLT_EW_lt, a, b, KEEP); }
clt_tensor *clt_le(clt_tensor *a, clt_tensor *b) { return binary("clt_le", CLT_EW_le, a, b, KEEP); }
clt_tensor *clt_gt(clt_tensor *a, clt_tensor *b) { return binary("clt_gt", CLT_EW_gt, a, b, KEEP); }
clt_tensor *clt_ge(clt_tensor *a, clt_tensor *b) { return binary("clt_ge", CLT_EW_ge, a, b, KEEP); }

/* ---- with a scalar: a double acts as a Python float ---------------------------------------------- */

static clt_tensor *with_scalar(const char *fn, clt__ew_op op, clt_tensor *x, double s)
{
    if (clt__tensor_check(fn, x) != CLT_OK)
        return NULL;
    return run(fn, op, &x, 1, kind(x->dtype) == 2 ? x->dtype : CLT_F32, s, 0);
}

clt_tensor *clt_add_scalar(clt_tensor *a, double s) { return with_scalar("clt_add_scalar", CLT_EW_add_scalar, a, s); }
clt_tensor *clt_sub_scalar(clt_tensor *a, double s) { return with_scalar("clt_sub_scalar", CLT_EW_add_scalar, a, -s); }
clt_tensor *clt_mul_scalar(clt_tensor *a, double s) { return with_scalar("clt_mul_scalar", CLT_EW_mul_scalar, a, s); }
clt_tensor *clt_div_scalar(clt_tensor *a, double s) { return with_scalar("clt_div_scalar", CLT_EW_div_scalar, a, s); }
clt_tensor *clt_pow_scalar(clt_tensor *a, double s) { return with_scalar("clt_pow_scalar", CLT_EW_pow_scalar, a, s); }

/* ---- unary ----------------------------------------------------------------------------------------- */

static clt_tensor *unary(const char *fn, clt__ew_op op, clt_tensor *x, rule r, double s0, double s1)
{
    clt_dtype dt;
    if (clt__tensor_check(fn, x) != CLT_OK)
        return NULL;
    dt = x->dtype;
    if (r == TO_FLOAT && kind(dt) < 2)
        dt = CLT_F32;
    if (r == NO_BOOL && dt == CLT_BOOL)
        return unsupported(fn, dt, x);
    return run(fn, op, &x, 1, dt, s0, s1);
}

clt_tensor *clt_neg(clt_tensor *x) { return unary("clt_neg", CLT_EW_neg, x, NO_BOOL, 0, 0); }
clt_tensor *clt_abs(clt_tensor *x) { return unary("clt_abs", CLT_EW_abs, x, NO_BOOL, 0, 0); }
clt_tensor *clt_relu(clt_tensor *x) { return unary("clt_relu", CLT_EW_relu, x, NO_BOOL, 0, 0); }
clt_tensor *clt_exp(clt_tensor *x) { return unary("clt_exp", CLT_EW_exp, x, TO_FLOAT, 0, 0); }
clt_tensor *clt_log(clt_tensor *x) { return unary("clt_log", CLT_EW_log, x, TO_FLOAT, 0, 0); }
clt_tensor *clt_sqrt(clt_tensor *x) { return unary("clt_sqrt", CLT_EW_sqrt, x, TO_FLOAT, 0, 0); }
clt_tensor *clt_rsqrt(clt_tensor *x) { return unary("clt_rsqrt", CLT_EW_rsqrt, x, TO_FLOAT, 0, 0); }
clt_tensor *clt_sin(clt_tensor *x) { return unary("clt_sin", CLT_EW_sin, x, TO_FLOAT, 0, 0); }
clt_tensor *clt_cos(clt_tensor *x) { return unary("clt_cos", CLT_EW_cos, x, TO_FLOAT, 0, 0); }
clt_tensor *clt_tanh(clt_tensor *x) { return unary("clt_tanh", CLT_EW_tanh, x, TO_FLOAT, 0, 0); }
clt_tensor *clt_sigmoid(clt_tensor *x) { return unary("clt_sigmoid", CLT_EW_sigmoid, x, TO_FLOAT, 0, 0); }
clt_tensor *clt_gelu(clt_tensor *x) { return unary("clt_gelu", CLT_EW_gelu, x, TO_FLOAT, 0, 0); }
clt_tensor *clt_gelu_tanh(clt_tensor *x)
{
    return unary("clt_gelu_tanh", CLT_EW_gelu_tanh, x, TO_FLOAT, 0, 0);
}
clt_tensor *clt_silu(clt_tensor *x) { return unary("clt_silu", CLT_EW_silu, x, TO_FLOAT, 0, 0); }

clt_tensor *clt_clamp(clt_tensor *x, double lo, double hi)
{
    return unary("clt_clamp", CLT_EW_clamp, x, NO_BOOL, lo, hi);
}

clt_tensor *clt_where(clt_tensor *cond, clt_tensor *a, clt_tensor *b)
{
    static const char *const fn = "clt_where";
    clt_tensor *in[3] = {cond, a, b};
    if (clt__same_device(fn, in, 3) != CLT_OK)
        return NULL;
    if (cond->dtype != CLT_BOOL) {
        clt__error(CLT_ERR_DTYPE, fn, "the condition must be bool, not %s",
                   clt_dtype_name(cond->dtype));
        return NULL;
    }
    return run(fn, CLT_EW_where, in, 3, promote(a->dtype, b->dtype), 0, 0);
}

clt_tensor *clt_addcmul(clt_tensor *input, clt_tensor *t1, clt_tensor *t2, double value)
{
    static const char *const fn = "clt_addcmul";
    clt_tensor *in[3] = {t1, t2, input};
    if (clt__same_device(fn, in, 3) != CLT_OK)
        return NULL;
    clt_dtype dt = promote(promote(t1->dtype, t2->dtype), input->dtype);
    if (dt == CLT_BOOL)
        return unsupported(fn, dt, input);
    if (kind(dt) == 1 && value != floor(value)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "value %g is not an integer, and the tensors are of dtype %s", value,
                   clt_dtype_name(dt));
        return NULL;
    }
    return run(fn, CLT_EW_addcmul, in, 3, dt, value, 0);
}

/* ---- in place ------------------------------------------------------------------------------------ */

/* The elements [lo, hi] of the storage that x covers (strides are never negative). */
static void extent(const clt_tensor *x, size_t *lo, size_t *hi)
{
    *lo = *hi = x->offset;
    for (int d = 0; d < x->ndim; d++)
        *hi += (size_t)(x->shape[d] - 1) * (size_t)x->strides[d];
}

/* Whether writing out element by element could change what `in` still has to read: they
 * share storage and overlap without being the very same elements in the same order. */
static bool aliases(const clt_tensor *out, const clt_tensor *in)
{
    size_t a0, a1, b0, b1;
    if (out->storage != in->storage || out->numel == 0 || in->numel == 0)
        return false;
    extent(out, &a0, &a1);
    extent(in, &b0, &b1);
    if (a1 < b0 || b1 < a0)
        return false;
    if (out->offset != in->offset || out->ndim != in->ndim)
        return true;
    for (int d = 0; d < out->ndim; d++)
        if (out->shape[d] != in->shape[d] || out->strides[d] != in->strides[d])
            return true;
    return false;
}

static clt_status copy_into(const char *fn, clt_tensor *x, clt_tensor *src);

/* out[...] = op(in...) computed in dtype, stored into out (converted to out's dtype). Inputs
 * that overlap the output at other positions are read from a copy first. */
static clt_status into(const char *fn, clt__ew_op op, clt_tensor *out, clt_tensor *const *in,
                       int nin, clt_dtype dtype)
{
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *all[4] = {out}, *conv[3] = {NULL}, *tmp = NULL;
    clt_status st;
    for (int i = 0; i < nin; i++)
        all[i + 1] = in[i];
    if (clt__same_device(fn, all, nin + 1) != CLT_OK || broadcast(fn, all, nin + 1, &ndim, shape) != CLT_OK ||
        clt__inplace_check(fn, out, in, nin) != CLT_OK)
        return clt_last_status();
    if (!same_shape(out, ndim, shape)) {
        char a[256], b[256];
        clt__format_shape(a, sizeof a, out->ndim, out->shape);
        clt__format_shape(b, sizeof b, ndim, shape);
        return clt__error(CLT_ERR_SHAPE, fn, "the result of shape %s does not fit the output of shape %s", b, a);
    }
    if (clt__tensor_overlaps(out))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "the output is a broadcast view: several elements share memory");
    if (kind(dtype) > kind(out->dtype))
        return clt__error(CLT_ERR_DTYPE, fn, "the result type %s cannot be stored in %s",
                          clt_dtype_name(dtype), clt_dtype_name(out->dtype));
    if (convert_all(fn, in, nin, dtype, false, conv) != CLT_OK)
        return clt_last_status();
    for (int i = 0; i < nin; i++) {
        if (aliases(out, conv[i])) {
            clt_tensor *staged = clt_tensor_to_ex(conv[i], &(clt_to_options){.copy = true});
            clt_tensor_release(conv[i]);
            conv[i] = staged;
            if (!staged) {
                for (int k = 0; k < nin; k++)
                    clt_tensor_release(conv[k]);
                return clt_last_status();
            }
        }
    }
    if (dtype == out->dtype) {
        st = dispatch(fn, op, dtype, out, conv, nin, 0, 0);
    } else { /* compute in dtype, then store converted */
        tmp = clt__tensor_new(fn, out->storage->device, dtype, ndim, shape);
        st = tmp ? dispatch(fn, op, dtype, tmp, conv, nin, 0, 0) : clt_last_status();
        if (st == CLT_OK)
            st = copy_into(fn, out, tmp);
        clt_tensor_release(tmp);
    }
    for (int i = 0; i < nin; i++)
        clt_tensor_release(conv[i]);
    if (st == CLT_OK)
        clt__tensor_bump_version(out);
    return st;
}

clt_status clt_add_(clt_tensor *x, clt_tensor *b)
{
    clt_tensor *in[2] = {x, b};
    if (clt__same_device("clt_add_", in, 2) != CLT_OK)
        return clt_last_status();
    return into("clt_add_", CLT_EW_add, x, in, 2, promote(x->dtype, b->dtype));
}

clt_status clt_mul_(clt_tensor *x, clt_tensor *b)
{
    clt_tensor *in[2] = {x, b};
    if (clt__same_device("clt_mul_", in, 2) != CLT_OK)
        return clt_last_status();
    return into("clt_mul_", CLT_EW_mul, x, in, 2, promote(x->dtype, b->dtype));
}

clt_status clt_copy_(clt_tensor *x, clt_tensor *src)
{
    return copy_into("clt_copy_", x, src);
}

bool clt__peer_alike(const clt_tensor *a, const clt_tensor *b)
{
    return clt__peers(a->storage->device, b->storage->device) && a->dtype == b->dtype &&
           a->ndim == b->ndim && clt__same_shape(a, b) && clt_tensor_is_contiguous(a) &&
           clt_tensor_is_contiguous(b);
}

clt_tensor *clt__add_peer(const char *fn, clt_tensor *a, clt_tensor *b)
{
    clt_device *home = a->storage->device, *at = b->storage->device;
    clt_tensor *in[2] = {a, b}, *out = clt__tensor_new(fn, home, a->dtype, a->ndim, a->shape);
    if (!out)
        return NULL;
    clt_status st = home->backend->peer_order(fn, home, at); /* a's values, out's buffer free */
    if (st == CLT_OK) {
        st = dispatch_on(fn, at, CLT_EW_add, a->dtype, out, in, 2, 0, 0);
        st = clt__peer_order_after(fn, at, home, st);
    }
    if (st == CLT_OK)
        return out;
    clt_tensor_release(out);
    return NULL;
}

/* x[...] = src where src lives on a peer of x's device (one context), with x's dtype and shape,
 * both contiguous: one copy between the devices straight into x's buffer, with no tensor moved
 * over first and copied again (DataParallel's refresh of its replicas). *done false: nothing
 * done, the general path applies. */
static clt_status copy_from_peer(const char *fn, clt_tensor *x, clt_tensor *src, bool *done)
{
    clt_device *from = src->storage->device, *to = x->storage->device;
    size_t size = clt_dtype_size(x->dtype);
    clt_status st;
    *done = clt__peer_alike(x, src);
    if (!*done)
        return CLT_OK;
    if (clt__inplace_check(fn, x, &src, 1) != CLT_OK)
        return clt_last_status();
    if (x->numel == 0)
        return CLT_OK;
    st = clt__copy_peer(fn, from, src->storage->buf, src->offset * size, to, x->storage->buf,
                        x->offset * size, x->numel * size);
    clt__tensor_bump_version(x); /* (also on an error: the copy may have been queued) */
    return st;
}

/* x[...] = src, broadcast and converted, src from any device; errors name fn. */
static clt_status copy_into(const char *fn, clt_tensor *x, clt_tensor *src)
{
    clt_tensor *here, *conv;
    clt_status st;
    bool done;
    if (clt__tensor_check(fn, x) != CLT_OK || clt__tensor_check(fn, src) != CLT_OK)
        return clt_last_status();
    st = copy_from_peer(fn, x, src, &done);
    if (done)
        return st;
    /* copy_ is the one operation that takes a source from another device, explicitly */
    here = clt_tensor_to_ex(src, &(clt_to_options){.device = x->storage->device, .dtype = x->dtype});
    if (!here)
        return clt__rename_error(fn);
    conv = here;
    st = into(fn, CLT_EW_copy, x, &conv, 1, x->dtype);
    clt_tensor_release(here);
    return st;
}

clt_status clt_fill_(clt_tensor *x, double value)
{
    static const char *const fn = "clt_fill_";
    clt_tensor *v;
    clt_status st;
    if (clt__tensor_check(fn, x) != CLT_OK)
        return clt_last_status();
    v = clt_tensor_full(0, NULL, value, x->dtype, x->storage->device);
    if (!v)
        return clt_last_status();
    st = into(fn, CLT_EW_copy, x, &v, 1, x->dtype);
    clt_tensor_release(v);
    return st;
}

/* ---- joining --------------------------------------------------------------------------------------- */

/* Where each part is one run of out's elements (out's dimensions before dim all of size 1),
 * contiguous and of out's dtype, and the backend copies runs: every part copied, CLT__COPY_GROUP
 * a launch, and true; else false, nothing done (the parts are then copied one at a time). */
static bool cat_runs(const char *fn, clt_tensor *out, clt_tensor *const *xs, int n, int dim,
                     clt_status *st)
{
    clt_device *dev = out->storage->device;
    int64_t outer = 1, at = 0;
    for (int d = 0; d < dim; d++)
        outer *= out->shape[d];
    if (outer != 1 || !dev->backend->copy_runs)
        return false;
    for (int i = 0; i < n; i++)
        if (xs[i]->dtype != out->dtype || !clt_tensor_is_contiguous(xs[i]))
            return false;
    clt__copies_call call = {.dtype = out->dtype, .dst = out->storage->buf};
    *st = CLT_OK;
    for (int i = 0; i < n && *st == CLT_OK; i++) /* a copy still landing in a part (cpu) */
        *st = clt__storage_sync(fn, xs[i]->storage);
    for (int i = 0; i < n && *st == CLT_OK; i++) {
        if (xs[i]->numel)
            call.run[call.count++] = (clt__copy_run){.src = xs[i]->storage->buf,
                                                     .src_offset = (size_t)xs[i]->offset,
                                                     .dst_offset = (size_t)(out->offset + at),
                                                     .n = (size_t)xs[i]->numel};
        at += xs[i]->numel; /* (each part a run: outer is 1) */
        if (call.count == CLT__COPY_GROUP || (i == n - 1 && call.count)) {
            *st = dev->backend->copy_runs(fn, dev, &call);
            call.count = 0;
        }
    }
    return true;
}

clt_tensor *clt_cat(clt_tensor *const *xs, int n, int dim)
{
    static const char *const fn = "clt_cat";
    int64_t shape[CLT_MAX_DIMS], at = 0;
    clt_dtype dt;
    clt_tensor *out;
    bool prev, rec;
    if (!xs || n <= 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "no tensors to join (n = %d)", n);
        return NULL;
    }
    if (clt__same_device(fn, xs, n) != CLT_OK || clt__dim_check(fn, &dim, xs[0]->ndim) != CLT_OK)
        return NULL;
    if (xs[0]->ndim == 0) {
        clt__error(CLT_ERR_SHAPE, fn, "0-d tensors cannot be concatenated; use clt_stack");
        return NULL;
    }
    memcpy(shape, xs[0]->shape, sizeof shape);
    dt = xs[0]->dtype;
    shape[dim] = 0;
    for (int i = 0; i < n; i++) {
        bool fits = xs[i]->ndim == xs[0]->ndim;
        for (int d = 0; fits && d < xs[0]->ndim; d++)
            fits = d == dim || xs[i]->shape[d] == xs[0]->shape[d];
        if (!fits) {
            char a[256], b[256];
            clt__format_shape(a, sizeof a, xs[0]->ndim, xs[0]->shape);
            clt__format_shape(b, sizeof b, xs[i]->ndim, xs[i]->shape);
            clt__error(CLT_ERR_SHAPE, fn, "tensor %d of shape %s does not match tensor 0 of shape %s except in dimension %d", i, b, a, dim);
            return NULL;
        }
        if (!clt__add_i64(shape[dim], xs[i]->shape[dim], &shape[dim])) {
            clt__error(CLT_ERR_SHAPE, fn, "the sizes of dimension %d add up to more than %lld",
                       dim, (long long)INT64_MAX);
            return NULL;
        }
        dt = promote(dt, xs[i]->dtype);
    }
    rec = clt__grad_begin(xs, n, &prev);
    out = clt__tensor_new(fn, xs[0]->storage->device, dt, xs[0]->ndim, shape);
    clt_status runs_st = CLT_OK;
    bool copied = out && cat_runs(fn, out, xs, n, dim, &runs_st);
    if (runs_st != CLT_OK) {
        clt_tensor_release(out);
        out = NULL;
    }
    for (int i = 0; out && !copied && i < n; i++) {
        clt_tensor *part = clt_narrow(out, dim, at, xs[i]->shape[dim]);
        clt_status st = part ? clt_copy_(part, xs[i]) : clt_last_status();
        clt_tensor_release(part);
        at += xs[i]->shape[dim];
        if (st != CLT_OK) {
            clt__rename_error(fn);
            clt_tensor_release(out);
            out = NULL;
        }
    }
    clt__grad_end(prev);
    return rec ? clt__record(fn, CLT__OP_cat, xs, n, out, &(clt__node_args){.dim = dim}) : out;
}

clt_tensor *clt_stack(clt_tensor *const *xs, int n, int dim)
{
    static const char *const fn = "clt_stack";
    clt_tensor *parts[64], **ps = parts, *out = NULL;
    int made = 0;
    if (!xs || n <= 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "no tensors to join (n = %d)", n);
        return NULL;
    }
    if (clt__same_device(fn, xs, n) != CLT_OK)
        return NULL;
    for (int i = 1; i < n; i++) {
        bool same = xs[i]->ndim == xs[0]->ndim;
        for (int d = 0; same && d < xs[0]->ndim; d++)
            same = xs[i]->shape[d] == xs[0]->shape[d];
        if (!same) {
            char a[256], b[256];
            clt__format_shape(a, sizeof a, xs[0]->ndim, xs[0]->shape);
            clt__format_shape(b, sizeof b, xs[i]->ndim, xs[i]->shape);
            clt__error(CLT_ERR_SHAPE, fn, "tensor %d of shape %s differs from tensor 0 of shape %s", i, b, a);
            return NULL;
        }
    }
    if (n > 64 && !(ps = clt__alloc(fn, (size_t)n * sizeof *ps)))
        return NULL;
    for (; made < n; made++)
        if (!(ps[made] = clt_unsqueeze(xs[made], dim)))
            break;
    if (made == n)
        out = clt_cat(ps, n, dim);
    if (!out)
        clt__rename_error(fn);
    for (int i = 0; i < made; i++)
        clt_tensor_release(ps[i]);
    if (ps != parts)
        clt__free(ps);
    return out;
}
