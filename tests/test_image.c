/* The image suite: reading PPM/PGM, PNG and JPEG files (include/cltensor/models/image.h)
 * gives exactly PIL's pixels, and the preprocessing exactly torchvision's values on PIL images,
 * against tests/reference/image_reference.safetensors (tests/reference/make_image_reference.py
 * wrote it and the images in tests/data/images with Pillow and torchvision); hostile files
 * (truncated, corrupt, of zero or huge sizes, of other formats) and bad arguments get clean
 * errors naming the function, the file and the cause, and print nothing. A build without
 * libpng or libjpeg refuses those formats, which the tests check, saying on stdout which
 * comparisons did not run. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltensor/models/image.h"
#include "helpers.h"

#define IMAGE(name) CLT_TEST_DATA_DIR "/images/" name
#define REFERENCE CLT_TEST_REFERENCE_DIR "/image_reference.safetensors"

static void load_reference(clt_safetensors *st)
{
    ck_assert_msg(clt_safetensors_load(REFERENCE, NULL, st) == CLT_OK, "%s", clt_last_error());
}

static clt_tensor *ref(const clt_safetensors *st, const char *name)
{
    clt_tensor *t = clt_safetensors_get(st, name);
    ck_assert_msg(t != NULL, "the reference has no \"%s\"", name);
    return t;
}

/* Whether this build reads the suite's file `name` (whose extension names its format); where
 * it does not, says so on stdout (once per format and process). */
static bool readable(const char *name)
{
    static bool said[2];
    const char *dot = strrchr(name, '.');
    bool png = dot && !strcmp(dot, ".png"), jpeg = dot && !strcmp(dot, ".jpg");
    if (!png && !jpeg)
        return true;
    if (clt_image_format_available(png ? CLT_IMAGE_PNG : CLT_IMAGE_JPEG))
        return true;
    if (!said[png]) {
        printf("image: %s files not compared with PIL: this build has no %s (only its refusal "
               "is tested)\n",
               png ? "PNG" : "JPEG", png ? "libpng" : "libjpeg");
        said[png] = true;
    }
    return false;
}

/* A build without the format's library refuses the file, naming the package. */
static void assert_refused_format(clt_tensor *t, const char *name)
{
    bool png = strstr(name, ".png") != NULL;
    ck_assert_msg(t == NULL, "%s was read without %s", name, png ? "libpng" : "libjpeg");
    ck_assert_int_eq(clt_last_status(), CLT_ERR_UNSUPPORTED);
    ck_assert_error_has(png ? "without libpng (Debian: apt-get install libpng-dev"
                            : "without libjpeg (Debian: apt-get install libjpeg-dev");
}

/* Asserts that got (u8 (H, W, 3)) holds want's pixels: want is (H, W, 3), or (H, W, 1) for a
 * grey image, whose one channel each of got's three must equal. On a difference, names the
 * count of samples that differ and the largest difference. */
static void assert_pixels(clt_tensor *got, clt_tensor *want, const char *what)
{
    ck_assert_msg(got != NULL, "%s: %s", what, clt_last_error());
    ck_assert_int_eq(clt_tensor_dtype(got), CLT_U8);
    const int64_t *g = clt_tensor_shape(got), *w = clt_tensor_shape(want);
    int64_t wc = w[2];
    ck_assert_msg(clt_tensor_ndim(got) == 3 && g[0] == w[0] && g[1] == w[1] &&
                      g[2] == (wc == 1 ? 3 : wc),
                  "%s: shape (%lld, %lld, %lld), PIL's (%lld, %lld, %lld)", what,
                  (long long)g[0], (long long)g[1], (long long)g[2], (long long)w[0],
                  (long long)w[1], (long long)wc);
    const uint8_t *a = clt_tensor_data(got), *b = clt_tensor_data(want);
    int64_t differ = 0, largest = 0, pixels = g[0] * g[1];
    for (int64_t i = 0; i < pixels * g[2]; i++) {
        int64_t d = llabs((long long)a[i] - b[wc == 1 ? i / 3 : i]);
        differ += d != 0;
        largest = d > largest ? d : largest;
    }
    ck_assert_msg(differ == 0, "%s: %lld of %lld samples differ from PIL's, by up to %lld",
                  what, (long long)differ, (long long)(pixels * g[2]), (long long)largest);
}

/* The whole file at path, malloc'd; *size its length. */
static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s cannot be opened", path);
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *size = n;
    return buf;
}

/* Writes size bytes into the file dir/name and returns its path (valid until the next call). */
static const char *write_bytes(const char *name, const void *data, size_t size)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_temp_dir(), name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, size, f), size);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* The image of the suite's file `name`, asserting success. */
static clt_tensor *read_image(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/images/%s", CLT_TEST_DATA_DIR, name);
    clt_tensor *t = clt_image_read(path);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    return t;
}

