/* Loading a clt_tokenizer from Hugging Face's files (tokenizer.json, or vocab.json with
 * merges.txt): reading and checking them, and building the tables that encoding and decoding
 * read (tokenizer_internal.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "tokenizer_internal.h"

#define BAD(ld, ...) clt_set_error(CLT_ERR_INVALID_ARGUMENT, (ld)->fn, __VA_ARGS__)
#define FILE_MAX ((size_t)1 << 30)
#define END_OF_TEXT "<|endoftext|>"

/* A tokenizer being built, and where messages about it go. */
typedef struct loader {
    const char *fn;   /* the public function, named by every message */
    const char *path; /* the file being read */
    clt_tokenizer *tok;
    size_t strings_used, raw_used;
} loader;

/* GPT-2's symbol of byte b: the byte itself for the printable ones of Latin-1, the others in
 * order from U+0100 (OpenAI's bytes_to_unicode). */
static unsigned byte_symbol(unsigned b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))
        return b;
    unsigned n = 0;
    for (unsigned c = 0; c < b; c++)
        n += !((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF));
    return 0x100 + n;
}

static size_t utf8_put(unsigned cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | cp >> 6); /* the symbols are below U+0800 */
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

static clt_status read_file(const char *fn, const char *path, char **text, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return clt_set_error(CLT_ERR_IO, fn, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    clt_status st = CLT_OK;
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap || ferror(f))
            break;
        char *grown = cap < FILE_MAX ? realloc(buf, 2 * cap + 1) : NULL;
        if (!grown && cap >= FILE_MAX) {
            st = clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "%s: larger than %zu bytes", path,
                               FILE_MAX);
            break;
        }
        if (!grown)
            free(buf);
        buf = grown;
        cap *= 2;
    }
    if (!buf)
        st = clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn, "%s: no memory to read it", path);
    else if (st == CLT_OK && ferror(f))
        st = clt_set_error(CLT_ERR_IO, fn, "%s: cannot read: %s", path, strerror(errno));
    fclose(f);
    if (st != CLT_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *text = buf;
    *size = n;
    return CLT_OK;
}

static clt_status read_json(const loader *ld, cJSON **json)
{
    char *text;
    size_t size;
    clt_status st = read_file(ld->fn, ld->path, &text, &size);
    if (st != CLT_OK)
        return st;
    const char *end = NULL;
    *json = cJSON_ParseWithLengthOpts(text, size, &end, false);
    if (!*json)
        st = BAD(ld, "%s: not valid JSON (at byte %td)", ld->path, end ? end - text : 0);
    free(text);
    return st;
}

/* A whole-number id from 0 to MODELS_TOKEN_ID_MAX in *id, or a message naming `what`. */
static clt_status json_id(const loader *ld, const cJSON *v, const char *what, int32_t *id)
{
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (!(d >= 0 && d <= MODELS_TOKEN_ID_MAX && d == floor(d)))
        return BAD(ld, "%s: %s has id %s, not a whole number from 0 to %d", ld->path, what,
                   cJSON_IsNumber(v) ? "out of range" : "missing or not a number",
                   MODELS_TOKEN_ID_MAX);
    *id = (int32_t)d;
    return CLT_OK;
}

static void vocab_insert(clt_tokenizer *tok, int32_t id)
{
    const char *s = tok->tokens[id].text;
    uint64_t i = clt__models_hash_bytes(s, strlen(s)) & tok->vocab_mask;
    while (tok->vocab[i] >= 0)
        i = (i + 1) & tok->vocab_mask;
    tok->vocab[i] = id;
}

/* Room for n_strings tokens of `bytes` bytes of text in all, ids up to max_id. */
static clt_status allocate(loader *ld, size_t n_strings, size_t bytes, int32_t max_id)
{
    clt_tokenizer *tok = ld->tok;
    size_t slots = 16;
    while (slots < 2 * n_strings)
        slots *= 2;
    tok->n_ids = (int64_t)max_id + 1;
    tok->tokens = calloc((size_t)tok->n_ids, sizeof *tok->tokens);
    tok->strings = malloc(bytes + 1);
    tok->raw_bytes = malloc(bytes + 1);
    tok->vocab = malloc(slots * sizeof *tok->vocab);
    if (!tok->tokens || !tok->strings || !tok->raw_bytes || !tok->vocab)
        return clt_set_error(CLT_ERR_OUT_OF_MEMORY, ld->fn, "%s: no memory for %zu tokens",
                             ld->path, n_strings);
    memset(tok->vocab, 0xFF, slots * sizeof *tok->vocab);
    tok->vocab_mask = slots - 1;
    return CLT_OK;
}

