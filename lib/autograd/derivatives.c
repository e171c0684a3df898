/* The derivative of every differentiable operation: given the gradient g of an operation's
 * output, the gradients of its inputs, computed with the operations themselves (recording is
 * off during a backward pass) and the backward kernels of the nn front end. Shapes a gradient
 * broadcast to are summed back by the engine, so these return gradients in the output's
 * broadcast shape where that is natural. */
#include <stdio.h>
#include <string.h>

#include "autograd/derivatives.h"
#include "graph/graph.h"
#include "cltensor/ops.h"
#include "core/core.h"
#include "ops/ops_internal.h"

/* Temporaries of one derivative, released together. Calls nested in one expression still run
 * after a failure (with NULL arguments), so the first failure's error is kept and restored. */
typedef struct temps {
    clt_tensor *t[16];
    int n;
    bool failed;
    clt_status status;
    char error[512];
} temps;

static void failed(temps *s)
{
    if (s->failed)
        return;
    s->failed = true;
    s->status = clt_last_status();
    snprintf(s->error, sizeof s->error, "%s", clt_last_error());
}

static clt_tensor *keep(temps *s, clt_tensor *t)
{
    if (!t)
        failed(s);
    else if (s->n < 16)
        s->t[s->n++] = t;
    return t;
}

#define T(expr) (s.failed ? NULL : keep(&s, (expr)))

/* Releases the temporaries: the derivative's status, with the first failure's error. */
static clt_status done(temps *s)
{
    const char *cause = strstr(s->error, ": ");
    for (int i = 0; i < s->n; i++)
        clt_tensor_release(s->t[i]);
    if (!s->failed)
        return CLT_OK;
    return clt__error(s->status, "clt_backward", "%s", cause ? cause + 2 : s->error);
}

static void give(temps *s, clt_tensor **gi, clt_tensor *t)
{
    if (!s->failed && t)
        *gi = clt_tensor_retain(t);
}

static clt_tensor *scalar(double v, clt_tensor *like)
{
    return clt_tensor_full(0, NULL, v, like->dtype, like->storage->device);
}

/* ---- elementwise ------------------------------------------------------------------------------- */

static clt_status add_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    for (int i = 0; i < n->ninputs; i++)
        if (clt__node_wants(n, i))
            gi[i] = clt_tensor_retain(g);
    return CLT_OK;
}

static clt_status sub_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    if (clt__node_wants(n, 0))
        gi[0] = clt_tensor_retain(g);
    if (clt__node_wants(n, 1) && !(gi[1] = clt_neg(g)))
        return clt_last_status();
    return CLT_OK;
}

static clt_status mul_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    if (clt__node_wants(n, 0) && !(gi[0] = clt_mul(g, clt__node_saved(n, 1))))
        return clt_last_status();
    if (clt__node_wants(n, 1) && !(gi[1] = clt_mul(g, clt__node_saved(n, 0))))
        return clt_last_status();
    return CLT_OK;
}

/* addcmul's inputs are t1, t2, input: value * g * t2, value * g * t1 and g. */
static clt_status addcmul_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *gv = n->a.s0 == 1 ? g : T(clt_mul_scalar(g, n->a.s0));
    for (int i = 0; i < 2; i++)
        if (clt__node_wants(n, i))
            give(&s, &gi[i], T(clt_mul(gv, clt__node_saved(n, 1 - i))));
    if (clt__node_wants(n, 2))
        give(&s, &gi[2], g);
    return done(&s);
}

static clt_status div_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *q = T(clt_div(g, clt__node_saved(n, 1))); /* g / b */
    if (clt__node_wants(n, 0))
        give(&s, &gi[0], q);
    if (clt__node_wants(n, 1)) /* -g a / b^2 = -(g / b) out */
        give(&s, &gi[1], T(clt_neg(T(clt_mul(q, clt__node_saved_out(n))))));
    return done(&s);
}

