/* The OpenCL backend's kernels for tensors: dtype conversion (cl/cast.cl) and random fills
 * (cl/random.cl). */
#include <stdio.h>

#include "cl_internal.h"
#include "core/core.h"

clt_status clt__cl_cast(const char *fn, clt_device *dev, void *src, size_t src_off,
                        clt_dtype src_dtype, void *dst, size_t dst_off, clt_dtype dst_dtype,
                        size_t n)
{
    char kernel[32];
    cl_mem s = src, d = dst;
    cl_ulong so = src_off, dof = dst_off, count = n;
    const clt__cl_arg args[] = {
        {sizeof s, &s}, {sizeof so, &so}, {sizeof d, &d}, {sizeof dof, &dof}, {sizeof count, &count},
    };
    snprintf(kernel, sizeof kernel, "cast_%s_%s", clt__dtype_token(src_dtype),
             clt__dtype_token(dst_dtype));
    return clt__cl_launch(fn, dev, "cast", NULL, kernel, args, 5, n, NULL);
}

clt_status clt__cl_random(const char *fn, clt_device *dev, void *buf, size_t off, clt_dtype dtype,
                          size_t n, bool normal, uint64_t seed, uint64_t counter)
{
    char kernel[32];
    cl_mem b = buf;
    cl_ulong o = off, count = n, ctr = counter;
    cl_uint k0 = (cl_uint)seed, k1 = (cl_uint)(seed >> 32);
    size_t per = clt__random_per_counter(dtype);
    const clt__cl_arg args[] = {
        {sizeof b, &b}, {sizeof o, &o}, {sizeof count, &count},
        {sizeof k0, &k0}, {sizeof k1, &k1}, {sizeof ctr, &ctr},
    };
    snprintf(kernel, sizeof kernel, "%s_%s", normal ? "normal" : "uniform",
             clt__dtype_token(dtype));
    return clt__cl_launch(fn, dev, "random", NULL, kernel, args, 6, (n + per - 1) / per, NULL);
}