/* The bytes token `id` decodes to: each character's byte when all of them are byte symbols,
 * else the token's own UTF-8 text (as Hugging Face's ByteLevel decoder does). */
static void set_raw(loader *ld, int32_t id, const int16_t *symbol_bytes, bool literal)
{
    clt_tokenizer *tok = ld->tok;
    const unsigned char *s = (const unsigned char *)tok->tokens[id].text;
    size_t n = strlen((const char *)s), len = 1, k = 0;
    unsigned char *out = tok->raw_bytes + ld->raw_used;
    for (size_t i = 0; !literal && i < n; i += len) {
        long cp = clt__models_utf8_next(s + i, n - i, &len);
        if (cp < 0 || cp >= 0x144 || symbol_bytes[cp] < 0)
            literal = true;
        else
            out[k++] = (unsigned char)symbol_bytes[cp];
    }
    if (literal) {
        memcpy(out, s, n);
        k = n;
    }
    tok->tokens[id].raw = (uint32_t)ld->raw_used;
    tok->tokens[id].len = (uint32_t)k;
    ld->raw_used += k;
}

/* Token `id` spelled s, added to the vocabulary; a message when the id or the text is taken. */
static clt_status add_token(loader *ld, int32_t id, const char *s, const int16_t *symbol_bytes,
                            bool literal)
{
    clt_tokenizer *tok = ld->tok;
    size_t n = strlen(s);
    if (tok->tokens[id].text)
        return BAD(ld, "%s: \"%s\" and \"%s\" both have id %d", ld->path, tok->tokens[id].text,
                   s, (int)id);
    int32_t other = clt__models_vocab_find(tok, s, n);
    if (other >= 0)
        return BAD(ld, "%s: \"%s\" has two ids, %d and %d", ld->path, s, (int)other, (int)id);
    char *copy = tok->strings + ld->strings_used;
    memcpy(copy, s, n + 1);
    ld->strings_used += n + 1;
    tok->tokens[id].text = copy;
    vocab_insert(tok, id);
    set_raw(ld, id, symbol_bytes, literal);
    return CLT_OK;
}

/* The vocabulary of `vocab` (token: id) and the added tokens of `added` (Hugging Face's
 * added_tokens, or NULL), which may repeat vocabulary tokens with their ids. */
static clt_status add_vocab(loader *ld, const cJSON *vocab, const cJSON *added)
{
    int16_t symbol_bytes[0x144];
    memset(symbol_bytes, 0xFF, sizeof symbol_bytes);
    for (unsigned b = 0; b < 256; b++)
        symbol_bytes[byte_symbol(b)] = (int16_t)b;
    size_t n = 0, bytes = 0;
    int32_t id, max_id = 0;
    clt_status st;
    const cJSON *v;
    cJSON_ArrayForEach (v, vocab) {
        if ((st = json_id(ld, v, v->string, &id)) != CLT_OK)
            return st;
        max_id = id > max_id ? id : max_id;
        bytes += strlen(v->string) + 1;
        n++;
    }
    cJSON_ArrayForEach (v, added) {
        const cJSON *id_v = cJSON_GetObjectItemCaseSensitive(v, "id");
        const char *content =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "content"));
        if ((st = json_id(ld, id_v, content ? content : "an added token", &id)) != CLT_OK)
            return st;
        max_id = id > max_id ? id : max_id;
        bytes += strlen(content) + 1;
        n++;
    }
    if ((st = allocate(ld, n, bytes, max_id)) != CLT_OK)
        return st;
    cJSON_ArrayForEach (v, vocab) {
        json_id(ld, v, v->string, &id);
        if ((st = add_token(ld, id, v->string, symbol_bytes, false)) != CLT_OK)
            return st;
    }
    cJSON_ArrayForEach (v, added) {
        const char *content =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "content"));
        json_id(ld, cJSON_GetObjectItemCaseSensitive(v, "id"), content, &id);
        const char *known = ld->tok->tokens[id].text;
        if (known && strcmp(known, content) != 0)
            return BAD(ld, "%s: added token \"%s\" has id %d, the vocabulary's \"%s\"",
                       ld->path, content, (int)id, known);
        if (!known && (st = add_token(ld, id, content, symbol_bytes, true)) != CLT_OK)
            return st;
    }
    for (unsigned b = 0; b < 256; b++) {
        char s[3];
        id = clt__models_vocab_find(ld->tok, s, utf8_put(byte_symbol(b), s));
        if (id < 0)
            return BAD(ld, "%s: the vocabulary has no token for byte 0x%02X (\"%.*s\")",
                       ld->path, b, (int)utf8_put(byte_symbol(b), s), s);
        ld->tok->byte_ids[b] = id;
    }
    return CLT_OK;
}

