/* libFuzzer target for shape arithmetic: each input is a program of up to 12 operations on a
 * small i64 tensor of 0, 1, 2, ... on the cpu device: views and joins (view, reshape, slice,
 * narrow, expand, cat, unsqueeze, squeeze, transpose, permute, contiguous) and the ops whose
 * output's size comes from the caller's numbers (pad in every mode, interpolate2d, adaptive
 * average pooling, conv2d, conv_transpose2d, max and average pooling, on an f64 copy), with
 * sizes, pads, starts, ends, steps, strides and output sizes drawn near the limits of int and
 * int64 as often as small. Tensors may hold 16 MiB (CLT_DEVICE_MEMORY_LIMIT), so that an output
 * that fits is computed and one that does not is refused. Aborts when a call breaks the
 * library's promises: a failure without an error naming a clt_ function; a tensor whose element
 * count is not the product of its sizes, with a negative size or stride, or whose elements
 * reach outside its storage; or a view of the base whose elements are not where its strides
 * say. Results small enough are read back in full (AddressSanitizer checks every access). */
#include <limits.h>
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

/* An int option (stride, padding, dilation, kernel, output size): small, near INT_MAX, or
 * negative. */
static int int_number(reader *r)
{
    uint8_t kind = (uint8_t)take(r, 1), b = (uint8_t)take(r, 1);
    switch (kind % 4) {
    case 0:
    case 1: return b % 8;
    case 2: return INT_MAX - b % 3;
    default: return -(b % 3) - (kind & 4 ? INT_MAX / 2 : 0);
    }
}

static void int_pair(reader *r, int *v)
{
    v[0] = int_number(r), v[1] = int_number(r);
}

/* The op on an f64 copy of x (small x only) seen as (N, C, H, W): a 4-D x as it is, any other
 * as one row (1, 1, 1, n). The result comes back as i64 (refused calls: NULL). */
static clt_tensor *sized_op(reader *r, int op, clt_tensor *x)
{
    if (x->numel > SMALL)
        return skip();
    clt_tensor *f = clt_tensor_to_dtype(x, CLT_F64), *in = NULL, *w = NULL, *y = NULL, *out;
    in = !f || x->ndim == 4 ? clt_tensor_retain(f)
                            : clt_reshape(f, CLT_SHAPE(1, 1, 1, (int64_t)x->numel));
    if (!in)
        fail("a small copy or its view failed", x);
    switch (op) {
    case 0: {
        int64_t pad[8];
        int npad = (int)take(r, 1) % 9;
        for (int k = 0; k < npad; k++)
            pad[k] = number(r);
        y = clt_pad(f, npad, pad, (clt_pad_mode)(take(r, 1) % 5), 1.5);
        break;
    }
    case 1: {
        int64_t h = number(r), wd = number(r);
        uint8_t m = (uint8_t)take(r, 1);
        y = clt_interpolate2d(in, h, wd, (clt_interpolate_mode)(m % 3), m & 4);
        break;
    }
    case 2: {
        int h = int_number(r), wd = int_number(r);
        y = clt_adaptive_avg_pool2d(in, h, wd);
        break;
    }
    case 3:
    case 4: { /* a weight of (1, C, kh, kw) or (C, 1, kh, kw) ones */
        int64_t c = in->shape[1], kh = 1 + take(r, 1) % 4, kw = 1 + take(r, 1) % 4;
        if (c > SMALL) { /* channels of an empty input: no weight that small */
            clt_tensor_release(in), clt_tensor_release(f);
            return skip();
        }
        w = clt_tensor_ones(CLT_SHAPE(op == 3 ? 1 : c, op == 3 ? c : 1, kh, kw), CLT_F64,
                            clt_device_cpu());
        if (!w)
            fail("a small weight could not be made", in);
        if (op == 3) {
            clt_conv2d_options o = clt_conv2d_options_default();
            int_pair(r, o.stride), int_pair(r, o.padding), int_pair(r, o.dilation);
            y = clt_conv2d(in, w, NULL, &o);
        } else {
            clt_conv_transpose2d_options o = clt_conv_transpose2d_options_default();
            int_pair(r, o.stride), int_pair(r, o.padding), int_pair(r, o.dilation);
            int_pair(r, o.output_padding);
            y = clt_conv_transpose2d(in, w, NULL, &o);
        }
        break;
    }
    default: {
        clt_pool2d_options o = clt_pool2d_options_default(int_number(r), int_number(r));
        int_pair(r, o.stride), int_pair(r, o.padding), int_pair(r, o.dilation);
        o.ceil_mode = take(r, 1) & 1;
        y = op == 5 ? clt_max_pool2d(in, &o, NULL) : clt_avg_pool2d(in, &o);
        break;
    }
    }
    /* (the cast may find no room for its copy beside y: an error that names it) */
    out = y ? clt_tensor_to_dtype(y, CLT_I64) : NULL;
    if (y && !out && clt_last_status() != CLT_ERR_OUT_OF_MEMORY)
        fail("a result could not be cast", y);
    clt_tensor_release(y), clt_tensor_release(w), clt_tensor_release(in), clt_tensor_release(f);
    return out;
}

/* One operation on x drawn from the input: a new tensor, or NULL (a refused call). */
static clt_tensor *apply(reader *r, clt_tensor *x)
{
    int64_t shape[CLT_MAX_DIMS + 1];
    uint8_t op = (uint8_t)take(r, 1), arg = (uint8_t)take(r, 1);
    int ndim = arg % (CLT_MAX_DIMS + 2) - (arg % 17 == 0); /* -1 .. 9 at times */
    int dim = (int)(int8_t)take(r, 1) % (x->ndim + 2);
    int nd = ndim < 0 ? 0 : ndim > CLT_MAX_DIMS ? CLT_MAX_DIMS : ndim;
    switch (op % 18) {
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
    case 10: return x->numel <= SMALL ? clt_contiguous(x) : skip();
    default: return sized_op(r, op % 18 - 11, x);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_cpu_only("fuzz_shapes");
    setenv("CLT_DEVICE_MEMORY_LIMIT", "16M", 1);
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
