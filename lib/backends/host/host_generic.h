/* The names the host's dtype-generic kernels are written with: each such kernel is an ordinary
 * function in a .inc file beside the .c file that includes it once per dtype (or element type),
 * with the type macros that file lists defined, as cl/'s programs are built for one dtype with
 * -DDT, -DST, -DCT and -DKIND. CLT_CAT pastes its arguments once expanded, for the instances'
 * names (CLT_CAT(pool_, DT) is pool_f32 with DT f32); LOAD(v) converts an element of the storage
 * type ST to the compute type CT and STORE(v) a CT back (cl/scalar.cl's clt_load_<DT> and
 * clt_<KIND>_to_<DT>); HOST_FLOATING picks a floating kernel's instance for a dtype, and
 * HOST_ENTRY makes a backend entry of it. */
#ifndef CLT_HOST_GENERIC_H
#define CLT_HOST_GENERIC_H

#include "host_parallel.h"

#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define STORE(v) CLT_CAT(CLT_CAT(CLT_CAT(clt_, KIND), _to_), DT)(v)

/* The instance of floating kernel `name` for `dtype`: name_f64, name_f16, name_bf16, or
 * name_f32 for any other dtype. */
#define HOST_FLOATING(name, dtype)                                                             \
    ((dtype) == CLT_F64    ? name##_f64                                                        \
     : (dtype) == CLT_F16  ? name##_f16                                                        \
     : (dtype) == CLT_BF16 ? name##_bf16                                                       \
                           : name##_f32)

/* The backend entry clt__host_<name>: floating kernel `kernel` of the call's dtype over its
 * `items` outer items of about `cost` element operations each, split over the threads. */
#define HOST_ENTRY(name, call_type, kernel, items, cost)                                       \
    clt_status clt__host_##name(const char *fn, clt_device *dev, const call_type *c)           \
    {                                                                                          \
        (void)fn;                                                                              \
        (void)dev;                                                                             \
        clt__host_parallel(items, cost, HOST_FLOATING(kernel, c->dtype), c);                   \
        return CLT_OK;                                                                         \
    }

#endif
