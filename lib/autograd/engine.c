/* The backward pass: walks the graph from a root in dependency order, runs every node's
 * derivative, sums and converts the gradients each input receives, and adds the gradients of
 * the leaves into their grad only once every step has succeeded. */
#include <string.h>

#include "autograd/derivatives.h"
#include "cltensor/autograd.h"
#include "cltensor/ops.h"
#include "core/core.h"
#include "graph/graph.h"
#include "ops/ops_internal.h"

static const char *const fn = "clt_backward";

/* The nodes reachable from a root, in the order they were found; for the ready list, the order
 * they run in, and `ahead`: where the next node that sends work to another device goes. */
typedef struct walk {
    clt__node **nodes;
    int count, capacity, ahead;
} walk;

static clt_status push(walk *w, clt__node *n)
{
    if (w->count == w->capacity) {
        int cap = w->capacity ? 2 * w->capacity : 64;
        clt__node **grown = clt__alloc(fn, (size_t)cap * sizeof *grown);
        if (!grown)
            return clt_last_status();
        if (w->count)
            memcpy(grown, w->nodes, (size_t)w->count * sizeof *grown);
        clt__free(w->nodes);
        w->nodes = grown;
        w->capacity = cap;
    }
    w->nodes[w->count++] = n;
    return CLT_OK;
}

/* Finds every node reachable from root and counts the edges into each (deps). */
static clt_status discover(clt__node *root, walk *w)
{
    root->seen = true;
    if (push(w, root) != CLT_OK)
        return clt_last_status();
    for (int k = 0; k < w->count; k++) {
        clt__node *n = w->nodes[k];
        for (int i = 0; i < n->ninputs; i++) {
            clt__node *next = n->inputs[i].next;
            if (!next)
                continue;
            next->deps++;
            if (!next->seen) {
                next->seen = true;
                if (push(w, next) != CLT_OK)
                    return clt_last_status();
            }
        }
    }
    return CLT_OK;
}

/* Every node's saved tensors are still there and unchanged. */
static clt_status check_saved(const walk *w)
{
    for (int k = 0; k < w->count; k++) {
        clt__node *n = w->nodes[k];
        if (n->op == CLT__OP_LEAF)
            continue;
        if (n->freed)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                              "the graph through %s was freed by an earlier backward pass; pass "
                              "retain_graph = true to the first one to go through it twice",
                              clt__op_name(n->op));
        for (int i = 0; i <= n->ninputs; i++)
            if (n->saved[i] && atomic_load(&n->saved[i]->storage->version) != n->versions[i])
                return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                                  "a tensor %s saved for its backward pass was changed in place "
                                  "or moved since (version %u, saved at %u)",
                                  clt__op_name(n->op), atomic_load(&n->saved[i]->storage->version),
                                  n->versions[i]);
    }
    return CLT_OK;
}

/* g reshaped, summed and converted to what input e expects; consumes g. */
static clt_tensor *fit(clt_tensor *g, const clt__node_input *e)
{
    int dims[CLT_MAX_DIMS], nd = 0, lead = g->ndim - e->ndim;
    bool same = lead == 0;
    clt_tensor *t;
    for (int d = 0; same && d < e->ndim; d++)
        same = g->shape[d] == e->shape[d];
    if (!same) {
        if (lead < 0)
            goto shape_error;
        for (int d = 0; d < g->ndim; d++) {
            if (d < lead || (e->shape[d - lead] == 1 && g->shape[d] != 1))
                dims[nd++] = d;
            else if (e->shape[d - lead] != g->shape[d])
                goto shape_error;
        }
        t = nd ? clt_sum(g, dims, nd, true) : clt_tensor_retain(g);
        clt_tensor_release(g);
        g = t ? clt_reshape(t, e->ndim, e->shape) : NULL;
        clt_tensor_release(t);
        if (!g)
            return NULL;
    }
    if (g->storage->device != e->device) {
        clt__error(CLT_ERR_DEVICE_MISMATCH, fn, "a gradient on %s for an input on %s",
                   g->storage->device->name, e->device->name);
        clt_tensor_release(g);
        return NULL;
    }
    if (g->dtype != e->dtype) {
        t = clt_tensor_to_dtype(g, e->dtype);
        clt_tensor_release(g);
        g = t;
    }
    return g;
shape_error:;
    char a[256], b[256];
    clt__format_shape(a, sizeof a, g->ndim, g->shape);
    clt__format_shape(b, sizeof b, e->ndim, e->shape);
    clt__error(CLT_ERR_SHAPE, fn, "a gradient of shape %s for an input of shape %s", a, b);
    clt_tensor_release(g);
    return NULL;
}

