/* The host backend's neural-network kernels other than convolution's and pooling's (see
 * host_conv.c, host_pool.c): index_select and its adjoint index_add, attention and cross
 * entropy's rows, as plain loops; the floating ones, written once for every floating dtype in
 * host_nn.inc, compute in the same type and order as the OpenCL kernels. */
#include <string.h>
#include <tgmath.h>

#include "host.h"
#include "host_generic.h"
#include "backends/shared/scalar_host.h"

/* Rows [lo, hi) of the A x M rows of B elements index_select writes. */
static void index_select_part(const void *call, size_t lo, size_t hi)
{
    const clt__index_call *c = call;
    size_t size = clt_dtype_size(c->dtype);
    const char *src = (const char *)c->src + c->src_offset * size;
    const int64_t *idx = (const int64_t *)c->idx + c->idx_offset;
    char *out = (char *)c->out + c->out_offset * size;
    for (size_t r = lo; r < hi; r++)
        memcpy(out + r * c->B * size,
               src + (r / c->M * c->K + (size_t)idx[r % c->M]) * c->B * size, c->B * size);
}

clt_status clt__host_index_select(const char *fn, clt_device *dev, const clt__index_call *c)
{
    (void)fn;
    (void)dev;
    clt__host_parallel(c->A * c->M, 2 * c->B, index_select_part, c);
    return CLT_OK;
}

/* index_add_<DT>, attention_<DT> and xent_<DT> of every floating dtype. */
#define HOST_GENERIC "host_nn.inc"
#include "host_each_floating.h"

HOST_ENTRY(index_add, clt__index_add_call, index_add, c->A * c->K * c->B,
           c->M / (c->K ? c->K : 1) + 2)
HOST_ENTRY(attention, clt__attention_call, attention, c->B * c->L, c->S *(2 * c->E + c->D))
HOST_ENTRY(cross_entropy, clt__xent_call, xent, c->rows, 8 * c->classes)