/* x / sqrt(y + s0): g / sqrt(y + s0) for x (the same operation on g), and
 * -g x / (2 (y + s0)^(3/2)) = -(g out) / (2 (y + s0)) for y. */
static clt_status mul_rsqrt_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *y = clt__node_saved(n, 1);
    if (clt__node_wants(n, 0))
        give(&s, &gi[0], T(clt__ew("clt_backward", CLT_EW_mul_rsqrt, g, y, n->a.s0, 0)));
    if (clt__node_wants(n, 1)) {
        clt_tensor *gout = T(clt_mul(g, clt__node_saved_out(n)));
        clt_tensor *q = T(clt_div(gout, T(clt_add_scalar(y, n->a.s0))));
        give(&s, &gi[1], T(clt_mul_scalar(q, -0.5)));
    }
    return done(&s);
}

/* prelu(x, w): g where x > 0, else w g, for x; x g where x <= 0, else 0, for w (summed back
 * to the slope's shape by the engine). */
static clt_status prelu_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *x = clt__node_saved(n, 0), *w = clt__node_saved(n, 1);
    if (clt__node_wants(n, 0))
        give(&s, &gi[0],
             T(clt__ew_n("clt_backward", CLT_EW_prelu_backward, (clt_tensor *[3]){g, x, w}, 0,
                         0)));
    if (clt__node_wants(n, 1))
        give(&s, &gi[1], T(clt__ew("clt_backward", CLT_EW_prelu_weight_backward, g, x, 0, 0)));
    return done(&s);
}

static clt_status pow_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *a = clt__node_saved(n, 0), *b = clt__node_saved(n, 1);
    if (clt__node_wants(n, 0)) /* g b a^(b - 1) */
        give(&s, &gi[0], T(clt_mul(T(clt_mul(g, b)), T(clt_pow(a, T(clt_sub_scalar(b, 1)))))));
    if (clt__node_wants(n, 1)) { /* g out log(a), 0 where a = 0 and b >= 0 */
        clt_tensor *zero = T(scalar(0, g));
        clt_tensor *at0 = T(clt_mul(T(clt_eq(a, zero)), T(clt_ge(b, zero))));
        clt_tensor *v = T(clt_mul(T(clt_mul(g, clt__node_saved_out(n))), T(clt_log(a))));
        give(&s, &gi[1], T(clt_where(at0, zero, v)));
    }
    return done(&s);
}

/* maximum and minimum: the gradient goes to the chosen side, half to each on a tie. */
static clt_status extremum_bw(clt__node *n, clt_tensor *g, clt_tensor **gi, bool is_max)
{
    temps s = {0};
    clt_tensor *a = clt__node_saved(n, 0), *b = clt__node_saved(n, 1);
    clt_tensor *zero = T(scalar(0, g)), *half = T(clt_mul_scalar(g, 0.5));
    clt_tensor *tie = T(clt_eq(a, b));
    for (int i = 0; i < 2; i++) {
        if (!clt__node_wants(n, i))
            continue;
        clt_tensor *x = i ? b : a, *y = i ? a : b;
        clt_tensor *wins = T(is_max ? clt_gt(x, y) : clt_lt(x, y));
        give(&s, &gi[i], T(clt_where(wins, g, T(clt_where(tie, half, zero)))));
    }
    return done(&s);
}

static clt_status maximum_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    return extremum_bw(n, g, gi, true);
}

static clt_status minimum_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    return extremum_bw(n, g, gi, false);
}

/* gi[0] = f(g, ...), for one-input operations. */
#define UNARY_BW(name, expr)                                                                   \
    static clt_status name##_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)                  \
    {                                                                                          \
        temps s = {0};                                                                         \
        clt_tensor *x = clt__node_saved(n, 0), *y = clt__node_saved_out(n);                    \
        (void)x, (void)y;                                                                      \
        give(&s, &gi[0], T(expr));                                                             \
        return done(&s);                                                                       \
    }

