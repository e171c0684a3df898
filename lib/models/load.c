/* Loading a Hugging Face safetensors file into a model under the model's names (see
 * common.h): the file's names mapped by the model's callback, dtypes converted as
 * from_pretrained converts them, then one strict, all-or-nothing load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static bool floating(clt_dtype dt)
{
    return dt == CLT_F32 || dt == CLT_F64 || dt == CLT_F16 || dt == CLT_BF16;
}

/* The model's tensor `name` (a parameter or a buffer), or NULL. */
static clt_tensor *model_tensor(const clt_module *m, const char *name)
{
    clt_tensor *t = clt_module_get_parameter(m, name);
    return t ? t : clt_module_get_buffer(m, name);
}

/* What the load hands clt_module_load_state_dict: names and tensors, both owned. */
typedef struct load_list {
    clt_named_tensor *items;
    char **names;
    int n;
} load_list;

static void list_clear(load_list *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->names[i]);
        clt_tensor_release(l->items[i].tensor);
    }
    free(l->names);
    free(l->items);
}

/* Appends `name` with t (retained, or converted to the dtype of the model's tensor of that
 * name where both are floating and differ). */
static clt_status list_add(load_list *l, const clt_module *model, const char *where,
                           const char *name, clt_tensor *t)
{
    clt_tensor *own = model_tensor(model, name);
    clt_dtype want = own ? clt_tensor_dtype(own) : clt_tensor_dtype(t);
    bool convert = floating(want) && floating(clt_tensor_dtype(t)) && want != clt_tensor_dtype(t);
    clt_tensor *v = convert ? clt_tensor_to_dtype(t, want) : clt_tensor_retain(t);
    char *copy = v ? malloc(strlen(name) + 1) : NULL;
    if (!copy) {
        clt_tensor_release(v);
        return v ? clt_set_error(CLT_ERR_OUT_OF_MEMORY, where, "no room for the name %s", name)
                 : clt_last_status();
    }
    strcpy(copy, name);
    l->names[l->n] = copy;
    l->items[l->n] = (clt_named_tensor){copy, v};
    l->n++;
    return CLT_OK;
}

/* The file's tensors under the model's names, then `extra`. */
static clt_status build_list(load_list *l, const clt_safetensors *file, clt_module *model,
                             const char *where, clt__models_rename_fn rename, void *ctx,
                             const clt_named_tensor *extra, int extra_count)
{
    size_t room = (size_t)file->count + (size_t)extra_count + 1;
    l->items = calloc(room, sizeof *l->items);
    l->names = calloc(room, sizeof *l->names);
    if (!l->items || !l->names)
        return clt_set_error(CLT_ERR_OUT_OF_MEMORY, where, "no room for the names of %d tensors",
                             file->count);
    clt_status st = CLT_OK;
    char name[512];
    for (int i = 0; st == CLT_OK && i < file->count; i++) {
        const clt_named_tensor *e = &file->tensors[i];
        clt__models_action a = rename(ctx, e->name, e->tensor, name, sizeof name);
        if (a == CLT_MODELS_FAIL)
            st = clt_last_status();
        else if (a == CLT_MODELS_LOAD)
            st = list_add(l, model, where, name, e->tensor);
    }
    for (int i = 0; st == CLT_OK && i < extra_count; i++)
        st = list_add(l, model, where, extra[i].name, extra[i].tensor);
    return st;
}

clt_status clt__models_open(const char *where, const char *path, clt_safetensors *file)
{
    clt_status st = clt_safetensors_load(path, clt_device_cpu(), file);
    if (st != CLT_OK) {
        char cause[1024];
        snprintf(cause, sizeof cause, "%s", clt_last_error());
        clt_set_error(st, where, "%s", cause);
    }
    return st;
}

bool clt__models_any_prefix(const clt_safetensors *file, const char *prefix)
{
    size_t n = strlen(prefix);
    for (int i = 0; i < file->count; i++)
        if (strncmp(file->tensors[i].name, prefix, n) == 0)
            return true;
    return false;
}

clt_status clt__models_load(clt_module *model, const char *where, const char *path,
                            const clt_safetensors *file, clt__models_rename_fn rename, void *ctx,
                            const clt_named_tensor *extra, int extra_count)
{
    load_list l = {NULL, NULL, 0};
    clt_status st = build_list(&l, file, model, where, rename, ctx, extra, extra_count);
    if (st == CLT_OK && clt_module_load_state_dict(model, l.items, l.n, true, NULL) != CLT_OK) {
        char *cause = malloc(strlen(clt_last_error()) + 1);
        st = clt_last_status();
        if (cause) { /* else the message stays the loader's own */
            strcpy(cause, clt_last_error());
            clt_set_error(st, where, "%s: %s", path, cause);
        }
        free(cause);
    }
    list_clear(&l);
    return st;
}
