/* The models suite's tests of what comes from Hugging Face and torchvision: every field of
 * GPT2Config and BertConfig (and PretrainedConfig's) read into the config, refused with a
 * message naming it, or accepted without effect; each option that changes the computation
 * against the formula of transformers, written out here with the library's operations on a
 * tiny model (activations computed on the host in double); the config.json files and the
 * weights transformers itself wrote (tests/reference/make_hf_reference.py); the head classes'
 * files with their prefixes, heads and missing poolers; ResNet-50, 101, 152, ResNeXt and the
 * wide ResNet against torchvision, and a dilated, grouped Bottleneck net against its numbers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cltensor/models.h>

#include "helpers.h"
#include "models_hf.h"

/* ---- helpers ----------------------------------------------------------------------------- */

/* Temporaries of a test, released together. */
typedef struct keep {
    clt_tensor *t[512];
    int n;
} keep;

static clt_tensor *kept(keep *k, clt_tensor *t)
{
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    ck_assert_int_lt(k->n, 512);
    return k->t[k->n++] = t;
}

static void keep_release(keep *k)
{
    for (int i = 0; i < k->n; i++)
        clt_tensor_release(k->t[i]);
    k->n = 0;
}

#define KP(expr) kept(&k, (expr))

/* A folder of this process's for the files the tests write (static). */
static const char *own_dir(void)
{
    static char dir[512];
    static pid_t owner;
    if (owner != getpid()) {
        snprintf(dir, sizeof dir, "%s", test_temp_dir());
        owner = getpid();
    }
    return dir;
}

/* Writes text as config.json; its path (static). */
static const char *write_config(const char *text)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/config.json", own_dir());
    test_write_file(own_dir(), "config.json", text);
    return path;
}

/* A parameter of m, failing the test when there is none. */
static clt_tensor *param(const clt_module *m, const char *name)
{
    clt_tensor *t = clt_module_get_parameter(m, name);
    ck_assert_msg(t != NULL, "no parameter %s", name);
    return t;
}

/* A parameter by a printf name with one layer number. */
static clt_tensor *layer_param(const clt_module *m, const char *fmt, int l)
{
    char name[128];
    snprintf(name, sizeof name, fmt, l);
    return param(m, name);
}

static int fill_random(const char *name, clt_tensor *t, void *user)
{
    (void)name, (void)user;
    clt_tensor *r = clt_tensor_randn(clt_tensor_ndim(t), clt_tensor_shape(t), CLT_F32, NULL);
    CLT_NO_GRAD {
        ck_assert_int_eq(clt_copy_(t, r), CLT_OK);
    }
    clt_tensor_release(r);
    return 0;
}

/* Every parameter of m drawn from N(0, 1): LayerNorms, biases and all. */
static void randomize(clt_module *m, uint64_t seed)
{
    clt_manual_seed(seed);
    ck_assert_int_eq(clt_module_foreach_parameter(m, fill_random, NULL), 0);
}

/* An i64 (1, n) tensor of ids on cpu. */
static clt_tensor *ids_of(const int64_t *ids, int64_t n)
{
    clt_tensor *t = clt_tensor_from_data(CLT_SHAPE(1, n), ids, CLT_I64, NULL);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    return t;
}

/* The largest |a - b| over two tensors of one size. */
static double max_diff(clt_tensor *a, clt_tensor *b)
{
    double *x = test_values(a), *y = test_values(b), d = 0;
    for (int64_t i = 0; i < clt_tensor_numel(a); i++)
        d = fmax(d, fabs(x[i] - y[i]));
    free(x), free(y);
    return d;
}

/* Saves named tensors as a safetensors file in a new folder; its path (static). */
static const char *save_file(const clt_named_tensor *named, int n)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", own_dir());
    ck_assert_msg(clt_safetensors_save(path, named, n, NULL, 0) == CLT_OK, "%s",
                  clt_last_error());
    return path;
}

/* ---- the activations, as transformers' activations.py writes them, in double ------------- */

typedef double (*act_fn)(double);
static double gelu_tanh(double x)
{
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * pow(x, 3))));
}
static double gelu_erf(double x) { return x * 0.5 * (1 + erf(x / sqrt(2.0))); }
static double gelu_fast(double x)
{
    return 0.5 * x * (1 + tanh(x * 0.7978845608 * (1 + 0.044715 * x * x)));
}
static double gelu_10(double x) { return fmin(fmax(gelu_erf(x), -10), 10); }
static double quick_gelu(double x) { return x / (1 + exp(-1.702 * x)); }
static double relu(double x) { return x > 0 ? x : 0; }
static double relu6(double x) { return fmin(fmax(x, 0), 6); }
static double relu2(double x) { return relu(x) * relu(x); }
static double leaky_relu(double x) { return x > 0 ? x : 0.01 * x; }
static double hardswish(double x) { return x * relu6(x + 3) / 6; }
static double silu(double x) { return x / (1 + exp(-x)); }
static double sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double linear(double x) { return x; }

static const struct {
    const char *name;
    clt_models_activation act;
    act_fn fn;
    bool like_default; /* gelu_new's formula: the output does not change */
} activations[] = {
    {"gelu_new", CLT_MODELS_ACT_GELU_NEW, gelu_tanh, true},
    {"gelu_pytorch_tanh", CLT_MODELS_ACT_GELU_PYTORCH_TANH, gelu_tanh, true},
    {"gelu_python_tanh", CLT_MODELS_ACT_GELU_PYTHON_TANH, gelu_tanh, true},
    {"gelu_accurate", CLT_MODELS_ACT_GELU_ACCURATE, gelu_tanh, true},
    {"gelu", CLT_MODELS_ACT_GELU, gelu_erf, false},
    {"gelu_python", CLT_MODELS_ACT_GELU_PYTHON, gelu_erf, false},
    {"gelu_fast", CLT_MODELS_ACT_GELU_FAST, gelu_fast, true}, /* c (x + 0.044715 x^3) too */
    {"gelu_10", CLT_MODELS_ACT_GELU_10, gelu_10, false},
    {"quick_gelu", CLT_MODELS_ACT_QUICK_GELU, quick_gelu, false},
    {"relu", CLT_MODELS_ACT_RELU, relu, false},
    {"relu6", CLT_MODELS_ACT_RELU6, relu6, false},
    {"relu2", CLT_MODELS_ACT_RELU2, relu2, false},
    {"leaky_relu", CLT_MODELS_ACT_LEAKY_RELU, leaky_relu, false},
    {"hardswish", CLT_MODELS_ACT_HARDSWISH, hardswish, false},
    {"silu", CLT_MODELS_ACT_SILU, silu, false},
    {"swish", CLT_MODELS_ACT_SWISH, silu, false},
    {"tanh", CLT_MODELS_ACT_TANH, tanh, false},
    {"sigmoid", CLT_MODELS_ACT_SIGMOID, sigmoid, false},
    {"linear", CLT_MODELS_ACT_LINEAR, linear, false},
};
#define ACTIVATIONS (int)(sizeof activations / sizeof *activations)

/* f applied to every value of x, on the host in double: a new f32 tensor on cpu. */
static clt_tensor *host_map(clt_tensor *x, act_fn f)
{
    double *v = test_values(x);
    int64_t n = clt_tensor_numel(x);
    float *o = malloc((size_t)n * sizeof *o);
    for (int64_t i = 0; i < n; i++)
        o[i] = (float)f(v[i]);
    clt_tensor *t = clt_tensor_from_data(clt_tensor_ndim(x), clt_tensor_shape(x), o, CLT_F32, NULL);
    free(v), free(o);
    return t;
}

/* ---- GPT-2 and BERT written out ------------------------------------------------------------ */

/* (x - mean) / sqrt(var + eps) * w + b over the last dimension of a (T, C) x. */
static clt_tensor *ref_layer_norm(keep *kp, clt_tensor *x, clt_tensor *w, clt_tensor *b,
                                  double eps)
{
    keep k = {.n = 0};
    int last = clt_tensor_ndim(x) - 1;
    clt_tensor *mean = KP(clt_mean(x, &last, 1, true));
    clt_tensor *d = KP(clt_sub(x, mean));
    clt_tensor *var = KP(clt_mean(KP(clt_mul(d, d)), &last, 1, true));
    clt_tensor *n = KP(clt_div(d, KP(clt_sqrt(KP(clt_add_scalar(var, eps))))));
    clt_tensor *out = kept(kp, clt_add(KP(clt_mul(n, w)), b));
    keep_release(&k);
    return out;
}

