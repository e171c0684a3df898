/* BERT as Hugging Face transformers' BertModel builds it (see cltensor/models/bert.h): the
 * config and its config.json, the modules, the forward pass and loading. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cltensor/models/bert.h>

#include "common.h"
#include "hf_config.h"

clt_bert_config clt_bert_config_default(void)
{
    return (clt_bert_config){.vocab_size = 30522,
                             .hidden_size = 768,
                             .num_hidden_layers = 12,
                             .num_attention_heads = 12,
                             .intermediate_size = 3072,
                             .hidden_act = CLT_MODELS_ACT_GELU,
                             .hidden_dropout_prob = 0.1,
                             .attention_probs_dropout_prob = 0.1,
                             .max_position_embeddings = 512,
                             .type_vocab_size = 2,
                             .layer_norm_eps = 1e-12,
                             .pad_token_id = 0,
                             .add_pooling_layer = true};
}

enum { BERT_MAX_LAYERS = 1000 };

/* Whether c's probabilities, epsilon, padding row and activation are valid; when not, why in
 * `why` (of size bytes). */
static bool settings_ok(const clt_bert_config *c, char *why, size_t size)
{
    double p[2] = {c->hidden_dropout_prob, c->attention_probs_dropout_prob};
    static const char *const drops[2] = {"hidden_dropout_prob", "attention_probs_dropout_prob"};
    for (int i = 0; i < 2; i++)
        if (!(p[i] >= 0 && p[i] <= 1)) {
            snprintf(why, size, "%s %g must be from 0 to 1", drops[i], p[i]);
            return false;
        }
    if (!(c->layer_norm_eps >= 0 && isfinite(c->layer_norm_eps)))
        snprintf(why, size, "layer_norm_eps %g must be finite and not negative",
                 c->layer_norm_eps);
    else if (c->pad_token_id != CLT_BERT_NO_PAD_TOKEN &&
             (c->pad_token_id < -c->vocab_size || c->pad_token_id >= c->vocab_size))
        snprintf(why, size, "pad_token_id %lld must be from -vocab_size to vocab_size - 1 "
                 "(vocab_size %lld), or none", (long long)c->pad_token_id,
                 (long long)c->vocab_size);
    else if (!clt__models_activation_name(c->hidden_act))
        snprintf(why, size, "hidden_act %d is not a clt_models_activation", (int)c->hidden_act);
    else
        return true;
    return false;
}

/* Whether config (a clt_bert_config) describes a model clt_bert_new can build; when not, why
 * in `why` (of size bytes). */
static bool config_ok(const void *config, char *why, size_t size)
{
    const clt_bert_config *c = config;
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
    else
        return settings_ok(c, why, size);
    return false;
}

#define BERT_FIELD(name, kind) {#name, kind, offsetof(clt_bert_config, name), NULL}
#define BERT_ACCEPT(name) {#name, HF_ACCEPT, 0, NULL}

/* transformers' BertConfig, field by field (the inherited ones are hf_config.c's). */
static const hf_field bert_fields[] = {
    BERT_FIELD(vocab_size, HF_SIZE),
    BERT_FIELD(hidden_size, HF_SIZE),
    BERT_FIELD(num_hidden_layers, HF_INT),
    BERT_FIELD(num_attention_heads, HF_INT),
    BERT_FIELD(intermediate_size, HF_SIZE),
    BERT_FIELD(hidden_act, HF_ACT),
    BERT_FIELD(hidden_dropout_prob, HF_PROB),
    BERT_FIELD(attention_probs_dropout_prob, HF_PROB),
    BERT_FIELD(max_position_embeddings, HF_SIZE),
    BERT_FIELD(type_vocab_size, HF_SIZE),
    BERT_FIELD(layer_norm_eps, HF_EPS),
    BERT_FIELD(pad_token_id, HF_TOKEN),
    {"model_type", HF_STRING, 0, "bert"},
    /* transformers 4's; 5 computes absolute positions only */
    {"position_embedding_type", HF_STRING, 0, "absolute"},
    {"is_decoder", HF_FALSE, 0, "a causal decoder (BertLMHeadModel's), which is not implemented"},
    /* the heads' (the classifiers', the masked-LM decoder tied to word_embeddings) */
    BERT_ACCEPT(classifier_dropout),
    BERT_ACCEPT(tie_word_embeddings),
};

