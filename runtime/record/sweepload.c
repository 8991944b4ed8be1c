/*
 * sweepload.c - a sweep's trials read from the store (sweeprec.h):
 * the end marks, rungs and steering, then each started trial's logs,
 * LEASE and end mark, or, with SR_SV_LOAD_SNAPSHOT, the view snapshot
 * (sweepsnap.h) for the ended trials it still stands for.
 *
 * Threads: sr_sweepview_load() reads the trials on sr_parallel_for()'s
 * threads, joined before it returns; each reader fills only its trial's
 * struct sr_sv_run (and its own listing). Everything else runs on the
 * caller's thread.
 */
#include "sweeprec.h"
#include "layout.h"
#include "sweepsnap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "log.h"
#include "parallel.h"
#include "pbt.h"
#include "sweep_rungs.h"
#include "units.h"

#define THREADS_DEFAULT 8
#define PER_TRIAL_MAX 16 /* trials read by a listing each; more: one listing of every key */
#define SNAP_NEW_MIN 16  /* new entries that make a new snapshot worth its PUT */

/* ---- loading ----------------------------------------------------------------- */

/* What one listing of every key of the sweep's runs says about a trial. */
struct listed {
    struct sr_strlist logs; /* names in <run>/events */
    int any, done, lease;   /* objects at all, DONE, LEASE (or LEASE.0) */
};

struct pool {
    struct sr_store *st;
    struct sr_sweepview *v;
    size_t *todo; /* trial indices with objects in the store */
    size_t n_todo;
    int64_t now_s;
    struct listed *listed; /* per trial, from one listing of every key; NULL: list per trial */
    int per_trial;         /* listed is filled by each trial's own listing (read_one) */
};

/* One started trial: its event logs, its LEASE and, when it failed, its
 * end mark. A LEASE or a mark that does not parse is no LEASE or mark
 * (a view, not a check). */
static int load_trial(struct pool *p, struct sr_sv_trial *t)
{
    struct sr_sv_run *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    sr_hist_init(&r->h);
    r->h.keep_points = 1; /* the learning curves (sweeprec.h) */
    r->h.points_max = SR_SV_CURVE_POINTS;
    t->run = r;
    const struct listed *l = p->listed ? &p->listed[t->trial] : NULL;
    int rc = l ? sr_hist_load_logs(p->st, t->run_id, &l->logs, l->done, &r->h)
               : sr_hist_load(p->st, t->run_id, &r->h);
    if (rc < 0)
        return rc;
    sr_hist_thin_points(&r->h, SR_SV_TRIAL_POINTS);
    /* who runs it matters only while it has not ended */
    rc = t->mark == SR_TRIAL_OPEN && (!l || l->lease)
             ? sr_lease_read_owner(p->st, t->run_id, &r->lease)
             : -ENOENT;
    if (rc == 0) {
        r->has_lease = 1;
        r->lease_held = !sr_lease_takeable(&r->lease, p->now_s);
        if (!r->lease_held) /* nobody runs it: a last attempt without an end vanished */
            sr_hist_last_is_gone(&r->h);
    } else if (rc != -ENOENT && rc != -EBADMSG && rc != -EPROTONOSUPPORT) {
        return rc;
    }
    if (t->mark == SR_TRIAL_OPEN || t->mark == SR_TRIAL_DONE)
        return 0;
    rc = sr_sweep_read_mark(p->st, p->v->sw->name, t->trial, t->mark, &r->end);
    if (rc == 0)
        r->has_end = 1;
    else if (rc != -ENOENT && rc != -EBADMSG)
        return rc;
    return 0;
}

static int list_one(struct sr_store *st, const char *run, struct listed *l);

/* One trial of the pool's (sr_parallel_for's job). */
static int read_one(void *ctx, size_t i)
{
    struct pool *p = ctx;
    struct sr_sv_trial *t = &p->v->t[p->todo[i]];
    int rc = p->per_trial ? list_one(p->st, t->run_id, &p->listed[t->trial]) : 0;
    if (rc == 0 && p->per_trial && !p->listed[t->trial].any)
        return 0; /* nothing of it in the store */
    if (rc == 0)
        rc = load_trial(p, t);
    return rc < 0 ? sr_errf(rc, "%s: %s", t->run_id, sr_strerror(rc)) : 0;
}

