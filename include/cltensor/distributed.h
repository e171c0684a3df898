/* Distributed data-parallel training over MPI: the optional library cltensor_mpi (built when
 * MPI is found; link it besides cltensor), PyTorch's DistributedDataParallel on an MPI
 * communicator. One process per device: every rank holds the whole model, trains on its own
 * shard of each batch (clt_loader_options num_replicas and rank), and after each backward
 * averages the gradients over the ranks, so that the optimizers run unchanged and every rank
 * keeps the same parameters. The caller initialises and finalises MPI itself (MPI_Init).
 * Every function here is collective: all ranks of the communicator call it, in the same
 * order; a failure on one rank is reported on every rank (no rank waits for ever). */
#ifndef CLTENSOR_DISTRIBUTED_H
#define CLTENSOR_DISTRIBUTED_H

#include <mpi.h>

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_dist clt_dist;

typedef struct clt_dist_options {
    clt_device *device;  /* this rank's device; NULL means cpu, unless device_per_rank */
    bool device_per_rank; /* with a NULL device: gpu:(local rank modulo the OpenCL devices), so
                           * that the ranks of one machine share its devices; cpu when there is
                           * no OpenCL device */
    size_t bucket_bytes; /* gradients are averaged this many bytes at a time; 0 means 25 MiB */
} clt_dist_options;
/* cpu, buckets of 25 MiB (PyTorch's bucket_cap_mb). */
CLT_API clt_dist_options clt_dist_options_default(void);

/* Joins the ranks of comm (duplicated; MPI_COMM_WORLD usually): a new handle, freed with
 * clt_dist_free, or NULL with the last error set on every rank when any rank fails
 * (CLT_ERR_INVALID_ARGUMENT when MPI is not initialised; the failing rank's error, with its
 * number, on the others). options may be NULL. */
CLT_API clt_dist *clt_dist_init(MPI_Comm comm, const clt_dist_options *options);
/* Frees the handle (not collective; accepts NULL). */
CLT_API void clt_dist_free(clt_dist *d);

/* This process's rank, the number of ranks, its rank among the ranks on its machine, and its
 * device (owned by the library); -1 / NULL for NULL. */
CLT_API int clt_dist_rank(const clt_dist *d);
CLT_API int clt_dist_size(const clt_dist *d);
CLT_API int clt_dist_local_rank(const clt_dist *d);
CLT_API clt_device *clt_dist_device(const clt_dist *d);

/* Checks that every rank holds the same model (a hash of every parameter's and buffer's name,
 * dtype and shape), then copies rank 0's parameters and buffers into every other rank's, in
 * place. CLT_OK on every rank, or the same failure on every rank: CLT_ERR_INVALID_ARGUMENT
 * naming the ranks whose model differs from rank 0's (nothing copied), or a rank's error. */
CLT_API clt_status clt_dist_sync_module(clt_dist *d, clt_module *m);

/* Replaces the gradient of every parameter of m that requires grad by its average over the
 * ranks (a parameter without a gradient counts as zeros and receives one), bucket_bytes at a
 * time through page-locked host memory (ordinary memory on cpu); the averages of a bucket come
 * back in one copy into one new tensor, and each gradient is a view of it (contiguous, in its
 * parameter's shape). Call it after clt_backward and before the optimizer's step.
 * CLT_OK on every rank, or the same failure on every rank (CLT_ERR_DTYPE for a parameter that
 * is not f32 or f64). */
CLT_API clt_status clt_dist_average_gradients(clt_dist *d, clt_module *m);

/* clt_backward(loss) with the gradients averaged over the ranks while they are computed
 * (DistributedDataParallel's overlap): the parameters of m that require grad are cut into
 * buckets of bucket_bytes in the reverse of registration order (the order a backward completes
 * them), and each bucket is all-reduced as soon as its gradients are complete, by a thread of
 * its own while the pass computes the rest when MPI allows calls from another thread
 * (MPI_Init_thread with MPI_THREAD_SERIALIZED or more) and there is more than one bucket, else
 * on this thread. The gradient this
 * pass adds is averaged: with the gradients zeroed before each step, the result is that of
 * clt_backward then clt_dist_average_gradients. CLT_OK on every rank, or the same failure on
 * every rank, no gradient changed (but for parameters the pass gave no gradient on this rank
 * while another rank's did: those receive the average before the pass commits). */
CLT_API clt_status clt_dist_backward(clt_dist *d, clt_module *m, clt_tensor *loss);

#ifdef __cplusplus
}
#endif

#endif
