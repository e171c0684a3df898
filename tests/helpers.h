/* Shared by the test suites: the device loop, leak accounting, environment set-up for
 * multi-platform tests and small assertions. Every test runs in a process of its own (Check's
 * fork mode; on Windows one process per test that main.c starts), so a test may set environment
 * variables before its first library call. */
#ifndef CLT_TEST_HELPERS_H
#define CLT_TEST_HELPERS_H

#ifdef _WIN32
/* Check declares its assertions' formatting with format(printf), which GCC for MinGW takes for
 * the Microsoft runtime's printf (no %zu, no %lld), yet Check formats with MinGW's C99
 * __mingw_vsnprintf: so its declarations are read as gnu_printf. */
#include <stdio.h>
#define printf gnu_printf
#include <check.h>
#undef printf
#else
#include <check.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor.h>

#include "core/core.h"
#include "backends/backend.h"

#ifdef _WIN32
/* Windows has no fork(), so Check runs there in CK_NOFORK mode and main.c starts a process of
 * its own for every test and every iteration of a loop test (a "unit"). Every Check macro that
 * adds a test ends in _tcase_add_test, which comes here instead: in the runner's process it only
 * lists the units, in a unit's process it adds to Check that one unit and nothing else (main.c).
 * `(_tcase_add_test)(...)` still calls Check's own. */
void test_add_case(TCase *tc, const TTest *ttest, int signal, int allowed_exit, int start,
                   int end);
#define _tcase_add_test(tc, ttest, signal, allowed_exit, start, end)                           \
    test_add_case(tc, ttest, signal, allowed_exit, start, end)
/* The name and timeout (seconds) test_case gave tc: false for a TCase it did not make. */
bool test_case_info(const TCase *tc, const char **name, int *timeout);
/* Starts this program again with the arguments args (NULL-terminated; the program's name is
 * added) and the environment as it is now: the process, or NULL. */
void *test_start_self(const char *const *args);
/* Waits for a process test_start_self started, at most timeout_ms (negative: no limit), and
 * ends it past that: its exit code (a DWORD), or -1 (*timed_out tells why, when not NULL). */
long long test_wait_self(void *process, long timeout_ms, bool *timed_out);

/* The POSIX calls MinGW-w64 lacks. The C runtime keeps no empty variable: setting one to ""
 * removes it (unsetenv does just that). The OpenCL drivers under Wine read the Unix environment
 * the process started with, which neither changes. */
int test_setenv(const char *name, const char *value, int overwrite);
int test_unsetenv(const char *name);
#define setenv test_setenv
#define unsetenv test_unsetenv
#endif

/* Devices a loop test runs on: index 0 is cpu, index i is gpu:(i-1). */
extern int test_device_total;
clt_device *test_device(int i);

/* Adds fn as a loop test over every device. */
#define ADD_DEVICE_TEST(tc, fn) tcase_add_loop_test(tc, fn, 0, test_device_total)

/* Live host and device allocations, to prove a scenario leaked nothing. */
typedef struct test_live {
    long host, device;
} test_live;
test_live test_live_now(void);
#define ck_assert_live_eq(a, b)                                                                \
    do {                                                                                       \
        test_live a_ = (a), b_ = (b);                                                          \
        ck_assert_int_eq(a_.host, b_.host);                                                    \
        ck_assert_int_eq(a_.device, b_.device);                                                \
    } while (0)

/* Run after every test (a checked fixture): waits for the work the test queued, so that the
 * test's process never exits while a driver still compiles or runs it (PoCL crashes when its
 * background kernel compilation meets the process's teardown). */
void test_teardown(void);
/* Whether dev holds tensors of dtype dt: f64 only where it has fp64 (Rusticl has none). */
bool test_has_dtype(clt_device *dev, clt_dtype dt);

/* Sends the test's stderr to a file that test_teardown checks is empty. */
void test_setup(void);
/* For a test whose driver may print by design (PoCL prints the error count of a kernel source
 * that does not build): its stderr is not checked. */
void test_allow_stderr(void);

/* A test case with a timeout in seconds, test_setup before and test_teardown after every test. */
TCase *test_case(const char *name, int timeout);

/* Synchronises cpu and every gpu:N: finished asynchronous copies then release what they held. */
void test_sync_all(void);

/* One run of an operation under test: true when it succeeded (it releases what it made). */
typedef bool (*test_op)(void *ctx);

