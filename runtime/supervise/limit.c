/*
 * limit.c - time limits and budgets of a run (see limit.h).
 */
#include "limit.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "units.h"

#define CHECK_EVERY_MS 1000
#define MS_PER_HOUR 3600000.0

void sr_limits_init(struct sr_limits *l, const struct sr_limits_config *cfg, int64_t now_ms)
{
    memset(l, 0, sizeof(*l));
    if (cfg)
        l->cfg = *cfg;
    l->session_at = now_ms;
    if (l->cfg.sweep_poll_ms <= 0)
        l->cfg.sweep_poll_ms = 30000;
    if (l->cfg.steer_poll_ms <= 0)
        l->cfg.steer_poll_ms = l->cfg.sweep_poll_ms;
    l->next_poll = now_ms + l->cfg.sweep_poll_ms;
    l->next_steer = now_ms + l->cfg.steer_poll_ms;
    if (l->cfg.quota_poll_ms <= 0)
        l->cfg.quota_poll_ms = l->cfg.sweep_poll_ms;
    l->next_quota = now_ms + l->cfg.quota_poll_ms;
}

int sr_limits_any(const struct sr_limits *l)
{
    const struct sr_limits_config *c = &l->cfg;
    return c->time_limit_ms > 0 || c->attempt_time_limit_ms > 0 || c->max_cost > 0 ||
           (c->sweep_poll && c->sweep_limit > 0);
}

double sr_limits_cost(const struct sr_limits *l, int64_t now_ms)
{
    const int64_t own = now_ms > l->session_at ? now_ms - l->session_at : 0;
    return l->cfg.cost_before + (double)own / MS_PER_HOUR * l->cfg.price_per_hour;
}

static int hit_at(struct sr_limit_hit *hit, const char *cause, const char *what, double limit,
                  double used)
{
    *hit = (struct sr_limit_hit){.cause = cause, .what = what, .limit = limit, .used = used};
    return 1;
}

int sr_limits_check(struct sr_limits *l, int64_t now_ms, int64_t attempt_at,
                    struct sr_limit_hit *hit)
{
    struct sr_limits_config *c = &l->cfg;
    const int64_t own = now_ms > l->session_at ? now_ms - l->session_at : 0;
    if (c->attempt_time_limit_ms > 0 && now_ms - attempt_at >= c->attempt_time_limit_ms)
        return hit_at(hit, "time-limit", "attempt", (double)c->attempt_time_limit_ms,
                      (double)(now_ms - attempt_at));
    if (c->time_limit_ms > 0 && c->used_ms + own >= c->time_limit_ms)
        return hit_at(hit, "time-limit", "run", (double)c->time_limit_ms,
                      (double)(c->used_ms + own));
    const double cost = sr_limits_cost(l, now_ms);
    if (c->max_cost > 0 && cost >= c->max_cost)
        return hit_at(hit, "budget", "run", c->max_cost, cost);
    if (c->sweep_poll && now_ms >= l->next_poll) {
        double used, limit;
        if (c->sweep_poll(c->sweep_ctx, &used, &limit) == 0) {
            c->sweep_used = used;
            c->sweep_limit = limit;
        }
        l->next_poll = now_ms + c->sweep_poll_ms;
    }
    if (c->steer_poll && !l->steered && now_ms >= l->next_steer) {
        const char *why = NULL;
        if (c->steer_poll(c->sweep_ctx, &why) == 1 && why)
            l->steered = why;
        l->next_steer = now_ms + c->steer_poll_ms;
    }
    if (l->steered) /* the operator's stop: no amount, no time */
        return hit_at(hit, l->steered, "sweep", 0, 0);
    if (c->sweep_poll && c->sweep_limit > 0 && c->sweep_used + cost >= c->sweep_limit)
        return hit_at(hit, "budget", "sweep", c->sweep_limit, c->sweep_used + cost);
    if (c->quota_poll && !l->quota_over && now_ms >= l->next_quota) {
        l->quota_over = c->quota_poll(c->quota_ctx, &l->quota_hit) == 1;
        l->next_quota = now_ms + c->quota_poll_ms;
    }
    if (l->quota_over) {
        *hit = l->quota_hit;
        return 1;
    }
    return 0;
}

