/* GPT-2 as Hugging Face transformers' GPT2LMHeadModel builds it (see
 * cltensor/models/gpt2.h): the config and its config.json, the modules, the forward pass with
 * its KV cache, and loading. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor/models/gpt2.h>

#include "common.h"
#include "hf_config.h"

clt_gpt2_config clt_gpt2_config_default(void)
{
    return (clt_gpt2_config){.vocab_size = 50257,
                             .n_positions = 1024,
                             .n_embd = 768,
                             .n_layer = 12,
                             .n_head = 12,
                             .n_inner = 0,
                             .activation_function = CLT_MODELS_ACT_GELU_NEW,
                             .resid_pdrop = 0.1,
                             .embd_pdrop = 0.1,
                             .attn_pdrop = 0.1,
                             .layer_norm_epsilon = 1e-5,
                             .scale_attn_weights = true,
                             .scale_attn_by_inverse_layer_idx = false,
                             .reorder_and_upcast_attn = false,
                             .tie_word_embeddings = true};
}

enum { GPT_MAX_LAYERS = 1000 };

/* Whether config (a clt_gpt2_config) describes a model clt_gpt2_new can build; when not, why
 * in `why` (of size bytes). */
static bool config_ok(const void *config, char *why, size_t size)
{
    const clt_gpt2_config *c = config;
    static const char *const names[3] = {"vocab_size", "n_positions", "n_embd"};
    static const char *const drops[3] = {"resid_pdrop", "embd_pdrop", "attn_pdrop"};
    int64_t sizes[3] = {c->vocab_size, c->n_positions, c->n_embd};
    double p[3] = {c->resid_pdrop, c->embd_pdrop, c->attn_pdrop};
    for (int i = 0; i < 3; i++)
        if (sizes[i] < 1) {
            snprintf(why, size, "%s %lld must be positive", names[i], (long long)sizes[i]);
            return false;
        }
    for (int i = 0; i < 3; i++)
        if (!(p[i] >= 0 && p[i] <= 1)) {
            snprintf(why, size, "%s %g must be from 0 to 1", drops[i], p[i]);
            return false;
        }
    if (c->n_layer < 1 || c->n_layer > GPT_MAX_LAYERS)
        snprintf(why, size, "n_layer %d must be from 1 to %d", c->n_layer, GPT_MAX_LAYERS);
    else if (c->n_head < 1 || c->n_embd % c->n_head != 0)
        snprintf(why, size, "n_head %d must be positive and divide n_embd %lld", c->n_head,
                 (long long)c->n_embd);
    else if (c->n_inner < 0)
        snprintf(why, size, "n_inner %lld must be positive, or 0 for 4 * n_embd",
                 (long long)c->n_inner);
    else if (!(c->layer_norm_epsilon >= 0 && isfinite(c->layer_norm_epsilon)))
        snprintf(why, size, "layer_norm_epsilon %g must be finite and not negative",
                 c->layer_norm_epsilon);
    else if (!clt__models_activation_name(c->activation_function))
        snprintf(why, size, "activation_function %d is not a clt_models_activation",
                 (int)c->activation_function);
    else
        return true;
    return false;
}

#define GPT2_FIELD(name, kind) {#name, kind, offsetof(clt_gpt2_config, name), NULL}
#define GPT2_ACCEPT(name) {#name, HF_ACCEPT, 0, NULL}

