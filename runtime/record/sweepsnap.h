/*
 * sweepsnap.h - what `sweep show` derived of its ended trials, kept for the
 * next reader (docs/store.md, "sweeps/<name>/view/"): a snapshot that any
 * reader may write (create-only, named by its time, the newest wins),
 * holding per ended trial the fields of its history the view prints and
 * its end mark, with the ETag that summaries/<run>.json had when the
 * trial's logs were read.
 *
 * An entry is taken only while the listing of summaries/<sweep>- shows
 * that summary with the same ETag (its wrapper rewrites it at every flush
 * of the run's log, so a run whose logs changed has a new one: the rule
 * `stats` follows), the trial's end mark is the same, and the entry passes
 * its digest and ranges. A trial that has not ended, a multi-node trial,
 * one without a summary (its wrapper could not write it) is read from
 * its logs as before. Pure but for sr_sv_snap_read() and
 * sr_sv_snap_write(), which use the store; nothing here prints or exits.
 */
#ifndef SPOTRUN_SWEEPSNAP_H
#define SPOTRUN_SWEEPSNAP_H

#include <jansson.h>

#include "sweeprec.h"

struct sr_sv_snap {
    int usable;              /* the store lists summaries/ with ETags */
    struct sr_strlist sums;  /* the sweep's summaries/<run>.json, with ETags */
    const char **etag;       /* per trial: its summary's listed ETag, or NULL */
    json_t *doc;             /* the newest snapshot, or NULL */
    const json_t **entry;    /* per trial: its entry in doc, or NULL */
    struct sr_strlist views; /* the listed snapshots (sweeps/<name>/view/) */
    const json_t *workers;   /* the workers' records it holds, digest checked, or NULL */
};

/* Lists summaries/<sweep>- and sweeps/<name>/view/ and reads the newest
 * snapshot (one that does not parse is none). s->usable 0 (and 0
 * returned) where the store lists no ETags (file, Azure): read every
 * trial from its logs. 0 or -errno. */
int sr_sv_snap_read(struct sr_store *st, const struct sr_sweep *sw, size_t n, struct sr_sv_snap *s);
void sr_sv_snap_free(struct sr_sv_snap *s);

/* 1 when trial k (its end mark) is taken from the snapshot: *run is its
 * run as the entry says (NULL: the store held nothing of it); else 0. */
int sr_sv_snap_take(const struct sr_sv_snap *s, size_t k, unsigned char mark,
                    struct sr_sv_run **run);

/* A new entry for trial t read from its logs, NULL when it may not be
 * kept (not ended, multi-node, no summary listed while its run exists). */
json_t *sr_sv_snap_entry(const struct sr_sv_snap *s, const struct sr_sv_trial *t);

/* Puts entries (an array, stolen) and the workers' records (workers,
 * sr_sweep_workers_read_cached's fresh; NULL: none) as a new snapshot, then deletes the
 * listed ones but the newest (a reader may be reading it). Best effort:
 * a failure is said at debug level. */
void sr_sv_snap_write(struct sr_store *st, const struct sr_sweep *sw, const struct sr_sv_snap *s,
                      json_t *entries, const json_t *workers);

#endif
