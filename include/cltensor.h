/* cltensor: tensors on the host `cpu` and on OpenCL devices, with explicit casting between
 * them, operations, autograd, modules, optimizers, data loading and safetensors files. Include
 * this header to get the whole public API except the OpenCL interop, which is in
 * cltensor/opencl.h (the one header that includes the OpenCL headers).
 *
 * Conventions of every header, unless a comment says otherwise: a function that makes an
 * object (a tensor, module, dataset, loader, optimizer) returns it owned by the caller (one
 * reference, for the reference-counted ones), or NULL with the last error set (clt_last_error);
 * a function that returns a clt_status returns CLT_OK, or a negative error that it also sets as
 * the last error. Devices belong to the library and are never freed. Every release and free
 * function accepts NULL. */
#ifndef CLTENSOR_H
#define CLTENSOR_H

#include "cltensor/status.h"
#include "cltensor/device.h"
#include "cltensor/tensor.h"
#include "cltensor/ops.h"
#include "cltensor/autograd.h"
#include "cltensor/nn.h"
#include "cltensor/optim.h"
#include "cltensor/data.h"
#include "cltensor/parallel.h"
#include "cltensor/io.h"

#endif
