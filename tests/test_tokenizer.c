/* The tokenizer suite: GPT-2's byte-level BPE tokenizer of cltensor_models against Hugging Face's
 * GPT2TokenizerFast, whose ids for a small tokenizer trained on tests/data/tokenizer/corpus.txt
 * (every line, every paragraph, the whole corpus, edge cases and random texts:
 * make_tokenizer.py there wrote them) it must give exactly, from tokenizer.json and from
 * vocab.json + merges.txt; decoding that gives the text back byte for byte, whole and token by
 * token; and the errors of bad files, bad text, unknown ids and short buffers. The tokenizer
 * has no device: its tests run once. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor/models/tokenizer.h>

#include "helpers.h"

#define DATA(name) CLT_TEST_DATA_DIR "/tokenizer/" name

static char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    buf[n] = '\0';
    if (size)
        *size = n;
    return buf;
}

static cJSON *read_reference(void)
{
    char *text = read_all(DATA("reference.json"), NULL);
    cJSON *ref = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(ref);
    return ref;
}

/* Decodes ids[0 .. n) whole and one at a time, both of which must give text[0 .. len). */
static void check_decode(const clt_tokenizer *tok, const char *name, const int64_t *ids,
                         size_t n, const char *text, size_t len)
{
    char *back = malloc(len + 1);
    size_t got = 0;
    ck_assert_msg(clt_tokenizer_decode(tok, ids, n, back, len + 1, &got) == CLT_OK, "%s: %s",
                  name, clt_last_error());
    ck_assert_msg(got == len && memcmp(back, text, len) == 0 && back[len] == '\0',
                  "%s: decodes to %zu bytes, not the %zu of the text", name, got, len);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        char piece[256];
        ck_assert_msg(clt_tokenizer_decode(tok, &ids[i], 1, piece, sizeof piece, &got) == CLT_OK,
                      "%s: %s", name, clt_last_error());
        ck_assert_msg(at + got <= len && memcmp(piece, text + at, got) == 0,
                      "%s: token %zu (id %lld) decodes to bytes not at %zu of the text", name,
                      i, (long long)ids[i], at);
        at += got;
    }
    ck_assert_msg(at == len, "%s: the tokens decode to %zu bytes, not %zu", name, at, len);
    free(back);
}

/* Every case of the reference: its ids exactly, and its text back from them. */
static void check_reference(const clt_tokenizer *tok)
{
    cJSON *ref = read_reference();
    const cJSON *c;
    int cases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(ref, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const cJSON *want = cJSON_GetObjectItem(c, "ids");
        size_t len = strlen(text), n = 0, counted = 0;
        int64_t *ids = malloc((len + 1) * sizeof *ids);
        ck_assert_msg(clt_tokenizer_encode(tok, text, len, ids, len, &n) == CLT_OK, "%s: %s",
                      name, clt_last_error());
        ck_assert_msg(n == (size_t)cJSON_GetArraySize(want), "%s: %zu ids, Hugging Face's %d",
                      name, n, cJSON_GetArraySize(want));
        for (size_t i = 0; i < n; i++) {
            long long w = (long long)cJSON_GetArrayItem(want, (int)i)->valuedouble;
            ck_assert_msg(ids[i] == w, "%s: id %zu is %lld, Hugging Face's %lld", name, i,
                          (long long)ids[i], w);
        }
        ck_assert_int_eq(clt_tokenizer_encode(tok, text, len, NULL, 0, &counted), CLT_OK);
        ck_assert_uint_eq(counted, n);
        check_decode(tok, name, ids, n, text, len);
        free(ids);
        cases++;
    }
    ck_assert_int_ge(cases, 500);
    ck_assert_int_eq(clt_tokenizer_vocab_size(tok),
                     (int64_t)cJSON_GetObjectItem(ref, "vocab_size")->valuedouble);
    cJSON_Delete(ref);
}

START_TEST(test_tokenizer_reference_json)
{
    clt_tokenizer *tok = clt_tokenizer_load_json(DATA("tokenizer.json"));
    ck_assert_msg(tok != NULL, "%s", clt_last_error());
    check_reference(tok);
    clt_tokenizer_free(tok);
}
END_TEST

