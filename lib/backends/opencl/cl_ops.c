/* The OpenCL backend's kernels for tensors: dtype conversion (cl/cast.cl), elementwise
 * operations (cl/elementwise.cl: the strided kernels, or, when every operand is contiguous, the
 * ewc_ kernels that loop with CLT_RUN, and copies that are batched transposes in tiles:
 * ew_copy_t through local memory, or ew_copy_tb one tile a work-item on CPU-type devices),
 * copies that keep the last dimension run by run (ew_copy_rows),
 * fills and random fills (cl/random.cl). */
#include <stdio.h>
#include <string.h>

#include "backends/shared/scalar_host.h"
#include "cl_internal.h"
#include "cl_launch.h"
#include "core/core.h"

/* The dtype whose programs move elements of `size` bytes as bits (fills, transposes): u8, f16,
 * i32 or i64. */
static clt_dtype bits_dtype(size_t size)
{
    return size == 1 ? CLT_U8 : size == 2 ? CLT_F16 : size == 4 ? CLT_I32 : CLT_I64;
}

clt_status clt__cl_cast(const char *fn, clt_device *dev, void *src, size_t src_off,
                        clt_dtype src_dtype, void *dst, size_t dst_off, clt_dtype dst_dtype,
                        size_t n)
{
    char program[32], kernel[32];
    cl_mem s = src, d = dst;
    cl_ulong so = src_off, dof = dst_off, count = n;
    cl_int blocked = clt__cl_run_layout(dev);
    const clt__cl_arg args[] = {
        {sizeof s, &s},         {sizeof so, &so},           {sizeof d, &d},
        {sizeof dof, &dof},     {sizeof count, &count},     {sizeof blocked, &blocked},
    };
    snprintf(kernel, sizeof kernel, "cast_%s_%s", clt__dtype(src_dtype)->token,
             clt__dtype(dst_dtype)->token);
    snprintf(program, sizeof program, "cast:from_%s", clt__dtype(src_dtype)->token);
    return clt__cl_run(fn, dev, program, NULL, kernel, CLT__CL_ARGS(args), n);
}

/* The kernel names of the elementwise operations: strided (ew_) and contiguous (ewc_). */
#define CLT__EW_KERNELS(name, ...) {"ew_" #name, "ewc_" #name},
static const char *const ew_kernels[CLT_EW_COUNT][2] = {
    CLT_EW_OPS(CLT__EW_KERNELS){"ew_copy", "ewc_copy"}, {"ew_where", "ewc_where"}};

/* The programs that hold them: the part of cl/elementwise.cl for the operation's group. */
#define CLT__EW_BINARY(...) "elementwise:binary",
#define CLT__EW_SCALAR(...) "elementwise:scalar",
#define CLT__EW_SIGN(...) "elementwise:sign",
#define CLT__EW_MATH(...) "elementwise:math",
#define CLT__EW_COMPARE(...) "elementwise:compare",
#define CLT__EW_BACKWARD(...) "elementwise:backward",
static const char *const ew_programs[CLT_EW_COUNT] = {
    CLT_EW_BINARY(CLT__EW_BINARY) CLT_EW_SCALAR(CLT__EW_SCALAR) CLT_EW_SIGN(CLT__EW_SIGN)
    CLT_EW_MATH(CLT__EW_MATH) CLT_EW_COMPARE(CLT__EW_COMPARE) CLT_EW_BACKWARD(CLT__EW_BACKWARD)
    "elementwise:copy", "elementwise:copy"};

/* An elementwise call over contiguous operands: ewc_<op>, bufs and offs in the order output,
 * inputs; s0 and s1 the scalars, ssize bytes each. */
