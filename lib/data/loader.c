/* The data loader: batches of a dataset, in order or shuffled by a seeded generator, prepared
 * ahead by one background thread into a ring of slots. For an OpenCL device each slot owns
 * page-locked staging memory: the thread writes the items there and queues the copies on the
 * device's copy queue; the caller's thread orders its compute queue after a batch's copies when
 * it takes the batch. For cpu the thread writes the items straight into the batch tensors. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cltensor/data.h"
#include "core/core.h"
#include "data/data_internal.h"
#include "device/pinned.h"
#include "device/registry.h"
#include "tensor/tensor_internal.h"

static const char *const fn_next = "clt_loader_next";

/* One batch being prepared or waiting to be taken. */
typedef struct slot {
    bool ready;    /* filled; waits for the caller */
    int64_t batch; /* which batch of the epoch */
    clt_tensor *fields[CLT_DATA_MAX_FIELDS];
    void *events[CLT_DATA_MAX_FIELDS];  /* its copies (OpenCL), waited for before a refill */
    void *staging[CLT_DATA_MAX_FIELDS]; /* page-locked staging (handle and address), made once */
    void *staging_ptr[CLT_DATA_MAX_FIELDS];
    clt_status status; /* of the preparation; the error's text below */
    char error[600];
} slot;

struct clt_loader {
    clt_dataset *data;
    clt_device *dev;
    int64_t batch_size, batches;
    int64_t max_items;   /* in one batch: the batch size, or the length when that is smaller */
    int64_t length;      /* items an epoch: the dataset's, or this replica's share of it */
    int replicas, rank;  /* the distributed shard this loader gives */
    int64_t *full;       /* with replicas > 1: the whole epoch's order, dealt out into order */
    bool shuffle, drop_last, copies; /* copies: the device is not the host */
    uint64_t seed;
    int depth;
    slot *slots;
    int64_t *order; /* this epoch's items */
    /* guarded by lock */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    int64_t epoch;           /* epochs begun */
    bool active;             /* an epoch is under way */
    int64_t produce, consume; /* the next batch the thread prepares / the caller takes */
    bool busy;               /* the thread is preparing a slot */
    bool stop;
};

/* ---- the order of an epoch ------------------------------------------------------------------- */

static void make_order(clt_loader *l)
{
    int64_t n = l->data->length;
    if (l->replicas == 1) {
        clt__data_order(l->order, n, l->shuffle, l->seed, (uint64_t)l->epoch + 1);
        return;
    }
    /* every replica makes the same whole order; padded by wrapping round to length * replicas,
     * position k goes to replica k % replicas */
    clt__data_order(l->full, n, l->shuffle, l->seed, (uint64_t)l->epoch + 1);
    for (int64_t i = 0; i < l->length; i++)
        l->order[i] = l->full[(i * l->replicas + l->rank) % n];
}

/* ---- preparing a batch (the loader's thread) ------------------------------------------------- */

static void slot_failed(slot *s, int64_t item)
{
    s->status = clt_last_status();
    if (item >= 0)
        snprintf(s->error, sizeof s->error, "item %lld: %s", (long long)item, clt_last_error());
    else
        snprintf(s->error, sizeof s->error, "%s", clt_last_error());
}

/* Waits for the slot's previous copies, which read its staging memory. */
static void wait_copies(clt_loader *l, slot *s)
{
    for (int f = 0; f < l->data->nfields; f++) {
        if (s->events[f]) {
            l->dev->backend->event_wait(fn_next, s->events[f]);
            l->dev->backend->event_release(s->events[f]);
            s->events[f] = NULL;
        }
    }
}

/* The batch's shape for field f: (n, field shape...). */
static void batch_shape(const clt_field *field, int64_t n, int64_t *shape)
{
    shape[0] = n;
    for (int d = 0; d < field->ndim; d++)
        shape[d + 1] = field->shape[d];
}

static void release_fields(clt_loader *l, slot *s)
{
    for (int f = 0; f < l->data->nfields; f++) {
        clt_tensor_release(s->fields[f]);
        s->fields[f] = NULL;
    }
}

