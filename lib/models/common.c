/* The helpers the models of samples/models share (see common.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

bool models_json_number(const char *text, const char *key, double *value)
{
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *at = strstr(text, quoted);
    if (!at)
        return false;
    at += strlen(quoted);
    while (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r')
        at++;
    if (*at++ != ':')
        return false;
    char *end;
    /* out of range: HUGE_VAL or a tiny number, for the caller to judge */
    *value = strtod(at, &end);
    return end != at;
}

clt_status models_read_text(const char *path, char *buf, size_t size, char *error,
                            size_t error_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(error, error_size, "%s: %s", path, strerror(errno));
        return CLT_ERR_IO;
    }
    size_t n = fread(buf, 1, size - 1, f);
    bool failed = ferror(f) != 0, more = !failed && n == size - 1 && fgetc(f) != EOF;
    fclose(f);
    buf[n] = '\0';
    if (failed)
        snprintf(error, error_size, "%s: cannot be read", path);
    else if (more)
        snprintf(error, error_size, "%s: larger than %zu bytes", path, size - 1);
    return failed || more ? CLT_ERR_IO : CLT_OK;
}

/* *value = v when v is a whole number from 1 to max, compared as a double before any
 * conversion; false with a message otherwise. */
static bool json_whole(const models_json *j, const char *key, double max, int64_t *value)
{
    double v;
    if (!models_json_number(j->text, key, &v))
        return true;
    if (!(v >= 1 && v <= max && v == floor(v))) {
        snprintf(j->error, j->size, "%s: %s %g is not a whole number from 1 to %.0f", j->path,
                 key, v, max);
        return false;
    }
    *value = (int64_t)v;
    return true;
}

bool models_json_size(const models_json *j, const char *key, int64_t *value)
{
    return json_whole(j, key, 9007199254740992.0, value); /* 2^53: every whole number exact */
}

bool models_json_int(const models_json *j, const char *key, int *value)
{
    int64_t v = *value;
    bool ok = json_whole(j, key, INT_MAX, &v);
    *value = (int)v;
    return ok;
}

const char *models_shape(int ndim, const int64_t *shape, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < ndim && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (n < size)
        snprintf(buf + n, size - n, ")");
    return buf;
}

clt_module *models_container(const clt_module_type *type, int n, const char *const *names,
                             clt_module **children)
{
    clt_module *m = clt_module_new(type);
    bool ok = m != NULL;
    for (int i = 0; i < n; i++) /* each child taken, also after a failure */
        ok = (ok ? clt_module_register_module_take(m, names[i], children[i])
                 : (clt_module_release(children[i]), CLT_ERR_INVALID_ARGUMENT)) == CLT_OK &&
             ok;
    if (!ok) {
        clt_module_release(m);
        return NULL;
    }
    return m;
}

clt_tensor *models_run(clt_module *m, const char *child, clt_tensor *x)
{
    return clt_module_forward(clt_module_get_child(m, child), x);
}

clt_tensor *models_keep(models_pool *p, clt_tensor *t)
{
    if (!t || p->n == MODELS_POOL_MAX)
        p->failed = true;
    if (t && p->n < MODELS_POOL_MAX)
        p->t[p->n++] = t;
    else
        clt_tensor_release(t);
    return p->failed ? NULL : t;
}

void models_drain(models_pool *p)
{
    for (int i = 0; i < p->n; i++)
        clt_tensor_release(p->t[i]);
    p->n = 0;
}

clt_tensor *models_split_heads(clt_tensor *x, int n_head)
{
    int64_t B = clt_tensor_size(x, 0), T = clt_tensor_size(x, 1), C = clt_tensor_size(x, 2);
    clt_tensor *v = clt_reshape(x, CLT_SHAPE(B, T, n_head, C / n_head));
    clt_tensor *out = v ? clt_permute(v, (int[]){0, 2, 1, 3}) : NULL;
    clt_tensor_release(v);
    return out;
}

clt_tensor *models_merge_heads(clt_tensor *x)
{
    int64_t B = clt_tensor_size(x, 0), H = clt_tensor_size(x, 1), T = clt_tensor_size(x, 2);
    int64_t D = clt_tensor_size(x, 3);
    clt_tensor *t = clt_permute(x, (int[]){0, 2, 1, 3});
    clt_tensor *out = t ? clt_reshape(t, CLT_SHAPE(B, T, H * D)) : NULL;
    clt_tensor_release(t);
    return out;
}