static enum sr_sv_state state_of(const struct sr_sweepview *v, const struct sr_sv_trial *t)
{
    if (t->mark == SR_TRIAL_DONE)
        return SR_SV_DONE;
    if (t->mark == SR_TRIAL_FAILED)
        return SR_SV_FAILED;
    if (t->mark == SR_TRIAL_CANCELLED)
        return SR_SV_CANCELLED;
    if (t->mark == SR_TRIAL_PRUNED)
        return SR_SV_PRUNED;
    const struct sr_sv_run *r = t->run;
    if (r && r->lease_held)
        return SR_SV_RUNNING;
    /* cancelled in the steering, its end mark not (yet, or never) written:
     * the table says "cancelled", and so do the counts */
    if (sr_steer_cancelled(&v->steer, t->trial))
        return SR_SV_CANCELLED;
    if (!r)
        return SR_SV_QUEUED;
    if (r->h.state == SR_STATE_DONE) /* DONE without its mark: the mark's write failed */
        return SR_SV_DONE;
    if (r->h.state == SR_STATE_FAILED)
        return SR_SV_FAILED;
    if (r->h.state == SR_STATE_STOPPED)
        return SR_SV_STOPPED;
    return r->h.n_att ? SR_SV_PREEMPTED : SR_SV_QUEUED;
}

int sr_sweepview_has_metric(const struct sr_sweepview *v, const char *name)
{
    for (size_t i = 0; i < v->n_metrics; i++)
        if (strcmp(v->metrics[i], name) == 0)
            return 1;
    return 0;
}

static void add_metric_name(struct sr_sweepview *v, const char *name)
{
    if (sr_sweepview_has_metric(v, name) || v->n_metrics == SR_HIST_METRICS_MAX)
        return;
    snprintf(v->metrics[v->n_metrics++], sizeof(v->metrics[0]), "%s", name);
}

/* States, metric names and totals, once every trial is read. */
static void derive(struct sr_sweepview *v)
{
    for (size_t k = 0; k < v->n; k++) {
        struct sr_sv_trial *t = &v->t[k];
        t->state = state_of(v, t);
        v->counts[t->state]++;
        if (!t->run)
            continue;
        const struct sr_history *h = &t->run->h;
        for (size_t i = 0; i < h->n_met; i++)
            add_metric_name(v, h->met[i].name);
        v->instance_ms += h->instance_ms;
        v->lost_ms += h->lost_ms;
        v->pruned_ms += h->pruned_ms;
        v->cancelled_ms += h->cancelled_ms;
        for (size_t i = 0; i < h->n_att; i++)
            if (h->att[i].end == SR_END_PREEMPTED || h->att[i].end == SR_END_VANISHED)
                v->preempted_lost_ms += h->att[i].lost_ms;
        if (h->n_att && (!v->first_ms || h->first_ms < v->first_ms))
            v->first_ms = h->first_ms;
        if (h->n_att && h->last_ms > v->last_ms)
            v->last_ms = h->last_ms;
    }
}

/* What one listed key "<rest>" below a trial's "<run>/" says. */
static int add_key(struct listed *l, const char *rest)
{
    l->any = 1;
    const char *log = NULL;
    switch (sr_key_classify(rest, &log)) {
    case SR_OBJ_EVENT_LOG:
        return sr_strlist_push(&l->logs, log);
    case SR_OBJ_DONE:
        l->done = 1;
        return 0;
    case SR_OBJ_LEASE: /* a multi-node trial's rank 0 says who runs it */
        l->lease |= strcmp(rest, SR_KEY_LEASE) == 0 || strcmp(rest, SR_KEY_LEASE ".0") == 0;
        return 0;
    default:
        return 0;
    }
}

static void free_listed(struct listed *l, size_t n)
{
    for (size_t k = 0; l && k < n; k++)
        sr_strlist_free(&l[k].logs);
    free(l);
}

/* Where the store lists every key below a prefix in pages (S3), one such
 * listing of "<sweep>-" replaces a listing of each trial's event logs and
 * a read of its DONE: *out gets what it says per trial (NULL when the
 * store cannot; the caller lists per trial). */
static int list_keys(struct sr_store *st, const char *name, size_t n, struct listed **out)
{
    *out = NULL;
    char prefix[SR_SWEEP_NAME_MAX + 2];
    snprintf(prefix, sizeof(prefix), "%s-", name);
    struct sr_strlist keys;
    int rc = sr_store_list_keys(st, prefix, &keys);
    if (rc == -ENOTSUP)
        return 0;
    if (rc < 0)
        return rc;
    struct listed *l = calloc(n ? n : 1, sizeof(*l));
    for (size_t i = 0; l && rc == 0 && i < keys.n; i++) {
        char *slash = strchr(keys.v[i], '/');
        if (!slash)
            continue;
        *slash = '\0';
        const long k = sr_sweep_trial_of(name, keys.v[i]);
        if (k >= 0 && (size_t)k < n)
            rc = add_key(&l[k], slash + 1);
    }
    sr_strlist_free(&keys);
    if (!l || rc < 0) {
        free_listed(l, n);
        return rc < 0 ? rc : -ENOMEM;
    }
    *out = l;
    return 0;
}

