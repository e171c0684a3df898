/* Row kernels, built per dtype with the options of elementwise.cl (-DDT, -DST, -DCT, -DKIND):
 * the running sum (cumsum) and the stable sort of each contiguous row, one work-item a row, with
 * the algorithms of cl/sort_scan.cl, which comes first. Offsets are in elements. */

/* out[r, :] = the running sums of in[r, :] (from the end with reverse). */
__kernel void cumsum_rows(__global ST *out, ulong out_off, __global const ST *in, ulong in_off,
                          ulong rows, ulong len, int reverse)
{
    ulong r = get_global_id(0);
    if (r < rows)
        clt_cumsum_row(out + out_off + r * len, in + in_off + r * len, len, reverse);
}

/* Each row of in sorted into out, its positions into idx; tmp and tmp_idx are rows x len
 * scratch from element 0. */
__kernel void sort_rows(__global ST *out, ulong out_off, __global long *idx, ulong idx_off,
                        __global const ST *in, ulong in_off, __global ST *tmp,
                        __global long *tmp_idx, ulong rows, ulong len, int descending)
{
    ulong r = get_global_id(0);
    if (r < rows)
        clt_sort_row(out + out_off + r * len, idx + idx_off + r * len, in + in_off + r * len,
                     tmp + r * len, tmp_idx + r * len, len, descending);
}
