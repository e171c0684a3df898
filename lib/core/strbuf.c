/* A growing string for the library's renderings (tensors, modules). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

void clt__sb_add(clt__strbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (b->failed)
        return;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        clt__error(CLT_ERR_INTERNAL, b->fn, "a rendering could not be formatted");
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = (b->len + (size_t)n + 1) * 2;
        char *grown = clt__alloc(b->fn, cap);
        if (!grown) {
            b->failed = true;
            return;
        }
        if (b->data)
            memcpy(grown, b->data, b->len + 1);
        clt__free(b->data);
        b->data = grown;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *clt__sb_finish(clt__strbuf *b)
{
    if (b->failed) {
        clt__free(b->data);
        return NULL;
    }
    if (!b->data)
        clt__sb_add(b, "%s", "");
    return b->failed ? NULL : b->data;
}

void clt__format_py_float(char *buf, size_t size, double v)
{
    char e[40];
    int digits = 1, exp;
    if (isnan(v) || isinf(v)) {
        snprintf(buf, size, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
        return;
    }
    if (v == 0) {
        snprintf(buf, size, "%s", signbit(v) ? "-0.0" : "0.0");
        return;
    }
    for (; digits < 17; digits++) { /* the fewest significant digits that read back as v */
        snprintf(e, sizeof e, "%.*e", digits - 1, v);
        if (strtod(e, NULL) == v)
            break;
    }
    snprintf(e, sizeof e, "%.*e", digits - 1, v);
    exp = atoi(strchr(e, 'e') + 1);
    if (exp < -4 || exp >= 16) { /* Python's exponent form: mantissa digits, "e-05" */
        char *m = strchr(e, 'e');
        snprintf(buf, size, "%.*s%s", (int)(m - e), e, m);
        return;
    }
    int decimals = digits - 1 - exp > 0 ? digits - 1 - exp : 0;
    snprintf(buf, size, decimals ? "%.*f" : "%.*f.0", decimals, v);
}
