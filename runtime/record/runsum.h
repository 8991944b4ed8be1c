/*
 * runsum.h - a run's summary: one small object per run (summaries/<run>.json)
 * that says, per attempt, where it ran, when, how it ended, the work it
 * lost, its price and GPU use, so that `spotrun stats` reads one object per
 * run instead of every event log of every run (docs/store.md, "A run's summary").
 *
 * The wrapper of a single-node run rewrites the summary after each flush of
 * its event log (runsum_writer.c: the flush hook of events.h). Nothing
 * trusts it: sr_runsum_from_json() rejects anything out of range or not
 * matching its digest (an edited summary), and sr_runsum_load_all() falls
 * back to a run's event logs when its summary is missing, invalid, or
 * stale: it is used only when it names exactly the logs the listing shows,
 * each of the size it had when folded (docs/store.md, "A run's summary").
 *
 * Pure but for sr_runsum_load_all(), which reads the store on a few threads
 * of its own and joins them before it returns; nothing here prints (but
 * warnings about unreadable objects) or exits.
 */
#ifndef SPOTRUN_RUNSUM_H
#define SPOTRUN_RUNSUM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "history.h"
#include "labels.h"
#include "layout.h"
#include "store.h"

#define SR_RUNSUM_VERSION 3     /* 3: lost_ms from the state's time; 0 when pruned, cancelled */
#define SR_RUNSUM_ATT_MAX 10000 /* attempts a summary may hold */
#define SR_RUNSUM_BYTES_MAX (8u << 20) /* a larger summary is not read */

struct sr_runsum_attempt {
    uint32_t attempt, nodes;
    char host[128], cloud[32], instance_type[64], zone[64];
    int64_t start_ms, end_ms;             /* end_ms: when it ended, or its last event while open */
    enum sr_hist_cause cause;             /* SR_CAUSE_NONE: still running */
    int64_t lost_ms;                      /* work lost by this attempt (history.h's rule) */
    double price_per_hour;                /* the start event's price, 0 = none */
    unsigned gpus;                        /* devices the wrapper sampled (NVML), 0 = unknown */
    uint64_t gpu_samples;                 /* 0 = none sampled */
    double gpu_util_mean, gpu_idle_share; /* percent, share in [0, 1] */
    double stage_seconds;                 /* staging time of this attempt's checkpoints, summed */
    unsigned notices;
    /* A preempted attempt's notice source ("aws", "signal:SIGTERM",
     * "manual"...; stats counts cloud ones as preemptions); "" otherwise,
     * or unknown (written only when set: "notice_source"). */
    char notice_source[64];
    uint64_t log_bytes; /* the size of the attempt's log folded into it, 0 = unknown */
};

struct sr_runsum {
    char run[256];
    struct sr_labels labels;
    enum sr_hist_state state;
    struct sr_runsum_attempt *att; /* by attempt number, each once */
    size_t n_att;
    int from_logs;     /* 1: built from the event logs (no usable summary) */
    int from_snapshot; /* 1: taken from a snapshot of summaries/ (docs/store.md) */
};

void sr_runsum_free(struct sr_runsum *r);

/* From a derived history (sr_hist_derive'd). 0 or -ENOMEM. */
int sr_runsum_from_history(const struct sr_history *h, const char *run, struct sr_runsum *out);

/* The summary object, with its digest: XXH64 of the object without
 * it (compact, keys sorted), which from_json checks; NULL only without
 * memory. The digest tells a summary edited by hand or by a tool that
 * does not know it from one spotrun wrote; it is no signature (write
 * access to the store is trust: SECURITY.md). */
json_t *sr_runsum_to_json(const struct sr_runsum *r);
/* That digest of o (its "digest" left out), 16 hex digits. 0 or -ENOMEM. */
int sr_runsum_digest(const json_t *o, char out[17]);

/* -EBADMSG when anything is missing, of the wrong type or out of range,
 * or the digest does not match
 * (times outside [0, SR_TIME_MAX_MS], negative durations, unknown cause
 * or state names, strings with control characters or too long, invalid
 * labels, attempts out of order or more than SR_RUNSUM_ATT_MAX...): the
 * caller then falls back to the logs. out is left empty then. */
int sr_runsum_from_json(const json_t *obj, struct sr_runsum *out);

/* The same from the object's bytes. */
int sr_runsum_parse(const char *buf, size_t len, struct sr_runsum *out);

/* Every run whose id starts with prefix ("" = the whole store): one
 * listing of the store, then each run's summary read in parallel
 * (threads), falling back to the run's event logs when the summary is
 * missing, stale (its attempts differ from the event logs the listing
 * shows) or invalid. Runs sorted by id; *out is an array of *n (free each
 * with sr_runsum_free, then the array). 0 or -errno. */
int sr_runsum_load_all(struct sr_store *st, const char *prefix, struct sr_runsum **out, size_t *n);

/* ---- the writer (runsum_writer.c) ----
 *
 * A single-node run's wrapper keeps summaries/<run>.json up to date: the
 * writer is the flush hook of the event log (events.h), given to the
 * supervisor in its configuration (on_flush). It takes the run's earlier
 * event logs as the wrapper read them at its start, or at the first flush
 * of an attempt reads them once (an earlier attempt whose log
 * stops without an end is then vanished); at each flush it folds only the
 * lines the log gained into that history and writes the summary with the
 * store's put, on a thread of its own (the hook only copies the log), so
 * a slow store never stalls the wrapper. A failed write is a warning
 * (once), never the run's failure. Multi-node runs write none (a node's
 * log is never folded). */
struct sr_runsum_writer;
/* earlier: the run's logs as the wrapper read them at its start (every
 * attempt before its own; history.h, sr_hist_once), folded at once and not
 * read again; NULL: read at the first flush. */
int sr_runsum_writer_open(struct sr_store *st, const char *run, const struct sr_hist_logs *earlier,
                          struct sr_runsum_writer **out);
/* The sr_events_flushed_fn; ctx is the writer. */
void sr_runsum_writer_flushed(void *ctx, uint32_t attempt, int node, const char *log, size_t len,
                              size_t stored);
/* Writes what is pending, stops its thread and frees it (once no log calls
 * it: after sr_supervise returned). NULL is fine. */
void sr_runsum_writer_close(struct sr_runsum_writer *w);
/* "<13 digits>-<1..32 of [0-9a-f]>.json": the name of a readers' snapshot
 * (summaries/snap/, sweeps/<name>/view/): 0 and its time in ms, or -1. */
int sr_snap_name_ms(const char *name, int64_t *ms);
/* The newest of the sorted names that is dir followed by a snapshot's name
 * not dated more than a day ahead of the clock, or NULL. */
const char *sr_snap_newest(const struct sr_strlist *names, const char *dir);

/* A run that keeps no summary (multi-node) still puts summaries/<run>.json,
 * a marker that is no summary: a reader of that listing then knows the run
 * exists and reads its logs (docs/store.md, "summaries/"). A failure is a
 * warning. */
void sr_runsum_mark_logs(struct sr_store *st, const char *run);

#endif
