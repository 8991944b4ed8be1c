/*
 * every.h - `--every auto` inside the supervisor: which checkpoint interval
 * to ask the job for, from the measured cost of its checkpoints and the
 * run's preemption rate (the model: common/interval.h, docs/interval.md).
 *
 * The caller (cmd_run) reads the run's history once, before the job starts,
 * and hands in its numbers (sr_every_auto); this keeps the stage times of
 * this wrapper's commits and the instance time since it started, and
 * re-evaluates the interval after each staged commit.
 *
 * Cost: the median of the waits of this wrapper's newest commits (from the
 * request to the snapshot that answers it: the job waits for its `spotrun
 * commit` that long; the packing after is the wrapper's), else the
 * history's p50 of the same, else SR_INTERVAL_COST_PRIOR_MS. Once the job reports its own pause
 * with a commit (COMMIT <step> pause_ms=N: a background save, whose commit
 * the training loop does not wait for), the reported pauses are the
 * samples and stage times are not. MTBF: instance time / preemptions of
 * the run's history plus this wrapper's time, else the --mtbf prior.
 *
 * Not thread-safe: the supervisor's loop owns it. No I/O; clocks come in.
 */
#ifndef SPOTRUN_EVERY_H
#define SPOTRUN_EVERY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The settings and the history the interval starts from. */
struct sr_every_auto {
    int on;                   /* --every auto */
    int64_t mtbf_prior_ms;    /* --mtbf */
    int64_t min_ms, max_ms;   /* --every-min, --every-max */
    int64_t hist_instance_ms; /* instance time before this wrapper */
    uint64_t hist_preemptions;
    int64_t hist_cost_ms;   /* the history's commit wait p50, 0 = none staged */
    const char *mtbf_scope; /* what the history covers: "history" or "sweep" */
};

#define SR_EVERY_SAMPLES 16

struct sr_every {
    struct sr_every_auto cfg;
    int64_t started_ms; /* monotonic, when this wrapper began */
    int64_t samples[SR_EVERY_SAMPLES];
    size_t n_samples, next_sample;
    int pauses; /* the job reports its pause: stage times are not its cost */
    /* the current choice (sr_every_update) */
    int64_t interval_ms, cost_ms, mtbf_ms;
    const char *cost_from; /* "measured", "history", "prior" */
    const char *mtbf_from; /* "history", "sweep", "prior" */
    int bound;             /* -1 at --every-min, 1 at an upper bound, else 0 */
};

void sr_every_init(struct sr_every *e, const struct sr_every_auto *cfg, int64_t now_ms);

/* One commit's stage time (ignored once the job reports its pauses). */
void sr_every_sample(struct sr_every *e, int64_t stage_ms);
/* One commit's pause, as the job reported it. */
void sr_every_sample_pause(struct sr_every *e, int64_t pause_ms);

/* Recomputes the interval. Returns 1 when it is worth saying: the first
 * time, a move of 10% or more, or a different source of cost or MTBF. */
int sr_every_update(struct sr_every *e, int64_t now_ms);

/* "4m10s (auto: cost 2.1s measured, MTBF 6h00m prior)" */
void sr_every_describe(const struct sr_every *e, char *buf, size_t len);

/* The fields of an "interval" event (docs/events.md). */
json_t *sr_every_event(const struct sr_every *e);

#endif
