/* The safetensors format: writing named tensors and modules, and reading files (untrusted
 * input) into new tensors or into a module's tensors in place. Every header is validated in
 * full (JSON, dtypes, shapes, byte ranges that tile the data exactly, unique names) before any
 * data is read; reads never go past the ranges the file's size allows. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "cltensor/autograd.h"
#include "cltensor/io.h"
#include "cltensor/ops.h"
#include "core/core.h"
#include "platform/platform.h"
#include "tensor/tensor_internal.h"

#define MAX_HEADER ((uint64_t)100 << 20) /* bytes of JSON a reader accepts */
#define MAX_EXACT ((double)((uint64_t)1 << 53))

static const char *const format_dtype[CLT_DTYPE_COUNT] = {
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
        put_str(h, fn, format_dtype[clt_tensor_dtype(t)]);
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

static clt_status save(const char *fn, const char *path, const clt_named_tensor *tensors,
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
    return save("clt_safetensors_save", path, tensors, count, metadata, metadata_count);
}

/* The module's parameters then buffers, names copied. */
typedef struct named_list {
    const char *fn;
    clt_named_tensor *items;
    int count, cap;
    bool failed; /* an allocation here failed (the error is set under fn) */
} named_list;

static int collect_cb(const char *name, clt_tensor *t, void *user)
{
    named_list *l = user;
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        clt_named_tensor *items = clt__alloc(l->fn, (size_t)cap * sizeof *items);
        if (!items)
            return l->failed = true, CLT_ERR_OUT_OF_MEMORY;
        if (l->count)
            memcpy(items, l->items, (size_t)l->count * sizeof *items);
        clt__free(l->items);
        l->items = items, l->cap = cap;
    }
    char *copy = clt__strdup(l->fn, name);
    if (!copy)
        return l->failed = true, CLT_ERR_OUT_OF_MEMORY;
    l->items[l->count].name = copy;
    l->items[l->count++].tensor = t;
    return 0;
}

static void named_list_free(named_list *l)
{
    for (int i = 0; i < l->count; i++)
        clt__free((char *)l->items[i].name);
    clt__free(l->items);
}

static clt_status collect(const char *fn, const clt_module *m, named_list *l)
{
    int r;
    l->fn = fn;
    if (!m)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
    r = clt_module_foreach_parameter(m, collect_cb, l);
    if (r == 0)
        r = clt_module_foreach_buffer(m, collect_cb, l);
    if (r != 0) {
        bool failed = l->failed;
        named_list_free(l);
        return failed ? r : clt__rename_error(fn);
    }
    return CLT_OK;
}

clt_status clt_module_save(const clt_module *m, const char *path, const clt_metadata *metadata,
                           int metadata_count)
{
    const char *fn = "clt_module_save";
    named_list l = {0};
    clt_status st = collect(fn, m, &l);
    if (st != CLT_OK)
        return st;
    st = save(fn, path, l.items, l.count, metadata, metadata_count);
    named_list_free(&l);
    return st;
}

/* ---- reading ---------------------------------------------------------------------------------- */

typedef struct entry {
    const char *name; /* in the parsed JSON */
    clt_dtype dtype;
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
    uint64_t begin, end; /* in bytes from the start of the data */
    clt_tensor *value;   /* an entry of a state dict in memory (borrowed), or NULL: in the file */
} entry;

/* A validated header; the file stays open for reading the data. */
typedef struct parsed {
    FILE *f;
    cJSON *json;
    entry *entries; /* sorted by name */
    int count;
    cJSON *metadata; /* the "__metadata__" object in json, or NULL */
    uint64_t data_start;
} parsed;

static void parsed_free(parsed *p)
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

static clt_status parse_entry(const char *fn, const char *path, const cJSON *item, entry *e)
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
        if (strcmp(dtype->valuestring, format_dtype[d]) == 0)
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
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

static int compare_entry_names(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

/* Names unique; the byte ranges, in order, tile [0, data_size) exactly. */
static clt_status check_layout(const char *fn, const char *path, parsed *p, uint64_t data_size)
{
    entry **order;
    uint64_t at = 0;
    clt_status st = CLT_OK;
    qsort(p->entries, (size_t)p->count, sizeof *p->entries, compare_entry_names);
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

static clt_status parse_json(const char *fn, const char *path, parsed *p, const char *header,
                             size_t n, uint64_t data_size)
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
static clt_status parse_file(const char *fn, const char *path, parsed *p)
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
        parsed_free(p);
    return st;
}

/* Entry e's data as a new tensor on dev. */
static clt_tensor *read_entry(const char *fn, const char *path, parsed *p, const entry *e,
                              clt_device *dev)
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

static const entry *find_entry(const parsed *p, const char *name)
{
    entry key = {.name = name};
    return bsearch(&key, p->entries, (size_t)p->count, sizeof key, compare_entry_names);
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

static clt_status load_metadata(const char *fn, const parsed *p, clt_safetensors *out)
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
    entry **order = NULL;
    parsed p;
    clt_status st;
    if (!out)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "out is NULL");
    memset(out, 0, sizeof *out);
    if ((st = parse_file(fn, path, &p)) != CLT_OK)
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
        if (!(nt->tensor = read_entry(fn, path, &p, order[i], dev))) {
            st = clt_last_status();
            goto fail;
        }
    }
    st = load_metadata(fn, &p, out);
