/*
 * notice_int.h - what the notice watchers share inside runtime/ (see
 * notice.h): the watcher object, the event queue, and a small HTTP helper
 * over libcurl whose waits sr_notice_stop() interrupts.
 */
#ifndef SPOTRUN_NOTICE_INT_H
#define SPOTRUN_NOTICE_INT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "evq.h"
#include "notice.h"

#define SR_NOTICE_MAX_THREADS 4         /* a watcher, GCP's second, the placement */
#define SR_NOTICE_MAX_BODY (256 * 1024) /* larger answers are refused */

struct sr_notice {
    enum sr_cloud cloud; /* as configured; the watcher resolves AUTO */
    char *aws_url, *gcp_url, *azure_url;
    int aws_set, gcp_set, azure_set; /* overridden (tests): probe only these */
    char *cache_path;
    int64_t poll_ms;
    atomic_int stop;

    pthread_mutex_t lock; /* the fields below */
    pthread_t threads[SR_NOTICE_MAX_THREADS];
    int nthreads;
    CURLM *multis[SR_NOTICE_MAX_THREADS]; /* woken by sr_notice_stop() */
    enum sr_cloud resolved;               /* the watched cloud, for the placement thread */
    struct sr_placement placement;
    int placement_known;
    struct sr_evq queue; /* events for the supervisor (sr_notice_post) */
};

/* One thread's HTTP client. */
struct sr_nw {
    struct sr_notice *n;
    CURLM *multi;
    CURL *easy;
    char last_warning[256]; /* each distinct problem is said once */
    int warned;             /* in this round */
};

struct sr_http {
    long status; /* 0 when no response */
    char *body;  /* NUL-terminated, owned; NULL when none */
    size_t len;
    int too_big;
    char etag[128], flavor[32]; /* ETag, Metadata-Flavor response headers */
    char error[CURL_ERROR_SIZE];
};

int sr_nw_init(struct sr_notice *n, struct sr_nw *w);
void sr_nw_free(struct sr_nw *w);
/* One request. headers: NULL-terminated "Name: value" lines. Returns 0 (a
 * response, any status), -ETIMEDOUT, -ECANCELED (stopping), -EMSGSIZE
 * (body over SR_NOTICE_MAX_BODY) or -EIO (r->error says why). */
int sr_nw_request(struct sr_nw *w, const char *method, const char *url, const char *const *headers,
                  const char *body, long timeout_ms, struct sr_http *r);
void sr_http_free(struct sr_http *r);
/* Sleeps ms; -ECANCELED when stopping. */
int sr_nw_sleep(struct sr_nw *w, int64_t ms);
static inline int sr_nw_stopping(const struct sr_nw *w)
{
    return atomic_load(&w->n->stop);
}
/* Warns once per distinct message (repeats go to debug). */
void sr_nw_warn(struct sr_nw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends a round of requests: when it had no warning, the last one is
 * forgotten (the service answers again, so a new failure is news). */
void sr_nw_round_end(struct sr_nw *w);

/* Queues an event for the supervisor. */
void sr_notice_post(struct sr_notice *n, const struct sr_notice_event *ev);
/* Starts another watcher thread running fn(n). */
int sr_notice_spawn(struct sr_notice *n, void *(*fn)(void *));
/* Monotonic deadline for a provider's wall time. */
int64_t sr_notice_mono(int64_t wall_ms);

/* The watchers (thread entry points take the struct sr_notice *). */
void sr_aws_watch(struct sr_nw *w);
void sr_gcp_watch(struct sr_nw *w);
void sr_azure_watch(struct sr_nw *w);
int sr_azure_ack(struct sr_notice *n, const char *event_id);

/* Asks cloud's metadata service where this instance runs, through w (so
 * that sr_notice_stop() interrupts it); instance.c. 0 when anything was
 * learnt, else -ENOENT or -ECANCELED. */
int sr_placement_fetch(struct sr_nw *w, enum sr_cloud cloud, struct sr_placement *out);

#endif