/* --- decoding ----------------------------------------------------------------------------- */

START_TEST(test_image_formats)
{
    ck_assert(clt_image_format_available(CLT_IMAGE_PPM));
    ck_assert(!clt_image_format_available((clt_image_format)0));
    ck_assert(!clt_image_format_available((clt_image_format)99));
    printf("image: this build reads PPM%s%s\n",
           clt_image_format_available(CLT_IMAGE_PNG) ? ", PNG" : "",
           clt_image_format_available(CLT_IMAGE_JPEG) ? ", JPEG" : "");
}
END_TEST

/* Every small file of the suite decodes to PIL's pixels, from its path and from memory. */
START_TEST(test_image_decode)
{
    clt_safetensors st;
    load_reference(&st);
    int compared = 0;
    for (int i = 0; i < st.count; i++) {
        const char *key = st.tensors[i].name;
        if (strncmp(key, "decode:", 7) != 0)
            continue;
        const char *name = key + 7;
        char path[1024];
        snprintf(path, sizeof path, "%s/images/%s", CLT_TEST_DATA_DIR, name);
        clt_tensor *img = clt_image_read(path);
        if (!readable(name)) {
            assert_refused_format(img, name);
            continue;
        }
        assert_pixels(img, st.tensors[i].tensor, name);
        size_t size;
        unsigned char *bytes = slurp(path, &size);
        clt_tensor *again = clt_image_decode(bytes, size);
        free(bytes);
        test_assert_same_bytes(again, img);
        clt_tensor_release(again);
        clt_tensor_release(img);
        compared++;
    }
    ck_assert_int_ge(compared, 2); /* the PPM and PGM files at least */
    clt_safetensors_clear(&st);
}
END_TEST

