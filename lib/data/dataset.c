/* Datasets: the checked constructor over a user's get function, references, reading one item
 * into cpu tensors, and the tensor dataset (torch.utils.data.TensorDataset). */
#include <string.h>

#include "cltensor/autograd.h"
#include "core/core.h"
#include "data/data_internal.h"
#include "ops/ops_internal.h"
#include "tensor/tensor_internal.h"

/* The bytes of one item of field f, or an error naming fn, k and the field's values. */
static clt_status field_bytes(const char *fn, int k, const clt_field *f, size_t *bytes)
{
    char text[256];
    size_t n = clt_dtype_size(f->dtype);
    if (f->dtype <= CLT_DTYPE_NONE || f->dtype >= CLT_DTYPE_COUNT)
        return clt__error(CLT_ERR_DTYPE, fn, "field %d: dtype %d is invalid", k, (int)f->dtype);
    if (f->ndim < 0 || f->ndim > CLT_MAX_DIMS - 1)
        return clt__error(CLT_ERR_SHAPE, fn, "field %d: ndim %d is outside 0..%d", k, f->ndim,
                          CLT_MAX_DIMS - 1);
    clt__format_shape(text, sizeof text, f->ndim, f->shape);
    for (int i = 0; i < f->ndim; i++) {
        if (f->shape[i] < 0)
            return clt__error(CLT_ERR_SHAPE, fn,
                              "field %d: shape %s: size %lld of dimension %d is negative", k,
                              text, (long long)f->shape[i], i);
        if (!clt__mul_size(n, (size_t)f->shape[i], &n))
            return clt__error(CLT_ERR_SHAPE, fn, "field %d: shape %s of %s is too large", k,
                              text, clt_dtype_name(f->dtype));
    }
    *bytes = n;
    return CLT_OK;
}

clt_dataset *clt_dataset_new(int64_t length, int nfields, const clt_field *fields,
                             clt_dataset_get_fn get, void (*destroy)(void *user), void *user)
{
    static const char *const fn = "clt_dataset_new";
    size_t bytes[CLT_DATA_MAX_FIELDS];
    clt_dataset *d;

    if (length < 0) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "length %lld is negative", (long long)length);
        return NULL;
    }
    if (nfields < 1 || nfields > CLT_DATA_MAX_FIELDS) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "nfields %d is outside 1..%d", nfields,
                   CLT_DATA_MAX_FIELDS);
        return NULL;
    }
    if (!fields || !get) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s is NULL", fields ? "get" : "fields");
        return NULL;
    }
    for (int k = 0; k < nfields; k++)
        if (field_bytes(fn, k, &fields[k], &bytes[k]) != CLT_OK)
            return NULL;
    d = clt__alloc_zeroed(fn, sizeof *d);
    if (!d)
        return NULL;
    atomic_init(&d->refs, 1);
    pthread_mutex_init(&d->lock, NULL);
    d->length = length;
    d->nfields = nfields;
    memcpy(d->fields, fields, (size_t)nfields * sizeof *fields);
    memcpy(d->item_bytes, bytes, (size_t)nfields * sizeof *bytes);
    d->get = get;
    d->destroy = destroy;
    d->user = user;
    return d;
}

clt_dataset *clt_dataset_retain(clt_dataset *d)
{
    if (d)
        atomic_fetch_add(&d->refs, 1);
    return d;
}

void clt_dataset_release(clt_dataset *d)
{
    if (!d || atomic_fetch_sub(&d->refs, 1) != 1)
        return;
    if (d->destroy)
        d->destroy(d->user);
    pthread_mutex_destroy(&d->lock);
    clt__free(d);
}

int64_t clt_dataset_length(const clt_dataset *d)
{
    return d ? d->length : 0;
}

int clt_dataset_fields(const clt_dataset *d)
{
    return d ? d->nfields : 0;
}

const clt_field *clt_dataset_field(const clt_dataset *d, int k)
{
    return d && k >= 0 && k < d->nfields ? &d->fields[k] : NULL;
}

clt_status clt_dataset_get(clt_dataset *d, int64_t index, clt_tensor **fields)
{
    static const char *const fn = "clt_dataset_get";
    static max_align_t no_elements; /* where a field without elements is "written" */
    void *out[CLT_DATA_MAX_FIELDS];
    clt_status st;
    int made = 0;

    if (!d || !fields)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s is NULL", d ? "fields" : "dataset");
    if (index < 0 || index >= d->length)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "index %lld is out of range for a dataset of %lld items",
                          (long long)index, (long long)d->length);
    for (; made < d->nfields; made++) {
        const clt_field *f = &d->fields[made];
        fields[made] = clt__tensor_new(fn, clt_device_cpu(), f->dtype, f->ndim, f->shape);
        if (!fields[made]) {
            st = clt_last_status();
            goto fail;
        }
        out[made] = d->item_bytes[made] ? clt__host_ptr(fields[made]) : (void *)&no_elements;
    }
    st = clt__dataset_read(d, index, out);
    if (st == CLT_OK)
        return CLT_OK;
    if (clt_last_status() != st) /* the get function reported no cause */
        clt__error(st, fn, "the dataset failed to read item %lld (%s) and gave no reason",
                   (long long)index, clt_status_name(st));