/* (T, H * D) -> (H, T, D) */
static clt_tensor *heads(keep *kp, clt_tensor *x, int H)
{
    int64_t T = clt_tensor_size(x, 0), D = clt_tensor_size(x, 1) / H;
    clt_tensor *r = kept(kp, clt_reshape(x, CLT_SHAPE(T, H, D)));
    return kept(kp, clt_permute(r, (int[]){1, 0, 2}));
}

/* softmax(q k^T scale + mask) v for (H, T, D) q, k, v, (T, T) additive mask or NULL; the
 * probabilities zeroed when `dropped`; back to (T, H * D). */
static clt_tensor *ref_attention(keep *kp, clt_tensor *q, clt_tensor *k_, clt_tensor *v,
                                 double scale, clt_tensor *mask, bool dropped)
{
    keep k = {.n = 0};
    int64_t H = clt_tensor_size(q, 0), T = clt_tensor_size(q, 1), D = clt_tensor_size(q, 2);
    clt_tensor *s = KP(clt_mul_scalar(KP(clt_matmul(q, KP(clt_transpose(k_, 1, 2)))), scale));
    s = mask ? KP(clt_add(s, mask)) : s;
    clt_tensor *p = KP(clt_softmax(s, 2));
    p = dropped ? KP(clt_mul_scalar(p, 0)) : p;
    clt_tensor *y = KP(clt_permute(KP(clt_matmul(p, v)), (int[]){1, 0, 2}));
    clt_tensor *out = kept(kp, clt_reshape(y, CLT_SHAPE(T, H * D)));
    keep_release(&k);
    return out;
}

enum { DROP_EMBD = 1, DROP_ATTN = 2, DROP_RESID = 4 };

/* x @ w + b: Conv1D. */
static clt_tensor *ref_conv1d(keep *kp, clt_tensor *x, clt_tensor *w, clt_tensor *b)
{
    return kept(kp, clt_add(kept(kp, clt_matmul(x, w)), b));
}

/* One GPT2Block over h (T, C), as modeling_gpt2.py computes it. */
static clt_tensor *ref_gpt2_block(keep *kp, const clt_module *m, const clt_gpt2_config *c,
                                  int l, clt_tensor *h, clt_tensor *mask, act_fn act, int drop)
{
#define LP(fmt) layer_param(m, "transformer.h.%d." fmt, l)
    keep k = {.n = 0};
    int64_t C = c->n_embd;
    double scale = c->scale_attn_weights ? 1 / sqrt((double)(C / c->n_head)) : 1.0;
    if (c->scale_attn_by_inverse_layer_idx)
        scale /= (double)(l + 1);
    clt_tensor *a = ref_layer_norm(&k, h, LP("ln_1.weight"), LP("ln_1.bias"),
                                   c->layer_norm_epsilon);
    clt_tensor *qkv = ref_conv1d(&k, a, LP("attn.c_attn.weight"), LP("attn.c_attn.bias"));
    clt_tensor *q = heads(&k, KP(clt_narrow(qkv, 1, 0, C)), c->n_head);
    clt_tensor *kk = heads(&k, KP(clt_narrow(qkv, 1, C, C)), c->n_head);
    clt_tensor *v = heads(&k, KP(clt_narrow(qkv, 1, 2 * C, C)), c->n_head);
    clt_tensor *y = ref_attention(&k, q, kk, v, scale, mask, drop & DROP_ATTN);
    clt_tensor *proj = ref_conv1d(&k, y, LP("attn.c_proj.weight"), LP("attn.c_proj.bias"));
    proj = drop & DROP_RESID ? KP(clt_mul_scalar(proj, 0)) : proj;
    clt_tensor *h2 = KP(clt_add(h, proj));
    clt_tensor *mm = ref_layer_norm(&k, h2, LP("ln_2.weight"), LP("ln_2.bias"),
                                    c->layer_norm_epsilon);
    clt_tensor *f = ref_conv1d(&k, mm, LP("mlp.c_fc.weight"), LP("mlp.c_fc.bias"));
    clt_tensor *o = ref_conv1d(&k, KP(host_map(f, act)), LP("mlp.c_proj.weight"),
                               LP("mlp.c_proj.bias"));
    o = drop & DROP_RESID ? KP(clt_mul_scalar(o, 0)) : o;
    clt_tensor *out = kept(kp, clt_add(h2, o));
    keep_release(&k);
    return out;
#undef LP
}

/* GPT2LMHeadModel's logits (1, T, vocab) of ids (1, T) on cpu, written out; `drop` zeroes what
 * a dropout probability of 1 zeroes. */
static clt_tensor *ref_gpt2(const clt_module *m, const clt_gpt2_config *c, clt_tensor *ids,
                            act_fn act, int drop)
{
    keep k = {.n = 0};
    int64_t T = clt_tensor_size(ids, 1);
    float *mask = malloc((size_t)(T * T) * sizeof *mask);
    for (int64_t i = 0; i < T * T; i++)
        mask[i] = i % T > i / T ? -INFINITY : 0; /* key after query: hidden */
    clt_tensor *causal = KP(clt_tensor_from_data(CLT_SHAPE(T, T), mask, CLT_F32, NULL));
    free(mask);
    clt_tensor *flat = KP(clt_reshape(ids, CLT_SHAPE(T)));
    clt_tensor *pos = KP(clt_tensor_arange(0, (double)T, 1, CLT_I64, NULL));
    clt_tensor *h = KP(clt_add(KP(clt_embedding(flat, param(m, "transformer.wte.weight"))),
                               KP(clt_embedding(pos, param(m, "transformer.wpe.weight")))));
    h = drop & DROP_EMBD ? KP(clt_mul_scalar(h, 0)) : h;
    for (int l = 0; l < c->n_layer; l++)
        h = ref_gpt2_block(&k, m, c, l, h, causal, act, drop);
    clt_tensor *f = ref_layer_norm(&k, h, param(m, "transformer.ln_f.weight"),
                                   param(m, "transformer.ln_f.bias"), c->layer_norm_epsilon);
    clt_tensor *head = param(m, "lm_head.weight");
    clt_tensor *logits = KP(clt_matmul(f, KP(clt_transpose(head, 0, 1))));
    clt_tensor *out = clt_reshape(logits, CLT_SHAPE(1, T, clt_tensor_size(head, 0)));
    keep_release(&k);
    return out;
}

/* x @ w^T + b: nn.Linear. */
static clt_tensor *ref_linear(keep *kp, const clt_module *m, const char *fmt, int l,
                              clt_tensor *x)
{
    char w[128], b[128];
    snprintf(w, sizeof w, "%s.weight", fmt);
    snprintf(b, sizeof b, "%s.bias", fmt);
    clt_tensor *wt = kept(kp, clt_transpose(layer_param(m, w, l), 0, 1));
    return kept(kp, clt_add(kept(kp, clt_matmul(x, wt)), layer_param(m, b, l)));
}

/* BertModel's last hidden state (1, T, H) of ids (1, T) on cpu (token types 0, no mask),
 * written out; `drop` DROP_ATTN zeroes the attention probabilities. */
static clt_tensor *ref_bert(const clt_module *m, const clt_bert_config *c, clt_tensor *ids,
                            act_fn act, int drop)
{
    keep k = {.n = 0};
    int64_t T = clt_tensor_size(ids, 1), H = c->hidden_size;
    double eps = c->layer_norm_eps, scale = 1 / sqrt((double)(H / c->num_attention_heads));
    clt_tensor *flat = KP(clt_reshape(ids, CLT_SHAPE(T)));
    clt_tensor *pos = KP(clt_tensor_arange(0, (double)T, 1, CLT_I64, NULL));
    clt_tensor *types = KP(clt_tensor_zeros(CLT_SHAPE(T), CLT_I64, NULL));
    clt_tensor *word = param(m, "embeddings.word_embeddings.weight");
    clt_tensor *type = param(m, "embeddings.token_type_embeddings.weight");
    clt_tensor *position = param(m, "embeddings.position_embeddings.weight");
    clt_tensor *e = KP(clt_add(KP(clt_embedding(flat, word)), KP(clt_embedding(types, type))));
    e = KP(clt_add(e, KP(clt_embedding(pos, position))));
    clt_tensor *h = ref_layer_norm(&k, e, param(m, "embeddings.LayerNorm.weight"),
                                   param(m, "embeddings.LayerNorm.bias"), eps);
    for (int l = 0; l < c->num_hidden_layers; l++) {
        const char *self = "encoder.layer.%d.attention.self.";
        char q[96], kk[96], v[96];
        snprintf(q, sizeof q, "%squery", self), snprintf(kk, sizeof kk, "%skey", self);
        snprintf(v, sizeof v, "%svalue", self);
        int n = c->num_attention_heads;
        clt_tensor *ctx = ref_attention(&k, heads(&k, ref_linear(&k, m, q, l, h), n),
                                        heads(&k, ref_linear(&k, m, kk, l, h), n),
                                        heads(&k, ref_linear(&k, m, v, l, h), n), scale, NULL,
                                        drop & DROP_ATTN);
        clt_tensor *d = ref_linear(&k, m, "encoder.layer.%d.attention.output.dense", l, ctx);
        clt_tensor *a = ref_layer_norm(&k, KP(clt_add(d, h)),
                                       layer_param(m, "encoder.layer.%d.attention.output."
                                                      "LayerNorm.weight", l),
                                       layer_param(m, "encoder.layer.%d.attention.output."
                                                      "LayerNorm.bias", l),
                                       eps);
        clt_tensor *i = ref_linear(&k, m, "encoder.layer.%d.intermediate.dense", l, a);
        clt_tensor *o = ref_linear(&k, m, "encoder.layer.%d.output.dense", l,
                                   KP(host_map(i, act)));
        h = ref_layer_norm(&k, KP(clt_add(o, a)),
                           layer_param(m, "encoder.layer.%d.output.LayerNorm.weight", l),
                           layer_param(m, "encoder.layer.%d.output.LayerNorm.bias", l), eps);
    }
    clt_tensor *out = clt_reshape(h, CLT_SHAPE(1, T, H));
    keep_release(&k);
    return out;
}

