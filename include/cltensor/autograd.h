/* Reverse-mode automatic differentiation, as PyTorch's autograd. A floating tensor marked with
 * clt_tensor_set_requires_grad (module parameters are marked when registered) is a leaf; every
 * differentiable operation of ops.h on tensors that require grad records a node of a graph in
 * its result, and clt_backward walks that graph from a result back to the leaves, adding the
 * gradients into each leaf's grad. Gradients are computed on the device of the tensors they
 * belong to and have the leaf's dtype and shape.
 *
 * In-place operations (clt_add_, clt_mul_, clt_fill_, clt_copy_) on a tensor that requires grad,
 * or taking one as input, are errors while recording: use the out-of-place forms, or run the
 * update without recording (clt_grad_set_enabled(false), as optimizers do). A tensor a graph
 * saved for its backward pass that is changed in place, or moved by clt_module_to, before the
 * backward pass makes clt_backward fail with an error naming the operation. */
#ifndef CLTENSOR_AUTOGRAD_H
#define CLTENSOR_AUTOGRAD_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks x as a leaf whose gradient is wanted (or not). CLT_ERR_DTYPE for wanting the gradient
 * of a tensor that is not floating; CLT_ERR_INVALID_ARGUMENT for NULL or a tensor made by a
 * recorded operation (not a leaf: use clt_tensor_detach first); CLT_ERR_OUT_OF_MEMORY when x's
 * autograd state, made on first use, cannot be. On failure x is unchanged. */
CLT_API clt_status clt_tensor_set_requires_grad(clt_tensor *x, bool requires_grad);
/* Whether x is a leaf marked as above or the result of a recorded operation (false for
 * NULL). */
CLT_API bool clt_tensor_requires_grad(const clt_tensor *x);
/* Whether x was not made by a recorded operation (PyTorch's is_leaf; false for NULL). */
CLT_API bool clt_tensor_is_leaf(const clt_tensor *x);
/* The gradient accumulated into x by clt_backward, a new reference; NULL (and no error) when
 * there is none yet or x is NULL. A later clt_backward replaces x's gradient with a new tensor
 * rather than changing this one. */
CLT_API clt_tensor *clt_tensor_grad(const clt_tensor *x);
/* Replaces x's gradient with grad (retained; NULL clears it, as PyTorch's x.grad = None).
 * grad must have x's shape, dtype and device (CLT_ERR_SHAPE / _DTYPE / _DEVICE_MISMATCH);
 * CLT_ERR_INVALID_ARGUMENT for a NULL x, for grad == x, and for a grad that holds x through
 * its own gradients (a cycle never freed); CLT_ERR_OUT_OF_MEMORY as clt_tensor_set_requires_grad.
 * On failure x's gradient is unchanged. */
CLT_API clt_status clt_tensor_set_grad(clt_tensor *x, clt_tensor *grad);
/* The name of the node that made x ("MulBackward", "AddmmBackward"), a static string; NULL (no
 * error set) for NULL, a leaf or a tensor that records nothing. */
CLT_API const char *clt_tensor_grad_fn_name(const clt_tensor *x);
/* A new tensor sharing x's storage that records nothing and requires no grad (x.detach()): a
 * new reference, or NULL with the last error set. */
CLT_API clt_tensor *clt_tensor_detach(clt_tensor *x);

/* Computes the gradient of `root` with respect to every leaf that requires grad and that root
 * was computed from, and adds it into the leaf's grad. `grad` is d(loss)/d(root), of root's
 * shape, on root's device (converted to root's dtype; CLT_ERR_SHAPE / _DEVICE_MISMATCH
 * otherwise); NULL means 1 and needs a root of one element. CLT_ERR_INVALID_ARGUMENT for a
 * NULL root or one that does not require grad. Unless retain_graph, the graph's saved tensors
 * are freed afterwards and a second backward through it is CLT_ERR_INVALID_ARGUMENT. All or
 * nothing: if any step fails, no grad has changed and the graph is kept. Graphs that share
 * nodes must not be walked by two threads at once. */
CLT_API clt_status clt_backward(clt_tensor *root, clt_tensor *grad, bool retain_graph);

/* Callbacks into a backward pass (as PyTorch's gradient hooks), for work on each gradient as
 * soon as it is complete while the pass computes the rest (distributed training averages them
 * over processes meanwhile). */
typedef struct clt_backward_hooks {
    /* A leaf's gradient from this pass is complete, before it is added into the leaf's grad:
     * *grad is a reference the pass holds, which the hook may replace (now, or from another
     * thread until finish returns) by a new reference of the same shape, dtype and device,
     * releasing the one it replaces (another shape fails the pass with CLT_ERR_SHAPE, no
     * gradient changed; another device or dtype with CLT_ERR_DEVICE_MISMATCH). Called once per
     * leaf, in the order they complete. */
    void (*leaf_ready)(void *user, clt_tensor *leaf, clt_tensor **grad);
    /* Called once at the end of the pass, also when it failed (status is then its error): the
     * hook finishes or abandons its work. A failure it returns fails the pass, nothing
     * changed. */
    clt_status (*finish)(void *user, clt_status status);
    void *user;
} clt_backward_hooks;

/* clt_backward with hooks (NULL: none); the same result and errors, and a failure of finish. */
CLT_API clt_status clt_backward_ex(clt_tensor *root, clt_tensor *grad, bool retain_graph,
                                   const clt_backward_hooks *hooks);

/* Whether this thread records operations for autograd (true unless turned off on it). */
CLT_API bool clt_grad_is_enabled(void);
/* Turns recording on or off for this thread (PyTorch's torch.set_grad_enabled); returns the
 * previous setting, for restoring it. */
CLT_API bool clt_grad_set_enabled(bool enabled);

/* A saved recording setting, for CLT_NO_GRAD. */
typedef struct clt_grad_mode {
    bool previous; /* the setting to restore */
    bool active;   /* not restored yet */
} clt_grad_mode;

/* The helpers of CLT_NO_GRAD: turn recording off, remembering the setting; restore it once. */
static inline clt_grad_mode clt__no_grad_begin(void)
{
    clt_grad_mode m = {clt_grad_set_enabled(false), true};
    return m;
}

static inline void clt__grad_mode_end(clt_grad_mode *m)
{
    if (m->active)
        clt_grad_set_enabled(m->previous);
    m->active = false;
}

/* CLT_NO_GRAD { ... } runs the block without recording (PyTorch's `with torch.no_grad():`) and
 * restores the previous setting after it; blocks nest. `break` and `continue` inside the block
 * leave the block. With GCC and Clang the setting is restored on every way out: the end, break,
 * continue, goto and return; with other compilers only at the end and by continue (there, use
 * clt_grad_set_enabled to leave early). */
#if defined(__GNUC__) || defined(__clang__)
#define CLT__GRAD_CLEANUP __attribute__((cleanup(clt__grad_mode_end)))
#else
#define CLT__GRAD_CLEANUP
#endif
#define CLT__NO_GRAD(m)                                                                        \
    for (clt_grad_mode m CLT__GRAD_CLEANUP = clt__no_grad_begin(); m.active; clt__grad_mode_end(&m))
#define CLT_NO_GRAD CLT__NO_GRAD(CLT__WITH_CAT(clt__no_grad_, CLT__WITH_ID))

#ifdef __cplusplus
}
#endif

#endif
