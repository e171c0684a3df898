/* Reading images: a file's bytes, its format told by its first bytes, binary PPM and PGM
 * decoded here, PNG and JPEG handed to image_png.c and image_jpeg.c, and the checks every
 * decoder shares (sizes within the limits, errors naming the file). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

clt_status clt__models_image_fail(const models_image_job *job, clt_status status,
                                  const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return clt_set_error(status, job->where, "%s: %s", job->name, message);
}

unsigned char *clt__models_image_new(models_image_job *job, const char *format, int64_t width,
                                     int64_t height)
{
    char what[512];
    snprintf(what, sizeof what, "%s: a %s of", job->name, format);
    if (!clt__models_image_size_ok(job->where, what, height, width, CLT_ERR_INVALID_ARGUMENT))
        return NULL;
    job->image = clt_tensor_empty(CLT_SHAPE(height, width, 3), CLT_U8, NULL);
    return job->image ? clt_tensor_data(job->image) : NULL;
}

clt_status clt__models_image_end(models_image_job *job, clt_status status)
{
    if (status != CLT_OK) {
        clt_tensor_release(job->image);
        job->image = NULL;
    }
    return status;
}

clt_status clt__models_image_missing(models_image_job *job, const char *format,
                                     const char *library)
{
    return clt__models_image_fail(job, CLT_ERR_UNSUPPORTED,
                                  "a %s file, and this build reads none: cltensor_models was "
                                  "built without %s (Debian: apt-get install %s-dev, then "
                                  "configure again)",
                                  format, library, library);
}

bool clt_image_format_available(clt_image_format format)
{
    switch (format) {
    case CLT_IMAGE_PPM: return true;
    case CLT_IMAGE_PNG:
#ifdef CLT_MODELS_PNG
        return true;
#else
        return false;
#endif
    case CLT_IMAGE_JPEG:
#ifdef CLT_MODELS_JPEG
        return true;
#else
        return false;
#endif
    }
    return false;
}

/* --- PPM and PGM -------------------------------------------------------------------------- */

static bool ppm_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* The next number of a PPM header at *at, after whitespace and comments ('#' to the end of the
 * line), and the one whitespace byte that ends it; false when there is none. A number of more
 * than 9 digits reads as 10^9. */
static bool ppm_number(const models_image_job *job, size_t *at, int64_t *value)
{
    size_t i = *at;
    for (;;) {
        while (i < job->size && ppm_space(job->data[i]))
            i++;
        if (i >= job->size || job->data[i] != '#')
            break;
        while (i < job->size && job->data[i] != '\n' && job->data[i] != '\r')
            i++;
    }
    int64_t v = 0;
    size_t digits = 0;
    for (; i < job->size && job->data[i] >= '0' && job->data[i] <= '9'; i++, digits++)
        v = v >= 100000000 ? 1000000000 : v * 10 + (job->data[i] - '0');
    if (digits == 0 || i >= job->size || !ppm_space(job->data[i]))
        return false;
    *at = i + 1;
    *value = v;
    return true;
}

/* P5 (grey) or P6 (RGB) with maxval 255, as PIL reads them; bytes after the pixels are
 * ignored. */
static clt_status decode_ppm(models_image_job *job)
{
    bool grey = job->data[1] == '5';
    const char *format = grey ? "PGM" : "PPM";
    size_t at = 2;
    int64_t width, height, maxval;
    if (!ppm_number(job, &at, &width) || !ppm_number(job, &at, &height) ||
        !ppm_number(job, &at, &maxval))
        return clt__models_image_fail(job, CLT_ERR_INVALID_ARGUMENT,
                                      "malformed %s header (width, height and maxval expected)",
                                      format);
    if (maxval != 255)
        return clt__models_image_fail(job,
                                      maxval >= 1 && maxval < 65536 ? CLT_ERR_UNSUPPORTED
                                                                    : CLT_ERR_INVALID_ARGUMENT,
                                      "%s maxval %lld: only 255 is read", format,
                                      (long long)maxval);
    unsigned char *out = clt__models_image_new(job, format, width, height);
    if (!out)
        return clt_last_status();
    size_t pixels = (size_t)width * (size_t)height, need = pixels * (grey ? 1 : 3);
    if (job->size - at < need) {
        clt__models_image_fail(job, CLT_ERR_INVALID_ARGUMENT,
                               "truncated %s: %zu bytes of pixels where %lld x %lld need %zu",
                               format, job->size - at, (long long)width, (long long)height,
                               need);
        return clt__models_image_end(job, CLT_ERR_INVALID_ARGUMENT);
    }
    const unsigned char *in = job->data + at;
    if (grey) {
        for (size_t i = 0; i < pixels; i++)
            out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = in[i];
    } else {
        memcpy(out, in, need);
    }
    return CLT_OK;
}

/* --- formats ------------------------------------------------------------------------------ */

