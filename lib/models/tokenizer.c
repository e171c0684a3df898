/* Encoding text into GPT-2's token ids and decoding them back, with a loaded clt_tokenizer
 * (tokenizer_load.c): added tokens matched first, then GPT-2's pre-tokenization pattern by
 * hand over code points, then byte-level BPE merges by rank. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "unicode.h"

#define PIECE_CACHE_MAX ((size_t)1 << 20) /* entries in one call's cache of pieces */
#define PIECE_CACHE_LEN 256               /* longer pieces are not cached */

long clt__models_utf8_next(const unsigned char *s, size_t n, size_t *len)
{
    unsigned c = s[0];
    if (c < 0x80) {
        *len = 1;
        return (long)c;
    }
    size_t k = c >= 0xC2 && c <= 0xDF   ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    if (k == 0 || n < k)
        return -1;
    unsigned long cp = c & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return -1;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((k == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return -1;
    *len = k;
    return (long)cp;
}

uint64_t clt__models_hash_bytes(const void *s, size_t n)
{
    const unsigned char *p = s;
    uint64_t h = 0xCBF29CE484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001B3u;
    return h;
}

int32_t clt__models_vocab_find(const clt_tokenizer *tok, const char *s, size_t n)
{
    uint64_t i = clt__models_hash_bytes(s, n) & tok->vocab_mask;
    for (;; i = (i + 1) & tok->vocab_mask) {
        int32_t id = tok->vocab[i];
        if (id < 0)
            return -1;
        const char *t = tok->tokens[id].text;
        if (strncmp(t, s, n) == 0 && t[n] == '\0')
            return id;
    }
}

/* --- pre-tokenization ---------------------------------------------------------------------- */

/* The class of the code point at t[i] (valid UTF-8), its end in *next. */
static models_unicode_class class_at(const unsigned char *t, size_t i, size_t end, size_t *next)
{
    enum {
        O = MODELS_UNICODE_OTHER,
        L = MODELS_UNICODE_LETTER,
        N = MODELS_UNICODE_NUMBER,
        S = MODELS_UNICODE_SPACE
    };
    static const unsigned char ascii[128] = {
        O, O, O, O, O, O, O, O, O, S, S, S, S, S, O, O, O, O, O, O, O, O, O, O, O, O,
        O, O, O, O, O, O, S, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, N, N, N, N,
        N, N, N, N, N, N, O, O, O, O, O, O, O, L, L, L, L, L, L, L, L, L, L, L, L, L,
        L, L, L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O, O, L, L, L, L, L, L, L,
        L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O,
    };
    if (t[i] < 0x80) {
        *next = i + 1;
        return (models_unicode_class)ascii[t[i]];
    }
    size_t len;
    long cp = clt__models_utf8_next(t + i, end - i, &len);
    *next = i + len;
    return clt__models_unicode_class_of((unsigned)cp);
}

/* The end of the run of code points of class cls from t[i]. */
static size_t run_end(const unsigned char *t, size_t i, size_t end, models_unicode_class cls)
{
    size_t next;
    while (i < end && class_at(t, i, end, &next) == cls)
        i = next;
    return i;
}

/* The end of the piece GPT-2's pattern matches at t[i] in t[i .. end) (valid UTF-8): the first
 * of 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ that matches. */
static size_t piece_end(const unsigned char *t, size_t i, size_t end)
{
    if (t[i] == '\'' && i + 1 < end) {
        unsigned char a = t[i + 1], b = i + 2 < end ? t[i + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd')
            return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
            return i + 3;
    }
    size_t next, after;
    models_unicode_class cls = class_at(t, i, end, &next);
    if (t[i] == ' ' && next < end) { /* " ?" before a letter, a number or anything else */
        models_unicode_class second = class_at(t, next, end, &after);
        if (second != MODELS_UNICODE_SPACE)
            return run_end(t, after, end, second);
    }
    if (cls != MODELS_UNICODE_SPACE)
        return run_end(t, next, end, cls);
    /* \s+(?!\S): a run of white space, less its last code point when more follows; \s+: that
     * last one alone */
    size_t last = i, j = next;
    while (j < end && class_at(t, j, end, &after) == MODELS_UNICODE_SPACE) {
        last = j;
        j = after;
    }
    return j == end || last == i ? j : last;
}

/* --- byte-level BPE ------------------------------------------------------------------------ */

/* A possible merge of symbol `pos` with the next one, in a heap ordered by (rank, pos). */
typedef struct heap_entry {
    uint32_t rank, pos;
    int32_t merged;
} heap_entry;

/* A piece already encoded in this call, found by its bytes; len 0 for an empty slot. */
typedef struct cache_entry {
    uint64_t hash;
    size_t at, len;  /* the piece: text[at .. at + len) */
    size_t first, n; /* its ids: ids[first .. first + n) */
} cache_entry;

/* One call's state: the ids so far, the cache of the pieces encoded (pointing at their ids in
 * `ids`) and the scratch space of the merges. */
typedef struct encoder {
    const clt_tokenizer *tok;
    const unsigned char *text;
    int64_t *ids;
    size_t n_ids, cap_ids;
    cache_entry *cache;
    size_t cache_mask, cache_used;
    int32_t *sym, *next, *prev; /* the symbols of a piece, a linked list over its bytes */
    heap_entry *heap;
    size_t cap_piece, n_heap;
} encoder;

static bool push_id(encoder *e, int64_t id)
{
    if (e->n_ids == e->cap_ids) {
        size_t cap = e->cap_ids ? 2 * e->cap_ids : 256;
        int64_t *ids = realloc(e->ids, cap * sizeof *ids);
        if (!ids)
            return false;
        e->ids = ids;
        e->cap_ids = cap;
    }
    e->ids[e->n_ids++] = id;
    return true;
}

static bool heap_less(const heap_entry *a, const heap_entry *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

/* Adds the merge of symbol pos with the next one, when the pair has one. */
static void heap_push(encoder *e, uint32_t pos)
{
    const models_merge *m = models_merge_find(e->tok, e->sym[pos], e->sym[e->next[pos]]);
    if (!m)
        return;
    heap_entry x = {m->rank, pos, m->merged};
    size_t i = e->n_heap++;
    while (i > 0 && heap_less(&x, &e->heap[(i - 1) / 2])) {
        e->heap[i] = e->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    e->heap[i] = x;
}

static heap_entry heap_pop(encoder *e)
{
    heap_entry top = e->heap[0], x = e->heap[--e->n_heap];
    size_t i = 0, n = e->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_less(&e->heap[c + 1], &e->heap[c]))
            c++;
        if (!heap_less(&e->heap[c], &x))
            break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (n > 0)
        e->heap[i] = x;
    return top;
}

static bool reserve_piece(encoder *e, size_t n)
{
    if (n <= e->cap_piece)
        return true;
    size_t cap = n < 64 ? 64 : n;
    int32_t *sym = malloc(3 * cap * sizeof *sym);
    heap_entry *heap = malloc(3 * cap * sizeof *heap);
    if (!sym || !heap) {
        free(sym);
        free(heap);
        return false;
    }
    free(e->sym);
    free(e->heap);
    e->sym = sym;
    e->next = sym + cap;
    e->prev = sym + 2 * cap;
    e->heap = heap;
    e->cap_piece = cap;
    return true;
}

/* The ids of piece p[0 .. n): its bytes' symbols merged, always the pair of lowest rank first
 * and of two such the leftmost (as Hugging Face's BPE::merge_all). */
static bool bpe(encoder *e, const unsigned char *p, size_t n)
{
    if (!reserve_piece(e, n))
        return false;
    for (size_t k = 0; k < n; k++) {
        e->sym[k] = e->tok->byte_ids[p[k]];
        e->next[k] = k + 1 < n ? (int32_t)k + 1 : -1;
        e->prev[k] = (int32_t)k - 1;
    }
    e->n_heap = 0;
    for (size_t k = 0; k + 1 < n; k++)
        heap_push(e, (uint32_t)k);
    while (e->n_heap > 0) {
        heap_entry top = heap_pop(e);
        int32_t pos = (int32_t)top.pos, right = e->next[pos];
        if (e->sym[pos] < 0 || right < 0)
            continue; /* merged into its left neighbour, or last */
        const models_merge *m = models_merge_find(e->tok, e->sym[pos], e->sym[right]);
        if (!m || m->merged != top.merged)
            continue; /* the pair changed since */
        e->sym[pos] = top.merged;
        e->sym[right] = -1;
        e->next[pos] = e->next[right];
        if (e->next[pos] >= 0)
            e->prev[e->next[pos]] = pos;
        if (e->prev[pos] >= 0)
            heap_push(e, (uint32_t)e->prev[pos]);
        if (e->next[pos] >= 0)
            heap_push(e, (uint32_t)pos);
    }
    for (int32_t k = 0; k >= 0; k = e->next[k])
        if (!push_id(e, e->sym[k]))
            return false;
    return true;
}

/* Room for one more entry in the cache, which doubles up to PIECE_CACHE_MAX entries. */
static bool cache_room(encoder *e)
{
    if (2 * (e->cache_used + 1) <= e->cache_mask + 1)
        return true;
    if (e->cache_mask + 1 >= PIECE_CACHE_MAX)
        return false;
    size_t slots = 2 * (e->cache_mask + 1);
    cache_entry *c = calloc(slots, sizeof *c);
    if (!c)
        return false;
    for (size_t i = 0; i <= e->cache_mask; i++) {
        if (e->cache[i].len == 0)
            continue;
        size_t k = e->cache[i].hash & (slots - 1);
        while (c[k].len)
            k = (k + 1) & (slots - 1);
        c[k] = e->cache[i];
    }
    free(e->cache);
    e->cache = c;
    e->cache_mask = slots - 1;
    return true;
}

/* The ids of the piece text[at .. at + len), from the cache when it saw the piece before. */
static bool encode_piece(encoder *e, size_t at, size_t len)
{
    const unsigned char *p = e->text + at;
    if (len == 1)
        return push_id(e, e->tok->byte_ids[p[0]]);
    if (len > PIECE_CACHE_LEN)
        return bpe(e, p, len);
    uint64_t h = clt__models_hash_bytes(p, len);
    size_t k = h & e->cache_mask;
    for (; e->cache[k].len; k = (k + 1) & e->cache_mask) {
        const cache_entry *c = &e->cache[k];
        if (c->hash == h && c->len == len && memcmp(e->text + c->at, p, len) == 0) {
            for (size_t i = 0; i < c->n; i++)
                if (!push_id(e, e->ids[c->first + i]))
                    return false;
            return true;
        }
    }
    size_t first = e->n_ids;
    if (!bpe(e, p, len))
        return false;
    if (!cache_room(e))
        return true; /* full: the piece goes uncached */
    for (k = h & e->cache_mask; e->cache[k].len; k = (k + 1) & e->cache_mask)
        ;
    e->cache[k] = (cache_entry){h, at, len, first, e->n_ids - first};
    e->cache_used++;
    return true;
}

/* The ids of text[start .. end), which holds no added token. */
static bool encode_segment(encoder *e, size_t start, size_t end)
{
    for (size_t i = start; i < end;) {
        size_t j = piece_end(e->text, i, end);
        if (!encode_piece(e, i, j - i))
            return false;
        i = j;
    }
    return true;
}

/* The added token at text[i .. n), the longest when several are, or NULL. */
static const models_added *added_at(const clt_tokenizer *tok, const unsigned char *t, size_t i,
                                    size_t n)
{
    if (!tok->added_first[t[i]])
        return NULL;
    for (int k = 0; k < tok->n_added; k++) {
        const models_added *a = &tok->added[k];
        if (a->len <= n - i && memcmp(t + i, a->text, a->len) == 0)
            return a;
    }
    return NULL;
}

/* The ids of the whole text into e->ids: each added token where it is found first (leftmost,
 * then longest, as Hugging Face's AddedVocabulary), the segments between them pre-tokenized. */
static bool encode_text(encoder *e, size_t n)
{
    e->cache = calloc(1024, sizeof *e->cache);
    if (!e->cache)
        return false;
    e->cache_mask = 1023;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        const models_added *a = added_at(e->tok, e->text, i, n);
        if (!a)
            continue;
        if (!encode_segment(e, start, i) || !push_id(e, a->id))
            return false;
        start = i + a->len;
        i = start - 1;
    }
    return encode_segment(e, start, n);
}

static void encoder_free(encoder *e)
{
    free(e->ids);
    free(e->cache);
    free(e->sym);
    free(e->heap);
}

/* Checks the arguments and the text, then encodes it into e (freed by the caller). */
static clt_status encode(const char *fn, const clt_tokenizer *tok, const char *text,
                         size_t length, encoder *e)
{
    memset(e, 0, sizeof *e);
    if (!tok || (!text && length > 0))
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "%s is NULL", tok ? "text" : "tok");
    if (length > INT32_MAX)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn,
                             "the text is %zu bytes, more than the %d of one call", length,
                             INT32_MAX);
    const unsigned char *t = (const unsigned char *)text;
    for (size_t i = 0, len; i < length; i += len) {
        if (t[i] < 0x80) {
            len = 1;
            continue;
        }
        if (clt__models_utf8_next(t + i, length - i, &len) < 0)
            return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn,
                                 "the text is not valid UTF-8 at byte %zu (0x%02X)", i, t[i]);
    }
    e->tok = tok;
    e->text = t;
    if (!encode_text(e, length))
        return clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn, "no memory for the ids of %zu bytes",
                             length);
    return CLT_OK;
}

