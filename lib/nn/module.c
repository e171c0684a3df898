/* The module base: registration of parameters, buffers and children by name, dotted-name
 * iteration, modes, in-place migration between devices and dtypes (all or nothing), deep copies
 * and the checked forward call. */
#include <stdio.h>
#include <string.h>

#include "cltensor/nn.h"
#include "graph/graph.h"
#include "cltensor/autograd.h"
#include "core/core.h"
#include "device/registry.h"
#include "module_internal.h"
#include "ops/ops_internal.h"

enum { PARAMETER, BUFFER, CHILD };

typedef struct entry {
    char *name;
    int kind;
    clt_tensor *tensor; /* PARAMETER, BUFFER */
    clt_module *child;  /* CHILD */
} entry;

struct clt__module_state {
    atomic_int refs;
    bool training;
    bool any_input_device; /* forward moves its input itself (DataParallel) */
    entry *entries;
    int count, capacity;
};

clt_module *clt_module_new(const clt_module_type *type)
{
    static const char *const fn = "clt_module_new";
    clt_module *m;
    if (!type || type->size < sizeof(clt_module) || !type->name) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                   "the type must have a name and a size of at least sizeof(clt_module)");
        return NULL;
    }
    m = clt__alloc_zeroed(fn, type->size);
    if (!m || !(m->state = clt__alloc_zeroed(fn, sizeof *m->state))) {
        clt__free(m);
        return NULL;
    }
    m->type = type;
    atomic_init(&m->state->refs, 1);
    m->state->training = true;
    return m;
}

void clt__module_accept_any_device(clt_module *m)
{
    m->state->any_input_device = true;
}

clt_module *clt_module_retain(clt_module *m)
{
    if (m)
        atomic_fetch_add(&m->state->refs, 1);
    return m;
}

/* Drops what a module's state holds (its entries). */
static void clear_entries(struct clt__module_state *s)
{
    for (int i = 0; i < s->count; i++) {
        if (s->entries[i].kind == CHILD)
            clt_module_release(s->entries[i].child);
        else
            clt_tensor_release(s->entries[i].tensor);
        clt__free(s->entries[i].name);
    }
    clt__free(s->entries);
    s->entries = NULL;
    s->count = s->capacity = 0;
}

void clt_module_release(clt_module *m)
{
    if (!m || atomic_fetch_sub(&m->state->refs, 1) != 1)
        return;
    if (m->type->destroy)
        m->type->destroy(m);
    clear_entries(m->state);
    clt__free(m->state);
    clt__free(m);
}

/* ---- registration and lookup ------------------------------------------------------------------ */

static entry *find(const clt_module *m, const char *name, size_t len)
{
    for (int i = 0; i < m->state->count; i++)
        if (strlen(m->state->entries[i].name) == len && strncmp(m->state->entries[i].name, name, len) == 0)
            return &m->state->entries[i];
    return NULL;
}

/* Whether m is `target` or holds it at any depth (the modules are a tree or a DAG: every
 * registration keeps them free of cycles). */
static bool contains(const clt_module *m, const clt_module *target)
{
    if (m == target)
        return true;
    for (int i = 0; i < m->state->count; i++)
        if (m->state->entries[i].kind == CHILD && contains(m->state->entries[i].child, target))
            return true;
    return false;
}