int sr_limits_hit_of(struct sr_limits *l, int64_t now_ms, int64_t attempt_at, const char *cause,
                     const char *what, struct sr_limit_hit *hit)
{
    const struct sr_limits_config *c = &l->cfg;
    const int64_t own = now_ms > l->session_at ? now_ms - l->session_at : 0;
    const double cost = sr_limits_cost(l, now_ms);
    const int time = strcmp(cause, "time-limit") == 0, budget = strcmp(cause, "budget") == 0;
    if (time && strcmp(what, "attempt") == 0)
        hit_at(hit, "time-limit", "attempt", (double)c->attempt_time_limit_ms,
               (double)(now_ms - attempt_at));
    else if (time && strcmp(what, "run") == 0)
        hit_at(hit, "time-limit", "run", (double)c->time_limit_ms, (double)(c->used_ms + own));
    else if (budget && strcmp(what, "run") == 0)
        hit_at(hit, "budget", "run", c->max_cost, cost);
    else if (budget && strcmp(what, "sweep") == 0)
        hit_at(hit, "budget", "sweep", c->sweep_limit, c->sweep_used + cost);
    else if (strcmp(cause, "quota") == 0 && strcmp(what, "quota") == 0)
        *hit =
            l->quota_over ? l->quota_hit : (struct sr_limit_hit){.cause = "quota", .what = "quota"};
    else if (strcmp(cause, "pruned") == 0 && strcmp(what, "sweep") == 0)
        hit_at(hit, "pruned", "sweep", 0, 0); /* another node's early stopping */
    else if (strcmp(what, "sweep") == 0 && strcmp(cause, "cancelled") == 0)
        hit_at(hit, "cancelled", "sweep", 0, 0);
    else if (strcmp(what, "sweep") == 0 && strcmp(cause, "paused") == 0)
        hit_at(hit, "paused", "sweep", 0, 0);
    else
        return -EINVAL;
    return 0;
}

int64_t sr_limits_next(const struct sr_limits *l, int64_t now_ms, int64_t attempt_at)
{
    if (!sr_limits_any(l) && !l->cfg.sweep_poll && !l->cfg.steer_poll && !l->cfg.quota_poll)
        return 0;
    int64_t w = now_ms + CHECK_EVERY_MS;
    const struct sr_limits_config *c = &l->cfg;
    if (c->attempt_time_limit_ms > 0 && attempt_at + c->attempt_time_limit_ms < w)
        w = attempt_at + c->attempt_time_limit_ms;
    const int64_t run_end = l->session_at + c->time_limit_ms - c->used_ms;
    if (c->time_limit_ms > 0 && run_end < w)
        w = run_end;
    if (c->max_cost > 0 && c->price_per_hour > 0) { /* when the budget runs out */
        const double left_ms =
            (c->max_cost - sr_limits_cost(l, now_ms)) / c->price_per_hour * MS_PER_HOUR;
        if (left_ms < (double)(w - now_ms))
            w = now_ms + (left_ms > 0 ? (int64_t)ceil(left_ms) : 0);
    }
    if (c->sweep_poll && l->next_poll < w)
        w = l->next_poll;
    if (c->steer_poll && !l->steered && l->next_steer < w)
        w = l->next_steer;
    if (c->quota_poll && !l->quota_over && l->next_quota < w)
        w = l->next_quota;
    return w > now_ms ? w : now_ms;
}

static int pruned(const struct sr_limit_hit *hit)
{
    return strcmp(hit->cause, "pruned") == 0;
}

static int quota(const struct sr_limit_hit *hit)
{
    return strcmp(hit->cause, "quota") == 0;
}

/* The option of `spotrun quota set` that raises a quota's measure. */
static const char *quota_option(const struct sr_limit_hit *hit)
{
    const char *m = hit->measure ? hit->measure : "";
    return strcmp(m, "gpu-hours") == 0      ? "--gpu-hours HOURS"
           : strcmp(m, "concurrent") == 0   ? "--max-concurrent N"
           : strcmp(m, "gpus-per-run") == 0 ? "--max-gpus-per-run N"
                                            : "--max-cost AMOUNT";
}

static const char *option_of(const struct sr_limit_hit *hit)
{
    if (strcmp(hit->cause, "time-limit") == 0)
        return strcmp(hit->what, "attempt") == 0 ? "--attempt-time-limit" : "--time-limit";
    return "--max-cost";
}