/* transformers' GPT2Config, field by field (the inherited ones are hf_config.c's). */
static const hf_field gpt2_fields[] = {
    GPT2_FIELD(vocab_size, HF_SIZE),
    GPT2_FIELD(n_positions, HF_SIZE),
    GPT2_FIELD(n_embd, HF_SIZE),
    GPT2_FIELD(n_layer, HF_INT),
    GPT2_FIELD(n_head, HF_INT),
    GPT2_FIELD(n_inner, HF_INNER),
    GPT2_FIELD(activation_function, HF_ACT),
    GPT2_FIELD(resid_pdrop, HF_PROB),
    GPT2_FIELD(embd_pdrop, HF_PROB),
    GPT2_FIELD(attn_pdrop, HF_PROB),
    GPT2_FIELD(layer_norm_epsilon, HF_EPS),
    GPT2_FIELD(scale_attn_weights, HF_BOOL),
    GPT2_FIELD(scale_attn_by_inverse_layer_idx, HF_BOOL),
    GPT2_FIELD(reorder_and_upcast_attn, HF_BOOL),
    GPT2_FIELD(tie_word_embeddings, HF_BOOL),
    /* an older name of n_positions, which transformers no longer reads */
    {"n_ctx", HF_SAME, offsetof(clt_gpt2_config, n_positions), "n_positions"},
    /* GPT2Config.attribute_map */
    {"hidden_size", HF_ALIAS, 0, "n_embd"},
    {"max_position_embeddings", HF_ALIAS, 0, "n_positions"},
    {"num_attention_heads", HF_ALIAS, 0, "n_head"},
    {"num_hidden_layers", HF_ALIAS, 0, "n_layer"},
    {"model_type", HF_STRING, 0, "gpt2"},
    /* GPT-2 is causal either way; GPT2Model has no padding row */
    GPT2_ACCEPT(is_decoder),
    GPT2_ACCEPT(pad_token_id),
    /* GPT2DoubleHeadsModel's head */
    GPT2_ACCEPT(summary_type),
    GPT2_ACCEPT(summary_use_proj),
    GPT2_ACCEPT(summary_activation),
    GPT2_ACCEPT(summary_proj_to_labels),
    GPT2_ACCEPT(summary_first_dropout),
    GPT2_ACCEPT(summary_last_dropout),
};

clt_status clt_gpt2_config_read(const char *path, clt_gpt2_config *config)
{
    clt_gpt2_config defaults = clt_gpt2_config_default();
    return clt__models_config_read("clt_gpt2_config_read", path, gpt2_fields,
                                   (int)(sizeof gpt2_fields / sizeof *gpt2_fields), &defaults,
                                   sizeof defaults, config_ok, config);
}

/* ---- Conv1D: Hugging Face's linear layer with a transposed weight (in, out) ---------------- */

typedef struct conv1d {
    clt_module base;
    clt_tensor *weight, *bias;
} conv1d;

static clt_tensor *conv1d_forward(clt_module *self, clt_tensor *x)
{
    conv1d *c = (conv1d *)self;
    clt_tensor *wt = clt_transpose(c->weight, 0, 1); /* a view: x @ weight + bias */
    clt_tensor *y = wt ? clt_linear(x, wt, c->bias) : NULL;
    clt_tensor_release(wt);
    return y;
}

static const clt_module_type conv1d_type =
    {.name = "Conv1D", .size = sizeof(conv1d), .forward = conv1d_forward};

/* weight N(0, 0.02) and bias zeros, as GPT-2's initialisation */
static clt_module *conv1d_new(int64_t nx, int64_t nf)
{
    clt_module *m = clt_module_new(&conv1d_type);
    if (!m ||
        clt_module_register_parameter_take(m, "weight", clt__models_normal(nx, nf, 0.02)) !=
            CLT_OK ||
        clt_module_register_parameter_take(
            m, "bias", clt_tensor_zeros(CLT_SHAPE(nf), CLT_F32, clt_device_cpu())) != CLT_OK) {
        clt_module_release(m);
        return NULL;
    }
    ((conv1d *)m)->weight = clt_module_get_parameter(m, "weight");
    ((conv1d *)m)->bias = clt_module_get_parameter(m, "bias");
    return m;
}

/* ---- the blocks -------------------------------------------------------------------------- */

/* Containers without a forward of their own: GPT2Attention, GPT2MLP, GPT2Block (run by
 * block_forward), GPT2Model; registered children only. */
MODELS_CONTAINER_TYPE(attention_type, "GPT2Attention");
MODELS_CONTAINER_TYPE(mlp_type, "GPT2MLP");
MODELS_CONTAINER_TYPE(block_type, "GPT2Block");
MODELS_CONTAINER_TYPE(body_type, "GPT2Model");
/* lm_head: a Linear without bias, run by logits_of */
MODELS_CONTAINER_TYPE(head_type, "Linear");

