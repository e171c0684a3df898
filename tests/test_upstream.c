/* The upstream suite: cltensor_models against the upstream implementations themselves
 * (torchvision's resnet18, resnet50 and mobilenet_v2, transformers' GPT2LMHeadModel and
 * BertModel, in every configuration option the library implements), on every device, and
 * ResNet-18 on a photo through the library's ImageNet transform against torchvision's. The
 * reference files (tests/reference/upstream_*.safetensors, written by make_upstream.py) hold
 * the inputs, the upstream outputs, the config.json transformers wrote and, instead of the
 * weights, the formula that computed them: each side fills the full-size models itself. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <cltensor/models.h>

#include "helpers.h"

#define REFERENCE(name) CLT_TEST_REFERENCE_DIR "/upstream_" name ".safetensors"

/* make_upstream.py's u(name, i): FNV-1a of the name, splitmix64's finaliser of
 * s + (i + 1) * golden, the top 24 bits as a number in [-1, 1). */
static double formula(uint64_t seed, int64_t i)
{
    uint64_t z = seed + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15u;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    z ^= z >> 31;
    return (double)(z >> 40) / (double)(1 << 23) - 1.0;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xCBF29CE484222325u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001B3u;
    return h;
}

/* The reference's weights: every entry of its "weights" rules as an f32 tensor on cpu, in *w
 * (count returned), for clt_module_load_state_dict or a file. */
static int formula_weights(const clt_safetensors *st, const clt_module *m, clt_named_tensor **w)
{
    cJSON *rules = cJSON_Parse(clt_safetensors_metadata_get(st, "weights"));
    ck_assert_msg(rules != NULL, "the reference has no weights rules");
    int n = cJSON_GetArraySize(rules), k = 0;
    *w = calloc((size_t)n, sizeof **w);
    for (cJSON *r = rules->child; r; r = r->next, k++) {
        /* the shape is the module's: the same name with or without a head's prefix */
        const char *name = r->string;
        clt_tensor *p = clt_module_get_parameter(m, name);
        if (!p)
            p = clt_module_get_buffer(m, name);
        if (!p && strncmp(name, "transformer.", 12) == 0)
            p = clt_module_get_parameter(m, name + 12);
        clt_clear_error();
        ck_assert_msg(p != NULL, "the model has no \"%s\"", name);
        int64_t numel = clt_tensor_numel(p);
        float *v = malloc((size_t)numel * sizeof *v);
        double offset = cJSON_GetArrayItem(r, 0)->valuedouble;
        double scale = cJSON_GetArrayItem(r, 1)->valuedouble;
        uint64_t seed = fnv1a(name);
        for (int64_t i = 0; i < numel; i++)
            v[i] = (float)(offset + scale * formula(seed, i));
        int64_t shape[8];
        int ndim = clt_tensor_ndim(p);
        for (int d = 0; d < ndim; d++)
            shape[d] = clt_tensor_size(p, d);
        (*w)[k].name = strdup(name);
        (*w)[k].tensor = clt_tensor_from_data(ndim, shape, v, CLT_F32, NULL);
        ck_assert_msg((*w)[k].tensor != NULL, "%s", clt_last_error());
        free(v);
    }
    cJSON_Delete(rules);
    return n;
}

static void free_weights(clt_named_tensor *w, int n)
{
    for (int i = 0; i < n; i++)
        free((char *)w[i].name), clt_tensor_release(w[i].tensor);
    free(w);
}

/* Loads the formula's weights into m; the only names of m they may lack are the batch norms'
 * num_batches_tracked (integers the formula does not fill). */
static void load_formula(clt_module *m, const clt_safetensors *st)
{
    clt_named_tensor *w;
    int n = formula_weights(st, m, &w);
    clt_load_report report = {0};
    ck_assert_msg(clt_module_load_state_dict(m, w, n, false, &report) == CLT_OK, "%s",
                  clt_last_error());
    ck_assert_int_eq(report.unexpected_count, 0);
    for (int i = 0; i < report.missing_count; i++)
        ck_assert_msg(strstr(report.missing[i], "num_batches_tracked") != NULL,
                      "the formula gave no \"%s\"", report.missing[i]);
    clt_load_report_clear(&report);
    free_weights(w, n);
}

/* Writes the formula's weights under the upstream names to a file, for the models' own
 * loaders (which handle the head classes' prefixes). */
