/* The dataset object shared by the datasets (lib/data/dataset.c, csv.c) and the loader
 * (lib/data/loader.c). */
#ifndef CLT_DATA_INTERNAL_H
#define CLT_DATA_INTERNAL_H

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
};

/* order[0..n-1] = 0..n-1, shuffled (Fisher-Yates) by a generator seeded from seed and stream
 * when shuffle is true: the same on every machine. */
void clt__data_order(int64_t *order, int64_t n, bool shuffle, uint64_t seed, uint64_t stream);

#endif
