/*
 * sweep_steer.h - a sweep's steering: what its operator asked (cancel,
 * retry, pause, resume, priority), as a history of create-only objects
 * (docs/sweeps.md, "Steering").
 *
 *   sweeps/<name>/steer/<NNNNNN>.json   {"format","sweep","seq","action","trials",
 *                                         "stop","priority","by","unix_ms"}
 *
 * Each action is a new object, written create-only with the next number,
 * as budget versions are: two operators racing get consecutive numbers and
 * both land; nothing is ever overwritten. The sweep's steering state (the
 * cancelled trials, whether it is paused, each trial's priority) is the
 * fold of that history in number order (sr_steer_fold, pure), so the
 * history is also the sweep's event history (who, when).
 *
 * Nothing read is trusted: an object whose name, sweep or seq is not its
 * key's, whose action is unknown or whose trials are not trial numbers is
 * left out of the fold and counted (out->bad), never a crash or a wrong
 * state; strings are made terminal-safe.
 */
#ifndef SPOTRUN_SWEEP_STEER_H
#define SPOTRUN_SWEEP_STEER_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define SR_STEER_MAX 100000u /* actions of one sweep */
#define SR_STEER_PRIORITY_MAX 1000000L

enum sr_steer_action {
    SR_STEER_CANCEL,   /* the trials stop (checkpoint) and are never claimed again */
    SR_STEER_RETRY,    /* the trials go back to the queue */
    SR_STEER_PAUSE,    /* workers claim nothing; with stop, running trials stop too */
    SR_STEER_RESUME,   /* workers claim again */
    SR_STEER_PRIORITY, /* the trials' priority: higher is claimed first */
};

/* One action as recorded. */
struct sr_steer_entry {
    unsigned seq;
    enum sr_steer_action action;
    long *trials; /* CANCEL, RETRY, PRIORITY */
    size_t n_trials;
    int stop;      /* PAUSE --stop */
    long priority; /* PRIORITY */
    char by[128];  /* user@host */
    int64_t unix_ms;
};

/* The fold of the history. */
struct sr_steer_state {
    size_t n;                 /* trials covered (0..n-1) */
    unsigned char *cancelled; /* per trial */
    long *priority;           /* per trial, 0 unless set */
    int paused, pause_stop;
    const struct sr_steer_entry *paused_by; /* the pause in force, NULL when not paused */
    struct sr_steer_entry *log;             /* the history in seq order (read: owned) */
    size_t n_log;
    int owns_log;      /* sr_steer_read's: sr_steer_free frees it */
    size_t bad;        /* objects left out: not a steering action of this sweep */
    unsigned next_seq; /* the number the next action will have (read: listed + 1) */
};

const char *sr_steer_action_name(enum sr_steer_action a);
/* -1 for an unknown word. */
int sr_steer_action_of(const char *name);

/* Pure: the state of trials 0..n_trials-1 after log (in seq order; trials
 * past n_trials are ignored). out->log is set to log, not copied. 0 or
 * -ENOMEM. */
int sr_steer_fold(const struct sr_steer_entry *log, size_t n_log, size_t n_trials,
                  struct sr_steer_state *out);
/* Pure: one object's content, for the key of seq in sweep. 0, or -EBADMSG
 * (not a steering action of this sweep). Free with sr_steer_entry_free. */
int sr_steer_parse(const char *buf, size_t len, const char *sweep, unsigned seq,
                   struct sr_steer_entry *out);
void sr_steer_entry_free(struct sr_steer_entry *e);

/* Reads the history of sweep name and folds it for n_trials: 0 (no
 * history is an empty state), or store errors. */
int sr_steer_read(struct sr_store *st, const char *name, size_t n_trials,
                  struct sr_steer_state *out);
/* The same, reading only the actions prev (an earlier read of the same
 * sweep, may be NULL) does not hold: an action is create-only, so the one
 * numbered seq never changes. A poller's read is one listing plus what is
 * new. prev stays the caller's. */
int sr_steer_reread(struct sr_store *st, const char *name, size_t n_trials,
                    const struct sr_steer_state *prev, struct sr_steer_state *out);
/* Whether the history grew since prev (an earlier read of the same
 * sweep, may be NULL): 1 when action prev->next_seq exists, 0 when not,
 * or store errors. One request (the numbers are dense: sr_steer_write
 * takes the next one), so a poller may look every few seconds and
 * reread (one listing plus what is new) only when this says 1. */
int sr_steer_grew(struct sr_store *st, const char *name, const struct sr_steer_state *prev);
/* Records e (its seq, by and unix_ms are filled in here: by from $USER and
 * the host) as the next action. *seq (may be NULL) gets its number. */
int sr_steer_write(struct sr_store *st, const char *name, struct sr_steer_entry *e, unsigned *seq);
void sr_steer_free(struct sr_steer_state *s);

/* Whether trial k is cancelled / its priority (0 out of range). */
int sr_steer_cancelled(const struct sr_steer_state *s, size_t k);
long sr_steer_priority(const struct sr_steer_state *s, size_t k);

#endif
