/* Saving and loading tensors in the safetensors format (an 8-byte little-endian header length,
 * a JSON header naming each tensor's dtype, shape and byte range, then the data, row-major and
 * little-endian), the format PyTorch and Hugging Face use for state_dicts. Tensors may live on
 * any device; files are untrusted input: a malformed one is rejected with
 * CLT_ERR_INVALID_ARGUMENT naming the file and the problem, an unreadable one with CLT_ERR_IO. */
#ifndef CLTENSOR_IO_H
#define CLTENSOR_IO_H

#include <stdbool.h>

#include "cltensor/nn.h"
#include "cltensor/status.h"
#include "cltensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor and its name in a file. */
typedef struct clt_named_tensor {
    const char *name;
    clt_tensor *tensor;
} clt_named_tensor;

/* One entry of the file's "__metadata__" object (strings only, as the format requires). */
typedef struct clt_metadata {
    const char *key;
    const char *value;
} clt_metadata;

/* Writes `count` tensors (distinct names, any devices and dtypes, views included) and
 * `metadata_count` metadata pairs to `path`, through a new temporary file of an unpredictable
 * name in path's folder (created exclusively, never through a link; the umask's mode) renamed
 * over it, so that a failure leaves any old file as it was. metadata may be NULL when metadata_count is 0.
 * CLT_ERR_INVALID_ARGUMENT for a NULL path, tensor, name or string, a negative count, a
 * repeated name or the reserved name "__metadata__"; CLT_ERR_IO naming what failed. */
CLT_API clt_status clt_safetensors_save(const char *path, const clt_named_tensor *tensors,
                                        int count, const clt_metadata *metadata,
                                        int metadata_count);

/* Writes m's parameters and buffers under their state_dict names ("0.weight") to `path`, as
 * clt_safetensors_save does (a parameter or buffer registered twice only under its first name);
 * CLT_ERR_INVALID_ARGUMENT for a NULL m. */
CLT_API clt_status clt_module_save(const clt_module *m, const char *path,
                                   const clt_metadata *metadata, int metadata_count);

/* The contents of a file. The caller owns the struct (it may live on the stack); the library
 * owns what it points to: the names, metadata strings and one reference to each tensor, all
 * freed by clt_safetensors_clear (take clt_tensor_retain to keep a tensor longer). */
typedef struct clt_safetensors {
    int count;                  /* tensors, in the order of their data in the file */
    clt_named_tensor *tensors;
    int metadata_count;
    clt_metadata *metadata;
} clt_safetensors;

/* Reads every tensor of `path` into new tensors on `dev` (NULL: cpu), filling *out, which the
 * caller empties with clt_safetensors_clear. On failure *out is left empty (zeroed) and
 * nothing is kept; CLT_ERR_INVALID_ARGUMENT for a NULL path or out; CLT_ERR_IO for a path that
 * is no regular file (a FIFO is refused at once, not waited on). */
CLT_API clt_status clt_safetensors_load(const char *path, clt_device *dev, clt_safetensors *out);
/* Releases what clt_safetensors_load put in *st and zeroes it; accepts NULL and empty ones. */
CLT_API void clt_safetensors_clear(clt_safetensors *st);
/* The tensor named `name` in st (borrowed: valid until clt_safetensors_clear), or NULL when
 * there is none or an argument is NULL (no error set). */
CLT_API clt_tensor *clt_safetensors_get(const clt_safetensors *st, const char *name);
/* The metadata value of `key` (borrowed: valid until clt_safetensors_clear), or NULL when there
 * is none or an argument is NULL (no error set). */
CLT_API const char *clt_safetensors_metadata_get(const clt_safetensors *st, const char *key);

/* What a load into a module left out. The caller owns the struct; the library owns the names,
 * freed by clt_load_report_clear. */
typedef struct clt_load_report {
    int missing_count;    /* names of the module absent from the file */
    char **missing;
    int unexpected_count; /* names in the file the module lacks */
    char **unexpected;
} clt_load_report;

/* Copies the file's values into m's existing parameters and buffers, in place (they keep their
 * handles, devices and dtypes; nothing is recorded for autograd). Strict: every name of m must
 * be in the file with the same shape and dtype, and the file must hold no other name.
 * Not strict: names on one side only are skipped, a differing dtype is converted; a differing
 * shape is still an error (as in PyTorch). All or nothing: a file that does not fit changes no
 * tensor and the error lists the names at fault (CLT_ERR_INVALID_ARGUMENT); nor does one that
 * cannot be read (CLT_ERR_IO, CLT_ERR_INVALID_ARGUMENT), nor running out of host or device
 * memory (every value is read and placed on its tensor's device before any is copied in, so
 * a load needs room there for a second copy of what it loads), nor a module tensor that
 * cannot be written (a broadcast view: CLT_ERR_INVALID_ARGUMENT naming it, before any copy).
 * report, if not NULL, is zeroed first and receives the
 * missing and unexpected names whenever the file could be read, also when strictness rejects
 * it (clear it with clt_load_report_clear); it is left empty on running out of memory. */
CLT_API clt_status clt_module_load(clt_module *m, const char *path, bool strict,
                                   clt_load_report *report);
/* PyTorch's model.state_dict() and load_state_dict() in memory. A state dict is a list of named
 * tensors; the caller owns the struct, the library the names and one reference to each tensor
 * (freed by clt_state_dict_clear). */
typedef struct clt_state_dict {
    int count;
    clt_named_tensor *tensors; /* parameters first, then buffers, depth first as registered */
} clt_state_dict;
/* Fills *out with m's parameters and buffers under their dotted names: the module's own tensor
 * handles, retained (they hold its values and follow it when it moves: clone them with
 * clt_tensor_to_ex(.copy = true) to keep a snapshot). On failure *out is empty (zeroed);
 * CLT_ERR_INVALID_ARGUMENT for NULL. */
CLT_API clt_status clt_module_state_dict(const clt_module *m, clt_state_dict *out);
/* Releases what clt_module_state_dict put in *sd and zeroes it; accepts NULL and empty ones. */
CLT_API void clt_state_dict_clear(clt_state_dict *sd);
/* clt_module_load from `count` named tensors in memory (any devices and dtypes; a state dict's
 * tensors, a clt_safetensors' tensors), with the same rules, report and all-or-nothing
 * behaviour; CLT_ERR_INVALID_ARGUMENT also for a NULL name or tensor or a name given twice. */
CLT_API clt_status clt_module_load_state_dict(clt_module *m, const clt_named_tensor *tensors,
                                              int count, bool strict, clt_load_report *report);
/* Frees what a load put in *r and zeroes it; accepts NULL. */
CLT_API void clt_load_report_clear(clt_load_report *r);

#ifdef __cplusplus
}
#endif

#endif