static clt_status allocate_merges(loader *ld, size_t n)
{
    size_t slots = 16;
    while (slots < 2 * n)
        slots *= 2;
    ld->tok->merges = malloc(slots * sizeof *ld->tok->merges);
    if (!ld->tok->merges)
        return clt_set_error(CLT_ERR_OUT_OF_MEMORY, ld->fn, "%s: no memory for %zu merges",
                             ld->path, n);
    for (size_t i = 0; i < slots; i++)
        ld->tok->merges[i].pair = UINT64_MAX;
    ld->tok->merge_mask = slots - 1;
    return CLT_OK;
}

/* Merge `rank` of a[0 .. na) and b[0 .. nb), `where` in the file; a later merge of the same
 * pair replaces an earlier one, as in Hugging Face's tokenizers. */
static clt_status add_merge(loader *ld, const char *where, uint32_t rank, const char *a,
                            size_t na, const char *b, size_t nb)
{
    clt_tokenizer *tok = ld->tok;
    char *ab = malloc(na + nb + 1);
    if (!ab)
        return clt_set_error(CLT_ERR_OUT_OF_MEMORY, ld->fn, "%s: no memory", ld->path);
    memcpy(ab, a, na);
    memcpy(ab + na, b, nb);
    ab[na + nb] = '\0';
    int32_t left = clt__models_vocab_find(tok, a, na),
            right = clt__models_vocab_find(tok, b, nb);
    int32_t merged = clt__models_vocab_find(tok, ab, na + nb);
    clt_status st = CLT_OK;
    if (left < 0 || right < 0 || merged < 0) {
        const char *missing = left < 0 ? a : right < 0 ? b : ab;
        int len = (int)(left < 0 ? na : right < 0 ? nb : na + nb);
        st = BAD(ld, "%s: %s, the merge \"%.*s %.*s\": \"%.*s\" is not in the vocabulary",
                 ld->path, where, (int)na, a, (int)nb, b, len, missing);
    } else {
        uint64_t pair = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
        uint64_t i = (pair * 0x9E3779B97F4A7C15u) >> 20 & tok->merge_mask;
        while (tok->merges[i].pair != UINT64_MAX && tok->merges[i].pair != pair)
            i = (i + 1) & tok->merge_mask;
        tok->merges[i] = (models_merge){pair, rank, merged};
    }
    free(ab);
    return st;
}

/* The merges of a merges.txt, a line "a b" each. */
static clt_status merges_from_text(loader *ld, const char *text, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < size; i++)
        n += text[i] == '\n';
    clt_status st = allocate_merges(ld, n + 1);
    uint32_t rank = 0;
    size_t line_no = 0;
    for (const char *line = text; st == CLT_OK && line < text + size; line_no++) {
        const char *end = memchr(line, '\n', (size_t)(text + size - line));
        const char *next = end ? end + 1 : text + size;
        end = end ? end : text + size;
        size_t len = (size_t)(end - line);
        len -= len > 0 && line[len - 1] == '\r';
        const char *space = memchr(line, ' ', len);
        char where[64];
        snprintf(where, sizeof where, "line %zu", line_no + 1);
        if (len >= 8 && memcmp(line, "#version", 8) == 0)
            ;
        else if (!space || memchr(space + 1, ' ', (size_t)(line + len - space - 1)))
            st = BAD(ld, "%s: %s is \"%.*s\", not two tokens separated by a space", ld->path,
                     where, (int)(len < 80 ? len : 80), line);
        else
            st = add_merge(ld, where, rank++, line, (size_t)(space - line), space + 1,
                           (size_t)(line + len - space - 1));
        line = next;
    }
    return st;
}

