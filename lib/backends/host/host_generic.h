/* The names the host's dtype-generic kernels are written with: each such kernel is an ordinary
 * function in a .inc file beside the .c file that includes it once per dtype (or element type),
 * with the type macros that file lists defined, as cl/'s programs are built for one dtype with
 * -DDT, -DST, -DCT and -DKIND. CLT_CAT pastes its arguments once expanded, for the instances'
 * names (CLT_CAT(pool_, DT) is pool_f32 with DT f32); LOAD(v) converts an element of the storage
 * type ST to the compute type CT and STORE(v) a CT back (cl/scalar.cl's clt_load_<DT> and
 * clt_<KIND>_to_<DT>). */
#ifndef CLT_HOST_GENERIC_H
#define CLT_HOST_GENERIC_H

#define CLT_CAT_(a, b) a##b
#define CLT_CAT(a, b) CLT_CAT_(a, b)
#define LOAD(v) CLT_CAT(clt_load_, DT)(v)
#define STORE(v) CLT_CAT(CLT_CAT(CLT_CAT(clt_, KIND), _to_), DT)(v)

#endif