/* Where item i of the batch goes, field by field: the staging memory, or on cpu the tensors. */
static clt_status destinations(clt_loader *l, slot *s, int64_t n, char **base)
{
    clt_dataset *d = l->data;
    for (int f = 0; f < d->nfields; f++) {
        int64_t shape[CLT_MAX_DIMS];
        size_t bytes = d->item_bytes[f] * (size_t)l->max_items; /* checked by clt_loader_new */
        batch_shape(&d->fields[f], n, shape);
        if (!l->copies) {
            s->fields[f] = clt__tensor_new(fn_next, l->dev, d->fields[f].dtype, d->fields[f].ndim + 1, shape);
            if (!s->fields[f])
                return clt_last_status();
            base[f] = s->fields[f]->storage->buf;
        } else {
            if (!s->staging[f] && bytes &&
                clt__pinned_alloc(fn_next, l->dev, bytes, &s->staging[f], &s->staging_ptr[f]) != CLT_OK)
                return clt_last_status();
            base[f] = s->staging_ptr[f];
        }
    }
    return CLT_OK;
}

/* The batch's tensors on the device and their copies from the staging memory. */
static clt_status upload(clt_loader *l, slot *s, int64_t n)
{
    clt_dataset *d = l->data;
    for (int f = 0; f < d->nfields; f++) {
        int64_t shape[CLT_MAX_DIMS];
        batch_shape(&d->fields[f], n, shape);
        /* fresh memory: the copy queue must not write into a buffer the compute queue may
         * still be reading for an earlier tensor */
        s->fields[f] = clt__tensor_new_ex(fn_next, l->dev, d->fields[f].dtype,
                                          d->fields[f].ndim + 1, shape, true);
        if (!s->fields[f])
            return clt_last_status();
    }
    for (int f = 0; f < d->nfields; f++) {
        clt_tensor *t = s->fields[f];
        if (!t->storage->nbytes)
            continue;
        if (clt__pinned_upload(fn_next, l->dev, t->storage->buf, s->staging_ptr[f],
                               t->storage->nbytes, &s->events[f]) != CLT_OK)
            return clt_last_status();
        if (t->dtype == CLT_I64) /* labels: their range, so that checks need no read back */
            clt__storage_note_range(t->storage, s->staging_ptr[f], t->numel);
    }
    return CLT_OK;
}

static void prepare(clt_loader *l, slot *s, int64_t b)
{
    clt_dataset *d = l->data;
    int64_t first = b * l->batch_size, n = l->length - first;
    char *base[CLT_DATA_MAX_FIELDS];
    void *out[CLT_DATA_MAX_FIELDS];
    n = n < l->batch_size ? n : l->batch_size;
    wait_copies(l, s);
    s->status = CLT_OK;
    if (destinations(l, s, n, base) != CLT_OK) {
        slot_failed(s, -1);
        release_fields(l, s);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t item = l->order[first + i];
        for (int f = 0; f < d->nfields; f++)
            out[f] = base[f] + (size_t)i * d->item_bytes[f];
        clt_clear_error();
        clt_status st = clt__dataset_read(d, item, out);
        if (st != CLT_OK) {
            if (clt_last_status() == CLT_OK) /* the dataset gave no message */
                clt__error(st, "the dataset", "failed (%s)", clt_status_name(st));
            slot_failed(s, item);
            s->status = st;
            release_fields(l, s);
            return;
        }
    }
    if (l->copies && upload(l, s, n) != CLT_OK) {
        slot_failed(s, -1);
        wait_copies(l, s);
        release_fields(l, s);
    }
}