fail:
    while (made > 0) {
        made--;
        clt_tensor_release(fields[made]);
        fields[made] = NULL;
    }
    return st;
}

/* ---- tensor dataset ----------------------------------------------------------------------- */

typedef struct tensor_data {
    int n;
    clt_tensor *tensors[CLT_DATA_MAX_FIELDS]; /* contiguous cpu tensors */
    size_t row_bytes[CLT_DATA_MAX_FIELDS];
} tensor_data;

static void tensor_data_free(void *user)
{
    tensor_data *td = user;
    for (int k = 0; k < td->n; k++)
        clt_tensor_release(td->tensors[k]);
    clt__free(td);
}

static clt_status tensor_data_get(void *user, int64_t index, void *const *out)
{
    const tensor_data *td = user;
    for (int k = 0; k < td->n; k++) {
        clt_tensor *t = td->tensors[k];
        if (!td->row_bytes[k])
            continue;
        clt_status st = clt__storage_sync("clt_dataset_tensors", t->storage);
        if (st != CLT_OK)
            return st;
        memcpy(out[k], (const char *)clt__host_ptr(t) + (size_t)index * td->row_bytes[k],
               td->row_bytes[k]);
    }
    return CLT_OK;
}

/* Checks tensor k against the first; CLT_OK or the error naming fn. */
static clt_status check_tensor(const char *fn, clt_tensor *const *tensors, int k)
{
    const clt_tensor *t = tensors[k];
    char first[256], shape[256];
    if (!t)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "tensor %d is NULL", k);
    if (!clt__is_host(t->storage->device))
        return clt__error(CLT_ERR_DEVICE_MISMATCH, fn,
                          "tensor %d is on %s: the dataset reads cpu tensors (the loader moves "
                          "the batches to the device)",
                          k, t->storage->device->name);
    clt__format_shape(shape, sizeof shape, t->ndim, t->shape);
    if (t->ndim == 0)
        return clt__error(CLT_ERR_SHAPE, fn,
                          "tensor %d is 0-d: every tensor needs a first dimension to index", k);
    if (t->shape[0] != tensors[0]->shape[0]) {
        clt__format_shape(first, sizeof first, tensors[0]->ndim, tensors[0]->shape);
        return clt__error(CLT_ERR_SHAPE, fn,
                          "tensor %d of shape %s has %lld rows, tensor 0 of shape %s has %lld", k,
                          shape, (long long)t->shape[0], first, (long long)tensors[0]->shape[0]);
    }
    return CLT_OK;
}

clt_dataset *clt_dataset_tensors(clt_tensor *const *tensors, int n)
{
    static const char *const fn = "clt_dataset_tensors";
    clt_field fields[CLT_DATA_MAX_FIELDS];
    tensor_data *td;
    clt_dataset *d;

    if (n < 1 || n > CLT_DATA_MAX_FIELDS) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "n %d is outside 1..%d", n, CLT_DATA_MAX_FIELDS);
        return NULL;
    }
    if (!tensors) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "tensors is NULL");
        return NULL;
    }
    for (int k = 0; k < n; k++)
        if (check_tensor(fn, tensors, k) != CLT_OK)
            return NULL;
    td = clt__alloc_zeroed(fn, sizeof *td);
    if (!td)
        return NULL;
    bool grad = clt_grad_set_enabled(false); /* the copies are data, not part of a graph */
    for (; td->n < n; td->n++) {
        clt_tensor *t = clt__contiguous(fn, tensors[td->n]);
        if (!t)
            break;
        td->tensors[td->n] = t;
        fields[td->n] = (clt_field){.dtype = t->dtype, .ndim = t->ndim - 1};
        memcpy(fields[td->n].shape, t->shape + 1, (size_t)(t->ndim - 1) * sizeof *t->shape);
        td->row_bytes[td->n] = t->shape[0] ? t->numel / (size_t)t->shape[0] : 0;
        td->row_bytes[td->n] *= clt_dtype_size(t->dtype);
    }
    clt_grad_set_enabled(grad);
    d = td->n == n ? clt_dataset_new(tensors[0]->shape[0], n, fields, tensor_data_get,
                                     tensor_data_free, td)
                   : NULL;
    if (!d) {
        clt__rename_error(fn);
        tensor_data_free(td);
    }
    return d;
}
