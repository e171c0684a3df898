/* The ICD loader's vendor files, checked after it has loaded the platforms: a driver library
 * that a vendor file names but that does not exist leaves its platform out without a word from
 * the loader, so the library says it in a warning. One that exists but is not loaded is only
 * noted (info): loaders also unload a driver that reports no platform (an NVIDIA driver on a
 * machine without its GPU), which is no fault. The files are those the Linux loaders (ocl-icd,
 * Khronos) read: the folder or .icd file OCL_ICD_VENDORS names, else OPENCL_VENDOR_PATH, else
 * /etc/OpenCL/vendors/ *.icd, and the libraries of OCL_ICD_FILENAMES. */
#include <stdio.h>
#include <string.h>

#include "cl_internal.h"
#include "core/core.h"
#include "platform/platform.h"

/* Warns when `library` (from `source`) is not loaded in this process. */
static void check_library(const char *source, const char *library)
{
    clt__path_info info;
    if (clt__library_loaded(library))
        return;
    if (strchr(library, '/') && !clt__path_info_get(library, &info))
        clt__log(CLT_LOG_WARN, "OpenCL: %s names %s, which does not exist: that platform is missing",
                 source, library);
    else
        clt__log(CLT_LOG_INFO, "OpenCL: %s names %s, which is not loaded: not an OpenCL driver, or "
                 "one that reported no platform", source, library);
}

/* The library named on the first line of an .icd file. */
static void check_icd(const char *path)
{
    char line[1024];
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\r\n");
        while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
            n--;
        line[n] = '\0';
        if (n)
            check_library(path, line);
    }
    fclose(f);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

void clt__cl_check_vendors(void)
{
#ifdef _WIN32
    return; /* the Windows loader reads the registry, where nothing can name a missing file */
#endif
    const char *vendors = getenv("OCL_ICD_VENDORS"), *files = getenv("OCL_ICD_FILENAMES");
    const char *path_env = getenv("OPENCL_VENDOR_PATH");
    const char *dir = vendors && *vendors    ? vendors
                      : path_env && *path_env ? path_env
                                              : "/etc/OpenCL/vendors";
    char path[4096];
    clt__path_info info;

    if (files && *files) {
        char list[4096];
        snprintf(list, sizeof list, "%s", files);
        for (char *save = NULL, *lib = strtok_r(list, ":", &save); lib; lib = strtok_r(NULL, ":", &save))
            check_library("OCL_ICD_FILENAMES", lib);
    }
    if (!clt__path_info_get(dir, &info))
        return;
    if (info.kind != CLT__PATH_DIR) {
        if (ends_with(dir, ".icd"))
            check_icd(dir);
        return;
    }
    clt__dir *d = clt__dir_open(dir);
    const char *name;
    if (!d)
        return;
    while ((name = clt__dir_next(d)) != NULL) {
        if (name[0] == '.' || !ends_with(name, ".icd"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        check_icd(path);
    }
    clt__dir_close(d);
}