typedef struct gpt2 {
    clt_module base;
    clt_gpt2_config config;
    clt_module *wte, *wpe, *ln_f, **blocks; /* registered; blocks owned by the struct */
} gpt2;

static clt_tensor *gpt2_module_forward(clt_module *self, clt_tensor *ids);
static void gpt2_destroy(clt_module *self) { free(((gpt2 *)self)->blocks); }
static clt_status gpt2_clone(const clt_module *src, clt_module *dst);
static const clt_module_type gpt2_type = {.name = "GPT2LMHeadModel",
                                          .size = sizeof(gpt2),
                                          .forward = gpt2_module_forward,
                                          .destroy = gpt2_destroy,
                                          .clone = gpt2_clone};

static clt_module *block_new(const void *config)
{
    const clt_gpt2_config *c = config;
    int64_t C = c->n_embd, inner = c->n_inner ? c->n_inner : 4 * C;
    int64_t shape[1] = {C};
    clt_module *attn =
        clt__models_container(&attention_type, 2, (const char *[]){"c_attn", "c_proj"},
                              (clt_module *[]){conv1d_new(C, 3 * C), conv1d_new(C, C)});
    clt_module *mlp =
        clt__models_container(&mlp_type, 2, (const char *[]){"c_fc", "c_proj"},
                              (clt_module *[]){conv1d_new(C, inner), conv1d_new(inner, C)});
    return clt__models_container(
        &block_type, 4, (const char *[]){"ln_1", "attn", "ln_2", "mlp"},
        (clt_module *[]){clt_nn_layer_norm(1, shape, c->layer_norm_epsilon), attn,
                         clt_nn_layer_norm(1, shape, c->layer_norm_epsilon), mlp});
}

/* transformer: wte, wpe, h (n_layer blocks), ln_f; NULL when one cannot be made. */
static clt_module *body_new(const clt_gpt2_config *c)
{
    clt_module *list = clt__models_layers(c->n_layer, block_new, c);
    if (!list)
        return NULL;
    return clt__models_container(
        &body_type, 4, (const char *[]){"wte", "wpe", "h", "ln_f"},
        (clt_module *[]){clt_nn_embedding(c->vocab_size, c->n_embd),
                         clt_nn_embedding(c->n_positions, c->n_embd), list,
                         clt_nn_layer_norm(1, (int64_t[]){c->n_embd}, c->layer_norm_epsilon)});
}

/* GPT-2's N(0, 0.02) and N(0, 0.01) embeddings, and lm_head: wte's weight when tied, else a
 * weight of its own, N(0, 0.02). */
static bool head_new(clt_module *m, const clt_gpt2_config *c)
{
    clt_tensor *w = clt_module_get_parameter(m, "transformer.wte.weight");
    clt_tensor *p = clt_module_get_parameter(m, "transformer.wpe.weight");
    bool ok = false;
    CLT_NO_GRAD {
        clt_tensor *nw = clt__models_normal(c->vocab_size, c->n_embd, 0.02);
        clt_tensor *np = clt__models_normal(c->n_positions, c->n_embd, 0.01);
        ok = nw && np && clt_copy_(w, nw) == CLT_OK && clt_copy_(p, np) == CLT_OK;
        clt_tensor_release(nw), clt_tensor_release(np);
    }
    clt_module *head = ok ? clt_module_new(&head_type) : NULL;
    ok = head && (c->tie_word_embeddings
                      ? clt_module_register_parameter(head, "weight", w)
                      : clt_module_register_parameter_take(
                            head, "weight", clt__models_normal(c->vocab_size, c->n_embd, 0.02))) ==
                     CLT_OK;
    if (!ok) {
        clt_module_release(head);
        return false;
    }
    return clt_module_register_module_take(m, "lm_head", head) == CLT_OK;
}