/* Fault-injection sweep: runs op once to warm up (kernels build, caches fill), counts the
 * allocations of `kind` a run makes, then makes each of them fail in turn. Every such run must
 * fail with the out-of-memory status of `kind` and an error starting with "fn: ", and leave
 * the live allocations as they were; the run after the last must succeed. Returns the number
 * of allocations swept. */
long test_fault_sweep(test_op op, void *ctx, const char *fn, clt__alloc_kind kind);

/* Asserts something of a scenario's objects (a test_fault_sweep_checked callback). */
typedef void (*test_check)(void *ctx);
/* test_fault_sweep for a scenario of several calls on objects that outlive it: snapshot(ctx)
 * runs before every run (outside the injected failures) to record what the objects hold, and
 * check(ctx) after every failed run asserts that they hold it still (values, devices, handles)
 * or what the calls that succeeded before the failing one made of them. fn NULL accepts an
 * error from any of the library's functions ("clt_..."). Returns the allocations swept. */
long test_fault_sweep_checked(test_op op, test_check snapshot, test_check check, void *ctx,
                              const char *fn, clt__alloc_kind kind);

/* Makes OCL_ICD_VENDORS a fresh folder registering PoCL and, with oclgrind, the Oclgrind
 * simulator (a second platform, listed first because it reports itself as a GPU). Returns
 * false, and the test returns at once, when CLT_TEST_HOST_ONLY=1 asks for a run that loads no
 * OpenCL platform (for valgrind) or the library has no OpenCL backend (test_host_only).
 * On Windows no process can choose its platforms (helpers.c): neither asked for gives
 * CLT_OPENCL_LIBRARY=off, PoCL alone is true only where CLT_TEST_PLATFORMS=pocl says the process
 * sees PoCL's platform alone, Oclgrind never. */
bool test_use_vendors(bool pocl, bool oclgrind);
bool test_host_only(void);

/* Work that a test runs in fresh processes (test_run_children): true when it succeeded. Its
 * ck_assert calls do not reach the test; it says what went wrong in its result alone. */
typedef bool (*test_child_fn)(const char *arg);
/* Runs fn(arg) in `count` (at most 8) processes of their own at once, that start before this
 * one calls OpenCL where that matters (PoCL hangs in a process forked after): true when every
 * one returned true. POSIX: forked children. Windows: this program started again as
 * `clt_tests --child NAME ARG`, in the environment as it is now, where main.c runs the function
 * that TEST_CHILD_FN listed under that name. */
bool test_run_children(int count, const char *name, test_child_fn fn, const char *arg);
#ifdef _WIN32
void test_child_register(const char *name, test_child_fn fn);
test_child_fn test_child_find(const char *name);
/* Defines a test_child_fn `fn` (file scope), listed under its name for test_run_children. */
#define TEST_CHILD_FN(fn)                                                                      \
    static bool fn(const char *arg);                                                           \
    __attribute__((constructor)) static void fn##_register(void)                               \
    {                                                                                          \
        test_child_register(#fn, fn);                                                          \
    }                                                                                          \
    static bool fn(const char *arg)
#else
#define TEST_CHILD_FN(fn) static bool fn(const char *arg)
#endif

/* A fresh temporary folder (created; under /tmp, on Windows under GetTempPath's folder with '/'
 * between folders), removed with what it holds when the process that made it exits; the string
 * lives until the next call. */
const char *test_temp_dir(void);

/* Copies cl/<name> of the source tree into dir; test_copy_kernels copies every .cl file. */
void test_copy_kernel(const char *dir, const char *name);
void test_copy_kernels(const char *dir);
/* Writes `text` into the file dir/name, byte for byte (asserts success). */
void test_write_file(const char *dir, const char *name, const char *text);

/* Asserts that the last error's message contains `text`. */
#define ck_assert_error_has(text) ck_assert_msg(strstr(clt_last_error(), text) != NULL,          \
                                                "last error \"%s\" lacks \"%s\"",             \
                                                clt_last_error(), text)

