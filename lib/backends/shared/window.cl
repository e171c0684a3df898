/* Sliding-window arithmetic shared by the host backend (lib/backends/host/host_nn.c, compiled as C11) and
 * the OpenCL programs that need it (nn.cl), so that the adjoint kernels visit the same windows in
 * the same order on every backend. The including file defines clt_i64, clt_u64 and CLT_FN. */

/* The output position (of n) whose window tap t reads input position v, for stride s, padding p
 * and dilation d, or -1 when none does. Stride 1 skips the 64-bit division and remainder
 * (col2im of a 3 x 3 convolution on PoCL: 15% of its time). */
CLT_FN clt_i64 clt_window_at(clt_i64 v, int t, int s, int p, int d, clt_u64 n)
{
    clt_i64 u = v + p - (clt_i64)t * d;
    if (s == 1)
        return u >= 0 && u < (clt_i64)n ? u : -1;
    return u >= 0 && u % s == 0 && u / s < (clt_i64)n ? u / s : -1;
}

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
