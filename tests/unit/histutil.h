/*
 * histutil.h - feeding synthetic event-log lines to a history (history.h)
 * in the unit tests: tu_hist_add() with a printf format, and EV() for one
 * event at T0 + ms (the includer defines T0, unix ms). Header-only;
 * include after <cmocka.h>.
 */
#ifndef SPOTRUN_HISTUTIL_H
#define SPOTRUN_HISTUTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "history.h"

static inline void tu_hist_add(struct sr_history *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void tu_hist_add(struct sr_history *h, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof(line));
    assert_int_equal(sr_hist_add_line(h, line, strlen(line)), 0);
}

#define EV(h, ms, att, type, extra)                                                                \
    tu_hist_add(                                                                                   \
        h, "{\"event\":\"" type "\",\"time\":\"x\",\"unix_ms\":%lld,\"attempt\":%d" extra "}",     \
        (long long)(T0 + (ms)), (att))

#endif
