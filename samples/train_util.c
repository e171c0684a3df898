/* The training sample's helpers outside the library: the gzip CSV reader, the split and the
 * minibatch loader, the progress line and the CSV and SVG writers (see train_util.h). */
#include "train_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zlib.h>

/* ---- random order ------------------------------------------------------------------------- */

/* SplitMix64: a small seeded generator for shuffling on the host. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Fisher-Yates shuffle of v[0..n-1]. */
static void shuffle(int64_t *v, int64_t n, uint64_t *state)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(next_random(state) % (uint64_t)(i + 1));
        int64_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* ---- data set ------------------------------------------------------------------------------ */

static int grow(dataset *d, int64_t *capacity)
{
    int64_t cap = *capacity ? 2 * *capacity : 1024;
    float *x = realloc(d->x, (size_t)(cap * d->features) * sizeof *x);
    if (x)
        d->x = x;
    int64_t *y = realloc(d->y, (size_t)cap * sizeof *y);
    if (y)
        d->y = y;
    if (!x || !y) {
        fprintf(stderr, "out of memory reading the data set\n");
        return -1;
    }
    *capacity = cap;
    return 0;
}

/* Parses "v1,...,vF,label" into row i of d; 0 on success. */
static int parse_row(const char *line, int64_t classes, double scale, dataset *d, int64_t i)
{
    const char *p = line;
    for (int64_t k = 0; k <= d->features; k++) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || (k < d->features ? *end != ',' : (*end && !strchr("\r\n", *end))))
            return -1;
        if (k < d->features)
            d->x[i * d->features + k] = (float)(v / scale);
        else if (v != floor(v) || v < 0 || v >= (double)classes)
            return -1;
        else
            d->y[i] = (int64_t)v;
        p = end + 1;
    }
    return 0;
}

int dataset_read_csv_gz(const char *path, int64_t features, int64_t classes, double scale,
                        dataset *out)
{
    dataset d = {.features = features};
    int64_t capacity = 0;
    char line[4096];
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s: %s\n", path, errno ? strerror(errno) : "out of memory");
        return -1;
    }
    while (gzgets(f, line, sizeof line)) {
        if (line[0] == '\n' || line[0] == '\r')
            continue;
        if (d.n == capacity && grow(&d, &capacity) != 0)
            goto fail;
        if (parse_row(line, classes, scale, &d, d.n) != 0) {
            fprintf(stderr, "%s: row %lld is not %lld numbers and a label in 0..%lld\n", path,
                    (long long)d.n + 1, (long long)features, (long long)classes - 1);
            goto fail;
        }
        d.n++;
    }
    int err;
    const char *msg = gzerror(f, &err);
    if (err != Z_OK && err != Z_STREAM_END) {
        fprintf(stderr, "%s: %s\n", path, err == Z_ERRNO ? strerror(errno) : msg);
        goto fail;
    }
    if (d.n == 0) {
        fprintf(stderr, "%s: no rows\n", path);
        goto fail;
    }
    gzclose(f);
    *out = d;
    return 0;
fail:
    gzclose(f);
    dataset_free(&d);
    return -1;
}

/* A new data set of rows[0..n-1] of d. */
static int take_rows(const dataset *d, const int64_t *rows, int64_t n, dataset *out)
{
    *out = (dataset){.x = malloc((size_t)(n * d->features) * sizeof(float)),
                     .y = malloc((size_t)n * sizeof(int64_t)),
                     .n = n,
                     .features = d->features};
    if (!out->x || !out->y) {
        fprintf(stderr, "out of memory splitting the data set\n");
        dataset_free(out);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        memcpy(out->x + i * d->features, d->x + rows[i] * d->features,
               (size_t)d->features * sizeof(float));
        out->y[i] = d->y[rows[i]];
    }
    return 0;
}

int dataset_split(const dataset *d, double test_fraction, uint64_t seed, dataset *train,
                  dataset *test)
{
    int64_t n_test = (int64_t)((double)d->n * test_fraction);
    int64_t *order = malloc((size_t)d->n * sizeof *order);
    if (!order) {
        fprintf(stderr, "out of memory splitting the data set\n");
        return -1;
    }
    for (int64_t i = 0; i < d->n; i++)
        order[i] = i;
    shuffle(order, d->n, &seed);
    int rc = take_rows(d, order, d->n - n_test, train);
    if (rc == 0 && (rc = take_rows(d, order + d->n - n_test, n_test, test)) != 0)
        dataset_free(train);
    free(order);
    return rc;
}

