/* The platform layer on Windows: see platform.h. Paths arrive as UTF-8 and go to the
 * wide-character calls; descriptors are the C runtime's (_wopen, _read, _write, _close). */
#define WIN32_LEAN_AND_MEAN
#define _CRT_RAND_S /* rand_s: the system's random numbers */
#include <windows.h>

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <wchar.h>

#include "platform.h"

/* A UTF-8 string as a new wide one (free it), or NULL with errno set. */
static wchar_t *wide(const char *s)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    wchar_t *w = n > 0 ? malloc((size_t)n * sizeof *w) : NULL;
    if (!w || MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n) != n) {
        free(w);
        errno = n > 0 ? ENOMEM : EINVAL;
        return NULL;
    }
    return w;
}

/* A wide string as UTF-8 into buf: its length, or -1 (buf "" where it has room) when it does
 * not convert or does not fit. */
static int narrow(const wchar_t *w, char *buf, size_t size)
{
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
    if (n <= 0 || (size_t)n > size) {
        if (size)
            buf[0] = '\0';
        return -1;
    }
    WideCharToMultiByte(CP_UTF8, 0, w, -1, buf, n, NULL, NULL);
    return n - 1;
}

/* errno for the thread's last Windows error. */
static void set_errno_from_windows(void)
{
    switch (GetLastError()) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_NAME: errno = ENOENT; break;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION: errno = EACCES; break;
    case ERROR_FILE_EXISTS:
    case ERROR_ALREADY_EXISTS: errno = EEXIST; break;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY: errno = ENOMEM; break;
    case ERROR_DISK_FULL: errno = ENOSPC; break;
    default: errno = EIO; break;
    }
}

static int64_t filetime_ns(FILETIME t)
{
    /* 100-nanosecond ticks since 1601 */
    int64_t ticks = (int64_t)(((uint64_t)t.dwHighDateTime << 32) | t.dwLowDateTime);
    return (ticks - 116444736000000000LL) * 100;
}

static void info_of(const BY_HANDLE_FILE_INFORMATION *bh, DWORD type, clt__path_info *info)
{
    info->kind = type != FILE_TYPE_DISK                                  ? CLT__PATH_OTHER
                 : (bh->dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)     ? CLT__PATH_DIR
                 : (bh->dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) ? CLT__PATH_OTHER
                                                                         : CLT__PATH_FILE;
    info->size = ((uint64_t)bh->nFileSizeHigh << 32) | bh->nFileSizeLow;
    info->mtime_ns = filetime_ns(bh->ftLastWriteTime);
}

int clt__open_regular(const char *path, bool *irregular, clt__path_info *info)
{
    *irregular = false;
    wchar_t *w = wide(path);
    if (!w)
        return -1;
    /* CreateFileW, not _wopen: a named pipe or a device does not block it, and the handle's type
     * says what it is before anything is read */
    HANDLE h =
        CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                    NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
    free(w);
    if (h == INVALID_HANDLE_VALUE) {
        set_errno_from_windows();
        return -1;
    }
    BY_HANDLE_FILE_INFORMATION bh;
    DWORD type = GetFileType(h);
    if (!GetFileInformationByHandle(h, &bh)) {
        memset(&bh, 0, sizeof bh);
        type = FILE_TYPE_UNKNOWN;
    }
    info_of(&bh, type, info);
    if (info->kind != CLT__PATH_FILE) {
        *irregular = true;
        CloseHandle(h);
        errno = EINVAL;
        return -1;
    }
    int fd = _open_osfhandle((intptr_t)h, _O_RDONLY | _O_BINARY);
    if (fd < 0)
        CloseHandle(h);
    return fd;
}

