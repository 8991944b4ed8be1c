/*
 * checkpointer.c - stager and persister threads (see checkpointer.h).
 *
 * DESIGN: two FIFO queues guarded by one mutex. The stager pops a commit
 * request, allocates the next seq, packs the directory into the spool, and
 * hands a persist job to the persister. Each finished step posts a result
 * to an event queue (common/evq.h) whose descriptor the supervisor's poll()
 * watches: none is ever dropped, and a full queue makes the worker wait
 * for the loop (with cp->lock let go meanwhile). Nothing here touches the
 * child process or exits.
 *
 * Reuse: a stage only compresses and writes the frames the last staged
 * archive did not have. Every other frame is a hole in the new archive
 * (sr_pack_reuse.by_ref) whose bytes stay where they already are, in an
 * earlier staged archive kept in the spool as a pool file. So a checkpoint
 * that changed 2 % of its bytes writes 2 % of them while the job waits.
 * Publishing reads a hole's frame from its pool file when it uploads it,
 * or fills the holes in (a full checkpoint, a multi-node part) after the
 * job has gone on. The pool files are reference-counted (struct
 * sr_commits). Space: when the pool's files take more than twice the last
 * archive (+ 64 MiB) on disk, the next stage copies the reused frames
 * instead (one whole archive again), and the older files go.
 */
#include "checkpointer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "codec.h"
#include "evq.h"
#include "parts.h"
#include "snapshot.h"
#include "fsutil.h"
#include "log.h"
#include "units.h"

#include <sys/stat.h>

#define POOL_FILES 32 /* bits of a uint32_t */

struct job {
    struct job *next;
    int64_t step;
    int client_fd;
    char *dir;
    struct sr_manifest m; /* persist jobs */
    char path[4096];
    uint32_t holds;    /* the pool files its holes refer to (bit i: file i) */
    uint64_t tag;      /* the caller's, carried to the results */
    int64_t state_ms;  /* when the state was taken (unix ms), 0 = unknown */
    int64_t submit_ms; /* sr_now_ms() at the submit */
};

static void job_free(struct job *j)
{
    free(j->m.staged_frames);
    free(j->dir);
    free(j);
}

#define RESULTS_MAX 64 /* results queued for the loop before a worker waits */

struct sr_commits {
    struct sr_commits_config cfg;
    char *run_id, *spool;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct job *stage_q, *persist_q;
    struct sr_evq results; /* for the loop: never dropped (see post_locked) */
    int pending, staging, abandon;
    int hurry;                    /* skip persists a newer staged checkpoint supersedes */
    int stop_stage, stop_persist; /* set in this order by sr_commits_stop() */
    uint64_t next_seq, spool_n;
    uint64_t last_stored;
    double persist_bps; /* measured, 0 = unknown */
    pthread_t stager, persister;
    /* The pool (see DESIGN): the frames of the last staged archive, each
     * at soff in pool file src - 1, which the next stage references or
     * copies instead of compressing them again. Pool files are links in the
     * spool; file i is held by pool_refs[i] holders: the pool (bit i of
     * pool_holds) and each staged job whose holes are in it (job.holds),
     * and deleted when none is left. pool_path[i] is written only while
     * file i is free, under lock; last_* are the stager's alone. */
    char pool_path[POOL_FILES][4200];
    const char *pool_paths[POOL_FILES]; /* pool_path[i], for sr_pack_reuse */
    unsigned pool_refs[POOL_FILES];
    uint64_t pool_disk[POOL_FILES]; /* bytes file i takes on disk */
    uint32_t pool_holds;
    int pool_bad; /* a persist failed reading a pool file: start afresh */
    struct sr_frame_info *last_frames;
    uint32_t last_n;
    uint64_t last_bytes;    /* the last staged archive's size, holes included */
    uint64_t pool_n;        /* names pool files */
    struct sr_snaps *snaps; /* what the snapshots learnt of each path (stager's) */
    char *hold;             /* SPOTRUN_TEST_HOLD_PACK (test_hold), NULL = none */
};

static void push_job(struct job **q, struct job *j)
{
    while (*q)
        q = &(*q)->next;
    j->next = NULL;
    *q = j;
}

