/* Operations on tensors: views that share storage, elementwise arithmetic with PyTorch's
 * broadcasting and type promotion, comparisons and selection, reductions, matrix products and
 * neural-network functions. Every function that returns a tensor returns a new reference, or
 * NULL with the last error set; the inputs are never changed (except by the in-place forms,
 * named with a trailing underscore, and clt_batch_norm's running statistics). All tensors of
 * one call must be on the same device (CLT_ERR_DEVICE_MISMATCH otherwise; only clt_copy_ takes
 * a source from another device): nothing is moved behind the caller's back. Common errors:
 * CLT_ERR_INVALID_ARGUMENT for a NULL tensor or a dimension out of range, CLT_ERR_SHAPE for
 * shapes that do not broadcast or fit, CLT_ERR_DTYPE for a dtype an operation does not take.
 *
 * Type promotion (binary operations and where), as PyTorch does it:
 *   - the same dtype gives that dtype;
 *   - kinds rank bool < integer < floating; the higher kind's dtype wins
 *     (i64 + f16 -> f16, bool + u8 -> u8);
 *   - two integers give the wider (u8 + i32 -> i32, i32 + i64 -> i64);
 *   - two floats give the wider, and f16 + bf16 -> f32.
 * A `double` scalar acts as PyTorch's Python float: with a floating tensor the result keeps the
 * tensor's dtype; with an integer or bool tensor the result is f32.
 * Division (div) and the floating functions (exp ... silu, pow with a floating side) turn
 * integer and bool inputs into f32 first, as PyTorch does. f16 and bf16 compute in f32 and
 * round once to nearest even when stored. Integer arithmetic wraps modulo 2^bits. */
#ifndef CLTENSOR_OPS_H
#define CLTENSOR_OPS_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- views: share x's storage --------------------------------------------------------------- */

/* x itself (retained) when contiguous, else a contiguous copy: a new reference either way. */
CLT_API clt_tensor *clt_contiguous(clt_tensor *x);
/* The same elements in a new shape; one size may be -1 (inferred); CLT_ERR_SHAPE when the
 * element counts differ or the sizes multiply past INT64_MAX (zeros taken as ones). clt_view fails (CLT_ERR_SHAPE) when x's strides do not allow it
 * without a copy; clt_reshape then returns a view of a contiguous copy. */
CLT_API clt_tensor *clt_view(clt_tensor *x, int ndim, const int64_t *shape);
CLT_API clt_tensor *clt_reshape(clt_tensor *x, int ndim, const int64_t *shape);
/* Swaps two dimensions; negative dims count from the end. */
CLT_API clt_tensor *clt_transpose(clt_tensor *x, int dim0, int dim1);
/* Reorders the dimensions: dims is a permutation of 0..ndim-1 (negative entries count from the
 * end; a repeated one is CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_tensor *clt_permute(clt_tensor *x, const int *dims);
/* A view without dimension dim if its size is 1 (else a view of x's shape); clt_squeeze_all
 * removes every dimension of size 1. */
CLT_API clt_tensor *clt_squeeze(clt_tensor *x, int dim);
CLT_API clt_tensor *clt_squeeze_all(clt_tensor *x);
/* Inserts a dimension of size 1 at dim (0..ndim, negative counts from the end); CLT_ERR_SHAPE
 * when x already has CLT_MAX_DIMS dimensions. */
CLT_API clt_tensor *clt_unsqueeze(clt_tensor *x, int dim);
/* Elements start .. start+length-1 of dimension dim; CLT_ERR_INVALID_ARGUMENT when they are
 * not all in it (start + length past INT64_MAX included) or x is 0-d. */
CLT_API clt_tensor *clt_narrow(clt_tensor *x, int dim, int64_t start, int64_t length);
/* x[..., start:end:step, ...] along dim, Python's rules for negative and out-of-range start and
 * end (any step up to INT64_MAX: x[0:5:huge] is x[0:1]); CLT_ERR_INVALID_ARGUMENT for step <= 0
 * or a 0-d x. */