/* next->grad += g; consumes g. */
static clt_status accumulate(clt__node *next, clt_tensor *g)
{
    clt_tensor *sum;
    if (!next->grad) {
        next->grad = g;
        return CLT_OK;
    }
    sum = clt_add(next->grad, g);
    clt_tensor_release(g);
    if (!sum)
        return clt_last_status();
    clt_tensor_release(next->grad);
    next->grad = sum;
    return CLT_OK;
}

/* Whether node n, ready, copies its gradient to another device for leaves alone (a replica's
 * parameter sending its gradient home, a parameter used on another device than its own): such
 * copies wait for n's device to finish what was queued before them, and nothing else waits for
 * them, so they run once nothing else is ready, after every device has been given its work. */
static bool held_back(const clt__node *n)
{
    if (n->op != CLT__OP_to || !n->grad)
        return false;
    for (int i = 0; i < n->ninputs; i++) {
        const clt__node *next = n->inputs[i].next;
        if (next && (next->op != CLT__OP_LEAF || n->inputs[i].device == clt_tensor_device(n->grad)))
            return false;
    }
    return true;
}

/* Whether node n, ready and not held back, copies its gradient to another device: a batch's part
 * that DataParallel ran there. It runs before the other ready nodes, so that the copy is queued
 * behind what its own device has queued so far, not behind the work those nodes would queue,
 * and the other device starts its part of the pass that much sooner. */
static bool sends_ahead(const clt__node *n)
{
    return n->op == CLT__OP_to && n->grad && n->ninputs == 1 &&
           n->inputs[0].device != clt_tensor_device(n->grad);
}

/* Puts n on the ready list: after the nodes yet to run, or where it sends work to another
 * device, before them (after those of its kind put there before it). */
static clt_status push_ready(walk *ready, clt__node *n)
{
    if (push(ready, n) != CLT_OK)
        return clt_last_status();
    if (sends_ahead(n)) {
        memmove(ready->nodes + ready->ahead + 1, ready->nodes + ready->ahead,
                (size_t)(ready->count - 1 - ready->ahead) * sizeof *ready->nodes);
        ready->nodes[ready->ahead++] = n;
    }
    return CLT_OK;
}

/* Where n copied its input from a peer device (one context: a DataParallel replica's parameter)
 * and a gradient of the same dtype and shape has already arrived there, g is added to that one
 * straight from this device's buffer, with no copy home first: true, *st the outcome. */
static bool add_at_peer(clt__node *n, clt_tensor *g, clt_status *st)
{
    clt__node *next = n->ninputs == 1 ? n->inputs[0].next : NULL;
    clt_tensor *sum;
    if (n->op != CLT__OP_to || !next || !next->grad || next->grad->dtype != n->inputs[0].dtype ||
        !clt__peer_alike(next->grad, g))
        return false;
    sum = clt__add_peer(fn, next->grad, g);
    *st = sum ? CLT_OK : clt__rename_error(fn);
    if (sum) {
        clt_tensor_release(next->grad);
        next->grad = sum;
    }
    return true;
}

/* Runs node n's derivative on its accumulated gradient and passes the results on; pushes the
 * inputs whose every gradient has arrived onto the ready list, or the held-back one; lets go of
 * n's gradient once it has run. */
