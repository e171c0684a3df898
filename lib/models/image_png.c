/* PNG files decoded by libpng into RGB as PIL converts them: every colour type and bit depth,
 * interlaced or not, with libpng's messages kept off stderr (its errors become the error's
 * text, its warnings are dropped, as PIL drops them). Without libpng at build time, PNG files
 * are refused with CLT_ERR_UNSUPPORTED. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"

#ifdef CLT_MODELS_PNG

#include <png.h>

typedef struct png_ctx {
    models_image_job *job;
    png_structp png;
    png_infop info;
    size_t at;          /* the next byte of job->data libpng reads */
    unsigned char *raw; /* rows as libpng gives them (the whole image when interlaced) */
    unsigned char palette[256][3]; /* black past the palette's end, as PIL has it */
    int depth, channels;           /* bits per sample; samples per pixel */
    bool indexed;
    char message[200]; /* libpng's error */
} png_ctx;

static void png_fail(png_structp png, png_const_charp message)
{
    png_ctx *ctx = png_get_error_ptr(png);
    snprintf(ctx->message, sizeof ctx->message, "%s", message);
    png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp message)
{
    (void)png;
    (void)message;
}

static void png_read_data(png_structp png, png_bytep out, size_t n)
{
    png_ctx *ctx = png_get_io_ptr(png);
    if (ctx->job->size - ctx->at < n)
        png_error(png, "truncated: the file ends before the image does");
    memcpy(out, ctx->job->data + ctx->at, n);
    ctx->at += n;
}

/* One row of the file's pixels (packed samples of 1, 2 or 4 bits; 8 bits; 16 bits big-endian)
 * into RGB: grey replicated (1, 2 and 4 bits scaled to 0..255, 16 bits clipped at 255),
 * colours' high bytes, alpha dropped, palette indices looked up. */
static void png_row(const png_ctx *ctx, const unsigned char *in, unsigned char *out,
                    int64_t width)
{
    int depth = ctx->depth, c = ctx->channels;
    if (depth < 8) {
        int mask = (1 << depth) - 1, scale = 255 / mask;
        for (int64_t x = 0; x < width; x++, out += 3) {
            int64_t bit = x * depth;
            int v = (in[bit / 8] >> (8 - depth - bit % 8)) & mask;
            if (ctx->indexed)
                memcpy(out, ctx->palette[v], 3);
            else
                out[0] = out[1] = out[2] = (unsigned char)(v * scale);
        }
        return;
    }
    int b = depth / 8; /* bytes per sample */
    for (int64_t x = 0; x < width; x++, out += 3, in += c * b) {
        if (ctx->indexed) {
            memcpy(out, ctx->palette[in[0]], 3);
        } else if (c >= 3) {
            out[0] = in[0];
            out[1] = in[b];
            out[2] = in[2 * b];
        } else {
            /* 16-bit grey is PIL's I;16, clipped on the way to RGB; grey with alpha keeps the
             * high byte */
            out[0] = (b == 2 && c == 1) ? (in[0] ? 255 : in[1]) : in[0];
            out[1] = out[2] = out[0];
        }
    }
}

/* The decoding, between libpng's setjmp and its errors' longjmp: only *ctx lives on across
 * the jump. */
static clt_status png_run(png_ctx *ctx)
{
    models_image_job *job = ctx->job;
    ctx->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, ctx, png_fail, png_warn);
    ctx->info = ctx->png ? png_create_info_struct(ctx->png) : NULL;
    if (!ctx->info)
        return clt__models_image_fail(job, CLT_ERR_OUT_OF_MEMORY, "libpng could not start");
    if (setjmp(png_jmpbuf(ctx->png)))
        return clt__models_image_fail(job, CLT_ERR_INVALID_ARGUMENT, "malformed PNG: %s",
                                      ctx->message);
    png_set_read_fn(ctx->png, ctx, png_read_data);
    png_set_user_limits(ctx->png, 0x7fffffff, 0x7fffffff); /* the sizes are checked here */
    png_read_info(ctx->png, ctx->info);
    png_uint_32 width, height;
    int type, interlace;
    png_get_IHDR(ctx->png, ctx->info, &width, &height, &ctx->depth, &type, &interlace, NULL,
                 NULL);
    unsigned char *out = clt__models_image_new(job, "PNG", width, height);
    if (!out)
        return clt_last_status();
    ctx->indexed = type == PNG_COLOR_TYPE_PALETTE;
    ctx->channels = png_get_channels(ctx->png, ctx->info);
    png_colorp plte;
    int entries = 0;
    if (ctx->indexed && png_get_PLTE(ctx->png, ctx->info, &plte, &entries))
        for (int i = 0; i < entries && i < 256; i++)
            memcpy(ctx->palette[i], &plte[i], 3);
    int passes = png_set_interlace_handling(ctx->png);
    png_read_update_info(ctx->png, ctx->info);
    size_t row_bytes = png_get_rowbytes(ctx->png, ctx->info);
    ctx->raw = calloc(passes > 1 ? height : 1, row_bytes);
    if (!ctx->raw)
        return clt__models_image_fail(job, CLT_ERR_OUT_OF_MEMORY,
                                      "no memory for the PNG's rows");
    for (int pass = 0; pass < passes; pass++) {
        for (png_uint_32 y = 0; y < height; y++) {
            unsigned char *row = ctx->raw + (passes > 1 ? row_bytes * y : 0);
            png_read_row(ctx->png, row, NULL);
            if (passes == 1)
                png_row(ctx, row, out + (size_t)y * width * 3, width);
        }
    }
    for (png_uint_32 y = 0; passes > 1 && y < height; y++)
        png_row(ctx, ctx->raw + row_bytes * y, out + (size_t)y * width * 3, width);
    return CLT_OK;
}

clt_status clt__models_image_png(models_image_job *job)
{
    png_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return clt__models_image_fail(job, CLT_ERR_OUT_OF_MEMORY, "no memory to decode a PNG");
    ctx->job = job;
    clt_status status = png_run(ctx);
    png_destroy_read_struct(&ctx->png, &ctx->info, NULL);
    free(ctx->raw);
    free(ctx);
    return clt__models_image_end(job, status);
}

#else

clt_status clt__models_image_png(models_image_job *job)
{
    return clt__models_image_missing(job, "PNG", "libpng");
}

#endif
