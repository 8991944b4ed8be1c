/*
 * events.c - per-attempt JSON-lines event log (see events.h).
 */
#include "events.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event_kinds.h"
#include "layout.h"
#include "log.h"
#include "metricthin.h"
#include "units.h"

struct sr_events {
    struct sr_store *st;
    char key[512];
    uint32_t attempt;
    int node; /* multi-node rank, -1 = single node */
    pthread_mutex_t lock;
    char *buf;
    size_t len, cap;
    struct sr_metric_thin metrics; /* which metric values are written */
    sr_events_flushed_fn flushed;  /* the flush hook (events.h), under lock */
    void *flushed_ctx;
};

static sr_events_observer observer;
static void *observer_ctx;

void sr_events_on_flush(struct sr_events *ev, sr_events_flushed_fn fn, void *ctx)
{
    if (!ev)
        return;
    pthread_mutex_lock(&ev->lock);
    ev->flushed = fn;
    ev->flushed_ctx = ctx;
    pthread_mutex_unlock(&ev->lock);
}

static const char *const kind_names[SR_EV_COUNT] = {
#define SR_EV_NAME(id, name, what) [SR_EV_##id] = name,
    SR_EVENT_KINDS(SR_EV_NAME)
#undef SR_EV_NAME
};

enum sr_event_kind sr_event_kind_of(const char *name)
{
    for (int k = 1; name && k < SR_EV_COUNT; k++)
        if (strcmp(kind_names[k], name) == 0)
            return (enum sr_event_kind)k;
    return SR_EV_UNKNOWN;
}

const char *sr_event_name(enum sr_event_kind k)
{
    return k > SR_EV_UNKNOWN && k < SR_EV_COUNT ? kind_names[k] : "";
}

/* A kind the table does not name is a writer that forgot event_kinds.h:
 * said once, and written all the same (the readers skip it). */
