/* Reduction kernels: each of `rows` contiguous rows of `len` elements gives one value (see
 * clt__reduce_call in lib/backend.h). Built for one input dtype with -DDT=<token>, -DST=<storage
 * type>, -DCT=<compute type>, -DKIND=<flt, dbl or int> and -DCLT_KIND_INT. For every operation
 * NAME (sum, amax, amin, argmax, argmin and, for floating dtypes, sqdev) there are three
 * kernels with the same arguments:
 *   NAME_rows:  one work-item per row, the row read in order (short rows);
 *   NAME_part:  work-group g reduces part g % parts of row g / parts (`chunk` elements), its
 *               work-items striding over the part (neighbours read neighbouring elements, as
 *               GPUs want) or, with `blocked` (for CPU devices, which run a work-group's
 *               work-items one after another), each reading one contiguous block of it; then
 *               they combine their states in a local-memory tree. With parts 1 it writes the
 *               row's result, otherwise its state to tmp[g];
 *   NAME_final: work-group r combines the `parts` states of row r from tmp into the result.
 * Work-groups have a power-of-two size of at most CLT_RED_WG. Sums are compensated (each
 * addition's rounding error is kept by an error-free transformation and added at the end), so
 * their error does not grow with len; argmax and argmin compare indices on ties, so the result
 * does not depend on the order of combination. */

#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define CLT_RED_WG 256

/* ---- sum ------------------------------------------------------------------------------------- */

#if CLT_KIND_INT
typedef struct { clt_u64 s; } sum_state;
CLT_FN sum_state sum_init(void) { sum_state st = {0}; return st; }
CLT_FN void sum_add(sum_state *st, CT x, clt_u64 k, CT m)
{
    (void)k;
    (void)m;
    st->s += (clt_u64)x;
}
CLT_FN void sum_combine(sum_state *a, sum_state b) { a->s += b.s; }
CLT_FN CT sum_result(sum_state st, __global const ST *row, clt_u64 len)
{
    (void)row;
    (void)len;
    return clt_bits_i64(st.s);
}
#else
/* a + b = *s + *e exactly (Knuth's two-sum: no branch, any magnitudes). */
CLT_FN void two_sum(CT a, CT b, CT *s, CT *e)
{
    CT t = a + b;
    CT bp = t - a;
    *e = (a - (t - bp)) + (b - bp);
    *s = t;
}

/* A compensated sum: s the rounded sum, c the rounding errors; s + c when s is finite (an
 * infinite or NaN s makes c meaningless). */
typedef struct { CT s, c; } csum;
CLT_FN csum csum_init(void) { csum st = {0, 0}; return st; }
CLT_FN void csum_add(csum *st, CT x)
{
    CT e;
    two_sum(st->s, x, &st->s, &e);
    st->c += e;
}
CLT_FN void csum_combine(csum *a, csum b)
{
    CT e;
    two_sum(a->s, b.s, &a->s, &e);
    a->c += b.c + e;
}
CLT_FN CT csum_value(csum st)
{
    return isfinite(st.s) ? st.s + st.c : st.s;
}

typedef csum sum_state;
CLT_FN sum_state sum_init(void) { return csum_init(); }
CLT_FN void sum_add(sum_state *st, CT x, clt_u64 k, CT m)
{
    (void)k;
    (void)m;
    csum_add(st, x);
}
CLT_FN void sum_combine(sum_state *a, sum_state b) { csum_combine(a, b); }
CLT_FN CT sum_result(sum_state st, __global const ST *row, clt_u64 len)
{
    (void)row;
    (void)len;
    return csum_value(st);
}

/* ---- sqdev: sum((x - m)^2) - sum(x - m)^2 / len ------------------------------------------- */

typedef struct { csum q, d; } sqdev_state;
CLT_FN sqdev_state sqdev_init(void)
{
    sqdev_state st = {csum_init(), csum_init()};
    return st;
}
CLT_FN void sqdev_add(sqdev_state *st, CT x, clt_u64 k, CT m)
{
    CT d = x - m;
    (void)k;
    csum_add(&st->q, d * d);
    csum_add(&st->d, d);
}
CLT_FN void sqdev_combine(sqdev_state *a, sqdev_state b)
{
    csum_combine(&a->q, b.q);
    csum_combine(&a->d, b.d);
}
CLT_FN CT sqdev_result(sqdev_state st, __global const ST *row, clt_u64 len)
{
    CT d = csum_value(st.d);
    CT v = csum_value(st.q) - d * d / (CT)len;
    (void)row;
    return v < 0 ? (CT)0 : v; /* a NaN stays */
}
#endif

