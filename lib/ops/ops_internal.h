/* What the operation front ends share: argument checks, re-raising a failed step's error under
 * the operation's own name, and the window geometry and adjoint kernels the backward passes
 * call. */
#ifndef CLT_OPS_INTERNAL_H
#define CLT_OPS_INTERNAL_H

#include "cltensor/ops.h"
#include "tensor/tensor_internal.h"

/* x itself (retained) when contiguous, else a contiguous copy on its device, recorded for
 * autograd as clt_contiguous is (lib/ops/view.c). */
clt_tensor *clt__contiguous(const char *fn, clt_tensor *x);

/* CLT_OK when none of the n tensors is NULL and all are on one device; otherwise the error
 * ("fn: expected all tensors on the same device, got gpu:0 and cpu"). */
clt_status clt__same_device(const char *fn, clt_tensor *const *ts, int n);
/* CLT_OK when b is NULL, or a and b are tensors on one device; else clt__same_device's error. */
clt_status clt__same_device_as(const char *fn, clt_tensor *a, clt_tensor *b);
/* CLT_ERR_DTYPE naming the dtype and device unless x is floating. */
clt_status clt__need_floating(const char *fn, const clt_tensor *x);
/* Releases the n tensors at ts (NULL entries allowed). */
void clt__release_all(clt_tensor **ts, int n);

/* The elementwise operation op on a (and b, for two inputs; else NULL) with scalars s0, s1,
 * promoted and broadcast as the public operations, recorded for autograd as they are. Reaches
 * the operations without a public front end (the derivatives' fused kernels). */
clt_tensor *clt__ew(const char *fn, clt__ew_op op, clt_tensor *a, clt_tensor *b, double s0,
                    double s1);
/* The same for an operation of any number of inputs: in holds clt__ew_inputs(op) tensors. */
clt_tensor *clt__ew_n(const char *fn, clt__ew_op op, clt_tensor *const *in, double s0,
                      double s1);

/* Whether a and b, of one backend, use each other's buffers (one context) and b can be added
 * to a there by clt__add_peer: other devices, one dtype and shape, both contiguous. */
bool clt__peer_alike(const clt_tensor *a, const clt_tensor *b);
/* a + b, a new tensor on a's device, where clt__peer_alike(a, b): the sum computed on b's
 * device from both buffers, after what either device has queued so far and before what either
 * queues next, so that b is not copied over first. Not recorded for autograd (its gradients'
 * sums); NULL with the error set, naming fn. */
clt_tensor *clt__add_peer(const char *fn, clt_tensor *a, clt_tensor *b);

/* act(x @ weight^T + bias), as clt_linear followed by the activation (CLT__ACT_RELU: clt_relu),
 * in one product with the bias and the activation in its epilogue (clt__gemm_call), recorded
 * as one operation; errors name clt_linear. */
clt_tensor *clt__linear_act(clt_tensor *x, clt_tensor *weight, clt_tensor *bias, clt__act act);
/* act(a @ b + bias) for matrices a (m, k) and b (k, n), the bias NULL or (m, 1) (along the
 * rows), likewise in one product and recorded as one operation; errors name fn. */
clt_tensor *clt__matmul_act(const char *fn, clt_tensor *a, clt_tensor *b, clt_tensor *bias,
                            clt__act act);
/* The same, written as (n / group, m, group): a convolution's product over every image's
 * columns (group the positions of an image) in the output's layout (N, O, L), with no copy where
 * the device's product stores column groups; recorded as one operation. */
clt_tensor *clt__conv_product(const char *fn, clt_tensor *a, clt_tensor *b, clt_tensor *bias,
                              clt__act act, int64_t group);
/* a @ b for matrices a (m, k) and b (k, n), and a's rows summed into *sums (m, new): in the
 * product's own pass over a where the device's product gives them (clt__gemm_call's
 * row_sums: a f32 or f64 a stored dense, either way round), else by a sum apart; a weight
 * gradient's product and its bias's gradient. Not recorded (backward functions run without
 * recording). NULL, and *sums NULL, with the error set naming fn. */
clt_tensor *clt__matmul_row_sums(const char *fn, clt_tensor *a, clt_tensor *b, clt_tensor **sums);

/* act(clt_conv2d(x, weight, bias, o)): where the convolution is one recorded product (groups
 * 1), the bias and the activation in its epilogue. */
clt_tensor *clt__conv2d_act(clt_tensor *x, clt_tensor *weight, clt_tensor *bias,
                            const clt_conv2d_options *o, clt__act act);

/* The arguments of a 2-D window operation: convolution's (weight, bias, conv, act) or pooling's
 * (pool, is_max, indices). */
typedef struct clt__window_args {
    clt_tensor *weight, *bias, **indices;
    const clt_conv2d_options *conv;
    const clt_pool2d_options *pool;
    bool is_max;
    clt__act act; /* the convolution's, after its bias */
} clt__window_args;
/* A 2-D window operation on an (N, C, H, W) x; errors name fn. */
typedef clt_tensor *(*clt__window_run)(const char *fn, clt_tensor *x, const clt__window_args *a);
/* run on x, and on an unbatched (C, H, W) x, as PyTorch's, on a batch of one made and removed
 * around it. This and the two below: lib/ops/conv.c. */
clt_tensor *clt__window_op(const char *fn, clt_tensor *x, const clt__window_args *a,
                           clt__window_run run);
/* v, where 0 means the default def: 1 for strides and dilations, the kernel size for pooling
 * strides. */
int clt__or_default(int v, int def);
/* Fills c->OH and c->OW from the rest of the geometry (ceil_mode as pooling's), or fails with
 * CLT_ERR_SHAPE naming fn when the kernel (or window: `what`) does not fit the input. */
