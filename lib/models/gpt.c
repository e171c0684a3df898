/* GPT-2 as Hugging Face's GPT2LMHeadModel builds it (see gpt.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gpt.h"

gpt_config gpt2_small_config(void)
{
    return (gpt_config){.vocab_size = 50257, .n_positions = 1024, .n_embd = 768, .n_layer = 12,
                        .n_head = 12, .layer_norm_epsilon = 1e-5};
}

enum { GPT_MAX_LAYERS = 1000 };

/* Whether c describes a model gpt_new can build; when not, why in `why` (of size bytes). */
static bool config_ok(const gpt_config *c, char *why, size_t size)
{
    static const char *const names[3] = {"vocab_size", "n_positions", "n_embd"};
    int64_t sizes[3] = {c->vocab_size, c->n_positions, c->n_embd};
    for (int i = 0; i < 3; i++)
        if (sizes[i] < 1) {
            snprintf(why, size, "%s %lld must be positive", names[i], (long long)sizes[i]);
            return false;
        }
    if (c->n_layer < 1 || c->n_layer > GPT_MAX_LAYERS)
        snprintf(why, size, "n_layer %d must be from 1 to %d", c->n_layer, GPT_MAX_LAYERS);
    else if (c->n_head < 1 || c->n_embd % c->n_head != 0)
        snprintf(why, size, "n_head %d must be positive and divide n_embd %lld", c->n_head,
                 (long long)c->n_embd);
    else if (!(c->layer_norm_epsilon >= 0 && isfinite(c->layer_norm_epsilon)))
        snprintf(why, size, "layer_norm_epsilon %g must be finite and not negative",
                 c->layer_norm_epsilon);
    else
        return true;
    return false;
}

