/* Modules: PyTorch's nn.Module in C. A module type is a struct that embeds clt_module as its
 * first member plus a clt_module_type (name, size, forward or forward_many, and optional hooks).
 * Parameters, buffers and child modules are registered by name; the library then iterates them
 * with PyTorch's dotted names, moves them between devices in place (clt_module_to: every module
 * and tensor handle stays the same object) and deep-copies them (clt_module_clone_to). */
#ifndef CLTENSOR_NN_H
#define CLTENSOR_NN_H

#include "ops.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_module clt_module;

typedef struct clt_module_type {
    const char *name; /* "Linear", "MyModel" */
    size_t size;      /* sizeof the struct that embeds clt_module as its first member */
    /* The forward pass of one input and one output: a new reference, or NULL with the last
     * error set. NULL for a type with forward_many alone. */
    clt_tensor *(*forward)(clt_module *self, clt_tensor *x);
    /* Optional: frees what the type owns besides its registered tensors and children; called
     * by the last release, before those are released, also on a module whose own fields are
     * all zero (a clone that failed). */
    void (*destroy)(clt_module *self);
    /* Optional: copies what the type owns besides registered things into a clone (plain fields
     * are copied and fields pointing at registered tensors and children are redirected to the
     * clone's own before this runs). CLT_OK, or an error: the clone's own fields are then
     * zeroed and the clone destroyed. */
    clt_status (*clone)(const clt_module *src, clt_module *dst);
    /* Optional: the type's settings as PyTorch's extra_repr() gives them, the text inside the
     * parentheses of print(model) ("in_features=4, out_features=2, bias=True"), written into
     * buf of `size` bytes as snprintf does; returns the length the whole text needs. */
    int (*extra_repr)(const clt_module *self, char *buf, size_t size);
    /* Optional: the forward pass of several inputs and outputs (clt_module_forward_many), which
     * a type has in place of forward or beside it (clt_module_forward then runs forward). inputs
     * holds n_inputs tensors, NULL for an
     * optional input left out; outputs n_outputs NULL entries. CLT_OK once it has written a new
     * reference into each, or an error with the last error set once it has released what it
     * wrote; it refuses the counts it does not take or give (CLT_ERR_INVALID_ARGUMENT). */
    clt_status (*forward_many)(clt_module *self, int n_inputs, clt_tensor *const *inputs,
                               int n_outputs, clt_tensor **outputs);
} clt_module_type;

/* The base every module embeds first. Its fields belong to the library. */
struct clt_module {
    const clt_module_type *type;
    struct clt__module_state *state;
};

/* print(model): the module tree as PyTorch renders it, the type's name and extra_repr, then
 * each child as "(name): ..." indented two spaces a level:
 *   Sequential(
 *     (0): Linear(in_features=784, out_features=128, bias=True)
 *     (1): ReLU()
 *   )
 * clt_module_format returns a string the caller frees with clt_free, or NULL with the last
 * error set (CLT_ERR_INVALID_ARGUMENT for NULL, CLT_ERR_OUT_OF_MEMORY); clt_module_print
 * writes it and a newline to stdout, or nothing and returns the error. */
CLT_API char *clt_module_format(const clt_module *m);
CLT_API clt_status clt_module_print(const clt_module *m);

/* A new module of `type` (which must outlive it): type->size zeroed bytes with the base set
 * up, in training mode, on cpu, with one reference. NULL with the last error set:
 * CLT_ERR_INVALID_ARGUMENT for a NULL type, a type without a name or a size below
 * sizeof(clt_module). */
CLT_API clt_module *clt_module_new(const clt_module_type *type);
/* Reference counting: retain returns m with one more reference (NULL for NULL); the last
 * release calls the type's destroy and drops the module's reference to each registered tensor
 * and child. clt_module_release accepts NULL. */
CLT_API clt_module *clt_module_retain(clt_module *m);
CLT_API void clt_module_release(clt_module *m);

/* Registers a parameter, a buffer or a child under a name unique in m (no '.'), taking a new
 * reference to it; a floating parameter is marked as requiring grad. CLT_ERR_INVALID_ARGUMENT
 * for NULL, a bad or taken name, a parameter that is not a leaf, or a child that is m or holds
 * it at any depth (modules never form a cycle; one child under several parents is fine); once
 * m (or a child of it) holds a tensor, a new tensor, or the tensors of a new child, must be on
 * that tensor's device (CLT_ERR_DEVICE_MISMATCH). On failure m is unchanged. */
