/*
 * sweeprec.h - a sweep's record as `spotrun sweep show` and `sweep report`
 * see it: one row per trial (its state, its run's history: attempts,
 * preemptions, lost work, instance time, the metrics the job reported) and
 * the totals, read from the store (sweepload.c). runtime/views/sweepview.h
 * renders it.
 *
 * A trial's state:
 *   done / failed   its end mark (sweep.h); failed carries the cause
 *   cancelled /     its end mark: the sweep's operator cancelled it, early
 *   pruned          stopping pruned it (the mark says who and why)
 *   running         its run's LEASE is held now (not released, not expired,
 *                   not held by a dead process of this machine)
 *   queued          no attempt ever started
 *   preempted       started, interrupted, and nobody runs it now (a notice,
 *                   or a wrapper killed -9 whose lease expired or was given up)
 * Without an end mark the run's own history decides done and failed (a mark
 * that could not be written).
 *
 * Loading reads little: one listing of the end marks, one listing of every
 * key of the sweep's runs (or of the store's root; a trial whose run has no
 * objects is queued: nothing more is read for it), then each started
 * trial's event logs, LEASE (and, when failed, cancelled or pruned, its end
 * mark) on a small pool of threads, each trial into its own struct
 * sr_history (history.c is not thread-safe per object; the store is), its
 * metrics' values kept as learning curves (SR_SV_CURVE_POINTS). With
 * a snapshot (sweepsnap.h) the ended trials it still stands for are not
 * read at all, and a few others are listed one by one. Pure otherwise:
 * nothing here exits or prints.
 */
#ifndef SPOTRUN_SWEEPREC_H
#define SPOTRUN_SWEEPREC_H

#include "history.h"
#include "lease.h"
#include "manifest.h"
#include "sweep.h"
#include "sweep_steer.h"
#include "sweepworkers.h"

/* stopped: at a time limit or the sweep's budget, after a checkpoint. */
enum sr_sv_state {
    SR_SV_QUEUED,
    SR_SV_RUNNING,
    SR_SV_PREEMPTED,
    SR_SV_DONE,
    SR_SV_FAILED,
    SR_SV_STOPPED,
    SR_SV_CANCELLED, /* its end mark: the sweep's operator cancelled it */
    SR_SV_PRUNED,    /* its end mark: early stopping ended it */
};
#define SR_SV_NSTATES 8

/* A trial's learning curves: each metric's values over steps (history.h's
 * keep_points, thinned evenly as the metric logs are), at most
 * SR_SV_CURVE_POINTS per metric and SR_SV_TRIAL_POINTS per trial, so a
 * sweep's view (and its snapshot) weighs a bounded amount per trial. */
#define SR_SV_CURVE_POINTS 128
#define SR_SV_TRIAL_POINTS 1024

/* What the store says of a started trial's run. */
struct sr_sv_run {
    struct sr_history h;
    int has_lease, lease_held; /* a LEASE, and held by a live owner now */
    struct sr_lease_info lease;
    int has_end; /* end: the failed, cancelled or pruned mark read (cause, exit code, host) */
    struct sr_trial_end_info end;
};

struct sr_sv_trial {
    size_t trial;
    char run_id[SR_RUN_ID_MAX + 1];
    enum sr_sv_state state;
    unsigned char mark;    /* SR_TRIAL_*: the end marks' listing */
    struct sr_sv_run *run; /* NULL when the store holds nothing of the run */
    unsigned char rung;    /* early stopping: its highest rung + 1, 0 = none */
    json_t *lineage;       /* PBT: its decisions by round (pbt.h), NULL = none */
};

struct sr_sweepview {
    const struct sr_sweep *sw; /* borrowed */
    struct sr_sv_trial *t;     /* sr_sweep_count(sw) trials, by index */
    size_t n;
    char (*metrics)[SR_HIST_METRIC_NAME_MAX + 1]; /* names seen, by first trial then order */
    size_t n_metrics;
    unsigned counts[SR_SV_NSTATES];
    int64_t now_ms;
    int64_t first_ms, last_ms;                       /* over every attempt; 0 when none */
    int64_t instance_ms, lost_ms, preempted_lost_ms; /* sums over trials */
    int64_t pruned_ms, cancelled_ms; /* the work of pruned and cancelled attempts: not lost */
    struct sr_sv_workers workers;    /* the workers' own hours */
    struct sr_steer_state steer;     /* the operator's steering: history, pause, priorities */
};

/* Loads sw's trials from st with up to threads readers (0: 8). With
 * SR_SV_LOAD_SNAPSHOT (`sweep show`), the ended trials come from the
 * sweep's view snapshot while the listing of summaries/<sweep>- says they
 * have not changed (sweepsnap.h), and a read that made enough new entries
 * writes a new one; what is printed is the same either way. 0, or the
 * first store error (with a message naming the run). */
#define SR_SV_LOAD_SNAPSHOT 1u
int sr_sweepview_load(struct sr_store *st, const struct sr_sweep *sw, unsigned threads,
                      unsigned flags, struct sr_sweepview *out);
void sr_sweepview_free(struct sr_sweepview *v);

/* 1 when some trial reported metric name. */
int sr_sweepview_has_metric(const struct sr_sweepview *v, const char *name);

#endif
