/* The containers, temporaries, attention heads and attention of cltensor_models (see
 * common.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

const char *clt__models_shape(int ndim, const int64_t *shape, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < ndim && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (n < size)
        snprintf(buf + n, size - n, ")");
    return buf;
}

clt_module *clt__models_container(const clt_module_type *type, int n, const char *const *names,
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

MODELS_CONTAINER_TYPE(list_type, "ModuleList");

clt_module *clt__models_layers(int n, clt_module *(*layer)(const void *config),
                               const void *config)
{
    clt_module *list = clt_module_new(&list_type);
    bool ok = list != NULL;
    for (int i = 0; ok && i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "%d", i);
        ok = clt_module_register_module_take(list, name, layer(config)) == CLT_OK;
    }
    if (!ok) {
        clt_module_release(list);
        return NULL;
    }
    return list;
}

clt_tensor *clt__models_run(clt_module *m, const char *child, clt_tensor *x)
{
    return clt_module_forward(clt_module_get_child(m, child), x);
}

clt_tensor *clt__models_normal(int64_t rows, int64_t cols, double std)
{
    clt_tensor *r = clt_tensor_randn(CLT_SHAPE(rows, cols), CLT_F32, clt_device_cpu());
    clt_tensor *s = r ? clt_mul_scalar(r, std) : NULL;
    clt_tensor_release(r);
    return s;
}

clt_tensor *clt__models_keep(models_pool *p, clt_tensor *t)
{
    if (!t || p->n == MODELS_POOL_MAX)
        p->failed = true;
    if (t && p->n < MODELS_POOL_MAX)
        p->t[p->n++] = t;
    else
        clt_tensor_release(t);
    return p->failed ? NULL : t;
}

void clt__models_drain(models_pool *p)
{
    for (int i = 0; i < p->n; i++)
        clt_tensor_release(p->t[i]);
    p->n = 0;
}

clt_tensor *clt__models_split_heads(clt_tensor *x, int n_head)
{
    int64_t B = clt_tensor_size(x, 0), T = clt_tensor_size(x, 1), C = clt_tensor_size(x, 2);
    clt_tensor *v = clt_reshape(x, CLT_SHAPE(B, T, n_head, C / n_head));
    clt_tensor *out = v ? clt_permute(v, (int[]){0, 2, 1, 3}) : NULL;
    clt_tensor_release(v);
    return out;
}

clt_tensor *clt__models_merge_heads(clt_tensor *x)
{
    int64_t B = clt_tensor_size(x, 0), H = clt_tensor_size(x, 1), T = clt_tensor_size(x, 2);
    int64_t D = clt_tensor_size(x, 3);
    clt_tensor *t = clt_permute(x, (int[]){0, 2, 1, 3});
    clt_tensor *out = t ? clt_reshape(t, CLT_SHAPE(B, T, H * D)) : NULL;
    clt_tensor_release(t);
    return out;
}

/* ---- attention with dropout on its probabilities ---------------------------------------- */

#define K(expr) MODELS_KEEP(&p, (expr))

/* The bool (L, S) mask of the keys each query must not see under PyTorch's is_causal (aligned
 * at the top left): key j after query i. */
static clt_tensor *causal_hidden(int64_t L, int64_t S, clt_device *dev)
{
    models_pool p = {.n = 0};
    clt_tensor *i = K(clt_tensor_arange(0, (double)L, 1, CLT_I64, dev));
    clt_tensor *j = i ? K(clt_tensor_arange(0, (double)S, 1, CLT_I64, dev)) : NULL;
    clt_tensor *col = j ? K(clt_reshape(i, CLT_SHAPE(L, 1))) : NULL;
    clt_tensor *hidden = col ? clt_gt(j, col) : NULL;
    clt__models_drain(&p);
    return hidden;
}

/* scores with what the options hide set to -inf, or an additive mask added. */
static clt_tensor *masked(clt_tensor *scores, const clt_attention_options *o, clt_device *dev)
{
    models_pool p = {.n = 0};
    int n = clt_tensor_ndim(scores);
    clt_tensor *hidden = NULL, *out = NULL;
    if (o->causal) {
        hidden = K(causal_hidden(clt_tensor_size(scores, n - 2), clt_tensor_size(scores, n - 1),
                                 dev));
    } else if (o->mask && clt_tensor_dtype(o->mask) == CLT_BOOL) {
        clt_tensor *no = K(clt_tensor_zeros(0, NULL, CLT_BOOL, dev));
        hidden = no ? K(clt_eq(o->mask, no)) : NULL;
    } else if (o->mask) {
        out = clt_add(scores, o->mask);
    } else {
        out = clt_tensor_retain(scores);
    }
    if (hidden)
        out = clt_masked_fill(scores, hidden, -INFINITY);
    clt__models_drain(&p);
    return out;
}

/* softmax(q k^T scale + mask) with dropout at p, then times v: each step an operation of its
 * own, the scores and softmax in f32 for f16 and bf16 inputs. */
static clt_tensor *unfused(clt_tensor *q, clt_tensor *k, clt_tensor *v,
                           const clt_attention_options *o, double p_drop)
{
    models_pool p = {.n = 0};
    clt_dtype dt = clt_tensor_dtype(q);
    clt_dtype wide = dt == CLT_F16 || dt == CLT_BF16 ? CLT_F32 : dt;
    double scale = o->scale != 0 ? o->scale : 1 / sqrt((double)clt_tensor_size(q, -1));
    clt_tensor *qw = K(clt_tensor_to_dtype(q, wide));
    clt_tensor *kw = qw ? K(clt_tensor_to_dtype(k, wide)) : NULL;
    clt_tensor *kt = kw ? K(clt_transpose(kw, -2, -1)) : NULL;
    clt_tensor *raw = kt ? K(clt_matmul(qw, kt)) : NULL;
    clt_tensor *scores = raw ? K(clt_mul_scalar(raw, scale)) : NULL;
    clt_tensor *hid = scores ? K(masked(scores, o, clt_tensor_device(q))) : NULL;
    clt_tensor *probs = hid ? K(clt_softmax(hid, -1)) : NULL;
    clt_tensor *back = probs ? K(clt_tensor_to_dtype(probs, clt_tensor_dtype(v))) : NULL;
    clt_tensor *dropped = back ? K(clt_dropout(back, p_drop, true)) : NULL;
    clt_tensor *out = dropped ? clt_matmul(dropped, v) : NULL;
    clt__models_drain(&p);
    return out;
}

clt_tensor *clt__models_attention(clt_tensor *q, clt_tensor *k, clt_tensor *v,
                                  const clt_attention_options *o, double p, bool training)
{
    if (!training || p == 0)
        return clt_scaled_dot_product_attention(q, k, v, o);
    return unfused(q, k, v, o, p);
}