static clt_status run_node(clt__node *n, walk *ready, walk *held)
{
    clt_tensor *gi_small[4] = {NULL}, **gi = gi_small, *g;
    clt_status st = CLT_OK;
    if (n->ninputs > 4 && !(gi = clt__alloc_zeroed(fn, (size_t)n->ninputs * sizeof *gi)))
        return clt_last_status();
    g = clt__contiguous(fn, n->grad);
    if (!g)
        st = clt__rename_error(fn);
    else if (!add_at_peer(n, g, &st) && clt__derivative(n->op)(n, g, gi) != CLT_OK)
        st = clt__rename_error(fn);
    clt_tensor_release(g);
    for (int i = 0; i < n->ninputs; i++) {
        clt__node *next = n->inputs[i].next;
        if (st == CLT_OK && next && gi[i]) {
            clt_tensor *f = fit(gi[i], &n->inputs[i]);
            gi[i] = NULL;
            st = f ? accumulate(next, f) : clt_last_status();
        }
        clt_tensor_release(gi[i]);
        if (next && --next->deps == 0 && next->grad && st == CLT_OK)
            st = held_back(next) ? push(held, next) : push_ready(ready, next);
    }
    /* n's gradient is spent: let go of it now, so that a leaf's gradient that is a view of it
     * (a reshaped weight's) is the leaf's alone and kept without a copy, and so that the pass
     * holds no more memory than it still needs */
    clt_tensor_release(n->grad);
    n->grad = NULL;
    if (gi != gi_small)
        clt__free(gi);
    return st;
}

/* The gradient each leaf will have: its current grad plus what arrived. */
static clt_tensor *new_leaf_grad(clt__node *acc)
{
    clt_tensor *leaf = acc->leaf, *g = acc->grad;
    if (g->storage->device != leaf->storage->device || g->dtype != leaf->dtype) {
        clt__error(CLT_ERR_DEVICE_MISMATCH, fn,
                   "a leaf was moved or converted (now %s on %s) after the graph was recorded "
                   "(%s on %s): compute the loss again",
                   clt_dtype_name(leaf->dtype), leaf->storage->device->name,
                   clt_dtype_name(g->dtype), g->storage->device->name);
        return NULL;
    }
    if (!clt__same_shape(g, leaf)) { /* only a backward hook can have made it so */
        char a[256], b[256];
        clt__format_shape(a, sizeof a, g->ndim, g->shape);
        clt__format_shape(b, sizeof b, leaf->ndim, leaf->shape);
        clt__error(CLT_ERR_SHAPE, fn, "a leaf of shape %s was given a gradient of shape %s (by "
                   "a backward hook): it must have the leaf's shape", b, a);
        return NULL;
    }
    if (clt__grad_of(leaf))
        return clt_add(clt__grad_of(leaf), g);
    /* a leaf's grad is its own: the tensor that arrived may be shared (the same gradient sent
     * to both inputs of an add, a view of a cat's gradient, the caller's own grad argument), or
     * the first part of a larger buffer that it would keep alive (a cat's gradient, once the
     * cat's node has let go of it) */
    if (atomic_load(&g->refs) == 1 && atomic_load(&g->storage->refs) == 1 && g->offset == 0 &&
        clt_tensor_is_contiguous(g) && g->storage->nbytes == g->numel * clt_dtype_size(g->dtype) &&
        !clt__grad_of(g) && !clt__grad_fn(g)) /* (a hook's may hold more) */
        return clt_tensor_retain(g);
    return clt_tensor_to_ex(g, &(clt_to_options){.copy = true});
}

static clt_tensor *root_grad(clt_tensor *root, clt_tensor *grad)
{
    if (!grad) {
        if (root->numel != 1) {
            char a[256];
            clt__format_shape(a, sizeof a, root->ndim, root->shape);
            clt__error(CLT_ERR_SHAPE, fn,
                       "the root has shape %s: a gradient is implied only for one element; "
                       "pass one of its shape", a);
            return NULL;
        }
        return clt_tensor_ones(root->ndim, root->shape, root->dtype, root->storage->device);
    }
    if (grad->storage->device != root->storage->device) {
        clt__error(CLT_ERR_DEVICE_MISMATCH, fn, "the gradient is on %s, the root on %s",
                   grad->storage->device->name, root->storage->device->name);
        return NULL;
    }
    if (!clt__same_shape(grad, root)) {
        char a[256], b[256];
        clt__format_shape(a, sizeof a, grad->ndim, grad->shape);
        clt__format_shape(b, sizeof b, root->ndim, root->shape);
        clt__error(CLT_ERR_SHAPE, fn, "the gradient has shape %s, the root %s", a, b);
        return NULL;
    }
    return clt_tensor_to_dtype(grad, root->dtype);
}

