/* Reduction kernels: each of `rows` contiguous rows of `len` elements gives one value (see
 * clt__reduce_call in backends/backend.h). Built for one input dtype with -DDT=<token>, -DST=<storage
 * type>, -DCT=<compute type>, -DKIND=<flt, dbl or int> and -DCLT_KIND_INT. For every operation
 * NAME (sum, amax, amin, argmax, argmin and, for floating dtypes, sqdev) there are three
 * kernels with the same arguments:
 *   NAME_rows:  one work-item per row, the row read in order (short rows);
 *   NAME_part:  work-group g reduces part g % parts of row g / parts (`chunk` elements), its
 *               work-items striding over the part (neighbours read neighbouring elements, as
 *               GPUs want) or, with `blocked` (for CPU devices, which run a work-group's
 *               work-items one after another), each reading one contiguous block of it in
 *               vectors of VW elements (NAME_vrun); then they combine their states in a
 *               local-memory tree. With parts 1 it writes the row's result, otherwise its state
 *               to tmp[g];
 *   NAME_final: work-group r combines the `parts` states of row r from tmp into the result.
 * Work-groups have a power-of-two size of at most CLT_RED_WG. Sums are compensated (each
 * addition's rounding error is kept by an error-free transformation and added at the end), so
 * their error does not grow with len; argmax and argmin compare indices on ties, so the result
 * does not depend on the order of combination. The order of a sum is fixed by the launch (parts,
 * work-group size, layout), which the backend derives from the row length, the number of rows
 * and the device's compute units and type: the same call on the same device gives the same bits.
 * Blocked, a work-item keeps VW lane sums (element k of its block in lane k % VW), added into one
 * by a tree of two-sums at the end. With chains of at most L additions into one rounded sum (L =
 * chunk / VW blocked, chunk / work-group size strided), the error is at most the final rounding,
 * 2^-24 |sum| for f32 (2^-53 for f64), plus about (L u)^2 sum(|x|) with u that unit roundoff. */

#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define CLT_RED_WG 256

/* ---- vectors for the blocked layout: VT the compute type in VW lanes, VLOAD(p) p[0 .. VW) ---- */
/* VW is the device's native vector width for the compute type (CLT_VW_FLOAT, CLT_VW_DOUBLE,
 * CLT_VW_LONG: 2, 4, 8 or 16, from the build options), so that no vector is wider than the
 * CPU's registers. */

#define VW_flt CLT_VW_FLOAT
#define VW_dbl CLT_VW_DOUBLE
#define VW_int CLT_VW_LONG
#define VW CLT_PASTE(VW_, KIND)
#define VS_flt float
#define VS_dbl double
#define VS_int long
#define VT CLT_CAT(CLT_CAT(VS_, KIND), VW)
#define VM_flt CLT_PASTE(int, VW) /* the lanes' comparison results */
#define VM_dbl CLT_PASTE(long, VW)
#define VM_int CLT_PASTE(long, VW)
#define VM CLT_CAT(VM_, KIND)
#define VU CLT_CAT(ulong, VW)
#define AS_VU CLT_CAT(as_ulong, VW)
#define VLOADN CLT_CAT(vload, VW)
#define VSTOREN CLT_CAT(vstore, VW)

