/* A BERT encoder with Hugging Face's structure and parameter names (BertModel: embeddings.
 * {word,position,token_type}_embeddings and embeddings.LayerNorm, encoder.layer.N.{attention.
 * self.{query,key,value}, attention.output.{dense,LayerNorm}, intermediate.dense,
 * output.{dense,LayerNorm}}, pooler.dense), its config read from a Hugging Face config.json.
 * Attention is clt_scaled_dot_product_attention with the padding mask broadcast over heads
 * and queries. Dropout is applied after the embeddings and each sublayer in training mode (at
 * hidden_dropout_prob); attention_probs_dropout_prob is not read, because the fused attention
 * has no dropout of its own. */
#ifndef CLT_SAMPLES_BERT_H
#define CLT_SAMPLES_BERT_H

#include <cltensor.h>

typedef struct bert_config {
    int64_t vocab_size;              /* 30522 */
    int64_t hidden_size;             /* 768 */
    int num_hidden_layers;           /* 12 */
    int num_attention_heads;         /* 12 */
    int64_t intermediate_size;       /* 3072 */
    int64_t max_position_embeddings; /* 512 */
    int64_t type_vocab_size;         /* 2 */
    double layer_norm_eps;           /* 1e-12 */
    double hidden_dropout_prob;      /* 0.1 */
} bert_config;

/* bert-base's config. */
bert_config bert_base_config(void);
/* Reads the fields above from a Hugging Face config.json of at most 64 KiB (others are ignored;
 * missing ones keep bert-base's values; sizes must be whole numbers). CLT_OK, or CLT_ERR_IO / CLT_ERR_INVALID_ARGUMENT with a message in
 * `error` (of `size` bytes). */
clt_status bert_config_read(const char *path, bert_config *config, char *error, size_t size);

/* A new model on cpu, PyTorch's default initialisation (load weights to use one); NULL with
 * the library's last error set. Its forward (clt_module_forward) maps i64 token ids (B, T) to
 * the last hidden state (B, T, hidden_size). */
clt_module *bert_new(const bert_config *config);

/* BertModel(input_ids, attention_mask, token_type_ids): the last hidden state (B, T, hidden)
 * and the pooled output (B, hidden; tanh of pooler.dense on the first token). ids i64 (B, T);
 * token_type_ids i64 (B, T) or NULL (all 0); attention_mask (B, T), nonzero for the tokens to
 * attend to, or NULL (all). *pooled may be NULL when not wanted, hidden not. CLT_OK, or the
 * library's error with nothing written (CLT_ERR_INVALID_ARGUMENT for a model that is not a
 * BertModel). */
clt_status bert_forward(clt_module *model, clt_tensor *ids, clt_tensor *token_type_ids,
                        clt_tensor *attention_mask, clt_tensor **hidden, clt_tensor **pooled);

#endif
