/* What the training sample takes from outside PyTorch in Python: a progress line (tqdm) and the
 * curves written as CSV and as an SVG line plot (matplotlib). Plain C; on an I/O failure each
 * function prints why to stderr and returns -1 (0 on success). */
#ifndef TRAIN_UTIL_H
#define TRAIN_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include <cltensor.h>

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
