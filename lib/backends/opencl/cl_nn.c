/* The OpenCL backend's neural-network kernels (cl/nn.cl): index_select, im2col, depthwise
 * convolution and 2-D pooling, and the adjoints index_add, col2im and pool2d_backward, one
 * work-item an output element (pool2d_scatter, max pooling's adjoint where windows do not
 * overlap, one a window); attention (cl/attention.cl), cross entropy's rows (cl/loss.cl)
 * and the row operations cumsum and sort (cl/rows.cl), one work-item a row; Winograd's
 * convolution's stages (cl/winograd.cl). */
#include "cl_internal.h"
#include "cl_launch.h"
#include "core/core.h"

clt_status clt__cl_index_select(const char *fn, clt_device *dev, const clt__index_call *c)
{
    cl_mem out = c->out, src = c->src, idx = c->idx;
    cl_ulong oo = c->out_offset, so = c->src_offset, io = c->idx_offset;
    cl_ulong A = c->A, K = c->K, B = c->B, M = c->M;
    const clt__cl_arg args[] = {
        {sizeof out, &out}, {sizeof oo, &oo}, {sizeof src, &src}, {sizeof so, &so},
        {sizeof idx, &idx}, {sizeof io, &io}, {sizeof A, &A},     {sizeof K, &K},
        {sizeof B, &B},     {sizeof M, &M},
    };
    return clt__cl_launch(fn, dev, "nn", clt__dtype(c->dtype)->options, "index_select",
                          CLT__CL_ARGS(args), c->A * c->M * c->B, NULL);
}

/* The window geometry shared by im2col and pool2d, as kernel arguments from index `at`. */
static int geometry(const clt__conv_call *c, cl_ulong *u, cl_int *w, clt__cl_arg *args, int at)
{
    u[0] = c->H, u[1] = c->W, u[2] = c->OH, u[3] = c->OW;
    w[0] = c->kh, w[1] = c->kw, w[2] = c->sh, w[3] = c->sw;
    w[4] = c->ph, w[5] = c->pw, w[6] = c->dh, w[7] = c->dw;
    for (int i = 0; i < 4; i++)
        args[at++] = (clt__cl_arg){sizeof u[i], &u[i]};
    for (int i = 0; i < 8; i++)
        args[at++] = (clt__cl_arg){sizeof w[i], &w[i]};
    return at;
}

int clt__cl_window_wide = -1;

/* Whether positions within a plane of the input or the output, or of a window's taps, may not
 * fit in int (then the _wide kernel of pooling or col2im runs), or clt__cl_window_wide where that
 * is 0 or 1. */
static bool window_wide(const clt__conv_call *c)
{
    const uint64_t most = 0x3fffffff;
    if (clt__cl_window_wide >= 0)
        return clt__cl_window_wide;
    return !((uint64_t)c->H * c->W <= most && (uint64_t)c->OH * c->OW <= most &&
             (uint64_t)c->OH * c->sh + (uint64_t)c->kh * c->dh + c->ph <= most &&
             (uint64_t)c->OW * c->sw + (uint64_t)c->kw * c->dw + c->pw <= most &&
             (uint64_t)c->H + c->ph + (uint64_t)c->kh * c->dh <= most &&
             (uint64_t)c->W + c->pw + (uint64_t)c->kw * c->dw <= most);
}

/* im2col ("im2col", n the column count) or its adjoint ("col2im", n the image size): the same
 * arguments, n elements over the work-items (CLT_RUN). */
static clt_status columns(const char *fn, clt_device *dev, const clt__conv_call *c,
                          const char *kernel, size_t n)
{
    cl_mem out = c->out, in = c->in;
    cl_ulong oo = c->out_offset, io = c->in_offset, N = c->N, C = c->C, u[4];
    cl_int w[8], blocked = clt__cl_run_layout(dev);
    clt__cl_arg args[19] = {
        {sizeof out, &out}, {sizeof oo, &oo}, {sizeof in, &in}, {sizeof io, &io},
        {sizeof N, &N},     {sizeof C, &C},
    };
    int nargs = geometry(c, u, w, args, 6);
    args[nargs++] = (clt__cl_arg){sizeof blocked, &blocked};
    return clt__cl_run(fn, dev, "nn", clt__dtype(c->dtype)->options, kernel, args, nargs, n);
}

/* The most positions a plane of im2col_small and col2im_small holds (cl/nn.cl's
 * CLT_SMALL_PLANE). */
#define CLT__CL_SMALL_PLANE 256

/* Whether c's columns go a plane at a time (im2col_small, col2im_small): the blocked layout, a
 * convolution of stride 1 whose output rows are as wide as the input's, planes of at most
 * CLT__CL_SMALL_PLANE positions, and positions in int. */