START_TEST(test_tokenizer_reference_files)
{
    clt_tokenizer *tok = clt_tokenizer_load_files(DATA("vocab.json"), DATA("merges.txt"));
    ck_assert_msg(tok != NULL, "%s", clt_last_error());
    check_reference(tok);
    clt_tokenizer_free(tok);
}
END_TEST

/* root written as tokenizer.json in a new temporary folder, whose path goes into path. */
static void write_json(const cJSON *root, char *path, size_t size)
{
    char *printed = cJSON_PrintUnformatted(root);
    const char *dir = test_temp_dir();
    test_write_file(dir, "tokenizer.json", printed);
    snprintf(path, size, "%s/tokenizer.json", dir);
    free(printed);
}

/* tokenizer.json with its merges written as strings "a b", Hugging Face's older form. */
START_TEST(test_tokenizer_merges_as_strings)
{
    char *text = read_all(DATA("tokenizer.json"), NULL);
    cJSON *root = cJSON_Parse(text);
    cJSON *merges = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "model"), "merges");
    cJSON *strings = cJSON_CreateArray();
    const cJSON *m;
    cJSON_ArrayForEach(m, merges) {
        char line[256];
        snprintf(line, sizeof line, "%s %s", cJSON_GetArrayItem(m, 0)->valuestring,
                 cJSON_GetArrayItem(m, 1)->valuestring);
        cJSON_AddItemToArray(strings, cJSON_CreateString(line));
    }
    ck_assert_int_gt(cJSON_GetArraySize(strings), 1000);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(root, "model"), "merges", strings);
    char path[600];
    write_json(root, path, sizeof path);
    clt_tokenizer *tok = clt_tokenizer_load_json(path);
    ck_assert_msg(tok != NULL, "%s", clt_last_error());
    check_reference(tok);
    clt_tokenizer_free(tok);
    cJSON_Delete(root);
    free(text);
}
END_TEST

/* The whole corpus as the (1, T) tensor of the models, equal to the buffer's ids; empty text as
 * (1, 0). */
START_TEST(test_tokenizer_tensor)
{
    clt_tokenizer *tok = clt_tokenizer_load(DATA(""));
    ck_assert_msg(tok != NULL, "%s", clt_last_error());
    size_t len, n;
    char *text = read_all(DATA("corpus.txt"), &len);
    int64_t *ids = malloc(len * sizeof *ids);
    ck_assert_int_eq(clt_tokenizer_encode(tok, text, len, ids, len, &n), CLT_OK);
    clt_tensor *t = clt_tokenizer_encode_tensor(tok, text, len);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_dtype(t), CLT_I64);
    ck_assert_int_eq(clt_tensor_ndim(t), 2);
    ck_assert_int_eq(clt_tensor_shape(t)[0], 1);
    ck_assert_int_eq(clt_tensor_shape(t)[1], (int64_t)n);
    ck_assert(memcmp(clt_tensor_data(t), ids, n * sizeof *ids) == 0);
    clt_tensor_release(t);
    t = clt_tokenizer_encode_tensor(tok, NULL, 0);
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tensor_shape(t)[0], 1);
    ck_assert_int_eq(clt_tensor_shape(t)[1], 0);
    clt_tensor_release(t);
    free(ids);
    free(text);
    clt_tokenizer_free(tok);
}
END_TEST

