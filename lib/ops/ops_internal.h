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

#endif
