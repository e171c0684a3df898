/* Distributed data-parallel training over MPI (include/cltensor/distributed.h), built on the
 * public API alone into the optional library cltensor_mpi. Every collective step ends in an
 * agreement: each rank contributes its status, and a failure anywhere is raised on every rank,
 * with the failing rank's message, so that no rank is left waiting in a collective the others
 * skipped. Gradients travel through the device's pinned host memory (clt_host_buffer: page-locked
 * on OpenCL devices, ordinary memory on cpu), read and written by the device's own copies: one
 * copy a bucket each way, not one a tensor.
 * clt_dist_backward all-reduces buckets of gradients from the backward pass's hooks, on a thread
 * of its own when MPI allows. */
#include <pthread.h>
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
    clt_host_buffer *pinned; /* the staging of a bucket, kept for the next one */
    clt_event *upload;       /* the copy of the last averages out of it, while it may run */
    clt_tensor *grads[MAX_TENSORS]; /* a bucket's gradients (NULL: none) */
    clt_tensor *parts[MAX_TENSORS]; /* and flattened (bucket_to_host), then their averages */
};

/* ---- staging ----------------------------------------------------------------------------------- */

/* Waits for the last averages' copy out of the staging, its status. The copy is queued without
 * waiting, so that the device goes on to the work after it while the host goes on queueing; the
 * next bucket's read of gradients into the staging is queued after it on the same in-order
 * queue, so the host waits only where it would touch the staging before such a read has
 * finished (a new staging, a bucket whose read failed) or where the read is another device's. */
static clt_status upload_done(clt_dist *d)
{
    clt_status st = d->upload ? clt_event_wait(d->upload) : CLT_OK;
    clt_event_release(d->upload);
    d->upload = NULL;
    return st;
}

static void staging_free(clt_dist *d)
{
    upload_done(d);
    clt_host_buffer_free(d->pinned);
    d->pinned = NULL;
}

/* Host memory for `bytes` at least (zeroed when new), kept for the next bucket; NULL with the
 * last error set. */
static unsigned char *staging(clt_dist *d, const char *fn, size_t bytes)
{
    bytes = bytes ? bytes : 1;
    if (bytes > clt_host_buffer_size(d->pinned)) {
        staging_free(d);
        if (!(d->pinned = clt_host_buffer_new(d->device, bytes))) {
            clt_set_error(clt_last_status(), fn, "no pinned host memory for %zu bytes of "
                          "gradients on %s", bytes, clt_device_name(d->device));
            return NULL;
        }
        memset(clt_host_buffer_data(d->pinned), 0, bytes);
    }
    return clt_host_buffer_data(d->pinned);
}

/* Copies a bucket's gradients into dst, one after the other in row-major order (grads[k] NULL:
 * params[k]'s numel zeros; all of `dtype`): joined on the device into one tensor (clt_cat: one
 * launch for up to 8), then one transfer. */
static clt_status bucket_to_host(clt_dist *d, clt_tensor *const *grads, clt_tensor *const *params,
                                 int count, clt_dtype dtype, void *dst, size_t bytes)
{
    clt_status st = CLT_OK;
    bool previous = clt_grad_set_enabled(false);
    int made = 0;
    for (; made < count && st == CLT_OK; made++) {
        int64_t n = clt_tensor_numel(params[made]);
        d->parts[made] = grads[made] ? clt_reshape(grads[made], 1, &n)
                                     : clt_tensor_zeros(1, &n, dtype, d->device);
        st = d->parts[made] ? CLT_OK : clt_last_status();
    }
    clt_tensor *flat = st == CLT_OK ? clt_cat(d->parts, count, 0) : NULL;
    if (st == CLT_OK && !flat)
        st = clt_last_status();
    if (st == CLT_OK && clt_tensor_device(flat) != d->device) /* not queued after the upload */
        st = upload_done(d);
    if (st == CLT_OK)
        st = clt_tensor_read_async(flat, dst, bytes, NULL);
    clt_tensor_release(flat);
    for (int k = 0; k < made; k++)
        clt_tensor_release(d->parts[k]);
    clt_grad_set_enabled(previous);
    return st;
}