static bool small_planes(clt_device *dev, const clt__conv_call *c)
{
    return clt__cl_run_layout(dev) && !window_wide(c) && c->sh == 1 && c->sw == 1 &&
           c->OW == c->W && c->OH * c->OW <= CLT__CL_SMALL_PLANE &&
           c->H * c->W <= CLT__CL_SMALL_PLANE;
}

clt_status clt__cl_im2col(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    return columns(fn, dev, c, small_planes(dev, c) ? "im2col_small" : "im2col",
                   c->N * c->C * ((size_t)c->kh * (size_t)c->kw) * c->OH * c->OW);
}

clt_status clt__cl_col2im(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    const char *kernel = small_planes(dev, c) ? "col2im_small"
                         : window_wide(c)     ? "col2im_wide"
                                              : "col2im";
    return columns(fn, dev, c, kernel, c->N * c->C * c->H * c->W);
}

int clt__cl_conv_packed = -1;

/* Winograd's blocks' transformed tiles and products together: 32 MiB, or a quarter of the
 * device's largest buffer where that is less (Oclgrind's 128 MiB device). */
static size_t winograd_budget(clt_device *dev)
{
    uint64_t budget = (uint64_t)32 << 20, most = dev->info.max_alloc_bytes / 4;
    return (size_t)(most && most < budget ? most : budget);
}

/* Runs a Winograd stage over n items: CLT_RUN's launch for tiles (or the weight's pairs); for
 * tile rows (the blocked layout) groups of WINOGRAD_LOCAL work-items, enough that each takes a
 * few rows, at most WINOGRAD_GROUPS_PER_CU a compute unit. */
#define WINOGRAD_LOCAL 16
#define WINOGRAD_GROUPS_PER_CU 8
static clt_status winograd_run(const char *fn, clt_device *dev, const char *kernel,
                               const clt__conv_call *c, const clt__cl_arg *args, int nargs,
                               size_t n, bool rows)
{
    const char *options = clt__dtype(c->dtype)->options;
    if (!rows)
        return clt__cl_run(fn, dev, "winograd", options, kernel, args, nargs, n);
    size_t local = WINOGRAD_LOCAL, groups = (n + 4 * local - 1) / (4 * local);
    size_t most = (size_t)(dev->info.compute_units ? dev->info.compute_units : 1) *
                  WINOGRAD_GROUPS_PER_CU;
    return clt__cl_launch_groups(fn, dev, "winograd", options, kernel, args, nargs,
                                 groups < most ? groups : most, &local, NULL);
}

clt_status clt__cl_winograd(const char *fn, clt_device *dev, const clt__winograd_call *w)
{
    const clt__conv_call *c = w->conv;
    cl_mem t = w->t, in = c->in, out = c->out, weight = c->weight;
    cl_ulong io = c->in_offset, oo = c->out_offset, wo = c->weight_offset;
    cl_uint K = (cl_uint)c->mult, C = (cl_uint)c->C, H = (cl_uint)c->H, W = (cl_uint)c->W;
    cl_uint OH = (cl_uint)c->OH, OW = (cl_uint)c->OW, TH = (cl_uint)clt__winograd_tile_rows(c);
    cl_uint TW = (cl_uint)clt__winograd_tile_cols(c), row0 = (cl_uint)w->row0,
            rows = (cl_uint)w->rows;
    cl_int ph = c->ph, pw = c->pw, blocked = clt__cl_run_layout(dev);
    if (w->stage == CLT_WINOGRAD_WEIGHT) {
        const clt__cl_arg args[] = {{sizeof t, &t}, {sizeof weight, &weight}, {sizeof wo, &wo},
                                    {sizeof K, &K}, {sizeof C, &C}, {sizeof blocked, &blocked}};
        return winograd_run(fn, dev, "winograd_weight", c, CLT__CL_ARGS(args),
                            (size_t)K * (blocked ? 1 : C), blocked);
    }
    if (w->stage == CLT_WINOGRAD_INPUT) {
        const clt__cl_arg args[] = {
            {sizeof t, &t},   {sizeof in, &in},     {sizeof io, &io},   {sizeof C, &C},
            {sizeof H, &H},   {sizeof W, &W},       {sizeof TH, &TH},   {sizeof TW, &TW},
            {sizeof ph, &ph}, {sizeof pw, &pw},     {sizeof row0, &row0}, {sizeof rows, &rows},
            {sizeof blocked, &blocked},
        };
        return winograd_run(fn, dev, "winograd_input", c, CLT__CL_ARGS(args),
                            (size_t)C * rows * (blocked ? 1 : TW), blocked);
    }
    const clt__cl_arg args[] = {
        {sizeof out, &out}, {sizeof oo, &oo},   {sizeof t, &t},       {sizeof K, &K},
        {sizeof OH, &OH},   {sizeof OW, &OW},   {sizeof TH, &TH},     {sizeof TW, &TW},
        {sizeof row0, &row0}, {sizeof rows, &rows}, {sizeof blocked, &blocked},
    };
    return winograd_run(fn, dev, "winograd_output", c, CLT__CL_ARGS(args),
                        (size_t)K * rows * (blocked ? 1 : TW), blocked);
}

