/* The helpers the models of samples/models share (see common.h). */
#include <errno.h>
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
    errno = 0;
    *value = strtod(at, &end);
    return end != at && errno == 0;
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
    fclose(f);
    buf[n] = '\0';
    return CLT_OK;
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