/* Tokens and ids both ways; <|endoftext|>, the added token; NUL bytes in the text. */
START_TEST(test_tokenizer_tokens)
{
    clt_tokenizer *tok = clt_tokenizer_load(DATA(""));
    ck_assert_msg(tok != NULL, "%s", clt_last_error());
    char *vocab_text = read_all(DATA("vocab.json"), NULL);
    cJSON *vocab = cJSON_Parse(vocab_text);
    const cJSON *v;
    cJSON_ArrayForEach(v, vocab) {
        int64_t id = (int64_t)v->valuedouble;
        ck_assert_int_eq(clt_tokenizer_token_id(tok, v->string), id);
        ck_assert_str_eq(clt_tokenizer_token(tok, id), v->string);
    }
    int64_t eot = clt_tokenizer_token_id(tok, "<|endoftext|>");
    ck_assert_int_eq(eot, (int64_t)cJSON_GetObjectItem(vocab, "<|endoftext|>")->valuedouble);
    char out[64];
    size_t n;
    ck_assert_int_eq(clt_tokenizer_decode(tok, &eot, 1, out, sizeof out, &n), CLT_OK);
    ck_assert_str_eq(out, "<|endoftext|>");
    /* a NUL byte is a character of its own class: its byte's symbol, U+0100 */
    int64_t ids[8],
        want[3] = {clt_tokenizer_token_id(tok, "a"), clt_tokenizer_token_id(tok, "\xc4\x80"),
                   clt_tokenizer_token_id(tok, "b")};
    ck_assert_int_eq(clt_tokenizer_encode(tok, "a\0b", 3, ids, 8, &n), CLT_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert(memcmp(ids, want, sizeof want) == 0);
    ck_assert_int_eq(clt_tokenizer_decode(tok, ids, 3, out, sizeof out, &n), CLT_OK);
    ck_assert(n == 3 && memcmp(out, "a\0b", 4) == 0);
    ck_assert_str_eq(clt_tokenizer_unicode_version(), "14.0.0");
    cJSON_Delete(vocab);
    free(vocab_text);
    clt_tokenizer_free(tok);
}
END_TEST

/* An added token that is not in the model's vocabulary: a new id, matched anywhere, decoded to
 * its content; of two added tokens at one place the longer is taken. */
START_TEST(test_tokenizer_added_tokens)
{
    char *text = read_all(DATA("tokenizer.json"), NULL);
    cJSON *root = cJSON_Parse(text);
    cJSON *added = cJSON_GetObjectItem(root, "added_tokens");
    int64_t size = 1500;
    const char *extra[] = {"<pad>", "<|end", "\xe4\xb8\xad\xe6\x96\x87 x"};
    for (int i = 0; i < 3; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "id", (double)(size + i));
        cJSON_AddStringToObject(t, "content", extra[i]);
        cJSON_AddBoolToObject(t, "special", i == 0);
        cJSON_AddItemToArray(added, t);
    }
    char path[600];
    write_json(root, path, sizeof path);
    clt_tokenizer *tok = clt_tokenizer_load_json(path), *plain = clt_tokenizer_load(DATA(""));
    ck_assert_msg(tok != NULL && plain != NULL, "%s", clt_last_error());
    ck_assert_int_eq(clt_tokenizer_vocab_size(tok), size + 3);
    ck_assert_int_eq(clt_tokenizer_token_id(tok, "<pad>"), size);
    ck_assert_str_eq(clt_tokenizer_token(tok, size + 2), extra[2]);

    /* "a<pad>b<|endoftext|><|end中文 x!": the plain tokenizer's ids of the pieces between */
    const char *input = "a<pad>b<|endoftext|><|end\xe4\xb8\xad\xe6\x96\x87 x!";
    int64_t want[16], ids[16];
    size_t n = 0, k;
    int64_t eot = clt_tokenizer_token_id(plain, "<|endoftext|>");
    ck_assert_int_eq(clt_tokenizer_encode(plain, "a", 1, want, 16, &k), CLT_OK);
    n += k;
    want[n++] = size;
    ck_assert_int_eq(clt_tokenizer_encode(plain, "b", 1, want + n, 16 - n, &k), CLT_OK);
    n += k;
    want[n++] = eot;
    want[n++] = size + 1;
    want[n++] = size + 2;
    want[n++] = clt_tokenizer_token_id(plain, "!");
    ck_assert_int_eq(clt_tokenizer_encode(tok, input, strlen(input), ids, 16, &k), CLT_OK);
    ck_assert_uint_eq(k, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(ids[i], want[i]);
    check_decode(tok, "added tokens", ids, n, input, strlen(input));
    clt_tokenizer_free(tok);
    clt_tokenizer_free(plain);
    cJSON_Delete(root);
    free(text);
}
END_TEST

/* A folder: tokenizer.json first, else vocab.json + merges.txt, else an error. */
START_TEST(test_tokenizer_load_folder)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s", test_temp_dir());
    clt_tokenizer *tok = clt_tokenizer_load(dir);
    ck_assert_ptr_null(tok);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_IO);
    ck_assert_msg(strstr(clt_last_error(), "clt_tokenizer_load: ") == clt_last_error() &&
                      strstr(clt_last_error(), "holds neither tokenizer.json nor vocab.json"),
                  "%s", clt_last_error());
    const char *names[] = {"vocab.json", "merges.txt"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, CLT_TEST_DATA_DIR "/tokenizer/%s", names[i]);
        char *text = read_all(path, NULL);
        test_write_file(dir, names[i], text);
        free(text);
    }
    tok = clt_tokenizer_load(dir);
    ck_assert_msg(tok != NULL, "%s", clt_last_error());
    int64_t ids[64];
    size_t n;
    ck_assert_int_eq(clt_tokenizer_encode(tok, "It's <|endoftext|>", 18, ids, 64, &n), CLT_OK);
    ck_assert_int_eq(ids[n - 1], clt_tokenizer_token_id(tok, "<|endoftext|>"));
    clt_tokenizer_free(tok);
    /* merges.txt missing */
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    remove(path);
    ck_assert_ptr_null(clt_tokenizer_load(dir));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_IO);
    ck_assert_msg(strstr(clt_last_error(), "clt_tokenizer_load: ") == clt_last_error() &&
                      strstr(clt_last_error(), "merges.txt: cannot open"),
                  "%s", clt_last_error());
}
END_TEST

