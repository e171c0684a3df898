/* nn.DataParallel for multi-GPU training, as the PyTorch text has it:
 *
 *     model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
 *     model.to(device)
 *     if torch.cuda.device_count() > 1:
 *         model = nn.DataParallel(model)  # Wrap the model for multi-GPU training
 *     optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
 *     for epoch in range(epochs):
 *         for x, y in DataLoader(train, batch_size=128, shuffle=True):
 *             loss = F.cross_entropy(model(x.to(device)), y.to(device))
 *             ...
 *
 * trained on the handwritten digits. Every batch is split over all the GPUs, run on them at
 * once and gathered on the first. To try it on one CPU, split PoCL into sub-devices:
 *     CLT_SUBDEVICES=2 build/samples/data_parallel
 * Usage: data_parallel [--epochs N] [--data FILE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor.h>

/* Any library failure ends the program with its message (PyTorch raises). */
#define CHECK(expr)                                                                            \
    do {                                                                                       \
        if (!(expr)) {                                                                         \
            fprintf(stderr, "data_parallel: %s\n", clt_last_error());                          \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The held-out accuracy: argmax(model(x)) == y, without recording. */
static double accuracy(clt_module *model, clt_tensor *x, clt_tensor *y)
{
    double correct = 0;
    clt_module_train(model, false);
    CLT_NO_GRAD {
        clt_tensor *logits = clt_module_forward(model, x);
        CHECK(logits);
        clt_tensor *predicted = clt_argmax(logits, 1, false);
        clt_tensor *hits = predicted ? clt_eq(predicted, y) : NULL;
        clt_tensor *count = hits ? clt_sum(hits, NULL, 0, false) : NULL;
        CHECK(count && clt_tensor_item(count, &correct) == CLT_OK);
        clt_tensor_release(count), clt_tensor_release(hits), clt_tensor_release(predicted);
        clt_tensor_release(logits);
    }
    clt_module_train(model, true);
    return correct / (double)clt_tensor_numel(y);
}

int main(int argc, char **argv)
{
    const char *data = DATA_PARALLEL_DATA, *device_name = NULL;
    int epochs = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--epochs"))
            epochs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--data"))
            data = argv[i + 1];
        else if (!strcmp(argv[i], "--device"))
            device_name = argv[i + 1];
    }
    if (epochs <= 0) {
        fprintf(stderr, "usage: data_parallel [--epochs N] [--data FILE] [--device NAME]\n");
        return 2;
    }
    clt_device *device = device_name ? clt_device_get(device_name) : clt_device_default();
    CHECK(device);
    printf("Using device: %s; %d GPU%s\n", clt_device_name(device), clt_device_count(),
           clt_device_count() == 1 ? "" : "s");

    clt_dataset *all = clt_dataset_csv(data, &(clt_csv_options){.label_column = -1, .scale = 1.0 / 16});
    CHECK(all);
    int64_t held_out = clt_dataset_length(all) / 5;
    clt_dataset *train, *test;
    CHECK(clt_dataset_split(all, clt_dataset_length(all) - held_out, 0, &train, &test) == CLT_OK);
    clt_dataset_release(all);
    clt_tensor *test_batch[2];
    clt_loader *whole = clt_loader_new(test, &(clt_loader_options){.batch_size = held_out, .device = device});
    CHECK(whole && clt_loader_next(whole, test_batch) == CLT_OK);
    clt_loader_free(whole);

    clt_manual_seed(0);
    clt_module *layers[3] = {clt_nn_linear(64, 256, true), clt_nn_relu(), clt_nn_linear(256, 10, true)};
    clt_module *model = clt_nn_sequential(layers, 3);
    CHECK(model);
    for (int k = 0; k < 3; k++)
        clt_module_release(layers[k]);
    CHECK(clt_module_to(model, device) == CLT_OK); /* model.to(device) */
    if (device != clt_device_cpu() && clt_device_count() > 1) { /* nn.DataParallel(model) */
        clt_module *parallel = clt_nn_data_parallel(model, NULL, 0, NULL);
        CHECK(parallel);
        clt_module_release(model);
        model = parallel;
        int n;
        clt_device *const *devices = clt_data_parallel_devices(model, &n);
        printf("DataParallel over %d devices:", n);
        for (int k = 0; k < n; k++)
            printf(" %s", clt_device_name(devices[k]));
        printf("\n");
    }
    clt_adam_options adam = clt_adam_options_default(); /* optim.Adam(model.parameters(), lr=0.01) */
    adam.lr = 0.01;
    clt_optimizer *optimizer = clt_optim_adam_module(model, &adam);
    clt_loader *loader = clt_loader_new(train, &(clt_loader_options){
        .batch_size = 128, .shuffle = true, .seed = 0, .device = device});
    CHECK(optimizer && loader);
    for (int epoch = 1; epoch <= epochs; epoch++) {
        double start = now_s(), total = 0;
        int batches = 0;
        clt_tensor *batch[2];
        clt_status st;
        while ((st = clt_loader_next(loader, batch)) == CLT_OK) {
            clt_tensor *logits = clt_module_forward(model, batch[0]);
            CHECK(logits);
            clt_tensor *loss = clt_cross_entropy(logits, batch[1], NULL);
            CHECK(loss);
            clt_optim_zero_grad(optimizer);
            CHECK(clt_backward(loss, NULL, false) == CLT_OK);
            CHECK(clt_optim_step(optimizer) == CLT_OK);
            double value;
            CHECK(clt_tensor_item(loss, &value) == CLT_OK);
            total += value;
            batches++;
            clt_tensor_release(loss), clt_tensor_release(logits);
            clt_tensor_release(batch[0]), clt_tensor_release(batch[1]);
        }
        CHECK(st == CLT_END);
        printf("epoch %2d  loss %.4f  held-out accuracy %.2f%%  %.2f s\n", epoch, total / batches,
               100 * accuracy(model, test_batch[0], test_batch[1]), now_s() - start);
    }
    clt_loader_free(loader);
    clt_optim_free(optimizer);
    clt_module_release(model);
    clt_tensor_release(test_batch[0]), clt_tensor_release(test_batch[1]);
    clt_dataset_release(test), clt_dataset_release(train);
    for (int k = 0; k < clt_device_count(); k++) { /* finish every GPU's work before exiting */
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", k);
        CHECK(clt_device_synchronize(clt_device_get(name)) == CLT_OK);
    }
    return 0;
}
