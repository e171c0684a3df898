/* The models suite: the ResNet, MobileNetV2 and GPT-2 of samples/models against PyTorch's
 * numbers (tests/reference/make_reference.py wrote them with PyTorch 1.13), on every device: a
 * small ResNet-18-shaped net's and a small MobileNetV2's eval-mode logits, and one training
 * step's loss and every gradient; a
 * small GPT-2's logits, loss and gradients (the tied embedding's included) and its greedy
 * decoding through the KV cache; the full-size ResNet-18 and GPT-2 small have PyTorch's
 * parameter names and shapes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "helpers.h"
#include "models/bert.h"
#include "models/gpt.h"
#include "models/mobilenet.h"
#include "models/resnet.h"

#define REFERENCE(name) CLT_TEST_REFERENCE_DIR "/" name

/* A reference file's tensors on dev. */
static void load_reference(const char *path, clt_device *dev, clt_safetensors *st)
{
    ck_assert_msg(clt_safetensors_load(path, dev, st) == CLT_OK, "%s", clt_last_error());
}

static clt_tensor *ref(const clt_safetensors *st, const char *name)
{
    clt_tensor *t = clt_safetensors_get(st, name);
    ck_assert_msg(t != NULL, "the reference has no \"%s\"", name);
    return t;
}

/* Loads the reference's weights (every entry that is not an input, output or gradient) into m,
 * strictly: each of m's names must be there. */
static void load_weights(clt_module *m, const clt_safetensors *st)
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
static void assert_close(clt_tensor *got, clt_tensor *want, double atol, double rtol,
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
 * and by how much depends on the CPU's GEMM kernels (1.08e-3 at most on an AVX2 EPYC, under
 * 1e-3 on an AVX-512 Xeon), while an error in a formula gives 1e-1 and more. The 1e-6 floor is
 * for gradients that are zero but for rounding: a BatchNorm's bias ahead of a 1x1 convolution
 * and a training-mode BatchNorm (which removes each channel's mean) has a gradient of about
 * 1e-7 in PyTorch and in any other order of sums, against 1e-2 for the others. */
static int check_grad(const char *name, clt_tensor *p, void *user)
{
    grad_check *c = user;
    char key[256];
    snprintf(key, sizeof key, "grad.%s", name);
    clt_tensor *g = clt_tensor_grad(p), *want = ref(c->st, key);
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
    load_reference(path, dev, &st);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    load_weights(m, &st);
    clt_module_train(m, false);
    clt_tensor *logits = clt_module_forward(m, ref(&st, "input"));
    assert_close(logits, ref(&st, "logits"), 2e-5, 1e-4, "eval logits", dev);
    clt_tensor_release(logits);
    for (int winograd = 0; winograd < 2; winograd++) {
        clt__conv_winograd = winograd;
        CLT_NO_GRAD {
            logits = clt_module_forward(m, ref(&st, "input"));
        }
        assert_close(logits, ref(&st, "logits"), 2e-5, 1e-4,
                     winograd ? "inference logits, Winograd's convolutions"
                              : "inference logits, direct convolutions",
                     dev);
        clt_tensor_release(logits);
    }
    clt__conv_winograd = -1;
    /* one training step: batch statistics, cross entropy, every gradient */
    clt_module_train(m, true);
    logits = clt_module_forward(m, ref(&st, "input"));
    clt_tensor *loss = clt_cross_entropy(logits, ref(&st, "target"), NULL);
    assert_close(loss, ref(&st, "loss"), 1e-5, 1e-4, "loss", dev);
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
    check_image_model(resnet_new(&(resnet_config){{2, 2, 2, 2}, 4, 10}),
                      REFERENCE("resnet_small.safetensors"), 62, test_device(_i));
}
END_TEST

/* make_reference.py's MOBILENET_SMALL: depthwise convolutions with strides 1 and 2, blocks
 * with and without expansion and residual */
START_TEST(test_models_mobilenet_reference)
{
    static const int small[4][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 1, 2}, {6, 64, 1, 2}};
    clt_manual_seed(1);
    check_image_model(mobilenet_v2_new(&(mobilenet_config){.width_mult = 0.25,
                                                           .num_classes = 4,
                                                           .setting = small,
                                                           .stages = 4}),
                      /* stem 3, a block of t = 1 6, four of t = 6 9 each, last conv 3, fc 2 */
                      REFERENCE("mobilenet_small.safetensors"), 3 + 6 + 4 * 9 + 3 + 2,
                      test_device(_i));
}
END_TEST