/* path: the reference tokenizer.json with `from` replaced by `to` (once), in dir. */
static void write_edited(const char *dir, const char *from, const char *to, char *path,
                         size_t size)
{
    char *text = read_all(DATA("tokenizer.json"), NULL);
    char *at = strstr(text, from);
    ck_assert_msg(at != NULL, "tokenizer.json has no %s", from);
    size_t head = (size_t)(at - text), n = strlen(text) - strlen(from) + strlen(to);
    char *edited = malloc(n + 1);
    memcpy(edited, text, head);
    strcpy(edited + head, to);
    strcat(edited, at + strlen(from));
    test_write_file(dir, "tokenizer.json", edited);
    snprintf(path, size, "%s/tokenizer.json", dir);
    free(edited);
    free(text);
}

/* Files the tokenizer cannot follow, each refused with a message naming the field and value. */
START_TEST(test_tokenizer_refused_files)
{
    static const struct {
        const char *from, *to, *message;
    } cases[] = {
        {"\"type\": \"BPE\"", "\"type\": \"WordPiece\"",
         "model.type is \"WordPiece\": only \"BPE\" is supported"},
        {"\"type\": \"ByteLevel\"", "\"type\": \"Metaspace\"",
         "pre_tokenizer.type is \"Metaspace\": only \"ByteLevel\" is supported"},
        {"\"add_prefix_space\": false", "\"add_prefix_space\": true",
         "pre_tokenizer.add_prefix_space is true: not supported"},
        {"\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}",
         "normalizer.type is \"NFC\": no normalizer is supported"},
        {"\"dropout\": null", "\"dropout\": 0.1", "model.dropout is 0.1"},
        {"\"end_of_word_suffix\": null", "\"end_of_word_suffix\": \"</w>\"",
         "model.end_of_word_suffix is \"</w>\""},
        {"\"byte_fallback\": false", "\"byte_fallback\": true", "model.byte_fallback is true"},
        {"\"lstrip\": false", "\"lstrip\": true",
         "added_tokens[0] (\"<|endoftext|>\"): lstrip is true: not supported"},
        {"\"merges\": [", "\"merges\": [[\"zzqq\", \"a\"], ",
         "model.merges[0], the merge \"zzqq a\": \"zzqq\" is not in the vocabulary"},
        {"\"merges\": [", "\"merges\": [\"a q\", ",
         "model.merges[0], the merge \"a q\": \"aq\" is not in the vocabulary"},
        {"\"merges\": [", "\"merges\": [\"a b c\", ",
         "model.merges[0] is not a string \"a b\" or a pair of strings"},
        {"\"Ġ\": 221,", "", "the vocabulary has no token for byte 0x20 (\"Ġ\")"},
        {"\"!\": 1,", "\"!\": 2,", "\"!\" and \"\"\" both have id 2"},
        {"\"!\": 1,", "\"!\": -1,", "! has id out of range"},
        {"\"model\": {", "\"model\": {\"vocab\": [], ",
         "model.vocab is missing or not an object"},
        {"\"version\"", "\"version\" \"1.0\", \"x\"", "not valid JSON (at byte 14)"},
    };
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s", test_temp_dir());
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_edited(dir, cases[i].from, cases[i].to, path, sizeof path);
        clt_clear_error();
        ck_assert_ptr_null(clt_tokenizer_load_json(path));
        ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
        const char *e = clt_last_error();
        ck_assert_msg(strncmp(e, "clt_tokenizer_load_json: ", 25) == 0 && strstr(e, path) &&
                          strstr(e, cases[i].message),
                      "case %zu: %s", i, e);
    }
    ck_assert_ptr_null(clt_tokenizer_load_json(DATA("nothing.json")));
    ck_assert_int_eq(clt_last_status(), CLT_ERR_IO);
    ck_assert_msg(strstr(clt_last_error(), "nothing.json: cannot open: "), "%s",
                  clt_last_error());
}
END_TEST

