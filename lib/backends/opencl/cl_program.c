/* Kernels compiled at load time: the sources of cl/ (embedded in the library, or read from the
 * folders CLT_KERNEL_DIR lists),
 * built per (device, program, options) the first time a device needs them, a program being
 * one part of a file (clt__cl_program), from the disk cache's binary when that cache is in use
 * and has one whose program holds the kernel asked for (cl_cache.c), and kept in memory with
 * the kernels taken from them; the warm-up that builds them all on several threads; and the
 * launch helper. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl_internal.h"
#include "cl_run.h"
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

/* Whether a built program holds kernel `kernel` (NULL: any program does), by its kernel names,
 * which a built program gives without compiling anything more. */
static bool holds_kernel(cl_program program, const char *kernel)
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
    if (!program || holds_kernel(program, kernel))
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

/* Settles the device's cache mode on its first build, and says once, at info level, that the
 * device compiles kernels and where they are kept. Device lock held. */
static void first_build(clt_device *dev)
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
 * device's: callable without its lock once first_build has run. */
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

/* The device's built program `name` with `extra` options, or NULL. Lock held. A program is
 * found by its name and extra options as given, so that a launch formats nothing. */
static clt__cl_program *find_program(clt__cl_device *cd, const char *name, const char *extra)
{
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

/* Adds a built program to the device's list (which then owns it). Lock held. */
static clt_status add_program(const char *fn, clt_device *dev, const char *name,
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

/* The program `name` with `extra` options for the device, built on first use (holding
 * `kernel`, where it comes from the disk cache). Lock held. */
static clt_status get_program(const char *fn, clt_device *dev, const char *name,
                              const char *extra, const char *kernel, clt__cl_program **out)
{
    char options[512];
    cl_program program;
    clt_status st;

    if (!extra)
        extra = "";
    if ((*out = find_program(clt__cl(dev), name, extra)) != NULL)
        return CLT_OK;
    first_build(dev);
    program_options(dev, name, extra, options, sizeof options);
    st = build(fn, dev, name, kernel, options, &program);
    return st == CLT_OK ? add_program(fn, dev, name, extra, program, out) : st;
}

/* A kernel of a built program, created on first use. Lock held. */
static clt_status get_kernel(const char *fn, clt_device *dev, clt__cl_program *p,
                             const char *name, clt__cl_kernel **out)
{
    clt__cl_kernel *k;
    cl_int err;
    size_t wg = 0;

    for (clt__cl_kernel **link = &p->kernels; (k = *link) != NULL; link = &k->next) {
        if (strcmp(k->name, name) == 0) {
            *link = k->next; /* to the front, as programs */
            k->next = p->kernels;
            p->kernels = k;
            *out = k;
            return CLT_OK;
        }
    }
    k = clt__alloc_zeroed(fn, sizeof *k);
    if (!k || !(k->name = clt__strdup(fn, name))) {
        clt__free(k);
        return CLT_ERR_OUT_OF_MEMORY;
    }
    k->kernel = clCreateKernel(p->program, name, &err);
    if (err != CL_SUCCESS) {
        clt__free(k->name);
        clt__free(k);
        return clt__error(err, fn, "kernel %s not found in a program built for %s: %s", name,
                          dev->name, clt_status_name(err));
    }
    if (clGetKernelInfo(k->kernel, CL_KERNEL_NUM_ARGS, sizeof k->nargs, &k->nargs, NULL) !=
        CL_SUCCESS)
        k->nargs = CLT__CL_NARGS_UNKNOWN;
    clGetKernelWorkGroupInfo(k->kernel, clt__cl(dev)->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg,
                             &wg, NULL);
    k->max_local = wg;
    k->local_size = 64;
    while (k->local_size > 1 && wg && k->local_size > wg)
        k->local_size /= 2;
    clt__live_add(CLT__HOST, -2); /* cached for the life of the process: not counted as live */
    k->next = p->kernels;
    p->kernels = k;
    *out = k;
    return CLT_OK;
}

/* How a launch covers its work: `n` work-items rounded up to the kernel's 1-D work-group size
 * (groups 0, dims 0); `groups` work-groups of *local work-items (dims 0); or, with dims > 0, the
 * global and local sizes as given (local NULL: the driver's choice). */
typedef struct range {
    size_t n, groups, *local;
    cl_uint dims;
    const size_t *global_nd, *local_nd;
} range;

/* The global and local sizes of a 1-D launch. */
static clt_status one_dim(const char *fn, clt_device *dev, const clt__cl_kernel *k,
                          const range *r, size_t *global, size_t *lsize)
{
    *lsize = k->local_size;
    if (r->groups == 0) {
        /* a few items on a CPU device: a group no larger than they need, as its work-items run
         * one after another and those past n would still start */
        if (r->n < *lsize && clt__cl_serial(dev))
            for (*lsize = 1; *lsize < r->n;)
                *lsize *= 2;
        *global = (r->n + *lsize - 1) / *lsize * *lsize;
        return CLT_OK;
    }
    size_t cap = dev->info.max_work_group_size;
    if (k->max_local && k->max_local < cap)
        cap = k->max_local;
    for (*lsize = 1; *lsize * 2 <= *r->local && *lsize * 2 <= cap;)
        *lsize *= 2;
    *r->local = *lsize;
    if (!clt__mul_size(r->groups, *lsize, global))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, fn,
                          "%zu work-groups of %zu work-items are too many for %s", r->groups,
                          *lsize, dev->name);
    return CLT_OK;
}

long clt__cl_args_set(clt_device *dev)
{
    clt__cl_device *cd = clt__cl(dev);
    pthread_mutex_lock(&cd->lock);
    long n = cd->args_set;
    pthread_mutex_unlock(&cd->lock);
    return n;
}

/* Sets the kernel's arguments that differ from those it kept (every one where a buffer was
 * released since they were kept), and keeps what it set; on an error it keeps nothing. Under
 * cd's lock, which counts the arguments set. */
static cl_int set_args(clt__cl_device *cd, clt__cl_kernel *k, const clt__cl_arg *args, int nargs)
{
    unsigned generation = atomic_load(&clt__cl_mem_generation);
    cl_int err = CL_SUCCESS;
    if (k->generation != generation) {
        memset(k->kept_size, 0, sizeof k->kept_size);
        k->generation = generation;
    }
    for (int i = 0; i < nargs && err == CL_SUCCESS; i++) {
        const clt__cl_arg *a = &args[i];
        bool keep = i < CLT__CL_KEPT_ARGS && a->value && a->size <= CLT__CL_KEPT_BYTES;
        uint64_t value = 0; /* the argument's bytes, zero-padded to 8 */
        if (keep)
            memcpy(&value, a->value, a->size);
        if (keep && k->kept_size[i] == a->size && k->kept[i] == value)
            continue;
        err = clSetKernelArg(k->kernel, (cl_uint)i, a->size, a->value);
        cd->args_set++;
        if (i < CLT__CL_KEPT_ARGS)
            k->kept_size[i] = keep && err == CL_SUCCESS ? (unsigned char)a->size : 0;
        if (keep)
            k->kept[i] = value;
    }
    if (err != CL_SUCCESS)
        memset(k->kept_size, 0, sizeof k->kept_size);
    return err;
}

/* Sets the arguments and enqueues the kernel over the range. */
static clt_status enqueue(const char *fn, clt_device *dev, const char *program,
                          const char *options, const char *kernel, const clt__cl_arg *args,
                          int nargs, const range *r, cl_event *event)
{
    clt__cl_device *cd = clt__cl(dev);
    clt__cl_program *p = NULL;
    clt__cl_kernel *k = NULL;
    clt_status st = clt__cl_start(fn, dev);
    cl_int err = CL_SUCCESS;

    if (st != CLT_OK || (r->dims == 0 && r->groups == 0 && r->n == 0))
        return st;
    clt__cl_reap(dev, false);
    pthread_mutex_lock(&cd->lock);
    st = get_program(fn, dev, program, options, kernel, &p);
    if (st == CLT_OK)
        st = get_kernel(fn, dev, p, kernel, &k);
    /* the one path every argument takes: checked against the kernel's own count (read once,
     * when the kernel was made), then set by position; a size that does not fit the
     * parameter's type is the driver's CL_INVALID_ARG_SIZE */
    if (st == CLT_OK && k->nargs != CLT__CL_NARGS_UNKNOWN && (cl_uint)nargs != k->nargs)
        st = clt__error(CLT_ERR_INTERNAL, fn, "kernel %s of program %s takes %u arguments; %d "
                        "were given", kernel, program, (unsigned)k->nargs, nargs);
    if (st == CLT_OK)
        err = set_args(cd, k, args, nargs);
    if (st == CLT_OK && err == CL_SUCCESS) {
        size_t global = 0, lsize = 0;
        if (r->dims > 0)
            err = clEnqueueNDRangeKernel(cd->queue, k->kernel, r->dims, NULL, r->global_nd,
                                         r->local_nd, 0, NULL, event);
        else if ((st = one_dim(fn, dev, k, r, &global, &lsize)) == CLT_OK)
            err = clEnqueueNDRangeKernel(cd->queue, k->kernel, 1, NULL, &global, &lsize, 0, NULL,
                                         event);
    }
    pthread_mutex_unlock(&cd->lock);
    if (st == CLT_OK && err != CL_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "launching kernel %s", kernel);
        st = clt__cl_error(fn, dev, err, what);
    }
    return st;
}

