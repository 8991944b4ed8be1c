/*
 * spotrun.h - the in-process API of libspotrun.so, for jobs run under
 * `spotrun run`.
 *
 * A job links against libspotrun.so (or has it LD_PRELOADed by the wrapper)
 * and uses three calls:
 *
 *   if (spotrun_checkpoint_requested()) {    // the wrapper asked for one
 *       save_everything_to(getenv("SPOTRUN_CKPT_DIR"));
 *       spotrun_commit(step);                // snapshotted: safe to go on
 *   }
 *
 * or lets the shim save its buffers (host or CUDA device memory):
 *
 *   spotrun_register("weights", d_weights, bytes);  // 1 = filled back on resume
 *   spotrun_register("step", &step, sizeof step);
 *   ... if (spotrun_checkpoint_requested()) spotrun_commit(step);
 *
 * Contract:
 *  - spotrun_checkpoint_requested() is async-signal-safe and lock-free; it
 *    turns nonzero when the wrapper asks for a checkpoint (the job page,
 *    $SPOTRUN_JOB_PAGE: the same answer in every process of the job), and
 *    is cleared by the next commit, from any process of the job. Without a
 *    job page it follows the request signal ($SPOTRUN_SIGNAL, default
 *    SIGUSR1) that reached this process and its own spotrun_commit(). The application may install
 * its own handler for that signal too: the shim keeps its handler installed and calls the
 * application's after counting the request.
 *  - Heartbeat: each spotrun_checkpoint_requested() and spotrun_commit()
 *    is one heartbeat on the job page (call the first once per step), which
 *    `spotrun run --stall-timeout` watches: a job that heartbeated and then
 *    stops for longer than the timeout is judged stalled and restarted.
 *  - spotrun_commit() blocks until the wrapper has taken a snapshot of
 *    $SPOTRUN_CKPT_DIR: hard links (or reflinks) of files replaced by a
 *    rename since the last commit, copies of files written in place or not
 *    seen before; O(files), not the seconds packing a big directory takes.
 *    After it returns 0 the job may overwrite the directory; the commit
 *    then holds the directory as it was at the snapshot. Packing,
 *    compressing and storing it go on in the background: the checkpoint is
 *    durable later (spotrun_wait_durable() says when) or fails then,
 *    leaving the previous checkpoint as the newest, never a mix of the two.
 *    A file linked because the job replaces it by a rename, but rewritten
 *    in place while the commit packs it, fails that commit (and is copied
 *    from then on). It is thread-safe but not async-signal-safe: call it
 *    from the training loop, not a handler.
 *  - Functions return 0 or a negative errno value; the library never exits
 *    the process and writes to stderr only to relay the wrapper's refusal.
 *
 * The job environment is documented in docs/guide.md ("The job's contract").
 */
#ifndef SPOTRUN_H
#define SPOTRUN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Nonzero once a checkpoint request is pending; reset by a successful
 * spotrun_commit(). Safe to call from a signal handler. */
int spotrun_checkpoint_requested(void);

/* Tell the wrapper that $SPOTRUN_CKPT_DIR holds a complete checkpoint taken
 * at `step` (step < 0: unknown). Returns 0 once snapshotted (see above: not
 * yet durable), -ENOTCONN when not running under spotrun, -EIO when the
 * wrapper refused (its message goes to stderr prefixed "spotrun: "), or
 * -errno on a socket error. */
int spotrun_commit(long step);

/* Waits until checkpoint `seq` is durable in the store (a newer one being
 * durable counts: a checkpoint skipped at a notice for a newer one is
 * superseded); seq <= 0: this process's newest successful spotrun_commit().
 * timeout_ms < 0 waits without a limit. Returns 0 once durable,
 * -ETIMEDOUT, -EIO when that checkpoint failed after its commit returned
 * (a message goes to stderr), -EINVAL when seq <= 0 and this process has
 * not committed, -ENOTCONN when not running under spotrun, or -errno on a
 * socket error. Polls the wrapper (STATUS) every 20-250 ms. Thread-safe;
 * not async-signal-safe. */
int spotrun_wait_durable(long seq, long timeout_ms);

/* Records a number the job reports (`name`: 1-64 of [A-Za-z0-9_.:-]; a
 * finite value) at `step` (< 0: unknown) in the run's event log, where
 * `spotrun show` and sweeps read it. Returns 0, -ENOTCONN when not running
 * under spotrun, -EINVAL for a bad name or value, -EIO when the wrapper
 * refused, or -errno on a socket error. Thread-safe; not async-signal-safe. */
int spotrun_metric(const char *name, double value, long step);

/* The step recorded with the checkpoint restored before this start, or -1
 * when the job starts fresh (SPOTRUN_RESUMED is not "1") or the step is
 * unknown. */
long spotrun_restored_step(void);

/* Marks `bytes` at `ptr` (host memory, or CUDA device memory: detected
 * with cudaPointerGetAttributes) as part of the job's state under `name`
 * (1-63 of [A-Za-z0-9._-]). Each later spotrun_commit() first writes every
 * registered buffer to $SPOTRUN_CKPT_DIR/spotrun-buffers/<name>.bin.
 * Registering a name again replaces its pointer and size.
 * Returns 1 when this is a resumed run and the buffer was filled back from
 * the restored checkpoint, 0 when registered (nothing to restore),
 * -EMSGSIZE when the checkpoint's copy has another size (a message names
 * both; the buffer is untouched), -EINVAL for a bad name, -ENOSPC past 64
 * buffers, or -errno on an I/O error. Thread-safe; not async-signal-safe. */
int spotrun_register(const char *name, void *ptr, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* SPOTRUN_H */
