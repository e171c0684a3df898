/* The OpenCL library and CLBlast, loaded at run time: a program linked with cltensor starts
 * where neither is installed, and computes on cpu. The OpenCL functions are those the process
 * has already where it has them, else the ICD loader's. Each is looked for once, on first need (the
 * OpenCL library when the registry lists the devices, under its lock; CLBlast when a product
 * first might use it), and stays loaded for the life of the process: drivers keep threads and
 * exit handlers that must not outlive their code. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "core/core.h"
#include "platform/platform.h"

clt__cl_api clt__cl_fn;
clt__clblast_api clt__clblast_fn;

/* The system's OpenCL library, by the names it has on each kind of system. */
static const char *const opencl_names[] = {
#if defined(_WIN32)
    "OpenCL.dll",
#elif defined(__APPLE__)
    "/System/Library/Frameworks/OpenCL.framework/OpenCL",
#else
    "libOpenCL.so.1",
    "libOpenCL.so",
#endif
};

static const char *const clblast_names[] = {
#if defined(_WIN32)
    "clblast.dll",
    "libclblast.dll",
#elif defined(__APPLE__)
    "libclblast.1.dylib",
    "libclblast.dylib",
#else
    "libclblast.so.1",
    "libclblast.so",
#endif
};

typedef struct loaded {
    pthread_once_t once;
    bool ok;
    char status[1024]; /* what was loaded, or why nothing was */
} loaded;

static loaded opencl = {.once = PTHREAD_ONCE_INIT};
static loaded clblast = {.once = PTHREAD_ONCE_INIT};

/* The library `env` names when set ("off": none), else the first of `names` that loads: the
 * handle, its name in *name, or NULL with the reason in l->status (and whether to warn). */
static void *open_library(loaded *l, const char *what, const char *env,
                          const char *const *names, size_t count, const char **name, bool *warn)
{
    const char *over = getenv(env);
    char why[512] = "";
    *warn = false;
    if (over && strcmp(over, "off") == 0) {
        snprintf(l->status, sizeof l->status, "%s not loaded: %s=off", what, env);
        return NULL;
    }
    if (over && *over) {
        void *lib = clt__library_open(*name = over, why, sizeof why);
        if (!lib) {
            *warn = true;
            snprintf(l->status, sizeof l->status, "%s not loaded: %s=%s: %s", what, env, over,
                     why);
        }
        return lib;
    }
    for (size_t i = 0; i < count; i++) {
        char other[sizeof why]; /* the first name's reason is the one told */
        void *lib = clt__library_open(*name = names[i], i == 0 ? why : other, sizeof why);
        if (lib)
            return lib;
    }
    snprintf(l->status, sizeof l->status, "%s not found: %s", what, why);
    return NULL;
}

/* The entry point `symbol` of lib into *slot, or false with the reason in l->status. */
static bool take(loaded *l, void *lib, const char *lib_name, const char *symbol, void **slot)
{
    *slot = clt__library_symbol(lib, symbol);
    if (!*slot)
        snprintf(l->status, sizeof l->status, "%s lacks %s, so it is not used", lib_name,
                 symbol);
    return *slot != NULL;
}

/* The process's own OpenCL functions, where it has them (a program linked with OpenCL, or one
 * that a tool such as Oclgrind runs with its runtime preloaded): the library then calls the same
 * functions as the program does. */
static void *process_opencl(const char **name)
{
    void *self = clt__library_process();
    if (self && clt__library_symbol(self, "clGetPlatformIDs")) {
        *name = "(the program's own OpenCL functions)";
        return self;
    }
    clt__library_close(self);
    return NULL;
}

/* Where loading `what` ends: with every entry point taken (ok), the library kept for good;
 * else the table cleared, the library closed, and a warning where one is due (a library named
 * or found but unusable), an info line where none was found; `without` says what runs instead. */
static void finish(loaded *l, void *lib, bool ok, bool warn, const char *label, const char *name,
                   void *table, size_t table_size, const char *without)
{
    if (lib && !ok) {
        memset(table, 0, table_size);
        clt__library_close(lib);
        warn = true;
    }
    l->ok = ok;
    if (ok)
        snprintf(l->status, sizeof l->status, "%s %s", label, name);
    clt__log(ok ? CLT_LOG_DEBUG : warn ? CLT_LOG_WARN : CLT_LOG_INFO, "OpenCL: %s%s%s", l->status,
             ok ? "" : ": ", ok ? "" : without);
}

/* Takes entry point fn of lib into table->p_fn while ok, through a void pointer of its own
 * (the table's members are function pointers); l, lib, name, table and ok are the loading
 * function's. Only # and ## touch fn: elsewhere an OpenCL name expands to its table entry. */
#define CLT__TAKE(fn)                                                                          \
    if (ok) {                                                                                  \
        void *sym;                                                                             \
        ok = take(l, lib, name, #fn, &sym);                                                    \
        memcpy(&table->p_##fn, &sym, sizeof sym);                                              \
    }

static void load_opencl(void)
{
    const char *name = NULL, *over = getenv("CLT_OPENCL_LIBRARY");
    bool warn = false;
    void *lib = over && *over ? NULL : process_opencl(&name);
    if (!lib)
        lib = open_library(&opencl, "OpenCL library", "CLT_OPENCL_LIBRARY", opencl_names,
                           sizeof opencl_names / sizeof *opencl_names, &name, &warn);
    bool ok = lib != NULL;
    loaded *l = &opencl;
    clt__cl_api *table = &clt__cl_fn;
    CLT__CL_FUNCTIONS(CLT__TAKE)
    finish(&opencl, lib, ok, warn, "OpenCL library", name, &clt__cl_fn, sizeof clt__cl_fn,
           "the devices are cpu alone");
}

bool clt__cl_load(void)
{
    pthread_once(&opencl.once, load_opencl);
    return opencl.ok;
}

const char *clt__cl_load_status(void)
{
    pthread_once(&opencl.once, load_opencl);
    return opencl.status;
}

static void load_clblast(void)
{
    const char *name = NULL;
    bool warn;
    void *lib = open_library(&clblast, "CLBlast", "CLT_CLBLAST_LIBRARY", clblast_names,
                             sizeof clblast_names / sizeof *clblast_names, &name, &warn);
    bool ok = lib != NULL;
    loaded *l = &clblast;
    clt__clblast_api *table = &clt__clblast_fn;
    CLT__CLBLAST_FUNCTIONS(CLT__TAKE)
    finish(&clblast, lib, ok, warn, "CLBlast", name, &clt__clblast_fn, sizeof clt__clblast_fn,
           "products run on the library's own kernels");
}

bool clt__clblast_load(void)
{
    if (!clt__cl_load())
        return false;
    pthread_once(&clblast.once, load_clblast);
    return clblast.ok;
}

const char *clt__clblast_status(void)
{
    if (!clt__cl_load())
        return "CLBlast not looked for: no OpenCL library";
    pthread_once(&clblast.once, load_clblast);
    return clblast.status;
}