clt_status clt_tokenizer_encode(const clt_tokenizer *tok, const char *text, size_t length,
                                int64_t *ids, size_t capacity, size_t *count)
{
    const char *fn = "clt_tokenizer_encode";
    if (!count || (!ids && capacity > 0))
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "%s is NULL",
                             count ? "ids" : "count");
    encoder e;
    clt_status st = encode(fn, tok, text, length, &e);
    if (st == CLT_OK) {
        *count = e.n_ids;
        if (ids && e.n_ids > capacity)
            st = clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn,
                               "the text is %zu ids, the buffer holds %zu", e.n_ids, capacity);
        else if (ids && e.n_ids > 0) /* (no ids: e.ids may be NULL) */
            memcpy(ids, e.ids, e.n_ids * sizeof *ids);
    }
    encoder_free(&e);
    return st;
}

clt_tensor *clt_tokenizer_encode_tensor(const clt_tokenizer *tok, const char *text,
                                        size_t length)
{
    encoder e;
    clt_tensor *t = NULL;
    if (encode("clt_tokenizer_encode_tensor", tok, text, length, &e) == CLT_OK) {
        int64_t shape[2] = {1, (int64_t)e.n_ids};
        t = clt_tensor_from_data(2, shape, e.ids, CLT_I64, NULL);
    }
    encoder_free(&e);
    return t;
}