static struct job *pop_job(struct job **q)
{
    struct job *j = *q;
    if (j)
        *q = j->next;
    return j;
}

/* Queues a result; the caller holds cp->lock and calls this before it
 * changes anything under it, then changes pending/staging as the result
 * reports before unlocking: a loop that sees nothing pending has every
 * result to take, and one that took a result and then asks (under the
 * lock) sees its commit no longer pending. While the queue is full the
 * lock is let go (sr_evq_post_held), so the loop is never kept from
 * cp->lock by a worker waiting for it to take results. -EPIPE once
 * stopping: nobody takes it. */
static void post_locked(struct sr_commits *cp, const struct sr_commit_result *r)
{
    (void)sr_evq_post_held(&cp->results, r, &cp->lock);
}

/* The manifest fields that do not come from packing. */
static void manifest_header(const struct sr_commits_config *cfg, uint64_t seq, int64_t step,
                            struct sr_manifest *m)
{
    memset(m, 0, sizeof(*m));
    m->format = SR_MANIFEST_FORMAT;
    snprintf(m->run_id, sizeof(m->run_id), "%s", cfg->run_id);
    m->seq = seq;
    m->step = step;
    m->created = sr_wall_ms() / 1000;
    if (gethostname(m->host, sizeof(m->host) - 1) < 0)
        m->host[0] = '\0';
    m->attempt = cfg->attempt;
    m->frame_size = SR_CODEC_DEFAULT_FRAME;
    m->level = cfg->level ? cfg->level : SR_CODEC_DEFAULT_LEVEL;
    m->epoch = cfg->lease ? sr_lease_epoch(cfg->lease) : cfg->epoch;
    m->gpu_devices = cfg->gpu_devices <= SR_MANIFEST_GPUS ? cfg->gpu_devices : 0;
    memcpy(m->gpu_peak, cfg->gpu_peak, sizeof(m->gpu_peak));
    if (cfg->nodes > 1) {
        m->nodes = cfg->nodes;
        m->is_part = 1;
        m->node_rank = cfg->node_rank;
    }
}

int sr_commits_stage(const struct sr_commits_config *cfg, const char *dir, uint64_t seq,
                     int64_t step, const char *out_path, struct sr_manifest *m)
{
    /* A staged file is never published after a crash (the spool is
     * emptied at the next start); only a store that adopts the file itself
     * (the file store's hard link) needs it on disk for good. */
    const struct sr_pack_opts opts = {.level = cfg->level,
                                      .threads = cfg->threads,
                                      .list_frames = 1,
                                      .reuse = cfg->reuse,
                                      .scratch = sr_store_streams(cfg->st),
                                      .exclude = cfg->exclude,
                                      .nexclude = cfg->nexclude};
    struct sr_pack_stats stats;
    const int64_t t0 = sr_now_ms();
    const int rc = sr_pack_dir_to_file(dir, out_path, &opts, &stats);
    if (rc < 0)
        return rc;
    manifest_header(cfg, seq, step, m);
    sr_manifest_set_archive(m, &stats, (double)(sr_now_ms() - t0) / 1000.0);
    m->staged_frames = stats.frame_list;
    m->staged_nframes = stats.frame_list ? stats.frames : 0;
    if (cfg->reuse) {
        m->staged_paths = cfg->reuse->paths;
        m->staged_npaths = cfg->reuse->npaths;
    }
    if (stats.reused)
        sr_debug("staged %" PRIu32 " of %" PRIu32 " frames from the last staged archive (%" PRIu32
                 " of them left where they are)",
                 stats.reused, stats.frames, stats.holes);
    return 0;
}

/* --keep N after a checkpoint became durable; a failure only warns (the
 * new checkpoint is safe, old ones merely linger). */
static void apply_retention(const struct sr_commits_config *cfg)
{
    if (!cfg->keep)
        return;
    unsigned deleted = 0;
    const int rc = sr_ckpt_gc(cfg->st, cfg->run_id, cfg->keep, &deleted);
    if (rc < 0)
        sr_warn("retention (--keep %u) failed: %s", cfg->keep, sr_strerror(rc));
    else if (deleted)
        sr_debug("retention: deleted %u old checkpoint(s)", deleted);
}

