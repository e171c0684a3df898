/* Scaled dot-product attention, built per floating dtype with the options of elementwise.cl
 * (-DDT, -DST, -DCT, -DKIND). One work-item a query row: a first pass over the keys finds the
 * row's largest score and the sum of exponentials, a second adds up the weighted values, a
 * chunk of CHUNK output columns at a time in private accumulators (f16 and bf16 are rounded
 * once, when stored). Scores are summed in key order, so every device computes the same
 * expression as the host (lib/backends/host/host_nn.inc). Operands are contiguous; offsets are
 * in elements. */

#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define STORE(v) CLT_CAT(CLT_CAT(CLT_CAT(clt_, KIND), _to_), DT)(v)
#define CHUNK 32

/* scale * q[r, :] . k[b, j, :] (+ mask[r, j]) */
static CT score(__global const ST *qr, __global const ST *kj, __global const ST *mr, ulong j,
                ulong E, CT scale, int has_mask)
{
    CT s = 0;
    for (ulong e = 0; e < E; e++)
        s += LOAD(qr[e]) * LOAD(kj[e]);
    s *= scale;
    if (has_mask)
        s += LOAD(mr[j]);
    return s;
}

/* out[r, :] = softmax_j(scores of row r) v[b, j, :] for the R = B * L rows r = b * L + i of q
 * (B x L x E) against k (B x S x E) and v (B x S x D); mask B x L x S is added to the scores
 * when has_mask; causal keeps keys j <= i. A row whose every score is -inf gives NaN. */
__kernel void attention(__global ST *out, ulong out_off, __global const ST *q, ulong q_off,
                        __global const ST *k, ulong k_off, __global const ST *v, ulong v_off,
                        __global const ST *mask, ulong mask_off, ulong R, ulong L, ulong S,
                        ulong E, ulong D, CT scale, int has_mask, int causal)
{
    ulong r = get_global_id(0);
    if (r >= R)
        return;
    ulong b = r / L, i = r % L, end = causal ? min(i + 1, S) : S;
    __global const ST *qr = q + q_off + r * E, *kb = k + k_off + b * S * E;
    __global const ST *vb = v + v_off + b * S * D, *mr = mask + mask_off + r * S;
    __global ST *o = out + out_off + r * D;
    CT m = -INFINITY, l = 0;
    for (ulong j = 0; j < end; j++) {
        CT s = score(qr, kb + j * E, mr, j, E, scale, has_mask);
        if (s == -INFINITY)
            continue;
        if (s > m) {
            l = l * exp(m - s) + 1;
            m = s;
        } else {
            l += exp(s - m); /* NaN scores make l NaN, as softmax does */
        }
    }
    for (ulong d0 = 0; d0 < D; d0 += CHUNK) {
        CT acc[CHUNK];
        ulong n = min((ulong)CHUNK, D - d0);
        for (ulong c = 0; c < n; c++)
            acc[c] = 0;
        for (ulong j = 0; j < end && l > 0; j++) {
            CT s = score(qr, kb + j * E, mr, j, E, scale, has_mask);
            if (s == -INFINITY)
                continue;
            CT p = exp(s - m) / l;
            __global const ST *vj = vb + j * D + d0;
            for (ulong c = 0; c < n; c++)
                acc[c] += p * LOAD(vj[c]);
        }
        for (ulong c = 0; c < n; c++)
            o[d0 + c] = STORE(l > 0 ? acc[c] : (CT)NAN);
    }
}
