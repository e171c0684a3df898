/* Cache suite: the disk cache of built OpenCL programs (a miss stores, another process hits;
 * corrupt, truncated and foreign entries and FIFOs are rebuilt; concurrent builders; CLT_CACHE_DIR=off; an
 * unwritable folder; the size cap's LRU eviction; clt_cache_get_info; an entry that holds
 * another program's binary is removed and rebuilt), a driver that keeps its own cache,
 * clt_device_warmup, and a kernel source in CLT_KERNEL_DIR that is no regular file. PoCL only,
 * with its own cache off except where a test says. Processes that must start cold are started
 * at the start of a test, before it calls OpenCL (PoCL hangs in children forked after):
 * test_run_children. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _WIN32
#include <direct.h>
#include <sys/utime.h>
#define mkdir(path, mode) _mkdir(path)
#else
#include <sys/time.h>
#endif

#include "opencl_helpers.h"
#include "backends/opencl/cl_internal.h"

/* PoCL alone, and a fresh cache folder as CLT_CACHE_DIR; NULL when the test must not run.
 * PoCL's own cache stays where it was, even for tests that move HOME and XDG_CACHE_HOME. */
static const char *use_pocl(void)
{
    static char dir[320];
    char pocl[512];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (!test_use_vendors(true, false))
        return NULL;
#ifdef _WIN32 /* the user's cache folder is %LOCALAPPDATA% (the library's, and PoCL's there) */
    xdg = getenv("LOCALAPPDATA"), home = NULL;
#endif
    if (!getenv("POCL_CACHE_DIR") && ((xdg && *xdg) || home)) {
        snprintf(pocl, sizeof pocl, "%s%s/pocl", xdg && *xdg ? xdg : home,
                 xdg && *xdg ? "" : "/.cache");
        setenv("POCL_CACHE_DIR", pocl, 1);
    }
    snprintf(dir, sizeof dir, "%s", test_temp_dir());
    setenv("CLT_CACHE_DIR", dir, 1);
    return dir;
}

/* use_pocl with PoCL's own cache off, so that the library's cache keeps the programs. */
static const char *use_cache(void)
{
    const char *dir = use_pocl();
    setenv("POCL_KERNEL_CACHE", "0", 1);
    return dir;
}

/* a + b of n-element tensors of dtype on gpu:0, checked against the host: true when right. */
static bool add_is_right(clt_dtype dtype)
{
    double va[16], vb[16];
    clt_device *gpu = clt_device_get("gpu:0");
    bool right = gpu != NULL;
    for (int i = 0; i < 16; i++)
        va[i] = i, vb[i] = 2 * i + 1;
    clt_tensor *a = right ? test_tensor(gpu, dtype, va, 1, (int64_t[]){16}) : NULL;
    clt_tensor *b = right ? test_tensor(gpu, dtype, vb, 1, (int64_t[]){16}) : NULL;
    clt_tensor *c = right ? clt_add(a, b) : NULL;
    double *got = c ? test_values(c) : NULL;
    right = got != NULL;
    for (int i = 0; right && i < 16; i++)
        right = got[i] == 3 * i + 1;
    free(got);
    clt_tensor_release(c);
    clt_tensor_release(b);
    clt_tensor_release(a);
    return right;
}

/* add_is_right for each dtype that arg lists by number ("0,3"). */
TEST_CHILD_FN(add_listed)
{
    bool right = true;
    for (char *end; *arg && right; arg = end + (*end == ',')) {
        right = add_is_right((clt_dtype)strtol(arg, &end, 10));
        right = right && end != arg;
    }
    return right;
}

/* Runs add_is_right for each dtype (ending at CLT_DTYPE_NONE) in `count` child processes at
 * once; true when every child succeeded. */
static bool add_in_children(int count, const clt_dtype *dtypes)
{
    char list[64] = "";
    for (const clt_dtype *d = dtypes; *d != CLT_DTYPE_NONE; d++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", d == dtypes ? "" : ",",
                 (int)*d);
    return test_run_children(count, "add_listed", add_listed, list);
}

/* The names of the folder's files (sorted), up to max; returns how many there are. */
static int list_files(const char *dir, char names[][64], int max)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || e->d_name[1] == '.'))
            continue;
        if (n < max)
            snprintf(names[n], 64, "%.63s", e->d_name);
        n++;
    }
    closedir(d);
    for (int i = 1; i < n && i < max; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[64];
            memcpy(t, names[j], 64), memcpy(names[j], names[j - 1], 64), memcpy(names[j - 1], t, 64);
        }
    return n;
}