clt_status clt__cl_launch(const char *fn, clt_device *dev, const char *program,
                          const char *options, const char *kernel, const clt__cl_arg *args,
                          int nargs, size_t n, cl_event *event)
{
    return enqueue(fn, dev, program, options, kernel, args, nargs, &(range){.n = n}, event);
}

clt_status clt__cl_launch_groups(const char *fn, clt_device *dev, const char *program,
                                 const char *options, const char *kernel,
                                 const clt__cl_arg *args, int nargs, size_t groups, size_t *local,
                                 cl_event *event)
{
    return enqueue(fn, dev, program, options, kernel, args, nargs,
                   &(range){.groups = groups, .local = local}, event);
}

clt_status clt__cl_launch_nd(const char *fn, clt_device *dev, const char *program,
                             const char *options, const char *kernel, const clt__cl_arg *args,
                             int nargs, int dims, const size_t *global, const size_t *local,
                             cl_event *event)
{
    for (int d = 0; d < dims; d++)
        if (global[d] == 0)
            return CLT_OK;
    return enqueue(fn, dev, program, options, kernel, args, nargs,
                   &(range){.dims = (cl_uint)dims, .global_nd = global, .local_nd = local}, event);
}

/* Every program the kernels use, a kernel each holds (what its cached binary is checked for),
 * the dtypes each is built for (bits 1 << dtype: those the operations that use it accept; a
 * launch with another still builds what it needs) and the options that specialise it for one:
 * the dtype's (its dtype table row), gemm.cl's, or none (one build, only where the device
 * holds that dtype: a cast from it, random). Fills and transposes move bits, so they are built
 * for one dtype per storage size (clt__cl_bits_dtype). */