static clt_status add(const char *fn, clt_module *m, const char *name, int kind, clt_tensor *t,
                      clt_module *child)
{
    clt_tensor *first, *theirs;
    entry *grown, e = {NULL, kind, t, child};
    if (!m || !name || (kind != CHILD && !t) || (kind == CHILD && !child))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module, name and %s must not be NULL",
                          kind == CHILD ? "child" : "tensor");
    if (!*name || strchr(name, '.'))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "name \"%s\" is empty or contains '.'", name);
    if (find(m, name, strlen(name)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s already has a member named \"%s\"",
                          m->type->name, name);
    if (kind == CHILD && contains(child, m))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "\"%s\" (%s) is or contains the module (%s) it would join: modules "
                          "cannot form a cycle", name, child->type->name, m->type->name);
    /* once m holds a tensor, what joins it must be on that tensor's device */
    first = clt__module_first_tensor(m, false);
    theirs = kind == CHILD ? clt__module_first_tensor(child, false) : t;
    if (first && theirs && clt_tensor_device(theirs) != clt_tensor_device(first))
        return clt__error(CLT_ERR_DEVICE_MISMATCH, fn, "\"%s\" is on %s, the module (%s) on %s",
                          name, clt_tensor_device(theirs)->name, m->type->name,
                          clt_tensor_device(first)->name);
    if (m->state->count == m->state->capacity) {
        int cap = m->state->capacity ? 2 * m->state->capacity : 4;
        grown = clt__alloc(fn, (size_t)cap * sizeof *grown);
        if (!grown)
            return CLT_ERR_OUT_OF_MEMORY;
        if (m->state->count)
            memcpy(grown, m->state->entries, (size_t)m->state->count * sizeof *grown);
        clt__free(m->state->entries);
        m->state->entries = grown;
        m->state->capacity = cap;
    }
    if (kind == PARAMETER && clt__grad_fn(t))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "\"%s\" was made by a recorded operation (%s); a parameter must be a "
                          "leaf: detach it first", name, clt__op_name(clt__grad_fn(t)->op));
    if (kind == PARAMETER && clt__is_floating(t->dtype) && !clt__grad_state_get(fn, t))
        return CLT_ERR_OUT_OF_MEMORY;
    if (!(e.name = clt__strdup(fn, name)))
        return CLT_ERR_OUT_OF_MEMORY;
    if (kind == PARAMETER && clt__is_floating(t->dtype))
        clt__grad_state_of(t)->requires_grad = true; /* as nn.Parameter;
                                                       * clt_tensor_set_requires_grad freezes it */
    if (kind == CHILD)
        clt_module_retain(child);
    else
        clt_tensor_retain(t);
    m->state->entries[m->state->count++] = e;
    return CLT_OK;
}

clt_status clt_module_register_parameter(clt_module *m, const char *name, clt_tensor *t)
{
    return add("clt_module_register_parameter", m, name, PARAMETER, t, NULL);
}

clt_status clt_module_register_buffer(clt_module *m, const char *name, clt_tensor *t)
{
    return add("clt_module_register_buffer", m, name, BUFFER, t, NULL);
}

clt_status clt_module_register_module(clt_module *m, const char *name, clt_module *child)
{
    return add("clt_module_register_module", m, name, CHILD, NULL, child);
}

/* The _take forms: add(), then the caller's reference dropped whatever happened; a NULL
 * object (its creation failed) is refused naming the error that creation left. */
static clt_status take(const char *fn, clt_module *m, const char *name, int kind, clt_tensor *t,
                       clt_module *child)
{
    clt_status st;
    if (!t && !child) {
        st = clt__error_null_taken(fn, name ? name : "(null)");
    } else {
        st = add(fn, m, name, kind, t, child);
    }
    clt_tensor_release(t);
    clt_module_release(child);
    return st;
}

clt_status clt_module_register_parameter_take(clt_module *m, const char *name, clt_tensor *t)
{
    return take("clt_module_register_parameter_take", m, name, PARAMETER, t, NULL);
}

clt_status clt_module_register_buffer_take(clt_module *m, const char *name, clt_tensor *t)
{
    return take("clt_module_register_buffer_take", m, name, BUFFER, t, NULL);
}

clt_status clt_module_register_module_take(clt_module *m, const char *name, clt_module *child)
{
    return take("clt_module_register_module_take", m, name, CHILD, NULL, child);
}

