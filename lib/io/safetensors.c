/* The safetensors format: writing named tensors to a file, and reading files (untrusted input)
 * into new tensors. Every header is validated in full (JSON, dtypes, shapes, byte ranges that
 * tile the data exactly, unique names) before any data is read; reads never go past the ranges
 * the file's size allows. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "cltensor/io.h"
#include "core/core.h"
#include "io/io_internal.h"
#include "platform/platform.h"

#define MAX_HEADER ((uint64_t)100 << 20) /* bytes of JSON a reader accepts */
#define MAX_EXACT ((double)((uint64_t)1 << 53))

const char *const clt__io_format_dtype[CLT_DTYPE_COUNT] = {
    [CLT_F32] = "F32", [CLT_F64] = "F64", [CLT_F16] = "F16", [CLT_BF16] = "BF16",
    [CLT_I32] = "I32", [CLT_I64] = "I64", [CLT_U8] = "U8",   [CLT_BOOL] = "BOOL"};

static bool little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* ---- writing ---------------------------------------------------------------------------------- */

typedef struct text {
    char *s;
    size_t len, cap;
    bool failed;
} text;

static void put(text *t, const char *fn, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *s2 = clt__alloc(fn, cap);
        if (!s2) {
            t->failed = true;
            return;
        }
        if (t->len)
            memcpy(s2, t->s, t->len);
        clt__free(t->s);
        t->s = s2, t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void put_str(text *t, const char *fn, const char *s)
{
    put(t, fn, s, strlen(s));
}

/* s as a JSON string, quoted and escaped (bytes from 0x80 pass through as UTF-8). */
static void put_json_string(text *t, const char *fn, const char *s)
{
    put(t, fn, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c;
            put(t, fn, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            put(t, fn, esc, 6);
        } else {
            put(t, fn, s, 1);
        }
    }
    put(t, fn, "\"", 1);
}

static size_t tensor_bytes(const clt_tensor *t)
{
    return (size_t)clt_tensor_numel(t) * clt_dtype_size(clt_tensor_dtype(t));
}

/* The JSON header, padded with spaces to a multiple of 8 bytes as the reference writer does. */
static clt_status build_header(const char *fn, const clt_named_tensor *tensors, int count,
                               const clt_metadata *metadata, int metadata_count, text *h)
{
    uint64_t offset = 0;
    char num[64];
    put_str(h, fn, "{");
    for (int i = 0; i < count; i++) {
        const clt_tensor *t = tensors[i].tensor;
        put_str(h, fn, i ? "," : "");
        put_json_string(h, fn, tensors[i].name);
        put_str(h, fn, ":{\"dtype\":\"");
        put_str(h, fn, clt__io_format_dtype[clt_tensor_dtype(t)]);
        put_str(h, fn, "\",\"shape\":[");
        for (int d = 0; d < clt_tensor_ndim(t); d++) {
            snprintf(num, sizeof num, "%s%" PRId64, d ? "," : "", clt_tensor_size(t, d));
            put_str(h, fn, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", offset,
                 offset + tensor_bytes(t));
        put_str(h, fn, num);
        offset += tensor_bytes(t);
    }
    if (metadata_count > 0) {
        put_str(h, fn, count ? ",\"__metadata__\":{" : "\"__metadata__\":{");
        for (int i = 0; i < metadata_count; i++) {
            put_str(h, fn, i ? "," : "");
            put_json_string(h, fn, metadata[i].key);
            put_str(h, fn, ":");
            put_json_string(h, fn, metadata[i].value);
        }
        put_str(h, fn, "}");
    }
    put_str(h, fn, "}");
    while (!h->failed && h->len % 8 != 0)
        put_str(h, fn, " ");
    return h->failed ? CLT_ERR_OUT_OF_MEMORY : CLT_OK;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names present, unique, not "__metadata__"; tensors present with a dtype the format has. */
static clt_status check_save_args(const char *fn, const char *path,
                                  const clt_named_tensor *tensors, int count,
                                  const clt_metadata *metadata, int metadata_count)
{
    const char **names;
    clt_status st = CLT_OK;
    if (!path || count < 0 || metadata_count < 0 || (count > 0 && !tensors) ||
        (metadata_count > 0 && !metadata))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "path, tensors or metadata is NULL, or "
                          "a count is negative");
    for (int i = 0; i < metadata_count; i++)
        if (!metadata[i].key || !metadata[i].value)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "metadata %d has a NULL string", i);
    for (int i = 0; i < count; i++) {
        if (!tensors[i].name || !tensors[i].tensor)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "tensor %d or its name is NULL", i);
        if (strcmp(tensors[i].name, "__metadata__") == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "\"__metadata__\" is reserved");
    }
    if (count < 2)
        return CLT_OK;
    names = clt__alloc(fn, (size_t)count * sizeof *names);
    if (!names)
        return CLT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < count; i++)
        names[i] = tensors[i].name;
    qsort(names, (size_t)count, sizeof *names, compare_names);
    for (int i = 1; i < count && st == CLT_OK; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "the name \"%s\" is given twice",
                            names[i]);
    clt__free(names);
    return st;
}