#define FUSED(op, u, v) clt__ew("clt_backward", CLT_EW_##op, u, v, n->a.s0, n->a.s1)

UNARY_BW(mul_scalar, clt_mul_scalar(g, n->a.s0))
UNARY_BW(div_scalar, clt_div_scalar(g, n->a.s0))
UNARY_BW(rsub_scalar, clt_neg(g))
UNARY_BW(pow_scalar, n->a.s0 == 0 ? clt_mul_scalar(g, 0)
                                  : clt_mul(T(clt_mul_scalar(g, n->a.s0)),
                                            T(clt_pow_scalar(x, n->a.s0 - 1))))
UNARY_BW(neg, clt_neg(g))
UNARY_BW(abs, FUSED(abs_backward, g, x))
UNARY_BW(exp, clt_mul(g, y))
UNARY_BW(log, clt_div(g, x))
UNARY_BW(sqrt, clt_div(T(clt_mul_scalar(g, 0.5)), y))
UNARY_BW(rsqrt, clt_mul(T(clt_mul_scalar(g, -0.5)), T(clt_pow_scalar(y, 3))))
UNARY_BW(sin, clt_mul(g, T(clt_cos(x))))
UNARY_BW(cos, clt_mul(g, T(clt_neg(T(clt_sin(x))))))
UNARY_BW(tanh, FUSED(tanh_backward, g, y))
UNARY_BW(sigmoid, FUSED(sigmoid_backward, g, y))
UNARY_BW(relu, FUSED(relu_backward, g, y))
UNARY_BW(gelu, FUSED(gelu_backward, g, x))
UNARY_BW(gelu_tanh, FUSED(gelu_tanh_backward, g, x))
UNARY_BW(silu, FUSED(silu_backward, g, x))
UNARY_BW(clamp, FUSED(clamp_backward, g, x))

static clt_status where_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *cond = clt__node_saved(n, 0), *zero = T(scalar(0, g));
    if (clt__node_wants(n, 1))
        give(&s, &gi[1], T(clt_where(cond, g, zero)));
    if (clt__node_wants(n, 2))
        give(&s, &gi[2], T(clt_where(cond, zero, g)));
    return done(&s);
}

/* ---- views and copies ---------------------------------------------------------------------------- */

static clt_status view_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    gi[0] = clt_reshape(g, n->inputs[0].ndim, n->inputs[0].shape);
    return gi[0] ? CLT_OK : clt_last_status();
}

static clt_status permute_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    int inverse[CLT_MAX_DIMS];
    for (int d = 0; d < n->a.ndims; d++)
        inverse[n->a.dims[d]] = d;
    gi[0] = clt_permute(g, inverse);
    return gi[0] ? CLT_OK : clt_last_status();
}

static clt_status slice_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    const clt__node_input *in = &n->inputs[0];
    clt_tensor *z = T(clt_tensor_zeros(in->ndim, in->shape, g->dtype, g->storage->device));
    clt_tensor *part = T(clt_slice(z, n->a.dim, n->a.i0, n->a.i1, n->a.i2));
    if (part && clt_copy_(part, g) != CLT_OK)
        failed(&s);
    give(&s, &gi[0], z);
    return done(&s);
}

static clt_status to_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    gi[0] = clt_tensor_to(g, n->inputs[0].device);
    return gi[0] ? CLT_OK : clt_last_status();
}

static clt_status cat_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    int64_t at = 0;
    for (int i = 0; i < n->ninputs; i++) {
        int64_t len = n->inputs[i].shape[n->a.dim];
        if (clt__node_wants(n, i) && !(gi[i] = clt_narrow(g, n->a.dim, at, len)))
            return clt_last_status();
        at += len;
    }
    return CLT_OK;
}


/* ---- reductions ---------------------------------------------------------------------------------- */

