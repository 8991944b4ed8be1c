/*
 * stats.h - `spotrun stats`: the fleet's numbers over many runs, grouped
 * by labels, instance type, zone, cloud, host, day / week / month or end
 * cause (docs/cost.md).
 *
 * Pure: works on an array of per-run summaries (runsum.h) the caller
 * loaded; nothing here reads the store, prints or exits.
 *
 * The window: an attempt counts when it overlaps [since, until); its time
 * is clipped to the window (a weekly report bills the week's hours only),
 * and with a day, week or month key it is cut at the period boundaries
 * (UTC; ISO weeks start on Monday), each piece going to its own group.
 * What happens at an instant goes to the piece that holds it: the end cause
 * (and so a preemption) to the piece holding the attempt's end, only when
 * that end is inside the window; lost work is the span [end - lost, end],
 * clipped the same way. Staging time and GPU samples are shared out in
 * proportion to the piece's share of the attempt.
 */
#ifndef SPOTRUN_STATS_H
#define SPOTRUN_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "history.h"
#include "labels.h"
#include "prices.h"
#include "runsum.h"

enum sr_stats_by {
    SR_BY_LABEL,
    SR_BY_INSTANCE_TYPE,
    SR_BY_ZONE,
    SR_BY_CLOUD,
    SR_BY_HOST,
    SR_BY_DAY,
    SR_BY_WEEK,
    SR_BY_MONTH,
    SR_BY_CAUSE,
};

#define SR_STATS_BY_MAX 8
#define SR_STATS_KEY_MAX 128 /* bytes of one key's value (a host name's) */

struct sr_stats_query {
    struct {
        enum sr_stats_by kind;
        char name[SR_LABEL_MAX + 1]; /* the key as given ("team", "week") */
    } by[SR_STATS_BY_MAX];
    size_t n_by;
    int64_t since_ms, until_ms; /* [since, until), unix ms; 0 = open */
    struct sr_labels want;      /* only runs carrying all of these */
    const struct sr_prices *prices;
    double spot_per_hour, on_demand_per_hour; /* flat prices, 0 = none */
};

/* One group's sums (and the total's). Derived numbers: sr_stats_*(). */
struct sr_stats_row {
    char key[SR_STATS_BY_MAX][SR_STATS_KEY_MAX];
    uint64_t runs, attempts;
    double inst_h;               /* attempt wall x nodes */
    double gpu_h, gpu_unknown_h; /* instance hours with a known GPU count x gpus; the rest */
    double cost, unpriced_h;     /* spot cost of the priced hours; hours with no price */
    double od_cost, od_spot_cost, od_unpriced_h; /* hours with both prices: on-demand and spot */
    uint64_t preemptions;  /* attempts a cloud's notice stopped (sr_stats_cloud_notice) */
    uint64_t signal_stops; /* attempts stopped by any other notice: a signal, notify, a peer */
    double lost_h, lost_cost, lost_unpriced_h; /* lost instance hours */
    /* instance hours of attempts a sweep pruned or cancelled: spent by its
     * choice, not lost */
    double dropped_h;
    uint64_t ends[SR_CAUSE_COUNT]; /* [SR_CAUSE_NONE]: still running */
    double wall_s, stage_s;        /* attempt wall (not x nodes) and staging seconds */
    /* hours a run waited with no attempt running between two of its
     * attempts (capacity after a preemption, a hold), in the window: the
     * gap before an attempt counts in that attempt's row */
    double queued_h;
    double gpu_samples, gpu_util_sum, gpu_idle_sum; /* sums weighted by samples */
    size_t last_run, last_att;                      /* internal: counted once */
};

struct sr_stats {
    struct sr_stats_row *rows; /* sorted by key */
    size_t n, cap;
    struct sr_stats_row total;
    size_t runs_in; /* runs given, before filters */
};

/* Parses --by's comma list into q. 0, or -EINVAL with what is wrong. */
int sr_stats_parse_by(const char *list, struct sr_stats_query *q, char *err, size_t len);
/* Parses --since / --until: YYYY-MM-DD (UTC midnight; with end set, the
 * midnight after: --until takes the whole day) or an ISO time
 * YYYY-MM-DDTHH:MM[:SS[.fff]][Z|+HH:MM]. 0 or -EINVAL. */
int sr_stats_parse_time(const char *s, int end, int64_t *ms);

int sr_stats_compute(const struct sr_runsum *runs, size_t n, const struct sr_stats_query *q,
                     struct sr_stats *out);
void sr_stats_free(struct sr_stats *s);

/* Period names of t (UTC): "2026-12-07", "2026-W50", "2026-12". */
void sr_stats_day(int64_t t, char *buf, size_t len);
void sr_stats_week(int64_t t, char *buf, size_t len);
void sr_stats_month(int64_t t, char *buf, size_t len);
/* The next day / week (Monday) / month boundary after t, unix ms. */
int64_t sr_stats_next_boundary(int64_t t, enum sr_stats_by period);

/* 1 when a notice of this source ("aws", "gcp", "azure", and "peer:R:aws"
 * from another node of a group, where the cloud preempted node R) is the
 * cloud's: a preemption that the rate and MTBP count. A signal from outside
 * ("signal:SIGTERM": an operator's kill, Slurm, Kubernetes), `spotrun
 * notify` ("manual", or any --source but a cloud's) and a peer's stall are
 * signal stops. "" (a summary written before sources were kept) counts as
 * the cloud's, as it did then. */
int sr_stats_cloud_notice(const char *source);

/* Derived numbers; NAN when undefined (no hours, no preemption...). */
double sr_stats_rate_per_100h(const struct sr_stats_row *r); /* cloud preemptions / 100 inst-h */
double sr_stats_mtbp_h(const struct sr_stats_row *r);        /* inst-h per cloud preemption */
double sr_stats_ckpt_overhead(const struct sr_stats_row *r); /* staging / wall */
double sr_stats_gpu_util(const struct sr_stats_row *r);      /* % */
double sr_stats_gpu_idle(const struct sr_stats_row *r);      /* share */
double sr_stats_saving(const struct sr_stats_row *r);        /* od - spot, NAN without od */

/* "running" for SR_CAUSE_NONE, else sr_hist_cause_name(). */
const char *sr_stats_cause_name(enum sr_hist_cause c);

#endif
