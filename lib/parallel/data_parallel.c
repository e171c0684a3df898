/* DataParallel (include/cltensor/parallel.h): the wrapper module, its persistent replicas and
 * their refresh from the wrapped module's parameters and buffers, the scatter of a batch, one
 * thread per replica, the gather, and the links that send the replicas' gradients home. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "cltensor/autograd.h"
#include "cltensor/parallel.h"
#include "core/core.h"
#include "device/registry.h"
#include "nn/module_internal.h"
#include "tensor/tensor_internal.h"

#define MAX_DEVICES 64

/* The public functions whose errors this file's code raises: the constructor's, and the
 * forward pass's (clt_module_forward runs dp_forward and everything it calls). */
static const char *const fn = "clt_nn_data_parallel";
static const char *const fwd = "clt_module_forward";

/* A module's parameters, then its buffers, in dotted-name order. */
typedef struct tensors {
    clt_tensor **items;
    int count, params;
} tensors;

/* A copy of the wrapped module on one device, and what it was copied from. */
typedef struct replica {
    clt_module *module;
    tensors own;
    const void **storages; /* the source's storages and their versions at the last refresh */
    unsigned *versions;
} replica;

typedef struct data_parallel {
    clt_module base;
    clt_module *module;
    int n;
    clt_device *devices[MAX_DEVICES];
    clt_device *output;
    replica replicas[MAX_DEVICES]; /* [k] runs on devices[k], k >= 1 */
} data_parallel;

static clt_status collect(const clt_module *m, tensors *l)
{
    *l = (tensors){0};
    if (clt__module_collect(fwd, m, false, false, &l->items, &l->count) != CLT_OK)
        return clt_last_status();
    l->params = l->count;
    if (clt__module_collect(fwd, m, true, false, &l->items, &l->count) != CLT_OK) {
        clt__free(l->items);
        *l = (tensors){0};
        return clt_last_status();
    }
    return CLT_OK;
}

static void replica_clear(replica *r)
{
    for (int j = 0; j < r->own.params; j++)
        clt__grad_unlink(r->own.items[j]);
    clt_module_release(r->module);
    clt__free(r->own.items);
    clt__free(r->storages);
    clt__free(r->versions);
    *r = (replica){0};
}

/* A new replica of the wrapped module's tensors `src` on dev. */
static clt_status replica_make(data_parallel *p, replica *r, clt_device *dev, const tensors *src)
{
    replica_clear(r);
    r->module = clt_module_clone_to(p->module, dev);
    if (!r->module || collect(r->module, &r->own) != CLT_OK)
        goto fail;
    r->storages = clt__alloc_zeroed(fwd, (size_t)(src->count ? src->count : 1) * sizeof *r->storages);
    r->versions = r->storages ? clt__alloc_zeroed(fwd, (size_t)(src->count ? src->count : 1) * sizeof *r->versions) : NULL;
    if (!r->versions)
        goto fail;
    for (int j = 0; j < src->count; j++) {
        r->storages[j] = src->items[j]->storage;
        r->versions[j] = atomic_load(&src->items[j]->storage->version);
    }
    return CLT_OK;
fail:
    clt__rename_error(fwd);
    replica_clear(r);
    return clt_last_status();
}

/* Copies into the replica every tensor of src that changed since its last refresh (a new
 * replica when the module's structure changed). */
static clt_status replica_refresh(data_parallel *p, replica *r, clt_device *dev, const tensors *src)
{
    bool prev;
    clt_status st = CLT_OK;
    if (!r->module || r->own.count != src->count || r->own.params != src->params)
        return replica_make(p, r, dev, src);
    prev = clt_grad_set_enabled(false);
    for (int j = 0; j < src->count && st == CLT_OK; j++) {
        clt_tensor *s = src->items[j], *d = r->own.items[j];
        unsigned v = atomic_load(&s->storage->version);
        if (r->storages[j] == s->storage && r->versions[j] == v)
            continue;
        if (d->dtype != s->dtype || d->ndim != s->ndim ||
            !clt__same_shape(d, s)) {
            clt_grad_set_enabled(prev);
            return replica_make(p, r, dev, src);
        }
        st = clt_copy_(d, s);
        if (st == CLT_OK) {
            r->storages[j] = s->storage;
            r->versions[j] = v;
        }
    }
    clt_grad_set_enabled(prev);
    for (int j = 0; j < src->params && st == CLT_OK; j++) /* frozen parameters stay frozen */
        st = clt__grad_set_flag(fwd, r->own.items[j], clt__requires_grad(src->items[j]));
    return st == CLT_OK ? CLT_OK : clt__rename_error(fwd);
}

