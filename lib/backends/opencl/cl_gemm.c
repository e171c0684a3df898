/* The OpenCL backend's GEMM variants (clt__gemm_variant): how each runs a strided-batched GEMM
 * (see clt__gemm_call in backend.h) on the device's in-order queue, CLBlast or a kernel of
 * cl/gemm.cl, and which calls each can take; a convolution's product run by the packed variant
 * straight from the images; and CLBlast's status codes turned into the library's. Which variant
 * runs a product is chosen in cl_gemm_tune.c. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cl_internal.h"
#include "cl_launch.h"
#include "core/core.h"

/* CLBlast's own status codes (those that are not OpenCL's), by value (clblast_c.h). */
#define CLT__CLBLAST_CODES(X)                                                                  \
    X(-1024, NotImplemented) X(-1022, InvalidMatrixA) X(-1021, InvalidMatrixB)                 \
    X(-1020, InvalidMatrixC) X(-1019, InvalidVectorX) X(-1018, InvalidVectorY)                 \
    X(-1017, InvalidDimension) X(-1016, InvalidLeadDimA) X(-1015, InvalidLeadDimB)             \
    X(-1014, InvalidLeadDimC) X(-1013, InvalidIncrementX) X(-1012, InvalidIncrementY)          \
    X(-1011, InsufficientMemoryA) X(-1010, InsufficientMemoryB) X(-1009, InsufficientMemoryC)  \
    X(-1008, InsufficientMemoryX) X(-1007, InsufficientMemoryY)                                \
    X(-2050, InsufficientMemoryTemp) X(-2049, InvalidBatchCount)                               \
    X(-2048, InvalidOverrideKernel) X(-2047, MissingOverrideParameter)                         \
    X(-2046, InvalidLocalMemUsage) X(-2045, NoHalfPrecision) X(-2044, NoDoublePrecision)       \
    X(-2043, InvalidVectorScalar) X(-2042, InsufficientMemoryScalar) X(-2041, DatabaseError)   \
    X(-2040, UnknownError) X(-2039, UnexpectedError)

/* The name of one of CLBlast's own status codes. */
static const char *clblast_code_name(int s)
{
    switch (s) {
#define CLT__CLBLAST_CODE(value, name)                                                         \
    case value: return "CLBlast" #name;
        CLT__CLBLAST_CODES(CLT__CLBLAST_CODE)
#undef CLT__CLBLAST_CODE
    default: return "an unknown CLBlast status";
    }
}

/* CLBlast's status as the library's: OpenCL codes (above -1000) pass through unchanged,
 * CLBlast's own become CLT_ERR_INTERNAL naming the code. */
static clt_status clblast_status(const char *fn, clt_device *dev, int s,
                                 const char *routine, const clt__gemm_call *c)
{
    char what[192];
    if (s == CL_SUCCESS)
        return CLT_OK;
    snprintf(what, sizeof what, "%s (%zu x %zu by %zu x %zu, batch %zu)", routine, c->m, c->k,
             c->k, c->n, c->batch);
    if (s > -1000)
        return clt__cl_error(fn, dev, (cl_int)s, what);
    return clt__error(CLT_ERR_INTERNAL, fn, "%s on %s failed with CLBlast status %d (%s)", what,
                      dev->name, (int)s, clblast_code_name(s));
}

/* CLBlast's caches (its tuning database, its built programs) are not safe to fill from two
 * threads at once, which DataParallel's replicas on two devices would do: one call at a time.
 * A call only queues the work, so the devices still compute concurrently. */
static pthread_mutex_t clblast_lock = PTHREAD_MUTEX_INITIALIZER;

