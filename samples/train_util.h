/* What the training sample takes from outside PyTorch in Python: reading a gzip CSV (pandas),
 * a shuffled split and shuffled minibatches (torch.utils.data), a progress line (tqdm) and the
 * curves written as CSV and as an SVG line plot (matplotlib). Plain C and zlib; on an I/O failure
 * each function prints why to stderr and returns -1 (0 on success). */
#ifndef TRAIN_UTIL_H
#define TRAIN_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include <cltensor.h>

/* A labelled data set in host memory: row i is x[i * features ...] with class y[i]. */
typedef struct dataset {
    float *x;
    int64_t *y;
    int64_t n, features;
} dataset;

/* Reads a gzip-compressed CSV without header whose rows are `features` numbers then an integer
 * label in 0..classes-1; every feature is divided by `scale`. */
int dataset_read_csv_gz(const char *path, int64_t features, int64_t classes, double scale,
                        dataset *out);
/* Shuffles the rows with `seed` and puts the last n * test_fraction of them into *test, the
 * rest into *train (new copies; d is unchanged). */
int dataset_split(const dataset *d, double test_fraction, uint64_t seed, dataset *train,
                  dataset *test);
void dataset_free(dataset *d);
/* The whole set as a (n, features) f32 tensor and a (n,) i64 tensor on cpu; NULL (with the
 * library's last error set) on failure. */
clt_tensor *dataset_features(const dataset *d);
clt_tensor *dataset_labels(const dataset *d);

/* Shuffled minibatches of a data set: torch.utils.data.DataLoader(d, batch_size, shuffle=True)
 * with its own seeded generator. */
typedef struct loader {
    const dataset *data;
    int64_t batch_size, pos, *order;
    float *xbuf;
    int64_t *ybuf;
    uint64_t rng;
} loader;

int loader_init(loader *l, const dataset *d, int64_t batch_size, uint64_t seed);
void loader_free(loader *l);
/* Starts an epoch: a new order of the rows. */
void loader_shuffle(loader *l);
/* The next minibatch of the epoch as new cpu tensors x (n, features) f32 and y (n,) i64;
 * returns n, 0 when the epoch is over, -1 with the library's last error set on failure. */
int64_t loader_next(loader *l, clt_tensor **x, clt_tensor **y);

/* A monotonic clock in seconds. */
double now_s(void);

/* One progress line for the running epoch: with `tty` a bar redrawn in place ("\r"), finished
 * with a newline once accuracy >= 0 is given; without, one plain line per finished epoch. */
typedef struct progress {
    const char *model;
    int epoch, epochs;
    int64_t done, total;    /* samples of this epoch */
    double loss;            /* running mean */
    double samples_per_s;
    double accuracy;        /* held-out, in [0, 1]; < 0 while the epoch runs */
    double epoch_s;         /* the whole epoch with its evaluation, once finished */
} progress;

void progress_show(const progress *p, bool tty);

/* One curve per model over epochs 1..epochs. */
typedef struct curve {
    const char *model;
    const double *loss;      /* mean training loss per epoch */
    const double *accuracy;  /* held-out accuracy per epoch, in [0, 1] */
} curve;

/* CSV: a header row, then one row per epoch: epoch, then loss and accuracy of every curve. */
int write_curves_csv(const char *path, const curve *curves, int ncurves, int epochs);
/* A standalone SVG: two line plots side by side (training loss, held-out accuracy) against the
 * epoch, with axes, ticks, labels and a legend, one coloured line per curve. */
int write_curves_svg(const char *path, const curve *curves, int ncurves, int epochs);

#endif
