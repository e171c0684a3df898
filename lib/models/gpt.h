/* A GPT-2 language model with Hugging Face's structure and parameter names
 * (GPT2LMHeadModel: transformer.wte, transformer.wpe, transformer.h.N.{ln_1, attn.c_attn,
 * attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, transformer.ln_f; lm_head tied to wte), its
 * config read from a Hugging Face config.json, and a KV cache for incremental decoding. */
#ifndef CLT_SAMPLES_GPT_H
#define CLT_SAMPLES_GPT_H

#include <cltensor.h>

typedef struct gpt_config {
    int64_t vocab_size;  /* 50257 */
    int64_t n_positions; /* 1024 */
    int64_t n_embd;      /* 768 */
    int n_layer;         /* 12 */
    int n_head;          /* 12 */
    double layer_norm_epsilon; /* 1e-5 */
} gpt_config;

/* GPT-2 small's config. */
gpt_config gpt2_small_config(void);
/* Reads the fields above from a Hugging Face config.json of at most 64 KiB (others are ignored;
 * missing ones keep GPT-2 small's values; sizes must be whole numbers). CLT_OK, or CLT_ERR_IO /
 * CLT_ERR_INVALID_ARGUMENT with a message in `error` (of `size` bytes). */
clt_status gpt_config_read(const char *path, gpt_config *config, char *error, size_t size);

/* A new model on cpu, PyTorch's default initialisation (load weights to use one); NULL with the
 * library's last error set, for a config with a size below 1, n_layer above 1000, n_head not
 * dividing n_embd or a negative or infinite epsilon too. Its forward (clt_module_forward) maps i64 token ids (B, T) to
 * logits (B, T, vocab_size). */
clt_module *gpt_new(const gpt_config *config);

/* The keys and values of the tokens seen so far, one pair per layer, (B, n_head, length,
 * head size) each, on the model's device. */
typedef struct gpt_cache {
    int n_layer;
    int64_t length;
    clt_tensor **k, **v;
} gpt_cache;

/* An empty cache for the model (CLT_ERR_INVALID_ARGUMENT for one that is not a GPT-2);
 * gpt_cache_clear frees what it holds and accepts NULL. */
clt_status gpt_cache_init(gpt_cache *cache, const clt_module *model);
void gpt_cache_clear(gpt_cache *cache);

/* The logits (B, T, vocab_size) of tokens ids (B, T) following the cache's tokens (positions
 * cache->length ...), the cache extended with them; with a NULL cache, the plain forward. A
 * cache that is not this model's for this batch (another layer count, head count or head size,
 * batch, length, dtype or device) is refused. On failure NULL, the library's error set, and the
 * cache as it was. */
clt_tensor *gpt_forward(clt_module *model, clt_tensor *ids, gpt_cache *cache);

/* Loads a Hugging Face GPT-2 safetensors file into the model: names with or without the
 * "transformer." prefix, lm_head.weight (tied: checked equal in shape, not loaded twice) and
 * the attention-mask buffers older files hold (attn.bias, attn.masked_bias) accepted; every
 * parameter must be present (strict otherwise). */
clt_status gpt_load(clt_module *model, const char *path);

#endif
