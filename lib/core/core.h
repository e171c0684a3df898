/* Private services every part of the library uses: setting the last error, logging, host
 * allocation through one hook, and the allocation counters and fault injection tests use. */
#ifndef CLT_CORE_H
#define CLT_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cltensor/status.h"

#if defined(__MINGW32__) /* the library formats as C99 does there too (__USE_MINGW_ANSI_STDIO) */
#define CLT__PRINTF(a, b) __attribute__((format(gnu_printf, a, b)))
#elif defined(__GNUC__)
#define CLT__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLT__PRINTF(a, b)
#endif

/* Records "fn: message" as this thread's last error and returns `status`. */
/* The mark an options struct's _default() function leaves in its init field, so that a struct
 * that did not start from the defaults (a zeroed one) is refused instead of being read. */
#define CLT__OPTIONS_INIT 0x636c7431u

clt_status clt__error(clt_status status, const char *fn, const char *fmt, ...) CLT__PRINTF(3, 4);
/* Re-raises the last error under fn, keeping its cause: a step of fn failed. Returns the
 * status. */
clt_status clt__rename_error(const char *fn);
/* The same with a context before the cause: "fn: context: cause". */
clt_status clt__rename_error_in(const char *fn, const char *context);
/* CLT_ERR_INVALID_ARGUMENT for an object handed to a _take function as NULL (its creation
 * failed): "fn: what is NULL (the last error: ...)", naming the error the creation left. */
clt_status clt__error_null_taken(const char *fn, const char *what);
/* Appends text to this thread's last error message (for build logs). */
void clt__error_append(const char *text);

/* This thread's last error, kept aside around work whose own failures are handled, so that they
 * do not replace what the caller's last failed call left. */
#define CLT__ERROR_CAPACITY 8192
typedef struct clt__error_state {
    clt_status status;
    char message[CLT__ERROR_CAPACITY];
} clt__error_state;
void clt__error_save(clt__error_state *saved);
void clt__error_restore(const clt__error_state *saved);

/* A growing string: start from {.fn = fn}, add to it, then finish it. clt__sb_add appends a
 * formatted piece; once an allocation has failed (the last error set under fn) it adds nothing
 * more. clt__sb_finish gives the string, for clt__free (an empty one if nothing was added), or
 * NULL, with what it held freed, if any addition failed. */
typedef struct clt__strbuf {
    const char *fn;
    char *data;
    size_t len, cap;
    bool failed;
} clt__strbuf;
void clt__sb_add(clt__strbuf *b, const char *fmt, ...) CLT__PRINTF(2, 3);
char *clt__sb_finish(clt__strbuf *b);
/* v as Python's repr() writes a float (the shortest text that reads back as v: "0.1",
 * "1e-05", "1.0", "inf", "nan"), for renderings that are to match PyTorch's. */
void clt__format_py_float(char *buf, size_t size, double v);

void clt__log(clt_log_level level, const char *fmt, ...) CLT__PRINTF(2, 3);
/* Whether a message of this level would reach a log callback (to skip preparing it). */
bool clt__log_wants(clt_log_level level);

/* Host memory. Every allocation of the library goes through these, so that tests can count
 * live allocations and make the Nth one fail. clt__alloc sets the last error on failure. */
void *clt__alloc(const char *fn, size_t nbytes);
void *clt__alloc_zeroed(const char *fn, size_t nbytes);
void *clt__alloc_aligned(const char *fn, size_t nbytes, size_t alignment);
void clt__free(void *ptr); /* for all three; accepts NULL */
char *clt__strdup(const char *fn, const char *s);

/* Fault injection and accounting, for tests. Kinds of allocation: */
typedef enum clt__alloc_kind { CLT__HOST = 0, CLT__DEVICE = 1 } clt__alloc_kind;
/* The `n`th allocation of `kind` from now fails (1 = the next); 0 disables. */
void clt__fault_inject(clt__alloc_kind kind, long n);
/* Counts an allocation attempt of `kind`; true when it must fail. */
bool clt__fault_check(clt__alloc_kind kind);
/* Nested on this thread: while suspended, allocations are neither counted nor made to fail
 * (the caching allocator counts one attempt per request itself, hit or miss). */
void clt__fault_suspend(bool suspend);
/* Allocations of `kind` tried so far, failed ones included. */
long clt__allocation_attempts(clt__alloc_kind kind);
/* Allocations of `kind` made and not yet freed, less those kept in caches for the life of the
 * process (their owners subtract them with clt__live_add once they are cached). */
long clt__live_allocations(clt__alloc_kind kind);
void clt__live_add(clt__alloc_kind kind, long delta);

/* Overflow-checked size arithmetic, which every computation of a size, count, extent or byte
 * length from caller-supplied numbers goes through: each stores the exact result in *out and
 * returns true, or returns false (leaving *out alone) when it does not fit the type. */
static inline bool clt__mul_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? false : (*out = r, true);
}
static inline bool clt__mul_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? false : (*out = r, true);
}
static inline bool clt__add_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? false : (*out = r, true);
}
/* The element count of a shape of sizes >= 0 (1 for ndim 0). False when a size is negative,
 * or when the product, or the product with each 0 taken as 1 (what strides multiply), exceeds
 * INT64_MAX: no tensor of that shape can exist. */
bool clt__shape_numel(int ndim, const int64_t *shape, int64_t *numel);

#endif
