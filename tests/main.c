/* The test runner: one Check runner over every suite, in fork mode. The parent never calls
 * OpenCL (a process forked after OpenCL started hangs with PoCL): it learns the device count
 * from a child process. `clt_tests SUITE` runs one suite. Rusticl's CPU device is enabled
 * unless RUSTICL_ENABLE is set. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

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
    int gpus = count_devices_in_child();
    SRunner *runner;
    int failed;

    test_device_total = 1 + (gpus > 0 ? gpus : 0);
    printf("devices under test: cpu and %d OpenCL device%s\n", gpus > 0 ? gpus : 0,
           gpus == 1 ? "" : "s");
    runner = srunner_create(suite_core());
    srunner_add_suite(runner, suite_device());
    srunner_add_suite(runner, suite_tensor());
    srunner_add_suite(runner, suite_cast());
    srunner_add_suite(runner, suite_ops());
    srunner_add_suite(runner, suite_reduce());
    srunner_add_suite(runner, suite_linalg());
    srunner_add_suite(runner, suite_nn());
    srunner_add_suite(runner, suite_module());
    srunner_add_suite(runner, suite_autograd());
    srunner_add_suite(runner, suite_optim());
    srunner_add_suite(runner, suite_loader());
    srunner_add_suite(runner, suite_parallel());
    srunner_add_suite(runner, suite_memory());
    srunner_add_suite(runner, suite_kernels());
    srunner_add_suite(runner, suite_data());
    srunner_add_suite(runner, suite_cache());
    srunner_add_suite(runner, suite_io());
    srunner_add_suite(runner, suite_fault());
    srunner_add_suite(runner, suite_threads());
    srunner_set_fork_status(runner, CK_FORK);
    srunner_run(runner, only, NULL, CK_NORMAL);
    failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
