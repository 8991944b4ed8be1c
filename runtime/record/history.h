/*
 * history.h - what happened to a run, derived from its event logs.
 *
 * The supervisor writes one JSON-lines log per attempt into the store
 * (events.h). This module folds those lines into records (attempts,
 * checkpoints, notices) and derives the numbers `spotrun show`, `ls`,
 * `report` and the metrics file print: the run's state, preemptions by
 * source, failures by cause, lost work, checkpoint times, wall and
 * instance time, and the cost at a given price.
 *
 * Pure: nothing here prints or exits. sr_hist_load() reads the store; the
 * rest works on lines given by the caller (so unit tests feed synthetic
 * ones). Not thread-safe: callers serialise (metrics.c holds a mutex).
 *
 * Lost work of an interrupted attempt (preempted, crashed, given up, or a
 * wrapper that vanished) = the time it ended minus the later of its start
 * and the moment the state the newest checkpoint durable by then holds was
 * taken (the state the next attempt resumes from: its staged event's
 * state_ms, else its staged time). Work before the attempt's start was
 * counted with the attempt that lost it, so nothing is counted twice. The
 * work of an attempt a sweep pruned or cancelled is not lost: it is its own
 * figure (dropped_ms), by its cause.
 */
#ifndef SPOTRUN_HISTORY_H
#define SPOTRUN_HISTORY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "labels.h"
#include "outcome.h" /* enum sr_hist_end, enum sr_hist_cause: the one table */
#include "store.h"

/* Latest event time believed (9999-12-31T23:59:59.999Z, in ms): an event
 * log line with a time outside [0, this] is ignored, so every time and
 * duration derived from the logs prints as a date and a sane length. */
#define SR_TIME_MAX_MS INT64_C(253402300799999)

enum sr_hist_state {
    SR_STATE_NEW,          /* no attempt and no checkpoint */
    SR_STATE_CHECKPOINTED, /* checkpoints (e.g. from push) but no attempt */
    SR_STATE_RUNNING,
    SR_STATE_PREEMPTED,
    SR_STATE_DONE,
    SR_STATE_FAILED,
    SR_STATE_STOPPED, /* at a time limit or budget: a rerun with a larger one resumes it */
    /* The last attempt has no end and its wrapper is known gone (its lease
     * expired): it ended at its last event, its newest keep-alive at most a
     * minute before the wrapper died. A rerun resumes it. */
    SR_STATE_VANISHED,
};

struct sr_hist_attempt {
    uint32_t attempt;
    /* Where it ran: the start's (the user's --instance-type), else the
     * "placement" event's (the metadata service's); "" = unknown. */
    char host[128], cloud[32], instance_type[64], zone[64], region[64];
    /* Its local work dir on that host (the start's "work_dir"), "" = not
     * recorded; kept: --keep-work (else a done run removes it). */
    char work_dir[512];
    int work_kept;
    int64_t first_ms, last_ms; /* unix ms of its first and last event */
    int64_t start_ms;          /* the "start" event (job started), else first_ms */
    uint32_t nodes;            /* nodes of the group that ran it (the start's "nodes"), 1 default */
    double max_cost, price_per_hour; /* the start's budget (--max-cost) and price, 0 = none */
    int resumed;
    int64_t resumed_seq, resumed_step; /* -1 when fresh or unknown */
    double restore_seconds;
    int has_exit;
    int64_t exit_ms;
    int exit_code;
    char exit_signal[16]; /* "KILL", "" when it exited */
    int restarted, preempted, done, superseded;
    int oom;    /* the exit event says "oom": true */
    char *tail; /* the exit event's "tail" (last lines of the job's stderr), cleaned; NULL = none */
    int64_t tail_ms; /* when its last line was written (the exit's "tail_ms"), 0 = unknown */
    int stalled;     /* a "stalled" event */
    int64_t stall_since_ms, stall_timeout_ms;
    /* The process a stall most likely hangs on, from the event's procs
     * (one stopped or in D first) and traceback: "pid 12 (python3) state
     * T, wchan do_signal_stop, in hang_here (stall.py, line 9)"; "" when
     * the event names none. */
    char stall_suspect[256];
    /* The first "limit" event (a group's nodes each write one): the time
     * limit or budget that stopped it (docs/events.md). */
    enum sr_hist_cause limit; /* SR_CAUSE_TIME_LIMIT, SR_CAUSE_BUDGET, else NONE */
    char limit_what[16];      /* "run", "attempt", "sweep", "quota" */
    /* a quota's stop: its label and measure ("team=vision", "cost") */
    char limit_quota[136], limit_measure[16];
    /* how long `run --wait-quota` held it before it started (queue time) */
    int64_t quota_wait_ms;
    double limit_value, limit_used; /* ms for a time limit, an amount for a budget */
    char lease_reason[64];
    int64_t notice_ms; /* 0 = no notice in this attempt */
    int64_t notice_left_ms;
    char notice_source[64];
    uint64_t gpu_peak_bytes, gpu_bytes; /* 0 = unknown */
    /* GPU utilization the wrapper sampled (NVML), from the attempt's last
     * "gpu" event; gpu_samples 0 = nothing sampled. */
    unsigned gpu_samples, gpu_devices;
    double gpu_util_mean, gpu_util_p50, gpu_util_p95, gpu_idle_share, gpu_power_mean_w;
    uint64_t gpu_mem_used_max;
    /* derived by sr_hist_derive() */
    enum sr_hist_end end;
    enum sr_hist_cause cause;
    char cause_detail[128]; /* "exit 3", "SIGKILL, signal 9", "manual"...; "" when none */
    int64_t end_ms;         /* when the interruption (or the end) happened */
    int64_t lost_ms;        /* interrupted attempts only, else 0 */
    /* A sweep's decision (cause pruned or cancelled): the time the attempt
     * ran, from its start to its end; else 0. Not lost work. */
    int64_t dropped_ms;
    int64_t base_ms;  /* start of the lost span (for the report) */
    uint32_t session; /* attempts chained by restarts in one wrapper process */
};

