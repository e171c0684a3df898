/* Text generation with a GPT-2-style model, as Hugging Face's GPT2LMHeadModel.generate does
 * it with use_cache=True:
 *
 *     config = GPT2Config.from_json_file("config.json")
 *     model = GPT2LMHeadModel(config); model.load_state_dict(load_file("model.safetensors"))
 *     ids = tokenizer(prompt); past = None
 *     for _ in range(n):
 *         out = model(ids if past is None else ids[:, -1:], past_key_values=past)
 *         past = out.past_key_values
 *         next = out.logits[:, -1].argmax(-1)          # or top-k sampling
 *         ids = torch.cat([ids, next[:, None]], 1)
 *
 * Usage: gpt [--model DIR] [--config FILE] [--weights FILE] [--tokenizer DIR] [--device NAME]
 *            [--tokens N] [--top-k K] [--seed S] PROMPT
 * --model DIR is a Hugging Face model folder: DIR/config.json, DIR/model.safetensors and the
 * tokenizer's files in DIR (the three options below, which override it). --tokenizer DIR
 * names a folder of GPT-2's byte-level BPE tokenizer (vocab.json and merges.txt, or
 * tokenizer.json): the prompt is encoded and each token printed as the text it stands for,
 * as GPT2TokenizerFast does. Without one, each byte of the prompt is one token (its value)
 * and each token below 256 prints as that byte, for models trained on bytes. Without a
 * config, a small byte-level model (4 layers, width 128, 256 positions); without weights,
 * PyTorch's random initialisation (the text is noise). --top-k 0 (the default) decodes
 * greedily; K > 0 samples from the K most likely tokens on the device (topk, softmax,
 * multinomial, gather), seeded by --seed through clt_manual_seed, so every device draws the
 * same tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor/models.h>

#define CHECK(expr)                                                                            \
    do {                                                                                       \
        if (!(expr)) {                                                                         \
            fprintf(stderr, "gpt: %s\n", clt_last_error());                                    \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The next token, a (1, 1) i64 tensor on the logits' device, from the last position's logits
 * (1, vocab): the largest (greedy), or a draw from the k largest after a softmax over them, as
 *   values, idx = logits.topk(k); idx.gather(-1, torch.multinomial(values.softmax(-1), 1)) */
static clt_tensor *pick(clt_tensor *logits, int k)
{
    if (k <= 1)
        return clt_argmax(logits, -1, true);
    clt_tensor *idx = NULL, *values = clt_topk(logits, k, -1, true, &idx);
    clt_tensor *probs = values ? clt_softmax(values, -1) : NULL;
    clt_tensor *choice = probs ? clt_multinomial(probs, 1, true) : NULL;
    clt_tensor *token = choice ? clt_gather(idx, 1, choice) : NULL;
    clt_tensor_release(values), clt_tensor_release(idx), clt_tensor_release(probs);
    clt_tensor_release(choice);
    return token;
}

/* The prompt's ids, (1, T) on cpu: the tokenizer's, or one per byte without one. */
static clt_tensor *encode(const clt_tokenizer *tok, const char *prompt)
{
    if (tok)
        return clt_tokenizer_encode_tensor(tok, prompt, strlen(prompt));
    int64_t n = (int64_t)strlen(prompt), *ids = malloc((size_t)n * sizeof *ids);
    if (!ids)
        return NULL;
    for (int64_t i = 0; i < n; i++)
        ids[i] = (unsigned char)prompt[i];
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(1, n), ids, CLT_I64, clt_device_cpu());
    free(ids);
    return t;
}

/* Prints a token as the bytes it stands for (a piece of a UTF-8 character at times: the
 * terminal joins them); without a tokenizer the byte it is, '?' past 255. */
static void print_token(const clt_tokenizer *tok, int64_t token)
{
    char text[256];
    size_t length;
    if (!tok) {
        unsigned char byte = token < 256 ? (unsigned char)token : '?';
        putchar(byte >= 32 || byte == '\n' || byte == '\t' ? byte : '.');
    } else if (clt_tokenizer_decode(tok, &token, 1, text, sizeof text, &length) == CLT_OK) {
        fwrite(text, 1, length, stdout);
    } else {
        fputs("?", stdout);
    }
    fflush(stdout);
}

/* dir/name into buf (of size bytes), or NULL for a NULL dir. */
static const char *in_folder(const char *dir, const char *name, char *buf, size_t size)
{
    if (!dir)
        return NULL;
    snprintf(buf, size, "%s/%s", dir, name);
    return buf;
}

