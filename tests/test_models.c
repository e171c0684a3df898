/* The models suite: cltensor_models' ResNet, MobileNetV2, GPT-2 and BERT against PyTorch's
 * numbers (tests/reference/make_reference.py wrote them with PyTorch 1.13), on every device: a
 * small ResNet-18-shaped net's and a small MobileNetV2's eval-mode logits, and one training
 * step's loss and every gradient; a small GPT-2's logits, loss and gradients (the tied
 * embedding's included) and its greedy decoding through the KV cache; a small BERT's hidden
 * state, pooled output and gradients; the full-size ResNet-18, ResNet-50, MobileNetV2, GPT-2
 * small and bert-base have PyTorch's parameter names and shapes. models_hf.c adds the
 * config.json fields, the options they implement and the Hugging Face head classes' files. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor/models.h>

#include "backends/backend.h"
#include "helpers.h"
#include "models_hf.h"

#define REFERENCE(name) MODELS_REFERENCE(name)

/* A reference file's tensors on dev. */
void models_load_reference(const char *path, clt_device *dev, clt_safetensors *st)
{
    ck_assert_msg(clt_safetensors_load(path, dev, st) == CLT_OK, "%s", clt_last_error());
}

clt_tensor *models_ref(const clt_safetensors *st, const char *name)
{
    clt_tensor *t = clt_safetensors_get(st, name);
    ck_assert_msg(t != NULL, "the reference has no \"%s\"", name);
    return t;
}

/* Loads the reference's weights (every entry that is not an input, output or gradient) into m,
 * strictly: each of m's names must be there. */
void models_load_weights(clt_module *m, const clt_safetensors *st)
{
    clt_named_tensor *w = malloc((size_t)st->count * sizeof *w);
    int n = 0;
    for (int i = 0; i < st->count; i++) {
        const char *name = st->tensors[i].name;
        static const char *const not_weights[] =
            {"input",          "target",         "logits",
             "loss",           "greedy",         "input_ids",
             "token_type_ids", "attention_mask", "last_hidden_state",
             "pooler_output"};
        bool weight = strncmp(name, "grad.", 5) != 0 && strncmp(name, "probe.", 6) != 0;
        for (size_t k = 0; weight && k < sizeof not_weights / sizeof *not_weights; k++)
            weight = strcmp(name, not_weights[k]) != 0;
        if (weight)
            w[n++] = st->tensors[i];
    }
    ck_assert_msg(clt_module_load_state_dict(m, w, n, true, NULL) == CLT_OK, "%s",
                  clt_last_error());
    free(w);
}

/* |got - want| <= atol + rtol |want| elementwise, naming the first that is not. */
void models_assert_close(clt_tensor *got, clt_tensor *want, double atol, double rtol,
                         const char *what, clt_device *dev)
{
    ck_assert_msg(got != NULL, "%s on %s: %s", what, clt_device_name(dev), clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(got), clt_tensor_numel(want));
    double *g = test_values(got), *w = test_values(want);
    for (int64_t i = 0; i < clt_tensor_numel(want); i++)
        ELEMENT_CHECK(fabs(g[i] - w[i]) <= atol + rtol * fabs(w[i]),
                      "%s on %s: element %lld is %.9g, PyTorch's %.9g", what,
                      clt_device_name(dev), (long long)i, g[i], w[i]);
    free(g), free(w);
}

typedef struct grad_check {
    const clt_safetensors *st;
    clt_device *dev;
    int checked;
} grad_check;

/* A gradient against PyTorch's, as a whole: |got - want| <= 3e-3 |want| in the L2 norm. Not
 * elementwise: rounding in another order decides the odd ReLU or max-pool tie the other way,
 * moving a few elements by a few percent, while a wrong formula moves the whole tensor. The
 * bound is f32 rounding through a deep net whose batch statistics come from 2 images: the
 * ResNet's gradients differ from PyTorch's by 2e-4 to 1.1e-3 in this norm, all elements alike,
 * and by how much depends on the CPU's GEMM kernels (1.08e-3 at most with AVX2 kernels, under
 * 1e-3 with AVX-512 ones), while an error in a formula gives 1e-1 and more. The 1e-6 floor is
 * for gradients that are zero but for rounding: a BatchNorm's bias ahead of a 1x1 convolution
 * and a training-mode BatchNorm (which removes each channel's mean) has a gradient of about
 * 1e-7 in PyTorch and in any other order of sums, against 1e-2 for the others. */
static int check_grad(const char *name, clt_tensor *p, void *user)
{
    grad_check *c = user;
    char key[256];
    snprintf(key, sizeof key, "grad.%s", name);
    clt_tensor *g = clt_tensor_grad(p), *want = models_ref(c->st, key);
    ck_assert_msg(g != NULL, "%s on %s: no gradient", key, clt_device_name(c->dev));
    ck_assert_int_eq(clt_tensor_numel(g), clt_tensor_numel(want));
    double *gv = test_values(g), *wv = test_values(want), num = 0, den = 0;
    for (int64_t i = 0; i < clt_tensor_numel(want); i++)
        num += (gv[i] - wv[i]) * (gv[i] - wv[i]), den += wv[i] * wv[i];
    ck_assert_msg(sqrt(num) <= 3e-3 * sqrt(den) + 1e-6, "%s on %s: relative error %.3g", key,
                  clt_device_name(c->dev), sqrt(num / (den ? den : 1)));
    free(gv), free(wv);
    clt_tensor_release(g);
    c->checked++;
    return 0;
}

/* An image model against its reference file: eval-mode logits, recorded and not (inference's
 * fused convolutions, the 3 x 3 ones at stride 1 through Winograd's algorithm and without), then
 * one training step's loss and every one of its `params` gradients. */
