/* The host backend's threads: the cpu device's kernels split their outer loop over a pool of
 * worker threads (one per available processor by default; clt_set_num_threads and the
 * environment variable CLT_NUM_THREADS choose another count). Each part computes its own output
 * elements exactly as the whole loop would, so results do not depend on the thread count. */
#ifndef CLT_HOST_PARALLEL_H
#define CLT_HOST_PARALLEL_H

#include <stddef.h>

/* A part of a loop: items [lo, hi) of `call`. */
typedef void (*clt__host_part)(const void *call, size_t lo, size_t hi);

/* Runs body(call, lo, hi) over items [0, n), each item costing about `cost` elementary
 * operations (elements read or written): in parts on the pool's threads and this one when the
 * whole is large enough to repay waking them, else here alone. Also here alone when called from
 * inside a part, or while another thread's loop holds the pool. Returns once every part is
 * done. */
void clt__host_parallel(size_t n, size_t cost, clt__host_part body, const void *call);


#endif
