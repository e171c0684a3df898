/* The OpenCL backend's reductions (cl/reduce.cl): choosing how rows map onto work-items and
 * launching the kernels. Rows of at most CLT__RED_SHORT elements take one work-item each. Longer
 * rows take one work-group each; when there are too few rows to give every compute unit
 * several work-groups, each row is split into parts of at least CLT__RED_MIN_PART elements,
 * each part reduced by one work-group into a partial state in a temporary buffer, and a second
 * launch combines the parts of every row. Work-items of a group read interleaved elements on
 * GPUs and accelerators (coalesced loads) and one contiguous block each on CPU-type devices,
 * which run a group's work-items one after another: there work-groups have CLT__RED_CPU_WG
 * work-items, each reading its block in vectors (the layout follows clt__cl_run_layout). Sums
 * down columns (inner > 1) take one column a work-item, or a run of them in the blocked layout. */
#include <stdio.h>

#include "cl_internal.h"
#include "cl_launch.h"
#include "core/core.h"

#define CLT__RED_WG 256          /* work-group size asked for: CLT_RED_WG of cl/reduce.cl */
#define CLT__RED_SHORT 32        /* rows this short: one work-item per row */
#define CLT__RED_GROUPS_PER_CU 8 /* work-groups wanted per compute unit */
#define CLT__RED_MIN_PART 4096   /* elements a work-group takes at least, when rows are split */
#define CLT__RED_MAX_PARTS 1024  /* parts of one row at most */
#define CLT__RED_STATE_MAX 32    /* bytes of the largest partial state (sqdev in f64) */
#define CLT__RED_CPU_WG 1        /* work-group size in the blocked layout */

static const char *red_name(clt__reduce_op op)
{
    switch (op) {
    case CLT_REDUCE_SUM: return "sum";
    case CLT_REDUCE_AMAX: return "amax";
    case CLT_REDUCE_AMIN: return "amin";
    case CLT_REDUCE_ARGMAX: return "argmax";
    case CLT_REDUCE_ARGMIN: return "argmin";
    case CLT_REDUCE_MEAN: return "mean";
    default: return "sqdev";
    }
}

/* The program of an operation's kernels: its part of cl/reduce.cl. */
static const char *red_program(clt__reduce_op op)
{
    return op == CLT_REDUCE_SUM || op == CLT_REDUCE_SQDEV || op == CLT_REDUCE_MEAN
               ? "reduce:sums"
               : "reduce:extremes";
}

/* Column sums (inner > 1): sum_columns over rows * inner columns, CLT_RUN's launch. */
static clt_status columns(const char *fn, clt_device *dev, const clt__reduce_call *c)
{
    cl_mem x = c->in, out = c->out;
    cl_ulong x_off = c->in_offset, len = c->len, inner = c->inner, cols = c->rows * c->inner;
    cl_ulong out_off = c->out_offset;
    cl_int blocked = clt__cl_run_layout(dev);
    const clt__cl_arg args[] = {
        {sizeof x, &x},       {sizeof x_off, &x_off}, {sizeof len, &len},
        {sizeof inner, &inner}, {sizeof cols, &cols}, {sizeof out, &out},
        {sizeof out_off, &out_off}, {sizeof blocked, &blocked},
    };
    return clt__cl_run(fn, dev, "reduce:sums", clt__dtype(c->dtype)->options, "sum_columns",
                       CLT__CL_ARGS(args), cols);
}

clt_status clt__cl_reduce(const char *fn, clt_device *dev, const clt__reduce_call *c)
{
    if (c->inner > 1)
        return columns(fn, dev, c);
    char kernel[32];
    const char *opts = clt__dtype(c->dtype)->options, *program = red_program(c->op);
    cl_mem x = c->in, out = c->out, mean = c->mean ? c->mean : c->out, tmp = c->out;
    cl_ulong x_off = c->in_offset, len = c->len, rows = c->rows, parts = 1, chunk = c->len;
    cl_ulong out_off = c->out_offset, mean_off = c->mean ? c->mean_offset : 0;
    cl_int uses_mean = c->op == CLT_REDUCE_SQDEV;
    cl_int blocked = clt__cl_run_layout(dev);
    size_t local = blocked ? CLT__RED_CPU_WG : CLT__RED_WG, want;
    void *tmp_buf = NULL;
    clt_status st;

    if ((c->op == CLT_REDUCE_SQDEV || c->op == CLT_REDUCE_MEAN) &&
        clt__reduce_dtype(CLT_REDUCE_SUM, c->dtype) == CLT_I64)
        return clt__error(CLT_ERR_DTYPE, fn, "%s of dtype %s on %s",
                          c->op == CLT_REDUCE_MEAN ? "a mean" : "squared deviations",
                          clt_dtype_name(c->dtype), dev->name);
    const clt__cl_arg args[] = {
        {sizeof x, &x},         {sizeof x_off, &x_off}, {sizeof len, &len},
        {sizeof rows, &rows},   {sizeof parts, &parts}, {sizeof chunk, &chunk},
        {sizeof tmp, &tmp},     {sizeof out, &out},     {sizeof out_off, &out_off},
        {sizeof mean, &mean},   {sizeof mean_off, &mean_off}, {sizeof uses_mean, &uses_mean},
        {sizeof blocked, &blocked},
    };
    const int nargs = (int)(sizeof args / sizeof *args);

    if (c->len <= CLT__RED_SHORT) {
        snprintf(kernel, sizeof kernel, "%s_rows", red_name(c->op));
        return clt__cl_launch(fn, dev, program, opts, kernel, args, nargs, c->rows, NULL);
    }

    want = (size_t)(dev->info.compute_units ? dev->info.compute_units : 1) * CLT__RED_GROUPS_PER_CU;
    if (c->rows < want) {
        cl_ulong most = c->len / CLT__RED_MIN_PART;
        parts = (want + c->rows - 1) / c->rows;
        parts = parts < most ? parts : most;
        parts = parts < CLT__RED_MAX_PARTS ? parts : CLT__RED_MAX_PARTS;
        parts = parts > 1 ? parts : 1;
    }
    chunk = (len + parts - 1) / parts;
    parts = (len + chunk - 1) / chunk; /* no part left empty */
    while (local > 32 && local / 2 >= chunk)
        local /= 2;
    if (parts > 1) {
        st = dev->backend->alloc(fn, dev, (size_t)(rows * parts) * CLT__RED_STATE_MAX, &tmp_buf);
        if (st != CLT_OK)
            return st;
        tmp = tmp_buf;
    }
    snprintf(kernel, sizeof kernel, "%s_part", red_name(c->op));
    st = clt__cl_launch_groups(fn, dev, program, opts, kernel, args, nargs,
                               (size_t)(rows * parts), &local, NULL);
    if (st == CLT_OK && parts > 1) {
        local = blocked ? CLT__RED_CPU_WG : CLT__RED_WG;
        while (local > 32 && local / 2 >= parts)
            local /= 2;
        snprintf(kernel, sizeof kernel, "%s_final", red_name(c->op));
        st = clt__cl_launch_groups(fn, dev, program, opts, kernel, args, nargs, c->rows, &local,
                                   NULL);
    }
    if (tmp_buf)
        dev->backend->free(dev, tmp_buf); /* released once the queued kernels finish */
    return st;
}
