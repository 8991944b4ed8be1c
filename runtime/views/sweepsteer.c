/*
 * sweepsteer.c - a sweep's steering in `sweep show` (see sweepsteer.h).
 */
#include "sweepsteer.h"

#include <stdlib.h>
#include <string.h>

#include "summary.h"

#define TRIALS_SHOWN 16 /* per line; the rest counted */

void sr_sv_paused_print(FILE *f, const struct sr_steer_state *s)
{
    if (!s->paused || !s->paused_by)
        return;
    char when[40];
    sr_format_iso_ms(s->paused_by->unix_ms, when, sizeof(when));
    fprintf(f, "paused:      by %s at %s%s (`spotrun sweep resume` goes on)\n",
            s->paused_by->by[0] ? s->paused_by->by : "?", when,
            s->pause_stop ? " with --stop: running trials stopped" : "; running trials go on");
}

static void print_entry(FILE *f, const struct sr_steer_entry *e)
{
    char when[40];
    sr_format_iso_ms(e->unix_ms, when, sizeof(when));
    fprintf(f, "  %-6u %-20s  %-24s  %s", e->seq, when, e->by[0] ? e->by : "?",
            sr_steer_action_name(e->action));
    if (e->action == SR_STEER_PAUSE && e->stop)
        fprintf(f, " --stop");
    for (size_t i = 0; i < e->n_trials && i < TRIALS_SHOWN; i++)
        fprintf(f, " %ld", e->trials[i]);
    if (e->n_trials > TRIALS_SHOWN)
        fprintf(f, " (and %zu more)", e->n_trials - TRIALS_SHOWN);
    if (e->action == SR_STEER_PRIORITY)
        fprintf(f, " --set %ld", e->priority);
    fputc('\n', f);
}

void sr_sv_steer_print(FILE *f, const struct sr_steer_state *s)
{
    if (!s->n_log && !s->bad)
        return;
    fprintf(f, "\nsteering (%zu action%s, oldest first):\n", s->n_log, s->n_log == 1 ? "" : "s");
    fprintf(f, "  %-6s %-20s  %-24s  %s\n", "SEQ", "WHEN (UTC)", "BY", "ACTION");
    for (size_t i = 0; i < s->n_log; i++)
        print_entry(f, &s->log[i]);
    if (s->bad)
        fprintf(f, "  (%zu object%s under steer/ not a steering action of this sweep: left out)\n",
                s->bad, s->bad == 1 ? "" : "s");
}

json_t *sr_sv_steer_json(const struct sr_steer_state *s)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < s->n_log; i++) {
        const struct sr_steer_entry *e = &s->log[i];
        json_t *trials = json_array();
        for (size_t k = 0; trials && k < e->n_trials; k++)
            json_array_append_new(trials, json_integer(e->trials[k]));
        json_array_append_new(
            a, json_pack("{s:I,s:s,s:o,s:b,s:o,s:s,s:I}", "seq", (json_int_t)e->seq, "action",
                         sr_steer_action_name(e->action), "trials", trials, "stop", e->stop,
                         "priority",
                         e->action == SR_STEER_PRIORITY ? json_integer(e->priority) : json_null(),
                         "by", e->by, "unix_ms", (json_int_t)e->unix_ms));
    }
    return a;
}

json_t *sr_sv_paused_json(const struct sr_steer_state *s)
{
    if (!s->paused || !s->paused_by)
        return json_null();
    return json_pack("{s:s,s:I,s:b}", "by", s->paused_by->by, "unix_ms",
                     (json_int_t)s->paused_by->unix_ms, "stop", s->pause_stop);
}
