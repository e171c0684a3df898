/* The optimizers' update (shared/optim_step.cl) over up to 8 f32 or f64 parameters of n0 ... n7
 * contiguous elements (tensors past `count` have none), built with the options of
 * elementwise.cl (-DST=-DCT=float or double): one launch for a model's parameters, 8 at a time,
 * each tensor's elements spread over every work-item in turn. m and v are the state (unused ones
 * may be any buffer); each work-item loops over several elements with CLT_RUN (common.cl). One
 * loop per (kind, momentum or not), chosen before it, with both constants inside it, as in the
 * host backend, and the state loaded without a condition (the first step of momentum replaces
 * it): PoCL does not vectorise a loop that tests them at every element, or loads under a
 * condition, and ran SGD's update an order of magnitude slower so (docs/performance.md,
 * Memory-bound kernels). */

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

/* One tensor's arguments, and taking tensor J's as the loop's. */
#define OPTIM_TENSOR(J)                                                                        \
    __global ST *param##J, ulong p_off##J, __global const ST *grad##J, ulong g_off##J,         \
        __global ST *ms##J, __global ST *vs##J, ulong n##J
#define OPTIM_TAKE(J)                                                                          \
    case J:                                                                                    \
        param = param##J, p_off = p_off##J, grad = grad##J, g_off = g_off##J, ms = ms##J;      \
        vs = vs##J, n = n##J;                                                                  \
        break

__kernel void optim_step(OPTIM_TENSOR(0), OPTIM_TENSOR(1), OPTIM_TENSOR(2), OPTIM_TENSOR(3),
                         OPTIM_TENSOR(4), OPTIM_TENSOR(5), OPTIM_TENSOR(6), OPTIM_TENSOR(7),
                         int count, int kind, CT lr, CT momentum, CT dampening, CT weight_decay,
                         int nesterov, int first, CT beta1, CT beta2, CT eps, CT bias1, CT bias2,
                         int blocked)
{
    for (int j = 0; j < count; j++) {
        __global ST *param = param0, *ms = ms0, *vs = vs0;
        __global const ST *grad = grad0;
        ulong p_off = p_off0, g_off = g_off0, n = n0;
        CLT_TAKE_ONE_OF_8(j, OPTIM_TAKE);
        if (kind == 1)
            OPTIM_RUN(1, 1);
        else if (kind == 2)
            OPTIM_RUN(2, 1);
        else if (momentum != 0)
            OPTIM_RUN(0, 1);
        else
            OPTIM_RUN(0, 0);
    }
}