/* The name of a format not read whose first bytes these are, or NULL. */
static const char *other_format(const unsigned char *d, size_t n)
{
    if (n >= 4 && !memcmp(d, "GIF8", 4))
        return "GIF";
    if (n >= 2 && !memcmp(d, "BM", 2))
        return "BMP";
    if (n >= 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4))
        return "WebP";
    if (n >= 4 && (!memcmp(d, "II*\0", 4) || !memcmp(d, "MM\0*", 4)))
        return "TIFF";
    if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '4')
        return d[1] == '4' ? "PBM (P4, 1 bit)" : "ASCII PBM, PGM or PPM (P1 to P3)";
    if (n >= 2 && d[0] == 'P' && d[1] == '7')
        return "PAM (P7)";
    return NULL;
}

static clt_status decode(models_image_job *job)
{
    const unsigned char *d = job->data;
    size_t n = job->size;
    job->image = NULL;
    if (n == 0)
        return clt__models_image_fail(job, CLT_ERR_INVALID_ARGUMENT, "empty (no bytes)");
    if (n >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8))
        return clt__models_image_png(job);
    if (n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff)
        return clt__models_image_jpeg(job);
    if (n >= 3 && d[0] == 'P' && (d[1] == '5' || d[1] == '6') && ppm_space(d[2]))
        return decode_ppm(job);
    const char *other = other_format(d, n);
    if (other)
        return clt__models_image_fail(job, CLT_ERR_UNSUPPORTED,
                                      "a %s image: only PPM/PGM (P6/P5), PNG and JPEG are read",
                                      other);
    char head[3 * 8] = "";
    for (size_t i = 0; i < n && i < 8; i++)
        snprintf(head + strlen(head), sizeof head - strlen(head), "%s%02x", i ? " " : "", d[i]);
    return clt__models_image_fail(job, CLT_ERR_UNSUPPORTED,
                                  "not a PPM/PGM (P6/P5), PNG or JPEG file (it begins with %s)",
                                  head);
}

clt_tensor *clt_image_decode(const void *data, size_t size)
{
    if (!data) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_image_decode", "data is NULL");
        return NULL;
    }
    models_image_job job = {data, size, "clt_image_decode", "the data", NULL};
    return decode(&job) == CLT_OK ? job.image : NULL;
}

/* The whole file at path into *data (malloc'd, which the caller frees) and *size; the error
 * set (naming path) on failure. Reads on until the end, so that pipes work too. */
static clt_status read_file(const char *path, unsigned char **data, size_t *size)
{
    const char *where = "clt_image_read";
    FILE *f = fopen(path, "rb");
    if (!f)
        return clt_set_error(CLT_ERR_IO, where, "%s: cannot be opened: %s", path,
                             strerror(errno));
    size_t cap = 1 << 16, n = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long end = ftell(f);
        rewind(f);
        if (end > CLT_IMAGE_MAX_FILE_BYTES) { /* or a folder, whose first read fails */
            if (fgetc(f) != EOF || !ferror(f)) {
                fclose(f);
                return clt_set_error(CLT_ERR_UNSUPPORTED, where,
                                     "%s: %ld bytes, larger than the limit of %lld", path, end,
                                     (long long)CLT_IMAGE_MAX_FILE_BYTES);
            }
            clearerr(f);
        }
        if (end > 0 && end <= CLT_IMAGE_MAX_FILE_BYTES)
            cap = (size_t)end + 1; /* one more, to see the end on the first read */
    }
    unsigned char *buf = malloc(cap);
    clt_status status = CLT_OK;
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (ferror(f)) {
            status = clt_set_error(CLT_ERR_IO, where, "%s: cannot be read: %s", path,
                                   strerror(errno));
            break;
        }
        if (n > (size_t)CLT_IMAGE_MAX_FILE_BYTES) {
            status = clt_set_error(CLT_ERR_UNSUPPORTED, where,
                                   "%s: larger than the limit of %lld bytes", path,
                                   (long long)CLT_IMAGE_MAX_FILE_BYTES);
            break;
        }
        if (n < cap)
            break;
        unsigned char *more = realloc(buf, cap * 2);
        if (!more)
            free(buf);
        buf = more;
        cap *= 2;
    }
    fclose(f);
    if (!buf && status == CLT_OK)
        status = clt_set_error(CLT_ERR_OUT_OF_MEMORY, where, "%s: no memory for %zu bytes",
                               path, cap);
    if (status != CLT_OK) {
        free(buf);
        return status;
    }
    *data = buf;
    *size = n;
    return CLT_OK;
}

clt_tensor *clt_image_read(const char *path)
{
    if (!path) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_image_read", "path is NULL");
        return NULL;
    }
    unsigned char *data = NULL;
    size_t size = 0;
    if (read_file(path, &data, &size) != CLT_OK)
        return NULL;
    models_image_job job = {data, size, "clt_image_read", path, NULL};
    clt_status status = decode(&job);
    free(data);
    return status == CLT_OK ? job.image : NULL;
}
