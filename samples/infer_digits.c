/* Loading a trained model and classifying with it, as this PyTorch does:
 *
 *     model = DigitsCNN()                                   # or the MLP: the file says which
 *     model.load_state_dict(safetensors.torch.load_file("cnn.safetensors"))
 *     model.to(device).eval()
 *     with torch.no_grad():
 *         accuracy = (model(x).argmax(1) == y).float().mean()
 *
 * on the digits the model was trained on (train_digits --save DIR writes DIR/mlp.safetensors
 * and DIR/cnn.safetensors): the held-out 20% (the same split as train_digits) and all of them.
 * Usage: infer_digits MODEL.safetensors [device] [--data FILE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor.h>

#include "digits_models.h"

#define CHECK(expr)                                                                            \
    do {                                                                                       \
        if (!(expr)) {                                                                         \
            fprintf(stderr, "infer_digits: %s\n", clt_last_error());                           \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* The share of d's items the model classifies right, all in one batch on device. */
static double accuracy(clt_module *model, clt_dataset *d, clt_device *device)
{
    clt_tensor *batch[2], *logits, *predicted, *hits, *count;
    double correct = 0;
    clt_loader *all = clt_loader_new(d, &(clt_loader_options){.batch_size = clt_dataset_length(d),
                                                              .device = device});
    CHECK(all && clt_loader_next(all, batch) == CLT_OK);
    clt_loader_free(all);
    CLT_NO_GRAD { /* with torch.no_grad(): */
        CHECK((logits = clt_module_forward(model, batch[0])));
        CHECK((predicted = clt_argmax(logits, 1, false)));
        CHECK((hits = clt_eq(predicted, batch[1])));
        CHECK((count = clt_sum(hits, NULL, 0, false)));
        CHECK(clt_tensor_item(count, &correct) == CLT_OK);
    }
    clt_tensor *made[] = {count, hits, predicted, logits, batch[1], batch[0]};
    for (size_t k = 0; k < sizeof made / sizeof *made; k++)
        clt_tensor_release(made[k]);
    return correct / (double)clt_dataset_length(d);
}

int main(int argc, char **argv)
{
    const char *path = NULL, *device_name = NULL, *data = INFER_DIGITS_DATA;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else if (!path)
            path = argv[i];
        else if (!device_name)
            device_name = argv[i];
    }
    if (!path) {
        fprintf(stderr, "usage: infer_digits MODEL.safetensors [device] [--data FILE]\n");
        return 2;
    }
    clt_device *device = device_name ? clt_device_get(device_name) : clt_device_default();
    CHECK(device);

    /* which model: the "model" entry train_digits writes into the file's metadata */
    clt_safetensors file;
    CHECK(clt_safetensors_load(path, clt_device_cpu(), &file) == CLT_OK);
    const char *kind = clt_safetensors_metadata_get(&file, "model");
    clt_module *model = digits_model_new(kind);
    clt_safetensors_clear(&file);
    CHECK(model);
    CHECK(clt_module_load(model, path, true, NULL) == CLT_OK); /* strict, as load_state_dict */
    CHECK(clt_module_to(model, device) == CLT_OK);
    clt_module_train(model, false);                             /* model.eval() */
    printf("%s: %s with %lld parameters on %s\n", path, clt_module_type_name(model),
           (long long)clt_module_parameter_count(model), clt_device_name(device));

    clt_dataset *all = clt_dataset_csv(data, &(clt_csv_options){.label_column = -1, .scale = 1.0 / 16});
    CHECK(all);
    int64_t total = clt_dataset_length(all), held_out = total / 5;
    clt_dataset *train, *test;
    CHECK(clt_dataset_split(all, total - held_out, 0, &train, &test) == CLT_OK);
    printf("held-out accuracy %.2f%% (%lld images), all %.2f%% (%lld images)\n",
           100 * accuracy(model, test, device), (long long)held_out,
           100 * accuracy(model, all, device), (long long)total);
    clt_dataset_release(test), clt_dataset_release(train), clt_dataset_release(all);
    clt_module_release(model);
    CHECK(clt_device_synchronize(device) == CLT_OK);
    return 0;
}
