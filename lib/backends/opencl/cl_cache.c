/* The disk cache of built OpenCL programs: one file per program binary, keyed by everything that
 * decides what a build produces (the complete source text, the build options, the platform's
 * name and version, the device's name, its driver version and this library's version). Entries
 * are written to a temporary file and renamed into place, checked in full before use (magic,
 * format version, the whole key, a checksum of the binary), and evicted least recently used
 * first (file mtime, touched on every hit) once the folder exceeds its size cap.
 *
 * Entry file "clt-<32 hex digits>.bin", the digits two independent 64-bit hashes of the key:
 *   0  magic "CLTPROG\0"           8 bytes
 *   8  format version (1)          u32, little-endian
 *  12  reserved (0)                u32
 *  16  key length                  u64
 *  24  binary length               u64
 *  32  FNV-1a 64 of the binary     u64
 *  40  the key, then the binary */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl_internal.h"
#include "core/core.h"
#include "platform/platform.h"

#define CLT__CACHE_MAGIC "CLTPROG"      /* with its terminating NUL: 8 bytes */
#define CLT__CACHE_FORMAT 1u
#define CLT__CACHE_HEADER 40
#define CLT__CACHE_DEFAULT_CAP (256ull << 20)
#define CLT__CACHE_MAX_ENTRY (1ull << 30) /* larger files are not entries of ours */
#define CLT__CACHE_NAME_LEN (4 + 32 + 4)  /* "clt-" hex ".bin" */

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool resolved;  /* CLT_CACHE_DIR and CLT_CACHE_SIZE were read */
    bool enabled;
    char dir[4096];
    uint64_t cap;   /* in bytes */
    clt__cl_cache_stats stats;
} cache;