/* A bucket's averages, the `bytes` at src, back on d's device in one copy, queued (d->upload:
 * src stays untouched until it has run): avgs[k] a view of it in params[k]'s shape for
 * k < count (each a new reference), or, on a failure, none and the last error set. */
static clt_status averages_from_host(clt_dist *d, clt_dtype dtype, const void *src, size_t bytes,
                                     clt_tensor *const *params, int count, clt_tensor **avgs)
{
    int64_t n = (int64_t)(bytes / clt_dtype_size(dtype)), at = 0;
    clt_tensor *flat = clt_tensor_empty(1, &n, dtype, d->device);
    clt_status st = flat ? clt_tensor_write_async(flat, src, bytes, &d->upload) : clt_last_status();
    int made = 0;
    for (; made < count && st == CLT_OK; made++) {
        int64_t len = clt_tensor_numel(params[made]);
        clt_tensor *run = clt_narrow(flat, 0, at, len);
        avgs[made] = run ? clt_view(run, clt_tensor_ndim(params[made]),
                                    clt_tensor_shape(params[made]))
                         : NULL;
        clt_tensor_release(run);
        st = avgs[made] ? CLT_OK : clt_last_status();
        at += len;
    }
    for (int k = 0; st != CLT_OK && k < made; k++)
        clt_tensor_release(avgs[k]);
    clt_tensor_release(flat);
    return st;
}

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

clt_dist_options clt_dist_options_default(void)
{
    return (clt_dist_options){.bucket_bytes = (size_t)25 << 20};
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
    d->device = o.device                ? o.device
                : o.device_per_rank ? default_device(d->local_rank)
                                    : clt_device_cpu();
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
    staging_free(d);
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
    bool hashing; /* whether collect keeps hash */
    uint64_t hash; /* FNV-1a of "name:dtype:shape;" for each */
    clt_tensor *items[MAX_TENSORS];
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
    if (!ts->hashing)
        return 0;
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

/* m's parameters (and, with buffers, its buffers after them), in registration order, with their
 * hash where `hash` asks for it. */
static clt_status collect(const char *fn, clt_module *m, bool buffers, bool hash, tensors *ts)
{
    ts->count = 0;
    ts->overflow = false;
    ts->hashing = hash;
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
    clt_tensor *h = clt_tensor_from_data(clt_tensor_ndim(t),
                                         clt_tensor_shape(t), bytes, clt_tensor_dtype(t), clt_device_cpu());
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
    st = ts && hashes ? collect(fn, m, true, true, ts)
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

/* Every rank's count values of dtype at buf, summed and divided by the number of ranks, in
 * place, with each rank's status folded into the same all-reduce: buf has room for one value
 * more, where a rank that failed (st, or *pending: a failure since the last agreement) puts 1.
 * Where any rank did, every rank sees it and they agree on the failure; else no agreement is
 * needed (one collective a bucket, not three: the averages of small gradients were bound by the
 * collectives' latency). Collective. */
typedef struct carried {
    clt_status st;
    char message[MESSAGE];
} carried;

/* Keeps st (and the last error's message) for the next agreement. */
static void carry(carried *c, clt_status st)
{
    c->st = st;
    if (st != CLT_OK)
        snprintf(c->message, sizeof c->message, "%s", clt_last_error());
}

/* The carried status, its message the last error again; c cleared. */
static clt_status carried_take(carried *c, const char *fn)
{
    clt_status st = c->st;
    c->st = CLT_OK;
    return st == CLT_OK ? CLT_OK : clt_set_error(st, fn, "%s", c->message);
}

static clt_status mean_over_ranks(clt_dist *d, const char *fn, void *buf, size_t count,
                                  clt_dtype dtype, clt_status st, carried *pending)
{
    bool f64 = dtype == CLT_F64, failed;
    if (st == CLT_OK)
        st = carried_take(pending, fn);
    else
        pending->st = CLT_OK;
    if (f64)
        ((double *)buf)[count] = st != CLT_OK;
    else
        ((float *)buf)[count] = st != CLT_OK;
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)count + 1, f64 ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM,
                  d->comm);
    failed = f64 ? ((double *)buf)[count] != 0 : ((float *)buf)[count] != 0;
    if (failed)
        return agree(d->comm, d->rank, fn, st);
    if (f64) { /* (a loop a dtype: one in vectors) */
        double *v = buf, n = d->size;
        for (size_t k = 0; k < count; k++)
            v[k] /= n;
    } else {
        float *v = buf, n = (float)d->size;
        for (size_t k = 0; k < count; k++)
            v[k] /= n;
    }
    return CLT_OK;
}