clt_status clt_bert_config_read(const char *path, clt_bert_config *config)
{
    clt_bert_config defaults = clt_bert_config_default();
    return clt__models_config_read("clt_bert_config_read", path, bert_fields,
                                   (int)(sizeof bert_fields / sizeof *bert_fields), &defaults,
                                   sizeof defaults, config_ok, config);
}

/* ---- structure: containers with Hugging Face's class names, registered children only ----- */

MODELS_CONTAINER_TYPE(embeddings_type, "BertEmbeddings");
MODELS_CONTAINER_TYPE(self_attention_type, "BertSelfAttention");
MODELS_CONTAINER_TYPE(self_output_type, "BertSelfOutput");
MODELS_CONTAINER_TYPE(attention_type, "BertAttention");
MODELS_CONTAINER_TYPE(intermediate_type, "BertIntermediate");
MODELS_CONTAINER_TYPE(output_type, "BertOutput");
MODELS_CONTAINER_TYPE(layer_type, "BertLayer");
MODELS_CONTAINER_TYPE(encoder_type, "BertEncoder");
MODELS_CONTAINER_TYPE(pooler_type, "BertPooler");

typedef struct bert {
    clt_module base;
    clt_bert_config config;
    bool pooler_unloaded; /* the file loaded last had no pooler: pooled outputs refused */
} bert;

static clt_tensor *bert_module_forward(clt_module *self, clt_tensor *ids)
{
    clt_tensor *hidden = NULL;
    return clt_bert_forward(self, ids, NULL, NULL, &hidden, NULL) == CLT_OK ? hidden : NULL;
}

/* BertModel(input_ids, token_type_ids, attention_mask) as a module of several inputs and
 * outputs (clt_module_forward_many): 1 to 3 inputs, the last two may be NULL; 1 output (the
 * last hidden state) or 2 (and the pooled output). */
static clt_status bert_module_forward_many(clt_module *self, int n_inputs,
                                           clt_tensor *const *inputs, int n_outputs,
                                           clt_tensor **outputs)
{
    if (n_inputs < 1 || n_inputs > 3 || n_outputs < 1 || n_outputs > 2)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "BertModel",
                             "takes 1 to 3 inputs (input_ids, token_type_ids, attention_mask) "
                             "and gives 1 or 2 outputs (last_hidden_state, pooler_output), "
                             "not %d inputs and %d outputs",
                             n_inputs, n_outputs);
    return clt_bert_forward(self, inputs[0], n_inputs > 1 ? inputs[1] : NULL,
                            n_inputs > 2 ? inputs[2] : NULL, &outputs[0],
                            n_outputs > 1 ? &outputs[1] : NULL);
}

static const clt_module_type bert_type = {.name = "BertModel",
                                          .size = sizeof(bert),
                                          .forward = bert_module_forward,
                                          .forward_many = bert_module_forward_many};

static clt_module *layer_norm(const clt_bert_config *c)
{
    return clt_nn_layer_norm(1, (int64_t[]){c->hidden_size}, c->layer_norm_eps);
}

/* dense and LayerNorm: BertSelfOutput and BertOutput */
static clt_module *dense_norm(const clt_module_type *type, const clt_bert_config *c, int64_t in)
{
    return clt__models_container(type, 2, (const char *[]){"dense", "LayerNorm"},
                                 (clt_module *[]){clt_nn_linear(in, c->hidden_size, true),
                                                  layer_norm(c)});
}

static clt_module *layer_new(const void *config)
{
    const clt_bert_config *c = config;
    int64_t H = c->hidden_size;
    clt_module *self = clt__models_container(
        &self_attention_type, 3, (const char *[]){"query", "key", "value"},
        (clt_module *[]){clt_nn_linear(H, H, true), clt_nn_linear(H, H, true),
                         clt_nn_linear(H, H, true)});
    clt_module *attention =
        clt__models_container(&attention_type, 2, (const char *[]){"self", "output"},
                              (clt_module *[]){self, dense_norm(&self_output_type, c, H)});
    clt_module *intermediate =
        clt__models_container(&intermediate_type, 1, (const char *[]){"dense"},
                              (clt_module *[]){clt_nn_linear(H, c->intermediate_size, true)});
    return clt__models_container(
        &layer_type, 3, (const char *[]){"attention", "intermediate", "output"},
        (clt_module *[]){attention, intermediate,
                         dense_norm(&output_type, c, c->intermediate_size)});
}