/* One product (mult, C * kh * kw) @ (C * kh * kw, N * OH * OW) over every image's columns. Where
 * the device runs it with the packed GEMM, the columns go straight into the packed panels and the
 * product writes each image's part of the output in place (clt__cl_conv2d_packed), where im2col,
 * packing the columns and the transposing copy took most of ResNet-18's time (docs/performance.md,
 * Convolution and pooling). Otherwise (another variant, positions beyond int, or
 * clt__cl_conv_packed 0) im2col, the product and the copy (clt__conv2d_composed). */
clt_status clt__cl_conv2d(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    if (clt__winograd_chosen(c))
        return clt__conv2d_winograd(fn, dev, c, winograd_budget(dev));
    clt__gemm_call g = clt__cl_conv2d_product(c);
    clt__gemm_variant v;
    clt_status st = clt__cl_start(fn, dev);
    if (st == CLT_OK)
        st = clt__cl_gemm_choose_by_size(fn, dev, &g, &v);
    if (st != CLT_OK)
        return st;
    if (v == CLT__GEMM_PACKED && clt__cl_conv_packed != 0 && !window_wide(c) && g.n > 0 &&
        clt__cl_gemm_fits(dev, v, &g))
        return clt__cl_conv2d_packed(fn, dev, c);
    return clt__conv2d_composed(fn, dev, c, true);
}

clt_status clt__cl_depthwise2d(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    cl_mem out = c->out, in = c->in, weight = c->weight;
    cl_ulong oo = c->out_offset, io = c->in_offset, wo = c->weight_offset, N = c->N, C = c->C;
    cl_ulong mult = c->mult, u[4];
    cl_int w[8], blocked = clt__cl_run_layout(dev);
    clt__cl_arg args[22] = {
        {sizeof out, &out}, {sizeof oo, &oo},         {sizeof in, &in},
        {sizeof io, &io},   {sizeof weight, &weight}, {sizeof wo, &wo},
        {sizeof N, &N},     {sizeof C, &C},           {sizeof mult, &mult},
    };
    int nargs = geometry(c, u, w, args, 9);
    args[nargs++] = (clt__cl_arg){sizeof blocked, &blocked};
    return clt__cl_run(fn, dev, "nn", clt__dtype(c->dtype)->options, "depthwise2d", args, nargs,
                       c->N * c->C * c->mult * c->OH * c->OW);
}

/* The pooling kernels and pool2d_backward: the same arguments (arg, when NULL, stands in as out,
 * unused: is_max 1, where 2 writes the indices), n elements over the work-items (CLT_RUN). */
static clt_status pooling(const char *fn, clt_device *dev, const clt__conv_call *c,
                          const char *kernel, size_t n)
{
    cl_mem out = c->out, in = c->in, arg = c->arg ? (cl_mem)c->arg : (cl_mem)c->out;
    cl_ulong oo = c->out_offset, ao = c->arg ? c->arg_offset : 0, io = c->in_offset;
    cl_ulong NC = c->N * c->C, u[4];
    cl_int w[8], is_max = c->is_max ? (c->arg ? 2 : 1) : 0, count_pad = c->count_pad,
                 blocked = clt__cl_run_layout(dev);
    clt__cl_arg args[22] = {
        {sizeof out, &out}, {sizeof oo, &oo}, {sizeof arg, &arg}, {sizeof ao, &ao},
        {sizeof in, &in},   {sizeof io, &io}, {sizeof NC, &NC},
    };
    int nargs = geometry(c, u, w, args, 7);
    args[nargs++] = (clt__cl_arg){sizeof is_max, &is_max};
    args[nargs++] = (clt__cl_arg){sizeof count_pad, &count_pad};
    args[nargs++] = (clt__cl_arg){sizeof blocked, &blocked};
    return clt__cl_run(fn, dev, "nn", clt__dtype(c->dtype)->options, kernel, args, nargs, n);
}