static clt_status contiguous(const char *fn, clt_device *dev, const clt__ew_call *c,
                             const cl_mem *bufs, const cl_ulong *offs, const void *s0,
                             const void *s1, size_t ssize)
{
    cl_ulong n = c->n;
    cl_int blocked = clt__cl_run_layout(dev);
    const clt__cl_arg args[] = {
        {sizeof bufs[0], &bufs[0]}, {sizeof offs[0], &offs[0]}, {sizeof bufs[1], &bufs[1]},
        {sizeof offs[1], &offs[1]}, {sizeof bufs[2], &bufs[2]}, {sizeof offs[2], &offs[2]},
        {sizeof bufs[3], &bufs[3]}, {sizeof offs[3], &offs[3]}, {sizeof n, &n},
        {sizeof blocked, &blocked}, {ssize, s0},                {ssize, s1},
    };
    return clt__cl_run(fn, dev, ew_programs[c->op], clt__dtype(c->dtype)->options,
                       ew_kernels[c->op][1], CLT__CL_ARGS(args),
                       c->n);
}

/* The struct arguments of cl/elementwise.cl's strided kernels and transposes, field for
 * field. */
typedef struct ew_layout {
    cl_long sh[8], st[32];
} ew_layout;
typedef struct tp_batch {
    cl_long sh[8], out[8], in[8];
} tp_batch;

/* The batch dimensions of a copy: nb sizes and the strides of out and in (the rest 1 and 0). */
static tp_batch batch_of(int nb, const int64_t *shape, const int64_t *out, const int64_t *in)
{
    tp_batch bd;
    for (int d = 0; d < 8; d++) {
        bd.sh[d] = d < nb ? shape[d] : 1;
        bd.out[d] = d < nb ? out[d] : 0;
        bd.in[d] = d < nb ? in[d] : 0;
    }
    return bd;
}

#define CLT__TP_T 32   /* TP_T of cl/elementwise.cl */
#define CLT__TP_ROWS 8 /* TP_ROWS */

/* A copy of plan t in tiles (ew_copy_t, or ew_copy_tb with the blocked layout). */
static clt_status tiled(const char *fn, clt_device *dev, const clt__ew_call *c,
                        const clt__tile_plan *t)
{
    cl_mem out = c->out.buf, in = c->in[0].buf;
    cl_ulong out_off = c->out.offset, in_off = c->in[0].offset, rows = t->rows, cols = t->cols;
    cl_ulong batch = t->batch;
    cl_long out_rs = t->out_rs, in_cs = t->in_cs;
    tp_batch bd = batch_of(t->nb, t->bshape, t->out_bs, t->in_bs);
    cl_int nb = t->nb;
    size_t ti = (t->rows + CLT__TP_T - 1) / CLT__TP_T, tj = (t->cols + CLT__TP_T - 1) / CLT__TP_T;
    const clt__cl_arg args[] = {
        {sizeof out, &out},       {sizeof out_off, &out_off}, {sizeof in, &in},
        {sizeof in_off, &in_off}, {sizeof rows, &rows},       {sizeof cols, &cols},
        {sizeof out_rs, &out_rs}, {sizeof in_cs, &in_cs},     {sizeof batch, &batch},
        {sizeof bd, &bd},         {sizeof nb, &nb},
    };
    const char *opts = clt__dtype(bits_dtype(clt_dtype_size(c->dtype)))->options;
    if (clt__cl_run_layout(dev))
        return clt__cl_launch(fn, dev, "elementwise:transpose", opts, "ew_copy_tb",
                              CLT__CL_ARGS(args), ti * tj * t->batch, NULL);
    size_t global[3] = {tj * CLT__TP_T, ti * CLT__TP_ROWS, t->batch};
    size_t local[3] = {CLT__TP_T, CLT__TP_ROWS, 1};
    return clt__cl_launch_nd(fn, dev, "elementwise:transpose", opts, "ew_copy_t",
                             CLT__CL_ARGS(args), 3, global, local, NULL);
}

/* Whether c is a strided copy whose last dimension has stride 1 in both tensors (then
 * ew_copy_rows copies it run by run). */
static bool copies_runs(const clt__ew_call *c)
{
    return c->op == CLT_EW_copy && c->ndim >= 2 && c->out.strides[c->ndim - 1] == 1 &&
           c->in[0].strides[c->ndim - 1] == 1;
}