struct sr_hist_ckpt {
    uint64_t seq;
    int64_t step;
    uint32_t attempt;
    int64_t staged_ms, persisted_ms; /* 0 = not seen */
    /* When the state it holds was taken (the staged event's state_ms: the
     * job's commit call, else the newest mtime of the directory); 0 = not
     * recorded (an older log: its staged time stands in). */
    int64_t state_ms;
    double stage_seconds, persist_seconds;
    /* What the job's commit waited: the staged event's snapshot_seconds
     * (the commit is answered after its snapshot), else (an older log,
     * where it waited for the packing) its seconds. */
    double wait_seconds;
    uint64_t raw_bytes, stored_bytes;
};

/* A commit that failed ("commit_failed"): at which step of the commit,
 * why, and what checkpoint stood then (stands_seq 0: none). */
struct sr_hist_commit_failure {
    uint32_t attempt;
    int64_t at_ms, seq, step, stands_seq, stands_step;
    char phase[8];    /* "stage", "persist" */
    char reason[160]; /* control characters replaced by '?' */
};

struct sr_hist_notice {
    uint32_t attempt;
    int64_t at_ms, left_ms;
    char source[64];
};

/* The newest checkpoint interval `--every auto` chose (an "interval"
 * event, docs/interval.md); interval_ms 0 = none recorded. */
struct sr_hist_interval {
    int64_t at_ms, interval_ms, cost_ms, mtbf_ms;
    char source[16], cost_from[16], mtbf_from[16];
};

/* A name and a count ("manual" 2, "exit 3" 1). */
struct sr_hist_count {
    char name[64];
    unsigned n;
};

/* A metric the job reported (`spotrun metric NAME=VALUE`): every value
 * folded into its last (the newest by time, then step), its minimum and
 * maximum with the step each was first reached at (which is best:
 * sr_hist_metric_maximized(), or the viewer's --maximize), and a count.
 * With h->keep_points (`report`), also its values over steps: at most
 * SR_HIST_POINTS_MAX, thinned evenly (every 2nd, then every 4th...) when
 * there are more, so a long run's curve costs a bounded memory. */
#define SR_HIST_METRIC_NAME_MAX 64 /* [A-Za-z0-9_.:-]{1,64}, as `spotrun metric` takes */
#define SR_HIST_METRICS_MAX 64     /* names per run; more are ignored */
#define SR_HIST_POINTS_MAX 1024    /* kept values per metric with keep_points */
struct sr_hist_point {
    int64_t step; /* -1: reported without a step */
    double value;
    uint32_t attempt;
    unsigned index; /* the value's rank among the metric's values (0, 1, ...) */
};
struct sr_hist_metric {
    char name[SR_HIST_METRIC_NAME_MAX + 1];
    double last, min, max;
    int64_t last_ms, last_step; /* last_step -1 when the last value had no step */
    int64_t min_step, max_step; /* the step of the first min / max; -1 unknown */
    uint32_t last_attempt;
    unsigned count;
    struct sr_hist_point *pts; /* keep_points only: in the order read */
    size_t n_pts;
    unsigned stride; /* keep every stride-th value (1, 2, 4...) */
};

struct sr_hist_prices {
    double spot_per_hour;      /* 0 = no price given */
    double on_demand_per_hour; /* 0 = none */
};

/* The "show" hint "input-bound?" when the run's GPUs were idle (below 5 %
 * utilization) at least this share of the sampled time. */
#define SR_HIST_GPU_IDLE_HINT 0.30
#define SR_HIST_GPU_LIVE_MAX 64 /* devices of a live reading */

