/* Distributed data-parallel training over MPI (include/cltensor/distributed.h), built on the
 * public API alone into the optional library cltensor_mpi. Every collective step ends in an
 * agreement: each rank contributes its status, and a failure anywhere is raised on every rank,
 * with the failing rank's message, so that no rank is left waiting in a collective the others
 * skipped. Tensors travel through host memory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltensor.h"
#include "cltensor/distributed.h"

enum { MESSAGE = 1024, MAX_TENSORS = 4096 };

struct clt_dist {
    MPI_Comm comm;
    int rank, size, local_rank;
    clt_device *device;
    size_t bucket_bytes;
};

/* ---- agreement --------------------------------------------------------------------------------- */

/* Every rank's status: CLT_OK when all are; otherwise every rank returns the status of the
 * lowest failing rank with its message (its own, for that rank). */
static clt_status agree(MPI_Comm comm, int rank, const char *fn, clt_status st)
{
    int mine = st != CLT_OK ? rank : INT32_MAX, first = INT32_MAX;
    char message[MESSAGE];
    int status = st;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == INT32_MAX)
        return CLT_OK;
    snprintf(message, sizeof message, "%s", clt_last_error());
    MPI_Bcast(message, sizeof message, MPI_CHAR, first, comm);
    MPI_Bcast(&status, 1, MPI_INT, first, comm);
    if (rank == first)
        return st;
    return clt_set_error(status, fn, "rank %d failed: %s", first, message);
}

/* ---- the handle --------------------------------------------------------------------------------- */

static clt_device *default_device(int local_rank)
{
    int gpus = clt_device_count();
    char name[32];
    if (gpus < 0)
        return NULL;
    if (gpus == 0)
        return clt_device_cpu();
    snprintf(name, sizeof name, "gpu:%d", local_rank % gpus);
    return clt_device_get(name);
}

clt_dist *clt_dist_init(MPI_Comm comm, const clt_dist_options *options)
{
    static const char *const fn = "clt_dist_init";
    clt_dist_options o = options ? *options : (clt_dist_options){0};
    int initialised = 0;
    clt_status st = CLT_OK;
    MPI_Comm local;
    clt_dist *d;

    MPI_Initialized(&initialised);
    if (!initialised) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "MPI is not initialised: call MPI_Init first");
        return NULL;
    }
    if (!(d = calloc(1, sizeof *d))) {
        clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
        return NULL; /* collective calls would follow: this rank can only leave */
    }
    MPI_Comm_dup(comm, &d->comm);
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
    MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &d->local_rank);
    MPI_Comm_free(&local);
    d->bucket_bytes = o.bucket_bytes ? o.bucket_bytes : (size_t)25 << 20;
    d->device = o.device ? o.device : default_device(d->local_rank);
    if (!d->device)
        st = clt_last_status() ? clt_last_status() : CLT_ERR_NO_DEVICE;
    if (agree(d->comm, d->rank, fn, st) != CLT_OK) {
        MPI_Comm_free(&d->comm);
        free(d);
        return NULL;
    }
    return d;
}

void clt_dist_free(clt_dist *d)
{
    if (!d)
        return;
    MPI_Comm_free(&d->comm);
    free(d);
}

int clt_dist_rank(const clt_dist *d)
{
    return d ? d->rank : -1;
}

int clt_dist_size(const clt_dist *d)
{
    return d ? d->size : -1;
}

int clt_dist_local_rank(const clt_dist *d)
{
    return d ? d->local_rank : -1;
}

clt_device *clt_dist_device(const clt_dist *d)
{
    return d ? d->device : NULL;
}

/* ---- the model's tensors ------------------------------------------------------------------------ */

typedef struct tensors {
    int count;
    bool overflow;
    clt_tensor *items[MAX_TENSORS];
    uint64_t hash; /* FNV-1a of "name:dtype:shape;" for each */
} tensors;

static void hash_text(uint64_t *h, const char *s)
{
    for (; *s; s++)
        *h = (*h ^ (unsigned char)*s) * 0x100000001b3ull;
}