static clt_status run_clblast(const char *fn, clt_device *dev, const clt__gemm_call *c)
{
    const clt__clblast_api *api = &clt__clblast_fn;
    const int row = CLT__CLBLAST_ROW_MAJOR;
    const int ta = c->trans_a ? CLT__CLBLAST_TRANSPOSE : CLT__CLBLAST_NO_TRANSPOSE;
    const int tb = c->trans_b ? CLT__CLBLAST_TRANSPOSE : CLT__CLBLAST_NO_TRANSPOSE;
    cl_mem a = c->a, b = c->b, out = c->c;
    cl_command_queue q = clt__cl(dev)->queue;
    int s;
    const char *routine;

    if (!clt__clblast_load())
        return clt__error(CLT_ERR_UNSUPPORTED, fn, "a product on %s asks for CLBlast, which is "
                          "not used: %s", dev->name, clt__clblast_status());

    pthread_mutex_lock(&clblast_lock);
    if (c->batch == 1 && c->dtype == CLT_F64) {
        routine = "CLBlastDgemm";
        s = api->p_CLBlastDgemm(row, ta, tb, c->m, c->n, c->k, c->alpha, a, c->a_offset, c->lda, b,
                         c->b_offset, c->ldb, c->beta, out, c->c_offset, c->ldc, &q, NULL);
    } else if (c->batch == 1) {
        routine = "CLBlastSgemm";
        s = api->p_CLBlastSgemm(row, ta, tb, c->m, c->n, c->k, (float)c->alpha, a, c->a_offset, c->lda,
                         b, c->b_offset, c->ldb, (float)c->beta, out, c->c_offset, c->ldc, &q,
                         NULL);
    } else if (c->dtype == CLT_F64) {
        routine = "CLBlastDgemmStridedBatched";
        s = api->p_CLBlastDgemmStridedBatched(row, ta, tb, c->m, c->n, c->k, c->alpha, a, c->a_offset,
                                       c->lda, c->a_stride, b, c->b_offset, c->ldb, c->b_stride,
                                       c->beta, out, c->c_offset, c->ldc, c->c_stride, c->batch,
                                       &q, NULL);
    } else {
        routine = "CLBlastSgemmStridedBatched";
        s = api->p_CLBlastSgemmStridedBatched(row, ta, tb, c->m, c->n, c->k, (float)c->alpha, a,
                                       c->a_offset, c->lda, c->a_stride, b, c->b_offset, c->ldb,
                                       c->b_stride, (float)c->beta, out, c->c_offset, c->ldc,
                                       c->c_stride, c->batch, &q, NULL);
    }
    pthread_mutex_unlock(&clblast_lock);
    return clblast_status(fn, dev, s, routine, c);
}

const char *const clt__gemm_variant_names[CLT__GEMM_VARIANTS] = {"clblast", "packed", "direct",
                                                                 "tiled", "dot"};

/* The width of a packed panel of B: NV vectors of VW elements (cl/gemm.cl). */
size_t clt__cl_gemm_panel_width(clt_device *dev, clt_dtype dtype)
{
    clt__cl_device *cd = clt__cl(dev);
    return dtype == CLT_F64 ? cd->gemm_nv[1] * (size_t)cd->vw_double
                            : cd->gemm_nv[0] * (size_t)cd->vw_float;
}

/* Whether the packed variant runs the call as C^T = op(B)^T op(A)^T, packing op(A)^T instead
 * of op(B). Packing a transposed B (nn.Linear's weight) reads it across its rows, which costs as
 * much as a third of the product; op(A)^T is the cheaper copy where it makes fewer panels and
 * the tiles that cover the transpose are no more than those that cover C (few rows stay as
 * they are: C^T would be one mostly empty panel). */
static bool packs_a(clt_device *dev, const clt__gemm_call *c)
{
    size_t pw = clt__cl_gemm_panel_width(dev, c->dtype);
    double tiles = (double)((c->m + 3) / 4) * (double)((c->n + pw - 1) / pw), /* no overflow */
           tiles_t = (double)((c->n + 3) / 4) * (double)((c->m + pw - 1) / pw);
    return c->trans_b && !c->c_group && (c->m + pw - 1) / pw < (c->n + pw - 1) / pw &&
           tiles_t <= tiles;
}

/* The call for C^T = op(B)^T op(A)^T: A and B swapped, each transposed, C's rows and columns
 * (and so the bias's) exchanged; C itself is left to the caller (packed_product's groups). */
