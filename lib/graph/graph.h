/* The autograd graph's bookkeeping, below the operations: a tensor's gradient state, and a node
 * per recorded operation holding the operation's id, where each input's gradient goes, the
 * tensors its backward pass needs and the operation's parameters. An operation records itself
 * in four steps:
 *
 *     bool prev, rec = clt__grad_begin(in, n, &prev);   // its own steps record nothing
 *     out = ...compute...;
 *     clt__grad_end(prev);
 *     if (rec && out) { node = clt__node_new(fn, CLT__OP_<id>, in, n); ...set node->a...;
 *                       out = clt__node_finish(fn, node, out); }
 *
 * (clt__record does the last line at once.) clt__node_new saves the inputs the operation asks
 * for; clt__node_finish saves the output if asked and makes the node out's grad_fn; on a failure
 * it releases out and the node and returns NULL with the error set. What a node does backward
 * is the autograd layer's (lib/autograd/), which is above the operations. */
#ifndef CLT_GRAPH_GRAPH_H
#define CLT_GRAPH_GRAPH_H

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

/* What a recorded operation's backward pass needs saved: bit i input i, CLT__SAVE_OUT the
 * output. */
#define CLT__SAVE_IN0 1u
#define CLT__SAVE_IN1 2u
#define CLT__SAVE_IN2 4u
#define CLT__SAVE_IN3 8u
#define CLT__SAVE_OUT 0x80000000u

/* Every operation the graph records, as X(id, the name of its node, what its backward pass
 * needs saved). An operation records its id (CLT__OP_<id>) and those values; the derivative of
 * each, keyed by the id, is the autograd layer's, above the operations (lib/autograd/). */
#define CLT__GRAPH_OPS(X)                                                                      \
    /* elementwise, clt__op_of_ew's ids for the clt__ew_ops that are differentiable */       \
    X(add, "AddBackward", 0)                                                                   \
    X(sub, "SubBackward", 0)                                                                   \
    X(mul, "MulBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1)                                       \
    X(div, "DivBackward", CLT__SAVE_IN1 | CLT__SAVE_OUT)                                       \
    X(pow, "PowBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1 | CLT__SAVE_OUT)                       \
    X(maximum, "MaximumBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1)                               \
    X(minimum, "MinimumBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1)                               \
    X(addcmul, "AddcmulBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1)                               \
    X(mul_rsqrt, "MulRsqrtBackward", CLT__SAVE_IN1 | CLT__SAVE_OUT)                            \
    X(prelu, "PreluKernelBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1)                             \
    X(add_scalar, "AddBackward", 0)                                                            \
    X(mul_scalar, "MulBackward", 0)                                                            \
    X(rsub_scalar, "RsubBackward", 0)                                                          \
    X(div_scalar, "DivBackward", 0)                                                            \
    X(pow_scalar, "PowBackward", CLT__SAVE_IN0)                                                \
    X(neg, "NegBackward", 0)                                                                   \
    X(abs, "AbsBackward", CLT__SAVE_IN0)                                                       \
    X(exp, "ExpBackward", CLT__SAVE_OUT)                                                       \
    X(log, "LogBackward", CLT__SAVE_IN0)                                                       \
    X(sqrt, "SqrtBackward", CLT__SAVE_OUT)                                                     \
    X(rsqrt, "RsqrtBackward", CLT__SAVE_OUT)                                                   \
    X(sin, "SinBackward", CLT__SAVE_IN0)                                                       \
    X(cos, "CosBackward", CLT__SAVE_IN0)                                                       \
    X(tanh, "TanhBackward", CLT__SAVE_OUT)                                                     \
    X(sigmoid, "SigmoidBackward", CLT__SAVE_OUT)                                               \
    X(relu, "ReluBackward", CLT__SAVE_OUT)                                                     \
    X(gelu, "GeluBackward", CLT__SAVE_IN0)                                                     \
    X(gelu_tanh, "GeluBackward", CLT__SAVE_IN0)                                                \
    X(silu, "SiluBackward", CLT__SAVE_IN0)                                                     \
    X(clamp, "ClampBackward", CLT__SAVE_IN0)                                                   \
    X(where, "WhereBackward", CLT__SAVE_IN0)                                                   \
    /* views and copies: view, back to the input's shape; permute: dims (the permutation);     \
     * slice: dim, i0 start, i1 end, i2 step (normalised); expand and identity: the gradient   \
     * itself (summed to the input's shape); to: back to the input's device; cat of the        \
     * inputs along dim */                                                                     \
    X(view, "ViewBackward", 0)                                                                 \
    X(permute, "PermuteBackward", 0)                                                           \
    X(slice, "SliceBackward", 0)                                                               \
    X(expand, "ExpandBackward", 0)                                                             \
    X(identity, "CloneBackward", 0)                                                            \
    X(to, "ToCopyBackward", 0)                                                                 \
    X(cat, "CatBackward", 0)                                                                   \
    /* reductions over dims (clt__reduce_args); var and std: i0 the correction */              \
    X(sum, "SumBackward", 0)                                                                   \
    X(mean, "MeanBackward", 0)                                                                 \
    X(amax, "AmaxBackward", CLT__SAVE_IN0 | CLT__SAVE_OUT)                                     \
    X(amin, "AminBackward", CLT__SAVE_IN0 | CLT__SAVE_OUT)                                     \
    X(var, "VarBackward", CLT__SAVE_IN0)                                                       \
    X(std, "StdBackward", CLT__SAVE_IN0 | CLT__SAVE_OUT)                                       \
    X(logsumexp, "LogsumexpBackward", CLT__SAVE_IN0 | CLT__SAVE_OUT)                           \
    X(cumsum, "CumsumBackward", 0)                                                             \
    /* products: matmul(a, b); linear(x, weight, bias); the same with a fused bias (input 2)   \
     * and activation (i0, a clt__act); conv_product, clt__conv_product's, the output          \
     * (n / group, m, group) */                                                                \
    X(matmul, "MmBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1)                                     \
    X(linear, "AddmmBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1)                                  \
    X(matmul_act, "ReluBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1 | CLT__SAVE_OUT)               \
    X(linear_act, "ReluBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1 | CLT__SAVE_OUT)               \
    X(conv_product, "ReluBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1 | CLT__SAVE_OUT)             \
    /* neural networks: softmax and log_softmax along dim; gather along dim with the host      \
     * indices idx (i0 of them) from a dimension of size i1; im2col and pooling over the       \
     * geometry conv (max pooling takes its indices as input 1); depthwise convolution;        \
     * cross entropy's rows; attention */                                                      \
    X(softmax, "SoftmaxBackward", CLT__SAVE_OUT)                                               \
    X(log_softmax, "LogSoftmaxBackward", CLT__SAVE_OUT)                                        \
    X(gather, "IndexSelectBackward", 0)                                                        \
    X(im2col, "Im2ColBackward", 0)                                                             \
    X(max_pool2d, "MaxPool2DBackward", CLT__SAVE_IN1)                                          \
    X(avg_pool2d, "AvgPool2DBackward", 0)                                                      \
    X(depthwise, "DepthwiseConv2dBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1)                     \
    X(cross_entropy, "CrossEntropyBackward", CLT__SAVE_IN0 | CLT__SAVE_IN1)                    \
    X(attention, "ScaledDotProductAttentionBackward",                                          \
      CLT__SAVE_IN0 | CLT__SAVE_IN1 | CLT__SAVE_IN2 | CLT__SAVE_IN3)