static int note(const char *name, clt_tensor *t, void *user)
{
    tensors *ts = user;
    char text[64];
    if (ts->count == MAX_TENSORS) {
        ts->overflow = true;
        return 1;
    }
    ts->items[ts->count++] = t;
    hash_text(&ts->hash, name);
    snprintf(text, sizeof text, ":%s", clt_dtype_name(clt_tensor_dtype(t)));
    hash_text(&ts->hash, text);
    for (int k = 0; k < clt_tensor_ndim(t); k++) {
        snprintf(text, sizeof text, ":%lld", (long long)clt_tensor_shape(t)[k]);
        hash_text(&ts->hash, text);
    }
    hash_text(&ts->hash, ";");
    return 0;
}

/* m's parameters (and, with buffers, its buffers after them), in registration order. */
static clt_status collect(const char *fn, clt_module *m, bool buffers, tensors *ts)
{
    ts->count = 0;
    ts->overflow = false;
    ts->hash = 0xcbf29ce484222325ull;
    if (!m)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
    if (clt_module_foreach_parameter(m, note, ts) != 0 ||
        (buffers && clt_module_foreach_buffer(m, note, ts) != 0))
        return ts->overflow ? clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn,
                                            "the module holds more than %d tensors", MAX_TENSORS)
                            : clt_last_status();
    return CLT_OK;
}

/* Writes `bytes` of host data into t (same dtype and element count), without recording. */
static clt_status write_back(clt_tensor *t, const void *bytes)
{
    clt_tensor *h = clt_tensor_from_data(bytes, clt_tensor_dtype(t), clt_tensor_ndim(t),
                                         clt_tensor_shape(t), clt_device_cpu());
    bool previous = clt_grad_set_enabled(false);
    clt_status st = h ? clt_copy_(t, h) : clt_last_status();
    clt_grad_set_enabled(previous);
    clt_tensor_release(h);
    return st;
}

/* ---- broadcast ----------------------------------------------------------------------------------- */

clt_status clt_dist_sync_module(clt_dist *d, clt_module *m)
{
    static const char *const fn = "clt_dist_sync_module";
    tensors *ts = calloc(1, sizeof *ts);
    uint64_t *hashes = d ? calloc((size_t)d->size, sizeof *hashes) : NULL;
    clt_status st;
    if (!d) {
        free(ts);
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "the handle is NULL");
    }
    st = ts && hashes ? collect(fn, m, true, ts)
                      : clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    if ((st = agree(d->comm, d->rank, fn, st)) != CLT_OK)
        goto done;
    MPI_Allgather(&ts->hash, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, d->comm);
    for (int r = 1; r < d->size && st == CLT_OK; r++)
        if (hashes[r] != hashes[0]) {
            char ranks[256] = "";
            size_t used = 0;
            for (int q = 1; q < d->size && used + 16 < sizeof ranks; q++)
                if (hashes[q] != hashes[0])
                    used += (size_t)snprintf(ranks + used, sizeof ranks - used, "%s%d",
                                             used ? ", " : "", q);
            st = clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn,
                               "the model differs between ranks: the parameters and buffers "
                               "(names, dtypes, shapes) of rank %s are not rank 0's", ranks);
        }
    for (int i = 0; i < ts->count && st == CLT_OK; i++) {
        clt_tensor *t = ts->items[i];
        size_t bytes = (size_t)clt_tensor_numel(t) * clt_dtype_size(clt_tensor_dtype(t));
        void *buf = malloc(bytes ? bytes : 1);
        clt_status mine = buf ? CLT_OK : clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
        if (mine == CLT_OK && d->rank == 0)
            mine = clt_tensor_copy_to_host(t, buf, bytes);
        if ((st = agree(d->comm, d->rank, fn, mine)) == CLT_OK) {
            MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, d->comm);
            st = agree(d->comm, d->rank, fn, d->rank == 0 ? CLT_OK : write_back(t, buf));
        }
        free(buf);
    }
done:
    free(hashes);
    free(ts);
    return st;
}

/* ---- gradients ----------------------------------------------------------------------------------- */

