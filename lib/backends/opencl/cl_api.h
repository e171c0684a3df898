/* The OpenCL API as the library reaches it: through a table of entry points filled when the
 * ICD loader is loaded at run time (cl_loader.c), so that the library needs the Khronos headers
 * to build and no OpenCL library to start. After this header, a call written clFinish(q) goes
 * through the table. Include it instead of <CL/cl.h> (cl_internal.h does). */
#ifndef CLT_CL_API_H
#define CLT_CL_API_H

#include <stdbool.h>

#include "cltensor/opencl.h" /* the Khronos headers, at OpenCL 1.2 */
#include <stddef.h>

/* Every entry point the library (and its tests) call: OpenCL 1.2's, all required. */
#define CLT__CL_FUNCTIONS(X)                                                                   \
    X(clBuildProgram) X(clCreateBuffer) X(clCreateCommandQueue) X(clCreateContext)             \
    X(clCreateKernel) X(clCreateProgramWithBinary) X(clCreateProgramWithSource)                \
    X(clCreateSubDevices) X(clEnqueueBarrierWithWaitList) X(clEnqueueCopyBuffer)               \
    X(clEnqueueFillBuffer) X(clEnqueueMapBuffer) X(clEnqueueMarkerWithWaitList)                \
    X(clEnqueueMigrateMemObjects) X(clEnqueueNDRangeKernel) X(clEnqueueReadBuffer)             \
    X(clEnqueueUnmapMemObject) X(clEnqueueWriteBuffer) X(clFinish) X(clFlush)                  \
    X(clGetCommandQueueInfo) X(clGetContextInfo) X(clGetDeviceIDs) X(clGetDeviceInfo)          \
    X(clGetEventInfo) X(clGetKernelInfo) X(clGetKernelWorkGroupInfo) X(clGetPlatformIDs)       \
    X(clGetPlatformInfo) X(clGetProgramBuildInfo) X(clGetProgramInfo)                          \
    X(clReleaseCommandQueue) X(clReleaseContext) X(clReleaseDevice) X(clReleaseEvent)          \
    X(clReleaseKernel) X(clReleaseMemObject) X(clReleaseProgram) X(clRetainCommandQueue)       \
    X(clRetainContext) X(clRetainEvent) X(clRetainMemObject) X(clSetKernelArg)                 \
    X(clWaitForEvents)

typedef struct clt__cl_api {
#define CLT__CL_MEMBER(name) __typeof__(name) *p_##name;
    CLT__CL_FUNCTIONS(CLT__CL_MEMBER)
#undef CLT__CL_MEMBER
} clt__cl_api;

/* Filled by clt__cl_load; all NULL before. Use only the names (CLT__CL_FUNCTIONS' arguments)
 * with # and ## after this header: elsewhere they expand to the table's entries. */
extern clt__cl_api clt__cl_fn;

/* Loads the OpenCL library once (CLT_OPENCL_LIBRARY names it, else the system's ICD loader:
 * libOpenCL.so.1, OpenCL.dll, OpenCL.framework) and fills clt__cl_fn: true when every entry
 * point is there. The first call decides; later ones give the same answer. */
bool clt__cl_load(void);
/* How the loading went, for clt_backend_status: the library loaded, or why none was. */
const char *clt__cl_load_status(void);

/* CLBlast's C API (clblast_c.h), the part the library calls, declared here so that CLBlast is
 * needed neither to build nor to run: its enumerations are C ints, its status codes OpenCL's
 * (above -1000) or its own. */
enum {
    CLT__CLBLAST_ROW_MAJOR = 101,
    CLT__CLBLAST_NO_TRANSPOSE = 111,
    CLT__CLBLAST_TRANSPOSE = 112,
};
#define CLT__CLBLAST_GEMM_PARAMS(T)                                                            \
    (int layout, int trans_a, int trans_b, size_t m, size_t n, size_t k, T alpha,              \
     const cl_mem a, size_t a_offset, size_t lda, const cl_mem b, size_t b_offset, size_t ldb, \
     T beta, cl_mem c, size_t c_offset, size_t ldc, cl_command_queue *queue, cl_event *event)
#define CLT__CLBLAST_BATCHED_PARAMS(T)                                                         \
    (int layout, int trans_a, int trans_b, size_t m, size_t n, size_t k, T alpha,              \
     const cl_mem a, size_t a_offset, size_t lda, size_t a_stride, const cl_mem b,             \
     size_t b_offset, size_t ldb, size_t b_stride, T beta, cl_mem c, size_t c_offset,          \
     size_t ldc, size_t c_stride, size_t batch, cl_command_queue *queue, cl_event *event)
#define CLT__CLBLAST_FUNCTIONS(X)                                                              \
    X(CLBlastSgemm) X(CLBlastDgemm) X(CLBlastSgemmStridedBatched) X(CLBlastDgemmStridedBatched)
