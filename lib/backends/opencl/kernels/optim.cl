/* The optimizers' update (shared/optim_step.cl) over n contiguous elements of an f32 or f64
 * parameter, built with the options of elementwise.cl (-DST=-DCT=float or double). m and v are
 * the state (unused ones may be any buffer); each work-item loops over several elements with
 * CLT_RUN (common.cl). */

__kernel void optim_step(__global ST *param, ulong p_off, __global const ST *grad, ulong g_off,
                         __global ST *ms, __global ST *vs, ulong n, int kind, CT lr, CT momentum,
                         CT dampening, CT weight_decay, int nesterov, int first, CT beta1,
                         CT beta2, CT eps, CT bias1, CT bias2, int blocked)
{
    CLT_RUN(n, blocked, {
        CT p = param[p_off + i];
        CT g = grad[g_off + i];
        CT m = kind == 0 && (momentum == 0 || first) ? 0 : ms[i];
        CT v = kind == 0 ? 0 : vs[i];
        CLT_OPTIM_STEP(kind, p, g, m, v, lr, momentum, dampening, weight_decay, nesterov, first,
                       beta1, beta2, eps, bias1, bias2);
        param[p_off + i] = p;
        if (kind != 0 || momentum != 0)
            ms[i] = m;
        if (kind != 0)
            vs[i] = v;
    });
}
