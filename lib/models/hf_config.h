/* Reading a Hugging Face config.json into a model's config struct, internal to
 * cltensor_models: each key the file holds is looked up in the model's table of fields, then
 * in the table of the fields every transformers config inherits (PretrainedConfig's and the
 * generation settings once kept there); one in neither is refused, and so is a value the
 * field's kind does not take. */
#ifndef CLT_MODELS_HF_CONFIG_H
#define CLT_MODELS_HF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <cltensor.h>

/* How a field's value is read, or why it is refused. */
typedef enum hf_kind {
    HF_ACCEPT, /* any value: no effect on the computation (metadata, initialisation, generation,
                * heads the library does not build) */
    HF_SIZE,   /* an int64_t at offset: a whole number from 1 to 2^53 */
    HF_INT,    /* an int at offset: a whole number from 1 to INT_MAX */
    HF_INNER,  /* an int64_t at offset: null (0) or a whole number from 1 to 2^53 */
    HF_PROB,   /* a double at offset, from 0 to 1 */
    HF_EPS,    /* a double at offset, finite and not negative */
    HF_BOOL,   /* a bool at offset */
    HF_ACT,    /* a clt_models_activation at offset: a name of ACT2FN the library computes */
    HF_TOKEN,  /* an int64_t at offset: null (INT64_MIN) or a whole number within +-2^53 */
    HF_FALSE,  /* false or null only; text: what true would ask for */
    HF_STRING, /* the string text only */
    HF_EMPTY,  /* null or an empty object or list only; text: what another value asks for */
    HF_NULL,   /* null only; text: what another value asks for */
    HF_ALIAS,  /* transformers' other name (attribute_map) of the field text */
    HF_SAME    /* a whole number equal to the int64_t at offset once the file is read; text:
                * that field's name */
} hf_kind;

typedef struct hf_field {
    const char *key;
    hf_kind kind;
    size_t offset; /* in the config struct, for the kinds that write or compare one */
    const char *text;
} hf_field;

/* Whether a config (the model's struct) can be built; when not, why in `why` (of size bytes). */
typedef bool (*hf_check_fn)(const void *config, char *why, size_t size);

/* Reads the JSON object at path (at most 1 MiB) over a copy of `defaults` (the model's config
 * struct, of size bytes), checks the result with `check` and writes it to *out. CLT_OK, or the
 * error naming `where` and the path with *out unchanged: CLT_ERR_INVALID_ARGUMENT for a NULL
 * path or out, text that is not one JSON object, a key given twice, a key neither table knows,
 * a value its field refuses (naming the key and the value) or a config `check` refuses;
 * CLT_ERR_IO for a file that cannot be read or is larger. */
clt_status clt__models_config_read(const char *where, const char *path, const hf_field *fields,
                                   int count, const void *defaults, size_t size,
                                   hf_check_fn check, void *out);

#endif
