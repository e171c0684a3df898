/* Instantiates a dtype-generic kernel file for every floating dtype: includes the file that
 * HOST_GENERIC names (a string, undefined after) once per dtype, in the order f32, f16, bf16,
 * f64, with DT (the dtype's token), ST (its storage type), CT (its compute type: double for f64,
 * else float) and KIND (dbl for f64, else flt) defined, and undefines them after. No include
 * guard: it is included once for each such file. */

#define KIND flt
#define CT float
#define DT f32
#define ST float
#include HOST_GENERIC
#undef DT
#undef ST
#define DT f16
#define ST clt_u16
#include HOST_GENERIC
#undef DT
#define DT bf16
#include HOST_GENERIC
#undef DT
#undef ST
#undef KIND
#undef CT
#define KIND dbl
#define CT double
#define DT f64
#define ST double
#include HOST_GENERIC
#undef KIND
#undef CT
#undef DT
#undef ST
#undef HOST_GENERIC
