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

void sr_stall_attempt(struct sr_stall *s)
{
    s->beaten = 0;
    s->last_ms = 0;
    s->skip_gap = 0;
}

void sr_stall_beat(struct sr_stall *s, int64_t at_ms)
{
    if (s->beaten && at_ms <= s->last_ms)
        return;
    if (s->beaten && !s->skip_gap) {
        const int64_t gap = at_ms - s->last_ms;
        if (gap > s->longest_gap_ms)
            s->longest_gap_ms = gap;
        s->gaps++;
    }
    s->beaten = 1;
    s->skip_gap = 0;
    s->last_ms = at_ms;
}

void sr_stall_hold(struct sr_stall *s, int64_t now_ms)
{
    if (!s->beaten || now_ms <= s->last_ms)
        return;
    s->last_ms = now_ms;
    s->skip_gap = 1;
}

int64_t sr_stall_timeout(const struct sr_stall *s)
{
    if (!s->beaten)
        return 0;
    if (!s->auto_mode)
        return s->timeout_ms;
    if (s->gaps < SR_STALL_AUTO_MIN_GAPS)
        return 0;
    const int64_t learned = s->longest_gap_ms * SR_STALL_AUTO_FACTOR;
    return learned > SR_STALL_AUTO_FLOOR_MS ? learned : SR_STALL_AUTO_FLOOR_MS;
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
        const int64_t learned = s->longest_gap_ms * SR_STALL_AUTO_FACTOR;
        sr_format_duration_ms(learned > SR_STALL_AUTO_FLOOR_MS ? learned : SR_STALL_AUTO_FLOOR_MS,
                              a, sizeof(a));
        sr_format_duration_ms(s->longest_gap_ms, b, sizeof(b));
        snprintf(buf, len, "auto: %s (longest gap between heartbeats %s)", a, b);
    }
}