CLT_API clt_tensor *clt_slice(clt_tensor *x, int dim, int64_t start, int64_t end, int64_t step);
/* Broadcasts size-1 dimensions (and new leading ones) to `shape`; -1 keeps a size. No copy;
 * CLT_ERR_SHAPE for a shape x cannot be expanded to or one of more than INT64_MAX elements. */
CLT_API clt_tensor *clt_expand(clt_tensor *x, int ndim, const int64_t *shape);

/* --- joining ---------------------------------------------------------------------------------- */

/* Concatenates n tensors along an existing dimension / stacks them along a new one. All on one
 * device, of the same shape but in dim (cat) or of one shape (stack) (CLT_ERR_SHAPE); dtypes
 * are promoted as above. CLT_ERR_INVALID_ARGUMENT for NULL xs or n < 1; clt_cat refuses 0-d
 * tensors and sizes in dim that add up past INT64_MAX (CLT_ERR_SHAPE). */
CLT_API clt_tensor *clt_cat(clt_tensor *const *xs, int n, int dim);
CLT_API clt_tensor *clt_stack(clt_tensor *const *xs, int n, int dim);

/* --- elementwise ------------------------------------------------------------------------------ */

/* a + b, a - b, a * b, a / b and a ** b elementwise, broadcast and promoted as above. sub and
 * pow refuse two bool inputs (CLT_ERR_DTYPE); div gives f32 for integer and bool inputs. An
 * integer pow refuses a negative exponent (CLT_ERR_INVALID_ARGUMENT, as PyTorch), which it
 * learns by reading the exponent's smallest element back from its device. */
