/*
 * run_limits.c - `spotrun run`'s time limits and budgets before the job
 * starts (see run_limits.h).
 */
#include "run_limits.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "exits.h"
#include "history.h"
#include "instance.h"
#include "log.h"
#include "sweep.h"
#include "sweep_steer.h"
#include "units.h"

#define GO_ON (-1)

int sr_run_limits_given(struct sr_run_limits_opts *o)
{
    const char *zero = o->time_limit_ms == 0           ? "time-limit"
                       : o->attempt_time_limit_ms == 0 ? "attempt-time-limit"
                       : o->max_cost == 0              ? "max-cost"
                                                       : NULL;
    if (zero) {
        char env[32];
        snprintf(env, sizeof(env), "SPOTRUN_%s", zero);
        for (char *p = env; *p; p++)
            *p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        fprintf(stderr,
                "spotrun run: --%s 0 would stop the run before it starts: for no limit, leave "
                "--%s out (and %s unset)\n",
                zero, zero, env);
        return SR_EX_USAGE;
    }
    if (o->time_limit_ms == SR_LIMIT_NOT_GIVEN)
        o->time_limit_ms = 0;
    if (o->attempt_time_limit_ms == SR_LIMIT_NOT_GIVEN)
        o->attempt_time_limit_ms = 0;
    if (o->max_cost == SR_LIMIT_NOT_GIVEN)
        o->max_cost = 0;
    return 0;
}

