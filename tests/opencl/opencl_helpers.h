/* What the OpenCL backend's own tests (tests/opencl) share beside tests/helpers.h: its internals
 * and the GEMM checker. */
#ifndef CLT_TEST_OPENCL_HELPERS_H
#define CLT_TEST_OPENCL_HELPERS_H

#include "backends/opencl/cl_internal.h" /* first: it sets the OpenCL version */
#include "helpers.h"

/* One strided-batched GEMM for test_gemm_check: sizes, transposes, scalars, whether B is one
 * matrix for the whole batch, and the epilogue: TEST_EP_BIAS (a bias along C's columns, or
 * along its rows with TEST_EP_ROWS; beta 0) and TEST_EP_RELU; TEST_EP_RSUM asks for op(A)'s
 * row sums too (batch 1; A then dense, without padded rows). */
enum { TEST_EP_BIAS = 1, TEST_EP_ROWS = 2, TEST_EP_RELU = 4, TEST_EP_RSUM = 8 };
typedef struct test_gemm_case {
    size_t m, n, k, batch;
    bool ta, tb;
    double alpha, beta;
    bool shared_b;
    int ep;
} test_gemm_case;

/* Runs the case with GEMM variant v on OpenCL device dev (with offsets, padded rows and gaps
 * between the matrices, the bias at an offset; nothing when the variant cannot take it) and
 * compares every element of
 * C's buffer with the product computed here in double (f32 within 1e-5, f64 within 1e-12 of the
 * sum of absolute terms; the padding and the gaps must be untouched), and with TEST_EP_RSUM
 * every element of the row sums' buffer likewise (its elements before and after them too). */
void test_gemm_check(clt_device *dev, clt_dtype dt, clt__gemm_variant v, const test_gemm_case *gc);
/* The same with C's columns in groups of `group` (clt__gemm_call's c_group; the case of batch
 * 1 and beta 0), gaps between the groups and padded rows: packed and direct storing them, the
 * other variants through clt__gemm_composed_groups. */
void test_gemm_check_groups(clt_device *dev, clt_dtype dt, clt__gemm_variant v,
                            const test_gemm_case *gc, size_t group);

#endif
