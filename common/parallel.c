/*
 * parallel.c - one job per index on a few threads (see parallel.h).
 */
#include "parallel.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>

#include "log.h"

#define THREADS_DEFAULT 8

struct pool {
    size_t n;
    atomic_size_t next;
    int (*fn)(void *ctx, size_t i);
    void *ctx;
    pthread_mutex_t mu;
    int rc; /* the first error, its message in msg */
    char msg[512];
};

static void *worker(void *arg)
{
    struct pool *p = arg;
    for (;;) {
        const size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            break;
        const int rc = p->fn(p->ctx, i);
        if (rc < 0) {
            pthread_mutex_lock(&p->mu);
            if (p->rc == 0) {
                p->rc = rc;
                snprintf(p->msg, sizeof(p->msg), "%s", sr_strerror(rc));
            }
            pthread_mutex_unlock(&p->mu);
            atomic_store(&p->next, p->n); /* the others stop too */
            break;
        }
    }
    return NULL;
}

int sr_parallel_for(size_t n, unsigned threads, int (*fn)(void *ctx, size_t i), void *ctx)
{
    struct pool p = {.n = n, .fn = fn, .ctx = ctx};
    atomic_init(&p.next, 0);
    pthread_mutex_init(&p.mu, NULL);
    if (threads == 0)
        threads = THREADS_DEFAULT;
    if (threads > SR_PARALLEL_MAX)
        threads = SR_PARALLEL_MAX;
    if (threads > n)
        threads = (unsigned)n;
    pthread_t tid[SR_PARALLEL_MAX];
    unsigned started = 0;
    /* Signals stay the caller's thread's business (a supervisor's loop). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (; started < threads; started++)
        if (pthread_create(&tid[started], NULL, worker, &p) != 0)
            break;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started == 0 && n > 0)
        worker(&p); /* no thread to be had: work here */
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&p.mu);
    if (p.rc < 0)
        return sr_errf(p.rc, "%s", p.msg);
    return 0;
}