CLT_API clt_status clt_module_register_parameter(clt_module *m, const char *name, clt_tensor *t);
CLT_API clt_status clt_module_register_buffer(clt_module *m, const char *name, clt_tensor *t);
CLT_API clt_status clt_module_register_module(clt_module *m, const char *name, clt_module *child);

/* The same, taking over the caller's reference to t or child whatever happens (on success m
 * holds it, on failure it is released), so that an object made in the call cannot leak:
 * clt_module_register_module_take(m, "fc1", clt_nn_linear(784, 128, true)). A NULL t or child
 * (a creation that failed) is CLT_ERR_INVALID_ARGUMENT naming the error that creation left. */
CLT_API clt_status clt_module_register_parameter_take(clt_module *m, const char *name,
                                                      clt_tensor *t);
CLT_API clt_status clt_module_register_buffer_take(clt_module *m, const char *name, clt_tensor *t);
CLT_API clt_status clt_module_register_module_take(clt_module *m, const char *name,
                                                   clt_module *child);

/* Looks up by dotted name ("fc1.weight", "0"); borrowed (valid while m holds it), or NULL with
 * the last error set (CLT_ERR_INVALID_ARGUMENT: NULL, or no such member of that kind). */
CLT_API clt_tensor *clt_module_get_parameter(const clt_module *m, const char *name);
CLT_API clt_tensor *clt_module_get_buffer(const clt_module *m, const char *name);
CLT_API clt_module *clt_module_get_child(const clt_module *m, const char *name);

/* Calls fn for every parameter (or buffer) of m and its children, depth first in registration
 * order, with PyTorch's dotted names ("0.weight", valid during the call only) and the
 * registered tensor (borrowed); a tensor registered twice is visited once. Stops at the first
 * nonzero return and returns it; CLT_OK otherwise; CLT_ERR_INVALID_ARGUMENT for a NULL m,
 * CLT_ERR_OUT_OF_MEMORY when the walk cannot go on. */
typedef int (*clt_named_tensor_fn)(const char *name, clt_tensor *t, void *user);
CLT_API int clt_module_foreach_parameter(const clt_module *m, clt_named_tensor_fn fn, void *user);
CLT_API int clt_module_foreach_buffer(const clt_module *m, clt_named_tensor_fn fn, void *user);
/* The number of parameter elements (each distinct tensor once); -1 with the last error set for
 * NULL or when the walk fails. */
CLT_API int64_t clt_module_parameter_count(const clt_module *m);

/* The type's name ("Linear", owned by the type; "(null)" for NULL); the device of m's first
 * parameter or buffer (owned by the library; cpu when there is none or m is NULL). */
CLT_API const char *clt_module_type_name(const clt_module *m);
CLT_API clt_device *clt_module_device(const clt_module *m);

/* Sets training or evaluation mode for m and every child (dropout, batch norm); does nothing
 * for NULL. Whether m is in training mode (false for NULL). */
CLT_API void clt_module_train(clt_module *m, bool training);
CLT_API bool clt_module_is_training(const clt_module *m);

/* Moves every parameter and buffer of m and its children, and their gradients, to dev in
 * place: m, its children and every tensor handle stay the same objects and report dev
 * afterwards (PyTorch's model.to(device) returns the same module). Nothing to do when already
 * there. All or nothing: if any copy fails, everything stays on its old device with its
 * values, and the error says what failed; CLT_ERR_INVALID_ARGUMENT for a NULL m or dev.
 * Other threads may retain and release m's tensors meanwhile, not compute with them or move m. */
CLT_API clt_status clt_module_to(clt_module *m, clt_device *dev);
/* The same for the dtype of floating parameters and buffers (integer buffers keep theirs);
 * CLT_ERR_DTYPE for a dtype that is not floating. */
