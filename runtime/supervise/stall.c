/*
 * stall.c - the stall watchdog's judgement (see stall.h).
 */
#include "stall.h"

#include <stdio.h>

#include "units.h"

void sr_stall_init(struct sr_stall *s, int64_t timeout_ms, int auto_mode)
{
    *s = (struct sr_stall){.timeout_ms = auto_mode ? 0 : timeout_ms, .auto_mode = auto_mode};
}

void sr_stall_set_startup(struct sr_stall *s, int64_t startup_ms)
{
    s->startup_ms = startup_ms < 0 ? -1 : startup_ms;
}

void sr_stall_prior(struct sr_stall *s, int64_t longest_startup_ms)
{
    s->ever_beaten = 1;
    if (longest_startup_ms > s->longest_startup_ms)
        s->longest_startup_ms = longest_startup_ms;
}

void sr_stall_attempt(struct sr_stall *s, int64_t now_ms)
{
    s->save_since_ms = 0;
    s->beaten = 0;
    s->last_ms = now_ms;
    s->started_ms = now_ms;
    s->skip_gap = 0;
    s->startup_held = 0;
}

void sr_stall_beat(struct sr_stall *s, int64_t at_ms)
{
    if (s->beaten && at_ms <= s->last_ms)
        return;
    if (!s->beaten) {
        /* The attempt's first: its start-up is learned unless held. */
        const int64_t startup = at_ms - s->started_ms;
        if (!s->startup_held && startup > s->longest_startup_ms)
            s->longest_startup_ms = startup;
        s->ever_beaten = 1;
    } else if (!s->skip_gap) {
        const int64_t gap = at_ms - s->last_ms;
        if (gap > s->longest_gap_ms)
            s->longest_gap_ms = gap;
        s->gaps++;
    }
    s->beaten = 1;
    s->skip_gap = 0;
    if (at_ms > s->last_ms)
        s->last_ms = at_ms; /* a start-up held past it counts from the hold's end */
}

void sr_stall_hold(struct sr_stall *s, int64_t now_ms)
{
    if ((!s->beaten && !sr_stall_in_startup(s)) || now_ms <= s->last_ms)
        return;
    s->last_ms = now_ms;
    s->skip_gap = 1;
    if (!s->beaten)
        s->startup_held = 1;
}

static int64_t base_timeout(const struct sr_stall *s);

int64_t sr_stall_save_allowance(const struct sr_stall *s)
{
    const int64_t t = base_timeout(s);
    if (!s->longest_save_ms) {
        const int64_t first = SR_STALL_SAVE_FACTOR * t;
        return first > SR_STALL_SAVE_FIRST_MS ? first : SR_STALL_SAVE_FIRST_MS;
    }
    const int64_t learned = SR_STALL_SAVE_FACTOR * s->longest_save_ms;
    return learned > t ? learned : t;
}

void sr_stall_saved(struct sr_stall *s, int64_t ms)
{
    if (ms > s->longest_save_ms)
        s->longest_save_ms = ms;
}

int sr_stall_saving(struct sr_stall *s, int saving, int64_t now_ms)
{
    if (!saving) {
        if (s->save_since_ms && now_ms - s->save_since_ms > s->longest_save_ms)
            s->longest_save_ms = now_ms - s->save_since_ms;
        s->save_since_ms = 0;
        return 0;
    }
    if (!s->save_since_ms)
        s->save_since_ms = now_ms;
    return now_ms - s->save_since_ms <= sr_stall_save_allowance(s);
}

/* The timeout once the attempt heartbeated, whatever auto has seen. */
static int64_t base_timeout(const struct sr_stall *s)
{
    if (!s->auto_mode)
        return s->timeout_ms;
    const int64_t learned = s->longest_gap_ms * SR_STALL_AUTO_FACTOR;
    return learned > SR_STALL_AUTO_FLOOR_MS ? learned : SR_STALL_AUTO_FLOOR_MS;
}

int sr_stall_in_startup(const struct sr_stall *s)
{
    return !s->beaten && s->ever_beaten && s->startup_ms >= 0 &&
           (s->auto_mode || s->timeout_ms > 0);
}

int64_t sr_stall_startup(const struct sr_stall *s)
{
    if (s->startup_ms > 0)
        return s->startup_ms;
    int64_t t = SR_STALL_STARTUP_FLOOR_MS;
    const int64_t base = base_timeout(s);
    const int64_t learned = s->longest_startup_ms * SR_STALL_STARTUP_FACTOR;
    if (base > t)
        t = base;
    return learned > t ? learned : t;
}

int64_t sr_stall_timeout(const struct sr_stall *s)
{
    if (!s->beaten)
        return sr_stall_in_startup(s) ? sr_stall_startup(s) : 0;
    if (!s->auto_mode)
        return s->timeout_ms;
    if (s->gaps < SR_STALL_AUTO_MIN_GAPS)
        return 0;
    return base_timeout(s);
}

int64_t sr_stall_deadline(const struct sr_stall *s)
{
    const int64_t t = sr_stall_timeout(s);
    return t > 0 ? s->last_ms + t : 0;
}

int sr_stall_due(const struct sr_stall *s, int64_t now_ms)
{
    const int64_t d = sr_stall_deadline(s);
    return d > 0 && now_ms >= d;
}

void sr_stall_describe(const struct sr_stall *s, char *buf, size_t len)
{
    char a[32], b[32];
    if (!s->auto_mode) {
        sr_format_duration_ms(s->timeout_ms, a, sizeof(a));
        snprintf(buf, len, "%s", a);
    } else if (s->gaps < SR_STALL_AUTO_MIN_GAPS) {
        snprintf(buf, len, "auto (learning: %u of %d gaps between heartbeats seen)", s->gaps,
                 SR_STALL_AUTO_MIN_GAPS);
    } else {
        sr_format_duration_ms(base_timeout(s), a, sizeof(a));
        sr_format_duration_ms(s->longest_gap_ms, b, sizeof(b));
        snprintf(buf, len, "auto: %s (longest gap between heartbeats %s)", a, b);
    }
}

void sr_stall_describe_startup(const struct sr_stall *s, char *buf, size_t len)
{
    char a[32], b[32];
    const int64_t t = sr_stall_startup(s);
    sr_format_duration_ms(t, a, sizeof(a));
    if (s->startup_ms > 0) {
        snprintf(buf, len, "%s (--stall-startup)", a);
    } else if (s->longest_startup_ms && t == s->longest_startup_ms * SR_STALL_STARTUP_FACTOR &&
               t > SR_STALL_STARTUP_FLOOR_MS) {
        sr_format_duration_ms(s->longest_startup_ms, b, sizeof(b));
        snprintf(buf, len, "%s (%d x the longest start-up seen, %s)", a, SR_STALL_STARTUP_FACTOR,
                 b);
    } else if (t == base_timeout(s) && t > SR_STALL_STARTUP_FLOOR_MS) {
        snprintf(buf, len, "%s (the stall timeout)", a);
    } else {
        snprintf(buf, len, "%s (the floor)", a);
    }
}
