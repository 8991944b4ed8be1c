/*
 * group.c - the other nodes of a multi-node run, as the supervisor sees
 * them (peers.h watches the store on its own thread): a set published by
 * any node, a peer's notice (acted on as this node's own, with the
 * origin's deadline), and the end of the run: DONE only once every node's
 * job finished (parts.h: done marks).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "exits.h"
#include "log.h"
#include "parts.h"
#include "control.h"
#include "supervisor_int.h"

/* Multi-node: our newest part's set is published (every node's part is
 * durable), or there is no part to wait for. */
int sup_group_on(const struct sup *s)
{
    return sr_cfg_multinode(s->cfg);
}

int sup_group_rank(const struct sup *s)
{
    return sr_cfg_rank(s->cfg);
}

unsigned sup_group_nodes(const struct sup *s)
{
    return sr_cfg_nodes(s->cfg);
}

int64_t sup_group_startup_ms(const struct sup *s)
{
    /* A start waits for the other nodes, however late they come: judged
     * only after its first heartbeat (docs/runtime.md). */
    return sup_group_on(s) ? -1 : s->cfg->stall_startup_ms;
}

void sup_group_before_restore(struct sup *s)
{
    const struct sr_supervise_config *c = s->cfg;
    if (!sup_group_on(s))
        return;
    struct sr_lease_counts ctx = {.st = c->st, .run_id = c->run_id};
    const int p =
        sr_sets_publish_pending(c->st, c->run_id, c->nodes, sr_lease_part_counts, &ctx, NULL);
    if (p < 0)
        sr_warn("cannot look for unpublished checkpoints: %s", sr_strerror(p));
}