static void check_image_model(clt_module *m, const char *path, int params, clt_device *dev)
{
    clt_safetensors st;
    models_load_reference(path, dev, &st);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    models_load_weights(m, &st);
    clt_module_train(m, false);
    clt_tensor *logits = clt_module_forward(m, models_ref(&st, "input"));
    models_assert_close(logits, models_ref(&st, "logits"), 2e-5, 1e-4, "eval logits", dev);
    clt_tensor_release(logits);
    for (int winograd = 0; winograd < 2; winograd++) {
        clt__conv_winograd = winograd;
        CLT_NO_GRAD {
            logits = clt_module_forward(m, models_ref(&st, "input"));
        }
        models_assert_close(logits, models_ref(&st, "logits"), 2e-5, 1e-4,
                     winograd ? "inference logits, Winograd's convolutions"
                              : "inference logits, direct convolutions",
                     dev);
        clt_tensor_release(logits);
    }
    clt__conv_winograd = -1;
    /* one training step: batch statistics, cross entropy, every gradient */
    clt_module_train(m, true);
    logits = clt_module_forward(m, models_ref(&st, "input"));
    clt_tensor *loss = clt_cross_entropy(logits, models_ref(&st, "target"), NULL);
    models_assert_close(loss, models_ref(&st, "loss"), 1e-5, 1e-4, "loss", dev);
    ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_OK);
    grad_check c = {.st = &st, .dev = dev};
    ck_assert_int_eq(clt_module_foreach_parameter(m, check_grad, &c), 0);
    ck_assert_int_eq(c.checked, params);
    clt_tensor_release(loss), clt_tensor_release(logits);
    clt_module_release(m);
    clt_safetensors_clear(&st);
}

START_TEST(test_models_resnet_reference)
{
    clt_manual_seed(1);
    clt_resnet_config c = clt_resnet_config_default();
    c.planes = 4, c.num_classes = 10;
    check_image_model(clt_resnet_new(&c), REFERENCE("resnet_small.safetensors"), 62,
                      test_device(_i));
}
END_TEST

/* make_reference.py's MOBILENET_SMALL: depthwise convolutions with strides 1 and 2, blocks
 * with and without expansion and residual */
START_TEST(test_models_mobilenet_reference)
{
    static const int small[4][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 1, 2}, {6, 64, 1, 2}};
    clt_manual_seed(1);
    clt_mobilenet_v2_config c = clt_mobilenet_v2_config_default();
    c.width_mult = 0.25, c.num_classes = 4, c.dropout = 0, c.setting = small, c.stages = 4;
    check_image_model(clt_mobilenet_v2_new(&c),
                      /* stem 3, a block of t = 1 6, four of t = 6 9 each, last conv 3, fc 2 */
                      REFERENCE("mobilenet_small.safetensors"), 3 + 6 + 4 * 9 + 3 + 2,
                      test_device(_i));
}
END_TEST

/* The reference's "config" metadata as a config.json file; its path. */
const char *models_config_file(const clt_safetensors *st, char *file, size_t size)
{
    const char *json = clt_safetensors_metadata_get(st, "config");
    ck_assert_ptr_nonnull(json);
    const char *path = test_temp_dir();
    snprintf(file, size, "%s/config.json", path);
    test_write_file(path, "config.json", json);
    return file;
}

static clt_gpt2_config small_gpt(const clt_safetensors *st)
{
    char file[512];
    clt_gpt2_config c;
    const char *path = models_config_file(st, file, sizeof file);
    ck_assert_msg(clt_gpt2_config_read(path, &c) == CLT_OK, "%s", clt_last_error());
    ck_assert(c.vocab_size == 64 && c.n_positions == 32 && c.n_embd == 16 && c.n_layer == 2 &&
              c.n_head == 2);
    return c;
}

