/* Dtype names, sizes and kernel tokens. */
#include "backend.h"

static const struct {
    const char *name;
    const char *token;
    size_t size;
} dtypes[CLT_DTYPE_COUNT] = {
    [CLT_F32] = {"f32", "f32", 4}, [CLT_F64] = {"f64", "f64", 8},
    [CLT_F16] = {"f16", "f16", 2}, [CLT_BF16] = {"bf16", "bf16", 2},
    [CLT_I32] = {"i32", "i32", 4}, [CLT_I64] = {"i64", "i64", 8},
    [CLT_U8] = {"u8", "u8", 1},    [CLT_BOOL] = {"bool", "b8", 1},
};

static bool valid(clt_dtype dtype)
{
    return dtype > CLT_DTYPE_NONE && dtype < CLT_DTYPE_COUNT;
}

const char *clt_dtype_name(clt_dtype dtype)
{
    return valid(dtype) ? dtypes[dtype].name : "invalid";
}

size_t clt_dtype_size(clt_dtype dtype)
{
    return valid(dtype) ? dtypes[dtype].size : 0;
}

const char *clt__dtype_token(clt_dtype dtype)
{
    return valid(dtype) ? dtypes[dtype].token : "invalid";
}
