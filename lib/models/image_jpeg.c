/* JPEG files decoded by libjpeg into RGB with PIL's settings and conversions: libjpeg's
 * defaults (accurate integer IDCT, fancy upsampling, its colour conversion), grey replicated,
 * CMYK inverted and converted as PIL does. libjpeg's messages are kept off stderr: its errors
 * become the error's text, its warnings about corrupt data are dropped as PIL drops them, and
 * data that ends early is an error. Without libjpeg at build time, JPEG files are refused with
 * CLT_ERR_UNSUPPORTED. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

#ifdef CLT_MODELS_JPEG

#include <jpeglib.h>
#include <jerror.h>

typedef struct jpeg_ctx {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr err;
    struct jpeg_source_mgr src;
    jmp_buf jump;
    models_image_job *job;
    bool created, truncated;
    unsigned char *row; /* one row as libjpeg gives it */
    char message[JMSG_LENGTH_MAX];
} jpeg_ctx;

static void jpeg_fail(j_common_ptr cinfo)
{
    jpeg_ctx *ctx = cinfo->client_data;
    (*cinfo->err->format_message)(cinfo, ctx->message);
    longjmp(ctx->jump, 1);
}

static void jpeg_quiet(j_common_ptr cinfo, int level)
{
    (void)cinfo;
    (void)level;
}

static void jpeg_silent(j_common_ptr cinfo)
{
    (void)cinfo;
}

/* The source is the whole file in memory: asking for more means that it ended early. */
static void jpeg_source_start(j_decompress_ptr cinfo)
{
    (void)cinfo;
}

static boolean jpeg_source_more(j_decompress_ptr cinfo)
{
    ((jpeg_ctx *)cinfo->client_data)->truncated = true;
    ERREXIT(cinfo, JERR_INPUT_EOF);
    return FALSE;
}

static void jpeg_source_skip(j_decompress_ptr cinfo, long n)
{
    struct jpeg_source_mgr *src = cinfo->src;
    if (n <= 0)
        return;
    if ((unsigned long)n > src->bytes_in_buffer)
        jpeg_source_more(cinfo);
    src->next_input_byte += n;
    src->bytes_in_buffer -= (size_t)n;
}

static void jpeg_source_end(j_decompress_ptr cinfo)
{
    (void)cinfo;
}

/* PIL's CMYK to RGB (Convert.c, cmyk2rgb) on a JPEG's CMYK, which PIL reads inverted
 * ("CMYK;I"): with k the file's fourth sample, each colour is k - k * (255 - c) / 255 in PIL's
 * rounding, clipped to 0. */
static void cmyk_to_rgb(const unsigned char *in, unsigned char *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++, in += 4, out += 3) {
        int nk = in[3];
        for (int k = 0; k < 3; k++) {
            int t = (255 - in[k]) * nk + 128;
            int v = nk - (((t >> 8) + t) >> 8);
            out[k] = (unsigned char)(v < 0 ? 0 : v);
        }
    }
}

/* The decoding, between the setjmp and libjpeg's errors' longjmp: only *ctx lives on across
 * the jump. */
static clt_status jpeg_run(jpeg_ctx *ctx)
{
    models_image_job *job = ctx->job;
    struct jpeg_decompress_struct *c = &ctx->cinfo;
    c->err = jpeg_std_error(&ctx->err);
    ctx->err.error_exit = jpeg_fail;
    ctx->err.emit_message = jpeg_quiet;
    ctx->err.output_message = jpeg_silent;
    c->client_data = ctx;
    if (setjmp(ctx->jump)) {
        if (ctx->truncated)
            return clt__models_image_fail(job, CLT_ERR_INVALID_ARGUMENT,
                                          "truncated JPEG: the file ends before the image does");
        return clt__models_image_fail(job, CLT_ERR_INVALID_ARGUMENT, "malformed JPEG: %s",
                                      ctx->message);
    }
    jpeg_create_decompress(c);
    ctx->created = true;
    ctx->src.next_input_byte = job->data;
    ctx->src.bytes_in_buffer = job->size;
    ctx->src.init_source = jpeg_source_start;
    ctx->src.fill_input_buffer = jpeg_source_more;
    ctx->src.skip_input_data = jpeg_source_skip;
    ctx->src.resync_to_restart = jpeg_resync_to_restart;
    ctx->src.term_source = jpeg_source_end;
    c->src = &ctx->src;
    jpeg_read_header(c, TRUE);
    int n = c->num_components;
    if (c->data_precision != 8 || (n != 1 && n != 3 && n != 4))
        return clt__models_image_fail(job, CLT_ERR_UNSUPPORTED,
                                      "a JPEG of %d-bit samples and %d components: PIL reads 8-bit "
                                      "ones of 1, 3 or 4",
                                      c->data_precision, n);
    c->out_color_space = n == 1 ? JCS_GRAYSCALE : n == 3 ? JCS_RGB : JCS_CMYK;
    unsigned char *out = clt__models_image_new(job, "JPEG", c->image_width, c->image_height);
    if (!out)
        return clt_last_status();
    jpeg_start_decompress(c);
    int64_t width = c->output_width;
    if (c->output_width != c->image_width || c->output_height != c->image_height ||
        c->output_components != n)
        return clt__models_image_fail(job, CLT_ERR_INTERNAL,
                                      "libjpeg gives %u x %u pixels of %d samples for "
                                      "%u x %u of %d",
                                      c->output_width, c->output_height, c->output_components,
                                      c->image_width, c->image_height, n);
    ctx->row = malloc((size_t)width * (size_t)n);
    if (!ctx->row)
        return clt__models_image_fail(job, CLT_ERR_OUT_OF_MEMORY, "no memory for a row");
    while (c->output_scanline < c->output_height) {
        unsigned char *dst = out + (size_t)c->output_scanline * (size_t)width * 3;
        JSAMPROW row = ctx->row;
        jpeg_read_scanlines(c, &row, 1);
        if (n == 1)
            for (int64_t x = 0; x < width; x++)
                dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = ctx->row[x];
        else if (n == 3)
            memcpy(dst, ctx->row, (size_t)width * 3);
        else
            cmyk_to_rgb(ctx->row, dst, width);
    }
    return CLT_OK;
}

clt_status clt__models_image_jpeg(models_image_job *job)
{
    jpeg_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return clt__models_image_fail(job, CLT_ERR_OUT_OF_MEMORY, "no memory to decode a JPEG");
    ctx->job = job;
    clt_status status = jpeg_run(ctx);
    if (ctx->created)
        jpeg_destroy_decompress(&ctx->cinfo);
    free(ctx->row);
    free(ctx);
    return clt__models_image_end(job, status);
}

#else

clt_status clt__models_image_jpeg(models_image_job *job)
{
    return clt__models_image_missing(job, "JPEG", "libjpeg");
}

#endif
