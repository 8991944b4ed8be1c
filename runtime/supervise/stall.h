/*
 * stall.h - the stall watchdog's judgement (`spotrun run --stall-timeout`):
 * fed the job's heartbeats and the clock, it says whether the job is
 * stalled and when to look next. The supervisor reads the heartbeats from
 * the job page (job_page.h: progress, progress_ms) and does the rest
 * (watchdog.c: evidence, the "stalled" event, the stop and the restart).
 *
 * Rules (docs/runtime.md, "Stall watchdog"):
 *  - An attempt that has not heartbeated yet is judged only once the run
 *    heartbeated in an earlier attempt (this wrapper's, or an earlier
 *    wrapper's: sr_stall_prior): then from its start, with the start-up
 *    allowance (sr_stall_startup: --stall-startup, else the longest
 *    start-to-first-heartbeat seen times SR_STALL_STARTUP_FACTOR, at least
 *    the timeout and SR_STALL_STARTUP_FLOOR_MS). A job that never
 *    heartbeated (no module, no API) is left alone.
 *  - Held time is not judged: while the job answers a checkpoint request
 *    (pending, and heartbeated since it was made), a commit is staging or
 *    a notice is being handled, the deadline moves with the clock
 *    (sr_stall_hold), and the gap it spans is not learned.
 *  - A fixed timeout judges after its first heartbeat. `auto` learns the
 *    longest gap between heartbeats seen by this wrapper (every attempt)
 *    and judges only after SR_STALL_AUTO_MIN_GAPS of them: its timeout is
 *    max(SR_STALL_AUTO_FLOOR_MS, SR_STALL_AUTO_FACTOR x the longest gap).
 *
 * Not thread-safe: the supervisor's loop owns it. No I/O; clocks come in
 * (monotonic ms).
 */
#ifndef SPOTRUN_STALL_H
#define SPOTRUN_STALL_H

#include <stddef.h>
#include <stdint.h>

#define SR_STALL_AUTO_FLOOR_MS (10 * 60 * 1000)
#define SR_STALL_AUTO_FACTOR 5
#define SR_STALL_AUTO_MIN_GAPS 5
#define SR_STALL_STARTUP_FLOOR_MS (5 * 60 * 1000)
#define SR_STALL_STARTUP_FACTOR 2
#define SR_STALL_SAVE_FACTOR 5
#define SR_STALL_SAVE_FIRST_MS (30 * 60 * 1000)

struct sr_stall {
    int64_t timeout_ms; /* fixed timeout; 0 with auto_mode */
    int auto_mode;
    /* This attempt: whether it heartbeated, and when it last did (or when
     * held time last ended). */
    int beaten;
    int64_t last_ms;
    int skip_gap; /* the next gap spans held time: not learned */
    /* Learned over the wrapper's life (auto). */
    int64_t longest_gap_ms;
    unsigned gaps;
    /* Start-up: this attempt's start, the allowance given (0 = learned),
     * whether the run heartbeated in any attempt, and the longest
     * start-to-first-heartbeat seen (held start-ups are not learned). */
    int64_t started_ms;
    int64_t startup_ms; /* < 0: not judged before the first heartbeat */
    int ever_beaten;
    int64_t longest_startup_ms;
    int startup_held;
    /* Answering a checkpoint request: since when (0 = not now), and the
     * longest answer seen (sr_stall_saving). */
    int64_t save_since_ms;
    int64_t longest_save_ms;
};

/* timeout_ms > 0: fixed; auto_mode: learned. Off is neither (never judges). */
void sr_stall_init(struct sr_stall *s, int64_t timeout_ms, int auto_mode);

/* --stall-startup: the start-up allowance, 0 = learned (sr_stall_startup),
 * negative = none: an attempt is judged only after its first heartbeat
 * (a multi-node run, whose start waits for the other nodes). */
void sr_stall_set_startup(struct sr_stall *s, int64_t startup_ms);

/* The run heartbeated in an earlier wrapper's attempt (its history); its
 * longest start-to-first-heartbeat, 0 = unknown. */
void sr_stall_prior(struct sr_stall *s, int64_t longest_startup_ms);

/* A new attempt, started at now_ms: not heartbeated yet. */
void sr_stall_attempt(struct sr_stall *s, int64_t now_ms);

/* The job heartbeated at at_ms (earlier heartbeats are ignored). */
void sr_stall_beat(struct sr_stall *s, int64_t at_ms);

/* Whether the job's answering a checkpoint request (saving: the request is
 * pending and the job heartbeated since it was made) holds the clock at
 * now_ms. A save holds for at most SR_STALL_SAVE_FACTOR x the longest save
 * seen, and at least the timeout; before any save ended, for
 * max(SR_STALL_SAVE_FACTOR x the timeout, SR_STALL_SAVE_FIRST_MS). Past
 * that the job is judged again: a job that heard the request and then hung
 * (a rank waiting in a collective for a frozen one) is not shielded for
 * ever. The end of a save (saving 0) learns its length. */
int sr_stall_saving(struct sr_stall *s, int saving, int64_t now_ms);

/* A request was answered (a commit) ms after it was made: a save that
 * long is learned, however briefly the loop saw it. */
void sr_stall_saved(struct sr_stall *s, int64_t ms);

/* The longest a save may hold the clock now (see sr_stall_saving). */
int64_t sr_stall_save_allowance(const struct sr_stall *s);

/* Held time: the clock stands still for the judgement up to now_ms. */
void sr_stall_hold(struct sr_stall *s, int64_t now_ms);

/* The timeout in force, 0 = not judging now (off, no heartbeat in this
 * attempt nor any earlier one, or auto before enough heartbeats). Before
 * the attempt's first heartbeat it is the start-up allowance. */
int64_t sr_stall_timeout(const struct sr_stall *s);

/* 1 while the attempt is judged before its first heartbeat. */
int sr_stall_in_startup(const struct sr_stall *s);

/* The start-up allowance: --stall-startup, else max(the floor, the timeout
 * (auto: max(its floor, factor x the longest gap)), factor x the longest
 * start-up seen). */
int64_t sr_stall_startup(const struct sr_stall *s);

/* When the job is stalled unless it heartbeats before, 0 = not judging. */
int64_t sr_stall_deadline(const struct sr_stall *s);

/* 1 when the job is stalled at now_ms. */
int sr_stall_due(const struct sr_stall *s, int64_t now_ms);

/* "5s", "auto (learning: 2 of 5 gaps seen)", "auto: 10m0s (longest gap 3.0s)" */
void sr_stall_describe(const struct sr_stall *s, char *buf, size_t len);

/* "3.0s (--stall-startup)", "5m00s (the floor)", "1m20s (2 x the longest
 * start-up seen, 40.0s)", "10m00s (the stall timeout)" */
void sr_stall_describe_startup(const struct sr_stall *s, char *buf, size_t len);

#endif
