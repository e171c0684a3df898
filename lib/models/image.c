/* torchvision's classification preprocessing on u8 images (height, width, channels) on cpu:
 * Resize with PIL's resampling (Resample.c's convolution in 8-bit fixed point, and its
 * nearest-neighbour scaling), CenterCrop, ToTensor and Normalize, each giving the values
 * torchvision gives on a PIL image. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor.h>

#include "image_internal.h"

/* PIL's fixed point: coefficients scaled by 2^22, leaving 8 bits for a sample and 2 for sums
 * above 1 or below 0 (Resample.c, PRECISION_BITS). */
#define PRECISION_BITS 22
#define PI 3.14159265358979323846

/* --- arguments ---------------------------------------------------------------------------- */

bool clt__models_image_size_ok(const char *where, const char *what, int64_t height,
                               int64_t width, clt_status below)
{
    if (height < 1 || width < 1) {
        clt_set_error(below, where, "%s %lld x %lld (height x width): below 1", what,
                      (long long)height, (long long)width);
        return false;
    }
    if (height > CLT_IMAGE_MAX_SIDE || width > CLT_IMAGE_MAX_SIDE ||
        height * width > CLT_IMAGE_MAX_PIXELS) {
        clt_set_error(CLT_ERR_UNSUPPORTED, where,
                      "%s %lld x %lld (height x width): larger than the limit (%d pixels a "
                      "side, %lld in all)",
                      what, (long long)height, (long long)width, CLT_IMAGE_MAX_SIDE,
                      (long long)CLT_IMAGE_MAX_PIXELS);
        return false;
    }
    return true;
}

/* img as a contiguous u8 (H, W, C) tensor on cpu with at least one pixel and one channel and
 * within the limits (a new reference), or NULL with the error set, naming `where`. */
static clt_tensor *image_in(clt_tensor *img, const char *where)
{
    if (!img) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, where, "img is NULL");
        return NULL;
    }
    const int64_t *s = clt_tensor_shape(img);
    if (clt_tensor_dtype(img) != CLT_U8) {
        clt_set_error(CLT_ERR_DTYPE, where, "img is %s, not u8",
                      clt_dtype_name(clt_tensor_dtype(img)));
    } else if (clt_tensor_ndim(img) != 3 || s[0] < 1 || s[1] < 1 || s[2] < 1) {
        char dims[96] = "";
        for (int i = 0; i < clt_tensor_ndim(img); i++)
            snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%lld", i ? ", " : "",
                     (long long)s[i]);
        clt_set_error(CLT_ERR_SHAPE, where,
                      "img has shape (%s), not (height, width, channels) of at least 1 each",
                      dims);
    } else if (clt_tensor_device(img) != clt_device_cpu()) {
        clt_set_error(CLT_ERR_DEVICE_MISMATCH, where, "img is on %s, not cpu",
                      clt_device_name(clt_tensor_device(img)));
    } else if (clt__models_image_size_ok(where, "img", s[0], s[1], CLT_ERR_SHAPE)) {
        return clt_contiguous(img);
    }
    return NULL;
}

/* A new u8 (height, width, channels) tensor on cpu and its pixels in *px. */
static clt_tensor *image_new(int64_t height, int64_t width, int64_t channels, uint8_t **px)
{
    clt_tensor *t = clt_tensor_empty(CLT_SHAPE(height, width, channels), CLT_U8, NULL);
    *px = t ? clt_tensor_data(t) : NULL;
    return t;
}

/* --- PIL's filters (Resample.c) ----------------------------------------------------------- */

static double box_filter(double x)
{
    return x > -0.5 && x <= 0.5 ? 1.0 : 0.0;
}