/* Points the struct's fields at m's registered modules. */
static clt_status find_blocks(gpt2 *g)
{
    clt_module *m = &g->base;
    g->blocks = calloc((size_t)g->config.n_layer, sizeof *g->blocks);
    if (!g->blocks)
        return clt_set_error(CLT_ERR_OUT_OF_MEMORY, "clt_gpt2_new", "no room for %d layers",
                             g->config.n_layer);
    g->wte = clt_module_get_child(m, "transformer.wte");
    g->wpe = clt_module_get_child(m, "transformer.wpe");
    g->ln_f = clt_module_get_child(m, "transformer.ln_f");
    for (int i = 0; i < g->config.n_layer; i++) {
        char name[32];
        snprintf(name, sizeof name, "transformer.h.%d", i);
        g->blocks[i] = clt_module_get_child(m, name);
    }
    return CLT_OK;
}

/* c into the model's zeroed struct field by field, its padding left zero: clt_module_clone_to
 * reads a module's every word. */
static void store_config(clt_gpt2_config *to, const clt_gpt2_config *c)
{
    to->vocab_size = c->vocab_size, to->n_positions = c->n_positions, to->n_embd = c->n_embd;
    to->n_layer = c->n_layer, to->n_head = c->n_head, to->n_inner = c->n_inner;
    to->activation_function = c->activation_function;
    to->resid_pdrop = c->resid_pdrop, to->embd_pdrop = c->embd_pdrop;
    to->attn_pdrop = c->attn_pdrop, to->layer_norm_epsilon = c->layer_norm_epsilon;
    to->scale_attn_weights = c->scale_attn_weights;
    to->scale_attn_by_inverse_layer_idx = c->scale_attn_by_inverse_layer_idx;
    to->reorder_and_upcast_attn = c->reorder_and_upcast_attn;
    to->tie_word_embeddings = c->tie_word_embeddings;
}

clt_module *clt_gpt2_new(const clt_gpt2_config *c)
{
    char why[160];
    if (!c || !config_ok(c, why, sizeof why)) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_gpt2_new", "%s", c ? why : "config is NULL");
        return NULL;
    }
    clt_module *m = clt_module_new(&gpt2_type);
    if (m)
        store_config(&((gpt2 *)m)->config, c);
    if (!m || clt_module_register_module_take(m, "transformer", body_new(c)) != CLT_OK ||
        !head_new(m, c) || find_blocks((gpt2 *)m) != CLT_OK) {
        clt_module_release(m);
        return NULL;
    }
    return m;
}

static clt_status gpt2_clone(const clt_module *src, clt_module *dst)
{
    (void)src;
    return find_blocks((gpt2 *)dst);
}

/* ---- the forward pass -------------------------------------------------------------------- */

#define K(expr) MODELS_KEEP(&p, (expr))

/* The keep-mask of T queries at positions past ... past + T - 1 over the past + T keys: each
 * sees the keys up to its own position. */
static clt_tensor *cached_mask(int64_t past, int64_t T, clt_device *dev)
{
    models_pool p = {.n = 0};
    clt_tensor *i = K(clt_tensor_arange((double)past, (double)(past + T), 1, CLT_I64, dev));
    clt_tensor *j = i ? K(clt_tensor_arange(0, (double)(past + T), 1, CLT_I64, dev)) : NULL;
    clt_tensor *col = j ? K(clt_reshape(i, CLT_SHAPE(T, 1))) : NULL;
    clt_tensor *mask = col ? clt_le(j, col) : NULL;
    clt__models_drain(&p);
    return mask;
}

/* GPT2Attention's scale for layer l: 1 / sqrt(head size) when scale_attn_weights, also
 * / (l + 1) when scale_attn_by_inverse_layer_idx. */
static double attention_scale(const clt_gpt2_config *c, int l)
{
    double scale = c->scale_attn_weights ? 1 / sqrt((double)(c->n_embd / c->n_head)) : 1;
    return c->scale_attn_by_inverse_layer_idx ? scale / (double)(l + 1) : scale;
}

/* What one step runs with: the model, training or not, the tokens cached before it. */
typedef struct step {
    const gpt2 *g;
    bool training;
    int64_t past;
} step;

/* attn(ln_1(h)) for layer l, with the keys and values extended in *k_cache, *v_cache (when
 * not NULL); new references to the projected output and to the extended keys and values. */