/* The FNV-1a 64-bit hash of n bytes, as the reference script computes it. */
static uint64_t fnv1a64(const uint8_t *p, int64_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (int64_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

/* The 640 x 480 photo as PNG, baseline JPEG and progressive JPEG: PIL's pixels (by hash). */
START_TEST(test_image_decode_photo)
{
    clt_safetensors st;
    load_reference(&st);
    const char *names[] = {"photo.png", "photo.jpg", "photo_progressive.jpg"};
    for (int i = 0; i < 3; i++) {
        char key[64], hash[17];
        snprintf(key, sizeof key, "fnv1a64:%s", names[i]);
        const char *want = clt_safetensors_metadata_get(&st, key);
        ck_assert_ptr_nonnull(want);
        clt_tensor *img = clt_image_read(i == 0   ? IMAGE("photo.png")
                                         : i == 1 ? IMAGE("photo.jpg")
                                                  : IMAGE("photo_progressive.jpg"));
        if (!readable(names[i])) {
            assert_refused_format(img, names[i]);
            continue;
        }
        ck_assert_msg(img != NULL, "%s", clt_last_error());
        ck_assert_int_eq(clt_tensor_size(img, 0), 480);
        ck_assert_int_eq(clt_tensor_size(img, 1), 640);
        ck_assert_int_eq(clt_tensor_size(img, 2), 3);
        snprintf(hash, sizeof hash, "%016" PRIx64,
                 fnv1a64(clt_tensor_data(img), clt_tensor_numel(img)));
        ck_assert_msg(!strcmp(hash, want), "%s: the pixels' hash %s is not PIL's %s", names[i],
                      hash, want);
        clt_tensor_release(img);
    }
    clt_safetensors_clear(&st);
}
END_TEST

/* --- preprocessing ------------------------------------------------------------------------ */

/* Asserts that got holds want's f32 values within tol, naming how many differ at all. */
static void assert_floats(clt_tensor *got, clt_tensor *want, double tol, const char *what)
{
    ck_assert_msg(got != NULL, "%s: %s", what, clt_last_error());
    ck_assert_int_eq(clt_tensor_dtype(got), CLT_F32);
    ck_assert_int_eq(clt_tensor_ndim(got), clt_tensor_ndim(want));
    for (int d = 0; d < clt_tensor_ndim(want); d++)
        ck_assert_int_eq(clt_tensor_size(got, d), clt_tensor_size(want, d));
    const float *a = clt_tensor_data(got), *b = clt_tensor_data(want);
    int64_t n = clt_tensor_numel(want), differ = 0;
    double largest = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        differ += a[i] != b[i];
        largest = d > largest ? d : largest;
    }
    ck_assert_msg(largest <= tol,
                  "%s: %lld of %lld values differ from torchvision's, by up to %g", what,
                  (long long)differ, (long long)n, largest);
}

/* Resize(256), CenterCrop(224), ToTensor and Normalize on the 640 x 480 photo: torchvision's
 * pixels and values. */
START_TEST(test_image_imagenet)
{
    if (!readable("photo.png"))
        return;
    clt_safetensors st;
    load_reference(&st);
    clt_tensor *img = read_image("photo.png");
    clt_tensor *resized = clt_image_resize_shorter(img, 256, 0, CLT_IMAGE_BILINEAR);
    assert_pixels(resized, ref(&st, "imagenet.resize"), "Resize(256)");
    const char *at = clt_safetensors_metadata_get(&st, "imagenet.crop");
    long long top, left;
    ck_assert_msg(at && sscanf(at, "%lld %lld", &top, &left) == 2, "imagenet.crop: %s", at);
    clt_tensor *cropped = clt_image_center_crop(resized, 224, 224);
    ck_assert_msg(cropped != NULL, "%s", clt_last_error());
    const uint8_t *c = clt_tensor_data(cropped);
    const uint8_t *r = clt_tensor_data(ref(&st, "imagenet.resize"));
    for (int64_t y = 0; y < 224; y++)
        ck_assert_msg(!memcmp(c + y * 224 * 3, r + ((top + y) * 341 + left) * 3, 224 * 3),
                      "CenterCrop(224): row %lld is not torchvision's", (long long)y);
    clt_tensor *x = clt_image_imagenet(img);
    assert_floats(x, ref(&st, "imagenet.tensor"), 1e-6, "the ImageNet transform");
    /* the same, step by step */
    static const double mean[3] = {0.485, 0.456, 0.406}, std[3] = {0.229, 0.224, 0.225};
    clt_tensor *t = clt_image_to_tensor(cropped);
    clt_tensor *normalized = clt_image_normalize(t, mean, std, 3);
    test_assert_same_bytes(normalized, x);
    clt_tensor *all[] = {img, resized, cropped, x, t, normalized};
    TEST_RELEASE_ALL(all);
    clt_safetensors_clear(&st);
}
END_TEST

/* Every resize of the reference: PIL's pixels, each filter, shrinking and enlarging, one side
 * or both, down to one pixel. */
START_TEST(test_image_resize)
{
    static const struct {
        const char *name, *source;
        int64_t height, width, shorter, max_size; /* shorter > 0: Resize(shorter, max_size) */
        clt_image_filter filter;
    } cases[] = {
        {"shorter40", "small.png", 0, 0, 40, 0, CLT_IMAGE_BILINEAR},
        {"shorter40_max50", "small.png", 0, 0, 40, 50, CLT_IMAGE_BILINEAR},
        {"h29_w120", "small.png", 29, 120, 0, 0, CLT_IMAGE_BILINEAR},
        {"h5_w80", "small.png", 5, 80, 0, 0, CLT_IMAGE_BILINEAR},
        {"order_tie", "small.png", 41, 73, 0, 0, CLT_IMAGE_BILINEAR},
        {"order_vertical", "small.png", 39, 73, 0, 0, CLT_IMAGE_BILINEAR},
        {"width_only", "small.png", 61, 30, 0, 0, CLT_IMAGE_BILINEAR},
        {"height_only", "small.png", 20, 83, 0, 0, CLT_IMAGE_BILINEAR},
        {"one_pixel", "small.png", 1, 1, 0, 0, CLT_IMAGE_BILINEAR},
        {"column", "small.png", 5, 1, 0, 0, CLT_IMAGE_BILINEAR},
        {"nearest", "small.png", 25, 37, 0, 0, CLT_IMAGE_NEAREST},
        {"nearest_up", "photo.ppm", 53, 71, 0, 0, CLT_IMAGE_NEAREST},
        {"bicubic", "small.png", 30, 41, 0, 0, CLT_IMAGE_BICUBIC},
        {"bicubic_up", "photo.ppm", 61, 83, 0, 0, CLT_IMAGE_BICUBIC},
        {"box", "small.png", 30, 41, 0, 0, CLT_IMAGE_BOX},
        {"hamming", "small.png", 30, 41, 0, 0, CLT_IMAGE_HAMMING},
        {"lanczos", "small.png", 30, 41, 0, 0, CLT_IMAGE_LANCZOS},
        {"lanczos_up", "photo.ppm", 57, 77, 0, 0, CLT_IMAGE_LANCZOS},
        {"shorter60_up", "photo.ppm", 0, 0, 60, 0, CLT_IMAGE_BILINEAR},
        {"tall", "grey.pgm", 171, 7, 0, 0, CLT_IMAGE_BILINEAR},
    };
    clt_safetensors st;
    load_reference(&st);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (!readable(cases[i].source))
            continue;
        char key[64];
        snprintf(key, sizeof key, "resize:%s", cases[i].name);
        clt_tensor *img = read_image(cases[i].source);
        clt_tensor *out =
            cases[i].shorter > 0
                ? clt_image_resize_shorter(img, cases[i].shorter, cases[i].max_size,
                                           cases[i].filter)
                : clt_image_resize(img, cases[i].height, cases[i].width, cases[i].filter);
        assert_pixels(out, ref(&st, key), key);
        clt_tensor_release(out);
        clt_tensor_release(img);
    }
    clt_safetensors_clear(&st);
}
END_TEST