/* A merges.txt with a line of other than two tokens, or naming a token the vocabulary lacks. */
START_TEST(test_tokenizer_refused_merges)
{
    static const struct {
        const char *merges, *message;
    } cases[] = {
        {"#version: 0.2\na a\nab\n", "line 3 is \"ab\", not two tokens separated by a space"},
        {"a a\n\nb b\n", "line 2 is \"\", not two tokens"},
        {"#version: 0.2\r\nĠ zzz\r\n", "line 2, the merge \"Ġ zzz\": \"zzz\" is not in the"},
    };
    char dir[512], vocab[600], merges[600];
    snprintf(dir, sizeof dir, "%s", test_temp_dir());
    char *text = read_all(DATA("vocab.json"), NULL);
    test_write_file(dir, "vocab.json", text);
    free(text);
    snprintf(vocab, sizeof vocab, "%s/vocab.json", dir);
    snprintf(merges, sizeof merges, "%s/merges.txt", dir);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        test_write_file(dir, "merges.txt", cases[i].merges);
        ck_assert_ptr_null(clt_tokenizer_load_files(vocab, merges));
        ck_assert_int_eq(clt_last_status(), CLT_ERR_INVALID_ARGUMENT);
        const char *e = clt_last_error();
        ck_assert_msg(strncmp(e, "clt_tokenizer_load_files: ", 26) == 0 && strstr(e, merges) &&
                          strstr(e, cases[i].message),
                      "case %zu: %s", i, e);
    }
    test_write_file(dir, "vocab.json", "[1, 2]");
    ck_assert_ptr_null(clt_tokenizer_load_files(vocab, merges));
    ck_assert_msg(strstr(clt_last_error(), "vocab.json: not a JSON object of token: id"), "%s",
                  clt_last_error());
}
END_TEST

/* Text that is not UTF-8, ids that are no token's, buffers too short and NULL arguments: an
 * error naming the cause, and nothing written. */
