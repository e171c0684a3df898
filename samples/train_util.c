/* The training sample's helpers outside the library: the progress line and the CSV and SVG
 * writers (see train_util.h). */
#include "train_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
