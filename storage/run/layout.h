/*
 * layout.h - the store's key layout, in one place (docs/store.md, "Layout").
 *
 * Every object spotrun keeps in a store has its key built here, and every
 * key a run's listing returns is recognised here, so that the layout the
 * docs describe is written down once:
 *
 *     <run>/LEASE, <run>/LEASE.<rank>     the run's owner (one per node rank)
 *     <run>/ckpt/<seq>/<name>             a checkpoint's objects (%010llu)
 *     <run>/events/<attempt>.jsonl        an attempt's event log (%06u)
 *     <run>/events/<attempt>-n<rank>.jsonl  a node's log in a multi-node run
 *     <run>/notices/<name>                a multi-node group's notices
 *     <run>/done/<name>                   a node's "finished" records
 *     <run>/suspect/<seq>.json            a suspect checkpoint's mark (%010llu)
 *     <run>/DONE                          the job exited 0
 *     <run>/SWEEP                         the sweep trial this run is
 *     summaries/<run>.json                the run's summary, one listing for all
 *     sweeps/<sweep>/<dir>/<name>         a sweep's objects (def, end, ...)
 *
 * The builders write a key into buf and return 0, or -ENAMETOOLONG when it
 * does not fit (buf then holds a truncated key that no caller may use).
 * Pure: no I/O, no globals.
 */
#ifndef SPOTRUN_LAYOUT_H
#define SPOTRUN_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define SR_KEY_LEASE "LEASE"
#define SR_KEY_DONE "DONE"
#define SR_KEY_SWEEP "SWEEP"
#define SR_KEY_MANIFEST "MANIFEST.json"
#define SR_KEY_DATA "data.tar.zst"
#define SR_KEY_CKPT "ckpt"
#define SR_KEY_EVENTS "events"
#define SR_KEY_NOTICES "notices"
#define SR_KEY_NODES_DONE "done"
#define SR_KEY_SUSPECT "suspect"     /* suspect/<seq>.json: quarantine.h */
#define SR_KEY_SUMMARIES "summaries" /* the store's own directory of summaries */
#define SR_KEY_SWEEPS "sweeps"       /* the store's own directory of sweeps */
#define SR_KEY_QUOTAS "quotas"       /* the store's own directory of quotas (quota.h) */
#define SR_KEY_APPROVALS "approvals" /* the store's own directory of approvals (quota.h) */

/* prefix/name: an object of a listed prefix. */
int sr_key_join(char *buf, size_t len, const char *prefix, const char *name);
/* <run>/<name>: a run's own object or directory (SR_KEY_DONE, ...). */
int sr_key_run(char *buf, size_t len, const char *run, const char *name);
/* <run>/LEASE (rank < 0) or <run>/LEASE.<rank> (a node rank's). */
int sr_key_lease(char *buf, size_t len, const char *run, int rank);
/* <run>/ckpt/<seq>/<name>, or the seq's directory when name is NULL or "". */
int sr_key_ckpt(char *buf, size_t len, const char *run, uint64_t seq, const char *name);
/* <run>/events/<attempt>.jsonl, or <attempt>-n<node>.jsonl for node >= 0. */
int sr_key_event_log(char *buf, size_t len, const char *run, uint32_t attempt, int node);
/* <run>/suspect/<seq>.json: the mark of a suspect checkpoint. */
int sr_key_suspect(char *buf, size_t len, const char *run, uint64_t seq);
/* summaries/<run>.json. */
int sr_key_summaries(char *buf, size_t len, const char *run);
/* A sweep's directories (docs/sweeps.md, "Store layout"). */
#define SR_SWEEP_DEF "def"         /* def/<part %06u>.json: the definition */
#define SR_SWEEP_END "end"         /* end/<trial>.<how>: the trials' end marks */
#define SR_SWEEP_BUDGET "budget"   /* budget/<version %06u>.json */
#define SR_SWEEP_WORKERS "workers" /* workers/<host>-<pid>-<start ms>.json */
#define SR_SWEEP_STEER "steer"     /* steer/<seq %06u>.json: cancel, retry, pause... */
#define SR_SWEEP_RUNGS "rungs"     /* rungs/<rung>/<trial>.json: early stopping */
#define SR_SWEEP_PBT "pbt"         /* pbt/rounds/<r>/<trial>.json, pbt/lineage/...: PBT (pbt.h) */
#define SR_SWEEP_VIEW "view"       /* view/<ms>-<nonce>.json: sweep show's snapshots */

/* sweeps/<sweep>/ followed by what fmt makes (SR_SWEEP_END "/%zu.%s", ...). */
int sr_key_sweep(char *buf, size_t len, const char *sweep, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

struct sr_store;
struct sr_strlist;
/* Lists the run's directory name (<run>/<name>/, as sr_store_list), or a
 * sweep's directory dir (sweeps/<sweep>/<dir>/): 0, or -errno (then
 * there is nothing to free). */
int sr_list_run(struct sr_store *st, const char *run, const char *name, struct sr_strlist *names);
int sr_list_sweep(struct sr_store *st, const char *sweep, const char *dir,
                  struct sr_strlist *names);

/* What a key under a run's prefix is (the rest after "<run>/"). */
enum sr_run_obj {
    SR_OBJ_OTHER,     /* a checkpoint's object, notices, done/, or something unknown */
    SR_OBJ_EVENT_LOG, /* events/<name>, directly under events/ */
    SR_OBJ_DONE,      /* DONE */
    SR_OBJ_LEASE,     /* LEASE or LEASE.<rank> (sr_key_is_lease) */
};

/* The kind of a run's key `rest`; for an event log, *name (when asked)
 * points at its name inside rest ("000003.jsonl"). */
enum sr_run_obj sr_key_classify(const char *rest, const char **name);

/* Whether a name listed under <run>/ is a lease: LEASE or LEASE.<anything>. */
int sr_key_is_lease(const char *name);

/* The attempt of an event log's name (<attempt>.jsonl or
 * <attempt>-n<rank>.jsonl, 1-9 digits, the rank 1-3), or UINT32_MAX when the
 * name is not one; *node (when asked) gets the node rank or -1. */
uint32_t sr_key_log_attempt(const char *name, int *node);

#endif