/* The lease's renewal right before the commit point. */
static const struct sr_fence *fence_of(const struct sr_commits_config *cfg, struct sr_fence *f)
{
    if (!cfg->lease)
        return NULL;
    f->check = sr_lease_fence;
    f->ctx = cfg->lease;
    return f;
}

/* After -EEXIST (another writer took m's seq: a race in the weak lease
 * mode, or an old owner's upload landing first): moves m to the next free
 * seq. 1 to try again, 0 to give up (rc stands). */
static int renumber(const struct sr_commits_config *cfg, struct sr_manifest *m, int rc, int tries)
{
    uint64_t next = 0;
    if (rc != -EEXIST || tries >= 3 || sr_ckpt_next_seq(cfg->st, cfg->run_id, &next) < 0)
        return 0;
    if (next <= m->seq)
        next = m->seq + 1;
    sr_warn("checkpoint seq %" PRIu64
            " of %s was taken by another writer; publishing as seq %" PRIu64,
            m->seq, cfg->run_id, next);
    m->seq = next;
    return 1;
}

int sr_commits_push_dir(const struct sr_commits_config *cfg, const char *dir, uint64_t seq,
                        int64_t step, struct sr_manifest *m)
{
    const struct sr_pack_opts opts = {.level = cfg->level,
                                      .threads = cfg->threads,
                                      .exclude = cfg->exclude,
                                      .nexclude = cfg->nexclude};
    manifest_header(cfg, seq, step, m);
    struct sr_fence f;
    int rc, tries = 0;
    do
        rc = sr_ckpt_publish_dir(cfg->st, m, dir, &opts, fence_of(cfg, &f));
    while (rc < 0 && renumber(cfg, m, rc, tries++));
    if (rc < 0)
        return rc;
    apply_retention(cfg);
    return 0;
}

void sr_commits_set_gpu(struct sr_commits *cp, uint32_t devices, const uint64_t *peak)
{
    pthread_mutex_lock(&cp->lock);
    cp->cfg.gpu_devices = devices <= SR_MANIFEST_GPUS ? devices : SR_MANIFEST_GPUS;
    memcpy(cp->cfg.gpu_peak, peak, sizeof(uint64_t) * cp->cfg.gpu_devices);
    pthread_mutex_unlock(&cp->lock);
}

/* A node's part: published under its step's seq (never renumbered: the
 * seq is what makes parts of one step a set), then the set completed when
 * every other part is there already. 1 when the set is published. */
static int persist_part(const struct sr_commits_config *cfg, struct sr_manifest *m,
                        const char *path)
{
    struct sr_fence f;
    const unsigned every = cfg->full_every ? cfg->full_every : SR_FULL_EVERY_DEFAULT;
    int rc = sr_ckpt_publish_delta(cfg->st, m, path, fence_of(cfg, &f), every);
    if (rc == -EEXIST) {
        /* This owner committed this step before (its part is there and
         * create-only): the first one stands. */
        sr_debug("part %u of step %" PRId64 " is already in the store", m->node_rank, m->step);
        rc = 0;
    }
    if (rc < 0)
        return rc;
    struct sr_lease_counts ctx = {.st = cfg->st, .run_id = cfg->run_id};
    rc = sr_set_complete(cfg->st, cfg->run_id, m->seq, cfg->nodes, sr_lease_part_counts, &ctx, NULL,
                         NULL);
    if (rc < 0) /* the part is durable; the set is for the peers watcher now */
        sr_warn("cannot complete the set of step %" PRId64 " yet: %s", m->step, sr_strerror(rc));
    return rc > 0;
}

int sr_commits_persist(const struct sr_commits_config *cfg, struct sr_manifest *m, const char *path)
{
    if (cfg->nodes > 1) {
        const int rc = persist_part(cfg, m, path);
        if (rc > 0)
            apply_retention(cfg);
        return rc;
    }
    struct sr_fence f;
    int rc, tries = 0;
    const unsigned every = cfg->full_every ? cfg->full_every : SR_FULL_EVERY_DEFAULT;
    do
        rc = sr_ckpt_publish_delta(cfg->st, m, path, fence_of(cfg, &f), every);
    while (rc < 0 && renumber(cfg, m, rc, tries++));
    if (rc < 0)
        return rc;
    apply_retention(cfg);
    return 0;
}

