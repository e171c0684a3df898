/* Autograd suite: the gradient of every differentiable operation against central finite
 * differences in f64 on every device, and the graph's behaviour: leaves, accumulation,
 * detach, no-grad mode, retain_graph, errors for a freed graph and for tensors changed in
 * place, all-or-nothing backward under allocation failures, and no leak after many steps; a
 * million-node chain freed, gradient cycles refused, backward hooks' gradients checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "autograd/derivatives.h"
#include "graph/graph.h"
#include "ops/ops_internal.h"

#define fill_noise test_noise
#define make test_tensor
#define to_host test_values

static double scalar_of(clt_tensor *t)
{
    double *v = to_host(t), r = v[0];
    free(v);
    return r;
}

/* ---- the operations under test ------------------------------------------------------------- */

typedef clt_tensor *(*op_fn)(clt_tensor **x, clt_device *dev);

typedef struct gcase {
    const char *name;
    op_fn f;
    int nin;
    int ndim[3];
    int64_t shape[3][4];
    double lo, hi; /* the inputs' range */
} gcase;

/* Releases a and b and returns r (computed before the call): a case's last line. */
static clt_tensor *rel(clt_tensor *r, clt_tensor *a, clt_tensor *b)
{
    clt_tensor_release(a);
    clt_tensor_release(b);
    return r;
}

static clt_tensor *op_view(clt_tensor **x, clt_device *d) { (void)d; return clt_view(x[0], CLT_SHAPE(3, 4)); }
static clt_tensor *op_reshape_copy(clt_tensor **x, clt_device *d)
{
    clt_tensor *t = clt_transpose(x[0], 0, 1);
    (void)d;
    return rel(clt_reshape(t, CLT_SHAPE(12)), t, NULL);
}
static clt_tensor *op_permute(clt_tensor **x, clt_device *d) { (void)d; return clt_permute(x[0], (int[]){2, 0, 1}); }
static clt_tensor *op_squeeze(clt_tensor **x, clt_device *d)
{
    clt_tensor *t = clt_squeeze(x[0], 1), *u = clt_unsqueeze(t, 0), *v = clt_squeeze_all(u);
    clt_tensor *r = clt_mul(v, v);
    (void)d;
    clt_tensor_release(v);
    return rel(r, t, u);
}
static clt_tensor *op_narrow(clt_tensor **x, clt_device *d) { (void)d; return clt_narrow(x[0], 1, 1, 3); }
static clt_tensor *op_slice(clt_tensor **x, clt_device *d) { (void)d; return clt_slice(x[0], 0, 1, 5, 2); }
static clt_tensor *op_expand(clt_tensor **x, clt_device *d)
{
    clt_tensor *e = clt_expand(x[0], CLT_SHAPE(2, 3, 4));
    (void)d;
    return rel(clt_mul(e, e), e, NULL);
}
static clt_tensor *op_contiguous(clt_tensor **x, clt_device *d)
{
    clt_tensor *t = clt_transpose(x[0], 0, 1);
    (void)d;
    return rel(clt_contiguous(t), t, NULL);
}
static clt_tensor *op_cat(clt_tensor **x, clt_device *d) { (void)d; return clt_cat(x, 2, 0); }
static clt_tensor *op_stack(clt_tensor **x, clt_device *d) { (void)d; return clt_stack(x, 2, 1); }
static clt_tensor *op_to(clt_tensor **x, clt_device *d)
{
    clt_tensor *h = clt_tensor_to(x[0], clt_device_cpu()), *s = clt_sin(h);
    return rel(clt_tensor_to(s, d), h, s);
}
static clt_tensor *op_add(clt_tensor **x, clt_device *d) { (void)d; return clt_add(x[0], x[1]); }
static clt_tensor *op_sub(clt_tensor **x, clt_device *d) { (void)d; return clt_sub(x[0], x[1]); }
static clt_tensor *op_mul(clt_tensor **x, clt_device *d) { (void)d; return clt_mul(x[0], x[1]); }
static clt_tensor *op_div(clt_tensor **x, clt_device *d) { (void)d; return clt_div(x[0], x[1]); }
static clt_tensor *op_pow(clt_tensor **x, clt_device *d) { (void)d; return clt_pow(x[0], x[1]); }
static clt_tensor *op_maximum(clt_tensor **x, clt_device *d) { (void)d; return clt_maximum(x[0], x[1]); }
static clt_tensor *op_minimum(clt_tensor **x, clt_device *d) { (void)d; return clt_minimum(x[0], x[1]); }
static clt_tensor *op_scalars(clt_tensor **x, clt_device *d)
{
    clt_tensor *a = clt_add_scalar(x[0], 1.5), *b = clt_mul_scalar(a, 2), *c = clt_sub_scalar(b, 0.5);
    clt_tensor *e = clt_div_scalar(c, 3), *r = clt_pow_scalar(e, 2.5);
    (void)d;
    clt_tensor_release(a);
    return rel(rel(r, b, c), e, NULL);
}
#define UNARY_CASE(name) \
    static clt_tensor *op_##name(clt_tensor **x, clt_device *d) { (void)d; return clt_##name(x[0]); }