static void save_formula(const clt_module *m, const clt_safetensors *st, const char *path)
{
    clt_named_tensor *w;
    int n = formula_weights(st, m, &w);
    ck_assert_msg(clt_safetensors_save(path, w, n, NULL, 0) == CLT_OK, "%s", clt_last_error());
    free_weights(w, n);
}

/* The reference's config.json text, written to dir/config.json for the config readers. */
static void save_config(const clt_safetensors *st, const char *dir)
{
    const char *text = clt_safetensors_metadata_get(st, "config");
    ck_assert_msg(text != NULL, "the reference has no config");
    test_write_file(dir, "config.json", text);
}

static clt_tensor *ref(const clt_safetensors *st, const char *name)
{
    clt_tensor *t = clt_safetensors_get(st, name);
    ck_assert_msg(t != NULL, "the reference has no \"%s\"", name);
    return t;
}

/* got against upstream's want: |got - want| <= 1e-4 (max |want| + |want|) elementwise, f32
 * rounding through the whole model (a relative bound on the output's own scale). */
static void assert_upstream(clt_tensor *got, clt_tensor *want, const char *what, clt_device *dev)
{
    ck_assert_msg(got != NULL, "%s on %s: %s", what, clt_device_name(dev), clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(got), clt_tensor_numel(want));
    double *g = test_values(got), *w = test_values(want), scale = 0;
    int64_t n = clt_tensor_numel(want);
    for (int64_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(w[i]));
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabs(g[i] - w[i]) <= 1e-4 * (scale + fabs(w[i])),
                      "%s on %s: element %lld is %.9g, upstream's %.9g", what,
                      clt_device_name(dev), (long long)i, g[i], w[i]);
    free(g), free(w);
}

/* A vision model, eval mode, against torchvision's logits. */
static void check_vision(clt_module *m, const char *path, clt_device *dev)
{
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    clt_safetensors st;
    ck_assert_msg(clt_safetensors_load(path, dev, &st) == CLT_OK, "%s", clt_last_error());
    load_formula(m, &st);
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    clt_module_train(m, false);
    CLT_NO_GRAD {
        clt_tensor *logits = clt_module_forward(m, ref(&st, "input"));
        assert_upstream(logits, ref(&st, "logits"), path, dev);
        clt_tensor_release(logits);
    }
    clt_module_release(m);
    clt_safetensors_clear(&st);
}

START_TEST(test_upstream_resnet18)
{
    check_vision(clt_resnet18(1000), REFERENCE("resnet18"), test_device(_i));
}
END_TEST

START_TEST(test_upstream_resnet50)
{
    check_vision(clt_resnet50(1000), REFERENCE("resnet50"), test_device(_i));
}
END_TEST

START_TEST(test_upstream_mobilenet_v2)
{
    check_vision(clt_mobilenet_v2(1000), REFERENCE("mobilenet_v2"), test_device(_i));
}
END_TEST

/* ResNet-18 on a 640 x 480 photo through the library's ImageNet transform: torchvision's
 * logits and top 5 classes (the resnet sample's two calls). */
START_TEST(test_upstream_resnet18_photo)
{
    clt_device *dev = test_device(_i);
    clt_safetensors st;
    ck_assert_msg(clt_safetensors_load(REFERENCE("resnet18_photo"), dev, &st) == CLT_OK, "%s",
                  clt_last_error());
    clt_module *m = clt_resnet18(1000);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    load_formula(m, &st);
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    clt_module_train(m, false);
    clt_tensor *img = clt_image_read(CLT_TEST_DATA_DIR "/images/photo.jpg");
    if (!img && !clt_image_format_available(CLT_IMAGE_JPEG)) {
        printf("upstream: built without libjpeg, the photo is not compared\n");
        clt_module_release(m), clt_safetensors_clear(&st);
        return;
    }
    ck_assert_msg(img != NULL, "%s", clt_last_error());
    clt_tensor *x = clt_image_imagenet(img), *batch = clt_unsqueeze(x, 0);
    ck_assert_msg(batch != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_to_(&batch, dev), CLT_OK);
    CLT_NO_GRAD {
        clt_tensor *logits = clt_module_forward(m, batch);
        assert_upstream(logits, ref(&st, "logits"), "photo", dev);
        /* the top 5, in order */
        double *got = test_values(logits), *want = test_values(ref(&st, "top5"));
        bool taken[1000] = {false};
        for (int k = 0; k < 5; k++) {
            int best = -1;
            for (int c = 0; c < 1000; c++)
                if (!taken[c] && (best < 0 || got[c] > got[best]))
                    best = c;
            taken[best] = true;
            ck_assert_msg(best == (int)want[k],
                          "class %d of the top 5 on %s: %d, torchvision's %g", k,
                          clt_device_name(dev), best, want[k]);
        }
        free(got), free(want);
        clt_tensor_release(logits);
    }
    clt_tensor_release(batch), clt_tensor_release(x), clt_tensor_release(img);
    clt_module_release(m);
    clt_safetensors_clear(&st);
}
END_TEST