/* Refuses a commit: the job is answered, its connection closed. */
static int refuse(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(int fd, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sr_ctl_reply(fd, "ERR %s", msg);
    close(fd);
    return -1;
}

int sup_group_commit_step(struct sup *s, int64_t step, int fd)
{
    if (!sup_group_on(s))
        return 0;
    if (step < 0)
        return refuse(fd, "a multi-node run needs the step: spotrun commit --step N (it is what "
                          "makes the nodes' parts one checkpoint)");
    if (step > SR_SET_STEP_MAX)
        return refuse(fd,
                      "step %" PRId64 " is too large for a multi-node checkpoint (at most "
                      "%" PRId64 ": its seq, step + 1, is named in 10 digits)",
                      step, SR_SET_STEP_MAX);
    if (step <= s->att.last_step)
        return refuse(fd,
                      "step %" PRId64 " is not newer than this node's last checkpoint (step "
                      "%" PRId64 "): in a multi-node run each step is committed once, and the "
                      "next commit needs a higher step",
                      step, s->att.last_step);
    s->att.last_step = step;
    return 0;
}

int sup_group_stop_stalled(struct sup *s, int64_t wall_ms)
{
    if (!sup_group_on(s) || !s->group.peers)
        return 0;
    /* The other nodes' jobs wait for ours in a collective: stop them too,
     * as a notice does (they exit 75 and the group reruns). */
    sr_peers_notify(s->group.peers, "stalled", wall_ms + s->cfg->grace_ms);
    sr_info("asking the other nodes of run %s to stop (their jobs wait for this one)",
            s->cfg->run_id);
    return 1;
}

int sup_set_durable(const struct sup *s)
{
    return !sup_group_on(s) || s->group.await_seq == 0 ||
           s->group.durable_seq >= s->group.await_seq;
}

/* A multi-node set is published (by this node or another). */
void sup_set_published(struct sup *s, uint64_t seq)
{
    if (seq > s->group.durable_seq)
        s->group.durable_seq = seq;
    sup_ckpt_exists(s, seq);
}

void sup_group_await(struct sup *s, uint64_t seq)
{
    if (s->phase == PREEMPTING)
        s->group.await_seq = seq;
    sr_peers_watch(s->group.peers, seq);
}

void sup_group_notice(struct sup *s)
{
    s->group.await_seq = 0;
}

void sup_group_stall_requeue(struct sup *s)
{
    sr_warn("node %u's job stalled (%u stall(s) of run %s, at most %u): the group stops "
            "and resumes from the newest complete checkpoint when its engine reruns it",
            s->cfg->node_rank, s->cfg->prior_stalls + s->stalls, s->cfg->run_id,
            s->cfg->max_stalls);
    s->group.stall_requeue = 1;
}

void sup_group_finished_in_notice(struct sup *s)
{
    sr_info("the job finished during the notice");
    s->group.finished_in_notice = 1;
    sup_phase(s, FINISHING);
    sup_run_end(s, SR_RUN_DONE, 0);
}

void sup_on_peers(struct sup *s)
{
    struct sr_peer_event ev;
    while (sr_peers_take(s->group.peers, &ev)) {
        if (ev.kind == SR_PEER_SET) {
            sup_set_published(s, ev.seq);
            char step[24];
            sr_format_step(ev.step, step, sizeof(step));
            sr_info("checkpoint %" PRIu64 " (step %s) is complete on all %u nodes", ev.seq, step,
                    s->cfg->nodes);
            emit(s, "set",
                 json_pack("{s:I,s:I}", "seq", (json_int_t)ev.seq, "step", (json_int_t)ev.step));
            continue;
        }
        const int64_t deadline = now() + (ev.deadline_wall_ms - sr_wall_ms());
        char source[64];
        snprintf(source, sizeof(source), "peer:%u:%s", ev.rank, ev.source);
        /* Another node reached a time limit or budget: this one stops as
         * it does (exit 124), whatever its own limits say. */
        if (s->phase != PREEMPTING && strncmp(ev.source, "limit:", 6) == 0 &&
            sup_peer_limit(s, ev.rank, ev.source + 6, source, deadline) == 0)
            continue;
        if (s->phase == PREEMPTING) {
            /* The same reclamation seen by another node: never a reason to
             * hurry (a second notice of our own would be). */
            sup_preempt_lower(s, source, deadline);
            continue;
        }
        sup_notice(s, source, deadline);
    }
}

/* Multi-node: this node's job finished. The run is done only once every
 * node's job finished from the same start (parts.h: done marks); whoever
 * completes the marks writes DONE. A node whose job finished while the
 * group is being stopped by a notice exits 75 with the others: the group
 * resumes from its newest set, this node's job included. Sets the run's
 * end: done, this node's part done (another node's job has not finished
 * yet), or preempted. */
void sup_node_finished(struct sup *s)
{
    const struct sr_supervise_config *c = s->cfg;
    if (!sup_group_on(s))
        return;
    int rc = sr_node_mark_done(c->st, c->run_id, c->node_rank, s->att.start_seq);
    if (rc < 0)
        sr_warn("cannot record in %s that node %u's job finished: %s", sr_store_url(c->st),
                c->node_rank, sr_strerror(rc));
    else
        rc = sr_nodes_done(c->st, c->run_id, c->nodes, s->att.start_seq);
    if (rc == (int)c->nodes)
        return; /* done */
    sup_run_end(s, SR_RUN_NODE_DONE, 0);
    if (s->group.finished_in_notice || sr_peers_group_preempted(s->group.peers)) {
        if (!s->group.finished_in_notice)
            emit(s, "notice", json_pack("{s:s}", "source", "peer"));
        sr_info("node %u's job finished, but run %s is being stopped by a notice: every node "
                "resumes from the newest complete checkpoint; exit 75 (requeue me)",
                c->node_rank, c->run_id);
        sup_run_end(s, SR_RUN_PREEMPTED, 0);
        return;
    }
    if (rc >= 0)
        sr_info("node %u's job finished (%d of %u nodes); run %s is done once every node's job "
                "has finished",
                c->node_rank, rc, c->nodes, c->run_id);
}

void sup_group_start(struct sup *s)
{
    if (!sup_group_on(s))
        return;
    const struct sr_supervise_config *cfg = s->cfg;
    int rc;
    const struct sr_peers_config pc = {
        .st = cfg->st,
        .run_id = cfg->run_id,
        .nodes = cfg->nodes,
        .rank = cfg->node_rank,
        .epoch = cfg->lease ? sr_lease_epoch(cfg->lease) : cfg->epoch,
        .poll_ms = cfg->peer_poll_ms ? cfg->peer_poll_ms : 1000,
        .started_wall_ms = sr_wall_ms(),
    };
    if ((rc = sr_peers_start(&pc, &s->group.peers)) < 0)
        sr_warn("cannot watch the other nodes: %s", sr_strerror(rc));
    else
        sr_info("node %u of %u", cfg->node_rank, cfg->nodes);
}