static long file_size(const char *dir, const char *name)
{
    char path[512];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_int_eq(stat(path, &sb), 0);
    return (long)sb.st_size;
}

static const clt_dtype only_f32[] = {CLT_F32, CLT_DTYPE_NONE};

START_TEST(test_cache_miss_then_hit)
{
    const char *dir = use_cache();
    char names[8][64];
    if (!dir)
        return;
    ck_assert(add_in_children(1, only_f32)); /* a cold process: builds and stores */
    int n = list_files(dir, names, 8);
    ck_assert_int_ge(n, 1);
    for (int i = 0; i < n && i < 8; i++) {
        ck_assert_msg(strncmp(names[i], "clt-", 4) == 0, "unexpected file %s", names[i]);
        ck_assert_int_gt(file_size(dir, names[i]), 40);
    }

    ck_assert(add_is_right(CLT_F32)); /* this process: loads every program it needs */
    clt__cl_cache_stats s = clt__cl_cache_get_stats();
    ck_assert_int_ge(s.programs, 1);
    ck_assert_int_eq(s.hits, s.programs);
    ck_assert_int_eq(s.misses, 0);
    ck_assert_int_eq(s.rejected, 0);
    ck_assert_int_eq(s.stored, 0);
    ck_assert_int_eq(list_files(dir, names, 8), n);
}
END_TEST

/* The same on two sub-devices, whose programs belong to their shared context: each stores its
 * binary in a cold process, and a later process loads every program it needs on both. */
START_TEST(test_cache_subdevices_hit)
{
    const char *dir = use_cache();
    char names[8][64];
    if (!dir)
        return;
    setenv("CLT_SUBDEVICES", "2", 1);
    ck_assert(add_in_children(1, only_f32)); /* gpu:0 */
    ck_assert_int_ge(list_files(dir, names, 8), 1);
    ck_assert(add_is_right(CLT_F32));
    clt_device *other = clt_device_get("gpu:1");
    ck_assert_ptr_nonnull(other);
    ck_assert(strstr(clt_device_get_info(other)->name, "sub-device 2 of 2") != NULL);
    clt__cl_cache_stats s = clt__cl_cache_get_stats();
    ck_assert_int_ge(s.programs, 1);
    ck_assert_int_eq(s.hits, s.programs);
    ck_assert_int_eq(s.stored, 0);
}
END_TEST

/* Applies damage to every entry of the folder: flips bytes near the end, or cuts it short. */
static void damage_entries(const char *dir, bool truncate_them)
{
    char names[8][64], path[640];
    int n = list_files(dir, names, 8);
    ck_assert_int_ge(n, 1);
    for (int i = 0; i < n; i++) {
        long size = file_size(dir, names[i]);
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (truncate_them) {
#ifdef _WIN32
            FILE *t = fopen(path, "r+b");
            ck_assert_ptr_nonnull(t);
            ck_assert_int_eq(_chsize_s(_fileno(t), size / 2), 0);
            fclose(t);
#else
            ck_assert_int_eq(truncate(path, size / 2), 0);
#endif
            continue;
        }
        FILE *f = fopen(path, "r+b");
        unsigned char bytes[16];
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fseek(f, size - 16, SEEK_SET), 0);
        ck_assert_int_eq(fread(bytes, 1, 16, f), 16);
        for (int j = 0; j < 16; j++)
            bytes[j] ^= 0x5a;
        ck_assert_int_eq(fseek(f, size - 16, SEEK_SET), 0);
        ck_assert_int_eq(fwrite(bytes, 1, 16, f), 16);
        fclose(f);
    }
}

/* A damaged entry is rejected and rebuilt from source; the result stays right. */
static void check_damage_rebuilt(bool truncate_them)
{
    const char *dir = use_cache();
    if (!dir)
        return;
    ck_assert(add_in_children(1, only_f32));
    damage_entries(dir, truncate_them);
    ck_assert(add_is_right(CLT_F32));
    clt__cl_cache_stats s = clt__cl_cache_get_stats();
    ck_assert_int_ge(s.rejected, 1);
    ck_assert_int_eq(s.hits, 0);
    ck_assert_int_eq(s.misses, s.programs);
    ck_assert_int_eq(s.stored, s.programs); /* the rebuilt binaries replace the damaged ones */
}

