/* A program outside the tree on the installed cltensor_models: ResNet-18 classifies an image,
 * read and transformed as torchvision does it.  usage: models_consumer IMAGE */
#include <stdio.h>

#include <cltensor/models.h>

int main(int argc, char **argv)
{
    clt_module *model = clt_resnet18(1000); /* then clt_module_load(model, "resnet18...", ...) */
    clt_tensor *image = argc > 1 ? clt_image_read(argv[1]) : NULL;
    clt_tensor *x = image ? clt_image_imagenet(image) : NULL;
    clt_tensor *batch = x ? clt_unsqueeze(x, 0) : NULL, *logits = NULL, *best = NULL;
    double cls = -1;
    if (model && batch) {
        clt_module_train(model, false);
        CLT_NO_GRAD {
            logits = clt_module_forward(model, batch);
            best = logits ? clt_argmax(logits, 1, false) : NULL;
        }
    }
    if (!best || clt_tensor_item(best, &cls) != CLT_OK) {
        fprintf(stderr, "models_consumer: %s\n", argc > 1 ? clt_last_error() : "no image");
        return 1;
    }
    printf("%s: class %d\n", argv[1], (int)cls);
    clt_tensor_release(best), clt_tensor_release(logits), clt_tensor_release(batch);
    clt_tensor_release(x), clt_tensor_release(image), clt_module_release(model);
    return 0;
}
