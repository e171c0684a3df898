/* What the models of cltensor_models share, internal to the library: containers of named
 * children, a pool of one step's temporaries, attention heads, the activations of
 * transformers' ACT2FN, attention with dropout on its probabilities, and loading a Hugging
 * Face safetensors file under the model's names. */
#ifndef CLT_MODELS_COMMON_H
#define CLT_MODELS_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include <cltensor.h>
#include <cltensor/models/activation.h>

/* "(2, 3)": a shape as PyTorch prints one, written into buf (of size bytes), which it returns. */
const char *clt__models_shape(int ndim, const int64_t *shape, char *buf, size_t size);

/* A new module of `type` holding children[i] as names[i], each child taken (released also after
 * a failure); NULL when one is NULL or registering fails. */
clt_module *clt__models_container(const clt_module_type *type, int n, const char *const *names,
                                  clt_module **children);
/* A module type named `name` without a forward or hooks of its own: a container of registered
 * children, named after the PyTorch class it stands for. */
#define MODELS_CONTAINER_TYPE(var, type_name)                                                  \
    static const clt_module_type var = {.name = type_name, .size = sizeof(clt_module)}
/* nn.ModuleList of n layers "0" ... "n - 1", each made by layer(config); NULL when one cannot
 * be made. */
clt_module *clt__models_layers(int n, clt_module *(*layer)(const void *config),
                               const void *config);
/* m's child `child` run on x. */
clt_tensor *clt__models_run(clt_module *m, const char *child, clt_tensor *x);
/* An f32 (rows, cols) tensor on cpu drawn from N(0, std^2). */
clt_tensor *clt__models_normal(int64_t rows, int64_t cols, double std);

/* Temporaries of one step, released together by clt__models_drain; once one is NULL (a
 * failure) the pool is failed and every later MODELS_KEEP gives NULL. */
#define MODELS_POOL_MAX 64
typedef struct models_pool {
    clt_tensor *t[MODELS_POOL_MAX];
    int n;
    bool failed;
} models_pool;
clt_tensor *clt__models_keep(models_pool *p, clt_tensor *t);
void clt__models_drain(models_pool *p);
#define MODELS_KEEP(pool, expr) ((pool)->failed ? NULL : clt__models_keep((pool), (expr)))

/* (B, T, C) -> (B, n_head, T, C / n_head), and back. */
clt_tensor *clt__models_split_heads(clt_tensor *x, int n_head);
clt_tensor *clt__models_merge_heads(clt_tensor *x);

/* The activation transformers' ACT2FN names `name`: true with it in *act; false when it has
 * none of that name, with *known telling whether ACT2FN has one the library does not
 * compute. */
bool clt__models_activation_parse(const char *name, clt_models_activation *act, bool *known);
/* act's name in ACT2FN, or NULL for a value outside the enum. */
const char *clt__models_activation_name(clt_models_activation act);
/* act(x), a new reference (NULL with the error set). */
clt_tensor *clt__models_activate(clt_tensor *x, clt_models_activation act);

/* Multi-head attention as transformers computes it: clt_scaled_dot_product_attention with
 * options o (a mask, causal, the scale), and, when training with p > 0, dropout at p on the
 * probabilities, which the fused operation lacks: then the scores, softmax, dropout and
 * product are separate operations (in f32 for f16 and bf16 inputs, as the fused one). */
clt_tensor *clt__models_attention(clt_tensor *q, clt_tensor *k, clt_tensor *v,
                                  const clt_attention_options *o, double p, bool training);

/* Reads the safetensors file at path into *file (on cpu), as clt_safetensors_load does, its
 * error naming `where`. */
clt_status clt__models_open(const char *where, const char *path, clt_safetensors *file);
/* Whether a name of the file starts with prefix. */
bool clt__models_any_prefix(const clt_safetensors *file, const char *prefix);

/* What clt__models_load does with one tensor of a file: skip it, or load it as the model's
 * tensor `name` (the callback writes that name into name, of size bytes). A callback may also
 * fail: it returns CLT_MODELS_FAIL with the error set. */
typedef enum { CLT_MODELS_LOAD, CLT_MODELS_SKIP, CLT_MODELS_FAIL } clt__models_action;
typedef clt__models_action (*clt__models_rename_fn)(void *ctx, const char *file_name,
                                                    clt_tensor *t, char *name, size_t size);
/* Loads the tensors of `file` (read from path) into model strictly, each under the name
 * `rename` gives it (or skipped), floating tensors of another dtype converted to the model
 * tensor's, and then `extra` (count named tensors, the model's own: loaded as they are).
 * CLT_OK, or the error naming `where` and the path with nothing loaded. */
clt_status clt__models_load(clt_module *model, const char *where, const char *path,
                            const clt_safetensors *file, clt__models_rename_fn rename, void *ctx,
                            const clt_named_tensor *extra, int extra_count);

#endif
