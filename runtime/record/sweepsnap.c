/*
 * sweepsnap.c - `sweep show`'s snapshot of its ended trials (see
 * sweepsnap.h; docs/store.md, "sweeps/<name>/view/").
 *
 * An entry holds only what the view prints of a run's history (sweepview.c,
 * sweepprogress.c, sweepworkers.c, the recorded price): per attempt its end,
 * cause, where and when it ran, its lost work, session, price and nodes,
 * the last ended attempt's tail; per metric its last, min and max and their
 * steps and its learning curve (the points sweepload.c kept, bounded by
 * sweeprec.h); the run's state and sums. Nothing in it is trusted but by the
 * listing: a digest (XXH64, runsum.h's) tells an entry edited by hand from
 * one spotrun wrote, every number is range-checked, every string must be
 * free of control characters, and anything that fails is read from the
 * trial's logs instead.
 *
 * Threads: none; callers hold the struct.
 */
#include "sweepsnap.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "log.h"
#include "manifest.h"
#include "runsum.h"
#include "units.h"

/* 2: an attempt's "drop" (pruned or cancelled work); 3: each metric's
 * learning curve ("pts", "stride"): an older snapshot is not used. */
#define SNAP_VERSION 3
#define SNAP_BYTES_MAX (256u << 20)
#define TAIL_MAX (64u << 10)
/* What a snapshot may weigh (read_newest): per trial, twice its listed
 * summary (its attempts) plus a tail, ENTRY_BYTES (metrics, sums) and
 * CURVE_BYTES (SR_SV_TRIAL_POINTS points of at most POINT_BYTES); the
 * workers' records WORKERS_BYTES; never more than SNAP_BYTES_MAX. A larger
 * one is not read (the trials' logs are): no object in the store can make
 * a reader grow past what the sweep's trials need. */
#define ENTRY_BYTES (16u << 10)
#define POINT_BYTES 80u /* [-1,-1.2345678901234567e-308,4294967295,4294967295], */
#define CURVE_BYTES (SR_SV_TRIAL_POINTS * POINT_BYTES)
#define WORKERS_BYTES (1u << 20)

/* ---- names ------------------------------------------------------------------- */

static void view_dir(char *buf, size_t len, const char *sweep)
{
    sr_key_sweep(buf, len, sweep, SR_SWEEP_VIEW);
}

/* ---- to JSON ----------------------------------------------------------------- */

