/*
 * sweep_workers.c - sweep workers' lifetimes in the store (see
 * sweep_workers.h).
 */
#include "sweep_workers.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "log.h"
#include "sweep.h"

#define RECORD_MAX (4u << 20)                /* bytes of one record */
#define TIME_MAX_MS INT64_C(253402300799999) /* 9999-12-31, as history.h */
#define PRICE_MAX 1e12

int64_t sr_sweep_worker_until(const struct sr_sweep_worker *w)
{
    return w->end_ms ? w->end_ms : w->alive_ms;
}

/* The host as a key part: [A-Za-z0-9._-], others '_', at most 64. */
static void host_part(const char *host, char *buf, size_t len)
{
    size_t n = 0;
    for (const char *c = host; *c && n + 1 < len && n < 64; c++)
        buf[n++] = isalnum((unsigned char)*c) || strchr("._-", *c) ? *c : '_';
    if (!n && len > 1)
        buf[n++] = '_';
    buf[n] = '\0';
}

int sr_sweep_worker_add_trial(struct sr_sweep_worker *w, long k)
{
    for (size_t i = 0; i < w->n_trials; i++)
        if (w->trials[i] == k)
            return 0;
    if (w->n_trials >= SR_SWEEP_WORKER_TRIALS_MAX)
        return 0;
    long *t = realloc(w->trials, (w->n_trials + 1) * sizeof(*t));
    if (!t)
        return -ENOMEM;
    w->trials = t;
    w->trials[w->n_trials++] = k;
    return 0;
}

int sr_sweep_worker_put(struct sr_store *st, const char *sweep, const struct sr_sweep_worker *w)
{
    json_t *trials = json_array();
    for (size_t i = 0; trials && i < w->n_trials; i++)
        json_array_append_new(trials, json_integer(w->trials[i]));
    json_t *o =
        json_pack("{s:i,s:s,s:s,s:I,s:I,s:I,s:f,s:i,s:o}", "format", 1, "sweep", sweep, "host",
                  w->host, "pid", (json_int_t)w->pid, "start_ms", (json_int_t)w->start_ms,
                  "alive_ms", (json_int_t)w->alive_ms, "price_per_hour", w->price_per_hour, "slots",
                  (int)w->slots, "trials", trials ? trials : json_array());
    if (o && w->end_ms)
        json_object_set_new(o, "end_ms", json_integer(w->end_ms));
    char *s = o ? json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s)
        return -ENOMEM;
    char host[80], key[512];
    host_part(w->host, host, sizeof(host));
    sr_key_sweep(key, sizeof(key), sweep, SR_SWEEP_WORKERS "/%s-%ld-%" PRId64 ".json", host, w->pid,
                 w->start_ms);
    const int rc = sr_store_put(st, key, s, strlen(s));
    free(s);
    return rc;
}

static int int_of(const json_t *o, const char *k, int64_t lo, int64_t hi, int64_t *out)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = json_integer_value(v);
    return 0;
}