static double bilinear_filter(double x)
{
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

static double hamming_filter(double x)
{
    x = fabs(x);
    if (x == 0.0)
        return 1.0;
    if (x >= 1.0)
        return 0.0;
    x *= PI;
    /* PIL's constants are floats */
    return sin(x) / x * ((double)0.54f + (double)0.46f * cos(x));
}

static double bicubic_filter(double x)
{
    const double a = -0.5;
    x = fabs(x);
    if (x < 1.0)
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0)
        return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

static double sinc(double x)
{
    if (x == 0.0)
        return 1.0;
    x *= PI;
    return sin(x) / x;
}

static double lanczos_filter(double x)
{
    return -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0;
}

typedef struct kernel {
    double (*fn)(double x);
    double support; /* the half width at scale 1 */
} kernel;

/* The kernel of a convolving clt_image_filter; NULL for NEAREST and unknown ones. */
static const kernel *kernel_of(clt_image_filter f)
{
    static const kernel box = {box_filter, 0.5}, bilinear = {bilinear_filter, 1.0},
                        hamming = {hamming_filter, 1.0}, bicubic = {bicubic_filter, 2.0},
                        lanczos = {lanczos_filter, 3.0};
    switch (f) {
    case CLT_IMAGE_BOX: return &box;
    case CLT_IMAGE_BILINEAR: return &bilinear;
    case CLT_IMAGE_HAMMING: return &hamming;
    case CLT_IMAGE_BICUBIC: return &bicubic;
    case CLT_IMAGE_LANCZOS: return &lanczos;
    case CLT_IMAGE_NEAREST: break;
    }
    return NULL;
}

/* --- convolution along one axis ----------------------------------------------------------- */

/* The coefficients of one axis from in_size samples to out_size: for output i, inputs
 * first[i] .. first[i] + count[i] - 1 weighted by k[i * ksize ...] in fixed point. */
typedef struct axis {
    int ksize;
    int *first, *count;
    int32_t *k;
} axis;

static void axis_free(axis *a)
{
    free(a->first);
    free(a->count);
    free(a->k);
}

/* PIL's precompute_coeffs and normalize_coeffs_8bpc: the filter widened by the scale when
 * shrinking, centred on each output's centre, its taps normalised to sum 1, then rounded half
 * away from zero to fixed point. False when out of memory. */
static bool axis_make(axis *a, const kernel *f, int64_t in_size, int64_t out_size)
{
    double scale = (double)in_size / (double)out_size;
    double filterscale = scale < 1.0 ? 1.0 : scale, support = f->support * filterscale;
    double inv_filterscale = 1.0 / filterscale;
    a->ksize = (int)ceil(support) * 2 + 1;
    a->first = malloc((size_t)out_size * sizeof *a->first);
    a->count = malloc((size_t)out_size * sizeof *a->count);
    a->k = malloc((size_t)out_size * (size_t)a->ksize * sizeof *a->k);
    double *w = malloc((size_t)a->ksize * sizeof *w);
    if (!a->first || !a->count || !a->k || !w) {
        free(w);
        return false;
    }
    for (int64_t i = 0; i < out_size; i++) {
        double center = (i + 0.5) * scale, sum = 0.0;
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        if (lo < 0)
            lo = 0;
        if (hi > in_size)
            hi = (int)in_size;
        int n = hi - lo;
        for (int x = 0; x < n; x++) {
            w[x] = f->fn(((double)(x + lo) - center + 0.5) * inv_filterscale);
            sum += w[x];
        }
        int32_t *k = a->k + i * a->ksize;
        for (int x = 0; x < a->ksize; x++) {
            double v = x < n ? (sum != 0.0 ? w[x] / sum : w[x]) : 0.0;
            k[x] = v < 0 ? (int32_t)(-0.5 + v * (1 << PRECISION_BITS))
                         : (int32_t)(0.5 + v * (1 << PRECISION_BITS));
        }
        a->first[i] = lo;
        a->count[i] = n;
    }
    free(w);
    return true;
}

/* A fixed-point sum to 8 bits: PIL's clip8 (rounding is in the sum's start value). */
static inline uint8_t clip8(int32_t v)
{
    if (v < 0)
        return 0;
    v >>= PRECISION_BITS;
    return (uint8_t)(v > 255 ? 255 : v);
}

/* rows x in_w x c samples into rows x out_w x c along the width (three channels, the usual
 * case, summed together). */
static void pass_horizontal(const axis *a, const uint8_t *in, uint8_t *out, int64_t rows,
                            int64_t in_w, int64_t out_w, int64_t c)
{
    const int32_t half = 1 << (PRECISION_BITS - 1);
    for (int64_t y = 0; y < rows; y++) {
        const uint8_t *line = in + y * in_w * c;
        uint8_t *o = out + y * out_w * c;
        for (int64_t x = 0; x < out_w; x++, o += c) {
            const int32_t *k = a->k + x * a->ksize;
            const uint8_t *p = line + (int64_t)a->first[x] * c;
            int n = a->count[x];
            if (c == 3) {
                int32_t s0 = half, s1 = half, s2 = half;
                for (int t = 0; t < n; t++, p += 3) {
                    s0 += p[0] * k[t];
                    s1 += p[1] * k[t];
                    s2 += p[2] * k[t];
                }
                o[0] = clip8(s0), o[1] = clip8(s1), o[2] = clip8(s2);
                continue;
            }
            for (int64_t ch = 0; ch < c; ch++) {
                int32_t s = half;
                for (int t = 0; t < n; t++)
                    s += p[t * c + ch] * k[t];
                o[ch] = clip8(s);
            }
        }
    }
}

/* in_h rows of `row` samples into out_h rows along the height; acc holds `row` sums. */
static void pass_vertical(const axis *a, const uint8_t *in, uint8_t *out, int64_t out_h,
                          int64_t row, int32_t *acc)
{
    for (int64_t y = 0; y < out_h; y++) {
        const int32_t *k = a->k + y * a->ksize;
        for (int64_t i = 0; i < row; i++)
            acc[i] = 1 << (PRECISION_BITS - 1);
        for (int t = 0; t < a->count[y]; t++) {
            const uint8_t *p = in + (int64_t)(a->first[y] + t) * row;
            for (int64_t i = 0; i < row; i++)
                acc[i] += p[i] * k[t];
        }
        for (int64_t i = 0; i < row; i++)
            out[y * row + i] = clip8(acc[i]);
    }
}

/* PIL's two passes, each only where its side changes size: the horizontal one first, unless
 * the height shrinks by more than twice as many pixels as the width does (h - oh >
 * 2 (w - ow), a width that grows included), which Pillow 13 resamples vertically first. src is
 * (h, w, c); the result (oh, ow, c). */
static clt_tensor *convolve(const kernel *f, const uint8_t *src, int64_t h, int64_t w,
                            int64_t c, int64_t oh, int64_t ow)
{
    axis ax = {0}, ay = {0};
    uint8_t *tmp = NULL, *px;
    int32_t *acc = NULL;
    clt_tensor *out = NULL;
    bool horizontal = ow != w, vertical = oh != h;
    bool vertical_first = oh < h && 2 * (w - ow) < h - oh;
    int64_t tmp_w = vertical_first ? w : ow, tmp_h = vertical_first ? oh : h;
    if ((horizontal && !axis_make(&ax, f, w, ow)) || (vertical && !axis_make(&ay, f, h, oh)))
        goto fail;
    if (horizontal && vertical && !(tmp = malloc((size_t)(tmp_h * tmp_w * c))))
        goto fail;
    if (vertical && !(acc = malloc((size_t)(tmp_w * c) * sizeof *acc)))
        goto fail;
    if (!(out = image_new(oh, ow, c, &px)))
        goto done;
    if (!horizontal || !vertical) {
        if (horizontal)
            pass_horizontal(&ax, src, px, h, w, ow, c);
        else
            pass_vertical(&ay, src, px, oh, w * c, acc);
    } else if (vertical_first) {
        pass_vertical(&ay, src, tmp, oh, w * c, acc);
        pass_horizontal(&ax, tmp, px, oh, w, ow, c);
    } else {
        pass_horizontal(&ax, src, tmp, h, w, ow, c);
        pass_vertical(&ay, tmp, px, oh, ow * c, acc);
    }
    goto done;
fail:
    clt_set_error(CLT_ERR_OUT_OF_MEMORY, "clt_image_resize",
                  "no memory to resample %lld x %lld pixels to %lld x %lld", (long long)h,
                  (long long)w, (long long)oh, (long long)ow);
done:
    axis_free(&ax);
    axis_free(&ay);
    free(tmp);
    free(acc);
    return out;
}

/* PIL's nearest neighbour (ImagingScaleAffine): the source of output column x is the integer
 * part of x * w / ow + w / (2 ow), summed step by step in doubles as PIL sums it; an output
 * whose source falls outside is 0. */
static clt_tensor *nearest(const uint8_t *src, int64_t h, int64_t w, int64_t c, int64_t oh,
                           int64_t ow)
{
    uint8_t *px;
    int64_t *xin = malloc((size_t)ow * sizeof *xin);
    clt_tensor *out = xin ? image_new(oh, ow, c, &px) : NULL;
    if (!out) {
        if (!xin)
            clt_set_error(CLT_ERR_OUT_OF_MEMORY, "clt_image_resize",
                          "no memory for %lld columns", (long long)ow);
        free(xin);
        return NULL;
    }
    double ax = (double)w / (double)ow, ay = (double)h / (double)oh;
    double xo = ax * 0.5, yo = ay * 0.5;
    for (int64_t x = 0; x < ow; x++, xo += ax)
        xin[x] = xo < 0.0 ? -1 : (int64_t)xo;
    for (int64_t y = 0; y < oh; y++, yo += ay) {
        int64_t yi = yo < 0.0 ? -1 : (int64_t)yo;
        uint8_t *line = px + y * ow * c;
        for (int64_t x = 0; x < ow; x++) {
            if (yi >= 0 && yi < h && xin[x] >= 0 && xin[x] < w)
                memcpy(line + x * c, src + (yi * w + xin[x]) * c, (size_t)c);
            else
                memset(line + x * c, 0, (size_t)c);
        }
    }
    free(xin);
    return out;
}

clt_tensor *clt_image_resize(clt_tensor *img, int64_t height, int64_t width,
                             clt_image_filter filter)
{
    const char *where = "clt_image_resize";
    const kernel *f = kernel_of(filter);
    if (!f && filter != CLT_IMAGE_NEAREST) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, where,
                      "filter %d is none of CLT_IMAGE_NEAREST (0) to CLT_IMAGE_HAMMING (5)",
                      (int)filter);
        return NULL;
    }
    clt_tensor *src = image_in(img, where);
    if (!src)
        return NULL;
    const int64_t *s = clt_tensor_shape(src);
    int64_t h = s[0], w = s[1], c = s[2];
    clt_tensor *out = NULL;
    if (!clt__models_image_size_ok(where, "the size", height, width, CLT_ERR_SHAPE))
        out = NULL;
    else if (height == h && width == w)
        out = clt_tensor_retain(img);
    else if (f)
        out = convolve(f, clt_tensor_data(src), h, w, c, height, width);
    else
        out = nearest(clt_tensor_data(src), h, w, c, height, width);
    clt_tensor_release(src);
    return out;
}

