/* A module's tensors in the safetensors format: its parameters and buffers collected by their
 * dotted names, saved to a file, taken as a state dict, and loaded back from a file or a state
 * dict into the module's tensors in place, with a report of the names that did not match. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltensor/autograd.h"
#include "cltensor/io.h"
#include "cltensor/ops.h"
#include "core/core.h"
#include "io/io_internal.h"
#include "tensor/tensor_internal.h"

#define BAD(...) clt__error(CLT_ERR_INVALID_ARGUMENT, fn, __VA_ARGS__)

/* ---- collecting and saving ------------------------------------------------------------------- */

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
    st = clt__io_save(fn, path, l.items, l.count, metadata, metadata_count);
    named_list_free(&l);
    return st;
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

static bool same_shape(const clt__io_entry *e, const clt_tensor *t)
{
    if (e->ndim != clt_tensor_ndim(t))
        return false;
    for (int d = 0; d < e->ndim; d++)
        if (e->shape[d] != clt_tensor_size(t, d))
            return false;
    return true;
}

static const clt__io_entry *find_entry(const clt__io_parsed *p, const char *name)
{
    clt__io_entry key = {.name = name};
    return bsearch(&key, p->entries, (size_t)p->count, sizeof key,
                   clt__io_compare_entry_names);
}

static clt_status fill_report(const char *fn, const clt__io_parsed *p, const named_list *l,
                              const clt__io_entry **match, const bool *used,
                              clt_load_report *r)
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

/* The prefix (ending in '.') that one name has before the whole of the other: "bert." of
 * "bert.pooler.dense.bias" and "pooler.dense.bias"; its length, 0 for none. */
static size_t extra_prefix(const char *longer, const char *shorter)
{
    size_t n = strlen(longer), k = strlen(shorter);
    if (n <= k + 1 || strcmp(longer + n - k, shorter) != 0 || longer[n - k - 1] != '.')
        return 0;
    return n - k;
}

/* How many of the module's missing names match an entry once prefix (len bytes) is added to
 * them (in_file) or taken off them. */
static int prefix_matches(const clt__io_parsed *p, const named_list *l,
                          const clt__io_entry **match, const char *prefix, size_t len,
                          bool in_file)
{
    char name[512];
    int n = 0;
    for (int i = 0; i < l->count; i++) {
        const char *own = l->items[i].name;
        if (match[i])
            continue;
        if (in_file && snprintf(name, sizeof name, "%.*s%s", (int)len, prefix, own) <
                           (int)sizeof name)
            n += find_entry(p, name) != NULL;
        else if (!in_file && strncmp(own, prefix, len) == 0)
            n += find_entry(p, own + len) != NULL;
    }
    return n;
}

/* Where the module's missing names and the file's unused ones differ by a prefix (a checkpoint
 * of a model with a head, "bert.encoder...", loaded into the bare model, or the other way
 * round): names the prefix and how many of the missing names it would match. */
static void prefix_hint(const clt__io_parsed *p, const named_list *l,
                        const clt__io_entry **match, const bool *used, message *msg)
{
    char prefix[256], count[48];
    int missing = 0;
    for (int i = 0; i < l->count; i++)
        missing += match[i] == NULL;
    for (int i = 0; i < l->count; i++) {
        for (int j = 0; !match[i] && j < p->count; j++) {
            const char *own = l->items[i].name, *theirs = p->entries[j].name;
            size_t in_file = used[j] ? 0 : extra_prefix(theirs, own);
            size_t in_module = in_file || used[j] ? 0 : extra_prefix(own, theirs);
            if (!in_file && !in_module)
                continue;
            const char *from = in_file ? theirs : own;
            size_t len = in_file ? in_file : in_module;
            snprintf(prefix, sizeof prefix, "%.*s", (int)len, from);
            snprintf(count, sizeof count, "%d of the %d",
                     prefix_matches(p, l, match, from, len, in_file != 0), missing);
            say(msg, in_file ? "; the file's names have the prefix \"%s\" that the module's "
                               "lack (%s missing names match with it)%s"
                             : "; the module's names have the prefix \"%s\" that the file's "
                               "lack (%s missing names match without it)%s",
                prefix, count, "");
            return;
        }
    }
}

/* Matches the module's names to the file's; the message lists every fault strictness finds. */
static bool match_names(const clt__io_parsed *p, const named_list *l, bool strict,
                        const clt__io_entry **match, bool *used, message *msg)
{
    bool ok = true;
    for (int i = 0; i < l->count; i++) {
        const clt__io_entry *e = find_entry(p, l->items[i].name);
        const clt_tensor *t = l->items[i].tensor;
        match[i] = e;
        if (!e) {
            if (strict)
                say(msg, "; missing \"%s\"%s%s", l->items[i].name, "", ""), ok = false;
            continue;
        }
        used[e - p->entries] = true;
        if (!same_shape(e, t)) {
            char file[256], module[256];
            clt__format_shape(file, sizeof file, e->ndim, e->shape);
            clt__format_shape(module, sizeof module, t->ndim, t->shape);
            say(msg, "; shape mismatch \"%s\" (file %s, module %s)", e->name, file, module);
            ok = false;
        } else if (strict && e->dtype != clt_tensor_dtype(t))
            say(msg, "; dtype mismatch \"%s\" (file %s, module %s)", e->name,
                clt__io_format_dtype[e->dtype], clt__io_format_dtype[clt_tensor_dtype(t)]),
                ok = false;
    }
    for (int i = 0; strict && i < p->count; i++)
        if (!used[i])
            say(msg, "; unexpected \"%s\"%s%s", p->entries[i].name, "", ""), ok = false;
    if (strict && !ok) { /* the hint first, where a long list of names cannot crowd it out */
        message hint = {0}, all = {0};
        prefix_hint(p, l, match, used, &hint);
        if (hint.len) {
            say(&all, "%s%s%s", hint.s, msg->s, "");
            *msg = all;
        }
    }
    return ok;
}

/* Reads every matched entry and puts it on its tensor's device in its dtype, then, with every
 * allocation made, copies them all in without recording: a failure to read or to allocate
 * changes no tensor. */
static clt_status copy_in(const char *fn, const char *path, clt__io_parsed *p,
                          const named_list *l, const clt__io_entry **match)
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
        read = clt__io_read_entry(fn, path, p, match[i], clt_device_cpu());
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
static clt_status load_entries(const char *fn, clt_module *m, const char *what,
                               clt__io_parsed *p, bool strict, clt_load_report *report)
{
    named_list l = {0};
    const clt__io_entry **match = NULL;
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
    clt__io_parsed p = {0};
    clt_status st;
    if (report)
        memset(report, 0, sizeof *report);
    if (!m)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
    if ((st = clt__io_parse_file(fn, path, &p)) != CLT_OK)
        return st;
    st = load_entries(fn, m, path, &p, strict, report);
    clt__io_parsed_free(&p);
    return st;
}

clt_status clt_module_load_state_dict(clt_module *m, const clt_named_tensor *tensors, int count,
                                      bool strict, clt_load_report *report)
{
    const char *fn = "clt_module_load_state_dict";
    clt__io_parsed p = {0};
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
        clt__io_entry *e = &p.entries[i];
        e->name = tensors[i].name, e->value = tensors[i].tensor;
        e->dtype = clt_tensor_dtype(e->value), e->ndim = clt_tensor_ndim(e->value);
        for (int d = 0; d < e->ndim; d++)
            e->shape[d] = clt_tensor_size(e->value, d);
    }
    p.count = count;
    qsort(p.entries, (size_t)count, sizeof *p.entries, clt__io_compare_entry_names);
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
