/*
 * keeper.c - the lease renewal thread (see keeper.h).
 *
 * DESIGN: renewal is a store round trip that may take seconds under
 * retries, so it runs here rather than in the supervisor's poll loop,
 * which must stay responsive to signals and notices. The only thing the
 * loop needs back is "lost" and why, one event through the queue it polls
 * (common/evq.h, as every thread-to-loop handoff).
 */
#include "keeper.h"
#include "catalog.h"
#include "evq.h"
#include "exits.h"
#include "log.h"
#include "units.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct sr_keeper {
    struct sr_lease *lease;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
    struct sr_evq lost; /* one event: why the lease was lost */
};

struct lost_event {
    char why[512];
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits ms or until stopped; 1 when stopped. */
static int nap(struct sr_keeper *k, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&k->lock);
    while (!k->stop && pthread_cond_timedwait(&k->cond, &k->lock, &until) != ETIMEDOUT) {
    }
    const int stop = k->stop;
    pthread_mutex_unlock(&k->lock);
    return stop;
}

static void *keeper_main(void *arg)
{
    struct sr_keeper *k = arg;
    const int64_t ttl_ms = (int64_t)sr_lease_ttl(k->lease) * 1000;
    const int64_t every = ttl_ms / 3 > 100 ? ttl_ms / 3 : 100;
    int64_t held_until = mono_ms() + ttl_ms; /* as far as we know */
    int failing = 0, warned_expiry = 0;
    while (!nap(k, failing ? every / 2 : every)) {
        sr_err_clear(); /* a long-lived thread: an earlier renewal's message is not this one's */
        const int64_t t0 = mono_ms();
        const int rc = sr_lease_renew(k->lease);
        if (rc == 0) {
            if (failing)
                sr_info("lease renewed again");
            failing = warned_expiry = 0;
            held_until = t0 + ttl_ms;
            continue;
        }
        if (rc == -ESTALE) {
            struct lost_event ev;
            snprintf(ev.why, sizeof(ev.why), "%s", sr_strerror(rc));
            (void)sr_evq_post(&k->lost, &ev); /* -EPIPE: stopping, nobody takes it */
            break;
        }
        if (!failing)
            sr_warn("cannot renew the lease (will retry): %s", sr_strerror(rc));
        failing = 1;
        if (!warned_expiry && mono_ms() >= held_until) {
            warned_expiry = 1;
            sr_warn("the lease has expired while the store was unreachable: another wrapper may "
                    "take the run over; checkpoints made from now on may be superseded");
        }
    }
    return NULL;
}

int sr_keeper_start(struct sr_lease *lease, struct sr_keeper **out)
{
    *out = NULL;
    struct sr_keeper *k = calloc(1, sizeof(*k));
    if (!k)
        return sr_errf(-ENOMEM, "out of memory");
    int rc = sr_evq_init(&k->lost, sizeof(struct lost_event), 1, "the lease keeper's news", NULL);
    if (rc < 0) {
        free(k);
        return sr_errf(rc, "cannot start the lease keeper: %s", strerror(-rc));
    }
    k->lease = lease;
    pthread_mutex_init(&k->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cond, &ca);
    pthread_condattr_destroy(&ca);
    const int e = pthread_create(&k->thread, NULL, keeper_main, k);
    if (e != 0) {
        sr_evq_destroy(&k->lost);
        pthread_cond_destroy(&k->cond);
        pthread_mutex_destroy(&k->lock);
        free(k);
        return sr_errf(-e, "cannot start the lease keeper: %s", strerror(e));
    }
    *out = k;
    return 0;
}

int sr_keeper_fd(const struct sr_keeper *k)
{
    return k ? sr_evq_fd(&k->lost) : -1;
}

int sr_keeper_lost(struct sr_keeper *k, char *buf, size_t len)
{
    struct lost_event ev;
    if (!k || !sr_evq_take(&k->lost, &ev))
        return 0;
    snprintf(buf, len, "%s", ev.why);
    return 1;
}

void sr_keeper_stop(struct sr_keeper *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    k->stop = 1;
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
    sr_evq_close(&k->lost);
    pthread_join(k->thread, NULL);
    sr_evq_destroy(&k->lost);
    pthread_cond_destroy(&k->cond);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

int sr_run_nodes(struct sr_store *st, const char *run_id, uint32_t *nodes, uint64_t *newest_seq)
{
    *nodes = 0;
    if (newest_seq)
        *newest_seq = 0;
    struct sr_ckpt_list l;
    int rc = sr_ckpt_list(st, run_id, &l);
    if (rc < 0)
        return rc;
    if (l.n) { /* ordered as restore sees them: the newest is last */
        const struct sr_manifest *m = &l.v[l.n - 1];
        *nodes = m->nodes ? m->nodes : 1;
        if (newest_seq)
            *newest_seq = m->seq;
    }
    sr_ckpt_list_free(&l);
    if (*nodes)
        return 0;
    rc = sr_lease_count_ranks(st, run_id, NULL);
    if (rc > 0)
        *nodes = SR_RUN_MULTI;
    return rc < 0 ? rc : 0;
}

int sr_keeper_take(struct sr_store *st, const char *run_id, int ttl_s, int64_t wait_ms,
                   const char *refusal, struct sr_lease **out)
{
    return sr_keeper_take_rank(st, run_id, -1, ttl_s, wait_ms, refusal, out);
}

int sr_keeper_take_rank(struct sr_store *st, const char *run_id, int rank, int ttl_s,
                        int64_t wait_ms, const char *refusal, struct sr_lease **out)
{
    const int64_t give_up = sr_now_ms() + wait_ms;
    int said = 0;
    for (;;) {
        struct sr_lease_info h;
        const int rc = sr_lease_acquire_rank(st, run_id, rank, ttl_s, out, &h);
        if (rc == 0) {
            sr_debug("lease of run %s taken (epoch %llu)", run_id,
                     (unsigned long long)sr_lease_epoch(*out));
            return 0;
        }
        if (rc != -EBUSY)
            return sr_fail(rc, "cannot take the lease of the run");
        const int64_t t = sr_now_ms();
        const long long left = (long long)(h.expires - (int64_t)(sr_wall_ms() / 1000));
        /* The holder may be a writer of the other kind (lease.h): say which. */
        char who[96] = "";
        if (h.rank >= 0 && h.rank != rank)
            snprintf(who, sizeof(who), "node %d of its multi-node group, ", h.rank);
        else if (h.rank < 0 && rank >= 0)
            snprintf(who, sizeof(who), "a single-node wrapper or a command writing the run, ");
        if (t >= give_up) {
            char what[64] = "";
            if (rank >= 0)
                snprintf(what, sizeof(what), " node %d", rank);
            fprintf(stderr,
                    "spotrun: run %s%s is owned by %s pid %ld (%sepoch %llu; its lease expires in "
                    "%llds unless renewed): %s\n",
                    run_id, what, h.host, h.pid, who, (unsigned long long)h.epoch, left, refusal);
            return SR_EX_CANTCREAT;
        }
        if (!said) {
            char w[32];
            sr_format_duration_ms(give_up - t, w, sizeof(w));
            sr_info("run %s is owned by %s pid %ld (%slease expires in %llds): waiting up to %s "
                    "for it",
                    run_id, h.host, h.pid, who, left, w);
            said = 1;
        }
        const int64_t nap = give_up - t < 1000 ? give_up - t : 1000;
        usleep((useconds_t)(nap > 0 ? nap : 1) * 1000);
    }
}