/* The channels are resampled each on its own, whatever their number and the image's strides;
 * an unchanged size gives the image itself. */
START_TEST(test_image_resize_layouts)
{
    clt_tensor *rgb = read_image("photo.ppm");
    clt_tensor *want = clt_image_resize(rgb, 30, 41, CLT_IMAGE_BICUBIC);
    ck_assert_ptr_nonnull(want);
    const uint8_t *w = clt_tensor_data(want);
    clt_tensor *green = clt_narrow(rgb, 2, 1, 1), *red = clt_narrow(rgb, 2, 0, 1);
    clt_tensor *parts[] = {rgb, red};
    clt_tensor *four = clt_cat(parts, 2, 2);
    /* the same pixels stored column by column, seen through a strided view */
    clt_tensor *columns = clt_transpose(rgb, 0, 1), *flipped = clt_contiguous(columns);
    clt_tensor *strided = clt_transpose(flipped, 0, 1);
    ck_assert(!clt_tensor_is_contiguous(green) && !clt_tensor_is_contiguous(strided));
    clt_tensor *g = clt_image_resize(green, 30, 41, CLT_IMAGE_BICUBIC);
    clt_tensor *f = clt_image_resize(four, 30, 41, CLT_IMAGE_BICUBIC);
    clt_tensor *s = clt_image_resize(strided, 30, 41, CLT_IMAGE_BICUBIC);
    ck_assert(g && f && s);
    ck_assert_int_eq(clt_tensor_size(g, 2), 1);
    ck_assert_int_eq(clt_tensor_size(f, 2), 4);
    const uint8_t *gp = clt_tensor_data(g), *fp = clt_tensor_data(f);
    for (int64_t i = 0; i < 30 * 41; i++) {
        ck_assert_int_eq(gp[i], w[3 * i + 1]);
        for (int c = 0; c < 3; c++)
            ck_assert_int_eq(fp[4 * i + c], w[3 * i + c]);
        ck_assert_int_eq(fp[4 * i + 3], w[3 * i]);
    }
    test_assert_same_bytes(s, want);
    clt_tensor *same = clt_image_resize(rgb, 48, 64, CLT_IMAGE_LANCZOS);
    ck_assert_ptr_eq(same, rgb);
    clt_tensor_release(same);
    clt_tensor *all[] = {rgb, want, green, red, four, columns, flipped, strided, g, f, s};
    TEST_RELEASE_ALL(all);
}
END_TEST

/* CenterCrop: torchvision's offsets (halves rounded to even) and zero padding. */
START_TEST(test_image_center_crop)
{
    static const struct {
        const char *name;
        int64_t height, width;
    } cases[] = {{"even_odd", 31, 33},
                 {"half_down", 45, 59},
                 {"padded_height", 55, 40},
                 {"padded_both", 51, 67}};
    clt_safetensors st;
    load_reference(&st);
    clt_tensor *img = read_image("photo.ppm");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char key[64];
        snprintf(key, sizeof key, "crop:%s", cases[i].name);
        clt_tensor *out = clt_image_center_crop(img, cases[i].height, cases[i].width);
        assert_pixels(out, ref(&st, key), key);
        clt_tensor_release(out);
    }
    clt_tensor *whole = clt_image_center_crop(img, 48, 64);
    test_assert_same_bytes(whole, img);
    clt_tensor_release(whole);
    clt_tensor_release(img);
    clt_safetensors_clear(&st);
}
END_TEST

/* ToTensor and Normalize with other means and stds, on (C, H, W) and (N, C, H, W). */
START_TEST(test_image_to_tensor_normalize)
{
    if (!readable("small.png"))
        return;
    clt_safetensors st;
    load_reference(&st);
    clt_tensor *img = read_image("small.png");
    clt_tensor *crop = clt_image_center_crop(img, 16, 16);
    clt_tensor *x = clt_image_to_tensor(crop);
    assert_floats(x, ref(&st, "to_tensor.small"), 0, "ToTensor");
    static const double mean[3] = {0.5, 0.25, 0.125}, std[3] = {0.2, 0.3, 0.7};
    clt_tensor *y = clt_image_normalize(x, mean, std, 3);
    assert_floats(y, ref(&st, "normalize.small"), 1e-6, "Normalize");
    clt_tensor *pair[] = {x, x};
    clt_tensor *batch = clt_stack(pair, 2, 0);
    clt_tensor *yb = clt_image_normalize(batch, mean, std, 3);
    ck_assert_ptr_nonnull(yb);
    ck_assert_int_eq(clt_tensor_ndim(yb), 4);
    const float *a = clt_tensor_data(yb), *b = clt_tensor_data(y);
    ck_assert(!memcmp(a, b, 3 * 16 * 16 * sizeof *a) &&
              !memcmp(a + 3 * 16 * 16, b, 3 * 16 * 16 * sizeof *a));
    clt_tensor *all[] = {img, crop, x, y, batch, yb};
    TEST_RELEASE_ALL(all);
    clt_safetensors_clear(&st);
}
END_TEST