/* The entry at a dotted path, or NULL with the error set. */
static entry *lookup(const char *fn, const clt_module *m, const char *path, int kind)
{
    const char *dot, *full = path;
    const clt_module *top = m;
    entry *e;
    if (!m || !path) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module and name must not be NULL");
        return NULL;
    }
    while ((dot = strchr(path, '.')) != NULL) {
        e = find(m, path, (size_t)(dot - path));
        if (!e || e->kind != CHILD)
            goto missing;
        m = e->child;
        path = dot + 1;
    }
    e = find(m, path, strlen(path));
    if (e && e->kind == kind)
        return e;
missing:
    clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s has no %s named \"%s\"", top->type->name,
               kind == CHILD ? "child" : kind == PARAMETER ? "parameter" : "buffer", full);
    return NULL;
}

clt_tensor *clt_module_get_parameter(const clt_module *m, const char *name)
{
    entry *e = lookup("clt_module_get_parameter", m, name, PARAMETER);
    return e ? e->tensor : NULL;
}

clt_tensor *clt_module_get_buffer(const clt_module *m, const char *name)
{
    entry *e = lookup("clt_module_get_buffer", m, name, BUFFER);
    return e ? e->tensor : NULL;
}

clt_module *clt_module_get_child(const clt_module *m, const char *name)
{
    entry *e = lookup("clt_module_get_child", m, name, CHILD);
    return e ? e->child : NULL;
}

/* ---- iteration ----------------------------------------------------------------------------------- */

/* The distinct tensors seen so far in one walk. */
typedef struct seen {
    clt_tensor **items;
    int count, capacity;
    bool failed;
} seen;

static bool seen_add(const char *fn, seen *s, clt_tensor *t)
{
    for (int i = 0; i < s->count; i++)
        if (s->items[i] == t)
            return false;
    if (s->count == s->capacity) {
        int cap = s->capacity ? 2 * s->capacity : 16;
        clt_tensor **grown = clt__alloc(fn, (size_t)cap * sizeof *grown);
        if (!grown) {
            s->failed = true;
            return false;
        }
        if (s->count)
            memcpy(grown, s->items, (size_t)s->count * sizeof *grown);
        clt__free(s->items);
        s->items = grown;
        s->capacity = cap;
    }
    s->items[s->count++] = t;
    return true;
}

/* Walks m's tensors of `kind` (-1: parameters and buffers) depth first. */
static int walk(const char *fn, const clt_module *m, int kind, char *prefix, size_t used,
                size_t size, seen *s, clt_named_tensor_fn cb, void *user)
{
    for (int i = 0; i < m->state->count && !s->failed; i++) {
        entry *e = &m->state->entries[i];
        int n = snprintf(prefix + used, size - used, "%s%s", used ? "." : "", e->name);
        size_t len = n > 0 && (size_t)n < size - used ? used + (size_t)n : size - 1;
        int r = 0;
        if (e->kind == CHILD)
            r = walk(fn, e->child, kind, prefix, len, size, s, cb, user);
        else if ((kind < 0 || e->kind == kind) && seen_add(fn, s, e->tensor) && cb)
            r = cb(prefix, e->tensor, user);
        prefix[used] = '\0';
        if (r)
            return r;
    }
    return s->failed ? CLT_ERR_OUT_OF_MEMORY : 0;
}

static int foreach(const char *fn, const clt_module *m, int kind, clt_named_tensor_fn cb, void *user,
                   seen *keep)
{
    char prefix[1024] = "";
    seen s = {0};
    int r;
    if (!m)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
    r = walk(fn, m, kind, prefix, 0, sizeof prefix, &s, cb, user);
    if (keep && r == 0)
        *keep = s;
    else
        clt__free(s.items);
    return r;
}

int clt_module_foreach_parameter(const clt_module *m, clt_named_tensor_fn fn, void *user)
{
    return foreach("clt_module_foreach_parameter", m, PARAMETER, fn, user, NULL);
}

int clt_module_foreach_buffer(const clt_module *m, clt_named_tensor_fn fn, void *user)
{
    return foreach("clt_module_foreach_buffer", m, BUFFER, fn, user, NULL);
}

static int count_cb(const char *name, clt_tensor *t, void *user)
{
    (void)name;
    *(int64_t *)user += clt_tensor_numel(t);
    return 0;
}