/* The merges of a tokenizer.json's model.merges: strings "a b" or pairs ["a", "b"]. */
static clt_status merges_from_json(loader *ld, const cJSON *merges)
{
    clt_status st = allocate_merges(ld, (size_t)cJSON_GetArraySize(merges));
    uint32_t rank = 0;
    const cJSON *m;
    cJSON_ArrayForEach (m, merges) {
        if (st != CLT_OK)
            break;
        char where[64];
        snprintf(where, sizeof where, "model.merges[%u]", (unsigned)rank);
        const char *s = cJSON_GetStringValue(m), *space = s ? strchr(s, ' ') : NULL;
        const char *a = cJSON_GetStringValue(cJSON_GetArrayItem(m, 0));
        const char *b = cJSON_GetStringValue(cJSON_GetArrayItem(m, 1));
        if (space && !strchr(space + 1, ' '))
            st = add_merge(ld, where, rank, s, (size_t)(space - s), space + 1,
                           strlen(space + 1));
        else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && a && b)
            st = add_merge(ld, where, rank, a, strlen(a), b, strlen(b));
        else
            st = BAD(ld, "%s: %s is not a string \"a b\" or a pair of strings [\"a\", \"b\"]",
                     ld->path, where);
        rank++;
    }
    return st;
}

static int longest_first(const void *a, const void *b)
{
    size_t na = ((const models_added *)a)->len, nb = ((const models_added *)b)->len;
    return na < nb ? 1 : na > nb ? -1 : 0;
}

/* The added tokens, matched before pre-tokenization: from a tokenizer.json, those its
 * added_tokens list (`added`, or NULL for none); from vocab.json, <|endoftext|> when the
 * vocabulary has it. */
static clt_status set_added(loader *ld, const cJSON *added, bool from_json)
{
    clt_tokenizer *tok = ld->tok;
    int n = added ? cJSON_GetArraySize(added) : 0;
    tok->added = calloc((size_t)n + 1, sizeof *tok->added);
    if (!tok->added)
        return clt_set_error(CLT_ERR_OUT_OF_MEMORY, ld->fn, "%s: no memory", ld->path);
    int32_t eot = clt__models_vocab_find(tok, END_OF_TEXT, strlen(END_OF_TEXT));
    if (!from_json && eot >= 0)
        tok->added[tok->n_added++] =
            (models_added){tok->tokens[eot].text, strlen(END_OF_TEXT), eot};
    const cJSON *v;
    cJSON_ArrayForEach (v, added) {
        int32_t id;
        json_id(ld, cJSON_GetObjectItemCaseSensitive(v, "id"), "", &id);
        const char *text = tok->tokens[id].text;
        tok->added[tok->n_added++] = (models_added){text, strlen(text), id};
    }
    qsort(tok->added, (size_t)tok->n_added, sizeof *tok->added, longest_first);
    for (int i = 0; i < tok->n_added; i++)
        tok->added_first[(unsigned char)tok->added[i].text[0]] = 1;
    return CLT_OK;
}

/* The field `name` of obj as a string, "null" when it is null or absent (for messages). */
static const char *json_str(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) ? v->valuestring : !v || cJSON_IsNull(v) ? "null" : "not a string";
}

/* Whether the field `name` of obj is true (false when absent: fallback). */
static bool json_true(const cJSON *obj, const char *name, bool fallback)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return v ? cJSON_IsTrue(v) : fallback;
}

/* The checks of a tokenizer.json's model: a byte-level BPE without the options it cannot
 * follow. */
