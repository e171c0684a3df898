/* cltensor_models against PyTorch on the CPU in the same run (models_torch.py: torchvision's
 * and transformers' own models where installed, the faster of 1 and 2 threads): ResNet-18
 * inference at 224 x 224, batches of 1 and 16, ResNet-50's and MobileNetV2's (depthwise
 * convolutions) for a batch of 1 (eval mode, no recording), GPT-2 small generating NEW tokens
 * greedily after a PROMPT-token prompt with the KV cache, and BERT-base on one sequence of 128
 * tokens (last hidden state and pooled output), on cpu and each device named (default: cpu gpu:0). Random weights: the
 * work is the same as trained ones'. One JSON line per case:
 * {"bench": "models", "case": "resnet18_b1", "device": "cpu", "time_s": ..., "torch_s": ...,
 *  "ratio": ...}
 * usage: bench_models [--quick] [DEVICE...]   (--quick: 16 new tokens, fewer repeats) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor/models.h>

#include "bench_util.h"

#define PROMPT 32

typedef struct torch_case {
    char name[32];
    double time_s;
} torch_case;

typedef struct torch_ref {
    char version[64];
    int threads;
    torch_case cases[8];
    int n;
} torch_ref;

/* Runs models_torch.py with the first interpreter that imports torch; false if none does. */
static bool run_torch(int threads, int repeats, int new_tokens, torch_ref *ref)
{
    char args[256], line[512];
    memset(ref, 0, sizeof *ref);
    snprintf(args, sizeof args, "--threads %d --repeats %d --prompt %d --new %d", threads, repeats,
             PROMPT, new_tokens);
    FILE *p = bench_torch_popen(BENCH_MODELS_TORCH_PY, args);
    if (!p)
        return false;
    while (fgets(line, sizeof line, p)) {
        if (ref->n == 8)
            continue; /* read to the end: the script must not block on a full pipe */
        torch_case *c = &ref->cases[ref->n];
        const char *t = strstr(line, "\"time_s\": ");
        if (sscanf(line, "{\"case\": \"%31[^\"]\", \"torch\": \"%63[^\"]\", \"threads\": %d",
                   c->name, ref->version, &ref->threads) == 3 &&
            t && sscanf(t, "\"time_s\": %lf", &c->time_s) == 1)
            ref->n++;
    }
    return pclose(p) == 0 && ref->n >= 4;
}

static double torch_time(const torch_ref *runs, const char *name, int *threads)
{
    double best = 0;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < runs[r].n; i++)
            if (!strcmp(runs[r].cases[i].name, name) &&
                (best == 0 || runs[r].cases[i].time_s < best))
                best = runs[r].cases[i].time_s, *threads = runs[r].threads;
    return best;
}

static void report(const char *name, clt_device *dev, double t, const torch_ref *runs,
                   const char *extra)
{
    int threads = 0;
    double ref = torch_time(runs, name, &threads);
    printf("{\"bench\": \"models\", \"case\": \"%s\", \"device\": \"%s\", \"time_s\": %.6f%s",
           name, clt_device_name(dev), t, extra);
    if (ref > 0)
        printf(", \"torch\": \"%s\", \"torch_threads\": %d, \"torch_s\": %.6f, \"ratio\": %.3f",
               runs[0].version[0] ? runs[0].version : runs[1].version, threads, ref, t / ref);
    printf("}\n");
    fflush(stdout);
}

static void must(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "bench_models: %s: %s\n", what, clt_last_error());
        exit(1);
    }
}

static double image_time(clt_module *net, clt_device *dev, int batch, int repeats)
{
    double t[8];
    clt_manual_seed(1);
    clt_tensor *x = clt_tensor_randn(CLT_SHAPE(batch, 3, 224, 224), CLT_F32, dev);
    must(x != NULL, "input");
    for (int r = 0; r <= repeats; r++) {
        double start = now_s();
        CLT_NO_GRAD {
            clt_tensor *y = clt_module_forward(net, x);
            must(y && clt_device_synchronize(dev) == CLT_OK, "image model forward");
            clt_tensor_release(y);
        }
        if (r) /* the first run warms up */
            t[r - 1] = now_s() - start;
    }
    clt_tensor_release(x);
    return median(t, repeats);
}