CLT_API clt_tensor *clt_add(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_sub(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_mul(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_div(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_pow(clt_tensor *a, clt_tensor *b);
/* Elementwise maximum and minimum; NaN wins, as in PyTorch. */
CLT_API clt_tensor *clt_maximum(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_minimum(clt_tensor *a, clt_tensor *b);

/* a + s, a - s, a * s, a / s and a ** s, with s a Python float as above. */
CLT_API clt_tensor *clt_add_scalar(clt_tensor *a, double s);
CLT_API clt_tensor *clt_sub_scalar(clt_tensor *a, double s);
CLT_API clt_tensor *clt_mul_scalar(clt_tensor *a, double s);
CLT_API clt_tensor *clt_div_scalar(clt_tensor *a, double s);
CLT_API clt_tensor *clt_pow_scalar(clt_tensor *a, double s);

/* -x, |x| and relu(x) = max(x, 0) in x's dtype (CLT_ERR_DTYPE for bool); exp ... silu, the
 * floating functions, give f32 for integer and bool inputs. */
CLT_API clt_tensor *clt_neg(clt_tensor *x);
CLT_API clt_tensor *clt_abs(clt_tensor *x);
CLT_API clt_tensor *clt_exp(clt_tensor *x);
CLT_API clt_tensor *clt_log(clt_tensor *x);
CLT_API clt_tensor *clt_sqrt(clt_tensor *x);
CLT_API clt_tensor *clt_rsqrt(clt_tensor *x);
CLT_API clt_tensor *clt_sin(clt_tensor *x);
CLT_API clt_tensor *clt_cos(clt_tensor *x);
CLT_API clt_tensor *clt_tanh(clt_tensor *x);
CLT_API clt_tensor *clt_sigmoid(clt_tensor *x);
CLT_API clt_tensor *clt_relu(clt_tensor *x);
/* x * Phi(x) with the exact (erf) form, PyTorch's default. */
CLT_API clt_tensor *clt_gelu(clt_tensor *x);
/* F.gelu(x, approximate="tanh"), GPT-2's: x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2. */
CLT_API clt_tensor *clt_gelu_tanh(clt_tensor *x);
CLT_API clt_tensor *clt_silu(clt_tensor *x);
/* min(max(x, lo), hi) in x's dtype (CLT_ERR_DTYPE for bool); NaN stays NaN. */
CLT_API clt_tensor *clt_clamp(clt_tensor *x, double lo, double hi);
/* F.prelu(x, weight): x where x > 0, else weight * x, differentiable in both. weight (1-D, or
 * 0-d) holds one slope for every element or C, one per channel (x's dimension 1; an input of
 * fewer than 2 dimensions takes one); x floating, weight of its dtype and on its device.
 * CLT_ERR_SHAPE for another number of slopes, CLT_ERR_DTYPE, CLT_ERR_DEVICE_MISMATCH. */
CLT_API clt_tensor *clt_prelu(clt_tensor *x, clt_tensor *weight);

/* Comparisons give bool tensors (inputs promoted as above). */
CLT_API clt_tensor *clt_eq(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_ne(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_lt(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_le(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_gt(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_ge(clt_tensor *a, clt_tensor *b);

/* cond ? a : b, elementwise, broadcast over all three, a and b promoted as above; cond must be
 * bool (CLT_ERR_DTYPE). */
CLT_API clt_tensor *clt_where(clt_tensor *cond, clt_tensor *a, clt_tensor *b);

/* torch.addcmul: input + value * t1 * t2 elementwise in one pass, broadcast over all three and
 * promoted as above. CLT_ERR_DTYPE for bool; CLT_ERR_INVALID_ARGUMENT for a value that is not
 * an integer when the dtype is. */
CLT_API clt_tensor *clt_addcmul(clt_tensor *input, clt_tensor *t1, clt_tensor *t2, double value);

/* --- reductions ------------------------------------------------------------------------------- */

/* Reductions over `dims` (ndims of them, negative counting from the end; ndims 0 reduces every
 * dimension; dims may be NULL then): the reduced dimensions are removed, or kept with size 1
 * when keepdim is true. Each returns a new reference. Errors: CLT_ERR_INVALID_ARGUMENT for a
 * NULL tensor, ndims outside 0..CLT_MAX_DIMS, NULL dims with ndims > 0, a dim out of range or
 * repeated. Floating sums are compensated: their error does not grow with the number of
 * elements. */

/* Sum: i64 for integer and bool inputs (wrapping), f16 and bf16 summed in f32 and rounded once
 * to their dtype, f32 and f64 kept. 0 over no elements. */
CLT_API clt_tensor *clt_sum(clt_tensor *x, const int *dims, int ndims, bool keepdim);
/* Arithmetic mean in x's dtype (f16 and bf16 computed in f32); NaN over no elements.
 * CLT_ERR_DTYPE for integer and bool inputs, as PyTorch (convert them first). */
CLT_API clt_tensor *clt_mean(clt_tensor *x, const int *dims, int ndims, bool keepdim);
/* Largest / smallest element in x's dtype (torch.amax, torch.amin); NaN wins. CLT_ERR_SHAPE
 * when a reduced dimension has size 0. */
CLT_API clt_tensor *clt_amax(clt_tensor *x, const int *dims, int ndims, bool keepdim);
CLT_API clt_tensor *clt_amin(clt_tensor *x, const int *dims, int ndims, bool keepdim);
/* torch.max(x, dim) / torch.min(x, dim): the largest / smallest elements along dim in x's
 * dtype, and, if indices is not NULL, in *indices a new i64 tensor of their positions (those of
 * clt_argmax / clt_argmin; NULL on failure). The gradient goes to the element each index
 * names, as in PyTorch (clt_amax shares it among equal elements). A 0-d x is its own maximum at
 * index 0. The errors of clt_argmax. */
CLT_API clt_tensor *clt_max(clt_tensor *x, int dim, bool keepdim, clt_tensor **indices);
CLT_API clt_tensor *clt_min(clt_tensor *x, int dim, bool keepdim, clt_tensor **indices);
/* The i64 index along `dim` of the largest / smallest element, the first among equal ones; a
 * NaN counts as the largest and the smallest (the first NaN wins). CLT_ERR_SHAPE for a
 * dimension of size 0. */
CLT_API clt_tensor *clt_argmax(clt_tensor *x, int dim, bool keepdim);
CLT_API clt_tensor *clt_argmin(clt_tensor *x, int dim, bool keepdim);
/* The same over the flattened tensor (PyTorch's dim=None): a 0-d i64 index in row-major order.
 * CLT_ERR_SHAPE for a tensor without elements. */
CLT_API clt_tensor *clt_argmax_all(clt_tensor *x);
CLT_API clt_tensor *clt_argmin_all(clt_tensor *x);
/* Variance sum((x - mean)^2) / max(0, N - correction) over the N reduced elements (correction
 * 1: unbiased, PyTorch's default), by two passes; std is its square root. In x's dtype (f16
 * and bf16 computed in f32); NaN over no elements. CLT_ERR_DTYPE for integer and bool inputs. */
CLT_API clt_tensor *clt_var(clt_tensor *x, const int *dims, int ndims, int64_t correction,
                            bool keepdim);
CLT_API clt_tensor *clt_std(clt_tensor *x, const int *dims, int ndims, int64_t correction,
                            bool keepdim);
/* log(sum(exp(x))) computed as max + log(sum(exp(x - max))): no overflow. In x's dtype for
 * floating inputs (f16 and bf16 computed in f32), f32 for integer and bool inputs as PyTorch;
 * -inf over no elements. */
CLT_API clt_tensor *clt_logsumexp(clt_tensor *x, const int *dims, int ndims, bool keepdim);

/* --- matrix products -------------------------------------------------------------------------- */

/* a @ b as torch.matmul (1-D x 1-D gives a 0-d dot product; a 1-D a / b gets a 1 prepended /
 * appended, then removed; N-D batches broadcast), a new reference. f32 or f64, one dtype (no
 * promotion) and device; else CLT_ERR_DTYPE / _DEVICE_MISMATCH; CLT_ERR_SHAPE for 0-d, inner
 * sizes that differ or batch dimensions that do not broadcast. */
CLT_API clt_tensor *clt_matmul(clt_tensor *a, clt_tensor *b);
/* x @ weight^T + bias, as torch.nn.functional.linear: x (..., in), weight (out, in), bias (out)
 * or NULL; gives (..., out), a new reference. The dtype and device rules and errors of
 * clt_matmul, for all three tensors. */
CLT_API clt_tensor *clt_linear(clt_tensor *x, clt_tensor *weight, clt_tensor *bias);

/* --- neural-network functions ----------------------------------------------------------------- */

/* softmax / log_softmax along dim (negative counts from the end), as torch.softmax, in x's
 * dtype; floating dtypes only (CLT_ERR_DTYPE otherwise). */
CLT_API clt_tensor *clt_softmax(clt_tensor *x, int dim);
CLT_API clt_tensor *clt_log_softmax(clt_tensor *x, int dim);

/* How a loss reduces its per-element values (PyTorch's reduction=); another value is
 * CLT_ERR_INVALID_ARGUMENT. */
typedef enum clt_reduction {
    CLT_REDUCTION_MEAN = 0, /* over the elements that count (not ignored) */
    CLT_REDUCTION_SUM = 1,
    CLT_REDUCTION_NONE = 2,
} clt_reduction;

/* The options of the class losses, as PyTorch's keyword arguments. Start from
 * clt_loss_options_default() (PyTorch's defaults) and change the fields you need; a field then
 * means what it holds (ignore_index 0 ignores class 0). NULL options mean the defaults. A
 * struct that did not start from the defaults (its `init` unset) is refused with
 * CLT_ERR_INVALID_ARGUMENT. */
typedef struct clt_loss_options {
    uint32_t init;            /* set by clt_loss_options_default() */
    clt_reduction reduction;  /* CLT_REDUCTION_MEAN */
    int64_t ignore_index;     /* -100: targets equal to it count for nothing */
    double label_smoothing;   /* 0; in [0, 1], clt_cross_entropy only */
    clt_tensor *weight;       /* NULL, or one floating weight per class (C,) on the input's
                               * device (borrowed; read as constants: no gradient reaches it) */
} clt_loss_options;
/* PyTorch's defaults: mean, ignore_index -100, no smoothing, no weights. */
CLT_API clt_loss_options clt_loss_options_default(void);
/* Negative log-likelihood of class-index targets, torch.nn.functional.nll_loss: floating
 * log_probs (N, C) with i64 target (N,), (C,) with a 0-d target, or (N, C, d1, ...) with
 * (N, d1, ...) (else CLT_ERR_SHAPE, CLT_ERR_DTYPE). Each counted element's loss is
 * -weight[t] * log_probs[t]; the mean divides by the sum of the counted elements' weights (their
 * number without weights); reduction none gives the targets' shape. Targets equal to
 * ignore_index count for nothing; any other target outside 0..C-1 is CLT_ERR_INVALID_ARGUMENT
 * naming it. With no class (C = 0, every target ignored) the mean over nothing is NaN and the
 * sum 0, as PyTorch's. The targets (and weights) are read on the host to be checked. */
CLT_API clt_tensor *clt_nll_loss(clt_tensor *log_probs, clt_tensor *target,
                                 const clt_loss_options *options);
/* torch.nn.functional.cross_entropy with class-index targets: nll_loss(log_softmax(logits))
 * over the class dimension (1, or 0 for 1-D logits), with label smoothing as PyTorch's:
 * (1 - e) * nll + e / C * (the smoothing term -sum_c weight[c] * log_probs[c], reduced as nll
 * is). The errors of clt_nll_loss. */
CLT_API clt_tensor *clt_cross_entropy(clt_tensor *logits, clt_tensor *target,
                                      const clt_loss_options *options);
/* (input - target)^2, broadcast, reduced; mean divides by the broadcast element count.
 * Integer and bool inputs (both) are converted to f32 first. */
CLT_API clt_tensor *clt_mse_loss(clt_tensor *input, clt_tensor *target, clt_reduction reduction);

/* The slices of x along dim picked by a 1-D (or 0-d) i64 index (CLT_ERR_DTYPE for another
 * dtype, CLT_ERR_SHAPE for more dimensions or a 0-d x), checked on the host:
 * CLT_ERR_INVALID_ARGUMENT names an index outside the dimension. */
CLT_API clt_tensor *clt_index_select(clt_tensor *x, int dim, clt_tensor *index);
/* torch.cumsum(x, dim): running sums along dim (negative counts from the end), in order from the
 * start: floating x keeps its dtype (f16 and bf16 add in f32), integer and bool x give i64.
 * The gradient is the running sum of the gradient from the other end. */
CLT_API clt_tensor *clt_cumsum(clt_tensor *x, int dim);
/* torch.sort(x, dim, descending, stable=True): the values in order along dim, equal ones in
 * their original order, NaN above every number; *indices (if not NULL) receives their i64
 * positions along dim. Any dtype; the gradient goes to the elements each value came from. One
 * work-item a row sorts it (a merge sort), so long rows sort fastest on cpu. */
CLT_API clt_tensor *clt_sort(clt_tensor *x, int dim, bool descending, clt_tensor **indices);
/* torch.argsort(x, dim, descending, stable=True): the indices of clt_sort. */
CLT_API clt_tensor *clt_argsort(clt_tensor *x, int dim, bool descending);
/* torch.topk(x, k, dim, largest, sorted=True): the k largest (smallest) values along dim in
 * order, ties in their original order, and their i64 indices into *indices (if not NULL).
 * CLT_ERR_INVALID_ARGUMENT for k outside 0..x.shape[dim]. */
CLT_API clt_tensor *clt_topk(clt_tensor *x, int64_t k, int dim, bool largest,
                             clt_tensor **indices);
/* torch.gather(x, dim, index): out[i][j][k] = x[i][index[i][j][k]][k] for dim 1, and so on; index
 * is i64 on x's device with x's number of dimensions and no size above x's but along dim. The
 * indices are read to the host and checked (CLT_ERR_INVALID_ARGUMENT names one out of range);
 * the gradient adds into x's elements, repeated indices summing. */
CLT_API clt_tensor *clt_gather(clt_tensor *x, int dim, clt_tensor *index);
/* x.masked_fill(mask, value): value where the bool mask (broadcast to x's shape) is true, x
 * elsewhere; the gradient reaches x where the mask is false. */
CLT_API clt_tensor *clt_masked_fill(clt_tensor *x, clt_tensor *mask, double value);
/* torch.multinomial(probs, num_samples, replacement): i64 category indices drawn from the
 * default generator (clt_manual_seed) by the weights of each row of a floating (C,) or (N, C)
 * probs (not normalised: any non-negative finite weights with a positive sum), of shape
 * (num_samples,) or (N, num_samples). With replacement: cumulative sums against uniform
 * numbers, needing N x num_samples x C comparisons; without: the order of exponential races (a
 * topk), up to the number of nonzero weights. CLT_ERR_INVALID_ARGUMENT for a negative, NaN or
 * infinite weight, a row without weight, or more samples than nonzero weights without
 * replacement. */
CLT_API clt_tensor *clt_multinomial(clt_tensor *probs, int64_t num_samples, bool replacement);

/* weight (V, D) rows for i64 indices of any shape: the result has shape indices.shape + (D,).
 * The errors of clt_index_select; CLT_ERR_SHAPE when weight is not 2-D or indices have
 * CLT_MAX_DIMS dimensions. */
CLT_API clt_tensor *clt_embedding(clt_tensor *indices, clt_tensor *weight);

/* 2-D convolution options, [0] for height and [1] for width: clt_conv2d_options_default()
 * holds PyTorch's (stride 1, padding 0, dilation 1, groups 1), as do NULL options. A stride,
 * dilation or groups of 0, which no convolution has, also means its default, so that a zeroed
 * struct is the default convolution too. */
typedef struct clt_conv2d_options {
    int stride[2], padding[2], dilation[2], groups;
} clt_conv2d_options;
/* Stride 1, padding 0, dilation 1, groups 1. */
CLT_API clt_conv2d_options clt_conv2d_options_default(void);

/* torch.nn.functional.conv2d: x (N, C, H, W) or unbatched (C, H, W), weight (O, C / groups, kh, kw), bias (O,) or
 * NULL; f32 or f64 (as matrix products), one dtype. CLT_ERR_SHAPE names the shapes that do not
 * fit (or a kernel larger than the padded input); CLT_ERR_INVALID_ARGUMENT for a negative
 * option. */
CLT_API clt_tensor *clt_conv2d(clt_tensor *x, clt_tensor *weight, clt_tensor *bias,
                               const clt_conv2d_options *options);

/* Transposed 2-D convolution options ([0] height, [1] width), from
 * clt_conv_transpose2d_options_default() (stride 1, padding 0, output padding 0, dilation 1,
 * groups 1; NULL options are those). */
typedef struct clt_conv_transpose2d_options {
    int stride[2], padding[2], output_padding[2], dilation[2], groups;
} clt_conv_transpose2d_options;
/* Stride 1, padding 0, output padding 0, dilation 1, groups 1. */
CLT_API clt_conv_transpose2d_options clt_conv_transpose2d_options_default(void);

/* F.conv_transpose2d: x (N, C, H, W) or (C, H, W), weight (C, O / groups, kh, kw), bias (O,) or
 * NULL, floating; output (N, O, (H - 1) s - 2 p + d (kh - 1) + output_padding + 1, ...). Each
 * input element adds weight times itself to the output window at (h s - p, w s - p). Computed
 * as a stride-1 convolution of the input spread by the stride (zeros between elements) with the
 * flipped kernel, so it does stride^2 times the arithmetic needed, and differentiable through
 * those operations. CLT_ERR_INVALID_ARGUMENT names shapes or options that do not fit
 * (output_padding must be below the stride or the dilation, as PyTorch's). */
CLT_API clt_tensor *clt_conv_transpose2d(clt_tensor *x, clt_tensor *weight, clt_tensor *bias,
                                         const clt_conv_transpose2d_options *options);

/* 2-D pooling options: kernel is required; stride 0 means the kernel size, dilation 0 means 1
 * (max pooling only); padding at most half the kernel. Average pooling divides by the whole
 * window unless exclude_padding (PyTorch's count_include_pad=False). ceil_mode rounds the output
 * size up as PyTorch's does: one more window where input is left over, if that window starts
 * inside the input or its left padding; its average divides by its taps inside the padded input
 * (or, with exclude_padding, inside the input). */
typedef struct clt_pool2d_options {
    int kernel[2], stride[2], padding[2], dilation[2];
    bool exclude_padding;
    bool ceil_mode;
} clt_pool2d_options;
/* PyTorch's pooling defaults for a kernel_h x kernel_w window: stride the kernel's size, padding
 * 0, dilation 1, padding counted in averages, no ceil mode. */
CLT_API clt_pool2d_options clt_pool2d_options_default(int kernel_h, int kernel_w);

/* Max pooling (NaN wins; a window wholly in the padding gives -inf, index -1) and average
 * pooling over a floating (N, C, H, W) or unbatched (C, H, W) x. If indices is not NULL it receives a new i64 tensor
 * of the flat position (within each H x W plane) of every maximum, as PyTorch's
 * return_indices, or NULL on failure. CLT_ERR_INVALID_ARGUMENT for NULL or invalid options or
 * an x that is not 3-D or 4-D; CLT_ERR_SHAPE for a window that does not fit. */
CLT_API clt_tensor *clt_max_pool2d(clt_tensor *x, const clt_pool2d_options *options,
                                   clt_tensor **indices);
CLT_API clt_tensor *clt_avg_pool2d(clt_tensor *x, const clt_pool2d_options *options);

/* F.adaptive_avg_pool2d: the out_h x out_w averages of PyTorch's adaptive windows over a
 * floating (N, C, H, W) or (C, H, W) x (window i of n inputs: floor(i n / out) ..
 * ceil((i + 1) n / out) - 1). When the sizes divide, one average pooling; otherwise, along each
 * dimension, a mean per window or, for many short windows, one weighted gather per position of
 * the longest. CLT_ERR_INVALID_ARGUMENT for another ndim, a size that is not positive or empty
 * H or W; an output too large for the device is refused before any work (as clt_pad's). */
CLT_API clt_tensor *clt_adaptive_avg_pool2d(clt_tensor *x, int out_h, int out_w);

/* The modes of clt_pad and clt_interpolate2d. */
typedef enum clt_pad_mode {
    CLT_PAD_CONSTANT,
    CLT_PAD_REFLECT,
    CLT_PAD_REPLICATE,
    CLT_PAD_CIRCULAR
} clt_pad_mode;
typedef enum clt_interpolate_mode {
    CLT_INTERPOLATE_NEAREST,
    CLT_INTERPOLATE_BILINEAR
} clt_interpolate_mode;

/* F.pad(x, pad, mode, value): pad[0] and pad[1] elements before and after the last dimension,
 * pad[2] and pad[3] around the one before it, and so on (npad even, at most 2 a dimension, each
 * >= 0). CONSTANT fills with value; REFLECT mirrors without repeating the edge (pads below the
 * size); REPLICATE repeats the edge; CIRCULAR wraps around (pads at most the size). Composed
 * from cat and index_select, so any dtype on any device and differentiable. An output whose
 * bytes overflow is CLT_ERR_INVALID_ARGUMENT, one beyond the device's largest allocation or
 * CLT_DEVICE_MEMORY_LIMIT out of (device) memory, both before any work; an empty x gives its
 * empty output at once. */
CLT_API clt_tensor *clt_pad(clt_tensor *x, int npad, const int64_t *pad, clt_pad_mode mode,
                            double value);

/* F.interpolate(x, size=(out_h, out_w), mode, align_corners) for a floating (N, C, H, W) or
 * (C, H, W) x: NEAREST takes element floor(o * in / out) (PyTorch's "nearest"); BILINEAR
 * weighs the two neighbours of PyTorch's source coordinate ((o + 0.5) in / out - 0.5, at least
 * 0; with align_corners o (in - 1) / (out - 1)). One dimension, then the other (the order that
 * keeps the step between them smaller), each an index_select (and for bilinear a weighted sum);
 * differentiable. Outputs too large are refused, and empty ones returned, as clt_pad's. */
CLT_API clt_tensor *clt_interpolate2d(clt_tensor *x, int64_t out_h, int64_t out_w,
                                      clt_interpolate_mode mode, bool align_corners);

/* Batch normalisation of a floating x (N, C, ...) per channel. Training: normalises with the
 * batch's mean and biased variance and, when given, updates running_mean and running_var in
 * place (running = (1 - momentum) * running + momentum * batch, unbiased variance); evaluation
 * uses the running statistics (CLT_ERR_INVALID_ARGUMENT without them). weight and bias (C,) may
 * be NULL; CLT_ERR_SHAPE for x below 2-D or statistics that are not (C,). */
CLT_API clt_tensor *clt_batch_norm(clt_tensor *x, clt_tensor *running_mean,
                                   clt_tensor *running_var, clt_tensor *weight, clt_tensor *bias,
                                   bool training, double momentum, double eps);
/* Layer normalisation of a floating x over its last normalized_ndim dimensions (1..ndim, else
 * CLT_ERR_INVALID_ARGUMENT; biased variance); weight and bias have those dimensions' shape
 * (CLT_ERR_SHAPE), or are NULL. */
CLT_API clt_tensor *clt_layer_norm(clt_tensor *x, int normalized_ndim, clt_tensor *weight,
                                   clt_tensor *bias, double eps);
/* F.scaled_dot_product_attention's options. clt_attention_options_default() holds PyTorch's
 * defaults, as do NULL options. */
typedef struct clt_attention_options {
    clt_tensor *mask; /* NULL; a bool mask (true: take part) or an additive one of q's dtype,
                       * broadcast to (..., L, S): padding masks (N, 1, 1, S) included */
    bool causal;      /* false; true: query i attends to keys j <= i (is_causal, aligned at the
                       * top left as PyTorch's: with a KV cache, give the new queries no mask) */
    double scale;     /* 0 means PyTorch's default 1 / sqrt(E) (scale=None) */
} clt_attention_options;
/* No mask, not causal, scale 1 / sqrt(E). */
CLT_API clt_attention_options clt_attention_options_default(void);
/* softmax(q k^T * scale + mask) v, as F.scaled_dot_product_attention (without dropout): q
 * (..., L, E), k (..., S, E), v (..., S, D) with the same leading dimensions (batch, heads)
 * give (..., L, D). One device operation: each query row's scores, softmax and weighted sum
 * are computed in one pass without the L x S matrix; the backward pass recomputes it. A row
 * whose every key is masked gives NaN, as PyTorch. f32 and f64 (f16 and bf16 computed in f32);
 * one dtype and device (CLT_ERR_DTYPE, CLT_ERR_DEVICE_MISMATCH); CLT_ERR_SHAPE for shapes that
 * do not fit or a mask that does not broadcast; CLT_ERR_INVALID_ARGUMENT for a mask together
 * with causal or a negative or infinite scale. Gradients reach q, k, v and an additive mask. */
CLT_API clt_tensor *clt_scaled_dot_product_attention(clt_tensor *q, clt_tensor *k, clt_tensor *v,
                                                     const clt_attention_options *options);

/* Zeroes each element of a floating x with probability p (0..1, else CLT_ERR_INVALID_ARGUMENT)
 * and scales the rest by 1 / (1 - p) when training; x itself (retained) when not training or p
 * is 0; x * 0 when p is 1 (recorded, as in PyTorch: the gradient is 0). The mask comes from
 * the default generator (Philox): after the same clt_manual_seed every device drops the same
 * elements. */
CLT_API clt_tensor *clt_dropout(clt_tensor *x, double p, bool training);

/* --- in place: x is changed, the result is a status; x keeps its shape and dtype ------------- */
/* Each returns CLT_OK or the error; a failed check or allocation leaves x unchanged. Errors:
 * CLT_ERR_INVALID_ARGUMENT for NULL, for an x that is a broadcast view (elements sharing
 * memory), or while recording when x or an input requires grad (autograd.h). */

/* x += b / x *= b (b broadcast to x's shape, else CLT_ERR_SHAPE; the result converted to x's
 * dtype as PyTorch's in-place forms do, except that a result of a higher kind than x's, such as
 * a floating result into an integer x, is CLT_ERR_DTYPE). */
CLT_API clt_status clt_add_(clt_tensor *x, clt_tensor *b);
CLT_API clt_status clt_mul_(clt_tensor *x, clt_tensor *b);
/* Every element of x (views included) set to value, converted to x's dtype. */
CLT_API clt_status clt_fill_(clt_tensor *x, double value);
/* x's elements set from src, broadcast to x's shape (else CLT_ERR_SHAPE), converted to x's
 * dtype, from any device. */
CLT_API clt_status clt_copy_(clt_tensor *x, clt_tensor *src);

#ifdef __cplusplus
}
#endif

#endif
