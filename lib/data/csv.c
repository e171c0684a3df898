/* The CSV dataset: a file of numbers without a header, gzip-compressed or plain, read whole
 * through zlib (which tells the two apart by gzip's magic bytes 1f 8b) and parsed strictly into
 * a features array in the requested dtype and an array of i64 labels that the dataset owns. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "core/core.h"
#include "platform/platform.h"
#include "data/data_internal.h"
#include "tensor/tensor_internal.h"

typedef struct csv_data {
    size_t feature_bytes; /* one item's features */
    char *features;       /* row-major, in the features' dtype */
    int64_t *labels;
} csv_data;

static void csv_data_free(void *user)
{
    csv_data *cd = user;
    if (!cd)
        return;
    clt__free(cd->features);
    clt__free(cd->labels);
    clt__free(cd);
}

static clt_status csv_data_get(void *user, int64_t index, void *const *out)
{
    const csv_data *cd = user;
    memcpy(out[0], cd->features + (size_t)index * cd->feature_bytes, cd->feature_bytes);
    memcpy(out[1], &cd->labels[index], sizeof *cd->labels);
    return CLT_OK;
}

/* ---- reading -------------------------------------------------------------------------------- */

/* Doubles the buffer *buf of *cap bytes holding `used` of them. */
static clt_status grow(const char *fn, char **buf, size_t *cap, size_t used)
{
    size_t bigger = *cap ? 2 * *cap : (size_t)1 << 16;
    char *b = bigger > *cap ? clt__alloc(fn, bigger) : NULL;
    if (!b)
        return bigger > *cap ? CLT_ERR_OUT_OF_MEMORY
                             : clt__error(CLT_ERR_OUT_OF_MEMORY, fn, "the file is too large");
    if (used)
        memcpy(b, *buf, used);
    clt__free(*buf);
    *buf = b;
    *cap = bigger;
    return CLT_OK;
}

/* The whole file, decompressed when it is gzip, NUL-terminated, into *text (the caller frees
 * it) of *len bytes. */
static clt_status read_all(const char *fn, const char *path, char **text, size_t *len)
{
    char *buf = NULL;
    size_t cap = 0, used = 0;
    clt_status st = CLT_OK;
    int err;
    bool irregular;
    clt__path_info info;
    int fd = clt__open_regular(path, &irregular, &info);
    if (fd < 0)
        return clt__error(CLT_ERR_IO, fn, "cannot open %s: %s", path,
                          irregular ? "not a regular file" : strerror(errno));
    errno = 0;
    gzFile f = gzdopen(fd, "rb");
    if (!f) {
        close(fd);
        return clt__error(CLT_ERR_IO, fn, "cannot open %s: %s", path,
                          errno ? strerror(errno) : "out of memory");
    }
    gzbuffer(f, 1 << 17);
    for (;;) {
        if (cap - used < 2 && (st = grow(fn, &buf, &cap, used)) != CLT_OK)
            goto fail;
        size_t want = cap - used - 1 < (size_t)1 << 30 ? cap - used - 1 : (size_t)1 << 30;
        int got = gzread(f, buf + used, (unsigned)want);
        if (got <= 0)
            break;
        used += (size_t)got;
    }
    const char *msg = gzerror(f, &err);
    if (err != Z_OK && err != Z_STREAM_END) {
        const char *colon = strstr(msg, ": "); /* zlib's message begins "<fd:N>: " */
        if (msg[0] == '<' && colon)
            msg = colon + 2;
        st = clt__error(CLT_ERR_IO, fn, "cannot read %s: %s", path,
                        err == Z_ERRNO ? strerror(errno) : msg);
        goto fail;
    }
    gzclose(f);
    buf[used] = '\0';
    *text = buf;
    *len = used;
    return CLT_OK;
fail:
    gzclose(f);
    clt__free(buf);
    return st;
}

/* ---- parsing -------------------------------------------------------------------------------- */

/* A cursor over the lines of the text. */
typedef struct lines {
    const char *p, *end;
    int64_t number;            /* of the current line, from 1 */
    const char *line, *stop;   /* the current line without its "\r\n" */
} lines;

