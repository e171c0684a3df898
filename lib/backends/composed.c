/* Backend entries composed of a device's other entries, where a backend has no kernel of its
 * own for a case (see backend.h): the convolution as im2col and a product (OpenCL's conv2d, and
 * the host's for layers whose bands would not fit in a core's cache). */
#include "backends/backend.h"
#include "core/core.h"
#include "device/allocator.h"

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
