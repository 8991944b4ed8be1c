/*
 * shim.h - what the preload library's files share internally (never
 * installed, never exported: the version script exports only spotrun_*).
 *
 * The checkpoint request is kept as two generation counters rather than one
 * flag, so that a request arriving while a commit is in flight is not lost
 * when that commit succeeds: the handler bumps `requested`, a successful
 * commit advances `served` to the value it saw when it started, and a
 * request is pending while the two differ.
 */
#ifndef SPOTRUN_SHIM_H
#define SPOTRUN_SHIM_H

#define SPOTRUN_EXPORT __attribute__((visibility("default")))

/* Idempotent, thread-safe, never blocks; called from the constructor and at
 * the top of every public entry point (another library's constructor may
 * call us before ours ran). */
void shim_init(void);

/* Generation of the newest checkpoint request seen (async-signal-safe). */
unsigned long shim_request_generation(void);

/* Mark every request up to `generation` as answered by a commit. */
void shim_mark_served(unsigned long generation);

#endif /* SPOTRUN_SHIM_H */
