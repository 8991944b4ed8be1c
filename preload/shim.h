/*
 * shim.h - what the preload library's files share internally (never
 * installed, never exported: the version script exports only spotrun_* and
 * the interposed symbols of hooks.h).
 *
 * The checkpoint request is kept as two generation counters rather than one
 * flag, so that a request arriving while a commit is in flight is not lost
 * when that commit succeeds: the handler bumps `requested`, a successful
 * commit advances `served` to the value it saw when it started, and a
 * request is pending while the two differ.
 *
 * Re-entry guard (libfaketime style): a per-thread depth counter. While it
 * is nonzero - inside a real CUDA call made by one of our hooks, or inside
 * the shim's own CUDA calls - every hook forwards without accounting, which
 * is what makes a cudaMalloc that the runtime implements with cuMemAlloc
 * count once.
 */
#ifndef SPOTRUN_SHIM_H
#define SPOTRUN_SHIM_H

#define SPOTRUN_EXPORT __attribute__((visibility("default")))

/* Idempotent, thread-safe, never blocks; called from the constructor and at
 * the top of every public entry point and hook (another library's
 * constructor may call us before ours ran). */
void shim_init(void);

/* Generation of the newest checkpoint request seen (async-signal-safe). */
unsigned long shim_request_generation(void);
/* Counts a checkpoint request (async-signal-safe). */
void shim_note_request(void);
/* Mark every request up to `generation` as answered by a commit. */
void shim_mark_served(unsigned long generation);

/* The job page ($SPOTRUN_JOB_PAGE, see job_page.h): mapped at init when
 * the wrapper made one. Marks the job as listening for requests
 * (async-signal-safe; nothing without a page). */
void shim_job_listening(void);
/* Bumps the job page's heartbeat (progress, progress_ms); async-signal-safe,
 * nothing without a page. */
void shim_heartbeat(void);

/* signals.c: installs the request-signal and SIGTERM handlers. */
void shim_signals_init(void);

/* registry.c: writes registered buffers into $SPOTRUN_CKPT_DIR. */
int shim_registry_save(void);

extern __thread int shim_depth __attribute__((tls_model("initial-exec")));
static inline int shim_busy(void)
{
    return shim_depth != 0;
}
static inline void shim_enter(void)
{
    shim_depth++;
}
static inline void shim_leave(void)
{
    shim_depth--;
}

#define SHIM_LIKELY(x) __builtin_expect(!!(x), 1)

#endif /* SPOTRUN_SHIM_H */
