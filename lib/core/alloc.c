/* Host allocation through one hook, live-allocation counters and fault injection: the Nth
 * host or device allocation can be made to fail so that tests walk every failure path. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "platform/platform.h"

static atomic_long fault_countdown[2];
static atomic_long live[2];
static atomic_long attempts[2];

void clt__fault_inject(clt__alloc_kind kind, long n)
{
    atomic_store(&fault_countdown[kind], n);
}

static _Thread_local int suspended;

void clt__fault_suspend(bool suspend)
{
    suspended += suspend ? 1 : -1;
}

bool clt__fault_check(clt__alloc_kind kind)
{
    long n;
    if (suspended)
        return false;
    atomic_fetch_add(&attempts[kind], 1);
    n = atomic_load(&fault_countdown[kind]);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&fault_countdown[kind], &n, n - 1))
            return n == 1;
    }
    return false;
}

long clt__allocation_attempts(clt__alloc_kind kind)
{
    return atomic_load(&attempts[kind]);
}

long clt__live_allocations(clt__alloc_kind kind)
{
    return atomic_load(&live[kind]);
}

void clt__live_add(clt__alloc_kind kind, long delta)
{
    atomic_fetch_add(&live[kind], delta);
}

void *clt__alloc_aligned(const char *fn, size_t nbytes, size_t alignment)
{
    void *p = NULL;
    if (clt__fault_check(CLT__HOST) || !(p = clt__aligned_alloc(nbytes, alignment))) {
        clt__error(CLT_ERR_OUT_OF_MEMORY, fn, "out of host memory allocating %zu bytes", nbytes);
        return NULL;
    }
    clt__live_add(CLT__HOST, 1);
    return p;
}

void *clt__alloc(const char *fn, size_t nbytes)
{
    return clt__alloc_aligned(fn, nbytes, sizeof(void *) * 2);
}

void *clt__alloc_zeroed(const char *fn, size_t nbytes)
{
    void *p = clt__alloc(fn, nbytes);
    if (p)
        memset(p, 0, nbytes);
    return p;
}

void clt__free(void *ptr)
{
    if (!ptr)
        return;
    clt__live_add(CLT__HOST, -1);
    clt__aligned_free(ptr);
}

char *clt__strdup(const char *fn, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = clt__alloc(fn, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void clt_free(void *ptr)
{
    clt__free(ptr);
}