/* p[0 .. VW) of a dtype whose storage is not its compute type, converted. */
CLT_FN VT vload_any(__global const ST *p)
{
    CT t[VW];
    for (int i = 0; i < VW; i++)
        t[i] = LOAD(p[i]);
    return VLOADN(0, t);
}
#define VLOAD_f32(p) VLOADN(0, p)
#define VLOAD_f64(p) VLOADN(0, p)
#define VLOAD_i64(p) VLOADN(0, p)
#define VLOAD_f16(p) vload_any(p)
#define VLOAD_bf16(p) vload_any(p)
#define VLOAD_i32(p) vload_any(p)
#define VLOAD_u8(p) vload_any(p)
#define VLOAD_b8(p) vload_any(p)
#define VLOAD(p) CLT_CAT(VLOAD_, DT)(p)

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
/* Adds row[k .. end) into *st, VW elements at a time (wrapping: the order does not matter). */
CLT_FN void sum_vrun(__global const ST *row, ulong k, ulong end, CT m, sum_state *st)
{
    VU v = 0;
    clt_u64 l[VW];
    (void)m;
    for (; k + VW <= end; k += VW)
        v += AS_VU(VLOAD(row + k));
    VSTOREN(v, 0, l);
    for (int i = 0; i < VW; i++)
        st->s += l[i];
    for (; k < end; k++)
        st->s += (clt_u64)LOAD(row[k]);
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

/* VW compensated sums, one a lane. */
typedef struct { VT s, c; } vcsum;
CLT_FN void vcsum_add(vcsum *st, VT x)
{
    VT t = st->s + x;
    VT bp = t - st->s;
    st->c += (st->s - (t - bp)) + (x - bp);
    st->s = t;
}
/* The lanes combined by a tree of two-sums (lane l with lane l + w, w = VW / 2 ... 1). */
CLT_FN csum vcsum_total(vcsum v)
{
    CT s[VW], c[VW];
    csum r;
    VSTOREN(v.s, 0, s);
    VSTOREN(v.c, 0, c);
    for (int w = VW / 2; w > 0; w /= 2) {
        for (int l = 0; l < w; l++) {
            CT e;
            two_sum(s[l], s[l + w], &s[l], &e);
            c[l] += c[l + w] + e;
        }
    }
    r.s = s[0];
    r.c = c[0];
    return r;
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
/* Adds row[k .. end) into *st (empty): VW lanes over the whole vectors, then the rest. */
CLT_FN void sum_vrun(__global const ST *row, ulong k, ulong end, CT m, sum_state *st)
{
    vcsum v = {(VT)0, (VT)0};
    (void)m;
    for (; k + VW <= end; k += VW)
        vcsum_add(&v, VLOAD(row + k));
    *st = vcsum_total(v);
    for (; k < end; k++)
        csum_add(st, LOAD(row[k]));
}

/* ---- mean: the sum divided by len ------------------------------------------------------------ */

typedef csum mean_state;
CLT_FN mean_state mean_init(void) { return csum_init(); }
CLT_FN void mean_add(mean_state *st, CT x, clt_u64 k, CT m) { sum_add(st, x, k, m); }
CLT_FN void mean_combine(mean_state *a, mean_state b) { csum_combine(a, b); }
CLT_FN CT mean_result(mean_state st, __global const ST *row, clt_u64 len)
{
    (void)row;
    return csum_value(st) / (CT)len;
}
CLT_FN void mean_vrun(__global const ST *row, ulong k, ulong end, CT m, mean_state *st)
{
    sum_vrun(row, k, end, m, st);
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
/* As sum_vrun, for (x - m)^2 and x - m. */
CLT_FN void sqdev_vrun(__global const ST *row, ulong k, ulong end, CT m, sqdev_state *st)
{
    vcsum q = {(VT)0, (VT)0}, d = {(VT)0, (VT)0};
    for (; k + VW <= end; k += VW) {
        VT x = VLOAD(row + k) - m;
        vcsum_add(&q, x * x);
        vcsum_add(&d, x);
    }
    st->q = vcsum_total(q);
    st->d = vcsum_total(d);
    for (; k < end; k++)
        sqdev_add(st, LOAD(row[k]), k, m);
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

#define ARG_BLOCK 256 /* elements whose largest (smallest) value is found before any index */

/* Whether the state holds a NaN: nothing later can go before it. */
CLT_FN int arg_is_nan(arg_state st)
{
#if CLT_KIND_INT
    (void)st;
    return 0;
#else
    return st.i >= 0 && st.v != st.v;
#endif
}

/* Adds row[k .. end) into *st in blocks of ARG_BLOCK: the block's best value is found lane by
 * lane without indices (NaNs only noted), and only a block holding a NaN or a value that goes
 * before the state is read again element by element with arg_before, so the result is the
 * one of adding every element in order. Stops at a NaN. */
CLT_FN void arg_vrun(__global const ST *row, ulong k, ulong end, int largest, arg_state *st)
{
    for (; k + ARG_BLOCK <= end && !arg_is_nan(*st); k += ARG_BLOCK) {
        VT b = VLOAD(row + k);
        CT l[VW], best;
        int again = 0;
#if !CLT_KIND_INT
        VM any_nan = isnan(b);
#endif
        for (int j = VW; j < ARG_BLOCK; j += VW) {
            VT v = VLOAD(row + k + j);
            b = select(b, v, largest ? v > b : v < b);
#if !CLT_KIND_INT
            any_nan |= isnan(v);
#endif
        }
        VSTOREN(b, 0, l);
        best = l[0];
        for (int i = 1; i < VW; i++)
            best = (largest ? l[i] > best : l[i] < best) ? l[i] : best;
#if !CLT_KIND_INT
        again = any(any_nan);
#endif
        if (!again && !arg_before(best, (clt_i64)k, st->v, st->i, largest))
            continue;
        for (ulong i = k; i < k + ARG_BLOCK; i++) {
            if (arg_before(LOAD(row[i]), (clt_i64)i, st->v, st->i, largest)) {
                st->v = LOAD(row[i]);
                st->i = (clt_i64)i;
            }
        }
    }
    for (; k < end && !arg_is_nan(*st); k++) {
        if (arg_before(LOAD(row[k]), (clt_i64)k, st->v, st->i, largest)) {
            st->v = LOAD(row[k]);
            st->i = (clt_i64)k;
        }
    }
}
CLT_FN void argmax_vrun(__global const ST *row, ulong k, ulong end, CT m, arg_state *st)
{
    (void)m;
    arg_vrun(row, k, end, 1, st);
}
CLT_FN void argmin_vrun(__global const ST *row, ulong k, ulong end, CT m, arg_state *st)
{
    (void)m;
    arg_vrun(row, k, end, 0, st);
}
CLT_FN void amax_vrun(__global const ST *row, ulong k, ulong end, CT m, arg_state *st)
{
    (void)m;
    arg_vrun(row, k, end, 1, st);
}
CLT_FN void amin_vrun(__global const ST *row, ulong k, ulong end, CT m, arg_state *st)
{
    (void)m;
    arg_vrun(row, k, end, 0, st);
}

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
        ulong g = get_global_id(0), r = g < rows ? g : 0; /* (no branch before the reads) */   \
        __global const ST *row = x + x_off + r * len;                                          \
        __global OT *dst = out + out_off + r;                                                  \
        __global const CT *mr = mean + mean_off + r;                                           \
        CT m = uses_mean ? *mr : (CT)0;                                                        \
        NAME##_state st = NAME##_init();                                                       \
        (void)parts;                                                                           \
        (void)chunk;                                                                           \
        (void)tmp;                                                                             \
        (void)blocked;                                                                         \
        for (ulong k = 0; k < len; k++)                                                        \
            NAME##_add(&st, LOAD(row[k]), k, m);                                               \
        if (g < rows)                                                                          \
            *dst = NAME##_result(st, row, len);                                                \
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
        if (blocked) { /* one contiguous block a work-item, in vectors */                     \
            ulong per = (end - begin + lsz - 1) / lsz;                                         \
            k = min(begin + lid * per, end);                                                   \
            NAME##_vrun(row, k, min(k + per, end), m, &st);                                    \
        } else {                                                                               \
            for (; k < end; k += step)                                                         \
                NAME##_add(&st, LOAD(row[k]), k, m);                                           \
        }                                                                                      \
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

/* Column sums (clt__reduce_call's inner > 1, floating dtypes): out[r * inner + i] = the
 * compensated sum down the len rows of x[x_off + (r * len + l) * inner + i], one column a
 * work-item on GPUs (neighbours read neighbouring columns); in the blocked layout a work-item
 * takes a run of columns, COLUMN_RUN of one row group at a time in its lanes, read a row
 * piece at a time, as vectors where the piece is whole (element by element, the gradient of
 * a bias of 256 over 128 rows took several times as long on PoCL). */
#define COLUMN_RUN 16
#if CLT_WANTED(sums) && !CLT_KIND_INT
CLT_FN void sum_columns_run(__global const ST *x, ulong len, ulong inner, ulong c, ulong n,
                            __global CT *out)
{
    ulong r = c / inner, i = c % inner;
    __global const ST *col = x + r * len * inner + i;
    if (n == COLUMN_RUN) { /* the same sums in vectors of VW columns (VW divides COLUMN_RUN) */
        vcsum v[COLUMN_RUN / VW];
        for (int q = 0; q < COLUMN_RUN / VW; q++)
            v[q].s = v[q].c = (VT)0;
        for (ulong l = 0; l < len; l++, col += inner)
            for (int q = 0; q < COLUMN_RUN / VW; q++)
                vcsum_add(&v[q], VLOAD(col + q * VW));
        for (int q = 0; q < COLUMN_RUN / VW; q++) {
            CT s[VW], e[VW];
            VSTOREN(v[q].s, 0, s);
            VSTOREN(v[q].c, 0, e);
            for (int j = 0; j < VW; j++)
                out[c + q * VW + j] = isfinite(s[j]) ? s[j] + e[j] : s[j];
        }
        return;
    }
    csum st[COLUMN_RUN];
    for (ulong j = 0; j < n; j++)
        st[j] = csum_init();
    for (ulong l = 0; l < len; l++)
        for (ulong j = 0; j < n; j++)
            csum_add(&st[j], LOAD(col[l * inner + j]));
    for (ulong j = 0; j < n; j++)
        out[c + j] = csum_value(st[j]);
}

__kernel void sum_columns(__global const ST *x, ulong x_off, ulong len, ulong inner, ulong cols,
                          __global CT *out, ulong out_off, int blocked)
{
    ulong g = get_global_id(0), gs = get_global_size(0); /* before any branch (clt_run_span) */
    if (blocked) {
        ulong b, e;
        clt_run_span(cols, g, gs, &b, &e);
        while (b < e) { /* pieces within one row group */
            ulong n = min(min(e - b, inner - b % inner), (ulong)COLUMN_RUN);
            sum_columns_run(x + x_off, len, inner, b, n, out + out_off);
            b += n;
        }
        return;
    }
    for (ulong c = g; c < cols; c += gs)
        sum_columns_run(x + x_off, len, inner, c, 1, out + out_off);
}
#endif

/* The parts (CLT_WANTED, common.cl): sums (sum, sqdev, mean, sum_columns) and extremes (the
 * rest). */
#if CLT_WANTED(sums)
RED_KERNELS(sum, CT)
#if !CLT_KIND_INT
RED_KERNELS(sqdev, CT)
RED_KERNELS(mean, CT)
#endif
#endif
#if CLT_WANTED(extremes)
RED_KERNELS(argmax, clt_i64)
RED_KERNELS(argmin, clt_i64)
RED_KERNELS(amax, ST)
RED_KERNELS(amin, ST)
#endif
