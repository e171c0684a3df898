/* GPT-2's byte-level BPE tokenizer: text to token ids and back, the ids those of Hugging Face's
 * GPT2TokenizerFast (encode with add_special_tokens=False). It reads Hugging Face's files: a
 * tokenizer.json whose model is "BPE" and whose pre-tokenizer is "ByteLevel", or a vocab.json
 * with a merges.txt. Encoding matches the added (special) tokens in the text first, such as
 * <|endoftext|>; splits the rest with GPT-2's pattern ('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+|
 * ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+) over Unicode code points; maps each piece's UTF-8
 * bytes to GPT-2's 256 byte symbols and merges them by rank, lowest first. Decoding gives back
 * the bytes. Files are untrusted input: a malformed one is refused with
 * CLT_ERR_INVALID_ARGUMENT naming the file, the field and the value, an unreadable one with
 * CLT_ERR_IO. A loaded tokenizer is never changed: any number of threads may use it at once. */
#ifndef CLTENSOR_MODELS_TOKENIZER_H
#define CLTENSOR_MODELS_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "cltensor/models/export.h"
#include "cltensor/status.h"
#include "cltensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_tokenizer clt_tokenizer;

/* A tokenizer from a folder of Hugging Face's files: its tokenizer.json when there is one, else
 * its vocab.json and merges.txt (as clt_tokenizer_load_files). NULL with the last error set:
 * CLT_ERR_IO when the folder has neither, or a file cannot be read; CLT_ERR_INVALID_ARGUMENT
 * for a malformed or unsupported file (ids go from 0 to 2^24 - 1; every merge's tokens and
 * their concatenation, and the symbols of all 256 bytes, must be in the vocabulary). Free it
 * with clt_tokenizer_free. */
CLT_MODELS_API clt_tokenizer *clt_tokenizer_load(const char *folder);
/* A tokenizer from a tokenizer.json: its model must be {"type": "BPE"} without dropout, subword
 * prefix or suffix, byte fallback or ignore_merges; its pre_tokenizer {"type": "ByteLevel"} with
 * use_regex and without add_prefix_space; its normalizer null; its decoder null or ByteLevel;
 * its merges strings "a b" or pairs ["a", "b"]. Its added_tokens are matched in the text before
 * pre-tokenization (none may have single_word, lstrip or rstrip); its post_processor,
 * truncation and padding are not read. Errors as clt_tokenizer_load. */
CLT_MODELS_API clt_tokenizer *clt_tokenizer_load_json(const char *path);
/* A tokenizer from a vocab.json (an object of token: id) and a merges.txt (a line "a b" per
 * merge, highest priority first; a first line starting "#version" is skipped), as
 * GPT2TokenizerFast reads them: <|endoftext|>, when the vocabulary has it, is the one added
 * token. Errors as clt_tokenizer_load. */
CLT_MODELS_API clt_tokenizer *clt_tokenizer_load_files(const char *vocab_path,
                                                       const char *merges_path);
/* Frees a tokenizer. Accepts NULL. */
CLT_MODELS_API void clt_tokenizer_free(clt_tokenizer *tok);

/* Encodes `length` bytes of UTF-8 `text` (NUL bytes included; text may be NULL when length is
 * 0) into ids[0 .. *count), *count the number of ids; there are never more ids than bytes, so
 * a buffer of `length` ids always suffices. ids NULL with capacity 0 only counts them. Errors:
 * CLT_ERR_INVALID_ARGUMENT for text that is not valid UTF-8 (the message names the byte
 * offset), for fewer than *count places in ids (*count is still set, ids untouched), for a
 * length of 2^31 bytes or more, or for a NULL argument; CLT_ERR_OUT_OF_MEMORY. */
CLT_MODELS_API clt_status clt_tokenizer_encode(const clt_tokenizer *tok, const char *text,
                                               size_t length, int64_t *ids, size_t capacity,
                                               size_t *count);
/* The ids of text as a new i64 tensor of shape (1, T) on cpu, T the number of ids (0 for empty
 * text), the input of the models; NULL with the last error set, for the errors of
 * clt_tokenizer_encode. */
CLT_MODELS_API clt_tensor *clt_tokenizer_encode_tensor(const clt_tokenizer *tok,
                                                       const char *text, size_t length);

/* Decodes n ids into the bytes they stand for, written to text[0 .. *length) with a NUL after
 * them: the inverse of GPT-2's byte mapping, raw bytes, nothing added or cleaned up, so the ids
 * of a text decode to that text exactly, and decoding them one at a time and concatenating the
 * pieces gives it too (a piece may hold part of a UTF-8 character). An added token decodes to
 * its content. text NULL with capacity 0 only measures. Errors: CLT_ERR_INVALID_ARGUMENT for an
 * id that is not a token's (the message names its index and value), for a capacity below
 * *length + 1 (*length is still set, text untouched) or a NULL argument. */
CLT_MODELS_API clt_status clt_tokenizer_decode(const clt_tokenizer *tok, const int64_t *ids,
                                               size_t n, char *text, size_t capacity,
                                               size_t *length);

/* One more than the largest token id, added tokens included (len(tokenizer) in Hugging Face's
 * terms when the ids have no gaps); -1 for a NULL tokenizer. */
CLT_MODELS_API int64_t clt_tokenizer_vocab_size(const clt_tokenizer *tok);
/* The token of an id as the files spell it (GPT-2's byte symbols: "Ġthe" for " the"), or the
 * content of an added token: a string owned by the tokenizer. NULL with the last error set
 * (CLT_ERR_INVALID_ARGUMENT) for an id that is no token's. */
CLT_MODELS_API const char *clt_tokenizer_token(const clt_tokenizer *tok, int64_t id);
/* The id of a token spelled as clt_tokenizer_token returns it; -1 with the last error set
 * (CLT_ERR_INVALID_ARGUMENT) when the vocabulary has no such token. */
CLT_MODELS_API int64_t clt_tokenizer_token_id(const clt_tokenizer *tok, const char *token);
/* The Unicode version of the letter, number and white space classes that pre-tokenization
 * uses ("14.0.0"): a static string. */
CLT_MODELS_API const char *clt_tokenizer_unicode_version(void);

#ifdef __cplusplus
}
#endif

#endif