void dataset_free(dataset *d)
{
    free(d->x);
    free(d->y);
    d->x = NULL;
    d->y = NULL;
}

clt_tensor *dataset_features(const dataset *d)
{
    return clt_tensor_from_data(d->x, CLT_F32, CLT_SHAPE(d->n, d->features), clt_device_cpu());
}

clt_tensor *dataset_labels(const dataset *d)
{
    return clt_tensor_from_data(d->y, CLT_I64, CLT_SHAPE(d->n), clt_device_cpu());
}

/* ---- minibatches --------------------------------------------------------------------------- */

int loader_init(loader *l, const dataset *d, int64_t batch_size, uint64_t seed)
{
    *l = (loader){.data = d,
                  .batch_size = batch_size,
                  .pos = d->n, /* no batch before the first shuffle */
                  .order = malloc((size_t)d->n * sizeof(int64_t)),
                  .xbuf = malloc((size_t)(batch_size * d->features) * sizeof(float)),
                  .ybuf = malloc((size_t)batch_size * sizeof(int64_t)),
                  .rng = seed};
    if (!l->order || !l->xbuf || !l->ybuf) {
        fprintf(stderr, "out of memory making the loader\n");
        loader_free(l);
        return -1;
    }
    for (int64_t i = 0; i < d->n; i++)
        l->order[i] = i;
    return 0;
}

void loader_free(loader *l)
{
    free(l->order);
    free(l->xbuf);
    free(l->ybuf);
    *l = (loader){0};
}

void loader_shuffle(loader *l)
{
    shuffle(l->order, l->data->n, &l->rng);
    l->pos = 0;
}

int64_t loader_next(loader *l, clt_tensor **x, clt_tensor **y)
{
    const dataset *d = l->data;
    int64_t n = d->n - l->pos < l->batch_size ? d->n - l->pos : l->batch_size;
    *x = *y = NULL;
    if (n <= 0)
        return 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t row = l->order[l->pos + i];
        memcpy(l->xbuf + i * d->features, d->x + row * d->features,
               (size_t)d->features * sizeof(float));
        l->ybuf[i] = d->y[row];
    }
    l->pos += n;
    *x = clt_tensor_from_data(l->xbuf, CLT_F32, CLT_SHAPE(n, d->features), clt_device_cpu());
    *y = clt_tensor_from_data(l->ybuf, CLT_I64, CLT_SHAPE(n), clt_device_cpu());
    if (!*x || !*y) {
        clt_tensor_release(*x);
        clt_tensor_release(*y);
        *x = *y = NULL;
        return -1;
    }
    return n;
}