clt_tensor *clt_image_resize_shorter(clt_tensor *img, int64_t size, int64_t max_size,
                                     clt_image_filter filter)
{
    const char *where = "clt_image_resize_shorter";
    clt_tensor *src = image_in(img, where);
    if (!src)
        return NULL;
    const int64_t *s = clt_tensor_shape(src);
    int64_t h = s[0], w = s[1];
    clt_tensor_release(src);
    if (size < 1 || size > CLT_IMAGE_MAX_SIDE) {
        clt_set_error(CLT_ERR_SHAPE, where, "size %lld is not from 1 to %d", (long long)size,
                      CLT_IMAGE_MAX_SIDE);
        return NULL;
    }
    if (max_size != 0 && max_size <= size) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, where,
                      "max_size %lld is not above size %lld (nor 0, for none)",
                      (long long)max_size, (long long)size);
        return NULL;
    }
    /* torchvision's _compute_resized_output_size: Python's int(a * b / c) truncates the
     * correctly rounded quotient of the exact product, which doubles hold exactly here */
    int64_t shorter = h < w ? h : w, longer = h < w ? w : h;
    int64_t new_short = size, new_long = (int64_t)((double)(size * longer) / (double)shorter);
    if (max_size != 0 && new_long > max_size) {
        new_short = (int64_t)((double)(max_size * new_short) / (double)new_long);
        new_long = max_size;
    }
    return w <= h ? clt_image_resize(img, new_long, new_short, filter)
                  : clt_image_resize(img, new_short, new_long, filter);
}

