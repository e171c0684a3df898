/* The platform layer on POSIX systems (Linux, macOS, the BSDs): see platform.h. */
#define _GNU_SOURCE /* sched_getaffinity, O_NOFOLLOW and getrandom on glibc */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/random.h>
#endif

#include "platform.h"

static int64_t mtime_ns(const struct stat *sb)
{
#if defined(__APPLE__)
    return (int64_t)sb->st_mtimespec.tv_sec * 1000000000 + sb->st_mtimespec.tv_nsec;
#else
    return (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
#endif
}

static void info_of(const struct stat *sb, clt__path_info *info)
{
    info->kind = S_ISREG(sb->st_mode)   ? CLT__PATH_FILE
                 : S_ISDIR(sb->st_mode) ? CLT__PATH_DIR
                                        : CLT__PATH_OTHER;
    info->size = (uint64_t)sb->st_size;
    info->mtime_ns = mtime_ns(sb);
}

int clt__open_regular(const char *path, bool *irregular, clt__path_info *info)
{
    /* O_NONBLOCK: a FIFO opens at once; O_NOCTTY: a terminal never becomes ours */
    int flags, fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat sb;
    *irregular = false;
    if (fd < 0)
        return -1;
    bool known = fstat(fd, &sb) == 0;
    if (!known || !S_ISREG(sb.st_mode)) {
        int err = known ? EINVAL : errno;
        *irregular = known;
        close(fd);
        errno = err;
        return -1;
    }
    info_of(&sb, info);
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* 64 random bits, from the system's entropy where it has some yet. */
static uint64_t random_bits(int attempt)
{
    uint64_t r = 0;
#if defined(__linux__)
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
#elif defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
    arc4random_buf(&r, sizeof r);
    return r;
#endif
    struct timespec ts; /* no entropy yet (early boot): O_EXCL still makes it safe */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^
           (uint64_t)attempt * 0x9e3779b97f4a7c15u;
}

int clt__create_temp(char *path, bool private)
{
    static const char letters[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    size_t len = strlen(path);
    if (len < 6 || strcmp(path + len - 6, "XXXXXX") != 0) {
        errno = EINVAL;
        return -1;
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        uint64_t r = random_bits(attempt);
        for (int i = 0; i < 6; i++, r /= 62)
            path[len - 6 + i] = letters[r % 62];
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      private ? 0600 : 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

int clt__replace_file(const char *from, const char *to)
{
    return rename(from, to);
}

int clt__remove_file(const char *path)
{
    return unlink(path);
}

bool clt__path_info_get(const char *path, clt__path_info *info)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return false;
    info_of(&sb, info);
    return true;
}

bool clt__path_writable(const char *path)
{
    return access(path, W_OK | X_OK) == 0;
}

void clt__touch_file(const char *path)
{
    utimensat(AT_FDCWD, path, NULL, 0);
}

bool clt__make_dirs(const char *path)
{
    char buf[4096];
    struct stat sb;
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return false;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        bool ok = mkdir(buf, 0755) == 0 || errno == EEXIST;
        *p = '/';
        if (!ok)
            return false;
    }
    return (mkdir(buf, 0755) == 0 || errno == EEXIST) && stat(buf, &sb) == 0 &&
           S_ISDIR(sb.st_mode);
}

struct clt__dir {
    DIR *d;
};

clt__dir *clt__dir_open(const char *path)
{
    clt__dir *d = malloc(sizeof *d);
    if (d && !(d->d = opendir(path))) {
        free(d);
        d = NULL;
    }
    return d;
}

const char *clt__dir_next(clt__dir *d)
{
    struct dirent *e;
    while ((e = readdir(d->d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            return e->d_name;
    return NULL;
}

void clt__dir_close(clt__dir *d)
{
    if (d) {
        closedir(d->d);
        free(d);
    }
}

int clt__user_cache_home(char *folder, size_t size)
{
    const char *base;
    folder[0] = '\0';
    if ((base = getenv("XDG_CACHE_HOME")) && *base)
        return snprintf(folder, size, "%s", base);
    if ((base = getenv("HOME")) && *base)
        return snprintf(folder, size, "%s/.cache", base);
    return -1;
}

void *clt__library_open(const char *name, char *why, size_t why_size)
{
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s", e ? e : "cannot be loaded");
    }
    return h;
}

void *clt__library_symbol(void *lib, const char *name)
{
    return dlsym(lib, name);
}

void clt__library_close(void *lib)
{
    if (lib)
        dlclose(lib);
}

void *clt__library_process(void)
{
    return dlopen(NULL, RTLD_NOW);
}

bool clt__library_loaded(const char *name)
{
    void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (h)
        dlclose(h); /* NOLOAD took a reference */
    return h != NULL;
}

void *clt__aligned_alloc(size_t size, size_t alignment)
{
    void *p = NULL;
    return posix_memalign(&p, alignment, size ? size : 1) == 0 ? p : NULL;
}

void clt__aligned_free(void *p)
{
    free(p);
}

int clt__cpu_count(void)
{
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

uint64_t clt__memory_bytes(void)
{
#if defined(_SC_PHYS_PAGES)
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        return (uint64_t)pages * (uint64_t)page;
#endif
    return 0;
}

long clt__l2_cache_bytes(void)
{
#if defined(_SC_LEVEL2_CACHE_SIZE)
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? l2 : 0;
#else
    return 0;
#endif
}

void clt__cpu_names(char *model, size_t size, char *vendor, size_t vendor_size)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(model, size, "host processor");
    snprintf(vendor, vendor_size, "unknown");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *value = colon + 1 + strspn(colon + 1, " \t");
        value[strcspn(value, "\n")] = '\0';
        if (strncmp(line, "model name", 10) == 0)
            snprintf(model, size, "%s", value);
        else if (strncmp(line, "vendor_id", 9) == 0)
            snprintf(vendor, vendor_size, "%s", value);
    }
    fclose(f);
}

#if defined(__linux__)
clt__sched_class clt__sched_get(int tid)
{
    int policy = sched_getscheduler(tid);
    return policy == SCHED_OTHER   ? CLT__SCHED_NORMAL
           : policy == SCHED_BATCH ? CLT__SCHED_BATCH
                                   : CLT__SCHED_UNKNOWN;
}

bool clt__sched_set(int tid, clt__sched_class c)
{
    struct sched_param none = {0};
    if (c == CLT__SCHED_UNKNOWN)
        return false;
    return sched_setscheduler(tid, c == CLT__SCHED_BATCH ? SCHED_BATCH : SCHED_OTHER, &none) ==
           0;
}

int clt__thread_ids(int **tids)
{
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;
    int count = 0, room = 0;
    *tids = NULL;
    while (dir && (e = readdir(dir))) {
        if (e->d_name[0] == '.')
            continue;
        if (count == room) {
            int *more = realloc(*tids, (size_t)(room = room ? 2 * room : 64) * sizeof *more);
            if (!more)
                break;
            *tids = more;
        }
        (*tids)[count++] = atoi(e->d_name);
    }
    if (dir)
        closedir(dir);
    return count;
}
#else
clt__sched_class clt__sched_get(int tid)
{
    (void)tid;
    return CLT__SCHED_UNKNOWN;
}

bool clt__sched_set(int tid, clt__sched_class c)
{
    (void)tid, (void)c;
    return false;
}

int clt__thread_ids(int **tids)
{
    *tids = NULL;
    return 0;
}
#endif

uint64_t clt__monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void clt__at_fork_child(void (*fn)(void))
{
    pthread_atfork(NULL, NULL, fn);
}
