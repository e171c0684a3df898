/* The host backend's reductions: each contiguous row is loaded in blocks converted to the
 * compute type (float for f32, f16 and bf16, double for f64, int64 for integers and bool) by the
 * conversions of cl/scalar.cl, then reduced with the rules of cl/reduce.cl: compensated sums
 * over CLT__LANES interleaved accumulators, ties broken by the smaller index, NaN first. */
#include <math.h>
#include <stdbool.h>

#include "host.h"
#include "core/core.h"
#include "host_parallel.h"
#include "host_simd.h"
#include "host_generic.h"
#include "backends/shared/scalar_host.h"

#define CLT__BLOCK 512 /* elements converted at a time */
#define CLT__LANES 16  /* independent accumulators of a compensated sum */
#define CLT__ARG_LANES 16 /* lanes of a block's largest (smallest) value */
#define COLUMNS 64        /* columns an item of a column sum (inner > 1) */

/* Element `start` .. start + n - 1 of a row of dtype dt, in the compute type of its kind. */
static void load_flt(const void *row, clt_dtype dt, size_t start, size_t n, float *buf)
{
    if (dt == CLT_F32) {
        memcpy(buf, (const float *)row + start, n * sizeof *buf);
    } else if (dt == CLT_F16) {
        for (size_t i = 0; i < n; i++)
            buf[i] = clt_load_f16(((const clt_u16 *)row)[start + i]);
    } else {
        for (size_t i = 0; i < n; i++)
            buf[i] = clt_load_bf16(((const clt_u16 *)row)[start + i]);
    }
}

static void load_dbl(const void *row, clt_dtype dt, size_t start, size_t n, double *buf)
{
    (void)dt;
    memcpy(buf, (const double *)row + start, n * sizeof *buf);
}

static void load_int(const void *row, clt_dtype dt, size_t start, size_t n, clt_i64 *buf)
{
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case CLT_I32: buf[i] = clt_load_i32(((const clt_i32 *)row)[start + i]); break;
        case CLT_I64: buf[i] = clt_load_i64(((const clt_i64 *)row)[start + i]); break;
        case CLT_U8: buf[i] = clt_load_u8(((const clt_u8 *)row)[start + i]); break;
        default: buf[i] = clt_load_b8(((const clt_u8 *)row)[start + i]); break;
        }
    }
}

#if CLT__VEC_EXT
/* The lanes' loops take vectors of CLT__VEC_BYTES: one register of an AVX2 or AVX-512 clone
 * (the baseline's splits it in two). GCC lowers a vector wider than the clone's registers
 * through memory, so the lanes are an array of such vectors, not one vector of all of them. */
#define CLT__VEC_BYTES 32
#endif

/* Whether (a, ia) goes before (b, ib): NaN first, then the larger (largest) or smaller value,
 * then the smaller index; ib < 0 is no element. */
#define ARG_BEFORE(a, ia, b, ib, largest, is_float)                                            \
    ((ib) < 0 ? true                                                                           \
     : (is_float) && ((a) != (a) || (b) != (b)) ? ((a) != (a) && ((b) == (b) || (ia) < (ib)))  \
     : (a) == (b)                                ? (ia) < (ib)                                  \
     : (largest)                                 ? (a) > (b)                                    \
                                                 : (a) < (b))

/* The row reductions of each compute type: the compensated sums of the floating ones
 * (host_reduce_sums.inc) and every type's best element (host_reduce_arg.inc). */
#define KIND flt
#define CT float
#define NATIVE CLT_F32
#define FLT 1
#include "host_reduce_sums.inc"
#include "host_reduce_arg.inc"
#undef KIND
#undef CT
#undef NATIVE
#define KIND dbl
#define CT double
#define NATIVE CLT_F64
#include "host_reduce_sums.inc"
#include "host_reduce_arg.inc"
#undef KIND
#undef CT
#undef NATIVE
#undef FLT
#define KIND int
#define CT clt_i64
#define NATIVE CLT_I64
#define FLT 0
#include "host_reduce_arg.inc"
#undef KIND
#undef CT
#undef NATIVE
#undef FLT