/* A tiny GPT-2: vocabulary 24, 8 positions, width 8, 2 heads, one layer; no dropout. */
static clt_gpt2_config tiny_gpt2(void)
{
    clt_gpt2_config c = clt_gpt2_config_default();
    c.vocab_size = 24, c.n_positions = 8, c.n_embd = 8, c.n_layer = 1, c.n_head = 2;
    c.resid_pdrop = c.embd_pdrop = c.attn_pdrop = 0;
    return c;
}

/* A tiny BERT: vocabulary 20, 8 positions, width 8, 2 heads, inner 12, one layer; no dropout,
 * no pooler. */
static clt_bert_config tiny_bert(void)
{
    clt_bert_config c = clt_bert_config_default();
    c.vocab_size = 20, c.hidden_size = 8, c.num_hidden_layers = 1, c.num_attention_heads = 2;
    c.intermediate_size = 12, c.max_position_embeddings = 8;
    c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0;
    return c;
}

static const int64_t token_row[5] = {3, 17, 5, 0, 11};

/* The model of config c (random weights of `seed`) against the written-out GPT-2, in the
 * module's training mode; the model's logits, returned. */
static clt_tensor *check_gpt2(const clt_gpt2_config *c, act_fn act, int drop, bool training,
                              const char *what)
{
    clt_module *m = clt_gpt2_new(c);
    ck_assert_msg(m != NULL, "%s: %s", what, clt_last_error());
    randomize(m, 11);
    clt_module_train(m, training);
    clt_tensor *ids = ids_of(token_row, 5);
    clt_tensor *got = clt_gpt2_forward(m, ids, NULL), *want = ref_gpt2(m, c, ids, act, drop);
    test_assert_close(got, want, 1e-4, what);
    clt_tensor_release(want), clt_tensor_release(ids);
    clt_module_release(m);
    return got;
}

/* ---- the options that change the computation --------------------------------------------- */

/* Each activation_function as transformers' ACT2FN computes it; those of another formula
 * change the output. */
START_TEST(test_models_gpt2_activations)
{
    clt_gpt2_config c = tiny_gpt2();
    clt_tensor *base = check_gpt2(&c, gelu_tanh, 0, false, "gelu_new");
    for (int i = 0; i < ACTIVATIONS; i++) {
        c.activation_function = activations[i].act;
        clt_tensor *got = check_gpt2(&c, activations[i].fn, 0, false, activations[i].name);
        double d = max_diff(got, base);
        ck_assert_msg(activations[i].like_default ? d < 1e-4 : d > 1e-4,
                      "%s: the logits move by %g from gelu_new's", activations[i].name, d);
        clt_tensor_release(got);
    }
    clt_tensor_release(base);
}
END_TEST

/* n_inner, layer_norm_epsilon, scale_attn_weights, scale_attn_by_inverse_layer_idx (two
 * layers: the second's scores / 2), reorder_and_upcast_attn (the same numbers) and an untied
 * lm_head, each against the formula and each moving the output. */
START_TEST(test_models_gpt2_options)
{
    clt_gpt2_config c = tiny_gpt2(), d = c;
    c.n_layer = 2;
    clt_tensor *base = check_gpt2(&c, gelu_tanh, 0, false, "two layers");
    clt_gpt2_config cs[5] = {c, c, c, c, c};
    cs[0].n_inner = 12, cs[1].layer_norm_epsilon = 0.5, cs[2].scale_attn_weights = false;
    cs[3].scale_attn_by_inverse_layer_idx = true, cs[4].reorder_and_upcast_attn = true;
    const char *what[5] = {"n_inner 12", "layer_norm_epsilon 0.5", "scale_attn_weights false",
                           "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"};
    for (int i = 0; i < 5; i++) {
        clt_tensor *got = check_gpt2(&cs[i], gelu_tanh, 0, false, what[i]);
        double diff = max_diff(got, base);
        ck_assert_msg(i == 4 ? diff < 1e-6 : diff > 1e-4, "%s: the logits move by %g", what[i],
                      diff);
        clt_tensor_release(got);
    }
    clt_tensor_release(base);
    /* tie_word_embeddings: one tensor under two names, or two */
    clt_module *tied = clt_gpt2_new(&d);
    d.tie_word_embeddings = false;
    clt_module *untied = clt_gpt2_new(&d);
    ck_assert_ptr_eq(param(tied, "lm_head.weight"), param(tied, "transformer.wte.weight"));
    ck_assert_ptr_ne(param(untied, "lm_head.weight"), param(untied, "transformer.wte.weight"));
    ck_assert_int_eq(clt_module_parameter_count(untied),
                     clt_module_parameter_count(tied) + d.vocab_size * d.n_embd);
    clt_module_release(tied), clt_module_release(untied);
    clt_tensor_release(check_gpt2(&d, gelu_tanh, 0, false, "tie_word_embeddings false"));
}
END_TEST

/* The dropout probabilities in training mode: at 1 each zeroes what transformers' zeroes (the
 * embeddings, the attention probabilities, the attention and MLP outputs), at 0 training is
 * evaluation; attention dropout at 0.5 draws from the seed and reaches the gradients. */
START_TEST(test_models_gpt2_dropout)
{
    clt_gpt2_config c = tiny_gpt2();
    c.n_layer = 2;
    clt_tensor *eval = check_gpt2(&c, gelu_tanh, 0, false, "eval");
    clt_tensor *train = check_gpt2(&c, gelu_tanh, 0, true, "training, dropout 0");
    ck_assert(max_diff(eval, train) == 0);
    clt_gpt2_config one[3] = {c, c, c};
    one[0].embd_pdrop = 1, one[1].attn_pdrop = 1, one[2].resid_pdrop = 1;
    int drops[3] = {DROP_EMBD, DROP_ATTN, DROP_RESID};
    const char *what[3] = {"embd_pdrop 1", "attn_pdrop 1", "resid_pdrop 1"};
    for (int i = 0; i < 3; i++) {
        clt_tensor *got = check_gpt2(&one[i], gelu_tanh, drops[i], true, what[i]);
        ck_assert_msg(max_diff(got, eval) > 1e-3, "%s changes nothing", what[i]);
        clt_tensor_release(got);
        clt_tensor_release(check_gpt2(&one[i], gelu_tanh, 0, false, "the same in evaluation"));
    }
    /* attn_pdrop 0.5: the same seed, the same drops; another seed, others */
    c.attn_pdrop = 0.5;
    clt_module *m = clt_gpt2_new(&c);
    randomize(m, 11);
    clt_tensor *ids = ids_of(token_row, 5), *runs[3];
    for (int i = 0; i < 3; i++) {
        clt_manual_seed(i < 2 ? 5 : 6);
        runs[i] = clt_gpt2_forward(m, ids, NULL);
        ck_assert_msg(runs[i] != NULL, "%s", clt_last_error());
    }
    ck_assert(max_diff(runs[0], runs[1]) == 0);
    ck_assert(max_diff(runs[0], runs[2]) > 1e-3 && max_diff(runs[0], eval) > 1e-3);
    clt_tensor *loss = clt_sum(runs[0], NULL, 0, false);
    ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_OK);
    clt_tensor *g = clt_tensor_grad(param(m, "transformer.h.0.attn.c_attn.weight"));
    ck_assert_ptr_nonnull(g);
    clt_tensor *all[] = {g, loss, runs[0], runs[1], runs[2], ids, eval, train};
    TEST_RELEASE_ALL(all);
    clt_module_release(m);
}
END_TEST