clt_status clt__window_output_size(const char *fn, clt__conv_call *c, const char *what,
                                   bool ceil_mode);
/* The geometry of 2-D pooling (lib/ops/pool.c) of x (N, C, H, W) under options o, as
 * clt_max_pool2d (is_max) or clt_avg_pool2d use it: fills *c but for its buffers and offsets, or
 * returns the error naming fn (invalid options, a window that does not fit). */
clt_status clt__pool2d_geometry(const char *fn, const clt_tensor *x, const clt_pool2d_options *o,
                                bool is_max, clt__conv_call *c);
/* The geometry of clt_conv2d of x (N, C, H, W) with a kh x kw kernel under options o (NULL: the
 * defaults): fills *c but for its buffers and offsets, or returns the error naming fn. */
clt_status clt__conv2d_geometry(const char *fn, const clt_tensor *x, int kh, int kw,
                                const clt_conv2d_options *o, clt__conv_call *c);

/* The output of `shape` that an op computes from x and the caller's sizes (pads, output
 * sizes), checked before any work (clt__output_check); for an empty x, *empty is the result
 * itself, x reshaped to it (a view, recorded for autograd), so that no work is sized by a
 * dimension of the empty output. CLT_OK (*empty NULL where the op is to compute it), or the
 * error naming fn. */
clt_status clt__resized_output(const char *fn, clt_tensor *x, int ndim, const int64_t *shape,
                               clt_tensor **empty);

/* idx's values (i64, any device) on the host, a buffer for clt__free, each checked to lie in
 * 0..k-1 (or, with allow, to equal `allowed`); NULL with the error naming fn and `what` ("index
 * 4 (element 0) is out of range for size 4 (valid: 0..3)"). */
int64_t *clt__host_indices(const char *fn, clt_tensor *idx, int64_t k, bool allow,
                           int64_t allowed, const char *what);

/* x indexed along dim by the m indices idx_dev (i64 on x's device), which `host` holds too (all
 * checked by the caller), recorded for autograd: clt_index_select's gather (lib/ops/nn.c). */
clt_tensor *clt__gather(const char *fn, clt_tensor *x, int dim, clt_tensor *idx_dev,
                        const int64_t *host, int64_t m);
/* clt_index_select of x along dim (checked by the caller) by the m host indices `host` (checked
 * too), which go to x's device in one write: for callers that computed them on the host. */
clt_tensor *clt__index_select_host(const char *fn, clt_tensor *x, int dim, const int64_t *host,
                                   int64_t m);

/* Whether transposed-convolution options hold: groups, strides and dilations >= 1, paddings
 * >= 0, output paddings below the stride or the dilation (PyTorch's rule). */
bool clt__conv_transpose2d_options_ok(const clt_conv_transpose2d_options *o);

/* The adjoints (lib/ops/nn_adjoint.c). Each returns a new tensor of its (floating) input's
 * dtype, or NULL with the error naming fn; inputs need not be contiguous; geometries' buffers,
 * offsets and dtype are ignored. */
/* index_select's: src's shape with dimension dim (negative counts from the end) of size k,
 * element j along it the sum of the slices i of src with host_idx[i] == j (0 where there is
 * none); host_idx holds src->shape[dim] indices already checked to lie in 0..k-1. */
clt_tensor *clt__index_add(const char *fn, clt_tensor *src, int dim, const int64_t *host_idx,
                           int64_t k);
/* The columns of in (contiguous, N x C x H x W) for the geometry (clt__conv2d_geometry's):
 * (C * kh * kw) x (N * OH * OW), recorded for the backward pass where in requires grad. */
clt_tensor *clt__im2col(const char *fn, clt_tensor *in, const clt__conv_call *geometry);
/* The gradient of cross entropy's rows over logits x (N, C) with targets t (N,): g the rows'
 * gradient, or with reduced the gradient of their sum or mean, divided by divisor (the
 * backend's fused backward pass); rows of class ignore get none. A new tensor, NULL with the
 * error set (naming fn). */
clt_tensor *clt__cross_entropy_backward(const char *fn, clt_tensor *x, clt_tensor *t,
                                       clt_tensor *g, int64_t ignore, bool reduced,
                                       double divisor);
/* The additive form of an attention mask for scores of shape (..., L, S): a bool mask becomes 0
 * where it is true and -inf where it is false; either kind is broadcast to shape and made
 * contiguous. NULL with the error set (naming fn). */
clt_tensor *clt__attention_mask(const char *fn, clt_tensor *mask, clt_dtype dtype, int ndim,
                                const int64_t *shape);
/* The running sum of x along dim, from the end with reverse; recorded (clt_cumsum). */
clt_tensor *clt__cumsum(const char *fn, clt_tensor *x, int dim, bool reverse);
/* im2col's: the N x C x H x W image whose elements sum the entries of cols ((C * kh * kw) x N
 * x (OH * OW), as im2col lays them out) read from them; the geometry as clt__conv2d_geometry
 * fills it. */
clt_tensor *clt__col2im(const char *fn, clt_tensor *cols, const clt__conv_call *shape_of_call);
/* Pooling's: the gradient of the input (N x C x H x W) from grad_out (N x C x OH x OW), with
 * the i64 indices clt_max_pool2d gave for max pooling, NULL for average pooling; the geometry
 * as clt__pool2d_geometry fills it (its is_max must match). */
clt_tensor *clt__pool2d_backward(const char *fn, clt_tensor *grad_out, clt_tensor *indices,
                                 const clt__conv_call *geometry);

#endif
