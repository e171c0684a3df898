/* The thread-local last error, logging and the version (the status codes' names:
 * lib/backends/backends.c, which knows the backends' own codes too). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core.h"


static _Thread_local char last_message[CLT__ERROR_CAPACITY];
static _Thread_local clt_status last_status;

int clt_version_number(void)
{
    return CLT_VERSION_NUMBER;
}

const char *clt_version_string(void)
{
    return CLT_VERSION_STRING;
}

const char *clt_last_error(void)
{
    return last_message;
}

clt_status clt_last_status(void)
{
    return last_status;
}

void clt_clear_error(void)
{
    last_message[0] = '\0';
    last_status = CLT_OK;
}

void clt__error_save(clt__error_state *saved)
{
    saved->status = last_status;
    memcpy(saved->message, last_message, sizeof saved->message);
}

void clt__error_restore(const clt__error_state *saved)
{
    last_status = saved->status;
    memcpy(last_message, saved->message, sizeof last_message);
}

clt_status clt__error(clt_status status, const char *fn, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(last_message, sizeof last_message, "%s: ", fn);
    if (n < 0 || (size_t)n >= sizeof last_message)
        n = 0;
    va_start(ap, fmt);
    vsnprintf(last_message + n, sizeof last_message - (size_t)n, fmt, ap);
    va_end(ap);
    last_status = status;
    clt__log(CLT_LOG_DEBUG, "%s", last_message);
    return status;
}

clt_status clt_set_error(clt_status status, const char *where, const char *fmt, ...)
{
    va_list ap;
    char message[sizeof last_message];
    message[0] = '\0';
    va_start(ap, fmt);
    if (fmt)
        vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return clt__error(status, where ? where : "(callback)", "%s", message);
}

void clt__error_append(const char *text)
{
    size_t used = strlen(last_message);
    snprintf(last_message + used, sizeof last_message - used, "%s", text);
}

/* ---- logging --------------------------------------------------------------------------------- */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static clt_log_fn log_fn;
static void *log_user;
static clt_log_level log_min = CLT_LOG_ERROR;
static int log_env_read;

static void log_to_stderr(clt_log_level level, const char *message, void *user)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    (void)user;
    fprintf(stderr, "cltensor %s: %s\n", names[level], message);
}

/* CLT_LOG=debug|info|warn|error logs to stderr until a callback is set. */
static void log_read_env(void)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    const char *v = getenv("CLT_LOG");
    log_env_read = 1;
    if (!v)
        return;
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, names[i]) == 0) {
            log_fn = log_to_stderr;
            log_min = (clt_log_level)i;
        }
    }
}

void clt_set_log_callback(clt_log_fn fn, void *user, clt_log_level min_level)
{
    pthread_mutex_lock(&log_lock);
    log_env_read = 1;
    log_fn = fn;
    log_user = user;
    log_min = min_level;
    pthread_mutex_unlock(&log_lock);
}

bool clt__log_wants(clt_log_level level)
{
    bool wanted;
    pthread_mutex_lock(&log_lock);
    if (!log_env_read)
        log_read_env();
    wanted = log_fn && level >= log_min;
    pthread_mutex_unlock(&log_lock);
    return wanted;
}

void clt__log(clt_log_level level, const char *fmt, ...)
{
    char message[CLT__ERROR_CAPACITY];
    clt_log_fn fn;
    void *user;
    va_list ap;

    pthread_mutex_lock(&log_lock);
    if (!log_env_read)
        log_read_env();
    fn = level >= log_min ? log_fn : NULL;
    user = log_user;
    pthread_mutex_unlock(&log_lock);
    if (!fn)
        return;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fn(level, message, user);
}

clt_status clt__rename_error_in(const char *fn, const char *context)
{
    char cause[1024];
    const char *colon = strstr(clt_last_error(), ": ");
    snprintf(cause, sizeof cause, "%s", colon ? colon + 2 : clt_last_error());
    if (context)
        return clt__error(clt_last_status(), fn, "%s: %s", context, cause);
    return clt__error(clt_last_status(), fn, "%s", cause);
}

clt_status clt__rename_error(const char *fn)
{
    return clt__rename_error_in(fn, NULL);
}

clt_status clt__error_null_taken(const char *fn, const char *what)
{
    char cause[1024];
    snprintf(cause, sizeof cause, "%s", clt_last_error());
    return clt__error(CLT_ERR_INVALID_ARGUMENT, fn, "%s is NULL (the last error: %s)", what, cause);
}