clt_status gpt_config_read(const char *path, gpt_config *c, char *error, size_t size)
{
    char text[1 << 16], why[160];
    *c = gpt2_small_config();
    clt_status st = models_read_text(path, text, sizeof text, error, size);
    if (st != CLT_OK)
        return st;
    /* the names Hugging Face's GPT2Config uses, and n_ctx, n_positions' older alias */
    models_json j = {text, path, error, size};
    if (!models_json_size(&j, "vocab_size", &c->vocab_size) ||
        !models_json_size(&j, "n_ctx", &c->n_positions) ||
        !models_json_size(&j, "n_positions", &c->n_positions) ||
        !models_json_size(&j, "n_embd", &c->n_embd) ||
        !models_json_int(&j, "n_layer", &c->n_layer) ||
        !models_json_int(&j, "n_head", &c->n_head))
        return CLT_ERR_INVALID_ARGUMENT;
    double eps;
    if (models_json_number(text, "layer_norm_epsilon", &eps))
        c->layer_norm_epsilon = eps;
    if (!config_ok(c, why, sizeof why)) {
        snprintf(error, size, "%s: %s", path, why);
        return CLT_ERR_INVALID_ARGUMENT;
    }
    return CLT_OK;
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

static const clt_module_type conv1d_type = {.name = "Conv1D",
                                            .size = sizeof(conv1d),
                                            .forward = conv1d_forward};

/* weight N(0, 0.02) and bias zeros, as GPT-2's initialisation */
static clt_tensor *normal(int64_t rows, int64_t cols, double std)
{
    clt_tensor *r = clt_tensor_randn(CLT_SHAPE(rows, cols), CLT_F32, clt_device_cpu());
    clt_tensor *s = r ? clt_mul_scalar(r, std) : NULL;
    clt_tensor_release(r);
    return s;
}

static clt_module *conv1d_new(int64_t nx, int64_t nf)
{
    clt_module *m = clt_module_new(&conv1d_type);
    if (!m || clt_module_register_parameter_take(m, "weight", normal(nx, nf, 0.02)) != CLT_OK ||
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
 * block_forward), nn.ModuleList, GPT2Model; registered children only. */
static const clt_module_type attention_type = {.name = "GPT2Attention",
                                               .size = sizeof(clt_module)};
static const clt_module_type mlp_type = {.name = "GPT2MLP", .size = sizeof(clt_module)};
static const clt_module_type block_type = {.name = "GPT2Block", .size = sizeof(clt_module)};
static const clt_module_type list_type = {.name = "ModuleList", .size = sizeof(clt_module)};
static const clt_module_type body_type = {.name = "GPT2Model", .size = sizeof(clt_module)};
/* lm_head: a Linear without bias whose weight is wte's */
static const clt_module_type head_type = {.name = "Linear", .size = sizeof(clt_module)};

typedef struct gpt {
    clt_module base;
    gpt_config config;
    clt_module *wte, *wpe, *ln_f, **blocks; /* registered; blocks owned by the struct */
} gpt;

static clt_tensor *gpt_module_forward(clt_module *self, clt_tensor *ids);
static void gpt_destroy(clt_module *self) { free(((gpt *)self)->blocks); }
static clt_status gpt_clone(const clt_module *src, clt_module *dst);
static const clt_module_type gpt_type = {.name = "GPT2LMHeadModel",
                                         .size = sizeof(gpt),
                                         .forward = gpt_module_forward,
                                         .destroy = gpt_destroy,
                                         .clone = gpt_clone};

static clt_module *block_new(const gpt_config *c)
{
    int64_t C = c->n_embd;
    int64_t shape[1] = {C};
    clt_module *attn =
        models_container(&attention_type, 2, (const char *[]){"c_attn", "c_proj"},
                         (clt_module *[]){conv1d_new(C, 3 * C), conv1d_new(C, C)});
    clt_module *mlp =
        models_container(&mlp_type, 2, (const char *[]){"c_fc", "c_proj"},
                         (clt_module *[]){conv1d_new(C, 4 * C), conv1d_new(4 * C, C)});
    return models_container(&block_type, 4, (const char *[]){"ln_1", "attn", "ln_2", "mlp"},
                            (clt_module *[]){clt_nn_layer_norm(1, shape, c->layer_norm_epsilon),
                                             attn,
                                             clt_nn_layer_norm(1, shape, c->layer_norm_epsilon),
                                             mlp});
}

clt_module *gpt_new(const gpt_config *c)
{
    char why[160];
    if (!c) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, "gpt_new", "config is NULL");
        return NULL;
    }
    if (!config_ok(c, why, sizeof why)) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, "gpt_new", "%s", why);
        return NULL;
    }
    clt_module *m = clt_module_new(&gpt_type);
    gpt *g = (gpt *)m;
    clt_module *list = m ? clt_module_new(&list_type) : NULL;
    clt_module *head = list ? clt_module_new(&head_type) : NULL;
    bool ok = head != NULL;
    if (m)
        g->config = *c;
    for (int i = 0; ok && i < c->n_layer; i++) {
        char name[16];
        snprintf(name, sizeof name, "%d", i);
        ok = clt_module_register_module_take(list, name, block_new(c)) == CLT_OK;
    }
    clt_module *body =
        ok ? models_container(&body_type, 4, (const char *[]){"wte", "wpe", "h", "ln_f"},
                              (clt_module *[]){clt_nn_embedding(c->vocab_size, c->n_embd),
                                               clt_nn_embedding(c->n_positions, c->n_embd),
                                               clt_module_retain(list),
                                               clt_nn_layer_norm(1, (int64_t[]){c->n_embd},
                                                                 c->layer_norm_epsilon)})
           : NULL;
    ok = body && clt_module_register_module_take(m, "transformer", body) == CLT_OK;
    if (ok) { /* GPT-2's N(0, 0.02) embeddings; lm_head shares wte's weight */
        clt_tensor *w = clt_module_get_parameter(m, "transformer.wte.weight");
        clt_tensor *p = clt_module_get_parameter(m, "transformer.wpe.weight");
        CLT_NO_GRAD {
            clt_tensor *nw = normal(c->vocab_size, c->n_embd, 0.02);
            clt_tensor *np = normal(c->n_positions, c->n_embd, 0.01);
            ok = nw && np && clt_copy_(w, nw) == CLT_OK && clt_copy_(p, np) == CLT_OK;
            clt_tensor_release(nw), clt_tensor_release(np);
        }
        ok = ok && clt_module_register_parameter(head, "weight", w) == CLT_OK &&
             clt_module_register_module_take(m, "lm_head", clt_module_retain(head)) == CLT_OK;
    }
    if (ok && !(g->blocks = calloc((size_t)c->n_layer, sizeof *g->blocks)))
        ok = false;
    clt_module_release(head);
    clt_module_release(list);
    if (!ok) {
        clt_module_release(m);
        return NULL;
    }
    g->wte = clt_module_get_child(m, "transformer.wte");
    g->wpe = clt_module_get_child(m, "transformer.wpe");
    g->ln_f = clt_module_get_child(m, "transformer.ln_f");
    for (int i = 0; i < c->n_layer; i++) {
        char name[32];
        snprintf(name, sizeof name, "transformer.h.%d", i);
        g->blocks[i] = clt_module_get_child(m, name);
    }
    return m;
}