/* word_embeddings' padding_idx as a row number, or -1 for none. */
static int64_t pad_row(const clt_bert_config *c)
{
    if (c->pad_token_id == CLT_BERT_NO_PAD_TOKEN)
        return -1;
    return c->pad_token_id < 0 ? c->pad_token_id + c->vocab_size : c->pad_token_id;
}

/* BertEmbeddings, its padding row zeroed as nn.Embedding(padding_idx=...) does. */
static clt_module *embeddings_new(const clt_bert_config *c)
{
    int64_t H = c->hidden_size, pad = pad_row(c);
    clt_module *m = clt__models_container(
        &embeddings_type, 4,
        (const char *[]){"word_embeddings", "position_embeddings", "token_type_embeddings",
                         "LayerNorm"},
        (clt_module *[]){clt_nn_embedding(c->vocab_size, H),
                         clt_nn_embedding(c->max_position_embeddings, H),
                         clt_nn_embedding(c->type_vocab_size, H), layer_norm(c)});
    clt_tensor *row = m && pad >= 0
                          ? clt_narrow(clt_module_get_parameter(m, "word_embeddings.weight"), 0,
                                       pad, 1)
                          : NULL;
    bool ok = m && (pad < 0 || row);
    CLT_NO_GRAD {
        ok = ok && (!row || clt_fill_(row, 0) == CLT_OK);
    }
    clt_tensor_release(row);
    if (!ok) {
        clt_module_release(m);
        return NULL;
    }
    return m;
}

/* c into the model's zeroed struct field by field, its padding left zero: clt_module_clone_to
 * reads a module's every word. */
static void store_config(clt_bert_config *to, const clt_bert_config *c)
{
    to->vocab_size = c->vocab_size, to->hidden_size = c->hidden_size;
    to->num_hidden_layers = c->num_hidden_layers;
    to->num_attention_heads = c->num_attention_heads;
    to->intermediate_size = c->intermediate_size, to->hidden_act = c->hidden_act;
    to->hidden_dropout_prob = c->hidden_dropout_prob;
    to->attention_probs_dropout_prob = c->attention_probs_dropout_prob;
    to->max_position_embeddings = c->max_position_embeddings;
    to->type_vocab_size = c->type_vocab_size, to->layer_norm_eps = c->layer_norm_eps;
    to->pad_token_id = c->pad_token_id, to->add_pooling_layer = c->add_pooling_layer;
}

clt_module *clt_bert_new(const clt_bert_config *c)
{
    char why[192];
    if (!c || !config_ok(c, why, sizeof why)) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_bert_new", "%s", c ? why : "config is NULL");
        return NULL;
    }
    clt_module *list = clt__models_layers(c->num_hidden_layers, layer_new, c);
    if (!list)
        return NULL;
    clt_module *encoder = clt__models_container(&encoder_type, 1, (const char *[]){"layer"},
                                                (clt_module *[]){list});
    clt_module *pooler =
        c->add_pooling_layer
            ? clt__models_container(&pooler_type, 1, (const char *[]){"dense"},
                                    (clt_module *[]){clt_nn_linear(c->hidden_size,
                                                                   c->hidden_size, true)})
            : NULL;
    clt_module *m = clt__models_container(
        &bert_type, c->add_pooling_layer ? 3 : 2,
        (const char *[]){"embeddings", "encoder", "pooler"},
        (clt_module *[]){embeddings_new(c), encoder, pooler});
    if (m)
        store_config(&((bert *)m)->config, c);
    return m;
}

/* ---- the forward pass -------------------------------------------------------------------- */

#define K(expr) MODELS_KEEP(&p, (expr))

static clt_tensor *dropout(const bert *b, clt_tensor *x)
{
    return clt_dropout(x, b->config.hidden_dropout_prob, clt_module_is_training(&b->base));
}

