/* The test runner: one Check runner over every suite, in fork mode. The parent never calls
 * OpenCL (a process forked after OpenCL started hangs with PoCL): it learns the device count
 * from a child process. `clt_tests SUITE` runs one suite. Rusticl's CPU device is enabled
 * unless RUSTICL_ENABLE is set. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "suites.h"

#define CLT__DECLARE_SUITE(name) Suite *suite_##name(void);
CLT_TEST_SUITES(CLT__DECLARE_SUITE)
#undef CLT__DECLARE_SUITE

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
    srunner_set_fork_status(runner, CK_FORK);
    srunner_run(runner, only, NULL, CK_NORMAL);
    failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
