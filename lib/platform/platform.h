/* What differs between operating systems, behind one small interface: files opened by a
 * caller's path, atomic replacement, temporary files, folders, the user's cache folder, shared
 * libraries loaded at run time, and what the machine has (processors, memory, a monotonic
 * clock). posix.c implements it for Linux, macOS and the BSDs, windows.c for Windows; CMake
 * compiles the one for the target. Nothing else in lib/ calls an operating system's API for
 * these (tests/layers_check.sh); threads are POSIX threads everywhere (winpthreads on
 * MinGW-w64).
 *
 * Paths are UTF-8 on every system (wide-character calls on Windows, where '/' and '\' both
 * separate folders). Files are C runtime descriptors, read and written with read/write/close
 * (<unistd.h>, which MinGW-w64 has too). Functions that fail return -1 / false / NULL with errno
 * set. */
#ifndef CLT_PLATFORM_H
#define CLT_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What clt__path_info tells of a path. */
typedef enum clt__path_kind { CLT__PATH_OTHER, CLT__PATH_FILE, CLT__PATH_DIR } clt__path_kind;
typedef struct clt__path_info {
    clt__path_kind kind;
    uint64_t size;
    int64_t mtime_ns; /* last modification, nanoseconds since 1970 */
} clt__path_info;

/* Opens an existing regular file for reading (close-on-exec, never as a controlling terminal)
 * without blocking on a FIFO or a device: the descriptor, with its size and time in *info, or -1
 * with errno set; *irregular tells whether the path opened but is no regular file. */
int clt__open_regular(const char *path, bool *irregular, clt__path_info *info);
/* Creates and opens for writing a new file named `path`, whose last six characters, "XXXXXX",
 * it replaces with random ones: never an existing file or a link's target. Readable by the user
 * alone when `private`, else as the umask allows. The descriptor, or -1 with errno set. */
int clt__create_temp(char *path, bool private);
/* Renames `from` to `to` in one step, replacing a file at `to`: a reader sees the old file or
 * the new one, never a part. 0 or -1. */
int clt__replace_file(const char *from, const char *to);
/* Removes a file (not a folder). 0 or -1. */
int clt__remove_file(const char *path);
/* The kind, size and time of `path` itself (a link is CLT__PATH_OTHER, not its target). */
bool clt__path_info_get(const char *path, clt__path_info *info);
/* Whether files can be created in the folder `path`. */
bool clt__path_writable(const char *path);
/* Sets a file's modification time to now. */
void clt__touch_file(const char *path);
/* Creates `path` and the folders above it that are missing: true when it is a folder
 * afterwards. */
bool clt__make_dirs(const char *path);

/* What separates the folders of a list in one environment variable (CLT_KERNEL_DIR): ':' as in
 * PATH on POSIX, ';' on Windows (where ':' follows a drive letter). */
#ifdef _WIN32
#define CLT__PATH_LIST_SEP ';'
#else
#define CLT__PATH_LIST_SEP ':'
#endif

/* The names in a folder, "." and ".." left out. */
typedef struct clt__dir clt__dir;
clt__dir *clt__dir_open(const char *path);
const char *clt__dir_next(clt__dir *d); /* NULL at the end; valid until the next call */
void clt__dir_close(clt__dir *d);

/* The folder where per-user caches go: $XDG_CACHE_HOME, else $HOME/.cache (POSIX);
 * %LOCALAPPDATA% (Windows). Returns snprintf's count, or -1 (folder "") when there is none. */
int clt__user_cache_home(char *folder, size_t size);

/* Shared libraries, loaded at run time ("libOpenCL.so.1", "OpenCL.dll", or a path): the handle,
 * or NULL with the system's reason in why. */
void *clt__library_open(const char *name, char *why, size_t why_size);
void *clt__library_symbol(void *lib, const char *name);
void clt__library_close(void *lib);
/* The symbols the process has already (the program's, its libraries', LD_PRELOAD's), as a
 * library for clt__library_symbol; NULL where the system has no such thing (Windows). */
void *clt__library_process(void);
/* Whether a library of that name is loaded in this process already. */
bool clt__library_loaded(const char *name);

/* Memory aligned to `alignment` (a power of two, at least sizeof(void *)), freed with
 * clt__aligned_free: NULL when there is none. */
void *clt__aligned_alloc(size_t size, size_t alignment);
void clt__aligned_free(void *p);

/* The processors this process may run on (at least 1). */
int clt__cpu_count(void);
/* The machine's memory in bytes (0: unknown). */
uint64_t clt__memory_bytes(void);
/* The size of a core's L2 cache in bytes (0: unknown). */
long clt__l2_cache_bytes(void);
/* The processor's vendor and model names, where the system says ("unknown" otherwise). */
void clt__cpu_names(char *model, size_t size, char *vendor, size_t vendor_size);
/* Scheduling classes of this process's threads, where the system has them (Linux's SCHED_OTHER
 * and SCHED_BATCH; elsewhere every thread is CLT__SCHED_UNKNOWN and setting fails). A thread is
 * the calling one (tid 0) or one of clt__thread_ids. */
typedef enum clt__sched_class {
    CLT__SCHED_NORMAL,
    CLT__SCHED_BATCH,
    CLT__SCHED_UNKNOWN /* another class, or none to tell */
} clt__sched_class;
clt__sched_class clt__sched_get(int tid);
bool clt__sched_set(int tid, clt__sched_class c);
/* The ids of this process's threads, into a new array (free() it): their count, 0 where the
 * system does not list them. */
int clt__thread_ids(int **tids);
/* A monotonic clock in nanoseconds. */
uint64_t clt__monotonic_ns(void);
/* Runs fn in the child after fork() (where there is fork). */
void clt__at_fork_child(void (*fn)(void));

#endif