/* LayerNorm(dropout(dense(x)) + residual): BertSelfOutput and BertOutput. */
static clt_tensor *dense_norm_forward(const bert *b, clt_module *m, clt_tensor *x,
                                      clt_tensor *residual)
{
    models_pool p = {.n = 0};
    clt_tensor *d = K(clt__models_run(m, "dense", x));
    clt_tensor *dd = d ? K(dropout(b, d)) : NULL;
    clt_tensor *sum = dd ? K(clt_add(dd, residual)) : NULL;
    clt_tensor *out = sum ? clt__models_run(m, "LayerNorm", sum) : NULL;
    clt__models_drain(&p);
    return out;
}

/* One BertLayer over h (B, T, H); mask NULL or bool (B, 1, 1, T). */
static clt_tensor *layer_forward(const bert *b, clt_module *layer, clt_tensor *h,
                                 clt_tensor *mask)
{
    const clt_bert_config *c = &b->config;
    models_pool p = {.n = 0};
    clt_module *self = clt_module_get_child(layer, "attention.self");
    int heads = c->num_attention_heads;
    clt_tensor *q = K(clt__models_split_heads(K(clt__models_run(self, "query", h)), heads));
    clt_tensor *k = K(clt__models_split_heads(K(clt__models_run(self, "key", h)), heads));
    clt_tensor *v = K(clt__models_split_heads(K(clt__models_run(self, "value", h)), heads));
    clt_attention_options o = clt_attention_options_default();
    o.mask = mask;
    clt_tensor *y = v ? K(clt__models_attention(q, k, v, &o, c->attention_probs_dropout_prob,
                                                clt_module_is_training(&b->base)))
                      : NULL;
    clt_tensor *ctx = y ? K(clt__models_merge_heads(y)) : NULL;
    clt_module *attn_out = clt_module_get_child(layer, "attention.output");
    clt_tensor *a = ctx ? K(dense_norm_forward(b, attn_out, ctx, h)) : NULL;
    clt_tensor *i = a ? K(clt__models_run(layer, "intermediate.dense", a)) : NULL;
    clt_tensor *g = i ? K(clt__models_activate(i, c->hidden_act)) : NULL;
    clt_tensor *out =
        g ? dense_norm_forward(b, clt_module_get_child(layer, "output"), g, a) : NULL;
    clt__models_drain(&p);
    return out;
}

/* word_embeddings(ids): while recording a gradient for the weight, the padding row's lookups
 * come from a detached weight, so that the row gets none (nn.Embedding's padding_idx). */
static clt_tensor *word_embeddings(const bert *b, clt_module *emb, clt_tensor *ids)
{
    clt_tensor *w = clt_module_get_parameter(emb, "word_embeddings.weight");
    int64_t pad = pad_row(&b->config);
    if (pad < 0 || !clt_grad_is_enabled() || !clt_tensor_requires_grad(w))
        return clt_embedding(ids, w);
    models_pool p = {.n = 0};
    clt_tensor *row = K(clt_tensor_full(0, NULL, (double)pad, CLT_I64, clt_tensor_device(ids)));
    clt_tensor *is_pad = row ? K(clt_unsqueeze(K(clt_eq(ids, row)), -1)) : NULL;
    clt_tensor *fixed = is_pad ? K(clt_embedding(ids, K(clt_tensor_detach(w)))) : NULL;
    clt_tensor *out = fixed ? clt_where(is_pad, fixed, K(clt_embedding(ids, w))) : NULL;
    clt__models_drain(&p);
    return out;
}