UNARY_CASE(neg)
UNARY_CASE(abs)
UNARY_CASE(exp)
UNARY_CASE(log)
UNARY_CASE(sqrt)
UNARY_CASE(rsqrt)
UNARY_CASE(sin)
UNARY_CASE(cos)
UNARY_CASE(tanh)
UNARY_CASE(sigmoid)
UNARY_CASE(relu)
UNARY_CASE(gelu)
UNARY_CASE(gelu_tanh)
UNARY_CASE(silu)
static clt_tensor *op_clamp(clt_tensor **x, clt_device *d) { (void)d; return clt_clamp(x[0], -1, 1); }
static clt_tensor *op_where(clt_tensor **x, clt_device *d)
{
    clt_tensor *z = clt_tensor_zeros(0, NULL, clt_tensor_dtype(x[1]), d), *c = clt_gt(x[1], z);
    return rel(clt_where(c, x[0], x[1]), z, c);
}
static clt_tensor *op_addcmul(clt_tensor **x, clt_device *d)
{
    (void)d;
    return clt_addcmul(x[0], x[1], x[2], -1.5);
}
static clt_tensor *op_sum(clt_tensor **x, clt_device *d) { (void)d; return clt_sum(x[0], (int[]){1}, 1, false); }
static clt_tensor *op_sum_all(clt_tensor **x, clt_device *d) { (void)d; return clt_sum(x[0], NULL, 0, false); }
static clt_tensor *op_mean(clt_tensor **x, clt_device *d) { (void)d; return clt_mean(x[0], (int[]){0, -1}, 2, true); }
static clt_tensor *op_max(clt_tensor **x, clt_device *d) { (void)d; return clt_amax(x[0], (int[]){1}, 1, false); }
static clt_tensor *op_min(clt_tensor **x, clt_device *d) { (void)d; return clt_amin(x[0], NULL, 0, false); }
static clt_tensor *op_var(clt_tensor **x, clt_device *d) { (void)d; return clt_var(x[0], (int[]){1}, 1, 1, false); }
static clt_tensor *op_std(clt_tensor **x, clt_device *d) { (void)d; return clt_std(x[0], (int[]){0}, 1, 0, true); }
static clt_tensor *op_logsumexp(clt_tensor **x, clt_device *d) { (void)d; return clt_logsumexp(x[0], (int[]){1}, 1, false); }
static clt_tensor *op_matmul(clt_tensor **x, clt_device *d) { (void)d; return clt_matmul(x[0], x[1]); }
static clt_tensor *op_linear(clt_tensor **x, clt_device *d) { (void)d; return clt_linear(x[0], x[1], x[2]); }
static clt_tensor *op_linear_nobias(clt_tensor **x, clt_device *d) { (void)d; return clt_linear(x[0], x[1], NULL); }
/* The products with the bias and ReLU in their epilogue, as a Sequential runs them. */
static clt_tensor *op_linear_relu(clt_tensor **x, clt_device *d)
{
    (void)d;
    return clt__linear_act(x[0], x[1], x[2], CLT__ACT_RELU);
}
static clt_tensor *op_linear_relu_nobias(clt_tensor **x, clt_device *d)
{
    (void)d;
    return clt__linear_act(x[0], x[1], NULL, CLT__ACT_RELU);
}
static clt_tensor *op_matmul_rows_relu(clt_tensor **x, clt_device *d)
{
    (void)d;
    return clt__matmul_act("test", x[0], x[1], x[2], CLT__ACT_RELU);
}
static clt_tensor *op_matmul_rows_bias(clt_tensor **x, clt_device *d)
{
    (void)d;
    return clt__matmul_act("test", x[0], x[1], x[2], CLT__ACT_NONE);
}
static clt_tensor *op_conv2d_relu(clt_tensor **x, clt_device *d)
{
    clt_conv2d_options o = {.stride = {1, 2}, .padding = {1, 1}};
    (void)d;
    return clt__conv2d_act(x[0], x[1], x[2], &o, CLT__ACT_RELU);
}
static clt_tensor *op_softmax(clt_tensor **x, clt_device *d) { (void)d; return clt_softmax(x[0], 1); }
static clt_tensor *op_log_softmax(clt_tensor **x, clt_device *d) { (void)d; return clt_log_softmax(x[0], 0); }
static clt_tensor *targets(clt_device *d)
{
    int64_t t[] = {2, 0, -100, 3, 2};
    return clt_tensor_from_data(CLT_SHAPE(5), t, CLT_I64, d);
}
static clt_tensor *op_nll(clt_tensor **x, clt_device *d)
{
    clt_tensor *t = targets(d), *lp = clt_log_softmax(x[0], 1);
    return rel(clt_nll_loss(lp, t, NULL), t, lp);
}
static clt_tensor *op_cross_entropy(clt_tensor **x, clt_device *d)
{
    clt_tensor *t = targets(d);
    return rel(clt_cross_entropy(x[0], t, TEST_LOSS(CLT_REDUCTION_SUM)), t, NULL);
}
static clt_tensor *op_cross_entropy_options(clt_tensor **x, clt_device *d)
{
    double wv[] = {0.5, 2, 1, 1.5};
    clt_tensor *t = targets(d), *w = make(d, clt_tensor_dtype(x[0]), wv, CLT_SHAPE(4));
    clt_loss_options o = clt_loss_options_default();
    o.weight = w, o.label_smoothing = 0.2;
    return rel(clt_cross_entropy(x[0], t, &o), t, w);
}
static clt_tensor *op_cross_entropy_spatial(clt_tensor **x, clt_device *d)
{
    int64_t tv[] = {2, 0, -100, 1, 1, 3};
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(2, 3), tv, CLT_I64, d);
    return rel(clt_cross_entropy(x[0], t, TEST_LOSS(CLT_REDUCTION_NONE)), t, NULL);
}
static clt_tensor *op_max_dim(clt_tensor **x, clt_device *d)
{
    clt_tensor *idx = NULL, *v = clt_max(x[0], 1, false, &idx);
    (void)d;
    ck_assert_int_eq(clt_tensor_dtype(idx), CLT_I64);
    return rel(v, idx, NULL);
}
static clt_tensor *op_min_dim(clt_tensor **x, clt_device *d) { (void)d; return clt_min(x[0], 0, true, NULL); }
static clt_tensor *op_attention(clt_tensor **x, clt_device *d) { (void)d; return clt_scaled_dot_product_attention(x[0], x[1], x[2], NULL); }
static clt_tensor *op_attention_causal(clt_tensor **x, clt_device *d)
{
    clt_attention_options o = clt_attention_options_default();
    (void)d;
    o.causal = true, o.scale = 0.7;
    return clt_scaled_dot_product_attention(x[0], x[1], x[2], &o);
}
static clt_tensor *op_attention_masked(clt_tensor **x, clt_device *d)
{
    uint8_t keep[] = {1, 0, 1, 1, 1, 0, 1, 1};
    clt_tensor *m = clt_tensor_from_data(CLT_SHAPE(2, 1, 4), keep, CLT_BOOL, d);
    clt_attention_options o = clt_attention_options_default();
    o.mask = m;
    return rel(clt_scaled_dot_product_attention(x[0], x[1], x[2], &o), m, NULL);
}
static clt_tensor *op_adaptive_pool(clt_tensor **x, clt_device *d) { (void)d; return clt_adaptive_avg_pool2d(x[0], 2, 3); }
static clt_tensor *op_mse(clt_tensor **x, clt_device *d) { (void)d; return clt_mse_loss(x[0], x[1], CLT_REDUCTION_MEAN); }
static clt_tensor *op_index_select(clt_tensor **x, clt_device *d)
{
    int64_t i[] = {3, 0, 3, 1, 3};
    clt_tensor *idx = clt_tensor_from_data(CLT_SHAPE(5), i, CLT_I64, d);
    return rel(clt_index_select(x[0], 1, idx), idx, NULL);
}
static clt_tensor *op_embedding(clt_tensor **x, clt_device *d)
{
    int64_t i[] = {4, 1, 1, 0, 4, 4};
    clt_tensor *idx = clt_tensor_from_data(CLT_SHAPE(2, 3), i, CLT_I64, d);
    return rel(clt_embedding(idx, x[0]), idx, NULL);
}
static clt_tensor *op_conv2d(clt_tensor **x, clt_device *d)
{
    clt_conv2d_options o = {.stride = {2, 1}, .padding = {1, 1}, .groups = 2};
    (void)d;
    return clt_conv2d(x[0], x[1], x[2], &o);
}
static clt_tensor *op_conv2d_dilated(clt_tensor **x, clt_device *d)
{
    clt_conv2d_options o = {.dilation = {2, 1}, .padding = {0, 2}};
    (void)d;
    return clt_conv2d(x[0], x[1], NULL, &o);
}
static clt_tensor *op_conv2d_depthwise(clt_tensor **x, clt_device *d)
{
    clt_conv2d_options o = {.stride = {2, 1}, .padding = {1, 1}, .groups = 3}; /* multiplier 2 */
    (void)d;
    return clt_conv2d(x[0], x[1], x[2], &o);
}
static clt_tensor *op_conv2d_depthwise_dilated(clt_tensor **x, clt_device *d)
{
    /* the last column of the strided windows left over: the input's gradient pads it back */
    clt_conv2d_options o = {.stride = {1, 2}, .dilation = {2, 1}, .padding = {0, 2}, .groups = 2};
    (void)d;
    return clt_conv2d(x[0], x[1], NULL, &o);
}
static clt_tensor *op_max_pool(clt_tensor **x, clt_device *d)
{
    clt_pool2d_options o = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}};
    (void)d;
    return clt_max_pool2d(x[0], &o, NULL);
}
static clt_tensor *op_avg_pool(clt_tensor **x, clt_device *d)
{
    clt_pool2d_options o = {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}, .exclude_padding = true};
    (void)d;
    return clt_avg_pool2d(x[0], &o);
}
static clt_tensor *op_avg_pool_pad(clt_tensor **x, clt_device *d)
{
    clt_pool2d_options o = {.kernel = {2, 2}, .padding = {1, 0}};
    (void)d;
    return clt_avg_pool2d(x[0], &o);
}
static clt_tensor *op_pool_ceil(clt_tensor **x, clt_device *d)
{
    clt_pool2d_options o = {.kernel = {3, 2}, .stride = {2, 2}, .padding = {1, 0}, .ceil_mode = true};
    clt_tensor *mx = clt_max_pool2d(x[0], &o, NULL), *av = clt_avg_pool2d(x[0], &o);
    clt_tensor *y = mx && av ? clt_add(mx, av) : NULL;
    (void)d;
    clt_tensor_release(mx), clt_tensor_release(av);
    return y;
}
static clt_tensor *op_cumsum(clt_tensor **x, clt_device *d)
{
    clt_tensor *a = clt_cumsum(x[0], 1), *b = a ? clt_cumsum(x[0], -1) : NULL;
    clt_tensor *c = b ? clt_mul(a, b) : NULL; /* both dimensions, weighted differently */
    (void)d;
    return rel(c, a, b);
}
static clt_tensor *op_sort(clt_tensor **x, clt_device *d)
{
    clt_tensor *v = clt_sort(x[0], 0, true, NULL),
               *w = v ? clt_tensor_arange(1, 13, 1, CLT_F32, d) : NULL;
    clt_tensor *w2 = w ? clt_reshape(w, CLT_SHAPE(3, 4)) : NULL,
               *wc = w2 ? clt_tensor_to_dtype(w2, clt_tensor_dtype(v)) : NULL;
    clt_tensor *r = wc ? clt_mul(v, wc) : NULL; /* each position weighted apart */
    (void)d;
    clt_tensor_release(w), clt_tensor_release(w2);
    return rel(r, v, wc);
}
static clt_tensor *op_topk(clt_tensor **x, clt_device *d)
{
    clt_tensor *v = clt_topk(x[0], 2, 1, false, NULL), *s = v ? clt_mul(v, v) : NULL;
    (void)d;
    return rel(s, v, NULL);
}
static clt_tensor *op_gather(clt_tensor **x, clt_device *d)
{
    clt_tensor *idx =
        clt_tensor_from_data(CLT_SHAPE(2, 3), (int64_t[]){0, 2, 2, 1, 1, 0}, CLT_I64, d);
    clt_tensor *g = clt_gather(x[0], 1, idx), *s = g ? clt_mul(g, g) : NULL;
    clt_tensor_release(idx);
    return rel(s, g, NULL);
}
static clt_tensor *op_masked_fill(clt_tensor **x, clt_device *d)
{
    clt_tensor *m =
        clt_tensor_from_data(CLT_SHAPE(3), (bool[]){true, false, false}, CLT_BOOL, d);
    clt_tensor *f = clt_masked_fill(x[0], m, 0.5), *s = f ? clt_mul(f, f) : NULL;
    clt_tensor_release(m);
    return rel(s, f, NULL);
}
static clt_tensor *op_pad(clt_tensor **x, clt_device *d)
{
    clt_tensor *a = clt_pad(x[0], 4, (int64_t[]){2, 1, 1, 1}, CLT_PAD_REFLECT, 0);
    clt_tensor *b = a ? clt_pad(a, 2, (int64_t[]){1, 2}, CLT_PAD_CIRCULAR, 0) : NULL;
    clt_tensor *c = b ? clt_pad(b, 4, (int64_t[]){1, 0, 0, 2}, CLT_PAD_REPLICATE, 0) : NULL;
    clt_tensor *e = c ? clt_pad(c, 2, (int64_t[]){1, 1}, CLT_PAD_CONSTANT, 0.5) : NULL;
    clt_tensor *s = e ? clt_mul(e, e) : NULL;
    (void)d;
    clt_tensor_release(a), clt_tensor_release(b);
    return rel(s, c, e);
}
static clt_tensor *op_interpolate(clt_tensor **x, clt_device *d)
{
    clt_tensor *a = clt_interpolate2d(x[0], 5, 2, CLT_INTERPOLATE_BILINEAR, false);
    clt_tensor *b = a ? clt_interpolate2d(x[0], 2, 7, CLT_INTERPOLATE_BILINEAR, true) : NULL;
    clt_tensor *c = b ? clt_interpolate2d(x[0], 6, 5, CLT_INTERPOLATE_NEAREST, false) : NULL;
    clt_tensor *sa = c ? clt_sum(a, NULL, 0, false) : NULL, *sb = sa ? clt_mul(b, b) : NULL;
    clt_tensor *ssb = sb ? clt_sum(sb, NULL, 0, false) : NULL, *sc = ssb ? clt_mul(c, c) : NULL;
    clt_tensor *ssc = sc ? clt_sum(sc, NULL, 0, false) : NULL,
               *t = ssc ? clt_add(sa, ssb) : NULL;
    clt_tensor *r = t ? clt_add(t, ssc) : NULL;
    clt_tensor *all[] = {a, b, c, sa, sb, ssb, sc, ssc, t};
    (void)d;
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clt_tensor_release(all[i]);
    return r;
}
static clt_tensor *op_conv_transpose(clt_tensor **x, clt_device *d)
{
    clt_conv_transpose2d_options o = clt_conv_transpose2d_options_default();
    o.stride[0] = 2, o.padding[1] = 1, o.output_padding[0] = 1, o.dilation[1] = 2;
    (void)d;
    return clt_conv_transpose2d(x[0], x[1], x[2], &o);
}
static clt_tensor *op_batch_norm(clt_tensor **x, clt_device *d)
{
    (void)d;
    return clt_batch_norm(x[0], NULL, NULL, x[1], x[2], true, 0.1, 1e-5);
}
/* Evaluation with running statistics: the scale weight / sqrt(var + eps) one fused operation. */
static clt_tensor *op_batch_norm_eval(clt_tensor **x, clt_device *d)
{
    const double mv[] = {0.3, -0.5, 1.1}, vv[] = {0.7, 1.9, 0.4};
    clt_tensor *m = make(d, clt_tensor_dtype(x[0]), mv, CLT_SHAPE(3));
    clt_tensor *v = make(d, clt_tensor_dtype(x[0]), vv, CLT_SHAPE(3));
    return rel(clt_batch_norm(x[0], m, v, x[1], x[2], false, 0.1, 1e-5), m, v);
}
/* That operation alone, both inputs differentiated: a / sqrt(b^2 + 0.5 + 0.1). */
static clt_tensor *op_mul_rsqrt(clt_tensor **x, clt_device *d)
{
    clt_tensor *b2 = clt_mul(x[1], x[1]), *b = b2 ? clt_add_scalar(b2, 0.5) : NULL;
    (void)d;
    return rel(b ? clt__ew("test", CLT_EW_mul_rsqrt, x[0], b, 0.1, 0) : NULL, b2, b);
}
static clt_tensor *op_prelu(clt_tensor **x, clt_device *d)
{
    (void)d;
    return clt_prelu(x[0], x[1]);
}
static clt_tensor *op_layer_norm(clt_tensor **x, clt_device *d)
{
    (void)d;
    return clt_layer_norm(x[0], 1, x[1], x[2], 1e-5);
}
static clt_tensor *op_dropout(clt_tensor **x, clt_device *d)
{
    (void)d;
    clt_manual_seed(7);
    return clt_dropout(x[0], 0.4, true);
}

