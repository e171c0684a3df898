/* The host backend's row operations (see cl/rows.cl): the running sum and the stable sort
 * of each contiguous row, with the algorithms of cl/sort_scan.cl, instantiated
 * below for every dtype, so that cpu and the OpenCL devices sum and order alike. */
#include "host.h"
#include "backends/shared/scalar_host.h"

#define GLOBAL
#define ROWS_CAT_(a, b) a##b
#define ROWS_CAT(a, b) ROWS_CAT_(a, b)
#define ROWS_NAME(name) ROWS_CAT(name##_, DT)
#define LOAD(v) ROWS_CAT(clt_load_, DT)(v)
#define STORE(v) ROWS_CAT(ROWS_CAT(ROWS_CAT(clt_, KIND), _to_), DT)(v)

#define ROWS_FLOATING 1
#define HOST_GENERIC "cl/sort_scan.cl"
#include "host_each_floating.h"
#undef ROWS_FLOATING
#define ROWS_FLOATING 0
#define KIND int
#define CT clt_i64
#define DT i32
#define ST clt_i32
#include "cl/sort_scan.cl"
#undef DT
#undef ST
#define DT i64
#define ST clt_i64
#include "cl/sort_scan.cl"
#undef DT
#undef ST
#define DT u8
#define ST clt_u8
#include "cl/sort_scan.cl"
#undef DT
#define DT b8
#include "cl/sort_scan.cl"
#undef DT
#undef ST

/* Runs the dtype's instance of `row` on every row, as the OpenCL kernel's work-items do. */
#define EACH_DTYPE(X)                                                                          \
    X(CLT_F32, f32, float) X(CLT_F64, f64, double) X(CLT_F16, f16, clt_u16)                    \
    X(CLT_BF16, bf16, clt_u16) X(CLT_I32, i32, clt_i32) X(CLT_I64, i64, clt_i64)               \
    X(CLT_U8, u8, clt_u8) X(CLT_BOOL, b8, clt_u8)

clt_status clt__host_cumsum(const char *fn, clt_device *dev, const clt__rows_call *c)
{
    (void)dev;
#define CUMSUM(dtype, dt, st)                                                                  \
    case dtype:                                                                                \
        for (size_t r = 0; r < c->rows; r++)                                                   \
            clt_cumsum_row_##dt((st *)c->out + c->out_offset + r * c->len,                     \
                                (const st *)c->in + c->in_offset + r * c->len, c->len,         \
                                c->reverse);                                                   \
        return CLT_OK;
    switch (c->dtype) {
        EACH_DTYPE(CUMSUM)
    default:
        break;
    }
#undef CUMSUM
    return clt__backend_unsupported(fn, dev, "cumsum", c->dtype);
}

clt_status clt__host_sort(const char *fn, clt_device *dev, const clt__rows_call *c)
{
    (void)dev;
#define SORT(dtype, dt, st)                                                                    \
    case dtype:                                                                                \
        for (size_t r = 0; r < c->rows; r++)                                                   \
            clt_sort_row_##dt((st *)c->out + c->out_offset + r * c->len,                       \
                              (clt_i64 *)c->idx + c->idx_offset + r * c->len,                  \
                              (const st *)c->in + c->in_offset + r * c->len,                   \
                              (st *)c->tmp + r * c->len, (clt_i64 *)c->tmp_idx + r * c->len,   \
                              c->len, c->reverse);                                             \
        return CLT_OK;
    switch (c->dtype) {
        EACH_DTYPE(SORT)
    default:
        break;
    }
#undef SORT
    return clt__backend_unsupported(fn, dev, "sort", c->dtype);
}