/* While recording, each replica parameter becomes a recorded copy of its source, so that its
 * gradient flows home; otherwise a leaf. */
static clt_status replica_link(replica *r, const tensors *src)
{
    for (int j = 0; j < src->params; j++) {
        clt_tensor *t = r->own.items[j];
        if (clt_grad_is_enabled() && clt__requires_grad(src->items[j])) {
            if (clt__grad_link_copy(fwd, t, src->items[j]) != CLT_OK)
                return clt_last_status();
        } else {
            clt__grad_unlink(t);
        }
    }
    return CLT_OK;
}

/* ---- forward ---------------------------------------------------------------------------------- */

/* One replica's forward, on its own thread. */
typedef struct job {
    clt_module *module;
    clt_tensor *x, *y;
    clt_device *dev;
    bool grad;
    clt_status status;
    char error[600];
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    clt_grad_set_enabled(j->grad);
    if (!clt__is_host(j->dev))
        clt_device_set_current(j->dev);
    j->y = clt_module_forward(j->module, j->x);
    if (!j->y) {
        j->status = clt_last_status();
        snprintf(j->error, sizeof j->error, "%s", clt_last_error());
    }
    return NULL;
}

/* The wrapped module on one device: no split. */
static clt_tensor *forward_one(data_parallel *p, clt_tensor *x)
{
    clt_tensor *here = clt_tensor_to(x, p->devices[0]), *y = NULL, *out = NULL;
    y = here ? clt_module_forward(p->module, here) : NULL;
    out = y ? clt_tensor_to(y, p->output) : NULL;
    clt_tensor_release(y);
    clt_tensor_release(here);
    return out;
}

static clt_status check_input(data_parallel *p, clt_tensor *x)
{
    clt_device *at;
    if (!x)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fwd, "the input is NULL");
    if (x->ndim == 0 || x->shape[0] == 0)
        return clt__error(CLT_ERR_SHAPE, fwd,
                          "the batch has no rows to split (%s); it needs a first dimension of "
                          "at least 1", x->ndim ? "0 rows" : "a 0-d tensor");
    at = clt_module_device(p->module);
    if (clt__module_first_tensor(p->module, true) && at != p->devices[0])
        return clt__error(CLT_ERR_DEVICE_MISMATCH, fwd,
                          "the wrapped module (%s) is on %s; DataParallel runs it on its first "
                          "device, %s: move it there first (clt_module_to)",
                          clt_module_type_name(p->module), at->name, p->devices[0]->name);
    return CLT_OK;
}

static clt_tensor *dp_forward(clt_module *self, clt_tensor *x)
{
    data_parallel *p = (data_parallel *)self;
    job jobs[MAX_DEVICES] = {{0}};
    pthread_t threads[MAX_DEVICES];
    bool started[MAX_DEVICES] = {false};
    clt_tensor *ys[MAX_DEVICES] = {NULL}, *out = NULL;
    tensors src = {0};
    clt_status st;
    int use;
    if (check_input(p, x) != CLT_OK)
        return NULL;
    use = (int64_t)p->n < x->shape[0] ? p->n : (int)x->shape[0];
    if (use == 1)
        return forward_one(p, x);
    st = collect(p->module, &src);
    for (int k = 1; k < use && st == CLT_OK; k++) {
        st = replica_refresh(p, &p->replicas[k], p->devices[k], &src);
        if (st == CLT_OK)
            st = replica_link(&p->replicas[k], &src);
    }
    /* scatter: chunks as even as possible, the first ones a row longer */
    for (int k = 0, at = 0; k < use && st == CLT_OK; k++) {
        int64_t rows = x->shape[0] / use + (k < x->shape[0] % use);
        clt_tensor *part = clt_narrow(x, 0, at, rows);
        jobs[k] = (job){.module = k ? p->replicas[k].module : p->module,
                        .x = part ? clt_tensor_to(part, p->devices[k]) : NULL,
                        .dev = p->devices[k], .grad = clt_grad_is_enabled()};
        clt_tensor_release(part);
        at += (int)rows;
        if (!jobs[k].x)
            st = clt_last_status();
    }
    for (int k = 1; k < use && st == CLT_OK; k++) {
        started[k] = pthread_create(&threads[k], NULL, run_job, &jobs[k]) == 0;
        if (!started[k])
            st = clt__error(CLT_ERR_OUT_OF_MEMORY, fwd, "cannot start a thread for %s", p->devices[k]->name);
    }
    if (st == CLT_OK)
        run_job(&jobs[0]);
    for (int k = 1; k < use; k++)
        if (started[k])
            pthread_join(threads[k], NULL);
    /* gather on the output device */
    for (int k = 0; k < use && st == CLT_OK; k++) {
        if (jobs[k].status != CLT_OK) {
            st = clt__error(jobs[k].status, fwd, "on %s: %s", p->devices[k]->name, jobs[k].error);
            break;
        }
        if (!(ys[k] = clt_tensor_to(jobs[k].y, p->output)))
            st = clt_last_status();
    }
    if (st == CLT_OK)
        out = clt_cat(ys, use, 0);
    if (!out)
        clt__rename_error(fwd);
    for (int k = 0; k < use; k++) {
        clt_tensor_release(ys[k]);
        clt_tensor_release(jobs[k].y);
        clt_tensor_release(jobs[k].x);
    }
    clt__free(src.items);
    return out;
}