/* The reference's "config" metadata as a config.json file; its path. */
static const char *config_file(const clt_safetensors *st, char *file, size_t size)
{
    const char *json = clt_safetensors_metadata_get(st, "config");
    ck_assert_ptr_nonnull(json);
    const char *path = test_temp_dir();
    snprintf(file, size, "%s/config.json", path);
    test_write_file(path, "config.json", json);
    return file;
}

static gpt_config small_gpt(const clt_safetensors *st)
{
    char file[512], error[256];
    gpt_config c;
    ck_assert_msg(gpt_config_read(config_file(st, file, sizeof file), &c, error,
                                  sizeof error) == CLT_OK,
                  "%s", error);
    ck_assert(c.vocab_size == 64 && c.n_positions == 32 && c.n_embd == 16 && c.n_layer == 2 &&
              c.n_head == 2);
    return c;
}

START_TEST(test_models_gpt_reference)
{
    clt_device *dev = test_device(_i);
    clt_safetensors st;
    load_reference(REFERENCE("gpt_small.safetensors"), dev, &st);
    gpt_config cfg = small_gpt(&st);
    clt_module *m = gpt_new(&cfg);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    load_weights(m, &st);
    /* lm_head is wte: one tensor, two names */
    ck_assert_ptr_eq(clt_module_get_parameter(m, "lm_head.weight"),
                     clt_module_get_parameter(m, "transformer.wte.weight"));
    clt_tensor *ids = ref(&st, "input_ids");
    clt_tensor *logits = clt_module_forward(m, ids);
    assert_close(logits, ref(&st, "logits"), 2e-5, 1e-4, "logits", dev);
    int64_t rows[2] = {-1, cfg.vocab_size}, n = -1;
    clt_tensor *flat = clt_reshape(logits, 2, rows), *t = clt_reshape(ref(&st, "target"), 1, &n);
    clt_tensor *loss = clt_cross_entropy(flat, t, NULL);
    assert_close(loss, ref(&st, "loss"), 1e-5, 1e-4, "loss", dev);
    ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_OK);
    grad_check c = {.st = &st, .dev = dev};
    ck_assert_int_eq(clt_module_foreach_parameter(m, check_grad, &c), 0);
    ck_assert_int_eq(c.checked, 2 + 2 * 12 + 2);
    clt_tensor_release(loss), clt_tensor_release(t), clt_tensor_release(flat);
    clt_tensor_release(logits);

    /* greedy decoding through the cache: the prompt at once, then a token at a time */
    gpt_cache cache;
    ck_assert_int_eq(gpt_cache_init(&cache, m), CLT_OK);
    clt_tensor *row = clt_narrow(ids, 0, 0, 1), *prompt = clt_narrow(row, 1, 0, 4);
    clt_tensor *next = clt_tensor_retain(prompt);
    double *want = test_values(ref(&st, "greedy"));
    CLT_NO_GRAD {
        for (int k = 0; k < 6; k++) {
            clt_tensor *out = gpt_forward(m, next, &cache);
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
        gpt_cache_clear(&cache);
        ck_assert_int_eq(gpt_cache_init(&cache, m), CLT_OK);
        clt_tensor *a = gpt_forward(m, prompt, &cache);
        clt_tensor *tail = clt_narrow(row, 1, 4, 3);
        clt_tensor *b = gpt_forward(m, tail, &cache), *whole = clt_narrow(row, 1, 0, 7);
        clt_tensor *full = gpt_forward(m, whole, NULL), *full_tail = clt_narrow(full, 1, 4, 3);
        assert_close(b, full_tail, 2e-5, 1e-4, "cached logits (3 tokens after 4)", dev);
        clt_tensor *all[] = {a, tail, b, whole, full, full_tail};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            clt_tensor_release(all[k]);
    }
    free(want);
    gpt_cache_clear(&cache);
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
    char file[512], error[256];
    load_reference(REFERENCE("bert_small.safetensors"), dev, &st);
    bert_config cfg;
    ck_assert_msg(bert_config_read(config_file(&st, file, sizeof file), &cfg, error,
                                   sizeof error) == CLT_OK,
                  "%s", error);
    ck_assert(cfg.vocab_size == 50 && cfg.hidden_size == 16 && cfg.num_hidden_layers == 2 &&
              cfg.num_attention_heads == 2 && cfg.intermediate_size == 32 &&
              cfg.max_position_embeddings == 16 && cfg.layer_norm_eps == 1e-12 &&
              cfg.hidden_dropout_prob == 0);
    clt_manual_seed(1);
    clt_module *m = bert_new(&cfg);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    load_weights(m, &st);
    clt_tensor *hidden = NULL, *pooled = NULL;
    ck_assert_msg(bert_forward(m, ref(&st, "input_ids"), ref(&st, "token_type_ids"),
                               ref(&st, "attention_mask"), &hidden, &pooled) == CLT_OK,
                  "%s", clt_last_error());
    assert_close(hidden, ref(&st, "last_hidden_state"), 2e-5, 1e-4, "last hidden state", dev);
    assert_close(pooled, ref(&st, "pooler_output"), 2e-5, 1e-4, "pooled output", dev);
    clt_tensor *a = clt_mul(hidden, ref(&st, "probe.hidden"));
    clt_tensor *b = clt_mul(pooled, ref(&st, "probe.pooled"));
    clt_tensor *sa = clt_sum(a, NULL, 0, false), *sb = clt_sum(b, NULL, 0, false);
    clt_tensor *loss = clt_add(sa, sb);
    assert_close(loss, ref(&st, "loss"), 1e-5, 1e-4, "loss", dev);
    ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_OK);
    grad_check c = {.st = &st, .dev = dev};
    ck_assert_int_eq(clt_module_foreach_parameter(m, check_grad, &c), 0);
    ck_assert_int_eq(c.checked, 5 + 2 * 16 + 2);
    clt_tensor *all[] = {loss, sa, sb, a, b, hidden, pooled};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_release(all[k]);
    /* without a mask every token is attended to: not the padded row's numbers */
    ck_assert_int_eq(bert_forward(m, ref(&st, "input_ids"), NULL, NULL, &hidden, NULL), CLT_OK);
    double *got = test_values(hidden), *want = test_values(ref(&st, "last_hidden_state"));
    ck_assert_msg(fabs(got[7 * 16] - want[7 * 16]) > 1e-3, "the mask changed nothing");
    free(got), free(want);
    clt_tensor_release(hidden);
    /* bad input refused, naming the function and the sizes */
    ck_assert_int_eq(bert_forward(m, ref(&st, "attention_mask"), NULL, ref(&st, "probe.pooled"),
                                  &hidden, NULL),
                     CLT_ERR_SHAPE);
    ck_assert_error_has("bert_forward: ids must be (B, T)");
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
static void check_names(clt_module *m, const char *path, int tied)
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
    clt_module *r = resnet18_new(1000);
    ck_assert_msg(r != NULL, "%s", clt_last_error());
    check_names(r, REFERENCE("resnet18_names.txt"), 0);
    ck_assert_int_eq(clt_module_parameter_count(r), 11689512); /* torchvision's resnet18 */
    clt_module_release(r);
    clt_module *mb = mobilenet_v2_default_new(1000);
    ck_assert_msg(mb != NULL, "%s", clt_last_error());
    check_names(mb, REFERENCE("mobilenet_v2_names.txt"), 0);
    ck_assert_int_eq(clt_module_parameter_count(mb), 3504872); /* torchvision's mobilenet_v2 */
    clt_module_release(mb);
    gpt_config c = gpt2_small_config();
    clt_module *g = gpt_new(&c);
    ck_assert_msg(g != NULL, "%s", clt_last_error());
    check_names(g, REFERENCE("gpt2_names.txt"), 1); /* lm_head.weight is wte's */
    ck_assert_int_eq(clt_module_parameter_count(g), 124439808); /* GPT-2 small */
    clt_module_release(g);
    bert_config bc = bert_base_config();
    clt_module *bm = bert_new(&bc);
    ck_assert_msg(bm != NULL, "%s", clt_last_error());
    check_names(bm, REFERENCE("bert_base_names.txt"), 0);
    ck_assert_int_eq(clt_module_parameter_count(bm), 109482240); /* bert-base's BertModel */
    clt_module_release(bm);
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
    suite_add_tcase(s, tc);
    return s;
}
