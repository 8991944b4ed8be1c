/*
 * restart.h - the restart policy of `spotrun run`: once the job's process
 * ended, whether the wrapper starts it again and after what delay, gives
 * up (and why), has the group of a multi-node run requeued, finishes the
 * stop under way, or the run is finished. Facts in, a decision out;
 * ending.c gathers the facts and does what the decision says (the log
 * lines, the events, the restart).
 *
 * The rules (docs/runtime.md, "The supervisor loop" and "Stall watchdog"):
 *   - a failure is restarted after a delay that starts at --backoff and
 *     doubles with each restart of this wrapper, at most 60 s;
 *   - at most --max-restarts restarts: then the run gives up with the
 *     job's code (a job's own 75 or 124 becomes 1; outcome.h);
 *   - a hopeless start is not restarted (--max-restarts 0 aside): exit 126
 *     or 127 on the first start, before the job talked to the wrapper or
 *     listened for requests, with no checkpoint to resume from; or the same
 *     wait status on the first start and on its one restart, each within
 *     SR_RESTART_SILENT_MS of its start, in that same silence;
 *   - a stall (the watchdog's stop, outside a notice) counts with the
 *     run's earlier ones: past --max-restarts stalls of the run, or with
 *     this wrapper's restarts spent, the run gives up; one node of a group
 *     has its group requeued (exit 75) while the run's stalls stay within
 *     max_stalls, and gives up past them;
 *   - one node's failure while another node's notice stops the group is
 *     part of that stop (exit 75), never a crash;
 *   - a stop spotrun made (a notice, a limit, a lost lease) is finished
 *     with its own code (outcome.h), whatever the job did.
 *
 * The cause, the record's end and the exit code come from outcome.h's
 * table (sr_attempt_end), which this decision carries (end).
 *
 * Pure: no I/O, no clock, no globals.
 */
#ifndef SPOTRUN_RESTART_H
#define SPOTRUN_RESTART_H

#include <stdint.h>

#include "outcome.h"

#define SR_RESTART_MAX_BACKOFF_MS 60000
#define SR_RESTART_SILENT_MS 60000 /* a start that fails this fast without a word */

/* What the wrapper does next. */
enum sr_restart_do {
    SR_DO_RESTART,       /* start the job again after delay_ms */
    SR_DO_FINISH,        /* the job finished (exit 0): the run is done */
    SR_DO_GIVE_UP,       /* the run fails with end.exit_code */
    SR_DO_REQUEUE_GROUP, /* one stalled node of a group: the group stops, exit 75 */
    SR_DO_JOIN_STOP,     /* one node failed as another node's notice stops the group */
    SR_DO_FINISH_STOP,   /* finish the stop spotrun was making (notice, limit, lease) */
};

/* Why the run gives up (SR_DO_GIVE_UP). */
enum sr_restart_why {
    SR_WHY_NONE,
    SR_WHY_MAX_RESTARTS, /* --max-restarts restarts were made */
    SR_WHY_NOT_RUNNABLE, /* 126/127 on the first start, before a word, no checkpoint */
    SR_WHY_SAME_FAILURE, /* the same failure on the first start and its restart */
    SR_WHY_STALLS,       /* the run stalled more often than allowed */
};

struct sr_restart_facts {
    /* outcome.h's facts: stop, limit, code, signaled, oom, multinode,
     * group_stopping, stop_signo (restarts_left, stall_give_up and
     * hopeless are this policy's to fill in) */
    struct sr_end_facts end;
    int status; /* the job's wait status: a same failure compares it */
    unsigned restarts, max_restarts;
    int64_t backoff_ms; /* --backoff: the first restart's delay */
    /* A hopeless start: whether the attempt talked to the wrapper or
     * listened for requests, whether the run has a checkpoint, how long the
     * attempt ran, and the first start's silent failure (its wait status,
     * 0 = none). */
    int talked, listened, has_checkpoint;
    int64_t ran_ms;
    int first_silent_fail;
    /* Stalls: the watchdog's stop is judged by their count unless a notice
     * is under way (in_notice); the run's stalls (this wrapper's and its
     * earlier ones') and what a group allows (max_stalls). */
    int in_notice;
    unsigned stalls, max_stalls;
};

struct sr_restart {
    enum sr_restart_do what;
    enum sr_restart_why why;
    int64_t delay_ms;      /* SR_DO_RESTART */
    int first_silent_fail; /* what the wrapper remembers as the first start's silent failure */
    struct sr_end end;     /* outcome.h: cause, record, exit code */
};

/* What the end of the job's process leads to. */
void sr_restart_decide(const struct sr_restart_facts *f, struct sr_restart *out);

/* The delay before the restart that follows `restarts` earlier ones:
 * backoff_ms doubled each time, at most SR_RESTART_MAX_BACKOFF_MS. */
int64_t sr_restart_delay(int64_t backoff_ms, unsigned restarts);

#endif