/* Averages the gradients of ts->items[first ... last-1] (one dtype) in one all-reduce. */
static clt_status average_bucket(clt_dist *d, const char *fn, tensors *ts, int first, int last,
                                 size_t bytes)
{
    clt_dtype dtype = clt_tensor_dtype(ts->items[first]);
    size_t esize = clt_dtype_size(dtype), at = 0;
    unsigned char *buf = calloc(bytes ? bytes : 1, 1);
    clt_status st = buf ? CLT_OK : clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (int i = first; i < last && st == CLT_OK; i++) {
        clt_tensor *g = clt_tensor_grad(ts->items[i]);
        size_t n = (size_t)clt_tensor_numel(ts->items[i]) * esize;
        if (g)
            st = clt_tensor_copy_to_host(g, buf + at, n);
        clt_tensor_release(g);
        at += n;
    }
    if ((st = agree(d->comm, d->rank, fn, st)) != CLT_OK) {
        free(buf);
        return st;
    }
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)(bytes / esize), dtype == CLT_F64 ? MPI_DOUBLE : MPI_FLOAT,
                  MPI_SUM, d->comm);
    for (size_t k = 0; k < bytes / esize; k++) {
        if (dtype == CLT_F64)
            ((double *)buf)[k] /= d->size;
        else
            ((float *)buf)[k] /= (float)d->size;
    }
    at = 0;
    for (int i = first; i < last && st == CLT_OK; i++) {
        clt_tensor *p = ts->items[i], *g = clt_tensor_grad(p);
        if (g) {
            st = write_back(g, buf + at);
        } else { /* none here: the average becomes its gradient */
            clt_tensor *h = clt_tensor_from_data(buf + at, dtype, clt_tensor_ndim(p),
                                                 clt_tensor_shape(p), clt_device_cpu());
            clt_tensor *on = h ? clt_tensor_to(h, clt_tensor_device(p)) : NULL;
            st = on ? clt_tensor_set_grad(p, on) : clt_last_status();
            clt_tensor_release(on);
            clt_tensor_release(h);
        }
        clt_tensor_release(g);
        at += (size_t)clt_tensor_numel(p) * esize;
    }
    free(buf);
    return agree(d->comm, d->rank, fn, st);
}

clt_status clt_dist_average_gradients(clt_dist *d, clt_module *m)
{
    static const char *const fn = "clt_dist_average_gradients";
    tensors *ts = calloc(1, sizeof *ts);
    clt_status st;
    int kept = 0;
    if (!d) {
        free(ts);
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "the handle is NULL");
    }
    st = ts ? collect(fn, m, false, ts) : clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (int i = 0; st == CLT_OK && i < ts->count; i++) {
        clt_tensor *p = ts->items[i];
        clt_dtype dt = clt_tensor_dtype(p);
        if (!clt_tensor_requires_grad(p))
            continue;
        if (dt != CLT_F32 && dt != CLT_F64)
            st = clt_set_error(CLT_ERR_DTYPE, fn, "a parameter is %s: gradients are averaged in "
                               "f32 or f64", clt_dtype_name(dt));
        ts->items[kept++] = p;
    }
    if (ts)
        ts->count = kept;
    if ((st = agree(d->comm, d->rank, fn, st)) != CLT_OK) {
        free(ts);
        return st;
    }
    /* buckets: runs of one dtype up to bucket_bytes (a larger tensor is a bucket of its own) */
    for (int first = 0; first < ts->count && st == CLT_OK;) {
        clt_dtype dt = clt_tensor_dtype(ts->items[first]);
        size_t bytes = 0;
        int last = first;
        while (last < ts->count && clt_tensor_dtype(ts->items[last]) == dt) {
            size_t n = (size_t)clt_tensor_numel(ts->items[last]) * clt_dtype_size(dt);
            if (last > first && bytes + n > d->bucket_bytes)
                break;
            bytes += n;
            last++;
        }
        st = average_bucket(d, fn, ts, first, last, bytes);
        first = last;
    }
    free(ts);
    return st;
}
