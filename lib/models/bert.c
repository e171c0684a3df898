/* BERT as Hugging Face's BertModel builds it (see bert.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bert.h"
#include "common.h"

bert_config bert_base_config(void)
{
    return (bert_config){.vocab_size = 30522,
                         .hidden_size = 768,
                         .num_hidden_layers = 12,
                         .num_attention_heads = 12,
                         .intermediate_size = 3072,
                         .max_position_embeddings = 512,
                         .type_vocab_size = 2,
                         .layer_norm_eps = 1e-12,
                         .hidden_dropout_prob = 0.1};
}

enum { BERT_MAX_LAYERS = 1000 };

/* Whether c describes a model bert_new can build; when not, why in `why` (of size bytes). */
static bool config_ok(const bert_config *c, char *why, size_t size)
{
    static const char *const names[5] = {"vocab_size", "hidden_size", "intermediate_size",
                                         "max_position_embeddings", "type_vocab_size"};
    int64_t sizes[5] = {c->vocab_size, c->hidden_size, c->intermediate_size,
                        c->max_position_embeddings, c->type_vocab_size};
    for (int i = 0; i < 5; i++)
        if (sizes[i] < 1) {
            snprintf(why, size, "%s %lld must be positive", names[i], (long long)sizes[i]);
            return false;
        }
    if (c->num_hidden_layers < 1 || c->num_hidden_layers > BERT_MAX_LAYERS)
        snprintf(why, size, "num_hidden_layers %d must be from 1 to %d", c->num_hidden_layers,
                 BERT_MAX_LAYERS);
    else if (c->num_attention_heads < 1 || c->hidden_size % c->num_attention_heads != 0)
        snprintf(why, size,
                 "num_attention_heads %d must be positive and divide hidden_size %lld",
                 c->num_attention_heads, (long long)c->hidden_size);
    else if (!(c->layer_norm_eps >= 0 && isfinite(c->layer_norm_eps)))
        snprintf(why, size, "layer_norm_eps %g must be finite and not negative",
                 c->layer_norm_eps);
    else if (!(c->hidden_dropout_prob >= 0 && c->hidden_dropout_prob < 1))
        snprintf(why, size, "hidden_dropout_prob %g must be in [0, 1)", c->hidden_dropout_prob);
    else
        return true;
    return false;
}

clt_status bert_config_read(const char *path, bert_config *c, char *error, size_t size)
{
    char text[1 << 16], why[160];
    double v;
    *c = bert_base_config();
    clt_status st = models_read_text(path, text, sizeof text, error, size);
    if (st != CLT_OK)
        return st;
    models_json j = {text, path, error, size};
    if (!models_json_size(&j, "vocab_size", &c->vocab_size) ||
        !models_json_size(&j, "hidden_size", &c->hidden_size) ||
        !models_json_int(&j, "num_hidden_layers", &c->num_hidden_layers) ||
        !models_json_int(&j, "num_attention_heads", &c->num_attention_heads) ||
        !models_json_size(&j, "intermediate_size", &c->intermediate_size) ||
        !models_json_size(&j, "max_position_embeddings", &c->max_position_embeddings) ||
        !models_json_size(&j, "type_vocab_size", &c->type_vocab_size))
        return CLT_ERR_INVALID_ARGUMENT;
    if (models_json_number(text, "layer_norm_eps", &v))
        c->layer_norm_eps = v;
    if (models_json_number(text, "hidden_dropout_prob", &v))
        c->hidden_dropout_prob = v;
    if (!config_ok(c, why, sizeof why)) {
        snprintf(error, size, "%s: %s", path, why);
        return CLT_ERR_INVALID_ARGUMENT;
    }
    return CLT_OK;
}

/* ---- structure: containers with Hugging Face's class names, registered children only ----- */

#define CONTAINER(var, type_name)                                                              \
    static const clt_module_type var = {.name = type_name, .size = sizeof(clt_module)}
CONTAINER(embeddings_type, "BertEmbeddings");
CONTAINER(self_attention_type, "BertSelfAttention");
CONTAINER(self_output_type, "BertSelfOutput");
CONTAINER(attention_type, "BertAttention");
CONTAINER(intermediate_type, "BertIntermediate");
CONTAINER(output_type, "BertOutput");
CONTAINER(layer_type, "BertLayer");
CONTAINER(list_type, "ModuleList");
CONTAINER(encoder_type, "BertEncoder");
CONTAINER(pooler_type, "BertPooler");

typedef struct bert {
    clt_module base;
    bert_config config;
} bert;

static clt_tensor *bert_module_forward(clt_module *self, clt_tensor *ids)
{
    clt_tensor *hidden = NULL;
    return bert_forward(self, ids, NULL, NULL, &hidden, NULL) == CLT_OK ? hidden : NULL;
}

static const clt_module_type bert_type = {.name = "BertModel",
                                          .size = sizeof(bert),
                                          .forward = bert_module_forward};