static clt_status write_all(const char *fn, const char *path, FILE *f, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, f) != n)
        return clt__error(CLT_ERR_IO, fn, "%s: write failed: %s", path, strerror(errno));
    return CLT_OK;
}

static clt_status write_tensor(const char *fn, const char *path, FILE *f, const clt_tensor *t)
{
    size_t n = tensor_bytes(t);
    void *buf = clt__alloc(fn, n ? n : 1);
    clt_status st;
    if (!buf)
        return CLT_ERR_OUT_OF_MEMORY;
    st = clt_tensor_copy_to_host(t, buf, n);
    if (st != CLT_OK)
        clt__rename_error(fn);
    else
        st = write_all(fn, path, f, buf, n);
    clt__free(buf);
    return st;
}

clt_status clt__io_save(const char *fn, const char *path, const clt_named_tensor *tensors,
                        int count, const clt_metadata *metadata, int metadata_count)
{
    text h = {0};
    char *tmp = NULL;
    FILE *f = NULL;
    uint8_t len[8];
    clt_status st = check_save_args(fn, path, tensors, count, metadata, metadata_count);
    if (st != CLT_OK)
        return st;
    if (!little_endian())
        return clt__error(CLT_ERR_UNSUPPORTED, fn, "big-endian hosts are not supported");
    if ((st = build_header(fn, tensors, count, metadata, metadata_count, &h)) != CLT_OK)
        goto fail;
    size_t tmp_size = strlen(path) + 32;
    if (!(tmp = clt__alloc(fn, tmp_size))) {
        st = CLT_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    /* a new file of a name nobody can predict, in the destination's folder, renamed into
     * place once complete */
    snprintf(tmp, tmp_size, "%s.tmp-XXXXXX", path);
    int fd = clt__create_temp(tmp, false);
    if (fd < 0 || !(f = fdopen(fd, "wb"))) {
        st = clt__error(CLT_ERR_IO, fn, "%s: cannot create: %s", tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            clt__remove_file(tmp);
        }
        goto fail;
    }
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)((uint64_t)h.len >> (8 * i));
    st = write_all(fn, tmp, f, len, 8);
    if (st == CLT_OK)
        st = write_all(fn, tmp, f, h.s, h.len);
    for (int i = 0; i < count && st == CLT_OK; i++)
        st = write_tensor(fn, tmp, f, tensors[i].tensor);
    if (fclose(f) != 0 && st == CLT_OK)
        st = clt__error(CLT_ERR_IO, fn, "%s: write failed: %s", tmp, strerror(errno));
    f = NULL;
    if (st == CLT_OK && clt__replace_file(tmp, path) != 0)
        st = clt__error(CLT_ERR_IO, fn, "%s: cannot rename to %s: %s", tmp, path,
                        strerror(errno));
    if (st != CLT_OK)
        clt__remove_file(tmp);
fail:
    clt__free(tmp);
    clt__free(h.s);
    return st;
}

clt_status clt_safetensors_save(const char *path, const clt_named_tensor *tensors, int count,
                                const clt_metadata *metadata, int metadata_count)
{
    return clt__io_save("clt_safetensors_save", path, tensors, count, metadata, metadata_count);
}

/* ---- reading ---------------------------------------------------------------------------------- */

void clt__io_parsed_free(clt__io_parsed *p)
{
    if (p->f)
        fclose(p->f);
    cJSON_Delete(p->json);
    clt__free(p->entries);
    memset(p, 0, sizeof *p);
}