int64_t clt_module_parameter_count(const clt_module *m)
{
    int64_t n = 0;
    return foreach("clt_module_parameter_count", m, PARAMETER, count_cb, &n, NULL) == 0 ? n : -1;
}

typedef struct collected {
    const char *fn;
    bool trainable_only, failed;
    clt_tensor **items;
    int count, capacity;
} collected;

static int collect_cb(const char *name, clt_tensor *t, void *user)
{
    collected *c = user;
    (void)name;
    if (c->trainable_only && !clt__requires_grad(t))
        return 0;
    if (c->count == c->capacity) {
        int cap = c->capacity ? 2 * c->capacity : 16;
        clt_tensor **grown = clt__alloc(c->fn, (size_t)cap * sizeof *grown);
        if (!grown) {
            c->failed = true;
            return 1;
        }
        if (c->count)
            memcpy(grown, c->items, (size_t)c->count * sizeof *grown);
        clt__free(c->items);
        c->items = grown, c->capacity = cap;
    }
    c->items[c->count++] = t;
    return 0;
}

clt_status clt__module_collect(const char *fn, const clt_module *m, bool buffers,
                               bool trainable_only, clt_tensor ***items, int *count)
{
    /* starts from a copy of the caller's array, so that a failure leaves the caller's intact */
    collected c = {.fn = fn};
    for (int i = 0; i < *count; i++)
        if (collect_cb(NULL, (*items)[i], &c)) {
            clt__free(c.items);
            return clt_last_status();
        }
    c.trainable_only = trainable_only;
    int r = foreach(fn, m, buffers ? BUFFER : PARAMETER, collect_cb, &c, NULL);
    if (r || c.failed) {
        clt__free(c.items);
        return c.failed ? clt_last_status() : clt__rename_error(fn);
    }
    clt__free(*items);
    *items = c.items, *count = c.count;
    return CLT_OK;
}

/* ---- properties and modes -------------------------------------------------------------------------- */

const char *clt_module_type_name(const clt_module *m)
{
    return m ? m->type->name : "(null)";
}

clt_tensor *clt__module_first_tensor(const clt_module *m, bool parameters_only)
{
    for (int i = 0; m && i < m->state->count; i++) {
        const entry *e = &m->state->entries[i];
        clt_tensor *t = e->kind == CHILD ? clt__module_first_tensor(e->child, parameters_only)
                        : !parameters_only || e->kind == PARAMETER ? e->tensor
                                                                   : NULL;
        if (t)
            return t;
    }
    return NULL;
}

clt_device *clt_module_device(const clt_module *m)
{
    clt_tensor *t = clt__module_first_tensor(m, false);
    return t ? clt_tensor_device(t) : clt_device_cpu();
}

void clt_module_train(clt_module *m, bool training)
{
    if (!m)
        return;
    m->state->training = training;
    for (int i = 0; i < m->state->count; i++)
        if (m->state->entries[i].kind == CHILD)
            clt_module_train(m->state->entries[i].child, training);
}

bool clt_module_is_training(const clt_module *m)
{
    return m && m->state->training;
}

/* ---- moving ------------------------------------------------------------------------------------------ */

/* Moves every distinct tensor, and its gradient, with options o: first every copy (any failure
 * releases them and changes nothing), then each tensor takes its copy's contents. */
