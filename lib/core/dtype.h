/* The dtype table: every fact about a dtype that the library needs, in one place. */
#ifndef CLT_DTYPE_H
#define CLT_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

#include "cltensor/tensor.h"

/* X(dtype, name, kernel token, bytes, floating, compute dtype, kernel storage type, kernel
 * compute type, kernel kind, CLT_KIND_INT). The compute dtype is the one arithmetic and sums run
 * in: f32 for f16 and bf16, i64 for the integers and bool. The kernel token names the dtype in
 * kernel names and scalar.cl ("b8" for bool); the kernel kind picks the family of expressions
 * (flt: float arithmetic, dbl: double, int: 64-bit integers). */
#define CLT__DTYPES(X)                                                                         \
    X(CLT_F32, "f32", "f32", 4, true, CLT_F32, "float", "float", "flt", "0")                   \
    X(CLT_F64, "f64", "f64", 8, true, CLT_F64, "double", "double", "dbl", "0")                 \
    X(CLT_F16, "f16", "f16", 2, true, CLT_F32, "clt_u16", "float", "flt", "0")                 \
    X(CLT_BF16, "bf16", "bf16", 2, true, CLT_F32, "clt_u16", "float", "flt", "0")              \
    X(CLT_I32, "i32", "i32", 4, false, CLT_I64, "clt_i32", "clt_i64", "int", "1")              \
    X(CLT_I64, "i64", "i64", 8, false, CLT_I64, "clt_i64", "clt_i64", "int", "1")              \
    X(CLT_U8, "u8", "u8", 1, false, CLT_I64, "clt_u8", "clt_i64", "int", "1")                  \
    X(CLT_BOOL, "bool", "b8", 1, false, CLT_I64, "clt_u8", "clt_i64", "int", "1")

typedef struct clt__dtype_info {
    const char *name;    /* "f32", as clt_dtype_name gives it */
    const char *token;   /* "f32"; "b8" for bool */
    size_t size;         /* bytes per element */
    bool floating;       /* f32, f64, f16, bf16 */
    clt_dtype compute;   /* the dtype arithmetic and sums run in */
    const char *options; /* the kernels' build options: "-DDT=f16 -DST=clt_u16 -DCT=float
                          * -DKIND=flt -DCLT_KIND_INT=0" */
} clt__dtype_info;

/* The facts of a valid dtype (CLT_F32 ... CLT_BOOL); for any other value, a row named
 * "invalid" of size 0. */
const clt__dtype_info *clt__dtype(clt_dtype dtype);

/* f32, f64, f16 or bf16. */
static inline bool clt__is_floating(clt_dtype dtype)
{
    return clt__dtype(dtype)->floating;
}

#endif
