/* The host backend's neural-network kernels (see cl/nn.cl): index_select, im2col and 2-D
 * pooling, as plain loops; pooling computes in the same type as the OpenCL kernels. */
#include <string.h>

#include "backend.h"
#include "scalar_host.h"

clt_status clt__host_index_select(const char *fn, clt_device *dev, const clt__index_call *c)
{
    size_t size = clt_dtype_size(c->dtype);
    const char *src = (const char *)c->src + c->src_offset * size;
    const int64_t *idx = (const int64_t *)c->idx + c->idx_offset;
    char *out = (char *)c->out + c->out_offset * size;
    (void)fn;
    (void)dev;
    for (size_t a = 0; a < c->A; a++)
        for (size_t m = 0; m < c->M; m++)
            memcpy(out + (a * c->M + m) * c->B * size,
                   src + (a * c->K + (size_t)idx[m]) * c->B * size, c->B * size);
    return CLT_OK;
}

clt_status clt__host_im2col(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    size_t size = clt_dtype_size(c->dtype), cols = c->OH * c->OW;
    size_t rows = c->C * (size_t)(c->kh * c->kw);
    const char *in = (const char *)c->in + c->in_offset * size;
    char *out = (char *)c->out + c->out_offset * size;
    (void)fn;
    (void)dev;
    memset(out, 0, c->N * rows * cols * size); /* every dtype's zero is all zero bits */
    for (size_t n = 0; n < c->N; n++)
        for (size_t row = 0; row < rows; row++) {
            size_t ch = row / (size_t)(c->kh * c->kw);
            long y = (long)((row / (size_t)c->kw) % (size_t)c->kh), x = (long)(row % (size_t)c->kw);
            for (size_t col = 0; col < cols; col++) {
                long iy = (long)(col / c->OW) * c->sh - c->ph + y * c->dh;
                long ix = (long)(col % c->OW) * c->sw - c->pw + x * c->dw;
                if (iy < 0 || iy >= (long)c->H || ix < 0 || ix >= (long)c->W)
                    continue;
                memcpy(out + ((n * rows + row) * cols + col) * size,
                       in + (((n * c->C + ch) * c->H + (size_t)iy) * c->W + (size_t)ix) * size,
                       size);
            }
        }
    return CLT_OK;
}

#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define STORE(v) CLT_CAT(CLT_CAT(CLT_CAT(clt_, KIND), _to_), DT)(v)

#define HOST_POOL                                                                              \
    static void CLT_CAT(pool_, DT)(const clt__conv_call *c)                                    \
    {                                                                                          \
        const ST *in = (const ST *)c->in + c->in_offset;                                       \
        ST *out = (ST *)c->out + c->out_offset;                                                \
        int64_t *arg = c->arg ? (int64_t *)c->arg + c->arg_offset : NULL;                      \
        for (size_t i = 0; i < c->N * c->C * c->OH * c->OW; i++) {                             \
            size_t ox = i % c->OW, oy = (i / c->OW) % c->OH, nc = i / (c->OW * c->OH);         \
            const ST *plane = in + nc * c->H * c->W;                                           \
            CT best = 0, sum = 0;                                                              \
            long best_at = -1, inside = 0;                                                     \
            for (int y = 0; y < c->kh; y++) {                                                  \
                long iy = (long)oy * c->sh - c->ph + (long)y * c->dh;                          \
                for (int x = 0; x < c->kw; x++) {                                              \
                    long ix = (long)ox * c->sw - c->pw + (long)x * c->dw;                      \
                    if (iy < 0 || iy >= (long)c->H || ix < 0 || ix >= (long)c->W)              \
                        continue;                                                              \
                    CT v = LOAD(plane[iy * (long)c->W + ix]);                                  \
                    inside++;                                                                  \
                    sum += v;                                                                  \
                    if (best_at < 0 || v > best || (v != v && best == best)) {                 \
                        best = v;                                                              \
                        best_at = iy * (long)c->W + ix;                                        \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
            if (c->is_max) {                                                                   \
                out[i] = STORE(best_at < 0 ? -INFINITY : best);                                \
                arg[i] = best_at;                                                              \
            } else {                                                                           \
                long count = c->count_pad ? (long)c->kh * c->kw : inside;                      \
                out[i] = STORE(sum / (CT)count);                                               \
            }                                                                                  \
        }                                                                                      \
    }

#define KIND flt
#define CT float
#define DT f32
#define ST float
HOST_POOL
#undef DT
#undef ST
#define DT f16
#define ST clt_u16
HOST_POOL
#undef DT
#define DT bf16
HOST_POOL
#undef DT
#undef ST
#undef KIND
#undef CT
#define KIND dbl
#define CT double
#define DT f64
#define ST double
HOST_POOL

clt_status clt__host_pool2d(const char *fn, clt_device *dev, const clt__conv_call *c)
{
    (void)fn;
    (void)dev;
    switch (c->dtype) {
    case CLT_F64: pool_f64(c); break;
    case CLT_F16: pool_f16(c); break;
    case CLT_BF16: pool_bf16(c); break;
    default: pool_f32(c); break;
    }
    return CLT_OK;
}