START_TEST(test_cache_corrupt_entry_rebuilt)
{
    check_damage_rebuilt(false);
}
END_TEST

START_TEST(test_cache_truncated_entry_rebuilt)
{
    check_damage_rebuilt(true);
}
END_TEST

START_TEST(test_cache_foreign_entry_rejected)
{
    const char *dir = use_cache();
    char names[8][64], a[512], b[512], t[512];
    static const clt_dtype two[] = {CLT_F32, CLT_I32, CLT_DTYPE_NONE};
    if (!dir)
        return;
    ck_assert(add_in_children(1, two));
    ck_assert_int_eq(list_files(dir, names, 8), 2); /* elementwise for f32 and for i32 */
    snprintf(a, sizeof a, "%s/%s", dir, names[0]);
    snprintf(b, sizeof b, "%s/%s", dir, names[1]);
    snprintf(t, sizeof t, "%s/swap", dir);
    ck_assert_int_eq(rename(a, t), 0); /* each entry under the other's name */
    ck_assert_int_eq(rename(b, a), 0);
    ck_assert_int_eq(rename(t, b), 0);

    ck_assert(add_is_right(CLT_F32));
    ck_assert(add_is_right(CLT_I32));
    clt__cl_cache_stats s = clt__cl_cache_get_stats();
    ck_assert_int_eq(s.programs, 2);
    ck_assert_int_eq(s.rejected, 2);
    ck_assert_int_eq(s.hits, 0);
    ck_assert_int_eq(s.misses, 2);
}
END_TEST

#ifndef _WIN32 /* no FIFOs on Windows */
/* A FIFO at an entry's name (planted, or left by anything) is rejected at once instead of
 * blocking every process that needs the program, and the rebuilt entry replaces it. */
START_TEST(test_cache_fifo_entry_rejected)
{
    const char *dir = use_cache();
    char names[8][64], path[256];
    struct stat sb;
    if (!dir)
        return;
    ck_assert(add_in_children(1, only_f32));
    ck_assert_int_eq(list_files(dir, names, 8), 1);
    snprintf(path, sizeof path, "%s/%s", dir, names[0]);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(mkfifo(path, 0600), 0);

    ck_assert(add_is_right(CLT_F32));
    clt__cl_cache_stats s = clt__cl_cache_get_stats();
    ck_assert_int_eq(s.rejected, 1);
    ck_assert_int_eq(s.hits, 0);
    ck_assert_int_eq(s.stored, 1);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert(S_ISREG(sb.st_mode));
    ck_assert_int_gt(sb.st_size, 40);
}
END_TEST
#endif

START_TEST(test_cache_concurrent_builders)
{
    const char *dir = use_cache();
    char names[8][64];
    if (!dir)
        return;
    ck_assert(add_in_children(3, only_f32));
    int n = list_files(dir, names, 8);
    ck_assert_int_ge(n, 1);
    for (int i = 0; i < n; i++) /* no temporary file left behind */
        ck_assert_msg(strncmp(names[i], "clt-", 4) == 0, "unexpected file %s", names[i]);
    ck_assert(add_is_right(CLT_F32));
    clt__cl_cache_stats s = clt__cl_cache_get_stats();
    ck_assert_int_eq(s.hits, s.programs);
    ck_assert_int_eq(s.rejected, 0);
    ck_assert_int_eq(list_files(dir, names, 8), n);
}
END_TEST

START_TEST(test_cache_off_writes_nothing)
{
    char names[4][64], home[320], dir[340];
    if (!use_cache())
        return;
    snprintf(home, sizeof home, "%s", test_temp_dir());
    setenv("HOME", home, 1);
    setenv("XDG_CACHE_HOME", home, 1);
#ifdef _WIN32
    setenv("LOCALAPPDATA", home, 1); /* the user's cache folder on Windows */
#endif
    setenv("CLT_CACHE_DIR", "off", 1);
    ck_assert(add_is_right(CLT_F32));
    clt__cl_cache_stats s = clt__cl_cache_get_stats();
    ck_assert_int_ge(s.misses, 1);
    ck_assert_int_eq(s.stored, 0);
    snprintf(dir, sizeof dir, "%s/cltensor", home);
    ck_assert_int_ne(access(dir, F_OK), 0); /* not even the default folder was created */
    ck_assert_int_eq(list_files(home, names, 4), 0);
    clt_cache_info info;
    ck_assert_int_eq(clt_cache_get_info(&info), CLT_OK);
    ck_assert(!info.enabled);
    ck_assert_str_eq(info.dir, "");
    ck_assert_uint_eq(info.entries, 0);
}
END_TEST

