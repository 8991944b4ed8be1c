/*
 * peers.c - notices and sets shared through the store by the wrappers of a
 * multi-node run (see peers.h).
 */
#include "peers.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evq.h"
#include "layout.h"
#include "lease.h"
#include "log.h"
#include "manifest.h"
#include "parts.h"
#include "units.h"

#define QUEUE_MAX 64
#define WATCH_MAX 64
#define SEEN_MAX 4096
#define NOTICE_MAX (64u << 10)
/* A notice's deadline is at most this long after it was made (cloud
 * notices are minutes; --grace and notify --deadline a few hours at most),
 * and it was made at most SKEW_MS in this machine's future. */
#define NOTICE_LEAD_MAX_MS (INT64_C(24) * 3600 * 1000)
#define SKEW_MS (INT64_C(10) * 60 * 1000)

struct sr_peers {
    struct sr_peers_config cfg;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int stopping, started;
    struct sr_evq queue; /* for the supervisor: never dropped (evq.h) */
    /* asked of the thread */
    char notify_source[40];
    int64_t notify_deadline;
    int notify;
    unsigned notify_asked, notify_done; /* sr_peers_notified() */
    uint64_t watch[WATCH_MAX];
    size_t nwatch;
    /* the thread's own */
    char **seen;
    size_t nseen;
    uint64_t newest_set;
};

static void post(struct sr_peers *p, const struct sr_peer_event *ev)
{
    (void)sr_evq_post(&p->queue, ev); /* -EPIPE: stopping, nobody takes it */
}

static void publish_notice(struct sr_peers *p, const char *source, int64_t deadline)
{
    const struct sr_peers_config *c = &p->cfg;
    const int64_t now = sr_wall_ms();
    if (deadline > now + NOTICE_LEAD_MAX_MS) /* what the other nodes would believe */
        deadline = now + NOTICE_LEAD_MAX_MS;
    char key[512];
    snprintf(key, sizeof(key), "%s/" SR_KEY_NOTICES "/%013" PRId64 "-r%u-e%" PRIu64 ".json",
             c->run_id, now, c->rank, c->epoch);
    json_t *o = json_pack("{s:i,s:I,s:s,s:I,s:I}", "rank", (int)c->rank, "epoch",
                          (json_int_t)c->epoch, "source", source, "deadline_unix_ms",
                          (json_int_t)deadline, "created_unix_ms", (json_int_t)now);
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    const int rc = body ? sr_store_put(c->st, key, body, strlen(body)) : -ENOMEM;
    free(body);
    if (rc < 0)
        sr_warn("cannot tell the other nodes of the notice: %s (they stop at their own notices "
                "or when their collectives fail)",
                sr_strerror(rc));
    else
        sr_info("notice published for the other %u node(s) of run %s", c->nodes - 1, c->run_id);
}

static int seen(struct sr_peers *p, const char *name)
{
    for (size_t i = 0; i < p->nseen; i++)
        if (strcmp(p->seen[i], name) == 0)
            return 1;
    if (p->nseen < SEEN_MAX) {
        char *copy = strdup(name);
        char **v = copy ? realloc(p->seen, (p->nseen + 1) * sizeof(*v)) : NULL;
        if (v) {
            p->seen = v;
            p->seen[p->nseen++] = copy;
        } else {
            free(copy);
        }
    }
    return 0;
}

/* Whether the origin's notice belongs to this incarnation of the group. */
static int fresh(const struct sr_peers *p, uint32_t rank, uint64_t epoch, int64_t created)
{
    const struct sr_peers_config *c = &p->cfg;
    struct sr_lease_info li;
    const int rc = sr_lease_read_rank(c->st, c->run_id, (int)rank, &li);
    if (rc == -ENOENT || epoch == 0) /* no leases: by the clock */
        return created >= c->started_wall_ms - 1000;
    if (rc < 0)
        return 0;
    /* Its origin still holds the lease: the group's current stop. Released:
     * that stop is over unless this wrapper was already running when the
     * notice was made (a rerun that starts right after the group stopped
     * must not take the last stop's notice as its own). */
    return li.epoch == epoch && (!li.released || created >= c->started_wall_ms);
}

/* "<unix_ms, 13 digits>-r<rank>-e<epoch>.json" exactly, as publish_notice
 * names it. */
static int parse_notice_name(const char *name, int64_t *ms, uint32_t *rank, uint64_t *epoch)
{
    long long t;
    unsigned r;
    unsigned long long e;
    char back[128];
    if (strlen(name) >= sizeof(back) || sscanf(name, "%13lld-r%u-e%llu.json", &t, &r, &e) != 3)
        return 0;
    snprintf(back, sizeof(back), "%013lld-r%u-e%llu.json", t, r, e);
    if (strcmp(back, name) != 0 || t < 0)
        return 0;
    *ms = t;
    *rank = r;
    *epoch = e;
    return 1;
}