static clt_module *layer_norm(const bert_config *c)
{
    return clt_nn_layer_norm(1, (int64_t[]){c->hidden_size}, c->layer_norm_eps);
}

/* dense and LayerNorm: BertSelfOutput and BertOutput */
static clt_module *dense_norm(const clt_module_type *type, const bert_config *c, int64_t in)
{
    return models_container(type, 2, (const char *[]){"dense", "LayerNorm"},
                            (clt_module *[]){clt_nn_linear(in, c->hidden_size, true),
                                             layer_norm(c)});
}

static clt_module *layer_new(const bert_config *c)
{
    int64_t H = c->hidden_size;
    clt_module *self =
        models_container(&self_attention_type, 3, (const char *[]){"query", "key", "value"},
                         (clt_module *[]){clt_nn_linear(H, H, true), clt_nn_linear(H, H, true),
                                          clt_nn_linear(H, H, true)});
    clt_module *attention =
        models_container(&attention_type, 2, (const char *[]){"self", "output"},
                         (clt_module *[]){self, dense_norm(&self_output_type, c, H)});
    clt_module *intermediate =
        models_container(&intermediate_type, 1, (const char *[]){"dense"},
                         (clt_module *[]){clt_nn_linear(H, c->intermediate_size, true)});
    return models_container(&layer_type, 3,
                            (const char *[]){"attention", "intermediate", "output"},
                            (clt_module *[]){attention, intermediate,
                                             dense_norm(&output_type, c, c->intermediate_size)});
}

clt_module *bert_new(const bert_config *c)
{
    char why[160];
    if (!c) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, "bert_new", "config is NULL");
        return NULL;
    }
    if (!config_ok(c, why, sizeof why)) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, "bert_new", "%s", why);
        return NULL;
    }
    int64_t H = c->hidden_size;
    clt_module *list = clt_module_new(&list_type);
    bool ok = list != NULL;
    for (int i = 0; ok && i < c->num_hidden_layers; i++) {
        char name[16];
        snprintf(name, sizeof name, "%d", i);
        ok = clt_module_register_module_take(list, name, layer_new(c)) == CLT_OK;
    }
    if (!ok) {
        clt_module_release(list);
        return NULL;
    }
    clt_module *embeddings =
        models_container(&embeddings_type, 4,
                         (const char *[]){"word_embeddings", "position_embeddings",
                                          "token_type_embeddings", "LayerNorm"},
                         (clt_module *[]){clt_nn_embedding(c->vocab_size, H),
                                          clt_nn_embedding(c->max_position_embeddings, H),
                                          clt_nn_embedding(c->type_vocab_size, H),
                                          layer_norm(c)});
    clt_module *encoder =
        models_container(&encoder_type, 1, (const char *[]){"layer"}, (clt_module *[]){list});
    clt_module *pooler = models_container(&pooler_type, 1, (const char *[]){"dense"},
                                          (clt_module *[]){clt_nn_linear(H, H, true)});
    clt_module *m =
        models_container(&bert_type, 3, (const char *[]){"embeddings", "encoder", "pooler"},
                         (clt_module *[]){embeddings, encoder, pooler});
    if (m)
        ((bert *)m)->config = *c;
    return m;
}

/* ---- the forward pass -------------------------------------------------------------------- */

#define K(expr) MODELS_KEEP(&p, (expr))

static clt_tensor *dropout(clt_module *model, clt_tensor *x)
{
    const bert *b = (const bert *)model;
    return clt_dropout(x, b->config.hidden_dropout_prob, clt_module_is_training(model));
}

/* LayerNorm(dropout(dense(x)) + residual): BertSelfOutput and BertOutput. */
static clt_tensor *dense_norm_forward(clt_module *model, clt_module *m, clt_tensor *x,
                                      clt_tensor *residual)
{
    models_pool p = {.n = 0};
    clt_tensor *d = K(models_run(m, "dense", x));
    clt_tensor *dd = d ? K(dropout(model, d)) : NULL;
    clt_tensor *sum = dd ? K(clt_add(dd, residual)) : NULL;
    clt_tensor *out = sum ? models_run(m, "LayerNorm", sum) : NULL;
    models_drain(&p);
    return out;
}