/* BertEmbeddings: LayerNorm(word + token type + position), then dropout. */
static clt_tensor *embed(const bert *b, clt_tensor *ids, clt_tensor *token_type_ids)
{
    models_pool p = {.n = 0};
    clt_device *dev = clt_tensor_device(ids);
    int64_t B = clt_tensor_size(ids, 0), T = clt_tensor_size(ids, 1);
    clt_module *emb = clt_module_get_child(&b->base, "embeddings");
    clt_tensor *pos = K(clt_tensor_arange(0, (double)T, 1, CLT_I64, dev));
    clt_tensor *types =
        token_type_ids ? token_type_ids : K(clt_tensor_zeros(CLT_SHAPE(B, T), CLT_I64, dev));
    clt_tensor *we = types ? K(word_embeddings(b, emb, ids)) : NULL;
    clt_tensor *te = we ? K(clt__models_run(emb, "token_type_embeddings", types)) : NULL;
    clt_tensor *pe = te ? K(clt__models_run(emb, "position_embeddings", pos)) : NULL;
    clt_tensor *sum = pe ? K(clt_add(K(clt_add(we, te)), pe)) : NULL;
    clt_tensor *out = sum ? dropout(b, K(clt__models_run(emb, "LayerNorm", sum))) : NULL;
    clt__models_drain(&p);
    return out;
}

/* attention_mask (B, T), nonzero where attended -> bool (B, 1, 1, T). */
static clt_tensor *padding_mask(clt_tensor *attention_mask)
{
    models_pool p = {.n = 0};
    int64_t B = clt_tensor_size(attention_mask, 0), T = clt_tensor_size(attention_mask, 1);
    clt_tensor *zero = K(clt_tensor_zeros(0, NULL, clt_tensor_dtype(attention_mask),
                                          clt_tensor_device(attention_mask)));
    clt_tensor *keep = zero ? K(clt_ne(attention_mask, zero)) : NULL;
    clt_tensor *mask = keep ? clt_reshape(keep, CLT_SHAPE(B, 1, 1, T)) : NULL;
    clt__models_drain(&p);
    return mask;
}

/* BertPooler: tanh(dense(h[:, 0])). */
static clt_tensor *pool(const bert *b, clt_tensor *h)
{
    models_pool p = {.n = 0};
    int64_t B = clt_tensor_size(h, 0);
    clt_tensor *first = K(clt_narrow(h, 1, 0, 1));
    clt_tensor *rows = first ? K(clt_reshape(first, CLT_SHAPE(B, b->config.hidden_size))) : NULL;
    clt_module *dense = clt_module_get_child(&b->base, "pooler.dense");
    clt_tensor *d = rows ? K(clt_module_forward(dense, rows)) : NULL;
    clt_tensor *out = d ? clt_tanh(d) : NULL;
    clt__models_drain(&p);
    return out;
}

/* CLT_OK when the call can run: a BERT, somewhere for the hidden state, a pooler when a pooled
 * output is asked for, and the shapes. */
static clt_status check_call(clt_module *model, clt_tensor *ids, clt_tensor *types,
                             clt_tensor *mask, clt_tensor **hidden, clt_tensor **pooled)
{
    const char *f = "clt_bert_forward";
    if (!model || model->type != &bert_type || !hidden)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f,
                             "the model is a %s (must be a %s) and hidden %s (must not be NULL)",
                             clt_module_type_name(model), bert_type.name,
                             hidden ? "not NULL" : "NULL");
    const bert *b = (const bert *)model;
    if (pooled && !b->config.add_pooling_layer)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f, "a pooled output was asked of a model "
                             "built without a pooler (add_pooling_layer false)");
    if (pooled && b->pooler_unloaded)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f,
                             "a pooled output was asked of a model whose last clt_bert_load "
                             "read a file without pooler.dense (BertForMaskedLM, "
                             "BertForTokenClassification and BertForQuestionAnswering have "
                             "none): its pooler holds no trained weights");
    int64_t T = clt_tensor_size(ids, 1), B = clt_tensor_size(ids, 0);
    bool types_ok = !types || (clt_tensor_ndim(types) == 2 && clt_tensor_size(types, 0) == B &&
                               clt_tensor_size(types, 1) == T);
    bool mask_ok = !mask || (clt_tensor_ndim(mask) == 2 && clt_tensor_size(mask, 0) == B &&
                             clt_tensor_size(mask, 1) == T);
    if (clt_tensor_ndim(ids) != 2 || T > b->config.max_position_embeddings || !types_ok ||
        !mask_ok)
        return clt_set_error(CLT_ERR_SHAPE, f,
                             "ids must be (B, T) with T at most max_position_embeddings %lld, "
                             "and token_type_ids and attention_mask (B, T) like it (got %d "
                             "dimensions, T %lld)",
                             (long long)b->config.max_position_embeddings, clt_tensor_ndim(ids),
                             (long long)T);
    return CLT_OK;
}

