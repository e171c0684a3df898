/* The autograd graph: recording mode, the recorded operations' names and saved values, nodes
 * and their saved tensors, leaves' accumulation nodes, and the public accessors of a tensor's
 * autograd state. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cltensor/autograd.h"
#include "core/core.h"
#include "graph/graph.h"

static _Thread_local bool grad_disabled;
/* Guards making a leaf's accumulation node, which threads sharing a leaf may race to do. */
static pthread_mutex_t accumulate_lock = PTHREAD_MUTEX_INITIALIZER;

/* Each operation's name and what its backward pass needs saved, by id. */
static const struct {
    const char *name;
    unsigned save;
} ops[CLT__OP_COUNT] = {
    [CLT__OP_LEAF] = {"AccumulateGrad", 0},
#define CLT__GRAPH_OP_INFO(id, name, save) [CLT__OP_##id] = {name, save},
    CLT__GRAPH_OPS(CLT__GRAPH_OP_INFO)
#undef CLT__GRAPH_OP_INFO
};

/* The id of each differentiable elementwise operation. */
static const clt__op ew_ops[CLT_EW_COUNT] = {
    [CLT_EW_add] = CLT__OP_add,
    [CLT_EW_sub] = CLT__OP_sub,
    [CLT_EW_mul] = CLT__OP_mul,
    [CLT_EW_div] = CLT__OP_div,
    [CLT_EW_pow] = CLT__OP_pow,
    [CLT_EW_maximum] = CLT__OP_maximum,
    [CLT_EW_minimum] = CLT__OP_minimum,
    [CLT_EW_addcmul] = CLT__OP_addcmul,
    [CLT_EW_mul_rsqrt] = CLT__OP_mul_rsqrt,
    [CLT_EW_prelu] = CLT__OP_prelu,
    [CLT_EW_add_scalar] = CLT__OP_add_scalar,
    [CLT_EW_mul_scalar] = CLT__OP_mul_scalar,
    [CLT_EW_rsub_scalar] = CLT__OP_rsub_scalar,
    [CLT_EW_div_scalar] = CLT__OP_div_scalar,
    [CLT_EW_pow_scalar] = CLT__OP_pow_scalar,
    [CLT_EW_neg] = CLT__OP_neg,
    [CLT_EW_abs] = CLT__OP_abs,
    [CLT_EW_exp] = CLT__OP_exp,
    [CLT_EW_log] = CLT__OP_log,
    [CLT_EW_sqrt] = CLT__OP_sqrt,
    [CLT_EW_rsqrt] = CLT__OP_rsqrt,
    [CLT_EW_sin] = CLT__OP_sin,
    [CLT_EW_cos] = CLT__OP_cos,
    [CLT_EW_tanh] = CLT__OP_tanh,
    [CLT_EW_sigmoid] = CLT__OP_sigmoid,
    [CLT_EW_relu] = CLT__OP_relu,
    [CLT_EW_gelu] = CLT__OP_gelu,
    [CLT_EW_gelu_tanh] = CLT__OP_gelu_tanh,
    [CLT_EW_silu] = CLT__OP_silu,
    [CLT_EW_clamp] = CLT__OP_clamp,
    [CLT_EW_where] = CLT__OP_where,
};

const char *clt__op_name(clt__op op)
{
    return op >= 0 && op < CLT__OP_COUNT ? ops[op].name : "?";
}

clt__op clt__op_of_ew(clt__ew_op op)
{
    return op >= 0 && op < CLT_EW_COUNT ? ew_ops[op] : CLT__OP_LEAF;
}

bool clt_grad_is_enabled(void)
{
    return !grad_disabled;
}

bool clt_grad_set_enabled(bool enabled)
{
    bool prev = !grad_disabled;
    grad_disabled = !enabled;
    return prev;
}

bool clt__any_requires_grad(clt_tensor *const *in, int n)
{
    for (int i = 0; i < n; i++)
        if (in[i] && clt__requires_grad(in[i]))
            return true;
    return false;
}

bool clt__grad_begin(clt_tensor *const *in, int n, bool *prev)
{
    bool rec = !grad_disabled && clt__any_requires_grad(in, n);
    *prev = clt_grad_set_enabled(false);
    return rec;
}

