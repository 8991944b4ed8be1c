/*
 * runsum_writer.c - the wrapper's side of a run's summary (see runsum.h):
 * one history of the run kept in memory, the earlier attempts' logs read
 * once, each flushed log's new lines folded in, the summary put after
 * each flush.
 *
 * Threads: the events flush hook (any flushing thread, under the log's
 * lock) only copies the log into the pending slot of its attempt and
 * wakes the writer's own thread, which reads the store, folds and writes:
 * a slow or failing store never stalls the supervisor or the checkpointer.
 * close lets that thread write what is pending, then joins it.
 */
#include "runsum.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "layout.h"
#include "log.h"
#include "manifest.h"

#define LOGS_MAX 64 /* attempts of this process whose logs it folds */

struct sr_runsum_writer {
    struct sr_store *st;
    char run[256];
    struct sr_history h;
    int loaded; /* the earlier attempts' logs are in h */
    int warned; /* a write failed once (said) */
    struct {
        uint32_t attempt;
        size_t folded; /* bytes of its log already in h */
    } logs[LOGS_MAX];
    size_t n_logs;
    /* The size of each folded log as the store holds it (the summary
     * records them: docs/store.md), by attempt. */
    struct log_size {
        uint32_t attempt;
        uint64_t bytes;
    } * sizes;
    size_t n_sizes, cap_sizes;
    /* Handed over by the hook under mu: each attempt's newest log. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct pending {
        uint32_t attempt;
        char *log;
        size_t len, stored;
    } pend[LOGS_MAX];
    size_t n_pend;
    int stop;
    pthread_t thread;
};

static void *writer_main(void *arg);

static int set_size(struct sr_runsum_writer *w, uint32_t attempt, uint64_t bytes);
static void fold(struct sr_history *h, const char *buf, size_t len);

/* The earlier attempts' logs as the wrapper read them (load_earlier's
 * result, without reading the store again). */
static int take_earlier(struct sr_runsum_writer *w, const struct sr_hist_logs *l)
{
    for (size_t i = 0; i < l->n; i++) {
        fold(&w->h, l->v[i].buf, l->v[i].len);
        if (set_size(w, l->v[i].attempt, l->v[i].size) < 0)
            return -ENOMEM;
    }
    w->loaded = 1;
    return 0;
}

int sr_runsum_writer_open(struct sr_store *st, const char *run, const struct sr_hist_logs *earlier,
                          struct sr_runsum_writer **out)
{
    struct sr_runsum_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->st = st;
    snprintf(w->run, sizeof(w->run), "%s", run);
    sr_hist_init(&w->h);
    if (earlier && take_earlier(w, earlier) < 0) {
        sr_hist_free(&w->h);
        free(w->sizes);
        free(w);
        return -ENOMEM;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    /* Every signal blocked in the thread: the supervisor takes them from
     * its own loop (a SIGCHLD taken here would never reach it). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const int e = pthread_create(&w->thread, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return -e;
    }
    *out = w;
    return 0;
}

void sr_runsum_writer_close(struct sr_runsum_writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    for (size_t i = 0; i < w->n_pend; i++)
        free(w->pend[i].log);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    sr_hist_free(&w->h);
    free(w->sizes);
    free(w);
}

/* Records attempt's log as bytes long in the store: 1 when that is news,
 * 0, or -ENOMEM. */
static int set_size(struct sr_runsum_writer *w, uint32_t attempt, uint64_t bytes)
{
    for (size_t i = 0; i < w->n_sizes; i++)
        if (w->sizes[i].attempt == attempt) {
            const int news = w->sizes[i].bytes != bytes;
            w->sizes[i].bytes = bytes;
            return news;
        }
    if (w->n_sizes == w->cap_sizes) {
        const size_t cap = w->cap_sizes ? 2 * w->cap_sizes : 16;
        struct log_size *v = realloc(w->sizes, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        w->sizes = v;
        w->cap_sizes = cap;
    }
    w->sizes[w->n_sizes++] = (struct log_size){attempt, bytes};
    return 1;
}

static uint64_t size_of(const struct sr_runsum_writer *w, uint32_t attempt)
{
    for (size_t i = 0; i < w->n_sizes; i++)
        if (w->sizes[i].attempt == attempt)
            return w->sizes[i].bytes;
    return 0;
}

static void fold(struct sr_history *h, const char *buf, size_t len)
{
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(buf + i, '\n', len - i);
        const size_t end = nl ? (size_t)(nl - buf) : len;
        if (end > i)
            sr_hist_add_line(h, buf + i, end - i); /* a cut line is skipped */
        i = end + 1;
    }
}

/* The logs of attempts before attempt, as the store has them (a wrapper
 * killed with -9 left its log: that attempt is vanished once ours starts). */
static int load_earlier(struct sr_runsum_writer *w, uint32_t attempt)
{
    char prefix[300];
    sr_key_run(prefix, sizeof(prefix), w->run, SR_KEY_EVENTS);
    struct sr_strlist names = {0};
    int rc = sr_store_list(w->st, prefix, &names);
    for (size_t i = 0; rc == 0 && i < names.n; i++) {
        const uint32_t a = sr_events_attempt_of(names.v[i]);
        if (a == UINT32_MAX || a >= attempt)
            continue;
        char key[600];
        sr_key_join(key, sizeof(key), prefix, names.v[i]);
        char *buf = NULL;
        size_t len = 0;
        const int g = sr_store_get(w->st, key, 256u << 20, &buf, &len);
        if (g == 0) {
            fold(&w->h, buf, len);
            rc = set_size(w, a, len) < 0 ? -ENOMEM : 0;
        } else if (g != -ENOENT && g != -EBADMSG && g != -EFBIG)
            rc = g;
        free(buf);
    }
    sr_strlist_free(&names);
    return rc;
}

static int write_summary(struct sr_runsum_writer *w)
{
    sr_hist_derive(&w->h);
    struct sr_runsum r;
    int rc = sr_runsum_from_history(&w->h, w->run, &r);
    for (size_t i = 0; rc == 0 && i < r.n_att; i++)
        r.att[i].log_bytes = size_of(w, r.att[i].attempt);
    json_t *o = rc == 0 ? sr_runsum_to_json(&r) : NULL;
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (rc == 0 && !text)
        rc = -ENOMEM;
    /* In summaries/, which one listing returns for every run (docs/store.md,
     * "summaries/"). */
    char key[300];
    sr_key_summaries(key, sizeof(key), w->run);
    if (rc == 0)
        rc = sr_store_put(w->st, key, text, strlen(text));
    free(text);
    json_decref(o);
    sr_runsum_free(&r);
    return rc;
}

/* Folds what attempt's log gained since the last time (stored: its size
 * in the store); 1 when it gained anything or its size changed, 0, or
 * -errno. */
static int take(struct sr_runsum_writer *w, uint32_t attempt, const char *log, size_t len,
                size_t stored)
{
    if (!w->loaded) {
        const int rc = load_earlier(w, attempt);
        if (rc < 0)
            return rc;
        w->loaded = 1;
    }
    size_t k = 0;
    while (k < w->n_logs && w->logs[k].attempt != attempt)
        k++;
    if (k == w->n_logs) {
        if (k == LOGS_MAX)
            return 0; /* restarted that often in one process: keep the last summary */
        w->logs[w->n_logs++].attempt = attempt;
    }
    const int news = set_size(w, attempt, stored);
    if (news < 0)
        return news;
    if (len <= w->logs[k].folded)
        return news;
    fold(&w->h, log + w->logs[k].folded, len - w->logs[k].folded);
    w->logs[k].folded = len;
    return 1;
}

static void failed(struct sr_runsum_writer *w, int rc)
{
    if (!w->warned)
        sr_warn("cannot write %s/%s.json (spotrun stats reads the event logs instead): %s",
                SR_KEY_SUMMARIES, w->run, sr_strerror(rc));
    else
        sr_debug("cannot write %s/%s.json: %s", SR_KEY_SUMMARIES, w->run, sr_strerror(rc));
    w->warned = 1;
}

static void *writer_main(void *arg)
{
    struct sr_runsum_writer *w = arg;
    struct pending got[LOGS_MAX];
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (w->n_pend == 0 && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        const size_t n = w->n_pend;
        memcpy(got, w->pend, n * sizeof(got[0]));
        w->n_pend = 0;
        const int stop = w->stop;
        pthread_mutex_unlock(&w->mu);
        int rc = 0, changed = 0;
        for (size_t i = 0; i < n; i++) {
            const int t =
                rc == 0 ? take(w, got[i].attempt, got[i].log, got[i].len, got[i].stored) : 0;
            if (t < 0)
                rc = t;
            changed |= t > 0;
            free(got[i].log);
        }
        if (rc == 0 && changed)
            rc = write_summary(w);
        if (rc < 0)
            failed(w, rc);
        if (stop && n == 0)
            return NULL;
    }
}

void sr_runsum_writer_flushed(void *ctx, uint32_t attempt, int node, const char *log, size_t len,
                              size_t stored)
{
    struct sr_runsum_writer *w = ctx;
    if (!w || node)
        return; /* a multi-node run: stats reads its logs */
    pthread_mutex_lock(&w->mu);
    size_t k = 0;
    while (k < w->n_pend && w->pend[k].attempt != attempt)
        k++;
    /* Flushes of a log come in order: a later one is newer (its summary
     * lines may have changed though the log proper did not grow). */
    if (k < LOGS_MAX && (k == w->n_pend || len >= w->pend[k].len)) {
        char *copy = malloc(len);
        if (copy) {
            memcpy(copy, log, len);
            if (k == w->n_pend)
                w->n_pend++;
            else
                free(w->pend[k].log);
            w->pend[k] = (struct pending){attempt, copy, len, stored};
            pthread_cond_signal(&w->cv);
        }
    }
    pthread_mutex_unlock(&w->mu);
}

void sr_runsum_mark_logs(struct sr_store *st, const char *run)
{
    char key[300], text[400];
    sr_key_summaries(key, sizeof(key), run);
    const int n =
        snprintf(text, sizeof(text), "{\"run\":\"%s\",\"summary\":\"none: read its logs\"}\n", run);
    const int rc = sr_store_put(st, key, text, (size_t)n);
    if (rc < 0) {
        sr_warn("cannot write %s (spotrun stats may miss this run until its next whole read): %s",
                key, sr_strerror(rc));
    }
}