/* A transformers model's reference on a device: its config.json written to `config` and the
 * path its weights go to, for the model's own config reader and loader. */
typedef struct hf_case {
    const char *name;
    char config[600], weights[600];
    clt_safetensors st;
} hf_case;

static void open_case(hf_case *c, const char *name, clt_device *dev)
{
    char path[512];
    const char *dir = test_temp_dir();
    c->name = name;
    snprintf(path, sizeof path, "%s/upstream_%s.safetensors", CLT_TEST_REFERENCE_DIR, name);
    snprintf(c->config, sizeof c->config, "%s/config.json", dir);
    snprintf(c->weights, sizeof c->weights, "%s/model.safetensors", dir);
    ck_assert_msg(clt_safetensors_load(path, dev, &c->st) == CLT_OK, "%s", clt_last_error());
    save_config(&c->st, dir);
}

/* m (made from the case's config) given the formula's weights through a file of upstream's
 * names and `load`, the model's loader, then moved to dev in eval mode. */
static void load_case(hf_case *c, clt_module *m, clt_status (*load)(clt_module *, const char *),
                      clt_device *dev)
{
    ck_assert_msg(m != NULL, "%s: %s", c->name, clt_last_error());
    save_formula(m, &c->st, c->weights);
    ck_assert_msg(load(m, c->weights) == CLT_OK, "%s: %s", c->name, clt_last_error());
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    clt_module_train(m, false);
}

/* The GPT-2 configurations: the default and each option transformers' GPT2Config has that
 * changes the computation. */
static const char *const gpt2_cases[] =
    {"gpt2",          "gpt2_relu",    "gpt2_gelu", "gpt2_silu",  "gpt2_inverse_layer_idx",
     "gpt2_unscaled", "gpt2_n_inner", "gpt2_eps",  "gpt2_untied"};
#define GPT2_CASES ((int)(sizeof gpt2_cases / sizeof *gpt2_cases))

/* One GPT-2 configuration on one device: its config.json read, the weights loaded from a file
 * of GPT2LMHeadModel's names, the logits, and greedy decoding through the KV cache. */
static void check_gpt2(const char *name, clt_device *dev)
{
    hf_case c;
    open_case(&c, name, dev);
    clt_gpt2_config cfg;
    ck_assert_msg(clt_gpt2_config_read(c.config, &cfg) == CLT_OK, "%s: %s", name,
                  clt_last_error());
    clt_module *m = clt_gpt2_new(&cfg);
    load_case(&c, m, clt_gpt2_load, dev);
    clt_safetensors st = c.st;
    clt_tensor *ids = ref(&st, "input");
    double *want = test_values(ref(&st, "greedy"));
    CLT_NO_GRAD {
        clt_tensor *logits = clt_gpt2_forward(m, ids, NULL);
        assert_upstream(logits, ref(&st, "logits"), name, dev);
        clt_tensor_release(logits);
        /* greedy: the prompt at once, then one token at a time through the cache */
        clt_gpt2_cache cache;
        ck_assert_int_eq(clt_gpt2_cache_init(&cache, m), CLT_OK);
        clt_tensor *row = clt_narrow(ids, 0, 0, 1), *next = clt_narrow(row, 1, 0, 4);
        for (int k = 0; k < 20; k++) {
            clt_tensor *out = clt_gpt2_forward(m, next, &cache);
            ck_assert_msg(out != NULL, "%s", clt_last_error());
            clt_tensor *last = clt_narrow(out, 1, clt_tensor_size(out, 1) - 1, 1);
            clt_tensor *arg = clt_argmax(last, 2, false);
            double tok;
            ck_assert_int_eq(clt_tensor_item(arg, &tok), CLT_OK);
            ck_assert_msg(tok == want[k], "%s on %s: token %d is %g, transformers' %g", name,
                          clt_device_name(dev), k, tok, want[k]);
            clt_tensor_release(next), clt_tensor_release(last), clt_tensor_release(out);
            next = arg;
        }
        clt_tensor_release(next), clt_tensor_release(row);
        clt_gpt2_cache_clear(&cache);
    }
    free(want);
    clt_module_release(m);
    clt_safetensors_clear(&st);
}

