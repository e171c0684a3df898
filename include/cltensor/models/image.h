/* Images for the models: PPM/PGM, PNG and JPEG files read into u8 tensors of shape
 * (height, width, 3) holding what PIL's Image.open(path).convert("RGB") holds, and
 * torchvision's classification preprocessing on them (Resize, CenterCrop, ToTensor, Normalize)
 * with PIL's resampling, value for value. Images are tensors on cpu, row-major, channels last;
 * files are untrusted input. */
#ifndef CLTENSOR_MODELS_IMAGE_H
#define CLTENSOR_MODELS_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cltensor/models/export.h"
#include "cltensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest image read or made: at most CLT_IMAGE_MAX_SIDE pixels a side and
 * CLT_IMAGE_MAX_PIXELS pixels in all (134 million: 400 MB as RGB); a file of at most
 * CLT_IMAGE_MAX_FILE_BYTES bytes (1 GiB). Larger ones are refused with CLT_ERR_UNSUPPORTED
 * before anything of their size is allocated. */
#define CLT_IMAGE_MAX_SIDE 65535
#define CLT_IMAGE_MAX_PIXELS (INT64_C(1) << 27)
#define CLT_IMAGE_MAX_FILE_BYTES (INT64_C(1) << 30)

/* The file formats read, told apart by their first bytes (never by the name). */
typedef enum clt_image_format {
    CLT_IMAGE_PPM = 1, /* binary PPM (P6) and PGM (P5), maxval 255 */
    CLT_IMAGE_PNG,     /* every PNG colour type and bit depth, interlaced or not (libpng) */
    CLT_IMAGE_JPEG     /* baseline and progressive, grey, YCbCr, RGB, CMYK, YCCK (libjpeg) */
} clt_image_format;

/* Whether this build reads `format`: PPM always; PNG and JPEG where the library was built
 * with libpng and libjpeg (found by pkg-config); false for anything else. */
CLT_MODELS_API bool clt_image_format_available(clt_image_format format);

/* The image in the file at `path` as a new u8 tensor (height, width, 3) on cpu, with PIL's
 * pixels after Image.open(path).convert("RGB"): grey replicated into R, G and B, a palette
 * looked up (an index past the palette's end is black), alpha dropped (not composited), CMYK
 * converted as PIL does; 16-bit PNG samples keep their high byte, except 16-bit grey, which
 * PIL clips to 255 (a value of 256 or more is 255). Gamma, colour profiles and EXIF
 * orientation are ignored, as PIL ignores them. JPEGs are decoded by libjpeg with PIL's
 * settings (accurate integer IDCT, fancy upsampling); libjpeg's warnings about corrupt data are
 * ignored, as PIL ignores them, but a file that ends early is an error. Nothing is printed.
 * Errors, each naming the function, the file and the cause: CLT_ERR_INVALID_ARGUMENT for a
 * NULL path and for a malformed, truncated or empty file or one of zero width or height;
 * CLT_ERR_IO when it cannot be opened or read; CLT_ERR_UNSUPPORTED for another format (named
 * where known: GIF, BMP, WebP, TIFF, ASCII PPM), a PPM maxval other than 255, a format this
 * build lacks (naming the Debian package to build with), or a size over the limits above. */
CLT_MODELS_API clt_tensor *clt_image_read(const char *path);
/* clt_image_read for a file's bytes in memory: `size` bytes at `data`, which the caller keeps.
 * CLT_ERR_INVALID_ARGUMENT also for NULL data. */
CLT_MODELS_API clt_tensor *clt_image_decode(const void *data, size_t size);

/* PIL's resampling filters, with PIL's numbers (Image.Resampling). */
typedef enum clt_image_filter {
    CLT_IMAGE_NEAREST = 0,
    CLT_IMAGE_LANCZOS = 1,
    CLT_IMAGE_BILINEAR = 2, /* torchvision's default */
    CLT_IMAGE_BICUBIC = 3,
    CLT_IMAGE_BOX = 4,
    CLT_IMAGE_HAMMING = 5
} clt_image_filter;