/* A record's fields, all in range, else -EBADMSG. */
static int parse(const json_t *o, const char *sweep, struct sr_sweep_worker *w)
{
    const json_t *sw = json_object_get(o, "sweep"), *host = json_object_get(o, "host");
    const json_t *price = json_object_get(o, "price_per_hour"),
                 *trials = json_object_get(o, "trials");
    int64_t pid, slots;
    if (!json_is_object(o) || !json_is_string(sw) || strcmp(json_string_value(sw), sweep) != 0 ||
        !json_is_string(host) || json_string_length(host) >= sizeof(w->host) ||
        int_of(o, "pid", 1, INT32_MAX, &pid) || int_of(o, "slots", 1, 256, &slots) ||
        int_of(o, "start_ms", 0, TIME_MAX_MS, &w->start_ms) ||
        int_of(o, "alive_ms", w->start_ms, TIME_MAX_MS, &w->alive_ms) || !json_is_number(price) ||
        !(json_number_value(price) >= 0 && json_number_value(price) <= PRICE_MAX) ||
        !json_is_array(trials) || json_array_size(trials) > SR_SWEEP_WORKER_TRIALS_MAX)
        return -EBADMSG;
    if (json_object_get(o, "end_ms") && int_of(o, "end_ms", w->start_ms, TIME_MAX_MS, &w->end_ms))
        return -EBADMSG;
    const char *h = json_string_value(host);
    for (const char *c = h; *c; c++)
        if (iscntrl((unsigned char)*c))
            return -EBADMSG;
    snprintf(w->host, sizeof(w->host), "%s", h);
    w->pid = (long)pid;
    w->slots = (unsigned)slots;
    w->price_per_hour = json_number_value(price);
    for (size_t i = 0; i < json_array_size(trials); i++) {
        const json_t *t = json_array_get(trials, i);
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > INT32_MAX)
            return -EBADMSG;
        if (sr_sweep_worker_add_trial(w, (long)json_integer_value(t)) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* One record into *w: 0, -EBADMSG (skipped, said) or a store error. */
static int read_one(struct sr_store *st, const char *sweep, const char *name,
                    struct sr_sweep_worker *w)
{
    char key[512];
    sr_key_sweep(key, sizeof(key), sweep, SR_SWEEP_WORKERS "/%s", name);
    char *buf = NULL;
    size_t len = 0;
    int rc = sr_store_get(st, key, RECORD_MAX, &buf, &len);
    if (rc == -ENOENT || rc == -EBADMSG || rc == -EFBIG) {
        return -EBADMSG; /* gone meanwhile, or not a regular object */
    }
    if (rc < 0)
        return rc;
    json_error_t err;
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
    free(buf);
    memset(w, 0, sizeof(*w));
    rc = parse(o, sweep, w);
    json_decref(o);
    if (rc < 0) {
        free(w->trials);
        memset(w, 0, sizeof(*w));
    }
    if (rc == -EBADMSG)
        sr_warn("ignoring the sweep worker record %s: not a record of this sweep (fields "
                "missing or out of range); its hours are not counted: remove it",
                key);
    return rc;
}

int sr_sweep_workers_read(struct sr_store *st, const char *sweep, struct sr_sweep_worker **out,
                          size_t *n)
{
    *out = NULL;
    *n = 0;
    struct sr_strlist l;
    int rc = sr_list_sweep(st, sweep, SR_SWEEP_WORKERS, &l);
    if (rc == -ENOENT) {
        return 0;
    }
    if (rc < 0)
        return rc;
    struct sr_sweep_worker *v = calloc(l.n ? l.n : 1, sizeof(*v));
    if (!v)
        rc = -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; rc == 0 && i < l.n && k < SR_SWEEP_WORKERS_MAX; i++) {
        const size_t len = strlen(l.v[i]);
        if (len < 6 || strcmp(l.v[i] + len - 5, ".json") != 0)
            continue;
        const int r = read_one(st, sweep, l.v[i], &v[k]);
        if (r == 0)
            k++;
        else if (r != -EBADMSG)
            rc = r;
    }
    sr_strlist_free(&l);
    if (rc < 0) {
        sr_sweep_workers_free(v, k);
        return rc;
    }
    *out = v;
    *n = k;
    return 0;
}

/* The record name (of the listing's key) as cache holds it when listed
 * with etag, else read: a new reference, or NULL (gone, unreadable: 0). */
static int cached_or_read(struct sr_store *st, const char *key, const char *etag,
                          const json_t *cached, json_t **o)
{
    *o = NULL;
    const char *was = json_string_value(json_object_get(cached, "etag"));
    if (etag && was && strcmp(was, etag) == 0 && json_object_get(cached, "record")) {
        *o = json_incref(json_object_get(cached, "record"));
        return 0;
    }
    char *buf = NULL;
    size_t len = 0;
    const int rc = sr_store_get(st, key, RECORD_MAX, &buf, &len);
    if (rc == -ENOENT || rc == -EBADMSG || rc == -EFBIG) {
        return 0;
    }
    if (rc == 0)
        *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
    free(buf);
    return rc;
}

int sr_sweep_workers_read_cached(struct sr_store *st, const char *sweep, const json_t *cache,
                                 json_t **fresh, struct sr_sweep_worker **out, size_t *n)
{
    *fresh = NULL;
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "sweeps/%s/workers/", sweep);
    struct sr_strlist l;
    int rc = sr_store_list_keys(st, prefix, &l);
    if (rc == -ENOTSUP)
        return sr_sweep_workers_read(st, sweep, out, n);
    if (rc < 0)
        return rc;
    struct sr_sweep_worker *v = calloc(l.n ? l.n : 1, sizeof(*v));
    *fresh = json_object();
    rc = v && *fresh ? 0 : -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; rc == 0 && i < l.n && k < SR_SWEEP_WORKERS_MAX; i++) {
        const char *name = l.v[i] + strlen(prefix), *etag = sr_strlist_etag(&l, i);
        const size_t len = strlen(name);
        json_t *o;
        if (len < 6 || strchr(name, '/') || strcmp(name + len - 5, ".json") != 0 ||
            (rc = cached_or_read(st, l.v[i], etag, json_object_get(cache, name), &o)) < 0)
            continue;
        int r = o ? parse(o, sweep, &v[k]) : -EBADMSG;
        if (r == 0 && etag &&
            json_object_set_new(*fresh, name, json_pack("{s:s, s:O}", "etag", etag, "record", o)))
            r = -ENOMEM;
        json_decref(o);
        if (r == 0) {
            k++;
            continue;
        }
        free(v[k].trials);
        memset(&v[k], 0, sizeof(v[k]));
        if (r == -ENOMEM)
            rc = r;
        else if (o)
            sr_warn("ignoring the sweep worker record %s: not a record of this sweep (fields "
                    "missing or out of range); its hours are not counted: remove it",
                    l.v[i]);
    }
    sr_strlist_free(&l);
    if (rc < 0) {
        sr_sweep_workers_free(v, k);
        json_decref(*fresh);
        *fresh = NULL;
        return rc;
    }
    *out = v;
    *n = k;
    return 0;
}

void sr_sweep_workers_free(struct sr_sweep_worker *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].trials);
    free(v);
}
