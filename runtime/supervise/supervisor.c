/*
 * supervisor.c - the `spotrun run` event loop (see supervisor.h).
 *
 * States of one run (one wrapper process):
 *   RUNNING    the job runs; commits, --every requests and --settle watch
 *              (--every auto: the interval is chosen again after each
 *              staged commit, every.h)
 *   BACKOFF    the job crashed; a restart waits for its delay and for
 *              pending persists, then restores the newest checkpoint
 *   PREEMPTING a notice arrived: request a checkpoint, wait for the job's
 *              commit until the deadline minus the persist estimate, drain
 *              persists, TERM then KILL the job, exit 75
 *   FINISHING  the job is over (exit 0, or restarts exhausted): drain
 *              persists, mark DONE on success, exit
 * Invariant: spotrun never exits while a persist it could finish is still
 * running, except at a preemption deadline (then the previous checkpoint
 * stands, because the manifest is written last).
 *
 * The request reaches every process of the job: the wrapper bumps
 * `requested` in the job page (job_page.h), which any process may poll, and
 * sends the request signal to each process of its tree that catches or ignores
 * it (proctree.h: launchers and their trainers alike; a process
 * that never asked is not killed by the default action). The wrapper is a
 * subreaper, so the tree holds everything the job started, and everything
 * left of it is killed when the job's main process ends. A TERM/INT/HUP
 * sent to the wrapper from inside that tree is the job's business, not a
 * notice.
 *
 * The loop's other concerns live beside it (struct sup is in
 * supervisor_int.h): one attempt's start (attempt.c), the stop of the job
 * with its one TERM -> KILL escalation, PREEMPTING's steps, the phase and
 * how the run ends (stop.c), the end of the job's process and what follows
 * it (ending.c, on restart.h's policy and outcome.h's one table), the
 * control requests (requests.c), notices and the PREEMPTING state they
 * start (notices.c), and the other nodes of a multi-node run (group.c).
 */
#include "supervisor_int.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "catalog.h"
#include "checkpointer.h"
#include "child.h"
#include "dirmark.h"
#include "exits.h"
#include "control.h"
#include "events.h"
#include "every.h"
#include "fsutil.h"
#include "gpu_usage.h"
#include "job_page.h"
#include "keeper.h"
#include "log.h"
#include "notice.h"
#include "outcome.h"
#include "outtail.h"
#include "parts.h"
#include "peers.h"
#include "proctree.h"
#include "signame.h"
#include "units.h"

#define FIXED_FDS 6 /* signals, listener, checkpointer, notices, lease, peers */

/* ---- commits ------------------------------------------------------------- */

void sup_commit_dir(struct sup *s, int64_t step, int client_fd, const char *why)
{
    sr_gpu_usage_read(s->gpu_dir, &s->gpu);
    sr_commits_set_gpu(s->ckpt.cp, (uint32_t)s->gpu.devices, s->gpu.peak);
    /* When the state was taken: a job's commit says so by calling; a
     * directory committed as it stands (--settle, at exit, at a stop) holds
     * what was last written to it (lost work counts from there). */
    int64_t newest = 0;
    const uint64_t fp = sr_dir_fingerprint_at(s->cfg->ckpt_dir, NULL, s->cfg->ckpt_exclude,
                                              s->cfg->n_ckpt_exclude, &newest);
    const int64_t state_ms = client_fd >= 0 ? sr_wall_ms() : newest;
    const int rc =
        sr_commits_submit_at(s->ckpt.cp, s->cfg->ckpt_dir, step, client_fd, fp, state_ms);
    if (rc < 0) {
        if (client_fd >= 0) {
            sr_ctl_reply(client_fd, "ERR %s", strerror(-rc));
            close(client_fd);
        }
        return;
    }
    s->ckpt.submitted++;
    sr_dirstate_submitted(&s->att.dir, fp);
    sr_debug("commit requested (%s)", why);
}