static clt_status gpt_clone(const clt_module *src, clt_module *dst)
{
    gpt *d = (gpt *)dst;
    d->blocks = calloc((size_t)d->config.n_layer, sizeof *d->blocks);
    if (!d->blocks)
        return CLT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < d->config.n_layer; i++) {
        char name[32];
        snprintf(name, sizeof name, "transformer.h.%d", i);
        d->blocks[i] = clt_module_get_child(dst, name);
    }
    (void)src;
    return CLT_OK;
}

/* ---- the forward pass -------------------------------------------------------------------- */

#define K(expr) MODELS_KEEP(&p, (expr))

/* One block over h (B, T, C) after `past` cached positions (their keys and values in *k, *v,
 * replaced by the extended ones on success). A new reference to the block's output. */
static clt_tensor *block_forward(clt_module *block, const gpt_config *c, clt_tensor *h,
                                 int64_t past, clt_tensor **k_cache, clt_tensor **v_cache)
{
    models_pool p = {.n = 0};
    clt_module *attn = clt_module_get_child(block, "attn"), *mlp = clt_module_get_child(block, "mlp");
    int64_t T = clt_tensor_size(h, 1), C = c->n_embd;
    clt_tensor *a = K(models_run(block, "ln_1", h));
    clt_tensor *qkv = a ? K(models_run(attn, "c_attn", a)) : NULL;
    clt_tensor *q = qkv ? K(models_split_heads(K(clt_narrow(qkv, 2, 0, C)), c->n_head)) : NULL;
    clt_tensor *k = q ? K(models_split_heads(K(clt_narrow(qkv, 2, C, C)), c->n_head)) : NULL;
    clt_tensor *v = k ? K(models_split_heads(K(clt_narrow(qkv, 2, 2 * C, C)), c->n_head)) : NULL;
    if (v && k_cache && past > 0) {
        k = K(clt_cat((clt_tensor *[]){*k_cache, k}, 2, 2));
        v = k ? K(clt_cat((clt_tensor *[]){*v_cache, v}, 2, 2)) : NULL;
    }
    clt_attention_options o = clt_attention_options_default();
    if (v && T > 1 && past == 0) {
        o.causal = true;
    } else if (v && T > 1) { /* queries past .. past + T - 1 see keys 0 .. their own position */
        clt_tensor *i = K(clt_tensor_arange((double)past, (double)(past + T), 1, CLT_I64,
                                            clt_tensor_device(h)));
        clt_tensor *j = i ? K(clt_tensor_arange(0, (double)(past + T), 1, CLT_I64,
                                                clt_tensor_device(h)))
                          : NULL;
        clt_tensor *col = j ? K(clt_reshape(i, CLT_SHAPE(T, 1))) : NULL;
        o.mask = col ? K(clt_le(j, col)) : NULL;
    }
    clt_tensor *y = v ? K(clt_scaled_dot_product_attention(q, k, v, &o)) : NULL;
    clt_tensor *merged = y ? K(models_merge_heads(y)) : NULL;
    clt_tensor *proj = merged ? K(models_run(attn, "c_proj", merged)) : NULL;
    clt_tensor *h2 = proj ? K(clt_add(h, proj)) : NULL;
    clt_tensor *m = h2 ? K(models_run(block, "ln_2", h2)) : NULL;
    clt_tensor *fc = m ? K(models_run(mlp, "c_fc", m)) : NULL;
    clt_tensor *act = fc ? K(clt_gelu_tanh(fc)) : NULL;
    clt_tensor *down = act ? K(models_run(mlp, "c_proj", act)) : NULL;
    clt_tensor *out = down ? clt_add(h2, down) : NULL;
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
    models_drain(&p);
    return out;
}

/* model as a GPT-2, or NULL with the error naming `where` set. */
static const gpt *as_gpt(const clt_module *model, const char *where)
{
    if (!model || model->type != &gpt_type) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, where, "the model is a %s, not a %s",
                      clt_module_type_name(model), gpt_type.name);
        return NULL;
    }
    return (const gpt *)model;
}

/* CLT_OK when t (layer l's keys or values) is what a step over a batch of B needs after the
 * cache's tokens: (B, n_head, length, head size), of the model's dtype on its device. */
