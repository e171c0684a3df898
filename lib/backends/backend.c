/* What the backends share about the elementwise operations: names, inputs and result kinds,
 * from the table in shared/elementwise_ops.cl; which strided copies are batched transposes; and
 * the convolution composed of im2col and a product. */
#include "backends/backend.h"
#include "core/core.h"
#include "device/allocator.h"

#define CLT__EW_INFO(name, inputs, fe, ie, res) {#name, inputs, #res[0] == 'B'},
static const struct {
    const char *name;
    int inputs;
    bool gives_bool;
} ew_info[CLT_EW_COUNT] = {CLT_EW_OPS(CLT__EW_INFO){"copy", 1, false}, {"where", 3, false}};

const char *clt__ew_name(clt__ew_op op)
{
    return ew_info[op].name;
}

int clt__ew_inputs(clt__ew_op op)
{
    return ew_info[op].inputs;
}

bool clt__ew_gives_bool(clt__ew_op op)
{
    return ew_info[op].gives_bool;
}

/* The dimension of stride 1 and extent > 1 in strides (-1 if none). */
static int unit_dim(const clt__ew_call *c, const int64_t *strides)
{
    for (int d = c->ndim - 1; d >= 0; d--)
        if (strides[d] == 1 && c->shape[d] > 1)
            return d;
    return -1;
}

bool clt__tile_plan_of(const clt__ew_call *c, clt__tile_plan *plan)
{
    int q, p;
    if (c->op != CLT_EW_copy || c->ndim < 2)
        return false;
    q = unit_dim(c, c->out.strides);
    p = unit_dim(c, c->in[0].strides);
    if (q < 0 || p < 0 || p == q)
        return false;
    *plan = (clt__tile_plan){.rows = (size_t)c->shape[p], .cols = (size_t)c->shape[q], .batch = 1,
                             .out_rs = c->out.strides[p], .in_cs = c->in[0].strides[q]};
    for (int d = 0; d < c->ndim; d++) {
        if (d == p || d == q || c->shape[d] == 1)
            continue;
        plan->bshape[plan->nb] = c->shape[d];
        plan->out_bs[plan->nb] = c->out.strides[d];
        plan->in_bs[plan->nb++] = c->in[0].strides[d];
        plan->batch *= (size_t)c->shape[d];
    }
    return true;
}

clt_status clt__backend_unsupported(const char *fn, const clt_device *dev, const char *op,
                                    clt_dtype dtype)
{
    return clt__error(CLT_ERR_UNSUPPORTED, fn, "%s of %s is not supported on %s (%s): the %s "
                      "backend has no %s", op, clt_dtype_name(dtype), dev->name, dev->info.name,
                      dev->backend->name, op);
}

clt_status clt__backend_check(const char *fn, const clt__backend *b)
{
#define CLT__CHECK_REQUIRED(entry, ret, params, kind)                                          \
    if (CLT__IS_##kind && !b->entry)                                                           \
        return clt__error(CLT_ERR_INTERNAL, fn, "the %s backend has no %s", b->name, #entry);
#define CLT__IS_REQUIRED 1
#define CLT__IS_OPTIONAL 0
    CLT__BACKEND_OPS(CLT__CHECK_REQUIRED)
#undef CLT__CHECK_REQUIRED
#undef CLT__IS_REQUIRED
#undef CLT__IS_OPTIONAL
    return CLT_OK;
}

clt_status clt__conv2d_composed(const char *fn, clt_device *dev, const clt__conv_call *c,
                                bool one_product)
{
    size_t es = clt_dtype_size(c->dtype), k = c->C * (size_t)c->kh * (size_t)c->kw;
    size_t L = c->OH * c->OW, nl = c->N * L, capacity = 0, wide_capacity = 0;
    bool copy = one_product && c->N > 1; /* the product's (mult, N, L) into (N, mult, L) */
    void *cols = NULL, *wide = NULL;
    clt_status st = clt__device_alloc(fn, dev, k * nl * es, false, &cols, &capacity);
    if (st == CLT_OK && copy)
        st = clt__device_alloc(fn, dev, c->mult * nl * es, false, &wide, &wide_capacity);
    clt__conv_call u = *c;
    u.out = cols, u.out_offset = 0;
    if (st == CLT_OK && (st = CLT__BACKEND_CALL(im2col, fn, dev, c->dtype, &u)) == CLT_OK) {
        /* one (mult, k) @ (k, N * L), or (mult, k) @ (k, L) for each image, its columns n * L
         * on in rows of N * L */
        clt__gemm_call g = {.dtype = c->dtype,
                            .m = c->mult,
                            .n = one_product ? nl : L,
                            .k = k,
                            .batch = one_product ? 1 : c->N,
                            .alpha = 1,
                            .a = c->weight,
                            .a_offset = c->weight_offset,
                            .lda = k,
                            .b = cols,
                            .ldb = nl,
                            .b_stride = L,
                            .c = copy ? wide : c->out,
                            .c_offset = copy ? 0 : c->out_offset,
                            .ldc = one_product ? nl : L,
                            .c_stride = c->mult * L};
        st = CLT__BACKEND_CALL(gemm, fn, dev, c->dtype, &g);
    }
    if (st == CLT_OK && copy) {
        clt__ew_call e = {.op = CLT_EW_copy,
                          .dtype = c->dtype,
                          .ndim = 3,
                          .n = c->mult * nl,
                          .shape = {(int64_t)c->N, (int64_t)c->mult, (int64_t)L},
                          .out = {.buf = c->out,
                                  .offset = c->out_offset,
                                  .strides = {(int64_t)(c->mult * L), (int64_t)L, 1}},
                          .in = {{.buf = wide, .strides = {(int64_t)L, (int64_t)nl, 1}}}};
        st = CLT__BACKEND_CALL(elementwise, fn, dev, c->dtype, &e);
    }
    if (wide) /* work on one device runs in order */
        clt__device_free(dev, wide, wide_capacity);
    if (cols)
        clt__device_free(dev, cols, capacity);
    return st;
}
