/*
 * checkpointer.h - the job's commits (sr_commits_*): the stage / persist
 * split of the commit protocol. (The store's catalog of checkpoints is
 * storage/run/catalog.h, sr_ckpt_*.)
 *
 * A commit is three steps on two threads, so the job is held only for the
 * first one:
 *   snapshot (stager thread)   an O(files) snapshot of the checkpoint
 *                              directory (snapshot.h: reflinks, hard links of
 *                              files replaced by rename, copies); after this
 *                              the job may overwrite its directory. Reported
 *                              as SNAPPED (the job's commit is answered).
 *   stage   (stager thread)    pack + compress the snapshot into
 *                              <spool>/<seq>.tar.zst, writing only the frames
 *                              earlier staged archives do not hold (holes
 *                              refer to those, checkpointer.c), then remove
 *                              the snapshot. Reported as STAGED (a failure
 *                              here, after SNAPPED, fails the commit: the
 *                              previous checkpoint stands).
 *   persist (persister thread) upload the staged file's new frames (a delta)
 *                              or the whole of it, holes filled in, to the
 *                              store, then the manifest (the commit point),
 *                              then --keep retention. Reported as PERSISTED.
 * Jobs run in submission order; seqs are allocated in that order from the
 * store's next free seq. Results are queued for the supervisor, whose loop
 * polls sr_commits_fd() and drains them with sr_commits_take(): in order,
 * none dropped (common/evq.h; a worker waits while the loop has not taken
 * the queue's 64, and results left at sr_commits_stop go unread). A failed
 * persist leaves the previous checkpoint as the newest: never a partial one.
 */
#ifndef SPOTRUN_CHECKPOINTER_H
#define SPOTRUN_CHECKPOINTER_H

#include <stdint.h>

#include "events.h"
#include "manifest.h"
#include "lease.h"
#include "store.h"

struct sr_commits_config {
    struct sr_store *st;
    const char *run_id;
    const char *spool_dir; /* local staging area (created) */
    unsigned keep;         /* 0 = keep all */
    uint32_t attempt;
    int threads;          /* codec threads, 0 = all CPUs */
    int level;            /* zstd level, 0 = default */
    struct sr_events *ev; /* may be NULL */
    /* The run's lease (may be NULL): its epoch goes into manifests and it
     * is renewed right before each commit point (a lost lease fails the
     * persist with -ESTALE). */
    struct sr_lease *lease;
    uint64_t epoch; /* recorded in manifests when there is no lease */
    /* GPU memory peaks recorded in the manifests (sr_commits_set_gpu). */
    uint32_t gpu_devices;
    uint64_t gpu_peak[SR_MANIFEST_GPUS];
    /* A multi-node run (nodes > 1, docs/multinode.md): each commit is this
     * node's part of its step (seq = step + 1, the step is required); once
     * the part is durable the persister tries to complete the set. */
    uint32_t nodes, node_rank;
    /* Delta checkpoints (docs/archive-format.md): one in full_every is
     * uploaded in full; 0 = SR_FULL_EVERY_DEFAULT, 1 = always full. */
    unsigned full_every;
    /* Frames of earlier staged archives that a stage references (holes)
     * or copies instead of compressing them again (set per stage by the
     * stager from its pool; NULL = none). */
    const struct sr_pack_reuse *reuse;
    /* --ckpt-exclude: glob patterns of paths never archived (codec.h,
     * sr_pack_excluded) */
    const char *const *exclude;
    size_t nexclude;
};

enum sr_commit_kind { SR_COMMIT_SNAPPED, SR_COMMIT_STAGED, SR_COMMIT_PERSISTED };