/* --- errors and hostile files ------------------------------------------------------------- */

/* Asserts that t is NULL with `status` and a message holding each of the texts (up to 3). */
static void assert_error(clt_tensor *t, clt_status status, const char *a, const char *b,
                         const char *c)
{
    ck_assert_msg(t == NULL, "expected an error with \"%s\"", a);
    ck_assert_msg(clt_last_status() == status, "%s, not %s: %s",
                  clt_status_name(clt_last_status()), clt_status_name(status), clt_last_error());
    const char *texts[] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (texts[i])
            ck_assert_error_has(texts[i]);
}

/* clt_image_decode of a string's bytes. */
static clt_tensor *decode_text(const char *text)
{
    return clt_image_decode(text, strlen(text));
}

START_TEST(test_image_read_errors)
{
    assert_error(clt_image_read(NULL), CLT_ERR_INVALID_ARGUMENT, "clt_image_read: path is NULL",
                 NULL, NULL);
    assert_error(clt_image_decode(NULL, 3), CLT_ERR_INVALID_ARGUMENT,
                 "clt_image_decode: data is NULL", NULL, NULL);
    char missing[1024];
    snprintf(missing, sizeof missing, "%s/none.png", test_temp_dir());
    assert_error(clt_image_read(missing), CLT_ERR_IO, "clt_image_read: ", missing,
                 "cannot be opened");
    /* a folder: POSIX opens it and fails the read, Windows fails the open */
#ifdef _WIN32
    assert_error(clt_image_read(test_temp_dir()), CLT_ERR_IO, test_temp_dir(),
                 "cannot be opened", NULL);
#else
    assert_error(clt_image_read(test_temp_dir()), CLT_ERR_IO, test_temp_dir(), "cannot be read",
                 NULL);
#endif
    const char *empty = write_bytes("empty.jpg", "", 0);
    assert_error(clt_image_read(empty), CLT_ERR_INVALID_ARGUMENT, empty, "empty", NULL);
    /* the format comes from the bytes, not the name */
    const char *gif = write_bytes("photo.png", "GIF89a\1\0\1\0", 10);
    assert_error(clt_image_read(gif), CLT_ERR_UNSUPPORTED, gif, "a GIF image",
                 "only PPM/PGM (P6/P5), PNG and JPEG are read");
    assert_error(decode_text("BM6\0"), CLT_ERR_UNSUPPORTED, "clt_image_decode: the data: a BMP",
                 NULL, NULL);
    assert_error(clt_image_decode("RIFF\1\0\0\0WEBPVP8 ", 16), CLT_ERR_UNSUPPORTED, "a WebP",
                 NULL, NULL);
    assert_error(decode_text("P3 1 1 255 0 0 0"), CLT_ERR_UNSUPPORTED, "ASCII PBM, PGM or PPM",
                 NULL, NULL);
    assert_error(decode_text("hello, world"), CLT_ERR_UNSUPPORTED,
                 "not a PPM/PGM (P6/P5), PNG or JPEG file (it begins with 68 65 6c 6c 6f 2c "
                 "20 77)",
                 NULL, NULL);
    /* a PPM named .jpg is read as the PPM it is */
    const char *ppm = write_bytes("ppm.jpg", "P6 2 1 255\nabcdef", 17);
    clt_tensor *img = clt_image_read(ppm);
    ck_assert_msg(img != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_size(img, 1), 2);
    ck_assert(!memcmp(clt_tensor_data(img), "abcdef", 6));
    clt_tensor_release(img);
}
END_TEST