struct sr_history {
    struct sr_hist_attempt *att;
    size_t n_att, cap_att;
    struct sr_hist_ckpt *ck;
    size_t n_ck, cap_ck;
    struct sr_hist_notice *no;
    size_t n_no, cap_no;
    struct sr_hist_metric *met; /* in the order first seen */
    size_t n_met, cap_met;
    int keep_points; /* set before adding: keep each metric's values (pts) */
    /* With keep_points: values kept per metric (at most SR_HIST_POINTS_MAX;
     * 0 = SR_HIST_POINTS_MAX): a sweep keeps fewer per trial (sweeprec.h). */
    unsigned points_max;
    unsigned requests;
    unsigned commit_failures;                   /* every attempt's */
    struct sr_hist_commit_failure last_failure; /* the newest of them */
    struct sr_hist_interval interval;
    int done_marker; /* DONE exists in the store */
    /* The run's labels: those of the newest attempt whose "start" event
     * carries any (labels.h; invalid entries dropped). */
    struct sr_labels labels;
    int64_t labels_attempt; /* -1 = none seen */
    /* who approved the run above its quota's size (`spotrun approve`),
     * from the newest start event that says; "" = none */
    char approved_by[128];
    int64_t approved_ms;
    int last_gone; /* the last attempt's wrapper is known gone (sr_hist_last_is_gone) */

    /* derived by sr_hist_derive() */
    enum sr_hist_state state;
    unsigned preemptions, failures, restarts;
    struct sr_hist_count by_source[16], by_cause[16];
    size_t n_sources, n_causes;
    unsigned ends[SR_CAUSE_COUNT]; /* ended attempts by cause ([SR_CAUSE_NONE]: running) */

    int64_t lost_ms;
    /* The work of attempts a sweep pruned or cancelled (their dropped_ms):
     * not lost work. */
    int64_t pruned_ms, cancelled_ms;
    unsigned staged, durable;
    double stage_p50, stage_max, persist_p50, persist_max; /* seconds */
    double wait_p50;                  /* of wait_seconds: --every auto's cost from history */
    uint64_t raw_bytes, stored_bytes; /* of durable checkpoints */
    int64_t first_ms, last_ms;        /* over all events */
    int64_t wall_ms, instance_ms, queued_ms;
    uint32_t sessions;
    int64_t last_durable_ms; /* unix ms of the newest persist, 0 = none */
    uint64_t gpu_peak_bytes, gpu_bytes;
    /* "stalled" events (--stall-timeout), every attempt's: sr_hist_stalls() */
    unsigned stalls;
    /* "heartbeat" events (an attempt's first heartbeat) and the longest
     * start-to-first-heartbeat among them: sr_hist_heartbeated() */
    unsigned beats;
    int64_t beat_startup_max_ms;
    /* GPU utilization over the attempts that sampled any (derived): means
     * weighted by their samples; gpu_samples 0 = none sampled. */
    uint64_t gpu_samples;
    double gpu_util_mean, gpu_idle_share;
    /* The newest live reading per device ("gpu_live", told by a running
     * wrapper to its metrics file, never logged); n 0 = none, and cleared
     * when an attempt starts or its job exits. */
    struct sr_hist_gpu_live {
        size_t n;
        int64_t at_ms;
        struct {
            unsigned gpu;
            double util, power_w; /* power_w < 0: unknown */
            uint64_t mem_used;
        } dev[SR_HIST_GPU_LIVE_MAX];
    } gpu_live;
};

void sr_hist_init(struct sr_history *h);
void sr_hist_free(struct sr_history *h);

/* Folds one event (an object as events.c writes it). Unknown events and
 * fields are ignored; lines of attempts may come in any order. */
void sr_hist_add(struct sr_history *h, const json_t *ev);
/* One JSON line; -EBADMSG (nothing added) when it does not parse. */
int sr_hist_add_line(struct sr_history *h, const char *line, size_t len);
/* Recomputes every derived field (cheap; call after adding). */
void sr_hist_derive(struct sr_history *h);

/* The last attempt's wrapper is known gone (the caller saw the run's
 * lease takeable: expired, released, or held by a process of this machine
 * that is gone): a last attempt without an end vanished instead of running.
 * Derives again. */
void sr_hist_last_is_gone(struct sr_history *h);
/* The same from the store: when the last attempt has no end and run's
 * LEASE is takeable, it is gone. Without a readable LEASE (a multi-node
 * run's are per node) nothing is guessed. */
void sr_hist_settle_last(struct sr_store *st, const char *run_id, struct sr_history *h);

/* The state rule for checkpoints without attempts: a NEW run of which n
 * checkpoints exist (a push: in the event log, or the catalog's count
 * that ls and show add) is CHECKPOINTED. */
