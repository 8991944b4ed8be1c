/*
 * run_quota.h - `spotrun run` under a team's or user's quota (record/
 * quota.h; docs/cost.md, "Quotas and approvals").
 *
 * A quota with --approve-above: a run whose own size (--time-limit x its
 * GPUs in GPU-hours, --max-cost in cost; none given: no bound, above)
 * exceeds it starts only once `spotrun approve RUN --by NAME` recorded an
 * approval (refused, 79, naming that command; or held); who approved goes
 * to the start event ("approved": {"by", "unix_ms"}).
 *
 * Before the lease: every quota whose label the run carries is checked
 * (its use in the period so far, the runs running now, the run's GPUs):
 * one over refuses the run (exit 79, naming the quota and its use), or,
 * with --wait-quota, holds it, looking again every --budget-poll (a new
 * version of the quota is read each time) until none is over; the hold is
 * recorded as queue time (the start event's quota_wait_ms).
 *
 * While the job runs: the same quotas are polled every --budget-poll
 * (limit.h's quota poll); GPU-hours and cost over their limit stop the run
 * as a budget does (checkpoint, stop, exit 124, cause "quota"). The run's
 * keep-alive is made as frequent as the poll, so the record the others'
 * polls read is at most that old.
 */
#ifndef SPOTRUN_RUN_QUOTA_H
#define SPOTRUN_RUN_QUOTA_H

#include <stdint.h>

#include "labels.h"
#include "quota.h"
#include "limit.h"
#include "store.h"
#include "supervisor.h"

struct sr_run_quota {
    struct sr_store *st;
    struct sr_labels labels; /* the run's */
    const char *run_id, *sweep;
    int64_t poll_ms;
    uint64_t gpus; /* CUDA_VISIBLE_DEVICES x nodes, 0 = unknown */
    int applies;   /* a quota matched at the start */
    int64_t waited_ms;
    /* the run's own size (its --time-limit, --max-cost; 0 = none), and
     * its approval (`spotrun approve`), read while it needs one */
    int64_t time_limit_ms;
    double max_cost;
    struct sr_approval approval;
    int approved;
    /* the quota over, for the limit hit's strings */
    char label[2 * SR_LABEL_MAX + 2], measure[16];
};

/* Before the lease: refuses (79), holds (wait), or lets the run go on
 * (-1). labels: the run's (json object, may be NULL); time_limit_ms and
 * max_cost its own limits (0 = none), for a quota's --approve-above: a
 * run above it needs `spotrun approve RUN` first. */
struct sr_run_quota_args {
    const char *run_id;
    const json_t *labels;
    unsigned nodes;
    int64_t poll_ms, time_limit_ms;
    double max_cost;
    int wait;
    const char *sweep; /* the sweep the run is a trial of (NULL: none): its approval covers it */
};
int sr_run_quota_check(struct sr_run_quota *q, struct sr_store *st,
                       const struct sr_run_quota_args *a);
/* Under the lease: the poll while the job runs, and the hold's queue time,
 * into c (nothing when no quota applies). q must outlive the supervisor. */
void sr_run_quota_settle(struct sr_run_quota *q, struct sr_supervise_config *c);

#endif