typedef struct clt__clblast_api {
    int (*p_CLBlastSgemm) CLT__CLBLAST_GEMM_PARAMS(float);
    int (*p_CLBlastDgemm) CLT__CLBLAST_GEMM_PARAMS(double);
    int (*p_CLBlastSgemmStridedBatched) CLT__CLBLAST_BATCHED_PARAMS(float);
    int (*p_CLBlastDgemmStridedBatched) CLT__CLBLAST_BATCHED_PARAMS(double);
} clt__clblast_api;
extern clt__clblast_api clt__clblast_fn;

/* Loads CLBlast once (CLT_CLBLAST_LIBRARY names it, "off" for none; else libclblast.so.1,
 * clblast.dll, libclblast.dylib) after the OpenCL library: true when it is there, whole. */
bool clt__clblast_load(void);
/* What was loaded, or why CLBlast is not used. */
const char *clt__clblast_status(void);

#define clBuildProgram (clt__cl_fn.p_clBuildProgram)
#define clCreateBuffer (clt__cl_fn.p_clCreateBuffer)
#define clCreateCommandQueue (clt__cl_fn.p_clCreateCommandQueue)
#define clCreateContext (clt__cl_fn.p_clCreateContext)
#define clCreateKernel (clt__cl_fn.p_clCreateKernel)
#define clCreateProgramWithBinary (clt__cl_fn.p_clCreateProgramWithBinary)
#define clCreateProgramWithSource (clt__cl_fn.p_clCreateProgramWithSource)
#define clCreateSubDevices (clt__cl_fn.p_clCreateSubDevices)
#define clEnqueueBarrierWithWaitList (clt__cl_fn.p_clEnqueueBarrierWithWaitList)
#define clEnqueueCopyBuffer (clt__cl_fn.p_clEnqueueCopyBuffer)
#define clEnqueueFillBuffer (clt__cl_fn.p_clEnqueueFillBuffer)
#define clEnqueueMapBuffer (clt__cl_fn.p_clEnqueueMapBuffer)
#define clEnqueueMarkerWithWaitList (clt__cl_fn.p_clEnqueueMarkerWithWaitList)
#define clEnqueueMigrateMemObjects (clt__cl_fn.p_clEnqueueMigrateMemObjects)
#define clEnqueueNDRangeKernel (clt__cl_fn.p_clEnqueueNDRangeKernel)
#define clEnqueueReadBuffer (clt__cl_fn.p_clEnqueueReadBuffer)
#define clEnqueueUnmapMemObject (clt__cl_fn.p_clEnqueueUnmapMemObject)
#define clEnqueueWriteBuffer (clt__cl_fn.p_clEnqueueWriteBuffer)
#define clFinish (clt__cl_fn.p_clFinish)
#define clFlush (clt__cl_fn.p_clFlush)
#define clGetCommandQueueInfo (clt__cl_fn.p_clGetCommandQueueInfo)
#define clGetContextInfo (clt__cl_fn.p_clGetContextInfo)
#define clGetDeviceIDs (clt__cl_fn.p_clGetDeviceIDs)
#define clGetDeviceInfo (clt__cl_fn.p_clGetDeviceInfo)
#define clGetEventInfo (clt__cl_fn.p_clGetEventInfo)
#define clGetKernelInfo (clt__cl_fn.p_clGetKernelInfo)
#define clGetKernelWorkGroupInfo (clt__cl_fn.p_clGetKernelWorkGroupInfo)
#define clGetPlatformIDs (clt__cl_fn.p_clGetPlatformIDs)
#define clGetPlatformInfo (clt__cl_fn.p_clGetPlatformInfo)
#define clGetProgramBuildInfo (clt__cl_fn.p_clGetProgramBuildInfo)
#define clGetProgramInfo (clt__cl_fn.p_clGetProgramInfo)
#define clReleaseCommandQueue (clt__cl_fn.p_clReleaseCommandQueue)
#define clReleaseContext (clt__cl_fn.p_clReleaseContext)
#define clReleaseDevice (clt__cl_fn.p_clReleaseDevice)
#define clReleaseEvent (clt__cl_fn.p_clReleaseEvent)
#define clReleaseKernel (clt__cl_fn.p_clReleaseKernel)
#define clReleaseMemObject (clt__cl_fn.p_clReleaseMemObject)
#define clReleaseProgram (clt__cl_fn.p_clReleaseProgram)
#define clRetainCommandQueue (clt__cl_fn.p_clRetainCommandQueue)
#define clRetainContext (clt__cl_fn.p_clRetainContext)
#define clRetainEvent (clt__cl_fn.p_clRetainEvent)
#define clRetainMemObject (clt__cl_fn.p_clRetainMemObject)
#define clSetKernelArg (clt__cl_fn.p_clSetKernelArg)
#define clWaitForEvents (clt__cl_fn.p_clWaitForEvents)

#endif