static clt_status migrate(const char *fn, clt_module *m, const clt_to_options *o, bool floats_only)
{
    seen s = {0};
    clt_tensor **copies;
    clt_status st = CLT_OK;
    bool prev;
    int r = foreach(fn, m, -1, NULL, NULL, &s);
    if (r)
        return r;
    copies = clt__alloc_zeroed(fn, (size_t)(s.count ? 2 * s.count : 1) * sizeof *copies);
    if (!copies) {
        clt__free(s.items);
        return CLT_ERR_OUT_OF_MEMORY;
    }
    prev = clt_grad_set_enabled(false);
    for (int i = 0; i < s.count && st == CLT_OK; i++) {
        clt_tensor *t = s.items[i];
        if (floats_only && !clt__is_floating(clt_tensor_dtype(t)))
            continue;
        copies[i] = clt_tensor_to_ex(t, o);
        if (copies[i] && clt__grad_of(t))
            copies[s.count + i] = clt_tensor_to_ex(clt__grad_of(t), o);
        if (!copies[i] || (clt__grad_of(t) && !copies[s.count + i]))
            st = clt__rename_error(fn);
    }
    clt_grad_set_enabled(prev);
    for (int i = 0; i < s.count; i++) {
        clt_tensor *t = s.items[i], *g = clt__grad_of(t);
        if (st == CLT_OK && copies[i] && copies[i] != t)
            clt__tensor_swap(t, copies[i]); /* cannot fail */
        if (st == CLT_OK && g && copies[s.count + i] && copies[s.count + i] != g)
            clt__tensor_swap(g, copies[s.count + i]);
        clt_tensor_release(copies[i]);
        clt_tensor_release(copies[s.count + i]);
    }
    clt__free(copies);
    clt__free(s.items);
    return st;
}

clt_status clt_module_to(clt_module *m, clt_device *dev)
{
    static const char *const fn = "clt_module_to";
    if (!m || clt__device_check(fn, dev) != CLT_OK)
        return m ? clt_last_status() : clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
    return migrate(fn, m, &(clt_to_options){.device = dev}, false);
}

clt_status clt_module_to_dtype(clt_module *m, clt_dtype dtype)
{
    static const char *const fn = "clt_module_to_dtype";
    if (!m)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
    if (!clt__is_floating(dtype))
        return clt__error(CLT_ERR_DTYPE, fn, "dtype %s is not floating", clt_dtype_name(dtype));
    return migrate(fn, m, &(clt_to_options){.dtype = dtype}, true);
}

/* ---- deep copies ----------------------------------------------------------------------------------------- */

/* Original -> copy pairs (tensors and modules) of one clone. */
typedef struct relocations {
    const void **from;
    void **to;
    int count, capacity;
} relocations;

static void *relocated(const relocations *r, const void *p)
{
    for (int i = 0; i < r->count; i++)
        if (r->from[i] == p)
            return r->to[i];
    return NULL;
}

static bool relocate_add(const char *fn, relocations *r, const void *from, void *to)
{
    if (r->count == r->capacity) {
        int cap = r->capacity ? 2 * r->capacity : 16;
        const void **f = clt__alloc(fn, (size_t)cap * sizeof *f);
        void **t = f ? clt__alloc(fn, (size_t)cap * sizeof *t) : NULL;
        if (!t) {
            clt__free(f);
            return false;
        }
        if (r->count) {
            memcpy(f, r->from, (size_t)r->count * sizeof *f);
            memcpy(t, r->to, (size_t)r->count * sizeof *t);
        }
        clt__free(r->from);
        clt__free(r->to);
        r->from = f, r->to = t, r->capacity = cap;
    }
    r->from[r->count] = from;
    r->to[r->count++] = to;
    return true;
}

/* An independent copy of t on dev: a leaf, whatever recording does. */
static clt_tensor *copy_tensor(clt_tensor *t, clt_device *dev)
{
    bool prev = clt_grad_set_enabled(false);
    clt_tensor *c = clt_tensor_to_ex(t, &(clt_to_options){.device = dev, .copy = true});
    clt_grad_set_enabled(prev);
    return c;
}