/* The unfused attention (dropout on the probabilities, here at 1e-9: nothing is dropped)
 * computes what the fused one does with each of its masks: GPT-2's causal prompt and its
 * cached steps, BERT's padding mask. */
START_TEST(test_models_attention_unfused)
{
    clt_gpt2_config c = tiny_gpt2();
    c.attn_pdrop = 1e-9;
    clt_module *g = clt_gpt2_new(&c);
    randomize(g, 41);
    clt_tensor *ids = ids_of(token_row, 5), *prompt = clt_narrow(ids, 1, 0, 2);
    clt_tensor *rest = clt_narrow(ids, 1, 2, 3), *out[2][2];
    for (int training = 0; training < 2; training++) { /* fused in evaluation, unfused else */
        clt_gpt2_cache cache;
        clt_module_train(g, training);
        ck_assert_int_eq(clt_gpt2_cache_init(&cache, g), CLT_OK);
        out[training][0] = clt_gpt2_forward(g, prompt, &cache);
        out[training][1] = clt_gpt2_forward(g, rest, &cache);
        ck_assert_msg(out[training][1] != NULL, "%s", clt_last_error());
        clt_gpt2_cache_clear(&cache);
    }
    test_assert_close(out[1][0], out[0][0], 1e-5, "the causal prompt, unfused");
    test_assert_close(out[1][1], out[0][1], 1e-5, "3 tokens after 2 cached, unfused");
    clt_bert_config b = tiny_bert();
    b.attention_probs_dropout_prob = 1e-9;
    clt_module *m = clt_bert_new(&b);
    randomize(m, 43);
    static const int64_t keep[5] = {1, 1, 1, 0, 0};
    clt_tensor *mask = ids_of(keep, 5), *hidden[2];
    for (int training = 0; training < 2; training++) {
        clt_module_train(m, training);
        ck_assert_int_eq(clt_bert_forward(m, ids, NULL, mask, &hidden[training], NULL), CLT_OK);
    }
    test_assert_close(hidden[1], hidden[0], 1e-5, "BERT's padding mask, unfused");
    clt_tensor *all[] = {out[0][0], out[0][1], out[1][0], out[1][1], hidden[0], hidden[1],
                         mask,      rest,      prompt,    ids};
    TEST_RELEASE_ALL(all);
    clt_module_release(g), clt_module_release(m);
}
END_TEST

/* The BERT of config c against the written-out one; its hidden state, returned. */
static clt_tensor *check_bert(const clt_bert_config *c, act_fn act, int drop, bool training,
                              const char *what)
{
    clt_module *m = clt_bert_new(c);
    ck_assert_msg(m != NULL, "%s: %s", what, clt_last_error());
    randomize(m, 13);
    clt_module_train(m, training);
    clt_tensor *ids = ids_of(token_row, 5), *got = NULL;
    ck_assert_msg(clt_bert_forward(m, ids, NULL, NULL, &got, NULL) == CLT_OK, "%s: %s", what,
                  clt_last_error());
    clt_tensor *want = ref_bert(m, c, ids, act, drop);
    test_assert_close(got, want, 1e-4, what);
    clt_tensor_release(want), clt_tensor_release(ids);
    clt_module_release(m);
    return got;
}

/* hidden_act (each activation), layer_norm_eps and attention_probs_dropout_prob against
 * transformers' formulas; hidden_dropout_prob 0 in training is evaluation. */
START_TEST(test_models_bert_options)
{
    clt_bert_config c = tiny_bert();
    clt_tensor *base = check_bert(&c, gelu_erf, 0, false, "gelu");
    for (int i = 0; i < ACTIVATIONS; i++) {
        clt_bert_config a = c;
        a.hidden_act = activations[i].act;
        clt_tensor *got = check_bert(&a, activations[i].fn, 0, false, activations[i].name);
        clt_tensor_release(got);
    }
    c.layer_norm_eps = 0.5;
    clt_tensor *eps = check_bert(&c, gelu_erf, 0, false, "layer_norm_eps 0.5");
    ck_assert(max_diff(eps, base) > 1e-3);
    c.layer_norm_eps = 1e-12, c.attention_probs_dropout_prob = 1;
    clt_tensor *dropped = check_bert(&c, gelu_erf, DROP_ATTN, true, "attention dropout 1");
    ck_assert(max_diff(dropped, base) > 1e-3);
    c.attention_probs_dropout_prob = 0;
    clt_tensor *train = check_bert(&c, gelu_erf, 0, true, "training, dropout 0");
    ck_assert(max_diff(train, base) == 0);
    clt_tensor *all[] = {base, eps, dropped, train};
    TEST_RELEASE_ALL(all);
}
END_TEST

/* word_embeddings.weight's gradient at rows of the ids, with row `pad` counting them. */
static double *embedding_grad(const clt_bert_config *c, const clt_module *weights, double *out,
                              double *hidden_sum)
{
    clt_module *m = clt_bert_new(c);
    clt_state_dict sd;
    ck_assert_int_eq(clt_module_state_dict(weights, &sd), CLT_OK);
    ck_assert_msg(clt_module_load_state_dict(m, sd.tensors, sd.count, true, NULL) == CLT_OK,
                  "%s", clt_last_error());
    clt_state_dict_clear(&sd);
    clt_module_train(m, false);
    clt_tensor *ids = ids_of(token_row, 5), *hidden = NULL;
    ck_assert_int_eq(clt_bert_forward(m, ids, NULL, NULL, &hidden, NULL), CLT_OK);
    clt_tensor *sq = clt_mul(hidden, hidden), *loss = clt_sum(sq, NULL, 0, false);
    ck_assert_int_eq(clt_tensor_item(loss, hidden_sum), CLT_OK);
    ck_assert_int_eq(clt_backward(loss, NULL, false), CLT_OK);
    clt_tensor *g = clt_tensor_grad(param(m, "embeddings.word_embeddings.weight"));
    double *v = test_values(g);
    for (int64_t r = 0; r < c->vocab_size; r++) { /* each row's |gradient| */
        out[r] = 0;
        for (int64_t j = 0; j < c->hidden_size; j++)
            out[r] += fabs(v[r * c->hidden_size + j]);
    }
    free(v);
    clt_tensor *all[] = {g, loss, sq, hidden, ids};
    TEST_RELEASE_ALL(all);
    clt_module_release(m);
    return out;
}

/* pad_token_id is word_embeddings' padding_idx: its row starts at zero and gets no gradient,
 * while the output is the same; a negative one counts from the end. */
START_TEST(test_models_bert_pad_token)
{
    clt_bert_config c = tiny_bert();
    c.pad_token_id = 17; /* token_row holds 17 */
    clt_module *m = clt_bert_new(&c);
    double *row = test_values(param(m, "embeddings.word_embeddings.weight"));
    for (int64_t j = 0; j < c.hidden_size; j++)
        ck_assert(row[17 * c.hidden_size + j] == 0 && row[16 * c.hidden_size + j] != 0);
    free(row);
    c.pad_token_id = -1;
    clt_module *last = clt_bert_new(&c);
    row = test_values(param(last, "embeddings.word_embeddings.weight"));
    for (int64_t j = 0; j < c.hidden_size; j++)
        ck_assert(row[19 * c.hidden_size + j] == 0);
    free(row);
    clt_module_release(last);
    randomize(m, 17);
    double with[20], without[20], sum_with, sum_without;
    c.pad_token_id = 17;
    embedding_grad(&c, m, with, &sum_with);
    c.pad_token_id = CLT_BERT_NO_PAD_TOKEN;
    embedding_grad(&c, m, without, &sum_without);
    ck_assert(sum_with == sum_without);
    ck_assert_msg(with[17] == 0 && without[17] > 0, "row 17: %g with padding_idx, %g without",
                  with[17], without[17]);
    for (int r = 0; r < 20; r++)
        if (r != 17)
            ck_assert_msg(with[r] == without[r], "row %d: %g and %g", r, with[r], without[r]);
    ck_assert(with[3] > 0 && with[4] == 0);
    clt_module_release(m);
}
END_TEST

/* ---- config.json ------------------------------------------------------------------------- */

/* Keys that change nothing: PretrainedConfig's (transformers 4 and 5), the generation settings
 * 4 kept there, and the models' own metadata, initialisation and head settings. */