void sup_request_checkpoint(struct sup *s, const char *why)
{
    if (!s->att.child)
        return;
    sup_watchdog_request(s);
    if (s->page)
        __atomic_add_fetch(&s->page->requested, 1, __ATOMIC_RELEASE);
    if (s->page && s->cfg->preload && job_listens(s))
        s->heard_requests++;
    /* Only once someone of the job listens (the page says so under the
     * shim): until then the page carries the request alone, and a signal
     * would only interrupt what the job is doing (torch's rendezvous fails
     * on the EINTR of its TCPStore connect). Its first poll sees it. */
    const int sent = job_listens(s) ? sr_proctree_signal(getpid(), s->cfg->signo, 1) : 0;
    emit(s, "request", json_pack("{s:s,s:i}", "reason", why, "processes", sent < 0 ? 0 : sent));
    sr_debug("checkpoint requested from the job (%s): signalled %d process(es)", why, sent);
}

/* ---- the lease, signals and the checkpointer's results ------------------------------------ */

static void on_lease(struct sup *s)
{
    char why[512];
    if (sr_keeper_lost(s->keeper, why, sizeof(why)))
        sup_lease_lost(s, why);
}

static void on_signal(struct sup *s)
{
    struct signalfd_siginfo si;
    while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        const int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            int status;
            pid_t p;
            while ((p = waitpid(-1, &status, WNOHANG)) > 0)
                if (p == s->att.child)
                    sup_child_exited(s, status);
            continue;
        }
        char name[32], source[40];
        spotrun_signal_name(sig, name, sizeof(name));
        const pid_t from = (pid_t)si.ssi_pid;
        if ((int)si.ssi_code <= 0 && from > 0 && from != getpid() &&
            sr_proctree_contains(getpid(), from)) {
            sr_warn("%s from the job's own process %d: not a preemption notice (ignored)", name,
                    (int)from);
            continue;
        }
        snprintf(source, sizeof(source), "signal:%s", name);
        sup_signal_notice(s, source, now() + s->cfg->grace_ms, sig, from);
    }
}

/* --every auto: says the interval when it is chosen or moves (every.h). */
static void every_auto_choose(struct sup *s, int record)
{
    if (!sr_every_update(&s->every, now()))
        return;
    s->every_ms = s->every.interval_ms;
    char how[160];
    sr_every_describe(&s->every, how, sizeof(how));
    sr_info("checkpoint interval %s", how);
    if (record)
        emit(s, "interval", sr_every_event(&s->every));
}

/* A staged commit is a checkpoint whatever asked for it: the job's wait
 * for it (its snapshot, not the packing after) is a cost sample, and the
 * next request is one interval after it. */
static void every_auto_staged(struct sup *s, int64_t stage_ms)
{
    if (!s->cfg->every_auto.on)
        return;
    sr_every_sample(&s->every, stage_ms);
    every_auto_choose(s, s->ev != NULL);
    if (s->att.next_every)
        s->att.next_every = now() + s->every_ms;
}

static void on_result(struct sup *s)
{
    struct sr_commit_result r;
    while (sr_commits_take(s->ckpt.cp, &r)) {
        if (r.kind == SR_COMMIT_PERSISTED || r.rc < 0)
            s->ckpt.finished++;
        sup_commit_result(s, &r); /* a failure: its event and warning */
        char raw[32], stored[32];
        sr_format_size(r.raw_bytes, raw, sizeof(raw));
        sr_format_size(r.stored_bytes, stored, sizeof(stored));
        if (r.kind == SR_COMMIT_SNAPPED) {
            /* The job may change its directory now: answered. */
            if (r.client_fd >= 0) {
                sr_ctl_reply(r.client_fd, "OK %" PRIu64, r.seq);
                close(r.client_fd);
            }
        } else if (r.kind == SR_COMMIT_STAGED) {
            if (r.client_fd >= 0) { /* the snapshot failed: the job is told */
                if (r.rc == 0)
                    sr_ctl_reply(r.client_fd, "OK %" PRIu64, r.seq);
                else
                    sr_ctl_reply(r.client_fd, "ERR %s", r.msg);
                close(r.client_fd);
            }
            if (r.rc == 0) {
                s->ckpt.last_stage_ms = r.ms;
                s->att.ckpt_step = r.step;
                /* the work since the state it holds is what a stop loses
                 * (the lost_work event, as the record counts it) */
                const int64_t age = sr_wall_ms() - r.state_ms;
                s->att.ckpt_at = now() - (age > 0 && r.state_ms > 0 ? age : 0);
                if (r.seq > s->ckpt.staged_seq)
                    s->ckpt.staged_seq = r.seq;
                char step[24];
                sr_format_step(r.step, step, sizeof(step));
                sr_info("checkpoint %" PRIu64 " (step %s) staged: %s -> %s in %.1fs (snapshot "
                        "%.1fs of it, all the job waits for; then packed from the snapshot)",
                        r.seq, step, raw, stored, (double)r.ms / 1000.0,
                        (double)r.snap_ms / 1000.0);
                every_auto_staged(s, r.wait_ms); /* its cost: what the job waited */
            }
        } else if (r.rc == -ECANCELED) {
            sr_info("checkpoint %" PRIu64 " skipped: %s", r.seq, r.msg);
        } else if (r.rc == -ESTALE && s->cfg->lease) {
            sup_lease_lost(s, r.msg);
        } else if (r.rc < 0) {
            /* said by sup_commit_result() */
        } else if (r.part && !r.set) {
            sup_group_await(s, r.seq);
            sr_info("part %u of checkpoint %" PRIu64 " durable in %s (%.1fs); waiting for the "
                    "other nodes' parts",
                    s->cfg->node_rank, r.seq, sr_store_url(s->cfg->st), (double)r.ms / 1000.0);
        } else {
            sup_set_published(s, r.seq);
            sr_info("checkpoint %" PRIu64 " durable in %s (%.1fs)%s", r.seq,
                    sr_store_url(s->cfg->st), (double)r.ms / 1000.0,
                    r.part ? ": every node's part is there" : "");
        }
    }
}

