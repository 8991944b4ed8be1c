/*
 * run_quota.h - `spotrun run` under a team's or user's quota (record/
 * quota.h; docs/cost.md, "Quotas and approvals").
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
#include "limit.h"
#include "store.h"
#include "supervisor.h"

struct sr_run_quota {
    struct sr_store *st;
    struct sr_labels labels; /* the run's */
    const char *run_id;
    int64_t poll_ms;
    uint64_t gpus; /* CUDA_VISIBLE_DEVICES x nodes, 0 = unknown */
    int applies;   /* a quota matched at the start */
    int64_t waited_ms;
    /* the quota over, for the limit hit's strings */
    char label[2 * SR_LABEL_MAX + 2], measure[16];
};

/* Before the lease: refuses (79), holds (wait), or lets the run go on
 * (-1). labels: the run's (json object, may be NULL). */
int sr_run_quota_check(struct sr_run_quota *q, struct sr_store *st, const char *run_id,
                       const json_t *labels, unsigned nodes, int64_t poll_ms, int wait);
/* Under the lease: the poll while the job runs, and the hold's queue time,
 * into c (nothing when no quota applies). q must outlive the supervisor. */
void sr_run_quota_settle(struct sr_run_quota *q, struct sr_supervise_config *c);

#endif