START_TEST(test_models_gpt_reference)
{
    clt_device *dev = test_device(_i);
    clt_safetensors st;
    models_load_reference(REFERENCE("gpt_small.safetensors"), dev, &st);
    clt_gpt2_config cfg = small_gpt(&st);
    clt_module *m = clt_gpt2_new(&cfg);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    models_load_weights(m, &st);
    clt_module_train(m, false); /* model.eval(): GPT2Config's dropout probabilities are 0.1 */
    /* lm_head is wte: one tensor, two names */
    ck_assert_ptr_eq(clt_module_get_parameter(m, "lm_head.weight"),
                     clt_module_get_parameter(m, "transformer.wte.weight"));
    clt_tensor *ids = models_ref(&st, "input_ids");
    clt_tensor *logits = clt_module_forward(m, ids);
    models_assert_close(logits, models_ref(&st, "logits"), 2e-5, 1e-4, "logits", dev);
    int64_t rows[2] = {-1, cfg.vocab_size}, n = -1;
    clt_tensor *flat = clt_reshape(logits, 2, rows);
    clt_tensor *t = clt_reshape(models_ref(&st, "target"), 1, &n);
    clt_tensor *loss = clt_cross_entropy(flat, t, NULL);
    models_assert_close(loss, models_ref(&st, "loss"), 1e-5, 1e-4, "loss", dev);
    ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_OK);
    grad_check c = {.st = &st, .dev = dev};
    ck_assert_int_eq(clt_module_foreach_parameter(m, check_grad, &c), 0);
    ck_assert_int_eq(c.checked, 2 + 2 * 12 + 2);
    clt_tensor_release(loss), clt_tensor_release(t), clt_tensor_release(flat);
    clt_tensor_release(logits);

    /* greedy decoding through the cache: the prompt at once, then a token at a time */
    clt_gpt2_cache cache;
    ck_assert_int_eq(clt_gpt2_cache_init(&cache, m), CLT_OK);
    clt_tensor *row = clt_narrow(ids, 0, 0, 1), *prompt = clt_narrow(row, 1, 0, 4);
    clt_tensor *next = clt_tensor_retain(prompt);
    double *want = test_values(models_ref(&st, "greedy"));
    CLT_NO_GRAD {
        for (int k = 0; k < 6; k++) {
            clt_tensor *out = clt_gpt2_forward(m, next, &cache);
            ck_assert_msg(out != NULL, "%s", clt_last_error());
            clt_tensor *last = clt_narrow(out, 1, clt_tensor_size(out, 1) - 1, 1);
            clt_tensor *arg = clt_argmax(last, 2, false);
            double tok;
            ck_assert_int_eq(clt_tensor_item(arg, &tok), CLT_OK);
            ck_assert_msg(tok == want[k], "token %d: %g, PyTorch's %g on %s", k, tok, want[k],
                          clt_device_name(dev));
            clt_tensor_release(next);
            next = arg; /* (1, 1) */
            clt_tensor_release(last), clt_tensor_release(out);
        }
    }
    ck_assert_int_eq(cache.length, 4 + 5);
    /* the cached logits are the full forward's */
    CLT_NO_GRAD {
        clt_gpt2_cache_clear(&cache);
        ck_assert_int_eq(clt_gpt2_cache_init(&cache, m), CLT_OK);
        clt_tensor *a = clt_gpt2_forward(m, prompt, &cache);
        clt_tensor *tail = clt_narrow(row, 1, 4, 3);
        clt_tensor *b = clt_gpt2_forward(m, tail, &cache), *whole = clt_narrow(row, 1, 0, 7);
        clt_tensor *full = clt_gpt2_forward(m, whole, NULL), *full_tail = clt_narrow(full, 1, 4, 3);
        models_assert_close(b, full_tail, 2e-5, 1e-4, "cached logits (3 tokens after 4)", dev);
        clt_tensor *all[] = {a, tail, b, whole, full, full_tail};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            clt_tensor_release(all[k]);
    }
    free(want);
    clt_gpt2_cache_clear(&cache);
    clt_tensor_release(next), clt_tensor_release(prompt), clt_tensor_release(row);
    clt_module_release(m);
    clt_safetensors_clear(&st);
}
END_TEST

/* A BERT encoder with a padding mask and token types: the last hidden state and the pooled
 * output, then every gradient of a loss weighing both. */
START_TEST(test_models_bert_reference)
{
    clt_device *dev = test_device(_i);
    clt_safetensors st;
    char file[512];
    models_load_reference(REFERENCE("bert_small.safetensors"), dev, &st);
    clt_bert_config cfg;
    ck_assert_msg(clt_bert_config_read(models_config_file(&st, file, sizeof file), &cfg) == CLT_OK,
                  "%s", clt_last_error());
    ck_assert(cfg.vocab_size == 50 && cfg.hidden_size == 16 && cfg.num_hidden_layers == 2 &&
              cfg.num_attention_heads == 2 && cfg.intermediate_size == 32 &&
              cfg.max_position_embeddings == 16 && cfg.layer_norm_eps == 1e-12 &&
              cfg.hidden_dropout_prob == 0);
    /* make_reference.py's BertEmbeddings has no padding_idx (transformers' has pad_token_id's,
     * 0 when config.json names none, whose row then gets no gradient) */
    cfg.pad_token_id = CLT_BERT_NO_PAD_TOKEN;
    clt_manual_seed(1);
    clt_module *m = clt_bert_new(&cfg);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    models_load_weights(m, &st);
    clt_module_train(m, false); /* attention_probs_dropout_prob is BertConfig's 0.1 */
    clt_tensor *hidden = NULL, *pooled = NULL, *ids = models_ref(&st, "input_ids");
    ck_assert_msg(clt_bert_forward(m, ids, models_ref(&st, "token_type_ids"),
                                   models_ref(&st, "attention_mask"), &hidden, &pooled) == CLT_OK,
                  "%s", clt_last_error());
    models_assert_close(hidden, models_ref(&st, "last_hidden_state"), 2e-5, 1e-4,
                        "last hidden state", dev);
    models_assert_close(pooled, models_ref(&st, "pooler_output"), 2e-5, 1e-4, "pooled output", dev);
    clt_tensor *a = clt_mul(hidden, models_ref(&st, "probe.hidden"));
    clt_tensor *b = clt_mul(pooled, models_ref(&st, "probe.pooled"));
    clt_tensor *sa = clt_sum(a, NULL, 0, false), *sb = clt_sum(b, NULL, 0, false);
    clt_tensor *loss = clt_add(sa, sb);
    models_assert_close(loss, models_ref(&st, "loss"), 1e-5, 1e-4, "loss", dev);
    ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_OK);
    grad_check c = {.st = &st, .dev = dev};
    ck_assert_int_eq(clt_module_foreach_parameter(m, check_grad, &c), 0);
    ck_assert_int_eq(c.checked, 5 + 2 * 16 + 2);
    clt_tensor *all[] = {loss, sa, sb, a, b, hidden, pooled};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
    /* without a mask every token is attended to: not the padded row's numbers */
    ck_assert_int_eq(clt_bert_forward(m, ids, NULL, NULL, &hidden, NULL), CLT_OK);
    double *got = test_values(hidden), *want = test_values(models_ref(&st, "last_hidden_state"));
    ck_assert_msg(fabs(got[7 * 16] - want[7 * 16]) > 1e-3, "the mask changed nothing");
    free(got), free(want);
    clt_tensor_release(hidden);
    /* bad input refused, naming the function and the sizes */
    ck_assert_int_eq(clt_bert_forward(m, models_ref(&st, "attention_mask"), NULL,
                                      models_ref(&st, "probe.pooled"), &hidden, NULL),
                     CLT_ERR_SHAPE);
    ck_assert_error_has("clt_bert_forward: ids must be (B, T)");
    clt_module_release(m);
    clt_safetensors_clear(&st);
}
END_TEST