START_TEST(test_image_ppm_errors)
{
    assert_error(decode_text("P6 2 1 255\nabcde"), CLT_ERR_INVALID_ARGUMENT,
                 "truncated PPM: 5 bytes of pixels where 2 x 1 need 6", NULL, NULL);
    assert_error(decode_text("P5 3 2 255\n"), CLT_ERR_INVALID_ARGUMENT, "truncated PGM", NULL,
                 NULL);
    assert_error(decode_text("P6 2 1"), CLT_ERR_INVALID_ARGUMENT, "malformed PPM header", NULL,
                 NULL);
    assert_error(decode_text("P6 2 x 255\n"), CLT_ERR_INVALID_ARGUMENT, "malformed PPM header",
                 NULL, NULL);
    assert_error(decode_text("P6 2 1 65535\n"), CLT_ERR_UNSUPPORTED,
                 "PPM maxval 65535: only 255 is read", NULL, NULL);
    assert_error(decode_text("P5 2 1 0\n"), CLT_ERR_INVALID_ARGUMENT, "PGM maxval 0", NULL,
                 NULL);
    assert_error(decode_text("P6 0 5 255\n"), CLT_ERR_INVALID_ARGUMENT,
                 "the data: a PPM of 5 x 0 (height x width): below 1", NULL, NULL);
    assert_error(decode_text("P6 100000 100000 255\n"), CLT_ERR_UNSUPPORTED,
                 "a PPM of 100000 x 100000 (height x width): larger than the limit", NULL, NULL);
    assert_error(decode_text("P5 65535 65535 255\n"), CLT_ERR_UNSUPPORTED,
                 "larger than the limit (65535 pixels a side, 134217728 in all)", NULL, NULL);
    assert_error(decode_text("P6 99999999999999999999 1 255\n"), CLT_ERR_UNSUPPORTED,
                 "1 x 1000000000 (height x width)", NULL, NULL);
    /* comments anywhere in the header; one whitespace byte before the pixels, whatever it is */
    clt_tensor *img = decode_text("P5\n#c\n 3 #w\n1\n#m\n255\t\n\t ");
    ck_assert_msg(img != NULL, "%s", clt_last_error());
    ck_assert(!memcmp(clt_tensor_data(img), "\n\n\n\t\t\t   ", 9));
    clt_tensor_release(img);
}
END_TEST