/* Moves to the next line that is not empty; false at the end of the text. */
static bool next_line(lines *l)
{
    while (l->p < l->end) {
        const char *nl = memchr(l->p, '\n', (size_t)(l->end - l->p));
        l->line = l->p;
        l->stop = nl ? nl : l->end;
        l->p = nl ? nl + 1 : l->end;
        l->number++;
        if (l->stop > l->line && l->stop[-1] == '\r')
            l->stop--;
        if (l->stop > l->line)
            return true;
    }
    return false;
}

static int64_t count_columns(const lines *l)
{
    int64_t n = 1;
    for (const char *q = l->line; (q = memchr(q, ',', (size_t)(l->stop - q))) != NULL; q++)
        n++;
    return n;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The number in [*s, *e), blanks around it allowed and nothing else; trims *s and *e to the
 * field's text. */
static bool parse_number(const char **s, const char **e, double *v)
{
    char *stop;
    while (*s < *e && is_blank(**s))
        (*s)++;
    while (*e > *s && is_blank((*e)[-1]))
        (*e)--;
    if (*s == *e)
        return false;
    *v = strtod(*s, &stop); /* stops at *e at the latest: ',', '\r', '\n', a blank or NUL */
    return stop == *e;
}

/* Whether [s, e) is a decimal integer: 1 when it fits i64 (its value in *v), -1 when it does
 * not, 0 when the text is no decimal integer. */
static int integer_text(const char *s, const char *e, int64_t *v)
{
    char *stop;
    errno = 0;
    long long r = strtoll(s, &stop, 10);
    if (stop != e)
        return 0;
    if (errno == ERANGE)
        return -1;
    *v = r;
    return 1;
}

/* What the options ask for, checked, with their defaults applied. */
typedef struct csv_format {
    int label_column;
    clt_dtype dtype;
    double scale;
    int ndim;
    const int64_t *shape;
} csv_format;

static clt_status check_options(const char *fn, const clt_csv_options *o, csv_format *f)
{
    static const clt_csv_options defaults = {0};
    if (!o)
        o = &defaults;
    *f = (csv_format){o->label_column, o->dtype ? o->dtype : CLT_F32, o->scale ? o->scale : 1,
                      o->ndim, o->shape};
    if (f->dtype <= CLT_DTYPE_NONE || f->dtype >= CLT_DTYPE_COUNT)
        return clt__error(CLT_ERR_DTYPE, fn, "dtype %d is invalid", (int)o->dtype);
    if (f->ndim < 0 || f->ndim > CLT_MAX_DIMS - 1)
        return clt__error(CLT_ERR_SHAPE, fn, "ndim %d is outside 0..%d", f->ndim,
                          CLT_MAX_DIMS - 1);
    for (int i = 0; i < f->ndim; i++)
        if (f->shape[i] < 0)
            return clt__error(CLT_ERR_SHAPE, fn, "size %lld of dimension %d is negative",
                              (long long)f->shape[i], i);
    return CLT_OK;
}

/* The fields of the items of a file whose first row has ncols columns; the label column
 * resolved into *label. */
static clt_status make_fields(const char *fn, const char *path, const csv_format *f,
                              int64_t ncols, int64_t *label, clt_field *fields)
{
    char text[256];
    int64_t numel;
    if (ncols < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "%s: the first row has 1 column; a label and a feature need 2", path);
    *label = f->label_column < 0 ? ncols + f->label_column : f->label_column;
    if (*label < 0 || *label >= ncols)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "%s: label_column %d is out of range for %lld columns", path,
                          f->label_column, (long long)ncols);
    fields[0] = (clt_field){.dtype = f->dtype, .ndim = 1, .shape = {ncols - 1}};
    fields[1] = (clt_field){.dtype = CLT_I64, .ndim = 0};
    if (f->ndim == 0)
        return CLT_OK;
    if (!clt__shape_numel(f->ndim, f->shape, &numel) || numel != ncols - 1) {
        clt__format_shape(text, sizeof text, f->ndim, f->shape);
        return clt__error(CLT_ERR_SHAPE, fn, "%s: shape %s does not hold the %lld features", path,
                          text, (long long)(ncols - 1));
    }
    fields[0].ndim = f->ndim;
    memcpy(fields[0].shape, f->shape, (size_t)f->ndim * sizeof *f->shape);
    return CLT_OK;
}