fail:
    clt__free(order);
    parsed_free(&p);
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

/* ---- loading into a module --------------------------------------------------------------------- */

void clt_load_report_clear(clt_load_report *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->missing_count; i++)
        clt__free(r->missing[i]);
    for (int i = 0; i < r->unexpected_count; i++)
        clt__free(r->unexpected[i]);
    clt__free(r->missing);
    clt__free(r->unexpected);
    memset(r, 0, sizeof *r);
}

/* A bounded message: "; "-separated items, "..." once it is full. */
typedef struct message {
    char s[1024];
    size_t len;
} message;

static void say(message *m, const char *fmt, const char *a, const char *b, const char *c)
{
    if (m->len >= sizeof m->s - 4)
        return;
    int n = snprintf(m->s + m->len, sizeof m->s - m->len, fmt, a, b, c);
    if (n < 0 || (size_t)n >= sizeof m->s - m->len - 4) {
        m->len = sizeof m->s - 4;
        memcpy(m->s + m->len, "...", 4);
        m->len = sizeof m->s;
    } else {
        m->len += (size_t)n;
    }
}

static bool same_shape(const entry *e, const clt_tensor *t)
{
    if (e->ndim != clt_tensor_ndim(t))
        return false;
    for (int d = 0; d < e->ndim; d++)
        if (e->shape[d] != clt_tensor_size(t, d))
            return false;
    return true;
}

static clt_status fill_report(const char *fn, const parsed *p, const named_list *l,
                              const entry **match, const bool *used, clt_load_report *r)
{
    int missing = 0, unexpected = 0;
    for (int i = 0; i < l->count; i++)
        missing += match[i] == NULL;
    for (int i = 0; i < p->count; i++)
        unexpected += !used[i];
    if ((missing && !(r->missing = clt__alloc_zeroed(fn, (size_t)missing * sizeof(char *)))) ||
        (unexpected &&
         !(r->unexpected = clt__alloc_zeroed(fn, (size_t)unexpected * sizeof(char *)))))
        return CLT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < l->count; i++)
        if (!match[i] && !(r->missing[r->missing_count++] = clt__strdup(fn, l->items[i].name)))
            return CLT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < p->count; i++)
        if (!used[i] &&
            !(r->unexpected[r->unexpected_count++] = clt__strdup(fn, p->entries[i].name)))
            return CLT_ERR_OUT_OF_MEMORY;
    return CLT_OK;
}

/* Matches the module's names to the file's; the message lists every fault strictness finds. */
static bool match_names(const parsed *p, const named_list *l, bool strict, const entry **match,
                        bool *used, message *msg)
{
    bool ok = true;
    for (int i = 0; i < l->count; i++) {
        const entry *e = find_entry(p, l->items[i].name);
        const clt_tensor *t = l->items[i].tensor;
        match[i] = e;
        if (!e) {
            if (strict)
                say(msg, "; missing \"%s\"%s%s", l->items[i].name, "", ""), ok = false;
            continue;
        }
        used[e - p->entries] = true;
        if (!same_shape(e, t))
            say(msg, "; shape mismatch \"%s\"%s%s", e->name, "", ""), ok = false;
        else if (strict && e->dtype != clt_tensor_dtype(t))
            say(msg, "; dtype mismatch \"%s\" (file %s, module %s)", e->name,
                format_dtype[e->dtype], format_dtype[clt_tensor_dtype(t)]), ok = false;
    }
    for (int i = 0; strict && i < p->count; i++)
        if (!used[i])
            say(msg, "; unexpected \"%s\"%s%s", p->entries[i].name, "", ""), ok = false;
    return ok;
}

/* Reads every matched entry and puts it on its tensor's device in its dtype, then, with every
 * allocation made, copies them all in without recording: a failure to read or to allocate
 * changes no tensor. */
static clt_status copy_in(const char *fn, const char *path, parsed *p, const named_list *l,
                          const entry **match)
{
    clt_tensor **values;
    clt_status st = CLT_OK;
    /* all or nothing: whatever can refuse a value is checked before the first is written */
    for (int i = 0; i < l->count; i++)
        if (match[i] && clt__tensor_overlaps(l->items[i].tensor))
            return BAD("\"%s\" of the module is a broadcast view (several elements share "
                       "memory): it cannot be loaded into", l->items[i].name);
    values = clt__alloc_zeroed(fn, (size_t)(l->count ? l->count : 1) * sizeof *values);
    if (!values)
        return CLT_ERR_OUT_OF_MEMORY;
    bool recording = clt_grad_set_enabled(false); /* a state dict's tensors may require grad */
    for (int i = 0; i < l->count && st == CLT_OK; i++) {
        clt_tensor *t = l->items[i].tensor, *read;
        if (!match[i])
            continue;
        read = read_entry(fn, path, p, match[i], clt_device_cpu());
        values[i] = read ? clt_tensor_to_ex(read, &(clt_to_options){.device = clt_tensor_device(t),
                                                                    .dtype = clt_tensor_dtype(t)})
                         : NULL;
        clt_tensor_release(read);
        if (!values[i])
            st = read ? clt__rename_error(fn) : clt_last_status();
    }
    for (int i = 0; i < l->count && st == CLT_OK; i++)
        if (values[i] && (st = clt_copy_(l->items[i].tensor, values[i])) != CLT_OK)
            clt__rename_error(fn);
    clt_grad_set_enabled(recording);
    for (int i = 0; i < l->count; i++)
        clt_tensor_release(values[i]);
    clt__free(values);
    return st;
}

