/* Datasets and the device-aware data loader, as PyTorch's torch.utils.data. A dataset is a
 * number of items, each made of the same fields (an image and its label, say), with a
 * function that writes item i into host buffers. The loader cuts a dataset into batches
 * (optionally shuffled by a seeded generator), collates each field into one contiguous
 * (batch, ...) tensor on a target device and prepares batches ahead on a background thread:
 * reading and collating happen in page-locked staging memory and the copies to an OpenCL device
 * run on the device's copy queue, ordered before the compute that uses them by events, so that
 * loading overlaps compute. On cpu the batches are written in place, without a copy.
 *
 *     clt_loader *loader = clt_loader_new(data, &(clt_loader_options){
 *         .batch_size = 64, .shuffle = true, .seed = 0, .device = device});
 *     clt_tensor *batch[2];
 *     clt_status st;
 *     while ((st = clt_loader_next(loader, batch)) == CLT_OK) {   // one epoch
 *         ... batch[0] (64, 64) f32 and batch[1] (64,) i64, on device ...
 *         clt_tensor_release(batch[0]), clt_tensor_release(batch[1]);
 *     }
 *     if (st != CLT_END) ... the error ...
 */
#ifndef CLTENSOR_DATA_H
#define CLTENSOR_DATA_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CLT_DATA_MAX_FIELDS 8

/* One field of every item: its dtype and shape (ndim 0 for a scalar such as a label). */
typedef struct clt_field {
    clt_dtype dtype;
    int ndim;
    int64_t shape[CLT_MAX_DIMS - 1];
} clt_field;

typedef struct clt_dataset clt_dataset;

/* Writes item `index` (0 <= index < length) of a user's dataset: field k's elements, row-major
 * in its dtype, into out[k]. It may run on a loader's thread, concurrently with the caller's
 * own work, but never concurrently with itself (the dataset holds a lock around it). CLT_OK, or
 * an error status (report the cause with clt_set_error: the loader hands it on with its
 * message). */
typedef clt_status (*clt_dataset_get_fn)(void *user, int64_t index, void *const *out);

/* A dataset of `length` items with nfields fields (1 .. CLT_DATA_MAX_FIELDS, copied) read by
 * get; destroy (optional) frees `user` with the dataset. One reference, or NULL with the last
 * error set (and destroy not called): CLT_ERR_INVALID_ARGUMENT for a negative length, nfields
 * out of range or NULL fields or get, CLT_ERR_DTYPE for a bad dtype, CLT_ERR_SHAPE for a bad
 * field shape. */
CLT_API clt_dataset *clt_dataset_new(int64_t length, int nfields, const clt_field *fields,
                                     clt_dataset_get_fn get, void (*destroy)(void *user),
                                     void *user);
/* torch.utils.data.TensorDataset: item i is row i of each of n (1 .. CLT_DATA_MAX_FIELDS) cpu
 * tensors, which must have the same first dimension (CLT_ERR_SHAPE otherwise, and for a 0-d
 * tensor; CLT_ERR_DEVICE_MISMATCH for a tensor on another device; CLT_ERR_INVALID_ARGUMENT for
 * NULL or n out of range). Contiguous tensors are retained and read when items are; others
 * are copied once, here. A new dataset with one reference, or NULL with the last error set. */
CLT_API clt_dataset *clt_dataset_tensors(clt_tensor *const *tensors, int n);

/* A CSV file of numbers without a header, gzip-compressed or plain (told apart by its first
 * bytes), one item a row: the features (every column but the label, as `dtype`, each value
 * multiplied by `scale`, shaped as `shape` when ndim > 0, else flat) and the label (an integer
 * column, i64, read exactly to all 64 bits when written as a decimal integer). */
typedef struct clt_csv_options {
    int label_column; /* 0-based; negative counts from the end (-1: the last) */
    clt_dtype dtype;  /* of the features; CLT_DTYPE_NONE (0) means f32 */
    double scale;     /* 0 means 1 */
    int ndim;         /* the features' shape, or 0 */
    int64_t shape[CLT_MAX_DIMS - 1];
} clt_csv_options;
/* The label in column 0, f32 features scaled by 1, flat. */
CLT_API clt_csv_options clt_csv_options_default(void);
/* Reads the whole file into a new dataset with one reference; options NULL means all zeros
 * (the label in column 0). Blank lines, CRLF line ends and blanks around values are accepted;
 * numbers are read with strtod (the C locale's decimal point unless the program changed
 * LC_NUMERIC). NULL with the last error set: CLT_ERR_IO for a file that cannot be read or is
 * not a regular file (a FIFO is refused, not waited on), naming it and why; CLT_ERR_INVALID_ARGUMENT for a NULL path, a label column out of range, or naming
 * the line and column of a value that is not a number, a row with another number of columns
 * than the first, a label that is not an integer, or a file without rows or with one column;
 * CLT_ERR_DTYPE for a bad dtype; CLT_ERR_SHAPE for a bad shape or one that does not hold the
 * features. */
CLT_API clt_dataset *clt_dataset_csv(const char *path, const clt_csv_options *options);

