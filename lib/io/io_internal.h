/* What the safetensors format (safetensors.c) gives the code that saves and loads a module's
 * tensors (state_dict.c): writing named tensors, and a file's header, validated, for reading its
 * tensors one at a time. */
#ifndef CLT_IO_INTERNAL_H
#define CLT_IO_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "cltensor/io.h"

struct cJSON;

/* One tensor of a header: its name, dtype, shape and byte range in the file's data, or a tensor
 * of a state dict in memory. */
typedef struct clt__io_entry {
    const char *name; /* in the parsed JSON */
    clt_dtype dtype;
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
    uint64_t begin, end; /* in bytes from the start of the data */
    clt_tensor *value;   /* an entry of a state dict in memory (borrowed), or NULL: in the file */
} clt__io_entry;

/* A validated header; the file stays open for reading the data. */
typedef struct clt__io_parsed {
    FILE *f;
    struct cJSON *json;
    clt__io_entry *entries; /* sorted by name */
    int count;
    struct cJSON *metadata; /* the "__metadata__" object in json, or NULL */
    uint64_t data_start;
} clt__io_parsed;

/* The format's name of each dtype ("F32", "BF16", ...), as headers spell it. */
extern const char *const clt__io_format_dtype[CLT_DTYPE_COUNT];

/* Writes the tensors and metadata to path as clt_safetensors_save does, with errors under fn:
 * into a new file renamed into place once complete. */
clt_status clt__io_save(const char *fn, const char *path, const clt_named_tensor *tensors,
                        int count, const clt_metadata *metadata, int metadata_count);

/* Opens path and validates its header in full into *p; on failure p is freed and the error is
 * set under fn. */
clt_status clt__io_parse_file(const char *fn, const char *path, clt__io_parsed *p);

/* Closes p's file and frees what it holds, leaving it zeroed. */
void clt__io_parsed_free(clt__io_parsed *p);

/* Entry e's data as a new tensor on dev (e's own tensor, retained, for an entry in memory);
 * NULL with the error set under fn. */
clt_tensor *clt__io_read_entry(const char *fn, const char *path, clt__io_parsed *p,
                               const clt__io_entry *e, clt_device *dev);

/* Orders two clt__io_entry by name, for qsort and bsearch. */
int clt__io_compare_entry_names(const void *a, const void *b);

#endif