START_TEST(test_upstream_gpt2)
{
    check_gpt2(gpt2_cases[0], test_device(_i));
}
END_TEST

START_TEST(test_upstream_gpt2_options)
{
    check_gpt2(gpt2_cases[1 + _i % (GPT2_CASES - 1)], test_device(_i / (GPT2_CASES - 1)));
}
END_TEST

static const char *const bert_cases[] = {"bert", "bert_relu", "bert_gelu_new", "bert_eps"};
#define BERT_CASES ((int)(sizeof bert_cases / sizeof *bert_cases))

/* One BERT configuration on one device: config.json read, BertModel's weights loaded, the last
 * hidden state and the pooled output with token types and a padding mask. */
static void check_bert(const char *name, clt_device *dev)
{
    hf_case c;
    open_case(&c, name, dev);
    clt_bert_config cfg;
    ck_assert_msg(clt_bert_config_read(c.config, &cfg) == CLT_OK, "%s: %s", name,
                  clt_last_error());
    clt_module *m = clt_bert_new(&cfg);
    load_case(&c, m, clt_bert_load, dev);
    clt_safetensors st = c.st;
    CLT_NO_GRAD {
        clt_tensor *hidden = NULL, *pooled = NULL;
        ck_assert_msg(clt_bert_forward(m, ref(&st, "input"), ref(&st, "token_type_ids"),
                                       ref(&st, "attention_mask"), &hidden, &pooled) == CLT_OK,
                      "%s: %s", name, clt_last_error());
        /* the padded positions' states are computed but meaningless: compare the real ones */
        assert_upstream(hidden, ref(&st, "last_hidden_state"), name, dev);
        assert_upstream(pooled, ref(&st, "pooler_output"), name, dev);
        clt_tensor_release(hidden), clt_tensor_release(pooled);
        /* the same as a module of three inputs and two outputs */
        clt_tensor *in[3] = {ref(&st, "input"), ref(&st, "token_type_ids"),
                             ref(&st, "attention_mask")};
        clt_tensor *out[3];
        ck_assert_msg(clt_module_forward_many(m, 3, in, 2, out) == CLT_OK, "%s",
                      clt_last_error());
        assert_upstream(out[0], ref(&st, "last_hidden_state"), name, dev);
        assert_upstream(out[1], ref(&st, "pooler_output"), name, dev);
        clt_tensor_release(out[0]), clt_tensor_release(out[1]);
        ck_assert_int_eq(clt_module_forward_many(m, 3, in, 3, out), CLT_ERR_INVALID_ARGUMENT);
        ck_assert_error_has(
            "1 or 2 outputs (last_hidden_state, pooler_output), not 3 inputs and 3 outputs");
        ck_assert_ptr_null(out[0]);
    }
    clt_module_release(m);
    clt_safetensors_clear(&st);
}

START_TEST(test_upstream_bert)
{
    check_bert(bert_cases[0], test_device(_i));
}
END_TEST

START_TEST(test_upstream_bert_options)
{
    check_bert(bert_cases[1 + _i % (BERT_CASES - 1)], test_device(_i / (BERT_CASES - 1)));
}
END_TEST

Suite *suite_upstream(void)
{
    Suite *s = suite_create("upstream");
    /* the full-size vision models; the small transformers in their default configs (which the
     * oclgrind test runs alone: CK_RUN_CASE=upstream_small); the configs' options */
    TCase *vision = test_case("upstream_vision", 600);
    ADD_DEVICE_TEST(vision, test_upstream_resnet18);
    ADD_DEVICE_TEST(vision, test_upstream_resnet50);
    ADD_DEVICE_TEST(vision, test_upstream_mobilenet_v2);
    ADD_DEVICE_TEST(vision, test_upstream_resnet18_photo);
    suite_add_tcase(s, vision);
    TCase *small = test_case("upstream_small", 600);
    ADD_DEVICE_TEST(small, test_upstream_gpt2);
    ADD_DEVICE_TEST(small, test_upstream_bert);
    suite_add_tcase(s, small);
    TCase *options = test_case("upstream_options", 600);
    tcase_add_loop_test(options, test_upstream_gpt2_options, 0,
                        test_device_total * (GPT2_CASES - 1));
    tcase_add_loop_test(options, test_upstream_bert_options, 0,
                        test_device_total * (BERT_CASES - 1));
    suite_add_tcase(s, options);
    return s;
}
