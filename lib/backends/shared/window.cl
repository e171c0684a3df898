/* Sliding-window arithmetic shared by the host backend (lib/backends/host/host_nn.c, compiled as C11) and
 * the OpenCL programs that need it (nn.cl), so that the adjoint kernels visit the same windows in
 * the same order on every backend. The including file defines clt_i64, clt_u64 and CLT_FN. */

/* NAME(v, t, s, p, d, n): the output position (of n) whose window tap t reads input position v,
 * for stride s, padding p and dilation d, or -1 when none does, in integers of type IT
 * (clt_window_at in 64 bits; OpenCL kernels also make an int one). Stride 1 skips the division
 * and remainder (col2im of a 3 x 3 convolution on PoCL: 15% of its time). */
#define CLT_WINDOW_AT(NAME, IT)                                                                \
    CLT_FN IT NAME(IT v, int t, int s, int p, int d, IT n)                                     \
    {                                                                                          \
        IT u = v + p - (IT)t * d;                                                              \
        if (s == 1)                                                                            \
            return u >= 0 && u < n ? u : -1;                                                   \
        return u >= 0 && u % s == 0 && u / s < n ? u / s : -1;                                \
    }
CLT_WINDOW_AT(clt_window_at, clt_i64)

/* How many of the k taps of window o fall inside an input of n positions. */
CLT_FN clt_i64 clt_window_taps_inside(clt_i64 o, int k, int s, int p, int d, clt_u64 n)
{
    clt_i64 inside = 0;
    for (int t = 0; t < k; t++) {
        clt_i64 v = o * s - p + (clt_i64)t * d;
        inside += v >= 0 && v < (clt_i64)n;
    }
    return inside;
}