static json_t *attempt_json(const struct sr_history *h, const struct sr_hist_attempt *a)
{
    json_t *o = json_pack(
        "{s:I, s:i, s:i, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:I}", "a", (json_int_t)a->attempt,
        "end", (int)a->end, "cause", (int)a->cause, "detail", a->cause_detail, "host", a->host,
        "first", (json_int_t)a->first_ms, "last", (json_int_t)a->last_ms, "lost",
        (json_int_t)a->lost_ms, "drop", (json_int_t)a->dropped_ms, "session",
        (json_int_t)a->session, "price", a->price_per_hour, "nodes", (json_int_t)a->nodes);
    if (o && a->tail && a == sr_hist_last_ended(h) && /* the only tail the view prints */
        (json_object_set_new(o, "tail", json_string(a->tail)) < 0 ||
         json_object_set_new(o, "tail_ms", json_integer((json_int_t)a->tail_ms)) < 0 ||
         json_object_set_new(o, "end_ms", json_integer((json_int_t)a->end_ms)) < 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Its learning curve: [step, value, attempt, index] per kept value. */
static json_t *points_json(const struct sr_hist_metric *m)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < m->n_pts; i++) {
        const struct sr_hist_point *p = &m->pts[i];
        if (json_array_append_new(a, json_pack("[I, f, I, I]", (json_int_t)p->step, p->value,
                                               (json_int_t)p->attempt, (json_int_t)p->index)) < 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *metric_json(const struct sr_hist_metric *m)
{
    return json_pack("{s:s, s:f, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:o}", "name", m->name, "last",
                     m->last, "min", m->min, "max", m->max, "last_step", (json_int_t)m->last_step,
                     "min_step", (json_int_t)m->min_step, "max_step", (json_int_t)m->max_step,
                     "count", (json_int_t)m->count, "stride", (json_int_t)m->stride, "pts",
                     points_json(m));
}

static json_t *history_json(const struct sr_history *h)
{
    json_t *att = json_array(), *met = json_array();
    int ok = att && met;
    for (size_t i = 0; ok && i < h->n_att; i++)
        ok = json_array_append_new(att, attempt_json(h, &h->att[i])) == 0;
    for (size_t i = 0; ok && i < h->n_met; i++)
        ok = json_array_append_new(met, metric_json(&h->met[i])) == 0;
    if (!ok) {
        json_decref(att);
        json_decref(met);
        return NULL;
    }
    return json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "state", (int)h->state, "pre",
                     (json_int_t)h->preemptions, "lost", (json_int_t)h->lost_ms, "inst",
                     (json_int_t)h->instance_ms, "first", (json_int_t)h->first_ms, "last",
                     (json_int_t)h->last_ms, "att", att, "met", met);
}

static json_t *end_json(const struct sr_trial_end_info *e)
{
    return json_pack("{s:i, s:i, s:s, s:I, s:s, s:s}", "state", (int)e->state, "code", e->exit_code,
                     "cause", e->cause, "ms", (json_int_t)e->unix_ms, "host", e->host, "by", e->by);
}

/* Sets o's digest; o on success, else NULL (o freed). */
static json_t *sealed(json_t *o)
{
    char d[17];
    if (o && (sr_runsum_digest(o, d) < 0 || json_object_set_new(o, "digest", json_string(d)) < 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *sr_sv_snap_entry(const struct sr_sv_snap *s, const struct sr_sv_trial *t)
{
    if (!s->usable || t->mark == SR_TRIAL_OPEN)
        return NULL;
    const char *etag = s->etag[t->trial];
    if (!t->run) /* nothing of it in the store: while no summary appears */
        return etag ? NULL
                    : sealed(json_pack("{s:I, s:i, s:s, s:b}", "trial", (json_int_t)t->trial,
                                       "mark", (int)t->mark, "etag", "", "none", 1));
    const struct sr_history *h = &t->run->h;
    for (size_t i = 0; i < h->n_att; i++)
        if (h->att[i].nodes > 1) /* its marker in summaries/ never changes: read its logs */
            return NULL;
    if (!etag || t->run->has_lease)
        return NULL;
    json_t *hist = history_json(h);
    json_t *e = hist ? json_pack("{s:I, s:i, s:s, s:o}", "trial", (json_int_t)t->trial, "mark",
                                 (int)t->mark, "etag", etag, "h", hist)
                     : NULL;
    if (e && t->run->has_end && json_object_set_new(e, "end", end_json(&t->run->end)) < 0) {
        json_decref(e);
        return NULL;
    }
    return sealed(e);
}

/* ---- from JSON --------------------------------------------------------------- */

static int get_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = json_integer_value(v);
    return 0;
}

static int get_real(const json_t *o, const char *key, double *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_real(v))
        return -1;
    *out = json_real_value(v);
    return 0;
}

/* A string of at most size - 1 bytes without control characters (but the
 * newlines and tabs of a tail when lines). */
static int clean(const char *s, size_t size, int lines)
{
    size_t n = 0;
    for (; s[n]; n++) {
        const unsigned char c = (unsigned char)s[n];
        if ((c < 0x20 && !(lines && (c == '\n' || c == '\t'))) || c == 0x7f)
            return -1;
    }
    return n < size ? 0 : -1;
}

static int get_str(const json_t *o, const char *key, char *dst, size_t size)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (!s || clean(s, size, 0) < 0)
        return -1;
    snprintf(dst, size, "%s", s);
    return 0;
}

#define T SR_TIME_MAX_MS
static int attempt_from(const json_t *o, struct sr_hist_attempt *a)
{
    int64_t v[9];
    if (!json_is_object(o) || get_int(o, "a", 0, UINT32_MAX, &v[0]) ||
        get_int(o, "drop", 0, T, &v[8]) || get_int(o, "end", SR_END_OPEN, SR_END_STOPPED, &v[1]) ||
        get_int(o, "cause", SR_CAUSE_NONE, SR_CAUSE_COUNT - 1, &v[2]) ||
        get_int(o, "first", 0, T, &v[3]) || get_int(o, "last", 0, T, &v[4]) ||
        get_int(o, "lost", 0, T, &v[5]) || get_int(o, "session", 0, UINT32_MAX, &v[6]) ||
        get_int(o, "nodes", 0, UINT32_MAX, &v[7]) || get_real(o, "price", &a->price_per_hour) ||
        a->price_per_hour < 0 || get_str(o, "detail", a->cause_detail, sizeof(a->cause_detail)) ||
        get_str(o, "host", a->host, sizeof(a->host)))
        return -1;
    a->attempt = (uint32_t)v[0];
    a->end = (enum sr_hist_end)v[1];
    a->cause = (enum sr_hist_cause)v[2];
    a->first_ms = v[3];
    a->last_ms = v[4];
    a->lost_ms = v[5];
    a->dropped_ms = v[8];
    a->session = (uint32_t)v[6];
    a->nodes = (uint32_t)v[7];
    const json_t *tail = json_object_get(o, "tail");
    if (!tail)
        return 0;
    int64_t tail_ms = 0, end_ms = 0; /* when the tail was written; when the attempt ended */
    if ((json_object_get(o, "tail_ms") && get_int(o, "tail_ms", 0, T, &tail_ms)) ||
        (json_object_get(o, "end_ms") && get_int(o, "end_ms", 0, T, &end_ms)))
        return -1;
    a->tail_ms = tail_ms;
    a->end_ms = end_ms;
    if (!json_is_string(tail) || clean(json_string_value(tail), TAIL_MAX, 1) < 0)
        return -1;
    a->tail = strdup(json_string_value(tail));
    return a->tail ? 0 : -1;
}

/* The learning curve of metric_json: at most SR_SV_CURVE_POINTS, each a
 * step (-1 or >= 0), a finite value, an attempt, and a rank below count,
 * taken every stride-th value. */
static int points_from(const json_t *a, struct sr_hist_metric *m)
{
    const size_t n = json_array_size(a);
    if (!json_is_array(a) || n > SR_SV_CURVE_POINTS)
        return -1;
    if (n && !(m->pts = calloc(n, sizeof(*m->pts))))
        return -1;
    for (; m->n_pts < n; m->n_pts++) {
        const json_t *p = json_array_get(a, m->n_pts);
        const json_t *st = json_array_get(p, 0), *v = json_array_get(p, 1);
        const json_t *at = json_array_get(p, 2), *ix = json_array_get(p, 3);
        if (json_array_size(p) != 4 || !json_is_integer(st) || json_integer_value(st) < -1 ||
            !json_is_real(v) || !isfinite(json_real_value(v)) || !json_is_integer(at) ||
            json_integer_value(at) < 0 || json_integer_value(at) > UINT32_MAX ||
            !json_is_integer(ix) || json_integer_value(ix) < 0 ||
            json_integer_value(ix) >= (json_int_t)m->count)
            return -1;
        m->pts[m->n_pts] = (struct sr_hist_point){.step = json_integer_value(st),
                                                  .value = json_real_value(v),
                                                  .attempt = (uint32_t)json_integer_value(at),
                                                  .index = (unsigned)json_integer_value(ix)};
    }
    return 0;
}

static int metric_from(const json_t *o, struct sr_hist_metric *m)
{
    int64_t st[3], count, stride;
    if (!json_is_object(o) || get_str(o, "name", m->name, sizeof(m->name)) || !m->name[0] ||
        get_real(o, "last", &m->last) || get_real(o, "min", &m->min) ||
        get_real(o, "max", &m->max) || get_int(o, "last_step", -1, INT64_MAX, &st[0]) ||
        get_int(o, "min_step", -1, INT64_MAX, &st[1]) ||
        get_int(o, "max_step", -1, INT64_MAX, &st[2]) ||
        get_int(o, "count", 0, UINT32_MAX, &count) || get_int(o, "stride", 1, UINT32_MAX, &stride))
        return -1;
    m->last_step = st[0];
    m->min_step = st[1];
    m->max_step = st[2];
    m->count = (unsigned)count;
    m->stride = (unsigned)stride;
    return points_from(json_object_get(o, "pts"), m);
}

static int history_from(const json_t *o, struct sr_history *h)
{
    int64_t v[6];
    const json_t *att = json_object_get(o, "att"), *met = json_object_get(o, "met");
    if (!json_is_object(o) || get_int(o, "state", SR_STATE_NEW, SR_STATE_VANISHED, &v[0]) ||
        get_int(o, "pre", 0, UINT32_MAX, &v[1]) || get_int(o, "lost", 0, T, &v[2]) ||
        get_int(o, "inst", 0, T, &v[3]) || get_int(o, "first", 0, T, &v[4]) ||
        get_int(o, "last", 0, T, &v[5]) || !json_is_array(att) || !json_is_array(met) ||
        json_array_size(att) > SR_RUNSUM_ATT_MAX || json_array_size(met) > SR_HIST_METRICS_MAX)
        return -1;
    h->state = (enum sr_hist_state)v[0];
    h->preemptions = (unsigned)v[1];
    h->lost_ms = v[2];
    h->instance_ms = v[3];
    h->first_ms = v[4];
    h->last_ms = v[5];
    const size_t na = json_array_size(att), nm = json_array_size(met);
    h->att = calloc(na ? na : 1, sizeof(*h->att));
    h->met = calloc(nm ? nm : 1, sizeof(*h->met));
    if (!h->att || !h->met)
        return -1;
    h->cap_att = na ? na : 1;
    h->cap_met = nm ? nm : 1;
    for (; h->n_att < na; h->n_att++) {
        const struct sr_hist_attempt *a = &h->att[h->n_att];
        if (attempt_from(json_array_get(att, h->n_att), &h->att[h->n_att]) < 0)
            return -1;
        if (a->cause == SR_CAUSE_PRUNED && h->pruned_ms <= T - a->dropped_ms)
            h->pruned_ms += a->dropped_ms;
        else if (a->cause == SR_CAUSE_CANCELLED && h->cancelled_ms <= T - a->dropped_ms)
            h->cancelled_ms += a->dropped_ms;
    }
    size_t points = 0;
    for (; h->n_met < nm; h->n_met++) {
        if (metric_from(json_array_get(met, h->n_met), &h->met[h->n_met]) < 0) {
            h->n_met++; /* its points are freed with the rest */
            return -1;
        }
        points += h->met[h->n_met].n_pts;
    }
    return points <= SR_SV_TRIAL_POINTS ? 0 : -1;
}
#undef T

static int end_from(const json_t *o, struct sr_trial_end_info *e)
{
    int64_t v[3];
    if (!json_is_object(o) || get_int(o, "state", SR_TRIAL_DONE, SR_TRIAL_PRUNED, &v[0]) ||
        get_int(o, "code", 0, 255, &v[1]) || get_int(o, "ms", 0, INT64_MAX, &v[2]) ||
        get_str(o, "cause", e->cause, sizeof(e->cause)) ||
        get_str(o, "host", e->host, sizeof(e->host)) || get_str(o, "by", e->by, sizeof(e->by)))
        return -1;
    e->state = (enum sr_trial_end)v[0];
    e->exit_code = (int)v[1];
    e->unix_ms = v[2];
    return 0;
}

/* 1 when e's digest is its content's. */
static int digest_ok(const json_t *e)
{
    char d[17];
    const char *was = json_string_value(json_object_get(e, "digest"));
    return was && sr_runsum_digest(e, d) == 0 && strcmp(d, was) == 0;
}

int sr_sv_snap_take(const struct sr_sv_snap *s, size_t k, unsigned char mark,
                    struct sr_sv_run **run)
{
    *run = NULL;
    const json_t *e = s->usable ? s->entry[k] : NULL;
    int64_t m;
    if (!e || mark == SR_TRIAL_OPEN || get_int(e, "mark", 0, 255, &m) || m != mark)
        return 0;
    const char *etag = json_string_value(json_object_get(e, "etag"));
    const char *listed = s->etag[k];
    if (!etag || !digest_ok(e))
        return 0;
    if (json_is_true(json_object_get(e, "none")))
        return !*etag && !listed; /* still nothing of it: no summary since */
    if (!listed || strcmp(etag, listed) != 0)
        return 0;
    struct sr_sv_run *r = calloc(1, sizeof(*r));
    if (!r)
        return 0;
    sr_hist_init(&r->h);
    const json_t *end = json_object_get(e, "end");
    if (history_from(json_object_get(e, "h"), &r->h) < 0 || (end && end_from(end, &r->end) < 0)) {
        sr_hist_free(&r->h);
        free(r);
        return 0;
    }
    r->has_end = end != NULL;
    *run = r;
    return 1;
}

/* ---- the store --------------------------------------------------------------- */

/* The sweep's summaries/<sweep>-<K>.json as listed: s->etag per trial.
 * s->usable stays 0 where the store cannot list them with ETags. */
static int list_summaries(struct sr_store *st, const struct sr_sweep *sw, size_t n,
                          struct sr_sv_snap *s)
{
    char prefix[SR_SWEEP_NAME_MAX + 32];
    snprintf(prefix, sizeof(prefix), SR_KEY_SUMMARIES "/%s-", sw->name);
    int rc = sr_store_list_keys(st, prefix, &s->sums);
    if (rc == -ENOTSUP)
        return 0;
    if (rc < 0)
        return rc;
    s->etag = calloc(n ? n : 1, sizeof(*s->etag));
    s->entry = calloc(n ? n : 1, sizeof(*s->entry));
    if (!s->etag || !s->entry)
        return -ENOMEM;
    const size_t skip = strlen(SR_KEY_SUMMARIES "/");
    for (size_t i = 0; i < s->sums.n; i++) {
        const char *etag = sr_strlist_etag(&s->sums, i);
        if (!etag) /* a listing without ETags cannot say what changed */
            return 0;
        char run[SR_RUN_ID_MAX + 8];
        const size_t len = strlen(s->sums.v[i] + skip);
        if (len <= 5 || len - 5 >= sizeof(run) || strcmp(s->sums.v[i] + len + skip - 5, ".json"))
            continue;
        memcpy(run, s->sums.v[i] + skip, len - 5);
        run[len - 5] = '\0';
        const long k = sr_sweep_trial_of(sw->name, run);
        if (k >= 0 && (size_t)k < n)
            s->etag[k] = etag;
    }
    s->usable = 1;
    return 0;
}

/* The newest snapshot's entries, each by its trial (the first of a trial
 * counts); a snapshot of another sweep of that name, or one that does not
 * parse, is none. */
static int read_newest(struct sr_store *st, const struct sr_sweep *sw, size_t n,
                       struct sr_sv_snap *s)
{
    char dir[SR_SWEEP_NAME_MAX + 32], key[SR_SWEEP_NAME_MAX + 96], *buf = NULL;
    view_dir(dir, sizeof(dir), sw->name);
    int rc = sr_store_list(st, dir, &s->views);
    const char *name = rc == 0 ? sr_snap_newest(&s->views, "") : NULL;
    if (rc < 0 || !name)
        return rc;
    sr_key_join(key, sizeof(key), dir, name);
    uint64_t cap = (uint64_t)n * (TAIL_MAX + ENTRY_BYTES + CURVE_BYTES) + WORKERS_BYTES;
    for (size_t i = 0; i < s->sums.n && cap < SNAP_BYTES_MAX; i++) {
        const uint64_t z = sr_strlist_size(&s->sums, i);
        cap += z == SR_SIZE_UNKNOWN || z > SR_RUNSUM_BYTES_MAX ? SR_RUNSUM_BYTES_MAX : 2 * z;
    }
    size_t len = 0;
    rc = sr_store_get(st, key, cap < SNAP_BYTES_MAX ? (size_t)cap : SNAP_BYTES_MAX, &buf, &len);
    if (rc == -ENOMEM)
        return rc;
    json_t *o = rc == 0 ? json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    free(buf);
    const json_t *trials = json_object_get(o, "trials");
    const char *id = json_string_value(json_object_get(o, "sweep_id"));
    int64_t ver;
    if (get_int(o, "version", SNAP_VERSION, SNAP_VERSION, &ver) || !json_is_array(trials) || !id ||
        strcmp(id, sw->id) != 0) {
        sr_debug("the sweep view snapshot %s is unusable (%s): reading the trials", key,
                 rc < 0 ? sr_strerror(rc) : "not this sweep's snapshot");
        json_decref(o);
        return 0;
    }
    s->doc = o;
    const json_t *workers = json_object_get(o, "workers");
    if (json_is_object(json_object_get(workers, "records")) && digest_ok(workers))
        s->workers = json_object_get(workers, "records");
    for (size_t i = 0; i < json_array_size(trials); i++) {
        const json_t *e = json_array_get(trials, i);
        int64_t k;
        if (get_int(e, "trial", 0, (int64_t)n - 1, &k) == 0 && !s->entry[k])
            s->entry[k] = e;
    }
    return 0;
}

int sr_sv_snap_read(struct sr_store *st, const struct sr_sweep *sw, size_t n, struct sr_sv_snap *s)
{
    memset(s, 0, sizeof(*s));
    int rc = list_summaries(st, sw, n, s);
    if (rc == 0 && s->usable)
        rc = read_newest(st, sw, n, s);
    return rc;
}

void sr_sv_snap_free(struct sr_sv_snap *s)
{
    sr_strlist_free(&s->sums);
    sr_strlist_free(&s->views);
    free(s->etag);
    free(s->entry);
    json_decref(s->doc);
    memset(s, 0, sizeof(*s));
}

void sr_sv_snap_write(struct sr_store *st, const struct sr_sweep *sw, const struct sr_sv_snap *s,
                      json_t *entries, const json_t *workers)
{
    if (sr_store_read_only(st)) { /* said once, when it was opened */
        json_decref(entries);
        return;
    }
    const int64_t now = sr_wall_ms();
    json_t *o = json_pack("{s:i, s:s, s:I, s:o}", "version", SNAP_VERSION, "sweep_id", sw->id,
                          "created_ms", (json_int_t)now, "trials", entries);
    json_t *w = workers ? sealed(json_pack("{s:O}", "records", workers)) : NULL;
    if (o && w)
        json_object_set_new(o, "workers", w);
    else
        json_decref(w);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    /* named after every snapshot listed: the newest name is the newest content */
    const char *last = sr_snap_newest(&s->views, "");
    int64_t ms = now, was;
    if (last && sr_snap_name_ms(last, &was) == 0 && was >= ms)
        ms = was + 1;
    char dir[SR_SWEEP_NAME_MAX + 32], key[SR_SWEEP_NAME_MAX + 96];
    view_dir(dir, sizeof(dir), sw->name);
    snprintf(key, sizeof(key), "%s/%013" PRId64 "-%08lx%04x.json", dir, ms, (unsigned long)getpid(),
             (unsigned)(sr_wall_ms() ^ (uintptr_t)&key) & 0xffff);
    const int rc = text ? sr_store_put_if(st, key, text, strlen(text), NULL, NULL) : -ENOMEM;
    free(text);
    if (rc < 0) {
        sr_debug("cannot write the sweep view snapshot %s: %s", key, sr_strerror(rc));
        return;
    }
    sr_debug("wrote the sweep view snapshot %s", key);
    for (size_t i = 0; i < s->views.n; i++) {
        if (s->views.v[i] == last) /* another reader may be reading it */
            continue;
        sr_key_join(key, sizeof(key), dir, s->views.v[i]);
        (void)sr_store_delete(st, key); /* best effort: the next snapshot tries again */
    }
}
