/*
 * runsum.c - a run's summary (summaries/<run>.json): from a history, to and from
 * JSON, and every run of a store read from summaries (see runsum.h).
 *
 * from_json is the only door from the store into a struct sr_runsum: it
 * checks every field against the same bounds history.c holds event lines
 * to, so a summary can never say more than the event logs could.
 */
#include "runsum.h"
#include "layout.h"
#include "runsum_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "catalog.h"
#include "events.h"
#include "lease.h"
#include "log.h"
#include "manifest.h"
#include "parallel.h"
#include "units.h"

#define NODES_MAX 65536
#define GPUS_MAX 4096
#define PRICE_MAX 1e15   /* per hour, as history.c reads a start event */
#define SECONDS_MAX 1e10 /* a staging time, summed */
#define NOTICES_MAX 1000000u
#define SAMPLES_MAX (UINT64_C(1) << 53)
#define LOG_BYTES_MAX (INT64_C(1) << 50) /* a log's size, as read back */

void sr_runsum_free(struct sr_runsum *r)
{
    if (!r)
        return;
    free(r->att);
    r->att = NULL;
    r->n_att = 0;
}

/* ---- from a history ---------------------------------------------------------- */

/* src into dst as from_json will take it back: control characters made
 * '?', and a UTF-8 sequence that history.c's copy cut short dropped
 * (JSON strings must be valid UTF-8). */
static void copy_clean(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src);
    size_t n = strlen(dst);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
            dst[i] = '?';
    size_t lead = n;
    while (lead > 0 && ((unsigned char)dst[lead - 1] & 0xC0) == 0x80)
        lead--; /* back over continuation bytes */
    if (lead > 0 && (unsigned char)dst[lead - 1] >= 0xC0) {
        const unsigned char c = (unsigned char)dst[lead - 1];
        const size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (n - (lead - 1) < want)
            dst[lead - 1] = '\0';
    }
}

int sr_runsum_from_history(const struct sr_history *h, const char *run, struct sr_runsum *out)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->run, sizeof(out->run), "%s", run);
    out->labels = h->labels;
    out->state = h->state;
    if (h->n_att == 0)
        return 0;
    out->att = calloc(h->n_att, sizeof(*out->att));
    if (!out->att)
        return -ENOMEM;
    for (size_t i = 0; i < h->n_att; i++) {
        const struct sr_hist_attempt *a = &h->att[i];
        struct sr_runsum_attempt *s = &out->att[out->n_att++];
        s->attempt = a->attempt;
        s->nodes = a->nodes ? a->nodes : 1;
        copy_clean(s->host, sizeof(s->host), a->host);
        copy_clean(s->cloud, sizeof(s->cloud), a->cloud);
        copy_clean(s->instance_type, sizeof(s->instance_type), a->instance_type);
        copy_clean(s->zone, sizeof(s->zone), a->zone);
        s->start_ms = a->start_ms;
        s->cause = a->cause;
        s->end_ms = a->cause != SR_CAUSE_NONE ? a->end_ms : a->last_ms;
        if (s->end_ms < s->start_ms) /* an exit logged before the start (clock steps) */
            s->end_ms = s->start_ms;
        s->lost_ms = a->lost_ms > 0 ? a->lost_ms : 0;
        s->price_per_hour = a->price_per_hour;
        s->gpus = a->gpu_devices;
        s->gpu_samples = a->gpu_samples;
        s->gpu_util_mean = a->gpu_util_mean;
        s->gpu_idle_share = a->gpu_idle_share;
        for (size_t k = 0; k < h->n_ck; k++)
            if (h->ck[k].attempt == a->attempt)
                s->stage_seconds += h->ck[k].stage_seconds;
        for (size_t k = 0; k < h->n_no; k++)
            s->notices += h->no[k].attempt == a->attempt;
        if (a->cause == SR_CAUSE_PREEMPTED)
            copy_clean(s->notice_source, sizeof(s->notice_source), a->notice_source);
    }
    return 0;
}

/* ---- to JSON ----------------------------------------------------------------- */

static const char *const state_names[] = {"new",  "checkpointed", "running", "preempted",
                                          "done", "failed",       "stopped", "vanished"};
#define N_STATES (sizeof(state_names) / sizeof(state_names[0]))