START_TEST(test_cache_default_folder)
{
    char names[4][64], home[320], dir[340];
    if (!use_cache())
        return;
    snprintf(home, sizeof home, "%s", test_temp_dir());
    setenv("XDG_CACHE_HOME", home, 1);
#ifdef _WIN32
    setenv("LOCALAPPDATA", home, 1); /* the user's cache folder on Windows */
#endif
    unsetenv("CLT_CACHE_DIR");
    ck_assert(add_is_right(CLT_F32));
    snprintf(dir, sizeof dir, "%s/cltensor", home);
    ck_assert_int_ge(list_files(dir, names, 4), 1);
    clt_cache_info info;
    ck_assert_int_eq(clt_cache_get_info(&info), CLT_OK);
    ck_assert(info.enabled);
    ck_assert_str_eq(info.dir, dir);
    ck_assert_uint_eq(info.size_limit, 256u << 20); /* the default cap */
}
END_TEST

static void count_warnings(clt_log_level level, const char *message, void *user)
{
    (void)message;
    if (level == CLT_LOG_WARN)
        ++*(int *)user;
}

START_TEST(test_cache_unwritable_folder)
{
    char dir[400];
    int warnings = 0;
    const char *base = use_cache();
    if (!base)
        return;
    test_write_file(base, "file", "not a folder");
    snprintf(dir, sizeof dir, "%s/file/cache", base);
    setenv("CLT_CACHE_DIR", dir, 1);
    clt_set_log_callback(count_warnings, &warnings, CLT_LOG_WARN);
    ck_assert(add_is_right(CLT_F32));
    ck_assert(add_is_right(CLT_I32));
    clt_set_log_callback(NULL, NULL, CLT_LOG_WARN);
    ck_assert_int_eq(warnings, 1);
    clt__cl_cache_stats s = clt__cl_cache_get_stats();
    ck_assert_int_eq(s.stored, 0);
    ck_assert_int_eq(s.misses, s.programs);
    clt_cache_info info;
    ck_assert_int_eq(clt_cache_get_info(&info), CLT_OK);
    ck_assert(!info.enabled);
    ck_assert_str_eq(info.dir, dir); /* the folder that could not be used */
}
END_TEST

/* A file named like an entry, of `size` bytes, last used at `when` (seconds since 1970). */
static void plant(const char *dir, const char *name, long size, time_t when)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_ptr_nonnull(f = fopen(path, "wb"));
    for (long i = 0; i < size; i++)
        fputc('x', f);
    fclose(f);
#ifdef _WIN32
    struct _utimbuf times = {when, when};
    ck_assert_int_eq(_utime(path, &times), 0);
#else
    struct timeval times[2] = {{when, 0}, {when, 0}};
    ck_assert_int_eq(utimes(path, times), 0);
#endif
}

START_TEST(test_cache_size_cap_evicts_oldest)
{
    const char *dir = use_cache();
    char names[8][64], cap[32], path[512];
    static const char *const old[3] = {
        "clt-00000000000000000000000000000001.bin", "clt-00000000000000000000000000000002.bin",
        "clt-00000000000000000000000000000003.bin"};
    if (!dir)
        return;
    ck_assert(add_in_children(1, only_f32)); /* learns the size of the real entry */
    ck_assert_int_eq(list_files(dir, names, 8), 1);
    long real = file_size(dir, names[0]);
    snprintf(path, sizeof path, "%s/%s", dir, names[0]);
    ck_assert_int_eq(unlink(path), 0);

    plant(dir, old[0], 1000, 1000000); /* the oldest */
    plant(dir, old[1], 1000, 2000000);
    plant(dir, old[2], 1000, 3000000);
    plant(dir, "keep.txt", 100000, 500000); /* not an entry: never deleted */
    ck_assert_int_eq(mkdir(strcat(strcpy(path, dir), "/clt-0000000000000000000000000000000a.bin"),
                           0755), 0); /* a folder with an entry's name: never deleted */
    snprintf(cap, sizeof cap, "%ld", real + 2500);
    setenv("CLT_CACHE_SIZE", cap, 1);
    ck_assert(add_is_right(CLT_F32)); /* stores the real entry: over the cap by one old file */
    ck_assert_int_eq(clt__cl_cache_get_stats().stored, 1);
    ck_assert_int_eq(list_files(dir, names, 8), 5);
    ck_assert_str_eq(names[0], old[1]);
    ck_assert_str_eq(names[1], old[2]);
    ck_assert_str_eq(names[2], "clt-0000000000000000000000000000000a.bin");
    ck_assert_str_eq(names[4], "keep.txt");
}
END_TEST

