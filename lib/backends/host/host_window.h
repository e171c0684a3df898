/* The sliding windows of the host's convolution and pooling kernels (host_conv.c, host_pool.c),
 * over cl/window.cl's arithmetic: the taps of an output's window that lie inside the image, in
 * order, and for the adjoints' gathers the output position each tap of an input position's
 * windows reads, from tables where they fit. */
#ifndef CLT_HOST_WINDOW_H
#define CLT_HOST_WINDOW_H

#include <stdbool.h>

#include "backends/backend.h"
#include "backends/shared/scalar_host.h"
#include "cl/window.cl"

/* The taps of a window. */
#define TAPS(c) ((size_t)(c)->kh * (size_t)(c)->kw)

/* The taps (y, x) of output (oy, ox)'s window that lie inside the image, in order, each with the
 * input row iy and column ix it reads. */
#define FOR_WINDOW_TAPS(c, oy, ox, ...)                                                        \
    for (long y0_ = (long)(oy) * (c)->sh - (c)->ph, y = clt_window_tap_lo(y0_, (c)->dh),       \
              yb_ = clt_window_tap_hi(y0_, (c)->kh, (c)->dh, (long)(c)->H);                    \
         y < yb_; y++) {                                                                       \
        long iy = y0_ + y * (c)->dh;                                                           \
        for (long x0_ = (long)(ox) * (c)->sw - (c)->pw, x = clt_window_tap_lo(x0_, (c)->dw),   \
                  xb_ = clt_window_tap_hi(x0_, (c)->kw, (c)->dw, (long)(c)->W);                \
             x < xb_; x++) {                                                                   \
            long ix = x0_ + x * (c)->dw;                                                       \
            __VA_ARGS__;                                                                       \
        }                                                                                      \
    }

/* For the adjoints' gathers: the output row (column) that tap y (x) of a window reads input
 * row h (column w) from, clt_window_at for every h < H and y < kh (w < W, x < kw), when that
 * fits; else window_y and window_x compute it. */
#define WINDOW_TABLE_MAX 512
typedef struct window_tables {
    bool has_y, has_x;
    long y[WINDOW_TABLE_MAX], x[WINDOW_TABLE_MAX];
} window_tables;

static void window_tables_make(window_tables *t, const clt__conv_call *c)
{
    t->has_y = c->H * (size_t)c->kh <= WINDOW_TABLE_MAX;
    t->has_x = c->W * (size_t)c->kw <= WINDOW_TABLE_MAX;
    for (size_t h = 0; t->has_y && h < c->H; h++)
        for (int y = 0; y < c->kh; y++)
            t->y[h * (size_t)c->kh + (size_t)y] =
                clt_window_at((long)h, y, c->sh, c->ph, c->dh, c->OH);
    for (size_t w = 0; t->has_x && w < c->W; w++)
        for (int x = 0; x < c->kw; x++)
            t->x[w * (size_t)c->kw + (size_t)x] =
                clt_window_at((long)w, x, c->sw, c->pw, c->dw, c->OW);
}

static inline long window_y(const window_tables *t, const clt__conv_call *c, long h, int y)
{
    return t->has_y ? t->y[h * c->kh + y] : clt_window_at(h, y, c->sh, c->ph, c->dh, c->OH);
}

static inline long window_x(const window_tables *t, const clt__conv_call *c, long w, int x)
{
    return t->has_x ? t->x[w * c->kw + x] : clt_window_at(w, x, c->sw, c->pw, c->dw, c->OW);
}

#endif