/* A notice's source as publish_notice writes it: a name for the log. */
static int source_valid(const char *s)
{
    const size_t n = strlen(s);
    if (n == 0 || n >= sizeof(((struct sr_peer_event *)0)->source))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:._-", s[i]))
            return 0;
    return 1;
}

/* What is wrong with a notice's fields, checked against its key and
 * bounds (the store is untrusted: SECURITY.md), or NULL. */
static const char *notice_invalid(const struct sr_peers *p, const char *name, json_int_t rank,
                                  json_int_t epoch, const char *source, json_int_t deadline,
                                  json_int_t created)
{
    int64_t name_ms;
    uint32_t name_rank;
    uint64_t name_epoch;
    if (!parse_notice_name(name, &name_ms, &name_rank, &name_epoch))
        return "its name is not <unix_ms>-r<rank>-e<epoch>.json";
    if (rank < 0 || rank >= p->cfg.nodes)
        return "its rank is not a node of this run";
    if (epoch < 0 || (uint64_t)epoch > SR_EPOCH_MAX)
        return "its epoch is out of range";
    if ((uint64_t)rank != name_rank || (uint64_t)epoch != name_epoch || created != name_ms)
        return "its rank, epoch or time differ from its name's";
    if (created <= 0 || created > sr_wall_ms() + SKEW_MS)
        return "it was made in the future";
    if (deadline <= created || deadline - created > NOTICE_LEAD_MAX_MS)
        return "its deadline is not within 24h after it was made";
    if (!source_valid(source))
        return "its source is not a short name";
    return NULL;
}

/* One notice object: 1 (and *ev) when it is a fresh one of another node. */
static int parse_notice(const struct sr_peers *p, const char *name, struct sr_peer_event *out)
{
    const struct sr_peers_config *c = &p->cfg;
    char key[512], *buf = NULL;
    size_t len = 0;
    snprintf(key, sizeof(key), "%s/" SR_KEY_NOTICES "/%s", c->run_id, name);
    if (sr_store_get(c->st, key, NOTICE_MAX, &buf, &len) < 0)
        return 0;
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
    free(buf);
    json_int_t rank = -1, epoch = -1, deadline = 0, created = 0;
    const char *source = NULL, *why;
    if (!o ||
        json_unpack(o, "{s:I,s:I,s:s,s:I,s:I}", "rank", &rank, "epoch", &epoch, "source", &source,
                    "deadline_unix_ms", &deadline, "created_unix_ms", &created) != 0) {
        sr_warn("ignoring malformed notice %s", key);
    } else if ((why = notice_invalid(p, name, rank, epoch, source, deadline, created))) {
        sr_warn("ignoring notice %s: %s", key, why);
    } else if ((uint32_t)rank != c->rank && deadline > sr_wall_ms() &&
               fresh(p, (uint32_t)rank, (uint64_t)epoch, created)) {
        *out = (struct sr_peer_event){
            .kind = SR_PEER_NOTICE, .rank = (uint32_t)rank, .deadline_wall_ms = deadline};
        snprintf(out->source, sizeof(out->source), "%.39s", source);
        json_decref(o);
        return 1;
    }
    json_decref(o);
    return 0;
}

static void read_notice(struct sr_peers *p, const char *name)
{
    struct sr_peer_event ev;
    if (parse_notice(p, name, &ev))
        post(p, &ev);
}

int sr_peers_group_preempted(struct sr_peers *p)
{
    if (!p)
        return 0;
    char prefix[512];
    sr_key_run(prefix, sizeof(prefix), p->cfg.run_id, SR_KEY_NOTICES);
    struct sr_strlist names = {0};
    if (sr_store_list(p->cfg.st, prefix, &names) < 0)
        return 0;
    int found = 0;
    struct sr_peer_event ev;
    for (size_t i = 0; !found && i < names.n; i++)
        found = parse_notice(p, names.v[i], &ev);
    sr_strlist_free(&names);
    return found;
}

static void poll_notices(struct sr_peers *p)
{
    char prefix[512];
    sr_key_run(prefix, sizeof(prefix), p->cfg.run_id, SR_KEY_NOTICES);
    struct sr_strlist names = {0};
    if (sr_store_list(p->cfg.st, prefix, &names) < 0)
        return; /* the store hiccuped: next poll */
    for (size_t i = 0; i < names.n; i++)
        if (!seen(p, names.v[i]))
            read_notice(p, names.v[i]);
    sr_strlist_free(&names);
}

