/* The OpenCL backend's programs: the sources of cl/ (embedded in the library, or read from the
 * folders CLT_KERNEL_DIR lists), built per (device, program, options) the first time a device
 * needs them, a program being one part of a file (clt__cl_program), from the disk cache's binary
 * when that cache is in use and has one whose program holds the kernel asked for (cl_cache.c),
 * else from source, and kept in memory in the device's list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl_internal.h"
#include "cl_sources.h"
#include "core/core.h"
#include "platform/platform.h"

#define CLT__PRELUDE_COUNT 2 /* common.cl and scalar.cl come before every program */

/* Reads the open source file fd (closed here) of size bytes into a new NUL-terminated
 * buffer. */
static clt_status read_source(const char *fn, const char *path, int fd, size_t size, char **out)
{
    FILE *f = fdopen(fd, "rb");
    char *buf = f ? clt__alloc(fn, size + 1) : NULL;
    bool whole = buf && fread(buf, 1, size, f) == size;
    if (f)
        fclose(f);
    else
        close(fd);
    if (!whole) {
        clt__free(buf);
        return f && !buf ? CLT_ERR_OUT_OF_MEMORY
                         : clt__error(CLT_ERR_IO, fn, "cannot read %s", path);
    }
    buf[size] = '\0';
    *out = buf;
    return CLT_OK;
}

clt_status clt__cl_source_text(const char *fn, const char *name, const char **text,
                               size_t *len, char **owned)
{
    const char *dir = getenv("CLT_KERNEL_DIR");
    *owned = NULL;
    if (!dir || !*dir) {
        for (size_t i = 0; i < clt__cl_source_count; i++) {
            if (strcmp(clt__cl_sources[i].name, name) == 0) {
                *text = clt__cl_sources[i].text;
                *len = clt__cl_sources[i].length;
                return CLT_OK;
            }
        }
        return clt__error(CLT_ERR_INTERNAL, fn, "no kernel source named %s.cl", name);
    }

    /* a list of folders, separated by CLT__PATH_LIST_SEP (':', ';' on Windows), searched in
     * order; a name that is no regular file (a folder, a FIFO) stops the search */
    char path[4096];
    clt__path_info info;
    bool irregular = false;
    int fd = -1;
    for (const char *p = dir; fd < 0 && !irregular && *p;) {
        const char sep[2] = {CLT__PATH_LIST_SEP, '\0'};
        size_t part = strcspn(p, sep);
        snprintf(path, sizeof path, "%.*s/%s.cl", (int)part, p, name);
        fd = part ? clt__open_regular(path, &irregular, &info) : -1;
        p += part + (p[part] == CLT__PATH_LIST_SEP);
    }
    if (irregular)
        return clt__error(CLT_ERR_IO, fn, "cannot read %s (CLT_KERNEL_DIR): not a regular file",
                          path);
    if (fd < 0)
        return clt__error(CLT_ERR_IO, fn, "cannot open %s.cl in CLT_KERNEL_DIR (%s)", name, dir);
    clt_status st = read_source(fn, path, fd, (size_t)info.size, owned);
    *text = *owned;
    *len = (size_t)info.size;
    return st;
}

/* Appends the compiler's log for a failed build to the last error. */
static void append_build_log(cl_program program, cl_device_id id)
{
    char log[6144];
    size_t size = 0;
    log[0] = '\0';
    if (clGetProgramBuildInfo(program, id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &size) !=
        CL_SUCCESS) {
        /* a log longer than the buffer: take its start */
        char *all = NULL;
        if (clGetProgramBuildInfo(program, id, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) ==
                CL_SUCCESS &&
            (all = malloc(size + 1)) &&
            clGetProgramBuildInfo(program, id, CL_PROGRAM_BUILD_LOG, size, all, NULL) ==
                CL_SUCCESS) {
            all[size] = '\0';
            snprintf(log, sizeof log, "%s", all);
        }
        free(all);
    }
    log[sizeof log - 1] = '\0';
    clt__error_append("\nbuild log:\n");
    clt__error_append(log);
}

/* The sources of a program from file cl/<file>.cl: the prelude, then what the file needs first. */
static int program_sources(const char *file, const char **names)
{
    int n = 0;
    names[n++] = "common";
    names[n++] = "scalar";
    if (strcmp(file, "elementwise") == 0)
        names[n++] = "elementwise_ops";
    if (strcmp(file, "optim") == 0)
        names[n++] = "optim_step";
    else if (strcmp(file, "nn") == 0)
        names[n++] = "window";
    else if (strcmp(file, "rows") == 0)
        names[n++] = "sort_scan";
    names[n++] = file;
    return n;
}