/* t (a reduction's output shape) with the reduced dimensions back as size 1. */
static clt_tensor *unsqueezed(const clt__node *n, clt_tensor *t)
{
    clt_tensor *r = clt_tensor_retain(t), *u;
    if (n->a.keepdim)
        return r;
    for (int i = 0; r && i < n->a.ndims; i++) {
        u = clt_unsqueeze(r, n->a.dims[i]);
        clt_tensor_release(r);
        r = u;
    }
    return r;
}

/* The number of elements each output element was reduced from. */
static double reduced_count(const clt__node *n)
{
    double count = 1;
    for (int i = 0; i < n->a.ndims; i++)
        count *= (double)n->inputs[0].shape[n->a.dims[i]];
    return count;
}

static clt_tensor *expanded(const clt__node *n, clt_tensor *t)
{
    return clt_expand(t, n->inputs[0].ndim, n->inputs[0].shape);
}

static clt_status sum_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    give(&s, &gi[0], T(expanded(n, T(unsqueezed(n, g)))));
    return done(&s);
}

static clt_status mean_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *m = T(clt_div_scalar(T(unsqueezed(n, g)), reduced_count(n)));
    give(&s, &gi[0], T(expanded(n, m)));
    return done(&s);
}

/* amax / amin: shared evenly among the elements equal to the extremum. */
static clt_status extreme_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *x = clt__node_saved(n, 0);
    clt_tensor *mask = T(clt_eq(x, T(unsqueezed(n, clt__node_saved_out(n)))));
    clt_tensor *count = T(clt_sum(mask, n->a.dims, n->a.ndims, true));
    give(&s, &gi[0], T(clt_div(T(clt_mul(T(unsqueezed(n, g)), mask)), count)));
    return done(&s);
}

/* var: g 2 (x - mean) / (N - correction); std: g (x - mean) / ((N - correction) std). */
static clt_status spread_bw(clt__node *n, clt_tensor *g, clt_tensor **gi, bool root)
{
    temps s = {0};
    clt_tensor *x = clt__node_saved(n, 0);
    clt_tensor *dev = T(clt_sub(x, T(clt_mean(x, n->a.dims, n->a.ndims, true))));
    double divisor = reduced_count(n) - (double)n->a.i0;
    clt_tensor *scaled = T(clt_mul_scalar(T(unsqueezed(n, g)), (root ? 1.0 : 2.0) / divisor));
    if (root)
        scaled = T(clt_div(scaled, T(unsqueezed(n, clt__node_saved_out(n)))));
    give(&s, &gi[0], T(clt_mul(scaled, dev)));
    return done(&s);
}

static clt_status var_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    return spread_bw(n, g, gi, false);
}

static clt_status std_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    return spread_bw(n, g, gi, true);
}

static clt_status logsumexp_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *x = clt__node_saved(n, 0);
    clt_tensor *p = T(clt_exp(T(clt_sub(x, T(unsqueezed(n, clt__node_saved_out(n)))))));
    give(&s, &gi[0], T(clt_mul(T(unsqueezed(n, g)), p)));
    return done(&s);
}


/* The gradient of a running sum is the running sum from the other end (a.keepdim: reversed). */
static clt_status cumsum_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    gi[0] = clt__cumsum("clt_backward", g, n->a.dim, !n->a.keepdim);
    return gi[0] ? CLT_OK : clt_last_status();
}

/* ---- matrix products --------------------------------------------------------------------------- */

/* The last two dimensions swapped. */
static clt_tensor *mT(clt_tensor *t)
{
    return clt_transpose(t, -1, -2);
}

/* The gradient before a fused activation (node argument i0, a clt__act) from the one after it
 * (the output y): g itself without one; g where y > 0 after ReLU. */
static clt_tensor *before_act(clt__node *n, clt_tensor *g)
{
    clt_tensor *y = clt__node_saved_out(n);
    return n->a.i0 == CLT__ACT_RELU ? FUSED(relu_backward, g, y) : clt_tensor_retain(g);
}

