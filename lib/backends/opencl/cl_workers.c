/* The scheduling policy of the threads a CPU device's OpenCL runtime runs its kernels on (PoCL's
 * workers, Rusticl's llvmpipe threads): SCHED_BATCH, on Linux, where the process may run on one
 * core only (CLT_BATCH_WORKERS=1: always, 0: never).
 *
 * Such a worker sleeps until a command is queued. Woken as an ordinary thread, it preempts the
 * thread that queued the command; where both share a core (an MPI rank bound to one, more
 * threads than cores), the two then swap at every command of a step instead of the host queueing
 * ahead while the worker computes. PoCL's step of the digits CNN at batch 32 on one core took
 * 1.33-1.35 ms, its steps varying by 0.2 ms, against 0.86 ms, varying by 0.03 ms, with its
 * workers under SCHED_BATCH, whose threads are not preempted by a waking one (2-core Zen 4 EPYC).
 * Where the workers need the cores the host thread runs on, the other way round, a worker that
 * waits for the host's time slice to end holds up the whole kernel: the same CNN at batch 128 on
 * PoCL's two workers over two cores took 2.2-2.4 ms, and 2.8-3.8 ms with them under SCHED_BATCH.
 * So by default only a process that may run on one core (sched_getaffinity) does this;
 * CLT_BATCH_WORKERS=1 does it always, 0 never.
 *
 * The runtimes start their threads from the thread that lists the platforms or creates a
 * context, and a new thread inherits its creator's policy: the calling thread runs under
 * SCHED_BATCH for that while (clt__cl_batch_begin ... clt__cl_batch_end) and goes back to
 * SCHED_OTHER. A thread that already had another policy is left alone, and so are the threads of
 * a GPU's driver: the platforms are listed before their devices' types are known, so where any
 * device is not a CPU, the threads started while listing them go back to SCHED_OTHER. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "core/core.h"

#ifdef __linux__
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <sys/types.h>

/* CLT_BATCH_WORKERS: 1 always, 0 never, unset only where the process may run on one core;
 * decided once, when the platforms are listed. */
static bool batch_wanted;
static pthread_once_t batch_once = PTHREAD_ONCE_INIT;

static void decide(void)
{
    const char *v = getenv("CLT_BATCH_WORKERS");
    cpu_set_t allowed;
    if (v && (!strcmp(v, "0") || !strcmp(v, "1"))) {
        batch_wanted = v[0] == '1';
        return;
    }
    if (v && *v)
        clt__log(CLT_LOG_WARN, "CLT_BATCH_WORKERS=\"%s\" is neither 0 nor 1: ignored", v);
    batch_wanted = sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) == 1;
}

static bool wanted(void)
{
    pthread_once(&batch_once, decide);
    return batch_wanted;
}

/* The ids of the process's threads into w (none where /proc cannot be read). */
static void note_threads(clt__cl_batch *w)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;
    int room = 0;
    w->tids = NULL, w->count = 0;
    while (dir && (e = readdir(dir))) {
        if (e->d_name[0] == '.')
            continue;
        if (w->count == room) {
            int *more = realloc(w->tids, (size_t)(room = room ? 2 * room : 64) * sizeof *more);
            if (!more)
                break;
            w->tids = more;
        }
        w->tids[w->count++] = atoi(e->d_name);
    }
    if (dir)
        closedir(dir);
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
    struct sched_param none = {0};
    *w = (clt__cl_batch){NULL, 0, false};
    if (!wanted() || sched_getscheduler(0) != SCHED_OTHER)
        return;
    if (note)
        note_threads(w);
    w->begun = sched_setscheduler(0, SCHED_BATCH, &none) == 0;
}

void clt__cl_batch_end(clt__cl_batch *w, bool keep)
{
    struct sched_param none = {0};
    if (w->begun) {
        sched_setscheduler(0, SCHED_OTHER, &none);
        if (!keep) { /* the threads started since the beginning, inheriting SCHED_BATCH */
            clt__cl_batch now;
            note_threads(&now);
            for (int k = 0; k < now.count; k++)
                if (!noted(w, now.tids[k]) && sched_getscheduler(now.tids[k]) == SCHED_BATCH)
                    sched_setscheduler(now.tids[k], SCHED_OTHER, &none);
            free(now.tids);
        }
    }
    free(w->tids);
    *w = (clt__cl_batch){NULL, 0, false};
}

#else /* elsewhere the policy stays as it is */

void clt__cl_batch_begin(clt__cl_batch *w, bool note)
{
    (void)note;
    *w = (clt__cl_batch){NULL, 0, false};
}

void clt__cl_batch_end(clt__cl_batch *w, bool keep)
{
    (void)keep;
    *w = (clt__cl_batch){NULL, 0, false};
}

#endif