/* clt_cache_get_info: the folder, the cap, and only entry files counted. */
START_TEST(test_cache_info)
{
    const char *dir = use_cache();
    char path[512];
    clt_cache_info info;
    if (!dir)
        return;
    plant(dir, "clt-00000000000000000000000000000001.bin", 100, 1000000);
    plant(dir, "clt-00000000000000000000000000000002.bin", 300, 2000000);
    plant(dir, "keep.txt", 5000, 500000); /* not an entry */
    ck_assert_int_eq(mkdir(strcat(strcpy(path, dir), "/clt-0000000000000000000000000000000a.bin"),
                           0755), 0); /* a folder, not an entry */
    setenv("CLT_CACHE_SIZE", "64M", 1);
    ck_assert_int_eq(clt_cache_get_info(&info), CLT_OK);
    ck_assert(info.enabled);
    ck_assert_str_eq(info.dir, dir);
    ck_assert_uint_eq(info.size_limit, 64u << 20);
    ck_assert_uint_eq(info.entries, 2);
    ck_assert_uint_eq(info.bytes, 400);

    ck_assert(add_is_right(CLT_F32)); /* stores what it built */
    ck_assert_int_eq(clt_cache_get_info(&info), CLT_OK);
    ck_assert_uint_eq(info.entries, 2 + (uint64_t)clt__cl_cache_get_stats().stored);
    ck_assert_uint_gt(info.bytes, 400);

    ck_assert_int_eq(clt_cache_get_info(NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(clt_last_error(), "clt_cache_get_info: info is NULL");
}
END_TEST

/* An op on each dtype the device holds: fills, arithmetic, reductions, casts and selection. */
static void ops_on_every_dtype(clt_device *gpu)
{
    for (int d = CLT_F32; d < CLT_DTYPE_COUNT; d++) {
        if (d == CLT_F64 && !clt_device_get_info(gpu)->fp64)
            continue;
        clt_tensor *x = clt_tensor_ones(CLT_SHAPE(4, 4), (clt_dtype)d, gpu);
        clt_tensor *y = x ? clt_tensor_to_dtype(x, d == CLT_F32 ? CLT_I32 : CLT_F32) : NULL;
        clt_tensor *s = x ? clt_sum(x, NULL, 0, false) : NULL;
        clt_tensor *e = x ? clt_eq(x, x) : NULL;
        ck_assert_msg(x && y && s && e, "%s: %s", clt_dtype_name((clt_dtype)d), clt_last_error());
        clt_tensor_release(e);
        clt_tensor_release(s);
        clt_tensor_release(y);
        clt_tensor_release(x);
    }
    ck_assert_int_eq(clt_device_synchronize(gpu), CLT_OK);
}

static void collect_log(clt_log_level level, const char *message, void *user)
{
    char *log = user;
    size_t used = strlen(log);
    snprintf(log + used, 16384 - used, "%d %s\n", (int)level, message);
}

/* With PoCL's own cache on, the library's stores nothing: the driver keeps what it compiles
 * (asking it for a binary would compile every kernel of a program at once). One info line
 * says so, naming PoCL's folder, and nothing else is logged at info level or above. */
START_TEST(test_cache_driver_keeps_programs)
{
    static char log[16384], want[600];
    char names[4][64];
    const char *dir = use_pocl();
    if (!dir)
        return;
    clt_set_log_callback(collect_log, log, CLT_LOG_INFO);
    ck_assert(add_is_right(CLT_F32));
    ck_assert(add_is_right(CLT_I32));
    clt__cl_cache_stats s = clt__cl_cache_get_stats();
    ck_assert_int_eq(s.programs, 2);
    ck_assert_int_eq(s.misses, 2); /* built from source, as far as the library can tell */
    ck_assert_int_eq(s.hits + s.stored + s.rejected, 0);
    ck_assert_int_eq(list_files(dir, names, 4), 0);
    snprintf(want, sizeof want, "1 gpu:0 (%s) compiles OpenCL kernels as they are first needed; "
             "built programs are kept by the driver's cache in %s\n",
             clt_device_get_info(clt_device_get("gpu:0"))->name, getenv("POCL_CACHE_DIR"));
    ck_assert_str_eq(log, want);
}
END_TEST

START_TEST(test_cache_warmup_builds_everything)
{
    if (!use_pocl())
        return;
    clt_device *gpu = clt_device_get("gpu:0");
    ck_assert_ptr_nonnull(gpu);
    ck_assert_int_eq(clt_device_warmup(clt_device_cpu()), CLT_OK);
    ck_assert_int_eq(clt_device_warmup(NULL), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clt_device_warmup(gpu), CLT_OK);
    long built = clt__cl_cache_get_stats().programs;
    ck_assert_int_ge(built, 80); /* the parts of every kernel file, for every dtype */
    ck_assert_int_eq(clt_device_warmup(gpu), CLT_OK); /* a second warm-up builds nothing */
    ops_on_every_dtype(gpu);
    ck_assert(add_is_right(CLT_F32));
    ck_assert_int_eq(clt__cl_cache_get_stats().programs, built);
}
END_TEST

/* exp of a 16-element f32 tensor on gpu:0, checked against the host: true when right. */
static bool exp_is_right(void)
{
    double v[16];
    clt_device *gpu = clt_device_get("gpu:0");
    for (int i = 0; i < 16; i++)
        v[i] = i / 8.0;
    clt_tensor *x = gpu ? test_tensor(gpu, CLT_F32, v, 1, (int64_t[]){16}) : NULL;
    clt_tensor *y = x ? clt_exp(x) : NULL;
    double *got = y ? test_values(y) : NULL;
    bool right = got != NULL;
    for (int i = 0; right && i < 16; i++)
        right = fabs(got[i] - exp(v[i])) <= 1e-5 * exp(v[i]);
    free(got);
    clt_tensor_release(y);
    clt_tensor_release(x);
    return right;
}

TEST_CHILD_FN(exp_in_child)
{
    (void)arg;
    return exp_is_right();
}

/* The bytes of the folder's file `name` (free), *size their count. */
static unsigned char *read_whole(const char *dir, const char *name, size_t *size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    *size = (size_t)file_size(dir, name);
    unsigned char *bytes = malloc(*size);
    ck_assert_ptr_nonnull(bytes);
    ck_assert_uint_eq(fread(bytes, 1, *size, f), *size);
    fclose(f);
    return bytes;
}

/* An entry's key length (header bytes 16 to 24, little-endian). */
static size_t entry_key_len(const unsigned char *entry)
{
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | entry[16 + i];
    return (size_t)n;
}

/* Caches f32 add's program and exp's, each in a cold child, then stores through the cache's own
 * store, under the key of add's, the binary of exp's: an entry whose key and checksum are
 * right but whose binary is another program's. Its file's name into poisoned. */
static void poison_add_entry(const char *dir, char *poisoned)
{
    char names[8][64];
    size_t add_size, exp_size;
    ck_assert(add_in_children(1, only_f32));
    ck_assert_int_eq(list_files(dir, names, 8), 1);
    snprintf(poisoned, 64, "%s", names[0]);
    ck_assert(test_run_children(1, "exp_in_child", exp_in_child, ""));
    ck_assert_int_eq(list_files(dir, names, 8), 2);
    const char *exp_name = strcmp(names[0], poisoned) == 0 ? names[1] : names[0];
    unsigned char *add = read_whole(dir, poisoned, &add_size);
    unsigned char *ex = read_whole(dir, exp_name, &exp_size);
    size_t add_key = entry_key_len(add), exp_key = entry_key_len(ex);
    clt__cl_cache_store("test", (const char *)add + 40, add_key, ex + 40 + exp_key,
                        exp_size - 40 - exp_key);
    free(ex);
    free(add);
    ck_assert_int_eq(list_files(dir, names, 8), 2); /* replaced, under the same name */
}

/* An entry holding another program's binary under a right key and checksum: the program built
 * from it lacks the kernel the launch needs, so the entry is removed and the program built from
 * source, stored in its place. */
START_TEST(test_cache_poisoned_entry_rebuilt)
{
    static char log[16384];
    const char *dir = use_cache();
    char poisoned[64];
    size_t bad_size, new_size;
    if (!dir)
        return;
    poison_add_entry(dir, poisoned);
    long planted = clt__cl_cache_get_stats().stored;
    unsigned char *bad = read_whole(dir, poisoned, &bad_size);
    clt_set_log_callback(collect_log, log, CLT_LOG_DEBUG);
    ck_assert(add_is_right(CLT_F32));
    clt_set_log_callback(NULL, NULL, CLT_LOG_WARN);
    clt__cl_cache_stats s = clt__cl_cache_get_stats();
    ck_assert_int_eq(s.programs, 1);
    ck_assert_int_eq(s.rejected, 1);
    ck_assert_int_eq(s.hits, 0);
    ck_assert_int_eq(s.misses, 1);
    ck_assert_int_eq(s.stored, planted + 1);
    ck_assert_msg(strstr(log, "has no kernel ewc_add: another program's; removing it"), "log: %s", log);
    unsigned char *rebuilt = read_whole(dir, poisoned, &new_size);
    ck_assert(new_size != bad_size || memcmp(rebuilt, bad, bad_size) != 0);
    ck_assert_uint_eq(entry_key_len(rebuilt), entry_key_len(bad)); /* under the same key */
    ck_assert_mem_eq(rebuilt + 40, bad + 40, entry_key_len(bad));
    free(rebuilt);
    free(bad);
}
END_TEST

/* A kernel source in CLT_KERNEL_DIR that is no regular file (a folder, a FIFO): an I/O error
 * that names it and the function called, at once. */
START_TEST(test_cache_kernel_dir_irregular_file)
{
    char kernels[320], path[400], want[600];
    if (!use_pocl())
        return;
    snprintf(kernels, sizeof kernels, "%s", test_temp_dir());
    test_copy_kernels(kernels);
    snprintf(path, sizeof path, "%s/common.cl", kernels);
    ck_assert_int_eq(unlink(path), 0);
#ifdef _WIN32
    ck_assert_int_eq(mkdir(path, 0755), 0); /* (case 0 alone: no FIFOs on Windows) */
#else
    ck_assert_int_eq(_i == 0 ? mkdir(path, 0755) : mkfifo(path, 0600), 0);
#endif
    setenv("CLT_KERNEL_DIR", kernels, 1);
    clt_tensor *x = clt_tensor_full(CLT_SHAPE(4), 2.0, CLT_F32, clt_device_get("gpu:0"));
    ck_assert_ptr_null(x);
    ck_assert_int_eq(clt_last_status(), CLT_ERR_IO);
    snprintf(want, sizeof want,
             "clt_tensor_full: cannot read %s (CLT_KERNEL_DIR): not a regular file", path);
    ck_assert_str_eq(clt_last_error(), want);
}
END_TEST

Suite *suite_cache(void)
{
    Suite *s = suite_create("cache");
    TCase *tc = test_case("cache", 300);
    tcase_add_test(tc, test_cache_miss_then_hit);
    tcase_add_test(tc, test_cache_subdevices_hit);
    tcase_add_test(tc, test_cache_corrupt_entry_rebuilt);
    tcase_add_test(tc, test_cache_truncated_entry_rebuilt);
    tcase_add_test(tc, test_cache_foreign_entry_rejected);
#ifndef _WIN32 /* no FIFOs on Windows */
    tcase_add_test(tc, test_cache_fifo_entry_rejected);
#endif
    tcase_add_test(tc, test_cache_concurrent_builders);
    tcase_add_test(tc, test_cache_off_writes_nothing);
    tcase_add_test(tc, test_cache_default_folder);
    tcase_add_test(tc, test_cache_unwritable_folder);
    tcase_add_test(tc, test_cache_size_cap_evicts_oldest);
    tcase_add_test(tc, test_cache_info);
    tcase_add_test(tc, test_cache_driver_keeps_programs);
    tcase_add_test(tc, test_cache_warmup_builds_everything);
    tcase_add_test(tc, test_cache_poisoned_entry_rebuilt);
#ifdef _WIN32
    tcase_add_loop_test(tc, test_cache_kernel_dir_irregular_file, 0, 1); /* no FIFOs on Windows */
#else
    tcase_add_loop_test(tc, test_cache_kernel_dir_irregular_file, 0, 2);
#endif
    suite_add_tcase(s, tc);
    return s;
}
