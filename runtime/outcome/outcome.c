/*
 * outcome.c - how an attempt ended (see outcome.h): the one table.
 */
#include "outcome.h"

#include <signal.h>
#include <stddef.h>
#include <string.h>

#include "exits.h"
#include "sweep.h"

int sr_end_failure_code(int code)
{
    return code == SR_EX_TEMPFAIL || code == SR_EX_LIMIT ? 1 : code;
}

int sr_end_stop_code(enum sr_stop stop, int multinode)
{
    switch (stop) {
    case SR_STOP_NOTICE:
        return SR_EX_TEMPFAIL;
    case SR_STOP_LIMIT:
        return SR_EX_LIMIT;
    case SR_STOP_LEASE:
        return SR_EX_CANTCREAT;
    case SR_STOP_STALL:
        return multinode ? SR_EX_TEMPFAIL : 0; /* one node: restarted or failed */
    case SR_STOP_NONE:
        break;
    }
    return 0;
}

enum sr_hist_cause sr_end_cause(enum sr_stop stop, enum sr_hist_cause limit, int exited, int code,
                                int oom)
{
    switch (stop) {
    case SR_STOP_LEASE:
        return SR_CAUSE_LEASE_LOST;
    case SR_STOP_STALL:
        return SR_CAUSE_STALLED;
    case SR_STOP_LIMIT:
        return limit == SR_CAUSE_BUDGET || limit == SR_CAUSE_CANCELLED ||
                       limit == SR_CAUSE_PAUSED || limit == SR_CAUSE_PRUNED ||
                       limit == SR_CAUSE_EXPLOIT || limit == SR_CAUSE_QUOTA
                   ? limit
                   : SR_CAUSE_TIME_LIMIT;
    case SR_STOP_NOTICE:
        return SR_CAUSE_PREEMPTED;
    case SR_STOP_NONE:
        break;
    }
    if (!exited)
        return SR_CAUSE_VANISHED;
    if (code == 0)
        return SR_CAUSE_DONE;
    return oom ? SR_CAUSE_OOM : SR_CAUSE_CRASHED;
}

/* The job ended by itself: done, or a failure restarted or given up. */
static void ended_by_itself(const struct sr_end_facts *f, struct sr_end *o)
{
    if (f->code == 0) {
        *o = (struct sr_end){SR_NEXT_END, SR_CAUSE_DONE, SR_END_DONE, 0, 1, 0};
        return;
    }
    if (f->multinode && f->group_stopping) {
        /* Its collectives failed because another node is being stopped:
         * part of that preemption, not a crash. */
        *o = (struct sr_end){
            SR_NEXT_STOP, SR_CAUSE_PREEMPTED, SR_END_PREEMPTED, SR_EX_TEMPFAIL, 0, 0};
        return;
    }
    o->cause = f->oom ? SR_CAUSE_OOM : SR_CAUSE_CRASHED;
    o->done = 0;
    if (f->restarts_left > 0 && !f->hopeless) {
        o->next = SR_NEXT_RESTART;
        o->end = SR_END_CRASHED;
        o->exit_code = 0;
        o->gave_up = 0;
        return;
    }
    o->next = SR_NEXT_END;
    o->end = SR_END_FAILED;
    o->exit_code = sr_end_failure_code(f->code);
    o->gave_up = 1;
}

/* The watchdog stopped it: restarted from the newest checkpoint, or given
 * up (a failure), or, one node of a group, the group requeued (75). */
static void stalled(const struct sr_end_facts *f, struct sr_end *o)
{
    o->cause = SR_CAUSE_STALLED;
    o->done = 0;
    if (f->stall_give_up || (!f->multinode && f->restarts_left <= 0)) {
        o->next = SR_NEXT_END;
        o->end = SR_END_FAILED;
        /* The status it ended with; a job that exits 0 when stopped gets
         * the status of the signal that stopped it. */
        o->exit_code = f->code ? sr_end_failure_code(f->code)
                               : 128 + (f->stop_signo ? f->stop_signo : SIGTERM);
        o->gave_up = 1;
    } else if (f->multinode) {
        *o =
            (struct sr_end){SR_NEXT_STOP, SR_CAUSE_STALLED, SR_END_PREEMPTED, SR_EX_TEMPFAIL, 0, 0};
    } else {
        o->next = SR_NEXT_RESTART;
        o->end = SR_END_CRASHED;
        o->exit_code = 0;
        o->gave_up = 0;
    }
}