static clt_tensor *attention_forward(const step *s, int l, clt_tensor *a, clt_tensor **k_out,
                                     clt_tensor **v_out, clt_tensor *k_cache, clt_tensor *v_cache)
{
    const clt_gpt2_config *c = &s->g->config;
    clt_module *attn = clt_module_get_child(s->g->blocks[l], "attn");
    models_pool p = {.n = 0};
    int64_t T = clt_tensor_size(a, 1), C = c->n_embd;
    clt_tensor *qkv = K(clt__models_run(attn, "c_attn", a));
    clt_tensor *q = qkv ? K(clt__models_split_heads(K(clt_narrow(qkv, 2, 0, C)), c->n_head)) : NULL;
    clt_tensor *k = q ? K(clt__models_split_heads(K(clt_narrow(qkv, 2, C, C)), c->n_head)) : NULL;
    clt_tensor *v =
        k ? K(clt__models_split_heads(K(clt_narrow(qkv, 2, 2 * C, C)), c->n_head)) : NULL;
    if (v && k_cache && s->past > 0) {
        k = K(clt_cat((clt_tensor *[]){k_cache, k}, 2, 2));
        v = k ? K(clt_cat((clt_tensor *[]){v_cache, v}, 2, 2)) : NULL;
    }
    clt_attention_options o = clt_attention_options_default();
    o.scale = attention_scale(c, l);
    o.causal = T > 1 && s->past == 0;
    if (v && T > 1 && s->past > 0)
        o.mask = K(cached_mask(s->past, T, clt_tensor_device(a)));
    clt_tensor *y = v ? K(clt__models_attention(q, k, v, &o, c->attn_pdrop, s->training)) : NULL;
    clt_tensor *merged = y ? K(clt__models_merge_heads(y)) : NULL;
    clt_tensor *proj = merged ? K(clt__models_run(attn, "c_proj", merged)) : NULL;
    clt_tensor *out = proj ? clt_dropout(proj, c->resid_pdrop, s->training) : NULL;
    if (out && k_out) {
        *k_out = clt_tensor_retain(k);
        *v_out = clt_tensor_retain(v);
    }
    clt__models_drain(&p);
    return out;
}

/* mlp(ln_2(h)): c_fc, the activation, c_proj, dropout. */
static clt_tensor *mlp_forward(const step *s, int l, clt_tensor *m)
{
    const clt_gpt2_config *c = &s->g->config;
    clt_module *mlp = clt_module_get_child(s->g->blocks[l], "mlp");
    models_pool p = {.n = 0};
    clt_tensor *fc = K(clt__models_run(mlp, "c_fc", m));
    clt_tensor *act = fc ? K(clt__models_activate(fc, c->activation_function)) : NULL;
    clt_tensor *down = act ? K(clt__models_run(mlp, "c_proj", act)) : NULL;
    clt_tensor *out = down ? clt_dropout(down, c->resid_pdrop, s->training) : NULL;
    clt__models_drain(&p);
    return out;
}

/* Layer l over h (B, T, C) after the cached positions (their keys and values in *k_cache,
 * *v_cache, replaced by the extended ones, contiguous, on success). A new reference to the
 * block's output. */
static clt_tensor *block_forward(const step *s, int l, clt_tensor *h, clt_tensor **k_cache,
                                 clt_tensor **v_cache)
{
    clt_module *block = s->g->blocks[l];
    models_pool p = {.n = 0};
    clt_tensor *k = NULL, *v = NULL;
    clt_tensor *a = K(clt__models_run(block, "ln_1", h));
    clt_tensor *attn = a ? K(attention_forward(s, l, a, k_cache ? &k : NULL, &v,
                                               k_cache ? *k_cache : NULL,
                                               v_cache ? *v_cache : NULL))
                         : NULL;
    clt_tensor *h2 = attn ? K(clt_add(attn, h)) : NULL;
    clt_tensor *m = h2 ? K(clt__models_run(block, "ln_2", h2)) : NULL;
    clt_tensor *ff = m ? K(mlp_forward(s, l, m)) : NULL;
    clt_tensor *out = ff ? clt_add(h2, ff) : NULL;
    if (out && k_cache) { /* the extended keys and values, contiguous for the next step */
        clt_tensor *kc = clt_contiguous(k), *vc = kc ? clt_contiguous(v) : NULL;
        if (!vc) {
            clt_tensor_release(kc);
            clt_tensor_release(out);
            out = NULL;
        } else {
            clt_tensor_release(*k_cache), clt_tensor_release(*v_cache);
            *k_cache = kc, *v_cache = vc;
        }
    }
    clt_tensor_release(k), clt_tensor_release(v);
    clt__models_drain(&p);
    return out;
}

