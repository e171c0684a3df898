/* Dtype conversion: one kernel cast_S_D per pair of dtypes, element i of src (from src_off, in
 * elements) to element i of dst, each work-item looping over several with CLT_RUN (common.cl).
 * The conversion itself is clt_cvt_S_D from scalar.cl. */

#define CLT__CAST_KERNEL(S, ST, SK, D, DT, DK)                                                 \
    CLT_WHEN(from_##S)(__kernel void cast_##S##_##D(__global const ST *src, ulong src_off,     \
                                                    __global DT *dst, ulong dst_off, ulong n,  \
                                                    int blocked)                               \
    {                                                                                          \
        CLT_RUN(n, blocked, dst[dst_off + i] = clt_cvt_##S##_##D(src[src_off + i]));           \
    })
CLT_DTYPE_PAIRS(CLT__CAST_KERNEL)