int sr_run_limits_prepare(struct sr_run_limits *rl, const struct sr_run_limits_opts *o)
{
    *rl = (struct sr_run_limits){.o = o};
    if (o->budget_poll_ms < 100) {
        fprintf(stderr, "spotrun run: --budget-poll must be at least 100ms\n");
        return SR_EX_USAGE;
    }
    if (o->time_limit_ms < 0 || o->attempt_time_limit_ms < 0) {
        fprintf(stderr, "spotrun run: --time-limit and --attempt-time-limit take a duration like "
                        "30m or 12h\n");
        return SR_EX_USAGE;
    }
    const char *t = o->instance_type;
    if (t && *t &&
        (strlen(t) > 63 || strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789._/:+-") != strlen(t))) {
        fprintf(stderr, "spotrun run: invalid value for --instance-type (letters, digits and "
                        "._/:+-, at most 63; e.g. g5.xlarge)\n");
        return SR_EX_USAGE;
    }
    snprintf(rl->instance_type, sizeof(rl->instance_type), "%s", t ? t : "");
    if (!o->prices || !*o->prices)
        return GO_ON;
    const int rc = sr_prices_load(o->prices, &rl->prices);
    if (rc < 0) {
        fprintf(stderr, "spotrun run: --prices: %s\n", sr_strerror(rc));
        return SR_EX_USAGE;
    }
    if (t && *t && !sr_prices_find(&rl->prices, t))
        sr_warn("instance type %s is not in the price table %s", t, o->prices);
    return GO_ON;
}

void sr_run_limits_free(struct sr_run_limits *rl)
{
    sr_prices_free(&rl->prices);
    sr_steer_free(&rl->steer);
}

/* What one instance-hour of this run costs: this instance type's spot
 * price in --prices, else --price-per-hour. 0 = unknown. */
static double price_per_hour(const struct sr_run_limits *rl)
{
    const struct sr_price *p = sr_prices_find(&rl->prices, rl->instance_type);
    return p ? p->spot : rl->o->price_per_hour;
}

/* A budget needs a price: said at the start, never found out at the end. */
static int need_price(const struct sr_run_limits *rl)
{
    const struct sr_run_limits_opts *o = rl->o;
    if (price_per_hour(rl) > 0)
        return GO_ON;
    char why[600];
    if (!o->prices || !*o->prices)
        snprintf(why, sizeof(why),
                 "give --price-per-hour, or --prices FILE with this instance's type");
    else if (!rl->instance_type[0])
        snprintf(why, sizeof(why),
                 "this instance's type is unknown (no cloud metadata service told it), so %s "
                 "cannot price it: give --instance-type TYPE, or --price-per-hour",
                 o->prices);
    else
        snprintf(why, sizeof(why),
                 "instance type %s is not in %s: add it there, or give --price-per-hour",
                 rl->instance_type, o->prices);
    fprintf(stderr, "spotrun run: --max-cost %.2f needs a price per hour: %s\n", o->max_cost, why);
    return SR_EX_USAGE;
}

/* The sweep's spending as the store says now (limit.h's poll): its budget,
 * and what its other trials cost; this trial's own cost the wrapper counts. */
static int sweep_spent(void *ctx, double *used, double *limit)
{
    struct sr_run_limits *rl = ctx;
    struct sr_sweep_budget b;
    int rc = sr_sweep_budget_read(rl->st, rl->sweep, &b);
    if (rc == -ENOENT) {
        *used = *limit = 0;
        return 0;
    }
    if (rc == 0)
        rc = sr_prices_sweep_spent(rl->st, rl->sweep, rl->run_id, &rl->prices,
                                   rl->trial_price > 0 ? rl->trial_price : b.price_per_hour, used);
    if (rc < 0) {
        sr_warn("cannot read sweep %s's spending: %s (the last reading stands)", rl->sweep,
                sr_strerror(rc));
        return rc;
    }
    *limit = b.max_cost;
    return 0;
}

/* The sweep's steering for this trial (sweep_steer.h): 0 and rl's flags,
 * or -errno. */
static int steer_read(struct sr_run_limits *rl)
{
    struct sr_steer_state s;
    const int rc = sr_steer_reread(rl->st, rl->sweep, (size_t)rl->trial + 1, &rl->steer, &s);
    if (rc < 0)
        return rc;
    sr_steer_free(&rl->steer);
    rl->steer = s;
    rl->cancelled = sr_steer_cancelled(&s, (size_t)rl->trial);
    rl->pause_stop = s.paused && s.pause_stop;
    rl->cancel_by[0] = '\0';
    for (size_t i = 0; rl->cancelled && i < s.n_log; i++) /* the cancel in force: the last */
        for (size_t j = 0; s.log[i].action == SR_STEER_CANCEL && j < s.log[i].n_trials; j++)
            if (s.log[i].trials[j] == rl->trial)
                snprintf(rl->cancel_by, sizeof(rl->cancel_by), "%s", s.log[i].by);
    return 0;
}

/* limit.h's steering poll: the operator's stop of this trial, if any.
 * One request (does the next action exist?) while nothing changed; the
 * history is read again only when it grew. */
static int steered(void *ctx, const char **cause)
{
    struct sr_run_limits *rl = ctx;
    int rc = sr_steer_grew(rl->st, rl->sweep, &rl->steer);
    if (rc == 1)
        rc = steer_read(rl);
    if (rc < 0) {
        sr_warn("cannot read sweep %s's steering: %s (read again at the next poll)", rl->sweep,
                sr_strerror(rc));
        return rc;
    }
    *cause = rl->cancelled ? "cancelled" : rl->pause_stop ? "paused" : NULL;
    return *cause != NULL;
}

int sr_run_limits_trial_end(struct sr_run_limits *rl, char *by, size_t len)
{
    if (!rl->sweep || rl->trial < 0 || steer_read(rl) < 0 || !rl->cancelled) {
        return SR_TRIAL_OPEN;
    }
    snprintf(by, len, "%s", rl->cancel_by);
    return SR_TRIAL_CANCELLED;
}

/* A trial the sweep's operator stopped does not start: cancelled (its end
 * mark is written as it exits), or the sweep paused with --stop. 124. */
static int refuse_steered(struct sr_run_limits *rl, struct sr_limits_config *l)
{
    l->steer_poll = steered;
    l->sweep_ctx = rl;
    l->sweep_poll_ms = rl->o->budget_poll_ms;
    l->steer_poll_ms =
        rl->o->budget_poll_ms < SR_STEER_POLL_MS ? rl->o->budget_poll_ms : SR_STEER_POLL_MS;
    l->sweep = rl->sweep;
    l->trial = rl->trial;
    const int rc = steer_read(rl);
    if (rc < 0) {
        fprintf(stderr, "spotrun run: cannot read sweep %s's steering: %s\n", rl->sweep,
                sr_strerror(rc));
        return sr_exit_code(rc);
    }
    if (rl->cancelled) {
        fprintf(stderr,
                "spotrun run: trial %ld of sweep %s was cancelled%s%s: not starting it (exit "
                "124); `spotrun sweep retry %s %ld` runs it again\n",
                rl->trial, rl->sweep, rl->cancel_by[0] ? " by " : "", rl->cancel_by, rl->sweep,
                rl->trial);
        return SR_EX_LIMIT;
    }
    if (rl->pause_stop) {
        fprintf(stderr,
                "spotrun run: sweep %s is paused (--stop): not starting trial %ld (exit 124); "
                "`spotrun sweep resume %s` lets it run\n",
                rl->sweep, rl->trial, rl->sweep);
        return SR_EX_LIMIT;
    }
    return GO_ON;
}

/* A sweep's trial under the sweep's budget: the budget and its price, read
 * once here and polled while the job runs. */
static int sweep_budget(struct sr_run_limits *rl, struct sr_limits_config *l)
{
    if (!rl->sweep)
        return GO_ON;
    const int steer = refuse_steered(rl, l);
    if (steer != GO_ON)
        return steer;
    const int rc = sr_sweep_budget_read(rl->st, rl->sweep, &rl->budget);
    if (rc == 0 && rl->trial_price <= 0) /* the sweep's price, recorded by the start event */
        rl->trial_price = rl->budget.price_per_hour;
    if (rc == -ENOENT || (rc == 0 && rl->budget.max_cost <= 0)) {
        rl->budget.max_cost = 0;
        return GO_ON;
    }
    if (rc < 0) {
        fprintf(stderr, "spotrun run: %s\n", sr_strerror(rc));
        return sr_exit_code(rc);
    }
    l->sweep_poll = sweep_spent;
    l->sweep_ctx = rl;
    l->sweep_limit = rl->budget.max_cost;
    l->sweep_poll_ms = rl->o->budget_poll_ms;
    l->sweep = rl->sweep;
    return GO_ON;
}

/* The instance type the table needs, when not given: the cloud's answer
 * (bounded; the cloud of --notice). */
static void ask_instance_type(struct sr_run_limits *rl, const struct sr_notice_config *notice)
{
    if (!rl->o->prices || !*rl->o->prices || rl->instance_type[0] ||
        sr_instance_type(notice, rl->instance_type, sizeof(rl->instance_type)) < 0)
        return;
    sr_info("instance type %s (from the cloud's metadata)", rl->instance_type);
    if (!sr_prices_find(&rl->prices, rl->instance_type))
        sr_warn("instance type %s is not in the price table %s", rl->instance_type, rl->o->prices);
}

/* A run already at a limit does not start: 124, naming the use and the
 * limit, and how to extend it. */
static int refuse_at_limit(const struct sr_run_limits *rl, const struct sr_limits_config *l,
                           long trial)
{
    char used[32], limit[32];
    sr_format_duration_ms(l->used_ms, used, sizeof(used));
    sr_format_duration_ms(l->time_limit_ms, limit, sizeof(limit));
    if (l->time_limit_ms > 0 && l->used_ms >= l->time_limit_ms) {
        fprintf(stderr,
                "spotrun run: run %s has used %s of its time limit (--time-limit %s): not "
                "starting (exit 124); give --time-limit larger to extend it\n",
                rl->run_id, used, limit);
        return SR_EX_LIMIT;
    }
    if (l->max_cost > 0 && l->cost_before >= l->max_cost) {
        fprintf(stderr,
                "spotrun run: run %s has spent %.2f of its budget (--max-cost %.2f): not "
                "starting (exit 124); give --max-cost larger to extend it\n",
                rl->run_id, l->cost_before, l->max_cost);
        return SR_EX_LIMIT;
    }
    if (l->sweep_poll && l->sweep_limit > 0 && l->sweep_used + l->cost_before >= l->sweep_limit) {
        fprintf(stderr,
                "spotrun run: sweep %s has spent %.2f of its budget (%.2f): not starting trial "
                "%ld (exit 124); raise it with `spotrun sweep set %s --max-cost AMOUNT`\n",
                rl->sweep, l->sweep_used + l->cost_before, l->sweep_limit, trial, rl->sweep);
        return SR_EX_LIMIT;
    }
    if (l->time_limit_ms > 0)
        sr_info("time limit %s, %s used so far", limit, used);
    if (l->max_cost > 0)
        sr_info("budget %.2f, %.2f spent so far at %.4g per hour", l->max_cost, l->cost_before,
                l->price_per_hour);
    if (l->sweep_poll && l->sweep_limit > 0)
        sr_info("sweep %s's budget %.2f, %.2f spent so far", rl->sweep, l->sweep_limit,
                l->sweep_used + l->cost_before);
    return GO_ON;
}

int sr_run_limits_settle(struct sr_run_limits *rl, struct sr_supervise_config *c,
                         const char *run_id, const char *sweep, long trial,
                         struct sr_hist_once *hist)
{
    const struct sr_run_limits_opts *o = rl->o;
    struct sr_limits_config *l = &c->limits;
    rl->st = c->st;
    rl->run_id = run_id;
    rl->sweep = trial >= 0 ? sweep : NULL;
    rl->trial = trial;
    l->time_limit_ms = o->time_limit_ms;
    l->attempt_time_limit_ms = o->attempt_time_limit_ms;
    l->max_cost = o->max_cost;
    ask_instance_type(rl, &c->notice);
    c->instance_type = rl->instance_type;
    rl->trial_price = price_per_hour(rl);
    if (l->max_cost > 0 && need_price(rl) != GO_ON)
        return SR_EX_USAGE;
    const int code = sweep_budget(rl, l);
    if (code != GO_ON)
        return code;
    l->price_per_hour = rl->trial_price * sr_cfg_nodes(c);
    if (l->time_limit_ms <= 0 && l->max_cost <= 0 && !l->sweep_poll)
        return GO_ON;
    int rc;
    const struct sr_history *h = sr_hist_once_get(hist, &rc);
    if (!h)
        return sr_fail(rc, "cannot read the run's history for its limits");
    l->used_ms = h->instance_ms;
    const double cost = sr_prices_run_cost(h, &rl->prices, rl->trial_price);
    l->cost_before = cost > 0 ? cost : 0;
    const int spent = l->sweep_poll ? sweep_spent(rl, &l->sweep_used, &l->sweep_limit) : 0;
    if (spent < 0) /* said by sweep_spent */
        return sr_exit_code(spent);
    return refuse_at_limit(rl, l, trial);
}