/* --- crop, ToTensor, Normalize ------------------------------------------------------------ */

/* The offset of a centre crop of `crop` from `size` along one side, as torchvision takes it: a
 * negative one where the side is padded. */
static int64_t crop_offset(int64_t size, int64_t crop)
{
    if (crop > size)
        return -((crop - size) / 2);
    int64_t d = size - crop, half = d / 2; /* round(d / 2.0), halves to even */
    return d % 2 == 0 || half % 2 == 0 ? half : half + 1;
}

clt_tensor *clt_image_center_crop(clt_tensor *img, int64_t height, int64_t width)
{
    const char *where = "clt_image_center_crop";
    clt_tensor *src = image_in(img, where);
    if (!src)
        return NULL;
    clt_tensor *out = NULL;
    const int64_t *s = clt_tensor_shape(src);
    int64_t h = s[0], w = s[1], c = s[2];
    uint8_t *px;
    if (clt__models_image_size_ok(where, "the crop", height, width, CLT_ERR_SHAPE) &&
        (out = image_new(height, width, c, &px))) {
        const uint8_t *in = clt_tensor_data(src);
        int64_t top = crop_offset(h, height), left = crop_offset(w, width);
        for (int64_t y = 0; y < height; y++) {
            int64_t sy = y + top;
            for (int64_t x = 0; x < width; x++) {
                int64_t sx = x + left;
                uint8_t *o = px + (y * width + x) * c;
                if (sy >= 0 && sy < h && sx >= 0 && sx < w)
                    memcpy(o, in + (sy * w + sx) * c, (size_t)c);
                else
                    memset(o, 0, (size_t)c);
            }
        }
    }
    clt_tensor_release(src);
    return out;
}

