/* What the models of samples/models share: a flat JSON config's numbers, containers of named
 * children, and a pool of one step's temporaries. */
#ifndef CLT_SAMPLES_MODELS_COMMON_H
#define CLT_SAMPLES_MODELS_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include <cltensor.h>

/* The number after "key": in a flat JSON text, if there is one (one too large for a double
 * reads as an infinity). */
bool models_json_number(const char *text, const char *key, double *value);
/* Reads a text file of at most size - 1 bytes into buf, terminated; CLT_ERR_IO with a message in
 * error (of error_size bytes) when it cannot be opened or read, or is larger. */
clt_status models_read_text(const char *path, char *buf, size_t size, char *error,
                            size_t error_size);

/* A config.json's text, where it came from and where a message about it goes. */
typedef struct models_json {
    const char *text, *path;
    char *error; /* of `size` bytes */
    size_t size;
} models_json;
/* The number after "key": into *value when there is one (else *value is kept): true when it is
 * a whole number from 1 to 2^53 (models_json_int: to INT_MAX), checked before it is converted;
 * false with a message naming the path, the key and the number otherwise. */
bool models_json_size(const models_json *json, const char *key, int64_t *value);
bool models_json_int(const models_json *json, const char *key, int *value);

/* "(2, 3)": a shape as PyTorch prints one, written into buf (of size bytes), which it returns. */
const char *models_shape(int ndim, const int64_t *shape, char *buf, size_t size);

/* A new module of `type` holding children[i] as names[i], each child taken (released also after
 * a failure); NULL when one is NULL or registering fails. */
clt_module *models_container(const clt_module_type *type, int n, const char *const *names,
                             clt_module **children);
/* m's child `child` run on x. */
clt_tensor *models_run(clt_module *m, const char *child, clt_tensor *x);

/* Temporaries of one step, released together by models_drain; once one is NULL (a failure) the
 * pool is failed and every later MODELS_KEEP gives NULL. */
#define MODELS_POOL_MAX 64
typedef struct models_pool {
    clt_tensor *t[MODELS_POOL_MAX];
    int n;
    bool failed;
} models_pool;
clt_tensor *models_keep(models_pool *p, clt_tensor *t);
void models_drain(models_pool *p);
#define MODELS_KEEP(pool, expr) ((pool)->failed ? NULL : models_keep((pool), (expr)))

/* (B, T, C) -> (B, n_head, T, C / n_head), and back. */
clt_tensor *models_split_heads(clt_tensor *x, int n_head);
clt_tensor *models_merge_heads(clt_tensor *x);

#endif
