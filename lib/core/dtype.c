/* The dtype table (core/dtype.h) and the public names and sizes read from it. */
#include "core/dtype.h"

#define CLT__DTYPE_ROW(dt, name, token, size, floating, compute, st, ct, kind, kind_int)      \
    [dt] = {name, token, size, floating, compute,                                              \
            "-DDT=" token " -DST=" st " -DCT=" ct " -DKIND=" kind " -DCLT_KIND_INT=" kind_int},
static const clt__dtype_info dtypes[CLT_DTYPE_COUNT] = {CLT__DTYPES(CLT__DTYPE_ROW)};
#undef CLT__DTYPE_ROW

static const clt__dtype_info invalid = {"invalid", "invalid", 0, false, CLT_DTYPE_NONE, ""};

const clt__dtype_info *clt__dtype(clt_dtype dtype)
{
    return dtype > CLT_DTYPE_NONE && dtype < CLT_DTYPE_COUNT ? &dtypes[dtype] : &invalid;
}

const char *clt_dtype_name(clt_dtype dtype)
{
    return clt__dtype(dtype)->name;
}

size_t clt_dtype_size(clt_dtype dtype)
{
    return clt__dtype(dtype)->size;
}