static json_t *attempt_to_json(const struct sr_runsum_attempt *a)
{
    json_t *o = json_pack(
        "{s:I, s:I, s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:I, s:f, s:I, s:I, s:f, "
        "s:f, s:f, s:I, s:I}",
        "attempt", (json_int_t)a->attempt, "nodes", (json_int_t)a->nodes, "host", a->host, "cloud",
        a->cloud, "instance_type", a->instance_type, "zone", a->zone, "start_ms",
        (json_int_t)a->start_ms, "end_ms", (json_int_t)a->end_ms, "cause",
        sr_hist_cause_name(a->cause), "lost_ms", (json_int_t)a->lost_ms, "price_per_hour",
        a->price_per_hour, "gpus", (json_int_t)a->gpus, "gpu_samples", (json_int_t)a->gpu_samples,
        "gpu_util_mean", a->gpu_util_mean, "gpu_idle_share", a->gpu_idle_share, "stage_seconds",
        a->stage_seconds, "notices", (json_int_t)a->notices, "log_bytes", (json_int_t)a->log_bytes);
    if (o && a->notice_source[0] &&
        json_object_set_new(o, "notice_source", json_string(a->notice_source)) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int sr_runsum_digest(const json_t *o, char out[17])
{
    json_t *c = json_deep_copy(o);
    if (c)
        json_object_del(c, "digest");
    char *text = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(c);
    if (!text)
        return -ENOMEM;
    snprintf(out, 17, "%016llx", (unsigned long long)XXH64(text, strlen(text), 0));
    free(text);
    return 0;
}

json_t *sr_runsum_to_json(const struct sr_runsum *r)
{
    json_t *atts = json_array();
    for (size_t i = 0; atts && i < r->n_att; i++)
        if (json_array_append_new(atts, attempt_to_json(&r->att[i])) < 0) {
            json_decref(atts);
            return NULL;
        }
    const unsigned st = (unsigned)r->state < N_STATES ? r->state : SR_STATE_NEW;
    json_t *o =
        json_pack("{s:i, s:s, s:s, s:o, s:o}", "version", SR_RUNSUM_VERSION, "run", r->run, "state",
                  state_names[st], "labels", sr_labels_to_json(&r->labels), "attempts", atts);
    char digest[17];
    if (o && (sr_runsum_digest(o, digest) < 0 ||
              json_object_set_new(o, "digest", json_string(digest)))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---- from JSON --------------------------------------------------------------- */

/* A string field of at most size - 1 bytes, no control characters. */
static int get_str(const json_t *o, const char *key, char *dst, size_t size)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return -1;
    const char *s = json_string_value(v);
    const size_t n = json_string_length(v);
    if (n >= size || strlen(s) != n) /* embedded NUL */
        return -1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return -1;
    memcpy(dst, s, n + 1);
    return 0;
}

static int get_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *dst)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return -1;
    const json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return -1;
    *dst = (int64_t)x;
    return 0;
}

/* An integer or a real (jansson writes 0.0 as 0.0, others may write 0). */
static int get_real(const json_t *o, const char *key, double lo, double hi, double *dst)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return -1;
    const double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return -1;
    *dst = x;
    return 0;
}

static int cause_of(const char *name, enum sr_hist_cause *c)
{
    for (int i = 0; i < SR_CAUSE_COUNT; i++)
        if (strcmp(name, sr_hist_cause_name((enum sr_hist_cause)i)) == 0) {
            *c = (enum sr_hist_cause)i;
            return 0;
        }
    return -1;
}

