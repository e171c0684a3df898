/* Operations on tensors: views that share storage, elementwise arithmetic with PyTorch's
 * broadcasting and type promotion, comparisons and selection. Every function that returns a
 * tensor returns a new reference, or NULL with the last error set; the inputs are never
 * changed (except by the in-place forms, named with a trailing underscore). All tensors of one
 * call must be on the same device: nothing is moved behind the caller's back.
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

/* Whether the elements lie in row-major order without gaps. */
CLT_API bool clt_tensor_is_contiguous(const clt_tensor *x);
/* The strides of x, in elements (ndim of them, owned by x). */
CLT_API const int64_t *clt_tensor_strides(const clt_tensor *x);
/* x itself (retained) when contiguous, else a contiguous copy. */
CLT_API clt_tensor *clt_contiguous(clt_tensor *x);
/* The same elements in a new shape; one size may be -1 (inferred). clt_view fails when x's
 * strides do not allow it without a copy; clt_reshape copies then. */
CLT_API clt_tensor *clt_view(clt_tensor *x, int ndim, const int64_t *shape);
CLT_API clt_tensor *clt_reshape(clt_tensor *x, int ndim, const int64_t *shape);
/* Swaps two dimensions; negative dims count from the end. */
CLT_API clt_tensor *clt_transpose(clt_tensor *x, int dim0, int dim1);
/* Reorders the dimensions: dims is a permutation of 0..ndim-1. */
CLT_API clt_tensor *clt_permute(clt_tensor *x, const int *dims);
/* Removes dimension dim if its size is 1 (x unchanged otherwise); clt_squeeze_all removes every
 * dimension of size 1. */
CLT_API clt_tensor *clt_squeeze(clt_tensor *x, int dim);
CLT_API clt_tensor *clt_squeeze_all(clt_tensor *x);
/* Inserts a dimension of size 1 at dim (0..ndim, negative counts from the end). */
CLT_API clt_tensor *clt_unsqueeze(clt_tensor *x, int dim);
/* Elements start .. start+length-1 of dimension dim. */
CLT_API clt_tensor *clt_narrow(clt_tensor *x, int dim, int64_t start, int64_t length);
/* x[..., start:end:step, ...] along dim, Python's rules for negative and out-of-range start and
 * end; step > 0. */
CLT_API clt_tensor *clt_slice(clt_tensor *x, int dim, int64_t start, int64_t end, int64_t step);
/* Broadcasts size-1 dimensions (and new leading ones) to `shape`; -1 keeps a size. No copy. */
CLT_API clt_tensor *clt_expand(clt_tensor *x, int ndim, const int64_t *shape);

/* --- joining ---------------------------------------------------------------------------------- */

/* Concatenates n tensors along an existing dimension / stacks them along a new one. All on one
 * device; dtypes are promoted as above. */
CLT_API clt_tensor *clt_cat(clt_tensor *const *xs, int n, int dim);
CLT_API clt_tensor *clt_stack(clt_tensor *const *xs, int n, int dim);

/* --- elementwise ------------------------------------------------------------------------------ */

CLT_API clt_tensor *clt_add(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_sub(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_mul(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_div(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_pow(clt_tensor *a, clt_tensor *b);
/* Elementwise maximum and minimum; NaN wins, as in PyTorch. */
CLT_API clt_tensor *clt_maximum(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_minimum(clt_tensor *a, clt_tensor *b);

CLT_API clt_tensor *clt_add_scalar(clt_tensor *a, double s);
CLT_API clt_tensor *clt_sub_scalar(clt_tensor *a, double s);
CLT_API clt_tensor *clt_mul_scalar(clt_tensor *a, double s);
CLT_API clt_tensor *clt_div_scalar(clt_tensor *a, double s);
CLT_API clt_tensor *clt_pow_scalar(clt_tensor *a, double s);

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
CLT_API clt_tensor *clt_silu(clt_tensor *x);
/* min(max(x, lo), hi) in x's dtype; NaN stays NaN. */
CLT_API clt_tensor *clt_clamp(clt_tensor *x, double lo, double hi);

/* Comparisons give bool tensors (inputs promoted as above). */
CLT_API clt_tensor *clt_eq(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_ne(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_lt(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_le(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_gt(clt_tensor *a, clt_tensor *b);
CLT_API clt_tensor *clt_ge(clt_tensor *a, clt_tensor *b);

/* cond ? a : b, elementwise, broadcast over all three; cond must be bool. */
CLT_API clt_tensor *clt_where(clt_tensor *cond, clt_tensor *a, clt_tensor *b);

/* --- reductions --------------------------------------------------------------------------------- */

/* --- matrix products ------------------------------------------------------------------------------ */

/* --- in place: x is changed and returned as a status; x keeps its dtype -------------------- */

/* x += b / x *= b (b broadcast to x's shape; the result converted to x's dtype as PyTorch's
 * in-place forms do, except that a floating result into an integer x is an error). */
CLT_API clt_status clt_add_(clt_tensor *x, clt_tensor *b);
CLT_API clt_status clt_mul_(clt_tensor *x, clt_tensor *b);
/* Every element of x (views included) set to value, converted to x's dtype. */
CLT_API clt_status clt_fill_(clt_tensor *x, double value);
/* x's elements set from src, broadcast to x's shape, converted to x's dtype, from any device. */
CLT_API clt_status clt_copy_(clt_tensor *x, clt_tensor *src);

#ifdef __cplusplus
}
#endif

#endif