/* ew_copy_rows over c (copies_runs): its last dimension the runs, the others their batch. */
static clt_status runs(const char *fn, clt_device *dev, const clt__ew_call *c)
{
    cl_mem out = c->out.buf, in = c->in[0].buf;
    cl_ulong out_off = c->out.offset, in_off = c->in[0].offset;
    cl_ulong len = (cl_ulong)c->shape[c->ndim - 1], rows = len ? c->n / len : 0;
    cl_int nb = c->ndim - 1, blocked = clt__cl_run_layout(dev);
    tp_batch bd = batch_of(nb, c->shape, c->out.strides, c->in[0].strides);
    const clt__cl_arg args[] = {
        {sizeof out, &out},     {sizeof out_off, &out_off}, {sizeof in, &in},
        {sizeof in_off, &in_off}, {sizeof len, &len},       {sizeof rows, &rows},
        {sizeof bd, &bd},       {sizeof nb, &nb},           {sizeof blocked, &blocked},
    };
    const char *opts = clt__dtype(bits_dtype(clt_dtype_size(c->dtype)))->options;
    return clt__cl_run(fn, dev, "elementwise:transpose", opts, "ew_copy_rows",
                       CLT__CL_ARGS(args), c->n);
}

clt_status clt__cl_elementwise(const char *fn, clt_device *dev, const clt__ew_call *c)
{
    clt__tile_plan plan;
    if (clt__tile_plan_of(c, &plan) &&
        (clt__cl_run_layout(dev) || dev->info.max_work_group_size >= CLT__TP_T * CLT__TP_ROWS))
        return tiled(fn, dev, c, &plan); /* (ew_copy_t's work-groups are 32 x 8) */
    if (copies_runs(c))
        return runs(fn, dev, c);

    cl_mem bufs[4];
    cl_ulong offs[4];
    ew_layout layout;
    cl_int ndim = c->ndim, blocked = clt__cl_run_layout(dev);
    cl_ulong n = c->n;
    union {
        cl_float f;
        cl_double d;
        cl_long l;
    } s[2];
    size_t ssize;
    const clt__operand *ops[4] = {&c->out, &c->in[0], &c->in[1], &c->in[2]};

    for (int k = 0; k < 4; k++) {
        bufs[k] = ops[k]->buf ? (cl_mem)ops[k]->buf : (cl_mem)c->out.buf;
        offs[k] = ops[k]->buf ? ops[k]->offset : 0;
    }
    /* the scalars in the kernel's compute type, converted as the host converts them */
    for (int k = 0; k < 2; k++) {
        double v = k ? c->s1 : c->s0;
        if (c->dtype == CLT_F64)
            s[k].d = v;
        else if (clt__dtype(c->dtype)->compute == CLT_F32)
            s[k].f = clt_cvt_f64_f32(v);
        else
            s[k].l = clt_cvt_f64_i64(v);
    }
    ssize = c->dtype == CLT_F64 ? sizeof(cl_double)
            : clt__dtype(c->dtype)->compute == CLT_F32 ? sizeof(cl_float)
                                                       : sizeof(cl_long);
    if (c->ndim == 0) /* every operand contiguous: no layout */
        return contiguous(fn, dev, c, bufs, offs, &s[0], &s[1], ssize);
    for (int k = 0; k < 4; k++)
        for (int d = 0; d < 8; d++)
            layout.st[8 * k + d] = d < c->ndim && ops[k]->buf ? ops[k]->strides[d] : 0;
    for (int d = 0; d < 8; d++)
        layout.sh[d] = d < c->ndim ? c->shape[d] : 1;
    const clt__cl_arg args[] = {
        {sizeof bufs[0], &bufs[0]}, {sizeof offs[0], &offs[0]}, {sizeof bufs[1], &bufs[1]},
        {sizeof offs[1], &offs[1]}, {sizeof bufs[2], &bufs[2]}, {sizeof offs[2], &offs[2]},
        {sizeof bufs[3], &bufs[3]}, {sizeof offs[3], &offs[3]}, {sizeof layout, &layout},
        {sizeof ndim, &ndim},       {sizeof n, &n},             {sizeof blocked, &blocked},
        {ssize, &s[0]},             {ssize, &s[1]},
    };
    return clt__cl_run(fn, dev, ew_programs[c->op], clt__dtype(c->dtype)->options,
                       ew_kernels[c->op][0], CLT__CL_ARGS(args), c->n);
}

