/* The host backend's functions, one for each entry of the backend table (backends/backend.h),
 * declared from that table: a definition that drifts from it does not compile. */
#ifndef CLT_HOST_H
#define CLT_HOST_H

#include "backends/backend.h"

#define CLT__HOST_DECLARE(name, ret, params, kind) ret clt__host_##name params;
CLT__BACKEND_OPS(CLT__HOST_DECLARE)
#undef CLT__HOST_DECLARE

/* Whether cpu's matrix products take the library's own GEMM (host_blas.h) rather than CBLAS:
 * always in a build without CBLAS; else as the environment variable CLT_HOST_GEMM says
 * ("builtin"; "cblas", unset or empty for CBLAS), read at the first product, or as the last
 * call of clt__host_gemm_use_builtin set it (for tests and benchmarks; no effect without
 * CBLAS). */
bool clt__host_gemm_builtin(void);
void clt__host_gemm_use_builtin(bool builtin);

#endif