/* Seconds for the prompt and new_tokens greedy tokens after it. */
static double gpt_time(clt_module *model, clt_device *dev, int new_tokens)
{
    int64_t ids[PROMPT];
    for (int i = 0; i < PROMPT; i++)
        ids[i] = (i * 7919) % 50257;
    clt_gpt2_cache cache;
    must(clt_gpt2_cache_init(&cache, model) == CLT_OK, "cache");
    clt_tensor *next = clt_tensor_from_data(CLT_SHAPE(1, PROMPT), ids, CLT_I64, dev);
    double start = now_s();
    CLT_NO_GRAD {
        for (int t = 0; t < new_tokens; t++) {
            clt_tensor *logits = clt_gpt2_forward(model, next, &cache);
            must(logits != NULL, "gpt forward");
            clt_tensor *last = clt_narrow(logits, 1, clt_tensor_size(logits, 1) - 1, 1);
            clt_tensor *arg = clt_argmax(last, 2, false);
            double token;
            must(arg && clt_tensor_item(arg, &token) == CLT_OK, "argmax");
            clt_tensor_release(next);
            next = arg;
            clt_tensor_release(last), clt_tensor_release(logits);
        }
    }
    double t = now_s() - start;
    clt_tensor_release(next);
    clt_gpt2_cache_clear(&cache);
    return t;
}

/* Seconds for BertModel's forward (last hidden state and pooled output) on one sequence of
 * `tokens` ids, the median of `repeats` after a warm-up. */
static double bert_time(clt_module *model, clt_device *dev, int tokens, int repeats)
{
    double t[8];
    int64_t ids[512];
    for (int i = 0; i < tokens; i++)
        ids[i] = (i * 7919) % 30522;
    clt_tensor *x = clt_tensor_from_data(CLT_SHAPE(1, tokens), ids, CLT_I64, dev);
    must(x != NULL, "bert input");
    for (int r = 0; r <= repeats; r++) {
        double start = now_s();
        CLT_NO_GRAD {
            clt_tensor *hidden = NULL, *pooled = NULL;
            must(clt_bert_forward(model, x, NULL, NULL, &hidden, &pooled) == CLT_OK &&
                     clt_device_synchronize(dev) == CLT_OK,
                 "bert forward");
            clt_tensor_release(hidden), clt_tensor_release(pooled);
        }
        if (r)
            t[r - 1] = now_s() - start;
    }
    clt_tensor_release(x);
    return median(t, repeats);
}

int main(int argc, char **argv)
{
    bool quick = false;
    const char *names[8];
    int n = 0;
    for (int i = 1; i < argc && n < 8; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else
            names[n++] = argv[i];
    }
    if (n == 0) {
        names[n++] = "cpu";
        if (clt_device_count() > 0)
            names[n++] = "gpu:0";
    }
    int new_tokens = quick ? 16 : 128, repeats = quick ? 2 : 5;
    torch_ref runs[2];
    bool have_torch = run_torch(1, repeats, new_tokens, &runs[0]);
    have_torch = run_torch(2, repeats, new_tokens, &runs[1]) || have_torch;
    if (!have_torch)
        fprintf(stderr, "bench_models: no PyTorch found (python3-torch): no reference\n");
    for (int d = 0; d < n; d++) {
        clt_device *dev = clt_device_get(names[d]);
        must(dev != NULL, names[d]);
        clt_manual_seed(0);
        clt_module *net = clt_resnet18(1000);
        must(net && clt_module_to(net, dev) == CLT_OK, "resnet18");
        clt_module_train(net, false);
        report("resnet18_b1", dev, image_time(net, dev, 1, repeats), runs, "");
        report("resnet18_b16", dev, image_time(net, dev, 16, quick ? 1 : 3), runs, "");
        clt_module_release(net);
        net = clt_resnet50(1000);
        must(net && clt_module_to(net, dev) == CLT_OK, "resnet50");
        clt_module_train(net, false);
        report("resnet50_b1", dev, image_time(net, dev, 1, repeats), runs, "");
        clt_module_release(net);
        net = clt_mobilenet_v2(1000);
        must(net && clt_module_to(net, dev) == CLT_OK, "mobilenet_v2");
        clt_module_train(net, false);
        report("mobilenet_v2_b1", dev, image_time(net, dev, 1, repeats), runs, "");
        clt_module_release(net);
        clt_gpt2_config c = clt_gpt2_config_default();
        clt_module *gpt = clt_gpt2_new(&c);
        must(gpt && clt_module_to(gpt, dev) == CLT_OK, "gpt2");
        clt_module_train(gpt, false);
        gpt_time(gpt, dev, 2); /* warm-up */
        double t = gpt_time(gpt, dev, new_tokens);
        char extra[96];
        snprintf(extra, sizeof extra, ", \"prompt\": %d, \"new_tokens\": %d, \"tokens_per_s\": %.2f",
                 PROMPT, new_tokens, new_tokens / t);
        report("gpt2_generate", dev, t, runs, extra);
        clt_module_release(gpt);
        clt_bert_config bc = clt_bert_config_default();
        clt_module *bert = clt_bert_new(&bc);
        must(bert && clt_module_to(bert, dev) == CLT_OK, "bert");
        clt_module_train(bert, false);
        report("bert_b1_t128", dev, bert_time(bert, dev, 128, repeats), runs, "");
        clt_module_release(bert);
    }
    return 0;
}
