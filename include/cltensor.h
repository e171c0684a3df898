/* cltensor: tensors on the host `cpu` and on OpenCL devices, with explicit casting between
 * them, operations, autograd, modules, optimizers, data loading and safetensors files. Include
 * this header to get the whole public API except the OpenCL interop, which is in
 * cltensor/opencl.h (the one header that includes the OpenCL headers).
 *
 * Conventions of every header:
 * - Ownership, in one rule: every function that returns a tensor, module or other object gives
 *   the caller a new reference (or a new object) to release, except the accessors named with
 *   `_get` (clt_module_get_parameter, clt_module_get_child, clt_safetensors_get,
 *   clt_data_parallel_get_module), whose results are borrowed from their owner; and no function
 *   takes over a reference passed to it, except those named with `_take`
 *   (clt_nn_sequential_take, CLT_SEQUENTIAL, clt_module_register_module_take), which take it
 *   whatever happens. clt_tensor_to_(&x, dev) is x = x.to(dev) without a leak.
 * - A function that makes an object returns it, or NULL with the last error set
 *   (clt_last_error); a function that returns a clt_status returns CLT_OK, or a negative error
 *   that it also sets as the last error. A failed call changes nothing.
 * - A NULL device argument or field means cpu (only clt_to_options.device, "no device given",
 *   keeps the tensor's device, as x.to(dtype) does).
 * - Options structs start from their clt_<name>_options_default() function, which holds
 *   PyTorch's defaults, or are passed as NULL for those defaults; their fields then mean what
 *   they hold (0 is 0). Loss and optimizer options must start there: a struct that did not is
 *   refused. In the others a 0 left in a field where 0 is no valid value (a stride, a batch
 *   size) also means that field's default, so zeroed structs keep working.
 * - Devices belong to the library and are never freed. Every release and free function accepts
 *   NULL. */
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
