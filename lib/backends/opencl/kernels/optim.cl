/* The optimizers' update (shared/optim_step.cl) over n contiguous elements of an f32 or f64
 * parameter, built with the options of elementwise.cl (-DST=-DCT=float or double). m and v are
 * the state (unused ones may be any buffer); each work-item loops over several elements with
 * CLT_RUN (common.cl). One loop per (kind, momentum or not), chosen before it, with both
 * constants inside it, as in the host backend, and the state loaded without a condition (the
 * first step of momentum replaces it): PoCL does not vectorise a loop that tests them at every
 * element, or loads under a condition, and ran SGD's update 10 times slower so. */

/* The loop of kind K with momentum used (M) or not, as constants. */
#define OPTIM_RUN(K, M)                                                                        \
    CLT_RUN(n, blocked, {                                                                      \
        CT p = param[p_off + i];                                                               \
        CT g = grad[g_off + i];                                                                \
        CT m = (K) == 0 && !(M) ? 0 : ms[i];                                                   \
        CT v = (K) == 0 ? 0 : vs[i];                                                           \
        CLT_OPTIM_STEP(K, p, g, m, v, lr, momentum, dampening, weight_decay, nesterov, first,  \
                       beta1, beta2, eps, bias1, bias2);                                       \
        param[p_off + i] = p;                                                                  \
        if ((K) != 0 || (M))                                                                   \
            ms[i] = m;                                                                         \
        if ((K) != 0)                                                                          \
            vs[i] = v;                                                                         \
    })

__kernel void optim_step(__global ST *param, ulong p_off, __global const ST *grad, ulong g_off,
                         __global ST *ms, __global ST *vs, ulong n, int kind, CT lr, CT momentum,
                         CT dampening, CT weight_decay, int nesterov, int first, CT beta1,
                         CT beta2, CT eps, CT bias1, CT bias2, int blocked)
{
    if (kind == 1)
        OPTIM_RUN(1, 1);
    else if (kind == 2)
        OPTIM_RUN(2, 1);
    else if (momentum != 0)
        OPTIM_RUN(0, 1);
    else
        OPTIM_RUN(0, 0);
}