static void check_kind(const char *type)
{
    static int said;
    if (sr_event_kind_of(type) == SR_EV_UNKNOWN && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        sr_warn("event kind \"%s\" is not in storage/run/event_kinds.h (add it there)",
                type ? type : "(null)");
}

void sr_events_observe(sr_events_observer fn, void *ctx)
{
    observer_ctx = ctx;
    observer = fn;
}

uint32_t sr_events_attempt_of(const char *name)
{
    const uint32_t a = sr_key_log_attempt(name, NULL);
    return a <= SR_ATTEMPT_MAX ? a : UINT32_MAX;
}

int sr_events_next_attempt(struct sr_store *st, const char *run_id, uint32_t *attempt)
{
    return sr_events_next_attempt_node(st, run_id, -1, attempt);
}

/* Whether the log `name` counts for node rank's attempts: every log for a
 * single-node run (rank < 0); else single-node logs and rank's own. */
static int counts_for(const char *name, int rank)
{
    int node = -1;
    (void)sr_key_log_attempt(name, &node);
    return rank < 0 || node < 0 || node == rank;
}

int sr_events_next_attempt_node(struct sr_store *st, const char *run_id, int rank,
                                uint32_t *attempt)
{
    struct sr_strlist names = {0};
    const int rc = sr_list_run(st, run_id, SR_KEY_EVENTS, &names);
    if (rc < 0)
        return rc;
    uint32_t next = 0;
    for (size_t i = 0; i < names.n; i++) {
        const uint32_t a = sr_events_attempt_of(names.v[i]);
        if (a == UINT32_MAX) {
            if (strstr(names.v[i], ".jsonl"))
                sr_warn("ignoring %s/" SR_KEY_EVENTS
                        "/%s: not an event log of spotrun's (attempts are 0 to %u)",
                        run_id, names.v[i], SR_ATTEMPT_MAX);
            continue;
        }
        if (a >= next && counts_for(names.v[i], rank))
            next = a < SR_ATTEMPT_MAX ? a + 1 : SR_ATTEMPT_MAX;
    }
    sr_strlist_free(&names);
    *attempt = next;
    return 0;
}

int sr_events_open(struct sr_events **out, struct sr_store *st, const char *run_id,
                   uint32_t attempt)
{
    struct sr_events *ev = calloc(1, sizeof(*ev));
    if (!ev)
        return -ENOMEM;
    ev->st = st;
    ev->attempt = attempt;
    sr_key_event_log(ev->key, sizeof(ev->key), run_id, attempt, -1);
    ev->node = -1;
    const int64_t budget = sr_metric_budget_env();
    if (budget < 0)
        sr_warn("ignoring SPOTRUN_METRIC_BUDGET: not a number of values from 1 to %d",
                SR_METRIC_BUDGET_MAX);
    sr_metric_thin_init(&ev->metrics, budget > 0 ? (uint64_t)budget : 0);
    pthread_mutex_init(&ev->lock, NULL);
    *out = ev;
    return 0;
}

void sr_events_set_node(struct sr_events *ev, const char *run_id, uint32_t rank)
{
    if (!ev)
        return;
    pthread_mutex_lock(&ev->lock);
    ev->node = (int)rank;
    sr_key_event_log(ev->key, sizeof(ev->key), run_id, ev->attempt, (int)rank);
    pthread_mutex_unlock(&ev->lock);
}

static void append(struct sr_events *ev, const char *line)
{
    const size_t n = strlen(line);
    if (ev->len + n + 2 > ev->cap) {
        const size_t cap = (ev->cap ? ev->cap * 2 : 4096) + n + 2;
        char *b = realloc(ev->buf, cap);
        if (!b)
            return;
        ev->buf = b;
        ev->cap = cap;
    }
    memcpy(ev->buf + ev->len, line, n);
    ev->len += n;
    ev->buf[ev->len++] = '\n';
    ev->buf[ev->len] = '\0';
}

/* Whether the event line is written: every event but the metric values
 * thinned past the budget (metricthin.h), which only their name's
 * metric_summary counts. Under ev->lock. */
static int write_metric(struct sr_events *ev, const char *type, const json_t *o)
{
    if (sr_event_kind_of(type) != SR_EV_METRIC)
        return 1;
    const char *name = json_string_value(json_object_get(o, "name"));
    const json_t *step = json_object_get(o, "step");
    int w = 1;
    if (name && json_is_number(json_object_get(o, "value")))
        w = sr_metric_thin_add(&ev->metrics, name, json_number_value(json_object_get(o, "value")),
                               json_is_integer(step) ? json_integer_value(step) : -1,
                               json_integer_value(json_object_get(o, "unix_ms")));
    if (w < 0 && !ev->metrics.full_warned) {
        sr_warn("the metric %s is not recorded: an attempt records at most %d metric names", name,
                SR_METRIC_NAMES_MAX);
        ev->metrics.full_warned = 1;
    }
    return w > 0;
}

/* The fewest significant digits (1..17) that print x so that it reads back
 * as x, in plain notation where 17 digits print it so (10, not 1e1): 17
 * always do. */
static int digits_of(double x)
{
    char full[40], buf[40];
    snprintf(full, sizeof(full), "%.17g", x);
    const int plain = !strchr(full, 'e');
    for (int p = 1; p < 17; p++) {
        snprintf(buf, sizeof(buf), "%.*g", p, x);
        if (strtod(buf, NULL) == x && (!plain || !strchr(buf, 'e')))
            return p;
    }
    return 17;
}

/* The most digits any real of v needs (0 when it holds none). */
static int digits_in(const json_t *v, int depth)
{
    int p = 0;
    if (json_is_real(v))
        return digits_of(json_real_value(v));
    if (depth > 32)
        return 17;
    if (json_is_array(v)) {
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e)
        {
            const int q = digits_in(e, depth + 1);
            p = q > p ? q : p;
        }
    } else if (json_is_object(v)) {
        const char *k;
        const json_t *e;
        json_object_foreach((json_t *)v, k, e)
        {
            const int q = digits_in(e, depth + 1);
            p = q > p ? q : p;
        }
    }
    return p;
}

/* jansson prints every real with 17 digits (JSON_REAL_PRECISION(0)), the
 * noise of binary fractions included; one precision serves a whole dump:
 * the fewest the line's reals need. */
char *sr_events_dumps(const json_t *o, size_t flags)
{
    const int p = digits_in(o, 0);
    return json_dumps(o, flags | JSON_REAL_PRECISION(p > 0 ? p : 17));
}

