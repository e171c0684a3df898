/* OpenCL interop: the OpenCL objects behind a device and a tensor, for custom kernels and for
 * sharing buffers with other OpenCL code. The only public header that includes the OpenCL
 * headers; include it after <cltensor.h> where needed. Work queued on a device's queue runs in
 * order with the library's own work on that device. */
#ifndef CLTENSOR_OPENCL_H
#define CLTENSOR_OPENCL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#include "device.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device's cl_device_id, owned by the library for as long as the process lives; NULL with
 * the last error set for a device of another backend, cpu among them (CLT_ERR_DEVICE_MISMATCH),
 * or NULL (CLT_ERR_INVALID_ARGUMENT). */
CLT_API cl_device_id clt_device_cl_device(const clt_device *dev);
/* The device's context and in-order command queue, created on first use. With retain, a new
 * reference the caller releases (clReleaseContext / clReleaseCommandQueue); without, borrowed
 * for as long as the process lives. NULL with the last error set for a device of another
 * backend (CLT_ERR_DEVICE_MISMATCH), NULL (CLT_ERR_INVALID_ARGUMENT) or a failure to create them. */
CLT_API cl_context clt_device_cl_context(clt_device *dev, bool retain);
CLT_API cl_command_queue clt_device_cl_queue(clt_device *dev, bool retain);

/* The buffer holding an OpenCL tensor's elements (element 0 at clt_tensor_cl_offset bytes,
 * the others at clt_tensor_strides). With retain, a new reference the caller releases with
 * clReleaseMemObject; without, borrowed while the tensor lives and keeps its storage
 * (clt_module_to and clt_module_to_dtype give a module's tensors new storage). NULL with the
 * last error set for a tensor on another backend's device, cpu among them
 * (CLT_ERR_DEVICE_MISMATCH), NULL, or a tensor without
 * elements, which has no buffer (CLT_ERR_INVALID_ARGUMENT). The library assumes the buffer may
 * be written from then on: it no longer relies on what it knew of the values (the range of
 * labels), and when the tensor's storage is freed the buffer goes back to OpenCL instead of the
 * allocator's cache, so that no later tensor shares it. */
CLT_API cl_mem clt_tensor_cl_mem(const clt_tensor *t, bool retain);
/* The byte offset of element 0 in that buffer; 0 for NULL (no error set). */
CLT_API size_t clt_tensor_cl_offset(const clt_tensor *t);

#ifdef __cplusplus
}
#endif

#endif