/* ---- the loop ------------------------------------------------------------------ */

static void on_timers(struct sup *s)
{
    const struct sr_supervise_config *c = s->cfg;
    const int64_t t = now();
    if (s->phase == RUNNING && s->att.next_every && t >= s->att.next_every)
        on_result(s); /* a commit staged just now moves the next request */
    if (s->phase == RUNNING && s->att.next_every && t >= s->att.next_every) {
        sup_request_checkpoint(s, "every");
        s->att.next_every = t + s->every_ms;
    }
    if (s->phase == RUNNING && s->att.next_settle && t >= s->att.next_settle) {
        s->att.next_settle = t + SUP_SETTLE_POLL_MS;
        const uint64_t fp = sup_dir_fp(s, NULL);
        if (fp != s->att.settle_fp) {
            s->att.settle_fp = fp;
            s->att.settle_since = t;
        } else if (t - s->att.settle_since >= c->settle_ms && !sr_commits_staging(s->ckpt.cp)) {
            sup_commit_if_changed(s, "settled");
        }
    }
    if (s->att.child && s->att.next_gpu_event && t >= s->att.next_gpu_event) {
        sup_gpu_event(s, 0);
        s->att.next_gpu_event = t + SR_GPU_EVENT_EVERY * c->gpu_sample_ms;
    }
    sup_watchdog_tick(s);
    sup_kill_tick(s);
    sup_alive_tick(s);
    /* Between attempts (BACKOFF) the run's time goes on; the attempt's has ended. */
    struct sr_limit_hit hit;
    if ((s->phase == RUNNING || s->phase == BACKOFF) &&
        sr_limits_check(&s->limits, t, s->phase == RUNNING ? s->att.attempt_at : t, &hit))
        sup_limit_reached(s, &hit);
    /* After every source of a stop (a limit just now too): a stop whose
     * job does not listen moves on at once, not at the next wakeup. */
    if (s->phase == PREEMPTING) {
        sup_save_tick(s); /* a save in flight holds the stop's TERM (savewait.c) */
        sup_preempt_tick(s);
    }
    sup_expire_conns(s);
}

static int64_t next_wakeup(const struct sup *s)
{
    int64_t w = now() + 60000;
#define EARLIER(x)                                                                                 \
    do {                                                                                           \
        if ((x) && (x) < w)                                                                        \
            w = (x);                                                                               \
    } while (0)
    if (s->phase == RUNNING) {
        EARLIER(s->att.next_every);
        EARLIER(s->att.next_settle);
    }
    if (s->phase == BACKOFF)
        EARLIER(s->restart_at);
    if (s->phase == RUNNING || s->phase == BACKOFF)
        EARLIER(sr_limits_next(&s->limits, now(), s->phase == RUNNING ? s->att.attempt_at : now()));
    if (s->phase == PREEMPTING) {
        EARLIER(s->stop.commit_by);
        EARLIER(s->stop.deadline);
        EARLIER(sup_save_wakeup(s));
    }
    for (int i = 0; i < MAX_CONNS; i++)
        if (s->conns[i].fd >= 0)
            EARLIER(s->conns[i].since + SR_CTL_REQUEST_TIMEOUT_MS);
    EARLIER(sup_watchdog_wakeup(s));
    EARLIER(sup_alive_wakeup(s));
    if (s->att.child) {
        EARLIER(s->att.next_gpu_event);
        EARLIER(s->att.kill_at); /* the stop's SIGKILL */
    }
#undef EARLIER
    /* Draining is polled: the checkpointer's results wake us anyway. */
    return w;
}