#define CLT__GRAPH_OP_ENUM(id, name, save) CLT__OP_##id,
/* A recorded operation; CLT__OP_LEAF for a leaf's accumulation node. */
typedef enum clt__op { CLT__OP_LEAF, CLT__GRAPH_OPS(CLT__GRAPH_OP_ENUM) CLT__OP_COUNT } clt__op;
#undef CLT__GRAPH_OP_ENUM

/* The name of op's node ("MulBackward"; "AccumulateGrad" for a leaf's). */
const char *clt__op_name(clt__op op);
/* The id an elementwise operation records; CLT__OP_LEAF for those that are not
 * differentiable (comparisons, copy). */
clt__op clt__op_of_ew(clt__ew_op op);

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
    clt__op op;                    /* the operation; CLT__OP_LEAF: a leaf's accumulation node */
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

/* A node of operation op over the n inputs (NULL entries: inputs that are not tensors), one
 * reference; NULL with the error set. */
clt__node *clt__node_new(const char *fn, clt__op op, clt_tensor *const *in, int n);
/* The node x's gradient flows into (a new reference): its grad_fn, or for a leaf its
 * accumulation node, made on first use; NULL with the error set on failure. */
clt__node *clt__grad_edge(const char *fn, clt_tensor *x);
/* See the top of this file: saves the output if the operation asks, makes the node out's
 * grad_fn. Consumes the node reference. */
clt_tensor *clt__node_finish(const char *fn, clt__node *node, clt_tensor *out);
void clt__node_release(clt__node *node);
/* Records out as the result of operation op over the inputs (clt__node_new, then
 * clt__node_finish): NULL when out is NULL; args (may be NULL) copied into the node, which
 * takes over args->idx. */
clt_tensor *clt__record(const char *fn, clt__op op, clt_tensor *const *in, int n,
                        clt_tensor *out, const clt__node_args *args);
/* Normalises reduction dims (negative from the end; none = all) into args, ascending. */
void clt__reduce_args(clt__node_args *args, int ndim, const int *dims, int ndims, bool keepdim);

/* The derivative of an operation, the autograd layer's (lib/autograd/derivatives.c): computes
 * gi[i], the gradient of input i, for every input with clt__node_wants(node, i), from g, the
 * gradient of the output (contiguous, the output's shape and dtype). A gi[i] may have a shape
 * that input i broadcasts to and another dtype: the engine sums and converts it. Runs without
 * recording. CLT_OK or the error of the failed step (gi[] released by the caller). */
typedef clt_status (*clt__backward_fn)(clt__node *node, clt_tensor *g, clt_tensor **gi);

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