/* Fields without a value are left out of the line (docs/events.md). */
static void drop_nulls(json_t *obj)
{
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(obj, tmp, k, v)
    {
        if (json_is_null(v))
            json_object_del(obj, k);
    }
}

void sr_events_emit(struct sr_events *ev, const char *type, json_t *fields)
{
    if (!ev) {
        json_decref(fields);
        return;
    }
    check_kind(type);
    const int64_t now = sr_wall_ms();
    const time_t secs = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char iso[32];
    strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *obj = json_pack("{s:s,s:s,s:I,s:I}", "event", type, "time", iso, "unix_ms",
                            (json_int_t)now, "attempt", (json_int_t)ev->attempt);
    if (ev->node >= 0)
        json_object_set_new(obj, "node", json_integer(ev->node));
    if (fields)
        json_object_update(obj, fields);
    json_decref(fields);
    drop_nulls(obj);
    char *line = sr_events_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (observer)
        observer(observer_ctx, obj);
    if (line) {
        pthread_mutex_lock(&ev->lock);
        if (write_metric(ev, type, obj))
            append(ev, line);
        pthread_mutex_unlock(&ev->lock);
    }
    json_decref(obj);
    free(line);
}

void sr_events_tell(const char *type, json_t *fields)
{
    check_kind(type);
    json_t *obj = json_pack("{s:s,s:I}", "event", type, "unix_ms", (json_int_t)sr_wall_ms());
    if (obj && fields)
        json_object_update(obj, fields);
    json_decref(fields);
    if (obj && observer)
        observer(observer_ctx, obj);
    json_decref(obj);
}

/* One name's metric_summary line (docs/events.md), at its last value's time. */
static void append_summary(struct sr_events *ev, const struct sr_metric_name *m)
{
    const time_t secs = (time_t)(m->last_ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char iso[32];
    strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *o =
        json_pack("{s:s,s:s,s:I,s:I}", "event", sr_event_name(SR_EV_METRIC_SUMMARY), "time", iso,
                  "unix_ms", (json_int_t)m->last_ms, "attempt", (json_int_t)ev->attempt);
    if (!o)
        return;
    if (ev->node >= 0)
        json_object_set_new(o, "node", json_integer(ev->node));
    json_object_set_new(o, "name", json_string(m->name));
    json_object_set_new(o, "count", json_integer((json_int_t)m->count));
    json_object_set_new(o, "dropped", json_integer((json_int_t)m->dropped));
    const struct {
        const char *key, *step_key;
        double v;
        int64_t step;
    } vals[] = {{"last", "last_step", m->last, m->last_step},
                {"min", "min_step", m->min, m->min_step},
                {"max", "max_step", m->max, m->max_step}};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        json_object_set_new(o, vals[i].key, json_real(vals[i].v));
        if (vals[i].step >= 0)
            json_object_set_new(o, vals[i].step_key, json_integer(vals[i].step));
    }
    char *line = sr_events_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (line)
        append(ev, line);
    free(line);
}

int sr_events_flush(struct sr_events *ev)
{
    if (!ev)
        return 0;
    pthread_mutex_lock(&ev->lock);
    /* The log proper only grows; the summaries of thinned metrics follow
     * it in the store, rewritten at each flush. */
    const size_t base = ev->len;
    for (size_t i = 0; i < ev->metrics.n; i++)
        if (ev->metrics.v[i].dropped)
            append_summary(ev, &ev->metrics.v[i]);
    const size_t stored = ev->len;
    const int rc = sr_store_put(ev->st, ev->key, ev->buf ? ev->buf : "", stored);
    ev->len = base;
    if (ev->buf)
        ev->buf[base] = '\0';
    /* The hook only copies (events.h): the log's lock is held a moment more. */
    if (rc == 0 && ev->flushed && ev->len)
        ev->flushed(ev->flushed_ctx, ev->attempt, ev->node >= 0, ev->buf, ev->len, stored);
    pthread_mutex_unlock(&ev->lock);
    if (rc < 0)
        sr_warn("cannot write the event log %s: %s", ev->key, sr_strerror(rc));
    return rc;
}

void sr_events_close(struct sr_events *ev)
{
    if (!ev)
        return;
    sr_events_flush(ev);
    pthread_mutex_destroy(&ev->lock);
    free(ev->buf);
    free(ev);
}