static int attempt_from_json(const json_t *o, struct sr_runsum_attempt *a)
{
    int64_t attempt, nodes, start, end, lost, gpus, samples, notices, log_bytes;
    char cause[32];
    if (!json_is_object(o) || get_int(o, "attempt", 0, SR_ATTEMPT_MAX, &attempt) ||
        get_int(o, "nodes", 1, NODES_MAX, &nodes) || get_str(o, "host", a->host, sizeof(a->host)) ||
        get_str(o, "cloud", a->cloud, sizeof(a->cloud)) ||
        get_str(o, "instance_type", a->instance_type, sizeof(a->instance_type)) ||
        get_str(o, "zone", a->zone, sizeof(a->zone)) ||
        get_int(o, "start_ms", 0, SR_TIME_MAX_MS, &start) ||
        get_int(o, "end_ms", start, SR_TIME_MAX_MS, &end) ||
        get_str(o, "cause", cause, sizeof(cause)) || cause_of(cause, &a->cause) ||
        get_int(o, "lost_ms", 0, SR_TIME_MAX_MS, &lost) ||
        get_real(o, "price_per_hour", 0, PRICE_MAX, &a->price_per_hour) ||
        get_int(o, "gpus", 0, GPUS_MAX, &gpus) ||
        get_int(o, "gpu_samples", 0, (int64_t)SAMPLES_MAX, &samples) ||
        get_real(o, "gpu_util_mean", 0, 100, &a->gpu_util_mean) ||
        get_real(o, "gpu_idle_share", 0, 1, &a->gpu_idle_share) ||
        get_real(o, "stage_seconds", 0, SECONDS_MAX, &a->stage_seconds) ||
        get_int(o, "notices", 0, NOTICES_MAX, &notices) ||
        get_int(o, "log_bytes", 0, LOG_BYTES_MAX, &log_bytes) ||
        (json_object_get(o, "notice_source") && /* optional */
         get_str(o, "notice_source", a->notice_source, sizeof(a->notice_source))))
        return -1;
    a->log_bytes = (uint64_t)log_bytes;
    a->attempt = (uint32_t)attempt;
    a->nodes = (uint32_t)nodes;
    a->start_ms = start;
    a->end_ms = end;
    a->lost_ms = lost;
    a->gpus = (unsigned)gpus;
    a->gpu_samples = (uint64_t)samples;
    a->notices = (unsigned)notices;
    return 0;
}