/* Loads the entries of p (a file's, or a state dict's in memory; `what` names it in errors)
 * into m: the body of clt_module_load and clt_module_load_state_dict. */
static clt_status load_entries(const char *fn, clt_module *m, const char *what, parsed *p,
                               bool strict, clt_load_report *report)
{
    named_list l = {0};
    const entry **match = NULL;
    bool *used = NULL;
    message msg = {.len = 0};
    clt_status st;
    if ((st = collect(fn, m, &l)) != CLT_OK)
        return st;
    st = CLT_ERR_OUT_OF_MEMORY;
    if (!(match = clt__alloc_zeroed(fn, (size_t)(l.count ? l.count : 1) * sizeof *match)) ||
        !(used = clt__alloc_zeroed(fn, (size_t)(p->count ? p->count : 1) * sizeof *used)))
        goto fail;
    bool ok = match_names(p, &l, strict, match, used, &msg);
    if (report && (st = fill_report(fn, p, &l, match, used, report)) != CLT_OK)
        goto fail;
    if (!ok)
        st = BAD("%s does not fit the module: %s", what, msg.s + 2);
    else
        st = copy_in(fn, what, p, &l, match);
fail:
    if (st == CLT_ERR_OUT_OF_MEMORY)
        clt_load_report_clear(report);
    clt__free(match);
    clt__free(used);
    named_list_free(&l);
    return st;
}

clt_status clt_module_load(clt_module *m, const char *path, bool strict, clt_load_report *report)
{
    const char *fn = "clt_module_load";
    parsed p = {0};
    clt_status st;
    if (report)
        memset(report, 0, sizeof *report);
    if (!m)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
    if ((st = parse_file(fn, path, &p)) != CLT_OK)
        return st;
    st = load_entries(fn, m, path, &p, strict, report);
    parsed_free(&p);
    return st;
}

clt_status clt_module_load_state_dict(clt_module *m, const clt_named_tensor *tensors, int count,
                                      bool strict, clt_load_report *report)
{
    const char *fn = "clt_module_load_state_dict";
    parsed p = {0};
    clt_status st;
    if (report)
        memset(report, 0, sizeof *report);
    if (!m || count < 0 || (count > 0 && !tensors))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module %s, %d tensors from %p",
                          m ? "given" : "NULL", count, (const void *)tensors);
    for (int i = 0; i < count; i++)
        if (!tensors[i].name || !tensors[i].tensor)
            return BAD("entry %d has a NULL %s", i, tensors[i].name ? "tensor" : "name");
    if (!(p.entries = clt__alloc_zeroed(fn, (size_t)(count ? count : 1) * sizeof *p.entries)))
        return CLT_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < count; i++) {
        entry *e = &p.entries[i];
        e->name = tensors[i].name, e->value = tensors[i].tensor;
        e->dtype = clt_tensor_dtype(e->value), e->ndim = clt_tensor_ndim(e->value);
        for (int d = 0; d < e->ndim; d++)
            e->shape[d] = clt_tensor_size(e->value, d);
    }
    p.count = count;
    qsort(p.entries, (size_t)count, sizeof *p.entries, compare_entry_names);
    for (int i = 1; i < count; i++)
        if (strcmp(p.entries[i - 1].name, p.entries[i].name) == 0) {
            st = BAD("the name \"%s\" is given twice", p.entries[i].name);
            goto done;
        }
    st = load_entries(fn, m, "the state dict", &p, strict, report);
done:
    clt__free(p.entries);
    return st;
}

clt_status clt_module_state_dict(const clt_module *m, clt_state_dict *out)
{
    const char *fn = "clt_module_state_dict";
    named_list l = {0};
    clt_status st;
    if (!out)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "out is NULL");
    memset(out, 0, sizeof *out);
    if ((st = collect(fn, m, &l)) != CLT_OK)
        return st;
    for (int i = 0; i < l.count; i++)
        clt_tensor_retain(l.items[i].tensor);
    out->count = l.count, out->tensors = l.items;
    return CLT_OK;
}

void clt_state_dict_clear(clt_state_dict *sd)
{
    if (!sd)
        return;
    for (int i = 0; i < sd->count; i++) {
        clt__free((char *)sd->tensors[i].name);
        clt_tensor_release(sd->tensors[i].tensor);
    }
    clt__free(sd->tensors);
    memset(sd, 0, sizeof *sd);
}