/* The end of the bucket that starts at ts->items[first]: a run of one dtype up to bucket_bytes
 * (a larger tensor is a bucket of its own); its size into *bytes. */
static int bucket_end(const clt_dist *d, const struct tensors *ts, int first, size_t *bytes)
{
    clt_dtype dt = clt_tensor_dtype(ts->items[first]);
    int last = first;
    *bytes = 0;
    while (last < ts->count && clt_tensor_dtype(ts->items[last]) == dt) {
        size_t n = (size_t)clt_tensor_numel(ts->items[last]) * clt_dtype_size(dt);
        if (last > first && *bytes + n > d->bucket_bytes)
            break;
        *bytes += n;
        last++;
    }
    return last;
}

/* The staging every bucket of `bytes` at most needs: its gradients and the status value (a
 * larger one once the last averages have left the old: a failure of that copy is this call's). */
static clt_status stage_buckets(clt_dist *d, const char *fn, size_t bytes)
{
    bytes += sizeof(double);
    if (bytes > clt_host_buffer_size(d->pinned)) {
        clt_status st = upload_done(d);
        if (st != CLT_OK)
            return st;
    }
    return staging(d, fn, bytes) ? CLT_OK : clt_last_status();
}

/* The last bucket's averages out of the staging, after this bucket's read into it (queued after
 * them: finished, unless the read failed before it was queued); a failure of that copy is
 * carried like one setting them. */
static void settle(clt_dist *d, carried *pending)
{
    clt_status st = upload_done(d);
    if (st != CLT_OK && pending->st == CLT_OK)
        carry(pending, st);
}

/* The parameters of `all` that require grad, into `out` (in order, or last first), each f32 or
 * f64 (CLT_ERR_DTYPE otherwise). out may be all, when in order. */
static clt_status trainable(const char *fn, const tensors *all, tensors *out, bool last_first)
{
    int kept = 0;
    clt_status st = CLT_OK;
    for (int k = 0; k < all->count && st == CLT_OK; k++) {
        clt_tensor *t = all->items[last_first ? all->count - 1 - k : k];
        clt_dtype dt = clt_tensor_dtype(t);
        if (!clt_tensor_requires_grad(t))
            continue;
        if (dt != CLT_F32 && dt != CLT_F64)
            st = clt_set_error(CLT_ERR_DTYPE, fn, "a parameter is %s: gradients are averaged in "
                               "f32 or f64", clt_dtype_name(dt));
        out->items[kept++] = t;
    }
    out->count = kept;
    return st;
}

/* Averages the gradients of ts->items[first ... last-1] (one dtype) in one all-reduce (the
 * staging already big enough: stage_buckets). A failure to set the averages is carried in
 * *pending to the next all-reduce or the final agreement. */
