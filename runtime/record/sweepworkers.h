/*
 * sweepworkers.h - a sweep's machine time as its workers recorded it
 * (runtime/sweep/sweep_workers.h): each worker's lifetime (start to end, or
 * to its last keep-alive when it was killed), the part of it its trials'
 * attempts ran (busy), and the rest (idle: polling, claiming, restoring,
 * waiting), with their cost, for `sweep show` beside the trials' hours
 * (runtime/views/sweepworkersout.h prints them).
 *
 * Busy is the union of the intervals (first to last event) of the attempts
 * of the trials a worker started, on its host, clipped to its lifetime:
 * trials running side by side in its slots count once. Pure but for
 * sr_sv_workers_load(), which reads the records.
 */
#ifndef SPOTRUN_SWEEPWORKERS_H
#define SPOTRUN_SWEEPWORKERS_H

#include <jansson.h>
#include <stdint.h>

#include "runsum.h"
#include "store.h"
#include "sweep_workers.h"

struct sr_sweepview;

struct sr_sv_workers {
    size_t n;    /* records read */
    size_t open; /* without an end: running, or killed (ends at its keep-alive) */
    int64_t life_ms, busy_ms, idle_ms;
    double life_cost, idle_cost;                /* of the workers that recorded a price */
    int64_t unpriced_life_ms, unpriced_idle_ms; /* of those that did not */
    size_t unpriced; /* workers that recorded no price (a running one too, however short) */
};

/* Reads the sweep's worker records and folds them against v's trials
 * (loaded). 0 or -errno (a listing failed). */
int sr_sv_workers_load(struct sr_store *st, const struct sr_sweepview *v,
                       struct sr_sv_workers *out);
/* The same with sr_sweep_workers_read_cached's cache in and out
 * (sweepsnap.h keeps it). */
int sr_sv_workers_load_cached(struct sr_store *st, const struct sr_sweepview *v,
                              const json_t *cache, json_t **fresh, struct sr_sv_workers *out);
/* The same from records already read (the unit tests). */
void sr_sv_workers_fold(const struct sr_sweep_worker *w, size_t n, const struct sr_sweepview *v,
                        struct sr_sv_workers *out);

/* `stats`: the workers of every sweep whose name starts with prefix (NULL:
 * all), their lifetimes clipped to [since, until) (0: open), busy as the
 * runs' summaries say (runs sorted by id). 0 or -errno. */
int sr_sv_workers_stats(struct sr_store *st, const char *prefix, const struct sr_runsum *runs,
                        size_t nruns, int64_t since, int64_t until, struct sr_sv_workers *out);

#endif