clt_status clt__cl_pool2d(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    static const char *const kernels[2][2] = {{"avg_pool2d", "avg_pool2d_wide"},
                                              {"max_pool2d", "max_pool2d_wide"}};
    return pooling(fn, dev, c, kernels[c->is_max][window_wide(c)], c->N * c->C * c->OH * c->OW);
}

/* Max pooling's adjoint where no input element lies in two windows: zeros, then each window's
 * gradient to the element its index names (pool2d_scatter). */
static clt_status pool_scatter(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    static const uint64_t zero = 0;
    size_t es = clt_dtype_size(c->dtype);
    cl_mem out = c->out, arg = c->arg, in = c->in;
    cl_ulong oo = c->out_offset, ao = c->arg_offset, io = c->in_offset;
    cl_ulong per = c->OH * c->OW, HW = c->H * c->W, n = c->N * c->C * per;
    cl_int blocked = clt__cl_run_layout(dev);
    const clt__cl_arg args[] = {
        {sizeof out, &out}, {sizeof oo, &oo},           {sizeof arg, &arg}, {sizeof ao, &ao},
        {sizeof in, &in},   {sizeof io, &io},           {sizeof n, &n},     {sizeof per, &per},
        {sizeof HW, &HW},   {sizeof blocked, &blocked},
    };
    clt_status st =
        clt__cl_fill(fn, dev, c->out, c->out_offset * es, &zero, es, c->N * c->C * HW * es);
    if (st != CLT_OK)
        return st;
    return clt__cl_run(fn, dev, "nn", clt__dtype(c->dtype)->options, "pool2d_scatter",
                       CLT__CL_ARGS(args), n);
}

/* Whether c is max pooling whose 2 x 2 windows of stride 2 tile the planes, with indices. */
static bool pairs_tile(const clt__conv_call *c)
{
    return c->is_max && c->arg && c->kh == 2 && c->kw == 2 && c->sh == 2 && c->sw == 2 &&
           c->dh == 1 && c->dw == 1 && c->ph == 0 && c->pw == 0 && c->H == 2 * c->OH &&
           c->W == 2 * c->OW;
}

clt_status clt__cl_pool2d_backward(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    if (pairs_tile(c) && clt__cl_run_layout(dev)) { /* pool2d_pairs_backward: rows whole */
        cl_mem out = c->out, arg = c->arg, in = c->in;
        cl_ulong oo = c->out_offset, ao = c->arg_offset, io = c->in_offset;
        cl_ulong NC = c->N * c->C, OH = c->OH, OW = c->OW;
        const clt__cl_arg args[] = {
            {sizeof out, &out}, {sizeof oo, &oo}, {sizeof arg, &arg}, {sizeof ao, &ao},
            {sizeof in, &in},   {sizeof io, &io}, {sizeof NC, &NC},   {sizeof OH, &OH},
            {sizeof OW, &OW},
        };
        return clt__cl_run(fn, dev, "nn", clt__dtype(c->dtype)->options, "pool2d_pairs_backward",
                           CLT__CL_ARGS(args), c->N * c->C * c->H * c->W);
    }
    if (c->is_max && c->arg && clt__windows_apart(c))
        return pool_scatter(fn, dev, c);
    return pooling(fn, dev, c, "pool2d_backward", c->N * c->C * c->H * c->W);
}

clt_status clt__cl_attention(const char *fn, clt_device *dev, const clt__attention_call *c)
{
    cl_mem out = c->out, q = c->q, k = c->k, v = c->v, mask = c->mask ? c->mask : c->q;
    cl_ulong oo = c->out_offset, qo = c->q_offset, ko = c->k_offset, vo = c->v_offset;
    cl_ulong mo = c->mask ? c->mask_offset : 0, R = c->B * c->L, L = c->L, S = c->S, E = c->E,
             D = c->D;
    cl_float scale32 = (cl_float)c->scale;
    cl_double scale64 = c->scale;
    cl_int has_mask = c->mask != NULL, causal = c->causal;
    const clt__cl_arg args[] = {
        {sizeof out, &out},   {sizeof oo, &oo}, {sizeof q, &q},       {sizeof qo, &qo},
        {sizeof k, &k},       {sizeof ko, &ko}, {sizeof v, &v},       {sizeof vo, &vo},
        {sizeof mask, &mask}, {sizeof mo, &mo}, {sizeof R, &R},       {sizeof L, &L},
        {sizeof S, &S},       {sizeof E, &E},   {sizeof D, &D},
        c->dtype == CLT_F64 ? (clt__cl_arg){sizeof scale64, &scale64}
                            : (clt__cl_arg){sizeof scale32, &scale32},
        {sizeof has_mask, &has_mask}, {sizeof causal, &causal},
    };
    return clt__cl_launch(fn, dev, "attention", clt__dtype(c->dtype)->options, "attention",
                          CLT__CL_ARGS(args), R, NULL);
}

