/* The ICD loader's vendor files, checked after it has loaded the platforms: a driver library
 * that a vendor file names but that does not exist leaves its platform out without a word from
 * the loader, so the library says it in a warning. One that exists but is not loaded is only
 * noted (info): loaders also unload a driver that reports no platform (an NVIDIA driver on a
 * machine without its GPU), which is no fault. The files are those the Linux loaders (ocl-icd,
 * Khronos) read: the folder or .icd file OCL_ICD_VENDORS names, else OPENCL_VENDOR_PATH, else
 * /etc/OpenCL/vendors/ *.icd, and the libraries of OCL_ICD_FILENAMES. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cl_internal.h"
#include "core/core.h"

/* Warns when `library` (from `source`) is not loaded in this process. */
static void check_library(const char *source, const char *library)
{
    void *h = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        dlclose(h); /* NOLOAD took a reference */
        return;
    }
    if (strchr(library, '/') && access(library, R_OK) != 0)
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
    const char *vendors = getenv("OCL_ICD_VENDORS"), *files = getenv("OCL_ICD_FILENAMES");
    const char *path_env = getenv("OPENCL_VENDOR_PATH");
    const char *dir = vendors && *vendors    ? vendors
                      : path_env && *path_env ? path_env
                                              : "/etc/OpenCL/vendors";
    char path[4096];
    struct stat sb;

    if (files && *files) {
        char list[4096];
        snprintf(list, sizeof list, "%s", files);
        for (char *save = NULL, *lib = strtok_r(list, ":", &save); lib; lib = strtok_r(NULL, ":", &save))
            check_library("OCL_ICD_FILENAMES", lib);
    }
    if (stat(dir, &sb) != 0)
        return;
    if (!S_ISDIR(sb.st_mode)) {
        if (ends_with(dir, ".icd"))
            check_icd(dir);
        return;
    }
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !ends_with(e->d_name, ".icd"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        check_icd(path);
    }
    closedir(d);
}
