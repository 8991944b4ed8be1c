/*
 * evq.c - the worker-to-loop event queue (see evq.h): a ring of cap slots
 * under one mutex, a condition for the posters that wait for room, and a
 * non-blocking pipe whose bytes only wake the loop (a full pipe means the
 * loop is woken already).
 */
#include "evq.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define SAY_EVERY_S 5 /* a poster waiting for room says so this often */

int sr_evq_init(struct sr_evq *q, size_t size, size_t cap, const char *what, sr_evq_merge_fn merge)
{
    memset(q, 0, sizeof(*q));
    q->pipe[0] = q->pipe[1] = -1;
    q->items = calloc(cap, size);
    if (!q->items)
        return -ENOMEM;
    if (pipe2(q->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        const int e = errno;
        free(q->items);
        q->items = NULL;
        return -e;
    }
    q->size = size;
    q->cap = cap;
    q->what = what;
    q->merge = merge;
    pthread_mutex_init(&q->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->room, &ca);
    pthread_condattr_destroy(&ca);
    return 0;
}

void sr_evq_destroy(struct sr_evq *q)
{
    if (!q->items)
        return;
    for (int i = 0; i < 2; i++)
        if (q->pipe[i] >= 0)
            close(q->pipe[i]);
    pthread_cond_destroy(&q->room);
    pthread_mutex_destroy(&q->lock);
    free(q->items);
    q->items = NULL;
}

static void *slot(const struct sr_evq *q, size_t i)
{
    return q->items + (q->head + i) % q->cap * q->size;
}

void sr_evq_wake(struct sr_evq *q)
{
    const char b = 1;
    (void)!write(q->pipe[1], &b, 1);
}

/* Waits (q->lock held) for room or the close; held, when not NULL, is let
 * go meanwhile and taken again in the caller's order (held, then q->lock). */
static void wait_room(struct sr_evq *q, pthread_mutex_t *held)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += SAY_EVERY_S;
    if (held)
        pthread_mutex_unlock(held);
    if (pthread_cond_timedwait(&q->room, &q->lock, &until) == ETIMEDOUT && q->count == q->cap &&
        !q->closed)
        sr_warn("%s wait: the supervisor has not taken any of the %zu queued for %ds", q->what,
                q->cap, SAY_EVERY_S);
    if (held) {
        pthread_mutex_unlock(&q->lock);
        pthread_mutex_lock(held);
        pthread_mutex_lock(&q->lock);
    }
}

int sr_evq_post_held(struct sr_evq *q, const void *ev, pthread_mutex_t *held)
{
    pthread_mutex_lock(&q->lock);
    int merged = 0, waited = 0;
    for (;;) {
        merged = q->count > 0 && q->merge && q->merge(slot(q, q->count - 1), ev);
        if (merged || q->count < q->cap || q->closed)
            break;
        if (!waited++)
            q->waits++;
        wait_room(q, held);
    }
    const int closed = q->closed;
    if (!merged && !closed) {
        memcpy(slot(q, q->count), ev, q->size);
        q->count++;
    }
    pthread_mutex_unlock(&q->lock);
    if (closed)
        return -EPIPE;
    sr_evq_wake(q);
    return 0;
}

int sr_evq_post(struct sr_evq *q, const void *ev)
{
    return sr_evq_post_held(q, ev, NULL);
}

int sr_evq_take(struct sr_evq *q, void *ev)
{
    char buf[64];
    while (read(q->pipe[0], buf, sizeof(buf)) > 0)
        ;
    pthread_mutex_lock(&q->lock);
    const int got = q->count > 0;
    if (got) {
        memcpy(ev, slot(q, 0), q->size);
        q->head = (q->head + 1) % q->cap;
        q->count--;
        pthread_cond_signal(&q->room);
    }
    const int more = q->count > 0;
    pthread_mutex_unlock(&q->lock);
    if (more)
        sr_evq_wake(q); /* the pipe was drained: the next poll must still see these */
    return got;
}

int sr_evq_fd(const struct sr_evq *q)
{
    return q ? q->pipe[0] : -1;
}

void sr_evq_close(struct sr_evq *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = 1;
    pthread_cond_broadcast(&q->room);
    pthread_mutex_unlock(&q->lock);
}