static uint64_t fnv1a64(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* A second hash, independent of FNV-1a: a multiply-xorshift over the bytes and the length. */
static uint64_t mix64(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* "256M", "1G", "4096": bytes, or false for anything else. */
static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    if (!s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return false;
    int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20
                : *end == 'G' || *end == 'g' ? 30 : 0;
    if (shift)
        end++;
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

/* Whether an environment variable reads as true, as Mesa reads its switches. */
static bool env_true(const char *name)
{
    const char *v = getenv(name);
    return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "y") == 0 ||
                 strcmp(v, "yes") == 0);
}

/* The folder `tool` keeps under the user's cache folder into folder: `over` (an environment
 * variable naming it) when set, else the user's cache folder's `tool` (platform.h). Returns
 * snprintf's count, or -1 (folder "") when there is none. */
static int user_cache_folder(const char *over, const char *tool, char *folder, size_t size)
{
    const char *v = getenv(over);
    char base[4096];
    folder[0] = '\0';
    if (v && *v)
        return snprintf(folder, size, "%s", v);
    if (clt__user_cache_home(base, sizeof base) < 0 || strlen(base) >= sizeof base - 1)
        return -1;
    return snprintf(folder, size, "%s/%s", base, tool);
}

/* Reads CLT_CACHE_DIR and CLT_CACHE_SIZE once and creates the folder. Cache lock held. */
static void resolve(void)
{
    const char *dir = getenv("CLT_CACHE_DIR"), *size = getenv("CLT_CACHE_SIZE");
    int n;

    cache.resolved = true;
    cache.cap = CLT__CACHE_DEFAULT_CAP;
    if (size && *size && !parse_size(size, &cache.cap)) {
        clt__log(CLT_LOG_WARN, "CLT_CACHE_SIZE=%s is not a size (bytes, or with K, M or G): "
                 "using 256M", size);
        cache.cap = CLT__CACHE_DEFAULT_CAP;
    }
    if (dir && strcmp(dir, "off") == 0)
        return;
    n = user_cache_folder("CLT_CACHE_DIR", "cltensor", cache.dir, sizeof cache.dir);
    if (n < 0 || (size_t)n >= sizeof cache.dir - CLT__CACHE_NAME_LEN - 2) {
        if (n >= 0)
            clt__log(CLT_LOG_WARN, "the program cache's folder name is too long: cache off");
        cache.dir[0] = '\0';
        return;
    }
    if (!clt__make_dirs(cache.dir) || !clt__path_writable(cache.dir)) {
        clt__log(CLT_LOG_WARN, "program cache folder %s cannot be created or written (%s): "
                 "cache off", cache.dir, strerror(errno));
        return;
    }
    cache.enabled = true;
}

/* The cache's folder into dir (at least 4096 bytes), or false when the cache is off. */
static bool cache_dir(char *dir)
{
    bool on;
    pthread_mutex_lock(&cache_lock);
    if (!cache.resolved)
        resolve();
    on = cache.enabled;
    if (on)
        memcpy(dir, cache.dir, sizeof cache.dir);
    pthread_mutex_unlock(&cache_lock);
    return on;
}

static void entry_path(char *path, size_t size, const char *dir, const char *key, size_t len)
{
    snprintf(path, size, "%s/clt-%016llx%016llx.bin", dir, (unsigned long long)fnv1a64(key, len),
             (unsigned long long)mix64(key, len));
}

/* Whether a file name has the pattern of the cache's entries: only these are ever deleted. */
static bool entry_name(const char *name)
{
    if (strlen(name) != CLT__CACHE_NAME_LEN || strncmp(name, "clt-", 4) != 0 ||
        strcmp(name + 36, ".bin") != 0)
        return false;
    for (int i = 4; i < 36; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    return true;
}

clt_status clt__cl_cache_info(clt_cache_info *info)
{
    static const char *const fn = "clt_cache_get_info";
    char path[sizeof cache.dir + 64];
    const char *name;
    clt__dir *d;

    if (!info)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "info is NULL");
    pthread_mutex_lock(&cache_lock);
    if (!cache.resolved)
        resolve();
    /* cache.dir and the rest are fixed once resolved */
    *info = (clt_cache_info){.enabled = cache.enabled, .dir = cache.dir, .size_limit = cache.cap};
    pthread_mutex_unlock(&cache_lock);
    if (!info->enabled || !(d = clt__dir_open(info->dir)))
        return CLT_OK;
    while ((name = clt__dir_next(d)) != NULL) {
        clt__path_info pi;
        if (!entry_name(name))
            continue;
        snprintf(path, sizeof path, "%s/%.*s", info->dir, CLT__CACHE_NAME_LEN, name);
        if (clt__path_info_get(path, &pi) && pi.kind == CLT__PATH_FILE) {
            info->entries++;
            info->bytes += pi.size;
        }
    }
    clt__dir_close(d);
    return CLT_OK;
}

bool clt__cl_driver_cache(const clt_device *dev, char *folder, size_t size)
{
    const char *platform = dev->info.platform;
    if (strcmp(platform, "Portable Computing Language") == 0) {
        const char *on = getenv("POCL_KERNEL_CACHE");
        if (on && strcmp(on, "0") == 0)
            return false;
        if (user_cache_folder("POCL_CACHE_DIR", "pocl", folder, size) < 0)
            snprintf(folder, size, "(no folder: HOME unset)");
        return true;
    }
    if (strcmp(platform, "rusticl") == 0 || strcmp(platform, "Clover") == 0) {
        if (env_true("MESA_SHADER_CACHE_DISABLE") || env_true("MESA_GLSL_CACHE_DISABLE"))
            return false;
        if (user_cache_folder("MESA_SHADER_CACHE_DIR", "mesa_shader_cache", folder, size) < 0)
            snprintf(folder, size, "(no folder: HOME unset)");
        return true;
    }
    return false;
}

bool clt__cl_cache_folder(char *folder, size_t size)
{
    char dir[sizeof cache.dir];
    if (!cache_dir(dir))
        return false;
    snprintf(folder, size, "%s", dir);
    return true;
}

void clt__cl_cache_note(clt__cl_cache_event event)
{
    pthread_mutex_lock(&cache_lock);
    switch (event) {
    case CLT__CACHE_PROGRAM: cache.stats.programs++; break;
    case CLT__CACHE_HIT: cache.stats.hits++; break;
    case CLT__CACHE_MISS: cache.stats.misses++; break;
    case CLT__CACHE_REJECTED: cache.stats.rejected++; break;
    default: cache.stats.stored++; break;
    }
    pthread_mutex_unlock(&cache_lock);
}

clt__cl_cache_stats clt__cl_cache_get_stats(void)
{
    clt__cl_cache_stats s;
    pthread_mutex_lock(&cache_lock);
    s = cache.stats;
    pthread_mutex_unlock(&cache_lock);
    return s;
}

/* Appends "label=<length>:<bytes>\n" to the key under construction (or only measures it). */
static size_t key_field(char *key, size_t at, const char *label, const char *text, size_t len)
{
    char head[64];
    int n = snprintf(head, sizeof head, "%s=%zu:", label, len);
    if (key) {
        memcpy(key + at, head, (size_t)n);
        memcpy(key + at + n, text, len);
        key[at + n + len] = '\n';
    }
    return at + (size_t)n + len + 1;
}

char *clt__cl_cache_key(const char *fn, clt_device *dev, const char *options, int count,
                        const char *const *texts, const size_t *lens, size_t *key_len)
{
    char platform_version[256] = "";
    const clt_device_info *info = &dev->info;
    char *key = NULL;

    clGetPlatformInfo(clt__cl(dev)->platform, CL_PLATFORM_VERSION, sizeof platform_version - 1,
                      platform_version, NULL);
    platform_version[sizeof platform_version - 1] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        size_t at = 0;
#define FIELD(label, s) at = key_field(key, at, label, s, strlen(s))
        FIELD("cltensor", CLT_VERSION_STRING);
        FIELD("platform", info->platform);
        FIELD("platform_version", platform_version);
        FIELD("device", info->name);
        FIELD("driver", info->driver_version);
        FIELD("options", options);
#undef FIELD
        for (int i = 0; i < count; i++)
            at = key_field(key, at, "source", texts[i], lens[i]);
        if (pass == 0 && !(key = clt__alloc(fn, at)))
            return NULL;
        *key_len = at;
    }
    return key;
}

