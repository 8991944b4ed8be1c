/*
 * evq.h - a queue of fixed-size events from a worker thread to the
 * supervisor's loop, which polls its descriptor: every such handoff (the
 * notice watcher's notices, the peers' notices and sets, the checkpointer's
 * results, the lease keeper's "lost"). Nothing is dropped: an event that
 * merge() folds into the newest one held is merged (a notice repeated by a
 * poll), and a full queue makes the poster wait for the loop to take one,
 * saying every few seconds what it waits for. Once closed (the loop is
 * going away), posts return -EPIPE at once, so that no poster blocks a
 * join.
 *
 * Threads: post from any thread; take, close and destroy from the loop's.
 */
#ifndef SR_EVQ_H
#define SR_EVQ_H

#include <pthread.h>
#include <stddef.h>

/* Folds ev into held (the newest event queued) when they are one event for
 * the taker; 1 when merged, 0 to queue ev on its own. */
typedef int (*sr_evq_merge_fn)(void *held, const void *ev);

struct sr_evq {
    pthread_mutex_t lock;
    pthread_cond_t room; /* a slot freed, or closed */
    unsigned char *items;
    size_t size, cap, head, count;
    int pipe[2]; /* a byte wakes the loop */
    int closed;
    long long waits; /* posts that found the queue full (tests) */
    const char *what;
    sr_evq_merge_fn merge;
};

/* cap events of size bytes; what names the events for the waiting poster's
 * warning ("the notice watcher's notices"); merge may be NULL. */
int sr_evq_init(struct sr_evq *q, size_t size, size_t cap, const char *what, sr_evq_merge_fn merge);
void sr_evq_destroy(struct sr_evq *q);
/* Queues (or merges) a copy of ev and wakes the loop: 0; -EPIPE once
 * closed. Waits while the queue is full. */
int sr_evq_post(struct sr_evq *q, const void *ev);
/* sr_evq_post for a poster that holds its own mutex held (locked before
 * this queue's, never taken by the loop around a take): while the queue is
 * full, held is let go, so that the loop may take that mutex meanwhile,
 * and it is held again when this returns. What the caller changed under
 * held after this post is seen together with the event: a loop that took
 * the event and then takes held sees those changes. */
int sr_evq_post_held(struct sr_evq *q, const void *ev, pthread_mutex_t *held);
/* The oldest event into ev: 1, or 0 when none is queued. */
int sr_evq_take(struct sr_evq *q, void *ev);
/* Wakes the loop without an event (news kept elsewhere). */
void sr_evq_wake(struct sr_evq *q);
/* The descriptor to poll for POLLIN; -1 for NULL. */
int sr_evq_fd(const struct sr_evq *q);
/* No more takes: waiting posters return, later posts too. */
void sr_evq_close(struct sr_evq *q);

#endif
