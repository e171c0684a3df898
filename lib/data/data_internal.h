/* The dataset object shared by the datasets (lib/data/dataset.c, csv.c) and the loader
 * (lib/data/loader.c). */
#ifndef CLT_DATA_INTERNAL_H
#define CLT_DATA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "cltensor/data.h"

struct clt_dataset {
    atomic_int refs;
    int64_t length;
    int nfields;
    clt_field fields[CLT_DATA_MAX_FIELDS];
    size_t item_bytes[CLT_DATA_MAX_FIELDS]; /* one item of each field, in bytes */
    clt_dataset_get_fn get;
    void (*destroy)(void *user);
    void *user;
    pthread_mutex_t lock; /* held around every call of get */
};

/* d->get for one item, under the dataset's lock: a dataset's get never runs concurrently with
 * itself, whichever threads (loaders, clt_dataset_get) read it. */
static inline clt_status clt__dataset_read(clt_dataset *d, int64_t index, void *const *out)
{
    clt_status st;
    pthread_mutex_lock(&d->lock);
    st = d->get(d->user, index, out);
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* order[0..n-1] = 0..n-1, shuffled (Fisher-Yates) by a generator seeded from seed and stream
 * when shuffle is true: the same on every machine. */
void clt__data_order(int64_t *order, int64_t n, bool shuffle, uint64_t seed, uint64_t stream);

#endif