/* Counts and logs an entry found but not used. */
static void reject(const char *path, const char *why)
{
    clt__cl_cache_note(CLT__CACHE_REJECTED);
    clt__log(CLT_LOG_WARN, "program cache entry %s %s: building from source", path, why);
}

/* Reads (or, with writing, writes) exactly n bytes at the file's current position. */
static bool transfer_all(int fd, void *buf, size_t n, bool writing)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t done = writing ? write(fd, p, n) : read(fd, p, n);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0)
            return false;
        p += done, n -= (size_t)done;
    }
    return true;
}

/* Checks an open regular entry of `entry_size` bytes against the key; the binary (clt__free) on
 * success, NULL after rejecting it. */
static unsigned char *read_entry(const char *fn, int fd, uint64_t entry_size, const char *path,
                                 const char *key, size_t key_len, size_t *size)
{
    unsigned char head[CLT__CACHE_HEADER], *buf = NULL;
    uint64_t klen, blen;

    if (!transfer_all(fd, head, sizeof head, false))
        return reject(path, "is truncated (no complete header)"), NULL;
    if (memcmp(head, CLT__CACHE_MAGIC, 8) != 0)
        return reject(path, "is not a cltensor program cache entry (bad magic)"), NULL;
    if (get_u64(head + 8) != CLT__CACHE_FORMAT)
        return reject(path, "has another format version"), NULL;
    klen = get_u64(head + 16);
    blen = get_u64(head + 24);
    if (klen > CLT__CACHE_MAX_ENTRY || blen > CLT__CACHE_MAX_ENTRY || blen == 0 ||
        entry_size != CLT__CACHE_HEADER + klen + blen)
        return reject(path, "is truncated or has a bad length"), NULL;
    if (klen != key_len)
        return reject(path, "belongs to another key (foreign entry)"), NULL;
    if (!(buf = clt__alloc(fn, (size_t)(klen + blen))))
        return NULL;
    if (!transfer_all(fd, buf, (size_t)(klen + blen), false)) {
        clt__free(buf);
        return reject(path, "is truncated"), NULL;
    }
    if (memcmp(buf, key, key_len) != 0) {
        clt__free(buf);
        return reject(path, "belongs to another key (foreign entry)"), NULL;
    }
    if (fnv1a64(buf + klen, (size_t)blen) != get_u64(head + 32)) {
        clt__free(buf);
        return reject(path, "is corrupt (checksum mismatch)"), NULL;
    }
    memmove(buf, buf + klen, (size_t)blen);
    *size = (size_t)blen;
    return buf;
}

unsigned char *clt__cl_cache_load(const char *fn, const char *key, size_t key_len, size_t *size)
{
    char dir[sizeof cache.dir], path[sizeof cache.dir + 64];
    unsigned char *binary;
    int fd;

    if (!cache_dir(dir))
        return NULL;
    entry_path(path, sizeof path, dir, key, key_len);
    bool irregular;
    clt__path_info info;
    fd = clt__open_regular(path, &irregular, &info); /* a FIFO at the entry's name: no wait */
    if (fd < 0) {
        if (irregular || errno != ENOENT)
            reject(path, irregular ? "is not a regular file" : strerror(errno));
        return NULL;
    }
    binary = read_entry(fn, fd, info.size, path, key, key_len, size);
    close(fd);
    if (binary)
        clt__touch_file(path); /* most recently used: the last to be evicted */
    return binary;
}

