/* GPT-2 as Hugging Face transformers' GPT2LMHeadModel builds it, with its structure and
 * parameter names (transformer.wte, transformer.wpe, transformer.h.N.{ln_1, attn.c_attn,
 * attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, transformer.ln_f, lm_head: tied to wte or a weight
 * of its own), its config read from a config.json, its weights from the safetensors files of
 * GPT2Model and GPT2LMHeadModel, and a KV cache for incremental decoding. */
#ifndef CLTENSOR_MODELS_GPT2_H
#define CLTENSOR_MODELS_GPT2_H

#include <stdbool.h>

#include "cltensor.h"
#include "cltensor/models/activation.h"
#include "cltensor/models/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The fields of transformers' GPT2Config that change the computation. Start from
 * clt_gpt2_config_default() (a zeroed struct does not scale the attention). */
typedef struct clt_gpt2_config {
    int64_t vocab_size;  /* 50257 */
    int64_t n_positions; /* 1024 */
    int64_t n_embd;      /* 768 */
    int n_layer;         /* 12, at most 1000 */
    int n_head;          /* 12, dividing n_embd */
    int64_t n_inner;     /* 0: the MLP's width is 4 * n_embd (config.json's null) */
    clt_models_activation activation_function; /* CLT_MODELS_ACT_GELU_NEW */
    /* dropout probabilities in training mode (clt_module_train), 0 to 1: 0.1 each; after the
     * embeddings (embd), each block's attention and MLP outputs (resid) and on the attention
     * probabilities (attn: attention is then computed unfused, the L x S matrix materialised) */
    double resid_pdrop, embd_pdrop, attn_pdrop;
    double layer_norm_epsilon;            /* 1e-5 */
    bool scale_attn_weights;              /* true: scores / sqrt(head size) */
    bool scale_attn_by_inverse_layer_idx; /* false: scores of layer i also / (i + 1) */
    bool reorder_and_upcast_attn;         /* false; true computes the same (below) */
    bool tie_word_embeddings;             /* true: lm_head.weight is transformer.wte.weight */
} clt_gpt2_config;

/* GPT-2 small's config (transformers' GPT2Config()). */
CLT_MODELS_API clt_gpt2_config clt_gpt2_config_default(void);

/* Reads a Hugging Face config.json into *config: each field of transformers' GPT2Config (and of
 * PretrainedConfig it inherits) is implemented, refused or accepted without effect as
 * docs/api.md's "cltensor_models" tables say; a field absent keeps clt_gpt2_config_default()'s
 * value. reorder_and_upcast_attn is accepted: the scores and softmax are computed in f32 for
 * f32, f16 and bf16 models, as it asks. CLT_OK, or the error with *config unchanged:
 * CLT_ERR_IO for a file that cannot be read, CLT_ERR_INVALID_ARGUMENT naming the path and the
 * key for a file that is not a JSON object, a key it does not know, a value of the wrong type
 * or out of range, or a field set to something not implemented (add_cross_attention true, an
 * activation it lacks, model_type other than "gpt2", n_ctx other than n_positions). */
CLT_MODELS_API clt_status clt_gpt2_config_read(const char *path, clt_gpt2_config *config);

/* A new GPT2LMHeadModel on cpu: GPT-2's N(0, 0.02) initialisation (load weights to use one).
 * NULL with the library's last error set (CLT_ERR_INVALID_ARGUMENT naming clt_gpt2_new and the
 * value) for a NULL config, a size below 1, n_layer above 1000, n_head not dividing n_embd, a
 * negative n_inner, a probability outside 0 to 1, a negative or infinite epsilon, an unknown
 * activation. Its forward (clt_module_forward) maps i64 token ids (B, T) to logits
 * (B, T, vocab_size). */
CLT_MODELS_API clt_module *clt_gpt2_new(const clt_gpt2_config *config);

/* The keys and values of the tokens seen so far, one pair per layer, (B, n_head, length,
 * head size) each, on the model's device. */
typedef struct clt_gpt2_cache {
    int n_layer;
    int64_t length;
    clt_tensor **k, **v;
} clt_gpt2_cache;

/* An empty cache for the model (CLT_ERR_INVALID_ARGUMENT for a NULL cache or a model that is
 * not a clt_gpt2_new one); clt_gpt2_cache_clear frees what it holds, leaves it empty and
 * accepts NULL. */
CLT_MODELS_API clt_status clt_gpt2_cache_init(clt_gpt2_cache *cache, const clt_module *model);
CLT_MODELS_API void clt_gpt2_cache_clear(clt_gpt2_cache *cache);

/* The logits (B, T, vocab_size) of tokens ids (B, T) following the cache's tokens (positions
 * cache->length ...), the cache extended with them; with a NULL cache, the plain forward. A
 * new reference, or NULL with the library's error set: a model that is not a GPT-2
 * (CLT_ERR_INVALID_ARGUMENT), ids that are not (B, T) or go past n_positions (CLT_ERR_SHAPE),
 * a cache that is not this model's for this batch (another layer count, head count or head
 * size, batch, length, dtype or device); the cache is then as it was. */
CLT_MODELS_API clt_tensor *clt_gpt2_forward(clt_module *model, clt_tensor *ids,
                                            clt_gpt2_cache *cache);

/* Loads a Hugging Face safetensors file of GPT2Model (names without a prefix: wte.weight,
 * h.0.ln_1.weight, ...) or of GPT2LMHeadModel (the same under "transformer.", and
 * lm_head.weight): with tie_word_embeddings, lm_head.weight, where present, must have wte's
 * shape and is not loaded twice; without, it must be there. The attention-mask buffers older
 * files hold (attn.bias, attn.masked_bias) are skipped; floating tensors of another dtype are
 * converted to the model's, as from_pretrained does. Strict otherwise: a missing, unexpected or
 * misshapen tensor is CLT_ERR_INVALID_ARGUMENT naming it (with both shapes) and loads nothing;
 * CLT_ERR_IO for a file that cannot be read; CLT_ERR_INVALID_ARGUMENT for a model that is not
 * a GPT-2. */
CLT_MODELS_API clt_status clt_gpt2_load(clt_module *model, const char *path);

#ifdef __cplusplus
}
#endif

#endif
