/*
 * metricthin.h - how many of the values a job reports (`spotrun metric`,
 * spotrun_metric()) reach its attempt's event log (docs/events.md,
 * "Metric volume"): per name, every value up to a budget, then every 2nd
 * for the next budget values written, every 4th for the next, and so on
 * (the curve stays even over the attempt, its lines grow with the log of
 * the count); and at most SR_METRIC_LINES_PER_BUDGET x budget metric lines
 * per attempt over all names. What is not written is summed up exactly:
 * per name the count, the last value and the lowest and highest (with
 * their steps), one `metric_summary` line per name rewritten at the log's
 * end at each flush.
 *
 * Not thread-safe: the event log calls it under its lock. Pure (no I/O).
 */
#ifndef SPOTRUN_METRICTHIN_H
#define SPOTRUN_METRICTHIN_H

#include <stddef.h>
#include <stdint.h>

#define SR_METRIC_BUDGET_DEFAULT 1000 /* values per name written before thinning */
#define SR_METRIC_BUDGET_MAX 10000000 /* SPOTRUN_METRIC_BUDGET's range: 1 to this */
#define SR_METRIC_LINES_PER_BUDGET 32 /* metric lines per attempt: this x budget */
#define SR_METRIC_NAMES_MAX 64        /* names per attempt (the views read 64) */
#define SR_METRIC_NAME_MAX 64         /* as `spotrun metric` takes */

/* 1 when the index-th value (0-based) of one name is written as its own
 * line under budget (> 0): segment k (k = 0, 1, ...) covers budget x 2^k
 * values from index budget x (2^k - 1) and writes every 2^k-th of them. */
int sr_metric_keep(uint64_t index, uint64_t budget);

struct sr_metric_name {
    char name[SR_METRIC_NAME_MAX + 1];
    uint64_t count;   /* values reported */
    uint64_t dropped; /* of them, not written as their own line */
    double min, max, last;
    int64_t min_step, max_step, last_step; /* -1: none given */
    int64_t last_ms;
};

struct sr_metric_thin {
    uint64_t budget;
    uint64_t lines; /* metric lines written */
    struct sr_metric_name v[SR_METRIC_NAMES_MAX];
    size_t n;
    int full_warned; /* the line or name cap was said once */
};

/* budget 0: SR_METRIC_BUDGET_DEFAULT. */
void sr_metric_thin_init(struct sr_metric_thin *t, uint64_t budget);

/* The decision for one reported value (at unix ms, step -1 = none):
 * 1 write it as its own line, 0 it is only summed up (its name's
 * metric_summary says it), -1 it is dropped: a name past
 * SR_METRIC_NAMES_MAX (never read by the views either). */
int sr_metric_thin_add(struct sr_metric_thin *t, const char *name, double value, int64_t step,
                       int64_t ms);

/* The budget SPOTRUN_METRIC_BUDGET asks for: 0 when unset; -EINVAL when
 * it is not a whole number in 1..SR_METRIC_BUDGET_MAX. */
int64_t sr_metric_budget_env(void);

#endif
