/* What the operation front ends share: argument checks and re-raising a failed step's error
 * under the operation's own name. */
#ifndef CLT_OPS_INTERNAL_H
#define CLT_OPS_INTERNAL_H

#include "tensor/tensor_internal.h"

/* f32, f64, f16 or bf16. */
static inline bool clt__is_floating(clt_dtype t)
{
    return t == CLT_F32 || t == CLT_F64 || t == CLT_F16 || t == CLT_BF16;
}

/* CLT_OK when none of the n tensors is NULL and all are on one device; otherwise the error
 * ("fn: expected all tensors on the same device, got gpu:0 and cpu"). */
clt_status clt__same_device(const char *fn, clt_tensor *const *ts, int n);
/* CLT_ERR_DTYPE naming the dtype and device unless x is floating. */
clt_status clt__need_floating(const char *fn, const clt_tensor *x);
/* Re-raises the last error under fn, keeping its cause: a step of fn failed. Returns the
 * status. */
clt_status clt__rename_error(const char *fn);

/* The elementwise operation op on a (and b, for two inputs; else NULL) with scalars s0, s1,
 * promoted and broadcast as the public operations, recorded for autograd as they are. Reaches
 * the operations without a public front end (the derivatives' fused kernels). */
clt_tensor *clt__ew(const char *fn, clt__ew_op op, clt_tensor *a, clt_tensor *b, double s0,
                    double s1);

/* Backward kernels of the nn front end (lib/ops/nn.c), each a new tensor or NULL with the error
 * naming fn. index_add: src's dimension dim summed into k rows by the host indices (already
 * checked to lie in 0..k-1), the adjoint of index_select. col2im: columns N x (C kh kw) x
 * (OH OW) summed into an N x C x H x W image, the adjoint of im2col, for the geometry's
 * N..OW, kh..dw and dtype. pool2d_backward: the gradient of an N x C x H x W input of max
 * pooling (indices: its i64 indices) or average pooling (indices NULL) from the output's. */
clt_tensor *clt__index_add(const char *fn, clt_tensor *src, int dim, const int64_t *host_idx,
                           int64_t k);
clt_tensor *clt__col2im(const char *fn, clt_tensor *cols, const clt__conv_call *geometry);
clt_tensor *clt__pool2d_backward(const char *fn, clt_tensor *grad_out, clt_tensor *indices,
                                 const clt__conv_call *geometry);

#endif