struct sr_commit_result {
    enum sr_commit_kind kind;
    uint64_t seq;
    int64_t step;
    int client_fd; /* as submitted (the supervisor passes the client's fd, or -1) */
    int rc;        /* 0 or -errno */
    char msg[256];
    uint64_t raw_bytes, stored_bytes;
    int64_t ms;       /* time the step took; SNAPPED: since the submit (the
                       * job's wait), STAGED: snapshot + pack */
    int64_t snap_ms;  /* SNAPPED, STAGED: the snapshot's own time */
    int64_t wait_ms;  /* SNAPPED, STAGED: from the submit to the snapshot taken
                       * (what a job's commit waits) */
    int64_t state_ms; /* STAGED: when the state it holds was taken (unix ms) */
    /* PERSISTED in a multi-node run: this node's part is durable; set is 1
     * when the set of its step is published too (else another node, or
     * the peers watcher, will complete it). */
    int part, set;
    uint64_t tag; /* as submitted (sr_commits_submit_tag) */
};

struct sr_commits;

/* Synchronous building blocks, also used by `spotrun push`. */
int sr_commits_stage(const struct sr_commits_config *cfg, const char *dir, uint64_t seq,
                     int64_t step, const char *out_path, struct sr_manifest *m);
/* m->seq is raised when another writer took it meanwhile (-EEXIST).
 * Returns 0, or in a multi-node run 1 when the part's set is published too,
 * or -errno. */
int sr_commits_persist(const struct sr_commits_config *cfg, struct sr_manifest *m,
                       const char *path);
/* stage + persist without the local staging file (`spotrun push`): dir is
 * packed straight into the store (sr_ckpt_publish_dir), then retention.
 * Not for the job's commits: the job may change dir once it is staged. */
int sr_commits_push_dir(const struct sr_commits_config *cfg, const char *dir, uint64_t seq,
                        int64_t step, struct sr_manifest *m);

int sr_commits_start(const struct sr_commits_config *cfg, struct sr_commits **out);
int sr_commits_fd(const struct sr_commits *cp);
/* The attempt recorded in manifests and the event log to write to, for
 * commits staged from now on (called between attempts). */
void sr_commits_set_attempt(struct sr_commits *cp, uint32_t attempt, struct sr_events *ev);
/* The GPU memory peaks per device to record in manifests staged from now
 * on (the supervisor reads them from the shim's pages). */
void sr_commits_set_gpu(struct sr_commits *cp, uint32_t devices, const uint64_t *peak);
/* While on (a deadline is near), a staged checkpoint whose persist has not
 * started is skipped when a newer one is staged behind it: its result is
 * -ECANCELED. The newest commit becomes durable sooner. */
void sr_commits_hurry(struct sr_commits *cp, int on);
/* Queues a commit of dir (copied) at step (-1 unknown). A client_fd is
 * carried by the SNAPPED result (or the STAGED one of a commit whose
 * snapshot failed) only: later results have -1. */
int sr_commits_submit(struct sr_commits *cp, const char *dir, int64_t step, int client_fd);
/* The same, with a tag of the caller's that the commit's results carry
 * (the supervisor's fingerprint of the directory as submitted). */
int sr_commits_submit_tag(struct sr_commits *cp, const char *dir, int64_t step, int client_fd,
                          uint64_t tag);
/* The same, with when the state it holds was taken (unix ms, 0 = unknown:
 * the stage's start): the "staged" event's state_ms, from which lost work
 * is counted (docs/events.md). */
int sr_commits_submit_at(struct sr_commits *cp, const char *dir, int64_t step, int client_fd,
                         uint64_t tag, int64_t state_ms);
/* 1 and fills res when a result was queued, else 0. */
int sr_commits_take(struct sr_commits *cp, struct sr_commit_result *res);
/* How many posts of a result found the queue full and waited (tests). */
long long sr_commits_result_waits(struct sr_commits *cp);
/* Commits submitted and not yet persisted (or failed). */
int sr_commits_pending(struct sr_commits *cp);
/* Commits submitted and not yet staged. */
int sr_commits_staging(struct sr_commits *cp);
/* Expected persist time of a checkpoint like the last one, in ms, from the
 * measured throughput of earlier persists (a guess before the first). */
int64_t sr_commits_persist_estimate_ms(struct sr_commits *cp);
/* Finishes queued work and joins the threads. With abandon (a deadline
 * passed), returns at once and leaves a running upload to the process exit:
 * its manifest is never written, so the previous checkpoint stands. */
void sr_commits_stop(struct sr_commits *cp, int abandon);

#endif