#define S1(a) 1, {1}, {{a}}
static const gcase cases[] = {
    {"view", op_view, 1, {2}, {{2, 6}}, -2, 2},
    {"reshape (copying)", op_reshape_copy, 1, {2}, {{3, 4}}, -2, 2},
    {"permute", op_permute, 1, {3}, {{2, 3, 4}}, -2, 2},
    {"squeeze, unsqueeze", op_squeeze, 1, {3}, {{2, 1, 3}}, -2, 2},
    {"narrow", op_narrow, 1, {2}, {{3, 5}}, -2, 2},
    {"slice", op_slice, 1, {2}, {{6, 2}}, -2, 2},
    {"expand", op_expand, 1, {2}, {{3, 1}}, -2, 2},
    {"contiguous", op_contiguous, 1, {2}, {{3, 4}}, -2, 2},
    {"cat", op_cat, 2, {2, 2}, {{2, 3}, {4, 3}}, -2, 2},
    {"stack", op_stack, 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2},
    {"to", op_to, 1, {2}, {{2, 3}}, -2, 2},
    {"add (broadcast)", op_add, 2, {2, 1}, {{2, 3}, {3}}, -2, 2},
    {"sub (broadcast)", op_sub, 2, {2, 2}, {{3, 1}, {1, 4}}, -2, 2},
    {"mul (broadcast)", op_mul, 2, {3, 2}, {{2, 2, 3}, {2, 1}}, -2, 2},
    {"div", op_div, 2, {2, 2}, {{2, 3}, {2, 3}}, 0.5, 2},
    {"pow", op_pow, 2, {1, 1}, {{5}, {5}}, 0.5, 2},
    {"maximum", op_maximum, 2, {2, 1}, {{3, 4}, {4}}, -2, 2},
    {"minimum", op_minimum, 2, {2, 2}, {{3, 4}, {3, 4}}, -2, 2},
    {"scalar operations", op_scalars, S1(6), 0.5, 2},
    {"neg", op_neg, S1(6), -2, 2},
    {"abs", op_abs, S1(6), -2, 2},
    {"exp", op_exp, S1(6), -2, 2},
    {"log", op_log, S1(6), 0.2, 3},
    {"sqrt", op_sqrt, S1(6), 0.2, 3},
    {"rsqrt", op_rsqrt, S1(6), 0.2, 3},
    {"sin", op_sin, S1(6), -3, 3},
    {"cos", op_cos, S1(6), -3, 3},
    {"tanh", op_tanh, S1(6), -2, 2},
    {"sigmoid", op_sigmoid, S1(6), -3, 3},
    {"relu", op_relu, S1(8), -2, 2},
    {"gelu", op_gelu, S1(8), -3, 3},
    {"gelu (tanh)", op_gelu_tanh, S1(8), -3, 3},
    {"silu", op_silu, S1(8), -3, 3},
    {"clamp", op_clamp, S1(8), -2, 2},
    {"where", op_where, 2, {2, 2}, {{2, 4}, {2, 4}}, -2, 2},
    {"addcmul (broadcast)", op_addcmul, 3, {3, 2, 3}, {{1, 3, 1}, {3, 2}, {2, 1, 1}}, -2, 2},
    {"sum", op_sum, 1, {3}, {{2, 3, 2}}, -2, 2},
    {"sum of all", op_sum_all, 1, {2}, {{2, 3}}, -2, 2},
    {"mean", op_mean, 1, {3}, {{2, 3, 2}}, -2, 2},
    {"max", op_max, 1, {2}, {{3, 4}}, -2, 2},
    {"min", op_min, 1, {2}, {{3, 4}}, -2, 2},
    {"var", op_var, 1, {2}, {{3, 4}}, -2, 2},
    {"std", op_std, 1, {2}, {{3, 4}}, -2, 2},
    {"logsumexp", op_logsumexp, 1, {2}, {{3, 4}}, -2, 2},
    {"matmul", op_matmul, 2, {2, 2}, {{3, 4}, {4, 2}}, -2, 2},
    {"matmul (batches broadcast)", op_matmul, 2, {4, 3}, {{2, 1, 3, 4}, {3, 4, 2}}, -2, 2},
    {"matmul (vector, matrix)", op_matmul, 2, {1, 3}, {{4}, {2, 4, 3}}, -2, 2},
    {"matmul (matrix, vector)", op_matmul, 2, {2, 1}, {{3, 4}, {4}}, -2, 2},
    {"matmul (vectors)", op_matmul, 2, {1, 1}, {{4}, {4}}, -2, 2},
    {"linear", op_linear, 3, {3, 2, 1}, {{2, 3, 4}, {5, 4}, {5}}, -2, 2},
    {"linear (vector, no bias)", op_linear_nobias, 2, {1, 2}, {{4}, {3, 4}}, -2, 2},
    {"linear + relu (fused)", op_linear_relu, 3, {3, 2, 1}, {{2, 3, 4}, {5, 4}, {5}}, -2, 2},
    {"linear + relu (fused, no bias)", op_linear_relu_nobias, 2, {2, 2}, {{3, 4}, {5, 4}}, -2, 2},
    {"matmul + bias along the rows + relu (fused)",
     op_matmul_rows_relu,
     3,
     {2, 2, 2},
     {{3, 4}, {4, 5}, {3, 1}},
     -2,
     2},
    {"matmul + bias along the rows (fused)",
     op_matmul_rows_bias,
     3,
     {2, 2, 2},
     {{3, 4}, {4, 5}, {3, 1}},
     -2,
     2},
    {"conv2d + relu (fused)",
     op_conv2d_relu,
     3,
     {4, 4, 1},
     {{2, 2, 5, 4}, {3, 2, 3, 3}, {3}},
     -2,
     2},
    {"softmax", op_softmax, 1, {2}, {{3, 4}}, -2, 2},
    {"log_softmax", op_log_softmax, 1, {2}, {{3, 4}}, -2, 2},
    {"nll_loss", op_nll, 1, {2}, {{5, 4}}, -2, 2},
    {"cross_entropy", op_cross_entropy, 1, {2}, {{5, 4}}, -2, 2},
    {"cross_entropy (weights, label smoothing)", op_cross_entropy_options, 1, {2}, {{5, 4}}, -2, 2},
    {"cross_entropy (N, C, d)", op_cross_entropy_spatial, 1, {3}, {{2, 4, 3}}, -2, 2},
    {"max along a dimension", op_max_dim, 1, {2}, {{3, 4}}, -2, 2},
    {"min along a dimension", op_min_dim, 1, {2}, {{3, 4}}, -2, 2},
    {"attention", op_attention, 3, {4, 4, 4}, {{2, 2, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 3}}, -2, 2},
    {"attention (causal)",
     op_attention_causal,
     3,
     {3, 3, 3},
     {{2, 4, 3}, {2, 4, 3}, {2, 4, 2}},
     -2,
     2},
    {"attention (padding mask)",
     op_attention_masked,
     3,
     {3, 3, 3},
     {{2, 3, 2}, {2, 4, 2}, {2, 4, 3}},
     -2,
     2},
    {"adaptive_avg_pool2d", op_adaptive_pool, 1, {4}, {{1, 2, 5, 4}}, -2, 2},
    {"mse_loss", op_mse, 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2},
    {"index_select", op_index_select, 1, {2}, {{2, 5}}, -2, 2},
    {"embedding", op_embedding, 1, {2}, {{5, 3}}, -2, 2},
    {"conv2d", op_conv2d, 3, {4, 4, 1}, {{1, 4, 5, 4}, {4, 2, 3, 3}, {4}}, -2, 2},
    {"conv2d (dilated)", op_conv2d_dilated, 2, {4, 4}, {{2, 1, 5, 3}, {2, 1, 2, 2}}, -2, 2},
    {"conv2d (depthwise, multiplier 2)",
     op_conv2d_depthwise,
     3,
     {4, 4, 1},
     {{1, 3, 5, 4}, {6, 1, 3, 3}, {6}},
     -2,
     2},
    {"conv2d (depthwise, dilated)",
     op_conv2d_depthwise_dilated,
     2,
     {4, 4},
     {{2, 2, 5, 5}, {2, 1, 2, 2}},
     -2,
     2},
    {"max_pool2d", op_max_pool, 1, {4}, {{1, 2, 5, 6}}, -2, 2},
    {"avg_pool2d", op_avg_pool, 1, {4}, {{1, 2, 5, 4}}, -2, 2},
    {"avg_pool2d (padding counted)", op_avg_pool_pad, 1, {4}, {{2, 1, 4, 4}}, -2, 2},
    {"max and avg pool2d in ceil mode", op_pool_ceil, 1, {4}, {{2, 1, 6, 5}}, -2, 2},
    {"cumsum", op_cumsum, 1, {2}, {{3, 4}}, -2, 2},
    {"sort (descending, dim 0)", op_sort, 1, {2}, {{3, 4}}, -2, 2},
    {"topk (smallest)", op_topk, 1, {2}, {{2, 5}}, -2, 2},
    {"gather (repeated indices)", op_gather, 1, {2}, {{2, 3}}, -2, 2},
    {"masked_fill", op_masked_fill, 1, {2}, {{2, 3}}, -2, 2},
    {"pad (every mode)", op_pad, 1, {3}, {{2, 3, 4}}, -2, 2},
    {"conv_transpose2d", op_conv_transpose, 3, {4, 4, 1}, {{1, 2, 3, 3}, {2, 2, 2, 3}, {2}}, -2, 2},
    {"interpolate2d (nearest, bilinear)", op_interpolate, 1, {4}, {{1, 2, 3, 4}}, -2, 2},
    {"batch_norm", op_batch_norm, 3, {4, 1, 1}, {{4, 3, 2, 1}, {3}, {3}}, -2, 2},
    {"batch_norm (evaluation)", op_batch_norm_eval, 3, {4, 1, 1}, {{4, 3, 2, 1}, {3}, {3}}, -2, 2},
    {"mul_rsqrt", op_mul_rsqrt, 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2},
    {"prelu (one slope, 4-D)", op_prelu, 2, {4, 1}, {{2, 3, 2, 2}, {1}}, -2, 2},
    {"prelu (a slope per channel, 4-D)", op_prelu, 2, {4, 1}, {{2, 3, 2, 2}, {3}}, -2, 2},
    {"prelu (a slope per channel, 2-D)", op_prelu, 2, {2, 1}, {{4, 3}, {3}}, -2, 2},
    {"prelu (1-D)", op_prelu, 2, {1, 1}, {{5}, {1}}, -2, 2},
    {"layer_norm", op_layer_norm, 3, {3, 1, 1}, {{2, 3, 4}, {4}, {4}}, -2, 2},
    {"dropout", op_dropout, 1, {2}, {{4, 5}}, -2, 2},
};