void sr_limit_extend(const struct sr_limits *l, const struct sr_limit_hit *hit, char *buf,
                     size_t len)
{
    const char *sweep = l->cfg.sweep ? l->cfg.sweep : "NAME";
    if (pruned(hit) || strcmp(hit->cause, "exploit") == 0)
        snprintf(buf, len, "%s", hit->hint ? hit->hint : "a retry resumes it past its rung");
    else if (quota(hit))
        snprintf(buf, len, "raise it with `spotrun quota set %s %s`",
                 hit->quota ? hit->quota : "KEY=VALUE", quota_option(hit));
    else if (strcmp(hit->cause, "cancelled") == 0)
        snprintf(buf, len, "`spotrun sweep retry %s %ld` runs it again", sweep, l->cfg.trial);
    else if (strcmp(hit->cause, "paused") == 0)
        snprintf(buf, len, "`spotrun sweep resume %s` lets workers take it again", sweep);
    else if (strcmp(hit->what, "sweep") == 0)
        snprintf(buf, len, "raise it with `spotrun sweep set %s --max-cost AMOUNT`",
                 l->cfg.sweep ? l->cfg.sweep : "NAME");
    else
        snprintf(buf, len, "give %s larger to extend it", option_of(hit));
}

void sr_limit_describe(const struct sr_limit_hit *hit, char *buf, size_t len)
{
    if (quota(hit)) {
        snprintf(buf, len, "the quota %s: %s %.2f of %.2f", hit->quota ? hit->quota : "?",
                 hit->measure ? hit->measure : "use", hit->used, hit->limit);
    } else if (pruned(hit)) {
        snprintf(buf, len, "the sweep's early stopping (%s)",
                 hit->detail ? hit->detail : "pruned at a rung");
    } else if (strcmp(hit->cause, "exploit") == 0) {
        snprintf(buf, len, "the sweep's population-based training (%s)",
                 hit->detail ? hit->detail : "an exploit");
    } else if (strcmp(hit->cause, "time-limit") == 0) {
        char used[32], limit[32];
        sr_format_duration_ms((int64_t)hit->used, used, sizeof(used));
        sr_format_duration_ms((int64_t)hit->limit, limit, sizeof(limit));
        snprintf(buf, len, "the %s's time limit (%s %s): %s used",
                 strcmp(hit->what, "attempt") == 0 ? "attempt" : "run", option_of(hit), limit,
                 used);
    } else if (strcmp(hit->cause, "cancelled") == 0) {
        snprintf(buf, len, "the sweep's cancel of this trial (spotrun sweep cancel)");
    } else if (strcmp(hit->cause, "paused") == 0) {
        snprintf(buf, len, "the sweep's pause (spotrun sweep pause --stop)");
    } else {
        snprintf(buf, len, "the %s's budget: %.2f of %.2f spent",
                 strcmp(hit->what, "sweep") == 0 ? "sweep" : "run", hit->used, hit->limit);
    }
}

json_t *sr_limit_event(const struct sr_limit_hit *hit)
{
    if (pruned(hit) || strcmp(hit->cause, "exploit") == 0)
        return json_pack("{s:s,s:s,s:I,s:I,s:s?}", "cause", hit->cause, "what", hit->what, "limit",
                         (json_int_t)hit->limit, "used", (json_int_t)hit->used, "detail",
                         hit->detail);
    if (quota(hit))
        return json_pack("{s:s,s:s,s:s?,s:s?,s:f,s:f}", "cause", hit->cause, "what", hit->what,
                         "quota", hit->quota, "measure", hit->measure, "limit",
                         round(hit->limit * 1000) / 1000, "used", round(hit->used * 1000) / 1000);
    if (strcmp(hit->cause, "time-limit") == 0)
        return json_pack("{s:s,s:s,s:I,s:I}", "cause", hit->cause, "what", hit->what, "limit",
                         (json_int_t)hit->limit, "used", (json_int_t)hit->used);
    if (strcmp(hit->cause, "budget") != 0) /* the operator's: no amounts */
        return json_pack("{s:s,s:s}", "cause", hit->cause, "what", hit->what);
    /* Cents are what a budget is about: no float noise in the log. */
    return json_pack("{s:s,s:s,s:f,s:f}", "cause", hit->cause, "what", hit->what, "limit",
                     round(hit->limit * 100) / 100, "used", round(hit->used * 100) / 100);
}
