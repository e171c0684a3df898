/* Training on the handwritten digits (8x8 images, samples/data/digits.csv.gz): a small MLP and
 * a small CNN, on the device named on the command line, as this PyTorch does it:
 *
 *     torch.manual_seed(0)
 *     mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
 *     cnn = DigitsCNN()     # x.view(-1, 1, 8, 8), Conv2d(1, 16, 3, padding=1), ReLU, MaxPool2d(2),
 *                           # Conv2d(16, 32, 3, padding=1), ReLU, Flatten, Linear(32 * 4 * 4, 10)
 *     data = CsvDataset("digits.csv.gz", scale=1/16)  # 64 pixels 0..16 and a label
 *     train, test = random_split(data, [1438, 359], generator=torch.Generator().manual_seed(0))
 *     loader = DataLoader(train, batch_size=64, shuffle=True)   # onto the device, prefetched
 *     model.to(device)
 *     optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
 *     scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
 *     for epoch in range(epochs):
 *         model.train()
 *         for x, y in loader:                  # shuffled minibatches of 64, already on the device
 *             loss = F.cross_entropy(model(x), y)
 *             optimizer.zero_grad()
 *             loss.backward()
 *             optimizer.step()
 *         model.eval()
 *         with torch.no_grad():                # the 20% held out
 *             accuracy = (model(x_test).argmax(1) == y_test).float().mean()
 *         scheduler.step()
 *
 * Usage: train_digits [device] [--epochs N] [--model mlp|cnn|both] [--out DIR] [--data FILE]
 *                    [--save DIR] [--distributed]
 * Prints a progress line per epoch and the held-out accuracy of each model, and writes the
 * curves (training loss and held-out accuracy per epoch) to DIR/train_digits.csv and
 * DIR/train_digits.svg.
 *
 * --distributed (built with MPI), under `mpirun -np N train_digits --distributed`, is PyTorch's
 * DistributedDataParallel with a DistributedSampler: each rank on its own device (gpu:(local
 * rank), or cpu), rank 0's initial parameters on every rank, each rank a disjoint shard of
 * every epoch, the gradients averaged over the ranks after each backward. Rank 0 prints and
 * writes the files; its loss is that of its own shard. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cltensor.h>
#ifdef TRAIN_DIGITS_MPI
#include <cltensor/distributed.h>
static clt_dist *dist; /* --distributed */
#endif

#include "digits_models.h"
#include "train_util.h"

#define SEED 0
#define BATCH_SIZE 64
#define LEARNING_RATE 1e-2
#define LR_GAMMA 0.9 /* the learning rate's factor after each epoch */
#define DEFAULT_EPOCHS 20