static int64_t numel_of(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

/* sum(f(x) * w): the scalar whose gradient the check compares. */
static clt_tensor *weighted(const gcase *c, clt_tensor **x, clt_device *dev, clt_dtype dt,
                            clt_tensor **w)
{
    clt_tensor *out = c->f(x, dev);
    ck_assert_msg(out != NULL, "%s on %s: %s", c->name, clt_device_name(dev), clt_last_error());
    if (!*w) {
        int64_t n = clt_tensor_numel(out);
        double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        fill_noise(v, n, 99, -1, 1);
        *w = make(dev, dt, v, clt_tensor_ndim(out), clt_tensor_shape(out));
        free(v);
    }
    clt_tensor *p = clt_mul(out, *w), *s = clt_sum(p, NULL, 0, false);
    ck_assert_msg(s != NULL, "%s: %s", c->name, clt_last_error());
    return rel(s, out, p);
}

/* In f32 (a device without fp64) the step is large enough to straddle a kink (clamp's bounds,
 * relu's 0): where the central difference fails, the gradient may be either one-sided
 * derivative when those differ. Returns the one-sided difference nearest to `analytic` when
 * the two differ by more than the tolerance, else `central`. */
static double one_sided(const gcase *c, clt_device *dev, clt_dtype dt, double **v,
                        clt_tensor **w, double analytic, double central, double lp, double lm,
                        double eps, double tol)
{
    clt_tensor *xs[3];
    for (int k = 0; k < c->nin; k++)
        xs[k] = make(dev, dt, v[k], c->ndim[k], c->shape[k]);
    clt_tensor *l = weighted(c, xs, dev, dt, w);
    double l0 = scalar_of(l), fwd = (lp - l0) / eps, bwd = (l0 - lm) / eps;
    clt_tensor_release(l);
    for (int k = 0; k < c->nin; k++)
        clt_tensor_release(xs[k]);
    if (fabs(fwd - bwd) <= tol * fmax(1.0, fabs(central)))
        return central;
    return fabs(analytic - fwd) < fabs(analytic - bwd) ? fwd : bwd;
}

static void gradcheck(const gcase *c, clt_device *dev)
{
    bool f64 = clt_device_get_info(dev)->fp64;
    clt_dtype dt = f64 ? CLT_F64 : CLT_F32;
    double eps = f64 ? 1e-6 : 1e-2, tol = f64 ? 1e-6 : 2e-2;
    double *v[3];
    clt_tensor *x[3] = {NULL}, *w = NULL, *loss;
    test_live before = test_live_now();
    for (int i = 0; i < c->nin; i++) {
        int64_t n = numel_of(c->ndim[i], c->shape[i]);
        v[i] = malloc((size_t)n * sizeof *v[i]);
        fill_noise(v[i], n, 11 + (unsigned)i, c->lo, c->hi);
        x[i] = make(dev, dt, v[i], c->ndim[i], c->shape[i]);
        ck_assert_int_eq(clt_tensor_set_requires_grad(x[i], true), CLT_OK);
    }
    loss = weighted(c, x, dev, dt, &w);
    ck_assert_msg(clt_tensor_grad_fn_name(loss) != NULL, "%s", c->name);
    ck_assert_msg(clt_backward(loss, NULL, false) == CLT_OK, "%s on %s: %s", c->name,
                  clt_device_name(dev), clt_last_error());
    clt_tensor_release(loss);
    for (int i = 0; i < c->nin; i++) {
        int64_t n = numel_of(c->ndim[i], c->shape[i]);
        clt_tensor *g = clt_tensor_grad(x[i]);
        ck_assert_msg(g != NULL, "%s: input %d has no gradient", c->name, i);
        ck_assert_int_eq(clt_tensor_dtype(g), dt);
        ck_assert_ptr_eq(clt_tensor_device(g), dev);
        double *a = to_host(g);
        clt_tensor_release(g);
        for (int64_t j = 0; j < n; j++) {
            double num, lp, lm, keep = v[i][j];
            clt_tensor *xs[3];
            for (int side = 0; side < 2; side++) {
                v[i][j] = keep + (side ? -eps : eps);
                for (int k = 0; k < c->nin; k++)
                    xs[k] = make(dev, dt, v[k], c->ndim[k], c->shape[k]);
                clt_tensor *l = weighted(c, xs, dev, dt, &w);
                *(side ? &lm : &lp) = scalar_of(l);
                clt_tensor_release(l);
                for (int k = 0; k < c->nin; k++)
                    clt_tensor_release(xs[k]);
            }
            v[i][j] = keep;
            num = (lp - lm) / (2 * eps);
            if (!f64 && fabs(a[j] - num) > tol * fmax(1.0, fabs(num)))
                num = one_sided(c, dev, dt, v, &w, a[j], num, lp, lm, eps, tol);
            ck_assert_msg(fabs(a[j] - num) <= tol * fmax(1.0, fabs(num)),
                          "%s on %s: d/d input %d [%lld] is %.10g, finite differences %.10g",
                          c->name, clt_device_name(dev), i, (long long)j, a[j], num);
        }
        free(a);
    }
    clt_tensor_release(w);
    for (int i = 0; i < c->nin; i++) {
        clt_tensor_release(x[i]);
        free(v[i]);
    }
    ck_assert_live_eq(test_live_now(), before);
}

START_TEST(test_autograd_gradients)
{
    clt_device *dev = test_device(_i);
    const char *only = getenv("CLT_TEST_GRAD_CASES"); /* a name substring, for debugging */
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        if (!only || strstr(cases[k].name, only))
            gradcheck(&cases[k], dev);
}
END_TEST

/* ---- the graph -------------------------------------------------------------------------------- */

/* Asserts t holds n values equal to want within tol (relative to max(1, |want|)). */
static void expect(clt_tensor *t, const double *want, int64_t n, double tol, const char *what)
{
    ck_assert_msg(t != NULL, "%s: no tensor", what);
    ck_assert_int_eq(clt_tensor_numel(t), n);
    double *v = to_host(t);
    for (int64_t i = 0; i < n; i++)
        ELEMENT_CHECK(fabs(v[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])),
                      "%s: element %lld is %.9g, want %.9g", what, (long long)i, v[i], want[i]);
    free(v);
}

