/*
 * runsum_int.h - what runsum.c (a run's summary, and every run of a store
 * read from the logs' listing) and runsnap.c (the readers' snapshots of
 * summaries/, docs/store.md) share; not for other callers.
 */
#ifndef SPOTRUN_RUNSUM_INT_H
#define SPOTRUN_RUNSUM_INT_H

#include "runsum.h"

/* What a listing says about one run. */
struct sr_runsum_listed {
    struct sr_strlist logs; /* names in <run>/events, with their sizes */
    int done;               /* DONE exists; -1 not listed (ask when it matters) */
    int summary;            /* summaries/<run>.json is listed (or may be: file store) */
    size_t keys;            /* objects listed under <run>/ (sr_runsum_list_run) */
};

/* One listing of every key under <run>/ (S3: one request for a run of up
 * to 1,000 objects) into l; free l->logs. -ENOTSUP on the file store. */
int sr_runsum_list_run(struct sr_store *st, const char *run, struct sr_runsum_listed *l);
/* The run's summary (summaries/<run>.json) when it matches l (the logs it names, each of
 * its size, and DONE), else its event logs; an open last attempt whose
 * lease is takeable is read again as vanished. 0 or -errno (out empty). */
int sr_runsum_read_listed(struct sr_store *st, const char *run, struct sr_runsum_listed *l,
                          struct sr_runsum *out);
/* The same vanished rule for a summary taken from elsewhere (a snapshot):
 * only a summary whose last attempt is open costs a request (its LEASE). */
int sr_runsum_settle(struct sr_store *st, const char *run, struct sr_runsum *r);

/* ---- runsnap.c ---- */

/* A listed key under summaries/ (name: without "summaries/"): a run's
 * summary "<run>.json" goes to sums (the run, its size and ETag), a
 * snapshot "snap/<...>.json" to snaps; anything else is ignored. 0 or
 * -ENOMEM. */
int sr_runsnap_list_add(struct sr_strlist *sums, struct sr_strlist *snaps, const char *name,
                        uint64_t size, const char *etag);
/* The most bytes a snapshot of the runs whose summaries are listed in
 * sums (with their sizes) may weigh (runsnap.c): a larger one is not read. */
uint64_t sr_runsnap_cap(const struct sr_strlist *sums);
/* Lists summaries/<prefix> into sums and snaps (sr_runsnap_list_add);
 * etags: -EAGAIN when a key comes without its ETag. 0 or -errno (-ENOTSUP:
 * the store lists no keys). */
int sr_runsnap_list(struct sr_store *st, const char *prefix, int etags, struct sr_strlist *sums,
                    struct sr_strlist *snaps);
/* Index of s in the sorted l, or -1. */
long sr_runsnap_find(const struct sr_strlist *l, const char *s);
/* Every run whose id starts with prefix, from the newest snapshot and
 * the listing of summaries/, reading one by one only the runs that
 * changed since (as sr_runsum_load_all). -EAGAIN: no usable snapshot, or
 * too much changed for it to save requests: read the whole store. */
int sr_runsnap_load(struct sr_store *st, const char *prefix, struct sr_runsum **out, size_t *n);
/* After a whole read of the store from one listing (runs, their listings
 * l, their summaries v, the summaries/ listing sums and snapshots snaps):
 * writes a snapshot when the next reader would gain from it. Best effort:
 * a failure is said at debug level. */
void sr_runsnap_save_full(struct sr_store *st, const struct sr_strlist *runs,
                          const struct sr_runsum_listed *l, const struct sr_runsum *v,
                          const struct sr_strlist *sums, const struct sr_strlist *snaps);

#endif