static void *run(void *arg)
{
    clt_loader *l = arg;
    pthread_mutex_lock(&l->lock);
    for (;;) {
        while (!l->stop && !(l->active && l->produce < l->batches && l->produce - l->consume < l->depth))
            pthread_cond_wait(&l->cond, &l->lock);
        if (l->stop)
            break;
        int64_t b = l->produce++;
        slot *s = &l->slots[b % l->depth];
        l->busy = true;
        pthread_mutex_unlock(&l->lock);
        prepare(l, s, b);
        pthread_mutex_lock(&l->lock);
        s->batch = b;
        s->ready = true;
        l->busy = false;
        pthread_cond_broadcast(&l->cond);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* ---- the caller's side ------------------------------------------------------------------------- */

/* Under the lock: waits until the thread is idle and drops the batches not taken. */
static void drain(clt_loader *l)
{
    l->active = false;
    pthread_cond_broadcast(&l->cond);
    while (l->busy)
        pthread_cond_wait(&l->cond, &l->lock);
    for (int k = 0; k < l->depth; k++) {
        if (l->slots[k].ready)
            release_fields(l, &l->slots[k]);
        l->slots[k].ready = false;
    }
    l->produce = l->consume = 0;
}

/* Frees a loader whose thread is not running (never started, or joined). */
static void destroy(clt_loader *l)
{
    for (int k = 0; l->slots && k < l->depth; k++) {
        slot *s = &l->slots[k];
        wait_copies(l, s);
        release_fields(l, s);
        for (int f = 0; f < l->data->nfields; f++)
            if (s->staging[f])
                clt__pinned_free(l->dev, s->staging[f], s->staging_ptr[f]);
    }
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->lock);
    clt__free(l->order);
    clt__free(l->full);
    clt__free(l->slots);
    clt_dataset_release(l->data);
    clt__free(l);
}

/* The items of one replica's share of an epoch: the length padded to a multiple of the
 * replicas, divided by them. */
static int64_t shard_length(int64_t length, int replicas)
{
    return length / replicas + (length % replicas != 0);
}

/* Whether the memory a loader over d needs has a size: the epoch's order, and for each field
 * the tensor and staging memory of its largest batch, of `items` items. */
static clt_status check_sizes(const char *fn, const clt_dataset *d, int64_t items)
{
    int64_t numel, shape[CLT_MAX_DIMS];
    size_t bytes;
    if (!clt__mul_size((size_t)d->length, sizeof(int64_t), &bytes))
        return clt__error(CLT_ERR_OUT_OF_MEMORY, fn, "the order of %lld items needs more bytes "
                          "than memory can hold", (long long)d->length);
    for (int f = 0; f < d->nfields; f++) {
        batch_shape(&d->fields[f], items, shape);
        if (!clt__shape_numel(d->fields[f].ndim + 1, shape, &numel) ||
            !clt__mul_size(d->item_bytes[f], (size_t)items, &bytes)) {
            char text[256];
            clt__format_shape(text, sizeof text, d->fields[f].ndim + 1, shape);
            return clt__error(CLT_ERR_SHAPE, fn, "a batch of field %d would have shape %s: more "
                              "elements than memory can hold", f, text);
        }
    }
    return CLT_OK;
}

clt_loader_options clt_loader_options_default(void)
{
    return (clt_loader_options){.batch_size = 1, .prefetch = 2, .num_replicas = 1};
}

clt_loader *clt_loader_new(clt_dataset *d, const clt_loader_options *options)
{
    static const char *const fn = "clt_loader_new";
    clt_loader_options o = options ? *options : (clt_loader_options){0};
    clt_loader *l;
    if (!d) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "the dataset is NULL");
        return NULL;
    }
    o.batch_size = o.batch_size ? o.batch_size : 1;
    o.prefetch = o.prefetch ? o.prefetch : 2;
    o.device = o.device ? o.device : clt_device_cpu();
    if (o.batch_size < 0 || o.prefetch < 0 || o.prefetch > 64) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "batch_size %lld must be positive and prefetch %d in 1..64",
                   (long long)o.batch_size, o.prefetch);
        return NULL;
    }
    o.num_replicas = o.num_replicas ? o.num_replicas : 1;
    if (o.num_replicas < 0 || o.rank < 0 || o.rank >= o.num_replicas) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "rank %d must lie in 0..%d (num_replicas %d)", o.rank, o.num_replicas - 1,
                   o.num_replicas);
        return NULL;
    }
    if (clt__device_check(fn, o.device) != CLT_OK)
        return NULL;
    for (int f = 0; f < d->nfields; f++)
        if (clt__device_dtype_check(fn, o.device, d->fields[f].dtype) != CLT_OK)
            return NULL;
    int64_t length = shard_length(d->length, o.num_replicas);
    int64_t items = length < o.batch_size ? length : o.batch_size;
    if (check_sizes(fn, d, items) != CLT_OK)
        return NULL;
    l = clt__alloc_zeroed(fn, sizeof *l);
    if (!l)
        return NULL;
    l->data = clt_dataset_retain(d);
    l->dev = o.device;
    l->copies = !clt__is_host(o.device);
    l->batch_size = o.batch_size;
    l->shuffle = o.shuffle;
    l->drop_last = o.drop_last;
    l->seed = o.seed;
    l->depth = o.prefetch;
    l->replicas = o.num_replicas;
    l->rank = o.rank;
    l->length = length;
    l->batches = l->length / o.batch_size + (!o.drop_last && l->length % o.batch_size != 0);
    l->max_items = items;
    l->slots = clt__alloc_zeroed(fn, (size_t)l->depth * sizeof *l->slots);
    l->order = l->slots ? clt__alloc(fn, (size_t)(l->length ? l->length : 1) * sizeof *l->order)
                        : NULL; /* the sizes of the order and the full order: checked above */
    l->full = l->order && l->replicas > 1
                  ? clt__alloc(fn, (size_t)(d->length ? d->length : 1) * sizeof *l->full)
                  : NULL;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
    if (!l->order || (l->replicas > 1 && !l->full)) {
        destroy(l);
        return NULL;
    }
    if (pthread_create(&l->thread, NULL, run, l) != 0) {
        clt__error(CLT_ERR_OUT_OF_MEMORY, fn, "cannot start the loader's thread");
        destroy(l);
        return NULL;
    }
    return l;
}

