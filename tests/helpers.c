/* Test helpers: see helpers.h. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <ftw.h>
#include <sys/wait.h>
#endif

#include "helpers.h"
#include "platform/platform.h"

#if defined(__SANITIZE_ADDRESS__)
#define CLT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CLT_TEST_ASAN 1
#endif
#endif
#ifdef CLT_TEST_ASAN
#include <sanitizer/lsan_interface.h>
#endif
#include "device/allocator.h"
#include "tensor/tensor_internal.h"

int test_device_total = 1;

clt_device *test_device(int i)
{
    char name[16];
    if (i == 0)
        return clt_device_cpu();
    snprintf(name, sizeof name, "gpu:%d", i - 1);
    clt_device *dev = clt_device_get(name);
    ck_assert_msg(dev != NULL, "%s", clt_last_error());
    return dev;
}

bool test_has_dtype(clt_device *dev, clt_dtype dt)
{
    return dt != CLT_F64 || clt_device_get_info(dev)->fp64;
}

test_live test_live_now(void)
{
    return (test_live){clt__live_allocations(CLT__HOST), clt__live_allocations(CLT__DEVICE)};
}

#ifdef _WIN32
int test_setenv(const char *name, const char *value, int overwrite)
{
    if (!overwrite && getenv(name))
        return 0;
    return _putenv_s(name, value) == 0 ? 0 : -1;
}

int test_unsetenv(const char *name)
{
    return _putenv_s(name, "") == 0 ? 0 : -1;
}

/* tmpfile() of the C runtime creates its file in the root folder of the current drive, where a
 * user may not write: this one is in GetTempPath's folder, deleted when closed ("D"). */
static FILE *temp_file(void)
{
    char dir[MAX_PATH], path[MAX_PATH];
    DWORD n = GetTempPathA(sizeof dir, dir);
    if (n == 0 || n >= sizeof dir || !GetTempFileNameA(dir, "clt", 0, path))
        return NULL;
    return fopen(path, "w+bD");
}
#else
#define temp_file tmpfile
#endif

/* What the test wrote on stderr goes to this file (test_setup), which must stay empty: the
 * library and the drivers it uses never print. (Not in sanitizer builds. Under Wine a host
 * driver writes to the Unix stderr, which this does not catch.) */
static FILE *stderr_file;

void test_setup(void)
{
#if defined(CLT_TEST_ASAN) || defined(__SANITIZE_THREAD__)
    return; /* the sanitizers report there */
#endif
    fflush(stderr);
    stderr_file = temp_file();
    if (stderr_file)
        dup2(fileno(stderr_file), STDERR_FILENO);
}

void test_allow_stderr(void)
{
    fflush(stderr);
    if (stderr_file)
        fclose(stderr_file);
    stderr_file = NULL;
}

/* Fails the test when anything reached stderr, quoting the start of it. */
static void check_stderr(void)
{
    char text[600];
    size_t n;
    if (!stderr_file)
        return;
    fflush(stderr);
    rewind(stderr_file);
    n = fread(text, 1, sizeof text - 1, stderr_file);
    text[n] = '\0';
    fclose(stderr_file);
    stderr_file = NULL;
    /* The one line of Mesa 22's llvmpipe that not every kernel can avoid: it warns where it
     * reads an argument of its own inside control flow (the tables of libclc's pow() and log(),
     * and in a few kernels for reasons not found; docs/limits.md) */
    static const char mesa_pow[] = "MESA: warning: Treating load_kernel_arg in control flow as "
                                   "uniform, results may be incorrect.\n";
    for (char *at; (at = strstr(text, mesa_pow)) != NULL;)
        memmove(at, at + strlen(mesa_pow), strlen(at + strlen(mesa_pow)) + 1);
    ck_assert_msg(text[0] == '\0', "the test wrote on stderr:\n%s", text);
}

void test_teardown(void)
{
    int n = clt_device_count(); /* negative when the test broke the device list on purpose */
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu:%d", i);
        clt_device *dev = clt_device_get(name);
        if (dev)
            clt_device_synchronize(dev);
    }
