/*
 * checkpointer.c - stager and persister threads (see checkpointer.h).
 *
 * DESIGN: two FIFO queues guarded by one mutex. The stager pops a commit
 * request, allocates the next seq, packs the directory into the spool, and
 * hands a persist job to the persister. Each finished step appends a result
 * to the result list and writes one byte to a pipe so the supervisor's
 * poll() wakes. Nothing here touches the child process or exits.
 */
#include "checkpointer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "codec.h"
#include "parts.h"
#include "fsutil.h"
#include "log.h"
#include "units.h"

struct job {
    struct job *next;
    int64_t step;
    int client_fd;
    char *dir;
    struct sr_manifest m; /* persist jobs */
    char path[4096];
};

static void job_free(struct job *j)
{
    free(j->m.staged_frames);
    free(j->dir);
    free(j);
}

struct res_node {
    struct res_node *next;
    struct sr_commit_result r;
};

struct sr_commits {
    struct sr_commits_config cfg;
    char *run_id, *spool;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct job *stage_q, *persist_q;
    struct res_node *res_head, *res_tail;
    int pending, staging, abandon;
    int hurry;                    /* skip persists a newer staged checkpoint supersedes */
    int stop_stage, stop_persist; /* set in this order by sr_commits_stop() */
    uint64_t next_seq, spool_n;
    uint64_t last_stored;
    double persist_bps; /* measured, 0 = unknown */
    int pipe_r, pipe_w;
    pthread_t stager, persister;
    /* The last staged archive (a link in the spool) and its frames: the
     * next stage copies its unchanged frames instead of compressing them
     * again. The stager's alone. */
    char last_path[4200];
    struct sr_frame_info *last_frames;
    uint32_t last_n;
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

static void post(struct sr_commits *cp, const struct sr_commit_result *r)
{
    struct res_node *n = calloc(1, sizeof(*n));
    if (!n)
        return;
    n->r = *r;
    pthread_mutex_lock(&cp->lock);
    if (cp->res_tail)
        cp->res_tail->next = n;
    else
        cp->res_head = n;
    cp->res_tail = n;
    pthread_mutex_unlock(&cp->lock);
    const char b = 1;
    if (write(cp->pipe_w, &b, 1) < 0) {
        /* The pipe is non-blocking: full means the loop is already woken. */
    }
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
                                      .scratch = sr_store_streams(cfg->st)};
    struct sr_pack_stats stats;
    const int64_t t0 = sr_now_ms();
    const int rc = sr_pack_dir_to_file(dir, out_path, &opts, &stats);
    if (rc < 0)
        return rc;
    manifest_header(cfg, seq, step, m);
    sr_manifest_set_archive(m, &stats, (double)(sr_now_ms() - t0) / 1000.0);
    m->staged_frames = stats.frame_list;
    m->staged_nframes = stats.frame_list ? stats.frames : 0;
    if (stats.reused)
        sr_debug("staged %" PRIu32 " of %" PRIu32 " frames from the last staged archive",
                 stats.reused, stats.frames);
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
    const struct sr_pack_opts opts = {.level = cfg->level, .threads = cfg->threads};
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
    int rc = sr_ckpt_publish(cfg->st, m, path, fence_of(cfg, &f));
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

/* The archive just staged becomes the one the next stage copies unchanged
 * frames from: a link to it in the spool (the staged file itself goes once
 * persisted) and a copy of its frame list. Without them, the next stage
 * compresses everything, as before. */
static void keep_last(struct sr_commits *cp, const struct job *j)
{
    char tmp[4300];
    free(cp->last_frames);
    cp->last_frames = NULL;
    cp->last_n = 0;
    if (!j->m.staged_frames || !j->m.staged_nframes)
        return;
    snprintf(cp->last_path, sizeof(cp->last_path), "%s/last.tar.zst", cp->spool);
    snprintf(tmp, sizeof(tmp), "%s/.last.tmp", cp->spool);
    unlink(tmp);
    if (link(j->path, tmp) != 0 || rename(tmp, cp->last_path) != 0) {
        unlink(tmp);
        return;
    }
    const size_t bytes = j->m.staged_nframes * sizeof(*cp->last_frames);
    if ((cp->last_frames = malloc(bytes))) {
        memcpy(cp->last_frames, j->m.staged_frames, bytes);
        cp->last_n = j->m.staged_nframes;
    }
}

static void do_stage(struct sr_commits *cp, struct job *j)
{
    struct sr_commit_result r = {
        .kind = SR_COMMIT_STAGED, .step = j->step, .client_fd = j->client_fd};
    pthread_mutex_lock(&cp->lock);
    r.seq = cp->cfg.nodes > 1 ? sr_set_seq(j->step) : cp->next_seq++;
    const uint64_t n = cp->spool_n++;
    struct sr_commits_config cfg = cp->cfg;
    pthread_mutex_unlock(&cp->lock);
    snprintf(j->path, sizeof(j->path), "%s/%010" PRIu64 "-%" PRIu64 ".tar.zst", cp->spool, r.seq,
             n);
    const struct sr_pack_reuse reuse = {
        .path = cp->last_path, .v = cp->last_frames, .n = cp->last_n};
    cfg.reuse = cp->last_n ? &reuse : NULL;
    const int64_t t0 = sr_now_ms();
    sr_err_clear();
    r.rc = sr_commits_stage(&cfg, j->dir, r.seq, j->step, j->path, &j->m);
    r.ms = sr_now_ms() - t0;
    if (r.rc == 0)
        keep_last(cp, j);
    if (r.rc < 0) {
        snprintf(r.msg, sizeof(r.msg), "%s", sr_strerror(r.rc));
        job_free(j);
        pthread_mutex_lock(&cp->lock);
        cp->staging--;
        cp->pending--;
        pthread_mutex_unlock(&cp->lock);
        post(cp, &r);
        return;
    }
    r.raw_bytes = j->m.raw_bytes;
    r.stored_bytes = j->m.stored_bytes;
    sr_events_emit(cfg.ev, "staged",
                   json_pack("{s:I,s:I,s:I,s:I,s:f}", "seq", (json_int_t)r.seq, "step",
                             (json_int_t)r.step, "raw_bytes", (json_int_t)r.raw_bytes,
                             "stored_bytes", (json_int_t)r.stored_bytes, "seconds",
                             (double)r.ms / 1000.0));
    pthread_mutex_lock(&cp->lock);
    cp->staging--;
    push_job(&cp->persist_q, j);
    pthread_cond_broadcast(&cp->cond);
    pthread_mutex_unlock(&cp->lock);
    post(cp, &r);
}

static void do_persist(struct sr_commits *cp, struct job *j)
{
    struct sr_commit_result r = {.kind = SR_COMMIT_PERSISTED,
                                 .seq = j->m.seq,
                                 .step = j->step,
                                 .client_fd = j->client_fd,
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
        cp->pending--;
        pthread_cond_broadcast(&cp->cond);
        pthread_mutex_unlock(&cp->lock);
        job_free(j);
        post(cp, &r);
        return;
    }
    pthread_mutex_lock(&cp->lock);
    const struct sr_commits_config cfg = cp->cfg;
    pthread_mutex_unlock(&cp->lock);
    const int64_t t0 = sr_now_ms();
    sr_err_clear();
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
    post(cp, &r);
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
    int p[2];
    if (rc == 0 && pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
        rc = -errno;
    if (rc < 0) {
        free(cp->run_id);
        free(cp->spool);
        free(cp);
        return rc;
    }
    cp->pipe_r = p[0];
    cp->pipe_w = p[1];
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
    return cp->pipe_r;
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
    struct job *j = calloc(1, sizeof(*j));
    if (!j || !(j->dir = strdup(dir))) {
        free(j);
        return -ENOMEM;
    }
    j->step = step;
    j->client_fd = client_fd;
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
    char drain[64];
    while (read(cp->pipe_r, drain, sizeof(drain)) > 0) {
    }
    pthread_mutex_lock(&cp->lock);
    struct res_node *n = cp->res_head;
    if (n) {
        cp->res_head = n->next;
        if (!cp->res_head)
            cp->res_tail = NULL;
    }
    const int more = cp->res_head != NULL;
    pthread_mutex_unlock(&cp->lock);
    if (!n)
        return 0;
    *res = n->r;
    free(n);
    /* More results may remain: keep the loop's poll() awake for them. */
    if (more) {
        const char b = 1;
        if (write(cp->pipe_w, &b, 1) < 0) {
        }
    }
    return 1;
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
        job_free(j);
    }
    for (struct sr_commit_result r; sr_commits_take(cp, &r);) {
    }
    if (cp->last_path[0])
        unlink(cp->last_path);
    free(cp->last_frames);
    close(cp->pipe_r);
    close(cp->pipe_w);
    pthread_mutex_destroy(&cp->lock);
    pthread_cond_destroy(&cp->cond);
    free(cp->run_id);
    free(cp->spool);
    free(cp);
}