static const char *const inherited_keys[] = {
    "_name_or_path", "name_or_path", "_commit_hash", "transformers_version", "architectures",
    "torch_dtype", "dtype", "return_dict", "output_hidden_states", "output_attentions",
    "torchscript", "use_bfloat16", "tf_legacy_loss", "xla_device", "chunk_size_feed_forward",
    "is_encoder_decoder", "tie_encoder_decoder", "cross_attention_hidden_size",
    "finetuning_task", "id2label", "label2id", "num_labels", "problem_type", "tokenizer_class",
    "prefix", "bos_token_id", "eos_token_id", "sep_token_id", "decoder_start_token_id",
    "task_specific_params", "gradient_checkpointing", "initializer_range",
    "_attn_implementation", "_attn_implementation_autoset", "_attn_implementation_internal",
    "attn_implementation", "_experts_implementation", "_experts_implementation_internal",
    "experts_implementation", "tie_last_hidden_states", "assistant_confidence_threshold",
    "assistant_lookbehind", "bad_words_ids", "begin_suppress_tokens", "diversity_penalty",
    "do_sample", "early_stopping", "encoder_no_repeat_ngram_size",
    "encoder_repetition_penalty", "epsilon_cutoff", "eta_cutoff",
    "exponential_decay_length_penalty", "forced_bos_token_id", "forced_eos_token_id",
    "length_penalty", "max_length", "min_length", "no_repeat_ngram_size",
    "num_assistant_tokens", "num_assistant_tokens_schedule", "num_beam_groups", "num_beams",
    "num_return_sequences", "output_scores", "remove_invalid_values", "repetition_penalty",
    "return_dict_in_generate", "suppress_tokens", "target_lookbehind", "temperature", "top_k",
    "top_p", "typical_p", "use_cache"};
static const char *const gpt2_keys[] = {"is_decoder",         "pad_token_id",
                                        "summary_type",       "summary_use_proj",
                                        "summary_activation", "summary_proj_to_labels",
                                        "summary_first_dropout", "summary_last_dropout"};
static const char *const bert_keys[] = {"classifier_dropout", "tie_word_embeddings"};

static bool same_gpt2(const clt_gpt2_config *a, const clt_gpt2_config *b)
{
    return a->vocab_size == b->vocab_size && a->n_positions == b->n_positions &&
           a->n_embd == b->n_embd && a->n_layer == b->n_layer && a->n_head == b->n_head &&
           a->n_inner == b->n_inner && a->activation_function == b->activation_function &&
           a->resid_pdrop == b->resid_pdrop && a->embd_pdrop == b->embd_pdrop &&
           a->attn_pdrop == b->attn_pdrop && a->layer_norm_epsilon == b->layer_norm_epsilon &&
           a->scale_attn_weights == b->scale_attn_weights &&
           a->scale_attn_by_inverse_layer_idx == b->scale_attn_by_inverse_layer_idx &&
           a->reorder_and_upcast_attn == b->reorder_and_upcast_attn &&
           a->tie_word_embeddings == b->tie_word_embeddings;
}

static bool same_bert(const clt_bert_config *a, const clt_bert_config *b)
{
    return a->vocab_size == b->vocab_size && a->hidden_size == b->hidden_size &&
           a->num_hidden_layers == b->num_hidden_layers &&
           a->num_attention_heads == b->num_attention_heads &&
           a->intermediate_size == b->intermediate_size && a->hidden_act == b->hidden_act &&
           a->hidden_dropout_prob == b->hidden_dropout_prob &&
           a->attention_probs_dropout_prob == b->attention_probs_dropout_prob &&
           a->max_position_embeddings == b->max_position_embeddings &&
           a->type_vocab_size == b->type_vocab_size && a->layer_norm_eps == b->layer_norm_eps &&
           a->pad_token_id == b->pad_token_id && a->add_pooling_layer == b->add_pooling_layer;
}

/* {"key": value} read by both readers (GPT-2's when gpt, BERT's when bert) without changing
 * a field. */
static void assert_no_effect(const char *key, bool gpt, bool bert)
{
    char json[160];
    snprintf(json, sizeof json, "{\"%s\": {\"any\": [1, \"value\"]}}", key);
    const char *path = write_config(json);
    clt_gpt2_config g = clt_gpt2_config_default(), gd = g;
    clt_bert_config b = clt_bert_config_default(), bd = b;
    if (gpt) {
        ck_assert_msg(clt_gpt2_config_read(path, &g) == CLT_OK, "%s", clt_last_error());
        ck_assert_msg(same_gpt2(&g, &gd), "GPT-2: %s changed the config", key);
    }
    if (bert) {
        ck_assert_msg(clt_bert_config_read(path, &b) == CLT_OK, "%s", clt_last_error());
        ck_assert_msg(same_bert(&b, &bd), "BERT: %s changed the config", key);
    }
}

/* Every field that does not change the computation is accepted, whatever its value. */
START_TEST(test_models_config_accepted)
{
    for (size_t i = 0; i < sizeof inherited_keys / sizeof *inherited_keys; i++)
        assert_no_effect(inherited_keys[i], true, true);
    for (size_t i = 0; i < sizeof gpt2_keys / sizeof *gpt2_keys; i++)
        assert_no_effect(gpt2_keys[i], true, false);
    for (size_t i = 0; i < sizeof bert_keys / sizeof *bert_keys; i++)
        assert_no_effect(bert_keys[i], false, true);
    /* the values that ask for nothing new */
    clt_gpt2_config g = clt_gpt2_config_default(), gd = g;
    ck_assert_msg(clt_gpt2_config_read(write_config(
                      "{\"add_cross_attention\": false, \"pruned_heads\": {}, "
                      "\"per_layer_config\": null, \"model_type\": \"gpt2\", \"n_ctx\": 1024, "
                      "\"hidden_size\": 768}"),
                                       &g) == CLT_OK,
                  "%s", clt_last_error());
    ck_assert(same_gpt2(&g, &gd));
    clt_bert_config b = clt_bert_config_default(), bd = b;
    ck_assert_msg(clt_bert_config_read(write_config(
                      "{\"is_decoder\": false, \"add_cross_attention\": null, "
                      "\"position_embedding_type\": \"absolute\", \"model_type\": \"bert\", "
                      "\"pruned_heads\": []}"),
                                       &b) == CLT_OK,
                  "%s", clt_last_error());
    ck_assert(same_bert(&b, &bd));
}
END_TEST

/* Every field that changes the computation is read into the config. */
START_TEST(test_models_config_implemented)
{
    clt_gpt2_config g;
    ck_assert_msg(clt_gpt2_config_read(write_config(
                      "{\"vocab_size\": 100, \"n_positions\": 64, \"n_ctx\": 64, "
                      "\"n_embd\": 32, \"n_layer\": 3, \"n_head\": 4, \"n_inner\": 48, "
                      "\"activation_function\": \"swish\", \"resid_pdrop\": 0.25, "
                      "\"embd_pdrop\": 0.5, \"attn_pdrop\": 0, \"layer_norm_epsilon\": 1e-6, "
                      "\"scale_attn_weights\": false, "
                      "\"scale_attn_by_inverse_layer_idx\": true, "
                      "\"reorder_and_upcast_attn\": true, \"tie_word_embeddings\": false}"),
                                       &g) == CLT_OK,
                  "%s", clt_last_error());
    ck_assert(g.vocab_size == 100 && g.n_positions == 64 && g.n_embd == 32 && g.n_layer == 3 &&
              g.n_head == 4 && g.n_inner == 48 && g.activation_function == CLT_MODELS_ACT_SWISH &&
              g.resid_pdrop == 0.25 && g.embd_pdrop == 0.5 && g.attn_pdrop == 0 &&
              g.layer_norm_epsilon == 1e-6 && !g.scale_attn_weights &&
              g.scale_attn_by_inverse_layer_idx && g.reorder_and_upcast_attn &&
              !g.tie_word_embeddings);
    /* n_inner null is 4 * n_embd; transformers' other names (attribute_map) */
    ck_assert_msg(clt_gpt2_config_read(write_config(
                      "{\"n_inner\": null, \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                      "\"num_attention_heads\": 8, \"max_position_embeddings\": 128}"),
                                       &g) == CLT_OK,
                  "%s", clt_last_error());
    ck_assert(g.n_inner == 0 && g.n_embd == 64 && g.n_layer == 2 && g.n_head == 8 &&
              g.n_positions == 128);
    clt_bert_config b;
    ck_assert_msg(clt_bert_config_read(write_config(
                      "{\"vocab_size\": 100, \"hidden_size\": 32, \"num_hidden_layers\": 3, "
                      "\"num_attention_heads\": 4, \"intermediate_size\": 40, "
                      "\"hidden_act\": \"gelu_new\", \"hidden_dropout_prob\": 0.2, "
                      "\"attention_probs_dropout_prob\": 0.3, "
                      "\"max_position_embeddings\": 64, \"type_vocab_size\": 3, "
                      "\"layer_norm_eps\": 1e-5, \"pad_token_id\": -2}"),
                                       &b) == CLT_OK,
                  "%s", clt_last_error());
    ck_assert(b.vocab_size == 100 && b.hidden_size == 32 && b.num_hidden_layers == 3 &&
              b.num_attention_heads == 4 && b.intermediate_size == 40 &&
              b.hidden_act == CLT_MODELS_ACT_GELU_NEW && b.hidden_dropout_prob == 0.2 &&
              b.attention_probs_dropout_prob == 0.3 && b.max_position_embeddings == 64 &&
              b.type_vocab_size == 3 && b.layer_norm_eps == 1e-5 && b.pad_token_id == -2 &&
              b.add_pooling_layer);
    ck_assert_msg(clt_bert_config_read(write_config("{\"pad_token_id\": null}"), &b) == CLT_OK,
                  "%s", clt_last_error());
    ck_assert(b.pad_token_id == CLT_BERT_NO_PAD_TOKEN);
}
END_TEST