clt_status clt__cl_copy_runs(const char *fn, clt_device *dev, const clt__copies_call *c)
{
    cl_mem dst = c->dst, src[CLT__COPY_GROUP];
    cl_ulong so[CLT__COPY_GROUP], d[CLT__COPY_GROUP], n[CLT__COPY_GROUP];
    clt__cl_arg args[1 + 4 * CLT__COPY_GROUP + 2];
    cl_int count = c->count, blocked = clt__cl_run_layout(dev);
    size_t total = 0;
    int at = 0;
    args[at++] = (clt__cl_arg){sizeof dst, &dst};
    for (int j = 0; j < CLT__COPY_GROUP; j++) { /* runs past count: none, any buffer */
        const clt__copy_run *r = &c->run[j < c->count ? j : 0];
        src[j] = r->src, so[j] = r->src_offset, d[j] = r->dst_offset;
        n[j] = j < c->count ? r->n : 0;
        total += n[j];
        args[at++] = (clt__cl_arg){sizeof src[j], &src[j]};
        args[at++] = (clt__cl_arg){sizeof so[j], &so[j]};
        args[at++] = (clt__cl_arg){sizeof d[j], &d[j]};
        args[at++] = (clt__cl_arg){sizeof n[j], &n[j]};
    }
    args[at++] = (clt__cl_arg){sizeof count, &count};
    args[at++] = (clt__cl_arg){sizeof blocked, &blocked};
    return clt__cl_run(fn, dev, "elementwise:copy",
                       clt__dtype(bits_dtype(clt_dtype_size(c->dtype)))->options,
                       "ew_copy_runs", args, at, total);
}

/* Fills with a kernel (ew_fill of the dtype whose storage has the pattern's size) rather than
 * clEnqueueFillBuffer, so that checking tools such as Oclgrind see the memory written. */
clt_status clt__cl_fill(const char *fn, clt_device *dev, void *buf, size_t offset,
                        const void *pattern, size_t pattern_size, size_t nbytes)
{
    clt_dtype as = bits_dtype(pattern_size);
    cl_mem b = buf;
    cl_ulong off = offset / pattern_size, n = nbytes / pattern_size;
    cl_int blocked = clt__cl_run_layout(dev);
    const clt__cl_arg args[] = {
        {sizeof b, &b}, {sizeof off, &off}, {sizeof n, &n}, {pattern_size, pattern},
        {sizeof blocked, &blocked},
    };
    return clt__cl_run(fn, dev, "elementwise:fill", clt__dtype(as)->options, "ew_fill",
                       CLT__CL_ARGS(args), n);
}

clt_status clt__cl_random(const char *fn, clt_device *dev, void *buf, size_t off, clt_dtype dtype,
                          size_t n, bool normal, uint64_t seed, uint64_t counter)
{
    char kernel[32];
    cl_mem b = buf;
    cl_ulong o = off, count = n, ctr = counter;
    cl_uint k0 = (cl_uint)seed, k1 = (cl_uint)(seed >> 32);
    size_t per = clt__random_per_counter(dtype);
    const clt__cl_arg args[] = {
        {sizeof b, &b}, {sizeof o, &o}, {sizeof count, &count},
        {sizeof k0, &k0}, {sizeof k1, &k1}, {sizeof ctr, &ctr},
    };
    snprintf(kernel, sizeof kernel, "%s_%s", normal ? "normal" : "uniform",
             clt__dtype(dtype)->token);
    return clt__cl_launch(fn, dev, "random", NULL, kernel, CLT__CL_ARGS(args),
                          (n + per - 1) / per, NULL);
}
