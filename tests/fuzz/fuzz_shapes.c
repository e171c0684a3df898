/* libFuzzer target for shape arithmetic: each input is a program of up to 12 view and join
 * operations (view, reshape, slice, narrow, expand, cat, unsqueeze, squeeze, transpose, permute,
 * contiguous) on a small i64 tensor of 0, 1, 2, ... on the cpu device, with sizes, starts, ends
 * and steps drawn near the limits of int64 as often as small. Aborts when a call breaks the
 * library's promises: a failure without an error naming a clt_ function; a tensor whose element
 * count is not the product of its sizes, with a negative size or stride, or whose elements
 * reach outside its storage; or a view of the base whose elements are not where its strides
 * say. Results small enough are read back in full (AddressSanitizer checks every access). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltensor/ops.h"
#include "fuzz_file.h"
#include "tensor/tensor_internal.h"

enum { MAX_OPS = 12, SMALL = 1 << 14 };

typedef struct reader {
    const uint8_t *p, *end;
} reader;

static uint64_t take(reader *r, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes && r->p < r->end; i++)
        v = v << 8 | *r->p++;
    return v;
}

/* A size, index or step: small, near a power of two, near the ends of int64, or raw. */
static int64_t number(reader *r)
{
    uint8_t kind = (uint8_t)take(r, 1), b = (uint8_t)take(r, 1);
    int64_t d = (int64_t)(kind / 6 % 5) - 2; /* -2 .. 2 */
    switch (kind % 6) {
    case 0: return b % 9;
    case 1: return -1 - b % 3;
    case 2: return ((int64_t)1 << (1 + b % 62)) + d;
    case 3: return INT64_MAX - b % 3;
    case 4: return INT64_MIN + b % 3;
    default: return (int64_t)take(r, 8);
    }
}

static void fail(const char *what, const clt_tensor *t)
{
    fprintf(stderr, "fuzz_shapes: %s (ndim %d, numel %zu, offset %zu)\n", what, t ? t->ndim : -1,
            t ? t->numel : 0, t ? t->offset : 0);
    abort();
}

/* The promises of a tensor the library returned; for a view of base, every element checked. */
static void check(const clt_tensor *t, const clt_tensor *base)
{
    __int128 numel = 1, last = (__int128)t->offset;
    size_t elements = t->storage->nbytes / clt_dtype_size(t->dtype);
    if (t->ndim < 0 || t->ndim > CLT_MAX_DIMS)
        fail("ndim out of range", t);
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0 || t->strides[d] < 0)
            fail("a negative size or stride", t);
        numel *= t->shape[d];
        if (t->shape[d] > 0)
            last += (__int128)(t->shape[d] - 1) * t->strides[d];
    }
    if (numel != (__int128)t->numel || numel > INT64_MAX)
        fail("numel is not the product of the sizes", t);
    if (t->numel > 0 && last >= (__int128)elements)
        fail("elements outside the storage", t);
    if (t->numel == 0 || t->numel > SMALL)
        return;
    int64_t *v = malloc(t->numel * sizeof *v);
    if (!v)
        abort();
    clt_status st = clt_tensor_copy_to_host(t, v, t->numel * sizeof *v);
    if (st != CLT_OK)
        fail("a small tensor could not be read", t);
    if (t->storage == base->storage) { /* base holds 0, 1, 2, ...: each value is its position */
        int64_t index[CLT_MAX_DIMS] = {0};
        for (size_t i = 0; i < t->numel; i++) {
            int64_t at = (int64_t)t->offset;
            for (int d = 0; d < t->ndim; d++)
                at += index[d] * t->strides[d];
            if (v[i] != at)
                fail("an element is not where the strides say", t);
            for (int d = t->ndim - 1; d >= 0 && ++index[d] == t->shape[d]; d--)
                index[d] = 0;
        }
    }
    free(v);
}

static int64_t shape_of(reader *r, int ndim, int64_t *shape)
{
    for (int d = 0; d < ndim; d++)
        shape[d] = number(r);
    return ndim;
}

/* Set by apply when it called nothing: the operation would have copied too much. */
static bool skipped;

static clt_tensor *skip(void)
{
    skipped = true;
    return NULL;
}

/* One operation on x drawn from the input: a new tensor, or NULL (a refused call). */
static clt_tensor *apply(reader *r, clt_tensor *x)
{
    int64_t shape[CLT_MAX_DIMS + 1];
    uint8_t op = (uint8_t)take(r, 1), arg = (uint8_t)take(r, 1);
    int ndim = arg % (CLT_MAX_DIMS + 2) - (arg % 17 == 0); /* -1 .. 9 at times */
    int dim = (int)(int8_t)take(r, 1) % (x->ndim + 2);
    int nd = ndim < 0 ? 0 : ndim > CLT_MAX_DIMS ? CLT_MAX_DIMS : ndim;
    switch (op % 11) {
    case 0: shape_of(r, nd, shape); return clt_view(x, ndim, shape);
    case 1: /* may copy: only a tensor small enough */
        shape_of(r, nd, shape);
        return x->numel <= SMALL ? clt_reshape(x, ndim, shape) : skip();
    case 2: {
        int64_t start = number(r), end = number(r), step = number(r);
        return clt_slice(x, dim, start, end, step);
    }
    case 3: {
        int64_t start = number(r), length = number(r);
        return clt_narrow(x, dim, start, length);
    }
    case 4: shape_of(r, nd, shape); return clt_expand(x, ndim, shape);
    case 5: { /* copies: only parts small enough */
        clt_tensor *parts[3] = {x, x, x};
        int n = 1 + arg % 3;
        return x->numel * (size_t)n <= SMALL ? clt_cat(parts, n, dim) : skip();
    }
    case 6: return clt_unsqueeze(x, dim);
    case 7: return arg & 1 ? clt_squeeze_all(x) : clt_squeeze(x, dim);
    case 8: return clt_transpose(x, dim, (int)(int8_t)take(r, 1) % (x->ndim + 2));
    case 9: {
        int dims[CLT_MAX_DIMS];
        for (int d = 0; d < CLT_MAX_DIMS; d++)
            dims[d] = (int)(int8_t)take(r, 1) % (x->ndim + 1);
        return clt_permute(x, dims);
    }
    default: return x->numel <= SMALL ? clt_contiguous(x) : skip();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_cpu_only("fuzz_shapes");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, data + size};
    int64_t n = 1 + (int64_t)(take(&r, 1) % 64);
    clt_tensor *base = clt_tensor_arange(0, (double)n, 1, CLT_I64, clt_device_cpu()), *x;
    if (!base)
        abort();
    x = clt_tensor_retain(base);
    for (int k = 0; k < MAX_OPS && r.p < r.end; k++) {
        clt_clear_error();
        skipped = false;
        clt_tensor *y = apply(&r, x);
        if (!y) {
            if (!skipped && (clt_last_status() == CLT_OK || strncmp(clt_last_error(), "clt_", 4) != 0))
                fail("a failure without an error naming the function", NULL);
            continue;
        }
        check(y, base);
        clt_tensor_release(x);
        x = y;
    }
    clt_tensor_release(x);
    clt_tensor_release(base);
    return 0;
}
