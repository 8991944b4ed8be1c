/*
 * alive.c - the attempt's keep-alive: an "alive" event written and flushed
 * to the store every SR_KEEPALIVE_MS (SPOTRUN_KEEPALIVE_MS, for tests), so
 * that an attempt whose wrapper vanishes (kill -9, a lost node) still bills
 * its hours up to its last keep-alive: the views end an attempt with no end
 * event at its newest event (history.h).
 *
 * DESIGN: the supervisor loop's timer, like the periodic "gpu" event: one
 * short line a minute, so a long run's log grows by a bounded ~130 kB a day.
 * The flush is the store round trip every flush of the log already is.
 */
#include "alive.h"
#include "supervisor_int.h"

#include <stdlib.h>

#include "log.h"

#define KEEPALIVE_MS_MIN 100
#define KEEPALIVE_MS_MAX 3600000

int64_t sr_keepalive_ms(void)
{
    const char *v = getenv("SPOTRUN_KEEPALIVE_MS");
    if (!v || !*v)
        return SR_KEEPALIVE_MS;
    char *end = NULL;
    const long long ms = strtoll(v, &end, 10);
    if (*end || ms < KEEPALIVE_MS_MIN || ms > KEEPALIVE_MS_MAX) {
        sr_warn("ignoring SPOTRUN_KEEPALIVE_MS=%s: give milliseconds from %d to %d (the "
                "keep-alive stays every %ds)",
                v, KEEPALIVE_MS_MIN, KEEPALIVE_MS_MAX, SR_KEEPALIVE_MS / 1000);
        return SR_KEEPALIVE_MS;
    }
    return ms;
}

void sup_alive_attempt(struct sup *s)
{
    if (!s->alive_ms)
        s->alive_ms = sr_keepalive_ms();
    if (s->cfg->keepalive_ms > 0 && s->cfg->keepalive_ms < s->alive_ms)
        s->alive_ms = s->cfg->keepalive_ms;
    s->next_alive = now() + s->alive_ms;
}

void sup_alive_tick(struct sup *s)
{
    const int64_t t = now();
    if (!s->ev || !s->next_alive || t < s->next_alive)
        return;
    s->next_alive = t + s->alive_ms;
    emit(s, "alive", NULL);
    sr_events_flush(s->ev);
}

int64_t sup_alive_wakeup(const struct sup *s)
{
    return s->ev ? s->next_alive : 0;
}
