/*
 * log.h - diagnostics shared by every spotrun library.
 *
 * Two things live here:
 *   - sr_errf(): record a human-readable reason for a failure in a
 *     thread-local buffer and return the given negative errno-style code, so
 *     a deep failure reaches the CLI with its cause ("return sr_errf(...)").
 *     The CLI prints sr_strerror() and chooses the exit code.
 *   - sr_log(): lines on stderr prefixed "spotrun: ", filtered by a global
 *     verbosity. Safe to call from any thread; not async-signal-safe.
 */
#ifndef SPOTRUN_LOG_H
#define SPOTRUN_LOG_H

#include <stdarg.h>

enum sr_level { SR_QUIET = -1, SR_WARN = 0, SR_INFO = 1, SR_DEBUG = 2 };

/* Global verbosity: messages above it are dropped. Default SR_INFO. */
extern int sr_verbosity;

/* Line format: "spotrun: msg" (text, the default) or, for log shippers,
 * one JSON object per line: {"time":"...Z","level":"info","msg":"..."}.
 * Until set, taken from $SPOTRUN_LOG_FORMAT. */
enum sr_log_format { SR_LOG_TEXT, SR_LOG_JSON };
/* "text" or "json"; -EINVAL for anything else. */
int sr_log_set_format(const char *name);

void sr_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define sr_warn(...) sr_log(SR_WARN, __VA_ARGS__)
#define sr_info(...) sr_log(SR_INFO, __VA_ARGS__)
#define sr_debug(...) sr_log(SR_DEBUG, __VA_ARGS__)

/* Records the message (formatted) for this thread and returns code, which
 * must be a negative errno value. */
int sr_errf(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The message of this thread's last sr_errf() when it was given this same
 * code (the failure being reported), else strerror(-code): a message left
 * by an earlier, handled failure never explains another code. Never NULL. */
const char *sr_strerror(int code);
/* The code this thread's message was recorded with; 0 when none. */
int sr_err_code(void);
void sr_err_clear(void);

#endif