static clt_module *clone(const char *fn, const clt_module *m, clt_device *dev, relocations *r)
{
    clt_module *c = clt_module_new(m->type);
    size_t user = m->type->size - sizeof(clt_module);
    clt_status st = CLT_OK;
    if (!c)
        return NULL;
    c->state->training = m->state->training;
    for (int i = 0; i < m->state->count && st == CLT_OK; i++) {
        entry *e = &m->state->entries[i];
        bool is_child = e->kind == CHILD;
        const void *orig = is_child ? (const void *)e->child : (const void *)e->tensor;
        void *copy = relocated(r, orig); /* shared: copied once */
        if (copy) {
            st = add(fn, c, e->name, e->kind, is_child ? NULL : copy, is_child ? copy : NULL);
            if (!is_child && st == CLT_OK) /* add makes a parameter require grad: a frozen one */
                st = clt__grad_set_flag(fn, copy, clt__requires_grad(e->tensor)); /* stays so */
            continue;
        }
        copy = is_child ? (void *)clone(fn, e->child, dev, r) : (void *)copy_tensor(e->tensor, dev);
        if (!copy) {
            st = clt__rename_error(fn);
            break;
        }
        st = relocate_add(fn, r, orig, copy) ? add(fn, c, e->name, e->kind, is_child ? NULL : copy, is_child ? copy : NULL)
                                            : CLT_ERR_OUT_OF_MEMORY;
        if (!is_child && st == CLT_OK)
            st = clt__grad_set_flag(fn, copy, clt__requires_grad(e->tensor));
        /* the clone's registry holds it now (or nothing does, after a failure) */
        if (is_child)
            clt_module_release(copy);
        else
            clt_tensor_release(copy);
    }
    if (st == CLT_OK && user) {
        /* the type's own fields: plain values copied, pointers at registered things redirected */
        memcpy((char *)c + sizeof(clt_module), (const char *)m + sizeof(clt_module), user);
        for (size_t off = sizeof(clt_module); off + sizeof(void *) <= m->type->size; off += sizeof(void *)) {
            void *p, *to;
            memcpy(&p, (char *)c + off, sizeof p);
            if (p && (to = relocated(r, p)) != NULL)
                memcpy((char *)c + off, &to, sizeof to);
        }
        if (m->type->clone && (st = m->type->clone(m, c)) != CLT_OK)
            memset((char *)c + sizeof(clt_module), 0, user);
    }
    if (st != CLT_OK) {
        clt_module_release(c);
        return NULL;
    }
    return c;
}

clt_module *clt_module_clone_to(const clt_module *m, clt_device *dev)
{
    static const char *const fn = "clt_module_clone_to";
    relocations r = {0};
    clt_module *c;
    if (!m || clt__device_check(fn, dev) != CLT_OK) {
        if (!m)
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
        return NULL;
    }
    c = clone(fn, m, dev, &r);
    clt__free(r.from);
    clt__free(r.to);
    return c;
}

/* ---- forward --------------------------------------------------------------------------------------------- */

/* The forwards running on this thread, outermost first, and the error a failed one left: when a
 * child's forward fails inside its parent's, each level puts the child's name in front of the
 * path, so that the outermost error names the module at fault ("4.1 (Linear): ..."). */
#define FORWARD_DEPTH 64
typedef struct forward_trace {
    int depth;
    const clt_module *running[FORWARD_DEPTH];
    char path[256], type[64], cause[1024];
    char error[1536]; /* the message the last failed forward left, to recognise it */
} forward_trace;
static _Thread_local forward_trace trace;

/* The name under which parent holds child directly, or NULL. */
static const char *child_name(const clt_module *parent, const clt_module *child)
{
    for (int i = 0; i < parent->state->count; i++)
        if (parent->state->entries[i].kind == CHILD && parent->state->entries[i].child == child)
            return parent->state->entries[i].name;
    return NULL;
}