/* The program built from a cache entry's binary, or NULL (logged, counted as rejected) when the
 * driver refuses the binary or its build fails. */
static cl_program build_binary(clt_device *dev, const char *name, const char *options,
                               const unsigned char *binary, size_t size)
{
    clt__cl_device *cd = clt__cl(dev);
    cl_int err, status = CL_SUCCESS;
    cl_program program = clCreateProgramWithBinary(cd->context, 1, &cd->id, &size, &binary,
                                                   &status, &err);
    if (err == CL_SUCCESS && status == CL_SUCCESS)
        err = clBuildProgram(program, 1, &cd->id, options, NULL, NULL);
    else if (err == CL_SUCCESS)
        err = status;
    if (err == CL_SUCCESS)
        return program;
    if (program)
        clReleaseProgram(program);
    clt__cl_cache_note(CLT__CACHE_REJECTED);
    clt__log(CLT_LOG_WARN, "cached binary of OpenCL program '%s' refused by %s: %s (%d); "
             "building from source", name, dev->name, clt_status_name(err), (int)err);
    return NULL;
}

bool clt__cl_program_holds(cl_program program, const char *kernel)
{
    size_t size = 0, len = kernel ? strlen(kernel) : 0;
    char *names = NULL;
    bool found = !kernel;
    if (!found && clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &size) ==
                      CL_SUCCESS &&
        (names = malloc(size + 1)) &&
        clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, size, names, NULL) == CL_SUCCESS) {
        names[size] = '\0';
        for (const char *n = names; !found && *n; n += strcspn(n, ";"), n += *n == ';')
            found = strncmp(n, kernel, len) == 0 && (n[len] == ';' || n[len] == '\0');
    }
    free(names);
    return found;
}

/* The program built from a cache entry's binary when it holds `kernel`; else NULL, the entry
 * removed (it holds another program's binary, though its key and checksum are right) and
 * counted as rejected. */
static cl_program check_binary(clt_device *dev, const char *name, const char *kernel,
                               cl_program program, const char *key, size_t key_len)
{
    if (!program || clt__cl_program_holds(program, kernel))
        return program;
    clReleaseProgram(program);
    clt__cl_cache_note(CLT__CACHE_REJECTED);
    clt__log(CLT_LOG_DEBUG, "cached binary of OpenCL program '%s' for %s has no kernel %s: "
             "another program's; removing it, building from source", name, dev->name, kernel);
    clt__cl_cache_remove(key, key_len);
    return NULL;
}

/* Stores a program built from source in the disk cache: dev's binary, where the program lists
 * several devices (those of its context: sub-devices share one) the one of dev. */
#define BINARY_DEVICES_MAX 64
static void store_binary(const char *fn, clt_device *dev, cl_program program, const char *key,
                         size_t key_len)
{
    cl_device_id ids[BINARY_DEVICES_MAX];
    size_t sizes[BINARY_DEVICES_MAX] = {0}, listed = 0;
    unsigned char *binaries[BINARY_DEVICES_MAX] = {NULL};
    cl_uint n = 0, at = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof n, &n, NULL) != CL_SUCCESS ||
        n == 0 || n > BINARY_DEVICES_MAX ||
        clGetProgramInfo(program, CL_PROGRAM_DEVICES, sizeof ids, ids, &listed) != CL_SUCCESS ||
        listed != n * sizeof *ids)
        return;
    while (n > 1 && at < n && ids[at] != clt__cl(dev)->id) /* one: whatever id it names (PoCL
                                                            * gives a sub-device's parent) */
        at++;
    if (at == n ||
        clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, n * sizeof *sizes, sizes, NULL) !=
            CL_SUCCESS ||
        sizes[at] == 0 || !(binaries[at] = clt__alloc(fn, sizes[at])))
        return;
    /* entries left NULL are skipped: only dev's binary is copied */
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, n * sizeof *binaries, binaries, NULL) ==
        CL_SUCCESS)
        clt__cl_cache_store(fn, key, key_len, binaries[at], sizes[at]);
    else
        clt__log(CLT_LOG_WARN, "no binary of an OpenCL program from %s: not cached", dev->name);
    clt__free(binaries[at]);
}

