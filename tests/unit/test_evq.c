/*
 * test_evq.c - the worker-to-loop event queue (common/evq.h) that the
 * notice watcher and the peers' thread post to: a flood of events larger
 * than the queue arrives whole and in order (the poster waits for room, it
 * never drops one), repeats are merged as the merge function says, and a
 * closed queue lets a waiting poster go. A poster that holds its own lock
 * (the checkpointer's results) lets it go while it waits for room.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

#include "evq.h"

#define FLOOD 1000

struct ev {
    int kind, n;
};

struct flood {
    struct sr_evq *q;
    int from, count, rc;
};

static void *poster(void *arg)
{
    struct flood *f = arg;
    for (int i = 0; i < f->count; i++) {
        const struct ev e = {.kind = 1, .n = f->from + i};
        if ((f->rc = sr_evq_post(f->q, &e)) < 0)
            break;
    }
    return NULL;
}

/* The loop's side: poll the descriptor, take what is there. */
static int take_polled(struct sr_evq *q, struct ev *e)
{
    for (;;) {
        if (sr_evq_take(q, e))
            return 1;
        struct pollfd p = {.fd = sr_evq_fd(q), .events = POLLIN};
        if (poll(&p, 1, 10000) <= 0)
            return 0; /* nothing woke the loop */
    }
}

static void a_flood_past_the_queue_arrives_whole_and_in_order(void **state)
{
    (void)state;
    struct sr_evq q;
    assert_int_equal(sr_evq_init(&q, sizeof(struct ev), 4, "test events", NULL), 0);
    struct flood f = {.q = &q, .from = 0, .count = FLOOD};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, poster, &f), 0);
    for (int i = 0; i < FLOOD; i++) {
        struct ev e;
        assert_true(take_polled(&q, &e));
        assert_int_equal(e.n, i);
    }
    pthread_join(t, NULL);
    assert_int_equal(f.rc, 0);
    assert_true(q.waits > 0); /* the poster found it full and waited */
    struct ev e;
    assert_false(sr_evq_take(&q, &e));
    sr_evq_destroy(&q);
}

static void two_posters_flooding_lose_nothing(void **state)
{
    (void)state;
    struct sr_evq q;
    assert_int_equal(sr_evq_init(&q, sizeof(struct ev), 8, "test events", NULL), 0);
    struct flood a = {.q = &q, .from = 0, .count = FLOOD},
                 b = {.q = &q, .from = FLOOD, .count = FLOOD};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, poster, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, poster, &b), 0);
    static unsigned char got[2 * FLOOD];
    int next_a = 0, next_b = FLOOD;
    for (int i = 0; i < 2 * FLOOD; i++) {
        struct ev e;
        assert_true(take_polled(&q, &e));
        assert_false(got[e.n]);
        got[e.n] = 1;
        if (e.n < FLOOD) /* each poster's own order is kept */
            assert_int_equal(e.n, next_a++);
        else
            assert_int_equal(e.n, next_b++);
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    sr_evq_destroy(&q);
}

/* Same kind: one event, the smallest n kept (as a notice keeps its
 * earliest deadline). */
static int keep_smallest(void *held, const void *ev)
{
    struct ev *h = held;
    const struct ev *e = ev;
    if (h->kind != e->kind)
        return 0;
    if (e->n < h->n)
        h->n = e->n;
    return 1;
}

static void repeats_merge_into_the_newest_held(void **state)
{
    (void)state;
    struct sr_evq q;
    assert_int_equal(sr_evq_init(&q, sizeof(struct ev), 2, "test events", keep_smallest), 0);
    /* a flood of one kind fills one slot, whatever its length */
    for (int i = 0; i < FLOOD; i++) {
        const struct ev e = {.kind = 1, .n = 500 - i % 7};
        assert_int_equal(sr_evq_post(&q, &e), 0);
    }
    const struct ev other = {.kind = 2, .n = 9};
    assert_int_equal(sr_evq_post(&q, &other), 0);
    struct ev e;
    assert_true(sr_evq_take(&q, &e));
    assert_int_equal(e.kind, 1);
    assert_int_equal(e.n, 494);
    assert_true(sr_evq_take(&q, &e));
    assert_int_equal(e.kind, 2);
    assert_false(sr_evq_take(&q, &e));
    assert_int_equal(q.waits, 0);
    sr_evq_destroy(&q);
}

static void closing_lets_a_waiting_poster_go(void **state)
{
    (void)state;
    struct sr_evq q;
    assert_int_equal(sr_evq_init(&q, sizeof(struct ev), 1, "test events", NULL), 0);
    struct flood f = {.q = &q, .from = 0, .count = 3};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, poster, &f), 0);
    struct pollfd p = {.fd = sr_evq_fd(&q), .events = POLLIN};
    assert_int_equal(poll(&p, 1, 10000), 1); /* the first is in; the second waits */
    sr_evq_close(&q);
    pthread_join(t, NULL);
    assert_int_equal(f.rc, -EPIPE);
    const struct ev e = {.kind = 1};
    assert_int_equal(sr_evq_post(&q, &e), -EPIPE);
    sr_evq_destroy(&q);
}

/* A poster that holds its own lock (the checkpointer's, around a result
 * and the count it changes): while the queue is full it lets the lock go,
 * so the loop may take it; what it changes under the lock after each post
 * is seen by a loop that took the event and then takes the lock. */
struct held_flood {
    struct sr_evq *q;
    pthread_mutex_t lock;
    int done; /* events posted, changed under lock after each post */
    int rc;
};

static void *held_poster(void *arg)
{
    struct held_flood *h = arg;
    for (int i = 0; i < FLOOD; i++) {
        const struct ev e = {.kind = 1, .n = i};
        pthread_mutex_lock(&h->lock);
        h->rc = sr_evq_post_held(h->q, &e, &h->lock);
        h->done++;
        pthread_mutex_unlock(&h->lock);
        if (h->rc < 0)
            break;
    }
    return NULL;
}

static void a_poster_holding_its_lock_lets_it_go_while_the_queue_is_full(void **state)
{
    (void)state;
    struct sr_evq q;
    assert_int_equal(sr_evq_init(&q, sizeof(struct ev), 4, "test events", NULL), 0);
    struct held_flood h = {.q = &q};
    pthread_mutex_init(&h.lock, NULL);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, held_poster, &h), 0);
    for (int i = 0; i < FLOOD; i++) {
        struct ev e;
        assert_true(take_polled(&q, &e));
        assert_int_equal(e.n, i);
        pthread_mutex_lock(&h.lock); /* a poster waiting for room does not hold it */
        assert_true(h.done > i);     /* nor did it change it before this post */
        pthread_mutex_unlock(&h.lock);
    }
    pthread_join(t, NULL);
    assert_int_equal(h.rc, 0);
    assert_true(q.waits > 0);
    pthread_mutex_destroy(&h.lock);
    sr_evq_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_flood_past_the_queue_arrives_whole_and_in_order),
        cmocka_unit_test(two_posters_flooding_lose_nothing),
        cmocka_unit_test(repeats_merge_into_the_newest_held),
        cmocka_unit_test(closing_lets_a_waiting_poster_go),
        cmocka_unit_test(a_poster_holding_its_lock_lets_it_go_while_the_queue_is_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