clt_status clt_backward(clt_tensor *root, clt_tensor *grad, bool retain_graph)
{
    return clt_backward_ex(root, grad, retain_graph, NULL);
}

clt_status clt_backward_ex(clt_tensor *root, clt_tensor *grad, bool retain_graph,
                           const clt_backward_hooks *hooks)
{
    walk all = {0}, ready = {0}, held = {0};
    int held_at = 0;
    clt__node *start;
    clt_tensor **sums = NULL;
    clt_status st;
    bool prev;
    if (clt__tensor_check(fn, root) != CLT_OK)
        return clt_last_status();
    if (!clt__requires_grad(root))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "the tensor does not require grad: it was not computed from a tensor "
                          "that does, with recording on");
    prev = clt_grad_set_enabled(false);
    start = clt__grad_edge(fn, root); /* a leaf: its own accumulation node */
    st = start ? CLT_OK : clt_last_status();
    if (st == CLT_OK && !(start->grad = root_grad(root, grad)))
        st = clt_last_status();
    if (st == CLT_OK)
        st = discover(start, &all);
    if (st == CLT_OK)
        st = check_saved(&all);
    if (st == CLT_OK)
        st = push(&ready, start);
    /* Kahn's order: a node runs once every gradient it receives has arrived, those that send
     * work to another device first; the held-back copies, in the order they became ready, once
     * nothing else is */
    for (int k = 0; st == CLT_OK && (k < ready.count || held_at < held.count); k++) {
        if (k == ready.count)
            st = push(&ready, held.nodes[held_at++]);
        clt__node *n = st == CLT_OK ? ready.nodes[k] : NULL;
        if (!n)
            break;
        ready.ahead = k + 1;
        if (n->op != CLT__OP_LEAF)
            st = run_node(n, &ready, &held);
        else if (hooks && hooks->leaf_ready && n->leaf && n->grad) /* a leaf's gradient is whole */
            hooks->leaf_ready(hooks->user, n->leaf, &n->grad);
    }
    if (hooks && hooks->finish) { /* also after a failure: the hook lets go of the gradients */
        clt_status fs = hooks->finish(hooks->user, st);
        if (st == CLT_OK && fs != CLT_OK)
            st = fs;
    }
    /* the leaves' new gradients, all made before any is set */
    if (st == CLT_OK && ready.count && !(sums = clt__alloc_zeroed(fn, (size_t)ready.count * sizeof *sums)))
        st = clt_last_status();
    for (int k = 0; st == CLT_OK && k < ready.count; k++) {
        clt__node *n = ready.nodes[k];
        if (n->op == CLT__OP_LEAF && n->leaf && n->grad && !(sums[k] = new_leaf_grad(n)))
            st = clt__rename_error(fn);
    }
    for (int k = 0; st == CLT_OK && k < ready.count; k++) {
        clt__node *n = ready.nodes[k];
        if (sums[k]) {
            clt__grad_state *ls = clt__grad_state_of(n->leaf); /* it has a node, so a state */
            clt_tensor_release(ls->grad);
            ls->grad = sums[k];
            sums[k] = NULL;
        }
        if (n->op != CLT__OP_LEAF && !retain_graph) {
            for (int i = 0; i <= n->ninputs; i++) {
                clt_tensor_release(n->saved[i]);
                n->saved[i] = NULL;
            }
            n->freed = true;
        }
    }
    for (int k = 0; sums && k < ready.count; k++)
        clt_tensor_release(sums[k]);
    for (int k = 0; k < all.count; k++) {
        clt__node *n = all.nodes[k];
        clt_tensor_release(n->grad);
        n->grad = NULL;
        n->deps = 0;
        n->seen = false;
    }
    if (start) {
        clt_tensor_release(start->grad);
        start->grad = NULL;
        start->seen = false;
    }
    clt__node_release(start);
    clt__free(sums);
    clt__free(all.nodes);
    clt__free(ready.nodes);
    clt__free(held.nodes);
    clt_grad_set_enabled(prev);
    return st == CLT_OK ? CLT_OK : clt__rename_error(fn);
}