/* A successful build's log, when the compiler said anything, as a debug line. */
static void log_build_log(clt_device *dev, const char *name, cl_program program)
{
    char log[2048];
    size_t size = 0;
    if (!clt__log_wants(CLT_LOG_DEBUG) ||
        clGetProgramBuildInfo(program, clt__cl(dev)->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1,
                              log, &size) != CL_SUCCESS)
        return;
    log[size < sizeof log ? size : sizeof log - 1] = '\0';
    for (const char *c = log; *c; c++) {
        if (*c != ' ' && *c != '\n' && *c != '\r' && *c != '\t') {
            clt__log(CLT_LOG_DEBUG, "build log of OpenCL program '%s' on %s:\n%s", name,
                     dev->name, log);
            return;
        }
    }
}

/* Builds the program from its sources, and stores its binary under key (when not NULL). */
static clt_status build_source(const char *fn, clt_device *dev, const char *name,
                               const char *options, int count, const char **texts,
                               const size_t *lens, const char *key, size_t key_len,
                               cl_program *out)
{
    clt__cl_device *cd = clt__cl(dev);
    cl_int err;

    clt__cl_cache_note(CLT__CACHE_MISS);
    *out = clCreateProgramWithSource(cd->context, (cl_uint)count, texts, lens, &err);
    if (err != CL_SUCCESS)
        return clt__cl_error(fn, dev, err, "creating an OpenCL program");
    err = clBuildProgram(*out, 1, &cd->id, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        clt_status st = clt__error(CLT_ERR_KERNEL_BUILD, fn,
                                   "building OpenCL program '%s' (%s) for %s (%s) failed: %s (%d)",
                                   name, options, dev->name, dev->info.name,
                                   clt_status_name(err), (int)err);
        append_build_log(*out, cd->id);
        clReleaseProgram(*out);
        return st;
    }
    log_build_log(dev, name, *out);
    if (key)
        store_binary(fn, dev, *out, key, key_len);
    return CLT_OK;
}

/* How a device's built programs persist between processes (clt__cl_device.cache_mode). */
enum {
    CACHE_UNKNOWN,
    CACHE_OURS,   /* the library's disk cache (cl_cache.c) */
    CACHE_DRIVER, /* the driver's own cache: the library's is not used */
    CACHE_NONE,   /* neither */
};

void clt__cl_first_build(clt_device *dev)
{
    clt__cl_device *cd = clt__cl(dev);
    const char *by;
    if (cd->cache_mode != CACHE_UNKNOWN)
        return;
    if (clt__cl_driver_cache(dev, cd->cache_folder, sizeof cd->cache_folder))
        cd->cache_mode = CACHE_DRIVER, by = "the driver's cache";
    else if (clt__cl_cache_folder(cd->cache_folder, sizeof cd->cache_folder))
        cd->cache_mode = CACHE_OURS, by = "the program cache";
    else
        cd->cache_mode = CACHE_NONE, by = "no cache (CLT_CACHE_DIR=off or unusable)";
    clt__log(CLT_LOG_INFO, "%s (%s) compiles OpenCL kernels as they are first needed; built "
             "programs are kept by %s%s%s", dev->name, dev->info.name, by,
             cd->cache_mode == CACHE_NONE ? "" : " in ", cd->cache_folder);
}

/* Builds program `name` (see clt__cl_program) with the complete options for the device: from
 * the disk cache's binary when that cache is in use and holds a usable one (one whose program
 * holds `kernel`, where not NULL), else from source (then stored there). Touches no list of the
 * device's: callable without its lock once clt__cl_first_build has run. */
