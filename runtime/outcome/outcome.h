/*
 * outcome.h - how an attempt ended, decided in one place.
 *
 * The wrapper (runtime/supervise) asks sr_attempt_end() what the end of the
 * job's process means: its cause in the record, what happens next (restart,
 * finish the stop under way, or end the run), whether the run is done and
 * spotrun's exit code. The history reader (runtime/record/history.c) names
 * an ended attempt's cause from its log with sr_end_cause(), the same rule
 * on the facts the log recorded; docs/cli.md's exit-code table is checked
 * against sr_end_table() (tests/unit/test_outcome.c).
 *
 * The rules (docs/events.md, "Attempt cause"; docs/cli.md, "Exit codes"):
 *   - a stop spotrun made (a notice, a limit, the stall watchdog, a lost
 *     lease) is never a success, whatever the job's exit status;
 *   - 75 and 124 come only from spotrun's own decisions (a notice; a limit):
 *     a job that fails with its own 75 or 124 makes spotrun exit 1;
 *   - a notice's end is 75, a limit's 124, a lost lease's 73, whatever the
 *     job did when asked to stop.
 *
 * Pure: no I/O, no clock, no globals. It lives in runtime/ (above
 * storage/, below supervise and record, which both use it): only runtime/
 * chooses exit codes (docs/internals.md).
 */
#ifndef SPOTRUN_OUTCOME_H
#define SPOTRUN_OUTCOME_H

#include "stops.h" /* enum sr_stop: storage/run's, which holds no exit code */

/* How an attempt ended (the record's outcome). */
enum sr_hist_end {
    SR_END_OPEN,       /* no end recorded yet: still running (or unknown) */
    SR_END_DONE,       /* the job exited 0; the run is done */
    SR_END_PREEMPTED,  /* stopped by a notice (exit 75) */
    SR_END_CRASHED,    /* the job failed and was restarted */
    SR_END_FAILED,     /* the job failed and spotrun gave up (--max-restarts) */
    SR_END_VANISHED,   /* the log stops without an end and a later attempt exists */
    SR_END_SUPERSEDED, /* lost the run's lease to another wrapper (exit 73) */
    SR_END_STOPPED,    /* a time limit or budget stopped it after a checkpoint (exit 124) */
};

/* Why an attempt ended: one vocabulary for show, ls, sweep show, report,
 * --json and the metrics file (docs/events.md, "What the views derive"). */
enum sr_hist_cause {
    SR_CAUSE_NONE,       /* not ended yet */
    SR_CAUSE_DONE,       /* the job finished (exit 0) */
    SR_CAUSE_PREEMPTED,  /* a notice stopped it (exit 75) */
    SR_CAUSE_VANISHED,   /* the log stops: the node or the wrapper died */
    SR_CAUSE_CRASHED,    /* the job failed: a non-zero exit or a signal */
    SR_CAUSE_OOM,        /* killed while its cgroup's oom_kill count rose */
    SR_CAUSE_STALLED,    /* the hang watchdog stopped it (a "stalled" event) */
    SR_CAUSE_TIME_LIMIT, /* a time limit stopped it (a "limit" event) */
    SR_CAUSE_BUDGET,     /* a budget stopped it (a "limit" event) */
    SR_CAUSE_LEASE_LOST, /* another wrapper took the run over ("lease_lost") */
    SR_CAUSE_CANCELLED,  /* its sweep's operator cancelled the trial (a "limit" event) */
    SR_CAUSE_PAUSED,     /* its sweep was paused with --stop (a "limit" event) */
    SR_CAUSE_PRUNED,     /* the sweep's early stopping ended it (a "limit" event) */
    SR_CAUSE_EXPLOIT,    /* PBT stopped it to go on from another trial's checkpoint ("limit") */
    SR_CAUSE_QUOTA,      /* its team's or user's quota was used up (a "limit" event) */
    SR_CAUSE_COUNT
};