static void expect_grad(clt_tensor *x, const double *want, int64_t n, const char *what)
{
    clt_tensor *g = clt_tensor_grad(x);
    expect(g, want, n, 1e-6, what);
    clt_tensor_release(g);
}

static const double xs[6] = {1, -2, 3, 0.5, -1.5, 2};

START_TEST(test_autograd_leaves)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = make(dev, CLT_F32, xs, CLT_SHAPE(2, 3));
    clt_tensor *i = clt_tensor_zeros(CLT_SHAPE(3), CLT_I64, dev);
    ck_assert(!clt_tensor_requires_grad(x) && clt_tensor_is_leaf(x));
    ck_assert_ptr_null(clt_tensor_grad(x));
    ck_assert_int_eq(clt_tensor_set_requires_grad(i, true), CLT_ERR_DTYPE);
    ck_assert_error_has("clt_tensor_set_requires_grad: only floating tensors can require grad, not i64");
    ck_assert_int_eq(clt_tensor_set_requires_grad(x, true), CLT_OK);

    clt_tensor *y = clt_mul_scalar(x, 2);
    ck_assert(clt_tensor_requires_grad(y) && !clt_tensor_is_leaf(y));
    ck_assert_str_eq(clt_tensor_grad_fn_name(y), "MulBackward");
    ck_assert_ptr_null(clt_tensor_grad_fn_name(x));
    char *text = clt_tensor_format(y);
    ck_assert_msg(strstr(text, "grad_fn=<MulBackward>)") != NULL, "%s", text);
    clt_free(text);
    text = clt_tensor_format(x);
    ck_assert_msg(strstr(text, "requires_grad=True)") != NULL, "%s", text);
    clt_free(text);
    ck_assert_int_eq(clt_tensor_set_requires_grad(y, false), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("made by MulBackward, not a leaf");
    /* an operation on tensors none of which requires grad records nothing */
    clt_tensor *f = clt_add(i, i);
    ck_assert(!clt_tensor_requires_grad(f));
    clt_tensor_release(f);

    clt_tensor *d = clt_tensor_detach(y);
    ck_assert(!clt_tensor_requires_grad(d) && clt_tensor_is_leaf(d));
    double twice[6];
    for (int k = 0; k < 6; k++)
        twice[k] = 2 * xs[k];
    expect(d, twice, 6, 0, "detach");
    clt_tensor *e = clt_exp(d);
    ck_assert(!clt_tensor_requires_grad(e));
    clt_tensor_release(e);

    clt_tensor *z = NULL;
    CLT_NO_GRAD z = clt_mul(x, x);
    ck_assert(clt_grad_is_enabled());
    for (int k = 0; k < 2; k++) { /* leaving early restores it too */
        CLT_NO_GRAD {
            CLT_NO_GRAD {
                if (k == 0)
                    break;
            }
            ck_assert(!clt_grad_is_enabled());
            if (k == 1)
                goto out;
        }
    }
out:
    ck_assert(clt_grad_is_enabled());
    ck_assert(!clt_tensor_requires_grad(z) && clt_tensor_is_leaf(z));
    ck_assert(clt_grad_set_enabled(false) == true);
    ck_assert(!clt_grad_is_enabled());
    clt_tensor *w = clt_mul(x, x);
    ck_assert(!clt_tensor_requires_grad(w));
    ck_assert(clt_grad_set_enabled(true) == false);
    clt_tensor_release(w), clt_tensor_release(z), clt_tensor_release(d), clt_tensor_release(y);
    clt_tensor_release(i), clt_tensor_release(x);
}
END_TEST