static clt_status check_model(loader *ld, const cJSON *model)
{
    static const char *const strings[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    static const char *const flags[] = {"byte_fallback", "ignore_merges"};
    if (!cJSON_IsObject(model))
        return BAD(ld, "%s: model is missing or not an object", ld->path);
    if (strcmp(json_str(model, "type"), "BPE") != 0)
        return BAD(ld, "%s: model.type is \"%s\": only \"BPE\" is supported", ld->path,
                   json_str(model, "type"));
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (dropout && !cJSON_IsNull(dropout))
        return BAD(ld, "%s: model.dropout is %g: BPE dropout is not supported", ld->path,
                   cJSON_IsNumber(dropout) ? dropout->valuedouble : NAN);
    for (int i = 0; i < 2; i++) {
        const char *s = json_str(model, strings[i]);
        if (strcmp(s, "null") != 0 && strcmp(s, "") != 0)
            return BAD(ld, "%s: model.%s is \"%s\": not supported (byte-level BPE has none)",
                       ld->path, strings[i], s);
    }
    for (int i = 0; i < 2; i++)
        if (json_true(model, flags[i], false))
            return BAD(ld, "%s: model.%s is true: not supported", ld->path, flags[i]);
    if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(model, "vocab")))
        return BAD(ld, "%s: model.vocab is missing or not an object", ld->path);
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(model, "merges")))
        return BAD(ld, "%s: model.merges is missing or not an array", ld->path);
    return CLT_OK;
}

/* The checks of a tokenizer.json around its model: no normalizer, GPT-2's ByteLevel
 * pre-tokenizer and decoder, added tokens without the options it cannot follow. */
static clt_status check_pipeline(loader *ld, const cJSON *root)
{
    const cJSON *normalizer = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    if (normalizer && !cJSON_IsNull(normalizer))
        return BAD(ld, "%s: normalizer.type is \"%s\": no normalizer is supported", ld->path,
                   json_str(normalizer, "type"));
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    if (!cJSON_IsObject(pre))
        return BAD(ld, "%s: pre_tokenizer is missing or null: only \"ByteLevel\" is supported",
                   ld->path);
    if (strcmp(json_str(pre, "type"), "ByteLevel") != 0)
        return BAD(ld, "%s: pre_tokenizer.type is \"%s\": only \"ByteLevel\" is supported",
                   ld->path, json_str(pre, "type"));
    if (json_true(pre, "add_prefix_space", false))
        return BAD(ld, "%s: pre_tokenizer.add_prefix_space is true: not supported", ld->path);
    if (!json_true(pre, "use_regex", true))
        return BAD(ld, "%s: pre_tokenizer.use_regex is false: not supported", ld->path);
    const cJSON *decoder = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    if (decoder && !cJSON_IsNull(decoder) && strcmp(json_str(decoder, "type"), "ByteLevel") != 0)
        return BAD(ld, "%s: decoder.type is \"%s\": only \"ByteLevel\" is supported", ld->path,
                   json_str(decoder, "type"));
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (added && !cJSON_IsArray(added))
        return BAD(ld, "%s: added_tokens is not an array", ld->path);
    static const char *const flags[] = {"single_word", "lstrip", "rstrip"};
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach (v, added) {
        const char *content =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "content"));
        if (!content || !*content)
            return BAD(ld, "%s: added_tokens[%d].content is missing or empty", ld->path, i);
        for (int k = 0; k < 3; k++)
            if (json_true(v, flags[k], false))
                return BAD(ld, "%s: added_tokens[%d] (\"%s\"): %s is true: not supported",
                           ld->path, i, content, flags[k]);
        i++;
    }
    return CLT_OK;
}

static clt_tokenizer *finish(loader *ld, clt_status st)
{
    if (st == CLT_OK)
        return ld->tok;
    clt_tokenizer_free(ld->tok);
    return NULL;
}

