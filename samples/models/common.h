/* What the models of samples/models share: a flat JSON config's numbers, containers of named
 * children, and a pool of one step's temporaries. */
#ifndef CLT_SAMPLES_MODELS_COMMON_H
#define CLT_SAMPLES_MODELS_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include <cltensor.h>

/* The number after "key": in a flat JSON text, if there is one. */
bool models_json_number(const char *text, const char *key, double *value);
/* Reads a text file of at most size - 1 bytes into buf, terminated; CLT_ERR_IO with a message in
 * error (of error_size bytes) when it cannot be opened. */
clt_status models_read_text(const char *path, char *buf, size_t size, char *error,
                            size_t error_size);

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