struct sr_end_facts {
    enum sr_stop stop;
    enum sr_hist_cause limit; /* SR_STOP_LIMIT: TIME_LIMIT, BUDGET, CANCELLED, PAUSED, PRUNED */
    int code;                 /* the job's status as a shell says it: its exit code, 128+N */
    int signaled;             /* it died of signal code - 128 */
    int oom;                  /* it died in an OOM kill of its memory cgroup */
    int multinode;            /* one node of a group (its engine reruns the group) */
    int group_stopping;       /* multi-node: another node of the group got a notice */
    int restarts_left;        /* restarts --max-restarts still allows */
    int stall_give_up;        /* SR_STOP_STALL: more stalls than allowed */
    int hopeless;             /* the job is broken before it begins: a restart repeats it */
    int stop_signo;           /* SR_STOP_STALL: the signal that stopped it (0 = SIGTERM) */
};

enum sr_next {
    SR_NEXT_RESTART, /* start the job again (after a backoff) */
    SR_NEXT_STOP,    /* finish the stop under way (drain what persists), then exit */
    SR_NEXT_END,     /* the run ends with this attempt */
};

struct sr_end {
    enum sr_next next;
    enum sr_hist_cause cause;
    enum sr_hist_end end;
    int exit_code; /* the wrapper's exit code once the run ends (SR_NEXT_STOP, _END) */
    int done;      /* the run is done: mark it in the store */
    int gave_up;   /* the run failed: spotrun will not restart it */
};

/* What the end of the job's process means. */
void sr_attempt_end(const struct sr_end_facts *f, struct sr_end *out);

/* The cause of an ended attempt from what its log recorded: the stop (from
 * its lease_lost, stalled, limit, notice events) and how the job ended
 * (exited: an exit event; code 0 or a done event is done). */
enum sr_hist_cause sr_end_cause(enum sr_stop stop, enum sr_hist_cause limit, int exited, int code,
                                int oom);

/* The exit code of a run that ends with the job failing with `code`: the
 * job's own, except the two spotrun keeps for its own decisions (75, 124),
 * which become 1. */
int sr_end_failure_code(int code);

/* The exit code spotrun gives a stop it made (notice 75, limit 124, lease
 * 73; a stall of one node of a group 75). */
int sr_end_stop_code(enum sr_stop stop, int multinode);

/* How a run ends: one `spotrun run` wrapper, all its attempts. Set in one
 * place (runtime/supervise: sup_run_end()); from it come spotrun's exit
 * code, the attempt's last event, the final line and the sweep trial's
 * mark (sr_run_end_row). */
enum sr_run_end {
    SR_RUN_ERROR,         /* spotrun's own failure (64-78; 126/127: the job cannot start) */
    SR_RUN_DONE,          /* the job finished: DONE is marked */
    SR_RUN_NODE_DONE,     /* multi-node: this node's job finished, not yet every node's */
    SR_RUN_DONE_NOTICE,   /* done, and a notice came as it finished: requeue me */
    SR_RUN_PREEMPTED,     /* a notice stopped it after making what it could durable */
    SR_RUN_GROUP_REQUEUE, /* multi-node: a stalled node stops with its group */
    SR_RUN_LIMIT,         /* a time limit or budget stopped it */
    SR_RUN_LEASE_LOST,    /* another wrapper took the run over */
    SR_RUN_FAILED,        /* the job kept failing: spotrun gave up */
    SR_RUN_END_COUNT
};

struct sr_run_end_row {
    const char *name;
    int exit_code;           /* spotrun's exit code; -1: the job's (failed) or spotrun's own */
    const char *event;       /* the last event of the attempt's log, NULL = none of its own */
    enum sr_stop stop;       /* the stop the log records (the reader's sr_end_cause) */
    enum sr_hist_end record; /* the record's end of the last attempt */
    int trial;               /* a sweep trial's end mark: enum sr_trial_end (sweep.h), 0 = none */
};

const struct sr_run_end_row *sr_run_end_row(enum sr_run_end e);

const char *sr_hist_cause_name(enum sr_hist_cause c);
/* The limit cause a "limit" event names ("time-limit", "budget",
 * "cancelled", "paused"), SR_CAUSE_NONE for any other word. */
enum sr_hist_cause sr_limit_cause_of(const char *name);
const char *sr_stop_name(enum sr_stop s);

#endif