/* model as a GPT-2, or NULL with the error naming `where` set. */
static const gpt2 *as_gpt2(const clt_module *model, const char *where)
{
    if (!model || model->type != &gpt2_type) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, where, "the model is a %s, not a %s",
                      clt_module_type_name(model), gpt2_type.name);
        return NULL;
    }
    return (const gpt2 *)model;
}

/* CLT_OK when t (layer l's keys or values) is what a step over a batch of B needs after the
 * cache's tokens: (B, n_head, length, head size), of the model's dtype on its device. */
static clt_status check_cached(const gpt2 *g, const clt_gpt2_cache *cache, int l, clt_tensor *t,
                               int64_t B)
{
    const char *f = "clt_gpt2_forward";
    const clt_gpt2_config *c = &g->config;
    clt_tensor *w = clt_module_get_parameter(g->wte, "weight");
    int64_t want[4] = {B, c->n_head, cache->length, c->n_embd / c->n_head};
    char got_s[96], want_s[96];
    bool same = clt_tensor_ndim(t) == 4;
    for (int d = 0; same && d < 4; d++)
        same = clt_tensor_size(t, d) == want[d];
    if (!same)
        return clt_set_error(
            CLT_ERR_SHAPE, f,
            "layer %d of the cache holds %s, a step of this model over a batch of %lld after "
            "%lld cached tokens needs %s (B, n_head, length, head size)",
            l, clt__models_shape(clt_tensor_ndim(t), clt_tensor_shape(t), got_s, sizeof got_s),
            (long long)B, (long long)cache->length,
            clt__models_shape(4, want, want_s, sizeof want_s));
    if (clt_tensor_dtype(t) != clt_tensor_dtype(w))
        return clt_set_error(CLT_ERR_DTYPE, f, "layer %d of the cache holds %s, the model %s", l,
                             clt_dtype_name(clt_tensor_dtype(t)),
                             clt_dtype_name(clt_tensor_dtype(w)));
    if (clt_tensor_device(t) != clt_tensor_device(w))
        return clt_set_error(CLT_ERR_DEVICE_MISMATCH, f, "layer %d of the cache is on %s, the "
                             "model on %s", l, clt_device_name(clt_tensor_device(t)),
                             clt_device_name(clt_tensor_device(w)));
    return CLT_OK;
}

/* CLT_OK when the cache is one of this model's, fit for a step over a batch of B. */
static clt_status check_cache(const gpt2 *g, const clt_gpt2_cache *cache, int64_t B)
{
    if (cache->n_layer != g->config.n_layer || !cache->k || !cache->v)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_gpt2_forward",
                             "the cache has n_layer %d%s, the model n_layer %d "
                             "(clt_gpt2_cache_init makes a model's cache)",
                             cache->n_layer, cache->k && cache->v ? "" : " and no arrays",
                             g->config.n_layer);
    if (cache->length < 0)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_gpt2_forward",
                             "the cache's length %lld is negative", (long long)cache->length);
    clt_status st = CLT_OK;
    for (int l = 0; cache->length > 0 && st == CLT_OK && l < cache->n_layer; l++) {
        st = check_cached(g, cache, l, cache->k[l], B);
        st = st == CLT_OK ? check_cached(g, cache, l, cache->v[l], B) : st;
    }
    return st;
}

/* The cache's keys and values, retained (each layer's k, then v), to put back after a failed
 * step; NULL with the error set when there is no room. */
