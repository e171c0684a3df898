/* The test runner: one Check runner over every suite, in fork mode. The parent never calls
 * OpenCL (a process forked after OpenCL started hangs with PoCL): it learns the device count
 * from a child process. `clt_tests SUITE` runs one suite. Rusticl's CPU device is enabled
 * unless RUSTICL_ENABLE is set.
 *
 * On Windows, where there is no fork(), the runner starts a process of its own for every unit
 * (a test, or one iteration of a loop test) instead: `clt_tests SUITE --unit K --devices N` runs
 * the unit K of the suite, counting in the order the suite adds them, under Check's CK_NOFORK,
 * and says nothing unless it fails (helpers.h routes Check's _tcase_add_test to test_add_case,
 * which adds that one unit alone). The runner prints Check's summary of each suite from the
 * units' exit codes, and ends a unit that outlives its test case's timeout. */
#include <stdio.h>
#include <stdlib.h>
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "helpers.h"
#include "suites.h"

#define CLT__DECLARE_SUITE(name) Suite *suite_##name(void);
CLT_TEST_SUITES(CLT__DECLARE_SUITE)
#undef CLT__DECLARE_SUITE

#ifndef _WIN32
static int count_devices_in_child(void)
{
    int fds[2], count = -1;
    pid_t pid;
    if (pipe(fds) != 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        int n = clt_device_count();
        if (write(fds[1], &n, sizeof n) != (ssize_t)sizeof n)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    if (pid < 0 || read(fds[0], &count, sizeof count) != (ssize_t)sizeof count)
        count = -1;
    close(fds[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return count;
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    /* Mesa's Rusticl shows its CPU device (llvmpipe) only when asked: it is one more OpenCL
     * implementation for every suite to compare with the host (RUSTICL_ENABLE= hides it) */
    setenv("RUSTICL_ENABLE", "llvmpipe", 0);
    unsetenv("CLT_DEVICE"); /* the default device is part of what the tests check */
    int gpus = count_devices_in_child();
    SRunner *runner;
    int failed;

    test_device_total = 1 + (gpus > 0 ? gpus : 0);
    printf("devices under test: cpu and %d OpenCL device%s\n", gpus > 0 ? gpus : 0,
           gpus == 1 ? "" : "s");
    runner = srunner_create(NULL);
#define CLT__ADD_SUITE(name) srunner_add_suite(runner, suite_##name());
    CLT_TEST_SUITES(CLT__ADD_SUITE)
#undef CLT__ADD_SUITE
    /* CK_FORK=no in the environment runs every test in this process (Oclgrind checks only the
     * kernels its host process runs; valgrind follows one process) */
    srunner_set_fork_status(runner, getenv("CK_FORK") ? CK_FORK_GETENV : CK_FORK);
    srunner_run(runner, only, NULL, CK_NORMAL);
    failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#else /* _WIN32 */

/* A unit's exit code when Check saw it fail (it printed why); any other code but 0 is an error:
 * the test crashed, exited or ran out of time. */
enum { UNIT_FAILED = 100, UNIT_ERROR = 101 }; /* (abort() exits with 3) */

typedef struct unit {
    const char *tcase, *test;
    int iteration, timeout, allowed_exit;
} unit;

/* What test_add_case does: list every unit (listing), or add the unit `wanted` alone. */
static struct {
    bool listing;
    long wanted, next; /* the unit wanted and the number of the next unit added */
    unit *units;
    long count, cap;
    unit found; /* the unit wanted, once added */
} reg;

void test_add_case(TCase *tc, const TTest *ttest, int signal, int allowed_exit, int start, int end)
{
    unit u = {"?", ttest->name, 0, 4, allowed_exit};
    const char *env = getenv("CK_DEFAULT_TIMEOUT");
    if (env)
        u.timeout = atoi(env);
    test_case_info(tc, &u.tcase, &u.timeout);
    for (int i = start; i < end; i++, reg.next++) {
        u.iteration = i;
        if (reg.listing) {
            if (reg.count == reg.cap) {
                reg.cap = reg.cap ? 2 * reg.cap : 256;
                reg.units = realloc(reg.units, (size_t)reg.cap * sizeof *reg.units);
                if (!reg.units) {
                    fprintf(stderr, "clt_tests: out of memory listing the tests\n");
                    exit(UNIT_ERROR);
                }
            }
            reg.units[reg.count++] = u;
        } else if (reg.next == reg.wanted) {
            (_tcase_add_test)(tc, ttest, signal, allowed_exit, i, i + 1);
            reg.found = u;
        }
    }
}

typedef struct suite_entry {
    const char *name;
    Suite *(*make)(void);
} suite_entry;

static const suite_entry suites[] = {
#define CLT__SUITE_ENTRY(name) {#name, suite_##name},
    CLT_TEST_SUITES(CLT__SUITE_ENTRY)
#undef CLT__SUITE_ENTRY
};
#define SUITE_COUNT ((int)(sizeof suites / sizeof *suites))

/* Runs unit k of suite s in this process: 0, UNIT_FAILED or UNIT_ERROR. */
static int run_unit(const suite_entry *s, long k)
{
    reg.wanted = k;
    Suite *suite = s->make();
    if (!reg.found.test) {
        printf("%s: no unit %ld\n", s->name, k);
        return UNIT_ERROR;
    }
    SRunner *runner = srunner_create(suite);
    srunner_set_fork_status(runner, CK_NOFORK);
    srunner_run(runner, s->name, reg.found.tcase, CK_SILENT);
    int run = srunner_ntests_run(runner), failed = srunner_ntests_failed(runner), rc = 0;
    if (run != 1) {
        printf("%s: unit %ld (%s:%s:%d) ran %d tests\n", s->name, k, reg.found.tcase,
               reg.found.test, reg.found.iteration, run);
        rc = UNIT_ERROR;
    } else if (failed) {
        TestResult **results = srunner_failures(runner);
        TestResult *r = results[0];
        /* as Check's CK_NORMAL prints a failure */
        printf("%s:%d:%c:%s:%s:%d: %s\n", tr_lfile(r), tr_lno(r),
               tr_rtype(r) == CK_ERROR ? 'E' : 'F', tr_tcname(r), reg.found.test,
               reg.found.iteration, tr_msg(r));
        rc = tr_rtype(r) == CK_ERROR ? UNIT_ERROR : UNIT_FAILED;
        free(results);
    }
    fflush(stdout);
    srunner_free(runner);
    return rc;
}

/* The work of `clt_tests --child NAME ARG` (test_run_children), run as a test of its own: its
 * assertions need a running test to report to (a forked child has its parent's). */
static struct {
    test_child_fn fn;
    const char *arg;
    bool ok;
} child;

START_TEST(child_work)
{
    child.ok = child.fn(child.arg);
}
END_TEST

static int run_child(const char *name, const char *arg)
{
    Suite *suite = suite_create("child");
    TCase *tc = tcase_create("child");
    child.fn = test_child_find(name), child.arg = arg;
    if (!child.fn) {
        printf("clt_tests: no child function %s\n", name);
        return EXIT_FAILURE;
    }
    tcase_set_timeout(tc, 0);
    (_tcase_add_test)(tc, child_work, 0, 0, 0, 1);
    suite_add_tcase(suite, tc);
    SRunner *runner = srunner_create(suite);
    srunner_set_fork_status(runner, CK_NOFORK);
    srunner_run(runner, NULL, NULL, CK_SILENT);
    bool ok = child.ok && srunner_ntests_failed(runner) == 0;
    srunner_free(runner);
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Runs unit k of suite s in a process of its own: its exit code, or -1 with *why set when it
 * could not start or ran past its timeout (it is ended then). */
static long long run_unit_process(const suite_entry *s, long k, const unit *u, int devices,
                                  const char **why)
{
    char unit_arg[24], devices_arg[24];
    const char *args[] = {s->name, "--unit", unit_arg, "--devices", devices_arg, NULL};
    const char *multiplier = getenv("CK_TIMEOUT_MULTIPLIER");
    double limit = u->timeout * (multiplier && atof(multiplier) > 0 ? atof(multiplier) : 1);
    bool timed_out = false;
    snprintf(unit_arg, sizeof unit_arg, "%ld", k);
    snprintf(devices_arg, sizeof devices_arg, "%d", devices);
    void *process = test_start_self(args);
    if (!process) {
        *why = "the test's process did not start";
        return -1;
    }
    long long code = test_wait_self(process, limit > 0 ? (long)(limit * 1000) : -1, &timed_out);
    if (code < 0)
        *why = timed_out ? "Test timeout expired" : "its exit code is unknown";
    return code;
}

/* Runs every unit of suite s (those of test case `tcase` alone when it is not NULL), one
 * process each, and prints Check's summary: true when every unit passed. */
static bool run_suite(const suite_entry *s, const char *tcase, int devices)
{
    long checks = 0, failures = 0, errors = 0;
    char (*failed)[160] = NULL;

    reg.listing = true;
    reg.count = reg.next = 0;
    srunner_free(srunner_create(s->make())); /* lists the units */
    reg.listing = false;
    failed = calloc((size_t)reg.count + 1, sizeof *failed);
    printf("Running suite(s): %s\n", s->name);
    for (long k = 0; k < reg.count; k++) {
        const unit *u = &reg.units[k];
        const char *why = NULL;
        if (tcase && strcmp(tcase, u->tcase) != 0)
            continue;
        checks++;
        long long code = run_unit_process(s, k, u, devices, &why);
        if (code == u->allowed_exit)
            continue;
        if (code == UNIT_FAILED) {
            failures++;
        } else {
            errors++;
            if (why)
                printf("%s:%s:%d: %s\n", u->tcase, u->test, u->iteration, why);
            else if (code >= 0xC0000000LL) /* an exception's code: end_on_crash */
                printf("%s:%s:%d: crashed with exception 0x%08llx\n", u->tcase, u->test,
                       u->iteration, code);
            else if (code != UNIT_ERROR)
                printf("%s:%s:%d: Early exit with return value %lld\n", u->tcase, u->test,
                       u->iteration, code);
        }
        if (failed)
            snprintf(failed[failures + errors - 1], sizeof *failed, "%s:%s:%d", u->tcase, u->test,
                     u->iteration);
    }
    printf("%d%%: Checks: %ld, Failures: %ld, Errors: %ld\n",
           checks ? (int)(100 * (checks - failures - errors) / checks) : 100, checks, failures,
           errors);
    for (long i = 0; failed && i < failures + errors; i++)
        printf("  failed: %s\n", failed[i]);
    fflush(stdout);
    free(failed);
    free(reg.units);
    reg.units = NULL;
    reg.cap = 0;
    return failures + errors == 0;
}

/* A test that crashes ends its process at once, the exception's code its exit code (which the
 * runner reports): no dialog, no debugger (Wine starts winedbg whatever the error mode). */
static LONG WINAPI end_on_crash(EXCEPTION_POINTERS *e)
{
    (void)e;
    return EXCEPTION_EXECUTE_HANDLER;
}

int main(int argc, char **argv)
{
    const char *only = NULL, *tcase = getenv("CK_RUN_CASE");
    long unit_wanted = -1;
    int devices = -1;
    SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX); /* (inherited) */
    SetUnhandledExceptionFilter(end_on_crash);
    if (argc == 4 && strcmp(argv[1], "--child") == 0)
        return run_child(argv[2], argv[3]);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--unit") == 0 && i + 1 < argc)
            unit_wanted = atol(argv[++i]);
        else if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc)
            devices = atoi(argv[++i]);
        else
            only = argv[i];
    }
    if (!only)
        only = getenv("CK_RUN_SUITE");
    setenv("RUSTICL_ENABLE", "llvmpipe", 0); /* (under Wine the host's Rusticl never sees it) */
    unsetenv("CLT_DEVICE");
    if (devices < 0) {
        /* In the runner's own process: the reason on Linux to count in a child, PoCL hanging in
         * a process forked after OpenCL started, does not apply without fork(), and the units
         * are told the count (--devices), so that they number the units as the runner did. */
        int gpus = clt_device_count();
        devices = 1 + (gpus > 0 ? gpus : 0);
        if (unit_wanted < 0)
            printf("devices under test: cpu and %d OpenCL device%s\n", devices - 1,
                   devices == 2 ? "" : "s");
    }
    test_device_total = devices;

    if (unit_wanted >= 0) {
        for (int i = 0; i < SUITE_COUNT; i++)
            if (only && strcmp(only, suites[i].name) == 0)
                return run_unit(&suites[i], unit_wanted);
        printf("clt_tests: --unit needs the name of a suite\n");
        return UNIT_ERROR;
    }
    bool ok = true, any = false;
    for (int i = 0; i < SUITE_COUNT; i++)
        if (!only || strcmp(only, suites[i].name) == 0) {
            any = true;
            ok = run_suite(&suites[i], tcase, devices) && ok;
        }
    if (!any)
        printf("clt_tests: no suite named %s\n", only);
    return ok && any ? EXIT_SUCCESS : EXIT_FAILURE;
}
#endif