/* One iteration's decision: 1 = the run is over (s->exit_code set). */
static int settle_state(struct sup *s)
{
    const int pending = sr_commits_pending(s->ckpt.cp);
    if (s->phase == BACKOFF && now() >= s->restart_at && pending == 0) {
        on_result(s); /* report the last persists before the restore */
        const int rc = sup_start_attempt(s);
        if (rc) {
            sup_run_end(s, SR_RUN_ERROR, rc);
            return 1;
        }
    }
    if (s->phase == FINISHING && pending == 0)
        return 1;
    if (s->phase == PREEMPTING && s->stop.pre == STOPPING && !s->att.child &&
        (s->stop.lost || pending == 0 || now() >= s->stop.deadline)) {
        /* The stop's own end (outcome.h): a lost lease, a limit, a
         * notice (only a notice is a preemption), one node's stall. */
        static const enum sr_run_end ends[] = {[SR_STOP_NONE] = SR_RUN_PREEMPTED,
                                               [SR_STOP_NOTICE] = SR_RUN_PREEMPTED,
                                               [SR_STOP_LIMIT] = SR_RUN_LIMIT,
                                               [SR_STOP_STALL] = SR_RUN_GROUP_REQUEUE,
                                               [SR_STOP_LEASE] = SR_RUN_LEASE_LOST};
        sup_run_end(s, ends[sup_current_stop(s, 0)], 0);
        return 1;
    }
    return 0;
}

static int loop(struct sup *s)
{
    for (;;) {
        if (settle_state(s)) {
            /* A notice that came with the last persist still counts: the
             * persister's end can let the run finish before the loop reads
             * the signal that came with it. */
            if (s->phase == FINISHING)
                on_signal(s);
            return s->exit_code;
        }
        int64_t wait = next_wakeup(s) - now();
        if (wait < 0)
            wait = 0;
        if (s->phase == FINISHING || s->phase == BACKOFF)
            wait = wait > 200 ? 200 : wait;
        struct pollfd p[FIXED_FDS + MAX_CONNS] = {
            {.fd = s->sigfd, .events = POLLIN},
            {.fd = s->lfd, .events = POLLIN},
            {.fd = sr_commits_fd(s->ckpt.cp), .events = POLLIN},
            {.fd = sr_notice_fd(s->nw), .events = POLLIN},
            {.fd = s->stop.lost ? -1 : sr_keeper_fd(s->keeper), .events = POLLIN},
            {.fd = sr_peers_fd(s->group.peers), .events = POLLIN}};
        for (int i = 0; i < MAX_CONNS; i++)
            p[FIXED_FDS + i] = (struct pollfd){.fd = s->conns[i].fd, .events = POLLIN};
        const int n = poll(p, FIXED_FDS + MAX_CONNS, (int)wait);
        if (n < 0 && errno != EINTR)
            return sup_run_end(s, SR_RUN_ERROR, sr_fail(-errno, "poll"));
        if (n > 0 && (p[0].revents & POLLIN))
            on_signal(s);
        for (int i = 0; n > 0 && i < MAX_CONNS; i++)
            if (s->conns[i].fd >= 0 && s->conns[i].fd == p[FIXED_FDS + i].fd &&
                p[FIXED_FDS + i].revents)
                sup_on_conn(s, &s->conns[i]);
        if (n > 0 && (p[1].revents & POLLIN))
            sup_on_accept(s);
        if (n > 0 && (p[2].revents & POLLIN))
            on_result(s);
        if (n > 0 && (p[3].revents & POLLIN))
            sup_on_notice(s);
        if (n > 0 && (p[4].revents & POLLIN))
            on_lease(s);
        if (n > 0 && (p[5].revents & POLLIN))
            sup_on_peers(s);
        on_timers(s);
    }
}