/* The CRC of a PNG chunk's type and data. */
static uint32_t png_crc(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xffffffffu;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* A copy of a PNG with its IHDR's width and height replaced (the CRC made right). */
static clt_tensor *png_with_size(const uint8_t *png, size_t size, uint32_t w, uint32_t h)
{
    uint8_t *copy = malloc(size);
    memcpy(copy, png, size);
    put32(copy + 16, w);
    put32(copy + 20, h);
    put32(copy + 29, png_crc(copy + 12, 17));
    clt_tensor *t = clt_image_decode(copy, size);
    free(copy);
    return t;
}

START_TEST(test_image_png_errors)
{
    if (!readable("small.png"))
        return;
    size_t size;
    uint8_t *png = slurp(IMAGE("small.png"), &size);
    ck_assert(!memcmp(png + 12, "IHDR", 4));
    assert_error(clt_image_decode(png, 8), CLT_ERR_INVALID_ARGUMENT,
                 "clt_image_decode: the data: malformed PNG: truncated: the file ends before "
                 "the image does",
                 NULL, NULL);
    assert_error(clt_image_decode(png, size / 2), CLT_ERR_INVALID_ARGUMENT, "truncated", NULL,
                 NULL);
    assert_error(png_with_size(png, size, 0, 61), CLT_ERR_INVALID_ARGUMENT, "malformed PNG",
                 "Invalid IHDR data", NULL);
    assert_error(png_with_size(png, size, 100000, 100000), CLT_ERR_UNSUPPORTED,
                 "a PNG of 100000 x 100000 (height x width): larger than the limit", NULL, NULL);
    assert_error(png_with_size(png, size, 0x80000000u, 1), CLT_ERR_INVALID_ARGUMENT,
                 "malformed PNG", NULL, NULL);
    /* more rows than the data holds */
    assert_error(png_with_size(png, size, 83, 500), CLT_ERR_INVALID_ARGUMENT, "malformed PNG",
                 NULL, NULL);
    /* a damaged IHDR (its CRC wrong) and damaged image data */
    png[17] ^= 1;
    assert_error(clt_image_decode(png, size), CLT_ERR_INVALID_ARGUMENT, "malformed PNG", "CRC",
                 NULL);
    png[17] ^= 1;
    png[size / 2] ^= 0x40;
    assert_error(clt_image_decode(png, size), CLT_ERR_INVALID_ARGUMENT, "malformed PNG", NULL,
                 NULL);
    free(png);
}
END_TEST

/* The offset of the first start-of-frame marker (FF C0 to FF C2) of a JPEG. */
static size_t jpeg_sof(const uint8_t *jpeg, size_t size)
{
    for (size_t i = 2; i + 9 < size; i++)
        if (jpeg[i] == 0xff && jpeg[i + 1] >= 0xc0 && jpeg[i + 1] <= 0xc2)
            return i;
    ck_abort_msg("no start of frame");
    return 0;
}

START_TEST(test_image_jpeg_errors)
{
    if (!readable("small_444.jpg"))
        return;
    size_t size;
    uint8_t *jpeg = slurp(IMAGE("small_444.jpg"), &size);
    size_t sof = jpeg_sof(jpeg, size);
    assert_error(clt_image_decode(jpeg, sof), CLT_ERR_INVALID_ARGUMENT,
                 "clt_image_decode: the data: truncated JPEG: the file ends before the image "
                 "does",
                 NULL, NULL);
    assert_error(clt_image_decode(jpeg, size * 3 / 4), CLT_ERR_INVALID_ARGUMENT,
                 "truncated JPEG", NULL, NULL);
    uint8_t *copy = malloc(size);
    memcpy(copy, jpeg, size);
    copy[sof + 5] = copy[sof + 6] = 0; /* height 0 */
    assert_error(clt_image_decode(copy, size), CLT_ERR_INVALID_ARGUMENT, "malformed JPEG",
                 "Empty JPEG image", NULL);
    copy[sof + 5] = copy[sof + 7] = 0xff, copy[sof + 6] = copy[sof + 8] = 0xdc; /* 65500 */
    assert_error(clt_image_decode(copy, size), CLT_ERR_UNSUPPORTED,
                 "a JPEG of 65500 x 65500 (height x width): larger than the limit", NULL, NULL);
    memcpy(copy, jpeg, size);
    copy[sof + 4] = 12; /* 12-bit samples */
    clt_tensor *t = clt_image_decode(copy, size);
    ck_assert(t == NULL && (clt_last_status() == CLT_ERR_UNSUPPORTED ||
                            clt_last_status() == CLT_ERR_INVALID_ARGUMENT));
    ck_assert_error_has("12");
    memcpy(copy, jpeg, size);
    copy[3] ^= 0x0f;                                  /* not an APPn marker any more */
    clt_tensor_release(clt_image_decode(copy, size)); /* either way: nothing printed */
    free(copy);
    free(jpeg);
}
END_TEST

/* Every file cut short at many lengths and damaged at many bytes: an image of the right size
 * or an error naming the data, never a crash, a leak or output (valgrind and the suite's stderr
 * check watch); cut inside its pixels, always an error. */
START_TEST(test_image_hostile)
{
    static const char *names[] = {"small.png",     "interlaced.png",
                                  "palette4.png",  "grey_alpha16.png",
                                  "small_420.jpg", "small_422_progressive.jpg",
                                  "cmyk.jpg",      "photo.ppm"};
    for (size_t f = 0; f < sizeof names / sizeof *names; f++) {
        if (!readable(names[f]))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/images/%s", CLT_TEST_DATA_DIR, names[f]);
        size_t size;
        uint8_t *data = slurp(path, &size);
        clt_tensor *whole = clt_image_decode(data, size);
        ck_assert_msg(whole != NULL, "%s: %s", names[f], clt_last_error());
        int64_t h = clt_tensor_size(whole, 0), w = clt_tensor_size(whole, 1);
        size_t step = size / 61 + 1;
        for (size_t n = 0; n < size; n += step) {
            clt_tensor *t = clt_image_decode(data, n);
            if (n <= size / 2)
                ck_assert_msg(t == NULL, "%s cut to %zu bytes was read", names[f], n);
            if (t == NULL)
                ck_assert_error_has("clt_image_decode: the data: ");
            else
                ck_assert(clt_tensor_size(t, 0) == h && clt_tensor_size(t, 1) == w);
            clt_tensor_release(t);
        }
        uint8_t *bad = malloc(size);
        for (size_t at = 0; at < size; at += step) {
            memcpy(bad, data, size);
            bad[at] ^= (uint8_t)(0x5a + at);
            clt_tensor *t = clt_image_decode(bad, size);
            if (t == NULL)
                ck_assert_error_has("clt_image_decode: the data: ");
            clt_tensor_release(t);
        }
        free(bad);
        free(data);
        clt_tensor_release(whole);
    }
}
END_TEST

START_TEST(test_image_transform_errors)
{
    clt_tensor *img = read_image("photo.ppm");
    assert_error(clt_image_resize(NULL, 2, 2, CLT_IMAGE_BILINEAR), CLT_ERR_INVALID_ARGUMENT,
                 "clt_image_resize: img is NULL", NULL, NULL);
    assert_error(clt_image_resize(img, 2, 2, (clt_image_filter)6), CLT_ERR_INVALID_ARGUMENT,
                 "clt_image_resize: filter 6 is none of", NULL, NULL);
    assert_error(clt_image_resize(img, 0, 2, CLT_IMAGE_BILINEAR), CLT_ERR_SHAPE,
                 "clt_image_resize: the size 0 x 2 (height x width): below 1", NULL, NULL);
    assert_error(clt_image_resize(img, 70000, 2, CLT_IMAGE_NEAREST), CLT_ERR_UNSUPPORTED,
                 "the size 70000 x 2 (height x width): larger than the limit", NULL, NULL);
    assert_error(clt_image_resize(img, 20000, 20000, CLT_IMAGE_BOX), CLT_ERR_UNSUPPORTED,
                 "larger than the limit", NULL, NULL);
    assert_error(clt_image_resize_shorter(img, 0, 0, CLT_IMAGE_BILINEAR), CLT_ERR_SHAPE,
                 "clt_image_resize_shorter: size 0 is not from 1 to 65535", NULL, NULL);
    assert_error(clt_image_resize_shorter(img, 64, 64, CLT_IMAGE_BILINEAR),
                 CLT_ERR_INVALID_ARGUMENT, "max_size 64 is not above size 64", NULL, NULL);
    assert_error(clt_image_center_crop(img, 5, -1), CLT_ERR_SHAPE,
                 "clt_image_center_crop: the crop 5 x -1", NULL, NULL);
    clt_tensor *f = clt_image_to_tensor(img),
               *flat = clt_tensor_zeros(CLT_SHAPE(4, 4), CLT_U8, NULL);
    clt_tensor *none = clt_tensor_zeros(CLT_SHAPE(0, 4, 3), CLT_U8, NULL);
    assert_error(clt_image_center_crop(f, 2, 2), CLT_ERR_DTYPE,
                 "clt_image_center_crop: img is f32, not u8", NULL, NULL);
    assert_error(clt_image_to_tensor(flat), CLT_ERR_SHAPE,
                 "clt_image_to_tensor: img has shape (4, 4), not (height, width, channels)",
                 NULL, NULL);
    assert_error(clt_image_resize(none, 2, 2, CLT_IMAGE_BILINEAR), CLT_ERR_SHAPE,
                 "img has shape (0, 4, 3)", NULL, NULL);
    clt_tensor *tall = clt_tensor_zeros(CLT_SHAPE(70000, 1, 1), CLT_U8, NULL);
    assert_error(clt_image_to_tensor(tall), CLT_ERR_UNSUPPORTED,
                 "clt_image_to_tensor: img 70000 x 1 (height x width): larger than the limit",
                 NULL, NULL);
    static const double mean[3] = {0.5, 0.5, 0.5}, std[3] = {0.5, 1e-50, 0.5};
    assert_error(clt_image_normalize(f, mean, std, 3), CLT_ERR_INVALID_ARGUMENT,
                 "clt_image_normalize: std[1] = 1e-50 is 0 in f32", NULL, NULL);
    assert_error(clt_image_normalize(f, mean, mean, 2), CLT_ERR_INVALID_ARGUMENT,
                 "2 means and stds for 3 channels", NULL, NULL);
    assert_error(clt_image_normalize(img, mean, mean, 3), CLT_ERR_DTYPE, "x is u8, not f32",
                 NULL, NULL);
    assert_error(clt_image_normalize(f, NULL, mean, 3), CLT_ERR_INVALID_ARGUMENT,
                 "mean is NULL", NULL, NULL);
    clt_tensor *row = clt_narrow(f, 0, 0, 1), *plane = clt_squeeze(row, 0);
    assert_error(clt_image_normalize(plane, mean, mean, 3), CLT_ERR_SHAPE, "x has 2 dimensions",
                 NULL, NULL);
    clt_tensor *grey = clt_narrow(img, 2, 0, 1);
    assert_error(clt_image_imagenet(grey), CLT_ERR_SHAPE,
                 "clt_image_imagenet: img has 1 channels, not 3", NULL, NULL);
    if (test_device_total > 1) {
        clt_tensor *far = clt_tensor_to(img, test_device(1));
        ck_assert_ptr_nonnull(far);
        assert_error(clt_image_resize(far, 2, 2, CLT_IMAGE_BILINEAR), CLT_ERR_DEVICE_MISMATCH,
                     "img is on gpu:0, not cpu", NULL, NULL);
        clt_tensor_release(far);
    }
    clt_tensor *all[] = {img, f, flat, none, tall, row, plane, grey};
    TEST_RELEASE_ALL(all);
}
END_TEST

Suite *suite_image(void)
{
    Suite *s = suite_create("image");
    TCase *tc = test_case("image", 300);
    tcase_add_test(tc, test_image_formats);
    tcase_add_test(tc, test_image_decode);
    tcase_add_test(tc, test_image_decode_photo);
    tcase_add_test(tc, test_image_imagenet);
    tcase_add_test(tc, test_image_resize);
    tcase_add_test(tc, test_image_resize_layouts);
    tcase_add_test(tc, test_image_center_crop);
    tcase_add_test(tc, test_image_to_tensor_normalize);
    tcase_add_test(tc, test_image_read_errors);
    tcase_add_test(tc, test_image_ppm_errors);
    tcase_add_test(tc, test_image_png_errors);
    tcase_add_test(tc, test_image_jpeg_errors);
    tcase_add_test(tc, test_image_hostile);
    tcase_add_test(tc, test_image_transform_errors);
    suite_add_tcase(s, tc);
    return s;
}
