/* The scheduling policy of the threads a CPU device's OpenCL runtime runs its kernels on (PoCL's
 * workers, Rusticl's llvmpipe threads): SCHED_BATCH, on Linux, where the process may run on one
 * core only (CLT_BATCH_WORKERS=1: always, 0: never).
 *
 * Such a worker sleeps until a command is queued. Woken as an ordinary thread, it preempts the
 * thread that queued the command; where both share a core (an MPI rank bound to one, more
 * threads than cores), the two then swap at every command of a step instead of the host queueing
 * ahead while the worker computes. Under SCHED_BATCH, whose threads are not preempted by a waking
 * one, PoCL's step of the digits CNN on one core ran faster and steadier. Where the workers need
 * the cores the host thread runs on, the other way round, a worker that waits for the host's time
 * slice to end holds up the whole kernel, and the same CNN on PoCL's two workers over two cores
 * ran slower under SCHED_BATCH (docs/performance.md, Distributed training). So by default only
 * a process that may run on one core (clt__cpu_count) does this; CLT_BATCH_WORKERS=1 does it
 * always, 0 never.
 *
 * The runtimes start their threads from the thread that lists the platforms or creates a
 * context, and a new thread inherits its creator's policy: the calling thread runs under
 * SCHED_BATCH for that while (clt__cl_batch_begin ... clt__cl_batch_end) and goes back to
 * SCHED_OTHER. A thread that already had another policy is left alone, and so are the threads of
 * a GPU's driver: the platforms are listed before their devices' types are known, so where any
 * device is not a CPU, the threads started while listing them go back to SCHED_OTHER. */
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "core/core.h"
#include "platform/platform.h"

/* CLT_BATCH_WORKERS: 1 always, 0 never, unset only where the process may run on one core;
 * decided once, when the platforms are listed. */
static bool batch_wanted;
static pthread_once_t batch_once = PTHREAD_ONCE_INIT;

static void decide(void)
{
    const char *v = getenv("CLT_BATCH_WORKERS");
    if (v && (!strcmp(v, "0") || !strcmp(v, "1"))) {
        batch_wanted = v[0] == '1';
        return;
    }
    if (v && *v)
        clt__log(CLT_LOG_WARN, "CLT_BATCH_WORKERS=\"%s\" is neither 0 nor 1: ignored", v);
    batch_wanted = clt__cpu_count() == 1;
}

static bool wanted(void)
{
    pthread_once(&batch_once, decide);
    return batch_wanted;
}

static bool noted(const clt__cl_batch *w, int tid)
{
    for (int k = 0; k < w->count; k++)
        if (w->tids[k] == tid)
            return true;
    return false;
}

void clt__cl_batch_begin(clt__cl_batch *w, bool note)
{
    *w = (clt__cl_batch){NULL, 0, false};
    if (!wanted() || clt__sched_get(0) != CLT__SCHED_NORMAL)
        return;
    if (note)
        w->count = clt__thread_ids(&w->tids);
    w->begun = clt__sched_set(0, CLT__SCHED_BATCH);
}

void clt__cl_batch_end(clt__cl_batch *w, bool keep)
{
    if (w->begun) {
        clt__sched_set(0, CLT__SCHED_NORMAL);
        if (!keep) { /* the threads started since the beginning, inheriting SCHED_BATCH */
            int *now, count = clt__thread_ids(&now);
            for (int k = 0; k < count; k++)
                if (!noted(w, now[k]) && clt__sched_get(now[k]) == CLT__SCHED_BATCH)
                    clt__sched_set(now[k], CLT__SCHED_NORMAL);
            free(now);
        }
    }
    free(w->tids);
    *w = (clt__cl_batch){NULL, 0, false};
}