/* Any library failure ends the program with its message (PyTorch raises). */
#define CHECK(expr)                                                                            \
    do {                                                                                       \
        if (!(expr)) {                                                                         \
            fflush(stdout);                                                                    \
            fprintf(stderr, "train_digits: %s\n", clt_last_error());                           \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* A tensor or module made by the library, checked. */
static clt_tensor *must(clt_tensor *t)
{
    CHECK(t);
    return t;
}

static clt_module *must_module(clt_module *m)
{
    CHECK(m);
    return m;
}

/* loss.item() */
static double item(const clt_tensor *t)
{
    double v;
    CHECK(clt_tensor_item(t, &v) == CLT_OK);
    return v;
}

/* ---- training ------------------------------------------------------------------------------- */

/* The fraction of the held-out rows whose largest logit is at the right class. */
static double evaluate(clt_module *model, clt_tensor *x_test, clt_tensor *y_test)
{
    int64_t correct = 0;
    clt_module_train(model, false); /* model.eval() */
    CLT_NO_GRAD {                   /* with torch.no_grad(): */
        clt_tensor *logits = must(clt_module_forward(model, x_test));
        clt_tensor *predicted = must(clt_argmax(logits, 1, false));
        clt_tensor *hits = must(clt_eq(predicted, y_test));
        clt_tensor *count = must(clt_sum(hits, NULL, 0, false));
        CHECK(clt_tensor_copy_to_host(count, &correct, sizeof correct) == CLT_OK);
        clt_tensor_release(count);
        clt_tensor_release(hits);
        clt_tensor_release(predicted);
        clt_tensor_release(logits);
    }
    return (double)correct / (double)clt_tensor_numel(y_test);
}

/* One training step on a minibatch; its loss. */
static double train_step(clt_module *model, clt_optimizer *optimizer, clt_tensor *x, clt_tensor *y)
{
    clt_tensor *logits = must(clt_module_forward(model, x));
    clt_tensor *loss = must(clt_cross_entropy(logits, y, NULL));
    clt_optim_zero_grad(optimizer);
#ifdef TRAIN_DIGITS_MPI
    if (dist) /* loss.backward() in DDP: the gradients averaged over the ranks meanwhile */
        CHECK(clt_dist_backward(dist, model, loss) == CLT_OK);
    else
#endif
        CHECK(clt_backward(loss, NULL, false) == CLT_OK);
    CHECK(clt_optim_step(optimizer) == CLT_OK);
    double value = item(loss);
    clt_tensor_release(loss);
    clt_tensor_release(logits);
    return value;
}

static bool quiet; /* a rank other than 0 */

/* Trains `model` for `epochs` epochs on `device` with batches from `train`, filling loss[] and
 * accuracy[] per epoch. */
static void fit(const char *name, clt_module *model, clt_device *device, clt_loader *train,
                int64_t train_items, clt_tensor *x_test, clt_tensor *y_test, int epochs,
                double *loss, double *accuracy)
{
    bool tty = isatty(STDOUT_FILENO);
    CHECK(clt_module_to(model, device) == CLT_OK); /* model.to(device) */
#ifdef TRAIN_DIGITS_MPI
    if (dist) /* DistributedDataParallel(model): rank 0's parameters everywhere */
        CHECK(clt_dist_sync_module(dist, model) == CLT_OK);
#endif
    clt_adam_options adam = clt_adam_options_default(); /* optim.Adam(model.parameters(), lr=...) */
    adam.lr = LEARNING_RATE;
    clt_optimizer *optimizer = clt_optim_adam_module(model, &adam);
    CHECK(optimizer);
    for (int epoch = 1; epoch <= epochs; epoch++) {
        progress p = {.model = name, .epoch = epoch, .epochs = epochs, .total = train_items,
                      .accuracy = -1 /* still running */};
        double start = now_s(), loss_sum = 0;
        clt_tensor *batch[2]; /* x, y */
        clt_status st;
        clt_module_train(model, true); /* model.train() */
        while ((st = clt_loader_next(train, batch)) == CLT_OK) { /* for x, y in loader: */
            int64_t n = clt_tensor_size(batch[1], 0);
            loss_sum += train_step(model, optimizer, batch[0], batch[1]) * (double)n;
            clt_tensor_release(batch[0]);
            clt_tensor_release(batch[1]);
            p.done += n;
            p.loss = loss_sum / (double)p.done;
            p.samples_per_s = (double)p.done / (now_s() - start);
            if (!quiet)
                progress_show(&p, tty);
        }
        CHECK(st == CLT_END);
        CHECK(clt_device_synchronize(device) == CLT_OK);
        p.samples_per_s = (double)p.done / (now_s() - start);
        loss[epoch - 1] = p.loss;
        accuracy[epoch - 1] = p.accuracy = evaluate(model, x_test, y_test);
        p.epoch_s = now_s() - start;
        if (!quiet)
            progress_show(&p, tty);
        CHECK(clt_optim_set_lr(optimizer, clt_optim_lr(optimizer) * LR_GAMMA) == CLT_OK);
    }
    clt_optim_free(optimizer);
}

/* ---- command line --------------------------------------------------------------------------- */

typedef struct options {
    const char *device, *model, *out, *data, *save;
    int epochs;
    bool distributed;
} options;

static void usage(FILE *f)
{
    fprintf(f, "usage: train_digits [device] [--epochs N] [--model mlp|cnn|both] [--out DIR] "
               "[--data FILE] [--save DIR]\n"
               "  device   cpu, gpu, gpu:N (default: gpu:0 if there is one, else cpu)\n"
               "  --epochs training epochs per model (default %d)\n"
               "  --model  which model to train (default both)\n"
               "  --out    where train_digits.csv and train_digits.svg go (default .)\n"
               "  --data   the digits CSV (default %s)\n"
               "  --save   write each trained model to DIR/mlp.safetensors, DIR/cnn.safetensors\n"
               "  --distributed  under mpirun: data-parallel over the ranks (default device:\n"
               "           gpu:(local rank), or cpu)\n",
               DEFAULT_EPOCHS, TRAIN_DIGITS_DATA);
}

static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){.model = "both", .out = ".", .data = TRAIN_DIGITS_DATA,
                   .epochs = DEFAULT_EPOCHS};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *value = NULL;
        char *end = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (a[0] != '-' && !o->device) {
            o->device = a;
            continue;
        }
        if (!strcmp(a, "--distributed")) {
#ifdef TRAIN_DIGITS_MPI
            o->distributed = true;
            continue;
#else
            fprintf(stderr, "train_digits: --distributed: built without MPI\n");
            return -1;
#endif
        }
        if (i + 1 < argc)
            value = argv[++i];
        long epochs = value ? strtol(value, &end, 10) : 0;
        if (!strcmp(a, "--epochs") && epochs > 0 && epochs <= 100000 && !*end) {
            o->epochs = (int)epochs;
            continue;
        }
        if (value && !strcmp(a, "--model") &&
            (!strcmp(value, "mlp") || !strcmp(value, "cnn") || !strcmp(value, "both"))) {
            o->model = value;
            continue;
        }
        if (value && !strcmp(a, "--out")) {
            o->out = value;
            continue;
        }
        if (value && !strcmp(a, "--save")) {
            o->save = value;
            continue;
        }
        if (value && !strcmp(a, "--data")) {
            o->data = value;
            continue;
        }
        fprintf(stderr, "train_digits: bad argument: %s%s%s\n", a, value ? " " : "",
                value ? value : "");
        usage(stderr);
        return -1;
    }
    return 0;
}