/* A refused config.json: the reader, the text, and what its message must hold. */
typedef struct refusal {
    bool bert;
    const char *json;
    const char *what[2];
} refusal;

static const refusal refusals[] = {
    {false, "{\"rope_theta\": 10000}", {"unknown key \"rope_theta\"", NULL}},
    {true, "{\"quantization_config\": {}}", {"unknown key \"quantization_config\"", NULL}},
    {false, "{\"add_cross_attention\": true}",
     {"add_cross_attention true asks for cross-attention layers", "not implemented"}},
    {true, "{\"add_cross_attention\": true}", {"add_cross_attention true", "cross-attention"}},
    {true, "{\"is_decoder\": true}", {"is_decoder true asks for a causal decoder", NULL}},
    {true, "{\"position_embedding_type\": \"relative_key\"}",
     {"position_embedding_type \"relative_key\"", "\"absolute\", the one value implemented"}},
    {true, "{\"position_embedding_type\": \"relative_key_query\"}",
     {"position_embedding_type \"relative_key_query\"", NULL}},
    {true, "{\"position_embedding_type\": null}", {"position_embedding_type null", NULL}},
    {false, "{\"model_type\": \"llama\"}", {"model_type \"llama\" is not \"gpt2\"", NULL}},
    {true, "{\"model_type\": \"gpt2\"}", {"model_type \"gpt2\" is not \"bert\"", NULL}},
    {false, "{\"activation_function\": \"mish\"}",
     {"activation_function \"mish\"", "the library does not compute"}},
    {true, "{\"hidden_act\": \"prelu\"}", {"hidden_act \"prelu\"", "does not compute"}},
    {false, "{\"activation_function\": \"gelu2\"}",
     {"activation_function \"gelu2\" is not an activation of transformers' ACT2FN", NULL}},
    {true, "{\"hidden_act\": 3}", {"hidden_act 3 is not the name of an activation", NULL}},
    {false, "{\"pruned_heads\": {\"0\": [1]}}", {"pruned_heads an object", "pruned attention"}},
    {true, "{\"per_layer_config\": {\"0\": {}}}", {"per_layer_config an object", NULL}},
    {false, "{\"n_ctx\": 512}", {"n_ctx 512 differs from n_positions 1024", NULL}},
    {false, "{\"n_ctx\": 64, \"n_positions\": 32}", {"n_ctx 64 differs from n_positions 32", NULL}},
    {false, "{\"hidden_size\": 32, \"n_embd\": 16}",
     {"hidden_size 32 differs from n_embd", "other name"}},
    {false, "{\"n_layer\": 2, \"n_layer\": 3}", {"the key \"n_layer\" is given twice", NULL}},
    {false, "[1, 2]", {"not one JSON object", NULL}},
    {true, "{\"vocab_size\": 1,}", {"not JSON (at byte", NULL}},
    {false, "{\"scale_attn_weights\": 1}", {"scale_attn_weights 1 is not true or false", NULL}},
    {false, "{\"tie_word_embeddings\": \"no\"}", {"tie_word_embeddings \"no\"", NULL}},
    {false, "{\"attn_pdrop\": 1.5}", {"attn_pdrop 1.5 is not a probability from 0 to 1", NULL}},
    {true, "{\"hidden_dropout_prob\": -0.1}", {"hidden_dropout_prob -0.1", NULL}},
    {false, "{\"n_inner\": 0}", {"n_inner 0 is not a whole number from 1", NULL}},
    {true, "{\"layer_norm_eps\": -1e-12}", {"layer_norm_eps -1e-12 is not a finite number", NULL}},
    {true, "{\"pad_token_id\": \"[PAD]\"}", {"pad_token_id \"[PAD]\" is neither null nor", NULL}},
    {true, "{\"pad_token_id\": 30522}", {"pad_token_id 30522 must be from -vocab_size", NULL}},
    {false, "{\"n_layer\": 1001}", {"n_layer 1001 must be from 1 to 1000", NULL}},
    {true, "{\"hidden_size\": 30, \"num_attention_heads\": 4}",
     {"num_attention_heads 4 must be positive and divide hidden_size 30", NULL}},
};

/* Every field set to what the library does not implement is refused, naming the path, the key
 * and the value, and the config is left as it was. */