int clt__create_temp(char *path, bool private)
{
    static const char letters[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    size_t len = strlen(path);
    (void)private; /* a new file has the folder's permissions: a user's own folder is private */
    if (len < 6 || strcmp(path + len - 6, "XXXXXX") != 0) {
        errno = EINVAL;
        return -1;
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned int parts[2];
        if (rand_s(&parts[0]) != 0 || rand_s(&parts[1]) != 0) {
            errno = EIO;
            return -1;
        }
        uint64_t r = ((uint64_t)parts[0] << 32) | parts[1];
        for (int i = 0; i < 6; i++, r /= 62)
            path[len - 6 + i] = letters[r % 62];
        wchar_t *w = wide(path);
        if (!w)
            return -1;
        /* CREATE_NEW: never an existing file, nor through a link (a link is an existing name) */
        HANDLE h =
            CreateFileW(w, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
        free(w);
        if (h != INVALID_HANDLE_VALUE) {
            int fd = _open_osfhandle((intptr_t)h, _O_WRONLY | _O_BINARY);
            if (fd < 0)
                CloseHandle(h);
            return fd;
        }
        set_errno_from_windows();
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

int clt__replace_file(const char *from, const char *to)
{
    wchar_t *f = wide(from), *t = f ? wide(to) : NULL;
    BOOL ok = f && t && MoveFileExW(f, t, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH);
    if (f && t && !ok)
        set_errno_from_windows();
    free(f);
    free(t);
    return ok ? 0 : -1;
}

int clt__remove_file(const char *path)
{
    wchar_t *w = wide(path);
    BOOL ok = w && DeleteFileW(w);
    if (w && !ok)
        set_errno_from_windows();
    free(w);
    return ok ? 0 : -1;
}

bool clt__path_info_get(const char *path, clt__path_info *info)
{
    WIN32_FILE_ATTRIBUTE_DATA a;
    wchar_t *w = wide(path);
    BOOL ok = w && GetFileAttributesExW(w, GetFileExInfoStandard, &a);
    if (w && !ok)
        set_errno_from_windows();
    free(w);
    if (!ok)
        return false;
    info->kind = (a.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) ? CLT__PATH_OTHER
                 : (a.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)   ? CLT__PATH_DIR
                                                                     : CLT__PATH_FILE;
    info->size = ((uint64_t)a.nFileSizeHigh << 32) | a.nFileSizeLow;
    info->mtime_ns = filetime_ns(a.ftLastWriteTime);
    return true;
}

bool clt__path_writable(const char *path)
{
    wchar_t *w = wide(path);
    bool ok = w && _waccess(w, 2) == 0;
    free(w);
    return ok;
}

void clt__touch_file(const char *path)
{
    wchar_t *w = wide(path);
    HANDLE h = w ? CreateFileW(w, FILE_WRITE_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE,
                               NULL, OPEN_EXISTING, 0, NULL)
                 : INVALID_HANDLE_VALUE;
    free(w);
    if (h == INVALID_HANDLE_VALUE)
        return;
    FILETIME now;
    GetSystemTimeAsFileTime(&now);
    SetFileTime(h, NULL, NULL, &now);
    CloseHandle(h);
}

/* One folder: true when it exists afterwards. */
static bool make_dir(const char *path)
{
    wchar_t *w = wide(path);
    if (!w)
        return false;
    bool ok = CreateDirectoryW(w, NULL) || GetLastError() == ERROR_ALREADY_EXISTS;
    DWORD attrs = GetFileAttributesW(w);
    free(w);
    return ok && attrs != INVALID_FILE_ATTRIBUTES && (attrs & FILE_ATTRIBUTE_DIRECTORY);
}

bool clt__make_dirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return false;
    }
    /* past a drive ("C:\") or a share's name ("\\server\share\") */
    char *p = buf + (buf[0] && buf[1] == ':' ? 3 : 1);
    for (; *p; p++) {
        if (*p != '/' && *p != '\\')
            continue;
        char sep = *p;
        *p = '\0';
        make_dir(buf); /* a share's own parts cannot be made: only the last answer counts */
        *p = sep;
    }
    if (!make_dir(buf)) {
        errno = EACCES;
        return false;
    }
    return true;
}

struct clt__dir {
    HANDLE find;
    bool first; /* the entry FindFirstFileW gave is not yet returned */
    WIN32_FIND_DATAW data;
    char name[MAX_PATH * 3];
};

clt__dir *clt__dir_open(const char *path)
{
    size_t len = strlen(path);
    char *pattern = malloc(len + 3);
    clt__dir *d = calloc(1, sizeof *d);
    wchar_t *w = NULL;
    if (pattern && d) {
        memcpy(pattern, path, len);
        memcpy(pattern + len, "/*", 3);
        w = wide(pattern);
    }
    free(pattern);
    d = d && w ? d : (free(d), NULL);
    if (d) {
        d->find = FindFirstFileW(w, &d->data);
        d->first = true;
        if (d->find == INVALID_HANDLE_VALUE) {
            set_errno_from_windows();
            free(d);
            d = NULL;
        }
    }
    free(w);
    return d;
}

const char *clt__dir_next(clt__dir *d)
{
    for (;;) {
        if (!d->first && !FindNextFileW(d->find, &d->data))
            return NULL;
        d->first = false;
        if (wcscmp(d->data.cFileName, L".") == 0 || wcscmp(d->data.cFileName, L"..") == 0)
            continue;
        if (narrow(d->data.cFileName, d->name, sizeof d->name) >= 0)
            return d->name;
    }
}

void clt__dir_close(clt__dir *d)
{
    if (d) {
        FindClose(d->find);
        free(d);
    }
}

int clt__user_cache_home(char *folder, size_t size)
{
    const wchar_t *base = _wgetenv(L"LOCALAPPDATA");
    folder[0] = '\0';
    if (!base || !*base)
        return -1;
    return narrow(base, folder, size);
}

void *clt__library_open(const char *name, char *why, size_t why_size)
{
    wchar_t *w = wide(name);
    /* a bare name: Windows' standard search (the program's folder, the system's, then PATH);
     * a path: that file, with the libraries it needs found beside it */
    HMODULE h =
        w ? LoadLibraryExW(w, NULL, strpbrk(name, "/\\") ? LOAD_WITH_ALTERED_SEARCH_PATH : 0)
          : NULL;
    DWORD err = GetLastError();
    free(w);
    if (!h) {
        char msg[256] = "";
        FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, err, 0,
                       msg, sizeof msg, NULL);
        msg[strcspn(msg, "\r\n")] = '\0';
        snprintf(why, why_size, "%s: %s (error %lu)", name, *msg ? msg : "cannot be loaded",
                 (unsigned long)err);
    }
    return (void *)h;
}

void *clt__library_symbol(void *lib, const char *name)
{
    return (void *)(uintptr_t)GetProcAddress((HMODULE)lib, name);
}

void clt__library_close(void *lib)
{
    if (lib)
        FreeLibrary((HMODULE)lib);
}

void *clt__library_process(void)
{
    return NULL; /* a DLL's functions are found by naming the DLL */
}

bool clt__library_loaded(const char *name)
{
    wchar_t *w = wide(name);
    bool loaded = w && GetModuleHandleW(w) != NULL;
    free(w);
    return loaded;
}

void *clt__aligned_alloc(size_t size, size_t alignment)
{
    return _aligned_malloc(size ? size : 1, alignment);
}

void clt__aligned_free(void *p)
{
    _aligned_free(p);
}

int clt__cpu_count(void)
{
    DWORD_PTR process, system;
    if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system) && process) {
        int n = 0;
        for (; process; process &= process - 1)
            n++;
        return n;
    }
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwNumberOfProcessors > 0 ? (int)si.dwNumberOfProcessors : 1;
}