/* ---- argmax, argmin, amax, amin: the best (value, index); index -1 for none yet ------------- */

typedef struct { CT v; clt_i64 i; } arg_state;
CLT_FN arg_state arg_init(void)
{
    arg_state st = {0, -1};
    return st;
}

/* Whether (a, ia) goes before (b, ib): a NaN first, then the larger (max) or smaller value, then
 * the smaller index. */
CLT_FN int arg_before(CT a, clt_i64 ia, CT b, clt_i64 ib, int largest)
{
    if (ib < 0)
        return 1;
    if (ia < 0)
        return 0;
#if !CLT_KIND_INT
    {
        int na = a != a, nb = b != b;
        if (na || nb)
            return na && (!nb || ia < ib);
    }
#endif
    if (a == b)
        return ia < ib;
    return largest ? a > b : a < b;
}

#define ARG_FUNCS(NAME, LARGEST)                                                               \
    typedef arg_state NAME##_state;                                                            \
    CLT_FN NAME##_state NAME##_init(void) { return arg_init(); }                               \
    CLT_FN void NAME##_add(NAME##_state *st, CT x, clt_u64 k, CT m)                            \
    {                                                                                          \
        (void)m;                                                                               \
        if (arg_before(x, (clt_i64)k, st->v, st->i, LARGEST)) {                                \
            st->v = x;                                                                         \
            st->i = (clt_i64)k;                                                                \
        }                                                                                      \
    }                                                                                          \
    CLT_FN void NAME##_combine(NAME##_state *a, NAME##_state b)                                \
    {                                                                                          \
        if (arg_before(b.v, b.i, a->v, a->i, LARGEST))                                         \
            *a = b;                                                                            \
    }
ARG_FUNCS(argmax, 1)
ARG_FUNCS(argmin, 0)
ARG_FUNCS(amax, 1)
ARG_FUNCS(amin, 0)

CLT_FN clt_i64 argmax_result(arg_state st, __global const ST *row, clt_u64 len)
{
    (void)row;
    (void)len;
    return st.i;
}
CLT_FN clt_i64 argmin_result(arg_state st, __global const ST *row, clt_u64 len)
{
    (void)row;
    (void)len;
    return st.i;
}
/* The chosen element itself, bits and all. */
CLT_FN ST amax_result(arg_state st, __global const ST *row, clt_u64 len)
{
    (void)len;
    return row[st.i];
}
CLT_FN ST amin_result(arg_state st, __global const ST *row, clt_u64 len)
{
    (void)len;
    return row[st.i];
}

/* ---- the kernels ----------------------------------------------------------------------------- */

#define RED_PARAMS(NAME, OT)                                                                   \
    __global const ST *x, ulong x_off, ulong len, ulong rows, ulong parts, ulong chunk,        \
        __global NAME##_state *tmp, __global OT *out, ulong out_off, __global const CT *mean,  \
        ulong mean_off, int uses_mean, int blocked

/* Combines the work-group's states into *st (every work-item's), through ls. */
#define RED_TREE(NAME, st, ls)                                                                 \
    do {                                                                                       \
        uint lid_ = get_local_id(0);                                                           \
        ls[lid_] = st;                                                                         \
        barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        for (uint half_ = get_local_size(0) / 2; half_ > 0; half_ /= 2) {                      \
            if (lid_ < half_) {                                                                \
                NAME##_state a_ = ls[lid_];                                                    \
                NAME##_combine(&a_, ls[lid_ + half_]);                                         \
                ls[lid_] = a_;                                                                 \
            }                                                                                  \
            barrier(CLK_LOCAL_MEM_FENCE);                                                      \
        }                                                                                      \
        st = ls[0];                                                                            \
    } while (0)

