/*
 * log.c - stderr logging and the thread-local error message (see log.h).
 */
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <pthread.h>

int sr_verbosity = SR_INFO;

static _Thread_local char err_msg[512];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void sr_log(int level, const char *fmt, ...)
{
    if (level > sr_verbosity)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* One write per line so concurrent threads do not interleave. */
    pthread_mutex_lock(&log_lock);
    fprintf(stderr, "spotrun: %s%s\n", level == SR_WARN ? "warning: " : "", line);
    pthread_mutex_unlock(&log_lock);
}

int sr_errf(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
    va_end(ap);
    return code;
}

const char *sr_strerror(int code)
{
    if (err_msg[0])
        return err_msg;
    return strerror(code < 0 ? -code : code);
}

void sr_err_clear(void)
{
    err_msg[0] = '\0';
}
