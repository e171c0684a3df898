/* Reading a Hugging Face config.json with cJSON (see hf_config.h), and the table of the fields
 * every transformers config inherits. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "common.h"
#include "hf_config.h"

enum { CONFIG_MAX_BYTES = 1 << 20 };

/* The fields of transformers' PretrainedConfig (4.x and 5.x) and the generation settings 4.x
 * kept in it, none of which changes what GPT-2 or BERT compute, but for those refused here.
 * The models' own tables come first, so that they can read a field of this one themselves. */
static const hf_field inherited[] = {
    {"_name_or_path", HF_ACCEPT, 0, NULL},
    {"name_or_path", HF_ACCEPT, 0, NULL},
    {"_commit_hash", HF_ACCEPT, 0, NULL},
    {"transformers_version", HF_ACCEPT, 0, NULL},
    {"architectures", HF_ACCEPT, 0, NULL},
    {"torch_dtype", HF_ACCEPT, 0, NULL},
    {"dtype", HF_ACCEPT, 0, NULL},
    {"return_dict", HF_ACCEPT, 0, NULL},
    {"output_hidden_states", HF_ACCEPT, 0, NULL},
    {"output_attentions", HF_ACCEPT, 0, NULL},
    {"torchscript", HF_ACCEPT, 0, NULL},
    {"use_bfloat16", HF_ACCEPT, 0, NULL},
    {"tf_legacy_loss", HF_ACCEPT, 0, NULL},
    {"xla_device", HF_ACCEPT, 0, NULL},
    {"chunk_size_feed_forward", HF_ACCEPT, 0, NULL},
    {"is_encoder_decoder", HF_ACCEPT, 0, NULL},
    {"tie_encoder_decoder", HF_ACCEPT, 0, NULL},
    {"cross_attention_hidden_size", HF_ACCEPT, 0, NULL},
    {"finetuning_task", HF_ACCEPT, 0, NULL},
    {"id2label", HF_ACCEPT, 0, NULL},
    {"label2id", HF_ACCEPT, 0, NULL},
    {"num_labels", HF_ACCEPT, 0, NULL},
    {"problem_type", HF_ACCEPT, 0, NULL},
    {"tokenizer_class", HF_ACCEPT, 0, NULL},
    {"prefix", HF_ACCEPT, 0, NULL},
    {"bos_token_id", HF_ACCEPT, 0, NULL},
    {"eos_token_id", HF_ACCEPT, 0, NULL},
    {"sep_token_id", HF_ACCEPT, 0, NULL},
    {"decoder_start_token_id", HF_ACCEPT, 0, NULL},
    {"task_specific_params", HF_ACCEPT, 0, NULL},
    {"gradient_checkpointing", HF_ACCEPT, 0, NULL},
    {"initializer_range", HF_ACCEPT, 0, NULL},
    {"_attn_implementation", HF_ACCEPT, 0, NULL},
    {"_attn_implementation_autoset", HF_ACCEPT, 0, NULL},
    {"_attn_implementation_internal", HF_ACCEPT, 0, NULL},
    {"attn_implementation", HF_ACCEPT, 0, NULL},
    {"_experts_implementation", HF_ACCEPT, 0, NULL},
    {"_experts_implementation_internal", HF_ACCEPT, 0, NULL},
    {"experts_implementation", HF_ACCEPT, 0, NULL},
    {"tie_last_hidden_states", HF_ACCEPT, 0, NULL},
    {"add_cross_attention", HF_FALSE, 0, "cross-attention layers, which are not implemented"},
    {"pruned_heads", HF_EMPTY, 0, "pruned attention heads, which are not implemented"},
    {"per_layer_config", HF_NULL, 0, "layers configured one by one, which is not implemented"},
    /* generation settings (transformers 5's GenerationConfig defaults, dropped from configs) */
    {"assistant_confidence_threshold", HF_ACCEPT, 0, NULL},
    {"assistant_lookbehind", HF_ACCEPT, 0, NULL},
    {"bad_words_ids", HF_ACCEPT, 0, NULL},
    {"begin_suppress_tokens", HF_ACCEPT, 0, NULL},
    {"diversity_penalty", HF_ACCEPT, 0, NULL},
    {"do_sample", HF_ACCEPT, 0, NULL},
    {"early_stopping", HF_ACCEPT, 0, NULL},
    {"encoder_no_repeat_ngram_size", HF_ACCEPT, 0, NULL},
    {"encoder_repetition_penalty", HF_ACCEPT, 0, NULL},
    {"epsilon_cutoff", HF_ACCEPT, 0, NULL},
    {"eta_cutoff", HF_ACCEPT, 0, NULL},
    {"exponential_decay_length_penalty", HF_ACCEPT, 0, NULL},
    {"forced_bos_token_id", HF_ACCEPT, 0, NULL},
    {"forced_eos_token_id", HF_ACCEPT, 0, NULL},
    {"length_penalty", HF_ACCEPT, 0, NULL},
    {"max_length", HF_ACCEPT, 0, NULL},
    {"min_length", HF_ACCEPT, 0, NULL},
    {"no_repeat_ngram_size", HF_ACCEPT, 0, NULL},
    {"num_assistant_tokens", HF_ACCEPT, 0, NULL},
    {"num_assistant_tokens_schedule", HF_ACCEPT, 0, NULL},
    {"num_beam_groups", HF_ACCEPT, 0, NULL},
    {"num_beams", HF_ACCEPT, 0, NULL},
    {"num_return_sequences", HF_ACCEPT, 0, NULL},
    {"output_scores", HF_ACCEPT, 0, NULL},
    {"remove_invalid_values", HF_ACCEPT, 0, NULL},
    {"repetition_penalty", HF_ACCEPT, 0, NULL},
    {"return_dict_in_generate", HF_ACCEPT, 0, NULL},
    {"suppress_tokens", HF_ACCEPT, 0, NULL},
    {"target_lookbehind", HF_ACCEPT, 0, NULL},
    {"temperature", HF_ACCEPT, 0, NULL},
    {"top_k", HF_ACCEPT, 0, NULL},
    {"top_p", HF_ACCEPT, 0, NULL},
    {"typical_p", HF_ACCEPT, 0, NULL},
    {"use_cache", HF_ACCEPT, 0, NULL},
};