void sr_attempt_end(const struct sr_end_facts *f, struct sr_end *o)
{
    switch (f->stop) {
    case SR_STOP_NONE:
        ended_by_itself(f, o);
        return;
    case SR_STOP_STALL:
        stalled(f, o);
        return;
    case SR_STOP_NOTICE:
        *o = (struct sr_end){
            SR_NEXT_STOP, SR_CAUSE_PREEMPTED, SR_END_PREEMPTED, SR_EX_TEMPFAIL, 0, 0};
        return;
    case SR_STOP_LIMIT:
        *o = (struct sr_end){SR_NEXT_STOP,
                             sr_end_cause(f->stop, f->limit, 1, f->code, f->oom),
                             SR_END_STOPPED,
                             SR_EX_LIMIT,
                             0,
                             0};
        return;
    case SR_STOP_LEASE:
        *o = (struct sr_end){
            SR_NEXT_STOP, SR_CAUSE_LEASE_LOST, SR_END_SUPERSEDED, SR_EX_CANTCREAT, 0, 0};
        return;
    }
}

const struct sr_run_end_row *sr_run_end_row(enum sr_run_end e)
{
    static const struct sr_run_end_row rows[SR_RUN_END_COUNT] = {
        [SR_RUN_ERROR] = {"error", -1, NULL, SR_STOP_NONE, SR_END_OPEN, SR_TRIAL_OPEN},
        [SR_RUN_DONE] = {"done", 0, "done", SR_STOP_NONE, SR_END_DONE, SR_TRIAL_DONE},
        [SR_RUN_NODE_DONE] = {"node-done", 0, "node_done", SR_STOP_NONE, SR_END_DONE,
                              SR_TRIAL_OPEN},
        [SR_RUN_DONE_NOTICE] = {"done-notice", SR_EX_TEMPFAIL, "done", SR_STOP_NONE, SR_END_DONE,
                                SR_TRIAL_DONE},
        [SR_RUN_PREEMPTED] = {"preempted", SR_EX_TEMPFAIL, "preempted", SR_STOP_NOTICE,
                              SR_END_PREEMPTED, SR_TRIAL_OPEN},
        [SR_RUN_GROUP_REQUEUE] = {"group-requeue", SR_EX_TEMPFAIL, NULL, SR_STOP_STALL,
                                  SR_END_PREEMPTED, SR_TRIAL_OPEN},
        [SR_RUN_LIMIT] = {"limit", SR_EX_LIMIT, NULL, SR_STOP_LIMIT, SR_END_STOPPED, SR_TRIAL_OPEN},
        [SR_RUN_LEASE_LOST] = {"lease-lost", SR_EX_CANTCREAT, NULL, SR_STOP_LEASE,
                               SR_END_SUPERSEDED, SR_TRIAL_OPEN},
        [SR_RUN_FAILED] = {"failed", -1, NULL, SR_STOP_NONE, SR_END_FAILED, SR_TRIAL_FAILED},
    };
    return &rows[(unsigned)e < SR_RUN_END_COUNT ? e : SR_RUN_ERROR];
}

const char *sr_hist_cause_name(enum sr_hist_cause c)
{
    static const char *const names[] = {"",        "done",       "preempted", "vanished",
                                        "crashed", "oom",        "stalled",   "time-limit",
                                        "budget",  "lease-lost", "cancelled", "paused",
                                        "pruned",  "exploit",    "quota"};
    return (unsigned)c < SR_CAUSE_COUNT ? names[c] : "";
}

const char *sr_stop_name(enum sr_stop s)
{
    static const char *const names[] = {"none", "notice", "limit", "stall", "lease"};
    return (unsigned)s <= SR_STOP_LEASE ? names[s] : "";
}

enum sr_hist_cause sr_limit_cause_of(const char *name)
{
    static const enum sr_hist_cause limits[] = {
        SR_CAUSE_TIME_LIMIT, SR_CAUSE_BUDGET,  SR_CAUSE_CANCELLED, SR_CAUSE_PAUSED,
        SR_CAUSE_PRUNED,     SR_CAUSE_EXPLOIT, SR_CAUSE_QUOTA};
    for (size_t i = 0; name && i < sizeof(limits) / sizeof(limits[0]); i++)
        if (strcmp(name, sr_hist_cause_name(limits[i])) == 0)
            return limits[i];
    return SR_CAUSE_NONE;
}