static clt_status check_cached(const gpt *g, const gpt_cache *cache, int l, clt_tensor *t,
                               int64_t B)
{
    const gpt_config *c = &g->config;
    clt_tensor *w = clt_module_get_parameter(g->wte, "weight");
    int64_t want[4] = {B, c->n_head, cache->length, c->n_embd / c->n_head};
    char got_s[96], want_s[96];
    bool same = clt_tensor_ndim(t) == 4;
    for (int d = 0; same && d < 4; d++)
        same = clt_tensor_size(t, d) == want[d];
    if (!same)
        return clt_set_error(CLT_ERR_SHAPE, "gpt_forward",
                             "layer %d of the cache holds %s, a step of this model over a batch "
                             "of %lld after %lld cached tokens needs %s (B, n_head, length, "
                             "head size)",
                             l,
                             models_shape(clt_tensor_ndim(t), clt_tensor_shape(t), got_s,
                                          sizeof got_s),
                             (long long)B, (long long)cache->length,
                             models_shape(4, want, want_s, sizeof want_s));
    if (clt_tensor_dtype(t) != clt_tensor_dtype(w))
        return clt_set_error(CLT_ERR_DTYPE, "gpt_forward",
                             "layer %d of the cache holds %s, the model %s", l,
                             clt_dtype_name(clt_tensor_dtype(t)),
                             clt_dtype_name(clt_tensor_dtype(w)));
    if (clt_tensor_device(t) != clt_tensor_device(w))
        return clt_set_error(CLT_ERR_DEVICE_MISMATCH, "gpt_forward",
                             "layer %d of the cache is on %s, the model on %s", l,
                             clt_device_name(clt_tensor_device(t)),
                             clt_device_name(clt_tensor_device(w)));
    return CLT_OK;
}