clt_status clt_bert_forward(clt_module *model, clt_tensor *ids, clt_tensor *token_type_ids,
                            clt_tensor *attention_mask, clt_tensor **hidden, clt_tensor **pooled)
{
    if (check_call(model, ids, token_type_ids, attention_mask, hidden, pooled) != CLT_OK)
        return clt_last_status();
    const bert *b = (const bert *)model;
    clt_tensor *h = embed(b, ids, token_type_ids), *mask = NULL, *pool_out = NULL;
    if (h && attention_mask && !(mask = padding_mask(attention_mask))) {
        clt_tensor_release(h);
        h = NULL;
    }
    char name[32];
    for (int l = 0; h && l < b->config.num_hidden_layers; l++) {
        snprintf(name, sizeof name, "encoder.layer.%d", l);
        clt_tensor *next = layer_forward(b, clt_module_get_child(model, name), h, mask);
        clt_tensor_release(h);
        h = next;
    }
    clt_tensor_release(mask);
    if (h && pooled && !(pool_out = pool(b, h))) {
        clt_tensor_release(h);
        h = NULL;
    }
    if (!h)
        return clt_last_status();
    *hidden = h;
    if (pooled)
        *pooled = pool_out;
    return CLT_OK;
}

/* ---- weights ----------------------------------------------------------------------------- */

/* What a load reads: the model and whether the file's names have the "bert." prefix (a head
 * class's) or not (BertModel's). */
typedef struct bert_file {
    const bert *b;
    bool prefixed;
} bert_file;

static bool starts_with(const char *s, const char *head)
{
    return strncmp(s, head, strlen(head)) == 0;
}

static clt__models_action bert_rename(void *ctx, const char *name, clt_tensor *t, char *out,
                                      size_t size)
{
    const bert_file *file = ctx;
    (void)t;
    if (file->prefixed && (starts_with(name, "cls.") || starts_with(name, "classifier.") ||
                           starts_with(name, "qa_outputs.")))
        return CLT_MODELS_SKIP; /* the head class's own */
    const char *own = file->prefixed && starts_with(name, "bert.") ? name + 5 : name;
    if (strcmp(own, "embeddings.position_ids") == 0)
        return CLT_MODELS_SKIP; /* older files' arange buffer */
    if (!file->b->config.add_pooling_layer && starts_with(own, "pooler."))
        return CLT_MODELS_SKIP;
    snprintf(out, size, "%s", own);
    return CLT_MODELS_LOAD;
}

clt_status clt_bert_load(clt_module *model, const char *path)
{
    const char *f = "clt_bert_load";
    if (!model || model->type != &bert_type)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, f, "the model is a %s, not a %s",
                             clt_module_type_name(model), bert_type.name);
    bert *b = (bert *)model;
    clt_safetensors file;
    if (clt__models_open(f, path, &file) != CLT_OK)
        return clt_last_status();
    bert_file ctx = {b, clt__models_any_prefix(&file, "bert.")};
    bool no_pooler = b->config.add_pooling_layer &&
                     !clt__models_any_prefix(&file, ctx.prefixed ? "bert.pooler." : "pooler.");
    /* a file without a pooler: copies of the model's own pooler tensors stand in for them */
    clt_to_options copy = {.dtype = CLT_DTYPE_NONE, .copy = true};
    clt_named_tensor own[2] = {{"pooler.dense.weight", NULL}, {"pooler.dense.bias", NULL}};
    clt_status st = CLT_OK;
    for (int i = 0; no_pooler && st == CLT_OK && i < 2; i++)
        if (!(own[i].tensor =
                  clt_tensor_to_ex(clt_module_get_parameter(model, own[i].name), &copy)))
            st = clt_last_status();
    if (st == CLT_OK)
        st = clt__models_load(model, f, path, &file, bert_rename, &ctx, own, no_pooler ? 2 : 0);
    if (st == CLT_OK)
        b->pooler_unloaded = no_pooler;
    clt_tensor_release(own[0].tensor), clt_tensor_release(own[1].tensor);
    clt_safetensors_clear(&file);
    return st;
}
