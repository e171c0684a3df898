/* Image classification with ResNet-18, as torchvision does it:
 *
 *     model = torchvision.models.resnet18()
 *     model.load_state_dict(safetensors.torch.load_file("resnet18.safetensors"))
 *     model.eval().to(device)
 *     x = normalize(center_crop(resize(image, 256), 224))   # ImageNet's mean and std
 *     probabilities = model(x.unsqueeze(0).to(device)).softmax(1)
 *
 * Usage: resnet [--weights FILE] [--device NAME] [--top K] IMAGE.ppm...
 * IMAGE is a binary PPM (P6, 8 bits), the format `convert x.jpg x.ppm` or `pnmtopng -r` make.
 * --weights names a safetensors file of torchvision's resnet18 state_dict (its names: conv1,
 * bn1, layer1.0.conv1, ..., fc); without it the weights are PyTorch's random initialisation
 * and the classes mean nothing. Prints, per image, the top K (5) classes and probabilities. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor/models.h>

#define CHECK(expr)                                                                            \
    do {                                                                                       \
        if (!(expr)) {                                                                         \
            fprintf(stderr, "resnet: %s\n", clt_last_error());                                 \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* A binary PPM's pixels (w x h x 3 bytes), or NULL with a message on stderr. */
static unsigned char *read_ppm(const char *path, int *w, int *h)
{
    FILE *f = fopen(path, "rb");
    int maxval;
    unsigned char *px = NULL;
    if (!f || fscanf(f, "P6 %d %d %d", w, h, &maxval) != 3 || maxval != 255 || *w < 1 ||
        *h < 1 || *w > 16384 || *h > 16384 || fgetc(f) == EOF) {
        fprintf(stderr, "resnet: %s is not a binary 8-bit PPM (P6)\n", path);
    } else if ((px = malloc((size_t)*w * (size_t)*h * 3)) &&
               fread(px, 3, (size_t)*w * (size_t)*h, f) != (size_t)*w * (size_t)*h) {
        fprintf(stderr, "resnet: %s is truncated\n", path);
        free(px);
        px = NULL;
    }
    if (f)
        fclose(f);
    return px;
}

/* torchvision's preprocessing: the shorter side resized to 256 (bilinear, pixel centres
 * aligned), the centre 224 x 224 cut out, scaled to [0, 1] and normalised with ImageNet's
 * mean and std, channels first: 3 x 224 x 224 floats into out. */
static void preprocess(const unsigned char *px, int w, int h, float *out)
{
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    double s = 256.0 / (w < h ? w : h);
    double rw = w * s, rh = h * s, x0 = (rw - 224) / 2, y0 = (rh - 224) / 2;
    for (int y = 0; y < 224; y++) {
        for (int x = 0; x < 224; x++) {
            double sx = (x + x0 + 0.5) / s - 0.5, sy = (y + y0 + 0.5) / s - 0.5;
            int ix = (int)floor(sx), iy = (int)floor(sy);
            double fx = sx - ix, fy = sy - iy;
            for (int c = 0; c < 3; c++) {
                double v = 0;
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < 2; dx++) {
                        int cx = ix + dx < 0 ? 0 : ix + dx >= w ? w - 1 : ix + dx;
                        int cy = iy + dy < 0 ? 0 : iy + dy >= h ? h - 1 : iy + dy;
                        v += (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy) *
                             px[((size_t)cy * (size_t)w + (size_t)cx) * 3 + (size_t)c];
                    }
                out[(size_t)c * 224 * 224 + (size_t)y * 224 + (size_t)x] =
                    ((float)(v / 255.0) - mean[c]) / std[c];
            }
        }
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *weights = NULL, *device_name = NULL;
    int top = 5, first_image = argc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--weights") && i + 1 < argc)
            weights = argv[++i];
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            device_name = argv[++i];
        else if (!strcmp(argv[i], "--top") && i + 1 < argc)
            top = atoi(argv[++i]);
        else {
            first_image = i;
            break;
        }
    }
    int images = argc - first_image;
    if (images < 1 || top < 1 || top > 1000) {
        fprintf(stderr, "usage: resnet [--weights FILE] [--device NAME] [--top K] IMAGE.ppm...\n");
        return 2;
    }
    clt_device *device = device_name ? clt_device_get(device_name) : clt_device_default();
    CHECK(device);
    clt_manual_seed(0);
    clt_module *model = clt_resnet18(1000); /* torchvision.models.resnet18() */
    CHECK(model);
    if (weights)
        CHECK(clt_module_load(model, weights, true, NULL) == CLT_OK);
    else
        printf("no --weights: PyTorch's random initialisation, the classes mean nothing\n");
    clt_module_train(model, false);                 /* model.eval() */
    CHECK(clt_module_to(model, device) == CLT_OK);  /* model.to(device) */

    float *batch = malloc((size_t)images * 3 * 224 * 224 * sizeof *batch);
    CHECK(batch);
    for (int i = 0; i < images; i++) {
        int w, h;
        unsigned char *px = read_ppm(argv[first_image + i], &w, &h);
        if (!px)
            return 1;
        preprocess(px, w, h, batch + (size_t)i * 3 * 224 * 224);
        free(px);
    }
    clt_tensor *x = clt_tensor_from_data(CLT_SHAPE(images, 3, 224, 224), batch, CLT_F32,
                                         clt_device_cpu());
    free(batch);
    CHECK(x && clt_tensor_to_(&x, device) == CLT_OK); /* x = x.to(device) */
    double start = now_s();
    clt_tensor *probabilities = NULL;
    CLT_NO_GRAD {
        clt_tensor *logits = clt_module_forward(model, x);
        CHECK(logits);
        probabilities = clt_softmax(logits, 1);
        clt_tensor_release(logits);
    }
    CHECK(probabilities);
    float *p = malloc((size_t)images * 1000 * sizeof *p);
    CHECK(p && clt_tensor_copy_to_host(probabilities, p, (size_t)images * 1000 * sizeof *p) ==
                   CLT_OK);
    printf("ResNet-18 on %s: %d image%s in %.3f s\n", clt_device_name(device), images,
           images == 1 ? "" : "s", now_s() - start);
    for (int i = 0; i < images; i++) {
        const float *row = p + (size_t)i * 1000;
        bool taken[1000] = {false};
        printf("%s:", argv[first_image + i]);
        for (int k = 0; k < top; k++) {
            int best = -1;
            for (int c = 0; c < 1000; c++)
                if (!taken[c] && (best < 0 || row[c] > row[best]))
                    best = c;
            taken[best] = true;
            printf(" class %d (%.4f)%s", best, row[best], k + 1 < top ? "," : "\n");
        }
    }
    free(p);
    clt_tensor_release(probabilities);
    clt_tensor_release(x);
    clt_module_release(model);
    return 0;
}