/* Rewrites the last error of m's failed forward as fn's, with the path of the failing module. */
static void forward_failed(const char *fn, const clt_module *m)
{
    const char *err = clt_last_error(), *colon;
    clt_status st = clt_last_status();
    if (!trace.error[0] || strcmp(err, trace.error) != 0) { /* a new failure, not a child's */
        colon = strstr(err, ": ");
        snprintf(trace.cause, sizeof trace.cause, "%s", colon ? colon + 2 : err);
        trace.path[0] = trace.type[0] = '\0';
    }
    const clt_module *parent = trace.depth > 0 && trace.depth <= FORWARD_DEPTH
                                   ? trace.running[trace.depth - 1]
                                   : NULL;
    const char *name = parent ? child_name(parent, m) : NULL;
    if (name) {
        char path[sizeof trace.path];
        snprintf(path, sizeof path, "%s%s%s", name, trace.path[0] ? "." : "", trace.path);
        memcpy(trace.path, path, sizeof path);
        if (!trace.type[0])
            snprintf(trace.type, sizeof trace.type, "%s", m->type->name);
    }
    if (trace.path[0])
        clt__error(st, fn, "%s (%s): %s", trace.path, trace.type, trace.cause);
    else
        clt__error(st, fn, "%s", trace.cause);
    snprintf(trace.error, sizeof trace.error, "%s", clt_last_error());
}

/* CLT_OK when m takes tensors from anywhere or has no parameters, or every input given is on
 * m's device; else CLT_ERR_DEVICE_MISMATCH naming the input (by its index, of several). */
static clt_status inputs_on_device(const char *fn, const clt_module *m, int n,
                                   clt_tensor *const *inputs)
{
    clt_device *dev;
    if (m->state->any_input_device || !clt__module_first_tensor(m, true))
        return CLT_OK;
    dev = clt_module_device(m);
    for (int i = 0; i < n; i++) {
        clt_device *at = inputs[i] ? clt_tensor_device(inputs[i]) : dev;
        if (at == dev)
            continue;
        if (n == 1)
            return clt__error(CLT_ERR_DEVICE_MISMATCH, fn,
                              "the input is on %s, the module (%s) "
                              "on %s",
                              clt_device_name(at), m->type->name, dev->name);
        return clt__error(CLT_ERR_DEVICE_MISMATCH, fn,
                          "input %d is on %s, the module (%s) on %s", i, clt_device_name(at),
                          m->type->name, dev->name);
    }
    return CLT_OK;
}

/* CLT_OK when a forward_many that succeeded wrote every output; else it releases them and
 * names the first one missing. */
static clt_status outputs_complete(const char *fn, const clt_module *m, int n, clt_tensor **out)
{
    int missing = -1;
    for (int i = 0; i < n && missing < 0; i++)
        if (!out[i])
            missing = i;
    if (missing < 0)
        return CLT_OK;
    for (int i = 0; i < n; i++) {
        clt_tensor_release(out[i]);
        out[i] = NULL;
    }
    return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                      "%s's forward_many succeeded without "
                      "output %d",
                      m->type->name, missing);
}

/* The type's forward_many, or its forward on one input for one output (what a type with both
 * runs for clt_module_forward: `one`), with the trace kept: m is checked and every outputs[i]
 * NULL. On failure every outputs[i] is NULL again and the error renamed to fn, with the path of
 * the module at fault. */
static clt_status run_forward(const char *fn, clt_module *m, bool one, int n_in,
                              clt_tensor *const *in, int n_out, clt_tensor **out)
{
    const clt_module_type *t = m->type;
    bool many = t->forward_many && (!one || !t->forward);
    clt_status st = inputs_on_device(fn, m, n_in, in);
    if (st == CLT_OK && !t->forward && !t->forward_many)
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s has no forward function", t->name);
    if (st == CLT_OK && !many && (n_in != 1 || n_out != 1))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                        "%s takes one input and gives one output, not %d and %d", t->name, n_in,
                        n_out);
    if (st == CLT_OK && !many && !in[0])
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s needs its one input, and it is NULL",
                        t->name);
    if (st != CLT_OK) {
        forward_failed(fn, m);
        return st;
    }
    if (trace.depth == 0)
        trace.error[0] = '\0';
    if (trace.depth < FORWARD_DEPTH)
        trace.running[trace.depth] = m;
    trace.depth++;
    if (many) {
        st = t->forward_many(m, n_in, in, n_out, out);
        if (st == CLT_OK)
            st = outputs_complete(fn, m, n_out, out);
    } else {
        out[0] = t->forward(m, in[0]);
        st = out[0] ? CLT_OK : clt_last_status();
    }
    trace.depth--;
    if (st != CLT_OK) {
        for (int i = 0; i < n_out; i++) /* the type released what it wrote */
            out[i] = NULL;
        forward_failed(fn, m);
    }
    return st;
}