int sr_runsum_from_json(const json_t *obj, struct sr_runsum *out)
{
    memset(out, 0, sizeof(*out));
    int64_t version;
    char state[32];
    const json_t *labels = json_object_get(obj, "labels");
    const json_t *atts = json_object_get(obj, "attempts");
    const char *digest = json_string_value(json_object_get(obj, "digest"));
    char want[17];
    if (!json_is_object(obj) || !digest)
        goto bad;
    if (sr_runsum_digest(obj, want) < 0)
        return -ENOMEM;
    if (strcmp(digest, want) != 0 ||
        get_int(obj, "version", SR_RUNSUM_VERSION, SR_RUNSUM_VERSION, &version) ||
        get_str(obj, "run", out->run, sizeof(out->run)) || !sr_manifest_run_id_valid(out->run) ||
        get_str(obj, "state", state, sizeof(state)) || !json_is_object(labels) ||
        !json_is_array(atts) || json_array_size(atts) > SR_RUNSUM_ATT_MAX)
        goto bad;
    out->state = N_STATES;
    for (unsigned i = 0; i < N_STATES; i++)
        if (strcmp(state, state_names[i]) == 0)
            out->state = (enum sr_hist_state)i;
    if ((unsigned)out->state == N_STATES)
        goto bad;
    if (sr_labels_from_json(&out->labels, labels) != 0 || out->labels.n != json_object_size(labels))
        goto bad; /* a label the rules drop: the summary is not ours */
    const size_t n = json_array_size(atts);
    if (n) {
        out->att = calloc(n, sizeof(*out->att));
        if (!out->att) {
            memset(out, 0, sizeof(*out));
            return -ENOMEM;
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct sr_runsum_attempt *a = &out->att[i];
        if (attempt_from_json(json_array_get(atts, i), a) != 0)
            goto bad;
        if (i > 0 && a->attempt <= out->att[i - 1].attempt)
            goto bad; /* in order, each once */
        out->n_att++;
    }
    return 0;
bad:
    sr_runsum_free(out);
    memset(out, 0, sizeof(*out));
    return -EBADMSG;
}

int sr_runsum_parse(const char *buf, size_t len, struct sr_runsum *out)
{
    memset(out, 0, sizeof(*out));
    json_error_t err;
    json_t *obj = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
    if (!obj)
        return -EBADMSG;
    const int rc = sr_runsum_from_json(obj, out);
    json_decref(obj);
    return rc;
}

/* ---- every run of a store ---------------------------------------------------- */

/* 1 when the summary's attempts are exactly those of the listed logs, each
 * a single-node log ("000012.jsonl") of the size it had when the summary
 * folded it: a log that changed since (or a summary that says otherwise)
 * is read instead, and a multi-node run's summary (there should be none)
 * is never believed. */
static int matches_logs(const struct sr_runsum *r, const struct sr_strlist *logs)
{
    size_t k = 0;
    for (size_t i = 0; i < logs->n; i++) {
        const char *name = logs->v[i];
        const uint32_t a = sr_events_attempt_of(name);
        if (a == UINT32_MAX)
            continue; /* not a log (history.c ignores it too) */
        if (strchr(name, '-'))
            return 0; /* a node's log */
        if (k >= r->n_att || r->att[k].attempt != a || r->att[k].log_bytes == 0 ||
            r->att[k].log_bytes != sr_strlist_size(logs, i))
            return 0;
        k++;
    }
    return k == r->n_att;
}

/* The run's history from its listed logs, the DONE marker read first when
 * the listing did not say (h is initialized: the caller frees it). */
static int history_of(struct sr_store *st, const char *run, struct sr_runsum_listed *l,
                      struct sr_history *h)
{
    sr_hist_init(h);
    if (l->done < 0) {
        const int d = sr_ckpt_is_done(st, run);
        if (d < 0)
            return d;
        l->done = d;
    }
    return sr_hist_load_logs(st, run, &l->logs, l->done, h);
}

/* The run's summary when it is usable, else its event logs. */
static int load_run(struct sr_store *st, const char *run, struct sr_runsum_listed *l,
                    struct sr_runsum *out)
{
    if (l->summary) {
        char key[512];
        sr_key_summaries(key, sizeof(key), run);
        char *buf = NULL;
        size_t len = 0;
        int rc = sr_store_get(st, key, SR_RUNSUM_BYTES_MAX, &buf, &len);
        if (rc == 0) {
            rc = sr_runsum_parse(buf, len, out);
            free(buf);
            if (rc == 0 && out->state != SR_STATE_DONE && l->done < 0) {
                const int d = sr_ckpt_is_done(st, run);
                if (d < 0) {
                    sr_runsum_free(out);
                    return d;
                }
                l->done = d;
            }
            if (rc == 0 && strcmp(out->run, run) == 0 && matches_logs(out, &l->logs) &&
                (!l->done || out->state == SR_STATE_DONE))
                return 0;
            if (rc == -ENOMEM)
                return rc;
            sr_runsum_free(out);
        } else if (rc == -ENOMEM) {
            return rc;
        }
        sr_err_clear(); /* missing meanwhile, unreadable, too large: the logs say */
    }
    struct sr_history h;
    int rc = history_of(st, run, l, &h);
    if (rc == 0)
        rc = sr_runsum_from_history(&h, run, out);
    sr_hist_free(&h);
    out->from_logs = 1;
    return rc;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

#define THREADS 16 /* GETs in flight (S3 keeps a connection per handle) */

struct loader {
    struct sr_store *st;
    struct sr_strlist runs;
    struct sr_runsum_listed *l; /* per run */
    struct sr_runsum *v;        /* per run */
    struct sr_strlist sums;     /* summaries/<run>.json as listed: run, size, ETag */
    struct sr_strlist snaps;    /* summaries/snap/ as listed */
    int keyed;                  /* one listing of every key said it all (S3) */
};

static void loader_free(struct loader *ld)
{
    for (size_t i = 0; ld->l && i < ld->runs.n; i++)
        sr_strlist_free(&ld->l[i].logs);
    free(ld->l);
    sr_strlist_free(&ld->runs);
    sr_strlist_free(&ld->sums);
    sr_strlist_free(&ld->snaps);
}

struct pair {
    char *run;
    struct sr_runsum_listed l;
};

static int by_run(const void *a, const void *b)
{
    return strcmp(((const struct pair *)a)->run, ((const struct pair *)b)->run);
}

/* Runs by id: a listing sorted by key has each run's keys together, but
 * "a.b/x" comes before "a/x" ('.' sorts before '/'). */
/* What one listed key of a run (rest: after "<run>/") tells its loader. */
static int note_key(struct sr_runsum_listed *l, const char *rest, uint64_t size)
{
    const char *log = NULL;
    switch (sr_key_classify(rest, &log)) {
    case SR_OBJ_EVENT_LOG:
        return sr_strlist_push_sized(&l->logs, log, size);
    case SR_OBJ_DONE:
        l->done = 1;
        return 0;
    default:
        return 0;
    }
}

static int sort_runs(struct loader *ld)
{
    const size_t n = ld->runs.n;
    struct pair *p = malloc((n ? n : 1) * sizeof(*p));
    if (!p)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        p[i] = (struct pair){ld->runs.v[i], ld->l[i]};
    qsort(p, n, sizeof(*p), by_run);
    for (size_t i = 0; i < n; i++) {
        ld->runs.v[i] = p[i].run;
        ld->l[i] = p[i].l;
    }
    free(p);
    return 0;
}

/* Where the store lists every key under a prefix in pages (S3), one such
 * listing says every run's logs and DONE, and (with summaries/) which
 * runs have a summary. -ENOTSUP: the store cannot (file). */
static int list_keys(struct loader *ld, const char *prefix)
{
    struct sr_strlist keys;
    int rc = sr_store_list_keys(ld->st, prefix, &keys);
    if (rc < 0)
        return rc;
    if (*prefix) /* the summaries/ objects of those runs: not in that listing */
        rc = sr_runsnap_list(ld->st, prefix, 0, &ld->sums, &ld->snaps);
    size_t cap = 0;
    for (size_t i = 0; rc == 0 && i < keys.n; i++) {
        char *slash = strchr(keys.v[i], '/');
        if (!slash)
            continue;
        *slash = '\0';
        const char *run = keys.v[i], *rest = slash + 1;
        if (strcmp(run, SR_KEY_SUMMARIES) == 0) {
            rc = sr_runsnap_list_add(&ld->sums, &ld->snaps, rest, sr_strlist_size(&keys, i),
                                     sr_strlist_etag(&keys, i));
            continue;
        }
        if (!sr_manifest_run_id_valid(run))
            continue; /* sweeps/, or not a run */
        size_t k = ld->runs.n;
        if (k > 0 && strcmp(ld->runs.v[k - 1], run) == 0) {
            k--;
        } else {
            if (k == cap) {
                cap = cap ? 2 * cap : 256;
                struct sr_runsum_listed *nl = realloc(ld->l, cap * sizeof(*nl));
                if (!nl) {
                    rc = -ENOMEM;
                    break;
                }
                ld->l = nl;
            }
            memset(&ld->l[k], 0, sizeof(ld->l[k]));
            rc = sr_strlist_push(&ld->runs, run);
            if (rc < 0)
                break;
        }
        rc = note_key(&ld->l[k], rest, sr_strlist_size(&keys, i));
    }
    sr_strlist_free(&keys);
    ld->keyed = 1;
    sr_strlist_sort(&ld->sums);
    sr_strlist_sort(&ld->snaps);
    for (size_t k = 0; rc == 0 && k < ld->runs.n; k++)
        ld->l[k].summary = sr_runsnap_find(&ld->sums, ld->runs.v[k]) >= 0;
    return rc < 0 ? rc : sort_runs(ld);
}

/* The sizes of a run's listed logs, one by one (a store whose listing does
 * not say them: file). A log gone meanwhile keeps an unknown size. */
static int size_logs(struct sr_store *st, const char *prefix, struct sr_strlist *logs)
{
    struct sr_strlist sized = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < logs->n; i++) {
        char key[600];
        sr_key_join(key, sizeof(key), prefix, logs->v[i]);
        uint64_t size = SR_SIZE_UNKNOWN;
        if (sr_events_attempt_of(logs->v[i]) != UINT32_MAX && sr_store_size(st, key, &size) < 0) {
            size = SR_SIZE_UNKNOWN;
        }
        rc = sr_strlist_push_sized(&sized, logs->v[i], size);
    }
    sr_strlist_free(logs);
    *logs = sized;
    return rc;
}

/* The file store: its runs, then each run's events directory with each
 * log's size (sr_parallel_for's job, one per run). Its summary is
 * read without listing (missing: the logs), DONE looked at only when it
 * matters. */
static int list_run(void *ctx, size_t i)
{
    struct loader *ld = ctx;
    const char *run = ld->runs.v[i];
    struct sr_runsum_listed *l = &ld->l[i];
    l->done = -1;
    l->summary = 1;
    char key[512];
    sr_key_run(key, sizeof(key), run, SR_KEY_EVENTS);
    int rc = sr_store_list(ld->st, key, &l->logs);
    if (rc == 0)
        rc = size_logs(ld->st, key, &l->logs);
    return rc < 0 ? sr_errf(rc, "cannot list %s: %s", key, sr_strerror(rc)) : 0;
}

static int list_each(struct loader *ld, const char *prefix)
{
    struct sr_strlist all = {0};
    int rc = sr_ckpt_list_runs(ld->st, &all);
    for (size_t i = 0; rc == 0 && i < all.n; i++)
        if (starts_with(all.v[i], prefix))
            rc = sr_strlist_push(&ld->runs, all.v[i]);
    sr_strlist_free(&all);
    if (rc == 0) {
        ld->l = calloc(ld->runs.n ? ld->runs.n : 1, sizeof(*ld->l));
        rc = ld->l ? 0 : -ENOMEM;
    }
    if (rc == 0)
        rc = sr_parallel_for(ld->runs.n, THREADS, list_run, ld);
    return rc;
}

/* A run whose last attempt is open (its summary was written by a wrapper
 * that may be gone) and whose LEASE is takeable: that attempt vanished at
 * its last event (its newest keep-alive), as show says (history.h's
 * sr_hist_settle_last), never running. Read again from its logs. */
static int settle_vanished(struct sr_store *st, const char *run, struct sr_runsum_listed *l,
                           struct sr_runsum *r)
{
    if (!r->n_att || r->att[r->n_att - 1].cause != SR_CAUSE_NONE)
        return 0;
    struct sr_lease_info in;
    if (sr_lease_read_rank(st, run, -1, &in) < 0) {
        sr_err_clear(); /* no LEASE to go by (a multi-node run's are per node) */
        return 0;
    }
    if (!sr_lease_takeable(&in, sr_wall_ms() / 1000))
        return 0;
    struct sr_history h;
    int rc = history_of(st, run, l, &h);
    if (rc == 0) {
        sr_hist_last_is_gone(&h);
        sr_runsum_free(r);
        rc = sr_runsum_from_history(&h, run, r);
        r->from_logs = 1;
    }
    sr_hist_free(&h);
    return rc;
}

int sr_runsum_read_listed(struct sr_store *st, const char *run, struct sr_runsum_listed *l,
                          struct sr_runsum *out)
{
    int rc = load_run(st, run, l, out);
    if (rc == 0)
        rc = settle_vanished(st, run, l, out);
    if (rc < 0)
        sr_runsum_free(out);
    return rc;
}

int sr_runsum_settle(struct sr_store *st, const char *run, struct sr_runsum *r)
{
    if (!r->n_att || r->att[r->n_att - 1].cause != SR_CAUSE_NONE)
        return 0; /* nothing open: no LEASE to read */
    struct sr_runsum_listed l = {0};
    int rc = sr_runsum_list_run(st, run, &l);
    if (rc == 0)
        rc = settle_vanished(st, run, &l, r);
    sr_strlist_free(&l.logs);
    return rc;
}

int sr_runsum_list_run(struct sr_store *st, const char *run, struct sr_runsum_listed *l)
{
    memset(l, 0, sizeof(*l));
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "%s/", run);
    struct sr_strlist keys;
    int rc = sr_store_list_keys(st, prefix, &keys);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc == 0 && i < keys.n; i++) {
        const char *rest = keys.v[i] + strlen(prefix);
        l->keys++;
        rc = note_key(l, rest, sr_strlist_size(&keys, i));
    }
    sr_strlist_free(&keys);
    if (rc < 0)
        sr_strlist_free(&l->logs);
    return rc;
}