/* Reads the names file into memory; name i and its shape. */
#define NAMES_MAX 400
typedef struct name_list {
    char name[NAMES_MAX][128];
    int ndim[NAMES_MAX];
    int64_t shape[NAMES_MAX][4];
    int count;
} name_list;

static name_list *read_names(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s", path);
    name_list *l = calloc(1, sizeof *l);
    char line[512];
    while (fgets(line, sizeof line, f) && l->count < NAMES_MAX) {
        char *tok = strtok(line, " \n");
        if (!tok)
            continue;
        snprintf(l->name[l->count], sizeof l->name[0], "%s", tok);
        while ((tok = strtok(NULL, " \n")) && l->ndim[l->count] < 4)
            l->shape[l->count][l->ndim[l->count]++] = atoll(tok);
        l->count++;
    }
    fclose(f);
    return l;
}

typedef struct walk {
    name_list *l;
    int found;
    char missing[256];
} walk;

static int find_name(const char *name, clt_tensor *t, void *user)
{
    walk *w = user;
    for (int i = 0; i < w->l->count; i++) {
        if (strcmp(w->l->name[i], name) != 0)
            continue;
        ck_assert_msg(clt_tensor_ndim(t) == w->l->ndim[i], "%s: %d dimensions, PyTorch's %d", name,
                      clt_tensor_ndim(t), w->l->ndim[i]);
        for (int d = 0; d < w->l->ndim[i]; d++)
            ck_assert_msg(clt_tensor_size(t, d) == w->l->shape[i][d], "%s: size %d", name, d);
        w->found++;
        return 0;
    }
    snprintf(w->missing, sizeof w->missing, "%s", name);
    return 1;
}

/* Every name and shape of ours is PyTorch's, and PyTorch has no other (but the tied one). */
void models_check_names(clt_module *m, const char *path, int tied)
{
    name_list *l = read_names(path);
    walk w = {.l = l};
    ck_assert_msg(clt_module_foreach_parameter(m, find_name, &w) == 0, "not PyTorch's: %s",
                  w.missing);
    ck_assert_msg(clt_module_foreach_buffer(m, find_name, &w) == 0, "not PyTorch's: %s",
                  w.missing);
    ck_assert_int_eq(w.found + tied, l->count);
    free(l);
}

START_TEST(test_models_full_size_names)
{
    clt_module *r = clt_resnet18(1000);
    ck_assert_msg(r != NULL, "%s", clt_last_error());
    models_check_names(r, REFERENCE("resnet18_names.txt"), 0);
    ck_assert_int_eq(clt_module_parameter_count(r), 11689512); /* torchvision's resnet18 */
    clt_module_release(r);
    clt_module *mb = clt_mobilenet_v2(1000);
    ck_assert_msg(mb != NULL, "%s", clt_last_error());
    models_check_names(mb, REFERENCE("mobilenet_v2_names.txt"), 0);
    ck_assert_int_eq(clt_module_parameter_count(mb), 3504872); /* torchvision's mobilenet_v2 */
    clt_module_release(mb);
    clt_gpt2_config c = clt_gpt2_config_default();
    clt_module *g = clt_gpt2_new(&c);
    ck_assert_msg(g != NULL, "%s", clt_last_error());
    models_check_names(g, REFERENCE("gpt2_names.txt"), 1); /* lm_head.weight is wte's */
    ck_assert_int_eq(clt_module_parameter_count(g), 124439808); /* GPT-2 small */
    clt_module_release(g);
    clt_bert_config bc = clt_bert_config_default();
    clt_module *bm = clt_bert_new(&bc);
    ck_assert_msg(bm != NULL, "%s", clt_last_error());
    models_check_names(bm, REFERENCE("bert_base_names.txt"), 0);
    ck_assert_int_eq(clt_module_parameter_count(bm), 109482240); /* bert-base's BertModel */
    clt_module_release(bm);
}
END_TEST

/* ---- bad input: refused with the public function's name, the cause and the values ---------- */

/* A tiny GPT-2: 16 tokens, 8 positions, 8 features. */
static clt_module *tiny_gpt(int n_layer, int n_head)
{
    clt_gpt2_config c = clt_gpt2_config_default();
    c.vocab_size = 16, c.n_positions = 8, c.n_embd = 8, c.n_layer = n_layer, c.n_head = n_head;
    clt_module *m = clt_gpt2_new(&c);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    return m;
}

/* i64 token ids (B, T) on dev, all 3. */
static clt_tensor *token_ids(int64_t B, int64_t T, clt_device *dev)
{
    clt_tensor *t = clt_tensor_full(CLT_SHAPE(B, T), 3, CLT_I64, dev);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    return t;
}

/* clt_gpt2_forward refuses the cache with `status`, its message holding each of `what`, and leaves
 * the cache as it was. */
static void assert_cache_refused(clt_module *m, clt_tensor *ids, clt_gpt2_cache *cache,
                                 clt_status status, const char *const *what, int n)
{
    clt_gpt2_cache before = *cache;
    clt_tensor *k0 = cache->k && cache->n_layer > 0 ? cache->k[0] : NULL;
    ck_assert_ptr_null(clt_gpt2_forward(m, ids, cache));
    ck_assert_int_eq(clt_last_status(), status);
    ck_assert_error_has("clt_gpt2_forward: ");
    for (int i = 0; i < n; i++)
        ck_assert_error_has(what[i]);
    ck_assert(cache->n_layer == before.n_layer && cache->length == before.length &&
              cache->k == before.k && cache->v == before.v);
    ck_assert_ptr_eq(cache->k && cache->n_layer > 0 ? cache->k[0] : NULL, k0);
}