static clt_status build(const char *fn, clt_device *dev, const char *name, const char *kernel,
                        const char *options, cl_program *out)
{
    const char *names[CLT__PRELUDE_COUNT + 2];
    const char *texts[CLT__PRELUDE_COUNT + 2];
    size_t lens[CLT__PRELUDE_COUNT + 2], key_len = 0, size = 0;
    char *owned[CLT__PRELUDE_COUNT + 2] = {NULL}, *key = NULL, file[64];
    unsigned char *binary = NULL;
    clt_status st = CLT_OK;
    bool ours = clt__cl(dev)->cache_mode == CACHE_OURS;

    snprintf(file, sizeof file, "%.*s", (int)strcspn(name, ":"), name);
    int count = program_sources(file, names);
    for (int i = 0; i < count && st == CLT_OK; i++)
        st = clt__cl_source_text(fn, names[i], &texts[i], &lens[i], &owned[i]);
    if (st == CLT_OK) {
        clt__cl_cache_note(CLT__CACHE_PROGRAM);
        key = ours ? clt__cl_cache_key(fn, dev, options, count, texts, lens, &key_len) : NULL;
        binary = key ? clt__cl_cache_load(fn, key, key_len, &size) : NULL;
        *out = binary ? build_binary(dev, name, options, binary, size) : NULL;
        *out = check_binary(dev, name, kernel, *out, key, key_len);
        if (*out)
            clt__cl_cache_note(CLT__CACHE_HIT);
        else
            st = build_source(fn, dev, name, options, count, texts, lens, key, key_len, out);
    }
    clt__free(binary);
    clt__free(key);
    for (int i = 0; i < count; i++)
        clt__free(owned[i]);
    return st;
}

/* The complete build options of program `name` with `extra` options on the device. */
static void program_options(clt_device *dev, const char *name, const char *extra, char *options,
                            size_t size)
{
    const char *part = strchr(name, ':');
    char pick[96] = "";
    if (part)
        snprintf(pick, sizeof pick, " -DCLT_ONLY -DCLT_PICK_%s=1", part + 1);
    clt__cl_device *cd = clt__cl(dev);
    snprintf(options, size,
             "-cl-std=CL1.2 -DCLT_HAS_FP64=%d -DCLT_VW_FLOAT=%u -DCLT_VW_DOUBLE=%u "
             "-DCLT_VW_LONG=%u -DCLT_GEMM_NV_FLOAT=%u -DCLT_GEMM_NV_DOUBLE=%u%s%s%s",
             dev->info.fp64 ? 1 : 0, cd->vw_float, cd->vw_double, cd->vw_long, cd->gemm_nv[0],
             cd->gemm_nv[1], pick, *extra ? " " : "", extra);
}

clt_status clt__cl_program_build(const char *fn, clt_device *dev, const char *name,
                                 const char *extra, const char *kernel, cl_program *out)
{
    char options[512];
    program_options(dev, name, extra, options, sizeof options);
    return build(fn, dev, name, kernel, options, out);
}

clt__cl_program *clt__cl_program_find(clt_device *dev, const char *name, const char *extra)
{
    clt__cl_device *cd = clt__cl(dev);
    clt__cl_program *p;
    for (clt__cl_program **link = &cd->programs; (p = *link) != NULL; link = &p->next) {
        if (strcmp(p->name, name) == 0 && strcmp(p->extra, extra) == 0) {
            *link = p->next; /* to the front: the next launch likely needs it again */
            p->next = cd->programs;
            cd->programs = p;
            return p;
        }
    }
    return NULL;
}

clt_status clt__cl_program_add(const char *fn, clt_device *dev, const char *name,
                               const char *extra, cl_program program, clt__cl_program **out)
{
    clt__cl_device *cd = clt__cl(dev);
    size_t name_size = strlen(name) + 1, extra_size = strlen(extra) + 1;
    clt__cl_program *p = clt__alloc_zeroed(fn, sizeof *p);
    if (!p || !(p->name = clt__alloc(fn, name_size + extra_size))) {
        clt__free(p);
        clReleaseProgram(program);
        return CLT_ERR_OUT_OF_MEMORY;
    }
    p->extra = p->name + name_size; /* one block: name, then the extra options */
    memcpy(p->name, name, name_size);
    memcpy(p->extra, extra, extra_size);
    p->program = program;
    clt__log(CLT_LOG_DEBUG, "built OpenCL program '%s' (%s) for %s", name, extra, dev->name);
    clt__live_add(CLT__HOST, -2); /* cached for the life of the process: not counted as live */
    p->next = cd->programs;
    cd->programs = p;
    *out = p;
    return CLT_OK;
}

clt_status clt__cl_program_get(const char *fn, clt_device *dev, const char *name,
                               const char *extra, const char *kernel, clt__cl_program **out)
{
    cl_program program;
    clt_status st;

    if (!extra)
        extra = "";
    if ((*out = clt__cl_program_find(dev, name, extra)) != NULL)
        return CLT_OK;
    clt__cl_first_build(dev);
    st = clt__cl_program_build(fn, dev, name, extra, kernel, &program);
    return st == CLT_OK ? clt__cl_program_add(fn, dev, name, extra, program, out) : st;
}