/* torch.utils.data.Subset: items indices[0], ..., indices[n - 1] (copied) of d (retained),
 * checked to lie in 0..length-1. A new dataset with one reference, or NULL with the last error
 * set (CLT_ERR_INVALID_ARGUMENT for NULL, n < 0 or an index out of range). */
CLT_API clt_dataset *clt_dataset_subset(clt_dataset *d, const int64_t *indices, int64_t n);
/* torch.utils.data.random_split into two: a permutation of d's items from seed, its first
 * `first_length` items as *first and the rest as *rest (both new, one reference each). All or
 * nothing: on failure *first and *rest are NULL, or untouched for an invalid argument (NULL,
 * first_length outside 0..length: CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_dataset_split(clt_dataset *d, int64_t first_length, uint64_t seed,
                                     clt_dataset **first, clt_dataset **rest);

/* Returns d with one more reference (NULL for NULL). */
CLT_API clt_dataset *clt_dataset_retain(clt_dataset *d);
/* Drops one reference; the last one calls destroy and frees the dataset. Accepts NULL. */
CLT_API void clt_dataset_release(clt_dataset *d);
/* The number of items and of fields (0 for NULL); field k's description, owned by the dataset
 * (NULL when out of range or for NULL). */
CLT_API int64_t clt_dataset_length(const clt_dataset *d);
CLT_API int clt_dataset_fields(const clt_dataset *d);
CLT_API const clt_field *clt_dataset_field(const clt_dataset *d, int k);
/* Item index as one new cpu tensor per field (fields[k] of shape field k's), for inspection.
 * When making or reading the item fails every fields[k] is NULL; an invalid argument (NULL, an
 * index out of range: CLT_ERR_INVALID_ARGUMENT) leaves fields untouched. */
CLT_API clt_status clt_dataset_get(clt_dataset *d, int64_t index, clt_tensor **fields);

typedef struct clt_loader clt_loader;

/* Start from clt_loader_options_default() (PyTorch's DataLoader defaults: batch_size 1, no
 * shuffle, seed 0, cpu, prefetch 2, one replica), or pass NULL for it; a batch_size, prefetch
 * or num_replicas of 0, which no loader has, also means its default. */
typedef struct clt_loader_options {
    int64_t batch_size;  /* 0 means 1 */
    bool shuffle;        /* a new order every epoch, from seed and the epoch's number */
    uint64_t seed;
    bool drop_last;      /* leave out a last batch smaller than batch_size */
    clt_device *device;  /* where batches go; NULL means cpu */
    int prefetch;        /* batches prepared ahead; 0 means 2 */
    /* Distributed training (PyTorch's DistributedSampler): every epoch's order, the same on
     * every process for the same seed, is padded by repeating its first items to a multiple of
     * num_replicas and dealt out, item k to replica k % num_replicas; this loader gives the
     * items of replica `rank`. Every replica has ceil(length / num_replicas) items an epoch, and
     * together they hold every item once (the padding twice). num_replicas 0 means 1. */
    int num_replicas;
    int rank;            /* 0 ... num_replicas - 1 */
} clt_loader_options;
/* PyTorch's DataLoader defaults (above). */
CLT_API clt_loader_options clt_loader_options_default(void);

/* A loader over d (retained), its background thread started; freed with clt_loader_free. NULL
 * with the last error set: CLT_ERR_INVALID_ARGUMENT for a NULL d, a negative batch_size,
 * prefetch outside 0..64, a negative num_replicas or a rank outside 0..num_replicas-1;
 * CLT_ERR_UNSUPPORTED for an f64 field on a device without fp64; CLT_ERR_SHAPE or
 * CLT_ERR_OUT_OF_MEMORY when a batch or the epoch's order would need more memory than a size
 * can count. Any batch_size works: batches and their staging memory are sized by the items
 * they hold (a batch_size beyond the dataset's length gives one batch of every item). */
CLT_API clt_loader *clt_loader_new(clt_dataset *d, const clt_loader_options *options);
/* The next batch of the current epoch: batch[k] receives a new tensor for field k, of shape
 * (n, field shape...) on the loader's device, and CLT_OK is returned. At the end of the epoch
 * CLT_END (nothing received); the call after that begins the next epoch. An error of the
 * dataset or of the copy is returned with its message, nothing received (the batch is lost;
 * the epoch goes on); CLT_ERR_INVALID_ARGUMENT for NULL.
 * Batches are ready for the device's queue: the work queued on it afterwards waits for their
 * copies, the calling thread does not. */
CLT_API clt_status clt_loader_next(clt_loader *l, clt_tensor **batch);
/* Abandons the rest of the epoch (PyTorch's breaking out of the loop): the next call to
 * clt_loader_next begins a new one. Does nothing for NULL. */
CLT_API void clt_loader_restart(clt_loader *l);
/* Batches in one epoch; epochs begun so far (0 for NULL). */
CLT_API int64_t clt_loader_batches(const clt_loader *l);
CLT_API int64_t clt_loader_epoch(const clt_loader *l);
/* Stops the thread, waits for copies in flight, frees everything and drops the dataset's
 * reference (batches handed out stay valid). Accepts NULL. */
CLT_API void clt_loader_free(clt_loader *l);

#ifdef __cplusplus
}
#endif

#endif