/* The pool files a staged frame list has holes in. */
static uint32_t holes_in(const struct sr_frame_info *v, uint32_t n)
{
    uint32_t mask = 0;
    for (uint32_t i = 0; i < n; i++)
        if (v[i].src && v[i].src <= POOL_FILES)
            mask |= 1u << (v[i].src - 1);
    return mask;
}

/* Under lock. */
static void pool_hold(struct sr_commits *cp, uint32_t mask)
{
    for (unsigned i = 0; i < POOL_FILES; i++)
        if (mask & (1u << i))
            cp->pool_refs[i]++;
}

/* Under lock: a file nobody holds any more is deleted. */
static void pool_release(struct sr_commits *cp, uint32_t mask)
{
    for (unsigned i = 0; i < POOL_FILES; i++)
        if ((mask & (1u << i)) && cp->pool_refs[i] && --cp->pool_refs[i] == 0) {
            unlink(cp->pool_path[i]);
            cp->pool_path[i][0] = '\0';
            cp->pool_disk[i] = 0;
        }
}

/* Empties the pool: the next stage compresses everything. Stager only. */
static void pool_drop(struct sr_commits *cp)
{
    pthread_mutex_lock(&cp->lock);
    pool_release(cp, cp->pool_holds);
    cp->pool_holds = 0;
    pthread_mutex_unlock(&cp->lock);
    free(cp->last_frames);
    cp->last_frames = NULL;
    cp->last_n = 0;
}

/* The archive just staged becomes the pool: a link to it in the spool (the
 * staged file itself goes once persisted) and its frame list, each frame
 * located where its bytes are (this file, or the pool file its hole
 * refers to). Without a free pool file, the pool is emptied instead. */
static void keep_last(struct sr_commits *cp, const struct job *j)
{
    const uint32_t n = j->m.staged_nframes;
    struct sr_frame_info *const v = n ? malloc(n * sizeof(*v)) : NULL;
    int slot = -1;
    pthread_mutex_lock(&cp->lock);
    for (int i = 0; i < POOL_FILES && slot < 0; i++)
        if (!cp->pool_refs[i])
            slot = i;
    pthread_mutex_unlock(&cp->lock);
    char path[4200];
    snprintf(path, sizeof(path), "%s/pool-%" PRIu64 ".tar.zst", cp->spool, cp->pool_n++);
    unlink(path);
    struct stat st;
    if (!v || slot < 0 || link(j->path, path) != 0 || stat(path, &st) != 0) {
        free(v);
        pool_drop(cp);
        return;
    }
    memcpy(v, j->m.staged_frames, n * sizeof(*v));
    for (uint32_t i = 0; i < n; i++)
        if (!v[i].src) {
            v[i].src = (uint32_t)slot + 1;
            v[i].soff = v[i].coff;
        }
    const uint32_t holds = (1u << slot) | holes_in(j->m.staged_frames, n);
    pthread_mutex_lock(&cp->lock);
    snprintf(cp->pool_path[slot], sizeof(cp->pool_path[slot]), "%s", path);
    cp->pool_disk[slot] = (uint64_t)st.st_blocks * 512u;
    pool_hold(cp, holds);
    pool_release(cp, cp->pool_holds);
    cp->pool_holds = holds;
    pthread_mutex_unlock(&cp->lock);
    free(cp->last_frames);
    cp->last_frames = v;
    cp->last_n = n;
    cp->last_bytes = j->m.stored_bytes;
}

/* Whether the next stage may leave holes: not once the pool's files take
 * much more room than one archive (the stage then copies, and the files
 * it no longer needs go). Under lock. */
static int by_ref_ok(const struct sr_commits *cp)
{
    uint64_t disk = 0;
    for (unsigned i = 0; i < POOL_FILES; i++)
        if (cp->pool_holds & (1u << i))
            disk += cp->pool_disk[i];
    return disk <= 2 * cp->last_bytes + (64u << 20);
}