/* The sum of elements [from, to) of an integer or bool row, wrapping modulo 2^64. */
static clt_u64 sum_int(const void *row, clt_dtype dt, size_t from, size_t to)
{
    clt_i64 buf[CLT__BLOCK];
    clt_u64 s = 0;
    for (size_t start = from; start < to; start += CLT__BLOCK) {
        size_t n = to - start < CLT__BLOCK ? to - start : CLT__BLOCK;
        load_int(row, dt, start, n, buf);
        for (size_t i = 0; i < n; i++)
            s += (clt_u64)buf[i];
    }
    return s;
}

/* Rows of at least 2 * PIECE_MIN elements are reduced in pieces of the same length (at least
 * PIECE_MIN, a multiple of CLT__BLOCK, at most MAX_PIECES a row) on the pool's threads: each
 * piece gives its lanes' sums or its best element, and the row's value combines them in order.
 * The pieces depend on the row's length alone, so results do not depend on the thread count.
 * Shorter rows run whole, rows in parallel. Pieces are reduced in groups of rows of at most
 * MAX_PIECES pieces, their partial results on the stack. */
#define PIECE_MIN 16384
#define MAX_PIECES 32

typedef union piece_result {
    sums_flt f;
    sums_dbl d;
    best_flt bf;
    best_dbl bd;
    best_int bi;
    clt_u64 sum;
} piece_result;

typedef struct reduce_job {
    const clt__reduce_call *c;
    size_t size, piece, pieces; /* element size; piece length and count a row */
    size_t row0;                /* the group's first row */
    bool is_flt, is_dbl, largest;
    piece_result *out; /* a result a piece of the group, or NULL: rows write their value */
} reduce_job;

static const char *row_at(const reduce_job *j, size_t r)
{
    return (const char *)j->c->in + (j->c->in_offset + r * j->c->len) * j->size;
}

/* Elements [from, to) of row r into *p. */
static void piece_run(const reduce_job *j, size_t r, size_t from, size_t to, piece_result *p)
{
    const clt__reduce_call *c = j->c;
    const char *row = row_at(j, r);
    bool sqdev = c->op == CLT_REDUCE_SQDEV;
    size_t mo = c->mean_offset + r;
    if (c->op == CLT_REDUCE_SUM || c->op == CLT_REDUCE_MEAN || sqdev) {
        if (j->is_flt)
            csum_flt(row, c->dtype, from, to, sqdev, sqdev ? ((const float *)c->mean)[mo] : 0,
                     &p->f);
        else if (j->is_dbl)
            csum_dbl(row, c->dtype, from, to, sqdev, sqdev ? ((const double *)c->mean)[mo] : 0,
                     &p->d);
        else
            p->sum = sum_int(row, c->dtype, from, to);
    } else if (j->is_flt) {
        arg_flt(row, c->dtype, from, to, j->largest, &p->bf);
    } else if (j->is_dbl) {
        arg_dbl(row, c->dtype, from, to, j->largest, &p->bd);
    } else {
        arg_int(row, c->dtype, from, to, j->largest, &p->bi);
    }
}