void clt__grad_end(bool prev)
{
    clt_grad_set_enabled(prev);
}

/* ---- nodes ------------------------------------------------------------------------------------ */

/* Nodes whose last reference this thread dropped, waiting to be freed: freeing one releases
 * its inputs' nodes and its saved tensors, which may drop more, and a chain of a million
 * operations must not take a million nested calls. */
static _Thread_local clt__node *doomed;
static _Thread_local bool freeing;

static void node_free(clt__node *n)
{
    for (int i = 0; i < n->ninputs; i++)
        clt__node_release(n->inputs[i].next);
    for (int i = 0; n->saved && i <= n->ninputs; i++)
        clt_tensor_release(n->saved[i]);
    clt_tensor_release(n->grad);
    clt__free(n->a.idx);
    clt__free(n->inputs);
    clt__free(n->saved);
    clt__free(n->versions);
    clt__free(n);
}

void clt__node_release(clt__node *n)
{
    if (!n || atomic_fetch_sub(&n->refs, 1) != 1)
        return;
    n->next_doomed = doomed;
    doomed = n;
    if (freeing) /* an outer call on this thread frees it */
        return;
    freeing = true;
    while ((n = doomed) != NULL) {
        doomed = n->next_doomed;
        node_free(n);
    }
    freeing = false;
}

static clt__node *node_alloc(const char *fn, int ninputs)
{
    clt__node *n = clt__alloc_zeroed(fn, sizeof *n);
    if (!n)
        return NULL;
    atomic_init(&n->refs, 1);
    n->ninputs = ninputs;
    if (ninputs && !(n->inputs = clt__alloc_zeroed(fn, (size_t)ninputs * sizeof *n->inputs))) {
        clt__free(n);
        return NULL;
    }
    return n;
}

clt__node *clt__grad_edge(const char *fn, clt_tensor *x)
{
    clt__grad_state *s = clt__grad_state_get(fn, x);
    clt__node *n;
    if (!s)
        return NULL;
    if (s->grad_fn) {
        atomic_fetch_add(&s->grad_fn->refs, 1);
        return s->grad_fn;
    }
    pthread_mutex_lock(&accumulate_lock);
    if (!s->accumulate && (s->accumulate = node_alloc(fn, 0)) != NULL)
        s->accumulate->leaf = x;
    n = s->accumulate;
    if (n)
        atomic_fetch_add(&n->refs, 1);
    pthread_mutex_unlock(&accumulate_lock);
    return n;
}

static clt_status save(const char *fn, clt__node *node, int slot, clt_tensor *t)
{
    if (!t)
        return CLT_OK;
    node->saved[slot] = clt__tensor_alias(fn, t);
    if (!node->saved[slot])
        return clt_last_status();
    node->versions[slot] = atomic_load(&t->storage->version);
    return CLT_OK;
}

clt__node *clt__node_new(const char *fn, clt__op op, clt_tensor *const *in, int n)
{
    clt__node *node = node_alloc(fn, n);
    if (!node)
        return NULL;
    node->op = op;
    node->saved = clt__alloc_zeroed(fn, (size_t)(n + 1) * sizeof *node->saved);
    node->versions = node->saved ? clt__alloc_zeroed(fn, (size_t)(n + 1) * sizeof *node->versions) : NULL;
    if (!node->versions)
        goto fail;
    for (int i = 0; i < n; i++) {
        clt__node_input *e = &node->inputs[i];
        if (!in[i])
            continue;
        e->ndim = in[i]->ndim;
        memcpy(e->shape, in[i]->shape, sizeof e->shape);
        e->dtype = in[i]->dtype;
        e->device = in[i]->storage->device;
        if (clt__requires_grad(in[i]) && !(e->next = clt__grad_edge(fn, in[i])))
            goto fail;
        if ((ops[op].save & (1u << i)) && save(fn, node, i, in[i]) != CLT_OK)
            goto fail;
    }
    return node;
fail:
    clt__node_release(node);
    return NULL;
}