#define D(t) (1u << (t))
#define EVERY_DTYPE (D(CLT_F32) | D(CLT_F64) | D(CLT_F16) | D(CLT_BF16) | D(CLT_I32) |          \
                     D(CLT_I64) | D(CLT_U8) | D(CLT_BOOL))
#define FLOAT_DTYPES (D(CLT_F32) | D(CLT_F64) | D(CLT_F16) | D(CLT_BF16))
#define BIT_DTYPES (D(CLT_U8) | D(CLT_F16) | D(CLT_I32) | D(CLT_I64))
enum { DTYPE_OPTIONS, GEMM_OPTIONS, NO_OPTIONS };
static const struct {
    const char *name, *kernel;
    unsigned dtypes;
    int options;
} every_program[] = {
    {"elementwise:binary", "ew_add", EVERY_DTYPE, DTYPE_OPTIONS},
    {"elementwise:scalar", "ew_add_scalar", EVERY_DTYPE, DTYPE_OPTIONS},
    {"elementwise:sign", "ew_neg", EVERY_DTYPE & ~D(CLT_BOOL), DTYPE_OPTIONS},
    {"elementwise:math", "ew_exp", FLOAT_DTYPES, DTYPE_OPTIONS},
    {"elementwise:compare", "ew_eq", EVERY_DTYPE, DTYPE_OPTIONS},
    {"elementwise:backward", "ew_relu_backward", FLOAT_DTYPES, DTYPE_OPTIONS},
    {"elementwise:copy", "ew_copy", EVERY_DTYPE, DTYPE_OPTIONS},
    {"elementwise:fill", "ew_fill", BIT_DTYPES, DTYPE_OPTIONS},
    {"elementwise:transpose", "ew_copy_t", BIT_DTYPES, DTYPE_OPTIONS},
    {"reduce:sums", "sum_rows", EVERY_DTYPE, DTYPE_OPTIONS},
    {"reduce:extremes", "argmax_rows", EVERY_DTYPE, DTYPE_OPTIONS},
    {"nn", "index_select", EVERY_DTYPE, DTYPE_OPTIONS},
    {"attention", "attention", FLOAT_DTYPES, DTYPE_OPTIONS},
    {"loss", "cross_entropy", FLOAT_DTYPES, DTYPE_OPTIONS},
    {"winograd", "winograd_input", D(CLT_F32) | D(CLT_F64), DTYPE_OPTIONS},
    {"rows", "sort_rows", EVERY_DTYPE, DTYPE_OPTIONS},
    {"optim", "optim_step", D(CLT_F32) | D(CLT_F64), DTYPE_OPTIONS},
    {"gemm:direct", "gemm_direct", D(CLT_F32) | D(CLT_F64), GEMM_OPTIONS},
    {"gemm:packed", "gemm_packed", D(CLT_F32) | D(CLT_F64), GEMM_OPTIONS},
    {"gemm:tiled", "gemm_tiled", D(CLT_F32) | D(CLT_F64), GEMM_OPTIONS},
    {"gemm:dot", "gemm_dot", D(CLT_F32) | D(CLT_F64), GEMM_OPTIONS},
    {"random", "uniform_f32", D(CLT_F32), NO_OPTIONS},
    {"cast:from_f32", "cast_f32_f32", D(CLT_F32), NO_OPTIONS},
    {"cast:from_f64", "cast_f64_f32", D(CLT_F64), NO_OPTIONS},
    {"cast:from_f16", "cast_f16_f32", D(CLT_F16), NO_OPTIONS},
    {"cast:from_bf16", "cast_bf16_f32", D(CLT_BF16), NO_OPTIONS},
    {"cast:from_i32", "cast_i32_f32", D(CLT_I32), NO_OPTIONS},
    {"cast:from_i64", "cast_i64_f32", D(CLT_I64), NO_OPTIONS},
    {"cast:from_u8", "cast_u8_f32", D(CLT_U8), NO_OPTIONS},
    {"cast:from_b8", "cast_b8_f32", D(CLT_BOOL), NO_OPTIONS},
};
#undef D