static clt__gemm_call transposed_call(const clt__gemm_call *c)
{
    clt__gemm_call t = *c;
    t.trans_a = !c->trans_b, t.trans_b = !c->trans_a;
    t.m = c->n, t.n = c->m;
    t.a = c->b, t.a_offset = c->b_offset, t.lda = c->ldb, t.a_stride = c->b_stride;
    t.b = c->a, t.b_offset = c->a_offset, t.ldb = c->lda, t.b_stride = c->a_stride;
    t.bias_rows = !c->bias_rows;
    return t;
}

size_t clt__cl_gemm_panel_bytes(clt_device *dev, const clt__gemm_call *call)
{
    clt__gemm_call t;
    const clt__gemm_call *c = packs_a(dev, call) ? (t = transposed_call(call), &t) : call;
    size_t pw = clt__cl_gemm_panel_width(dev, c->dtype), np = (c->n + pw - 1) / pw, bytes = 0;
    size_t elem = clt_dtype_size(c->dtype);
    if (!clt__mul_size(c->batch, np * pw, &bytes) || !clt__mul_size(bytes, c->k, &bytes) ||
        !clt__mul_size(bytes, elem, &bytes))
        return SIZE_MAX;
    return bytes;
}

bool clt__cl_gemm_fits(clt_device *dev, clt__gemm_variant v, const clt__gemm_call *c)
{
    const size_t big = (size_t)1 << 30; /* sizes and work-item counts stay within int */
    if (c->c_group && v != CLT__GEMM_PACKED && v != CLT__GEMM_DIRECT)
        return false; /* the others store C's rows whole */
    if (v == CLT__GEMM_CLBLAST)
        return true;
    if (c->m >= big || c->n >= big || c->k >= big || c->batch >= big)
        return false;
    switch (v) {
    case CLT__GEMM_PACKED:
        return clt__cl_gemm_panel_bytes(dev, c) <= dev->info.max_alloc_bytes;
    case CLT__GEMM_DIRECT:
        return !c->trans_b;
    case CLT__GEMM_DOT: return c->trans_b;
    case CLT__GEMM_TILED:
        return dev->info.max_work_group_size >= 256;
    default:
        return false;
    }
}

/* The arguments that every kernel of gemm.cl takes first, from m to a_bs, into args; their
 * count. The scalars live in *s. */
typedef struct gemm_scalars {
    cl_int m, n, k;
    cl_ulong a_off, a_rs, a_cs, a_bs;
    cl_float alpha32, beta32;
    cl_double alpha64, beta64;
    cl_mem a;
} gemm_scalars;

static int head_args(const clt__gemm_call *c, gemm_scalars *s, clt__cl_arg *args)
{
    const bool f64 = c->dtype == CLT_F64;
    *s = (gemm_scalars){.m = (cl_int)c->m,
                        .n = (cl_int)c->n,
                        .k = (cl_int)c->k,
                        .a_off = c->a_offset,
                        .a_rs = c->trans_a ? 1 : c->lda,
                        .a_cs = c->trans_a ? c->lda : 1,
                        .a_bs = c->a_stride,
                        .alpha32 = (cl_float)c->alpha,
                        .beta32 = (cl_float)c->beta,
                        .alpha64 = c->alpha,
                        .beta64 = c->beta,
                        .a = c->a};
    clt__cl_arg head[] = {{sizeof s->m, &s->m},
                          {sizeof s->n, &s->n},
                          {sizeof s->k, &s->k},
                          f64 ? (clt__cl_arg){8, &s->alpha64} : (clt__cl_arg){4, &s->alpha32},
                          f64 ? (clt__cl_arg){8, &s->beta64} : (clt__cl_arg){4, &s->beta32},
                          {sizeof s->a, &s->a},
                          {8, &s->a_off},
                          {8, &s->a_rs},
                          {8, &s->a_cs},
                          {8, &s->a_bs}};
    memcpy(args, head, sizeof head);
    return (int)(sizeof head / sizeof *head);
}