/* A weight's gradient a @ b into *gw and its bias's, a's rows summed, into *gb in the bias's
 * shape (bias_ndim dimensions of bias_shape): one product where the device's gives both
 * (clt__matmul_row_sums), rather than a product and a reduction of the gradient. */
static void weight_and_bias(temps *s, clt_tensor *a, clt_tensor *b, int bias_ndim,
                            const int64_t *bias_shape, clt_tensor **gw, clt_tensor **gb)
{
    clt_tensor *sums = NULL, *w = NULL;
    if (!s->failed && (w = keep(s, clt__matmul_row_sums("clt_backward", a, b, &sums))))
        keep(s, sums);
    clt_tensor *bias = w ? keep(s, clt_reshape(sums, bias_ndim, bias_shape)) : NULL;
    give(s, gw, w);
    give(s, gb, bias);
}

/* clt__conv_product: g (n / group, m, group) through the activation, then as (m, n), the
 * product's own layout (one copy), on as matmul_bw's; the weight's gradient and the bias's (m,
 * 1) in one product. */
static clt_status conv_product_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *a = clt__node_saved(n, 0), *b = clt__node_saved(n, 1);
    bool bias = n->ninputs > 2 && clt__node_wants(n, 2);
    g = T(before_act(n, g));
    int64_t shape[2] = {a->shape[0], b->shape[1]};
    clt_tensor *g2 = T(clt_reshape(T(clt_transpose(g, 0, 1)), 2, shape));
    if (clt__node_wants(n, 0) && bias)
        weight_and_bias(&s, g2, T(mT(b)), 2, (int64_t[]){a->shape[0], 1}, &gi[0], &gi[2]);
    else if (clt__node_wants(n, 0))
        give(&s, &gi[0], T(clt_matmul(g2, T(mT(b)))));
    else if (bias)
        give(&s, &gi[2], g2);
    if (clt__node_wants(n, 1))
        give(&s, &gi[1], T(clt_matmul(T(mT(a)), g2)));
    return done(&s);
}

/* a @ b with a 1-D a as one row and a 1-D b as one column (the dimensions put back into g):
 * ga = g @ b^T, gb = a^T @ g, summed over broadcast batches by the engine; with a fused bias
 * and activation (clt__matmul_act), g taken back through the activation first, and the bias's
 * gradient that g (summed along the rows by the engine). */
static clt_status matmul_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *a = clt__node_saved(n, 0), *b = clt__node_saved(n, 1);
    g = T(before_act(n, g));
    if (n->ninputs > 2 && clt__node_wants(n, 2))
        give(&s, &gi[2], g);
    bool a1 = a->ndim == 1, b1 = b->ndim == 1;
    clt_tensor *a2 = a1 ? T(clt_unsqueeze(a, 0)) : a, *b2 = b1 ? T(clt_unsqueeze(b, 1)) : b;
    clt_tensor *g2 = g;
    if (a1)
        g2 = T(clt_unsqueeze(g2, g2->ndim - (b1 ? 0 : 1)));
    if (b1)
        g2 = T(clt_unsqueeze(g2, g2 ? g2->ndim : 0));
    if (clt__node_wants(n, 0)) {
        clt_tensor *ga = T(clt_matmul(g2, T(mT(b2))));
        give(&s, &gi[0], a1 ? T(clt_squeeze(ga, -2)) : ga);
    }
    if (clt__node_wants(n, 1)) {
        clt_tensor *gb = T(clt_matmul(T(mT(a2)), g2));
        give(&s, &gi[1], b1 ? T(clt_squeeze(gb, -1)) : gb);
    }
    return done(&s);
}

/* x @ w^T + bias: gx = g @ w, gw = g2^T @ x2 over all rows and gbias g2's columns summed, in one
 * product (weight_and_bias; without gw, g summed by the engine); g taken back through a fused
 * activation first (clt__linear_act). */