/* ---- progress ------------------------------------------------------------------------------ */

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_show(const progress *p, bool tty)
{
    enum { WIDTH = 24 };
    bool finished = p->accuracy >= 0;
    if (!tty && !finished)
        return;
    if (tty) {
        char bar[WIDTH + 1];
        int filled = p->total ? (int)(WIDTH * p->done / p->total) : WIDTH;
        for (int i = 0; i < WIDTH; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[WIDTH] = '\0';
        printf("\r%s epoch %*d/%d [%s] loss %.4f  %6.0f samples/s", p->model,
               p->epochs >= 100 ? 3 : 2, p->epoch, p->epochs, bar, p->loss, p->samples_per_s);
    } else {
        printf("%s epoch %*d/%d  loss %.4f  %6.0f samples/s", p->model,
               p->epochs >= 100 ? 3 : 2, p->epoch, p->epochs, p->loss, p->samples_per_s);
    }
    if (finished)
        printf("  held-out accuracy %6.2f%%  %.2f s\n", 100 * p->accuracy, p->epoch_s);
    fflush(stdout);
}

/* ---- CSV and SVG ----------------------------------------------------------------------------- */

static FILE *create(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    return f;
}

static int finish(FILE *f, const char *path)
{
    int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int write_curves_csv(const char *path, const curve *curves, int ncurves, int epochs)
{
    FILE *f = create(path);
    if (!f)
        return -1;
    fprintf(f, "epoch");
    for (int c = 0; c < ncurves; c++)
        fprintf(f, ",%s_train_loss,%s_heldout_accuracy", curves[c].model, curves[c].model);
    fprintf(f, "\n");
    for (int e = 0; e < epochs; e++) {
        fprintf(f, "%d", e + 1);
        for (int c = 0; c < ncurves; c++)
            fprintf(f, ",%.6f,%.6f", curves[c].loss[e], curves[c].accuracy[e]);
        fprintf(f, "\n");
    }
    return finish(f, path);
}

/* An axis from lo to hi (whole steps) with ticks every `step`. */
typedef struct axis {
    double lo, hi, step;
} axis;

/* Ticks at 1, 2 or 5 times a power of ten, about `count` of them over [lo, hi]. */
static axis nice_axis(double lo, double hi, int count)
{
    if (!(hi > lo))
        hi = lo + 1;
    double raw = (hi - lo) / count, p = pow(10, floor(log10(raw))), f = raw / p;
    double step = p * (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10);
    return (axis){floor(lo / step + 1e-9) * step, ceil(hi / step - 1e-9) * step, step};
}

/* One plot: its place on the canvas in px and what it shows. */
typedef struct panel {
    double left, top, width, height; /* the plotting area */
    const char *title, *ylabel;
    bool accuracy;                   /* the accuracy (as %) rather than the loss */
} panel;

static const char *const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"};

static const double *values(const curve *c, bool accuracy)
{
    return accuracy ? c->accuracy : c->loss;
}

static void svg_panel(FILE *f, const panel *p, const curve *curves, int ncurves, int epochs)
{
    double scale = p->accuracy ? 100 : 1, lo = INFINITY, hi = -INFINITY;
    for (int c = 0; c < ncurves; c++)
        for (int e = 0; e < epochs; e++) {
            double v = scale * values(&curves[c], p->accuracy)[e];
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
    if (!p->accuracy)
        lo = 0; /* the loss from zero */
    axis xa = nice_axis(0, epochs, 6), ya = nice_axis(lo, p->accuracy ? fmin(hi, 100) : hi, 5);
    if (xa.step < 1)
        xa = (axis){0, epochs, 1}; /* whole epochs */
    double right = p->left + p->width, bottom = p->top + p->height;
#define X(v) (p->left + ((v) - xa.lo) / (xa.hi - xa.lo) * p->width)
#define Y(v) (bottom - ((v) - ya.lo) / (ya.hi - ya.lo) * p->height)
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"15\">%s</text>\n",
            p->left + p->width / 2, p->top - 14, p->title);
    for (double t = xa.lo; t <= xa.hi + xa.step / 2; t += xa.step)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                X(t), p->top, X(t), bottom + 5, X(t), bottom + 19, t);
    for (double t = ya.lo; t <= ya.hi + ya.step / 2; t += ya.step)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                p->left - 5, Y(t), right, Y(t), p->left - 8, Y(t) + 4, fabs(t) < 1e-12 ? 0 : t);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
               "stroke=\"#333\"/>\n", p->left, p->top, p->width, p->height);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">epoch</text>\n",
            p->left + p->width / 2, bottom + 38);
    fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\">%s"
               "</text>\n", p->left - 48, p->top + p->height / 2, p->ylabel);
    for (int c = 0; c < ncurves; c++) {
        const char *color = colors[c % 4];
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
        for (int e = 0; e < epochs; e++)
            fprintf(f, "%s%.1f,%.1f", e ? " " : "", X(e + 1),
                    Y(scale * values(&curves[c], p->accuracy)[e]));
        fprintf(f, "\"/>\n");
        for (int e = 0; e < epochs; e++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", X(e + 1),
                    Y(scale * values(&curves[c], p->accuracy)[e]), color);
        /* the legend, in the corner the curves leave free: top right for a falling loss,
         * bottom right for a rising accuracy */
        double ly = p->accuracy ? bottom - 14 - 20 * (ncurves - 1 - c) : p->top + 18 + 20 * c;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"2\"/>\n<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                right - 80, ly, right - 56, ly, color, right - 50, ly + 4, curves[c].model);
    }
#undef X
#undef Y
}

int write_curves_svg(const char *path, const curve *curves, int ncurves, int epochs)
{
    FILE *f = create(path);
    if (!f)
        return -1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"960\" height=\"400\" "
               "viewBox=\"0 0 960 400\" font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"960\" height=\"400\" fill=\"white\"/>\n");
    svg_panel(f, &(panel){80, 50, 370, 290, "Training loss", "cross-entropy loss", false}, curves,
              ncurves, epochs);
    svg_panel(f, &(panel){570, 50, 370, 290, "Held-out accuracy", "accuracy (%)", true}, curves,
              ncurves, epochs);
    fprintf(f, "</svg>\n");
    return finish(f, path);
}