/* The epilogue's arguments, last in every product kernel of gemm.cl (EPILOGUE_ARGS), into args;
 * their count. Without a bias or row sums, C's buffer stands in for them (not used). */
typedef struct epilogue_args {
    cl_mem bias, rsum;
    cl_ulong offset, rsum_offset;
    cl_int ep;
} epilogue_args;

static int epilogue_args_of(const clt__gemm_call *c, epilogue_args *e, clt__cl_arg *args)
{
    *e = (epilogue_args){.bias = c->bias ? c->bias : c->c,
                         .rsum = c->row_sums ? c->row_sums : c->c,
                         .offset = c->bias ? c->bias_offset : 0,
                         .rsum_offset = c->row_sums ? c->row_sums_offset : 0,
                         .ep = (c->bias ? 1 : 0) | (c->bias && c->bias_rows ? 2 : 0) |
                               (c->act == CLT__ACT_RELU ? 4 : 0) | (c->row_sums ? 8 : 0)};
    args[0] = (clt__cl_arg){sizeof e->bias, &e->bias};
    args[1] = (clt__cl_arg){8, &e->offset};
    args[2] = (clt__cl_arg){sizeof e->ep, &e->ep};
    args[3] = (clt__cl_arg){sizeof e->rsum, &e->rsum};
    args[4] = (clt__cl_arg){8, &e->rsum_offset};
    return 5;
}

/* gemm_packed over panels already holding op(B), C's columns in groups of cg, cg_stride apart
 * (cl/gemm.cl). */
static clt_status packed_product(const char *fn, clt_device *dev, const clt__gemm_call *c,
                                 cl_mem panels, size_t cg, size_t cg_stride)
{
    gemm_scalars s;
    epilogue_args e;
    clt__cl_arg args[32]; /* (head, operands, epilogue) */
    int nargs = head_args(c, &s, args);
    cl_mem out = c->c;
    cl_ulong c_off = c->c_offset, ldc = c->ldc, c_bs = c->c_stride, gs = cg_stride;
    cl_int g = (cl_int)cg;
    size_t pw = clt__cl_gemm_panel_width(dev, c->dtype);
    size_t global[3] = {(c->m + 3) / 4, (c->n + pw - 1) / pw, c->batch}, one[3] = {1, 1, 1};
    clt__cl_arg rest[] = {{sizeof panels, &panels},
                          {sizeof out, &out},
                          {8, &c_off},
                          {8, &ldc},
                          {8, &c_bs},
                          {sizeof g, &g},
                          {8, &gs}};
    memcpy(args + nargs, rest, sizeof rest);
    nargs += (int)(sizeof rest / sizeof *rest);
    nargs += epilogue_args_of(c, &e, args + nargs);
    return clt__cl_launch_nd(fn, dev, "gemm:packed",
                             c->dtype == CLT_F64 ? CLT__CL_GEMM_F64 : CLT__CL_GEMM_F32,
                             "gemm_packed", args, nargs, 3, global, one, NULL);
}

/* The packed variant: op(B) into panels and gemm_packed over them; or, where packs_a, op(A)^T
 * into panels and C^T = op(B)^T op(A)^T stored down C's columns. */