/* What the reader is reading: for its messages and its checks after the loop. */
typedef struct reader {
    const char *where, *path;
    const hf_field *fields;
    int count;
    const cJSON *root;
    char *config;
} reader;

/* Reads the file into a new NUL-terminated buffer (*len bytes before the NUL); NULL with the
 * error set. */
static char *read_text(const reader *r, size_t *len)
{
    FILE *f = fopen(r->path, "rb");
    if (!f) {
        clt_set_error(CLT_ERR_IO, r->where, "%s: %s", r->path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(CONFIG_MAX_BYTES + 1);
    size_t n = buf ? fread(buf, 1, CONFIG_MAX_BYTES, f) : 0;
    bool failed = !buf || ferror(f), more = !failed && n == CONFIG_MAX_BYTES && fgetc(f) != EOF;
    fclose(f);
    if (failed || more) {
        clt_set_error(buf ? CLT_ERR_IO : CLT_ERR_OUT_OF_MEMORY, r->where,
                      !buf ? "%s: no room to read it" : failed ? "%s: cannot be read"
                                                               : "%s: larger than %d bytes",
                      r->path, CONFIG_MAX_BYTES);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* The value as a message shows it: a number, a quoted string (shortened), true, false, null,
 * a list or an object. */
static const char *shown(const cJSON *v, char *buf, size_t size)
{
    if (cJSON_IsNumber(v))
        snprintf(buf, size, "%g", v->valuedouble);
    else if (cJSON_IsString(v))
        snprintf(buf, size, "\"%.60s%s\"", v->valuestring,
                 strlen(v->valuestring) > 60 ? "..." : "");
    else
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : cJSON_IsFalse(v) ? "false"
                                  : cJSON_IsNull(v)                          ? "null"
                                  : cJSON_IsArray(v)                         ? "a list"
                                                                             : "an object");
    return buf;
}

/* Refuses the key's value: "path: key value why". */
static clt_status refuse(const reader *r, const cJSON *v, const char *why)
{
    char value[96];
    return clt_set_error(CLT_ERR_INVALID_ARGUMENT, r->where, "%s: %s %s %s", r->path,
                         v->string, shown(v, value, sizeof value), why);
}

/* *out = the value when it is a whole number from lo to hi, compared as a double before any
 * conversion. */
static bool whole(const cJSON *v, double lo, double hi, int64_t *out)
{
    if (!cJSON_IsNumber(v))
        return false;
    double x = v->valuedouble;
    if (!(x >= lo && x <= hi && x == floor(x)))
        return false;
    *out = (int64_t)x;
    return true;
}

#define TWO_53 9007199254740992.0 /* every whole number up to it is exact in a double */

/* The activation the string names, into *act; the error otherwise. */
static clt_status read_activation(const reader *r, const cJSON *v, clt_models_activation *act)
{
    bool known = false;
    if (cJSON_IsString(v) && clt__models_activation_parse(v->valuestring, act, &known))
        return CLT_OK;
    return refuse(r, v, !cJSON_IsString(v) ? "is not the name of an activation"
                        : known ? "is an activation of transformers' ACT2FN that the library "
                                  "does not compute (see cltensor/models/activation.h)"
                                : "is not an activation of transformers' ACT2FN");
}

/* Reads a value of the numeric and boolean kinds into the config. */
static clt_status read_value(const reader *r, const hf_field *f, const cJSON *v)
{
    void *at = r->config + f->offset;
    int64_t n = 0;
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    switch (f->kind) {
    case HF_SIZE:
    case HF_INNER:
        if (f->kind == HF_INNER && cJSON_IsNull(v))
            return *(int64_t *)at = 0, CLT_OK;
        if (!whole(v, 1, TWO_53, &n))
            return refuse(r, v, "is not a whole number from 1 to 9007199254740992");
        return *(int64_t *)at = n, CLT_OK;
    case HF_INT:
        if (!whole(v, 1, INT_MAX, &n))
            return refuse(r, v, "is not a whole number from 1 to 2147483647");
        return *(int *)at = (int)n, CLT_OK;
    case HF_TOKEN:
        if (cJSON_IsNull(v))
            return *(int64_t *)at = INT64_MIN, CLT_OK;
        if (!whole(v, -TWO_53, TWO_53, &n))
            return refuse(r, v, "is neither null nor a whole number");
        return *(int64_t *)at = n, CLT_OK;
    case HF_PROB:
        if (!(x >= 0 && x <= 1))
            return refuse(r, v, "is not a probability from 0 to 1");
        return *(double *)at = x, CLT_OK;
    case HF_EPS:
        if (!(x >= 0 && isfinite(x)))
            return refuse(r, v, "is not a finite number, 0 or more");
        return *(double *)at = x, CLT_OK;
    case HF_BOOL:
        if (!cJSON_IsBool(v))
            return refuse(r, v, "is not true or false");
        return *(bool *)at = cJSON_IsTrue(v), CLT_OK;
    default:
        return read_activation(r, v, (clt_models_activation *)at);
    }
}

static const hf_field *find_in(const hf_field *fields, int count, const char *key)
{
    for (int i = 0; i < count; i++)
        if (strcmp(fields[i].key, key) == 0)
            return &fields[i];
    return NULL;
}

/* The field of `key`: the model's, else an inherited one; NULL when neither has it. */
static const hf_field *find(const reader *r, const char *key)
{
    const hf_field *f = find_in(r->fields, r->count, key);
    return f ? f : find_in(inherited, (int)(sizeof inherited / sizeof *inherited), key);
}

/* Reads one key of the file, or refuses it. */
static clt_status read_key(const reader *r, const cJSON *v)
{
    const hf_field *f = find(r, v->string);
    char why[160];
    if (!f)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, r->where,
                             "%s: unknown key \"%s\" (a field neither this model's config nor "
                             "transformers' PretrainedConfig has)",
                             r->path, v->string);
    switch (f->kind) {
    case HF_ACCEPT:
    case HF_SAME:
        return CLT_OK; /* HF_SAME: checked once the file is read */
    case HF_FALSE:
        snprintf(why, sizeof why, "asks for %s", f->text);
        return cJSON_IsFalse(v) || cJSON_IsNull(v) ? CLT_OK : refuse(r, v, why);
    case HF_STRING:
        snprintf(why, sizeof why, "is not \"%s\", the one value implemented", f->text);
        return cJSON_IsString(v) && strcmp(v->valuestring, f->text) == 0 ? CLT_OK
                                                                         : refuse(r, v, why);
    case HF_EMPTY:
    case HF_NULL:
        snprintf(why, sizeof why, "asks for %s", f->text);
        return cJSON_IsNull(v) || (f->kind == HF_EMPTY && (cJSON_IsObject(v) ||
                                                             cJSON_IsArray(v)) &&
                                   v->child == NULL)
                   ? CLT_OK
                   : refuse(r, v, why);
    case HF_ALIAS: { /* the field itself, unless the file names it too: then both must agree */
        const cJSON *named = cJSON_GetObjectItemCaseSensitive(r->root, f->text);
        const hf_field *target = find(r, f->text);
        if (!named)
            return read_value(r, target, v);
        snprintf(why, sizeof why, "differs from %s, which it is transformers' other name for",
                 f->text);
        return cJSON_Compare(v, named, true) ? CLT_OK : refuse(r, v, why);
    }
    default:
        return read_value(r, f, v);
    }
}

/* The HF_SAME fields against the values read. */
static clt_status check_same(const reader *r)
{
    for (int i = 0; i < r->count; i++) {
        const hf_field *f = &r->fields[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->root, f->key);
        if (f->kind != HF_SAME || !v)
            continue;
        int64_t n, want = *(const int64_t *)(r->config + f->offset);
        char why[160];
        snprintf(why, sizeof why, "differs from %s %lld (transformers takes %s; older code "
                 "sized the model by %s)", f->text, (long long)want, f->text, f->key);
        if (!whole(v, 1, TWO_53, &n) || n != want)
            return refuse(r, v, why);
    }
    return CLT_OK;
}

/* Every key of the object, each once. */
static clt_status read_object(const reader *r)
{
    for (const cJSON *v = r->root->child; v; v = v->next) {
        for (const cJSON *u = r->root->child; u != v; u = u->next)
            if (strcmp(u->string, v->string) == 0)
                return clt_set_error(CLT_ERR_INVALID_ARGUMENT, r->where,
                                     "%s: the key \"%s\" is given twice", r->path, v->string);
        clt_status st = read_key(r, v);
        if (st != CLT_OK)
            return st;
    }
    return check_same(r);
}

/* Reads the file's object into config, field by field. */
static clt_status read_file(reader *r)
{
    size_t len = 0;
    char *text = read_text(r, &len);
    if (!text)
        return clt_last_status();
    const char *end = NULL;
    cJSON *root = strlen(text) == len ? cJSON_ParseWithOpts(text, &end, true) : NULL;
    clt_status st;
    if (cJSON_IsObject(root)) {
        r->root = root;
        st = read_object(r);
    } else if (root || !end) {
        st = clt_set_error(CLT_ERR_INVALID_ARGUMENT, r->where, "%s: not one JSON object",
                           r->path);
    } else {
        st = clt_set_error(CLT_ERR_INVALID_ARGUMENT, r->where, "%s: not JSON (at byte %ld)",
                           r->path, (long)(end - text));
    }
    cJSON_Delete(root);
    free(text);
    return st;
}

clt_status clt__models_config_read(const char *where, const char *path, const hf_field *fields,
                                   int count, const void *defaults, size_t size,
                                   hf_check_fn check, void *out)
{
    if (!path || !out)
        return clt_set_error(CLT_ERR_INVALID_ARGUMENT, where, "%s is NULL",
                             path ? "config" : "path");
    char *config = malloc(size), why[192];
    if (!config)
        return clt_set_error(CLT_ERR_OUT_OF_MEMORY, where, "no room for a config");
    memcpy(config, defaults, size);
    reader r = {where, path, fields, count, NULL, config};
    clt_status st = read_file(&r);
    if (st == CLT_OK && !check(config, why, sizeof why))
        st = clt_set_error(CLT_ERR_INVALID_ARGUMENT, where, "%s: %s", path, why);
    if (st == CLT_OK)
        memcpy(out, config, size);
    free(config);
    return st;
}