/* One BertLayer over h (B, T, H); mask NULL or bool (B, 1, 1, T). */
static clt_tensor *layer_forward(clt_module *model, clt_module *layer, clt_tensor *h,
                                 clt_tensor *mask)
{
    const bert_config *c = &((const bert *)model)->config;
    models_pool p = {.n = 0};
    clt_module *self = clt_module_get_child(layer, "attention.self");
    clt_tensor *q =
        K(models_split_heads(K(models_run(self, "query", h)), c->num_attention_heads));
    clt_tensor *k = K(models_split_heads(K(models_run(self, "key", h)), c->num_attention_heads));
    clt_tensor *v =
        K(models_split_heads(K(models_run(self, "value", h)), c->num_attention_heads));
    clt_attention_options o = clt_attention_options_default();
    o.mask = mask;
    clt_tensor *y = v ? K(clt_scaled_dot_product_attention(q, k, v, &o)) : NULL;
    clt_tensor *ctx = y ? K(models_merge_heads(y)) : NULL;
    clt_tensor *a =
        ctx ? K(dense_norm_forward(model, clt_module_get_child(layer, "attention.output"), ctx,
                                   h))
            : NULL;
    clt_tensor *i = a ? K(models_run(layer, "intermediate.dense", a)) : NULL;
    clt_tensor *g = i ? K(clt_gelu(i)) : NULL;
    clt_tensor *out =
        g ? dense_norm_forward(model, clt_module_get_child(layer, "output"), g, a) : NULL;
    models_drain(&p);
    return out;
}

clt_status bert_forward(clt_module *model, clt_tensor *ids, clt_tensor *token_type_ids,
                        clt_tensor *attention_mask, clt_tensor **hidden, clt_tensor **pooled)
{
    if (!model || model->type != &bert_type || !hidden)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "bert_forward",
                             "the model is a %s (must be a %s) and hidden %s (must not be NULL)",
                             clt_module_type_name(model), bert_type.name,
                             hidden ? "not NULL" : "NULL");
    const bert_config *c = &((const bert *)model)->config;
    int64_t T = clt_tensor_size(ids, 1), B = clt_tensor_size(ids, 0);
    if (clt_tensor_ndim(ids) != 2 || T > c->max_position_embeddings ||
        (token_type_ids &&
         (clt_tensor_ndim(token_type_ids) != 2 || clt_tensor_size(token_type_ids, 0) != B ||
          clt_tensor_size(token_type_ids, 1) != T)) ||
        (attention_mask &&
         (clt_tensor_ndim(attention_mask) != 2 || clt_tensor_size(attention_mask, 0) != B ||
          clt_tensor_size(attention_mask, 1) != T)))
        return clt_set_error(CLT_ERR_SHAPE, "bert_forward",
                             "ids must be (B, T) with T at most max_position_embeddings %lld, "
                             "and token_type_ids and attention_mask (B, T) like it (got %d "
                             "dimensions, T %lld)",
                             (long long)c->max_position_embeddings, clt_tensor_ndim(ids),
                             (long long)T);
    models_pool p = {.n = 0};
    clt_device *dev = clt_tensor_device(ids);
    clt_module *emb = clt_module_get_child(model, "embeddings");
    clt_tensor *pos = K(clt_tensor_arange(0, (double)T, 1, CLT_I64, dev));
    clt_tensor *types =
        token_type_ids ? token_type_ids : K(clt_tensor_zeros(CLT_SHAPE(B, T), CLT_I64, dev));
    clt_tensor *we = types ? K(models_run(emb, "word_embeddings", ids)) : NULL;
    clt_tensor *pe = we ? K(models_run(emb, "position_embeddings", pos)) : NULL;
    clt_tensor *te = pe ? K(models_run(emb, "token_type_embeddings", types)) : NULL;
    clt_tensor *sum = te ? K(clt_add(K(clt_add(we, pe)), te)) : NULL;
    clt_tensor *h = sum ? dropout(model, K(models_run(emb, "LayerNorm", sum))) : NULL;
    clt_tensor *mask = NULL; /* (B, T) nonzero -> bool (B, 1, 1, T) */
    if (h && attention_mask) {
        clt_tensor *zero = K(clt_tensor_zeros(0, NULL, clt_tensor_dtype(attention_mask), dev));
        clt_tensor *keep = zero ? K(clt_ne(attention_mask, zero)) : NULL;
        mask = keep ? K(clt_reshape(keep, CLT_SHAPE(B, 1, 1, T))) : NULL;
        if (!mask) {
            clt_tensor_release(h);
            h = NULL;
        }
    }
    char name[32];
    for (int l = 0; h && l < c->num_hidden_layers; l++) {
        snprintf(name, sizeof name, "encoder.layer.%d", l);
        clt_tensor *next = layer_forward(model, clt_module_get_child(model, name), h, mask);
        clt_tensor_release(h);
        h = next;
    }
    clt_tensor *pool_out = NULL;
    if (h && pooled) { /* tanh(dense(h[:, 0])) */
        clt_tensor *first = K(clt_narrow(h, 1, 0, 1));
        clt_tensor *rows = first ? K(clt_reshape(first, CLT_SHAPE(B, c->hidden_size))) : NULL;
        clt_tensor *d = rows ? K(models_run(model, "pooler.dense", rows)) : NULL;
        pool_out = d ? clt_tanh(d) : NULL;
        if (!pool_out) {
            clt_tensor_release(h);
            h = NULL;
        }
    }
    models_drain(&p);
    if (!h)
        return clt_last_status();
    *hidden = h;
    if (pooled)
        *pooled = pool_out;
    return CLT_OK;
}