#ifdef CLT_TEST_ASAN
    /* Leaks are looked for here, with the drivers' threads idle and the test's work done,
     * rather than at exit, while they wind down; this turns the check at exit off. (Does
     * nothing unless ASAN_OPTIONS has detect_leaks=1.) */
    __lsan_do_leak_check();
#endif
    check_stderr();
}

#ifdef _WIN32
/* Appends s to the command line cmd (size wide characters) as one argument, quoted as the C
 * runtime reads it back. */
static void append_arg(wchar_t *cmd, size_t size, const wchar_t *s)
{
    size_t n = wcslen(cmd);
    if (n && n + 1 < size)
        cmd[n++] = L' ';
    if (n + 1 < size)
        cmd[n++] = L'"';
    for (const wchar_t *p = s;; p++) {
        size_t slashes = 0;
        for (; *p == L'\\'; p++)
            slashes++;
        /* backslashes are doubled before a quote (the closing one too), else kept as they are */
        size_t repeat = (*p == L'"' || *p == L'\0') ? 2 * slashes : slashes;
        for (size_t i = 0; i < repeat && n + 1 < size; i++)
            cmd[n++] = L'\\';
        if (*p == L'\0')
            break;
        if (*p == L'"' && n + 1 < size)
            cmd[n++] = L'\\';
        if (n + 1 < size)
            cmd[n++] = *p;
    }
    if (n + 1 < size)
        cmd[n++] = L'"';
    cmd[n] = L'\0';
}

void *test_start_self(const char *const *args)
{
    static wchar_t self[MAX_PATH * 4];
    wchar_t *cmd = calloc(32768, sizeof *cmd), arg[4096];
    STARTUPINFOW si = {.cb = sizeof si};
    PROCESS_INFORMATION pi;
    DWORD n = self[0] ? 1 /* known */ : GetModuleFileNameW(NULL, self, sizeof self / sizeof *self);
    BOOL ok = FALSE;
    if (cmd && n > 0 && n < sizeof self / sizeof *self) {
        append_arg(cmd, 32768, self);
        for (; *args; args++) {
            if (!MultiByteToWideChar(CP_UTF8, 0, *args, -1, arg, sizeof arg / sizeof *arg))
                break;
            append_arg(cmd, 32768, arg);
        }
        fflush(stdout);
        fflush(stderr);
        ok = !*args && CreateProcessW(self, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi);
    }
    free(cmd);
    if (!ok)
        return NULL;
    CloseHandle(pi.hThread);
    return pi.hProcess;
}

long long test_wait_self(void *process, long timeout_ms, bool *timed_out)
{
    DWORD code = 0;
    bool late = WaitForSingleObject(process, timeout_ms < 0 ? INFINITE : (DWORD)timeout_ms) ==
                WAIT_TIMEOUT;
    if (late) {
        TerminateProcess(process, 1);
        WaitForSingleObject(process, INFINITE);
    }
    bool known = !late && GetExitCodeProcess(process, &code);
    CloseHandle(process);
    if (timed_out)
        *timed_out = late;
    return known ? (long long)code : -1;
}

static struct {
    const char *name;
    test_child_fn fn;
} children[32];
static int child_count;

void test_child_register(const char *name, test_child_fn fn)
{
    if (child_count < (int)(sizeof children / sizeof *children))
        children[child_count].name = name, children[child_count++].fn = fn;
}

test_child_fn test_child_find(const char *name)
{
    for (int i = 0; i < child_count; i++)
        if (strcmp(children[i].name, name) == 0)
            return children[i].fn;
    return NULL;
}

bool test_run_children(int count, const char *name, test_child_fn fn, const char *arg)
{
    const char *args[] = {"--child", name, arg, NULL};
    void *procs[8];
    bool ok = true;
    (void)fn;
    ck_assert_int_le(count, 8);
    ck_assert_ptr_eq(test_child_find(name), fn);
    for (int i = 0; i < count; i++)
        ck_assert_ptr_nonnull(procs[i] = test_start_self(args));
    for (int i = 0; i < count; i++)
        ok = test_wait_self(procs[i], -1, NULL) == 0 && ok;
    return ok;
}
#else
bool test_run_children(int count, const char *name, test_child_fn fn, const char *arg)
{
    pid_t pids[8];
    bool ok = true;
    (void)name;
    ck_assert_int_le(count, 8);
    for (int i = 0; i < count; i++) {
        pids[i] = fork();
        ck_assert_int_ge(pids[i], 0);
        if (pids[i] == 0)
            _exit(fn(arg) ? 0 : 1);
    }
    for (int i = 0; i < count; i++) {
        int status = 0;
        ok = waitpid(pids[i], &status, 0) == pids[i] && WIFEXITED(status) &&
             WEXITSTATUS(status) == 0 && ok;
    }
    return ok;
}
#endif

