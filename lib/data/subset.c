/* Subsets of a dataset (torch.utils.data.Subset, random_split) and the seeded item orders the
 * loader and the split share. */
#include <string.h>

#include "core/core.h"
#include "data/data_internal.h"

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void clt__data_order(int64_t *order, int64_t n, bool shuffle, uint64_t seed, uint64_t stream)
{
    uint64_t state = seed ^ (0xD1B54A32D192ED03ull * stream);
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    for (int64_t i = n - 1; shuffle && i > 0; i--) {
        int64_t j = (int64_t)(splitmix64(&state) % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

typedef struct subset {
    clt_dataset *parent;
    int64_t *indices;
} subset;

static clt_status subset_get(void *user, int64_t index, void *const *out)
{
    subset *s = user;
    return clt__dataset_read(s->parent, s->indices[index], out);
}

static void subset_destroy(void *user)
{
    subset *s = user;
    clt_dataset_release(s->parent);
    clt__free(s->indices);
    clt__free(s);
}

clt_dataset *clt_dataset_subset(clt_dataset *d, const int64_t *indices, int64_t n)
{
    static const char *const fn = "clt_dataset_subset";
    subset *s;
    clt_dataset *sub;
    if (!d || n < 0 || (n > 0 && !indices)) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "needs a dataset and %lld indices", (long long)n);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        if (indices[i] < 0 || indices[i] >= d->length) {
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                       "index %lld (element %lld) is outside the dataset's 0..%lld",
                       (long long)indices[i], (long long)i, (long long)d->length - 1);
            return NULL;
        }
    s = clt__alloc_zeroed(fn, sizeof *s);
    if (!s || !(s->indices = clt__alloc(fn, (size_t)(n ? n : 1) * sizeof *s->indices))) {
        clt__free(s);
        return NULL;
    }
    if (n)
        memcpy(s->indices, indices, (size_t)n * sizeof *indices);
    s->parent = clt_dataset_retain(d);
    sub = clt_dataset_new(n, d->nfields, d->fields, subset_get, subset_destroy, s);
    if (!sub) {
        subset_destroy(s);
        clt__rename_error(fn);
    }
    return sub;
}

clt_status clt_dataset_split(clt_dataset *d, int64_t first_length, uint64_t seed,
                             clt_dataset **first, clt_dataset **rest)
{
    static const char *const fn = "clt_dataset_split";
    int64_t *order;
    if (!d || !first || !rest || first_length < 0 || first_length > d->length)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "needs a dataset, two outputs and a first part of 0..%lld items (got %lld)",
                          d ? (long long)d->length : 0LL, (long long)first_length);
    *first = *rest = NULL;
    order = clt__alloc(fn, (size_t)(d->length ? d->length : 1) * sizeof *order);
    if (!order)
        return clt_last_status();
    clt__data_order(order, d->length, true, seed, 0);
    *first = clt_dataset_subset(d, order, first_length);
    *rest = *first ? clt_dataset_subset(d, order + first_length, d->length - first_length) : NULL;
    clt__free(order);
    if (!*rest) {
        clt_dataset_release(*first);
        *first = NULL;
        return clt__rename_error(fn);
    }
    return CLT_OK;
}