static int read_run(void *ctx, size_t i)
{
    struct loader *ld = ctx;
    const int rc = sr_runsum_read_listed(ld->st, ld->runs.v[i], &ld->l[i], &ld->v[i]);
    return rc < 0 ? sr_errf(rc, "cannot read the run %s: %s", ld->runs.v[i], sr_strerror(rc)) : 0;
}

int sr_runsum_load_all(struct sr_store *st, const char *prefix, struct sr_runsum **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!prefix)
        prefix = "";
    int rc = sr_runsnap_load(st, prefix, out, n); /* docs/store.md, "summaries/" */
    if (rc != -EAGAIN)
        return rc;
    sr_err_clear(); /* no snapshot to go by, or it would save little: read it all */
    struct loader ld = {.st = st};
    rc = list_keys(&ld, prefix);
    if (rc == -ENOTSUP) { /* the file store: list level by level */
        loader_free(&ld);
        ld = (struct loader){.st = st};
        rc = list_each(&ld, prefix);
    }
    if (rc == 0) {
        ld.v = calloc(ld.runs.n ? ld.runs.n : 1, sizeof(*ld.v));
        rc = ld.v ? 0 : -ENOMEM;
    }
    if (rc == 0)
        rc = sr_parallel_for(ld.runs.n, THREADS, read_run, &ld);
    if (rc < 0) {
        for (size_t i = 0; ld.v && i < ld.runs.n; i++)
            sr_runsum_free(&ld.v[i]);
        free(ld.v);
        loader_free(&ld);
        return rc;
    }
    if (ld.keyed && !*prefix) /* a snapshot of the whole store, for the next reader */
        sr_runsnap_save_full(st, &ld.runs, ld.l, ld.v, &ld.sums, &ld.snaps);
    *out = ld.v;
    *n = ld.runs.n;
    loader_free(&ld);
    return 0;
}