#ifdef _WIN32
/* What test_case made, for main.c's runner: Check keeps a TCase's name and timeout to itself. */
static struct {
    const TCase *tc;
    const char *name;
    int timeout;
} cases[256];
static int case_count;

bool test_case_info(const TCase *tc, const char **name, int *timeout)
{
    for (int i = 0; i < case_count; i++)
        if (cases[i].tc == tc) {
            *name = cases[i].name, *timeout = cases[i].timeout;
            return true;
        }
    return false;
}
#endif

TCase *test_case(const char *name, int timeout)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout);
    tcase_add_checked_fixture(tc, test_setup, test_teardown);
#ifdef _WIN32
    if (case_count < (int)(sizeof cases / sizeof *cases))
        cases[case_count].tc = tc, cases[case_count].name = name,
        cases[case_count++].timeout = timeout;
#endif
    return tc;
}

void test_sync_all(void)
{
    int n = clt_device_count();
    for (int i = 0; i <= n; i++)
        ck_assert_int_eq(clt_device_synchronize(test_device(i)), CLT_OK);
}

long test_fault_sweep(test_op op, void *ctx, const char *fn, clt__alloc_kind kind)
{
    return test_fault_sweep_checked(op, NULL, NULL, ctx, fn, kind);
}

long test_fault_sweep_checked(test_op op, test_check snapshot, test_check check, void *ctx,
                              const char *fn, clt__alloc_kind kind)
{
    clt_status oom = kind == CLT__HOST ? CLT_ERR_OUT_OF_MEMORY : CLT_ERR_DEVICE_OUT_OF_MEMORY;
    char prefix[128];
    long made;
    test_live base;

    snprintf(prefix, sizeof prefix, "%s%s", fn ? fn : "clt_", fn ? ": " : "");
    for (int run = 0; run < 2; run++) { /* a warm-up, then a run that counts */
        if (snapshot)
            snapshot(ctx);
        test_sync_all();
        base = test_live_now();
        made = clt__allocation_attempts(kind);
        ck_assert_msg(op(ctx), "%s%s", run ? "" : "warm-up failed: ", clt_last_error());
        made = clt__allocation_attempts(kind) - made;
        test_sync_all();
    }
    ck_assert_live_eq(test_live_now(), base);
    for (long n = 1; n <= made + 1; n++) {
        if (snapshot)
            snapshot(ctx);
        clt__fault_inject(kind, n);
        clt_clear_error();
        bool ok = op(ctx);
        clt__fault_inject(kind, 0);
        clt__error_state failure;
        clt__error_save(&failure);
        test_sync_all();
        if (!ok && check) /* asserts, and puts the objects back where the next run starts */
            check(ctx);
        clt__error_restore(&failure);
        test_live now = test_live_now();
        ck_assert_msg(now.host == base.host && now.device == base.device,
                      "%s, %s allocation %ld of %ld failed: %ld host and %ld device allocations "
                      "live, %ld and %ld before (%s)", fn ? fn : "the scenario",
                      kind == CLT__HOST ? "host" : "device", n, made, now.host, now.device,
                      base.host, base.device, ok ? "it succeeded" : clt_last_error());
        if (n == made + 1) {
            ck_assert_msg(ok, "%s", clt_last_error());
            break;
        }
        ck_assert_msg(!ok, "%s: allocation %ld of %ld was made to fail, yet the call succeeded",
                      fn ? fn : "the scenario", n, made);
        ck_assert_msg(clt_last_status() == oom, "%s, allocation %ld: %s (%s)",
                      fn ? fn : "the scenario", n, clt_status_name(clt_last_status()),
                      clt_last_error());
        ck_assert_msg(strncmp(clt_last_error(), prefix, strlen(prefix)) == 0,
                      "last error \"%s\" does not start with \"%s\"", clt_last_error(), prefix);
    }
    return made;
}

