/*
 * run_pbt.h - a sweep trial's population-based training, the wrapper's
 * side (docs/sweeps.md, "Population-based training"; the rule and the
 * records: runtime/sweep/pbt.h).
 *
 * At every start, before the job's command and environment are made, the
 * trial's current parameters are those of the newest decision of its
 * lineage (sr_run_pbt_params). Under the lease, before the checkpoint is
 * restored, a decision not yet carried out (its wrapper stopped between
 * the decision and the copy) is: the donor's checkpoint it names is
 * restored to a scratch dir of the run and pushed as the trial's newest
 * checkpoint (the normal commit protocol, under the lease: a half-done
 * copy is never a complete checkpoint), then marked applied.
 *
 * While the job runs, its first report of the metric at a step >= r*K
 * records the trial's value at round r (create-only), lists the round,
 * decides (pbt.h), and for an exploit writes the decision (create-only: one
 * found there is the decision, never a second) and stops the job as at a
 * limit (cause "exploit", a checkpoint first). sr_run_main then runs the
 * trial again in the same process: the new start applies the decision and
 * the job starts from the donor's checkpoint with the new parameters.
 */
#ifndef SPOTRUN_RUN_PBT_H
#define SPOTRUN_RUN_PBT_H

#include <stdint.h>

#include "pbt.h"
#include "supervisor.h"
#include "sweep.h"

struct sr_run_pbt {
    struct sr_store *st;
    const struct sr_sweep *sw;
    long trial;
    struct sr_pbt rule;
    uint64_t seed;
    long done_round; /* rounds <= this are settled for this wrapper */
    int exploit;     /* the hook stopped the job for an exploit */
    char detail[320];
    char hint[200];
};

/* Before the command is made: sw's trial values replaced by the
 * trial's current parameters (its newest decision's). 0 or -errno. */
int sr_run_pbt_params(struct sr_store *st, struct sr_sweep *sw, long trial);
/* Under the lease, before the restore: applies a pending decision (cfg is
 * the run's commit configuration, scratch a dir of the run's own), then
 * sets the metric hook. -1 to go on, else the exit code. rp must outlive
 * the supervisor. */
struct sr_commits_config;
int sr_run_pbt_settle(struct sr_run_pbt *rp, struct sr_supervise_config *c,
                      const struct sr_sweep *sw, long trial, const struct sr_commits_config *cfg,
                      const char *scratch);
/* After the supervisor: 1 when the trial is to start again now (an
 * exploit stopped it). */
int sr_run_pbt_again(const struct sr_run_pbt *rp, int code);

#endif