START_TEST(test_models_gpt_cache_mismatch)
{
    clt_module *one = tiny_gpt(1, 1), *two_layers = tiny_gpt(2, 1), *two_heads = tiny_gpt(1, 2);
    clt_tensor *step = token_ids(1, 1, clt_device_cpu()), *pair = token_ids(2, 1, NULL);
    clt_gpt2_cache cache;
    ck_assert_int_eq(clt_gpt2_cache_init(&cache, one), CLT_OK);
    /* made for one layer, used with two: the model's second layer has no entry */
    assert_cache_refused(two_layers, step, &cache, CLT_ERR_INVALID_ARGUMENT,
                         (const char *[]){"n_layer 1", "n_layer 2"}, 2);
    clt_tensor *prompt = token_ids(1, 2, NULL), *out = clt_gpt2_forward(one, prompt, &cache);
    ck_assert_msg(out != NULL, "%s", clt_last_error());
    clt_tensor_release(out);
    ck_assert_int_eq(cache.length, 2);
    /* keys (1, 1, 2, 8): another head count or head size, another batch, another length */
    assert_cache_refused(two_heads, step, &cache, CLT_ERR_SHAPE,
                         (const char *[]){"(1, 1, 2, 8)", "(1, 2, 2, 4)"}, 2);
    assert_cache_refused(one, pair, &cache, CLT_ERR_SHAPE,
                         (const char *[]){"(1, 1, 2, 8)", "(2, 1, 2, 8)"}, 2);
    cache.length = 3;
    assert_cache_refused(one, step, &cache, CLT_ERR_SHAPE,
                         (const char *[]){"(1, 1, 2, 8)", "(1, 1, 3, 8)"}, 2);
    cache.length = -1;
    assert_cache_refused(one, step, &cache, CLT_ERR_INVALID_ARGUMENT,
                         (const char *[]){"length -1"}, 1);
    cache.length = 2;
    /* another dtype, another device */
    clt_module *wide = tiny_gpt(1, 1);
    ck_assert_int_eq(clt_module_to_dtype(wide, CLT_F64), CLT_OK);
    assert_cache_refused(wide, step, &cache, CLT_ERR_DTYPE, (const char *[]){"f32", "f64"}, 2);
    if (test_device_total > 1) {
        clt_device *dev = test_device(1);
        clt_module *moved = tiny_gpt(1, 1);
        clt_tensor *there = token_ids(1, 1, dev);
        ck_assert_int_eq(clt_module_to(moved, dev), CLT_OK);
        assert_cache_refused(moved, there, &cache, CLT_ERR_DEVICE_MISMATCH,
                             (const char *[]){"cpu", clt_device_name(dev)}, 2);
        clt_tensor_release(there);
        clt_module_release(moved);
    }
    /* not a GPT-2 */
    clt_resnet_config rc = clt_resnet_config_default();
    rc.layers[0] = rc.layers[1] = rc.layers[2] = rc.layers[3] = 1;
    rc.planes = 2, rc.num_classes = 3;
    clt_module *resnet = clt_resnet_new(&rc);
    assert_cache_refused(resnet, step, &cache, CLT_ERR_INVALID_ARGUMENT,
                         (const char *[]){"ResNet"}, 1);
    clt_gpt2_cache other;
    ck_assert_int_eq(clt_gpt2_cache_init(&other, resnet), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_gpt2_cache_init: ");
    ck_assert_error_has("ResNet");
    ck_assert_int_eq(clt_gpt2_cache_init(&other, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_gpt2_load(resnet, "unread.safetensors"), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_gpt2_load: ");
    /* the cache still serves its own model */
    out = clt_gpt2_forward(one, step, &cache);
    ck_assert_msg(out != NULL, "%s", clt_last_error());
    ck_assert_int_eq(cache.length, 3);
    clt_tensor *all[] = {out, prompt, step, pair};
    TEST_RELEASE_ALL(all);
    clt_gpt2_cache_clear(&cache);
    clt_module *models[] = {one, two_layers, two_heads, wide, resnet};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++)
        clt_module_release(models[i]);
}
END_TEST

/* A model deeper than any fixed bound decodes through its cache. */
START_TEST(test_models_gpt_cache_deep)
{
    clt_module *m = tiny_gpt(65, 2);
    clt_tensor *ids = token_ids(1, 2, NULL);
    clt_gpt2_cache cache;
    ck_assert_int_eq(clt_gpt2_cache_init(&cache, m), CLT_OK);
    for (int k = 0; k < 2; k++) {
        clt_tensor *out = clt_gpt2_forward(m, ids, &cache);
        ck_assert_msg(out != NULL, "%s", clt_last_error());
        clt_tensor_release(out);
    }
    ck_assert_int_eq(cache.length, 4);
    clt_gpt2_cache_clear(&cache);
    clt_tensor_release(ids);
    clt_module_release(m);
}
END_TEST

/* A copy of m's wte values. */
static clt_tensor *wte_copy(clt_module *m)
{
    clt_tensor *w = clt_module_get_parameter(m, "transformer.wte.weight");
    clt_tensor *c =
        clt_tensor_to_ex(w, &(clt_to_options){.dtype = CLT_DTYPE_NONE, .copy = true});
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    return c;
}

/* Writes `from`'s weights with `head` as lm_head.weight to a file; its path. */
static const char *file_with_head(clt_module *from, clt_tensor *head)
{
    static char path[512];
    clt_state_dict sd;
    ck_assert_int_eq(clt_module_state_dict(from, &sd), CLT_OK);
    clt_named_tensor *named = malloc((size_t)(sd.count + 1) * sizeof *named);
    int n = 0;
    for (int i = 0; i < sd.count; i++)
        if (strcmp(sd.tensors[i].name, "lm_head.weight") != 0)
            named[n++] = sd.tensors[i];
    named[n++] = (clt_named_tensor){"lm_head.weight", head};
    snprintf(path, sizeof path, "%s/gpt.safetensors", test_temp_dir());
    ck_assert_msg(clt_safetensors_save(path, named, n, NULL, 0) == CLT_OK, "%s",
                  clt_last_error());
    free(named);
    clt_state_dict_clear(&sd);
    return path;
}

/* lm_head.weight is wte's (vocab_size, n_embd): another shape is refused, naming both, and
 * loads nothing; wte's shape loads. */
START_TEST(test_models_gpt_load_head_shape)
{
    clt_module *m = tiny_gpt(1, 2), *other = tiny_gpt(1, 2);
    clt_tensor *before = wte_copy(m);
    struct {
        int ndim;
        int64_t shape[2];
        const char *text;
    } bad[] = {{2, {7, 5}, "(7, 5)"}, {2, {8, 16}, "(8, 16)"}, {1, {128}, "(128)"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        clt_tensor *head = clt_tensor_zeros(bad[i].ndim, bad[i].shape, CLT_F32, NULL);
        ck_assert_int_eq(clt_gpt2_load(m, file_with_head(other, head)),
                         CLT_ERR_INVALID_ARGUMENT);
        ck_assert_error_has("clt_gpt2_load: ");
        ck_assert_error_has("lm_head.weight");
        ck_assert_error_has(bad[i].text);
        ck_assert_error_has("(16, 8)");
        test_assert_same_bytes(clt_module_get_parameter(m, "transformer.wte.weight"), before);
        clt_tensor_release(head);
    }
    clt_tensor *want = wte_copy(other);
    ck_assert_msg(clt_gpt2_load(m, file_with_head(other, want)) == CLT_OK, "%s", clt_last_error());
    test_assert_same_bytes(clt_module_get_parameter(m, "transformer.wte.weight"), want);
    clt_tensor_release(want), clt_tensor_release(before);
    clt_module_release(m), clt_module_release(other);
}
END_TEST

/* clt_mobilenet_v2_new refuses the config with CLT_ERR_INVALID_ARGUMENT naming `what`. */
static void assert_mobilenet_refused(clt_mobilenet_v2_config c, const char *what)
{
    clt_clear_error();
    clt_module *m = clt_mobilenet_v2_new(&c);
    ck_assert_msg(m == NULL, "accepted: %s", what);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_mobilenet_v2_new: ");
    ck_assert_error_has(what);
}

static clt_mobilenet_v2_config mobilenet_with(const int (*setting)[4], int stages,
                                              double width_mult)
{
    clt_mobilenet_v2_config c = clt_mobilenet_v2_config_default();
    c.width_mult = width_mult, c.num_classes = 4, c.setting = setting, c.stages = stages;
    return c;
}

/* Every stage's values on its own: a count within the cap, and a running total within it that
 * cannot wrap (a sum within the cap hides none); an expansion, channels and stride of at least
 * 1, and hidden channels an int holds. */
START_TEST(test_models_mobilenet_bad_stages)
{
    static const int wrapping[2][4] = {{1, 16, 100, 1}, {6, 24, -60, 2}};
    static const int too_many[1][4] = {{1, 16, 65, 1}};
    static const int total[2][4] = {{1, 16, 40, 1}, {6, 24, 40, 2}};
    static const int overflow[2][4] = {{1, 16, INT_MAX, 1}, {6, 24, INT_MAX, 2}};
    static const int no_t[1][4] = {{0, 16, 1, 1}}, no_c[1][4] = {{1, 0, 1, 1}};
    static const int no_s[1][4] = {{1, 16, 1, 0}}, wide_t[1][4] = {{INT_MAX, 16, 1, 1}};
    static const int wide_c[1][4] = {{1, INT_MAX, 1, 1}};
    assert_mobilenet_refused(mobilenet_with(wrapping, 2, 1), "stage 0: n 100");
    assert_mobilenet_refused(mobilenet_with(wrapping + 1, 1, 1), "stage 0: n -60");
    assert_mobilenet_refused(mobilenet_with(too_many, 1, 1), "stage 0: n 65");
    assert_mobilenet_refused(mobilenet_with(total, 2, 1), "stage 1: n 40");
    assert_mobilenet_refused(mobilenet_with(overflow, 2, 1), "stage 0: n 2147483647");
    assert_mobilenet_refused(mobilenet_with(no_t, 1, 1), "stage 0: t 0");
    assert_mobilenet_refused(mobilenet_with(no_c, 1, 1), "stage 0: c 0");
    assert_mobilenet_refused(mobilenet_with(no_s, 1, 1), "stage 0: s 0");
    assert_mobilenet_refused(mobilenet_with(wide_t, 1, 1), "stage 0: t 2147483647");
    assert_mobilenet_refused(mobilenet_with(wide_c, 1, 1), "stage 0: c 2147483647");
    assert_mobilenet_refused(mobilenet_with(total, 0, 1), "stages 0");
    /* stages of no blocks are torchvision's too */
    static const int empty[2][4] = {{1, 16, 0, 1}, {6, 24, 1, 2}};
    clt_mobilenet_v2_config c = mobilenet_with(empty, 2, 0.25);
    clt_module *m = clt_mobilenet_v2_new(&c);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    clt_module_release(m);
}
END_TEST

/* The width multiplier is refused before any conversion of it (an infinity or NaN would be
 * undefined), and so is one that makes more channels than an int holds; the classifier's
 * settings too. */
START_TEST(test_models_mobilenet_bad_width)
{
    static const int too_many[1][4] = {{1, 16, 65, 1}};
    assert_mobilenet_refused(mobilenet_with(NULL, 0, INFINITY), "width_mult inf");
    assert_mobilenet_refused(mobilenet_with(NULL, 0, NAN), "width_mult nan");
    assert_mobilenet_refused(mobilenet_with(NULL, 0, -1), "width_mult -1");
    assert_mobilenet_refused(mobilenet_with(NULL, 0, 0), "width_mult 0");
    assert_mobilenet_refused(mobilenet_with(NULL, 0, 1e8), "width_mult 1e+08");
    /* the width is judged before the stages */
    assert_mobilenet_refused(mobilenet_with(too_many, 1, 1e300), "width_mult 1e+300");
    clt_mobilenet_v2_config c = mobilenet_with(NULL, 0, 1);
    c.num_classes = 0;
    assert_mobilenet_refused(c, "num_classes 0");
    c.num_classes = 4, c.dropout = 1.5;
    assert_mobilenet_refused(c, "dropout 1.5");
    c.dropout = -0.25;
    assert_mobilenet_refused(c, "dropout -0.25");
    c.dropout = NAN;
    assert_mobilenet_refused(c, "dropout nan");
    clt_clear_error();
    ck_assert_ptr_null(clt_mobilenet_v2_new(NULL));
    ck_assert_error_has("clt_mobilenet_v2_new: ");
}
END_TEST

/* The constructors refuse a config they cannot build, naming themselves and the value. */
static void assert_refused(clt_module *m, const char *where, const char *what)
{
    ck_assert_msg(m == NULL, "%s accepted %s", where, what);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has(where);
    ck_assert_error_has(what);
}

START_TEST(test_models_bad_config)
{
    clt_gpt2_config g = clt_gpt2_config_default();
    g.vocab_size = 16, g.n_positions = 8, g.n_embd = 8, g.n_layer = 1, g.n_head = 2;
    clt_gpt2_config gs[] = {g, g, g, g, g, g, g, g, g, g};
    gs[0].vocab_size = 0, gs[1].n_positions = -1, gs[2].n_embd = 0, gs[3].n_head = 3;
    gs[4].n_layer = 0, gs[5].layer_norm_epsilon = INFINITY, gs[6].n_inner = -1;
    gs[7].attn_pdrop = 1.5, gs[8].resid_pdrop = -0.5;
    gs[9].activation_function = (clt_models_activation)99;
    const char *gwhat[] = {"vocab_size 0",           "n_positions -1",     "n_embd 0",
                           "n_head 3",               "n_layer 0",          "layer_norm_epsilon inf",
                           "n_inner -1",             "attn_pdrop 1.5",     "resid_pdrop -0.5",
                           "activation_function 99"};
    for (int i = 0; i < 10; i++) {
        clt_clear_error();
        assert_refused(clt_gpt2_new(&gs[i]), "clt_gpt2_new: ", gwhat[i]);
    }
    clt_bert_config b = clt_bert_config_default();
    b.vocab_size = 16, b.hidden_size = 8, b.num_hidden_layers = 1, b.num_attention_heads = 2;
    b.intermediate_size = 8, b.max_position_embeddings = 8;
    clt_bert_config bs[] = {b, b, b, b, b, b, b, b};
    bs[0].intermediate_size = 0, bs[1].type_vocab_size = 0, bs[2].hidden_size = -8;
    bs[3].num_hidden_layers = 0, bs[4].hidden_dropout_prob = 1.5;
    bs[5].attention_probs_dropout_prob = NAN, bs[6].pad_token_id = 16, bs[7].pad_token_id = -17;
    const char *bwhat[] = {"intermediate_size 0", "type_vocab_size 0", "hidden_size -8",
                           "num_hidden_layers 0", "hidden_dropout_prob 1.5",
                           "attention_probs_dropout_prob nan", "pad_token_id 16",
                           "pad_token_id -17"};
    for (int i = 0; i < 8; i++) {
        clt_clear_error();
        assert_refused(clt_bert_new(&bs[i]), "clt_bert_new: ", bwhat[i]);
    }
    clt_resnet_config r = clt_resnet_config_default();
    r.layers[0] = r.layers[1] = r.layers[2] = r.layers[3] = 1;
    r.planes = 2, r.num_classes = 3;
    clt_resnet_config rs[] = {r, r, r, r, r, r, r, r};
    rs[0].layers[2] = 65, rs[1].layers[0] = 0, rs[2].planes = -1, rs[3].num_classes = 0;
    rs[4].groups = 32, rs[5].width_per_group = 4, rs[6].replace_stride_with_dilation[1] = true;
    rs[7].block = CLT_RESNET_BOTTLENECK, rs[7].width_per_group = 16; /* 2 * 16 / 64 = 0 */
    const char *rwhat[] = {"layer3: 65 blocks",
                           "layer1: 0 blocks",
                           "planes -1",
                           "num_classes 0",
                           "BasicBlock only supports groups=1 and base_width=64 (groups 32",
                           "BasicBlock only supports groups=1 and base_width=64 (groups 1, "
                           "width_per_group 4)",
                           "Dilation > 1 not supported in BasicBlock "
                           "(replace_stride_with_dilation[1] for layer3)",
                           "Bottleneck width below 1"};
    for (int i = 0; i < 8; i++) {
        clt_clear_error();
        assert_refused(clt_resnet_new(&rs[i]), "clt_resnet_new: ", rwhat[i]);
    }
    clt_clear_error();
    assert_refused(clt_gpt2_new(NULL), "clt_gpt2_new: ", "NULL");
    assert_refused(clt_bert_new(NULL), "clt_bert_new: ", "NULL");
    assert_refused(clt_resnet_new(NULL), "clt_resnet_new: ", "NULL");
    /* clt_bert_forward: a model of another type, nowhere to write the hidden state */
    clt_module *gpt = tiny_gpt(1, 2), *bert = clt_bert_new(&b);
    clt_tensor *ids = token_ids(1, 2, NULL), *hidden = NULL;
    ck_assert_int_eq(clt_bert_forward(gpt, ids, NULL, NULL, &hidden, NULL),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_bert_forward: ");
    ck_assert_error_has("GPT2LMHeadModel");
    ck_assert_int_eq(clt_bert_forward(bert, ids, NULL, NULL, NULL, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_bert_forward: ");
    ck_assert_ptr_null(hidden);
    clt_tensor_release(ids);
    clt_module_release(gpt), clt_module_release(bert);
}
END_TEST

/* config.json's sizes are whole numbers in range, taken without a conversion that could
 * overflow; a file too large to read whole is refused, not read in part; nothing is written
 * on a refusal. */
START_TEST(test_models_config_read_refused)
{
    const char *dir = test_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    static const struct {
        const char *json, *what;
    } gpt_bad[] = {{"{\"n_embd\": 16.5}", "n_embd 16.5"},
                   {"{\"n_layer\": 1e300}", "n_layer 1e+300"},
                   {"{\"n_layer\": 4294967298}", "n_layer 4.29497e+09"},
                   {"{\"vocab_size\": -3}", "vocab_size -3"},
                   {"{\"n_ctx\": 0.5}", "n_ctx 0.5"},
                   {"{\"layer_norm_epsilon\": 1e999}", "layer_norm_epsilon inf"}};
    clt_gpt2_config before = clt_gpt2_config_default(), c = before;
    c.n_layer = 3, before = c;
    for (size_t i = 0; i < sizeof gpt_bad / sizeof *gpt_bad; i++) {
        test_write_file(dir, "config.json", gpt_bad[i].json);
        ck_assert_int_eq(clt_gpt2_config_read(path, &c), CLT_ERR_INVALID_ARGUMENT);
        ck_assert_error_has("clt_gpt2_config_read: ");
        ck_assert_error_has(path);
        ck_assert_error_has(gpt_bad[i].what);
        ck_assert(c.n_layer == before.n_layer && c.n_embd == before.n_embd &&
                  c.vocab_size == before.vocab_size);
    }
    static const struct {
        const char *json, *what;
    } bert_bad[] = {{"{\"num_hidden_layers\": 2.5}", "num_hidden_layers 2.5"},
                    {"{\"hidden_size\": 1e300}", "hidden_size 1e+300"},
                    {"{\"num_attention_heads\": 1e10}", "num_attention_heads 1e+10"}};
    for (size_t i = 0; i < sizeof bert_bad / sizeof *bert_bad; i++) {
        clt_bert_config bc;
        test_write_file(dir, "config.json", bert_bad[i].json);
        ck_assert_int_eq(clt_bert_config_read(path, &bc), CLT_ERR_INVALID_ARGUMENT);
        ck_assert_error_has("clt_bert_config_read: ");
        ck_assert_error_has(bert_bad[i].what);
    }
    /* n_layer past the first 64 KiB is read; a file over 1 MiB is refused whole */
    size_t n = 70000, big_n = (1 << 20) + 64;
    char *big = malloc(big_n + 32);
    memset(big, ' ', big_n);
    snprintf(big + n, 32, "{\"n_layer\": 3}");
    test_write_file(dir, "config.json", big);
    ck_assert_msg(clt_gpt2_config_read(path, &c) == CLT_OK, "%s", clt_last_error());
    ck_assert_int_eq(c.n_layer, 3);
    memset(big, ' ', big_n);
    snprintf(big + big_n - 16, 32, "{\"n_layer\": 3}");
    test_write_file(dir, "config.json", big);
    free(big);
    ck_assert_int_eq(clt_gpt2_config_read(path, &c), CLT_ERR_IO);
    ck_assert_error_has("larger than 1048576 bytes");
    /* whole numbers written with a fraction or an exponent are whole */
    test_write_file(dir, "config.json", "{\"n_layer\": 3.0, \"n_embd\": 1.6e1, \"n_head\": 2}");
    ck_assert_msg(clt_gpt2_config_read(path, &c) == CLT_OK, "%s", clt_last_error());
    ck_assert(c.n_layer == 3 && c.n_embd == 16 && c.n_head == 2);
}
END_TEST

Suite *suite_models(void)
{
    Suite *s = suite_create("models");
    TCase *tc = test_case("models", 300);
    ADD_DEVICE_TEST(tc, test_models_resnet_reference);
    ADD_DEVICE_TEST(tc, test_models_mobilenet_reference);
    ADD_DEVICE_TEST(tc, test_models_gpt_reference);
    ADD_DEVICE_TEST(tc, test_models_bert_reference);
    tcase_add_test(tc, test_models_full_size_names);
    tcase_add_test(tc, test_models_gpt_cache_mismatch);
    tcase_add_test(tc, test_models_gpt_cache_deep);
    tcase_add_test(tc, test_models_gpt_load_head_shape);
    tcase_add_test(tc, test_models_mobilenet_bad_stages);
    tcase_add_test(tc, test_models_mobilenet_bad_width);
    tcase_add_test(tc, test_models_bad_config);
    tcase_add_test(tc, test_models_config_read_refused);
    models_hf_add_tests(tc);
    suite_add_tcase(s, tc);
    return s;
}
