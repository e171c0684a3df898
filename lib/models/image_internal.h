/* What the image readers (image_file.c, image_png.c, image_jpeg.c) share: the decoder's
 * context, through which each reports the image it makes or why it failed. */
#ifndef CLT_MODELS_IMAGE_INTERNAL_H
#define CLT_MODELS_IMAGE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cltensor.h>

#include "cltensor/models/image.h"

/* One decoding: the file's bytes in, the image or an error out. */
typedef struct models_image_job {
    const unsigned char *data;
    size_t size;
    const char *where; /* the public function: "clt_image_read" */
    const char *name;  /* the file, or "the data" */
    clt_tensor *image; /* the result, u8 (height, width, 3) on cpu */
} models_image_job;

/* Sets the last error to "where: name: message" and returns status. */
clt_status clt__models_image_fail(const models_image_job *job, clt_status status,
                                  const char *fmt, ...)
#if defined(__MINGW32__)
    __attribute__((format(gnu_printf, 3, 4)))
#elif defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Whether an image of height x width may be made or taken; if not, the error set naming where
 * and `what` ("the size 0 x 3 (height x width): below 1"): `below` for a side below 1,
 * CLT_ERR_UNSUPPORTED for a size over the limits (image.c). */
bool clt__models_image_size_ok(const char *where, const char *what, int64_t height,
                               int64_t width, clt_status below);

/* Makes job->image, a new u8 (height, width, 3) tensor on cpu, and returns its pixels; NULL
 * with the error set for a zero side (CLT_ERR_INVALID_ARGUMENT), a size over the limits
 * (CLT_ERR_UNSUPPORTED, naming `format`) or a failed allocation. */
unsigned char *clt__models_image_new(models_image_job *job, const char *format, int64_t width,
                                     int64_t height);
/* The end of a decoding: status, with job->image released and NULL unless it is CLT_OK. */
clt_status clt__models_image_end(models_image_job *job, clt_status status);
/* The refusal of a format whose library the build lacks: CLT_ERR_UNSUPPORTED naming the
 * library and its Debian package (library-dev). */
clt_status clt__models_image_missing(models_image_job *job, const char *format,
                                     const char *library);

/* Decoders of one format each: CLT_OK with job->image set, or the error set and job->image
 * NULL. A format the build lacks gives CLT_ERR_UNSUPPORTED naming the package to build with. */
clt_status clt__models_image_png(models_image_job *job);
clt_status clt__models_image_jpeg(models_image_job *job);

#endif
