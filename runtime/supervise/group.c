/*
 * group.c - the other nodes of a multi-node run, as the supervisor sees
 * them (peers.h watches the store on its own thread): a set published by
 * any node, a peer's notice (acted on as this node's own, with the
 * origin's deadline), and the end of the run: DONE only once every node's
 * job finished (parts.h: done marks).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "exits.h"
#include "log.h"
#include "parts.h"
#include "supervisor_int.h"

/* Multi-node: our newest part's set is published (every node's part is
 * durable), or there is no part to wait for. */
int sup_set_durable(const struct sup *s)
{
    return s->cfg->nodes <= 1 || s->group.await_seq == 0 ||
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