/* DIR/NAME into buf; 0 if it fits. */
static int join(char *buf, size_t size, const char *dir, const char *name)
{
    int n = snprintf(buf, size, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr, "train_digits: path too long: %s/%s\n", dir, name);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const char *const models[] = {"mlp", "cnn"};
    options opt;
    if (parse_args(argc, argv, &opt) != 0)
        return 2;
    clt_device *device = opt.device ? clt_device_get(opt.device) : clt_device_default();
    int replicas = 1, rank = 0;
#ifdef TRAIN_DIGITS_MPI
    if (opt.distributed) { /* dist.init_process_group("mpi") */
        int provided; /* a second thread averages gradients during the backward */
        MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
        dist = clt_dist_init(MPI_COMM_WORLD, &(clt_dist_options){
                                                 .device = opt.device ? device : NULL,
                                                 .device_per_rank = !opt.device});
        CHECK(dist);
        device = clt_dist_device(dist);
        replicas = clt_dist_size(dist), rank = clt_dist_rank(dist);
        quiet = rank != 0;
        printf("rank %d of %d on %s\n", rank, replicas, clt_device_name(device));
        if (quiet) /* rank 0 speaks for all */
            CHECK(freopen("/dev/null", "w", stdout) != NULL);
    }
#endif
    CHECK(device);
    printf("Using device: %s\n", clt_device_name(device));

    /* The data: pixels 0..16 scaled to [0, 1]; a fixed shuffled split, 20% held out. */
    clt_dataset *all = clt_dataset_csv(opt.data, &(clt_csv_options){.label_column = -1,
                                                                     .scale = 1.0 / 16});
    CHECK(all);
    int64_t total = clt_dataset_length(all), held_out = total / 5;
    clt_dataset *train, *test;
    CHECK(clt_dataset_split(all, total - held_out, SEED, &train, &test) == CLT_OK);
    clt_dataset_release(all);
    printf("%lld training and %lld held-out images from %s\n", (long long)(total - held_out),
           (long long)held_out, opt.data);
    /* the held-out images as one batch on the device */
    clt_tensor *test_batch[2];
    clt_loader *whole = clt_loader_new(test, &(clt_loader_options){.batch_size = held_out,
                                                                   .device = device});
    CHECK(whole);
    CHECK(clt_loader_next(whole, test_batch) == CLT_OK);
    clt_loader_free(whole);
    clt_tensor *x_test = test_batch[0], *y_test = test_batch[1];
    int rc;

    curve curves[2];
    int ncurves = 0;
    double *history = malloc(4 * (size_t)opt.epochs * sizeof *history);
    if (!history) {
        fprintf(stderr, "train_digits: out of memory\n");
        return 1;
    }
    for (int k = 0; k < 2; k++) {
        if (strcmp(opt.model, "both") && strcmp(opt.model, models[k]))
            continue;
        clt_manual_seed(SEED); /* torch.manual_seed(0): each model starts the same either way */
        clt_module *model = must_module(k == 0 ? digits_mlp_new() : digits_cnn_new());
        clt_loader *batches = clt_loader_new(train, &(clt_loader_options){
            .batch_size = BATCH_SIZE, .shuffle = true, .seed = SEED, .device = device,
            .num_replicas = replicas, .rank = rank}); /* DistributedSampler when distributed */
        CHECK(batches);
        printf("%s: %s, %lld parameters\n", models[k], clt_module_type_name(model),
               (long long)clt_module_parameter_count(model));
        double *loss = history + 2 * k * opt.epochs, *accuracy = loss + opt.epochs;
        fit(models[k], model, device, batches, (total - held_out + replicas - 1) / replicas,
            x_test, y_test, opt.epochs, loss, accuracy);
        curves[ncurves++] = (curve){models[k], loss, accuracy};
        if (opt.save && rank == 0) { /* torch.save(model.state_dict(), ...) in safetensors form */
            char path[4096], name[32];
            snprintf(name, sizeof name, "%s.safetensors", models[k]);
            if (join(path, sizeof path, opt.save, name) != 0)
                return 1;
            const clt_metadata md = {"model", models[k]};
            CHECK(clt_module_save(model, path, &md, 1) == CLT_OK);
            printf("%s: saved to %s\n", models[k], path);
        }
        clt_loader_free(batches);
        clt_module_release(model);
    }
    for (int c = 0; c < ncurves; c++) {
        double a = curves[c].accuracy[opt.epochs - 1];
        printf("%s: held-out accuracy %.2f%% (%lld of %lld)\n", curves[c].model, 100 * a,
               (long long)(a * (double)held_out + 0.5), (long long)held_out);
    }

    char csv[4096], svg[4096];
    rc = rank != 0 ? 0 :
         join(csv, sizeof csv, opt.out, "train_digits.csv") ||
         join(svg, sizeof svg, opt.out, "train_digits.svg") ||
         write_curves_csv(csv, curves, ncurves, opt.epochs) ||
         write_curves_svg(svg, curves, ncurves, opt.epochs);
    if (rc == 0 && rank == 0)
        printf("wrote %s and %s\n", csv, svg);

    free(history);
    clt_tensor_release(y_test);
    clt_tensor_release(x_test);
    clt_dataset_release(test);
    clt_dataset_release(train);
    CHECK(clt_device_synchronize(device) == CLT_OK);
#ifdef TRAIN_DIGITS_MPI
    if (dist) {
        clt_dist_free(dist);
        MPI_Finalize();
    }
#endif
    return rc ? 1 : 0;
}
