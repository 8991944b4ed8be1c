/*
 * run_rungs.h - a sweep trial's early stopping, the wrapper's side
 * (docs/sweeps.md, "Early stopping"; the rule: runtime/sweep/asha.h; the
 * store: runtime/sweep/sweep_rungs.h).
 *
 * The supervisor offers each metric the job reports with a step
 * (limit.h's metric hook). At the first report of the rule's metric at or
 * past a rung's step, the hook reads the trial's own record at that rung:
 * when there is one (an earlier attempt of the trial recorded it: a resume
 * after a preemption, or a retry of a pruned trial), the trial is not
 * judged again there and goes on. Otherwise it lists the rung, decides
 * (asha.h), and when the decision is to stop writes the trial's end mark
 * end/K.pruned first, then its record (create-only); the supervisor then
 * stops the trial as at a limit ("limit" event with cause "pruned", a
 * checkpoint as at a notice, exit 124). The mark comes first so that no
 * crash between the two can turn a stop into a go-on: a record exists
 * only for a decision that was carried out.
 *
 * Runs on the supervisor's thread (its store calls are bounded like every
 * store call). A store error skips the rung for now (a warning); the next
 * report tries it again.
 */
#ifndef SPOTRUN_RUN_RUNGS_H
#define SPOTRUN_RUN_RUNGS_H

#include <stdint.h>

#include "asha.h"
#include "supervisor.h"
#include "sweep.h"

struct sr_run_rungs {
    struct sr_store *st;
    const char *sweep;
    long trial;
    struct sr_asha rule;
    int64_t steps[SR_ASHA_RUNGS_MAX];
    size_t n_rungs, next; /* rungs below next are settled for this wrapper */
    int pruned;           /* this wrapper pruned the trial (its mark is written) */
    char detail[256];     /* the decision in words (the limit event's "detail") */
    char hint[200];       /* how to resume it */
};

/* Under the lease, before the trial's checkpoint is restored: a trial
 * marked pruned is refused (124, saying how to resume it); a trial whose
 * sweep has an early-stopping rule gets the metric hook in c->limits (on
 * node rank 0: the other nodes stop with it). Returns -1 to go on, else
 * the exit code. rr must outlive the supervisor. */
int sr_run_rungs_settle(struct sr_run_rungs *rr, struct sr_supervise_config *c,
                        const struct sr_sweep *sw, long trial);
/* After the supervisor: a pruned trial's mark (again, create-only: the
 * hook wrote it already unless the store failed then). */
void sr_run_rungs_end(struct sr_run_rungs *rr, int code);

#endif