static clt_status average_bucket(clt_dist *d, const char *fn, tensors *ts, int first, int last,
                                 size_t bytes, carried *pending)
{
    clt_dtype dtype = clt_tensor_dtype(ts->items[first]);
    size_t esize = clt_dtype_size(dtype);
    unsigned char *buf = staging(d, fn, bytes + esize); /* no allocation: never NULL */
    clt_tensor **grads = d->grads;
    for (int i = first; i < last; i++)
        grads[i - first] = clt_tensor_grad(ts->items[i]); /* (none: zeros) */
    clt_status st = bucket_to_host(d, grads, ts->items + first, last - first, dtype, buf, bytes);
    settle(d, pending);
    for (int i = first; i < last; i++)
        clt_tensor_release(grads[i - first]);
    if ((st = mean_over_ranks(d, fn, buf, bytes / esize, dtype, st, pending)) != CLT_OK)
        return st;
    clt_tensor **avgs = d->parts; /* each gradient replaced by its average */
    clt_status made = averages_from_host(d, dtype, buf, bytes, ts->items + first, last - first,
                                         avgs);
    st = made;
    for (int i = first; i < last && made == CLT_OK; i++) {
        if (st == CLT_OK)
            st = clt_tensor_set_grad(ts->items[i], avgs[i - first]);
        clt_tensor_release(avgs[i - first]);
    }
    carry(pending, st);
    return CLT_OK;
}

clt_status clt_dist_average_gradients(clt_dist *d, clt_module *m)
{
    static const char *const fn = "clt_dist_average_gradients";
    tensors *ts = malloc(sizeof *ts);
    clt_status st;
    if (!d) {
        free(ts);
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "the handle is NULL");
    }
    st = ts ? collect(fn, m, false, false, ts) : clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    if (st == CLT_OK)
        st = trainable(fn, ts, ts, false);
    size_t most = 0, bytes;
    for (int first = 0; st == CLT_OK && first < ts->count;) {
        first = bucket_end(d, ts, first, &bytes);
        most = bytes > most ? bytes : most;
    }
    if (st == CLT_OK)
        st = stage_buckets(d, fn, most);
    if ((st = agree(d->comm, d->rank, fn, st)) != CLT_OK) {
        free(ts);
        return st;
    }
    carried pending = {CLT_OK, ""};
    for (int first = 0, last; first < ts->count && st == CLT_OK; first = last) {
        last = bucket_end(d, ts, first, &bytes);
        st = average_bucket(d, fn, ts, first, last, bytes, &pending);
    }
    if (st == CLT_OK) /* the last bucket's averages set everywhere */
        st = agree(d->comm, d->rank, fn, carried_take(&pending, fn));
    free(ts);
    return st;
}

/* ---- the backward pass with overlapped averaging ------------------------------------------------ */

typedef struct bucket {
    int first, last; /* pass->ts->items[first ... last-1] */
    size_t bytes;
    int missing;     /* parameters whose gradient has not come */
} bucket;

typedef struct pass {
    clt_dist *d;
    tensors *ts;           /* the parameters that require grad, in reverse registration order */
    clt_tensor ***slot;    /* where each one's gradient from this pass lies; NULL: none */
    clt_tensor **late;     /* averages for parameters this pass gave no gradient */
    int *bucket_of;        /* parameter -> bucket */
    bucket *buckets;
    int nbuckets;
    bool threaded;
    /* guarded by lock */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int complete;          /* buckets 0 ... complete-1 may be averaged */
    bool ending;           /* the pass is over: every bucket may go, missing gradients as 0 */
    bool finished;         /* finish ran (the pass may end before its hooks begin) */
    clt_status failed;     /* this rank's pass failed: its buckets carry the failure */
    char cause[MESSAGE];   /* its message (the failing thread's last error) */
    /* the communication's result (the thread's, or this thread's) */
    int averaged;          /* buckets done */
    carried pending;       /* setting a bucket's averages failed here, not yet agreed on */
    clt_status st;
    char error[MESSAGE];
    pthread_t thread;
} pass;

static const char *const fn_backward = "clt_dist_backward";

/* Averages bucket b: its gradients to the host (zeros for missing ones), all-reduced with this
 * rank's status (mine, or a failure setting the last bucket's averages), and back as new
 * gradients in the slots (or kept in late[] for missing ones); a failure setting them is
 * carried to the next all-reduce or the final agreement (communicate). Collective. */