static clt_status linear_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *x = clt__node_saved(n, 0), *w = clt__node_saved(n, 1);
    bool bias = n->ninputs > 2 && clt__node_wants(n, 2);
    g = T(before_act(n, g));
    if (clt__node_wants(n, 0))
        give(&s, &gi[0], T(clt_matmul(g, w)));
    if (clt__node_wants(n, 1)) {
        int64_t out = w->shape[0], in = w->shape[1];
        int64_t rows = (int64_t)(x->numel / (size_t)(in ? in : 1));
        clt_tensor *g2 = T(clt_reshape(g, 2, (int64_t[]){rows, out}));
        clt_tensor *x2 = T(clt_reshape(x, 2, (int64_t[]){rows, in}));
        if (bias)
            weight_and_bias(&s, T(mT(g2)), x2, 1, &out, &gi[1], &gi[2]);
        else
            give(&s, &gi[1], T(clt_matmul(T(mT(g2)), x2)));
    } else if (bias) {
        give(&s, &gi[2], g);
    }
    return done(&s);
}


/* ---- neural-network functions --------------------------------------------------------------------- */

/* sum(t) along the softmax dimension, kept; t itself for a 0-d tensor. */
static clt_tensor *sum_dim(const clt__node *n, clt_tensor *t)
{
    int dim = n->a.dim;
    return t->ndim ? clt_sum(t, &dim, 1, true) : clt_tensor_retain(t);
}

/* softmax: y (g - sum(g y)); log_softmax: g - exp(y) sum(g). */
static clt_status softmax_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *y = clt__node_saved_out(n);
    give(&s, &gi[0], T(clt_mul(y, T(clt_sub(g, T(sum_dim(n, T(clt_mul(g, y)))))))));
    return done(&s);
}

static clt_status log_softmax_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    temps s = {0};
    clt_tensor *y = clt__node_saved_out(n);
    give(&s, &gi[0], T(clt_sub(g, T(clt_mul(T(clt_exp(y)), T(sum_dim(n, g)))))));
    return done(&s);
}

static clt_status gather_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    gi[0] = clt__index_add("clt_backward", g, n->a.dim, n->a.idx, n->a.i1);
    return gi[0] ? CLT_OK : clt_last_status();
}

static clt_status im2col_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    gi[0] = clt__col2im("clt_backward", g, &n->a.conv);
    return gi[0] ? CLT_OK : clt_last_status();
}

static clt_status pool_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    gi[0] = clt__pool2d_backward("clt_backward", g, clt__node_saved(n, 1), &n->a.conv);
    return gi[0] ? CLT_OK : clt_last_status();
}

/* The gradient of cross entropy's rows, or of their sum or mean (a.i1 set, a.s0 the divisor):
 * the device's fused backward pass, which reads the reduced loss's gradient itself. Inputs the
 * logits and the targets, saved; a.i0 the ignored class. */
static clt_status cross_entropy_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    gi[0] = clt__cross_entropy_backward("clt_backward", clt__node_saved(n, 0),
                                        clt__node_saved(n, 1), g, n->a.i0, n->a.i1 != 0, n->a.s0);
    return gi[0] ? CLT_OK : clt_last_status();
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
        clt__release_all(t, 6);
        if (!gi[1])
            return clt_last_status();
    }
    return CLT_OK;
}

/* ---- attention ------------------------------------------------------------------------------ */

/* The causal mask of L queries and S keys: 0 where j <= i, -inf elsewhere (PyTorch's
 * is_causal, aligned at the top left). */
static clt_tensor *causal_mask(clt_dtype dtype, clt_device *dev, int64_t L, int64_t S)
{
    clt_tensor *i = clt_tensor_arange(0, (double)L, 1, CLT_I64, dev);
    clt_tensor *j = i ? clt_tensor_arange(0, (double)S, 1, CLT_I64, dev) : NULL;
    clt_tensor *col = j ? clt_reshape(i, 2, (int64_t[]){L, 1}) : NULL;
    clt_tensor *keep = col ? clt_le(j, col) : NULL;
    clt_tensor *out = keep ? clt__attention_mask("clt_backward", keep, dtype, 2, (int64_t[]){L, S})
                           : NULL;
    clt_tensor_release(keep);
    clt_tensor_release(col);
    clt_tensor_release(j);
    clt_tensor_release(i);
    return out;
}