void test_release_all(clt_tensor *const *ts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        clt_tensor_release(ts[i]);
}

/* The folders test_temp_dir made, removed with everything in them when the process that made
 * them exits (not a forked child that inherited the list). */
static struct {
    char paths[64][320];
    int n;
    pid_t pid;
} temp_dirs;

#ifdef _WIN32
/* A folder and all it holds (nftw's work; the tests make no links on Windows). */
static void remove_tree(const char *path)
{
    char inner[512];
    DIR *d = opendir(path);
    struct dirent *e;
    if (!d) {
        remove(path);
        return;
    }
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(inner, sizeof inner, "%s/%s", path, e->d_name);
            remove_tree(inner);
        }
    closedir(d);
    rmdir(path);
}

/* mkdtemp, which MinGW-w64 lacks, in GetTempPath's folder: path is at least MAX_PATH long. */
static char *make_temp_dir(char *path)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    static unsigned seed;
    DWORD n = GetTempPathA(MAX_PATH, path);
    if (n == 0 || n + 16 > MAX_PATH)
        return NULL;
    for (char *p = path; *p; p++)
        if (*p == '\\')
            *p = '/';
    if (!seed)
        seed = (unsigned)GetTickCount() ^ (unsigned)GetCurrentProcessId() * 2654435761u;
    for (int attempt = 0; attempt < 100; attempt++) {
        char *name = path + n;
        memcpy(name, "clt_test_", 9);
        for (int i = 0; i < 6; i++) {
            seed = seed * 1664525u + 1013904223u;
            name[9 + i] = letters[(seed >> 16) % 36];
        }
        name[15] = '\0';
        if (CreateDirectoryA(path, NULL))
            return path;
        if (GetLastError() != ERROR_ALREADY_EXISTS)
            return NULL;
    }
    return NULL;
}
#else
static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char *make_temp_dir(char *path)
{
    snprintf(path, 32, "/tmp/clt_test_XXXXXX");
    return mkdtemp(path);
}
#endif

static void remove_temp_dirs(void)
{
    if (getpid() != temp_dirs.pid)
        return;
    for (int i = 0; i < temp_dirs.n; i++)
        remove_tree(temp_dirs.paths[i]);
    temp_dirs.n = 0;
}

const char *test_temp_dir(void)
{
    static char path[sizeof temp_dirs.paths[0]];
    ck_assert_ptr_nonnull(make_temp_dir(path));
    if (temp_dirs.pid != getpid()) { /* the first in this process: the list is its own */
        temp_dirs.n = 0;
        if (temp_dirs.pid == 0)
            atexit(remove_temp_dirs);
        temp_dirs.pid = getpid();
    }
    ck_assert_msg(temp_dirs.n < 64, "test_temp_dir: more than 64 folders in one process");
    memcpy(temp_dirs.paths[temp_dirs.n++], path, sizeof path);
    return path;
}

void test_write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

bool test_host_only(void)
{
    const char *v = getenv("CLT_TEST_HOST_ONLY");
    return !CLT_TEST_OPENCL || (v && strcmp(v, "1") == 0);
}

bool test_use_vendors(bool pocl, bool oclgrind)
{
    if (test_host_only() && (pocl || oclgrind))
        return false;
#ifdef _WIN32
    /* Windows' ICD loader reads the registry; under Wine the host's loader reads the Unix
     * environment the process started with (Wine gives it no variable set since, nor a child
     * process's). So the test gets only what the process sees already: no platform when the
     * library loads no OpenCL, PoCL alone where the run was started so (tests/CMakeLists.txt gives
     * Wine OCL_ICD_VENDORS with PoCL's file alone, and says so in CLT_TEST_PLATFORMS). */
    const char *platforms = getenv("CLT_TEST_PLATFORMS");
    if (!pocl && !oclgrind)
        return setenv("CLT_OPENCL_LIBRARY", "off", 1) == 0;
    return pocl && !oclgrind && platforms && strcmp(platforms, "pocl") == 0;
#endif
    const char *dir = test_temp_dir();
    if (pocl) {
        ck_assert_msg(CLT_TEST_POCL_ICD[0] != '\0', "PoCL's ICD file was not found at build time");
        FILE *f = fopen(CLT_TEST_POCL_ICD, "r");
        char line[512] = "";
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
        fclose(f);
        test_write_file(dir, "pocl.icd", line);
    }
    if (oclgrind) {
        ck_assert_msg(CLT_TEST_OCLGRIND_ICD[0] != '\0',
                      "oclgrind was not found at build time (apt-get install oclgrind)");
        char line[512];
        snprintf(line, sizeof line, "%s\n", CLT_TEST_OCLGRIND_ICD);
        test_write_file(dir, "oclgrind.icd", line);
    }
    setenv("OCL_ICD_VENDORS", dir, 1);
    return true;
}