/* torchvision's Resize((height, width), interpolation) on a PIL image, which is PIL's
 * Image.resize((width, height), filter): a new u8 tensor (height, width, C) from img, a u8
 * tensor (H, W, C) on cpu (any strides). Every filter but NEAREST is PIL's convolution, which
 * widens the filter by the scale when shrinking (antialiasing), in PIL's 8-bit fixed point, in
 * two passes that each round to 8 bits and run only where their side changes size, in
 * Pillow 13's order: the vertical pass first where the height shrinks by more than twice as
 * many pixels as the width does, the horizontal one first otherwise. Channels are resampled
 * each on its own, as PIL does for L, RGB and CMYK images (not premultiplied by alpha as it
 * does for RGBA). The image itself, retained, when the size is unchanged. Errors:
 * CLT_ERR_INVALID_ARGUMENT for NULL or an unknown filter; CLT_ERR_DTYPE unless img is u8;
 * CLT_ERR_SHAPE unless it is 3-D with at least one pixel and one channel, or for a size below
 * 1; CLT_ERR_DEVICE_MISMATCH off cpu; CLT_ERR_UNSUPPORTED for an image or a size over the
 * limits above. */
CLT_MODELS_API clt_tensor *clt_image_resize(clt_tensor *img, int64_t height, int64_t width,
                                            clt_image_filter filter);
/* torchvision's Resize(size, interpolation, max_size): the shorter side resized to `size`,
 * the longer to int(size * longer / shorter) as Python computes it (then, where max_size > 0
 * and the longer side would exceed it, the longer to max_size and the shorter to
 * int(max_size * shorter / longer)); then clt_image_resize. Errors as clt_image_resize, and
 * CLT_ERR_INVALID_ARGUMENT for a max_size that is not 0 and not above size. */
CLT_MODELS_API clt_tensor *clt_image_resize_shorter(clt_tensor *img, int64_t size,
                                                    int64_t max_size, clt_image_filter filter);

/* torchvision's CenterCrop((height, width)): a new u8 tensor (height, width, C) cut from the
 * middle of img (u8 (H, W, C) on cpu), its top at int(round((H - height) / 2.0)) with Python's
 * rounding of halves to even (and likewise its left); a side larger than the image's is first
 * padded with zeros, (d // 2) before and ((d + 1) // 2) after for a difference d, as
 * torchvision pads. Errors as clt_image_resize. */
CLT_MODELS_API clt_tensor *clt_image_center_crop(clt_tensor *img, int64_t height,
                                                 int64_t width);

/* torchvision's ToTensor on a u8 image: a new f32 tensor (C, H, W) of img's values
 * (u8 (H, W, C) on cpu) divided by 255 in f32. Errors as clt_image_resize. */
CLT_MODELS_API clt_tensor *clt_image_to_tensor(clt_tensor *img);

/* torchvision's Normalize(mean, std): a new f32 tensor (x - mean[c]) / std[c] for each channel
 * c of x, an f32 tensor (C, H, W) or (N, C, H, W) on cpu, in f32 with mean and std rounded to
 * f32 first as torchvision does; `n` values each, n == C. Errors: CLT_ERR_INVALID_ARGUMENT for
 * NULL, an n other than C, or a std that is 0 in f32; CLT_ERR_DTYPE unless x is f32;
 * CLT_ERR_SHAPE unless it is 3-D or 4-D; CLT_ERR_DEVICE_MISMATCH off cpu. */
CLT_MODELS_API clt_tensor *clt_image_normalize(clt_tensor *x, const double *mean,
                                               const double *std, int n);

/* The ImageNet classification transform of torchvision's models: Resize(256) (bilinear),
 * CenterCrop(224), ToTensor and Normalize(mean (0.485, 0.456, 0.406), std (0.229, 0.224,
 * 0.225)) on img (u8 (H, W, 3) on cpu): a new f32 tensor (3, 224, 224); clt_unsqueeze(x, 0)
 * makes it a batch of one, clt_stack a batch of several. Errors as clt_image_resize, and
 * CLT_ERR_SHAPE unless img has 3 channels. */
CLT_MODELS_API clt_tensor *clt_image_imagenet(clt_tensor *img);

#ifdef __cplusplus
}
#endif

#endif
