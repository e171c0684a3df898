/* The inside of a clt_tokenizer, shared by its loading (tokenizer_load.c) and its encoding and
 * decoding (tokenizer.c): the tables that loading builds and nothing changes afterwards. */
#ifndef CLT_MODELS_TOKENIZER_INTERNAL_H
#define CLT_MODELS_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cltensor/models/tokenizer.h>

/* The largest token id a file may give (ids index arrays of that size). */
#define MODELS_TOKEN_ID_MAX ((1 << 24) - 1)

/* A token's entry, by id. */
typedef struct models_token {
    const char *text;  /* as the files spell it; NULL for an id that is no token's */
    uint32_t raw, len; /* the bytes it decodes to: offset into raw_bytes, length */
} models_token;

/* A merge of the pair (left, right) into the token `merged`, of priority `rank` (0 first). */
typedef struct models_merge {
    uint64_t pair; /* left << 32 | right; UINT64_MAX for an empty slot */
    uint32_t rank;
    int32_t merged;
} models_merge;

/* An added token, matched in the text before pre-tokenization. */
typedef struct models_added {
    const char *text;
    size_t len;
    int32_t id;
} models_added;

struct clt_tokenizer {
    int64_t n_ids;        /* one more than the largest id */
    models_token *tokens; /* [n_ids] */
    char *strings;        /* every token's text, NUL-terminated, one after another */
    unsigned char *raw_bytes;
    int32_t *vocab; /* [vocab_mask + 1] ids by hash of their text, -1 for an empty slot */
    uint64_t vocab_mask;
    models_merge *merges; /* [merge_mask + 1] by hash of their pair */
    uint64_t merge_mask;
    int32_t byte_ids[256]; /* the token of each byte's symbol */
    models_added *added;   /* [n_added], longest first */
    int n_added;
    unsigned char added_first[256]; /* whether an added token starts with that byte */
};

/* The code point of the valid UTF-8 character at s[0 .. n) (n >= 1) and its length in *len;
 * -1 when it is not one (overlong, a surrogate, above U+10FFFF or cut short). */
long clt__models_utf8_next(const unsigned char *s, size_t n, size_t *len);

/* 64-bit FNV-1a of n bytes. */
uint64_t clt__models_hash_bytes(const void *s, size_t n);

/* The id of the token spelled s[0 .. n), or -1. */
int32_t clt__models_vocab_find(const clt_tokenizer *tok, const char *s, size_t n);

/* The merge of the pair (left, right), or NULL. */
static inline const models_merge *models_merge_find(const clt_tokenizer *tok, int32_t left,
                                                    int32_t right)
{
    uint64_t pair = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    uint64_t i = (pair * 0x9E3779B97F4A7C15u) >> 20 & tok->merge_mask;
    for (;; i = (i + 1) & tok->merge_mask) {
        const models_merge *m = &tok->merges[i];
        if (m->pair == pair)
            return m;
        if (m->pair == UINT64_MAX)
            return NULL;
    }
}

#endif
