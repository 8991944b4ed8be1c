/*
 * limit.h - when a run stops although nothing failed: its time limit (the
 * run's time across attempts and nodes), this attempt's time limit, and a
 * budget (the run's cost, or its sweep's). docs/runtime.md, "Time limits
 * and budgets", has the rules.
 *
 * DESIGN: the wrapper reads the run's history once at its start (the time
 * and cost recorded before it: runtime/cmd/run_limits.c); from then on a
 * check is arithmetic on its own clock, cheap enough for every turn of the
 * loop.
 * Only a sweep's budget needs the store again (the other trials spend
 * too): the caller's poll function is called at most every sweep_poll_ms,
 * never in between. A sweep's steering has its own, shorter, period
 * (steer_poll_ms): its poll is one cheap request while nothing changed.
 * Runs on the supervisor's thread.
 */
#ifndef SPOTRUN_LIMIT_H
#define SPOTRUN_LIMIT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The sweep's spending, as the store says now: *used is what every other
 * trial of the sweep cost (this run excluded: its own cost is counted by
 * the wrapper), *limit the sweep's budget (0 = none any more). 0, or
 * -errno (the last answer stands). */
typedef int (*sr_limits_sweep_poll)(void *ctx, double *used, double *limit);
/* The sweep's steering (sweep_steer.h), polled every steer_poll_ms (a
 * cheap look: one request while nothing changed): 1 and *cause
 * ("cancelled": the trial; "paused": the sweep, with --stop) when the
 * sweep's operator stops this trial, 0 when not, -errno (read again at the
 * next poll). */
typedef int (*sr_limits_steer_poll)(void *ctx, const char **cause);

/* A sweep's early stopping (runtime/cmd/run_rungs.c): offered each metric
 * the job reports with a step while it runs; 1 and *hit (cause "pruned",
 * what "sweep") stops the trial as a limit does, 0 goes on. */
struct sr_limit_hit;
typedef int (*sr_limits_metric_hook)(void *ctx, const char *name, double value, int64_t step,
                                     struct sr_limit_hit *hit);

/* A team's or user's quota (runtime/cmd/run_quota.c), polled every
 * quota_poll_ms: 1 and *hit (cause "quota", what "quota", its label and
 * measure) when the quota's use is over its limit, 0 when not, -errno
 * (polled again next time). */
typedef int (*sr_limits_quota_poll)(void *ctx, struct sr_limit_hit *hit);

struct sr_limits_config {
    int64_t time_limit_ms;         /* --time-limit, 0 = none */
    int64_t attempt_time_limit_ms; /* --attempt-time-limit, 0 = none */
    int64_t used_ms;               /* the run's time recorded before this wrapper */
    double max_cost;               /* --max-cost, 0 = none */
    double price_per_hour;         /* what one hour of this wrapper costs (every node of it) */
    double cost_before;            /* the run's cost recorded before this wrapper */
    /* A sweep's trial with a budget: polled every sweep_poll_ms. */
    sr_limits_sweep_poll sweep_poll; /* NULL = no sweep budget */
    void *sweep_ctx;
    double sweep_used, sweep_limit; /* the answer read at the start */
    int64_t sweep_poll_ms;
    const char *sweep; /* its name, for messages */
    /* Any sweep's trial: its steering, polled every steer_poll_ms (with
     * sweep_ctx; 0 = sweep_poll_ms); NULL = not a trial. */
    sr_limits_steer_poll steer_poll;
    int64_t steer_poll_ms;
    long trial;                        /* for messages */
    sr_limits_metric_hook metric_hook; /* NULL = no early stopping */
    void *metric_ctx;
    sr_limits_quota_poll quota_poll; /* NULL = no quota applies */
    void *quota_ctx;
    int64_t quota_poll_ms;
};

/* Which limit was reached, and by how much. */
struct sr_limit_hit {
    const char *cause;  /* "time-limit", "budget", "cancelled", "paused" or "pruned" */
    const char *what;   /* "run", "attempt" or "sweep" */
    double limit, used; /* ms for time, an amount for a budget; pruned: the rung's step, the step */
    const char *detail; /* pruned: the decision in words (the hook's), else NULL */
    const char *hint;   /* pruned: how to resume it (the hook's), else NULL */
    const char *quota;  /* quota: its label ("team=vision"), else NULL */
    const char *measure; /* quota: "gpu-hours", "cost", "concurrent", "gpus-per-run" */
};

struct sr_limits {
    struct sr_limits_config cfg;
    int64_t session_at; /* when this wrapper began counting */
    int64_t next_poll;  /* the sweep's next poll */
    int64_t next_steer; /* the steering's next poll */
    /* the steering's stop ("cancelled", "paused"), once polled */
    const char *steered;
    int64_t next_quota; /* the quota's next poll */
    int quota_over;     /* the quota's poll said stop: quota_hit */
    struct sr_limit_hit quota_hit;
};

void sr_limits_init(struct sr_limits *l, const struct sr_limits_config *cfg, int64_t now_ms);
/* Whether any limit is set at all. */
int sr_limits_any(const struct sr_limits *l);
/* 1 and *hit when a limit is reached at now_ms (the attempt began at
 * attempt_at), else 0. May poll the sweep (see above). */
int sr_limits_check(struct sr_limits *l, int64_t now_ms, int64_t attempt_at,
                    struct sr_limit_hit *hit);
/* The hit another node of the group reached ("time-limit", "run"), with
 * this node's own limit and use of it (0 when it has no such limit).
 * -EINVAL for a cause or what that is not one of limit.h's. */
int sr_limits_hit_of(struct sr_limits *l, int64_t now_ms, int64_t attempt_at, const char *cause,
                     const char *what, struct sr_limit_hit *hit);
/* When to check again (at most a second away), 0 = never. */
int64_t sr_limits_next(const struct sr_limits *l, int64_t now_ms, int64_t attempt_at);
/* The run's cost so far (recorded + this wrapper's). */
double sr_limits_cost(const struct sr_limits *l, int64_t now_ms);

/* "the run's time limit (--time-limit 1m): 1m02s used", for the log. */
void sr_limit_describe(const struct sr_limit_hit *hit, char *buf, size_t len);
/* How to extend it: "give --time-limit larger to extend it", "raise it
 * with `spotrun sweep set NAME --max-cost AMOUNT`". */
void sr_limit_extend(const struct sr_limits *l, const struct sr_limit_hit *hit, char *buf,
                     size_t len);
/* The "limit" event's fields (docs/events.md). */
json_t *sr_limit_event(const struct sr_limit_hit *hit);

#endif