/* CLT_OK when the cache is one of this model's, fit for a step over a batch of B. */
static clt_status check_cache(const gpt *g, const gpt_cache *cache, int64_t B)
{
    if (cache->n_layer != g->config.n_layer || !cache->k || !cache->v)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "gpt_forward",
                             "the cache has n_layer %d%s, the model n_layer %d (gpt_cache_init "
                             "makes a model's cache)",
                             cache->n_layer, cache->k && cache->v ? "" : " and no arrays",
                             g->config.n_layer);
    if (cache->length < 0)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "gpt_forward",
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
static clt_tensor **cache_keep(const gpt_cache *cache)
{
    clt_tensor **kept = calloc(2 * (size_t)cache->n_layer, sizeof *kept);
    if (!kept) {
        clt_set_error(CLT_ERR_OUT_OF_MEMORY, "gpt_forward",
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
static void cache_end(gpt_cache *cache, clt_tensor **kept, bool ok, int64_t T)
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

/* The logits of ids (B, T) at positions past ... past + T - 1, each layer's keys and values
 * extended in the cache when there is one. */
static clt_tensor *logits_of(const gpt *g, clt_tensor *ids, int64_t past, gpt_cache *cache)
{
    const gpt_config *c = &g->config;
    int64_t T = clt_tensor_size(ids, 1);
    models_pool p = {.n = 0};
    clt_tensor *pos = K(clt_tensor_arange((double)past, (double)(past + T), 1, CLT_I64,
                                          clt_tensor_device(ids)));
    clt_tensor *te = pos ? K(clt_module_forward(g->wte, ids)) : NULL;
    clt_tensor *pe = te ? K(clt_module_forward(g->wpe, pos)) : NULL;
    clt_tensor *h = pe ? clt_add(te, pe) : NULL;
    for (int l = 0; h && l < c->n_layer; l++) {
        clt_tensor *next = block_forward(g->blocks[l], c, h, past, cache ? &cache->k[l] : NULL,
                                         cache ? &cache->v[l] : NULL);
        clt_tensor_release(h);
        h = next;
    }
    clt_tensor *f = h ? K(clt_module_forward(g->ln_f, h)) : NULL;
    clt_tensor_release(h);
    clt_tensor *logits =
        f ? clt_linear(f, clt_module_get_parameter(g->wte, "weight"), NULL) : NULL;
    models_drain(&p);
    return logits;
}

clt_tensor *gpt_forward(clt_module *model, clt_tensor *ids, gpt_cache *cache)
{
    const gpt *g = as_gpt(model, "gpt_forward");
    if (!g)
        return NULL;
    const gpt_config *c = &g->config;
    if (clt_tensor_ndim(ids) != 2) {
        clt_set_error(CLT_ERR_SHAPE, "gpt_forward", "ids must be (B, T) (got %d dimensions)",
                      clt_tensor_ndim(ids));
        return NULL;
    }
    if (cache && check_cache(g, cache, clt_tensor_size(ids, 0)) != CLT_OK)
        return NULL;
    int64_t past = cache ? cache->length : 0, T = clt_tensor_size(ids, 1);
    if (T > c->n_positions - past) {
        clt_set_error(CLT_ERR_SHAPE, "gpt_forward",
                      "T %lld and the cached %lld tokens are more than n_positions %lld",
                      (long long)T, (long long)past, (long long)c->n_positions);
        return NULL;
    }
    clt_tensor **kept = cache ? cache_keep(cache) : NULL; /* the cache as it was */
    if (cache && !kept)
        return NULL;
    clt_tensor *logits = logits_of(g, ids, past, cache);
    if (cache)
        cache_end(cache, kept, logits != NULL, T);
    return logits;
}

static clt_tensor *gpt_module_forward(clt_module *self, clt_tensor *ids)
{
    return gpt_forward(self, ids, NULL);
}

clt_status gpt_cache_init(gpt_cache *cache, const clt_module *model)
{
    if (!cache)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "gpt_cache_init", "cache is NULL");
    memset(cache, 0, sizeof *cache);
    const gpt *g = as_gpt(model, "gpt_cache_init");
    if (!g)
        return CLT_ERR_INVALID_ARGUMENT;
    cache->k = calloc((size_t)g->config.n_layer, sizeof *cache->k);
    cache->v = calloc((size_t)g->config.n_layer, sizeof *cache->v);
    if (!cache->k || !cache->v) {
        gpt_cache_clear(cache);
        return clt_set_error(CLT_ERR_OUT_OF_MEMORY, "gpt_cache_init",
                             "no room for the cache's %d layers", g->config.n_layer);
    }
    cache->n_layer = g->config.n_layer;
    return CLT_OK;
}

void gpt_cache_clear(gpt_cache *cache)
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

/* CLT_OK when the file's lm_head.weight has the shape of wte's weight, which is the head's. */
static clt_status check_head(const gpt *g, clt_tensor *head, const char *path)
{
    clt_tensor *w = clt_module_get_parameter(g->wte, "weight");
    bool same = clt_tensor_ndim(head) == clt_tensor_ndim(w);
    for (int d = 0; same && d < clt_tensor_ndim(w); d++)
        same = clt_tensor_size(head, d) == clt_tensor_size(w, d);
    char got[96], want[96];
    if (!same)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, "gpt_load",
                             "%s: lm_head.weight is %s, the model's (vocab_size, n_embd) %s "
                             "(the head is tied to transformer.wte.weight)",
                             path,
                             models_shape(clt_tensor_ndim(head), clt_tensor_shape(head), got,
                                          sizeof got),
                             models_shape(clt_tensor_ndim(w), clt_tensor_shape(w), want,
                                          sizeof want));
    return CLT_OK;
}

clt_status gpt_load(clt_module *model, const char *path)
{
    const gpt *g = as_gpt(model, "gpt_load");
    if (!g)
        return CLT_ERR_INVALID_ARGUMENT;
    clt_safetensors file;
    clt_status st = clt_safetensors_load(path, clt_device_cpu(), &file);
    if (st != CLT_OK)
        return st;
    clt_named_tensor *named = calloc((size_t)(file.count ? file.count : 1), sizeof *named);
    char **names = calloc((size_t)(file.count ? file.count : 1), sizeof *names);
    int n = 0;
    st = named && names ? CLT_OK
                        : clt_set_error(CLT_ERR_OUT_OF_MEMORY, "gpt_load",
                                        "no room for the names of %d tensors", file.count);
    for (int i = 0; st == CLT_OK && i < file.count; i++) {
        const char *name = file.tensors[i].name;
        if (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias"))
            continue; /* older files' causal-mask buffers: attention is causal by itself */
        if (strcmp(name, "lm_head.weight") == 0) { /* tied to wte: loaded as its weight */
            st = check_head(g, file.tensors[i].tensor, path);
            continue;
        }
        size_t len = strlen(name) + sizeof "transformer.";
        if (!(names[n] = malloc(len))) {
            st = clt_set_error(CLT_ERR_OUT_OF_MEMORY, "gpt_load", "no room for the name %s",
                               name);
            break;
        }
        snprintf(names[n], len, "%s%s", strncmp(name, "transformer.", 12) ? "transformer." : "",
                 name);
        named[n].name = names[n];
        named[n].tensor = file.tensors[i].tensor;
        n++;
    }
    if (st == CLT_OK)
        st = clt_module_load_state_dict(model, named, n, true, NULL);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(named);
    clt_safetensors_clear(&file);
    return st;
}