void sr_hist_count_checkpoints(struct sr_history *h, size_t n);

/* Reads every attempt's log of run and the DONE marker, then derives.
 * Unparseable lines are skipped (a log cut by a crash still reads). */
int sr_hist_load(struct sr_store *st, const char *run_id, struct sr_history *h);
/* The same from what a listing already said: the names of run's event logs
 * (in <run>/events) and whether DONE exists. */
int sr_hist_load_logs(struct sr_store *st, const char *run_id, const struct sr_strlist *names,
                      int done, struct sr_history *h);

/* ---- a run's logs read once ----
 * What sr_hist_load reads, kept, so that several readers of one run's
 * history each fold it from one read of the store (a wrapper's start: its
 * limits, --every auto, --stall-timeout, the metrics file and the summary
 * writer). */
struct sr_hist_log {
    uint32_t attempt;
    char *buf; /* its whole lines as read (a log past the read bound: its head and tail) */
    size_t len;
    uint64_t size; /* the object's size in the store */
};
struct sr_hist_logs {
    struct sr_hist_log *v;
    size_t n, cap;
    int done; /* the run's DONE marker was there */
};
/* The run's event logs and its DONE marker, as sr_hist_load reads them. */
int sr_hist_logs_read(struct sr_store *st, const char *run_id, struct sr_hist_logs *l);
/* Folds every log of l into h (initialised), then derives: what sr_hist_load
 * gives from the same store. */
void sr_hist_from_logs(const struct sr_hist_logs *l, struct sr_history *h);
void sr_hist_logs_free(struct sr_hist_logs *l);

/* A run's history read at most once, on its first use, and shared. */
struct sr_hist_once {
    struct sr_store *st;
    const char *run_id; /* not copied: must outlive it */
    int tried, rc;
    struct sr_hist_logs logs;
    struct sr_history h;
};
void sr_hist_once_init(struct sr_hist_once *o, struct sr_store *st, const char *run_id);
/* The history (read on the first call), or NULL with *rc the read's error;
 * every call answers as the first did. */
const struct sr_history *sr_hist_once_get(struct sr_hist_once *o, int *rc);
/* The logs it was folded from, or NULL when they could not be read. */
const struct sr_hist_logs *sr_hist_once_logs(struct sr_hist_once *o);
void sr_hist_once_free(struct sr_hist_once *o);

const char *sr_hist_state_name(enum sr_hist_state s);
const char *sr_hist_end_name(enum sr_hist_end e);
/* "done", "preempted", ..., "lease-lost"; "" for SR_CAUSE_NONE. */
/* The newest attempt that has ended (a cause), or NULL. */
const struct sr_hist_attempt *sr_hist_last_ended(const struct sr_history *h);

/* The metric called name, or NULL. */
const struct sr_hist_metric *sr_hist_metric_find(const struct sr_history *h, const char *name);
/* Thins the kept values (keep_points) as more values would: the metric
 * with the most points drops every other one and doubles its stride, until
 * all metrics together keep at most total points (a bound per run where a
 * bound per metric times many metrics is too much). */
void sr_hist_thin_points(struct sr_history *h, size_t total);
/* Its best value: the maximum when maximize, else the minimum; and the
 * step it was first reached at (-1 when that value had no step). */
double sr_hist_metric_best(const struct sr_hist_metric *m, int maximize);
int64_t sr_hist_metric_best_step(const struct sr_hist_metric *m, int maximize);
/* The direction convention (docs/json-schema.md, "Metrics"): 1 when a
 * metric of this name is better larger. The name is cut into words at
 * _ . : - and lowercased; it is maximized when a word is one of accuracy,
 * acc, f1, auc, bleu, rouge, reward, return, score, precision, recall,
 * iou, map, dice, psnr, ssim, r2, top1, top5, and none is one of loss,
 * error, err, perplexity, ppl, nll, mse, mae, rmse, wer, cer. Anything
 * else is minimized. */
int sr_hist_metric_maximized(const char *name);

/* How many times the run's job was stopped as stalled (--stall-timeout),
 * over every attempt of every wrapper: `run` counts them toward
 * --max-restarts, so a run that hangs again and again stops. */
unsigned sr_hist_stalls(const struct sr_history *h);

/* 1 when the run's job heartbeated in any attempt (a "heartbeat" event, or
 * a "stalled" one, which only a job that heartbeated gets), with the
 * longest time from an attempt's start to its first heartbeat in
 * *longest_startup_ms (0 = unknown): `run --stall-timeout` judges every
 * later attempt from its start. */
int sr_hist_heartbeated(const struct sr_history *h, int64_t *longest_startup_ms);

/* Instance hours and cost; *spot and *on_demand are 0 without a price. */
double sr_hist_instance_hours(const struct sr_history *h);

#endif
