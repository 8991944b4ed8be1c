/*
 * attempt.c - one attempt of the job: the job page it shares with the
 * wrapper, the restore of the newest checkpoint, the job's environment,
 * its start (the "start" event) and the attempt's "gpu" event. Its state
 * is struct sup_attempt (supervisor_int.h), reset as a whole at each start.
 *
 * Threads: the supervisor's one thread (supervisor_int.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "catalog.h"
#include "child.h"
#include "dirmark.h"
#include "exits.h"
#include "fsutil.h"
#include "log.h"
#include "outtail.h"
#include "parts.h"
#include "signame.h"
#include "supervisor_int.h"

/* ---- the job page ----------------------------------------------------------- */

int sup_page_create(struct sup *s)
{
    snprintf(s->page_path, sizeof(s->page_path), "%s/job.page", s->cfg->run_dir);
    unlink(s->page_path); /* a new inode: a leftover process of an old wrapper keeps its own */
    const int fd = open(s->page_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    void *p = MAP_FAILED;
    if (ftruncate(fd, SPOTRUN_JOB_PAGE_SIZE) == 0)
        p = mmap(NULL, SPOTRUN_JOB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int err = errno;
    close(fd);
    if (p == MAP_FAILED)
        return -err;
    s->page = p;
    s->page->magic = SPOTRUN_JOB_PAGE_MAGIC;
    s->page->version = SPOTRUN_JOB_PAGE_VERSION;
    s->page->size = SPOTRUN_JOB_PAGE_SIZE;
    s->page->signo = (uint64_t)s->cfg->signo;
    return 0;
}

/* A new attempt: no request pending, nobody listening yet. */
static void page_reset(struct sup *s)
{
    if (!s->page)
        return;
    __atomic_store_n(&s->page->listening, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->page->progress, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->page->progress_ms, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->page->served, __atomic_load_n(&s->page->requested, __ATOMIC_RELAXED),
                     __ATOMIC_RELEASE);
}

/* ---- starting an attempt ------------------------------------------------ */

static int restore(struct sup *s, struct sr_manifest *m, int *resumed)
{
    const struct sr_supervise_config *c = s->cfg;
    const int64_t t0 = now();
    sup_group_before_restore(s);
    const struct sr_restore_opts ro = {.threads = c->threads,
                                       .nodes = c->nodes,
                                       .rank = c->node_rank,
                                       .all_parts = c->restore_all};
    /* What the user's own directory (--ckpt-dir) holds, to name what the
     * restore removed from it. */
    struct sr_file_list before = {0};
    if (c->ckpt_named && sr_file_list_of(c->ckpt_dir, &before) < 0)
        sr_err_clear();
    int rc = sr_ckpt_restore_node(c->st, c->run_id, 0, c->ckpt_dir, &ro, m);
    char why[400];
    snprintf(why, sizeof(why), "restored checkpoint %" PRIu64 " of run %.300s", m->seq, c->run_id);
    if (rc == 0)
        sr_file_list_log_gone(c->ckpt_dir, &before, why);
    sr_file_list_free(&before);
    if (rc == -ENOENT) {
        /* The job starts fresh in an empty directory: a file left in the
         * user's own directory (--ckpt-dir, this run's) is named as it goes. */
        snprintf(why, sizeof(why), "run %.300s has no checkpoint to restore", c->run_id);
        *resumed = 0;
        rc = sr_mkdirs(c->ckpt_dir, 0700);
        return rc < 0 ? rc : sr_empty_dir_log(c->ckpt_dir, c->ckpt_named ? why : NULL);
    }
    if (rc < 0)
        return rc;
    (void)sr_dir_mark_run(c->ckpt_dir, c->run_id); /* the restore marked it as anyone's */
    *resumed = 1;
    sup_ckpt_restored(s, m->seq, m->step);
    char raw[32];
    sr_format_size(m->raw_bytes, raw, sizeof(raw));
    char step[24];
    sr_format_step(m->step, step, sizeof(step));
    sr_info("restored checkpoint %" PRIu64 " (step %s, %s) in %.1fs", m->seq, step, raw,
            (double)(now() - t0) / 1000.0);
    emit(s, "restore",
         json_pack("{s:I,s:I,s:I,s:f}", "seq", (json_int_t)m->seq, "step", (json_int_t)m->step,
                   "raw_bytes", (json_int_t)m->raw_bytes, "seconds",
                   (double)(now() - t0) / 1000.0));
    return 0;
}

static char **job_env(struct sup *s, int resumed, const struct sr_manifest *m)
{
    const struct sr_supervise_config *c = s->cfg;
    char buf[17][4300];
    char *add[18];
    int n = 0;
    snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_RUN_ID=%s", c->run_id), add[n] = buf[n], n++;
    snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_CKPT_DIR=%s", c->ckpt_dir), add[n] = buf[n], n++;
    snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_RESUMED=%d", resumed), add[n] = buf[n], n++;
    snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_ATTEMPT=%" PRIu32, s->attempt), add[n] = buf[n], n++;
    snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_CONTROL=%s", c->control_path), add[n] = buf[n], n++;
    char signame[32];
    spotrun_signal_name(c->signo, signame, sizeof(signame));
    snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_SIGNAL=%s", signame), add[n] = buf[n], n++;
    if (s->page)
        snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_JOB_PAGE=%s", s->page_path), add[n] = buf[n], n++;
    snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_BIN=%s", c->self), add[n] = buf[n], n++;
    snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_NODES=%u", c->nodes ? c->nodes : 1), add[n] = buf[n],
                                                                                   n++;
    snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_NODE_RANK=%u", c->node_rank), add[n] = buf[n], n++;
    /* For the shim: who may TERM the job for real, where its GPU memory
     * accounting pages go, and the limit. */
    snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_WRAPPER_PID=%d", (int)getpid()), add[n] = buf[n], n++;
    snprintf(s->gpu_dir, sizeof(s->gpu_dir), "%s/gpu", c->run_dir);
    snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_GPU_DIR=%s", s->gpu_dir), add[n] = buf[n], n++;
    if (c->gpu_mem_limit)
        snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_GPU_MEM_LIMIT=%" PRIu64, c->gpu_mem_limit),
            add[n] = buf[n], n++;
    if (resumed && m->step >= 0)
        snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_STEP=%" PRId64, m->step), add[n] = buf[n], n++;
    if (s->stall_on) { /* --stall-timeout: tracebacks (python/spotrun/_stall.py) */
        snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_STALL_SIGNAL=%d", s->stall_signo),
            add[n] = buf[n], n++;
        snprintf(buf[n], sizeof(buf[n]), "SPOTRUN_STALL_DIR=%s", s->stall_dir), add[n] = buf[n],
                                                                                n++;
    }
    if (c->preload) {
        const char *old = getenv("LD_PRELOAD");
        snprintf(buf[n], sizeof(buf[n]), "LD_PRELOAD=%s%s%s", c->preload, old && *old ? ":" : "",
                 old && *old ? old : ""),
            add[n] = buf[n], n++;
    }
    add[n] = NULL;
    static const char *const unset[] = {"SPOTRUN_STEP", "SPOTRUN_JOB_PAGE", "SPOTRUN_STALL_SIGNAL",
                                        "SPOTRUN_STALL_DIR", NULL};
    return sr_env_build(add, unset);
}

/* The attempt's "start" event: where and what it runs, from which
 * checkpoint, and what the views need of the run's settings. */
static void start_event(struct sup *s, int resumed, const struct sr_manifest *m)
{
    const struct sr_supervise_config *c = s->cfg;
    const unsigned nodes = sup_group_nodes(s);
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    json_t *start = json_pack("{s:s,s:i,s:b,s:I,s:I,s:i}", "host", host, "pid", (int)s->att.child,
                              "resumed", resumed, "seq", (json_int_t)(resumed ? m->seq : 0), "step",
                              (json_int_t)(resumed ? m->step : -1), "nodes", (int)nodes);
    /* The job's command, so that a rerun with another one can say so (cmd_run.c). */
    json_t *argv = json_array();
    for (size_t i = 0; argv && c->argv[i] && i < 256; i++) {
        json_t *a = json_string(c->argv[i]); /* NULL: not UTF-8 */
        json_array_append_new(argv, a ? a : json_string("?"));
    }
    if (start && c->instance_type && *c->instance_type)
        json_object_set_new(start, "instance_type", json_string(c->instance_type));
    if (start && c->limits.max_cost > 0) /* what `show` says "budget: X of Y" from */
        json_object_set_new(start, "max_cost", json_real(c->limits.max_cost));
    if (start && c->limits.price_per_hour > 0)       /* what stats prices it at without a table */
        json_object_set_new(start, "price_per_hour", /* of one instance */
                            json_real(c->limits.price_per_hour / nodes));
    if (start && c->quota_wait_ms > 0 && !s->quota_wait_said++) /* queued (docs/cost.md) */
        json_object_set_new(start, "quota_wait_ms", json_integer(c->quota_wait_ms));
    if (start && c->approved_by) /* who approved a run above its quota's size */
        json_object_set_new(
            start, "approved",
            json_pack("{s:s,s:I}", "by", c->approved_by, "unix_ms", (json_int_t)c->approved_ms));
    if (start && json_object_size(c->labels)) /* the run's labels (cmd_run.c checked them) */
        json_object_set_new(start, "labels", json_deep_copy(c->labels));
    if (start && c->run_dir) /* where it ran: show says it, and that a done run removes it */
        json_object_set_new(start, "work_dir",
                            json_pack("{s:s,s:b}", "path", c->run_dir, "kept", c->keep_work));
    if (start && argv)
        json_object_set_new(start, "argv", argv);
    else
        json_decref(argv);
    emit(s, "start", start);
}

void sup_attempt_reset(struct sup *s)
{
    s->att = (struct sup_attempt){0};
}

int sup_start_attempt(struct sup *s)
{
    const struct sr_supervise_config *c = s->cfg;
    struct sr_manifest m = {.step = -1};
    int resumed = 0;
    sup_attempt_reset(s); /* the last attempt's state ends here */
    sr_commits_set_attempt(s->ckpt.cp, s->attempt, NULL);
    sr_events_close(s->ev);
    s->ev = NULL;
    const int rank = sup_group_rank(s);
    int rc = sr_events_next_attempt_node(c->st, c->run_id, rank, &s->attempt);
    if (rc == 0)
        rc = sr_events_open(&s->ev, c->st, c->run_id, s->attempt);
    if (rc == 0 && rank >= 0)
        sr_events_set_node(s->ev, c->run_id, (unsigned)rank);
    if (rc == 0)
        sr_events_on_flush(s->ev, c->on_flush, c->on_flush_ctx);
    if (rc < 0)
        return sr_fail(rc, "cannot read the run's event log");
    sr_commits_set_attempt(s->ckpt.cp, s->attempt, s->ev);
    rc = restore(s, &m, &resumed);
    if (rc < 0)
        return sr_fail(rc, "cannot restore the newest checkpoint");
    char path[4096];
    rc = sr_resolve_program(c->argv[0], path, sizeof(path));
    if (rc < 0) {
        fprintf(stderr, "spotrun: cannot run the job: %s\n", sr_strerror(rc));
        return rc == -ENOENT ? 127 : 126;
    }
    /* The directory as restored, before the job can touch it: a commit at
     * exit or on settle compares against this. */
    s->att.settle_fp = sup_dir_fp(s, NULL);
    sr_dirstate_reset(&s->att.dir, s->att.settle_fp);
    s->att.start_seq = resumed ? m.seq : 0;
    sup_suspect_restored(s, resumed ? m.seq : 0, m.step);
    s->att.last_step = resumed ? m.step : -1;
    page_reset(s);
    sup_watchdog_attempt(s);
    char **env = job_env(s, resumed, &m);
    sr_gpu_usage_reset(s->gpu_dir); /* this attempt's processes write new pages */
    rc = env ? sr_spawn(path, c->argv, env, &s->orig_mask, sup_job_stderr(s), &s->att.child)
             : -ENOMEM;
    sr_env_free(env);
    if (rc < 0) {
        fprintf(stderr, "spotrun: cannot run the job: %s: %s\n", c->argv[0], strerror(-rc));
        return rc == -ENOENT ? 127 : 126;
    }
    /* Its memory cgroup's OOM-kill count, while it surely exists. */
    if (sr_memcg_open(&s->att.memcg, sr_memcg_root(), s->att.child) < 0)
        sr_debug("no memory cgroup of the job is readable below %s: an OOM kill will read as a "
                 "crash (SIGKILL)",
                 sr_memcg_root());
    start_event(s, resumed, &m);
    sup_placement(s); /* each attempt's log says where it ran */
    sr_events_flush(s->ev);
    sup_alive_attempt(s);
    sr_info("run %s attempt %" PRIu32 ": started %s (pid %d)%s", c->run_id, s->attempt, c->argv[0],
            (int)s->att.child, resumed ? ", resumed" : "");
    sup_phase(s, RUNNING);
    s->att.attempt_at = now();
    s->att.ckpt_step = resumed ? m.step : -1;
    s->att.ckpt_at = now();
    s->att.settle_since = now();
    s->att.next_settle = c->settle_ms ? now() + SUP_SETTLE_POLL_MS : 0;
    if (c->every_auto.on)
        emit(s, "interval", sr_every_event(&s->every));
    s->att.next_every = s->every_ms ? now() + s->every_ms : 0;
    sr_gpu_sampler_begin(s->gpu_sampler);
    s->att.next_gpu_event = s->gpu_sampler ? now() + SR_GPU_EVENT_EVERY * c->gpu_sample_ms : 0;
    return 0;
}

/* The attempt's GPU utilization so far, as a "gpu" event, when anything
 * new was sampled; at the job's end (end) the sampling of the attempt
 * stops. A periodic one is flushed: a wrapper that vanishes keeps it. */
void sup_gpu_event(struct sup *s, int end)
{
    struct sr_gpu_summary g;
    if (end)
        sr_gpu_sampler_end(s->gpu_sampler, &g);
    else
        sr_gpu_sampler_peek(s->gpu_sampler, &g);
    if (!g.samples || g.samples == s->att.gpu_samples_said)
        return;
    s->att.gpu_samples_said = g.samples;
    emit(s, "gpu", sr_gpu_summary_json(&g));
    if (!end)
        sr_events_flush(s->ev);
}