/* --- decoding and lookups ------------------------------------------------------------------ */

static bool known_id(const clt_tokenizer *tok, int64_t id)
{
    return id >= 0 && id < tok->n_ids && tok->tokens[id].text;
}

clt_status clt_tokenizer_decode(const clt_tokenizer *tok, const int64_t *ids, size_t n,
                                char *text, size_t capacity, size_t *length)
{
    const char *fn = "clt_tokenizer_decode";
    if (!tok || (!ids && n > 0) || !length || (!text && capacity > 0))
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "%s is NULL",
                             !tok      ? "tok"
                             : !length ? "length"
                             : !text   ? "text"
                                       : "ids");
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!known_id(tok, ids[i]))
            return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn,
                                 "ids[%zu] is %lld, no token's id (the vocabulary has %lld)", i,
                                 (long long)ids[i], (long long)tok->n_ids);
        total += tok->tokens[ids[i]].len;
    }
    *length = total;
    if (!text)
        return CLT_OK;
    if (capacity < total + 1)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn,
                             "the text is %zu bytes and its NUL, the buffer holds %zu", total,
                             capacity);
    char *out = text;
    for (size_t i = 0; i < n; i++) {
        const models_token *t = &tok->tokens[ids[i]];
        memcpy(out, tok->raw_bytes + t->raw, t->len);
        out += t->len;
    }
    *out = '\0';
    return CLT_OK;
}

int64_t clt_tokenizer_vocab_size(const clt_tokenizer *tok)
{
    return tok ? tok->n_ids : -1;
}

const char *clt_tokenizer_token(const clt_tokenizer *tok, int64_t id)
{
    const char *fn = "clt_tokenizer_token";
    if (!tok)
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "tok is NULL");
    else if (!known_id(tok, id))
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn,
                      "%lld is no token's id (the vocabulary has %lld)", (long long)id,
                      (long long)tok->n_ids);
    else
        return tok->tokens[id].text;
    return NULL;
}

int64_t clt_tokenizer_token_id(const clt_tokenizer *tok, const char *token)
{
    const char *fn = "clt_tokenizer_token_id";
    int32_t id = tok && token ? clt__models_vocab_find(tok, token, strlen(token)) : -1;
    if (!tok || !token)
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "%s is NULL", tok ? "token" : "tok");
    else if (id < 0)
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "no token \"%s\" in the vocabulary", token);
    return id;
}

const char *clt_tokenizer_unicode_version(void)
{
    return clt__models_unicode_version;
}