/* Parses the current line, of ncols columns, into item `row` of cd. */
static clt_status parse_row(const char *fn, const char *path, const lines *l,
                            const csv_format *f, int64_t ncols, int64_t label, csv_data *cd,
                            int64_t row)
{
    int64_t n = count_columns(l), feature = row * (ncols - 1);
    long long line = (long long)l->number;
    const char *s = l->line;
    if (n != ncols)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s:%lld: %lld columns, the first row has %lld",
                          path, line, (long long)n, (long long)ncols);
    for (int64_t c = 0; c < ncols; c++) {
        const char *e = memchr(s, ',', (size_t)(l->stop - s)), *next;
        double v;
        e = e ? e : l->stop;
        next = e + 1;
        bool number = parse_number(&s, &e, &v);
        int shown = (int)(e - s < 40 ? e - s : 40); /* of the field's text, in the message */
        if (!number)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s:%lld: column %lld: '%.*s' is not a number",
                              path, line, (long long)c + 1, shown, s);
        int exact = c == label ? integer_text(s, e, &cd->labels[row]) : 0;
        if (exact == 1) {
            /* all 64 bits of it */
        } else if (c == label) {
            if (!isfinite(v) || v != trunc(v))
                return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s:%lld: label %.*s is not an integer",
                                  path, line, shown, s);
            if (exact < 0 || v < -0x1p63 || v >= 0x1p63)
                return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s:%lld: label %.*s is beyond i64",
                                  path, line, shown, s);
            cd->labels[row] = (int64_t)v;
        } else {
            v *= f->scale;
            clt__host_convert(&v, 0, CLT_F64, cd->features, (size_t)feature++, f->dtype, 1);
        }
        s = next;
    }
    return CLT_OK;
}

/* The items of the text: counts its rows and columns, makes the arrays and parses every row. */
static clt_status parse(const char *fn, const char *path, const csv_format *f, const char *text,
                        size_t len, clt_field *fields, int64_t *rows, csv_data **out)
{
    lines l = {.p = text, .end = text + len};
    int64_t ncols = 0, label = 0, n = 0;
    size_t bytes;
    csv_data *cd;
    clt_status st;
    while (next_line(&l))
        if (n++ == 0)
            ncols = count_columns(&l);
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s: no rows", path);
    if ((st = make_fields(fn, path, f, ncols, &label, fields)) != CLT_OK)
        return st;
    cd = clt__alloc_zeroed(fn, sizeof *cd);
    if (!cd)
        return CLT_ERR_OUT_OF_MEMORY;
    cd->feature_bytes = (size_t)(ncols - 1) * clt_dtype_size(f->dtype);
    if (!clt__mul_size(cd->feature_bytes, (size_t)n, &bytes)) {
        st = clt__error(CLT_ERR_OUT_OF_MEMORY, fn, "%s: %lld rows of %lld features are too many",
                        path, (long long)n, (long long)(ncols - 1));
        goto fail;
    }
    cd->labels = clt__alloc(fn, (size_t)n * sizeof *cd->labels);
    cd->features = cd->labels ? clt__alloc(fn, bytes) : NULL;
    if (!cd->features) {
        st = CLT_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    l = (lines){.p = text, .end = text + len};
    for (int64_t row = 0; next_line(&l); row++)
        if ((st = parse_row(fn, path, &l, f, ncols, label, cd, row)) != CLT_OK)
            goto fail;
    *rows = n;
    *out = cd;
    return CLT_OK;
fail:
    csv_data_free(cd);
    return st;
}

clt_csv_options clt_csv_options_default(void)
{
    return (clt_csv_options){.dtype = CLT_F32, .scale = 1};
}

clt_dataset *clt_dataset_csv(const char *path, const clt_csv_options *options)
{
    static const char *const fn = "clt_dataset_csv";
    clt_field fields[2];
    csv_format f;
    char *text = NULL;
    size_t len = 0;
    int64_t rows = 0;
    csv_data *cd = NULL;
    clt_dataset *d = NULL;

    if (!path) {
        clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "path is NULL");
        return NULL;
    }
    if (check_options(fn, options, &f) != CLT_OK || read_all(fn, path, &text, &len) != CLT_OK)
        return NULL;
    if (parse(fn, path, &f, text, len, fields, &rows, &cd) == CLT_OK) {
        d = clt_dataset_new(rows, 2, fields, csv_data_get, csv_data_free, cd);
        if (!d) {
            clt__rename_error(fn);
            csv_data_free(cd);
        }
    }
    clt__free(text);
    return d;
}