/* One listing of every key of one trial's run (p->per_trial). */
static int list_one(struct sr_store *st, const char *run, struct listed *l)
{
    char prefix[SR_RUN_ID_MAX + 2];
    snprintf(prefix, sizeof(prefix), "%s/", run);
    struct sr_strlist keys;
    int rc = sr_store_list_keys(st, prefix, &keys);
    for (size_t i = 0; rc == 0 && i < keys.n; i++)
        rc = add_key(l, keys.v[i] + strlen(prefix));
    sr_strlist_free(&keys);
    return rc;
}

static int load_rungs(struct sr_store *st, struct sr_sweepview *v)
{
    unsigned char *level = calloc(v->n ? v->n : 1, 1);
    const int rc = level ? sr_rung_levels(st, v->sw->name, v->n, level) : -ENOMEM;
    for (size_t k = 0; rc == 0 && k < v->n; k++)
        v->t[k].rung = level[k];
    free(level);
    return rc;
}

/* PBT: the trials with decisions (one listing), then each one's lineage. */
static int load_lineage(struct sr_store *st, struct sr_sweepview *v)
{
    char prefix[512];
    sr_key_sweep(prefix, sizeof(prefix), v->sw->name, SR_SWEEP_PBT "/lineage");
    struct sr_strlist l;
    int rc = sr_store_list(st, prefix, &l);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        char *end = NULL;
        const long k = strtol(l.v[i], &end, 10);
        if (!end || *end || k < 0 || (size_t)k >= v->n || v->t[k].lineage)
            continue;
        rc = sr_pbt_lineage(st, v->sw->name, k, &v->t[k].lineage);
        if (rc == 0 && !json_array_size(v->t[k].lineage)) {
            json_decref(v->t[k].lineage);
            v->t[k].lineage = NULL;
        }
    }
    sr_strlist_free(&l);
    return rc;
}

/* The ended trials the snapshot still stands for (sweepsnap.h): need[k]
 * 0 for them, 1 for those to read. */
static void take_snapshot(struct sr_sweepview *v, const struct sr_sv_snap *s, unsigned char *need)
{
    for (size_t k = 0; k < v->n; k++)
        need[k] = !sr_sv_snap_take(s, k, v->t[k].mark, &v->t[k].run);
}

/* Which trials to read, and how: each one's own listing when few are
 * needed and each has a summary listed (it exists); else one listing of
 * every key of the sweep's runs (a trial without keys is queued), or,
 * where the store has none, the store's runs. */
static int plan_reads(struct sr_store *st, struct sr_sweepview *v, const struct sr_sv_snap *s,
                      const unsigned char *need, struct pool *p)
{
    size_t known = 0, unknown = 0;
    for (size_t k = 0; k < v->n; k++)
        if (need[k])
            *(s->usable && s->etag[k] ? &known : &unknown) += 1;
    if (!known && !unknown)
        return 0;
    if (!unknown && known <= PER_TRIAL_MAX) {
        p->per_trial = 1;
        p->listed = calloc(v->n ? v->n : 1, sizeof(*p->listed));
        for (size_t k = 0; p->listed && k < v->n; k++)
            if (need[k])
                p->todo[p->n_todo++] = k;
        return p->listed ? 0 : -ENOMEM;
    }
    int rc = list_keys(st, v->sw->name, v->n, &p->listed);
    for (size_t k = 0; rc == 0 && p->listed && k < v->n; k++)
        if (need[k] && p->listed[k].any)
            p->todo[p->n_todo++] = k;
    if (rc < 0 || p->listed)
        return rc;
    struct sr_strlist runs = {0};
    rc = sr_ckpt_list_runs(st, &runs);
    for (size_t i = 0; rc == 0 && i < runs.n; i++) { /* sorted, each once */
        const long k = sr_sweep_trial_of(v->sw->name, runs.v[i]);
        if (k >= 0 && (size_t)k < v->n && need[k])
            p->todo[p->n_todo++] = (size_t)k;
    }
    sr_strlist_free(&runs);
    return rc;
}

