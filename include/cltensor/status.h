/* Status codes, the thread-local last error, logging, version and the export macro: the part of
 * the API that every other header uses. */
#ifndef CLTENSOR_STATUS_H
#define CLTENSOR_STATUS_H

#include <stddef.h>

#if defined(_WIN32) && defined(CLT_BUILDING_SHARED)
#define CLT_API __declspec(dllexport)
#elif defined(_WIN32) && !defined(CLT_STATIC)
#define CLT_API __declspec(dllimport)
#elif defined(__GNUC__)
#define CLT_API __attribute__((visibility("default")))
#else
#define CLT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define CLT_VERSION_MAJOR 0
#define CLT_VERSION_MINOR 3
#define CLT_VERSION_PATCH 0
#define CLT_VERSION_STRING "0.3.0"
#define CLT_VERSION_NUMBER                                                                     \
    (CLT_VERSION_MAJOR * 10000 + CLT_VERSION_MINOR * 100 + CLT_VERSION_PATCH)

/* The library's version as CLT_VERSION_NUMBER / CLT_VERSION_STRING were when it was built; the
 * string is static. */
CLT_API int clt_version_number(void);
CLT_API const char *clt_version_string(void);

/* 0 is success. Negative values above -1000 are OpenCL error codes passed through unchanged
 * (CL_OUT_OF_RESOURCES is -5, ...); the library's own codes are -1000 and below. */
typedef int clt_status;

#define CLT_STATUS_MAP(X)                                                                      \
    X(OK, 0, "success")                                                                        \
    X(END, 1, "the end of the data (not an error)")                                            \
    X(ERR_INVALID_ARGUMENT, -1000, "invalid argument")                                         \
    X(ERR_OUT_OF_MEMORY, -1001, "out of host memory")                                          \
    X(ERR_DEVICE_OUT_OF_MEMORY, -1002, "out of device memory")                                 \
    X(ERR_NO_DEVICE, -1003, "no such device")                                                  \
    X(ERR_UNSUPPORTED, -1004, "not supported by the device")                                   \
    X(ERR_DEVICE_MISMATCH, -1005, "tensors on different devices")                              \
    X(ERR_SHAPE, -1006, "invalid shape")                                                       \
    X(ERR_DTYPE, -1007, "invalid dtype")                                                       \
    X(ERR_KERNEL_BUILD, -1008, "kernel build failed")                                          \
    X(ERR_ENVIRONMENT, -1009, "invalid environment variable")                                  \
    X(ERR_IO, -1010, "input/output error")                                                     \
    X(ERR_INTERNAL, -1011, "internal error")

#define CLT__STATUS_ENUM(name, value, text) CLT_##name = value,
enum { CLT_STATUS_MAP(CLT__STATUS_ENUM) CLT__STATUS_END };
#undef CLT__STATUS_ENUM

/* The symbolic name of a status ("CLT_ERR_SHAPE", "CL_OUT_OF_RESOURCES", "UNKNOWN"): a static
 * string, never NULL. */
CLT_API const char *clt_status_name(clt_status status);
/* A short description of a status ("invalid shape"): a static string, never NULL. */
CLT_API const char *clt_status_str(clt_status status);

/* The message of the last failed call on this thread, naming the function, the cause and the
 * values ("clt_tensor_to: f64 is not supported on gpu:0 (...)"); "" when none. Never NULL: a
 * buffer of this thread owned by the library, overwritten by the next failure on the thread
 * and emptied by clt_clear_error. Read it right after a call reports a failure. */
CLT_API const char *clt_last_error(void);
/* The status of the last failed call on this thread, that of clt_last_error (CLT_OK when
 * none). */
CLT_API clt_status clt_last_status(void);
/* Forgets the last error of this thread: clt_last_error() is "" and clt_last_status() CLT_OK. */
CLT_API void clt_clear_error(void);
/* Sets this thread's last error to "where: message" (printf format; where NULL reads
 * "(callback)") and returns status: how callbacks the library calls (datasets, module
 * forwards) report a failure with its cause. */
CLT_API clt_status clt_set_error(clt_status status, const char *where, const char *fmt, ...)
#if defined(__MINGW32__) /* C99's formats (%zu, %lld) on Windows too */
    __attribute__((format(gnu_printf, 3, 4)))
#elif defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

typedef enum clt_log_level {
    CLT_LOG_DEBUG = 0,
    CLT_LOG_INFO = 1,
    CLT_LOG_WARN = 2,
    CLT_LOG_ERROR = 3,
} clt_log_level;

typedef void (*clt_log_fn)(clt_log_level level, const char *message, void *user);

/* Sends the library's log messages at `min_level` and above to `fn` (NULL: no logging, the
 * default), replacing any earlier one; fn may be called on any thread the library runs on.
 * The library never prints on its own; CLT_LOG=debug|info|warn|error in the environment logs
 * to stderr until a callback is set. */
CLT_API void clt_set_log_callback(clt_log_fn fn, void *user, clt_log_level min_level);

/* Frees memory the library returned to the caller for freeing with clt_free (strings from
 * clt_tensor_format). Accepts NULL. */
CLT_API void clt_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif
