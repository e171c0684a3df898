/* A BERT encoder as Hugging Face transformers' BertModel builds it, with its structure and
 * parameter names (embeddings.{word,position,token_type}_embeddings and embeddings.LayerNorm,
 * encoder.layer.N.{attention.self.{query,key,value}, attention.output.{dense,LayerNorm},
 * intermediate.dense, output.{dense,LayerNorm}}, pooler.dense), its config read from a
 * config.json and its weights from the safetensors files of BertModel and of the head classes
 * built on it. */
#ifndef CLTENSOR_MODELS_BERT_H
#define CLTENSOR_MODELS_BERT_H

#include <stdbool.h>
#include <stdint.h>

#include "cltensor.h"
#include "cltensor/models/activation.h"
#include "cltensor/models/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pad_token_id's value for none (config.json's null): no padding row. */
#define CLT_BERT_NO_PAD_TOKEN INT64_MIN

/* The fields of transformers' BertConfig that change the computation, and BertModel's
 * add_pooling_layer. Start from clt_bert_config_default(). */
typedef struct clt_bert_config {
    int64_t vocab_size;              /* 30522 */
    int64_t hidden_size;             /* 768 */
    int num_hidden_layers;           /* 12, at most 1000 */
    int num_attention_heads;         /* 12, dividing hidden_size */
    int64_t intermediate_size;       /* 3072 */
    clt_models_activation hidden_act; /* CLT_MODELS_ACT_GELU */
    /* dropout probabilities in training mode (clt_module_train), 0 to 1: 0.1 each; after the
     * embeddings and each sublayer (hidden), on the attention probabilities (attention: then
     * computed unfused, the L x S matrix materialised) */
    double hidden_dropout_prob, attention_probs_dropout_prob;
    int64_t max_position_embeddings; /* 512 */
    int64_t type_vocab_size;         /* 2 */
    double layer_norm_eps;           /* 1e-12 */
    /* 0: word_embeddings' padding_idx, -vocab_size to vocab_size - 1 (a negative one counts
     * from the end, as PyTorch's): its row starts at zero and gets no gradient;
     * CLT_BERT_NO_PAD_TOKEN for none */
    int64_t pad_token_id;
    bool add_pooling_layer; /* true: pooler.dense (BertForMaskedLM's and
                             * BertForTokenClassification's BERT have none) */
} clt_bert_config;

/* bert-base's config (transformers' BertConfig()), with a pooler. */
CLT_MODELS_API clt_bert_config clt_bert_config_default(void);

/* Reads a Hugging Face config.json into *config: each field of transformers' BertConfig (and
 * of PretrainedConfig it inherits) is implemented, refused or accepted without effect as
 * docs/api.md's "cltensor_models" tables say; a field absent keeps clt_bert_config_default()'s
 * value (add_pooling_layer stays true). CLT_OK, or the error with *config unchanged: CLT_ERR_IO
 * for a file that cannot be read, CLT_ERR_INVALID_ARGUMENT naming the path and the key for a
 * file that is not a JSON object, a key it does not know, a value of the wrong type or out of
 * range, or a field set to something not implemented (is_decoder or add_cross_attention true,
 * position_embedding_type other than "absolute", an activation it lacks, model_type other
 * than "bert"). */
CLT_MODELS_API clt_status clt_bert_config_read(const char *path, clt_bert_config *config);

/* A new BertModel on cpu, PyTorch's default initialisation but for the padding row, zero
 * (load weights to use one). NULL with the library's last error set (CLT_ERR_INVALID_ARGUMENT
 * naming clt_bert_new and the value) for a NULL config, a size below 1, num_hidden_layers
 * above 1000, num_attention_heads not dividing hidden_size, a probability outside 0 to 1, a
 * negative or infinite epsilon, pad_token_id out of range, an unknown activation. Its forward
 * (clt_module_forward) maps i64 token ids (B, T) to the last hidden state (B, T,
 * hidden_size); as a module of several inputs and outputs (clt_module_forward_many) it takes
 * input_ids, token_type_ids and attention_mask (the last two optional: fewer inputs or NULL)
 * and gives the last hidden state and, asked for two outputs, the pooled output, as
 * clt_bert_forward does. */
CLT_MODELS_API clt_module *clt_bert_new(const clt_bert_config *config);

/* BertModel(input_ids, attention_mask, token_type_ids): the last hidden state (B, T, hidden)
 * and the pooled output (B, hidden; tanh of pooler.dense on the first token), new references.
 * ids i64 (B, T); token_type_ids i64 (B, T) or NULL (all 0); attention_mask (B, T), nonzero
 * for the tokens to attend to, or NULL (all). *pooled may be NULL when not wanted, hidden not.
 * CLT_OK, or the library's error with nothing written: CLT_ERR_INVALID_ARGUMENT for a model
 * that is not a clt_bert_new one, and for a pooled output asked of a model without a pooler
 * (add_pooling_layer false, or clt_bert_load loaded a file without one); CLT_ERR_SHAPE for
 * shapes that do not fit. */
CLT_MODELS_API clt_status clt_bert_forward(clt_module *model, clt_tensor *ids,
                                           clt_tensor *token_type_ids,
                                           clt_tensor *attention_mask, clt_tensor **hidden,
                                           clt_tensor **pooled);

/* Loads a Hugging Face safetensors file of BertModel (names without a prefix) or of a head
 * class built on one (names under "bert."): BertForMaskedLM, BertForPreTraining,
 * BertForNextSentencePrediction, BertForSequenceClassification, BertForMultipleChoice,
 * BertForTokenClassification, BertForQuestionAnswering; their heads' tensors (cls.*,
 * classifier.*, qa_outputs.*) are skipped, as is the position_ids buffer older files hold.
 * A file without pooler.dense (BertForMaskedLM, BertForTokenClassification,
 * BertForQuestionAnswering) loads into a model with a pooler, which is then refused a pooled
 * output until a file with one is loaded; a model without a pooler skips a file's. Floating
 * tensors of another dtype are converted to the model's, as from_pretrained does. Strict
 * otherwise: a missing, unexpected or misshapen tensor is CLT_ERR_INVALID_ARGUMENT naming it
 * (with both shapes) and loads nothing; CLT_ERR_IO for a file that cannot be read;
 * CLT_ERR_INVALID_ARGUMENT for a model that is not a BERT. */
CLT_MODELS_API clt_status clt_bert_load(clt_module *model, const char *path);

#ifdef __cplusplus
}
#endif

#endif
