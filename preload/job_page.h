/*
 * job_page.h - the job page: one small file per attempt,
 * $SPOTRUN_JOB_PAGE (<work dir>/<run>/job.page), that the wrapper creates
 * and every process of the job may map MAP_SHARED (the shim does, the
 * Python module does, any language can). It carries the checkpoint request
 * to every process of the job's tree, launchers included, whether or not it
 * handles the request signal.
 *
 * Contract (this layout is pinned by tests/unit/test_preload_page.c; the
 * Python module reads the same offsets):
 *  - magic and version first; a reader refuses any other magic, a version it
 *    does not know, or a file shorter than SPOTRUN_JOB_PAGE_SIZE.
 *  - requested (offset 16): a generation, bumped by the wrapper for every
 *    checkpoint request (notice, --every, rebalance) before it sends the
 *    request signal. Only the wrapper writes it.
 *  - served (offset 24): the generation the newest commit answered: the
 *    wrapper sets it to `requested` as it takes a COMMIT, so a request that
 *    arrives while a commit is in flight stays pending. Only the wrapper
 *    writes it. A request is pending while requested != served.
 *  - listening (offset 32): nonzero once any process of the job asked for
 *    requests: it installed a handler for the request signal, or polled
 *    (spotrun_checkpoint_requested(), the Python module). Processes write it
 *    (a plain store of a nonzero value), the wrapper reads it: a job nobody
 *    listens in is not waited for at a notice.
 *  - signo (offset 40): the request signal's number, for pollers that want
 *    to handle it too.
 *  - progress (offset 48): the heartbeat, a counter any process of the job
 *    bumps on each heartbeat (one per step: spotrun_checkpoint_requested(),
 *    spotrun_commit(), the Python module's checkpoint_due(), commit() and
 *    metric(); the wrapper bumps it for each COMMIT and METRIC request it
 *    takes). C adds atomically; Python adds without a lock, so two
 *    processes may lose an increment: harmless, readers only ask whether
 *    the value moved, never by how much.
 *  - progress_ms (offset 56): CLOCK_REALTIME ms of the newest heartbeat,
 *    written by whoever bumped progress (a plain store).
 *    Both were reserved words before: version stays 1 (an older wrapper
 *    leaves them zero, an older job never moves them: never judged stalled).
 *  - Every field is a naturally aligned 64-bit word: a plain load is never
 *    torn. The wrapper zeroes the counters at each attempt.
 */
#ifndef SPOTRUN_JOB_PAGE_H
#define SPOTRUN_JOB_PAGE_H

#include <stdint.h>

#define SPOTRUN_JOB_PAGE_MAGIC 0x0031424f4a525053ULL /* "SRJOB1\0\0" little-endian */
#define SPOTRUN_JOB_PAGE_VERSION 1u
#define SPOTRUN_JOB_PAGE_SIZE 4096u

struct spotrun_job_page {
    uint64_t magic;
    uint32_t version;
    uint32_t size; /* SPOTRUN_JOB_PAGE_SIZE */
    uint64_t requested;
    uint64_t served;
    uint64_t listening;
    uint64_t signo;
    uint64_t progress;
    uint64_t progress_ms;
    uint64_t reserved[24];
};

#endif