clt_tensor *clt_module_forward(clt_module *m, clt_tensor *x)
{
    static const char *const fn = "clt_module_forward";
    clt_tensor *y = NULL;
    if (!m || clt__tensor_check(fn, x) != CLT_OK) {
        if (!m)
            clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "module is NULL");
        return NULL;
    }
    return run_forward(fn, m, true, 1, &x, 1, &y) == CLT_OK ? y : NULL;
}

clt_status clt_module_forward_many(clt_module *m, int n_inputs, clt_tensor *const *inputs,
                                   int n_outputs, clt_tensor **outputs)
{
    static const char *const fn = "clt_module_forward_many";
    for (int i = 0; outputs && i < n_outputs; i++)
        outputs[i] = NULL;
    if (!m || !outputs || (!inputs && n_inputs > 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s is NULL",
                          !m         ? "the module"
                          : !outputs ? "outputs"
                                     : "inputs");
    if (n_inputs < 0 || n_outputs < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "n_inputs %d and n_outputs %d: a "
                          "forward takes 0 or more inputs and gives 1 or more outputs",
                          n_inputs, n_outputs);
    return run_forward(fn, m, false, n_inputs, inputs, n_outputs, outputs);
}

/* ---- print(model) ------------------------------------------------------------------------------ */

/* Appends `text` with every line after the first indented by `indent` spaces. */
static void add_indented(clt__strbuf *b, const char *text, int indent)
{
    for (const char *nl; (nl = strchr(text, '\n')); text = nl + 1)
        clt__sb_add(b, "%.*s\n%*s", (int)(nl - text), text, indent, "");
    clt__sb_add(b, "%s", text);
}

/* m rendered at `indent` spaces (the indent of the line m starts on), as nn.Module.__repr__. */
static void format_module(clt__strbuf *b, const clt_module *m, int indent)
{
    char small[256], *extra = small;
    int n = m->type->extra_repr ? m->type->extra_repr(m, small, sizeof small) : 0;
    bool children = false;
    if (n < 0)
        n = 0, small[0] = '\0';
    if ((size_t)n >= sizeof small) {
        extra = clt__alloc(b->fn, (size_t)n + 1);
        if (!extra) {
            b->failed = true;
            return;
        }
        m->type->extra_repr(m, extra, (size_t)n + 1);
    }
    if (!n)
        extra[0] = '\0';
    for (int i = 0; i < m->state->count; i++)
        children |= m->state->entries[i].kind == CHILD;
    clt__sb_add(b, "%s(", m->type->name);
    if (!children && !strchr(extra, '\n')) {
        clt__sb_add(b, "%s)", extra);
    } else {
        if (n) {
            clt__sb_add(b, "\n%*s", indent + 2, "");
            add_indented(b, extra, indent + 2);
        }
        for (int i = 0; i < m->state->count; i++) {
            const entry *e = &m->state->entries[i];
            if (e->kind != CHILD)
                continue;
            clt__sb_add(b, "\n%*s(%s): ", indent + 2, "", e->name);
            format_module(b, e->child, indent + 2);
        }
        clt__sb_add(b, "\n%*s)", indent, "");
    }
    if (extra != small)
        clt__free(extra);
}

char *clt_module_format(const clt_module *m)
{
    clt__strbuf b = {.fn = "clt_module_format"};
    if (!m) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, b.fn, "module is NULL");
        return NULL;
    }
    format_module(&b, m, 0);
    return clt__sb_finish(&b);
}

clt_status clt_module_print(const clt_module *m)
{
    char *s = clt_module_format(m);
    if (!s)
        return clt__rename_error("clt_module_print");
    printf("%s\n", s);
    clt__free(s);
    return CLT_OK;
}