clt_dtype clt__cl_bits_dtype(size_t size)
{
    return size == 1 ? CLT_U8 : size == 2 ? CLT_F16 : size == 4 ? CLT_I32 : CLT_I64;
}

/* One program of a warm-up: what to build, then what the build gave. */
typedef struct warm_job {
    const char *name, *extra, *kernel;
    cl_program program;
    clt_status status;
    char error[1024]; /* the failure's message, from the thread that built it */
} warm_job;

typedef struct warm_work {
    const char *fn;
    clt_device *dev;
    warm_job *jobs;
    size_t count;
    atomic_size_t next; /* the next job to take */
} warm_work;

/* A warm-up thread: builds jobs until none is left, each checked for the kernel every_program
 * names. */
static void *warm_thread(void *arg)
{
    warm_work *w = arg;
    size_t i;
    while ((i = atomic_fetch_add(&w->next, 1)) < w->count) {
        warm_job *j = &w->jobs[i];
        char options[512];
        program_options(w->dev, j->name, j->extra, options, sizeof options);
        j->status = build(w->fn, w->dev, j->name, j->kernel, options, &j->program);
        if (j->status == CLT_OK && !holds_kernel(j->program, j->kernel)) { /* every_program */
            clReleaseProgram(j->program);
            j->status = clt__error(CLT_ERR_INTERNAL, w->fn, "OpenCL program '%s' has no kernel %s",
                                   j->name, j->kernel);
        }
        if (j->status != CLT_OK)
            snprintf(j->error, sizeof j->error, "%s", clt_last_error());
    }
    return NULL;
}