/* Row r's value from its pieces' results p[0 .. pieces), written to the output. */
static void row_finish(const reduce_job *j, size_t r, piece_result *p, size_t pieces)
{
    const clt__reduce_call *c = j->c;
    size_t o = c->out_offset + r, len = c->len;
    bool sqdev = c->op == CLT_REDUCE_SQDEV, mean = c->op == CLT_REDUCE_MEAN;
    if (c->op == CLT_REDUCE_SUM || mean || sqdev) {
        if (j->is_flt) { /* a mean: the sum in its dtype, then divided, as the kernels do */
            float s = csum_result_flt(&p->f, sizeof *p, pieces, sqdev, len);
            ((float *)c->out)[o] = mean ? s / (float)len : s;
        } else if (j->is_dbl) {
            double s = csum_result_dbl(&p->d, sizeof *p, pieces, sqdev, len);
            ((double *)c->out)[o] = mean ? s / (double)len : s;
        } else {
            clt_u64 s = 0;
            for (size_t k = 0; k < pieces; k++)
                s += p[k].sum;
            ((clt_i64 *)c->out)[o] = clt_bits_i64(s);
        }
        return;
    }
    int64_t at = j->is_flt   ? arg_result_flt(&p->bf, sizeof *p, pieces, j->largest)
                 : j->is_dbl ? arg_result_dbl(&p->bd, sizeof *p, pieces, j->largest)
                             : arg_result_int(&p->bi, sizeof *p, pieces, j->largest);
    if (c->op == CLT_REDUCE_ARGMAX || c->op == CLT_REDUCE_ARGMIN)
        ((clt_i64 *)c->out)[o] = at;
    else
        memcpy((char *)c->out + o * j->size, row_at(j, r) + (size_t)at * j->size, j->size);
}

/* The pool's part: pieces [lo, hi) of the group (into j->out), or whole rows [lo, hi). */
static void reduce_part(const void *call, size_t lo, size_t hi)
{
    const reduce_job *j = call;
    size_t len = j->c->len;
    for (size_t i = lo; i < hi; i++) {
        if (j->out) {
            size_t r = j->row0 + i / j->pieces, from = i % j->pieces * j->piece;
            size_t to = from + j->piece < len ? from + j->piece : len;
            piece_run(j, r, from, to, &j->out[i]);
        } else {
            piece_result p;
            piece_run(j, i, 0, len, &p);
            row_finish(j, i, &p, 1);
        }
    }
}


clt_status clt__host_reduce(const char *fn, clt_device *dev, const clt__reduce_call *c)
{
    if (c->inner > 1) {
        clt__host_parallel(c->rows * ((c->inner + COLUMNS - 1) / COLUMNS), c->len * COLUMNS,
                           c->dtype == CLT_F64 ? columns_dbl : columns_flt, c);
        return CLT_OK;
    }
    reduce_job j = {.c = c,
                    .size = clt_dtype_size(c->dtype),
                    .is_flt = clt__dtype(c->dtype)->compute == CLT_F32,
                    .is_dbl = c->dtype == CLT_F64,
                    .largest = c->op == CLT_REDUCE_ARGMAX || c->op == CLT_REDUCE_AMAX};
    (void)dev;

    if ((c->op == CLT_REDUCE_SQDEV || c->op == CLT_REDUCE_MEAN) && !j.is_flt && !j.is_dbl)
        return clt__error(CLT_ERR_DTYPE, fn, "%s of dtype %s on cpu",
                          c->op == CLT_REDUCE_MEAN ? "a mean" : "squared deviations",
                          clt_dtype_name(c->dtype));
    size_t cost = c->op == CLT_REDUCE_SQDEV ? 2 * c->len : c->len;
    if (c->len < 2 * PIECE_MIN) {
        clt__host_parallel(c->rows, cost, reduce_part, &j);
        return CLT_OK;
    }
    piece_result out[MAX_PIECES];
    size_t pieces = c->len / PIECE_MIN < MAX_PIECES ? c->len / PIECE_MIN : MAX_PIECES;
    j.piece = (c->len + pieces - 1) / pieces;
    j.piece = (j.piece + CLT__BLOCK - 1) / CLT__BLOCK * CLT__BLOCK;
    j.pieces = (c->len + j.piece - 1) / j.piece;
    j.out = out;
    size_t group = MAX_PIECES / j.pieces; /* rows a group */
    for (j.row0 = 0; j.row0 < c->rows; j.row0 += group) {
        size_t rows = c->rows - j.row0 < group ? c->rows - j.row0 : group;
        clt__host_parallel(rows * j.pieces, cost / j.pieces, reduce_part, &j);
        for (size_t r = 0; r < rows; r++)
            row_finish(&j, j.row0 + r, &out[r * j.pieces], j.pieces);
    }
    return CLT_OK;
}