clt_tensor *clt__node_finish(const char *fn, clt__node *node, clt_tensor *out)
{
    bool ok = node && out;
    clt__grad_state *s = NULL;
    if (ok && (ops[node->op].save & CLT__SAVE_OUT))
        ok = save(fn, node, node->ninputs, out) == CLT_OK;
    if (ok)
        ok = (s = clt__grad_state_get(fn, out)) != NULL;
    if (!ok) {
        clt__node_release(node);
        clt_tensor_release(out);
        return NULL;
    }
    s->grad_fn = node;
    s->requires_grad = true;
    return out;
}

clt_tensor *clt__record(const char *fn, clt__op op, clt_tensor *const *in, int n,
                        clt_tensor *out, const clt__node_args *args)
{
    clt__node *node;
    if (!out)
        return NULL;
    node = clt__node_new(fn, op, in, n);
    if (node && args) {
        node->a = *args;
        return clt__node_finish(fn, node, out);
    }
    if (args)
        clt__free(args->idx);
    return clt__node_finish(fn, node, out);
}

void clt__reduce_args(clt__node_args *args, int ndim, const int *dims, int ndims, bool keepdim)
{
    bool on[CLT_MAX_DIMS] = {false};
    for (int i = 0; i < ndims; i++)
        on[dims[i] < 0 ? dims[i] + ndim : dims[i]] = true;
    args->ndims = 0;
    for (int d = 0; d < ndim; d++)
        if (ndims == 0 || on[d])
            args->dims[args->ndims++] = d;
    args->keepdim = keepdim;
}

clt_status clt__grad_link_copy(const char *fn, clt_tensor *t, clt_tensor *source)
{
    clt__grad_state *s = clt__grad_state_get(fn, t);
    clt__node *node = s ? clt__node_new(fn, CLT__OP_to, &source, 1) : NULL;
    if (!node)
        return clt_last_status();
    clt__node_release(s->grad_fn);
    s->grad_fn = node;
    s->requires_grad = true;
    return CLT_OK;
}

void clt__grad_unlink(clt_tensor *t)
{
    clt__grad_state *s = clt__grad_state_of(t);
    if (s) {
        clt__node_release(s->grad_fn);
        s->grad_fn = NULL;
    }
}

/* ---- tensors ---------------------------------------------------------------------------------- */

clt_tensor *clt__tensor_alias(const char *fn, clt_tensor *t)
{
    clt_tensor *v = clt__alloc_zeroed(fn, sizeof *v);
    if (!v)
        return NULL;
    atomic_init(&v->refs, 1);
    atomic_fetch_add(&t->storage->refs, 1);
    clt__tensor_copy_data(v, t);
    return v;
}

/* The ext's release: drops the node and the accumulation node, and hands the gradient back for
 * clt_tensor_release to let go of next. */
static clt_tensor *state_release(clt__tensor_ext *ext)
{
    clt__grad_state *s = (clt__grad_state *)ext;
    clt_tensor *grad = s->grad;
    clt__node_release(s->grad_fn);
    if (s->accumulate) {
        pthread_mutex_lock(&accumulate_lock);
        s->accumulate->leaf = NULL;
        pthread_mutex_unlock(&accumulate_lock);
        clt__node_release(s->accumulate);
    }
    clt__free(s);
    return grad;
}

/* ", grad_fn=<MulBackward>" or ", requires_grad=True" in clt_tensor_format. */
static bool state_label(const clt__tensor_ext *ext, char *buf, size_t size)
{
    const clt__grad_state *s = (const clt__grad_state *)ext;
    if (s->grad_fn)
        snprintf(buf, size, "grad_fn=<%s>", clt__op_name(s->grad_fn->op));
    else if (s->requires_grad)
        snprintf(buf, size, "requires_grad=True");
    else
        return false;
    return true;
}

clt_status clt__grad_set_flag(const char *fn, clt_tensor *t, bool requires_grad)
{
    clt__grad_state *s;
    if (!requires_grad && !clt__grad_state_of(t))
        return CLT_OK;
    if (!(s = clt__grad_state_get(fn, t)))
        return clt_last_status();
    s->requires_grad = requires_grad;
    return CLT_OK;
}

