/* The prelude of every OpenCL program: fixed-width type names, bit casts and the switches that
 * make device arithmetic match the host's (no contraction into fma). Options set CLT_HAS_FP64. */
#pragma OPENCL FP_CONTRACT OFF
#if CLT_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

typedef uchar clt_u8;
typedef ushort clt_u16;
typedef uint clt_u32;
typedef ulong clt_u64;
typedef int clt_i32;
typedef long clt_i64;

#define CLT_FN static inline
#define CLT_U64C(x) x##UL
#define CLT_I64C(x) x##L
#define clt_f32_bits(f) as_uint(f)
#define clt_bits_f32(u) as_float(u)
#define clt_bits_i32(u) as_int(u)
#define clt_bits_i64(u) as_long(u)
#define clt_mulhi32(a, b) mul_hi((uint)(a), (uint)(b))
#if CLT_HAS_FP64
#define clt_f64_bits(d) as_ulong(d)
#define clt_bits_f64(u) as_double(u)
#endif
