/*
 * supervisor.h - `spotrun run`: start the job, feed it its checkpoint,
 * restart it after crashes, and turn a preemption notice into a durable
 * checkpoint and exit 75.
 *
 * DESIGN (tini's shape): every signal the wrapper cares about is blocked and
 * read from a signalfd; one poll() loop takes signals, child exits, control
 * requests, checkpointer results and timers as events. The child runs in its
 * own process group with the original signal mask restored before exec. The
 * environment of the child is built before fork (the checkpointer threads
 * exist, so the child may only call async-signal-safe functions).
 */
#ifndef SPOTRUN_SUPERVISOR_H
#define SPOTRUN_SUPERVISOR_H

#include <jansson.h>
#include <signal.h>
#include <stdint.h>

#include "events.h"
#include "every.h"
#include "lease.h"
#include "limit.h"
#include "notice.h"
#include "outcome.h"
#include "store.h"

struct sr_supervise_config {
    char **argv; /* the job's command */
    const char *run_id;
    const char *run_dir;      /* local work dir of the run (spool, socket) */
    int keep_work;            /* --keep-work: run_dir stays once the run is done */
    const char *ckpt_dir;     /* SPOTRUN_CKPT_DIR */
    int ckpt_named;           /* --ckpt-dir: the user's; each file removed from it is logged */
    const char *control_path; /* SPOTRUN_CONTROL */
    const char *preload;      /* libspotrun.so to LD_PRELOAD, NULL = none */
    const char *self;         /* absolute path of the spotrun binary (SPOTRUN_BIN) */
    struct sr_store *st;
    int64_t every_ms; /* periodic checkpoint requests, 0 = off */
    /* --every auto (every_auto.on; every_ms is 0): the interval follows the
     * measured cost of a checkpoint and the run's preemption rate
     * (every.h, docs/interval.md). */
    struct sr_every_auto every_auto;
    int64_t settle_ms; /* commit the dir once unchanged this long, 0 = off */
    /* --ckpt-exclude: glob patterns of paths in ckpt_dir never archived
     * (codec.h, sr_pack_excluded), nor watched for changes */
    const char *const *ckpt_exclude;
    size_t n_ckpt_exclude;
    int64_t grace_ms;   /* deadline of a SIGTERM/SIGINT notice */
    int64_t backoff_ms; /* first restart delay (doubles, capped at 60 s) */
    unsigned max_restarts;
    unsigned keep;
    unsigned full_every;            /* delta checkpoints: see sr_commits_config */
    int signo;                      /* checkpoint-request signal */
    int threads, level;             /* codec */
    uint64_t gpu_mem_limit;         /* --gpu-mem-limit per process per device, 0 = none */
    int64_t gpu_sample_ms;          /* GPU utilization sample period (gpu_sampler.h), 0 = off */
    struct sr_notice_config notice; /* cloud metadata watcher (--notice) */
    /* The run's lease, held by the caller (NULL = no lease): renewed while
     * the job runs and before each commit point; losing it to another
     * wrapper stops the job without a checkpoint and exits 73. */
    struct sr_lease *lease;
    uint64_t epoch; /* without a lease: the run's current epoch (sr_ckpt_max_epoch) */
    /* --stall-timeout (stall.h, watchdog.c): a job that heartbeated and
     * then stops for stall_timeout_ms (or the learned timeout with
     * stall_auto) is stopped and restarted as a failure; prior_stalls are
     * the stalls of the run's earlier wrappers (its history), counted with
     * this one's against max_restarts. Once the run heartbeated (in this
     * wrapper, or prior_beaten: in an earlier one, whose longest start to
     * first heartbeat was prior_startup_ms, 0 = unknown), an attempt is
     * judged from its start, allowed stall_startup_ms (0 = learned) before
     * its first heartbeat. */
    int64_t stall_timeout_ms;
    int stall_auto;
    unsigned prior_stalls;
    int64_t stall_startup_ms;
    int prior_beaten;
    int64_t prior_startup_ms;
    /* Multi-node: how many stalls of the run its engine's reruns may take
     * (an explicit --max-restarts, else 3) before a stalled node gives up. */
    unsigned max_stalls;
    /* Multi-node runs (docs/multinode.md): nodes > 1 makes each commit this
     * node's part of its step, shares notices with the other nodes through
     * the store (peers.h, every peer_poll_ms) and restores this node's part
     * (every part with restore_all). */
    uint32_t nodes, node_rank;
    int restore_all;
    int64_t peer_poll_ms;
    /* Filled in before sr_supervise returns (may be NULL): whether the job
     * kept failing past max_restarts, and how it last ended. */
    struct sr_supervise_result *result;
    /* The signal mask the job starts with, when the caller blocked notice
     * signals before calling (so that a TERM between taking the lease and
     * supervising is a notice, not a death holding the lease); NULL = the
     * mask at the call. */
    const sigset_t *orig_mask;
    /* Time limits and budgets (limit.h): reaching one stops the job as a
     * notice does (checkpoint, durable, stop) and exits 124. */
    struct sr_limits_config limits;
    const char *instance_type; /* recorded in the start event when known */
    /* A run under a quota: the keep-alive (alive.c) at most this far
     * apart, so the others' polls see its use that fresh; 0 = default. */
    int64_t keepalive_ms;
    int64_t quota_wait_ms;   /* held by --wait-quota before it started: in the start event */
    const char *approved_by; /* `spotrun approve`'s, for a run above a quota's size: too */
    int64_t approved_ms;
    const json_t *labels; /* {"team":"nlp"}: recorded in every start event; NULL = none */
    /* Told after each flush of each attempt's event log (events.h's flush
     * hook; the run's summary writer, runtime/record/runsum.h); cleared
     * from a log that outlives sr_supervise, so on_flush_ctx may be freed
     * once it returns. NULL = none. */
    sr_events_flushed_fn on_flush;
    void *on_flush_ctx;
};

struct sr_supervise_result {
    enum sr_run_end end; /* how the run ended (outcome.h) */
    int gave_up;         /* the exit code is the job's, after max_restarts */
    char cause[32];      /* "exit 3", "signal KILL" */
};

/* Runs the job to its end; returns spotrun's exit code. */
/* Multi-node (docs/multinode.md): the one way the run's steps (runtime/cmd)
 * and the loop (group.c) ask about nodes: whether there are several, this
 * node's rank in the names of its logs and lease (-1: a single node's),
 * and the count a price or the GPUs are shared over (1 for one node).
 * tests/docs/sup_owners.py fails on a node count compared anywhere else. */
static inline int sr_cfg_multinode(const struct sr_supervise_config *c)
{
    return c->nodes > 1;
}
static inline int sr_cfg_rank(const struct sr_supervise_config *c)
{
    return sr_cfg_multinode(c) ? (int)c->node_rank : -1;
}
static inline unsigned sr_cfg_nodes(const struct sr_supervise_config *c)
{
    return sr_cfg_multinode(c) ? c->nodes : 1;
}

int sr_supervise(const struct sr_supervise_config *cfg);

#endif