/* A job that listened for requests and never committed, said once at the end. */
static void say_never_committed(const struct sup *s)
{
    const struct sr_supervise_config *c = s->cfg;
    if (s->heard_requests && !s->ckpt.job_commits && !s->stop.lost) {
        if (!sup_newest_seq(s))
            sr_warn("the job listened for checkpoint requests (%u made) but never called "
                    "commit(), and its directory stayed empty: run %s has no checkpoint yet; "
                    "call spotrun.commit() (or `spotrun commit`) after saving",
                    s->heard_requests, c->run_id);
        else if (!s->ckpt.submitted)
            sr_warn("the job listened for checkpoint requests (%u made) but never called "
                    "commit(), and its directory did not change: run %s still resumes from "
                    "checkpoint %" PRIu64 "; call spotrun.commit() (or `spotrun commit`) after "
                    "saving",
                    s->heard_requests, c->run_id, sup_newest_seq(s));
        else
            sr_warn("the job listened for checkpoint requests (%u made) but never called "
                    "commit(): its checkpoints were its directory as spotrun found it when it "
                    "stopped, not a state it chose to save; call spotrun.commit() (or `spotrun "
                    "commit`) after saving",
                    s->heard_requests);
    }
}

/* How the run ended, in its log and its last event. */
static void record_end(struct sup *s, int drained)
{
    const struct sr_supervise_config *c = s->cfg;
    const enum sr_run_end end = s->run_end;
    if (end == SR_RUN_LEASE_LOST) {
        sr_warn("run %s continues under its new owner; exit 73", c->run_id);
    } else if (end == SR_RUN_NODE_DONE) {
        emit(s, "node_done", json_pack("{s:I}", "from_seq", (json_int_t)s->att.start_seq));
    } else if (end == SR_RUN_DONE) {
        const int rc = sr_ckpt_mark_done(c->st, c->run_id);
        if (rc < 0)
            sr_warn("cannot mark the run done: %s", sr_strerror(rc));
        emit(s, "done", NULL);
        sr_info("run %s done", c->run_id);
    } else if (end == SR_RUN_PREEMPTED) {
        emit(s, "preempted", json_pack("{s:I}", "durable_seq", (json_int_t)s->group.durable_seq));
        if (!drained)
            sr_warn("the newest checkpoint could not be made durable before the deadline");
        if (s->group.durable_seq)
            sr_info("preempted: checkpoint %" PRIu64 " is durable; exit 75 (requeue me)",
                    s->group.durable_seq);
        else {
            char stands[192];
            sup_what_stands(s, stands, sizeof(stands));
            sr_info("preempted: %s; exit 75 (requeue me)", stands);
        }
    } else if (end == SR_RUN_GROUP_REQUEUE) {
        if (!drained)
            sr_warn("the newest checkpoint could not be made durable before the deadline");
        if (sup_newest_seq(s))
            sr_info("stalled: run %s resumes from checkpoint %" PRIu64
                    "; exit 75 (requeue the group)",
                    c->run_id, sup_newest_seq(s));
        else
            sr_info("stalled: run %s has no checkpoint yet; exit 75 (requeue the group)",
                    c->run_id);
    } else if (end == SR_RUN_LIMIT) {
        char what[160], extend[200];
        sr_limit_describe(&s->stop.limit_hit, what, sizeof(what));
        sr_limit_extend(&s->limits, &s->stop.limit_hit, extend, sizeof(extend));
        if (!drained)
            sr_warn("the newest checkpoint could not be made durable before the deadline");
        if (sup_newest_seq(s))
            sr_info("stopped at %s: run %s resumes from checkpoint %" PRIu64 "; exit 124 (do not "
                    "requeue; %s)",
                    what, c->run_id,
                    s->group.durable_seq ? s->group.durable_seq : sup_newest_seq(s), extend);
        else
            sr_info("stopped at %s: run %s has no checkpoint; exit 124 (do not requeue; %s)", what,
                    c->run_id, extend);
    }
}

