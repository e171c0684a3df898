/* The plan of a reduction, shared by the reductions the backend runs (reduce.c) and those
 * composed of them and elementwise operations (reduce_composed.c). */
#ifndef CLT_OPS_REDUCE_PLAN_H
#define CLT_OPS_REDUCE_PLAN_H

#include "graph/graph.h"
#include "ops_internal.h"

/* How x is reduced: the dims, the permutation that moves them last, the rows and their length,
 * and the result's shape. */
typedef struct clt__reduce_plan {
    bool reduced[CLT_MAX_DIMS];
    int perm[CLT_MAX_DIMS]; /* the kept dimensions in order, then the reduced ones */
    bool moved;             /* perm is not the identity */
    size_t rows, len;
    size_t inner; /* > 1: sums down the columns of x as it lies (clt__reduce_columns) */
    int ndim;     /* the result's */
    int64_t shape[CLT_MAX_DIMS];
    int empty_dim; /* a reduced dimension of size 0, or -1 */
} clt__reduce_plan;

/* t, or, when t is NULL (a call made for fn failed), NULL with the error renamed "fn: cause". */
static inline clt_tensor *clt__reduce_named(const char *fn, clt_tensor *t)
{
    if (!t)
        clt__rename_error(fn);
    return t;
}

/* Checks x and the dims (negative from the end; none = all) and works out the plan. */
clt_status clt__reduce_plan_make(const char *fn, const clt_tensor *x, const int *dims,
                                 int ndims, bool keepdim, clt__reduce_plan *p);
/* Turns a plan of a floating x into sums down the columns of x as it lies, where that pays. */
void clt__reduce_columns(const clt_tensor *x, clt__reduce_plan *p);
/* x with the reduced dimensions moved last (or as it lies, for columns), contiguous: a new
 * reference. */
clt_tensor *clt__reduce_arrange(const char *fn, clt_tensor *x, const clt__reduce_plan *p);
/* Runs op over rows rows of len elements of the contiguous xc into out (contiguous, rows
 * elements); mean (SQDEV) gives one value a row. Rows without elements give 0. */
clt_status clt__reduce_launch(const char *fn, clt__reduce_op op, clt_tensor *xc, size_t rows,
                              size_t len, size_t inner, clt_tensor *out, clt_tensor *mean);
/* op over the arranged xc into a new tensor of the given shape and the op's result dtype. */
clt_tensor *clt__reduce_new(const char *fn, clt__reduce_op op, clt_tensor *xc, size_t rows,
                            size_t len, size_t inner, int ndim, const int64_t *shape,
                            clt_tensor *mean);
/* t converted to dtype (t's reference is taken over). */
clt_tensor *clt__reduce_finish(const char *fn, clt_tensor *t, clt_dtype dtype);
/* out, a reduction of x over dims, recorded for autograd as operation op. */
clt_tensor *clt__reduce_recorded(const char *fn, clt__op op, clt_tensor *x, clt_tensor *out,
                                  const int *dims, int ndims, bool keepdim, int64_t correction);

/* The body of a public reduction over x, dims, ndims and keepdim: call, recorded as op (name
 * the function's) where recording is on and the result is floating. */
#define CLT__REDUCE_RECORDED(name, op, call, correction)                                       \
    do {                                                                                       \
        bool prev_, rec_ = clt__grad_begin(&x, 1, &prev_);                                     \
        clt_tensor *out_ = call;                                                               \
        clt__grad_end(prev_);                                                                  \
        if (!rec_ || !out_ || !clt__is_floating(out_->dtype))                                  \
            return out_;                                                                       \
        return clt__reduce_recorded(name, op, x, out_, dims, ndims, keepdim, correction);      \
    } while (0)

#endif