/* A new snapshot when this read made new entries: every one it made, or
 * enough of them when the last one stands for the rest. */
static void save_snapshot(struct sr_store *st, const struct sr_sweepview *v,
                          const struct sr_sv_snap *s, const unsigned char *need,
                          const json_t *workers)
{
    if (!s->usable)
        return;
    json_t *arr = json_array();
    size_t made = 0;
    for (size_t k = 0; arr && k < v->n; k++) {
        json_t *e = need[k] ? sr_sv_snap_entry(s, &v->t[k]) : json_incref((json_t *)s->entry[k]);
        made += need[k] && e;
        if (e && json_array_append_new(arr, e) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    if (arr && made && (!s->doc || made >= SNAP_NEW_MIN))
        sr_sv_snap_write(st, v->sw, s, arr, workers);
    else
        json_decref(arr);
}

/* The marks, rungs and steering: the sweep's own objects. */
static int load_sweep_objects(struct sr_store *st, struct sr_sweepview *v)
{
    unsigned char *mark = calloc(v->n ? v->n : 1, 1);
    int rc = mark ? sr_sweep_list_ends(st, v->sw->name, v->n, mark) : -ENOMEM;
    if (rc == 0 && v->sw->early_stop) /* one listing per rung (sweep_rungs.h) */
        rc = load_rungs(st, v);
    if (rc == 0 && v->sw->pbt) /* one listing, then one per trial with decisions (pbt.h) */
        rc = load_lineage(st, v);
    if (rc == 0) /* the operator's steering (sweep_steer.h) */
        rc = sr_steer_read(st, v->sw->name, v->n, &v->steer);
    for (size_t k = 0; rc == 0 && k < v->n; k++) {
        v->t[k].trial = k;
        v->t[k].mark = mark[k];
        sr_sweep_run_id(v->sw->name, k, v->t[k].run_id, sizeof(v->t[k].run_id));
    }
    free(mark);
    return rc;
}

int sr_sweepview_load(struct sr_store *st, const struct sr_sweep *sw, unsigned threads,
                      unsigned flags, struct sr_sweepview *out)
{
    memset(out, 0, sizeof(*out));
    out->sw = sw;
    out->n = sr_sweep_count(sw);
    out->now_ms = sr_wall_ms();
    out->t = calloc(out->n ? out->n : 1, sizeof(*out->t));
    unsigned char *need = calloc(out->n ? out->n : 1, 1);
    size_t *todo = calloc(out->n ? out->n : 1, sizeof(*todo));
    out->metrics = calloc(SR_HIST_METRICS_MAX, sizeof(*out->metrics));
    struct sr_sv_snap snap = {0};
    struct pool p = {.st = st, .v = out, .todo = todo, .now_s = out->now_ms / 1000};
    int rc = out->t && need && todo && out->metrics ? 0 : -ENOMEM;
    if (rc == 0)
        rc = load_sweep_objects(st, out);
    if (rc == 0 && (flags & SR_SV_LOAD_SNAPSHOT))
        rc = sr_sv_snap_read(st, sw, out->n, &snap);
    if (rc == 0)
        take_snapshot(out, &snap, need);
    if (rc == 0)
        rc = plan_reads(st, out, &snap, need, &p);
    if (rc == 0)
        rc = sr_parallel_for(p.n_todo, threads ? threads : THREADS_DEFAULT, read_one, &p);
    if (rc == 0)
        derive(out);
    json_t *workers = NULL; /* their records, for the next snapshot */
    if (rc == 0)            /* the workers' own hours, against the trials' (sweepworkers.h) */
        rc = snap.usable ? sr_sv_workers_load_cached(st, out, snap.workers, &workers, &out->workers)
                         : sr_sv_workers_load(st, out, &out->workers);
    if (rc == 0)
        save_snapshot(st, out, &snap, need, workers);
    json_decref(workers);
    sr_sv_snap_free(&snap);
    free_listed(p.listed, out->n);
    free(todo);
    free(need);
    if (rc < 0)
        sr_sweepview_free(out);
    return rc;
}

void sr_sweepview_free(struct sr_sweepview *v)
{
    for (size_t k = 0; v->t && k < v->n; k++)
        json_decref(v->t[k].lineage);
    for (size_t k = 0; v->t && k < v->n; k++)
        if (v->t[k].run) {
            sr_hist_free(&v->t[k].run->h);
            free(v->t[k].run);
        }
    free(v->t);
    free(v->metrics);
    sr_steer_free(&v->steer);
    memset(v, 0, sizeof(*v));
}
