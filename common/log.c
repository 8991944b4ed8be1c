/*
 * log.c - stderr logging and the thread-local error message (see log.h).
 */
#include "log.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/time.h>
#include <time.h>

int sr_verbosity = SR_INFO;
static int log_format = -1; /* -1: not chosen yet, read the environment */

static _Thread_local char err_msg[2048]; /* room for a list of what was tried (s3_creds.c) */
static _Thread_local int err_code;       /* the code err_msg explains */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

int sr_log_set_format(const char *name)
{
    if (!name || !*name || strcmp(name, "text") == 0)
        log_format = SR_LOG_TEXT;
    else if (strcmp(name, "json") == 0)
        log_format = SR_LOG_JSON;
    else
        return -EINVAL;
    return 0;
}

/* {"time":"2024-05-01T12:00:00.123Z","level":"info","msg":"..."} */
static void json_line(int level, const char *msg)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char iso[40], t[32];
    strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(iso, sizeof(iso), "%s.%03dZ", t, (int)(tv.tv_usec / 1000));
    static const char *const names[] = {"warning", "info", "debug"};
    json_t *o = json_pack("{s:s,s:s,s:s}", "time", iso, "level",
                          names[level < 0   ? 0
                                : level > 2 ? 2
                                            : level],
                          "msg", msg);
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII) : NULL;
    json_decref(o);
    if (line)
        fprintf(stderr, "%s\n", line);
    free(line);
}

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
    if (log_format < 0 && sr_log_set_format(getenv("SPOTRUN_LOG_FORMAT")) < 0)
        log_format = SR_LOG_TEXT;
    if (log_format == SR_LOG_JSON)
        json_line(level, line);
    else
        fprintf(stderr, "spotrun: %s%s\n", level == SR_WARN ? "warning: " : "", line);
    pthread_mutex_unlock(&log_lock);
}

int sr_errf(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
    va_end(ap);
    err_code = code;
    return code;
}

const char *sr_strerror(int code)
{
    if (err_msg[0] && code == err_code)
        return err_msg;
    return strerror(code < 0 ? -code : code);
}

int sr_err_code(void)
{
    return err_msg[0] ? err_code : 0;
}

void sr_err_clear(void)
{
    err_msg[0] = '\0';
    err_code = 0;
}