static void poll_sets(struct sr_peers *p)
{
    const struct sr_peers_config *c = &p->cfg;
    struct sr_lease_counts ctx = {.st = c->st, .run_id = c->run_id};
    uint64_t todo[WATCH_MAX], done[WATCH_MAX];
    size_t n, ndone = 0;
    pthread_mutex_lock(&p->mu);
    n = p->nwatch;
    memcpy(todo, p->watch, n * sizeof(todo[0]));
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < n; i++) {
        struct sr_manifest set;
        const int rc = todo[i] <= p->newest_set /* superseded by a newer set */
                           ? 2
                           : sr_set_complete(c->st, c->run_id, todo[i], c->nodes,
                                             sr_lease_part_counts, &ctx, &set, NULL);
        if (rc <= 0)
            continue; /* incomplete, or the store failed: next poll */
        done[ndone++] = todo[i];
        if (rc == 1 && todo[i] > p->newest_set) {
            p->newest_set = todo[i];
            const struct sr_peer_event ev = {.kind = SR_PEER_SET, .seq = todo[i], .step = set.step};
            post(p, &ev);
        }
    }
    pthread_mutex_lock(&p->mu);
    for (size_t k = 0; k < ndone; k++)
        for (size_t i = 0; i < p->nwatch; i++)
            if (p->watch[i] == done[k]) {
                p->watch[i] = p->watch[--p->nwatch];
                break;
            }
    pthread_mutex_unlock(&p->mu);
}

static void *peers_main(void *arg)
{
    struct sr_peers *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        if (p->notify) {
            char source[40];
            const int64_t deadline = p->notify_deadline;
            snprintf(source, sizeof(source), "%s", p->notify_source);
            p->notify = 0;
            const unsigned asked = p->notify_asked;
            pthread_mutex_unlock(&p->mu);
            publish_notice(p, source, deadline);
            pthread_mutex_lock(&p->mu);
            p->notify_done = asked;
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        poll_notices(p);
        poll_sets(p);
        pthread_mutex_lock(&p->mu);
        if (p->stopping || p->notify)
            continue;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += p->cfg.poll_ms / 1000;
        until.tv_nsec += (p->cfg.poll_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->cond, &p->mu, &until);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int sr_peers_start(const struct sr_peers_config *cfg, struct sr_peers **out)
{
    *out = NULL;
    struct sr_peers *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->cfg = *cfg;
    if (p->cfg.poll_ms < 50)
        p->cfg.poll_ms = 50;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cond, &ca);
    pthread_condattr_destroy(&ca);
    int rc = sr_evq_init(&p->queue, sizeof(struct sr_peer_event), QUEUE_MAX,
                         "the other nodes' notices and sets", NULL);
    if (rc == 0 && (rc = -pthread_create(&p->thread, NULL, peers_main, p)) == 0)
        p->started = 1;
    if (rc < 0) {
        sr_peers_stop(p);
        return rc;
    }
    *out = p;
    return 0;
}

void sr_peers_stop(struct sr_peers *p)
{
    if (!p)
        return;
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stopping = 1;
        pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->mu);
        sr_evq_close(&p->queue); /* the thread waiting for room returns */
        pthread_join(p->thread, NULL);
    }
    for (size_t i = 0; i < p->nseen; i++)
        free(p->seen[i]);
    free(p->seen);
    sr_evq_destroy(&p->queue);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int sr_peers_fd(const struct sr_peers *p)
{
    return p ? sr_evq_fd(&p->queue) : -1;
}

int sr_peers_take(struct sr_peers *p, struct sr_peer_event *ev)
{
    return p ? sr_evq_take(&p->queue, ev) : 0;
}

void sr_peers_notify(struct sr_peers *p, const char *source, int64_t deadline_wall_ms)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    snprintf(p->notify_source, sizeof(p->notify_source), "%s", source);
    p->notify_deadline = deadline_wall_ms;
    p->notify = 1;
    p->notify_asked++;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->mu);
}

int sr_peers_notified(struct sr_peers *p)
{
    if (!p)
        return 1;
    pthread_mutex_lock(&p->mu);
    const int done = p->notify_done == p->notify_asked;
    pthread_mutex_unlock(&p->mu);
    return done;
}

void sr_peers_watch(struct sr_peers *p, uint64_t seq)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    int have = 0;
    for (size_t i = 0; i < p->nwatch; i++)
        have |= p->watch[i] == seq;
    if (!have && p->nwatch < WATCH_MAX)
        p->watch[p->nwatch++] = seq;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->mu);
}
