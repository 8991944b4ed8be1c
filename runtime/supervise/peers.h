/*
 * peers.h - the other wrappers of a multi-node run, seen through the store
 * only (docs/multinode.md): no daemon, no port.
 *
 *   <run>/notices/<unix_ms>-r<rank>-e<epoch>.json   a notice one node got
 *
 * A node that gets a notice publishes it (sr_peers_notify); every wrapper
 * lists the prefix every poll_ms and reports a peer's fresh notice as an
 * event, with the origin's deadline. Fresh: not this node's own, its
 * deadline not passed, and published by the current owner of its rank
 * while this wrapper was running (the origin's lease has the notice's epoch
 * and was not released before this wrapper started; without leases, made
 * after this wrapper started), so a requeued group does not act on the
 * notice that stopped the previous one.
 *
 * The same thread completes sets: for each seq this node has a part of
 * (sr_peers_watch), it tries sr_set_complete every poll until the set is
 * published (by anyone) or a newer watched set is, and reports it.
 *
 * DESIGN: one thread; events are queued (common/evq.h: never dropped, a
 * full queue makes the thread wait) and announced on a pipe (sr_peers_fd),
 * like the notice watcher. Store calls never run on the supervisor's loop.
 */
#ifndef SPOTRUN_PEERS_H
#define SPOTRUN_PEERS_H

#include <stdint.h>

#include "store.h"

struct sr_peers_config {
    struct sr_store *st; /* shared; the store is thread-safe */
    const char *run_id;
    uint32_t nodes, rank;
    uint64_t epoch;          /* this node's lease epoch (0 = no lease) */
    int64_t poll_ms;         /* --peer-poll */
    int64_t started_wall_ms; /* when this wrapper started (unix ms) */
};

enum sr_peer_kind { SR_PEER_NOTICE, SR_PEER_SET };

struct sr_peer_event {
    enum sr_peer_kind kind;
    uint32_t rank;            /* NOTICE: the node that got it */
    char source[40];          /* NOTICE: where it came from there ("gcp", "signal:SIGTERM") */
    int64_t deadline_wall_ms; /* NOTICE: the origin's deadline (unix ms) */
    uint64_t seq;             /* SET: the set now published */
    int64_t step;
};

struct sr_peers;

int sr_peers_start(const struct sr_peers_config *cfg, struct sr_peers **out);
void sr_peers_stop(struct sr_peers *p);    /* NULL is fine */
int sr_peers_fd(const struct sr_peers *p); /* -1 for NULL */
/* 1 and fills ev when an event was queued, else 0. */
int sr_peers_take(struct sr_peers *p, struct sr_peer_event *ev);
/* Publishes this node's notice (on the thread, at once). */
void sr_peers_notify(struct sr_peers *p, const char *source, int64_t deadline_wall_ms);
/* Whether every notice asked of sr_peers_notify has been written (or
 * failed, said so): the watchdog stops a stalled job only then, so that
 * the other nodes' jobs, which fail as it dies, find the notice. 1 for
 * NULL. */
int sr_peers_notified(struct sr_peers *p);
/* Completes the set of seq once every part is there (on the thread). */
void sr_peers_watch(struct sr_peers *p, uint64_t seq);
/* Whether another node published a fresh notice (asked now, on the
 * caller's thread): the job failing in a group that is being preempted
 * is a preemption, not a crash. */
int sr_peers_group_preempted(struct sr_peers *p);

#endif