/* A stage that failed: its result (answering the job when the snapshot
 * failed, else a commit_failed of a commit the job was told about). */
static void stage_failed(struct sr_commits *cp, struct job *j, struct sr_commit_result *r)
{
    snprintf(r->msg, sizeof(r->msg), "%s", sr_strerror(r->rc));
    job_free(j);
    pthread_mutex_lock(&cp->lock);
    post_locked(cp, r);
    cp->staging--;
    cp->pending--;
    pthread_mutex_unlock(&cp->lock);
}

/* SPOTRUN_TEST_HOLD_PACK=FILE (tests only, docs/runtime.md; read once at
 * the start, cp->hold): between a commit's snapshot and its packing, the
 * stager waits (at most a minute) for FILE to exist, and removes it: each
 * commit is released by one touch, so a test can act while a commit is
 * answered and not yet packed. */
static void test_hold(const struct sr_commits *cp)
{
    if (!cp->hold)
        return;
    for (int i = 0; i < 600 && access(cp->hold, F_OK) != 0; i++)
        usleep(100 * 1000);
    unlink(cp->hold);
}

/* The snapshot, and its result that answers the job. 0, or -errno (then
 * r is the failed STAGED result to post). */
static int snapshot_step(struct sr_commits *cp, struct job *j, const struct sr_commits_config *cfg,
                         uint64_t n, struct sr_commit_result *r, struct sr_snap *sn)
{
    const int64_t t0 = sr_now_ms();
    sr_err_clear(); /* a long-lived thread: no earlier commit's message explains this one */
    const int rc = sr_snap_take(cp->snaps, j->dir, cp->spool, n, cfg->exclude, cfg->nexclude, sn);
    if (rc < 0)
        return rc;
    struct sr_commit_result s = *r;
    s.kind = SR_COMMIT_SNAPPED;
    s.snap_ms = sr_now_ms() - t0;
    s.ms = s.wait_ms = sr_now_ms() - (j->submit_ms ? j->submit_ms : t0);
    sr_debug("snapshot of %s: %" PRIu64 " files, %" PRIu64 " linked, %" PRIu64
             " reflinked, %" PRIu64 " copied (%" PRIu64 " bytes) in %" PRId64 " ms",
             j->dir, sn->files, sn->linked_n, sn->reflinked_n, sn->copied_n, sn->copied_bytes,
             s.snap_ms);
    r->snap_ms = s.snap_ms;
    r->wait_ms = s.wait_ms;
    r->client_fd = j->client_fd = -1; /* answered by SNAPPED */
    pthread_mutex_lock(&cp->lock);
    post_locked(cp, &s);
    pthread_mutex_unlock(&cp->lock);
    return 0;
}

/* Packs the snapshot; the linked files checked after. */
static int pack_snapshot(struct sr_commits *cp, struct job *j, const struct sr_commits_config *cfg,
                         uint64_t seq, struct sr_snap *sn)
{
    test_hold(cp);
    int rc = sr_commits_stage(cfg, sn->root, seq, j->step, j->path, &j->m);
    const int vrc = sr_snap_verify(cp->snaps, sn); /* a torn linked file: copied from now on */
    if (rc == 0 && vrc < 0) {
        rc = vrc;
        free(j->m.staged_frames);
        j->m.staged_frames = NULL;
        unlink(j->path);
    }
    sr_snap_remove(sn);
    return rc;
}