#define BAD(...) clt__error(CLT_ERR_INVALID_ARGUMENT, fn, __VA_ARGS__)

static bool exact_count(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > MAX_EXACT ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return false;
    *out = (uint64_t)v->valuedouble;
    return true;
}

static clt_status parse_entry(const char *fn, const char *path, const cJSON *item,
                              clt__io_entry *e)
{
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    const cJSON *v;
    size_t bytes;
    uint64_t n;
    e->name = item->string;
    if (!cJSON_IsObject(item) || !cJSON_IsString(dtype) || !cJSON_IsArray(shape) ||
        !cJSON_IsArray(offsets))
        return BAD("%s: tensor \"%s\" lacks a dtype string, a shape array or a data_offsets "
                   "array", path, e->name);
    e->dtype = CLT_DTYPE_NONE;
    for (int d = 1; d < CLT_DTYPE_COUNT; d++)
        if (strcmp(dtype->valuestring, clt__io_format_dtype[d]) == 0)
            e->dtype = (clt_dtype)d;
    if (e->dtype == CLT_DTYPE_NONE)
        return BAD("%s: tensor \"%s\" has the unknown dtype \"%.32s\"", path, e->name,
                   dtype->valuestring);
    e->ndim = cJSON_GetArraySize(shape);
    if (e->ndim > CLT_MAX_DIMS)
        return BAD("%s: tensor \"%s\" has %d dimensions (at most %d)", path, e->name, e->ndim,
                   CLT_MAX_DIMS);
    bytes = clt_dtype_size(e->dtype);
    /* The sizes other than 0 must multiply within int64_t too: a tensor's strides are their
     * products, also when a 0 elsewhere leaves it without elements ([0, 2^40, 2^40]). */
    size_t span = 1;
    int d = 0;
    cJSON_ArrayForEach(v, shape) {
        if (!exact_count(v, &n) || !clt__mul_size(bytes, (size_t)n, &bytes) ||
            bytes > (size_t)INT64_MAX || !clt__mul_size(span, n ? (size_t)n : 1, &span) ||
            span > (size_t)INT64_MAX)
            return BAD("%s: tensor \"%s\" has an invalid shape", path, e->name);
        e->shape[d++] = (int64_t)n;
    }
    if (cJSON_GetArraySize(offsets) != 2 || !exact_count(offsets->child, &e->begin) ||
        !exact_count(offsets->child->next, &e->end) || e->end < e->begin)
        return BAD("%s: tensor \"%s\" has invalid data_offsets", path, e->name);
    if (e->end - e->begin != bytes)
        return BAD("%s: tensor \"%s\" spans %" PRIu64 " bytes but its shape and dtype need %zu",
                   path, e->name, e->end - e->begin, bytes);
    return CLT_OK;
}