START_TEST(test_tokenizer_bad_calls)
{
    clt_tokenizer *tok = clt_tokenizer_load(DATA(""));
    ck_assert_msg(tok != NULL, "%s", clt_last_error());
    static const struct {
        const char *text, *message;
    } bad[] = {
        {"ab\xff", "not valid UTF-8 at byte 2 (0xFF)"},
        {"x\xc3\x28", "not valid UTF-8 at byte 1 (0xC3)"},
        {"\xc0\xaf", "not valid UTF-8 at byte 0 (0xC0)"},         /* overlong */
        {"ok \xed\xa0\x80", "not valid UTF-8 at byte 3 (0xED)"},  /* a surrogate */
        {"\xf4\x90\x80\x80", "not valid UTF-8 at byte 0 (0xF4)"}, /* above U+10FFFF */
        {"abc\xe2\x82", "not valid UTF-8 at byte 3 (0xE2)"},      /* cut short */
    };
    int64_t ids[32] = {-7, -7, -7};
    size_t n = 99;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(clt_tokenizer_encode(tok, bad[i].text, strlen(bad[i].text), ids, 32, &n),
                         CLT_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(clt_last_error(), "clt_tokenizer_encode: ") == clt_last_error() &&
                          strstr(clt_last_error(), bad[i].message),
                      "%s", clt_last_error());
        ck_assert_ptr_null(clt_tokenizer_encode_tensor(tok, bad[i].text, strlen(bad[i].text)));
        ck_assert_msg(strstr(clt_last_error(), bad[i].message), "%s", clt_last_error());
    }
    ck_assert_int_eq(ids[0], -7);
    /* a buffer too short: the count is still given */
    const char *text = "Hello world, hello tokens";
    ck_assert_int_eq(clt_tokenizer_encode(tok, text, strlen(text), ids, 2, &n),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clt_last_error(), "the buffer holds 2"), "%s", clt_last_error());
    ck_assert_uint_gt(n, 2);
    ck_assert_int_eq(ids[0], -7);
    ck_assert_int_eq(ids[1], -7);
    ck_assert_int_eq(clt_tokenizer_encode(tok, text, strlen(text), ids, 32, &n), CLT_OK);

    char out[8] = "unset";
    size_t len = 0;
    ck_assert_int_eq(clt_tokenizer_decode(tok, ids, n, out, sizeof out, &len),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_uint_eq(len, strlen(text));
    ck_assert_msg(strstr(clt_last_error(), "the buffer holds 8"), "%s", clt_last_error());
    ck_assert_str_eq(out, "unset");
    int64_t unknown[3] = {ids[0], 1500, -1};
    ck_assert_int_eq(clt_tokenizer_decode(tok, unknown, 3, out, sizeof out, &len),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clt_last_error(), "clt_tokenizer_decode: ids[1] is 1500, no token's id"),
                  "%s", clt_last_error());
    ck_assert_int_eq(clt_tokenizer_decode(tok, unknown + 2, 1, out, sizeof out, &len),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clt_last_error(), "ids[0] is -1"), "%s", clt_last_error());
    ck_assert_str_eq(out, "unset");
    ck_assert_ptr_null(clt_tokenizer_token(tok, 1500));
    ck_assert_msg(strstr(clt_last_error(), "1500 is no token's id"), "%s", clt_last_error());
    ck_assert_int_eq(clt_tokenizer_token_id(tok, "no such token"), -1);
    ck_assert_msg(strstr(clt_last_error(), "no token \"no such token\""), "%s",
                  clt_last_error());

    ck_assert_int_eq(clt_tokenizer_encode(NULL, "a", 1, ids, 8, &n), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_tokenizer_encode(tok, NULL, 1, ids, 8, &n), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_tokenizer_encode(tok, "a", 1, ids, 8, NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_tokenizer_decode(tok, NULL, 1, out, 8, &len), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(clt_tokenizer_load(NULL));
    ck_assert_ptr_null(clt_tokenizer_load_json(NULL));
    ck_assert_ptr_null(clt_tokenizer_load_files(DATA("vocab.json"), NULL));
    ck_assert_msg(strstr(clt_last_error(), "merges_path is NULL"), "%s", clt_last_error());
    ck_assert_int_eq(clt_tokenizer_vocab_size(NULL), -1);
    clt_tokenizer_free(NULL);
    clt_tokenizer_free(tok);
}
END_TEST

Suite *suite_tokenizer(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *tc = test_case("tokenizer", 120);
    tcase_add_test(tc, test_tokenizer_reference_json);
    tcase_add_test(tc, test_tokenizer_reference_files);
    tcase_add_test(tc, test_tokenizer_merges_as_strings);
    tcase_add_test(tc, test_tokenizer_tensor);
    tcase_add_test(tc, test_tokenizer_tokens);
    tcase_add_test(tc, test_tokenizer_added_tokens);
    tcase_add_test(tc, test_tokenizer_load_folder);
    tcase_add_test(tc, test_tokenizer_refused_files);
    tcase_add_test(tc, test_tokenizer_refused_merges);
    tcase_add_test(tc, test_tokenizer_bad_calls);
    suite_add_tcase(s, tc);
    return s;
}