static void do_stage(struct sr_commits *cp, struct job *j)
{
    struct sr_commit_result r = {
        .kind = SR_COMMIT_STAGED, .step = j->step, .client_fd = j->client_fd, .tag = j->tag};
    pthread_mutex_lock(&cp->lock);
    r.seq = cp->cfg.nodes > 1 ? sr_set_seq(j->step) : cp->next_seq++;
    const uint64_t n = cp->spool_n++;
    struct sr_commits_config cfg = cp->cfg;
    const int bad = cp->pool_bad, by_ref = by_ref_ok(cp);
    cp->pool_bad = 0;
    pthread_mutex_unlock(&cp->lock);
    if (bad)
        pool_drop(cp);
    snprintf(j->path, sizeof(j->path), "%s/%010" PRIu64 "-%" PRIu64 ".tar.zst", cp->spool, r.seq,
             n);
    const struct sr_pack_reuse reuse = {.paths = cp->pool_paths,
                                        .npaths = POOL_FILES,
                                        .v = cp->last_frames,
                                        .n = cp->last_n,
                                        .by_ref = by_ref};
    cfg.reuse = cp->last_n ? &reuse : NULL;
    const int64_t t0 = sr_now_ms(), wall0 = sr_wall_ms();
    /* A state newer than the stage is a clock that disagrees: the stage's
     * start is the latest it can have been taken. */
    const int64_t state_ms = j->state_ms > 0 && j->state_ms <= wall0 ? j->state_ms : wall0;
    r.state_ms = state_ms;
    struct sr_snap sn;
    r.rc = snapshot_step(cp, j, &cfg, n, &r, &sn);
    if (r.rc == 0)
        r.rc = pack_snapshot(cp, j, &cfg, r.seq, &sn);
    r.ms = sr_now_ms() - t0;
    if (r.rc < 0) {
        stage_failed(cp, j, &r);
        return;
    }
    /* the job holds what its holes refer to; the pool moves on */
    j->holds = holes_in(j->m.staged_frames, j->m.staged_nframes);
    pthread_mutex_lock(&cp->lock);
    pool_hold(cp, j->holds);
    pthread_mutex_unlock(&cp->lock);
    keep_last(cp, j);
    r.raw_bytes = j->m.raw_bytes;
    r.stored_bytes = j->m.stored_bytes;
    sr_events_emit(cfg.ev, "staged",
                   json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:I}", "seq", (json_int_t)r.seq, "step",
                             (json_int_t)r.step, "raw_bytes", (json_int_t)r.raw_bytes,
                             "stored_bytes", (json_int_t)r.stored_bytes, "seconds",
                             (double)r.ms / 1000.0, "snapshot_seconds", (double)r.snap_ms / 1000.0,
                             "state_ms", (json_int_t)state_ms));
    pthread_mutex_lock(&cp->lock);
    post_locked(cp, &r);
    cp->staging--;
    push_job(&cp->persist_q, j);
    pthread_cond_broadcast(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
}