/* Under the lock: takes batch `consume` out of its slot, orders the device's queue after its
 * copies; the slot's status. */
static clt_status take(clt_loader *l, clt_tensor **batch, char *error, size_t size)
{
    slot *s = &l->slots[l->consume % l->depth];
    clt_status st;
    while (!(s->ready && s->batch == l->consume))
        pthread_cond_wait(&l->cond, &l->lock);
    st = s->status;
    for (int f = 0; st == CLT_OK && f < l->data->nfields; f++)
        if (s->events[f])
            st = l->dev->backend->queue_wait(fn_next, l->dev, s->events[f]);
    if (st == CLT_OK) {
        for (int f = 0; f < l->data->nfields; f++) {
            batch[f] = s->fields[f];
            s->fields[f] = NULL;
        }
    } else {
        snprintf(error, size, "%s", s->status != CLT_OK ? s->error : clt_last_error());
        release_fields(l, s);
    }
    s->ready = false;
    l->consume++;
    pthread_cond_broadcast(&l->cond);
    return st;
}

clt_status clt_loader_next(clt_loader *l, clt_tensor **batch)
{
    char error[sizeof((slot *)0)->error];
    clt_status st;
    if (!l || !batch)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn_next, "the loader or batch is NULL");
    pthread_mutex_lock(&l->lock);
    if (!l->active) { /* a new epoch */
        drain(l);
        make_order(l);
        l->epoch++;
        l->active = true;
        pthread_cond_broadcast(&l->cond);
    }
    if (l->consume == l->batches) {
        l->active = false;
        pthread_mutex_unlock(&l->lock);
        return CLT_END;
    }
    st = take(l, batch, error, sizeof error);
    pthread_mutex_unlock(&l->lock);
    if (st != CLT_OK)
        return clt__error(st, fn_next, "%s", error);
    return CLT_OK;
}

void clt_loader_restart(clt_loader *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    drain(l);
    pthread_mutex_unlock(&l->lock);
}

int64_t clt_loader_batches(const clt_loader *l)
{
    return l ? l->batches : 0;
}

int64_t clt_loader_epoch(const clt_loader *l)
{
    int64_t e;
    if (!l)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&l->lock);
    e = l->epoch;
    pthread_mutex_unlock((pthread_mutex_t *)&l->lock);
    return e;
}

void clt_loader_free(clt_loader *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    l->stop = true;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
    destroy(l);
}