clt_tensor *clt_image_to_tensor(clt_tensor *img)
{
    clt_tensor *src = image_in(img, "clt_image_to_tensor");
    if (!src)
        return NULL;
    const int64_t *s = clt_tensor_shape(src);
    int64_t h = s[0], w = s[1], c = s[2];
    clt_tensor *out = clt_tensor_empty(CLT_SHAPE(c, h, w), CLT_F32, NULL);
    if (out) {
        const uint8_t *in = clt_tensor_data(src);
        float *o = clt_tensor_data(out);
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t i = 0; i < h * w; i++)
                o[ch * h * w + i] = (float)in[i * c + ch] / 255.0f;
    }
    clt_tensor_release(src);
    return out;
}

clt_tensor *clt_image_normalize(clt_tensor *x, const double *mean, const double *std, int n)
{
    const char *where = "clt_image_normalize";
    if (!x || !mean || !std) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, where, "%s is NULL",
                      !x      ? "x"
                      : !mean ? "mean"
                              : "std");
        return NULL;
    }
    int nd = clt_tensor_ndim(x);
    if (clt_tensor_dtype(x) != CLT_F32) {
        clt_set_error(CLT_ERR_DTYPE, where, "x is %s, not f32",
                      clt_dtype_name(clt_tensor_dtype(x)));
        return NULL;
    }
    if (nd != 3 && nd != 4) {
        clt_set_error(CLT_ERR_SHAPE, where,
                      "x has %d dimensions, not 3 (C, H, W) or 4 (N, C, H, W)", nd);
        return NULL;
    }
    if (clt_tensor_device(x) != clt_device_cpu()) {
        clt_set_error(CLT_ERR_DEVICE_MISMATCH, where, "x is on %s, not cpu",
                      clt_device_name(clt_tensor_device(x)));
        return NULL;
    }
    int64_t c = clt_tensor_size(x, -3), plane = clt_tensor_size(x, -2) * clt_tensor_size(x, -1);
    if (n != c) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, where, "%d means and stds for %lld channels", n,
                      (long long)c);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if ((float)std[i] == 0.0f) {
            clt_set_error(CLT_ERR_INVALID_ARGUMENT, where,
                          "std[%d] = %g is 0 in f32: a division by zero", i, std[i]);
            return NULL;
        }
    }
    clt_tensor *src = clt_contiguous(x), *out = NULL;
    if (src && (out = clt_tensor_empty(nd, clt_tensor_shape(src), CLT_F32, NULL))) {
        const float *in = clt_tensor_data(src);
        float *o = clt_tensor_data(out);
        int64_t images = clt_tensor_numel(src) / (c * plane > 0 ? c * plane : 1);
        for (int64_t b = 0; b < images; b++) {
            for (int64_t ch = 0; ch < c; ch++) {
                float m = (float)mean[ch], sd = (float)std[ch];
                int64_t at = (b * c + ch) * plane;
                for (int64_t i = 0; i < plane; i++)
                    o[at + i] = (in[at + i] - m) / sd;
            }
        }
    }
    clt_tensor_release(src);
    return out;
}

clt_tensor *clt_image_imagenet(clt_tensor *img)
{
    static const double mean[3] = {0.485, 0.456, 0.406}, std[3] = {0.229, 0.224, 0.225};
    clt_tensor *src = image_in(img, "clt_image_imagenet");
    if (!src)
        return NULL;
    int64_t channels = clt_tensor_size(src, 2);
    clt_tensor_release(src);
    if (channels != 3) {
        clt_set_error(CLT_ERR_SHAPE, "clt_image_imagenet", "img has %lld channels, not 3",
                      (long long)channels);
        return NULL;
    }
    clt_tensor *resized = clt_image_resize_shorter(img, 256, 0, CLT_IMAGE_BILINEAR);
    clt_tensor *cropped = resized ? clt_image_center_crop(resized, 224, 224) : NULL;
    clt_tensor *x = cropped ? clt_image_to_tensor(cropped) : NULL;
    clt_tensor *out = x ? clt_image_normalize(x, mean, std, 3) : NULL;
    clt_tensor_release(resized);
    clt_tensor_release(cropped);
    clt_tensor_release(x);
    return out;
}
