/* The elementwise operations, shared by the OpenCL kernels (cl/elementwise.cl) and the host
 * backend: one table, so that both sides compute the same expressions. x, y, z are the loaded
 * inputs and s0, s1 the scalar parameters, all of the compute type: float (f32, f16, bf16),
 * double (f64) or clt_i64 (integers and bool). The including file defines the math functions
 * (OpenCL's builtins, or <tgmath.h> on the host) and clt_rsqrt; clt_ipow and clt_bits_i64 come
 * from scalar.cl and the preludes. This file holds only macros, so any C file may include it.
 *
 * X(name, inputs, floating expression, integer expression, result)
 *   inputs: how many tensor inputs; result: T (the dtype) or B (bool).
 * Two more operations have kernels of their own: copy (the stored bits, untouched) and where
 * (x ? y : z with a bool x). Their numbers follow the table's (CLT_EW_COPY, CLT_EW_WHERE).
 * Integer arithmetic goes through clt_u64 so that it wraps instead of overflowing. */

#define CLT_WRAP(e) clt_bits_i64((clt_u64)(e))
/* All ones for a negative integer, else 0, from its sign bit alone: Mesa 22's llvmpipe
 * compares a 64-bit integer with a constant as if both were unsigned. */
#define CLT_SIGN_MASK(x) (CLT_U64C(0) - ((clt_u64)(x) >> 63))
/* min(max(x, lo), hi), as PyTorch: hi when lo > hi; NaN stays NaN. */
#define CLT_CLAMP(x, lo, hi) (((x) < (lo) ? (lo) : (x)) > (hi) ? (hi) : ((x) < (lo) ? (lo) : (x)))

/* The derivatives of gelu (Phi(x) + x phi(x)) and silu (s (1 + x (1 - s)), s = sigmoid(x)). */
#define CLT_GELU_SLOPE(x)                                                                      \
    ((erf((x) * (CT)0.70710678118654752440) + 1) / 2 +                                          \
     (x) * exp(-(x) * (x) / 2) * (CT)0.39894228040143267794)
#define CLT_SILU_SLOPE(x, s) ((s) * (1 + (x) * (1 - (s))))
/* GELU's tanh form, 0.5 x (1 + tanh(u)) with u = sqrt(2 / pi) (x + 0.044715 x^3), and its
 * derivative 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715 x^2), t = tanh(u). */
#define CLT_GELU_TANH_U(x) ((CT)0.79788456080286535588 * ((x) + (CT)0.044715 * (x) * (x) * (x)))
#define CLT_GELU_TANH_SLOPE(x, t)                                                              \
    ((1 + (t)) / 2 +                                                                           \
     (x) * (1 - (t) * (t)) * (CT)0.39894228040143267794 * (1 + (CT)0.134145 * (x) * (x)))

/* The operations, in groups (the OpenCL kernels of one group are built together,
 * cl/elementwise.cl): binary (with addcmul, z + s0 x y, of three inputs, and two floating only:
 * mul_rsqrt, x / sqrt(y + s0), a BatchNorm's scale, and prelu, x where x > 0 else the slope y
 * times x), scalar, sign (defined on integers too), math (floating dtypes only), compare and
 * backward (floating only). The operations' derivatives (name_backward) take the output's
 * gradient as x and the saved input (gelu, silu, abs, clamp, prelu) or output (relu, sigmoid,
 * tanh) as y; prelu_backward takes the slope as z and gives the input's gradient,
 * prelu_weight_backward each element's part of the slope's. */
#define CLT_EW_OPS(X)                                                                          \
    CLT_EW_BINARY(X) CLT_EW_SCALAR(X) CLT_EW_SIGN(X) CLT_EW_MATH(X) CLT_EW_COMPARE(X)          \
    CLT_EW_BACKWARD(X)