static clt_status average_slots(pass *p, int b, clt_status mine)
{
    const bucket *bk = &p->buckets[b];
    clt_dtype dtype = clt_tensor_dtype(p->ts->items[bk->first]);
    size_t esize = clt_dtype_size(dtype), count = bk->bytes / esize;
    unsigned char *buf = staging(p->d, fn_backward, bk->bytes + esize); /* never NULL: sized */
    clt_tensor **grads = p->d->grads;
    for (int i = bk->first; i < bk->last; i++)
        grads[i - bk->first] = p->slot[i] ? *p->slot[i] : NULL; /* (none: zeros) */
    clt_status st = mine != CLT_OK ? mine
                                   : bucket_to_host(p->d, grads, p->ts->items + bk->first,
                                                    bk->last - bk->first, dtype, buf, bk->bytes);
    settle(p->d, &p->pending);
    if ((st = mean_over_ranks(p->d, fn_backward, buf, count, dtype, st, &p->pending)) != CLT_OK)
        return st;
    clt_tensor **avgs = p->d->parts;
    st = averages_from_host(p->d, dtype, buf, bk->bytes, p->ts->items + bk->first,
                            bk->last - bk->first, avgs);
    for (int i = bk->first; i < bk->last && st == CLT_OK; i++) {
        clt_tensor *avg = avgs[i - bk->first];
        if (p->slot[i]) { /* the pass's gradient, replaced by the average */
            clt_tensor_release(*p->slot[i]);
            *p->slot[i] = avg;
        } else { /* applied when the pass ends */
            p->late[i] = avg;
        }
    }
    carry(&p->pending, st);
    return CLT_OK;
}

/* Averages every bucket not yet done, in order, as it becomes ready, until all are done or one
 * failed. */
static void communicate(pass *p)
{
    for (int b = p->averaged; b < p->nbuckets; b++) {
        clt_status mine;
        pthread_mutex_lock(&p->lock);
        while (b >= p->complete && !p->ending)
            pthread_cond_wait(&p->cond, &p->lock);
        mine = p->failed;
        pthread_mutex_unlock(&p->lock);
        if (mine != CLT_OK) /* this thread's last error says what failed on the pass's thread */
            clt_set_error(mine, fn_backward, "%s", p->cause);
        clt_status st = average_slots(p, b, mine);
        if (st != CLT_OK) {
            p->st = st;
            snprintf(p->error, sizeof p->error, "%s", clt_last_error());
            return;
        }
        p->averaged = b + 1;
    }
    /* the last bucket's averages set everywhere */
    clt_status st =
        agree(p->d->comm, p->d->rank, fn_backward, carried_take(&p->pending, fn_backward));
    if (st != CLT_OK) {
        p->st = st;
        snprintf(p->error, sizeof p->error, "%s", clt_last_error());
    }
}

static void *comm_thread(void *arg)
{
    communicate(arg);
    return NULL;
}

/* The hook: a parameter's gradient is whole; buckets whose every gradient came may go. */
static void leaf_ready(void *user, clt_tensor *leaf, clt_tensor **grad)
{
    pass *p = user;
    int i = 0;
    while (i < p->ts->count && p->ts->items[i] != leaf)
        i++;
    if (i == p->ts->count)
        return; /* not one of the module's parameters */
    pthread_mutex_lock(&p->lock);
    p->slot[i] = grad;
    int complete = p->complete;
    if (--p->buckets[p->bucket_of[i]].missing == 0)
        while (p->complete < p->nbuckets && p->buckets[p->complete].missing == 0)
            p->complete++;
    if (p->complete != complete) /* (woken for nothing, the thread would take turns with this one) */
        pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    if (!p->threaded) /* MPI only on this thread: the buckets now complete, here */
        for (int b = p->averaged; b < p->complete && p->st == CLT_OK; b++) {
            if ((p->st = average_slots(p, b, CLT_OK)) != CLT_OK)
                snprintf(p->error, sizeof p->error, "%s", clt_last_error());
            else
                p->averaged = b + 1;
        }
}

/* The hook: the pass is over; the remaining buckets go (missing gradients as 0), then the
 * averages of parameters without a gradient here are added into theirs. */
