/* Row algorithms shared by the host backend (lib/backends/host/host_rows.c, compiled as C11, once
 * per dtype) and the OpenCL program "rows" (cl/rows.cl), so that both give the same results
 * in the same order: the running sum of a row and a stable merge sort of a row. The host defines
 * CLT_FN, GLOBAL (the address space of the rows), ST and CT (the storage and compute types),
 * LOAD, STORE, ROWS_NAME(name) (the dtype's name for a function) and ROWS_FLOATING (1 when
 * values may be NaN) before each inclusion (so there is no include guard); an OpenCL program,
 * built for one dtype, gets them below. */

#ifndef ROWS_NAME
#define ROWS_CAT_(a, b) a##b
#define ROWS_CAT(a, b) ROWS_CAT_(a, b)
#define GLOBAL __global
#define ROWS_NAME(name) name
#define ROWS_FLOATING (!CLT_KIND_INT)
#define LOAD(v) ROWS_CAT(clt_load_, DT)(v)
#define STORE(v) ROWS_CAT(ROWS_CAT(ROWS_CAT(clt_, KIND), _to_), DT)(v)
#endif

/* out[j] = in[0] + ... + in[j] (reverse: in[j] + ... + in[len - 1]), summed in CT from the row's
 * start (end). */
CLT_FN void ROWS_NAME(clt_cumsum_row)(GLOBAL ST *out, GLOBAL const ST *in, clt_u64 len,
                                      int reverse)
{
    CT sum = 0;
    for (clt_u64 k = 0; k < len; k++) {
        clt_u64 j = reverse ? len - 1 - k : k;
        sum += LOAD(in[j]);
        out[j] = STORE(sum);
    }
}

/* Whether x goes before y: ascending, or descending; NaN counts as above every number. */
CLT_FN int ROWS_NAME(clt_sort_before)(CT x, CT y, int descending)
{
#if ROWS_FLOATING
    if (descending)
        return x > y || (x != x && y == y);
    return x < y || (x == x && y != y);
#else
    return descending ? x > y : x < y;
#endif
}

/* Sorts one row of len values stably: out gets them in order and idx their positions in `in`.
 * Bottom-up merge sort, passes alternating between (out, idx) and the scratch (tmp, tmp_idx),
 * each of len elements; ties keep their order (the left run wins). */
CLT_FN void ROWS_NAME(clt_sort_row)(GLOBAL ST *out, GLOBAL clt_i64 *idx, GLOBAL const ST *in,
                                    GLOBAL ST *tmp, GLOBAL clt_i64 *tmp_idx, clt_u64 len,
                                    int descending)
{
    GLOBAL ST *a = out, *b = tmp;
    GLOBAL clt_i64 *ai = idx, *bi = tmp_idx;
    for (clt_u64 j = 0; j < len; j++) {
        a[j] = in[j];
        ai[j] = (clt_i64)j;
    }
    for (clt_u64 width = 1; width < len; width *= 2) {
        for (clt_u64 lo = 0; lo < len; lo += 2 * width) {
            clt_u64 mid = lo + width < len ? lo + width : len;
            clt_u64 hi = lo + 2 * width < len ? lo + 2 * width : len;
            clt_u64 l = lo, r = mid, o = lo;
            while (l < mid && r < hi) {
                int right = ROWS_NAME(clt_sort_before)(LOAD(a[r]), LOAD(a[l]), descending);
                clt_u64 from = right ? r++ : l++;
                b[o] = a[from];
                bi[o++] = ai[from];
            }
            for (; l < mid; l++, o++)
                b[o] = a[l], bi[o] = ai[l];
            for (; r < hi; r++, o++)
                b[o] = a[r], bi[o] = ai[r];
        }
        GLOBAL ST *t = a;
        a = b, b = t;
        GLOBAL clt_i64 *ti = ai;
        ai = bi, bi = ti;
    }
    if (a != out)
        for (clt_u64 j = 0; j < len; j++) {
            out[j] = a[j];
            idx[j] = ai[j];
        }
}
