/* The host backend's functions, one for each entry of the backend table (backends/backend.h),
 * declared from that table: a definition that drifts from it does not compile. */
#ifndef CLT_HOST_H
#define CLT_HOST_H

#include "backends/backend.h"

#define CLT__HOST_DECLARE(name, ret, params, kind) ret clt__host_##name params;
CLT__BACKEND_OPS(CLT__HOST_DECLARE)
#undef CLT__HOST_DECLARE

#endif