START_TEST(test_models_config_refused)
{
    for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++) {
        const refusal *r = &refusals[i];
        const char *path = write_config(r->json);
        clt_gpt2_config g = clt_gpt2_config_default(), gd = g;
        clt_bert_config b = clt_bert_config_default(), bd = b;
        clt_status st = r->bert ? clt_bert_config_read(path, &b) : clt_gpt2_config_read(path, &g);
        ck_assert_msg(st == CLT_ERR_INVALID_ARGUMENT, "%s accepted %s",
                      r->bert ? "BERT" : "GPT-2", r->json);
        ck_assert_error_has(r->bert ? "clt_bert_config_read: " : "clt_gpt2_config_read: ");
        ck_assert_error_has(path);
        for (int w = 0; w < 2 && r->what[w]; w++)
            ck_assert_msg(strstr(clt_last_error(), r->what[w]) != NULL, "%s: \"%s\" lacks \"%s\"",
                          r->json, clt_last_error(), r->what[w]);
        ck_assert(same_gpt2(&g, &gd) && same_bert(&b, &bd));
    }
    clt_gpt2_config g;
    ck_assert_int_eq(clt_gpt2_config_read("/nonexistent/config.json", &g), CLT_ERR_IO);
    ck_assert_error_has("/nonexistent/config.json");
    ck_assert_int_eq(clt_gpt2_config_read(NULL, &g), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_bert_config_read(write_config("{}"), NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_bert_config_read: config is NULL");
}
END_TEST

/* ---- the files transformers and torchvision wrote --------------------------------------- */

/* The config.json transformers 5 writes with every field (use_diff=False) is read; its
 * GPT2LMHeadModel's state (an untied head, "transformer." names) loads with clt_gpt2_load and
 * gives transformers' logits, on every device. */
START_TEST(test_models_gpt2_transformers_file)
{
    clt_device *dev = test_device(_i);
    clt_safetensors st;
    const char *path = MODELS_REFERENCE("gpt2_options.safetensors");
    char file[512];
    models_load_reference(MODELS_REFERENCE("gpt2_options_io.safetensors"), dev, &st);
    clt_gpt2_config c;
    ck_assert_msg(clt_gpt2_config_read(models_config_file(&st, file, sizeof file), &c) == CLT_OK,
                  "%s", clt_last_error());
    ck_assert(c.n_inner == 24 && c.activation_function == CLT_MODELS_ACT_QUICK_GELU &&
              c.layer_norm_epsilon == 1e-3 && c.scale_attn_by_inverse_layer_idx &&
              !c.tie_word_embeddings && c.attn_pdrop == 0.1);
    clt_module *m = clt_gpt2_new(&c);
    ck_assert_msg(clt_gpt2_load(m, path) == CLT_OK, "%s", clt_last_error());
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    clt_module_train(m, false);
    clt_tensor *logits = clt_gpt2_forward(m, models_ref(&st, "input_ids"), NULL);
    models_assert_close(logits, models_ref(&st, "logits"), 2e-5, 1e-4, "transformers' logits",
                        dev);
    clt_tensor_release(logits);
    clt_module_release(m);
    clt_safetensors_clear(&st);
}
END_TEST

/* BertForMaskedLM's file ("bert." names, the cls.* head, no pooler) loads with clt_bert_load
 * and gives transformers' hidden state with a padding mask, on every device; the pooled
 * output is then refused. Its config.json (every field) is read. */
START_TEST(test_models_bert_transformers_file)
{
    clt_device *dev = test_device(_i);
    clt_safetensors st;
    const char *path = MODELS_REFERENCE("bert_mlm.safetensors");
    char file[512];
    models_load_reference(MODELS_REFERENCE("bert_mlm_io.safetensors"), dev, &st);
    clt_bert_config c;
    ck_assert_msg(clt_bert_config_read(models_config_file(&st, file, sizeof file), &c) == CLT_OK,
                  "%s", clt_last_error());
    ck_assert(c.hidden_act == CLT_MODELS_ACT_RELU && c.layer_norm_eps == 1e-6 &&
              c.pad_token_id == 1 && c.intermediate_size == 24);
    clt_module *m = clt_bert_new(&c);
    ck_assert_msg(clt_bert_load(m, path) == CLT_OK, "%s", clt_last_error());
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    clt_module_train(m, false);
    clt_tensor *hidden = NULL, *pooled = NULL;
    ck_assert_msg(clt_bert_forward(m, models_ref(&st, "input_ids"), NULL,
                                   models_ref(&st, "attention_mask"), &hidden, NULL) == CLT_OK,
                  "%s", clt_last_error());
    models_assert_close(hidden, models_ref(&st, "last_hidden_state"), 2e-5, 1e-4,
                        "transformers' hidden state", dev);
    clt_tensor_release(hidden);
    hidden = NULL;
    ck_assert_int_eq(clt_bert_forward(m, models_ref(&st, "input_ids"), NULL, NULL, &hidden,
                                      &pooled),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_bert_forward: a pooled output was asked of a model whose last "
                        "clt_bert_load read a file without pooler.dense");
    ck_assert(hidden == NULL && pooled == NULL);
    clt_module_release(m);
    clt_safetensors_clear(&st);
}
END_TEST

/* ---- head classes' files ----------------------------------------------------------------- */

/* m's state dict under names that `rename` gives (NULL: dropped), plus `extra`; saved as a
 * file, whose path it returns. */
typedef const char *(*rename_fn)(const char *name, char *buf, size_t size);
static const char *save_renamed(const clt_module *m, rename_fn rename,
                                const clt_named_tensor *extra, int n_extra)
{
    clt_state_dict sd;
    ck_assert_int_eq(clt_module_state_dict(m, &sd), CLT_OK);
    clt_named_tensor *named = calloc((size_t)(sd.count + n_extra), sizeof *named);
    char (*names)[128] = calloc((size_t)sd.count, sizeof *names);
    int n = 0;
    for (int i = 0; i < sd.count; i++) {
        const char *name = rename(sd.tensors[i].name, names[i], sizeof names[i]);
        if (name)
            named[n++] = (clt_named_tensor){name, sd.tensors[i].tensor};
    }
    for (int i = 0; i < n_extra; i++)
        named[n++] = extra[i];
    const char *path = save_file(named, n);
    free(names), free(named);
    clt_state_dict_clear(&sd);
    return path;
}

/* GPT2Model's names: no "transformer.", no lm_head */
static const char *gpt2_model_name(const char *name, char *buf, size_t size)
{
    if (strncmp(name, "transformer.", 12) != 0)
        return NULL;
    snprintf(buf, size, "%s", name + 12);
    return buf;
}

/* GPT2LMHeadModel's names, but for two tensors dropped */
static const char *gpt2_with_faults(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s", name);
    return strcmp(name, "transformer.ln_f.bias") == 0 ||
                   strcmp(name, "transformer.h.0.mlp.c_fc.bias") == 0
               ? NULL
               : buf;
}

/* Whether every parameter of a equals b's. */
static bool same_weights(const clt_module *a, const clt_module *b)
{
    clt_state_dict sa, sb;
    ck_assert_int_eq(clt_module_state_dict(a, &sa), CLT_OK);
    ck_assert_int_eq(clt_module_state_dict(b, &sb), CLT_OK);
    bool same = sa.count == sb.count;
    for (int i = 0; same && i < sa.count; i++)
        same = strcmp(sa.tensors[i].name, sb.tensors[i].name) == 0 &&
               max_diff(sa.tensors[i].tensor, sb.tensors[i].tensor) == 0;
    clt_state_dict_clear(&sa), clt_state_dict_clear(&sb);
    return same;
}

/* GPT2Model's file (no prefix) loads into the tied model, not into an untied one (no
 * lm_head.weight); a missing, misshapen or unexpected tensor is refused by name, changing
 * nothing; an f64 file is converted. */
START_TEST(test_models_gpt2_load_files)
{
    clt_gpt2_config c = tiny_gpt2();
    clt_module *from = clt_gpt2_new(&c), *to = clt_gpt2_new(&c);
    randomize(from, 21), randomize(to, 22);
    clt_module *before = clt_module_clone_to(to, clt_device_cpu());
    const char *path = save_renamed(from, gpt2_model_name, NULL, 0);
    c.tie_word_embeddings = false;
    clt_module *untied = clt_gpt2_new(&c);
    ck_assert_int_eq(clt_gpt2_load(untied, path), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_gpt2_load: ");
    ck_assert_error_has("missing \"lm_head.weight\"");
    ck_assert_msg(clt_gpt2_load(to, path) == CLT_OK, "%s", clt_last_error());
    ck_assert(same_weights(to, from));
    /* GPT2LMHeadModel's names with one missing, one misshapen, one unexpected */
    clt_module_release(to);
    to = clt_module_clone_to(before, clt_device_cpu());
    ck_assert_int_eq(clt_gpt2_load(to, save_renamed(from, gpt2_with_faults, NULL, 0)),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("missing \"transformer.ln_f.bias\"");
    clt_tensor *wide = clt_tensor_zeros(CLT_SHAPE(8, 31), CLT_F32, NULL);
    clt_named_tensor odd[2] = {{"transformer.h.0.mlp.c_fc.bias", wide},
                               {"transformer.h.0.attn.q_attn.weight", wide}};
    ck_assert_int_eq(clt_gpt2_load(to, save_renamed(from, gpt2_with_faults, odd, 2)),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("\"transformer.h.0.mlp.c_fc.bias\"");
    ck_assert_error_has("(8, 31)");
    ck_assert_error_has("module (32,)");
    ck_assert_error_has("unexpected \"transformer.h.0.attn.q_attn.weight\"");
    ck_assert(same_weights(to, before));
    /* f64 tensors, as a float64 checkpoint holds them */
    clt_module *wide_model = clt_module_clone_to(from, clt_device_cpu());
    ck_assert_int_eq(clt_module_to_dtype(wide_model, CLT_F64), CLT_OK);
    ck_assert_msg(clt_gpt2_load(to, save_renamed(wide_model, gpt2_model_name, NULL, 0)) ==
                      CLT_OK,
                  "%s", clt_last_error());
    ck_assert(same_weights(to, from));
    clt_tensor_release(wide);
    clt_module *all[] = {from, to, before, untied, wide_model};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clt_module_release(all[i]);
}
END_TEST

/* "bert." + name, dropping the pooler when the global says so */
static bool drop_pooler;
static const char *bert_prefixed(const char *name, char *buf, size_t size)
{
    if (drop_pooler && strncmp(name, "pooler.", 7) == 0)
        return NULL;
    snprintf(buf, size, "bert.%s", name);
    return buf;
}

/* "bert." + name, but for one tensor dropped */
static const char *bert_without_dense_bias(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "bert.%s", name);
    return strcmp(name, "encoder.layer.0.output.dense.bias") == 0 ? NULL : buf;
}

static const char *same_name(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s", name);
    return buf;
}

/* hidden and pooled outputs of m for token_row; pooled NULL when refused. */
static void bert_outputs(clt_module *m, clt_tensor **hidden, clt_tensor **pooled)
{
    clt_tensor *ids = ids_of(token_row, 5);
    *hidden = *pooled = NULL;
    if (clt_bert_forward(m, ids, NULL, NULL, hidden, pooled) != CLT_OK) {
        ck_assert_int_eq(clt_bert_forward(m, ids, NULL, NULL, hidden, NULL), CLT_OK);
        *pooled = NULL;
    }
    clt_tensor_release(ids);
}

/* The head classes' files: BertForSequenceClassification and BertForPreTraining (pooler and
 * head), BertForTokenClassification (no pooler: pooled outputs refused until a file with one
 * is loaded), with the position_ids buffer older files hold; a model without a pooler skips a
 * file's; a missing tensor is refused by name, changing nothing. */
START_TEST(test_models_bert_load_files)
{
    clt_bert_config c = tiny_bert();
    clt_module *from = clt_bert_new(&c), *to = clt_bert_new(&c);
    randomize(from, 31), randomize(to, 32);
    clt_tensor *cls_w = clt_tensor_zeros(CLT_SHAPE(3, 8), CLT_F32, NULL);
    clt_tensor *cls_b = clt_tensor_zeros(CLT_SHAPE(3), CLT_F32, NULL);
    clt_tensor *pos = clt_tensor_arange(0, 8, 1, CLT_I64, NULL);
    clt_named_tensor seq[3] = {{"classifier.weight", cls_w}, {"classifier.bias", cls_b},
                               {"bert.embeddings.position_ids", pos}};
    clt_named_tensor pre[3] = {{"cls.predictions.bias", cls_b},
                               {"cls.predictions.transform.dense.weight", cls_w},
                               {"cls.seq_relationship.weight", cls_w}};
    clt_tensor *hidden, *pooled, *want_hidden, *want_pooled;
    bert_outputs(from, &want_hidden, &want_pooled);
    const char *kinds[2] = {"BertForSequenceClassification", "BertForPreTraining"};
    for (int i = 0; i < 2; i++) {
        drop_pooler = false;
        ck_assert_msg(clt_bert_load(to, save_renamed(from, bert_prefixed, i ? pre : seq, 3)) ==
                          CLT_OK,
                      "%s: %s", kinds[i], clt_last_error());
        ck_assert(same_weights(to, from));
        bert_outputs(to, &hidden, &pooled);
        ck_assert_msg(pooled != NULL, "%s", kinds[i]);
        test_assert_close(pooled, want_pooled, 0, kinds[i]);
        clt_tensor_release(hidden), clt_tensor_release(pooled);
    }
    /* BertForTokenClassification: no pooler */
    randomize(to, 33);
    drop_pooler = true;
    ck_assert_msg(clt_bert_load(to, save_renamed(from, bert_prefixed, seq, 2)) == CLT_OK, "%s",
                  clt_last_error());
    bert_outputs(to, &hidden, &pooled);
    ck_assert_ptr_null(pooled);
    ck_assert_error_has("without pooler.dense");
    test_assert_close(hidden, want_hidden, 0, "BertForTokenClassification's hidden state");
    clt_tensor_release(hidden);
    /* a missing tensor: refused, nothing changed, the pooler still refused */
    clt_module *before = clt_module_clone_to(to, clt_device_cpu());
    ck_assert_int_eq(clt_bert_load(to, save_renamed(from, bert_without_dense_bias, NULL, 0)),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_error_has("clt_bert_load: ");
    ck_assert_error_has("missing \"encoder.layer.0.output.dense.bias\"");
    ck_assert(same_weights(to, before));
    bert_outputs(to, &hidden, &pooled);
    ck_assert_ptr_null(pooled);
    clt_tensor_release(hidden);
    /* a file with a pooler: pooled outputs again */
    drop_pooler = false;
    ck_assert_int_eq(clt_bert_load(to, save_renamed(from, bert_prefixed, pre, 2)), CLT_OK);
    bert_outputs(to, &hidden, &pooled);
    ck_assert_ptr_nonnull(pooled);
    clt_tensor_release(hidden), clt_tensor_release(pooled);
    clt_module_release(before);
    /* a model without a pooler skips a BertModel file's */
    c.add_pooling_layer = false;
    clt_module *bare = clt_bert_new(&c);
    ck_assert_msg(clt_bert_load(bare, save_renamed(from, same_name, NULL, 0)) == CLT_OK, "%s",
                  clt_last_error());
    bert_outputs(bare, &hidden, &pooled);
    ck_assert_ptr_null(pooled);
    ck_assert_error_has("built without a pooler (add_pooling_layer false)");
    test_assert_close(hidden, want_hidden, 0, "the pooler-less model's hidden state");
    clt_tensor_release(hidden);
    clt_tensor *all[] = {cls_w, cls_b, pos, want_hidden, want_pooled};
    TEST_RELEASE_ALL(all);
    clt_module_release(from), clt_module_release(to), clt_module_release(bare);
}
END_TEST

/* ---- ResNet-50 and its kin --------------------------------------------------------------- */

/* ResNet-50's and ResNeXt-50 32x4d's names and shapes are torchvision's; 50, 101, 152,
 * ResNeXt and Wide ResNet-50-2 have torchvision's parameter counts. */
START_TEST(test_models_resnet_bottleneck_names)
{
    clt_module *r = clt_resnet50(1000);
    ck_assert_msg(r != NULL, "%s", clt_last_error());
    models_check_names(r, MODELS_REFERENCE("resnet50_names.txt"), 0);
    ck_assert_int_eq(clt_module_parameter_count(r), 25557032);
    ck_assert_str_eq(clt_module_type_name(clt_module_get_child(r, "layer1.0")), "Bottleneck");
    clt_module_release(r);
    clt_resnet_config c = clt_resnet_config_default();
    c.block = CLT_RESNET_BOTTLENECK, c.layers[1] = 4, c.layers[2] = 6, c.layers[3] = 3;
    c.layers[0] = 3, c.groups = 32, c.width_per_group = 4;
    r = clt_resnet_new(&c);
    ck_assert_msg(r != NULL, "%s", clt_last_error());
    models_check_names(r, MODELS_REFERENCE("resnext50_32x4d_names.txt"), 0);
    ck_assert_int_eq(clt_module_parameter_count(r), 25028904);
    clt_module_release(r);
    c.groups = 1, c.width_per_group = 128; /* wide_resnet50_2 */
    r = clt_resnet_new(&c);
    ck_assert_int_eq(clt_module_parameter_count(r), 68883240);
    clt_module_release(r);
    r = clt_resnet101(1000);
    ck_assert_int_eq(clt_module_parameter_count(r), 44549160);
    clt_module_release(r);
    r = clt_resnet152(1000);
    ck_assert_int_eq(clt_module_parameter_count(r), 60192808);
    clt_module_release(r);
}
END_TEST

/* torchvision's Bottleneck and _make_layer with groups 2, width_per_group 32 and layer3 and
 * layer4 dilated instead of strided: its eval-mode logits on every device. */
START_TEST(test_models_resnet_bottleneck_reference)
{
    clt_device *dev = test_device(_i);
    clt_safetensors st;
    models_load_reference(MODELS_REFERENCE("bottleneck_small.safetensors"), dev, &st);
    clt_resnet_config c = clt_resnet_config_default();
    c.block = CLT_RESNET_BOTTLENECK, c.planes = 4, c.num_classes = 5;
    c.layers[0] = 1, c.layers[1] = 2, c.layers[2] = 1, c.layers[3] = 1;
    c.groups = 2, c.width_per_group = 32;
    c.replace_stride_with_dilation[1] = c.replace_stride_with_dilation[2] = true;
    clt_module *m = clt_resnet_new(&c);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_module_to(m, dev), CLT_OK);
    models_load_weights(m, &st);
    clt_module_train(m, false);
    clt_tensor *logits = clt_module_forward(m, models_ref(&st, "input"));
    models_assert_close(logits, models_ref(&st, "logits"), 2e-5, 1e-4, "torchvision's logits",
                        dev);
    clt_tensor_release(logits);
    clt_module_release(m);
    clt_safetensors_clear(&st);
}
END_TEST

void models_hf_add_tests(TCase *tc)
{
    tcase_add_test(tc, test_models_gpt2_activations);
    tcase_add_test(tc, test_models_gpt2_options);
    tcase_add_test(tc, test_models_gpt2_dropout);
    tcase_add_test(tc, test_models_attention_unfused);
    tcase_add_test(tc, test_models_bert_options);
    tcase_add_test(tc, test_models_bert_pad_token);
    tcase_add_test(tc, test_models_config_accepted);
    tcase_add_test(tc, test_models_config_implemented);
    tcase_add_test(tc, test_models_config_refused);
    ADD_DEVICE_TEST(tc, test_models_gpt2_transformers_file);
    ADD_DEVICE_TEST(tc, test_models_bert_transformers_file);
    tcase_add_test(tc, test_models_gpt2_load_files);
    tcase_add_test(tc, test_models_bert_load_files);
    tcase_add_test(tc, test_models_resnet_bottleneck_names);
    ADD_DEVICE_TEST(tc, test_models_resnet_bottleneck_reference);
}