/* The jobs of a warm-up of dev: every program of every_program for the dtypes dev supports that
 * is not built yet. Lock held. */
static size_t warm_jobs(clt_device *dev, warm_job *jobs)
{
    clt__cl_device *cd = clt__cl(dev);
    size_t n = 0;
    for (size_t i = 0; i < sizeof every_program / sizeof *every_program; i++) {
        for (int d = CLT_F32; d < CLT_DTYPE_COUNT; d++) {
            if (!(every_program[i].dtypes & (1u << d)) || (d == CLT_F64 && !dev->info.fp64))
                continue;
            int how = every_program[i].options;
            const char *extra = how == NO_OPTIONS     ? ""
                                : how == GEMM_OPTIONS ? (d == CLT_F64 ? CLT__CL_GEMM_F64
                                                                      : CLT__CL_GEMM_F32)
                                                      : clt__dtype((clt_dtype)d)->options;
            if (find_program(cd, every_program[i].name, extra))
                continue;
            if (jobs)
                jobs[n] = (warm_job){.name = every_program[i].name,
                                     .kernel = every_program[i].kernel, .extra = extra};
            n++;
        }
    }
    return n;
}

clt_status clt__cl_build_all(const char *fn, clt_device *dev)
{
    clt__cl_device *cd = clt__cl(dev);
    warm_work w = {.fn = fn, .dev = dev};
    pthread_t threads[8];
    size_t started = 0, want;
    long cores = clt__cpu_count();
    clt_status st = clt__cl_start(fn, dev);

    if (st != CLT_OK)
        return st;
    pthread_mutex_lock(&cd->lock);
    first_build(dev);
    w.count = warm_jobs(dev, NULL);
    w.jobs = w.count ? clt__alloc_zeroed(fn, w.count * sizeof *w.jobs) : NULL;
    if (w.jobs)
        warm_jobs(dev, w.jobs);
    pthread_mutex_unlock(&cd->lock);
    if (w.count && !w.jobs)
        return CLT_ERR_OUT_OF_MEMORY;

    /* the builds run on up to one thread a core, this one among them */
    want = cores > 1 ? (size_t)cores - 1 : 0;
    if (want > sizeof threads / sizeof *threads)
        want = sizeof threads / sizeof *threads;
    if (want >= w.count)
        want = w.count ? w.count - 1 : 0;
    while (started < want && pthread_create(&threads[started], NULL, warm_thread, &w) == 0)
        started++;
    warm_thread(&w);
    for (size_t i = 0; i < started; i++)
        pthread_join(threads[i], NULL);

    pthread_mutex_lock(&cd->lock);
    for (size_t i = 0; i < w.count; i++) {
        warm_job *j = &w.jobs[i];
        clt__cl_program *p;
        if (j->status != CLT_OK) {
            const char *cause = strstr(j->error, ": "); /* past the name of the function */
            if (st == CLT_OK)
                st = clt__error(j->status, fn, "%s", cause ? cause + 2 : j->error);
        } else if (find_program(cd, j->name, j->extra)) {
            clReleaseProgram(j->program); /* a launch built it meanwhile */
        } else if (add_program(fn, dev, j->name, j->extra, j->program, &p) != CLT_OK &&
                   st == CLT_OK) {
            st = CLT_ERR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&cd->lock);
    clt__free(w.jobs);
    return st;
}