static clt_tokenizer *load_json(const char *fn, const char *path)
{
    loader ld = {fn, path, NULL, 0, 0};
    cJSON *root = NULL;
    clt_status st = read_json(&ld, &root);
    if (st != CLT_OK)
        return NULL;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!cJSON_IsObject(root))
        st = BAD(&ld, "%s: not a JSON object", path);
    if (st == CLT_OK && (st = check_model(&ld, model)) == CLT_OK)
        st = check_pipeline(&ld, root);
    if (st == CLT_OK && !(ld.tok = calloc(1, sizeof *ld.tok)))
        st = clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn, "no memory for a tokenizer");
    if (st == CLT_OK)
        st = add_vocab(&ld, cJSON_GetObjectItemCaseSensitive(model, "vocab"), added);
    if (st == CLT_OK)
        st = merges_from_json(&ld, cJSON_GetObjectItemCaseSensitive(model, "merges"));
    if (st == CLT_OK)
        st = set_added(&ld, added, true);
    cJSON_Delete(root);
    return finish(&ld, st);
}

static clt_tokenizer *load_files(const char *fn, const char *vocab_path, const char *merges_path)
{
    loader ld = {fn, vocab_path, NULL, 0, 0};
    cJSON *vocab = NULL;
    char *merges = NULL;
    size_t size = 0;
    clt_status st = read_json(&ld, &vocab);
    if (st == CLT_OK && !cJSON_IsObject(vocab))
        st = BAD(&ld, "%s: not a JSON object of token: id", vocab_path);
    if (st == CLT_OK && !(ld.tok = calloc(1, sizeof *ld.tok)))
        st = clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn, "no memory for a tokenizer");
    if (st == CLT_OK)
        st = add_vocab(&ld, vocab, NULL);
    ld.path = merges_path;
    if (st == CLT_OK)
        st = read_file(fn, merges_path, &merges, &size);
    if (st == CLT_OK)
        st = merges_from_text(&ld, merges, size);
    if (st == CLT_OK)
        st = set_added(&ld, NULL, false);
    cJSON_Delete(vocab);
    free(merges);
    return finish(&ld, st);
}

clt_tokenizer *clt_tokenizer_load_json(const char *path)
{
    if (!path) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_tokenizer_load_json", "path is NULL");
        return NULL;
    }
    return load_json("clt_tokenizer_load_json", path);
}

clt_tokenizer *clt_tokenizer_load_files(const char *vocab_path, const char *merges_path)
{
    if (!vocab_path || !merges_path) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, "clt_tokenizer_load_files", "%s is NULL",
                      vocab_path ? "merges_path" : "vocab_path");
        return NULL;
    }
    return load_files("clt_tokenizer_load_files", vocab_path, merges_path);
}

clt_tokenizer *clt_tokenizer_load(const char *folder)
{
    const char *fn = "clt_tokenizer_load";
    if (!folder) {
        clt_set_error(CLT_ERR_INVALID_ARGUMENT, fn, "folder is NULL");
        return NULL;
    }
    size_t n = strlen(folder) + sizeof "/tokenizer.json";
    char *json = malloc(n), *vocab = malloc(n), *merges = malloc(n);
    clt_tokenizer *tok = NULL;
    if (!json || !vocab || !merges) {
        clt_set_error(CLT_ERR_OUT_OF_MEMORY, fn, "no memory for a path");
        goto done;
    }
    snprintf(json, n, "%s/tokenizer.json", folder);
    snprintf(vocab, n, "%s/vocab.json", folder);
    snprintf(merges, n, "%s/merges.txt", folder);
    FILE *f;
    const char *use = (f = fopen(json, "rb")) ? json : (f = fopen(vocab, "rb")) ? vocab : NULL;
    if (f)
        fclose(f);
    if (!use)
        clt_set_error(CLT_ERR_IO, fn, "%s: holds neither tokenizer.json nor vocab.json (%s)",
                      folder, strerror(errno));
    else if (use == json)
        tok = load_json(fn, json);
    else
        tok = load_files(fn, vocab, merges);
done:
    free(json);
    free(vocab);
    free(merges);
    return tok;
}

void clt_tokenizer_free(clt_tokenizer *tok)
{
    if (!tok)
        return;
    free(tok->tokens);
    free(tok->strings);
    free(tok->raw_bytes);
    free(tok->vocab);
    free(tok->merges);
    free(tok->added);
    free(tok);
}