static void do_persist(struct sr_commits *cp, struct job *j)
{
    struct sr_commit_result r = {.kind = SR_COMMIT_PERSISTED,
                                 .seq = j->m.seq,
                                 .step = j->step,
                                 .client_fd = j->client_fd,
                                 .tag = j->tag,
                                 .raw_bytes = j->m.raw_bytes,
                                 .stored_bytes = j->m.stored_bytes};
    pthread_mutex_lock(&cp->lock);
    const int superseded = cp->hurry && cp->persist_q;
    pthread_mutex_unlock(&cp->lock);
    if (superseded) {
        r.rc = -ECANCELED;
        snprintf(r.msg, sizeof(r.msg), "superseded by a newer checkpoint (preempting)");
        unlink(j->path);
        pthread_mutex_lock(&cp->lock);
        post_locked(cp, &r);
        pool_release(cp, j->holds);
        cp->pending--;
        pthread_cond_broadcast(&cp->cond);
        pthread_mutex_unlock(&cp->lock);
        job_free(j);
        return;
    }
    pthread_mutex_lock(&cp->lock);
    struct sr_commits_config cfg = cp->cfg;
    /* Near a deadline, a checkpoint due to be full is a delta all the same
     * (the next one is full): only its new frames stand between the job
     * and exit 75. --full-every 1 asked for full ones only. */
    if (cp->hurry && cfg.full_every != 1)
        cfg.full_every = UINT_MAX;
    pthread_mutex_unlock(&cp->lock);
    const int64_t t0 = sr_now_ms();
    sr_err_clear(); /* as in snapshot_step */
    r.rc = sr_commits_persist(&cfg, &j->m, j->path);
    r.seq = j->m.seq; /* renumbered if another writer took the seq */
    r.part = cfg.nodes > 1;
    r.set = r.rc > 0;
    if (r.rc > 0)
        r.rc = 0;
    r.ms = sr_now_ms() - t0;
    unlink(j->path);
    if (r.rc < 0) {
        snprintf(r.msg, sizeof(r.msg), "%s", sr_strerror(r.rc));
    } else {
        sr_events_emit(cfg.ev, "persisted",
                       json_pack("{s:I,s:I,s:I,s:I,s:I,s:f}", "seq", (json_int_t)r.seq, "step",
                                 (json_int_t)r.step, "raw_bytes", (json_int_t)r.raw_bytes,
                                 "stored_bytes", (json_int_t)r.stored_bytes, "uploaded_bytes",
                                 (json_int_t)j->m.stored_bytes, "seconds", (double)r.ms / 1000.0));
        sr_events_flush(cfg.ev);
    }
    pthread_mutex_lock(&cp->lock);
    post_locked(cp, &r); /* with the decrement: see post_locked */
    pool_release(cp, j->holds);
    if (r.rc < 0 && j->holds) /* perhaps a pool file that changed: trust none */
        cp->pool_bad = 1;
    if (r.rc == 0 && r.ms > 0) {
        cp->persist_bps = (double)r.stored_bytes * 1000.0 / (double)r.ms;
        cp->last_stored = r.stored_bytes;
    }
    if (r.seq >= cp->next_seq)
        cp->next_seq = r.seq + 1;
    cp->pending--;
    pthread_cond_broadcast(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
    job_free(j);
}

/* One worker loop for either queue. */
static void *worker(struct sr_commits *cp, struct job **q, const int *stop,
                    void (*fn)(struct sr_commits *, struct job *))
{
    pthread_mutex_lock(&cp->lock);
    for (;;) {
        while (!*q && !*stop)
            pthread_cond_wait(&cp->cond, &cp->lock);
        if (!*q || cp->abandon)
            break;
        struct job *j = pop_job(q);
        pthread_mutex_unlock(&cp->lock);
        fn(cp, j);
        pthread_mutex_lock(&cp->lock);
    }
    pthread_mutex_unlock(&cp->lock);
    return NULL;
}

static void *stager_main(void *arg)
{
    struct sr_commits *cp = arg;
    return worker(cp, &cp->stage_q, &cp->stop_stage, do_stage);
}

static void *persister_main(void *arg)
{
    struct sr_commits *cp = arg;
    /* stop_persist is set only after the stager has exited, so the
     * persister never quits while the stager can still hand it work. */
    return worker(cp, &cp->persist_q, &cp->stop_persist, do_persist);
}

int sr_commits_start(const struct sr_commits_config *cfg, struct sr_commits **out)
{
    struct sr_commits *cp = calloc(1, sizeof(*cp));
    if (!cp)
        return -ENOMEM;
    cp->cfg = *cfg;
    cp->run_id = strdup(cfg->run_id);
    cp->spool = strdup(cfg->spool_dir);
    cp->cfg.run_id = cp->run_id;
    cp->cfg.spool_dir = cp->spool;
    int rc = sr_mkdirs(cp->spool, 0700);
    if (rc == 0)
        rc = sr_ckpt_next_seq(cfg->st, cfg->run_id, &cp->next_seq);
    if (rc == 0)
        rc = sr_evq_init(&cp->results, sizeof(struct sr_commit_result), RESULTS_MAX,
                         "the checkpointer's results", NULL);
    if (rc < 0) {
        free(cp->run_id);
        free(cp->spool);
        free(cp);
        return rc;
    }
    cp->snaps = sr_snaps_new();
    const char *hold = getenv("SPOTRUN_TEST_HOLD_PACK");
    cp->hold = hold && *hold ? strdup(hold) : NULL;
    if (!cp->snaps)
        abort(); /* out of memory at start-up, as below */
    for (unsigned i = 0; i < POOL_FILES; i++)
        cp->pool_paths[i] = cp->pool_path[i];
    pthread_mutex_init(&cp->lock, NULL);
    pthread_cond_init(&cp->cond, NULL);
    if (pthread_create(&cp->stager, NULL, stager_main, cp) != 0)
        abort(); /* out of threads at start-up: nothing sensible to do */
    if (pthread_create(&cp->persister, NULL, persister_main, cp) != 0)
        abort();
    *out = cp;
    return 0;
}

void sr_commits_hurry(struct sr_commits *cp, int on)
{
    pthread_mutex_lock(&cp->lock);
    cp->hurry = on;
    pthread_mutex_unlock(&cp->lock);
}

int sr_commits_fd(const struct sr_commits *cp)
{
    return sr_evq_fd(&cp->results);
}

long long sr_commits_result_waits(struct sr_commits *cp)
{
    pthread_mutex_lock(&cp->results.lock);
    const long long n = cp->results.waits;
    pthread_mutex_unlock(&cp->results.lock);
    return n;
}

void sr_commits_set_attempt(struct sr_commits *cp, uint32_t attempt, struct sr_events *ev)
{
    pthread_mutex_lock(&cp->lock);
    cp->cfg.attempt = attempt;
    cp->cfg.ev = ev;
    pthread_mutex_unlock(&cp->lock);
}

int sr_commits_submit(struct sr_commits *cp, const char *dir, int64_t step, int client_fd)
{
    return sr_commits_submit_tag(cp, dir, step, client_fd, 0);
}

int sr_commits_submit_tag(struct sr_commits *cp, const char *dir, int64_t step, int client_fd,
                          uint64_t tag)
{
    return sr_commits_submit_at(cp, dir, step, client_fd, tag, 0);
}

int sr_commits_submit_at(struct sr_commits *cp, const char *dir, int64_t step, int client_fd,
                         uint64_t tag, int64_t state_ms)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j || !(j->dir = strdup(dir))) {
        free(j);
        return -ENOMEM;
    }
    j->step = step;
    j->client_fd = client_fd;
    j->tag = tag;
    j->state_ms = state_ms;
    j->submit_ms = sr_now_ms();
    pthread_mutex_lock(&cp->lock);
    push_job(&cp->stage_q, j);
    cp->pending++;
    cp->staging++;
    pthread_cond_broadcast(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
    return 0;
}

