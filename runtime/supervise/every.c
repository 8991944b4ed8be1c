/*
 * every.c - the supervisor's `--every auto` state (see every.h).
 */
#include "every.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interval.h"
#include "units.h"

void sr_every_init(struct sr_every *e, const struct sr_every_auto *cfg, int64_t now_ms)
{
    *e = (struct sr_every){.cfg = *cfg, .started_ms = now_ms};
}

static void add_sample(struct sr_every *e, int64_t stage_ms)
{
    e->samples[e->next_sample] = stage_ms < 0 ? 0 : stage_ms;
    e->next_sample = (e->next_sample + 1) % SR_EVERY_SAMPLES;
    if (e->n_samples < SR_EVERY_SAMPLES)
        e->n_samples++;
}

void sr_every_sample(struct sr_every *e, int64_t stage_ms)
{
    if (!e->pauses)
        add_sample(e, stage_ms);
}

void sr_every_sample_pause(struct sr_every *e, int64_t pause_ms)
{
    if (!e->pauses) /* the stage times so far were no pauses */
        e->n_samples = e->next_sample = 0;
    e->pauses = 1;
    add_sample(e, pause_ms);
}

/* The median, as the history's p50: a slow first commit (a cold page
 * cache) does not set the pace. */
static int64_t median(const struct sr_every *e)
{
    double v[SR_EVERY_SAMPLES];
    for (size_t i = 0; i < e->n_samples; i++)
        v[i] = (double)e->samples[i];
    return (int64_t)sr_percentile(v, e->n_samples, 50);
}

int sr_every_update(struct sr_every *e, int64_t now_ms)
{
    const struct sr_every_auto *c = &e->cfg;
    const int64_t was = e->interval_ms;
    const char *cost_was = e->cost_from, *mtbf_was = e->mtbf_from;
    if (e->n_samples) {
        e->cost_ms = median(e);
        e->cost_from = "measured";
    } else if (c->hist_cost_ms > 0) {
        e->cost_ms = c->hist_cost_ms;
        e->cost_from = "history";
    } else {
        e->cost_ms = SR_INTERVAL_COST_PRIOR_MS;
        e->cost_from = "prior";
    }
    const int64_t mine = now_ms > e->started_ms ? now_ms - e->started_ms : 0;
    e->mtbf_ms =
        sr_interval_mtbf(c->hist_instance_ms + mine, c->hist_preemptions, c->mtbf_prior_ms);
    e->mtbf_from = c->hist_preemptions ? (c->mtbf_scope ? c->mtbf_scope : "history") : "prior";
    /* A stage of 0ms (an empty directory) is not a free checkpoint: the
     * floor of the bounds takes it. */
    e->interval_ms = sr_interval_optimum(e->cost_ms, e->mtbf_ms, c->min_ms, c->max_ms, &e->bound);
    if (!was || cost_was != e->cost_from || mtbf_was != e->mtbf_from)
        return 1;
    const int64_t d = e->interval_ms > was ? e->interval_ms - was : was - e->interval_ms;
    return d * 10 >= was;
}

void sr_every_describe(const struct sr_every *e, char *buf, size_t len)
{
    char t[32], cost[32], mtbf[32];
    sr_format_duration_ms(e->interval_ms, t, sizeof(t));
    sr_format_duration_ms(e->cost_ms, cost, sizeof(cost));
    sr_format_duration_ms(e->mtbf_ms, mtbf, sizeof(mtbf));
    snprintf(buf, len, "%s (auto: cost %s %s, MTBF %s %s%s)", t, cost, e->cost_from, mtbf,
             e->mtbf_from,
             e->bound < 0   ? "; at --every-min"
             : e->bound > 0 ? "; at its upper bound"
                            : "");
}

json_t *sr_every_event(const struct sr_every *e)
{
    return json_pack("{s:s,s:I,s:I,s:s,s:I,s:s,s:I,s:I,s:I}", "source", "auto", "interval_ms",
                     (json_int_t)e->interval_ms, "cost_ms", (json_int_t)e->cost_ms, "cost_from",
                     e->cost_from, "mtbf_ms", (json_int_t)e->mtbf_ms, "mtbf_from", e->mtbf_from,
                     "loss_ms", (json_int_t)sr_interval_loss_ms(e->interval_ms, e->cost_ms),
                     "min_ms", (json_int_t)e->cfg.min_ms, "max_ms", (json_int_t)e->cfg.max_ms);
}
