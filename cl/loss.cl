/* Cross entropy's rows (lib/backends/backend.h's clt__xent_call), built per floating dtype with the
 * options of elementwise.cl (-DDT, -DST, -DCT, -DKIND): one work-item a row, the row's largest
 * logit and its sum of exponentials in class order, as the host computes them
 * (lib/backends/host/host_nn.inc), then the row's loss or its gradient. Operands are contiguous;
 * offsets are in elements. */

#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define STORE(v) CLT_CAT(CLT_CAT(CLT_CAT(clt_, KIND), _to_), DT)(v)

/* out[r] = log(s) - (x_t - m), or with backward out[r, c] = (g[r * g_step] / g_divisor)
 * (exp(x_c - m) / s - (c == t)); 0 (the row's loss or every gradient of it) where the target is
 * `ignore`. A target outside 0..classes-1 (which the host's checks keep out) reads nothing: its
 * loss is NaN. */
__kernel void cross_entropy(__global ST *out, ulong out_off, __global const ST *logits,
                            ulong logits_off, __global const long *target, ulong target_off,
                            __global const ST *g, ulong g_off, ulong g_step, CT g_divisor,
                            ulong rows, ulong classes, long ignore, int backward)
{
    ulong r = get_global_id(0);
    if (r >= rows)
        return;
    __global const ST *x = logits + logits_off + r * classes;
    long t = target[target_off + r];
    CT m = LOAD(x[0]), s = 0;
    for (ulong k = 1; k < classes; k++)
        m = LOAD(x[k]) > m ? LOAD(x[k]) : m;
    for (ulong k = 0; k < classes; k++)
        s += exp(LOAD(x[k]) - m);
    if (!backward) {
        CT picked = t >= 0 && (ulong)t < classes ? LOAD(x[t]) : (CT)NAN;
        out[out_off + r] = STORE(t == ignore ? (CT)0 : log(s) - (picked - m));
        return;
    }
    __global ST *o = out + out_off + r * classes;
    CT gr = LOAD(g[g_off + r * g_step]) / g_divisor;
    for (ulong k = 0; k < classes; k++)
        o[k] = STORE(t == ignore ? (CT)0 : gr * (exp(LOAD(x[k]) - m) / s - (CT)((long)k == t)));
}