static clt_status packed_gemm(const char *fn, clt_device *dev, const clt__gemm_call *call,
                              cl_mem panels)
{
    clt__gemm_call t = *call;
    size_t cg = call->c_group ? call->c_group : call->n, cg_stride = call->c_group_stride;
    if (packs_a(dev, call)) {
        t = transposed_call(call);
        t.ldc = 1, cg = 1, cg_stride = call->ldc;
    }
    const clt__gemm_call *c = &t;
    const bool f64 = c->dtype == CLT_F64;
    cl_int n = (cl_int)c->n, k = (cl_int)c->k;
    cl_ulong b_off = c->b_offset, b_rs = c->trans_b ? 1 : c->ldb, b_cs = c->trans_b ? c->ldb : 1;
    cl_ulong b_bs = c->b_stride;
    cl_mem b = c->b;
    size_t pw = clt__cl_gemm_panel_width(dev, c->dtype), np = (c->n + pw - 1) / pw;
    size_t vw = f64 ? clt__cl(dev)->vw_double : clt__cl(dev)->vw_float;
    clt__cl_arg pack[] = {{sizeof n, &n},  {sizeof k, &k},  {sizeof b, &b},
                          {8, &b_off},     {8, &b_rs},      {8, &b_cs},
                          {8, &b_bs},      {sizeof panels, &panels}};
    size_t pack_global[3] = {c->trans_b && b_cs != 1 ? (c->k + vw - 1) / vw : c->k, np,
                             c->batch}; /* gemm_pack's rows of a transpose go VW at a time */
    clt_status st = clt__cl_launch_nd(fn, dev, "gemm:packed",
                                      f64 ? CLT__CL_GEMM_F64 : CLT__CL_GEMM_F32, "gemm_pack",
                                      pack, (int)(sizeof pack / sizeof *pack), 3, pack_global,
                                      NULL, NULL);
    return st == CLT_OK ? packed_product(fn, dev, c, panels, cg, cg_stride) : st;
}

/* Launches one of the library's GEMM kernels with the call's operands. */
static clt_status run_ours(const char *fn, clt_device *dev, clt__gemm_variant v,
                           const clt__gemm_call *c, cl_mem panels)
{
    if (v == CLT__GEMM_PACKED)
        return packed_gemm(fn, dev, c, panels);
    const char *options = c->dtype == CLT_F64 ? CLT__CL_GEMM_F64 : CLT__CL_GEMM_F32;
    cl_ulong b_off = c->b_offset, b_rs = c->trans_b ? 1 : c->ldb, b_cs = c->trans_b ? c->ldb : 1;
    cl_ulong ldb = c->ldb, b_bs = c->b_stride, c_off = c->c_offset, ldc = c->ldc;
    cl_ulong c_bs = c->c_stride;
    cl_mem b = c->b, out = c->c;
    gemm_scalars s;
    epilogue_args e;
    clt__cl_arg args[32]; /* (head, operands, epilogue) */
    int nargs = head_args(c, &s, args);

    if (v == CLT__GEMM_TILED) {
        size_t global[3] = {16 * ((c->n + 63) / 64), 16 * ((c->m + 63) / 64), c->batch};
        size_t local[3] = {16, 16, 1};
        clt__cl_arg rest[] = {{sizeof b, &b},  {8, &b_off},      {8, &b_rs}, {8, &b_cs},
                              {8, &b_bs},      {sizeof out, &out}, {8, &c_off}, {8, &ldc},
                              {8, &c_bs}};
        memcpy(args + nargs, rest, sizeof rest);
        nargs += (int)(sizeof rest / sizeof *rest);
        nargs += epilogue_args_of(c, &e, args + nargs);
        return clt__cl_launch_nd(fn, dev, "gemm:tiled", options, "gemm_tiled", args, nargs, 3,
                                 global, local, NULL);
    }
    /* dot (B transposed) and direct (B as stored, and C's column groups) take B by its stored
     * rows, ldb apart */
    const bool dot = v == CLT__GEMM_DOT;
    size_t pw = clt__cl_gemm_panel_width(dev, c->dtype), one[3] = {1, 1, 1};
    size_t global[3] = {(c->m + 3) / 4, dot ? (c->n + 1) / 2 : (c->n + pw - 1) / pw, c->batch};
    cl_int cg = (cl_int)(c->c_group ? c->c_group : c->n);
    cl_ulong cg_stride = c->c_group_stride;
    clt__cl_arg rest[] = {{sizeof b, &b},     {8, &b_off}, {8, &ldb}, {8, &b_bs},
                          {sizeof out, &out}, {8, &c_off}, {8, &ldc}, {8, &c_bs},
                          {sizeof cg, &cg},   {8, &cg_stride}};
    memcpy(args + nargs, rest, sizeof rest);
    nargs += (int)(sizeof rest / sizeof *rest) - (dot ? 2 : 0);
    nargs += epilogue_args_of(c, &e, args + nargs);
    return clt__cl_launch_nd(fn, dev, dot ? "gemm:dot" : "gemm:direct", options,
                             dot ? "gemm_dot" : "gemm_direct", args, nargs, 3, global, one, NULL);
}

