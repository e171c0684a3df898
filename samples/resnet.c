/* Image classification with ResNet-18, as torchvision does it:
 *
 *     model = torchvision.models.resnet18()
 *     model.load_state_dict(safetensors.torch.load_file("resnet18.safetensors"))
 *     model.eval().to(device)
 *     transform = Compose([Resize(256), CenterCrop(224), ToTensor(),
 *                          Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
 *     x = transform(Image.open(path).convert("RGB"))
 *     probabilities = model(x.unsqueeze(0).to(device)).softmax(1)
 *
 * Usage: resnet [--weights FILE] [--device NAME] [--top K] IMAGE...
 * IMAGE is a JPEG, PNG or binary PPM file, read and transformed exactly as PIL and torchvision
 * do it (clt_image_read, clt_image_imagenet). --weights names a safetensors file of torchvision's resnet18 state_dict (its names: conv1,
 * bn1, layer1.0.conv1, ..., fc); without it the weights are PyTorch's random initialisation
 * and the classes mean nothing. Prints, per image, the top K (5) classes and probabilities. */
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
        fprintf(stderr, "usage: resnet [--weights FILE] [--device NAME] [--top K] IMAGE...\n");
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
    clt_module_train(model, false);                /* model.eval() */
    CHECK(clt_module_to(model, device) == CLT_OK); /* model.to(device) */

    clt_tensor **inputs = calloc((size_t)images, sizeof *inputs);
    CHECK(inputs);
    for (int i = 0; i < images; i++) {
        clt_tensor *image = clt_image_read(argv[first_image + i]); /* .convert("RGB") */
        CHECK(image);
        inputs[i] = clt_image_imagenet(image); /* transform(image): (3, 224, 224) */
        clt_tensor_release(image);
        CHECK(inputs[i]);
    }
    clt_tensor *x = clt_stack(inputs, images, 0); /* torch.stack(inputs) */
    for (int i = 0; i < images; i++)
        clt_tensor_release(inputs[i]);
    free(inputs);
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