CLT_API clt_status clt_module_to_dtype(clt_module *m, clt_dtype dtype);
/* An independent deep copy of m on dev, a new module with one reference (what
 * `model = model.to(device)` was believed to make): new tensors with the same values,
 * requires_grad and names, without gradients; the same modes. NULL with the last error set
 * (CLT_ERR_INVALID_ARGUMENT for a NULL m or dev). */
CLT_API clt_module *clt_module_clone_to(const clt_module *m, clt_device *dev);

/* m's forward pass on x: a new reference, or NULL with the last error set (the forward's,
 * renamed). A type without forward runs forward_many with one input and one output.
 * CLT_ERR_DEVICE_MISMATCH when m has parameters and x is on another device;
 * CLT_ERR_INVALID_ARGUMENT for NULL or a type without forward or forward_many. */
CLT_API clt_tensor *clt_module_forward(clt_module *m, clt_tensor *x);
/* m's forward pass on n_inputs inputs (NULL entries: optional inputs left out) giving n_outputs
 * outputs, PyTorch's `a, b, c = model(x, None)`: writes n_outputs new references into outputs,
 * or on failure sets each of them to NULL and returns the error (the forward's, renamed as
 * clt_module_forward renames it). A type without forward_many runs forward with one input and
 * one output. CLT_ERR_INVALID_ARGUMENT for a NULL m or array, n_inputs < 0, n_outputs < 1, counts
 * the type does not take or give, or a type without either forward; CLT_ERR_DEVICE_MISMATCH
 * when m has parameters and an input is on another device. */
CLT_API clt_status clt_module_forward_many(clt_module *m, int n_inputs,
                                           clt_tensor *const *inputs, int n_outputs,
                                           clt_tensor **outputs);

/* --- layers: created on cpu with PyTorch's default initialisation from the default generator
 * (clt_manual_seed makes them reproducible); a new module, or NULL with the last error set. */

/* y = x W^T + b: weight (out, in) and bias (out) f32, uniform on +-1/sqrt(in);
 * CLT_ERR_INVALID_ARGUMENT for a size that is not positive. */
CLT_API clt_module *clt_nn_linear(int64_t in_features, int64_t out_features, bool bias);
/* The activations ReLU, Sigmoid, Tanh and GELU (exact erf form), without parameters. */
CLT_API clt_module *clt_nn_relu(void);
CLT_API clt_module *clt_nn_sigmoid(void);
CLT_API clt_module *clt_nn_tanh(void);
CLT_API clt_module *clt_nn_gelu(void);
/* nn.ReLU6: min(max(x, 0), 6), MobileNet's activation. */
CLT_API clt_module *clt_nn_relu6(void);
/* nn.GELU(approximate="tanh"). */
CLT_API clt_module *clt_nn_gelu_tanh(void);
/* softmax along dim (checked when the module runs). */
CLT_API clt_module *clt_nn_softmax(int dim);
/* nn.PReLU(num_parameters, init): clt_prelu with the parameter "weight", f32
 * (num_parameters) filled with init (PyTorch's default 0.25): 1 slope shared by every element,
 * or one per channel of the input's dimension 1. CLT_ERR_INVALID_ARGUMENT for num_parameters
 * below 1. */
CLT_API clt_module *clt_nn_prelu(int64_t num_parameters, double init);
/* Flattens dimensions 1.. into one: (N, ...) -> (N, rest); an input of 0 or 1 dimensions
 * comes back as it is (retained). */
CLT_API clt_module *clt_nn_flatten(void);
/* Zeroes elements with probability p in training mode (clt_dropout);
 * CLT_ERR_INVALID_ARGUMENT for p outside 0..1. */
CLT_API clt_module *clt_nn_dropout(double p);
/* Runs n modules in order (n 0: the input, retained); takes a new reference to each; children are
 * named "0", "1", ... CLT_ERR_INVALID_ARGUMENT for n < 0 or NULL modules, and the errors of
 * clt_module_register_module. */
CLT_API clt_module *clt_nn_sequential(clt_module *const *modules, int n);
/* The same, taking over the caller's reference to each module whatever happens (on failure
 * they are released), so that a Sequential built inline cannot leak; a NULL module (a layer
 * whose creation failed) is CLT_ERR_INVALID_ARGUMENT naming it and the error it left.
 * CLT_SEQUENTIAL(a, b, ...) passes its arguments as the array: PyTorch's nn.Sequential(a, b):
 *     clt_module *net = CLT_SEQUENTIAL(clt_nn_linear(784, 128, true), clt_nn_relu(),
 *                                      clt_nn_linear(128, 10, true));  */
