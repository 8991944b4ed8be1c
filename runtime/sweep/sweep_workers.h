/*
 * sweep_workers.h - the lifetime of each `spotrun sweep work` process, so
 * that a sweep's machine time between trials (polling, claiming,
 * restoring) is counted (docs/sweeps.md, "Worker hours"):
 *
 *   sweeps/<name>/workers/<host>-<pid>-<start_ms>.json
 *       {"format":1,"sweep","host","pid","start_ms","alive_ms","end_ms"
 *        (absent while it runs),"price_per_hour","slots","trials":[K...]}
 *
 * Each object is written by its worker alone (at its start, at every
 * keep-alive and at its end, listing the trials started so far), so no coordination
 * is needed. A worker killed without a word ends at its last keep-alive
 * ("alive_ms"). `sweep delete` removes them with the sweep (sweep.c).
 *
 * Nothing read is trusted: an object that does not parse, names another
 * sweep or holds numbers out of range is skipped with a warning (a view,
 * never a crash or a wrong figure).
 */
#ifndef SPOTRUN_SWEEP_WORKERS_H
#define SPOTRUN_SWEEP_WORKERS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define SR_SWEEP_WORKER_TRIALS_MAX 100000 /* trials one record lists */
#define SR_SWEEP_WORKERS_MAX 10000        /* records one read takes */

struct sr_sweep_worker {
    char host[128];
    long pid;
    int64_t start_ms, alive_ms, end_ms; /* unix ms; end_ms 0 = no end recorded */
    double price_per_hour;              /* of its instance, 0 = none known */
    unsigned slots;
    long *trials; /* the trials it started, each once, in order */
    size_t n_trials;
};

/* When its lifetime ended: its end, else its last keep-alive. */
int64_t sr_sweep_worker_until(const struct sr_sweep_worker *w);

/* Writes w's record (the key from its host, pid and start). 0 or -errno. */
int sr_sweep_worker_put(struct sr_store *st, const char *sweep, const struct sr_sweep_worker *w);
/* Adds trial k to w's list (once; nothing past the maximum). 0 or -ENOMEM. */
int sr_sweep_worker_add_trial(struct sr_sweep_worker *w, long k);

/* Every readable worker record of sweep (none: 0 and *n 0); *out an array
 * of *n, freed with sr_sweep_workers_free. 0 or -errno (listing). */
int sr_sweep_workers_read(struct sr_store *st, const char *sweep, struct sr_sweep_worker **out,
                          size_t *n);
/* The same where the store lists ETags (S3; elsewhere as above, *fresh
 * NULL): a record listed with the ETag that cache ({NAME: {"etag",
 * "record"}}, the caller's, or NULL) holds for it is taken from there,
 * checked as one read is, instead of read again; *fresh (new reference)
 * gets every record taken or read, so, for the next reader. */
int sr_sweep_workers_read_cached(struct sr_store *st, const char *sweep, const json_t *cache,
                                 json_t **fresh, struct sr_sweep_worker **out, size_t *n);
void sr_sweep_workers_free(struct sr_sweep_worker *v, size_t n);

#endif
