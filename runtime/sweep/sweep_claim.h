/*
 * sweep_claim.h - which open trial a `sweep work` worker claims next
 * (docs/sweeps.md, "sweep work"): the order (pure) and the one listing
 * that says which trials ran before.
 *
 * The order: the highest priority first (sweep priority); at equal
 * priority a trial that ran before (its run has a summary in the store's
 * summaries/: it was preempted, stopped by `sweep pause --stop`, or its
 * worker vanished; it resumes from its newest checkpoint) before one that
 * never started; within that, by index. Finishing what was started first
 * keeps a preempted trial's checkpoint from waiting behind fresh trials
 * (and its slot-hours from being paid twice at the end of the sweep).
 *
 * "Ran before" costs one listing per claim, never a request per trial:
 * summaries/<sweep>- on stores that list by key prefix (S3, Azure), the
 * local summaries/ directory on a file store. A run writes its summary
 * at its first event-log flush (runtime/record/runsum.h), so a trial
 * that started has one; a run killed before that counts as fresh, which
 * costs nothing but the order.
 */
#ifndef SPOTRUN_SWEEP_CLAIM_H
#define SPOTRUN_SWEEP_CLAIM_H

#include <stddef.h>

#include "store.h"

/* What the worker knows of one trial when it claims. */
struct sr_claim_trial {
    int free;      /* open, not cancelled, not held (by this worker or another's lease) */
    long priority; /* sweep priority, 0 by default */
    int started;   /* ran before (sr_claim_list_started) */
};

/* The free trials of the first class in claim order (the highest
 * priority, then started before fresh), by index: up to cap of them into
 * out; returns how many (0 when no trial is free). Pure. */
size_t sr_claim_order(const struct sr_claim_trial *t, size_t n, long *out, size_t cap);

/* started[k] for k < n: 1 when trial k's run "<name>-<k>" has a summary
 * (summaries/<name>-<k>.json), else 0. One listing. 0 or a store error. */
int sr_claim_list_started(struct sr_store *st, const char *name, size_t n, unsigned char *started);

#endif