static void finish(struct sup *s)
{
    on_result(s);     /* report what finished since the last poll */
    sup_placement(s); /* known since the last poll (a short job) */
    const int drained = sr_commits_pending(s->ckpt.cp) == 0;
    sup_acknowledge(s); /* the job has stopped and the checkpoint is durable (or late) */
    say_never_committed(s);
    record_end(s, drained);
    if (drained) {
        sr_commits_set_attempt(s->ckpt.cp, s->attempt, NULL);
        sr_events_close(s->ev);
    } else {
        sr_events_flush(s->ev); /* the persister may still use it */
        sr_events_on_flush(s->ev, NULL, NULL);
    }
    s->ev = NULL;
    /* At a missed deadline the persister may still be uploading: leave it;
     * the process exit ends it and its manifest is never written. */
    sr_commits_stop(s->ckpt.cp, !drained);
}

/* A wrapper killed mid-restore leaves "<ckpt>.spotrun-tmp.*" beside the
 * checkpoint dir (the codec swaps it in only when complete), one killed
 * mid-commit "<ckpt>.spotrun-tmp.snap-*" (a snapshot, snapshot.h). We own the run
 * (the control socket is ours), so nobody else is restoring into it. Only
 * a directory that carries spotrun's mark goes (the codec marks it as it
 * makes it): the name alone is no proof that spotrun made it, and the
 * parent is the user's. */
static void sweep_restore_leftovers(const char *ckpt_dir)
{
    char parent[4096], prefix[512];
    sr_dirname(ckpt_dir, parent, sizeof(parent));
    const char *base = strrchr(ckpt_dir, '/') ? strrchr(ckpt_dir, '/') + 1 : ckpt_dir;
    snprintf(prefix, sizeof(prefix), "%s.spotrun-tmp.", base);
    DIR *d = opendir(parent);
    if (!d)
        return;
    char path[4600];
    struct stat st;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 ||
            sr_pathf(path, sizeof(path), "%s/%s", parent, e->d_name) < 0)
            continue;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && sr_dir_marked(path)) {
            sr_info("removing %s (a restore's or a commit's leftover)", path);
            sr_rmtree(path);
        } else {
            sr_info("leaving %s: named like a restore's leftover, but not marked as spotrun's",
                    path);
        }
    }
    closedir(d);
}

/* Whatever the job left below us was killed with it: wait (briefly) for
 * those processes, so that none outlives the wrapper even as a zombie. */
static void reap_leftovers(void)
{
    sr_proctree_signal(getpid(), SIGKILL, 0);
    for (int i = 0; i < 200; i++) {
        const pid_t p = waitpid(-1, NULL, WNOHANG);
        if (p < 0)
            return; /* ECHILD: none left */
        if (p == 0)
            usleep(10 * 1000);
    }
}

/* The run's machinery before its first attempt: the work dir, the control
 * socket, the signals, the job page, the checkpointer, the lease keeper,
 * the notice watcher, the watchdog, the GPU sampler, the other nodes, the
 * limits and the interval. 0, or the exit code (nothing left to undo but
 * what sup_close() undoes). */