static clt_tensor **cache_keep(const clt_gpt2_cache *cache)
{
    clt_tensor **kept = calloc(2 * (size_t)cache->n_layer, sizeof *kept);
    if (!kept) {
        clt_set_error(CLT_ERR_OUT_OF_MEMORY, "clt_gpt2_forward",
                      "no room to keep the %d layers of the cache", cache->n_layer);
        return NULL;
    }
    for (int l = 0; l < cache->n_layer; l++) {
        kept[2 * l] = clt_tensor_retain(cache->k[l]);
        kept[2 * l + 1] = clt_tensor_retain(cache->v[l]);
    }
    return kept;
}

/* Ends a step: after a success drops what cache_keep kept and counts the T new tokens; after a
 * failure puts the kept keys and values back. */
static void cache_end(clt_gpt2_cache *cache, clt_tensor **kept, bool ok, int64_t T)
{
    for (int l = 0; l < cache->n_layer; l++) {
        if (!ok) { /* swap: the cache gets the old ones, the new ones are released */
            clt_tensor *k = cache->k[l], *v = cache->v[l];
            cache->k[l] = kept[2 * l], cache->v[l] = kept[2 * l + 1];
            kept[2 * l] = k, kept[2 * l + 1] = v;
        }
        clt_tensor_release(kept[2 * l]), clt_tensor_release(kept[2 * l + 1]);
    }
    free(kept);
    if (ok)
        cache->length += T;
}

/* The logits of ids (B, T) at positions s->past ... past + T - 1, each layer's keys and values
 * extended in the cache when there is one. */
static clt_tensor *logits_of(const step *s, clt_tensor *ids, clt_gpt2_cache *cache)
{
    const gpt2 *g = s->g;
    int64_t T = clt_tensor_size(ids, 1);
    models_pool p = {.n = 0};
    clt_tensor *pos = K(clt_tensor_arange((double)s->past, (double)(s->past + T), 1, CLT_I64,
                                          clt_tensor_device(ids)));
    clt_tensor *te = pos ? K(clt_module_forward(g->wte, ids)) : NULL;
    clt_tensor *pe = te ? K(clt_module_forward(g->wpe, pos)) : NULL;
    clt_tensor *sum = pe ? K(clt_add(te, pe)) : NULL;
    clt_tensor *h = sum ? clt_dropout(sum, g->config.embd_pdrop, s->training) : NULL;
    for (int l = 0; h && l < g->config.n_layer; l++) {
        clt_tensor *next = block_forward(s, l, h, cache ? &cache->k[l] : NULL,
                                         cache ? &cache->v[l] : NULL);
        clt_tensor_release(h);
        h = next;
    }
    clt_tensor *f = h ? K(clt_module_forward(g->ln_f, h)) : NULL;
    clt_tensor_release(h);
    clt_tensor *head = clt_module_get_parameter(&g->base, "lm_head.weight");
    clt_tensor *logits = f ? clt_linear(f, head, NULL) : NULL;
    clt__models_drain(&p);
    return logits;
}

clt_tensor *clt_gpt2_forward(clt_module *model, clt_tensor *ids, clt_gpt2_cache *cache)
{
    const char *f = "clt_gpt2_forward";
    const gpt2 *g = as_gpt2(model, f);
    if (!g)
        return NULL;
    const clt_gpt2_config *c = &g->config;
    if (clt_tensor_ndim(ids) != 2) {
        clt_set_error(CLT_ERR_SHAPE, f, "ids must be (B, T) (got %d dimensions)",
                      clt_tensor_ndim(ids));
        return NULL;
    }
    if (cache && check_cache(g, cache, clt_tensor_size(ids, 0)) != CLT_OK)
        return NULL;
    int64_t past = cache ? cache->length : 0, T = clt_tensor_size(ids, 1);
    if (T > c->n_positions - past) {
        clt_set_error(CLT_ERR_SHAPE, f,
                      "T %lld and the cached %lld tokens are more than n_positions %lld",
                      (long long)T, (long long)past, (long long)c->n_positions);
        return NULL;
    }
    clt_tensor **kept = cache ? cache_keep(cache) : NULL; /* the cache as it was */
    if (cache && !kept)
        return NULL;
    step s = {g, clt_module_is_training(model), past};
    clt_tensor *logits = logits_of(&s, ids, cache);
    if (cache)
        cache_end(cache, kept, logits != NULL, T);
    return logits;
}

