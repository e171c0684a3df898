/* The host backend's 2-D pooling (see cl/nn.cl), max and average, and its adjoint, in plain
 * loops that compute in the same type and order as the OpenCL kernels; the kernels themselves,
 * written once for every floating dtype, are in host_pool.inc. */
#include <string.h>
#include <tgmath.h>

#include "host.h"
#include "host_generic.h"
#include "host_simd.h"
#include "host_window.h"
#include "backends/shared/scalar_host.h"

/* Pooling over image planes [lo, hi) of N * C, each output element as the OpenCL kernel
 * computes it (the taps in the same order). Max pooling writes the indices where arg is set.
 * The output columns whose taps all lie inside the image's columns go in blocks of POOL_BLOCK,
 * tap after tap over the block (loops the compiler vectorises), with the index of each column's
 * best tap where indices are written; the others one at a time. Rows of fewer than POOL_NARROW
 * outputs, whose blocks would be all set-up (a training step's 2 x 2 pooling of 8 x 8 images
 * spent a large part of its time there), take the outputs whose window lies inside the image from
 * several rows at once (pool_gather), through tables of the windows' and the taps' offsets. */
#define POOL_BLOCK 256
#define POOL_NARROW 16
#define POOL_TABLE 64

/* An average window's divisor counting the padding: its taps inside the padded image, kh * kw
 * but where ceil mode lets the last window run past the padding. */
static inline long padded_taps(const clt__conv_call *c, long oy, long ox)
{
    return clt_window_taps_inside(oy, c->kh, c->sh, 0, c->dh, c->H + 2 * (size_t)c->ph) *
           clt_window_taps_inside(ox, c->kw, c->sw, 0, c->dw, c->W + 2 * (size_t)c->pw);
}

/* pool_<DT> and pool_backward_<DT> of every floating dtype. */
#define HOST_GENERIC "host_pool.inc"
#include "host_each_floating.h"

HOST_ENTRY(pool2d, clt__conv_call, pool, c->N * c->C, c->OH * c->OW * (TAPS(c) + 2))
HOST_ENTRY(pool2d_backward, clt__conv_call, pool_backward, c->N * c->C,
           c->H * c->W * (TAPS(c) + 1))