#define CLT_EW_BINARY(X)                                                                       \
    X(add, 2, x + y, CLT_WRAP((clt_u64)x + (clt_u64)y), T)                                     \
    X(sub, 2, x - y, CLT_WRAP((clt_u64)x - (clt_u64)y), T)                                     \
    X(mul, 2, x * y, CLT_WRAP((clt_u64)x * (clt_u64)y), T)                                     \
    X(div, 2, x / y, x, T)                                                                     \
    X(pow, 2, pow(x, y), clt_ipow(x, y), T)                                                    \
    X(maximum, 2, (x != x) ? x : (y != y) ? y : (x > y ? x : y), x > y ? x : y, T)             \
    X(minimum, 2, (x != x) ? x : (y != y) ? y : (x < y ? x : y), x < y ? x : y, T)             \
    X(addcmul, 3, z + s0 * x * y,                                                              \
      CLT_WRAP((clt_u64)z + (clt_u64)s0 * (clt_u64)x * (clt_u64)y), T)                         \
    X(mul_rsqrt, 2, x * clt_rsqrt(y + s0), x, T)                                               \
    X(prelu, 2, x > 0 ? x : y * x, x, T)

#define CLT_EW_SCALAR(X)                                                                       \
    X(add_scalar, 1, x + s0, CLT_WRAP((clt_u64)x + (clt_u64)s0), T)                            \
    X(mul_scalar, 1, x * s0, CLT_WRAP((clt_u64)x * (clt_u64)s0), T)                            \
    X(rsub_scalar, 1, s0 - x, CLT_WRAP((clt_u64)s0 - (clt_u64)x), T)                           \
    X(div_scalar, 1, x / s0, x, T)                                                             \
    X(pow_scalar, 1, pow(x, s0), clt_ipow(x, s0), T)

#define CLT_EW_SIGN(X)                                                                         \
    X(neg, 1, -x, CLT_WRAP(0 - (clt_u64)x), T)                                                 \
    X(abs, 1, fabs(x), CLT_WRAP(((clt_u64)x ^ CLT_SIGN_MASK(x)) - CLT_SIGN_MASK(x)), T)        \
    X(relu, 1, x < 0 ? 0 : x, CLT_WRAP((clt_u64)x & ~CLT_SIGN_MASK(x)), T)                     \
    X(clamp, 1, CLT_CLAMP(x, s0, s1), CLT_CLAMP(x, s0, s1), T)

#define CLT_EW_MATH(X)                                                                         \
    X(exp, 1, exp(x), x, T)                                                                    \
    X(log, 1, log(x), x, T)                                                                    \
    X(sqrt, 1, sqrt(x), x, T)                                                                  \
    X(rsqrt, 1, clt_rsqrt(x), x, T)                                                            \
    X(sin, 1, sin(x), x, T)                                                                    \
    X(cos, 1, cos(x), x, T)                                                                    \
    X(tanh, 1, tanh(x), x, T)                                                                  \
    X(sigmoid, 1, 1 / (1 + exp(-x)), x, T)                                                     \
    X(gelu, 1, x * (erf(x * (CT)0.70710678118654752440) + 1) / 2, x, T)                        \
    X(gelu_tanh, 1, x * (1 + tanh(CLT_GELU_TANH_U(x))) / 2, x, T)                              \
    X(silu, 1, x / (1 + exp(-x)), x, T)

#define CLT_EW_COMPARE(X)                                                                      \
    X(eq, 2, x == y, x == y, B)                                                                \
    X(ne, 2, x != y, x != y, B)                                                                \
    X(lt, 2, x < y, x < y, B)                                                                  \
    X(le, 2, x <= y, x <= y, B)                                                                \
    X(gt, 2, x > y, x > y, B)                                                                  \
    X(ge, 2, x >= y, x >= y, B)

#define CLT_EW_BACKWARD(X)                                                                     \
    X(relu_backward, 2, y > 0 ? x : 0, x, T)                                                   \
    X(sigmoid_backward, 2, x * (1 - y) * y, x, T)                                              \
    X(tanh_backward, 2, x * (1 - y * y), x, T)                                                 \
    X(gelu_backward, 2, x * CLT_GELU_SLOPE(y), x, T)                                           \
    X(gelu_tanh_backward, 2, x * CLT_GELU_TANH_SLOPE(y, tanh(CLT_GELU_TANH_U(y))), x, T)       \
    X(silu_backward, 2, x * CLT_SILU_SLOPE(y, 1 / (1 + exp(-y))), x, T)                        \
    X(abs_backward, 2, y > 0 ? x : y < 0 ? -x : 0, x, T)                                       \
    X(clamp_backward, 2, y >= s0 && y <= s1 ? x : 0, x, T)                                     \
    X(prelu_backward, 3, y > 0 ? x : z * x, x, T)                                              \
    X(prelu_weight_backward, 2, y > 0 ? 0 : x * y, x, T)
