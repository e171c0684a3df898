/* Random fills: uniform_D and normal_D write n values of dtype D from offset `off` (elements).
 * Work-item g evaluates Philox counter `counter + g` and writes values g*per .. g*per+per-1,
 * per = 4 (from f32) or 2 (f64): the same layout as the host backend. */

#define CLT__RANDOM_KERNEL(KIND, NORMAL, D, DT, DIGITS)                                        \
    __kernel void KIND##_##D(__global DT *out, ulong off, ulong n, uint k0, uint k1,            \
                             ulong counter)                                                    \
    {                                                                                          \
        ulong g = get_global_id(0);                                                            \
        float v[4];                                                                            \
        if (g * 4 >= n)                                                                        \
            return;                                                                            \
        clt_random_block_f32(NORMAL, DIGITS, counter + g, k0, k1, v);                          \
        for (ulong j = 0; j < 4 && g * 4 + j < n; j++)                                         \
            out[off + g * 4 + j] = clt_flt_to_##D(v[j]);                                       \
    }
/* uniform values carry as many bits as the dtype's significand: 24, 11, 8 */
CLT__RANDOM_KERNEL(uniform, 0, f32, float, 24)
CLT__RANDOM_KERNEL(normal, 1, f32, float, 24)
CLT__RANDOM_KERNEL(uniform, 0, f16, clt_u16, 11)
CLT__RANDOM_KERNEL(normal, 1, f16, clt_u16, 11)
CLT__RANDOM_KERNEL(uniform, 0, bf16, clt_u16, 8)
CLT__RANDOM_KERNEL(normal, 1, bf16, clt_u16, 8)

#if CLT_HAS_FP64
#define CLT__RANDOM_KERNEL_F64(KIND, NORMAL)                                                   \
    __kernel void KIND##_f64(__global double *out, ulong off, ulong n, uint k0, uint k1,        \
                             ulong counter)                                                    \
    {                                                                                          \
        ulong g = get_global_id(0);                                                            \
        double v[2];                                                                           \
        if (g * 2 >= n)                                                                        \
            return;                                                                            \
        clt_random_block_f64(NORMAL, counter + g, k0, k1, v);                                  \
        out[off + g * 2] = v[0];                                                               \
        if (g * 2 + 1 < n)                                                                     \
            out[off + g * 2 + 1] = v[1];                                                       \
    }
CLT__RANDOM_KERNEL_F64(uniform, 0)
CLT__RANDOM_KERNEL_F64(normal, 1)
#endif