#define RED_KERNELS(NAME, OT)                                                                  \
    __kernel void NAME##_rows(RED_PARAMS(NAME, OT))                                            \
    {                                                                                          \
        ulong r = get_global_id(0);                                                            \
        if (r >= rows)                                                                         \
            return;                                                                            \
        __global const ST *row = x + x_off + r * len;                                          \
        CT m = uses_mean ? mean[mean_off + r] : (CT)0;                                         \
        NAME##_state st = NAME##_init();                                                       \
        (void)parts;                                                                           \
        (void)chunk;                                                                           \
        (void)tmp;                                                                             \
        (void)blocked;                                                                         \
        for (ulong k = 0; k < len; k++)                                                        \
            NAME##_add(&st, LOAD(row[k]), k, m);                                               \
        out[out_off + r] = NAME##_result(st, row, len);                                        \
    }                                                                                          \
    __kernel void NAME##_part(RED_PARAMS(NAME, OT))                                            \
    {                                                                                          \
        __local NAME##_state ls[CLT_RED_WG];                                                   \
        ulong g = get_group_id(0), r = g / parts, p = g % parts;                               \
        ulong begin = p * chunk, end = min(begin + chunk, len);                                \
        ulong lsz = get_local_size(0), lid = get_local_id(0), step = lsz, k = begin + lid;     \
        __global const ST *row = x + x_off + r * len;                                          \
        CT m = uses_mean ? mean[mean_off + r] : (CT)0;                                         \
        NAME##_state st = NAME##_init();                                                       \
        (void)rows;                                                                            \
        if (blocked) { /* four independent states: no chain of dependent additions */         \
            ulong per = (end - begin + lsz - 1) / lsz;                                         \
            NAME##_state s1 = NAME##_init(), s2 = NAME##_init(), s3 = NAME##_init();           \
            k = min(begin + lid * per, end);                                                   \
            end = min(k + per, end);                                                           \
            step = 1;                                                                          \
            for (; k + 4 <= end; k += 4) {                                                     \
                NAME##_add(&st, LOAD(row[k]), k, m);                                           \
                NAME##_add(&s1, LOAD(row[k + 1]), k + 1, m);                                   \
                NAME##_add(&s2, LOAD(row[k + 2]), k + 2, m);                                   \
                NAME##_add(&s3, LOAD(row[k + 3]), k + 3, m);                                   \
            }                                                                                  \
            NAME##_combine(&st, s1);                                                           \
            NAME##_combine(&st, s2);                                                           \
            NAME##_combine(&st, s3);                                                           \
        }                                                                                      \
        for (; k < end; k += step)                                                             \
            NAME##_add(&st, LOAD(row[k]), k, m);                                               \
        RED_TREE(NAME, st, ls);                                                                \
        if (get_local_id(0) == 0) {                                                            \
            if (parts == 1)                                                                    \
                out[out_off + r] = NAME##_result(st, row, len);                                \
            else                                                                               \
                tmp[g] = st;                                                                   \
        }                                                                                      \
    }                                                                                          \
    __kernel void NAME##_final(RED_PARAMS(NAME, OT))                                           \
    {                                                                                          \
        __local NAME##_state ls[CLT_RED_WG];                                                   \
        ulong r = get_group_id(0);                                                             \
        ulong step = get_local_size(0);                                                        \
        __global const ST *row = x + x_off + r * len;                                          \
        NAME##_state st = NAME##_init();                                                       \
        (void)rows;                                                                            \
        (void)chunk;                                                                           \
        (void)mean;                                                                            \
        (void)mean_off;                                                                        \
        (void)uses_mean;                                                                       \
        (void)blocked;                                                                         \
        for (ulong k = get_local_id(0); k < parts; k += step)                                  \
            NAME##_combine(&st, tmp[r * parts + k]);                                           \
        RED_TREE(NAME, st, ls);                                                                \
        if (get_local_id(0) == 0)                                                              \
            out[out_off + r] = NAME##_result(st, row, len);                                    \
    }

RED_KERNELS(sum, CT)
RED_KERNELS(argmax, clt_i64)
RED_KERNELS(argmin, clt_i64)
RED_KERNELS(amax, ST)
RED_KERNELS(amin, ST)
#if !CLT_KIND_INT
RED_KERNELS(sqdev, CT)
#endif
