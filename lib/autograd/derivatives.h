/* The derivatives of the differentiable operations (lib/autograd/derivatives.c), one
 * clt__derivative each, recorded by the operation front ends (lib/ops, lib/tensor). */
#ifndef CLT_AUTOGRAD_DERIVATIVES_H
#define CLT_AUTOGRAD_DERIVATIVES_H

#include "autograd/graph.h"

/* An elementwise operation's derivative; NULL for those that are not differentiable
 * (comparisons, copy). Arguments: s0, s1 (the scalars). */
const clt__derivative *clt__ew_derivative(clt__ew_op op);

/* Views and copies. view: back to the input's shape; permute: dims (the permutation); slice:
 * dim, i0 start, i1 end, i2 step (normalised); expand and identity: the gradient itself (summed
 * to the input's shape); to: back to the input's device. */
extern const clt__derivative clt__d_view, clt__d_permute, clt__d_slice, clt__d_expand,
    clt__d_identity, clt__d_to;
/* cat of ninputs tensors along dim. */
extern const clt__derivative clt__d_cat;
/* Reductions over dims[ndims] (normalised, ascending; keepdim as given); var and std: i0 the
 * correction. */
extern const clt__derivative clt__d_sum, clt__d_mean, clt__d_amax, clt__d_amin, clt__d_var,
    clt__d_std, clt__d_logsumexp;
/* matmul(a, b); linear(x, weight, bias); the same with a fused bias (along the rows, input 2)
 * and activation (i0, a clt__act), clt__matmul_act and clt__linear_act. */
extern const clt__derivative clt__d_matmul, clt__d_linear, clt__d_matmul_act, clt__d_linear_act;
/* clt__conv_product: clt__d_matmul_act's, the output (n / group, m, group). */
extern const clt__derivative clt__d_conv_product;
/* softmax and log_softmax along dim. */
extern const clt__derivative clt__d_softmax, clt__d_log_softmax;
/* Gather along dim with the host indices idx (i0 of them) from a dimension of size i1. */
extern const clt__derivative clt__d_gather;
/* im2col and pooling over the geometry conv; max pooling takes its indices as input 1. */
extern const clt__derivative clt__d_im2col, clt__d_max_pool2d, clt__d_avg_pool2d;

/* Records out as the result of derivative d over the inputs (see graph.h): NULL when out is
 * NULL; args (may be NULL) copied into the node, which takes over args->idx. */
clt_tensor *clt__record(const char *fn, const clt__derivative *d, clt_tensor *const *in, int n,
                        clt_tensor *out, const clt__node_args *args);
/* Normalises reduction dims (negative from the end; none = all) into args, ascending. */
void clt__reduce_args(clt__node_args *args, int ndim, const int *dims, int ndims, bool keepdim);

#endif