int main(int argc, char **argv)
{
    const char *config_path = NULL, *weights = NULL, *device_name = NULL, *prompt = NULL;
    const char *model_dir = NULL, *tokenizer_dir = NULL;
    char config_buf[4096], weights_buf[4096];
    int tokens = 32, top_k = 0;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--model") && i + 1 < argc)
            model_dir = argv[++i];
        else if (!strcmp(a, "--tokenizer") && i + 1 < argc)
            tokenizer_dir = argv[++i];
        else if (!strcmp(a, "--config") && i + 1 < argc)
            config_path = argv[++i];
        else if (!strcmp(a, "--weights") && i + 1 < argc)
            weights = argv[++i];
        else if (!strcmp(a, "--device") && i + 1 < argc)
            device_name = argv[++i];
        else if (!strcmp(a, "--tokens") && i + 1 < argc)
            tokens = atoi(argv[++i]);
        else if (!strcmp(a, "--top-k") && i + 1 < argc)
            top_k = atoi(argv[++i]);
        else if (!strcmp(a, "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else
            prompt = a;
    }
    if (!prompt || !*prompt || tokens < 0 || top_k < 0) {
        fprintf(stderr, "usage: gpt [--model DIR] [--config FILE] [--weights FILE] "
                        "[--tokenizer DIR] [--device NAME] [--tokens N] [--top-k K] [--seed S] "
                        "PROMPT\n");
        return 2;
    }
    if (!config_path)
        config_path = in_folder(model_dir, "config.json", config_buf, sizeof config_buf);
    if (!weights)
        weights = in_folder(model_dir, "model.safetensors", weights_buf, sizeof weights_buf);
    if (!tokenizer_dir)
        tokenizer_dir = model_dir;
    clt_tokenizer *tok = NULL;
    if (tokenizer_dir)
        CHECK(tok = clt_tokenizer_load(tokenizer_dir)); /* GPT2TokenizerFast.from_pretrained */
    clt_gpt2_config config = clt_gpt2_config_default(); /* GPT2Config(...) */
    config.vocab_size = 256, config.n_positions = 256, config.n_embd = 128;
    config.n_layer = 4, config.n_head = 4;
    if (config_path)
        CHECK(clt_gpt2_config_read(config_path, &config) == CLT_OK);
    clt_tensor *next = encode(tok, prompt);
    CHECK(next);
    int64_t n = clt_tensor_size(next, 1);
    int64_t vocab = tok ? clt_tokenizer_vocab_size(tok) : 256;
    if (n < 1 || config.vocab_size < vocab || n + tokens > config.n_positions) {
        fprintf(stderr,
                "gpt: the prompt's %lld tokens and %d more must fit the model's %lld "
                "positions, and its vocabulary (%lld) hold the tokenizer's (%lld)\n",
                (long long)n, tokens, (long long)config.n_positions,
                (long long)config.vocab_size, (long long)vocab);
        return 1;
    }
    clt_device *device = device_name ? clt_device_get(device_name) : clt_device_default();
    CHECK(device);
    clt_manual_seed(0);
    clt_module *model = clt_gpt2_new(&config);
    CHECK(model);
    if (weights)
        CHECK(clt_gpt2_load(model, weights) == CLT_OK);
    clt_module_train(model, false);
    CHECK(clt_module_to(model, device) == CLT_OK);
    printf("GPT-2: %d layers, %d heads, width %lld, %lld parameters, on %s%s\n", config.n_layer,
           config.n_head, (long long)config.n_embd, (long long)clt_module_parameter_count(model),
           clt_device_name(device), weights ? "" : " (random weights: the text is noise)");

    CHECK(clt_tensor_to_(&next, device) == CLT_OK);
    clt_gpt2_cache cache;
    CHECK(clt_gpt2_cache_init(&cache, model) == CLT_OK);
    clt_manual_seed(seed); /* the sampler's draws */
    double start = now_s(), first = 0;
    printf("%s", prompt);
    CLT_NO_GRAD {
        for (int t = 0; t < tokens; t++) {
            clt_tensor *logits = clt_gpt2_forward(model, next, &cache);
            CHECK(logits);
            clt_tensor *last = clt_narrow(logits, 1, clt_tensor_size(logits, 1) - 1, 1);
            clt_tensor *row = last ? clt_squeeze(last, 1) : NULL;
            CHECK(row);
            clt_tensor *chosen = pick(row, top_k);
            int64_t token;
            CHECK(chosen && clt_tensor_copy_to_host(chosen, &token, sizeof token) == CLT_OK);
            if (t == 0)
                first = now_s() - start;
            clt_tensor_release(row), clt_tensor_release(last), clt_tensor_release(logits);
            clt_tensor_release(next);
            next = chosen; /* (1, 1), already on the device */
            print_token(tok, token);
        }
    }
    double total = now_s() - start;
    printf("\n%d tokens in %.2f s (the prompt's %lld and the first: %.2f s; then %.1f tokens/s)\n",
           tokens, total, (long long)n, first,
           tokens > 1 ? (tokens - 1) / (total - first) : 0.0);
    clt_tensor_release(next);
    clt_gpt2_cache_clear(&cache);
    clt_module_release(model);
    clt_tokenizer_free(tok);
    return 0;
}