/* Inputs q, k, v and the mask as given (saved); a.s0 the scale, a.i0 causal. */
static clt_status attention_bw(clt__node *n, clt_tensor *g, clt_tensor **gi)
{
    clt_tensor *q = clt__node_saved(n, 0), *k = clt__node_saved(n, 1), *v = clt__node_saved(n, 2);
    clt_tensor *mask = clt__node_saved(n, 3);
    clt_tensor *t[16] = {0};
    int used = 0;
    double scale = n->a.s0;
    int64_t L = q->shape[q->ndim - 2], S = k->shape[k->ndim - 2];
    clt_status st = CLT_ERR_OUT_OF_MEMORY;
#define KEEP(expr) (t[used] = (expr), t[used] ? t[used++] : NULL)
    clt_tensor *kt = KEEP(clt_transpose(k, -1, -2));
    clt_tensor *qk = kt ? KEEP(clt_matmul(q, kt)) : NULL;
    clt_tensor *s = qk ? KEEP(clt_mul_scalar(qk, scale)) : NULL;
    if (s && mask) {
        clt_tensor *add =
            KEEP(clt__attention_mask("clt_backward", mask, q->dtype, s->ndim, s->shape));
        s = add ? KEEP(clt_add(s, add)) : NULL;
    }
    if (s && n->a.i0) {
        clt_tensor *add = KEEP(causal_mask(q->dtype, q->storage->device, L, S));
        s = add ? KEEP(clt_add(s, add)) : NULL;
    }
    clt_tensor *p = s ? KEEP(clt_softmax(s, -1)) : NULL;
    /* dS = P * (dP - sum(dP * P)) with dP = dO V^T */
    clt_tensor *vt = p ? KEEP(clt_transpose(v, -1, -2)) : NULL;
    clt_tensor *dp = vt ? KEEP(clt_matmul(g, vt)) : NULL;
    clt_tensor *dpp = dp ? KEEP(clt_mul(dp, p)) : NULL;
    int last = (p ? p->ndim : 1) - 1;
    clt_tensor *rows = dpp ? KEEP(clt_sum(dpp, &last, 1, true)) : NULL;
    clt_tensor *diff = rows ? KEEP(clt_sub(dp, rows)) : NULL;
    clt_tensor *ds = diff ? clt_mul(diff, p) : NULL;
    if (ds) {
        st = CLT_OK;
        if (clt__node_wants(n, 0)) { /* dQ = scale dS K */
            clt_tensor *m = clt_matmul(ds, k);
            gi[0] = m ? clt_mul_scalar(m, scale) : NULL;
            clt_tensor_release(m);
            st = gi[0] ? st : clt_last_status();
        }
        if (st == CLT_OK && clt__node_wants(n, 1)) { /* dK = scale dS^T Q */
            clt_tensor *dst = clt_transpose(ds, -1, -2), *m = dst ? clt_matmul(dst, q) : NULL;
            gi[1] = m ? clt_mul_scalar(m, scale) : NULL;
            clt_tensor_release(m), clt_tensor_release(dst);
            st = gi[1] ? st : clt_last_status();
        }
        if (st == CLT_OK && clt__node_wants(n, 2)) { /* dV = P^T dO */
            clt_tensor *pt = clt_transpose(p, -1, -2);
            gi[2] = pt ? clt_matmul(pt, g) : NULL;
            clt_tensor_release(pt);
            st = gi[2] ? st : clt_last_status();
        }
        if (st == CLT_OK && clt__node_wants(n, 3)) /* an additive mask's gradient is dS's */
            gi[3] = clt_tensor_retain(ds);
        clt_tensor_release(ds);
    } else {
        st = clt_last_status();
    }
#undef KEEP
    for (int i = 0; i < used; i++)
        clt_tensor_release(t[i]);
    return st;
}

