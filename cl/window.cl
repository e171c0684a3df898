/* Sliding-window arithmetic shared by the host backend (lib/backends/host/host_window.h,
 * compiled as C11) and the OpenCL programs that need it (nn.cl), so that the adjoint kernels
 * visit the same windows in the same order on every backend. The including file defines clt_i64, clt_u64 and CLT_FN. */

/* NAME(v, t, s, p, d, n): the output position (of n) whose window tap t reads input position v,
 * for stride s, padding p and dilation d, or -1 when none does, in integers of type IT
 * (clt_window_at in 64 bits; OpenCL kernels also make an int one). Stride 1 skips the division
 * and remainder, a sizeable share of col2im's time on PoCL for a 3 x 3 convolution. */
#define CLT_WINDOW_AT(NAME, IT)                                                                \
    CLT_FN IT NAME(IT v, int t, int s, int p, int d, IT n)                                     \
    {                                                                                          \
        IT u = v + p - (IT)t * d;                                                              \
        if (s == 1)                                                                            \
            return u >= 0 && u < n ? u : -1;                                                   \
        return u >= 0 && u % s == 0 && u / s < n ? u / s : -1;                                \
    }
CLT_WINDOW_AT(clt_window_at, clt_i64)

/* The taps t of a window whose first tap reads position `first` and the t-th first + t d
 * (d >= 1) that lie inside an input of n positions: t from clt_window_tap_lo to
 * clt_window_tap_hi (exclusive; none where lo >= hi), in closed form, so that a kernel of
 * INT_MAX taps costs no more than one of 3. */
CLT_FN clt_i64 clt_window_tap_lo(clt_i64 first, int d)
{
    return first >= 0 ? 0 : (clt_i64)(((clt_u64)-first + (clt_u64)d - 1) / (clt_u64)d);
}
CLT_FN clt_i64 clt_window_tap_hi(clt_i64 first, int k, int d, clt_i64 n)
{
    clt_i64 hi = first > n - 1 ? 0 : (clt_i64)((clt_u64)(n - 1 - first) / (clt_u64)d) + 1;
    return hi < k ? hi : k;
}

/* The taps y through which input position v reaches some window of n at stride s (padding p,
 * dilation d): those with v + p - y d in 0 .. (n - 1) s, from clt_window_reach_lo to
 * clt_window_reach_hi (exclusive, at most k); the others reach none, so a gradient's loop need
 * not visit them (a kernel of INT_MAX taps costs what one of 3 does). */
CLT_FN clt_i64 clt_window_reach_lo(clt_i64 v, int p, int d, int s, clt_u64 n)
{
    clt_i64 over = v + p - ((clt_i64)n - 1) * s; /* what y d must reach */
    return over <= 0 ? 0 : (over - 1) / d + 1;
}
CLT_FN clt_i64 clt_window_reach_hi(clt_i64 v, int p, int d, int k)
{
    clt_i64 top = v + p, hi = top < 0 ? 0 : top / d + 1;
    return hi < k ? hi : k;
}

/* How many of the k taps of window o fall inside an input of n positions. */
CLT_FN clt_i64 clt_window_taps_inside(clt_i64 o, int k, int s, int p, int d, clt_u64 n)
{
    clt_i64 first = o * s - p, lo = clt_window_tap_lo(first, d);
    clt_i64 hi = clt_window_tap_hi(first, k, d, (clt_i64)n);
    return hi > lo ? hi - lo : 0;
}