static int compare_begin(const void *a, const void *b)
{
    const clt__io_entry *x = *(const clt__io_entry *const *)a;
    const clt__io_entry *y = *(const clt__io_entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

int clt__io_compare_entry_names(const void *a, const void *b)
{
    return strcmp(((const clt__io_entry *)a)->name, ((const clt__io_entry *)b)->name);
}

/* Names unique; the byte ranges, in order, tile [0, data_size) exactly. */
static clt_status check_layout(const char *fn, const char *path, clt__io_parsed *p,
                               uint64_t data_size)
{
    clt__io_entry **order;
    uint64_t at = 0;
    clt_status st = CLT_OK;
    qsort(p->entries, (size_t)p->count, sizeof *p->entries, clt__io_compare_entry_names);
    for (int i = 1; i < p->count; i++)
        if (strcmp(p->entries[i - 1].name, p->entries[i].name) == 0)
            return BAD("%s: the name \"%s\" appears twice", path, p->entries[i].name);
    if (!(order = clt__alloc(fn, (size_t)(p->count ? p->count : 1) * sizeof *order)))
        return CLT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < p->count; i++)
        order[i] = &p->entries[i];
    qsort(order, (size_t)p->count, sizeof *order, compare_begin);
    for (int i = 0; i < p->count && st == CLT_OK; i++) {
        if (order[i]->begin != at)
            st = BAD("%s: tensor \"%s\" starts at byte %" PRIu64 " of the data, not %" PRIu64
                     " (the ranges overlap or leave a gap)", path, order[i]->name,
                     order[i]->begin, at);
        at = order[i]->end;
    }
    if (st == CLT_OK && at != data_size)
        st = BAD("%s: the tensors cover %" PRIu64 " bytes of data but the file holds %" PRIu64,
                 path, at, data_size);
    clt__free(order);
    return st;
}

static clt_status parse_json(const char *fn, const char *path, clt__io_parsed *p,
                             const char *header, size_t n, uint64_t data_size)
{
    const cJSON *item;
    int count = 0;
    p->json = cJSON_ParseWithLength(header, n);
    if (!p->json)
        return BAD("%s: the header is not valid JSON", path);
    if (!cJSON_IsObject(p->json))
        return BAD("%s: the header is not a JSON object", path);
    cJSON_ArrayForEach(item, p->json) {
        if (strcmp(item->string, "__metadata__") != 0) {
            count++;
            continue;
        }
        if (p->metadata)
            return BAD("%s: \"__metadata__\" appears twice", path);
        if (!cJSON_IsObject(item))
            return BAD("%s: \"__metadata__\" is not an object", path);
        const cJSON *kv;
        cJSON_ArrayForEach(kv, item)
            if (!cJSON_IsString(kv))
                return BAD("%s: metadata \"%s\" is not a string", path, kv->string);
        p->metadata = (cJSON *)item;
    }
    if (!(p->entries = clt__alloc_zeroed(fn, (size_t)(count ? count : 1) * sizeof *p->entries)))
        return CLT_ERR_OUT_OF_MEMORY;
    cJSON_ArrayForEach(item, p->json) {
        if (item == p->metadata)
            continue;
        clt_status st = parse_entry(fn, path, item, &p->entries[p->count]);
        if (st != CLT_OK)
            return st;
        p->count++;
    }
    return check_layout(fn, path, p, data_size);
}

/* Opens path and validates its header; on failure p is freed. */
clt_status clt__io_parse_file(const char *fn, const char *path, clt__io_parsed *p)
{
    uint8_t len[8];
    uint64_t n = 0, size;
    char *header = NULL;
    clt_status st;
    memset(p, 0, sizeof *p);
    if (!path)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "path is NULL");
    if (!little_endian())
        return clt__error(CLT_ERR_UNSUPPORTED, fn, "big-endian hosts are not supported");
    bool irregular;
    clt__path_info info;
    int fd = clt__open_regular(path, &irregular, &info);
    if (fd < 0 && irregular)
        return clt__error(CLT_ERR_IO, fn, "%s: not a readable regular file", path);
    if (fd < 0 || !(p->f = fdopen(fd, "rb"))) {
        st = clt__error(CLT_ERR_IO, fn, "%s: cannot open: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return st;
    }
    size = info.size;
    if (size < 8 || fread(len, 1, 8, p->f) != 8) {
        st = BAD("%s: truncated: %" PRIu64 " bytes, fewer than the 8 of the header length",
                 path, size);
        goto fail;
    }
    for (int i = 0; i < 8; i++)
        n |= (uint64_t)len[i] << (8 * i);
    if (n > MAX_HEADER) {
        st = BAD("%s: the header length %" PRIu64 " exceeds the limit of %" PRIu64 " bytes",
                 path, n, MAX_HEADER);
        goto fail;
    }
    if (n > size - 8) {
        st = BAD("%s: the header length %" PRIu64 " exceeds the file's %" PRIu64 " bytes", path,
                 n, size - 8);
        goto fail;
    }
    if (!(header = clt__alloc(fn, (size_t)n + 1))) {
        st = CLT_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    if (fread(header, 1, (size_t)n, p->f) != (size_t)n) {
        st = clt__error(CLT_ERR_IO, fn, "%s: read failed", path);
        goto fail;
    }
    header[n] = '\0';
    p->data_start = 8 + n;
    st = parse_json(fn, path, p, header, (size_t)n, size - 8 - n);
fail:
    clt__free(header);
    if (st != CLT_OK)
        clt__io_parsed_free(p);
    return st;
}

/* Entry e's data as a new tensor on dev. */
clt_tensor *clt__io_read_entry(const char *fn, const char *path, clt__io_parsed *p,
                               const clt__io_entry *e, clt_device *dev)
{
    if (e->value)
        return clt_tensor_retain(e->value);
    size_t n = (size_t)(e->end - e->begin);
    void *buf = clt__alloc(fn, n ? n : 1);
    clt_tensor *t = NULL;
    if (!buf)
        return NULL;
    if (fseeko(p->f, (off_t)(p->data_start + e->begin), SEEK_SET) != 0 ||
        fread(buf, 1, n, p->f) != n) {
        clt__error(CLT_ERR_IO, fn, "%s: cannot read tensor \"%s\"", path, e->name);
    } else {
        t = clt_tensor_from_data(e->ndim, e->shape, buf, e->dtype, dev);
        if (!t)
            clt__rename_error(fn);
    }
    clt__free(buf);
    return t;
}

void clt_safetensors_clear(clt_safetensors *st)
{
    if (!st)
        return;
    for (int i = 0; i < st->count; i++) {
        clt__free((char *)st->tensors[i].name);
        clt_tensor_release(st->tensors[i].tensor);
    }
    for (int i = 0; i < st->metadata_count; i++) {
        clt__free((char *)st->metadata[i].key);
        clt__free((char *)st->metadata[i].value);
    }
    clt__free(st->tensors);
    clt__free(st->metadata);
    memset(st, 0, sizeof *st);
}

static clt_status load_metadata(const char *fn, const clt__io_parsed *p, clt_safetensors *out)
{
    const cJSON *kv;
    int n = p->metadata ? cJSON_GetArraySize(p->metadata) : 0;
    if (n == 0)
        return CLT_OK;
    if (!(out->metadata = clt__alloc_zeroed(fn, (size_t)n * sizeof *out->metadata)))
        return CLT_ERR_OUT_OF_MEMORY;
    cJSON_ArrayForEach(kv, p->metadata) {
        clt_metadata *md = &out->metadata[out->metadata_count++];
        if (!(md->key = clt__strdup(fn, kv->string)) ||
            !(md->value = clt__strdup(fn, kv->valuestring)))
            return CLT_ERR_OUT_OF_MEMORY;
    }
    return CLT_OK;
}

clt_status clt_safetensors_load(const char *path, clt_device *dev, clt_safetensors *out)
{
    const char *fn = "clt_safetensors_load";
    clt__io_entry **order = NULL;
    clt__io_parsed p;
    clt_status st;
    if (!out)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "out is NULL");
    memset(out, 0, sizeof *out);
    if ((st = clt__io_parse_file(fn, path, &p)) != CLT_OK)
        return st;
    if (!dev)
        dev = clt_device_cpu();
    st = CLT_ERR_OUT_OF_MEMORY;
    size_t slots = (size_t)(p.count ? p.count : 1);
    if (!(order = clt__alloc(fn, slots * sizeof *order)) ||
        !(out->tensors = clt__alloc_zeroed(fn, slots * sizeof *out->tensors)))
        goto fail;
    for (int i = 0; i < p.count; i++)
        order[i] = &p.entries[i];
    qsort(order, (size_t)p.count, sizeof *order, compare_begin);
    for (int i = 0; i < p.count; i++) {
        clt_named_tensor *nt = &out->tensors[i];
        if (!(nt->name = clt__strdup(fn, order[i]->name)))
            goto fail;
        out->count++;
        if (!(nt->tensor = clt__io_read_entry(fn, path, &p, order[i], dev))) {
            st = clt_last_status();
            goto fail;
        }
    }
    st = load_metadata(fn, &p, out);
fail:
    clt__free(order);
    clt__io_parsed_free(&p);
    if (st != CLT_OK)
        clt_safetensors_clear(out);
    return st;
}

clt_tensor *clt_safetensors_get(const clt_safetensors *st, const char *name)
{
    for (int i = 0; st && name && i < st->count; i++)
        if (strcmp(st->tensors[i].name, name) == 0)
            return st->tensors[i].tensor;
    return NULL;
}

const char *clt_safetensors_metadata_get(const clt_safetensors *st, const char *key)
{
    for (int i = 0; st && key && i < st->metadata_count; i++)
        if (strcmp(st->metadata[i].key, key) == 0)
            return st->metadata[i].value;
    return NULL;
}