int sr_commits_take(struct sr_commits *cp, struct sr_commit_result *res)
{
    return sr_evq_take(&cp->results, res);
}

int sr_commits_pending(struct sr_commits *cp)
{
    pthread_mutex_lock(&cp->lock);
    const int n = cp->pending;
    pthread_mutex_unlock(&cp->lock);
    return n;
}

int sr_commits_staging(struct sr_commits *cp)
{
    pthread_mutex_lock(&cp->lock);
    const int n = cp->staging;
    pthread_mutex_unlock(&cp->lock);
    return n;
}

int64_t sr_commits_persist_estimate_ms(struct sr_commits *cp)
{
    pthread_mutex_lock(&cp->lock);
    const double bps = cp->persist_bps;
    const uint64_t bytes = cp->last_stored;
    pthread_mutex_unlock(&cp->lock);
    if (bps <= 0)
        return 2000; /* nothing measured yet: assume a small, local checkpoint */
    return (int64_t)((double)bytes * 1000.0 / bps);
}

void sr_commits_stop(struct sr_commits *cp, int abandon)
{
    if (!cp)
        return;
    /* Stop the stager first, once its queue is drained, so that everything
     * it staged reaches the persister before that one is told to stop. */
    pthread_mutex_lock(&cp->lock);
    cp->abandon = abandon;
    cp->stop_stage = 1;
    pthread_cond_broadcast(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
    sr_evq_close(&cp->results); /* nobody takes results now: a worker waiting for room goes on */
    if (abandon)
        return; /* a deadline passed: the process is about to exit mid-upload */
    pthread_join(cp->stager, NULL);
    pthread_mutex_lock(&cp->lock);
    cp->stop_persist = 1;
    pthread_cond_broadcast(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
    pthread_join(cp->persister, NULL);
    for (struct job *j; (j = pop_job(&cp->stage_q)) || (j = pop_job(&cp->persist_q));) {
        if (j->path[0])
            unlink(j->path);
        pool_release(cp, j->holds);
        job_free(j);
    }
    pool_drop(cp);
    sr_snaps_free(cp->snaps);
    free(cp->hold);
    sr_evq_destroy(&cp->results);
    pthread_mutex_destroy(&cp->lock);
    pthread_cond_destroy(&cp->cond);
    free(cp->run_id);
    free(cp->spool);
    free(cp);
}