static clt_status finish(void *user, clt_status status)
{
    pass *p = user;
    p->finished = true;
    pthread_mutex_lock(&p->lock);
    p->ending = true;
    p->failed = status;
    if (status != CLT_OK)
        snprintf(p->cause, sizeof p->cause, "%s", clt_last_error());
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    if (p->threaded)
        pthread_join(p->thread, NULL);
    else if (p->st == CLT_OK)
        communicate(p);
    if (p->st != CLT_OK)
        return status != CLT_OK ? status : clt_set_error(p->st, fn_backward, "%s", p->error);
    if (status != CLT_OK)
        return status;
    clt_status st = CLT_OK;
    for (int i = 0; i < p->ts->count && st == CLT_OK; i++) {
        clt_tensor *avg = p->late[i];
        if (!avg)
            continue;
        clt_tensor *old = clt_tensor_grad(p->ts->items[i]);
        clt_tensor *sum = old ? clt_add(old, avg) : clt_tensor_retain(avg);
        st = sum ? clt_tensor_set_grad(p->ts->items[i], sum) : clt_last_status();
        clt_tensor_release(sum);
        clt_tensor_release(old);
    }
    return st;
}

clt_status clt_dist_backward(clt_dist *d, clt_module *m, clt_tensor *loss)
{
    pass *p = d ? calloc(1, sizeof *p) : NULL;
    tensors *all = p ? malloc(sizeof *all) : NULL;
    clt_status st;
    int provided = MPI_THREAD_SINGLE, kept = 0;
    if (!d)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn_backward, "the handle is NULL");
    st = all ? collect(fn_backward, m, false, false, all)
             : clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn_backward, "out of host memory");
    if (st == CLT_OK) { /* the parameters that require grad, last registered first */
        p->ts = malloc(sizeof *p->ts);
        st = p->ts ? trainable(fn_backward, all, p->ts, true)
                   : clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn_backward, "out of host memory");
        kept = p->ts ? p->ts->count : 0;
    }
    if (st == CLT_OK) { /* buckets: runs of one dtype up to bucket_bytes */
        p->bucket_of = calloc((size_t)kept + 1, sizeof *p->bucket_of);
        p->buckets = calloc((size_t)kept + 1, sizeof *p->buckets);
        p->slot = calloc((size_t)kept + 1, sizeof *p->slot);
        p->late = calloc((size_t)kept + 1, sizeof *p->late);
        if (!p->bucket_of || !p->buckets || !p->slot || !p->late)
            st = clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn_backward, "out of host memory");
        size_t most = 0;
        for (int first = 0; st == CLT_OK && first < kept; p->nbuckets++) {
            bucket *bk = &p->buckets[p->nbuckets];
            bk->first = first;
            bk->last = bucket_end(d, p->ts, first, &bk->bytes);
            bk->missing = bk->last - first;
            for (; first < bk->last; first++)
                p->bucket_of[first] = p->nbuckets;
            most = bk->bytes > most ? bk->bytes : most;
        }
        if (st == CLT_OK)
            st = stage_buckets(d, fn_backward, most);
    }
    if ((st = agree(d->comm, d->rank, fn_backward, st)) == CLT_OK) {
        p->d = d;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        MPI_Query_thread(&provided);
        /* one bucket completes as the pass ends: nothing to overlap, no thread to start */
        p->threaded = p->nbuckets > 1 && provided >= MPI_THREAD_SERIALIZED &&
                      pthread_create(&p->thread, NULL, comm_thread, p) == 0;
        clt_backward_hooks hooks = {.leaf_ready = leaf_ready, .finish = finish, .user = p};
        st = clt_backward_ex(loss, NULL, false, &hooks);
        if (!p->finished) /* refused before its walk: the other ranks still hear of it */
            finish(p, st);
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        for (int i = 0; i < kept; i++)
            clt_tensor_release(p->late[i]);
    }
    if (p) {
        free(p->ts);
        free(p->bucket_of);
        free(p->buckets);
        free(p->slot);
        free(p->late);
    }
    free(all);
    free(p);
    return st;
}
