/*
 * requests.c - the control requests a running wrapper serves (control.h
 * has the protocol): COMMIT, NOTIFY, REQUEST, STATUS, METRIC.
 *
 * Control connections are read as their bytes arrive (never a blocking read
 * on the supervisor's loop): up to MAX_CONNS wait at once, each at most
 * SR_CTL_REQUEST_TIMEOUT_MS; when every slot is taken the oldest is
 * dropped. A COMMIT is answered once its snapshot is taken (on_result in
 * supervisor.c; packed and stored after), every other request at once.
 * STATUS's "failed" lists the seqs of the newest commits that failed after
 * they were answered (packing, storing): spotrun_wait_durable() reads it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "supervisor_int.h"

static void status_reply(struct sup *s, int fd)
{
    static const char *const names[] = {"running", "backoff", "preempting", "finishing"};
    json_t *o =
        json_pack("{s:s,s:s,s:I,s:i,s:I,s:i}", "run_id", s->cfg->run_id, "state", names[s->phase],
                  "attempt", (json_int_t)s->attempt, "pid", (int)s->att.child, "durable_seq",
                  (json_int_t)s->group.durable_seq, "pending", sr_commits_pending(s->ckpt.cp));
    json_t *failed = json_array();
    for (unsigned i = 0; i < 16; i++)
        if (s->ckpt.failed_seq[i])
            json_array_append_new(failed, json_integer((json_int_t)s->ckpt.failed_seq[i]));
    json_object_set_new(o, "failed", failed);
    char *txt = json_dumps(o, JSON_COMPACT);
    sr_ctl_reply(fd, "OK %s", txt ? txt : "{}");
    free(txt);
    json_decref(o);
}

/* The sweep's early stopping judges a metric reported with a step while
 * the job runs (a stop under way has decided already): at a rung it may
 * stop the trial, as a limit does. */
static void early_stop(struct sup *s, const struct sr_ctl_req *req)
{
    const struct sr_limits_config *c = &s->limits.cfg;
    struct sr_limit_hit hit = {0};
    if (c->metric_hook && req->step >= 0 && s->phase == RUNNING &&
        c->metric_hook(c->metric_ctx, req->name, req->value, req->step, &hit) == 1)
        sup_limit_reached(s, &hit);
}

static void handle_request(struct sup *s, int fd, const struct sr_ctl_req *req)
{
    if (req->kind == SR_CTL_COMMIT || req->kind == SR_CTL_STATUS || req->kind == SR_CTL_METRIC)
        s->att.talked = 1; /* the job speaks the protocol (a restart may help it) */
    if ((req->kind == SR_CTL_COMMIT || req->kind == SR_CTL_METRIC) && s->page) {
        /* A heartbeat (job_page.h), whoever sent it: `spotrun commit` and
         * `spotrun metric` from a shell script are progress too. */
        __atomic_add_fetch(&s->page->progress, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&s->page->progress_ms, (uint64_t)sr_wall_ms(), __ATOMIC_RELAXED);
    }
    switch (req->kind) {
    case SR_CTL_COMMIT:
        if (sup_group_commit_step(s, req->step, fd) < 0)
            return; /* refused: answered and closed */
        s->att.job_committed = 1;
        sup_ckpt_job_commit(s);
        /* This commit answers every request made so far. */
        sup_watchdog_answered(s);
        if (s->page)
            __atomic_store_n(&s->page->served,
                             __atomic_load_n(&s->page->requested, __ATOMIC_ACQUIRE),
                             __ATOMIC_RELEASE);
        if (req->pause_ms >= 0 && s->cfg->every_auto.on)
            sr_every_sample_pause(&s->every, req->pause_ms);
        sup_commit_dir(s, req->step, fd, "job");
        if (s->phase == PREEMPTING && s->stop.pre == WAIT_COMMIT)
            sup_enter_drain(s); /* persists are drained before the job is stopped */
        return;                 /* fd is answered once snapshotted */
    case SR_CTL_NOTIFY:
        sr_ctl_reply(fd, "OK");
        close(fd);
        sup_notice(s, req->source, now() + req->deadline_ms);
        return;
    case SR_CTL_REQUEST:
        /* The job itself got SIGTERM from outside its tree (Slurm signals
         * every process): a notice with --grace, unless one is already
         * being handled. */
        sr_ctl_reply(fd, "OK");
        close(fd);
        if (s->phase == RUNNING)
            sup_notice(s, req->source, now() + s->cfg->grace_ms);
        return;
    case SR_CTL_STATUS:
        status_reply(s, fd);
        close(fd);
        return;
    case SR_CTL_METRIC:
        sr_ctl_reply(fd, "OK");
        close(fd);
        emit(s, "metric",
             req->step >= 0 ? json_pack("{s:s,s:f,s:I}", "name", req->name, "value", req->value,
                                        "step", (json_int_t)req->step)
                            : json_pack("{s:s,s:f}", "name", req->name, "value", req->value));
        sr_debug("metric %s = %g", req->name, req->value);
        early_stop(s, req);
        return;
    }
}

static void conn_drop(struct sr_ctl_conn *c, const char *reply)
{
    if (reply)
        sr_ctl_reply(c->fd, "%s", reply);
    close(c->fd);
    c->fd = -1;
}

/* New connections: each waits in a slot for its request line. When every
 * slot is taken, the oldest is dropped: silent clients cannot lock out the
 * job's commit. */
void sup_on_accept(struct sup *s)
{
    for (;;) {
        const int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        struct sr_ctl_conn *slot = &s->conns[0];
        for (int i = 0; i < MAX_CONNS && slot->fd >= 0; i++)
            if (s->conns[i].fd < 0 || s->conns[i].since < slot->since)
                slot = &s->conns[i];
        if (slot->fd >= 0)
            conn_drop(slot, "ERR busy");
        *slot = (struct sr_ctl_conn){.fd = fd, .since = now()};
    }
}

void sup_on_conn(struct sup *s, struct sr_ctl_conn *c)
{
    struct sr_ctl_req req;
    const int rc = sr_ctl_conn_feed(c, &req);
    if (rc == 0)
        return;
    if (rc < 0) {
        conn_drop(c, rc == -ECONNRESET ? NULL : "ERR bad request");
        return;
    }
    const int fd = c->fd;
    c->fd = -1;
    handle_request(s, fd, &req);
}

void sup_expire_conns(struct sup *s)
{
    const int64_t t = now();
    for (int i = 0; i < MAX_CONNS; i++)
        if (s->conns[i].fd >= 0 && t - s->conns[i].since >= SR_CTL_REQUEST_TIMEOUT_MS)
            conn_drop(&s->conns[i], "ERR no request within the timeout");
}
