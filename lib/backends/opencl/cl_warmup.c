/* The OpenCL backend's warm-up: every program the library's kernels use built ahead of time on a
 * device and its GEMM tuned for each float dtype, so that later operations start without
 * compiling or tuning (and, with the disk cache, later processes too). clt_device_warmup
 * (lib/ops/warmup.c) then runs one small product per dtype, which compiles the chosen GEMM
 * kernels. */
#include "cl_internal.h"

clt_status clt__cl_warmup(const char *fn, clt_device *dev)
{
    clt_status st = clt__cl_build_all(fn, dev);
    if (st == CLT_OK)
        st = clt__cl_gemm_tune(fn, dev, CLT_F32, NULL);
    if (st == CLT_OK && dev->info.fp64)
        st = clt__cl_gemm_tune(fn, dev, CLT_F64, NULL);
    return st;
}