void clt__cl_cache_remove(const char *key, size_t key_len)
{
    char dir[sizeof cache.dir], path[sizeof cache.dir + 64];
    if (!cache_dir(dir))
        return;
    entry_path(path, sizeof path, dir, key, key_len);
    if (clt__remove_file(path) == 0)
        clt__log(CLT_LOG_DEBUG, "program cache: removed %s", path);
}

typedef struct entry_file {
    int64_t used; /* mtime, ns */
    uint64_t size;
    char name[CLT__CACHE_NAME_LEN + 1];
} entry_file;

static int older_first(const void *a, const void *b)
{
    const entry_file *x = a, *y = b;
    if (x->used != y->used)
        return x->used < y->used ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Deletes the least recently used entries until those left fit under the cap. */
static void evict(const char *fn, const char *dir, uint64_t cap)
{
    clt__dir *d = clt__dir_open(dir);
    entry_file *files = NULL;
    size_t count = 0, room = 0;
    uint64_t total = 0;
    const char *name;
    char path[sizeof cache.dir + 64];

    if (!d)
        return;
    while ((name = clt__dir_next(d)) != NULL) {
        clt__path_info pi;
        if (!entry_name(name))
            continue;
        snprintf(path, sizeof path, "%s/%.*s", dir, CLT__CACHE_NAME_LEN, name);
        if (!clt__path_info_get(path, &pi) || pi.kind != CLT__PATH_FILE)
            continue;
        if (count == room) {
            size_t grown = room ? room * 2 : 64;
            entry_file *more = clt__alloc(fn, grown * sizeof *more);
            if (!more)
                break;
            if (count)
                memcpy(more, files, count * sizeof *files);
            clt__free(files);
            files = more, room = grown;
        }
        files[count].used = pi.mtime_ns;
        files[count].size = pi.size;
        memcpy(files[count].name, name, sizeof files[count].name);
        total += files[count++].size;
    }
    clt__dir_close(d);
    if (total > cap && count > 0)
        qsort(files, count, sizeof *files, older_first);
    for (size_t i = 0; i < count && total > cap; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        if (clt__remove_file(path) == 0 || errno == ENOENT)
            total -= files[i].size;
        clt__log(CLT_LOG_DEBUG, "program cache: evicted %s", path);
    }
    clt__free(files);
}

void clt__cl_cache_store(const char *fn, const char *key, size_t key_len,
                         const unsigned char *binary, size_t size)
{
    char dir[sizeof cache.dir], path[sizeof cache.dir + 64], tmp[sizeof cache.dir + 64];
    unsigned char head[CLT__CACHE_HEADER] = CLT__CACHE_MAGIC;
    uint64_t cap;
    int fd;

    if (size == 0 || !cache_dir(dir))
        return;
    put_u64(head + 8, CLT__CACHE_FORMAT);
    put_u64(head + 16, key_len);
    put_u64(head + 24, size);
    put_u64(head + 32, fnv1a64(binary, size));
    entry_path(path, sizeof path, dir, key, key_len);
    snprintf(tmp, sizeof tmp, "%s/.clt-tmp-XXXXXX", dir);
    fd = clt__create_temp(tmp, true);
    if (fd < 0) {
        pthread_mutex_lock(&cache_lock);
        bool first = cache.enabled;
        cache.enabled = false;
        pthread_mutex_unlock(&cache_lock);
        if (first)
            clt__log(CLT_LOG_WARN, "program cache folder %s cannot be written (%s): cache off",
                     dir, strerror(errno));
        return;
    }
    bool ok = transfer_all(fd, head, sizeof head, true) &&
              transfer_all(fd, (void *)key, key_len, true) &&
              transfer_all(fd, (void *)binary, size, true);
    ok = close(fd) == 0 && ok;
    if (!ok || clt__replace_file(tmp, path) != 0) {
        clt__log(CLT_LOG_WARN, "program cache: writing %s failed (%s)", path, strerror(errno));
        clt__remove_file(tmp);
        return;
    }
    clt__cl_cache_note(CLT__CACHE_STORED);
    pthread_mutex_lock(&cache_lock);
    cap = cache.cap;
    evict(fn, dir, cap);
    pthread_mutex_unlock(&cache_lock);
}