clt__grad_state *clt__grad_state_get(const char *fn, clt_tensor *t)
{
    clt__tensor_ext *none = NULL;
    clt__grad_state *s = clt__grad_state_of(t);
    if (s)
        return s;
    if (!(s = clt__alloc_zeroed(fn, sizeof *s)))
        return NULL;
    s->ext = (clt__tensor_ext){state_release, state_label};
    if (!atomic_compare_exchange_strong(&t->ext, &none, &s->ext)) {
        clt__free(s); /* another thread's is in place: `none` holds it */
        return (clt__grad_state *)none;
    }
    return s;
}

clt_status clt__inplace_check(const char *fn, clt_tensor *out, clt_tensor *const *in, int n)
{
    if (grad_disabled)
        return CLT_OK;
    if (clt__requires_grad(out))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "the tensor requires grad: an in-place operation on it cannot be "
                          "recorded (use the out-of-place form, or turn recording off)");
    if (clt__any_requires_grad(in, n))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "an input requires grad: an in-place operation cannot be recorded "
                          "(use the out-of-place form, or turn recording off)");
    return CLT_OK;
}

clt_status clt_tensor_set_requires_grad(clt_tensor *x, bool requires_grad)
{
    static const char *const fn = "clt_tensor_set_requires_grad";
    if (clt__tensor_check(fn, x) != CLT_OK)
        return clt_last_status();
    if (clt__grad_fn(x))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "the tensor was made by %s, not a leaf: detach it first",
                          clt__op_name(clt__grad_fn(x)->op));
    if (requires_grad && !clt__is_floating(x->dtype))
        return clt__error(CLT_ERR_DTYPE, fn, "only floating tensors can require grad, not %s",
                          clt_dtype_name(x->dtype));
    return clt__grad_set_flag(fn, x, requires_grad);
}

bool clt_tensor_requires_grad(const clt_tensor *x)
{
    return x && clt__requires_grad(x);
}

bool clt_tensor_is_leaf(const clt_tensor *x)
{
    return x && !clt__grad_fn(x);
}

clt_tensor *clt_tensor_grad(const clt_tensor *x)
{
    return x ? clt_tensor_retain(clt__grad_of(x)) : NULL;
}

clt_status clt_tensor_set_grad(clt_tensor *x, clt_tensor *grad)
{
    static const char *const fn = "clt_tensor_set_grad";
    if (clt__tensor_check(fn, x) != CLT_OK)
        return clt_last_status();
    if (grad) {
        if (grad->storage->device != x->storage->device)
            return clt__error(CLT_ERR_DEVICE_MISMATCH, fn, "the gradient is on %s, the tensor on %s",
                              grad->storage->device->name, x->storage->device->name);
        if (grad->dtype != x->dtype)
            return clt__error(CLT_ERR_DTYPE, fn, "the gradient is %s, the tensor %s",
                              clt_dtype_name(grad->dtype), clt_dtype_name(x->dtype));
        if (!clt__same_shape(grad, x)) {
            char a[256], b[256];
            clt__format_shape(a, sizeof a, grad->ndim, grad->shape);
            clt__format_shape(b, sizeof b, x->ndim, x->shape);
            return clt__error(CLT_ERR_SHAPE, fn, "the gradient has shape %s, the tensor %s", a, b);
        }
        /* a tensor holding itself through its grads would never be freed (PyTorch refuses
         * a tensor as its own grad) */
        for (const clt_tensor *g = grad; g; g = clt__grad_of(g))
            if (g == x)
                return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                                  g == grad ? "a tensor cannot be its own gradient"
                                            : "the gradient holds the tensor through its own "
                                              "gradients: a cycle");
    }
    if (!grad && !clt__grad_state_of(x))
        return CLT_OK;
    clt__grad_state *s = clt__grad_state_get(fn, x);
    if (!s)
        return clt_last_status();
    clt_tensor_retain(grad);
    clt_tensor_release(s->grad);
    s->grad = grad;
    return CLT_OK;
}

const char *clt_tensor_grad_fn_name(const clt_tensor *x)
{
    return x && clt__grad_fn(x) ? clt__op_name(clt__grad_fn(x)->op) : NULL;
}

clt_tensor *clt_tensor_detach(clt_tensor *x)
{
    if (clt__tensor_check("clt_tensor_detach", x) != CLT_OK)
        return NULL;
    return clt__tensor_alias("clt_tensor_detach", x);
}