/* ---- the table ------------------------------------------------------------------------------- */

/* The derivative of every recorded operation, by its id (lib/graph/graph.h). The fused products
 * are named after their activation, last of the fused operations, as PyTorch names its
 * output's node. */
static const clt__backward_fn derivatives[CLT__OP_COUNT] = {
    [CLT__OP_add] = add_bw,
    [CLT__OP_sub] = sub_bw,
    [CLT__OP_mul] = mul_bw,
    [CLT__OP_div] = div_bw,
    [CLT__OP_pow] = pow_bw,
    [CLT__OP_maximum] = maximum_bw,
    [CLT__OP_minimum] = minimum_bw,
    [CLT__OP_addcmul] = addcmul_bw,
    [CLT__OP_mul_rsqrt] = mul_rsqrt_bw,
    [CLT__OP_prelu] = prelu_bw,
    [CLT__OP_add_scalar] = add_bw,
    [CLT__OP_mul_scalar] = mul_scalar_bw,
    [CLT__OP_rsub_scalar] = rsub_scalar_bw,
    [CLT__OP_div_scalar] = div_scalar_bw,
    [CLT__OP_pow_scalar] = pow_scalar_bw,
    [CLT__OP_neg] = neg_bw,
    [CLT__OP_abs] = abs_bw,
    [CLT__OP_exp] = exp_bw,
    [CLT__OP_log] = log_bw,
    [CLT__OP_sqrt] = sqrt_bw,
    [CLT__OP_rsqrt] = rsqrt_bw,
    [CLT__OP_sin] = sin_bw,
    [CLT__OP_cos] = cos_bw,
    [CLT__OP_tanh] = tanh_bw,
    [CLT__OP_sigmoid] = sigmoid_bw,
    [CLT__OP_relu] = relu_bw,
    [CLT__OP_gelu] = gelu_bw,
    [CLT__OP_gelu_tanh] = gelu_tanh_bw,
    [CLT__OP_silu] = silu_bw,
    [CLT__OP_clamp] = clamp_bw,
    [CLT__OP_where] = where_bw,
    [CLT__OP_view] = view_bw,
    [CLT__OP_permute] = permute_bw,
    [CLT__OP_slice] = slice_bw,
    [CLT__OP_expand] = add_bw,
    [CLT__OP_identity] = add_bw,
    [CLT__OP_to] = to_bw,
    [CLT__OP_cat] = cat_bw,
    [CLT__OP_sum] = sum_bw,
    [CLT__OP_mean] = mean_bw,
    [CLT__OP_amax] = extreme_bw,
    [CLT__OP_amin] = extreme_bw,
    [CLT__OP_var] = var_bw,
    [CLT__OP_std] = std_bw,
    [CLT__OP_logsumexp] = logsumexp_bw,
    [CLT__OP_cumsum] = cumsum_bw,
    [CLT__OP_matmul] = matmul_bw,
    [CLT__OP_linear] = linear_bw,
    [CLT__OP_matmul_act] = matmul_bw,
    [CLT__OP_linear_act] = linear_bw,
    [CLT__OP_conv_product] = conv_product_bw,
    [CLT__OP_softmax] = softmax_bw,
    [CLT__OP_log_softmax] = log_softmax_bw,
    [CLT__OP_gather] = gather_bw,
    [CLT__OP_im2col] = im2col_bw,
    [CLT__OP_max_pool2d] = pool_bw,
    [CLT__OP_avg_pool2d] = pool_bw,
    [CLT__OP_depthwise] = depthwise_bw,
    [CLT__OP_cross_entropy] = cross_entropy_bw,
    [CLT__OP_attention] = attention_bw,
};

clt__backward_fn clt__derivative(clt__op op)
{
    return op > CLT__OP_LEAF && op < CLT__OP_COUNT ? derivatives[op] : NULL;
}