/* ---- the module ----------------------------------------------------------------------------- */

static void dp_destroy(clt_module *self)
{
    data_parallel *p = (data_parallel *)self;
    for (int k = 1; k < p->n; k++)
        replica_clear(&p->replicas[k]);
}

/* A clone starts without replicas: they are made on its first forward. */
static clt_status dp_clone(const clt_module *src, clt_module *dst)
{
    (void)src;
    data_parallel *p = (data_parallel *)dst;
    memset(p->replicas, 0, sizeof p->replicas);
    clt__module_accept_any_device(dst);
    return CLT_OK;
}

static const clt_module_type dp_type = {.name = "DataParallel",
                                        .size = sizeof(data_parallel),
                                        .forward = dp_forward,
                                        .destroy = dp_destroy,
                                        .clone = dp_clone};

clt_module *clt_nn_data_parallel(clt_module *module, clt_device *const *devices, int n,
                                 clt_device *output_device)
{
    clt_device *all[MAX_DEVICES];
    data_parallel *p;
    if (!module) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "the module is NULL");
        return NULL;
    }
    if (n < 0 || n > MAX_DEVICES) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%d devices: 1 .. %d are possible", n, MAX_DEVICES);
        return NULL;
    }
    if (!devices || n == 0) { /* every GPU, or cpu */
        int gpus = clt_device_count();
        if (gpus < 0) {
            clt__rename_error(fn);
            return NULL;
        }
        n = gpus ? (gpus < MAX_DEVICES ? gpus : MAX_DEVICES) : 1;
        for (int k = 0; k < n; k++) {
            char name[16];
            snprintf(name, sizeof name, "gpu:%d", k);
            all[k] = gpus ? clt_device_get(name) : clt_device_cpu();
            if (!all[k]) {
                clt__rename_error(fn);
                return NULL;
            }
        }
        devices = all;
    }
    for (int k = 0; k < n; k++) {
        if (clt__device_check(fn, devices[k]) != CLT_OK)
            return NULL;
        for (int j = 0; j < k; j++)
            if (devices[j] == devices[k]) {
                clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s is listed twice (devices %d and %d)",
                           devices[k]->name, j, k);
                return NULL;
            }
    }
    if (output_device && clt__device_check(fn, output_device) != CLT_OK)
        return NULL;
    p = (data_parallel *)clt_module_new(&dp_type);
    if (!p) {
        clt__rename_error(fn);
        return NULL;
    }
    if (clt_module_register_module(&p->base, "module", module) != CLT_OK) {
        clt__rename_error(fn);
        clt_module_release(&p->base);
        return NULL;
    }
    clt__module_accept_any_device(&p->base);
    p->module = module;
    p->n = n;
    memcpy(p->devices, devices, (size_t)n * sizeof *devices);
    p->output = output_device ? output_device : devices[0];
    return &p->base;
}

clt_module *clt_data_parallel_get_module(const clt_module *dp)
{
    return dp && dp->type == &dp_type ? ((const data_parallel *)dp)->module : NULL;
}

clt_device *const *clt_data_parallel_devices(const clt_module *dp, int *n)
{
    if (!dp || dp->type != &dp_type) {
        if (n)
            *n = 0;
        return NULL;
    }
    if (n)
        *n = ((const data_parallel *)dp)->n;
    return ((const data_parallel *)dp)->devices;
}
