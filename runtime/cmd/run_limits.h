/*
 * run_limits.h - `spotrun run`'s time limits and budgets before the job
 * starts (docs/runtime.md, "Time limits and budgets"): the price table and
 * the instance type, the run's history (time used, money spent), a sweep's
 * budget, and the refusal of a run already at a limit (exit 124). What it
 * settles goes to the supervisor (sr_supervise_config.limits), which
 * checks the limits while the job runs (runtime/supervise/limit.h).
 *
 * Steps return -1 when the run goes on, else the exit code (cmd_run.h's
 * convention); they print their own messages.
 */
#ifndef SPOTRUN_RUN_LIMITS_H
#define SPOTRUN_RUN_LIMITS_H

#include <stdint.h>

#include "prices.h"
#include "supervisor.h"
#include "sweep_budget.h"
#include "sweep_steer.h"

/* The options, as given (--time-limit ... --budget-poll). */
struct sr_run_limits_opts {
    int64_t time_limit_ms, attempt_time_limit_ms, budget_poll_ms;
    double max_cost, price_per_hour;
    const char *prices, *instance_type;
};

struct sr_run_limits {
    const struct sr_run_limits_opts *o;
    struct sr_prices prices; /* --prices */
    char instance_type[64];  /* --instance-type, or the cloud's answer with --prices */
    struct sr_sweep_budget budget;
    double trial_price; /* one instance-hour of this run */
    /* what the sweep's poll reads (sweep_spent, steered) */
    struct sr_store *st;
    const char *run_id, *sweep;
    long trial;
    /* the sweep's steering (sweep_steer.h) as last read: the trial was
     * cancelled (by whom), the sweep paused with --stop */
    int cancelled, pause_stop;
    char cancel_by[128];
    struct sr_steer_state steer; /* the last read: each poll reads only what is new */
};

/* How often a trial looks for new steering (docs/sweeps.md, "Steering"):
 * one HEAD-sized request each time, so that a cancel or a pause --stop
 * reaches a running trial within seconds; --budget-poll shorter than this
 * shortens it too. */
#define SR_STEER_POLL_MS 3000

/* The value a limit's option has when it was not given (cmd_run.c): a
 * given 0 would stop at once, and never means "no limit". */
#define SR_LIMIT_NOT_GIVEN (-1)

/* Refuses --time-limit, --attempt-time-limit or --max-cost given as 0
 * (or their environment twins): says how to mean no limit (leave it out)
 * and returns SR_EX_USAGE; else sets those not given to 0 (none) and
 * returns 0. */
int sr_run_limits_given(struct sr_run_limits_opts *o);

/* Before anything starts: the options' values, --instance-type's word and
 * the price table (a bad line: 64 naming file:line). */
int sr_run_limits_prepare(struct sr_run_limits *rl, const struct sr_run_limits_opts *o);
/* Under the lease: the instance type (asked of the cloud when --prices
 * needs it), the price, the run's (and its sweep's) use so far, into
 * c->limits; a run already at a limit is refused (124). sweep NULL and
 * trial -1 when the run is no sweep's trial. rl must outlive the
 * supervisor (its sweep poll reads it). */
int sr_run_limits_settle(struct sr_run_limits *rl, struct sr_supervise_config *c,
                         const char *run_id, const char *sweep, long trial,
                         struct sr_hist_once *hist);
void sr_run_limits_free(struct sr_run_limits *rl);
/* The trial's end mark for a run that stopped with 124: SR_TRIAL_CANCELLED
 * (and who) when the sweep's operator cancelled the trial, else
 * SR_TRIAL_OPEN (a budget, a limit, a pause: the trial stays open). Reads
 * the steering again (a cancel may have come while the stop was made). */
int sr_run_limits_trial_end(struct sr_run_limits *rl, char *by, size_t len);

#endif