CLT_API clt_module *clt_nn_sequential_take(clt_module *const *modules, int n);
#ifdef __cplusplus
#define CLT_SEQUENTIAL(...)                                                                    \
    ([&]() {                                                                                   \
        clt_module *clt_modules_[] = {__VA_ARGS__};                                            \
        return clt_nn_sequential_take(clt_modules_, (int)(sizeof clt_modules_ /                 \
                                                          sizeof *clt_modules_));              \
    }())
#else
#define CLT_SEQUENTIAL(...)                                                                    \
    clt_nn_sequential_take((clt_module *const[]){__VA_ARGS__},                                 \
                           (int)(sizeof((clt_module *[]){__VA_ARGS__}) / sizeof(clt_module *)))
#endif
/* Conv2d: clt_conv2d with f32 weight (out, in / groups, kh, kw) and bias (out) uniform on
 * +-1/sqrt(in / groups * kh * kw) as PyTorch's; options copied, NULL for the defaults.
 * CLT_ERR_INVALID_ARGUMENT for a size not positive, channels not divisible by groups or a
 * negative option. */
CLT_API clt_module *clt_nn_conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_h,
                                  int64_t kernel_w, const clt_conv2d_options *options, bool bias);
/* nn.ConvTranspose2d(in, out, (kh, kw), ...): weight (in, out / groups, kh, kw) and bias (out,)
 * drawn as PyTorch draws them (both U(+-1/sqrt(out / groups * kh * kw))), options as
 * clt_conv_transpose2d takes them (NULL: the defaults). */
CLT_API clt_module *clt_nn_conv_transpose2d(int64_t in_channels, int64_t out_channels,
                                            int64_t kernel_h, int64_t kernel_w,
                                            const clt_conv_transpose2d_options *options,
                                            bool bias);
/* nn.Upsample(scale_factor=k, mode, align_corners) for a whole scale factor k >= 1: each
 * spatial size times k, through clt_interpolate2d (for a whole k its coordinates are
 * PyTorch's). */
CLT_API clt_module *clt_nn_upsample(int scale_factor, clt_interpolate_mode mode,
                                    bool align_corners);
/* MaxPool2d (without indices) and AvgPool2d with a copy of the options (required);
 * CLT_ERR_INVALID_ARGUMENT for NULL options, a kernel that is not positive or a negative option. */
CLT_API clt_module *clt_nn_max_pool2d(const clt_pool2d_options *options);
CLT_API clt_module *clt_nn_avg_pool2d(const clt_pool2d_options *options);
/* AdaptiveAvgPool2d((out_h, out_w)) (clt_adaptive_avg_pool2d); CLT_ERR_INVALID_ARGUMENT for a
 * size that is not positive. */
CLT_API clt_module *clt_nn_adaptive_avg_pool2d(int out_h, int out_w);
/* BatchNorm1d and BatchNorm2d: f32 weight ones, bias zeros, buffers running_mean zeros,
 * running_var ones and num_batches_tracked (0-d i64, counts training forwards).
 * CLT_ERR_INVALID_ARGUMENT for num_features not positive, a negative eps or momentum outside
 * 0..1. */
CLT_API clt_module *clt_nn_batch_norm(int64_t num_features, double eps, double momentum);
/* LayerNorm over the last normalized_ndim dimensions: f32 weight ones and bias zeros of
 * normalized_shape. CLT_ERR_INVALID_ARGUMENT for a bad ndim, a NULL shape, a size not
 * positive, eps < 0. */
CLT_API clt_module *clt_nn_layer_norm(int normalized_ndim, const int64_t *normalized_shape, double eps);
/* Embedding: f32 weight (num_embeddings, embedding_dim) standard normal; forward takes i64
 * indices. CLT_ERR_INVALID_ARGUMENT for a size that is not positive. */
CLT_API clt_module *clt_nn_embedding(int64_t num_embeddings, int64_t embedding_dim);

#ifdef __cplusplus
}
#endif

#endif
