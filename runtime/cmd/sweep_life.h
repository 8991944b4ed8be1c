/*
 * sweep_life.h - a `spotrun sweep work` process's own lifetime in the
 * store (runtime/sweep/sweep_workers.h): written at its start, at every
 * keep-alive (sr_keepalive_ms) and at its end, with the trials started so
 * far (not at each trial: a request a trial), so that its time between
 * trials is counted (`sweep show`, `stats`). A
 * failed write is a warning (once): the work goes on.
 */
#ifndef SPOTRUN_SWEEP_LIFE_H
#define SPOTRUN_SWEEP_LIFE_H

#include <stdint.h>

#include "store.h"
#include "sweep_workers.h"

struct sr_sweep_life {
    struct sr_store *st;
    const char *sweep;
    struct sr_sweep_worker w;
    int64_t every, next; /* keep-alive interval and next one (sr_now_ms) */
    int warned;
};

/* price_per_hour: of this worker's instance, 0 = unknown. */
void sr_sweep_life_begin(struct sr_sweep_life *l, struct sr_store *st, const char *sweep,
                         unsigned slots, double price_per_hour);
/* Trial k started here: listed from the next write on. */
void sr_sweep_life_trial(struct sr_sweep_life *l, long k);
/* Writes the keep-alive when due; the ms until the next one. */
int64_t sr_sweep_life_tick(struct sr_sweep_life *l);
/* The worker's end (then frees). */
void sr_sweep_life_end(struct sr_sweep_life *l);

#endif