/* The tensor's bytes, copied to a buffer the test frees with free(). */
void *test_bytes(const clt_tensor *t);
/* Asserts that a and b (any devices) hold the same dtype, element count and bytes. */
void test_assert_same_bytes(const clt_tensor *a, const clt_tensor *b);
/* Releases the n tensors at ts (NULL among them too); TEST_RELEASE_ALL(array) a whole array. */
void test_release_all(clt_tensor *const *ts, size_t n);
#define TEST_RELEASE_ALL(array) test_release_all(array, sizeof(array) / sizeof *(array))
/* The tensor's values as doubles (any dtype, any device), a buffer the test frees. */
double *test_values(clt_tensor *t);
/* Asserts that got and want (any devices and dtypes; neither NULL, else the last error) have the
 * same shape and values within rel * max(1, |want|), naming `what` and the element. */
void test_assert_close(clt_tensor *got, clt_tensor *want, double rel, const char *what);
/* Asserts that t (any device, any floating dtype; not NULL, else the last error) holds the n
 * values want within tol relative to max(1, |want|), NaN matching NaN, naming `what` and the
 * element; releases t. */
void test_assert_values(clt_tensor *t, const double *want, int64_t n, double tol,
                        const char *what);
/* n pseudo-random values in [lo, hi) from seed. */
void test_noise(double *v, int64_t n, unsigned seed, double lo, double hi);
/* n pseudo-random values in [-2, 2) from seed (another sequence than test_noise's), a buffer the
 * test frees. */
double *test_noise_new(int64_t n, unsigned seed);
/* Sequential(Linear(in, hidden), activation, Linear(hidden, out)) on cpu, initialised after
 * clt_manual_seed(seed); takes over the activation's reference. */
clt_module *test_mlp(int64_t in, int64_t hidden, int64_t out, clt_module *activation,
                     uint64_t seed);
/* A device of a made-up backend, for the seam's tests: *table becomes the host's table under
 * the name `backend` (clear entries to take them away), *dev a device `name` of `type` over it
 * whose memory is host memory from cpu's caching allocator. Nothing to free. */
void test_fake_device(clt_device *dev, clt__backend *table, const char *backend, const char *name,
                      clt_device_type type);
/* PyTorch's Adam / SGD defaults with the learning rate (and SGD's momentum) changed;
 * TEST_ADAM and TEST_SGD give a pointer to such options in a compound literal. */
clt_adam_options test_adam_lr(double lr);
clt_sgd_options test_sgd_lr(double lr, double momentum);
#define TEST_ADAM(lr) ((clt_adam_options[1]){test_adam_lr(lr)})
#define TEST_SGD(lr, momentum) ((clt_sgd_options[1]){test_sgd_lr(lr, momentum)})
/* PyTorch's loss defaults with the reduction changed, as a pointer to a compound literal. */
clt_loss_options test_loss_reduction(clt_reduction reduction);
#define TEST_LOSS(reduction) ((clt_loss_options[1]){test_loss_reduction(reduction)})
/* A tensor of dtype on dev holding the doubles v (asserts success). */
clt_tensor *test_tensor(clt_device *dev, clt_dtype dtype, const double *v, int ndim,
                        const int64_t *shape);
/* A tensor of `shape` and dtype on dev holding sin(0.37 i + phase), the values tests/reference
 * uses. */
clt_tensor *test_sines(clt_device *dev, clt_dtype dt, int ndim, const int64_t *shape, double phase);
/* test_noise_new(n, seed) for the n elements of `shape`, as a tensor of dtype on dev; *v receives
 * them as stored (rounded), a buffer the test frees. */
clt_tensor *test_noisy(clt_device *dev, clt_dtype dt, unsigned seed, double **v, int ndim,
                       const int64_t *shape);
/* The floating dtypes, with the tolerance of an adjoint kernel's result relative to
 * max(1, |want|): float accumulation, or one rounding of the result for f16 and bf16. */
typedef struct test_dtype_tol {
    clt_dtype dtype;
    double tol;
} test_dtype_tol;
extern const test_dtype_tol test_adjoint_dtypes[4];
#define TEST_ADJOINT_DTYPES (int)(sizeof test_adjoint_dtypes / sizeof *test_adjoint_dtypes)

/* An assertion inside a loop over elements: Check records every passing ck_assert (a write
 * to its log), which over millions of elements costs more than the reductions themselves; this
 * fails the same way and records nothing when it holds. */
#define ELEMENT_CHECK(cond, ...)                                                               \
    do {                                                                                       \
        if (!(cond))                                                                           \
            ck_abort_msg(__VA_ARGS__);                                                         \
    } while (0)

#endif