void *test_bytes(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t) * clt_dtype_size(clt_tensor_dtype(t));
    void *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(clt_tensor_copy_to_host(t, p, n), CLT_OK);
    return p;
}

void test_assert_same_bytes(const clt_tensor *a, const clt_tensor *b)
{
    size_t n = (size_t)clt_tensor_numel(a) * clt_dtype_size(clt_tensor_dtype(a));
    ck_assert_int_eq(clt_tensor_dtype(a), clt_tensor_dtype(b));
    ck_assert_int_eq(clt_tensor_numel(a), clt_tensor_numel(b));
    void *x = test_bytes(a), *y = test_bytes(b);
    ck_assert_mem_eq(x, y, n);
    free(x);
    free(y);
}

void test_assert_close(clt_tensor *got, clt_tensor *want, double rel, const char *what)
{
    ck_assert_msg(got && want, "%s: %s", what, clt_last_error());
    ck_assert_int_eq(clt_tensor_ndim(got), clt_tensor_ndim(want));
    for (int d = 0; d < clt_tensor_ndim(want); d++)
        ck_assert_int_eq(clt_tensor_size(got, d), clt_tensor_size(want, d));
    double *g = test_values(got), *w = test_values(want);
    for (int64_t i = 0; i < clt_tensor_numel(want); i++)
        ELEMENT_CHECK(fabs(g[i] - w[i]) <= rel * fmax(1.0, fabs(w[i])),
                      "%s: element %lld is %.9g, expected %.9g", what, (long long)i, g[i], w[i]);
    free(g);
    free(w);
}

void test_assert_values(clt_tensor *t, const double *want, int64_t n, double tol,
                        const char *what)
{
    ck_assert_msg(t != NULL, "%s: %s", what, clt_last_error());
    ck_assert_int_eq(clt_tensor_numel(t), n);
    double *v = test_values(t);
    for (int64_t i = 0; i < n; i++)
        ELEMENT_CHECK((isnan(v[i]) && isnan(want[i])) || v[i] == want[i] ||
                          fabs(v[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])),
                      "%s: element %lld is %.9g, want %.9g", what, (long long)i, v[i], want[i]);
    free(v);
    clt_tensor_release(t);
}

double *test_values(clt_tensor *t)
{
    clt_tensor *c = clt_tensor_to_ex(t, &(clt_to_options){.device = clt_device_cpu(), .dtype = CLT_F64});
    ck_assert_msg(c != NULL, "%s", clt_last_error());
    double *v = test_bytes(c);
    clt_tensor_release(c);
    return v;
}

void test_noise(double *v, int64_t n, unsigned seed, double lo, double hi)
{
    uint32_t s = seed * 747796405u + 12345u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = lo + (hi - lo) * ((double)(s >> 8) / 16777216.0);
    }
}

double *test_noise_new(int64_t n, unsigned seed)
{
    double *v = malloc((size_t)n * sizeof *v);
    uint32_t s = seed * 747796405u + 1;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (double)(s >> 8) / 4194304.0 - 2.0;
    }
    return v;
}

clt_tensor *test_tensor(clt_device *dev, clt_dtype dtype, const double *v, int ndim,
                        const int64_t *shape)
{
    clt_tensor *h = clt_tensor_from_data(ndim, shape, v, CLT_F64, clt_device_cpu());
    clt_tensor *t = h ? clt_tensor_to_ex(h, &(clt_to_options){.device = dev, .dtype = dtype}) : NULL;
    ck_assert_msg(t != NULL, "%s", clt_last_error());
    clt_tensor_release(h);
    return t;
}

