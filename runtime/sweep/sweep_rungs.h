/*
 * sweep_rungs.h - a sweep's early-stopping rungs in the store (asha.h has
 * the rule; docs/sweeps.md, "Early stopping").
 *
 *   sweeps/<name>/rungs/<K>/<TRIAL>.json   trial TRIAL's value at rung K:
 *       {"format","trial","rung","step","value","metric","go_on","seen","unix_ms","host"}
 *
 * One object per (rung, trial), written create-only by the trial's own
 * wrapper once it has decided (go_on: the decision; seen: how many other
 * values it was compared with): a second write of the same (rung, trial)
 * (a resume after a preemption) finds it and changes nothing. Nothing here
 * is coordinated: every wrapper lists a rung, decides, and records.
 *
 * Nothing read is trusted: a record whose content is not its key's (trial,
 * rung) or whose value is not a number is skipped (a view, never a crash).
 */
#ifndef SPOTRUN_SWEEP_RUNGS_H
#define SPOTRUN_SWEEP_RUNGS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct sr_rung_rec {
    long trial;
    unsigned rung;
    int64_t step;  /* the step the value was reported at (>= the rung's) */
    double value;  /* NaN for a value that was not a number */
    int go_on;     /* the decision: 1 go on, 0 pruned */
    unsigned seen; /* the other values it was compared with */
    int64_t unix_ms;
};

/* Records r (create-only): 0 when written, -EEXIST when trial already has
 * a record at that rung (it stays), store errors. */
int sr_rung_put(struct sr_store *st, const char *sweep, const struct sr_rung_rec *r);
/* trial's record at rung: 0, -ENOENT, -EBADMSG (not its key's). */
int sr_rung_get(struct sr_store *st, const char *sweep, unsigned rung, long trial,
                struct sr_rung_rec *out);
/* Every record at rung (one listing, then the records, READERS at once on
 * their own threads, joined before it returns): *out (free()) and *n, in
 * the listing's order; records that do not parse are skipped. */
int sr_rung_list(struct sr_store *st, const char *sweep, unsigned rung, struct sr_rung_rec **out,
                 size_t *n);
/* Per trial k < ntrials, the highest rung it has a record at + 1 (0 =
 * none): one listing per rung. */
int sr_rung_levels(struct sr_store *st, const char *sweep, size_t ntrials, unsigned char *level);
/* Removes trial's records at every rung (run --fresh of the trial: it is
 * judged again from scratch). */
int sr_rung_remove_trial(struct sr_store *st, const char *sweep, long trial);
/* Removes every rung record of the sweep (sweep delete). */
int sr_rung_remove_all(struct sr_store *st, const char *sweep);

#endif