static clt_tensor *gpt2_module_forward(clt_module *self, clt_tensor *ids)
{
    return clt_gpt2_forward(self, ids, NULL);
}

clt_status clt_gpt2_cache_init(clt_gpt2_cache *cache, const clt_module *model)
{
    if (!cache)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_gpt2_cache_init", "cache is NULL");
    memset(cache, 0, sizeof *cache);
    const gpt2 *g = as_gpt2(model, "clt_gpt2_cache_init");
    if (!g)
        return CLT_ERR_INVALID_ARGUMENT;
    cache->k = calloc((size_t)g->config.n_layer, sizeof *cache->k);
    cache->v = calloc((size_t)g->config.n_layer, sizeof *cache->v);
    if (!cache->k || !cache->v) {
        clt_gpt2_cache_clear(cache);
        return clt_set_error(CLT_ERR_OUT_OF_MEMORY, "clt_gpt2_cache_init",
                             "no room for the cache's %d layers", g->config.n_layer);
    }
    cache->n_layer = g->config.n_layer;
    return CLT_OK;
}

void clt_gpt2_cache_clear(clt_gpt2_cache *cache)
{
    if (!cache)
        return;
    for (int l = 0; cache->k && cache->v && l < cache->n_layer; l++) {
        clt_tensor_release(cache->k[l]);
        clt_tensor_release(cache->v[l]);
    }
    free(cache->k);
    free(cache->v);
    memset(cache, 0, sizeof *cache);
}

/* ---- weights ----------------------------------------------------------------------------- */

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* What a load reads: the model, the file's path, whether its names have the "transformer."
 * prefix (GPT2LMHeadModel's) or not (GPT2Model's). */
typedef struct gpt2_file {
    const gpt2 *g;
    const char *path;
    bool prefixed;
} gpt2_file;

/* CLT_OK when the file's lm_head.weight has the shape of wte's weight, which is the head's. */
static clt_status check_head(const gpt2_file *file, clt_tensor *head)
{
    clt_tensor *w = clt_module_get_parameter(file->g->wte, "weight");
    bool same = clt_tensor_ndim(head) == clt_tensor_ndim(w);
    for (int d = 0; same && d < clt_tensor_ndim(w); d++)
        same = clt_tensor_size(head, d) == clt_tensor_size(w, d);
    char got[96], want[96];
    if (!same)
        return clt_set_error(
            CLT_ERR_INVALID_ARGUMENT, "clt_gpt2_load",
            "%s: lm_head.weight is %s, the model's (vocab_size, n_embd) %s (the head is tied to "
            "transformer.wte.weight)",
            file->path,
            clt__models_shape(clt_tensor_ndim(head), clt_tensor_shape(head), got, sizeof got),
            clt__models_shape(clt_tensor_ndim(w), clt_tensor_shape(w), want, sizeof want));
    return CLT_OK;
}

static clt__models_action gpt2_rename(void *ctx, const char *name, clt_tensor *t, char *out,
                                      size_t size)
{
    const gpt2_file *file = ctx;
    if (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias"))
        return CLT_MODELS_SKIP; /* older files' causal-mask buffers: attention is causal itself */
    if (strcmp(name, "lm_head.weight") == 0 && file->g->config.tie_word_embeddings)
        return check_head(file, t) == CLT_OK ? CLT_MODELS_SKIP : CLT_MODELS_FAIL;
    bool as_is = file->prefixed || strcmp(name, "lm_head.weight") == 0;
    snprintf(out, size, "%s%s", as_is ? "" : "transformer.", name);
    return CLT_MODELS_LOAD;
}

clt_status clt_gpt2_load(clt_module *model, const char *path)
{
    const char *f = "clt_gpt2_load";
    const gpt2 *g = as_gpt2(model, f);
    clt_safetensors file;
    if (!g || clt__models_open(f, path, &file) != CLT_OK)
        return clt_last_status();
    gpt2_file ctx = {g, path, clt__models_any_prefix(&file, "transformer.")};
    clt_status st = clt__models_load(model, f, path, &file, gpt2_rename, &ctx, NULL, 0);
    clt_safetensors_clear(&file);
    return st;
}
