/*
 * spotrun.h - the in-process API of libspotrun.so, for jobs run under
 * `spotrun run`.
 *
 * A job links against libspotrun.so (or has it LD_PRELOADed by the wrapper)
 * and uses three calls:
 *
 *   if (spotrun_checkpoint_requested()) {    // the wrapper asked for one
 *       save_everything_to(getenv("SPOTRUN_CKPT_DIR"));
 *       spotrun_commit(step);                // staged: safe to go on
 *   }
 *
 * Contract:
 *  - spotrun_checkpoint_requested() is async-signal-safe and lock-free; it
 *    turns nonzero when the checkpoint-request signal ($SPOTRUN_SIGNAL,
 *    default SIGUSR1) arrives through the shim's handler, and is cleared by
 *    a successful spotrun_commit(). If the application installs its own
 *    handler for that signal, the shim's flag no longer sees it.
 *  - spotrun_commit() blocks until the wrapper has staged $SPOTRUN_CKPT_DIR
 *    (packed and compressed to local disk), which may take seconds; after it
 *    returns 0 the job may overwrite the directory. It is thread-safe but not
 *    async-signal-safe: call it from the training loop, not a handler.
 *  - Functions return 0 or a negative errno value; the library never exits
 *    the process and writes to stderr only to relay the wrapper's refusal.
 *
 * The same job environment is documented in DESIGN.md ("The job's contract").
 */
#ifndef SPOTRUN_H
#define SPOTRUN_H

#ifdef __cplusplus
extern "C" {
#endif

/* Nonzero once a checkpoint request is pending; reset by a successful
 * spotrun_commit(). Safe to call from a signal handler. */
int spotrun_checkpoint_requested(void);

/* Tell the wrapper that $SPOTRUN_CKPT_DIR holds a complete checkpoint taken
 * at `step` (step < 0: unknown). Returns 0 once staged, -ENOTCONN when not
 * running under spotrun, -EIO when the wrapper refused (its message goes to
 * stderr prefixed "spotrun: "), or -errno on a socket error. */
int spotrun_commit(long step);

/* The step recorded with the checkpoint restored before this start, or -1
 * when the job starts fresh (SPOTRUN_RESUMED is not "1") or the step is
 * unknown. */
long spotrun_restored_step(void);

#ifdef __cplusplus
}
#endif

#endif /* SPOTRUN_H */
