/* The host's prelude for cl/scalar.cl: the same fixed-width names and bit casts as
 * cl/common.cl gives OpenCL programs, so that the host compiles the very same functions. */
#ifndef CLT_SCALAR_HOST_H
#define CLT_SCALAR_HOST_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if FLT_EVAL_METHOD != 0
#error "cltensor's host arithmetic needs FLT_EVAL_METHOD == 0 (SSE, not x87) to match devices"
#endif

typedef uint8_t clt_u8;
typedef uint16_t clt_u16;
typedef uint32_t clt_u32;
typedef uint64_t clt_u64;
typedef int32_t clt_i32;
typedef int64_t clt_i64;

#define CLT_FN static inline
#define CLT_HAS_FP64 1
#define CLT_U64C(x) UINT64_C(x)
#define CLT_I64C(x) INT64_C(x)

static inline clt_u32 clt_f32_bits(float f)
{
    clt_u32 u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float clt_bits_f32(clt_u32 u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline clt_u64 clt_f64_bits(double d)
{
    clt_u64 u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline double clt_bits_f64(clt_u64 u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline clt_i32 clt_bits_i32(clt_u32 u)
{
    clt_i32 i;
    memcpy(&i, &u, sizeof i);
    return i;
}

static inline clt_i64 clt_bits_i64(clt_u64 u)
{
    clt_i64 i;
    memcpy(&i, &u, sizeof i);
    return i;
}

static inline clt_u32 clt_mulhi32(clt_u32 a, clt_u32 b)
{
    return (clt_u32)(((clt_u64)a * b) >> 32);
}

/* No contraction into fma, as in cl/common.cl: the build passes -ffp-contract=off (GCC ignores
 * the standard pragma). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#include "cl/scalar.cl"

#endif