clt_status clt__cl_cross_entropy(const char *fn, clt_device *dev, const clt__xent_call *c)
{
    cl_mem out = c->out, logits = c->logits, target = c->target;
    cl_mem g = c->backward ? c->g : c->logits; /* unused forward */
    cl_ulong oo = c->out_offset, lo = c->logits_offset, to = c->target_offset;
    cl_ulong go = c->backward ? c->g_offset : 0, step = c->backward ? c->g_step : 1;
    cl_ulong rows = c->rows, classes = c->classes;
    cl_double divisor64 = c->backward ? c->g_divisor : 1;
    cl_float divisor32 = (cl_float)divisor64;
    cl_long ignore = c->ignore;
    cl_int backward = c->backward;
    const clt__cl_arg args[] = {
        {sizeof out, &out},
        {sizeof oo, &oo},
        {sizeof logits, &logits},
        {sizeof lo, &lo},
        {sizeof target, &target},
        {sizeof to, &to},
        {sizeof g, &g},
        {sizeof go, &go},
        {sizeof step, &step},
        c->dtype == CLT_F64 ? (clt__cl_arg){sizeof divisor64, &divisor64}
                            : (clt__cl_arg){sizeof divisor32, &divisor32},
        {sizeof rows, &rows},
        {sizeof classes, &classes},
        {sizeof ignore, &ignore},
        {sizeof backward, &backward},
    };
    return clt__cl_launch(fn, dev, "loss", clt__dtype(c->dtype)->options, "cross_entropy",
                          CLT__CL_ARGS(args), c->rows, NULL);
}

clt_status clt__cl_index_add(const char *fn, clt_device *dev, const clt__index_add_call *c)
{
    cl_mem out = c->out, src = c->src, starts = c->starts, order = c->order;
    cl_ulong oo = c->out_offset, so = c->src_offset, sto = c->starts_offset, oro = c->order_offset;
    cl_ulong A = c->A, K = c->K, B = c->B, M = c->M;
    const clt__cl_arg args[] = {
        {sizeof out, &out},       {sizeof oo, &oo},       {sizeof src, &src}, {sizeof so, &so},
        {sizeof starts, &starts}, {sizeof sto, &sto},     {sizeof order, &order},
        {sizeof oro, &oro},       {sizeof A, &A},         {sizeof K, &K},     {sizeof B, &B},
        {sizeof M, &M},
    };
    return clt__cl_launch(fn, dev, "nn", clt__dtype(c->dtype)->options, "index_add",
                          CLT__CL_ARGS(args), c->A * c->K * c->B, NULL);
}

clt_status clt__cl_cumsum(const char *fn, clt_device *dev, const clt__rows_call *c)
{
    cl_mem out = c->out, in = c->in;
    cl_ulong oo = c->out_offset, io = c->in_offset, rows = c->rows, len = c->len;
    cl_int reverse = c->reverse;
    const clt__cl_arg args[] = {
        {sizeof out, &out},   {sizeof oo, &oo},   {sizeof in, &in},           {sizeof io, &io},
        {sizeof rows, &rows}, {sizeof len, &len}, {sizeof reverse, &reverse},
    };
    return clt__cl_launch(fn, dev, "rows", clt__dtype(c->dtype)->options, "cumsum_rows",
                          CLT__CL_ARGS(args), c->rows, NULL);
}

clt_status clt__cl_sort(const char *fn, clt_device *dev, const clt__rows_call *c)
{
    cl_mem out = c->out, idx = c->idx, in = c->in, tmp = c->tmp, tmp_idx = c->tmp_idx;
    cl_ulong oo = c->out_offset, xo = c->idx_offset, io = c->in_offset, rows = c->rows,
             len = c->len;
    cl_int descending = c->reverse;
    const clt__cl_arg args[] = {
        {sizeof out, &out},
        {sizeof oo, &oo},
        {sizeof idx, &idx},
        {sizeof xo, &xo},
        {sizeof in, &in},
        {sizeof io, &io},
        {sizeof tmp, &tmp},
        {sizeof tmp_idx, &tmp_idx},
        {sizeof rows, &rows},
        {sizeof len, &len},
        {sizeof descending, &descending},
    };
    return clt__cl_launch(fn, dev, "rows", clt__dtype(c->dtype)->options, "sort_rows",
                          CLT__CL_ARGS(args), c->rows, NULL);
}
