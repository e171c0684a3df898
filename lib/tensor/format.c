/* Printing tensors the way PyTorch does: fixed, integer-valued or scientific float formats
 * chosen from the values, aligned columns, lines wrapped at 80 characters, edges only for more
 * than 1000 elements, and the device and dtype as suffixes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tensor_internal.h"

#define LINE_WIDTH 80
#define EDGE_ITEMS 3
#define SUMMARY_THRESHOLD 1000

/* How every element is written: chosen once from all the values shown. */
typedef struct formatter {
    enum { FMT_FIXED, FMT_INTEGRAL, FMT_SCI, FMT_INT, FMT_BOOL } kind;
    int width;
} formatter;

/* Element i of the values: doubles for floating dtypes, int64 for the others. */
static int format_value(const formatter *f, const void *values, size_t i, char *out, size_t size)
{
    char tmp[64];
    double v;
    int64_t n;
    memcpy(&v, (const char *)values + i * 8, 8);
    memcpy(&n, (const char *)values + i * 8, 8);
    if (f->kind == FMT_BOOL)
        snprintf(tmp, sizeof tmp, "%s", n ? "True" : "False");
    else if (f->kind == FMT_INT)
        snprintf(tmp, sizeof tmp, "%lld", (long long)n);
    else if (isnan(v)) /* never "-nan", as Python writes it */
        snprintf(tmp, sizeof tmp, "nan");
    else if (f->kind == FMT_SCI)
        snprintf(tmp, sizeof tmp, "%.4e", v);
    else if (f->kind == FMT_INTEGRAL)
        snprintf(tmp, sizeof tmp, isfinite(v) ? "%.0f." : "%.0f", v);
    else
        snprintf(tmp, sizeof tmp, "%.4f", v);
    return snprintf(out, size, "%*s", f->width, tmp);
}

/* Is element `flat` shown (not hidden inside "...")? */
static bool shown(const clt_tensor *t, size_t flat, bool summarize)
{
    if (!summarize)
        return true;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t size = t->shape[d], i = (int64_t)(flat % (size_t)size);
        flat /= (size_t)size;
        if (size > 2 * EDGE_ITEMS && i >= EDGE_ITEMS && i < size - EDGE_ITEMS)
            return false;
    }
    return true;
}

/* PyTorch's _Formatter: for floating dtypes the nonzero finite values decide between integral,
 * fixed and scientific formats and set the column width; zeros, NaN and inf do not. */
static formatter choose_format(const clt_tensor *t, const double *v, bool summarize)
{
    formatter f = {FMT_FIXED, 1};
    bool floating = clt__is_floating(t->dtype);
    double lo = INFINITY, hi = 0;
    char tmp[64];

    if (!floating) {
        f.kind = t->dtype == CLT_BOOL ? FMT_BOOL : FMT_INT;
        for (size_t i = 0; i < t->numel; i++)
            if (shown(t, i, summarize)) {
                int n = format_value(&f, v, i, tmp, sizeof tmp);
                f.width = n > f.width ? n : f.width;
            }
        return f;
    }
    f.kind = FMT_INTEGRAL;
    for (size_t i = 0; i < t->numel; i++) {
        if (!shown(t, i, summarize) || !isfinite(v[i]) || v[i] == 0)
            continue;
        if (v[i] != ceil(v[i]))
            f.kind = FMT_FIXED;
        lo = fmin(lo, fabs(v[i]));
        hi = fmax(hi, fabs(v[i]));
    }
    if (hi > 0 && (hi / lo > 1000.0 || hi > 1.0e8 || (f.kind == FMT_FIXED && lo < 1.0e-4)))
        f.kind = FMT_SCI;
    for (size_t i = 0; i < t->numel; i++)
        if (shown(t, i, summarize) && isfinite(v[i]) && v[i] != 0) {
            int n = format_value(&f, v, i, tmp, sizeof tmp);
            f.width = n > f.width ? n : f.width;
        }
    return f;
}

