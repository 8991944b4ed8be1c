/*
 * plan.h - `spotrun plan`: a capacity plan from the record: how many GPUs
 * are busy how much of the time (the concurrency duration curve), and how
 * many of them are worth reserving when the rest bursts on spot
 * (docs/cost.md, "Capacity plan: reserved baseline vs spot burst").
 *
 * Pure: works on the per-run summaries (runsum.h) the caller loaded and on
 * intervals; nothing here reads the store, prints or exits.
 *
 * An attempt keeps gpus x nodes GPUs busy over [start, end) clipped to the
 * window; an attempt whose GPU count is unknown counts 1 GPU per node
 * (counted in unknown_gpu_attempts). The window is [--since, --until),
 * either end left open taken from the attempts' earliest start or latest
 * end.
 *
 * The rule: the L-th GPU is reserved only when the share of the window's
 * hours with at least L GPUs busy, times spot's effective price, exceeds
 * the reserved price; spot's effective price is its list price times
 * (1 + (lost work + checkpoint staging) / useful GPU-hours). Work of runs
 * labelled interruptible=false is served by the reserved GPUs first, and
 * its part above them is priced on-demand (in the all-spot strategy too).
 */
#ifndef SPOTRUN_PLAN_H
#define SPOTRUN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "prices.h"
#include "runsum.h"
#include "stats.h"

/* What an attempt keeps busy: [t0, t1) in unix ms. */
struct sr_plan_iv {
    int64_t t0, t1;
    unsigned gpus;
    int firm; /* not interruptible: on-demand above the reserved GPUs */
};

/* A stretch of time with the same GPUs (and jobs) busy. */
struct sr_plan_seg {
    double h;
    unsigned gpus, firm, jobs;
};

/* The intervals clipped to [lo, hi) cut into stretches, in time order
 * (idle ones included). *out is malloc'd. 0 or -ENOMEM. */
int sr_plan_sweep(const struct sr_plan_iv *iv, size_t n, int64_t lo, int64_t hi,
                  struct sr_plan_seg **out, size_t *n_out);

struct sr_plan_curve {
    double window_h, gpu_h, firm_gpu_h;
    unsigned peak_gpus, peak_jobs;
    double *share; /* [L] for L in 0..peak_gpus: share of window_h with >= L GPUs busy */
};

int sr_plan_curve(const struct sr_plan_seg *s, size_t n, struct sr_plan_curve *out);
void sr_plan_curve_free(struct sr_plan_curve *c);

/* The GPUs to reserve: the number of levels L >= 1 with
 * share[L] x eff_spot > reserved (share falls with L). */
unsigned sr_plan_level(const struct sr_plan_curve *c, double eff_spot, double reserved);

/* Weekly costs of the three strategies (per 168 hours of the window). */
struct sr_plan_cost {
    double on_demand; /* every GPU-hour on-demand; NAN without an on-demand price */
    double spot;      /* interruptible GPU-hours at eff_spot, the rest on-demand */
    double mixed;     /* L reserved all the window + above them spot (firm work on-demand) */
};

void sr_plan_costs(const struct sr_plan_seg *s, size_t n, const struct sr_plan_curve *c, unsigned L,
                   double od, double eff_spot, double reserved, struct sr_plan_cost *out);

/* ---- over the store's runs ---- */

struct sr_plan_query {
    struct sr_stats_query sq; /* window, --label, prices (stats.h) */
    int by_team;              /* 1: one plan over every instance type (--by team) */
    double reserved;          /* per GPU-hour; 0 = no plan, the curves only */
};

struct sr_plan_group {
    char name[64]; /* the instance type, or "all" (--by team) */
    struct sr_plan_curve curve;
    double spot, od;           /* list prices per GPU-hour, usage-weighted; 0 = unknown */
    double lost_h, stage_h;    /* GPU-hours */
    double overhead, eff_spot; /* (lost + staging) / useful; spot x (1 + overhead) */
    unsigned reserve;          /* L (with a reserved price) */
    struct sr_plan_cost cost;
    double break_even; /* reserved / eff_spot: the utilization a reserved GPU needs */
};

/* The label that names a run's kind of job (training, eval, sweep...). */
#define SR_PLAN_JOB_LABEL "job_type"

struct sr_plan {
    int64_t lo, hi; /* the window, unix ms (0, 0: no attempt) */
    double window_h, weeks;
    uint64_t runs, attempts, unknown_gpu_attempts, failures;
    double gpu_h;
    unsigned peak_gpus, peak_jobs;
    struct sr_plan_group *groups;
    size_t n_groups;
    struct sr_stats weekly;  /* by week,team: gpu_h + gpu_unknown_h */
    struct sr_stats by_zone; /* preemptions per zone */
    struct sr_stats by_type; /* per instance type */
    struct sr_stats by_job;  /* per job_type label: GPU-hours, utilization, queued */
};

int sr_plan_compute(const struct sr_runsum *runs, size_t n, const struct sr_plan_query *q,
                    struct sr_plan *out);
void sr_plan_free(struct sr_plan *p);

/* Attempts ended by a failure (crashed, oom, stalled, vanished, lease
 * lost) per attempt; attempts after a run's first per run. NAN when none. */
double sr_plan_failure_rate(const struct sr_plan *p);
int sr_plan_is_failure(enum sr_hist_cause c);
/* r's attempts that ended by a failure. */
uint64_t sr_plan_failed(const struct sr_stats_row *r);
double sr_plan_retry_rate(const struct sr_plan *p);

#endif