clt_status clt__cl_gemm_run(const char *fn, clt_device *dev, clt__gemm_variant v,
                            const clt__gemm_call *c, cl_mem panels)
{
    clt_status st = clt__cl_start(fn, dev);
    if (st != CLT_OK)
        return st;
    /* row sums where the kernel reads A as given (not CLBlast, tiled, or packed's C^T) */
    if (c->row_sums && !(v == CLT__GEMM_DIRECT || v == CLT__GEMM_DOT ||
                         (v == CLT__GEMM_PACKED && !packs_a(dev, c)))) {
        clt__gemm_call plain = *c; /* the sums first: they check the call before any work */
        plain.row_sums = NULL;
        st = clt__gemm_row_sums_apart(fn, dev, c);
        return st == CLT_OK ? clt__cl_gemm_run(fn, dev, v, &plain, panels) : st;
    }
    if (v != CLT__GEMM_CLBLAST)
        return run_ours(fn, dev, v, c, panels);
    /* CLBlast has no epilogue: the bias and the activation as elementwise operations around it */
    return clt__gemm_has_epilogue(c) ? clt__gemm_composed_epilogue(fn, dev, c, run_clblast)
                                     : run_clblast(fn, dev, c);
}

clt__gemm_call clt__cl_conv2d_product(const clt__conv_call *c)
{
    size_t k = c->C * (size_t)c->kh * (size_t)c->kw, L = c->OH * c->OW;
    return (clt__gemm_call){.dtype = c->dtype,
                            .m = c->mult,
                            .n = c->N * L,
                            .k = k,
                            .batch = 1,
                            .alpha = 1,
                            .a = c->weight,
                            .a_offset = c->weight_offset,
                            .lda = k,
                            .c = c->out,
                            .c_offset = c->out_offset,
                            .ldc = L};
}

clt_status clt__cl_conv2d_packed(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    const clt__gemm_call product = clt__cl_conv2d_product(c), *g = &product;
    void *panels = NULL;
    size_t capacity = 0, pw = clt__cl_gemm_panel_width(dev, g->dtype), L = c->OH * c->OW;
    clt_status st =
        clt__scratch_alloc(fn, dev, clt__cl_gemm_panel_bytes(dev, g), &panels, &capacity);
    if (st != CLT_OK)
        return st;
    cl_mem in = c->in, p = panels;
    cl_ulong in_off = c->in_offset;
    cl_int n = (cl_int)g->n, k = (cl_int)g->k,
           w[13] = {(cl_int)c->C, (cl_int)c->H, (cl_int)c->W, (cl_int)c->OH, (cl_int)c->OW,
                    c->kh,        c->kw,        c->sh,        c->sw,         c->ph,
                    c->pw,        c->dh,        c->dw};
    clt__cl_arg args[18] = {{sizeof n, &n}, {sizeof k, &k}, {sizeof in, &in}, {8, &in_off}};
    for (int i = 0; i < 13; i++)
        args[4 + i] = (clt__cl_arg){sizeof w[i], &w[i]};
    args[17] = (clt__cl_arg){sizeof p, &p};
    size_t global[2] = {g->k, (g->n + pw - 1) / pw};
    st = clt__cl_launch_nd(fn, dev, "gemm:packed",
                           g->dtype == CLT_F64 ? CLT__CL_GEMM_F64 : CLT__CL_GEMM_F32,
                           "gemm_pack_im2col", args, 18, 2, global, NULL, NULL);
    if (st == CLT_OK)
        st = packed_product(fn, dev, g, panels, L, c->mult * L);
    clt__scratch_free(dev, panels, capacity); /* the in-order queue runs what reuses it later */
    return st;
}
