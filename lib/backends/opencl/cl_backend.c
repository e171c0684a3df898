/* The OpenCL backend as the rest of the library sees it: its table of operations (every entry
 * of backends/backend.h's list, filled from it) and its registry entry: device enumeration with
 * CLT_SUBDEVICES, the warm-up, the disk cache's figures and the names of OpenCL's status codes. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_internal.h"
#include "core/core.h"

#define CLT__CL_ENTRY(name, ret, params, kind) .name = clt__cl_##name,
const clt__backend clt__cl_backend = {.name = "opencl", CLT__BACKEND_OPS(CLT__CL_ENTRY)};
#undef CLT__CL_ENTRY

/* CLT_SUBDEVICES: how many equal sub-devices each CPU-type OpenCL device is split into; a whole
 * number 1 ... 64 (spaces around it allowed). Unset or empty is 1: no split. */
static clt_status parse_subdevices(const char *fn, const char *value, unsigned *parts)
{
    const char *p = value;
    size_t len;
    int n;
    *parts = 1;
    if (!value)
        return CLT_OK;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '\0')
        return CLT_OK;
    len = strspn(p, "0123456789");
    n = len >= 1 && len <= 2 ? atoi(p) : 0;
    for (p += len; isspace((unsigned char)*p); p++)
        ;
    if (*p != '\0' || n < 1 || n > 64)
        return clt__error(CLT_ERR_ENVIRONMENT, fn,
                          "CLT_SUBDEVICES=\"%.200s%s\": expected a whole number from 1 (no split) "
                          "to 64: the number of equal sub-devices each CPU-type OpenCL device is "
                          "split into",
                          value, strlen(value) > 200 ? "..." : "");
    *parts = (unsigned)n;
    return CLT_OK;
}

/* The OpenCL devices, each record pointing at this backend's table. */
static clt_status enumerate(const char *fn, clt_device ***devices, int *count)
{
    unsigned parts;
    int first = *count;
    clt_status st = parse_subdevices(fn, getenv("CLT_SUBDEVICES"), &parts);
    if (st != CLT_OK)
        return st;
    st = clt__cl_enumerate(fn, parts, devices, count);
    for (int i = first; i < *count; i++)
        (*devices)[i]->backend = &clt__cl_backend;
    return st;
}

/* OpenCL's own codes, by value, so that a passed-through code has a readable name. */
#define CLT__CL_CODES(X)                                                                       \
    X(-1, DEVICE_NOT_FOUND) X(-2, DEVICE_NOT_AVAILABLE) X(-3, COMPILER_NOT_AVAILABLE)         \
    X(-4, MEM_OBJECT_ALLOCATION_FAILURE) X(-5, OUT_OF_RESOURCES) X(-6, OUT_OF_HOST_MEMORY)    \
    X(-7, PROFILING_INFO_NOT_AVAILABLE) X(-8, MEM_COPY_OVERLAP) X(-11, BUILD_PROGRAM_FAILURE) \
    X(-12, MAP_FAILURE) X(-14, EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)                      \
    X(-30, INVALID_VALUE) X(-32, INVALID_PLATFORM) X(-33, INVALID_DEVICE)                     \
    X(-34, INVALID_CONTEXT) X(-36, INVALID_COMMAND_QUEUE) X(-38, INVALID_MEM_OBJECT)          \
    X(-42, INVALID_BINARY) X(-43, INVALID_BUILD_OPTIONS) X(-44, INVALID_PROGRAM)              \
    X(-45, INVALID_PROGRAM_EXECUTABLE) X(-46, INVALID_KERNEL_NAME) X(-48, INVALID_KERNEL)     \
    X(-49, INVALID_ARG_INDEX) X(-50, INVALID_ARG_VALUE) X(-51, INVALID_ARG_SIZE)              \
    X(-52, INVALID_KERNEL_ARGS) X(-53, INVALID_WORK_DIMENSION)                                \
    X(-54, INVALID_WORK_GROUP_SIZE) X(-55, INVALID_WORK_ITEM_SIZE)                            \
    X(-56, INVALID_GLOBAL_OFFSET) X(-57, INVALID_EVENT_WAIT_LIST) X(-58, INVALID_EVENT)       \
    X(-59, INVALID_OPERATION) X(-61, INVALID_BUFFER_SIZE) X(-63, INVALID_GLOBAL_WORK_SIZE)

/* Negative codes above -1000 are OpenCL's (the library's own are -1000 and below). */
static const char *status_name(clt_status status, const char **text)
{
    if (status >= 0 || status <= -1000)
        return NULL;
    *text = "OpenCL error";
    switch (status) {
#define CLT__CL_NAME(value, name)                                                              \
    case value: return "CL_" #name;
        CLT__CL_CODES(CLT__CL_NAME)
#undef CLT__CL_NAME
    default: return "UNKNOWN";
    }
}

/* The OpenCL library and CLBlast as loaded (cl_loader.c). */
static char status_line[2200];
static pthread_once_t status_once = PTHREAD_ONCE_INIT;

static void compose_status(void)
{
    int n = clt__cl_platforms_found;
    if (!clt__cl_load())
        snprintf(status_line, sizeof status_line, "%s", clt__cl_load_status());
    else if (n == 0)
        snprintf(status_line, sizeof status_line, "%s: no OpenCL platform (no driver installed, "
                 "or none that the loader's vendor files name loads)", clt__cl_load_status());
    else
        snprintf(status_line, sizeof status_line, "%s, %d platform%s; %s", clt__cl_load_status(),
                 n, n == 1 ? "" : "s", clt__clblast_status());
}

static const char *status(void)
{
    pthread_once(&status_once, compose_status);
    return status_line;
}

const clt__backend_registry clt__opencl_registry = {
    .name = "opencl",
    .enumerate = enumerate,
    .warmup = clt__cl_warmup,
    .cache_info = clt__cl_cache_info,
    .status_name = status_name,
    .status = status,
};
