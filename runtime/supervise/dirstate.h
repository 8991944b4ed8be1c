/*
 * dirstate.h - whether the checkpoint directory, as it stands, is what the
 * newest commit that has not failed carries: the supervisor's answer to
 * "commit the directory now?" when the job exits by itself and when it
 * settles (--settle).
 *
 * Fed the directory's fingerprint (child.h, sr_dir_fingerprint_ex) at the
 * restore and at each commit submitted, and the checkpointer's results
 * (each carries the fingerprint it was submitted with as its tag): a
 * failed commit (stage or persist) gives way to the newest one that
 * succeeded, so a directory whose newest commit failed, or that changed
 * since the newest commit, is committed again once the job is done with it.
 *
 * Pure: no I/O, no clock; the supervisor's loop owns it (not thread-safe).
 */
#ifndef SPOTRUN_DIRSTATE_H
#define SPOTRUN_DIRSTATE_H

#include <stdint.h>

struct sr_dirstate {
    uint64_t newest;  /* what the newest commit not known to have failed carries */
    uint64_t durable; /* what the newest durable commit (or the restore) carries */
};

/* The directory as restored (or found) at an attempt's start. */
void sr_dirstate_reset(struct sr_dirstate *d, uint64_t fp);
/* A commit of the directory with this fingerprint was submitted. */
void sr_dirstate_submitted(struct sr_dirstate *d, uint64_t fp);
/* A commit submitted with fingerprint tag became durable (ok 1; in a
 * multi-node run: this node's part), or failed to stage or persist (ok 0). */
void sr_dirstate_result(struct sr_dirstate *d, uint64_t tag, int ok);
/* Whether the directory (fingerprint fp; empty: it holds nothing) holds
 * something no commit carries: the newest commit failed or never happened. */
int sr_dirstate_due(const struct sr_dirstate *d, uint64_t fp, int empty);

/* What to do with the directory once the job has exited. */
enum sr_final_commit {
    SR_FINAL_COMMIT,    /* the job exited by itself: commit what it left */
    SR_FINAL_CARRIED,   /* nothing new: the newest commit carries it (or it is empty) */
    SR_FINAL_KILLED,    /* SIGKILL (or exit 137): a file may be half-written; never */
    SR_FINAL_LEASE_LOST /* another wrapper owns the run: nothing this one commits counts */
};

/* The decision for a job that ended with wait status status. */
enum sr_final_commit sr_dirstate_after_exit(const struct sr_dirstate *d, int status, int lost,
                                            uint64_t fp, int empty);

#endif