clt_tensor *test_sines(clt_device *dev, clt_dtype dt, int ndim, const int64_t *shape, double phase)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = sin(0.37 * (double)i + phase);
    clt_tensor *t = test_tensor(dev, dt, v, ndim, shape);
    free(v);
    return t;
}

clt_tensor *test_noisy(clt_device *dev, clt_dtype dt, unsigned seed, double **v, int ndim,
                       const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    double *raw = test_noise_new(n, seed);
    clt_tensor *t = test_tensor(dev, dt, raw, ndim, shape);
    free(raw);
    *v = test_values(t);
    return t;
}

const test_dtype_tol test_adjoint_dtypes[4] = {
    {CLT_F32, 1e-5}, {CLT_F64, 1e-12}, {CLT_F16, 1e-3}, {CLT_BF16, 8e-3}};

clt_module *test_mlp(int64_t in, int64_t hidden, int64_t out, clt_module *activation,
                     uint64_t seed)
{
    clt_manual_seed(seed);
    clt_module *parts[3] = {clt_nn_linear(in, hidden, true), activation,
                            clt_nn_linear(hidden, out, true)};
    clt_module *m = clt_nn_sequential(parts, 3);
    ck_assert_msg(m != NULL, "%s", clt_last_error());
    for (int k = 0; k < 3; k++)
        clt_module_release(parts[k]);
    return m;
}

void test_copy_kernel(const char *dir, const char *name)
{
    char to[512], buf[4096];
    size_t n;
    snprintf(to, sizeof to, "%s/%s", dir, name);
    char from[512];
    snprintf(from, sizeof from, "%s/%s", CLT_TEST_CL_DIR, name);
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

void test_copy_kernels(const char *dir)
{
    struct dirent *e;
    DIR *d = opendir(CLT_TEST_CL_DIR);
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > 3 && strcmp(e->d_name + n - 3, ".cl") == 0)
            test_copy_kernel(dir, e->d_name);
    }
    closedir(d);
}

/* A made-up device's buffers: host memory, counted as a device's, as the caching allocator
 * counts them for a device that is not the host. */
static clt_status fake_alloc(const char *fn, clt_device *dev, size_t nbytes, void **buf)
{
    clt_status st = clt__host_backend.alloc(fn, dev, nbytes, buf);
    if (st == CLT_OK)
        clt__live_add(CLT__HOST, -1), clt__live_add(CLT__DEVICE, 1);
    return st;
}

static void fake_free(clt_device *dev, void *buf)
{
    clt__live_add(CLT__DEVICE, -1), clt__live_add(CLT__HOST, 1);
    clt__host_backend.free(dev, buf);
}

void test_fake_device(clt_device *dev, clt__backend *table, const char *backend, const char *name,
                      clt_device_type type)
{
    clt_device *cpu = clt_device_cpu();
    clt_tensor_release(clt_tensor_zeros(CLT_SHAPE(1), CLT_F32, cpu)); /* cpu's pool exists */
    *table = clt__host_backend;
    table->name = backend;
    if (type != CLT_DEVICE_HOST)
        table->alloc = fake_alloc, table->free = fake_free;
    *dev = (clt_device){.index = type == CLT_DEVICE_HOST ? -1 : 0, .backend = table,
                        .info = cpu->info};
    dev->info.type = type;
    snprintf(dev->name, sizeof dev->name, "%s", name);
    atomic_store(&dev->pool, atomic_load(&cpu->pool));
}

clt_adam_options test_adam_lr(double lr)
{
    clt_adam_options o = clt_adam_options_default();
    o.lr = lr;
    return o;
}

clt_sgd_options test_sgd_lr(double lr, double momentum)
{
    clt_sgd_options o = clt_sgd_options_default();
    o.lr = lr;
    o.momentum = momentum;
    return o;
}

clt_loss_options test_loss_reduction(clt_reduction reduction)
{
    clt_loss_options o = clt_loss_options_default();
    o.reduction = reduction;
    return o;
}
