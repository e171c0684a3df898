/* Data parallelism over several devices: PyTorch's nn.DataParallel. The wrapper is a module
 * whose only child is the wrapped module (registered as "module", so its parameters are the
 * wrapper's: optimizers, clt_module_to and clt_module_clone_to work on it unchanged). Its
 * forward splits the batch along dimension 0 into one chunk per device (as even as possible;
 * a batch smaller than the number of devices uses as many devices as it has rows), copies each
 * chunk to its device, runs the wrapped module on the first device and a replica of it on each
 * other device at the same time (one thread each), and gathers the outputs along dimension 0
 * on the output device. The replicas persist between calls and are refreshed only when a
 * parameter or buffer of the wrapped module has changed since (an optimizer step, an in-place
 * update, a move), where PyTorch copies the whole model on every forward. Backward sends each
 * replica's parameter gradients back to the wrapped module's parameters, where they are summed
 * with the first device's own (between sub-devices of one device, CLT_SUBDEVICES, where the
 * first device's gradient is already there: on the replica's device from both buffers, with no
 * copy first). Buffers are copied from the wrapped module; what a replica's
 * forward writes into its buffers (batch norm's running statistics) is not kept, as in
 * PyTorch. */
#ifndef CLTENSOR_PARALLEL_H
#define CLTENSOR_PARALLEL_H

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A DataParallel wrapper of `module` (retained) over devices[0 .. n-1] (copied; n 0 and
 * devices NULL: every GPU, at most 64, or cpu when there is none), gathering on output_device
 * (NULL: devices[0]): a new module with one reference. The wrapped module must be on
 * devices[0] when the wrapper runs (CLT_ERR_DEVICE_MISMATCH), and a batch needs at least one
 * row (CLT_ERR_SHAPE). NULL with the last error set: CLT_ERR_INVALID_ARGUMENT for a NULL
 * module or entry of devices, a device listed twice, or a list of n < 0 or more than 64. */
CLT_API clt_module *clt_nn_data_parallel(clt_module *module, clt_device *const *devices, int n,
                                         clt_device *output_device);
/* The wrapped module (borrowed, valid while dp holds it): PyTorch's model.module. NULL (no
 * error set) for NULL or another module type. */
CLT_API clt_module *clt_data_parallel_get_module(const clt_module *dp);
/* The devices a DataParallel wrapper runs on, *n of them (n may be NULL): an array owned by dp,
 * valid while it lives. NULL and *n 0 (no error set) for NULL or another module type. */
CLT_API clt_device *const *clt_data_parallel_devices(const clt_module *dp, int *n);

#ifdef __cplusplus
}
#endif

#endif
