/* The autograd graph as the operation front ends see it: a node per recorded operation, holding
 * where each input's gradient goes, the tensors its backward pass needs and the operation's
 * parameters. An operation records itself in four steps:
 *
 *     bool prev, rec = clt__grad_begin(in, n, &prev);   // its own steps record nothing
 *     out = ...compute...;
 *     clt__grad_end(prev);
 *     if (rec && out) { node = clt__node_new(fn, &derivative, in, n); ...set node->a...;
 *                       out = clt__node_finish(fn, node, out); }
 *
 * clt__node_new saves the inputs the derivative asks for; clt__node_finish saves the output if
 * asked and makes the node out's grad_fn; on a failure it releases out and the node and returns
 * NULL with the error set. */
#ifndef CLT_AUTOGRAD_GRAPH_H
#define CLT_AUTOGRAD_GRAPH_H

#include <stdatomic.h>

#include "tensor/tensor_internal.h"

typedef struct clt__node clt__node;

/* A tensor's autograd state, its `ext` (tensor/tensor_internal.h), made when it first needs one:
 * a tensor without it requires no grad, has no gradient and no node. */
typedef struct clt__grad_state {
    clt__tensor_ext ext;
    bool requires_grad;
    clt_tensor *grad;      /* accumulated gradient, or NULL */
    clt__node *grad_fn;    /* the node that made this tensor; NULL for a leaf */
    clt__node *accumulate; /* a leaf's accumulation node, made on first use */
} clt__grad_state;

/* t's state, made on first use; NULL with the error set (naming fn) when out of memory. */
clt__grad_state *clt__grad_state_get(const char *fn, clt_tensor *t);
/* Sets whether t requires grad, without the checks of clt_tensor_set_requires_grad (a module's
 * own copies); CLT_ERR_OUT_OF_MEMORY when t's state cannot be made. */
clt_status clt__grad_set_flag(const char *fn, clt_tensor *t, bool requires_grad);
/* t's state when it has one, else NULL; and the fields of it, as for a tensor without one. */
static inline clt__grad_state *clt__grad_state_of(const clt_tensor *t)
{
    return (clt__grad_state *)atomic_load(&((clt_tensor *)t)->ext);
}
static inline bool clt__requires_grad(const clt_tensor *t)
{
    const clt__grad_state *s = clt__grad_state_of(t);
    return s && s->requires_grad;
}
static inline clt_tensor *clt__grad_of(const clt_tensor *t)
{
    const clt__grad_state *s = clt__grad_state_of(t);
    return s ? s->grad : NULL;
}
static inline clt__node *clt__grad_fn(const clt_tensor *t)
{
    const clt__grad_state *s = clt__grad_state_of(t);
    return s ? s->grad_fn : NULL;
}

/* Computes gi[i], the gradient of input i, for every input with clt__node_wants(node, i), from
 * g, the gradient of the output (contiguous, the output's shape and dtype). A gi[i] may have a
 * shape that input i broadcasts to and another dtype: the engine sums and converts it. Runs
 * without recording. CLT_OK or the error of the failed step (gi[] released by the caller). */
typedef clt_status (*clt__backward_fn)(clt__node *node, clt_tensor *g, clt_tensor **gi);

#define CLT__SAVE_OUT 0x80000000u

/* What an operation's node does backward. */
typedef struct clt__derivative {
    const char *name;          /* "MulBackward" */
    clt__backward_fn backward; /* NULL: the operation is not differentiable */
    unsigned save;             /* bit i: save input i; CLT__SAVE_OUT: save the output */
} clt__derivative;

/* Where an input's gradient goes and what it must look like. */
typedef struct clt__node_input {
    clt__node *next;          /* the input's node (a reference), NULL when it needs no grad */
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
    clt_dtype dtype;
    clt_device *device;
} clt__node_input;

/* The parameters an operation's backward pass needs, set by the front end. */
typedef struct clt__node_args {
    int dims[CLT_MAX_DIMS], ndims; /* reduced, permuted or squeezed dimensions */
    int dim;
    bool keepdim;
    double s0, s1;                 /* scalars */
    int64_t i0, i1, i2;            /* offsets, sizes, corrections */
    clt__conv_call conv;           /* window geometry (buffers unset) */
    int64_t *idx;                  /* host indices, owned by the node */
} clt__node_args;

struct clt__node {
    atomic_int refs;
    const clt__derivative *d;      /* NULL for a leaf's accumulation node */
    clt_tensor *leaf;              /* accumulation node: the leaf (not a reference) */
    int ninputs;
    clt__node_input *inputs;
    clt_tensor **saved;            /* ninputs + 1 slots (the last for the output) */
    unsigned *versions;            /* each saved tensor's storage version when saved */
    bool freed;                    /* saved tensors released by a backward pass */
    clt__node_args a;
    struct clt__node *next_doomed; /* clt__node_release's list of nodes to free */
    /* the engine's, during one clt_backward */
    int deps;
    bool seen;
    clt_tensor *grad;
};

/* Whether an operation on these inputs must record a node: recording is on and one of them
 * requires grad. Also turns recording off for the operation's own steps; *prev receives the
 * setting clt__grad_end restores. NULL inputs are skipped. */
bool clt__grad_begin(clt_tensor *const *in, int n, bool *prev);
void clt__grad_end(bool prev);
/* True when any of the n tensors requires grad (NULL ones do not). */
bool clt__any_requires_grad(clt_tensor *const *in, int n);

/* A node of derivative d over the n inputs (NULL entries: inputs that are not tensors), one
 * reference; NULL with the error set. */
clt__node *clt__node_new(const char *fn, const clt__derivative *d, clt_tensor *const *in, int n);
/* The node x's gradient flows into (a new reference): its grad_fn, or for a leaf its
 * accumulation node, made on first use; NULL with the error set on failure. */
clt__node *clt__grad_edge(const char *fn, clt_tensor *x);
/* See the top of this file: saves the output if the derivative asks, makes the node out's
 * grad_fn. Consumes the node reference. */
clt_tensor *clt__node_finish(const char *fn, clt__node *node, clt_tensor *out);
void clt__node_release(clt__node *node);

/* For backward functions: whether input i wants a gradient; saved input i and the saved output
 * (borrowed). */
static inline bool clt__node_wants(const clt__node *n, int i)
{
    return n->inputs[i].next != NULL;
}
static inline clt_tensor *clt__node_saved(const clt__node *n, int i)
{
    return n->saved[i];
}
static inline clt_tensor *clt__node_saved_out(const clt__node *n)
{
    return n->saved[n->ninputs];
}

/* Makes t, whose data is a copy of source's, the result of a recorded copy from source:
 * gradients reaching t flow on to source (DataParallel's replica parameters). Replaces t's
 * node; t stays the same handle. clt__grad_unlink makes t a leaf again. */
clt_status clt__grad_link_copy(const char *fn, clt_tensor *t, clt_tensor *source);
void clt__grad_unlink(clt_tensor *t);

/* A new handle over t's storage, shape and strides that records nothing (detach). */
clt_tensor *clt__tensor_alias(const char *fn, clt_tensor *t);
/* CLT_OK unless recording is on and out or an input requires grad: the error an in-place
 * operation named fn gives then. */
clt_status clt__inplace_check(const char *fn, clt_tensor *out, clt_tensor *const *in, int n);

#endif
