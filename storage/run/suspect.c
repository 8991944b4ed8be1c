/*
 * suspect.c - the process a stall most likely hangs on (suspect.h).
 */
#include "suspect.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "termsafe.h"

static void str_of(const json_t *o, const char *k, char *dst, size_t len)
{
    const char *s = json_string_value(json_object_get(o, k));
    if (s)
        sr_term_safe(s, dst, len);
}

static long long pid_of(const json_t *o)
{
    const json_t *v = json_object_get(o, "pid");
    const json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;
    return x >= 0 && x <= INT32_MAX ? (long long)x : 0;
}

/* The top frame of pid's current thread in a "stalled" event's traceback
 * (faulthandler's, most recent call first, under "--- pid N (comm) ---"):
 * "hang_here (stall.py, line 9)"; "" when absent. */
static void stall_frame(const char *tb, long long pid, char *dst, size_t len)
{
    char head[48];
    snprintf(head, sizeof(head), "--- pid %lld ", pid);
    const char *sec = tb ? strstr(tb, head) : NULL;
    if (!sec)
        return;
    const char *end = strstr(sec + 1, "\n--- pid ");
    const char *cur = strstr(sec, "Current thread");
    const char *f = strstr(cur && (!end || cur < end) ? cur : sec, "File \"");
    if (!f || (end && f > end))
        return;
    char file[128] = "", fn[96] = "";
    int line = 0;
    if (sscanf(f, "File \"%127[^\"]\", line %d in %95[^\n]", file, &line, fn) == 3) {
        char raw[256];
        snprintf(raw, sizeof(raw), "in %s (%s, line %d)", fn, file, line);
        sr_term_safe(raw, dst, len);
    }
}

void sr_stall_suspect(const json_t *ev, char *dst, size_t len)
{
    const json_t *procs = json_object_get(ev, "procs"), *pick = NULL;
    for (size_t i = 0; i < json_array_size(procs) && !pick; i++) {
        const char *st = json_string_value(json_object_get(json_array_get(procs, i), "state"));
        if (st && st[0] && strchr("TtD", st[0]))
            pick = json_array_get(procs, i);
    }
    if (!pick)
        pick = json_array_get(procs, 0);
    if (!json_is_object(pick))
        return;
    char comm[64] = "?", state[8] = "?", wchan[64] = "", frame[160] = "";
    str_of(pick, "comm", comm, sizeof(comm));
    str_of(pick, "state", state, sizeof(state));
    str_of(pick, "wchan", wchan, sizeof(wchan));
    const long long pid = pid_of(pick);
    stall_frame(json_string_value(json_object_get(ev, "traceback")), pid, frame, sizeof(frame));
    snprintf(dst, len, "pid %lld (%s) state %s%s%s%s%s", pid, comm, state,
             wchan[0] ? ", wchan " : "", wchan, frame[0] ? ", " : "", frame);
}