START_TEST(test_autograd_accumulation)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = make(dev, CLT_F32, xs, CLT_SHAPE(2, 3));
    double want[6];
    clt_tensor_set_requires_grad(x, true);
    for (int round = 1; round <= 2; round++) { /* sum(x * x): 2x, then 4x */
        clt_tensor *sq = clt_mul(x, x), *l = clt_sum(sq, NULL, 0, false);
        ck_assert_int_eq(clt_backward(l, NULL, false), CLT_OK);
        for (int k = 0; k < 6; k++)
            want[k] = 2 * round * xs[k];
        expect_grad(x, want, 6, "accumulated");
        clt_tensor_release(l), clt_tensor_release(sq);
    }
    ck_assert_int_eq(clt_tensor_set_grad(x, NULL), CLT_OK);
    ck_assert_ptr_null(clt_tensor_grad(x));

    /* two paths into one tensor: y = x^2, z = y + 3 y -> dz/dx = 8 x */
    clt_tensor *y = clt_mul(x, x), *y3 = clt_mul_scalar(y, 3), *z = clt_add(y, y3);
    clt_tensor *l = clt_sum(z, NULL, 0, false);
    ck_assert_int_eq(clt_backward(l, NULL, true), CLT_OK);
    for (int k = 0; k < 6; k++)
        want[k] = 8 * xs[k];
    expect_grad(x, want, 6, "two paths");
    /* retained: once more, then the graph is freed */
    ck_assert_int_eq(clt_backward(l, NULL, false), CLT_OK);
    for (int k = 0; k < 6; k++)
        want[k] = 16 * xs[k];
    expect_grad(x, want, 6, "retained graph");
    ck_assert_int_eq(clt_backward(l, NULL, false), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_backward: the graph through");
    ck_assert_error_has("was freed by an earlier backward pass; pass retain_graph");
    expect_grad(x, want, 6, "after the refused backward");

    /* a root of several elements needs its gradient */
    clt_tensor_release(z), clt_tensor_release(y);
    y = clt_mul(x, x);
    z = clt_add(y, y);
    ck_assert_int_eq(clt_backward(z, NULL, false), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_backward: the root has shape (2, 3)");
    clt_tensor *half = clt_tensor_full(CLT_SHAPE(2, 3), 0.5, CLT_F32, dev);
    clt_tensor *bad = clt_tensor_ones(CLT_SHAPE(3), CLT_F32, dev);
    ck_assert_int_eq(clt_backward(y, bad, false), CLT_ERR_SHAPE);
    ck_assert_int_eq(clt_tensor_set_grad(x, NULL), CLT_OK);
    ck_assert_int_eq(clt_backward(y, half, false), CLT_OK); /* 0.5 * 2x */
    expect_grad(x, xs, 6, "given gradient");
    ck_assert_int_eq(clt_backward(bad, NULL, false), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_backward: the tensor does not require grad");
    ck_assert_int_eq(clt_tensor_set_grad(x, bad), CLT_ERR_SHAPE);
    ck_assert_error_has("clt_tensor_set_grad: the gradient has shape (3,), the tensor (2, 3)");
    clt_tensor_release(bad), clt_tensor_release(half), clt_tensor_release(l);
    clt_tensor_release(z), clt_tensor_release(y3), clt_tensor_release(y), clt_tensor_release(x);
}
END_TEST

/* Every leaf's grad is its own tensor, even where one gradient reached several leaves. */
START_TEST(test_autograd_grads_not_shared)
{
    clt_device *dev = test_device(_i);
    clt_tensor *a = make(dev, CLT_F32, xs, CLT_SHAPE(2, 3)), *b = make(dev, CLT_F32, xs, CLT_SHAPE(2, 3));
    clt_tensor *g = clt_tensor_ones(CLT_SHAPE(2, 3), CLT_F32, dev);
    clt_tensor_set_requires_grad(a, true);
    clt_tensor_set_requires_grad(b, true);
    clt_tensor *s = clt_add(a, b);
    ck_assert_int_eq(clt_backward(s, g, false), CLT_OK); /* the same g for a and b */
    clt_tensor *ga = clt_tensor_grad(a), *gb = clt_tensor_grad(b);
    ck_assert_ptr_ne(ga, gb);
    ck_assert_ptr_ne(ga, g);
    CLT_NO_GRAD ck_assert_int_eq(clt_fill_(ga, 7), CLT_OK);
    double ones[6] = {1, 1, 1, 1, 1, 1};
    expect(gb, ones, 6, 0, "b's grad after a's changed");
    expect(g, ones, 6, 0, "the caller's gradient after a's grad changed");
    clt_tensor_release(gb), clt_tensor_release(ga), clt_tensor_release(s);
    clt_tensor_release(g), clt_tensor_release(b), clt_tensor_release(a);
}
END_TEST

/* leaf_ready: notes in user the buffer of the gradient that arrived for the leaf. */
static void note_arrived(void *user, clt_tensor *leaf, clt_tensor **grad)
{
    (void)leaf;
    *(void **)user = (*grad)->storage->buf;
}

/* A leaf whose gradient arrives as a view of another node's gradient (a weight reshaped into a
 * matrix) takes that memory as its grad, with no copy: the node lets go of its own once it has
 * run. The values are x^T's row sums, each element once; the grad is the leaf's alone. One that
 * arrives as the first part of a larger buffer is copied. */
START_TEST(test_autograd_view_grad_kept)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = make(dev, CLT_F32, xs, CLT_SHAPE(2, 3)), *w = make(dev, CLT_F32, xs, CLT_SHAPE(6));
    void *arrived = NULL;
    clt_tensor_set_requires_grad(w, true);
    clt_tensor *wm = clt_reshape(w, CLT_SHAPE(3, 2)), *p = clt_matmul(x, wm);
    clt_tensor *l = clt_sum(p, NULL, 0, false);
    clt_backward_hooks hooks = {.leaf_ready = note_arrived, .user = &arrived};
    ck_assert_int_eq(clt_backward_ex(l, NULL, false, &hooks), CLT_OK);
    clt_tensor *g = clt_tensor_grad(w);
    ck_assert_ptr_nonnull(arrived);
    ck_assert_ptr_eq(g->storage->buf, arrived); /* the same memory: not copied */
    double want[6]; /* d/dw[k][j] of sum(x @ w) = sum over rows of x[:, k] */
    for (int k = 0; k < 3; k++)
        want[2 * k] = want[2 * k + 1] = xs[k] + xs[3 + k];
    expect(g, want, 6, 0, "w's grad");
    CLT_NO_GRAD ck_assert_int_eq(clt_fill_(g, 7), CLT_OK);
    expect(x, xs, 6, 0, "x after w's grad changed");
    expect(w, xs, 6, 0, "w after its grad changed");
    clt_tensor_release(g);
    clt_tensor_release(l), clt_tensor_release(p), clt_tensor_release(wm);
    /* the first part of a cat's gradient, the rest gone once the other branch ran: copied, so
     * that the leaf's grad holds its own 6 elements, not the cat's 12 */
    clt_tensor *u = make(dev, CLT_F32, xs, CLT_SHAPE(6));
    clt_tensor_set_requires_grad(u, true);
    clt_tensor *twice = clt_mul_scalar(u, 2), *parts[2] = {w, twice};
    clt_tensor *joined = clt_cat(parts, 2, 0), *total = clt_sum(joined, NULL, 0, false);
    ck_assert_int_eq(clt_tensor_set_grad(w, NULL), CLT_OK);
    ck_assert_int_eq(clt_backward(total, NULL, false), CLT_OK);
    g = clt_tensor_grad(w);
    ck_assert_uint_eq(g->storage->nbytes, 6 * sizeof(float));
    double ones[6] = {1, 1, 1, 1, 1, 1}, twos[6] = {2, 2, 2, 2, 2, 2};
    expect(g, ones, 6, 0, "w's grad from the cat");
    clt_tensor *gu = clt_tensor_grad(u);
    expect(gu, twos, 6, 0, "u's grad from the cat");
    clt_tensor_release(gu), clt_tensor_release(g), clt_tensor_release(total);
    clt_tensor_release(joined), clt_tensor_release(twice), clt_tensor_release(u);
    clt_tensor_release(w), clt_tensor_release(x);
}
END_TEST

START_TEST(test_autograd_in_place)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = make(dev, CLT_F32, xs, CLT_SHAPE(2, 3));
    clt_tensor *a = make(dev, CLT_F32, xs, CLT_SHAPE(2, 3));
    clt_tensor *one = clt_tensor_ones(0, NULL, CLT_F32, dev);
    clt_tensor_set_requires_grad(x, true);
    ck_assert_int_eq(clt_add_(x, one), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_add_: the tensor requires grad");
    expect(x, xs, 6, 0, "x after the refused add_");
    ck_assert_int_eq(clt_mul_(a, x), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_mul_: an input requires grad");
    CLT_NO_GRAD ck_assert_int_eq(clt_mul_(x, one), CLT_OK);
    ck_assert(clt_grad_is_enabled());

    /* a tensor saved for backward, changed in place before it */
    clt_tensor *y = clt_mul(x, a), *l = clt_sum(y, NULL, 0, false);
    ck_assert_int_eq(clt_add_(a, one), CLT_OK); /* a requires no grad: allowed */
    ck_assert_int_eq(clt_backward(l, NULL, false), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_backward: a tensor MulBackward saved for its backward pass was changed in place");
    ck_assert_ptr_null(clt_tensor_grad(x));
    clt_tensor_release(l), clt_tensor_release(y), clt_tensor_release(one);
    clt_tensor_release(a), clt_tensor_release(x);
}
END_TEST

/* Gradients keep each leaf's dtype through promotion, conversion and f16 arithmetic. */
START_TEST(test_autograd_dtypes)
{
    clt_device *dev = test_device(_i);
    clt_tensor *x = make(dev, CLT_F32, xs, CLT_SHAPE(2, 3));
    clt_tensor *h = make(dev, CLT_F16, xs, CLT_SHAPE(2, 3));
    clt_dtype wide = test_has_dtype(dev, CLT_F64) ? CLT_F64 : CLT_F32;
    clt_tensor *d = make(dev, wide, xs, CLT_SHAPE(3));
    clt_tensor_set_requires_grad(x, true);
    clt_tensor_set_requires_grad(h, true);
    /* f32 * f64 -> f64 (f32 on a device without fp64); f16 -> f32; f16 * f16 stays f16 */
    clt_tensor *p = clt_mul(x, d), *hf = clt_tensor_to_dtype(h, CLT_F32), *hh = clt_mul(h, h);
    clt_tensor *s1 = clt_sum(p, NULL, 0, false), *s2 = clt_sum(hf, NULL, 0, false);
    clt_tensor *s3 = clt_sum(hh, NULL, 0, false);
    ck_assert_int_eq(clt_tensor_dtype(s1), wide);
    ck_assert_int_eq(clt_backward(s1, NULL, false), CLT_OK);
    ck_assert_int_eq(clt_backward(s2, NULL, false), CLT_OK);
    ck_assert_int_eq(clt_backward(s3, NULL, false), CLT_OK);
    clt_tensor *gx = clt_tensor_grad(x), *gh = clt_tensor_grad(h);
    ck_assert_int_eq(clt_tensor_dtype(gx), CLT_F32);
    ck_assert_int_eq(clt_tensor_dtype(gh), CLT_F16);
    double wx[6], wh[6];
    for (int k = 0; k < 6; k++)
        wx[k] = xs[k % 3], wh[k] = 1 + 2 * xs[k];
    expect(gx, wx, 6, 1e-6, "f32 through f64");
    expect(gh, wh, 6, 1e-3, "f16");
    clt_tensor *all[] = {gh, gx, s3, s2, s1, hh, hf, p, d, h, x};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
}
END_TEST

/* ---- a small model ------------------------------------------------------------------------------- */

static clt_module *mlp(void)
{
    return test_mlp(6, 8, 3, clt_nn_tanh(), 3);
}

/* cross_entropy(m(x), t) for a fixed batch of 5 on m's device. */
static clt_tensor *mlp_loss(clt_module *m)
{
    double v[30];
    int64_t t[5] = {0, 2, 1, 1, 0};
    clt_device *dev = clt_module_device(m);
    fill_noise(v, 30, 5, -1, 1);
    clt_tensor *x = make(dev, CLT_F32, v, CLT_SHAPE(5, 6));
    clt_tensor *tt = clt_tensor_from_data(CLT_SHAPE(5), t, CLT_I64, dev);
    clt_tensor *y = clt_module_forward(m, x);
    clt_tensor *l = clt_cross_entropy(y, tt, NULL);
    ck_assert_msg(l != NULL, "%s", clt_last_error());
    clt_tensor_release(y), clt_tensor_release(tt), clt_tensor_release(x);
    return l;
}

typedef struct grads {
    const char *names[8];
    double *values[8];
    int64_t sizes[8];
    int n;
} grads;

static int collect_grad(const char *name, clt_tensor *p, void *user)
{
    grads *g = user;
    clt_tensor *t = clt_tensor_grad(p);
    ck_assert_msg(t != NULL, "%s has no gradient", name);
    ck_assert_ptr_eq(clt_tensor_device(t), clt_tensor_device(p));
    g->names[g->n] = name;
    g->sizes[g->n] = clt_tensor_numel(t);
    g->values[g->n++] = to_host(t);
    clt_tensor_release(t);
    return 0;
}

static void free_grads(grads *g)
{
    for (int k = 0; k < g->n; k++)
        free(g->values[k]);
}

START_TEST(test_autograd_mlp_matches_cpu)
{
    clt_device *dev = test_device(_i);
    clt_module *m = mlp(), *copy = clt_module_clone_to(m, dev);
    grads on_cpu = {0}, on_dev = {0};
    clt_tensor *l = mlp_loss(m), *lc = mlp_loss(copy);
    ck_assert_int_eq(clt_backward(l, NULL, false), CLT_OK);
    ck_assert_int_eq(clt_backward(lc, NULL, false), CLT_OK);
    clt_module_foreach_parameter(m, collect_grad, &on_cpu);
    clt_module_foreach_parameter(copy, collect_grad, &on_dev);
    ck_assert_int_eq(on_cpu.n, 4);
    for (int k = 0; k < on_cpu.n; k++)
        for (int64_t j = 0; j < on_cpu.sizes[k]; j++)
            ck_assert_msg(fabs(on_dev.values[k][j] - on_cpu.values[k][j]) <=
                              1e-5 * fmax(1e-2, fabs(on_cpu.values[k][j])),
                          "%s[%lld] on %s: %.9g, on cpu %.9g", on_cpu.names[k], (long long)j,
                          clt_device_name(dev), on_dev.values[k][j], on_cpu.values[k][j]);
    /* the gradients move with the module, handles and values unchanged */
    clt_tensor *w = clt_module_get_parameter(m, "0.weight"), *gw = clt_tensor_grad(w);
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    clt_tensor *gw2 = clt_tensor_grad(w);
    ck_assert_ptr_eq(gw2, gw);
    ck_assert_ptr_eq(clt_tensor_device(gw), dev);
    expect(gw, on_cpu.values[0], on_cpu.sizes[0], 0, "moved gradient");
    clt_tensor_release(gw2), clt_tensor_release(gw);
    free_grads(&on_cpu), free_grads(&on_dev);
    clt_tensor_release(lc), clt_tensor_release(l);
    clt_module_release(copy), clt_module_release(m);
}
END_TEST

static int clear_grad(const char *name, clt_tensor *p, void *user)
{
    (void)name, (void)user;
    return clt_tensor_set_grad(p, NULL);
}

START_TEST(test_autograd_no_leak)
{
    clt_device *dev = test_device(_i);
    clt_module *m = mlp();
    test_live before = {0};
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    for (int step = 0; step < 40; step++) {
        clt_module_foreach_parameter(m, clear_grad, NULL);
        if (step == 1)
            before = test_live_now();
        clt_tensor *l = mlp_loss(m);
        ck_assert_int_eq(clt_backward(l, NULL, false), CLT_OK);
        clt_tensor_release(l);
    }
    clt_module_foreach_parameter(m, clear_grad, NULL);
    ck_assert_live_eq(test_live_now(), before);
    clt_module_release(m);
}
END_TEST

typedef struct backward_case {
    clt_module *m;
    clt_tensor *loss;
} backward_case;

static bool run_backward(void *ctx)
{
    backward_case *c = ctx;
    return clt_backward(c->loss, NULL, true) == CLT_OK;
}

static double grad_total(clt_module *m)
{
    grads g = {0};
    double total = 0;
    clt_module_foreach_parameter(m, collect_grad, &g);
    for (int k = 0; k < g.n; k++)
        for (int64_t j = 0; j < g.sizes[k]; j++)
            total += fabs(g.values[k][j]);
    free_grads(&g);
    return total;
}

START_TEST(test_autograd_allocation_failures)
{
    clt_device *dev = test_device(_i);
    backward_case c = {mlp(), NULL};
    ck_assert_int_eq(clt_module_to(c.m, dev), CLT_OK);
    c.loss = mlp_loss(c.m);
    /* the first backward makes the gradients, the next ones add to them: warm both up */
    ck_assert(run_backward(&c));
    long host = test_fault_sweep(run_backward, &c, "clt_backward", CLT__HOST);
    test_fault_sweep(run_backward, &c, "clt_backward", CLT__DEVICE);
    /* a backward that fails halfway changes no gradient */
    ck_assert_int_gt(host, 2);
    double total = grad_total(c.m);
    clt__fault_inject(CLT__HOST, host / 2 + 1);
    ck_assert_int_eq(clt_backward(c.loss, NULL, true), CLT_ERR_OUT_OF_MEMORY);
    clt__fault_inject(CLT__HOST, 0);
    ck_assert(grad_total(c.m) == total);
    clt_tensor_release(c.loss);
    clt_module_release(c.m);
}
END_TEST

/* A chain of a million recorded operations is freed without a million nested calls (in any
 * build: the release recursed once per node and overflowed the stack), and leaks nothing. */
START_TEST(test_autograd_deep_graph_release)
{
    enum { DEPTH = 1000000 };
    test_live before = test_live_now();
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(1), CLT_F32, clt_device_cpu()), *y;
    ck_assert_int_eq(clt_tensor_set_requires_grad(x, true), CLT_OK);
    y = clt_tensor_retain(x);
    for (int k = 0; k < DEPTH; k++) {
        clt_tensor *next = clt_add_scalar(y, 1);
        ck_assert_msg(next != NULL, "op %d: %s", k, clt_last_error());
        clt_tensor_release(y);
        y = next;
    }
    ck_assert_str_eq(clt_tensor_grad_fn_name(y), "AddBackward");
    double v;
    ck_assert_int_eq(clt_tensor_item(y, &v), CLT_OK);
    ck_assert_double_eq(v, 1 + DEPTH);
    clt_tensor_release(y);
    clt_tensor_release(x);
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* A chain of a million gradients of gradients (x1.grad = x2, x2.grad = x3, ...) is freed
 * without a nested call per tensor. */
START_TEST(test_autograd_deep_grad_chain_release)
{
    enum { DEPTH = 1000000 };
    test_live before = test_live_now();
    clt_tensor *first = clt_tensor_ones(CLT_SHAPE(1), CLT_F32, clt_device_cpu()), *t = first;
    for (int k = 0; k < DEPTH; k++) {
        clt_tensor *g = clt_tensor_ones(CLT_SHAPE(1), CLT_F32, clt_device_cpu());
        ck_assert_int_eq(clt_tensor_set_grad(t, g), CLT_OK);
        clt_tensor_release(g); /* t holds it */
        t = g;
    }
    clt_tensor_release(first);
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* A tensor cannot be its own gradient, nor hold itself through a chain of gradients (the cycle
 * would never be freed); the refused call changes nothing. */
START_TEST(test_autograd_grad_cycles_refused)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    clt_tensor *x = clt_tensor_ones(CLT_SHAPE(2), CLT_F32, dev);
    clt_tensor *y = clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, dev);
    clt_tensor *z = clt_tensor_zeros(CLT_SHAPE(2), CLT_F32, dev);
    ck_assert_int_eq(clt_tensor_set_grad(x, x), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_tensor_set_grad: a tensor cannot be its own gradient");
    ck_assert_ptr_null(clt__grad_of(x));
    ck_assert_int_eq(clt_tensor_set_grad(x, y), CLT_OK);
    ck_assert_int_eq(clt_tensor_set_grad(y, z), CLT_OK);
    ck_assert_int_eq(clt_tensor_set_grad(z, x), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_tensor_set_grad: the gradient holds the tensor through its own "
                        "gradients: a cycle");
    ck_assert_ptr_null(clt__grad_of(z));
    ck_assert_int_eq(clt_tensor_set_grad(z, NULL), CLT_OK);
    clt_tensor_release(z), clt_tensor_release(y), clt_tensor_release(x);
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* Backward hooks: a gradient replaced by one of the leaf's shape is used; one of another shape
 * fails the pass with CLT_ERR_SHAPE and no gradient changes (an optimizer would have read a
 * (1,) gradient as a (64, 64) one). */
typedef struct replacing {
    clt_tensor *with; /* the replacement, or NULL: halve the gradient */
    int calls;
} replacing;

static void replace_grad(void *user, clt_tensor *leaf, clt_tensor **grad)
{
    replacing *r = user;
    clt_tensor *g = r->with ? clt_tensor_retain(r->with) : clt_mul_scalar(*grad, 0.5);
    (void)leaf;
    r->calls++;
    clt_tensor_release(*grad);
    *grad = g;
}

/* The leaves in the order their gradients completed. */
typedef struct leaf_order {
    clt_tensor *leaves[8];
    int count;
} leaf_order;

static void note_leaf(void *user, clt_tensor *leaf, clt_tensor **grad)
{
    leaf_order *o = user;
    (void)grad;
    if (o->count < 8)
        o->leaves[o->count++] = leaf;
}

/* A device other than dev for a gradient to cross to: cpu, or for cpu gpu:0 (NULL where there
 * is no OpenCL device). */
static clt_device *other_device(clt_device *dev)
{
    if (!clt__is_host(dev))
        return clt_device_cpu();
    return clt_device_count() > 0 ? clt_device_get("gpu:0") : NULL;
}

/* A leaf used on another device than its own gets its gradient after every other node ran (the
 * copy home waits for that device's queue, so it comes once each device has its work), even
 * where the walk reaches it first: sum((to(b) * (a * e)) * c) completes c, a, e, then b; the
 * gradients are those of the same product on one device. */
START_TEST(test_autograd_copy_home_last)
{
    clt_device *dev = test_device(_i), *other = other_device(dev);
    if (!other)
        return;
    test_live before = test_live_now();
    clt_tensor *a = clt_tensor_full(CLT_SHAPE(4), 2, CLT_F32, dev);
    clt_tensor *e = clt_tensor_full(CLT_SHAPE(4), 3, CLT_F32, dev);
    clt_tensor *c = clt_tensor_full(CLT_SHAPE(4), 5, CLT_F32, dev);
    clt_tensor *b = clt_tensor_full(CLT_SHAPE(4), 7, CLT_F32, other);
    clt_tensor *all[] = {a, e, c, b};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(clt_tensor_set_requires_grad(all[i], true), CLT_OK);
    clt_tensor *bd = clt_tensor_to(b, dev), *ae = clt_mul(a, e), *y = clt_mul(bd, ae);
    clt_tensor *z = clt_mul(y, c), *loss = clt_sum(z, NULL, 0, false);
    leaf_order o = {0};
    ck_assert_int_eq(clt_backward_ex(loss, NULL, false,
                                     &(clt_backward_hooks){.leaf_ready = note_leaf, .user = &o}),
                     CLT_OK);
    ck_assert_int_eq(o.count, 4);
    ck_assert_ptr_eq(o.leaves[0], c);
    ck_assert_ptr_eq(o.leaves[3], b);
    static const double want[4] = {3 * 7 * 5, 2 * 7 * 5, 2 * 3 * 7, 2 * 3 * 5}; /* a e c b */
    for (int i = 0; i < 4; i++) {
        float g[4];
        ck_assert_int_eq(clt_tensor_copy_to_host(clt__grad_of(all[i]), g, sizeof g), CLT_OK);
        for (int j = 0; j < 4; j++)
            ck_assert_msg(g[j] == (float)want[i], "leaf %d: %g, expected %g", i, g[j], want[i]);
    }
    clt_tensor *made[] = {bd, ae, y, z, loss, a, e, c, b};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++)
        clt_tensor_release(made[i]);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* A node that copies a gradient to another device, for work there, runs before the other ready
 * nodes (that device starts its part of the pass sooner): in sum(cat(2 (2 p), to(3 q))), p on
 * one device and q on another, the copy of q's branch runs before p's first multiply, so q's
 * gradient is complete first, although cat's first input is p's; taken in the order they became
 * ready, p's would be. The gradients are the same either way. */
START_TEST(test_autograd_sends_first)
{
    clt_device *dev = test_device(_i), *other = other_device(dev);
    if (!other)
        return;
    test_live before = test_live_now();
    clt_tensor *p = clt_tensor_full(CLT_SHAPE(4), 1, CLT_F32, dev);
    clt_tensor *q = clt_tensor_full(CLT_SHAPE(4), 1, CLT_F32, other);
    ck_assert_int_eq(clt_tensor_set_requires_grad(p, true), CLT_OK);
    ck_assert_int_eq(clt_tensor_set_requires_grad(q, true), CLT_OK);
    clt_tensor *p2 = clt_mul_scalar(p, 2), *p4 = clt_mul_scalar(p2, 2);
    clt_tensor *q3 = clt_mul_scalar(q, 3), *q3d = clt_tensor_to(q3, dev);
    clt_tensor *parts[2] = {p4, q3d}, *joined = clt_cat(parts, 2, 0);
    clt_tensor *loss = clt_sum(joined, NULL, 0, false);
    leaf_order o = {0};
    ck_assert_int_eq(clt_backward_ex(loss, NULL, false,
                                     &(clt_backward_hooks){.leaf_ready = note_leaf, .user = &o}),
                     CLT_OK);
    ck_assert_int_eq(o.count, 2);
    ck_assert_ptr_eq(o.leaves[0], q);
    ck_assert_ptr_eq(o.leaves[1], p);
    clt_tensor *leaves[2] = {p, q};
    static const float want[2] = {4, 3};
    for (int i = 0; i < 2; i++) {
        float g[4];
        ck_assert_int_eq(clt_tensor_copy_to_host(clt__grad_of(leaves[i]), g, sizeof g), CLT_OK);
        for (int j = 0; j < 4; j++)
            ck_assert_msg(g[j] == want[i], "leaf %d: %g, expected %g", i, g[j], want[i]);
    }
    clt_tensor *made[] = {p2, p4, q3, q3d, joined, loss, p, q};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++)
        clt_tensor_release(made[i]);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

/* A hook's gradient that holds the leaf through its own gradient is copied, not adopted as
 * the leaf's grad (which would close a cycle never freed). */
static void give_holding_grad(void *user, clt_tensor *leaf, clt_tensor **grad)
{
    clt_tensor *y = clt_mul_scalar(*grad, 1);
    (void)user;
    if (y && clt_tensor_set_grad(y, leaf) == CLT_OK) {
        clt_tensor_release(*grad);
        *grad = y;
    } else {
        clt_tensor_release(y);
    }
}

START_TEST(test_autograd_hook_gradient_holding_leaf)
{
    clt_device *dev = test_device(_i);
    test_live before = test_live_now();
    clt_tensor *w = clt_tensor_full(CLT_SHAPE(3), 2, CLT_F32, dev);
    ck_assert_int_eq(clt_tensor_set_requires_grad(w, true), CLT_OK);
    clt_tensor *sq = clt_mul(w, w), *loss = clt_sum(sq, NULL, 0, false);
    ck_assert_int_eq(clt_backward_ex(loss, NULL, false,
                                     &(clt_backward_hooks){.leaf_ready = give_holding_grad}),
                     CLT_OK);
    ck_assert_ptr_nonnull(clt__grad_of(w));
    ck_assert_ptr_null(clt__grad_of(clt__grad_of(w)));
    double *g = test_values(clt__grad_of(w));
    ck_assert(g[0] == 4 && g[1] == 4 && g[2] == 4);
    free(g);
    clt_tensor_release(loss), clt_tensor_release(sq), clt_tensor_release(w);
    test_sync_all();
    ck_assert_live_eq(test_live_now(), before);
}
END_TEST

START_TEST(test_autograd_hook_gradient_checked)
{
    clt_device *dev = test_device(_i);
    clt_tensor *w = clt_tensor_full(CLT_SHAPE(64, 64), 3, CLT_F32, dev);
    clt_tensor *wrong = clt_tensor_ones(CLT_SHAPE(1), CLT_F32, dev);
    ck_assert_int_eq(clt_tensor_set_requires_grad(w, true), CLT_OK);
    clt_tensor *sq = clt_mul(w, w), *loss = clt_sum(sq, NULL, 0, false); /* d/dw = 2w = 6 */
    replacing half = {NULL, 0}, bad = {wrong, 0};
    ck_assert_int_eq(clt_backward_ex(loss, NULL, true,
                                     &(clt_backward_hooks){.leaf_ready = replace_grad,
                                                           .user = &half}),
                     CLT_OK);
    ck_assert_int_eq(half.calls, 1);
    double *g = test_values(clt__grad_of(w));
    for (int k = 0; k < 64 * 64; k++)
        ck_assert_double_eq(g[k], 3);
    free(g);
    clt_tensor *kept = clt_tensor_grad(w);
    ck_assert_int_eq(clt_backward_ex(loss, NULL, true,
                                     &(clt_backward_hooks){.leaf_ready = replace_grad,
                                                           .user = &bad}),
                     CLT_ERR_SHAPE);
    ck_assert_error_has("clt_backward: a leaf of shape (64, 64) was given a gradient of shape "
                        "(1,) (by a backward hook)");
    ck_assert_int_eq(bad.calls, 1);
    ck_assert_ptr_eq(clt__grad_of(w), kept); /* unchanged */
    g = test_values(clt__grad_of(w));
    for (int k = 0; k < 64 * 64; k++)
        ck_assert_double_eq(g[k], 3);
    free(g);
    clt_tensor_release(kept);
    clt_tensor_release(loss), clt_tensor_release(sq), clt_tensor_release(wrong);
    clt_tensor_release(w);
}
END_TEST

/* Every operation the graph records has a name and a derivative, and every differentiable
 * elementwise operation records one of them. */
START_TEST(test_autograd_every_op_has_derivative)
{
    ck_assert_ptr_null(clt__derivative(CLT__OP_LEAF));
    ck_assert_str_eq(clt__op_name(CLT__OP_LEAF), "AccumulateGrad");
    for (int op = CLT__OP_LEAF + 1; op < CLT__OP_COUNT; op++) {
        ck_assert_msg(clt__derivative((clt__op)op) != NULL, "op %d (%s) has no derivative", op,
                      clt__op_name((clt__op)op));
        ck_assert_msg(strstr(clt__op_name((clt__op)op), "Backward") != NULL, "op %d: %s", op,
                      clt__op_name((clt__op)op));
    }
    ck_assert_int_eq(clt__op_of_ew(CLT_EW_mul), CLT__OP_mul);
    ck_assert_int_eq(clt__op_of_ew(CLT_EW_where), CLT__OP_where);
    ck_assert_int_eq(clt__op_of_ew(CLT_EW_copy), CLT__OP_LEAF);
    ck_assert_int_eq(clt__op_of_ew(CLT_EW_eq), CLT__OP_LEAF);
    ck_assert_str_eq(clt__op_name(clt__op_of_ew(CLT_EW_add_scalar)), "AddBackward");
}
END_TEST

Suite *suite_autograd(void)
{
    Suite *s = suite_create("autograd");
    TCase *tc = test_case("autograd", 900);
    ADD_DEVICE_TEST(tc, test_autograd_leaves);
    ADD_DEVICE_TEST(tc, test_autograd_accumulation);
    ADD_DEVICE_TEST(tc, test_autograd_grads_not_shared);
    ADD_DEVICE_TEST(tc, test_autograd_view_grad_kept);
    ADD_DEVICE_TEST(tc, test_autograd_in_place);
    ADD_DEVICE_TEST(tc, test_autograd_dtypes);
    ADD_DEVICE_TEST(tc, test_autograd_mlp_matches_cpu);
    ADD_DEVICE_TEST(tc, test_autograd_no_leak);
    ADD_DEVICE_TEST(tc, test_autograd_allocation_failures);
    ADD_DEVICE_TEST(tc, test_autograd_gradients);
    tcase_add_test(tc, test_autograd_deep_graph_release);
    tcase_add_test(tc, test_autograd_deep_grad_chain_release);
    ADD_DEVICE_TEST(tc, test_autograd_hook_gradient_holding_leaf);
    ADD_DEVICE_TEST(tc, test_autograd_copy_home_last);
    ADD_DEVICE_TEST(tc, test_autograd_sends_first);
    ADD_DEVICE_TEST(tc, test_autograd_grad_cycles_refused);
    ADD_DEVICE_TEST(tc, test_autograd_hook_gradient_checked);
    tcase_add_test(tc, test_autograd_every_op_has_derivative);
    suite_add_tcase(s, tc);
    return s;
}