uint64_t clt__memory_bytes(void)
{
    MEMORYSTATUSEX m = {.dwLength = sizeof m};
    return GlobalMemoryStatusEx(&m) ? (uint64_t)m.ullTotalPhys : 0;
}

long clt__l2_cache_bytes(void)
{
    SYSTEM_LOGICAL_PROCESSOR_INFORMATION buf[256];
    DWORD len = sizeof buf;
    if (!GetLogicalProcessorInformation(buf, &len))
        return 0;
    for (DWORD i = 0; i < len / sizeof *buf; i++)
        if (buf[i].Relationship == RelationCache && buf[i].Cache.Level == 2)
            return (long)buf[i].Cache.Size;
    return 0;
}

/* A string value under the first processor's key in the registry into out, which keeps what it
 * held where there is none. */
static void processor_string(const wchar_t *value, char *out, size_t size)
{
    wchar_t data[256];
    char text[768];
    DWORD len = sizeof data - sizeof *data;
    if (RegGetValueW(HKEY_LOCAL_MACHINE, L"HARDWARE\\DESCRIPTION\\System\\CentralProcessor\\0",
                     value, RRF_RT_REG_SZ, NULL, data, &len) != ERROR_SUCCESS)
        return;
    data[len / sizeof *data] = L'\0';
    if (narrow(data, text, sizeof text) > 0)
        snprintf(out, size, "%s", text);
}

void clt__cpu_names(char *model, size_t size, char *vendor, size_t vendor_size)
{
    snprintf(model, size, "host processor");
    snprintf(vendor, vendor_size, "unknown");
    processor_string(L"ProcessorNameString", model, size);
    processor_string(L"VendorIdentifier", vendor, vendor_size);
}

clt__sched_class clt__sched_get(int tid)
{
    (void)tid; /* Windows has no scheduling classes of this kind */
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

uint64_t clt__monotonic_ns(void)
{
    LARGE_INTEGER freq, now; /* the frequency is fixed at boot */
    QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&now);
    uint64_t s = (uint64_t)now.QuadPart / (uint64_t)freq.QuadPart;
    uint64_t rest = (uint64_t)now.QuadPart % (uint64_t)freq.QuadPart;
    return s * 1000000000u + rest * 1000000000u / (uint64_t)freq.QuadPart;
}

void clt__at_fork_child(void (*fn)(void))
{
    (void)fn; /* no fork on Windows */
}