static int sup_open(struct sup *s, const struct sr_supervise_config *cfg)
{
    int rc = sr_mkdirs(cfg->run_dir, 0700);
    if (rc < 0)
        return sr_fail(rc, "cannot create the work directory");
    if ((rc = sr_proctree_subreaper()) < 0)
        sr_warn("cannot become the subreaper of the job: %s (daemons it starts may outlive it)",
                sr_strerror(rc));
    rc = sr_ctl_listen(cfg->control_path, &s->lfd);
    if (rc < 0)
        return rc == -EADDRINUSE ? (fprintf(stderr,
                                            "spotrun: run %s is already running on this machine "
                                            "(%s answers)\n",
                                            cfg->run_id, cfg->control_path),
                                    SR_EX_CANTCREAT)
                                 : sr_fail(rc, "control socket");
    sigset_t mask;
    sigemptyset(&mask);
    const int sigs[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaddset(&mask, sigs[i]);
    sigprocmask(SIG_BLOCK, &mask, &s->orig_mask);
    if (cfg->orig_mask) /* the caller blocked some of them already */
        s->orig_mask = *cfg->orig_mask;
    s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    char spool[4200];
    snprintf(spool, sizeof(spool), "%s/spool", cfg->run_dir);
    sr_rmtree(spool); /* staged files of a wrapper that died are never published */
    sweep_restore_leftovers(cfg->ckpt_dir);
    if ((rc = sup_page_create(s)) < 0)
        sr_warn("cannot create the job page %s: %s (requests reach the job by signal only)",
                s->page_path, sr_strerror(rc));
    const struct sr_commits_config cpc = {.st = cfg->st,
                                          .run_id = cfg->run_id,
                                          .spool_dir = spool,
                                          .keep = cfg->keep,
                                          .full_every = cfg->full_every,
                                          .threads = cfg->threads,
                                          .level = cfg->level,
                                          .lease = cfg->lease,
                                          .epoch = cfg->epoch,
                                          .nodes = cfg->nodes,
                                          .node_rank = cfg->node_rank,
                                          .exclude = cfg->ckpt_exclude,
                                          .nexclude = cfg->n_ckpt_exclude};
    rc = s->sigfd < 0 ? -errno : sr_commits_start(&cpc, &s->ckpt.cp);
    if (rc < 0) {
        close(s->lfd);
        unlink(cfg->control_path);
        return sr_fail(rc, "cannot start the checkpointer");
    }
    if (cfg->lease && (rc = sr_keeper_start(cfg->lease, &s->keeper)) < 0)
        sr_warn("the lease will not be renewed: %s", sr_strerror(rc));
    rc = sr_notice_start(&cfg->notice, &s->nw);
    if (rc < 0)
        sr_warn("cannot watch for cloud notices: %s", sr_strerror(rc));
    sup_watchdog_init(s);
    if ((rc = sr_gpu_sampler_start(cfg->gpu_sample_ms, getenv("CUDA_VISIBLE_DEVICES"),
                                   &s->gpu_sampler)) < 0)
        sr_debug("GPU utilization is not sampled: %s", sr_strerror(rc));
    sup_group_start(s);
    sr_limits_init(&s->limits, &cfg->limits, now());
    s->every_ms = cfg->every_ms;
    if (cfg->every_auto.on) {
        sr_every_init(&s->every, &cfg->every_auto, now());
        every_auto_choose(s, 0); /* recorded by each attempt's start */
    }
    return 0;
}

/* What sup_open() started, stopped; the job's leftovers reaped. */
static void sup_close(struct sup *s)
{
    const struct sr_supervise_config *cfg = s->cfg;
    reap_leftovers();
    sr_outtail_close(s->outtail);
    sr_gpu_sampler_stop(s->gpu_sampler); /* before the caller stops observing events */
    sr_keeper_stop(s->keeper);
    sr_notice_stop(s->nw);
    sr_peers_stop(s->group.peers);
    close(s->sigfd);
    close(s->lfd);
    for (int i = 0; i < MAX_CONNS; i++)
        if (s->conns[i].fd >= 0)
            close(s->conns[i].fd);
    if (s->page)
        munmap(s->page, SPOTRUN_JOB_PAGE_SIZE);
    unlink(cfg->control_path);
    /* A caller that blocked the notice signals keeps them blocked until it
     * has released the lease (a late TERM must not kill it before that). */
    if (!cfg->orig_mask)
        sigprocmask(SIG_SETMASK, &s->orig_mask, NULL);
}

int sr_supervise(const struct sr_supervise_config *cfg)
{
    struct sup s = {.cfg = cfg, .sigfd = -1, .lfd = -1};
    for (int i = 0; i < MAX_CONNS; i++)
        s.conns[i].fd = -1;
    int rc = sup_open(&s, cfg);
    if (rc)
        return rc;
    rc = sup_start_attempt(&s);
    if (rc == 0)
        loop(&s);
    else
        sup_run_end(&s, SR_RUN_ERROR, rc);
    /* DONE is a write like any other: only while the run is still ours. */
    if (s.run_end == SR_RUN_DONE && cfg->lease && (rc = sr_lease_renew(cfg->lease)) == -ESTALE) {
        sup_lease_lost(&s, sr_strerror(rc));
        sup_run_end(&s, SR_RUN_LEASE_LOST, 0);
    }
    if (s.run_end == SR_RUN_DONE)
        sup_node_finished(&s);
    finish(&s);
    if (s.run_end == SR_RUN_DONE && s.stop.notice_after_end) {
        sr_info("run %s is done, but a notice came as it finished: exit 75 (requeue me; a rerun "
                "exits 0 at once)",
                cfg->run_id);
        sup_run_end(&s, SR_RUN_DONE_NOTICE, 0);
    }
    if (cfg->result)
        cfg->result->end = s.run_end;
    sup_close(&s);
    return s.exit_code;
}