/* Writes dimension `dim` of the block starting at element `base`, PyTorch's _tensor_str. */
static void write_block(clt__strbuf *b, const clt_tensor *t, const double *v,
                        const formatter *f, int dim, size_t base, int indent, bool summarize)
{
    int64_t size = t->shape[dim];
    size_t stride = 1;
    bool cut = summarize && size > 2 * EDGE_ITEMS;
    char cell[64];

    for (int d = dim + 1; d < t->ndim; d++)
        stride *= (size_t)t->shape[d];
    clt__sb_add(b, "[");
    if (dim == t->ndim - 1) {
        int per_line = (LINE_WIDTH - indent) / (f->width + 2);
        int on_line = 0;
        per_line = per_line < 1 ? 1 : per_line;
        for (int64_t i = 0; i < size; i++) {
            if (cut && i == EDGE_ITEMS) {
                snprintf(cell, sizeof cell, " ...");
                i = size - EDGE_ITEMS - 1;
            } else {
                format_value(f, v, base + (size_t)i, cell, sizeof cell);
            }
            if (on_line == per_line) {
                clt__sb_add(b, ",\n%*s", indent + 1, "");
                on_line = 0;
            } else if (on_line > 0) {
                clt__sb_add(b, ", ");
            }
            clt__sb_add(b, "%s", cell);
            on_line++;
        }
    } else {
        for (int64_t i = 0; i < size; i++) {
            if (i > 0) {
                clt__sb_add(b, ",");
                for (int n = 0; n < t->ndim - dim - 1; n++)
                    clt__sb_add(b, "\n");
                clt__sb_add(b, "%*s", indent + 1, "");
            }
            if (cut && i == EDGE_ITEMS) {
                clt__sb_add(b, "...");
                i = size - EDGE_ITEMS - 1;
                continue;
            }
            write_block(b, t, v, f, dim + 1, base + (size_t)i * stride, indent + 1, summarize);
        }
    }
    clt__sb_add(b, "]");
}

/* ", device='gpu:0'", ", dtype=f64" and ", grad_fn=<MulBackward>" (or ", requires_grad=True")
 * as PyTorch's _add_suffixes adds them. `last` is its
 * measure of the last line, which starts two above the real length: a suffix goes on a new line
 * when last + 2 + its length would pass 80. */
static void add_suffix(clt__strbuf *b, const char *suffix, size_t *last)
{
    size_t n = strlen(suffix);
    if (*last + n + 2 > LINE_WIDTH) {
        clt__sb_add(b, ",\n       %s", suffix);
        *last = 7 + n;
    } else {
        clt__sb_add(b, ", %s", suffix);
        *last += n + 2;
    }
}

char *clt_tensor_format(const clt_tensor *t)
{
    static const char *const fn = "clt_tensor_format";
    clt__strbuf b = {.fn = fn};
    double *v = NULL;
    void *raw = NULL;
    bool summarize;
    char shape[256];

    if (clt__tensor_check(fn, t) != CLT_OK)
        return NULL;
    summarize = t->numel > SUMMARY_THRESHOLD;
    if (t->numel) {
        size_t nbytes = t->numel * clt_dtype_size(t->dtype);
        bool floating = clt__is_floating(t->dtype);
        raw = clt__alloc(fn, nbytes);
        v = raw ? clt__alloc(fn, t->numel * sizeof *v) : NULL;
        if (!v || clt_tensor_copy_to_host(t, raw, nbytes) != CLT_OK)
            goto fail;
        clt__host_convert(raw, 0, t->dtype, v, 0, floating ? CLT_F64 : CLT_I64, t->numel);
    }
    clt__sb_add(&b, "tensor(");
    if (t->ndim == 0) {
        formatter f = choose_format(t, v, false);
        char cell[64];
        f.width = 0;
        format_value(&f, v, 0, cell, sizeof cell);
        clt__sb_add(&b, "%s", cell);
    } else if (t->numel == 0) {
        clt__sb_add(&b, "[]");
        if (t->ndim != 1) {
            clt__format_shape(shape, sizeof shape, t->ndim, t->shape);
            clt__sb_add(&b, ", size=%s", shape);
        }
    } else {
        formatter f = choose_format(t, v, summarize);
        write_block(&b, t, v, &f, 0, 0, 7, summarize);
    }
    const char *nl = b.data ? strrchr(b.data, '\n') : NULL;
    size_t last = nl ? b.len - (size_t)(nl - b.data) + 1 : b.len + 2;
    if (!clt__is_host(t->storage->device)) {
        char dev[64];
        snprintf(dev, sizeof dev, "device='%s'", t->storage->device->name);
        add_suffix(&b, dev, &last);
    }
    if (t->dtype != CLT_F32 && t->dtype != CLT_I64 && t->dtype != CLT_BOOL) {
        char dt[32];
        snprintf(dt, sizeof dt, "dtype=%s", clt_dtype_name(t->dtype));
        add_suffix(&b, dt, &last);
    }
    char label[96];
    const clt__tensor_ext *ext = atomic_load(&((clt_tensor *)t)->ext);
    if (ext && ext->label && ext->label(ext, label, sizeof label))
        add_suffix(&b, label, &last);
    clt__sb_add(&b, ")");
    if (b.failed)
        goto fail;
    clt__free(raw);
    clt__free(v);
    return b.data;
fail:
    clt__free(raw);
    clt__free(v);
    clt__free(b.data);
    return NULL;
}

clt_status clt_tensor_print(const clt_tensor *t)
{
    char *s = clt_tensor_format(t);
    if (!s)
        return clt_last_status();
    printf("%s\n", s);
    clt__free(s);
    return CLT_OK;
}
